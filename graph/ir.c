#include "graph/ir.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

enum wh_status wh_graph_create_in(struct wh_model *m, const struct wh_graph *parent,
				  struct wh_graph **out)
{
	struct wh_graph *g = wh_arena_alloc(m->arena, sizeof *g);
	if (!g)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	g->arena = m->arena;
	g->parent = parent;
	*out = g;
	return WH_OK;
}

enum wh_status wh_model_create(struct wh_model **out)
{
	struct wh_model *m = calloc(1, sizeof *m);
	if (!m)
		return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
	enum wh_status st = wh_arena_create(&m->arena);
	if (st != WH_OK) {
		free(m);
		return st;
	}
	st = wh_graph_create_in(m, NULL, &m->graph);
	if (st != WH_OK) {
		wh_model_destroy(m);
		return st;
	}
	m->ir_version = 8;
	*out = m;
	return WH_OK;
}

static void release_graph(struct wh_graph *g);

static void release_const_tensor(struct wh_const_tensor *t)
{
	if (t)
		wh_blob_release(t->data);
}

static void release_graph(struct wh_graph *g)
{
	if (!g)
		return;
	for (uint32_t v = 0; v < g->n_values; v++)
		wh_blob_release(g->values[v].data);
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		struct wh_node *node = &g->nodes[n];
		for (uint32_t a = 0; a < node->n_attrs; a++) {
			struct wh_attr *at = &node->attrs[a];
			release_const_tensor(at->t);
			release_graph(at->g);
			if (at->type == WH_ATTR_TENSORS)
				for (size_t i = 0; i < at->n; i++)
					release_const_tensor(&at->tensors[i]);
			if (at->type == WH_ATTR_GRAPHS)
				for (size_t i = 0; i < at->n; i++)
					release_graph(at->graphs[i]);
		}
	}
}

void wh_model_destroy(struct wh_model *m)
{
	if (!m)
		return;
	release_graph(m->graph);
	wh_arena_destroy(m->arena);
	free(m);
}

static uint32_t name_hash(const char *name)
{
	return (uint32_t)XXH3_64bits(name, strlen(name));
}

uint32_t wh_graph_find_value(const struct wh_graph *g, const char *name)
{
	if (!g->index_cap || !name)
		return WH_NONE;
	uint32_t mask = g->index_cap - 1;
	for (uint32_t h = name_hash(name) & mask;; h = (h + 1) & mask) {
		uint32_t id = g->index[h];
		if (id == WH_NONE)
			return WH_NONE;
		if (!strcmp(g->values[id].name, name))
			return id;
	}
}

static enum wh_status index_insert(struct wh_graph *g, uint32_t id)
{
	if ((uint64_t)(g->n_values + 1) * 2 > g->index_cap) {
		uint32_t cap = g->index_cap ? g->index_cap * 2 : 64;
		while ((uint64_t)(g->n_values + 1) * 2 > cap)
			cap *= 2;
		uint32_t *idx = wh_arena_calloc(g->arena, cap, sizeof *idx);
		if (!idx)
			return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
		memset(idx, 0xff, (size_t)cap * sizeof *idx);
		for (uint32_t v = 0; v < g->n_values; v++) {
			if (v == id)
				continue;
			uint32_t h = name_hash(g->values[v].name) & (cap - 1);
			while (idx[h] != WH_NONE)
				h = (h + 1) & (cap - 1);
			idx[h] = v;
		}
		g->index = idx;
		g->index_cap = cap;
	}
	uint32_t mask = g->index_cap - 1;
	uint32_t h = name_hash(g->values[id].name) & mask;
	while (g->index[h] != WH_NONE)
		h = (h + 1) & mask;
	g->index[h] = id;
	return WH_OK;
}

/* The array (values or nodes) with room for one more item: itself, or a copy twice as
 * large in the graph's arena (*cap updated); NULL when out of memory. */
static void *room_for_one(struct wh_graph *g, void *items, uint32_t n, uint32_t *cap, size_t size)
{
	if (n < *cap)
		return items;
	uint32_t c = *cap ? *cap * 2 : 64;
	void *grown = wh_arena_grow(g->arena, items, n, c, size);
	if (grown)
		*cap = c;
	return grown;
}

