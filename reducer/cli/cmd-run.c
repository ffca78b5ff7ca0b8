#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "executor/builder.h"
#include "executor/compare.h"
#include "executor/executor.h"
#include "executor/precision.h"
#include <jansson.h>
#include <xxhash.h>
#include "graph/tensor.h"
#include "graph/hash.h"
#include "graph/tensor-file.h"
#include "graph/topo.h"
#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "graph/os.h"

static const char run_help[] =
	"usage: whittle run MODEL [options]\n\n"
	"Runs MODEL on whittle's embedded executor.\n\n"
	"inputs:\n"
	"  --load-inputs DIR       read inputs from a folder of .pb/.npy tensors (by name, or input_<k>.pb)\n"
	"  --seed N                seed of the generated random inputs (default 1)\n"
	"  --val-range LO,HI       range of generated inputs (default 0,1)\n"
	"  --input-shapes S        bind dynamic input dimensions, e.g. x:1x3x640x640\n"
	"  --save-inputs DIR       write the inputs used\n"
	"outputs:\n"
	"  --save-outputs DIR      write the outputs (every tensor with --mark-all)\n"
	"  --mark-all              make every tensor an output (does not change what is computed)\n"
	"  --validate              fail when an output holds NaN or Inf, naming the first such tensor\n"
	"precision:\n"
	"  --precision P           fp32 (default), tf32, fp16, bf16, fp8, fp8e5m2, int8 for every float layer\n"
	"  --layer-precisions S    per-layer NAME:P[/OUT],... or a JSON file (docs/formats.md)\n"
	"  --fp16-accumulate       fp16 MatMul/Gemm/Conv layers accumulate in fp16 (their fp16acc tactic)\n"
	WH_CALIB_HELP
	"comparison:\n"
	"  --compare DIR|fp32      compare the outputs with the tensors of DIR (by name), or with an FP32\n"
	"                          run of the same model in the same process\n"
	"  --json                  print the comparison as JSON instead of a table\n"
	"  --report FILE           also write the comparison table (markdown) to FILE\n"
	"  --atol X, --rtol X      tolerances (default 1e-5 each); an element fails when both are exceeded\n"
	"  --check-error-stat S    elemwise (default), max, mean, median, quantile[=Q]\n"
	"  --show-histogram        print an error histogram per compared tensor\n"
	"tactics:\n"
	"  --load-tactics F        pin every layer's tactic to the replay F (whittle's format, or\n"
	"                          Polygraphy's for layers named alike); see docs/formats.md\n"
	"  --strict-tactics        with --load-tactics: a layer missing from F is an error (default: warning)\n"
	"  --save-tactics F        build first (time each layer's eligible tactics, keep the fastest),\n"
	"                          write the replay to F, then run that build\n"
	"  --timing-cache F        with --save-tactics: reuse and update measured times\n"
	"  --timing-iterations N   with --save-tactics: runs per tactic, median kept (default 3)\n"
	"  --timing-tolerance X    with --save-tactics: tactics within X (a fraction) of the fastest are\n"
	"                          equally fast and --build-seed picks among them (default 0.05)\n"
	"  --build-seed N          with --save-tactics: the build's seed (default 0)\n"
	"  WHITTLE_FAULTY_TACTIC=<tactic>[:<layer>] in the environment makes that tactic corrupt its\n"
	"  output (fault injection to test `whittle build`; off by default)\n"
	"execution:\n"
	"  --threads N             worker threads (default: all cores); results do not depend on it\n"
	"  --iterations N          time N runs after a warm-up and print `median_ms <x>`\n"
	"  --repeat N              run N times and check that every output (every tensor with\n"
	"                          --mark-all) is bit-identical across runs (XXH3), naming any that differs\n"
	"  --hash-outputs          print `xxh3 <tensor> <hash>` for every output\n"
	"exit status: 0 pass, 1 a comparison or validation failed, 2 usage, 3 bad input\n";

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}


