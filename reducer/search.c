#include "reducer/search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A verdict seen, kept to test monotonicity and to imply verdicts from it. */
struct seen {
	uint8_t *mask;
	enum wh_verdict v;
};

/* The budgeted trees of the culprit search at -j 1 (below: "Trees from the dynamic
 * program"): for the list of N nodes searched, T[i][m] is the most checks the search may
 * have spent on reaching the state "i culprits found, m nodes left before the last one"
 * with every placement of up to kmax culprits still within its budget B[k]. */
struct dp {
	uint32_t N, kmax;
	int32_t B[WH_SEARCH_DP_KMAX + 1];
	int32_t *T; /* (kmax + 1) * (N + 1) */
};

struct search {
	uint32_t n;
	const struct wh_search_options *o;
	const struct wh_search_ops *ops;
	struct wh_search_report *rep;
	int jobs;
	bool imply;          /* answer implied verdicts without a check (ddmin) */
	bool full_pending;   /* the full set's check rides in the next batch */
	struct seen *seen;
	uint32_t n_seen, cap_seen;
	struct dp *dp;       /* budgeted trees (culprit search, -j 1), or NULL */
	uint32_t t0;         /* rep->probes when the culprit search began */
	int32_t *lim;        /* scratch: the leaves' depth limits of one boundary search */
};

static bool subset(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] && !b[i])
			return false;
	return true;
}

static uint32_t count_of(const uint8_t *m, uint32_t n)
{
	uint32_t c = 0;
	for (uint32_t i = 0; i < n; i++)
		c += m[i] != 0;
	return c;
}

/* The verdict monotonicity gives mask (a subset of a passing candidate passes, a superset
 * of a failing one fails), or -1. */
static int implied_verdict(const struct search *s, const uint8_t *mask)
{
	for (uint32_t i = 0; i < s->n_seen; i++) {
		const struct seen *e = &s->seen[i];
		if (e->v == WH_VERDICT_PASS && subset(mask, e->mask, s->n))
			return WH_VERDICT_PASS;
		if (e->v == WH_VERDICT_FAIL && subset(e->mask, mask, s->n))
			return WH_VERDICT_FAIL;
	}
	return -1;
}

/* Records a verdict; the first pair that contradicts monotonicity is noted. */
static enum wh_status remember(struct search *s, const uint8_t *mask, enum wh_verdict v)
{
	if (v == WH_VERDICT_SKIP)
		return WH_OK;
	for (uint32_t i = 0; i < s->n_seen && s->rep->monotone; i++) {
		const struct seen *e = &s->seen[i];
		const uint8_t *small = NULL, *large = NULL;
		if (v == WH_VERDICT_FAIL && e->v == WH_VERDICT_PASS && subset(mask, e->mask, s->n))
			small = mask, large = e->mask;
		else if (v == WH_VERDICT_PASS && e->v == WH_VERDICT_FAIL && subset(e->mask, mask, s->n))
			small = e->mask, large = mask;
		if (small) {
			s->rep->monotone = false;
			if (!s->rep->note[0])
				snprintf(s->rep->note, sizeof s->rep->note,
					 "the check is not monotone: a candidate of %u layers passed while one of %u of its layers failed; "
					 "single removals are checked directly from here on",
					 count_of(large, s->n), count_of(small, s->n));
		}
	}
	if (s->n_seen == s->cap_seen) {
		uint32_t cap = s->cap_seen ? s->cap_seen * 2 : 64;
		struct seen *ns = realloc(s->seen, cap * sizeof *ns);
		if (!ns)
			return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		s->seen = ns;
		s->cap_seen = cap;
	}
	uint8_t *copy = malloc(s->n ? s->n : 1);
	if (!copy)
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	memcpy(copy, mask, s->n);
	s->seen[s->n_seen].mask = copy;
	s->seen[s->n_seen++].v = v;
	return WH_OK;
}

static bool mask_empty(const uint8_t *m, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (m[i])
			return false;
	return true;
}

/* Evaluates one batch; empty candidates pass without a check (nothing can fail), and while
 * the check is monotone (ddmin) implied verdicts are given without one. A pending check of
 * the full set rides in the batch (WH_ERR_INVALID when it passes). */
