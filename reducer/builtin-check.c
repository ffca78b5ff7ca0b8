#include "reducer/builtin-check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/tensor.h"
#include "graph/dtype.h"
#include "reducer/driver-util.h"

/* Strings: equal element by element (a NULL pointer is an empty string). */
static uint64_t strings_differ(const struct wh_tensor *a, const struct wh_tensor *r)
{
	const char *const *x = a->data, *const *y = r->data;
	uint64_t n = 0;
	for (uint64_t i = 0; i < r->count; i++)
		n += strcmp(x[i] ? x[i] : "", y[i] ? y[i] : "") != 0;
	return n;
}

/* Fixed-size elements of one type: equal byte for byte. */
static uint64_t elements_differ(const struct wh_tensor *a, const struct wh_tensor *r)
{
	size_t es = wh_dtype_size(r->dtype);
	const unsigned char *x = a->data, *y = r->data;
	uint64_t n = 0;
	for (uint64_t i = 0; i < r->count; i++)
		n += memcmp(x + i * es, y + i * es, es) != 0;
	return n;
}

static bool stats_of_floats(const struct wh_tensor *a, const struct wh_tensor *r)
{
	return a->kind == WH_VALUE_TENSOR && r->kind == WH_VALUE_TENSOR && wh_dtype_is_float(a->dtype) && wh_dtype_is_float(r->dtype) &&
	       wh_tensor_same_shape(a, r);
}

/* --validate: a float tensor fails when it holds NaN/Inf where the reference is finite (an
 * overflow the reduced precision made), whatever its rounding error. */
static enum wh_status validate_tensor(const struct wh_tensor *actual, const struct wh_tensor *ref, const struct wh_compare_options *o,
				      struct wh_compare_stats *stats)
{
	enum wh_status st = wh_compare_tensors(actual, ref, o, stats);
	if (st != WH_OK || !stats->comparable)
		return st;
	uint64_t fresh = 0;
	for (uint64_t i = 0; i < ref->count; i++)
		fresh += !isfinite(wh_tensor_get_f64(actual, i)) && isfinite(wh_tensor_get_f64(ref, i));
	stats->failing = fresh;
	stats->pass = fresh == 0;
	stats->reason[0] = '\0';
	if (fresh)
		snprintf(stats->reason, sizeof stats->reason, "%llu of %llu elements are NaN/Inf where FP32 is finite", (unsigned long long)fresh,
			 (unsigned long long)ref->count);
	return WH_OK;
}

enum wh_status wh_builtin_compare_tensor(const struct wh_tensor *actual, const struct wh_tensor *ref,
					 const struct wh_compare_options *o, struct wh_compare_stats *stats)
{
	if (actual->kind == WH_VALUE_SEQUENCE && ref->kind == WH_VALUE_SEQUENCE && wh_seq_len(actual) == wh_seq_len(ref)) {
		/* item by item, with this rule (compare.c's own recursion would not know it) */
		memset(stats, 0, sizeof *stats);
		stats->comparable = stats->pass = true;
		for (uint32_t i = 0; i < wh_seq_len(ref); i++) {
			struct wh_compare_stats si;
			enum wh_status st = wh_builtin_compare_tensor(wh_seq_item(actual, i), wh_seq_item(ref, i), o, &si);
			if (st != WH_OK)
				return st;
			if (!si.pass || !si.comparable || (stats->pass && si.max_abs >= stats->max_abs)) {
				char why[120];
				snprintf(why, sizeof why, "%.119s", si.reason);
				*stats = si;
				snprintf(stats->reason, sizeof stats->reason, "sequence item %u%s%.119s", i, why[0] ? ": " : "", why);
			}
			if (!si.pass || !si.comparable)
				break;
		}
		return WH_OK;
	}
	bool exact = actual->kind == WH_VALUE_TENSOR && ref->kind == WH_VALUE_TENSOR && actual->dtype == ref->dtype &&
		     !wh_dtype_is_float(ref->dtype) && wh_tensor_same_shape(actual, ref);
	if (!exact && o->validate && stats_of_floats(actual, ref))
		return validate_tensor(actual, ref, o, stats);
	if (!exact)
		return wh_compare_tensors(actual, ref, o, stats);
	uint64_t differ;
	if (ref->dtype == WH_DT_STRING) {
		memset(stats, 0, sizeof *stats);
		differ = strings_differ(actual, ref);
		stats->count = ref->count;
		stats->max_abs = stats->max_rel = stats->mean_abs = stats->mean_rel = differ ? INFINITY : 0;
		stats->median_abs = stats->median_rel = stats->quantile_abs = stats->quantile_rel = stats->max_abs;
		stats->cosine = differ ? NAN : 1;
		stats->sqnr_db = differ ? -INFINITY : INFINITY;
	} else {
		/* the numbers, for reports; the verdict is equality */
		enum wh_status st = wh_compare_tensors(actual, ref, o, stats);
		if (st != WH_OK)
			return st;
		differ = elements_differ(actual, ref);
	}
	stats->comparable = true;
	stats->failing = differ;
	stats->pass = differ == 0;
	if (differ)
		snprintf(stats->reason, sizeof stats->reason, "%llu of %llu %s elements differ (compared exactly)",
			 (unsigned long long)differ, (unsigned long long)ref->count, wh_dtype_name(ref->dtype));
	return WH_OK;
}

