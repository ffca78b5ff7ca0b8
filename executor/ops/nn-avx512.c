/* AVX-512 variants of the float32 row primitives in nn-internal.h (the ONNX Runtime
 * orders give the scalar bits exactly). Called only when
 * ctx->cpu->isa == WH_ISA_AVX512. */
#include <immintrin.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "executor/ops/nn-internal.h"

/* Fixed combination order of the lanes, so a result depends only on the data. */
static double hsum8(__m512d v)
{
	double l[8];
	_mm512_storeu_pd(l, v);
	return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

static inline double sum_f32(const float *x, size_t n)
{
	__m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
		a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm512_castps512_ps256(v0)));
		a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v0, 1)));
		a2 = _mm512_add_pd(a2, _mm512_cvtps_pd(_mm512_castps512_ps256(v1)));
		a3 = _mm512_add_pd(a3, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v1, 1)));
	}
	for (; i + 8 <= n; i += 8)
		a0 = _mm512_add_pd(a0, _mm512_cvtps_pd(_mm256_loadu_ps(x + i)));
	if (i < n) {
		__mmask8 k = (__mmask8)((1u << (n - i)) - 1);
		a1 = _mm512_add_pd(a1, _mm512_cvtps_pd(_mm256_maskz_loadu_ps(k, x + i)));
	}
	return hsum8(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

static inline double sqdev_f32(const float *x, size_t n, double mean)
{
	__m512d m = _mm512_set1_pd(mean);
	__m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
		__m512d d0 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v0)), m);
		__m512d d1 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v0, 1)), m);
		__m512d d2 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v1)), m);
		__m512d d3 = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v1, 1)), m);
		a0 = _mm512_add_pd(a0, _mm512_mul_pd(d0, d0));
		a1 = _mm512_add_pd(a1, _mm512_mul_pd(d1, d1));
		a2 = _mm512_add_pd(a2, _mm512_mul_pd(d2, d2));
		a3 = _mm512_add_pd(a3, _mm512_mul_pd(d3, d3));
	}
	for (; i + 8 <= n; i += 8) {
		__m512d d = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), m);
		a0 = _mm512_add_pd(a0, _mm512_mul_pd(d, d));
	}
	if (i < n) {
		/* masked-off lanes hold mean, so their deviation is exactly zero */
		__mmask8 k = (__mmask8)((1u << (n - i)) - 1);
		__m512d v = _mm512_mask_cvtps_pd(m, k, _mm256_maskz_loadu_ps(k, x + i));
		__m512d d = _mm512_sub_pd(v, m);
		a1 = _mm512_add_pd(a1, _mm512_mul_pd(d, d));
	}
	return hsum8(_mm512_add_pd(_mm512_add_pd(a0, a1), _mm512_add_pd(a2, a3)));
}

void wh_nn_affine_f32_avx512(const float *x, float *y, size_t n, float a, float b)
{
	__m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), va), vb));
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m512 v = _mm512_maskz_loadu_ps(k, x + i);
		_mm512_mask_storeu_ps(y + i, k, _mm512_add_ps(_mm512_mul_ps(v, va), vb));
	}
}

/* MLAS's softmax exponential of v = x + negmax (see nn-internal.h). */
static inline __m512 sumexp_exp16(__m512 v)
{
	v = _mm512_max_ps(_mm512_set1_ps(WH_NN_EXP_LO), v);
	__m512 b = _mm512_fmadd_ps(v, _mm512_set1_ps(WH_NN_EXP_LOG2E), _mm512_set1_ps(WH_NN_EXP_BIAS));
	__m512 m = _mm512_sub_ps(b, _mm512_set1_ps(WH_NN_EXP_BIAS));
	v = _mm512_fmadd_ps(m, _mm512_set1_ps(WH_NN_EXP_LN2_HI), v);
	v = _mm512_fmadd_ps(m, _mm512_set1_ps(WH_NN_EXP_LN2_LO), v);
	__m512 p = _mm512_set1_ps(WH_NN_EXP_P0);
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P1));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P2));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P3));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P4));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P56));
	p = _mm512_fmadd_ps(p, v, _mm512_set1_ps(WH_NN_EXP_P56));
	return _mm512_scalef_ps(p, m);
}

