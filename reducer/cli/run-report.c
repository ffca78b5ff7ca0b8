#include "reducer/cli/run-report.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <xxhash.h>

#include "executor/compare.h"
#include "executor/diagnose.h"
#include "reducer/cli/cli-internal.h"
#include "graph/tensor.h"
#include "graph/names.h"
#include "graph/os.h"
#include "graph/shape.h"

static json_t *shape_json(const struct wh_tensor *t)
{
	json_t *a = json_array();
	for (int32_t d = 0; d < t->rank; d++)
		json_array_append_new(a, json_integer(t->dims[d]));
	return a;
}

static void print_outputs_json(const struct wh_run_cmd *x, const struct wh_tensor_set *results)
{
	json_t *root = json_object(), *outs = json_array();
	json_object_set_new(root, "model", json_string(x->model_path));
	json_object_set_new(root, "precision", json_string(wh_precision_name(x->run.config.dflt)));
	for (size_t i = 0; i < results->n; i++) {
		const struct wh_tensor *t = &results->items[i].t;
		json_t *o = json_object();
		json_object_set_new(o, "tensor", json_string(results->items[i].name));
		if (t->kind == WH_VALUE_SEQUENCE) {
			json_object_set_new(o, "kind", json_string("sequence"));
			json_object_set_new(o, "items", json_integer(wh_seq_len(t)));
		} else if (t->kind == WH_VALUE_NONE) {
			json_object_set_new(o, "kind", json_string("optional"));
		} else {
			json_object_set_new(o, "dtype", json_string(wh_dtype_name(t->dtype)));
			json_object_set_new(o, "shape", shape_json(t));
		}
		json_array_append_new(outs, o);
	}
	json_object_set_new(root, "outputs", outs);
	wh_cli_print_json(root, JSON_INDENT(1));
}

void wh_run_print_outputs(const struct wh_run_cmd *x, const struct wh_tensor_set *results)
{
	if (x->json) {
		if (!x->compare && !x->profile)
			print_outputs_json(x, results);
		return;
	}
	bool many = x->mark_all && results->n > 64;
	for (size_t i = 0; i < results->n && !many; i++) {
		char buf[128];
		const struct wh_tensor *t = &results->items[i].t;
		if (t->kind == WH_VALUE_SEQUENCE)
			printf("output %s sequence(%s)[%u items]\n", wh_name_term(results->items[i].name), t->elem ? wh_dtype_name((enum wh_dtype)t->elem) : "?",
			       wh_seq_len(t));
		else if (t->kind == WH_VALUE_NONE)
			printf("output %s optional(none)\n", wh_name_term(results->items[i].name));
		else
			printf("output %s %s[%s]\n", wh_name_term(results->items[i].name), wh_dtype_name(t->dtype), wh_shape_str(t->dims, t->rank, buf, sizeof buf));
	}
	if (many)
		printf("%zu tensors computed\n", results->n);
}

