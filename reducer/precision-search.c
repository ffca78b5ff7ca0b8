#include "reducer/precision-search.h"
#include "reducer/launcher.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "executor/executor.h"
#include "graph/hash.h"
#include "graph/names.h"
#include "graph/os.h"
#include "graph/topo.h"
#include "reducer/builtin-check.h"
#include "reducer/driver-util.h"
#include "reducer/prior.h"

struct psearch {
	const struct wh_model *m;
	const struct wh_tensor_set *inputs; /* n_samples */
	uint32_t n_samples;
	const struct wh_precision_search_options *o;
	struct wh_precision_search_report *rep;
	uint32_t n;          /* candidate layers */
	uint32_t *layers;    /* node ids, in search order */
	uint32_t *topo_pos;  /* position of each candidate in topological order */
	struct wh_tensor_set *ref; /* FP32 outputs, per sample */
	struct wh_verdict_cache cache; /* by the mask's hash */
	char tmpdir[256];
	uint32_t seq;
	double t0;
};

static enum wh_status make_config(const struct psearch *p, const uint8_t *mask, struct wh_precision_config *c)
{
	wh_precision_config_init(c);
	c->dflt = p->o->target;
	c->calib = p->o->calib;
	for (uint32_t i = 0; i < p->n; i++)
		if (mask[i]) {
			enum wh_status st = wh_precision_config_set(c, p->m->graph->nodes[p->layers[i]].name, p->o->higher, -1);
			if (st != WH_OK)
				return st;
		}
	return WH_OK;
}

/* The real verdict of a configuration: pass or fail of the check. seq numbers its file of
 * layer precisions (the ends are 1 and 2); threads: executor threads of the built-in check;
 * *queue_out (may be NULL): the Slurm queue timed out on every try of a check.
 * Safe from several threads at once (each with its own seq). */
static enum wh_status check_config(const struct psearch *p, const uint8_t *mask, uint32_t seq, int threads,
				   enum wh_verdict *out, bool *queue_out)
{
	struct wh_precision_config c;
	enum wh_status st = make_config(p, mask, &c);
	if (st != WH_OK)
		goto out;
	if (p->o->check) {
		char path[600];
		snprintf(path, sizeof path, "%s/precisions-%u.json", p->tmpdir, seq);
		if ((st = wh_precision_config_write(&c, path)) != WH_OK)
			goto out;
		*out = WH_VERDICT_PASS;
		for (uint32_t k = 0; k < p->n_samples && st == WH_OK && *out == WH_VERDICT_PASS; k++) {
			struct wh_check_vars v = {.model = p->o->model_path, .inputs = p->o->inputs_dirs[k], .precisions = path,
						  .golden = p->o->golden_dirs ? p->o->golden_dirs[k] : NULL};
			struct wh_check_result r;
			if ((st = wh_check_run(p->o->check, &v, &r)) == WH_OK)
				*out = r.verdict;
			if (st == WH_OK && queue_out && r.queue_timed_out)
				*queue_out = true;
			/* on the two ends, "not found"/"not executable" is the check's own failure */
			if (st == WH_OK && seq <= 2)
				st = wh_check_result_broken(&r, "");
			wh_check_result_release(&r);
		}
		unlink(path);
		goto out;
	}
	struct wh_engine_options eo = {.threads = threads, .precision = &c, .cuda = p->o->cuda, .cuda_device = p->o->cuda_device, .allow_reduced_reduction = p->o->allow_reduced};
	struct wh_builtin_check_options bo = {.compare = p->o->compare};
	struct wh_builtin_check_result res;
	st = wh_builtin_check_run(p->m, &eo, p->inputs, p->ref, p->n_samples, &bo, &res);
	*out = res.verdict;
out:
	wh_precision_config_release(&c);
	return st;
}

static struct wh_hash mask_hash(const uint8_t *mask, uint32_t n)
{
	XXH128_hash_t x = XXH3_128bits(mask, n);
	return (struct wh_hash){.lo = x.low64, .hi = x.high64};
}

/* One configuration of a batch that the cache does not answer: checked on a thread of its
 * own (wh_run_tasks), its result read in batch order afterwards. */
struct pcheck {
	const struct psearch *p;
	const uint8_t *mask;
	uint32_t seq;
	struct wh_hash h;
	enum wh_verdict v;
	enum wh_status st;
	double secs;
	char err[512];
};

