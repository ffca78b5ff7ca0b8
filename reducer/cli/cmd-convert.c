/* whittle convert, and the precision answer in the forms other tools take (shared with
 * `precision`): the strongly typed model (graph/convert.h), AutoCast's node exclusion list,
 * the TensorRT <= 10 --layerPrecisions value and the layer-precisions JSON. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/precision.h"
#include "graph/convert.h"
#include "graph/names.h"
#include "graph/onnx-io.h"
#include "graph/topo.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"
#include "reducer/cli/save-opts.h"
#include "reducer/driver-util.h"

static const char convert_help[] =
	"usage: whittle convert MODEL --precision fp16|bf16 [--layer-precisions F] -o OUT [options]\n\n"
	"Writes MODEL as a strongly typed mixed-precision model (what TensorRT 11 builds with\n"
	"--stronglyTyped, as NVIDIA ModelOpt AutoCast writes it): every float layer in --precision,\n"
	"except the layers --layer-precisions keeps in fp32; a Cast wherever a tensor crosses between\n"
	"the two types; float32 weights converted (values beyond the format clamped to its largest\n"
	"finite value). Layers whose op ONNX gives no fp16/bf16 type at the model's opset stay fp32\n"
	"(counted on one line). docs/convert.md has the rules.\n\n"
	"  -o, --output OUT        path of the model to write\n"
	"  --precision P           fp16 or bf16 (required)\n"
	"  --layer-precisions F    layers to keep: NAME:fp32,... or a JSON file (what `whittle\n"
	"                          precision -o` writes); every layer named must be fp32 or P\n"
	"  --no-keep-io-types      float32 graph inputs and outputs take P too (default: they keep\n"
	"                          their types, AutoCast's --keep_io_types)\n"
	"  --input-shapes S        bind dynamic input dimensions first\n"
	"the layers the written model keeps in fp32 (the kept ones and those ONNX gives no P type):\n"
	"  --save-layer-precisions F         as a layer-precisions JSON file (whittle run --layer-precisions)\n"
	"  --save-exclusions F               as ModelOpt AutoCast's --nodes_to_exclude (one anchored\n"
	"                                    regular expression a line)\n"
	"  --save-layer-precisions-string F  as the value of TensorRT 10's trtexec --layerPrecisions\n\n" WH_SAVE_HELP;

/* ---- the answer's forms ---- */

static bool regex_special(char ch)
{
	return strchr("\\.^$*+?{}[]|()", ch) != NULL;
}

/* One anchored Python regular expression per name (AutoCast matches --nodes_to_exclude with
 * re.match): a name with a line break cannot be a line and is refused. */
static enum wh_status write_exclusions(const char *path, const char *const *names, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (strpbrk(names[i], "\n\r"))
			return wh_error(WH_ERR_INVALID, "%s: layer %s has a line break in its name, which a list of one name a line cannot hold (use the JSON file)",
					path, wh_name_term(names[i]));
	FILE *f = fopen(path, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the path)", path, strerror(errno));
	for (uint32_t i = 0; i < n; i++) {
		fputc('^', f);
		for (const char *p = names[i]; *p; p++) {
			if (regex_special(*p))
				fputc('\\', f);
			fputc(*p, f);
		}
		fputs("$\n", f);
	}
	if (fclose(f) != 0)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the disk)", path, strerror(errno));
	return WH_OK;
}

/* NAME:P,NAME:P (trtexec splits the list at commas and each entry at its last colon). */
static enum wh_status write_trt_string(const char *path, const char *const *names, const char *const *precs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (strpbrk(names[i], ",\n\r"))
			return wh_error(WH_ERR_INVALID, "%s: layer %s has a comma or line break in its name, which trtexec's --layerPrecisions cannot hold (use the JSON file or the model)",
					path, wh_name_term(names[i]));
	FILE *f = fopen(path, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the path)", path, strerror(errno));
	for (uint32_t i = 0; i < n; i++)
		fprintf(f, "%s%s:%s", i ? "," : "", names[i], precs[i]);
	fputc('\n', f);
	if (fclose(f) != 0)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the disk)", path, strerror(errno));
	return WH_OK;
}

enum wh_status wh_cli_answer_check(const struct wh_cli_answer_opts *o)
{
	enum wh_status st = WH_OK;
	if (o->model_path)
		st = wh_output_check(o->model_path, "the converted model");
	if (st == WH_OK && o->exclusions)
		st = wh_output_check(o->exclusions, "the node exclusion list");
	if (st == WH_OK && o->trt_string)
		st = wh_output_check(o->trt_string, "the --layerPrecisions value");
	if (st == WH_OK && o->json)
		st = wh_output_check(o->json, "the layer precisions");
	return st;
}

