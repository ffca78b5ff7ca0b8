#include "executor/diagnose.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/emulate.h"
#include "executor/precision.h"
#include "graph/dtype.h"
#include "graph/extract.h"
#include "graph/tensor.h"
#include "graph/topo.h"

void wh_diagnosis_init(struct wh_diagnosis *d)
{
	memset(d, 0, sizeof *d);
	d->start = -1;
	d->output_error = d->output_error_kept = NAN;
}

void wh_diagnosis_release(struct wh_diagnosis *d)
{
	if (!d)
		return;
	free(d->layers);
	free(d->keep);
	wh_diagnosis_init(d);
}

int32_t wh_diagnosis_find(const struct wh_diagnosis *d, uint32_t node)
{
	for (uint32_t i = 0; i < d->n_layers; i++)
		if (d->layers[i].node == node)
			return (int32_t)i;
	return -1;
}

/* Relative L2 error of a against r over the elements where r is finite; elements where a
 * is not finite are counted in *new_nf and make the error infinite. A zero reference gives
 * the RMS of a instead (an absolute error, so that exact zeros compare as 0). NaN when the
 * tensors are not comparable floats. */
static double rel_l2(const struct wh_tensor *a, const struct wh_tensor *r, uint64_t *new_nf)
{
	*new_nf = 0;
	if (a->kind != WH_VALUE_TENSOR || r->kind != WH_VALUE_TENSOR || !wh_dtype_is_float(a->dtype) ||
	    !wh_dtype_is_float(r->dtype) || !wh_tensor_same_shape(a, r))
		return NAN;
	double num = 0, den = 0;
	uint64_t n = 0;
	for (uint64_t i = 0; i < a->count; i++) {
		double x = wh_tensor_get_f64(a, i), y = wh_tensor_get_f64(r, i);
		if (!isfinite(y))
			continue;
		if (!isfinite(x)) {
			(*new_nf)++;
			continue;
		}
		num += (x - y) * (x - y);
		den += y * y;
		n++;
	}
	if (*new_nf)
		return INFINITY;
	if (den > 0)
		return sqrt(num / den);
	return n ? sqrt(num / (double)n) : 0;
}

/* The largest finite magnitude of t (0 for non-floats). */
static double amax(const struct wh_tensor *t)
{
	if (!t || t->kind != WH_VALUE_TENSOR || !wh_dtype_is_float(t->dtype))
		return 0;
	double m = 0;
	for (uint64_t i = 0; i < t->count; i++) {
		double x = fabs(wh_tensor_get_f64(t, i));
		if (isfinite(x) && x > m)
			m = x;
	}
	return m;
}

/* Unit roundoff of a format: relative error of one rounding (int8: a step of 1/127 of the
 * range, about 2^-8 relative to it). */
static double unit_roundoff(enum wh_precision p)
{
	switch (p) {
	case WH_PREC_TF32:
	case WH_PREC_FP16: return ldexp(1, -11);
	case WH_PREC_BF16: return ldexp(1, -8);
	case WH_PREC_FP8: return ldexp(1, -4);
	case WH_PREC_FP8E5M2: return ldexp(1, -3);
	case WH_PREC_INT8: return ldexp(1, -8);
	default: return ldexp(1, -24);
	}
}

/* The largest finite value a layer at p stores unscaled (int8 and fp8 are scaled to the
 * tensor's range, so they do not overflow): beyond it a conversion gives inf. */
static double format_max(enum wh_precision p)
{
	switch (p) {
	case WH_PREC_FP16: return 65504.0;
	case WH_PREC_BF16: return 3.3895313892515355e38;
	default: return INFINITY;
	}
}

static bool is_constant_node(const struct wh_node *n)
{
	return !strcmp(n->op_type, "Constant") && (!n->domain || !*n->domain);
}

/* Runs node alone at its precision on the reference values of its inputs; the worst output's
 * error and new non-finite count. *ran false when it cannot be run alone. */