bool wh_run_validate(const struct wh_tensor_set *results)
{
	for (size_t i = 0; i < results->n; i++) {
		const struct wh_tensor *t = &results->items[i].t;
		if (!wh_dtype_is_float(t->dtype))
			continue;
		uint64_t nan = 0, inf = 0;
		for (uint64_t k = 0; k < t->count; k++) {
			double v = wh_tensor_get_f64(t, k);
			nan += isnan(v) != 0;
			inf += isinf(v) != 0; /* isinf may return -1 for -Inf */
		}
		if (nan || inf) {
			printf("validate: FAIL: tensor '%s' is the first with non-finite values (%llu NaN, %llu Inf of %llu)\n",
			       wh_name_term(results->items[i].name), (unsigned long long)nan, (unsigned long long)inf, (unsigned long long)t->count);
			return false;
		}
	}
	printf("validate: PASS: no NaN or Inf in %zu tensor%s\n", results->n, results->n == 1 ? "" : "s");
	return true;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

enum wh_status wh_run_time(struct wh_engine *e, const struct wh_tensor_set *inputs, long long iterations)
{
	double *ms = calloc((size_t)iterations, sizeof *ms);
	if (!ms)
		return wh_error(WH_ERR_NOMEM, "run: out of memory");
	enum wh_status st = WH_OK;
	for (long long i = 0; i < iterations && st == WH_OK; i++) {
		struct wh_tensor_set tmp;
		wh_tensor_set_init(&tmp);
		double t0 = wh_os_now_s() * 1e3;
		st = wh_engine_run(e, inputs, WH_KEEP_OUTPUTS, &tmp);
		ms[i] = wh_os_now_s() * 1e3 - t0;
		wh_tensor_set_release(&tmp);
	}
	qsort(ms, (size_t)iterations, sizeof *ms, cmp_d);
	double med = iterations % 2 ? ms[iterations / 2] : 0.5 * (ms[iterations / 2 - 1] + ms[iterations / 2]);
	free(ms);
	if (st != WH_OK)
		return st;
	printf("median_ms %.3f\n", med);
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		printf("peak_rss_mb %.1f\n", (double)ru.ru_maxrss / 1024.0);
	return WH_OK;
}

/* A tensor's bytes, or for a sequence its items' hashes in order (an empty optional: a
 * constant); strings are not hashed. */
static uint64_t value_hash(const struct wh_tensor *t)
{
	if (t->kind == WH_VALUE_SEQUENCE) {
		uint32_t n = wh_seq_len(t);
		uint64_t *hs = malloc(((size_t)n + 1) * sizeof *hs);
		if (!hs)
			return 0;
		hs[0] = n;
		for (uint32_t i = 0; i < n; i++)
			hs[i + 1] = value_hash(wh_seq_item(t, i));
		uint64_t h = XXH3_64bits(hs, ((size_t)n + 1) * sizeof *hs);
		free(hs);
		return h;
	}
	if (t->kind == WH_VALUE_NONE || t->dtype == WH_DT_STRING)
		return 0;
	return XXH3_64bits(t->data, wh_tensor_nbytes(t));
}

/* Runs again and counts the tensors whose hash differs from h0 (the first run's). */
static enum wh_status run_again(const struct wh_run_cmd *x, struct wh_engine *e, const struct wh_tensor_set *inputs, long long r,
				const uint64_t *h0, size_t n0, size_t *differ)
{
	struct wh_tensor_set again;
	wh_tensor_set_init(&again);
	enum wh_status st = wh_engine_run(e, inputs, x->mark_all ? WH_KEEP_ALL : WH_KEEP_OUTPUTS, &again);
	for (size_t i = 0; st == WH_OK && i < again.n && i < n0; i++) {
		uint64_t h = value_hash(&again.items[i].t);
		if (h == h0[i])
			continue;
		if (*differ < 20)
			printf("repeat: run %lld: tensor '%s' differs from run 1 (xxh3 %016llx vs %016llx)\n", r + 1, wh_name_term(again.items[i].name),
			       (unsigned long long)h, (unsigned long long)h0[i]);
		(*differ)++;
	}
	wh_tensor_set_release(&again);
	return st;
}

enum wh_status wh_run_repeat(const struct wh_run_cmd *x, struct wh_engine *e, const struct wh_tensor_set *inputs,
			     const struct wh_tensor_set *results, bool *differ_out)
{
	*differ_out = false;
	uint64_t *h0 = calloc(results->n + 1, sizeof *h0);
	if (!h0)
		return wh_error(WH_ERR_NOMEM, "run: out of memory");
	for (size_t i = 0; i < results->n; i++) {
		h0[i] = value_hash(&results->items[i].t);
		if (x->hash_outputs)
			printf("xxh3 %s %016llx\n", wh_name_term(results->items[i].name), (unsigned long long)h0[i]);
	}
	size_t differ = 0;
	enum wh_status st = WH_OK;
	for (long long r = 1; r < x->repeat && st == WH_OK; r++)
		st = run_again(x, e, inputs, r, h0, results->n, &differ);
	free(h0);
	if (st != WH_OK || !x->repeat)
		return st;
	if (differ)
		printf("repeat: FAIL: %zu differences over %lld runs\n", differ, x->repeat);
	else
		printf("repeat: PASS: %lld runs, %zu tensors bit-identical\n", x->repeat, results->n);
	*differ_out = differ > 0;
	return WH_OK;
}

/* What the comparison found so far. */
struct compare_state {
	size_t compared, failed;
	const char *first_fail;
	json_t *rows; /* --json */
	FILE *report; /* --report */
};

/* A number in a numeric field: null where it is not finite (json_real refuses NaN and Inf,
 * and a key set to that would be missing). */
static json_t *real_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *row_json(const char *name, const struct wh_node *pn, const struct wh_compare_stats *s, bool bad)
{
	json_t *o = json_object();
	json_object_set_new(o, "tensor", json_string(name));
	json_object_set_new(o, "layer", json_string(pn ? pn->name : ""));
	json_object_set_new(o, "op", json_string(pn ? pn->op_type : ""));
	json_object_set_new(o, "pass", json_boolean(!bad));
	json_object_set_new(o, "max_abs", real_or_null(s->max_abs));
	json_object_set_new(o, "mean_abs", real_or_null(s->mean_abs));
	json_object_set_new(o, "median_abs", real_or_null(s->median_abs));
	json_object_set_new(o, "max_rel", real_or_null(s->max_rel));
	json_object_set_new(o, "mean_rel", real_or_null(s->mean_rel));
	json_object_set_new(o, "median_rel", real_or_null(s->median_rel));
	json_object_set_new(o, "cosine", real_or_null(s->cosine));
	json_object_set_new(o, "sqnr_db", real_or_null(s->sqnr_db));
	json_object_set_new(o, "share_rel_10", real_or_null(s->share_rel_10));
	json_object_set_new(o, "share_rel_1", real_or_null(s->share_rel_1));
	json_object_set_new(o, "share_rel_01", real_or_null(s->share_rel_01));
	json_object_set_new(o, "nan", json_integer((json_int_t)s->nan_actual));
	json_object_set_new(o, "inf", json_integer((json_int_t)s->inf_actual));
	json_object_set_new(o, "nan_reference", json_integer((json_int_t)s->nan_ref));
	json_object_set_new(o, "inf_reference", json_integer((json_int_t)s->inf_ref));
	json_object_set_new(o, "nonfinite_mismatch", json_integer((json_int_t)s->nonfinite_mismatch));
	/* filled in for the layers a diagnosis covers */
	json_object_set_new(o, "error_received", json_null());
	json_object_set_new(o, "error_added", json_null());
	json_object_set_new(o, "nonfinite_added", json_null());
	return o;
}

static void row_markdown(FILE *f, size_t k, const char *name, const struct wh_node *pn, const struct wh_compare_stats *s, bool bad)
{
	fprintf(f, "| %zu | %s | %s | %s | %.3g | %.3g | %.3g | %.3g | %.3g | %.3g | %.6f | %.1f | %.2f%% | %.2f%% | %.2f%% | %llu/%llu | %s |\n", k,
		wh_name_md_cell(name), pn && pn->name && *pn->name ? wh_name_md_cell(pn->name) : "", pn ? wh_name_md_cell(pn->op_type) : "", s->max_abs, s->mean_abs, s->median_abs, s->max_rel, s->mean_rel,
		s->median_rel, s->cosine, s->sqnr_db, 100 * s->share_rel_10, 100 * s->share_rel_1, 100 * s->share_rel_01,
		(unsigned long long)s->nan_actual, (unsigned long long)s->inf_actual, bad ? "FAIL" : "pass");
}

static const struct wh_node *producer(const struct wh_graph *g, const char *name)
{
	uint32_t vid = name ? wh_graph_find_value(g, name) : WH_NONE;
	return vid != WH_NONE && g->values[vid].producer != WH_NONE ? &g->nodes[g->values[vid].producer] : NULL;
}

/* One tensor of the comparison: compared, printed, counted. */
static enum wh_status compare_one(const struct wh_run_cmd *x, const struct wh_graph *g, const struct wh_named_tensor *item,
				  const struct wh_tensor *r, struct compare_state *cs)
{
	const struct wh_node *pn = producer(g, item->name);
	if (pn && !strcmp(pn->op_type, "Constant"))
		return WH_OK; /* weights, not computed */
	struct wh_compare_stats s;
	enum wh_status st = wh_compare_tensors(&item->t, r, &x->run.compare, &s);
	if (st != WH_OK)
		return st;
	cs->compared++;
	bool bad = !s.pass || !s.comparable;
	if (bad && !cs->failed++)
		cs->first_fail = item->name;
	if (cs->rows)
		json_array_append_new(cs->rows, row_json(item->name, pn, &s, bad));
	else
		wh_compare_print(stdout, item->name, &s, x->histogram);
	if (cs->report)
		row_markdown(cs->report, cs->compared, item->name, pn, &s, bad);
	return WH_OK;
}

/* The suggestion of a diagnosis as --layer-precisions text: the user's per-layer settings,
 * then the layers to keep in FP32 (so that applying it as printed keeps what was asked).
 * Empty when a layer to keep has no name or a name with a ','. */
static void suggestion_text(const struct wh_graph *g, const struct wh_precision_config *pc, const struct wh_diagnosis *d, char *buf,
			    size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (uint32_t k = 0; k < d->n_keep; k++) {
		const char *name = g->nodes[d->keep[k]].name;
		if (!name || !*name || strchr(name, ','))
			return;
	}
	for (uint32_t i = 0; i < pc->n_layers; i++) {
		bool kept = false;
		for (uint32_t k = 0; k < d->n_keep && !kept; k++)
			kept = !strcmp(g->nodes[d->keep[k]].name, pc->layers[i].layer);
		if (kept)
			continue;
		const struct wh_layer_precision *lp = &pc->layers[i];
		char out[24] = "";
		if (lp->output >= 0 && lp->output != (int)lp->exec)
			snprintf(out, sizeof out, "/%s", wh_precision_name((enum wh_precision)lp->output));
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s:%s%s", len ? "," : "", lp->layer,
					wh_precision_name(lp->exec), out);
	}
	for (uint32_t k = 0; k < d->n_keep; k++)
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s:fp32", len ? "," : "", g->nodes[d->keep[k]].name);
	if (len >= size)
		buf[0] = '\0';
}

