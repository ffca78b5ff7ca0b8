/* Private to executor/: what the runtime offers the builder.
 *
 * The calls go one way: the builder (builder.c) creates and runs engines; the runtime
 * (runtime.c) never calls the builder. An engine made for a build carries a tactic chooser,
 * a callback the builder passes in, which the runtime asks at every layer of the main graph
 * whose op has tactics, with the layer's actual inputs bound in ctx. */
#ifndef WH_BUILD_INTERNAL_H
#define WH_BUILD_INTERNAL_H

#include "executor/cuda/whittle-cuda.h"
#include "executor/executor.h"
#include "executor/kernel.h"

/* Runs a layer's GPU tactic `tactic` reps times (after one untimed warm-up) and gives the
 * median of its CUDA-event times in ms. */
struct wh_gpu_timer {
	enum wh_status (*time)(void *state, const char *tactic, int reps, double *ms);
	void *state;
};

struct wh_tactic_chooser {
	/* Returns the tactic to run for ctx->node (*out NULL: the op's default runs). It may run
	 * eligible tactics on ctx to time them; it leaves ctx->outputs released and ctx->tactic
	 * NULL. */
	enum wh_status (*choose)(void *state, struct wh_kernel_ctx *ctx, const struct wh_op_def *op,
				 const struct wh_tactic **out);
	/* A layer the GPU runs (--device cuda) with GPU tactics: list holds its eligible ones
	 * (n > 0; ctx has its inputs' types and shapes bound, exec its precision); *pick gets the
	 * index of the tactic to run. NULL: builds keep every layer with tactics on the CPU. */
	enum wh_status (*choose_gpu)(void *state, const struct wh_kernel_ctx *ctx, int exec, const char *device /* wh_gpu_ident */,
				     const struct whcu_tactic *list, uint32_t n, const struct wh_gpu_timer *timer, uint32_t *pick);
	void *state;
};

/* wh_engine_create for a build: opt->tactics (a replay) is ignored; chooser (borrowed, must
 * outlive the engine) picks every tactic, and --fp16-accumulate leaves the choice to it. */
enum wh_status wh_engine_create_for_build(const struct wh_model *m, const struct wh_engine_options *opt,
					  const struct wh_tactic_chooser *chooser, struct wh_engine **out);

#endif
