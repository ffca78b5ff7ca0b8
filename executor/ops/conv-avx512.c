/* AVX-512 helpers of the float32 convolutions: the stride-2 phase split of input rows and
 * the interleaved stores of 2-wide ConvTranspose kernels (pure data movement and one add
 * per element, so they match the scalar code bit for bit). */
#include <immintrin.h>
#include "executor/ops/conv-internal.h"

void wh_deinterleave2_avx512(const float *src, size_t n, float *even, float *odd)
{
	const __m512i ie = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i io = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 a = _mm512_loadu_ps(src + 2 * i), b = _mm512_loadu_ps(src + 2 * i + 16);
		_mm512_storeu_ps(even + i, _mm512_permutex2var_ps(a, ie, b));
		_mm512_storeu_ps(odd + i, _mm512_permutex2var_ps(a, io, b));
	}
	if (i < n) {
		/* the tail of rem < 16 pairs: masked loads and stores (a stride-2 conv's rows of
		 * 27 or 55 pairs spent more in the scalar tail than in the vectors) */
		size_t rem = n - i, lo = 2 * rem < 16 ? 2 * rem : 16;
		__mmask16 ma = (__mmask16)((1u << lo) - 1u), mb = (__mmask16)((1u << (2 * rem - lo)) - 1u);
		__mmask16 mo = (__mmask16)((1u << rem) - 1u);
		__m512 a = _mm512_maskz_loadu_ps(ma, src + 2 * i), b = _mm512_maskz_loadu_ps(mb, src + 2 * i + 16);
		_mm512_mask_storeu_ps(even + i, mo, _mm512_permutex2var_ps(a, ie, b));
		_mm512_mask_storeu_ps(odd + i, mo, _mm512_permutex2var_ps(a, io, b));
	}
}

void wh_interleave2_avx512(const float *c0, const float *c1, float bias, size_t n, float *dst)
{
	const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
	const __m512 bv = _mm512_set1_ps(bias);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 a = _mm512_add_ps(bv, _mm512_loadu_ps(c0 + i)), b = _mm512_add_ps(bv, _mm512_loadu_ps(c1 + i));
		_mm512_storeu_ps(dst + 2 * i, _mm512_permutex2var_ps(a, lo, b));
		_mm512_storeu_ps(dst + 2 * i + 16, _mm512_permutex2var_ps(a, hi, b));
	}
	for (; i < n; i++) {
		dst[2 * i] = bias + c0[i];
		dst[2 * i + 1] = bias + c1[i];
	}
}
