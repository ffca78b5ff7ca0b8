/* sanitize: Constant nodes become initializers, subgraphs computable from constants and
 * static shapes are folded into initializers (shape arithmetic; --fold-constants), and
 * dead nodes (whose outputs reach no graph output) are removed. The source is unchanged;
 * the result is a new model owned by the caller. */
#ifndef WH_SANITIZE_H
#define WH_SANITIZE_H

#include <stdbool.h>

#include "graph/ir.h"

struct wh_sanitize_options {
	bool fold_constants;
	/* largest tensor (in elements) that folding may create; 0 for the default (1<<20) */
	uint64_t max_fold_elements;
};

struct wh_sanitize_stats {
	uint32_t constants_lifted, nodes_folded, dead_removed;
};

enum wh_status wh_model_sanitize(const struct wh_model *m, const struct wh_sanitize_options *opt,
				 struct wh_model **out, struct wh_sanitize_stats *stats_out);

#endif
