/* `whittle triage`: the accuracy-debugging flowchart, walked automatically.
 *
 *  1. Intermittent? The engine is built N times (seeds 0..N-1, whittle's builder) at the
 *     target precision and each build is checked. Some pass and some fail: the tactic diff
 *     and the swap confirmation of reducer/tactic-diff.h name the layer and tactic, and the
 *     fastest good build is the fixed replay. All pass: nothing to debug. All fail: go on.
 *  2. Layerwise comparison: a failing build is run with every tensor kept and compared with
 *     FP32; the first failing tensor in topological order names a layer.
 *  3. That layer alone (its inputs fed with FP32 reference values) is checked: when it
 *     fails, the answer is a single-layer failure.
 *  4. Otherwise the minimal failing subgraph is searched (reducer/reduce.h).
 *  5. The precision search (reducer/precision-search.h) names the layers to keep in FP32.
 *  6. A repro bundle (DIR/repro/) whose command.sh is run once to make sure it still fails,
 *     and DIR/report.md saying what was found, what was tried and what to do, with a
 *     per-layer error plot and a picture of the answer's layers (Graphviz when installed).
 *
 * The check: the built-in comparison with FP32 at the tolerances, or the user's command,
 * which sees {model}, {inputs}, {golden}, {tactics} (the build's replay) and {precisions}
 * (a layer-precisions file) in every step. The layerwise comparison of step 2 is always
 * the built-in one: it is a diagnosis, not a verdict.
 *
 * Ownership: the options and the model are borrowed; everything written goes under
 * artifacts_dir. */
#ifndef WH_TRIAGE_H
#define WH_TRIAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/builder.h"
#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"

enum wh_triage_outcome {
	WH_TRIAGE_PASSES = 0,    /* every build passes the check: nothing to debug */
	WH_TRIAGE_FLAKY,         /* some builds fail: a tactic (confirmed, or suspects only) */
	WH_TRIAGE_SINGLE_LAYER,  /* the first failing layer fails on its own */
	WH_TRIAGE_SUBGRAPH,      /* it takes several layers: the minimal failing subgraph */
	WH_TRIAGE_UNLOCALIZED,   /* it fails, but no step could narrow it down (see the report) */
};

const char *wh_triage_outcome_name(enum wh_triage_outcome o);

struct wh_triage_options {
	enum wh_precision precision;           /* of every float layer */
	const struct wh_calib *calib;          /* int8/fp8 ranges (borrowed); NULL: dynamic */
	/* the user's check (argv and verdict options, borrowed); NULL: built-in */
	const struct wh_check_options *check;
	struct wh_compare_options compare;     /* built-in check and the layerwise comparison */
	uint32_t builds;                       /* builds of step 1 (>= 1) */
	struct wh_build_options build;         /* timing; .seed is ignored (build k: seed k) */
	int threads;
	bool cuda;                             /* --device cuda:N: runs and built-in checks on that
						* GPU (FP32 references stay on the CPU) */
	int cuda_device;
	bool allow_reduced;                    /* --allow-reduced-precision-reduction (GPU tactics) */
	int jobs;                              /* checks in flight (step 1: builds; steps 4, 5) */
	const char *faulty_tactic;             /* WHITTLE_FAULTY_TACTIC (fault injection), or NULL */
	const char *model_path;
	bool inlined;                          /* the model is model_path's with an If inlined
						* (the front end did it): written to
						* DIR/model-inlined.onnx, which convert and trtexec read */
	const char *artifacts_dir;             /* required */
	bool force;                            /* write into a folder holding an earlier run's files */
	const struct wh_save_opts *save;       /* how models are saved; NULL: the defaults */
	bool graphviz;                         /* draw the subgraph with `dot` when installed */
	bool precision_search;                 /* step 5 */
	const char *prior;                     /* --prior of steps 4 and 5 (reducer/prior.h); NULL: their defaults */
	/* the whittle binary, for checking that repro/command.sh still fails; NULL: skip that */
	const char *whittle_path;
	bool json;                             /* the result as one JSON object on stdout */
	FILE *log;                             /* one line per step (stderr); may be NULL */
	FILE *out;                             /* the answer in words (stdout); may be NULL */
};

struct wh_triage_report {
	enum wh_triage_outcome outcome;
	uint32_t builds, n_good, n_bad;
	char layer[256], op[64];   /* the answer's layer: culprit or first failing layer */
	char tactic[128];          /* flaky: the culprit tactic */
	uint32_t subgraph_layers;  /* layers of the repro model */
	uint32_t keep_layers;      /* layers the precision search keeps in FP32 (0: not run) */
	uint32_t checks;           /* every check run, all steps */
	double seconds;
	bool repro_checked;        /* command.sh was run */
	int repro_exit;            /* its exit status */
	bool repro_fails;          /* it still fails (the check's verdict on its exit) */
};

/* inputs: the model's inputs (one data sample). WH_ERR_CHECK when the check is broken or
 * cannot tell on any build. */
enum wh_status wh_triage_run(const struct wh_model *m, const struct wh_tensor_set *inputs,
			     const struct wh_triage_options *o, struct wh_triage_report *rep);

#endif
