/* AVX2 kernels of the extra tactics (tactics-extra.h): the Winograd F(2x2, 3x3) weight and
 * tile transforms, eight tiles of a tile row at once (fewer at the end of a row, with
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

/* Lanes 0..n-1 on. */
static __m256i lanes(size_t n)
{
	const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
	return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), idx);
}

static __m256 load(const float *p, size_t n, __m256i mask)
{
	return n == 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}

static void store(float *p, __m256 v, size_t n, __m256i mask)
{
	if (n == 8)
		_mm256_storeu_ps(p, v);
	else
		_mm256_maskstore_ps(p, mask, v);
}

void wh_wino_weights_avx2(const float *gt, size_t C, float *u, size_t u_stride)
{
	const __m256 half = _mm256_set1_ps(0.5f);
	for (size_t c = 0; c < C; c += 8) {
		size_t n = C - c < 8 ? C - c : 8;
		__m256i mask = lanes(n);
		__m256 g[9], t[4][3];
		for (size_t k = 0; k < 9; k++)
			g[k] = load(gt + k * C + c, n, mask);
		for (int k = 0; k < 3; k++) {
			t[0][k] = g[k];
			t[1][k] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(g[k], g[3 + k]), g[6 + k]));
			t[2][k] = _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(g[k], g[3 + k]), g[6 + k]));
			t[3][k] = g[6 + k];
		}
		for (size_t a = 0; a < 4; a++) {
			store(u + (4 * a) * u_stride + c, t[a][0], n, mask);
			store(u + (4 * a + 1) * u_stride + c,
			      _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(t[a][0], t[a][1]), t[a][2])), n, mask);
			store(u + (4 * a + 2) * u_stride + c,
			      _mm256_mul_ps(half, _mm256_add_ps(_mm256_sub_ps(t[a][0], t[a][1]), t[a][2])), n, mask);
			store(u + (4 * a + 3) * u_stride + c, t[a][2], n, mask);
		}
	}
}

/* n <= 8 tiles from tile (th, tw), written at column i of the block. */
static void input_tiles(const struct wh_wino_in *p, size_t th, size_t tw, size_t i, size_t n)
{
	__m256i mask = lanes(n);
	__m256 t[4][4];
	for (size_t a = 0; a < 4; a++) {
		const float *row = p->plane + (2 * th + a) * p->rs;
		__m256 d0 = load(row + tw, n, mask), d1 = load(row + p->half + tw, n, mask);
		__m256 d2 = load(row + tw + 1, n, mask), d3 = load(row + p->half + tw + 1, n, mask);
		t[a][0] = _mm256_sub_ps(d0, d2);
		t[a][1] = _mm256_add_ps(d1, d2);
		t[a][2] = _mm256_sub_ps(d2, d1);
		t[a][3] = _mm256_sub_ps(d1, d3);
	}
	float *v = p->v + i;
	size_t vs = p->v_stride;
	for (size_t j = 0; j < 4; j++) {
		store(v + j * vs, _mm256_sub_ps(t[0][j], t[2][j]), n, mask);
		store(v + (4 + j) * vs, _mm256_add_ps(t[1][j], t[2][j]), n, mask);
		store(v + (8 + j) * vs, _mm256_sub_ps(t[2][j], t[1][j]), n, mask);
		store(v + (12 + j) * vs, _mm256_sub_ps(t[1][j], t[3][j]), n, mask);
	}
}

void wh_wino_input_avx2(const struct wh_wino_in *p)
{
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		for (size_t k = 0; k < run; k += 8)
			input_tiles(p, th, tw + k, i + k, run - k < 8 ? run - k : 8);
	}
}

/* Writes interleaved values (a0 b0 a1 b1 ...) to dst, cropped to `room` floats. */
static void store_pair(float *dst, __m256 a, __m256 b, size_t room)
{
	__m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
	__m256 o0 = _mm256_permute2f128_ps(lo, hi, 0x20), o1 = _mm256_permute2f128_ps(lo, hi, 0x31);
	if (room >= 16) {
		_mm256_storeu_ps(dst, o0);
		_mm256_storeu_ps(dst + 8, o1);
		return;
	}
	store(dst, o0, room < 8 ? room : 8, lanes(room));
	if (room > 8)
		store(dst + 8, o1, room - 8, lanes(room - 8));
}

