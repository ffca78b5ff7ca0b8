/* One kernel call with a hand-built node, for the Check suites of executor kernels: a node
 * with its attributes, input and output tensors, a wh_kernel_ctx and a copy of the CPU
 * table (so a test may cap the ISA for one harness), and the checks the suites share.
 *
 * Ownership: the harness owns its tensors; kh_free releases them (every input and output).
 * Input makers (kh_in_*) release what a slot held before filling it; kh_run releases the
 * outputs before every run (the kernel contract wants them empty). Tests may fill h->in[i]
 * directly (sequences, strings, shared data) and may take references to outputs with
 * wh_tensor_ref to keep them past the next run. Attribute names, attribute lists (ints, floats) and the
 * domain and op strings are borrowed: they must outlive the harness (string lists given to
 * kh_attr_strings are copied into the harness as pointers, the characters are borrowed).
 *
 * Inputs: slot i < n_in reaches the kernel as h->in[i], or as NULL (an omitted optional
 * input, as the runtime passes it) when it was omitted with kh_omit (or h->inp[i] = NULL)
 * or holds nothing (never filled, or released). Every kh_in_* maker makes its slot present
 * again. Tests change the input or output count through h->ctx.n_inputs / n_outputs (up to
 * KH_MAX_IO) and mark optional outputs as not wanted through h->wanted[i].
 *
 * Every helper fails the running Check test on a broken expectation; only kh_run and
 * kh_model_run return a status (the kernel's, the engine's) for the test to judge. */
#ifndef KH_KERNEL_HARNESS_H
#define KH_KERNEL_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "graph/ir.h"
#include "graph/status.h"
#include "graph/tensor-file.h"
#include "graph/tensor.h"

#define KH_MAX_IO 16
#define KH_MAX_ATTRS 16
#define KH_MAX_STRINGS 16 /* items of all STRINGS attributes of one harness */

struct kh_harness {
	struct wh_node node; /* named "n": failure messages say "node 'n' (<op>): ..." */
	struct wh_attr attrs[KH_MAX_ATTRS];
	struct wh_bytes strs[KH_MAX_STRINGS];
	uint32_t n_strs;
	struct wh_tensor in[KH_MAX_IO];
	const struct wh_tensor *inp[KH_MAX_IO]; /* NULL: omitted */
	const struct wh_tensor *pass[KH_MAX_IO]; /* what the kernel gets (set by kh_run) */
	struct wh_tensor out[KH_MAX_IO];
	bool wanted[KH_MAX_IO];
	struct wh_kernel_ctx ctx;
	struct wh_cpu_features cpu;
};

/* A node of op_type op in domain ("" for ai.onnx) at the given opset, with n_in inputs and
 * n_out outputs (all wanted), no attributes, no pool, this machine's CPU features. */
void kh_init(struct kh_harness *h, const char *domain, const char *op, int64_t opset, uint32_t n_in,
	     uint32_t n_out);
void kh_free(struct kh_harness *h);
/* Releases the outputs only (kh_run does it before each run as well). */
void kh_clear_out(struct kh_harness *h);

/* ---- attributes: setting a name again replaces the earlier attribute ---- */

struct wh_attr *kh_attr(struct kh_harness *h, const char *name, enum wh_attr_type type);
void kh_attr_int(struct kh_harness *h, const char *name, int64_t v);
void kh_attr_float(struct kh_harness *h, const char *name, float v);
void kh_attr_str(struct kh_harness *h, const char *name, const char *s);
void kh_attr_ints(struct kh_harness *h, const char *name, int64_t *v, size_t n);
void kh_attr_floats(struct kh_harness *h, const char *name, float *v, size_t n);
void kh_attr_strings(struct kh_harness *h, const char *name, size_t n, const char *const *s);

/* ---- inputs ---- */

void kh_omit(struct kh_harness *h, int i);
/* Input i of type dt with the elements copied from v (dt's in-memory layout; v may be NULL
 * for an empty tensor). Not for strings: fill h->in[i] with wh_tensor_alloc_strings. */
void kh_in_raw(struct kh_harness *h, int i, enum wh_dtype dt, int32_t rank, const int64_t *dims, const void *v);
void kh_in_f32(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, const float *v);
void kh_in_i64(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, const int64_t *v);
void kh_in_vec_i64(struct kh_harness *h, int i, int64_t n, const int64_t *v);
void kh_in_scalar_i64(struct kh_harness *h, int i, int64_t v);
void kh_in_scalar_i32(struct kh_harness *h, int i, int32_t v);
void kh_in_scalar_f32(struct kh_harness *h, int i, float v);
/* Input i of type dt from float values, rounded to dt as Cast rounds (to nearest even). */
void kh_in_conv(struct kh_harness *h, int i, enum wh_dtype dt, int32_t rank, const int64_t *dims, const float *v);
/* A deterministic pattern in [-0.5, 0.5]: ((7 i + 3 seed) mod 11 - 5) / 10, the formula of
 * the generators that computed the suites' reference values. */
