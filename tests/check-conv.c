/* Conv, ConvTranspose, ConvInteger, QLinearConv (executor/ops/conv.c): the fast float32
 * drivers at every ISA (scalar, AVX2, AVX-512 through wh_cpu_capped) against the scalar
 * references on awkward geometries (odd channels, groups, depthwise 3x3/5x5, dilation,
 * asymmetric padding, strides 2 and 3, 1-D and 3-D), bit-identical results for 1, 2 and 3
 * threads, and the attribute semantics (auto_pad, output_shape, output_padding).
 *
 * The Conv reference sums in ONNX Runtime's order (conv-internal.h). Tolerance: the SIMD
 * GEMM paths fuse each multiply-add, the reference does not, so we accept
 * |got - ref| <= 1e-5 * sum |x * w| (+1e-30) per output. The scalar Conv path sums in the
 * reference's order without fusing (padding adds exact zeros), so it must match exactly,
 * and so must every ISA where ORT's order has no fused multiply-add (one output channel per
 * group, or one output position); ConvTranspose's fast path groups its sums differently
 * and is held to the tolerance. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/elementwise-internal.h"
#include "executor/ops/gemm-internal.h"
#include "executor/threadpool.h"
#include "graph/arena.h"
#include "graph/blob.h"
#include "graph/onnx-io.h"

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float rng_float(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

static float *random_floats(size_t n, uint64_t seed)
{
	float *v = malloc((n ? n : 1) * sizeof(float));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = rng_float(&seed, -2, 2);
	return v;
}

static int isas(enum wh_isa *out)
{
	int n = 0;
	for (int i = WH_ISA_SCALAR; i <= (int)wh_cpu()->detected; i++)
		out[n++] = (enum wh_isa)i;
	return n;
}

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* A geometry: spatial rank, N, C, M, G, then per dim: in, k, stride, dil, pad0, pad1.
 * Conv out sizes are derived; for ConvTranspose out = (in-1)*s + dk - pads. */
struct geo {
	int nsp;
	int64_t N, C, M, G;
	int64_t d[3][6];
};

static void make_shape(const struct geo *g, bool transpose, struct wh_conv_shape *s)
{
	memset(s, 0, sizeof *s);
	s->nsp = g->nsp;
	s->N = g->N, s->C = g->C, s->M = g->M, s->G = g->G;
	for (int i = 0; i < g->nsp; i++) {
		s->in[i] = g->d[i][0], s->k[i] = g->d[i][1], s->stride[i] = g->d[i][2];
		s->dil[i] = g->d[i][3], s->pad0[i] = g->d[i][4], s->pad1[i] = g->d[i][5];
		int64_t dk = (s->k[i] - 1) * s->dil[i] + 1;
		if (!transpose)
			s->out[i] = (s->in[i] + s->pad0[i] + s->pad1[i] - dk) / s->stride[i] + 1;
		else
			s->out[i] = (s->in[i] - 1) * s->stride[i] + dk - s->pad0[i] - s->pad1[i];
	}
}

/* Upper bound of sum |x*w| over any output: used to scale the tolerance. */
static double magnitude(const float *x, size_t nx, const float *w, size_t nw, int64_t terms)
{
	double mx = 0, mw = 0;
	for (size_t i = 0; i < nx; i++)
		mx = fmax(mx, fabs(x[i]));
	for (size_t i = 0; i < nw; i++)
		mw = fmax(mw, fabs(w[i]));
	return mx * mw * (double)terms + 2;
}

static void check_geo(const struct geo *g, bool transpose, bool bias, uint64_t seed)
{
	struct wh_conv_shape s;
	make_shape(g, transpose, &s);
	int64_t KS = prod(s.k, s.nsp);
	size_t nx = (size_t)(s.N * s.C * prod(s.in, s.nsp));
	size_t nw = (size_t)(transpose ? s.C * (s.M / s.G) * KS : s.M * (s.C / s.G) * KS);
	size_t ny = (size_t)(s.N * s.M * prod(s.out, s.nsp));
	float *x = random_floats(nx, seed), *w = random_floats(nw, seed + 1);
	float *b = bias ? random_floats((size_t)s.M, seed + 2) : NULL;
	float *ref = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
	float *dwref = malloc(ny * sizeof(float));
	if (transpose)
		wh_convt_f32_ref(&s, x, w, b, ref);
	else
		wh_conv_f32_ref(&s, x, w, b, ref);
	if (!transpose && s.C == s.G && s.M == s.G)
		wh_conv_dw_fma_ref(&s, x, w, b, dwref);
	double tol = 1e-5 * magnitude(x, nx, w, nw, (transpose ? s.C : s.C / s.G) * KS);
	enum wh_isa list[3];
	int n = isas(list);
	for (int ii = 0; ii < n; ii++) {
		struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
		for (size_t i = 0; i < ny; i++)
			got[i] = NAN;
		if (transpose)
			ck_assert_int_eq(wh_convt_f32(&cpu, NULL, &s, x, w, b, got), WH_OK);
		else
			ck_assert_int_eq(wh_conv_f32(&cpu, NULL, &s, x, w, b, got), WH_OK);
		/* the single-row and single-column orders use no fused multiply-add: every ISA
		 * gives the reference's bits; the direct depthwise kernels give their reference's
		 * (wh_conv_dw_fma_ref), within the tolerance of ORT's order */
		int64_t P = prod(s.out, s.nsp), Mg = s.M / s.G, Cg = s.C / s.G;
		bool exact = !transpose && (list[ii] == WH_ISA_SCALAR || Mg == 1 || (P == 1 && Cg > 1));
		bool direct = !transpose && wh_conv_dw_direct(&cpu, &s, WH_CONV_AUTO);
		for (size_t i = 0; i < ny; i++) {
			if (direct) {
				ck_assert_msg(got[i] == dwref[i], "%s direct depthwise (C=%lld) y[%zu] = %.9g, reference %.9g",
					      wh_isa_name(list[ii]), (long long)s.C, i, got[i], dwref[i]);
				ck_assert_msg(fabs((double)got[i] - ref[i]) <= tol,
					      "%s direct depthwise (C=%lld) y[%zu] = %.9g, ORT's order %.9g",
					      wh_isa_name(list[ii]), (long long)s.C, i, got[i], ref[i]);
			} else if (exact)
				ck_assert_msg(got[i] == ref[i], "%s conv (C=%lld M=%lld G=%lld nsp=%d) y[%zu] = %.9g, reference %.9g",
					      wh_isa_name(list[ii]), (long long)s.C, (long long)s.M, (long long)s.G, s.nsp, i,
					      got[i], ref[i]);
			else
				ck_assert_msg(fabs((double)got[i] - ref[i]) <= tol,
					      "%s %s (C=%lld M=%lld G=%lld nsp=%d k0=%lld s0=%lld) y[%zu] = %.9g, reference %.9g",
					      wh_isa_name(list[ii]), transpose ? "convtranspose" : "conv", (long long)s.C,
					      (long long)s.M, (long long)s.G, s.nsp, (long long)s.k[0], (long long)s.stride[0],
					      i, got[i], ref[i]);
		}
	}
	free(x);
	free(w);
	free(b);
	free(ref);
	free(dwref);
	free(got);
}