static json_t *num_json(double v)
{
	return real_or_null(v);
}

/* "T (layer L, Op): why" of where the failure starts. */
static void start_text(const struct wh_graph *g, const struct wh_diagnosis *d, enum wh_name_style ns, char *buf, size_t size)
{
	const struct wh_diag_layer *L = &d->layers[d->start];
	const struct wh_node *n = &g->nodes[L->node];
	if (d->kind == WH_DIAG_OVERFLOW)
		snprintf(buf, size, "%s (layer %s, %s): overflow, %llu NaN/Inf where FP32 has none%s", wh_name_as(ns, g->values[L->value].name),
			 n->name ? wh_name_as(ns, n->name) : "?", wh_name_as(ns, n->op_type), (unsigned long long)(L->nonfinite_added ? L->nonfinite_added : L->nonfinite_full),
			 L->nonfinite_added ? " (on exact inputs)" : "");
	else if (!isnan(d->output_error_kept))
		snprintf(buf, size, "%s (layer %s, %s): adds relative error %.3g on exact inputs, receives %.3g; in FP32 it takes the outputs' error from %.3g to %.3g (of %u layers tried)",
			 wh_name_as(ns, g->values[L->value].name), n->name ? wh_name_as(ns, n->name) : "?", wh_name_as(ns, n->op_type), L->err_added, L->err_received, d->output_error,
			 d->output_error_kept, d->n_tried);
	else
		snprintf(buf, size, "%s (layer %s, %s): adds relative error %.3g on exact inputs, receives %.3g", wh_name_as(ns, g->values[L->value].name),
			 n->name ? wh_name_as(ns, n->name) : "?", wh_name_as(ns, n->op_type), L->err_added, L->err_received);
}

