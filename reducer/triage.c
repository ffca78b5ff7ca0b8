#include "reducer/triage.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h" /* wh_tensor_get_f64 */
#include "graph/extract.h"
#include "graph/onnx-io.h"
#include "graph/shape.h"
#include "graph/topo.h"
#include "reducer/precision-search.h"
#include "reducer/reduce.h"
#include "reducer/report-svg.h"
#include "reducer/tactics.h"
#include "graph/os.h"

const char *wh_triage_outcome_name(enum wh_triage_outcome o)
{
	switch (o) {
	case WH_TRIAGE_PASSES: return "passes";
	case WH_TRIAGE_FLAKY: return "flaky-tactic";
	case WH_TRIAGE_SINGLE_LAYER: return "single-layer";
	case WH_TRIAGE_SUBGRAPH: return "subgraph";
	default: return "unlocalized";
	}
}

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
	uint32_t checks;

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
	int32_t first_fail; /* index into lw */
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

/* Paths and texts built from user-given names: cut short rather than overflow. */
static void bprintf(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bprintf(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

/* Appends to a text buffer, cutting short at its end. */
static void bcat(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void bcat(char *out, size_t size, const char *fmt, ...)
{
	size_t len = strnlen(out, size);
	if (len + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, size - len, fmt, ap);
	va_end(ap);
}

static void say(struct tri *T, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct tri *T, const char *fmt, ...)
{
	va_list ap;
	if (T->o->log) {
		va_start(ap, fmt);
		fputs("triage: ", T->o->log);
		vfprintf(T->o->log, fmt, ap);
		fputc('\n', T->o->log);
		fflush(T->o->log);
		va_end(ap);
	}
	if (T->logf) {
		va_start(ap, fmt);
		fputs("triage: ", T->logf);
		vfprintf(T->logf, fmt, ap);
		fputc('\n', T->logf);
		fflush(T->logf);
		va_end(ap);
	}
}

static struct step *add_step(struct tri *T, const char *name)
{
	if (T->n_steps == MAX_STEPS)
		T->n_steps--; /* cannot happen with the fixed flowchart; keep the last slot */
	struct step *s = &T->steps[T->n_steps++];
	bprintf(s->name, sizeof s->name, "%s", name);
	s->text[0] = '\0';
	return s;
}

static const char *pname(enum wh_precision p)
{
	return wh_precision_name(p);
}

static const char *node_name(const struct wh_node *n)
{
	return n->name && *n->name ? n->name : "(unnamed)";
}

static bool is_constant(const struct wh_node *n)
{
	return !strcmp(n->op_type, "Constant") && (!n->domain || !*n->domain);
}

static const struct wh_tensor *ref_find(const struct tri *T, const char *name)
{
	return name ? wh_tensor_set_find(&T->ref, name) : NULL;
}

/* ---- checks ---- */

/* Runs model (the original or a part of it) at the target precision with plan pinned and
 * compares its outputs with the FP32 reference values; the first failing output's stats go
 * to *worst (when not NULL). */
static enum wh_status builtin_check(struct tri *T, const struct wh_model *model, const struct wh_tactic_plan *plan,
				    enum wh_verdict *v, struct wh_compare_stats *worst, char *why, size_t wsize)
{
	struct wh_engine_options eo = {.threads = T->o->threads, .precision = &T->pc, .tactics = plan,
				       .faulty_tactic = T->o->faulty_tactic};
	struct wh_engine *e = NULL;
	struct wh_tensor_set ins, outs;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&outs);
	const struct wh_graph *g = model->graph;
	enum wh_status st = wh_engine_create(model, &eo, &e);
	for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++) {
		const struct wh_value *val = &g->values[g->inputs[i]];
		if (val->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = ref_find(T, val->name);
		if (!t)
			st = wh_error(WH_ERR_NOT_FOUND, "tensor '%s': no reference value (internal: the FP32 run did not keep it)", val->name);
		else
			st = wh_tensor_set_add(&ins, val->name, -1, t);
	}
	if (st == WH_OK)
		st = wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &outs);
	*v = WH_VERDICT_PASS;
	bprintf(why, wsize, "outputs within atol %g rtol %g of FP32", T->o->compare.atol, T->o->compare.rtol);
	for (size_t i = 0; i < outs.n && st == WH_OK; i++) {
		const struct wh_tensor *r = ref_find(T, outs.items[i].name);
		if (!r || outs.items[i].t.dtype == WH_DT_STRING)
			continue;
		struct wh_compare_stats cs;
		if ((st = wh_compare_tensors(&outs.items[i].t, r, &T->o->compare, &cs)) != WH_OK)
			break;
		if (worst && (i == 0 || *v == WH_VERDICT_PASS))
			*worst = cs;
		if (!cs.pass || !cs.comparable) {
			*v = WH_VERDICT_FAIL;
			if (cs.comparable)
				bprintf(why, wsize, "output '%s' differs from FP32 (max abs %.3g, max rel %.3g)", outs.items[i].name, cs.max_abs,
					cs.max_rel);
			else
				bprintf(why, wsize, "output '%s': %s", outs.items[i].name, cs.reason);
			break;
		}
	}
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&outs);
	wh_engine_destroy(e);
	T->checks++;
	return st;
}

static enum wh_status external_check(struct tri *T, const struct wh_check *c, const struct wh_check_vars *vars,
				     enum wh_verdict *v, char *why, size_t wsize)
{
	struct wh_check_result r = {0};
	enum wh_status st = wh_check_run(c, vars, &r);
	T->checks++;
	if (st != WH_OK)
		return st;
	*v = r.verdict;
	if (!r.signal && (r.exit_code == 126 || r.exit_code == 127)) {
		char *line = wh_check_command_line(c, vars);
		st = wh_error(WH_ERR_CHECK, "check: exited %d (a command inside it was not found or is not executable: %s; output: %.200s)",
			      r.exit_code, line ? line : "?", r.output ? r.output : "");
		free(line);
	}
	if (r.signal)
		bprintf(why, wsize, "check %s (signal %d)", r.why ? r.why : "", r.signal);
	else
		bprintf(why, wsize, "check %s (exit %d)", r.why ? r.why : "", r.exit_code);
	if (T->logf) {
		char *line = wh_check_command_line(c, vars);
		fprintf(T->logf, "check: %s -> %s, %s\n", line ? line : "?", wh_verdict_name(r.verdict), why);
		free(line);
	}
	wh_check_result_release(&r);
	return st;
}

/* A copy of the user's check with some placeholders replaced for good: the sub-drivers that
 * do not pass them still hand the check a consistent set. The check borrows the words, so
 * they are returned to the caller (*words_out, NULL-terminated) and freed with free_words
 * after the check is destroyed. */
static void free_words(char **w)
{
	for (size_t i = 0; w && w[i]; i++)
		free(w[i]);
	free(w);
}

static enum wh_status derived_check(const struct wh_check_options *co, const char *const *keys, const char *const *vals,
				    int n, char ***words_out, struct wh_check **out)
{
	char **words = calloc((size_t)co->argc + 1, sizeof *words);
	if (!words)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	enum wh_status st = WH_OK;
	for (int i = 0; i < co->argc && st == WH_OK; i++) {
		const char *w = co->argv[i];
		size_t cap = strlen(w) + 1;
		for (int k = 0; k < n; k++)
			for (const char *p = strstr(w, keys[k]); p; p = strstr(p + 1, keys[k]))
				cap += strlen(vals[k]);
		char *s = malloc(cap);
		if (!s) {
			st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
			break;
		}
		size_t len = 0;
		for (const char *p = w; *p;) {
			int hit = -1;
			for (int k = 0; k < n && hit < 0; k++)
				if (!strncmp(p, keys[k], strlen(keys[k])))
					hit = k;
			if (hit >= 0) {
				memcpy(s + len, vals[hit], strlen(vals[hit]));
				len += strlen(vals[hit]);
				p += strlen(keys[hit]);
			} else {
				s[len++] = *p++;
			}
		}
		s[len] = '\0';
		words[i] = s;
	}
	if (st == WH_OK) {
		struct wh_check_options c2 = *co;
		c2.argv = words;
		st = wh_check_create(&c2, out);
	}
	if (st != WH_OK) {
		free_words(words);
		return st;
	}
	*words_out = words;
	return WH_OK;
}

/* ---- setup ---- */

/* The FP32 reference of every tensor (each op's default implementation), and the inputs. */
static enum wh_status reference_run(struct tri *T)
{
	struct wh_engine *e = NULL;
	struct wh_engine_options eo = {.threads = T->o->threads};
	enum wh_status st = wh_engine_create(T->m, &eo, &e);
	if (st == WH_OK)
		st = wh_engine_run(e, T->inputs, WH_KEEP_ALL, &T->ref);
	wh_engine_destroy(e);
	const struct wh_graph *g = T->g;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < g->n_inputs && st == WH_OK; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = wh_tensor_set_find(T->inputs, v->name);
		if (!t && pos < T->inputs->n && !T->inputs->items[pos].name)
			t = &T->inputs->items[pos].t;
		pos++;
		if (t && !wh_tensor_set_find(&T->ref, v->name))
			st = wh_tensor_set_add(&T->ref, v->name, -1, t);
	}
	return st;
}

