/* AVX2 variants of the int8 emulation's bulk loops (numfmt-quant.h); compiled with -mavx2,
 * called only when cpuid reports it. The operations are the scalar reference's, one for one
 * (MINPS/MAXPS return their second operand when either is NaN, which is the scalar selects'
 * rule), and products and sums stay separate instructions (ISO C mode: no contraction into
 * FMA), so the bits are the same. Tails go through the scalar reference. */
#include <immintrin.h>

#include "executor/numfmt-quant.h"

/* m = max(m, |v|) over the finite lanes of v (the others count as 0, which never wins) */
static inline __m256 fold_abs(__m256 m, __m256 v)
{
	__m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v);
	__m256 fin = _mm256_cmp_ps(a, _mm256_set1_ps(WH_QUANT_FLT_MAX), _CMP_LE_OQ);
	return _mm256_max_ps(m, _mm256_and_ps(a, fin));
}

static inline float hmax(__m256 m)
{
	__m128 v = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
	v = _mm_max_ps(v, _mm_movehl_ps(v, v));
	v = _mm_max_ss(v, _mm_shuffle_ps(v, v, 1));
	return _mm_cvtss_f32(v);
}

static inline __m256 quant8(__m256 x, __m256 inv)
{
	const __m256 hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f), m = _mm256_set1_ps(12582912.0f);
	__m256 y = _mm256_mul_ps(x, inv);
	y = _mm256_min_ps(hi, y); /* 127 < y ? 127 : y (NaN stays) */
	y = _mm256_max_ps(lo, y); /* -127 > y ? -127 : y */
	__m256 r = _mm256_sub_ps(_mm256_add_ps(y, m), m);
	return _mm256_and_ps(r, _mm256_cmp_ps(y, y, _CMP_ORD_Q));
}

float wh_amax_n_avx2(const float *x, size_t n)
{
	__m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		m0 = fold_abs(m0, _mm256_loadu_ps(x + i));
		m1 = fold_abs(m1, _mm256_loadu_ps(x + i + 8));
	}
	float r = hmax(_mm256_max_ps(m0, m1)), t = wh_amax_n_scalar(x + i, n - i);
	return t > r ? t : r;
}

float wh_fake_quant_int8_n_avx2(const float *src, float *dst, size_t n, float inv, float scale)
{
	const __m256 vi = _mm256_set1_ps(inv), vs = _mm256_set1_ps(scale);
	__m256 m = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 d = _mm256_mul_ps(quant8(_mm256_loadu_ps(src + i), vi), vs);
		_mm256_storeu_ps(dst + i, d);
		m = fold_abs(m, d);
	}
	float r = hmax(m), t = wh_fake_quant_int8_n_scalar(src + i, dst + i, n - i, inv, scale);
	return t > r ? t : r;
}

void wh_quant_int8_n_avx2(const float *src, float *dst, size_t n, float inv)
{
	const __m256 vi = _mm256_set1_ps(inv);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(dst + i, quant8(_mm256_loadu_ps(src + i), vi));
	wh_quant_int8_n_scalar(src + i, dst + i, n - i, inv);
}

float wh_scale_add_n_avx2(float *y, size_t n, float s, float b)
{
	const __m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(b);
	__m256 m = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 d = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(y + i), vs), vb);
		_mm256_storeu_ps(y + i, d);
		m = fold_abs(m, d);
	}
	float r = hmax(m), t = wh_scale_add_n_scalar(y + i, n - i, s, b);
	return t > r ? t : r;
}

/* The float8 round trip in the value domain, 8 lanes (see numfmt-quant-avx512.c). */
static inline __m256 fp8_round8(__m256 y, bool e5m2)
{
	const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
	const int mbits = e5m2 ? 2 : 3;
	const __m256 maxv = _mm256_set1_ps(e5m2 ? 57344.0f : 448.0f);
	const __m256 min_normal = _mm256_set1_ps(e5m2 ? 0x1p-14f : 0x1p-6f);
	const __m256 c = _mm256_set1_ps(e5m2 ? 192.0f : 24576.0f);
	__m256i b = _mm256_castps_si256(y);
	__m256i sign = _mm256_andnot_si256(abs_mask, b);
	__m256 nan = _mm256_cmp_ps(y, y, _CMP_UNORD_Q);
	__m256 a = _mm256_min_ps(_mm256_castsi256_ps(_mm256_and_si256(b, abs_mask)), maxv);
	__m256i ab = _mm256_castps_si256(a);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(ab, 23 - mbits), _mm256_set1_epi32(1));
	__m256i rn = _mm256_add_epi32(ab, _mm256_add_epi32(lsb, _mm256_set1_epi32((1 << (22 - mbits)) - 1)));
	rn = _mm256_and_si256(rn, _mm256_set1_epi32((int)(0xFFFFFFFFu << (23 - mbits))));
	__m256 rs = _mm256_sub_ps(_mm256_add_ps(a, c), c);
	__m256 normal = _mm256_cmp_ps(a, min_normal, _CMP_GE_OQ);
	__m256 r = _mm256_blendv_ps(rs, _mm256_castsi256_ps(rn), normal);
	r = _mm256_or_ps(r, _mm256_castsi256_ps(sign));
	return _mm256_blendv_ps(r, _mm256_castsi256_ps(_mm256_or_si256(sign, _mm256_set1_epi32(0x7FC00000))), nan);
}

float wh_fake_quant_fp8_n_avx2(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2)
{
	const __m256 vi = _mm256_set1_ps(inv), vs = _mm256_set1_ps(scale);
	__m256 m = _mm256_setzero_ps();
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 d = _mm256_mul_ps(fp8_round8(_mm256_mul_ps(_mm256_loadu_ps(src + i), vi), e5m2), vs);
		_mm256_storeu_ps(dst + i, d);
		m = fold_abs(m, d);
	}
	float r = hmax(m), t = wh_fake_quant_fp8_n_scalar(src + i, dst + i, n - i, inv, scale, e5m2);
	return t > r ? t : r;
}
