/* The extra Conv, MatMul and Gemm tactics (executor/ops/conv-tactics*.c, gemm-tactics.c)
 * against independent references on awkward sizes, at every ISA the machine has.
 *
 * Tolerances, per output, with mag = sum |x*w| (or sum |a*b|) of that output:
 *  - exact (bit for bit) where the tactic promises a known chain: conv-direct-scalar
 *    against loops summing taps-outer/channels-inner with multiply then add; the scalar
 *    im2col and 1x1 GEMMs against the plain (channel, tap) chain with multiply then add (the
 *    scalar engine's order; padding adds exact zeros); matmul/gemm-ref-scalar and
 *    -splitk-scalar against plain loops in their orders; the fp16-accumulating tactics
 *    against a chain rounded to fp16 through numfmt's round-to-odd path (an independent
 *    rounding implementation); the SIMD Winograd transforms against the scalar ones.
 *  - 1e-5 * mag for the SIMD GEMMs (fused multiply-adds) against the float32 references.
 *  - Winograd: 2e-5 * mag (its transforms add rounding errors; measured max is printed by
 *    winograd_error_measured, about 2e-7 of mag at float32).
 *  - fp16 accumulation against the exact result: (terms + 2) * 2^-10 * mag (operand
 *    rounding 2^-11 each, one 2^-11 rounding per step).
 * Every tactic gives the same bits with 1 and 3 threads. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/tactics-extra.h"
#include "executor/threadpool.h"

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

static float *random_floats(size_t n, uint64_t seed, float scale)
{
	float *v = malloc((n ? n : 1) * sizeof(float));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = scale * rng_float(&seed, -2, 2);
	return v;
}

static int isas(enum wh_isa *out)
{
	int n = 0;
	for (int i = WH_ISA_SCALAR; i <= (int)wh_cpu()->detected; i++)
		out[n++] = (enum wh_isa)i;
	return n;
}

static bool same_val(float a, float b)
{
	return a == b || (isnan(a) && isnan(b));
}

static float f16_round_ref(double d)
{
	return wh_f16_to_f32(wh_f32_to_f16(wh_f64_to_f32_odd(d)));
}

/* ---- fp16 rounding of doubles ---- */

START_TEST(round_f16d_matches_numfmt)
{
	uint64_t seed = 7;
	for (int i = 0; i < 200000; i++) {
		/* random sign, exponent around the fp16 range, random mantissa */
		int e = (int)(rng_next(&seed) % 50) - 32;
		double m = 1.0 + (double)(rng_next(&seed) >> 11) * 0x1p-53;
		double d = ldexp(m, e) * ((rng_next(&seed) & 1) ? -1 : 1);
		float got = wh_tx_round_f16d(d), want = f16_round_ref(d);
		ck_assert_msg(!memcmp(&got, &want, sizeof got), "%a: got %a, want %a", d, (double)got, (double)want);
	}
	/* every tie between neighbouring fp16 values, and just off it */
	for (uint32_t h = 0; h < 0x7bff; h++) {
		double lo = wh_f16_to_f32((uint16_t)h), hi = wh_f16_to_f32((uint16_t)(h + 1));
		double mid = (lo + hi) / 2;
		double probes[3] = {mid, nextafter(mid, 0), nextafter(mid, INFINITY)};
		for (int k = 0; k < 3; k++) {
			float got = wh_tx_round_f16d(probes[k]), want = f16_round_ref(probes[k]);
			ck_assert_msg(!memcmp(&got, &want, sizeof got), "%a: got %a, want %a", probes[k], (double)got,
				      (double)want);
		}
	}
	double specials[] = {0.0, -0.0, 65504.0, 65519.99, 65520.0, -65520.0, 1e300, 0x1p-25, -0x1p-25,
			     0x1.0000001p-25, 0x1p-26, 0x1p-24, 0x1.8p-24, 5e-324};
	for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
		float got = wh_tx_round_f16d(specials[k]), want = f16_round_ref(specials[k]);
		ck_assert_msg(!memcmp(&got, &want, sizeof got), "%a: got %a, want %a", specials[k], (double)got,
			      (double)want);
	}
	ck_assert(isinf(wh_tx_round_f16d(INFINITY)));
	ck_assert(isnan(wh_tx_round_f16d(NAN)));
}
END_TEST

/* The fp16-accumulating step: every ISA gives the correctly rounded fp16 sum, bit for bit,
 * on random fp16 operands of every magnitude (overflow to infinity, subnormals, ties), at
 * strides 0, 1 and 3 and lengths with tails. */
START_TEST(axpy_f16_exact_at_every_isa)
{
	enum wh_isa list[3];
	int n_isa = isas(list);
	uint64_t seed = 5;
	const size_t n = 203;
	float *x = malloc(3 * n * sizeof(float)), *y0 = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
	float *got = malloc(n * sizeof(float));
	for (int round = 0; round < 300; round++) {
		for (size_t i = 0; i < 3 * n; i++)
			x[i] = wh_round_f16(ldexpf(rng_float(&seed, -2, 2), (int)(rng_next(&seed) % 30) - 20));
		for (size_t i = 0; i < n; i++)
			y0[i] = wh_round_f16(ldexpf(rng_float(&seed, -2, 2), (int)(rng_next(&seed) % 34) - 18));
		float w = wh_round_f16(ldexpf(rng_float(&seed, -2, 2), (int)(rng_next(&seed) % 20) - 10));
		size_t xs = (size_t)round % 4 == 3 ? 0 : (size_t)round % 4 == 2 ? 3 : 1, len = n - (size_t)round % 17;
		for (size_t i = 0; i < len; i++)
			want[i] = f16_round_ref((double)y0[i] + (double)x[i * xs] * w);
		for (int ii = 0; ii < n_isa; ii++) {
			memcpy(got, y0, n * sizeof(float));
			wh_tx_axpy_f16_get(list[ii])(got, x, xs, w, len);
			for (size_t i = 0; i < len; i++)
				ck_assert_msg(!memcmp(&got[i], &want[i], sizeof(float)) || (isnan(got[i]) && isnan(want[i])),
					      "%s: %a + %a * %a = %a, want %a", wh_isa_name(list[ii]), (double)y0[i],
					      (double)x[i * xs], (double)w, (double)got[i], (double)want[i]);
			ck_assert(!memcmp(got + len, y0 + len, (n - len) * sizeof(float)));
		}
	}
	free(x);
	free(y0);
	free(want);
	free(got);
}
END_TEST

/* ---- convolution references ---- */

/* A geometry: spatial rank, N, C, M, G, then per dim: in, k, stride, dil, pad0, pad1. */
struct geo {
	int nsp;
	int64_t N, C, M, G;
	int64_t d[3][6];
};

static const struct geo conv_geos[] = {
	/* 3x3 s1: Winograd, odd output sizes */
	{2, 2, 3, 5, 1, {{7, 3, 1, 1, 1, 1}, {9, 3, 1, 1, 1, 1}}},
	/* Winograd with several tile blocks, asymmetric padding, rows past 16 tiles */
	{2, 1, 17, 19, 1, {{23, 3, 1, 1, 1, 2}, {37, 3, 1, 1, 0, 1}}},
	/* Winograd with a single 1x1 output */
	{2, 1, 2, 3, 1, {{3, 3, 1, 1, 0, 0}, {3, 3, 1, 1, 0, 0}}},
	/* Winograd, more channels than T allows at 128 */
	{2, 1, 64, 48, 1, {{20, 3, 1, 1, 1, 1}, {20, 3, 1, 1, 1, 1}}},
	/* grouped, strided, asymmetric padding */
	{2, 1, 4, 6, 2, {{8, 3, 2, 1, 0, 2}, {5, 3, 2, 1, 1, 0}}},
	/* depthwise, dilated */
	{2, 1, 5, 5, 5, {{11, 3, 1, 2, 2, 2}, {6, 3, 1, 2, 2, 2}}},
	/* 1-D, stride 3 */
	{1, 2, 3, 4, 1, {{17, 5, 3, 1, 2, 1}}},
	/* 3-D */
	{3, 1, 2, 3, 1, {{4, 2, 1, 1, 0, 1}, {5, 3, 2, 1, 1, 1}, {6, 1, 1, 1, 0, 0}}},
	/* 1x1 */
	{2, 2, 7, 9, 1, {{5, 1, 1, 1, 0, 0}, {13, 1, 1, 1, 0, 0}}},
	/* 1x1 grouped */
	{2, 1, 6, 4, 2, {{3, 1, 1, 1, 0, 0}, {7, 1, 1, 1, 0, 0}}},
	/* 1x1 strided: not for the 1x1 tactic */
	{2, 1, 3, 2, 1, {{6, 1, 2, 1, 0, 0}, {7, 1, 2, 1, 0, 0}}},
	/* kernel larger than the padded input in one dimension but valid */
	{2, 1, 3, 2, 1, {{2, 3, 1, 1, 1, 0}, {9, 3, 1, 1, 1, 1}}},
	/* 1-D 1x1 with a wide row */
	{1, 1, 33, 17, 1, {{70, 1, 1, 1, 0, 0}}},
};
#define N_GEOS (sizeof conv_geos / sizeof conv_geos[0])

