#include "executor/calibrate.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/executor.h"
#include "executor/kernel.h"

#define ENTROPY_FIRST_BIN 128
#define ENTROPY_LEVELS 128
/* Probability given to an empty level where P holds clipped mass (see calibrate.h). */
#define ENTROPY_EPS 1e-4
/* Percentile histogram: log-spaced, PCT_PER_OCTAVE bins per octave below the maximum. */
#define PCT_PER_OCTAVE 64
#define PCT_OCTAVES 32
_Static_assert(PCT_PER_OCTAVE * PCT_OCTAVES == WH_CALIB_HIST_BINS, "percentile bins fill the histogram");
_Static_assert(WH_CALIB_HIST_BINS >= ENTROPY_FIRST_BIN, "entropy needs at least 128 bins");
#define MAX_LISTED 10

static const char *const method_names[] = {
	[WH_CALIB_MINMAX] = "minmax", [WH_CALIB_ENTROPY] = "entropy", [WH_CALIB_PERCENTILE] = "percentile"};
static const char *const method_algorithms[] = {
	[WH_CALIB_MINMAX] = "MinMaxCalibration",
	[WH_CALIB_ENTROPY] = "EntropyCalibration2",
	[WH_CALIB_PERCENTILE] = "PercentileCalibration",
};
_Static_assert(sizeof method_names / sizeof method_names[0] == 3, "method names");
_Static_assert(sizeof method_algorithms / sizeof method_algorithms[0] == 3, "method algorithms");

bool wh_calib_method_parse(const char *s, enum wh_calib_method *method_out, double *percentile_out)
{
	if (!strcmp(s, "minmax") || !strcmp(s, "max")) {
		*method_out = WH_CALIB_MINMAX;
		*percentile_out = WH_CALIB_DEFAULT_PERCENTILE;
		return true;
	}
	if (!strcmp(s, "entropy")) {
		*method_out = WH_CALIB_ENTROPY;
		*percentile_out = WH_CALIB_DEFAULT_PERCENTILE;
		return true;
	}
	if (strncmp(s, "percentile", 10) != 0)
		return false;
	double p = WH_CALIB_DEFAULT_PERCENTILE;
	if (s[10] == '=') {
		char *end;
		errno = 0;
		p = strtod(s + 11, &end);
		if (errno || end == s + 11 || *end || !(p > 0 && p <= 100))
			return false;
	} else if (s[10]) {
		return false;
	}
	*method_out = WH_CALIB_PERCENTILE;
	*percentile_out = p;
	return true;
}

const char *wh_calib_method_name(enum wh_calib_method m)
{
	return (unsigned)m < 3 ? method_names[m] : "?";
}

const char *wh_calib_method_algorithm(enum wh_calib_method m)
{
	return (unsigned)m < 3 ? method_algorithms[m] : "?";
}

/* ---- which tensors, bound how ---- */

static bool dtype_is_calibrated(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16 || dt == WH_DT_DOUBLE;
}

/* The tensor a sample gives graph input `val` (pos: its position among the inputs that are
 * not initializers), matched as wh_engine_run matches them. */
static const struct wh_tensor *bound_input(const struct wh_tensor_set *s, const struct wh_value *val, uint32_t pos)
{
	const struct wh_tensor *t = wh_tensor_set_find(s, val->name);
	if (t || (val->flags & WH_VALUE_INITIALIZER))
		return t;
	for (size_t k = 0; k < s->n; k++)
		if (!s->items[k].name && (s->items[k].index == (int)pos || (s->items[k].index < 0 && k == pos)))
			return &s->items[k].t;
	return NULL;
}

/* Per value id: 1 when calibration covers it (float graph inputs, float outputs of float
 * layers); dtype of values not yet inferred counts as float. */
static enum wh_status eligible_values(const struct wh_model *m, uint8_t **out)
{
	const struct wh_graph *g = m->graph;
	uint8_t *el = calloc((size_t)g->n_values + 1, 1);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	enum wh_status st = WH_OK;
	if (!el || !kinds) {
		st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
		goto out;
	}
	if ((st = wh_model_layer_kinds(m, kinds)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (!(v->flags & WH_VALUE_INITIALIZER) && (v->dtype == WH_DT_UNDEFINED || dtype_is_calibrated(v->dtype)))
			el[g->inputs[i]] = 1;
	}
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		if (kinds[i] != WH_LAYER_FLOAT)
			continue;
		const struct wh_node *n = &g->nodes[i];
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			uint32_t v = n->outputs[k];
			if (v != WH_NONE && (g->values[v].dtype == WH_DT_UNDEFINED || dtype_is_calibrated(g->values[v].dtype)))
				el[v] = 1;
		}
	}
