#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/names.h"
#include "graph/tensor-file.h"
#include "graph/topo.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"
#include "reducer/cli/save-opts.h"
#include "graph/os.h"
#include "reducer/launcher.h"
#include "reducer/driver-util.h"
#include "reducer/builtin-check.h"
#include "reducer/layer-groups.h"
#include "reducer/precision-search.h"

static const char precision_help[] =
	"usage: whittle precision MODEL --precision P [options] [--check CMD ARGS...]\n\n"
	"Finds a small set of layers to keep in --higher precision so that MODEL, run at --precision\n"
	"with those layers at the higher one, passes the check; prints their names (one a line, with\n"
	"their op; more than 10 are counted by module scope and op type instead) and writes them all\n"
	"as a --layer-precisions file for whittle run, whittle convert (a strongly typed model for\n"
	"TensorRT 11) and trtexec 10's --layerPrecisions (docs/tensorrt.md). In ddmin mode the set\n"
	"is 1-minimal: moving any one of its layers back to --precision makes the check fail.\n"
	"Without --check, the built-in check compares the outputs with an FP32 run (--atol/--rtol).\n"
	"--check takes the rest of the command line; in it {model} is MODEL, {inputs} a folder with\n"
	"the input tensors, {golden} one with the FP32 outputs, {precisions} a layer-precisions JSON\n"
	"file for the candidate, {trt-inputs} and {trt-golden} trtexec's --loadInputs and\n"
	"--loadRefOutputs specifications of raw copies of the inputs and outputs (docs/tensorrt.md).\n\n"
	"search:\n"
	"  --precision P            precision of every other float layer: tf32, fp16, bf16, fp8,\n"
	"                           fp8e5m2, int8 (required)\n"
	"  --higher P               precision of the kept layers: fp32 (default), fp16, bf16\n"
	"  --mode M                 ddmin (default: bisection, then divide and conquer over layers\n"
	"                           ordered by their error, then a 1-minimality pass), bisect\n"
	"                           (coarse only, like Polygraphy: a prefix or suffix of the layers)\n"
	"  --direction D            forward (default: prefixes of the topological order) or reverse\n"
	"                           (suffixes)\n"
	"  -o, --output FILE        write the layer precisions (JSON, docs/formats.md)\n"
	"  --json                   machine-readable events and result on stdout (JSON lines)\n"
	"  --prior P                keep sets to try first (ddmin): emulation (whittle's own run at\n"
	"                           --precision), rules (AutoCast-style: values above 512,\n"
	"                           initializers above 65504, long reductions), none, or a JSON file\n"
	"                           of layer scores; default: emulation with --check, else rules\n"
	"the answer in other forms (docs/precision-search.md):\n"
	"  --save-model OUT         the strongly typed model: every float layer at --precision (fp16\n"
	"                           or bf16) but the kept ones, in fp32 (as `whittle convert` writes it)\n"
	"  --no-keep-io-types       with --save-model: float32 inputs and outputs take --precision too\n"
	"  --save-exclusions F      the kept layers as ModelOpt AutoCast's --nodes_to_exclude (one\n"
	"                           anchored regular expression a line)\n"
	"  --save-layer-precisions-string F  as the value of TensorRT 10's trtexec --layerPrecisions\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	WH_CLI_CHECK_HELP
	"built-in check:\n"
	"  --atol X, --rtol X       tolerances (default 1e-5 each); an element fails when both are\n"
	"                           exceeded\n"
	"  --check-error-stat S     elemwise (default), max, mean, median, quantile[=Q]\n"
	"  --validate               fail only where the run has NaN/Inf that FP32 has not (an\n"
	"                           overflow), whatever the rounding error; no tolerances\n"
	"data:\n"
	"  --load-inputs DIR        input tensors (a folder of .pb/.npy files, or one folder per sample:\n"
	"                           the answer must pass on every sample)\n"
	"  --fill-missing           with --load-inputs: generate the inputs that have no file (named\n"
	"                           on one line); without it a missing input is an error\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x48x320\n"
	"  --device cuda[:N]        run the layers on a CUDA GPU where it has kernels (docs/gpu.md)\n"
	"  --reference-device D     where the check's FP32 reference runs: cpu (default) or cuda[:N]\n"
	"  --allow-reduced-precision-reduction\n"
	"                           with --device cuda: fp16 MatMul/Gemm may take GPU tactics that\n"
	"                           accumulate in fp16 (off: FP32 accumulation; docs/gpu.md)\n"
	"  --threads N              executor threads (default: all cores)\n"
	WH_CALIB_HELP
	WH_SAVE_HELP
	"exit status: 0 found, 2 usage, 3 bad input, or the model already passes at --precision, or\n"
	"still fails with every float layer at --higher, 4 the check command is broken\n";