static void output_tiles(const struct wh_wino_out *p, size_t th, size_t tw, size_t i, size_t n)
{
	__m256i mask = lanes(n);
	__m256 m[4][4], s0[4], s1[4];
	for (size_t a = 0; a < 4; a++)
		for (size_t j = 0; j < 4; j++)
			m[a][j] = load(p->m + (4 * a + j) * p->m_stride + i, n, mask);
	for (int j = 0; j < 4; j++) {
		s0[j] = _mm256_add_ps(_mm256_add_ps(m[0][j], m[1][j]), m[2][j]);
		s1[j] = _mm256_sub_ps(_mm256_sub_ps(m[1][j], m[2][j]), m[3][j]);
	}
	__m256 r00 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
	__m256 r01 = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
	__m256 r10 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
	__m256 r11 = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
	if (p->has_bias) {
		__m256 bias = _mm256_set1_ps(p->bias);
		r00 = _mm256_add_ps(r00, bias);
		r01 = _mm256_add_ps(r01, bias);
		r10 = _mm256_add_ps(r10, bias);
		r11 = _mm256_add_ps(r11, bias);
	}
	size_t oy = 2 * th, ox = 2 * tw;
	size_t room = p->ow - ox < 2 * n ? p->ow - ox : 2 * n;
	store_pair(p->y + oy * p->ow + ox, r00, r01, room);
	if (oy + 1 < p->oh)
		store_pair(p->y + (oy + 1) * p->ow + ox, r10, r11, room);
}

void wh_wino_output_avx2(const struct wh_wino_out *p)
{
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		for (size_t k = 0; k < run; k += 8)
			output_tiles(p, th, tw + k, i + k, run - k < 8 ? run - k : 8);
	}
}

/* fp16(acc + p) for fp16 values acc and products p exact in float: the float sum s and its
 * exact error e (TwoSum); rounding s to odd (toward the exact value when inexact, to the
 * odd neighbour) keeps the information that a second rounding to 11 bits needs, so F16C's
 * round to nearest even then gives the correctly rounded fp16 sum. */
static __m256 sum_f16(__m256 acc, __m256 p)
{
	const __m256i one = _mm256_set1_epi32(1);
	__m256 s = _mm256_add_ps(acc, p), bb = _mm256_sub_ps(s, acc);
	__m256 e = _mm256_add_ps(_mm256_sub_ps(acc, _mm256_sub_ps(s, bb)), _mm256_sub_ps(p, bb));
	__m256i si = _mm256_castps_si256(s);
	__m256i inexact = _mm256_castps_si256(_mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_NEQ_OQ));
	__m256i even = _mm256_cmpeq_epi32(_mm256_and_si256(si, one), _mm256_setzero_si256());
	/* +1 ulp when e has s's sign (away from zero), else -1 */
	__m256i step = _mm256_or_si256(_mm256_srai_epi32(_mm256_xor_si256(si, _mm256_castps_si256(e)), 31), one);
	si = _mm256_add_epi32(si, _mm256_and_si256(_mm256_and_si256(inexact, even), step));
	return _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_castsi256_ps(si), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

void wh_tx_axpy_f16_avx2(float *y, const float *x, size_t xs, float w, size_t n)
{
	__m256 wv = _mm256_set1_ps(w);
	size_t i = 0;
	if (xs == 1) {
		for (; i + 8 <= n; i += 8)
			_mm256_storeu_ps(y + i, sum_f16(_mm256_loadu_ps(y + i), _mm256_mul_ps(_mm256_loadu_ps(x + i), wv)));
	} else if (xs <= ((size_t)1 << 27)) {
		const __m256i idx = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32((int)xs));
		for (; i + 8 <= n; i += 8) {
			__m256 xv = _mm256_i32gather_ps(x + i * xs, idx, 4);
			_mm256_storeu_ps(y + i, sum_f16(_mm256_loadu_ps(y + i), _mm256_mul_ps(xv, wv)));
		}
	}
	if (i < n)
		wh_tx_axpy_f16_scalar(y + i, x + i * xs, xs, w, n - i);
}
