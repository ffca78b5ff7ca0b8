/* AVX-512 direct depthwise planes (conv-internal.h, wh_conv_dw_planes_avx512): the taps read
 * the unpadded input with masked loads, the padding is the masked-off lanes (zero), so no
 * padded copy is made. The sums are wh_conv_dw_fma_ref's order (MLAS's single-row groups of
 * 4 taps, each group a chain of fused multiply-adds), the padding taking part as zero
 * inputs, so the bits are those of that reference. */
#include <immintrin.h>
#include <stdbool.h>
#include <string.h>

#include "executor/ops/conv-internal.h"

/* Lanes l with lo <= l < hi (clamped to [0, 16)). */
static inline __mmask16 range16(ptrdiff_t lo, ptrdiff_t hi)
{
	if (lo < 0)
		lo = 0;
	if (hi > 16)
		hi = 16;
	if (hi <= lo)
		return 0;
	return (__mmask16)((((uint32_t)1 << hi) - 1) & ~(((uint32_t)1 << lo) - 1));
}

static inline uint32_t range32(ptrdiff_t lo, ptrdiff_t hi)
{
	if (lo < 0)
		lo = 0;
	if (hi > 32)
		hi = 32;
	if (hi <= lo)
		return 0;
	uint64_t m = (((uint64_t)1 << hi) - 1) & ~(((uint64_t)1 << lo) - 1);
	return (uint32_t)m;
}

/* The sum of the products w[k] * X(k), k < KS, in wh_conv_dw_fma_ref's order, X(k) given by
 * the statement TAP (which sets xv from k), w[k] = (WP)[k]. */
#define WH_DW_SUM(KS, WP, TAP)                                                                 \
	do {                                                                               \
		size_t k_ = 0;                                                             \
		__m512 xv;                                                                 \
		for (; k_ + 4 <= (KS); k_ += 4) {                                          \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m512 t = _mm512_mul_ps(_mm512_set1_ps((WP)[k]), xv);                \
			k = k_ + 1;                                                        \
			TAP;                                                               \
			t = _mm512_fmadd_ps(_mm512_set1_ps((WP)[k]), xv, t);     \
			k = k_ + 2;                                                        \
			TAP;                                                               \
			t = _mm512_fmadd_ps(_mm512_set1_ps((WP)[k]), xv, t);     \
			k = k_ + 3;                                                        \
			TAP;                                                               \
			t = _mm512_fmadd_ps(_mm512_set1_ps((WP)[k]), xv, t);     \
			acc = _mm512_add_ps(t, acc);                                       \
		}                                                                          \
		if ((KS) - k_ >= 2) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m512 t = _mm512_mul_ps(_mm512_set1_ps((WP)[k]), xv);                \
			k = k_ + 1;                                                        \
			TAP;                                                               \
			t = _mm512_fmadd_ps(_mm512_set1_ps((WP)[k]), xv, t);     \
			acc = _mm512_add_ps(t, acc);                                       \
			k_ += 2;                                                           \
		}                                                                          \
		if ((KS) - k_ == 1) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			acc = _mm512_fmadd_ps(_mm512_set1_ps((WP)[k]), xv, acc); \
		}                                                                          \
	} while (0)

/* The same for two vectors side by side: TAP sets xv0 and xv1 from k, and each sum keeps
 * the order above (two independent chains, so one waits less on the other's adds). */
#define WH_DW_SUM2(KS, WP, TAP)                                                                \
	do {                                                                               \
		size_t k_ = 0;                                                             \
		__m512 xv0, xv1;                                                           \
		for (; k_ + 4 <= (KS); k_ += 4) {                                          \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m512 wk = _mm512_set1_ps((WP)[k]);                               \
			__m512 t0 = _mm512_mul_ps(wk, xv0), t1 = _mm512_mul_ps(wk, xv1);   \
			for (size_t j_ = 1; j_ < 4; j_++) {                                \
				k = k_ + j_;                                               \
				TAP;                                                       \
				wk = _mm512_set1_ps((WP)[k]);                              \
				t0 = _mm512_fmadd_ps(wk, xv0, t0);            \
				t1 = _mm512_fmadd_ps(wk, xv1, t1);            \
			}                                                                  \
			acc0 = _mm512_add_ps(t0, acc0);                                    \
			acc1 = _mm512_add_ps(t1, acc1);                                    \
		}                                                                          \
		if ((KS) - k_ >= 2) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m512 wk = _mm512_set1_ps((WP)[k]);                               \
			__m512 t0 = _mm512_mul_ps(wk, xv0), t1 = _mm512_mul_ps(wk, xv1);   \
			k = k_ + 1;                                                        \
			TAP;                                                               \
			wk = _mm512_set1_ps((WP)[k]);                                      \
			t0 = _mm512_fmadd_ps(wk, xv0, t0);                    \
			t1 = _mm512_fmadd_ps(wk, xv1, t1);                    \
			acc0 = _mm512_add_ps(t0, acc0);                                    \
			acc1 = _mm512_add_ps(t1, acc1);                                    \
			k_ += 2;                                                           \
		}                                                                          \
		if ((KS) - k_ == 1) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m512 wk = _mm512_set1_ps((WP)[k]);                               \
			acc0 = _mm512_fmadd_ps(wk, xv0, acc0);                \
			acc1 = _mm512_fmadd_ps(wk, xv1, acc1);                \
		}                                                                          \
	} while (0)

