/* Private to executor/: what the runtime offers the builder.
 *
 * The calls go one way: the builder (builder.c) creates and runs engines; the runtime
 * (runtime.c) never calls the builder. An engine made for a build carries a tactic chooser,
 * a callback the builder passes in, which the runtime asks at every layer of the main graph
 * whose op has tactics, with the layer's actual inputs bound in ctx. */
#ifndef WH_BUILD_INTERNAL_H
#define WH_BUILD_INTERNAL_H

#include "executor/executor.h"
#include "executor/kernel.h"

struct wh_tactic_chooser {
	/* Returns the tactic to run for ctx->node (*out NULL: the op's default runs). It may run
	 * eligible tactics on ctx to time them; it leaves ctx->outputs released and ctx->tactic
	 * NULL. */
	enum wh_status (*choose)(void *state, struct wh_kernel_ctx *ctx, const struct wh_op_def *op,
				 const struct wh_tactic **out);
	void *state;
};

/* wh_engine_create for a build: opt->tactics (a replay) is ignored; chooser (borrowed, must
 * outlive the engine) picks every tactic, and --fp16-accumulate leaves the choice to it. */
enum wh_status wh_engine_create_for_build(const struct wh_model *m, const struct wh_engine_options *opt,
					  const struct wh_tactic_chooser *chooser, struct wh_engine **out);

#endif