static void pcheck_task(void *ctx, uint32_t i)
{
	struct pcheck *c = &((struct pcheck *)ctx)[i];
	int jobs = c->p->o->jobs > 1 ? c->p->o->jobs : 1;
	double t0 = wh_os_now_s();
	wh_error_clear();
	c->st = check_config(c->p, c->mask, c->seq, wh_threads_per_job(c->p->o->threads, jobs), &c->v, NULL);
	c->secs = wh_os_now_s() - t0;
	if (c->st != WH_OK)
		snprintf(c->err, sizeof c->err, "%s", wh_error_message());
}

/* The search looks for the smallest set with the property "passes": its FAIL means pass.
 * The batch's new configurations are checked -j at a time; they are counted, cached and
 * logged in batch order, so neither the answer nor the log's order depends on -j. */
static enum wh_status eval(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *verdicts)
{
	struct psearch *p = ctx;
	struct pcheck *todo = calloc((size_t)n + 1, sizeof *todo);
	if (!todo)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	uint32_t m = 0;
	enum wh_status st = WH_OK;
	for (uint32_t i = 0; i < n; i++) {
		struct wh_hash h = mask_hash(masks[i], p->n);
		bool dup = wh_verdict_cache_find(&p->cache, h) != NULL;
		for (uint32_t k = 0; k < m && !dup; k++)
			dup = todo[k].h.lo == h.lo && todo[k].h.hi == h.hi;
		if (!dup)
			todo[m++] = (struct pcheck){.p = p, .mask = masks[i], .seq = ++p->seq, .h = h};
	}
	wh_run_tasks(p->o->jobs, m, pcheck_task, todo);
	for (uint32_t k = 0; k < m && st == WH_OK; k++) {
		struct pcheck *c = &todo[k];
		if (c->st != WH_OK) {
			st = wh_error(c->st, "%s", c->err);
			break;
		}
		p->rep->checks_run++;
		if ((st = wh_verdict_cache_put(&p->cache, c->h, c->v)) != WH_OK)
			break;
		uint32_t cnt = 0;
		for (uint32_t x = 0; x < p->n; x++)
			cnt += c->mask[x] != 0;
		if (p->o->log)
			fprintf(p->o->log, "check %u: %s with %u layer%s at %s, %.2f s\n", p->rep->checks_run, wh_verdict_name(c->v), cnt,
				cnt == 1 ? "" : "s", wh_precision_name(p->o->higher), c->secs);
		if (p->o->json) {
			printf("{\"event\":\"check\",\"n\":%u,\"verdict\":\"%s\",\"layers_high\":%u,\"elapsed_s\":%.3f}\n",
			       p->rep->checks_run, wh_verdict_name(c->v), cnt, wh_os_now_s() - p->t0);
			fflush(stdout);
		}
	}
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		const struct wh_verdict_entry *ce = wh_verdict_cache_find(&p->cache, mask_hash(masks[i], p->n));
		enum wh_verdict v = ce ? ce->v : WH_VERDICT_SKIP;
		bool fresh = false;
		for (uint32_t k = 0; k < m && !fresh; k++)
			fresh = todo[k].mask == masks[i];
		if (!fresh)
			p->rep->checks_cached++;
		verdicts[i] = v == WH_VERDICT_PASS ? WH_VERDICT_FAIL : (v == WH_VERDICT_FAIL ? WH_VERDICT_PASS : WH_VERDICT_SKIP);
	}
	free(todo);
	return st;
}

/* One end of the search: every layer low must fail (want FAIL), every layer high must pass
 * (want PASS). Its verdict goes into the cache. */