static enum wh_status eval_batch(struct search *s, uint8_t **masks, uint32_t k, enum wh_verdict *v)
{
	const uint8_t *todo[130];
	uint32_t idx[130], m = 0;
	uint8_t *full = NULL;
	enum wh_status st = WH_OK;
	if (s->full_pending) {
		if (!(full = malloc(s->n ? s->n : 1)))
			return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		memset(full, 1, s->n);
		todo[m] = full;
		idx[m++] = UINT32_MAX;
	}
	for (uint32_t i = 0; i < k; i++) {
		if (mask_empty(masks[i], s->n)) {
			v[i] = WH_VERDICT_PASS;
			continue;
		}
		int iv = s->imply && s->rep->monotone ? implied_verdict(s, masks[i]) : -1;
		if (iv >= 0) {
			v[i] = (enum wh_verdict)iv;
			s->rep->implied++;
			continue;
		}
		todo[m] = masks[i];
		idx[m++] = i;
	}
	if (!m)
		goto out;
	enum wh_verdict got[130];
	if ((st = s->ops->eval(s->ops->ctx, todo, m, got)) != WH_OK)
		goto out;
	s->rep->probes += m;
	s->rep->rounds += (m + (uint32_t)s->jobs - 1) / (uint32_t)s->jobs;
	for (uint32_t i = 0; i < m; i++) {
		if (idx[i] == UINT32_MAX) {
			s->full_pending = false;
			if (got[i] != WH_VERDICT_FAIL) {
				st = got[i] == WH_VERDICT_PASS ? WH_ERR_INVALID : WH_ERR_CHECK;
				goto out;
			}
		} else {
			v[idx[i]] = got[i];
		}
		if ((st = remember(s, todo[i], got[i])) != WH_OK)
			goto out;
	}
out:
	free(full);
	return st;
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

/* Bisection, made parallel without changing its decisions.
 *
 * A side searches the shortest failing length in (lo, hi] (hi known to fail, lo to pass) by
 * plain binary search: the probe is always the midpoint, so the decisions are the same for
 * any number of jobs. Slots a round does not need for those probes run the probes the
 * search may need next (the midpoints of both halves, then of their halves): when their
 * turn comes, their verdicts are already there. A side is either the prefixes of the list
 * [start, start + len) or its suffixes [end - len, end). */
struct side {
	bool suffix, open;
	uint32_t start, end, lo, hi;
	int8_t *known; /* verdict per length: -1 unknown, else enum wh_verdict */
};

static uint32_t mid_of(uint32_t lo, uint32_t hi)
{
	return lo + (hi - lo) / 2 + ((hi - lo) % 2); /* in (lo, hi), rounded up */
}

static void side_mask(const struct search *s, const struct side *sd, const uint8_t *base, uint32_t len, uint8_t *out)
{
	if (sd->suffix)
		make_range(s, base, sd->end - len, sd->end, out);
	else
		make_range(s, base, sd->start, sd->start + len, out);
}

/* Applies known verdicts; returns whether the side still needs a probe. */
static bool side_advance(struct search *s, struct side *sd)
{
	while (sd->hi - sd->lo > 1) {
		uint32_t m = mid_of(sd->lo, sd->hi);
		int8_t v = sd->known[m];
		if (v < 0)
			return true;
		if (v == WH_VERDICT_FAIL)
			sd->hi = m;
		else
			sd->lo = m;
	}
	sd->open = false;
	(void)s;
	return false;
}

/* Up to `room` lengths the side may probe next, breadth first below its current midpoint. */
static uint32_t side_speculate(const struct side *sd, uint32_t room, uint32_t *lens)
{
	uint32_t k = 0;
	uint32_t qlo[64], qhi[64], qn = 0, qi = 0;
	qlo[qn] = sd->lo;
	qhi[qn++] = sd->hi;
	while (qi < qn && k < room) {
		uint32_t lo = qlo[qi], hi = qhi[qi++];
		if (hi - lo <= 1)
			continue;
		uint32_t m = mid_of(lo, hi);
		if (sd->known[m] < 0) {
			bool dup = false;
			for (uint32_t i = 0; i < k; i++)
				dup |= lens[i] == m;
			if (!dup)
				lens[k++] = m;
		}
		if (qn + 2 <= 64) {
			qlo[qn] = lo;
			qhi[qn++] = m;
			qlo[qn] = m;
			qhi[qn++] = hi;
		}
	}
	return k;
}

/* Runs the open sides to the end. with_full: the full set's confirmation rides in the first
 * batch (WH_ERR_INVALID when it passes). */
static enum wh_status run_sides(struct search *s, const uint8_t *base, struct side *sides, int n_sides, bool with_full)
{
	enum wh_status st = WH_OK;
	uint32_t cap = (uint32_t)(s->jobs > 2 ? s->jobs : 2) + 1;
	uint8_t **masks = calloc(cap, sizeof *masks);
	enum wh_verdict *v = calloc(cap, sizeof *v);
	uint32_t *lens = calloc(cap, sizeof *lens);
	int *which = calloc(cap, sizeof *which);
	if (!masks || !v || !lens || !which) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (uint32_t j = 0; j < cap; j++)
		if (!(masks[j] = malloc(s->n ? s->n : 1))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
	for (;;) {
		uint32_t k = 0;
		if (with_full) {
			make_range(s, base, 0, s->n, masks[k]);
			which[k] = -1;
			lens[k++] = s->n;
		}
		/* the probes the searches need now */
		for (int i = 0; i < n_sides; i++)
			if (sides[i].open && side_advance(s, &sides[i])) {
				lens[k] = mid_of(sides[i].lo, sides[i].hi);
				which[k] = i;
				side_mask(s, &sides[i], base, lens[k], masks[k]);
				k++;
			}
		if (!k)
			break;
		/* idle slots: what they may need next */
		uint32_t slots = (uint32_t)s->jobs;
		for (int i = 0; i < n_sides && k < slots; i++) {
			if (!sides[i].open)
				continue;
			uint32_t spec[64];
			uint32_t room = slots - k;
			uint32_t ns = side_speculate(&sides[i], room + 1 > 64 ? 64 : room + 1, spec);
			for (uint32_t j = 0; j < ns && k < slots; j++) {
				bool dup = false;
				for (uint32_t q = 0; q < k; q++)
					dup |= which[q] == i && lens[q] == spec[j];
				if (dup)
					continue;
				lens[k] = spec[j];
				which[k] = i;
				side_mask(s, &sides[i], base, lens[k], masks[k]);
				k++;
			}
		}
		if ((st = eval_batch(s, masks, k, v)) != WH_OK)
			goto out;
		for (uint32_t j = 0; j < k; j++) {
			if (which[j] < 0) {
				if (v[j] != WH_VERDICT_FAIL) {
					st = v[j] == WH_VERDICT_PASS ? WH_ERR_INVALID : WH_ERR_CHECK;
					goto out;
				}
				continue;
			}
			sides[which[j]].known[lens[j]] = (int8_t)v[j];
		}
		with_full = false;
	}
	/* a larger length passing while a smaller one failed: the check is not monotone (not an
	 * error: the bisection's answer is still a failing candidate; it is only a note) */
	for (int i = 0; i < n_sides; i++)
		for (uint32_t len = sides[i].hi + 1; len < sides[i].end - sides[i].start; len++)
			if (sides[i].known[len] == WH_VERDICT_PASS && !s->rep->note[0])
				snprintf(s->rep->note, sizeof s->rep->note,
					 "the check is not monotone: a candidate of %u layers passed while one of %u failed", len, sides[i].hi);
out:
	if (masks)
		for (uint32_t j = 0; j < cap; j++)
			free(masks[j]);
	free(masks);
	free(v);
	free(lens);
	free(which);
	return st;
}

static enum wh_status side_init(struct side *sd, bool suffix, uint32_t start, uint32_t end)
{
	memset(sd, 0, sizeof *sd);
	sd->suffix = suffix;
	sd->start = start;
	sd->end = end;
	sd->lo = 0;
	sd->hi = end - start;
	sd->open = sd->hi > 1;
	sd->known = malloc((size_t)(end - start) + 1);
	if (!sd->known)
		return wh_error(WH_ERR_NOMEM, "reduce: out of memory");
	memset(sd->known, -1, (size_t)(end - start) + 1);
	sd->known[0] = WH_VERDICT_PASS;
	sd->known[end - start] = WH_VERDICT_FAIL;
	return WH_OK;
}

/* The shortest failing prefix (or suffix) of [start, end) of base. */
static enum wh_status boundary_search(struct search *s, const uint8_t *base, uint32_t start, uint32_t end,
				      bool suffix, uint32_t *len_out)
{
	struct side sd;
	enum wh_status st = side_init(&sd, suffix, start, end);
	if (st == WH_OK)
		st = run_sides(s, base, &sd, 1, false);
	if (st == WH_OK)
		*len_out = sd.hi;
	free(sd.known);
	return st;
}

/* Both ends at once: the shortest failing prefix [0, p) and suffix [q, n) of the whole
 * list, searched side by side (their probes share each batch); the candidate is then
 * [q, p). The same probes, and so the same answer, for any number of jobs. */
static enum wh_status dual_search(struct search *s, const uint8_t *base, uint32_t *p_out, uint32_t *s_out)
{
	struct side sd[2];
	enum wh_status st = side_init(&sd[0], false, 0, s->n);
	if (st == WH_OK && (st = side_init(&sd[1], true, 0, s->n)) == WH_OK)
		st = run_sides(s, base, sd, 2, s->o->confirm_full);
	if (st == WH_OK) {
		*p_out = sd[0].hi;
		*s_out = s->n - sd[1].hi;
	}
	free(sd[0].known);
	free(sd[1].known);
	return st;
}

/* Removing any single node must make the check pass. All single removals are checked as one
 * batch; the nodes whose removal still fails are then dropped one at a time (each removal
 * checked against what is left), and the batch is repeated until every single removal
 * passes: O(|R|) checks per round instead of one round per dropped node. */
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
		uint32_t dropped = 0;
		for (uint32_t i = 0; i < k && st == WH_OK; i++) {
			if (v[i] != WH_VERDICT_FAIL)
				continue;
			/* still fails without this node, given what was dropped before it? */
			uint8_t *m = masks[i];
			memcpy(m, R, s->n);
			m[which[i]] = 0;
			enum wh_verdict vv = WH_VERDICT_FAIL;
			if (dropped && (st = eval_one(s, m, &vv)) != WH_OK)
				break;
			if (vv == WH_VERDICT_FAIL) {
				R[which[i]] = 0;
				dropped++;
			}
		}
		for (uint32_t i = 0; i < k; i++)
			free(masks[i]);
		free(masks);
		free(which);
		free(v);
		if (st != WH_OK)
			return st;
		if (!dropped) {
			s->rep->one_minimal = true;
			return WH_OK;
		}
	}
}

