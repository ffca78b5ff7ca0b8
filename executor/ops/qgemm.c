/* The 8-bit integer GEMM (qgemm-internal.h): packing, the scalar reference kernel, the
 * ISA dispatch, and the drivers of integer convolution and matrix product. */
#include <emmintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/ops/conv-internal.h"
#include "executor/ops/qgemm-internal.h"

/* ---- packing ---- */

void wh_qg_pack(const uint8_t *src, size_t ld, size_t K, size_t N, uint8_t flip, int8_t *panels)
{
	size_t kp = wh_qg_kp(K), np = wh_qg_panels(N);
	const __m128i fl = _mm_set1_epi8((char)flip);
	for (size_t j = 0; j < np; j++) {
		int8_t *pj = panels + j * kp * WH_QG_NR;
		size_t n0 = j * WH_QG_NR, nn = N - n0 < WH_QG_NR ? N - n0 : WH_QG_NR;
		for (size_t k = 0; k < kp; k += 4) {
			int8_t *d = pj + k * WH_QG_NR;
			if (nn == WH_QG_NR && k + 4 <= K) {
				const uint8_t *s0 = src + k * ld + n0;
				__m128i r0 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)s0), fl);
				__m128i r1 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s0 + ld)), fl);
				__m128i r2 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s0 + 2 * ld)), fl);
				__m128i r3 = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s0 + 3 * ld)), fl);
				__m128i a = _mm_unpacklo_epi8(r0, r1), b = _mm_unpackhi_epi8(r0, r1);
				__m128i c = _mm_unpacklo_epi8(r2, r3), e = _mm_unpackhi_epi8(r2, r3);
				_mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(a, c));
				_mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(a, c));
				_mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(b, e));
				_mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(b, e));
				continue;
			}
			memset(d, 0, 4 * WH_QG_NR);
			for (size_t q = 0; q < 4 && k + q < K; q++)
				for (size_t c = 0; c < nn; c++)
					d[c * 4 + q] = (int8_t)(src[(k + q) * ld + n0 + c] ^ flip);
		}
	}
}

void wh_qg_rows(const uint8_t *src, size_t ld, size_t M, size_t K, uint8_t flip, uint8_t *dst, int32_t *rowsum)
{
	size_t kp = wh_qg_kp(K);
	const __m128i fl = _mm_set1_epi8((char)flip), zero = _mm_setzero_si128();
	for (size_t m = 0; m < M; m++) {
		const uint8_t *s = src + m * ld;
		uint8_t *d = dst + m * kp;
		/* 16 bytes at a time (SSE2): the flip, then the byte sums (psadbw, exact) */
		__m128i acc = zero;
		size_t k = 0;
		for (; k + 16 <= K; k += 16) {
			__m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + k)), fl);
			_mm_storeu_si128((__m128i *)(d + k), v);
			acc = _mm_add_epi64(acc, _mm_sad_epu8(v, zero));
		}
		uint64_t sum = (uint64_t)_mm_cvtsi128_si64(acc) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
		for (; k < K; k++) {
			d[k] = s[k] ^ flip;
			sum += d[k];
		}
		for (k = K; k < kp; k++)
			d[k] = 0;
		rowsum[m] = (int32_t)(uint32_t)sum;
	}
}

/* wh_qg_rows with the row sums of the stored bytes as int8 (the swapped pair's weight rows):
 * int8 b = (b ^ 0x80) - 128, so the unsigned sums of b ^ 0x80 less 128 K. */
static void rows_s8(const uint8_t *src, size_t M, size_t K, uint8_t flip, uint8_t *dst, int32_t *rowsum)
{
	size_t kp = wh_qg_kp(K);
	const __m128i fl = _mm_set1_epi8((char)flip), sg = _mm_set1_epi8((char)0x80), zero = _mm_setzero_si128();
	for (size_t m = 0; m < M; m++) {
		const uint8_t *s = src + m * K;
		uint8_t *d = dst + m * kp;
		__m128i acc = zero;
		size_t k = 0;
		for (; k + 16 <= K; k += 16) {
			__m128i v = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(s + k)), fl);
			_mm_storeu_si128((__m128i *)(d + k), v);
			acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_xor_si128(v, sg), zero));
		}
		uint64_t sum = (uint64_t)_mm_cvtsi128_si64(acc) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
		for (; k < K; k++) {
			d[k] = s[k] ^ flip;
			sum += (uint8_t)(d[k] ^ 0x80);
		}
		for (k = K; k < kp; k++)
			d[k] = 0;
		rowsum[m] = (int32_t)(uint32_t)(sum - 128 * (uint64_t)K);
	}
}

/* ---- scalar reference ---- */

static void colsums_scalar(const int8_t *p, size_t kp, size_t n, int32_t *sums)
{
	size_t np = wh_qg_panels(n);
	for (size_t j = 0; j < np; j++)
		for (size_t c = 0; c < WH_QG_NR; c++) {
			uint32_t s = 0;
			for (size_t k = 0; k < kp; k++)
				s += (uint32_t)(int32_t)p[j * kp * WH_QG_NR + (k / 4) * 4 * WH_QG_NR + c * 4 + k % 4];
			sums[j * WH_QG_NR + c] = (int32_t)s;
		}
}

