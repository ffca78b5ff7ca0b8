#include "reducer/prior.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/diagnose.h"
#include "executor/precision.h"
#include "graph/blob.h"
#include "graph/names.h"
#include "reducer/builtin-check.h"

void wh_prior_init(struct wh_prior *p)
{
	memset(p, 0, sizeof *p);
}

void wh_prior_release(struct wh_prior *p)
{
	free(p->score);
	wh_prior_init(p);
}

static enum wh_status prior_alloc(const struct wh_model *m, struct wh_prior *p)
{
	wh_prior_release(p);
	p->n_nodes = m->graph->n_nodes;
	p->score = malloc(((size_t)p->n_nodes + 1) * sizeof *p->score);
	if (!p->score)
		return wh_error(WH_ERR_NOMEM, "prior: out of memory");
	for (uint32_t i = 0; i < p->n_nodes; i++)
		p->score[i] = NAN;
	return WH_OK;
}

/* The FP32 run of m on inputs with every tensor kept, the graph inputs added. */
static enum wh_status fp32_all(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs, struct wh_tensor_set *out)
{
	enum wh_status st = wh_builtin_reference(m, threads, inputs, 1, true, out);
	if (st == WH_OK)
		st = wh_builtin_add_inputs(m, inputs, out);
	return st;
}

enum wh_status wh_prior_emulation(const struct wh_model *m, const struct wh_engine_options *eo, const struct wh_tensor_set *inputs,
				  struct wh_prior *out)
{
	struct wh_precision_config fp16;
	wh_precision_config_init(&fp16);
	fp16.dflt = WH_PREC_FP16;
	struct wh_engine_options o = *eo;
	if (!o.precision)
		o.precision = &fp16;
	struct wh_tensor_set ref, act;
	wh_tensor_set_init(&ref);
	wh_tensor_set_init(&act);
	struct wh_diagnosis dg;
	wh_diagnosis_init(&dg);
	struct wh_engine *e = NULL;
	enum wh_status st;
	if ((st = prior_alloc(m, out)) != WH_OK || (st = fp32_all(m, o.threads, inputs, &ref)) != WH_OK ||
	    (st = wh_engine_create(m, &o, &e)) != WH_OK || (st = wh_engine_run(e, inputs, WH_KEEP_ALL, &act)) != WH_OK ||
	    (st = wh_diagnose(m, &o, &act, &ref, &dg)) != WH_OK)
		goto out;
	/* overflow alone first (1e300 + the topological rank's inverse), then the named start,
	 * then the score */
	for (uint32_t i = 0; i < dg.n_layers; i++) {
		const struct wh_diag_layer *L = &dg.layers[i];
		double s = isfinite(L->score) ? L->score : (L->alone_run ? 1e200 : 0);
		if (L->nonfinite_added)
			s = 1e300 * (1.0 - (double)i / (dg.n_layers + 1.0));
		else if ((int32_t)i == dg.start)
			s = 1e250;
		out->score[L->node] = s;
	}
	snprintf(out->source, sizeof out->source, "emulation at %s (layerwise diagnosis)", wh_precision_name(o.precision->dflt));
out:
	wh_engine_destroy(e);
	wh_diagnosis_release(&dg);
	wh_tensor_set_release(&ref);
	wh_tensor_set_release(&act);
	wh_precision_config_release(&fp16);
	return st;
}

