/* Conversion to a strongly typed mixed-precision model: see convert.h. */
#include "graph/convert.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/names.h"
#include "graph/numfmt.h"
#include "graph/topo.h"

struct op_row {
	const char *op;
	int since;
	unsigned char fp16, bf16;
	uint32_t in_mask;
	unsigned char variadic;
	uint32_t out_mask;
	uint32_t ex16, exbf; /* inputs of another type variable that admits fp16 / bf16 */
};

static const struct op_row rows[] = {
#include "graph/convert-types.inc"
};

static enum wh_status oom(void)
{
	return wh_error(WH_ERR_NOMEM, "convert: out of memory (free some memory)");
}

static bool default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

/* The newest schema row of op at or below opset, or NULL. */
static const struct op_row *find_row(const char *op, int64_t opset)
{
	const struct op_row *best = NULL;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (!strcmp(rows[i].op, op) && rows[i].since <= opset && (!best || rows[i].since > best->since))
			best = &rows[i];
	return best;
}

bool wh_convert_op_supports(const char *op_type, int64_t opset, enum wh_dtype dt)
{
	const struct op_row *r = find_row(op_type, opset);
	if (!r)
		return false;
	return dt == WH_DT_FLOAT16 ? r->fp16 : dt == WH_DT_BFLOAT16 ? r->bf16 : false;
}

/* A float32 tensor (not a sequence, map or optional: a Cast cannot convert those) */
static bool float_tensor(const struct wh_value *v)
{
	return v->dtype == WH_DT_FLOAT && !v->type_rest.len;
}

static bool in_slot(const struct op_row *r, uint32_t k)
{
	if (k < 32 && (r->in_mask >> k & 1u))
		return true;
	if (!r->variadic || !r->in_mask)
		return false;
	uint32_t hi = 31;
	while (!(r->in_mask >> hi & 1u))
		hi--;
	return k > hi;
}

/* Whether input k of a converted node takes the target type: bound to the converted
 * variable, or to another variable that admits the target (Pow's exponent,
 * BatchNormalization's statistics, GridSample's grid) when it holds a float32 tensor. */
static bool in_converts(const struct wh_graph *g, const struct wh_node *n, const struct op_row *r, uint32_t k,
			enum wh_dtype target)
{
	if (in_slot(r, k))
		return true;
	uint32_t ex = target == WH_DT_FLOAT16 ? r->ex16 : r->exbf;
	return k < 32 && (ex >> k & 1u) && n->inputs[k] != WH_NONE && float_tensor(&g->values[n->inputs[k]]);
}

static bool out_slot(const struct op_row *r, uint32_t k)
{
	return (r->out_mask >> (k < 32 ? k : 31)) & 1u;
}

static const char *suffix_of(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT16 ? "fp16" : dt == WH_DT_BFLOAT16 ? "bf16" : dt == WH_DT_FLOAT ? "fp32" : "cast";
}

/* Whether node n can take the target type: a row that admits it, and every slot bound to
 * the converted variable (at least one) float32. */
static const struct op_row *convertible(const struct wh_graph *g, const struct wh_node *n, int64_t opset,
					enum wh_dtype target)
{
	if (!default_domain(n->domain))
		return NULL;
	/* a node holding a subgraph (If, Loop, Scan, SequenceMap) keeps its types, bodies too */
	if (wh_node_holds_graphs(n))
		return NULL;
	const struct op_row *r = find_row(n->op_type, opset);
	/* a Cast from float to another type: its input variable (T1) takes the target type */
	static const struct op_row cast_in = {"Cast", 1, 1, 1, 0x1u, 0, 0x0u, 0x0u, 0x0u};
	if (r && !strcmp(n->op_type, "Cast") && n->n_inputs == 1 && n->n_outputs == 1 && n->inputs[0] != WH_NONE &&
	    n->outputs[0] != WH_NONE && g->values[n->inputs[0]].dtype == WH_DT_FLOAT &&
	    g->values[n->outputs[0]].dtype != WH_DT_FLOAT && g->values[n->outputs[0]].dtype != WH_DT_UNDEFINED)
		r = (target == WH_DT_FLOAT16 ? r->fp16 : r->bf16) ? &cast_in : NULL;
	if (!r || !(target == WH_DT_FLOAT16 ? r->fp16 : r->bf16))
		return NULL;
	uint32_t slots = 0;
	for (uint32_t k = 0; k < n->n_inputs; k++) {
		if (n->inputs[k] == WH_NONE || !in_slot(r, k))
			continue;
		if (!float_tensor(&g->values[n->inputs[k]]))
			return NULL;
		slots++;
	}
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		if (n->outputs[k] == WH_NONE || !out_slot(r, k))
			continue;
		if (!float_tensor(&g->values[n->outputs[k]]))
			return NULL;
		slots++;
	}
	return slots ? r : NULL;
}