/* ---- ddmin: culprits one at a time ---- */

/* Trees from the dynamic program (-j 1). The culprit search is a sequence of boundary
 * searches; the state before one is (i, m): i culprits found, m nodes left in U. Its leaves
 * are p = 0 ("K alone fails": the search ends with i culprits, and that check is the proof)
 * and p = 1..m (the next culprit is U[p-1]: state (i + 1, p - 1)). Each probe "K + U[0, q)"
 * splits the leaves <= q from those above, so a boundary search is an ordered binary tree
 * over its leaves. With the budget B(k) = ceil(log2 C(N,k)) + k + 1 search checks for k
 * culprits among the N nodes searched (the driver's check of the original makes it the
 * bound ceil(log2 C(N,k)) + k + 2 of docs/benchmarks.md), leaf p = 0 of state (i, m) must
 * be reached within B(i) checks, and leaf p within T(i + 1, p - 1), the most checks state
 * (i + 1, p - 1) may be entered with. Ordered leaves with depth limits fit one binary tree
 * iff their dyadic intervals, packed left to right each at its deepest allowed level, end
 * at or before 1; T(i, m) is the largest t for which the leaves of (i, m) fit below depth
 * t. The budgets hold for every placement of up to kmax culprits iff T(0, N) >= 0
 * (scripts/search-bound.py computes the same table; met with kmax = 4 for every N up to
 * WH_SEARCH_DP_MAX). At each probe the cuts whose two sides still fit with one check more
 * spent form an interval; the search picks K alone (first in a search after a culprit)
 * when it lies there, else the neighbour of the last culprit as shallow as the limits allow
 * (the largest feasible cut, while the neighbour is in the bracket), else the cut nearest
 * the midpoint among those that leave every leaf the most checks to spare. */
