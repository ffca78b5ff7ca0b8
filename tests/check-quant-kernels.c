/* The integer kernels (executor/ops/qgemm-internal.h): the 8-bit GEMM behind MatMulInteger
 * and ConvInteger against plain loops written here from the definition (sum of (a - za) *
 * (b - zb) in wrapping int32), on every ISA this machine has (AVX-512 with VNNI, AVX-512
 * without VNNI, AVX2, scalar) and with 1, 2 and 3 threads, bit for bit; over odd sizes and
 * tails, every uint8/int8 combination, zero points at the extremes (0, 255, -128, 127) and
 * data at the extremes (255 x 127 products, where vpmaddubsw would saturate); convolutions
 * with groups, strides, dilations, padding, 1x1 and 1-D. The vector loops of the
 * quantization ops (requantization, quantize, dequantize, range) against their scalar
 * references bit for bit, ties and NaN included; and the operators through the kernel
 * harness (QLinearConv with per-channel scales, QLinearMatMul, DynamicQuantizeLinear) equal
 * under every ISA cap. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/qgemm-internal.h"
#include "executor/threadpool.h"
#include "kernel-harness.h"

#define CHECK(cond, ...)                                                                                    \
	do {                                                                                                \
		if (!(cond))                                                                                \
			ck_abort_msg(__VA_ARGS__);                                                          \
	} while (0)

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* Bytes: mostly random, a quarter at the type's extremes (products of 255 and 127 or -128
 * overflow vpmaddubsw's int16 pair sums). */
static void fill_bytes(uint8_t *v, size_t n, uint64_t *seed, int mode)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(seed);
		if (mode == 1) /* all at the maximum magnitude */
			v[i] = (r & 1) ? 0xFF : 0x7F;
		else if ((r & 3) == 0)
			v[i] = (uint8_t)((r >> 8) & 1 ? 0xFF : ((r >> 9) & 1 ? 0x80 : 0x7F));
		else
			v[i] = (uint8_t)(r >> 16);
	}
}

static int32_t val(const uint8_t *v, size_t i, bool s8)
{
	return s8 ? (int32_t)(int8_t)v[i] : (int32_t)v[i];
}

/* The ISAs to compare: the scalar path and each SIMD path the machine can run. */
struct isa_case {
	const char *name;
	struct wh_cpu_features cpu;
};

static int isa_cases(struct isa_case *out)
{
	int n = 0;
	out[n++] = (struct isa_case){"scalar", wh_cpu_capped(WH_ISA_SCALAR)};
	if (wh_cpu()->detected >= WH_ISA_AVX2)
		out[n++] = (struct isa_case){"avx2", wh_cpu_capped(WH_ISA_AVX2)};
	if (wh_cpu()->detected >= WH_ISA_AVX512) {
		struct wh_cpu_features c = wh_cpu_capped(WH_ISA_AVX512);
		c.avx512vnni = false;
		out[n++] = (struct isa_case){"avx512-novnni", c};
		if (wh_cpu()->avx512vnni)
			out[n++] = (struct isa_case){"avx512-vnni", wh_cpu_capped(WH_ISA_AVX512)};
	}
	return n;
}

static const int32_t zps_u8[] = {0, 255, 128, 1};
static const int32_t zps_s8[] = {0, -128, 127, -1};

/* ---- matrix product ---- */

static void mm_def(size_t M, size_t N, size_t K, const uint8_t *a, bool as, const int32_t *za, const uint8_t *b,
		   bool bs, const int32_t *zb, int32_t *c)
{
	for (size_t m = 0; m < M; m++)
		for (size_t n = 0; n < N; n++) {
			int64_t s = 0;
			for (size_t k = 0; k < K; k++)
				s += (int64_t)(val(a, m * K + k, as) - za[m]) * (int64_t)(val(b, k * N + n, bs) - zb[n]);
			c[m * N + n] = (int32_t)(uint32_t)(uint64_t)s;
		}
}

START_TEST(matmul_matches_definition_on_every_isa_and_thread_count)
{
	static const size_t Ms[] = {1, 3, 4, 5, 9, 70};
	static const size_t Ns[] = {1, 15, 16, 17, 33, 64, 71};
	static const size_t Ks[] = {1, 3, 4, 5, 67, 300};
	struct isa_case isa[4];
	int ni = isa_cases(isa);
	struct wh_threadpool *pools[3] = {NULL, NULL, NULL};
	ck_assert_int_eq(wh_threadpool_create(2, &pools[1]), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &pools[2]), WH_OK);
	uint64_t seed = 1;
	int cases = 0;
	for (size_t im = 0; im < sizeof Ms / sizeof *Ms; im++)
		for (size_t in = 0; in < sizeof Ns / sizeof *Ns; in++)
			for (size_t ik = 0; ik < sizeof Ks / sizeof *Ks; ik++) {
				size_t M = Ms[im], N = Ns[in], K = Ks[ik];
				int combo = (int)((im + in + ik) % 4);
				bool as = combo & 1, bs = (combo >> 1) & 1;
				uint8_t *a = malloc(M * K), *b = malloc(K * N);
				int32_t *za = malloc(M * sizeof *za), *zb = malloc(N * sizeof *zb);
				int32_t *want = malloc(M * N * sizeof *want), *got = malloc(M * N * sizeof *got);
				fill_bytes(a, M * K, &seed, (int)(ik % 3 == 2));
				fill_bytes(b, K * N, &seed, (int)(ik % 3 == 2));
				/* zero points: one per tensor at an extreme, or per row / column */
				for (size_t m = 0; m < M; m++)
					za[m] = (as ? zps_s8 : zps_u8)[(im + (in % 2 ? m : 0)) % 4];
				for (size_t n = 0; n < N; n++)
					zb[n] = (bs ? zps_s8 : zps_u8)[(ik + (im % 2 ? n : 0)) % 4];
				mm_def(M, N, K, a, as, za, b, bs, zb, want);
				for (int i = 0; i < ni; i++)
					for (int t = 0; t < 3; t++) {
						memset(got, 0x55, M * N * sizeof *got);
						ck_assert_int_eq(wh_qmatmul(&isa[i].cpu, pools[t], M, N, K, a, as, za, b, bs,
									    zb, NULL, NULL, got),
								 WH_OK);
						CHECK(!memcmp(want, got, M * N * sizeof *got),
						      "%s, %d threads: M %zu N %zu K %zu a %s b %s", isa[i].name, t + 1,
						      M, N, K, as ? "s8" : "u8", bs ? "s8" : "u8");
						cases++;
					}
				free(a);
				free(b);
				free(za);
				free(zb);
				free(want);
				free(got);
			}
	ck_assert_int_gt(cases, 100);
	wh_threadpool_destroy(pools[1]);
	wh_threadpool_destroy(pools[2]);
}
END_TEST

