/* AVX2 variants of the float32 row primitives in nn-internal.h (the ONNX Runtime orders
 * give the scalar bits exactly). Called only when
 * ctx->cpu->isa >= WH_ISA_AVX2. */
#include <immintrin.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "executor/ops/nn-internal.h"

/* Fixed combination order of the lanes, so a result depends only on the data. */
static double hsum4(__m256d v)
{
	double l[4];
	_mm256_storeu_pd(l, v);
	return (l[0] + l[1]) + (l[2] + l[3]);
}

double wh_nn_sum_f32_avx2(const float *x, size_t n)
{
	__m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm256_castps256_ps128(v0)));
		a1 = _mm256_add_pd(a1, _mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)));
		a2 = _mm256_add_pd(a2, _mm256_cvtps_pd(_mm256_castps256_ps128(v1)));
		a3 = _mm256_add_pd(a3, _mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)));
	}
	for (; i + 4 <= n; i += 4)
		a0 = _mm256_add_pd(a0, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
	double s = hsum4(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
	for (; i < n; i++)
		s += x[i];
	return s;
}

double wh_nn_sqdev_f32_avx2(const float *x, size_t n, double mean)
{
	__m256d m = _mm256_set1_pd(mean);
	__m256d a0 = _mm256_setzero_pd(), a1 = a0, a2 = a0, a3 = a0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		__m256d d0 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v0)), m);
		__m256d d1 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v0, 1)), m);
		__m256d d2 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v1)), m);
		__m256d d3 = _mm256_sub_pd(_mm256_cvtps_pd(_mm256_extractf128_ps(v1, 1)), m);
		a0 = _mm256_add_pd(a0, _mm256_mul_pd(d0, d0));
		a1 = _mm256_add_pd(a1, _mm256_mul_pd(d1, d1));
		a2 = _mm256_add_pd(a2, _mm256_mul_pd(d2, d2));
		a3 = _mm256_add_pd(a3, _mm256_mul_pd(d3, d3));
	}
	for (; i + 4 <= n; i += 4) {
		__m256d d = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), m);
		a0 = _mm256_add_pd(a0, _mm256_mul_pd(d, d));
	}
	double s = hsum4(_mm256_add_pd(_mm256_add_pd(a0, a1), _mm256_add_pd(a2, a3)));
	for (; i < n; i++) {
		double d = (double)x[i] - mean;
		s += d * d;
	}
	return s;
}

void wh_nn_affine_f32_avx2(const float *x, float *y, size_t n, float a, float b)
{
	__m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), va), vb));
	for (; i < n; i++) {
		float t = x[i] * a;
		y[i] = t + b;
	}
}

/* MLAS's softmax exponential of v = x + negmax (see nn-internal.h); the scaling by 2^m
 * goes through an exact product with 2^(m + 64), then one rounding by 2^-64, which gives
 * VSCALEFPS's result. */
static inline __m256 sumexp_exp8(__m256 v)
{
	v = _mm256_max_ps(_mm256_set1_ps(WH_NN_EXP_LO), v);
	__m256 b = _mm256_fmadd_ps(v, _mm256_set1_ps(WH_NN_EXP_LOG2E), _mm256_set1_ps(WH_NN_EXP_BIAS));
	__m256 m = _mm256_sub_ps(b, _mm256_set1_ps(WH_NN_EXP_BIAS));
	v = _mm256_fmadd_ps(m, _mm256_set1_ps(WH_NN_EXP_LN2_HI), v);
	v = _mm256_fmadd_ps(m, _mm256_set1_ps(WH_NN_EXP_LN2_LO), v);
	__m256 p = _mm256_set1_ps(WH_NN_EXP_P0);
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P1));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P2));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P3));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P4));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P56));
	p = _mm256_fmadd_ps(p, v, _mm256_set1_ps(WH_NN_EXP_P56));
	__m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(m), _mm256_set1_epi32(64 + 127));
	e = _mm256_min_epi32(_mm256_max_epi32(e, _mm256_set1_epi32(1)), _mm256_set1_epi32(254));
	__m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(e, 23));
	return _mm256_mul_ps(_mm256_mul_ps(p, s), _mm256_set1_ps(0x1p-64f));
}

