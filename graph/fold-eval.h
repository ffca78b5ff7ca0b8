/* Private to graph/ (shape.c, sanitize.c): shape inference's own small evaluator (integer
 * shape arithmetic, for callers without the executor; see graph/shape.h for the executor's
 * evaluator) and the per-value inference state both files share. */
#ifndef WH_FOLD_EVAL_H
#define WH_FOLD_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/ir.h"
#include "graph/shape.h"
#include "graph/tensor.h"

/* Evaluates node n on constant inputs: Constant, Shape and Size for any element type, and
 * integer shape arithmetic (Gather, Concat, Slice, Reshape, Unsqueeze, Cast between integer
 * types, integer +, -, *, /, ...). in[i] for i < n->n_inputs, NULL for an omitted input.
 * out[] has n->n_outputs entries, initialised by the caller (wh_tensor_init) and released by
 * the caller whatever happens. *done_out is false when the op, an attribute or a dtype is
 * not handled, the inputs are invalid, or an output would exceed max_elements; that is not
 * an error. Errors: out of memory only. */
enum wh_status wh_fold_eval(const struct wh_node *n, int64_t opset, const struct wh_tensor *const *in,
			    struct wh_tensor *out, uint64_t max_elements, bool *done_out);

/* True for element types whose values inference tracks (numeric; not strings, complex, fp8
 * or 4-bit types). */
bool wh_fold_dtype_ok(enum wh_dtype dt);

/* Shape's start/end attributes (opset 15) clamped for an input of the given rank: the first
 * dimension and how many. */
void wh_fold_shape_range(const struct wh_node *n, int32_t rank, int64_t *start_out, int64_t *len_out);
/* An INTS attribute copied into vals (at most cap); false when absent or longer. */
bool wh_fold_attr_ints(const struct wh_node *n, const char *name, int64_t *vals, uint32_t cap, uint32_t *n_out);
/* Constant's value attribute (value, value_float(s), value_int(s)) as a tensor; *found_out
 * false when the node has none of those (strings, sparse). */
enum wh_status wh_fold_constant_node(const struct wh_node *n, struct wh_tensor *t, bool *found_out);

/* Slice arithmetic shared with shape inference: normalises start/end for a dimension of
 * size dim and step (clamping as ONNX specifies) and returns the first index and count. */
void wh_fold_slice_range(int64_t dim, int64_t start, int64_t end, int64_t step,
			 int64_t *first_out, int64_t *count_out);

/* ---- inference state shared by shape.c and sanitize.c ---- */

/* A small integer vector derived from shapes (Shape, then Gather/Slice/Concat/...) whose
 * elements may be unknown or symbolic dimensions: it lets Reshape/Expand targets keep the
 * names of dynamic dimensions before they are bound. */
struct wh_symvec {
	bool valid;
	bool scalar; /* 0-D (then n is 1) */
	int32_t n;
	int64_t v[WH_MAX_RANK];     /* element value, when k */
	const char *p[WH_MAX_RANK]; /* else the dimension's name, or NULL when unknown */
	bool k[WH_MAX_RANK];
};

/* What inference knows about one value: element type, shape (dims -1 when unknown, with the
 * symbolic name if any), and, for small tensors computable from constants and static
 * shapes, the contents. */
struct wh_vstate {
	enum wh_dtype dtype; /* for a sequence: its items' */
	bool seq;            /* a sequence of tensors (rank, dims, value unused) */
	int32_t rank; /* -1 unknown */
	int64_t dims[WH_MAX_RANK];
	const char *params[WH_MAX_RANK]; /* point into the model's arena or a node attribute */
	bool known;
	struct wh_tensor value; /* valid when known */
	struct wh_symvec sym;   /* partly known contents, when not known */
};

/* Infers the main graph of m into states[g->n_values] (allocated here, free with
 * wh_infer_states_free). Contents are tracked for tensors of at most max_value_elements
 * elements created by evaluation (initializers and Constant nodes are always tracked), with
 * eval (NULL: wh_fold_eval only).
 * write_back: also store the results in the model's values, subgraphs included (the model
 * is modified although passed const: only wh_model_infer_shapes asks for it). */
enum wh_status wh_infer_run(const struct wh_model *m, uint64_t max_value_elements, bool write_back,
			    wh_fold_fn eval, struct wh_vstate **states_out);
void wh_infer_states_free(struct wh_vstate *s, uint32_t n);

#endif