/* The named tensors of a model's inputs or outputs, from the reference. */
static enum wh_status write_ref_tensors(struct tri *T, const struct wh_model *model, bool outputs, const char *dir)
{
	const struct wh_graph *g = model->graph;
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	enum wh_status st = wh_os_make_dir(dir);
	uint32_t cnt = outputs ? g->n_outputs : g->n_inputs;
	const uint32_t *ids = outputs ? g->outputs : g->inputs;
	for (uint32_t i = 0; i < cnt && st == WH_OK; i++) {
		const struct wh_value *v = &g->values[ids[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = ref_find(T, v->name);
		if (t)
			st = wh_tensor_set_add(&s, v->name, -1, t);
	}
	if (st == WH_OK)
		st = wh_tensor_set_write_dir(dir, NULL, &s);
	wh_tensor_set_release(&s);
	return st;
}

static void vars_for(const struct tri *T, struct wh_check_vars *v, const char *model, const char *inputs, const char *golden,
		     const char *tactics)
{
	v->model = model;
	v->inputs = inputs;
	v->golden = golden;
	v->tactics = tactics;
	v->precisions = T->prec_path;
}

/* ---- step 1: builds, and the flaky-tactic localization ---- */

static enum wh_status check_plan(struct tri *T, const struct wh_tactic_plan *plan, const char *replay, enum wh_verdict *v,
				 char *why, size_t wsize)
{
	if (!T->c_raw)
		return builtin_check(T, T->m, plan, v, NULL, why, wsize);
	struct wh_check_vars vars;
	vars_for(T, &vars, T->o->model_path, T->inputs_dir, T->golden_dir, replay);
	return external_check(T, T->c_raw, &vars, v, why, wsize);
}

static enum wh_status copy_plan(const struct wh_tactic_plan *src, struct wh_tactic_plan *dst)
{
	enum wh_status st = WH_OK;
	for (uint32_t i = 0; i < src->n && st == WH_OK; i++)
		st = wh_tactic_plan_set(dst, src->c[i].layer, src->c[i].op, src->c[i].tactic, src->c[i].id, src->c[i].ms);
	memcpy(dst->precision, src->precision, sizeof dst->precision);
	memcpy(dst->model_hash, src->model_hash, sizeof dst->model_hash);
	dst->seed = src->seed;
	return st;
}

/* The confirmation's swap: build `base` with the choice of build `donor` for one layer. */
static enum wh_status swap_check(void *ctx, const struct wh_tactic_swap *sw, enum wh_verdict *out)
{
	struct tri *T = ctx;
	struct wh_tactic_plan p;
	wh_tactic_plan_init(&p);
	char path[PATH_MAX + 64], why[192];
	uint32_t seq = ++T->swaps;
	bprintf(path, sizeof path, "%s/swap_%u_%s.json", T->builds_dir, seq, sw->forward ? "forward" : "reverse");
	enum wh_status st = copy_plan(&T->plans[sw->base], &p);
	const struct wh_tactic_choice *c = wh_tactic_plan_find(&T->plans[sw->donor], sw->layer);
	if (st == WH_OK && !c)
		st = wh_error(WH_ERR_INTERNAL, "triage: build %u has no tactic for layer '%s'", sw->donor, sw->layer);
	if (st == WH_OK)
		st = wh_tactic_plan_set(&p, c->layer, c->op, c->tactic, c->id, c->ms);
	if (st == WH_OK)
		st = wh_tactic_plan_write(&p, path);
	if (st == WH_OK)
		st = check_plan(T, &p, path, out, why, sizeof why);
	if (st == WH_OK)
		say(T, "  swap %u: %s build %u with layer '%s' tactic '%s' from build %u: %s (%s)", seq, sw->forward ? "good" : "bad",
		    sw->base, sw->layer, sw->tactic, sw->donor, *out == WH_VERDICT_PASS ? "good" : *out == WH_VERDICT_FAIL ? "bad" : "cannot tell",
		    why);
	wh_tactic_plan_release(&p);
	return st;
}

static bool plan_uses(const struct wh_tactic_plan *p, const char *layer, const char *tactic)
{
	const struct wh_tactic_choice *c = wh_tactic_plan_find(p, layer);
	return c && !strcmp(c->tactic, tactic);
}

static enum wh_status step_builds(struct tri *T)
{
	const struct wh_triage_options *o = T->o;
	struct step *S = add_step(T, "Intermittent?");
	uint32_t n = o->builds ? o->builds : 1;
	T->plans = calloc(n, sizeof *T->plans);
	T->verdicts = calloc(n, sizeof *T->verdicts);
	T->why = calloc(n, sizeof *T->why);
	if (!T->plans || !T->verdicts || !T->why)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t k = 0; k < n; k++)
		wh_tactic_plan_init(&T->plans[k]);
	struct wh_engine_options eo = {.threads = o->threads, .precision = &T->pc, .faulty_tactic = o->faulty_tactic};
	enum wh_status st = WH_OK;
	say(T, "step 1: intermittent? building up to %u times (seeds 0..%u) at %s", n, n - 1, pname(o->precision));
	for (uint32_t k = 0; k < n; k++) {
		struct wh_build_options bo = o->build;
		bo.seed = k;
		char path[PATH_MAX + 64];
		bprintf(path, sizeof path, "%s/build_%u.json", T->builds_dir, k);
		if ((st = wh_engine_build(T->m, &eo, T->inputs, &bo, &T->plans[k])) != WH_OK)
			return st;
		if ((st = wh_tactic_plan_write(&T->plans[k], path)) != WH_OK)
			return st;
		T->n_builds = k + 1;
		if ((st = check_plan(T, &T->plans[k], path, &T->verdicts[k], T->why[k], sizeof T->why[k])) != WH_OK)
			return st;
		enum wh_verdict v = T->verdicts[k];
		T->n_good += v == WH_VERDICT_PASS;
		T->n_bad += v == WH_VERDICT_FAIL;
		T->n_skip += v == WH_VERDICT_SKIP;
		say(T, "  build %u: %u layers with tactics: %s (%s)", k, T->plans[k].n,
		    v == WH_VERDICT_PASS ? "good" : v == WH_VERDICT_FAIL ? "bad" : "cannot tell", T->why[k]);
		if (k == 0 && T->plans[0].n == 0) {
			/* no layer has a choice to make: every build would be this one */
			T->no_tactics = true;
			say(T, "  no layer has a choice of tactics: every build is this one");
			break;
		}
	}
	T->rep->builds = T->n_builds;
	T->rep->n_good = T->n_good;
	T->rep->n_bad = T->n_bad;
	if (T->no_tactics)
		bprintf(S->text, sizeof S->text, "No layer of the model has a choice of tactics, so every build is the same: built and checked once: %s (%s). Not intermittent%s.",
			T->n_bad ? "fails" : T->n_good ? "passes" : "cannot tell", T->why[0], T->n_bad ? ": go on with the layerwise comparison" : "");
	else
		bprintf(S->text, sizeof S->text, "Built %u times (seeds 0..%u; %u layers choose among tactics) and checked each build: %u good, %u bad%s%s.",
			T->n_builds, T->n_builds - 1, T->plans[0].n, T->n_good, T->n_bad, T->n_skip ? ", cannot tell: " : "",
			T->n_skip ? "some" : "");
	if (!T->n_good && !T->n_bad)
		return wh_error(WH_ERR_CHECK, "check: cannot tell on any build (exit 125 or timeouts; fix the check or raise --timeout)");
	if (!T->n_bad) {
		bcat(S->text, sizeof S->text, " Every build passes: nothing fails at this tolerance.");
		return WH_OK;
	}
	if (!T->n_good) {
		if (!T->no_tactics)
			bcat(S->text, sizeof S->text, " Every build fails: the failure is not intermittent, so the tactic choice is not the cause; go on with the layerwise comparison.");
		for (uint32_t k = 0; k < T->n_builds; k++)
			if (T->verdicts[k] == WH_VERDICT_FAIL) {
				T->pin = &T->plans[k];
				T->bad_build = (int32_t)k;
				break;
			}
		return WH_OK;
	}
	/* builds disagree: which tactic? */
	bcat(S->text, sizeof S->text, " Builds disagree: the failure is intermittent, so a tactic choice is the likely cause.");
	const struct wh_tactic_plan **pp = calloc(T->n_builds, sizeof *pp);
	if (!pp)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t k = 0; k < T->n_builds; k++)
		pp[k] = &T->plans[k];
	struct step *S2 = add_step(T, "Flaky-tactic localization");
	say(T, "step 1b: builds disagree (%u good, %u bad): diffing tactics and confirming suspects", T->n_good, T->n_bad);
	st = wh_tactic_diff_compute(pp, T->verdicts, T->n_builds, NULL, &T->diff);
	if (st == WH_OK && T->diff.n) {
		struct wh_confirm_options co = {.max_suspects = 32};
		struct wh_confirm_ops ops = {.ctx = T, .check_swap = swap_check};
		st = wh_tactic_confirm(pp, T->verdicts, T->n_builds, &co, &ops, &T->diff, &T->cr);
		T->confirm_run = st == WH_OK;
	}
	uint32_t best;
	if (st == WH_OK && wh_tactic_best_good(pp, T->verdicts, T->n_builds, &best) == WH_OK) {
		char p[PATH_MAX + 32];
		bprintf(p, sizeof p, "%s/fixed.json", T->dir);
		if ((st = wh_tactic_plan_write(&T->plans[best], p)) == WH_OK)
			T->fixed_build = (int32_t)best;
	}
	free(pp);
	if (st != WH_OK)
		return st;
	for (uint32_t i = 0; i < T->diff.n && T->culprit < 0; i++)
		if (T->diff.s[i].state == WH_SUSPECT_CONFIRMED)
			T->culprit = (int32_t)i;
	for (uint32_t i = 0; i < T->diff.n && T->culprit < 0; i++)
		if (T->diff.s[i].state == WH_SUSPECT_SUFFICIENT)
			T->culprit = (int32_t)i;
	/* the bad build to show: one that uses the culprit */
	for (uint32_t k = 0; k < T->n_builds && T->bad_build < 0; k++)
		if (T->verdicts[k] == WH_VERDICT_FAIL &&
		    (T->culprit < 0 || plan_uses(&T->plans[k], T->diff.s[T->culprit].layer, T->diff.s[T->culprit].tactic)))
			T->bad_build = (int32_t)k;
	if (T->bad_build >= 0)
		T->pin = &T->plans[T->bad_build];
	bprintf(S2->text, sizeof S2->text, "Diffed the tactic choices of the %u good and %u bad builds: %u suspect%s (tactics used only in bad builds).",
		T->n_good, T->n_bad, T->diff.n, T->diff.n == 1 ? "" : "s");
	if (T->confirm_run)
		bcat(S2->text, sizeof S2->text, " Swapped each suspect into a good build, and out of a bad one: %u swap checks, %u confirmed.",
		     T->cr.checks, T->cr.confirmed);
	if (T->culprit >= 0) {
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		bcat(S2->text, sizeof S2->text, " %s: layer `%s` with tactic `%s` (good build %d turns bad with it; bad build %d %s without it).",
		     s->state == WH_SUSPECT_CONFIRMED ? "Confirmed" : "Breaks builds", s->layer, s->tactic, s->good_build, s->bad_build,
		     s->state == WH_SUSPECT_CONFIRMED ? "turns good" : "stays bad, so it has another cause too");
	} else {
		bcat(S2->text, sizeof S2->text, " No suspect could be confirmed.");
	}
	if (T->fixed_build >= 0)
		bcat(S2->text, sizeof S2->text, " The fastest good build (%d) is the fixed replay `fixed.json`.", T->fixed_build);
	return WH_OK;
}

/* ---- step 2: layerwise comparison ---- */

static double rel_l2(const struct wh_compare_stats *s)
{
	if (!s->comparable)
		return NAN;
	if (isinf(s->max_abs))
		return INFINITY;
	if (s->max_abs == 0)
		return 0;
	if (isnan(s->sqnr_db) || s->sqnr_db == -INFINITY)
		return INFINITY; /* the reference is all zero: any error is infinitely large */
	return pow(10.0, -s->sqnr_db / 20.0);
}

/* Whether a worse result replaces the one kept for a layer with several outputs. */
static bool worse(const struct lw_layer *a, const struct wh_compare_stats *s, double rel, bool fails)
{
	if (a->value == WH_NONE)
		return true;
	if (fails != a->fails)
		return fails;
	if (isnan(a->rel))
		return !isnan(rel);
	return rel > a->rel;
}

/* Runs the failing build with every tensor kept and compares each layer's outputs with
 * FP32. Layers that only compute shapes are left out (exact by construction), and so are
 * tensors nothing reads. */
static enum wh_status layerwise(struct tri *T, bool record_step)
{
	const struct wh_graph *g = T->g;
	struct wh_engine_options eo = {.threads = T->o->threads, .precision = &T->pc, .tactics = T->pin,
				       .faulty_tactic = T->o->faulty_tactic};
	struct wh_engine *e = NULL;
	struct wh_tensor_set res;
	wh_tensor_set_init(&res);
	uint8_t *kinds = calloc((size_t)g->n_nodes + 1, 1);
	uint32_t *uses = calloc((size_t)g->n_values + 1, sizeof *uses);
	T->lw = calloc((size_t)g->n_nodes + 1, sizeof *T->lw);
	enum wh_status st = WH_OK;
	if (!kinds || !uses || !T->lw) {
		st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
		goto out;
	}
	if ((st = wh_model_layer_kinds(T->m, kinds)) != WH_OK)
		goto out;
	wh_graph_use_counts(g, uses);
	if ((st = wh_engine_create(T->m, &eo, &e)) != WH_OK)
		goto out;
	if ((st = wh_engine_run(e, T->inputs, WH_KEEP_ALL, &res)) != WH_OK)
		goto out;
	T->first_fail = -1;
	for (uint32_t k = 0; k < g->n_nodes; k++) {
		uint32_t id = T->order[k];
		const struct wh_node *n = &g->nodes[id];
		if (is_constant(n) || kinds[id] == WH_LAYER_SHAPE || kinds[id] == WH_LAYER_CONST)
			continue;
		struct lw_layer *L = &T->lw[T->n_lw];
		L->node = id;
		L->value = WH_NONE;
		L->rel = NAN;
		for (uint32_t j = 0; j < n->n_outputs; j++) {
			uint32_t v = n->outputs[j];
			if (v == WH_NONE || (!uses[v] && !(g->values[v].flags & WH_VALUE_OUTPUT)))
				continue;
			const struct wh_tensor *a = wh_tensor_set_find(&res, g->values[v].name), *r = ref_find(T, g->values[v].name);
			if (!a || !r || a->dtype == WH_DT_STRING)
				continue;
			struct wh_compare_stats s;
			if ((st = wh_compare_tensors(a, r, &T->o->compare, &s)) != WH_OK)
				goto out;
			bool fails = !s.pass || !s.comparable;
			double rel = rel_l2(&s);
			if (worse(L, &s, rel, fails)) {
				L->value = v;
				L->s = s;
				L->rel = rel;
				L->fails = fails;
			}
		}
		if (L->value == WH_NONE)
			continue; /* nothing of it was compared */
		if (L->fails) {
			T->lw_failing++;
			if (T->first_fail < 0)
				T->first_fail = (int32_t)T->n_lw;
		}
		T->n_lw++;
	}
	if (record_step) {
		struct step *S = add_step(T, "Layerwise comparison");
		bprintf(S->text, sizeof S->text, "Ran %s with every tensor kept (marking tensors does not change what whittle computes) and compared %u layers with FP32 (atol %g, rtol %g): %u fail.",
			T->pin && T->pin->n ? "a failing build" : "the model", T->n_lw, T->o->compare.atol, T->o->compare.rtol, T->lw_failing);
		if (T->first_fail >= 0) {
			const struct lw_layer *L = &T->lw[T->first_fail];
			const struct wh_node *n = &g->nodes[L->node];
			bcat(S->text, sizeof S->text, " The first failing tensor in topological order is `%s`, made by layer `%s` (%s): max abs error %.4g, max rel error %.4g%s.",
			     g->values[L->value].name, node_name(n), n->op_type, L->s.max_abs, L->s.max_rel,
			     L->s.inf_actual || L->s.nan_actual ? ", with inf/NaN where FP32 is finite" : "");
		} else {
			bcat(S->text, sizeof S->text, " No tensor fails the built-in comparison%s.",
			     T->c_raw ? ", though the check fails: its criterion differs, so the search goes on with the check itself" : "");
		}
	}
out:
	free(kinds);
	free(uses);
	wh_tensor_set_release(&res);
	wh_engine_destroy(e);
	return st;
}

