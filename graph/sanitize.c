#include "graph/sanitize.h"

#include "graph/onnx-internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/fold-eval.h"
#include "graph/inline.h"
#include "graph/tensor.h"
#include "graph/topo.h"

#define WH_FOLD_DEFAULT_ELEMENTS ((uint64_t)1 << 20)

enum action { KEEP = 0, LIFT, FOLD };

/* The initializer a Constant node turns into: type, shape, raw data and, for strings, the
 * serialized string_data field. */
struct lifted {
	enum wh_dtype dtype;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	struct wh_blob *data;     /* own reference */
	const uint8_t *rest;      /* TensorProto fields kept verbatim (string_data) */
	size_t rest_len;
	uint8_t *rest_owned;      /* malloc'd when encoded here */
};

static enum wh_status oom(void)
{
	return wh_error(WH_ERR_NOMEM, "sanitize: out of memory (free some memory)");
}

static bool default_domain(const struct wh_node *n)
{
	return !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
}

/* TensorProto.string_data for each string, as the serialized fields the IR keeps ("rest"). */
static enum wh_status encode_strings(const struct wh_bytes *strs, size_t n, struct lifted *l)
{
	Onnx__TensorProto tp;
	onnx__tensor_proto__init(&tp);
	ProtobufCBinaryData *sd = calloc(n ? n : 1, sizeof *sd);
	if (!sd)
		return oom();
	for (size_t i = 0; i < n; i++) {
		sd[i].data = (uint8_t *)strs[i].data;
		sd[i].len = strs[i].len;
	}
	tp.n_string_data = n;
	tp.string_data = sd;
	size_t k = onnx__tensor_proto__get_packed_size(&tp);
	uint8_t *buf = malloc(k ? k : 1);
	if (!buf) {
		free(sd);
		return oom();
	}
	onnx__tensor_proto__pack(&tp, buf);
	free(sd);
	l->rest_owned = buf;
	l->rest = buf;
	l->rest_len = k;
	return WH_OK;
}

/* Reads a Constant node's value; *ok false when it has none whittle can lift (sparse). */
static enum wh_status lift_constant(const struct wh_node *n, struct lifted *l, bool *ok)
{
	*ok = false;
	memset(l, 0, sizeof *l);
	for (uint32_t i = 0; i < n->n_attrs; i++) {
		const struct wh_attr *a = &n->attrs[i];
		enum wh_status st;
		void *w;
		if (!strcmp(a->name, "value") && a->type == WH_ATTR_TENSOR && a->t) {
			if (a->t->rank < 0 || a->t->rank > WH_MAX_RANK)
				return WH_OK;
			l->dtype = a->t->dtype;
			l->rank = a->t->rank;
			for (int32_t k = 0; k < a->t->rank; k++)
				l->dims[k] = a->t->dims[k];
			l->data = wh_blob_retain(a->t->data);
			l->rest = a->t->rest.data;
			l->rest_len = a->t->rest.len;
		} else if (!strcmp(a->name, "value_float") && a->type == WH_ATTR_FLOAT) {
			l->dtype = WH_DT_FLOAT;
			if ((st = wh_blob_create(sizeof(float), &l->data, &w)) != WH_OK)
				return st;
			memcpy(w, &a->f, sizeof(float));
		} else if (!strcmp(a->name, "value_int") && a->type == WH_ATTR_INT) {
			l->dtype = WH_DT_INT64;
			if ((st = wh_blob_create(sizeof(int64_t), &l->data, &w)) != WH_OK)
				return st;
			memcpy(w, &a->i, sizeof(int64_t));
		} else if ((!strcmp(a->name, "value_floats") && a->type == WH_ATTR_FLOATS) ||
			   (!strcmp(a->name, "value_ints") && a->type == WH_ATTR_INTS)) {
			bool fl = a->type == WH_ATTR_FLOATS;
			size_t es = fl ? sizeof(float) : sizeof(int64_t);
			l->dtype = fl ? WH_DT_FLOAT : WH_DT_INT64;
			l->rank = 1;
			l->dims[0] = (int64_t)a->n;
			if ((st = wh_blob_create(a->n * es, &l->data, &w)) != WH_OK)
				return st;
			if (a->n)
				memcpy(w, fl ? (const void *)a->floats : (const void *)a->ints, a->n * es);
		} else if (!strcmp(a->name, "value_string") && a->type == WH_ATTR_STRING) {
			l->dtype = WH_DT_STRING;
			if ((st = encode_strings(&a->s, 1, l)) != WH_OK)
				return st;
		} else if (!strcmp(a->name, "value_strings") && a->type == WH_ATTR_STRINGS) {
			l->dtype = WH_DT_STRING;
			l->rank = 1;
			l->dims[0] = (int64_t)a->n;
			if ((st = encode_strings(a->strings, a->n, l)) != WH_OK)
				return st;
		} else {
			continue;
		}
		*ok = true;
		return WH_OK;
	}
	return WH_OK;
}

