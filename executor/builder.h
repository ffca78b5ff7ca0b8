/* The builder: chooses a tactic for every layer that has several, by timing them on real
 * inputs, like TensorRT's builder, and records the choices in a tactic plan
 * (executor/tactic-plan.h: the replay file that pins them). It drives the runtime; the
 * runtime never calls the builder (see executor/build-internal.h).
 *
 * Timing noise is what makes real builds differ. whittle's timings are noisy too, and
 * `timing_tolerance` makes the effect reproducible: every tactic within that fraction of
 * the fastest one counts as equally fast, and the build seed picks among them. With
 * tolerance 0 the fastest measured tactic wins. */
#ifndef WH_BUILDER_H
#define WH_BUILDER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/executor.h"
#include "executor/tactic-plan.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

struct wh_build_options {
	int timing_iterations;   /* runs per tactic (median kept); default 3 */
	double timing_tolerance; /* see above; default 0.05 */
	uint64_t seed;           /* picks among equally fast tactics */
	const char *timing_cache;/* JSON file of measured times, read and updated; may be NULL */
};

/* Builds: runs the model once on inputs, timing the eligible tactics of every layer that
 * has some, and fills plan. */
enum wh_status wh_engine_build(const struct wh_model *m, const struct wh_engine_options *eo,
			       const struct wh_tensor_set *inputs, const struct wh_build_options *bo,
			       struct wh_tactic_plan *plan);

/* Every layer's eligible tactics for the given inputs, printed one line per layer
 * ("layer op: tactic (id) [numerics], ..."). */
enum wh_status wh_engine_list_tactics(const struct wh_model *m, const struct wh_engine_options *eo,
				      const struct wh_tensor_set *inputs, FILE *out);

#endif
