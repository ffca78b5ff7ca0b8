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
#include "executor/precision.h"
#include "executor/ops/conv-internal.h"

/* The tactics, one array per op (for tests and listings). */
extern const struct wh_tactic wh_conv_extra_tactics[];
extern const uint32_t wh_conv_extra_tactics_count;
extern const struct wh_tactic wh_gemm_extra_tactics[];
extern const uint32_t wh_gemm_extra_tactics_count;
extern const struct wh_tactic wh_matmul_extra_tactics[];
extern const uint32_t wh_matmul_extra_tactics_count;

/* An op entry points to one array, so the op tables (conv.c, gemm.c) append these
 * initializers to their own: `static const struct wh_tactic conv_tactics[] = { {1, ...},
 * ..., WH_CONV_EXTRA_TACTICS, WH_CONV_FP16ACC_TACTICS };`. The arrays above hold both
 * lists. The *_FP16ACC_TACTICS accumulate in fp16: they belong to layers that run at FP16,
 * which their eligibility cannot see yet (the kernel context has no precision); in an FP32
 * build they would be picked like any other and break tight checks. */
#define WH_TX_MULADD "float32 multiply then add (two roundings)"
#define WH_TX_FMA "float32 fused multiply-adds"
#define WH_TX_K_SCALAR "4x16 tiles, " WH_TX_MULADD
#define WH_TX_K_AVX2 "6x16 tiles, " WH_TX_FMA
#define WH_TX_K_AVX512 "12x32 tiles, " WH_TX_FMA
#define WH_TX_NUM_DIRECT "plain loops; " WH_TX_MULADD "; taps in order, for each tap the group's channels in order, bias last"
#define WH_TX_NUM_IM2COL(K) "explicit im2col buffer, then the packed GEMM (" K "): one chain over (channel, tap) in order from zero, bias last"
#define WH_TX_NUM_WINO(K)                                                                                                 \
	"Winograd F(2x2,3x3): U = G g G^T, V = B^T d B per 4x4 tile (float32 adds), 16 GEMMs over channels (" K      \
	"), Y = A^T M A, bias last; error of direct's order (~1e-7 of sum |x*w|) but other bits in ~90% of outputs"
#define WH_TX_NUM_1X1(K) "one GEMM per image and group (" K "): one chain over channels in order from zero, bias last"
#define WH_TX_NUM_FP16                                                                                                    \
	"plain loops; operands rounded to fp16, each step acc = fp16(acc + x*w) (an fp16 fused multiply-add), (channel, " \
	"tap) in order from zero, bias added the same way"
#define WH_TX_NUM_MMREF "plain loops; " WH_TX_MULADD " over k in order from zero"
#define WH_TX_NUM_SPLITK(K)                                                                                               \
	"split-K: k cut at multiples of 64, each chunk one chain from zero in the packed GEMM (" K "), the chunk sums " \
	"added to the first in k order"
#define WH_TX_NUM_MMFP16 "plain loops; operands rounded to fp16, each step acc = fp16(acc + a*b) (an fp16 fused multiply-add), k in order from zero"
#define WH_TX_GEMM_EPI "; then alpha*sum + beta*C in float32"
#define WH_TX_SAME16 " (vectorised: same bits as -scalar)"

#define WH_CONV_EXTRA_TACTICS                                                                                            \
	{1000, "conv-direct-scalar", WH_TX_NUM_DIRECT, wh_tx_ok_conv_direct_scalar, wh_tx_run_conv_direct_scalar},        \
	{1001, "conv-im2col-gemm-scalar", WH_TX_NUM_IM2COL(WH_TX_K_SCALAR), wh_tx_ok_conv_im2col_scalar,                  \
	 wh_tx_run_conv_im2col_scalar},                                                                                     \
	{1002, "conv-im2col-gemm-avx2", WH_TX_NUM_IM2COL(WH_TX_K_AVX2), wh_tx_ok_conv_im2col_avx2,                        \
	 wh_tx_run_conv_im2col_avx2},                                                                                       \
	{1003, "conv-im2col-gemm-avx512", WH_TX_NUM_IM2COL(WH_TX_K_AVX512), wh_tx_ok_conv_im2col_avx512,                  \
	 wh_tx_run_conv_im2col_avx512},                                                                                     \
	{1004, "conv-winograd-f2x2-3x3-scalar", WH_TX_NUM_WINO(WH_TX_K_SCALAR), wh_tx_ok_conv_wino_scalar,                \
	 wh_tx_run_conv_wino_scalar},                                                                                       \
	{1005, "conv-winograd-f2x2-3x3-avx2", WH_TX_NUM_WINO(WH_TX_K_AVX2), wh_tx_ok_conv_wino_avx2,                      \
	 wh_tx_run_conv_wino_avx2},                                                                                         \
	{1006, "conv-winograd-f2x2-3x3-avx512", WH_TX_NUM_WINO(WH_TX_K_AVX512), wh_tx_ok_conv_wino_avx512,                \
	 wh_tx_run_conv_wino_avx512},                                                                                       \
	{1007, "conv-1x1-gemm-scalar", WH_TX_NUM_1X1(WH_TX_K_SCALAR), wh_tx_ok_conv_1x1_scalar, wh_tx_run_conv_1x1_scalar}, \
	{1008, "conv-1x1-gemm-avx2", WH_TX_NUM_1X1(WH_TX_K_AVX2), wh_tx_ok_conv_1x1_avx2, wh_tx_run_conv_1x1_avx2},         \
	{1009, "conv-1x1-gemm-avx512", WH_TX_NUM_1X1(WH_TX_K_AVX512), wh_tx_ok_conv_1x1_avx512, wh_tx_run_conv_1x1_avx512}

