/* Looking inside control flow: an If whose branch was the same for every sample of a
 * reference run is inlined (graph/inline.h), so that reduce, precision and the --mark-all
 * diagnosis see the branch's layers rather than one If layer.
 *
 * The reference run is an FP32 run of the model on the CPU, one per sample, recording the
 * branch each If took (wh_engine_if_branches, executor.h), nested Ifs included. An If whose
 * samples took both branches stays one layer, and so does each Loop and Scan (whittle does
 * not look inside their bodies); each gets a note.
 *
 * Ownership: the model, options and samples are borrowed; *out is the caller's. */
#ifndef WH_CONTROL_FLOW_H
#define WH_CONTROL_FLOW_H

#include <stdint.h>

#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

/* One note, for the log: names in it are escaped for the terminal (graph/names.h). */
typedef void (*wh_cf_note_fn)(void *state, const char *line);

/* Whether m's main graph has an If, Loop or Scan node (nothing to look inside otherwise). */
bool wh_model_has_control_flow(const struct wh_model *m);

/* Runs m in FP32 on each sample (threads from eo; everything else of eo is ignored) and
 * inlines every If that took one branch on all of them. *out: the inlined model, or NULL
 * when no If was inlined (m has none, or none took one branch). An If the inlining refuses
 * (graph/inline.h) leaves *out NULL with a note, not an error; the run's errors are
 * errors. */
enum wh_status wh_model_inline_taken(const struct wh_model *m, const struct wh_engine_options *eo,
				     const struct wh_tensor_set *samples, uint32_t n_samples, struct wh_model **out,
				     wh_cf_note_fn note, void *state);

#endif
