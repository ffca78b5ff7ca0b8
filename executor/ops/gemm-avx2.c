/* float32 GEMM micro-kernel for AVX2+FMA: up to 6 rows x 16 columns (12 accumulators), one
 * fused multiply-add per term in k order. Partial tiles read through masked loads (which
 * never fault on masked-out lanes) and write through a small stack tile, because masked
 * stores are slow on some AMD cores. */
#include <immintrin.h>
#include <string.h>

#include "executor/ops/gemm-internal.h"

#define WH_AI static inline __attribute__((always_inline))

WH_AI __m256 load8(int full, const float *p, __m256i m)
{
	return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}

WH_AI void ukr(const size_t MR, const int NV, const int FULL, size_t nr, size_t kc, const float *a,
	       const float *b, const ptrdiff_t *boff, float *c, size_t ldc, const float *bias,
	       unsigned flags, __m256i m0, __m256i m1)
{
	__m256 acc0[WH_SGEMM_MR_AVX2], acc1[WH_SGEMM_MR_AVX2];
	if (flags & WH_SGEMM_LOAD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = load8(FULL, c + r * ldc, m0);
			if (NV == 2)
				acc1[r] = load8(FULL, c + r * ldc + 8, m1);
		}
	} else {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = _mm256_setzero_ps();
			if (NV == 2)
				acc1[r] = _mm256_setzero_ps();
		}
	}
	for (size_t k = 0; k < kc; k++) {
		const float *bp = b + boff[k];
		__m256 b0 = load8(FULL, bp, m0);
		__m256 b1 = _mm256_setzero_ps();
		if (NV == 2)
			b1 = load8(FULL, bp + 8, m1);
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m256 av = _mm256_broadcast_ss(a + r);
			acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
			if (NV == 2)
				acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
		}
		a += MR;
	}
	if (flags & WH_SGEMM_BIAS) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m256 bv = _mm256_broadcast_ss(bias + r);
			acc0[r] = _mm256_add_ps(acc0[r], bv);
			if (NV == 2)
				acc1[r] = _mm256_add_ps(acc1[r], bv);
		}
	}
	if (FULL) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			_mm256_storeu_ps(c + r * ldc, acc0[r]);
			if (NV == 2)
				_mm256_storeu_ps(c + r * ldc + 8, acc1[r]);
		}
	} else {
		float tile[16];
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			_mm256_storeu_ps(tile, acc0[r]);
			if (NV == 2)
				_mm256_storeu_ps(tile + 8, acc1[r]);
			memcpy(c + r * ldc, tile, nr * sizeof(float));
		}
	}
}

typedef void (*uk_fn)(size_t nr, size_t kc, const float *a, const float *b, const ptrdiff_t *boff,
		      float *c, size_t ldc, const float *bias, unsigned flags, __m256i m0, __m256i m1);

#define WH_UK(MR, NV, FULL)                                                                      \
	static void uk_##MR##_##NV##_##FULL(size_t nr, size_t kc, const float *a, const float *b,  \
					    const ptrdiff_t *boff, float *c, size_t ldc,           \
					    const float *bias, unsigned flags, __m256i m0,         \
					    __m256i m1)                                            \
	{                                                                                        \
		ukr(MR, NV, FULL, nr, kc, a, b, boff, c, ldc, bias, flags, m0, m1);              \
	}
#define WH_UK3(MR) WH_UK(MR, 1, 0) WH_UK(MR, 2, 0) WH_UK(MR, 2, 1)
WH_UK3(1) WH_UK3(2) WH_UK3(3) WH_UK3(4) WH_UK3(5) WH_UK3(6)

/* [mr-1][0: partial, up to 8 columns; 1: partial, 9..15; 2: all 16] */
static const uk_fn table[WH_SGEMM_MR_AVX2][3] = {
	{uk_1_1_0, uk_1_2_0, uk_1_2_1}, {uk_2_1_0, uk_2_2_0, uk_2_2_1},
	{uk_3_1_0, uk_3_2_0, uk_3_2_1}, {uk_4_1_0, uk_4_2_0, uk_4_2_1},
	{uk_5_1_0, uk_5_2_0, uk_5_2_1}, {uk_6_1_0, uk_6_2_0, uk_6_2_1},
};

void wh_sgemm_ukernel_avx2(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			   const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags)
{
	if (mr == 0 || nr == 0)
		return;
	int32_t lanes[16];
	for (int j = 0; j < 16; j++)
		lanes[j] = (size_t)j < nr ? -1 : 0;
	__m256i m0 = _mm256_loadu_si256((const __m256i *)lanes);
	__m256i m1 = _mm256_loadu_si256((const __m256i *)(lanes + 8));
	int v = nr >= 16 ? 2 : nr > 8 ? 1 : 0;
	table[mr - 1][v](nr, kc, a, b, boff, c, ldc, bias, flags, m0, m1);
}