static enum wh_status run_alone(const struct wh_model *m, const struct wh_engine_options *eo, uint32_t node,
				const struct wh_tensor_set *reference, bool *ran, double *err, uint64_t *nf)
{
	const struct wh_graph *g = m->graph;
	const struct wh_node *n = &g->nodes[node];
	*ran = false;
	*err = NAN;
	*nf = 0;
	uint32_t ids_fixed[17], *ids = ids_fixed;
	if (n->n_inputs + 1 > 17 && !(ids = calloc((size_t)n->n_inputs + 1, sizeof *ids)))
		return wh_error(WH_ERR_NOMEM, "diagnose: out of memory");
	uint32_t k = 0;
	ids[k++] = node;
	for (uint32_t j = 0; j < n->n_inputs; j++) {
		uint32_t v = n->inputs[j];
		if (v != WH_NONE && g->values[v].producer != WH_NONE && is_constant_node(&g->nodes[g->values[v].producer]))
			ids[k++] = g->values[v].producer;
	}
	struct wh_model *one = NULL;
	struct wh_engine *e = NULL;
	struct wh_tensor_set ins, outs;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&outs);
	enum wh_status st = wh_model_extract_nodes(m, ids, k, &one);
	if (ids != ids_fixed)
		free(ids);
	if (st != WH_OK) {
		/* a layer that cannot stand alone (a subgraph reading outer values, an unknown
		 * type) is left out of the ranking, not an error of the run */
		wh_error_clear();
		st = WH_OK;
		goto out;
	}
	const struct wh_graph *og = one->graph;
	if (!og->n_outputs)
		goto out;
	for (uint32_t i = 0; i < og->n_inputs; i++) {
		const struct wh_value *v = &og->values[og->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = wh_tensor_set_find(reference, v->name);
		if (!t)
			goto out;
		if ((st = wh_tensor_set_add(&ins, v->name, -1, t)) != WH_OK)
			goto out;
	}
	if ((st = wh_engine_create(one, eo, &e)) != WH_OK || (st = wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &outs)) != WH_OK) {
		wh_error_clear();
		st = WH_OK;
		goto out;
	}
	double worst = NAN;
	for (size_t i = 0; i < outs.n; i++) {
		const struct wh_tensor *r = wh_tensor_set_find(reference, outs.items[i].name);
		if (!r)
			continue;
		uint64_t f;
		double x = rel_l2(&outs.items[i].t, r, &f);
		*nf += f;
		if (!isnan(x) && (isnan(worst) || x > worst))
			worst = x;
	}
	*err = worst;
	*ran = !isnan(worst);
out:
	wh_engine_destroy(e);
	wh_model_destroy(one);
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&outs);
	return st;
}

/* The largest relative L2 error of m's outputs in `outs` against the reference. */
static double outputs_error(const struct wh_graph *g, const struct wh_tensor_set *outs, const struct wh_tensor_set *reference)
{
	double worst = 0;
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		const char *name = g->values[g->outputs[i]].name;
		const struct wh_tensor *a = wh_tensor_set_find(outs, name), *r = wh_tensor_set_find(reference, name);
		uint64_t nf;
		double e = a && r ? rel_l2(a, r, &nf) : NAN;
		if (!isnan(e) && e > worst)
			worst = e;
	}
	return worst;
}

/* The outputs' error with layer `name` kept in FP32 on top of eo's precisions; NaN when the
 * model cannot run so. */
static enum wh_status error_kept(const struct wh_model *m, const struct wh_engine_options *eo, const char *name,
				 const struct wh_tensor_set *reference, double *out)
{
	const struct wh_graph *g = m->graph;
	const struct wh_precision_config *base = eo->precision;
	struct wh_precision_config c;
	wh_precision_config_init(&c);
	c.dflt = base->dflt;
	c.calib = base->calib;
	c.fp16_accumulate = base->fp16_accumulate;
	struct wh_engine *e = NULL;
	struct wh_tensor_set ins, outs;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&outs);
	enum wh_status st = WH_OK;
	*out = NAN;
	for (uint32_t i = 0; i < base->n_layers && st == WH_OK; i++)
		st = wh_precision_config_set(&c, base->layers[i].layer, base->layers[i].exec, base->layers[i].output);
	if (st == WH_OK)
		st = wh_precision_config_set(&c, name, WH_PREC_FP32, WH_PREC_FP32);
	for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		const struct wh_tensor *t = v->flags & WH_VALUE_INITIALIZER ? NULL : wh_tensor_set_find(reference, v->name);
		if (t)
			st = wh_tensor_set_add(&ins, v->name, -1, t);
	}
	struct wh_engine_options o = *eo;
	o.precision = &c;
	if (st == WH_OK && (st = wh_engine_create(m, &o, &e)) == WH_OK && (st = wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &outs)) == WH_OK)
		*out = outputs_error(g, &outs, reference);
	if (st != WH_OK && st != WH_ERR_NOMEM) {
		wh_error_clear();
		st = WH_OK;
	}
	wh_engine_destroy(e);
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&outs);
	wh_precision_config_release(&c);
	return st;
}