static int64_t prod(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

static void make_shape(const struct geo *g, struct wh_conv_shape *s)
{
	memset(s, 0, sizeof *s);
	s->nsp = g->nsp;
	s->N = g->N, s->C = g->C, s->M = g->M, s->G = g->G;
	for (int i = 0; i < g->nsp; i++) {
		s->in[i] = g->d[i][0], s->k[i] = g->d[i][1], s->stride[i] = g->d[i][2];
		s->dil[i] = g->d[i][3], s->pad0[i] = g->d[i][4], s->pad1[i] = g->d[i][5];
		int64_t dk = (s->k[i] - 1) * s->dil[i] + 1;
		s->out[i] = (s->in[i] + s->pad0[i] + s->pad1[i] - dk) / s->stride[i] + 1;
	}
}

struct conv_bufs {
	struct wh_conv_shape s;
	size_t nx, nw, ny, terms;
	float *x, *w, *b, *y, *ref;
	double *exact, *mag;
};

/* EXACT: double sums; MAG: sum |x*w|; F32: float32 multiply then add over (channel, tap)
 * in order (the plain chain); TAPS_F32: the same over (tap, channel); F16: the F32 order with
 * every step rounded to fp16. */
enum naive_mode { NAIVE_EXACT, NAIVE_MAG, NAIVE_F32, NAIVE_TAPS_F32, NAIVE_F16 };

/* Plain loops over every output; the mode picks order and arithmetic. */
static void conv_naive(const struct wh_conv_shape *s, const float *x, const float *w, const float *b,
		       enum naive_mode mode, double *outd, float *outf)
{
	int nsp = s->nsp;
	int64_t Cg = s->C / s->G, Mg = s->M / s->G, P = prod(s->out, nsp), Pin = prod(s->in, nsp);
	int64_t KS = prod(s->k, nsp), instr[WH_MAX_RANK];
	wh_shape_strides(s->in, nsp, instr);
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t co = 0; co < s->M; co++)
			for (int64_t p = 0; p < P; p++) {
				int64_t o[WH_MAX_RANK], r = p;
				for (int d = nsp - 1; d >= 0; d--) {
					o[d] = r % s->out[d];
					r /= s->out[d];
				}
				double acc = 0;
				float accf = 0;
				for (int64_t step = 0; step < Cg * KS; step++) {
					int64_t ci = mode == NAIVE_TAPS_F32 ? step % Cg : step / KS;
					int64_t kp = mode == NAIVE_TAPS_F32 ? step / Cg : step % KS;
					int64_t kx[WH_MAX_RANK], rr = kp, off = 0;
					bool ok = true;
					for (int d = nsp - 1; d >= 0; d--) {
						kx[d] = rr % s->k[d];
						rr /= s->k[d];
					}
					for (int d = 0; d < nsp; d++) {
						int64_t i = o[d] * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d];
						ok = ok && i >= 0 && i < s->in[d];
						off += i * instr[d];
					}
					if (!ok)
						continue;
					float xv = x[(n * s->C + (co / Mg) * Cg + ci) * Pin + off], wv = w[(co * Cg + ci) * KS + kp];
					if (mode == NAIVE_EXACT)
						acc += (double)xv * wv;
					else if (mode == NAIVE_MAG)
						acc += fabs((double)xv * wv);
					else if (mode == NAIVE_TAPS_F32 || mode == NAIVE_F32)
						accf += xv * wv;
					else
						accf = f16_round_ref((double)accf + (double)wh_round_f16(xv) * wh_round_f16(wv));
				}
				size_t yi = (size_t)((n * s->M + co) * P + p);
				if (b) {
					acc += mode == NAIVE_MAG ? fabs(b[co]) : b[co];
					accf = mode == NAIVE_F16 ? f16_round_ref((double)accf + wh_round_f16(b[co])) : accf + b[co];
				}
				if (outd)
					outd[yi] = acc;
				if (outf)
					outf[yi] = accf;
			}
}

static void bufs_init(struct conv_bufs *c, const struct geo *g, bool bias, uint64_t seed, float scale)
{
	make_shape(g, &c->s);
	int64_t KS = prod(c->s.k, c->s.nsp);
	c->nx = (size_t)(c->s.N * c->s.C * prod(c->s.in, c->s.nsp));
	c->nw = (size_t)(c->s.M * (c->s.C / c->s.G) * KS);
	c->ny = (size_t)(c->s.N * c->s.M * prod(c->s.out, c->s.nsp));
	c->terms = (size_t)((c->s.C / c->s.G) * KS);
	c->x = random_floats(c->nx, seed, scale);
	c->w = random_floats(c->nw, seed + 1, 1);
	c->b = bias ? random_floats((size_t)c->s.M, seed + 2, 1) : NULL;
	c->y = malloc(c->ny * sizeof(float));
	c->ref = malloc(c->ny * sizeof(float));
	c->exact = malloc(c->ny * sizeof(double));
	c->mag = malloc(c->ny * sizeof(double));
	wh_conv_f32_ref(&c->s, c->x, c->w, c->b, c->ref);
	conv_naive(&c->s, c->x, c->w, c->b, NAIVE_EXACT, c->exact, NULL);
	conv_naive(&c->s, c->x, c->w, c->b, NAIVE_MAG, c->mag, NULL);
}

static void bufs_free(struct conv_bufs *c)
{
	free(c->x);
	free(c->w);
	free(c->b);
	free(c->y);
	free(c->ref);
	free(c->exact);
	free(c->mag);
}

static const char *algo_name(enum wh_tx_conv_algo a)
{
	static const char *names[] = {"direct", "im2col", "winograd", "1x1", "fp16acc"};
	return names[a];
}

/* Max of |y - ref| / mag over the outputs. */
static double max_rel(const float *y, const float *ref, const double *mag, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmax(m, fabs((double)y[i] - ref[i]) / (mag[i] + 1e-30));
	return m;
}

static double max_rel_d(const float *y, const double *ref, const double *mag, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = fmax(m, fabs((double)y[i] - ref[i]) / (mag[i] + 1e-30));
	return m;
}