static bool reads_or_writes_float(const struct wh_graph *g, const struct wh_node *n)
{
	for (uint32_t k = 0; k < n->n_inputs; k++)
		if (n->inputs[k] != WH_NONE && g->values[n->inputs[k]].dtype == WH_DT_FLOAT)
			return true;
	for (uint32_t k = 0; k < n->n_outputs; k++)
		if (n->outputs[k] != WH_NONE && g->values[n->outputs[k]].dtype == WH_DT_FLOAT)
			return true;
	return false;
}

static void mark_captured(const struct wh_graph *main, const struct wh_graph *sg, bool *captured);

static void mark_node_subgraphs(const struct wh_graph *main, const struct wh_node *n, bool *captured)
{
	for (uint32_t a = 0; a < n->n_attrs; a++) {
		const struct wh_attr *at = &n->attrs[a];
		if (at->type == WH_ATTR_GRAPH && at->g)
			mark_captured(main, at->g, captured);
		for (size_t i = 0; at->type == WH_ATTR_GRAPHS && i < at->n; i++)
			if (at->graphs[i])
				mark_captured(main, at->graphs[i], captured);
	}
}

static void mark_captured(const struct wh_graph *main, const struct wh_graph *sg, bool *captured)
{
	for (uint32_t v = 0; v < sg->n_values; v++) {
		if (!(sg->values[v].flags & WH_VALUE_OUTER))
			continue;
		uint32_t id = wh_graph_find_value(main, sg->values[v].name);
		if (id != WH_NONE)
			captured[id] = true;
	}
	for (uint32_t i = 0; i < sg->n_nodes; i++)
		mark_node_subgraphs(main, &sg->nodes[i], captured);
}

/* The float32 tensor of a Constant node (its `value`), or NULL. */
static const struct wh_attr *float_constant(const struct wh_node *n)
{
	if (strcmp(n->op_type, "Constant") || !default_domain(n->domain) || n->n_outputs != 1 || n->outputs[0] == WH_NONE)
		return NULL;
	for (uint32_t a = 0; a < n->n_attrs; a++)
		if (!strcmp(n->attrs[a].name, "value") && n->attrs[a].type == WH_ATTR_TENSOR && n->attrs[a].t &&
		    n->attrs[a].t->dtype == WH_DT_FLOAT)
			return &n->attrs[a];
	return NULL;
}

struct conv {
	const struct wh_model *m;
	const struct wh_graph *g;
	struct wh_model *dm;
	struct wh_graph *dst;
	enum wh_dtype target;
	struct wh_convert_stats *stats;
	uint32_t *home_id; /* dst id holding the value in its home type */
	uint32_t *cast_id; /* dst id holding it in the other float type, or WH_NONE */
	uint32_t *init_id; /* initializers: dst id of the converted copy, or WH_NONE */
	bool *const_conv;  /* per source node: a Constant converted in place */
};

/* A value name not used in the source or the destination: base + "." + suffix [+ ".k"]. */
static char *unique_name(struct conv *c, const char *base, const char *suffix)
{
	size_t len = strlen(base) + strlen(suffix) + 24;
	char *buf = malloc(len);
	if (!buf)
		return NULL;
	snprintf(buf, len, "%s.%s", base, suffix);
	for (unsigned k = 1; wh_graph_find_value(c->g, buf) != WH_NONE || wh_graph_find_value(c->dst, buf) != WH_NONE; k++)
		snprintf(buf, len, "%s.%s.%u", base, suffix, k);
	char *out = wh_arena_strdup(c->dm->arena, buf);
	free(buf);
	return out;
}