out:
	free(kinds);
	if (st != WH_OK) {
		free(el);
		return st;
	}
	*out = el;
	return WH_OK;
}

/* ---- statistics of one tensor ---- */

struct tstat {
	uint32_t value;     /* value id */
	uint32_t seen;      /* 1 + index of the last sample folded in (a name may repeat) */
	float amax;         /* largest finite |x| (pass 1) */
	uint64_t nonfinite;
	double *hist;       /* WH_CALIB_HIST_BINS counts (pass 2) */
	double under;       /* percentile: |x| below the histogram's range, zeros included */
};

/* Float view of a tensor: the data itself, or a converted copy in *tmp. */
static enum wh_status float_view(const struct wh_tensor *t, float **tmp, const float **out)
{
	if (t->dtype == WH_DT_FLOAT) {
		*out = t->data;
		return WH_OK;
	}
	uint64_t bytes;
	if (!wh_mul_u64(t->count ? t->count : 1, sizeof(float), &bytes) || bytes > SIZE_MAX)
		return wh_error(WH_ERR_OVERFLOW, "calibration: tensor of %llu elements is too large", (unsigned long long)t->count);
	float *f = malloc((size_t)bytes);
	if (!f)
		return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
	for (uint64_t i = 0; i < t->count; i++)
		f[i] = (float)wh_tensor_get_f64(t, i);
	*tmp = f;
	*out = f;
	return WH_OK;
}

static void fold_amax(struct tstat *s, const float *x, uint64_t n)
{
	float m = s->amax;
	uint64_t bad = 0;
	for (uint64_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		if (!isfinite(a))
			bad++;
		else if (a > m)
			m = a;
	}
	s->amax = m;
	s->nonfinite += bad;
}

static void fold_linear(struct tstat *s, const float *x, uint64_t n)
{
	if (!(s->amax > 0))
		return;
	const double inv = WH_CALIB_HIST_BINS / (double)s->amax;
	double *h = s->hist;
	for (uint64_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		/* int8 holds 0 exactly: a ReLU's spike of zeros would only drag the threshold down */
		if (!isfinite(a) || a == 0)
			continue;
		double b = a * inv;
		uint32_t k = b >= WH_CALIB_HIST_BINS ? WH_CALIB_HIST_BINS - 1 : (uint32_t)b;
		h[k] += 1;
	}
}

static void fold_log(struct tstat *s, const float *x, uint64_t n)
{
	if (!(s->amax > 0))
		return;
	const double inv = 1.0 / (double)s->amax, floor_rel = ldexp(1.0, -PCT_OCTAVES);
	double *h = s->hist;
	for (uint64_t i = 0; i < n; i++) {
		float a = fabsf(x[i]);
		if (!isfinite(a))
			continue;
		double r = a * inv;
		if (r < floor_rel) {
			s->under += 1;
			continue;
		}
		double b = (log2(r) + PCT_OCTAVES) * PCT_PER_OCTAVE;
		uint32_t k = b >= WH_CALIB_HIST_BINS ? WH_CALIB_HIST_BINS - 1 : (b < 0 ? 0 : (uint32_t)b);
		h[k] += 1;
	}
}

static float percentile_amax(const struct tstat *s, double percentile)
{
	if (!(s->amax > 0) || percentile >= 100)
		return s->amax;
	double total = s->under;
	for (uint32_t b = 0; b < WH_CALIB_HIST_BINS; b++)
		total += s->hist[b];
	double target = percentile / 100.0 * total, c = s->under;
	if (target <= c)
		return (float)ldexp(s->amax, -PCT_OCTAVES);
	for (uint32_t b = 0; b < WH_CALIB_HIST_BINS; b++) {
		double h = s->hist[b];
		if (h > 0 && c + h >= target) {
			double frac = (target - c) / h;
			double v = s->amax * exp2((b + frac) / PCT_PER_OCTAVE - PCT_OCTAVES);
			return v < s->amax ? (float)v : s->amax;
		}
		c += h;
	}
	return s->amax;
}

/* Work arrays of the entropy search, allocated once per calibration. */
struct entropy_work {
	double cnt[WH_CALIB_HIST_BINS + 1]; /* prefix sums of counts */
	double clc[WH_CALIB_HIST_BINS + 1]; /* prefix sums of c log c */
	uint32_t nz[WH_CALIB_HIST_BINS + 1]; /* prefix counts of non-empty bins */
};