/* A broken kernel that saturated the int16 pair sums (vpmaddubsw) would fail here: every
 * product is 255 * 127 or 255 * -128, far past int16 in pairs. */
START_TEST(matmul_extreme_products_are_exact)
{
	size_t M = 4, N = 16, K = 64;
	uint8_t a[4 * 64], b[64 * 16];
	int32_t za[4] = {0, 0, 0, 0}, zb[16] = {0};
	int32_t got[4 * 16];
	memset(a, 0xFF, sizeof a);
	for (size_t i = 0; i < sizeof b; i++)
		b[i] = i % 2 ? 0x7F : 0x80;
	struct isa_case isa[4];
	int ni = isa_cases(isa);
	for (int i = 0; i < ni; i++) {
		ck_assert_int_eq(wh_qmatmul(&isa[i].cpu, NULL, M, N, K, a, false, za, b, true, zb, NULL, NULL, got), WH_OK);
		/* every row is all 255: column n sums 255 * b[k][n] */
		for (size_t n = 0; n < N; n++) {
			int32_t col = 0;
			for (size_t k = 0; k < K; k++)
				col += 255 * (int32_t)(int8_t)b[k * N + n];
			CHECK(got[n] == col, "%s: column %zu is %d, want %d", isa[i].name, n, got[n], col);
		}
	}
}
END_TEST

/* ---- convolution ---- */

static void conv_def(const struct wh_conv_shape *s, const uint8_t *x, bool xs, int32_t zx, const uint8_t *w, bool ws,
		     const int32_t *zw, const int32_t *bias, int32_t *y)
{
	int nsp = s->nsp;
	int64_t H = nsp == 2 ? s->in[0] : 1, W = s->in[nsp - 1], OH = nsp == 2 ? s->out[0] : 1, OW = s->out[nsp - 1];
	int64_t KH = nsp == 2 ? s->k[0] : 1, KW = s->k[nsp - 1];
	int64_t sh = nsp == 2 ? s->stride[0] : 1, sw = s->stride[nsp - 1];
	int64_t dh = nsp == 2 ? s->dil[0] : 1, dw = s->dil[nsp - 1];
	int64_t ph = nsp == 2 ? s->pad0[0] : 0, pw = s->pad0[nsp - 1];
	int64_t Cg = s->C / s->G, Mg = s->M / s->G;
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t co = 0; co < s->M; co++)
			for (int64_t oh = 0; oh < OH; oh++)
				for (int64_t ow = 0; ow < OW; ow++) {
					int64_t acc = bias ? bias[co] : 0, g = co / Mg;
					for (int64_t ci = 0; ci < Cg; ci++)
						for (int64_t kh = 0; kh < KH; kh++)
							for (int64_t kw = 0; kw < KW; kw++) {
								int64_t ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
								int32_t xv = zx;
								if (ih >= 0 && ih < H && iw >= 0 && iw < W)
									xv = val(x, (size_t)((((n * s->C + g * Cg + ci) * H + ih) * W) + iw), xs);
								int32_t wv = val(w, (size_t)(((co * Cg + ci) * KH + kh) * KW + kw), ws);
								acc += (int64_t)(xv - zx) * (wv - zw[co]);
							}
					y[((n * s->M + co) * OH + oh) * OW + ow] = (int32_t)(uint32_t)(uint64_t)acc;
				}
}

struct conv_case {
	int nsp;
	int64_t N, C, M, G, H, W, KH, KW, sh, sw, dh, dw, ph, pw, ph1, pw1;
};