/* The kept layers in topological order, so that the list reads like the model. */
static enum wh_status kept_in_order(const struct wh_model *m, const struct wh_precision_config *c, uint32_t **out,
				    uint32_t *n_out)
{
	const struct wh_graph *g = m->graph;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint32_t *kept = calloc((size_t)c->n_layers + 1, sizeof *kept);
	uint32_t n = 0;
	enum wh_status st = WH_OK;
	if (!order || !kept) {
		st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes && n < c->n_layers; i++) {
		const char *name = g->nodes[order[i]].name;
		for (uint32_t k = 0; name && k < c->n_layers; k++)
			if (!strcmp(c->layers[k].layer, name)) {
				kept[n++] = order[i];
				break;
			}
	}
out:
	free(order);
	if (st != WH_OK) {
		free(kept);
		return st;
	}
	*out = kept;
	*n_out = n;
	return WH_OK;
}

static void print_result_json(const struct wh_model *m, const uint32_t *kept, uint32_t n_kept,
			      const struct wh_precision_search_options *so, const struct wh_precision_search_report *rep,
			      const char *output_path)
{
	json_t *root = json_object();
	json_t *layers = json_array();
	for (uint32_t i = 0; i < n_kept; i++) {
		const struct wh_node *nd = &m->graph->nodes[kept[i]];
		json_t *o = json_object();
		json_object_set_new(o, "layer", json_string(nd->name));
		json_object_set_new(o, "op", json_string(nd->op_type));
		json_array_append_new(layers, o);
	}
	json_object_set_new(root, "event", json_string("result"));
	json_object_set_new(root, "precision", json_string(wh_precision_name(so->target)));
	json_object_set_new(root, "higher", json_string(wh_precision_name(so->higher)));
	json_object_set_new(root, "mode", json_string(so->mode == WH_SEARCH_BISECT ? "bisect" : "ddmin"));
	json_object_set_new(root, "direction", json_string(so->reverse ? "reverse" : "forward"));
	json_object_set_new(root, "layers", layers);
	json_object_set_new(root, "candidates", json_integer(rep->candidates));
	json_object_set_new(root, "checks_run", json_integer(rep->checks_run));
	json_object_set_new(root, "checks_cached", json_integer(rep->checks_cached));
	json_object_set_new(root, "one_minimal", json_boolean(rep->one_minimal));
	json_object_set_new(root, "seconds", json_real(rep->seconds));
	json_object_set_new(root, "output", output_path ? json_string(output_path) : json_null());
	if (rep->note[0])
		json_object_set_new(root, "note", json_string(rep->note));
	if (rep->prior[0]) {
		json_object_set_new(root, "prior", json_string(rep->prior));
		json_object_set_new(root, "prior_flagged", json_integer(rep->prior_flagged));
		json_object_set_new(root, "prior_hit", json_boolean(rep->prior_hit >= 0));
		json_object_set_new(root, "prior_checks", json_integer(rep->prior_checks));
	}
	wh_cli_print_json(root, JSON_COMPACT);
}

struct precision_cmd {
	struct wh_precision_search_options so;
	const char *output_path;
	struct wh_cli_save_opts save;
	struct wh_cli_answer_opts ans;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
	bool inlined; /* an If's branch was inlined: the answer names layers the file has inside it */
};