float kh_pat(int64_t i, int64_t seed);
/* Float input i with element k = scale * kh_pat(k, seed). */
void kh_in_pat(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, int64_t seed, float scale);

/* ---- running ---- */

/* The kernel for the node's domain, op and the context's opset (fails the test if none). */
const struct wh_op_def *kh_op(const struct kh_harness *h);
/* The context as kh_run hands it to the kernel (omitted inputs resolved, outputs
 * released), for tests that call a kernel's entry point directly. */
struct wh_kernel_ctx *kh_ctx(struct kh_harness *h);
/* Runs the kernel once and returns its status. */
enum wh_status kh_run(struct kh_harness *h);
void kh_run_ok(struct kh_harness *h);
/* Runs with a pool of the given number of threads (none for 1), expecting success. */
void kh_run_threads(struct kh_harness *h, int threads);
/* Expects status want and a one-line message containing needle. */
void kh_run_fails(struct kh_harness *h, enum wh_status want, const char *needle);

/* ---- expectations ---- */

/* A tensor (not a sequence or optional) of this shape. */
void kh_expect_shape(const struct wh_tensor *t, int32_t rank, const int64_t *dims);
/* float32 elements equal to v within tol. */
void kh_expect_f32(const struct wh_tensor *t, const float *v, uint64_t n, float tol);
void kh_expect_i64(const struct wh_tensor *t, const int64_t *v, uint64_t n);
/* Elements of any numeric type, read as double, within tol of v. */
void kh_expect_near(const struct wh_tensor *t, const double *v, uint64_t n, double tol);
void kh_expect_near_f(const struct wh_tensor *t, const float *v, uint64_t n, double tol);

/* ---- a model built in memory, run through the engine ----
 *
 * For ops that need the runtime (control flow, subgraphs): a model with one opset import
 * for ai.onnx, graphs whose values are named in space-separated lists, and the main graph's
 * inputs fed from a tensor set. Ownership: the kh_model owns its model (graphs, nodes,
 * attributes and copies of attribute lists live in the model's arena) and its input set
 * (which holds references to the tensors fed); kh_model_free releases both. Names and
 * strings are borrowed. Results of kh_model_run belong to the caller. */

struct kh_model {
	struct wh_model *m;
	struct wh_tensor_set in; /* the main graph's inputs by name */
};

void kh_model_init(struct kh_model *b, int64_t opset);
void kh_model_free(struct kh_model *b);
/* The id of the value named name in g, created if new (may grow g->values). */
uint32_t kh_value(struct wh_graph *g, const char *name);
/* An input of g of type dt and shape rank/dims (dt UNDEFINED: no type, rank -1: unknown
 * shape); in the main graph also fed with t (NULL: fed by nobody). */
void kh_graph_input(struct kh_model *b, struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank,
		    const int64_t *dims, const struct wh_tensor *t);
void kh_graph_output(struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank, const int64_t *dims);
/* A value of an enclosing graph, read by name in the subgraph g. */
void kh_graph_outer(struct wh_graph *g, const char *name);
/* A node; ins and outs are names separated by spaces, "-" for an omitted input. */
struct wh_node *kh_graph_node(struct wh_graph *g, const char *op, const char *ins, const char *outs);
/* An empty subgraph of the main graph, to be attached to a node with kh_node_graph. */
struct wh_graph *kh_subgraph(struct kh_model *b, const char *name);
struct wh_attr *kh_node_attr(struct kh_model *b, struct wh_node *n, const char *name, enum wh_attr_type type);
void kh_node_int(struct kh_model *b, struct wh_node *n, const char *name, int64_t v);
void kh_node_ints(struct kh_model *b, struct wh_node *n, const char *name, const int64_t *v, size_t count);
void kh_node_graph(struct kh_model *b, struct wh_node *n, const char *name, struct wh_graph *sub);
/* Runs the model on the given number of threads; res gets the outputs by name (the caller
 * releases it, whatever the status). */
enum wh_status kh_model_run(struct kh_model *b, int threads, struct wh_tensor_set *res);
/* The result named name (fails the test if there is none). */
const struct wh_tensor *kh_result(const struct wh_tensor_set *res, const char *name);

/* Graph input `id` becomes an initializer holding a copy of t (ONNX test cases whose inputs
 * are made constants, for folding and for shape rules that need values). */
void kh_input_to_constant(struct wh_graph *g, uint32_t id, const struct wh_tensor *t);

/* kh_model_init's model at opset 17, without the input set: for tests that assemble and feed
 * graphs themselves; the caller frees it (wh_model_destroy). */
struct wh_model *kh_model_new(void);

/* PaddleOCR rec (scripts/node_modules, from scripts/setup.sh), loaded and shape-inferred as
 * the CLI does (layer precisions follow the inferred types); the caller frees it. */
struct wh_model *kh_rec_model(void);

/* ins (initialized here; the caller releases it) = rec's input "x", 1x3x48x320, seeded
 * values in [-1, 1). */
void kh_rec_input(struct wh_tensor_set *ins, uint32_t seed);

#endif