enum wh_status wh_builtin_compare_sets(const struct wh_tensor_set *actual, const struct wh_tensor_set *reference,
				       const struct wh_compare_options *o, const char *what,
				       struct wh_builtin_check_result *out)
{
	out->verdict = WH_VERDICT_PASS;
	out->has_stats = false;
	if (o->validate)
		wh_text_printf(out->why, sizeof out->why, "no NaN/Inf in the %ss where FP32 is finite", what);
	else
		wh_text_printf(out->why, sizeof out->why, "%ss within atol %g rtol %g of FP32", what, o->atol, o->rtol);
	for (size_t i = 0; i < actual->n; i++) {
		const char *name = actual->items[i].name;
		const struct wh_tensor *r = name ? wh_tensor_set_find(reference, name) : NULL;
		if (!r)
			continue;
		struct wh_compare_stats cs;
		enum wh_status st = wh_builtin_compare_tensor(&actual->items[i].t, r, o, &cs);
		if (st != WH_OK)
			return st;
		out->stats = cs; /* the last one compared, or the failing one */
		out->has_stats = true;
		if (cs.pass && cs.comparable)
			continue;
		out->verdict = WH_VERDICT_FAIL;
		out->stats = cs;
		if (cs.comparable && o->validate && cs.reason[0])
			wh_text_printf(out->why, sizeof out->why, "%s '%.80s': %s", what, name, cs.reason);
		else if (cs.comparable && r->dtype != WH_DT_STRING)
			wh_text_printf(out->why, sizeof out->why, "%s '%.80s' differs from FP32 (max abs %.3g, max rel %.3g)", what, name, cs.max_abs,
				 cs.max_rel);
		else
			wh_text_printf(out->why, sizeof out->why, "%s '%.80s': %s", what, name, cs.reason);
		break;
	}
	return WH_OK;
}

enum wh_status wh_builtin_inputs_from(const struct wh_model *m, const struct wh_tensor_set *reference,
				      struct wh_tensor_set *ins)
{
	const struct wh_graph *g = m->graph;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = wh_tensor_set_find(reference, v->name);
		if (!t)
			return wh_error(WH_ERR_NOT_FOUND, "tensor '%s': no reference value (give --reference DIR with every tensor)", v->name);
		enum wh_status st = wh_tensor_set_add(ins, v->name, -1, t);
		if (st != WH_OK)
			return st;
	}
	return WH_OK;
}