void wh_qg_kernel_scalar(const struct wh_qg_args *a, size_t m0, size_t m1)
{
	size_t kp = a->kp;
	for (size_t m = m0; m < m1; m++) {
		const uint8_t *r = a->r + m * kp;
		for (size_t n = 0; n < a->n; n++) {
			const int8_t *pj = a->p + (n / WH_QG_NR) * kp * WH_QG_NR + (n % WH_QG_NR) * 4;
			uint32_t s = 0;
			for (size_t k = 0; k < kp; k += 4)
				for (size_t q = 0; q < 4; q++) {
					uint8_t rb = r[k + q], pb = (uint8_t)pj[k * WH_QG_NR + q];
					int32_t rv = a->swap ? (int32_t)(int8_t)rb : (int32_t)rb;
					int32_t pv = a->swap ? (int32_t)pb : (int32_t)(int8_t)pb;
					s += (uint32_t)(rv * pv);
				}
			s -= a->rowc ? (uint32_t)a->rowc[m] : (uint32_t)a->zp[n] * (uint32_t)a->rowfix[m];
			if (a->colsum)
				s -= (uint32_t)a->zr[m] * (uint32_t)a->colsum[n];
			a->c[m * a->ldc + n] = (int32_t)s;
		}
	}
}

void wh_qdw_plane_scalar(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
			 bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out)
{
	for (size_t r = 0; r < rows; r++, base += rs, out += n)
		for (size_t i = 0; i < n; i++) {
			uint32_t s = 0;
			for (size_t t = 0; t < taps; t++) {
				uint8_t b = base[toff[t] + i];
				int32_t x = x_s8 ? (int32_t)(int8_t)b : (int32_t)b;
				s += (uint32_t)(x - zx) * (uint32_t)wv[t];
			}
			out[i] = (int32_t)s;
		}
}

/* ---- dispatch ---- */

static bool use_vnni(const struct wh_cpu_features *cpu)
{
	return cpu && cpu->isa >= WH_ISA_AVX512 && cpu->avx512vnni;
}

static bool use_avx2(const struct wh_cpu_features *cpu)
{
	return cpu && cpu->isa >= WH_ISA_AVX2;
}

void wh_qg_colsums_avx2(const int8_t *p, size_t kp, size_t n, int32_t *sums);
void wh_qg_colsums_avx512(const int8_t *p, size_t kp, size_t n, int32_t *sums);

void wh_qg_colsums(const int8_t *p, size_t kp, size_t n, int32_t *sums, const struct wh_cpu_features *cpu)
{
	if (use_vnni(cpu))
		wh_qg_colsums_avx512(p, kp, n, sums);
	else if (use_avx2(cpu))
		wh_qg_colsums_avx2(p, kp, n, sums);
	else
		colsums_scalar(p, kp, n, sums);
}

void wh_qg_colsums_avx2_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums);
void wh_qg_colsums_avx512_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums);

void wh_qg_colsums_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums, const struct wh_cpu_features *cpu)
{
	if (use_vnni(cpu)) {
		wh_qg_colsums_avx512_u8(p, kp, n, sums);
	} else if (use_avx2(cpu)) {
		wh_qg_colsums_avx2_u8(p, kp, n, sums);
	} else {
		size_t np = wh_qg_panels(n);
		for (size_t j = 0; j < np; j++)
			for (size_t c = 0; c < WH_QG_NR; c++) {
				uint32_t sum = 0;
				for (size_t k = 0; k < kp; k++)
					sum += p[j * kp * WH_QG_NR + (k / 4) * 4 * WH_QG_NR + c * 4 + k % 4];
				sums[j * WH_QG_NR + c] = (int32_t)sum;
			}
	}
}

void wh_qg_kernel(const struct wh_qg_args *a, size_t m0, size_t m1, const struct wh_cpu_features *cpu)
{
	if (use_vnni(cpu))
		wh_qg_kernel_avx512(a, m0, m1);
	else if (use_avx2(cpu))
		wh_qg_kernel_avx2(a, m0, m1);
	else
		wh_qg_kernel_scalar(a, m0, m1);
}

void wh_qdw_plane(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx, bool x_s8,
		  size_t rows, size_t n, size_t rs, int32_t *out, const struct wh_cpu_features *cpu)
{
	if (use_vnni(cpu))
		wh_qdw_plane_vnni(base, toff, wv, taps, zx, x_s8, rows, n, rs, out);
	else if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_qdw_plane_avx512(base, toff, wv, taps, zx, x_s8, rows, n, rs, out);
	else if (use_avx2(cpu))
		wh_qdw_plane_avx2(base, toff, wv, taps, zx, x_s8, rows, n, rs, out);
	else
		wh_qdw_plane_scalar(base, toff, wv, taps, zx, x_s8, rows, n, rs, out);
}

void wh_q_requant_bias(int32_t *acc, size_t n, int32_t bias, float mult, int32_t yz, bool y_s8, void *y,
		       const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512) {
		wh_q_requant_bias_avx512(acc, n, bias, mult, yz, y_s8, y);
		return;
	}
	/* wrapping adds, 4 at a time (SSE2, the baseline), then the requantization */
	size_t i = 0;
	const __m128i bv = _mm_set1_epi32(bias);
	for (; bias && i + 4 <= n; i += 4)
		_mm_storeu_si128((__m128i *)(acc + i), _mm_add_epi32(_mm_loadu_si128((const __m128i *)(acc + i)), bv));
	for (; bias && i < n; i++)
		acc[i] = (int32_t)((uint32_t)acc[i] + (uint32_t)bias);
	wh_q_requant(acc, n, &mult, 0, yz, y_s8, y, cpu);
}