/* KL(P||Q) of every threshold, evaluated per level with prefix sums (each level's Q is one
 * value spread over its non-empty bins, so sum p log q is a sum over 128 levels). */
static float entropy_amax(const struct tstat *s, struct entropy_work *w)
{
	const uint32_t nb = WH_CALIB_HIST_BINS;
	const double *h = s->hist;
	if (!(s->amax > 0))
		return s->amax;
	w->cnt[0] = w->clc[0] = 0;
	w->nz[0] = 0;
	for (uint32_t b = 0; b < nb; b++) {
		w->cnt[b + 1] = w->cnt[b] + h[b];
		w->clc[b + 1] = w->clc[b] + (h[b] > 0 ? h[b] * log(h[b]) : 0);
		w->nz[b + 1] = w->nz[b] + (h[b] > 0);
	}
	const double S = w->cnt[nb];
	if (!(S > 0))
		return s->amax;
	const double log_s = log(S);
	uint32_t best_i = nb;
	double best = INFINITY;
	for (uint32_t i = ENTROPY_FIRST_BIN; i <= nb; i++) {
		double T = w->cnt[i];
		if (!(T > 0))
			continue;
		double outl = S - T > 0 ? S - T : 0;
		double last = h[i - 1] + outl;
		double plogp = (w->clc[i - 1] + (last > 0 ? last * log(last) : 0)) / S - log_s;
		double plogq = 0, bad = 0;
		for (uint32_t g = 0; g < ENTROPY_LEVELS; g++) {
			uint32_t a = (uint32_t)((uint64_t)g * i / ENTROPY_LEVELS);
			uint32_t z = (uint32_t)((uint64_t)(g + 1) * i / ENTROPY_LEVELS);
			double G = w->cnt[z] - w->cnt[a];
			double PG = G + (z == i ? outl : 0);
			if (!(PG > 0))
				continue;
			if (!(G > 0)) {
				bad += PG;
				continue;
			}
			uint32_t nzg = w->nz[z] - w->nz[a] + (z == i && !(h[i - 1] > 0) && last > 0);
			plogq += PG * log(G / ((double)nzg * T));
		}
		plogq /= S;
		if (bad > 0) {
			double pb = bad / S;
			plogq += (1 - pb) * log1p(-ENTROPY_EPS) + pb * log(ENTROPY_EPS);
		}
		double kl = plogp - plogq;
		if (kl < best) {
			best = kl;
			best_i = i;
		}
	}
	double thr = (best_i + 0.5) * (double)s->amax / nb;
	return thr < s->amax ? (float)thr : s->amax;
}

static float final_amax(const struct tstat *s, enum wh_calib_method method, double percentile, struct entropy_work *w)
{
	switch (method) {
	case WH_CALIB_PERCENTILE: return percentile_amax(s, percentile);
	case WH_CALIB_ENTROPY: return entropy_amax(s, w);
	default: return s->amax;
	}
}

enum wh_status wh_calib_amax_of_data(const float *x, uint64_t n, enum wh_calib_method method, double percentile,
				     float *amax_out)
{
	struct tstat s = {0};
	struct entropy_work *w = NULL;
	fold_amax(&s, x, n);
	if (method != WH_CALIB_MINMAX) {
		s.hist = calloc(WH_CALIB_HIST_BINS, sizeof *s.hist);
		w = malloc(sizeof *w);
		if (!s.hist || !w) {
			free(s.hist);
			free(w);
			return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
		}
		if (method == WH_CALIB_ENTROPY)
			fold_linear(&s, x, n);
		else
			fold_log(&s, x, n);
	}
	*amax_out = final_amax(&s, method, percentile, w);
	free(s.hist);
	free(w);
	return WH_OK;
}

/* ---- calibration over samples ---- */

struct collector {
	const struct wh_graph *g;
	const uint8_t *eligible;
	uint32_t *index; /* per value id: index into stats, or WH_NONE */
	struct tstat *stats;
	uint32_t n, cap;
	int pass;        /* 1: amax, 2: histograms */
	enum wh_calib_method method;
};

