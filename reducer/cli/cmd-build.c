#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"
#include "reducer/driver-util.h"
#include "reducer/builds.h"

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
	"tensors, {golden} the FP32 outputs, {precisions} the layer precisions file.\n\n"
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
	"  --val-range LO,HI        range of generated inputs (default 0,1)\n"
	"  --input-shapes S         bind dynamic input dimensions, e.g. x:1x3x640x640\n"
	"  --atol X, --rtol X       tolerances of the built-in check (default 1e-5 each)\n"
	"  --check-error-stat S     elemwise (default), max, mean, median, quantile[=Q]\n"
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

enum {
	OPT_UNTIL = WH_CLI_OPT_BASE,
	OPT_MAX_BUILDS,
	OPT_ARTIFACTS_DIR,
	OPT_FORCE,
	OPT_ARTIFACTS,
	OPT_NO_CONFIRM,
	OPT_MARK_ALL,
	OPT_MAX_SUSPECTS,
	OPT_JSON,
	OPT_TIMING_ITERATIONS,
	OPT_TIMING_TOLERANCE,
	OPT_TIMING_CACHE,
	OPT_BUILD_CMD,
	OPT_PIN_CMD,
	OPT_BUILD_TIMEOUT,
};

struct build_cmd {
	struct wh_build_loop_options lo;
	const char *artifacts[64];
	long long max_builds;
	bool until_given, max_builds_given;
	struct wh_run_opts run;
	struct wh_cli_check_opts check;
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

static enum wh_status build_option(void *ctx, int c, const char *arg)
{
	struct build_cmd *x = ctx;
	struct wh_build_loop_options *lo = &x->lo;
	long long v;
	double d;
	switch (c) {
	case OPT_UNTIL: return build_until(x, arg);
	case OPT_MAX_BUILDS:
		if (!wh_cli_parse_int(arg, 1, 1000000, &x->max_builds))
			return wh_cli_usage_error("build", "--max-builds '%s': not an integer from 1 to 1000000 (give a cap such as 100)", arg);
		x->max_builds_given = true;
		break;
	case OPT_ARTIFACTS_DIR: lo->artifacts_dir = arg; break;
	case OPT_FORCE: lo->force = true; break;
	case OPT_ARTIFACTS:
		if (lo->n_artifacts == 64)
			return wh_cli_usage_error("build", "too many --artifacts (64 at most; have the check write them into one folder)");
		x->artifacts[lo->n_artifacts++] = arg;
		break;
	case OPT_NO_CONFIRM: lo->confirm = false; break;
	case OPT_MARK_ALL: lo->mark_all = true; break;
	case OPT_MAX_SUSPECTS:
		if (!wh_cli_parse_int(arg, 0, UINT32_MAX, &v))
			return wh_cli_usage_error("build", "--max-suspects '%s': not an integer >= 0 (give a count such as 32; 0: all)", arg);
		lo->max_suspects = (uint32_t)v;
		break;
	case OPT_JSON: lo->json = true; break;
	case OPT_TIMING_ITERATIONS: return wh_cli_timing_option("build", "timing-iterations", arg, &lo->build);
	case OPT_TIMING_TOLERANCE: return wh_cli_timing_option("build", "timing-tolerance", arg, &lo->build);
	case OPT_TIMING_CACHE: lo->build.timing_cache = arg; break;
	case OPT_BUILD_CMD: lo->build_cmd = arg; break;
	case OPT_PIN_CMD: lo->pin_cmd = arg; break;
	case OPT_BUILD_TIMEOUT:
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
	if (lo->build_cmd && !strstr(lo->build_cmd, "{tactics}"))
		return wh_cli_usage_error("build", "--build-cmd must write its tactic replay to {tactics} (e.g. --build-cmd 'polygraphy convert {model} --save-tactics {tactics} -o engine.plan')");
	if (lo->pin_cmd && !strstr(lo->pin_cmd, "{tactics}") && strcmp(lo->pin_cmd, "true") && strcmp(lo->pin_cmd, ":"))
		return wh_cli_usage_error("build", "--pin-cmd must load the replay {tactics} (or be `true` when the check pins {tactics} itself)");
	return WH_OK;
}

static enum wh_status build_validate(struct build_cmd *x, const struct wh_cli_args *a)
{
	struct wh_build_loop_options *lo = &x->lo;
	enum wh_status st = build_validate_loop(x, a->check != NULL);
	if (st != WH_OK)
		return st;
	if (a->check && !lo->build_cmd && !mentions(a->check, a->n_check, "{tactics}"))
		return wh_cli_usage_error("build", "the check does not use {tactics}, so it cannot see the builds (e.g. --check whittle run {model} --load-tactics {tactics} --compare fp32)");
	if (a->check)
		st = wh_run_opts_refuse(&x->run, builtin_check_opts,
					"belongs to the built-in check, and with --check the check command decides (drop it, or drop --check)");
	lo->need_inputs = mentions(a->check, a->n_check, "{inputs}") || (lo->build_cmd && strstr(lo->build_cmd, "{inputs}")) ||
			  (lo->pin_cmd && strstr(lo->pin_cmd, "{inputs}"));
	lo->need_golden = mentions(a->check, a->n_check, "{golden}");
	return st;
}

static enum wh_status build(struct build_cmd *x, const char *model_path, bool external)
{
	struct wh_build_loop_options *lo = &x->lo;
	struct wh_model *m = NULL;
	struct wh_check *check = NULL;
	char *display = NULL;
	struct wh_tensor_set inputs;
	wh_tensor_set_init(&inputs);
	bool reduced = false;
	enum wh_status st = WH_OK;
	lo->model_path = model_path;
	lo->input_shapes = x->run.input_shapes;
	lo->artifacts = x->artifacts;
	lo->build.seed = x->run.seed;
	lo->compare = x->run.compare;
	if (lo->json)
		lo->out = NULL;
	if (external) {
		if ((st = wh_check_create(&x->check.co, &check)) != WH_OK)
			goto out;
		display = wh_check_command_line(check, NULL);
		lo->check = check;
		lo->check_display = display;
	}
	if ((st = wh_run_opts_load_model(&x->run, model_path, &m)) != WH_OK)
		goto out;
	/* inputs: whittle's builder and the built-in check run the model; an external builder
	 * and check get them only when they ask for {inputs} */
	if ((!lo->build_cmd || !lo->check || lo->need_inputs) && (st = wh_run_opts_load_sample(&x->run, m, &inputs)) != WH_OK)
		goto out;
	if ((st = wh_run_opts_precision(&x->run, m, &inputs, &reduced)) != WH_OK)
		goto out;
	lo->engine = wh_run_opts_engine(&x->run, reduced);
	lo->engine.faulty_tactic = wh_run_opts_faulty_tactic();
	struct wh_build_loop_report rep;
	st = wh_build_loop_run(m, &inputs, lo, &rep);
out:
	wh_tensor_set_release(&inputs);
	free(display);
	wh_check_destroy(check);
	wh_model_destroy(m);
	return st;
}

int wh_cmd_build(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"until", required_argument, NULL, OPT_UNTIL},
		{"max-builds", required_argument, NULL, OPT_MAX_BUILDS},
		{"artifacts-dir", required_argument, NULL, OPT_ARTIFACTS_DIR},
		{"force", no_argument, NULL, OPT_FORCE},
		{"artifacts", required_argument, NULL, OPT_ARTIFACTS},
		{"no-confirm", no_argument, NULL, OPT_NO_CONFIRM},
		{"mark-all", no_argument, NULL, OPT_MARK_ALL},
		{"max-suspects", required_argument, NULL, OPT_MAX_SUSPECTS},
		{"json", no_argument, NULL, OPT_JSON},
		{"timing-iterations", required_argument, NULL, OPT_TIMING_ITERATIONS},
		{"timing-tolerance", required_argument, NULL, OPT_TIMING_TOLERANCE},
		{"timing-cache", required_argument, NULL, OPT_TIMING_CACHE},
		{"build-cmd", required_argument, NULL, OPT_BUILD_CMD},
		{"pin-cmd", required_argument, NULL, OPT_PIN_CMD},
		{"build-timeout", required_argument, NULL, OPT_BUILD_TIMEOUT},
		WH_CLI_CHECK_LONGOPTS,
		WH_RUN_LONGOPTS,
		WH_RUN_LAYER_PRECISIONS_LONGOPTS,
		WH_CLI_HELP_LONGOPTS,
	};
	struct build_cmd x = {.lo = {.until = WH_UNTIL_COUNT, .confirm = true, .max_suspects = 32,
				     .log = stderr, .out = stdout, .build = {.timing_iterations = 3, .timing_tolerance = 0.05}},
			      .max_builds = 100};
	wh_run_opts_init(&x.run, "build", WH_PREC_FP32);
	wh_cli_check_opts_init(&x.check);
	struct wh_cli_spec spec = {.cmd = "build", .help = build_help, .longopts = longopts, .operands = "one MODEL", .n_operands = 1,
				   .check = true, .check_opts = &x.check, .run_opts = &x.run, .own = build_option, .ctx = &x};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	char dflt[64];
	if (st == WH_OK && !a.help && (st = build_validate(&x, &a)) == WH_OK) {
		if (!x.lo.artifacts_dir) {
			/* a fresh folder per run (two runs from one folder never meet in it); the
		 * driver's first progress line names it */
			wh_artifacts_default_dir("build", dflt, sizeof dflt);
			x.lo.artifacts_dir = dflt;
		}
		st = build(&x, a.operands[0], a.check != NULL);
	}
	wh_run_opts_release(&x.run);
	return wh_cli_exit(st);
}
