/* AVX-512 kernels of the extra tactics (tactics-extra.h): the Winograd F(2x2, 3x3) weight and
 * tile transforms, sixteen tiles of a tile row at once (fewer at the end of a row, with
 * masked loads and stores) with the same float32 additions in the same order as the
 * scalar code, so the bits are the same; and the fp16-accumulating step. */
#include <immintrin.h>

#include "executor/ops/tactics-extra.h"

/* Tiles i..i+run-1 of the block are tiles tw..tw+run-1 of tile row th. */
static size_t row_run(size_t t0, size_t cnt, size_t tw_n, size_t i, size_t *th, size_t *tw)
{
	size_t t = t0 + i;
	*th = t / tw_n;
	*tw = t % tw_n;
	return tw_n - *tw < cnt - i ? tw_n - *tw : cnt - i;
}

static __mmask16 lanes(size_t n)
{
	return (__mmask16)(n >= 16 ? 0xffffu : (1u << n) - 1);
}

void wh_wino_weights_avx512(const float *gt, size_t C, float *u, size_t u_stride)
{
	const __m512 half = _mm512_set1_ps(0.5f);
	for (size_t c = 0; c < C; c += 16) {
		__mmask16 k16 = lanes(C - c);
		__m512 g[9], t[4][3];
		for (size_t k = 0; k < 9; k++)
			g[k] = _mm512_maskz_loadu_ps(k16, gt + k * C + c);
		for (int k = 0; k < 3; k++) {
			t[0][k] = g[k];
			t[1][k] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(g[k], g[3 + k]), g[6 + k]));
			t[2][k] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(g[k], g[3 + k]), g[6 + k]));
			t[3][k] = g[6 + k];
		}
		for (size_t a = 0; a < 4; a++) {
			_mm512_mask_storeu_ps(u + (4 * a) * u_stride + c, k16, t[a][0]);
			_mm512_mask_storeu_ps(u + (4 * a + 1) * u_stride + c, k16,
					      _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(t[a][0], t[a][1]), t[a][2])));
			_mm512_mask_storeu_ps(u + (4 * a + 2) * u_stride + c, k16,
					      _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(t[a][0], t[a][1]), t[a][2])));
			_mm512_mask_storeu_ps(u + (4 * a + 3) * u_stride + c, k16, t[a][2]);
		}
	}
}

/* n <= 16 tiles from tile (th, tw), written at column i of the block. */
static void input_tiles(const struct wh_wino_in *p, size_t th, size_t tw, size_t i, size_t n)
{
	__mmask16 k = lanes(n);
	__m512 t[4][4];
	for (size_t a = 0; a < 4; a++) {
		const float *row = p->plane + (2 * th + a) * p->rs;
		__m512 d0 = _mm512_maskz_loadu_ps(k, row + tw), d1 = _mm512_maskz_loadu_ps(k, row + p->half + tw);
		__m512 d2 = _mm512_maskz_loadu_ps(k, row + tw + 1), d3 = _mm512_maskz_loadu_ps(k, row + p->half + tw + 1);
		t[a][0] = _mm512_sub_ps(d0, d2);
		t[a][1] = _mm512_add_ps(d1, d2);
		t[a][2] = _mm512_sub_ps(d2, d1);
		t[a][3] = _mm512_sub_ps(d1, d3);
	}
	float *v = p->v + i;
	size_t vs = p->v_stride;
	for (size_t j = 0; j < 4; j++) {
		_mm512_mask_storeu_ps(v + j * vs, k, _mm512_sub_ps(t[0][j], t[2][j]));
		_mm512_mask_storeu_ps(v + (4 + j) * vs, k, _mm512_add_ps(t[1][j], t[2][j]));
		_mm512_mask_storeu_ps(v + (8 + j) * vs, k, _mm512_sub_ps(t[2][j], t[1][j]));
		_mm512_mask_storeu_ps(v + (12 + j) * vs, k, _mm512_sub_ps(t[1][j], t[3][j]));
	}
}

void wh_wino_input_avx512(const struct wh_wino_in *p)
{
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		for (size_t k = 0; k < run; k += 16)
			input_tiles(p, th, tw + k, i + k, run - k < 16 ? run - k : 16);
	}
}

/* Writes interleaved values (a0 b0 a1 b1 ...) to dst, cropped to `room` floats. */
static void store_pair(float *dst, __m512 a, __m512 b, size_t room)
{
	const __m512i lo_idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
	const __m512i hi_idx = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
	__m512 o0 = _mm512_permutex2var_ps(a, lo_idx, b), o1 = _mm512_permutex2var_ps(a, hi_idx, b);
	_mm512_mask_storeu_ps(dst, lanes(room), o0);
	if (room > 16)
		_mm512_mask_storeu_ps(dst + 16, lanes(room - 16), o1);
}

