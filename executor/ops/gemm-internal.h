/* Private to executor/ops/ (gemm.c, conv.c, their SIMD variants and tests/check-gemm.c):
 * the float32 GEMM engine.
 *
 * C[i][j] = sum_k A[i][k] * B[k][j] (+ bias[i]). A is packed once into panels of the
 * micro-kernel's MR rows (panel p holds rows p*MR.. as [k][row], the last panel only its
 * own rows, so a packed A takes exactly M*K floats and panel p starts at p*MR*K). B is not
 * packed per product: row k of B is read at b + boff[k] (boff in floats), which serves a
 * row-major matrix (boff[k] = k*ldb) and convolution inputs alike (boff[k] = offset of the
 * input row that kernel tap k reads), so im2col is never materialised. A constant B (a
 * MatMul or Gemm weight) is packed once per engine into panels of NR columns
 * (wh_sgemm_pack_b, wh_gemm_packed_b), which the same micro-kernels read with boff[k] =
 * k*NR: the products and their order do not change, so neither do the bits.
 *
 * Determinism: every element of C is one chain of multiply-adds over k = 0..K-1 in order,
 * started from zero (K blocking reloads the partial sum from C and continues the chain),
 * with the bias added last. How M and N are cut into tiles and which thread runs a tile
 * never changes that chain, so results are bit-identical for any thread count. The SIMD
 * kernels fuse each multiply-add (one rounding), the scalar kernel and the reference
 * round twice: they differ by rounding only.
 *
 * ONNX Runtime's order (the convolutions use it, so that whittle agrees with ORT on CPU):
 * MLAS cuts K into blocks (wh_sgemm_ort_kblock), sums each block in its own chain from
 * zero and adds the block's sum to C (wh_sgemm_block_kb). For a single row of A (M = 1)
 * it uses a dedicated kernel without fused multiply-adds whose order wh_sgemm_m1_ref
 * spells out; all variants of that kernel give identical bits. */
#ifndef WH_GEMM_INTERNAL_H
#define WH_GEMM_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "executor/threadpool.h"
#include "graph/status.h"

#define WH_SGEMM_LOAD_C 1u /* start from the values in C instead of zero */
#define WH_SGEMM_BIAS 2u   /* add bias[i] to row i after the sum */
#define WH_SGEMM_ADD_C 4u  /* start from zero, then add the values in C to the sum (before the bias) */

/* Computes the mr x nr tile c (row stride ldc) from kc steps of packed A (a[k*mr + i]) and
 * B rows b + boff[k] (columns 0..nr-1). mr <= MR, nr <= NR of the kernel. */
typedef void (*wh_sgemm_ukernel_fn)(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
				    const ptrdiff_t *boff, float *c, size_t ldc, const float *bias,
				    unsigned flags);

/* c[j] = the M = 1 product of a (K floats) with B rows b + boff[k], columns j < n, in
 * MLAS's single-row order (see wh_sgemm_m1_ref), then + *bias when bias is not NULL. */
typedef void (*wh_sgemm_m1_fn)(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff,
			       float *c, const float *bias);

struct wh_sgemm_kernel {
	enum wh_isa isa;
	size_t mr, nr;
	wh_sgemm_ukernel_fn ukernel;
	wh_sgemm_m1_fn m1;
};

#define WH_SGEMM_MR_AVX512 12
#define WH_SGEMM_NR_AVX512 32
/* the AVX-512 kernel's other tile: no row edge for 8, 16, 24, .. rows (the 12-row tile
 * leaves a partial panel), chosen per product by wh_sgemm_kernel_for */
#define WH_SGEMM_MR_AVX512W 8
#define WH_SGEMM_NR_AVX512W 48
#define WH_SGEMM_MR_AVX2 6
#define WH_SGEMM_NR_AVX2 16
#define WH_SGEMM_MR_SCALAR 4
#define WH_SGEMM_NR_SCALAR 16

void wh_sgemm_ukernel_avx512(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			     const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags);
void wh_sgemm_ukernel_avx512w(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			      const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags);
void wh_sgemm_ukernel_avx2(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			   const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags);

/* MLAS's single-row order: each group of 4 products (k = 4g..4g+3) is summed left to right
 * (each product rounded, no fused multiply-add), and the group's sum is added to the
 * running sum (started at zero); 2 and then 1 leftover products are handled the same way. */
void wh_sgemm_m1_ref(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		     const float *bias);
void wh_sgemm_m1_avx2(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		      const float *bias);
void wh_sgemm_m1_avx512(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
			const float *bias);

/* MLAS's K block for a product with K steps and N columns (N: the whole column count; ORT
 * with more threads may cut N and with it the block, for shapes with K > 128 and few
 * columns): 0 when K is summed in one chain, else the block size (a multiple of 128). */
size_t wh_sgemm_ort_kblock(size_t K, size_t N);

/* The micro-kernel for an ISA (the best one not above isa). */
void wh_sgemm_kernel_get(enum wh_isa isa, struct wh_sgemm_kernel *out);

