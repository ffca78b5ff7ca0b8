/* A long list of layers (a precision answer of 60 layers) shown so that it can be read:
 * grouped by the exporter's module scope, counted by op type, listed in full only once.
 *
 * Exporters name nodes after the module that made them (`/model/layers.0/self_attn/q_proj/
 * MatMul`): the scope of a layer is its name up to the last '/' ("" for names without one).
 * The groups are the scopes cut to a common depth: the deepest cut (in '/'-separated parts)
 * that gives at most max_groups groups; when only the cut that puts everything in one group
 * fits, the next one is taken and its largest groups shown (the rest counted), since one
 * group says nothing. Groups come in the order of their first layer.
 *
 * Names are untrusted: every print goes through graph/names.h (wh_name_term on terminals,
 * wh_name_md / wh_name_md_cell in Markdown).
 *
 * Ownership: struct wh_layer_groups is caller-owned (_build fills it, _release frees it); it
 * borrows the op type strings of the graph, which must outlive it. */
#ifndef WH_LAYER_GROUPS_H
#define WH_LAYER_GROUPS_H

#include <stdint.h>
#include <stdio.h>

#include "graph/ir.h"

struct wh_op_count {
	const char *op; /* borrowed from the graph */
	uint32_t n;
};

struct wh_layer_group {
	char *scope;             /* malloc'd: the common prefix ("" when the layers have none) */
	uint32_t n;              /* layers in it */
	uint32_t n_ops;
	struct wh_op_count *ops; /* by count, largest first (ties by op name) */
};

struct wh_layer_groups {
	uint32_t n_layers;
	uint32_t n;                   /* groups */
	struct wh_layer_group *g;     /* in the order of their first layer */
	uint32_t shown;               /* groups to show: the n largest... when n > max_groups, the
				       * max_groups - 1 largest, and a line counting the rest */
	uint32_t n_ops;
	struct wh_op_count *ops;      /* over all the layers, largest first */
};

/* Groups the layers nodes[0..n) of g (node ids, in the order to list them). */
enum wh_status wh_layer_groups_build(const struct wh_graph *g, const uint32_t *nodes, uint32_t n, uint32_t max_groups,
				     struct wh_layer_groups *out);
void wh_layer_groups_release(struct wh_layer_groups *lg);

/* One line per group shown, `<indent><scope>  <count>  <op> <n>, ...` (the scope escaped by
 * wh_name_term, "(no module scope)" for ""), and one for the groups not shown: at most
 * max_groups lines. */
void wh_layer_groups_print(FILE *f, const struct wh_layer_groups *lg, const char *indent);
/* The ops over all layers, "MatMul 20, Add 12, ..." (at most max_ops named, then "+K more
 * op types"), for a terminal line. */
void wh_layer_groups_ops_text(const struct wh_layer_groups *lg, uint32_t max_ops, char *buf, size_t size);
/* The groups in words for Markdown prose: "`/model/layers.0` 18 (MatMul 4, Add 3, ...), ...". */
void wh_layer_groups_md(const struct wh_layer_groups *lg, char *buf, size_t size);
/* Every layer once, as a Markdown table: | # | layer | op |. */
void wh_layer_table_md(FILE *f, const struct wh_graph *g, const uint32_t *nodes, uint32_t n);

#endif