#define WH_CONV_FP16ACC_TACTICS                                                                                          \
	{1010, "conv-fp16acc-scalar", WH_TX_NUM_FP16, wh_tx_ok_conv_fp16acc_scalar, wh_tx_run_conv_fp16acc_scalar},       \
	{1011, "conv-fp16acc-avx2", WH_TX_NUM_FP16 WH_TX_SAME16, wh_tx_ok_conv_fp16acc_avx2, wh_tx_run_conv_fp16acc_avx2},   \
	{1012, "conv-fp16acc-avx512", WH_TX_NUM_FP16 WH_TX_SAME16, wh_tx_ok_conv_fp16acc_avx512,                            \
	 wh_tx_run_conv_fp16acc_avx512}

#define WH_MATMUL_EXTRA_TACTICS                                                                                          \
	{1000, "matmul-ref-scalar", WH_TX_NUM_MMREF, wh_tx_ok_mm_scalar, wh_tx_run_matmul_ref_scalar},                    \
	{1001, "matmul-splitk-scalar", WH_TX_NUM_SPLITK(WH_TX_K_SCALAR), wh_tx_ok_mm_scalar, wh_tx_run_matmul_splitk_scalar}, \
	{1002, "matmul-splitk-avx2", WH_TX_NUM_SPLITK(WH_TX_K_AVX2), wh_tx_ok_mm_avx2, wh_tx_run_matmul_splitk_avx2},     \
	{1003, "matmul-splitk-avx512", WH_TX_NUM_SPLITK(WH_TX_K_AVX512), wh_tx_ok_mm_avx512,                              \
	 wh_tx_run_matmul_splitk_avx512}

#define WH_MATMUL_FP16ACC_TACTICS                                                                                        \
	{1004, "matmul-fp16acc-scalar", WH_TX_NUM_MMFP16, wh_tx_ok_mm_fp16acc_scalar, wh_tx_run_matmul_fp16acc_scalar},   \
	{1005, "matmul-fp16acc-avx2", WH_TX_NUM_MMFP16 WH_TX_SAME16, wh_tx_ok_mm_fp16acc_avx2,                            \
	 wh_tx_run_matmul_fp16acc_avx2},                                                                                    \
	{1006, "matmul-fp16acc-avx512", WH_TX_NUM_MMFP16 WH_TX_SAME16, wh_tx_ok_mm_fp16acc_avx512,                        \
	 wh_tx_run_matmul_fp16acc_avx512}

#define WH_GEMM_EXTRA_TACTICS                                                                                            \
	{1000, "gemm-ref-scalar", WH_TX_NUM_MMREF WH_TX_GEMM_EPI, wh_tx_ok_mm_scalar, wh_tx_run_gemm_ref_scalar},         \
	{1001, "gemm-splitk-scalar", WH_TX_NUM_SPLITK(WH_TX_K_SCALAR) WH_TX_GEMM_EPI, wh_tx_ok_mm_scalar,                 \
	 wh_tx_run_gemm_splitk_scalar},                                                                                     \
	{1002, "gemm-splitk-avx2", WH_TX_NUM_SPLITK(WH_TX_K_AVX2) WH_TX_GEMM_EPI, wh_tx_ok_mm_avx2,                       \
	 wh_tx_run_gemm_splitk_avx2},                                                                                       \
	{1003, "gemm-splitk-avx512", WH_TX_NUM_SPLITK(WH_TX_K_AVX512) WH_TX_GEMM_EPI, wh_tx_ok_mm_avx512,                 \
	 wh_tx_run_gemm_splitk_avx512}

#define WH_GEMM_FP16ACC_TACTICS                                                                                          \
	{1004, "gemm-fp16acc-scalar", WH_TX_NUM_MMFP16 WH_TX_GEMM_EPI, wh_tx_ok_mm_fp16acc_scalar,                        \
	 wh_tx_run_gemm_fp16acc_scalar},                                                                                    \
	{1005, "gemm-fp16acc-avx2", WH_TX_NUM_MMFP16 WH_TX_GEMM_EPI WH_TX_SAME16, wh_tx_ok_mm_fp16acc_avx2,                \
	 wh_tx_run_gemm_fp16acc_avx2},                                                                                      \
	{1006, "gemm-fp16acc-avx512", WH_TX_NUM_MMFP16 WH_TX_GEMM_EPI WH_TX_SAME16, wh_tx_ok_mm_fp16acc_avx512,            \
	 wh_tx_run_gemm_fp16acc_avx512}

