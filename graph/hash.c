#include "graph/hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "graph/topo.h"

/* Merkle-style: a value's hash is made of what computes it (its producer's op, attributes
 * and input hashes, and the output slot), never of its name; graph inputs are hashed by
 * name, type and shape; initializers by type, shape and bytes. The graph hash combines its
 * inputs, outputs (name and value hash) and the sorted multiset of node hashes. */

static void feed(XXH3_state_t *s, const void *p, size_t n)
{
	XXH3_128bits_update(s, p, n);
}

static void feed_u64(XXH3_state_t *s, uint64_t v)
{
	feed(s, &v, sizeof v);
}

static void feed_str(XXH3_state_t *s, const char *str)
{
	size_t n = str ? strlen(str) : 0;
	feed_u64(s, n);
	if (n)
		feed(s, str, n);
}

static void feed_hash(XXH3_state_t *s, XXH128_hash_t h)
{
	feed_u64(s, h.low64);
	feed_u64(s, h.high64);
}

static void feed_shape(XXH3_state_t *s, const struct wh_value *v)
{
	feed_u64(s, (uint64_t)v->dtype);
	feed_u64(s, (uint64_t)(int64_t)v->rank);
	for (int32_t d = 0; d < v->rank; d++) {
		feed_u64(s, (uint64_t)v->dims[d].value);
		feed_str(s, v->dims[d].param);
	}
	feed_u64(s, v->type_rest.len);
	if (v->type_rest.len)
		feed(s, v->type_rest.data, v->type_rest.len);
}

static void feed_blob(XXH3_state_t *s, const struct wh_blob *b)
{
	if (!b) {
		feed_u64(s, UINT64_MAX);
		return;
	}
	feed_u64(s, b->size);
	/* cached per blob, and a file's identity for mapped weights: hashing a candidate costs
	 * nothing per weight byte */
	uint64_t d[2];
	wh_blob_digest(b, d);
	feed_u64(s, d[0]);
	feed_u64(s, d[1]);
}

static void feed_const_tensor(XXH3_state_t *s, const struct wh_const_tensor *t)
{
	feed_u64(s, (uint64_t)t->dtype);
	feed_u64(s, (uint64_t)(int64_t)t->rank);
	for (int32_t d = 0; d < t->rank; d++)
		feed_u64(s, (uint64_t)t->dims[d]);
	feed_blob(s, t->data);
	feed_u64(s, t->rest.len); /* string tensors keep their data there */
	if (t->rest.len)
		feed(s, t->rest.data, t->rest.len);
}

static enum wh_status graph_hash(const struct wh_graph *g, XXH128_hash_t *out);

static int cmp_attr(const void *a, const void *b)
{
	return strcmp((*(const struct wh_attr *const *)a)->name, (*(const struct wh_attr *const *)b)->name);
}

