/* Private to executor/ops/ (conv.c, gemm.c, cast.c, qgemm*.c) and tests/check-quant-kernels.c:
 * the 8-bit integer GEMM behind ConvInteger, QLinearConv, MatMulInteger and QLinearMatMul,
 * and the bulk loops of the quantization ops (requantization, QuantizeLinear,
 * DequantizeLinear, DynamicQuantizeLinear).
 *
 * The product. C[m][n] = sum_k (r[m][k] - zr[m]) * (p[k][n] - zp[n]) with int32 arithmetic
 * that wraps (the ONNX reference's int32 accumulation). Every operand is brought to one
 * signedness pair first: the row side ("R", broadcast by the kernels) to uint8, the panel
 * side ("P", packed) to int8. An int8 row value becomes r ^ 0x80 = r + 128 with its zero point
 * raised by 128; a uint8 panel value becomes p ^ 0x80 = p - 128 with its zero point lowered
 * by 128; the differences r - zr and p - zp are unchanged. The kernels then sum the raw
 * products and apply the zero points afterwards:
 *   C = sum r*p - zp[n] * (rowsum[m] - K*zr[m]) - zr[m] * colsum[n]
 * which is the same polynomial, so the same integer modulo 2^32: every ISA gives the scalar
 * reference's bits, and the thread count only changes which thread computes a tile.
 * Convolutions take the other pair (swap: weight rows int8, panels uint8): int8 weights
 * are symmetric as quantizers write them (zr 0), so the colsum term and its pass vanish,
 * and the x zero point is one value, so zp * rowfix is one per row (rowc).
 *
 * Layouts. R: M rows of kp = K rounded up to 4 bytes each (the padding is 0). P: panels of
 * WH_QG_NR = 16 columns; panel j holds columns [16j, 16j + 16) as kp/4 groups of 16 columns x
 * 4 consecutive k (the operand order of vpdpbusd); padding columns and k are 0 (0 adds nothing
 * to the dot products, the row sums or the column sums).
 *
 * ISA paths (chosen from cpu): AVX-512 with VNNI (vpdpbusd, 4 rows x 64 columns per tile),
 * AVX2 (bytes widened to int16 and multiplied with vpmaddwd: exact, unlike vpmaddubsw, whose
 * int16 pair sums saturate for uint8 x int8), scalar. A machine with AVX-512 but without
 * VNNI takes the AVX2 path.
 *
 * No function keeps a pointer; callers own every buffer. */
#ifndef WH_QGEMM_INTERNAL_H
#define WH_QGEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "executor/threadpool.h"
#include "graph/status.h"

struct wh_conv_shape; /* conv-internal.h */

#define WH_QG_NR 16

static inline size_t wh_qg_kp(size_t K)
{
	return (K + 3) & ~(size_t)3;
}

static inline size_t wh_qg_panels(size_t N)
{
	return (N + WH_QG_NR - 1) / WH_QG_NR;
}

/* Packs the K x N block whose row k starts at src + k * ld into panels (wh_qg_panels(N)
 * panels of wh_qg_kp(K) * 16 bytes), each byte xor flip (0x80 for uint8 data). */
void wh_qg_pack(const uint8_t *src, size_t ld, size_t K, size_t N, uint8_t flip, int8_t *panels);
/* Copies M rows of K bytes (row m at src + m * ld), each byte xor flip (0x80 for int8 data),
 * into M rows of wh_qg_kp(K) bytes; rowsum[m] gets the sum of row m's (flipped) bytes. */
void wh_qg_rows(const uint8_t *src, size_t ld, size_t M, size_t K, uint8_t flip, uint8_t *dst, int32_t *rowsum);

/* One product over packed operands. */
struct wh_qg_args {
	const uint8_t *r;      /* rows, kp bytes each */
	size_t kp;
	const int8_t *p;       /* panels of n columns */
	size_t n;
	const int32_t *rowfix; /* per row: rowsum - K * zr */
	const int32_t *zr;     /* per row: the row side's zero point (after the flip) */
	const int32_t *colsum; /* per column, wh_qg_panels(n) * 16 entries; NULL: every zr is 0 */
	const int32_t *zp;     /* per column, as many: the panel side's zero point (after the flip) */
	int32_t *c;            /* row m at c + m * ldc, columns [0, n) */
	size_t ldc;
	const int32_t *rowc;   /* per row, or NULL: zp * rowfix where zp is one value for all columns */
	bool swap;             /* the rows int8 and the panels uint8 (the flips the other way) */
};

/* Rows [m0, m1) of the product (rows index a->r, a->rowfix, a->zr and c from 0). */
void wh_qg_kernel(const struct wh_qg_args *a, size_t m0, size_t m1, const struct wh_cpu_features *cpu);
void wh_qg_kernel_scalar(const struct wh_qg_args *a, size_t m0, size_t m1);
void wh_qg_kernel_avx2(const struct wh_qg_args *a, size_t m0, size_t m1);
void wh_qg_kernel_avx512(const struct wh_qg_args *a, size_t m0, size_t m1); /* needs VNNI */
/* Column sums of n columns of packed panels (wh_qg_panels(n) * 16 entries written); _u8:
 * of panels of uint8 bytes (swap). */
