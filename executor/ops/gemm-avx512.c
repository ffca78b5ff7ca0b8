/* float32 GEMM micro-kernel for AVX-512: up to 12 rows x 32 columns (24 accumulators),
 * one fused multiply-add per term in k order. Column tails use masked loads and stores,
 * so the kernel never touches memory outside the tile. Also the single-row kernel in
 * MLAS's order (no fused multiply-add: the same bits as wh_sgemm_m1_ref). */
#include <immintrin.h>

#include "executor/ops/gemm-internal.h"

#define WH_AI static inline __attribute__((always_inline))

WH_AI void ukr(const size_t MR, const int NV, size_t kc, const float *a, const float *b,
	       const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags,
	       __mmask16 m0, __mmask16 m1)
{
	__m512 acc0[WH_SGEMM_MR_AVX512], acc1[WH_SGEMM_MR_AVX512];
	if (flags & WH_SGEMM_LOAD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);
			if (NV == 2)
				acc1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);
		}
	} else {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = _mm512_setzero_ps();
			if (NV == 2)
				acc1[r] = _mm512_setzero_ps();
		}
	}
	for (size_t k = 0; k < kc; k++) {
		const float *bp = b + boff[k];
		__m512 b0 = _mm512_maskz_loadu_ps(m0, bp);
		__m512 b1 = _mm512_setzero_ps();
		if (NV == 2)
			b1 = _mm512_maskz_loadu_ps(m1, bp + 16);
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m512 av = _mm512_set1_ps(a[r]);
			acc0[r] = _mm512_fmadd_ps(av, b0, acc0[r]);
			if (NV == 2)
				acc1[r] = _mm512_fmadd_ps(av, b1, acc1[r]);
		}
		a += MR;
	}
	if (flags & WH_SGEMM_ADD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = _mm512_add_ps(acc0[r], _mm512_maskz_loadu_ps(m0, c + r * ldc));
			if (NV == 2)
				acc1[r] = _mm512_add_ps(acc1[r], _mm512_maskz_loadu_ps(m1, c + r * ldc + 16));
		}
	}
	if (flags & WH_SGEMM_BIAS) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m512 bv = _mm512_set1_ps(bias[r]);
			acc0[r] = _mm512_add_ps(acc0[r], bv);
			if (NV == 2)
				acc1[r] = _mm512_add_ps(acc1[r], bv);
		}
	}
	_Pragma("GCC unroll 16")
	for (size_t r = 0; r < MR; r++) {
		_mm512_mask_storeu_ps(c + r * ldc, m0, acc0[r]);
		if (NV == 2)
			_mm512_mask_storeu_ps(c + r * ldc + 16, m1, acc1[r]);
	}
}

typedef void (*uk_fn)(size_t kc, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		      size_t ldc, const float *bias, unsigned flags, __mmask16 m0, __mmask16 m1);

#define WH_UK(MR, NV)                                                                              \
	static void uk_##MR##_##NV(size_t kc, const float *a, const float *b, const ptrdiff_t *boff, \
				   float *c, size_t ldc, const float *bias, unsigned flags,        \
				   __mmask16 m0, __mmask16 m1)                                     \
	{                                                                                          \
		ukr(MR, NV, kc, a, b, boff, c, ldc, bias, flags, m0, m1);                          \
	}
#define WH_UK2(MR) WH_UK(MR, 1) WH_UK(MR, 2)
WH_UK2(1) WH_UK2(2) WH_UK2(3) WH_UK2(4) WH_UK2(5) WH_UK2(6)
WH_UK2(7) WH_UK2(8) WH_UK2(9) WH_UK2(10) WH_UK2(11) WH_UK2(12)

static const uk_fn table[WH_SGEMM_MR_AVX512][2] = {
	{uk_1_1, uk_1_2},   {uk_2_1, uk_2_2},   {uk_3_1, uk_3_2},   {uk_4_1, uk_4_2},
	{uk_5_1, uk_5_2},   {uk_6_1, uk_6_2},   {uk_7_1, uk_7_2},   {uk_8_1, uk_8_2},
	{uk_9_1, uk_9_2},   {uk_10_1, uk_10_2}, {uk_11_1, uk_11_2}, {uk_12_1, uk_12_2},
};

void wh_sgemm_ukernel_avx512(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			     const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags)
{
	if (mr == 0 || nr == 0)
		return;
	__mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1);
	__mmask16 m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
	table[mr - 1][nr > 16](kc, a, b, boff, c, ldc, bias, flags, m0, m1);
}

/* Columns [j, j + 16 * NV) (masks m0/m1) of the single-row product. */
WH_AI void m1_cols(const int NV, size_t j, size_t K, const float *a, const float *b, const ptrdiff_t *boff,
		   float *c, const float *bias, __mmask16 m0, __mmask16 m1)
{
	__m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
	size_t k = 0;
#define WH_P(kk, v) _mm512_mul_ps(_mm512_set1_ps(a[kk]), _mm512_maskz_loadu_ps(v ? m1 : m0, b + boff[kk] + j + 16 * v))
	for (; k + 4 <= K; k += 4) {
		__m512 t0 = _mm512_add_ps(WH_P(k, 0), WH_P(k + 1, 0));
		t0 = _mm512_add_ps(t0, WH_P(k + 2, 0));
		t0 = _mm512_add_ps(t0, WH_P(k + 3, 0));
		acc0 = _mm512_add_ps(t0, acc0);
		if (NV == 2) {
			__m512 t1 = _mm512_add_ps(WH_P(k, 1), WH_P(k + 1, 1));
			t1 = _mm512_add_ps(t1, WH_P(k + 2, 1));
			t1 = _mm512_add_ps(t1, WH_P(k + 3, 1));
			acc1 = _mm512_add_ps(t1, acc1);
		}
	}
	if (K - k >= 2) {
		acc0 = _mm512_add_ps(_mm512_add_ps(WH_P(k, 0), WH_P(k + 1, 0)), acc0);
		if (NV == 2)
			acc1 = _mm512_add_ps(_mm512_add_ps(WH_P(k, 1), WH_P(k + 1, 1)), acc1);
		k += 2;
	}
	if (K - k == 1) {
		acc0 = _mm512_add_ps(WH_P(k, 0), acc0);
		if (NV == 2)
			acc1 = _mm512_add_ps(WH_P(k, 1), acc1);
	}
#undef WH_P
	if (bias) {
		acc0 = _mm512_add_ps(acc0, _mm512_set1_ps(*bias));
		acc1 = _mm512_add_ps(acc1, _mm512_set1_ps(*bias));
	}
	_mm512_mask_storeu_ps(c + j, m0, acc0);
	if (NV == 2)
		_mm512_mask_storeu_ps(c + j + 16, m1, acc1);
}

void wh_sgemm_m1_avx512(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
			const float *bias)
{
	size_t j = 0;
	for (; j + 32 <= n; j += 32)
		m1_cols(2, j, K, a, b, boff, c, bias, (__mmask16)0xffff, (__mmask16)0xffff);
	if (j < n) {
		size_t r = n - j;
		__mmask16 m0 = r >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << r) - 1);
		__mmask16 m1 = r > 16 ? (__mmask16)((1u << (r - 16)) - 1) : 0;
		if (r > 16)
			m1_cols(2, j, K, a, b, boff, c, bias, m0, m1);
		else
			m1_cols(1, j, K, a, b, boff, c, bias, m0, 0);
	}
}
