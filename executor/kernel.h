/* Private to executor/: the interface between the runtime and op kernels.
 *
 * A kernel is called once per node execution with its input tensors (NULL for an omitted
 * optional input) and allocates and fills its outputs with wh_tensor_alloc (or shares an
 * input's data with wh_tensor_ref for views such as Reshape). Kernels compute output shapes
 * themselves from the actual inputs, validate them, and report problems with
 * wh_kernel_fail, which names the node. They must be deterministic: the same inputs give
 * bit-identical outputs for any thread count (see executor/threadpool.h).
 *
 * Every op is listed in one table per source file (struct wh_op_def), collected by
 * registry.c. A kernel handles every opset version from since_version up to the next
 * entry's for the same op (reads ctx->opset for behaviour that changed). */
#ifndef WH_KERNEL_H
#define WH_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "executor/threadpool.h"
#include "graph/ir.h"
#include "graph/tensor.h"

struct wh_frame; /* runtime state of a graph execution (runtime.c) */
struct wh_out_round; /* below */

struct wh_kernel_ctx {
	const struct wh_model *model;
	const struct wh_graph *graph;
	const struct wh_node *node;
	int64_t opset; /* version imported for the node's domain */
	uint32_t n_inputs;
	const struct wh_tensor *const *inputs; /* n_inputs entries; NULL = omitted */
	uint32_t n_outputs;
	struct wh_tensor *outputs;   /* n_outputs entries, released (empty) on entry */
	const bool *output_wanted;   /* false for an omitted optional output */
	struct wh_threadpool *pool;  /* may be NULL */
	const struct wh_cpu_features *cpu;
	struct wh_frame *frame;      /* for control-flow kernels */
	const struct wh_tactic *tactic; /* the pinned tactic, or NULL (run picks) */
	uint8_t precision; /* enum wh_precision: the layer's execution precision (emulation
			    * wraps the kernel; tactics use it for eligibility) */
	/* Set by the emulation (emulate.c) when the layer stores its float32 outputs in a
	 * narrower format (fp16, bf16), or by the runtime when it fuses the next layer's
	 * activation into this one (struct wh_epilogue): a kernel may finish each block of its
	 * float output with wh_out_round_apply right after writing it, while it is still in
	 * cache, and then set outputs_rounded; otherwise the emulation rounds every output in a
	 * pass of its own, and the runtime runs the activation's layer. Both are elementwise,
	 * so either way gives the same bits. NULL: store as computed. */
	const struct wh_out_round *round_out;
	bool outputs_rounded;
	/* the engine's packed copies of constant GEMM operands (below); NULL: pack none */
	struct wh_gemm_packs *packs;
	/* Where the runtime would like output 0 (a slice of the Concat that alone reads it;
	 * runtime.c, plan_concats), or NULL. A kernel that allocates output 0 with
	 * wh_kernel_out_alloc gets this memory when the type and shape match; it then writes
	 * every element there, as it would into a fresh tensor. */
	const struct wh_tensor *place_out;
	/* Bit k (k < 32): input k is a constant layer's kept output (runtime.c, plan_constants),
	 * the same memory and bytes for the engine's life, as an initializer's are: the GEMM
	 * packs (a widened fp16 weight's Cast feeding a MatMul) may key a copy by it. */
	uint32_t const_inputs;
	/* A QDQ convolution (executor/qdq.h): the 8-bit tensors its dequantized inputs 0 and 1
	 * were made from, with their scales and zero points; NULL otherwise. Set by the runtime
	 * for a linked layer that runs at FP32 on the CPU, with its DequantizeLinear producers
	 * at FP32 (an emulated layer reads its rounded float inputs instead). */
	const struct wh_qdq_inputs *qdq;
};

struct wh_qdq_inputs {
	const struct wh_tensor *xq, *xs, *xz; /* xz NULL: zero */
	const struct wh_tensor *wq, *ws, *wz; /* wz NULL: zero; ws 1 or M values */
};