void wh_q_requant_bias_rows(int32_t *acc, size_t lda, size_t rows, size_t n, const int32_t *bias, const float *mult,
			    int32_t yz, bool y_s8, uint8_t *y, size_t ldy, const struct wh_cpu_features *cpu)
{
	bool avx512 = cpu && cpu->isa >= WH_ISA_AVX512;
	for (size_t r = 0; r < rows; r++) {
		int32_t b = bias ? bias[r] : 0;
		if (avx512)
			wh_q_requant_bias_avx512(acc + r * lda, n, b, mult[r], yz, y_s8, y + r * ldy);
		else
			wh_q_requant_bias(acc + r * lda, n, b, mult[r], yz, y_s8, y + r * ldy, cpu);
	}
}

void wh_q_requant(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8, void *y,
		  const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_q_requant_avx512(acc, n, mult, mstride, yz, y_s8, y);
	else if (use_avx2(cpu))
		wh_q_requant_avx2(acc, n, mult, mstride, yz, y_s8, y);
	else
		wh_q_requant_scalar(acc, n, mult, mstride, yz, y_s8, y);
}

void wh_q_requant_scalar(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
			 void *y)
{
	double lo = y_s8 ? -128 : 0, hi = y_s8 ? 127 : 255;
	for (size_t i = 0; i < n; i++) {
		double v = nearbyint((double)acc[i] * (double)mult[i * mstride]) + (double)yz;
		v = v > lo ? v : lo;
		v = v < hi ? v : hi;
		if (y_s8)
			((int8_t *)y)[i] = (int8_t)v;
		else
			((uint8_t *)y)[i] = (uint8_t)v;
	}
}

void wh_q_quant(const float *x, size_t n, float scale, float zp, bool y_s8, void *y, const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_q_quant_avx512(x, n, scale, zp, y_s8, y);
	else if (use_avx2(cpu))
		wh_q_quant_avx2(x, n, scale, zp, y_s8, y);
	else
		wh_q_quant_scalar(x, n, scale, zp, y_s8, y);
}

void wh_q_quant_scalar(const float *x, size_t n, float scale, float zp, bool y_s8, void *y)
{
	float lo = y_s8 ? -128 : 0, hi = y_s8 ? 127 : 255;
	for (size_t i = 0; i < n; i++) {
		float v = nearbyintf(x[i] / scale) + zp;
		v = v != v ? 0 : v < lo ? lo : v > hi ? hi : v;
		if (y_s8)
			((int8_t *)y)[i] = (int8_t)v;
		else
			((uint8_t *)y)[i] = (uint8_t)v;
	}
}

void wh_q_dequant(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y,
		  const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_q_dequant_avx512(x, x_s8, n, zp, scale, y);
	else if (use_avx2(cpu))
		wh_q_dequant_avx2(x, x_s8, n, zp, scale, y);
	else
		wh_q_dequant_scalar(x, x_s8, n, zp, scale, y);
}

void wh_q_dequant_scalar(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y)
{
	for (size_t i = 0; i < n; i++) {
		int32_t d = (x_s8 ? (int32_t)((const int8_t *)x)[i] : (int32_t)((const uint8_t *)x)[i]) - zp;
		y[i] = (float)d * scale;
	}
}

void wh_q_scale_bias(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y,
		     const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_q_scale_bias_avx512(acc, n, mult, bias, has_bias, y);
	else if (use_avx2(cpu))
		wh_q_scale_bias_avx2(acc, n, mult, bias, has_bias, y);
	else
		wh_q_scale_bias_scalar(acc, n, mult, bias, has_bias, y);
}

void wh_q_scale_bias_scalar(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y)
{
	for (size_t i = 0; i < n; i++) {
		float v = (float)acc[i] * mult;
		y[i] = has_bias ? v + bias : v;
	}
}

void wh_q_scale_relu_quant(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale, float zp,
			   bool y_s8, void *y, const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512) {
		wh_q_scale_relu_quant_avx512(acc, n, mult, bias, has_bias, scale, zp, y_s8, y);
		return;
	}
	/* the passes apart, on a stack piece at a time */
	float tmp[256];
	for (size_t i = 0; i < n; i += 256) {
		size_t len = n - i < 256 ? n - i : 256;
		wh_q_scale_bias(acc + i, len, mult, bias, has_bias, tmp, cpu);
		for (size_t k = 0; k < len; k++)
			tmp[k] = 0 > tmp[k] ? 0 : tmp[k];
		wh_q_quant(tmp, len, scale, zp, y_s8, (uint8_t *)y + i, cpu);
	}
}

void wh_q_scale_relu_quant_rows(const int32_t *acc, size_t lda, size_t rows, size_t n, const float *mult,
				const float *bias, float scale, float zp, bool y_s8, uint8_t *y, size_t ldy,
				const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512) {
		wh_q_scale_relu_quant_rows_avx512(acc, lda, rows, n, mult, bias, scale, zp, y_s8, y, ldy);
		return;
	}
	for (size_t r = 0; r < rows; r++)
		wh_q_scale_relu_quant(acc + r * lda, n, mult[r], bias ? bias[r] : 0.0f, bias != NULL, scale, zp, y_s8,
				      y + r * ldy, cpu);
}

void wh_q_scale_relu_quant_scalar(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale,
				  float zp, bool y_s8, void *y)
{
	for (size_t i = 0; i < n; i++) {
		float v = (float)acc[i] * mult;
		v = has_bias ? v + bias : v;
		v = 0 > v ? 0 : v;
		wh_q_quant_scalar(&v, 1, scale, zp, y_s8, (uint8_t *)y + i);
	}
}

