#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "executor/builder.h"
#include "executor/executor.h"
#include "executor/precision.h"
#include "graph/hash.h"
#include "graph/names.h"
#include "graph/topo.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"

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
	"                    once on seeded random inputs, so dynamic inputs need --input-shapes\n"
	"  --device cuda[:N] also say where each layer would run: cuda, host (shape arithmetic,\n"
	"                    constants) or cpu (no CUDA kernel); fails in one line without a GPU;\n"
	"                    with --tactics: the GPU tactics of the layers it runs, with their notes\n"
	"  --precision P     with --tactics: the layers' precision (GPU tactics depend on it)\n"
	"  --allow-reduced-precision-reduction\n"
	"                    with --tactics --device cuda --precision fp16: list the GPU tactics\n"
	"                    that accumulate in fp16 too\n";

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
static enum wh_status list_tactics(const struct wh_model *m, struct wh_run_opts *ro)
{
	struct wh_tensor_set in;
	wh_tensor_set_init(&in);
	char *text = NULL;
	size_t len = 0;
	FILE *mem = NULL;
	bool reduced = false;
	enum wh_status st = wh_cli_random_inputs(m, 1, 0, 1, &in);
	if (st == WH_OK)
		st = wh_run_opts_precision(ro, m, &in, &reduced);
	/* --device cuda: the GPU's tactics of the layers it runs (at --precision) */
	struct wh_engine_options eo = wh_run_opts_engine(ro, reduced);
	eo.threads = 0;
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
		/* layer and tactic names, line by line, escaped whole */
		for (char *line = text, *nl; line && *line; line = nl + 1) {
			if ((nl = strchr(line, '\n')))
				*nl = '\0';
			wh_name_write(stdout, WH_NAME_TERM, line);
			fputc('\n', stdout);
			if (!nl)
				break;
		}
		if (lines)
			printf("tactics: %u layer%s with a choice of tactics\n", lines, lines == 1 ? "" : "s");
		else
			printf("tactics: no layer has a choice of tactics (each op runs its default kernel)\n");
	}
	free(text);
	wh_tensor_set_release(&in);
	return st;
}

/* What inspect prints, computed once for the text and the JSON form. */
struct inspect_view {
	const char *path;
	const struct wh_model *m;
	const struct wh_graph *g;
	const uint32_t *order;   /* topological */
	const char **ops;        /* op types, sorted */
	const uint8_t *kinds;    /* enum wh_layer_kind per node */
	char hex[33];
	char unsup[1024];
	uint32_t n_unsup;
	bool layers, attrs, weights, json_out;
};

