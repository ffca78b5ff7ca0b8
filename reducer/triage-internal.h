/* Private to triage.c (the flowchart) and triage-report.c (its report): the state of one
 * triage run. The flowchart fills it step by step; the report only reads it. Everything
 * malloc'd here is owned by wh_triage_run, which frees it. */
#ifndef WH_TRIAGE_INTERNAL_H
#define WH_TRIAGE_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/compare.h"
#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/names.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"
#include "reducer/precision-search.h"
#include "reducer/reduce.h"
#include "reducer/tactic-diff.h"
#include "reducer/triage.h"

/* One layer of the layerwise comparison: its worst output. */
struct lw_layer {
	uint32_t node;
	uint32_t value;
	struct wh_compare_stats s;
	double rel;  /* relative L2 error; INFINITY: inf/NaN where FP32 is finite; NAN: not compared */
	bool fails;
};

struct step {
	char name[64];
	char text[2048];
};

#define MAX_STEPS 10

struct tri {
	const struct wh_model *m;
	const struct wh_graph *g;
	const struct wh_tensor_set *inputs;
	const struct wh_triage_options *o;
	struct wh_triage_report *rep;
	uint32_t *order, *pos; /* topological order; node -> position in it */
	struct wh_precision_config pc;
	struct wh_tensor_set ref;  /* FP32: every tensor, and the inputs */
	char dir[PATH_MAX];
	char inputs_dir[PATH_MAX + 16], golden_dir[PATH_MAX + 16], prec_path[PATH_MAX + 32], builds_dir[PATH_MAX + 16];
	FILE *logf;                /* DIR/triage.log: the sub-drivers' progress */
	struct wh_check *c_raw;    /* the user's check; NULL: built-in */
	struct wh_check *c_reduce; /* with {tactics} and {precisions} fixed (reduce passes neither) */
	struct wh_check *c_prec;   /* with {tactics} and {golden} fixed (the precision search passes neither) */
	char **w_reduce, **w_prec; /* their words */
	char *check_display;
	double t0;
	atomic_uint checks;        /* step 1 checks -j builds at once */
	int check_threads;         /* executor threads of a built-in check (fewer while -j run) */

	/* step 1 */
	uint32_t n_builds, n_good, n_bad, n_skip;
	struct wh_tactic_plan *plans;
	enum wh_verdict *verdicts;
	char (*why)[192];
	bool no_tactics;
	struct wh_tactic_diff diff;
	struct wh_confirm_report cr;
	bool confirm_run;
	int32_t culprit, fixed_build, bad_build;
	uint32_t swaps;
	const struct wh_tactic_plan *pin; /* the failing build's plan, pinned in steps 2-4 */

	/* step 2 */
	struct lw_layer *lw;
	uint32_t n_lw;
	int32_t first_fail; /* index into lw: where the failure starts (executor/diagnose.h), the layer
			     * steps 3-6 work with; else the first failing one */
	int32_t tol_first;  /* index into lw: the first tensor over the tolerance, topological order */
	uint8_t start_kind; /* enum wh_diag_kind of first_fail (WH_DIAG_NONE: not diagnosed) */
	uint32_t lw_failing;

	/* step 3 */
	bool single_run;
	uint32_t alone_checks;     /* a layer checked alone (step 3, or the flaky culprit) */
	enum wh_verdict single_v;
	struct wh_compare_stats single_s;
	bool single_s_valid;
	char single_why[256];

	/* step 4 */
	bool reduce_run;
	enum wh_status reduce_st;
	char reduce_err[512];
	struct wh_reduce_report rr;

	/* step 5 */
	bool prec_run;
	enum wh_status prec_st;
	char prec_err[512];
	struct wh_precision_search_report pr;
	struct wh_precision_config keep;
	uint8_t *keep_mask;
	uint32_t n_keep;

	/* the answer */
	const struct wh_model *answer; /* the repro model */
	uint8_t *answer_nodes;         /* its layers, as nodes of the original */
	uint32_t n_answer;
	bool repro_tactics;            /* the repro pins a tactic replay */
	char repro_cmd[4096];
	bool repro_checked;
	bool repro_fails;          /* command.sh still fails (its exit is a failing verdict) */
	int repro_exit;
	char repro_out[512];
	char plot_path[PATH_MAX + 32], pic_path[PATH_MAX + 32], dot_path[PATH_MAX + 32];
	bool plot_ok, pic_ok, pic_graphviz;

	struct step steps[MAX_STEPS];
	uint32_t n_steps;
	char finding[4096];
	char next[4096];
};

/* One line on the log and in DIR/triage.log, prefixed "triage: ". */
void wh_triage_say(struct tri *T, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static inline const char *wh_triage_node_name(const struct wh_node *n)
{
	return n->name && *n->name ? n->name : "(unnamed)";
}

/* The FP32 reference value of a tensor, or NULL. */
static inline const struct wh_tensor *wh_triage_ref(const struct tri *T, const char *name)
{
	return name ? wh_tensor_set_find(&T->ref, name) : NULL;
}

/* ---- the report (triage-report.c) ---- */

const char *wh_triage_outcome_words(enum wh_triage_outcome o);
/* How repro/command.sh ended, in words. */
void wh_triage_repro_words(const struct tri *T, char *buf, size_t size);
/* T->finding and T->next: what was found and what to do, in words. */
void wh_triage_compose_finding(struct tri *T);
/* DIR/layer-errors.svg (the layerwise comparison) and DIR/subgraph.{dot,svg} (the answer). */
enum wh_status wh_triage_write_plot(struct tri *T);
enum wh_status wh_triage_write_picture(struct tri *T);
/* DIR/report.md and DIR/repro/report.md (a warning when they cannot be written). */
void wh_triage_write_report(struct tri *T);
/* The result on stdout: one JSON object, or the answer in words. */
void wh_triage_print_json(struct tri *T);
void wh_triage_print_summary(struct tri *T, FILE *f);

#endif