/* Lanes 0..7 (acc0) and 8..15 (acc1) of MLAS's 16; r < 8 elements go through the mask. */
static inline __m256 sumexp_part(const float *x, float *y, size_t r, __m256 nm, __m256 acc)
{
	if (r >= 8) {
		__m256 e = sumexp_exp8(_mm256_add_ps(nm, _mm256_loadu_ps(x)));
		if (y)
			_mm256_storeu_ps(y, e);
		return _mm256_add_ps(acc, e);
	}
	int32_t lanes[8];
	for (size_t i = 0; i < 8; i++)
		lanes[i] = i < r ? -1 : 0;
	__m256i k = _mm256_loadu_si256((const __m256i *)lanes);
	__m256 e = sumexp_exp8(_mm256_add_ps(nm, _mm256_maskload_ps(x, k)));
	if (y)
		_mm256_maskstore_ps(y, k, e);
	return _mm256_blendv_ps(acc, _mm256_add_ps(acc, e), _mm256_castsi256_ps(k));
}

float wh_nn_sumexp_f32_avx2(const float *x, float *y, size_t n, float negmax)
{
	__m256 nm = _mm256_set1_ps(negmax), acc0 = _mm256_setzero_ps(), acc1 = acc0;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		acc0 = sumexp_part(x + i, y ? y + i : NULL, 8, nm, acc0);
		acc1 = sumexp_part(x + i + 8, y ? y + i + 8 : NULL, 8, nm, acc1);
	}
	if (i < n) {
		size_t r = n - i;
		acc0 = sumexp_part(x + i, y ? y + i : NULL, r < 8 ? r : 8, nm, acc0);
		if (r > 8)
			acc1 = sumexp_part(x + i + 8, y ? y + i + 8 : NULL, r - 8, nm, acc1);
	}
	float v[8];
	_mm256_storeu_ps(v, _mm256_add_ps(acc1, acc0));
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

/* Eight outputs q..q+7 at p = x + q * s + o, for s = 1 or 2 (two 8-float loads, the even
 * elements kept: reads p[15], one past the last tap, so the loop stops one output early). */
static inline __m256 pool_load8(const float *p, size_t s)
{
	if (s == 1)
		return _mm256_loadu_ps(p);
	__m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
	__m256 e = _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0));
	return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
}

void wh_nn_maxpool_row_f32_avx2(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				size_t d)
{
	size_t q = 0;
	if (s <= 2) {
		/* MAXPS(v, best) is v > best ? v : best, the scalar step */
		for (; q + 8 + (s == 2) <= n; q += 8) {
			__m256 best = _mm256_set1_ps(-INFINITY);
			for (size_t r = 0; r < nrows; r++) {
				const float *row = rows[r] + q * s;
				for (size_t b = 0; b < k; b++)
					best = _mm256_max_ps(pool_load8(row + b * d, s), best);
			}
			_mm256_storeu_ps(y + q, best);
		}
	}
	if (s == 1 && q < n) {
		/* the last 1..7 outputs: masked loads (lanes past n read nothing) and store */
		__m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - q)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
		__m256 best = _mm256_set1_ps(-INFINITY);
		for (size_t r = 0; r < nrows; r++)
			for (size_t b = 0; b < k; b++)
				best = _mm256_max_ps(_mm256_maskload_ps(rows[r] + q + b * d, m), best);
		_mm256_maskstore_ps(y + q, m, best);
		q = n;
	}
	if (q < n) {
		const float *rest[64];
		for (size_t r = 0; r < nrows; r++)
			rest[r] = rows[r] + q * s;
		wh_nn_maxpool_row_f32_scalar(rest, nrows, y + q, n - q, k, s, d);
	}
}

