#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"
#include "reducer/reduce.h"

static const char reduce_help[] =
	"usage: whittle reduce MODEL -o OUT [options] [--check CMD ARGS...]\n\n"
	"Finds the smallest subgraph of MODEL that still fails the check. The original must fail.\n"
	"Without --check, the built-in check runs each candidate at --precision and fails when its\n"
	"outputs differ from FP32 (--atol/--rtol). --check takes the rest of the command line; in it\n"
	"{model} is the candidate's path, {inputs} a folder with its input tensors (original inputs\n"
	"and reference values of cut tensors), {golden} a folder with the reference values of its\n"
	"outputs.\n\n"
	"search:\n"
	"  -o, --output OUT         the reduced model\n"
	"  --mode M                 ddmin (default: bisect, then divide and conquer, then a 1-minimality\n"
	"                           pass), bisect (coarse only, like Polygraphy), linear\n"
	"  --no-reduce-inputs       keep the layers that read the graph inputs\n"
	"  --no-reduce-outputs      keep the layers that write the graph outputs\n"
	"  -j, --jobs N             run N checks at once (same result for a consistent check)\n"
	"  --min-good OUT           also write a passing model one layer away from the reduced one\n"
	"  --load-replay F          reuse the verdicts recorded in F (resume a killed run)\n"
	"  --save-replay F          append each verdict to F as it comes (JSON lines)\n"
	"  --artifacts-dir DIR      reduced model, inputs, golden outputs, replay, repro/ bundle\n"
	"  --force                  write into an artifacts folder holding an earlier run's files\n"
	"  --artifacts FILE         a file the check writes, sorted into DIR/good and DIR/bad\n"
	"  --confirm N              check the original N times first (flaky checks show; default 1)\n"
	"  --json                   machine-readable events on stdout (one JSON object a line)\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	WH_CLI_CHECK_HELP
	"data:\n"
	"  --load-inputs DIR        input tensors; a folder of sample folders gives several samples\n"
	"  --reference DIR          reference values of every tensor (e.g. scripts/ort-run.js --all),\n"
	"                           for models whittle cannot run; default: whittle's FP32 run\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions\n"
	"built-in check:\n"
	"  --precision P            precision of the candidates: fp32, tf32, fp16, bf16, fp8, fp8e5m2, int8\n"
	"  --layer-precisions S     per-layer precisions (NAME:P,... or a JSON file)\n"
	WH_CALIB_HELP
	"  --atol X, --rtol X, --check-error-stat S   as in whittle run\n"
	"  --threads N              executor threads\n"
	"exit status: 0 reduced, 2 usage, 3 bad input or the original passes, 4 the check is broken\n"
	"or flaky\n";

enum {
	OPT_MODE = WH_CLI_OPT_BASE,
	OPT_NO_REDUCE_INPUTS,
	OPT_NO_REDUCE_OUTPUTS,
	OPT_MIN_GOOD,
	OPT_LOAD_REPLAY,
	OPT_SAVE_REPLAY,
	OPT_ARTIFACTS_DIR,
	OPT_FORCE,
	OPT_ARTIFACTS,
	OPT_CONFIRM,
	OPT_JSON,
	OPT_REFERENCE,
};

struct reduce_cmd {
	struct wh_reduce_options ro;
	const char *artifacts[64];
	const char *reference;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
};

