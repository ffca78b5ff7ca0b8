/* Private to executor/ops/ (conv.c, its SIMD variants and tests/check-conv.c): float32
 * convolution drivers, their scalar references and the row helpers of the SIMD files.
 *
 * The fast Conv path never materialises im2col: the input is copied once into a padded
 * "plane" per channel whose last dimension is split into stride phases, so that for every
 * kernel tap the inputs of consecutive outputs of a row are consecutive floats; the GEMM
 * engine (gemm-internal.h) then reads B's row for tap k at base + koff[k]. Depthwise
 * convolutions (one input and one output channel per group) run plane by plane over the
 * same planes. ConvTranspose runs a GEMM into a column buffer followed by a col2im that
 * each output channel performs alone, in a fixed order. Results never depend on the
 * thread count.
 *
 * Conv sums in ONNX Runtime's order (MLAS on x86-64), so that whittle agrees with ORT's
 * CPU results bit for bit where the operations are the same: K = (input channel, tap) is
 * cut into MLAS's blocks (wh_sgemm_ort_kblock, summed separately then added), one output
 * channel per group uses MLAS's single-row order (wh_sgemm_m1_ref: groups of 4 products,
 * no fused multiply-add), and one output position with several output channels MLAS's
 * single-column order (8 lanes, reduced by a rule that depends on the channel's place in
 * its group; also a one-channel kernel as wide as the unpadded input, over the output
 * positions). The bias comes last. The GEMM chains fuse each multiply-add in the SIMD
 * kernels, as MLAS does; the scalar kernel rounds twice. ConvTranspose follows ORT too:
 * the columns in MLAS's blocks (or single-column order for one input position), each
 * output's taps added from zero in (kh, kw) order, then the bias.
 *
 * ORT picks MLAS's blocks from the column count of each thread's share; whittle uses the
 * whole count (ORT's choice with one thread), which gives the same blocks unless K > 128
 * and a thread's share of the output positions is below 64.
 *
 * Exception (issue 26): the direct depthwise kernels (AVX2 and AVX-512, wh_conv_dw_direct)
 * fuse the multiply-adds within MLAS's groups of 4 (wh_conv_dw_fma_ref), as ORT's default
 * NCHWc kernels fuse theirs: not ORT's bits, within 1e-5 relative of them (a tap's product
 * is rounded once instead of twice). Their bits still never depend on the thread count. */
#ifndef WH_CONV_INTERNAL_H
#define WH_CONV_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "executor/threadpool.h"
#include "graph/dtype.h"
#include "graph/status.h"

struct wh_out_round; /* executor/kernel.h */

/* Geometry of a convolution. Conv: x [N, C, in...], w [M, C/G, k...], y [N, M, out...].
 * ConvTranspose: x [N, C, in...], w [C, M/G, k...], y [N, M, out...]; out = in*stride +
 * k*dil - pad0 relates positions. All values validated (positive sizes, non-negative pads). */
struct wh_conv_shape {
	int nsp; /* spatial rank, >= 1 */
	int64_t N, C, M, G;
	int64_t in[WH_MAX_RANK], out[WH_MAX_RANK], k[WH_MAX_RANK];
	int64_t stride[WH_MAX_RANK], dil[WH_MAX_RANK], pad0[WH_MAX_RANK], pad1[WH_MAX_RANK];
};

/* y = conv(x, w) (+ b per output channel; b may be NULL), with the kernels of cpu->isa. */
enum wh_status wh_conv_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			   const struct wh_conv_shape *s, const float *x, const float *w,
			   const float *b, float *y);
/* The same with the algorithm forced (tactics): GEMM over planes for every geometry, or the
 * direct depthwise path where it applies (one input and one output channel per group,
 * 1-D/2-D, not 1x1 pointwise; elsewhere it falls back to GEMM). The GEMM sums a depthwise
 * output in MLAS's single-row order, the direct kernels in wh_conv_dw_fma_ref's (below). */
enum wh_conv_algo { WH_CONV_AUTO = 0, WH_CONV_GEMM = 1, WH_CONV_DIRECT_DW = 2 };
enum wh_status wh_conv_f32_algo(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
				const struct wh_conv_shape *s, const float *x, const float *w,
				const float *b, float *y, enum wh_conv_algo algo);
/* The same, each block of y rounded with wh_out_round_apply (kernel.h) right after it is
 * written; round may be NULL. */
enum wh_status wh_conv_f32_round(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
				 const struct wh_conv_shape *s, const float *x, const float *w,
				 const float *b, float *y, enum wh_conv_algo algo, const struct wh_out_round *round);
/* Plain loops in ONNX Runtime's order (see above) with the products and sums rounded
 * separately: the padding contributes zero products (they keep their place in MLAS's
 * groups of 4 and lanes of 8), then the bias is added. */
void wh_conv_f32_ref(const struct wh_conv_shape *s, const float *x, const float *w, const float *b,
		     float *y);

enum wh_status wh_convt_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_conv_shape *s, const float *x, const float *w,
			    const float *b, float *y);
void wh_convt_f32_ref(const struct wh_conv_shape *s, const float *x, const float *w,
		      const float *b, float *y);

/* Planes of a depthwise convolution (one input and one output channel per group) read
 * straight from the unpadded input: taps in the padding read zeros (masked lanes), and each
 * output sums its taps in wh_conv_dw_fma_ref's order (MLAS's single-row groups of 4 taps,
 * each group a chain of fused multiply-adds) and then adds *bias (bias may be NULL), so the
 * bits are those of wh_conv_dw_fma_ref. 1-D is H = OH = KH = 1. Taken when KH, KW <=
 * WH_DW_MAXK, sw is 1 or 2 and every size is below WH_DW_MAXDIM (conv.c checks). */
