#include "executor/precision.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const prec_names[WH_PREC_COUNT_] = {
	[WH_PREC_FP32] = "fp32", [WH_PREC_TF32] = "tf32", [WH_PREC_FP16] = "fp16", [WH_PREC_BF16] = "bf16",
	[WH_PREC_FP8] = "fp8", [WH_PREC_FP8E5M2] = "fp8e5m2", [WH_PREC_INT8] = "int8",
};
_Static_assert(sizeof prec_names / sizeof prec_names[0] == WH_PREC_COUNT_, "precision names");

const char *wh_precision_name(enum wh_precision p)
{
	return (unsigned)p < WH_PREC_COUNT_ ? prec_names[p] : "?";
}

bool wh_precision_parse(const char *s, enum wh_precision *out)
{
	for (int i = 0; i < WH_PREC_COUNT_; i++)
		if (!strcmp(s, prec_names[i])) {
			*out = (enum wh_precision)i;
			return true;
		}
	static const struct {
		const char *alias;
		enum wh_precision p;
	} aliases[] = {{"float32", WH_PREC_FP32}, {"float", WH_PREC_FP32}, {"float16", WH_PREC_FP16}, {"half", WH_PREC_FP16},
		       {"bfloat16", WH_PREC_BF16}, {"fp8e4m3", WH_PREC_FP8}, {"fp8e4m3fn", WH_PREC_FP8}, {"e4m3fn", WH_PREC_FP8},
		       {"e5m2", WH_PREC_FP8E5M2}};
	for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
		if (!strcmp(s, aliases[i].alias)) {
			*out = aliases[i].p;
			return true;
		}
	return false;
}

void wh_precision_config_init(struct wh_precision_config *c)
{
	memset(c, 0, sizeof *c);
	c->dflt = WH_PREC_FP32;
}

void wh_precision_config_release(struct wh_precision_config *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n_layers; i++)
		free(c->layers[i].layer);
	free(c->layers);
	wh_precision_config_init(c);
}

enum wh_status wh_precision_config_set(struct wh_precision_config *c, const char *layer,
				       enum wh_precision exec, int output)
{
	for (uint32_t i = 0; i < c->n_layers; i++)
		if (!strcmp(c->layers[i].layer, layer)) {
			c->layers[i].exec = exec;
			c->layers[i].output = output;
			return WH_OK;
		}
	if (c->n_layers == c->cap_layers) {
		uint32_t cap = c->cap_layers ? c->cap_layers * 2 : 16;
		struct wh_layer_precision *nl = realloc(c->layers, cap * sizeof *nl);
		if (!nl)
			return wh_error(WH_ERR_NOMEM, "layer precisions: out of memory");
		c->layers = nl;
		c->cap_layers = cap;
	}
	char *name = strdup(layer);
	if (!name)
		return wh_error(WH_ERR_NOMEM, "layer precisions: out of memory");
	c->layers[c->n_layers++] = (struct wh_layer_precision){.layer = name, .exec = exec, .output = output};
	return WH_OK;
}

static enum wh_status parse_json(struct wh_precision_config *c, const char *path)
{
	json_error_t err;
	/* a layer named twice has no one precision: refused, not the last taken */
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return wh_error(WH_ERR_PARSE, "%s:%d: not a layer-precisions file: %s (see docs/formats.md)", path, err.line, err.text);
	enum wh_status st = WH_OK;
	json_t *layers = json_object_get(root, "layers");
	const char *dflt = json_string_value(json_object_get(root, "default"));
	if (dflt && !wh_precision_parse(dflt, &c->dflt))
		st = wh_error(WH_ERR_USAGE, "%s: default precision '%s' is unknown (use fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8)", path, dflt);
	if (st == WH_OK && (!layers || !json_is_object(layers)))
		st = wh_error(WH_ERR_PARSE, "%s: no \"layers\" object (see docs/formats.md)", path);
	const char *name;
	json_t *val;
	if (st == WH_OK)
		json_object_foreach(layers, name, val)
		{
			const char *p = json_is_string(val) ? json_string_value(val) : json_string_value(json_object_get(val, "precision"));
			const char *o = json_is_object(val) ? json_string_value(json_object_get(val, "output")) : NULL;
			enum wh_precision pe, po;
			if (!p || !wh_precision_parse(p, &pe)) {
				st = wh_error(WH_ERR_USAGE, "%s: layer '%s': precision '%s' is unknown (use fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8)", path, name, p ? p : "(missing)");
				break;
			}
			if (o && !wh_precision_parse(o, &po)) {
				st = wh_error(WH_ERR_USAGE, "%s: layer '%s': output precision '%s' is unknown", path, name, o);
				break;
			}
			if ((st = wh_precision_config_set(c, name, pe, o ? (int)po : -1)) != WH_OK)
				break;
		}
	json_decref(root);
	return st;
}

