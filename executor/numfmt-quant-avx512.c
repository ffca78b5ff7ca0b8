/* AVX-512 variants of the int8 emulation's bulk loops (numfmt-quant.h); compiled with
 * -mavx512f and friends, called only when cpuid reports them. The operations are the scalar
 * reference's, one for one (MINPS/MAXPS return their second operand when either is NaN,
 * which is the scalar selects' rule), and products and sums stay separate instructions
 * (ISO C mode: no contraction into FMA), so the bits are the same. Tails use masked loads and
 * stores. */
#include <immintrin.h>

#include "executor/numfmt-quant.h"

static inline __mmask16 tail_mask(size_t left)
{
	return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* m = max(m, |v|) over the finite lanes of v */
static inline __m512 fold_abs(__m512 m, __m512 v)
{
	__m512 a = _mm512_abs_ps(v);
	__mmask16 fin = _mm512_cmp_ps_mask(a, _mm512_set1_ps(WH_QUANT_FLT_MAX), _CMP_LE_OQ);
	return _mm512_mask_max_ps(m, fin, m, a);
}

static inline __m512 quant16(__m512 x, __m512 inv)
{
	const __m512 hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f), m = _mm512_set1_ps(12582912.0f);
	__m512 y = _mm512_mul_ps(x, inv);
	y = _mm512_min_ps(hi, y); /* 127 < y ? 127 : y (NaN stays) */
	y = _mm512_max_ps(lo, y); /* -127 > y ? -127 : y */
	__m512 r = _mm512_sub_ps(_mm512_add_ps(y, m), m);
	return _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(y, y, _CMP_ORD_Q), r);
}

float wh_amax_n_avx512(const float *x, size_t n)
{
	__m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		m0 = fold_abs(m0, _mm512_loadu_ps(x + i));
		m1 = fold_abs(m1, _mm512_loadu_ps(x + i + 16));
	}
	for (; i < n; i += 16)
		m0 = fold_abs(m0, _mm512_maskz_loadu_ps(tail_mask(n - i), x + i));
	return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

float wh_fake_quant_int8_n_avx512(const float *src, float *dst, size_t n, float inv, float scale)
{
	const __m512 vi = _mm512_set1_ps(inv), vs = _mm512_set1_ps(scale);
	/* two running maxima: one would chain every block's max behind the previous one */
	__m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 d0 = _mm512_mul_ps(quant16(_mm512_loadu_ps(src + i), vi), vs);
		__m512 d1 = _mm512_mul_ps(quant16(_mm512_loadu_ps(src + i + 16), vi), vs);
		_mm512_storeu_ps(dst + i, d0);
		_mm512_storeu_ps(dst + i + 16, d1);
		m0 = fold_abs(m0, d0);
		m1 = fold_abs(m1, d1);
	}
	for (; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 d = _mm512_mul_ps(quant16(_mm512_maskz_loadu_ps(k, src + i), vi), vs);
		_mm512_mask_storeu_ps(dst + i, k, d);
		m0 = fold_abs(m0, _mm512_maskz_mov_ps(k, d));
	}
	return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

void wh_quant_int8_n_avx512(const float *src, float *dst, size_t n, float inv)
{
	const __m512 vi = _mm512_set1_ps(inv);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(dst + i, quant16(_mm512_loadu_ps(src + i), vi));
	if (i < n) {
		__mmask16 k = tail_mask(n - i);
		_mm512_mask_storeu_ps(dst + i, k, quant16(_mm512_maskz_loadu_ps(k, src + i), vi));
	}
}

float wh_scale_add_n_avx512(float *y, size_t n, float s, float b)
{
	const __m512 vs = _mm512_set1_ps(s), vb = _mm512_set1_ps(b);
	__m512 m0 = _mm512_setzero_ps(), m1 = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 d0 = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(y + i), vs), vb);
		__m512 d1 = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(y + i + 16), vs), vb);
		_mm512_storeu_ps(y + i, d0);
		_mm512_storeu_ps(y + i + 16, d1);
		m0 = fold_abs(m0, d0);
		m1 = fold_abs(m1, d1);
	}
	for (; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 d = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, y + i), vs), vb);
		_mm512_mask_storeu_ps(y + i, k, d);
		m0 = fold_abs(m0, _mm512_maskz_mov_ps(k, d));
	}
	return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/* The float8 round trip in the value domain, 16 lanes: |y| saturated to the format's largest
 * finite value (infinity included), rounded half to even to mbits mantissa bits where it is
 * normal (on the bits, as the bf16 rounding) and to the subnormal quantum below (adding and
 * subtracting 1.5 * 2^23 quanta), the sign put back (a zero keeps it); NaN becomes the
 * format's NaN decoded (the sign and the quiet bit). */
static inline __m512 fp8_round16(__m512 y, bool e5m2)
{
	const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
	const int mbits = e5m2 ? 2 : 3;
	const __m512 maxv = _mm512_set1_ps(e5m2 ? 57344.0f : 448.0f);
	const __m512 min_normal = _mm512_set1_ps(e5m2 ? 0x1p-14f : 0x1p-6f);
	const __m512 c = _mm512_set1_ps(e5m2 ? 192.0f : 24576.0f); /* 1.5 * 2^23 subnormal quanta */
	__m512i b = _mm512_castps_si512(y);
	__m512i sign = _mm512_andnot_si512(abs_mask, b);
	__mmask16 nan = _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
	__m512 a = _mm512_min_ps(_mm512_castsi512_ps(_mm512_and_si512(b, abs_mask)), maxv);
	__m512i ab = _mm512_castps_si512(a);
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(ab, 23 - mbits), _mm512_set1_epi32(1));
	__m512i rn = _mm512_add_epi32(ab, _mm512_add_epi32(lsb, _mm512_set1_epi32((1 << (22 - mbits)) - 1)));
	rn = _mm512_and_si512(rn, _mm512_set1_epi32((int)(0xFFFFFFFFu << (23 - mbits))));
	__m512 rs = _mm512_sub_ps(_mm512_add_ps(a, c), c);
	__mmask16 normal = _mm512_cmp_ps_mask(a, min_normal, _CMP_GE_OQ);
	__m512i r = _mm512_mask_mov_epi32(_mm512_castps_si512(rs), normal, rn);
	r = _mm512_or_si512(r, sign);
	r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(sign, _mm512_set1_epi32(0x7FC00000)));
	return _mm512_castsi512_ps(r);
}

float wh_fake_quant_fp8_n_avx512(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2)
{
	const __m512 vi = _mm512_set1_ps(inv), vs = _mm512_set1_ps(scale);
	__m512 m = _mm512_setzero_ps();
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 y = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, src + i), vi);
		__m512 d = _mm512_mul_ps(fp8_round16(y, e5m2), vs);
		_mm512_mask_storeu_ps(dst + i, k, d);
		m = fold_abs(m, _mm512_maskz_mov_ps(k, d));
	}
	return _mm512_reduce_max_ps(m);
}