static void print_json(const struct inspect_view *v)
{
	json_t *root = json_object();
	json_object_set_new(root, "model", json_string(v->path));
	json_object_set_new(root, "ir_version", json_integer(v->m->ir_version));
	json_t *os = json_array();
	for (uint32_t i = 0; i < v->m->n_opsets; i++) {
		json_t *o = json_object();
		json_object_set_new(o, "domain", json_string(v->m->opsets[i].domain ? v->m->opsets[i].domain : ""));
		json_object_set_new(o, "version", json_integer(v->m->opsets[i].version));
		json_array_append_new(os, o);
	}
	json_object_set_new(root, "opsets", os);
	json_t *ins = json_array(), *outs = json_array();
	for (uint32_t i = 0; i < v->g->n_inputs; i++)
		if (!(v->g->values[v->g->inputs[i]].flags & WH_VALUE_INITIALIZER))
			json_array_append_new(ins, value_json(v->g, v->g->inputs[i]));
	for (uint32_t i = 0; i < v->g->n_outputs; i++)
		json_array_append_new(outs, value_json(v->g, v->g->outputs[i]));
	json_object_set_new(root, "inputs", ins);
	json_object_set_new(root, "outputs", outs);
	json_object_set_new(root, "nodes", json_integer(v->g->n_nodes));
	json_t *opc = json_object();
	for (uint32_t i = 0; i < v->g->n_nodes;) {
		uint32_t j = i;
		while (j < v->g->n_nodes && !strcmp(v->ops[j], v->ops[i]))
			j++;
		json_object_set_new(opc, v->ops[i], json_integer(j - i));
		i = j;
	}
	json_object_set_new(root, "ops", opc);
	json_object_set_new(root, "unsupported_ops", json_string(v->n_unsup ? v->unsup : ""));
	json_object_set_new(root, "hash", json_string(v->hex));
	json_t *ts = json_array();
	for (uint32_t i = 0; i < v->g->n_inputs; i++)
		if (!(v->g->values[v->g->inputs[i]].flags & WH_VALUE_INITIALIZER)) {
			json_t *o = value_json(v->g, v->g->inputs[i]);
			json_object_set_new(o, "producer", json_null());
			json_array_append_new(ts, o);
		}
	for (uint32_t s = 0; s < v->g->n_nodes; s++) {
		const struct wh_node *n = &v->g->nodes[v->order[s]];
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			if (n->outputs[k] == WH_NONE)
				continue;
			json_t *o = value_json(v->g, n->outputs[k]);
			json_object_set_new(o, "producer", json_string(n->name));
			json_array_append_new(ts, o);
		}
	}
	json_object_set_new(root, "tensors", ts);
	if (v->layers) {
		json_t *ls = json_array();
		for (uint32_t s = 0; s < v->g->n_nodes; s++) {
			const struct wh_node *n = &v->g->nodes[v->order[s]];
			json_t *o = json_object();
			json_object_set_new(o, "name", json_string(n->name));
			json_object_set_new(o, "op", json_string(n->op_type));
			json_object_set_new(o, "kind", json_string(wh_layer_kind_name((enum wh_layer_kind)v->kinds[v->order[s]])));
			json_t *li = json_array(), *lo = json_array();
			for (uint32_t k = 0; k < n->n_inputs; k++)
				json_array_append_new(li, json_string(n->inputs[k] == WH_NONE ? "" : v->g->values[n->inputs[k]].name));
			for (uint32_t k = 0; k < n->n_outputs; k++)
				json_array_append_new(lo, json_string(n->outputs[k] == WH_NONE ? "" : v->g->values[n->outputs[k]].name));
			json_object_set_new(o, "inputs", li);
			json_object_set_new(o, "outputs", lo);
			if (v->attrs) {
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
	if (v->weights) {
		json_t *ws = json_array();
		for (uint32_t i = 0; i < v->g->n_inits; i++) {
			json_t *o = value_json(v->g, v->g->inits[i]);
			const struct wh_blob *b = v->g->values[v->g->inits[i]].data;
			json_object_set_new(o, "bytes", json_integer(b ? (json_int_t)b->size : 0));
			json_array_append_new(ws, o);
		}
		json_object_set_new(root, "weights", ws);
	}
	wh_cli_print_json(root, JSON_INDENT(1));
}

static void print_text(const struct inspect_view *iv)
{
	const struct wh_graph *g = iv->g;
	printf("model     %s\n", wh_name_term(iv->path));
	printf("ir        %lld, opsets:", (long long)iv->m->ir_version);
	for (uint32_t i = 0; i < iv->m->n_opsets; i++)
		printf(" %s %lld", iv->m->opsets[i].domain && *iv->m->opsets[i].domain ? wh_name_term(iv->m->opsets[i].domain) : "ai.onnx", (long long)iv->m->opsets[i].version);
	printf("\n");
	char buf[512];
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		shape_text(v, buf, sizeof buf);
		printf("input     %s %s\n", wh_name_term(v->name), wh_name_term(buf));
	}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		const struct wh_value *v = &g->values[g->outputs[i]];
		shape_text(v, buf, sizeof buf);
		printf("output    %s %s\n", wh_name_term(v->name), wh_name_term(buf));
	}
	printf("layers    %u:", g->n_nodes);
	for (uint32_t i = 0; i < g->n_nodes;) {
		uint32_t j = i;
		while (j < g->n_nodes && !strcmp(iv->ops[j], iv->ops[i]))
			j++;
		printf(" %s %u%s", wh_name_term(iv->ops[i]), j - i, j < g->n_nodes ? "," : "");
		i = j;
	}
	printf("\n");
	uint64_t wbytes = 0;
	for (uint32_t i = 0; i < g->n_inits; i++)
		wbytes += g->values[g->inits[i]].data ? g->values[g->inits[i]].data->size : 0;
	printf("weights   %u initializers, %.2f MB\n", g->n_inits, (double)wbytes / 1e6);
	printf("hash      %s\n", iv->hex);
	if (iv->n_unsup)
		printf("executor  cannot run: %s\n", wh_name_term(iv->unsup));
	else
		printf("executor  every op is supported\n");
	uint32_t n_fixed = 0, n_float = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		n_fixed += iv->kinds[i] == WH_LAYER_SHAPE || iv->kinds[i] == WH_LAYER_OTHER;
		n_float += iv->kinds[i] == WH_LAYER_FLOAT;
	}
	printf("precision %u layers take a reduced precision; %u compute shapes, indices or integers and keep their types\n",
	       n_float, n_fixed);
}

