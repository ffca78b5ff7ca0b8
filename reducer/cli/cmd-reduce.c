#include <dirent.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/names.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/driver-util.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"
#include "reducer/cli/run-opts.h"
#include "reducer/reduce.h"

static const char reduce_help[] =
	"usage: whittle reduce MODEL -o OUT [options] [--check CMD ARGS...]\n\n"
	"Finds the smallest subgraph of MODEL that still fails the check. The original must fail.\n"
	"Without --check, the built-in check runs each candidate at --precision and fails when its\n"
	"outputs differ from FP32 (--atol/--rtol). --check takes the rest of the command line; in it\n"
	"{model} is the candidate's path, {inputs} a folder with its input tensors (original inputs\n"
	"and reference values of cut tensors), {golden} a folder with the reference values of its\n"
	"outputs, {trt-inputs} and {trt-golden} trtexec's --loadInputs and --loadRefOutputs\n"
	"specifications of raw copies of those (docs/tensorrt.md).\n\n"
	"search:\n"
	"  -o, --output OUT         the reduced model\n"
	"  --mode M                 ddmin (default: bisect, then divide and conquer, then a 1-minimality\n"
	"                           pass), bisect (coarse only, like Polygraphy), linear\n"
	"  --no-reduce-inputs       keep the layers that read the graph inputs\n"
	"  --no-reduce-outputs      keep the layers that write the graph outputs\n"
	"  --min-good OUT           also write a passing model one layer away from the reduced one\n"
	"  --load-replay F          reuse the verdicts recorded in F (resume a killed run)\n"
	"  --save-replay F          append each verdict to F as it comes (JSON lines)\n"
	"  --artifacts-dir DIR      reduced model, inputs, golden outputs, replay, repro/ bundle\n"
	"  --force                  write into an artifacts folder holding an earlier run's files\n"
	"  --artifacts FILE         a file the check writes, sorted into DIR/good and DIR/bad\n"
	"  --confirm N              the original and the result must each fail N times (a flaky\n"
	"                           check shows; default 1: nothing is run twice)\n"
	"  --json                   machine-readable events on stdout (one JSON object a line)\n"
	"  --prior P                search prior-first (ddmin): emulation (whittle's own run at\n"
	"                           --precision, fp16 without it), rules (AutoCast-style), none, or\n"
	"                           a JSON file of layer scores; default: emulation with --check\n"
	"                           and --precision\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	WH_CLI_CHECK_HELP
	"data:\n"
	"  --load-inputs DIR        input tensors; a folder of sample folders gives several samples\n"
	"  --fill-missing           with --load-inputs: generate the inputs that have no file (named\n"
	"                           on one line); without it a missing input is an error\n"
	"  --reference DIR          reference values of every tensor (e.g. scripts/ort-run.js --all),\n"
	"                           for models whittle cannot run; default: whittle's FP32 run\n"
	"  --reference-memory SIZE  reference values held in memory (default 1G); past it each is\n"
	"                           written once as .npy in the work folder and mapped when needed\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions\n"
	"built-in check:\n"
	"  --precision P            precision of the candidates: fp32, tf32, fp16, bf16, fp8, fp8e5m2, int8;\n"
	"                           with --check, the failure's precision (for --prior emulation)\n"
	"  --layer-precisions S     per-layer precisions (NAME:P,... or a JSON file)\n"
	WH_CALIB_HELP
	"  --atol X, --rtol X, --check-error-stat S   as in whittle run\n"
	"  --validate               fail a candidate only where its run has NaN/Inf that FP32 has not\n"
	"                           (an overflow), whatever its rounding error; no tolerances\n"
	"  --device cuda[:N]        run the layers on a CUDA GPU where it has kernels (docs/gpu.md)\n"
	"  --reference-device D     where the check's FP32 reference runs: cpu (default) or cuda[:N]\n"
	"  --allow-reduced-precision-reduction\n"
	"                           with --device cuda: fp16 MatMul/Gemm may take GPU tactics that\n"
	"                           accumulate in fp16 (off: FP32 accumulation; docs/gpu.md)\n"
	"  --threads N              executor threads\n"
	"exit status: 0 reduced, 2 usage, 3 bad input or the original passes, 4 the check is broken\n"
	"or flaky\n\n" WH_SAVE_HELP;

