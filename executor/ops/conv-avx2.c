/* AVX2 helpers of the float32 convolutions: the stride-2 phase split of input rows and
 * the interleaved stores of 2-wide ConvTranspose kernels (pure data movement and one add
 * per element, so they match the scalar code bit for bit). */
#include <immintrin.h>
#include <string.h>
#include "executor/ops/conv-internal.h"

void wh_deinterleave2_avx2(const float *src, size_t n, float *even, float *odd)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 a = _mm256_loadu_ps(src + 2 * i), b = _mm256_loadu_ps(src + 2 * i + 8);
		/* per 128-bit lane: a0 a2 b0 b2 | a4 a6 b4 b6, then order the 64-bit pairs */
		__m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
		__m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
		_mm256_storeu_ps(even + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0))));
		_mm256_storeu_ps(odd + i, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), _MM_SHUFFLE(3, 1, 2, 0))));
	}
	for (; i < n; i++) {
		even[i] = src[2 * i];
		odd[i] = src[2 * i + 1];
	}
}

void wh_interleave2_avx2(const float *c0, const float *c1, float bias, size_t n, float *dst)
{
	const __m256 bv = _mm256_set1_ps(bias);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 a = _mm256_add_ps(bv, _mm256_loadu_ps(c0 + i)), b = _mm256_add_ps(bv, _mm256_loadu_ps(c1 + i));
		/* per 128-bit lane: a0 b0 a1 b1 | a4 b4 a5 b5 and a2 b2 a3 b3 | a6 b6 a7 b7 */
		__m256 l = _mm256_unpacklo_ps(a, b), h = _mm256_unpackhi_ps(a, b);
		_mm256_storeu_ps(dst + 2 * i, _mm256_permute2f128_ps(l, h, 0x20));
		_mm256_storeu_ps(dst + 2 * i + 8, _mm256_permute2f128_ps(l, h, 0x31));
	}
	for (; i < n; i++) {
		dst[2 * i] = bias + c0[i];
		dst[2 * i + 1] = bias + c1[i];
	}
}