enum wh_status wh_precision_config_parse(struct wh_precision_config *c, const char *spec)
{
	struct stat sb;
	size_t len = strlen(spec);
	if ((len > 5 && !strcmp(spec + len - 5, ".json")) || (stat(spec, &sb) == 0 && S_ISREG(sb.st_mode))) {
		if (stat(spec, &sb) != 0)
			return wh_error(WH_ERR_IO, "%s: layer-precisions file not found (check the path)", spec);
		return parse_json(c, spec);
	}
	char *copy = strdup(spec);
	if (!copy)
		return wh_error(WH_ERR_NOMEM, "layer precisions: out of memory");
	enum wh_status st = WH_OK;
	char *save = NULL;
	uint32_t first = c->n_layers; /* the layers this spec sets start here */
	for (char *item = strtok_r(copy, ",", &save); item && st == WH_OK; item = strtok_r(NULL, ",", &save)) {
		char *colon = strrchr(item, ':');
		if (!colon || colon == item) {
			st = wh_error(WH_ERR_USAGE, "--layer-precisions: '%s' is not NAME:PRECISION (e.g. conv1:fp32)", item);
			break;
		}
		*colon = '\0';
		char *prec = colon + 1, *slash = strchr(prec, '/');
		if (slash)
			*slash = '\0';
		enum wh_precision pe, po = WH_PREC_FP32; /* po is read only with a slash */
		if (!wh_precision_parse(prec, &pe)) {
			st = wh_error(WH_ERR_USAGE, "--layer-precisions: layer '%s': precision '%s' is unknown (use fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8)", item, prec);
			break;
		}
		if (slash && !wh_precision_parse(slash + 1, &po)) {
			st = wh_error(WH_ERR_USAGE, "--layer-precisions: layer '%s': output precision '%s' is unknown", item, slash + 1);
			break;
		}
		for (uint32_t i = first; i < c->n_layers && st == WH_OK; i++)
			if (!strcmp(c->layers[i].layer, item))
				st = wh_error(WH_ERR_USAGE, "--layer-precisions: layer '%s' is given twice (give each layer once)", item);
		if (st == WH_OK)
			st = wh_precision_config_set(c, item, pe, slash ? (int)po : -1);
	}
	free(copy);
	return st;
}

enum wh_status wh_precision_config_write(const struct wh_precision_config *c, const char *path)
{
	json_t *root = json_object();
	json_object_set_new(root, "default", json_string(wh_precision_name(c->dflt)));
	json_t *layers = json_object();
	for (uint32_t i = 0; i < c->n_layers; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "precision", json_string(wh_precision_name(c->layers[i].exec)));
		if (c->layers[i].output >= 0)
			json_object_set_new(o, "output", json_string(wh_precision_name((enum wh_precision)c->layers[i].output)));
		json_object_set_new(layers, c->layers[i].layer, o);
	}
	json_object_set_new(root, "layers", layers);
	int r = json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (r != 0)
		return wh_error(WH_ERR_IO, "%s: cannot write the layer precisions (check the folder)", path);
	return WH_OK;
}