float wh_nn_sumexp_f32_avx512(const float *x, float *y, size_t n, float negmax)
{
	__m512 nm = _mm512_set1_ps(negmax), acc = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 e = sumexp_exp16(_mm512_add_ps(nm, _mm512_loadu_ps(x + i)));
		if (y)
			_mm512_storeu_ps(y + i, e);
		acc = _mm512_add_ps(acc, e);
	}
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
		__m512 e = sumexp_exp16(_mm512_add_ps(nm, _mm512_maskz_loadu_ps(k, x + i)));
		if (y)
			_mm512_mask_storeu_ps(y + i, k, e);
		acc = _mm512_mask_add_ps(acc, k, acc, e);
	}
	float v[8];
	_mm256_storeu_ps(v, _mm256_add_ps(_mm512_extractf32x8_ps(acc, 1), _mm512_castps512_ps256(acc)));
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/* L lines of n at x and y (stride n) with their dependent chains (maximum, exponentials, sum,
 * reciprocal, scaling) interleaved: one line alone is bound by their latency. */
static inline __attribute__((always_inline)) void softmax_short_lines(const float *x, float *y, size_t n,
								      const size_t L)
{
	__m512 v[4][4], mx[4], acc[4], sc[4], lo = _mm512_set1_ps(-FLT_MAX);
	size_t nv = (n + 15) / 16;
	__mmask16 tail = (n % 16) ? (__mmask16)((1u << (n % 16)) - 1) : (__mmask16)0xffff;
	/* the maximum from -FLT_MAX, NaN skipped (VMAXPS(v, m) keeps m); its sign at zero does
	 * not change an exponential's input (x + -0 and x + +0 differ only for x = -0, and
	 * exp(-0) = exp(+0)) */
	for (size_t l = 0; l < L; l++)
		mx[l] = lo;
	for (size_t q = 0; q < nv; q++) {
		__mmask16 k = q + 1 < nv ? (__mmask16)0xffff : tail;
		for (size_t l = 0; l < L; l++) {
			v[l][q] = _mm512_mask_loadu_ps(lo, k, x + l * n + 16 * q);
			mx[l] = _mm512_max_ps(v[l][q], mx[l]);
		}
	}
	for (size_t l = 0; l < L; l++) {
		mx[l] = _mm512_set1_ps(-_mm512_reduce_max_ps(mx[l]));
		acc[l] = _mm512_setzero_ps();
	}
	for (size_t q = 0; q < nv; q++)
		for (size_t l = 0; l < L; l++) {
			v[l][q] = sumexp_exp16(_mm512_add_ps(mx[l], v[l][q]));
			if (q + 1 < nv || tail == 0xffff)
				acc[l] = _mm512_add_ps(acc[l], v[l][q]);
			else
				acc[l] = _mm512_mask_add_ps(acc[l], tail, acc[l], v[l][q]);
		}
	for (size_t l = 0; l < L; l++) {
		float h[8];
		_mm256_storeu_ps(h, _mm256_add_ps(_mm512_extractf32x8_ps(acc[l], 1), _mm512_castps512_ps256(acc[l])));
		float sum = ((h[0] + h[1]) + (h[2] + h[3])) + ((h[4] + h[5]) + (h[6] + h[7]));
		sc[l] = _mm512_set1_ps(1.0f / sum);
	}
	for (size_t q = 0; q < nv; q++) {
		__mmask16 k = q + 1 < nv ? (__mmask16)0xffff : tail;
		for (size_t l = 0; l < L; l++)
			_mm512_mask_storeu_ps(y + l * n + 16 * q, k, _mm512_mul_ps(v[l][q], sc[l]));
	}
}