void wh_q_minmax(const float *x, size_t n, float *lo, float *hi, const struct wh_cpu_features *cpu)
{
	if (cpu && cpu->isa >= WH_ISA_AVX512)
		wh_q_minmax_avx512(x, n, lo, hi);
	else if (use_avx2(cpu))
		wh_q_minmax_avx2(x, n, lo, hi);
	else
		wh_q_minmax_scalar(x, n, lo, hi);
}

void wh_q_minmax_scalar(const float *x, size_t n, float *lo_out, float *hi_out)
{
	float lo = 0, hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (x[i] < lo)
			lo = x[i];
		if (x[i] > hi)
			hi = x[i];
	}
	*lo_out = lo;
	*hi_out = hi;
}

/* ---- integer convolution ---- */

/* Columns per block: whole groups of 64 (the 4x4 tile's 4 panels) but the last, at least 16
 * blocks per image and group where there are 16 groups (dynamic scheduling then leaves 2-4
 * threads within a few percent of even; fewer, larger blocks left one thread a third more
 * columns on 28x28 layers), at most the columns whose panels (kp x NB bytes) stay within
 * about 96 KB and 1024. Sizes only: the blocks never depend on the thread count (and the
 * integer results never on the blocks). */
static size_t conv_block_cols(size_t kp, size_t P)
{
	size_t cap = (size_t)96 * 1024 / (kp ? kp : 1) / 64;
	cap = cap < 1 ? 1 : cap > 16 ? 16 : cap;
	size_t per = (P + 63) / 64 / 16;
	per = per < 1 ? 1 : per > cap ? cap : per;
	size_t nb = per * 64;
	return nb > P ? (P + WH_QG_NR - 1) & ~(size_t)(WH_QG_NR - 1) : nb;
}

struct qconv_job {
	const struct wh_cpu_features *cpu;
	const struct wh_conv_shape *s;
	const uint8_t *x;
	uint8_t flip_x;  /* 0x80 when x is int8 (the panels are uint8) */
	uint8_t pad_x;   /* the padding byte: x's zero point in x's own encoding */
	int32_t zp;      /* x's zero point after the flip */
	const uint8_t *r; /* all M weight rows (int8 bytes) */
	const int32_t *rowc; /* per row: zp * rowfix */
	bool zr_any;     /* some weight zero point is not 0: the column sums are needed */
	size_t K, kp, nb, nblocks;
	const int32_t *rowfix, *zr;
	int32_t *acc;   /* NULL: the finish's scratch only */
	const struct wh_qconv_finish *fin;
	bool pointwise;  /* 1x1, stride 1, no padding: x is its own column matrix */
	/* otherwise the input, padded and split into stride phases along the width (below) */
	uint8_t *xs;
	size_t hp, wr, sw; /* padded height; phase length; width stride */
	size_t *koff;      /* per k of the column matrix: its tap's offset in the split planes */
	atomic_bool nomem;
};

/* Geometry as 2-D (a 1-D convolution is one row). */
struct geo2 {
	int64_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw, ph1, pw1;
};

static void geo2_of(const struct wh_conv_shape *s, struct geo2 *g)
{
	bool two = s->nsp == 2;
	int l = s->nsp - 1;
	*g = (struct geo2){two ? s->in[0] : 1, s->in[l], two ? s->out[0] : 1, s->out[l], two ? s->k[0] : 1, s->k[l],
			   two ? s->stride[0] : 1, s->stride[l], two ? s->dil[0] : 1, s->dil[l],
			   two ? s->pad0[0] : 0, s->pad0[l], two ? s->pad1[0] : 0, s->pad1[l]};
}

/* The padded input of every channel, each padded row (width Wp = pw + W + pw1) split into
 * sw phases of wr = ceil(Wp / sw) bytes: phase q holds padded columns q, q + sw, ... so
 * that the inputs of consecutive outputs of one tap are consecutive bytes. Each byte xor
 * flip_x (the panels' int8 encoding, so im2col copies them as they are). */
static void split_planes(void *arg, size_t begin, size_t end)
{
	struct qconv_job *j = arg;
	struct geo2 g;
	geo2_of(j->s, &g);
	size_t W = (size_t)g.W, H = (size_t)g.H, sw = j->sw, wr = j->wr, pw = (size_t)g.pw;
	const uint8_t flip = j->flip_x, pad = j->pad_x ^ flip;
	const __m128i fl = _mm_set1_epi8((char)flip);
	/* items are padded rows of all planes (a 3-channel stem has 3 planes for 2-4 threads) */
	for (size_t it = begin; it < end; it++) {
		size_t c = it / j->hp, r = it % j->hp;
		const uint8_t *xc = j->x + c * H * W;
		uint8_t *dc = j->xs + c * j->hp * sw * wr;
		{
			uint8_t *d = dc + r * sw * wr;
			int64_t ih = (int64_t)r - g.ph;
			if (ih < 0 || ih >= (int64_t)H) {
				memset(d, pad, sw * wr);
				continue;
			}
			const uint8_t *row = xc + (size_t)ih * W;
			if (sw == 1) {
				memset(d, pad, pw);
				size_t i = 0;
				for (; i + 16 <= W; i += 16)
					_mm_storeu_si128((__m128i *)(d + pw + i),
							 _mm_xor_si128(_mm_loadu_si128((const __m128i *)(row + i)), fl));
				for (; i < W; i++)
					d[pw + i] = row[i] ^ flip;
				memset(d + pw + W, pad, wr - pw - W);
				continue;
			}
			memset(d, pad, sw * wr);
			size_t i = 0;
			if (sw == 2) {
				/* even and odd bytes of 32 at a time (SSE2); with an odd left pad the
				 * even bytes of the row are the odd padded columns */
				const __m128i lo = _mm_set1_epi16(0x00FF);
				uint8_t *de = pw % 2 ? d + wr + (pw - 1) / 2 : d + pw / 2;
				uint8_t *dodd = pw % 2 ? d + (pw + 1) / 2 : d + wr + pw / 2;
				for (; i + 32 <= W; i += 32) {
					__m128i a = _mm_loadu_si128((const __m128i *)(row + i));
					__m128i b = _mm_loadu_si128((const __m128i *)(row + i + 16));
					__m128i ev = _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo));
					__m128i od = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
					_mm_storeu_si128((__m128i *)(de + i / 2), _mm_xor_si128(ev, fl));
					_mm_storeu_si128((__m128i *)(dodd + i / 2), _mm_xor_si128(od, fl));
				}
				if (i < W && W >= 33) {
					/* the tail: the last 32 bytes from an even offset (they rewrite
					 * some bytes with the same values) */
					size_t t = (W - 32) & ~(size_t)1;
					__m128i a = _mm_loadu_si128((const __m128i *)(row + t));
					__m128i b = _mm_loadu_si128((const __m128i *)(row + t + 16));
					__m128i ev = _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo));
					__m128i od = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
					_mm_storeu_si128((__m128i *)(de + t / 2), _mm_xor_si128(ev, fl));
					_mm_storeu_si128((__m128i *)(dodd + t / 2), _mm_xor_si128(od, fl));
					i = t + 32;
				}
			}
			size_t q = (pw + i) % sw, idx = (pw + i) / sw;
			for (; i < W; i++) {
				d[q * wr + idx] = row[i] ^ flip;
				if (++q == sw) {
					q = 0;
					idx++;
				}
			}
		}
	}
}