const char *wh_layer_kind_name(enum wh_layer_kind k)
{
	switch (k) {
	case WH_LAYER_FLOAT: return "float";
	case WH_LAYER_SHAPE: return "shape arithmetic";
	case WH_LAYER_OTHER: return "integer/bool/index";
	default: return "constant";
	}
}

static bool is_float_value(const struct wh_value *v)
{
	return v->dtype == WH_DT_FLOAT || v->dtype == WH_DT_FLOAT16 || v->dtype == WH_DT_BFLOAT16 || v->dtype == WH_DT_DOUBLE;
}

enum wh_status wh_model_layer_kinds(const struct wh_model *m, uint8_t *kinds_out)
{
	return wh_graph_layer_kinds(m->graph, kinds_out);
}

enum wh_status wh_graph_layer_kinds(const struct wh_graph *g, uint8_t *kinds_out)
{
	uint8_t *shape_derived = calloc((size_t)g->n_values + 1, 1);
	if (!shape_derived)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	/* nodes are visited until nothing changes: no topological order needed */
	bool changed = true;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		kinds_out[i] = WH_LAYER_FLOAT;
	while (changed) {
		changed = false;
		for (uint32_t i = 0; i < g->n_nodes; i++) {
			const struct wh_node *n = &g->nodes[i];
			bool shape_op = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
			bool any_sd = false, all_sd = true, any_dyn = false;
			for (uint32_t k = 0; k < n->n_inputs; k++) {
				uint32_t v = n->inputs[k];
				if (v == WH_NONE)
					continue;
				const struct wh_value *val = &g->values[v];
				bool constant = (val->flags & WH_VALUE_INITIALIZER) ||
						(val->producer != WH_NONE && !strcmp(g->nodes[val->producer].op_type, "Constant"));
				if (constant)
					continue;
				any_dyn = true;
				if (shape_derived[v])
					any_sd = true;
				else
					all_sd = false;
			}
			bool sd = shape_op || (any_dyn && any_sd && all_sd);
			if (sd) {
				for (uint32_t k = 0; k < n->n_outputs; k++)
					if (n->outputs[k] != WH_NONE && !shape_derived[n->outputs[k]]) {
						shape_derived[n->outputs[k]] = 1;
						changed = true;
					}
			}
		}
	}
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		if (!strcmp(n->op_type, "Constant")) {
			kinds_out[i] = WH_LAYER_CONST;
			continue;
		}
		bool sd = n->n_outputs && n->outputs[0] != WH_NONE && shape_derived[n->outputs[0]];
		if (sd) {
			kinds_out[i] = WH_LAYER_SHAPE;
			continue;
		}
		bool any_float = false;
		for (uint32_t k = 0; k < n->n_inputs && !any_float; k++)
			if (n->inputs[k] != WH_NONE && is_float_value(&g->values[n->inputs[k]]))
				any_float = true;
		for (uint32_t k = 0; k < n->n_outputs && !any_float; k++)
			if (n->outputs[k] != WH_NONE && is_float_value(&g->values[n->outputs[k]]))
				any_float = true;
		kinds_out[i] = any_float ? WH_LAYER_FLOAT : WH_LAYER_OTHER;
	}
	free(shape_derived);
	return WH_OK;
}

/* Whether g or a graph nested in one of its nodes' attributes has a node named name. */
static bool graph_has_layer(const struct wh_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		if (n->name && !strcmp(n->name, name))
			return true;
		for (uint32_t a = 0; a < n->n_attrs; a++) {
			const struct wh_attr *at = &n->attrs[a];
			size_t cnt = wh_attr_graph_count(at);
			for (size_t k = 0; k < cnt; k++) {
				const struct wh_graph *sg = wh_attr_graph(at, k);
				if (sg && graph_has_layer(sg, name))
					return true;
			}
		}
	}
	return false;
}

bool wh_model_subgraph_has_layer(const struct wh_model *m, const char *name)
{
	const struct wh_graph *g = m->graph;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].name && !strcmp(g->nodes[i].name, name))
			return false;
	return graph_has_layer(g, name);
}