static enum wh_status check_end(struct psearch *p, const uint8_t *mask, enum wh_verdict want)
{
	enum wh_verdict v;
	bool queue = false;
	enum wh_status st = check_config(p, mask, ++p->seq, p->o->threads, &v, &queue);
	if (st != WH_OK)
		return st;
	p->rep->checks_run++;
	bool low = want == WH_VERDICT_FAIL;
	const char *prec = wh_precision_name(low ? p->o->target : p->o->higher);
	const char *model = p->o->model_path ? p->o->model_path : "model";
	if (v == WH_VERDICT_SKIP && queue)
		return wh_error(WH_ERR_CHECK, "check: cannot tell whether the model %s at %s: the Slurm queue timed out on every try (jobs pending past --queue-timeout, each of --retries; raise --queue-timeout, or ask for free nodes with --slurm-args)",
				low ? "fails" : "passes with every float layer", prec);
	if (v == WH_VERDICT_SKIP)
		return wh_error(WH_ERR_CHECK, "check: cannot tell whether the model %s at %s (exit 125 or timeout; fix the check or raise --timeout)",
				low ? "fails" : "passes with every float layer", prec);
	if (v != want && low)
		return wh_error(WH_ERR_INVALID, "%s: already passes at %s (nothing to keep in higher precision)", model, prec);
	if (v != want)
		return wh_error(WH_ERR_INVALID, "%s: still fails with every float layer at %s (the failure is not a precision problem, or the tolerance is too tight)",
				model, prec);
	return wh_verdict_cache_put(&p->cache, mask_hash(mask, p->n), v);
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static enum wh_status check_unique_names(const struct wh_graph *g, const uint32_t *layers, uint32_t n)
{
	const char **names = calloc((size_t)n + 1, sizeof *names);
	if (!names)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	for (uint32_t i = 0; i < n; i++)
		names[i] = g->nodes[layers[i]].name;
	qsort(names, n, sizeof *names, cmp_name);
	enum wh_status st = WH_OK;
	for (uint32_t i = 1; i < n && st == WH_OK; i++)
		if (!strcmp(names[i - 1], names[i]))
			st = wh_error(WH_ERR_INVALID, "model: several layers share the name '%s', and layer precisions name layers (give every node a unique name)",
				      names[i]);
	free(names);
	return st;
}

/* Error each layer adds: relative L2 error of its output minus the largest of its inputs',
 * from one layerwise comparison of the target precision against FP32 on one sample. */
static enum wh_status layer_errors_on(struct psearch *p, const struct wh_tensor_set *inputs, double *err_out)
{
	struct wh_precision_config c;
	wh_precision_config_init(&c);
	c.dflt = p->o->target;
	c.calib = p->o->calib;
	struct wh_engine *e = NULL, *f = NULL;
	struct wh_engine_options eo = {.threads = p->o->threads, .precision = &c, .cuda = p->o->cuda, .cuda_device = p->o->cuda_device, .allow_reduced_reduction = p->o->allow_reduced},
				 fo = {.threads = p->o->threads};
	struct wh_tensor_set a, b;
	wh_tensor_set_init(&a);
	wh_tensor_set_init(&b);
	enum wh_status st;
	if ((st = wh_engine_create(p->m, &eo, &e)) == WH_OK && (st = wh_engine_create(p->m, &fo, &f)) == WH_OK &&
	    (st = wh_engine_run(e, inputs, WH_KEEP_ALL, &a)) == WH_OK)
		st = wh_engine_run(f, inputs, WH_KEEP_ALL, &b);
	const struct wh_graph *g = p->m->graph;
	double *vals = calloc((size_t)g->n_values + 1, sizeof *vals);
	if (st == WH_OK && !vals)
		st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
	for (size_t i = 0; st == WH_OK && i < a.n; i++) {
		const struct wh_tensor *r = wh_tensor_set_find(&b, a.items[i].name);
		uint32_t v = wh_graph_find_value(g, a.items[i].name);
		if (!r || v == WH_NONE || !wh_dtype_is_float(r->dtype))
			continue;
		vals[v] = wh_builtin_rel_l2(&a.items[i].t, r);
	}
	for (uint32_t i = 0; st == WH_OK && i < p->n; i++) {
		const struct wh_node *n = &g->nodes[p->layers[i]];
		double in = 0, out = 0;
		for (uint32_t k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] != WH_NONE && vals[n->inputs[k]] > in)
				in = vals[n->inputs[k]];
		for (uint32_t k = 0; k < n->n_outputs; k++)
			if (n->outputs[k] != WH_NONE && vals[n->outputs[k]] > out)
				out = vals[n->outputs[k]];
		err_out[i] = out - in;
	}
	free(vals);
	wh_tensor_set_release(&a);
	wh_tensor_set_release(&b);
	wh_engine_destroy(e);
	wh_engine_destroy(f);
	wh_precision_config_release(&c);
	return st;
}