static enum wh_status precision_option(void *self, int c, const char *arg)
{
	struct precision_cmd *x = self;
	struct wh_precision_search_options *so = &x->so;
	switch (c) {
	case 'o': x->output_path = arg; break;
	case WH_OPT_HIGHER:
		if (!wh_precision_parse(arg, &so->higher) || (so->higher != WH_PREC_FP32 && so->higher != WH_PREC_FP16 && so->higher != WH_PREC_BF16))
			return wh_cli_usage_error("precision", "--higher '%s': not a higher precision (give fp32, fp16 or bf16)", arg);
		break;
	case WH_OPT_MODE:
		if (!strcmp(arg, "ddmin")) so->mode = WH_SEARCH_DDMIN;
		else if (!strcmp(arg, "bisect")) so->mode = WH_SEARCH_BISECT;
		else return wh_cli_usage_error("precision", "--mode '%s': not a search mode (give ddmin or bisect)", arg);
		break;
	case WH_OPT_DIRECTION:
		if (!strcmp(arg, "forward")) so->reverse = false;
		else if (!strcmp(arg, "reverse")) so->reverse = true;
		else return wh_cli_usage_error("precision", "--direction '%s': not a direction (give forward or reverse)", arg);
		break;
	case WH_OPT_JSON: so->json = true; break;
	case WH_OPT_PRIOR: so->prior = arg; break;
	case WH_OPT_SAVE_MODEL: x->ans.model_path = arg; break;
	case WH_OPT_NO_KEEP_IO_TYPES: x->ans.convert_io = true; break;
	case WH_OPT_SAVE_EXCLUSIONS: x->ans.exclusions = arg; break;
	case WH_OPT_SAVE_LAYER_PRECISIONS_STRING: x->ans.trt_string = arg; break;
	}
	return WH_OK;
}

static const int builtin_check_opts[] = {WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL, WH_RUN_OPT_ERROR_STAT, WH_RUN_OPT_VALIDATE, WH_RUN_OPT_END};
/* with an external check, the bisection runs no model (ddmin orders layers by their error) */
static const int run_opts[] = {WH_RUN_OPT_THREADS, WH_CALIB_OPT_METHOD, WH_RUN_OPT_END};

static enum wh_status precision_validate(void *self, const struct wh_cli_args *a)
{
	struct precision_cmd *x = self;
	struct wh_precision_search_options *so = &x->so;
	so->target = x->run.precision;
	enum wh_status st = WH_OK;
	if (!wh_run_opts_given(&x->run, WH_RUN_OPT_PRECISION))
		return wh_cli_usage_error("precision", "no target precision (give --precision fp16, bf16, int8, ...)");
	if (so->target == WH_PREC_FP32)
		return wh_cli_usage_error("precision", "--precision fp32 has nothing higher to keep layers in (give fp16, bf16, int8, ...)");
	if (so->target == so->higher)
		return wh_cli_usage_error("precision", "--precision and --higher are both %s (keep layers in a higher precision, e.g. --higher fp32)",
					  wh_precision_name(so->target));
	if (x->ans.model_path && (so->target != WH_PREC_FP16 && so->target != WH_PREC_BF16))
		return wh_cli_usage_error("precision", "--save-model with --precision %s: a strongly typed model is written in fp16 or bf16 (drop --save-model, or search at fp16 or bf16)",
					  wh_precision_name(so->target));
	if (x->ans.model_path && so->higher != WH_PREC_FP32)
		return wh_cli_usage_error("precision", "--save-model with --higher %s: the written model keeps layers in fp32 only (drop --higher, or --save-model)",
					  wh_precision_name(so->higher));
	if (!x->ans.model_path && x->ans.convert_io)
		return wh_cli_usage_error("precision", "--no-keep-io-types without --save-model: it says how the model is written (give --save-model OUT, or drop it)");
	if (!x->ans.model_path && x->save.given)
		return wh_cli_usage_error("precision", "a saving option without --save-model: it says how the model's weights are stored (give --save-model OUT, or drop it)");
	if (a->check)
		st = wh_run_opts_refuse(&x->run, builtin_check_opts,
					"belongs to the built-in check, and with --check the check command decides (drop it, or drop --check)");
	if (st == WH_OK && a->check && so->mode == WH_SEARCH_BISECT)
		st = wh_run_opts_refuse(&x->run, run_opts,
					"with --check and --mode bisect whittle runs no model, the check does (drop it)");
	return st;
}

/* An external check reads {inputs}: the user's folder when it is one sample used as it is,
 * else a folder per sample written into tmp (created here; *tmp stays "" when not). With
 * {trt-inputs} the folder is always written (trtexec needs each file to name its tensor);
 * with {golden} or {trt-golden}, a folder of each sample's FP32 outputs is written too
 * (*gold_out; NULL when the check reads neither). */
