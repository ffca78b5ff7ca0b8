/* sanitize: Constant nodes become initializers, subgraphs computable from constants and
 * static shapes are folded into initializers (--fold-constants, computed by the options'
 * evaluator), and dead nodes (whose outputs reach no graph output) are removed. The source
 * is unchanged; the result is a new model owned by the caller. */
#ifndef WH_SANITIZE_H
#define WH_SANITIZE_H

#include <stdbool.h>

#include "graph/ir.h"
#include "graph/shape.h"

struct wh_sanitize_options {
	bool fold_constants;
	/* largest tensor (in elements) that folding may create; 0 for the default (1<<20) */
	uint64_t max_fold_elements;
	/* what computes the folded values: the executor's kernels (wh_executor_fold_eval);
	 * NULL: integer shape arithmetic only (graph/ has no kernels of its own) */
	wh_fold_fn evaluate;
};

struct wh_sanitize_stats {
	uint32_t constants_lifted, nodes_folded, dead_removed;
};

enum wh_status wh_model_sanitize(const struct wh_model *m, const struct wh_sanitize_options *opt,
				 struct wh_model **out, struct wh_sanitize_stats *stats_out);

#endif