/* ---- step 3: the first failing layer alone ---- */

/* The model made of one layer and the Constant nodes it reads. */
static enum wh_status extract_layer(struct tri *T, uint32_t node, struct wh_model **out)
{
	const struct wh_graph *g = T->g;
	const struct wh_node *n = &g->nodes[node];
	uint32_t *ids = calloc((size_t)n->n_inputs + 1, sizeof *ids);
	if (!ids)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	uint32_t k = 0;
	ids[k++] = node;
	for (uint32_t j = 0; j < n->n_inputs; j++) {
		uint32_t v = n->inputs[j];
		if (v != WH_NONE && g->values[v].producer != WH_NONE && is_constant(&g->nodes[g->values[v].producer]))
			ids[k++] = g->values[v].producer;
	}
	enum wh_status st = wh_model_extract_nodes(T->m, ids, k, out);
	free(ids);
	return st;
}

/* Checks a part of the model (the layer alone, or the culprit layer of a flaky build) with
 * the check of the flowchart; files for an external check go to folder `dir`. */
static enum wh_status check_part(struct tri *T, const struct wh_model *part, const struct wh_tactic_plan *plan, const char *dir,
				 enum wh_verdict *v, struct wh_compare_stats *stats, bool *stats_valid, char *why, size_t wsize)
{
	*stats_valid = false;
	if (!T->c_raw) {
		*stats_valid = true;
		return builtin_check(T, part, plan, v, stats, why, wsize);
	}
	char model[PATH_MAX + 32], ins[PATH_MAX + 32], gold[PATH_MAX + 32], tac[PATH_MAX + 32];
	bprintf(model, sizeof model, "%s/model.onnx", dir);
	bprintf(ins, sizeof ins, "%s/inputs", dir);
	bprintf(gold, sizeof gold, "%s/golden", dir);
	bprintf(tac, sizeof tac, "%s/tactics.json", dir);
	enum wh_status st = wh_os_make_dir(dir);
	if (st == WH_OK)
		st = wh_model_save_with(part, model, T->o->save);
	if (st == WH_OK)
		st = write_ref_tensors(T, part, false, ins);
	if (st == WH_OK)
		st = write_ref_tensors(T, part, true, gold);
	if (st == WH_OK && plan)
		st = wh_tactic_plan_write(plan, tac);
	if (st != WH_OK)
		return st;
	struct wh_check_vars vars;
	vars_for(T, &vars, model, ins, gold, plan ? tac : NULL);
	return external_check(T, T->c_raw, &vars, v, why, wsize);
}

static enum wh_status step_single(struct tri *T, struct wh_model **single_out)
{
	const struct lw_layer *L = &T->lw[T->first_fail];
	const struct wh_node *n = &T->g->nodes[L->node];
	struct step *S = add_step(T, "First failing layer alone");
	say(T, "step 3: layer '%s' (%s) alone, fed FP32 reference values", node_name(n), n->op_type);
	struct wh_model *single = NULL;
	enum wh_status st = extract_layer(T, L->node, &single);
	if (st != WH_OK)
		return st;
	if (!single->graph->n_outputs) {
		bprintf(S->text, sizeof S->text, "Layer `%s` (%s) has no output that the rest of the model reads; skipped.", node_name(n), n->op_type);
		wh_model_destroy(single);
		return WH_OK;
	}
	char dir[PATH_MAX + 16];
	bprintf(dir, sizeof dir, "%s/single", T->dir);
	st = check_part(T, single, T->pin, dir, &T->single_v, &T->single_s, &T->single_s_valid, T->single_why, sizeof T->single_why);
	if (st != WH_OK) {
		wh_model_destroy(single);
		return st;
	}
	T->single_run = true;
	T->alone_checks++;
	say(T, "  alone: %s (%s)", T->single_v == WH_VERDICT_FAIL ? "fails" : T->single_v == WH_VERDICT_PASS ? "passes" : "cannot tell",
	    T->single_why);
	bprintf(S->text, sizeof S->text, "Extracted layer `%s` (%s) alone, its inputs fed with their FP32 reference values, and ran the check at %s: ",
		node_name(n), n->op_type, pname(T->o->precision));
	if (T->single_v == WH_VERDICT_FAIL) {
		bcat(S->text, sizeof S->text, "it **fails** on its own (%s). The failure is in this layer: done localizing.", T->single_why);
		*single_out = single;
		return WH_OK;
	}
	if (T->single_v == WH_VERDICT_PASS)
		bcat(S->text, sizeof S->text, "it passes on its own (%s), so the error that makes it fail comes from earlier layers: go on with the reduction.",
		     T->single_why);
	else
		bcat(S->text, sizeof S->text, "the check cannot tell (%s): go on with the reduction.", T->single_why);
	wh_model_destroy(single);
	return WH_OK;
}

/* ---- step 4: the minimal failing subgraph ---- */

/* Marks the original's nodes that a part of it holds (matched by name), Constant nodes
 * aside; returns their count. */
static uint32_t mark_part(const struct tri *T, const struct wh_model *part, uint8_t *mask)
{
	const struct wh_graph *g = T->g, *pg = part->graph;
	memset(mask, 0, g->n_nodes);
	uint32_t cnt = 0;
	for (uint32_t i = 0; i < pg->n_nodes; i++) {
		const struct wh_node *pn = &pg->nodes[i];
		if (is_constant(pn) || !pn->name)
			continue;
		for (uint32_t j = 0; j < g->n_nodes; j++)
			if (!mask[j] && g->nodes[j].name && !strcmp(g->nodes[j].name, pn->name) && !strcmp(g->nodes[j].op_type, pn->op_type)) {
				mask[j] = 1;
				cnt++;
				break;
			}
	}
	return cnt;
}

static enum wh_status step_reduce(struct tri *T, struct wh_model **reduced_out)
{
	struct step *S = add_step(T, "Reduce");
	char rdir[PATH_MAX + 16], out[PATH_MAX + 32];
	bprintf(rdir, sizeof rdir, "%s/reduce", T->dir);
	bprintf(out, sizeof out, "%s/reduced.onnx", rdir);
	say(T, "step 4: reducing to the minimal failing subgraph (progress in %s/triage.log)", T->dir);
	struct wh_reduce_options ro = {
		.mode = WH_SEARCH_DDMIN,
		.jobs = 1,
		.reduce_inputs = true,
		.reduce_outputs = true,
		.check = T->c_reduce,
		.check_display = T->check_display,
		.engine = {.threads = T->o->threads, .precision = &T->pc, .tactics = T->pin, .faulty_tactic = T->o->faulty_tactic},
		.compare = T->o->compare,
		.artifacts_dir = rdir,
		.output_path = out,
		.model_path = T->o->model_path,
		.log = T->logf,
		.confirm_runs = 1,
	};
	struct wh_reduce_data data = {.inputs = T->inputs, .n_samples = 1};
	T->reduce_run = true;
	T->reduce_st = wh_reduce_run(T->m, &data, &ro, &T->rr);
	T->checks += T->rr.checks_run;
	if (T->reduce_st != WH_OK) {
		bprintf(T->reduce_err, sizeof T->reduce_err, "%s", wh_error_message());
		bprintf(S->text, sizeof S->text, "The reduction stopped: %s.", T->reduce_err);
		say(T, "  reduce: %s", T->reduce_err);
		/* a broken check is the user's to fix; anything else leaves the answer open */
		return T->reduce_st == WH_ERR_CHECK && T->rr.checks_run == 0 ? T->reduce_st : WH_OK;
	}
	struct wh_model *red = NULL;
	enum wh_status st = wh_model_load(out, &red);
	if (st == WH_OK)
		st = wh_model_infer_shapes(red);
	if (st != WH_OK) {
		wh_model_destroy(red);
		return st;
	}
	*reduced_out = red;
	bprintf(S->text, sizeof S->text, "Searched for the smallest subgraph that still fails (ddmin over layers; every candidate's new inputs fed with FP32 reference values): %u of %u layers remain, after %u checks (%u from the cache), %.1f s; %s.",
		T->rr.nodes_after, T->rr.nodes_before, T->rr.checks_run, T->rr.checks_cached, T->rr.seconds,
		T->rr.one_minimal ? "1-minimal: removing any one of them makes it pass" : "not verified 1-minimal");
	say(T, "  reduced: %u of %u layers, %u checks", T->rr.nodes_after, T->rr.nodes_before, T->rr.checks_run);
	return WH_OK;
}

/* ---- step 5: the layers to keep in higher precision ---- */

static enum wh_status step_precision(struct tri *T)
{
	struct step *S = add_step(T, "Precision search");
	if (T->o->precision == WH_PREC_FP32) {
		bprintf(S->text, sizeof S->text, "Skipped: the model runs in fp32 already, so no layer can be kept higher.");
		return WH_OK;
	}
	say(T, "step 5: searching the layers to keep in fp32");
	const char *dirs[1] = {T->inputs_dir};
	struct wh_precision_search_options so = {
		.target = T->o->precision,
		.higher = WH_PREC_FP32,
		.mode = WH_SEARCH_DDMIN,
		.check = T->c_prec,
		.check_display = T->check_display,
		.model_path = T->o->model_path,
		.inputs_dirs = dirs,
		.compare = T->o->compare,
		.threads = T->o->threads,
		.calib = T->o->calib,
		.log = T->logf,
	};
	T->prec_run = true;
	T->prec_st = wh_precision_search(T->m, T->inputs, 1, &so, &T->keep, &T->pr);
	T->checks += T->pr.checks_run;
	if (T->prec_st != WH_OK) {
		bprintf(T->prec_err, sizeof T->prec_err, "%s", wh_error_message());
		bprintf(S->text, sizeof S->text, "No set of layers found: %s.", T->prec_err);
		say(T, "  precision: %s", T->prec_err);
		return T->prec_st == WH_ERR_CHECK ? T->prec_st : WH_OK;
	}
	char path[PATH_MAX + 32];
	bprintf(path, sizeof path, "%s/layer-precisions.json", T->dir);
	enum wh_status st = wh_precision_config_write(&T->keep, path);
	if (st != WH_OK)
		return st;
	T->keep_mask = calloc((size_t)T->g->n_nodes + 1, 1);
	if (!T->keep_mask)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t i = 0; i < T->keep.n_layers; i++)
		for (uint32_t j = 0; j < T->g->n_nodes; j++)
			if (T->g->nodes[j].name && !strcmp(T->g->nodes[j].name, T->keep.layers[i].layer) && !T->keep_mask[j]) {
				T->keep_mask[j] = 1;
				T->n_keep++;
				break;
			}
	T->rep->keep_layers = T->n_keep;
	bprintf(S->text, sizeof S->text, "Searched the %u float layers for a set to keep in fp32 (bisection, then ddmin ordered by each layer's error, then a 1-minimality pass): keep %u layer%s:",
		T->pr.candidates, T->n_keep, T->n_keep == 1 ? "" : "s");
	for (uint32_t k = 0; k < T->g->n_nodes; k++) {
		uint32_t id = T->order[k];
		if (T->keep_mask[id])
			bcat(S->text, sizeof S->text, " `%s` (%s)", node_name(&T->g->nodes[id]), T->g->nodes[id].op_type);
	}
	bcat(S->text, sizeof S->text, "; %u checks (%u from the cache), %.1f s; %s. Written to `layer-precisions.json`.", T->pr.checks_run,
	     T->pr.checks_cached, T->pr.seconds, T->pr.one_minimal ? "1-minimal" : "not verified 1-minimal");
	say(T, "  keep %u layer%s in fp32 (%u checks)", T->n_keep, T->n_keep == 1 ? "" : "s", T->pr.checks_run);
	return WH_OK;
}

