#include "reducer/tactic-diff.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "executor/precision.h"
#include "graph/dtype.h"
#include "graph/hash.h"
#include "graph/os.h"

const char *wh_suspect_state_name(enum wh_suspect_state s)
{
	switch (s) {
	case WH_SUSPECT_CLEARED: return "cleared";
	case WH_SUSPECT_CONFIRMED: return "confirmed";
	case WH_SUSPECT_SUFFICIENT: return "sufficient";
	case WH_SUSPECT_UNCLEAR: return "unclear";
	default: return "untested";
	}
}

/* ---- the diff ---- */

void wh_tactic_diff_init(struct wh_tactic_diff *d)
{
	memset(d, 0, sizeof *d);
}

void wh_tactic_diff_release(struct wh_tactic_diff *d)
{
	if (!d)
		return;
	for (uint32_t i = 0; i < d->n; i++) {
		free(d->s[i].layer);
		free(d->s[i].tactic);
	}
	free(d->s);
	wh_tactic_diff_init(d);
}

struct choice_ref {
	const char *layer, *tactic;
	bool bad;
};

static int cmp_choice(const void *a, const void *b)
{
	const struct choice_ref *x = a, *y = b;
	int c = strcmp(x->layer, y->layer);
	return c ? c : strcmp(x->tactic, y->tactic);
}

static int cmp_suspect(const void *a, const void *b)
{
	const struct wh_tactic_suspect *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	int c = strcmp(x->layer, y->layer);
	return c ? c : strcmp(x->tactic, y->tactic);
}

static bool takes_part(const enum wh_verdict *verdicts, const bool *skip_bad, uint32_t i)
{
	if (verdicts[i] == WH_VERDICT_PASS)
		return true;
	return verdicts[i] == WH_VERDICT_FAIL && !(skip_bad && skip_bad[i]);
}

static enum wh_status diff_push(struct wh_tactic_diff *d, const char *layer, const char *tactic, uint32_t n_bad)
{
	if (d->n == d->cap) {
		uint32_t cap = d->cap ? d->cap * 2 : 16;
		struct wh_tactic_suspect *ns = cap > d->cap ? realloc(d->s, (size_t)cap * sizeof *ns) : NULL;
		if (!ns)
			return wh_error(WH_ERR_NOMEM, "diff-tactics: out of memory");
		d->s = ns;
		d->cap = cap;
	}
	struct wh_tactic_suspect *s = &d->s[d->n];
	memset(s, 0, sizeof *s);
	s->layer = strdup(layer);
	s->tactic = strdup(tactic);
	if (!s->layer || !s->tactic) {
		free(s->layer);
		free(s->tactic);
		return wh_error(WH_ERR_NOMEM, "diff-tactics: out of memory");
	}
	s->n_bad = n_bad;
	s->score = d->n_bad ? (double)n_bad / d->n_bad : 0;
	s->good_build = s->bad_build = -1;
	d->n++;
	return WH_OK;
}

enum wh_status wh_tactic_diff_compute(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts,
				      uint32_t n, const bool *skip_bad, struct wh_tactic_diff *out)
{
	wh_tactic_diff_init(out);
	uint64_t total = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!takes_part(verdicts, skip_bad, i))
			continue;
		if (verdicts[i] == WH_VERDICT_PASS)
			out->n_good++;
		else
			out->n_bad++;
		if (!wh_add_u64(total, plans[i]->n, &total))
			return wh_error(WH_ERR_OVERFLOW, "diff-tactics: too many tactic choices");
	}
	uint64_t bytes;
	if (!wh_mul_u64(total ? total : 1, sizeof(struct choice_ref), &bytes) || bytes > SIZE_MAX)
		return wh_error(WH_ERR_OVERFLOW, "diff-tactics: too many tactic choices");
	struct choice_ref *all = malloc((size_t)bytes);
	if (!all)
		return wh_error(WH_ERR_NOMEM, "diff-tactics: out of memory for %llu tactic choices", (unsigned long long)total);
	size_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!takes_part(verdicts, skip_bad, i))
			continue;
		for (uint32_t c = 0; c < plans[i]->n; c++) {
			all[k].layer = plans[i]->c[c].layer;
			all[k].tactic = plans[i]->c[c].tactic;
			all[k].bad = verdicts[i] == WH_VERDICT_FAIL;
			k++;
		}
	}
	qsort(all, k, sizeof *all, cmp_choice);
	enum wh_status st = WH_OK;
	for (size_t a = 0; a < k && st == WH_OK;) {
		size_t b = a;
		uint32_t nb = 0, ng = 0;
		while (b < k && !cmp_choice(&all[a], &all[b])) {
			nb += all[b].bad;
			ng += !all[b].bad;
			b++;
		}
		if (nb && !ng)
			st = diff_push(out, all[a].layer, all[a].tactic, nb);
		a = b;
	}
	free(all);
	if (st != WH_OK) {
		wh_tactic_diff_release(out);
		return st;
	}
	if (out->n > 1)
		qsort(out->s, out->n, sizeof *out->s, cmp_suspect);
	return WH_OK;
}