/* --show layers, attrs and weights */
static void print_details(const struct inspect_view *iv)
{
	const struct wh_graph *g = iv->g;
	char buf[512];
	if (iv->layers) {
		printf("\n");
		for (uint32_t s = 0; s < g->n_nodes; s++) {
			const struct wh_node *n = &g->nodes[iv->order[s]];
			printf("[%u] %s %s:", s, wh_name_term(n->op_type), n->name && *n->name ? wh_name_term(n->name) : "(unnamed)");
			for (uint32_t k = 0; k < n->n_inputs; k++) {
				if (n->inputs[k] == WH_NONE) {
					printf(" -");
					continue;
				}
				const struct wh_value *v = &g->values[n->inputs[k]];
				if (v->flags & WH_VALUE_INITIALIZER)
					continue;
				shape_text(v, buf, sizeof buf);
				printf(" %s %s", wh_name_term(v->name), wh_name_term(buf));
			}
			printf(" ->");
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				if (n->outputs[k] == WH_NONE)
					continue;
				shape_text(&g->values[n->outputs[k]], buf, sizeof buf);
				printf(" %s %s", wh_name_term(g->values[n->outputs[k]].name), wh_name_term(buf));
			}
			if (iv->kinds[iv->order[s]] == WH_LAYER_SHAPE || iv->kinds[iv->order[s]] == WH_LAYER_OTHER)
				printf("  (%s: keeps its own types at every precision)", wh_layer_kind_name((enum wh_layer_kind)iv->kinds[iv->order[s]]));
			printf("\n");
			if (iv->attrs)
				for (uint32_t a = 0; a < n->n_attrs; a++) {
					attr_text(&n->attrs[a], buf, sizeof buf);
					printf("      %s = %s\n", wh_name_term(n->attrs[a].name), wh_name_term(buf));
				}
		}
	}
	if (iv->weights) {
		printf("\n");
		for (uint32_t i = 0; i < g->n_inits; i++) {
			const struct wh_value *v = &g->values[g->inits[i]];
			shape_text(v, buf, sizeof buf);
			printf("weight %s %s %zu bytes\n", wh_name_term(v->name), wh_name_term(buf), v->data ? v->data->size : (size_t)0);
		}
	}
}

struct inspect_cmd {
	bool tactics;
	struct inspect_view v;
	struct wh_run_opts run;
};

static enum wh_status inspect_option(void *self, int c, const char *arg)
{
	struct inspect_cmd *x = self;
	enum wh_status st = WH_OK;
	switch (c) {
	case WH_OPT_SHOW: {
		uint32_t n;
		char **w = wh_cli_split(arg, &n);
		for (uint32_t i = 0; w && i < n && st == WH_OK; i++) {
			if (!strcmp(w[i], "layers"))
				x->v.layers = true;
			else if (!strcmp(w[i], "attrs"))
				x->v.layers = x->v.attrs = true;
			else if (!strcmp(w[i], "weights"))
				x->v.weights = true;
			else
				st = wh_cli_usage_error("inspect", "--show '%s': not a section (give layers, attrs or weights)", w[i]);
		}
		wh_cli_free_split(w, n);
		break;
	}
	case WH_OPT_JSON: x->v.json_out = true; break;
	case WH_OPT_TACTICS: x->tactics = true; break;
	}
	return st;
}

