#include "reducer/search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct search {
	uint32_t n;
	const struct wh_search_options *o;
	const struct wh_search_ops *ops;
	struct wh_search_report *rep;
	int jobs;
};

static bool mask_empty(const uint8_t *m, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (m[i])
			return false;
	return true;
}

/* Evaluates one batch; empty candidates pass without a check (nothing can fail). */
static enum wh_status eval_batch(struct search *s, uint8_t **masks, uint32_t k, enum wh_verdict *v)
{
	const uint8_t *todo[64];
	uint32_t idx[64], m = 0;
	for (uint32_t i = 0; i < k; i++) {
		if (mask_empty(masks[i], s->n)) {
			v[i] = WH_VERDICT_PASS;
			continue;
		}
		todo[m] = masks[i];
		idx[m++] = i;
	}
	if (!m)
		return WH_OK;
	enum wh_verdict got[64];
	enum wh_status st = s->ops->eval(s->ops->ctx, todo, m, got);
	if (st != WH_OK)
		return st;
	for (uint32_t i = 0; i < m; i++)
		v[idx[i]] = got[i];
	return WH_OK;
}

static enum wh_status eval_one(struct search *s, const uint8_t *mask, enum wh_verdict *v)
{
	uint8_t *m = (uint8_t *)mask;
	return eval_batch(s, &m, 1, v);
}

/* mask = fixed | (in [lo, hi) and in base) */
static void make_range(const struct search *s, const uint8_t *base, uint32_t lo, uint32_t hi, uint8_t *out)
{
	for (uint32_t i = 0; i < s->n; i++)
		out[i] = (s->o->fixed && s->o->fixed[i]) || (i >= lo && i < hi && base[i]);
}

/* Finds the boundary b in (lo, hi] such that probe(b) fails and probe(b-1) passes, where
 * probe(hi) is known to fail and probe(lo) to pass: (jobs+1)-ary search. from_end selects
 * prefixes [start, b) (false) or suffixes [b', end) with b' = end - b (true). */
