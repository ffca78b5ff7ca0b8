/* tool-search-bench: checks and rounds of whittle's search (reducer/search.h, ddmin) on a
 * simulated monotone check over planted culprits, next to the information bound and to a
 * Polygraphy-style two-sided bisection. Used by scripts/bench-reduce.sh.
 *
 *   tool-search-bench N C1 [C2 ...] [--prior R1,R2,...]
 *   tool-search-bench --random N K TRIALS   (averages over seeded uniform placements)
 *
 * N layers in topological order; the candidate fails iff it keeps every culprit Ci (0-based
 * positions). Prints one line of key=value pairs:
 *   n k info_bound exact_floor bound
 *                           (exact_floor: ceil(log2 C(n,k)) + 1 + the original's check,
 *                            what any exact search needs on some placement; bound: issue
 *                            27's ceil(log2 C(n,k)) + k + 2)
 *   base_checks base_size   (baseline: the original, the shortest failing prefix by
 *                            bisection, the shortest failing suffix of it by bisection;
 *                            its result is the range between, not 1-minimal in general)
 *   j1_checks j4_rounds j8_rounds j1_size same_model
 * Counts of whittle include the driver's check of the original (riding in the first round
 * with -j > 1); the proof of the answer is the search's own check of K alone. With
 * --random: means and maxima, over = placements above the bound at -j 1 (every answer is
 * exact and 1-minimal, else the tool exits 1).
 * With --prior, the positions R1, R2, ... are a ranking (best first), made into the
 * driver's nested candidates (reducer/prior.h: the best one, then the 4 best and every
 * position between them, the list being a chain; a set over half the list is dropped), and
 * whittle also runs prior-first: prior_checks prior_j8_rounds prior_same (the same answer
 * as without the prior) prior_hit. */
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

static uint8_t *prior_sets[2];
static uint32_t n_prior_sets;
static int32_t last_prior_hit;

static enum wh_status run_whittle(struct oracle *o, int jobs, uint8_t *res, bool prior)
{
	o->jobs = (uint32_t)jobs;
	o->checks = o->rounds = 0;
	struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = jobs, .reduce_inputs = true, .reduce_outputs = true,
				       .confirm_full = jobs > 1, .prior_sets = (const uint8_t *const *)prior_sets,
				       .n_prior_sets = prior ? n_prior_sets : 0};
	struct wh_search_ops ops = {.ctx = o, .eval = eval};
	struct wh_search_report rep;
	enum wh_status st = wh_search_run(o->n, &so, &ops, res, &rep);
	last_prior_hit = rep.prior_hit;
	/* the driver: the original's check (-j 1: before the search; -j > 1: in its first round) */
	o->checks += 1;
	o->rounds += jobs > 1 ? 0 : 1;
	if (st == WH_OK && !rep.one_minimal)
		st = WH_ERR_INVALID;
	return st;
}

struct one {
	uint32_t base_checks, base_size, j1, j4r, j4c, j8r, j8c, size;
	bool same, exact;
	uint32_t prior_checks, prior_j8r;
	int32_t prior_hit;
	bool prior_same;
};

/* The nested candidates of a ranking over a chain of n (reducer/prior.h's rule). */
static bool make_prior_sets(uint32_t n, const char *spec)
{
	uint32_t rank[64], r = 0;
	for (const char *p = spec; *p && r < 64;) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);
		if (end == p || v >= n)
			return false;
		rank[r++] = (uint32_t)v;
		p = *end == ',' ? end + 1 : end;
	}
	uint32_t prev = 0;
	for (uint32_t want = 1; n_prior_sets < 2 && r; want *= 4) {
		uint32_t t = want < r ? want : r, lo = n, hi = 0;
		for (uint32_t i = 0; i < t; i++) {
			lo = rank[i] < lo ? rank[i] : lo;
			hi = rank[i] > hi ? rank[i] : hi;
		}
		uint32_t cnt = hi - lo + 1;
		if (cnt <= prev || cnt * 2 > n)
			break;
		uint8_t *s = calloc(n, 1);
		if (!s)
			return false;
		memset(s + lo, 1, cnt);
		prior_sets[n_prior_sets++] = s;
		prev = cnt;
		if (t == r)
			break;
	}
	return true;
}

/* The baseline and whittle at -j 1, 4 and 8 on o's culprits. */
static enum wh_status measure(struct oracle *o, uint8_t *m, uint8_t *r1, uint8_t *r, struct one *x)
{
	o->checks = 1; /* the original */
	uint32_t p = bisect(o, m, 0, o->n, false);
	uint32_t q = bisect(o, m, 0, p, true);
	x->base_checks = o->checks;
	x->base_size = q;
	enum wh_status st = run_whittle(o, 1, r1, false);
	if (st != WH_OK)
		return st;
	x->j1 = o->checks;
	x->size = 0;
	for (uint32_t i = 0; i < o->n; i++)
		x->size += r1[i];
	x->exact = x->size == o->k;
	for (uint32_t c = 0; c < o->k; c++)
		x->exact &= r1[o->culprits[c]] != 0;
	if ((st = run_whittle(o, 4, r, false)) != WH_OK)
		return st;
	x->j4r = o->rounds;
	x->j4c = o->checks;
	x->same = !memcmp(r, r1, o->n);
	if ((st = run_whittle(o, 8, r, false)) != WH_OK)
		return st;
	x->j8r = o->rounds;
	x->j8c = o->checks;
	x->same &= !memcmp(r, r1, o->n);
	if (n_prior_sets) {
		if ((st = run_whittle(o, 1, r, true)) != WH_OK)
			return st;
		x->prior_checks = o->checks;
		x->prior_hit = last_prior_hit;
		x->prior_same = !memcmp(r, r1, o->n);
		if ((st = run_whittle(o, 8, r, true)) != WH_OK)
			return st;
		x->prior_j8r = o->rounds;
		x->prior_same &= !memcmp(r, r1, o->n);
	}
	return WH_OK;
}