#define DP_INF (INT32_MAX / 4)
#define DP_FLOOR (-64)
#define DP_D 62   /* intervals in units of 2^-62 */
#define DP_CAP 40 /* deeper limits count as 40 (no tree here needs as many) */

static int32_t dp_budget(uint32_t N, uint32_t k)
{
	double lc = lgamma(N + 1.0) - lgamma(k + 1.0) - lgamma(N - k + 1.0);
	return (int32_t)ceil(lc / log(2.0) - 1e-9) + (int32_t)k + 1;
}

/* How many of the cnt leaves lim[first], lim[first + step], ... fit, in that order, below
 * depth t (limits are absolute check counts). */
static uint32_t dp_fit_run(const int32_t *lim, int64_t first, int64_t step, uint32_t cnt, int32_t t)
{
	const uint64_t one = (uint64_t)1 << DP_D;
	uint64_t x = 0;
	for (uint32_t i = 0; i < cnt; i++) {
		int64_t l = (int64_t)lim[first + step * (int64_t)i] - t;
		if (l < 0)
			return i;
		if (l > DP_CAP)
			l = DP_CAP;
		uint64_t u = (uint64_t)1 << (DP_D - l);
		x = (x + u - 1) / u * u + u;
		if (x > one)
			return i;
	}
	return cnt;
}

static int32_t dp_T(const struct dp *d, uint32_t i, uint32_t m)
{
	return d->T[(size_t)i * (d->N + 1) + m];
}

/* Fills the table for d->kmax (L: scratch of N + 2); returns T(0, N). Each row costs
 * O(N) per decrement of t, and t falls by at most ~DP_CAP - DP_FLOOR over a row. */