static json_t *diagnosis_json(const struct wh_graph *g, const struct wh_diagnosis *d, const char *suggestion)
{
	const struct wh_diag_layer *L = &d->layers[d->start];
	const struct wh_node *n = &g->nodes[L->node];
	json_t *dj = json_object(), *w = json_object(), *keep = json_array();
	json_object_set_new(w, "tensor", json_string(g->values[L->value].name));
	json_object_set_new(w, "layer", json_string(n->name ? n->name : ""));
	json_object_set_new(w, "op", json_string(n->op_type));
	json_object_set_new(w, "kind", json_string(d->kind == WH_DIAG_OVERFLOW ? "overflow" : "error"));
	json_object_set_new(w, "error_received", num_json(L->err_received));
	json_object_set_new(w, "error_added", num_json(L->err_added));
	json_object_set_new(w, "nonfinite_added", json_integer((json_int_t)L->nonfinite_added));
	json_object_set_new(w, "output_error", num_json(d->output_error));
	json_object_set_new(w, "output_error_kept_fp32", num_json(d->output_error_kept));
	json_object_set_new(dj, "where_it_starts", w);
	for (uint32_t k = 0; k < d->n_keep; k++)
		json_array_append_new(keep, json_string(g->nodes[d->keep[k]].name ? g->nodes[d->keep[k]].name : ""));
	json_object_set_new(dj, "keep_fp32", keep);
	json_object_set_new(dj, "layer_precisions", suggestion[0] ? json_string(suggestion) : json_null());
	return dj;
}