/* Packed copies of constant GEMM operands (the B of MatMul and Gemm, the weights of Conv as
 * A panels of MR rows), one cache per engine
 * (executor/ops/gemm-pack.c): a weight is packed into the micro-kernel's panels at its
 * second use and read from the copy by every run after. The bytes they hold are bounded:
 * a copy of a weight mapped from a file (graph/blob.h) replaces the mapped pages, which are
 * dropped after packing (so the copy does not raise the resident peak), up to half the
 * machine's memory; a copy of a weight held in memory is a second copy, kept within
 * dup_budget bytes (the engine's weight_cache_bytes: 0 its default, < 0 none).
 * Not thread-safe: an engine runs one inference at a time. */
struct wh_gemm_packs;
enum wh_status wh_gemm_packs_create(int64_t dup_budget, struct wh_gemm_packs **out);
void wh_gemm_packs_destroy(struct wh_gemm_packs *p); /* NULL-safe */
/* Bytes of packed copies p holds now (0 for NULL). */
size_t wh_gemm_packs_bytes(const struct wh_gemm_packs *p);

/* An activation fused into the layer that produces its input (runtime.c decides where; see
 * docs/architecture.md, "Fused activations"): y = act(y), or y = y * act(y) for a Sigmoid
 * whose output only a Mul by its input reads (SiLU). It is applied to each block of the
 * float32 output right after the block is written, with the row kernels and parameters of
 * the activation's own layer, so the bits are those of the two layers run apart. */
struct wh_epilogue {
	int op;           /* the row kernel: enum wh_ew_un (ops/elementwise-internal.h), or
			   * WH_EPILOGUE_OP_NONE (a chain below, a bias alone) */
	bool times_input; /* y * act(y) */
	float p1, p2;     /* its parameters */
	/* Only for a MatMul producer (runtime.c, plan_fusions): the bias of the Add that alone
	 * reads its output, an FP32 initializer (NULL: none), added as y + bias along the last
	 * axis before the activation; bias_only: no activation follows. The MatMul kernel
	 * applies both per tile (ops/gemm.c) or neither; wh_epilogue_apply ignores the bias and
	 * does nothing for bias_only. */
	const struct wh_tensor *bias;
	bool bias_only;
	/* The Erf form of GELU exported as separate layers (plan_fusions), instead of op:
	 * chain 1: t = x / c1, chain 2: t = x * c1; then t = erf(t), t = t + c2, and
	 * y = (x * t) * c3, or y = (x * c3) * t when half_first; chain 3 (QuickGELU):
	 * y = x * sigmoid(x * c1). Each step with the row kernel of its own layer, so the bits
	 * are those of the layers run apart. 0: no chain. */
	int chain;
	bool half_first;
	float c1, c2, c3;
};

/* wh_epilogue.op of an epilogue that is not one row kernel: never read as a kernel (a
 * kernel testing op for a Relu it applies in registers must not take it for one). */
#define WH_EPILOGUE_OP_NONE (-1)

/* Whether node n (an activation of one float tensor) can be applied as an epilogue, and
 * which: fills *e. consts holds the node's inputs after the first, each a constant tensor
 * (NULL where omitted); the caller fuses nothing whose later inputs are computed. Defined
 * with the activations (ops/elementwise.c). */
bool wh_epilogue_of(const struct wh_node *n, int64_t opset, const struct wh_tensor *const *consts,
		    struct wh_epilogue *e);
void wh_epilogue_apply(const struct wh_epilogue *e, const struct wh_cpu_features *cpu, float *y, size_t n);

/* A QuantizeLinear fused into the layer that produces its input (executor/qdq.h): per tensor,
 * float32 to 8 bits, y = clamp(nearbyintf(x / scale) + zp) (wh_q_quant, QuantizeLinear's own
 * loop, so its bits). */
struct wh_requant {
	float scale, zp;
	bool s8; /* int8 out, else uint8 */
};

/* How a layer's float32 outputs are finished as they are written: the fused activation
 * (act, NULL: none), then rounding to the storage format (fn, NULL: none). quant (NULL:
 * none): output 0 is instead that QuantizeLinear's 8-bit output, the float values (after
 * act) never stored; set by the runtime only for a kernel that takes it (a QDQ Conv), which
 * then allocates output 0 as 8 bits. */