static const struct conv_case conv_cases[] = {
	{2, 1, 3, 16, 1, 17, 19, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},  /* stem: 3 channels, stride 2 */
	{2, 2, 8, 12, 1, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* batch 2, odd M */
	{2, 1, 16, 24, 1, 13, 11, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, /* pointwise */
	{2, 1, 8, 8, 8, 10, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},    /* depthwise */
	{2, 2, 6, 6, 6, 7, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1},    /* depthwise, stride 2, a vector and a tail */
	{2, 1, 4, 4, 4, 9, 40, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},    /* depthwise 5x5 */
	{2, 1, 12, 6, 3, 11, 10, 3, 2, 2, 3, 2, 1, 2, 0, 1, 1},  /* groups, strides, dilation, uneven pads */
	{2, 1, 5, 7, 1, 6, 40, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2},    /* 5x5, K not a multiple of 4 */
	{2, 1, 64, 33, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},   /* K 576 */
	{1, 2, 6, 10, 2, 1, 37, 1, 4, 1, 2, 1, 2, 0, 3, 0, 2},   /* 1-D */
	{2, 1, 4, 5, 1, 40, 41, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0},   /* 1x1 stride 2 */
	{2, 1, 4, 8, 1, 9, 70, 3, 3, 2, 2, 1, 1, 1, 1, 1, 0},    /* stride 2, odd left pad, wide rows */
	{2, 1, 4, 8, 1, 5, 67, 3, 4, 1, 2, 1, 1, 0, 2, 0, 2},    /* stride 2, even left pad, odd width */
};

/* wh_qconv_fin's finish: the sums copied to their place (every output once) */
struct fin_copy {
	int32_t *y;
	size_t P;
};

static void fin_copy_fn(void *arg, size_t plane, size_t col0, int32_t *sums, size_t ld, size_t rows, size_t cnt)
{
	const struct fin_copy *f = arg;
	for (size_t r = 0; r < rows; r++)
		memcpy(f->y + (plane + r) * f->P + col0, sums + r * ld, cnt * sizeof *sums);
}

START_TEST(conv_matches_definition_on_every_isa_and_thread_count)
{
	struct isa_case isa[4];
	int ni = isa_cases(isa);
	struct wh_threadpool *pools[3] = {NULL, NULL, NULL};
	ck_assert_int_eq(wh_threadpool_create(2, &pools[1]), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &pools[2]), WH_OK);
	uint64_t seed = 7;
	for (size_t c = 0; c < sizeof conv_cases / sizeof *conv_cases; c++)
		for (int combo = 0; combo < 4; combo++) {
			const struct conv_case *cc = &conv_cases[c];
			struct wh_conv_shape s = {0};
			s.nsp = cc->nsp;
			s.N = cc->N;
			s.C = cc->C;
			s.M = cc->M;
			s.G = cc->G;
			int d0 = cc->nsp == 2 ? 1 : 0;
			if (cc->nsp == 2) {
				s.in[0] = cc->H;
				s.k[0] = cc->KH;
				s.stride[0] = cc->sh;
				s.dil[0] = cc->dh;
				s.pad0[0] = cc->ph;
				s.pad1[0] = cc->ph1;
			}
			s.in[d0] = cc->W;
			s.k[d0] = cc->KW;
			s.stride[d0] = cc->sw;
			s.dil[d0] = cc->dw;
			s.pad0[d0] = cc->pw;
			s.pad1[d0] = cc->pw1;
			size_t P = 1, Pin = 1;
			for (int d = 0; d < s.nsp; d++) {
				s.out[d] = (s.in[d] + s.pad0[d] + s.pad1[d] - s.dil[d] * (s.k[d] - 1) - 1) / s.stride[d] + 1;
				P *= (size_t)s.out[d];
				Pin *= (size_t)s.in[d];
			}
			bool xs = combo & 1, ws = (combo >> 1) & 1;
			size_t nx = (size_t)(s.N * s.C) * Pin, nw = (size_t)(s.M * s.C / s.G * cc->KH * cc->KW);
			size_t ny = (size_t)(s.N * s.M) * P;
			uint8_t *x = malloc(nx), *w = malloc(nw);
			int32_t *zw = malloc((size_t)s.M * sizeof *zw), *bias = malloc((size_t)s.M * sizeof *bias);
			int32_t *want = malloc(ny * sizeof *want), *got = malloc(ny * sizeof *got);
			fill_bytes(x, nx, &seed, 0);
			fill_bytes(w, nw, &seed, 0);
			int32_t zx = (xs ? zps_s8 : zps_u8)[(c + (size_t)combo) % 4];
			for (int64_t m = 0; m < s.M; m++) {
				zw[m] = (ws ? zps_s8 : zps_u8)[(c % 2 ? (size_t)m : c) % 4];
				bias[m] = (int32_t)(rng_next(&seed) >> 40) - (1 << 23);
			}
			const int32_t *bp = combo == 3 ? bias : NULL;
			conv_def(&s, x, xs, zx, w, ws, zw, bp, want);
			for (int i = 0; i < ni; i++)
				for (int t = 0; t < 3; t++) {
					memset(got, 0x55, ny * sizeof *got);
					ck_assert_int_eq(wh_qconv(&isa[i].cpu, pools[t], &s, x, xs, zx, w, ws, zw, bp, got), WH_OK);
					CHECK(!memcmp(want, got, ny * sizeof *got), "%s, %d threads: conv case %zu, x %s w %s",
					      isa[i].name, t + 1, c, xs ? "s8" : "u8", ws ? "s8" : "u8");
					if (bp)
						continue;
					/* the blocks handed to a finish, from the tasks' scratch (QDQ Conv's
					 * fused QuantizeLinear, QLinearConv) */
					memset(got, 0x55, ny * sizeof *got);
					struct fin_copy fc = {got, P};
					struct wh_qconv_finish fin = {fin_copy_fn, &fc};
					ck_assert_int_eq(wh_qconv_fin(&isa[i].cpu, pools[t], &s, x, xs, zx, w, ws, zw, NULL, &fin),
							 WH_OK);
					CHECK(!memcmp(want, got, ny * sizeof *got), "%s, %d threads: finished conv case %zu",
					      isa[i].name, t + 1, c);
				}
			free(x);
			free(w);
			free(zw);
			free(bias);
			free(want);
			free(got);
		}
	wh_threadpool_destroy(pools[1]);
	wh_threadpool_destroy(pools[2]);
}
END_TEST

/* ---- quantization loops ---- */

static float specials[] = {0.0f, -0.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 127.5f, 128.5f, -128.5f, 254.5f, 255.5f,
			   1e30f, -1e30f, INFINITY, -INFINITY, NAN, 1e-40f, 3.4e38f};

START_TEST(quant_loops_match_scalar)
{
	struct isa_case isa[4];
	int ni = isa_cases(isa);
	uint64_t seed = 3;
	size_t n = 4099;
	float *x = malloc(n * sizeof *x), *yf0 = malloc(n * sizeof *yf0), *yf1 = malloc(n * sizeof *yf1);
	float *xa = malloc(n * sizeof *xa);
	int32_t *acc = malloc(n * sizeof *acc), *accs = malloc(n * sizeof *accs);
	float *mult = malloc(n * sizeof *mult);
	uint8_t *b = malloc(n), *y0 = malloc(n), *y1 = malloc(n);
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&seed);
		x[i] = i < sizeof specials / sizeof *specials ? specials[i]
			: (i % 3 == 0) ? (float)((int)(r % 600) - 300) * 0.5f /* ties for scale 1 */
				       : (float)((double)(int64_t)r / 9.2e18 * 400.0);
		acc[i] = (i % 5 == 0) ? (int32_t)(r >> 32) : (int32_t)(r % 20001) - 10000;
		mult[i] = (i % 7 == 0) ? 0.5f : (float)((double)(r >> 40) / 1.6e7 * 0.02);
		b[i] = (uint8_t)(r >> 8);
		accs[i] = (int32_t)((r >> 20) % 4001) - 1500;
		xa[i] = (float)((double)(int64_t)(r * 0x9E3779B97F4A7C15ull) / 9.2e18 * 9.0);
	}
	static const float scales[] = {1.0f, 0.5f, 0.0123f, 3.0f};
	for (int i = 1; i < ni; i++)
		for (size_t off = 0; off < 17; off += 5)
			for (size_t len = 0; len < 70; len += 13) {
				size_t m = n - off - len;
				for (int s8 = 0; s8 < 2; s8++) {
					int32_t yz = s8 ? -3 : 128;
					wh_q_requant_scalar(acc + off, m, mult + off, 1, yz, s8, y0);
					wh_q_requant(acc + off, m, mult + off, 1, yz, s8, y1, &isa[i].cpu);
					CHECK(!memcmp(y0, y1, m), "%s: requant per column, off %zu", isa[i].name, off);
					wh_q_requant_scalar(acc + off, m, mult + 3, 0, yz, s8, y0);
					wh_q_requant(acc + off, m, mult + 3, 0, yz, s8, y1, &isa[i].cpu);
					CHECK(!memcmp(y0, y1, m), "%s: requant per row, off %zu", isa[i].name, off);
					/* QLinearConv's finish: + bias (wrapping), then one multiplier; the
					 * conv-like sums reach the 64-wide path, the others its fallback */
					static const int32_t biases[] = {0, 7, -100000, INT32_MAX};
					static const float rqm[] = {0.0123f, 0.5f, 3e-4f};
					for (int src = 0; src < 2; src++)
						for (size_t bi = 0; bi < 4; bi++)
							for (size_t mi = 0; mi < 3; mi++) {
								const int32_t *a = (src ? acc : accs) + off;
								int32_t *ab = (int32_t *)(void *)yf0, *ac = (int32_t *)(void *)yf1;
								for (size_t k = 0; k < m; k++) {
									ab[k] = (int32_t)((uint32_t)a[k] + (uint32_t)biases[bi]);
									ac[k] = a[k];
								}
								wh_q_requant_scalar(ab, m, rqm + mi, 0, yz, s8, y0);
								wh_q_requant_bias(ac, m, biases[bi], rqm[mi], yz, s8, y1, &isa[i].cpu);
								CHECK(!memcmp(y0, y1, m), "%s: requant + bias %d, mult %g, off %zu",
								      isa[i].name, biases[bi], (double)rqm[mi], off);
							}
					for (size_t sc = 0; sc < sizeof scales / sizeof *scales; sc++) {
						float zp = s8 ? -1.0f : 131.0f;
						wh_q_quant_scalar(x + off, m, scales[sc], zp, s8, y0);
						wh_q_quant(x + off, m, scales[sc], zp, s8, y1, &isa[i].cpu);
						CHECK(!memcmp(y0, y1, m), "%s: quantize, scale %g", isa[i].name, scales[sc]);
					}
					/* activations (no lane near a half in most blocks of 64: the 64-wide
					 * path), saturating both ways; zero points at the type's ends */
					for (int zi = 0; zi < 3; zi++) {
						float zp = s8 ? (float[]){-1.0f, -128.0f, 127.0f}[zi] : (float[]){131.0f, 0.0f, 255.0f}[zi];
						wh_q_quant_scalar(xa + off, m, 0.05f, zp, s8, y0);
						wh_q_quant(xa + off, m, 0.05f, zp, s8, y1, &isa[i].cpu);
						CHECK(!memcmp(y0, y1, m), "%s: quantize activations, zp %g", isa[i].name, (double)zp);
					}
					wh_q_dequant_scalar(b + off, s8, m, s8 ? -128 : 255, 0.37f, yf0);
					wh_q_dequant(b + off, s8, m, s8 ? -128 : 255, 0.37f, yf1, &isa[i].cpu);
					CHECK(!memcmp(yf0, yf1, m * sizeof *yf0), "%s: dequantize", isa[i].name);
				}
				for (int hb = 0; hb < 2; hb++)
					for (int s8z = 0; s8z < 6; s8z++) {
						/* QDQ Conv + Relu + QuantizeLinear in one pass: the scalar
						 * composition's bits (ties from mult 0.5, NaN-free); zero
						 * points inside and at the ends of the type (the saturating
						 * adds of the fast path) */
						static const float zu8[] = {120.0f, 0.0f, 255.0f}, zs8[] = {-5.0f, -128.0f, 127.0f};
						int s8 = s8z % 2;
						float qs = (off % 2) ? 0.37f : 1.0f, qz = s8 ? zs8[s8z / 2] : zu8[s8z / 2];
						float mu = mult[7 * (len / 13 + 1)];
						wh_q_scale_relu_quant_scalar(acc + off, m, mu, -3.5f, hb, qs, qz, s8, y0);
						wh_q_scale_relu_quant(acc + off, m, mu, -3.5f, hb, qs, qz, s8, y1, &isa[i].cpu);
						CHECK(!memcmp(y0, y1, m), "%s: scale, relu, quantize (bias %d, s8 %d)",
						      isa[i].name, hb, s8);
						/* a conv's sums: no lane near a half in most blocks of 64 (the
						 * 64-wide path with its saturating zero-point adds) */
						wh_q_scale_relu_quant_scalar(accs + off, m, 0.0123f, 0.3f, hb, 0.05f, qz, s8, y0);
						wh_q_scale_relu_quant(accs + off, m, 0.0123f, 0.3f, hb, 0.05f, qz, s8, y1, &isa[i].cpu);
						CHECK(!memcmp(y0, y1, m), "%s: scale, relu, quantize of conv sums (bias %d, zp %g)",
						      isa[i].name, hb, (double)qz);
						/* rows of a block (wh_q_scale_relu_quant_rows): each row's own
						 * multiplier and bias, strided */
						static const float rmult[3] = {0.0123f, 0.031f, 0.5f}, rbias[3] = {0.3f, -2.0f, 0.0f};
						size_t rn = (m - 12) / 3, lda = rn + 5, ldy = rn + 3; /* 3 rows within m */
						for (size_t rr = 0; rr < 3; rr++)
							wh_q_scale_relu_quant_scalar(accs + off + rr * lda, rn, rmult[rr], rbias[rr], hb,
										     0.05f, qz, s8, y0 + rr * ldy);
						wh_q_scale_relu_quant_rows(accs + off, lda, 3, rn, rmult, hb ? rbias : NULL, 0.05f, qz, s8, y1,
									   ldy, &isa[i].cpu);
						for (size_t rr = 0; rr < 3; rr++)
							CHECK(!memcmp(y0 + rr * ldy, y1 + rr * ldy, rn), "%s: rows, row %zu (bias %d)",
							      isa[i].name, rr, hb);
					}
				for (int hb = 0; hb < 2; hb++) {
					/* QDQ Conv's scaling: exact (0 ulp) against the scalar loop,
					 * in place as the kernel runs it */
					memcpy(yf1, acc + off, m * sizeof *yf1);
					wh_q_scale_bias_scalar(acc + off, m, mult[5], -0.75f, hb, yf0);
					wh_q_scale_bias((const int32_t *)(const void *)yf1, m, mult[5], -0.75f, hb, yf1,
							&isa[i].cpu);
					CHECK(!memcmp(yf0, yf1, m * sizeof *yf0), "%s: scale and bias %d", isa[i].name, hb);
				}
				float l0, h0, l1, h1;
				wh_q_minmax_scalar(x + 20 + off, m - 20, &l0, &h0);
				wh_q_minmax(x + 20 + off, m - 20, &l1, &h1, &isa[i].cpu);
				CHECK(!memcmp(&l0, &l1, sizeof l0) && !memcmp(&h0, &h1, sizeof h0), "%s: range", isa[i].name);
			}
	/* QuantizeLinear's quotient near half-integers (the AVX-512 loop multiplies by 1 / scale
	 * where that cannot move the integer, divides elsewhere): the scalar's bits */
	{
		uint64_t sd = 99;
		static const float deltas[] = {0.0f, 1e-7f, -1e-7f, 3e-4f, -3e-4f, 2e-3f, -2e-3f, 0.01f, -0.01f, 0.3f};
		for (int sc = 0; sc < 40; sc++) {
			float scale = (float)((double)(rng_next(&sd) >> 11) / 9007199254740992.0 * 20.0 + 1e-3);
			if (sc == 0)
				scale = 1e-39f; /* denormal: 1 / scale is infinite */
			for (size_t i = 0; i < n; i++) {
				uint64_t rr = rng_next(&sd);
				float k = (float)((int)(rr % 9000) - 4500) + 0.5f + deltas[(rr >> 20) % 10];
				x[i] = k * scale;
			}
			for (int i = 1; i < ni; i++)
				for (int s8 = 0; s8 < 2; s8++) {
					float zp = s8 ? 3.0f : 128.0f;
					wh_q_quant_scalar(x, n, scale, zp, s8, y0);
					wh_q_quant(x, n, scale, zp, s8, y1, &isa[i].cpu);
					CHECK(!memcmp(y0, y1, n), "%s: quantize near halves, scale %g", isa[i].name, (double)scale);
				}
		}
	}
	/* requantization near half-integers (the AVX-512 loop works in float32 where that cannot
	 * move the integer, in double elsewhere): the scalar's bits */
	{
		uint64_t sd = 123;
		int32_t *ac = malloc(n * sizeof *ac);
		for (int sc = 0; sc < 40; sc++) {
			/* acc beyond 2^24 (float(acc) rounds): mult 1e-7 .. 1e-6 */
			float mu = (float)((double)(rng_next(&sd) >> 11) / 9007199254740992.0 * 9e-7 + 1e-7);
			for (size_t i = 0; i < n; i++) {
				uint64_t rr = rng_next(&sd);
				double k = (double)((int)(rr % 250) - 125) + 0.5; /* within the clamp */
				ac[i] = (int32_t)llround(k / (double)mu) + (int32_t)((rr >> 20) % 3) - 1;
			}
			for (int i = 1; i < ni; i++)
				for (int s8 = 0; s8 < 2; s8++) {
					wh_q_requant_scalar(ac, n, &mu, 0, s8 ? 0 : 128, s8, y0);
					wh_q_requant(ac, n, &mu, 0, s8 ? 0 : 128, s8, y1, &isa[i].cpu);
					CHECK(!memcmp(y0, y1, n), "%s: requantize near halves, mult %g", isa[i].name, (double)mu);
				}
		}
		free(ac);
	}
	/* the scalar references themselves: ties to even, saturation, NaN */
	int32_t a4[4] = {5, 7, -5, 1000};
	float half = 0.5f;
	wh_q_requant_scalar(a4, 4, &half, 0, 0, true, y0);
	ck_assert_int_eq((int8_t)y0[0], 2);
	ck_assert_int_eq((int8_t)y0[1], 4);
	ck_assert_int_eq((int8_t)y0[2], -2);
	ck_assert_int_eq((int8_t)y0[3], 127);
	float q4[4] = {2.5f, -0.5f, NAN, 300.0f};
	wh_q_quant_scalar(q4, 4, 1.0f, 0.0f, false, y0);
	ck_assert_int_eq(y0[0], 2);
	ck_assert_int_eq(y0[1], 0);
	ck_assert_int_eq(y0[2], 0);
	ck_assert_int_eq(y0[3], 255);
	free(x);
	free(yf0);
	free(yf1);
	free(acc);
	free(accs);
	free(xa);
	free(mult);
	free(b);
	free(y0);
	free(y1);
}
END_TEST