struct reduce_cmd {
	struct wh_cli_save_opts save;
	struct wh_reduce_options ro;
	const char *artifacts[64];
	const char *reference;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
};

static enum wh_status reduce_option(void *self, int c, const char *arg)
{
	struct reduce_cmd *x = self;
	long long v;
	switch (c) {
	case 'o': x->ro.output_path = arg; break;
	case WH_OPT_MODE:
		if (!strcmp(arg, "ddmin")) x->ro.mode = WH_SEARCH_DDMIN;
		else if (!strcmp(arg, "bisect")) x->ro.mode = WH_SEARCH_BISECT;
		else if (!strcmp(arg, "linear")) x->ro.mode = WH_SEARCH_LINEAR;
		else return wh_cli_usage_error("reduce", "--mode '%s': not a search mode (give ddmin, bisect or linear)", arg);
		break;
	case WH_OPT_NO_REDUCE_INPUTS: x->ro.reduce_inputs = false; break;
	case WH_OPT_NO_REDUCE_OUTPUTS: x->ro.reduce_outputs = false; break;
	case WH_OPT_MIN_GOOD: x->ro.min_good_path = arg; break;
	case WH_OPT_LOAD_REPLAY: x->ro.load_replay = arg; break;
	case WH_OPT_SAVE_REPLAY: x->ro.save_replay = arg; break;
	case WH_OPT_ARTIFACTS_DIR: x->ro.artifacts_dir = arg; break;
	case WH_OPT_FORCE: x->ro.force = true; break;
	case WH_OPT_ARTIFACTS: return wh_cli_artifact("reduce", x->artifacts, &x->ro.n_artifacts, arg);
	case WH_OPT_CONFIRM:
		if (!wh_cli_parse_int(arg, 1, 100, &v))
			return wh_cli_usage_error("reduce", "--confirm '%s': not an integer from 1 to 100 (give a number of checks such as 3)", arg);
		x->ro.confirm_runs = (int)v;
		break;
	case WH_OPT_JSON: x->ro.json = true; break;
	case WH_OPT_PRIOR: x->ro.prior = arg; break;
	case WH_OPT_REFERENCE: x->reference = arg; break;
	case WH_OPT_REFERENCE_MEMORY: {
		uint64_t b;
		if (!wh_cli_parse_size(arg, &b) || b > INT64_MAX)
			return wh_cli_usage_error("reduce", "--reference-memory '%s': not a size (bytes, or with K, M or G, e.g. 4G)", arg);
		x->ro.reference_memory = b ? (int64_t)b : -1; /* 0: every value on disk */
		break;
	}
	}
	return WH_OK;
}

/* The options of the built-in check mean nothing to an external one (--precision does: the
 * failure's precision, for the emulation prior). */
static const int builtin_check_opts[] = {WH_RUN_OPT_LAYER_PRECISIONS, WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL,
					 WH_RUN_OPT_ERROR_STAT, WH_RUN_OPT_VALIDATE, WH_CALIB_OPT_METHOD, WH_RUN_OPT_END};
static const int threads_opt[] = {WH_RUN_OPT_THREADS, WH_RUN_OPT_END};

