#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"
#include "reducer/builds.h"
#include "reducer/driver-util.h"

static const char build_help[] =
	"usage: whittle build MODEL --until N|good|bad|confirmed [options] [--check CMD ARGS...]\n\n"
	"Builds the engine again and again (build k uses seed S+k, so builds differ the way timing\n"
	"noise makes real builds differ, reproducibly), saves each build's tactic replay, runs the\n"
	"check on it and sorts the replays into DIR/good and DIR/bad. Then diffs the tactic choices\n"
	"of good and bad builds and confirms each suspect by swapping it into a good build (and out\n"
	"of a bad one), and writes DIR/fixed.json (the fastest good build) and DIR/report.md.\n"
	"Without --check, the built-in check runs each build pinned (at --precision) and compares\n"
	"its outputs with FP32 (--atol/--rtol). --check takes the rest of the command line; in it\n"
	"{tactics} is the build's replay file, {model} the model, {inputs} a folder with the input\n"
	"tensors, {golden} the FP32 outputs, {precisions} the layer precisions file, {trt-inputs}\n"
	"and {trt-golden} trtexec's --loadInputs and --loadRefOutputs over raw copies of those.\n\n"
	"loop:\n"
	"  --until N|good|bad|confirmed   N builds; or until the first good or bad build, or until\n"
	"                           a culprit is confirmed (at most --max-builds builds)\n"
	"  --max-builds N           cap for --until good|bad|confirmed (default 100)\n"
	"  --artifacts-dir DIR      where replays, fixed.json and report.md go (default: a new\n"
	"                           whittle-build-<date>-<time>-<pid>)\n"
	"  --force                  write into an artifacts folder holding an earlier run's files\n"
	"  --artifacts FILE         a file the check writes, sorted into DIR/good and DIR/bad (repeatable)\n"
	"  --no-confirm             diff only: do not run the swap checks\n"
	"  --mark-all               built-in check: compare every tensor with FP32, not only the outputs\n"
	"  --max-suspects N         suspects confirmed at most (default 32; 0: all)\n"
	"  --json                   machine-readable events on stdout (one JSON object a line)\n"
	"builder:\n"
	"  --seed S                 seed of the generated inputs and of build 0 (default 1)\n"
	"  --timing-iterations N    runs per tactic when timing (default 3)\n"
	"  --timing-tolerance X     tactics within X (a fraction) of the fastest are equally fast;\n"
	"                           the build seed picks among them (default 0.05; inf: the seed alone)\n"
	"  --timing-cache F         reuse (and update) measured times\n"
	"  --block-tactics F        a block list (DIR/blocklist.json of an earlier build): its\n"
	"                           layer/tactic pairs are never picked\n"
	"  --build-cmd CMD          build with another tool: CMD is one shell string that must write\n"
	"                           its tactic replay (whittle's or Polygraphy's format) to {tactics};\n"
	"                           {model}, {seed}, {iteration} are replaced too; needs --check\n"
	"  --pin-cmd CMD            with --build-cmd: one shell string that rebuilds pinned to the\n"
	"                           replay {tactics}, run before each confirmation check (without it,\n"
	"                           suspects are not confirmed; give `true` if the check pins itself)\n"
	"  --build-timeout S        kill a build or pin command after S seconds\n"
	"check:\n"
	"  --check CMD ...          the check command (argv; the rest of the line)\n"
	WH_CLI_CHECK_HELP
	"run (built-in check and whittle's builder):\n"
	"  --precision P            fp32 (default), tf32, fp16, bf16, fp8, fp8e5m2, int8\n"
	"  --layer-precisions S     per-layer NAME:P[/OUT],... or a JSON file\n"
	"  --load-inputs DIR        input tensors (default: generated from --seed)\n"
	"  --fill-missing           with --load-inputs: generate the inputs that have no file (named\n"
	"                           on one line); without it a missing input is an error\n"
	"  --val-range LO,HI        range of generated inputs (default 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x640x640\n"
	"  --atol X, --rtol X       tolerances of the built-in check (default 1e-5 each)\n"
	"  --check-error-stat S     elemwise (default), max, mean, median, quantile[=Q]\n"
	"  --device cuda[:N]        run the layers on a CUDA GPU where it has kernels (docs/gpu.md)\n"
	"  --reference-device D     where the check's FP32 reference runs: cpu (default) or cuda[:N]\n"
	"  --allow-reduced-precision-reduction\n"
	"                           with --device cuda: fp16 MatMul/Gemm may take GPU tactics that\n"
	"                           accumulate in fp16 (off: FP32 accumulation; docs/gpu.md)\n"
	"  --threads N              executor threads\n" WH_CALIB_HELP
	"WHITTLE_FAULTY_TACTIC=<tactic>[:<layer>] in the environment makes that tactic corrupt its\n"
	"output (fault injection, to try the loop out; off by default).\n"
	"exit status: 0 done (the answer is in the output and the report), 2 usage, 3 bad input,\n"
	"4 the check or the build command is broken\n";