START_TEST(conv_algos_match_references)
{
	enum wh_isa list[3];
	int n_isa = isas(list);
	for (size_t gi = 0; gi < N_GEOS; gi++) {
		struct conv_bufs c;
		bufs_init(&c, &conv_geos[gi], gi % 2 == 0, 100 + gi, 1);
		float *taps = malloc(c.ny * sizeof(float)), *f16 = malloc(c.ny * sizeof(float));
		float *chain = malloc(c.ny * sizeof(float));
		conv_naive(&c.s, c.x, c.w, c.b, NAIVE_TAPS_F32, NULL, taps);
		conv_naive(&c.s, c.x, c.w, c.b, NAIVE_F32, NULL, chain);
		conv_naive(&c.s, c.x, c.w, c.b, NAIVE_F16, NULL, f16);
		for (int a = WH_TX_CONV_DIRECT; a <= WH_TX_CONV_FP16ACC; a++) {
			enum wh_tx_conv_algo algo = (enum wh_tx_conv_algo)a;
			if (!wh_tx_conv_supports(algo, &c.s)) {
				ck_assert_int_eq(wh_tx_conv_f32(algo, WH_ISA_SCALAR, NULL, &c.s, c.x, c.w, c.b, c.y),
						 WH_ERR_UNSUPPORTED);
				continue;
			}
			for (int ii = 0; ii < n_isa; ii++) {
				for (size_t i = 0; i < c.ny; i++)
					c.y[i] = NAN;
				ck_assert_int_eq(wh_tx_conv_f32(algo, list[ii], NULL, &c.s, c.x, c.w, c.b, c.y), WH_OK);
				const char *isa = wh_isa_name(list[ii]);
				if (algo == WH_TX_CONV_DIRECT) {
					for (size_t i = 0; i < c.ny; i++)
						ck_assert_msg(same_val(c.y[i], taps[i]), "geo %zu direct: y[%zu] = %a, want %a", gi, i,
							      (double)c.y[i], (double)taps[i]);
				} else if (algo == WH_TX_CONV_FP16ACC) {
					for (size_t i = 0; i < c.ny; i++)
						ck_assert_msg(same_val(c.y[i], f16[i]), "geo %zu fp16acc: y[%zu] = %a, want %a", gi, i,
							      (double)c.y[i], (double)f16[i]);
					double tol = ((double)c.terms + 2) * 0x1p-10;
					ck_assert_msg(max_rel_d(c.y, c.exact, c.mag, c.ny) <= tol, "geo %zu fp16acc: error %g > %g", gi,
						      max_rel_d(c.y, c.exact, c.mag, c.ny), tol);
				} else if (list[ii] == WH_ISA_SCALAR && algo != WH_TX_CONV_WINOGRAD) {
					for (size_t i = 0; i < c.ny; i++)
						ck_assert_msg(same_val(c.y[i], chain[i]), "geo %zu %s scalar: y[%zu] = %a, plain chain %a",
							      gi, algo_name(algo), i, (double)c.y[i], (double)chain[i]);
				} else {
					double tol = algo == WH_TX_CONV_WINOGRAD ? 2e-5 : 1e-5;
					double e = max_rel(c.y, c.ref, c.mag, c.ny);
					ck_assert_msg(e <= tol, "geo %zu %s %s: error %g of mag > %g", gi, algo_name(algo), isa, e, tol);
				}
			}
		}
		free(taps);
		free(f16);
		free(chain);
		bufs_free(&c);
	}
}
END_TEST

/* fp16 accumulation overflows to infinity where the exact sum passes 65504. */
START_TEST(fp16acc_overflows_like_hardware)
{
	struct geo g = {2, 1, 8, 2, 1, {{6, 3, 1, 1, 1, 1}, {6, 3, 1, 1, 1, 1}}};
	struct conv_bufs c;
	bufs_init(&c, &g, true, 9, 10000);
	float *f16 = malloc(c.ny * sizeof(float));
	conv_naive(&c.s, c.x, c.w, c.b, NAIVE_F16, NULL, f16);
	ck_assert_int_eq(wh_tx_conv_f32(WH_TX_CONV_FP16ACC, WH_ISA_SCALAR, NULL, &c.s, c.x, c.w, c.b, c.y), WH_OK);
	int infs = 0;
	for (size_t i = 0; i < c.ny; i++) {
		ck_assert_msg(same_val(c.y[i], f16[i]), "y[%zu] = %a, want %a", i, (double)c.y[i], (double)f16[i]);
		infs += isinf(c.y[i]) != 0;
		ck_assert(isfinite(c.ref[i]));
	}
	ck_assert_int_gt(infs, 0);
	free(f16);
	bufs_free(&c);
}
END_TEST

/* Winograd's error against the exact sum, next to the direct loops', on a typical layer,
 * with centred inputs and with non-negative ones (after a ReLU); printed for
 * docs/tactics.md. */
START_TEST(winograd_error_measured)
{
	struct geo g = {2, 1, 32, 32, 1, {{16, 3, 1, 1, 1, 1}, {16, 3, 1, 1, 1, 1}}};
	enum wh_isa list[3];
	int n_isa = isas(list);
	for (int relu = 0; relu < 2; relu++) {
		struct conv_bufs c;
		bufs_init(&c, &g, true, 11, 1);
		if (relu) {
			for (size_t i = 0; i < c.nx; i++)
				c.x[i] = fabsf(c.x[i]);
			conv_naive(&c.s, c.x, c.w, c.b, NAIVE_EXACT, c.exact, NULL);
			conv_naive(&c.s, c.x, c.w, c.b, NAIVE_MAG, c.mag, NULL);
		}
		float *direct = malloc(c.ny * sizeof(float));
		ck_assert_int_eq(wh_tx_conv_f32(WH_TX_CONV_DIRECT, WH_ISA_SCALAR, NULL, &c.s, c.x, c.w, c.b, direct), WH_OK);
		printf("winograd error, max |y - exact| / sum|x*w|, 32 channels 3x3, %s inputs: direct %.3g", relu ? "non-negative" : "centred",
		       max_rel_d(direct, c.exact, c.mag, c.ny));
		for (int ii = 0; ii < n_isa; ii++) {
			ck_assert_int_eq(wh_tx_conv_f32(WH_TX_CONV_WINOGRAD, list[ii], NULL, &c.s, c.x, c.w, c.b, c.y), WH_OK);
			double ew = max_rel_d(c.y, c.exact, c.mag, c.ny);
			size_t differ = 0;
			for (size_t i = 0; i < c.ny; i++)
				differ += c.y[i] != direct[i];
			printf(", winograd-%s %.3g (%zu of %zu outputs differ from direct)", wh_isa_name(list[ii]), ew, differ, c.ny);
			ck_assert_double_le(ew, 2e-5);
			ck_assert_uint_gt(differ, c.ny / 4);
		}
		printf("\n");
		free(direct);
		bufs_free(&c);
	}
}
END_TEST

/* The SIMD weight and tile transforms give the scalar transforms' bits, for any channel
 * count and for blocks that start and end anywhere in a tile row. */
START_TEST(winograd_transforms_same_bits)
{
	enum wh_isa list[3];
	int n_isa = isas(list);
	const size_t th_n = 5, tw_n = 37, half = tw_n + 1, rs = 2 * half;
	size_t plane_n = (2 * th_n + 2) * rs, tiles = th_n * tw_n;
	float *plane = random_floats(plane_n, 3, 1), *m = random_floats(16 * tiles, 4, 3);
	float *v1 = malloc(16 * tiles * sizeof(float)), *v2 = malloc(16 * tiles * sizeof(float));
	const size_t oh = 2 * th_n - 1, ow = 2 * tw_n - 1;
	float *y1 = malloc(oh * ow * sizeof(float)), *y2 = malloc(oh * ow * sizeof(float));
	static const size_t blocks[][2] = {{0, 185}, {3, 40}, {36, 1}, {37, 37}, {50, 90}, {17, 17}, {0, 16}, {1, 33}};
	for (int ii = 1; ii < n_isa; ii++) {
		void (*w_fn)(const float *, size_t, float *, size_t) = list[ii] == WH_ISA_AVX2 ? wh_wino_weights_avx2 : wh_wino_weights_avx512;
		for (size_t C = 1; C <= 37; C += 3) {
			float *gt = random_floats(9 * C, C, 1), *u1 = calloc(16 * 40, sizeof(float)), *u2 = calloc(16 * 40, sizeof(float));
			wh_wino_weights_scalar(gt, C, u1, 40);
			w_fn(gt, C, u2, 40);
			ck_assert_msg(!memcmp(u1, u2, 16 * 40 * sizeof(float)), "%s weight transform, %zu channels",
				      wh_isa_name(list[ii]), C);
			free(gt);
			free(u1);
			free(u2);
		}
		void (*in_fn)(const struct wh_wino_in *) = list[ii] == WH_ISA_AVX2 ? wh_wino_input_avx2 : wh_wino_input_avx512;
		void (*out_fn)(const struct wh_wino_out *) = list[ii] == WH_ISA_AVX2 ? wh_wino_output_avx2 : wh_wino_output_avx512;
		for (size_t bi = 0; bi < sizeof blocks / sizeof blocks[0]; bi++) {
			size_t t0 = blocks[bi][0], cnt = blocks[bi][1];
			memset(v1, 0, 16 * tiles * sizeof(float));
			memset(v2, 0, 16 * tiles * sizeof(float));
			struct wh_wino_in in = {plane, rs, half, tw_n, t0, cnt, v1, tiles};
			wh_wino_input_scalar(&in);
			in.v = v2;
			in_fn(&in);
			ck_assert_msg(!memcmp(v1, v2, 16 * tiles * sizeof(float)), "%s input transform, block %zu+%zu",
				      wh_isa_name(list[ii]), t0, cnt);
			for (int bias = 0; bias < 2; bias++) {
				for (size_t i = 0; i < oh * ow; i++)
					y1[i] = y2[i] = -1234.5f;
				struct wh_wino_out out = {m, tiles, tw_n, t0, cnt, bias != 0, 0.375f, y1, oh, ow};
				wh_wino_output_scalar(&out);
				out.y = y2;
				out_fn(&out);
				ck_assert_msg(!memcmp(y1, y2, oh * ow * sizeof(float)), "%s output transform, block %zu+%zu",
					      wh_isa_name(list[ii]), t0, cnt);
			}
		}
	}
	free(plane);
	free(m);
	free(v1);
	free(v2);
	free(y1);
	free(y2);
}
END_TEST

