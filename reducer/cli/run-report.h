/* Private to the front end: what `whittle run` prints once the model has run (cmd-run.c
 * parses and runs, this file reports): the output list (text or JSON), --validate,
 * --iterations, --repeat and --hash-outputs, and the --compare table (text, JSON, markdown
 * --report). Everything goes to stdout (the report to its file); nothing here owns the
 * tensors it is given. */
#ifndef WH_RUN_REPORT_H
#define WH_RUN_REPORT_H

#include <stdbool.h>

#include "executor/builder.h"
#include "executor/executor.h"
#include "graph/tensor-file.h"
#include "reducer/cli/run-opts.h"

/* The parsed command line of `whittle run`. */
struct wh_run_cmd {
	const char *model_path;
	const char *save_inputs, *save_outputs, *compare, *report;
	bool mark_all, validate, histogram, json, hash_outputs;
	bool profile; /* --profile (run-profile.h); with --json its object replaces the outputs' */
	long long iterations, repeat;
	const char *load_tactics, *save_tactics;
	bool strict_tactics, timing_given;
	struct wh_build_options build;
	struct wh_run_opts run;
};

/* The outputs' names, types and shapes: lines "output NAME TYPE[SHAPE]", or with --json
 * one object {"model", "precision", "outputs": [{"tensor", "dtype", "shape"}]} (without
 * --compare, whose JSON takes its place). */
void wh_run_print_outputs(const struct wh_run_cmd *x, const struct wh_tensor_set *results);

/* --validate: false (and a FAIL line) when an output holds NaN or Inf. */
bool wh_run_validate(const struct wh_tensor_set *results);

/* --iterations: times that many runs and prints median_ms and peak_rss_mb. */
enum wh_status wh_run_time(struct wh_engine *e, const struct wh_tensor_set *inputs, long long iterations);

/* --hash-outputs and --repeat: prints the hashes, runs again and names every tensor that
 * differs from the first run; *differ_out: whether any did. */
enum wh_status wh_run_repeat(const struct wh_run_cmd *x, struct wh_engine *e, const struct wh_tensor_set *inputs,
			     const struct wh_tensor_set *results, bool *differ_out);

/* --compare: compares results with ref (by name) and prints the table or the JSON, and
 * the --report file; *failed_out: whether any tensor differs. With --mark-all at a
 * reduced precision (eo->precision set) a failure is diagnosed (executor/diagnose.h): the
 * verdict names where it starts, the suggestion keeps the layers it names, and the first
 * tensor over the tolerance is listed as such. eo: the run's engine options; inputs: the
 * run's inputs (reference values too). ref may gain the inputs. */
enum wh_status wh_run_compare(const struct wh_run_cmd *x, const struct wh_model *m, const struct wh_engine_options *eo,
			      const struct wh_tensor_set *inputs, const struct wh_tensor_set *results, struct wh_tensor_set *ref,
			      bool *failed_out);

#endif