static enum wh_status inputs_dirs(const struct wh_run_opts *run, const struct wh_check *check, const struct wh_model *m,
				  const struct wh_tensor_set *samples, uint32_t n_samples, size_t n_generated, char ***out,
				  char ***gold_out, char *tmp, size_t tmp_size)
{
	char **dirs = calloc(n_samples, sizeof *dirs);
	if (!dirs)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	*out = dirs;
	*gold_out = NULL;
	bool golden = wh_check_uses(check, "{golden}") || wh_check_uses(check, "{trt-golden}");
	enum wh_status st = WH_OK;
	if (run->load_inputs && n_samples == 1 && !n_generated && !golden && !wh_check_uses(check, "{trt-inputs}")) {
		dirs[0] = strdup(run->load_inputs);
	} else {
		const char *t = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		if ((size_t)snprintf(tmp, tmp_size, "%s/whittle-precision-inputs-XXXXXX", t) >= tmp_size)
			st = wh_error(WH_ERR_IO, "%s: path too long for a folder of the inputs (set TMPDIR)", t);
		else if ((st = wh_os_make_temp_dir(tmp)) != WH_OK)
			tmp[0] = '\0';
		else
			wh_interrupt_track_dir(tmp); /* an interrupt removes it too */
		for (uint32_t k = 0; k < n_samples && st == WH_OK; k++) {
			char d[PATH_MAX + 32];
			snprintf(d, sizeof d, "%s/sample-%u", tmp, k);
			if ((st = wh_tensor_set_write_dir_for(d, NULL, m->graph, false, &samples[k])) == WH_OK)
				dirs[k] = strdup(d);
		}
	}
	if (st == WH_OK && golden) {
		char **gold = calloc(n_samples, sizeof *gold);
		struct wh_tensor_set *ref = calloc(n_samples, sizeof *ref);
		if (!gold || !ref)
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		for (uint32_t k = 0; ref && k < n_samples; k++)
			wh_tensor_set_init(&ref[k]);
		if (st == WH_OK)
			st = wh_builtin_reference(m, run->threads, samples, n_samples, false, ref);
		for (uint32_t k = 0; k < n_samples && st == WH_OK; k++) {
			char d[PATH_MAX + 32];
			snprintf(d, sizeof d, "%s/golden-%u", tmp, k);
			if ((st = wh_tensor_set_write_dir_for(d, NULL, m->graph, true, &ref[k])) == WH_OK && !(gold[k] = strdup(d)))
				st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		}
		for (uint32_t k = 0; ref && k < n_samples; k++)
			wh_tensor_set_release(&ref[k]);
		free(ref);
		*gold_out = gold;
	}
	for (uint32_t k = 0; k < n_samples && st == WH_OK; k++)
		if (!dirs[k])
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
	return st;
}

static void free_dirs(char **dirs, uint32_t n)
{
	for (uint32_t k = 0; dirs && k < n; k++)
		free(dirs[k]);
	free(dirs);
}

/* The run that verifies the answer, with this search's data and tolerances. */
static void print_verify_command(const struct precision_cmd *x, uint32_t n_samples, size_t n_generated)
{
	const struct wh_run_opts *r = &x->run;
	fprintf(stderr, "precision: wrote %s; verify with: whittle run %s", wh_name_term(x->output_path), wh_name_term(x->so.model_path));
	if (r->input_shapes)
		fprintf(stderr, " --input-shapes %s", wh_name_term(r->input_shapes));
	if (r->load_inputs)
		fprintf(stderr, " --load-inputs %s%s", wh_name_term(r->load_inputs), n_samples > 1 ? "/<each sample folder>" : "");
	if (!r->load_inputs || n_generated) {
		if (r->seed != 1)
			fprintf(stderr, " --seed %llu", (unsigned long long)r->seed);
		if (r->lo != 0 || r->hi != 1)
			fprintf(stderr, " --val-range %g,%g", r->lo, r->hi);
	}
	fprintf(stderr, " --precision %s --layer-precisions %s", wh_precision_name(x->so.target), wh_name_term(x->output_path));
	if (r->calib.method_given)
		fprintf(stderr, " --calib-method %s", wh_name_term(r->calib.method_arg));
	if (r->calib.data_dir)
		fprintf(stderr, " --calib-data %s", wh_name_term(r->calib.data_dir));
	if (r->calib.cache_path)
		fprintf(stderr, " --calibration-cache %s", wh_name_term(r->calib.cache_path));
	if (!x->so.check && r->compare.validate) {
		fprintf(stderr, " --mark-all --validate");
	} else if (!x->so.check) {
		fprintf(stderr, " --compare fp32 --atol %g --rtol %g", r->compare.atol, r->compare.rtol);
		if (r->error_stat)
			fprintf(stderr, " --check-error-stat %s", wh_name_term(r->error_stat));
	}
	fputc('\n', stderr);
}

