#include "graph/extract.h"

#include <stdlib.h>
#include <string.h>

#include "graph/topo.h"

static enum wh_status oom(void)
{
	return wh_error(WH_ERR_NOMEM, "extract: out of memory (free some memory)");
}

enum wh_status wh_model_create_like(const struct wh_model *src, struct wh_model **out)
{
	struct wh_model *m;
	enum wh_status st = wh_model_create(&m);
	if (st != WH_OK)
		return st;
	m->ir_version = src->ir_version;
	m->n_opsets = src->n_opsets;
	m->opsets = wh_arena_calloc(m->arena, src->n_opsets + 1, sizeof *m->opsets);
	m->rest.len = src->rest.len;
	m->rest.data = src->rest.len ? wh_arena_memdup(m->arena, src->rest.data, src->rest.len) : NULL;
	m->graph->name = wh_arena_strdup(m->arena, src->graph->name ? src->graph->name : "");
	m->graph->rest.len = src->graph->rest.len;
	m->graph->rest.data = src->graph->rest.len ? wh_arena_memdup(m->arena, src->graph->rest.data, src->graph->rest.len) : NULL;
	m->dir = src->dir ? wh_arena_strdup(m->arena, src->dir) : NULL;
	if (!m->opsets || (src->rest.len && !m->rest.data) || (src->graph->rest.len && !m->graph->rest.data)) {
		wh_model_destroy(m);
		return oom();
	}
	for (uint32_t i = 0; i < src->n_opsets; i++) {
		m->opsets[i].domain = wh_arena_strdup(m->arena, src->opsets[i].domain ? src->opsets[i].domain : "");
		m->opsets[i].version = src->opsets[i].version;
	}
	*out = m;
	return WH_OK;
}

static bool copy_bytes(struct wh_arena *a, struct wh_bytes *dst, const struct wh_bytes *src)
{
	dst->len = src->len;
	dst->data = src->len ? wh_arena_memdup(a, src->data, src->len) : NULL;
	return !src->len || dst->data;
}

enum wh_status wh_graph_copy_value(struct wh_model *dst_model, struct wh_graph *dst,
				   const struct wh_graph *src, uint32_t value, uint32_t *id_out)
{
	return wh_graph_copy_value_as(dst_model, dst, src, value, src->values[value].name, id_out);
}

enum wh_status wh_graph_copy_value_as(struct wh_model *dst_model, struct wh_graph *dst,
				      const struct wh_graph *src, uint32_t value, const char *name, uint32_t *id_out)
{
	const struct wh_value *sv = &src->values[value];
	uint32_t id = wh_graph_find_value(dst, name);
	if (id != WH_NONE) {
		*id_out = id;
		return WH_OK;
	}
	enum wh_status st = wh_graph_add_value(dst, name, &id);
	if (st != WH_OK)
		return st;
	struct wh_value *dv = &dst->values[id];
	struct wh_arena *A = dst_model->arena;
	dv->dtype = sv->dtype;
	dv->rank = sv->rank;
	if (sv->rank > 0) {
		dv->dims = wh_arena_calloc(A, (size_t)sv->rank, sizeof *dv->dims);
		if (!dv->dims)
			return oom();
		for (int32_t d = 0; d < sv->rank; d++) {
			dv->dims[d].value = sv->dims[d].value;
			dv->dims[d].param = sv->dims[d].param ? wh_arena_strdup(A, sv->dims[d].param) : NULL;
		}
	}
	dv->flags = sv->flags & WH_VALUE_HAS_INFO;
	if (!copy_bytes(A, &dv->type_rest, &sv->type_rest) || !copy_bytes(A, &dv->info_rest, &sv->info_rest) ||
	    !copy_bytes(A, &dv->type_orig, &sv->type_orig))
		return oom();
	if (sv->flags & WH_VALUE_INITIALIZER) {
		int64_t dims[WH_MAX_RANK];
		for (int32_t d = 0; d < sv->rank; d++)
			dims[d] = sv->dims[d].value;
		if ((st = wh_graph_set_initializer(dst, id, sv->dtype, sv->rank, dims, sv->data)) != WH_OK)
			return st;
		/* keep symbolic dims copied above, and the unmodelled tensor fields */
		dv = &dst->values[id];
		if (!copy_bytes(A, &dv->tensor_rest, &sv->tensor_rest))
			return oom();
	}
	*id_out = id;
	return WH_OK;
}