static int32_t dp_fill(struct dp *d, int32_t *L)
{
	const uint64_t one = (uint64_t)1 << DP_D;
	for (int64_t i = d->kmax; i >= 0; i--) {
		int32_t *Ti = d->T + (size_t)i * (d->N + 1);
		uint32_t nl = 0;
		int32_t minl = DP_INF, t = DP_INF;
		uint64_t x = 0;
		bool dead = false;
		if (i > 0)
			minl = L[nl++] = d->B[i];
		for (uint32_t m = 0; m <= d->N; m++) {
			if (m > 0) {
				int32_t l = (uint32_t)i < d->kmax ? dp_T(d, (uint32_t)i + 1, m - 1) : DP_INF;
				L[nl++] = l;
				if (l < minl)
					minl = l;
				if (t != DP_INF && !dead) {
					/* append the new leaf at the current t */
					int64_t r = (int64_t)l - t;
					if (r > DP_CAP)
						r = DP_CAP;
					uint64_t u = r >= 0 ? (uint64_t)1 << (DP_D - r) : 0;
					uint64_t nx = r >= 0 ? (x + u - 1) / u * u + u : one + 1;
					if (nx <= one) {
						x = nx;
						Ti[m] = t;
						continue;
					}
					t--;
				}
			}
			if (dead) {
				Ti[m] = DP_FLOOR;
				continue;
			}
			if (minl >= DP_INF) {
				Ti[m] = DP_INF;
				continue;
			}
			if (t == DP_INF)
				t = minl < DP_CAP * 4 ? minl : DP_CAP * 4;
			while (t > DP_FLOOR && dp_fit_run(L, 0, 1, nl, t) < nl)
				t--;
			if (dp_fit_run(L, 0, 1, nl, t) < nl) {
				dead = true;
				Ti[m] = DP_FLOOR;
				continue;
			}
			/* the packed end at t, for the next appends */
			x = 0;
			for (uint32_t j = 0; j < nl; j++) {
				int64_t r = (int64_t)L[j] - t;
				if (r > DP_CAP)
					r = DP_CAP;
				uint64_t u = (uint64_t)1 << (DP_D - r);
				x = (x + u - 1) / u * u + u;
			}
			Ti[m] = t;
		}
	}
	return dp_T(d, 0, d->N);
}

static void dp_free(struct dp *d)
{
	if (d)
		free(d->T);
	free(d);
}

/* The table for N nodes: the largest kmax <= WH_SEARCH_DP_KMAX whose budgets are all met
 * (NULL with *st WH_OK when none is, or N is outside the table's range). */
static struct dp *dp_make(uint32_t N, enum wh_status *st)
{
	*st = WH_OK;
	if (N < 2 || N > WH_SEARCH_DP_MAX)
		return NULL;
	struct dp *d = calloc(1, sizeof *d);
	int32_t *L = malloc(((size_t)N + 2) * sizeof *L);
	uint32_t kmax = N < WH_SEARCH_DP_KMAX ? N : WH_SEARCH_DP_KMAX;
	if (!d || !L || !(d->T = malloc(((size_t)kmax + 1) * ((size_t)N + 1) * sizeof *d->T))) {
		*st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto fail;
	}
	d->N = N;
	for (uint32_t k = 1; k <= kmax; k++)
		d->B[k] = dp_budget(N, k);
	for (d->kmax = kmax; d->kmax >= 1; d->kmax--)
		if (dp_fill(d, L) >= 0) {
			free(L);
			return d;
		}
fail:
	free(L);
	dp_free(d);
	return NULL;
}

/* The probe of a boundary search at -j 1 with the table: bracket (lo, hi), leaves
 * p = lo + 1 .. hi with limits s->lim[p]; pref0 / prefn: K alone / the neighbour are
 * today's next probes (-1: not). Returns -1 when no cut keeps both sides within their
 * limits (a check that was not monotone, or budgets not met): today's probe then. */
