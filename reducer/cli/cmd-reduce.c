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
	"  --artifacts FILE         a file the check writes, sorted into DIR/good and DIR/bad\n"
	"  --confirm N              check the original N times first (flaky checks show; default 1)\n"
	"  --json                   machine-readable events on stdout (one JSON object a line)\n"
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

int wh_cmd_reduce(int argc, char **argv)
{
	/* --check takes the rest of the line */
	int check_at = wh_cli_check_at(argc, argv);
	int nargs = check_at >= 0 ? check_at : argc;
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"mode", required_argument, NULL, 'm'},
		{"no-reduce-inputs", no_argument, NULL, 'N'},
		{"no-reduce-outputs", no_argument, NULL, 'P'},
		{"jobs", required_argument, NULL, 'j'},
		{"min-good", required_argument, NULL, 'g'},
		{"load-replay", required_argument, NULL, 'l'},
		{"save-replay", required_argument, NULL, 's'},
		{"artifacts-dir", required_argument, NULL, 'A'},
		{"artifacts", required_argument, NULL, 'a'},
		{"confirm", required_argument, NULL, 'c'},
		{"json", no_argument, NULL, 'J'},
		WH_CLI_CHECK_LONGOPTS,
		{"load-inputs", required_argument, NULL, 'L'},
		{"reference", required_argument, NULL, 'R'},
		{"seed", required_argument, NULL, 'e'},
		{"val-range", required_argument, NULL, 'v'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"atol", required_argument, NULL, 1},
		{"rtol", required_argument, NULL, 2},
		{"check-error-stat", required_argument, NULL, 3},
		{"threads", required_argument, NULL, 't'},
		{"precision", required_argument, NULL, 4},
		{"layer-precisions", required_argument, NULL, 5},
		WH_CALIB_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	struct wh_reduce_options ro = {.mode = WH_SEARCH_DDMIN, .jobs = 1, .reduce_inputs = true, .reduce_outputs = true,
				       .log = stderr, .confirm_runs = 1};
	wh_compare_options_default(&ro.compare);
	struct wh_cli_check_opts cko;
	wh_cli_check_opts_init(&cko);
	const char *artifacts[64];
	int n_artifacts = 0;
	const char *load = NULL, *reference = NULL, *shapes = NULL;
	long long seed = 1, v;
	struct wh_precision_config pc;
	wh_precision_config_init(&pc);
	struct wh_calib_opts calo;
	wh_calib_opts_init(&calo);
	bool reduced = false;
	const char *layer_prec = NULL;
	double lo = 0, hi = 1;
	int c;
	while ((c = getopt_long(nargs, argv, ":ho:j:", longopts, NULL)) != -1) {
		int cr = wh_cli_check_option(&cko, "reduce", c, optarg);
		if (cr < 0)
			return WH_EXIT_USAGE;
		if (cr > 0)
			continue;
		switch (c) {
		case 'o': ro.output_path = optarg; break;
		case 'm':
			if (!strcmp(optarg, "ddmin")) ro.mode = WH_SEARCH_DDMIN;
			else if (!strcmp(optarg, "bisect")) ro.mode = WH_SEARCH_BISECT;
			else if (!strcmp(optarg, "linear")) ro.mode = WH_SEARCH_LINEAR;
			else return wh_cli_usage_error("reduce", "--mode takes ddmin, bisect or linear, not '%s'", optarg);
			break;
		case 'N': ro.reduce_inputs = false; break;
		case 'P': ro.reduce_outputs = false; break;
		case 'j':
			if (!wh_cli_parse_int(optarg, 1, 64, &v))
				return wh_cli_usage_error("reduce", "-j takes 1..64, not '%s'", optarg);
			ro.jobs = (int)v;
			break;
		case 'g': ro.min_good_path = optarg; break;
		case 'l': ro.load_replay = optarg; break;
		case 's': ro.save_replay = optarg; break;
		case 'A': ro.artifacts_dir = optarg; break;
		case 'a':
			if (n_artifacts == 64)
				return wh_cli_usage_error("reduce", "too many --artifacts (64 at most)");
			artifacts[n_artifacts++] = optarg;
			break;
		case 'c':
			if (!wh_cli_parse_int(optarg, 1, 100, &v))
				return wh_cli_usage_error("reduce", "--confirm takes 1..100, not '%s'", optarg);
			ro.confirm_runs = (int)v;
			break;
		case 'J': ro.json = true; break;
		case 'L': load = optarg; break;
		case 'R': reference = optarg; break;
		case 'e':
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX, &seed))
				return wh_cli_usage_error("reduce", "--seed takes a non-negative integer, not '%s'", optarg);
			break;
		case 'v': {
			char *comma = strchr(optarg, ',');
			if (!comma)
				return wh_cli_usage_error("reduce", "--val-range takes LO,HI, not '%s'", optarg);
			*comma = '\0';
			if (!wh_cli_parse_double(optarg, &lo) || !wh_cli_parse_double(comma + 1, &hi) || hi < lo)
				return wh_cli_usage_error("reduce", "--val-range takes LO,HI with LO <= HI");
			break;
		}
		case 'I': shapes = optarg; break;
		case 1:
			if (!wh_cli_parse_double(optarg, &ro.compare.atol) || ro.compare.atol < 0)
				return wh_cli_usage_error("reduce", "--atol takes a non-negative number, not '%s'", optarg);
			break;
		case 2:
			if (!wh_cli_parse_double(optarg, &ro.compare.rtol) || ro.compare.rtol < 0)
				return wh_cli_usage_error("reduce", "--rtol takes a non-negative number, not '%s'", optarg);
			break;
		case 3:
			if (!wh_error_stat_parse(optarg, &ro.compare.stat, &ro.compare.quantile))
				return wh_cli_usage_error("reduce", "--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s'", optarg);
			break;
		case 't':
			if (!wh_cli_parse_int(optarg, 1, 1024, &v))
				return wh_cli_usage_error("reduce", "--threads takes 1..1024, not '%s'", optarg);
			ro.engine.threads = (int)v;
			break;
		case 4:
			if (!wh_precision_parse(optarg, &pc.dflt)) {
				return wh_cli_usage_error("reduce", "--precision takes fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8, not '%s'", optarg);
			}
			reduced |= pc.dflt != WH_PREC_FP32;
			break;
		case 5: layer_prec = optarg; break;
		case 'h': fputs(reduce_help, stdout); return 0;
		default: {
			enum wh_status cst;
			if (wh_calib_opts_parse(&calo, c, optarg, &cst)) {
				if (cst != WH_OK)
					return wh_cli_fail(cst);
				break;
			}
			return wh_cli_bad_option("reduce", c, argv);
		}
		}
	}
	if (optind != nargs - 1)
		return wh_cli_usage_error("reduce", "expects exactly one MODEL before --check (see whittle reduce --help)");
	if (!ro.output_path)
		return wh_cli_usage_error("reduce", "no output path (give -o OUT.onnx)");
	if (!ro.reduce_inputs && !ro.reduce_outputs && ro.mode == WH_SEARCH_BISECT)
		return wh_cli_usage_error("reduce", "--mode bisect with both --no-reduce-inputs and --no-reduce-outputs has nothing to do");
	if (check_at >= 0 && check_at + 1 >= argc)
		return wh_cli_usage_error("reduce", "--check needs a command (e.g. --check ./my-check.sh {model})");
	if (check_at < 0 && wh_cli_check_opts_given(&cko))
		return wh_cli_usage_error("reduce", "check options given without --check (put --check CMD ... last)");
	ro.model_path = argv[optind];
	if (layer_prec) {
		enum wh_status pst = wh_precision_config_parse(&pc, layer_prec);
		if (pst != WH_OK) {
			wh_precision_config_release(&pc);
			return wh_cli_fail(pst);
		}
		reduced = true;
	}
	if (reduced)
		ro.engine.precision = &pc;
	ro.artifacts = artifacts;
	ro.n_artifacts = n_artifacts;
	if (n_artifacts && !ro.artifacts_dir)
		return wh_cli_usage_error("reduce", "--artifacts needs --artifacts-dir");

	struct wh_model *m = NULL;
	struct wh_check *check = NULL;
	struct wh_tensor_set *samples = NULL, *refs = NULL;
	uint32_t n_samples = 0, n_refs = 0;
	char *display = NULL;
	int rc = 0;
	enum wh_status st;
	if (check_at >= 0) {
		wh_cli_check_opts_finish(&cko, argv + check_at + 1, argc - check_at - 1);
		if ((st = wh_check_create(&cko.co, &check)) != WH_OK)
			goto fail;
		display = wh_check_command_line(check, NULL);
		ro.check = check;
		ro.check_display = display;
	}
	if ((st = wh_cli_load_model(ro.model_path, shapes, &m)) != WH_OK)
		goto fail;
	if ((st = wh_cli_load_samples(m, load, (uint64_t)seed, lo, hi, &samples, &n_samples, NULL)) != WH_OK)
		goto fail;
	calo.threads = ro.engine.threads;
	if ((st = wh_calib_opts_apply(&calo, m, &pc, &samples[0])) != WH_OK)
		goto fail;
	if (reference) {
		if ((st = wh_cli_load_samples(NULL, reference, 0, 0, 0, &refs, &n_refs, NULL)) != WH_OK)
			goto fail;
		if (n_refs != n_samples) {
			st = wh_error(WH_ERR_INVALID, "%s: holds %u sample%s of reference values but there are %u input samples (give one folder per sample)",
				      reference, n_refs, n_refs == 1 ? "" : "s", n_samples);
			goto fail;
		}
	}
	struct wh_reduce_data data = {.inputs = samples, .n_samples = n_samples, .reference = refs};
	struct wh_reduce_report rep;
	if ((st = wh_reduce_run(m, &data, &ro, &rep)) != WH_OK)
		goto fail;
	fprintf(stderr, "reduce: %u -> %u layers in %u checks (%u from the cache), %.1f s (whittle's own: %.2f ms per candidate, %.2f s writing reference tensors once); %s; wrote %s\n",
		rep.nodes_before, rep.nodes_after, rep.checks_run, rep.checks_cached, rep.seconds, rep.driver_ms_per_candidate, rep.tensor_write_s,
		rep.one_minimal ? "1-minimal" : "not verified 1-minimal (bisect mode)", ro.output_path);
	if (ro.artifacts_dir)
		fprintf(stderr, "reduce: repro bundle in %s/repro\n", ro.artifacts_dir);
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	for (uint32_t k = 0; samples && k < n_samples; k++)
		wh_tensor_set_release(&samples[k]);
	for (uint32_t k = 0; refs && k < n_refs; k++)
		wh_tensor_set_release(&refs[k]);
	free(samples);
	free(refs);
	free(display);
	wh_check_destroy(check);
	wh_model_destroy(m);
	wh_precision_config_release(&pc);
	wh_calib_opts_release(&calo);
	return rc;
}