void wh_nn_softmax_short_f32_avx512(const float *x, float *y, size_t n, size_t lines)
{
	size_t l = 0;
	for (; l + 4 <= lines; l += 4)
		softmax_short_lines(x + l * n, y + l * n, n, 4);
	for (; l < lines; l++)
		softmax_short_lines(x + l * n, y + l * n, n, 1);
}

void wh_nn_maxpool_row_f32_avx512(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				  size_t d)
{
	size_t q = 0;
	if (s == 1) {
		/* four vectors of outputs at once: four independent chains of maxima (one chain
		 * waits for each max's latency), each output's steps in the same order */
		for (; q + 64 <= n; q += 64) {
			__m512 b0 = _mm512_set1_ps(-INFINITY), b1 = b0, b2 = b0, b3 = b0;
			for (size_t r = 0; r < nrows; r++)
				for (size_t b = 0; b < k; b++) {
					const float *p = rows[r] + q + b * d;
					b0 = _mm512_max_ps(_mm512_loadu_ps(p), b0);
					b1 = _mm512_max_ps(_mm512_loadu_ps(p + 16), b1);
					b2 = _mm512_max_ps(_mm512_loadu_ps(p + 32), b2);
					b3 = _mm512_max_ps(_mm512_loadu_ps(p + 48), b3);
				}
			_mm512_storeu_ps(y + q, b0);
			_mm512_storeu_ps(y + q + 16, b1);
			_mm512_storeu_ps(y + q + 32, b2);
			_mm512_storeu_ps(y + q + 48, b3);
		}
		for (; q + 32 <= n; q += 32) {
			__m512 b0 = _mm512_set1_ps(-INFINITY), b1 = b0;
			for (size_t r = 0; r < nrows; r++)
				for (size_t b = 0; b < k; b++) {
					const float *p = rows[r] + q + b * d;
					b0 = _mm512_max_ps(_mm512_loadu_ps(p), b0);
					b1 = _mm512_max_ps(_mm512_loadu_ps(p + 16), b1);
				}
			_mm512_storeu_ps(y + q, b0);
			_mm512_storeu_ps(y + q + 16, b1);
		}
	}
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
	if (s == 2) {
		/* two vectors of outputs at once (independent chains), the even elements of two
		 * 16-float loads each: reads p[63], one past the last tap, so the loop stops one
		 * output early */
		for (; q + 33 <= n; q += 32) {
			__m512 b0 = _mm512_set1_ps(-INFINITY), b1 = b0;
			for (size_t r = 0; r < nrows; r++)
				for (size_t b = 0; b < k; b++) {
					const float *p = rows[r] + 2 * q + b * d;
					b0 = _mm512_max_ps(
						_mm512_permutex2var_ps(_mm512_loadu_ps(p), even, _mm512_loadu_ps(p + 16)),
						b0);
					b1 = _mm512_max_ps(_mm512_permutex2var_ps(_mm512_loadu_ps(p + 32), even,
										  _mm512_loadu_ps(p + 48)),
							   b1);
				}
			_mm512_storeu_ps(y + q, b0);
			_mm512_storeu_ps(y + q + 16, b1);
		}
	}
	if (s <= 2) {
		/* even elements of two 16-float loads: reads p[31], one past the last tap, so the
		 * loop stops one output early */
		for (; q + 16 + (s == 2) <= n; q += 16) {
			__m512 best = _mm512_set1_ps(-INFINITY);
			for (size_t r = 0; r < nrows; r++) {
				const float *row = rows[r] + q * s;
				for (size_t b = 0; b < k; b++) {
					const float *p = row + b * d;
					__m512 v = s == 1 ? _mm512_loadu_ps(p)
							  : _mm512_permutex2var_ps(_mm512_loadu_ps(p), even,
										   _mm512_loadu_ps(p + 16));
					/* VMAXPS(v, best) is v > best ? v : best, the scalar step */
					best = _mm512_max_ps(v, best);
				}
			}
			_mm512_storeu_ps(y + q, best);
		}
	}
	if (s == 1 && q < n) {
		/* the last 1..15 outputs: masked loads (lanes past n read nothing) and store */
		__mmask16 m = (__mmask16)((1u << (n - q)) - 1);
		__m512 best = _mm512_set1_ps(-INFINITY);
		for (size_t r = 0; r < nrows; r++)
			for (size_t b = 0; b < k; b++)
				best = _mm512_max_ps(_mm512_maskz_loadu_ps(m, rows[r] + q + b * d), best);
		_mm512_mask_storeu_ps(y + q, m, best);
		q = n;
	}
	if (s == 2 && q < n) {
		/* the last 1..16 outputs: each tap reads 2m - 1 floats, masked (nothing past them) */
		size_t m = n - q, c = 2 * m - 1;
		__mmask16 ml = (__mmask16)(c >= 16 ? 0xffffu : (1u << c) - 1);
		__mmask16 mh = (__mmask16)(c > 16 ? (1u << (c - 16)) - 1 : 0);
		__m512 best = _mm512_set1_ps(-INFINITY);
		for (size_t r = 0; r < nrows; r++)
			for (size_t b = 0; b < k; b++) {
				const float *p = rows[r] + 2 * q + b * d;
				__m512 v = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(ml, p), even,
								  _mm512_maskz_loadu_ps(mh, p + 16));
				best = _mm512_max_ps(v, best);
			}
		_mm512_mask_storeu_ps(y + q, (__mmask16)((1u << m) - 1), best);
		q = n;
	}
	if (q < n) {
		const float *rest[64];
		for (size_t r = 0; r < nrows; r++)
			rest[r] = rows[r] + q * s;
		wh_nn_maxpool_row_f32_avx2(rest, nrows, y + q, n - q, k, s, d);
	}
}

