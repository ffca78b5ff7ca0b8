/* AVX2 direct depthwise planes (conv-internal.h, wh_conv_dw_planes_avx2): as the AVX-512 one
 * (conv-dw-avx512.c) with 8 lanes: masked loads of the unpadded input, the padding as
 * zero inputs, wh_conv_dw_fma_ref's order, so the bits are those of that reference. */
#include <immintrin.h>

#include "executor/ops/conv-internal.h"

/* Lanes l with lo <= l < hi, as a load mask. */
static inline __m256i range8(ptrdiff_t lo, ptrdiff_t hi)
{
	const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	if (lo < 0)
		lo = 0;
	if (hi > 8)
		hi = 8;
	if (hi <= lo)
		return _mm256_setzero_si256();
	return _mm256_and_si256(_mm256_cmpgt_epi32(iota, _mm256_set1_epi32((int)lo - 1)),
				_mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), iota));
}

#define WH_DW_SUM(KS, WP, TAP)                                                                 \
	do {                                                                               \
		size_t k_ = 0;                                                             \
		__m256 xv;                                                                 \
		for (; k_ + 4 <= (KS); k_ += 4) {                                          \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m256 t = _mm256_mul_ps(_mm256_set1_ps((WP)[k]), xv);                \
			k = k_ + 1;                                                        \
			TAP;                                                               \
			t = _mm256_fmadd_ps(_mm256_set1_ps((WP)[k]), xv, t);     \
			k = k_ + 2;                                                        \
			TAP;                                                               \
			t = _mm256_fmadd_ps(_mm256_set1_ps((WP)[k]), xv, t);     \
			k = k_ + 3;                                                        \
			TAP;                                                               \
			t = _mm256_fmadd_ps(_mm256_set1_ps((WP)[k]), xv, t);     \
			acc = _mm256_add_ps(t, acc);                                       \
		}                                                                          \
		if ((KS) - k_ >= 2) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			__m256 t = _mm256_mul_ps(_mm256_set1_ps((WP)[k]), xv);                \
			k = k_ + 1;                                                        \
			TAP;                                                               \
			t = _mm256_fmadd_ps(_mm256_set1_ps((WP)[k]), xv, t);     \
			acc = _mm256_add_ps(t, acc);                                       \
			k_ += 2;                                                           \
		}                                                                          \
		if ((KS) - k_ == 1) {                                                      \
			size_t k = k_;                                                     \
			TAP;                                                               \
			acc = _mm256_fmadd_ps(_mm256_set1_ps((WP)[k]), xv, acc); \
		}                                                                          \
	} while (0)

static inline void wrap8(__m256i *col, __m256i *row, __m256i vow)
{
	for (;;) {
		__m256i over = _mm256_cmpgt_epi32(*col, _mm256_sub_epi32(vow, _mm256_set1_epi32(1)));
		if (_mm256_testz_si256(over, over))
			break;
		*col = _mm256_sub_epi32(*col, _mm256_and_si256(over, vow));
		*row = _mm256_sub_epi32(*row, over); /* over is -1 where set */
	}
}

static inline __m256i between(__m256i v, int lo, int hi)
{
	return _mm256_and_si256(_mm256_cmpgt_epi32(v, _mm256_set1_epi32(lo - 1)),
				_mm256_cmpgt_epi32(_mm256_set1_epi32(hi), v));
}

/* Unit strides and an output as wide as the input (see conv-dw-avx512.c planes_flat): the
 * masks of a block of vectors kept as 8 bits each, expanded per tap. */
#define WH_DW_MASKS 4096

