#include "reducer/reduce.h"
#include "reducer/launcher.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "graph/names.h"
#include "executor/precision.h"
#include "graph/extract.h"
#include "graph/hash.h"
#include "graph/onnx-io.h"
#include "graph/topo.h"
#include "graph/os.h"
#include "reducer/builtin-check.h"
#include "reducer/driver-util.h"
#include "reducer/prior.h"

struct driver {
	const struct wh_model *m;
	const struct wh_reduce_options *o;
	const struct wh_reduce_data *data;
	struct wh_reduce_report *rep;
	uint32_t n;             /* search nodes */
	uint32_t *search_nodes; /* node ids, topological order, no Constant nodes */
	struct wh_tensor_set *ref; /* per sample: reference values held in memory */
	bool ref_owned;
	/* per sample: the reference values past the memory budget (--reference-memory), names
	 * only; each was written once as <workdir>/tensors/s<k>/<name>.npy and is mapped when a
	 * candidate needs it (ref_get) */
	struct wh_tensor_set *spilled;
	uint64_t ref_budget, ref_mem_bytes, spill_bytes;
	uint32_t n_spilled;
	bool spill_failed; /* a reference value could not be written: the error is the disk's */
	atomic_bool queue_timed_out; /* a check could not tell because the Slurm queue timed out on every try */
	struct wh_verdict_cache cache;
	FILE *replay;
	char workdir[PATH_MAX];
	uint32_t seq;
	uint32_t best_count;
	uint8_t *best_mask;
	struct wh_progress pr;
	/* per-sample tensor files already written (names) */
	struct wh_tensor_set *written;
	uint32_t good_seq, bad_seq;
	/* whittle's own time per candidate: cut, hash, save, stage (not the check itself) */
	double driver_s;
	uint32_t driver_n;
	/* one-time cost: reference tensors written to files on first use */
	double tensor_write_s;
};

static void live_line(struct driver *d)
{
	if (!d->pr.tty)
		return;
	struct wh_reduce_report *r = d->rep;
	double el = wh_os_now_s() - d->pr.t0;
	uint32_t done = r->checks_run;
	fprintf(d->o->log, "\r\033[Kreduce: %u checks (%u fail, %u pass, %u skip, %u cached) | best %u of %u nodes | %.1f s",
		done, r->n_fail, r->n_pass, r->n_skip, r->checks_cached, d->best_count, d->n, el);
	if (done > 1 && d->best_count > 1) {
		/* a rough estimate: about two checks per halving of what is left */
		double per = el / done;
		double left = 2.0 * (log2((double)d->best_count) + 1);
		fprintf(d->o->log, " | ~%.0f s left", per * left);
	}
	fflush(d->o->log);
}

/* ---- candidates ---- */

/* node ids of a mask: selected search nodes plus the Constant nodes they read */
static uint32_t mask_nodes(const struct driver *d, const uint8_t *mask, uint32_t *ids, uint8_t *seen)
{
	const struct wh_graph *g = d->m->graph;
	uint32_t k = 0;
	memset(seen, 0, g->n_nodes);
	for (uint32_t i = 0; i < d->n; i++) {
		if (!mask[i])
			continue;
		const struct wh_node *n = &g->nodes[d->search_nodes[i]];
		for (uint32_t j = 0; j < n->n_inputs; j++) {
			uint32_t v = n->inputs[j];
			if (v == WH_NONE)
				continue;
			uint32_t p = g->values[v].producer;
			if (p != WH_NONE && wh_node_is_constant(&g->nodes[p]) && !seen[p]) {
				seen[p] = 1;
				ids[k++] = p;
			}
		}
		if (!seen[d->search_nodes[i]]) {
			seen[d->search_nodes[i]] = 1;
			ids[k++] = d->search_nodes[i];
		}
	}
	return k;
}

static enum wh_status build_candidate(const struct driver *d, const uint8_t *mask, struct wh_model **out,
				      struct wh_hash *h)
{
	const struct wh_graph *g = d->m->graph;
	uint32_t *ids = malloc(((size_t)g->n_nodes + 1) * sizeof *ids);
	uint8_t *seen = malloc((size_t)g->n_nodes + 1);
	enum wh_status st;
	if (!ids || !seen) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	uint32_t k = mask_nodes(d, mask, ids, seen);
	if ((st = wh_model_extract_nodes(d->m, ids, k, out)) != WH_OK)
		goto out;
	if ((st = wh_model_hash(*out, h)) != WH_OK) {
		wh_model_destroy(*out);
		*out = NULL;
	}
out:
	free(ids);
	free(seen);
	return st;
}

static uint32_t mask_count(const struct driver *d, const uint8_t *mask)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < d->n; i++)
		c += mask[i] != 0;
	return c;
}

static enum wh_status load_replay(struct driver *d, const char *path, const char *model_hash)
{
	unsigned loaded;
	enum wh_status st = wh_verdict_cache_load(&d->cache, path, model_hash, &loaded);
	if (st == WH_OK)
		wh_progress_log(&d->pr, "reduce: loaded %u verdicts from %s", loaded, wh_name_term(path));
	return st;
}

static void replay_append(struct driver *d, struct wh_hash h, enum wh_verdict v, uint32_t nodes, double secs,
			  const struct wh_check_result *r)
{
	if (!d->replay)
		return;
	char hex[33];
	wh_hash_hex(h, hex);
	json_t *j = json_object();
	json_object_set_new(j, "hash", json_string(hex));
	json_object_set_new(j, "verdict", json_string(wh_verdict_name(v)));
	json_object_set_new(j, "nodes", json_integer(nodes));
	json_object_set_new(j, "seconds", json_real(secs));
	if (r) {
		json_object_set_new(j, "exit", json_integer(r->exit_code));
		if (r->signal)
			json_object_set_new(j, "signal", json_integer(r->signal));
		if (r->timed_out)
			json_object_set_new(j, "timeout", json_true());
	}
	char *s = json_dumps(j, JSON_COMPACT);
	if (s) {
		/* one write() of the whole line: an interrupt (reducer/launcher.h exits from its own
		 * thread) finds the line written or not, never half */
		size_t len = strlen(s);
		s[len] = '\n';
		fflush(d->replay);
		ssize_t w = write(fileno(d->replay), s, len + 1);
		(void)w;
		fsync(fileno(d->replay));
	}
	free(s);
	json_decref(j);
}

/* ---- reference data ---- */

/* <workdir>/tensors/s<k>/<escaped name><ext>: the file of a reference value */
static enum wh_status ref_path(const struct driver *d, uint32_t k, const char *name, const char *ext, char *path, size_t size)
{
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof dir, "%s/tensors/s%u", d->workdir, k) >= sizeof dir)
		return wh_error(WH_ERR_INVALID, "%s: work folder path too long (set TMPDIR to a shorter path)", d->workdir);
	return wh_tensor_file_path(dir, name, ext, path, size);
}

/* The reference value of name for sample k into *t (a reference to the one in memory, or a
 * mapping of its .npy); *found false when there is none. Thread-safe: the sets are only
 * read once the reference run is done. */
static enum wh_status ref_get(const struct driver *d, uint32_t k, const char *name, struct wh_tensor *t, bool *found)
{
	const struct wh_tensor *m = wh_tensor_set_find(&d->ref[k], name);
	*found = m || wh_tensor_set_find(&d->spilled[k], name);
	if (m) {
		wh_tensor_ref(t, m);
		return WH_OK;
	}
	if (!*found)
		return WH_OK;
	char path[PATH_MAX];
	enum wh_status st = ref_path(d, k, name, ".npy", path, sizeof path);
	return st == WH_OK ? wh_tensor_map_npy(path, t) : st;
}

