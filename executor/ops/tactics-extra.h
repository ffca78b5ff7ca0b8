/* Private to executor/ops/ (conv-tactics*.c, gemm-tactics.c, the op tables that list these
 * tactics) and tests/check-tactics-extra.c: the tactics that give the builder implementations
 * with other summation orders and accumulation formats than the default kernels of conv.c
 * and gemm.c. docs/tactics.md lists every tactic of every op with its numerics.
 *
 * Ids start at 1000 so that they never collide with the ids of conv.c and gemm.c (1..999).
 * Every tactic here takes float32, float16 and bfloat16 inputs (the two half formats are
 * widened to float32, computed, and rounded back, as the default kernels do) and gives
 * bit-identical results for any thread count: each output is computed by one chain whose
 * order never depends on how the work is cut among threads. */
#ifndef WH_TACTICS_EXTRA_H
#define WH_TACTICS_EXTRA_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/ops/conv-internal.h"

extern const struct wh_tactic wh_conv_extra_tactics[];
extern const uint32_t wh_conv_extra_tactics_count;
extern const struct wh_tactic wh_gemm_extra_tactics[];
extern const uint32_t wh_gemm_extra_tactics_count;
extern const struct wh_tactic wh_matmul_extra_tactics[];
extern const uint32_t wh_matmul_extra_tactics_count;

/* K is cut at multiples of this many steps by the split-K tactics. */
#define WH_TX_SPLITK_CHUNK 64

/* v rounded to the nearest IEEE binary16 value (ties to even, overflow to infinity, NaN
 * kept), returned as the float holding it. Rounding the double directly, not through a
 * float, is what makes an fp16-accumulating step exact: acc + a*b of fp16 values is exact
 * in a double whenever it can matter (the product has at most 22 significant bits and a
 * sum of magnitude 2^16 or more overflows fp16 anyway), so one rounding here is the one
 * rounding of an fp16 fused multiply-add. */
static inline float wh_tx_round_f16d(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof u);
	uint64_t sign = u & 0x8000000000000000ull, mag = u ^ sign;
	int e = (int)(mag >> 52) - 1023;
	if (e == 1024) /* inf or NaN */
		return (float)v;
	if (e < -25)
		return sign ? -0.0f : 0.0f;
	if (e == -25) /* [2^-25, 2^-24): half the smallest subnormal is a tie, to zero (even) */
		return (mag & 0x000fffffffffffffull) ? (sign ? -0x1p-24f : 0x1p-24f) : (sign ? -0.0f : 0.0f);
	/* normal fp16 keeps 10 of the 52 mantissa bits; subnormals one fewer per binade */
	int shift = e >= -14 ? 42 : 42 + (-14 - e);
	uint64_t lsb = (mag >> shift) & 1u;
	mag = (mag + ((1ull << (shift - 1)) - 1) + lsb) & ~((1ull << shift) - 1);
	double r;
	memcpy(&r, &mag, sizeof r);
	if (r > 65504.0)
		r = HUGE_VAL;
	return sign ? -(float)r : (float)r;
}

/* ---- float32 views of float32/float16/bfloat16 tensors (gemm-tactics.c) ---- */

bool wh_tx_float_dtype(enum wh_dtype dt);
/* *view_out = t's elements as float32: t's own data for float32, else a converted copy in
 * *owned_out (caller frees). NULL t gives NULLs. */
enum wh_status wh_tx_view_f32(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, float **owned_out,
			      const float **view_out);
/* Rounds src (dst->count floats) into dst's float16/bfloat16 elements. */
void wh_tx_store_half(const struct wh_kernel_ctx *ctx, const float *src, struct wh_tensor *dst);

/* ---- convolution algorithms (conv-tactics.c), float32, for the tests ---- */

enum wh_tx_conv_algo {
	WH_TX_CONV_DIRECT = 0,   /* plain loops, taps outer, channels inner */
	WH_TX_CONV_IM2COL = 1,   /* explicit column buffer, then the GEMM engine */
	WH_TX_CONV_WINOGRAD = 2, /* F(2x2, 3x3); 3x3, stride 1, dilation 1, group 1, 2-D only */
	WH_TX_CONV_1X1 = 3,      /* one GEMM per (image, group); 1x1, stride 1, no padding only */
	WH_TX_CONV_FP16ACC = 4,  /* plain loops accumulating in fp16 */
};
/* Whether algo can run geometry s. */
bool wh_tx_conv_supports(enum wh_tx_conv_algo algo, const struct wh_conv_shape *s);
/* y = conv(x, w) (+ b) with the algorithm and the GEMM micro-kernel of isa (the direct and
 * fp16 algorithms are scalar whatever isa says). WH_ERR_UNSUPPORTED for a geometry the
 * algorithm cannot run. */
enum wh_status wh_tx_conv_f32(enum wh_tx_conv_algo algo, enum wh_isa isa, struct wh_threadpool *pool,
			      const struct wh_conv_shape *s, const float *x, const float *w, const float *b,
			      float *y);

/* ---- Winograd F(2x2, 3x3) tile transforms (conv-tactics*.c) ----
 *
 * The input of one channel is prepared as a zero-padded plane covering every tile, split
 * into even and odd columns: row r holds padded columns 2u at plane[r*rs + u] and 2u+1 at
 * plane[r*rs + half + u], u = 0..tw_n, where padded row r / column q is input row
 * r - pad_top / column q - pad_left. Tile (th, tw) reads rows 2th..2th+3 and columns
 * 2tw..2tw+3, so consecutive tiles of a tile row read consecutive floats.
 *
 * Tiles are numbered t = th*tw_n + tw within an image; a block is cnt consecutive tiles from
 * t0. The input transform writes V = B^T d B of the block's tiles for one channel to
 * v[xi*v_stride + i] (xi = 4a + b, i = tile index in the block); the output transform reads
 * m[xi*m_stride + i] for one output channel and writes Y = A^T M A (+ bias) to the output
 * plane y (oh x ow, cropped). All variants perform the same float32 additions in the same
 * order, so they give identical bits. */
struct wh_wino_in {
	const float *plane;
	size_t rs, half, tw_n;
	size_t t0, cnt;
	float *v;
	size_t v_stride;
};
struct wh_wino_out {
	const float *m;
	size_t m_stride, tw_n;
	size_t t0, cnt;
	bool has_bias;
	float bias;
	float *y;
	size_t oh, ow;
};
void wh_wino_input_scalar(const struct wh_wino_in *p);
void wh_wino_output_scalar(const struct wh_wino_out *p);
void wh_wino_input_avx2(const struct wh_wino_in *p);
void wh_wino_output_avx2(const struct wh_wino_out *p);
void wh_wino_input_avx512(const struct wh_wino_in *p);
void wh_wino_output_avx512(const struct wh_wino_out *p);

#endif