START_TEST(conv_threads_bit_identical)
{
	enum wh_isa list[3];
	int n_isa = isas(list);
	struct wh_threadpool *p3;
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	static const struct geo big[] = {
		{2, 2, 24, 20, 1, {{30, 3, 1, 1, 1, 1}, {41, 3, 1, 1, 1, 1}}},
		{2, 2, 12, 30, 3, {{17, 1, 1, 1, 0, 0}, {19, 1, 1, 1, 0, 0}}},
		{2, 1, 6, 8, 2, {{25, 3, 2, 1, 1, 0}, {22, 3, 1, 2, 2, 1}}},
	};
	for (size_t gi = 0; gi < sizeof big / sizeof big[0]; gi++) {
		struct conv_bufs c;
		bufs_init(&c, &big[gi], true, 50 + gi, 1);
		float *y3 = malloc(c.ny * sizeof(float));
		for (int a = WH_TX_CONV_DIRECT; a <= WH_TX_CONV_FP16ACC; a++) {
			if (!wh_tx_conv_supports((enum wh_tx_conv_algo)a, &c.s))
				continue;
			for (int ii = 0; ii < n_isa; ii++) {
				ck_assert_int_eq(wh_tx_conv_f32((enum wh_tx_conv_algo)a, list[ii], NULL, &c.s, c.x, c.w, c.b, c.y), WH_OK);
				ck_assert_int_eq(wh_tx_conv_f32((enum wh_tx_conv_algo)a, list[ii], p3, &c.s, c.x, c.w, c.b, y3), WH_OK);
				ck_assert_msg(!memcmp(c.y, y3, c.ny * sizeof(float)), "geo %zu %s %s: 1 and 3 threads differ", gi,
					      algo_name((enum wh_tx_conv_algo)a), wh_isa_name(list[ii]));
			}
		}
		free(y3);
		bufs_free(&c);
	}
	wh_threadpool_destroy(p3);
}
END_TEST

/* ---- through the tactic table, with nodes ---- */

static void tensor_from(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims, const float *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
	for (uint64_t i = 0; i < t->count; i++) {
		if (dt == WH_DT_FLOAT)
			((float *)t->data)[i] = v[i];
		else if (dt == WH_DT_FLOAT16)
			((uint16_t *)t->data)[i] = wh_f32_to_f16(v[i]);
		else if (dt == WH_DT_INT8)
			((int8_t *)t->data)[i] = (int8_t)v[i];
	}
}

static float tensor_val(const struct wh_tensor *t, uint64_t i)
{
	return t->dtype == WH_DT_FLOAT16 ? wh_f16_to_f32(((const uint16_t *)t->data)[i]) : ((const float *)t->data)[i];
}

struct node_spec {
	int64_t group, strides[2], dil[2], pads[4];
	const char *auto_pad;
};

struct conv_node {
	struct wh_attr at[5];
	struct wh_node node;
};

static void conv_node_init(struct conv_node *cn, const struct node_spec *ns, int nsp)
{
	memset(cn, 0, sizeof *cn);
	int n = 0;
	cn->at[n++] = (struct wh_attr){.name = "group", .type = WH_ATTR_INT, .i = ns->group ? ns->group : 1};
	if (ns->strides[0])
		cn->at[n++] = (struct wh_attr){.name = "strides", .type = WH_ATTR_INTS, .ints = (int64_t *)ns->strides, .n = (size_t)nsp};
	if (ns->dil[0])
		cn->at[n++] = (struct wh_attr){.name = "dilations", .type = WH_ATTR_INTS, .ints = (int64_t *)ns->dil, .n = (size_t)nsp};
	if (ns->pads[0] >= 0 && !ns->auto_pad)
		cn->at[n++] = (struct wh_attr){.name = "pads", .type = WH_ATTR_INTS, .ints = (int64_t *)ns->pads, .n = 2 * (size_t)nsp};
	if (ns->auto_pad)
		cn->at[n++] = (struct wh_attr){.name = "auto_pad", .type = WH_ATTR_STRING,
					       .s = {(const uint8_t *)ns->auto_pad, strlen(ns->auto_pad)}};
	cn->node = (struct wh_node){.name = "conv", .op_type = "Conv", .domain = "", .n_attrs = (uint32_t)n, .attrs = cn->at};
}

static const struct wh_tactic *find_tactic(const struct wh_tactic *list, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(list[i].name, name))
			return &list[i];
	ck_abort_msg("no tactic %s", name);
	return NULL;
}

static enum wh_isa tactic_isa(const char *name)
{
	return strstr(name, "avx512") ? WH_ISA_AVX512 : strstr(name, "avx2") ? WH_ISA_AVX2 : WH_ISA_SCALAR;
}

static bool conv_eligible(const char *tactic, const struct node_spec *ns, int32_t rank, const int64_t *xd,
			  const int64_t *wd, enum wh_dtype dt, enum wh_isa cap)
{
	struct conv_node cn;
	conv_node_init(&cn, ns, rank - 2);
	struct wh_tensor x, w;
	float zeros[4096] = {0};
	tensor_from(&x, dt, rank, xd, zeros);
	tensor_from(&w, dt, rank, wd, zeros);
	const struct wh_tensor *ins[2] = {&x, &w};
	struct wh_cpu_features cpu = wh_cpu_capped(cap);
	struct wh_kernel_ctx ctx = {.node = &cn.node, .opset = 11, .n_inputs = 2, .inputs = ins, .cpu = &cpu};
	const struct wh_tactic *t = find_tactic(wh_conv_extra_tactics, wh_conv_extra_tactics_count, tactic);
	ctx.tactic = t;
	bool ok = !t->eligible || t->eligible(&ctx);
	wh_tensor_release(&x);
	wh_tensor_release(&w);
	return ok;
}

