/* AVX2 variant of the Transpose block in transpose-internal.h: eight rows in registers,
 * transposed by unpacks and shuffles. Called only when ctx->cpu->isa >= WH_ISA_AVX2. */
#include <immintrin.h>

#include "executor/ops/transpose-internal.h"

void wh_tr8x8_u32_avx2(const uint32_t *src, size_t sld, uint32_t *dst, size_t dld)
{
	__m256 r[8], t[8];
	for (int i = 0; i < 8; i++)
		r[i] = _mm256_loadu_ps((const float *)(src + (size_t)i * sld));
	t[0] = _mm256_unpacklo_ps(r[0], r[1]);
	t[1] = _mm256_unpackhi_ps(r[0], r[1]);
	t[2] = _mm256_unpacklo_ps(r[2], r[3]);
	t[3] = _mm256_unpackhi_ps(r[2], r[3]);
	t[4] = _mm256_unpacklo_ps(r[4], r[5]);
	t[5] = _mm256_unpackhi_ps(r[4], r[5]);
	t[6] = _mm256_unpacklo_ps(r[6], r[7]);
	t[7] = _mm256_unpackhi_ps(r[6], r[7]);
	r[0] = _mm256_shuffle_ps(t[0], t[2], _MM_SHUFFLE(1, 0, 1, 0));
	r[1] = _mm256_shuffle_ps(t[0], t[2], _MM_SHUFFLE(3, 2, 3, 2));
	r[2] = _mm256_shuffle_ps(t[1], t[3], _MM_SHUFFLE(1, 0, 1, 0));
	r[3] = _mm256_shuffle_ps(t[1], t[3], _MM_SHUFFLE(3, 2, 3, 2));
	r[4] = _mm256_shuffle_ps(t[4], t[6], _MM_SHUFFLE(1, 0, 1, 0));
	r[5] = _mm256_shuffle_ps(t[4], t[6], _MM_SHUFFLE(3, 2, 3, 2));
	r[6] = _mm256_shuffle_ps(t[5], t[7], _MM_SHUFFLE(1, 0, 1, 0));
	r[7] = _mm256_shuffle_ps(t[5], t[7], _MM_SHUFFLE(3, 2, 3, 2));
	/* r[k] now holds output rows k (low half) and k + 4 (high half) */
	for (int k = 0; k < 4; k++) {
		_mm256_storeu_ps((float *)(dst + (size_t)k * dld), _mm256_permute2f128_ps(r[k], r[k + 4], 0x20));
		_mm256_storeu_ps((float *)(dst + (size_t)(k + 4) * dld), _mm256_permute2f128_ps(r[k], r[k + 4], 0x31));
	}
}