/* Per output, taps k = 0 .. KS-1 in (kh, kw) order, the padding as zero inputs: for each
 * group of 4, t = w[k]*x[k] (rounded), t = fma(w[k+i], x[k+i], t) for i = 1..3, acc = t + acc
 * (acc from 0); a last group of 2 the same; a last single tap acc = fma(w, x, acc); then
 * acc + bias. Against wh_conv_f32_ref (MLAS's order, every product rounded) the difference
 * is at most KS units of rounding of sum |w*x| (in practice far less). For depthwise shapes
 * only (C == M == G). */
void wh_conv_dw_fma_ref(const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y);
/* Whether wh_conv_f32_algo (and wh_conv_f32 with WH_CONV_AUTO) takes the direct depthwise
 * kernels for s on cpu, i.e. gives wh_conv_dw_fma_ref's bits (else wh_conv_f32_ref's for
 * the depthwise geometries). */
bool wh_conv_dw_direct(const struct wh_cpu_features *cpu, const struct wh_conv_shape *s, enum wh_conv_algo algo);
#define WH_DW_MAXK 16
#define WH_DW_MAXDIM ((size_t)1 << 28)
struct wh_dw_geom {
	size_t H, W, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw;
};
/* The AVX-512 kernel's small-plane path (conv-dw-avx512.c planes_lanes): 16 planes at a
 * time with the channels in the vector lanes, for kernels of more than 9 taps up to
 * WH_DW_LANE_K square, at most WH_DW_LANE_P outputs and a padded input of at most
 * WH_DW_LANE_IN / 16 positions (WH_DW_LANE_IN_STRIDED / 16 when strided); taken for calls
 * of at least WH_DW_LANE_MIN_N planes (conv.c gives it chunks of multiples of 16). */
#define WH_DW_LANE_K 7
#define WH_DW_LANE_P ((size_t)256)
#define WH_DW_LANE_IN ((size_t)16384)
#define WH_DW_LANE_IN_STRIDED ((size_t)8192)
#define WH_DW_LANE_MIN_N 8
static inline bool wh_dw_lanes(const struct wh_dw_geom *g)
{
	size_t Hp = (g->OH - 1) * g->sh + (g->KH - 1) * g->dh + 1;
	size_t Wp = (g->OW - 1) * g->sw + (g->KW - 1) * g->dw + 1;
	/* 3x3 and smaller lost to the row kernels (the two transposes cost as much as 9 taps):
	 * 3x3 on 192 planes of 14x14 27 against 35 GFLOP/s with one thread, 5x5 45 against 35.
	 * At stride 2 the input to transpose is four times the output: 5x5 from 28x28 to 14x14
	 * lost to the phase planes (0.94x in mnasnet0_35), from 14x14 to 7x7 won 1.27x */
	return g->KH * g->KW > 9 && g->KH <= WH_DW_LANE_K && g->KW <= WH_DW_LANE_K && g->OH * g->OW <= WH_DW_LANE_P &&
	       Hp * Wp <= (g->sh * g->sw > 1 ? WH_DW_LANE_IN_STRIDED : WH_DW_LANE_IN) / 16;
}
/* The row-block kernels (conv-dw-avx512.c and conv-dw-avx2.c planes_rowblk): square 3x3, 5x5
 * and 7x7 kernels, equal row and column strides of 1 or 2, no dilation, outputs wider than 8
 * columns (7-column planes lost to the other kernels). AVX2 takes them for 3x3 on outputs
 * of at least WH_DW_RB_AVX2_OW columns only (wh_dw_rowblk_avx2: on a busy machine, 3x3 on
 * 112x112 and 56x56 1.2-1.5x, PP-OCR det's 320x320 1.8x at stride 1 and 3.9x at stride 2;
 * 5x5 lost to the padded planes, 14x14 planes were not faster). */
#define WH_DW_RB_AVX2_OW 28
static inline bool wh_dw_rowblk(const struct wh_dw_geom *g)
{
	return g->sh == g->sw && g->sh <= 2 && g->dh == 1 && g->dw == 1 && g->KH == g->KW &&
	       (g->KH == 3 || g->KH == 5 || g->KH == 7) && g->OW > 8;
}
static inline bool wh_dw_rowblk_avx2(const struct wh_dw_geom *g)
{
	return wh_dw_rowblk(g) && g->KH == 3 && g->OW >= WH_DW_RB_AVX2_OW;
}
/* n planes: plane i reads x + i*H*W with the taps w + i*KH*KW and bias[i] (bias may be
 * NULL), and writes y + i*OH*OW. */
void wh_conv_dw_planes_avx2(const struct wh_dw_geom *g, size_t n, const float *x, const float *w,
			    const float *bias, float *y);
void wh_conv_dw_planes_avx512(const struct wh_dw_geom *g, size_t n, const float *x, const float *w,
			      const float *bias, float *y);

/* dst[2i] = bias + c0[i], dst[2i+1] = bias + c1[i] for i < n (ConvTranspose with a
 * 2-wide kernel at stride 2). */
void wh_interleave2_avx2(const float *c0, const float *c1, float bias, size_t n, float *dst);
void wh_interleave2_avx512(const float *c0, const float *c1, float bias, size_t n, float *dst);
/* even[i] = src[2i], odd[i] = src[2i+1] for i < n (stride-2 phase split). */
void wh_deinterleave2_avx2(const float *src, size_t n, float *even, float *odd);
void wh_deinterleave2_avx512(const float *src, size_t n, float *even, float *odd);

#endif