/* Per tensor: the error it receives and the error its layer adds. */
static void rows_add_diagnosis(const struct wh_graph *g, const struct wh_diagnosis *d, json_t *rows)
{
	for (size_t i = 0; d->n_layers && i < json_array_size(rows); i++) {
		json_t *o = json_array_get(rows, i);
		uint32_t vid = wh_graph_find_value(g, json_string_value(json_object_get(o, "tensor")));
		int32_t li = vid != WH_NONE && g->values[vid].producer != WH_NONE ? wh_diagnosis_find(d, g->values[vid].producer) : -1;
		if (li < 0)
			continue;
		json_object_set_new(o, "error_received", num_json(d->layers[li].err_received));
		json_object_set_new(o, "error_added", num_json(d->layers[li].err_added));
		json_object_set_new(o, "nonfinite_added", json_integer((json_int_t)d->layers[li].nonfinite_added));
	}
}

static void summary_json(const struct wh_run_cmd *x, struct compare_state *cs, const struct wh_node *ff, const struct wh_graph *g,
			 const struct wh_diagnosis *d, const char *suggestion)
{
	json_t *root = json_object();
	json_object_set_new(root, "model", json_string(x->model_path));
	json_object_set_new(root, "precision", json_string(wh_precision_name(x->run.config.dflt)));
	json_object_set_new(root, "compare", json_string(x->compare));
	json_object_set_new(root, "atol", real_or_null(x->run.compare.atol));
	json_object_set_new(root, "rtol", real_or_null(x->run.compare.rtol));
	json_object_set_new(root, "pass", json_boolean(!cs->failed));
	json_object_set_new(root, "first_failing_tensor", cs->first_fail ? json_string(cs->first_fail) : json_null());
	json_object_set_new(root, "first_failing_layer", ff ? json_string(ff->name) : json_null());
	json_object_set_new(root, "diagnosis", d->start >= 0 ? diagnosis_json(g, d, suggestion) : json_null());
	rows_add_diagnosis(g, d, cs->rows);
	json_object_set_new(root, "tensors", cs->rows);
	cs->rows = NULL;
	wh_cli_print_json(root, JSON_INDENT(1));
}

/* What to try next: the failing layer in higher precision, by a name --layer-precisions
 * can take. */
