#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
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
	"                           (default whittle-triage)\n"
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
	"  --shell                  run the check command through /bin/sh -c\n"
	"  --fail-regex RE          the check fails when RE (PCRE2) matches its output (repeatable)\n"
	"  --fail-code N            with --fail-regex: also require one of these exit codes; alone:\n"
	"                           the check fails on these exit codes only (repeatable)\n"
	"  --ignore-fail-code N     a non-zero exit that does not mean failure (repeatable)\n"
	"  --timeout S              kill the check (and its children) after S seconds\n"
	"  --timeout-is V           skip (default), fail or pass\n"
	WH_CLI_LAUNCHER_HELP
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

static int bad(const char *fmt, const char *arg)
{
	return wh_cli_usage_error("triage", fmt, arg);
}

int wh_cmd_triage(int argc, char **argv)
{
	/* --check takes the rest of the line */
	int check_at = wh_cli_check_at(argc, argv);
	int nargs = check_at >= 0 ? check_at : argc;
	static const struct option longopts[] = {
		{"precision", required_argument, NULL, 'p'},
		{"artifacts-dir", required_argument, NULL, 'A'},
		{"builds", required_argument, NULL, 'B'},
		{"no-precision-search", no_argument, NULL, 'N'},
		{"no-graphviz", no_argument, NULL, 'G'},
		{"json", no_argument, NULL, 'J'},
		{"timing-iterations", required_argument, NULL, 'n'},
		{"timing-tolerance", required_argument, NULL, 'o'},
		WH_CLI_CHECK_LONGOPTS,
		{"atol", required_argument, NULL, 1},
		{"rtol", required_argument, NULL, 2},
		{"check-error-stat", required_argument, NULL, 3},
		{"load-inputs", required_argument, NULL, 'L'},
		{"seed", required_argument, NULL, 'e'},
		{"val-range", required_argument, NULL, 'v'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"threads", required_argument, NULL, 't'},
		{"help", no_argument, NULL, 'h'},
		WH_CALIB_LONGOPTS,
		{0, 0, 0, 0},
	};
	struct wh_triage_options to = {.precision = WH_PREC_FP16, .builds = 5, .artifacts_dir = "whittle-triage", .graphviz = true,
				       .precision_search = true, .log = stderr, .out = stdout};
	to.build.timing_iterations = 3;
	to.build.timing_tolerance = 0.05;
	wh_compare_options_default(&to.compare);
	struct wh_cli_check_opts cko;
	wh_cli_check_opts_init(&cko);
	const char *load = NULL, *shapes = NULL;
	long long seed = 1, v;
	double vlo = 0, vhi = 1, d;
	struct wh_calib_opts calib;
	wh_calib_opts_init(&calib);
	struct wh_precision_config calib_cfg;
	wh_precision_config_init(&calib_cfg);
	struct wh_model *m = NULL;
	struct wh_tensor_set inputs;
	wh_tensor_set_init(&inputs);
	enum wh_status st = WH_OK;
	int rc = WH_EXIT_OK;
	char self[PATH_MAX];
	int c;
	while ((c = getopt_long(nargs, argv, ":h", longopts, NULL)) != -1) {
		int cr = wh_cli_check_option(&cko, "triage", c, optarg);
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
		case 'p':
			if (!wh_precision_parse(optarg, &to.precision)) {
				rc = bad("--precision takes fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8, not '%s'", optarg);
				goto out;
			}
			break;
		case 'A': to.artifacts_dir = optarg; break;
		case 'B':
			if (!wh_cli_parse_int(optarg, 1, 10000, &v)) {
				rc = bad("--builds takes 1..10000, not '%s'", optarg);
				goto out;
			}
			to.builds = (uint32_t)v;
			break;
		case 'N': to.precision_search = false; break;
		case 'G': to.graphviz = false; break;
		case 'J': to.json = true; break;
		case 'n':
			if (!wh_cli_parse_int(optarg, 1, 64, &v)) {
				rc = bad("--timing-iterations takes 1..64, not '%s'", optarg);
				goto out;
			}
			to.build.timing_iterations = (int)v;
			break;
		case 'o':
			if (!wh_cli_parse_timing_tolerance(optarg, &d)) {
				rc = bad("--timing-tolerance takes a fraction >= 0 (0.05: within 5 %% of the fastest) or inf, not '%s'", optarg);
				goto out;
			}
			to.build.timing_tolerance = d;
			break;
		case 1:
			if (!wh_cli_parse_double(optarg, &to.compare.atol) || !(to.compare.atol >= 0)) {
				rc = bad("--atol takes a non-negative number, not '%s'", optarg);
				goto out;
			}
			break;
		case 2:
			if (!wh_cli_parse_double(optarg, &to.compare.rtol) || !(to.compare.rtol >= 0)) {
				rc = bad("--rtol takes a non-negative number, not '%s'", optarg);
				goto out;
			}
			break;
		case 3:
			if (!wh_error_stat_parse(optarg, &to.compare.stat, &to.compare.quantile)) {
				rc = bad("--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s'", optarg);
				goto out;
			}
			break;
		case 'L': load = optarg; break;
		case 'e':
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX, &seed)) {
				rc = bad("--seed takes a non-negative integer, not '%s'", optarg);
				goto out;
			}
			break;
		case 'v': {
			char *comma = strchr(optarg, ',');
			if (!comma) {
				rc = bad("--val-range takes LO,HI, not '%s'", optarg);
				goto out;
			}
			*comma = '\0';
			if (!wh_cli_parse_double(optarg, &vlo) || !wh_cli_parse_double(comma + 1, &vhi) || vhi < vlo) {
				rc = bad("--val-range takes LO,HI with LO <= HI%s", "");
				goto out;
			}
			break;
		}
		case 'I': shapes = optarg; break;
		case 't':
			if (!wh_cli_parse_int(optarg, 1, 1024, &v)) {
				rc = bad("--threads takes 1..1024, not '%s'", optarg);
				goto out;
			}
			to.threads = (int)v;
			calib.threads = (int)v;
			break;
		case 'h': fputs(triage_help, stdout); goto out;
		default: rc = wh_cli_bad_option("triage", c, argv); goto out;
		}
	}
	if (optind != nargs - 1) {
		rc = bad("expects exactly one MODEL before --check (see whittle triage --help)%s", "");
		goto out;
	}
	if (check_at >= 0 && check_at + 1 >= argc) {
		rc = bad("--check needs a command (e.g. --check ./my-check.sh {model} {inputs})%s", "");
		goto out;
	}
	if (check_at < 0 && wh_cli_check_opts_given(&cko)) {
		rc = bad("check options given without --check (put --check CMD ... last)%s", "");
		goto out;
	}
	to.model_path = argv[optind];
	if (check_at >= 0) {
		wh_cli_check_opts_finish(&cko, argv + check_at + 1, argc - check_at - 1);
		to.check = &cko.co;
	}
	const char *faulty = getenv("WHITTLE_FAULTY_TACTIC");
	to.faulty_tactic = faulty && *faulty ? faulty : NULL;
	/* command.sh is checked with this very binary */
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len > 0) {
		self[len] = '\0';
		to.whittle_path = self;
	}
	if (to.json)
		to.out = NULL;
	if ((st = wh_cli_load_model(to.model_path, shapes, &m)) != WH_OK)
		goto fail;
	if (load && (st = wh_tensor_set_read_dir(load, NULL, &inputs)) != WH_OK)
		goto fail;
	if ((st = wh_cli_random_inputs(m, (uint64_t)seed, vlo, vhi, &inputs)) != WH_OK)
		goto fail;
	calib_cfg.dflt = to.precision;
	if ((st = wh_calib_opts_apply(&calib, m, &calib_cfg, &inputs)) != WH_OK)
		goto fail;
	to.calib = calib_cfg.calib;
	struct wh_triage_report rep;
	if ((st = wh_triage_run(m, &inputs, &to, &rep)) != WH_OK)
		goto fail;
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	wh_tensor_set_release(&inputs);
	wh_model_destroy(m);
	wh_precision_config_release(&calib_cfg);
	wh_calib_opts_release(&calib);
	return rc;
}
