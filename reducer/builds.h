/* The `whittle build` loop: builds the engine again and again (seed = first seed +
 * iteration), or runs an external build command, saves each replay, runs the check (the
 * user's, or the built-in one of reducer/builtin-check.h on the pinned build), sorts the
 * replays into <dir>/good, <dir>/bad and <dir>/skipped, then diffs and confirms the tactics
 * (reducer/tactic-diff.h), and writes the best good build (<dir>/fixed.json) and
 * <dir>/report.md.
 *
 * Ownership: the options, the model and the inputs are borrowed; everything written goes
 * under artifacts_dir. */
#ifndef WH_BUILDS_H
#define WH_BUILDS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/builder.h"
#include "executor/compare.h"
#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"
#include "reducer/tactic-diff.h"

enum wh_until { WH_UNTIL_COUNT = 0, WH_UNTIL_GOOD, WH_UNTIL_BAD, WH_UNTIL_CONFIRMED };

struct wh_build_loop_options {
	enum wh_until until;
	uint32_t count;                    /* builds (WH_UNTIL_COUNT), else the most builds */
	const struct wh_check *check;      /* NULL: built-in check (pinned run vs FP32) */
	const char *check_display;
	/* external builder: a shell string with {tactics} (the replay it must write), {model},
	 * {seed} and {iteration}; NULL: whittle's builder */
	const char *build_cmd;
	/* external builders: a shell string that rebuilds pinned to the replay {tactics}
	 * before the check, for confirmation swaps; NULL with build_cmd: no confirmation */
	const char *pin_cmd;
	double build_timeout_s;            /* <= 0: none */
	/* where the build and pin commands run: the launcher fields (launcher, slurm_args,
	 * shared_dir, retries, queue_timeout_s) of the check's options (borrowed); NULL: locally */
	const struct wh_check_options *launch;
	/* builds (each with its check) in flight, <= 1: one. The builds of a round are taken in
	 * seed order, so the answer is the one of -j 1 (builds past the stopping point are
	 * dropped). whittle's builds with a timing cache run one at a time (they share it). */
	int jobs;
	struct wh_engine_options engine;   /* builds and the built-in check */
	struct wh_build_options build;     /* .seed: the first build's seed */
	struct wh_compare_options compare; /* built-in check */
	bool mark_all;                     /* built-in check: compare every tensor, not only outputs */
	const char *model_path;
	const char *input_shapes;          /* as given, for the commands in the report; may be NULL */
	const char *artifacts_dir;         /* required */
	bool force;                        /* write into a folder holding an earlier run's files */
	const char *const *artifacts;      /* files the check writes, sorted into good/ and bad/ */
	int n_artifacts;
	bool need_inputs, need_golden;     /* the external check uses {inputs} / {golden} */
	bool confirm;
	uint32_t max_suspects;             /* 0: all */
	bool json;                         /* JSON lines events on stdout */
	FILE *log;                         /* progress lines; may be NULL */
	FILE *out;                         /* the answer in words (NULL with json) */
};

struct wh_build_loop_report {
	uint32_t builds, n_good, n_bad, n_skip;
	uint32_t n_suspects;
	struct wh_confirm_report confirm;
	bool confirmed_run;         /* confirmation ran */
	int32_t fixed_build;        /* index of the build in fixed.json, -1 none */
	double seconds;
};

/* inputs: the model's input tensors (for whittle's builder, the built-in check and
 * {inputs}); may be empty with an external builder and check that do not need them. */
enum wh_status wh_build_loop_run(const struct wh_model *m, const struct wh_tensor_set *inputs,
				 const struct wh_build_loop_options *o, struct wh_build_loop_report *rep);

#endif