/* The functions the initializers name (conv-tactics.c, gemm-tactics.c). */
#define WH_TX_DECLARE(NAME)                                              \
	bool wh_tx_ok_##NAME(const struct wh_kernel_ctx *ctx);           \
	enum wh_status wh_tx_run_##NAME(struct wh_kernel_ctx *ctx);
WH_TX_DECLARE(conv_direct_scalar)
WH_TX_DECLARE(conv_im2col_scalar)
WH_TX_DECLARE(conv_im2col_avx2)
WH_TX_DECLARE(conv_im2col_avx512)
WH_TX_DECLARE(conv_wino_scalar)
WH_TX_DECLARE(conv_wino_avx2)
WH_TX_DECLARE(conv_wino_avx512)
WH_TX_DECLARE(conv_1x1_scalar)
WH_TX_DECLARE(conv_1x1_avx2)
WH_TX_DECLARE(conv_1x1_avx512)
WH_TX_DECLARE(conv_fp16acc_scalar)
WH_TX_DECLARE(conv_fp16acc_avx2)
WH_TX_DECLARE(conv_fp16acc_avx512)
#undef WH_TX_DECLARE
bool wh_tx_ok_mm_scalar(const struct wh_kernel_ctx *ctx);
bool wh_tx_ok_mm_avx2(const struct wh_kernel_ctx *ctx);
bool wh_tx_ok_mm_avx512(const struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_ref_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_splitk_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_splitk_avx2(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_splitk_avx512(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_fp16acc_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_fp16acc_avx2(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_matmul_fp16acc_avx512(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_ref_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_splitk_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_splitk_avx2(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_splitk_avx512(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_fp16acc_scalar(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_fp16acc_avx2(struct wh_kernel_ctx *ctx);
enum wh_status wh_tx_run_gemm_fp16acc_avx512(struct wh_kernel_ctx *ctx);

bool wh_tx_ok_mm_fp16acc_scalar(const struct wh_kernel_ctx *ctx);
bool wh_tx_ok_mm_fp16acc_avx2(const struct wh_kernel_ctx *ctx);
bool wh_tx_ok_mm_fp16acc_avx512(const struct wh_kernel_ctx *ctx);

/* Whether the layer runs at FP16, the only place the fp16-accumulating tactics belong. The
 * kernel context does not carry the layer's precision yet, so this says yes for every
 * layer; with a precision field it becomes `ctx->precision == WH_PREC_FP16`. */
static inline bool wh_tx_fp16_layer(const struct wh_kernel_ctx *ctx)
{
	return ctx->precision == WH_PREC_FP16;
}

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

/* One fp16-accumulating step over a row: y[i] = fp16(y[i] + x[i*xs] * w) for i < n, where
 * y, x and w hold fp16 values (as floats). Every variant rounds exactly once per step, to
 * nearest even, so all give the same bits: the scalar one through a double
 * (wh_tx_round_f16d), the SIMD ones by an exact float sum (TwoSum) rounded to odd, then to
 * fp16 by F16C. */
void wh_tx_axpy_f16_scalar(float *y, const float *x, size_t xs, float w, size_t n);
void wh_tx_axpy_f16_avx2(float *y, const float *x, size_t xs, float w, size_t n);
void wh_tx_axpy_f16_avx512(float *y, const float *x, size_t xs, float w, size_t n);
typedef void (*wh_tx_axpy_f16_fn)(float *y, const float *x, size_t xs, float w, size_t n);
wh_tx_axpy_f16_fn wh_tx_axpy_f16_get(enum wh_isa isa);

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
/* y = conv(x, w) (+ b) with the algorithm and the kernels of isa (the direct algorithm is
 * scalar whatever isa says; the fp16 one gives the same bits at every isa). WH_ERR_UNSUPPORTED for a geometry the
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
/* The weight transform U = G g G^T of one output channel: gt holds its taps as gt[tap*C + c]
 * (tap = 3*row + column), U's 16 values for channel c go to u[xi*u_stride + c]. */
void wh_wino_weights_scalar(const float *gt, size_t C, float *u, size_t u_stride);
void wh_wino_weights_avx2(const float *gt, size_t C, float *u, size_t u_stride);
void wh_wino_weights_avx512(const float *gt, size_t C, float *u, size_t u_stride);
void wh_wino_input_scalar(const struct wh_wino_in *p);
void wh_wino_output_scalar(const struct wh_wino_out *p);
void wh_wino_input_avx2(const struct wh_wino_in *p);
void wh_wino_output_avx2(const struct wh_wino_out *p);
void wh_wino_input_avx512(const struct wh_wino_in *p);
void wh_wino_output_avx512(const struct wh_wino_out *p);

#endif
