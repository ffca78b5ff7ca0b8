/* `whittle precision`: the layers to keep in higher precision.
 *
 * Among the float layers, finds a set S such that running the model at the target precision
 * with the layers of S at the higher one passes the check, and dropping any single layer of
 * S makes it fail (1-minimal). Coarse phase: Polygraphy's bisection over a prefix (forward)
 * or suffix (reverse) of the layers in topological order; fine phase: divide and conquer
 * (reducer/search.h, with "passes" as the property searched) over the layers that remain,
 * ordered by the error each layer adds (measured once, layerwise, against FP32); then the
 * 1-minimality pass. */
#ifndef WH_PRECISION_SEARCH_H
#define WH_PRECISION_SEARCH_H

#include <stdbool.h>
#include <stdio.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"
#include "reducer/search.h"

struct wh_precision_search_options {
	enum wh_precision target, higher;
	enum wh_search_mode mode;       /* bisect or ddmin */
	bool reverse;                   /* --direction reverse: suffixes */
	const struct wh_check *check;   /* NULL: built-in comparison with FP32 */
	const char *check_display;
	const char *model_path;
	const char *const *inputs_dirs; /* per sample, for {inputs} of an external check */
	const char *const *golden_dirs; /* per sample, for {golden} (FP32 outputs); NULL: none */
	struct wh_compare_options compare;
	int threads;
	bool cuda;                      /* --device cuda:N: configurations run on that GPU (the
					 * FP32 reference stays on the CPU) */
	int cuda_device;
	bool allow_reduced;                    /* --allow-reduced-precision-reduction (GPU tactics) */
	int jobs;                       /* checks in flight (<= 1: one); the answer does not
					 * depend on it for a check that is monotone */
	const struct wh_calib *calib;
	FILE *log;
	bool json;
	/* The prior-first seed (reducer/prior.h): "none", "emulation" (whittle's own run at the
	 * target precision), "rules" (AutoCast-style: large values, large initializers, long
	 * reductions) or a prior file. Its nested keep sets are checked first; the first that
	 * passes is minimised (1-minimal) instead of bisecting the whole model; when none
	 * passes, the search below runs. NULL: emulation with an external check, rules with
	 * the built-in one. */
	const char *prior;
};

struct wh_precision_search_report {
	uint32_t candidates;     /* float layers searched */
	uint32_t checks_run, checks_cached;
	bool one_minimal;
	double seconds;
	char note[256];
	char prior[160];         /* the prior used ("" none) */
	uint32_t prior_flagged;  /* layers the prior ranks */
	int32_t prior_hit;       /* the keep set minimised, -1: none passed */
	uint32_t prior_checks;   /* checks spent on its keep sets */
};

/* result receives dflt = target and one entry per layer kept at `higher`. WH_ERR_INVALID
 * when the model already passes at the target precision, or still fails with every float
 * layer at the higher precision. inputs: n_samples data samples; a configuration passes
 * only when it passes on every sample (the check runs once per sample), so the layers found
 * are not fitted to one input. */
enum wh_status wh_precision_search(const struct wh_model *m, const struct wh_tensor_set *inputs, uint32_t n_samples,
				   const struct wh_precision_search_options *o, struct wh_precision_config *result,
				   struct wh_precision_search_report *rep);

#endif