static enum wh_status feed_attrs(XXH3_state_t *s, const struct wh_node *n)
{
	const struct wh_attr *fixed[32];
	const struct wh_attr **sorted = fixed;
	if (n->n_attrs > 32 && !(sorted = malloc(n->n_attrs * sizeof *sorted)))
		return wh_error(WH_ERR_NOMEM, "hash: out of memory");
	for (uint32_t i = 0; i < n->n_attrs; i++)
		sorted[i] = &n->attrs[i];
	qsort(sorted, n->n_attrs, sizeof *sorted, cmp_attr);
	enum wh_status st = WH_OK;
	feed_u64(s, n->n_attrs);
	for (uint32_t i = 0; i < n->n_attrs && st == WH_OK; i++) {
		const struct wh_attr *a = sorted[i];
		feed_str(s, a->name);
		feed_u64(s, (uint64_t)a->type);
		XXH128_hash_t h;
		switch (a->type) {
		case WH_ATTR_FLOAT: feed(s, &a->f, sizeof a->f); break;
		case WH_ATTR_INT: feed_u64(s, (uint64_t)a->i); break;
		case WH_ATTR_STRING: feed_u64(s, a->s.len); feed(s, a->s.data, a->s.len); break;
		case WH_ATTR_TENSOR: feed_const_tensor(s, a->t); break;
		case WH_ATTR_GRAPH:
			if ((st = graph_hash(a->g, &h)) == WH_OK)
				feed_hash(s, h);
			break;
		case WH_ATTR_FLOATS: feed_u64(s, a->n); feed(s, a->floats, a->n * sizeof(float)); break;
		case WH_ATTR_INTS: feed_u64(s, a->n); feed(s, a->ints, a->n * sizeof(int64_t)); break;
		case WH_ATTR_STRINGS:
			feed_u64(s, a->n);
			for (size_t k = 0; k < a->n; k++) {
				feed_u64(s, a->strings[k].len);
				feed(s, a->strings[k].data, a->strings[k].len);
			}
			break;
		case WH_ATTR_TENSORS:
			feed_u64(s, a->n);
			for (size_t k = 0; k < a->n; k++)
				feed_const_tensor(s, &a->tensors[k]);
			break;
		case WH_ATTR_GRAPHS:
			feed_u64(s, a->n);
			for (size_t k = 0; k < a->n && st == WH_OK; k++)
				if ((st = graph_hash(a->graphs[k], &h)) == WH_OK)
					feed_hash(s, h);
			break;
		default:
			break;
		}
		feed_u64(s, a->rest.len);
		if (a->rest.len)
			feed(s, a->rest.data, a->rest.len);
	}
	if (sorted != fixed)
		free(sorted);
	return st;
}

static int cmp_hash(const void *a, const void *b)
{
	const XXH128_hash_t *x = a, *y = b;
	if (x->high64 != y->high64)
		return x->high64 < y->high64 ? -1 : 1;
	if (x->low64 != y->low64)
		return x->low64 < y->low64 ? -1 : 1;
	return 0;
}

static enum wh_status graph_hash(const struct wh_graph *g, XXH128_hash_t *out)
{
	enum wh_status st = WH_OK;
	XXH128_hash_t *vh = calloc((size_t)g->n_values + 1, sizeof *vh);
	XXH128_hash_t *nh = calloc((size_t)g->n_nodes + 1, sizeof *nh);
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	XXH3_state_t *s = XXH3_createState();
	if (!vh || !nh || !order || !s) {
		st = wh_error(WH_ERR_NOMEM, "hash: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	/* leaves */
	for (uint32_t v = 0; v < g->n_values; v++) {
		const struct wh_value *val = &g->values[v];
		if (val->producer != WH_NONE)
			continue;
		XXH3_128bits_reset(s);
		if (val->flags & WH_VALUE_INITIALIZER) {
			feed_str(s, "init");
			feed_shape(s, val);
			feed_blob(s, val->data);
			feed_u64(s, val->tensor_rest.len);
			if (val->tensor_rest.len)
				feed(s, val->tensor_rest.data, val->tensor_rest.len);
			if (val->flags & WH_VALUE_INPUT)
				feed_str(s, val->name); /* an overridable input: its name is interface */
		} else {
			feed_str(s, (val->flags & WH_VALUE_OUTER) ? "outer" : "input");
			feed_str(s, val->name);
			feed_shape(s, val);
		}
		vh[v] = XXH3_128bits_digest(s);
	}
	for (uint32_t i = 0; i < g->n_nodes && st == WH_OK; i++) {
		uint32_t id = order[i];
		const struct wh_node *n = &g->nodes[id];
		XXH3_128bits_reset(s);
		feed_str(s, n->op_type);
		feed_str(s, n->domain);
		feed_u64(s, n->n_inputs);
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			XXH128_hash_t z = {0, 0};
			feed_hash(s, n->inputs[k] == WH_NONE ? z : vh[n->inputs[k]]);
		}
		feed_u64(s, n->n_outputs);
		for (uint32_t k = 0; k < n->n_outputs; k++)
			feed_u64(s, n->outputs[k] == WH_NONE ? 0 : 1);
		if ((st = feed_attrs(s, n)) != WH_OK)
			break;
		nh[id] = XXH3_128bits_digest(s);
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			if (n->outputs[k] == WH_NONE)
				continue;
			XXH3_128bits_reset(s);
			feed_hash(s, nh[id]);
			feed_u64(s, k);
			vh[n->outputs[k]] = XXH3_128bits_digest(s);
		}
	}
	if (st != WH_OK)
		goto out;
	qsort(nh, g->n_nodes, sizeof *nh, cmp_hash);
	XXH3_128bits_reset(s);
	feed_u64(s, g->n_inputs);
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		feed_str(s, g->values[g->inputs[i]].name);
		feed_hash(s, vh[g->inputs[i]]);
	}
	feed_u64(s, g->n_outputs);
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		const struct wh_value *v = &g->values[g->outputs[i]];
		feed_str(s, v->name);
		feed_shape(s, v);
		feed_hash(s, vh[g->outputs[i]]);
	}
	feed_u64(s, g->n_nodes);
	for (uint32_t i = 0; i < g->n_nodes; i++)
		feed_hash(s, nh[i]);
	*out = XXH3_128bits_digest(s);