void wh_tactic_diff_inherit(struct wh_tactic_diff *d, const struct wh_tactic_diff *old)
{
	for (uint32_t i = 0; old && i < d->n; i++) {
		const struct wh_tactic_suspect *o = wh_tactic_diff_find(old, d->s[i].layer, d->s[i].tactic);
		if (!o || o->state == WH_SUSPECT_UNTESTED)
			continue;
		/* the swaps stay valid: the builds they used are still there */
		d->s[i].state = o->state;
		d->s[i].good_build = o->good_build;
		d->s[i].bad_build = o->bad_build;
		d->s[i].forward = o->forward;
		d->s[i].reverse = o->reverse;
		d->s[i].forward_run = o->forward_run;
		d->s[i].reverse_run = o->reverse_run;
		d->s[i].forward_seq = o->forward_seq;
		d->s[i].reverse_seq = o->reverse_seq;
	}
}

struct wh_tactic_suspect *wh_tactic_diff_find(const struct wh_tactic_diff *d, const char *layer, const char *tactic)
{
	for (uint32_t i = 0; i < d->n; i++)
		if (!strcmp(d->s[i].layer, layer) && !strcmp(d->s[i].tactic, tactic))
			return &d->s[i];
	return NULL;
}

/* ---- confirmation ---- */

static bool uses(const struct wh_tactic_plan *p, const char *layer, const char *tactic)
{
	const struct wh_tactic_choice *c = wh_tactic_plan_find(p, layer);
	return c && !strcmp(c->tactic, tactic);
}

/* Layers where a and b choose differently (a layer only one of them has counts too). */
static uint32_t plan_distance(const struct wh_tactic_plan *a, const struct wh_tactic_plan *b)
{
	uint32_t d = 0;
	/* builds of one model list their layers in the same order: no lookups then */
	bool aligned = a->n == b->n;
	for (uint32_t i = 0; aligned && i < a->n; i++)
		aligned = !strcmp(a->c[i].layer, b->c[i].layer);
	if (aligned) {
		for (uint32_t i = 0; i < a->n; i++)
			d += strcmp(a->c[i].tactic, b->c[i].tactic) != 0;
		return d;
	}
	for (uint32_t i = 0; i < a->n; i++) {
		const struct wh_tactic_choice *c = wh_tactic_plan_find(b, a->c[i].layer);
		d += !c || strcmp(c->tactic, a->c[i].tactic);
	}
	for (uint32_t i = 0; i < b->n; i++)
		d += !wh_tactic_plan_find(a, b->c[i].layer);
	return d;
}

/* The bad build to take the suspect from: the one with the fewest other suspects of cur
 * (so that, without this one, it has the best chance to pass), then the fewest tactics
 * in all, then the lowest index. */
static int32_t pick_donor(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts, uint32_t n,
			  const bool *explained, const struct wh_tactic_diff *cur, const struct wh_tactic_suspect *s)
{
	int32_t best = -1;
	uint32_t best_other = UINT32_MAX, best_size = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		if (verdicts[i] != WH_VERDICT_FAIL || explained[i] || !uses(plans[i], s->layer, s->tactic))
			continue;
		uint32_t other = 0;
		for (uint32_t k = 0; k < cur->n; k++)
			other += uses(plans[i], cur->s[k].layer, cur->s[k].tactic);
		if (other < best_other || (other == best_other && plans[i]->n < best_size)) {
			best = (int32_t)i;
			best_other = other;
			best_size = plans[i]->n;
		}
	}
	return best;
}

