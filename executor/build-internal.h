/* Private to executor/: the hooks between the runtime and the builder. */
#ifndef WH_BUILD_INTERNAL_H
#define WH_BUILD_INTERNAL_H

#include "executor/builder.h"
#include "executor/kernel.h"

struct wh_build_state {
	const struct wh_build_options *bo;
	struct wh_tactic_plan *plan;
	uint64_t rng;
	struct wh_timing_cache *cache; /* may be NULL */
	FILE *list;                    /* list mode: print eligible tactics instead of timing */
};

/* Times the eligible tactics of the node (ctx holds its actual inputs) and returns the
 * chosen one (NULL when none is eligible: the op's default runs). Records the choice. */
enum wh_status wh_build_choose(struct wh_build_state *b, struct wh_kernel_ctx *ctx, const struct wh_op_def *op,
			       const struct wh_tactic **out);
/* Fault injection: deterministically corrupts the float outputs of a node. */
void wh_corrupt_outputs(struct wh_kernel_ctx *ctx);

#endif