static void print_unsupported(const char *cmd, const struct wh_model *m, const struct wh_convert_stats *s, const char *tname)
{
	if (!s->n_unsupported)
		return;
	fprintf(stderr, "%s: %u float layers stay fp32: ONNX (opset %lld) gives their op no %s type, or they hold subgraphs, quantize, or take their type from an attribute:",
		cmd, s->n_unsupported, (long long)wh_model_opset(m, ""), tname);
	/* counted by op type, in order of first appearance */
	for (uint32_t i = 0; i < s->n_unsupported; i++) {
		const char *op = m->graph->nodes[s->unsupported[i]].op_type;
		bool seen = false;
		for (uint32_t j = 0; j < i && !seen; j++)
			seen = !strcmp(m->graph->nodes[s->unsupported[j]].op_type, op);
		if (seen)
			continue;
		uint32_t count = 0;
		for (uint32_t j = i; j < s->n_unsupported; j++)
			count += !strcmp(m->graph->nodes[s->unsupported[j]].op_type, op);
		fprintf(stderr, " %s (%u)", wh_name_term(op), count);
	}
	fputc('\n', stderr);
}

enum wh_status wh_cli_answer_write(const char *cmd, const struct wh_model *m, enum wh_precision target,
				   const struct wh_precision_config *answer, const struct wh_cli_answer_opts *o,
				   const struct wh_save_opts *save)
{
	const struct wh_graph *g = m->graph;
	enum wh_dtype T = target == WH_PREC_FP16 ? WH_DT_FLOAT16 : WH_DT_BFLOAT16; /* with model_path only */
	const char *tname = wh_precision_name(target);
	struct wh_precision_config cfg;
	struct wh_convert_stats stats = {0};
	struct wh_model *out = NULL;
	uint8_t *exec = calloc((size_t)g->n_nodes + 1, 1), *oute = calloc((size_t)g->n_nodes + 1, 1);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1), *keep = calloc((size_t)g->n_nodes + 1, 1);
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	const char **names = calloc((size_t)g->n_nodes + 1, sizeof *names);
	const char **precs = calloc((size_t)g->n_nodes + 1, sizeof *precs);
	enum wh_status st = WH_OK;
	wh_precision_config_init(&cfg);
	if (!exec || !oute || !kinds || !keep || !order || !names || !precs) {
		st = wh_error(WH_ERR_NOMEM, "%s: out of memory", cmd);
		goto out;
	}
	cfg.dflt = target;
	for (uint32_t l = 0; answer && l < answer->n_layers && st == WH_OK; l++) {
		const struct wh_layer_precision *lp = &answer->layers[l];
		int outp = lp->output < 0 ? (int)lp->exec : lp->output;
		if (wh_model_subgraph_has_layer(m, lp->layer))
			/* the executor runs such a layer in its precision; convert writes no subgraph */
			st = wh_cli_usage_error(cmd, "layer %s: is inside a subgraph (an If's branch, a Loop's or Scan's body), which convert leaves in the model's types (convert the model with the If inlined: `whittle precision ... --save-model OUT.onnx` writes it)",
						wh_name_term(lp->layer));
		else if (o->model_path && ((lp->exec != WH_PREC_FP32 && lp->exec != target) || outp != (int)lp->exec))
			st = wh_cli_usage_error(cmd, "layer %s: %s%s%s: a strongly typed %s model keeps layers in fp32 only, output included (give NAME:fp32)",
						wh_name_term(lp->layer), wh_precision_name(lp->exec), lp->output >= 0 ? "/" : "",
						lp->output >= 0 ? wh_precision_name((enum wh_precision)lp->output) : "", tname);
		else
			st = wh_precision_config_set(&cfg, lp->layer, lp->exec, lp->output);
	}
	if (st != WH_OK || (st = wh_precision_resolve(m, &cfg, exec, oute)) != WH_OK ||
	    (st = wh_model_layer_kinds(m, kinds)) != WH_OK || (st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		keep[i] = exec[i] != target;
	if (o->model_path) {
		struct wh_convert_options co = {.target = T, .keep = keep, .convert_io = o->convert_io};
		if ((st = wh_model_convert(m, &co, &out, &stats)) != WH_OK)
			goto out;
		if (o->forced_in_forms)
			for (uint32_t i = 0; i < stats.n_unsupported; i++)
				if (kinds[stats.unsupported[i]] == WH_LAYER_FLOAT)
					keep[stats.unsupported[i]] = 2;
	}
	/* the layers kept in fp32, in topological order */
	uint32_t n = 0;
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t i = order[s];
		if (kinds[i] == WH_LAYER_FLOAT && keep[i] && g->nodes[i].name && *g->nodes[i].name) {
			precs[n] = wh_precision_name(keep[i] == 2 ? WH_PREC_FP32 : (enum wh_precision)exec[i]);
			names[n++] = g->nodes[i].name;
		}
	}
	if (o->model_path) {
		if ((st = wh_model_save_with(out, o->model_path, save)) != WH_OK)
			goto out;
		uint32_t n_float = 0, n_kept = 0;
		for (uint32_t i = 0; i < g->n_nodes; i++) {
			n_float += kinds[i] == WH_LAYER_FLOAT;
			n_kept += kinds[i] == WH_LAYER_FLOAT && keep[i] == 1;
		}
		fprintf(stderr, "%s: wrote %s: %u of %u float layers in %s, %u kept in fp32, %u Casts, %u weights converted%s\n", cmd,
			o->model_path, stats.converted, n_float, tname, n_kept, stats.casts, stats.inits,
			o->convert_io ? "; float inputs and outputs converted" : "; inputs and outputs keep their types");
		print_unsupported(cmd, m, &stats, tname);
		if (stats.clamped)
			fprintf(stderr, "%s: %llu weight values beyond %s's range were set to its largest finite value (%g)\n", cmd,
				(unsigned long long)stats.clamped, tname, T == WH_DT_FLOAT16 ? 65504.0 : 3.3895313892515355e38);
		if (stats.flushed)
			fprintf(stderr, "%s: %llu nonzero weight values below %s's smallest subnormal became zero (rounding to nearest)\n", cmd,
				(unsigned long long)stats.flushed, tname);
	}
	if (o->json) {
		struct wh_precision_config js;
		wh_precision_config_init(&js);
		js.dflt = target;
		for (uint32_t i = 0; i < n && st == WH_OK; i++)
			st = wh_precision_config_set(&js, names[i], WH_PREC_FP32, -1);
		if (st == WH_OK)
			st = wh_precision_config_write(&js, o->json);
		wh_precision_config_release(&js);
		if (st != WH_OK)
			goto out;
	}
	if (o->exclusions && (st = write_exclusions(o->exclusions, names, n)) != WH_OK)
		goto out;
	if (o->trt_string && (st = write_trt_string(o->trt_string, names, precs, n)) != WH_OK)
		goto out;
out:
	wh_model_destroy(out);
	wh_convert_stats_release(&stats);
	wh_precision_config_release(&cfg);
	free(exec);
	free(oute);
	free(kinds);
	free(keep);
	free(order);
	free(names);
	free(precs);
	return st;
}