int main(int argc, char **argv)
{
	const char *prior = NULL;
	if (argc >= 3 && !strcmp(argv[argc - 2], "--prior")) {
		prior = argv[argc - 1];
		argc -= 2;
	}
	bool random_mode = argc == 5 && !strcmp(argv[1], "--random");
	if (argc < 3 || (!strcmp(argv[1], "--random") && !random_mode)) {
		fprintf(stderr, "usage: tool-search-bench N CULPRIT... | tool-search-bench --random N K TRIALS\n");
		return 2;
	}
	struct oracle o = {.n = (uint32_t)strtoul(argv[random_mode ? 2 : 1], NULL, 10),
			   .k = random_mode ? (uint32_t)strtoul(argv[3], NULL, 10) : (uint32_t)(argc - 2)};
	uint32_t trials = random_mode ? (uint32_t)strtoul(argv[4], NULL, 10) : 1;
	if (!o.n || !o.k || o.k > o.n || !trials) {
		fprintf(stderr, "tool-search-bench: need 0 < K <= N and TRIALS > 0\n");
		return 2;
	}
	if (prior && (random_mode || !make_prior_sets(o.n, prior))) {
		fprintf(stderr, "tool-search-bench: --prior takes positions below N, with culprits given (not --random)\n");
		return 2;
	}
	o.culprits = calloc(o.k, sizeof *o.culprits);
	uint8_t *m = calloc(o.n, 1), *r1 = calloc(o.n, 1), *r = calloc(o.n, 1);
	if (!o.culprits || !m || !r1 || !r)
		return 3;
	for (uint32_t i = 0; i < o.k && !random_mode; i++) {
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
	 * checked: t checks tell apart and prove at most 2^(t-1) placements), plus the
	 * original's check */
	uint32_t exact_floor = info + 1 + 1;
	/* issue 27's bound: ceil(log2 C(n,k)) + k + 2 (for one culprit ceil(log2 n) + 3) */
	uint32_t issue = info + o.k + 2;
	struct one x;
	if (!random_mode) {
		if (measure(&o, m, r1, r, &x) != WH_OK || !x.exact)
			return 1;
		printf("n=%u k=%u info_bound=%u exact_floor=%u bound=%u base_checks=%u base_size=%u j1_checks=%u j4_rounds=%u "
		       "j4_checks=%u j8_rounds=%u j8_checks=%u j1_size=%u same_model=%s",
		       o.n, o.k, info, exact_floor, issue, x.base_checks, x.base_size, x.j1, x.j4r, x.j4c, x.j8r, x.j8c, x.size,
		       x.same ? "yes" : "no");
		if (n_prior_sets)
			printf(" prior_checks=%u prior_j8_rounds=%u prior_same=%s prior_hit=%s", x.prior_checks, x.prior_j8r,
			       x.prior_same ? "yes" : "no", x.prior_hit >= 0 ? "yes" : "no");
		printf("\n");
	} else {
		/* uniform placements of K distinct culprits, the same for every build (seeded) */
		uint64_t seed = 0x9e3779b97f4a7c15ull ^ ((uint64_t)o.n << 32) ^ o.k;
		double base = 0, j1 = 0, j8r = 0;
		uint32_t j1_max = 0, base_max = 0, j8r_max = 0, over = 0;
		bool same = true;
		for (uint32_t t = 0; t < trials; t++) {
			for (uint32_t i = 0; i < o.k; i++) {
				bool dup;
				do {
					seed = seed * 6364136223846793005ull + 1442695040888963407ull;
					o.culprits[i] = (uint32_t)((seed >> 33) % o.n);
					dup = false;
					for (uint32_t j = 0; j < i; j++)
						dup |= o.culprits[j] == o.culprits[i];
				} while (dup);
			}
			if (measure(&o, m, r1, r, &x) != WH_OK || !x.exact)
				return 1;
			base += x.base_checks;
			j1 += x.j1;
			j8r += x.j8r;
			same &= x.same;
			if (x.j1 > j1_max)
				j1_max = x.j1;
			if (x.j8r > j8r_max)
				j8r_max = x.j8r;
			over += x.j1 > issue;
			if (x.base_checks > base_max)
				base_max = x.base_checks;
		}
		printf("n=%u k=%u trials=%u info_bound=%u exact_floor=%u bound=%u base_avg=%.2f base_max=%u j1_avg=%.2f j1_max=%u over=%u "
		       "j8_rounds_avg=%.2f j8_rounds_max=%u same_model=%s\n",
		       o.n, o.k, trials, info, exact_floor, issue, base / trials, base_max, j1 / trials, j1_max, over, j8r / trials, j8r_max,
		       same ? "yes" : "no");
	}
	for (uint32_t i = 0; i < n_prior_sets; i++)
		free(prior_sets[i]);
	free(o.culprits);
	free(m);
	free(r1);
	free(r);
	return 0;
}