/* The panels of columns [n0, n0 + cnt) of the column matrix of image n, group g (planes from
 * plane0), straight from the split planes: what im2col then wh_qg_pack give, without the
 * column buffer. Per group of 4 k, 16 columns at a time: 4 loads and the byte interleave of
 * wh_qg_pack where the 16 columns lie in one output row, two loads blended where they span
 * two (the split planes have 64 bytes of slack at the end), byte by byte otherwise. */
static void im2col_pack(const struct qconv_job *j, size_t plane0, size_t n0, size_t cnt, int8_t *pan)
{
	static const uint8_t masks[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
					  0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
	struct geo2 g;
	geo2_of(j->s, &g);
	size_t OW = (size_t)g.OW, K = j->K, kp = j->kp, sw = j->sw, wr = j->wr;
	size_t rs = (size_t)g.sh * sw * wr, plane = j->hp * sw * wr;
	/* per chunk of 16 columns, the same for every k: where it starts (offa), and where its
	 * columns on the next output row start less the split (offb, split > 0: blended;
	 * split 0: in one row; split 16: byte by byte) */
	size_t offa[64], offb[64];
	uint8_t split[64];
	size_t nch = (cnt + WH_QG_NR - 1) / WH_QG_NR;
	for (size_t ch = 0; ch < nch; ch++) {
		size_t n = n0 + ch * WH_QG_NR, oh = n / OW, ow = n % OW;
		size_t nn = cnt - ch * WH_QG_NR < WH_QG_NR ? cnt - ch * WH_QG_NR : WH_QG_NR;
		offa[ch] = oh * rs + ow;
		offb[ch] = 0;
		split[ch] = 0;
		if (nn < WH_QG_NR || (ow + WH_QG_NR > OW && OW < WH_QG_NR)) {
			split[ch] = WH_QG_NR;
		} else if (ow + WH_QG_NR > OW) {
			split[ch] = (uint8_t)(OW - ow);
			offb[ch] = (oh + 1) * rs - (OW - ow);
		}
	}
	for (size_t k0 = 0; k0 < kp; k0 += 4) {
		const uint8_t *b[4] = {NULL, NULL, NULL, NULL};
		/* the k past K (the last group's): read as k0's, then zero */
		size_t valid = K - k0 < 4 ? K - k0 : 4;
		for (size_t q = 0; q < 4; q++)
			b[q] = j->xs + plane0 * plane + j->koff[k0 + (q < valid ? q : 0)];
		for (size_t ch = 0; ch < nch; ch++) {
			int8_t *d = pan + ch * kp * WH_QG_NR + k0 * WH_QG_NR;
			if (split[ch] < WH_QG_NR) {
				const uint8_t *s0 = b[0] + offa[ch], *s1 = b[1] + offa[ch], *s2 = b[2] + offa[ch],
					      *s3 = b[3] + offa[ch];
				__m128i r0 = _mm_loadu_si128((const __m128i *)s0), r1 = _mm_loadu_si128((const __m128i *)s1);
				__m128i r2 = _mm_loadu_si128((const __m128i *)s2), r3 = _mm_loadu_si128((const __m128i *)s3);
				if (split[ch]) {
					/* the first split columns from row oh, the rest from oh + 1 */
					const __m128i mk = _mm_loadu_si128((const __m128i *)(masks + WH_QG_NR - split[ch]));
					size_t ob = offb[ch];
#define WH_QBLEND(R, Q) R = _mm_or_si128(_mm_and_si128(mk, R), _mm_andnot_si128(mk, _mm_loadu_si128((const __m128i *)(b[Q] + ob))))
					WH_QBLEND(r0, 0);
					WH_QBLEND(r1, 1);
					WH_QBLEND(r2, 2);
					WH_QBLEND(r3, 3);
#undef WH_QBLEND
				}
				if (valid < 4) {
					const __m128i z = _mm_setzero_si128();
					r3 = z;
					r2 = valid < 3 ? z : r2;
					r1 = valid < 2 ? z : r1;
				}
				__m128i a = _mm_unpacklo_epi8(r0, r1), bb = _mm_unpackhi_epi8(r0, r1);
				__m128i cc = _mm_unpacklo_epi8(r2, r3), e = _mm_unpackhi_epi8(r2, r3);
				_mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(a, cc));
				_mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(a, cc));
				_mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(bb, e));
				_mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(bb, e));
				continue;
			}
			size_t n = n0 + ch * WH_QG_NR, oh = n / OW, ow = n % OW;
			size_t nn = cnt - ch * WH_QG_NR < WH_QG_NR ? cnt - ch * WH_QG_NR : WH_QG_NR;
			memset(d, 0, 4 * WH_QG_NR);
			for (size_t i = 0; i < nn; i++) {
				for (size_t q = 0; q < valid; q++)
					d[i * 4 + q] = (int8_t)b[q][oh * rs + ow];
				if (++ow == OW) {
					ow = 0;
					oh++;
				}
			}
		}
	}
}

