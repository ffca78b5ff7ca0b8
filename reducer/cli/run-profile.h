/* Private to the front end: `whittle run --profile`, the per-layer time table (cmd-run.c
 * asks for it; the engine, created with its profile option on, measures). */
#ifndef WH_RUN_PROFILE_H
#define WH_RUN_PROFILE_H

#include <stdbool.h>

#include "executor/executor.h"
#include "graph/tensor-file.h"

/* Runs e (created with opt->profile) `iterations` times on inputs and prints, per layer in
 * execution order, the median time, its share of the median total run time, the tactic
 * and for Conv/ConvTranspose/MatMul/Gemm the GFLOP/s, then the same per op type (sorted by
 * time); as text, or with json one object {"model", "profile": {...}} (docs/run.md).
 * Also prints `median_ms` and `peak_rss_mb` as --iterations does (text only). */
enum wh_status wh_run_profile(struct wh_engine *e, const char *model_path, const struct wh_tensor_set *inputs,
			      long long iterations, bool json);

#endif
