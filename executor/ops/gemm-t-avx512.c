/* The store of the transposed GEMM (gemm-internal.h, wh_sgemm_t_store_avx512): a tile of
 * C^T (positions by output channels) written back as C (output channels by positions), in
 * blocks of 16 x 16 transposed in registers, the bias added on the way. A pure copy plus one
 * add per element: the same bits as adding the bias in the GEMM. */
#include <immintrin.h>

#include "executor/ops/gemm-internal.h"

static inline __mmask16 lanes(size_t n)
{
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* r[i] (row i: 16 channels of one position) becomes r[j] (channel j: 16 positions). */
static inline void tr16(__m512 *r)
{
	__m512 t[16], u[16];
	_Pragma("GCC unroll 16")
	for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	/* u[4q + c], 128-bit lane L: rows 4q..4q+3 of column 4L + c */
	_Pragma("GCC unroll 4")
	for (int q = 0; q < 4; q++) {
		__m512 *tq = t + 4 * q, *uq = u + 4 * q;
		uq[0] = _mm512_shuffle_ps(tq[0], tq[2], 0x44);
		uq[1] = _mm512_shuffle_ps(tq[0], tq[2], 0xee);
		uq[2] = _mm512_shuffle_ps(tq[1], tq[3], 0x44);
		uq[3] = _mm512_shuffle_ps(tq[1], tq[3], 0xee);
	}
	/* t[c], t[4 + c]: rows 0..7 of columns c, 8 + c and 4 + c, 12 + c; t[8 + c], t[12 + c]:
	 * the same for rows 8..15 */
	_Pragma("GCC unroll 4")
	for (int c = 0; c < 4; c++) {
		t[c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x88);
		t[4 + c] = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xdd);
		t[8 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x88);
		t[12 + c] = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xdd);
	}
	_Pragma("GCC unroll 4")
	for (int c = 0; c < 4; c++) {
		r[c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0x88);
		r[8 + c] = _mm512_shuffle_f32x4(t[c], t[8 + c], 0xdd);
		r[4 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0x88);
		r[12 + c] = _mm512_shuffle_f32x4(t[4 + c], t[12 + c], 0xdd);
	}
}

void wh_sgemm_t_store_avx512(size_t np, size_t nm, const float *ct, size_t ldct, const float *bias, float *y,
			     size_t ldy)
{
	for (size_t m0 = 0; m0 < nm; m0 += 16) {
		size_t mw = nm - m0 < 16 ? nm - m0 : 16;
		__mmask16 mm = lanes(mw);
		for (size_t n0 = 0; n0 < np; n0 += 16) {
			size_t nw = np - n0 < 16 ? np - n0 : 16;
			__mmask16 nm16 = lanes(nw);
			__m512 r[16];
			_Pragma("GCC unroll 16")
			for (size_t i = 0; i < 16; i++)
				r[i] = i < nw ? _mm512_maskz_loadu_ps(mm, ct + (n0 + i) * ldct + m0) : _mm512_setzero_ps();
			tr16(r);
			for (size_t j = 0; j < mw; j++) {
				__m512 v = bias ? _mm512_add_ps(r[j], _mm512_set1_ps(bias[m0 + j])) : r[j];
				_mm512_mask_storeu_ps(y + (m0 + j) * ldy + n0, nm16, v);
			}
		}
	}
}