/* Depthwise: plane c (image c / C, channel c % C) row by row over the split planes. */
struct qdw_job {
	struct qconv_job *j;
	const uint8_t *w;
	bool x_s8, w_s8;
	const int32_t *zw;
	int32_t zx;
};

static void qdw_chunk(void *arg, size_t begin, size_t end)
{
	const struct qdw_job *d = arg;
	struct qconv_job *j = d->j;
	const struct wh_conv_shape *s = j->s;
	struct geo2 g;
	geo2_of(s, &g);
	size_t taps = (size_t)(g.KH * g.KW), OW = (size_t)g.OW, OH = (size_t)g.OH, sw = j->sw, wr = j->wr;
	size_t toff[64];
	int32_t wv[64];
	size_t t = 0;
	for (int64_t kh = 0; kh < g.KH; kh++)
		for (int64_t kw = 0; kw < g.KW; kw++, t++) {
			size_t q = (size_t)(kw * g.dw) % sw, off = (size_t)(kw * g.dw) / sw;
			toff[t] = (size_t)(kh * g.dh) * sw * wr + q * wr + off;
		}
	int32_t *scratch = j->acc ? NULL : malloc(OH * OW * sizeof(int32_t) + 1);
	if (!j->acc && !scratch) {
		atomic_store(&j->nomem, true);
		return;
	}
	for (size_t c = begin; c < end; c++) {
		size_t co = c % (size_t)s->M;
		int32_t *out = j->acc ? j->acc + c * OH * OW : scratch;
		const uint8_t *pc = j->xs + c * j->hp * sw * wr;
		for (t = 0; t < taps; t++) {
			uint8_t b = d->w[co * taps + t];
			wv[t] = (d->w_s8 ? (int32_t)(int8_t)b : (int32_t)b) - d->zw[co];
		}
		wh_qdw_plane(pc, toff, wv, taps, d->zx, d->x_s8, OH, OW, (size_t)g.sh * sw * wr, out, j->cpu);
		if (j->fin)
			j->fin->fn(j->fin->arg, c, 0, out, OH * OW, 1, OH * OW);
	}
	free(scratch);
}

static void qconv_chunk(void *arg, size_t begin, size_t end)
{
	struct qconv_job *j = arg;
	const struct wh_conv_shape *s = j->s;
	size_t P = 1, Pin = 1;
	for (int d = 0; d < s->nsp; d++) {
		P *= (size_t)s->out[d];
		Pin *= (size_t)s->in[d];
	}
	size_t Cg = (size_t)(s->C / s->G), Mg = (size_t)(s->M / s->G);
	size_t kp = j->kp, nb = j->nb;
	int8_t *pan = malloc(kp * nb + 64);
	int32_t *cs = malloc(2 * nb * sizeof(int32_t));
	int32_t *scratch = j->acc ? NULL : malloc(Mg * nb * sizeof(int32_t) + 1);
	if (!pan || !cs || (!j->acc && !scratch)) {
		atomic_store(&j->nomem, true);
		goto out;
	}
	int32_t *zpv = cs + nb;
	for (size_t i = 0; i < nb; i++)
		zpv[i] = j->zp;
	for (size_t c = begin; c < end; c++) {
		size_t b = c % j->nblocks, ng = c / j->nblocks;
		size_t g = ng % (size_t)s->G, n = ng / (size_t)s->G;
		size_t n0 = b * nb, cnt = P - n0 < nb ? P - n0 : nb;
		if (j->pointwise) {
			wh_qg_pack(j->x + (n * (size_t)s->C + g * Cg) * Pin + n0, Pin, j->K, cnt, j->flip_x, pan);
		} else {
			im2col_pack(j, n * (size_t)s->C + g * Cg, n0, cnt, pan);
		}
		if (j->zr_any)
			wh_qg_colsums_u8((const uint8_t *)pan, kp, cnt, cs, j->cpu);
		struct wh_qg_args a = {
			.r = j->r + g * Mg * kp, .kp = kp, .p = pan, .n = cnt,
			.rowfix = j->rowfix + g * Mg, .zr = j->zr + g * Mg, .colsum = j->zr_any ? cs : NULL, .zp = zpv,
			.c = j->acc ? j->acc + (n * (size_t)s->M + g * Mg) * P + n0 : scratch, .ldc = j->acc ? P : cnt,
			.rowc = j->rowc + g * Mg, .swap = true,
		};
		wh_qg_kernel(&a, 0, Mg, j->cpu);
		if (j->fin)
			j->fin->fn(j->fin->arg, n * (size_t)s->M + g * Mg, n0, a.c, a.ldc, Mg, cnt);
	}
out:
	free(scratch);
	free(pan);
	free(cs);
}

