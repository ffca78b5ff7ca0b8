/* AVX-512 variants of the integer GEMM and the quantization loops (qgemm-internal.h). The
 * GEMM kernel also needs VNNI (vpdpbusd), enabled per function; the caller checks
 * cpu->avx512vnni. */
#include <immintrin.h>
#include <math.h>

#include "executor/ops/qgemm-internal.h"

#define VNNI __attribute__((target("avx512vnni")))

/* vpdpbusd with the operands in their roles: the broadcast row bytes uint8 and the panels int8,
 * or (SW) the other way. */
#define DP(ACC, B, P) (SW ? _mm512_dpbusd_epi32(ACC, P, B) : _mm512_dpbusd_epi32(ACC, B, P))

/* Row m + r of column block c0: the sums less the zero-point terms (rowc, or zp x rowfix;
 * colsum x zr unless colsum is NULL). */
VNNI static inline __attribute__((always_inline)) __m512i fix(const struct wh_qg_args *a, size_t m, size_t c0,
								 __m512i v)
{
	if (a->rowc)
		v = _mm512_sub_epi32(v, _mm512_set1_epi32(a->rowc[m]));
	else
		v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512((const void *)(a->zp + c0)),
							   _mm512_set1_epi32(a->rowfix[m])));
	if (a->colsum)
		v = _mm512_sub_epi32(v, _mm512_mullo_epi32(_mm512_loadu_si512((const void *)(a->colsum + c0)),
							   _mm512_set1_epi32(a->zr[m])));
	return v;
}

/* MR rows x NP panels of 16 columns: rows [m, m + MR), panels [j, j + NP). */
VNNI static inline __attribute__((always_inline)) void tile(const struct wh_qg_args *a, size_t m, size_t j, int MR,
								  int NP, bool SW)
{
	size_t kp = a->kp;
	__m512i acc[4][4];
#pragma GCC unroll 4
	for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
		for (int q = 0; q < NP; q++)
			acc[r][q] = _mm512_setzero_si512();
	const int8_t *p = a->p + j * kp * WH_QG_NR;
	const uint8_t *rw = a->r + m * kp;
	for (size_t k = 0; k < kp; k += 4) {
		__m512i pv[4];
#pragma GCC unroll 4
		for (int q = 0; q < NP; q++)
			pv[q] = _mm512_loadu_si512((const void *)(p + q * kp * WH_QG_NR + k * WH_QG_NR));
#pragma GCC unroll 4
		for (int r = 0; r < MR; r++) {
			int32_t rv;
			__builtin_memcpy(&rv, rw + r * kp + k, 4);
			__m512i b = _mm512_set1_epi32(rv);
#pragma GCC unroll 4
			for (int q = 0; q < NP; q++)
				acc[r][q] = DP(acc[r][q], b, pv[q]);
		}
	}
#pragma GCC unroll 4
	for (int q = 0; q < NP; q++) {
		size_t c0 = (j + (size_t)q) * WH_QG_NR;
		size_t left = a->n - c0;
		__mmask16 mk = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
#pragma GCC unroll 4
		for (int r = 0; r < MR; r++)
			_mm512_mask_storeu_epi32(a->c + (m + r) * a->ldc + c0, mk, fix(a, m + r, c0, acc[r][q]));
	}
}

static inline int32_t ld4(const uint8_t *p)
{
	int32_t v;
	__builtin_memcpy(&v, p, 4);
	return v;
}

/* Rows m..m+3 of column block c0, fixed and stored. */
VNNI static inline __attribute__((always_inline)) void store_fixed4(const struct wh_qg_args *a, size_t m, size_t c0, __m512i r0,
								  __m512i r1, __m512i r2, __m512i r3)
{
	__m512i acc4[4] = {r0, r1, r2, r3};
	for (int r = 0; r < 4; r++)
		_mm512_storeu_si512((void *)(a->c + (m + (size_t)r) * a->ldc + c0), fix(a, m + (size_t)r, c0, acc4[r]));
}

/* The full tile, 4 rows x 4 whole panels, with its 16 accumulators named (an array of them
 * made GCC copy registers around every vpdpbusd): the same sums as tile(). */