static enum wh_status inspect(struct inspect_view *v)
{
	const struct wh_graph *g = v->g = v->m->graph;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	const char **ops = calloc((size_t)g->n_nodes + 1, sizeof *ops);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	enum wh_status st = WH_OK;
	struct wh_hash h;
	if (!order || !ops || !kinds)
		st = wh_error(WH_ERR_NOMEM, "inspect: out of memory");
	if (st == WH_OK && (st = wh_graph_topo_order(g, order)) == WH_OK && (st = wh_model_hash(v->m, &h)) == WH_OK)
		st = wh_model_layer_kinds(v->m, kinds);
	if (st != WH_OK)
		goto out;
	wh_hash_hex(h, v->hex);
	for (uint32_t i = 0; i < g->n_nodes; i++)
		ops[i] = g->nodes[i].op_type;
	qsort(ops, g->n_nodes, sizeof *ops, cmp_op);
	v->n_unsup = wh_model_unsupported_ops(v->m, v->unsup, sizeof v->unsup);
	v->order = order;
	v->ops = ops;
	v->kinds = kinds;
	if (v->json_out) {
		print_json(v);
	} else {
		print_text(v);
		print_details(v);
	}
out:
	free(order);
	free(ops);
	free(kinds);
	return st;
}

/* --device cuda: where each layer of the main graph would run (executor/gpu.h): on the GPU
 * (a CUDA kernel), on the host (shape arithmetic and constants, as TensorRT computes shape
 * tensors), or on the CPU (no CUDA kernel: a CPU segment with copies at its ends). */
static enum wh_status print_devices(const struct wh_model *m, int device)
{
	const struct wh_graph *g = m->graph;
	char info[512] = "";
	enum wh_status st = wh_device_cuda_check(device, info, sizeof info);
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	if (st == WH_OK && (!order || !kinds))
		st = wh_error(WH_ERR_NOMEM, "inspect: out of memory");
	if (st == WH_OK && (st = wh_graph_topo_order(g, order)) == WH_OK)
		st = wh_model_layer_kinds(m, kinds);
	if (st != WH_OK)
		goto out;
	uint32_t n_gpu = 0, n_cpu = 0, n_host = 0;
	printf("\ndevice    cuda:%d %s\n", device, info);
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		const struct wh_node *n = &g->nodes[order[s]];
		const char *where;
		if (kinds[order[s]] == WH_LAYER_SHAPE || kinds[order[s]] == WH_LAYER_CONST) {
			where = "host";
			n_host++;
		} else if (wh_device_cuda_claims(device, m, n)) {
			where = "cuda";
			n_gpu++;
		} else {
			where = "cpu";
			n_cpu++;
		}
		printf("  %-5s %s %s\n", where, wh_name_term(n->op_type), wh_name_term(n->name));
	}
	printf("layers    %u on cuda, %u on the host (shapes, constants), %u on the cpu\n", n_gpu, n_host, n_cpu);
out:
	free(order);
	free(kinds);
	return st;
}

static enum wh_status inspect_go(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct inspect_cmd *x = self;
	enum wh_status st = wh_cmd_ctx_load(c, &x->run, a->operands[0], WH_SAMPLES_NONE);
	if (st != WH_OK)
		return st;
	x->v.path = a->operands[0];
	x->v.m = c->model;
	if (!x->tactics && (wh_run_opts_given(&x->run, WH_RUN_OPT_PRECISION) || wh_run_opts_given(&x->run, WH_RUN_OPT_ALLOW_REDUCED)))
		return wh_cli_usage_error("inspect", "--precision and --allow-reduced-precision-reduction go with --tactics (add it, or drop them)");
	if (x->tactics)
		return list_tactics(c->model, &x->run);
	if ((st = inspect(&x->v)) == WH_OK && x->run.cuda && !x->v.json_out)
		st = print_devices(c->model, x->run.cuda_device);
	return st;
}

int wh_cmd_inspect(int argc, char **argv)
{
	struct inspect_cmd x = {0};
	struct wh_cli_spec spec = {.cmd = "inspect", .help = inspect_help, .operands = "one MODEL", .n_operands = 1, .run_opts = &x.run,
				   .own = inspect_option, .go = inspect_go, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