/* How to apply the answer on TensorRT: 11 builds the strongly typed model (whittle convert, or
 * precision --save-model), 10 takes per-layer flags (docs/tensorrt.md). fp16/bf16 only: a
 * strongly typed int8 or fp8 model needs Q/DQ nodes, which neither writes. */
static void print_tensorrt_hint(const struct precision_cmd *x)
{
	const struct wh_precision_search_options *so = &x->so;
	if ((so->target != WH_PREC_FP16 && so->target != WH_PREC_BF16) || so->higher != WH_PREC_FP32)
		return;
	const char *p = wh_precision_name(so->target), *f = x->output_path ? x->output_path : "FILE";
	if (x->inlined && !x->ans.model_path) {
		/* convert and trtexec read the file, whose If still holds those layers */
		fprintf(stderr, "precision: TensorRT: the answer names layers of an If's branch, which %s keeps inside the If: write the model with the If inlined (precision --save-model OUT.onnx), then trtexec --onnx=OUT.onnx --stronglyTyped\n",
			wh_name_term(so->model_path));
		return;
	}
	if (x->ans.model_path) {
		fprintf(stderr, "precision: TensorRT 11: trtexec --onnx=%s --stronglyTyped (the model --save-model wrote)\n",
			wh_name_term(x->ans.model_path));
		if (x->inlined)
			return; /* TensorRT 10 would read the file, with the If */
	} else
		fprintf(stderr, "precision: TensorRT 11: whittle convert %s --precision %s --layer-precisions %s -o OUT.onnx (or precision --save-model OUT.onnx), then trtexec --onnx=OUT.onnx --stronglyTyped\n",
			wh_name_term(so->model_path), p, wh_name_term(f));
	if (x->ans.trt_string)
		fprintf(stderr, "precision: TensorRT 10: trtexec --onnx=%s --%s --precisionConstraints=obey --layerPrecisions=\"$(cat %s)\" (docs/tensorrt.md)\n",
			wh_name_term(so->model_path), p, wh_name_term(x->ans.trt_string));
	else
		fprintf(stderr, "precision: TensorRT 10: trtexec --onnx=%s --%s --precisionConstraints=obey --layerPrecisions=<the layers of %s, each :fp32> (docs/tensorrt.md)\n",
			wh_name_term(so->model_path), p, wh_name_term(f));
}

/* Answers up to this many layers are listed on stdout; longer ones are summed up by module
 * scope there (at most WH_PRECISION_GROUPS + 2 lines) and listed in full in -o FILE and --json. */
#define WH_PRECISION_LIST_MAX 15
#define WH_PRECISION_GROUPS 8

static void print_result_text(const struct precision_cmd *x, const struct wh_model *m, const uint32_t *kept, uint32_t n_kept,
			      const struct wh_precision_search_report *rep)
{
	const struct wh_precision_search_options *so = &x->so;
	struct wh_layer_groups lg;
	if (n_kept <= WH_PRECISION_LIST_MAX || wh_layer_groups_build(m->graph, kept, n_kept, WH_PRECISION_GROUPS, &lg) != WH_OK) {
		wh_error_clear();
		for (uint32_t i = 0; i < n_kept; i++)
			printf("%s\t%s\n", wh_name_term(m->graph->nodes[kept[i]].name), wh_name_term(m->graph->nodes[kept[i]].op_type));
	} else {
		char ops[512];
		wh_layer_groups_ops_text(&lg, 6, ops, sizeof ops);
		printf("%u layers at %s (%s), by module scope:\n", n_kept, wh_precision_name(so->higher), ops);
		wh_layer_groups_print(stdout, &lg, "  ");
		if (x->output_path)
			printf("every layer: %s\n", wh_name_term(x->output_path));
		else
			printf("every layer: give -o FILE (or --json)\n");
		wh_layer_groups_release(&lg);
	}
	fflush(stdout);
	fprintf(stderr, "precision: keep %u of %u float layers at %s; %u checks run (%u from the cache), %.1f s; %s\n", n_kept,
		rep->candidates, wh_precision_name(so->higher), rep->checks_run, rep->checks_cached, rep->seconds,
		rep->one_minimal ? "1-minimal" : (so->mode == WH_SEARCH_BISECT ? "not verified 1-minimal (bisect mode)" : "not verified 1-minimal"));
	if (rep->note[0])
		fprintf(stderr, "precision: warning: the check contradicted itself: %s\n", wh_name_term(rep->note));
}