/* ---- whittle convert ---- */

struct convert_cmd {
	struct wh_cli_save_opts save;
	struct wh_run_opts run;
	struct wh_cli_answer_opts ans;
};

static enum wh_status convert_option(void *self, int c, const char *arg)
{
	struct convert_cmd *x = self;
	switch (c) {
	case 'o': x->ans.model_path = arg; break;
	case WH_OPT_NO_KEEP_IO_TYPES: x->ans.convert_io = true; break;
	case WH_OPT_SAVE_EXCLUSIONS: x->ans.exclusions = arg; break;
	case WH_OPT_SAVE_LAYER_PRECISIONS: x->ans.json = arg; break;
	case WH_OPT_SAVE_LAYER_PRECISIONS_STRING: x->ans.trt_string = arg; break;
	}
	return WH_OK;
}

static enum wh_status convert_validate(void *self, const struct wh_cli_args *a)
{
	struct convert_cmd *x = self;
	(void)a;
	if (!x->ans.model_path)
		return wh_cli_usage_error("convert", "no output path (give -o OUT.onnx)");
	if (!wh_run_opts_given(&x->run, WH_RUN_OPT_PRECISION))
		return wh_cli_usage_error("convert", "no target precision (give --precision fp16 or bf16)");
	if (x->run.precision != WH_PREC_FP16 && x->run.precision != WH_PREC_BF16)
		return wh_cli_usage_error("convert", "--precision %s: a strongly typed model is written in fp16 or bf16 (give one of them)",
					  wh_precision_name(x->run.precision));
	return WH_OK;
}

static enum wh_status convert(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct convert_cmd *x = self;
	struct wh_precision_config cfg;
	wh_precision_config_init(&cfg);
	x->ans.forced_in_forms = true;
	enum wh_status st = wh_cli_answer_check(&x->ans);
	if (st == WH_OK)
		st = wh_cmd_ctx_load(c, &x->run, a->operands[0], WH_SAMPLES_NONE);
	if (st == WH_OK && x->run.layer_precisions)
		st = wh_precision_config_parse(&cfg, x->run.layer_precisions);
	if (st == WH_OK)
		st = wh_cli_answer_write("convert", c->model, x->run.precision, &cfg, &x->ans, &x->save.save);
	wh_precision_config_release(&cfg);
	return st;
}

int wh_cmd_convert(int argc, char **argv)
{
	struct convert_cmd x = {0};
	struct wh_cli_spec spec = {.cmd = "convert", .help = convert_help, .operands = "one MODEL", .n_operands = 1, .run_opts = &x.run,
				   .save_opts = &x.save, .own = convert_option, .validate = convert_validate, .go = convert, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
