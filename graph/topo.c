#include "graph/topo.h"

#include <stdlib.h>
#include <string.h>

/* Kahn's algorithm with a min-heap on node id: among ready nodes the one stored first runs
 * first, so the order is unique for a graph and stable for one already sorted. */

static void heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
	uint32_t i = (*n)++;
	h[i] = v;
	while (i && h[(i - 1) / 2] > h[i]) {
		uint32_t p = (i - 1) / 2, t = h[p];
		h[p] = h[i];
		h[i] = t;
		i = p;
	}
}

static uint32_t heap_pop(uint32_t *h, uint32_t *n)
{
	uint32_t top = h[0];
	h[0] = h[--(*n)];
	for (uint32_t i = 0;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < *n && h[l] < h[m])
			m = l;
		if (r < *n && h[r] < h[m])
			m = r;
		if (m == i)
			break;
		uint32_t t = h[m];
		h[m] = h[i];
		h[i] = t;
		i = m;
	}
	return top;
}

/* Visits every edge from a produced value to the node that consumes it, in node order, in
 * two passes of one walk: without cons it counts (first[v + 1], pending[i]); with cons it
 * fills each value's CSR slice in the same order. */
static void consumer_edges(const struct wh_graph *g, uint32_t *first, uint32_t *pending, uint32_t *cons, uint32_t *fill)
{
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *nd = &g->nodes[i];
		for (uint32_t k = 0; k < nd->n_inputs; k++) {
			uint32_t v = nd->inputs[k];
			if (v == WH_NONE || g->values[v].producer == WH_NONE)
				continue;
			if (cons) {
				cons[first[v] + fill[v]++] = i;
			} else {
				first[v + 1]++;
				pending[i]++;
			}
		}
	}
}

enum wh_status wh_graph_topo_order(const struct wh_graph *g, uint32_t *order_out)
{
	uint32_t n = g->n_nodes;
	enum wh_status st = WH_OK;
	uint32_t *pending = calloc((size_t)n + 1, sizeof *pending);
	uint32_t *heap = calloc((size_t)n + 1, sizeof *heap);
	/* consumers of each value as a CSR list */
	uint32_t *first = calloc((size_t)g->n_values + 1, sizeof *first);
	uint32_t *cons = NULL;
	if (!pending || !heap || !first) {
		st = wh_error(WH_ERR_NOMEM, "graph: out of memory sorting nodes (free some memory)");
		goto out;
	}
	consumer_edges(g, first, pending, NULL, NULL);
	for (uint32_t v = 0; v < g->n_values; v++)
		first[v + 1] += first[v];
	cons = calloc((size_t)first[g->n_values] + 1, sizeof *cons);
	uint32_t *fill = calloc((size_t)g->n_values + 1, sizeof *fill);
	if (!cons || !fill) {
		free(fill);
		st = wh_error(WH_ERR_NOMEM, "graph: out of memory sorting nodes (free some memory)");
		goto out;
	}
	consumer_edges(g, first, NULL, cons, fill);
	free(fill);
	uint32_t hn = 0, done = 0;
	for (uint32_t i = 0; i < n; i++)
		if (!pending[i])
			heap_push(heap, &hn, i);
	while (hn) {
		uint32_t i = heap_pop(heap, &hn);
		order_out[done++] = i;
		const struct wh_node *nd = &g->nodes[i];
		for (uint32_t o = 0; o < nd->n_outputs; o++) {
			uint32_t v = nd->outputs[o];
			if (v == WH_NONE)
				continue;
			for (uint32_t c = first[v]; c < first[v + 1]; c++)
				if (--pending[cons[c]] == 0)
					heap_push(heap, &hn, cons[c]);
		}
	}
	if (done != n) {
		for (uint32_t i = 0; i < n; i++)
			if (pending[i]) {
				const struct wh_node *nd = &g->nodes[i];
				st = wh_error(WH_ERR_CYCLE, "node '%s' (%s): is on a cycle or depends on one (a graph must be acyclic; fix the model)",
					      nd->name && *nd->name ? nd->name : "(unnamed)", nd->op_type);
				break;
			}
	}
out:
	free(pending);
	free(heap);
	free(first);
	free(cons);
	return st;
}