/* {nsp, N, C, M, G, {{in, k, stride, dil, pad0, pad1}, ...}} */
static const struct geo conv_geos[] = {
	/* 1x1 (the GEMM over the flat plane), odd channels */
	{2, 1, 7, 13, 1, {{5, 1, 1, 1, 0, 0}, {9, 1, 1, 1, 0, 0}}},
	{2, 2, 33, 70, 1, {{3, 1, 1, 1, 0, 0}, {11, 1, 1, 1, 0, 0}}},
	/* 1x1 with stride or padding goes through the planes */
	{2, 1, 5, 6, 1, {{7, 1, 2, 1, 0, 0}, {9, 1, 2, 1, 1, 0}}},
	/* 3x3 same padding, stride 1 and 2, row width not a multiple of the tile */
	{2, 1, 3, 16, 1, {{13, 3, 2, 1, 1, 1}, {17, 3, 2, 1, 1, 1}}},
	{2, 1, 11, 24, 1, {{9, 3, 1, 1, 1, 1}, {37, 3, 1, 1, 1, 1}}},
	{2, 2, 5, 7, 1, {{6, 3, 1, 1, 0, 2}, {8, 3, 1, 1, 2, 0}}},
	/* dilation, stride 3, asymmetric pads, non-square kernels */
	{2, 1, 4, 5, 1, {{11, 3, 1, 2, 2, 1}, {12, 2, 3, 3, 0, 3}}},
	/* patch embeddings (stride = kernel, 16 and 14 phases a row), one with padding */
	{2, 1, 3, 8, 1, {{64, 16, 16, 1, 0, 0}, {96, 16, 16, 1, 0, 0}}},
	{2, 1, 3, 6, 1, {{56, 14, 14, 1, 0, 0}, {70, 14, 14, 1, 3, 4}}},
	{2, 1, 6, 9, 1, {{1, 1, 1, 1, 0, 0}, {40, 3, 1, 1, 1, 1}}},
	/* groups (not depthwise) */
	{2, 1, 6, 4, 2, {{7, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}}},
	{2, 1, 9, 12, 3, {{8, 3, 2, 1, 0, 1}, {10, 2, 1, 2, 1, 1}}},
	/* depthwise 3x3 and 5x5, stride 1 and 2, multiplier 1 and 2 */
	{2, 1, 16, 16, 16, {{20, 3, 1, 1, 1, 1}, {20, 3, 1, 1, 1, 1}}},
	{2, 1, 7, 7, 7, {{19, 3, 2, 1, 1, 1}, {37, 3, 2, 1, 1, 1}}},
	{2, 2, 5, 5, 5, {{13, 5, 1, 1, 2, 2}, {41, 5, 1, 1, 2, 2}}},
	{2, 1, 3, 3, 3, {{12, 5, 2, 1, 2, 2}, {35, 5, 2, 1, 2, 2}}},
	{2, 1, 4, 8, 4, {{9, 3, 1, 2, 2, 2}, {17, 5, 2, 1, 2, 1}}},
	{2, 1, 3, 3, 3, {{6, 5, 2, 1, 2, 2}, {80, 5, 1, 1, 2, 2}}},
	{2, 1, 2, 2, 2, {{3, 3, 1, 1, 0, 0}, {3, 3, 1, 1, 0, 0}}},
	/* depthwise planes of short rows, run as one span of columns (conv.c span_of): KWS's
	 * 3x3 on 25x5, unpadded 10x6, and strided ones the span rule leaves row by row */
	{2, 1, 8, 8, 8, {{25, 3, 1, 1, 1, 1}, {5, 3, 1, 1, 1, 1}}},
	{2, 1, 4, 4, 4, {{10, 3, 1, 1, 0, 0}, {6, 3, 1, 1, 0, 0}}},
	{2, 1, 4, 4, 4, {{14, 3, 2, 1, 1, 1}, {7, 3, 2, 1, 1, 1}}},
	{2, 1, 4, 4, 4, {{10, 3, 1, 1, 1, 1}, {9, 3, 2, 1, 1, 1}}},
	/* depthwise planes whose padding masks take several blocks (conv-dw-*.c planes_flat),
	 * and 1-D depthwise at stride 2 (the direct kernels' even lanes) */
	{2, 1, 2, 2, 2, {{90, 3, 1, 1, 1, 1}, {90, 3, 1, 1, 1, 1}}},
	{1, 1, 3, 3, 3, {{70, 3, 2, 1, 1, 0}}},
	/* depthwise 5x5 and 7x7 through the direct kernels (conv-dw-*.c): same padding on whole
	 * planes (convnext's 7x7), rows of two vectors with a short second one at stride 1 and
	 * 2, asymmetric pads and dilation, a row of one short vector */
	{2, 1, 3, 3, 3, {{20, 7, 1, 1, 3, 3}, {45, 7, 1, 1, 3, 3}}},
	{2, 1, 4, 4, 4, {{17, 7, 2, 1, 3, 3}, {70, 7, 2, 1, 3, 2}}},
	{2, 2, 3, 3, 3, {{15, 7, 1, 2, 5, 4}, {50, 7, 1, 1, 1, 4}}},
	{2, 1, 2, 2, 2, {{9, 5, 1, 1, 2, 2}, {24, 5, 1, 1, 1, 2}}},
	{2, 1, 5, 5, 5, {{14, 5, 2, 1, 2, 2}, {14, 5, 2, 1, 2, 2}}},
	{2, 1, 3, 3, 3, {{11, 5, 2, 1, 2, 2}, {91, 5, 2, 1, 2, 2}}},
	/* depthwise through the phase planes (conv-dw-avx512.c planes_phased): mnasnet's and
	 * efficientnet's large stride-1 plane, strides 2 on 3x3 and 5x5 from 112, 56, 28 and 14
	 * (odd and even sizes, outputs of 7 and 14 columns), stride 2 in one dimension only,
	 * asymmetric and odd pads, a one-column input, an output narrower than its input */
	{2, 1, 2, 2, 2, {{112, 3, 1, 1, 1, 1}, {112, 3, 1, 1, 1, 1}}},
	{2, 1, 3, 3, 3, {{112, 3, 2, 1, 1, 1}, {112, 3, 2, 1, 1, 1}}},
	{2, 1, 3, 3, 3, {{56, 5, 2, 1, 2, 2}, {56, 5, 2, 1, 2, 2}}},
	{2, 1, 4, 4, 4, {{28, 3, 2, 1, 1, 1}, {28, 3, 2, 1, 1, 1}}},
	{2, 1, 5, 5, 5, {{28, 5, 2, 1, 2, 2}, {28, 5, 2, 1, 2, 2}}},
	{2, 1, 6, 6, 6, {{14, 5, 2, 1, 2, 2}, {14, 5, 2, 1, 2, 2}}},
	{2, 2, 3, 3, 3, {{15, 5, 2, 1, 1, 2}, {23, 3, 2, 1, 0, 1}}},
	{2, 1, 3, 3, 3, {{13, 3, 2, 1, 2, 0}, {29, 5, 1, 1, 2, 2}}},
	{2, 1, 3, 3, 3, {{19, 5, 1, 1, 0, 3}, {21, 3, 2, 1, 1, 0}}},
	{2, 1, 2, 2, 2, {{9, 3, 2, 1, 1, 1}, {1, 3, 2, 1, 1, 1}}},
	{2, 1, 2, 2, 2, {{70, 3, 1, 1, 0, 0}, {70, 5, 1, 1, 1, 1}}},
	/* depthwise row blocks (conv-dw-avx512.c planes_rowblk: square 3, 5, 7 at strides 1
	 * and 2): 7x7 at stride 2, asymmetric pads with 1-3 rows left over, no left padding */
	{2, 1, 3, 3, 3, {{14, 7, 2, 1, 3, 3}, {41, 7, 2, 1, 3, 3}}},
	{2, 2, 4, 4, 4, {{10, 5, 1, 1, 2, 1}, {33, 5, 1, 1, 0, 2}}},
	{2, 1, 3, 3, 3, {{6, 3, 2, 1, 0, 1}, {40, 3, 2, 1, 1, 0}}},
	{2, 1, 2, 2, 2, {{11, 3, 1, 1, 0, 0}, {18, 3, 1, 1, 0, 0}}},
	/* depthwise 3x1 and 1x3 with stride (2, 1) as PP-OCR rec uses */
	{2, 1, 5, 5, 5, {{12, 3, 2, 1, 1, 1}, {33, 3, 1, 1, 1, 1}}},
	/* 1-D (plain, grouped, depthwise) and 3-D */
	{1, 2, 3, 5, 1, {{29, 4, 2, 1, 1, 2}}},
	{1, 1, 4, 4, 4, {{50, 5, 1, 2, 4, 4}}},
	{1, 1, 6, 3, 3, {{17, 1, 1, 1, 0, 0}}},
	{3, 1, 3, 4, 1, {{5, 3, 1, 1, 1, 1}, {6, 2, 2, 1, 0, 1}, {7, 3, 1, 2, 2, 2}}},
	{3, 1, 4, 4, 4, {{4, 3, 1, 1, 1, 1}, {5, 3, 1, 1, 1, 1}, {6, 3, 2, 1, 1, 1}}},
	/* kernel larger than the input (padding only) */
	{2, 1, 2, 3, 1, {{2, 5, 1, 1, 2, 2}, {3, 5, 1, 1, 2, 2}}},
	/* K large enough to be cut into several slices */
	{2, 1, 70, 13, 1, {{6, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}}},
	/* one output position: MLAS's single-column order (7 and 5 channels per group: rows
	 * reduced 4, 2 and 1 at a time), pointwise and padded */
	{2, 1, 37, 7, 1, {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0}}},
	{2, 1, 5, 6, 1, {{1, 3, 1, 1, 1, 1}, {1, 3, 1, 1, 1, 1}}},
	{2, 2, 12, 10, 2, {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0}}},
	/* a one-channel kernel covering the whole unpadded input (MLAS reads the rows as they are) */
	{2, 1, 1, 3, 1, {{1, 1, 1, 1, 0, 0}, {5, 5, 1, 1, 0, 0}}},
	/* one-channel kernels as wide as the input, no padding: MLAS's single-column order over
	 * the output positions (2-D plain and depthwise, 1-D) */
	{2, 1, 1, 1, 1, {{9, 3, 1, 1, 0, 0}, {5, 5, 1, 1, 0, 0}}},
	{2, 2, 3, 3, 3, {{12, 2, 1, 1, 0, 0}, {4, 4, 1, 1, 0, 0}}},
	{1, 1, 2, 2, 2, {{11, 11, 1, 1, 0, 0}}},
	/* one output channel per group through the GEMM paths: MLAS's single-row order */
	{2, 1, 9, 1, 1, {{7, 3, 1, 1, 1, 1}, {9, 3, 1, 1, 1, 1}}},
	{2, 1, 13, 1, 1, {{4, 1, 1, 1, 0, 0}, {9, 1, 1, 1, 0, 0}}},
	{2, 1, 40, 2, 2, {{5, 3, 1, 1, 1, 1}, {6, 3, 1, 1, 1, 1}}},
	/* K > 128: blocks of 128 (wide output) and 256 (40 outputs) */
	{2, 1, 200, 5, 1, {{12, 1, 1, 1, 0, 0}, {16, 1, 1, 1, 0, 0}}},
	{2, 1, 300, 6, 1, {{5, 1, 1, 1, 0, 0}, {8, 1, 1, 1, 0, 0}}},
};

START_TEST(conv_matches_reference)
{
	for (size_t i = 0; i < sizeof conv_geos / sizeof conv_geos[0]; i++)
		check_geo(&conv_geos[i], false, i % 2 == 0, 100 + i);
}
END_TEST

static const struct geo convt_geos[] = {
	{2, 1, 24, 24, 1, {{9, 2, 2, 1, 0, 0}, {10, 2, 2, 1, 0, 0}}},
	{2, 1, 24, 1, 1, {{7, 2, 2, 1, 0, 0}, {5, 2, 2, 1, 0, 0}}},
	/* 2-wide rows at stride 2 that do not cover the output (gaps, cropped rows) */
	{2, 1, 5, 3, 1, {{5, 1, 2, 1, 0, 0}, {19, 2, 2, 1, 0, 0}}},
	{2, 2, 4, 6, 2, {{6, 2, 2, 1, 1, 0}, {7, 2, 2, 1, 0, 0}}},
	{2, 1, 3, 2, 1, {{6, 2, 3, 1, 0, 2}, {7, 2, 2, 1, 0, 1}}},
	{2, 2, 3, 5, 1, {{4, 3, 1, 1, 0, 0}, {5, 3, 2, 1, 1, 1}}},
	{2, 1, 4, 6, 2, {{5, 3, 2, 2, 1, 0}, {6, 4, 3, 1, 2, 1}}},
	{2, 1, 6, 6, 6, {{5, 3, 2, 1, 1, 1}, {5, 3, 2, 1, 1, 1}}},
	{1, 1, 3, 2, 1, {{11, 3, 1, 1, 0, 0}}},
	{3, 1, 2, 3, 1, {{3, 2, 2, 1, 0, 0}, {4, 3, 1, 1, 1, 1}, {3, 3, 2, 2, 0, 1}}},
};