void wh_nn_ln_apply_f32_avx2(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			     const double *bias)
{
	__m256d m = _mm256_set1_pd(mean), iv = _mm256_set1_pd(inv);
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		__m256d v = _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(x + i)), m);
		v = _mm256_mul_pd(_mm256_mul_pd(v, iv), _mm256_loadu_pd(scale + i));
		if (bias)
			v = _mm256_add_pd(v, _mm256_loadu_pd(bias + i));
		_mm_storeu_ps(y + i, _mm256_cvtpd_ps(v));
	}
	if (i < n)
		wh_nn_ln_apply_f32_scalar(x + i, y + i, n - i, mean, inv, scale + i, bias ? bias + i : NULL);
}

/* A zero maximum takes the sign of the first zero, as the scalar fold does; any other
 * maximum is one value whatever the order of the lanes. */
static float max_first_zero(const float *x, size_t n, float m)
{
	if (m != 0.0f)
		return m;
	size_t i = 0;
	while (x[i] != 0.0f)
		i++;
	return x[i];
}

float wh_nn_max_f32_avx2(const float *x, size_t n)
{
	/* MAXPS(v, m) is v > m ? v : m, the scalar step (NaN skipped) */
	__m256 m0 = _mm256_set1_ps(-FLT_MAX), m1 = m0, m2 = m0, m3 = m0;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
		m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
		m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
		m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
	}
	for (; i + 8 <= n; i += 8)
		m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
	float l[8];
	_mm256_storeu_ps(l, _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
	float m = -FLT_MAX;
	for (size_t k = 0; k < 8; k++)
		m = l[k] > m ? l[k] : m;
	for (; i < n; i++)
		m = x[i] > m ? x[i] : m;
	return max_first_zero(x, n, m);
}

void wh_nn_scale_f32_avx2(const float *x, float *y, size_t n, float a)
{
	__m256 va = _mm256_set1_ps(a);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), va));
	for (; i < n; i++)
		y[i] = x[i] * a;
}

bool wh_nn_minmax_f32_avx2(const float *x, size_t n, bool is_min, float *out)
{
	/* four independent chains; each lane's order does not matter, see the header */
	const __m256 start = _mm256_set1_ps(is_min ? INFINITY : -INFINITY);
	__m256 a0 = start, a1 = a0, a2 = a0, a3 = a0, nan = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256 v0 = _mm256_loadu_ps(x + i), v1 = _mm256_loadu_ps(x + i + 8);
		__m256 v2 = _mm256_loadu_ps(x + i + 16), v3 = _mm256_loadu_ps(x + i + 24);
		nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q),
						     _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
		if (is_min) {
			a0 = _mm256_min_ps(v0, a0);
			a1 = _mm256_min_ps(v1, a1);
			a2 = _mm256_min_ps(v2, a2);
			a3 = _mm256_min_ps(v3, a3);
		} else {
			a0 = _mm256_max_ps(v0, a0);
			a1 = _mm256_max_ps(v1, a1);
			a2 = _mm256_max_ps(v2, a2);
			a3 = _mm256_max_ps(v3, a3);
		}
	}
	if (_mm256_movemask_ps(nan))
		return false;
	if (is_min)
		a0 = _mm256_min_ps(_mm256_min_ps(a0, a1), _mm256_min_ps(a2, a3));
	else
		a0 = _mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3));
	float v[8];
	_mm256_storeu_ps(v, a0);
	float r = is_min ? INFINITY : -INFINITY;
	for (int l = 0; l < 8; l++)
		r = is_min ? (v[l] < r ? v[l] : r) : (v[l] > r ? v[l] : r);
	for (; i < n; i++) {
		if (isnan(x[i]))
			return false;
		r = is_min ? (x[i] < r ? x[i] : r) : (x[i] > r ? x[i] : r);
	}
	*out = r;
	return r != 0;
}

/* 8-bit MaxPool plane (nn-internal.h): as the AVX-512 variant, 32 bytes a vector; the last
 * partial chunk of a row and the last partial vector of outputs go through a buffer. */