static void lifted_release(struct lifted *l)
{
	wh_blob_release(l->data);
	free(l->rest_owned);
	memset(l, 0, sizeof *l);
}

/* Adds name as an initializer of dst. */
static enum wh_status add_init(struct wh_model *dm, const char *name, const struct lifted *l)
{
	struct wh_graph *dst = dm->graph;
	uint32_t id;
	enum wh_status st = wh_graph_add_value(dst, name, &id);
	if (st != WH_OK)
		return st;
	if ((st = wh_graph_set_initializer(dst, id, l->dtype, l->rank, l->dims, l->data)) != WH_OK)
		return st;
	if (l->rest_len) {
		void *p = wh_arena_memdup(dm->arena, l->rest, l->rest_len);
		if (!p)
			return oom();
		dst->values[id].tensor_rest.data = p;
		dst->values[id].tensor_rest.len = l->rest_len;
	}
	/* before IR version 4 every initializer must also be listed as a graph input */
	if (dm->ir_version < 4) {
		dst->values[id].flags |= WH_VALUE_HAS_INFO;
		return wh_graph_add_input(dst, id);
	}
	return WH_OK;
}

static enum wh_status add_folded(struct wh_model *dm, const char *name, const struct wh_tensor *t)
{
	struct lifted l = {0};
	l.dtype = t->dtype;
	l.rank = t->rank;
	memcpy(l.dims, t->dims, sizeof l.dims);
	enum wh_status st = wh_tensor_to_raw(t, &l.data);
	if (st == WH_OK)
		st = add_init(dm, name, &l);
	lifted_release(&l);
	return st;
}

static void mark_outer(const struct wh_graph *main, const struct wh_graph *sg, bool *live);

/* Marks the main-graph values that the subgraphs of node nd read by name. */
static void mark_subgraphs(const struct wh_graph *main, const struct wh_node *nd, bool *live)
{
	for (uint32_t a = 0; a < nd->n_attrs; a++) {
		const struct wh_attr *at = &nd->attrs[a];
		if (at->type == WH_ATTR_GRAPH)
			mark_outer(main, at->g, live);
		else if (at->type == WH_ATTR_GRAPHS)
			for (size_t i = 0; i < at->n; i++)
				mark_outer(main, at->graphs[i], live);
	}
}

/* Marks the main-graph values that a subgraph (and those nested in it) reads by name. */
static void mark_outer(const struct wh_graph *main, const struct wh_graph *sg, bool *live)
{
	if (!sg)
		return;
	for (uint32_t v = 0; v < sg->n_values; v++) {
		if (!(sg->values[v].flags & WH_VALUE_OUTER))
			continue;
		uint32_t id = wh_graph_find_value(main, sg->values[v].name);
		if (id != WH_NONE)
			live[id] = true;
	}
	for (uint32_t n = 0; n < sg->n_nodes; n++)
		mark_subgraphs(main, &sg->nodes[n], live);
}

static bool foldable(const struct wh_graph *g, const struct wh_node *n, const struct wh_vstate *st, uint64_t max)
{
	if (!default_domain(n) || wh_node_holds_graphs(n) || n->n_outputs == 0)
		return false;
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		uint32_t v = n->outputs[k];
		if (v == WH_NONE)
			continue;
		if (!st[v].known || st[v].value.count > max || (g->values[v].flags & WH_VALUE_INPUT))
			return false;
	}
	return true;
}

/* Graph outputs take the inferred static shape where the model left dimensions open. */
static enum wh_status refine_output(struct wh_graph *dst, uint32_t id, const struct wh_vstate *s)
{
	struct wh_value *v = &dst->values[id];
	if ((v->flags & WH_VALUE_INITIALIZER) || !s->dtype || s->rank < 0)
		return WH_OK;
	for (int32_t i = 0; i < s->rank; i++)
		if (s->dims[i] < 0)
			return WH_OK;
	if (v->dtype && v->dtype != s->dtype)
		return WH_OK;
	return wh_graph_set_shape(dst, id, s->dtype, s->rank, s->dims);
}