/* The good build to swap the suspect into: one that has the layer, closest to the donor. */
static int32_t pick_base(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts, uint32_t n,
			 uint32_t donor, const char *layer)
{
	int32_t best = -1;
	uint32_t best_d = UINT32_MAX;
	for (uint32_t i = 0; i < n; i++) {
		if (verdicts[i] != WH_VERDICT_PASS || !wh_tactic_plan_find(plans[i], layer))
			continue;
		uint32_t d = plan_distance(plans[i], plans[donor]);
		if (d < best_d) {
			best = (int32_t)i;
			best_d = d;
		}
	}
	return best;
}

/* Tests one suspect (two swaps at most). */
static enum wh_status test_suspect(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts, uint32_t n,
				   const bool *explained, const struct wh_tactic_diff *cur, const struct wh_confirm_ops *ops,
				   uint32_t first_seq, struct wh_tactic_suspect *s, struct wh_confirm_report *rep)
{
	int32_t donor = pick_donor(plans, verdicts, n, explained, cur, s);
	int32_t base = donor >= 0 ? pick_base(plans, verdicts, n, (uint32_t)donor, s->layer) : -1;
	if (donor < 0 || base < 0) {
		/* no good build has the layer: a swap cannot express the suspect alone */
		s->state = WH_SUSPECT_UNCLEAR;
		return WH_OK;
	}
	s->good_build = base;
	s->bad_build = donor;
	struct wh_tactic_swap sw = {.base = (uint32_t)base, .donor = (uint32_t)donor, .layer = s->layer, .tactic = s->tactic,
				    .forward = true, .seq = first_seq + rep->checks};
	enum wh_status st = ops->check_swap(ops->ctx, &sw, &s->forward);
	if (st != WH_OK)
		return st;
	rep->checks++;
	s->forward_run = true;
	s->forward_seq = sw.seq;
	if (s->forward != WH_VERDICT_FAIL) {
		s->state = s->forward == WH_VERDICT_PASS ? WH_SUSPECT_CLEARED : WH_SUSPECT_UNCLEAR;
		return WH_OK;
	}
	const struct wh_tactic_choice *good = wh_tactic_plan_find(plans[base], s->layer);
	sw = (struct wh_tactic_swap){.base = (uint32_t)donor, .donor = (uint32_t)base, .layer = s->layer,
				     .tactic = good->tactic, .forward = false, .seq = first_seq + rep->checks};
	if ((st = ops->check_swap(ops->ctx, &sw, &s->reverse)) != WH_OK)
		return st;
	rep->checks++;
	s->reverse_run = true;
	s->reverse_seq = sw.seq;
	if (s->reverse == WH_VERDICT_PASS)
		s->state = WH_SUSPECT_CONFIRMED;
	else if (s->reverse == WH_VERDICT_FAIL)
		s->state = WH_SUSPECT_SUFFICIENT;
	else
		s->state = WH_SUSPECT_UNCLEAR;
	return WH_OK;
}