/* Whether a placeholder appears in any word. */
static bool mentions(char **words, int n, const char *what)
{
	for (int i = 0; i < n; i++)
		if (words[i] && strstr(words[i], what))
			return true;
	return false;
}

struct build_cmd {
	struct wh_build_loop_options lo;
	const char *artifacts[64];
	long long max_builds;
	bool until_given, max_builds_given;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
	const char *block_path; /* --block-tactics */
	struct wh_tactic_blocklist block;
};

static enum wh_status build_until(struct build_cmd *x, const char *arg)
{
	long long v;
	x->until_given = true;
	if (!strcmp(arg, "good")) {
		x->lo.until = WH_UNTIL_GOOD;
	} else if (!strcmp(arg, "bad")) {
		x->lo.until = WH_UNTIL_BAD;
	} else if (!strcmp(arg, "confirmed")) {
		x->lo.until = WH_UNTIL_CONFIRMED;
	} else if (wh_cli_parse_int(arg, 1, 1000000, &v)) {
		x->lo.until = WH_UNTIL_COUNT;
		x->lo.count = (uint32_t)v;
	} else {
		return wh_cli_usage_error("build", "--until '%s': not a stopping rule (give a number of builds, good, bad or confirmed)", arg);
	}
	return WH_OK;
}

static enum wh_status build_option(void *self, int c, const char *arg)
{
	struct build_cmd *x = self;
	struct wh_build_loop_options *lo = &x->lo;
	long long v;
	double d;
	switch (c) {
	case WH_OPT_UNTIL: return build_until(x, arg);
	case WH_OPT_MAX_BUILDS:
		if (!wh_cli_parse_int(arg, 1, 1000000, &x->max_builds))
			return wh_cli_usage_error("build", "--max-builds '%s': not an integer from 1 to 1000000 (give a cap such as 100)", arg);
		x->max_builds_given = true;
		break;
	case WH_OPT_ARTIFACTS_DIR: lo->artifacts_dir = arg; break;
	case WH_OPT_FORCE: lo->force = true; break;
	case WH_OPT_ARTIFACTS: return wh_cli_artifact("build", x->artifacts, &lo->n_artifacts, arg);
	case WH_OPT_NO_CONFIRM: lo->confirm = false; break;
	case WH_OPT_MARK_ALL: lo->mark_all = true; break;
	case WH_OPT_MAX_SUSPECTS:
		if (!wh_cli_parse_int(arg, 0, UINT32_MAX, &v))
			return wh_cli_usage_error("build", "--max-suspects '%s': not an integer >= 0 (give a count such as 32; 0: all)", arg);
		lo->max_suspects = (uint32_t)v;
		break;
	case WH_OPT_JSON: lo->json = true; break;
	case WH_OPT_TIMING_ITERATIONS: return wh_cli_timing_option("build", "timing-iterations", arg, &lo->build);
	case WH_OPT_TIMING_TOLERANCE: return wh_cli_timing_option("build", "timing-tolerance", arg, &lo->build);
	case WH_OPT_TIMING_CACHE: lo->build.timing_cache = arg; break;
	case WH_OPT_BLOCK_TACTICS: x->block_path = arg; break;
	case WH_OPT_BUILD_CMD: lo->build_cmd = arg; break;
	case WH_OPT_PIN_CMD: lo->pin_cmd = arg; break;
	case WH_OPT_BUILD_TIMEOUT:
		if (!wh_cli_parse_double(arg, &d) || !isfinite(d) || d <= 0)
			return wh_cli_usage_error("build", "--build-timeout '%s': not a finite number of seconds > 0 (give seconds such as 600)", arg);
		lo->build_timeout_s = d;
		break;
	}
	return WH_OK;
}

static const int builtin_check_opts[] = {WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL, WH_RUN_OPT_ERROR_STAT, WH_RUN_OPT_END};

/* The rules between the loop's options. */
static enum wh_status build_validate_loop(struct build_cmd *x, bool external)
{
	struct wh_build_loop_options *lo = &x->lo;
	if (!x->until_given)
		return wh_cli_usage_error("build", "no stopping rule (give --until N, --until good, --until bad or --until confirmed)");
	if (lo->until != WH_UNTIL_COUNT)
		lo->count = (uint32_t)x->max_builds;
	else if (x->max_builds_given)
		return wh_cli_usage_error("build", "--max-builds goes with --until good|bad|confirmed (--until N already says how many)");
	if (lo->build_cmd && !external)
		return wh_cli_usage_error("build", "--build-cmd needs --check (the built-in check can only run whittle's own builds)");
	if (lo->pin_cmd && !lo->build_cmd)
		return wh_cli_usage_error("build", "--pin-cmd goes with --build-cmd (whittle pins its own builds)");
	if (lo->build_timeout_s > 0 && !lo->build_cmd)
		return wh_cli_usage_error("build", "--build-timeout goes with --build-cmd (whittle's own builds are not killed; use --timeout for the check)");
	if (lo->until == WH_UNTIL_CONFIRMED && (!lo->confirm || (lo->build_cmd && !lo->pin_cmd)))
		return wh_cli_usage_error("build", "--until confirmed needs the swap checks (drop --no-confirm; with --build-cmd, give --pin-cmd)");
	enum wh_status st = wh_cli_artifacts_jobs("build", lo->n_artifacts, x->check.jobs);
	if (st != WH_OK)
		return st;
	if (lo->build_cmd && !strstr(lo->build_cmd, "{tactics}"))
		return wh_cli_usage_error("build", "--build-cmd must write its tactic replay to {tactics} (e.g. --build-cmd 'polygraphy convert {model} --save-tactics {tactics} -o engine.plan')");
	if (lo->pin_cmd && !strstr(lo->pin_cmd, "{tactics}") && strcmp(lo->pin_cmd, "true") && strcmp(lo->pin_cmd, ":"))
		return wh_cli_usage_error("build", "--pin-cmd must load the replay {tactics} (or be `true` when the check pins {tactics} itself)");
	return WH_OK;
}