enum wh_status wh_builtin_check_run(const struct wh_model *m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *inputs, const struct wh_tensor_set *reference,
				    uint32_t n_samples, const struct wh_builtin_check_options *o,
				    struct wh_builtin_check_result *out)
{
	struct wh_engine *e = NULL;
	/* --validate looks at every tensor the run computes: an overflow that a later layer
	 * hides (x / inf = 0) still fails */
	bool all = o->all_tensors || o->compare.validate;
	const char *what = all ? "tensor" : "output";
	out->verdict = WH_VERDICT_PASS;
	out->has_stats = false;
	wh_text_printf(out->why, sizeof out->why, "%ss within atol %g rtol %g of FP32", what, o->compare.atol, o->compare.rtol);
	enum wh_status st = wh_engine_create(m, eo, &e);
	for (uint32_t k = 0; k < n_samples && st == WH_OK && out->verdict == WH_VERDICT_PASS; k++) {
		struct wh_tensor_set ins, outs;
		wh_tensor_set_init(&ins);
		wh_tensor_set_init(&outs);
		if (!inputs)
			st = wh_builtin_inputs_from(m, &reference[k], &ins);
		if (st == WH_OK)
			st = wh_engine_run(e, inputs ? &inputs[k] : &ins, all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &outs);
		if (st == WH_OK)
			st = wh_builtin_compare_sets(&outs, &reference[k], &o->compare, what, out);
		wh_tensor_set_release(&ins);
		wh_tensor_set_release(&outs);
	}
	wh_engine_destroy(e);
	return st;
}

enum wh_status wh_builtin_add_inputs(const struct wh_model *m, const struct wh_tensor_set *inputs,
				     struct wh_tensor_set *ref)
{
	const struct wh_graph *g = m->graph;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = wh_tensor_set_find(inputs, v->name);
		if (!t && pos < inputs->n && !inputs->items[pos].name)
			t = &inputs->items[pos].t;
		pos++;
		if (t && !wh_tensor_set_find(ref, v->name)) {
			enum wh_status st = wh_tensor_set_add(ref, v->name, -1, t);
			if (st != WH_OK)
				return st;
		}
	}
	return WH_OK;
}

static bool ref_cuda;
static int ref_device;

void wh_builtin_reference_device(bool cuda, int device)
{
	ref_cuda = cuda;
	ref_device = device;
}

enum wh_status wh_builtin_reference(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs,
				    uint32_t n_samples, bool keep_all, struct wh_tensor_set *out)
{
	struct wh_engine *e = NULL;
	struct wh_engine_options eo = {.threads = threads, .cuda = ref_cuda, .cuda_device = ref_device};
	enum wh_status st = wh_engine_create(m, &eo, &e);
	for (uint32_t k = 0; k < n_samples && st == WH_OK; k++)
		st = wh_engine_run(e, &inputs[k], keep_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &out[k]);
	wh_engine_destroy(e);
	return st;
}

struct each_sample {
	wh_builtin_tensor_fn fn;
	void *state;
	uint32_t k;
};

static enum wh_status each_tensor(void *state, const char *name, const struct wh_tensor *t)
{
	struct each_sample *es = state;
	return es->fn(es->state, es->k, name, t);
}

enum wh_status wh_builtin_reference_each(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs,
					 uint32_t n_samples, wh_builtin_tensor_fn fn, void *state)
{
	struct wh_engine *e = NULL;
	struct wh_engine_options eo = {.threads = threads, .cuda = ref_cuda, .cuda_device = ref_device};
	enum wh_status st = wh_engine_create(m, &eo, &e);
	for (uint32_t k = 0; k < n_samples && st == WH_OK; k++) {
		struct each_sample es = {fn, state, k};
		st = wh_engine_run_each(e, &inputs[k], each_tensor, &es);
	}
	wh_engine_destroy(e);
	return st;
}

double wh_builtin_rel_l2(const struct wh_tensor *a, const struct wh_tensor *r)
{
	if (a->count != r->count)
		return 0;
	double num = 0, den = 0;
	for (uint64_t k = 0; k < a->count; k++) {
		double x = wh_tensor_get_f64(a, k), y = wh_tensor_get_f64(r, k);
		if (!isfinite(y))
			continue;
		if (!isfinite(x))
			return 1e6;
		num += (x - y) * (x - y);
		den += y * y;
	}
	return den > 0 ? sqrt(num / den) : (num > 0 ? 1 : 0);
}

double wh_builtin_abs_max(const struct wh_tensor *t)
{
	double m = 0;
	if (!t || !wh_dtype_is_float(t->dtype))
		return 0;
	for (uint64_t i = 0; i < t->count; i++) {
		double x = fabs(wh_tensor_get_f64(t, i));
		if (isfinite(x) && x > m)
			m = x;
	}
	return m;
}
