/* AVX2 variants of the quantized contrib ops' row kernels (qlinear-internal.h): the scalar
 * reference's float32 operations in its order, without FMA, 8 elements a vector; the
 * rounding by VCVTPS2DQ (round half to even, as nearbyintf) after a clamp to +-2^30, the
 * zero point added and the 8-bit range taken by saturating packs. The last n % 8 elements
 * go through the scalar reference. Called only when ctx->cpu->isa >= WH_ISA_AVX2. */
/* Fusing a multiply and an add would round differently from the scalar reference. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <immintrin.h>

#include "executor/ops/qlinear-internal.h"

#define AI static inline __attribute__((always_inline))

AI __m256i widen8(const uint8_t *p, bool s8)
{
	__m128i v = _mm_loadl_epi64((const __m128i *)p);
	return s8 ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}

/* q(v) of 8 floats stored at y: clamp, round half to even, + zp, saturating packs */
AI void quant8(__m256 v, int32_t zp, bool s8, uint8_t *y)
{
	/* VMAXPS gives its second operand for a NaN: the lowest value, as the reference */
	v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(-1073741824.0f)), _mm256_set1_ps(1073741824.0f));
	__m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(v), _mm256_set1_epi32(zp));
	__m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
	_mm_storel_epi64((__m128i *)y, s8 ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w));
}

void wh_qlin_quant_row_avx2(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n)
{
	const __m256 vm = _mm256_set1_ps(m);
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		quant8(_mm256_mul_ps(_mm256_loadu_ps(x + i), vm), zp, s8, y + i);
	if (i < n)
		wh_qlin_quant_row_scalar(x + i, m, zp, s8, y + i, n - i);
}

AI void bin_row(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb, uint8_t *y,
		size_t n, bool s8)
{
	const __m256i za = _mm256_set1_epi32(p->za), zb = _mm256_set1_epi32(p->zb);
	const __m256 ra = _mm256_set1_ps(p->ra), rb = _mm256_set1_ps(p->rb), rab = _mm256_set1_ps(p->rab);
	__m256i ca = _mm256_sub_epi32(_mm256_set1_epi32(s8 ? (int8_t)a[0] : a[0]), za);
	__m256i cb = _mm256_sub_epi32(_mm256_set1_epi32(s8 ? (int8_t)b[0] : b[0]), zb);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i va = sa ? _mm256_sub_epi32(widen8(a + i, s8), za) : ca;
		__m256i vb = sb ? _mm256_sub_epi32(widen8(b + i, s8), zb) : cb;
		__m256 v;
		if (p->mul)
			v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_mullo_epi32(va, vb)), rab);
		else
			v = _mm256_add_ps(_mm256_mul_ps(ra, _mm256_cvtepi32_ps(va)),
					  _mm256_mul_ps(rb, _mm256_cvtepi32_ps(vb)));
		quant8(v, p->zc, s8, y + i);
	}
	if (i < n)
		wh_qlin_bin_row_scalar(p, a + i * sa, sa, b + i * sb, sb, y + i, n - i);
}

void wh_qlin_bin_row_avx2(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			  uint8_t *y, size_t n)
{
	if (n == 0)
		return;
	if (p->s8)
		bin_row(p, a, sa, b, sb, y, n, true);
	else
		bin_row(p, a, sa, b, sb, y, n, false);
}

int64_t wh_qlin_sum_q8_avx2(const uint8_t *x, size_t n, bool s8)
{
	/* int8 as uint8 with the sign bit flipped (x + 128), less 128 n at the end */
	const __m256i flip = _mm256_set1_epi8(s8 ? (char)0x80 : 0), zero = _mm256_setzero_si256();
	__m256i acc = zero;
	size_t i = 0;
	for (; i + 32 <= n; i += 32)
		acc = _mm256_add_epi64(
			acc, _mm256_sad_epu8(_mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(x + i)), flip), zero));
	int64_t l[4];
	_mm256_storeu_si256((__m256i *)l, acc);
	int64_t s = l[0] + l[1] + l[2] + l[3];
	s = s8 ? s - 128 * (int64_t)i : s;
	return s + wh_qlin_sum_q8_scalar(x + i, n - i, s8);
}

AI __m256i widen16(const uint8_t *p, bool s8)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);
	return s8 ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

/* 16-bit differences (within +-255) multiplied in pairs by VPMADDWD (exact in int32), summed
 * with wrapping adds: the reference's sum modulo 2^32; the last k % 16 by the reference */
int32_t wh_qlin_dot_avx2(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8, size_t k)
{
	const __m256i vza = _mm256_set1_epi16((short)za), vzb = _mm256_set1_epi16((short)zb);
	__m256i acc = _mm256_setzero_si256();
	size_t i = 0;
	for (; i + 16 <= k; i += 16)
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_sub_epi16(widen16(a + i, as8), vza),
							      _mm256_sub_epi16(widen16(b + i, bs8), vzb)));
	uint32_t l[8], s = 0;
	_mm256_storeu_si256((__m256i *)l, acc);
	for (int j = 0; j < 8; j++)
		s += l[j];
	return (int32_t)(s + (uint32_t)wh_qlin_dot_scalar(a + i, za, as8, b + i, zb, bs8, k - i));
}