static struct wh_graph *copy_subgraph(struct wh_model *dm, const struct wh_graph *parent, const struct wh_graph *sg,
				      enum wh_status *st);

static bool copy_const_tensor(struct wh_arena *A, struct wh_const_tensor *d, const struct wh_const_tensor *s)
{
	*d = *s;
	d->name = wh_arena_strdup(A, s->name ? s->name : "");
	d->dims = wh_arena_memdup(A, s->dims, sizeof(int64_t) * (size_t)(s->rank > 0 ? s->rank : 1));
	d->data = wh_blob_retain(s->data);
	return d->name && d->dims && copy_bytes(A, &d->rest, &s->rest);
}

/* A list attribute (strings, tensors or graphs): an array of n + 1 items (the last zeroed,
 * as the loader makes them), then each item copied. */
static enum wh_status copy_attr_list(struct wh_model *dm, const struct wh_graph *dst_graph, struct wh_attr *d,
				     const struct wh_attr *s)
{
	struct wh_arena *A = dm->arena;
	enum wh_status st = WH_OK;
	bool ok;
	if (s->type == WH_ATTR_STRINGS)
		ok = (d->strings = wh_arena_calloc(A, s->n + 1, sizeof *d->strings)) != NULL;
	else if (s->type == WH_ATTR_TENSORS)
		ok = (d->tensors = wh_arena_calloc(A, s->n + 1, sizeof *d->tensors)) != NULL;
	else
		ok = (d->graphs = wh_arena_calloc(A, s->n + 1, sizeof *d->graphs)) != NULL;
	for (size_t i = 0; ok && st == WH_OK && i < s->n; i++) {
		if (s->type == WH_ATTR_STRINGS)
			ok = copy_bytes(A, &d->strings[i], &s->strings[i]);
		else if (s->type == WH_ATTR_TENSORS)
			ok = copy_const_tensor(A, &d->tensors[i], &s->tensors[i]);
		else
			d->graphs[i] = copy_subgraph(dm, dst_graph, s->graphs[i], &st);
	}
	return ok ? st : oom();
}

static enum wh_status copy_attr(struct wh_model *dm, const struct wh_graph *dst_graph, struct wh_attr *d,
				const struct wh_attr *s)
{
	struct wh_arena *A = dm->arena;
	enum wh_status st = WH_OK;
	*d = *s;
	d->t = NULL;
	d->g = NULL;
	d->floats = NULL;
	d->ints = NULL;
	d->strings = NULL;
	d->tensors = NULL;
	d->graphs = NULL;
	d->name = wh_arena_strdup(A, s->name);
	if (!d->name || !copy_bytes(A, &d->s, &s->s) || !copy_bytes(A, &d->rest, &s->rest))
		return oom();
	switch (s->type) {
	case WH_ATTR_TENSOR:
		if (!(d->t = wh_arena_alloc(A, sizeof *d->t)) || !copy_const_tensor(A, d->t, s->t))
			return oom();
		break;
	case WH_ATTR_GRAPH:
		d->g = copy_subgraph(dm, dst_graph, s->g, &st);
		break;
	case WH_ATTR_FLOATS:
		if (s->n && !(d->floats = wh_arena_memdup(A, s->floats, s->n * sizeof(float))))
			return oom();
		break;
	case WH_ATTR_INTS:
		if (s->n && !(d->ints = wh_arena_memdup(A, s->ints, s->n * sizeof(int64_t))))
			return oom();
		break;
	case WH_ATTR_STRINGS:
	case WH_ATTR_TENSORS:
	case WH_ATTR_GRAPHS:
		return copy_attr_list(dm, dst_graph, d, s);
	default:
		break;
	}
	return st;
}