static enum wh_status reduce_validate(void *self, const struct wh_cli_args *a)
{
	const struct reduce_cmd *x = self;
	const struct wh_reduce_options *ro = &x->ro;
	enum wh_status st = WH_OK;
	if (!ro->output_path)
		return wh_cli_usage_error("reduce", "no output path (give -o OUT.onnx)");
	if (!ro->reduce_inputs && !ro->reduce_outputs && ro->mode == WH_SEARCH_BISECT)
		return wh_cli_usage_error("reduce", "--mode bisect with both --no-reduce-inputs and --no-reduce-outputs has nothing to do (drop one of them)");
	if (ro->n_artifacts && !ro->artifacts_dir)
		return wh_cli_usage_error("reduce", "--artifacts needs --artifacts-dir (give the folder to sort them into)");
	if ((st = wh_cli_artifacts_jobs("reduce", ro->n_artifacts, x->check.jobs)) != WH_OK)
		return st;
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
		rep->tensor_write_s, rep->one_minimal ? "1-minimal" : "not verified 1-minimal (bisect mode)", wh_name_term(ro->output_path));
	if (ro->artifacts_dir)
		fprintf(stderr, "reduce: repro bundle in %s/repro\n", wh_name_term(ro->artifacts_dir));
}

static enum wh_status load_reference(const struct wh_model *m, const char *dir, uint32_t n_samples, struct wh_tensor_set **out,
				     uint32_t *n_out)
{
	enum wh_status st = wh_cli_load_samples(m, dir, WH_SAMPLES_REFERENCE, 0, 0, 0, out, n_out, NULL);
	if (st == WH_OK && *n_out != n_samples)
		st = wh_error(WH_ERR_INVALID, "%s: holds %u sample%s of reference values but there are %u input samples (give one folder per sample)",
			      dir, *n_out, *n_out == 1 ? "" : "s", n_samples);
	return st;
}

static enum wh_status reduce(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct reduce_cmd *x = self;
	struct wh_reduce_options *ro = &x->ro;
	struct wh_tensor_set *refs = NULL;
	uint32_t n_refs = 0;
	bool reduced = false;
	enum wh_status st;
	ro->model_path = a->operands[0];
	ro->jobs = x->check.jobs;
	ro->artifacts = x->artifacts;
	ro->compare = x->run.compare;
	ro->save = &x->save.save;
	if ((st = wh_cmd_ctx_check(c, a, &x->check)) != WH_OK ||
	    (st = wh_cmd_ctx_load(c, &x->run, ro->model_path, WH_SAMPLES_ALL)) != WH_OK ||
	    (st = wh_run_opts_precision(&x->run, c->model, &c->samples[0], &reduced)) != WH_OK)
		return st;
	ro->check = c->check;
	ro->check_display = c->check_display;
	ro->engine = wh_run_opts_engine(&x->run, reduced);
	/* an If whose branch every sample takes is searched layer by layer (its branch inlined);
	 * with --reference whittle runs no model */
	if (!x->reference && (st = wh_driver_inline_ifs("reduce", &c->model, &ro->engine, c->samples, c->n_samples, stderr)) != WH_OK)
		return st;
	if (x->reference)
		st = load_reference(c->model, x->reference, c->n_samples, &refs, &n_refs);
	struct wh_reduce_data data = {.inputs = c->samples, .n_samples = c->n_samples, .reference = refs};
	struct wh_reduce_report rep;
	if (st == WH_OK && (st = wh_reduce_run(c->model, &data, ro, &rep)) == WH_OK)
		reduce_summary(ro, &rep);
	wh_cli_samples_free(refs, n_refs);
	return st;
}

int wh_cmd_reduce(int argc, char **argv)
{
	struct reduce_cmd x = {.ro = {.mode = WH_SEARCH_DDMIN, .jobs = 1, .reduce_inputs = true, .reduce_outputs = true, .log = stderr,
				      .confirm_runs = 1}};
	struct wh_cli_spec spec = {.cmd = "reduce", .help = reduce_help, .operands = "one MODEL", .n_operands = 1, .check = true,
				   .check_opts = &x.check, .run_opts = &x.run, .save_opts = &x.save, .own = reduce_option, .validate = reduce_validate,
				   .go = reduce, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