static enum wh_status sanitize_once(const struct wh_model *m, const struct wh_sanitize_options *opt,
				    struct wh_model **out, struct wh_sanitize_stats *stats_out)
{
	const struct wh_graph *g = m->graph;
	bool fold = opt && opt->fold_constants;
	uint64_t max = opt && opt->max_fold_elements ? opt->max_fold_elements : WH_FOLD_DEFAULT_ELEMENTS;
	struct wh_sanitize_stats stats = {0};
	struct wh_vstate *states = NULL;
	struct wh_model *dm = NULL;
	uint32_t *order = malloc(((size_t)g->n_nodes + 1) * sizeof *order);
	unsigned char *act = calloc((size_t)g->n_nodes + 1, 1);
	bool *live = calloc((size_t)g->n_values + 1, sizeof *live);
	bool *node_live = calloc((size_t)g->n_nodes + 1, sizeof *node_live);
	bool *fold_input = calloc((size_t)g->n_values + 1, sizeof *fold_input);
	enum wh_status st = WH_OK;
	*out = NULL;
	if (!order || !act || !live || !node_live || !fold_input) {
		st = oom();
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	if (fold && (st = wh_infer_run(m, max, false, opt->evaluate, &states)) != WH_OK)
		goto out;

	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[order[i]];
		if (!strcmp(n->op_type, "Constant") && default_domain(n) && n->n_outputs == 1 && n->outputs[0] != WH_NONE) {
			struct lifted l;
			bool ok;
			if ((st = lift_constant(n, &l, &ok)) != WH_OK)
				goto out;
			lifted_release(&l);
			if (ok)
				act[order[i]] = LIFT;
		} else if (fold && foldable(g, n, states, max)) {
			act[order[i]] = FOLD;
			stats.nodes_folded++;
		}
	}

	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		for (uint32_t k = 0; act[i] == FOLD && k < n->n_inputs; k++)
			if (n->inputs[k] != WH_NONE)
				fold_input[n->inputs[k]] = true;
	}

	/* liveness, walking back from the graph outputs; lifted and folded nodes need no inputs */
	for (uint32_t i = 0; i < g->n_outputs; i++)
		live[g->outputs[i]] = true;
	for (uint32_t i = g->n_nodes; i-- > 0;) {
		uint32_t id = order[i];
		const struct wh_node *n = &g->nodes[id];
		for (uint32_t k = 0; k < n->n_outputs; k++)
			if (n->outputs[k] != WH_NONE && live[n->outputs[k]])
				node_live[id] = true;
		if (!node_live[id] || act[id] != KEEP)
			continue;
		for (uint32_t k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] != WH_NONE)
				live[n->inputs[k]] = true;
		mark_subgraphs(g, n, live);
	}

	if ((st = wh_model_create_like(m, &dm)) != WH_OK)
		goto out;
	struct wh_graph *dst = dm->graph;
	uint32_t id;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		if ((st = wh_graph_copy_value(dm, dst, g, g->inputs[i], &id)) != WH_OK ||
		    (st = wh_graph_add_input(dst, id)) != WH_OK)
			goto out;
	}
	for (uint32_t i = 0; i < g->n_inits; i++)
		if (live[g->inits[i]] && (st = wh_graph_copy_value(dm, dst, g, g->inits[i], &id)) != WH_OK)
			goto out;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		uint32_t nid = order[i];
		const struct wh_node *n = &g->nodes[nid];
		if (!node_live[nid]) {
			/* a Constant only folded nodes read was folded away; otherwise it was dead */
			if (act[nid] == KEEP || (act[nid] == LIFT && !fold_input[n->outputs[0]]))
				stats.dead_removed++;
			else if (act[nid] == LIFT)
				stats.nodes_folded++;
			continue;
		}
		if (act[nid] == KEEP) {
			if ((st = wh_graph_copy_node(dm, dst, g, nid, &id)) != WH_OK)
				goto out;
			continue;
		}
		if (act[nid] == LIFT) {
			struct lifted l;
			bool ok;
			if ((st = lift_constant(n, &l, &ok)) != WH_OK)
				goto out;
			st = add_init(dm, g->values[n->outputs[0]].name, &l);
			lifted_release(&l);
			if (st != WH_OK)
				goto out;
			stats.constants_lifted++;
			continue;
		}
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			uint32_t v = n->outputs[k];
			if (v == WH_NONE || !live[v])
				continue;
			if ((st = add_folded(dm, g->values[v].name, &states[v].value)) != WH_OK)
				goto out;
		}
	}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		uint32_t v = g->outputs[i];
		if ((st = wh_graph_copy_value(dm, dst, g, v, &id)) != WH_OK)
			goto out;
		/* an output that became an initializer keeps the output's declared info */
		dst->values[id].flags |= g->values[v].flags & WH_VALUE_HAS_INFO;
		if (g->values[v].info_rest.len && !dst->values[id].info_rest.len) {
			void *p = wh_arena_memdup(dm->arena, g->values[v].info_rest.data, g->values[v].info_rest.len);
			if (!p) {
				st = oom();
				goto out;
			}
			dst->values[id].info_rest.data = p;
			dst->values[id].info_rest.len = g->values[v].info_rest.len;
		}
		if (states && (st = refine_output(dst, id, &states[v])) != WH_OK)
			goto out;
		if ((st = wh_graph_add_output(dst, id)) != WH_OK)
			goto out;
	}
	wh_info("sanitize: %u constants lifted, %u nodes folded, %u dead nodes removed; %u of %u nodes left",
		stats.constants_lifted, stats.nodes_folded, stats.dead_removed, dst->n_nodes, g->n_nodes);
	if (stats_out)
		stats.ifs_folded = stats_out->ifs_folded;
	*out = dm;
	dm = NULL;
	if (stats_out)
		*stats_out = stats;