enum wh_status wh_prior_load(const struct wh_model *m, const char *path, struct wh_prior *out, uint32_t *unknown)
{
	const struct wh_graph *g = m->graph;
	json_error_t jerr;
	json_t *root = json_load_file(path, 0, &jerr);
	enum wh_status st = WH_OK;
	*unknown = 0;
	if (!root)
		return wh_error(WH_ERR_INVALID, "%s: not a prior file: %s at line %d (give {\"layers\": {\"NAME\": score, ...}}, docs/formats.md)", path,
				jerr.text, jerr.line);
	json_t *layers = json_object_get(root, "layers");
	if (!json_is_object(layers)) {
		st = wh_error(WH_ERR_INVALID, "%s: has no \"layers\" object (give {\"layers\": {\"NAME\": score, ...}}, docs/formats.md)", path);
		goto out;
	}
	if ((st = prior_alloc(m, out)) != WH_OK)
		goto out;
	const char *key;
	json_t *val;
	uint32_t known = 0;
	json_object_foreach(layers, key, val)
	{
		if (!json_is_number(val) || !isfinite(json_number_value(val))) {
			st = wh_error(WH_ERR_INVALID, "%s: the score of layer '%s' is not a finite number (give a number; higher is more suspect)", path,
				      wh_name_term(key));
			goto out;
		}
		bool found = false;
		for (uint32_t i = 0; i < g->n_nodes; i++)
			if (g->nodes[i].name && !strcmp(g->nodes[i].name, key)) {
				out->score[i] = json_number_value(val);
				found = true;
			}
		known += found;
		*unknown += !found;
	}
	if (!known) {
		st = wh_error(WH_ERR_INVALID, "%s: names none of the model's layers (give scores for layers of this model)", path);
		goto out;
	}
	snprintf(out->source, sizeof out->source, "file %.100s", path);
out:
	json_decref(root);
	return st;
}

enum wh_status wh_prior_rules(const struct wh_model *m, int threads, const struct wh_tensor_set *inputs, struct wh_prior *out,
			      uint32_t *n_flagged)
{
	const struct wh_graph *g = m->graph;
	struct wh_tensor_set ref;
	wh_tensor_set_init(&ref);
	enum wh_status st;
	*n_flagged = 0;
	if ((st = prior_alloc(m, out)) != WH_OK || (st = fp32_all(m, threads, inputs, &ref)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		double s = 0;
		uint64_t in_max = 0;
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v == WH_NONE)
				continue;
			const struct wh_value *val = &g->values[v];
			if ((val->flags & WH_VALUE_INITIALIZER) && val->dtype == WH_DT_FLOAT && val->data) {
				const float *f = val->data->data;
				for (size_t j = 0; j < val->data->size / sizeof(float); j++)
					if (fabsf(f[j]) > 65504.0f) {
						s = fmax(s, 100);
						break;
					}
			}
			const struct wh_tensor *t = wh_tensor_set_find(&ref, val->name);
			if (t && t->count > in_max)
				in_max = t->count;
			/* MatMul/Gemm: the reduction is the inner dimension */
			if (t && k == 0 && t->rank >= 1 && (!strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm")) &&
			    t->dims[t->rank - 1] > 4096)
				s = fmax(s, 1);
		}
		/* the largest value it reads or writes (AutoCast's data_max looks at both: a layer
		 * reading a value beyond fp16's range converts it to inf) */
		double big = 0;
		for (uint32_t k = 0; k < n->n_inputs + n->n_outputs; k++) {
			uint32_t v = k < n->n_inputs ? n->inputs[k] : n->outputs[k - n->n_inputs];
			const struct wh_tensor *t = v == WH_NONE ? NULL : wh_tensor_set_find(&ref, g->values[v].name);
			if (!t || !wh_value_is_tensor(t) || !wh_dtype_is_float(t->dtype))
				continue;
			for (uint64_t j = 0; j < t->count; j++) {
				double a = fabs(wh_tensor_get_f64(t, j));
				big = a > big && isfinite(a) ? a : big;
			}
			if (k >= n->n_inputs && !strncmp(n->op_type, "Reduce", 6) && t->count && in_max / t->count > 4096)
				s = fmax(s, 1);
		}
		/* above 512: 2, and more the larger (65504, fp16's largest, scores 9) */
		if (big > 512.0)
			s = fmax(s, 2 + log2(big / 512.0));
		if (s > 0) {
			out->score[i] = s;
			(*n_flagged)++;
		}
	}
	snprintf(out->source, sizeof out->source, "AutoCast-style rules (values above 512, initializers above 65504, reductions over 4096)");
out:
	wh_tensor_set_release(&ref);
	return st;
}

