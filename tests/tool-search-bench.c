/* tool-search-bench: checks and rounds of whittle's search (reducer/search.h, ddmin) on a
 * simulated monotone check over planted culprits, next to the information bound and to a
 * Polygraphy-style two-sided bisection. Used by scripts/bench-reduce.sh.
 *
 *   tool-search-bench N C1 [C2 ...]
 *
 * N layers in topological order; the candidate fails iff it keeps every culprit Ci (0-based
 * positions). Prints one line of key=value pairs:
 *   n k info_bound exact_floor issue_bound
 *                           (exact_floor: ceil(log2 C(n,k)) + 1 + the driver's two checks,
 *                            what any exact search needs on some placement)
 *   base_checks base_size   (baseline: the original, the shortest failing prefix by
 *                            bisection, the shortest failing suffix of it by bisection;
 *                            its result is the range between, not 1-minimal in general)
 *   j1_checks j4_rounds j8_rounds j1_size same_model
 * Counts of whittle include the driver's checks: the original's (riding in the first
 * round with -j > 1) and the result's re-run (one round). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reducer/search.h"

struct oracle {
	uint32_t n, k, jobs;
	uint32_t *culprits;
	uint32_t checks, rounds;
};

static bool fails(const struct oracle *o, const uint8_t *m)
{
	for (uint32_t c = 0; c < o->k; c++)
		if (!m[o->culprits[c]])
			return false;
	return true;
}

static enum wh_status eval(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *v)
{
	struct oracle *o = ctx;
	for (uint32_t i = 0; i < n; i++)
		v[i] = fails(o, masks[i]) ? WH_VERDICT_FAIL : WH_VERDICT_PASS;
	o->checks += n;
	o->rounds += (n + o->jobs - 1) / o->jobs;
	return WH_OK;
}

static uint32_t ceil_log2(double x)
{
	uint32_t r = 0;
	while (ldexp(1.0, (int)r) < x - 1e-9)
		r++;
	return r;
}

/* Shortest failing prefix (or suffix) length of [0, n) by bisection, counting checks. */
static uint32_t bisect(struct oracle *o, uint8_t *m, uint32_t start, uint32_t end, bool suffix)
{
	uint32_t lo = 0, hi = end - start;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo + 1) / 2;
		memset(m, 0, o->n);
		for (uint32_t i = 0; i < mid; i++)
			m[suffix ? end - 1 - i : start + i] = 1;
		o->checks++;
		if (fails(o, m))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

static enum wh_status run_whittle(struct oracle *o, int jobs, uint8_t *res)
{
	o->jobs = (uint32_t)jobs;
	o->checks = o->rounds = 0;
	struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = jobs, .reduce_inputs = true, .reduce_outputs = true,
				       .confirm_full = jobs > 1};
	struct wh_search_ops ops = {.ctx = o, .eval = eval};
	struct wh_search_report rep;
	enum wh_status st = wh_search_run(o->n, &so, &ops, res, &rep);
	/* the driver: the original's check (-j 1: before the search) and the result's re-run */
	o->checks += jobs > 1 ? 1 : 2;
	o->rounds += jobs > 1 ? 1 : 2;
	if (st == WH_OK && !rep.one_minimal)
		st = WH_ERR_INVALID;
	return st;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: tool-search-bench N CULPRIT...\n");
		return 2;
	}
	struct oracle o = {.n = (uint32_t)strtoul(argv[1], NULL, 10), .k = (uint32_t)(argc - 2)};
	o.culprits = calloc(o.k, sizeof *o.culprits);
	uint8_t *m = calloc(o.n, 1), *r1 = calloc(o.n, 1), *r = calloc(o.n, 1);
	if (!o.culprits || !m || !r1 || !r)
		return 3;
	for (uint32_t i = 0; i < o.k; i++) {
		o.culprits[i] = (uint32_t)strtoul(argv[2 + i], NULL, 10);
		if (o.culprits[i] >= o.n) {
			fprintf(stderr, "tool-search-bench: culprit %u is not below N=%u\n", o.culprits[i], o.n);
			return 2;
		}
	}
	/* information bound: ceil(log2 C(n, k)) */
	double lc = lgamma(o.n + 1.0) - lgamma(o.k + 1.0) - lgamma(o.n - o.k + 1.0);
	uint32_t info = (uint32_t)ceil(lc / log(2.0) - 1e-9);
	/* what an exact search needs on some placement: info + 1 (the result itself must be
	 * checked: t checks tell apart and prove at most 2^(t-1) placements), plus the driver's
	 * two (the original's check, the result's re-run) */
	uint32_t exact_floor = info + 1 + 2;
	/* the issue's bounds: ceil(log2 n) + 3 for one culprit, k (ceil(log2(n/k)) + 3) + 2 for k */
	uint32_t issue = o.k == 1 ? ceil_log2(o.n) + 3 : o.k * (ceil_log2((double)o.n / o.k) + 3) + 2;
	/* baseline */
	o.checks = 1; /* the original */
	uint32_t p = bisect(&o, m, 0, o.n, false);
	uint32_t q = bisect(&o, m, 0, p, true);
	uint32_t base_checks = o.checks, base_size = q;
	if (run_whittle(&o, 1, r1) != WH_OK)
		return 1;
	uint32_t j1 = o.checks, size = 0;
	for (uint32_t i = 0; i < o.n; i++)
		size += r1[i];
	if (run_whittle(&o, 4, r) != WH_OK)
		return 1;
	uint32_t j4r = o.rounds, j4c = o.checks;
	bool same = !memcmp(r, r1, o.n);
	if (run_whittle(&o, 8, r) != WH_OK)
		return 1;
	uint32_t j8r = o.rounds, j8c = o.checks;
	same &= !memcmp(r, r1, o.n);
	printf("n=%u k=%u info_bound=%u exact_floor=%u issue_bound=%u base_checks=%u base_size=%u j1_checks=%u j4_rounds=%u j4_checks=%u "
	       "j8_rounds=%u j8_checks=%u j1_size=%u same_model=%s\n",
	       o.n, o.k, info, exact_floor, issue, base_checks, base_size, j1, j4r, j4c, j8r, j8c, size, same ? "yes" : "no");
	free(o.culprits);
	free(m);
	free(r1);
	free(r);
	return 0;
}
