/* AVX2 + F16C bulk conversions (compiled with -mavx2 -mfma -mf16c; called only when cpuid
 * reports them). Tails go through the scalar functions, which give identical results. */
#include <immintrin.h>

#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"

void wh_f32_to_f16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(src + i);
		_mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	}
	for (; i < n; i++)
		dst[i] = wh_f32_to_f16(src[i]);
}

void wh_f16_to_f32_n_avx2(const uint16_t *src, float *dst, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(src + i));
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
	for (; i < n; i++)
		dst[i] = wh_f16_to_f32(src[i]);
}

/* Round-to-nearest-even of the top 16 bits with NaNs quietened, as wh_f32_to_bf16. The
 * result is in the low 16 bits of each 32-bit lane. */
static inline __m256i bf16_round8(__m256i b)
{
	const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
	const __m256i inf = _mm256_set1_epi32(0x7F800000);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(b, 16), _mm256_set1_epi32(1));
	__m256i r = _mm256_add_epi32(b, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
	__m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(b, abs_mask), inf);
	__m256i q = _mm256_or_si256(b, _mm256_set1_epi32(0x400000));
	r = _mm256_blendv_epi8(r, q, is_nan);
	return _mm256_srli_epi32(r, 16);
}

void wh_f32_to_bf16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i a = bf16_round8(_mm256_loadu_si256((const __m256i *)(src + i)));
		__m256i b = bf16_round8(_mm256_loadu_si256((const __m256i *)(src + i + 8)));
		/* packus works per 128-bit lane: fix the order with a cross-lane permute. */
		__m256i p = _mm256_packus_epi32(a, b);
		p = _mm256_permute4x64_epi64(p, 0xD8);
		_mm256_storeu_si256((__m256i *)(dst + i), p);
	}
	for (; i < n; i++)
		dst[i] = wh_f32_to_bf16(src[i]);
}

void wh_round_f16_n_avx2(const float *src, float *dst, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(src + i);
		__m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
	for (; i < n; i++)
		dst[i] = wh_round_f16(src[i]);
}

void wh_round_bf16_n_avx2(const float *src, float *dst, size_t n)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256i r = bf16_round8(_mm256_loadu_si256((const __m256i *)(src + i)));
		_mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(r, 16));
	}
	for (; i < n; i++)
		dst[i] = wh_round_bf16(src[i]);
}