START_TEST(convtranspose_matches_reference)
{
	for (size_t i = 0; i < sizeof convt_geos / sizeof convt_geos[0]; i++)
		check_geo(&convt_geos[i], true, i % 2 == 1, 300 + i);
}
END_TEST

/* Bit-identical results for 1, 2 and 3 threads on geometries large enough to be split. */
START_TEST(threads_bit_identical)
{
	static const struct geo geos[] = {
		{2, 1, 96, 24, 1, {{40, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
		{2, 1, 64, 128, 1, {{24, 1, 1, 1, 0, 0}, {40, 1, 1, 1, 0, 0}}},
		{2, 1, 32, 32, 32, {{64, 3, 2, 1, 1, 1}, {64, 3, 2, 1, 1, 1}}},
		{2, 1, 48, 48, 48, {{20, 5, 1, 1, 2, 2}, {30, 5, 1, 1, 2, 2}}},
		/* depthwise phase planes (conv-dw-avx512.c): 112x112 at stride 1, 5x5 at stride 2 */
		{2, 1, 16, 16, 16, {{112, 3, 1, 1, 1, 1}, {112, 3, 1, 1, 1, 1}}},
		{2, 1, 96, 96, 96, {{28, 5, 2, 1, 2, 2}, {28, 5, 2, 1, 2, 2}}},
		{2, 1, 40, 40, 40, {{14, 5, 2, 1, 2, 2}, {14, 5, 2, 1, 2, 2}}},
		{2, 2, 12, 18, 3, {{15, 3, 2, 1, 1, 1}, {33, 3, 1, 1, 1, 1}}},
		/* K blocks of 128 (K = 200) and the single-row order, split across threads */
		{2, 1, 200, 40, 1, {{20, 1, 1, 1, 0, 0}, {30, 1, 1, 1, 0, 0}}},
		{2, 1, 24, 2, 2, {{30, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
		/* short output rows: one GEMM over an im2col copy (KWS's first conv) */
		{2, 1, 16, 64, 1, {{49, 10, 2, 1, 5, 5}, {10, 4, 2, 1, 1, 1}}},
		/* one output position, the output channels split across threads */
		{2, 2, 300, 512, 1, {{1, 1, 1, 1, 0, 0}, {1, 1, 1, 1, 0, 0}}},
	};
	struct wh_threadpool *p2, *p3;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	struct wh_threadpool *pools[3] = {NULL, p2, p3};
	for (int tr = 0; tr < 2; tr++)
		for (size_t gi = 0; gi < sizeof geos / sizeof geos[0]; gi++) {
			struct wh_conv_shape s;
			make_shape(&geos[gi], tr, &s);
			int64_t KS = prod(s.k, s.nsp);
			size_t nx = (size_t)(s.N * s.C * prod(s.in, s.nsp));
			size_t nw = (size_t)(tr ? s.C * (s.M / s.G) * KS : s.M * (s.C / s.G) * KS);
			size_t ny = (size_t)(s.N * s.M * prod(s.out, s.nsp));
			float *x = random_floats(nx, gi), *w = random_floats(nw, gi + 7), *b = random_floats((size_t)s.M, 3);
			float *y[3];
			for (int t = 0; t < 3; t++) {
				y[t] = malloc(ny * sizeof(float));
				if (tr)
					ck_assert_int_eq(wh_convt_f32(wh_cpu(), pools[t], &s, x, w, b, y[t]), WH_OK);
				else
					ck_assert_int_eq(wh_conv_f32(wh_cpu(), pools[t], &s, x, w, b, y[t]), WH_OK);
			}
			ck_assert_msg(!memcmp(y[0], y[1], ny * sizeof(float)), "geometry %zu (transpose %d): 1 and 2 threads differ", gi, tr);
			ck_assert_msg(!memcmp(y[0], y[2], ny * sizeof(float)), "geometry %zu (transpose %d): 1 and 3 threads differ", gi, tr);
			for (int t = 0; t < 3; t++)
				free(y[t]);
			free(x);
			free(w);
			free(b);
		}
	wh_threadpool_destroy(p2);
	wh_threadpool_destroy(p3);
}
END_TEST

/* ---- ops through one-node models ---- */

struct attr_spec {
	const char *name;
	enum wh_attr_type type;
	int64_t i;
	const char *s;
	const int64_t *ints;
	size_t n;
};

#define A_INT(nm, v) {nm, WH_ATTR_INT, v, NULL, NULL, 0}
#define A_STR(nm, v) {nm, WH_ATTR_STRING, 0, v, NULL, 0}
#define A_INTS(nm, arr) {nm, WH_ATTR_INTS, 0, NULL, arr, sizeof arr / sizeof arr[0]}

static void tensor_new(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
}

static void tensor_random(struct wh_tensor *t, int32_t rank, const int64_t *dims, uint64_t seed)
{
	tensor_new(t, WH_DT_FLOAT, rank, dims);
	for (uint64_t i = 0; i < t->count; i++)
		((float *)t->data)[i] = rng_float(&seed, -2, 2);
}

static enum wh_status run_op(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
			     const struct attr_spec *attrs, uint32_t n_attrs, struct wh_tensor *out)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = opset;
	struct wh_graph *g = m->graph;
	uint32_t in_ids[16], out_id, id;
	struct wh_tensor_set set, res;
	wh_tensor_set_init(&set);
	wh_tensor_set_init(&res);
	char name[16];
	for (uint32_t i = 0; i < n_in; i++) {
		if (!ins[i]) {
			in_ids[i] = WH_NONE;
			continue;
		}
		snprintf(name, sizeof name, "in%u", i);
		ck_assert_int_eq(wh_graph_add_value(g, name, &in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_graph_set_shape(g, in_ids[i], ins[i]->dtype, ins[i]->rank, ins[i]->dims), WH_OK);
		g->values[in_ids[i]].flags |= WH_VALUE_HAS_INFO;
		ck_assert_int_eq(wh_graph_add_input(g, in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_tensor_set_add(&set, name, -1, ins[i]), WH_OK);
	}
	ck_assert_int_eq(wh_graph_add_value(g, "out", &out_id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", "node", n_in, in_ids, 1, &out_id, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, out_id), WH_OK);
	struct wh_node *nd = &g->nodes[id];
	nd->n_attrs = n_attrs;
	nd->attrs = n_attrs ? wh_arena_calloc(m->arena, n_attrs, sizeof *nd->attrs) : NULL;
	for (uint32_t i = 0; i < n_attrs; i++) {
		struct wh_attr *a = &nd->attrs[i];
		a->name = attrs[i].name;
		a->type = attrs[i].type;
		a->i = attrs[i].i;
		if (attrs[i].s) {
			a->s.data = (const uint8_t *)attrs[i].s;
			a->s.len = strlen(attrs[i].s);
		}
		if (attrs[i].ints) {
			a->ints = wh_arena_memdup(m->arena, attrs[i].ints, attrs[i].n * sizeof(int64_t));
			a->n = attrs[i].n;
		}
	}
	struct wh_engine *e;
	struct wh_engine_options opt = {.threads = 1};
	ck_assert_int_eq(wh_engine_create(m, &opt, &e), WH_OK);
	enum wh_status st = wh_engine_run(e, &set, WH_KEEP_OUTPUTS, &res);
	if (st != WH_OK && getenv("WH_TEST_VERBOSE"))
		fprintf(stderr, "%s: %s\n", op, wh_error_message());
	if (st == WH_OK) {
		const struct wh_tensor *t = wh_tensor_set_find(&res, "out");
		ck_assert_ptr_nonnull(t);
		wh_tensor_init(out);
		wh_tensor_ref(out, t);
	}
	wh_tensor_set_release(&res);
	wh_tensor_set_release(&set);
	wh_engine_destroy(e);
	wh_model_destroy(m);
	return st;
}

static void assert_dims(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->rank, rank);
	for (int32_t i = 0; i < rank; i++)
		ck_assert_msg(t->dims[i] == dims[i], "dim %d is %lld, expected %lld", i, (long long)t->dims[i],
			      (long long)dims[i]);
}

START_TEST(conv_auto_pad_shapes)
{
	/* in 7x8, kernel 3x2, stride 2: SAME gives ceil(in/stride); the odd total pad goes
	 * after (UPPER) or before (LOWER): check the first output, which sees the pad */
	int64_t xd[4] = {1, 1, 7, 8}, wd[4] = {1, 1, 3, 2}, strides[2] = {2, 2};
	struct wh_tensor x, w, yu, yl, yv;
	tensor_new(&x, WH_DT_FLOAT, 4, xd);
	tensor_new(&w, WH_DT_FLOAT, 4, wd);
	for (int i = 0; i < 56; i++)
		((float *)x.data)[i] = (float)(i + 1);
	for (int i = 0; i < 6; i++)
		((float *)w.data)[i] = 1.0f;
	const struct wh_tensor *ins[2] = {&x, &w};
	struct attr_spec up[] = {A_STR("auto_pad", "SAME_UPPER"), A_INTS("strides", strides)};
	struct attr_spec lo[] = {A_STR("auto_pad", "SAME_LOWER"), A_INTS("strides", strides)};
	struct attr_spec va[] = {A_STR("auto_pad", "VALID"), A_INTS("strides", strides)};
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, up, 2, &yu), WH_OK);
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, lo, 2, &yl), WH_OK);
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, va, 2, &yv), WH_OK);
	int64_t same[4] = {1, 1, 4, 4}, valid[4] = {1, 1, 3, 4};
	assert_dims(&yu, 4, same);
	assert_dims(&yl, 4, same);
	assert_dims(&yv, 4, valid);
	/* H: total pad (4-1)*2+3-7 = 2 -> 1/1 both; W: (4-1)*2+2-8 = 0 */
	/* UPPER and LOWER agree when the total is even: rows -1..1 x cols 0..1 */
	const float *u = yu.data, *l = yl.data, *v = yv.data;
	ck_assert_float_eq(u[0], (1 + 2) + (9 + 10));
	ck_assert_float_eq(l[0], u[0]);
	ck_assert_float_eq(v[0], (1 + 2) + (9 + 10) + (17 + 18));
	wh_tensor_release(&yu);
	wh_tensor_release(&yl);
	wh_tensor_release(&yv);
	/* odd total pad: kernel 2x2 stride 1 on 7x8: total 1 -> UPPER pads after, LOWER before */
	int64_t wd2[4] = {1, 1, 2, 2}, ones[2] = {1, 1};
	wh_tensor_release(&w);
	tensor_new(&w, WH_DT_FLOAT, 4, wd2);
	for (int i = 0; i < 4; i++)
		((float *)w.data)[i] = 1.0f;
	struct attr_spec up1[] = {A_STR("auto_pad", "SAME_UPPER"), A_INTS("strides", ones)};
	struct attr_spec lo1[] = {A_STR("auto_pad", "SAME_LOWER"), A_INTS("strides", ones)};
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, up1, 2, &yu), WH_OK);
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, lo1, 2, &yl), WH_OK);
	int64_t full[4] = {1, 1, 7, 8};
	assert_dims(&yu, 4, full);
	assert_dims(&yl, 4, full);
	u = yu.data, l = yl.data;
	ck_assert_float_eq(u[0], 1 + 2 + 9 + 10);
	ck_assert_float_eq(l[0], 1);
	ck_assert_float_eq(u[55], 56);
	ck_assert_float_eq(l[55], 47 + 48 + 55 + 56);
	wh_tensor_release(&yu);
	wh_tensor_release(&yl);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
}
END_TEST

