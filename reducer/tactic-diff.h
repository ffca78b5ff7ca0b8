/* Flaky-tactic localization: which layer's tactic breaks some builds, proven. (The executor's
 * tactics are the kernels' alternative implementations, executor/builder.h; this module
 * compares the choices that builds made.)
 *
 * Two parts, each usable on its own, and the replay files they work on:
 *  - the tactic diff: given builds (tactic plans) sorted into good and bad by a check, the
 *    tactics each layer uses only in bad builds ("suspects"), ranked by how strongly they
 *    separate bad from good: score = (bad builds with it) / (bad builds) - (good builds with
 *    it) / (good builds), ties by layer then tactic name. A suspect is never seen in a good
 *    build, so its score is the share of bad builds that use it;
 *  - confirmation: for each suspect, most likely first, its tactic is swapped into a good
 *    build for that layer only ("forward" swap) and the check is run; when that build turns
 *    bad, the reverse swap (a bad build using the suspect, given the good build's tactic for
 *    that layer) must turn it good. Both: confirmed. Forward only: the tactic breaks builds
 *    but the bad build has another cause too ("sufficient"). Forward stays good: cleared.
 *    Once a suspect is confirmed, the bad builds that use it are explained; the rest are
 *    diffed again and confirmation goes on until every bad build is explained or no
 *    suspect is left. The swaps themselves (editing replay files, running the check) are
 *    the caller's, through struct wh_confirm_ops, so the logic is testable on synthetic
 *    builds (reducer/builds.h runs them on real builds).
 *
 * Ownership: struct wh_tactic_diff and struct wh_tactic_replays are caller-owned
 * (_init/_release); plans passed in are borrowed. */
#ifndef WH_TACTIC_DIFF_H
#define WH_TACTIC_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/builder.h"
#include "reducer/check.h"

/* ---- the diff ---- */

enum wh_suspect_state {
	WH_SUSPECT_UNTESTED = 0,
	WH_SUSPECT_CLEARED,    /* swapped into a good build, the build stayed good */
	WH_SUSPECT_CONFIRMED,  /* turns a good build bad, and a bad build good when swapped out */
	WH_SUSPECT_SUFFICIENT, /* turns a good build bad, but the bad build stays bad without it */
	WH_SUSPECT_UNCLEAR,    /* a swap's check could not tell (exit 125, timeout) */
};

const char *wh_suspect_state_name(enum wh_suspect_state s);

struct wh_tactic_suspect {
	char *layer, *tactic;      /* malloc'd */
	uint32_t n_bad, n_good;    /* builds that use it */
	double score;
	enum wh_suspect_state state;
	/* the builds of the swaps (indices into the build list), -1 when not run */
	int32_t good_build, bad_build;
	enum wh_verdict forward, reverse;
	bool forward_run, reverse_run;
	uint32_t forward_seq, reverse_seq; /* the swaps' numbers (struct wh_tactic_swap.seq) */
};

struct wh_tactic_diff {
	uint32_t n_good, n_bad;    /* builds compared */
	uint32_t n, cap;
	struct wh_tactic_suspect *s; /* ranked, most likely first */
};

void wh_tactic_diff_init(struct wh_tactic_diff *d);
void wh_tactic_diff_release(struct wh_tactic_diff *d);

/* Diffs builds: plans[i] with verdicts[i]; builds with a skip verdict, and bad builds with
 * skip_bad[i] set (skip_bad may be NULL), take no part. */
enum wh_status wh_tactic_diff_compute(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts,
				      uint32_t n, const bool *skip_bad, struct wh_tactic_diff *out);

/* Copies the confirmation results of old's suspects into the same suspects of d (the
 * builds of old must be the first builds of d's, so their indices stay valid): a suspect
 * already tested is not tested again. */
void wh_tactic_diff_inherit(struct wh_tactic_diff *d, const struct wh_tactic_diff *old);

/* The suspect (layer, tactic) of d, or NULL. */
struct wh_tactic_suspect *wh_tactic_diff_find(const struct wh_tactic_diff *d, const char *layer, const char *tactic);

/* ---- confirmation ---- */

/* One swap: build `base`'s plan with the choice of build `donor` for `layer`. */
struct wh_tactic_swap {
	uint32_t base, donor;
	const char *layer;
	const char *tactic;   /* the donor's tactic for the layer */
	bool forward;         /* base good, donor bad (else the reverse swap) */
	uint32_t seq;         /* the swap's number: first_seq, first_seq + 1, ... */
};

struct wh_confirm_ops {
	void *ctx;
	/* Runs the check on the swapped plan; *out is its verdict. A status other than WH_OK
	 * stops the confirmation (a broken check). */
	enum wh_status (*check_swap)(void *ctx, const struct wh_tactic_swap *sw, enum wh_verdict *out);
	/* Called after each suspect is tested; may be NULL. */
	void (*on_suspect)(void *ctx, const struct wh_tactic_suspect *s);
};

struct wh_confirm_options {
	uint32_t max_suspects; /* suspects tested at most; 0: all */
	uint32_t first_seq;    /* number of the first swap (0 counts as 1) */
};

struct wh_confirm_report {
	uint32_t checks;          /* swap checks run */
	uint32_t tested, confirmed, sufficient;
	uint32_t bad_unexplained; /* bad builds that use no confirmed suspect */
};

/* diff must have been computed on the same builds (wh_tactic_diff_compute with skip_bad
 * NULL); its suspects receive their states. Suspects whose state is already set (e.g.
 * cleared by an earlier confirmation on fewer builds) are not tested again. */
enum wh_status wh_tactic_confirm(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts, uint32_t n,
				 const struct wh_confirm_options *o, const struct wh_confirm_ops *ops,
				 struct wh_tactic_diff *diff, struct wh_confirm_report *rep);

/* The best good build: the smallest total measured time (the sum of its choices' ms; a
 * plan without times counts as 0), ties by index. WH_ERR_NOT_FOUND when none is good. */
enum wh_status wh_tactic_best_good(const struct wh_tactic_plan *const *plans, const enum wh_verdict *verdicts,
				   uint32_t n, uint32_t *index_out);

/* ---- replay files ---- */

struct wh_tactic_replays {
	uint32_t n;
	char **paths;                 /* malloc'd */
	struct wh_tactic_plan *plans;
};

void wh_tactic_replays_init(struct wh_tactic_replays *r);
void wh_tactic_replays_release(struct wh_tactic_replays *r);
/* Appends the replay file at path, or every *.json file of the folder at path (sorted by
 * name; not recursive). Whittle's and Polygraphy's formats (executor/builder.h). An empty
 * folder is WH_ERR_NOT_FOUND. */
enum wh_status wh_tactic_replays_add(struct wh_tactic_replays *r, const char *path);

/* Writes a copy of the replay file base_path where `layer` takes its entry from
 * donor_path, whatever the format (whittle's "layers" or Polygraphy's "replay"); other
 * fields are kept as they are. */
enum wh_status wh_tactic_replay_swap(const char *base_path, const char *donor_path, const char *layer,
				     const char *out_path);

#endif