START_TEST(tactic_tables_well_formed)
{
	const struct wh_tactic *tabs[3] = {wh_conv_extra_tactics, wh_gemm_extra_tactics, wh_matmul_extra_tactics};
	uint32_t ns[3] = {wh_conv_extra_tactics_count, wh_gemm_extra_tactics_count, wh_matmul_extra_tactics_count};
	const char *prefix[3] = {"conv-", "gemm-", "matmul-"};
	for (int t = 0; t < 3; t++)
		for (uint32_t i = 0; i < ns[t]; i++) {
			const struct wh_tactic *a = &tabs[t][i];
			ck_assert_uint_ge(a->id, 1000);
			ck_assert(!strncmp(a->name, prefix[t], strlen(prefix[t])));
			ck_assert(a->numerics && a->numerics[0] && a->run);
			for (uint32_t j = 0; j < i; j++) {
				ck_assert_uint_ne(a->id, tabs[t][j].id);
				ck_assert_str_ne(a->name, tabs[t][j].name);
			}
		}
	ck_assert_uint_eq(wh_conv_extra_tactics_count, 13);
	ck_assert_uint_eq(wh_gemm_extra_tactics_count, 7);
	ck_assert_uint_eq(wh_matmul_extra_tactics_count, 7);
}
END_TEST

