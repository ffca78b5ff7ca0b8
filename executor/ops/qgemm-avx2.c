/* AVX2 variants of the integer GEMM and the quantization loops (qgemm-internal.h). The GEMM
 * widens both operands to int16 and multiplies with vpmaddwd, whose int32 pair sums are
 * exact for uint8 x int8 products; vpmaddubsw would be twice as dense but saturates its
 * int16 pair sums (255 * 127 * 2 > 32767), which is why MLAS's AVX2 u8s8 kernels want
 * 7-bit weights. */
#include <immintrin.h>

#include "executor/ops/qgemm-internal.h"

/* MR rows x one panel (16 columns, two vectors of 8) at rows [m, m + MR), panel j; SW: the
 * rows int8 and the panels uint8 (the extensions the other way). */
static inline __attribute__((always_inline)) void tile(const struct wh_qg_args *a, size_t m, size_t j, int MR,
							bool SW)
{
	size_t kp = a->kp;
	__m256i acc[4][2];
#pragma GCC unroll 4
	for (int r = 0; r < MR; r++)
		acc[r][0] = acc[r][1] = _mm256_setzero_si256();
	const int8_t *p = a->p + j * kp * WH_QG_NR;
	const uint8_t *rw = a->r + m * kp;
	const __m256i lowb = _mm256_set1_epi16(0x00FF);
	for (size_t k = 0; k < kp; k += 4) {
		__m256i p0 = _mm256_loadu_si256((const __m256i *)(p + k * WH_QG_NR));
		__m256i p1 = _mm256_loadu_si256((const __m256i *)(p + k * WH_QG_NR + 32));
		/* k0, k2 (even bytes) and k1, k3 (odd bytes) of each column, extended */
		__m256i e0, o0, e1, o1;
		if (SW) {
			e0 = _mm256_and_si256(p0, lowb), o0 = _mm256_srli_epi16(p0, 8);
			e1 = _mm256_and_si256(p1, lowb), o1 = _mm256_srli_epi16(p1, 8);
		} else {
			e0 = _mm256_srai_epi16(_mm256_slli_epi16(p0, 8), 8), o0 = _mm256_srai_epi16(p0, 8);
			e1 = _mm256_srai_epi16(_mm256_slli_epi16(p1, 8), 8), o1 = _mm256_srai_epi16(p1, 8);
		}
#pragma GCC unroll 4
		for (int r = 0; r < MR; r++) {
			int32_t rv;
			__builtin_memcpy(&rv, rw + r * kp + k, 4);
			__m256i b = _mm256_set1_epi32(rv);
			__m256i be, bo;
			if (SW) {
				be = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), bo = _mm256_srai_epi16(b, 8);
			} else {
				be = _mm256_and_si256(b, lowb), bo = _mm256_srli_epi16(b, 8);
			}
			acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_add_epi32(_mm256_madd_epi16(be, e0),
										 _mm256_madd_epi16(bo, o0)));
			acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_add_epi32(_mm256_madd_epi16(be, e1),
										 _mm256_madd_epi16(bo, o1)));
		}
	}
	size_t c0 = j * WH_QG_NR, left = a->n - c0;
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++) {
		__m256i zp = _mm256_loadu_si256((const __m256i *)(a->zp + c0 + 8 * h));
		__m256i cs = a->colsum ? _mm256_loadu_si256((const __m256i *)(a->colsum + c0 + 8 * h))
				       : _mm256_setzero_si256();
#pragma GCC unroll 4
		for (int r = 0; r < MR; r++) {
			__m256i v = _mm256_sub_epi32(acc[r][h], a->rowc ? _mm256_set1_epi32(a->rowc[m + r])
								      : _mm256_mullo_epi32(zp, _mm256_set1_epi32(a->rowfix[m + r])));
			if (a->colsum)
				v = _mm256_sub_epi32(v, _mm256_mullo_epi32(cs, _mm256_set1_epi32(a->zr[m + r])));
			int32_t *c = a->c + (m + r) * a->ldc + c0 + 8 * h;
			if (left >= 8 * (size_t)h + 8) {
				_mm256_storeu_si256((__m256i *)c, v);
			} else if (left > 8 * (size_t)h) {
				int32_t t[8];
				_mm256_storeu_si256((__m256i *)t, v);
				for (size_t i = 0; i < left - 8 * (size_t)h; i++)
					c[i] = t[i];
			}
		}
	}
}

static inline __attribute__((always_inline)) void kernel(const struct wh_qg_args *a, size_t m0, size_t m1, bool SW)
{
	size_t np = wh_qg_panels(a->n);
	for (size_t j = 0; j < np; j++) {
		size_t m = m0;
		for (; m + 4 <= m1; m += 4)
			tile(a, m, j, 4, SW);
		switch (m1 - m) {
		case 3: tile(a, m, j, 3, SW); break;
		case 2: tile(a, m, j, 2, SW); break;
		case 1: tile(a, m, j, 1, SW); break;
		default: break;
		}
	}
}

void wh_qg_kernel_avx2(const struct wh_qg_args *a, size_t m0, size_t m1)
{
	if (a->swap)
		kernel(a, m0, m1, true);
	else
		kernel(a, m0, m1, false);
}

