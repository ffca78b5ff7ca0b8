/* Comparison statistics between an actual and a reference tensor, with Polygraphy's
 * pass/fail semantics: an element fails when its absolute error exceeds atol AND its
 * relative error exceeds rtol (check_error_stat elemwise); with max/mean/median/quantile the
 * statistic of the absolute errors is held against atol and that of the relative errors
 * against rtol, and the tensor fails when both are exceeded. Pure functions. */
#ifndef WH_COMPARE_H
#define WH_COMPARE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/tensor.h"

enum wh_error_stat {
	WH_STAT_ELEMWISE = 0,
	WH_STAT_MAX,
	WH_STAT_MEAN,
	WH_STAT_MEDIAN,
	WH_STAT_QUANTILE,
};

struct wh_compare_options {
	double atol, rtol;            /* defaults 1e-5 each, as Polygraphy */
	enum wh_error_stat stat;
	double quantile;              /* for WH_STAT_QUANTILE, in [0,1] */
	/* `--validate` (Polygraphy's name): the verdict of a float tensor is whether it holds
	 * NaN/Inf where the reference is finite, whatever the tolerances (read by the built-in
	 * check, reducer/builtin-check.h; the statistics are computed as usual) */
	bool validate;
};

#define WH_HIST_BINS 10

struct wh_compare_stats {
	bool comparable;        /* false: dtype/shape mismatch (see reason) */
	char reason[160];
	uint64_t count;
	double max_abs, mean_abs, median_abs;
	double max_rel, mean_rel, median_rel;
	double quantile_abs, quantile_rel;
	/* over the pairs where both are finite; when any pair differs in NaN/Inf
	 * (nonfinite_mismatch) cosine is NaN and sqnr_db -inf, never "identical" */
	double cosine;          /* 1 for identical; NaN when a side is all zero */
	double sqnr_db;         /* 10 log10(sum ref^2 / sum err^2); +inf when exact */
	double share_rel_10, share_rel_1, share_rel_01; /* fraction of elements with rel > 10%, 1%, 0.1% */
	uint64_t nan_actual, inf_actual, nan_ref, inf_ref;
	uint64_t nonfinite_mismatch; /* pairs with a NaN or Inf that are not the same (an infinite error) */
	uint64_t failing;       /* elements failing the elementwise test */
	uint64_t hist[WH_HIST_BINS]; /* log10 abs error buckets: <1e-9, 1e-9.., ..., >=1 */
	bool pass;
};

void wh_compare_options_default(struct wh_compare_options *o);
bool wh_error_stat_parse(const char *s, enum wh_error_stat *out, double *quantile_out);
/* Compares actual against reference (numeric tensors; converted to double, except that
 * integer against integer is compared exactly, and fails on |difference| > atol alone). */
enum wh_status wh_compare_tensors(const struct wh_tensor *actual, const struct wh_tensor *ref,
				  const struct wh_compare_options *o, struct wh_compare_stats *out);
/* One-line summary and, when verbose, the histogram, for a named tensor. */
void wh_compare_print(FILE *f, const char *name, const struct wh_compare_stats *s, bool verbose);

#endif
