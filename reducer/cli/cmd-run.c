#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "executor/builder.h"
#include "executor/executor.h"
#include "executor/precision.h"
#include "graph/hash.h"
#include "graph/names.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/driver-util.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"
#include "reducer/cli/run-profile.h"
#include "reducer/cli/run-report.h"

static const char run_help[] =
	"usage: whittle run MODEL [options]\n\n"
	"Runs MODEL on whittle's embedded executor.\n\n"
	"inputs:\n"
	"  --load-inputs DIR       read inputs from a folder of .pb/.npy tensors (by name, or input_<k>.pb)\n"
	"  --fill-missing          with --load-inputs: generate the inputs that have no file (named on\n"
	"                          one line); without it a missing input is an error\n"
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
	"  --device cuda[:N]       run the layers on a CUDA GPU where it has kernels, the rest on\n"
	"                          the CPU (default cpu; docs/gpu.md)\n"
	"  --allow-reduced-precision-reduction\n"
	"                          with --device cuda: fp16 MatMul/Gemm may take GPU tactics that\n"
	"                          accumulate in fp16 (off: FP32 accumulation; docs/gpu.md)\n"
	"  --threads N             worker threads (default: all cores); results do not depend on it\n"
	"  --iterations N          time N runs after a warm-up and print `median_ms <x>`\n"
	"  --profile               time every layer over the --iterations runs (default 10): median ms,\n"
	"                          share, tactic, GFLOP/s, and per op type (a table, or with --json)\n"
	"  --repeat N              run N times and check that every output (every tensor with\n"
	"                          --mark-all) is bit-identical across runs (XXH3), naming any that differs\n"
	"  --hash-outputs          print `xxh3 <tensor> <hash>` for every output\n"
	"exit status: 0 pass, 1 a comparison or validation failed, 2 usage, 3 bad input\n";

static enum wh_status tactics_option(struct wh_run_cmd *x, int c, const char *arg)
{
	long long v;
	switch (c) {
	case WH_OPT_LOAD_TACTICS: x->load_tactics = arg; break;
	case WH_OPT_STRICT_TACTICS: x->strict_tactics = true; break;
	case WH_OPT_SAVE_TACTICS: x->save_tactics = arg; break;
	case WH_OPT_TIMING_CACHE: x->build.timing_cache = arg; break;
	case WH_OPT_TIMING_ITERATIONS: x->timing_given = true; return wh_cli_timing_option("run", "timing-iterations", arg, &x->build);
	case WH_OPT_TIMING_TOLERANCE: x->timing_given = true; return wh_cli_timing_option("run", "timing-tolerance", arg, &x->build);
	case WH_OPT_BUILD_SEED:
		if (!wh_cli_parse_int(arg, 0, INT64_MAX, &v))
			return wh_cli_usage_error("run", "--build-seed '%s': not an integer >= 0 (give a seed such as 0)", arg);
		x->build.seed = (uint64_t)v;
		x->timing_given = true;
		break;
	}
	return WH_OK;
}

static enum wh_status run_option(void *self, int c, const char *arg)
{
	struct wh_run_cmd *x = self;
	switch (c) {
	case WH_OPT_SAVE_INPUTS: x->save_inputs = arg; break;
	case WH_OPT_SAVE_OUTPUTS: x->save_outputs = arg; break;
	case WH_OPT_MARK_ALL: x->mark_all = true; break;
	case WH_OPT_COMPARE: x->compare = arg; break;
	case WH_OPT_SHOW_HISTOGRAM: x->histogram = true; break;
	case WH_OPT_JSON: x->json = true; break;
	case WH_OPT_REPORT: x->report = arg; break;
	case WH_OPT_REPEAT:
		if (!wh_cli_parse_int(arg, 2, 1000000, &x->repeat))
			return wh_cli_usage_error("run", "--repeat '%s': not an integer from 2 to 1000000 (give a number of runs such as 10)", arg);
		break;
	case WH_OPT_HASH_OUTPUTS: x->hash_outputs = true; break;
	case WH_OPT_PROFILE: x->profile = true; break;
	case WH_OPT_FP16_ACCUMULATE: x->run.config.fp16_accumulate = true; break;
	case WH_OPT_ITERATIONS:
		if (!wh_cli_parse_int(arg, 1, 1000000, &x->iterations))
			return wh_cli_usage_error("run", "--iterations '%s': not an integer from 1 to 1000000 (give a number of runs such as 20)", arg);
		break;
	default: return tactics_option(x, c, arg);
	}
	return WH_OK;
}

/* The comparison's options mean nothing without --compare. */
static const int compare_opts[] = {WH_RUN_OPT_ATOL, WH_RUN_OPT_RTOL, WH_RUN_OPT_ERROR_STAT, WH_RUN_OPT_END};