/* The reference values candidate c needs for sample k into *out (caller-initialised): its
 * inputs and outputs, and with all every other tensor of it the reference holds. Spilled
 * ones are mapped for as long as *out holds them. */
static enum wh_status cand_ref(const struct driver *d, const struct wh_model *c, uint32_t k, bool all, struct wh_tensor_set *out)
{
	const struct wh_graph *g = c->graph;
	enum wh_status st = WH_OK;
	for (uint32_t v = 0; v < g->n_values && st == WH_OK; v++) {
		const struct wh_value *val = &g->values[v];
		if (!val->name || (val->flags & WH_VALUE_INITIALIZER))
			continue;
		if (!all && !(val->flags & (WH_VALUE_INPUT | WH_VALUE_OUTPUT)))
			continue;
		struct wh_tensor t;
		bool found;
		wh_tensor_init(&t);
		st = ref_get(d, k, val->name, &t, &found);
		if (st == WH_OK && found)
			st = wh_tensor_set_add(out, val->name, -1, &t);
		wh_tensor_release(&t);
	}
	return st;
}

/* Makes sure <workdir>/tensors/s<k>/<name>.pb exists; writes it on first use. */
static enum wh_status tensor_file(struct driver *d, uint32_t k, const char *name, char *path, size_t size)
{
	enum wh_status st = ref_path(d, k, name, ".pb", path, size);
	if (st != WH_OK || wh_tensor_set_find(&d->written[k], name))
		return st;
	struct wh_tensor t;
	bool found;
	wh_tensor_init(&t);
	if ((st = ref_get(d, k, name, &t, &found)) != WH_OK)
		return st;
	if (!found)
		return wh_error(WH_ERR_NOT_FOUND, "tensor '%s': no reference value for sample %u (give --reference DIR with every tensor, e.g. from scripts/ort-run.js --all)", name, k);
	double t0 = wh_os_now_s();
	st = wh_tensor_write_pb(path, name, &t);
	wh_tensor_release(&t);
	d->tensor_write_s += wh_os_now_s() - t0;
	if (st == WH_OK) {
		struct wh_tensor empty;
		wh_tensor_init(&empty);
		empty.dtype = WH_DT_BOOL; /* a marker: only the name matters */
		st = wh_tensor_set_add(&d->written[k], name, -1, &empty);
	}
	return st;
}

/* Links the candidate's inputs and goldens for sample k into dir/inputs-k, dir/golden-k. */
static enum wh_status stage_sample(struct driver *d, const struct wh_model *c, const char *dir, uint32_t k,
				   char *in_dir, char *gold_dir, size_t size)
{
	enum wh_status st;
	const struct wh_graph *g = c->graph;
	snprintf(in_dir, size, "%s/inputs%s%.0u", dir, d->data->n_samples > 1 ? "-" : "", d->data->n_samples > 1 ? k : 0u);
	snprintf(gold_dir, size, "%s/golden%s%.0u", dir, d->data->n_samples > 1 ? "-" : "", d->data->n_samples > 1 ? k : 0u);
	if ((st = wh_os_make_dir(in_dir)) != WH_OK || (st = wh_os_make_dir(gold_dir)) != WH_OK)
		return st;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t cnt = pass ? g->n_outputs : g->n_inputs;
		const uint32_t *ids = pass ? g->outputs : g->inputs;
		for (uint32_t i = 0; i < cnt; i++) {
			const char *name = g->values[ids[i]].name;
			char src[PATH_MAX], dst[PATH_MAX];
			if ((st = tensor_file(d, k, name, src, sizeof src)) != WH_OK ||
			    (st = wh_tensor_file_path(pass ? gold_dir : in_dir, name, ".pb", dst, sizeof dst)) != WH_OK)
				return st;
			if ((st = wh_os_copy_file(src, dst)) != WH_OK)
				return st;
		}
	}
	return WH_OK;
}

/* ---- evaluation ---- */

struct job {
	struct driver *d;
	uint8_t *mask;
	struct wh_model *cand;
	struct wh_hash h;
	uint32_t seq;
	enum wh_verdict v;
	enum wh_status st;
	char err[1024];
	double secs;
	struct wh_check_result res; /* last run's result (external check) */
	bool has_res;
	bool rerun; /* a second run of a candidate, in a slot that would idle otherwise */
};

static enum wh_status builtin_check(struct driver *d, struct job *j)
{
	struct wh_engine_options eo = d->o->engine;
	int jobs = d->o->jobs > 1 ? d->o->jobs : 1;
	if (eo.threads > 0 && jobs > 1)
		eo.threads = eo.threads / jobs > 0 ? eo.threads / jobs : 1;
	else if (jobs > 1)
		eo.threads = 1;
	/* each engine in flight gets its share of the weight cache: -j N engines together hold
	 * no more rounded weights than one */
	if (jobs > 1 && eo.weight_cache_bytes >= 0) {
		int64_t wc = eo.weight_cache_bytes ? eo.weight_cache_bytes : WH_ENGINE_WEIGHT_CACHE_DEFAULT;
		eo.weight_cache_bytes = wc / jobs > 0 ? wc / jobs : -1;
	}
	struct wh_builtin_check_options bo = {.compare = d->o->compare};
	struct wh_builtin_check_result res = {.verdict = WH_VERDICT_PASS};
	uint32_t ns = d->data->n_samples;
	struct wh_tensor_set *ref = calloc(ns ? ns : 1, sizeof *ref);
	if (!ref)
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	enum wh_status st = WH_OK;
	for (uint32_t k = 0; k < ns; k++)
		wh_tensor_set_init(&ref[k]);
	/* --validate compares every tensor the candidate computes */
	for (uint32_t k = 0; k < ns && st == WH_OK; k++)
		st = cand_ref(d, j->cand, k, bo.compare.validate, &ref[k]);
	if (st == WH_OK)
		st = wh_builtin_check_run(j->cand, &eo, NULL, ref, ns, &bo, &res);
	j->v = res.verdict;
	for (uint32_t k = 0; k < ns; k++)
		wh_tensor_set_release(&ref[k]);
	free(ref);
	return st;
}