/* Unit strides and an output as wide as the input: output position p reads input p + a
 * constant per tap, so 16 consecutive positions (across rows) are one masked load; the
 * lanes' rows and columns decide which taps fall in the padding. The masks are the same for
 * every plane: they are computed for a block of vectors once, then every plane runs over the
 * block. */
#define WH_DW_MASKS 4096

static inline void wrap16(__m512i *col, __m512i *row, __m512i vow)
{
	for (;;) {
		__mmask16 over = _mm512_cmpge_epi32_mask(*col, vow);
		if (!over)
			break;
		*col = _mm512_mask_sub_epi32(*col, over, *col, vow);
		*row = _mm512_mask_add_epi32(*row, over, *row, _mm512_set1_epi32(1));
	}
}

static void planes_flat(const struct wh_dw_geom *g, size_t np, const float *x, const float *w, const float *bias,
			float *y)
{
	size_t KH = g->KH, KW = g->KW, KS = KH * KW, P = g->OH * g->OW, Pin = g->H * g->W;
	size_t nvec = (P + 15) / 16, vb = WH_DW_MASKS / KS;
	const __m512i vow = _mm512_set1_epi32((int)g->OW);
	/* lanes' output row and column, advanced by 16 positions a vector */
	__m512i col = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
	__m512i row = _mm512_setzero_si512();
	wrap16(&col, &row, vow);
	__mmask16 mt[WH_DW_MASKS];
	ptrdiff_t toff[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t kh = 0; kh < KH; kh++)
		for (size_t kw = 0; kw < KW; kw++)
			toff[kh * KW + kw] = ((ptrdiff_t)(kh * g->dh) - (ptrdiff_t)g->ph) * (ptrdiff_t)g->W +
					     (ptrdiff_t)(kw * g->dw) - (ptrdiff_t)g->pw;
	for (size_t v0 = 0; v0 < nvec; v0 += vb) {
		size_t v1 = v0 + vb < nvec ? v0 + vb : nvec;
		for (size_t v = v0; v < v1; v++) {
			__mmask16 live = range16(0, (ptrdiff_t)(P - 16 * v)), rm[WH_DW_MAXK], cm[WH_DW_MAXK];
			for (size_t kh = 0; kh < KH; kh++) {
				int lo = (int)g->ph - (int)(kh * g->dh); /* valid: lo <= row < lo + H */
				rm[kh] = _mm512_cmpge_epi32_mask(row, _mm512_set1_epi32(lo)) &
					 _mm512_cmplt_epi32_mask(row, _mm512_set1_epi32(lo + (int)g->H)) & live;
			}
			for (size_t kw = 0; kw < KW; kw++) {
				int lo = (int)g->pw - (int)(kw * g->dw);
				cm[kw] = _mm512_cmpge_epi32_mask(col, _mm512_set1_epi32(lo)) &
					 _mm512_cmplt_epi32_mask(col, _mm512_set1_epi32(lo + (int)g->W));
			}
			__mmask16 *mk = mt + (v - v0) * KS;
			for (size_t kh = 0; kh < KH; kh++)
				for (size_t kw = 0; kw < KW; kw++)
					mk[kh * KW + kw] = rm[kh] & cm[kw];
			col = _mm512_add_epi32(col, _mm512_set1_epi32(16));
			wrap16(&col, &row, vow);
		}
		for (size_t i = 0; i < np; i++) {
			const float *xc = x + i * Pin, *wc = w + i * KS;
			float *yc = y + i * P;
			const __m512 vbias = _mm512_set1_ps(bias ? bias[i] : 0.0f);
			size_t v = v0;
			for (; v + 2 <= v1; v += 2) {
				const __mmask16 *mk0 = mt + (v - v0) * KS, *mk1 = mk0 + KS;
				const float *xb = xc + 16 * v;
				__m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
				WH_DW_SUM2(KS, wc, {
					xv0 = _mm512_maskz_loadu_ps(mk0[k], xb + toff[k]);
					xv1 = _mm512_maskz_loadu_ps(mk1[k], xb + 16 + toff[k]);
				});
				if (bias) {
					acc0 = _mm512_add_ps(acc0, vbias);
					acc1 = _mm512_add_ps(acc1, vbias);
				}
				_mm512_mask_storeu_ps(yc + 16 * v, range16(0, (ptrdiff_t)(P - 16 * v)), acc0);
				_mm512_mask_storeu_ps(yc + 16 * v + 16, range16(0, (ptrdiff_t)(P - 16 * v - 16)), acc1);
			}
			if (v < v1) {
				const __mmask16 *mk = mt + (v - v0) * KS;
				const float *xb = xc + 16 * v;
				__m512 acc = _mm512_setzero_ps();
				WH_DW_SUM(KS, wc, xv = _mm512_maskz_loadu_ps(mk[k], xb + toff[k]));
				if (bias)
					acc = _mm512_add_ps(acc, vbias);
				_mm512_mask_storeu_ps(yc + 16 * v, range16(0, (ptrdiff_t)(P - 16 * v)), acc);
			}
		}
	}
}