void wh_qg_colsums_avx2_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums)
{
	size_t np = wh_qg_panels(n);
	const __m256i ones = _mm256_set1_epi16(1), lowb = _mm256_set1_epi16(0x00FF);
	for (size_t j = 0; j < np; j++) {
		__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
		const uint8_t *pj = p + j * kp * WH_QG_NR;
		for (size_t k = 0; k < kp; k += 4) {
			__m256i p0 = _mm256_loadu_si256((const __m256i *)(pj + k * WH_QG_NR));
			__m256i p1 = _mm256_loadu_si256((const __m256i *)(pj + k * WH_QG_NR + 32));
			__m256i t0 = _mm256_add_epi16(_mm256_and_si256(p0, lowb), _mm256_srli_epi16(p0, 8));
			__m256i t1 = _mm256_add_epi16(_mm256_and_si256(p1, lowb), _mm256_srli_epi16(p1, 8));
			s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(t0, ones));
			s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(t1, ones));
		}
		_mm256_storeu_si256((__m256i *)(sums + j * WH_QG_NR), s0);
		_mm256_storeu_si256((__m256i *)(sums + j * WH_QG_NR + 8), s1);
	}
}

void wh_qg_colsums_avx2(const int8_t *p, size_t kp, size_t n, int32_t *sums)
{
	size_t np = wh_qg_panels(n);
	const __m256i ones = _mm256_set1_epi16(1);
	for (size_t j = 0; j < np; j++) {
		__m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
		const int8_t *pj = p + j * kp * WH_QG_NR;
		for (size_t k = 0; k < kp; k += 4) {
			__m256i p0 = _mm256_loadu_si256((const __m256i *)(pj + k * WH_QG_NR));
			__m256i p1 = _mm256_loadu_si256((const __m256i *)(pj + k * WH_QG_NR + 32));
			__m256i t0 = _mm256_add_epi16(_mm256_srai_epi16(_mm256_slli_epi16(p0, 8), 8), _mm256_srai_epi16(p0, 8));
			__m256i t1 = _mm256_add_epi16(_mm256_srai_epi16(_mm256_slli_epi16(p1, 8), 8), _mm256_srai_epi16(p1, 8));
			s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(t0, ones));
			s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(t1, ones));
		}
		_mm256_storeu_si256((__m256i *)(sums + j * WH_QG_NR), s0);
		_mm256_storeu_si256((__m256i *)(sums + j * WH_QG_NR + 8), s1);
	}
}

void wh_qdw_plane_avx2(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
		       bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out)
{
	/* sum x * w - zx * sum w, both wrapping: the same integer as the scalar's. x and w - zw
	 * (within +-255) as int16, two taps per vpmaddwd (pair sums within 2 * 255 * 255: exact);
	 * the unpacks leave outputs 0-3 and 8-11 in one accumulator and 4-7, 12-15 in the other,
	 * put back in order at the store. Weights beyond +-255 (not 8-bit data) take the widening
	 * loop. */
	uint32_t wsum = 0;
	bool fit = taps <= 64;
	for (size_t t = 0; t < taps; t++) {
		wsum += (uint32_t)wv[t];
		fit = fit && wv[t] >= -255 && wv[t] <= 255;
	}
	const __m256i bias = _mm256_set1_epi32((int32_t)(0u - (uint32_t)zx * wsum));
	int32_t wp[32];
	size_t o0[32], o1[32];
	size_t pairs = fit ? (taps + 1) / 2 : 0;
	for (size_t p = 0; p < pairs; p++) {
		uint32_t lo = (uint16_t)(int16_t)wv[2 * p];
		uint32_t hi = 2 * p + 1 < taps ? (uint16_t)(int16_t)wv[2 * p + 1] : 0;
		wp[p] = (int32_t)(lo | hi << 16);
		o0[p] = toff[2 * p];
		o1[p] = toff[2 * p + 1 < taps ? 2 * p + 1 : 2 * p];
	}
	for (size_t r = 0; r < rows; r++, base += rs, out += n) {
		size_t i = 0;
		for (; fit && i + 16 <= n; i += 16) {
			__m256i al = bias, ah = bias;
			for (size_t p = 0; p < pairs; p++) {
				__m128i b0 = _mm_loadu_si128((const __m128i *)(base + o0[p] + i));
				__m128i b1 = _mm_loadu_si128((const __m128i *)(base + o1[p] + i));
				__m256i x0 = x_s8 ? _mm256_cvtepi8_epi16(b0) : _mm256_cvtepu8_epi16(b0);
				__m256i x1 = x_s8 ? _mm256_cvtepi8_epi16(b1) : _mm256_cvtepu8_epi16(b1);
				__m256i w = _mm256_set1_epi32(wp[p]);
				al = _mm256_add_epi32(al, _mm256_madd_epi16(_mm256_unpacklo_epi16(x0, x1), w));
				ah = _mm256_add_epi32(ah, _mm256_madd_epi16(_mm256_unpackhi_epi16(x0, x1), w));
			}
			_mm256_storeu_si256((__m256i *)(out + i), _mm256_permute2x128_si256(al, ah, 0x20));
			_mm256_storeu_si256((__m256i *)(out + i + 8), _mm256_permute2x128_si256(al, ah, 0x31));
		}
		for (; i + 8 <= n; i += 8) {
			__m256i acc = bias;
			for (size_t t = 0; t < taps; t++) {
				__m128i b = _mm_loadl_epi64((const __m128i *)(base + toff[t] + i));
				__m256i x = x_s8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
				acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(x, _mm256_set1_epi32(wv[t])));
			}
			_mm256_storeu_si256((__m256i *)(out + i), acc);
		}
		if (i < n)
			wh_qdw_plane_scalar(base + i, toff, wv, taps, zx, x_s8, 1, n - i, rs, out + i);
	}
}