static enum wh_status fold(struct collector *c, uint32_t vid, const struct wh_tensor *t, uint32_t sample)
{
	if (vid == WH_NONE || vid >= c->g->n_values || !c->eligible[vid] || !dtype_is_calibrated(t->dtype))
		return WH_OK;
	uint32_t k = c->index[vid];
	if (k == WH_NONE) {
		if (c->pass != 1)
			return WH_OK; /* not seen while ranges were taken: cannot be binned */
		if (c->n == c->cap) {
			uint32_t cap = c->cap ? c->cap * 2 : 64;
			struct tstat *ns = realloc(c->stats, (size_t)cap * sizeof *ns);
			if (!ns)
				return wh_error(WH_ERR_NOMEM, "calibration: out of memory");
			c->stats = ns;
			c->cap = cap;
		}
		k = c->n++;
		c->stats[k] = (struct tstat){.value = vid};
		c->index[vid] = k;
	}
	struct tstat *s = &c->stats[k];
	if (s->seen == sample + 1)
		return WH_OK;
	s->seen = sample + 1;
	float *tmp = NULL;
	const float *x = NULL;
	enum wh_status st = float_view(t, &tmp, &x);
	if (st != WH_OK)
		return st;
	if (c->pass == 1)
		fold_amax(s, x, t->count);
	else if (c->method == WH_CALIB_ENTROPY)
		fold_linear(s, x, t->count);
	else
		fold_log(s, x, t->count);
	free(tmp);
	return WH_OK;
}

static enum wh_status run_pass(struct collector *c, struct wh_engine *e, const struct wh_tensor_set *samples,
			       uint32_t n_samples)
{
	const struct wh_graph *g = c->g;
	enum wh_status st = WH_OK;
	for (uint32_t k = 0; k < c->n; k++)
		c->stats[k].seen = 0;
	for (uint32_t s = 0; s < n_samples && st == WH_OK; s++) {
		wh_info("calibration: pass %d, sample %u of %u", c->pass, s + 1, n_samples);
		uint32_t pos = 0;
		for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++) {
			const struct wh_value *val = &g->values[g->inputs[i]];
			const struct wh_tensor *t = bound_input(&samples[s], val, pos);
			if (!(val->flags & WH_VALUE_INITIALIZER))
				pos++;
			if (t)
				st = fold(c, g->inputs[i], t, s);
		}
		struct wh_tensor_set res;
		wh_tensor_set_init(&res);
		if (st == WH_OK)
			st = wh_engine_run(e, &samples[s], WH_KEEP_ALL, &res);
		for (size_t i = 0; i < res.n && st == WH_OK; i++)
			st = fold(c, wh_graph_find_value(g, res.items[i].name), &res.items[i].t, s);
		wh_tensor_set_release(&res);
	}
	return st;
}

enum wh_status wh_calibrate(const struct wh_model *m, const struct wh_tensor_set *samples, uint32_t n_samples,
			    enum wh_calib_method method, double percentile, int threads, struct wh_calib *out)
{
	const struct wh_graph *g = m->graph;
	struct collector c = {.g = g, .method = method};
	struct wh_engine *e = NULL;
	uint8_t *eligible = NULL;
	struct entropy_work *w = NULL;
	enum wh_status st;
	if ((st = wh_calib_check_samples(m, samples, n_samples, NULL)) != WH_OK)
		return st;
	if ((st = eligible_values(m, &eligible)) != WH_OK)
		return st;
	c.eligible = eligible;
	c.index = malloc(((size_t)g->n_values + 1) * sizeof *c.index);
	if (!c.index) {
		st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
		goto out;
	}
	for (uint32_t v = 0; v <= g->n_values; v++)
		c.index[v] = WH_NONE;
	struct wh_engine_options eo = {.threads = threads};
	if ((st = wh_engine_create(m, &eo, &e)) != WH_OK)
		goto out;
	c.pass = 1;
	if ((st = run_pass(&c, e, samples, n_samples)) != WH_OK)
		goto out;
	if (method != WH_CALIB_MINMAX) {
		for (uint32_t k = 0; k < c.n; k++)
			if (!(c.stats[k].hist = calloc(WH_CALIB_HIST_BINS, sizeof(double)))) {
				st = wh_error(WH_ERR_NOMEM, "calibration: out of memory for %u histograms", c.n);
				goto out;
			}
		if (!(w = malloc(sizeof *w))) {
			st = wh_error(WH_ERR_NOMEM, "calibration: out of memory");
			goto out;
		}
		c.pass = 2;
		if ((st = run_pass(&c, e, samples, n_samples)) != WH_OK)
			goto out;
	}
	uint32_t n_bad = 0, first_bad = WH_NONE;
	for (uint32_t k = 0; k < c.n && st == WH_OK; k++) {
		const struct tstat *s = &c.stats[k];
		if (s->nonfinite && n_bad++ == 0)
			first_bad = k;
		st = wh_calib_set(out, g->values[s->value].name, final_amax(s, method, percentile, w));
	}
	if (st == WH_OK && n_bad)
		wh_warn("calibration: %u tensor%s hold NaN or Inf (first '%s', %llu values); they are left out of the ranges",
			n_bad, n_bad == 1 ? "" : "s", g->values[c.stats[first_bad].value].name,
			(unsigned long long)c.stats[first_bad].nonfinite);
	if (st == WH_OK) {
		snprintf(out->algorithm, sizeof out->algorithm, "%s", wh_calib_method_algorithm(method));
		wh_info("calibration: %u tensors, %s, %u sample%s", c.n, wh_calib_method_name(method), n_samples,
			n_samples == 1 ? "" : "s");
	}
out:
	for (uint32_t k = 0; k < c.n; k++)
		free(c.stats[k].hist);
	free(c.stats);
	free(c.index);
	free(w);
	free(eligible);
	wh_engine_destroy(e);
	return st;
}

