/* Subgraph extraction. The result is a new, self-contained model (caller owns it) with the
 * source's IR version, opsets and model-level fields; it shares weight blobs with the source
 * (nothing is copied but metadata). New graph inputs take their type and shape from the
 * source values, so run shape inference on the source first (extraction fails with
 * WH_ERR_INVALID naming a new input whose element type is unknown). */
#ifndef WH_EXTRACT_H
#define WH_EXTRACT_H

#include "graph/ir.h"

/* The nodes needed to compute `outputs` from `inputs` (tensor names; an input may be an
 * original graph input or any intermediate tensor). Initializers and Constant nodes are
 * pulled in as needed. WH_ERR_NOT_FOUND for an unknown name; WH_ERR_INVALID when an output
 * depends on a graph input that is not listed. */
enum wh_status wh_model_extract(const struct wh_model *m, const char *const *inputs, uint32_t n_inputs,
				const char *const *outputs, uint32_t n_outputs, struct wh_model **out);

/* The model made of exactly the given main-graph nodes (any order, duplicates ignored).
 * Inputs: tensors the nodes consume that none of them produce (initializers stay
 * initializers), in the source's topological order. Outputs: tensors they produce that an
 * unselected node consumes or that are source graph outputs, in topological order. */
enum wh_status wh_model_extract_nodes(const struct wh_model *m, const uint32_t *nodes, uint32_t n_nodes,
				      struct wh_model **out);

/* Building blocks, also used by sanitize: a model with src's header and no nodes, and
 * copying values/nodes across models by name (attributes deep-copied, blobs shared). */
enum wh_status wh_model_create_like(const struct wh_model *src, struct wh_model **out);
enum wh_status wh_graph_copy_value(struct wh_model *dst_model, struct wh_graph *dst,
				   const struct wh_graph *src, uint32_t value, uint32_t *id_out);
enum wh_status wh_graph_copy_node(struct wh_model *dst_model, struct wh_graph *dst,
				  const struct wh_graph *src, uint32_t node, uint32_t *id_out);
/* The same value under another name (graph/inline.h renames a branch's values). */
enum wh_status wh_graph_copy_value_as(struct wh_model *dst_model, struct wh_graph *dst,
				      const struct wh_graph *src, uint32_t value, const char *name, uint32_t *id_out);
/* A node's attributes (subgraphs deep-copied, blobs shared) and its unmodelled fields onto
 * dst_node, a node already added to dst with its inputs and outputs. */
enum wh_status wh_graph_copy_node_attrs(struct wh_model *dst_model, struct wh_graph *dst, uint32_t dst_node,
					const struct wh_node *sn);

#endif