out:
	wh_model_destroy(dm);
	if (states)
		wh_infer_states_free(states, g->n_values);
	free(order);
	free(act);
	free(live);
	free(node_live);
	free(fold_input);
	return st;
}

/* ---- If on a constant condition ---- */

/* per main-graph node: 1 then, 0 else, -1 keep */
struct if_picks {
	const struct wh_graph *main;
	const int8_t *pick;
};

static int pick_branch(void *state, const struct wh_graph *g, uint32_t node)
{
	const struct if_picks *p = state;
	return g == p->main ? p->pick[node] : -1;
}

/* One round: the Ifs of the main graph whose condition inference knows are replaced by
 * their branch (*out NULL when there is none). */
static enum wh_status fold_ifs_once(const struct wh_model *m, const struct wh_sanitize_options *opt, uint64_t max,
				    struct wh_model **out, uint32_t *n_folded)
{
	const struct wh_graph *g = m->graph;
	struct wh_vstate *states = NULL;
	int8_t *pick = malloc((size_t)g->n_nodes + 1);
	uint32_t n = 0;
	enum wh_status st;
	*out = NULL;
	if (!pick)
		return oom();
	if ((st = wh_infer_run(m, max, false, opt->evaluate, &states)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *nd = &g->nodes[i];
		pick[i] = -1;
		if (!wh_node_is_if(nd) || nd->n_inputs < 1 || nd->inputs[0] == WH_NONE)
			continue;
		const struct wh_vstate *c = &states[nd->inputs[0]];
		if (!c->known || c->seq || c->value.count != 1 || c->value.dtype == WH_DT_STRING)
			continue;
		pick[i] = wh_tensor_get_f64(&c->value, 0) != 0.0;
		n++;
	}
	if (n) {
		struct if_picks p = {g, pick};
		struct wh_inline_stats is = {0};
		if ((st = wh_model_inline_ifs(m, pick_branch, &p, out, &is)) == WH_OK)
			*n_folded = is.inlined;
	}
out:
	if (states)
		wh_infer_states_free(states, g->n_values);
	free(pick);
	return st;
}

enum wh_status wh_model_sanitize(const struct wh_model *m, const struct wh_sanitize_options *opt,
				 struct wh_model **out, struct wh_sanitize_stats *stats_out)
{
	struct wh_sanitize_stats stats = {0};
	struct wh_model *cur = NULL;
	enum wh_status st = WH_OK;
	uint64_t max = opt && opt->max_fold_elements ? opt->max_fold_elements : WH_FOLD_DEFAULT_ELEMENTS;
	/* an If whose condition folds is replaced by its branch, whose own Ifs may then fold:
	 * one round per level of nesting */
	for (int round = 0; opt && opt->fold_constants && round < 100; round++) {
		struct wh_model *next = NULL;
		uint32_t n = 0;
		if ((st = fold_ifs_once(cur ? cur : m, opt, max, &next, &n)) != WH_OK)
			goto out;
		if (!next)
			break;
		wh_model_destroy(cur);
		cur = next;
		stats.ifs_folded += n;
	}
	if ((st = sanitize_once(cur ? cur : m, opt, out, &stats)) == WH_OK && stats_out)
		*stats_out = stats;
out:
	wh_model_destroy(cur);
	return st;
}

/* ---- --bind-input ---- */

void wh_input_bindings_free(struct wh_input_binding *b, uint32_t n)
{
	for (uint32_t i = 0; b && i < n; i++)
		free(b[i].name);
	free(b);
}

enum wh_status wh_input_bindings_parse(const char *spec, struct wh_input_binding **out, uint32_t *n_out)
{
	uint32_t cap = 1;
	for (const char *p = spec; *p; p++)
		cap += *p == ',';
	struct wh_input_binding *b = calloc(cap, sizeof *b);
	char *copy = strdup(spec);
	uint32_t n = 0;
	enum wh_status st = WH_OK;
	if (!b || !copy) {
		st = oom();
		goto out;
	}
	for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strrchr(item, '=');
		if (!eq || eq == item || !eq[1]) {
			st = wh_error(WH_ERR_USAGE, "'%s' is not NAME=VALUE (e.g. sr=16000 or flag=true)", item);
			goto out;
		}
		*eq = '\0';
		const char *v = eq + 1;
		double d;
		if (!strcmp(v, "true") || !strcmp(v, "false")) {
			d = !strcmp(v, "true");
		} else {
			char *end;
			d = strtod(v, &end);
			if (*end || !isfinite(d)) {
				st = wh_error(WH_ERR_USAGE, "value '%s' of input '%s' is not a finite number, true or false", v, item);
				goto out;
			}
		}
		for (uint32_t k = 0; k < n; k++)
			if (!strcmp(b[k].name, item)) {
				st = wh_error(WH_ERR_USAGE, "input '%s' is bound twice (give it once)", item);
				goto out;
			}
		if (!(b[n].name = strdup(item))) {
			st = oom();
			goto out;
		}
		b[n++].value = d;
	}
	if (!n)
		st = wh_error(WH_ERR_USAGE, "no NAME=VALUE given (e.g. sr=16000)");
out:
	free(copy);
	if (st != WH_OK) {
		wh_input_bindings_free(b, n);
		return st;
	}
	*out = b;
	*n_out = n;
	return WH_OK;
}