static inline void ln_apply_f32(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
				const double *bias)
{
	__m512d m = _mm512_set1_pd(mean), iv = _mm512_set1_pd(inv);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m512d v = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + i)), m);
		v = _mm512_mul_pd(_mm512_mul_pd(v, iv), _mm512_loadu_pd(scale + i));
		if (bias)
			v = _mm512_add_pd(v, _mm512_loadu_pd(bias + i));
		_mm256_storeu_ps(y + i, _mm512_cvtpd_ps(v));
	}
	if (i < n)
		wh_nn_ln_apply_f32_avx2(x + i, y + i, n - i, mean, inv, scale + i, bias ? bias + i : NULL);
}

void wh_nn_ln_apply_f32_avx512(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			       const double *bias)
{
	ln_apply_f32(x, y, n, mean, inv, scale, bias);
}

double wh_nn_sum_f32_avx512(const float *x, size_t n)
{
	return sum_f32(x, n);
}

double wh_nn_sqdev_f32_avx512(const float *x, size_t n, double mean)
{
	return sqdev_f32(x, n, mean);
}

void wh_nn_ln_rows_f32_avx512(const float *x, float *y, size_t m, size_t rows, double eps, bool rms,
			      const double *scale, const double *bias, double *mean_out, double *inv_out)
{
	enum { B = 32 };
	double mean[B], inv[B];
	for (size_t r0 = 0; r0 < rows; r0 += B) {
		size_t nb = rows - r0 < B ? rows - r0 : B;
		for (size_t b = 0; b < nb; b++)
			mean[b] = rms ? 0 : sum_f32(x + (r0 + b) * m, m) / (double)m;
		for (size_t b = 0; b < nb; b++)
			inv[b] = sqdev_f32(x + (r0 + b) * m, m, mean[b]) / (double)m;
		for (size_t b = 0; b < nb; b++)
			inv[b] = 1.0 / sqrt(inv[b] + eps);
		for (size_t b = 0; b < nb; b++) {
			size_t r = r0 + b;
			if (mean_out)
				mean_out[r] = mean[b];
			if (inv_out)
				inv_out[r] = inv[b];
			ln_apply_f32(x + r * m, y + r * m, m, mean[b], inv[b], scale, bias);
		}
	}
}