static enum wh_status qconv(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, const struct wh_conv_shape *s,
			    const void *x, bool x_s8, int32_t zx, const void *w, bool w_s8, const int32_t *zw,
			    const int32_t *bias, int32_t *acc, const struct wh_qconv_finish *fin);

enum wh_status wh_qconv(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, const struct wh_conv_shape *s,
			const void *x, bool x_s8, int32_t zx, const void *w, bool w_s8, const int32_t *zw,
			const int32_t *bias, int32_t *acc)
{
	return qconv(cpu, pool, s, x, x_s8, zx, w, w_s8, zw, bias, acc, NULL);
}

enum wh_status wh_qconv_fin(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_conv_shape *s, const void *x, bool x_s8, int32_t zx, const void *w,
			    bool w_s8, const int32_t *zw, int32_t *acc, const struct wh_qconv_finish *fin)
{
	return qconv(cpu, pool, s, x, x_s8, zx, w, w_s8, zw, NULL, acc, fin);
}

static enum wh_status qconv(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, const struct wh_conv_shape *s,
			    const void *x, bool x_s8, int32_t zx, const void *w, bool w_s8, const int32_t *zw,
			    const int32_t *bias, int32_t *acc, const struct wh_qconv_finish *fin)
{
	if (s->nsp > 2)
		return WH_ERR_UNSUPPORTED;
	size_t M = (size_t)s->M, Cg = (size_t)(s->C / s->G), KS = 1, P = 1;
	for (int d = 0; d < s->nsp; d++) {
		KS *= (size_t)s->k[d];
		P *= (size_t)s->out[d];
	}
	size_t K = Cg * KS, kp = wh_qg_kp(K);
	struct qconv_job j = {.cpu = cpu, .s = s, .x = x, .K = K, .kp = kp, .acc = acc, .fin = fin};
	if (M == 0 || P == 0 || s->N == 0)
		return WH_OK;
	uint8_t *r = malloc(M * kp);
	int32_t *rs = malloc(3 * M * sizeof(int32_t));
	if (!r || !rs) {
		free(r);
		free(rs);
		return WH_ERR_NOMEM;
	}
	/* the swapped pair (qgemm-internal.h): weight rows int8 (uint8 weights flipped, zw - 128),
	 * panels uint8 (int8 x flipped, zx + 128) */
	int32_t *zr = rs + M, *rowc = rs + 2 * M;
	rows_s8(w, M, K, w_s8 ? 0 : 0x80, r, rs);
	j.zp = zx + (x_s8 ? 128 : 0);
	j.zr_any = false;
	for (size_t m = 0; m < M; m++) {
		zr[m] = zw[m] - (w_s8 ? 0 : 128);
		rs[m] = (int32_t)((uint32_t)rs[m] - (uint32_t)K * (uint32_t)zr[m]);
		rowc[m] = (int32_t)((uint32_t)j.zp * (uint32_t)rs[m]);
		j.zr_any = j.zr_any || zr[m] != 0;
	}
	j.r = r;
	j.rowfix = rs;
	j.zr = zr;
	j.rowc = rowc;
	j.flip_x = x_s8 ? 0x80 : 0;
	j.pad_x = (uint8_t)zx;
	bool one = true;
	for (int d = 0; d < s->nsp; d++)
		one = one && s->k[d] == 1 && s->stride[d] == 1 && s->pad0[d] == 0 && s->pad1[d] == 0;
	j.pointwise = one;
	j.nb = conv_block_cols(kp, P);
	j.nblocks = (P + j.nb - 1) / j.nb;
	atomic_init(&j.nomem, false);
	enum wh_status st = WH_OK;
	if (!one) {
		struct geo2 g;
		geo2_of(s, &g);
		size_t Wp = (size_t)(g.pw + g.W + g.pw1);
		j.sw = (size_t)g.sw;
		j.wr = (Wp + j.sw - 1) / j.sw;
		j.hp = (size_t)(g.ph + g.H + g.ph1);
		size_t planes = (size_t)(s->N * s->C);
		j.xs = malloc(planes * j.hp * j.sw * j.wr + 64);
		j.koff = malloc(K * sizeof *j.koff + 1);
		if (!j.xs || !j.koff) {
			st = WH_ERR_NOMEM;
			goto out;
		}
		size_t plane = j.hp * j.sw * j.wr, taps = (size_t)(g.KH * g.KW);
		/* the first tap's offsets, then one channel plane further per channel (no
		 * divisions per k: this part is serial) */
		for (size_t t = 0; t < taps && t < K; t++) {
			size_t kh = t / (size_t)g.KW, kw = t % (size_t)g.KW, col = kw * (size_t)g.dw;
			j.koff[t] = kh * (size_t)g.dh * j.sw * j.wr + (col % j.sw) * j.wr + col / j.sw;
		}
		for (size_t k = taps; k < K; k++)
			j.koff[k] = j.koff[k - taps] + plane;
		wh_parallel_for(pool, planes * j.hp, wh_grain_for((uint64_t)(j.sw * j.wr)), split_planes, &j);
	}
	if (Cg == 1 && M == (size_t)s->G && !one && KS <= 64) {
		/* the split planes hold x in uint8 encoding (int8 x flipped: x + 128, zx + 128) */
		struct qdw_job d = {&j, w, false, w_s8, zw, x_s8 ? zx + 128 : zx};
		wh_parallel_for(pool, (size_t)(s->N * s->C), wh_grain_for((uint64_t)(P * KS)), qdw_chunk, &d);
	} else {
		wh_parallel_for(pool, (size_t)(s->N * s->G) * j.nblocks, 1, qconv_chunk, &j);
	}
	if (atomic_load(&j.nomem))
		st = WH_ERR_NOMEM;
	if (!st && bias) {
		for (size_t n = 0; n < (size_t)s->N; n++)
			for (size_t m = 0; m < M; m++) {
				int32_t *c = acc + (n * M + m) * P;
				for (size_t i = 0; i < P; i++)
					c[i] = (int32_t)((uint32_t)c[i] + (uint32_t)bias[m]);
			}
	}
out:
	free(j.xs);
	free(j.koff);
	free(r);
	free(rs);
	return st;
}

