/* AVX-512 bulk conversions (compiled with -mavx512f -mavx512bw -mavx512dq -mavx512vl -mf16c;
 * called only when cpuid reports them). Tails use masked loads and stores. */
#include <immintrin.h>

#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"

static inline __mmask16 tail_mask(size_t left)
{
	return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

void wh_f32_to_f16_n_avx512(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 v = _mm512_maskz_loadu_ps(k, src + i);
		__m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm256_mask_storeu_epi16(dst + i, k, h);
	}
}

void wh_f16_to_f32_n_avx512(const uint16_t *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m256i h = _mm256_maskz_loadu_epi16(k, src + i);
		_mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(h));
	}
}

/* As bf16_round8 in numfmt-avx2.c: exact round-to-nearest-even, NaNs quietened. */
static inline __m512i bf16_round16(__m512i b)
{
	__m512i lsb = _mm512_and_si512(_mm512_srli_epi32(b, 16), _mm512_set1_epi32(1));
	__m512i r = _mm512_add_epi32(b, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
	__mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(b, _mm512_set1_epi32(0x7FFFFFFF)),
						   _mm512_set1_epi32(0x7F800000));
	r = _mm512_mask_or_epi32(r, is_nan, b, _mm512_set1_epi32(0x400000));
	return _mm512_srli_epi32(r, 16);
}

void wh_f32_to_bf16_n_avx512(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512i r = bf16_round16(_mm512_maskz_loadu_epi32(k, src + i));
		_mm256_mask_storeu_epi16(dst + i, k, _mm512_cvtepi32_epi16(r));
	}
}

void wh_round_f16_n_avx512(const float *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 v = _mm512_maskz_loadu_ps(k, src + i);
		__m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm512_mask_storeu_ps(dst + i, k, _mm512_cvtph_ps(h));
	}
}

void wh_round_bf16_n_avx512(const float *src, float *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512i r = bf16_round16(_mm512_maskz_loadu_epi32(k, src + i));
		_mm512_mask_storeu_epi32(dst + i, k, _mm512_slli_epi32(r, 16));
	}
}

/* The file's flags do not include AVX512_BF16, so this one function enables it. */
__attribute__((target("avx512bf16"))) void wh_f32_to_bf16_n_avx512bf16(const float *src, uint16_t *dst, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		__mmask16 k = tail_mask(n - i);
		__m512 v = _mm512_maskz_loadu_ps(k, src + i);
		__m256bh h = _mm512_cvtneps_pbh(v);
		_mm256_mask_storeu_epi16(dst + i, k, (__m256i)h);
	}
}