/* The micro-kernel for products of M rows by N columns a call: wh_sgemm_kernel_get's, or
 * with AVX-512 the 8 x 48 tile where the 12-row tile would end on a sparse panel of 4
 * rows or fewer. Every element's chain is the same in both, so only speed depends on the
 * choice (A must be packed for the kernel chosen: its mr). */
void wh_sgemm_kernel_for(enum wh_isa isa, size_t M, size_t N, struct wh_sgemm_kernel *out);

/* Packs A (element (i,k) at a[i*rsa + k*csa]) into M*K floats at dst. */
void wh_sgemm_pack_a(const struct wh_sgemm_kernel *kern, size_t M, size_t K, const float *a,
		     size_t rsa, size_t csa, float *dst);

/* The packing of one panel of mr rows (rows at s + r*rsa, unit column stride) with 4x4
 * SSE transposes: the same floats at the same places as wh_sgemm_pack_a's loops (a copy:
 * no arithmetic). For a kernel of cpu->isa AVX2 or above. */
void wh_sgemm_pack_panel_avx2(size_t mr, size_t K, const float *s, size_t rsa, float *d);

/* Packs G matrices (g-th at a + g*a_stride) into dst + g*M*K, in parallel on pool. */
void wh_sgemm_pack_groups(const struct wh_sgemm_kernel *kern, struct wh_threadpool *pool, size_t G,
			  size_t M, size_t K, const float *a, size_t a_stride, size_t rsa, size_t csa,
			  float *dst);

/* Serially computes the M x N block at c from packed A (its first row is a panel start)
 * and B rows b + boff[k]; bias (per row) may be NULL. */
void wh_sgemm_block(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K,
		    const float *apack, const float *b, const ptrdiff_t *boff, float *c, size_t ldc,
		    const float *bias);

/* The same with K cut into blocks of kb (kb = 0: one chain, as wh_sgemm_block): each block
 * is summed from zero and added to the previous blocks' sum, as MLAS does. */
void wh_sgemm_block_kb(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, size_t kb,
		       const float *apack, const float *b, const ptrdiff_t *boff, float *c, size_t ldc,
		       const float *bias);

/* The same with B packed (wh_sgemm_pack_b, panels of kern->nr columns, bps = nr * K floats
 * a panel; column 0 starts a panel) and boff[k] = k * nr. */
void wh_sgemm_block_kb_packed(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, size_t kb,
			      const float *apack, const float *bpack, size_t bps, const ptrdiff_t *boff, float *c,
			      size_t ldc);

/* The transposed product of a convolution with few output positions (conv.c): C^T = X^T
 * W^T, the output channels in the vector lanes, the positions broadcast, so that small
 * planes fill whole vectors. Every element keeps its chain (the same K blocks, one fused
 * multiply-add a term in k order from zero), so the bits are those of C = W X. This writes
 * a tile of C^T back as C: y[j * ldy + i] = ct[i * ldct + j] (+ bias[j]) for positions
 * i < np and channels j < nm. */
void wh_sgemm_t_store_avx512(size_t np, size_t nm, const float *ct, size_t ldct, const float *bias, float *y,
			     size_t ldy);

/* A row of a convolution with few multiply-adds an output (conv-stem-avx512.c, for K up
 * to WH_CONV_STEM_MAX_K in one chain, kb = 0): c[i * ldc + j] = the chain over k of
 * w[i * ldw + k] * b[boff[k] + j] (one fused multiply-add a term, in k order, from zero),
 * then + bias[i] (bias may be NULL), for channels i < m and positions j < n: the bits of
 * wh_sgemm_block_kb with kb = 0; with relu, then 0 > x ? 0 : x (the fused Relu's step,
 * elementwise-avx512.c) before the store. Weights are read unpacked; B's rows are read only
 * at columns below n (masked tails). */
#define WH_CONV_STEM_MAX_K 64
void wh_conv_stem_row_avx512(size_t m, size_t n, size_t K, const float *w, size_t ldw, const float *b,
			     const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, bool relu);
/* pk[i] = src[4i + k] for i < n, k < 4 (the stride-4 phase split of a stem's padded row:
 * 4x4 stride-4 patches). */
void wh_deinterleave4_avx512(const float *src, size_t n, float *p0, float *p1, float *p2, float *p3);

/* Tile sizes for splitting an M x N x K product among threads: mc a multiple of MR, nc of
 * NR. Only speed depends on them. */
void wh_sgemm_tiles(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, int threads,
		    size_t *mc_out, size_t *nc_out);

/* A batch of products C_b = A_b B_b (+ bias), each M x N x K: A_b at a + a_off[b] with
 * strides rsa/csa, B_b row-major at b + b_off[b] (row stride ldb), C_b row-major at
 * c + c_off[b] (row stride ldc). Offset arrays may be NULL (all zero). */