static enum wh_status run_validate(void *self, const struct wh_cli_args *a)
{
	struct wh_run_cmd *x = self;
	(void)a;
	/* run's --validate checks the outputs of its one run, whatever --compare's tolerances
	 * say: it is not the built-in check's NaN/Inf mode, which refuses tolerances */
	x->validate = x->run.compare.validate;
	x->run.compare.validate = false;
	if (x->load_tactics && x->save_tactics)
		return wh_cli_usage_error("run", "--load-tactics pins a build and --save-tactics makes one (give one of them)");
	if (x->strict_tactics && !x->load_tactics)
		return wh_cli_usage_error("run", "--strict-tactics goes with --load-tactics (give the replay to check against)");
	if ((x->build.timing_cache || x->timing_given) && !x->save_tactics)
		return wh_cli_usage_error("run", "--timing-cache, --timing-iterations, --timing-tolerance and --build-seed go with --save-tactics (add it, or drop them)");
	if (x->profile && x->json && x->compare)
		return wh_cli_usage_error("run", "--profile --json and --compare --json would print two JSON objects (drop one of them)");
	if (!x->compare && x->report)
		return wh_cli_usage_error("run", "--report: there is nothing to report without --compare (add --compare fp32 or --compare DIR)");
	if (!x->compare && x->histogram)
		return wh_cli_usage_error("run", "--show-histogram: there is no error to show without --compare (add --compare fp32 or --compare DIR)");
	enum wh_status st = WH_OK;
	if (!x->compare)
		st = wh_run_opts_refuse(&x->run, compare_opts, "goes with --compare, without which nothing is compared (add --compare fp32 or --compare DIR)");
	return st;
}

/* --load-tactics reads the plan, --save-tactics builds it and writes it. */
static enum wh_status tactics(const struct wh_run_cmd *x, const struct wh_model *m, const struct wh_engine_options *eo,
			      const struct wh_tensor_set *inputs, struct wh_tactic_plan *plan)
{
	enum wh_status st;
	if (x->save_tactics) {
		if ((st = wh_engine_build(m, eo, inputs, &x->build, plan)) != WH_OK)
			return st;
		return wh_tactic_plan_write(plan, x->save_tactics);
	}
	if ((st = wh_tactic_plan_read(x->load_tactics, plan)) != WH_OK)
		return st;
	struct wh_hash mh;
	char hex[33];
	if (plan->model_hash[0] && wh_model_hash(m, &mh) == WH_OK) {
		wh_hash_hex(mh, hex);
		if (strcmp(hex, plan->model_hash))
			wh_warn("%s: made for another model (hash %s, this one %s); layers are matched by name", x->load_tactics, plan->model_hash, hex);
	}
	return WH_OK;
}

/* The reference of --compare: an FP32 run of the same model, or a folder of tensors. */
static enum wh_status reference(const struct wh_run_cmd *x, const struct wh_model *m, const struct wh_tensor_set *inputs,
				struct wh_tensor_set *ref)
{
	if (strcmp(x->compare, "fp32"))
		return wh_tensor_set_read_dir_for(x->compare, NULL, m->graph, true, ref);
	struct wh_engine *e = NULL;
	struct wh_engine_options fo = wh_run_opts_engine(&x->run, false);
	enum wh_status st = wh_engine_create(m, &fo, &e);
	if (st == WH_OK)
		st = wh_engine_run(e, inputs, x->mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, ref);
	wh_engine_destroy(e);
	return st;
}

/* What the run found, printed; *fails: a verdict failed (exit 1). */
static enum wh_status report(struct wh_run_cmd *x, const struct wh_model *m, struct wh_engine *e, const struct wh_engine_options *eo,
			     const struct wh_tensor_set *inputs, const struct wh_tensor_set *results, bool *fails)
{
	enum wh_status st = WH_OK;
	bool differ = false, failed = false;
	if (x->profile)
		st = wh_run_profile(e, x->model_path, inputs, x->iterations ? x->iterations : 10, x->json);
	else if (x->iterations)
		st = wh_run_time(e, inputs, x->iterations);
	if (st != WH_OK)
		return st;
	if ((x->hash_outputs || x->repeat) && (st = wh_run_repeat(x, e, inputs, results, &differ)) != WH_OK)
		return st;
	/* a pinned tactic that cuDNN calls nondeterministic (docs/gpu.md): its differences are
	 * run-to-run variation, not a bug in the model */
	for (uint32_t i = 0; x->repeat && eo->tactics && i < eo->tactics->n; i++)
		if (eo->tactics->c[i].flags & WH_TACTIC_NONDET)
			printf("repeat: note: layer '%s' runs nondeterministic tactic '%s' (%s): differences between runs may be the tactic's\n",
			       wh_name_term(eo->tactics->c[i].layer), wh_name_term(eo->tactics->c[i].tactic),
			       eo->tactics->c[i].notes ? eo->tactics->c[i].notes : "nondeterministic");
	wh_run_print_outputs(x, results);
	if (x->save_outputs && (st = wh_tensor_set_write_dir_for(x->save_outputs, NULL, m->graph, true, results)) != WH_OK)
		return st;
	bool invalid = x->validate && !wh_run_validate(results);
	if (x->compare && !strcmp(x->compare, "fp32") && !eo->precision && !eo->tactics && !eo->faulty_tactic && !eo->cuda)
		/* the same engine twice: a PASS would say nothing (a strongly typed fp16 model's own
		 * types are not a --precision: its FP32 reference is itself) */
		wh_warn("run: --compare fp32: this run is the FP32 run (every layer at fp32, no tactics pinned, on the CPU), so it "
			"compares the model with itself (give --precision, --layer-precisions, --load-tactics or --device; for a "
			"converted model, --compare DIR with the original's FP32 outputs)");
	if (x->compare) {
		struct wh_tensor_set ref;
		wh_tensor_set_init(&ref);
		if ((st = reference(x, m, inputs, &ref)) == WH_OK)
			st = wh_run_compare(x, m, eo, inputs, results, &ref, &failed);
		wh_tensor_set_release(&ref);
	}
	*fails = differ || invalid || failed;
	return st;
}

