/* float32 GEMM micro-kernel for AVX2+FMA: up to 6 rows x 16 columns (12 accumulators), one
 * fused multiply-add per term in k order. Partial tiles read through masked loads (which
 * never fault on masked-out lanes) and write through a small stack tile, because masked
 * stores are slow on some AMD cores. Also the single-row kernel in MLAS's order (no fused
 * multiply-add: the same bits as wh_sgemm_m1_ref). */
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
	if (flags & WH_SGEMM_ADD_C) {
		_Pragma("GCC unroll 16")
		for (size_t r = 0; r < MR; r++) {
			acc0[r] = _mm256_add_ps(acc0[r], load8(FULL, c + r * ldc, m0));
			if (NV == 2)
				acc1[r] = _mm256_add_ps(acc1[r], load8(FULL, c + r * ldc + 8, m1));
		}
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

/* Columns [j, j + 8 * NV) of the single-row product (masks m0/m1 unless FULL). */
WH_AI void m1_cols(const int NV, const int FULL, size_t nr, size_t j, size_t K, const float *a, const float *b,
		   const ptrdiff_t *boff, float *c, const float *bias, __m256i m0, __m256i m1)
{
	__m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
	size_t k = 0;
#define WH_P(kk, v) _mm256_mul_ps(_mm256_broadcast_ss(a + (kk)), load8(FULL, b + boff[kk] + j + 8 * v, v ? m1 : m0))
	for (; k + 4 <= K; k += 4) {
		__m256 t0 = _mm256_add_ps(WH_P(k, 0), WH_P(k + 1, 0));
		t0 = _mm256_add_ps(t0, WH_P(k + 2, 0));
		t0 = _mm256_add_ps(t0, WH_P(k + 3, 0));
		acc0 = _mm256_add_ps(t0, acc0);
		if (NV == 2) {
			__m256 t1 = _mm256_add_ps(WH_P(k, 1), WH_P(k + 1, 1));
			t1 = _mm256_add_ps(t1, WH_P(k + 2, 1));
			t1 = _mm256_add_ps(t1, WH_P(k + 3, 1));
			acc1 = _mm256_add_ps(t1, acc1);
		}
	}
	if (K - k >= 2) {
		acc0 = _mm256_add_ps(_mm256_add_ps(WH_P(k, 0), WH_P(k + 1, 0)), acc0);
		if (NV == 2)
			acc1 = _mm256_add_ps(_mm256_add_ps(WH_P(k, 1), WH_P(k + 1, 1)), acc1);
		k += 2;
	}
	if (K - k == 1) {
		acc0 = _mm256_add_ps(WH_P(k, 0), acc0);
		if (NV == 2)
			acc1 = _mm256_add_ps(WH_P(k, 1), acc1);
	}
#undef WH_P
	if (bias) {
		acc0 = _mm256_add_ps(acc0, _mm256_broadcast_ss(bias));
		acc1 = _mm256_add_ps(acc1, _mm256_broadcast_ss(bias));
	}
	if (FULL) {
		_mm256_storeu_ps(c + j, acc0);
		if (NV == 2)
			_mm256_storeu_ps(c + j + 8, acc1);
	} else {
		float tile[16];
		_mm256_storeu_ps(tile, acc0);
		_mm256_storeu_ps(tile + 8, acc1);
		memcpy(c + j, tile, nr * sizeof(float));
	}
}

void wh_sgemm_m1_avx2(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		      const float *bias)
{
	__m256i ones = _mm256_set1_epi32(-1);
	size_t j = 0;
	for (; j + 16 <= n; j += 16)
		m1_cols(2, 1, 16, j, K, a, b, boff, c, bias, ones, ones);
	if (j < n) {
		size_t r = n - j;
		int32_t lanes[16];
		for (size_t i = 0; i < 16; i++)
			lanes[i] = i < r ? -1 : 0;
		__m256i m0 = _mm256_loadu_si256((const __m256i *)lanes);
		__m256i m1 = _mm256_loadu_si256((const __m256i *)(lanes + 8));
		if (r > 8)
			m1_cols(2, 0, r, j, K, a, b, boff, c, bias, m0, m1);
		else
			m1_cols(1, 0, r, j, K, a, b, boff, c, bias, m0, m1);
	}
}

/* d[k*mr + r] = s[r*rsa + k]: rows in groups of 4, columns in groups of 4, each 4x4 block
 * transposed in registers and stored as 4 runs of 4; what is left (rows past the last
 * group of 4, columns past the last 4) element by element. */
void wh_sgemm_pack_panel_avx2(size_t mr, size_t K, const float *s, size_t rsa, float *d)
{
	size_t r0 = 0;
	for (; r0 + 4 <= mr; r0 += 4) {
		const float *s0 = s + r0 * rsa, *s1 = s0 + rsa, *s2 = s1 + rsa, *s3 = s2 + rsa;
		size_t k = 0;
		for (; k + 4 <= K; k += 4) {
			__m128 a0 = _mm_loadu_ps(s0 + k), a1 = _mm_loadu_ps(s1 + k);
			__m128 a2 = _mm_loadu_ps(s2 + k), a3 = _mm_loadu_ps(s3 + k);
			_MM_TRANSPOSE4_PS(a0, a1, a2, a3);
			float *o = d + k * mr + r0;
			_mm_storeu_ps(o, a0);
			_mm_storeu_ps(o + mr, a1);
			_mm_storeu_ps(o + 2 * mr, a2);
			_mm_storeu_ps(o + 3 * mr, a3);
		}
		for (; k < K; k++) {
			float *o = d + k * mr + r0;
			o[0] = s0[k];
			o[1] = s1[k];
			o[2] = s2[k];
			o[3] = s3[k];
		}
	}
	for (; r0 < mr; r0++)
		for (size_t k = 0; k < K; k++)
			d[k * mr + r0] = s[r0 * rsa + k];
}