VNNI static inline __attribute__((always_inline)) void tile4x4(const struct wh_qg_args *a, size_t m, size_t j, bool SW)
{
	size_t kp = a->kp;
	__m512i c00 = _mm512_setzero_si512();
	__m512i c01 = _mm512_setzero_si512();
	__m512i c02 = _mm512_setzero_si512();
	__m512i c03 = _mm512_setzero_si512();
	__m512i c10 = _mm512_setzero_si512();
	__m512i c11 = _mm512_setzero_si512();
	__m512i c12 = _mm512_setzero_si512();
	__m512i c13 = _mm512_setzero_si512();
	__m512i c20 = _mm512_setzero_si512();
	__m512i c21 = _mm512_setzero_si512();
	__m512i c22 = _mm512_setzero_si512();
	__m512i c23 = _mm512_setzero_si512();
	__m512i c30 = _mm512_setzero_si512();
	__m512i c31 = _mm512_setzero_si512();
	__m512i c32 = _mm512_setzero_si512();
	__m512i c33 = _mm512_setzero_si512();
	const int8_t *p = a->p + j * kp * WH_QG_NR;
	const uint8_t *rw = a->r + m * kp;
	for (size_t k = 0; k < kp; k += 4) {
		const int8_t *pk = p + k * WH_QG_NR;
		__m512i p0 = _mm512_loadu_si512((const void *)pk);
		__m512i p1 = _mm512_loadu_si512((const void *)(pk + kp * WH_QG_NR));
		__m512i p2 = _mm512_loadu_si512((const void *)(pk + 2 * kp * WH_QG_NR));
		__m512i p3 = _mm512_loadu_si512((const void *)(pk + 3 * kp * WH_QG_NR));
		__m512i b;
		b = _mm512_set1_epi32(ld4(rw + 0 * kp + k));
		c00 = DP(c00, b, p0);
		c01 = DP(c01, b, p1);
		c02 = DP(c02, b, p2);
		c03 = DP(c03, b, p3);
		b = _mm512_set1_epi32(ld4(rw + 1 * kp + k));
		c10 = DP(c10, b, p0);
		c11 = DP(c11, b, p1);
		c12 = DP(c12, b, p2);
		c13 = DP(c13, b, p3);
		b = _mm512_set1_epi32(ld4(rw + 2 * kp + k));
		c20 = DP(c20, b, p0);
		c21 = DP(c21, b, p1);
		c22 = DP(c22, b, p2);
		c23 = DP(c23, b, p3);
		b = _mm512_set1_epi32(ld4(rw + 3 * kp + k));
		c30 = DP(c30, b, p0);
		c31 = DP(c31, b, p1);
		c32 = DP(c32, b, p2);
		c33 = DP(c33, b, p3);
	}
	store_fixed4(a, m, (j + 0) * WH_QG_NR, c00, c10, c20, c30);
	store_fixed4(a, m, (j + 1) * WH_QG_NR, c01, c11, c21, c31);
	store_fixed4(a, m, (j + 2) * WH_QG_NR, c02, c12, c22, c32);
	store_fixed4(a, m, (j + 3) * WH_QG_NR, c03, c13, c23, c33);
}

VNNI static __attribute__((noinline)) void tile4x4_n(const struct wh_qg_args *a, size_t m, size_t j)
{
	tile4x4(a, m, j, false);
}

VNNI static __attribute__((noinline)) void tile4x4_s(const struct wh_qg_args *a, size_t m, size_t j)
{
	tile4x4(a, m, j, true);
}

/* Panels [j, j + NP) against every row: the panels stay in L1 while the rows stream by. */
#define TILE_COLS(NP)                                                     \
	do {                                                              \
		size_t m = m0;                                            \
		for (; m + 4 <= m1; m += 4)                               \
			if (NP == 4 && (j + 4) * WH_QG_NR <= a->n)        \
				(SW ? tile4x4_s : tile4x4_n)(a, m, j);    \
			else                                              \
				tile(a, m, j, 4, NP, SW);                 \
		switch (m1 - m) {                                         \
		case 3: tile(a, m, j, 3, NP, SW); break;                  \
		case 2: tile(a, m, j, 2, NP, SW); break;                  \
		case 1: tile(a, m, j, 1, NP, SW); break;                  \
		default: break;                                           \
		}                                                         \
	} while (0)