START_TEST(conv_bad_inputs_fail)
{
	int64_t xd[4] = {1, 4, 5, 5}, wd[4] = {6, 3, 3, 3}, bd[1] = {5};
	struct wh_tensor x, w, b, y;
	tensor_random(&x, 4, xd, 1);
	tensor_random(&w, 4, wd, 2);
	const struct wh_tensor *ins[2] = {&x, &w};
	/* W has 3 input channels, X 4 */
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, NULL, 0, &y), WH_ERR_SHAPE);
	/* group 2 needs W [M, 2, ...] and is fine with 3 channels? no: 4/2 = 2 != 3 */
	struct attr_spec g2[] = {A_INT("group", 2)};
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, g2, 1, &y), WH_ERR_SHAPE);
	int64_t wd2[4] = {6, 4, 7, 7};
	wh_tensor_release(&w);
	tensor_random(&w, 4, wd2, 2);
	/* kernel 7 > input 5 without padding */
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, NULL, 0, &y), WH_ERR_SHAPE);
	int64_t wd3[4] = {6, 4, 3, 3};
	wh_tensor_release(&w);
	tensor_random(&w, 4, wd3, 2);
	tensor_random(&b, 1, bd, 3);
	const struct wh_tensor *ins3[3] = {&x, &w, &b};
	/* bias of 5 for 6 output channels */
	ck_assert_int_eq(run_op("Conv", 11, 3, ins3, NULL, 0, &y), WH_ERR_SHAPE);
	int64_t kshape[2] = {5, 5};
	struct attr_spec ks[] = {A_INTS("kernel_shape", kshape)};
	ck_assert_int_eq(run_op("Conv", 11, 2, ins, ks, 1, &y), WH_ERR_SHAPE);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
	wh_tensor_release(&b);
}
END_TEST

START_TEST(convtranspose_output_shape_and_padding)
{
	/* x 1x1x3x3, w 1x2x3x3, stride 2: natural output 7x7; output_padding 1 -> 8x8;
	 * output_shape 10x8 pads the difference (negative total) or fails */
	int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 2, 3, 3}, st[2] = {2, 2};
	struct wh_tensor x, w, y;
	tensor_random(&x, 4, xd, 5);
	tensor_random(&w, 4, wd, 6);
	const struct wh_tensor *ins[2] = {&x, &w};
	struct attr_spec a0[] = {A_INTS("strides", st)};
	ck_assert_int_eq(run_op("ConvTranspose", 11, 2, ins, a0, 1, &y), WH_OK);
	int64_t d0[4] = {1, 2, 7, 7};
	assert_dims(&y, 4, d0);
	float natural = ((float *)y.data)[7 * 7 - 1];
	wh_tensor_release(&y);
	int64_t op[2] = {1, 1};
	struct attr_spec a1[] = {A_INTS("strides", st), A_INTS("output_padding", op)};
	ck_assert_int_eq(run_op("ConvTranspose", 11, 2, ins, a1, 2, &y), WH_OK);
	int64_t d1[4] = {1, 2, 8, 8};
	assert_dims(&y, 4, d1);
	/* the extra row and column receive nothing */
	ck_assert_float_eq(((float *)y.data)[8 * 8 - 1], 0);
	ck_assert_float_eq(((float *)y.data)[6 * 8 + 6], natural);
	wh_tensor_release(&y);
	int64_t os[2] = {6, 5};
	struct attr_spec a2[] = {A_INTS("strides", st), A_INTS("output_shape", os)};
	ck_assert_int_eq(run_op("ConvTranspose", 11, 2, ins, a2, 2, &y), WH_OK);
	int64_t d2[4] = {1, 2, 6, 5};
	assert_dims(&y, 4, d2);
	wh_tensor_release(&y);
	/* a larger output_shape pads with zeros on both sides (total -2: one before, one after) */
	int64_t big[2] = {9, 9};
	struct attr_spec a3[] = {A_INTS("strides", st), A_INTS("output_shape", big)};
	ck_assert_int_eq(run_op("ConvTranspose", 11, 2, ins, a3, 2, &y), WH_OK);
	int64_t d3[4] = {1, 2, 9, 9};
	assert_dims(&y, 4, d3);
	ck_assert_float_eq(((float *)y.data)[0], 0);
	ck_assert_float_eq(((float *)y.data)[7 * 9 + 7], natural);
	ck_assert_float_eq(((float *)y.data)[8 * 9 + 8], 0);
	wh_tensor_release(&y);
	int64_t zero[2] = {0, 9};
	struct attr_spec a4[] = {A_INTS("strides", st), A_INTS("output_shape", zero)};
	ck_assert_int_eq(run_op("ConvTranspose", 11, 2, ins, a4, 2, &y), WH_ERR_SHAPE);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
}
END_TEST

START_TEST(conv_double_and_half)
{
	int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 3, 3};
	int64_t pads[4] = {1, 1, 1, 1};
	struct attr_spec at[] = {A_INTS("pads", pads)};
	struct wh_tensor xf, wf, yf, xd64, wd64, yd64;
	tensor_random(&xf, 4, xd, 8);
	tensor_random(&wf, 4, wd, 9);
	tensor_new(&xd64, WH_DT_DOUBLE, 4, xd);
	tensor_new(&wd64, WH_DT_DOUBLE, 4, wd);
	for (uint64_t i = 0; i < xf.count; i++)
		((double *)xd64.data)[i] = ((float *)xf.data)[i];
	for (uint64_t i = 0; i < wf.count; i++)
		((double *)wd64.data)[i] = ((float *)wf.data)[i];
	const struct wh_tensor *insf[2] = {&xf, &wf}, *insd[2] = {&xd64, &wd64};
	ck_assert_int_eq(run_op("Conv", 11, 2, insf, at, 1, &yf), WH_OK);
	ck_assert_int_eq(run_op("Conv", 11, 2, insd, at, 1, &yd64), WH_OK);
	ck_assert_int_eq(yd64.dtype, WH_DT_DOUBLE);
	for (uint64_t i = 0; i < yf.count; i++)
		ck_assert(fabs(((float *)yf.data)[i] - ((double *)yd64.data)[i]) < 1e-4);
	wh_tensor_release(&xf);
	wh_tensor_release(&wf);
	wh_tensor_release(&yf);
	wh_tensor_release(&xd64);
	wh_tensor_release(&wd64);
	wh_tensor_release(&yd64);
}
END_TEST

START_TEST(conv_integer_zero_points)
{
	/* 1x1x3x3 uint8 x with zero point 2, 1x1x2x2 weights with zero point 1, pad 1: the
	 * padding contributes (zp - zp) = 0 */
	int64_t xd[4] = {1, 1, 3, 3}, wd[4] = {1, 1, 2, 2}, sd[1] = {1}, pads[4] = {1, 1, 0, 0};
	struct wh_tensor x, w, xz, wz, y;
	tensor_new(&x, WH_DT_UINT8, 4, xd);
	tensor_new(&w, WH_DT_UINT8, 4, wd);
	tensor_new(&xz, WH_DT_UINT8, 0, NULL);
	tensor_new(&wz, WH_DT_UINT8, 1, sd);
	for (int i = 0; i < 9; i++)
		((uint8_t *)x.data)[i] = (uint8_t)(i + 2);
	uint8_t wv[4] = {2, 3, 4, 5};
	memcpy(w.data, wv, 4);
	((uint8_t *)xz.data)[0] = 2;
	((uint8_t *)wz.data)[0] = 1;
	const struct wh_tensor *ins[4] = {&x, &w, &xz, &wz};
	struct attr_spec at[] = {A_INTS("pads", pads)};
	ck_assert_int_eq(run_op("ConvInteger", 10, 4, ins, at, 1, &y), WH_OK);
	int64_t yd[4] = {1, 1, 3, 3};
	assert_dims(&y, 4, yd);
	const int32_t *yv = y.data;
	/* x - 2 = 0..8 row-major; w - 1 = {1, 2, 3, 4}; output (0,0) sees pad, pad, pad, x00 */
	ck_assert_int_eq(yv[0], 4 * 0);
	/* output (1,1): taps x00, x01, x10, x11 = 0, 1, 3, 4 */
	ck_assert_int_eq(yv[4], 1 * 0 + 2 * 1 + 3 * 3 + 4 * 4);
	/* output (2,2): x11, x12, x21, x22 = 4, 5, 7, 8 */
	ck_assert_int_eq(yv[8], 1 * 4 + 2 * 5 + 3 * 7 + 4 * 8);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
	wh_tensor_release(&xz);
	wh_tensor_release(&wz);
	wh_tensor_release(&y);
}
END_TEST