float wh_nn_max_f32_avx512(const float *x, size_t n)
{
	if (n < 64)
		return wh_nn_max_f32_avx2(x, n);
	/* VMAXPS(v, m) is v > m ? v : m, the scalar step (NaN skipped) */
	__m512 m0 = _mm512_set1_ps(-FLT_MAX), m1 = m0, m2 = m0, m3 = m0;
	size_t i = 0;
	for (; i + 64 <= n; i += 64) {
		m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
		m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
		m2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), m2);
		m3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), m3);
	}
	float l[16];
	_mm512_storeu_ps(l, _mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
	float m = wh_nn_max_f32_avx2(x + i, n - i);
	for (size_t k = 0; k < 16; k++)
		m = l[k] > m ? l[k] : m;
	if (m != 0.0f)
		return m;
	/* a zero maximum takes the sign of the first zero, as the scalar fold does */
	i = 0;
	while (x[i] != 0.0f)
		i++;
	return x[i];
}

void wh_nn_scale_f32_avx512(const float *x, float *y, size_t n, float a)
{
	__m512 va = _mm512_set1_ps(a);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), va));
	if (i < n)
		wh_nn_scale_f32_avx2(x + i, y + i, n - i, a);
}

bool wh_nn_minmax_f32_avx512(const float *x, size_t n, bool is_min, float *out)
{
	/* four independent chains; each lane's order does not matter, see the header */
	__m512 a0 = _mm512_set1_ps(is_min ? INFINITY : -INFINITY), a1 = a0, a2 = a0, a3 = a0;
	__mmask16 nan = 0;
	size_t i = 0;
	for (; i + 64 <= n; i += 64) {
		__m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
		__m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
		nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(v2, v3, _CMP_UNORD_Q);
		if (is_min) {
			a0 = _mm512_min_ps(v0, a0);
			a1 = _mm512_min_ps(v1, a1);
			a2 = _mm512_min_ps(v2, a2);
			a3 = _mm512_min_ps(v3, a3);
		} else {
			a0 = _mm512_max_ps(v0, a0);
			a1 = _mm512_max_ps(v1, a1);
			a2 = _mm512_max_ps(v2, a2);
			a3 = _mm512_max_ps(v3, a3);
		}
	}
	for (; i < n; i += 16) {
		__mmask16 m = (__mmask16)(n - i >= 16 ? 0xffffu : (1u << (n - i)) - 1);
		/* lanes past n load the running value's start, which changes nothing */
		__m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(is_min ? INFINITY : -INFINITY), m, x + i);
		nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
		a0 = is_min ? _mm512_min_ps(v, a0) : _mm512_max_ps(v, a0);
	}
	if (nan)
		return false;
	if (is_min) {
		a0 = _mm512_min_ps(_mm512_min_ps(a0, a1), _mm512_min_ps(a2, a3));
		*out = _mm512_reduce_min_ps(a0);
	} else {
		a0 = _mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3));
		*out = _mm512_reduce_max_ps(a0);
	}
	return *out != 0;
}

/* One 2-D MaxPool plane (nn-internal.h), a call a plane: per output row, the vertical
 * maxima over its valid input rows (whole vectors, no permutes), stored -inf-padded, for
 * a column stride of 2 split into even and odd columns; then the horizontal maxima over
 * the taps, each a plain load from those rows. Taps outside the plane read -inf (or are
 * not read), which never replaces the running value: each output takes the steps of the
 * scalar reference (taps in the order (b, a)) less no-ops, so the bits are the same. */
