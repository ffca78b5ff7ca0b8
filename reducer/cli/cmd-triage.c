#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"
#include "reducer/cli/run-opts.h"
#include "reducer/driver-util.h"
#include "reducer/triage.h"

static const char triage_help[] =
	"usage: whittle triage MODEL [options] [--check CMD ARGS...]\n\n"
	"Walks the accuracy-debugging flowchart on MODEL at --precision and writes what it finds\n"
	"to DIR/report.md, with a repro bundle in DIR/repro/ (docs/triage.md):\n"
	"  1. intermittent? builds the engine N times (seeds 0..N-1) and checks each build;\n"
	"     some pass, some fail: diffs their tactics and confirms the culprit by swapping it\n"
	"     into a good build; writes the fastest good build as DIR/fixed.json\n"
	"  2. every build fails: layerwise comparison with FP32 (every tensor kept); the first\n"
	"     failing tensor in topological order names a layer\n"
	"  3. that layer alone, fed FP32 reference values: fails on its own -> single-layer failure\n"
	"  4. else: reduces the model to the minimal failing subgraph\n"
	"  5. searches the layers to keep in fp32 (DIR/layer-precisions.json)\n"
	"  6. writes the repro bundle and checks that its command.sh still fails\n"
	"Without --check, the check runs the model at --precision and compares its outputs with\n"
	"FP32 (--atol/--rtol). --check takes the rest of the command line; in it {model}, {inputs},\n"
	"{golden} (FP32 outputs), {tactics} (a build's tactic replay), {precisions} (a\n"
	"layer-precisions file), {trt-inputs} and {trt-golden} (trtexec's --loadInputs and\n"
	"--loadRefOutputs over raw copies of {inputs} and {golden}) are replaced.\n\n"
	"triage:\n"
	"  --precision P            fp16 (default), bf16, tf32, fp8, fp8e5m2, int8, fp32\n"
	"  --artifacts-dir DIR      where the report, the repro bundle and the artifacts go\n"
	"                           (default: a new whittle-triage-<date>-<time>-<pid>)\n"
	"  --force                  write into an artifacts folder holding an earlier run's files\n"
	"  --builds N               builds of step 1 (default 5)\n"
	"  --no-precision-search    skip step 5\n"
	"  --no-graphviz            draw the subgraph without Graphviz even when `dot` is installed\n"
	"  --json                   print the result as one JSON object\n"
	"  --prior P                the prior of steps 4 and 5 (reduce, precision): emulation,\n"
	"                           rules, none, or a JSON file of layer scores\n"
	"builder (step 1):\n"
	"  --timing-iterations N    runs per tactic when timing (default 3)\n"
	"  --timing-tolerance X     tactics within X (a fraction) of the fastest count as equally\n"
	"                           fast and the build seed picks among them (default 0.05)\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	WH_CLI_CHECK_HELP
	"built-in check and layerwise comparison:\n"
	"  --atol X, --rtol X       tolerances (default 1e-5 each); an element fails when both are\n"
	"                           exceeded\n"
	"  --check-error-stat S     elemwise (default), max, mean, median, quantile[=Q]\n"
	"  --validate               fail only where the run has NaN/Inf that FP32 has not (an\n"
	"                           overflow), whatever the rounding error; no tolerances\n"
	"data and execution:\n"
	"  --load-inputs DIR        input tensors (a folder of .pb/.npy files)\n"
	"  --fill-missing           with --load-inputs: generate the inputs that have no file (named\n"
	"                           on one line); without it a missing input is an error\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x48x320\n"
	"  --device cuda[:N]        run the layers on a CUDA GPU where it has kernels (docs/gpu.md)\n"
	"  --reference-device D     where the check's FP32 reference runs: cpu (default) or cuda[:N]\n"
	"  --allow-reduced-precision-reduction\n"
	"                           with --device cuda: fp16 MatMul/Gemm may take GPU tactics that\n"
	"                           accumulate in fp16 (off: FP32 accumulation; docs/gpu.md)\n"
	"  --threads N              executor threads (default: all cores)\n" WH_CALIB_HELP
	"WHITTLE_FAULTY_TACTIC=<tactic>[:<layer>] in the environment makes that tactic corrupt its\n"
	"output (fault injection, to try the flaky branch out); the repro's command.sh keeps it.\n"
	"exit status: 0 done (the answer is in the report), 2 usage, 3 bad input, 4 the check\n"
	"command is broken or cannot tell\n\n" WH_SAVE_HELP;