/* The leading candidates by score and by added error (TRY_EACH of each), run with each one
 * kept in FP32: the start becomes the one that lowers the outputs' error most. */
#define TRY_EACH 5

static int32_t best_of(const struct wh_diagnosis *d, const uint8_t *taken, bool by_score)
{
	int32_t best = -1;
	for (uint32_t i = 0; i < d->n_layers; i++) {
		const struct wh_diag_layer *L = &d->layers[i];
		if (taken[i] || !L->alone_run || !(L->err_added > 0))
			continue;
		double x = by_score ? L->score : L->err_added, y = best < 0 ? 0 : by_score ? d->layers[best].score : d->layers[best].err_added;
		if (best < 0 || x > y)
			best = (int32_t)i;
	}
	return best;
}

static enum wh_status confirm_start(const struct wh_model *m, const struct wh_engine_options *eo, const struct wh_tensor_set *actual,
				    const struct wh_tensor_set *reference, struct wh_diagnosis *d)
{
	const struct wh_graph *g = m->graph;
	uint8_t *taken = calloc((size_t)d->n_layers + 1, 1);
	if (!taken)
		return wh_error(WH_ERR_NOMEM, "diagnose: out of memory");
	d->output_error = outputs_error(g, actual, reference);
	/* a layer is named over the rule's choice only when keeping it in FP32 removes a tenth
	 * of the outputs' error or more: smaller changes are rounding luck */
	int32_t best = -1;
	double best_err = 0.9 * d->output_error;
	enum wh_status st = WH_OK;
	for (int k = 0; k < 2 * TRY_EACH && st == WH_OK; k++) {
		int32_t i = best_of(d, taken, k % 2 == 0);
		if (i < 0)
			continue;
		taken[i] = 1;
		const char *name = g->nodes[d->layers[i].node].name;
		if (!name || !*name)
			continue;
		double e;
		if ((st = error_kept(m, eo, name, reference, &e)) != WH_OK)
			break;
		d->n_tried++;
		if (i == d->start)
			d->output_error_kept = e;
		if (!isnan(e) && e < best_err) {
			best_err = e;
			best = i;
		}
	}
	if (st == WH_OK && best >= 0) {
		d->start = best;
		d->output_error_kept = best_err;
	}
	free(taken);
	return st;
}