struct wh_out_round;
struct wh_sgemm_desc {
	size_t M, N, K, batch;
	const float *a;
	size_t rsa, csa;
	const size_t *a_off;
	const float *b;
	size_t ldb;
	const size_t *b_off;
	float *c;
	size_t ldc;
	const size_t *c_off;
	const float *bias;
	size_t kb; /* K in MLAS's blocks of kb (wh_sgemm_block_kb); 0: one chain */
	/* B packed by wh_sgemm_pack_b for the kernel of cpu->isa (bpack_nr: its NR), or NULL;
	 * when set (batch 1 only), b, ldb and b_off are not read. Same bits as the unpacked B. */
	const float *bpack;
	size_t bpack_nr;
	/* Finished per tile once its products are complete, while in cache (MatMul's fused bias
	 * Add and activation, runtime.c plan_fusions): c[i][j] = c[i][j] + col_bias[j] (NULL:
	 * none), then wh_out_round_apply(fin) (NULL: none), as the Add and the activation
	 * compute them, so the bits are those of the layers run apart. */
	const float *col_bias;
	const struct wh_out_round *fin;
};

/* B packed once for a kernel of panel width nr (wh_sgemm_kernel.nr): the K x N matrix
 * (element (k, j) at b[k*rsb + j*csb]) is cut into ceil(N / nr) panels of nr columns; panel
 * p holds its columns as [k][nr] (zeros past column N) at dst + p*nr*K, so the micro-kernel
 * streams each panel contiguously instead of reading B's rows at a stride (which on a
 * power-of-two row length also maps a panel's rows to the same cache sets). Panels are
 * packed in parallel on pool. dst holds wh_sgemm_pack_b_floats(nr, K, N) floats. */
size_t wh_sgemm_pack_b_floats(size_t nr, size_t K, size_t N);
void wh_sgemm_pack_b(size_t nr, struct wh_threadpool *pool, size_t K, size_t N, const float *b, size_t rsb,
		     size_t csb, float *dst);

/* Runs the batch on the pool with the kernel of cpu->isa. */
enum wh_status wh_sgemm_run(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_sgemm_desc *d);

/* The scalar reference: plain loops, products summed in k order from zero, then + bias. */
void wh_sgemm_ref(size_t M, size_t N, size_t K, const float *a, size_t rsa, size_t csa,
		  const float *b, size_t rsb, size_t csb, float *c, size_t ldc, const float *bias);

/* Gemm's operands checked against each other and its geometry, shared by the Gemm kernel
 * and its extra tactics: A is M x K after transA, B is K x N after transB, and C (may be
 * NULL) broadcasts unidirectionally to M x N with element strides cstr. */
struct wh_kernel_ctx;
struct wh_tensor;
struct wh_gemm_geom {
	bool ta, tb;
	float alpha, beta;
	int64_t M, N, K;
	int64_t cstr[2];
};
enum wh_status wh_gemm_geometry(const struct wh_kernel_ctx *ctx, const struct wh_tensor *A, const struct wh_tensor *B,
				const struct wh_tensor *C, struct wh_gemm_geom *g);

/* The packed copy (wh_sgemm_pack_b, for kern) of input k of the node, a K x N float32
 * matrix that is B itself (tb false) or B transposed (tb true), from the engine's cache
 * (ctx->packs, executor/ops/gemm-pack.c), or NULL: use B as it is. Only an initializer
 * whose bytes the kernel reads unchanged is packed (a reduced-precision layer reads a
 * rounded copy, which is never packed), and only at the engine's second product with it:
 * an engine that runs once (a reduce candidate) never pays for packing. Packing is an
 * optimisation: when memory is short or the budget spent, this returns NULL, no error. The
 * copy belongs to the cache and lives as long as the engine. */
const float *wh_gemm_packed_b(const struct wh_kernel_ctx *ctx, uint32_t k, const struct wh_sgemm_kernel *kern,
			      size_t K, size_t N, bool tb);

/* The packed copy of input k of the node, G float32 matrices of M x K stored one after
 * another (a Conv weight [M*G, K...] as its groups), packed by wh_sgemm_pack_groups for
 * kern (panels of MR rows, G*M*K floats), from the same cache and by the same rules as
 * wh_gemm_packed_b: only an initializer's own bytes, at the second product, within the
 * budget, NULL (pack per call) otherwise. The copy belongs to the cache. */
const float *wh_gemm_packed_a(const struct wh_kernel_ctx *ctx, uint32_t k, const struct wh_sgemm_kernel *kern,
			      size_t G, size_t M, size_t K);

/* A Conv weight (input k of the node: M output channels of K floats, one group) packed
 * as B = W^T (K x M) by wh_sgemm_pack_b in panels of nr channels, for the transposed
 * product (wh_sgemm_t_store_avx512): the same cache and rules as wh_gemm_packed_b (a
 * Gemm's transB weight of the same geometry is the same copy), NULL: pack per call. */
const float *wh_gemm_packed_wt(const struct wh_kernel_ctx *ctx, uint32_t k, size_t nr, size_t K, size_t M);

#endif