/* The largest error a layer adds on any sample. */
static enum wh_status layer_errors(struct psearch *p, double *err_out)
{
	double *e = calloc((size_t)p->n + 1, sizeof *e);
	if (!e)
		return wh_error(WH_ERR_NOMEM, "precision: out of memory");
	enum wh_status st = WH_OK;
	for (uint32_t k = 0; k < p->n_samples && st == WH_OK; k++) {
		if ((st = layer_errors_on(p, &p->inputs[k], e)) != WH_OK)
			break;
		for (uint32_t i = 0; i < p->n; i++)
			err_out[i] = k == 0 || e[i] > err_out[i] ? e[i] : err_out[i];
	}
	free(e);
	return st;
}

/* The prior's keep sets (reducer/prior.h), checked before the bisection: *done when one
 * passed and mask holds a 1-minimal keep set inside it. Without --prior, a prior whittle
 * cannot compute is left out with a line in the log. */
static enum wh_status precision_prior(struct psearch *p, const struct wh_search_ops *ops, uint8_t *mask, bool *done)
{
	const struct wh_precision_search_options *o = p->o;
	bool given = o->prior != NULL;
	const char *want = given ? o->prior : (o->check ? "emulation" : "rules");
	struct wh_precision_search_report *rep = p->rep;
	struct wh_prior pr;
	wh_prior_init(&pr);
	uint8_t *sets[2] = {0};
	uint32_t ns = 0, top = UINT32_MAX, flagged = 0;
	enum wh_status st = WH_OK;
	*done = false;
	rep->prior_hit = -1;
	if (!strcmp(want, "none"))
		return WH_OK;
	if (o->mode == WH_SEARCH_BISECT) {
		if (given && o->log)
			fprintf(o->log, "precision: prior: not used with --mode bisect (only ddmin searches prior-first)\n");
		return WH_OK;
	}
	if (!strcmp(want, "emulation")) {
		struct wh_precision_config c;
		wh_precision_config_init(&c);
		c.dflt = o->target;
		c.calib = o->calib;
		struct wh_engine_options eo = {.threads = o->threads, .precision = &c};
		st = wh_prior_emulation(p->m, &eo, &p->inputs[0], &pr);
		wh_precision_config_release(&c);
	} else if (!strcmp(want, "rules")) {
		st = wh_prior_rules(p->m, o->threads, &p->inputs[0], &pr, &flagged);
	} else {
		uint32_t unknown = 0;
		if ((st = wh_prior_load(p->m, want, &pr, &unknown)) == WH_OK && unknown && o->log)
			fprintf(o->log, "precision: prior: %u layer%s of %s not in the model (skipped)\n", unknown, unknown == 1 ? "" : "s",
				wh_name_term(want));
	}
	if (st != WH_OK && !given) {
		if (o->log)
			fprintf(o->log, "precision: prior: none (%s)\n", wh_error_message());
		wh_error_clear();
		st = WH_OK;
		goto out;
	}
	if (st != WH_OK || (st = wh_prior_sets(p->m, &pr, p->layers, p->n, false, 2, sets, &ns, &top)) != WH_OK)
		goto out;
	flagged = 0;
	for (uint32_t i = 0; i < p->n; i++)
		flagged += p->layers[i] < pr.n_nodes && pr.score[p->layers[i]] > 0;
	snprintf(rep->prior, sizeof rep->prior, "%s", pr.source);
	rep->prior_flagged = flagged;
	if (!ns) {
		if (o->log)
			fprintf(o->log, "precision: prior: %s: %u layer%s flagged, no keep set to try (the bisection runs)\n", pr.source, flagged,
				flagged == 1 ? "" : "s");
		goto out;
	}
	if (o->log) {
		uint32_t c0 = 0, c1 = 0;
		for (uint32_t i = 0; i < p->n; i++) {
			c0 += sets[0][i];
			c1 += ns > 1 && sets[1][i];
		}
		fprintf(o->log, "precision: prior: %s: %u layer%s flagged, the first %s; keep sets of %u%s%.0u layers first\n", pr.source, flagged,
			flagged == 1 ? "" : "s", wh_name_term(p->m->graph->nodes[p->layers[top]].name), c0, ns > 1 ? " and " : "", ns > 1 ? c1 : 0);
	}
	struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = o->jobs > 1 ? o->jobs : 1, .prior_sets = (const uint8_t *const *)sets,
				       .n_prior_sets = ns, .prior_only = true};
	struct wh_search_report sr;
	if ((st = wh_search_run(p->n, &so, ops, mask, &sr)) != WH_OK)
		goto out;
	rep->prior_hit = sr.prior_hit;
	rep->prior_checks = sr.prior_checks;
	if (sr.prior_hit >= 0) {
		*done = true;
		rep->one_minimal = sr.one_minimal;
		uint32_t k = 0;
		for (uint32_t i = 0; i < p->n; i++)
			k += mask[i] != 0;
		if (o->log)
			fprintf(o->log, "precision: prior: the keep set of %u layer%s passed; minimised inside it to %u layer%s\n", sr.prior_size,
				sr.prior_size == 1 ? "" : "s", k, k == 1 ? "" : "s");
	} else if (o->log) {
		fprintf(o->log, "precision: prior: none of its %u keep set%s passed (%u check%s spent on them); the bisection runs\n", ns,
			ns == 1 ? "" : "s", sr.prior_checks, sr.prior_checks == 1 ? "" : "s");
	}