static enum wh_status external_check(struct driver *d, struct job *j)
{
	char dir[PATH_MAX + 32], model[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/c%05u", d->workdir, j->seq);
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	if ((st = wh_model_save_with(j->cand, model, d->o->save)) != WH_OK)
		goto out;
	j->v = WH_VERDICT_PASS;
	bool any_skip = false;
	for (uint32_t k = 0; k < d->data->n_samples; k++) {
		char in_dir[PATH_MAX + 64], gold_dir[PATH_MAX + 64];
		if ((st = stage_sample(d, j->cand, dir, k, in_dir, gold_dir, sizeof in_dir)) != WH_OK)
			goto out;
		struct wh_check_vars vars = {.model = model, .inputs = in_dir, .golden = gold_dir};
		if (j->has_res)
			wh_check_result_release(&j->res);
		if ((st = wh_check_run(d->o->check, &vars, &j->res)) != WH_OK)
			goto out;
		j->has_res = true;
		if (j->res.queue_timed_out)
			atomic_store(&d->queue_timed_out, true);
		if (j->res.verdict == WH_VERDICT_FAIL) {
			j->v = WH_VERDICT_FAIL;
			break;
		}
		any_skip |= j->res.verdict == WH_VERDICT_SKIP;
	}
	if (j->v != WH_VERDICT_FAIL && any_skip)
		j->v = WH_VERDICT_SKIP;
out:
	wh_os_remove_tree(dir);
	return st;
}

static void *job_thread(void *arg)
{
	struct job **jobs = ((void **)arg)[0];
	atomic_uint *next = ((void **)arg)[1];
	uint32_t n = *(uint32_t *)((void **)arg)[2];
	for (;;) {
		uint32_t i = atomic_fetch_add(next, 1);
		if (i >= n)
			break;
		struct job *j = jobs[i];
		double t0 = wh_os_now_s();
		wh_error_clear();
		j->st = j->d->o->check ? external_check(j->d, j) : builtin_check(j->d, j);
		j->secs = wh_os_now_s() - t0;
		if (j->st != WH_OK)
			snprintf(j->err, sizeof j->err, "%s", wh_error_message());
	}
	return NULL;
}

/* Runs the jobs, jobs->d->o->jobs at a time. Tensor files are staged by the threads; the
 * written-set is protected by doing all staging before threads start. */
static enum wh_status run_jobs(struct driver *d, struct job **jobs, uint32_t n)
{
	if (!n)
		return WH_OK;
	/* stage tensor files first, single-threaded (shared lazily written cache); writing a
	 * reference tensor the first time is a one-time cost, counted apart */
	if (d->o->check) {
		for (uint32_t i = 0; i < n; i++) {
			const struct wh_graph *g = jobs[i]->cand->graph;
			for (uint32_t k = 0; k < d->data->n_samples; k++) {
				char p[PATH_MAX];
				for (uint32_t x = 0; x < g->n_inputs; x++) {
					enum wh_status st = tensor_file(d, k, g->values[g->inputs[x]].name, p, sizeof p);
					if (st != WH_OK)
						return st;
				}
				for (uint32_t x = 0; x < g->n_outputs; x++) {
					enum wh_status st = tensor_file(d, k, g->values[g->outputs[x]].name, p, sizeof p);
					if (st != WH_OK)
						return st;
				}
			}
		}
	}
	atomic_uint next;
	atomic_init(&next, 0);
	void *arg[3] = {jobs, &next, &n};
	int threads = d->o->jobs > 1 ? d->o->jobs : 1;
	if ((uint32_t)threads > n)
		threads = (int)n;
	pthread_t tids[64];
	int started = 0;
	for (int t = 1; t < threads && t < 64; t++)
		if (pthread_create(&tids[started], NULL, job_thread, arg) == 0)
			started++;
	job_thread(arg);
	for (int t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	for (uint32_t i = 0; i < n; i++)
		if (jobs[i]->st != WH_OK)
			return wh_error(jobs[i]->st, "%s", jobs[i]->err);
	return WH_OK;
}

static void record_verdict(struct driver *d, struct job *j, bool cached)
{
	struct wh_reduce_report *r = d->rep;
	uint32_t cnt = mask_count(d, j->mask);
	struct wh_verdict_entry *ce = wh_verdict_cache_find(&d->cache, j->h);
	if (!cached && ce) {
		ce->runs++;
		ce->fails += j->v == WH_VERDICT_FAIL;
		if (ce->runs > 1 && ce->fails && ce->fails != ce->runs && !r->inconsistent) {
			r->inconsistent = true;
			snprintf(r->note, sizeof r->note, "a candidate of %u layers failed %u of %u runs", cnt, ce->fails, ce->runs);
		}
	}
	if (cached) {
		r->checks_cached++;
	} else {
		r->checks_run++;
		if (j->v == WH_VERDICT_FAIL)
			r->n_fail++;
		else if (j->v == WH_VERDICT_PASS)
			r->n_pass++;
		else
			r->n_skip++;
		replay_append(d, j->h, j->v, cnt, j->secs, j->has_res ? &j->res : NULL);
		if (d->o->artifacts_dir && j->v != WH_VERDICT_SKIP)
			wh_artifacts_sort(d->o->artifacts, d->o->n_artifacts, d->o->artifacts_dir, j->v, j->seq);
	}
	if (j->v == WH_VERDICT_FAIL && cnt < d->best_count) {
		d->best_count = cnt;
		memcpy(d->best_mask, j->mask, d->n);
	}
	if (!cached) {
		if (!d->pr.tty)
			wh_progress_log(&d->pr, "check %u: %s, %u nodes, %.2f s%s%s%s", r->checks_run, wh_verdict_name(j->v), cnt, j->secs,
			      j->has_res ? ", " : "", j->has_res ? wh_name_term(j->res.why) : "", j->rerun ? " (second run)" : "");
		json_t *e = json_object();
		json_object_set_new(e, "event", json_string("check"));
		json_object_set_new(e, "n", json_integer(r->checks_run));
		json_object_set_new(e, "verdict", json_string(wh_verdict_name(j->v)));
		json_object_set_new(e, "nodes", json_integer(cnt));
		json_object_set_new(e, "seconds", json_real(j->secs));
		if (j->has_res)
			json_object_set_new(e, "exit", json_integer(j->res.exit_code));
		wh_progress_event(&d->pr, e);
		live_line(d);
	}
}

/* Exit 126/127 on the original model: the check itself is broken (a command inside it was
 * not found or cannot run), not a verdict. */
static enum wh_status broken_check(const struct driver *d, const struct job *j)
{
	if (j->has_res && mask_count(d, j->mask) == d->n)
		return wh_check_result_broken(&j->res, " on the original model");
	return WH_OK;
}

static enum wh_status eval_masks(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *verdicts)
{
	struct driver *d = ctx;
	struct job *jobs = calloc(n, sizeof *jobs);
	struct job **todo = calloc((size_t)n + (d->o->jobs > 1 ? (size_t)d->o->jobs : 1), sizeof *todo);
	enum wh_status st = WH_OK;
	if (!jobs || !todo) {
		free(jobs);
		free(todo);
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	}
	uint32_t m = 0;
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		jobs[i].d = d;
		jobs[i].mask = (uint8_t *)masks[i];
		double tb = wh_os_now_s();
		if ((st = build_candidate(d, masks[i], &jobs[i].cand, &jobs[i].h)) != WH_OK)
			break;
		d->driver_s += wh_os_now_s() - tb;
		d->driver_n++;
		struct wh_verdict_entry *c = wh_verdict_cache_find(&d->cache, jobs[i].h);
		bool dup = false;
		for (uint32_t k = 0; k < i && !c; k++)
			if (jobs[k].h.lo == jobs[i].h.lo && jobs[k].h.hi == jobs[i].h.hi)
				dup = true;
		if (c) {
			jobs[i].v = c->v;
			record_verdict(d, &jobs[i], true);
		} else if (!dup) {
			jobs[i].seq = ++d->seq;
			todo[m++] = &jobs[i];
		}
	}
	/* With --confirm 2 and up, slots that would idle run second runs of this batch's
	 * candidates, smallest first: a result that failed twice needs one run less at the end,
	 * and a flaky check shows as a disagreement. */
	struct job *reruns = NULL;
	uint32_t n_re = 0;
	uint32_t slots = d->o->jobs > 1 ? (uint32_t)d->o->jobs : 1;
	if (st == WH_OK && m && m < slots && d->o->check && d->o->confirm_runs >= 2) {
		reruns = calloc(slots - m, sizeof *reruns);
		uint32_t *idx = calloc(m, sizeof *idx);
		for (uint32_t i = 0; reruns && idx && i < m; i++)
			idx[i] = i;
		for (uint32_t a = 0; reruns && idx && a < m; a++)
			for (uint32_t b = a + 1; b < m; b++)
				if (mask_count(d, todo[idx[b]]->mask) < mask_count(d, todo[idx[a]]->mask)) {
					uint32_t t = idx[a];
					idx[a] = idx[b];
					idx[b] = t;
				}
		for (uint32_t i = 0; reruns && idx && i < m && m + n_re < slots; i++) {
			struct job *src = todo[idx[i]];
			struct job *r = &reruns[n_re];
			r->d = d;
			r->mask = src->mask;
			r->h = src->h;
			r->rerun = true;
			if (build_candidate(d, src->mask, &r->cand, &r->h) != WH_OK)
				break;
			r->seq = ++d->seq;
			todo[m + n_re] = r;
			n_re++;
		}
		free(idx);
	}
	if (st == WH_OK)
		st = run_jobs(d, todo, m + n_re);
	if (m)
		d->rep->rounds += (m + slots - 1) / slots;
	for (uint32_t i = 0; i < m + n_re && st == WH_OK; i++) {
		struct job *j = todo[i];
		if (j->has_res && d->o->check)
			d->driver_s += j->secs - j->res.seconds > 0 ? j->secs - j->res.seconds : 0;
		if (j->rerun) {
			record_verdict(d, j, false);
			continue;
		}
		if ((st = broken_check(d, j)) != WH_OK)
			break;
		if ((st = wh_verdict_cache_put(&d->cache, j->h, j->v)) == WH_OK)
			record_verdict(d, j, false);
	}
	for (uint32_t i = 0; i < n && st == WH_OK; i++) {
		struct wh_verdict_entry *c = wh_verdict_cache_find(&d->cache, jobs[i].h);
		verdicts[i] = c ? c->v : WH_VERDICT_SKIP;
	}
	for (uint32_t i = 0; i < n; i++) {
		wh_model_destroy(jobs[i].cand);
		if (jobs[i].has_res)
			wh_check_result_release(&jobs[i].res);
	}
	for (uint32_t i = 0; i < n_re; i++) {
		wh_model_destroy(reruns[i].cand);
		if (reruns[i].has_res)
			wh_check_result_release(&reruns[i].res);
	}
	free(reruns);
	free(jobs);
	free(todo);
	return st;
}

static void on_progress(void *ctx, const char *phase, const uint8_t *mask)
{
	struct driver *d = ctx;
	uint32_t cnt = mask ? mask_count(d, mask) : 0;
	wh_progress_log(&d->pr, "reduce: after %s: %u nodes (%u checks, %u cache hits, %u rounds so far)", phase, cnt, d->rep->checks_run,
	      d->rep->checks_cached, d->rep->rounds);
	json_t *e = json_object();
	json_object_set_new(e, "event", json_string("phase"));
	json_object_set_new(e, "phase", json_string(phase));
	json_object_set_new(e, "nodes", json_integer(cnt));
	json_object_set_new(e, "checks", json_integer(d->rep->checks_run));
	json_object_set_new(e, "cached", json_integer(d->rep->checks_cached));
	json_object_set_new(e, "rounds", json_integer(d->rep->rounds));
	wh_progress_event(&d->pr, e);
}

/* Runs one candidate uncached (confirmation runs). */
static enum wh_status run_uncached(struct driver *d, const uint8_t *mask, enum wh_verdict *v, struct wh_check_result *res_out)
{
	struct job j = {.d = d, .mask = (uint8_t *)mask};
	enum wh_status st = build_candidate(d, mask, &j.cand, &j.h);
	if (st != WH_OK)
		return st;
	j.seq = ++d->seq;
	struct job *p = &j;
	d->rep->rounds++;
	if ((st = run_jobs(d, &p, 1)) == WH_OK && (st = broken_check(d, &j)) == WH_OK) {
		*v = j.v;
		if ((st = wh_verdict_cache_put(&d->cache, j.h, j.v)) == WH_OK)
			record_verdict(d, &j, false);
		if (res_out && j.has_res) {
			*res_out = j.res;
			j.has_res = false;
		}
	}
	wh_model_destroy(j.cand);
	if (j.has_res)
		wh_check_result_release(&j.res);
	return st;
}

/* ---- outputs ---- */

static enum wh_status save_mask_model(struct driver *d, const uint8_t *mask, const char *path, struct wh_model **keep)
{
	struct wh_model *c;
	struct wh_hash h;
	enum wh_status st = build_candidate(d, mask, &c, &h);
	if (st != WH_OK)
		return st;
	st = wh_model_save_with(c, path, d->o->save);
	if (keep && st == WH_OK)
		*keep = c;
	else
		wh_model_destroy(c);
	return st;
}

static enum wh_status write_tensors(struct driver *d, const struct wh_model *c, const char *dir, bool outputs)
{
	struct wh_tensor_set r;
	wh_tensor_set_init(&r);
	enum wh_status st = cand_ref(d, c, 0, false, &r);
	if (st == WH_OK)
		st = wh_reference_write(c, &r, outputs, dir);
	wh_tensor_set_release(&r);
	return st;
}

static enum wh_status write_repro(struct driver *d, const struct wh_model *c, const uint8_t *mask)
{
	char dir[PATH_MAX], p[PATH_MAX + 64], model[PATH_MAX + 64], ins[PATH_MAX + 64], gold[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/repro", d->o->artifacts_dir);
	wh_os_remove_tree(dir); /* a bundle of one run only: nothing stale from an earlier one */
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	snprintf(model, sizeof model, "%s/model.onnx", dir);
	snprintf(ins, sizeof ins, "%s/inputs", dir);
	snprintf(gold, sizeof gold, "%s/golden", dir);
	if ((st = wh_model_save_with(c, model, d->o->save)) != WH_OK || (st = write_tensors(d, c, ins, false)) != WH_OK ||
	    (st = write_tensors(d, c, gold, true)) != WH_OK)
		return st;
	/* the command, rerunnable from inside repro/ */
	char *cmd = NULL;
	if (d->o->check) {
		struct wh_check_vars v = {.model = "model.onnx", .inputs = "inputs", .golden = "golden"};
		if ((st = wh_check_bundle_trt(d->o->check, dir, &v)) != WH_OK)
			return st;
		cmd = wh_check_command_line(d->o->check, &v);
	}
	snprintf(p, sizeof p, "%s/command.sh", dir);
	FILE *f = fopen(p, "w");
	char *self = cmd ? NULL : wh_text_whittle_line();
	if (f) {
		fprintf(f, "#!/bin/sh\n# rerun the check on the reduced model (from this folder)\ncd \"$(dirname \"$0\")\" || exit 2\n");
		if (cmd)
			fprintf(f, "%s\n", cmd);
		else
			fprintf(f, "# the whittle that made this bundle; set WHITTLE to use another\n%s\n"
				   "\"$WHITTLE\" run model.onnx --load-inputs inputs --compare golden --precision %s --atol %.17g --rtol %.17g\n",
				self ? self : "WHITTLE=${WHITTLE:-whittle}",
				wh_precision_name(d->o->engine.precision ? d->o->engine.precision->dflt : WH_PREC_FP32),
				d->o->compare.atol, d->o->compare.rtol);
		fclose(f);
		chmod(p, 0755);
	}
	const struct wh_cpu_features *cpu = wh_cpu();
	snprintf(p, sizeof p, "%s/report.md", dir);
	f = fopen(p, "w");
	if (f) {
		struct wh_reduce_report *r = d->rep;
		fprintf(f, "# whittle reduce: repro\n\n");
		fprintf(f, "- model: %s\n- whittle %s, CPU %s (ISA %s)\n", wh_name_md(d->o->model_path ? d->o->model_path : "?"), WHITTLE_VERSION,
			cpu->brand[0] ? cpu->brand : "unknown", wh_isa_name(cpu->isa));
		fprintf(f, "- check: %s\n", wh_name_md(d->o->check_display ? d->o->check_display : "built-in (compare with FP32)"));
		fprintf(f, "- layers: %u before, %u after (Constant nodes not counted)\n", r->nodes_before, r->nodes_after);
		fprintf(f, "- checks: %u run (%u fail, %u pass, %u skip)\n", r->checks_run, r->n_fail, r->n_pass, r->n_skip);
		fprintf(f, "- cache hits: %u (and %u verdicts implied by monotonicity)\n", r->checks_cached, r->implied);
		fprintf(f, "- rounds: %u (batches run one after the other, up to %d checks each)\n", r->rounds,
			d->o->jobs > 1 ? d->o->jobs : 1);
		fprintf(f, "- time: %.2f s (whittle's own time per candidate: %.2f ms)\n- 1-minimal: %s\n\n", wh_os_now_s() - d->pr.t0,
			d->driver_n ? 1e3 * d->driver_s / d->driver_n : 0.0,
			r->one_minimal ? "yes (removing any single layer makes the check pass)" : "not verified");
		fprintf(f, "## Layers of the reduced model\n\n| # | layer | op |\n| ---: | --- | --- |\n");
		uint32_t k = 0;
		for (uint32_t i = 0; i < d->n; i++)
			if (mask[i]) {
				const struct wh_node *n = &d->m->graph->nodes[d->search_nodes[i]];
				fprintf(f, "| %u | %s | %s |\n", ++k, n->name && *n->name ? wh_name_md_cell(n->name) : "(unnamed)", wh_name_md_cell(n->op_type));
			}
		fprintf(f, "\n## Rerun\n\n`sh command.sh` runs the check on `model.onnx` with `inputs/` (reference values of its\ninputs) and `golden/` (reference values of its outputs).\n");
		fclose(f);
	}
	snprintf(p, sizeof p, "%s/version.txt", dir);
	if ((f = fopen(p, "w"))) {
		fprintf(f, "whittle %s\ncpu %s\nisa %s (detected %s)\n", WHITTLE_VERSION, cpu->brand, wh_isa_name(cpu->isa), wh_isa_name(cpu->detected));
		fclose(f);
	}
	free(self);
	free(cmd);
	return WH_OK;
}

/* ---- the driver ---- */

/* wh_builtin_reference_each's callback: a tensor of the reference run is kept in memory
 * while the budget allows, else written to its .npy now (the engine frees it after its last
 * consumer) and mapped when a candidate needs it. Types .npy cannot hold stay in memory. */
static enum wh_status keep_ref(void *state, uint32_t k, const char *name, const struct wh_tensor *t)
{
	struct driver *d = state;
	uint64_t nb = wh_value_is_tensor(t) ? wh_tensor_nbytes(t) : 0;
	struct wh_tensor marker;
	wh_tensor_init(&marker);
	marker.dtype = WH_DT_BOOL; /* only the name matters */
	if (!wh_value_is_tensor(t) || !wh_npy_holds(t->dtype) || d->ref_mem_bytes + nb <= d->ref_budget) {
		d->ref_mem_bytes += nb;
		return wh_tensor_set_add(&d->ref[k], name, -1, t);
	}
	char path[PATH_MAX];
	enum wh_status st = ref_path(d, k, name, ".npy", path, sizeof path);
	double t0 = wh_os_now_s();
	if (st == WH_OK)
		st = wh_tensor_write_npy(path, t);
	d->tensor_write_s += wh_os_now_s() - t0;
	if (st != WH_OK) {
		d->spill_failed = true;
		return st;
	}
	d->spill_bytes += nb;
	d->n_spilled++;
	return wh_tensor_set_add(&d->spilled[k], name, -1, &marker);
}

static enum wh_status compute_reference(struct driver *d)
{
	uint32_t ns = d->data->n_samples;
	d->ref = calloc(ns ? ns : 1, sizeof *d->ref);
	d->written = calloc(ns ? ns : 1, sizeof *d->written);
	d->spilled = calloc(ns ? ns : 1, sizeof *d->spilled);
	if (!d->ref || !d->written || !d->spilled)
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	for (uint32_t k = 0; k < ns; k++) {
		wh_tensor_set_init(&d->ref[k]);
		wh_tensor_set_init(&d->written[k]);
		wh_tensor_set_init(&d->spilled[k]);
	}
	int64_t budget = d->o->reference_memory;
	d->ref_budget = budget < 0 ? 0 : budget ? (uint64_t)budget : WH_REDUCE_REFERENCE_MEMORY_DEFAULT;
	d->ref_owned = true;
	enum wh_status st = WH_OK;
	if (d->data->reference) {
		for (uint32_t k = 0; k < ns && st == WH_OK; k++) {
			const struct wh_tensor_set *r = &d->data->reference[k];
			for (size_t i = 0; i < r->n && st == WH_OK; i++)
				if (r->items[i].name)
					st = wh_tensor_set_add(&d->ref[k], r->items[i].name, -1, &r->items[i].t);
		}
	} else {
		if ((st = wh_builtin_reference_each(d->m, d->o->engine.threads, d->data->inputs, ns, keep_ref, d)) != WH_OK && !d->spill_failed) {
			/* the runtime's advice is for `run`; here what helps depends on the check */
			char why[1024];
			snprintf(why, sizeof why, "%s", wh_error_message());
			size_t len = strlen(why);
			char *paren = strrchr(why, '(');
			if (len && why[len - 1] == ')' && paren && paren > why && paren[-1] == ' ')
				paren[-1] = '\0';
			if (d->o->check)
				return wh_error(st, "%s (the candidates need reference values whittle cannot compute: give them with --reference DIR)", why);
			return wh_error(st, "%s (the built-in check runs the model with whittle: give an external --check that runs it elsewhere, and reference values with --reference DIR)", why);
		}
	}
	/* the original inputs are reference values too */
	for (uint32_t k = 0; k < ns && st == WH_OK; k++)
		st = wh_builtin_add_inputs(d->m, &d->data->inputs[k], &d->ref[k]);
	if (st == WH_OK && d->n_spilled)
		wh_progress_log(&d->pr, "reduce: reference values: %.1f MiB in memory, %.1f MiB in %u .npy files (past --reference-memory %.0f MiB), mapped when needed",
				d->ref_mem_bytes / 1048576.0, d->spill_bytes / 1048576.0, d->n_spilled, d->ref_budget / 1048576.0);
	return st;
}

/* The prior's nested candidates (reducer/prior.h), at most WH_REDUCE_PRIOR_SETS. With no
 * --prior given, a prior whittle cannot compute is left out with a line in the log. */
#define WH_REDUCE_PRIOR_SETS 2
static enum wh_status make_prior(struct driver *d, uint8_t **sets, uint32_t *n_sets)
{
	const struct wh_reduce_options *o = d->o;
	const struct wh_graph *g = d->m->graph;
	bool given = o->prior != NULL;
	const char *want = o->prior;
	*n_sets = 0;
	if (!given)
		want = o->check && o->engine.precision && o->engine.precision->dflt != WH_PREC_FP32 ? "emulation" : "none";
	if (!strcmp(want, "none"))
		return WH_OK;
	if (o->mode != WH_SEARCH_DDMIN) {
		wh_progress_log(&d->pr, "reduce: prior: not used with --mode %s (only ddmin searches prior-first)",
				o->mode == WH_SEARCH_BISECT ? "bisect" : "linear");
		return WH_OK;
	}
	struct wh_prior p;
	wh_prior_init(&p);
	enum wh_status st = WH_OK;
	if (!strcmp(want, "emulation")) {
		if (d->data->reference)
			st = wh_error(WH_ERR_USAGE, "--prior emulation: whittle runs no model with --reference (give --prior FILE, or --prior none)");
		else
			st = wh_prior_emulation(d->m, &o->engine, &d->data->inputs[0], &p);
	} else if (!strcmp(want, "rules")) {
		uint32_t flagged;
		if (d->data->reference)
			st = wh_error(WH_ERR_USAGE, "--prior rules: whittle runs no model with --reference (give --prior FILE, or --prior none)");
		else
			st = wh_prior_rules(d->m, o->engine.threads, &d->data->inputs[0], &p, &flagged);
	} else {
		uint32_t unknown = 0;
		if ((st = wh_prior_load(d->m, want, &p, &unknown)) == WH_OK && unknown)
			wh_progress_log(&d->pr, "reduce: prior: %u layer%s of %s not in the model (skipped)", unknown, unknown == 1 ? "" : "s",
					wh_name_term(want));
	}
	if (st != WH_OK && !given) {
		wh_progress_log(&d->pr, "reduce: prior: none (the emulation did not run: %s)", wh_error_message());
		wh_error_clear();
		st = WH_OK;
		goto out;
	}
	uint32_t top = UINT32_MAX;
	if (st == WH_OK)
		st = wh_prior_sets(d->m, &p, d->search_nodes, d->n, true, WH_REDUCE_PRIOR_SETS, sets, n_sets, &top);
	if (st != WH_OK)
		goto out;
	snprintf(d->rep->prior, sizeof d->rep->prior, "%s", p.source);
	if (!*n_sets) {
		wh_progress_log(&d->pr, "reduce: prior: %s ranks no layer (the unbiased search runs)", p.source);
		goto out;
	}
	char sizes[64] = "";
	for (uint32_t i = 0; i < *n_sets; i++) {
		uint32_t c = mask_count(d, sets[i]);
		wh_text_cat(sizes, sizeof sizes, "%s%u", i ? " and " : "", c);
	}
	wh_progress_log(&d->pr, "reduce: prior: %s; best-ranked layer %s; checking %u candidate%s of %s layers first", p.source,
			wh_name_term(g->nodes[d->search_nodes[top]].name), *n_sets, *n_sets == 1 ? "" : "s", sizes);
out:
	wh_prior_release(&p);
	return st;
}

/* ceil(log2 C(n, k)) + k + 2: the unbiased search's bound at -j 1, the original's check
 * counted (the proof of the answer is the search's own check of K alone; docs/benchmarks.md) */
static uint32_t unbiased_bound(uint32_t n, uint32_t k)
{
	double lc = lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
	return (uint32_t)ceil(lc / log(2.0) - 1e-9) + k + 2;
}

/* The original model gave no verdict: the check's fault, or the cluster's queue. */
static enum wh_status cannot_tell_original(struct driver *d)
{
	if (atomic_load(&d->queue_timed_out))
		return wh_error(WH_ERR_CHECK, "check: cannot tell whether the original model fails: the Slurm queue timed out on every try (jobs pending past --queue-timeout, each of --retries; raise --queue-timeout, or ask for free nodes with --slurm-args)");
	return wh_error(WH_ERR_CHECK, "check: cannot tell whether the original model fails (exit 125 or timeout; fix the check or raise --timeout)");
}

enum wh_status wh_reduce_run(const struct wh_model *m, const struct wh_reduce_data *data,
			     const struct wh_reduce_options *o, struct wh_reduce_report *rep)
{
	struct driver dd = {.m = m, .o = o, .data = data, .rep = rep};
	struct driver *d = &dd;
	memset(rep, 0, sizeof *rep);
	wh_progress_init(&d->pr, o->log, o->json);
	enum wh_status st = WH_OK;
	const struct wh_graph *g = m->graph;
	uint32_t *order = calloc((size_t)g->n_nodes + 1, sizeof *order);
	uint8_t *full = NULL, *result = NULL, *fixed = NULL;
	struct wh_model *reduced = NULL;
	int artifacts_lock = -1;
	uint8_t *prior_sets[WH_REDUCE_PRIOR_SETS] = {0};
	uint32_t n_prior_sets = 0;
	if (!order) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	d->search_nodes = calloc((size_t)g->n_nodes + 1, sizeof *d->search_nodes);
	if (!d->search_nodes) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (!wh_node_is_constant(&g->nodes[order[i]]))
			d->search_nodes[d->n++] = order[i];
	rep->nodes_before = d->n;
	if (!d->n) {
		st = wh_error(WH_ERR_INVALID, "model: has no layers to reduce (it holds only constants)");
		goto out;
	}
	full = malloc(d->n);
	result = malloc(d->n);
	fixed = calloc(d->n, 1);
	d->best_mask = malloc(d->n);
	if (!full || !result || !fixed || !d->best_mask) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	memset(full, 1, d->n);
	memcpy(d->best_mask, full, d->n);
	d->best_count = d->n;
	/* --no-reduce-inputs / --no-reduce-outputs keep the layers touching the graph's inputs
	 * or outputs in every candidate */
	for (uint32_t i = 0; i < d->n; i++) {
		const struct wh_node *n = &g->nodes[d->search_nodes[i]];
		if (!o->reduce_inputs)
			for (uint32_t k = 0; k < n->n_inputs; k++)
				if (n->inputs[k] != WH_NONE && (g->values[n->inputs[k]].flags & WH_VALUE_INPUT) &&
				    !(g->values[n->inputs[k]].flags & WH_VALUE_INITIALIZER))
					fixed[i] = 1;
		if (!o->reduce_outputs)
			for (uint32_t k = 0; k < n->n_outputs; k++)
				if (n->outputs[k] != WH_NONE && (g->values[n->outputs[k]].flags & WH_VALUE_OUTPUT))
					fixed[i] = 1;
	}
	/* work folder */
	if (o->artifacts_dir) {
		if ((st = wh_artifacts_claim(o->artifacts_dir, o->force, o->load_replay, &artifacts_lock)) != WH_OK)
			goto out;
		snprintf(d->workdir, sizeof d->workdir, "%s/work", o->artifacts_dir);
		if ((st = wh_os_make_dir(d->workdir)) != WH_OK)
			goto out;
		if (o->n_artifacts) {
			char p[PATH_MAX + 8];
			snprintf(p, sizeof p, "%s/good", o->artifacts_dir);
			wh_os_make_dir(p);
			snprintf(p, sizeof p, "%s/bad", o->artifacts_dir);
			wh_os_make_dir(p);
		}
	} else {
		const char *tmp = getenv("TMPDIR");
		snprintf(d->workdir, sizeof d->workdir, "%s/whittle-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if ((st = wh_os_make_temp_dir(d->workdir)) != WH_OK) {
			d->workdir[0] = '\0';
			goto out;
		}
	}
	wh_interrupt_track_dir(d->workdir);
	/* every output can be written (the artifacts folder exists now), before the search: not
	 * after an hour of checks */
	if ((o->output_path && (st = wh_output_check(o->output_path, "the reduced model")) != WH_OK) ||
	    (o->min_good_path && (st = wh_output_check(o->min_good_path, "the --min-good model")) != WH_OK) ||
	    (o->save_replay && (st = wh_output_check(o->save_replay, "the replay")) != WH_OK))
		goto out;
	{
		char p[PATH_MAX + 96];
		snprintf(p, sizeof p, "%s/tensors", d->workdir);
		if ((st = wh_os_make_dir(p)) != WH_OK)
			goto out;
		for (uint32_t k = 0; k < data->n_samples; k++) {
			if (snprintf(p, sizeof p, "%s/tensors/s%u", d->workdir, k) >= (int)sizeof p) {
				st = wh_error(WH_ERR_IO, "%s: work folder path too long (set TMPDIR to a shorter path)", d->workdir);
				goto out;
			}
			if ((st = wh_os_make_dir(p)) != WH_OK || (st = wh_tensor_dir_fits(p, "the reference values")) != WH_OK)
				goto out;
		}
		/* so do a check's staged folders (c<seq>/golden-<k>, seq of up to 10 digits) */
		if (o->check) {
			snprintf(p, sizeof p, "%s/c0000000000/golden-%u", d->workdir, data->n_samples);
			if ((st = wh_tensor_dir_fits(p, "the files of a check")) != WH_OK)
				goto out;
		}
		/* the repro bundle's tensor files, named after any tensor, fit too */
		if (o->artifacts_dir) {
			snprintf(p, sizeof p, "%s/repro/golden", o->artifacts_dir);
			if ((st = wh_tensor_dir_fits(p, "the repro bundle")) != WH_OK)
				goto out;
		}
	}
	if ((st = compute_reference(d)) != WH_OK)
		goto out;
	struct wh_hash mh;
	char mhex[33];
	if ((st = wh_model_hash(m, &mh)) != WH_OK)
		goto out;
	wh_hash_hex(mh, mhex);
	if (o->load_replay && (st = load_replay(d, o->load_replay, mhex)) != WH_OK)
		goto out;
	const char *save_replay = o->save_replay;
	char replay_default[PATH_MAX + 32];
	if (!save_replay && o->artifacts_dir) {
		snprintf(replay_default, sizeof replay_default, "%s/replay.jsonl", o->artifacts_dir);
		save_replay = replay_default;
	}
	if (save_replay) {
		/* the folder's own replay belongs to this run unless it resumes from it: one header */
		bool resumes = o->load_replay && !strcmp(o->load_replay, save_replay);
		bool fresh = access(save_replay, F_OK) != 0 || (save_replay == replay_default && !resumes);
		if (!(d->replay = fopen(save_replay, fresh ? "w" : "a"))) {
			st = wh_error(WH_ERR_IO, "%s: cannot write the replay: %s (check the folder)", save_replay, strerror(errno));
			goto out;
		}
		wh_interrupt_set_replay(save_replay);
		if (fresh || !o->load_replay || strcmp(o->load_replay, save_replay)) {
			fprintf(d->replay, "{\"original\":\"%s\",\"whittle\":\"%s\",\"nodes\":%u}\n", mhex, WHITTLE_VERSION, d->n);
			fflush(d->replay);
		}
	}
	wh_progress_log(&d->pr, "reduce: %u layers (%u constants aside), check: %s", d->n, g->n_nodes - d->n,
	      o->check_display ? wh_name_term(o->check_display) : "built-in comparison with FP32");
	rep->prior_hit = -1;
	if ((st = make_prior(d, prior_sets, &n_prior_sets)) != WH_OK)
		goto out;

	/* 1. the original must fail, consistently (with -j > 1 and one confirmation run, the
	 * search checks it in its first batch, saving a round) */
	struct wh_hash full_hash;
	{
		struct wh_model *c;
		if ((st = build_candidate(d, full, &c, &full_hash)) != WH_OK)
			goto out;
		wh_model_destroy(c);
	}
	bool confirm_in_search = o->jobs > 1 && o->confirm_runs <= 1 && !wh_verdict_cache_find(&d->cache, full_hash);
	if (!confirm_in_search) {
		int runs = o->confirm_runs > 0 ? o->confirm_runs : 1;
		enum wh_verdict first = WH_VERDICT_SKIP, v = WH_VERDICT_SKIP;
		int fails = 0;
		struct wh_verdict_entry *ce = wh_verdict_cache_find(&d->cache, full_hash);
		for (int r = 0; r < runs; r++) {
			struct wh_check_result res = {0};
			if (r == 0 && ce) {
				v = ce->v;
				rep->checks_cached++;
			} else if ((st = run_uncached(d, full, &v, &res)) != WH_OK) {
				goto out;
			}
			wh_check_result_release(&res);
			if (r == 0)
				first = v;
			fails += v == WH_VERDICT_FAIL;
		}
		if (fails && fails != runs) {
			rep->inconsistent = true;
			st = wh_error(WH_ERR_CHECK, "check: inconsistent on the original model: failed %d of %d runs (the check is flaky; make it deterministic before reducing)", fails, runs);
			goto out;
		}
		if (first == WH_VERDICT_PASS) {
			st = wh_error(WH_ERR_INVALID, "%s: the original model passes the check, so there is nothing to reduce (make sure the check fails on the original first)",
				      o->model_path ? o->model_path : "model");
			goto out;
		}
		if (first == WH_VERDICT_SKIP) {
			st = cannot_tell_original(d);
			goto out;
		}
	}

	/* 2-4. search */
	struct wh_search_options so = {
		.mode = o->mode,
		.jobs = o->jobs,
		.reduce_inputs = o->reduce_inputs,
		.reduce_outputs = o->reduce_outputs,
		.fixed = fixed,
		.confirm_full = confirm_in_search,
		.prior_sets = (const uint8_t *const *)prior_sets,
		.n_prior_sets = n_prior_sets,
		.rerun_slot = o->confirm_runs >= 2,
	};
	struct wh_search_ops ops = {.ctx = d, .eval = eval_masks, .progress = on_progress};
	struct wh_search_report sr;
	if ((st = wh_search_run(d->n, &so, &ops, result, &sr)) != WH_OK) {
		if (confirm_in_search && st == WH_ERR_INVALID)
			st = wh_error(WH_ERR_INVALID, "%s: the original model passes the check, so there is nothing to reduce (make sure the check fails on the original first)",
				      o->model_path ? o->model_path : "model");
		else if (confirm_in_search && st == WH_ERR_CHECK && !*wh_error_message())
			st = cannot_tell_original(d);
		goto out;
	}
	rep->one_minimal = sr.one_minimal;
	rep->prior_hit = sr.prior_hit;
	rep->prior_checks = sr.prior_checks;
	rep->implied = sr.implied + sr.minimal_implied;
	rep->minimal_implied = sr.minimal_implied;
	if (sr.note[0])
		wh_progress_log(&d->pr, "reduce: note: %s", wh_name_term(sr.note));
	if (rep->implied)
		wh_progress_log(&d->pr, "reduce: %u verdicts implied by monotonicity, not checked (%u of them the result's single removals: each is "
			 "contained in a candidate that passed); the check was monotone over all %u verdicts seen",
		      rep->implied, sr.minimal_implied, sr.probes);
	/* --confirm N >= 2: the result, like the original, must fail N times (its verdict in the
	 * search counts once, and so does a second run in an idle slot); a flaky check shows
	 * here. With N = 1 nothing is run twice: the search's own check of the result (K alone)
	 * is its proof, and a second run would only cost a check (minutes where a check builds
	 * an engine). */
	if (!rep->inconsistent && o->confirm_runs >= 2) {
		struct wh_model *c;
		struct wh_hash h;
		if ((st = build_candidate(d, result, &c, &h)) != WH_OK)
			goto out;
		wh_model_destroy(c);
		struct wh_verdict_entry *rce = wh_verdict_cache_find(&d->cache, h);
		int done = rce && rce->runs > 1 ? rce->runs : 1;
		for (int r = done; r < o->confirm_runs && !rep->inconsistent; r++) {
			enum wh_verdict v;
			if ((st = run_uncached(d, result, &v, NULL)) != WH_OK)
				goto out;
			if (v != WH_VERDICT_FAIL && !rep->inconsistent) {
				rep->inconsistent = true;
				snprintf(rep->note, sizeof rep->note, "the reduced model (%u layers) failed before and %s when run again",
					 mask_count(d, result), v == WH_VERDICT_PASS ? "passed" : "could not be told");
			}
		}
	} else if (!rep->inconsistent && !sr.monotone) {
		wh_progress_log(&d->pr, "reduce: note: a flaky check looks the same as one that is not monotone: --confirm 2 runs the original and "
				"the result twice, and `whittle repeat` counts how often a check fails");
	}
	rep->nodes_after = mask_count(d, result);
	if (rep->inconsistent) {
		/* keep what was found, but do not present it as the answer */
		if (o->artifacts_dir) {
			char p[PATH_MAX + 32];
			snprintf(p, sizeof p, "%s/unverified.onnx", o->artifacts_dir);
			save_mask_model(d, d->best_mask, p, NULL);
		}
		st = wh_error(WH_ERR_CHECK, "check: inconsistent verdicts: %s (the check is flaky; no minimal model is claimed%s)",
			      rep->note, o->artifacts_dir ? "; the best failing candidate is in unverified.onnx" : "");
		goto out;
	}
	if (n_prior_sets) {
		uint32_t bound = unbiased_bound(d->n, rep->nodes_after);
		rep->prior_saved = (int32_t)bound - (int32_t)rep->checks_run;
		if (rep->prior_hit >= 0)
			wh_progress_log(&d->pr, "reduce: prior: its candidate of %u layers failed and the search stayed inside it: %u checks against %u "
					"for the unbiased search (ceil(log2 C(%u,%u)) + %u + 2), %d %s",
					sr.prior_size, rep->checks_run, bound, d->n, rep->nodes_after, rep->nodes_after, abs(rep->prior_saved),
					rep->prior_saved >= 0 ? "saved" : "more");
		else
			wh_progress_log(&d->pr, "reduce: prior: none of its %u candidates failed (%u check%s spent on them); the unbiased search ran: %u checks, "
					"its bound %u", n_prior_sets, rep->prior_checks, rep->prior_checks == 1 ? "" : "s", rep->checks_run, bound);
	}
	/* the answer stands for the weights loaded: refuse it if a weights file changed meanwhile */
	if ((st = wh_model_weights_unchanged(d->m)) != WH_OK)
		goto out;
	if ((st = save_mask_model(d, result, o->output_path, &reduced)) != WH_OK) {
		/* the search is done: say what it found and where its verdicts are, so that a
		 * rerun with --load-replay costs nothing */
		char why[600], found[400] = "";
		wh_text_printf(why, sizeof why, "%s", wh_error_message());
		for (uint32_t i = 0, k = 0; i < d->n; i++)
			if (result[i] && k++ < 8)
				wh_text_cat(found, sizeof found, "%s%s", k > 1 ? ", " : "", g->nodes[d->search_nodes[i]].name);
		char *paren = strrchr(why, '(');
		if (paren && paren > why && paren[-1] == ' ')
			paren[-1] = '\0';
		if (save_replay)
			st = wh_error(st, "%s; the reduced model has %u layers: %s%s (fix the path and rerun with --load-replay %s: no check runs again)",
				      why, mask_count(d, result), found, mask_count(d, result) > 8 ? ", ..." : "", save_replay);
		else
			st = wh_error(st, "%s; the reduced model has %u layers: %s%s (fix the path and rerun; --save-replay keeps the verdicts)",
				      why, mask_count(d, result), found, mask_count(d, result) > 8 ? ", ..." : "");
		goto out;
	}
	if (o->min_good_path) {
		/* a passing model one layer away from the reduced one (from the minimality pass) */
		bool saved = false;
		uint8_t *tmp = malloc(d->n);
		for (uint32_t i = 0; tmp && i < d->n && !saved; i++) {
			if (!result[i] || fixed[i])
				continue;
			memcpy(tmp, result, d->n);
			tmp[i] = 0;
			if (mask_count(d, tmp) == 0)
				continue;
			struct wh_model *c;
			struct wh_hash h;
			if (build_candidate(d, tmp, &c, &h) != WH_OK)
				continue;
			struct wh_verdict_entry *ce = wh_verdict_cache_find(&d->cache, h);
			if (ce && ce->v == WH_VERDICT_PASS && wh_model_save_with(c, o->min_good_path, o->save) == WH_OK)
				saved = true;
			wh_model_destroy(c);
		}
		free(tmp);
		if (!saved)
			wh_progress_log(&d->pr, "reduce: no --min-good model: the reduced model has a single layer (nothing smaller can be run)");
	}
	rep->seconds = wh_os_now_s() - d->pr.t0;
	if (o->artifacts_dir) {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof p, "%s/reduced.onnx", o->artifacts_dir);
		if ((st = wh_model_save_with(reduced, p, o->save)) != WH_OK)
			goto out;
		snprintf(p, sizeof p, "%s/inputs", o->artifacts_dir);
		wh_os_remove_tree(p);
		if ((st = write_tensors(d, reduced, p, false)) != WH_OK)
			goto out;
		snprintf(p, sizeof p, "%s/golden", o->artifacts_dir);
		wh_os_remove_tree(p);
		if ((st = write_tensors(d, reduced, p, true)) != WH_OK)
			goto out;
		if (o->min_good_path && access(o->min_good_path, F_OK) == 0) {
			snprintf(p, sizeof p, "%s/min-good.onnx", o->artifacts_dir);
			wh_os_copy_file(o->min_good_path, p);
		}
		if ((st = write_repro(d, reduced, result)) != WH_OK)
			goto out;
	}
	{
		json_t *e = json_object();
		json_object_set_new(e, "event", json_string("result"));
		json_object_set_new(e, "nodes_before", json_integer(rep->nodes_before));
		json_object_set_new(e, "nodes_after", json_integer(rep->nodes_after));
		json_object_set_new(e, "checks", json_integer(rep->checks_run));
		json_object_set_new(e, "cached", json_integer(rep->checks_cached));
		json_object_set_new(e, "rounds", json_integer(rep->rounds));
		json_object_set_new(e, "implied", json_integer(rep->implied));
		json_object_set_new(e, "one_minimal", json_boolean(rep->one_minimal));
		if (n_prior_sets) {
			json_object_set_new(e, "prior", json_string(rep->prior));
			json_object_set_new(e, "prior_hit", json_boolean(rep->prior_hit >= 0));
			json_object_set_new(e, "prior_checks", json_integer(rep->prior_checks));
			json_object_set_new(e, "prior_saved", json_integer(rep->prior_saved));
		}
		json_object_set_new(e, "driver_ms_per_candidate", json_real(d->driver_n ? 1e3 * d->driver_s / d->driver_n : 0));
		json_t *names = json_array();
		for (uint32_t i = 0; i < d->n; i++)
			if (result[i])
				json_array_append_new(names, json_string(g->nodes[d->search_nodes[i]].name));
		json_object_set_new(e, "layers", names);
		wh_progress_event(&d->pr, e);
	}
out:
	rep->seconds = wh_os_now_s() - d->pr.t0;
	rep->driver_ms_per_candidate = d->driver_n ? 1e3 * d->driver_s / d->driver_n : 0;
	rep->tensor_write_s = d->tensor_write_s;
	rep->ref_memory_bytes = d->ref_mem_bytes;
	rep->ref_disk_bytes = d->spill_bytes;
	wh_progress_clear(&d->pr);
	if (d->replay)
		fclose(d->replay);
	if (d->workdir[0]) {
		wh_interrupt_untrack_dir(d->workdir);
		wh_os_remove_tree(d->workdir); /* the temporary folder, or artifacts_dir/work */
	}
	wh_artifacts_unlock(artifacts_lock);
	if (d->ref_owned) {
		for (uint32_t k = 0; k < data->n_samples; k++) {
			wh_tensor_set_release(&d->ref[k]);
			wh_tensor_set_release(&d->written[k]);
			if (d->spilled)
				wh_tensor_set_release(&d->spilled[k]);
		}
	}
	free(d->ref);
	free(d->written);
	free(d->spilled);
	wh_verdict_cache_release(&d->cache);
	free(d->search_nodes);
	free(d->best_mask);
	free(order);
	free(full);
	free(result);
	free(fixed);
	wh_model_destroy(reduced);
	for (uint32_t i = 0; i < n_prior_sets; i++)
		free(prior_sets[i]);
	return st;
}
