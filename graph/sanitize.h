/* sanitize: Constant nodes become initializers, subgraphs computable from constants and
 * static shapes are folded into initializers (--fold-constants, computed by the options'
 * evaluator), an If whose condition folds is replaced by its branch (graph/inline.h; then
 * the branch's own Ifs, level by level), and dead nodes (whose outputs reach no graph
 * output) are removed. The source is unchanged; the result is a new model owned by the
 * caller. --bind-input makes graph inputs constants first (a sample rate, a mode flag), so
 * that what depends on them folds. */
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
	uint32_t ifs_folded; /* If nodes replaced by the branch their constant condition picks */
};

enum wh_status wh_model_sanitize(const struct wh_model *m, const struct wh_sanitize_options *opt,
				 struct wh_model **out, struct wh_sanitize_stats *stats_out);

/* --bind-input NAME=VALUE[,NAME=VALUE...]: one number (or true/false) per input. Parsed
 * into malloc'd bindings (free with wh_input_bindings_free); WH_ERR_USAGE with the reason
 * (the caller adds the option) on bad syntax or an input named twice. */
struct wh_input_binding {
	char *name;
	double value;
};
enum wh_status wh_input_bindings_parse(const char *spec, struct wh_input_binding **out, uint32_t *n_out);
void wh_input_bindings_free(struct wh_input_binding *b, uint32_t n);
/* Makes each named graph input of m an initializer (m is changed) holding the value in the
 * input's type and shape: the input must be a number or boolean tensor of one element (a
 * scalar, or dimensions of 1; an open dimension is taken as 1). WH_ERR_NOT_FOUND for a name
 * that is no graph input; WH_ERR_USAGE for a fraction given to an integer input. */
enum wh_status wh_model_bind_input_values(struct wh_model *m, const struct wh_input_binding *b, uint32_t n);

#endif