static int64_t dp_probe(const struct search *s, int64_t lo, int64_t hi, int64_t pref0, int64_t prefn, int64_t mid)
{
	int32_t t = (int32_t)(s->rep->probes - s->t0) + 1;
	uint32_t cnt = (uint32_t)(hi - lo);
	/* with cut q the left leaves are lo + 1 .. q, the right ones q + 1 .. hi */
	int64_t qb = lo + (int64_t)dp_fit_run(s->lim, lo + 1, 1, cnt, t);
	int64_t qa = hi - (int64_t)dp_fit_run(s->lim, hi, -1, cnt, t);
	if (qa < lo + 1)
		qa = lo + 1;
	if (qb > hi - 1)
		qb = hi - 1;
	if (qa > qb)
		return -1;
	if (pref0 >= qa && pref0 <= qb)
		return pref0;
	if (prefn >= 0)
		return prefn <= qb ? prefn : qb; /* the neighbour as shallow as the limits allow */
	/* the cuts that leave every leaf the most room (checks to spare for the probes of the
	 * searches after it), the one nearest the midpoint */
	for (int32_t spare = 1; spare < DP_CAP; spare++) {
		int64_t b = lo + (int64_t)dp_fit_run(s->lim, lo + 1, 1, cnt, t + spare);
		int64_t a = hi - (int64_t)dp_fit_run(s->lim, hi, -1, cnt, t + spare);
		if (a < lo + 1)
			a = lo + 1;
		if (b > hi - 1)
			b = hi - 1;
		if (a > b)
			break;
		qa = a;
		qb = b;
	}
	return mid < qa ? qa : (mid > qb ? qb : mid);
}

/* -j 1 with the table: one probe, today's where the budgeted tree has room for it. */
static uint32_t tree_probe(const struct search *s, int64_t lo, int64_t hi, int64_t m, bool ask0, bool *adj, int64_t *probe)
{
	int64_t pref0 = lo < 0 && ask0 ? 0 : -1;
	/* the neighbour: while it is still in the bracket */
	int64_t prefn = *adj && hi == m && hi - 1 > lo && hi - 1 > 0 ? hi - 1 : -1;
	int64_t mid = lo + (hi - lo + 1) / 2;
	int64_t q = dp_probe(s, lo, hi, pref0, prefn, mid);
	if (q < 0) {
		q = pref0 >= 0 ? pref0 : (prefn >= 0 ? prefn : mid);
		if (q != pref0)
			*adj = false;
	}
	probe[0] = q;
	return 1;
}

/* Today's round: K alone first when it is unknown, the neighbour of the last culprit when
 * adj is set, then cut points spread evenly over (lo, hi), `jobs` in all. */
static uint32_t round_probes(const struct search *s, int64_t lo, int64_t hi, bool ask0, bool *adj, int64_t *probe)
{
	uint32_t k = 0, slots = (uint32_t)s->jobs;
	bool spare = false;
	if (lo < 0 && ask0) {
		probe[k++] = 0;
		/* K alone may be the result: its round leaves a slot for the driver's second run
		 * of it (--confirm 2 and up: it fills idle slots so, which saves the round of
		 * re-running it); without one, the slot gets one more cut point below */
		if (slots > 1) {
			slots--;
			spare = !s->o->rerun_slot;
		}
	}
	if (*adj && hi - 1 > lo && hi - 1 > 0 && k < slots) {
		probe[k++] = hi - 1;
		*adj = false;
	}
	/* evenly spread over (lo, hi), skipping points already asked */
	uint32_t room = slots - k;
	if (!k || room) {
		int64_t a = lo, width = hi - lo;
		uint32_t want = room ? room : 1;
		if ((int64_t)want > width - 1)
			want = (uint32_t)(width - 1);
		for (uint32_t i = 1; i <= want && k < 130; i++) {
			int64_t p = a + (width * (int64_t)i + (int64_t)want) / ((int64_t)want + 1);
			if (p <= lo)
				p = lo + 1;
			if (p >= hi)
				p = hi - 1;
			bool dup = false;
			for (uint32_t q = 0; q < k; q++)
				dup |= probe[q] == p;
			if (!dup)
				probe[k++] = p;
		}
	}
	/* the spare slot: the midpoint of the widest gap the cut points leave, so the round
	 * asks everything it asked before and one point more */
	if (spare && k < 130) {
		int64_t best_a = lo, best_w = 0;
		int64_t pts[131];
		uint32_t np = 0;
		pts[np++] = lo;
		for (uint32_t i = 0; i < k; i++)
			if (probe[i] > lo && probe[i] < hi)
				pts[np++] = probe[i];
		pts[np++] = hi;
		for (uint32_t i = 1; i < np; i++)
			for (uint32_t j = i; j > 0 && pts[j - 1] > pts[j]; j--) {
				int64_t t = pts[j];
				pts[j] = pts[j - 1];
				pts[j - 1] = t;
			}
		for (uint32_t i = 0; i + 1 < np; i++)
			if (pts[i + 1] - pts[i] > best_w) {
				best_w = pts[i + 1] - pts[i];
				best_a = pts[i];
			}
		if (best_w > 1)
			probe[k++] = best_a + (best_w + 1) / 2;
	}
	return k;
}