VNNI static inline __attribute__((always_inline)) void kernel(const struct wh_qg_args *a, size_t m0, size_t m1, bool SW)
{
	size_t np = wh_qg_panels(a->n), j = 0;
	for (; j + 4 <= np; j += 4)
		TILE_COLS(4);
	switch (np - j) {
	case 3: TILE_COLS(3); break;
	case 2: TILE_COLS(2); break;
	case 1: TILE_COLS(1); break;
	default: break;
	}
}

VNNI void wh_qg_kernel_avx512(const struct wh_qg_args *a, size_t m0, size_t m1)
{
	if (a->swap)
		kernel(a, m0, m1, true);
	else
		kernel(a, m0, m1, false);
}

VNNI void wh_qg_colsums_avx512_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums)
{
	size_t np = wh_qg_panels(n);
	const __m512i ones = _mm512_set1_epi8(1);
	for (size_t j = 0; j < np; j++) {
		__m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
		const uint8_t *pj = p + j * kp * WH_QG_NR;
		size_t k = 0;
		for (; k + 8 <= kp; k += 8) {
			s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512((const void *)(pj + k * WH_QG_NR)), ones);
			s1 = _mm512_dpbusd_epi32(s1, _mm512_loadu_si512((const void *)(pj + (k + 4) * WH_QG_NR)), ones);
		}
		if (k < kp)
			s0 = _mm512_dpbusd_epi32(s0, _mm512_loadu_si512((const void *)(pj + k * WH_QG_NR)), ones);
		_mm512_storeu_si512((void *)(sums + j * WH_QG_NR), _mm512_add_epi32(s0, s1));
	}
}

VNNI void wh_qg_colsums_avx512(const int8_t *p, size_t kp, size_t n, int32_t *sums)
{
	size_t np = wh_qg_panels(n);
	const __m512i ones = _mm512_set1_epi8(1);
	for (size_t j = 0; j < np; j++) {
		__m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
		const int8_t *pj = p + j * kp * WH_QG_NR;
		size_t k = 0;
		for (; k + 8 <= kp; k += 8) {
			s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512((const void *)(pj + k * WH_QG_NR)));
			s1 = _mm512_dpbusd_epi32(s1, ones, _mm512_loadu_si512((const void *)(pj + (k + 4) * WH_QG_NR)));
		}
		if (k < kp)
			s0 = _mm512_dpbusd_epi32(s0, ones, _mm512_loadu_si512((const void *)(pj + k * WH_QG_NR)));
		_mm512_storeu_si512((void *)(sums + j * WH_QG_NR), _mm512_add_epi32(s0, s1));
	}
}

/* The widening path: 16 outputs at a time, each tap's bytes widened to int32 and multiplied
 * (vpmulld); sum x * w - zx * sum w, both wrapping: the same integer as the scalar's. */
void wh_qdw_plane_avx512(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
			 bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out)
{
	uint32_t wsum = 0;
	for (size_t t = 0; t < taps; t++)
		wsum += (uint32_t)wv[t];
	const __m512i bias = _mm512_set1_epi32((int32_t)(0u - (uint32_t)zx * wsum));
	for (size_t r = 0; r < rows; r++, base += rs, out += n)
		for (size_t i = 0; i < n; i += 16) {
			__mmask16 mk = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
			__m512i acc = bias;
			for (size_t t = 0; t < taps; t++) {
				__m128i b = _mm_maskz_loadu_epi8(mk, base + toff[t] + i);
				__m512i x = x_s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
				acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(x, _mm512_set1_epi32(wv[t])));
			}
			_mm512_mask_storeu_epi32(out + i, mk, acc);
		}
}

/* Depthwise planes on VNNI where every tap weight fits int8 (w - zw of symmetric int8
 * weights, or of uint8 weights about 128): x as vpdpbusd's unsigned operand (int8 x flipped
 * to x ^ 0x80 with zx + 128, the same differences), 4 taps' weights in each dword, and 64
 * outputs at a time: the 4 taps' bytes of each output interleaved (the byte and word unpacks
 * of wh_qg_pack, per 128-bit lane), so accumulator q holds outputs 16l + 4q .. 16l + 4q + 3
 * in lane l, put back in order by a 4x4 transpose of lanes. The sum is sum x * w - zx *
 * sum w, wrapping: the scalar's integer. Other weights take wh_qdw_plane_avx512. */
