#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
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
	"{golden} (FP32 outputs), {tactics} (a build's tactic replay) and {precisions} (a\n"
	"layer-precisions file) are replaced.\n\n"
	"triage:\n"
	"  --precision P            fp16 (default), bf16, tf32, fp8, fp8e5m2, int8, fp32\n"
	"  --artifacts-dir DIR      where the report, the repro bundle and the artifacts go\n"
	"                           (default: a new whittle-triage-<date>-<time>-<pid>)\n"
	"  --force                  write into an artifacts folder holding an earlier run's files\n"
	"  --builds N               builds of step 1 (default 5)\n"
	"  --no-precision-search    skip step 5\n"
	"  --no-graphviz            draw the subgraph without Graphviz even when `dot` is installed\n"
	"  --json                   print the result as one JSON object\n"
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
	"data and execution:\n"
	"  --load-inputs DIR        input tensors (a folder of .pb/.npy files)\n"
	"  --seed N, --val-range LO,HI   generated inputs (default seed 1, range 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x48x320\n"
	"  --threads N              executor threads (default: all cores)\n" WH_CALIB_HELP
	"WHITTLE_FAULTY_TACTIC=<tactic>[:<layer>] in the environment makes that tactic corrupt its\n"
	"output (fault injection, to try the flaky branch out); the repro's command.sh keeps it.\n"
	"exit status: 0 done (the answer is in the report), 2 usage, 3 bad input, 4 the check\n"
	"command is broken or cannot tell\n";

enum {
	OPT_ARTIFACTS_DIR = WH_CLI_OPT_BASE,
	OPT_FORCE,
	OPT_BUILDS,
	OPT_NO_PRECISION_SEARCH,
	OPT_NO_GRAPHVIZ,
	OPT_JSON,
	OPT_TIMING_ITERATIONS,
	OPT_TIMING_TOLERANCE,
};

struct triage_cmd {
	struct wh_triage_options to;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
	char self[PATH_MAX];
};

static enum wh_status triage_option(void *ctx, int c, const char *arg)
{
	struct wh_triage_options *to = &((struct triage_cmd *)ctx)->to;
	long long v;
	switch (c) {
	case OPT_ARTIFACTS_DIR: to->artifacts_dir = arg; break;
	case OPT_FORCE: to->force = true; break;
	case OPT_BUILDS:
		if (!wh_cli_parse_int(arg, 1, 10000, &v))
			return wh_cli_usage_error("triage", "--builds '%s': not an integer from 1 to 10000 (give a number of builds such as 5)", arg);
		to->builds = (uint32_t)v;
		break;
	case OPT_NO_PRECISION_SEARCH: to->precision_search = false; break;
	case OPT_NO_GRAPHVIZ: to->graphviz = false; break;
	case OPT_JSON: to->json = true; break;
	case OPT_TIMING_ITERATIONS: return wh_cli_timing_option("triage", "timing-iterations", arg, &to->build);
	case OPT_TIMING_TOLERANCE: return wh_cli_timing_option("triage", "timing-tolerance", arg, &to->build);
	}
	return WH_OK;
}

static enum wh_status triage(struct triage_cmd *x, const char *model_path)
{
	struct wh_triage_options *to = &x->to;
	struct wh_model *m = NULL;
	struct wh_tensor_set inputs;
	wh_tensor_set_init(&inputs);
	to->model_path = model_path;
	to->precision = x->run.precision;
	to->compare = x->run.compare;
	to->threads = x->run.threads;
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
	if ((st = wh_run_opts_load_model(&x->run, model_path, &m)) == WH_OK &&
	    (st = wh_run_opts_load_sample(&x->run, m, &inputs)) == WH_OK &&
	    (st = wh_run_opts_precision(&x->run, m, &inputs, NULL)) == WH_OK) {
		to->calib = x->run.config.calib;
		st = wh_triage_run(m, &inputs, to, &rep);
	}
	wh_tensor_set_release(&inputs);
	wh_model_destroy(m);
	return st;
}

int wh_cmd_triage(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"artifacts-dir", required_argument, NULL, OPT_ARTIFACTS_DIR},
		{"force", no_argument, NULL, OPT_FORCE},
		{"builds", required_argument, NULL, OPT_BUILDS},
		{"no-precision-search", no_argument, NULL, OPT_NO_PRECISION_SEARCH},
		{"no-graphviz", no_argument, NULL, OPT_NO_GRAPHVIZ},
		{"json", no_argument, NULL, OPT_JSON},
		{"timing-iterations", required_argument, NULL, OPT_TIMING_ITERATIONS},
		{"timing-tolerance", required_argument, NULL, OPT_TIMING_TOLERANCE},
		WH_CLI_CHECK_LONGOPTS,
		WH_RUN_LONGOPTS,
		WH_CLI_HELP_LONGOPTS,
	};
	struct triage_cmd x = {.to = {.precision = WH_PREC_FP16, .builds = 5, .graphviz = true,
				      .precision_search = true, .log = stderr, .out = stdout,
				      .build = {.timing_iterations = 3, .timing_tolerance = 0.05}}};
	wh_run_opts_init(&x.run, "triage", WH_PREC_FP16);
	wh_cli_check_opts_init(&x.check);
	struct wh_cli_spec spec = {.cmd = "triage", .help = triage_help, .longopts = longopts, .operands = "one MODEL", .n_operands = 1,
				   .check = true, .check_opts = &x.check, .run_opts = &x.run, .own = triage_option, .ctx = &x};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	char dflt[64];
	if (st == WH_OK && !a.help && !x.to.artifacts_dir) {
		/* a fresh folder per run (two runs from one folder never meet in it); the
		 * driver's first progress line names it */
		wh_artifacts_default_dir("triage", dflt, sizeof dflt);
		x.to.artifacts_dir = dflt;
	}
	if (st == WH_OK && !a.help) {
		x.to.check = a.check ? &x.check.co : NULL;
		st = triage(&x, a.operands[0]);
	}
	wh_run_opts_release(&x.run);
	return wh_cli_exit(st);
}
