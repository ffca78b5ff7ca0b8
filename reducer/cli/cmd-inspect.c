#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "executor/builder.h"
#include "executor/executor.h"
#include "executor/precision.h"
#include "graph/hash.h"
#include "graph/topo.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"

static const char inspect_help[] =
	"usage: whittle inspect MODEL [--show layers|attrs|weights] [--json] [--input-shapes SHAPES]\n"
	"       whittle inspect --tactics MODEL [--input-shapes SHAPES]\n\n"
	"Shows a model's inputs, outputs, opsets, op counts, canonical hash and, with --show,\n"
	"every layer (node) with its tensors' inferred types and shapes.\n\n"
	"  --show layers     one line per layer: name, op, inputs -> outputs with shapes\n"
	"  --show attrs      layers with their attributes\n"
	"  --show weights    initializers with type, shape and size\n"
	"  --json            machine-readable output (every tensor with dtype and shape)\n"
	"  --input-shapes S  bind dynamic input dimensions, e.g. x:1x3x640x640,y:4\n"
	"  --tactics         every layer's eligible tactics (name, id, numerics): runs the model\n"
	"                    once on seeded random inputs, so dynamic inputs need --input-shapes\n";

static json_t *shape_json(const struct wh_value *v)
{
	if (v->rank < 0)
		return json_null();
	json_t *a = json_array();
	for (int32_t d = 0; d < v->rank; d++) {
		if (v->dims[d].value >= 0)
			json_array_append_new(a, json_integer(v->dims[d].value));
		else if (v->dims[d].param)
			json_array_append_new(a, json_string(v->dims[d].param));
		else
			json_array_append_new(a, json_integer(-1));
	}
	return a;
}

static void shape_text(const struct wh_value *v, char *buf, size_t size)
{
	enum wh_dtype elem;
	enum wh_value_type vt = wh_value_type_of(v, &elem);
	if (vt != WH_TYPE_TENSOR) {
		static const char *const kind[] = {"tensor", "sequence", "optional", "optional sequence", "map or sparse tensor"};
		snprintf(buf, size, "%s(%s)", kind[vt], elem ? wh_dtype_name(elem) : "?");
		return;
	}
	if (v->rank < 0) {
		snprintf(buf, size, "%s[?]", wh_dtype_name(v->dtype));
		return;
	}
	size_t off = (size_t)snprintf(buf, size, "%s[", v->dtype ? wh_dtype_name(v->dtype) : "?");
	for (int32_t d = 0; d < v->rank && off < size; d++) {
		int w;
		if (v->dims[d].value >= 0)
			w = snprintf(buf + off, size - off, d ? ",%lld" : "%lld", (long long)v->dims[d].value);
		else
			w = snprintf(buf + off, size - off, d ? ",%s" : "%s", v->dims[d].param ? v->dims[d].param : "?");
		if (w < 0)
			return;
		off += (size_t)w;
	}
	if (off < size)
		snprintf(buf + off, size - off, "]");
}

static json_t *value_json(const struct wh_graph *g, uint32_t id)
{
	const struct wh_value *v = &g->values[id];
	json_t *o = json_object();
	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "dtype", v->dtype ? json_string(wh_dtype_name(v->dtype)) : json_null());
	json_object_set_new(o, "shape", shape_json(v));
	return o;
}

static void attr_text(const struct wh_attr *a, char *buf, size_t size)
{
	size_t off = 0;
	int w = 0;
	switch (a->type) {
	case WH_ATTR_FLOAT: snprintf(buf, size, "%g", a->f); return;
	case WH_ATTR_INT: snprintf(buf, size, "%lld", (long long)a->i); return;
	case WH_ATTR_STRING: snprintf(buf, size, "\"%.*s\"", (int)(a->s.len > 200 ? 200 : a->s.len), (const char *)a->s.data); return;
	case WH_ATTR_INTS:
	case WH_ATTR_FLOATS:
		buf[off++] = '[';
		for (size_t i = 0; i < a->n && off < size - 8; i++) {
			if (a->type == WH_ATTR_INTS)
				w = snprintf(buf + off, size - off, i ? ",%lld" : "%lld", (long long)a->ints[i]);
			else
				w = snprintf(buf + off, size - off, i ? ",%g" : "%g", a->floats[i]);
			if (w < 0)
				break;
			off += (size_t)w;
		}
		snprintf(buf + (off < size - 2 ? off : size - 2), 2, "]");
		return;
	case WH_ATTR_TENSOR: {
		char s[64];
		int64_t one = 0;
		snprintf(buf, size, "tensor %s[%s]", wh_dtype_name(a->t->dtype),
			 a->t->rank ? (wh_shape_str(a->t->dims, a->t->rank, s, sizeof s), s) : (wh_shape_str(&one, 0, s, sizeof s), s));
		return;
	}
	case WH_ATTR_GRAPH: snprintf(buf, size, "graph (%u nodes)", a->g ? a->g->n_nodes : 0); return;
	default: snprintf(buf, size, "(%zu values of type %d)", a->n, a->type); return;
	}
}

