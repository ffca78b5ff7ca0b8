/* Topological order of a graph's nodes. Stable: among ready nodes the one stored first
 * comes first, so a graph already in order keeps its order. */
#ifndef WH_TOPO_H
#define WH_TOPO_H

#include "graph/ir.h"

/* order_out: g->n_nodes node ids (caller-allocated). WH_ERR_CYCLE names a node on a cycle. */
enum wh_status wh_graph_topo_order(const struct wh_graph *g, uint32_t *order_out);

#endif