/* ---- samples and inputs ---- */

static const char *dims_str(const struct wh_value *v, char *buf, size_t size)
{
	if (v->rank < 0) {
		snprintf(buf, size, "?");
		return buf;
	}
	if (v->rank == 0) {
		snprintf(buf, size, "scalar");
		return buf;
	}
	size_t at = 0;
	buf[0] = '\0';
	for (int32_t d = 0; d < v->rank && at < size; d++) {
		int r = v->dims[d].value >= 0 ? snprintf(buf + at, size - at, "%s%lld", d ? "x" : "", (long long)v->dims[d].value)
					      : snprintf(buf + at, size - at, "%s%s", d ? "x" : "", v->dims[d].param ? v->dims[d].param : "?");
		if (r < 0)
			break;
		at += (size_t)r;
	}
	return buf;
}

enum wh_status wh_calib_check_samples(const struct wh_model *m, const struct wh_tensor_set *samples,
				      uint32_t n_samples, const char *const *labels)
{
	const struct wh_graph *g = m->graph;
	if (!n_samples || !samples)
		return wh_error(WH_ERR_INVALID, "calibration data: no samples (give a folder of input tensors, or a folder of such folders)");
	for (uint32_t s = 0; s < n_samples; s++) {
		char label[32];
		snprintf(label, sizeof label, "#%u", s + 1);
		const char *lab = labels && labels[s] ? labels[s] : label;
		uint32_t pos = 0;
		for (uint32_t i = 0; i < g->n_inputs; i++) {
			const struct wh_value *val = &g->values[g->inputs[i]];
			if (val->flags & WH_VALUE_INITIALIZER)
				continue;
			const struct wh_tensor *t = bound_input(&samples[s], val, pos++);
			if (!t)
				return wh_error(WH_ERR_NOT_FOUND, "calibration sample %s: no tensor for input '%s' (name the files after the model's inputs, or input_<k>.pb)",
						lab, val->name);
			char want[256], got[256];
			if (val->dtype != WH_DT_UNDEFINED && t->dtype != val->dtype)
				return wh_error(WH_ERR_INVALID, "calibration sample %s: input '%s' is %s but the model takes %s (give samples of the model's input types)",
						lab, val->name, wh_dtype_name(t->dtype), wh_dtype_name(val->dtype));
			bool bad = val->rank >= 0 && val->rank != t->rank;
			for (int32_t d = 0; !bad && val->rank >= 0 && d < val->rank; d++)
				bad = val->dims[d].value >= 0 && val->dims[d].value != t->dims[d];
			if (bad)
				return wh_error(WH_ERR_SHAPE, "calibration sample %s: input '%s' is %s but the model takes %s (give samples of the model's input shape, or set it with --input-shapes)",
						lab, val->name, wh_shape_str(t->dims, t->rank, got, sizeof got), dims_str(val, want, sizeof want));
		}
	}
	return WH_OK;
}

static float tensor_amax(const struct wh_tensor *t)
{
	float m = 0;
	if (t->dtype == WH_DT_FLOAT) {
		const float *x = t->data;
		for (uint64_t i = 0; i < t->count; i++) {
			float a = fabsf(x[i]);
			if (isfinite(a) && a > m)
				m = a;
		}
		return m;
	}
	for (uint64_t i = 0; i < t->count; i++) {
		float a = fabsf((float)wh_tensor_get_f64(t, i));
		if (isfinite(a) && a > m)
			m = a;
	}
	return m;
}