enum wh_status wh_precision_resolve_graph(const struct wh_model *m, const struct wh_graph *g,
					  const struct wh_precision_config *c, enum wh_precision dflt,
					  uint8_t *exec_out, uint8_t *out_out)
{
	bool main = g == m->graph;
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	if (!kinds)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	enum wh_status st = wh_graph_layer_kinds(g, kinds);
	for (uint32_t i = 0; i < g->n_nodes && st == WH_OK; i++) {
		/* a container's precision is its bodies' default, whatever types it returns */
		bool fl = kinds[i] == WH_LAYER_FLOAT || wh_node_holds_graphs(&g->nodes[i]);
		exec_out[i] = fl ? (uint8_t)dflt : WH_PREC_FP32;
		out_out[i] = exec_out[i];
	}
	for (uint32_t l = 0; c && l < c->n_layers && st == WH_OK; l++) {
		const struct wh_layer_precision *lp = &c->layers[l];
		uint32_t found = WH_NONE;
		for (uint32_t i = 0; i < g->n_nodes; i++)
			if (g->nodes[i].name && !strcmp(g->nodes[i].name, lp->layer)) {
				found = i;
				break;
			}
		if (found == WH_NONE) {
			/* a layer of a subgraph is resolved with that subgraph's plan */
			if (main && !graph_has_layer(g, lp->layer)) {
				st = wh_error(WH_ERR_NOT_FOUND, "layer '%s' (in --layer-precisions): not in the model (list the layers with `whittle inspect --show layers`)", lp->layer);
				break;
			}
			continue;
		}
		if (kinds[found] != WH_LAYER_FLOAT && !wh_node_holds_graphs(&g->nodes[found]) && (lp->exec != WH_PREC_FP32 || (lp->output >= 0 && lp->output != WH_PREC_FP32))) {
			st = wh_error(WH_ERR_USAGE, "layer '%s' (%s): is %s and cannot run in %s (only float layers take a precision)",
				      lp->layer, g->nodes[found].op_type, wh_layer_kind_name((enum wh_layer_kind)kinds[found]), wh_precision_name(lp->exec));
			break;
		}
		exec_out[found] = (uint8_t)lp->exec;
		out_out[found] = (uint8_t)(lp->output >= 0 ? (unsigned)lp->output : (unsigned)lp->exec);
	}
	/* tf32 changes nothing but the products of MatMul-like layers: its outputs are FP32 */
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (out_out[i] == WH_PREC_TF32)
			out_out[i] = WH_PREC_FP32;
	free(kinds);
	return st;
}

enum wh_status wh_precision_resolve(const struct wh_model *m, const struct wh_precision_config *c,
				    uint8_t *exec_out, uint8_t *out_out)
{
	return wh_precision_resolve_graph(m, m->graph, c, c->dflt, exec_out, out_out);
}

void wh_calib_init(struct wh_calib *c)
{
	memset(c, 0, sizeof *c);
}

void wh_calib_release(struct wh_calib *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		free(c->names[i]);
	free(c->names);
	free(c->amax);
	wh_calib_init(c);
}

enum wh_status wh_calib_set(struct wh_calib *c, const char *name, float amax)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name)) {
			c->amax[i] = amax;
			return WH_OK;
		}
	if (c->n == c->cap) {
		uint32_t cap = c->cap ? c->cap * 2 : 64;
		char **nn = realloc(c->names, cap * sizeof *nn);
		if (!nn)
			return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
		c->names = nn;
		float *na = realloc(c->amax, cap * sizeof *na);
		if (!na)
			return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
		c->amax = na;
		c->cap = cap;
	}
	if (!(c->names[c->n] = strdup(name)))
		return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
	c->amax[c->n++] = amax;
	return WH_OK;
}

float wh_calib_get(const struct wh_calib *c, const char *name)
{
	if (!c)
		return -1;
	for (uint32_t i = 0; i < c->n; i++)
		if (!strcmp(c->names[i], name))
			return c->amax[i];
	return -1;
}