enum wh_status wh_diagnose(const struct wh_model *m, const struct wh_engine_options *eo, const struct wh_tensor_set *actual,
			   const struct wh_tensor_set *reference, struct wh_diagnosis *out)
{
	const struct wh_graph *g = m->graph;
	uint32_t nn = g->n_nodes, nv = g->n_values;
	uint32_t *order = calloc((size_t)nn + 1, sizeof *order);
	uint8_t *kinds = calloc((size_t)nn + 1, 1), *exec = calloc((size_t)nn + 1, 1), *outp = calloc((size_t)nn + 1, 1);
	uint8_t *keep = calloc((size_t)nn + 1, 1);
	double *err = malloc(((size_t)nv + 1) * sizeof *err);
	uint64_t *nf = calloc((size_t)nv + 1, sizeof *nf);
	enum wh_status st = WH_OK;
	wh_diagnosis_release(out);
	out->layers = calloc((size_t)nn + 1, sizeof *out->layers);
	if (!order || !kinds || !exec || !outp || !keep || !err || !nf || !out->layers) {
		st = wh_error(WH_ERR_NOMEM, "diagnose: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK || (st = wh_model_layer_kinds(m, kinds)) != WH_OK)
		goto out;
	if (eo->precision && (st = wh_precision_resolve(m, eo->precision, exec, outp)) != WH_OK)
		goto out;
	/* the error of every tensor of the reduced run; graph inputs are the same data */
	for (uint32_t v = 0; v < nv; v++) {
		err[v] = NAN;
		const struct wh_value *val = &g->values[v];
		if (val->producer == WH_NONE) {
			err[v] = 0;
			continue;
		}
		const struct wh_tensor *a = wh_tensor_set_find(actual, val->name), *r = wh_tensor_set_find(reference, val->name);
		if (a && r)
			err[v] = rel_l2(a, r, &nf[v]);
	}
	for (uint32_t k = 0; k < nn; k++) {
		uint32_t id = order[k];
		const struct wh_node *n = &g->nodes[id];
		if (kinds[id] != WH_LAYER_FLOAT)
			continue;
		struct wh_diag_layer L = {.node = id, .value = WH_NONE, .exec = exec[id], .err_full = NAN, .err_added = NAN};
		for (uint32_t j = 0; j < n->n_outputs; j++) {
			uint32_t v = n->outputs[j];
			if (v == WH_NONE || isnan(err[v]))
				continue;
			if (L.value == WH_NONE || err[v] > L.err_full) {
				L.value = v;
				L.err_full = err[v];
			}
			L.nonfinite_full += nf[v];
		}
		if (L.value == WH_NONE)
			continue; /* nothing of it was compared */
		for (uint32_t j = 0; j < n->n_inputs; j++) {
			uint32_t v = n->inputs[j];
			if (v != WH_NONE && !isnan(err[v]) && err[v] > L.err_received)
				L.err_received = err[v];
		}
		if (exec[id] != WH_PREC_FP32 || outp[id] != WH_PREC_FP32) {
			if ((st = run_alone(m, eo, id, reference, &L.alone_run, &L.err_added, &L.nonfinite_added)) != WH_OK)
				goto out;
		} else {
			L.alone_run = true; /* an FP32 layer adds nothing: it computes the reference */
			L.err_added = 0;
		}
		double u = unit_roundoff((enum wh_precision)exec[id]);
		L.score = L.alone_run ? L.err_added / (L.err_received > u ? L.err_received : u) : NAN;
		out->layers[out->n_layers++] = L;
	}
	/* 1. overflow: the first layer that adds NaN/Inf on exact inputs */
	for (uint32_t i = 0; i < out->n_layers && out->start < 0; i++)
		if (out->layers[i].nonfinite_added) {
			out->start = (int32_t)i;
			out->kind = WH_DIAG_OVERFLOW;
		}
	/* ... or, when none does alone, where NaN/Inf first appear while the inputs hold none */
	for (uint32_t i = 0; i < out->n_layers && out->start < 0; i++) {
		const struct wh_diag_layer *L = &out->layers[i];
		if (L->nonfinite_full && isfinite(L->err_received)) {
			out->start = (int32_t)i;
			out->kind = WH_DIAG_OVERFLOW;
		}
	}
	/* 2. the most error added relative to what is received */
	for (uint32_t i = 0; i < out->n_layers && out->kind == WH_DIAG_NONE; i++) {
		const struct wh_diag_layer *L = &out->layers[i];
		if (!L->alone_run || !(L->err_added > 0))
			continue;
		if (out->start < 0 || L->score > out->layers[out->start].score)
			out->start = (int32_t)i;
	}
	if (out->start >= 0 && out->kind == WH_DIAG_NONE)
		out->kind = WH_DIAG_ERROR;
	if (out->start < 0)
		goto out;
	if (out->kind == WH_DIAG_ERROR && eo->precision && (st = confirm_start(m, eo, actual, reference, out)) != WH_OK)
		goto out;
	keep[out->layers[out->start].node] = 1;
	if (out->kind == WH_DIAG_OVERFLOW) {
		for (uint32_t i = 0; i < out->n_layers; i++)
			if (out->layers[i].nonfinite_added)
				keep[out->layers[i].node] = 1;
		/* consumers that would convert an out-of-range value, transitively: in topological
		 * order every producer is decided before its consumers */
		for (uint32_t k = 0; k < nn; k++) {
			uint32_t id = order[k];
			const struct wh_node *n = &g->nodes[id];
			if (keep[id] || kinds[id] != WH_LAYER_FLOAT)
				continue;
			double fmax = format_max((enum wh_precision)exec[id]);
			for (uint32_t j = 0; j < n->n_inputs && isfinite(fmax); j++) {
				uint32_t v = n->inputs[j];
				if (v == WH_NONE || g->values[v].producer == WH_NONE || !keep[g->values[v].producer] ||
				    wh_emulate_parameter_input(n->op_type, j, (enum wh_precision)exec[id]))
					continue;
				if (amax(wh_tensor_set_find(reference, g->values[v].name)) > fmax) {
					keep[id] = 1;
					break;
				}
			}
		}
	}
	for (uint32_t k = 0; k < nn; k++)
		out->n_keep += keep[order[k]];
	if (!(out->keep = calloc((size_t)out->n_keep + 1, sizeof *out->keep))) {
		st = wh_error(WH_ERR_NOMEM, "diagnose: out of memory");
		goto out;
	}
	out->n_keep = 0;
	for (uint32_t k = 0; k < nn; k++)
		if (keep[order[k]])
			out->keep[out->n_keep++] = order[k];
out:
	if (st != WH_OK)
		wh_diagnosis_release(out);
	free(order);
	free(kinds);
	free(exec);
	free(outp);
	free(keep);
	free(err);
	free(nf);
	return st;
}