void wh_nn_maxpool_plane_f32_avx512(const struct wh_nn_pool2d *g, const float *x, float *y, float *scratch)
{
	const int64_t W = g->W, OW = g->OW, sw = g->sw;
	const size_t nvec = (size_t)(OW + 15) / 16;
	const size_t PL = wh_nn_maxpool_plane_pl(g), len = wh_nn_maxpool_plane_len(g);
	const __m512 ninf = _mm512_set1_ps(-INFINITY);
	for (size_t i = 0; i < (size_t)sw * len; i++)
		scratch[i] = -INFINITY;
	float *ev = scratch + PL, *od = scratch + len + PL;
	/* tap b reads column 2 ow + t (t = b dw - pw): ev or od at ow + floor(t / sw) */
	const float *src[WH_NN_POOL2D_MAXK];
	for (int64_t b = 0; b < g->kw; b++) {
		int64_t phase, q = wh_nn_pool2d_tap(g, b, &phase);
		src[b] = (phase ? od : ev) + q;
	}
	const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
	const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
	const int64_t chunk = 16 * sw, nch = (W + chunk - 1) / chunk;
	const __mmask16 last = (__mmask16)(OW % 16 ? (1u << (OW % 16)) - 1u : 0xffffu);
	for (int64_t oh = 0; oh < g->OH; oh++) {
		const float *rows[WH_NN_POOL2D_MAXK];
		int64_t hs[WH_NN_POOL2D_MAXK];
		size_t nr = wh_nn_pool2d_rows(g, oh, hs);
		for (size_t r = 0; r < nr; r++)
			rows[r] = x + hs[r] * W;
		for (int64_t c = 0; c < nch; c++) {
			int64_t c0 = c * chunk;
			__m512 lo = ninf, hi = ninf;
			if (c0 + chunk <= W) {
				for (size_t r = 0; r < nr; r++) {
					lo = _mm512_max_ps(_mm512_loadu_ps(rows[r] + c0), lo);
					if (sw == 2)
						hi = _mm512_max_ps(_mm512_loadu_ps(rows[r] + c0 + 16), hi);
				}
			} else {
				int64_t n = W - c0;
				__mmask16 ml = (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1u);
				__mmask16 mh = (__mmask16)(n > 16 ? (1u << (n - 16)) - 1u : 0);
				for (size_t r = 0; r < nr; r++) {
					lo = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, ml, rows[r] + c0), lo);
					if (sw == 2)
						hi = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, mh, rows[r] + c0 + 16), hi);
				}
			}
			if (sw == 1) {
				_mm512_storeu_ps(ev + c0, lo);
			} else {
				_mm512_storeu_ps(ev + 16 * c, _mm512_permutex2var_ps(lo, even, hi));
				_mm512_storeu_ps(od + 16 * c, _mm512_permutex2var_ps(lo, odd, hi));
			}
		}
		float *yr = y + oh * OW;
		for (size_t v = 0; v < nvec; v++) {
			/* VMAXPS(v, best) is v > best ? v : best, the scalar step */
			__m512 best = ninf;
			for (int64_t b = 0; b < g->kw; b++)
				best = _mm512_max_ps(_mm512_loadu_ps(src[b] + 16 * v), best);
			if (v + 1 < nvec)
				_mm512_storeu_ps(yr + 16 * v, best);
			else
				_mm512_mask_storeu_ps(yr + 16 * v, last, best);
		}
	}
}

/* 8-bit MaxPool plane (nn-internal.h): the float32 kernel's two passes on bytes, 64 a
 * vector; a column stride of 2 splits each row of vertical maxima into even and odd bytes
 * (the low and high bytes of the 16-bit lanes, packed and put back in order). Maxima are
 * exact, so the bytes are the scalar reference's. */
static inline __attribute__((always_inline)) __m512i q8_max512(__m512i a, __m512i b, bool s8)
{
	return s8 ? _mm512_max_epi8(a, b) : _mm512_max_epu8(a, b);
}