static void suggest(const struct wh_graph *g, const struct wh_node *ff)
{
	if (wh_node_holds_graphs(ff))
		/* its own precision says nothing of its subgraphs' layers, which run at theirs */
		printf("compare: layer '%s' (%s) holds subgraphs whose float layers run in the build's precision too: add --mark-all to look inside an If's taken branch, or let `whittle precision` find the layers to keep\n",
		       wh_name_term(ff->name), wh_name_term(ff->op_type));
	else if (!ff->name || !*ff->name)
		printf("compare: the layer has no name (layer #%u, %s), so --layer-precisions cannot select it; name it in the model, or run with --precision fp32\n",
		       (unsigned)(ff - g->nodes), wh_name_term(ff->op_type));
	else if (strchr(ff->name, ','))
		printf("compare: try a --layer-precisions JSON file keeping layer '%s' at fp32 (its name holds a ','; docs/formats.md)\n", wh_name_term(ff->name));
	else
		printf("compare: try --layer-precisions %s:fp32\n", wh_name_term(ff->name));
}

static void summary_text(const struct wh_run_cmd *x, const struct wh_graph *g, const struct compare_state *cs, const struct wh_node *ff,
			 const struct wh_diagnosis *d, const char *suggestion)
{
	if (!cs->failed) {
		printf("compare: PASS: %zu tensors within atol %g rtol %g\n", cs->compared, x->run.compare.atol, x->run.compare.rtol);
		return;
	}
	if (d->start >= 0) {
		char start[10240];
		start_text(g, d, WH_NAME_TERM, start, sizeof start);
		printf("compare: FAIL: %zu of %zu tensors differ; where it starts: %s\n", cs->failed, cs->compared, start);
		printf("compare: first over the tolerance in topological order: %s%s%s%s%s%s\n", wh_name_term(cs->first_fail), ff ? " (layer " : "",
		       ff ? wh_name_term(ff->name) : "", ff ? ", " : "", ff ? wh_name_term(ff->op_type) : "", ff ? ")" : "");
		if (suggestion[0]) {
			/* whole: a suggestion is meant to be copied */
			printf("compare: try --layer-precisions ");
			wh_name_write(stdout, WH_NAME_TERM, suggestion);
			printf("\n");
		}
		else
			printf("compare: keep %u layer%s in fp32 (a name cannot be written in --layer-precisions: use a JSON file, docs/formats.md)\n",
			       d->n_keep, d->n_keep == 1 ? "" : "s");
		return;
	}
	printf("compare: FAIL: %zu of %zu tensors differ; first in topological order: %s%s%s%s%s%s\n", cs->failed, cs->compared,
	       wh_name_term(cs->first_fail), ff ? " (layer " : "", ff ? wh_name_term(ff->name) : "", ff ? ", " : "", ff ? wh_name_term(ff->op_type) : "", ff ? ")" : "");
	if (ff)
		suggest(g, ff);
}

/* The end of the --report file: the verdict, where it starts with each layer's received
 * and added error, and the first tensor over the tolerance. */
static void report_end(FILE *f, const struct wh_graph *g, const struct compare_state *cs, const struct wh_node *ff,
		       const struct wh_diagnosis *d, const char *suggestion)
{
	fprintf(f, "\n%s\n", cs->failed ? "" : "All tensors pass.");
	if (d->start >= 0) {
		char start[10240];
		start_text(g, d, WH_NAME_MD_CODE, start, sizeof start);
		fprintf(f, "Where it starts: %s.\n\n", start);
		if (suggestion[0]) {
			fprintf(f, "Suggestion: ");
			char *opt = malloc(strlen(suggestion) + 32);
			if (opt) {
				sprintf(opt, "--layer-precisions %s", suggestion);
				wh_name_write(f, WH_NAME_MD_CODE, opt);
			}
			free(opt);
			fprintf(f, ".\n\n");
		}
		fprintf(f, "| layer | op | tensor | error received | error added (exact inputs) | added / max(received, u) | NaN/Inf added |\n");
		fprintf(f, "| --- | --- | --- | ---: | ---: | ---: | ---: |\n");
		for (uint32_t i = 0; i < d->n_layers; i++) {
			const struct wh_diag_layer *L = &d->layers[i];
			fprintf(f, "| %s | %s | %s | %.3g | %.3g | %.3g | %llu |\n", g->nodes[L->node].name && *g->nodes[L->node].name ? wh_name_md_cell(g->nodes[L->node].name) : "",
				wh_name_md_cell(g->nodes[L->node].op_type), wh_name_md_cell(g->values[L->value].name), L->err_received, L->err_added, L->score,
				(unsigned long long)L->nonfinite_added);
		}
		fprintf(f, "\n");
	}
	if (cs->first_fail)
		fprintf(f, "First tensor over the tolerance in topological order: %s (layer %s, %s).\n", wh_name_md(cs->first_fail),
			ff && ff->name ? wh_name_md(ff->name) : "?", ff ? wh_name_md(ff->op_type) : "?");
}