/* ---- the repro bundle ---- */

/* Single-quotes s for /bin/sh into out. */
static void sh_quote(const char *s, char *out, size_t size)
{
	size_t n = 0;
	if (size < 3) {
		if (size)
			out[0] = '\0';
		return;
	}
	out[n++] = '\'';
	for (const char *p = s; *p && n + 6 < size; p++) {
		if (*p == '\'') {
			memcpy(out + n, "'\\''", 4);
			n += 4;
		} else {
			out[n++] = *p;
		}
	}
	out[n++] = '\'';
	out[n] = '\0';
}

static enum wh_status write_bundle(struct tri *T, const struct wh_model *model, const struct wh_tactic_plan *plan)
{
	char dir[PATH_MAX + 16], p[PATH_MAX + 64];
	bprintf(dir, sizeof dir, "%s/repro", T->dir);
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	bprintf(p, sizeof p, "%s/model.onnx", dir);
	if ((st = wh_model_save_with(model, p, T->o->save)) != WH_OK)
		return st;
	bprintf(p, sizeof p, "%s/inputs", dir);
	if ((st = write_ref_tensors(T, model, false, p)) != WH_OK)
		return st;
	bprintf(p, sizeof p, "%s/golden", dir);
	if ((st = write_ref_tensors(T, model, true, p)) != WH_OK)
		return st;
	bprintf(p, sizeof p, "%s/precisions.json", dir);
	if ((st = wh_precision_config_write(&T->pc, p)) != WH_OK)
		return st;
	T->repro_tactics = plan && plan->n;
	if (T->repro_tactics) {
		bprintf(p, sizeof p, "%s/tactics.json", dir);
		if ((st = wh_tactic_plan_write(plan, p)) != WH_OK)
			return st;
	}
	char *cmd = NULL;
	if (T->c_raw) {
		struct wh_check_vars v = {.model = "model.onnx", .inputs = "inputs", .golden = "golden",
					  .tactics = T->repro_tactics ? "tactics.json" : NULL, .precisions = "precisions.json"};
		if (!(cmd = wh_check_command_line(T->c_raw, &v)))
			return wh_error(WH_ERR_NOMEM, "triage: out of memory");
		bprintf(T->repro_cmd, sizeof T->repro_cmd, "%s", cmd);
	} else {
		bprintf(T->repro_cmd, sizeof T->repro_cmd,
			"\"${WHITTLE:-whittle}\" run model.onnx --load-inputs inputs --precision %s%s --compare golden --atol %.17g --rtol %.17g",
			pname(T->o->precision), T->repro_tactics ? " --load-tactics tactics.json" : "", T->o->compare.atol, T->o->compare.rtol);
		if (T->o->compare.stat != WH_STAT_ELEMWISE) {
			static const char *const names[] = {"elemwise", "max", "mean", "median", "quantile"};
			if (T->o->compare.stat == WH_STAT_QUANTILE)
				bcat(T->repro_cmd, sizeof T->repro_cmd, " --check-error-stat quantile=%.17g", T->o->compare.quantile);
			else
				bcat(T->repro_cmd, sizeof T->repro_cmd, " --check-error-stat %s", names[T->o->compare.stat]);
		}
	}
	free(cmd);
	bprintf(p, sizeof p, "%s/command.sh", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", p, strerror(errno));
	fprintf(f, "#!/bin/sh\n# whittle triage repro: exits non-zero while the failure is there.\n"
		   "# Runs from this folder; set WHITTLE to the whittle binary if it is not on PATH.\n"
		   "cd \"$(dirname \"$0\")\" || exit 2\n");
	if (T->o->faulty_tactic && *T->o->faulty_tactic) {
		char q[512];
		sh_quote(T->o->faulty_tactic, q, sizeof q);
		fprintf(f, "# fault injection was on during triage (a test setting): keep it for the repro\nexport WHITTLE_FAULTY_TACTIC=%s\n", q);
	}
	fprintf(f, "%s\n", T->repro_cmd);
	if (fclose(f) != 0)
		return wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", p);
	chmod(p, 0755);
	const struct wh_cpu_features *cpu = wh_cpu();
	bprintf(p, sizeof p, "%s/version.txt", dir);
	if ((f = fopen(p, "w"))) {
		fprintf(f, "whittle %s\ncpu %s\nisa %s (detected %s)\n", WHITTLE_VERSION, cpu->brand, wh_isa_name(cpu->isa), wh_isa_name(cpu->detected));
		fclose(f);
	}
	return WH_OK;
}

/* Runs repro/command.sh as a user would, with WHITTLE pointing at this binary. Its verdict
 * follows the check's own rules (fail patterns, exit codes); for the built-in check,
 * `whittle run --compare` exits 1 when the comparison fails, and any other non-zero exit is
 * a broken command, not a failure. */
static enum wh_status check_bundle(struct tri *T)
{
	if (!T->o->whittle_path)
		return WH_OK;
	char cmd[PATH_MAX + 32];
	bprintf(cmd, sizeof cmd, "%s/repro/command.sh", T->dir);
	char *argv[] = {"/bin/sh", "-c", "WHITTLE=\"$0\" exec /bin/sh \"$1\"", (char *)T->o->whittle_path, cmd, NULL};
	struct wh_check_options co = {.timeout_s = 600};
	if (T->o->check) {
		co = *T->o->check;
		co.shell = false;
	}
	co.argv = argv;
	co.argc = 5;
	struct wh_check *c = NULL;
	struct wh_check_result r = {0};
	enum wh_status st = wh_check_create(&co, &c);
	if (st == WH_OK)
		st = wh_check_run(c, NULL, &r);
	if (st == WH_OK) {
		T->checks++;
		T->repro_checked = true;
		T->repro_exit = r.signal ? 128 + r.signal : r.exit_code;
		T->repro_fails = T->o->check ? r.verdict == WH_VERDICT_FAIL : !r.signal && r.exit_code == 1;
		const char *o = r.output ? r.output : "";
		size_t len = strlen(o);
		while (len && (o[len - 1] == '\n' || o[len - 1] == ' '))
			len--;
		size_t start = len;
		while (start && o[start - 1] != '\n')
			start--;
		bprintf(T->repro_out, sizeof T->repro_out, "%.*s", (int)(len - start > 400 ? 400 : len - start), o + start);
		T->rep->repro_checked = true;
		T->rep->repro_exit = T->repro_exit;
		T->rep->repro_fails = T->repro_fails;
	}
	wh_check_result_release(&r);
	wh_check_destroy(c);
	return st;
}

/* How repro/command.sh ended, in words. */
static void repro_words(const struct tri *T, char *buf, size_t size)
{
	if (T->repro_fails)
		bprintf(buf, size, "exits %d: it still fails", T->repro_exit);
	else if (T->repro_exit == 0)
		bprintf(buf, size, "exits 0: **it passes, so it does not reproduce the failure**");
	else
		bprintf(buf, size, "exits %d, which is not a failing verdict: **the command is broken** (its output ends: %s)", T->repro_exit,
			T->repro_out);
}

/* ---- what was found, in words ---- */

static double fmt_max(enum wh_precision p)
{
	switch (p) {
	case WH_PREC_FP16: return 65504.0;
	case WH_PREC_BF16: return 3.3895313892515355e38;
	default: return 0; /* fp32, tf32: as wide as FP32; int8 and fp8 scale per tensor */
	}
}

/* The largest finite magnitude of a float tensor (0 for others). */
static double tensor_amax(const struct wh_tensor *t)
{
	double m = 0;
	if (!t || !wh_dtype_is_float(t->dtype))
		return 0;
	for (uint64_t i = 0; i < t->count; i++) {
		double x = fabs(wh_tensor_get_f64(t, i));
		if (isfinite(x) && x > m)
			m = x;
	}
	return m;
}

static const struct lw_layer *lw_of(const struct tri *T, uint32_t node)
{
	for (uint32_t i = 0; i < T->n_lw; i++)
		if (T->lw[i].node == node)
			return &T->lw[i];
	return NULL;
}

/* "its output overflows fp16 ...": why a layer's output differs from FP32, from its stats
 * and the FP32 values of its inputs and output. */
static void explain(const struct tri *T, uint32_t node, const struct wh_compare_stats *s, uint32_t out_value, char *buf, size_t size)
{
	const struct wh_graph *g = T->g;
	const struct wh_node *n = &g->nodes[node];
	enum wh_precision p = T->o->precision;
	double fmax = fmt_max(p);
	buf[0] = '\0';
	uint64_t bad_nonfinite = s->inf_actual + s->nan_actual > s->inf_ref + s->nan_ref ? s->inf_actual + s->nan_actual - s->inf_ref - s->nan_ref : 0;
	double out_amax = out_value != WH_NONE ? tensor_amax(ref_find(T, g->values[out_value].name)) : 0;
	/* at fp16/bf16 only these round their inputs (executor/precision.h) */
	bool rounds_inputs = !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm") || !strcmp(n->op_type, "Conv") ||
			     !strcmp(n->op_type, "ConvTranspose");
	/* the input with the largest values */
	double in_amax = 0;
	const char *in_name = NULL;
	for (uint32_t j = 0; j < n->n_inputs; j++) {
		uint32_t v = n->inputs[j];
		if (v == WH_NONE)
			continue;
		const struct wh_tensor *t = ref_find(T, g->values[v].name);
		double a = t ? tensor_amax(t) : 0;
		if (!t && (g->values[v].flags & WH_VALUE_INITIALIZER))
			continue; /* weights: not in the reference set */
		if (a > in_amax) {
			in_amax = a;
			in_name = g->values[v].name;
		}
	}
	if (bad_nonfinite) {
		if (fmax > 0 && in_amax > fmax && rounds_inputs) {
			bprintf(buf, size, "its input `%s` holds values up to %.6g, beyond %s's largest finite value (%g), so they become inf when the layer's inputs are rounded to %s; %llu of %llu output values are inf or NaN",
				in_name, in_amax, pname(p), fmax, pname(p), (unsigned long long)bad_nonfinite, (unsigned long long)s->count);
		} else if (fmax > 0 && out_amax > fmax) {
			bprintf(buf, size, "its output overflows %s (max %g): the FP32 values reach %.6g, and at %s %llu of %llu values become inf",
				pname(p), fmax, out_amax, pname(p), (unsigned long long)bad_nonfinite, (unsigned long long)s->count);
		} else {
			bprintf(buf, size, "it produces %llu inf and %llu NaN values where FP32 has %llu and %llu",
				(unsigned long long)s->inf_actual, (unsigned long long)s->nan_actual, (unsigned long long)s->inf_ref,
				(unsigned long long)s->nan_ref);
		}
		return;
	}
	bprintf(buf, size, "its output differs from FP32 by up to %.4g (relative %.3g; SQNR %.1f dB, cosine %.6f)", s->max_abs, s->max_rel,
		s->sqnr_db, s->cosine);
	if (p == WH_PREC_FP16 || p == WH_PREC_BF16) {
		int mant = p == WH_PREC_FP16 ? 10 : 7;
		/* only MatMul/Gemm/Conv round their inputs; other layers round their output */
		double mag = rounds_inputs ? in_amax : out_amax;
		double spacing = mag >= 1 ? ldexp(1.0, (int)floor(log2(mag)) - mant) : 0;
		if (spacing >= 1.0 / 64 && rounds_inputs)
			bcat(buf, size, ": its input `%s` reaches %.6g, where %s values are %g apart, so rounding the inputs loses their fraction",
			     in_name, in_amax, pname(p), spacing);
		else if (spacing >= 1.0 / 64)
			bcat(buf, size, ": its output reaches %.6g, where %s values are %g apart, so storing it at %s loses its fraction",
			     out_amax, pname(p), spacing, pname(p));
		else
			bcat(buf, size, ": %s keeps %d significant bits (unit roundoff %.2g), and the rounding of its inputs and output is more than atol %g / rtol %g allow here",
			     pname(p), mant + 1, ldexp(1.0, -(mant + 1)), T->o->compare.atol, T->o->compare.rtol);
	} else if (p == WH_PREC_TF32) {
		bcat(buf, size, ": tf32 rounds the inputs of MatMul, Gemm and Conv to 11 significant bits");
	} else if (p == WH_PREC_INT8 || p == WH_PREC_FP8 || p == WH_PREC_FP8E5M2) {
		bcat(buf, size, ": %s quantization (one scale per tensor) is too coarse for the values here", pname(p));
	}
}

static void list_layers(const struct tri *T, const uint8_t *mask, char *buf, size_t size)
{
	bool first = true;
	for (uint32_t k = 0; k < T->g->n_nodes; k++) {
		uint32_t id = T->order[k];
		if (!mask[id])
			continue;
		bcat(buf, size, "%s`%s` (%s)", first ? "" : ", ", node_name(&T->g->nodes[id]), T->g->nodes[id].op_type);
		first = false;
	}
}

static void compose_finding(struct tri *T)
{
	const struct wh_graph *g = T->g;
	char *F = T->finding, *N = T->next;
	size_t FS = sizeof T->finding, NS = sizeof T->next;
	F[0] = N[0] = '\0';
	struct wh_triage_report *rep = T->rep;
	const char *prec = pname(T->o->precision);
	switch (rep->outcome) {
	case WH_TRIAGE_PASSES:
		bprintf(F, FS, "Nothing fails: every build (%u) passes the check at %s.", T->n_builds, prec);
		bprintf(N, NS, "Nothing to do at this tolerance. If the deployed model still fails, tighten --atol/--rtol, give the inputs that fail with --load-inputs, or give your own --check.");
		return;
	case WH_TRIAGE_FLAKY:
		bprintf(F, FS, "The failure is intermittent: %u of %u builds fail and %u pass, with the same model, inputs and precision (%s). ",
			T->n_bad, T->n_builds, T->n_good, prec);
		if (T->culprit >= 0) {
			const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
			bcat(F, FS, "It comes from the tactic `%s` that the builder picks for layer `%s` (%s) in some builds: %s.", s->tactic, s->layer,
			     rep->op, s->state == WH_SUSPECT_CONFIRMED ? "swapping it into a good build makes that build fail, and swapping it out of a bad build makes it pass (confirmed)"
								: "swapping it into a good build makes that build fail, but the bad build still fails without it, so there is another cause as well");
			if (T->fixed_build >= 0)
				bcat(N, NS, "Pin a good build's tactics: `whittle run %s --load-inputs %s --precision %s --load-tactics %s/fixed.json --compare fp32 --atol %g --rtol %g` passes (fixed.json is the fastest good build). ",
				     T->o->model_path ? T->o->model_path : "MODEL", T->inputs_dir, prec, T->dir, T->o->compare.atol, T->o->compare.rtol);
			bcat(N, NS, "In your builder, keep tactic `%s` away from layer `%s` (TensorRT: an algorithm selector, or load a good tactic replay; Polygraphy: --load-tactics). Send %s/repro/ to the owner of that kernel.",
			     s->tactic, s->layer, T->dir);
		} else if (T->diff.n) {
			bcat(F, FS, "Bad builds use %u tactic%s that good builds never use, but swapping none of them into a good build made it fail.",
			     T->diff.n, T->diff.n == 1 ? "" : "s");
			bcat(N, NS, "Build more times (--builds 20) so that the diff narrows down, or check whether the check itself is flaky (whittle repeat).");
		} else {
			bcat(F, FS, "Bad builds use no tactic that good builds never use: the difference is elsewhere (the check itself may be flaky).");
			bcat(N, NS, "Run the check several times on one build (whittle repeat) to see whether it is deterministic.");
		}
		return;
	default: break;
	}
	const struct lw_layer *L = T->first_fail >= 0 ? &T->lw[T->first_fail] : NULL;
	char why[1024] = "";
	if (rep->outcome == WH_TRIAGE_SINGLE_LAYER && L) {
		const struct wh_node *n = &g->nodes[L->node];
		explain(T, L->node, T->single_s_valid ? &T->single_s : &L->s, L->value, why, sizeof why);
		bprintf(F, FS, "The failure comes from layer `%s` (%s): %s. The layer fails on its own at %s, fed exact FP32 inputs, so it is a single-layer failure.",
			node_name(n), n->op_type, why, prec);
	} else if (rep->outcome == WH_TRIAGE_SUBGRAPH) {
		char names[2048] = "";
		list_layers(T, T->answer_nodes, names, sizeof names);
		bprintf(F, FS, "The failure needs %u layers together: %s.", T->n_answer, names);
		if (L) {
			const struct wh_node *n = &g->nodes[L->node];
			bcat(F, FS, " The first failing tensor `%s` comes from layer `%s` (%s), but that layer passes on its own", g->values[L->value].name,
			     node_name(n), n->op_type);
			if (T->single_s_valid)
				bcat(F, FS, " (max abs error %.4g when fed exact FP32 inputs, against %.4g in the full model)", T->single_s.max_abs, L->s.max_abs);
			bcat(F, FS, ", so the error it fails with is made upstream.");
		}
		/* where the error starts: the first layer of the answer with an error of its own */
		uint32_t first = WH_NONE, last = WH_NONE;
		for (uint32_t k = 0; k < g->n_nodes; k++) {
			uint32_t id = T->order[k];
			if (!T->answer_nodes[id])
				continue;
			if (first == WH_NONE) {
				const struct lw_layer *A = lw_of(T, id);
				if (A && A->rel > 0 && !isnan(A->rel))
					first = id;
			}
			last = id;
		}
		if (first != WH_NONE && first != last) {
			const struct lw_layer *A = lw_of(T, first);
			explain(T, first, &A->s, A->value, why, sizeof why);
			bcat(F, FS, " The error starts at layer `%s` (%s), %u layers earlier in topological order: %s%s. It is carried to `%s` (%s), where it exceeds the tolerance.",
			     node_name(&g->nodes[first]), g->nodes[first].op_type, T->pos[last] - T->pos[first], why,
			     A->fails ? "" : " (within tolerance there, so a layerwise comparison alone does not point at it)",
			     node_name(&g->nodes[last]), g->nodes[last].op_type);
		}
	} else {
		bprintf(F, FS, "The model fails at %s, but no step could narrow the failure down", prec);
		if (T->reduce_run && T->reduce_st != WH_OK)
			bcat(F, FS, " (the reduction stopped: %s)", T->reduce_err);
		bcat(F, FS, ".");
	}
	if (T->prec_run && T->prec_st == WH_OK && T->n_keep) {
		char names[2048] = "";
		list_layers(T, T->keep_mask, names, sizeof names);
		bcat(F, FS, " Keeping %u layer%s in fp32 makes the model pass: %s.", T->n_keep, T->n_keep == 1 ? "" : "s", names);
		bprintf(N, NS, "Keep %s %u layer%s in fp32: `whittle run %s --load-inputs %s --precision %s --layer-precisions %s/layer-precisions.json --compare fp32 --atol %g --rtol %g` passes (in TensorRT: setPrecision and setOutputType to fp32 on those layers, with precision constraints obeyed).",
			T->n_keep == 1 ? "this" : "these", T->n_keep, T->n_keep == 1 ? "" : "s", T->o->model_path ? T->o->model_path : "MODEL",
			T->inputs_dir, prec, T->dir, T->o->compare.atol, T->o->compare.rtol);
	} else if (T->prec_run && T->prec_st != WH_OK) {
		bcat(F, FS, " No set of layers kept in fp32 fixes it (%s), so it is not only a precision problem.", T->prec_err);
		bprintf(N, NS, "Look at the layers named above in the repro bundle; the failure does not go away with more precision, so suspect the kernel or the check.");
	} else if (L) {
		bprintf(N, NS, "Try the first failing layer in fp32: `whittle run %s --load-inputs %s --precision %s --layer-precisions %s:fp32 --compare fp32 --atol %g --rtol %g`%s.",
			T->o->model_path ? T->o->model_path : "MODEL", T->inputs_dir, prec, node_name(&g->nodes[L->node]), T->o->compare.atol,
			T->o->compare.rtol,
			T->prec_run ? "" : ", or let `whittle precision` find every layer that must stay in fp32");
	}
	bcat(N, NS, " The repro bundle %s/repro/ holds the %s as a standalone model with its inputs and reference outputs; `sh command.sh` reruns the check.",
	     T->dir, rep->outcome == WH_TRIAGE_SINGLE_LAYER ? "failing layer" : rep->outcome == WH_TRIAGE_SUBGRAPH ? "minimal failing subgraph" : "model");
}

/* ---- pictures ---- */

static bool find_in_path(const char *prog, char *out, size_t size)
{
	const char *path = getenv("PATH");
	if (!path)
		return false;
	const char *p = path;
	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len && len + strlen(prog) + 2 < size) {
			bprintf(out, size, "%.*s/%s", (int)len, p, prog);
			if (access(out, X_OK) == 0)
				return true;
		}
		p += len + (end ? 1 : 0);
	}
	return false;
}