static int cmp_op(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;
	return strcmp(*x, *y);
}

/* The builder's view of the model: it runs the model once, so eligibility sees real shapes. */
static enum wh_status list_tactics(const struct wh_model *m)
{
	struct wh_tensor_set in;
	wh_tensor_set_init(&in);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	struct wh_engine_options eo = {0};
	enum wh_status st = wh_cli_random_inputs(m, 1, 0, 1, &in);
	if (st == WH_OK && !(mem = open_memstream(&text, &len)))
		st = wh_error(WH_ERR_NOMEM, "inspect: out of memory");
	if (st == WH_OK)
		st = wh_engine_list_tactics(m, &eo, &in, mem);
	if (mem && fclose(mem) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_NOMEM, "inspect: out of memory");
	if (st == WH_OK) {
		uint32_t lines = 0;
		for (size_t i = 0; i < len; i++)
			lines += text[i] == '\n';
		fputs(text ? text : "", stdout);
		if (lines)
			printf("tactics: %u layer%s with a choice of tactics\n", lines, lines == 1 ? "" : "s");
		else
			printf("tactics: no layer has a choice of tactics (each op runs its default kernel)\n");
	}
	free(text);
	wh_tensor_set_release(&in);
	return st;
}

int wh_cmd_inspect(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"show", required_argument, NULL, 's'},
		{"json", no_argument, NULL, 'j'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"tactics", no_argument, NULL, 'T'},
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	const char *shapes = NULL;
	bool json = false, layers = false, attrs = false, weights = false, tactics = false;
	int c;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 's': {
			uint32_t n;
			char **v = wh_cli_split(optarg, &n);
			for (uint32_t i = 0; i < n; i++) {
				if (!strcmp(v[i], "layers"))
					layers = true;
				else if (!strcmp(v[i], "attrs"))
					layers = attrs = true;
				else if (!strcmp(v[i], "weights"))
					weights = true;
				else {
					int r = wh_cli_usage_error("inspect", "--show takes layers, attrs or weights, not '%s' (see whittle inspect --help)", v[i]);
					wh_cli_free_split(v, n);
					return r;
				}
			}
			wh_cli_free_split(v, n);
			break;
		}
		case 'j': json = true; break;
		case 'I': shapes = optarg; break;
		case 'T': tactics = true; break;
		case 'h': fputs(inspect_help, stdout); return 0;
		default: return wh_cli_bad_option("inspect", c, argv);
		}
	}
	if (optind != argc - 1)
		return wh_cli_usage_error("inspect", "expects exactly one MODEL (see whittle inspect --help)");
	const char *path = argv[optind];
	struct wh_model *m = NULL;
	enum wh_status st = wh_cli_load_model(path, shapes, &m);
	if (st != WH_OK)
		return wh_cli_fail(st);
	if (tactics) {
		st = list_tactics(m);
		wh_model_destroy(m);
		return st == WH_OK ? 0 : wh_cli_fail(st);
	}
	const struct wh_graph *g = m->graph;
	uint8_t *kinds = NULL;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
	int rc = 0;
	if (!order || !ops) {
		rc = wh_cli_fail(wh_error(WH_ERR_NOMEM, "inspect: out of memory"));
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK) {
		rc = wh_cli_fail(st);
		goto out;
	}
	struct wh_hash h;
	char hex[33];
	if ((st = wh_model_hash(m, &h)) != WH_OK) {
		rc = wh_cli_fail(st);
		goto out;
	}
	wh_hash_hex(h, hex);
	for (uint32_t i = 0; i < g->n_nodes; i++)
		ops[i] = g->nodes[i].op_type;
	qsort(ops, g->n_nodes, sizeof *ops, cmp_op);
	char unsup[1024];
	uint32_t n_unsup = wh_model_unsupported_ops(m, unsup, sizeof unsup);
	kinds = calloc((size_t)g->n_nodes + 1, 1);
	if (!kinds || (st = wh_model_layer_kinds(m, kinds)) != WH_OK) {
		free(kinds);
		rc = wh_cli_fail(kinds ? st : wh_error(WH_ERR_NOMEM, "inspect: out of memory"));
		goto out;
	}

	if (json) {
		json_t *root = json_object();
		json_object_set_new(root, "model", json_string(path));
		json_object_set_new(root, "ir_version", json_integer(m->ir_version));
		json_t *os = json_array();
		for (uint32_t i = 0; i < m->n_opsets; i++) {
			json_t *o = json_object();
			json_object_set_new(o, "domain", json_string(m->opsets[i].domain ? m->opsets[i].domain : ""));
			json_object_set_new(o, "version", json_integer(m->opsets[i].version));
			json_array_append_new(os, o);
		}
		json_object_set_new(root, "opsets", os);
		json_t *ins = json_array(), *outs = json_array();
		for (uint32_t i = 0; i < g->n_inputs; i++)
			if (!(g->values[g->inputs[i]].flags & WH_VALUE_INITIALIZER))
				json_array_append_new(ins, value_json(g, g->inputs[i]));
		for (uint32_t i = 0; i < g->n_outputs; i++)
			json_array_append_new(outs, value_json(g, g->outputs[i]));
		json_object_set_new(root, "inputs", ins);
		json_object_set_new(root, "outputs", outs);
		json_object_set_new(root, "nodes", json_integer(g->n_nodes));
		json_t *opc = json_object();
		for (uint32_t i = 0; i < g->n_nodes;) {
			uint32_t j = i;
			while (j < g->n_nodes && !strcmp(ops[j], ops[i]))
				j++;
			json_object_set_new(opc, ops[i], json_integer(j - i));
			i = j;
		}
		json_object_set_new(root, "ops", opc);
		json_object_set_new(root, "unsupported_ops", json_string(n_unsup ? unsup : ""));
		json_object_set_new(root, "hash", json_string(hex));
		json_t *ts = json_array();
		for (uint32_t i = 0; i < g->n_inputs; i++)
			if (!(g->values[g->inputs[i]].flags & WH_VALUE_INITIALIZER)) {
				json_t *o = value_json(g, g->inputs[i]);
				json_object_set_new(o, "producer", json_null());
				json_array_append_new(ts, o);
			}
		for (uint32_t s = 0; s < g->n_nodes; s++) {
			const struct wh_node *n = &g->nodes[order[s]];
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				if (n->outputs[k] == WH_NONE)
					continue;
				json_t *o = value_json(g, n->outputs[k]);
				json_object_set_new(o, "producer", json_string(n->name));
				json_array_append_new(ts, o);
			}
		}
		json_object_set_new(root, "tensors", ts);
		if (layers) {
			json_t *ls = json_array();
			for (uint32_t s = 0; s < g->n_nodes; s++) {
				const struct wh_node *n = &g->nodes[order[s]];
				json_t *o = json_object();
				json_object_set_new(o, "name", json_string(n->name));
				json_object_set_new(o, "op", json_string(n->op_type));
				json_object_set_new(o, "kind", json_string(wh_layer_kind_name((enum wh_layer_kind)kinds[order[s]])));
				json_t *li = json_array(), *lo = json_array();
				for (uint32_t k = 0; k < n->n_inputs; k++)
					json_array_append_new(li, json_string(n->inputs[k] == WH_NONE ? "" : g->values[n->inputs[k]].name));
				for (uint32_t k = 0; k < n->n_outputs; k++)
					json_array_append_new(lo, json_string(n->outputs[k] == WH_NONE ? "" : g->values[n->outputs[k]].name));
				json_object_set_new(o, "inputs", li);
				json_object_set_new(o, "outputs", lo);
				if (attrs) {
					json_t *ao = json_object();
					for (uint32_t a = 0; a < n->n_attrs; a++) {
						char buf[512];
						attr_text(&n->attrs[a], buf, sizeof buf);
						json_object_set_new(ao, n->attrs[a].name, json_string(buf));
					}
					json_object_set_new(o, "attrs", ao);
				}
				json_array_append_new(ls, o);
			}
			json_object_set_new(root, "layers", ls);
		}
		if (weights) {
			json_t *ws = json_array();
			for (uint32_t i = 0; i < g->n_inits; i++) {
				json_t *o = value_json(g, g->inits[i]);
				const struct wh_blob *b = g->values[g->inits[i]].data;
				json_object_set_new(o, "bytes", json_integer(b ? (json_int_t)b->size : 0));
				json_array_append_new(ws, o);
			}
			json_object_set_new(root, "weights", ws);
		}
		char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
		if (text)
			puts(text);
		free(text);
		json_decref(root);
		goto out;
	}

	printf("model     %s\n", path);
	printf("ir        %lld, opsets:", (long long)m->ir_version);
	for (uint32_t i = 0; i < m->n_opsets; i++)
		printf(" %s %lld", m->opsets[i].domain && *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx", (long long)m->opsets[i].version);
	printf("\n");
	char buf[512];
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		shape_text(v, buf, sizeof buf);
		printf("input     %s %s\n", v->name, buf);
	}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		const struct wh_value *v = &g->values[g->outputs[i]];
		shape_text(v, buf, sizeof buf);
		printf("output    %s %s\n", v->name, buf);
	}
	printf("layers    %u:", g->n_nodes);
	for (uint32_t i = 0; i < g->n_nodes;) {
		uint32_t j = i;
		while (j < g->n_nodes && !strcmp(ops[j], ops[i]))
			j++;
		printf(" %s %u%s", ops[i], j - i, j < g->n_nodes ? "," : "");
		i = j;
	}
	printf("\n");
	uint64_t wbytes = 0;
	for (uint32_t i = 0; i < g->n_inits; i++)
		wbytes += g->values[g->inits[i]].data ? g->values[g->inits[i]].data->size : 0;
	printf("weights   %u initializers, %.2f MB\n", g->n_inits, (double)wbytes / 1e6);
	printf("hash      %s\n", hex);
	if (n_unsup)
		printf("executor  cannot run: %s\n", unsup);
	else
		printf("executor  every op is supported\n");
	uint32_t n_fixed = 0, n_float = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		n_fixed += kinds[i] == WH_LAYER_SHAPE || kinds[i] == WH_LAYER_OTHER;
		n_float += kinds[i] == WH_LAYER_FLOAT;
	}
	printf("precision %u layers take a reduced precision; %u compute shapes, indices or integers and keep their types\n",
	       n_float, n_fixed);
	if (layers) {
		printf("\n");
		for (uint32_t s = 0; s < g->n_nodes; s++) {
			const struct wh_node *n = &g->nodes[order[s]];
			printf("[%u] %s %s:", s, n->op_type, n->name && *n->name ? n->name : "(unnamed)");
			for (uint32_t k = 0; k < n->n_inputs; k++) {
				if (n->inputs[k] == WH_NONE) {
					printf(" -");
					continue;
				}
				const struct wh_value *v = &g->values[n->inputs[k]];
				if (v->flags & WH_VALUE_INITIALIZER)
					continue;
				shape_text(v, buf, sizeof buf);
				printf(" %s %s", v->name, buf);
			}
			printf(" ->");
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				if (n->outputs[k] == WH_NONE)
					continue;
				shape_text(&g->values[n->outputs[k]], buf, sizeof buf);
				printf(" %s %s", g->values[n->outputs[k]].name, buf);
			}
			if (kinds[order[s]] == WH_LAYER_SHAPE || kinds[order[s]] == WH_LAYER_OTHER)
				printf("  (%s: keeps its own types at every precision)", wh_layer_kind_name((enum wh_layer_kind)kinds[order[s]]));
			printf("\n");
			if (attrs)
				for (uint32_t a = 0; a < n->n_attrs; a++) {
					attr_text(&n->attrs[a], buf, sizeof buf);
					printf("      %s = %s\n", n->attrs[a].name, buf);
				}
		}
	}
	if (weights) {
		printf("\n");
		for (uint32_t i = 0; i < g->n_inits; i++) {
			const struct wh_value *v = &g->values[g->inits[i]];
			shape_text(v, buf, sizeof buf);
			printf("weight %s %s %zu bytes\n", v->name, buf, v->data ? v->data->size : (size_t)0);
		}
	}
out:
	free(order);
	free(ops);
	free(kinds);
	wh_model_destroy(m);
	return rc;
}