static inline __attribute__((always_inline)) void maxpool_plane_q8_512(const struct wh_nn_pool2d *g,
									 const uint8_t *x, uint8_t *y, bool s8,
									 uint8_t *scratch)
{
	const int64_t W = g->W, OW = g->OW, sw = g->sw;
	const size_t nvec = (size_t)(OW + 63) / 64;
	const size_t PL = wh_nn_maxpool_plane_q8_pl(g), len = wh_nn_maxpool_plane_q8_len(g);
	const uint8_t lowest = s8 ? 0x80 : 0;
	const __m512i pad = _mm512_set1_epi8((char)lowest);
	memset(scratch, lowest, (size_t)sw * len);
	uint8_t *ev = scratch + PL, *od = scratch + len + PL;
	const uint8_t *src[WH_NN_POOL2D_MAXK];
	for (int64_t b = 0; b < g->kw; b++) {
		int64_t phase, q = wh_nn_pool2d_tap(g, b, &phase);
		src[b] = (phase ? od : ev) + q;
	}
	const __m512i low = _mm512_set1_epi16(0x00ff);
	const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
	const int64_t chunk = 64 * sw, nch = (W + chunk - 1) / chunk;
	const __mmask64 last = OW % 64 ? ((__mmask64)1 << (OW % 64)) - 1 : ~(__mmask64)0;
	for (int64_t oh = 0; oh < g->OH; oh++) {
		const uint8_t *rows[WH_NN_POOL2D_MAXK];
		int64_t hs[WH_NN_POOL2D_MAXK];
		size_t nr = wh_nn_pool2d_rows(g, oh, hs);
		for (size_t r = 0; r < nr; r++)
			rows[r] = x + hs[r] * W;
		for (int64_t c = 0; c < nch; c++) {
			int64_t c0 = c * chunk;
			__m512i lo = pad, hi = pad;
			if (c0 + chunk <= W) {
				for (size_t r = 0; r < nr; r++) {
					lo = q8_max512(_mm512_loadu_si512(rows[r] + c0), lo, s8);
					if (sw == 2)
						hi = q8_max512(_mm512_loadu_si512(rows[r] + c0 + 64), hi, s8);
				}
			} else {
				int64_t n = W - c0;
				__mmask64 ml = n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1;
				__mmask64 mh = n > 64 ? ((__mmask64)1 << (n - 64)) - 1 : 0;
				for (size_t r = 0; r < nr; r++) {
					lo = q8_max512(_mm512_mask_loadu_epi8(pad, ml, rows[r] + c0), lo, s8);
					if (sw == 2)
						hi = q8_max512(_mm512_mask_loadu_epi8(pad, mh, rows[r] + c0 + 64), hi, s8);
				}
			}
			if (sw == 1) {
				_mm512_storeu_si512(ev + c0, lo);
			} else {
				__m512i e = _mm512_packus_epi16(_mm512_and_si512(lo, low), _mm512_and_si512(hi, low));
				__m512i o = _mm512_packus_epi16(_mm512_srli_epi16(lo, 8), _mm512_srli_epi16(hi, 8));
				_mm512_storeu_si512(ev + 64 * c, _mm512_permutexvar_epi64(order, e));
				_mm512_storeu_si512(od + 64 * c, _mm512_permutexvar_epi64(order, o));
			}
		}
		uint8_t *yr = y + oh * OW;
		for (size_t v = 0; v < nvec; v++) {
			__m512i best = pad;
			for (int64_t b = 0; b < g->kw; b++)
				best = q8_max512(_mm512_loadu_si512(src[b] + 64 * v), best, s8);
			if (v + 1 < nvec)
				_mm512_storeu_si512(yr + 64 * v, best);
			else
				_mm512_mask_storeu_epi8(yr + 64 * v, last, best);
		}
	}
}

void wh_nn_maxpool_plane_q8_avx512(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8,
				   uint8_t *scratch)
{
	if (s8)
		maxpool_plane_q8_512(g, x, y, true, scratch);
	else
		maxpool_plane_q8_512(g, x, y, false, scratch);
}