static enum wh_status build_validate(void *self, const struct wh_cli_args *a)
{
	struct build_cmd *x = self;
	struct wh_build_loop_options *lo = &x->lo;
	enum wh_status st = build_validate_loop(x, a->check != NULL);
	if (st != WH_OK)
		return st;
	if (a->check && !lo->build_cmd && !mentions(a->check, a->n_check, "{tactics}"))
		return wh_cli_usage_error("build", "the check does not use {tactics}, so it cannot see the builds (e.g. --check whittle run {model} --load-tactics {tactics} --compare fp32)");
	if (a->check)
		st = wh_run_opts_refuse(&x->run, builtin_check_opts,
					"belongs to the built-in check, and with --check the check command decides (drop it, or drop --check)");
	lo->need_inputs = mentions(a->check, a->n_check, "{inputs}") || mentions(a->check, a->n_check, "{trt-inputs}") ||
			  (lo->build_cmd && strstr(lo->build_cmd, "{inputs}")) || (lo->pin_cmd && strstr(lo->pin_cmd, "{inputs}"));
	lo->need_golden = mentions(a->check, a->n_check, "{golden}") || mentions(a->check, a->n_check, "{trt-golden}");
	return st;
}

static enum wh_status build(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct build_cmd *x = self;
	struct wh_build_loop_options *lo = &x->lo;
	struct wh_tensor_set none;
	wh_tensor_set_init(&none);
	bool reduced = false;
	enum wh_status st;
	lo->model_path = a->operands[0];
	lo->input_shapes = x->run.input_shapes;
	lo->artifacts = x->artifacts;
	lo->build.seed = x->run.seed;
	lo->compare = x->run.compare;
	lo->jobs = x->check.jobs;
	lo->launch = &x->check.co;
	if (lo->json)
		lo->out = NULL;
	if ((st = wh_cmd_ctx_check(c, a, &x->check)) != WH_OK)
		return st;
	lo->check = c->check;
	lo->check_display = c->check_display;
	/* inputs: whittle's builder and the built-in check run the model; an external builder
	 * and check get them only when they ask for {inputs} */
	bool need_inputs = !lo->build_cmd || !lo->check || lo->need_inputs;
	if ((st = wh_cmd_ctx_load(c, &x->run, lo->model_path, need_inputs ? WH_SAMPLES_ONE : WH_SAMPLES_NONE)) != WH_OK)
		return st;
	const struct wh_tensor_set *inputs = c->samples ? &c->samples[0] : &none;
	if ((st = wh_run_opts_precision(&x->run, c->model, inputs, &reduced)) != WH_OK)
		return st;
	lo->engine = wh_run_opts_engine(&x->run, reduced);
	lo->engine.faulty_tactic = wh_run_opts_faulty_tactic();
	char dflt[64];
	if (!lo->artifacts_dir) {
		/* a fresh folder per run (two runs from one folder never meet in it); the
		 * driver's first progress line names it */
		wh_artifacts_default_dir("build", dflt, sizeof dflt);
		lo->artifacts_dir = dflt;
	}
	if (x->block_path) {
		if ((st = wh_tactic_blocklist_read(x->block_path, &x->block)) != WH_OK)
			return st;
		lo->build.block = &x->block;
	}
	struct wh_build_loop_report rep;
	st = wh_build_loop_run(c->model, inputs, lo, &rep);
	wh_tactic_blocklist_release(&x->block);
	return st;
}

int wh_cmd_build(int argc, char **argv)
{
	struct build_cmd x = {.lo = {.until = WH_UNTIL_COUNT, .confirm = true, .max_suspects = 32,
				     .log = stderr, .out = stdout, .build = {.timing_iterations = 3, .timing_tolerance = 0.05}},
			      .max_builds = 100};
	struct wh_cli_spec spec = {.cmd = "build", .help = build_help, .operands = "one MODEL", .n_operands = 1, .check = true,
				   .check_opts = &x.check, .run_opts = &x.run, .own = build_option, .validate = build_validate,
				   .go = build, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