/* One boundary search: the smallest p in [0, m] for which K + U[0, p) fails, knowing that
 * p = m fails. lo is the largest p known to pass (-1: none, p = 0 not yet known). Each
 * round asks up to `jobs` cut points: K alone first when it is unknown (is there anything
 * left to find?), the node next to the last culprit when adj is set (culprits cluster),
 * then points spread evenly over the bracket. The bracket keeps the smallest failing p and
 * the largest passing p below it, so for a monotone check the answer does not depend on
 * which cut points were asked. At -j 1 with the table (found culprits so far) the one
 * probe of each round comes from the budgeted tree instead. A skip counts as a pass (it
 * never lets a node go). pass_ok: the verdict at p - 1 was a real pass (or the empty
 * candidate). */
static enum wh_status boundary(struct search *s, const uint8_t *K, const uint32_t *U, uint32_t m, int64_t lo,
			       bool ask0, bool adj, uint32_t found, uint8_t **masks, uint32_t *p_out, bool *pass_ok)
{
	int64_t hi = m;
	bool lo_real = lo >= 0; /* lo's verdict was a real pass */
	enum wh_verdict v[130];
	int64_t probe[130];
	const struct dp *d = s->jobs == 1 && s->dp && found <= s->dp->kmax ? s->dp : NULL;
	if (d) {
		s->lim[0] = found > 0 ? d->B[found] : DP_INF;
		for (uint32_t p = 1; p <= m; p++)
			s->lim[p] = found < d->kmax ? dp_T(d, found + 1, p - 1) : DP_INF;
	}
	while (hi - lo > 1) {
		uint32_t k = d ? tree_probe(s, lo, hi, m, ask0, &adj, probe) : round_probes(s, lo, hi, ask0, &adj, probe);
		for (uint32_t i = 0; i < k; i++) {
			memcpy(masks[i], K, s->n);
			for (int64_t j = 0; j < probe[i]; j++)
				masks[i][U[j]] = 1;
		}
		enum wh_status st = eval_batch(s, masks, k, v);
		if (st != WH_OK)
			return st;
		for (uint32_t i = 0; i < k; i++)
			if (v[i] == WH_VERDICT_FAIL && probe[i] < hi)
				hi = probe[i];
		for (uint32_t i = 0; i < k; i++)
			if (v[i] != WH_VERDICT_FAIL && probe[i] < hi && probe[i] > lo) {
				lo = probe[i];
				lo_real = v[i] == WH_VERDICT_PASS;
			}
		if (lo >= hi) /* a pass at or above the smallest failure: decided by the failure */
			lo = hi - 1, lo_real = false;
	}
	*p_out = (uint32_t)hi;
	*pass_ok = lo_real || (lo == 0 && mask_empty(K, s->n));
	return WH_OK;
}

/* within: the nodes in play (NULL: all); the others are never kept nor asked about. The
 * set within (with the fixed nodes) is known to fail. */
static enum wh_status culprit_search(struct search *s, const uint8_t *within, uint8_t *result)
{
	uint32_t n = s->n, m = 0;
	const struct wh_search_options *o = s->o;
	enum wh_status st = WH_OK;
	uint32_t *U = malloc(((size_t)n + 1) * sizeof *U);
	bool *witness = calloc((size_t)n + 1, sizeof *witness);
	uint8_t **masks = calloc(130, sizeof *masks);
	if (!U || !witness || !masks) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < 130; i++)
		if (!(masks[i] = malloc(n ? n : 1))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
	/* K starts as the fixed nodes; the search runs from the outputs side (the last culprit
	 * first), or from the inputs side when only the inputs side may be reduced */
	bool reverse = !o->reduce_outputs && o->reduce_inputs;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t x = reverse ? n - 1 - i : i;
		result[x] = o->fixed && o->fixed[x];
		if (!result[x] && (!within || within[x]))
			U[m++] = x;
	}
	/* -j 1: the budgeted trees for these m nodes (beyond WH_SEARCH_DP_MAX, plain bisection) */
	if (s->jobs == 1) {
		if (!(s->dp = dp_make(m, &st)) && st != WH_OK)
			goto out;
		if (s->dp && !(s->lim = malloc(((size_t)m + 1) * sizeof *s->lim))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
		s->t0 = s->rep->probes;
		s->rep->bound_k = s->dp ? s->dp->kmax : 0;
	}
	uint32_t found = 0, last_gap = UINT32_MAX;
	while (m > 0) {
		uint32_t p;
		bool ok;
		/* the first search is the coarse bisection: K alone is the fixed set (empty: it
		 * passes without a check) and is not asked first */
		int64_t lo = !found && mask_empty(result, n) ? 0 : -1;
		bool adj = found == 1 || last_gap == 0;
		if ((st = boundary(s, result, U, m, lo, found > 0, found > 0 && adj, found, masks, &p, &ok)) != WH_OK)
			goto out;
		if (p == 0)
			break; /* K alone fails: nothing left in U */
		uint32_t c = U[p - 1];
		result[c] = 1;
		witness[c] = ok;
		last_gap = m - p;
		m = p - 1;
		if (!found++ && s->ops->progress)
			s->ops->progress(s->ops->ctx, reverse ? "bisect-inputs" : "bisect-outputs", result);
	}
	if (s->ops->progress)
		s->ops->progress(s->ops->ctx, "culprits", result);
	/* 1-minimality: "result minus c" is a subset of the candidate that passed next to c's
	 * boundary; implied while the check is monotone, checked directly otherwise */
	bool all_implied = s->rep->monotone;
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++)
		if (result[i] && !(o->fixed && o->fixed[i])) {
			k++;
			all_implied &= witness[i];
		}
	if (all_implied) {
		s->rep->one_minimal = true;
		s->rep->minimal_implied = k;
	} else {
		st = minimality_pass(s, result);
	}
