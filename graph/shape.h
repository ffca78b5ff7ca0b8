/* Shape and type inference.
 *
 * Propagates element types and shapes from the graph inputs (bound with --input-shapes
 * when dynamic) and initializers through every node, and the values of small integer
 * tensors (shape arithmetic: Shape, Gather, Slice, Concat, Cast, Unsqueeze, arithmetic)
 * so that Reshape/Expand/Slice/ConstantOfShape/Resize targets are known. Ops it does not
 * know leave their outputs unknown (listed at info level), never fail. An inconsistency
 * (broadcast mismatch, bad reshape) is WH_ERR_SHAPE naming the node. */
#ifndef WH_SHAPE_H
#define WH_SHAPE_H

#include "graph/ir.h"

struct wh_tensor;

struct wh_input_shape {
	char *name;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
};

/* Parses "x:1x3x640x640,y:4" (also "x:[1,3,640,640]"); *out is malloc'd (free with
 * wh_input_shapes_free). WH_ERR_USAGE with a message on bad syntax. */
enum wh_status wh_input_shapes_parse(const char *spec, struct wh_input_shape **out, uint32_t *n_out);
void wh_input_shapes_free(struct wh_input_shape *s, uint32_t n);
/* Sets the shapes of the named graph inputs. A name that is not an input is
 * WH_ERR_NOT_FOUND; a rank or a fixed dimension that contradicts the model is
 * WH_ERR_SHAPE. */
enum wh_status wh_model_bind_inputs(struct wh_model *m, const struct wh_input_shape *s, uint32_t n);
/* Constant folding's evaluator: computes node n (of graph g in model m; opset is the version
 * of the default domain) from constant tensors in[0..n->n_inputs) (NULL for an omitted
 * input) into out[0..n->n_outputs) (initialised and released by the caller whatever
 * happens). *done_out false when it cannot (no kernel, the kernel refuses the inputs, an op
 * whose result is random): not an error. Shape inference calls it only after the op's shape
 * rule has bounded every output within the size limit (or, for NonZero/Unique/Compress,
 * whose output sizes depend on the values, when the inputs are that small), and keeps only
 * numeric tensor results within the limit.
 * The executor provides the evaluator (wh_executor_fold_eval in executor/executor.h: its
 * kernels); graph/ never calls up into the executor, so callers pass it in. Without one,
 * inference evaluates only integer shape arithmetic itself (graph/fold-eval.c). */
typedef enum wh_status (*wh_fold_fn)(const struct wh_model *m, const struct wh_graph *g, const struct wh_node *n,
				      int64_t opset, const struct wh_tensor *const *in, struct wh_tensor *out,
				      bool *done_out);

/* Infers every value of the main graph (and subgraphs where possible), in place; small
 * values computable from constants are evaluated with eval (NULL: integer shape arithmetic
 * only). */
enum wh_status wh_model_infer_shapes_eval(struct wh_model *m, wh_fold_fn eval);
/* The same without an evaluator (graph-only callers). */
enum wh_status wh_model_infer_shapes(struct wh_model *m);
/* Whether inference has a shape rule for the op (domain "" or "ai.onnx" is the default
 * one). Every op the executor runs must have one (tests/check-registry.c walks the
 * executor's registry): without it `extract` and `reduce` cannot cut right after the op. */
bool wh_shape_has_rule(const char *domain, const char *op_type);
/* Number of main-graph values whose dtype and full static shape are known. */
uint32_t wh_model_count_static(const struct wh_model *m);

#endif