out:
	XXH3_freeState(s);
	free(vh);
	free(nh);
	free(order);
	return st;
}

static enum wh_status graph_weights_unchanged(const struct wh_graph *g)
{
	for (uint32_t v = 0; v < g->n_values; v++) {
		const struct wh_blob_file *f;
		uint64_t off;
		if (g->values[v].data && wh_blob_origin(g->values[v].data, &f, &off) &&
		    !wh_blob_file_unchanged(f))
			return wh_error(WH_ERR_IO, "%s: the weights file changed during the run (rewritten or replaced after the model was loaded), so the answer would mix two versions of the model; nothing is reported (keep the weights unchanged while whittle runs, then run again)",
					wh_blob_file_path(f));
	}
	for (uint32_t i = 0; i < g->n_nodes; i++)
		for (uint32_t k = 0; k < g->nodes[i].n_attrs; k++) {
			const struct wh_attr *a = &g->nodes[i].attrs[k];
			enum wh_status st = WH_OK;
			if (a->type == WH_ATTR_GRAPH && a->g)
				st = graph_weights_unchanged(a->g);
			for (size_t j = 0; a->type == WH_ATTR_GRAPHS && j < a->n && st == WH_OK; j++)
				st = graph_weights_unchanged(a->graphs[j]);
			if (st != WH_OK)
				return st;
		}
	return WH_OK;
}

enum wh_status wh_model_weights_unchanged(const struct wh_model *m)
{
	return graph_weights_unchanged(m->graph);
}

enum wh_status wh_model_hash(const struct wh_model *m, struct wh_hash *out)
{
	XXH128_hash_t h;
	enum wh_status st = graph_hash(m->graph, &h);
	if (st != WH_OK)
		return st;
	/* the opsets change what ops mean */
	XXH3_state_t *s = XXH3_createState();
	if (!s)
		return wh_error(WH_ERR_NOMEM, "hash: out of memory");
	XXH3_128bits_reset(s);
	feed_hash(s, h);
	for (uint32_t i = 0; i < m->n_opsets; i++) {
		feed_str(s, m->opsets[i].domain);
		feed_u64(s, (uint64_t)m->opsets[i].version);
	}
	h = XXH3_128bits_digest(s);
	XXH3_freeState(s);
	out->lo = h.low64;
	out->hi = h.high64;
	return WH_OK;
}

void wh_hash_hex(struct wh_hash h, char buf[33])
{
	snprintf(buf, 33, "%016llx%016llx", (unsigned long long)h.hi, (unsigned long long)h.lo);
}
