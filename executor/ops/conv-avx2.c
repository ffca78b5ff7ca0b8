/* Depthwise convolution plane kernel for AVX2+FMA: blocks of up to 4 output rows x 16
 * columns (or 8 rows x 8 columns), 8 independent accumulator chains, one fused
 * multiply-add per tap in (kh, kw) order. Column tails read through masked loads and are
 * written through a stack tile. */
#include <immintrin.h>
#include <string.h>

#include "executor/ops/conv-internal.h"

#define WH_AI static inline __attribute__((always_inline))

WH_AI void dw_block(const size_t RB, const int NV, const struct wh_dw_plane *p, size_t oh0,
		    size_t ow0, size_t nr, __m256i m0, __m256i m1)
{
	__m256 acc0[8], acc1[8];
	_Pragma("GCC unroll 8")
	for (size_t r = 0; r < RB; r++) {
		acc0[r] = _mm256_setzero_ps();
		acc1[r] = _mm256_setzero_ps();
	}
	const float *w = p->w;
	for (size_t kh = 0; kh < p->kh; kh++) {
		const float *row = p->x + (oh0 * p->sh + kh * p->dh) * p->row_stride + ow0;
		size_t rstep = p->sh * p->row_stride;
		for (size_t kw = 0; kw < p->kw; kw++) {
			size_t t = kw * p->dw;
			const float *src = row + (t % p->sw) * p->wq + t / p->sw;
			__m256 wv = _mm256_broadcast_ss(w++);
			_Pragma("GCC unroll 8")
			for (size_t r = 0; r < RB; r++) {
				acc0[r] = _mm256_fmadd_ps(wv, _mm256_maskload_ps(src + r * rstep, m0), acc0[r]);
				if (NV == 2)
					acc1[r] = _mm256_fmadd_ps(wv, _mm256_maskload_ps(src + r * rstep + 8, m1), acc1[r]);
			}
		}
	}
	__m256 bv = _mm256_broadcast_ss(&p->bias);
	_Pragma("GCC unroll 8")
	for (size_t r = 0; r < RB; r++) {
		float *y = p->y + (oh0 + r) * p->ow + ow0;
		float tile[16];
		_mm256_storeu_ps(tile, _mm256_add_ps(acc0[r], bv));
		if (NV == 2)
			_mm256_storeu_ps(tile + 8, _mm256_add_ps(acc1[r], bv));
		memcpy(y, tile, nr * sizeof(float));
	}
}

typedef void (*blk_fn)(const struct wh_dw_plane *p, size_t oh0, size_t ow0, size_t nr, __m256i m0,
		       __m256i m1);

#define WH_BLK(RB, NV)                                                                            \
	static void blk_##RB##_##NV(const struct wh_dw_plane *p, size_t oh0, size_t ow0, size_t nr, \
				    __m256i m0, __m256i m1)                                       \
	{                                                                                         \
		dw_block(RB, NV, p, oh0, ow0, nr, m0, m1);                                        \
	}
WH_BLK(1, 1) WH_BLK(2, 1) WH_BLK(3, 1) WH_BLK(4, 1) WH_BLK(5, 1) WH_BLK(6, 1) WH_BLK(7, 1) WH_BLK(8, 1)
WH_BLK(1, 2) WH_BLK(2, 2) WH_BLK(3, 2) WH_BLK(4, 2)

static const blk_fn blk1[8] = {blk_1_1, blk_2_1, blk_3_1, blk_4_1, blk_5_1, blk_6_1, blk_7_1, blk_8_1};
static const blk_fn blk2[4] = {blk_1_2, blk_2_2, blk_3_2, blk_4_2};

void wh_dwconv_plane_avx2(const struct wh_dw_plane *p)
{
	for (size_t ow0 = 0; ow0 < p->ow; ow0 += 16) {
		size_t nr = p->ow - ow0 < 16 ? p->ow - ow0 : 16;
		int32_t lanes[16];
		for (size_t j = 0; j < 16; j++)
			lanes[j] = j < nr ? -1 : 0;
		__m256i m0 = _mm256_loadu_si256((const __m256i *)lanes);
		__m256i m1 = _mm256_loadu_si256((const __m256i *)(lanes + 8));
		size_t rbmax = nr > 8 ? 4 : 8;
		for (size_t oh0 = 0; oh0 < p->oh; oh0 += rbmax) {
			size_t rb = p->oh - oh0 < rbmax ? p->oh - oh0 : rbmax;
			if (nr > 8)
				blk2[rb - 1](p, oh0, ow0, nr, m0, m1);
			else
				blk1[rb - 1](p, oh0, ow0, nr, m0, m1);
		}
	}
}

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