START_TEST(conv_eligibility)
{
	static const int64_t x4[4] = {1, 4, 8, 8}, w33[4] = {6, 4, 3, 3}, w55[4] = {6, 4, 5, 5};
	static const int64_t w11[4] = {6, 4, 1, 1}, wg2[4] = {6, 2, 3, 3}, w31[4] = {6, 4, 3, 1};
	static const int64_t x3[3] = {1, 4, 8}, w3[3] = {6, 4, 3}, x5[5] = {1, 4, 5, 5, 5}, w5[5] = {6, 4, 3, 3, 3};
	const struct node_spec plain = {.pads = {-1}}, pad1 = {.pads = {1, 1, 1, 1}}, asym = {.pads = {0, 2, 1, 0}};
	const struct node_spec s2 = {.strides = {2, 2}, .pads = {-1}}, d2 = {.dil = {2, 2}, .pads = {-1}};
	const struct node_spec g2 = {.group = 2, .pads = {-1}}, same = {.auto_pad = "SAME_UPPER", .pads = {-1}};
	const struct node_spec s12 = {.strides = {1, 2}, .pads = {-1}};
	enum wh_isa top = wh_cpu()->detected;
	const char *wino = "conv-winograd-f2x2-3x3-scalar", *pw = "conv-1x1-gemm-scalar";
	/* Winograd: 3x3, stride 1, dilation 1, group 1, 2-D; any padding */
	ck_assert(conv_eligible(wino, &plain, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(conv_eligible(wino, &pad1, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(conv_eligible(wino, &asym, 4, x4, w33, WH_DT_FLOAT16, top));
	ck_assert(conv_eligible(wino, &same, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &s2, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &s12, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &d2, 4, x4, w33, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &g2, 4, x4, wg2, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 4, x4, w55, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 4, x4, w31, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 4, x4, w11, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 3, x3, w3, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 5, x5, w5, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(wino, &plain, 4, x4, w33, WH_DT_INT8, top));
	/* 1x1: kernel 1, stride 1, no padding (SAME gives none) */
	ck_assert(conv_eligible(pw, &plain, 4, x4, w11, WH_DT_FLOAT, top));
	ck_assert(conv_eligible(pw, &same, 4, x4, w11, WH_DT_FLOAT, top));
	ck_assert(conv_eligible(pw, &g2, 4, x4, (const int64_t[4]){6, 2, 1, 1}, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(pw, &pad1, 4, x4, w11, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(pw, &s2, 4, x4, w11, WH_DT_FLOAT, top));
	ck_assert(!conv_eligible(pw, &plain, 4, x4, w33, WH_DT_FLOAT, top));
	/* an invalid geometry is not eligible (W's channels do not match) */
	ck_assert(!conv_eligible(pw, &plain, 4, x4, (const int64_t[4]){6, 3, 1, 1}, WH_DT_FLOAT, top));
	/* the general ones take any float geometry, no integers (fp16 accumulation only for
	 * layers that run in fp16: the context says FP32 here) */
	ck_assert(!conv_eligible("conv-fp16acc-scalar", &s2, 4, x4, w55, WH_DT_FLOAT, top));
	const char *general[] = {"conv-direct-scalar", "conv-im2col-gemm-scalar"};
	for (int i = 0; i < 2; i++) {
		ck_assert(conv_eligible(general[i], &s2, 4, x4, w55, WH_DT_FLOAT, top));
		ck_assert(conv_eligible(general[i], &plain, 5, x5, w5, WH_DT_FLOAT16, top));
		ck_assert(!conv_eligible(general[i], &plain, 4, x4, w33, WH_DT_INT8, top));
	}
	/* the ISA: a tactic needs the CPU to allow its instructions */
	ck_assert(!conv_eligible("conv-winograd-f2x2-3x3-avx2", &plain, 4, x4, w33, WH_DT_FLOAT, WH_ISA_SCALAR));
	ck_assert(!conv_eligible("conv-im2col-gemm-avx512", &plain, 4, x4, w33, WH_DT_FLOAT, WH_ISA_AVX2));
	ck_assert(!conv_eligible("conv-1x1-gemm-avx2", &plain, 4, x4, w11, WH_DT_FLOAT, WH_ISA_SCALAR));
	if (top >= WH_ISA_AVX2)
		ck_assert(conv_eligible("conv-winograd-f2x2-3x3-avx2", &plain, 4, x4, w33, WH_DT_FLOAT, WH_ISA_AVX2));
}
END_TEST

/* Every eligible tactic, run as the runtime runs it (float32 and float16), against the
 * reference; plus the default Conv kernel on an auto_pad geometry. */
START_TEST(conv_tactics_run_through_ctx)
{
	struct wh_threadpool *p3;
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	static const struct {
		struct node_spec ns;
		struct geo g;
	} cases[] = {
		{{.pads = {1, 0, 2, 1}}, {2, 2, 5, 7, 1, {{9, 3, 1, 1, 1, 2}, {13, 3, 1, 1, 0, 1}}}},
		{{.group = 2, .strides = {2, 1}, .pads = {0, 1, 1, 0}}, {2, 1, 4, 6, 2, {{8, 3, 2, 1, 0, 1}, {7, 3, 1, 1, 1, 0}}}},
		{{.pads = {0, 0, 0, 0}}, {2, 2, 6, 5, 1, {{4, 1, 1, 1, 0, 0}, {9, 1, 1, 1, 0, 0}}}},
	};
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		struct conv_bufs c;
		bufs_init(&c, &cases[ci].g, true, 70 + ci, 1);
		int64_t xd[4] = {c.s.N, c.s.C, c.s.in[0], c.s.in[1]};
		int64_t wd[4] = {c.s.M, c.s.C / c.s.G, c.s.k[0], c.s.k[1]}, bd[1] = {c.s.M};
		struct conv_node cn;
		conv_node_init(&cn, &cases[ci].ns, 2);
		for (int half = 0; half < 2; half++) {
			enum wh_dtype dt = half ? WH_DT_FLOAT16 : WH_DT_FLOAT;
			struct wh_tensor x, w, b, y, y3;
			tensor_from(&x, dt, 4, xd, c.x);
			tensor_from(&w, dt, 4, wd, c.w);
			tensor_from(&b, dt, 1, bd, c.b);
			const struct wh_tensor *ins[3] = {&x, &w, &b};
			bool wanted = true;
			struct wh_kernel_ctx ctx = {.node = &cn.node, .opset = 11, .n_inputs = 3, .inputs = ins, .n_outputs = 1,
						    .outputs = &y, .output_wanted = &wanted, .cpu = wh_cpu()};
			/* the fp16 case's exact answer is on the fp16-rounded operands */
			float *rx = malloc(c.nx * sizeof(float)), *rw = malloc(c.nw * sizeof(float)), *rb = malloc((size_t)c.s.M * sizeof(float));
			for (size_t i = 0; i < c.nx; i++)
				rx[i] = half ? wh_round_f16(c.x[i]) : c.x[i];
			for (size_t i = 0; i < c.nw; i++)
				rw[i] = half ? wh_round_f16(c.w[i]) : c.w[i];
			for (int64_t i = 0; i < c.s.M; i++)
				rb[i] = half ? wh_round_f16(c.b[i]) : c.b[i];
			conv_naive(&c.s, rx, rw, rb, NAIVE_EXACT, c.exact, NULL);
			int ran = 0;
			for (uint32_t t = 0; t < wh_conv_extra_tactics_count; t++) {
				const struct wh_tactic *tc = &wh_conv_extra_tactics[t];
				ctx.tactic = tc;
				ctx.pool = NULL;
				if (tc->eligible && !tc->eligible(&ctx))
					continue;
				wh_tensor_init(&y);
				ck_assert_msg(tc->run(&ctx) == WH_OK, "%s: %s", tc->name, wh_error_message());
				ck_assert_int_eq(y.dtype, dt);
				ck_assert_uint_eq(y.count, c.ny);
				ck_assert_int_eq(y.rank, 4);
				bool f16acc = strstr(tc->name, "fp16acc") != NULL;
				double tol = f16acc ? ((double)c.terms + 2) * 0x1p-10 : strstr(tc->name, "winograd") ? 2e-5 : 1e-5;
				for (size_t i = 0; i < c.ny; i++) {
					double err = fabs(tensor_val(&y, i) - c.exact[i]);
					double allowed = tol * c.mag[i] + (half ? 0x1p-11 * fabs(c.exact[i]) : 0) + 1e-30;
					ck_assert_msg(err <= allowed, "case %zu %s %s: y[%zu] = %g, exact %g", ci, tc->name,
						      wh_dtype_name(dt), i, (double)tensor_val(&y, i), c.exact[i]);
				}
				/* and with three threads */
				ctx.outputs = &y3;
				ctx.pool = p3;
				wh_tensor_init(&y3);
				ck_assert_int_eq(tc->run(&ctx), WH_OK);
				ck_assert_msg(!memcmp(y.data, y3.data, wh_tensor_nbytes(&y)), "%s: threads differ", tc->name);
				wh_tensor_release(&y3);
				ctx.outputs = &y;
				wh_tensor_release(&y);
				ran++;
			}
			/* direct, im2col and fp16acc always; 1x1 or Winograd where they apply */
			ck_assert_int_ge(ran, ci == 1 ? 3 : 4);
			free(rx);
			free(rw);
			free(rb);
			wh_tensor_release(&x);
			wh_tensor_release(&w);
			wh_tensor_release(&b);
		}
		bufs_free(&c);
	}
	wh_threadpool_destroy(p3);
}
END_TEST

/* auto_pad and strides read from the node as the default Conv kernel reads them: same
 * output shape, values within tolerance. A tactic that is not eligible refuses to run. */
START_TEST(conv_tactics_agree_with_default_kernel)
{
	static const int64_t xd[4] = {1, 3, 10, 7}, wd[4] = {4, 3, 3, 3};
	const char *modes[] = {"SAME_UPPER", "SAME_LOWER", "VALID"};
	float *xv = random_floats(210, 5, 1), *wv = random_floats(108, 6, 1);
	const struct wh_op_def *op = wh_op_lookup("", "Conv", 11);
	ck_assert_ptr_nonnull(op);
	for (int m = 0; m < 3; m++)
		for (int st = 1; st <= 2; st++) {
			struct node_spec ns = {.auto_pad = modes[m], .strides = {st, st}, .pads = {-1}};
			struct conv_node cn;
			conv_node_init(&cn, &ns, 2);
			struct wh_tensor x, w, y, yd;
			tensor_from(&x, WH_DT_FLOAT, 4, xd, xv);
			tensor_from(&w, WH_DT_FLOAT, 4, wd, wv);
			const struct wh_tensor *ins[2] = {&x, &w};
			bool wanted = true;
			struct wh_kernel_ctx ctx = {.node = &cn.node, .opset = 11, .n_inputs = 2, .inputs = ins, .n_outputs = 1,
						    .outputs = &yd, .output_wanted = &wanted, .cpu = wh_cpu()};
			wh_tensor_init(&yd);
			ck_assert_int_eq(op->run(&ctx), WH_OK);
			ctx.outputs = &y;
			for (uint32_t t = 0; t < wh_conv_extra_tactics_count; t++) {
				const struct wh_tactic *tc = &wh_conv_extra_tactics[t];
				ctx.tactic = tc;
				wh_tensor_init(&y);
				if (tc->eligible && !tc->eligible(&ctx)) {
					/* fp16 accumulation is eligible for fp16 layers only, yet runs anywhere */
					if (wh_cpu()->isa >= tactic_isa(tc->name) && !strstr(tc->name, "fp16acc"))
						ck_assert_int_ne(tc->run(&ctx), WH_OK);
					wh_tensor_release(&y);
					continue;
				}
				ck_assert_msg(tc->run(&ctx) == WH_OK, "%s: %s", tc->name, wh_error_message());
				ck_assert(wh_tensor_same_shape(&y, &yd));
				for (uint64_t i = 0; i < y.count; i++)
					ck_assert_msg(fabsf(((float *)y.data)[i] - ((float *)yd.data)[i]) <= (strstr(tc->name, "fp16") ? 0.25f : 1e-4f),
						      "%s %s stride %d: y[%llu] = %g, default kernel %g", tc->name, modes[m], st,
						      (unsigned long long)i, (double)((float *)y.data)[i], (double)((float *)yd.data)[i]);
				wh_tensor_release(&y);
			}
			wh_tensor_release(&yd);
			wh_tensor_release(&x);
			wh_tensor_release(&w);
		}
	free(xv);
	free(wv);
}
END_TEST

/* ---- MatMul and Gemm ---- */

enum mm_mode { MM_F32, MM_SPLITK, MM_F16, MM_EXACT, MM_MAG };

/* C = A B for one matrix, A (i, k) at a[i*rsa + k*csa], B (k, j) at b[k*rsb + j*csb]. */
static void mm_naive(size_t M, size_t N, size_t K, const float *a, size_t rsa, size_t csa, const float *b,
		     size_t rsb, size_t csb, enum mm_mode mode, float *cf, double *cd)
{
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			float acc = 0, chunk = 0;
			double e = 0;
			for (size_t k = 0; k < K; k++) {
				float av = a[i * rsa + k * csa], bv = b[k * rsb + j * csb];
				if (mode == MM_F32)
					acc += av * bv;
				else if (mode == MM_SPLITK) {
					chunk += av * bv;
					if ((k + 1) % WH_TX_SPLITK_CHUNK == 0 || k + 1 == K) {
						acc = k < WH_TX_SPLITK_CHUNK ? chunk : acc + chunk;
						chunk = 0;
					}
				} else if (mode == MM_F16)
					acc = f16_round_ref((double)acc + (double)wh_round_f16(av) * wh_round_f16(bv));
				else if (mode == MM_EXACT)
					e += (double)av * bv;
				else
					e += fabs((double)av * bv);
			}
			if (cf)
				cf[i * N + j] = acc;
			if (cd)
				cd[i * N + j] = e;
		}
}

/* Runs one MatMul/Gemm tactic by name; returns the output (caller releases). */
static void run_tactic(const struct wh_tactic *list, uint32_t n, const char *name, struct wh_kernel_ctx *ctx,
		       struct wh_tensor *y)
{
	const struct wh_tactic *tc = find_tactic(list, n, name);
	ctx->tactic = tc;
	ctx->outputs = y;
	wh_tensor_init(y);
	ck_assert_msg(tc->run(ctx) == WH_OK, "%s: %s", name, wh_error_message());
}

START_TEST(matmul_tactics_match)
{
	static const struct {
		int32_t ra, rb;
		int64_t a[4], b[4];
	} cases[] = {
		{2, 2, {7, 130}, {130, 13}},
		{4, 3, {2, 1, 5, 70}, {3, 70, 9}},
		{1, 2, {130}, {130, 6}},
		{3, 1, {4, 3, 65}, {65}},
		{3, 2, {2, 9, 200}, {200, 33}},
		{2, 2, {3, 0}, {0, 4}},
		{2, 2, {1, 64}, {64, 1}},
	};
	const struct wh_op_def *op = wh_op_lookup("", "MatMul", 13);
	ck_assert_ptr_nonnull(op);
	struct wh_threadpool *p3;
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	struct wh_node node = {.name = "mm", .op_type = "MatMul", .domain = ""};
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		struct wh_tensor A, B, Aa, Ba, yref, ymag, y, y3;
		uint64_t na = 1, nb = 1;
		for (int d = 0; d < cases[ci].ra; d++)
			na *= (uint64_t)cases[ci].a[d];
		for (int d = 0; d < cases[ci].rb; d++)
			nb *= (uint64_t)cases[ci].b[d];
		float *av = random_floats(na, 200 + ci, 1), *bv = random_floats(nb, 300 + ci, 1);
		float *aabs = malloc((na ? na : 1) * sizeof(float)), *babs = malloc((nb ? nb : 1) * sizeof(float));
		for (uint64_t i = 0; i < na; i++)
			aabs[i] = fabsf(av[i]);
		for (uint64_t i = 0; i < nb; i++)
			babs[i] = fabsf(bv[i]);
		tensor_from(&A, WH_DT_FLOAT, cases[ci].ra, cases[ci].a, av);
		tensor_from(&B, WH_DT_FLOAT, cases[ci].rb, cases[ci].b, bv);
		tensor_from(&Aa, WH_DT_FLOAT, cases[ci].ra, cases[ci].a, aabs);
		tensor_from(&Ba, WH_DT_FLOAT, cases[ci].rb, cases[ci].b, babs);
		const struct wh_tensor *ins[2] = {&A, &B}, *ins_abs[2] = {&Aa, &Ba};
		bool wanted = true;
		struct wh_kernel_ctx ctx = {.node = &node, .opset = 13, .n_inputs = 2, .inputs = ins_abs, .n_outputs = 1,
					    .outputs = &ymag, .output_wanted = &wanted, .cpu = wh_cpu()};
		/* magnitudes and reference values from the default kernel */
		wh_tensor_init(&ymag);
		ck_assert_int_eq(op->run(&ctx), WH_OK);
		ctx.inputs = ins;
		ctx.outputs = &yref;
		wh_tensor_init(&yref);
		ck_assert_int_eq(op->run(&ctx), WH_OK);
		size_t K = (size_t)cases[ci].a[cases[ci].ra - 1];
		for (uint32_t t = 0; t < wh_matmul_extra_tactics_count; t++) {
			const struct wh_tactic *tc = &wh_matmul_extra_tactics[t];
			ctx.tactic = tc;
			ctx.pool = NULL;
			if (tc->eligible && !tc->eligible(&ctx))
				continue;
			run_tactic(wh_matmul_extra_tactics, wh_matmul_extra_tactics_count, tc->name, &ctx, &y);
			ck_assert(wh_tensor_same_shape(&y, &yref));
			bool f16 = strstr(tc->name, "fp16acc") != NULL;
			double tol = f16 ? ((double)K + 2) * 0x1p-10 : 2e-5;
			for (uint64_t i = 0; i < y.count; i++) {
				double m = ((float *)ymag.data)[i];
				ck_assert_msg(fabs(((float *)y.data)[i] - ((float *)yref.data)[i]) <= tol * m + 1e-30,
					      "case %zu %s: y[%llu] = %g, default kernel %g", ci, tc->name, (unsigned long long)i,
					      (double)((float *)y.data)[i], (double)((float *)yref.data)[i]);
			}
			ctx.pool = p3;
			run_tactic(wh_matmul_extra_tactics, wh_matmul_extra_tactics_count, tc->name, &ctx, &y3);
			ck_assert_msg(!memcmp(y.data, y3.data, wh_tensor_nbytes(&y)), "case %zu %s: 1 and 3 threads differ", ci,
				      tc->name);
			wh_tensor_release(&y3);
			wh_tensor_release(&y);
		}
		/* exact chains on the 2-D cases */
		if (cases[ci].ra == 2 && cases[ci].rb == 2) {
			size_t M = (size_t)cases[ci].a[0], N = (size_t)cases[ci].b[1];
			float *want = malloc((M * N + 1) * sizeof(float));
			static const struct {
				const char *name;
				enum mm_mode mode;
			} exact[] = {{"matmul-ref-scalar", MM_F32}, {"matmul-splitk-scalar", MM_SPLITK}, {"matmul-fp16acc-scalar", MM_F16},
				     {"matmul-fp16acc-avx2", MM_F16}, {"matmul-fp16acc-avx512", MM_F16}};
			ctx.pool = p3;
			for (int e = 0; e < 5; e++) {
				if (wh_cpu()->isa < tactic_isa(exact[e].name))
					continue;
				mm_naive(M, N, K, av, K, 1, bv, N, 1, exact[e].mode, want, NULL);
				run_tactic(wh_matmul_extra_tactics, wh_matmul_extra_tactics_count, exact[e].name, &ctx, &y);
				for (size_t i = 0; i < M * N; i++)
					ck_assert_msg(same_val(((float *)y.data)[i], want[i]), "case %zu %s: y[%zu] = %a, want %a", ci,
						      exact[e].name, i, (double)((float *)y.data)[i], (double)want[i]);
				wh_tensor_release(&y);
			}
			free(want);
		}
		wh_tensor_release(&A);
		wh_tensor_release(&B);
		wh_tensor_release(&Aa);
		wh_tensor_release(&Ba);
		wh_tensor_release(&yref);
		wh_tensor_release(&ymag);
		free(av);
		free(bv);
		free(aabs);
		free(babs);
	}
	wh_threadpool_destroy(p3);
}
END_TEST

/* Split-K sums in another order: on a long K it differs from the plain chain somewhere. */
START_TEST(splitk_changes_the_order)
{
	static const int64_t ad[2] = {16, 1000}, bd[2] = {1000, 16};
	float *av = random_floats(16000, 1, 1), *bv = random_floats(16000, 2, 1);
	struct wh_tensor A, B, y1, y2;
	tensor_from(&A, WH_DT_FLOAT, 2, ad, av);
	tensor_from(&B, WH_DT_FLOAT, 2, bd, bv);
	const struct wh_tensor *ins[2] = {&A, &B};
	bool wanted = true;
	struct wh_node node = {.name = "mm", .op_type = "MatMul", .domain = ""};
	struct wh_kernel_ctx ctx = {.node = &node, .opset = 13, .n_inputs = 2, .inputs = ins, .n_outputs = 1,
				    .output_wanted = &wanted, .cpu = wh_cpu()};
	run_tactic(wh_matmul_extra_tactics, wh_matmul_extra_tactics_count, "matmul-ref-scalar", &ctx, &y1);
	run_tactic(wh_matmul_extra_tactics, wh_matmul_extra_tactics_count, "matmul-splitk-scalar", &ctx, &y2);
	int differ = 0;
	for (int i = 0; i < 256; i++)
		differ += ((float *)y1.data)[i] != ((float *)y2.data)[i];
	ck_assert_int_gt(differ, 16);
	wh_tensor_release(&y1);
	wh_tensor_release(&y2);
	wh_tensor_release(&A);
	wh_tensor_release(&B);
	free(av);
	free(bv);
}
END_TEST

START_TEST(gemm_tactics_match)
{
	const struct wh_op_def *op = wh_op_lookup("", "Gemm", 13);
	ck_assert_ptr_nonnull(op);
	const size_t M = 11, N = 19, K = 150;
	float *av = random_floats(M * K, 1, 1), *bv = random_floats(K * N, 2, 1), *cv = random_floats(M * N, 3, 1);
	struct wh_threadpool *p3;
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	/* C shapes: none, [N], [M, 1], [M, N], scalar */
	static const int32_t c_rank[5] = {-1, 1, 2, 2, 0};
	static const int64_t c_dims[5][2] = {{0, 0}, {19, 0}, {11, 1}, {11, 19}, {0, 0}};
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int cs = 0; cs < 5; cs++) {
				struct wh_attr at[4] = {
					{.name = "transA", .type = WH_ATTR_INT, .i = ta},
					{.name = "transB", .type = WH_ATTR_INT, .i = tb},
					{.name = "alpha", .type = WH_ATTR_FLOAT, .f = cs == 3 ? 0.75f : 1.0f},
					{.name = "beta", .type = WH_ATTR_FLOAT, .f = cs == 2 ? -1.5f : 1.0f},
				};
				struct wh_node node = {.name = "gemm", .op_type = "Gemm", .domain = "", .n_attrs = 4, .attrs = at};
				int64_t ad[2] = {ta ? (int64_t)K : (int64_t)M, ta ? (int64_t)M : (int64_t)K};
				int64_t bd[2] = {tb ? (int64_t)N : (int64_t)K, tb ? (int64_t)K : (int64_t)N};
				struct wh_tensor A, B, C, yref, y, y3;
				tensor_from(&A, WH_DT_FLOAT, 2, ad, av);
				tensor_from(&B, WH_DT_FLOAT, 2, bd, bv);
				if (c_rank[cs] >= 0)
					tensor_from(&C, WH_DT_FLOAT, c_rank[cs], c_dims[cs], cv);
				const struct wh_tensor *ins[3] = {&A, &B, c_rank[cs] >= 0 ? &C : NULL};
				bool wanted = true;
				struct wh_kernel_ctx ctx = {.node = &node, .opset = 13, .n_inputs = 3, .inputs = ins, .n_outputs = 1,
							    .outputs = &yref, .output_wanted = &wanted, .cpu = wh_cpu()};
				wh_tensor_init(&yref);
				ck_assert_int_eq(op->run(&ctx), WH_OK);
				double *mag = malloc(M * N * sizeof(double));
				mm_naive(M, N, K, av, ta ? 1 : K, ta ? M : 1, bv, tb ? 1 : N, tb ? K : 1, MM_MAG, NULL, mag);
				for (size_t i = 0; i < M * N; i++) {
					const float *cp = c_rank[cs] < 0 ? NULL : cv;
					size_t r = i / N, col = i % N;
					float c = !cp ? 0 : cs == 1 ? cp[col] : cs == 2 ? cp[r] : cs == 3 ? cp[i] : cp[0];
					mag[i] = fabs(at[2].f) * mag[i] + fabs(at[3].f * c) + 1e-30;
				}
				for (uint32_t t = 0; t < wh_gemm_extra_tactics_count; t++) {
					const struct wh_tactic *tc = &wh_gemm_extra_tactics[t];
					ctx.tactic = tc;
					ctx.pool = NULL;
					if (tc->eligible && !tc->eligible(&ctx))
						continue;
					run_tactic(wh_gemm_extra_tactics, wh_gemm_extra_tactics_count, tc->name, &ctx, &y);
					ck_assert(wh_tensor_same_shape(&y, &yref));
					double tol = strstr(tc->name, "fp16acc") ? ((double)K + 2) * 0x1p-10 : 2e-5;
					for (uint64_t i = 0; i < y.count; i++)
						ck_assert_msg(fabs(((float *)y.data)[i] - ((float *)yref.data)[i]) <= tol * mag[i],
							      "transA %d transB %d C %d %s: y[%llu] = %g, default kernel %g", ta, tb, cs,
							      tc->name, (unsigned long long)i, (double)((float *)y.data)[i],
							      (double)((float *)yref.data)[i]);
					ctx.pool = p3;
					run_tactic(wh_gemm_extra_tactics, wh_gemm_extra_tactics_count, tc->name, &ctx, &y3);
					ck_assert_msg(!memcmp(y.data, y3.data, wh_tensor_nbytes(&y)), "%s: 1 and 3 threads differ", tc->name);
					wh_tensor_release(&y3);
					wh_tensor_release(&y);
				}
				/* gemm-ref-scalar: the plain chain, then alpha*sum + beta*C */
				if (!ta && !tb && cs == 3) {
					float *want = malloc(M * N * sizeof(float));
					mm_naive(M, N, K, av, K, 1, bv, N, 1, MM_F32, want, NULL);
					run_tactic(wh_gemm_extra_tactics, wh_gemm_extra_tactics_count, "gemm-ref-scalar", &ctx, &y);
					for (size_t i = 0; i < M * N; i++)
						ck_assert(same_val(((float *)y.data)[i], 0.75f * want[i] + 1.0f * cv[i]));
					wh_tensor_release(&y);
					free(want);
				}
				free(mag);
				wh_tensor_release(&yref);
				wh_tensor_release(&A);
				wh_tensor_release(&B);
				if (c_rank[cs] >= 0)
					wh_tensor_release(&C);
			}
	wh_threadpool_destroy(p3);
	free(av);
	free(bv);
	free(cv);
}
END_TEST

/* Bad inputs give errors, never crashes. */
START_TEST(bad_inputs_fail)
{
	static const int64_t x4[4] = {1, 4, 5, 5}, wbad[4] = {6, 3, 3, 3}, a2[2] = {3, 4}, b2[2] = {5, 6};
	float zeros[512] = {0};
	struct wh_tensor x, w, a, b, y;
	tensor_from(&x, WH_DT_FLOAT, 4, x4, zeros);
	tensor_from(&w, WH_DT_FLOAT, 4, wbad, zeros);
	tensor_from(&a, WH_DT_FLOAT, 2, a2, zeros);
	tensor_from(&b, WH_DT_FLOAT, 2, b2, zeros);
	const struct wh_tensor *cins[2] = {&x, &w}, *mins[2] = {&a, &b};
	bool wanted = true;
	struct wh_node cnode = {.name = "c", .op_type = "Conv", .domain = ""};
	struct wh_node mnode = {.name = "m", .op_type = "MatMul", .domain = ""};
	struct wh_kernel_ctx ctx = {.node = &cnode, .opset = 11, .n_inputs = 2, .inputs = cins, .n_outputs = 1,
				    .outputs = &y, .output_wanted = &wanted, .cpu = wh_cpu()};
	for (uint32_t t = 0; t < wh_conv_extra_tactics_count; t++) {
		wh_tensor_init(&y);
		ctx.tactic = &wh_conv_extra_tactics[t];
		if (wh_conv_extra_tactics[t].eligible && !wh_conv_extra_tactics[t].eligible(&ctx))
			continue;
		ck_assert_int_eq(wh_conv_extra_tactics[t].run(&ctx), WH_ERR_SHAPE);
		wh_tensor_release(&y);
	}
	ctx.node = &mnode;
	ctx.inputs = mins;
	for (uint32_t t = 0; t < wh_matmul_extra_tactics_count; t++) {
		if (wh_cpu()->isa < tactic_isa(wh_matmul_extra_tactics[t].name))
			continue;
		wh_tensor_init(&y);
		ck_assert_int_eq(wh_matmul_extra_tactics[t].run(&ctx), WH_ERR_SHAPE);
		wh_tensor_release(&y);
	}
	wh_tensor_release(&x);
	wh_tensor_release(&w);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
}
END_TEST

static Suite *tactics_suite(void)
{
	Suite *s = suite_create("tactics-extra");
	TCase *tc = tcase_create("kernels");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, round_f16d_matches_numfmt);
	tcase_add_test(tc, axpy_f16_exact_at_every_isa);
	tcase_add_test(tc, conv_algos_match_references);
	tcase_add_test(tc, fp16acc_overflows_like_hardware);
	tcase_add_test(tc, winograd_error_measured);
	tcase_add_test(tc, winograd_transforms_same_bits);
	tcase_add_test(tc, conv_threads_bit_identical);
	suite_add_tcase(s, tc);
	TCase *ops = tcase_create("tactics");
	tcase_set_timeout(ops, 600);
	tcase_add_test(ops, tactic_tables_well_formed);
	tcase_add_test(ops, conv_eligibility);
	tcase_add_test(ops, conv_tactics_run_through_ctx);
	tcase_add_test(ops, conv_tactics_agree_with_default_kernel);
	tcase_add_test(ops, matmul_tactics_match);
	tcase_add_test(ops, splitk_changes_the_order);
	tcase_add_test(ops, gemm_tactics_match);
	tcase_add_test(ops, bad_inputs_fail);
	suite_add_tcase(s, ops);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(tactics_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
