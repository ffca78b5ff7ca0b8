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
/* Infers every value of the main graph (and subgraphs where possible), in place. */
enum wh_status wh_model_infer_shapes(struct wh_model *m);
/* Whether inference has a shape rule for the op (domain "" or "ai.onnx" is the default
 * one). Every op the executor runs must have one (tests/check-registry.c walks the
 * executor's registry): without it `extract` and `reduce` cannot cut right after the op. */
bool wh_shape_has_rule(const char *domain, const char *op_type);
/* Number of main-graph values whose dtype and full static shape are known. */
uint32_t wh_model_count_static(const struct wh_model *m);

#endif