/* ---- quantization loops ---- */

static inline __m128i requant4(__m128i acc, __m256d m, __m256d yz, __m256d lo, __m256d hi)
{
	__m256d v = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), m);
	v = _mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	v = _mm256_add_pd(v, yz);
	v = _mm256_max_pd(v, lo);
	v = _mm256_min_pd(v, hi);
	return _mm256_cvtpd_epi32(v);
}

void wh_q_requant_avx2(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
		       void *y)
{
	const __m256d lo = _mm256_set1_pd(y_s8 ? -128 : 0), hi = _mm256_set1_pd(y_s8 ? 127 : 255);
	const __m256d z = _mm256_set1_pd((double)yz);
	const __m256d ms = _mm256_set1_pd((double)mult[0]);
	const __m128i shuf = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256d m0 = ms, m1 = ms;
		if (mstride) {
			m0 = _mm256_cvtps_pd(_mm_loadu_ps(mult + i));
			m1 = _mm256_cvtps_pd(_mm_loadu_ps(mult + i + 4));
		}
		__m128i v0 = requant4(_mm_loadu_si128((const __m128i *)(acc + i)), m0, z, lo, hi);
		__m128i v1 = requant4(_mm_loadu_si128((const __m128i *)(acc + i + 4)), m1, z, lo, hi);
		__m128i b = _mm_unpacklo_epi32(_mm_shuffle_epi8(v0, shuf), _mm_shuffle_epi8(v1, shuf));
		_mm_storel_epi64((__m128i *)((uint8_t *)y + i), b);
	}
	if (i < n) {
		if (mstride)
			wh_q_requant_scalar(acc + i, n - i, mult + i, 1, yz, y_s8, (uint8_t *)y + i);
		else
			wh_q_requant_scalar(acc + i, n - i, mult, 0, yz, y_s8, (uint8_t *)y + i);
	}
}

void wh_q_quant_avx2(const float *x, size_t n, float scale, float zp, bool y_s8, void *y)
{
	const __m256 lo = _mm256_set1_ps(y_s8 ? -128.0f : 0.0f), hi = _mm256_set1_ps(y_s8 ? 127.0f : 255.0f);
	const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(zp);
	const __m128i shuf = _mm_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), s);
		v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		v = _mm256_add_ps(v, z);
		v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
		v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
		__m256i q = _mm256_cvtps_epi32(v);
		__m128i b = _mm_unpacklo_epi32(_mm_shuffle_epi8(_mm256_castsi256_si128(q), shuf),
					       _mm_shuffle_epi8(_mm256_extracti128_si256(q, 1), shuf));
		_mm_storel_epi64((__m128i *)((uint8_t *)y + i), b);
	}
	if (i < n)
		wh_q_quant_scalar(x + i, n - i, scale, zp, y_s8, (uint8_t *)y + i);
}

void wh_q_dequant_avx2(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y)
{
	const __m256i z = _mm256_set1_epi32(zp);
	const __m256 s = _mm256_set1_ps(scale);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)((const uint8_t *)x + i));
		__m256i v = x_s8 ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b);
		_mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
	}
	if (i < n)
		wh_q_dequant_scalar((const uint8_t *)x + i, x_s8, n - i, zp, scale, y + i);
}

void wh_q_minmax_avx2(const float *x, size_t n, float *lo_out, float *hi_out)
{
	__m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		lo = _mm256_min_ps(v, lo); /* a NaN in v gives the second operand */
		hi = _mm256_max_ps(v, hi);
	}
	float l[8], h[8];
	_mm256_storeu_ps(l, lo);
	_mm256_storeu_ps(h, hi);
	float rl, rh;
	wh_q_minmax_scalar(x + i, n - i, &rl, &rh);
	for (int k = 0; k < 8; k++) {
		rl = l[k] < rl ? l[k] : rl;
		rh = h[k] > rh ? h[k] : rh;
	}
	*lo_out = rl;
	*hi_out = rh;
}

void wh_q_scale_bias_avx2(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y)
{
	const __m256 m = _mm256_set1_ps(mult), b = _mm256_set1_ps(bias);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_loadu_si256((const void *)(acc + i))), m);
		_mm256_storeu_ps(y + i, has_bias ? _mm256_add_ps(v, b) : v);
	}
	if (i < n)
		wh_q_scale_bias_scalar(acc + i, n - i, mult, bias, has_bias, y + i);
}