static enum wh_status write_plot(struct tri *T)
{
	if (!T->n_lw)
		return WH_OK;
	struct wh_svg_layer_error *pts = calloc(T->n_lw, sizeof *pts);
	if (!pts)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t i = 0; i < T->n_lw; i++) {
		const struct wh_node *n = &T->g->nodes[T->lw[i].node];
		pts[i] = (struct wh_svg_layer_error){.layer = node_name(n), .op = n->op_type, .value = T->lw[i].rel, .fails = T->lw[i].fails};
	}
	const char *base = strrchr(T->o->model_path ? T->o->model_path : "model", '/');
	base = base ? base + 1 : T->o->model_path ? T->o->model_path : "model";
	char title[512], thr[64], ylab[128];
	bprintf(title, sizeof title, "%s at %s vs FP32: error per layer%s", base, pname(T->o->precision),
		T->rep->outcome == WH_TRIAGE_FLAKY ? " (a bad build)" : "");
	bprintf(thr, sizeof thr, "rtol %g", T->o->compare.rtol);
	bprintf(ylab, sizeof ylab, "relative L2 error vs FP32 (log scale)");
	struct wh_svg_plot plot = {.title = title, .x_label = "layers in topological order", .y_label = ylab, .layers = pts, .n = T->n_lw,
				   .marked = T->first_fail, .threshold = T->o->compare.rtol, .threshold_label = thr};
	bprintf(T->plot_path, sizeof T->plot_path, "%s/layer-errors.svg", T->dir);
	FILE *f = fopen(T->plot_path, "w");
	enum wh_status st;
	if (!f) {
		st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", T->plot_path, strerror(errno));
	} else {
		st = wh_svg_write_error_plot(f, &plot);
		if (fclose(f) != 0 && st == WH_OK)
			st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", T->plot_path);
	}
	free(pts);
	T->plot_ok = st == WH_OK;
	return st;
}

/* The repro model, its alarming layers in red: the culprit, the first failing layer, and
 * the layers to keep in fp32. Large models are drawn around those layers only. */