enum wh_status wh_prior_sets(const struct wh_model *m, const struct wh_prior *p, const uint32_t *nodes, uint32_t n, bool connect,
			     uint32_t max_sets, uint8_t **sets, uint32_t *n_sets, uint32_t *top)
{
	const struct wh_graph *g = m->graph;
	enum wh_status st = WH_OK;
	uint32_t *rank = malloc(((size_t)n + 1) * sizeof *rank);
	uint32_t *pos = malloc(((size_t)g->n_nodes + 1) * sizeof *pos);
	uint8_t *desc = malloc((size_t)n + 1), *anc = malloc((size_t)n + 1), *chosen = malloc((size_t)n + 1);
	uint32_t r = 0, prev = 0;
	*n_sets = 0;
	*top = UINT32_MAX;
	if (!rank || !pos || !desc || !anc || !chosen) {
		st = wh_error(WH_ERR_NOMEM, "prior: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < g->n_nodes; i++)
		pos[i] = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		pos[nodes[i]] = i;
		if (nodes[i] < p->n_nodes && !isnan(p->score[nodes[i]]) && p->score[nodes[i]] > 0)
			rank[r++] = i;
	}
	/* best first; ties in list order (a stable insertion sort: r is small or sorted once) */
	for (uint32_t i = 1; i < r; i++) {
		uint32_t x = rank[i], j = i;
		while (j > 0 && p->score[nodes[rank[j - 1]]] < p->score[nodes[x]]) {
			rank[j] = rank[j - 1];
			j--;
		}
		rank[j] = x;
	}
	if (r)
		*top = rank[0];
	for (uint32_t want = 1; *n_sets < max_sets && r; want *= 4) {
		uint32_t t = want < r ? want : r;
		memset(chosen, 0, n);
		for (uint32_t i = 0; i < t; i++)
			chosen[rank[i]] = 1;
		uint8_t *s = malloc(n ? n : 1);
		if (!s) {
			st = wh_error(WH_ERR_NOMEM, "prior: out of memory");
			goto out;
		}
		memcpy(s, chosen, n);
		if (connect && t > 1) {
			/* on a path between two chosen nodes: reached from one, reaching another */
			for (uint32_t i = 0; i < n; i++) {
				desc[i] = chosen[i];
				const struct wh_node *nd = &g->nodes[nodes[i]];
				for (uint32_t k = 0; k < nd->n_inputs && !desc[i]; k++) {
					uint32_t v = nd->inputs[k];
					uint32_t pr = v == WH_NONE ? WH_NONE : g->values[v].producer;
					desc[i] = pr != WH_NONE && pos[pr] != UINT32_MAX && pos[pr] < i && desc[pos[pr]];
				}
			}
			memcpy(anc, chosen, n);
			for (uint32_t i = n; i-- > 0;) {
				if (!anc[i])
					continue;
				const struct wh_node *nd = &g->nodes[nodes[i]];
				for (uint32_t k = 0; k < nd->n_inputs; k++) {
					uint32_t v = nd->inputs[k];
					uint32_t pr = v == WH_NONE ? WH_NONE : g->values[v].producer;
					if (pr != WH_NONE && pos[pr] != UINT32_MAX && pos[pr] < i)
						anc[pos[pr]] = 1;
				}
			}
			for (uint32_t i = 0; i < n; i++)
				s[i] |= desc[i] && anc[i];
		}
		uint32_t cnt = 0;
		for (uint32_t i = 0; i < n; i++)
			cnt += s[i];
		if (cnt <= prev || cnt * 2 > n) {
			free(s);
			if (t == r || cnt * 2 > n)
				break;
			continue;
		}
		sets[(*n_sets)++] = s;
		prev = cnt;
		if (t == r)
			break;
	}
out:
	free(rank);
	free(pos);
	free(desc);
	free(anc);
	free(chosen);
	return st;
}
