/* The prior of the prior-first search (reducer/search.h): a ranking of a model's layers by
 * how likely each is to cause the failure, and the nested candidates made from it.
 *
 *  - emulation: whittle's own run at the failure's precision, diagnosed layer by layer
 *    (executor/diagnose.h): a layer that adds NaN/Inf alone ranks first (topological
 *    order among them), the diagnosis' named start next, then the rest by the error each
 *    adds relative to what it receives (the diagnosis' score);
 *  - a file: {"layers": {"NAME": score, ...}} (docs/formats.md), higher is more suspect,
 *    e.g. from another tool;
 *  - rules: ModelOpt AutoCast's cheap rules: a layer whose FP32 inputs or output hold a
 *    value above 512 in magnitude, one reading an initializer above 65504 (fp16's
 *    largest), or a reduction over more than 4096 values (docs/precision-search.md).
 * Nodes the ranking does not score (NaN) are never in a candidate.
 *
 * Ownership: struct wh_prior is caller-owned (_init/_release); the model is borrowed. */
#ifndef WH_PRIOR_H
#define WH_PRIOR_H

#include <stdbool.h>
#include <stdint.h>

#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

struct wh_prior {
	double *score;     /* per node id of the main graph; NaN: not scored */
	uint32_t n_nodes;
	char source[128];  /* for the log: "emulation at fp16", "file prior.json", ... */
};

void wh_prior_init(struct wh_prior *p);
void wh_prior_release(struct wh_prior *p);

/* Runs m at eo's precision (fp16 when eo->precision is NULL) and in FP32 on one sample
 * (inputs) and ranks the float layers by the diagnosis. */
enum wh_status wh_prior_emulation(const struct wh_model *m, const struct wh_engine_options *eo, const struct wh_tensor_set *inputs,
				  struct wh_prior *out);

/* Reads a prior file. Names the model lacks are skipped (counted in *unknown); a file that
 * names none of its layers is an error. */
enum wh_status wh_prior_load(const struct wh_model *m, const char *path, struct wh_prior *out, uint32_t *unknown);

/* AutoCast-style rules on one sample (FP32 run): scores 100 (an initializer beyond 65504),
 * 2 + log2(v / 512) (a value v read or written beyond 512: the larger, the more suspect; 9 at
 * 65504), 1 (a reduction over more than 4096 values); *n_flagged layers scored. */
enum wh_status wh_prior_rules(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs, struct wh_prior *out,
			      uint32_t *n_flagged);

/* The nested candidates over a list of nodes (node ids, topological order, n of them):
 * sets[j] (n bytes, malloc'ed, the caller frees each) covers the 4^j best-ranked nodes and,
 * when connect is set, every node of the list on a path between two of them. At most
 * max_sets; a set is dropped when it is no larger than the one before or holds more than
 * half the list. *top receives the best-ranked node's list index (UINT32_MAX:
 * nothing ranked). */
enum wh_status wh_prior_sets(const struct wh_model *m, const struct wh_prior *p, const uint32_t *nodes, uint32_t n, bool connect,
			     uint32_t max_sets, uint8_t **sets, uint32_t *n_sets, uint32_t *top);

#endif
