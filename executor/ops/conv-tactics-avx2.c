/* AVX2 Winograd F(2x2, 3x3) tile transforms (tactics-extra.h): eight tiles of a tile row at
 * once, the same float32 additions in the same order as the scalar code, so the bits are
 * the same; tiles left over at the end of a row go through the scalar code. */
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

void wh_wino_input_avx2(const struct wh_wino_in *p)
{
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		size_t k = 0;
		for (; k + 8 <= run; k += 8) {
			size_t u = tw + k;
			__m256 t[4][4];
			for (int a = 0; a < 4; a++) {
				const float *row = p->plane + (2 * th + (size_t)a) * p->rs;
				__m256 d0 = _mm256_loadu_ps(row + u), d1 = _mm256_loadu_ps(row + p->half + u);
				__m256 d2 = _mm256_loadu_ps(row + u + 1), d3 = _mm256_loadu_ps(row + p->half + u + 1);
				t[a][0] = _mm256_sub_ps(d0, d2);
				t[a][1] = _mm256_add_ps(d1, d2);
				t[a][2] = _mm256_sub_ps(d2, d1);
				t[a][3] = _mm256_sub_ps(d1, d3);
			}
			float *v = p->v + i + k;
			size_t vs = p->v_stride;
			for (size_t j = 0; j < 4; j++) {
				_mm256_storeu_ps(v + j * vs, _mm256_sub_ps(t[0][j], t[2][j]));
				_mm256_storeu_ps(v + (4 + j) * vs, _mm256_add_ps(t[1][j], t[2][j]));
				_mm256_storeu_ps(v + (8 + j) * vs, _mm256_sub_ps(t[2][j], t[1][j]));
				_mm256_storeu_ps(v + (12 + j) * vs, _mm256_sub_ps(t[1][j], t[3][j]));
			}
		}
		if (k < run) {
			struct wh_wino_in q = *p;
			q.t0 = p->t0 + i + k;
			q.cnt = run - k;
			q.v = p->v + i + k;
			wh_wino_input_scalar(&q);
		}
	}
}

/* Writes 2n interleaved values (a0 b0 a1 b1 ...) to dst, cropped to `room` floats. */
static void store_pair(float *dst, __m256 a, __m256 b, size_t room)
{
	__m256 lo = _mm256_unpacklo_ps(a, b), hi = _mm256_unpackhi_ps(a, b);
	__m256 o0 = _mm256_permute2f128_ps(lo, hi, 0x20), o1 = _mm256_permute2f128_ps(lo, hi, 0x31);
	if (room >= 16) {
		_mm256_storeu_ps(dst, o0);
		_mm256_storeu_ps(dst + 8, o1);
		return;
	}
	float tmp[16];
	_mm256_storeu_ps(tmp, o0);
	_mm256_storeu_ps(tmp + 8, o1);
	for (size_t c = 0; c < room; c++)
		dst[c] = tmp[c];
}

void wh_wino_output_avx2(const struct wh_wino_out *p)
{
	__m256 bias = _mm256_set1_ps(p->bias);
	for (size_t i = 0, run, th, tw; i < p->cnt; i += run) {
		run = row_run(p->t0, p->cnt, p->tw_n, i, &th, &tw);
		size_t k = 0;
		for (; k + 8 <= run; k += 8) {
			__m256 m[4][4], s0[4], s1[4];
			for (size_t a = 0; a < 4; a++)
				for (size_t j = 0; j < 4; j++)
					m[a][j] = _mm256_loadu_ps(p->m + (4 * a + j) * p->m_stride + i + k);
			for (int j = 0; j < 4; j++) {
				s0[j] = _mm256_add_ps(_mm256_add_ps(m[0][j], m[1][j]), m[2][j]);
				s1[j] = _mm256_sub_ps(_mm256_sub_ps(m[1][j], m[2][j]), m[3][j]);
			}
			__m256 r00 = _mm256_add_ps(_mm256_add_ps(s0[0], s0[1]), s0[2]);
			__m256 r01 = _mm256_sub_ps(_mm256_sub_ps(s0[1], s0[2]), s0[3]);
			__m256 r10 = _mm256_add_ps(_mm256_add_ps(s1[0], s1[1]), s1[2]);
			__m256 r11 = _mm256_sub_ps(_mm256_sub_ps(s1[1], s1[2]), s1[3]);
			if (p->has_bias) {
				r00 = _mm256_add_ps(r00, bias);
				r01 = _mm256_add_ps(r01, bias);
				r10 = _mm256_add_ps(r10, bias);
				r11 = _mm256_add_ps(r11, bias);
			}
			size_t oy = 2 * th, ox = 2 * (tw + k);
			size_t room = p->ow - ox;
			store_pair(p->y + oy * p->ow + ox, r00, r01, room);
			if (oy + 1 < p->oh)
				store_pair(p->y + (oy + 1) * p->ow + ox, r10, r11, room);
		}
		if (k < run) {
			struct wh_wino_out q = *p;
			q.t0 = p->t0 + i + k;
			q.cnt = run - k;
			q.m = p->m + i + k;
			wh_wino_output_scalar(&q);
		}
	}
}
