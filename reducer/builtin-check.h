/* The built-in check: run a model (the original, a candidate, a pinned build, one layer) at
 * the engine options' precision and compare what it computes with the FP32 reference. The
 * one definition that reduce, precision, build and triage share, so that a verdict means the
 * same in every command.
 *
 * The rule per tensor (wh_builtin_compare_tensor): float tensors are compared as numbers
 * with the tolerances (executor/compare.h, Polygraphy's semantics); tensors that are not
 * floats (strings, booleans, integers) are compared exactly: equal is a pass, whatever the
 * tolerances (reduced precision never changes them unless something is wrong). Sequences
 * are compared item by item; a shape, type or kind mismatch fails. A tensor the reference
 * does not hold is not compared.
 *
 * The tensor measures at the end (relative L2 error, largest magnitude) read elements; they
 * live here so that the reducer reads tensor elements in one file only.
 *
 * Ownership: everything is borrowed; results are plain values written by the callee. */
#ifndef WH_BUILTIN_CHECK_H
#define WH_BUILTIN_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/compare.h"
#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"

struct wh_builtin_check_options {
	struct wh_compare_options compare; /* tolerances of the float tensors */
	bool all_tensors;                  /* compare every tensor the run keeps, not only the outputs */
	/* compare.validate: fail only on NaN/Inf the reference lacks (`--validate`), read by
	 * wh_builtin_compare_tensor; wh_builtin_check_run then looks at every tensor of the run
	 * that the reference holds (so give it every tensor: wh_builtin_reference keep_all) */
};

struct wh_builtin_check_result {
	enum wh_verdict verdict;       /* pass or fail (never skip) */
	char why[192];                 /* the first failing tensor, or the tolerances it met */
	struct wh_compare_stats stats; /* the failing tensor's, else the last compared one's */
	bool has_stats;                /* some tensor was compared */
};

/* The rule for one tensor: stats->pass and stats->comparable say the verdict. Non-float
 * tensors compared exactly have stats->failing = the elements that differ, and max_abs
 * (max_rel) 0 when equal, inf for a string that differs. */
enum wh_status wh_builtin_compare_tensor(const struct wh_tensor *actual, const struct wh_tensor *ref,
					 const struct wh_compare_options *o, struct wh_compare_stats *stats);

/* Compares every named tensor of `actual` that `reference` holds; stops at the first
 * failing one. what: "output" or "tensor", for the why text. */
enum wh_status wh_builtin_compare_sets(const struct wh_tensor_set *actual, const struct wh_tensor_set *reference,
				       const struct wh_compare_options *o, const char *what,
				       struct wh_builtin_check_result *out);

/* The model's inputs (initializers aside) taken by name from a reference set. WH_ERR_NOT_FOUND
 * naming the tensor when the reference lacks one. `ins` is initialised by the caller. */
enum wh_status wh_builtin_inputs_from(const struct wh_model *m, const struct wh_tensor_set *reference,
				      struct wh_tensor_set *ins);

/* Runs m with engine options eo on n_samples data samples and compares with the reference:
 * fails when it fails on any sample (the later samples are not run). inputs: per sample, or
 * NULL to take the model's inputs from reference[k] (a candidate cut out of a larger model). */
enum wh_status wh_builtin_check_run(const struct wh_model *m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *inputs, const struct wh_tensor_set *reference,
				    uint32_t n_samples, const struct wh_builtin_check_options *o,
				    struct wh_builtin_check_result *out);

/* Where the FP32 references below run: the CPU (the default: the CPU executor is the
 * reference implementation, and a reference from the device under test could carry that
 * device's own fault into every verdict) or CUDA GPU `device` (--reference-device cuda:N:
 * faster for large models; FP32 with TF32 off, within 1e-4 of the CPU, docs/gpu.md).
 * Process-wide: the front end sets it once, before any reference is computed. */
void wh_builtin_reference_device(bool cuda, int device);

/* The FP32 reference of m on n_samples data samples: an FP32 run with each op's default
 * implementation, every tensor kept with keep_all, else the outputs. out: n_samples sets,
 * initialised by the caller. */
enum wh_status wh_builtin_reference(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs,
				    uint32_t n_samples, bool keep_all, struct wh_tensor_set *out);

/* The same FP32 run, every tensor handed to fn as it is computed (executor.h,
 * wh_engine_run_each) instead of kept: the caller keeps or writes away what it wants, so the
 * run holds no more than it needs at once. */
typedef enum wh_status (*wh_builtin_tensor_fn)(void *state, uint32_t sample, const char *name, const struct wh_tensor *t);
enum wh_status wh_builtin_reference_each(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs,
					 uint32_t n_samples, wh_builtin_tensor_fn fn, void *state);

/* Adds the model's inputs (initializers aside) from `inputs` to `ref` when it lacks them
 * (matched by name, or by position for unnamed items of `inputs`): the inputs are
 * reference values too, for candidates that start at them. */
enum wh_status wh_builtin_add_inputs(const struct wh_model *m, const struct wh_tensor_set *inputs,
				     struct wh_tensor_set *ref);

/* ||a - r|| / ||r|| over the elements where r is finite; 1e6 when a holds NaN or Inf there
 * (an overflow); 0 when the counts differ. Cheaper than the comparison statistics (no
 * medians), which matters with every tensor kept. */
double wh_builtin_rel_l2(const struct wh_tensor *a, const struct wh_tensor *r);

/* The largest finite magnitude of a float tensor; 0 for other tensors and NULL. */
double wh_builtin_abs_max(const struct wh_tensor *t);

#endif