static enum wh_status copy_node_into(struct wh_model *dm, struct wh_graph *dst, const struct wh_graph *src,
				     uint32_t node, uint32_t *id_out)
{
	const struct wh_node *sn = &src->nodes[node];
	uint32_t ins[64], outs[64];
	uint32_t *pi = ins, *po = outs;
	enum wh_status st = WH_OK;
	if (sn->n_inputs > 64)
		pi = malloc(sn->n_inputs * sizeof *pi);
	if (sn->n_outputs > 64)
		po = malloc(sn->n_outputs * sizeof *po);
	if (!pi || !po) {
		st = oom();
		goto out;
	}
	for (uint32_t i = 0; i < sn->n_inputs && st == WH_OK; i++) {
		pi[i] = WH_NONE;
		if (sn->inputs[i] != WH_NONE) {
			st = wh_graph_copy_value(dm, dst, src, sn->inputs[i], &pi[i]);
			if (st == WH_OK && (src->values[sn->inputs[i]].flags & WH_VALUE_OUTER))
				dst->values[pi[i]].flags |= WH_VALUE_OUTER;
		}
	}
	for (uint32_t i = 0; i < sn->n_outputs && st == WH_OK; i++) {
		po[i] = WH_NONE;
		if (sn->outputs[i] != WH_NONE)
			st = wh_graph_copy_value(dm, dst, src, sn->outputs[i], &po[i]);
	}
	if (st != WH_OK)
		goto out;
	uint32_t id;
	if ((st = wh_graph_add_node(dst, sn->op_type, sn->domain, sn->name, sn->n_inputs, pi, sn->n_outputs, po, &id)) != WH_OK)
		goto out;
	struct wh_attr *attrs = wh_arena_calloc(dm->arena, sn->n_attrs + 1, sizeof *attrs);
	if (!attrs) {
		st = oom();
		goto out;
	}
	dst->nodes[id].attrs = attrs;
	for (uint32_t a = 0; a < sn->n_attrs; a++) {
		st = copy_attr(dm, dst, &attrs[a], &sn->attrs[a]);
		/* count it even on failure so destroy releases what was retained */
		dst->nodes[id].n_attrs = a + 1;
		if (st != WH_OK)
			goto out;
	}
	if (!copy_bytes(dm->arena, &dst->nodes[id].rest, &sn->rest)) {
		st = oom();
		goto out;
	}
	*id_out = id;
out:
	if (pi != ins)
		free(pi);
	if (po != outs)
		free(po);
	return st;
}

static struct wh_graph *copy_subgraph(struct wh_model *dm, const struct wh_graph *parent, const struct wh_graph *sg,
				      enum wh_status *st)
{
	struct wh_graph *g;
	if ((*st = wh_graph_create_in(dm, parent, &g)) != WH_OK)
		return NULL;
	g->name = wh_arena_strdup(dm->arena, sg->name ? sg->name : "");
	if (!copy_bytes(dm->arena, &g->rest, &sg->rest)) {
		*st = oom();
		return g;
	}
	uint32_t id;
	for (uint32_t i = 0; i < sg->n_inputs && *st == WH_OK; i++)
		if ((*st = wh_graph_copy_value(dm, g, sg, sg->inputs[i], &id)) == WH_OK)
			*st = wh_graph_add_input(g, id);
	for (uint32_t i = 0; i < sg->n_inits && *st == WH_OK; i++)
		*st = wh_graph_copy_value(dm, g, sg, sg->inits[i], &id);
	for (uint32_t n = 0; n < sg->n_nodes && *st == WH_OK; n++)
		*st = copy_node_into(dm, g, sg, n, &id);
	for (uint32_t v = 0; v < sg->n_values && *st == WH_OK; v++)
		if (sg->values[v].flags & WH_VALUE_HAS_INFO)
			*st = wh_graph_copy_value(dm, g, sg, v, &id);
	for (uint32_t i = 0; i < sg->n_outputs && *st == WH_OK; i++) {
		if ((*st = wh_graph_copy_value(dm, g, sg, sg->outputs[i], &id)) != WH_OK)
			break;
		if (sg->values[sg->outputs[i]].flags & WH_VALUE_OUTER)
			g->values[id].flags |= WH_VALUE_OUTER;
		*st = wh_graph_add_output(g, id);
	}
	return g;
}