/* Any other geometry with a column stride of 1 or 2: blocks of 32 output columns (two
 * vectors, two chains of adds; each output still sums in the single-row order), each block
 * down every output row. Which lanes of a tap fall in the padding columns depends only on
 * the block and the tap's kernel column, so the load masks are made once a block; a tap in
 * a padding row reads nothing (mask 0). At stride 2 a vector is the even lanes of 32 loaded
 * inputs. */
static void plane_rows(const struct wh_dw_geom *g, const float *x, const float *w, const float *bias, float *y)
{
	size_t KW = g->KW, KS = g->KH * KW;
	ptrdiff_t W = (ptrdiff_t)g->W, sw = (ptrdiff_t)g->sw;
	/* each tap's kernel row and column offset (no division in the loops) */
	unsigned char tr[WH_DW_MAXK * WH_DW_MAXK];
	ptrdiff_t tc[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t k = 0; k < KS; k++) {
		tr[k] = (unsigned char)(k / KW);
		tc[k] = (ptrdiff_t)((k % KW) * g->dw) - (ptrdiff_t)g->pw;
	}
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512 vb = _mm512_set1_ps(bias ? *bias : 0.0f);
	/* per tap, the lanes that read inside the row: vector 0 and vector 1 of the block (16
	 * bits each at stride 1, 32 at stride 2) */
	uint32_t m0[WH_DW_MAXK * WH_DW_MAXK], m1[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t ow0 = 0; ow0 < g->OW; ow0 += 32) {
		ptrdiff_t n0 = (ptrdiff_t)(g->OW - ow0 < 16 ? g->OW - ow0 : 16);
		ptrdiff_t n1 = g->OW - ow0 > 16 ? (ptrdiff_t)(g->OW - ow0 - 16 < 16 ? g->OW - ow0 - 16 : 16) : 0;
		ptrdiff_t base = sw * (ptrdiff_t)ow0;
		for (size_t k = 0; k < KS; k++) {
			ptrdiff_t c0 = base + tc[k], c1 = c0 + 16 * sw;
			if (sw == 1) {
				m0[k] = range16(-c0, n0 < W - c0 ? n0 : W - c0);
				m1[k] = range16(-c1, n1 < W - c1 ? n1 : W - c1);
			} else {
				m0[k] = range32(-c0, 2 * n0 - 1 < W - c0 ? 2 * n0 - 1 : W - c0);
				m1[k] = n1 ? range32(-c1, 2 * n1 - 1 < W - c1 ? 2 * n1 - 1 : W - c1) : 0;
			}
		}
		for (size_t oh = 0; oh < g->OH; oh++) {
			const float *rows[WH_DW_MAXK];
			uint32_t live[WH_DW_MAXK];
			for (size_t kh = 0; kh < g->KH; kh++) {
				ptrdiff_t ih = (ptrdiff_t)(oh * g->sh + kh * g->dh) - (ptrdiff_t)g->ph;
				bool in = ih >= 0 && ih < (ptrdiff_t)g->H;
				rows[kh] = (in ? x + ih * W : x) + base;
				live[kh] = in ? 0xffffffffu : 0;
			}
			float *yr = y + oh * g->OW + ow0;
			__m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
			if (n1 && sw == 1) {
				WH_DW_SUM2(KS, w, {
					const float *r = rows[tr[k]] + tc[k];
					uint32_t l = live[tr[k]];
					xv0 = _mm512_maskz_loadu_ps((__mmask16)(m0[k] & l), r);
					xv1 = _mm512_maskz_loadu_ps((__mmask16)(m1[k] & l), r + 16);
				});
			} else if (n1) {
				WH_DW_SUM2(KS, w, {
					const float *r = rows[tr[k]] + tc[k];
					uint32_t l0 = m0[k] & live[tr[k]];
					uint32_t l1 = m1[k] & live[tr[k]];
					xv0 = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)l0, r), even,
								     _mm512_maskz_loadu_ps((__mmask16)(l0 >> 16), r + 16));
					xv1 = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)l1, r + 32), even,
								     _mm512_maskz_loadu_ps((__mmask16)(l1 >> 16), r + 48));
				});
			} else if (sw == 1) {
				__m512 acc = acc0;
				WH_DW_SUM(KS, w, xv = _mm512_maskz_loadu_ps((__mmask16)(m0[k] & live[tr[k]]), rows[tr[k]] + tc[k]));
				acc0 = acc;
			} else {
				__m512 acc = acc0;
				WH_DW_SUM(KS, w, {
					const float *r = rows[tr[k]] + tc[k];
					uint32_t l0 = m0[k] & live[tr[k]];
					xv = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)l0, r), even,
								    _mm512_maskz_loadu_ps((__mmask16)(l0 >> 16), r + 16));
				});
				acc0 = acc;
			}
			if (bias) {
				acc0 = _mm512_add_ps(acc0, vb);
				acc1 = _mm512_add_ps(acc1, vb);
			}
			_mm512_mask_storeu_ps(yr, range16(0, n0), acc0);
			if (n1)
				_mm512_mask_storeu_ps(yr + 16, range16(0, n1), acc1);
		}
	}
}

