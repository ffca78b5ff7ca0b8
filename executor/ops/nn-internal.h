/* Private to executor/ops/{nn,reduce,misc}.c, their SIMD variants (nn-avx2.c, nn-avx512.c)
 * and tests/check-nn.c: float32 row primitives shared by the normalization, pooling and
 * reduction kernels, with a scalar reference and ISA variants chosen by the caller.
 *
 * Numerics: sums of float32 data are accumulated in double and rounded once by the caller
 * (except the ONNX Runtime orders at the end, used where ORT sums in float32),
 * so the result is within one float rounding of the exact value whatever the summation
 * order; the scalar and SIMD variants differ only in the order of the double additions
 * (fixed per ISA, never per thread count). The affine map is a multiply then an add, never
 * a fused multiply-add, so it is bit-identical on every ISA. */
#ifndef WH_NN_INTERNAL_H
#define WH_NN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"

/* Sum of x[0..n) in double. */
double wh_nn_sum_f32(enum wh_isa isa, const float *x, size_t n);
double wh_nn_sum_f32_scalar(const float *x, size_t n);
double wh_nn_sum_f32_avx2(const float *x, size_t n);
double wh_nn_sum_f32_avx512(const float *x, size_t n);

/* Sum of (x[i] - mean)^2 in double. */
double wh_nn_sqdev_f32(enum wh_isa isa, const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_scalar(const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_avx2(const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_avx512(const float *x, size_t n, double mean);

/* y[i] = x[i] * a + b, in float32 (x and y may alias). */
void wh_nn_affine_f32(enum wh_isa isa, const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_scalar(const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_avx2(const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_avx512(const float *x, float *y, size_t n, float a, float b);

/* ONNX Runtime's order for its float32 sums (so that whittle agrees with ORT on CPU):
 *
 * wh_nn_sum4_f32: MLAS's global pooling: 4 lanes, lane l adding x[l], x[l + 4], ... in
 * order from zero, then (l0 + l2) + (l1 + l3), then the n % 4 last elements one by one.
 *
 * wh_nn_sumexp_f32: MLAS's softmax exponentials (its AVX-512 kernel): y[i] = exp(x[i] +
 * negmax) by MLAS's polynomial (WH_NN_EXP_*: Cody-Waite reduction and a degree-6
 * polynomial evaluated with fused multiply-adds, then an exact scaling by 2^m), and their
 * sum: 16 lanes, lane l adding y[l], y[l + 16], ... in order from zero, then
 * v[i] = lane[i + 8] + lane[i] and ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)).
 * y may be NULL. Every variant gives identical bits (the scalar one calls fmaf). */
float wh_nn_sum4_f32(const float *x, size_t n);
float wh_nn_sumexp_f32(enum wh_isa isa, const float *x, float *y, size_t n, float negmax);
float wh_nn_sumexp_f32_scalar(const float *x, float *y, size_t n, float negmax);
float wh_nn_sumexp_f32_avx2(const float *x, float *y, size_t n, float negmax);
float wh_nn_sumexp_f32_avx512(const float *x, float *y, size_t n, float negmax);
/* Whole softmax lines of 1 <= n <= WH_NN_SOFTMAX_SHORT elements held in registers (window
 * attention's 49), `lines` of them at x and y (stride n), four at a time: each
 * y = e * (1 / sum) with the maximum, exponentials, sum and scaling of wh_nn_max_f32,
 * wh_nn_sumexp_f32 and wh_nn_scale_f32 run one after another, the same bits. */
#define WH_NN_SOFTMAX_SHORT 64
void wh_nn_softmax_short_f32_avx512(const float *x, float *y, size_t n, size_t lines);

/* MaxPool over one row of outputs: y[q] = the maximum of rows[r][q * s + b * d] for every
 * row r < nrows (in order) and tap b < k (in order), from -inf, each step keeping the
 * running value unless the new one is greater (so NaN is skipped and the first of equal
 * values wins, +0 or -0). Every variant does the same steps per output, so the bits are
 * identical; rows[r] must be readable up to index (n - 1) * s + (k - 1) * d. */
void wh_nn_maxpool_row_f32(enum wh_isa isa, const float *const *rows, size_t nrows, float *y, size_t n,
			   size_t k, size_t s, size_t d);
void wh_nn_maxpool_row_f32_scalar(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				  size_t d);
void wh_nn_maxpool_row_f32_avx2(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				size_t d);
void wh_nn_maxpool_row_f32_avx512(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				  size_t d);

/* One 2-D MaxPool plane (x: H x W, y: OH x OW; pads ph, pw before; any pads after and
 * ceil mode are in OH, OW): y[oh][ow] = the maximum over the taps inside the plane of
 * x[oh sh - ph + a dh][ow sw - pw + b dw], taken column-major over the window (b outer, a
 * inner) with wh_nn_maxpool_row_f32's step (NaN skipped, the first of equal values wins,
 * -inf where no tap is inside). The order differs from the row-major one of the other
 * MaxPool paths only in the sign of a zero maximum whose window holds both zeros. The
 * AVX-512 variant (column stride 1 or 2, kh and kw at most WH_NN_POOL2D_MAXK) takes the
 * plane in one call: vertical maxima first (plain loads), then the taps; it needs
 * wh_nn_maxpool_plane_scratch(g) floats of scratch. The scalar one is its reference: the
 * same bits. */
#define WH_NN_POOL2D_MAXK 16
struct wh_nn_pool2d {
	int64_t H, W, OH, OW, kh, kw, sh, sw, dh, dw, ph, pw;
};
/* The plane kernels' geometry, shared by their ISA variants. Column tap b reads the
 * column-split row (stride sw: sw phases) at element q of phase *phase. */
static inline int64_t wh_nn_pool2d_tap(const struct wh_nn_pool2d *g, int64_t b, int64_t *phase)
{
	int64_t t = b * g->dw - g->pw, q = t >= 0 ? t / g->sw : -((-t + g->sw - 1) / g->sw);
	*phase = t - q * g->sw;
	return q;
}
/* The input rows output row oh reads inside the plane: their indices in hs, their count. */
static inline size_t wh_nn_pool2d_rows(const struct wh_nn_pool2d *g, int64_t oh, int64_t *hs)
{
	size_t n = 0;
	for (int64_t a = 0; a < g->kh; a++) {
		int64_t h = oh * g->sh - g->ph + a * g->dh;
		if (h >= 0 && h < g->H)
			hs[n++] = h;
	}
	return n;
}
bool wh_nn_maxpool_plane_avx512_fits(const struct wh_nn_pool2d *g);
/* the AVX-512 variant's -inf-padded rows: PL floats before, len in all (each of sw) */
size_t wh_nn_maxpool_plane_pl(const struct wh_nn_pool2d *g);
size_t wh_nn_maxpool_plane_len(const struct wh_nn_pool2d *g);
size_t wh_nn_maxpool_plane_scratch(const struct wh_nn_pool2d *g);
void wh_nn_maxpool_plane_f32_scalar(const struct wh_nn_pool2d *g, const float *x, float *y);
void wh_nn_maxpool_plane_f32_avx512(const struct wh_nn_pool2d *g, const float *x, float *y, float *scratch);

/* 8-bit MaxPool planes (uint8, or int8 where s8): the same geometry, y = the maximum over
 * the taps inside the plane, the type's lowest value (0, -128) where no tap is inside, as
 * ONNX Runtime starts from. Integer maxima are exact and order-free, so every variant gives
 * the scalar reference's bytes. The AVX-512 and AVX2 variants (where
 * wh_nn_maxpool_plane_q8_fits: column stride 1 or 2, kh and kw at most
 * WH_NN_POOL2D_MAXK) take a plane in one call as the float32 AVX-512 one does: per output
 * row the vertical maxima over its input rows (whole vectors of 64 or 32 bytes; for a
 * column stride of 2 split into even and odd columns), padded with the lowest value, then
 * the taps as plain loads from them; they need wh_nn_maxpool_plane_q8_scratch(g) bytes. */
bool wh_nn_maxpool_plane_q8_fits(const struct wh_nn_pool2d *g);
size_t wh_nn_maxpool_plane_q8_pl(const struct wh_nn_pool2d *g);
size_t wh_nn_maxpool_plane_q8_len(const struct wh_nn_pool2d *g);
size_t wh_nn_maxpool_plane_q8_scratch(const struct wh_nn_pool2d *g);
void wh_nn_maxpool_plane_q8_scalar(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8);
void wh_nn_maxpool_plane_q8_avx2(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8,
				 uint8_t *scratch);
void wh_nn_maxpool_plane_q8_avx512(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8,
				   uint8_t *scratch);

/* ReduceMax (is_min false) or ReduceMin of x[0..n) in any order of the elements: *out is the
 * maximum (minimum) and the answer is true, unless x holds NaN or the result is a zero,
 * where the answer is false and *out is unset. Those are the only cases where the order
 * matters (the first NaN, or the first zero of either sign, wins in reduce.c's scan), so
 * the caller scans in order then; otherwise every variant gives the same bits. n == 0
 * gives -inf (+inf for the minimum). */
bool wh_nn_minmax_f32(enum wh_isa isa, const float *x, size_t n, bool is_min, float *out);
bool wh_nn_minmax_f32_avx2(const float *x, size_t n, bool is_min, float *out);
bool wh_nn_minmax_f32_avx512(const float *x, size_t n, bool is_min, float *out);

/* LayerNormalization's normalize pass: y[i] = (float)(((x[i] - mean) * inv) * scale[i]
 * (+ bias[i] where bias is not NULL)), each step in double, no fused multiply-add, so
 * every variant gives the scalar bits (x and y may alias). */
void wh_nn_ln_apply_f32(enum wh_isa isa, const float *x, float *y, size_t n, double mean, double inv,
			const double *scale, const double *bias);
void wh_nn_ln_apply_f32_scalar(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			       const double *bias);
void wh_nn_ln_apply_f32_avx2(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			     const double *bias);
/* LayerNormalization (rms: RMSNormalization) of `rows` rows of m at x into y, the primitives
 * above inlined: each row's mean (wh_nn_sum_f32 / m, 0 for rms), variance (wh_nn_sqdev_f32
 * / m), 1 / sqrt(variance + eps) and normalize pass (wh_nn_ln_apply_f32), the same bits as
 * calling them with WH_ISA_AVX512; the rows' statistics 32 at a time, so their chains
 * overlap. mean_out and inv_out (per row, may be NULL) receive the statistics. */
void wh_nn_ln_rows_f32_avx512(const float *x, float *y, size_t m, size_t rows, double eps, bool rms,
			      const double *scale, const double *bias, double *mean_out, double *inv_out);
void wh_nn_ln_apply_f32_avx512(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			       const double *bias);

/* The maximum of x[0..n) as the scalar fold from -FLT_MAX gives it (a step keeps the
 * running value unless the new one is greater): NaN is skipped, and a zero maximum has
 * the sign of the first zero. Identical bits on every ISA. */
float wh_nn_max_f32(enum wh_isa isa, const float *x, size_t n);
float wh_nn_max_f32_scalar(const float *x, size_t n);
float wh_nn_max_f32_avx2(const float *x, size_t n);
float wh_nn_max_f32_avx512(const float *x, size_t n);

/* y[i] = x[i] * a in float32 (x and y may alias). */
void wh_nn_scale_f32(enum wh_isa isa, const float *x, float *y, size_t n, float a);
void wh_nn_scale_f32_scalar(const float *x, float *y, size_t n, float a);
void wh_nn_scale_f32_avx2(const float *x, float *y, size_t n, float a);
void wh_nn_scale_f32_avx512(const float *x, float *y, size_t n, float a);

#define WH_NN_EXP_LO (-103.9720840454f)
#define WH_NN_EXP_BIAS 12582912.0f
#define WH_NN_EXP_LOG2E 1.44269504088896341f
#define WH_NN_EXP_LN2_HI (-6.93145752e-1f)
#define WH_NN_EXP_LN2_LO (-1.42860677e-6f)
#define WH_NN_EXP_P0 0x1.694000p-10f
#define WH_NN_EXP_P1 0x1.125edcp-7f
#define WH_NN_EXP_P2 0x1.555b5ap-5f
#define WH_NN_EXP_P3 0x1.555450p-3f
#define WH_NN_EXP_P4 0x1.fffff6p-2f
#define WH_NN_EXP_P56 1.0f

#endif
