/* Where a reduced-precision failure starts: the diagnosis that `run --compare`, triage and
 * their reports share.
 *
 * For every float layer, the error its output RECEIVES (the largest error of its float
 * inputs in the reduced run) and the error it ADDS (its output's error when the layer runs
 * alone at its precision, fed the FP32 reference inputs: what it does to exact data, its
 * input conversions included). Errors are relative L2 errors, ||a - r|| / ||r||, which
 * values near zero do not inflate. The rule that names where the failure starts:
 *  1. overflow first: the first layer in topological order that adds NaN/Inf where the
 *     reference has none (run alone on reference inputs); when no layer does so alone, the
 *     first tensor of the reduced run that holds new NaN/Inf while its inputs hold none;
 *  2. otherwise the layer adding the most error relative to what it receives:
 *     added / max(received, u), u the unit roundoff of the layer's format (error below the
 *     format's own rounding counts as none received). A layer's effect on the outputs also
 *     depends on what follows it, which no local measure sees, so the few leading layers by
 *     that score and by the error they add are tried: the model runs again with each one
 *     kept in FP32, and the one that lowers the outputs' error most is named (when one
 *     removes a tenth of it or more), with the outputs' error before and after.
 * The suggestion keeps that layer in FP32; for an overflow, also every other layer that
 * adds NaN/Inf alone and every reduced-range (fp16) consumer that would convert a reference
 * value beyond its format's range (TensorRT's semantics: each layer converts its float
 * inputs), transitively along out-of-range values.
 *
 * Ownership: the model, options and sets are borrowed; struct wh_diagnosis is caller-owned
 * (_init/_release), its layer names borrowed from the model. */
#ifndef WH_DIAGNOSE_H
#define WH_DIAGNOSE_H

#include <stdbool.h>
#include <stdint.h>

#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

struct wh_diag_layer {
	uint32_t node;          /* node id */
	uint32_t value;         /* the output compared (the worst one) */
	uint8_t exec;           /* enum wh_precision the layer runs at */
	double err_full;        /* relative L2 error of that output in the reduced run (inf: new NaN/Inf) */
	double err_received;    /* largest err_full of its float inputs (0: exact inputs) */
	double err_added;       /* relative L2 error of the output run alone on reference inputs */
	double score;           /* err_added / max(err_received, unit roundoff) */
	uint64_t nonfinite_full;  /* NaN/Inf where the reference is finite, reduced run */
	uint64_t nonfinite_added; /* the same, the layer alone on reference inputs */
	bool alone_run;         /* the layer could be run alone (else err_added is NaN) */
};

enum wh_diag_kind {
	WH_DIAG_NONE = 0,     /* nothing adds error: no start */
	WH_DIAG_OVERFLOW = 1, /* new NaN/Inf */
	WH_DIAG_ERROR = 2,    /* the largest added error */
};

struct wh_diagnosis {
	struct wh_diag_layer *layers; /* float layers with a compared output, topological order */
	uint32_t n_layers;
	int32_t start;                /* index into layers, -1: none */
	enum wh_diag_kind kind;
	uint32_t *keep;               /* node ids to keep in FP32, topological order */
	uint32_t n_keep;
	/* WH_DIAG_ERROR: the outputs' relative L2 error as run, and with the start kept in FP32
	 * (NaN when not measured); how many layers were tried so */
	double output_error, output_error_kept;
	uint32_t n_tried;
};

void wh_diagnosis_init(struct wh_diagnosis *d);
void wh_diagnosis_release(struct wh_diagnosis *d);

/* Diagnoses a reduced-precision run of m with engine options eo (its precision, tactics and
 * fault injection) whose every tensor is in `actual`, against `reference` (the FP32 run,
 * every tensor, the graph inputs included). Runs each float layer alone once (a model of
 * that layer and its constants) at its precision. Layers whose inputs the reference lacks
 * are not run alone. */
enum wh_status wh_diagnose(const struct wh_model *m, const struct wh_engine_options *eo, const struct wh_tensor_set *actual,
			   const struct wh_tensor_set *reference, struct wh_diagnosis *out);

/* The index into d->layers of node, or -1. */
int32_t wh_diagnosis_find(const struct wh_diagnosis *d, uint32_t node);

#endif