static enum wh_status reduce_option(void *ctx, int c, const char *arg)
{
	struct reduce_cmd *x = ctx;
	long long v;
	switch (c) {
	case 'o': x->ro.output_path = arg; break;
	case OPT_MODE:
		if (!strcmp(arg, "ddmin")) x->ro.mode = WH_SEARCH_DDMIN;
		else if (!strcmp(arg, "bisect")) x->ro.mode = WH_SEARCH_BISECT;
		else if (!strcmp(arg, "linear")) x->ro.mode = WH_SEARCH_LINEAR;
		else return wh_cli_usage_error("reduce", "--mode '%s': not a search mode (give ddmin, bisect or linear)", arg);
		break;
	case OPT_NO_REDUCE_INPUTS: x->ro.reduce_inputs = false; break;
	case OPT_NO_REDUCE_OUTPUTS: x->ro.reduce_outputs = false; break;
	case 'j':
		if (!wh_cli_parse_int(arg, 1, 64, &v))
			return wh_cli_usage_error("reduce", "-j '%s': not an integer from 1 to 64 (give a number of checks at once such as 4)", arg);
		x->ro.jobs = (int)v;
		break;
	case OPT_MIN_GOOD: x->ro.min_good_path = arg; break;
	case OPT_LOAD_REPLAY: x->ro.load_replay = arg; break;
	case OPT_SAVE_REPLAY: x->ro.save_replay = arg; break;
	case OPT_ARTIFACTS_DIR: x->ro.artifacts_dir = arg; break;
	case OPT_FORCE: x->ro.force = true; break;
	case OPT_ARTIFACTS:
		if (x->ro.n_artifacts == 64)
			return wh_cli_usage_error("reduce", "too many --artifacts (64 at most; have the check write them into one folder)");
		x->artifacts[x->ro.n_artifacts++] = arg;
		break;
	case OPT_CONFIRM:
		if (!wh_cli_parse_int(arg, 1, 100, &v))
			return wh_cli_usage_error("reduce", "--confirm '%s': not an integer from 1 to 100 (give a number of checks such as 3)", arg);
		x->ro.confirm_runs = (int)v;
		break;
	case OPT_JSON: x->ro.json = true; break;
	case OPT_REFERENCE: x->reference = arg; break;
	}
	return WH_OK;
}

/* The options of the built-in check mean nothing to an external one. */
static const int builtin_check_opts[] = {WH_RUN_OPT_PRECISION, WH_RUN_OPT_LAYER_PRECISIONS, WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL,
					 WH_RUN_OPT_ERROR_STAT, WH_CALIB_OPT_METHOD, WH_RUN_OPT_END};
static const int threads_opt[] = {WH_RUN_OPT_THREADS, WH_RUN_OPT_END};

static enum wh_status reduce_validate(const struct reduce_cmd *x, const struct wh_cli_args *a)
{
	const struct wh_reduce_options *ro = &x->ro;
	enum wh_status st = WH_OK;
	if (!ro->output_path)
		return wh_cli_usage_error("reduce", "no output path (give -o OUT.onnx)");
	if (!ro->reduce_inputs && !ro->reduce_outputs && ro->mode == WH_SEARCH_BISECT)
		return wh_cli_usage_error("reduce", "--mode bisect with both --no-reduce-inputs and --no-reduce-outputs has nothing to do (drop one of them)");
	if (ro->n_artifacts && !ro->artifacts_dir)
		return wh_cli_usage_error("reduce", "--artifacts needs --artifacts-dir (give the folder to sort them into)");
	if (a->check)
		st = wh_run_opts_refuse(&x->run, builtin_check_opts,
					"belongs to the built-in check, and with --check the check command decides (drop it, or drop --check)");
	if (st == WH_OK && a->check && x->reference)
		st = wh_run_opts_refuse(&x->run, threads_opt,
					"with --check and --reference whittle runs no model (drop it, or drop --reference)");
	return st;
}

static void reduce_summary(const struct wh_reduce_options *ro, const struct wh_reduce_report *rep)
{
	fprintf(stderr, "reduce: %u -> %u layers in %u checks (%u from the cache, %u rounds), %.1f s (whittle's own: %.2f ms per candidate, %.2f s writing reference tensors once); %s; wrote %s\n",
		rep->nodes_before, rep->nodes_after, rep->checks_run, rep->checks_cached, rep->rounds, rep->seconds, rep->driver_ms_per_candidate,
		rep->tensor_write_s, rep->one_minimal ? "1-minimal" : "not verified 1-minimal (bisect mode)", ro->output_path);
	if (ro->artifacts_dir)
		fprintf(stderr, "reduce: repro bundle in %s/repro\n", ro->artifacts_dir);
}

static enum wh_status load_reference(const char *dir, uint32_t n_samples, struct wh_tensor_set **out, uint32_t *n_out)
{
	enum wh_status st = wh_cli_load_samples(NULL, dir, 0, 0, 0, out, n_out, NULL);
	if (st == WH_OK && *n_out != n_samples)
		st = wh_error(WH_ERR_INVALID, "%s: holds %u sample%s of reference values but there are %u input samples (give one folder per sample)",
			      dir, *n_out, *n_out == 1 ? "" : "s", n_samples);
	return st;
}