VNNI void wh_qdw_plane_vnni(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
			    bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out)
{
	bool fit = taps <= 64;
	for (size_t t = 0; t < taps && fit; t++)
		fit = wv[t] >= -128 && wv[t] <= 127;
	if (!fit) {
		wh_qdw_plane_avx512(base, toff, wv, taps, zx, x_s8, rows, n, rs, out);
		return;
	}
	size_t groups = (taps + 3) / 4;
	uint32_t wsum = 0;
	int32_t wd[16];
	size_t off[64];
	for (size_t g = 0; g < groups; g++) {
		uint32_t d = 0;
		for (size_t q = 0; q < 4; q++) {
			size_t t = 4 * g + q;
			/* a missing tap: any bytes (its weight byte is 0) */
			off[t] = toff[t < taps ? t : 0];
			if (t < taps)
				d |= (uint32_t)(uint8_t)(int8_t)wv[t] << (8 * q);
		}
		wd[g] = (int32_t)d;
	}
	for (size_t t = 0; t < taps; t++)
		wsum += (uint32_t)wv[t];
	uint32_t zxu = (uint32_t)zx + (x_s8 ? 128u : 0u);
	const __m512i bias = _mm512_set1_epi32((int32_t)(0u - zxu * wsum));
	const __m512i fl = _mm512_set1_epi8(x_s8 ? (char)0x80 : 0);
	for (size_t r = 0; r < rows; r++, base += rs, out += n)
		for (size_t i = 0; i < n; i += 64) {
			__mmask64 mk = n - i >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (n - i)) - 1);
			__m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
			const uint8_t *b = base + i;
			for (size_t g = 0; g < groups; g++) {
				const size_t *o = off + 4 * g;
				__m512i x0 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, b + o[0]), fl);
				__m512i x1 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, b + o[1]), fl);
				__m512i x2 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, b + o[2]), fl);
				__m512i x3 = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mk, b + o[3]), fl);
				__m512i lo01 = _mm512_unpacklo_epi8(x0, x1), hi01 = _mm512_unpackhi_epi8(x0, x1);
				__m512i lo23 = _mm512_unpacklo_epi8(x2, x3), hi23 = _mm512_unpackhi_epi8(x2, x3);
				__m512i w = _mm512_set1_epi32(wd[g]);
				a0 = _mm512_dpbusd_epi32(a0, _mm512_unpacklo_epi16(lo01, lo23), w);
				a1 = _mm512_dpbusd_epi32(a1, _mm512_unpackhi_epi16(lo01, lo23), w);
				a2 = _mm512_dpbusd_epi32(a2, _mm512_unpacklo_epi16(hi01, hi23), w);
				a3 = _mm512_dpbusd_epi32(a3, _mm512_unpackhi_epi16(hi01, hi23), w);
			}
			__m512i t0 = _mm512_shuffle_i32x4(a0, a1, 0x44), t1 = _mm512_shuffle_i32x4(a2, a3, 0x44);
			__m512i t2 = _mm512_shuffle_i32x4(a0, a1, 0xEE), t3 = _mm512_shuffle_i32x4(a2, a3, 0xEE);
			size_t left = n - i;
			int32_t *d = out + i;
			if (left >= 64) {
				_mm512_storeu_si512((void *)d, _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, 0x88), bias));
				_mm512_storeu_si512((void *)(d + 16), _mm512_add_epi32(_mm512_shuffle_i32x4(t0, t1, 0xDD), bias));
				_mm512_storeu_si512((void *)(d + 32), _mm512_add_epi32(_mm512_shuffle_i32x4(t2, t3, 0x88), bias));
				_mm512_storeu_si512((void *)(d + 48), _mm512_add_epi32(_mm512_shuffle_i32x4(t2, t3, 0xDD), bias));
				continue;
			}
			__m512i ov[4] = {_mm512_shuffle_i32x4(t0, t1, 0x88), _mm512_shuffle_i32x4(t0, t1, 0xDD),
					 _mm512_shuffle_i32x4(t2, t3, 0x88), _mm512_shuffle_i32x4(t2, t3, 0xDD)};
			for (size_t q = 0; q < 4 && 16 * q < left; q++) {
				size_t l = left - 16 * q;
				__mmask16 m16 = l >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << l) - 1);
				_mm512_mask_storeu_epi32(d + 16 * q, m16, _mm512_add_epi32(ov[q], bias));
			}
		}
}