out:
	for (uint32_t i = 0; i < ns; i++)
		free(sets[i]);
	wh_prior_release(&pr);
	return st;
}

enum wh_status wh_precision_search(const struct wh_model *m, const struct wh_tensor_set *inputs, uint32_t n_samples,
				   const struct wh_precision_search_options *o, struct wh_precision_config *result,
				   struct wh_precision_search_report *rep)
{
	struct psearch ps = {.m = m, .inputs = inputs, .n_samples = n_samples, .o = o, .rep = rep};
	struct psearch *p = &ps;
	memset(rep, 0, sizeof *rep);
	rep->prior_hit = -1;
	p->t0 = wh_os_now_s();
	if (!n_samples)
		return wh_error(WH_ERR_USAGE, "precision: no data sample (internal error)");
	const struct wh_graph *g = m->graph;
	enum wh_status st = WH_OK;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	p->layers = calloc((size_t)g->n_nodes + 1, sizeof *p->layers);
	double *err = NULL;
	uint8_t *mask = NULL, *full = NULL;
	p->ref = calloc(n_samples, sizeof *p->ref);
	for (uint32_t k = 0; p->ref && k < n_samples; k++)
		wh_tensor_set_init(&p->ref[k]);
	if (!order || !kinds || !p->layers || !p->ref) {
		st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK || (st = wh_model_layer_kinds(m, kinds)) != WH_OK)
		goto out;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (kinds[order[i]] == WH_LAYER_FLOAT)
			p->layers[p->n++] = order[i];
	rep->candidates = p->n;
	/* configurations name layers: an unnamed or shared name would stand for another layer */
	for (uint32_t i = 0; i < p->n; i++) {
		const struct wh_node *nd = &g->nodes[p->layers[i]];
		if (!nd->name || !*nd->name) {
			st = wh_error(WH_ERR_INVALID, "model: a %s layer has no name, and layer precisions name layers (give every node a unique name)",
				      nd->op_type);
			goto out;
		}
	}
	if ((st = check_unique_names(g, p->layers, p->n)) != WH_OK)
		goto out;
	if (!p->n) {
		st = wh_error(WH_ERR_INVALID, "model: has no float layers whose precision could change");
		goto out;
	}
	snprintf(p->tmpdir, sizeof p->tmpdir, "%s/whittle-precision-XXXXXX", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (o->check && (st = wh_os_make_temp_dir(p->tmpdir)) != WH_OK) {
		p->tmpdir[0] = '\0';
		goto out;
	}
	if (o->check)
		wh_interrupt_track_dir(p->tmpdir);
	if (!o->check) {
		if ((st = wh_builtin_reference(m, o->threads, inputs, n_samples, o->compare.validate, p->ref)) != WH_OK)
			goto out;
	}
	mask = calloc(p->n, 1);
	full = malloc(p->n);
	err = calloc(p->n, sizeof *err);
	if (!mask || !full || !err) {
		st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
		goto out;
	}
	memset(full, 1, p->n);
	/* the ends: everything low must fail, everything high must pass */
	if ((st = check_end(p, mask, WH_VERDICT_FAIL)) != WH_OK || (st = check_end(p, full, WH_VERDICT_PASS)) != WH_OK)
		goto out;
	struct wh_search_ops ops = {.ctx = p, .eval = eval};
	struct wh_search_report sr = {0};
	bool prior_done = false;
	if ((st = precision_prior(p, &ops, mask, &prior_done)) != WH_OK)
		goto out;
	if (prior_done) {
		if ((st = make_config(p, mask, result)) != WH_OK)
			goto out;
		goto out;
	}
	/* reverse: the search's prefixes become suffixes of the topological order */
	if (o->reverse)
		for (uint32_t i = 0; i < p->n / 2; i++) {
			uint32_t t = p->layers[i];
			p->layers[i] = p->layers[p->n - 1 - i];
			p->layers[p->n - 1 - i] = t;
		}
	struct wh_search_options so = {.mode = WH_SEARCH_BISECT, .jobs = o->jobs > 1 ? o->jobs : 1, .reduce_inputs = o->mode != WH_SEARCH_BISECT, .reduce_outputs = true};
	if ((st = wh_search_run(p->n, &so, &ops, mask, &sr)) != WH_OK)
		goto out;
	if (o->mode != WH_SEARCH_BISECT) {
		/* fine phase over the layers of the coarse range, most harmful first */
		if ((st = layer_errors(p, err)) != WH_OK)
			goto out;
		uint32_t k = 0;
		uint32_t *sub = calloc(p->n + 1, sizeof *sub);
		if (!sub) {
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
			goto out;
		}
		for (uint32_t i = 0; i < p->n; i++)
			if (mask[i])
				sub[k++] = i;
		for (uint32_t a = 0; a < k; a++)
			for (uint32_t b = a + 1; b < k; b++)
				if (err[sub[b]] > err[sub[a]]) {
					uint32_t t = sub[a];
					sub[a] = sub[b];
					sub[b] = t;
				}
		/* reorder the layer list so that the range comes first, by error */
		uint32_t *nl = calloc(p->n + 1, sizeof *nl);
		if (!nl) {
			free(sub);
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
			goto out;
		}
		for (uint32_t i = 0; i < k; i++)
			nl[i] = p->layers[sub[i]];
		uint32_t nn = k;
		for (uint32_t i = 0; i < p->n; i++)
			if (!mask[i])
				nl[nn++] = p->layers[i];
		memcpy(p->layers, nl, p->n * sizeof *nl);
		free(nl);
		free(sub);
		/* the cache is keyed by masks over the old order: start it afresh */
		wh_verdict_cache_release(&p->cache);
		/* rerun_slot: the cut points of -j N > 1 as before the driver stopped re-running
		 * results (a numerical check is not monotone, and other cut points give another
		 * answer: on rec at -j 2 a larger one) */
		struct wh_search_options fo = {.mode = WH_SEARCH_DDMIN, .jobs = o->jobs > 1 ? o->jobs : 1, .reduce_inputs = false, .reduce_outputs = false,
					       .rerun_slot = true};
		uint8_t *fixed = calloc(p->n, 1);
		if (!fixed) {
			st = wh_error(WH_ERR_NOMEM, "precision: out of memory");
			goto out;
		}
		/* layers outside the range are never candidates: search only the first k */
		uint32_t saved_n = p->n;
		p->n = k;
		st = wh_search_run(k, &fo, &ops, mask, &sr);
		p->n = saved_n;
		for (uint32_t i = k; i < p->n; i++)
			mask[i] = 0;
		free(fixed);
		if (st != WH_OK)
			goto out;
		rep->one_minimal = sr.one_minimal;
	}
	/* the answer stands for the weights loaded: refuse it if a weights file changed meanwhile */
	if ((st = wh_model_weights_unchanged(m)) != WH_OK || (st = make_config(p, mask, result)) != WH_OK)
		goto out;
	if (sr.inconsistent)
		snprintf(rep->note, sizeof rep->note, "%.200s", sr.note);


out:
	rep->seconds = wh_os_now_s() - p->t0;
	if (p->tmpdir[0] && o->check) {
		wh_interrupt_untrack_dir(p->tmpdir);
		wh_os_remove_tree(p->tmpdir);
	}
	for (uint32_t k = 0; p->ref && k < n_samples; k++)
		wh_tensor_set_release(&p->ref[k]);
	free(p->ref);
	wh_verdict_cache_release(&p->cache);
	free(p->layers);
	free(order);
	free(kinds);
	free(err);
	free(mask);
	free(full);
	return st;
}