/* A tensor's bytes, or for a sequence its items' hashes in order (an empty optional: a
 * constant); strings are not hashed. */
static uint64_t value_hash(const struct wh_tensor *t)
{
	if (t->kind == WH_VALUE_SEQUENCE) {
		uint32_t n = wh_seq_len(t);
		uint64_t *hs = malloc(((size_t)n + 1) * sizeof *hs);
		if (!hs)
			return 0;
		hs[0] = n;
		for (uint32_t i = 0; i < n; i++)
			hs[i + 1] = value_hash(wh_seq_item(t, i));
		uint64_t h = XXH3_64bits(hs, ((size_t)n + 1) * sizeof *hs);
		free(hs);
		return h;
	}
	if (t->kind == WH_VALUE_NONE || t->dtype == WH_DT_STRING)
		return 0;
	return XXH3_64bits(t->data, wh_tensor_nbytes(t));
}

int wh_cmd_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"load-inputs", required_argument, NULL, 'L'},
		{"seed", required_argument, NULL, 's'},
		{"val-range", required_argument, NULL, 'r'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"save-inputs", required_argument, NULL, 'S'},
		{"save-outputs", required_argument, NULL, 'O'},
		{"mark-all", no_argument, NULL, 'M'},
		{"validate", no_argument, NULL, 'V'},
		{"compare", required_argument, NULL, 'C'},
		{"atol", required_argument, NULL, 'a'},
		{"rtol", required_argument, NULL, 'R'},
		{"check-error-stat", required_argument, NULL, 'E'},
		{"show-histogram", no_argument, NULL, 'H'},
		{"precision", required_argument, NULL, 'p'},
		{"layer-precisions", required_argument, NULL, 'P'},
		{"json", no_argument, NULL, 'J'},
		{"report", required_argument, NULL, 'W'},
		{"repeat", required_argument, NULL, 'X'},
		{"hash-outputs", no_argument, NULL, 'Y'},
		{"fp16-accumulate", no_argument, NULL, 0x1d00},
		{"threads", required_argument, NULL, 't'},
		{"iterations", required_argument, NULL, 'n'},
		{"load-tactics", required_argument, NULL, 'K'},
		{"strict-tactics", no_argument, NULL, 'Q'},
		{"save-tactics", required_argument, NULL, 'Z'},
		{"timing-cache", required_argument, NULL, 'c'},
		{"timing-iterations", required_argument, NULL, 0x1d01},
		{"timing-tolerance", required_argument, NULL, 0x1d02},
		{"build-seed", required_argument, NULL, 0x1d03},
		WH_CALIB_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	const char *load = NULL, *shapes = NULL, *save_in = NULL, *save_out = NULL, *compare_dir = NULL;
	long long seed = 1, threads = 0, iterations = 0;
	double lo = 0, hi = 1;
	bool mark_all = false, validate = false, histogram = false, json = false, hash_outputs = false;
	long long repeat = 0;
	const char *report = NULL;
	const char *load_tactics = NULL, *save_tactics = NULL;
	bool strict_tactics = false, timing_given = false;
	struct wh_build_options bo = {.timing_iterations = 3, .timing_tolerance = 0.05};
	long long build_seed = 0, timing_iters = 3;
	struct wh_tactic_plan plan;
	wh_tactic_plan_init(&plan);
	struct wh_precision_config pc;
	wh_precision_config_init(&pc);
	bool reduced = false;
	const char *layer_prec = NULL;
	int rc = 0;
	enum wh_status st = WH_OK;
	struct wh_compare_options co;
	wh_compare_options_default(&co);
	struct wh_calib_opts calo;
	wh_calib_opts_init(&calo);
	int c;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'L': load = optarg; break;
		case 's':
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX, &seed))
				return wh_cli_usage_error("run", "--seed takes a non-negative integer, not '%s'", optarg);
			break;
		case 'r': {
			char *comma = strchr(optarg, ',');
			if (!comma)
				return wh_cli_usage_error("run", "--val-range takes LO,HI, not '%s'", optarg);
			*comma = '\0';
			if (!wh_cli_parse_double(optarg, &lo) || !wh_cli_parse_double(comma + 1, &hi) || hi < lo)
				return wh_cli_usage_error("run", "--val-range takes LO,HI with LO <= HI");
			break;
		}
		case 'I': shapes = optarg; break;
		case 'S': save_in = optarg; break;
		case 'O': save_out = optarg; break;
		case 'M': mark_all = true; break;
		case 'V': validate = true; break;
		case 'C': compare_dir = optarg; break;
		case 'a':
			if (!wh_cli_parse_double(optarg, &co.atol) || co.atol < 0)
				return wh_cli_usage_error("run", "--atol takes a non-negative number, not '%s'", optarg);
			break;
		case 'R':
			if (!wh_cli_parse_double(optarg, &co.rtol) || co.rtol < 0)
				return wh_cli_usage_error("run", "--rtol takes a non-negative number, not '%s'", optarg);
			break;
		case 'E':
			if (!wh_error_stat_parse(optarg, &co.stat, &co.quantile))
				return wh_cli_usage_error("run", "--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s'", optarg);
			break;
		case 'H': histogram = true; break;
		case 'p':
			if (!wh_precision_parse(optarg, &pc.dflt)) {
				return wh_cli_usage_error("run", "--precision takes fp32, tf32, fp16, bf16, fp8, fp8e5m2 or int8, not '%s'", optarg);
			}
			reduced |= pc.dflt != WH_PREC_FP32;
			break;
		case 'P': layer_prec = optarg; break;
		case 'J': json = true; break;
		case 'W': report = optarg; break;
		case 'X':
			if (!wh_cli_parse_int(optarg, 2, 1000000, &repeat))
				return wh_cli_usage_error("run", "--repeat takes an integer >= 2, not '%s'", optarg);
			break;
		case 'Y': hash_outputs = true; break;
		case 0x1d00: pc.fp16_accumulate = true; reduced = true; break;
		case 't':
			if (!wh_cli_parse_int(optarg, 1, 1024, &threads))
				return wh_cli_usage_error("run", "--threads takes 1..1024, not '%s'", optarg);
			break;
		case 'n':
			if (!wh_cli_parse_int(optarg, 1, 1000000, &iterations))
				return wh_cli_usage_error("run", "--iterations takes a positive integer, not '%s'", optarg);
			break;
		case 'K': load_tactics = optarg; break;
		case 'Q': strict_tactics = true; break;
		case 'Z': save_tactics = optarg; break;
		case 'c': bo.timing_cache = optarg; break;
		case 0x1d01:
			if (!wh_cli_parse_int(optarg, 1, 64, &timing_iters))
				return wh_cli_usage_error("run", "--timing-iterations takes 1..64, not '%s'", optarg);
			bo.timing_iterations = (int)timing_iters;
			timing_given = true;
			break;
		case 0x1d02:
			if (!wh_cli_parse_timing_tolerance(optarg, &bo.timing_tolerance))
				return wh_cli_usage_error("run", "--timing-tolerance takes a fraction >= 0 or inf, not '%s'", optarg);
			timing_given = true;
			break;
		case 0x1d03:
			if (!wh_cli_parse_int(optarg, 0, INT64_MAX, &build_seed))
				return wh_cli_usage_error("run", "--build-seed takes a non-negative integer, not '%s'", optarg);
			timing_given = true;
			break;
		case 'h': fputs(run_help, stdout); return 0;
		default:
			if (wh_calib_opts_parse(&calo, c, optarg, &st)) {
				if (st != WH_OK)
					return wh_cli_fail(st);
				break;
			}
			return wh_cli_bad_option("run", c, argv);
		}
	}
	if (optind != argc - 1)
		return wh_cli_usage_error("run", "expects exactly one MODEL (see whittle run --help)");
	if (load_tactics && save_tactics)
		return wh_cli_usage_error("run", "--load-tactics pins a build and --save-tactics makes one: give one of them");
	if (strict_tactics && !load_tactics)
		return wh_cli_usage_error("run", "--strict-tactics goes with --load-tactics");
	if ((bo.timing_cache || timing_given) && !save_tactics)
		return wh_cli_usage_error("run", "--timing-cache, --timing-iterations, --timing-tolerance and --build-seed go with --save-tactics");
	bo.seed = (uint64_t)build_seed;
	if (layer_prec) {
		if ((st = wh_precision_config_parse(&pc, layer_prec)) != WH_OK) {
			wh_precision_config_release(&pc);
			return wh_cli_fail(st);
		}
		reduced = true;
	}
	bool compare_fp32 = compare_dir && !strcmp(compare_dir, "fp32");
	struct wh_model *m = NULL;
	struct wh_engine *e = NULL, *ref_engine = NULL;
	struct wh_tensor_set inputs, results, ref;
	wh_tensor_set_init(&inputs);
	wh_tensor_set_init(&results);
	wh_tensor_set_init(&ref);
	FILE *rep = NULL;
	if ((st = wh_cli_load_model(argv[optind], shapes, &m)) != WH_OK)
		goto fail;
	if (load && (st = wh_tensor_set_read_dir_for(load, NULL, m->graph, false, &inputs)) != WH_OK)
		goto fail;
	if ((st = wh_cli_random_inputs(m, (uint64_t)seed, lo, hi, &inputs)) != WH_OK)
		goto fail;
	const char *faulty = getenv("WHITTLE_FAULTY_TACTIC");
	struct wh_engine_options eo = {.threads = (int)threads, .precision = reduced ? &pc : NULL,
				       .faulty_tactic = faulty && *faulty ? faulty : NULL};
	calo.threads = (int)threads;
	if ((st = wh_calib_opts_apply(&calo, m, &pc, &inputs)) != WH_OK)
		goto fail;
	if (load_tactics) {
		if ((st = wh_tactic_plan_read(load_tactics, &plan)) != WH_OK)
			goto fail;
		struct wh_hash mh;
		char hex[33];
		if (plan.model_hash[0] && wh_model_hash(m, &mh) == WH_OK) {
			wh_hash_hex(mh, hex);
			if (strcmp(hex, plan.model_hash))
				wh_warn("%s: made for another model (hash %s, this one %s); layers are matched by name", load_tactics,
					plan.model_hash, hex);
		}
	} else if (save_tactics) {
		if ((st = wh_engine_build(m, &eo, &inputs, &bo, &plan)) != WH_OK)
			goto fail;
		if ((st = wh_tactic_plan_write(&plan, save_tactics)) != WH_OK)
			goto fail;
	}
	if (load_tactics || save_tactics) {
		eo.tactics = &plan;
		eo.tactics_strict = strict_tactics;
	}
	if ((st = wh_engine_create(m, &eo, &e)) != WH_OK)
		goto fail;
	if (save_in && (st = wh_tensor_set_write_dir_for(save_in, NULL, m->graph, false, &inputs)) != WH_OK)
		goto fail;
	if ((st = wh_engine_run(e, &inputs, mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &results)) != WH_OK)
		goto fail;
	if (iterations) {
		double *ms = calloc((size_t)iterations, sizeof *ms);
		if (!ms) {
			st = wh_error(WH_ERR_NOMEM, "run: out of memory");
			goto fail;
		}
		for (long long i = 0; i < iterations && st == WH_OK; i++) {
			struct wh_tensor_set tmp;
			wh_tensor_set_init(&tmp);
			double t0 = (wh_os_now_s() * 1e3);
			st = wh_engine_run(e, &inputs, WH_KEEP_OUTPUTS, &tmp);
			ms[i] = (wh_os_now_s() * 1e3) - t0;
			wh_tensor_set_release(&tmp);
		}
		qsort(ms, (size_t)iterations, sizeof *ms, cmp_d);
		double med = iterations % 2 ? ms[iterations / 2] : 0.5 * (ms[iterations / 2 - 1] + ms[iterations / 2]);
		free(ms);
		if (st != WH_OK)
			goto fail;
		printf("median_ms %.3f\n", med);
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			printf("peak_rss_mb %.1f\n", (double)ru.ru_maxrss / 1024.0);
	}
	if (hash_outputs || repeat) {
		uint64_t *h0 = calloc(results.n + 1, sizeof *h0);
		if (!h0) {
			st = wh_error(WH_ERR_NOMEM, "run: out of memory");
			goto fail;
		}
		for (size_t i = 0; i < results.n; i++) {
			const struct wh_tensor *t = &results.items[i].t;
			h0[i] = value_hash(t);
			if (hash_outputs)
				printf("xxh3 %s %016llx\n", results.items[i].name, (unsigned long long)h0[i]);
		}
		size_t differ = 0;
		for (long long r = 1; r < repeat && st == WH_OK; r++) {
			struct wh_tensor_set again;
			wh_tensor_set_init(&again);
			st = wh_engine_run(e, &inputs, mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &again);
			for (size_t i = 0; st == WH_OK && i < again.n && i < results.n; i++) {
				const struct wh_tensor *t = &again.items[i].t;
				uint64_t h = value_hash(t);
				if (h != h0[i]) {
					if (differ < 20)
						printf("repeat: run %lld: tensor '%s' differs from run 1 (xxh3 %016llx vs %016llx)\n", r + 1,
						       again.items[i].name, (unsigned long long)h, (unsigned long long)h0[i]);
					differ++;
				}
			}
			wh_tensor_set_release(&again);
		}
		free(h0);
		if (st != WH_OK)
			goto fail;
		if (repeat) {
			if (differ) {
				printf("repeat: FAIL: %zu differences over %lld runs\n", differ, repeat);
				rc = WH_EXIT_FAILS;
			} else {
				printf("repeat: PASS: %lld runs, %zu tensors bit-identical\n", repeat, results.n);
			}
		}
	}
	if (!json) {
		for (size_t i = 0; i < results.n; i++) {
			char buf[128];
			const struct wh_tensor *t = &results.items[i].t;
			if (mark_all && results.n > 64)
				continue;
			if (t->kind == WH_VALUE_SEQUENCE)
				printf("output %s sequence(%s)[%u items]\n", results.items[i].name,
				       t->elem ? wh_dtype_name((enum wh_dtype)t->elem) : "?", wh_seq_len(t));
			else if (t->kind == WH_VALUE_NONE)
				printf("output %s optional(none)\n", results.items[i].name);
			else
				printf("output %s %s[%s]\n", results.items[i].name, wh_dtype_name(t->dtype), wh_shape_str(t->dims, t->rank, buf, sizeof buf));
		}
		if (mark_all && results.n > 64)
			printf("%zu tensors computed\n", results.n);
	}
	if (save_out && (st = wh_tensor_set_write_dir_for(save_out, NULL, m->graph, true, &results)) != WH_OK)
		goto fail;
	if (validate) {
		for (size_t i = 0; i < results.n; i++) {
			const struct wh_tensor *t = &results.items[i].t;
			if (!wh_dtype_is_float(t->dtype))
				continue;
			uint64_t nan = 0, inf = 0;
			for (uint64_t k = 0; k < t->count; k++) {
				double x = wh_tensor_get_f64(t, k);
				nan += isnan(x) != 0;
				inf += isinf(x) != 0; /* -1 for -inf */
			}
			if (nan || inf) {
				printf("validate: FAIL: tensor '%s' is the first with non-finite values (%llu NaN, %llu Inf of %llu)\n",
				       results.items[i].name, (unsigned long long)nan, (unsigned long long)inf, (unsigned long long)t->count);
				rc = WH_EXIT_FAILS;
				break;
			}
		}
		if (!rc)
			printf("validate: PASS: no NaN or Inf in %zu tensor%s\n", results.n, results.n == 1 ? "" : "s");
	}
	if (compare_dir) {
		if (compare_fp32) {
			struct wh_engine_options ro = {.threads = (int)threads};
			if ((st = wh_engine_create(m, &ro, &ref_engine)) != WH_OK)
				goto fail;
			if ((st = wh_engine_run(ref_engine, &inputs, mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &ref)) != WH_OK)
				goto fail;
		} else if ((st = wh_tensor_set_read_dir_for(compare_dir, NULL, m->graph, true, &ref)) != WH_OK) {
			goto fail;
		}
		if (report && !(rep = fopen(report, "w"))) {
			st = wh_error(WH_ERR_IO, "%s: cannot write the report: %s (check the folder)", report, strerror(errno));
			goto fail;
		}
		if (rep) {
			fprintf(rep, "# whittle run --compare %s\n\nmodel `%s`, precision %s, atol %g, rtol %g\n\n", compare_dir, argv[optind],
				wh_precision_name(pc.dflt), co.atol, co.rtol);
			fprintf(rep, "| # | tensor | layer | op | max abs | mean abs | median abs | max rel | mean rel | median rel | cosine | SQNR dB | rel>10%% | rel>1%% | rel>0.1%% | NaN/Inf | verdict |\n");
			fprintf(rep, "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
		}
		json_t *jt = json ? json_array() : NULL;
		size_t compared = 0, failed = 0;
		const char *first_fail = NULL;
		const struct wh_graph *g = m->graph;
		for (size_t i = 0; i < results.n; i++) {
			const char *name = results.items[i].name;
			const struct wh_tensor *r = wh_tensor_set_find(&ref, name);
			if (!r || results.items[i].t.dtype == WH_DT_STRING)
				continue;
			struct wh_compare_stats s;
			if ((st = wh_compare_tensors(&results.items[i].t, r, &co, &s)) != WH_OK)
				goto fail;
			uint32_t vid = wh_graph_find_value(g, name);
			const struct wh_node *pn = vid != WH_NONE && g->values[vid].producer != WH_NONE ? &g->nodes[g->values[vid].producer] : NULL;
			if (pn && !strcmp(pn->op_type, "Constant"))
				continue; /* weights, not computed */
			compared++;
			bool bad = !s.pass || !s.comparable;
			if (bad) {
				failed++;
				if (!first_fail)
					first_fail = name;
			}
			if (json) {
				json_t *o = json_object();
				json_object_set_new(o, "tensor", json_string(name));
				json_object_set_new(o, "layer", json_string(pn ? pn->name : ""));
				json_object_set_new(o, "op", json_string(pn ? pn->op_type : ""));
				json_object_set_new(o, "pass", json_boolean(!bad));
				json_object_set_new(o, "max_abs", json_real(s.max_abs));
				json_object_set_new(o, "mean_abs", json_real(s.mean_abs));
				json_object_set_new(o, "median_abs", json_real(s.median_abs));
				json_object_set_new(o, "max_rel", isfinite(s.max_rel) ? json_real(s.max_rel) : json_null());
				json_object_set_new(o, "mean_rel", isfinite(s.mean_rel) ? json_real(s.mean_rel) : json_null());
				json_object_set_new(o, "median_rel", isfinite(s.median_rel) ? json_real(s.median_rel) : json_null());
				json_object_set_new(o, "cosine", isfinite(s.cosine) ? json_real(s.cosine) : json_null());
				json_object_set_new(o, "sqnr_db", isfinite(s.sqnr_db) ? json_real(s.sqnr_db) : json_null());
				json_object_set_new(o, "share_rel_10", json_real(s.share_rel_10));
				json_object_set_new(o, "share_rel_1", json_real(s.share_rel_1));
				json_object_set_new(o, "share_rel_01", json_real(s.share_rel_01));
				json_object_set_new(o, "nan", json_integer((json_int_t)s.nan_actual));
				json_object_set_new(o, "inf", json_integer((json_int_t)s.inf_actual));
				json_array_append_new(jt, o);
			} else {
				wh_compare_print(stdout, name, &s, histogram);
			}
			if (rep)
				fprintf(rep, "| %zu | %s | %s | %s | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.6f | %.1f | %.2f%% | %.2f%% | %.2f%% | %llu/%llu | %s |\n",
					compared, name, pn ? pn->name : "", pn ? pn->op_type : "", s.max_abs, s.mean_abs, s.median_abs, s.max_rel,
					s.mean_rel, s.median_rel, s.cosine, s.sqnr_db, 100 * s.share_rel_10, 100 * s.share_rel_1,
					100 * s.share_rel_01, (unsigned long long)s.nan_actual, (unsigned long long)s.inf_actual, bad ? "FAIL" : "pass");
		}
		if (!compared) {
			json_decref(jt);
			st = wh_error(WH_ERR_NOT_FOUND, "%s: holds none of the model's output tensors (name the files after the outputs)", compare_dir);
			goto fail;
		}
		const struct wh_node *ff = NULL;
		if (first_fail) {
			uint32_t vid = wh_graph_find_value(g, first_fail);
			if (vid != WH_NONE && g->values[vid].producer != WH_NONE)
				ff = &g->nodes[g->values[vid].producer];
		}
		if (json) {
			json_t *root = json_object();
			json_object_set_new(root, "model", json_string(argv[optind]));
			json_object_set_new(root, "precision", json_string(wh_precision_name(pc.dflt)));
			json_object_set_new(root, "compare", json_string(compare_dir));
			json_object_set_new(root, "atol", json_real(co.atol));
			json_object_set_new(root, "rtol", json_real(co.rtol));
			json_object_set_new(root, "pass", json_boolean(!failed));
			json_object_set_new(root, "first_failing_tensor", first_fail ? json_string(first_fail) : json_null());
			json_object_set_new(root, "first_failing_layer", ff ? json_string(ff->name) : json_null());
			json_object_set_new(root, "tensors", jt);
			char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
			if (text)
				puts(text);
			free(text);
			json_decref(root);
		}
		if (failed) {
			if (!json)
				printf("compare: FAIL: %zu of %zu tensors differ; first in topological order: %s%s%s%s%s%s\n", failed, compared, first_fail,
				       ff ? " (layer " : "", ff ? ff->name : "", ff ? ", " : "", ff ? ff->op_type : "", ff ? ")" : "");
			if (ff && !json)
				printf("compare: try --layer-precisions %s:fp32\n", ff->name);
			rc = WH_EXIT_FAILS;
		} else if (!json) {
			printf("compare: PASS: %zu tensors within atol %g rtol %g\n", compared, co.atol, co.rtol);
		}
		if (rep) {
			fprintf(rep, "\n%s\n", failed ? "" : "All tensors pass.");
			if (first_fail)
				fprintf(rep, "First failing tensor in topological order: `%s` (layer `%s`, %s).\n", first_fail, ff ? ff->name : "?", ff ? ff->op_type : "?");
		}
	}
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	if (rep)
		fclose(rep);
	wh_tensor_set_release(&inputs);
	wh_tensor_set_release(&results);
	wh_tensor_set_release(&ref);
	wh_engine_destroy(e);
	wh_engine_destroy(ref_engine);
	wh_model_destroy(m);
	wh_precision_config_release(&pc);
	wh_tactic_plan_release(&plan);
	wh_calib_opts_release(&calo);
	return rc;
}