enum wh_status wh_graph_add_value(struct wh_graph *g, const char *name, uint32_t *id_out)
{
	if (wh_graph_find_value(g, name) != WH_NONE)
		return wh_error(WH_ERR_INVALID, "tensor '%s': defined twice (each tensor name must be unique; fix the model)", name);
	if (g->n_values == WH_NONE - 1)
		return wh_error(WH_ERR_OVERFLOW, "graph: too many tensors (split the model)");
	struct wh_value *nv = room_for_one(g, g->values, g->n_values, &g->cap_values, sizeof *nv);
	if (!nv)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	g->values = nv;
	uint32_t id = g->n_values;
	struct wh_value *v = &g->values[id];
	memset(v, 0, sizeof *v);
	v->name = wh_arena_strdup(g->arena, name);
	if (!v->name)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	v->rank = -1;
	v->producer = WH_NONE;
	v->producer_output = WH_NONE;
	g->n_values++;
	enum wh_status st = index_insert(g, id);
	if (st != WH_OK)
		return st;
	*id_out = id;
	return WH_OK;
}

enum wh_status wh_graph_intern_value(struct wh_graph *g, const char *name, uint32_t *id_out)
{
	uint32_t id = wh_graph_find_value(g, name);
	if (id != WH_NONE) {
		*id_out = id;
		return WH_OK;
	}
	return wh_graph_add_value(g, name, id_out);
}

enum wh_status wh_graph_add_node(struct wh_graph *g, const char *op_type, const char *domain,
				 const char *name, uint32_t n_inputs, const uint32_t *inputs,
				 uint32_t n_outputs, const uint32_t *outputs, uint32_t *id_out)
{
	struct wh_node *nn = room_for_one(g, g->nodes, g->n_nodes, &g->cap_nodes, sizeof *nn);
	if (!nn)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	g->nodes = nn;
	uint32_t id = g->n_nodes;
	struct wh_node *n = &g->nodes[id];
	memset(n, 0, sizeof *n);
	n->op_type = wh_arena_strdup(g->arena, op_type ? op_type : "");
	n->domain = wh_arena_strdup(g->arena, domain ? domain : "");
	n->name = wh_arena_strdup(g->arena, name ? name : "");
	n->inputs = wh_arena_memdup(g->arena, inputs, (size_t)n_inputs * sizeof *inputs);
	n->outputs = wh_arena_memdup(g->arena, outputs, (size_t)n_outputs * sizeof *outputs);
	if (!n->op_type || !n->domain || !n->name || !n->inputs || !n->outputs)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	n->n_inputs = n_inputs;
	n->n_outputs = n_outputs;
	for (uint32_t i = 0; i < n_outputs; i++) {
		if (outputs[i] == WH_NONE)
			continue;
		struct wh_value *v = &g->values[outputs[i]];
		if (v->producer != WH_NONE || (v->flags & (WH_VALUE_INITIALIZER | WH_VALUE_INPUT)))
			return wh_error(WH_ERR_INVALID,
					"tensor '%s': produced twice (node '%s' %s writes a tensor that already has a source; fix the model)",
					v->name, n->name, n->op_type);
		v->producer = id;
		v->producer_output = i;
	}
	g->n_nodes++;
	*id_out = id;
	return WH_OK;
}

static enum wh_status append_id(struct wh_graph *g, uint32_t **arr, uint32_t *n, uint32_t id)
{
	/* capacity is the next power of two above n */
	uint32_t cnt = *n;
	if ((cnt & (cnt - 1)) == 0 || cnt == 0) {
		uint32_t cap = cnt ? cnt * 2 : 4;
		uint32_t *na = wh_arena_grow(g->arena, *arr, cnt, cap, sizeof *na);
		if (!na)
			return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
		*arr = na;
	}
	(*arr)[cnt] = id;
	*n = cnt + 1;
	return WH_OK;
}

enum wh_status wh_graph_add_input(struct wh_graph *g, uint32_t value)
{
	g->values[value].flags |= WH_VALUE_INPUT;
	return append_id(g, &g->inputs, &g->n_inputs, value);
}

enum wh_status wh_graph_add_output(struct wh_graph *g, uint32_t value)
{
	g->values[value].flags |= WH_VALUE_OUTPUT;
	return append_id(g, &g->outputs, &g->n_outputs, value);
}