/* Row and column strides of 1 or 2 without dilation: the plane is copied, a band of output
 * rows at a time, into its stride phases with the padding written as zeros (phase (a, b)
 * holds the padded input at rows a + sh*i and columns b + sw*j), each phase wq = OW +
 * (KW - 1) / sw columns wide. Output (oh, ow) reads tap (kh, kw) at phase (kh % sh, kw % sw),
 * position (oh + kh / sh) * wq + ow + kw / sw: flat output q = oh * wq + ow reads q plus a
 * constant per tap, so 16 consecutive q (across rows; (KW - 1) / sw gap columns a row are
 * computed and dropped) are one plain load per tap, with no masks, whatever the plane's
 * size. The padding is a zero product as in the reference. The band's outputs go to a
 * buffer of rows wq wide and then row by row to y. Phases and buffer live on the stack in
 * WH_DW_PHASE_FLOATS (the band sized to fit, and to stay in the first-level cache); false
 * (nothing written) when not even one output row fits. */
#define WH_DW_PHASE_FLOATS ((size_t)8192)

/* Phase rows r0 .. r0 + hb of the plane xc into ph (phases sub floats apart). At column
 * stride 2, one pair of loads of 32 inputs makes 16 columns of both column phases. */
static void phase_fill(const struct wh_dw_geom *g, const float *xc, float *ph, size_t r0, size_t hb, size_t wq,
		       size_t sub)
{
	ptrdiff_t W = (ptrdiff_t)g->W, pw = (ptrdiff_t)g->pw, sw = (ptrdiff_t)g->sw;
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
	/* per 16 phase columns: the load masks (lane l: input column c + l, c = 16*sw*jj - pw)
	 * and the store mask, the same for every row */
	uint32_t lm[WH_DW_PHASE_FLOATS / 16];
	__mmask16 sm[WH_DW_PHASE_FLOATS / 16];
	size_t nj = (wq + 15) / 16;
	for (size_t jj = 0; jj < nj; jj++) {
		ptrdiff_t c = 16 * sw * (ptrdiff_t)jj - pw;
		lm[jj] = sw == 1 ? range16(-c, W - c) : range32(-c, W - c);
		sm[jj] = range16(0, (ptrdiff_t)(wq - 16 * jj));
	}
	for (size_t a = 0; a < g->sh; a++)
		for (size_t i = 0; i < hb; i++) {
			ptrdiff_t ih = (ptrdiff_t)(a + g->sh * (r0 + i)) - (ptrdiff_t)g->ph;
			float *d0 = ph + a * (size_t)sw * sub + i * wq, *d1 = d0 + sub;
			if (ih < 0 || ih >= (ptrdiff_t)g->H) {
				for (size_t jj = 0; jj < nj; jj++) {
					_mm512_mask_storeu_ps(d0 + 16 * jj, sm[jj], _mm512_setzero_ps());
					if (sw == 2)
						_mm512_mask_storeu_ps(d1 + 16 * jj, sm[jj], _mm512_setzero_ps());
				}
				continue;
			}
			const float *xr = xc + ih * W - pw;
			if (sw == 1) {
				for (size_t jj = 0; jj < nj; jj++)
					_mm512_mask_storeu_ps(d0 + 16 * jj, sm[jj],
							      _mm512_maskz_loadu_ps((__mmask16)lm[jj], xr + 16 * jj));
				continue;
			}
			for (size_t jj = 0; jj < nj; jj++) {
				const float *r = xr + 32 * jj;
				__m512 l0 = _mm512_maskz_loadu_ps((__mmask16)lm[jj], r);
				__m512 l1 = _mm512_maskz_loadu_ps((__mmask16)(lm[jj] >> 16), r + 16);
				_mm512_mask_storeu_ps(d0 + 16 * jj, sm[jj], _mm512_permutex2var_ps(l0, even, l1));
				_mm512_mask_storeu_ps(d1 + 16 * jj, sm[jj], _mm512_permutex2var_ps(l0, odd, l1));
			}
		}
}

