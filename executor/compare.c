#include "executor/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "graph/names.h"

void wh_compare_options_default(struct wh_compare_options *o)
{
	o->atol = 1e-5;
	o->rtol = 1e-5;
	o->stat = WH_STAT_ELEMWISE;
	o->quantile = 0.99;
}

bool wh_error_stat_parse(const char *s, enum wh_error_stat *out, double *quantile_out)
{
	if (!strcmp(s, "elemwise")) *out = WH_STAT_ELEMWISE;
	else if (!strcmp(s, "max")) *out = WH_STAT_MAX;
	else if (!strcmp(s, "mean")) *out = WH_STAT_MEAN;
	else if (!strcmp(s, "median")) *out = WH_STAT_MEDIAN;
	else if (!strncmp(s, "quantile", 8)) {
		*out = WH_STAT_QUANTILE;
		if (s[8] == '=' || s[8] == ':') {
			char *end;
			double q = strtod(s + 9, &end);
			if (*end || q < 0 || q > 1)
				return false;
			*quantile_out = q;
		} else if (s[8]) {
			return false;
		}
	} else
		return false;
	return true;
}

/* The k-th smallest of v[0..n) (Hoare's selection; v is reordered). */
static double select_kth(double *v, uint64_t n, uint64_t k)
{
	uint64_t lo = 0, hi = n - 1;
	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		uint64_t i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				double t = v[i];
				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/* The q-quantile with linear interpolation between order statistics (numpy's default). */
static double quantile_of(double *v, uint64_t n, double q)
{
	if (!n)
		return 0;
	double pos = q * (double)(n - 1);
	uint64_t lo = (uint64_t)pos;
	uint64_t hi = lo + 1 < n ? lo + 1 : lo;
	double frac = pos - (double)lo;
	double a = select_kth(v, n, lo);
	if (hi == lo || frac == 0 || isinf(a))
		return a;
	/* after selecting lo, the next order statistic is the minimum of what lies above */
	double b = v[hi];
	for (uint64_t i = hi; i < n; i++)
		if (v[i] < b)
			b = v[i];
	if (isinf(b) || a == b)
		return b == a ? a : b; /* no inf - inf */
	return a + (b - a) * frac;
}

/* Integers are compared as integers: int64 and uint64 do not fit a double (2^62 + 1 and
 * 2^62 are one double). */
static bool is_exact_int(enum wh_dtype dt)
{
	return wh_dtype_is_int(dt) || dt == WH_DT_BOOL;
}

static void int_elem(const struct wh_tensor *t, uint64_t i, bool *neg, uint64_t *mag)
{
	if (t->dtype == WH_DT_UINT64) {
		*neg = false;
		*mag = ((const uint64_t *)t->data)[i];
		return;
	}
	int64_t v = wh_tensor_get_i64(t, i);
	*neg = v < 0;
	*mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* |a[i] - r[i]| computed exactly, rounded once to a double: a difference is never 0 */
static double int_abs_diff(const struct wh_tensor *a, const struct wh_tensor *r, uint64_t i)
{
	bool na, nr;
	uint64_t ma, mr;
	int_elem(a, i, &na, &ma);
	int_elem(r, i, &nr, &mr);
	if (na != nr)
		return (double)ma + (double)mr;
	return (double)(ma > mr ? ma - mr : mr - ma);
}

enum wh_status wh_compare_tensors(const struct wh_tensor *actual, const struct wh_tensor *ref,
				  const struct wh_compare_options *o, struct wh_compare_stats *out)
{
	memset(out, 0, sizeof *out);
	char a[96], b[96];
	if (actual->kind != ref->kind) {
		snprintf(out->reason, sizeof out->reason, "a %s vs a reference %s", wh_value_kind_name(actual), wh_value_kind_name(ref));
		return WH_OK;
	}
	if (actual->kind == WH_VALUE_NONE) {
		out->comparable = true;
		out->pass = true;
		return WH_OK;
	}
	if (actual->kind == WH_VALUE_SEQUENCE) {
		/* item by item: the stats are those of the first failing item, or else of the item
		 * with the largest absolute error; the reason names the item */
		if (wh_seq_len(actual) != wh_seq_len(ref)) {
			snprintf(out->reason, sizeof out->reason, "sequence of %u items vs reference %u", wh_seq_len(actual),
				 wh_seq_len(ref));
			return WH_OK;
		}
		out->comparable = true;
		out->pass = true;
		for (uint32_t i = 0; i < wh_seq_len(ref); i++) {
			struct wh_compare_stats si;
			enum wh_status st = wh_compare_tensors(wh_seq_item(actual, i), wh_seq_item(ref, i), o, &si);
			if (st != WH_OK)
				return st;
			bool worse = (!si.pass || !si.comparable) || (out->pass && si.max_abs >= out->max_abs);
			if (worse) {
				char why[120];
				snprintf(why, sizeof why, "%.119s", si.reason);
				*out = si;
				snprintf(out->reason, sizeof out->reason, "sequence item %u%s%.119s", i, why[0] ? ": " : "", why);
			}
			if (!si.pass || !si.comparable)
				break;
		}
		return WH_OK;
	}
	if (!wh_tensor_same_shape(actual, ref)) {
		snprintf(out->reason, sizeof out->reason, "shape %s vs reference %s",
			 wh_shape_str(actual->dims, actual->rank, a, sizeof a), wh_shape_str(ref->dims, ref->rank, b, sizeof b));
		return WH_OK;
	}
	if (actual->dtype == WH_DT_STRING || ref->dtype == WH_DT_STRING) {
		snprintf(out->reason, sizeof out->reason, "string tensors are not compared numerically");
		out->comparable = false;
		return WH_OK;
	}
	out->comparable = true;
	uint64_t n = ref->count;
	out->count = n;
	double *abs_e = malloc((n ? n : 1) * sizeof *abs_e);
	double *rel_e = malloc((n ? n : 1) * sizeof *rel_e);
	if (!abs_e || !rel_e) {
		free(abs_e);
		free(rel_e);
		return wh_error(WH_ERR_NOMEM, "compare: out of memory");
	}
	double sum_abs = 0, sum_rel = 0, dot = 0, na = 0, nr = 0, err2 = 0;
	uint64_t m = 0; /* finite pairs */
	bool exact_int = is_exact_int(actual->dtype) && is_exact_int(ref->dtype);
	struct wh_compare_options int_o = *o;
	if (exact_int) {
		int_o.rtol = -1; /* integers fail on atol alone: a relative tolerance lets large ones differ */
		o = &int_o;
	}
	for (uint64_t i = 0; i < n; i++) {
		double x = wh_tensor_get_f64(actual, i), y = wh_tensor_get_f64(ref, i);
		/* isnan/isinf are only nonzero, not 1 (glibc's isinf(-inf) is -1) */
		out->nan_actual += isnan(x) != 0;
		out->inf_actual += isinf(x) != 0;
		out->nan_ref += isnan(y) != 0;
		out->inf_ref += isinf(y) != 0;
		double ae, re;
		if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
			bool same = (isnan(x) && isnan(y)) || (x == y);
			out->nonfinite_mismatch += !same;
			ae = same ? 0 : INFINITY;
			re = same ? 0 : INFINITY;
		} else {
			ae = exact_int ? int_abs_diff(actual, ref, i) : fabs(x - y);
			re = y != 0 ? ae / fabs(y) : (ae == 0 ? 0 : INFINITY);
			dot += x * y;
			na += x * x;
			nr += y * y;
			err2 += ae * ae;
		}
		abs_e[m] = ae;
		rel_e[m] = re;
		m++;
		if (ae > out->max_abs)
			out->max_abs = ae;
		if (re > out->max_rel)
			out->max_rel = re;
		sum_abs += ae;
		sum_rel += re;
		out->share_rel_10 += re > 0.1;
		out->share_rel_1 += re > 0.01;
		out->share_rel_01 += re > 0.001;
		if (ae > o->atol && re > o->rtol)
			out->failing++;
		int bin = ae <= 0 ? 0 : (int)floor(log10(ae)) + 10;
		if (bin < 0)
			bin = 0;
		if (bin >= WH_HIST_BINS)
			bin = WH_HIST_BINS - 1;
		out->hist[bin]++;
	}
	if (n) {
		out->mean_abs = sum_abs / (double)n;
		out->mean_rel = sum_rel / (double)n;
		out->share_rel_10 /= (double)n;
		out->share_rel_1 /= (double)n;
		out->share_rel_01 /= (double)n;
	}
	/* NaN never enters: non-finite pairs were turned into 0 or inf above */
	out->median_abs = quantile_of(abs_e, m, 0.5);
	out->median_rel = quantile_of(rel_e, m, 0.5);
	out->quantile_abs = quantile_of(abs_e, m, o->quantile);
	out->quantile_rel = quantile_of(rel_e, m, o->quantile);
	/* over the finite pairs; a pair that differs in NaN or Inf is an infinite error, which
	 * no angle or ratio of finite sums describes: cosine undefined, SQNR -inf */
	if (out->nonfinite_mismatch) {
		out->cosine = NAN;
		out->sqnr_db = -INFINITY;
	} else {
		out->cosine = (na > 0 && nr > 0) ? dot / (sqrt(na) * sqrt(nr)) : (na == nr ? 1.0 : NAN);
		out->sqnr_db = err2 > 0 ? 10 * log10(nr / err2) : INFINITY;
	}
	free(abs_e);
	free(rel_e);
	switch (o->stat) {
	case WH_STAT_ELEMWISE: out->pass = out->failing == 0; break;
	case WH_STAT_MAX: out->pass = !(out->max_abs > o->atol && out->max_rel > o->rtol); break;
	case WH_STAT_MEAN: out->pass = !(out->mean_abs > o->atol && out->mean_rel > o->rtol); break;
	case WH_STAT_MEDIAN: out->pass = !(out->median_abs > o->atol && out->median_rel > o->rtol); break;
	case WH_STAT_QUANTILE: out->pass = !(out->quantile_abs > o->atol && out->quantile_rel > o->rtol); break;
	}
	if (actual->dtype != ref->dtype)
		snprintf(out->reason, sizeof out->reason, "types differ (%s vs reference %s); compared as numbers",
			 wh_dtype_name(actual->dtype), wh_dtype_name(ref->dtype));
	return WH_OK;
}

void wh_compare_print(FILE *f, const char *name, const struct wh_compare_stats *s, bool verbose)
{
	if (!s->comparable) {
		fprintf(f, "FAIL %s: %s\n", wh_name_term(name), s->reason);
		return;
	}
	fprintf(f, "%s %s: max_abs %.4g mean_abs %.4g median_abs %.4g | max_rel %.4g mean_rel %.4g median_rel %.4g | cosine %.8f sqnr %.2f dB | rel>10%% %.3f%% >1%% %.3f%% >0.1%% %.3f%%",
		s->pass ? "PASS" : "FAIL", wh_name_term(name), s->max_abs, s->mean_abs, s->median_abs, s->max_rel, s->mean_rel,
		s->median_rel, s->cosine, s->sqnr_db, 100 * s->share_rel_10, 100 * s->share_rel_1, 100 * s->share_rel_01);
	if (s->nan_actual || s->inf_actual || s->nan_ref || s->inf_ref)
		fprintf(f, " | nan %llu inf %llu (reference nan %llu inf %llu), %llu mismatched", (unsigned long long)s->nan_actual,
			(unsigned long long)s->inf_actual, (unsigned long long)s->nan_ref, (unsigned long long)s->inf_ref,
			(unsigned long long)s->nonfinite_mismatch);
	if (s->failing)
		fprintf(f, " | %llu of %llu elements fail", (unsigned long long)s->failing, (unsigned long long)s->count);
	fprintf(f, "\n");
	if (verbose && s->count) {
		static const char *const label[WH_HIST_BINS] = {"      0..1e-9", "  1e-9..1e-8", "  1e-8..1e-7", "  1e-7..1e-6",
							     "  1e-6..1e-5", "  1e-5..1e-4", "  1e-4..1e-3", "  1e-3..1e-2",
							     "  1e-2..1e-1", "     >= 1e-1"};
		uint64_t maxc = 1;
		for (int i = 0; i < WH_HIST_BINS; i++)
			if (s->hist[i] > maxc)
				maxc = s->hist[i];
		for (int i = 0; i < WH_HIST_BINS; i++) {
			int bar = (int)(40.0 * (double)s->hist[i] / (double)maxc);
			fprintf(f, "    abs err %s | %-40.*s %llu\n", label[i], bar, "########################################",
				(unsigned long long)s->hist[i]);
		}
	}
}