static enum wh_status write_picture(struct tri *T)
{
	const struct wh_model *am = T->answer;
	if (!am)
		return WH_OK;
	const struct wh_graph *ag = am->graph, *g = T->g;
	uint8_t *hl = calloc((size_t)ag->n_nodes + 1, 1), *draw = calloc((size_t)ag->n_nodes + 1, 1);
	uint32_t *uses = NULL;
	enum wh_status st = WH_OK;
	FILE *f = NULL;
	if (!hl || !draw) {
		st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < ag->n_nodes; i++) {
		const struct wh_node *an = &ag->nodes[i];
		if (!an->name)
			continue;
		if (T->rep->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0 && !strcmp(an->name, T->diff.s[T->culprit].layer))
			hl[i] = 1;
		if (T->rep->outcome != WH_TRIAGE_FLAKY && T->first_fail >= 0 && !strcmp(an->name, node_name(&g->nodes[T->lw[T->first_fail].node])))
			hl[i] = 1;
		for (uint32_t k = 0; T->keep_mask && k < T->keep.n_layers; k++)
			if (!strcmp(an->name, T->keep.layers[k].layer))
				hl[i] = 1;
		draw[i] = !is_constant(an);
	}
	if (ag->n_nodes > 150) {
		/* the highlighted layers and their neighbours */
		memset(draw, 0, ag->n_nodes);
		for (uint32_t i = 0; i < ag->n_nodes; i++) {
			if (!hl[i])
				continue;
			draw[i] = 1;
			const struct wh_node *an = &ag->nodes[i];
			for (uint32_t j = 0; j < an->n_inputs; j++)
				if (an->inputs[j] != WH_NONE && ag->values[an->inputs[j]].producer != WH_NONE)
					draw[ag->values[an->inputs[j]].producer] = 1;
			for (uint32_t c = 0; c < ag->n_nodes; c++)
				for (uint32_t j = 0; j < ag->nodes[c].n_inputs; j++)
					for (uint32_t o = 0; o < an->n_outputs; o++)
						if (an->outputs[o] != WH_NONE && ag->nodes[c].inputs[j] == an->outputs[o])
							draw[c] = 1;
		}
		uint32_t drawn = 0;
		for (uint32_t i = 0; i < ag->n_nodes; i++) {
			if (is_constant(&ag->nodes[i]))
				draw[i] = 0;
			drawn += draw[i];
		}
		if (!drawn) /* nothing to centre on: the whole model, however large */
			for (uint32_t i = 0; i < ag->n_nodes; i++)
				draw[i] = !is_constant(&ag->nodes[i]);
	}
	char title[512];
	const char *what = T->rep->outcome == WH_TRIAGE_SINGLE_LAYER ? "the failing layer" :
			   T->rep->outcome == WH_TRIAGE_SUBGRAPH ? "the minimal failing subgraph" :
			   T->rep->outcome == WH_TRIAGE_FLAKY ? "the layer with the flaky tactic" : "the repro model";
	bprintf(title, sizeof title, "%s, %u layer%s (red: %s)", what, T->n_answer, T->n_answer == 1 ? "" : "s",
		T->rep->outcome == WH_TRIAGE_FLAKY ? "the culprit" : T->n_keep ? "first failing, keep in fp32" : "first failing");
	struct wh_graph_picture gp = {.title = title, .draw = draw, .highlight = hl};
	bprintf(T->dot_path, sizeof T->dot_path, "%s/subgraph.dot", T->dir);
	bprintf(T->pic_path, sizeof T->pic_path, "%s/subgraph.svg", T->dir);
	if (!(f = fopen(T->dot_path, "w"))) {
		st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", T->dot_path, strerror(errno));
		goto out;
	}
	st = wh_dot_write_graph(f, am, &gp);
	if (fclose(f) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", T->dot_path);
	f = NULL;
	if (st != WH_OK)
		goto out;
	char dot[PATH_MAX];
	if (T->o->graphviz && find_in_path("dot", dot, sizeof dot)) {
		char *argv[] = {dot, "-Tsvg", "-o", T->pic_path, T->dot_path, NULL};
		struct wh_check_options co = {.argv = argv, .argc = 5, .timeout_s = 120};
		struct wh_check *c = NULL;
		struct wh_check_result r = {0};
		if (wh_check_create(&co, &c) == WH_OK && wh_check_run(c, NULL, &r) == WH_OK && r.verdict == WH_VERDICT_PASS &&
		    access(T->pic_path, R_OK) == 0)
			T->pic_graphviz = true;
		else
			say(T, "graphviz: `dot` failed (%s); drawing the picture without it", r.why ? r.why : "could not run");
		wh_check_result_release(&r);
		wh_check_destroy(c);
	}
	if (!T->pic_graphviz) {
		if (!(f = fopen(T->pic_path, "w"))) {
			st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", T->pic_path, strerror(errno));
			goto out;
		}
		st = wh_svg_write_graph(f, am, &gp);
		if (fclose(f) != 0 && st == WH_OK)
			st = wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", T->pic_path);
		f = NULL;
	}
	T->pic_ok = st == WH_OK;
out:
	free(uses);
	free(hl);
	free(draw);
	return st;
}

/* ---- report.md ---- */

static const char *outcome_words(enum wh_triage_outcome o)
{
	switch (o) {
	case WH_TRIAGE_PASSES: return "nothing fails";
	case WH_TRIAGE_FLAKY: return "intermittent: a flaky tactic";
	case WH_TRIAGE_SINGLE_LAYER: return "a single-layer failure";
	case WH_TRIAGE_SUBGRAPH: return "a failure that needs several layers";
	default: return "fails, not localized";
	}
}

static void write_layer_table(const struct tri *T, FILE *f)
{
	const struct wh_graph *g = T->g;
	fprintf(f, "| # | layer | op | tensor | max abs | max rel | rel. L2 | SQNR dB | inf/NaN | verdict |\n");
	fprintf(f, "| ---: | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |\n");
	uint32_t shown = 0;
	for (uint32_t i = 0; i < T->n_lw && shown < 12; i++) {
		const struct lw_layer *L = &T->lw[i];
		/* the failing layers first of all, and the layers of the answer */
		bool in_answer = T->answer_nodes && T->answer_nodes[L->node];
		if (!L->fails && !in_answer)
			continue;
		const struct wh_node *n = &g->nodes[L->node];
		char sq[32];
		if (isinf(L->rel))
			bprintf(sq, sizeof sq, "-");
		else
			bprintf(sq, sizeof sq, "%.1f", L->s.sqnr_db);
		fprintf(f, "| %u | `%s` | %s | `%s` | %.4g | %.4g | %.3g | %s | %llu | %s%s |\n", i + 1, node_name(n), n->op_type,
			g->values[L->value].name, L->s.max_abs, L->s.max_rel, L->rel, sq,
			(unsigned long long)(L->s.inf_actual + L->s.nan_actual), L->fails ? "fails" : "passes",
			(int32_t)i == T->first_fail ? " (first)" : "");
		shown++;
	}
	if (!shown)
		fprintf(f, "| | (no layer fails) | | | | | | | | |\n");
}

static void write_report(struct tri *T)
{
	char p[PATH_MAX + 32];
	bprintf(p, sizeof p, "%s/report.md", T->dir);
	FILE *f = fopen(p, "w");
	if (!f) {
		wh_warn("%s: cannot write the report: %s", p, strerror(errno));
		return;
	}
	const struct wh_triage_options *o = T->o;
	const struct wh_triage_report *r = T->rep;
	const struct wh_graph *g = T->g;
	const struct wh_cpu_features *cpu = wh_cpu();
	uint32_t layers = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		layers += !is_constant(&g->nodes[i]);
	fprintf(f, "# whittle triage: `%s`\n\n**Outcome: %s.**\n\n", o->model_path ? o->model_path : "model", outcome_words(r->outcome));
	fprintf(f, "## What was found\n\n%s\n\n## What to do next\n\n%s\n\n", T->finding, T->next);

	fprintf(f, "## Key numbers\n\n| | |\n| --- | --- |\n");
	fprintf(f, "| model | `%s`: %u layers |\n", o->model_path ? o->model_path : "?", layers);
	fprintf(f, "| precision | %s against FP32; atol %g, rtol %g |\n", pname(o->precision), o->compare.atol, o->compare.rtol);
	fprintf(f, "| check | %s |\n", T->check_display ? T->check_display : "built-in: outputs compared with FP32");
	if (o->faulty_tactic && *o->faulty_tactic)
		fprintf(f, "| fault injection | `WHITTLE_FAULTY_TACTIC=%s` (a test setting: that tactic corrupts its output) |\n", o->faulty_tactic);
	fprintf(f, "| builds | %u (seeds 0..%u): %u good, %u bad%s |\n", T->n_builds, T->n_builds ? T->n_builds - 1 : 0, T->n_good, T->n_bad,
		T->no_tactics ? " (no layer has a choice of tactics)" : "");
	if (r->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0) {
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		fprintf(f, "| culprit | layer `%s` (%s), tactic `%s`: %s; in %u of %u bad builds, %u of %u good |\n", s->layer, r->op, s->tactic,
			wh_suspect_state_name(s->state), s->n_bad, T->diff.n_bad, s->n_good, T->diff.n_good);
	}
	if (T->first_fail >= 0) {
		const struct lw_layer *L = &T->lw[T->first_fail];
		fprintf(f, "| first failing tensor | `%s` (layer `%s`, %s): max abs error %.4g, max rel %.4g, %llu inf/NaN of %llu |\n",
			g->values[L->value].name, node_name(&g->nodes[L->node]), g->nodes[L->node].op_type, L->s.max_abs, L->s.max_rel,
			(unsigned long long)(L->s.inf_actual + L->s.nan_actual), (unsigned long long)L->s.count);
	}
	if (T->n_lw)
		fprintf(f, "| failing layers (layerwise) | %u of %u compared |\n", T->lw_failing, T->n_lw);
	if (T->answer && r->outcome != WH_TRIAGE_FLAKY)
		fprintf(f, "| %s | %u of %u layers |\n", r->outcome == WH_TRIAGE_SINGLE_LAYER ? "failing layer" : "minimal failing subgraph", T->n_answer,
			layers);
	if (T->prec_run) {
		fprintf(f, "| layers to keep in fp32 | ");
		if (T->prec_st != WH_OK)
			fprintf(f, "none found |\n");
		else {
			fprintf(f, "%u:", T->n_keep);
			for (uint32_t k = 0; k < g->n_nodes; k++)
				if (T->keep_mask[T->order[k]])
					fprintf(f, " `%s` (%s)", node_name(&g->nodes[T->order[k]]), g->nodes[T->order[k]].op_type);
			fprintf(f, " |\n");
		}
	}
	fprintf(f, "| checks run | %u: builds %u, swaps %u, layer alone %u, reduce %u, precision %u, repro %u |\n", T->checks, T->n_builds,
		T->swaps, T->alone_checks, T->reduce_run ? T->rr.checks_run : 0u, T->prec_run ? T->pr.checks_run : 0u,
		T->repro_checked ? 1u : 0u);
	fprintf(f, "| time | %.2f s |\n", wh_os_now_s() - T->t0);
	if (T->repro_checked) {
		char w[768];
		repro_words(T, w, sizeof w);
		fprintf(f, "| repro command | `sh repro/command.sh` %s |\n", w);
	}
	fprintf(f, "| whittle | %s on %s (ISA %s) |\n\n", WHITTLE_VERSION, cpu->brand[0] ? cpu->brand : "unknown CPU", wh_isa_name(cpu->isa));

	fprintf(f, "## What was tried\n\n");
	for (uint32_t i = 0; i < T->n_steps; i++)
		fprintf(f, "%u. **%s** %s\n", i + 1, T->steps[i].name, T->steps[i].text);
	fprintf(f, "\n");

	if (r->outcome == WH_TRIAGE_FLAKY) {
		fprintf(f, "## Tactic suspects\n\nTactics that layers use only in bad builds, most likely first (score: the share of bad builds using\nit); each was swapped into a good build (forward) and, when that turned it bad, out of a bad build\n(reverse).\n\n");
		if (!T->diff.n)
			fprintf(f, "None.\n\n");
		else {
			fprintf(f, "| # | layer | tactic | bad builds | good builds | score | forward | reverse | state |\n");
			fprintf(f, "| ---: | --- | --- | ---: | ---: | ---: | --- | --- | --- |\n");
			for (uint32_t i = 0; i < T->diff.n && i < 20; i++) {
				const struct wh_tactic_suspect *s = &T->diff.s[i];
				fprintf(f, "| %u | `%s` | `%s` | %u of %u | %u of %u | %.3f | %s | %s | %s |\n", i + 1, s->layer, s->tactic, s->n_bad,
					T->diff.n_bad, s->n_good, T->diff.n_good, s->score,
					s->forward_run ? (s->forward == WH_VERDICT_FAIL ? "turns bad" : s->forward == WH_VERDICT_PASS ? "stays good" : "?") : "-",
					s->reverse_run ? (s->reverse == WH_VERDICT_PASS ? "turns good" : s->reverse == WH_VERDICT_FAIL ? "stays bad" : "?") : "-",
					wh_suspect_state_name(s->state));
			}
			fprintf(f, "\n");
		}
		fprintf(f, "Builds:\n\n| build | seed | verdict | why |\n| ---: | ---: | --- | --- |\n");
		for (uint32_t k = 0; k < T->n_builds; k++)
			fprintf(f, "| %u | %llu | %s | %s |\n", k, (unsigned long long)T->plans[k].seed,
				T->verdicts[k] == WH_VERDICT_PASS ? "good" : T->verdicts[k] == WH_VERDICT_FAIL ? "bad" : "cannot tell", T->why[k]);
		fprintf(f, "\n");
	}
	if (T->plot_ok) {
		fprintf(f, "## Per-layer error\n\n![relative L2 error per layer](layer-errors.svg)\n\n");
		fprintf(f, "Relative L2 error of each layer's output against FP32 (%s), in topological order; red bars fail the tolerance%s. ",
			r->outcome == WH_TRIAGE_FLAKY ? "a bad build, pinned" : "the failing run", T->first_fail >= 0 ? ", the dashed line marks the first failing layer" : "");
		fprintf(f, "Failing layers%s:\n\n", T->answer && r->outcome != WH_TRIAGE_FLAKY ? " and the layers of the answer" : "");
		write_layer_table(T, f);
		fprintf(f, "\n");
	}
	if (T->pic_ok) {
		fprintf(f, "## The layers of the answer\n\n![the repro model](subgraph.svg)\n\n");
		fprintf(f, "Drawn %s; the Graphviz source is `subgraph.dot`.\n\n",
			T->pic_graphviz ? "with Graphviz" : "by whittle (Graphviz's `dot` is not installed, or --no-graphviz)");
	}
	fprintf(f, "## Files\n\n");
	if (T->answer)
		fprintf(f, "- `repro/`: `model.onnx`, `inputs/`, `golden/` (FP32 reference outputs), `command.sh`%s, `report.md`\n",
			T->repro_tactics ? ", `tactics.json` (the bad build's tactic replay)" : "");
	fprintf(f, "- `builds/`: the tactic replay of every build (`build_<k>.json`)%s\n", T->swaps ? " and of every confirmation swap" : "");
	if (T->fixed_build >= 0)
		fprintf(f, "- `fixed.json`: the fastest good build (build %d)\n", T->fixed_build);
	if (T->prec_run && T->prec_st == WH_OK)
		fprintf(f, "- `layer-precisions.json`: the layers to keep in fp32 (`--layer-precisions`)\n");
	if (T->reduce_run)
		fprintf(f, "- `reduce/`: the reduction's artifacts (`reduced.onnx`, `replay.jsonl`)\n");
	fprintf(f, "- `inputs/`, `golden/`: the model's inputs and FP32 outputs; `triage.log`: every step's progress\n");
	fclose(f);

	/* the bundle's own report: what it is and how to run it */
	bprintf(p, sizeof p, "%s/repro/report.md", T->dir);
	if (!(f = fopen(p, "w")))
		return;
	fprintf(f, "# whittle triage repro\n\n%s\n\n", T->finding);
	fprintf(f, "- from: `%s`, at %s against FP32 (atol %g, rtol %g)\n", o->model_path ? o->model_path : "?", pname(o->precision),
		o->compare.atol, o->compare.rtol);
	fprintf(f, "- model.onnx: %u layer%s:", T->n_answer, T->n_answer == 1 ? "" : "s");
	if (T->answer) {
		const struct wh_graph *ag = T->answer->graph;
		uint32_t shown = 0;
		for (uint32_t i = 0; i < ag->n_nodes && shown < 40; i++)
			if (!is_constant(&ag->nodes[i])) {
				fprintf(f, "%s `%s` (%s)", shown ? "," : "", node_name(&ag->nodes[i]), ag->nodes[i].op_type);
				shown++;
			}
		if (shown == 40)
			fprintf(f, ", ...");
	}
	fprintf(f, "\n- inputs/: its inputs (FP32 reference values); golden/: its FP32 reference outputs\n");
	if (T->repro_tactics)
		fprintf(f, "- tactics.json: the tactic replay of a bad build\n");
	if (o->faulty_tactic && *o->faulty_tactic)
		fprintf(f, "- fault injection: `WHITTLE_FAULTY_TACTIC=%s` (set by command.sh)\n", o->faulty_tactic);
	fprintf(f, "- whittle %s, CPU %s (ISA %s)\n\n## Rerun\n\n    sh command.sh\n\nruns\n\n    %s\n\nwhich exits non-zero while the failure is there",
		WHITTLE_VERSION, cpu->brand[0] ? cpu->brand : "unknown", wh_isa_name(cpu->isa), T->repro_cmd);
	if (T->repro_checked)
		fprintf(f, " (triage ran it: exit %d%s)", T->repro_exit, T->repro_fails ? ", fails" : ", which is not a failure");
	fprintf(f, ".\n");
	fclose(f);
}

/* ---- the result on stdout ---- */

static void print_json(struct tri *T)
{
	const struct wh_triage_report *r = T->rep;
	const struct wh_graph *g = T->g;
	json_t *o = json_object();
	json_object_set_new(o, "outcome", json_string(wh_triage_outcome_name(r->outcome)));
	json_object_set_new(o, "model", json_string(T->o->model_path ? T->o->model_path : ""));
	json_object_set_new(o, "precision", json_string(pname(T->o->precision)));
	json_object_set_new(o, "builds", json_integer(T->n_builds));
	json_object_set_new(o, "good", json_integer(T->n_good));
	json_object_set_new(o, "bad", json_integer(T->n_bad));
	if (r->outcome == WH_TRIAGE_FLAKY && T->culprit >= 0) {
		json_t *c = json_object();
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		json_object_set_new(c, "layer", json_string(s->layer));
		json_object_set_new(c, "op", json_string(r->op));
		json_object_set_new(c, "tactic", json_string(s->tactic));
		json_object_set_new(c, "state", json_string(wh_suspect_state_name(s->state)));
		json_object_set_new(o, "culprit", c);
	}
	if (T->fixed_build >= 0) {
		char p[PATH_MAX + 32];
		bprintf(p, sizeof p, "%s/fixed.json", T->dir);
		json_object_set_new(o, "fixed", json_string(p));
	}
	if (T->first_fail >= 0) {
		const struct lw_layer *L = &T->lw[T->first_fail];
		json_t *ff = json_object();
		json_object_set_new(ff, "tensor", json_string(g->values[L->value].name));
		json_object_set_new(ff, "layer", json_string(node_name(&g->nodes[L->node])));
		json_object_set_new(ff, "op", json_string(g->nodes[L->node].op_type));
		json_object_set_new(ff, "max_abs", isfinite(L->s.max_abs) ? json_real(L->s.max_abs) : json_null());
		json_object_set_new(ff, "max_rel", isfinite(L->s.max_rel) ? json_real(L->s.max_rel) : json_null());
		json_object_set_new(o, "first_failing", ff);
	}
	if (T->single_run)
		json_object_set_new(o, "layer_alone", json_string(wh_verdict_name(T->single_v)));
	if (T->answer_nodes) {
		json_t *a = json_array();
		for (uint32_t k = 0; k < g->n_nodes; k++)
			if (T->answer_nodes[T->order[k]])
				json_array_append_new(a, json_string(node_name(&g->nodes[T->order[k]])));
		json_object_set_new(o, "layers", a);
	}
	if (T->prec_run && T->prec_st == WH_OK) {
		json_t *a = json_array();
		for (uint32_t k = 0; k < g->n_nodes; k++)
			if (T->keep_mask[T->order[k]])
				json_array_append_new(a, json_string(node_name(&g->nodes[T->order[k]])));
		json_object_set_new(o, "keep_fp32", a);
		char p[PATH_MAX + 32];
		bprintf(p, sizeof p, "%s/layer-precisions.json", T->dir);
		json_object_set_new(o, "layer_precisions", json_string(p));
	}
	char p[PATH_MAX + 32];
	bprintf(p, sizeof p, "%s/repro", T->dir);
	if (T->answer)
		json_object_set_new(o, "repro", json_string(p));
	if (T->repro_checked) {
		json_object_set_new(o, "repro_exit", json_integer(T->repro_exit));
		json_object_set_new(o, "repro_fails", json_boolean(T->repro_fails));
	}
	bprintf(p, sizeof p, "%s/report.md", T->dir);
	json_object_set_new(o, "report", json_string(p));
	json_object_set_new(o, "finding", json_string(T->finding));
	json_object_set_new(o, "next", json_string(T->next));
	json_object_set_new(o, "checks", json_integer(T->checks));
	json_object_set_new(o, "seconds", json_real(wh_os_now_s() - T->t0));
	char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (s) {
		puts(s);
		fflush(stdout);
	}
	free(s);
	json_decref(o);
}

static void print_summary(struct tri *T, FILE *f)
{
	fprintf(f, "triage: %s\n%s\nnext: %s\n", outcome_words(T->rep->outcome), T->finding, T->next);
	if (T->repro_checked) {
		char w[768];
		repro_words(T, w, sizeof w);
		fprintf(f, "repro: %s/repro/command.sh %s\n", T->dir, w);
	}
	fprintf(f, "report: %s/report.md (%u checks, %.1f s)\n", T->dir, T->checks, wh_os_now_s() - T->t0);
	fflush(f);
}

/* Removes what an earlier triage into the same folder left and this one may not write. */
static void remove_stale(struct tri *T)
{
	static const char *const files[] = {"fixed.json", "layer-precisions.json", "layer-errors.svg", "subgraph.svg", "subgraph.dot",
					    "report.md", "repro/tactics.json", "repro/command.sh"};
	char p[PATH_MAX + 64];
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		bprintf(p, sizeof p, "%s/%s", T->dir, files[i]);
		remove(p);
	}
	for (uint32_t k = 0; k < 100000; k++) {
		bprintf(p, sizeof p, "%s/build_%u.json", T->builds_dir, k);
		if (remove(p) != 0)
			break;
	}
	for (uint32_t k = 1; k < 100000; k++) {
		int gone = 0;
		bprintf(p, sizeof p, "%s/swap_%u_forward.json", T->builds_dir, k);
		gone += remove(p) == 0;
		bprintf(p, sizeof p, "%s/swap_%u_reverse.json", T->builds_dir, k);
		gone += remove(p) == 0;
		if (!gone)
			break;
	}
}