/* ---- the operators, under every ISA cap ---- */

static void qlinear_conv_inputs(struct kh_harness *h, uint64_t *seed)
{
	int64_t xd[4] = {1, 6, 15, 13}, wd[4] = {10, 3, 3, 3}, one[1] = {1}, ten[1] = {10};
	uint8_t x[6 * 15 * 13], w[10 * 3 * 3 * 3];
	fill_bytes(x, sizeof x, seed, 0);
	fill_bytes(w, sizeof w, seed, 0);
	float xs = 0.02f, ys = 0.7f, ws[10];
	int8_t wz[10] = {0};
	int32_t bias[10];
	for (int i = 0; i < 10; i++) {
		ws[i] = 0.001f * (float)(i + 1);
		bias[i] = (int32_t)(rng_next(seed) % 2001) - 1000;
	}
	uint8_t xz = 255, yz = 3;
	kh_in_raw(h, 0, WH_DT_UINT8, 4, xd, x);
	kh_in_raw(h, 1, WH_DT_FLOAT, 0, one, &xs);
	kh_in_raw(h, 2, WH_DT_UINT8, 0, one, &xz);
	kh_in_raw(h, 3, WH_DT_INT8, 4, wd, w);
	kh_in_raw(h, 4, WH_DT_FLOAT, 1, ten, ws);
	kh_in_raw(h, 5, WH_DT_INT8, 1, ten, wz);
	kh_in_raw(h, 6, WH_DT_FLOAT, 0, one, &ys);
	kh_in_raw(h, 7, WH_DT_UINT8, 0, one, &yz);
	kh_in_raw(h, 8, WH_DT_INT32, 1, ten, bias);
}