enum wh_status wh_graph_copy_node(struct wh_model *dst_model, struct wh_graph *dst,
				  const struct wh_graph *src, uint32_t node, uint32_t *id_out)
{
	return copy_node_into(dst_model, dst, src, node, id_out);
}

enum wh_status wh_graph_copy_node_attrs(struct wh_model *dst_model, struct wh_graph *dst, uint32_t dst_node,
					const struct wh_node *sn)
{
	struct wh_attr *attrs = wh_arena_calloc(dst_model->arena, sn->n_attrs + 1, sizeof *attrs);
	if (!attrs)
		return oom();
	dst->nodes[dst_node].attrs = attrs;
	for (uint32_t a = 0; a < sn->n_attrs; a++) {
		enum wh_status st = copy_attr(dst_model, dst, &attrs[a], &sn->attrs[a]);
		/* count it even on failure so destroy releases what was retained */
		dst->nodes[dst_node].n_attrs = a + 1;
		if (st != WH_OK)
			return st;
	}
	return copy_bytes(dst_model->arena, &dst->nodes[dst_node].rest, &sn->rest) ? WH_OK : oom();
}

/* Makes value id of the new graph a graph input; it must be typed. */
static enum wh_status add_new_input(struct wh_graph *g, uint32_t id)
{
	struct wh_value *v = &g->values[id];
	if (!v->dtype && !v->type_rest.len)
		return wh_error(WH_ERR_INVALID, "tensor '%s': its element type is unknown, so it cannot become an input (give --input-shapes so that shapes can be inferred)", v->name);
	v->flags |= WH_VALUE_HAS_INFO;
	return wh_graph_add_input(g, id);
}

/* The tensors the caller names become inputs (or outputs) of the new graph; one that is
 * already one is skipped, and so is an initializer named as an input (it stays a constant). */
static enum wh_status add_named(struct wh_model *dm, const struct wh_graph *g, const char *const *names,
				uint32_t count, bool outputs)
{
	struct wh_graph *dg = dm->graph;
	enum wh_status st = WH_OK;
	for (uint32_t i = 0; i < count && st == WH_OK; i++) {
		uint32_t id = WH_NONE;
		if ((st = wh_graph_copy_value(dm, dg, g, wh_graph_find_value(g, names[i]), &id)) != WH_OK)
			break;
		struct wh_value *dv = &dg->values[id];
		if (dv->flags & (outputs ? WH_VALUE_OUTPUT : WH_VALUE_INPUT | WH_VALUE_INITIALIZER))
			continue;
		if (outputs) {
			dv->flags |= WH_VALUE_HAS_INFO;
			st = wh_graph_add_output(dg, id);
		} else {
			st = add_new_input(dg, id);
		}
	}
	return st;
}

/* The tensors at the selection's edge, node by node in topological order of the selected
 * nodes. Without uses_out, the new inputs: what the selected nodes read that none of them
 * writes (initializers stay constants). With uses_out (how often unselected nodes read each
 * tensor), the new outputs: what they write that is read outside or is a graph output. */
static enum wh_status add_boundary(struct wh_model *dm, const struct wh_graph *g, const bool *sel,
				   const uint32_t *order, const uint32_t *uses_out)
{
	struct wh_graph *dg = dm->graph;
	enum wh_status st = WH_OK;
	for (uint32_t s = 0; s < g->n_nodes && st == WH_OK; s++) {
		const struct wh_node *n = &g->nodes[order[s]];
		if (!sel[order[s]])
			continue;
		uint32_t count = uses_out ? n->n_outputs : n->n_inputs;
		for (uint32_t k = 0; k < count && st == WH_OK; k++) {
			uint32_t v = uses_out ? n->outputs[k] : n->inputs[k], id;
			if (v == WH_NONE)
				continue;
			const struct wh_value *sv = &g->values[v];
			if (uses_out) {
				if (!uses_out[v] && !(sv->flags & WH_VALUE_OUTPUT))
					continue;
				id = wh_graph_find_value(dg, sv->name);
				dg->values[id].flags |= WH_VALUE_HAS_INFO;
				st = wh_graph_add_output(dg, id);
			} else if (!(sv->flags & WH_VALUE_INITIALIZER) && !(sv->producer != WH_NONE && sel[sv->producer]) &&
				   wh_graph_find_value(dg, sv->name) == WH_NONE) {
				if ((st = wh_graph_copy_value(dm, dg, g, v, &id)) == WH_OK)
					st = add_new_input(dg, id);
			}
		}
	}
	return st;
}