static inline __attribute__((always_inline)) __m256i q8_max256(__m256i a, __m256i b, bool s8)
{
	return s8 ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
}

static inline __attribute__((always_inline)) void maxpool_plane_q8_256(const struct wh_nn_pool2d *g,
									 const uint8_t *x, uint8_t *y, bool s8,
									 uint8_t *scratch)
{
	const int64_t W = g->W, OW = g->OW, sw = g->sw;
	const size_t nvec = (size_t)(OW + 31) / 32;
	const size_t PL = wh_nn_maxpool_plane_q8_pl(g), len = wh_nn_maxpool_plane_q8_len(g);
	const uint8_t lowest = s8 ? 0x80 : 0;
	const __m256i pad = _mm256_set1_epi8((char)lowest);
	memset(scratch, lowest, (size_t)sw * len);
	uint8_t *ev = scratch + PL, *od = scratch + len + PL;
	const uint8_t *src[WH_NN_POOL2D_MAXK];
	for (int64_t b = 0; b < g->kw; b++) {
		int64_t phase, q = wh_nn_pool2d_tap(g, b, &phase);
		src[b] = (phase ? od : ev) + q;
	}
	const __m256i low = _mm256_set1_epi16(0x00ff);
	const int64_t chunk = 32 * sw, nch = (W + chunk - 1) / chunk;
	uint8_t buf[64];
	for (int64_t oh = 0; oh < g->OH; oh++) {
		const uint8_t *rows[WH_NN_POOL2D_MAXK];
		int64_t hs[WH_NN_POOL2D_MAXK];
		size_t nr = wh_nn_pool2d_rows(g, oh, hs);
		for (size_t r = 0; r < nr; r++)
			rows[r] = x + hs[r] * W;
		for (int64_t c = 0; c < nch; c++) {
			int64_t c0 = c * chunk;
			bool whole = c0 + chunk <= W;
			__m256i lo = pad, hi = pad;
			for (size_t r = 0; r < nr; r++) {
				const uint8_t *p = rows[r] + c0;
				if (!whole) {
					memset(buf, lowest, sizeof buf);
					memcpy(buf, p, (size_t)(W - c0));
					p = buf;
				}
				lo = q8_max256(_mm256_loadu_si256((const __m256i *)p), lo, s8);
				if (sw == 2)
					hi = q8_max256(_mm256_loadu_si256((const __m256i *)(p + 32)), hi, s8);
			}
			if (sw == 1) {
				_mm256_storeu_si256((__m256i *)(ev + c0), lo);
			} else {
				__m256i e = _mm256_packus_epi16(_mm256_and_si256(lo, low), _mm256_and_si256(hi, low));
				__m256i o = _mm256_packus_epi16(_mm256_srli_epi16(lo, 8), _mm256_srli_epi16(hi, 8));
				_mm256_storeu_si256((__m256i *)(ev + 32 * c), _mm256_permute4x64_epi64(e, 0xd8));
				_mm256_storeu_si256((__m256i *)(od + 32 * c), _mm256_permute4x64_epi64(o, 0xd8));
			}
		}
		uint8_t *yr = y + oh * OW;
		for (size_t v = 0; v < nvec; v++) {
			__m256i best = pad;
			for (int64_t b = 0; b < g->kw; b++)
				best = q8_max256(_mm256_loadu_si256((const __m256i *)(src[b] + 32 * v)), best, s8);
			if (v + 1 < nvec || OW % 32 == 0) {
				_mm256_storeu_si256((__m256i *)(yr + 32 * v), best);
			} else {
				_mm256_storeu_si256((__m256i *)buf, best);
				memcpy(yr + 32 * v, buf, (size_t)(OW % 32));
			}
		}
	}
}

void wh_nn_maxpool_plane_q8_avx2(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8,
				 uint8_t *scratch)
{
	if (s8)
		maxpool_plane_q8_256(g, x, y, true, scratch);
	else
		maxpool_plane_q8_256(g, x, y, false, scratch);
}
