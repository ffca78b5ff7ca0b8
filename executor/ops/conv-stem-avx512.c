/* Rows of a dense convolution with few multiply-adds an output (the CNN stems: 3 input
 * channels, K = 27 or 48) for AVX-512. The GEMM micro-kernels cover a row of 111 or 112
 * outputs with tiles of 32 or 48 columns (77-87 % of the lanes useful) and pay a tile's
 * loads, zeroing and stores for only 27 steps; here a tile is MT output channels by NV
 * vectors of 16 positions, NV chosen per call so that the vectors just cover the row (a
 * masked tail), and the result is stored straight into y. Each output is one fused
 * multiply-add chain from zero over k = 0..K-1 in order, then + bias, as in the GEMM
 * kernels (gemm-avx512.c), so the bits are the same. */
#include <immintrin.h>
#include <stdbool.h>

#include "executor/ops/gemm-internal.h"

#define WH_AI static inline __attribute__((always_inline))
#define WH_STEM_MT_MAX 16

/* MT channels (rows of w, ldw apart; only the first mr are real: the others repeat row
 * mr - 1 and are not stored, so the unrolled tile keeps its registers) by NV vectors whose
 * last one has the lanes of mask tail. */
WH_AI void tile(const int MT, const int NV, size_t mr, size_t K, const float *w, size_t ldw, const float *b,
		const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, __mmask16 tail, bool relu)
{
	const float *wr[WH_STEM_MT_MAX];
	_Pragma("GCC unroll 16")
	for (int r = 0; r < MT; r++)
		wr[r] = w + ((size_t)r < mr ? (size_t)r : mr - 1) * ldw;
	__m512 acc[WH_STEM_MT_MAX][7];
	_Pragma("GCC unroll 16")
	for (int r = 0; r < MT; r++)
		_Pragma("GCC unroll 7")
		for (int v = 0; v < NV; v++)
			acc[r][v] = _mm512_setzero_ps();
	for (size_t k = 0; k < K; k++) {
		const float *bp = b + boff[k];
		__m512 bv[7];
		_Pragma("GCC unroll 7")
		for (int v = 0; v < NV; v++)
			bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(tail, bp + 16 * v) : _mm512_loadu_ps(bp + 16 * v);
		_Pragma("GCC unroll 16")
		for (int r = 0; r < MT; r++) {
			__m512 av = _mm512_set1_ps(wr[r][k]);
			_Pragma("GCC unroll 7")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
		}
	}
	_Pragma("GCC unroll 16")
	for (int r = 0; r < MT; r++) {
		if ((size_t)r >= mr)
			break;
		if (bias) {
			__m512 bb = _mm512_set1_ps(bias[r]);
			_Pragma("GCC unroll 7")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_add_ps(acc[r][v], bb);
		}
		/* the fused Relu's vector step (elementwise-avx512.c): 0 > x ? 0 : x */
		if (relu) {
			_Pragma("GCC unroll 7")
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_max_ps(_mm512_setzero_ps(), acc[r][v]);
		}
		_Pragma("GCC unroll 7")
		for (int v = 0; v < NV; v++) {
			if (v == NV - 1)
				_mm512_mask_storeu_ps(c + (size_t)r * ldc + 16 * v, tail, acc[r][v]);
			else
				_mm512_storeu_ps(c + (size_t)r * ldc + 16 * v, acc[r][v]);
		}
	}
}

/* One segment of nv vectors (1..7) for all m channels, MT at a time (about 28
 * accumulators: 4 for 6 or 7 vectors, 16 for one). */
#define WH_STEM_SEG(NV, MT)                                                                              \
	static void seg##NV(size_t m, size_t K, const float *w, size_t ldw, const float *b,                   \
			    const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, __mmask16 tail,        \
			    bool relu)                                                                           \
	{                                                                                                    \
		for (size_t i = 0; i < m; i += MT) {                                                          \
			size_t mr = m - i < MT ? m - i : MT;                                                  \
			tile(MT, NV, mr, K, w + i * ldw, ldw, b, boff, c + i * ldc, ldc, bias ? bias + i : NULL, \
			     tail, relu);                                                                     \
		}                                                                                             \
	}
WH_STEM_SEG(1, 16)
WH_STEM_SEG(2, 12)
WH_STEM_SEG(3, 8)
WH_STEM_SEG(4, 6)
WH_STEM_SEG(5, 5)
WH_STEM_SEG(6, 4)
WH_STEM_SEG(7, 4)

void wh_conv_stem_row_avx512(size_t m, size_t n, size_t K, const float *w, size_t ldw, const float *b,
			     const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, bool relu)
{
	typedef void (*seg_fn)(size_t, size_t, const float *, size_t, const float *, const ptrdiff_t *, float *,
			       size_t, const float *, __mmask16, bool);
	static const seg_fn segs[8] = {NULL, seg1, seg2, seg3, seg4, seg5, seg6, seg7};
	if (!m || !n)
		return;
	/* the row in segments of at most 7 vectors, as even as whole vectors allow */
	size_t nvec = (n + 15) / 16, nseg = (nvec + 6) / 7, per = (nvec + nseg - 1) / nseg;
	for (size_t j = 0; j < n; j += 16 * per) {
		size_t cols = n - j < 16 * per ? n - j : 16 * per, nv = (cols + 15) / 16;
		size_t rem = cols - 16 * (nv - 1);
		__mmask16 tail = (__mmask16)(rem == 16 ? 0xffffu : (1u << rem) - 1u);
		segs[nv](m, K, w, ldw, b + j, boff, c + j, ldc, bias, tail, relu);
	}
}

void wh_deinterleave4_avx512(const float *src, size_t n, float *p0, float *p1, float *p2, float *p3)
{
	float *dst[4] = {p0, p1, p2, p3};
	size_t q = 0;
	for (; q + 16 <= n; q += 16) {
		const float *s = src + 4 * q;
		__m512 v0 = _mm512_loadu_ps(s), v1 = _mm512_loadu_ps(s + 16);
		__m512 v2 = _mm512_loadu_ps(s + 32), v3 = _mm512_loadu_ps(s + 48);
		for (int ph = 0; ph < 4; ph++) {
			/* lanes 0..7: elements 4i + ph of the 32 floats of (a, b) */
			__m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0),
						       _mm512_set1_epi32(ph));
			__m512 lo = _mm512_permutex2var_ps(v0, idx, v1), hi = _mm512_permutex2var_ps(v2, idx, v3);
			_mm512_storeu_ps(dst[ph] + q, _mm512_shuffle_f32x4(lo, hi, 0x44));
		}
	}
	for (; q < n; q++)
		for (int ph = 0; ph < 4; ph++)
			dst[ph][q] = src[4 * q + ph];
}