/* Whether the --layer-precisions spec names a layer that no graph of m has: a layer of an
 * If's branch as inlining renames it (precision's answers name the inlined model's layers;
 * a branch's layer under its own name is run in its subgraph, executor/precision.h). A bad
 * spec is reported later, where it is parsed for the run. */
static bool names_other_layer(const struct wh_model *m, const char *spec)
{
	if (!spec)
		return false;
	struct wh_precision_config pc;
	wh_precision_config_init(&pc);
	bool other = false;
	if (wh_precision_config_parse(&pc, spec) == WH_OK)
		for (uint32_t i = 0; i < pc.n_layers && !other; i++) {
			bool found = false;
			for (uint32_t n = 0; n < m->graph->n_nodes && !found; n++)
				found = !strcmp(m->graph->nodes[n].name, pc.layers[i].layer);
			other = !found && !wh_model_subgraph_has_layer(m, pc.layers[i].layer);
		}
	wh_precision_config_release(&pc);
	return other;
}

static enum wh_status run(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct wh_run_cmd *x = self;
	struct wh_engine *e = NULL;
	struct wh_tensor_set results;
	wh_tensor_set_init(&results);
	struct wh_tactic_plan plan;
	wh_tactic_plan_init(&plan);
	bool reduced = false;
	enum wh_status st;
	x->model_path = a->operands[0];
	if ((st = wh_cmd_ctx_load(c, &x->run, x->model_path, WH_SAMPLES_ONE)) != WH_OK)
		goto out;
	/* --compare fp32 --mark-all diagnoses layer by layer: an If's taken branch is inlined,
	 * so that the diagnosis can name a layer inside it; so is it when --layer-precisions
	 * names a layer only the inlined model has */
	if (((x->mark_all && x->compare && !strcmp(x->compare, "fp32")) || names_other_layer(c->model, x->run.layer_precisions)) &&
	    !x->load_tactics && !x->save_tactics) {
		struct wh_engine_options fo = {.threads = x->run.threads};
		if ((st = wh_driver_inline_ifs("run", &c->model, &fo, c->samples, 1, stderr)) != WH_OK)
			goto out;
	}
	if ((st = wh_run_opts_precision(&x->run, c->model, &c->samples[0], &reduced)) != WH_OK)
		goto out;
	const struct wh_model *m = c->model;
	const struct wh_tensor_set *inputs = &c->samples[0];
	struct wh_engine_options eo = wh_run_opts_engine(&x->run, reduced);
	eo.faulty_tactic = wh_run_opts_faulty_tactic();
	eo.profile = x->profile;
	if (x->load_tactics || x->save_tactics) {
		if ((st = tactics(x, m, &eo, inputs, &plan)) != WH_OK)
			goto out;
		eo.tactics = &plan;
		eo.tactics_strict = x->strict_tactics;
	}
	if ((st = wh_engine_create(m, &eo, &e)) != WH_OK)
		goto out;
	if (x->save_inputs && (st = wh_tensor_set_write_dir_for(x->save_inputs, NULL, m->graph, false, inputs)) != WH_OK)
		goto out;
	if ((st = wh_engine_run(e, inputs, x->mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &results)) != WH_OK)
		goto out;
	st = report(x, m, e, &eo, inputs, &results, &c->fails);
out:
	wh_tensor_set_release(&results);
	wh_engine_destroy(e);
	wh_tactic_plan_release(&plan);
	return st;
}

int wh_cmd_run(int argc, char **argv)
{
	struct wh_run_cmd x = {.build = {.timing_iterations = 3, .timing_tolerance = 0.05}};
	struct wh_cli_spec spec = {.cmd = "run", .help = run_help, .operands = "one MODEL", .n_operands = 1, .run_opts = &x.run,
				   .own = run_option, .validate = run_validate, .go = run, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