static void planes_flat(const struct wh_dw_geom *g, size_t np, const float *x, const float *w, const float *bias,
			float *y)
{
	size_t KH = g->KH, KW = g->KW, KS = KH * KW, P = g->OH * g->OW, Pin = g->H * g->W;
	size_t nvec = (P + 7) / 8, vb = WH_DW_MASKS / KS;
	const __m256i vow = _mm256_set1_epi32((int)g->OW);
	const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	__m256i col = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), row = _mm256_setzero_si256();
	wrap8(&col, &row, vow);
	uint8_t mt[WH_DW_MASKS];
	ptrdiff_t toff[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t kh = 0; kh < KH; kh++)
		for (size_t kw = 0; kw < KW; kw++)
			toff[kh * KW + kw] = ((ptrdiff_t)(kh * g->dh) - (ptrdiff_t)g->ph) * (ptrdiff_t)g->W +
					     (ptrdiff_t)(kw * g->dw) - (ptrdiff_t)g->pw;
	for (size_t v0 = 0; v0 < nvec; v0 += vb) {
		size_t v1 = v0 + vb < nvec ? v0 + vb : nvec;
		for (size_t v = v0; v < v1; v++) {
			__m256i live = range8(0, (ptrdiff_t)(P - 8 * v)), rm[WH_DW_MAXK], cm[WH_DW_MAXK];
			for (size_t kh = 0; kh < KH; kh++) {
				int lo = (int)g->ph - (int)(kh * g->dh);
				rm[kh] = _mm256_and_si256(between(row, lo, lo + (int)g->H), live);
			}
			for (size_t kw = 0; kw < KW; kw++) {
				int lo = (int)g->pw - (int)(kw * g->dw);
				cm[kw] = between(col, lo, lo + (int)g->W);
			}
			uint8_t *mk = mt + (v - v0) * KS;
			for (size_t kh = 0; kh < KH; kh++)
				for (size_t kw = 0; kw < KW; kw++)
					mk[kh * KW + kw] = (uint8_t)_mm256_movemask_ps(
						_mm256_castsi256_ps(_mm256_and_si256(rm[kh], cm[kw])));
			col = _mm256_add_epi32(col, _mm256_set1_epi32(8));
			wrap8(&col, &row, vow);
		}
		for (size_t i = 0; i < np; i++) {
			const float *xc = x + i * Pin, *wc = w + i * KS;
			float *yc = y + i * P;
			const __m256 vbias = _mm256_set1_ps(bias ? bias[i] : 0.0f);
			for (size_t v = v0; v < v1; v++) {
				const uint8_t *mk = mt + (v - v0) * KS;
				const float *xb = xc + 8 * v;
				__m256 acc = _mm256_setzero_ps();
				WH_DW_SUM(KS, wc, {
					__m256i m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(mk[k]), bit), bit);
					xv = _mm256_maskload_ps(xb + toff[k], m);
				});
				if (bias)
					acc = _mm256_add_ps(acc, vbias);
				_mm256_maskstore_ps(yc + 8 * v, range8(0, (ptrdiff_t)(P - 8 * v)), acc);
			}
		}
	}
}

/* Other geometries with a column stride of 1 or 2: row by row, 8 output columns a step. */
static void plane_rows(const struct wh_dw_geom *g, const float *x, const float *w, const float *bias, float *y)
{
	size_t KW = g->KW, KS = g->KH * KW;
	ptrdiff_t W = (ptrdiff_t)g->W;
	/* each tap's kernel row and column offset (no division in the loops) */
	unsigned char tr[WH_DW_MAXK * WH_DW_MAXK];
	ptrdiff_t tc[WH_DW_MAXK * WH_DW_MAXK];
	for (size_t k = 0; k < KS; k++) {
		tr[k] = (unsigned char)(k / KW);
		tc[k] = (ptrdiff_t)((k % KW) * g->dw) - (ptrdiff_t)g->pw;
	}
	const __m256 vb = _mm256_set1_ps(bias ? *bias : 0.0f);
	for (size_t oh = 0; oh < g->OH; oh++) {
		const float *rows[WH_DW_MAXK];
		for (size_t kh = 0; kh < g->KH; kh++) {
			ptrdiff_t ih = (ptrdiff_t)(oh * g->sh + kh * g->dh) - (ptrdiff_t)g->ph;
			rows[kh] = ih >= 0 && ih < (ptrdiff_t)g->H ? x + ih * W : NULL;
		}
		float *yr = y + oh * g->OW;
		for (size_t ow0 = 0; ow0 < g->OW; ow0 += 8) {
			ptrdiff_t n = (ptrdiff_t)(g->OW - ow0 < 8 ? g->OW - ow0 : 8);
			__m256 acc = _mm256_setzero_ps();
			if (g->sw == 1) {
				WH_DW_SUM(KS, w, {
					const float *r = rows[tr[k]];
					ptrdiff_t c0 = (ptrdiff_t)ow0 + tc[k];
					xv = r ? _mm256_maskload_ps(r + c0, range8(-c0, n < W - c0 ? n : W - c0))
					       : _mm256_setzero_ps();
				});
			} else {
				WH_DW_SUM(KS, w, {
					const float *r = rows[tr[k]];
					ptrdiff_t c0 = (ptrdiff_t)(2 * ow0) + tc[k];
					ptrdiff_t hi = 2 * n - 1 < W - c0 ? 2 * n - 1 : W - c0;
					if (r) {
						__m256 lo = _mm256_maskload_ps(r + c0, range8(-c0, hi));
						__m256 up = _mm256_maskload_ps(r + c0 + 8, range8(-c0 - 8, hi - 8));
						/* lo0 lo2 up0 up2 lo4 lo6 up4 up6, then the 64-bit pairs in order */
						__m256 e = _mm256_shuffle_ps(lo, up, _MM_SHUFFLE(2, 0, 2, 0));
						xv = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
					} else {
						xv = _mm256_setzero_ps();
					}
				});
			}
			if (bias)
				acc = _mm256_add_ps(acc, vb);
			_mm256_maskstore_ps(yr + ow0, range8(0, n), acc);
		}
	}
}