out:
	if (masks)
		for (uint32_t i = 0; i < 130; i++)
			free(masks[i]);
	free(masks);
	free(U);
	free(witness);
	dp_free(s->dp);
	s->dp = NULL;
	free(s->lim);
	s->lim = NULL;
	return st;
}

/* A prior set this small is proven 1-minimal by its single removals, not searched. */
#define WH_SEARCH_PRIOR_DIRECT 4

/* The prior sets, in order, at most `jobs` a round (the full set's pending check rides in
 * the first): *hit is the first that fails, -1 when none does. A round stops the phase as
 * soon as one of its sets fails, so the set chosen is the same at any -j. */
static enum wh_status prior_phase(struct search *s, int32_t *hit)
{
	const struct wh_search_options *o = s->o;
	enum wh_status st = WH_OK;
	uint32_t jobs = (uint32_t)s->jobs, k = o->n_prior_sets;
	uint8_t **masks = calloc(k ? k : 1, sizeof *masks);
	enum wh_verdict *v = calloc(k ? k : 1, sizeof *v);
	*hit = -1;
	if (!masks || !v) {
		st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < k; i++) {
		if (!(masks[i] = malloc(s->n ? s->n : 1))) {
			st = wh_error(WH_ERR_NOMEM, "reduce: out of memory");
			goto out;
		}
		for (uint32_t x = 0; x < s->n; x++)
			masks[i][x] = o->prior_sets[i][x] || (o->fixed && o->fixed[x]);
	}
	for (uint32_t b = 0, cnt; b < k && *hit < 0; b += cnt) {
		/* the full set's pending check takes a slot of the first round */
		uint32_t room = s->full_pending && jobs > 1 ? jobs - 1 : jobs;
		cnt = k - b < room ? k - b : room;
		uint32_t before = s->rep->probes;
		if ((st = eval_batch(s, masks + b, cnt, v + b)) != WH_OK)
			goto out;
		s->rep->prior_checks += s->rep->probes - before;
		for (uint32_t i = b; i < b + cnt && *hit < 0; i++)
			if (v[i] == WH_VERDICT_FAIL) {
				*hit = (int32_t)i;
				s->rep->prior_size = count_of(masks[i], s->n);
			}
	}
out:
	if (masks)
		for (uint32_t i = 0; i < k; i++)
			free(masks[i]);
	free(masks);
	free(v);
	return st;
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
	rep->monotone = true;
	rep->prior_hit = -1;
	if (o->mode == WH_SEARCH_DDMIN) {
		s.imply = true;
		s.full_pending = o->confirm_full;
		int32_t hit = -1;
		if (o->n_prior_sets && (st = prior_phase(&s, &hit)) != WH_OK)
			goto out;
		rep->prior_hit = hit;
		if (hit < 0 && o->prior_only)
			goto out;
		if (hit >= 0 && rep->prior_size <= WH_SEARCH_PRIOR_DIRECT) {
			/* a small set is proven directly: its single removals in one batch (a right
			 * guess of k layers costs k checks, where the culprit search would bisect) */
			for (uint32_t x = 0; x < n; x++)
				result_mask[x] = o->prior_sets[hit][x] || (o->fixed && o->fixed[x]);
			st = minimality_pass(&s, result_mask);
			goto out;
		}
		st = culprit_search(&s, hit >= 0 ? o->prior_sets[hit] : NULL, result_mask);
		goto out;
	}
	uint32_t lo = 0, hi = n;
	bool coarse_done = false;
	if (o->reduce_outputs && o->reduce_inputs && n > 2) {
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
	{
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
	for (uint32_t i = 0; i < s.n_seen; i++)
		free(s.seen[i].mask);
	free(s.seen);
	free(all);
	free(C);
	return st;
}
