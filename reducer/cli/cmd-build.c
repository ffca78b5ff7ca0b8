#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
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
	"  --artifacts-dir DIR      where replays, fixed.json and report.md go (default whittle-build)\n"
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
	"  --shell                  run the check command through /bin/sh -c\n"
	"  --fail-regex RE          the check fails when RE (PCRE2) matches its output (repeatable)\n"
	"  --fail-code N            with --fail-regex: also require one of these exit codes; alone:\n"
	"                           the check fails on these exit codes only (repeatable)\n"
	"  --ignore-fail-code N     a non-zero exit that does not mean failure (repeatable)\n"
	"  --timeout S              kill the check (and its children) after S seconds\n"
	"  --timeout-is V           skip (default), fail or pass\n"
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

int wh_cmd_build(int argc, char **argv)
{
	/* --check takes the rest of the line */
	int check_at = wh_cli_check_at(argc, argv);
	int nargs = check_at >= 0 ? check_at : argc;
	static const struct option longopts[] = {
		{"until", required_argument, NULL, 'u'},
		{"max-builds", required_argument, NULL, 'B'},
		{"artifacts-dir", required_argument, NULL, 'A'},
		{"artifacts", required_argument, NULL, 'a'},
		{"no-confirm", no_argument, NULL, 'N'},
		{"mark-all", no_argument, NULL, 'M'},
		{"max-suspects", required_argument, NULL, 'x'},
		{"json", no_argument, NULL, 'J'},
		{"seed", required_argument, NULL, 'e'},
		{"timing-iterations", required_argument, NULL, 'n'},
		{"timing-tolerance", required_argument, NULL, 'o'},
		{"timing-cache", required_argument, NULL, 'C'},
		{"build-cmd", required_argument, NULL, 'b'},
		{"pin-cmd", required_argument, NULL, 'p'},
		{"build-timeout", required_argument, NULL, 'W'},
		WH_CLI_CHECK_LONGOPTS,
		{"precision", required_argument, NULL, 4},
		{"layer-precisions", required_argument, NULL, 5},
		{"load-inputs", required_argument, NULL, 'L'},
		{"val-range", required_argument, NULL, 'v'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"atol", required_argument, NULL, 1},
		{"rtol", required_argument, NULL, 2},
		{"check-error-stat", required_argument, NULL, 3},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		WH_CALIB_LONGOPTS,
		{0, 0, 0, 0},
	};
	struct wh_build_loop_options lo = {.until = WH_UNTIL_COUNT, .artifacts_dir = "whittle-build", .confirm = true,
					   .max_suspects = 32, .log = stderr, .out = stdout};
	lo.build.timing_iterations = 3;
	lo.build.timing_tolerance = 0.05;
	wh_compare_options_default(&lo.compare);
	struct wh_cli_check_opts cko;
	wh_cli_check_opts_init(&cko);
	const char *artifacts[64];
	int n_artifacts = 0;
	const char *load = NULL, *shapes = NULL, *layer_prec = NULL;
	long long seed = 1, v, max_builds = 100;
	bool until_given = false, max_builds_given = false, reduced = false;
	double vlo = 0, vhi = 1, d;
	struct wh_precision_config pc;
	wh_precision_config_init(&pc);
	struct wh_calib_opts calib;
	wh_calib_opts_init(&calib);
	struct wh_model *m = NULL;
	struct wh_check *check = NULL;
	char *display = NULL;
	struct wh_tensor_set inputs;
	wh_tensor_set_init(&inputs);
	enum wh_status st = WH_OK;
	int rc = WH_EXIT_OK;
	int c;
	while ((c = getopt_long(nargs, argv, ":h", longopts, NULL)) != -1) {
		int cr = wh_cli_check_option(&cko, "build", c, optarg);
		if (cr < 0) {
			rc = WH_EXIT_USAGE;
			goto out;
		}
		if (cr > 0)
			continue;
		if (wh_calib_opts_parse(&calib, c, optarg, &st)) {
			if (st != WH_OK) {
				rc = wh_cli_fail(st);
				goto out;
			}
			continue;
		}
		switch (c) {
		case 'u':
			until_given = true;
			if (!strcmp(optarg, "good")) {
				lo.until = WH_UNTIL_GOOD;
			} else if (!strcmp(optarg, "bad")) {
				lo.until = WH_UNTIL_BAD;
			} else if (!strcmp(optarg, "confirmed")) {
				lo.until = WH_UNTIL_CONFIRMED;
			} else if (wh_cli_parse_int(optarg, 1, 1000000, &v)) {
				lo.until = WH_UNTIL_COUNT;
				lo.count = (uint32_t)v;
			} else {
				rc = wh_cli_usage_error("build", "--until takes a number of builds, good, bad or confirmed, not '%s'", optarg);
				goto out;
			}
			break;
		case 'B':
			if (!wh_cli_parse_int(optarg, 1, 1000000, &max_builds)) {
				rc = wh_cli_usage_error("build", "--max-builds takes 1..1000000, not '%s'", optarg);
				goto out;
			}
			max_builds_given = true;
			break;
		case 'A': lo.artifacts_dir = optarg; break;
		case 'a':
			if (n_artifacts == 64) {
				rc = wh_cli_usage_error("build", "too many --artifacts (64 at most)");
				goto out;
			}
			artifacts[n_artifacts++] = optarg;
			break;
		case 'N': lo.confirm = false; break;
		case 'M': lo.mark_all = true; break;
		case 'x':
			if (!wh_cli_parse_int(optarg, 0, UINT32_MAX, &v)) {
				rc = wh_cli_usage_error("build", "--max-suspects takes a non-negative integer, not '%s'", optarg);
				goto out;
			}
			lo.max_suspects = (uint32_t)v;
			break;
		case 'J': lo.json = true; break;
		case 'e':
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX / 2, &seed)) {
				rc = wh_cli_usage_error("build", "--seed takes a non-negative integer, not '%s'", optarg);
				goto out;
			}
			break;
		case 'n':
			if (!wh_cli_parse_int(optarg, 1, 64, &v)) {
				rc = wh_cli_usage_error("build", "--timing-iterations takes 1..64, not '%s'", optarg);
				goto out;
			}
			lo.build.timing_iterations = (int)v;
			break;
		case 'o':
			if (!wh_cli_parse_timing_tolerance(optarg, &d)) {
				rc = wh_cli_usage_error("build", "--timing-tolerance takes a fraction >= 0 (0.05: within 5 %% of the fastest) or inf, not '%s'", optarg);
				goto out;
			}
			lo.build.timing_tolerance = d;
			break;
		case 'C': lo.build.timing_cache = optarg; break;
		case 'b': lo.build_cmd = optarg; break;
		case 'p': lo.pin_cmd = optarg; break;
		case 'W':
			if (!wh_cli_parse_double(optarg, &d) || !(d > 0)) {
				rc = wh_cli_usage_error("build", "--build-timeout takes seconds > 0, not '%s'", optarg);
				goto out;
			}
			lo.build_timeout_s = d;
			break;
		case 4:
			if (!wh_precision_parse(optarg, &pc.dflt)) {
				rc = wh_cli_usage_error("build", "--precision takes fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8, not '%s'", optarg);
				goto out;
			}
			reduced |= pc.dflt != WH_PREC_FP32;
			break;
		case 5: layer_prec = optarg; break;
		case 'L': load = optarg; break;
		case 'v': {
			char *comma = strchr(optarg, ',');
			if (!comma) {
				rc = wh_cli_usage_error("build", "--val-range takes LO,HI, not '%s'", optarg);
				goto out;
			}
			*comma = '\0';
			if (!wh_cli_parse_double(optarg, &vlo) || !wh_cli_parse_double(comma + 1, &vhi) || vhi < vlo) {
				rc = wh_cli_usage_error("build", "--val-range takes LO,HI with LO <= HI");
				goto out;
			}
			break;
		}
		case 'I': shapes = optarg; break;
		case 1:
			if (!wh_cli_parse_double(optarg, &lo.compare.atol) || lo.compare.atol < 0) {
				rc = wh_cli_usage_error("build", "--atol takes a non-negative number, not '%s'", optarg);
				goto out;
			}
			break;
		case 2:
			if (!wh_cli_parse_double(optarg, &lo.compare.rtol) || lo.compare.rtol < 0) {
				rc = wh_cli_usage_error("build", "--rtol takes a non-negative number, not '%s'", optarg);
				goto out;
			}
			break;
		case 3:
			if (!wh_error_stat_parse(optarg, &lo.compare.stat, &lo.compare.quantile)) {
				rc = wh_cli_usage_error("build", "--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s'", optarg);
				goto out;
			}
			break;
		case 't':
			if (!wh_cli_parse_int(optarg, 1, 1024, &v)) {
				rc = wh_cli_usage_error("build", "--threads takes 1..1024, not '%s'", optarg);
				goto out;
			}
			lo.engine.threads = (int)v;
			calib.threads = (int)v;
			break;
		case 'h': fputs(build_help, stdout); goto out;
		default: rc = wh_cli_bad_option("build", c, argv); goto out;
		}
	}
	if (optind != nargs - 1) {
		rc = wh_cli_usage_error("build", "expects exactly one MODEL before --check (see whittle build --help)");
		goto out;
	}
	if (!until_given) {
		rc = wh_cli_usage_error("build", "no stopping rule (give --until N, --until good, --until bad or --until confirmed)");
		goto out;
	}
	if (lo.until != WH_UNTIL_COUNT)
		lo.count = (uint32_t)max_builds;
	else if (max_builds_given) {
		rc = wh_cli_usage_error("build", "--max-builds goes with --until good|bad|confirmed (--until N already says how many)");
		goto out;
	}
	if (check_at >= 0 && check_at + 1 >= argc) {
		rc = wh_cli_usage_error("build", "--check needs a command (e.g. --check whittle run {model} --load-tactics {tactics} --compare fp32)");
		goto out;
	}
	if (check_at < 0 && wh_cli_check_opts_given(&cko)) {
		rc = wh_cli_usage_error("build", "check options given without --check (put --check CMD ... last)");
		goto out;
	}
	if (lo.build_cmd && check_at < 0) {
		rc = wh_cli_usage_error("build", "--build-cmd needs --check (the built-in check can only run whittle's own builds)");
		goto out;
	}
	if (lo.pin_cmd && !lo.build_cmd) {
		rc = wh_cli_usage_error("build", "--pin-cmd goes with --build-cmd (whittle pins its own builds)");
		goto out;
	}
	if (lo.until == WH_UNTIL_CONFIRMED && (!lo.confirm || (lo.build_cmd && !lo.pin_cmd))) {
		rc = wh_cli_usage_error("build", "--until confirmed needs the swap checks (drop --no-confirm; with --build-cmd, give --pin-cmd)");
		goto out;
	}
	if (lo.build_cmd && !strstr(lo.build_cmd, "{tactics}")) {
		rc = wh_cli_usage_error("build", "--build-cmd must write its tactic replay to {tactics} (e.g. --build-cmd 'polygraphy convert {model} --save-tactics {tactics} -o engine.plan')");
		goto out;
	}
	if (lo.pin_cmd && !strstr(lo.pin_cmd, "{tactics}") && strcmp(lo.pin_cmd, "true") && strcmp(lo.pin_cmd, ":")) {
		rc = wh_cli_usage_error("build", "--pin-cmd must load the replay {tactics} (or be `true` when the check pins {tactics} itself)");
		goto out;
	}
	char **cargv = check_at >= 0 ? argv + check_at + 1 : NULL;
	int cargc = check_at >= 0 ? argc - check_at - 1 : 0;
	if (check_at >= 0 && !lo.build_cmd && !mentions(cargv, cargc, "{tactics}")) {
		rc = wh_cli_usage_error("build", "the check does not use {tactics}, so it cannot see the builds (e.g. --check whittle run {model} --load-tactics {tactics} --compare fp32)");
		goto out;
	}
	lo.model_path = argv[optind];
	lo.input_shapes = shapes;
	lo.artifacts = artifacts;
	lo.n_artifacts = n_artifacts;
	lo.need_inputs = mentions(cargv, cargc, "{inputs}") || (lo.build_cmd && strstr(lo.build_cmd, "{inputs}")) ||
			 (lo.pin_cmd && strstr(lo.pin_cmd, "{inputs}"));
	lo.need_golden = mentions(cargv, cargc, "{golden}");
	lo.build.seed = (uint64_t)seed;
	if (lo.json)
		lo.out = NULL;
	const char *faulty = getenv("WHITTLE_FAULTY_TACTIC");
	lo.engine.faulty_tactic = faulty && *faulty ? faulty : NULL;
	if (layer_prec) {
		if ((st = wh_precision_config_parse(&pc, layer_prec)) != WH_OK)
			goto fail;
		reduced = true;
	}
	if (reduced)
		lo.engine.precision = &pc;
	if (check_at >= 0) {
		wh_cli_check_opts_finish(&cko, cargv, cargc);
		if ((st = wh_check_create(&cko.co, &check)) != WH_OK)
			goto fail;
		display = wh_check_command_line(check, NULL);
		lo.check = check;
		lo.check_display = display;
	}
	if ((st = wh_cli_load_model(lo.model_path, shapes, &m)) != WH_OK)
		goto fail;
	/* inputs: whittle's builder and the built-in check run the model; an external builder
	 * and check get them only when they ask for {inputs} */
	if (!lo.build_cmd || !lo.check || lo.need_inputs) {
		if (load && (st = wh_tensor_set_read_dir(load, NULL, &inputs)) != WH_OK)
			goto fail;
		if ((st = wh_cli_random_inputs(m, (uint64_t)seed, vlo, vhi, &inputs)) != WH_OK)
			goto fail;
	}
	if (reduced && (st = wh_calib_opts_apply(&calib, m, &pc, &inputs)) != WH_OK)
		goto fail;
	struct wh_build_loop_report rep;
	if ((st = wh_build_loop_run(m, &inputs, &lo, &rep)) != WH_OK)
		goto fail;
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	wh_tensor_set_release(&inputs);
	free(display);
	wh_check_destroy(check);
	wh_model_destroy(m);
	wh_calib_opts_release(&calib);
	wh_precision_config_release(&pc);
	return rc;
}