/* ---- quantization loops ---- */

static inline __m512d requant8(__m256i acc, __m512d m, __m512d yz, __m512d lo, __m512d hi)
{
	__m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(acc), m);
	v = _mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	v = _mm512_add_pd(v, yz);
	v = _mm512_max_pd(v, lo);
	return _mm512_min_pd(v, hi);
}

/* The lanes where rint(t) is surely rint of the value t approximates, when t is within
 * |t| * 2^-22 of the float32 (or double) result it stands for: t = fl(x * fl(1 / scale))
 * against fl(x / scale), or fl(fl(acc) * mult) against the double product, are (two float32
 * roundings, |t - exact| <= |t| * 1.5 * 2^-23, and the other result within half an ulp).
 * Taken: |t| < 4096 and t farther than |t| * 2^-21 (twice the bound) from a half-integer
 * (v = rint(t)); then both lie on the same side of every rounding boundary. */
static inline __mmask16 sure_rint(__m512 t, __m512 v)
{
	__m512 a = _mm512_abs_ps(t);
	__m512 lim = _mm512_sub_ps(_mm512_set1_ps(0.5f), _mm512_mul_ps(a, _mm512_set1_ps(0x1p-21f)));
	return _mm512_cmp_ps_mask(a, _mm512_set1_ps(4096.0f), _CMP_LT_OQ) &
	       _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, v)), lim, _CMP_LT_OQ);
}

void wh_q_requant_avx512(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
			 void *y)
{
	const __m512d lo = _mm512_set1_pd(y_s8 ? -128 : 0), hi = _mm512_set1_pd(y_s8 ? 127 : 255);
	const __m512d z = _mm512_set1_pd((double)yz);
	__m512d ms = _mm512_set1_pd((double)mult[0]);
	/* in float32 where that cannot change the integer (sure_rint); otherwise the 16 lanes
	 * take the double path */
	const __m512 lof = _mm512_set1_ps(y_s8 ? -128.0f : 0.0f), hif = _mm512_set1_ps(y_s8 ? 127.0f : 255.0f);
	const __m512 zf = _mm512_set1_ps((float)yz), msf = _mm512_set1_ps(mult[0]);
	const bool small_z = yz > -(1 << 20) && yz < (1 << 20); /* rint(t) + yz exact in float32 */
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(acc + i))),
					 mstride ? _mm512_loadu_ps(mult + i) : msf);
		__m512 rt = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__mmask16 ok = sure_rint(t, rt);
		if (ok == 0xFFFF && small_z) {
			__m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(rt, zf), lof), hif);
			_mm_storeu_si128((__m128i *)((uint8_t *)y + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
			continue;
		}
		__m512d m0 = ms, m1 = ms;
		if (mstride) {
			m0 = _mm512_cvtps_pd(_mm256_loadu_ps(mult + i));
			m1 = _mm512_cvtps_pd(_mm256_loadu_ps(mult + i + 8));
		}
		__m256i a0 = _mm256_loadu_si256((const __m256i *)(acc + i));
		__m256i a1 = _mm256_loadu_si256((const __m256i *)(acc + i + 8));
		__m256i v0 = _mm512_cvtpd_epi32(requant8(a0, m0, z, lo, hi));
		__m256i v1 = _mm512_cvtpd_epi32(requant8(a1, m1, z, lo, hi));
		__m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(v0), v1, 1);
		_mm_storeu_si128((__m128i *)((uint8_t *)y + i), _mm512_cvtepi32_epi8(v));
	}
	if (i < n) {
		if (mstride)
			wh_q_requant_scalar(acc + i, n - i, mult + i, 1, yz, y_s8, (uint8_t *)y + i);
		else
			wh_q_requant_scalar(acc + i, n - i, mult, 0, yz, y_s8, (uint8_t *)y + i);
	}
}