enum wh_status wh_calib_input_amax(const struct wh_model *m, const struct wh_tensor_set *samples, uint32_t n_samples,
				   struct wh_calib *out)
{
	const struct wh_graph *g = m->graph;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *val = &g->values[g->inputs[i]];
		if (val->flags & WH_VALUE_INITIALIZER)
			continue;
		uint32_t p = pos++;
		float amax = -1;
		for (uint32_t s = 0; s < n_samples; s++) {
			const struct wh_tensor *t = bound_input(&samples[s], val, p);
			if (t && dtype_is_calibrated(t->dtype)) {
				float a = tensor_amax(t);
				if (a > amax)
					amax = a;
			}
		}
		enum wh_status st;
		if (amax >= 0 && (st = wh_calib_set(out, val->name, amax)) != WH_OK)
			return st;
	}
	return WH_OK;
}

/* ---- the cache ---- */

float wh_calib_scale_of_amax(float amax)
{
	return amax / 127.0f;
}

float wh_calib_amax_of_scale(float scale)
{
	/* scale*127 may be a few ulps from an amax whose quotient gives scale back: look
	 * around it so that a cache read and written again keeps every digit */
	float a0 = scale * 127.0f;
	if (wh_calib_scale_of_amax(a0) == scale || !isfinite(a0))
		return a0;
	float up = a0, down = a0;
	for (int k = 0; k < 4; k++) {
		up = nextafterf(up, INFINITY);
		down = nextafterf(down, 0);
		if (wh_calib_scale_of_amax(up) == scale)
			return up;
		if (wh_calib_scale_of_amax(down) == scale)
			return down;
	}
	return a0;
}

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
}

static float bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
}

enum wh_status wh_calib_cache_print(const struct wh_calib *c, FILE *f)
{
	const char *alg = c->algorithm[0] ? c->algorithm : wh_calib_method_algorithm(WH_CALIB_ENTROPY);
	fprintf(f, "TRT-%s-%s\n", WH_CALIB_TRT_VERSION, alg);
	uint32_t skipped = 0;
	for (uint32_t i = 0; i < c->n; i++) {
		/* a name holding a line break cannot be written in this format */
		if (strpbrk(c->names[i], "\r\n")) {
			skipped++;
			continue;
		}
		fprintf(f, "%s: %08x\n", c->names[i], f32_bits(wh_calib_scale_of_amax(c->amax[i])));
	}
	if (skipped)
		wh_warn("calibration cache: %u tensor name%s with line breaks left out", skipped, skipped == 1 ? "" : "s");
	return WH_OK;
}