static bool planes_phased(const struct wh_dw_geom *g, size_t np, const float *x, const float *w, const float *bias,
			  float *y)
{
	size_t KH = g->KH, KW = g->KW, KS = KH * KW, sh = g->sh, sw = g->sw;
	size_t P = g->OH * g->OW, Pin = g->H * g->W;
	size_t eh = (KH - 1) / sh, wq = g->OW + (KW - 1) / sw, nph = sh * sw;
	/* a band of nb output rows: nph phases of (nb + eh) * wq floats, each with room for the
	 * last vector's reads past its end (at most 15 + (KW - 1) / sw), and nb * wq outputs */
	size_t fixed = nph * (eh * wq + 16 + KW) + 16, per = (nph + 1) * wq;
	if (fixed + per > WH_DW_PHASE_FLOATS)
		return false;
	size_t nb = (WH_DW_PHASE_FLOATS - fixed) / per;
	if (nb > g->OH)
		nb = g->OH;
	size_t sub = (nb + eh) * wq + 16 + KW;
	_Alignas(64) float buf[WH_DW_PHASE_FLOATS];
	float *out = buf + nph * sub;
	ptrdiff_t toff[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t kh = 0; kh < KH; kh++)
		for (size_t kw = 0; kw < KW; kw++)
			toff[kh * KW + kw] = (ptrdiff_t)(((kh % sh) * sw + kw % sw) * sub + (kh / sh) * wq + kw / sw);
	for (size_t i = 0; i < np; i++) {
		const float *wc = w + i * KS;
		float *yc = y + i * P;
		const __m512 vbias = _mm512_set1_ps(bias ? bias[i] : 0.0f);
		for (size_t r0 = 0; r0 < g->OH; r0 += nb) {
			size_t rows = g->OH - r0 < nb ? g->OH - r0 : nb, hb = rows + eh;
			size_t nvec = (rows * wq + 15) / 16;
			phase_fill(g, x + i * Pin, buf, r0, hb, wq, sub);
			/* the reads past the band's last row: zeros (finite, dropped) */
			for (size_t p = 0; p < nph; p++)
				for (size_t j = hb * wq; j < sub; j += 16)
					_mm512_mask_storeu_ps(buf + p * sub + j, range16(0, (ptrdiff_t)(sub - j)),
							      _mm512_setzero_ps());
			size_t v = 0;
			for (; v + 2 <= nvec; v += 2) {
				const float *xb = buf + 16 * v;
				__m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
				WH_DW_SUM2(KS, wc, {
					xv0 = _mm512_loadu_ps(xb + toff[k]);
					xv1 = _mm512_loadu_ps(xb + 16 + toff[k]);
				});
				if (bias) {
					acc0 = _mm512_add_ps(acc0, vbias);
					acc1 = _mm512_add_ps(acc1, vbias);
				}
				_mm512_storeu_ps(out + 16 * v, acc0);
				_mm512_storeu_ps(out + 16 * v + 16, acc1);
			}
			if (v < nvec) {
				const float *xb = buf + 16 * v;
				__m512 acc = _mm512_setzero_ps();
				WH_DW_SUM(KS, wc, xv = _mm512_loadu_ps(xb + toff[k]));
				if (bias)
					acc = _mm512_add_ps(acc, vbias);
				_mm512_storeu_ps(out + 16 * v, acc);
			}
			for (size_t r = 0; r < rows; r++)
				for (size_t j = 0; j < g->OW; j += 16) {
					__mmask16 m = range16(0, (ptrdiff_t)(g->OW - j));
					_mm512_mask_storeu_ps(yc + (r0 + r) * g->OW + j, m,
							      _mm512_maskz_loadu_ps(m, out + r * wq + j));
				}
		}
	}
	return true;
}

/* Small planes with the channels in the lanes (conv-internal.h wh_dw_lanes): 16 planes are
 * copied, 16x16 blocks transposed, into one padded buffer [Hp][Wp][16] (the padding zeros
 * written once a call), so that for each output position one plain load per tap gives the
 * tap's input for 16 channels, multiplied by the 16 channels' weights of that tap. Each
 * lane sums its channel's taps in wh_conv_dw_fma_ref's order (WH_DW_SUM's operations, the
 * padding as zero products), then the bias, so the bits are those of the reference. Eight
 * positions at a time share each weight load; the outputs [P][16] are transposed back to
 * the planes. A 7-wide plane used 7 of 16 lanes in the row kernels. */