/* 64 float values t[0..3] to 8 bits, or false where a lane is not sure (nothing stored):
 * rint by vcvtps2dq, its distance by vreduceps (exact), |t| < 4096 so that rint(t) + zp
 * and the clamp are the saturating packs with a saturating int16 add of the zero point. */
static inline __attribute__((always_inline)) bool round_pack64(const __m512 *t, bool y_s8, __m512i zp16, uint8_t *y)
{
	const __m512 half = _mm512_set1_ps(0.5f), c21 = _mm512_set1_ps(0x1p-21f), big = _mm512_set1_ps(4096.0f);
	const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
	__m512i q[4];
	__mmask16 ok = 0xFFFF;
	for (int u = 0; u < 4; u++) {
		q[u] = _mm512_cvt_roundps_epi32(t[u], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m512 d = _mm512_reduce_ps(t[u], _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__m512 at = _mm512_abs_ps(t[u]);
		ok &= _mm512_cmp_ps_mask(at, big, _CMP_LT_OQ) &
		      _mm512_cmp_ps_mask(_mm512_abs_ps(d), _mm512_fnmadd_ps(at, c21, half), _CMP_LT_OQ);
	}
	if (ok != 0xFFFF)
		return false;
	__m512i w0 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), zp16);
	__m512i w1 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), zp16);
	__m512i by = y_s8 ? _mm512_packs_epi16(w0, w1) : _mm512_packus_epi16(w0, w1);
	_mm512_storeu_si512((void *)y, _mm512_permutexvar_epi32(order, by));
	return true;
}

/* 64 values of wh_q_requant_bias_avx512 (one multiplier), or false where a lane is not sure
 * (nothing stored): t = fl(fl(acc + bias) * m) as wh_q_requant_avx512's float route, then
 * round_pack64. */
static inline __attribute__((always_inline)) bool rq64(const int32_t *acc, __m512i bias, __m512 m, bool y_s8,
							__m512i zp16, uint8_t *y)
{
	__m512 t[4];
	for (int u = 0; u < 4; u++)
		t[u] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(_mm512_loadu_si512((const void *)(acc + 16 * u)), bias)), m);
	return round_pack64(t, y_s8, zp16, y);
}

void wh_q_requant_bias_avx512(const int32_t *acc, size_t n, int32_t bias, float mult, int32_t yz, bool y_s8, void *y)
{
	const __m512i bv = _mm512_set1_epi32(bias);
	const __m512 m = _mm512_set1_ps(mult);
	/* yz within int16 less 4096 (the 8-bit types' are): rint(t) + yz is exact in int16 */
	const bool fast = yz > -16384 && yz < 16384;
	const __m512i zp16 = _mm512_set1_epi16(fast ? (short)yz : 0);
	uint8_t *yb = y;
	int32_t tmp[64];
	size_t i = 0;
	for (; i < n; i += 64) {
		if (i + 64 <= n && fast &&
		    (y_s8 ? rq64(acc + i, bv, m, true, zp16, yb + i) : rq64(acc + i, bv, m, false, zp16, yb + i)))
			continue;
		size_t len = n - i < 64 ? n - i : 64;
		for (size_t k = 0; k < len; k++)
			tmp[k] = (int32_t)((uint32_t)acc[i + k] + (uint32_t)bias);
		wh_q_requant_avx512(tmp, len, &mult, 0, yz, y_s8, yb + i);
	}
}

/* 64 values of wh_q_quant_avx512 (zp integral, within int16 less 4096), or false where a lane
 * is not sure (nothing stored): t = x * fl(1 / scale) as below, then round_pack64. */
static inline __attribute__((always_inline)) bool q64(const float *x, __m512 r, bool y_s8, __m512i zp16, uint8_t *y)
{
	__m512 t[4];
	for (int u = 0; u < 4; u++)
		t[u] = _mm512_mul_ps(_mm512_loadu_ps(x + 16 * u), r);
	return round_pack64(t, y_s8, zp16, y);
}

