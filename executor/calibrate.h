/* INT8 / FP8 calibration: per-tensor amax from sample inputs, and TensorRT's calibration
 * cache text format.
 *
 * wh_calibrate runs the model in FP32 on every sample through one engine, keeping every
 * tensor of one sample at a time, and folds each float tensor (graph inputs included,
 * constants and shape arithmetic excluded) into a running maximum and, for entropy and
 * percentile, a 2048-bin histogram of |x| whose range is fixed by a first amax pass (so
 * every sample is run twice; memory is one sample's tensors plus 16 KiB per tensor).
 *  - minmax: amax = max |x| over all samples.
 *  - percentile=P: the P-th percentile of |x| over all elements of all samples, from a
 *    histogram with log-spaced bins (64 per octave over the 32 octaves below the maximum,
 *    so the answer is within 1.1 % of the exact percentile).
 *  - entropy: TensorRT's KL-divergence method (GTC 2017 "8-bit inference with TensorRT"):
 *    for each i in 128..2048, P = the first i bins with the clipped mass added to bin i-1,
 *    Q = the first i bins merged into 128 levels and spread back evenly over the bins
 *    where P is not zero; the threshold is (i + 0.5) bin widths (at most the maximum) for
 *    the i of the smallest KL(P||Q). A level that is empty where P has clipped mass gets
 *    probability 1e-4 instead of 0 (so clipping a tiny isolated tail is possible). Exact
 *    zeros are left out of this histogram: int8 represents them exactly.
 * Non-finite values are skipped (and counted in a warning).
 *
 * The cache: first line "TRT-<version>-<algorithm>", then "<tensor>: <8 hex digits>", the
 * bits of the float32 scale amax/127 (TensorRT's int8 scale, also for fp8 runs: the cache
 * stores amax, the precision decides the grid). Reading maps each scale back to an amax
 * that writes the same digits again.
 *
 * Everything here returns results through caller-owned struct wh_calib (precision.h). */
#ifndef WH_CALIBRATE_H
#define WH_CALIBRATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

enum wh_calib_method {
	WH_CALIB_MINMAX = 0,
	WH_CALIB_ENTROPY,
	WH_CALIB_PERCENTILE,
};

#define WH_CALIB_DEFAULT_PERCENTILE 99.99
#define WH_CALIB_HIST_BINS 2048
/* Header version written into caches (TensorRT 8.6.1). */
#define WH_CALIB_TRT_VERSION "8601"

/* "minmax", "entropy", "percentile" or "percentile=P" (0 < P <= 100); *percentile_out gets
 * P (WH_CALIB_DEFAULT_PERCENTILE when not given). */
bool wh_calib_method_parse(const char *s, enum wh_calib_method *method_out, double *percentile_out);
const char *wh_calib_method_name(enum wh_calib_method m);
/* The algorithm of a cache header: MinMaxCalibration, EntropyCalibration2,
 * PercentileCalibration (whittle's own name; TensorRT has no percentile calibrator). */
const char *wh_calib_method_algorithm(enum wh_calib_method m);

/* Calibrates m (FP32, `threads` worker threads, <= 0 all cores) on samples[0..n_samples),
 * each a set of input tensors as wh_engine_run takes them. Adds one amax per float tensor to
 * *out (caller-initialised) in topological order, graph inputs first, and sets
 * out->algorithm. */
enum wh_status wh_calibrate(const struct wh_model *m, const struct wh_tensor_set *samples, uint32_t n_samples,
			    enum wh_calib_method method, double percentile, int threads, struct wh_calib *out);

/* The amax the method gives for the values x[0..n) (one tensor, one sample), with the same
 * histograms as wh_calibrate. */
enum wh_status wh_calib_amax_of_data(const float *x, uint64_t n, enum wh_calib_method method, double percentile,
				     float *amax_out);

/* Checks calibration samples against the model's inputs: every non-initializer input must
 * be present (by name, or input_<k> by position) with the model's element type and known
 * dimensions. labels[k] names sample k in messages (may be NULL). WH_ERR_INVALID when
 * n_samples is 0, WH_ERR_SHAPE / WH_ERR_NOT_FOUND naming the sample and the input. */
enum wh_status wh_calib_check_samples(const struct wh_model *m, const struct wh_tensor_set *samples,
				      uint32_t n_samples, const char *const *labels);

/* The largest finite |x| of each float graph input over the samples, into *out. */
enum wh_status wh_calib_input_amax(const struct wh_model *m, const struct wh_tensor_set *samples, uint32_t n_samples,
				   struct wh_calib *out);

/* int8 scale of an amax (amax / 127, as the emulation computes it) and back. */
float wh_calib_scale_of_amax(float amax);
float wh_calib_amax_of_scale(float scale);

/* Writes the cache (header algorithm c->algorithm, or EntropyCalibration2 when empty);
 * to a temporary file renamed over path, so a failed write leaves no half cache. */
enum wh_status wh_calib_cache_write(const struct wh_calib *c, const char *path);
enum wh_status wh_calib_cache_print(const struct wh_calib *c, FILE *f);
/* Reads a cache into *out (caller-initialised): WH_ERR_PARSE naming the file and line for a
 * bad header, a line without ": ", or a value that is not 8 hex digits of a finite,
 * non-negative float. */
enum wh_status wh_calib_cache_read(const char *path, struct wh_calib *out);
enum wh_status wh_calib_cache_parse(const char *text, size_t len, const char *label, struct wh_calib *out);

/* Warnings (wh_warn), for a table read from `label`: names that are not tensors of m (each
 * named, up to 10, then a count) and float tensors of m the table lacks. Returns the count
 * of unknown names. */
uint32_t wh_calib_warn_names(const struct wh_calib *c, const struct wh_model *m, const char *label);
/* Warns when the table's algorithm is not the one the method writes. Returns true if so. */
bool wh_calib_warn_algorithm(const struct wh_calib *c, enum wh_calib_method asked, const char *label);
/* Warns for each float graph input whose amax in `inputs` (the run's, by `method`, so that a
 * clipping method is compared with its own kind) is more than twice or less than half the
 * amax in ref. Returns the count. */
uint32_t wh_calib_warn_inputs(const struct wh_model *m, const struct wh_calib *ref, enum wh_calib_method method,
			      double percentile, const struct wh_tensor_set *inputs, const char *label);
/* The method a cache header's algorithm names (Entropy*, MinMax*, Percentile*); false for
 * others (e.g. LegacyCalibration). */
bool wh_calib_algorithm_method(const char *algorithm, enum wh_calib_method *out);

#endif