enum wh_status wh_tactic_confirm(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts, uint32_t n,
				 const struct wh_confirm_options *o, const struct wh_confirm_ops *ops,
				 struct wh_tactic_diff *diff, struct wh_confirm_report *rep)
{
	memset(rep, 0, sizeof *rep);
	bool *explained = calloc(n ? n : 1, sizeof *explained);
	if (!explained)
		return wh_error(WH_ERR_NOMEM, "confirm: out of memory");
	enum wh_status st = WH_OK;
	uint32_t max = o && o->max_suspects ? o->max_suspects : UINT32_MAX;
	uint32_t first_seq = o && o->first_seq ? o->first_seq : 1;
	bool more = true;
	while (more && st == WH_OK) {
		more = false;
		/* rank again among the bad builds not explained yet: a second culprit that hid
		 * behind the first one's bad builds comes up now */
		struct wh_tactic_diff cur;
		if ((st = wh_tactic_diff_compute(plans, verdicts, n, explained, &cur)) != WH_OK)
			break;
		for (uint32_t i = 0; cur.n_good && i < cur.n && st == WH_OK; i++) {
			struct wh_tactic_suspect *s = wh_tactic_diff_find(diff, cur.s[i].layer, cur.s[i].tactic);
			if (!s || s->state != WH_SUSPECT_UNTESTED)
				continue;
			if (rep->tested >= max)
				break;
			rep->tested++;
			if ((st = test_suspect(plans, verdicts, n, explained, &cur, ops, first_seq, s, rep)) != WH_OK)
				break;
			if (ops->on_suspect)
				ops->on_suspect(ops->ctx, s);
			if (s->state == WH_SUSPECT_CONFIRMED) {
				for (uint32_t b = 0; b < n; b++)
					if (verdicts[b] == WH_VERDICT_FAIL && uses(plans[b], s->layer, s->tactic))
						explained[b] = true;
				more = true;
				break;
			}
		}
		wh_tactic_diff_release(&cur);
	}
	for (uint32_t i = 0; i < diff->n; i++) {
		rep->confirmed += diff->s[i].state == WH_SUSPECT_CONFIRMED;
		rep->sufficient += diff->s[i].state == WH_SUSPECT_SUFFICIENT;
	}
	for (uint32_t b = 0; b < n; b++)
		rep->bad_unexplained += verdicts[b] == WH_VERDICT_FAIL && !explained[b];
	free(explained);
	return st;
}

enum wh_status wh_tactic_best_good(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts,
				   uint32_t n, uint32_t *index_out)
{
	int64_t best = -1;
	double best_ms = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (verdicts[i] != WH_VERDICT_PASS)
			continue;
		double ms = 0;
		for (uint32_t c = 0; c < plans[i]->n; c++)
			if (plans[i]->c[c].ms > 0)
				ms += plans[i]->c[c].ms;
		if (best < 0 || ms < best_ms) {
			best = i;
			best_ms = ms;
		}
	}
	if (best < 0)
		return wh_error(WH_ERR_NOT_FOUND, "builds: none passes the check (no good build to keep)");
	*index_out = (uint32_t)best;
	return WH_OK;
}

/* ---- replay files ---- */

void wh_tactic_replays_init(struct wh_tactic_replays *r)
{
	memset(r, 0, sizeof *r);
}

void wh_tactic_replays_release(struct wh_tactic_replays *r)
{
	if (!r)
		return;
	for (uint32_t i = 0; i < r->n; i++) {
		free(r->paths[i]);
		wh_tactic_plan_release(&r->plans[i]);
	}
	free(r->paths);
	free(r->plans);
	wh_tactic_replays_init(r);
}

static enum wh_status replays_add_file(struct wh_tactic_replays *r, const char *path)
{
	if (r->n == UINT32_MAX)
		return wh_error(WH_ERR_OVERFLOW, "%s: too many replay files", path);
	char **np = realloc(r->paths, ((size_t)r->n + 1) * sizeof *np);
	if (!np)
		return wh_error(WH_ERR_NOMEM, "replays: out of memory");
	r->paths = np;
	struct wh_tactic_plan *pp = realloc(r->plans, ((size_t)r->n + 1) * sizeof *pp);
	if (!pp)
		return wh_error(WH_ERR_NOMEM, "replays: out of memory");
	r->plans = pp;
	wh_tactic_plan_init(&r->plans[r->n]);
	enum wh_status st = wh_tactic_plan_read(path, &r->plans[r->n]);
	/* differences between builds of different models or precisions explain nothing */
	const struct wh_tactic_plan *first = r->n ? &r->plans[0] : NULL, *p = &r->plans[r->n];
	if (st == WH_OK && first && first->model_hash[0] && p->model_hash[0] && strcmp(first->model_hash, p->model_hash))
		st = wh_error(WH_ERR_INVALID, "%s: a replay of another model (hash %s, while %s is of %s: compare replays of one model only)", path,
			      p->model_hash, r->paths[0], first->model_hash);
	else if (st == WH_OK && first && first->precision[0] && p->precision[0] && strcmp(first->precision, p->precision))
		st = wh_error(WH_ERR_INVALID, "%s: a replay built at %s (while %s was built at %s: compare replays of one precision only)", path,
			      p->precision, r->paths[0], first->precision);
	if (st == WH_OK && !(r->paths[r->n] = strdup(path)))
		st = wh_error(WH_ERR_NOMEM, "replays: out of memory");
	if (st != WH_OK) {
		wh_tactic_plan_release(&r->plans[r->n]);
		return st;
	}
	r->n++;
	return WH_OK;
}