void wh_qg_colsums(const int8_t *p, size_t kp, size_t n, int32_t *sums, const struct wh_cpu_features *cpu);
void wh_qg_colsums_u8(const uint8_t *p, size_t kp, size_t n, int32_t *sums, const struct wh_cpu_features *cpu);

/* Depthwise planes: out[r * n + i] = sum over t < taps of (x(base + r * rs + toff[t] + i) -
 * zx) * wv[t] for r < rows, i < n (8-bit x, signed when x_s8; taps <= 64), wrapping int32.
 * Every path reads only those bytes. */
void wh_qdw_plane(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx, bool x_s8,
		  size_t rows, size_t n, size_t rs, int32_t *out, const struct wh_cpu_features *cpu);
void wh_qdw_plane_scalar(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
			 bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out);
void wh_qdw_plane_avx2(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
		       bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out);
void wh_qdw_plane_avx512(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
			 bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out);
/* needs VNNI; weights within int8 take vpdpbusd, others wh_qdw_plane_avx512 */
void wh_qdw_plane_vnni(const uint8_t *base, const size_t *toff, const int32_t *wv, size_t taps, int32_t zx,
		       bool x_s8, size_t rows, size_t n, size_t rs, int32_t *out);

/* ---- the operators' integer products ---- */

/* Integer convolution: acc = conv(x - zx, w - zw[co]) (+ bias[co]), 8-bit x and w (signed
 * when x_s8 / w_s8), zw one value per output channel (s->M of them), bias int32 or NULL;
 * acc as y's layout [N, M, out...]. Depthwise layers (one input and one output channel per
 * group) run wh_qdw_plane over each output plane, the others the GEMM. 1-D and 2-D only: WH_ERR_UNSUPPORTED for other ranks
 * (the caller runs its reference), WH_ERR_NOMEM when scratch memory runs out. */
enum wh_status wh_qconv(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, const struct wh_conv_shape *s,
			const void *x, bool x_s8, int32_t zx, const void *w, bool w_s8, const int32_t *zw,
			const int32_t *bias, int32_t *acc);

/* wh_qconv handing each block of sums to fin->fn as soon as it is computed (while it is in
 * cache): fn(arg, plane, col0, sums, ld, rows, cnt) for outputs [col0, col0 + cnt) of the
 * output planes plane .. plane + rows - 1 (n * M + m: one image, consecutive channels), row r's
 * sums at sums + r * ld; every output exactly once, from any thread. With acc the sums are
 * also there (fn may overwrite them in place); with acc NULL they live in the task's scratch
 * only. No bias (add it in fn). */
struct wh_qconv_finish {
	void (*fn)(void *arg, size_t plane, size_t col0, int32_t *sums, size_t ld, size_t rows, size_t cnt);
	void *arg;
};
enum wh_status wh_qconv_fin(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_conv_shape *s, const void *x, bool x_s8, int32_t zx, const void *w,
			    bool w_s8, const int32_t *zw, int32_t *acc, const struct wh_qconv_finish *fin);

/* Integer matrix product of one matrix pair: c[M][N] = (a - za[m]) x (b - zb[n]), a [M][K]
 * and b [K][N] row-major 8-bit (signed when a_s8 / b_s8), za M values, zb N values. bp and
 * bsum: b already packed (with the flip b_s8 ? 0 : 0x80) and its column sums, from
 * wh_qgemm_packed_b, or NULL: packed here. */
enum wh_status wh_qmatmul(const struct wh_cpu_features *cpu, struct wh_threadpool *pool, size_t M, size_t N,
			  size_t K, const void *a, bool a_s8, const int32_t *za, const void *b, bool b_s8,
			  const int32_t *zb, const int8_t *bp, const int32_t *bsum, int32_t *c);

/* The engine's packed copy (ctx->packs, gemm-pack.c) of input k of the node, a K x N
 * 8-bit initializer, packed with flip, and its column sums in *colsum; NULL (pack per call)
 * when input k is not an initializer's own bytes, at its first use (an engine that runs
 * once never pays for the copy), or beyond the weight-cache budget. The copy belongs to the
 * cache. */
struct wh_kernel_ctx;
const int8_t *wh_qgemm_packed_b(const struct wh_kernel_ctx *ctx, uint32_t k, size_t K, size_t N, uint8_t flip,
				const int32_t **colsum);

/* ---- bulk loops of the quantization ops (exact: every ISA gives the scalar bits) ---- */