START_TEST(operators_agree_across_isa_caps)
{
	static const enum wh_isa caps[] = {WH_ISA_SCALAR, WH_ISA_AVX2, WH_ISA_AVX512};
	uint8_t *ref[3] = {NULL, NULL, NULL};
	uint64_t refn[3] = {0};
	for (size_t c = 0; c < 3; c++) {
		if (caps[c] > wh_cpu()->detected)
			continue;
		uint64_t seed = 11;
		struct kh_harness h;
		/* QLinearConv: groups of 2, stride 2, per-channel weight scales, bias */
		kh_init(&h, "", "QLinearConv", 10, 9, 1);
		int64_t group = 2, strides[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
		kh_attr_int(&h, "group", group);
		kh_attr_ints(&h, "strides", strides, 2);
		kh_attr_ints(&h, "pads", pads, 4);
		h.cpu = wh_cpu_capped(caps[c]);
		qlinear_conv_inputs(&h, &seed);
		ck_assert_int_eq(kh_run(&h), WH_OK);
		uint64_t n1 = h.out[0].count;
		/* DynamicQuantizeLinear of a float tensor */
		struct kh_harness d;
		kh_init(&d, "", "DynamicQuantizeLinear", 11, 1, 3);
		d.cpu = wh_cpu_capped(caps[c]);
		float xf[1000];
		int64_t xd[1] = {1000};
		for (int i = 0; i < 1000; i++)
			xf[i] = (float)((int)(rng_next(&seed) % 2000) - 700) * 0.013f;
		kh_in_f32(&d, 0, 1, xd, xf);
		ck_assert_int_eq(kh_run(&d), WH_OK);
		ref[c] = malloc(n1 + 1000 + 1);
		memcpy(ref[c], h.out[0].data, n1);
		memcpy(ref[c] + n1, d.out[0].data, 1000);
		ref[c][n1 + 1000] = ((uint8_t *)d.out[2].data)[0];
		refn[c] = n1 + 1001;
		kh_free(&h);
		kh_free(&d);
	}
	ck_assert_ptr_nonnull(ref[0]);
	for (size_t c = 1; c < 3; c++)
		if (ref[c]) {
			ck_assert_uint_eq(refn[c], refn[0]);
			CHECK(!memcmp(ref[0], ref[c], refn[0]), "cap %zu differs from scalar", c);
		}
	for (size_t c = 0; c < 3; c++)
		free(ref[c]);
}
END_TEST

/* ---- QDQ convolution (executor/qdq.h): the Conv kernel given the 8-bit tensors ---- */

/* Conv of DequantizeLinear'd x [2, C, 11, 9] (uint8, zero point 131) and w [M, C/G, 3, 3]
 * (int8, per-channel scales and zero points), float bias: under every ISA cap and 1 or 2
 * threads the same bits; each output within 2 float32 roundings of the exact value
 * float(acc) * (xs * ws[m]) + b[m] computed in double from the integer definition (|y -
 * exact| <= 2^-22 (|acc * mult| + |b|)); the float Conv of the dequantized tensors (no
 * link) within 1e-5 of the largest output. */
START_TEST(qdq_conv_matches_definition)
{
	static const int64_t groups[] = {2, 6};
	for (size_t gi = 0; gi < 2; gi++) {
		int64_t G = groups[gi], C = 6, M = G == 6 ? 6 : 8, Cg = C / G, H = 11, W = 9;
		int64_t xd[4] = {2, C, H, W}, wd[4] = {M, Cg, 3, 3}, md[1] = {M}, one[1] = {1};
		size_t nx = (size_t)(2 * C * H * W), nw = (size_t)(M * Cg * 9);
		uint8_t *xq = malloc(nx), *wq = malloc(nw);
		float *xf = malloc(nx * sizeof *xf), *wf = malloc(nw * sizeof *wf), ws[8], b[8];
		int8_t wz[8];
		uint8_t xz = 131;
		float xs = 0.021f;
		uint64_t seed = 5 + gi;
		fill_bytes(xq, nx, &seed, 0);
		fill_bytes(wq, nw, &seed, 0);
		for (int64_t m = 0; m < M; m++) {
			ws[m] = 0.003f * (float)(m + 1);
			wz[m] = (int8_t)(m % 7 - 3);
			b[m] = (float)m * 0.37f - 1.0f;
		}
		for (size_t i = 0; i < nx; i++)
			xf[i] = (float)((int32_t)xq[i] - xz) * xs;
		for (size_t i = 0; i < nw; i++)
			wf[i] = (float)((int32_t)(int8_t)wq[i] - wz[i / (size_t)(Cg * 9)]) * ws[i / (size_t)(Cg * 9)];
		struct kh_harness t; /* holds the 8-bit tensors */
		kh_init(&t, "", "QLinearConv", 10, 6, 1);
		kh_in_raw(&t, 0, WH_DT_UINT8, 4, xd, xq);
		kh_in_raw(&t, 1, WH_DT_FLOAT, 0, one, &xs);
		kh_in_raw(&t, 2, WH_DT_UINT8, 0, one, &xz);
		kh_in_raw(&t, 3, WH_DT_INT8, 4, wd, wq);
		kh_in_raw(&t, 4, WH_DT_FLOAT, 1, md, ws);
		kh_in_raw(&t, 5, WH_DT_INT8, 1, md, wz);
		struct wh_qdq_inputs q = {&t.in[0], &t.in[1], &t.in[2], &t.in[3], &t.in[4], &t.in[5]};
		int64_t strides[2] = {2, 1}, pads[4] = {1, 1, 1, 1};
		float *ref = NULL;
		size_t ny = 0;
		for (int c = 0; c < 3; c++) {
			static const enum wh_isa caps[] = {WH_ISA_SCALAR, WH_ISA_AVX2, WH_ISA_AVX512};
			if (caps[c] > wh_cpu()->detected)
				continue;
			for (int threads = 1; threads <= 2; threads++) {
				struct kh_harness h;
				kh_init(&h, "", "Conv", 11, 3, 1);
				kh_attr_int(&h, "group", G);
				kh_attr_ints(&h, "strides", strides, 2);
				kh_attr_ints(&h, "pads", pads, 4);
				h.cpu = wh_cpu_capped(caps[c]);
				kh_in_raw(&h, 0, WH_DT_FLOAT, 4, xd, xf);
				kh_in_raw(&h, 1, WH_DT_FLOAT, 4, wd, wf);
				kh_in_raw(&h, 2, WH_DT_FLOAT, 1, md, b);
				h.ctx.qdq = &q;
				kh_run_threads(&h, threads);
				ck_assert_int_eq(h.out[0].dtype, WH_DT_FLOAT);
				if (!ref) {
					ny = (size_t)h.out[0].count;
					ref = malloc(ny * sizeof *ref);
					memcpy(ref, h.out[0].data, ny * sizeof *ref);
				} else {
					ck_assert_uint_eq(h.out[0].count, ny);
					CHECK(!memcmp(ref, h.out[0].data, ny * sizeof *ref), "group %lld: cap %d, %d threads differ",
					      (long long)G, c, threads);
				}
				kh_free(&h);
			}
		}
		/* the definition, in double */
		int64_t OH = (H + 2 - 3) / 2 + 1, OW = W, Mg = M / G;
		float big = 0;
		for (int64_t n = 0; n < 2; n++)
			for (int64_t m = 0; m < M; m++)
				for (int64_t oh = 0; oh < OH; oh++)
					for (int64_t ow = 0; ow < OW; ow++) {
						int64_t acc = 0, g = m / Mg;
						for (int64_t ci = 0; ci < Cg; ci++)
							for (int64_t kh = 0; kh < 3; kh++)
								for (int64_t kw = 0; kw < 3; kw++) {
									int64_t ih = oh * 2 - 1 + kh, iw = ow - 1 + kw;
									if (ih < 0 || ih >= H || iw < 0 || iw >= W)
										continue;
									int64_t xv = xq[((n * C + g * Cg + ci) * H + ih) * W + iw] - (int64_t)xz;
									int64_t wv = (int8_t)wq[((m * Cg + ci) * 3 + kh) * 3 + kw] - wz[m];
									acc += xv * wv;
								}
						double mult = (double)(xs * ws[m]), exact = (double)acc * mult + b[m];
						double y = ref[((n * M + m) * OH + oh) * OW + ow];
						double bound = ldexp(fabs((double)acc * mult) + fabs(b[m]), -22);
						CHECK(fabs(y - exact) <= bound, "group %lld: y %g, exact %g", (long long)G, y, exact);
						if (fabsf((float)y) > big)
							big = fabsf((float)y);
					}
		/* the float Conv on the dequantized tensors (the unlinked path) agrees closely */
		struct kh_harness h;
		kh_init(&h, "", "Conv", 11, 3, 1);
		kh_attr_int(&h, "group", G);
		kh_attr_ints(&h, "strides", strides, 2);
		kh_attr_ints(&h, "pads", pads, 4);
		kh_in_raw(&h, 0, WH_DT_FLOAT, 4, xd, xf);
		kh_in_raw(&h, 1, WH_DT_FLOAT, 4, wd, wf);
		kh_in_raw(&h, 2, WH_DT_FLOAT, 1, md, b);
		kh_run_ok(&h);
		const float *yf = h.out[0].data;
		for (size_t i = 0; i < ny; i++)
			CHECK(fabsf(yf[i] - ref[i]) <= 1e-5f * big, "group %lld: float Conv %g, integer %g", (long long)G,
			      (double)yf[i], (double)ref[i]);
		kh_free(&h);
		kh_free(&t);
		free(ref);
		free(xq);
		free(wq);
		free(xf);
		free(wf);
	}
}
END_TEST

/* The depthwise plane kernels (wh_qdw_plane) against the scalar reference, bit for bit:
 * weights within int8 (the VNNI path), within +-255 (AVX2's int16 pairs; VNNI falls back),
 * and beyond (both fall back); 1-25 taps (groups of 4 with missing taps), rows of 1-200
 * with vector tails, 1-3 rows, int8 and uint8 x, zero points at the extremes. */
START_TEST(depthwise_planes_match_scalar)
{
	struct isa_case isa[4];
	int ni = isa_cases(isa);
	uint64_t seed = 11;
	size_t len = 4096 + 1024;
	uint8_t *x = malloc(len);
	fill_bytes(x, len, &seed, 0);
	int32_t *ref = malloc(1024 * sizeof *ref), *got = malloc(1024 * sizeof *got);
	static const size_t tapsv[] = {1, 3, 4, 5, 9, 16, 25};
	static const size_t nv[] = {1, 7, 15, 16, 17, 28, 56, 63, 64, 65, 112, 200};
	static const int32_t wlim[] = {127, 128, 255, 70000};
	for (int i = 1; i < ni; i++)
		for (size_t ti = 0; ti < sizeof tapsv / sizeof *tapsv; ti++)
			for (size_t ni2 = 0; ni2 < sizeof nv / sizeof *nv; ni2++)
				for (size_t wl = 0; wl < 4; wl++)
					for (int xs = 0; xs < 2; xs++) {
						size_t taps = tapsv[ti], n = nv[ni2], rows = 1 + (ti + wl) % 3, rs = 211;
						size_t toff[64];
						int32_t wv[64];
						for (size_t t = 0; t < taps; t++) {
							toff[t] = rng_next(&seed) % 4096;
							uint64_t r = rng_next(&seed);
							int32_t lim = wlim[wl];
							wv[t] = (r & 3) == 0 ? ((r >> 2) & 1 ? lim : -lim - (wl == 0))
									     : (int32_t)((r >> 8) % (uint64_t)(2 * lim + 1)) - lim;
						}
						int32_t zx = xs ? zps_s8[(ti + ni2) % 4] : zps_u8[(ti + ni2) % 4];
						wh_qdw_plane_scalar(x, toff, wv, taps, zx, xs, rows, n, rs, ref);
						memset(got, 0x55, 1024 * sizeof *got);
						wh_qdw_plane(x, toff, wv, taps, zx, xs, rows, n, rs, got, &isa[i].cpu);
						for (size_t k = 0; k < rows * n; k++)
							CHECK(got[k] == ref[k], "%s taps %zu n %zu wlim %d x_s8 %d: [%zu] %d != %d",
							      isa[i].name, taps, n, wlim[wl], xs, k, got[k], ref[k]);
						CHECK(got[rows * n] == 0x55555555, "%s wrote past the plane", isa[i].name);
					}
	free(x);
	free(ref);
	free(got);
}
END_TEST

int main(void)
{
	wh_cpu_init();
	Suite *s = suite_create("quant-kernels");
	TCase *tc = tcase_create("qgemm");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, matmul_matches_definition_on_every_isa_and_thread_count);
	tcase_add_test(tc, matmul_extreme_products_are_exact);
	tcase_add_test(tc, conv_matches_definition_on_every_isa_and_thread_count);
	tcase_add_test(tc, quant_loops_match_scalar);
	tcase_add_test(tc, depthwise_planes_match_scalar);
	tcase_add_test(tc, operators_agree_across_isa_caps);
	tcase_add_test(tc, qdq_conv_matches_definition);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