struct triage_cmd {
	struct wh_cli_save_opts save;
	struct wh_triage_options to;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
	char self[PATH_MAX];
};

static enum wh_status triage_option(void *self, int c, const char *arg)
{
	struct wh_triage_options *to = &((struct triage_cmd *)self)->to;
	long long v;
	switch (c) {
	case WH_OPT_ARTIFACTS_DIR: to->artifacts_dir = arg; break;
	case WH_OPT_FORCE: to->force = true; break;
	case WH_OPT_BUILDS:
		if (!wh_cli_parse_int(arg, 1, 10000, &v))
			return wh_cli_usage_error("triage", "--builds '%s': not an integer from 1 to 10000 (give a number of builds such as 5)", arg);
		to->builds = (uint32_t)v;
		break;
	case WH_OPT_NO_PRECISION_SEARCH: to->precision_search = false; break;
	case WH_OPT_NO_GRAPHVIZ: to->graphviz = false; break;
	case WH_OPT_JSON: to->json = true; break;
	case WH_OPT_PRIOR: to->prior = arg; break;
	case WH_OPT_TIMING_ITERATIONS: return wh_cli_timing_option("triage", "timing-iterations", arg, &to->build);
	case WH_OPT_TIMING_TOLERANCE: return wh_cli_timing_option("triage", "timing-tolerance", arg, &to->build);
	}
	return WH_OK;
}

static enum wh_status triage(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct triage_cmd *x = self;
	struct wh_triage_options *to = &x->to;
	to->model_path = a->operands[0];
	to->check = a->check ? &x->check.co : NULL;
	to->precision = x->run.precision;
	to->compare = x->run.compare;
	to->save = &x->save.save;
	to->threads = x->run.threads;
	to->cuda = x->run.cuda;
	to->cuda_device = x->run.cuda_device;
	to->allow_reduced = x->run.allow_reduced;
	to->jobs = x->check.jobs;
	to->faulty_tactic = wh_run_opts_faulty_tactic();
	if (to->json)
		to->out = NULL;
	/* command.sh is checked with this very binary */
	ssize_t len = readlink("/proc/self/exe", x->self, sizeof x->self - 1);
	if (len > 0) {
		x->self[len] = '\0';
		to->whittle_path = x->self;
	}
	enum wh_status st;
	struct wh_triage_report rep;
	if ((st = wh_cmd_ctx_load(c, &x->run, to->model_path, WH_SAMPLES_ONE)) != WH_OK)
		return st;
	/* every step looks inside an If whose branch the sample takes (its layers are named,
	 * extracted and kept one by one), as reduce and precision do */
	struct wh_engine_options fo = {.threads = x->run.threads};
	uintptr_t before = (uintptr_t)c->model; /* the model is replaced when an If is inlined */
	if ((st = wh_driver_inline_ifs("triage", &c->model, &fo, c->samples, 1, stderr)) != WH_OK ||
	    (st = wh_run_opts_precision(&x->run, c->model, &c->samples[0], NULL)) != WH_OK)
		return st;
	to->inlined = (uintptr_t)c->model != before;
	to->calib = x->run.config.calib;
	char dflt[64];
	if (!to->artifacts_dir) {
		/* a fresh folder per run (two runs from one folder never meet in it); the
		 * driver's first progress line names it */
		wh_artifacts_default_dir("triage", dflt, sizeof dflt);
		to->artifacts_dir = dflt;
	}
	return wh_triage_run(c->model, &c->samples[0], to, &rep);
}

int wh_cmd_triage(int argc, char **argv)
{
	struct triage_cmd x = {.to = {.precision = WH_PREC_FP16, .builds = 5, .graphviz = true,
				      .precision_search = true, .log = stderr, .out = stdout,
				      .build = {.timing_iterations = 3, .timing_tolerance = 0.05}}};
	struct wh_cli_spec spec = {.cmd = "triage", .help = triage_help, .operands = "one MODEL", .n_operands = 1, .check = true,
				   .check_opts = &x.check, .run_opts = &x.run, .save_opts = &x.save, .precision = WH_PREC_FP16, .own = triage_option,
				   .go = triage, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