/* Requantization of QLinearConv / QLinearMatMul: y[i] = clamp(rint((double)acc[i] *
 * (double)mult[i * mstride]) + yz) to uint8 (y_s8 false) or int8, rint rounding half to even;
 * the clamp is max then min (a NaN becomes the lower bound). */
void wh_q_requant(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8, void *y,
		  const struct wh_cpu_features *cpu);
void wh_q_requant_scalar(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
			 void *y);
void wh_q_requant_avx2(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
		       void *y);
void wh_q_requant_avx512(const int32_t *acc, size_t n, const float *mult, size_t mstride, int32_t yz, bool y_s8,
			 void *y);

/* wh_q_requant of acc + bias (wrapping int32 adds) with one multiplier: QLinearConv's finish.
 * acc may be overwritten (the bias added in place). */
void wh_q_requant_bias(int32_t *acc, size_t n, int32_t bias, float mult, int32_t yz, bool y_s8, void *y,
		       const struct wh_cpu_features *cpu);
void wh_q_requant_bias_avx512(const int32_t *acc, size_t n, int32_t bias, float mult, int32_t yz, bool y_s8, void *y);
/* rows of n: row r from acc + r * lda (may be overwritten) with bias[r] (bias NULL: 0) and
 * mult[r] to y + r * ldy */
void wh_q_requant_bias_rows(int32_t *acc, size_t lda, size_t rows, size_t n, const int32_t *bias, const float *mult,
			    int32_t yz, bool y_s8, uint8_t *y, size_t ldy, const struct wh_cpu_features *cpu);

/* QuantizeLinear's float32 to 8 bits: v = nearbyintf(x[i] / scale) + zp in float32, NaN
 * to 0, clamped to [0, 255] (uint8) or [-128, 127] (int8). */
void wh_q_quant(const float *x, size_t n, float scale, float zp, bool y_s8, void *y, const struct wh_cpu_features *cpu);
void wh_q_quant_scalar(const float *x, size_t n, float scale, float zp, bool y_s8, void *y);
void wh_q_quant_avx2(const float *x, size_t n, float scale, float zp, bool y_s8, void *y);
void wh_q_quant_avx512(const float *x, size_t n, float scale, float zp, bool y_s8, void *y);

/* DequantizeLinear's 8 bits to float32: y[i] = (float)(x[i] - zp) * scale. */
void wh_q_dequant(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y,
		  const struct wh_cpu_features *cpu);
void wh_q_dequant_scalar(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y);
void wh_q_dequant_avx2(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y);
void wh_q_dequant_avx512(const void *x, bool x_s8, size_t n, int32_t zp, float scale, float *y);

/* The float result of a QDQ convolution (executor/qdq.h): y[i] = (float)acc[i] * mult,
 * then + bias when has_bias; two roundings in that order (no FMA) on every ISA, so every ISA
 * gives the scalar bits. y may be acc's own memory (same index, read before written). */
void wh_q_scale_bias(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y,
		     const struct wh_cpu_features *cpu);
void wh_q_scale_bias_scalar(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y);
void wh_q_scale_bias_avx2(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y);
void wh_q_scale_bias_avx512(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float *y);

/* A QDQ Conv's sums to a fused Relu then QuantizeLinear in one pass: the bits of
 * wh_q_scale_bias, then Relu (0 > v ? 0 : v), then wh_q_quant, run apart. _rows: rows of n
 * (row r: acc + r * lda to y + r * ldy, with mult[r] and bias[r], bias NULL: none), the
 * setup once. */
void wh_q_scale_relu_quant_rows(const int32_t *acc, size_t lda, size_t rows, size_t n, const float *mult,
				const float *bias, float scale, float zp, bool y_s8, uint8_t *y, size_t ldy,
				const struct wh_cpu_features *cpu);
void wh_q_scale_relu_quant_rows_avx512(const int32_t *acc, size_t lda, size_t rows, size_t n, const float *mult,
				       const float *bias, float scale, float zp, bool y_s8, uint8_t *y, size_t ldy);
void wh_q_scale_relu_quant(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale, float zp,
			   bool y_s8, void *y, const struct wh_cpu_features *cpu);
void wh_q_scale_relu_quant_scalar(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale,
				  float zp, bool y_s8, void *y);
void wh_q_scale_relu_quant_avx512(const int32_t *acc, size_t n, float mult, float bias, bool has_bias, float scale,
				  float zp, bool y_s8, void *y);

/* DynamicQuantizeLinear's range: *lo = min(0, x...), *hi = max(0, x...), NaN ignored (the
 * order of a min and a max does not matter, so any split gives the same answer). */
void wh_q_minmax(const float *x, size_t n, float *lo, float *hi, const struct wh_cpu_features *cpu);
void wh_q_minmax_scalar(const float *x, size_t n, float *lo, float *hi);
void wh_q_minmax_avx2(const float *x, size_t n, float *lo, float *hi);
void wh_q_minmax_avx512(const float *x, size_t n, float *lo, float *hi);

#endif