/* r[j] becomes column j of the 16x16 matrix whose rows were r[0..15]. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16])
{
	__m512 t[16];
	_Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 2) {
		t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
		t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
	}
	/* q[4*quad + e], 128-bit lane L: rows 4*quad .. 4*quad + 3 at column 4L + e */
	__m512 q[16];
	_Pragma("GCC unroll 16") for (int i = 0; i < 16; i += 4) {
		__m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
		__m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
		q[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
		q[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
		q[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
		q[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
	}
	_Pragma("GCC unroll 16") for (int e = 0; e < 4; e++) {
		__m512 s01 = _mm512_shuffle_f32x4(q[e], q[4 + e], 0x44);
		__m512 s01h = _mm512_shuffle_f32x4(q[e], q[4 + e], 0xee);
		__m512 s23 = _mm512_shuffle_f32x4(q[8 + e], q[12 + e], 0x44);
		__m512 s23h = _mm512_shuffle_f32x4(q[8 + e], q[12 + e], 0xee);
		r[e] = _mm512_shuffle_f32x4(s01, s23, 0x88);
		r[4 + e] = _mm512_shuffle_f32x4(s01, s23, 0xdd);
		r[8 + e] = _mm512_shuffle_f32x4(s01h, s23h, 0x88);
		r[12 + e] = _mm512_shuffle_f32x4(s01h, s23h, 0xdd);
	}
}

#define WH_DW_LANE_B 8
/* the loops over the B positions fully unrolled (-O2 does not), so t and acc are registers */
#define WH_UNROLL _Pragma("GCC unroll 8")

/* acc[j] (j < B) = the taps of the position whose window starts at xp[j], in WH_DW_SUM's
 * order; wt holds 16 channels' weights a tap. Inlined with B constant, so the arrays stay
 * in registers. */
static inline __attribute__((always_inline)) void lanes_sum(const float *const *xp, int B, const ptrdiff_t *toff,
							     const float *wt, size_t KS, __m512 *acc)
{
	__m512 t[WH_DW_LANE_B];
	WH_UNROLL for (int j = 0; j < B; j++)
		acc[j] = _mm512_setzero_ps();
	size_t k = 0;
	for (; k + 4 <= KS; k += 4) {
		__m512 wk = _mm512_load_ps(wt + 16 * k);
		WH_UNROLL for (int j = 0; j < B; j++)
			t[j] = _mm512_mul_ps(wk, _mm512_load_ps(xp[j] + toff[k]));
		for (size_t i = 1; i < 4; i++) {
			wk = _mm512_load_ps(wt + 16 * (k + i));
			WH_UNROLL for (int j = 0; j < B; j++)
				t[j] = _mm512_fmadd_ps(wk, _mm512_load_ps(xp[j] + toff[k + i]), t[j]);
		}
		WH_UNROLL for (int j = 0; j < B; j++)
			acc[j] = _mm512_add_ps(t[j], acc[j]);
	}
	if (KS - k >= 2) {
		__m512 wk = _mm512_load_ps(wt + 16 * k);
		WH_UNROLL for (int j = 0; j < B; j++)
			t[j] = _mm512_mul_ps(wk, _mm512_load_ps(xp[j] + toff[k]));
		wk = _mm512_load_ps(wt + 16 * (k + 1));
		WH_UNROLL for (int j = 0; j < B; j++)
			t[j] = _mm512_fmadd_ps(wk, _mm512_load_ps(xp[j] + toff[k + 1]), t[j]);
		WH_UNROLL for (int j = 0; j < B; j++)
			acc[j] = _mm512_add_ps(t[j], acc[j]);
		k += 2;
	}
	if (KS - k == 1) {
		__m512 wk = _mm512_load_ps(wt + 16 * k);
		WH_UNROLL for (int j = 0; j < B; j++)
			acc[j] = _mm512_fmadd_ps(wk, _mm512_load_ps(xp[j] + toff[k]), acc[j]);
	}
}

/* n <= 16 planes (lanes n..15 compute zeros and are not stored) with the padded buffer buf
 * (Hp * Wp * 16 floats, its padding already zero). */
static void lanes_group(const struct wh_dw_geom *g, size_t n, const float *x, const float *w, const float *bias,
			float *y, float *buf, size_t Wp, const uint32_t *base, const ptrdiff_t *toff, float *wt,
			float *out)
{
	size_t KS = g->KH * g->KW, P = g->OH * g->OW, Pin = g->H * g->W;
	size_t Hp = (g->OH - 1) * g->sh + (g->KH - 1) * g->dh + 1;
	const __mmask16 chan = range16(0, (ptrdiff_t)n);
	/* the weights a tap for the 16 lanes (zero past n) */
	for (size_t k = 0; k < KS; k++)
		for (size_t c = 0; c < 16; c++)
			wt[16 * k + c] = c < n ? w[c * KS + k] : 0.0f;
	const __m512 vbias = bias ? _mm512_maskz_loadu_ps(chan, bias) : _mm512_setzero_ps();
	/* the inputs: 16 positions of the 16 planes a block, position p to its padded place
	 * (rows and columns the windows never reach are not copied) */
	size_t ih = 0, iw = 0;
	for (size_t p0 = 0; p0 < Pin; p0 += 16) {
		__mmask16 m = range16(0, (ptrdiff_t)(Pin - p0));
		__m512 r[16];
		_Pragma("GCC unroll 16") for (size_t c = 0; c < 16; c++)
			r[c] = c < n ? _mm512_maskz_loadu_ps(m, x + c * Pin + p0) : _mm512_setzero_ps();
		transpose16(r);
		for (size_t j = 0; j < 16 && p0 + j < Pin; j++) {
			size_t ry = ih + g->ph, rx = iw + g->pw;
			if (ry < Hp && rx < Wp)
				_mm512_store_ps(buf + 16 * (ry * Wp + rx), r[j]);
			if (++iw == g->W)
				iw = 0, ih++;
		}
	}
	size_t p = 0;
	__m512 acc[WH_DW_LANE_B];
	for (; p + WH_DW_LANE_B <= P; p += WH_DW_LANE_B) {
		const float *xp[WH_DW_LANE_B];
		for (int j = 0; j < WH_DW_LANE_B; j++)
			xp[j] = buf + base[p + j];
		lanes_sum(xp, WH_DW_LANE_B, toff, wt, KS, acc);
		for (int j = 0; j < WH_DW_LANE_B; j++)
			_mm512_store_ps(out + 16 * (p + j), bias ? _mm512_add_ps(acc[j], vbias) : acc[j]);
	}
	for (; p < P; p++) {
		const float *xp[1] = {buf + base[p]};
		lanes_sum(xp, 1, toff, wt, KS, acc);
		_mm512_store_ps(out + 16 * p, bias ? _mm512_add_ps(acc[0], vbias) : acc[0]);
	}
	/* back to the planes */
	for (size_t p0 = 0; p0 < P; p0 += 16) {
		__mmask16 m = range16(0, (ptrdiff_t)(P - p0));
		__m512 r[16];
		_Pragma("GCC unroll 16") for (size_t j = 0; j < 16; j++)
			r[j] = p0 + j < P ? _mm512_load_ps(out + 16 * (p0 + j)) : _mm512_setzero_ps();
		transpose16(r);
		for (size_t c = 0; c < n; c++)
			_mm512_mask_storeu_ps(y + c * P + p0, m, r[c]);
	}
}

static void planes_lanes(const struct wh_dw_geom *g, size_t np, const float *x, const float *w, const float *bias,
			 float *y)
{
	size_t KS = g->KH * g->KW, P = g->OH * g->OW, Pin = g->H * g->W;
	size_t Hp = (g->OH - 1) * g->sh + (g->KH - 1) * g->dh + 1;
	size_t Wp = (g->OW - 1) * g->sw + (g->KW - 1) * g->dw + 1;
	_Alignas(64) float buf[WH_DW_LANE_IN];
	_Alignas(64) float out[16 * WH_DW_LANE_P];
	_Alignas(64) float wt[16 * WH_DW_LANE_K * WH_DW_LANE_K];
	uint32_t base[WH_DW_LANE_P];
	ptrdiff_t toff[WH_DW_LANE_K * WH_DW_LANE_K];
	memset(buf, 0, Hp * Wp * 16 * sizeof(float));
	for (size_t kh = 0; kh < g->KH; kh++)
		for (size_t kw = 0; kw < g->KW; kw++)
			toff[kh * g->KW + kw] = (ptrdiff_t)(16 * (kh * g->dh * Wp + kw * g->dw));
	for (size_t oh = 0, p = 0; oh < g->OH; oh++)
		for (size_t ow = 0; ow < g->OW; ow++, p++)
			base[p] = (uint32_t)(16 * (oh * g->sh * Wp + ow * g->sw));
	for (size_t i = 0; i < np; i += 16) {
		size_t n = np - i < 16 ? np - i : 16;
		lanes_group(g, n, x + i * Pin, w + i * KS, bias ? bias + i : NULL, y + i * P, buf, Wp, base, toff, wt,
			    out);
	}
}

/* Square 3x3, 5x5 and 7x7 kernels at unit strides without dilation: blocks of R output rows
 * by 16 columns, the K*K weights broadcast once a plane. Each input row of the block's
 * window is loaded once per kernel column (masked at the padding columns; a padding row is
 * the empty mask) and serves every output row it reaches, so a load feeds up to R
 * multiply-adds instead of one. Each output still sums its taps in (kh, kw) order, in
 * wh_conv_dw_fma_ref's groups (the group logic is resolved at compile time). */
#define WH_DW_RB 4

static inline __attribute__((always_inline)) void rb_tap(int k, int KS, __m512 w, __m512 xv, __m512 *t, __m512 *acc)
{
	int full = KS / 4 * 4;
	if (k < full) {
		int g = k % 4;
		*t = g == 0 ? _mm512_mul_ps(w, xv) : _mm512_fmadd_ps(w, xv, *t);
		if (g == 3)
			*acc = _mm512_add_ps(*t, *acc);
	} else if (KS - full >= 2 && k < full + 2) {
		*t = k == full ? _mm512_mul_ps(w, xv) : _mm512_fmadd_ps(w, xv, *t);
		if (k == full + 1)
			*acc = _mm512_add_ps(*t, *acc);
	} else {
		*acc = _mm512_fmadd_ps(w, xv, *acc);
	}
}

static inline __attribute__((always_inline)) void rb_block(const int K, const int S, const int R,
							    const struct wh_dw_geom *g, const float *x, size_t oh0,
							    ptrdiff_t c0, const __m512 *wv, const uint32_t *cm,
							    __m512 vbias, bool bias, __mmask16 sm, float *y)
{
	const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
	__m512 t[WH_DW_RB], acc[WH_DW_RB];
	_Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
		acc[i] = _mm512_setzero_ps();
	ptrdiff_t W = (ptrdiff_t)g->W;
	_Pragma("GCC unroll 16") for (int j = 0; j < S * (R - 1) + K; j++) {
		ptrdiff_t ih = (ptrdiff_t)(oh0 * S) + j - (ptrdiff_t)g->ph;
		bool in = ih >= 0 && ih < (ptrdiff_t)g->H;
		const float *r = (in ? x + ih * W : x) + c0;
		uint32_t live = in ? 0xffffffffu : 0;
		_Pragma("GCC unroll 8") for (int kw = 0; kw < K; kw++) {
			__m512 xv;
			if (S == 1) {
				xv = _mm512_maskz_loadu_ps((__mmask16)(cm[kw] & live), r + kw);
			} else {
				uint32_t m = cm[kw] & live;
				xv = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps((__mmask16)m, r + kw), even,
							    _mm512_maskz_loadu_ps((__mmask16)(m >> 16), r + kw + 16));
			}
			_Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
				int kh = j - S * i;
				if (kh >= 0 && kh < K)
					rb_tap(kh * K + kw, K * K, wv[kh * K + kw], xv, &t[i], &acc[i]);
			}
		}
	}
	_Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
		_mm512_mask_storeu_ps(y + (oh0 + i) * g->OW, sm, bias ? _mm512_add_ps(acc[i], vbias) : acc[i]);
}

static inline __attribute__((always_inline)) void rb_plane(const int K, const int S, const struct wh_dw_geom *g,
							    const float *x, const float *w, const float *bias, float *y)
{
	__m512 wv[49];
	_Pragma("GCC unroll 49") for (int k = 0; k < K * K; k++)
		wv[k] = _mm512_set1_ps(w[k]);
	const __m512 vbias = _mm512_set1_ps(bias ? *bias : 0.0f);
	ptrdiff_t W = (ptrdiff_t)g->W, pw = (ptrdiff_t)g->pw;
	/* row blocks outside, column blocks inside: the block's input rows stay in cache from
	 * one column block to the next (column blocks outside lost 1.3-3.4x on 320x320 planes,
	 * and gained nothing measurable on planes that fit in cache) */
	for (size_t oh = 0; oh < g->OH; oh += WH_DW_RB) {
		size_t rows = g->OH - oh < WH_DW_RB ? g->OH - oh : WH_DW_RB;
		for (size_t ow0 = 0; ow0 < g->OW; ow0 += 16) {
			ptrdiff_t n = (ptrdiff_t)(g->OW - ow0 < 16 ? g->OW - ow0 : 16);
			ptrdiff_t c0 = S * (ptrdiff_t)ow0 - pw;
			/* per kernel column, the lanes (inputs, at stride 2 the 32 loaded) inside the row */
			uint32_t cm[7];
			for (int kw = 0; kw < K; kw++) {
				ptrdiff_t c = c0 + kw; /* lane l reads column c + l */
				cm[kw] = S == 1 ? range16(-c, n < W - c ? n : W - c)
						: range32(-c, 2 * n - 1 < W - c ? 2 * n - 1 : W - c);
			}
			__mmask16 sm = range16(0, n);
			float *yb = y + ow0;
			switch (rows) {
			case WH_DW_RB:
				rb_block(K, S, WH_DW_RB, g, x, oh, c0, wv, cm, vbias, bias != NULL, sm, yb);
				break;
			case 3:
				rb_block(K, S, 3, g, x, oh, c0, wv, cm, vbias, bias != NULL, sm, yb);
				break;
			case 2:
				rb_block(K, S, 2, g, x, oh, c0, wv, cm, vbias, bias != NULL, sm, yb);
				break;
			default:
				rb_block(K, S, 1, g, x, oh, c0, wv, cm, vbias, bias != NULL, sm, yb);
				break;
			}
		}
	}
}

#define WH_DW_RB_PLANE(K, S)                                                                                  \
	static void rb_plane##K##_##S(const struct wh_dw_geom *g, const float *x, const float *w, const float *bias, \
				      float *y)                                                                   \
	{                                                                                                     \
		rb_plane(K, S, g, x, w, bias, y);                                                             \
	}