enum wh_status wh_model_bind_input_values(struct wh_model *m, const struct wh_input_binding *b, uint32_t n)
{
	struct wh_graph *g = m->graph;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = wh_graph_find_value(g, b[i].name), k = 0;
		for (; id != WH_NONE && k < g->n_inputs && g->inputs[k] != id; k++)
			;
		if (id == WH_NONE || k == g->n_inputs)
			return wh_error(WH_ERR_NOT_FOUND, "--bind-input: '%s' is not an input of the model (list them with `whittle inspect`)", b[i].name);
		struct wh_value *v = &g->values[id];
		if (!v->dtype || v->dtype == WH_DT_STRING || v->type_rest.len)
			return wh_error(WH_ERR_UNSUPPORTED, "--bind-input: input '%s' is %s (bind a number or boolean input)", b[i].name,
					v->type_rest.len ? "not a tensor" : "of an unknown or string type");
		int64_t dims[WH_MAX_RANK];
		int32_t rank = v->rank < 0 ? 0 : v->rank;
		for (int32_t d = 0; d < rank; d++) {
			if (v->dims[d].value > 1)
				return wh_error(WH_ERR_SHAPE, "--bind-input: input '%s' holds more than one element (bind an input of one element: a scalar)",
						b[i].name);
			dims[d] = v->dims[d].value == 0 ? 0 : 1;
		}
		double d = b[i].value;
		if (!wh_dtype_is_float(v->dtype) && d != floor(d))
			return wh_error(WH_ERR_USAGE, "--bind-input: input '%s' holds %s and %g is not an integer (give a whole number)", b[i].name,
					wh_dtype_name(v->dtype), d);
		struct wh_tensor t;
		wh_tensor_init(&t);
		struct wh_blob *raw = NULL;
		enum wh_status st = wh_tensor_alloc(&t, v->dtype, rank, dims);
		if (st == WH_OK) {
			for (uint64_t e = 0; e < t.count; e++)
				wh_tensor_set_f64(&t, e, d);
			st = wh_tensor_to_raw(&t, &raw);
		}
		if (st == WH_OK)
			st = wh_graph_set_initializer(g, id, v->dtype, rank, dims, raw);
		wh_blob_release(raw);
		wh_tensor_release(&t);
		if (st != WH_OK)
			return st;
		/* a constant now, not an input (before IR version 4 an initializer is listed as an
		 * input too, which makes it a default a caller may override: keep it listed) */
		if (m->ir_version >= 4) {
			memmove(&g->inputs[k], &g->inputs[k + 1], (size_t)(g->n_inputs - k - 1) * sizeof *g->inputs);
			g->n_inputs--;
			g->values[id].flags &= ~(uint32_t)WH_VALUE_INPUT;
		}
	}
	return WH_OK;
}