struct wh_out_round {
	void (*fn)(const float *src, float *dst, size_t n, const struct wh_cpu_features *cpu);
	const struct wh_cpu_features *cpu;
	const struct wh_epilogue *act;
	const struct wh_requant *quant;
};

static inline void wh_out_round_apply(const struct wh_out_round *r, float *y, size_t n)
{
	if (!r || !n)
		return;
	if (r->act)
		wh_epilogue_apply(r->act, r->cpu, y, n);
	if (r->fn)
		r->fn(y, y, n, r->cpu);
}

typedef enum wh_status (*wh_kernel_fn)(struct wh_kernel_ctx *ctx);

/* A tactic: one implementation of an op, with its own speed and numerics (summation order,
 * accumulation format, ISA). The builder times the eligible tactics of a layer and keeps
 * the fastest; a tactic replay pins them. Names and ids are stable across versions: they
 * are written to replay files. */
struct wh_tactic {
	uint32_t id;
	const char *name;       /* e.g. "conv-winograd-f2x2-3x3-avx2" */
	const char *numerics;   /* one line: how it computes, for docs and `inspect --tactics` */
	/* Whether the tactic can run this node with these inputs and this CPU; NULL: always. */
	bool (*eligible)(const struct wh_kernel_ctx *ctx);
	wh_kernel_fn run;
};

struct wh_op_def {
	const char *domain;  /* "" for ai.onnx */
	const char *op_type;
	int since_version;   /* lowest opset this entry handles */
	wh_kernel_fn run;    /* the default: picks an implementation by itself */
	const struct wh_tactic *tactics; /* may be NULL */
	uint32_t n_tactics;
	/* The kernel handles inputs that are sequences or empty optionals (kind in
	 * graph/tensor.h) itself; for any other op the runtime refuses them with one line. */
	bool any_value;
};

/* Finds the kernel for (domain, op_type) at the given opset; NULL if none. */
const struct wh_op_def *wh_op_lookup(const char *domain, const char *op_type, int64_t opset);
/* All registered op entries, for listings and docs. */
size_t wh_op_count(void);
const struct wh_op_def *wh_op_at(size_t i);

/* Records "node '<name>' (<op>): <message>" and returns st. */
enum wh_status wh_kernel_fail(const struct wh_kernel_ctx *ctx, enum wh_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Input i or NULL (also NULL when i >= n_inputs). */
static inline const struct wh_tensor *wh_kin(const struct wh_kernel_ctx *ctx, uint32_t i)
{
	return i < ctx->n_inputs ? ctx->inputs[i] : NULL;
}

/* Runs a subgraph attribute of the current node: binds ins[] to its graph inputs in order,
 * makes the enclosing graphs' values visible by name, and fills outs[0..g->n_outputs)
 * (caller-owned tensors, released first). */
enum wh_status wh_kernel_run_subgraph(struct wh_kernel_ctx *ctx, const struct wh_graph *g,
				      uint32_t n_ins, const struct wh_tensor *const *ins,
				      struct wh_tensor *outs);

/* If: records that the current node took its then (or else) branch in this run, for
 * wh_engine_if_branches (executor.h). */
void wh_kernel_note_branch(struct wh_kernel_ctx *ctx, bool then);

/* ---- helpers shared by kernels (kernel-util.c) ---- */

/* Element accessors and broadcasting (wh_tensor_get_f64, wh_broadcast_shapes, ...) are in
 * graph/tensor.h, included above. */
/* Allocates output k as wh_tensor_alloc does, or, for output 0 when ctx->place_out has the
 * same type and shape, makes it that memory (a view the runtime placed). */
enum wh_status wh_kernel_out_alloc(struct wh_kernel_ctx *ctx, uint32_t k, enum wh_dtype dt, int32_t rank,
				   const int64_t *dims);
/* Outputs written element by element for any type: wh_kernel_out_begin allocates t and
 * returns where to write (t's data, or for strings a temporary array of borrowed `const
 * char *` that wh_kernel_out_finish copies into t and frees, in every case). */
enum wh_status wh_kernel_out_begin(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims,
				   uint8_t **raw_out);
enum wh_status wh_kernel_out_finish(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims,
				    uint8_t *raw);

#endif