enum wh_status wh_graph_set_shape(struct wh_graph *g, uint32_t value, enum wh_dtype dtype,
				  int32_t rank, const int64_t *dims)
{
	struct wh_value *v = &g->values[value];
	v->type_orig.data = NULL;
	v->type_orig.len = 0;
	v->dtype = dtype;
	if (rank < 0) {
		v->rank = -1;
		v->dims = NULL;
		return WH_OK;
	}
	if (rank > WH_MAX_RANK)
		return wh_error(WH_ERR_UNSUPPORTED, "tensor '%s': rank %d is above %d (whittle's limit)", v->name, rank, WH_MAX_RANK);
	struct wh_dim *d = wh_arena_calloc(g->arena, (size_t)rank + 1, sizeof *d);
	if (!d)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	for (int32_t i = 0; i < rank; i++)
		d[i].value = dims ? dims[i] : -1;
	v->rank = rank;
	v->dims = d;
	return WH_OK;
}

enum wh_status wh_graph_set_initializer(struct wh_graph *g, uint32_t value, enum wh_dtype dtype,
					int32_t rank, const int64_t *dims, struct wh_blob *data)
{
	struct wh_value *v = &g->values[value];
	if (v->producer != WH_NONE)
		return wh_error(WH_ERR_INVALID, "tensor '%s': is both an initializer and a node output (fix the model)", v->name);
	enum wh_status st = wh_graph_set_shape(g, value, dtype, rank, dims);
	if (st != WH_OK)
		return st;
	if (v->flags & WH_VALUE_INITIALIZER)
		wh_blob_release(v->data);
	else if ((st = append_id(g, &g->inits, &g->n_inits, value)) != WH_OK)
		return st;
	v->flags |= WH_VALUE_INITIALIZER;
	v->data = wh_blob_retain(data);
	return WH_OK;
}

const struct wh_attr *wh_node_attr(const struct wh_node *n, const char *name)
{
	for (uint32_t i = 0; i < n->n_attrs; i++)
		if (!strcmp(n->attrs[i].name, name))
			return &n->attrs[i];
	return NULL;
}

size_t wh_attr_graph_count(const struct wh_attr *at)
{
	return at->type == WH_ATTR_GRAPH ? 1 : at->type == WH_ATTR_GRAPHS ? at->n : 0;
}

const struct wh_graph *wh_attr_graph(const struct wh_attr *at, size_t k)
{
	return at->type == WH_ATTR_GRAPH ? at->g : at->graphs[k];
}

bool wh_node_holds_graphs(const struct wh_node *n)
{
	for (uint32_t a = 0; a < n->n_attrs; a++)
		if (wh_attr_graph_count(&n->attrs[a]))
			return true;
	return false;
}

int64_t wh_node_attr_int(const struct wh_node *n, const char *name, int64_t dflt)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	return a && a->type == WH_ATTR_INT ? a->i : dflt;
}

float wh_node_attr_float(const struct wh_node *n, const char *name, float dflt)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	if (a && a->type == WH_ATTR_FLOAT)
		return a->f;
	if (a && a->type == WH_ATTR_INT)
		return (float)a->i;
	return dflt;
}

const char *wh_node_attr_string(const struct wh_node *n, const char *name, const char *dflt,
				char *buf, size_t bufsize)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	if (!a || a->type != WH_ATTR_STRING || bufsize == 0)
		return dflt;
	size_t len = a->s.len < bufsize - 1 ? a->s.len : bufsize - 1;
	if (len)
		memcpy(buf, a->s.data, len);
	buf[len] = '\0';
	return buf;
}

int64_t wh_node_attr_ints(const struct wh_node *n, const char *name, const int64_t **ints_out)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	if (!a || a->type != WH_ATTR_INTS)
		return -1;
	/* an empty list is a valid pointer too, so callers may copy n = 0 elements from it */
	static const int64_t none[1] = {0};
	*ints_out = a->ints && a->n ? a->ints : none;
	return (int64_t)a->n;
}

int64_t wh_model_opset(const struct wh_model *m, const char *domain)
{
	bool dflt = !domain || !*domain || !strcmp(domain, "ai.onnx");
	for (uint32_t i = 0; i < m->n_opsets; i++) {
		const char *d = m->opsets[i].domain;
		bool ddflt = !d || !*d || !strcmp(d, "ai.onnx");
		if (dflt ? ddflt : (d && !strcmp(d, domain)))
			return m->opsets[i].version;
	}
	return 0;
}

void wh_graph_use_counts(const struct wh_graph *g, uint32_t *counts_out)
{
	memset(counts_out, 0, (size_t)g->n_values * sizeof *counts_out);
	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (uint32_t i = 0; i < g->nodes[n].n_inputs; i++)
			if (g->nodes[n].inputs[i] != WH_NONE)
				counts_out[g->nodes[n].inputs[i]]++;
}