/* Depthwise geometries: the forced GEMM path gives ORT's order (wh_conv_f32_ref) at every
 * ISA; the forced direct kernels give wh_conv_dw_fma_ref's bits where they apply (AVX2,
 * AVX-512: wh_conv_dw_direct) and the GEMM's elsewhere; the two orders agree within 1e-5
 * relative of sum |w*x| (and do differ somewhere: the fused order is really taken). */
START_TEST(depthwise_direct_fma_order)
{
	enum wh_isa list[3];
	int n = isas(list);
	size_t direct_runs = 0, differing = 0;
	for (size_t gi = 0; gi < sizeof conv_geos / sizeof conv_geos[0]; gi++) {
		const struct geo *g = &conv_geos[gi];
		if (g->C != g->G || g->M != g->G || g->nsp > 2)
			continue;
		struct wh_conv_shape s;
		make_shape(g, false, &s);
		size_t KS = (size_t)prod(s.k, s.nsp), nx = (size_t)(s.N * s.C * prod(s.in, s.nsp));
		size_t ny = (size_t)(s.N * s.M * prod(s.out, s.nsp));
		float *x = random_floats(nx, gi), *w = random_floats((size_t)s.M * KS, gi + 1), *b = random_floats((size_t)s.M, 2);
		float *y1 = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
		float *ref = malloc(ny * sizeof(float)), *dwref = malloc(ny * sizeof(float));
		wh_conv_f32_ref(&s, x, w, b, ref);
		wh_conv_dw_fma_ref(&s, x, w, b, dwref);
		double tol = 1e-5 * magnitude(x, nx, w, (size_t)s.M * KS, (int64_t)KS);
		for (int ii = 0; ii < n; ii++) {
			struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
			bool direct = wh_conv_dw_direct(&cpu, &s, WH_CONV_DIRECT_DW);
			ck_assert(!wh_conv_dw_direct(&cpu, &s, WH_CONV_GEMM));
			if (list[ii] == WH_ISA_SCALAR)
				ck_assert(!direct);
			ck_assert_int_eq(wh_conv_f32_algo(&cpu, NULL, &s, x, w, b, y1, WH_CONV_DIRECT_DW), WH_OK);
			ck_assert_int_eq(wh_conv_f32_algo(&cpu, NULL, &s, x, w, b, y2, WH_CONV_GEMM), WH_OK);
			ck_assert_msg(!memcmp(y2, ref, ny * sizeof(float)), "geometry %zu at %s: GEMM differs from ORT's order",
				      gi, wh_isa_name(list[ii]));
			ck_assert_msg(!memcmp(y1, direct ? dwref : ref, ny * sizeof(float)),
				      "geometry %zu at %s: direct differs from its reference", gi, wh_isa_name(list[ii]));
			direct_runs += direct;
			for (size_t i = 0; i < ny; i++) {
				ck_assert_msg(fabs((double)y1[i] - y2[i]) <= tol, "geometry %zu at %s: y[%zu] %.9g vs %.9g", gi,
					      wh_isa_name(list[ii]), i, y1[i], y2[i]);
				differing += y1[i] != y2[i];
			}
		}
		free(x);
		free(w);
		free(b);
		free(y1);
		free(y2);
		free(ref);
		free(dwref);
	}
	if (wh_cpu()->isa >= WH_ISA_AVX2) {
		ck_assert_uint_gt(direct_runs, 10);
		ck_assert_uint_gt(differing, 0);
	}
}
END_TEST

/* Emulated fp16/bf16 layers round Conv's output block by block as it is written
 * (wh_conv_f32_round): the bits equal those of a separate rounding pass over the finished
 * output, on every path (GEMM, bands, depthwise, one output position), ISA and thread count. */
START_TEST(fused_output_rounding_same_bits)
{
	enum wh_isa list[3];
	int n = isas(list);
	struct wh_threadpool *p2;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	static const struct geo big[] = {
		{2, 1, 32, 32, 32, {{64, 3, 2, 1, 1, 1}, {64, 3, 2, 1, 1, 1}}},
		{2, 1, 64, 128, 1, {{24, 1, 1, 1, 0, 0}, {40, 1, 1, 1, 0, 0}}},
		{2, 1, 96, 24, 1, {{40, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
	};
	size_t n_small = sizeof conv_geos / sizeof conv_geos[0], n_all = n_small + sizeof big / sizeof big[0];
	for (size_t gi = 0; gi < n_all; gi++) {
		const struct geo *g = gi < n_small ? &conv_geos[gi] : &big[gi - n_small];
		struct wh_conv_shape s;
		make_shape(g, false, &s);
		size_t nx = (size_t)(s.N * s.C * prod(s.in, s.nsp)), KS = (size_t)prod(s.k, s.nsp);
		size_t nw = (size_t)(s.M * (s.C / s.G)) * KS, ny = (size_t)(s.N * s.M * prod(s.out, s.nsp));
		float *x = random_floats(nx, gi + 40), *w = random_floats(nw, gi + 41), *b = random_floats((size_t)s.M, 42);
		float *want = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
		for (int ii = 0; ii < n; ii++)
			for (int fmt = 0; fmt < 2; fmt++)
				for (int algo = 0; algo < 3; algo++) {
					struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
					struct wh_out_round r = {fmt ? wh_round_bf16_n : wh_round_f16_n, &cpu};
					struct wh_threadpool *pool = (gi + (size_t)algo) % 2 ? p2 : NULL;
					enum wh_conv_algo a = (enum wh_conv_algo)algo;
					ck_assert_int_eq(wh_conv_f32_algo(&cpu, pool, &s, x, w, b, want, a), WH_OK);
					r.fn(want, want, ny, &cpu);
					memset(got, 0, ny * sizeof(float));
					ck_assert_int_eq(wh_conv_f32_round(&cpu, pool, &s, x, w, b, got, a, &r), WH_OK);
					ck_assert_msg(!memcmp(want, got, ny * sizeof(float)),
						      "geometry %zu at %s, %s, algo %d: fused rounding differs from a pass", gi,
						      wh_isa_name(list[ii]), fmt ? "bf16" : "fp16", algo);
				}
		free(x);
		free(w);
		free(b);
		free(want);
		free(got);
	}
	wh_threadpool_destroy(p2);
}
END_TEST

/* Every tactic of Conv and ConvTranspose that says it is eligible runs and matches the
 * reference. */
START_TEST(tactics_run_and_match)
{
	static const int64_t xd[4] = {1, 6, 9, 11}, wdw[4] = {6, 1, 3, 3}, wdt[4] = {6, 2, 2, 2};
	static const int64_t pads[4] = {1, 1, 1, 1}, st2[2] = {2, 2};
	for (int tr = 0; tr < 2; tr++) {
		const struct wh_op_def *op = wh_op_lookup("", tr ? "ConvTranspose" : "Conv", 11);
		ck_assert_ptr_nonnull(op);
		ck_assert_uint_ge(op->n_tactics, 3);
		struct wh_tensor x, w, y;
		tensor_random(&x, 4, xd, 40);
		tensor_random(&w, 4, tr ? wdt : wdw, 41);
		struct wh_attr at[2] = {{.name = "group", .type = WH_ATTR_INT, .i = tr ? 1 : 6},
					{.name = tr ? "strides" : "pads", .type = WH_ATTR_INTS}};
		at[1].ints = (int64_t *)(tr ? st2 : pads);
		at[1].n = tr ? 2 : 4;
		struct wh_node node = {.name = "n", .op_type = op->op_type, .domain = "", .n_attrs = 2, .attrs = at};
		const struct wh_tensor *ins[2] = {&x, &w};
		bool wanted = true;
		struct wh_kernel_ctx ctx = {.node = &node, .opset = 11, .n_inputs = 2, .inputs = ins, .n_outputs = 1,
					    .outputs = &y, .output_wanted = &wanted, .cpu = wh_cpu()};
		struct wh_conv_shape s;
		struct geo g = {2, 1, 6, tr ? 2 : 6, tr ? 1 : 6, {{9, tr ? 2 : 3, tr ? 2 : 1, 1, tr ? 0 : 1, tr ? 0 : 1},
							{11, tr ? 2 : 3, tr ? 2 : 1, 1, tr ? 0 : 1, tr ? 0 : 1}}};
		make_shape(&g, tr, &s);
		size_t ny = (size_t)(s.M * s.out[0] * s.out[1]);
		float *ref = malloc(ny * sizeof(float));
		if (tr)
			wh_convt_f32_ref(&s, x.data, w.data, NULL, ref);
		else
			wh_conv_f32_ref(&s, x.data, w.data, NULL, ref);
		int ran = 0;
		for (uint32_t t = 0; t < op->n_tactics; t++) {
			const struct wh_tactic *tc = &op->tactics[t];
			ctx.tactic = tc;
			if (tc->eligible && !tc->eligible(&ctx))
				continue;
			wh_tensor_init(&y);
			ck_assert_msg(tc->run(&ctx) == WH_OK, "tactic %s: %s", tc->name, wh_error_message());
			ck_assert_uint_eq(y.count, ny);
			for (size_t i = 0; i < ny; i++)
				ck_assert_msg(fabs(((float *)y.data)[i] - ref[i]) <= 1e-4, "tactic %s: y[%zu] = %g, reference %g",
					      tc->name, i, ((float *)y.data)[i], ref[i]);
			wh_tensor_release(&y);
			ran++;
		}
		/* scalar GEMM always; depthwise direct too for Conv */
		ck_assert_int_ge(ran, tr ? 1 : 2);
		free(ref);
		wh_tensor_release(&x);
		wh_tensor_release(&w);
	}
}
END_TEST

/* A Conv whose W is an initializer (the bytes of a blob, as the runtime reads it), run by
 * its kernel with the engine's cache of packed weights: the first run packs W per call, the
 * second packs it into the cache (which then holds it), every later run reads the copy; at
 * every ISA and for 1 and 2 threads the bits equal those of the driver without a cache. */
static void check_const_w(const struct geo *gm, enum wh_isa isa, struct wh_threadpool *p2, uint64_t seed)
{
	struct wh_conv_shape s;
	make_shape(gm, false, &s);
	int nsp = gm->nsp;
	int64_t xd[WH_MAX_RANK] = {gm->N, gm->C}, wd[WH_MAX_RANK] = {gm->M, gm->C / gm->G};
	for (int i = 0; i < nsp; i++)
		xd[2 + i] = gm->d[i][0], wd[2 + i] = gm->d[i][1];
	size_t nw = (size_t)prod(wd, nsp + 2), ny = (size_t)(s.N * s.M * prod(s.out, nsp));
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	struct wh_graph *g = m->graph;
	uint32_t ids[2], out, nid;
	ck_assert_int_eq(wh_graph_add_value(g, "x", &ids[0]), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "w", &ids[1]), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "y", &out), WH_OK);
	struct wh_blob *blob;
	void *bw;
	ck_assert_int_eq(wh_blob_create(nw * sizeof(float), &blob, &bw), WH_OK);
	float *wv = random_floats(nw, seed);
	memcpy(bw, wv, nw * sizeof(float));
	free(wv);
	ck_assert_int_eq(wh_graph_set_initializer(g, ids[1], WH_DT_FLOAT, nsp + 2, wd, blob), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, "Conv", "", "conv", 2, ids, 1, &out, &nid), WH_OK);
	struct wh_node *node = &g->nodes[nid];
	int64_t pads[6], strides[3], dil[3];
	for (int i = 0; i < nsp; i++)
		pads[i] = gm->d[i][4], pads[nsp + i] = gm->d[i][5], strides[i] = gm->d[i][2], dil[i] = gm->d[i][3];
	node->n_attrs = 4;
	node->attrs = wh_arena_calloc(m->arena, 4, sizeof *node->attrs);
	node->attrs[0] = (struct wh_attr){.name = "group", .type = WH_ATTR_INT, .i = gm->G};
	node->attrs[1] = (struct wh_attr){.name = "pads", .type = WH_ATTR_INTS, .n = (size_t)(2 * nsp),
					  .ints = wh_arena_memdup(m->arena, pads, (size_t)(2 * nsp) * sizeof(int64_t))};
	node->attrs[2] = (struct wh_attr){.name = "strides", .type = WH_ATTR_INTS, .n = (size_t)nsp,
					  .ints = wh_arena_memdup(m->arena, strides, (size_t)nsp * sizeof(int64_t))};
	node->attrs[3] = (struct wh_attr){.name = "dilations", .type = WH_ATTR_INTS, .n = (size_t)nsp,
					  .ints = wh_arena_memdup(m->arena, dil, (size_t)nsp * sizeof(int64_t))};
	struct wh_tensor x, w, y;
	tensor_random(&x, nsp + 2, xd, seed + 1);
	wh_tensor_init(&w);
	ck_assert_int_eq(wh_tensor_from_raw(&w, WH_DT_FLOAT, nsp + 2, wd, g->values[ids[1]].data), WH_OK);
	const struct wh_tensor *ins[2] = {&x, &w};
	bool wanted = true;
	struct wh_cpu_features cpu = wh_cpu_capped(isa);
	float *want = malloc(ny * sizeof(float));
	ck_assert_int_eq(wh_conv_f32(&cpu, NULL, &s, x.data, w.data, NULL, want), WH_OK);
	if (isa == WH_ISA_SCALAR) {
		/* the scalar path sums in the reference's order, cached or not */
		float *ref = malloc(ny * sizeof(float));
		wh_conv_f32_ref(&s, x.data, w.data, NULL, ref);
		ck_assert(!memcmp(ref, want, ny * sizeof(float)));
		free(ref);
	}
	const struct wh_op_def *op = wh_op_lookup("", "Conv", 13);
	for (int threads = 1; threads <= 2; threads++) {
		struct wh_gemm_packs *packs;
		ck_assert_int_eq(wh_gemm_packs_create(0, &packs), WH_OK);
		struct wh_kernel_ctx ctx = {.model = m, .graph = g, .node = node, .opset = 13, .n_inputs = 2,
					    .inputs = ins, .n_outputs = 1, .outputs = &y, .output_wanted = &wanted,
					    .cpu = &cpu, .pool = threads == 2 ? p2 : NULL, .packs = packs};
		for (int run = 0; run < 4; run++) {
			wh_tensor_init(&y);
			ck_assert_msg(op->run(&ctx) == WH_OK, "%s", wh_error_message());
			ck_assert_uint_eq(y.count, ny);
			ck_assert_msg(!memcmp(y.data, want, ny * sizeof(float)),
				      "isa %d, C%lld M%lld G%lld, %d threads, run %d: bits differ", (int)isa,
				      (long long)gm->C, (long long)gm->M, (long long)gm->G, threads, run + 1);
			wh_tensor_release(&y);
			size_t held = wh_gemm_packs_bytes(packs);
			if (run == 0)
				ck_assert_uint_eq(held, 0);
			else /* W, or W^T in panels of up to 48 channels (1x1 on a small plane) */
				ck_assert(held >= nw * sizeof(float) &&
					  held < (nw + 48 * (size_t)(nw / (size_t)gm->M)) * sizeof(float));
		}
		wh_gemm_packs_destroy(packs);
	}
	free(want);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
	wh_blob_release(blob);
	wh_model_destroy(m);
}