static uint32_t find_node(const struct wh_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].name && !strcmp(g->nodes[i].name, name))
			return i;
	return WH_NONE;
}

/* The flaky branch's repro: the culprit layer alone with the bad build's tactics, when that
 * fails; else the whole model with them. */
static enum wh_status flaky_answer(struct tri *T, struct wh_model **owned)
{
	struct step *S = add_step(T, "Culprit layer alone");
	uint32_t node = T->culprit >= 0 ? find_node(T->g, T->diff.s[T->culprit].layer) : WH_NONE;
	if (node == WH_NONE) {
		bprintf(S->text, sizeof S->text, "No confirmed culprit: the repro is the whole model with a bad build's tactics.");
		return WH_OK;
	}
	struct wh_model *single = NULL;
	enum wh_status st = extract_layer(T, node, &single);
	if (st != WH_OK)
		return st;
	enum wh_verdict v = WH_VERDICT_SKIP;
	struct wh_compare_stats s;
	bool valid;
	char why[256], dir[PATH_MAX + 16];
	bprintf(dir, sizeof dir, "%s/single", T->dir);
	if (single->graph->n_outputs) {
		st = check_part(T, single, T->pin, dir, &v, &s, &valid, why, sizeof why);
		T->alone_checks++;
	}
	else
		bprintf(why, sizeof why, "it has no output the rest of the model reads");
	if (st == WH_OK && v == WH_VERDICT_FAIL) {
		*owned = single;
		bprintf(S->text, sizeof S->text, "Extracted layer `%s` alone (inputs fed with FP32 reference values) and pinned tactic `%s`: it fails on its own (%s), so the repro is that layer alone with the bad build's tactics.",
			T->diff.s[T->culprit].layer, T->diff.s[T->culprit].tactic, why);
		return WH_OK;
	}
	wh_model_destroy(single);
	if (st == WH_OK)
		bprintf(S->text, sizeof S->text, "Layer `%s` alone with tactic `%s` does not fail (%s): the repro is the whole model with the bad build's tactics.",
			T->diff.s[T->culprit].layer, T->diff.s[T->culprit].tactic, why);
	return st;
}