/* ---- integer matrix product ---- */

#define QMM_MB 64 /* rows per tile */

struct qmm_job {
	const struct wh_cpu_features *cpu;
	const uint8_t *b;
	uint8_t flip_b;
	size_t N, K, kp, np, mtiles, M;
	int8_t *pan;
	int32_t *colsum;
	const int32_t *zpv;
	const uint8_t *r;
	const int32_t *rowfix, *zr;
	int32_t *c;
};

#define QMM_PB 4 /* panels per packing chunk and per product tile */

static void qmm_pack_chunk(void *arg, size_t begin, size_t end)
{
	struct qmm_job *j = arg;
	for (size_t t = begin; t < end; t++) {
		size_t n0 = t * QMM_PB * WH_QG_NR;
		size_t cnt = j->N - n0 < QMM_PB * WH_QG_NR ? j->N - n0 : QMM_PB * WH_QG_NR;
		int8_t *p = j->pan + n0 * j->kp;
		wh_qg_pack(j->b + n0, j->N, j->K, cnt, j->flip_b, p);
		wh_qg_colsums(p, j->kp, cnt, j->colsum + n0, j->cpu);
	}
}

static void qmm_chunk(void *arg, size_t begin, size_t end)
{
	struct qmm_job *j = arg;
	size_t ntiles = (j->np + QMM_PB - 1) / QMM_PB;
	for (size_t t = begin; t < end; t++) {
		size_t mt = t / ntiles, nt = t % ntiles;
		size_t m0 = mt * QMM_MB, m1 = m0 + QMM_MB < j->M ? m0 + QMM_MB : j->M;
		size_t n0 = nt * QMM_PB * WH_QG_NR;
		size_t cnt = j->N - n0 < QMM_PB * WH_QG_NR ? j->N - n0 : QMM_PB * WH_QG_NR;
		struct wh_qg_args a = {
			.r = j->r, .kp = j->kp, .p = j->pan + n0 * j->kp, .n = cnt,
			.rowfix = j->rowfix, .zr = j->zr, .colsum = j->colsum + n0, .zp = j->zpv + n0,
			.c = j->c + n0, .ldc = j->N,
		};
		wh_qg_kernel(&a, m0, m1, j->cpu);
	}
}

enum wh_status wh_qmatmul(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, size_t M, size_t N,
			  size_t K, const void *a, bool a_s8, const int32_t *za, const void *b, bool b_s8,
			  const int32_t *zb, const int8_t *bp, const int32_t *bsum, int32_t *c)
{
	if (M == 0 || N == 0)
		return WH_OK;
	size_t kp = wh_qg_kp(K), np = wh_qg_panels(N), npad = np * WH_QG_NR;
	struct qmm_job j = {.cpu = cpu, .b = b, .flip_b = b_s8 ? 0 : 0x80, .N = N, .K = K, .kp = kp, .np = np,
			    .M = M, .c = c};
	int8_t *pan = bp ? NULL : malloc(np * kp * WH_QG_NR + 64);
	int32_t *ints = malloc((2 * npad + 2 * M) * sizeof(int32_t));
	uint8_t *r = malloc(M * kp + 1);
	if ((!bp && !pan) || !ints || !r) {
		free(pan);
		free(ints);
		free(r);
		return WH_ERR_NOMEM;
	}
	int32_t *colsum = ints, *zpv = ints + npad, *rowfix = ints + 2 * npad, *zr = rowfix + M;
	for (size_t n = 0; n < npad; n++)
		zpv[n] = n < N ? zb[n] - (b_s8 ? 0 : 128) : 0;
	wh_qg_rows(a, K, M, K, a_s8 ? 0x80 : 0, r, rowfix);
	for (size_t m = 0; m < M; m++) {
		zr[m] = za[m] + (a_s8 ? 128 : 0);
		rowfix[m] = (int32_t)((uint32_t)rowfix[m] - (uint32_t)K * (uint32_t)zr[m]);
	}
	size_t ntiles = (np + QMM_PB - 1) / QMM_PB;
	j.zpv = zpv;
	j.r = r;
	j.rowfix = rowfix;
	j.zr = zr;
	if (bp) {
		j.pan = (int8_t *)(uintptr_t)bp;
		j.colsum = (int32_t *)(uintptr_t)bsum;
	} else {
		j.pan = pan;
		j.colsum = colsum;
		wh_parallel_for(pool, ntiles, 1, qmm_pack_chunk, &j);
	}
	j.mtiles = (M + QMM_MB - 1) / QMM_MB;
	wh_parallel_for(pool, j.mtiles * ntiles, 1, qmm_chunk, &j);
	free(pan);
	free(ints);
	free(r);
	return WH_OK;
}