static enum wh_status build_from_selection(const struct wh_model *m, const bool *sel,
					   const char *const *input_names, uint32_t n_input_names,
					   const char *const *output_names, uint32_t n_output_names,
					   struct wh_model **out)
{
	const struct wh_graph *g = m->graph;
	struct wh_model *dm = NULL;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint32_t *uses_out = calloc((size_t)g->n_values + 1, sizeof *uses_out); /* uses by unselected */
	enum wh_status st = WH_OK;
	if (!order || !uses_out) {
		st = oom();
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	if ((st = wh_model_create_like(m, &dm)) != WH_OK)
		goto out;
	struct wh_graph *dg = dm->graph;
	uint32_t id;
	/* inputs */
	if (input_names) {
		st = add_named(dm, g, input_names, n_input_names, false);
	} else {
		/* tensors consumed by selected nodes, produced by none of them, in topological
		 * order of first use; original inputs first in their order */
		for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++) {
			uint32_t v = g->inputs[i];
			bool used = false;
			for (uint32_t n = 0; n < g->n_nodes && !used; n++)
				if (sel[n])
					for (uint32_t k = 0; k < g->nodes[n].n_inputs; k++)
						if (g->nodes[n].inputs[k] == v)
							used = true;
			if (!used || (g->values[v].flags & WH_VALUE_INITIALIZER))
				continue;
			if ((st = wh_graph_copy_value(dm, dg, g, v, &id)) == WH_OK)
				st = add_new_input(dg, id);
		}
		if (st == WH_OK)
			st = add_boundary(dm, g, sel, order, NULL);
	}
	/* nodes in topological order */
	for (uint32_t s = 0; s < g->n_nodes && st == WH_OK; s++)
		if (sel[order[s]])
			st = copy_node_into(dm, dg, g, order[s], &id);
	if (st != WH_OK)
		goto out;
	/* outputs */
	if (output_names) {
		st = add_named(dm, g, output_names, n_output_names, true);
	} else {
		for (uint32_t n = 0; n < g->n_nodes; n++) {
			if (sel[n])
				continue;
			for (uint32_t k = 0; k < g->nodes[n].n_inputs; k++)
				if (g->nodes[n].inputs[k] != WH_NONE)
					uses_out[g->nodes[n].inputs[k]]++;
		}
		st = add_boundary(dm, g, sel, order, uses_out);
	}
	/* value infos of inner tensors the source described */
	for (uint32_t v = 0; v < dg->n_values; v++) {
		struct wh_value *dv = &dg->values[v];
		uint32_t sv = wh_graph_find_value(g, dv->name);
		if (!(dv->flags & (WH_VALUE_INPUT | WH_VALUE_OUTPUT)) && sv != WH_NONE && !(g->values[sv].flags & WH_VALUE_HAS_INFO))
			dv->flags &= ~(uint32_t)WH_VALUE_HAS_INFO;
	}
out:
	free(order);
	free(uses_out);
	if (st != WH_OK) {
		wh_model_destroy(dm);
		return st;
	}
	*out = dm;
	return WH_OK;
}