static void set_dtype(struct wh_value *v, enum wh_dtype dt)
{
	v->dtype = dt;
	v->type_orig.data = NULL;
	v->type_orig.len = 0;
}

/* A new value named name with src value sv's shape and type dt. */
static enum wh_status add_like(struct conv *c, const char *name, const struct wh_value *sv, enum wh_dtype dt,
			       uint32_t *id_out)
{
	enum wh_status st = wh_graph_add_value(c->dst, name, id_out);
	if (st != WH_OK)
		return st;
	struct wh_value *dv = &c->dst->values[*id_out];
	dv->dtype = dt;
	dv->rank = sv->rank;
	if (sv->rank > 0) {
		dv->dims = wh_arena_calloc(c->dm->arena, (size_t)sv->rank, sizeof *dv->dims);
		if (!dv->dims)
			return oom();
		for (int32_t d = 0; d < sv->rank; d++) {
			dv->dims[d].value = sv->dims[d].value;
			dv->dims[d].param = sv->dims[d].param ? wh_arena_strdup(c->dm->arena, sv->dims[d].param) : NULL;
		}
	}
	return WH_OK;
}

/* A Cast node from dst value in to dst value out (type dt). */
static enum wh_status add_cast(struct conv *c, uint32_t in, uint32_t out, enum wh_dtype dt)
{
	const char *vname = c->dst->values[out].name;
	size_t len = strlen(vname) + 16;
	char *nm = malloc(len);
	if (!nm)
		return oom();
	snprintf(nm, len, "%s/Cast", vname);
	uint32_t id;
	enum wh_status st = wh_graph_add_node(c->dst, "Cast", "", nm, 1, &in, 1, &out, &id);
	free(nm);
	if (st != WH_OK)
		return st;
	struct wh_attr *a = wh_arena_calloc(c->dm->arena, 1, sizeof *a);
	if (!a)
		return oom();
	a->name = "to";
	a->type = WH_ATTR_INT;
	a->i = dt;
	c->dst->nodes[id].attrs = a;
	c->dst->nodes[id].n_attrs = 1;
	c->stats->casts++;
	return WH_OK;
}

/* Converts float32 data into the target format: clamps finite values beyond it, counts them
 * and the nonzero values that became zero. */
static enum wh_status convert_data(struct conv *c, const struct wh_blob *src, uint64_t count, struct wh_blob **out)
{
	void *w;
	enum wh_status st = wh_blob_create(count ? count * 2 : 1, out, &w);
	if (st != WH_OK)
		return st;
	uint16_t *h = w;
	const float *f = src ? src->data : NULL;
	float maxf = c->target == WH_DT_FLOAT16 ? 65504.0f : wh_bf16_to_f32(0x7f7f);
	for (uint64_t i = 0; i < count; i++) {
		float x;
		memcpy(&x, &f[i], sizeof x);
		if (isfinite(x) && fabsf(x) > maxf) {
			x = x < 0 ? -maxf : maxf;
			c->stats->clamped++;
		}
		h[i] = c->target == WH_DT_FLOAT16 ? wh_f32_to_f16(x) : wh_f32_to_bf16(x);
		if (x != 0 && (h[i] & 0x7fff) == 0)
			c->stats->flushed++;
	}
	return WH_OK;
}

/* The converted copy of initializer v under name. */
static enum wh_status add_converted_init(struct conv *c, uint32_t v, const char *name, uint32_t *id_out)
{
	const struct wh_value *sv = &c->g->values[v];
	uint64_t count = 1;
	int64_t dims[WH_MAX_RANK];
	for (int32_t d = 0; d < sv->rank; d++) {
		dims[d] = sv->dims[d].value;
		count *= (uint64_t)dims[d];
	}
	if ((sv->data ? sv->data->size : 0) != count * 4)
		return wh_error(WH_ERR_INVALID, "convert: initializer %s holds %zu bytes, not %llu float32 values (check the model)",
				wh_name_term(sv->name), sv->data ? sv->data->size : 0, (unsigned long long)count);
	struct wh_blob *b = NULL;
	enum wh_status st = convert_data(c, sv->data, count, &b);
	if (st == WH_OK)
		st = wh_graph_add_value(c->dst, name, id_out);
	if (st == WH_OK)
		st = wh_graph_set_initializer(c->dst, *id_out, c->target, sv->rank, dims, b);
	wh_blob_release(b);
	if (st == WH_OK)
		c->stats->inits++;
	return st;
}