enum wh_status wh_calib_cache_write(const struct wh_calib *c, const char *path)
{
	size_t len = strlen(path);
	char *tmp = malloc(len + 32);
	if (!tmp)
		return wh_error(WH_ERR_NOMEM, "calibration cache: out of memory");
	snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
	enum wh_status st = WH_OK;
	FILE *f = fopen(tmp, "w");
	if (!f) {
		st = wh_error(WH_ERR_IO, "%s: cannot write the calibration cache: %s (check the folder)", path, strerror(errno));
		goto out;
	}
	st = wh_calib_cache_print(c, f);
	int werr = ferror(f);
	if (fclose(f) != 0 || werr) {
		if (st == WH_OK)
			st = wh_error(WH_ERR_IO, "%s: cannot write the calibration cache (disk full?)", path);
	}
	if (st == WH_OK && rename(tmp, path) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot write the calibration cache: %s (check the folder)", path, strerror(errno));
	if (st != WH_OK)
		unlink(tmp);
out:
	free(tmp);
	return st;
}

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* A line for a message: at most 60 bytes, printable. */
static const char *show(const char *s, size_t n, char *buf, size_t size)
{
	size_t k = 0;
	for (size_t i = 0; i < n && k + 4 < size && i < 60; i++)
		buf[k++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (n > 60 && k + 4 < size) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}

enum wh_status wh_calib_cache_parse(const char *text, size_t len, const char *label, struct wh_calib *out)
{
	char sb[80];
	if (memchr(text, '\0', len))
		return wh_error(WH_ERR_PARSE, "%s: not a TensorRT calibration cache: it holds binary data (expected text, first line TRT-<version>-<algorithm>)", label);
	size_t at = 0, line_no = 0;
	bool header = false;
	while (at < len) {
		const char *line = text + at;
		const char *nl = memchr(line, '\n', len - at);
		size_t n = nl ? (size_t)(nl - line) : len - at;
		at += n + (nl ? 1 : 0);
		line_no++;
		if (n && line[n - 1] == '\r')
			n--;
		while (n && (line[n - 1] == ' ' || line[n - 1] == '\t'))
			n--;
		if (!header) {
			/* TRT-<version>-<algorithm>: version and algorithm non-empty, no blanks */
			const char *dash = n > 4 ? memchr(line + 4, '-', n - 4) : NULL;
			bool ok = n > 4 && !memcmp(line, "TRT-", 4) && dash && dash > line + 4 && (size_t)(dash - line) + 1 < n;
			for (size_t i = 0; ok && i < n; i++)
				ok = line[i] > 0x20 && line[i] < 0x7f;
			size_t alen = ok ? n - (size_t)(dash - line) - 1 : 0;
			if (!ok || alen >= sizeof out->algorithm)
				return wh_error(WH_ERR_PARSE, "%s:1: not a TensorRT calibration cache: the first line is '%s' (expected TRT-<version>-<algorithm>, e.g. TRT-8601-EntropyCalibration2)",
						label, show(line, n, sb, sizeof sb));
			memcpy(out->algorithm, dash + 1, alen);
			out->algorithm[alen] = '\0';
			header = true;
			continue;
		}
		if (!n)
			continue;
		/* the last ": " splits: tensor names may hold ": " themselves */
		const char *sep = NULL;
		for (size_t i = n - 1; i > 0; i--)
			if (line[i] == ' ' && line[i - 1] == ':') {
				sep = line + i - 1;
				break;
			}
		if (!sep || sep == line)
			return wh_error(WH_ERR_PARSE, "%s:%zu: '%s' is not '<tensor>: <8 hex digits>' (the cache is corrupt; delete it to recalibrate)",
					label, line_no, show(line, n, sb, sizeof sb));
		const char *hex = sep + 2;
		size_t hn = n - (size_t)(hex - line);
		uint32_t bits = 0;
		bool ok = hn == 8;
		for (size_t i = 0; ok && i < 8; i++) {
			int v = hexval(hex[i]);
			ok = v >= 0;
			bits = bits << 4 | (uint32_t)(v < 0 ? 0 : v);
		}
		float scale = bits_f32(bits);
		if (!ok || !isfinite(scale) || signbit(scale))
			return wh_error(WH_ERR_PARSE, "%s:%zu: '%s' is not 8 hex digits of a finite non-negative float32 scale (the cache is corrupt; delete it to recalibrate)",
					label, line_no, show(hex, hn, sb, sizeof sb));
		size_t name_len = (size_t)(sep - line);
		char *name = malloc(name_len + 1);
		if (!name)
			return wh_error(WH_ERR_NOMEM, "calibration cache: out of memory");
		memcpy(name, line, name_len);
		name[name_len] = '\0';
		enum wh_status st = wh_calib_set(out, name, wh_calib_amax_of_scale(scale));
		free(name);
		if (st != WH_OK)
			return st;
	}
	if (!header)
		return wh_error(WH_ERR_PARSE, "%s: not a TensorRT calibration cache: the file is empty (expected TRT-<version>-<algorithm> and one '<tensor>: <hex>' line per tensor)", label);
	return WH_OK;
}

enum wh_status wh_calib_cache_read(const char *path, struct wh_calib *out)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot read the calibration cache: %s (check the path)", path, strerror(errno));
	enum wh_status st = WH_OK;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			/* caches are a line per tensor: 64 MiB is far beyond any real one */
			if (cap >= ((size_t)64 << 20)) {
				st = wh_error(WH_ERR_OVERFLOW, "%s: calibration cache larger than 64 MiB (not a calibration cache?)", path);
				break;
			}
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, ncap);
			if (!nb) {
				st = wh_error(WH_ERR_NOMEM, "calibration cache: out of memory");
				break;
			}
			buf = nb;
			cap = ncap;
		}
		size_t r = fread(buf + len, 1, cap - len, f);
		len += r;
		if (r == 0) {
			if (ferror(f))
				st = wh_error(WH_ERR_IO, "%s: cannot read the calibration cache (read error)", path);
			break;
		}
	}
	fclose(f);
	if (st == WH_OK)
		st = wh_calib_cache_parse(buf ? buf : "", len, path, out);
	free(buf);
	return st;
}

/* ---- warnings ---- */