static void output_tiles(const struct wh_wino_out *p, size_t th, size_t tw, size_t i, size_t n)
{
	__mmask16 k = lanes(n);
	__m512 m[4][4], s0[4], s1[4];
	for (size_t a = 0; a < 4; a++)
		for (size_t j = 0; j < 4; j++)
			m[a][j] = _mm512_maskz_loadu_ps(k, p->m + (4 * a + j) * p->m_stride + i);
	for (int j = 0; j < 4; j++) {
		s0[j] = _mm512_add_ps(_mm512_add_ps(m[0][j], m[1][j]), m[2][j]);
		s1[j] = _mm512_sub_ps(_mm512_sub_ps(m[1][j], m[2][j]), m[3][j]);
	}
	__m512 r00 = _mm512_add_ps(_mm512_add_ps(s0[0], s0[1]), s0[2]);
	__m512 r01 = _mm512_sub_ps(_mm512_sub_ps(s0[1], s0[2]), s0[3]);
	__m512 r10 = _mm512_add_ps(_mm512_add_ps(s1[0], s1[1]), s1[2]);
	__m512 r11 = _mm512_sub_ps(_mm512_sub_ps(s1[1], s1[2]), s1[3]);
	if (p->has_bias) {
		__m512 bias = _mm512_set1_ps(p->bias);
		r00 = _mm512_add_ps(r00, bias);
		r01 = _mm512_add_ps(r01, bias);
		r10 = _mm512_add_ps(r10, bias);
		r11 = _mm512_add_ps(r11, bias);
	}
	size_t oy = 2 * th, ox = 2 * tw;
	size_t room = p->ow - ox < 2 * n ? p->ow - ox : 2 * n;
	store_pair(p->y + oy * p->ow + ox, r00, r01, room);
	if (oy + 1 < p->oh)
		store_pair(p->y + (oy + 1) * p->ow + ox, r10, r11, room);
}

void wh_wino_output_avx512(const struct wh_wino_out *p)
{
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		for (size_t k = 0; k < run; k += 16)
			output_tiles(p, th, tw + k, i + k, run - k < 16 ? run - k : 16);
	}
}

/* fp16(acc + p), as in conv-tactics-avx2.c: TwoSum, round to odd, then F16C's rounding. */
static __m512 sum_f16(__m512 acc, __m512 p)
{
	const __m512i one = _mm512_set1_epi32(1);
	__m512 s = _mm512_add_ps(acc, p), bb = _mm512_sub_ps(s, acc);
	__m512 e = _mm512_add_ps(_mm512_sub_ps(acc, _mm512_sub_ps(s, bb)), _mm512_sub_ps(p, bb));
	__m512i si = _mm512_castps_si512(s);
	__mmask16 fix = _mm512_cmp_ps_mask(e, _mm512_setzero_ps(), _CMP_NEQ_OQ) & _mm512_testn_epi32_mask(si, one);
	/* +1 ulp when e has s's sign (away from zero), else -1 */
	__m512i step = _mm512_or_si512(_mm512_srai_epi32(_mm512_xor_si512(si, _mm512_castps_si512(e)), 31), one);
	si = _mm512_mask_add_epi32(si, fix, si, step);
	return _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_castsi512_ps(si), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void wh_tx_axpy_f16_avx512(float *y, const float *x, size_t xs, float w, size_t n)
{
	__m512 wv = _mm512_set1_ps(w);
	size_t i = 0;
	if (xs == 1) {
		for (; i + 16 <= n; i += 16)
			_mm512_storeu_ps(y + i, sum_f16(_mm512_loadu_ps(y + i), _mm512_mul_ps(_mm512_loadu_ps(x + i), wv)));
		if (i < n) {
			__mmask16 k = (__mmask16)((1u << (n - i)) - 1);
			__m512 acc = _mm512_maskz_loadu_ps(k, y + i), xv = _mm512_maskz_loadu_ps(k, x + i);
			_mm512_mask_storeu_ps(y + i, k, sum_f16(acc, _mm512_mul_ps(xv, wv)));
			i = n;
		}
	} else if (xs <= ((size_t)1 << 26)) {
		const __m512i idx = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
						       _mm512_set1_epi32((int)xs));
		for (; i + 16 <= n; i += 16) {
			__m512 xv = _mm512_i32gather_ps(idx, x + i * xs, 4);
			_mm512_storeu_ps(y + i, sum_f16(_mm512_loadu_ps(y + i), _mm512_mul_ps(xv, wv)));
		}
	}
	if (i < n)
		wh_tx_axpy_f16_scalar(y + i, x + i * xs, xs, w, n - i);
}