enum wh_status wh_model_extract_nodes(const struct wh_model *m, const uint32_t *nodes, uint32_t n_nodes,
				      struct wh_model **out)
{
	const struct wh_graph *g = m->graph;
	bool *sel = calloc((size_t)g->n_nodes + 1, sizeof *sel);
	if (!sel)
		return oom();
	for (uint32_t i = 0; i < n_nodes; i++) {
		if (nodes[i] >= g->n_nodes) {
			free(sel);
			return wh_error(WH_ERR_USAGE, "extract: node id %u out of range (the model has %u nodes)", nodes[i], g->n_nodes);
		}
		sel[nodes[i]] = true;
	}
	enum wh_status st = build_from_selection(m, sel, NULL, 0, NULL, 0, out);
	free(sel);
	return st;
}

enum wh_status wh_model_extract(const struct wh_model *m, const char *const *inputs, uint32_t n_inputs,
				const char *const *outputs, uint32_t n_outputs, struct wh_model **out)
{
	const struct wh_graph *g = m->graph;
	enum wh_status st = WH_OK;
	bool *sel = calloc((size_t)g->n_nodes + 1, sizeof *sel);
	bool *is_input = calloc((size_t)g->n_values + 1, sizeof *is_input);
	bool *seen = calloc((size_t)g->n_values + 1, sizeof *seen);
	uint32_t *stack = calloc((size_t)g->n_values + 1, sizeof *stack);
	if (!sel || !is_input || !seen || !stack) {
		st = oom();
		goto out;
	}
	if (!n_outputs) {
		st = wh_error(WH_ERR_USAGE, "extract: no outputs given (name at least one tensor with --outputs)");
		goto out;
	}
	for (uint32_t i = 0; i < n_inputs; i++) {
		uint32_t v = wh_graph_find_value(g, inputs[i]);
		if (v == WH_NONE) {
			st = wh_error(WH_ERR_NOT_FOUND, "tensor '%s': not in the model (check the name with `whittle inspect --show layers`)", inputs[i]);
			goto out;
		}
		is_input[v] = true;
	}
	uint32_t sp = 0;
	for (uint32_t i = 0; i < n_outputs; i++) {
		uint32_t v = wh_graph_find_value(g, outputs[i]);
		if (v == WH_NONE) {
			st = wh_error(WH_ERR_NOT_FOUND, "tensor '%s': not in the model (check the name with `whittle inspect --show layers`)", outputs[i]);
			goto out;
		}
		if (!seen[v]) {
			seen[v] = true;
			stack[sp++] = v;
		}
	}
	while (sp) {
		uint32_t v = stack[--sp];
		const struct wh_value *val = &g->values[v];
		if (is_input[v] || (val->flags & WH_VALUE_INITIALIZER))
			continue;
		if (val->producer == WH_NONE) {
			if (val->flags & WH_VALUE_INPUT) {
				st = wh_error(WH_ERR_INVALID, "extract: the outputs depend on graph input '%s', which is not among --inputs (add it to --inputs)", val->name);
				goto out;
			}
			continue;
		}
		if (sel[val->producer])
			continue;
		sel[val->producer] = true;
		const struct wh_node *n = &g->nodes[val->producer];
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t in = n->inputs[k];
			if (in != WH_NONE && !seen[in]) {
				seen[in] = true;
				stack[sp++] = in;
			}
		}
		/* values a subgraph captures by name are inputs of the node too */
		for (uint32_t a = 0; a < n->n_attrs; a++) {
			const struct wh_attr *at = &n->attrs[a];
			size_t cnt = wh_attr_graph_count(at);
			for (size_t k = 0; k < cnt; k++) {
				const struct wh_graph *sg = wh_attr_graph(at, k);
				for (uint32_t sv = 0; sg && sv < sg->n_values; sv++) {
					if (!(sg->values[sv].flags & WH_VALUE_OUTER))
						continue;
					uint32_t ov = wh_graph_find_value(g, sg->values[sv].name);
					if (ov != WH_NONE && !seen[ov]) {
						seen[ov] = true;
						stack[sp++] = ov;
					}
				}
			}
		}
	}
	st = build_from_selection(m, sel, inputs, n_inputs, outputs, n_outputs, out);
out:
	free(sel);
	free(is_input);
	free(seen);
	free(stack);
	return st;
}
