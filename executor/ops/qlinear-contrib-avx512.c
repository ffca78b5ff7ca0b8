/* AVX-512 variants of the quantized contrib ops' row kernels (qlinear-internal.h): the
 * scalar reference's float32 operations in its order, without FMA, 16 elements a vector;
 * the rounding by VCVTPS2DQ (round half to even, as nearbyintf) after a clamp to +-2^30,
 * the zero point added and the 8-bit range taken by saturating narrowing. The tail goes
 * through the same vector code with masked loads and stores. Called only when
 * ctx->cpu->isa == WH_ISA_AVX512. */
/* Fusing a multiply and an add would round differently from the scalar reference. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <immintrin.h>

#include "executor/ops/qlinear-internal.h"

#define AI static inline __attribute__((always_inline))

AI __m512i widen16(__m128i v, bool s8)
{
	return s8 ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}

/* q(v) of 16 floats: clamp, round half to even, + zp, narrow with saturation */
AI __m128i quant16(__m512 v, int32_t zp, bool s8)
{
	/* VMAXPS gives its second operand for a NaN: the lowest value, as the reference */
	v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(-1073741824.0f)), _mm512_set1_ps(1073741824.0f));
	__m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(v), _mm512_set1_epi32(zp));
	return s8 ? _mm512_cvtsepi32_epi8(q) : _mm512_cvtusepi32_epi8(_mm512_max_epi32(q, _mm512_setzero_si512()));
}

/* 16 results from the operands less their zero points (int32 lanes) */
AI __m128i bin16(const struct wh_qlin_bin *p, __m512i va, __m512i vb)
{
	__m512 v;
	if (p->mul)
		v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(va, vb)), _mm512_set1_ps(p->rab));
	else
		v = _mm512_add_ps(_mm512_mul_ps(_mm512_set1_ps(p->ra), _mm512_cvtepi32_ps(va)),
				  _mm512_mul_ps(_mm512_set1_ps(p->rb), _mm512_cvtepi32_ps(vb)));
	return quant16(v, p->zc, p->s8);
}

void wh_qlin_quant_row_avx512(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n)
{
	const __m512 vm = _mm512_set1_ps(m);
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm_storeu_si128((__m128i *)(y + i), quant16(_mm512_mul_ps(_mm512_loadu_ps(x + i), vm), zp, s8));
	if (i < n) {
		__mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
		_mm_mask_storeu_epi8(y + i, k, quant16(_mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), vm), zp, s8));
	}
}

AI void bin_row(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb, uint8_t *y,
		size_t n, bool s8)
{
	const __m512i za = _mm512_set1_epi32(p->za), zb = _mm512_set1_epi32(p->zb);
	__m512i ca = _mm512_sub_epi32(_mm512_set1_epi32(s8 ? (int8_t)a[0] : a[0]), za);
	__m512i cb = _mm512_sub_epi32(_mm512_set1_epi32(s8 ? (int8_t)b[0] : b[0]), zb);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512i va = sa ? _mm512_sub_epi32(widen16(_mm_loadu_si128((const __m128i *)(a + i)), s8), za) : ca;
		__m512i vb = sb ? _mm512_sub_epi32(widen16(_mm_loadu_si128((const __m128i *)(b + i)), s8), zb) : cb;
		_mm_storeu_si128((__m128i *)(y + i), bin16(p, va, vb));
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
		__m512i va = sa ? _mm512_sub_epi32(widen16(_mm_maskz_loadu_epi8(m, a + i), s8), za) : ca;
		__m512i vb = sb ? _mm512_sub_epi32(widen16(_mm_maskz_loadu_epi8(m, b + i), s8), zb) : cb;
		_mm_mask_storeu_epi8(y + i, m, bin16(p, va, vb));
	}
}

void wh_qlin_bin_row_avx512(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			    uint8_t *y, size_t n)
{
	if (n == 0)
		return;
	if (p->s8)
		bin_row(p, a, sa, b, sb, y, n, true);
	else
		bin_row(p, a, sa, b, sb, y, n, false);
}

int64_t wh_qlin_sum_q8_avx512(const uint8_t *x, size_t n, bool s8)
{
	/* int8 as uint8 with the sign bit flipped (x + 128), less 128 n at the end */
	const __m512i flip = _mm512_set1_epi8(s8 ? (char)0x80 : 0), zero = _mm512_setzero_si512();
	__m512i acc0 = zero, acc1 = zero;
	size_t i = 0;
	for (; i + 128 <= n; i += 128) {
		acc0 = _mm512_add_epi64(acc0, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(x + i), flip), zero));
		acc1 = _mm512_add_epi64(acc1,
					_mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(x + i + 64), flip), zero));
	}
	for (; i < n; i += 64) {
		__mmask64 m = n - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (n - i)) - 1;
		/* lanes past n load the flip, which the xor makes zero */
		__m512i v = _mm512_xor_si512(_mm512_mask_loadu_epi8(flip, m, x + i), flip);
		acc0 = _mm512_add_epi64(acc0, _mm512_sad_epu8(v, zero));
	}
	int64_t s = _mm512_reduce_add_epi64(_mm512_add_epi64(acc0, acc1));
	return s8 ? s - 128 * (int64_t)n : s;
}

AI __m512i widen32(__m256i v, bool s8)
{
	return s8 ? _mm512_cvtepi8_epi16(v) : _mm512_cvtepu8_epi16(v);
}

/* 16-bit differences (within +-255) multiplied in pairs by VPMADDWD (exact in int32), summed
 * with wrapping adds: the reference's sum modulo 2^32 */
int32_t wh_qlin_dot_avx512(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8, size_t k)
{
	const __m512i vza = _mm512_set1_epi16((short)za), vzb = _mm512_set1_epi16((short)zb);
	__m512i acc0 = _mm512_setzero_si512(), acc1 = acc0;
	size_t i = 0;
	for (; i + 64 <= k; i += 64) {
		__m512i a0 = _mm512_sub_epi16(widen32(_mm256_loadu_si256((const __m256i *)(a + i)), as8), vza);
		__m512i b0 = _mm512_sub_epi16(widen32(_mm256_loadu_si256((const __m256i *)(b + i)), bs8), vzb);
		__m512i a1 = _mm512_sub_epi16(widen32(_mm256_loadu_si256((const __m256i *)(a + i + 32)), as8), vza);
		__m512i b1 = _mm512_sub_epi16(widen32(_mm256_loadu_si256((const __m256i *)(b + i + 32)), bs8), vzb);
		acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(a0, b0));
		acc1 = _mm512_add_epi32(acc1, _mm512_madd_epi16(a1, b1));
	}
	for (; i < k; i += 32) {
		__mmask32 m = k - i >= 32 ? ~(__mmask32)0 : ((__mmask32)1 << (k - i)) - 1;
		/* lanes past k are zero after the subtraction, adding nothing */
		__m512i va = _mm512_maskz_sub_epi16(m, widen32(_mm256_maskz_loadu_epi8(m, a + i), as8), vza);
		__m512i vb = _mm512_maskz_sub_epi16(m, widen32(_mm256_maskz_loadu_epi8(m, b + i), bs8), vzb);
		acc0 = _mm512_add_epi32(acc0, _mm512_madd_epi16(va, vb));
	}
	uint32_t l[16], s = 0;
	_mm512_storeu_si512(l, _mm512_add_epi32(acc0, acc1));
	for (int j = 0; j < 16; j++)
		s += l[j];
	return (int32_t)s;
}