static enum wh_status boundary_search(struct search *s, const uint8_t *base, uint32_t start, uint32_t end,
				      bool suffix, uint32_t *len_out)
{
	/* len: number of base positions kept, counted from the start (prefix) or from the end
	 * (suffix); fail(len) is monotone for a consistent check */
	uint32_t lo = 0, hi = end - start;
	uint8_t **masks = calloc((size_t)s->jobs, sizeof *masks);
	enum wh_verdict *v = calloc((size_t)s->jobs, sizeof *v);
	uint32_t *lens = calloc((size_t)s->jobs, sizeof *lens);
	enum wh_status st = WH_OK;
	if (!masks || !v || !lens) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (int j = 0; j < s->jobs; j++)
		if (!(masks[j] = malloc(s->n))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
	bool first = true;
	while (hi - lo > 1 || (first && s->o->confirm_full)) {
		uint32_t k = 0;
		uint32_t span = hi - lo;
		/* the full set's confirmation takes one slot of the first batch */
		bool with_full = first && s->o->confirm_full && !suffix;
		uint32_t slots = (uint32_t)s->jobs - (with_full ? 1 : 0);
		uint32_t probes = slots < span - 1 ? slots : span - 1;
		first = false;
		if (with_full) {
			make_range(s, base, start, end, masks[k]);
			lens[k++] = hi;
		}
		for (uint32_t j = 1; j <= probes; j++) {
			uint32_t len = lo + (uint32_t)(((uint64_t)span * j) / (probes + 1));
			if (len <= lo || len >= hi || (k && lens[k - 1] == len))
				continue;
			lens[k] = len;
			if (suffix)
				make_range(s, base, end - len, end, masks[k]);
			else
				make_range(s, base, start, start + len, masks[k]);
			k++;
		}
		if ((st = eval_batch(s, masks, k, v)) != WH_OK)
			goto out;
		if (with_full) {
			if (v[0] != WH_VERDICT_FAIL) {
				st = v[0] == WH_VERDICT_PASS ? WH_ERR_INVALID : WH_ERR_CHECK;
				goto out;
			}
			/* drop the full set's slot: its length is hi, which changes nothing below */
			memmove(lens, lens + 1, (k - 1) * sizeof *lens);
			memmove(v, v + 1, (k - 1) * sizeof *v);
			k--;
		}
		uint32_t new_lo = lo, new_hi = hi;
		for (uint32_t j = 0; j < k; j++) {
			if (v[j] == WH_VERDICT_FAIL) {
				new_hi = lens[j];
				break;
			}
			new_lo = lens[j];
		}
		/* a failing probe below a passing one contradicts monotonicity */
		for (uint32_t j = 0; j < k; j++)
			if (lens[j] > new_hi && v[j] != WH_VERDICT_FAIL && v[j] != WH_VERDICT_SKIP && !s->rep->inconsistent) {
				s->rep->inconsistent = true;
				snprintf(s->rep->note, sizeof s->rep->note,
					 "a larger candidate (%u nodes) passed while a smaller one (%u nodes) failed", lens[j], new_hi);
			}
		lo = new_lo;
		hi = new_hi;
	}
	*len_out = hi;
out:
	if (masks)
		for (int j = 0; j < s->jobs; j++)
			free(masks[j]);
	free(masks);
	free(v);
	free(lens);
	return st;
}

/* With several jobs, the outputs-side search (prefixes of the full list) and an inputs-side
 * search over suffixes of the full list run side by side, sharing each round's slots: the
 * shortest failing prefix [0, p) and suffix [s, n) bound the culprits, and [s, p) is then
 * checked once. For a consistent check this is what the sequential search finds, in about
 * half the rounds. *ok_out is false when [s, p) is empty (the caller falls back). */
static enum wh_status dual_search(struct search *s, const uint8_t *base, uint32_t *p_out, uint32_t *s_out)
{
	uint32_t n = s->n;
	uint32_t lo[2] = {0, 0}, hi[2] = {n, n}; /* [0]: prefix lengths, [1]: suffix lengths */
	uint8_t **masks = calloc((size_t)s->jobs, sizeof *masks);
	enum wh_verdict *v = calloc((size_t)s->jobs, sizeof *v);
	uint32_t *lens = calloc((size_t)s->jobs, sizeof *lens);
	int *side = calloc((size_t)s->jobs, sizeof *side);
	enum wh_status st = WH_OK;
	bool first = s->o->confirm_full;
	if (!masks || !v || !lens || !side) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (int j = 0; j < s->jobs; j++)
		if (!(masks[j] = malloc(n))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
	while (hi[0] - lo[0] > 1 || hi[1] - lo[1] > 1 || first) {
		uint32_t k = 0, slots = (uint32_t)s->jobs;
		if (first) {
			make_range(s, base, 0, n, masks[k]);
			side[k] = -1;
			lens[k++] = n;
			slots--;
		}
		uint32_t open0 = hi[0] - lo[0] > 1, open1 = hi[1] - lo[1] > 1;
		uint32_t want[2];
		want[0] = open0 ? (open1 ? (slots + 1) / 2 : slots) : 0;
		want[1] = open1 ? slots - want[0] : 0;
		for (int sd = 0; sd < 2; sd++) {
			uint32_t span = hi[sd] - lo[sd];
			uint32_t probes = want[sd] < span - 1 ? want[sd] : span - 1;
			for (uint32_t j = 1; j <= probes; j++) {
				uint32_t len = lo[sd] + (uint32_t)(((uint64_t)span * j) / (probes + 1));
				if (len <= lo[sd] || len >= hi[sd] || (k && side[k - 1] == sd && lens[k - 1] == len))
					continue;
				side[k] = sd;
				lens[k] = len;
				if (sd == 0)
					make_range(s, base, 0, len, masks[k]);
				else
					make_range(s, base, n - len, n, masks[k]);
				k++;
			}
		}
		if ((st = eval_batch(s, masks, k, v)) != WH_OK)
			goto out;
		for (int sd = 0; sd < 2; sd++) {
			uint32_t new_lo = lo[sd], new_hi = hi[sd];
			bool seen_fail = false;
			for (uint32_t j = 0; j < k; j++) {
				if (side[j] != sd)
					continue;
				if (v[j] == WH_VERDICT_FAIL && !seen_fail) {
					new_hi = lens[j];
					seen_fail = true;
				} else if (!seen_fail) {
					new_lo = lens[j];
				} else if (v[j] == WH_VERDICT_PASS && !s->rep->inconsistent) {
					s->rep->inconsistent = true;
					snprintf(s->rep->note, sizeof s->rep->note,
						 "a larger candidate (%u layers) passed while a smaller one (%u layers) failed", lens[j], new_hi);
				}
			}
			lo[sd] = new_lo;
			hi[sd] = new_hi;
		}
		if (first) {
			first = false;
			if (v[0] != WH_VERDICT_FAIL) {
				st = v[0] == WH_VERDICT_PASS ? WH_ERR_INVALID : WH_ERR_CHECK;
				goto out;
			}
		}
	}
	*p_out = hi[0];
	*s_out = n - hi[1];
out:
	if (masks)
		for (int j = 0; j < s->jobs; j++)
			free(masks[j]);
	free(masks);
	free(v);
	free(lens);
	free(side);
	return st;
}

/* QuickXplain: appends to out a minimal subset X of C such that B u X fails, given that
 * B u C fails. has_delta: whether B changed since its verdict was last known. */
static enum wh_status quickxplain(struct search *s, uint8_t *B, const uint32_t *C, uint32_t nc, bool has_delta,
				  uint8_t *out)
{
	enum wh_status st;
	if (has_delta) {
		enum wh_verdict v;
		if ((st = eval_one(s, B, &v)) != WH_OK)
			return st;
		if (v == WH_VERDICT_FAIL)
			return WH_OK;
	}
	if (nc == 1) {
		out[C[0]] = 1;
		return WH_OK;
	}
	uint32_t h = nc / 2;
	const uint32_t *C1 = C, *C2 = C + h;
	uint32_t n1 = h, n2 = nc - h;
	uint8_t *B1 = malloc(s->n), *X2 = calloc(s->n, 1);
	if (!B1 || !X2) {
		free(B1);
		free(X2);
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	}
	/* X2 = QX(B u C1, C2) */
	memcpy(B1, B, s->n);
	for (uint32_t i = 0; i < n1; i++)
		B1[C1[i]] = 1;
	st = quickxplain(s, B1, C2, n2, true, X2);
	if (st == WH_OK) {
		/* X1 = QX(B u X2, C1) */
		memcpy(B1, B, s->n);
		bool any = false;
		for (uint32_t i = 0; i < s->n; i++)
			if (X2[i]) {
				B1[i] = 1;
				any = true;
			}
		st = quickxplain(s, B1, C1, n1, any, out);
		for (uint32_t i = 0; i < s->n; i++)
			if (X2[i])
				out[i] = 1;
	}
	free(B1);
	free(X2);
	return st;
}

/* Removing any single node must make the check pass; a node whose removal still fails is
 * dropped and the pass repeats. All removals of one pass are evaluated as one batch. */
static enum wh_status minimality_pass(struct search *s, uint8_t *R)
{
	enum wh_status st = WH_OK;
	for (;;) {
		uint32_t cnt = 0;
		for (uint32_t i = 0; i < s->n; i++)
			if (R[i] && !(s->o->fixed && s->o->fixed[i]))
				cnt++;
		if (!cnt) {
			s->rep->one_minimal = true;
			return WH_OK;
		}
		uint8_t **masks = calloc(cnt, sizeof *masks);
		uint32_t *which = calloc(cnt, sizeof *which);
		enum wh_verdict *v = calloc(cnt, sizeof *v);
		if (!masks || !which || !v) {
			free(masks);
			free(which);
			free(v);
			return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		}
		uint32_t k = 0;
		for (uint32_t i = 0; i < s->n && st == WH_OK; i++) {
			if (!R[i] || (s->o->fixed && s->o->fixed[i]))
				continue;
			masks[k] = malloc(s->n);
			if (!masks[k]) {
				st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
				break;
			}
			memcpy(masks[k], R, s->n);
			masks[k][i] = 0;
			which[k++] = i;
		}
		/* evaluate in chunks of 64 (the batch limit) */
		for (uint32_t b = 0; b < k && st == WH_OK; b += 64)
			st = eval_batch(s, masks + b, k - b < 64 ? k - b : 64, v + b);
		int32_t drop = -1;
		for (uint32_t i = 0; i < k && st == WH_OK; i++)
			if (v[i] == WH_VERDICT_FAIL) {
				drop = (int32_t)which[i];
				break;
			}
		for (uint32_t i = 0; i < k; i++)
			free(masks[i]);
		free(masks);
		free(which);
		free(v);
		if (st != WH_OK)
			return st;
		if (drop < 0) {
			s->rep->one_minimal = true;
			return WH_OK;
		}
		R[drop] = 0;
	}
}

enum wh_status wh_search_run(uint32_t n, const struct wh_search_options *o, const struct wh_search_ops *ops,
			     uint8_t *result_mask, struct wh_search_report *rep)
{
	memset(rep, 0, sizeof *rep);
	struct search s = {.n = n, .o = o, .ops = ops, .rep = rep, .jobs = o->jobs < 1 ? 1 : (o->jobs > 64 ? 64 : o->jobs)};
	enum wh_status st = WH_OK;
	uint8_t *all = malloc(n ? n : 1);
	uint32_t *C = calloc((size_t)n + 1, sizeof *C);
	if (!all || !C) {
		free(all);
		free(C);
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	}
	memset(all, 1, n);
	uint32_t lo = 0, hi = n;
	bool coarse_done = false;
	if (s.jobs > 1 && o->reduce_outputs && o->reduce_inputs && n > 2) {
		uint32_t p = n, q = 0;
		if ((st = dual_search(&s, all, &p, &q)) != WH_OK)
			goto out;
		if (q < p) {
			enum wh_verdict v;
			make_range(&s, all, q, p, result_mask);
			if ((st = eval_one(&s, result_mask, &v)) != WH_OK)
				goto out;
			if (v == WH_VERDICT_FAIL) {
				lo = q;
				hi = p;
				coarse_done = true;
			} else {
				/* the two sides do not combine (the failure needs layers outside
				 * [q, p)): continue sequentially from the prefix */
				hi = p;
			}
		} else {
			hi = p;
		}
		if (!coarse_done) {
			uint32_t len;
			if (o->reduce_inputs && hi - lo > 1) {
				if ((st = boundary_search(&s, all, lo, hi, true, &len)) != WH_OK)
					goto out;
				lo = hi - len;
			}
			coarse_done = true;
		}
	}
	/* coarse, outputs side: the shortest failing prefix */
	if (coarse_done) {
		/* done above */
	} else if (o->reduce_outputs && n > 1) {
		uint32_t len;
		if ((st = boundary_search(&s, all, 0, n, false, &len)) != WH_OK)
			goto out;
		hi = len;
	} else if (o->confirm_full) {
		enum wh_verdict v;
		make_range(&s, all, 0, n, result_mask);
		if ((st = eval_one(&s, result_mask, &v)) != WH_OK)
			goto out;
		if (v != WH_VERDICT_FAIL) {
			st = v == WH_VERDICT_PASS ? WH_ERR_INVALID : WH_ERR_CHECK;
			goto out;
		}
	}
	if (ops->progress && !coarse_done) {
		make_range(&s, all, lo, hi, result_mask);
		ops->progress(ops->ctx, "bisect-outputs", result_mask);
	}
	/* coarse, inputs side: the shortest failing suffix of that prefix */
	if (!coarse_done && o->reduce_inputs && hi - lo > 1) {
		uint32_t len;
		if ((st = boundary_search(&s, all, lo, hi, true, &len)) != WH_OK)
			goto out;
		lo = hi - len;
	}
	rep->bisect_lo = lo;
	rep->bisect_hi = hi;
	make_range(&s, all, lo, hi, result_mask);
	if (ops->progress)
		ops->progress(ops->ctx, "bisect-inputs", result_mask);
	if (o->mode == WH_SEARCH_BISECT)
		goto out;
	if (o->mode == WH_SEARCH_DDMIN) {
		uint32_t nc = 0;
		uint8_t *B = calloc(n ? n : 1, 1), *X = calloc(n ? n : 1, 1);
		if (!B || !X) {
			free(B);
			free(X);
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
		for (uint32_t i = 0; i < n; i++) {
			if (o->fixed && o->fixed[i])
				B[i] = 1;
			else if (result_mask[i])
				C[nc++] = i;
		}
		if (nc)
			st = quickxplain(&s, B, C, nc, false, X);
		if (st == WH_OK)
			for (uint32_t i = 0; i < n; i++)
				result_mask[i] = B[i] || X[i];
		free(B);
		free(X);
		if (st != WH_OK)
			goto out;
		if (ops->progress)
			ops->progress(ops->ctx, "quickxplain", result_mask);
	} else {
		/* linear: one node at a time, from the outputs side */
		uint8_t *tmp = malloc(n);
		if (!tmp) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
		for (uint32_t i = n; i-- > 0 && st == WH_OK;) {
			if (!result_mask[i] || (o->fixed && o->fixed[i]))
				continue;
			memcpy(tmp, result_mask, n);
			tmp[i] = 0;
			enum wh_verdict v;
			if ((st = eval_one(&s, tmp, &v)) == WH_OK && v == WH_VERDICT_FAIL)
				result_mask[i] = 0;
		}
		free(tmp);
		if (st != WH_OK)
			goto out;
		if (ops->progress)
			ops->progress(ops->ctx, "linear", result_mask);
	}
	st = minimality_pass(&s, result_mask);
	if (ops->progress)
		ops->progress(ops->ctx, "minimality", result_mask);
out:
	free(all);
	free(C);
	return st;
}
