/* Inlining control flow: an If node replaced by the nodes of one of its branches.
 *
 * The result is a new model (caller owns it; weight blobs shared with the source) in which
 * each If the caller picks a branch for is gone and its branch's nodes, initializers and
 * value infos stand in the enclosing graph at the If's place, so the graph stays in
 * topological order. Names: the enclosing graph keeps every name it had (the If's outputs
 * keep theirs: the branch's output values take them, or an Identity named
 * "<if name>/output_<k>" copies a branch output that is not computed inside the branch);
 * a branch value whose name is taken gets the first free "<name>__<k>" (names are
 * untrusted: a branch may reuse any outer name). Values the branch captures from outer
 * graphs are resolved by name through the enclosing scopes, as the runtime does. Branch
 * nodes keep their own names. The Ifs of a branch being inlined are offered to the chooser
 * too (nested Ifs); an If inside a subgraph that stays (a Loop body, an If kept whole) is
 * copied as it is. The If's condition stays computed where its producer is: a dead node,
 * which reduce may drop. */
#ifndef WH_INLINE_H
#define WH_INLINE_H

#include <stdbool.h>

#include "graph/ir.h"

/* For the If node `node` of graph g (the source model's main graph or a branch of an If
 * being inlined): 1 inlines then_branch, 0 else_branch, -1 keeps the If. */
typedef int (*wh_inline_choose_fn)(void *state, const struct wh_graph *g, uint32_t node);

struct wh_inline_stats {
	uint32_t inlined;  /* If nodes replaced by a branch */
	uint32_t renamed;  /* branch values given a new name */
};

/* WH_ERR_UNSUPPORTED (with the If's name in the error) when a subgraph kept inside a
 * chosen branch captures a branch value that had to be renamed; WH_ERR_INVALID for a
 * branch that does not give the If's outputs or captures a name no enclosing graph has. */
enum wh_status wh_model_inline_ifs(const struct wh_model *m, wh_inline_choose_fn choose, void *state,
				   struct wh_model **out, struct wh_inline_stats *stats_out);

/* Whether a node is an If of the default domain with both branches. */
bool wh_node_is_if(const struct wh_node *n);

#endif
