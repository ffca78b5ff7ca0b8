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

struct wh_tactic_blocklist;

struct wh_build_options {
	int timing_iterations;   /* runs per tactic (median kept); default 3 */
	double timing_tolerance; /* see above; default 0.05 */
	uint64_t seed;           /* picks among equally fast tactics */
	const char *timing_cache;/* JSON file of measured times, read and updated; may be NULL */
	/* tactics kept out (a block list, docs/formats.md), borrowed; may be NULL */
	const struct wh_tactic_blocklist *block;
};

/* A block list: (layer, tactic) pairs a build never picks, like cuDNN's errata file. Layer
 * "*" stands for every layer. Caller-owned (_release frees what _read and _add made). */
struct wh_tactic_block {
	char *layer, *tactic, *why;
};
struct wh_tactic_blocklist {
	uint32_t n, cap;
	struct wh_tactic_block *b;
	char device[256]; /* where it was found ("" for the CPU) */
};
void wh_tactic_blocklist_release(struct wh_tactic_blocklist *l);
enum wh_status wh_tactic_blocklist_add(struct wh_tactic_blocklist *l, const char *layer, const char *tactic, const char *why);
bool wh_tactic_blocked(const struct wh_tactic_blocklist *l, const char *layer, const char *tactic);
/* {"format": "whittle-blocklist", "version": 1, "device": ..., "blocked": [{"layer",
 * "tactic", "why"}...]}; a path that does not exist is an error. */
enum wh_status wh_tactic_blocklist_read(const char *path, struct wh_tactic_blocklist *l);
enum wh_status wh_tactic_blocklist_write(const struct wh_tactic_blocklist *l, const char *path);

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
