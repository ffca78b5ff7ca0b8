/* float32 GEMM micro-kernels for AVX-512: up to 12 rows x 32 columns or 8 rows x 48
 * columns (24 accumulators either way), one fused multiply-add per term in k order: both
 * give every element the same chain, so the same bits. Column tails use masked loads and stores,
 * so the kernel never touches memory outside the tile. Also the single-row kernel in
 * MLAS's order (no fused multiply-add: the same bits as wh_sgemm_m1_ref). */
#include <immintrin.h>

#include "executor/ops/gemm-internal.h"

#define WH_AI static inline __attribute__((always_inline))

WH_AI void ukr(const size_t MR, const int NV, size_t kc, const float *a, const float *b,
	       const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags,
	       __mmask16 m0, __mmask16 m1, __mmask16 m2)
{
	const __mmask16 m[3] = {m0, m1, m2};
	/* acc[r][v]: row r, columns 16v..16v+15; NV and MR are constants in every caller */
	__m512 acc[WH_SGEMM_MR_AVX512][3];
	if (flags & WH_SGEMM_LOAD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++)
			_Pragma("GCC unroll 3")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_maskz_loadu_ps(m[v], c + r * ldc + 16 * v);
	} else {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++)
			_Pragma("GCC unroll 3")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_setzero_ps();
	}
	for (size_t k = 0; k < kc; k++) {
		const float *bp = b + boff[k];
		__m512 bv[3];
		_Pragma("GCC unroll 3")
		for (int v = 0; v < NV; v++)
			bv[v] = _mm512_maskz_loadu_ps(m[v], bp + 16 * v);
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m512 av = _mm512_set1_ps(a[r]);
			_Pragma("GCC unroll 3")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
		}
		a += MR;
	}
	if (flags & WH_SGEMM_ADD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++)
			_Pragma("GCC unroll 3")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_add_ps(acc[r][v], _mm512_maskz_loadu_ps(m[v], c + r * ldc + 16 * v));
	}
	if (flags & WH_SGEMM_BIAS) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			__m512 bb = _mm512_set1_ps(bias[r]);
			_Pragma("GCC unroll 3")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_add_ps(acc[r][v], bb);
		}
	}
	_Pragma("GCC unroll 16")
	for (size_t r = 0; r < MR; r++)
		_Pragma("GCC unroll 3")
		for (int v = 0; v < NV; v++)
			_mm512_mask_storeu_ps(c + r * ldc + 16 * v, m[v], acc[r][v]);
}

typedef void (*uk_fn)(size_t kc, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		      size_t ldc, const float *bias, unsigned flags, __mmask16 m0, __mmask16 m1, __mmask16 m2);

#define WH_UK(MR, NV)                                                                              \
	static void uk_##MR##_##NV(size_t kc, const float *a, const float *b, const ptrdiff_t *boff, \
				   float *c, size_t ldc, const float *bias, unsigned flags,        \
				   __mmask16 m0, __mmask16 m1, __mmask16 m2)                       \
	{                                                                                          \
		ukr(MR, NV, kc, a, b, boff, c, ldc, bias, flags, m0, m1, m2);                      \
	}
#define WH_UK2(MR) WH_UK(MR, 1) WH_UK(MR, 2)
#define WH_UK3(MR) WH_UK(MR, 1) WH_UK(MR, 2) WH_UK(MR, 3)
WH_UK3(1) WH_UK3(2) WH_UK3(3) WH_UK3(4) WH_UK3(5) WH_UK3(6)
WH_UK3(7) WH_UK3(8) WH_UK2(9) WH_UK2(10) WH_UK2(11) WH_UK2(12)

static const uk_fn table[WH_SGEMM_MR_AVX512][2] = {
	{uk_1_1, uk_1_2},   {uk_2_1, uk_2_2},   {uk_3_1, uk_3_2},   {uk_4_1, uk_4_2},
	{uk_5_1, uk_5_2},   {uk_6_1, uk_6_2},   {uk_7_1, uk_7_2},   {uk_8_1, uk_8_2},
	{uk_9_1, uk_9_2},   {uk_10_1, uk_10_2}, {uk_11_1, uk_11_2}, {uk_12_1, uk_12_2},
};

static const uk_fn table_w[WH_SGEMM_MR_AVX512W][3] = {
	{uk_1_1, uk_1_2, uk_1_3}, {uk_2_1, uk_2_2, uk_2_3}, {uk_3_1, uk_3_2, uk_3_3},
	{uk_4_1, uk_4_2, uk_4_3}, {uk_5_1, uk_5_2, uk_5_3}, {uk_6_1, uk_6_2, uk_6_3},
	{uk_7_1, uk_7_2, uk_7_3}, {uk_8_1, uk_8_2, uk_8_3},
};

/* The lane masks of nr columns in vectors of 16. */
static void col_masks(size_t nr, __mmask16 *m)
{
	for (size_t v = 0; v < 3; v++) {
		size_t lo = 16 * v;
		m[v] = nr >= lo + 16 ? (__mmask16)0xffff : nr > lo ? (__mmask16)((1u << (nr - lo)) - 1) : 0;
	}
}

void wh_sgemm_ukernel_avx512(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			     const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags)
{
	if (mr == 0 || nr == 0)
		return;
	__mmask16 m[3];
	col_masks(nr, m);
	table[mr - 1][nr > 16](kc, a, b, boff, c, ldc, bias, flags, m[0], m[1], 0);
}

void wh_sgemm_ukernel_avx512w(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			      const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags)
{
	if (mr == 0 || nr == 0)
		return;
	__mmask16 m[3];
	col_masks(nr, m);
	table_w[mr - 1][(nr - 1) / 16](kc, a, b, boff, c, ldc, bias, flags, m[0], m[1], m[2]);
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
