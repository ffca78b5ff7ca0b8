/* Depthwise convolution plane kernel for AVX-512: blocks of up to 4 output rows x 32
 * columns (or 8 rows x 16 columns) keep 8 independent accumulator chains; each tap is one
 * fused multiply-add per output, taps in (kh, kw) order. Masked loads and stores cover
 * the column tail without touching memory outside the plane. */
#include <immintrin.h>

#include "executor/ops/conv-internal.h"

#define WH_AI static inline __attribute__((always_inline))

WH_AI void dw_block(const size_t RB, const int NV, const struct wh_dw_plane *p, size_t oh0,
		    size_t ow0, __mmask16 m0, __mmask16 m1)
{
	__m512 acc0[8], acc1[8];
	_Pragma("GCC unroll 8")
	for (size_t r = 0; r < RB; r++) {
		acc0[r] = _mm512_setzero_ps();
		acc1[r] = _mm512_setzero_ps();
	}
	const float *w = p->w;
	for (size_t kh = 0; kh < p->kh; kh++) {
		const float *row = p->x + (oh0 * p->sh + kh * p->dh) * p->row_stride + ow0;
		size_t rstep = p->sh * p->row_stride;
		for (size_t kw = 0; kw < p->kw; kw++) {
			size_t t = kw * p->dw;
			const float *src = row + (t % p->sw) * p->wq + t / p->sw;
			__m512 wv = _mm512_set1_ps(*w++);
			_Pragma("GCC unroll 8")
			for (size_t r = 0; r < RB; r++) {
				acc0[r] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m0, src + r * rstep), acc0[r]);
				if (NV == 2)
					acc1[r] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(m1, src + r * rstep + 16), acc1[r]);
			}
		}
	}
	__m512 bv = _mm512_set1_ps(p->bias);
	_Pragma("GCC unroll 8")
	for (size_t r = 0; r < RB; r++) {
		float *y = p->y + (oh0 + r) * p->ow + ow0;
		_mm512_mask_storeu_ps(y, m0, _mm512_add_ps(acc0[r], bv));
		if (NV == 2)
			_mm512_mask_storeu_ps(y + 16, m1, _mm512_add_ps(acc1[r], bv));
	}
}

typedef void (*blk_fn)(const struct wh_dw_plane *p, size_t oh0, size_t ow0, __mmask16 m0, __mmask16 m1);

#define WH_BLK(RB, NV)                                                                             \
	static void blk_##RB##_##NV(const struct wh_dw_plane *p, size_t oh0, size_t ow0, __mmask16 m0, \
				    __mmask16 m1)                                                  \
	{                                                                                          \
		dw_block(RB, NV, p, oh0, ow0, m0, m1);                                             \
	}
WH_BLK(1, 1) WH_BLK(2, 1) WH_BLK(3, 1) WH_BLK(4, 1) WH_BLK(5, 1) WH_BLK(6, 1) WH_BLK(7, 1) WH_BLK(8, 1)
WH_BLK(1, 2) WH_BLK(2, 2) WH_BLK(3, 2) WH_BLK(4, 2)

static const blk_fn blk1[8] = {blk_1_1, blk_2_1, blk_3_1, blk_4_1, blk_5_1, blk_6_1, blk_7_1, blk_8_1};
static const blk_fn blk2[4] = {blk_1_2, blk_2_2, blk_3_2, blk_4_2};

void wh_dwconv_plane_avx512(const struct wh_dw_plane *p)
{
	for (size_t ow0 = 0; ow0 < p->ow; ow0 += 32) {
		size_t nr = p->ow - ow0 < 32 ? p->ow - ow0 : 32;
		__mmask16 m0 = nr >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << nr) - 1);
		__mmask16 m1 = nr >= 32 ? (__mmask16)0xffff : nr > 16 ? (__mmask16)((1u << (nr - 16)) - 1) : 0;
		size_t rbmax = nr > 16 ? 4 : 8;
		for (size_t oh0 = 0; oh0 < p->oh; oh0 += rbmax) {
			size_t rb = p->oh - oh0 < rbmax ? p->oh - oh0 : rbmax;
			if (nr > 16)
				blk2[rb - 1](p, oh0, ow0, m0, m1);
			else
				blk1[rb - 1](p, oh0, ow0, m0, m1);
		}
	}
}

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
	for (; i < n; i++) {
		even[i] = src[2 * i];
		odd[i] = src[2 * i + 1];
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