static enum wh_status reduce(struct reduce_cmd *x, const char *model_path, bool external)
{
	struct wh_reduce_options *ro = &x->ro;
	struct wh_model *m = NULL;
	struct wh_check *check = NULL;
	struct wh_tensor_set *samples = NULL, *refs = NULL;
	uint32_t n_samples = 0, n_refs = 0;
	char *display = NULL;
	bool reduced = false;
	enum wh_status st = WH_OK;
	ro->model_path = model_path;
	ro->artifacts = x->artifacts;
	ro->compare = x->run.compare;
	if (external) {
		if ((st = wh_check_create(&x->check.co, &check)) != WH_OK)
			goto out;
		display = wh_check_command_line(check, NULL);
		ro->check = check;
		ro->check_display = display;
	}
	if ((st = wh_run_opts_load_model(&x->run, model_path, &m)) != WH_OK ||
	    (st = wh_run_opts_load_inputs(&x->run, m, &samples, &n_samples, NULL)) != WH_OK ||
	    (st = wh_run_opts_precision(&x->run, m, &samples[0], &reduced)) != WH_OK)
		goto out;
	ro->engine = wh_run_opts_engine(&x->run, reduced);
	if (x->reference && (st = load_reference(x->reference, n_samples, &refs, &n_refs)) != WH_OK)
		goto out;
	struct wh_reduce_data data = {.inputs = samples, .n_samples = n_samples, .reference = refs};
	struct wh_reduce_report rep;
	if ((st = wh_reduce_run(m, &data, ro, &rep)) == WH_OK)
		reduce_summary(ro, &rep);
out:
	wh_cli_samples_free(samples, n_samples);
	wh_cli_samples_free(refs, n_refs);
	free(display);
	wh_check_destroy(check);
	wh_model_destroy(m);
	return st;
}

int wh_cmd_reduce(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"mode", required_argument, NULL, OPT_MODE},
		{"no-reduce-inputs", no_argument, NULL, OPT_NO_REDUCE_INPUTS},
		{"no-reduce-outputs", no_argument, NULL, OPT_NO_REDUCE_OUTPUTS},
		{"jobs", required_argument, NULL, 'j'},
		{"min-good", required_argument, NULL, OPT_MIN_GOOD},
		{"load-replay", required_argument, NULL, OPT_LOAD_REPLAY},
		{"save-replay", required_argument, NULL, OPT_SAVE_REPLAY},
		{"artifacts-dir", required_argument, NULL, OPT_ARTIFACTS_DIR},
		{"force", no_argument, NULL, OPT_FORCE},
		{"artifacts", required_argument, NULL, OPT_ARTIFACTS},
		{"confirm", required_argument, NULL, OPT_CONFIRM},
		{"json", no_argument, NULL, OPT_JSON},
		{"reference", required_argument, NULL, OPT_REFERENCE},
		WH_CLI_CHECK_LONGOPTS,
		WH_RUN_LONGOPTS,
		WH_RUN_LAYER_PRECISIONS_LONGOPTS,
		WH_CLI_HELP_LONGOPTS,
	};
	struct reduce_cmd x = {.ro = {.mode = WH_SEARCH_DDMIN, .jobs = 1, .reduce_inputs = true, .reduce_outputs = true, .log = stderr,
				      .confirm_runs = 1}};
	wh_run_opts_init(&x.run, "reduce", WH_PREC_FP32);
	wh_cli_check_opts_init(&x.check);
	struct wh_cli_spec spec = {.cmd = "reduce", .help = reduce_help, .shortopts = "o:j:", .longopts = longopts,
				   .operands = "one MODEL", .n_operands = 1, .check = true, .check_opts = &x.check,
				   .run_opts = &x.run, .own = reduce_option, .ctx = &x};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	if (st == WH_OK && !a.help && (st = reduce_validate(&x, &a)) == WH_OK)
		st = reduce(&x, a.operands[0], a.check != NULL);
	wh_run_opts_release(&x.run);
	return wh_cli_exit(st);
}