void wh_q_quant_avx512(const float *x, size_t n, float scale, float zp, bool y_s8, void *y)
{
	const __m512 lo = _mm512_set1_ps(y_s8 ? -128.0f : 0.0f), hi = _mm512_set1_ps(y_s8 ? 127.0f : 255.0f);
	const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp);
	/* x * (1 / scale) instead of the division where that cannot change the integer
	 * (sure_rint); other lanes (near a half, large, NaN, an infinite 1 / scale) divide */
	const __m512 r = _mm512_set1_ps(1.0f / scale);
	/* 64 at a time where zp is an integer the int16 add takes exactly (an 8-bit tensor's) */
	const bool fast = zp == nearbyintf(zp) && zp > -16384.0f && zp < 16384.0f;
	const __m512i zp16 = _mm512_set1_epi16(fast ? (short)(int)zp : 0);
	uint8_t *yb = y;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		if (fast && i % 64 == 0 && i + 64 <= n &&
		    (y_s8 ? q64(x + i, r, true, zp16, yb + i) : q64(x + i, r, false, zp16, yb + i))) {
			i += 48;
			continue;
		}
		__m512 xv = _mm512_loadu_ps(x + i);
		__m512 t = _mm512_mul_ps(xv, r);
		__m512 v = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		__mmask16 ok = sure_rint(t, v);
		if (ok != 0xFFFF)
			v = _mm512_mask_roundscale_ps(v, (__mmask16)~ok, _mm512_div_ps(xv, s),
						      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		v = _mm512_add_ps(v, z);
		__mmask16 ord = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
		v = _mm512_maskz_mov_ps(ord, v);
		v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
		_mm_storeu_si128((__m128i *)(yb + i), _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
	}
	if (i < n)
		wh_q_quant_scalar(x + i, n - i, scale, zp, y_s8, yb + i);
}

/* 64 values of wh_q_scale_relu_quant where `pos` holds (below), or false where a lane is not
 * sure (then nothing is stored): the lane arithmetic of the 16-wide loop, then round_pack64
 * (q >= 0 after the Relu; a lane past 4096, which saturates, takes the 16-wide loop). */
static inline __attribute__((always_inline)) bool srq64(const int32_t *acc, __m512 m, __m512 b, bool has_bias,
							 __m512 r, bool y_s8, __m512i zp16, uint8_t *y)
{
	__m512 t[4];
	for (int u = 0; u < 4; u++) {
		__m512 x = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(acc + 16 * u))), m);
		if (has_bias)
			x = _mm512_add_ps(x, b);
		t[u] = _mm512_mul_ps(_mm512_max_ps(_mm512_setzero_ps(), x), r);
	}
	return round_pack64(t, y_s8, zp16, y);
}

/* 16 values of wh_q_scale_relu_quant, any parameters: sure_rint's fast lanes, the others
 * divided. */
static inline void srq16(const int32_t *acc, __m512 m, __m512 b, bool has_bias, __m512 r, __m512 s, __m512 z,
			 __m512 lo, __m512 hi, uint8_t *y)
{
	__m512 xv = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)acc)), m);
	if (has_bias)
		xv = _mm512_add_ps(xv, b);
	xv = _mm512_max_ps(_mm512_setzero_ps(), xv); /* 0 > x ? 0 : x (NaN stays) */
	__m512 t = _mm512_mul_ps(xv, r);
	__m512 v = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__mmask16 ok = sure_rint(t, v);
	if (ok != 0xFFFF)
		v = _mm512_mask_roundscale_ps(v, (__mmask16)~ok, _mm512_div_ps(xv, s),
					      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	v = _mm512_add_ps(v, z);
	__mmask16 ord = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
	v = _mm512_maskz_mov_ps(ord, v);
	v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
	_mm_storeu_si128((__m128i *)y, _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v)));
}