static enum wh_status open_report(const struct wh_run_cmd *x, FILE **out)
{
	*out = NULL;
	if (!x->report)
		return WH_OK;
	FILE *f = fopen(x->report, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write the report: %s (check the folder)", x->report, strerror(errno));
	fprintf(f, "# whittle run --compare %s\n\nmodel %s, precision %s, atol %g, rtol %g\n\n", wh_name_md(x->compare), wh_name_md(x->model_path),
		wh_precision_name(x->run.config.dflt), x->run.compare.atol, x->run.compare.rtol);
	fprintf(f, "| # | tensor | layer | op | max abs | mean abs | median abs | max rel | mean rel | median rel | cosine | SQNR dB | rel>10%% | rel>1%% | rel>0.1%% | NaN/Inf | verdict |\n");
	fprintf(f, "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n");
	*out = f;
	return WH_OK;
}

/* The diagnosis of a failing --mark-all run at a reduced precision; d->start < 0 when
 * there is none. The graph inputs join the reference (they are reference values too). */
static enum wh_status diagnose(const struct wh_run_cmd *x, const struct wh_model *m, const struct wh_engine_options *eo,
			       const struct wh_tensor_set *inputs, const struct wh_tensor_set *results, struct wh_tensor_set *ref,
			       struct wh_diagnosis *d)
{
	const struct wh_graph *g = m->graph;
	if (!x->mark_all || !eo || !eo->precision)
		return WH_OK;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const char *in = g->values[g->inputs[i]].name;
		const struct wh_tensor *t = wh_tensor_set_find(inputs, in);
		enum wh_status st = WH_OK;
		if (t && !wh_tensor_set_find(ref, in) && (st = wh_tensor_set_add(ref, in, -1, t)) != WH_OK)
			return st;
	}
	return wh_diagnose(m, eo, results, ref, d);
}

enum wh_status wh_run_compare(const struct wh_run_cmd *x, const struct wh_model *m, const struct wh_engine_options *eo,
			      const struct wh_tensor_set *inputs, const struct wh_tensor_set *results, struct wh_tensor_set *ref,
			      bool *failed_out)
{
	const struct wh_graph *g = m->graph;
	struct compare_state cs = {.rows = x->json ? json_array() : NULL};
	struct wh_diagnosis d;
	wh_diagnosis_init(&d);
	char suggestion[4096] = "";
	enum wh_status st = open_report(x, &cs.report);
	for (size_t i = 0; i < results->n && st == WH_OK; i++) {
		const struct wh_tensor *r = wh_tensor_set_find(ref, results->items[i].name);
		if (r && results->items[i].t.dtype != WH_DT_STRING)
			st = compare_one(x, g, &results->items[i], r, &cs);
	}
	if (st == WH_OK && !cs.compared)
		st = wh_error(WH_ERR_NOT_FOUND, "%s: holds none of the model's output tensors (name the files after the outputs)", x->compare);
	if (st == WH_OK && cs.failed && (st = diagnose(x, m, eo, inputs, results, ref, &d)) == WH_OK && d.start >= 0)
		suggestion_text(g, &x->run.config, &d, suggestion, sizeof suggestion);
	if (st == WH_OK) {
		const struct wh_node *ff = producer(g, cs.first_fail);
		if (x->json)
			summary_json(x, &cs, ff, g, &d, suggestion);
		else
			summary_text(x, g, &cs, ff, &d, suggestion);
		if (cs.report)
			report_end(cs.report, g, &cs, ff, &d, suggestion);
	}
	wh_diagnosis_release(&d);
	json_decref(cs.rows);
	if (cs.report)
		fclose(cs.report);
	*failed_out = cs.failed > 0;
	return st;
}