/* Row blocks (as conv-dw-avx512.c planes_rowblk, 8 columns a vector): 4 output rows a step,
 * the weights broadcast once a plane, each input row loaded once per kernel column for every
 * output row it reaches; the taps in wh_conv_dw_fma_ref's groups, resolved at compile time. */
#define WH_DW_RB 4

static inline __attribute__((always_inline)) void rb_tap(int k, int KS, __m256 w, __m256 xv, __m256 *t, __m256 *acc)
{
	int full = KS / 4 * 4;
	if (k < full) {
		int g = k % 4;
		*t = g == 0 ? _mm256_mul_ps(w, xv) : _mm256_fmadd_ps(w, xv, *t);
		if (g == 3)
			*acc = _mm256_add_ps(*t, *acc);
	} else if (KS - full >= 2 && k < full + 2) {
		*t = k == full ? _mm256_mul_ps(w, xv) : _mm256_fmadd_ps(w, xv, *t);
		if (k == full + 1)
			*acc = _mm256_add_ps(*t, *acc);
	} else {
		*acc = _mm256_fmadd_ps(w, xv, *acc);
	}
}

static inline __attribute__((always_inline)) void rb_block(const int K, const int S, const int R,
							    const struct wh_dw_geom *g, const float *x, size_t oh0,
							    ptrdiff_t c0, const __m256 *wv, const __m256i *cm,
							    const __m256i *cm1, __m256 vbias, bool bias, __m256i sm, float *y)
{
	__m256 t[WH_DW_RB], acc[WH_DW_RB];
	_Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
		acc[i] = _mm256_setzero_ps();
	ptrdiff_t W = (ptrdiff_t)g->W;
	_Pragma("GCC unroll 16") for (int j = 0; j < S * (R - 1) + K; j++) {
		ptrdiff_t ih = (ptrdiff_t)(oh0 * S) + j - (ptrdiff_t)g->ph;
		bool in = ih >= 0 && ih < (ptrdiff_t)g->H;
		const float *r = (in ? x + ih * W : x) + c0;
		__m256i live = in ? _mm256_set1_epi32(-1) : _mm256_setzero_si256();
		_Pragma("GCC unroll 8") for (int kw = 0; kw < K; kw++) {
			__m256 xv;
			if (S == 1) {
				xv = _mm256_maskload_ps(r + kw, _mm256_and_si256(cm[kw], live));
			} else {
				__m256 lo = _mm256_maskload_ps(r + kw, _mm256_and_si256(cm[kw], live));
				__m256 up = _mm256_maskload_ps(r + kw + 8, _mm256_and_si256(cm1[kw], live));
				__m256 e = _mm256_shuffle_ps(lo, up, _MM_SHUFFLE(2, 0, 2, 0));
				xv = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), _MM_SHUFFLE(3, 1, 2, 0)));
			}
			_Pragma("GCC unroll 8") for (int i = 0; i < R; i++) {
				int kh = j - S * i;
				if (kh >= 0 && kh < K)
					rb_tap(kh * K + kw, K * K, wv[kh * K + kw], xv, &t[i], &acc[i]);
			}
		}
	}
	_Pragma("GCC unroll 8") for (int i = 0; i < R; i++)
		_mm256_maskstore_ps(y + (oh0 + i) * g->OW, sm, bias ? _mm256_add_ps(acc[i], vbias) : acc[i]);
}