/* The dst id of source value v in type req, inserting a Cast the first time. */
static enum wh_status resolve(struct conv *c, uint32_t v, enum wh_dtype req, enum wh_dtype home, uint32_t *id_out)
{
	if (c->init_id[v] != WH_NONE && req == c->target) {
		*id_out = c->init_id[v];
		return WH_OK;
	}
	if (req == home) {
		*id_out = c->home_id[v];
		return WH_OK;
	}
	if (c->cast_id[v] == WH_NONE) {
		char *nm = unique_name(c, c->g->values[v].name, suffix_of(req));
		uint32_t id;
		enum wh_status st;
		if (!nm)
			return oom();
		if ((st = add_like(c, nm, &c->g->values[v], req, &id)) != WH_OK ||
		    (st = add_cast(c, c->home_id[v], id, req)) != WH_OK)
			return st;
		c->cast_id[v] = id;
	}
	*id_out = c->cast_id[v];
	return WH_OK;
}

void wh_convert_stats_release(struct wh_convert_stats *s)
{
	if (!s)
		return;
	free(s->unsupported);
	s->unsupported = NULL;
	s->n_unsupported = 0;
}

enum wh_status wh_model_convert(const struct wh_model *m, const struct wh_convert_options *o, struct wh_model **out,
				struct wh_convert_stats *stats_out)
{
	const struct wh_graph *g = m->graph;
	enum wh_dtype T = o->target;
	int64_t opset = wh_model_opset(m, "");
	struct wh_convert_stats stats = {0};
	struct conv c = {.m = m, .g = g, .target = T, .stats = &stats};
	size_t nv = (size_t)g->n_values + 1, nn = (size_t)g->n_nodes + 1;
	uint32_t *order = malloc(nn * sizeof *order);
	const struct op_row **row = calloc(nn, sizeof *row);
	enum wh_dtype *home = calloc(nv, sizeof *home), *pin = calloc(nv, sizeof *pin);
	uint32_t *need_t = calloc(nv, sizeof *need_t), *need_f = calloc(nv, sizeof *need_f);
	bool *captured = calloc(nv, sizeof *captured);
	uint32_t *ins = NULL;
	size_t ins_cap = 0;
	enum wh_status st = WH_OK;
	c.home_id = malloc(nv * sizeof *c.home_id);
	c.cast_id = malloc(nv * sizeof *c.cast_id);
	c.init_id = malloc(nv * sizeof *c.init_id);
	*out = NULL;
	if (!order || !row || !home || !pin || !need_t || !need_f || !captured || !c.home_id || !c.cast_id || !c.init_id) {
		st = oom();
		goto out;
	}
	if (T != WH_DT_FLOAT16 && T != WH_DT_BFLOAT16) {
		st = wh_error(WH_ERR_INVALID, "convert: target type %s is not float16 or bfloat16 (pass fp16 or bf16)", wh_dtype_name(T));
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	stats.unsupported = malloc(nn * sizeof *stats.unsupported);
	if (!stats.unsupported) {
		st = oom();
		goto out;
	}

	/* which nodes convert; each value's home type */
	for (uint32_t v = 0; v < g->n_values; v++) {
		home[v] = g->values[v].dtype;
		pin[v] = WH_DT_UNDEFINED;
		c.home_id[v] = c.cast_id[v] = c.init_id[v] = WH_NONE;
	}
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		uint32_t v = g->inputs[i];
		if (o->convert_io && g->values[v].dtype == WH_DT_FLOAT && !(g->values[v].flags & WH_VALUE_INITIALIZER))
			home[v] = T;
	}
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		mark_node_subgraphs(g, n, captured);
		if (o->keep && o->keep[i])
			continue;
		row[i] = convertible(g, n, opset, T);
		if (!row[i]) {
			if (reads_or_writes_float(g, n))
				stats.unsupported[stats.n_unsupported++] = i;
			continue;
		}
		stats.converted++;
		for (uint32_t k = 0; k < n->n_outputs; k++)
			if (n->outputs[k] != WH_NONE && out_slot(row[i], k))
				home[n->outputs[k]] = T;
	}
	/* what each value must be read as */
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v == WH_NONE)
				continue;
			if (row[i] && in_converts(g, n, row[i], k, T))
				need_t[v]++;
			else
				need_f[v]++;
		}
	}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		uint32_t v = g->outputs[i];
		enum wh_dtype req = o->convert_io && g->values[v].dtype == WH_DT_FLOAT ? T : g->values[v].dtype;
		pin[v] = req;
		need_f[v]++;
	}
	for (uint32_t v = 0; v < g->n_values; v++)
		if (captured[v]) {
			pin[v] = g->values[v].dtype;
			need_f[v]++;
		}

	/* a float Constant whose readers all take T holds its value in T (as a weight) */
	bool *const_conv = c.const_conv = calloc(nn, sizeof *const_conv);
	if (!const_conv) {
		st = oom();
		goto out;
	}
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		uint32_t v = g->nodes[i].outputs ? g->nodes[i].outputs[0] : WH_NONE;
		if (float_constant(&g->nodes[i]) && need_t[v] && !need_f[v] && pin[v] == WH_DT_UNDEFINED) {
			const_conv[i] = true;
			home[v] = T;
		}
	}
	if ((st = wh_model_create_like(m, &c.dm)) != WH_OK)
		goto out;
	c.dst = c.dm->graph;
	uint32_t id;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		uint32_t v = g->inputs[i];
		const struct wh_value *sv = &g->values[v];
		if ((sv->flags & WH_VALUE_INITIALIZER) && sv->dtype == WH_DT_FLOAT && need_t[v] && !need_f[v]) {
			/* a weight also listed as an input (IR < 4 lists them all): converted as a
			 * weight, its declaration follows */
			if ((st = add_converted_init(&c, v, sv->name, &id)) != WH_OK || (st = wh_graph_add_input(c.dst, id)) != WH_OK)
				goto out;
			c.dst->values[id].flags |= WH_VALUE_HAS_INFO;
			c.home_id[v] = c.init_id[v] = id;
			home[v] = T;
			continue;
		}
		if ((st = wh_graph_copy_value(c.dm, c.dst, g, v, &id)) != WH_OK || (st = wh_graph_add_input(c.dst, id)) != WH_OK)
			goto out;
		if (home[v] != g->values[v].dtype)
			set_dtype(&c.dst->values[id], home[v]);
		c.home_id[v] = id;
	}
	for (uint32_t i = 0; i < g->n_inits; i++) {
		uint32_t v = g->inits[i];
		const struct wh_value *sv = &g->values[v];
		bool convert = sv->dtype == WH_DT_FLOAT && need_t[v];
		if (sv->flags & WH_VALUE_INPUT) {
			/* copied with the inputs; a converted copy for the readers that take T */
			if (convert && c.init_id[v] == WH_NONE) {
				char *nm = unique_name(&c, sv->name, suffix_of(T));
				if (!nm) {
					st = oom();
					goto out;
				}
				if ((st = add_converted_init(&c, v, nm, &c.init_id[v])) != WH_OK)
					goto out;
			}
			continue;
		}
		if (convert && !need_f[v]) {
			/* every reader takes the target type: converted under its own name */
			if ((st = add_converted_init(&c, v, sv->name, &id)) != WH_OK)
				goto out;
			c.home_id[v] = c.init_id[v] = id;
			home[v] = T;
			continue;
		}
		if ((st = wh_graph_copy_value(c.dm, c.dst, g, v, &id)) != WH_OK)
			goto out;
		c.home_id[v] = id;
		if (convert) {
			char *nm = unique_name(&c, sv->name, suffix_of(T));
			if (!nm) {
				st = oom();
				goto out;
			}
			if ((st = add_converted_init(&c, v, nm, &c.init_id[v])) != WH_OK)
				goto out;
		}
	}

	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t ni = order[s];
		const struct wh_node *n = &g->nodes[ni];
		if (n->n_inputs > ins_cap) {
			free(ins);
			ins_cap = n->n_inputs * 2;
			if (!(ins = malloc(ins_cap * sizeof *ins))) {
				st = oom();
				goto out;
			}
		}
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			ins[k] = WH_NONE;
			if (v == WH_NONE)
				continue;
			if (c.home_id[v] == WH_NONE) {
				/* a value with no producer here: an outer value or an unlisted one; by name */
				if ((st = wh_graph_copy_value(c.dm, c.dst, g, v, &c.home_id[v])) != WH_OK)
					goto out;
			}
			enum wh_dtype req = row[ni] && in_converts(g, n, row[ni], k, T) ? T : g->values[v].dtype;
			if ((st = resolve(&c, v, req, home[v], &ins[k])) != WH_OK)
				goto out;
		}
		uint32_t did;
		if ((st = wh_graph_copy_node(c.dm, c.dst, g, ni, &did)) != WH_OK)
			goto out;
		struct wh_node *dn = &c.dst->nodes[did];
		for (uint32_t k = 0; k < n->n_inputs; k++)
			dn->inputs[k] = ins[k];
		if (c.const_conv[ni]) {
			const struct wh_attr *sa = float_constant(n);
			struct wh_const_tensor *t = dn->attrs[sa - n->attrs].t;
			uint64_t count = 1;
			for (int32_t d = 0; d < t->rank; d++)
				count *= (uint64_t)t->dims[d];
			struct wh_blob *b = NULL;
			if ((t->data ? t->data->size : 0) != count * 4) {
				st = wh_error(WH_ERR_INVALID, "convert: Constant %s holds %zu bytes, not %llu float32 values (check the model)",
					      wh_name_term(n->name), t->data ? t->data->size : 0, (unsigned long long)count);
				goto out;
			}
			if ((st = convert_data(&c, t->data, count, &b)) != WH_OK)
				goto out;
			wh_blob_release(t->data);
			t->data = b;
			t->dtype = T;
			stats.inits++;
		}
		if (row[ni] && row[ni]->out_mask && !strcmp(n->op_type, "Cast"))
			for (uint32_t a = 0; a < dn->n_attrs; a++)
				if (!strcmp(dn->attrs[a].name, "to"))
					dn->attrs[a].i = T;
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			uint32_t v = n->outputs[k], ov = dn->outputs[k];
			if (v == WH_NONE)
				continue;
			if (home[v] != g->values[v].dtype)
				set_dtype(&c.dst->values[ov], home[v]);
			c.home_id[v] = ov;
			if (pin[v] == WH_DT_UNDEFINED || pin[v] == home[v])
				continue;
			/* the name must keep the pinned type: the producer writes a renamed value, a
			 * Cast writes the name */
			char *nm = unique_name(&c, g->values[v].name, suffix_of(home[v]));
			uint32_t nid;
			if (!nm) {
				st = oom();
				goto out;
			}
			if ((st = add_like(&c, nm, &g->values[v], home[v], &nid)) != WH_OK)
				goto out;
			c.dst->nodes[did].outputs[k] = nid;
			c.dst->values[nid].producer = did;
			c.dst->values[nid].producer_output = k;
			c.dst->values[ov].producer = WH_NONE;
			set_dtype(&c.dst->values[ov], pin[v]);
			if ((st = add_cast(&c, nid, ov, pin[v])) != WH_OK)
				goto out;
			c.home_id[v] = nid;
			c.cast_id[v] = ov;
		}
	}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		uint32_t v = g->outputs[i];
		if ((st = wh_graph_copy_value(c.dm, c.dst, g, v, &id)) != WH_OK)
			goto out;
		c.dst->values[id].flags |= g->values[v].flags & WH_VALUE_HAS_INFO;
		if ((st = wh_graph_add_output(c.dst, id)) != WH_OK)
			goto out;
	}
	*out = c.dm;
	c.dm = NULL;
	if (stats_out) {
		*stats_out = stats;
		stats.unsupported = NULL;
	}
out:
	wh_model_destroy(c.dm);
	free(stats.unsupported);
	free(order);
	free(row);
	free(home);
	free(pin);
	free(need_t);
	free(need_f);
	free(captured);
	free(ins);
	free(c.home_id);
	free(c.cast_id);
	free(c.init_id);
	free(c.const_conv);
	return st;
}