WH_DW_RB_PLANE(3, 1)
WH_DW_RB_PLANE(5, 1)
WH_DW_RB_PLANE(7, 1)
WH_DW_RB_PLANE(3, 2)
WH_DW_RB_PLANE(5, 2)
WH_DW_RB_PLANE(7, 2)

static bool planes_rowblk(const struct wh_dw_geom *g, size_t np, const float *x, const float *w, const float *bias,
			  float *y)
{
	if (!wh_dw_rowblk(g))
		return false;
	void (*f)(const struct wh_dw_geom *, const float *, const float *, const float *, float *);
	if (g->sh == 1)
		f = g->KH == 3 ? rb_plane3_1 : g->KH == 5 ? rb_plane5_1 : rb_plane7_1;
	else
		f = g->KH == 3 ? rb_plane3_2 : g->KH == 5 ? rb_plane5_2 : rb_plane7_2;
	size_t KS = g->KH * g->KW, P = g->OH * g->OW, Pin = g->H * g->W;
	for (size_t i = 0; i < np; i++)
		f(g, x + i * Pin, w + i * KS, bias ? bias + i : NULL, y + i * P);
	return true;
}

#define WH_DW_PHASED_P ((size_t)4096)

void wh_conv_dw_planes_avx512(const struct wh_dw_geom *g, size_t n, const float *x, const float *w,
			      const float *bias, float *y)
{
	size_t KS = g->KH * g->KW, P = g->OH * g->OW, Pin = g->H * g->W;
	/* the row blocks lost to the phase planes on 5x5 at stride 2 (0.91-0.94x) and to the
	 * lanes on 7x7 over 14x14 (0.88x); they won on every other corpus shape they take */
	bool lanes = wh_dw_lanes(g) && n >= WH_DW_LANE_MIN_N;
	if ((g->sh == 1 || g->KH == 3) && !(lanes && g->KH == 7) && planes_rowblk(g, n, x, w, bias, y))
		return;
	if (lanes) {
		planes_lanes(g, n, x, w, bias, y);
		return;
	}
	/* stride 1 keeps planes_flat (no gap columns, no copy) below WH_DW_PHASED_P outputs */
	if (g->sh <= 2 && g->sw <= 2 && g->dh == 1 && g->dw == 1 &&
	    (g->sh == 2 || g->sw == 2 || P >= WH_DW_PHASED_P || g->OW != g->W) && planes_phased(g, n, x, w, bias, y))
		return;
	if (g->sh == 1 && g->sw == 1 && g->OW == g->W) {
		planes_flat(g, n, x, w, bias, y);
		return;
	}
	for (size_t i = 0; i < n; i++)
		plane_rows(g, x + i * Pin, w + i * KS, bias ? bias + i : NULL, y + i * P);
}