static inline __attribute__((always_inline)) void rb_plane(const int K, const int S, const struct wh_dw_geom *g,
							    const float *x, const float *w, const float *bias, float *y)
{
	__m256 wv[49];
	_Pragma("GCC unroll 49") for (int k = 0; k < K * K; k++)
		wv[k] = _mm256_set1_ps(w[k]);
	const __m256 vbias = _mm256_set1_ps(bias ? *bias : 0.0f);
	ptrdiff_t W = (ptrdiff_t)g->W, pw = (ptrdiff_t)g->pw;
	for (size_t oh = 0; oh < g->OH; oh += WH_DW_RB) {
		size_t rows = g->OH - oh < WH_DW_RB ? g->OH - oh : WH_DW_RB;
		for (size_t ow0 = 0; ow0 < g->OW; ow0 += 8) {
			ptrdiff_t n = (ptrdiff_t)(g->OW - ow0 < 8 ? g->OW - ow0 : 8);
			ptrdiff_t c0 = S * (ptrdiff_t)ow0 - pw;
			/* per kernel column, the lanes inside the row (at stride 2 of the two loads) */
			__m256i cm[7], cm1[7];
			for (int kw = 0; kw < K; kw++) {
				ptrdiff_t c = c0 + kw; /* lane l reads column c + l */
				if (S == 1) {
					cm[kw] = range8(-c, n < W - c ? n : W - c);
				} else {
					ptrdiff_t hi = 2 * n - 1 < W - c ? 2 * n - 1 : W - c;
					cm[kw] = range8(-c, hi);
					cm1[kw] = range8(-c - 8, hi - 8);
				}
			}
			__m256i sm = range8(0, n);
			float *yb = y + ow0;
			switch (rows) {
			case WH_DW_RB:
				rb_block(K, S, WH_DW_RB, g, x, oh, c0, wv, cm, cm1, vbias, bias != NULL, sm, yb);
				break;
			case 3:
				rb_block(K, S, 3, g, x, oh, c0, wv, cm, cm1, vbias, bias != NULL, sm, yb);
				break;
			case 2:
				rb_block(K, S, 2, g, x, oh, c0, wv, cm, cm1, vbias, bias != NULL, sm, yb);
				break;
			default:
				rb_block(K, S, 1, g, x, oh, c0, wv, cm, cm1, vbias, bias != NULL, sm, yb);
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

void wh_conv_dw_planes_avx2(const struct wh_dw_geom *g, size_t n, const float *x, const float *w,
			    const float *bias, float *y)
{
	size_t KS = g->KH * g->KW, P = g->OH * g->OW, Pin = g->H * g->W;
	if (wh_dw_rowblk_avx2(g)) {
		void (*f)(const struct wh_dw_geom *, const float *, const float *, const float *, float *);
		if (g->sh == 1)
			f = g->KH == 3 ? rb_plane3_1 : g->KH == 5 ? rb_plane5_1 : rb_plane7_1;
		else
			f = g->KH == 3 ? rb_plane3_2 : g->KH == 5 ? rb_plane5_2 : rb_plane7_2;
		for (size_t i = 0; i < n; i++)
			f(g, x + i * Pin, w + i * KS, bias ? bias + i : NULL, y + i * P);
		return;
	}
	if (g->sh == 1 && g->sw == 1 && g->OW == g->W) {
		planes_flat(g, n, x, w, bias, y);
		return;
	}
	for (size_t i = 0; i < n; i++)
		plane_rows(g, x + i * Pin, w + i * KS, bias ? bias + i : NULL, y + i * P);
}