static enum wh_status precision(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct precision_cmd *x = self;
	struct wh_precision_search_options *so = &x->so;
	uint32_t *kept = NULL, n_kept = 0;
	char **dirs = NULL, **gold = NULL, inputs_tmp[PATH_MAX] = "";
	struct wh_precision_config result;
	wh_precision_config_init(&result);
	enum wh_status st;
	so->model_path = a->operands[0];
	so->compare = x->run.compare;
	so->threads = x->run.threads;
	so->cuda = x->run.cuda;
	so->cuda_device = x->run.cuda_device;
	so->allow_reduced = x->run.allow_reduced;
	so->jobs = x->check.jobs;
	if ((x->output_path && (st = wh_output_check(x->output_path, "the layer precisions")) != WH_OK) ||
	    (st = wh_cli_answer_check(&x->ans)) != WH_OK ||
	    (st = wh_cmd_ctx_check(c, a, &x->check)) != WH_OK ||
	    (st = wh_cmd_ctx_load(c, &x->run, so->model_path, WH_SAMPLES_ALL)) != WH_OK)
		goto out;
	so->check = c->check;
	so->check_display = c->check_display;
	/* an If whose branch every sample takes is searched layer by layer (its branch inlined);
	 * an external check applies the answer to the model file, which has the If */
	if (!c->check) {
		struct wh_engine_options fo = {.threads = x->run.threads};
		const struct wh_model *before = c->model;
		if ((st = wh_driver_inline_ifs("precision", &c->model, &fo, c->samples, c->n_samples, stderr)) != WH_OK)
			goto out;
		x->inlined = c->model != before;
	}
	if (c->check && (st = inputs_dirs(&x->run, c->check, c->model, c->samples, c->n_samples, c->n_generated, &dirs, &gold,
					  inputs_tmp, sizeof inputs_tmp)) != WH_OK)
		goto out;
	so->inputs_dirs = (const char *const *)dirs;
	so->golden_dirs = (const char *const *)gold;
	if ((st = wh_run_opts_precision(&x->run, c->model, &c->samples[0], NULL)) != WH_OK)
		goto out;
	so->calib = x->run.config.calib;
	if (!so->json)
		fprintf(stderr, "precision: %s at %s, searching layers to keep at %s (%s, %s); check: %s\n", wh_name_term(so->model_path),
			wh_precision_name(so->target), wh_precision_name(so->higher), so->mode == WH_SEARCH_BISECT ? "bisect" : "ddmin",
			so->reverse ? "reverse" : "forward", c->check_display ? wh_name_term(c->check_display) : "built-in comparison with fp32");
	struct wh_precision_search_report rep;
	if ((st = wh_precision_search(c->model, c->samples, c->n_samples, so, &result, &rep)) != WH_OK ||
	    (st = kept_in_order(c->model, &result, &kept, &n_kept)) != WH_OK)
		goto out;
	/* the result is printed even when it cannot be written: the search is not lost */
	bool written = !x->output_path || (st = wh_precision_config_write(&result, x->output_path)) == WH_OK;
	if (written && (x->ans.model_path || x->ans.exclusions || x->ans.trt_string))
		written = (st = wh_cli_answer_write("precision", c->model, so->target, &result, &x->ans, &x->save.save)) == WH_OK;
	if (so->json) {
		print_result_json(c->model, kept, n_kept, so, &rep, written ? x->output_path : NULL);
	} else {
		print_result_text(x, c->model, kept, n_kept, &rep);
		if (x->output_path && written)
			print_verify_command(x, c->n_samples, c->n_generated);
		print_tensorrt_hint(x);
	}
out:
	if (inputs_tmp[0]) {
		wh_interrupt_untrack_dir(inputs_tmp);
		wh_os_remove_tree(inputs_tmp);
	}
	free(kept);
	free_dirs(dirs, c->n_samples);
	free_dirs(gold, c->n_samples);
	wh_precision_config_release(&result);
	return st;
}

int wh_cmd_precision(int argc, char **argv)
{
	struct precision_cmd x = {.so = {.target = WH_PREC_FP32, .higher = WH_PREC_FP32, .mode = WH_SEARCH_DDMIN, .log = stderr}};
	struct wh_cli_spec spec = {.cmd = "precision", .help = precision_help, .operands = "one MODEL", .n_operands = 1, .check = true,
				   .check_opts = &x.check, .run_opts = &x.run, .save_opts = &x.save, .own = precision_option, .validate = precision_validate,
				   .go = precision, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