void wh_q_scale_relu_quant_rows_avx512(const int32_t *acc, size_t lda, size_t rows, size_t n, const float *mult,
				       const float *bias, float scale, float zp, bool y_s8, uint8_t *y, size_t ldy)
{
	const bool has_bias = bias != NULL;
	const __m512 lo = _mm512_set1_ps(y_s8 ? -128.0f : 0.0f), hi = _mm512_set1_ps(y_s8 ? 127.0f : 255.0f);
	const __m512 s = _mm512_set1_ps(scale), z = _mm512_set1_ps(zp);
	/* as wh_q_quant_avx512 */
	const __m512 r = _mm512_set1_ps(1.0f / scale);
	/* a positive scale with a normal reciprocal and an integral zp within the output type (every
	 * quantizer's): t >= 0 after the Relu, and rint(t) + zp within int16 for t < 4096 takes
	 * the packs' clamp (srq64 through round_pack64; a saturating lane past 4096 takes the
	 * 16-wide loop) */
	const bool pos = scale > 0.0f && 1.0f / scale >= 0x1p-126f && 1.0f / scale < INFINITY &&
			 zp == nearbyintf(zp) && zp >= (y_s8 ? -128.0f : 0.0f) && zp <= (y_s8 ? 127.0f : 255.0f);
	const __m512i zp16 = _mm512_set1_epi16(pos ? (short)(int)zp : 0);
	for (size_t row = 0; row < rows; row++, acc += lda, y += ldy) {
		const __m512 m = _mm512_set1_ps(mult[row]), b = _mm512_set1_ps(has_bias ? bias[row] : 0.0f);
		size_t i = 0;
		for (; i + 64 <= n; i += 64) {
			if (pos) {
				bool done = has_bias ? (y_s8 ? srq64(acc + i, m, b, true, r, true, zp16, y + i)
							     : srq64(acc + i, m, b, true, r, false, zp16, y + i))
						     : (y_s8 ? srq64(acc + i, m, b, false, r, true, zp16, y + i)
							     : srq64(acc + i, m, b, false, r, false, zp16, y + i));
				if (done)
					continue;
			}
			for (size_t u = 0; u < 64; u += 16)
				srq16(acc + i + u, m, b, has_bias, r, s, z, lo, hi, y + i + u);
		}
		for (; i + 16 <= n; i += 16)
			srq16(acc + i, m, b, has_bias, r, s, z, lo, hi, y + i);
		if (i < n)
			wh_q_scale_relu_quant_scalar(acc + i, n - i, mult[row], has_bias ? bias[row] : 0.0f, has_bias, scale,
						     zp, y_s8, y + i);
	}
}

void wh_q_scale_relu_quant_avx512(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale,
				  float zp, bool y_s8, void *y)
{
	wh_q_scale_relu_quant_rows_avx512(acc, 0, 1, n, &mult, has_bias ? &bias : NULL, scale, zp, y_s8, y, 0);
}

void wh_q_dequant_avx512(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y)
{
	const __m512i z = _mm512_set1_epi32(zp);
	const __m512 s = _mm512_set1_ps(scale);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)((const uint8_t *)x + i));
		__m512i v = x_s8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
		_mm512_storeu_ps(y + i, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(v, z)), s));
	}
	if (i < n)
		wh_q_dequant_scalar((const uint8_t *)x + i, x_s8, n - i, zp, scale, y + i);
}

void wh_q_minmax_avx512(const float *x, size_t n, float *lo_out, float *hi_out)
{
	__m512 lo = _mm512_setzero_ps(), hi = _mm512_setzero_ps();
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_loadu_ps(x + i);
		lo = _mm512_min_ps(v, lo); /* a NaN in v gives the second operand */
		hi = _mm512_max_ps(v, hi);
	}
	float l[16], h[16];
	_mm512_storeu_ps(l, lo);
	_mm512_storeu_ps(h, hi);
	float rl, rh;
	wh_q_minmax_scalar(x + i, n - i, &rl, &rh);
	for (int k = 0; k < 16; k++) {
		rl = l[k] < rl ? l[k] : rl;
		rh = h[k] > rh ? h[k] : rh;
	}
	*lo_out = rl;
	*hi_out = rh;
}

void wh_q_scale_bias_avx512(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y)
{
	const __m512 m = _mm512_set1_ps(mult), b = _mm512_set1_ps(bias);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_loadu_si512((const void *)(acc + i))), m);
		_mm512_storeu_ps(y + i, has_bias ? _mm512_add_ps(v, b) : v);
	}
	if (i < n)
		wh_q_scale_bias_scalar(acc + i, n - i, mult, bias, has_bias, y + i);
}