/* Appends "'name'" to a list message while fewer than MAX_LISTED are in it. */
static void list_add(char *buf, size_t size, uint32_t count, const char *name)
{
	if (count >= MAX_LISTED)
		return;
	size_t at = strlen(buf);
	if (at + 8 >= size)
		return;
	snprintf(buf + at, size - at, "%s'%s'", count ? ", " : "", name);
}

static void list_end(char *buf, size_t size, uint32_t count)
{
	if (count > MAX_LISTED) {
		size_t at = strlen(buf);
		if (at < size)
			snprintf(buf + at, size - at, " and %u more", count - MAX_LISTED);
	}
}

uint32_t wh_calib_warn_names(const struct wh_calib *c, const struct wh_model *m, const char *label)
{
	const struct wh_graph *g = m->graph;
	char list[1024] = "";
	uint32_t unknown = 0;
	for (uint32_t i = 0; i < c->n; i++)
		if (wh_graph_find_value(g, c->names[i]) == WH_NONE)
			list_add(list, sizeof list, unknown++, c->names[i]);
	list_end(list, sizeof list, unknown);
	if (unknown)
		wh_warn("calibration cache %s: %u tensor name%s not in the model: %s (the cache was made for another model or export; those scales are ignored)",
			label, unknown, unknown == 1 ? " is" : "s are", list);
	uint8_t *el = NULL;
	if (eligible_values(m, &el) != WH_OK)
		return unknown;
	char miss[1024] = "";
	uint32_t missing = 0;
	for (uint32_t v = 0; v < g->n_values; v++)
		if (el[v] && wh_calib_get(c, g->values[v].name) < 0)
			list_add(miss, sizeof miss, missing++, g->values[v].name);
	list_end(miss, sizeof miss, missing);
	free(el);
	if (missing)
		wh_warn("calibration cache %s: %u float tensor%s of the model %s no scale: %s (int8/fp8 layers use their runtime range there)",
			label, missing, missing == 1 ? "" : "s", missing == 1 ? "has" : "have", miss);
	return unknown;
}

bool wh_calib_warn_algorithm(const struct wh_calib *c, enum wh_calib_method asked, const char *label)
{
	if (!c->algorithm[0] || !strcmp(c->algorithm, wh_calib_method_algorithm(asked)))
		return false;
	wh_warn("calibration cache %s: made by %s but --calib-method %s asks for %s (its scales are used as they are; give --calib-data to recalibrate)",
		label, c->algorithm, wh_calib_method_name(asked), wh_calib_method_algorithm(asked));
	return true;
}

bool wh_calib_algorithm_method(const char *algorithm, enum wh_calib_method *out)
{
	static const struct {
		const char *prefix;
		enum wh_calib_method m;
	} known[] = {{"Entropy", WH_CALIB_ENTROPY}, {"MinMax", WH_CALIB_MINMAX}, {"Percentile", WH_CALIB_PERCENTILE}};
	for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
		if (!strncmp(algorithm, known[i].prefix, strlen(known[i].prefix))) {
			*out = known[i].m;
			return true;
		}
	return false;
}

uint32_t wh_calib_warn_inputs(const struct wh_model *m, const struct wh_calib *ref, enum wh_calib_method method,
			      double percentile, const struct wh_tensor_set *inputs, const char *label)
{
	const struct wh_graph *g = m->graph;
	uint32_t pos = 0, warned = 0;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *val = &g->values[g->inputs[i]];
		if (val->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = bound_input(inputs, val, pos++);
		float r = wh_calib_get(ref, val->name);
		if (!t || r < 0 || !dtype_is_calibrated(t->dtype))
			continue;
		float a = tensor_amax(t);
		if (method != WH_CALIB_MINMAX) {
			float *tmp = NULL;
			const float *x = NULL;
			if (float_view(t, &tmp, &x) != WH_OK || wh_calib_amax_of_data(x, t->count, method, percentile, &a) != WH_OK) {
				free(tmp);
				continue; /* a warning is not worth failing the run */
			}
			free(tmp);
		}
		if (a > 2 * r) {
			wh_warn("input '%s': the run's values reach %g (%s) but the calibration (%s) covers only %g: int8/fp8 layers will clip them (calibrate on data like the run's)",
				val->name, (double)a, wh_calib_method_name(method), label, (double)r);
			warned++;
		} else if (a < 0.5f * r) {
			wh_warn("input '%s': the run's values reach only %g (%s) but the calibration (%s) covers %g: int8/fp8 layers waste most of their levels (calibrate on data like the run's)",
				val->name, (double)a, wh_calib_method_name(method), label, (double)r);
			warned++;
		}
	}
	return warned;
}
