/* Search strategies for the minimal failing subgraph, over an abstract list of n nodes in
 * topological order. A candidate is a mask (one byte per node, 1 = kept); the caller's
 * eval callback turns a batch of candidates into verdicts (running them in parallel when it
 * can), caches them, and counts checks. The strategies only ever ask for candidates that are
 * subsets of the current failing set, so every candidate is a valid subgraph for a caller
 * that feeds cut tensors with reference values.
 *
 *  - ddmin (the default): culprits one at a time, as group testing. K (nodes known to be
 *    needed) starts empty and U is the list; "K + the first p nodes of U" fails for the
 *    whole U. The smallest failing p names the last culprit U[p-1] (the first search is
 *    the outputs-side bisection); it joins K and U shrinks to the nodes before it. Each
 *    next search tests K alone first (is anything left to find?) and, after the first
 *    culprit or after two adjacent ones, the node next to the last culprit, then bisects.
 *    With jobs = N each round probes N cut points of the bracket at once ((N+1)-ary
 *    search). At -j 1 each search is instead a bisection tree built at run time from a
 *    dynamic program over the states "i culprits found, m nodes left" (search.c, "Trees
 *    from the dynamic program"): for lists of up to WH_SEARCH_DP_MAX nodes, k culprits
 *    among n cost at most ceil(log2 C(n,k)) + k + 1 checks for every k up to
 *    rep->bound_k (at most WH_SEARCH_DP_KMAX), K alone being the proof of the answer;
 *    today's probes (K alone first, the neighbour, the midpoint) are kept wherever the
 *    tree has room for them. For a monotone check (a failing candidate keeps failing when nodes are added)
 *    the answer is the same for any N: every strategy finds the same smallest p. The result
 *    is 1-minimal by construction: "result minus c" is a subset of the candidate that
 *    passed next to c's boundary. That verdict is implied by monotonicity, and used only
 *    while every verdict seen is consistent with it; once the check has shown itself not
 *    monotone, every single removal is checked directly (and nodes are dropped where it
 *    still fails). While the check is monotone, a candidate contained in a passing one, or
 *    containing a failing one, is answered without a check (counted as implied).
 *  - bisect: the shortest failing prefix and the shortest failing suffix of the list,
 *    searched side by side (their probes share each batch; O(log n) checks each), then the
 *    range between them is checked once; if it does not fail (a check that is not
 *    monotone), the shortest failing suffix of the prefix is searched instead, as
 *    Polygraphy's bisect does. Probes are always midpoints, so the answer does not depend
 *    on the number of jobs; idle slots run the probes the search may need next.
 *  - linear: bisect, then removal of one node at a time, then the 1-minimality pass.
 * A "skip" verdict (check cannot tell) never lets a reduction through and never implies
 * anything.
 *
 * Prior-first (o->prior_sets, ddmin): candidates built from a ranking of the nodes are
 * checked first; the first that fails becomes the list searched (a right guess costs its
 * own check instead of the whole bisection), and when none fails the search above runs
 * with their verdicts kept. */
#ifndef WH_SEARCH_H
#define WH_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/status.h"
#include "reducer/check.h"

enum wh_search_mode { WH_SEARCH_BISECT = 0, WH_SEARCH_DDMIN, WH_SEARCH_LINEAR };

/* The budgeted trees of -j 1 (ddmin): computed for lists of up to this many nodes (a few ms
 * at most), for up to this many culprits. */
#define WH_SEARCH_DP_MAX 4096
#define WH_SEARCH_DP_KMAX 4

struct wh_search_ops {
	void *ctx;
	/* Fills verdicts[i] for masks[i], i < n. An empty mask is never passed. */
	enum wh_status (*eval)(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *verdicts);
	/* Called after each phase with the current failing mask (may be NULL). */
	void (*progress)(void *ctx, const char *phase, const uint8_t *mask);
};

struct wh_search_options {
	enum wh_search_mode mode;
	int jobs;               /* probes per round, >= 1 */
	bool reduce_inputs;     /* bisect from the inputs side */
	bool reduce_outputs;    /* bisect from the outputs side */
	const uint8_t *fixed;   /* nodes every candidate keeps (may be NULL) */
	/* The full set has not been checked yet: with jobs > 1 its check rides in the first
	 * batch of the search (saving a round); if it does not fail, the search stops with
	 * WH_ERR_INVALID. With jobs == 1 the caller confirms it first. */
	bool confirm_full;
	/* Prior-first (ddmin only): nested candidates, smallest first, made by the caller from a
	 * ranking of the nodes (whittle's own emulation, or scores the user gives). They are
	 * checked in order, at most `jobs` a round, before anything else; the first that fails
	 * is searched instead of the whole list (the nodes outside it are never asked again).
	 * When none fails the plain search runs over the whole list, their verdicts kept (a
	 * monotone check answers their subsets without a check), so a wrong prior costs
	 * n_prior_sets checks at most. The set searched is the first failing one in order,
	 * whatever -j is. The fixed nodes join every candidate. */
	const uint8_t *const *prior_sets;
	uint32_t n_prior_sets;
	bool prior_only;        /* stop when no prior set fails (result_mask untouched) */
	/* -j > 1 (ddmin): the round that checks K alone leaves a slot for the caller's second
	 * run of it (reduce --confirm 2 and up: the result's second run rides there; precision:
	 * its cut points as they were). Off: that slot gets one more cut point (the widest
	 * gap's midpoint), the round's other cut points unchanged. */
	bool rerun_slot;
};

struct wh_search_report {
	bool one_minimal;        /* verified: removing any single node passes */
	bool inconsistent;       /* unused: contradictions are the caller's (re-runs) */
	char note[512];          /* e.g. "the check is not monotone: ..." */
	uint32_t bisect_lo, bisect_hi; /* range after the coarse phase [lo, hi) (bisect, linear) */
	uint32_t probes;         /* candidates asked of eval (each a check or a cache hit) */
	uint32_t rounds;         /* eval batches, a batch of more than `jobs` counting as several */
	uint32_t implied;        /* verdicts implied by monotonicity, not asked of eval */
	uint32_t minimal_implied; /* of the result's single removals, those implied (ddmin) */
	bool monotone;           /* every verdict seen was consistent with monotonicity */
	int32_t prior_hit;       /* the prior set searched (index), -1: none failed (or none given) */
	uint32_t prior_checks;   /* checks spent on the prior sets */
	uint32_t prior_size;     /* nodes of the prior set searched */
	uint32_t bound_k;        /* -j 1, ddmin: the budgeted trees hold for up to this many culprits (0: plain bisection) */
};

/* Starts from a failing full set (the caller has confirmed the original fails) and writes
 * the result into result_mask (n bytes). */
enum wh_status wh_search_run(uint32_t n, const struct wh_search_options *o, const struct wh_search_ops *ops,
			     uint8_t *result_mask, struct wh_search_report *rep);

#endif