static int cmp_name(const void *a, const void *b)
{
	/* build_2 before build_10 */
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

enum wh_status wh_tactic_replays_add(struct wh_tactic_replays *r, const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return wh_error(WH_ERR_IO, "%s: %s (give a replay file or a folder of them)", path, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return replays_add_file(r, path);
	DIR *dh = opendir(path);
	if (!dh)
		return wh_error(WH_ERR_IO, "%s: cannot open the folder: %s (check permissions)", path, strerror(errno));
	char **names = NULL;
	size_t n = 0, cap = 0;
	enum wh_status st = WH_OK;
	struct dirent *de;
	while ((de = readdir(dh))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len < 6 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 32;
			char **nn = realloc(names, nc * sizeof *nn);
			if (!nn) {
				st = wh_error(WH_ERR_NOMEM, "replays: out of memory");
				break;
			}
			names = nn;
			cap = nc;
		}
		if (!(names[n] = strdup(de->d_name))) {
			st = wh_error(WH_ERR_NOMEM, "replays: out of memory");
			break;
		}
		n++;
	}
	closedir(dh);
	if (st == WH_OK && !n)
		st = wh_error(WH_ERR_NOT_FOUND, "%s: holds no .json replay files (give the folder of good or bad replays)", path);
	if (st == WH_OK)
		qsort(names, n, sizeof *names, cmp_name);
	for (size_t i = 0; i < n && st == WH_OK; i++) {
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof p, "%s/%s", path, names[i]) >= sizeof p) {
			st = wh_error(WH_ERR_INVALID, "%s/%s: path too long", path, names[i]);
			break;
		}
		st = replays_add_file(r, p);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return st;
}

static json_t *replay_container(json_t *root)
{
	json_t *c = json_object_get(root, "layers");
	if (json_is_object(c))
		return c;
	c = json_object_get(root, "replay");
	return json_is_object(c) ? c : NULL;
}

enum wh_status wh_tactic_replay_swap(const char *base_path, const char *donor_path, const char *layer,
				     const char *out_path)
{
	json_error_t err;
	enum wh_status st = WH_OK;
	json_t *base = json_load_file(base_path, 0, &err);
	json_t *donor = base ? json_load_file(donor_path, 0, &err) : NULL;
	if (!base || !donor) {
		st = wh_error(WH_ERR_PARSE, "%s:%d: not a tactic replay: %s (see docs/formats.md)", base ? donor_path : base_path,
			      err.line, err.text);
		goto out;
	}
	json_t *bc = replay_container(base), *dc = replay_container(donor);
	if (!bc || !dc) {
		st = wh_error(WH_ERR_PARSE, "%s: neither a whittle tactic replay (\"layers\") nor a Polygraphy one (\"replay\")",
			      bc ? donor_path : base_path);
		goto out;
	}
	json_t *entry = json_object_get(dc, layer);
	if (!entry) {
		st = wh_error(WH_ERR_NOT_FOUND, "%s: has no layer '%s' (the replays come from different models?)", donor_path, layer);
		goto out;
	}
	if (json_object_set(bc, layer, entry) != 0) {
		st = wh_error(WH_ERR_NOMEM, "replays: out of memory");
		goto out;
	}
	if (json_dump_file(base, out_path, JSON_INDENT(1) | JSON_PRESERVE_ORDER) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot write the swapped replay (check the folder)", out_path);
out:
	json_decref(base);
	json_decref(donor);
	return st;
}