enum wh_status wh_triage_run(const struct wh_model *m, const struct wh_tensor_set *inputs, const struct wh_triage_options *o,
			     struct wh_triage_report *rep)
{
	struct tri TT = {.m = m, .g = m->graph, .inputs = inputs, .o = o, .rep = rep};
	struct tri *T = &TT;
	memset(rep, 0, sizeof *rep);
	rep->outcome = WH_TRIAGE_UNLOCALIZED;
	T->culprit = T->fixed_build = T->bad_build = T->first_fail = -1;
	T->t0 = wh_os_now_s();
	wh_precision_config_init(&T->pc);
	wh_precision_config_init(&T->keep);
	wh_tensor_set_init(&T->ref);
	wh_tactic_diff_init(&T->diff);
	struct wh_model *owned = NULL;     /* the repro model when it is a part of m */
	enum wh_status st = WH_OK;
	const struct wh_graph *g = m->graph;
	if (!o->artifacts_dir || !*o->artifacts_dir)
		return wh_error(WH_ERR_USAGE, "triage: no artifacts folder (give --artifacts-dir DIR)");
	if (strlen(o->artifacts_dir) >= sizeof T->dir - 64)
		return wh_error(WH_ERR_INVALID, "%s: path too long (use a shorter --artifacts-dir)", o->artifacts_dir);
	bprintf(T->dir, sizeof T->dir, "%s", o->artifacts_dir);
	bprintf(T->inputs_dir, sizeof T->inputs_dir, "%s/inputs", T->dir);
	bprintf(T->golden_dir, sizeof T->golden_dir, "%s/golden", T->dir);
	bprintf(T->prec_path, sizeof T->prec_path, "%s/precisions.json", T->dir);
	bprintf(T->builds_dir, sizeof T->builds_dir, "%s/builds", T->dir);
	T->pc.dflt = o->precision;
	T->pc.calib = o->calib;
	T->order = calloc((size_t)g->n_nodes + 1, sizeof *T->order);
	T->pos = calloc((size_t)g->n_nodes + 1, sizeof *T->pos);
	T->answer_nodes = calloc((size_t)g->n_nodes + 1, 1);
	if (!T->order || !T->pos || !T->answer_nodes) {
		st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, T->order)) != WH_OK)
		goto out;
	for (uint32_t k = 0; k < g->n_nodes; k++)
		T->pos[T->order[k]] = k;
	if ((st = wh_os_make_dir(T->dir)) != WH_OK || (st = wh_os_make_dir(T->builds_dir)) != WH_OK)
		goto out;
	remove_stale(T);
	{
		char p[PATH_MAX + 32];
		bprintf(p, sizeof p, "%s/triage.log", T->dir);
		if (!(T->logf = fopen(p, "w"))) {
			st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", p, strerror(errno));
			goto out;
		}
	}
	if ((st = wh_tensor_set_write_dir(T->inputs_dir, NULL, inputs)) != WH_OK)
		goto out;
	if ((st = reference_run(T)) != WH_OK)
		goto out;
	if ((st = write_ref_tensors(T, m, true, T->golden_dir)) != WH_OK)
		goto out;
	if ((st = wh_precision_config_write(&T->pc, T->prec_path)) != WH_OK)
		goto out;
	if (o->check) {
		if ((st = wh_check_create(o->check, &T->c_raw)) != WH_OK)
			goto out;
		T->check_display = wh_check_command_line(T->c_raw, NULL);
	}
	say(T, "%s at %s; check: %s%s", o->model_path ? o->model_path : "model", pname(o->precision),
	    T->check_display ? T->check_display : "built-in comparison with FP32",
	    o->faulty_tactic && *o->faulty_tactic ? " (fault injection on: WHITTLE_FAULTY_TACTIC)" : "");

	/* 1. intermittent? */
	if ((st = step_builds(T)) != WH_OK)
		goto out;
	const struct wh_model *answer = m;
	const struct wh_tactic_plan *repro_plan = NULL;
	if (!T->n_bad) {
		rep->outcome = WH_TRIAGE_PASSES;
		answer = NULL;
	} else if (T->n_good) {
		rep->outcome = WH_TRIAGE_FLAKY;
		if (T->culprit >= 0) {
			const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
			uint32_t node = find_node(g, s->layer);
			bprintf(rep->layer, sizeof rep->layer, "%s", s->layer);
			bprintf(rep->tactic, sizeof rep->tactic, "%s", s->tactic);
			bprintf(rep->op, sizeof rep->op, "%s", node != WH_NONE ? g->nodes[node].op_type : "?");
		}
		say(T, "step 2: layerwise comparison of bad build %d (for the report)", T->bad_build);
		if ((st = layerwise(T, true)) != WH_OK)
			goto out;
		if ((st = flaky_answer(T, &owned)) != WH_OK)
			goto out;
		if (owned)
			answer = owned;
		repro_plan = T->pin;
	} else {
		/* the checks of the later steps see the failing build's replay as {tactics} */
		if (o->check) {
			char tac[PATH_MAX + 64];
			bprintf(tac, sizeof tac, "%s/build_%d.json", T->builds_dir, T->bad_build);
			const char *k1[] = {"{tactics}", "{precisions}"}, *v1[] = {tac, T->prec_path};
			const char *k2[] = {"{tactics}", "{golden}"}, *v2[] = {tac, T->golden_dir};
			if ((st = derived_check(o->check, k1, v1, 2, &T->w_reduce, &T->c_reduce)) != WH_OK ||
			    (st = derived_check(o->check, k2, v2, 2, &T->w_prec, &T->c_prec)) != WH_OK)
				goto out;
		}
		say(T, "step 2: layerwise comparison with every tensor kept");
		if ((st = layerwise(T, true)) != WH_OK)
			goto out;
		if (T->first_fail >= 0) {
			const struct lw_layer *L = &T->lw[T->first_fail];
			say(T, "  first failing tensor: '%s' (layer '%s', %s)", g->values[L->value].name, node_name(&g->nodes[L->node]),
			    g->nodes[L->node].op_type);
			if ((st = step_single(T, &owned)) != WH_OK)
				goto out;
		} else {
			struct step *S = add_step(T, "First failing layer alone");
			bprintf(S->text, sizeof S->text, "Skipped: no layer fails the layerwise comparison.");
		}
		if (owned) {
			rep->outcome = WH_TRIAGE_SINGLE_LAYER;
			answer = owned;
			struct step *S = add_step(T, "Reduce");
			bprintf(S->text, sizeof S->text, "Skipped: the layer fails on its own, nothing smaller exists.");
		} else {
			if ((st = step_reduce(T, &owned)) != WH_OK)
				goto out;
			if (owned) {
				rep->outcome = WH_TRIAGE_SUBGRAPH;
				answer = owned;
			}
		}
		if (o->precision_search) {
			if ((st = step_precision(T)) != WH_OK)
				goto out;
		}
		if (o->faulty_tactic && *o->faulty_tactic && T->pin && T->pin->n)
			repro_plan = T->pin;
	}
	if (rep->outcome == WH_TRIAGE_SINGLE_LAYER || rep->outcome == WH_TRIAGE_SUBGRAPH || rep->outcome == WH_TRIAGE_UNLOCALIZED) {
		uint32_t node = WH_NONE;
		if (rep->outcome != WH_TRIAGE_SUBGRAPH && T->first_fail >= 0)
			node = T->lw[T->first_fail].node;
		if (node != WH_NONE) {
			bprintf(rep->layer, sizeof rep->layer, "%s", node_name(&g->nodes[node]));
			bprintf(rep->op, sizeof rep->op, "%s", g->nodes[node].op_type);
		}
	}
	/* the repro bundle */
	if (answer) {
		T->answer = answer;
		T->n_answer = mark_part(T, answer, T->answer_nodes);
		rep->subgraph_layers = T->n_answer;
		if (rep->outcome == WH_TRIAGE_SUBGRAPH && T->n_answer == 1) {
			/* the reduction found one layer (the layerwise comparison pointed elsewhere):
			 * the stats of step 3 belong to that other layer */
			rep->outcome = WH_TRIAGE_SINGLE_LAYER;
			T->single_s_valid = false;
			for (uint32_t i = 0; i < g->n_nodes; i++)
				if (T->answer_nodes[i]) {
					bprintf(rep->layer, sizeof rep->layer, "%s", node_name(&g->nodes[i]));
					bprintf(rep->op, sizeof rep->op, "%s", g->nodes[i].op_type);
					for (uint32_t k = 0; k < T->n_lw; k++)
						if (T->lw[k].node == i)
							T->first_fail = (int32_t)k;
				}
		}
		say(T, "step 6: repro bundle in %s/repro", T->dir);
		if ((st = write_bundle(T, answer, repro_plan)) != WH_OK)
			goto out;
		if ((st = check_bundle(T)) != WH_OK)
			goto out;
		struct step *S = add_step(T, "Repro bundle");
		bprintf(S->text, sizeof S->text, "Wrote `repro/` (%u layer%s%s) and ran `sh repro/command.sh` ", T->n_answer, T->n_answer == 1 ? "" : "s",
			repro_plan ? ", with the bad build's tactic replay" : "");
		if (T->repro_checked)
		{
			char w[768];
			repro_words(T, w, sizeof w);
			bcat(S->text, sizeof S->text, "as a user would: it %s.", w);
		}
		else
			bcat(S->text, sizeof S->text, "(not run: the whittle binary is unknown).");
	}
	compose_finding(T);
	if (T->n_lw && (st = write_plot(T)) != WH_OK)
		goto out;
	if ((st = write_picture(T)) != WH_OK)
		goto out;
	rep->checks = T->checks;
	rep->seconds = wh_os_now_s() - T->t0;
	write_report(T);
	say(T, "done: %s; %u checks, %.1f s", outcome_words(rep->outcome), T->checks, rep->seconds);
	if (o->json)
		print_json(T);
	else if (o->out)
		print_summary(T, o->out);
out:
	rep->checks = T->checks;
	rep->seconds = wh_os_now_s() - T->t0;
	if (T->logf)
		fclose(T->logf);
	wh_model_destroy(owned);
	free(T->order);
	free(T->pos);
	free(T->answer_nodes);
	free(T->lw);
	free(T->keep_mask);
	for (uint32_t k = 0; T->plans && k < (o->builds ? o->builds : 1); k++)
		wh_tactic_plan_release(&T->plans[k]);
	free(T->plans);
	free(T->verdicts);
	free(T->why);
	wh_tactic_diff_release(&T->diff);
	wh_precision_config_release(&T->pc);
	wh_precision_config_release(&T->keep);
	wh_tensor_set_release(&T->ref);
	wh_check_destroy(T->c_raw);
	wh_check_destroy(T->c_reduce);
	wh_check_destroy(T->c_prec);
	free_words(T->w_reduce);
	free_words(T->w_prec);
	free(T->check_display);
	return st;
}
