/* The reduce driver: confirms that the original model fails, searches for the minimal
 * failing subgraph (reducer/search.h) and writes the result, the artifacts and a repro
 * bundle.
 *
 * Candidates are built from the original model by node sets (graph/extract.h): Constant
 * nodes come along with their consumers, a removed node's consumed outputs become inputs fed
 * with reference values, and outputs are the candidate's tensors used outside it or by the
 * original's outputs. Every verdict is cached by the candidate's canonical hash and
 * appended (flushed) to the replay file; a replay loaded with load_replay answers those
 * candidates without running the check again.
 *
 * Reference values: an FP32 run of the original on whittle's executor (every tensor kept:
 * in memory up to reference_memory, the rest written once as one .npy per tensor per sample
 * and mapped when a candidate needs it), or a folder of named tensors (e.g. from scripts/ort-run.js --all) for models whittle cannot
 * run. Several data samples are supported: a candidate fails when it fails on any sample.
 *
 * The check: an external command (reducer/check.h) given {model}, {inputs}, {golden}; or
 * the built-in check, which runs the candidate at the engine options' precision and
 * compares every output with the reference (executor/compare.h). */
#ifndef WH_REDUCE_H
#define WH_REDUCE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/compare.h"
#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"
#include "reducer/search.h"

struct wh_reduce_options {
	enum wh_search_mode mode;
	int jobs;
	bool reduce_inputs, reduce_outputs;
	const struct wh_check *check;      /* NULL: built-in check */
	const char *check_display;         /* the check command as the user wrote it */
	struct wh_engine_options engine;   /* for the built-in check and the reference run */
	struct wh_compare_options compare; /* for the built-in check */
	const char *load_replay, *save_replay;
	const char *artifacts_dir;         /* NULL: a temporary folder, removed at the end */
	bool force;                        /* write into an artifacts folder of an earlier run */
	const char *const *artifacts;      /* files the check writes, sorted into good/ and bad/ */
	int n_artifacts;
	const char *output_path;           /* the reduced model */
	const char *min_good_path;         /* may be NULL */
	const char *model_path;
	const struct wh_save_opts *save;   /* how models are saved; NULL: the defaults */
	bool json;                         /* JSON lines events on stdout */
	FILE *log;                         /* human progress (stderr) */
	int confirm_runs;                  /* times the original and the result must fail (>= 1) */
	/* bytes of computed reference values held in memory (all samples together); each tensor
	 * past it is written once as .npy in the work folder and mapped when a candidate needs
	 * it. 0: the default (WH_REDUCE_REFERENCE_MEMORY_DEFAULT); < 0: none in memory */
	int64_t reference_memory;
	/* The prior-first search (reducer/search.h, reducer/prior.h), ddmin only: "none",
	 * "emulation" (whittle's own run at engine.precision, fp16 when none) or the path of a
	 * prior file. NULL: emulation when the check is external and engine.precision is a
	 * reduced precision, else none. */
	const char *prior;
};

#define WH_REDUCE_REFERENCE_MEMORY_DEFAULT ((uint64_t)1 << 30)

/* Samples of inputs: sample k's tensors are inputs[k]. reference: optional folder per
 * sample already holding every tensor (NULL: computed with whittle's executor). */
struct wh_reduce_data {
	const struct wh_tensor_set *inputs;
	uint32_t n_samples;
	const struct wh_tensor_set *reference; /* n_samples sets, or NULL */
};

struct wh_reduce_report {
	uint32_t nodes_before, nodes_after;   /* counted without Constant nodes */
	uint32_t checks_run, checks_cached, n_pass, n_fail, n_skip;
	uint32_t rounds;          /* batches of checks that ran one after the other (-j N: up to N each) */
	uint32_t implied;         /* verdicts implied by monotonicity, not checked (reducer/search.h) */
	uint32_t minimal_implied; /* of those, single removals of the result (its 1-minimality) */
	double seconds;
	bool one_minimal, inconsistent;
	double driver_ms_per_candidate; /* cut, hash, save and stage, not the check */
	double tensor_write_s;          /* one-time: reference tensors written on first use */
	uint64_t ref_memory_bytes;      /* reference values held in memory */
	uint64_t ref_disk_bytes;        /* and written as .npy (past reference_memory) */
	char note[512];
	char prior[160];           /* the prior used ("" none) */
	int32_t prior_hit;         /* its candidate searched, -1: none failed */
	uint32_t prior_checks;     /* checks spent on its candidates */
	int32_t prior_saved;       /* checks_run below the unbiased bound (negative: cost) */
};

/* WH_ERR_INVALID when the original does not fail (nothing is reduced); WH_ERR_CHECK when
 * the check is broken (e.g. 126/127 on the original) or contradicts itself. */
enum wh_status wh_reduce_run(const struct wh_model *m, const struct wh_reduce_data *data,
			     const struct wh_reduce_options *o, struct wh_reduce_report *rep);

#endif