START_TEST(constant_weights_packed_once)
{
	static const struct geo geos[] = {
		/* 3x3 over long rows (bands of input rows), padded */
		{2, 1, 8, 16, 1, {{12, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
		/* short rows at stride 2 (one im2col GEMM) */
		{2, 2, 16, 24, 1, {{7, 3, 2, 1, 1, 1}, {7, 3, 2, 1, 1, 1}}},
		/* 1x1 pointwise; and on a small plane (the transposed product, W^T packed) */
		{2, 1, 16, 40, 1, {{10, 1, 1, 1, 0, 0}, {10, 1, 1, 1, 0, 0}}},
		{2, 1, 24, 136, 1, {{7, 1, 1, 1, 0, 0}, {7, 1, 1, 1, 0, 0}}},
		/* groups of several output channels, dilated */
		{2, 1, 8, 12, 2, {{9, 3, 1, 2, 2, 2}, {17, 3, 1, 1, 1, 0}}},
		/* 1-D, strided */
		{1, 1, 4, 6, 1, {{50, 5, 2, 1, 2, 2}}},
	};
	struct wh_threadpool *p2;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	enum wh_isa list[8];
	int ni = isas(list);
	for (size_t i = 0; i < sizeof geos / sizeof geos[0]; i++)
		for (int k = 0; k < ni; k++)
			check_const_w(&geos[i], list[k], p2, 900 + i);
	wh_threadpool_destroy(p2);
}
END_TEST

/* The AVX-512 small-plane depthwise path with the channels in the lanes (conv-dw-avx512.c
 * planes_lanes: 5x5 and 7x7, at most 256 outputs): bit for bit against wh_conv_dw_fma_ref at
 * every ISA, 1-3 threads, forced direct and automatic, with full and partial groups of 16
 * planes (the tail of fewer than 8 planes takes the row kernels), batches, strides 1-3,
 * dilation, asymmetric padding, and NaN, Inf and signed zeros in inputs and weights; the
 * same for the row blocks (planes_rowblk). */
static bool same_float(float a, float b)
{
	return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a);
}

START_TEST(depthwise_lanes_bits)
{
	static const struct geo geos[] = {
		{2, 1, 192, 192, 192, {{14, 5, 1, 1, 2, 2}, {14, 5, 1, 1, 2, 2}}},
		{2, 1, 40, 40, 40, {{7, 5, 1, 1, 2, 2}, {7, 5, 1, 1, 2, 2}}},
		{2, 2, 24, 24, 24, {{7, 7, 1, 1, 3, 3}, {7, 7, 1, 1, 3, 3}}},
		{2, 1, 37, 37, 37, {{14, 5, 2, 1, 2, 2}, {14, 5, 2, 1, 2, 2}}},
		{2, 1, 21, 21, 21, {{28, 5, 2, 1, 1, 2}, {28, 5, 2, 1, 2, 1}}},
		{2, 1, 32, 32, 32, {{13, 7, 3, 1, 3, 0}, {11, 3, 1, 1, 0, 2}}},
		{2, 1, 16, 16, 16, {{12, 5, 1, 2, 4, 4}, {10, 5, 1, 2, 3, 5}}},
		{2, 3, 9, 9, 9, {{6, 5, 1, 1, 0, 4}, {9, 4, 2, 1, 1, 0}}},
		{2, 1, 48, 48, 48, {{3, 7, 1, 1, 3, 3}, {5, 7, 1, 1, 3, 3}}},
		/* the row blocks (planes_rowblk; AVX2's from 28 output columns) with the same
		 * special values */
		{2, 1, 5, 5, 5, {{11, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
		{2, 1, 3, 3, 3, {{9, 3, 2, 1, 1, 1}, {61, 3, 2, 1, 1, 1}}},
		{2, 1, 4, 4, 4, {{23, 5, 2, 1, 2, 2}, {35, 5, 2, 1, 2, 2}}},
		{2, 1, 3, 3, 3, {{17, 7, 1, 1, 3, 3}, {19, 7, 1, 1, 3, 3}}},
	};
	struct wh_threadpool *p2, *p3;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	struct wh_threadpool *pools[3] = {NULL, p2, p3};
	enum wh_isa list[8];
	int ni = isas(list);
	static const float odd[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
	for (size_t gi = 0; gi < sizeof geos / sizeof geos[0]; gi++)
		for (int special = 0; special < 2; special++) {
			struct wh_conv_shape s;
			make_shape(&geos[gi], false, &s);
			size_t KS = (size_t)prod(s.k, s.nsp), nx = (size_t)(s.N * s.C * prod(s.in, s.nsp));
			size_t ny = (size_t)(s.N * s.M * prod(s.out, s.nsp));
			float *x = random_floats(nx, 40 + gi), *w = random_floats((size_t)s.M * KS, 50 + gi);
			float *b = (gi + special) % 2 ? random_floats((size_t)s.M, 60 + gi) : NULL;
			uint64_t seed = 70 + gi;
			for (size_t i = 0; special && i < nx / 50 + 1; i++)
				x[rng_next(&seed) % nx] = odd[rng_next(&seed) % 5];
			for (size_t i = 0; special && i < 3; i++)
				w[rng_next(&seed) % ((size_t)s.M * KS)] = odd[rng_next(&seed) % 5];
			float *ort = malloc(ny * sizeof(float)), *dwref = malloc(ny * sizeof(float));
			float *got = malloc(ny * sizeof(float));
			wh_conv_f32_ref(&s, x, w, b, ort);
			wh_conv_dw_fma_ref(&s, x, w, b, dwref);
			for (int ii = 0; ii < ni; ii++) {
				struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
				for (int t = 0; t < 3; t++)
					for (int algo = 0; algo < 2; algo++) {
						const float *ref = wh_conv_dw_direct(&cpu, &s, algo ? WH_CONV_DIRECT_DW : WH_CONV_AUTO)
									   ? dwref
									   : ort;
						for (size_t i = 0; i < ny; i++)
							got[i] = 12345.0f;
						ck_assert_int_eq(wh_conv_f32_algo(&cpu, pools[t], &s, x, w, b, got,
										  algo ? WH_CONV_DIRECT_DW : WH_CONV_AUTO),
								 WH_OK);
						for (size_t i = 0; i < ny; i++)
							ck_assert_msg(same_float(got[i], ref[i]),
								      "geometry %zu special %d %s %d threads algo %d: y[%zu] = %.9g "
								      "(%08x), reference %.9g", gi, special, wh_isa_name(list[ii]),
								      t + 1, algo, i, got[i], *(uint32_t *)&got[i], ref[i]);
					}
			}
			free(x);
			free(w);
			free(b);
			free(ort);
			free(dwref);
			free(got);
		}
	wh_threadpool_destroy(p2);
	wh_threadpool_destroy(p3);
}
END_TEST

/* The GEMM paths' sums restated (2-D, several output channels per group, several output
 * positions): every output is MLAS's chain, K = (input channel, tap) in blocks of
 * wh_sgemm_ort_kblock, each block a chain of fused multiply-adds from zero (padding taps
 * included, as zeros) added to the previous blocks' sum, then the bias. */
static void gemm_chain_ref(const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y)
{
	int64_t Cg = s->C / s->G, Mg = s->M / s->G, KH = s->k[0], KW = s->k[1], K = Cg * KH * KW;
	int64_t H = s->in[0], W = s->in[1], OH = s->out[0], OW = s->out[1];
	size_t kb = wh_sgemm_ort_kblock((size_t)K, (size_t)(OH * OW));
	int64_t blk = kb ? (int64_t)kb : K;
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t m = 0; m < s->M; m++)
			for (int64_t oh = 0; oh < OH; oh++)
				for (int64_t ow = 0; ow < OW; ow++) {
					int64_t g = m / Mg;
					float acc = 0;
					for (int64_t k0 = 0; k0 < K; k0 += blk) {
						float part = 0;
						for (int64_t k = k0; k < K && k < k0 + blk; k++) {
							int64_t ci = k / (KH * KW), kh = k / KW % KH, kw = k % KW;
							int64_t ih = oh * s->stride[0] + kh * s->dil[0] - s->pad0[0];
							int64_t iw = ow * s->stride[1] + kw * s->dil[1] - s->pad0[1];
							float xv = ih < 0 || ih >= H || iw < 0 || iw >= W
									   ? 0.0f
									   : x[((n * s->C + g * Cg + ci) * H + ih) * W + iw];
							part = fmaf(w[m * K + k], xv, part);
						}
						acc = k0 ? part + acc : part;
					}
					y[((n * s->M + m) * OH + oh) * OW + ow] = b ? acc + b[m] : acc;
				}
}

/* Every geometry of geos through the conv drivers, at every SIMD ISA, 1-3 threads and each
 * of algos, gives each output the bits of its MLAS chain (gemm_chain_ref); random data from
 * seed, a bias on the odd geometries (bias_on_odd) or on the even ones. With finish, also a
 * fused Relu and a bf16 rounding (wh_conv_f32_round) give those passes over the chain. */
static void check_chain_bits(const struct geo *geos, size_t n_geos, uint64_t seed, bool bias_on_odd,
			     const enum wh_conv_algo *algos, int n_algos, bool finish)
{
	enum wh_isa list[3];
	int ni = isas(list);
	struct wh_threadpool *p2, *p3;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	struct wh_threadpool *pools[3] = {NULL, p2, p3};
	for (size_t gi = 0; gi < n_geos; gi++) {
		struct wh_conv_shape s;
		make_shape(&geos[gi], false, &s);
		size_t nx = (size_t)(s.N * s.C * prod(s.in, 2)), nw = (size_t)(s.M * (s.C / s.G) * prod(s.k, 2));
		size_t ny = (size_t)(s.N * s.M * prod(s.out, 2));
		float *x = random_floats(nx, seed + gi), *w = random_floats(nw, seed + 10 + gi);
		float *b = (gi % 2 == 1) == bias_on_odd ? random_floats((size_t)s.M, seed + 20 + gi) : NULL;
		float *want = malloc(ny * sizeof(float)), *got = malloc(ny * sizeof(float));
		float *rwant = malloc(ny * sizeof(float));
		gemm_chain_ref(&s, x, w, b, want);
		for (int ii = 0; ii < ni; ii++) {
			if (list[ii] == WH_ISA_SCALAR)
				continue; /* rounds each product: held to the scalar reference elsewhere */
			struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
			struct wh_epilogue relu = {.op = WH_EW_RELU};
			struct wh_out_round r = {wh_round_bf16_n, &cpu, &relu};
			memcpy(rwant, want, ny * sizeof(float));
			wh_out_round_apply(&r, rwant, ny);
			for (int t = 0; t < 3; t++)
				for (int a = 0; a < n_algos; a++) {
					for (size_t i = 0; i < ny; i++)
						got[i] = NAN;
					ck_assert_int_eq(wh_conv_f32_algo(&cpu, pools[t], &s, x, w, b, got, algos[a]), WH_OK);
					for (size_t i = 0; i < ny; i++)
						ck_assert_msg(!memcmp(&got[i], &want[i], sizeof(float)),
							      "geometry %zu at %s, %d threads, algo %d: y[%zu] = %.9g, chain %.9g",
							      gi, wh_isa_name(list[ii]), t + 1, (int)algos[a], i, got[i], want[i]);
					if (!finish)
						continue;
					for (size_t i = 0; i < ny; i++)
						got[i] = NAN;
					ck_assert_int_eq(wh_conv_f32_round(&cpu, pools[t], &s, x, w, b, got, algos[a], &r), WH_OK);
					ck_assert_msg(!memcmp(got, rwant, ny * sizeof(float)),
						      "geometry %zu at %s, %d threads: fused Relu + bf16 differs", gi,
						      wh_isa_name(list[ii]), t + 1);
					/* a Relu alone (the stem rows apply it in registers) */
					struct wh_out_round ro = {NULL, &cpu, &relu};
					memcpy(rwant, want, ny * sizeof(float));
					wh_out_round_apply(&ro, rwant, ny);
					for (size_t i = 0; i < ny; i++)
						got[i] = NAN;
					ck_assert_int_eq(wh_conv_f32_round(&cpu, pools[t], &s, x, w, b, got, algos[a], &ro), WH_OK);
					ck_assert_msg(!memcmp(got, rwant, ny * sizeof(float)),
						      "geometry %zu at %s, %d threads: fused Relu differs", gi, wh_isa_name(list[ii]),
						      t + 1);
					memcpy(rwant, want, ny * sizeof(float));
					wh_out_round_apply(&r, rwant, ny);
				}
		}
		free(x);
		free(w);
		free(b);
		free(want);
		free(got);
		free(rwant);
	}
	wh_threadpool_destroy(p2);
	wh_threadpool_destroy(p3);
}

/* The GEMM paths' tile shapes (12x32 or 8x48 on AVX-512), row-by-row or wide bands (one
 * GEMM over a band's padded rows), im2col and the flat 1x1 plane give every output the
 * bits of its chain at every SIMD ISA and thread count: squeezenet's and mnasnet's shapes
 * and odd ones. */
START_TEST(gemm_paths_same_bits_as_chain)
{
	static const struct geo geos[] = {
		/* expand3x3 at 55x55 (K = 144: blocks of 128) and 27x27, odd output channels */
		{2, 1, 16, 64, 1, {{55, 3, 1, 1, 1, 1}, {55, 3, 1, 1, 1, 1}}},
		{2, 1, 16, 20, 1, {{41, 3, 1, 1, 1, 1}, {47, 3, 1, 1, 1, 1}}},
		{2, 1, 32, 24, 1, {{27, 3, 1, 1, 1, 1}, {27, 3, 1, 1, 1, 1}}},
		{2, 1, 32, 128, 1, {{27, 3, 1, 1, 1, 1}, {27, 3, 1, 1, 1, 1}}},
		{2, 2, 12, 16, 2, {{35, 3, 1, 1, 1, 1}, {50, 3, 1, 1, 0, 2}}},
		/* 13x13 (im2col), K = 432 in blocks of 128 */
		{2, 1, 48, 40, 1, {{13, 3, 1, 1, 1, 1}, {13, 3, 1, 1, 1, 1}}},
		/* K = 1800: blocks of 128 (bands), 256 and 1024 (im2col over 42 and 6 outputs),
		 * all of a tile's blocks before the next tile */
		{2, 1, 200, 20, 1, {{9, 3, 1, 1, 1, 1}, {40, 3, 1, 1, 1, 1}}},
		{2, 1, 200, 14, 1, {{6, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}}},
		{2, 1, 200, 14, 1, {{2, 3, 1, 1, 1, 1}, {3, 3, 1, 1, 1, 1}}},
		/* 1x1 on the flat plane: 8, 16, 24 output channels (8-row tiles) */
		{2, 1, 16, 8, 1, {{40, 1, 1, 1, 0, 0}, {45, 1, 1, 1, 0, 0}}},
		{2, 1, 8, 24, 1, {{30, 1, 1, 1, 0, 0}, {33, 1, 1, 1, 0, 0}}},
		{2, 1, 64, 16, 1, {{27, 1, 1, 1, 0, 0}, {27, 1, 1, 1, 0, 0}}},
		{2, 1, 200, 48, 1, {{13, 1, 1, 1, 0, 0}, {13, 1, 1, 1, 0, 0}}},
		/* stride 2: row by row (K = 27) and wide bands over phase-split rows (K = 72, 75) */
		{2, 1, 3, 64, 1, {{45, 3, 2, 1, 0, 0}, {45, 3, 2, 1, 0, 0}}},
		{2, 1, 8, 32, 1, {{41, 3, 2, 1, 1, 1}, {43, 3, 2, 1, 1, 0}}},
		{2, 1, 3, 16, 1, {{40, 5, 2, 1, 2, 2}, {111, 5, 3, 1, 2, 1}}},
		{2, 1, 6, 16, 1, {{30, 5, 1, 2, 3, 1}, {36, 3, 1, 1, 2, 2}}},
	};
	static const enum wh_conv_algo algos[] = {WH_CONV_GEMM};
	check_chain_bits(geos, sizeof geos / sizeof geos[0], 700, true, algos, 1, false);
}
END_TEST

/* 1x1 convolutions over small planes take the transposed product (conv.c conv_pwt: the
 * output channels in the lanes, C^T = X^T W^T, stored transposed): every output keeps the
 * bits of its chain (gemm_chain_ref) at every SIMD ISA and thread count, forced GEMM and
 * automatic, with and without bias, batches, K in MLAS's blocks (K > 128), channel counts
 * off the 16-lane vectors and the 32/48 panels, plane sizes off every tile (1 to 12 rows);
 * and with the weights from the engine's cache (packed W^T) the same bits at every run. */
START_TEST(pointwise_transposed_same_bits_as_chain)
{
	static const struct geo geos[] = {
		/* mnasnet0_35: 112->1280 and 64->384 at 7x7, 32->192 at 14x14 */
		{2, 1, 112, 1280, 1, {{7, 1, 1, 1, 0, 0}, {7, 1, 1, 1, 0, 0}}},
		{2, 1, 64, 384, 1, {{7, 1, 1, 1, 0, 0}, {7, 1, 1, 1, 0, 0}}},
		{2, 1, 32, 192, 1, {{14, 1, 1, 1, 0, 0}, {14, 1, 1, 1, 0, 0}}},
		/* squeezenet 48->192 at 13x13 (the plane GEMM); K = 320 and 576 in blocks */
		{2, 1, 48, 192, 1, {{13, 1, 1, 1, 0, 0}, {13, 1, 1, 1, 0, 0}}},
		{2, 1, 320, 130, 1, {{5, 1, 1, 1, 0, 0}, {9, 1, 1, 1, 0, 0}}},
		{2, 2, 576, 137, 1, {{3, 1, 1, 1, 0, 0}, {5, 1, 1, 1, 0, 0}}},
		/* odd planes and channel counts, a batch of 3 */
		{2, 3, 7, 133, 1, {{1, 1, 1, 1, 0, 0}, {2, 1, 1, 1, 0, 0}}},
		{2, 1, 5, 147, 1, {{3, 1, 1, 1, 0, 0}, {17, 1, 1, 1, 0, 0}}},
		{2, 1, 17, 195, 1, {{1, 1, 1, 1, 0, 0}, {13, 1, 1, 1, 0, 0}}},
		{2, 2, 24, 128, 1, {{8, 1, 1, 1, 0, 0}, {8, 1, 1, 1, 0, 0}}},
		{2, 1, 9, 161, 1, {{4, 1, 1, 1, 0, 0}, {11, 1, 1, 1, 0, 0}}},
	};
	static const enum wh_conv_algo algos[] = {WH_CONV_AUTO, WH_CONV_GEMM};
	check_chain_bits(geos, sizeof geos / sizeof geos[0], 1700, false, algos, 2, false);
}
END_TEST

/* Dense convolutions with few multiply-adds an output (the CNN stems, K <= 64 in one chain:
 * conv.c's stem rows, conv-stem-avx512.c) keep every output's chain (gemm_chain_ref) at
 * every SIMD ISA and 1-3 threads, forced GEMM and automatic, with and without bias, rows
 * of 1 to 9 vectors (several segments), channel counts off every tile (5, 13, 64), groups,
 * and rows without columns between them (4x4 stride 4: one call a band); with a fused
 * Relu and a bf16 rounding, or a Relu alone (applied in registers), the result is that of
 * the same passes after the product. */
START_TEST(stem_rows_same_bits_as_chain)
{
	static const struct geo geos[] = {
		/* squeezenet1_1 (pad 0, 111 wide), mnasnet/efficientnet/mobilenet (pad 1, 112) */
		{2, 1, 3, 64, 1, {{61, 3, 2, 1, 0, 0}, {223, 3, 2, 1, 0, 0}}},
		{2, 1, 3, 16, 1, {{40, 3, 2, 1, 1, 1}, {224, 3, 2, 1, 1, 1}}},
		/* convnext's 4x4 stride 4 (K = 48, wq = L), odd channels, a batch of 2 */
		{2, 2, 3, 13, 1, {{64, 4, 4, 1, 0, 0}, {96, 4, 4, 1, 0, 0}}},
		/* stride 4 with pads and widths off the 4 phases and the 16-float split */
		{2, 1, 3, 8, 1, {{50, 4, 4, 1, 1, 2}, {157, 4, 4, 1, 3, 0}}},
		{2, 1, 3, 16, 1, {{31, 4, 4, 1, 2, 1}, {130, 4, 4, 1, 0, 3}}},
		/* short rows, rows of 9 vectors (two segments), 5 channels, dilation */
		{2, 1, 3, 5, 1, {{33, 3, 1, 1, 1, 1}, {7, 3, 1, 1, 1, 1}}},
		{2, 1, 2, 24, 1, {{20, 3, 1, 2, 2, 2}, {139, 3, 1, 1, 1, 1}}},
		/* groups of 2 input and 3 output channels, K = 50 */
		{2, 1, 4, 6, 2, {{21, 5, 1, 1, 2, 2}, {38, 5, 1, 1, 2, 2}}},
	};
	static const enum wh_conv_algo algos[] = {WH_CONV_AUTO, WH_CONV_GEMM};
	check_chain_bits(geos, sizeof geos / sizeof geos[0], 900, false, algos, 2, true);
}
END_TEST

/* The stride-2 phase split of the conv planes (conv-avx512.c, conv-avx2.c): even and odd
 * floats of every length 0..70 (vectors of 16 pairs and every tail, masked in AVX-512):
 * the scalar loop's values exactly, and nothing written past n. */
START_TEST(deinterleave2_matches_scalar)
{
	enum { NMAX = 70, GUARD = 20 };
	float src[2 * NMAX], ev[NMAX + GUARD], od[NMAX + GUARD];
	for (int i = 0; i < 2 * NMAX; i++)
		src[i] = (float)i * 0.5f - 3.0f;
	for (int isa = WH_ISA_AVX2; isa <= (int)wh_cpu()->detected; isa++)
		for (size_t n = 0; n <= NMAX; n++) {
			for (int i = 0; i < NMAX + GUARD; i++)
				ev[i] = od[i] = -99.0f;
			if (isa >= WH_ISA_AVX512)
				wh_deinterleave2_avx512(src, n, ev, od);
			else
				wh_deinterleave2_avx2(src, n, ev, od);
			for (size_t i = 0; i < n; i++)
				ck_assert_msg(ev[i] == src[2 * i] && od[i] == src[2 * i + 1], "%s n=%zu: pair %zu is %g %g",
					      wh_isa_name((enum wh_isa)isa), n, i, ev[i], od[i]);
			for (size_t i = n; i < NMAX + GUARD; i++)
				ck_assert_msg(ev[i] == -99.0f && od[i] == -99.0f, "%s n=%zu: wrote past the end at %zu",
					      wh_isa_name((enum wh_isa)isa), n, i);
		}
}
END_TEST

static Suite *conv_suite(void)
{
	Suite *s = suite_create("conv");
	TCase *tc = tcase_create("drivers");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, conv_matches_reference);
	tcase_add_test(tc, convtranspose_matches_reference);
	tcase_add_test(tc, threads_bit_identical);
	tcase_add_test(tc, depthwise_direct_fma_order);
	tcase_add_test(tc, fused_output_rounding_same_bits);
	tcase_add_test(tc, constant_weights_packed_once);
	tcase_add_test(tc, depthwise_lanes_bits);
	tcase_add_test(tc, gemm_paths_same_bits_as_chain);
	tcase_add_test(tc, pointwise_transposed_same_bits_as_chain);
	tcase_add_test(tc, stem_rows_same_bits_as_chain);
	tcase_add_test(tc, deinterleave2_matches_scalar);
	suite_add_tcase(s, tc);
	TCase *ops = tcase_create("ops");
	tcase_set_timeout(ops, 600);
	tcase_add_test(ops, conv_auto_pad_shapes);
	tcase_add_test(ops, conv_bad_inputs_fail);
	tcase_add_test(ops, convtranspose_output_shape_and_padding);
	tcase_add_test(ops, conv_double_and_half);
	tcase_add_test(ops, conv_integer_zero_points);
	tcase_add_test(ops, tactics_run_and_match);
	suite_add_tcase(s, ops);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(conv_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
