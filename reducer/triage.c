/* triage's flowchart: the steps, the checks they run and the repro bundle; the report is
 * triage-report.c. */
#include "reducer/triage.h"
#include "reducer/triage-internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "executor/cpu.h"
#include "executor/diagnose.h"
#include "executor/executor.h"
#include "graph/extract.h"
#include "graph/onnx-io.h"
#include "graph/os.h"
#include "graph/shape.h"
#include "graph/topo.h"
#include "reducer/builtin-check.h"
#include "reducer/driver-util.h"

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

void wh_triage_say(struct tri *T, const char *fmt, ...)
{
	va_list ap;
	char line[4096];
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* the names inside, a path, a check's output: escaped (idempotent) on both */
	if (T->o->log) {
		fputs("triage: ", T->o->log);
		wh_name_write(T->o->log, WH_NAME_TERM, line);
		fputc('\n', T->o->log);
		fflush(T->o->log);
	}
	if (T->logf) {
		fputs("triage: ", T->logf);
		wh_name_write(T->logf, WH_NAME_TERM, line);
		fputc('\n', T->logf);
		fflush(T->logf);
	}
}

static struct step *add_step(struct tri *T, const char *name)
{
	if (T->n_steps == MAX_STEPS)
		T->n_steps--; /* cannot happen with the fixed flowchart; keep the last slot */
	struct step *s = &T->steps[T->n_steps++];
	wh_text_printf(s->name, sizeof s->name, "%s", name);
	s->text[0] = '\0';
	return s;
}

/* ---- checks ---- */

/* Runs model (the original or a part of it) at the target precision with plan pinned and
 * compares its outputs with the FP32 reference values; the first failing output's stats go
 * to *worst (when not NULL). */
static enum wh_status builtin_check(struct tri *T, const struct wh_model *model, const struct wh_tactic_plan *plan,
				    enum wh_verdict *v, struct wh_compare_stats *worst, char *why, size_t wsize)
{
	struct wh_engine_options eo = {.threads = T->check_threads, .precision = &T->pc, .tactics = plan,
				       .faulty_tactic = T->o->faulty_tactic, .cuda = T->o->cuda, .cuda_device = T->o->cuda_device, .allow_reduced_reduction = T->o->allow_reduced};
	struct wh_builtin_check_options bo = {.compare = T->o->compare};
	struct wh_builtin_check_result res;
	enum wh_status st = wh_builtin_check_run(model, &eo, NULL, &T->ref, 1, &bo, &res);
	*v = res.verdict;
	wh_text_printf(why, wsize, "%s", res.why);
	if (worst && res.has_stats)
		*worst = res.stats;
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
		char where[512];
		wh_text_printf(where, sizeof where, " running %s", line ? line : "?");
		st = wh_check_result_broken(&r, where);
		free(line);
	}
	if (r.signal)
		wh_text_printf(why, wsize, "check %s (signal %d)", r.why ? r.why : "", r.signal);
	else
		wh_text_printf(why, wsize, "check %s (exit %d)", r.why ? r.why : "", r.exit_code);
	if (T->logf) {
		char *line = wh_check_command_line(c, vars);
		fprintf(T->logf, "check: %s -> %s, %s\n", line ? wh_name_term(line) : "?", wh_verdict_name(r.verdict), wh_name_term(why));
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
	for (int i = 0; i < co->argc && st == WH_OK; i++)
		if (!(words[i] = wh_text_subst(co->argv[i], keys, vals, n)))
			st = wh_error(WH_ERR_NOMEM, "triage: out of memory");
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
	enum wh_status st = wh_builtin_reference(T->m, T->o->threads, T->inputs, 1, true, &T->ref);
	return st == WH_OK ? wh_builtin_add_inputs(T->m, T->inputs, &T->ref) : st;
}

/* The named tensors of a model's inputs or outputs, from the reference. */
static enum wh_status write_ref_tensors(struct tri *T, const struct wh_model *model, bool outputs, const char *dir)
{
	return wh_reference_write(model, &T->ref, outputs, dir);
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
	wh_text_printf(path, sizeof path, "%s/swap_%u_%s.json", T->builds_dir, seq, sw->forward ? "forward" : "reverse");
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
		wh_triage_say(T, "  swap %u: %s build %u with layer '%s' tactic '%s' from build %u: %s (%s)", seq, sw->forward ? "good" : "bad",
		    sw->base, wh_name_term(sw->layer), wh_name_term(sw->tactic), sw->donor, *out == WH_VERDICT_PASS ? "good" : *out == WH_VERDICT_FAIL ? "bad" : "cannot tell",
		    why);
	wh_tactic_plan_release(&p);
	return st;
}

static bool plan_uses(const struct wh_tactic_plan *p, const char *layer, const char *tactic)
{
	const struct wh_tactic_choice *c = wh_tactic_plan_find(p, layer);
	return c && !strcmp(c->tactic, tactic);
}

/* Build k of step 1, made and checked on a thread of its own (wh_run_tasks): it writes
 * only T->plans[k], T->verdicts[k] and T->why[k]. */
struct tri_build {
	struct tri *T;
	const struct wh_engine_options *eo;
	uint32_t k;
	enum wh_status st;
	char err[512];
};

static void tri_build_task(void *ctx, uint32_t i)
{
	struct tri_build *b = &((struct tri_build *)ctx)[i];
	struct tri *T = b->T;
	uint32_t k = b->k;
	struct wh_build_options bo = T->o->build;
	bo.seed = k;
	char path[PATH_MAX + 64];
	wh_text_printf(path, sizeof path, "%s/build_%u.json", T->builds_dir, k);
	wh_error_clear();
	if ((b->st = wh_engine_build(T->m, b->eo, T->inputs, &bo, &T->plans[k])) == WH_OK &&
	    (b->st = wh_tactic_plan_write(&T->plans[k], path)) == WH_OK)
		b->st = check_plan(T, &T->plans[k], path, &T->verdicts[k], T->why[k], sizeof T->why[k]);
	if (b->st != WH_OK)
		wh_text_printf(b->err, sizeof b->err, "%s", wh_error_message());
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
	int jobs = o->jobs > 1 ? (o->jobs < 64 ? o->jobs : 64) : 1;
	struct wh_engine_options eo = {.threads = wh_threads_per_job(o->threads, jobs), .precision = &T->pc,
				       .faulty_tactic = o->faulty_tactic, .cuda = o->cuda, .cuda_device = o->cuda_device, .allow_reduced_reduction = o->allow_reduced};
	enum wh_status st = WH_OK;
	wh_triage_say(T, "step 1: intermittent? building up to %u times (seeds 0..%u) at %s", n, n - 1, wh_precision_name(o->precision));
	/* -j builds and checks at a time, taken in seed order (the answer of -j 1) */
	T->check_threads = eo.threads;
	for (uint32_t k0 = 0; k0 < n && !T->no_tactics && st == WH_OK; k0 += (uint32_t)jobs) {
		uint32_t r = n - k0 < (uint32_t)jobs ? n - k0 : (uint32_t)jobs;
		struct tri_build tb[64];
		for (uint32_t i = 0; i < r; i++)
			tb[i] = (struct tri_build){.T = T, .eo = &eo, .k = k0 + i};
		wh_run_tasks(jobs, r, tri_build_task, tb);
		for (uint32_t i = 0; i < r; i++) {
			uint32_t k = k0 + i;
			if (tb[i].st != WH_OK) {
				st = wh_error(tb[i].st, "%s", tb[i].err);
				break;
			}
			T->n_builds = k + 1;
			enum wh_verdict v = T->verdicts[k];
			T->n_good += v == WH_VERDICT_PASS;
			T->n_bad += v == WH_VERDICT_FAIL;
			T->n_skip += v == WH_VERDICT_SKIP;
			wh_triage_say(T, "  build %u: %u layers with tactics: %s (%s)", k, T->plans[k].n,
			    v == WH_VERDICT_PASS ? "good" : v == WH_VERDICT_FAIL ? "bad" : "cannot tell", T->why[k]);
			if (k == 0 && T->plans[0].n == 0) {
				/* no layer has a choice to make: every build would be this one */
				T->no_tactics = true;
				wh_triage_say(T, "  no layer has a choice of tactics: every build is this one");
				break;
			}
		}
		/* the builds of the round past the stop are dropped */
		for (uint32_t k = T->n_builds > k0 ? T->n_builds : k0; k < k0 + r; k++) {
			char path[PATH_MAX + 64];
			wh_text_printf(path, sizeof path, "%s/build_%u.json", T->builds_dir, k);
			remove(path);
		}
	}
	T->check_threads = o->threads;
	if (st != WH_OK)
		return st;
	T->rep->builds = T->n_builds;
	T->rep->n_good = T->n_good;
	T->rep->n_bad = T->n_bad;
	if (T->no_tactics)
		wh_text_printf(S->text, sizeof S->text, "No layer of the model has a choice of tactics, so every build is the same: built and checked once: %s (%s). Not intermittent%s.",
			T->n_bad ? "fails" : T->n_good ? "passes" : "cannot tell", wh_name_md(T->why[0]), T->n_bad ? ": go on with the layerwise comparison" : "");
	else
		wh_text_printf(S->text, sizeof S->text, "Built %u times (seeds 0..%u; %u layers choose among tactics) and checked each build: %u good, %u bad%s%s.",
			T->n_builds, T->n_builds - 1, T->plans[0].n, T->n_good, T->n_bad, T->n_skip ? ", cannot tell: " : "",
			T->n_skip ? "some" : "");
	if (!T->n_good && !T->n_bad)
		return wh_error(WH_ERR_CHECK, "check: cannot tell on any build (exit 125 or timeouts; fix the check or raise --timeout)");
	if (!T->n_bad) {
		wh_text_cat(S->text, sizeof S->text, " Every build passes: nothing fails at this tolerance.");
		return WH_OK;
	}
	if (!T->n_good) {
		if (!T->no_tactics)
			wh_text_cat(S->text, sizeof S->text, " Every build fails: the failure is not intermittent, so the tactic choice is not the cause; go on with the layerwise comparison.");
		for (uint32_t k = 0; k < T->n_builds; k++)
			if (T->verdicts[k] == WH_VERDICT_FAIL) {
				T->pin = &T->plans[k];
				T->bad_build = (int32_t)k;
				break;
			}
		return WH_OK;
	}
	/* builds disagree: which tactic? */
	wh_text_cat(S->text, sizeof S->text, " Builds disagree: the failure is intermittent, so a tactic choice is the likely cause.");
	const struct wh_tactic_plan **pp = calloc(T->n_builds, sizeof *pp);
	if (!pp)
		return wh_error(WH_ERR_NOMEM, "triage: out of memory");
	for (uint32_t k = 0; k < T->n_builds; k++)
		pp[k] = &T->plans[k];
	struct step *S2 = add_step(T, "Flaky-tactic localization");
	wh_triage_say(T, "step 1b: builds disagree (%u good, %u bad): diffing tactics and confirming suspects", T->n_good, T->n_bad);
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
		wh_text_printf(p, sizeof p, "%s/fixed.json", T->dir);
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
	wh_text_printf(S2->text, sizeof S2->text, "Diffed the tactic choices of the %u good and %u bad builds: %u suspect%s (tactics used only in bad builds).",
		T->n_good, T->n_bad, T->diff.n, T->diff.n == 1 ? "" : "s");
	if (T->confirm_run)
		wh_text_cat(S2->text, sizeof S2->text, " Swapped each suspect into a good build, and out of a bad one: %u swap checks, %u confirmed.",
		     T->cr.checks, T->cr.confirmed);
	if (T->culprit >= 0) {
		const struct wh_tactic_suspect *s = &T->diff.s[T->culprit];
		wh_text_cat(S2->text, sizeof S2->text, " %s: layer %s with tactic %s (good build %d turns bad with it; bad build %d %s without it).",
		     s->state == WH_SUSPECT_CONFIRMED ? "Confirmed" : "Breaks builds", wh_name_md(s->layer), wh_name_md(s->tactic), s->good_build, s->bad_build,
		     s->state == WH_SUSPECT_CONFIRMED ? "turns good" : "stays bad, so it has another cause too");
	} else {
		wh_text_cat(S2->text, sizeof S2->text, " No suspect could be confirmed.");
	}
	if (T->fixed_build >= 0)
		wh_text_cat(S2->text, sizeof S2->text, " The fastest good build (%d) is the fixed replay `fixed.json`.", T->fixed_build);
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
				       .faulty_tactic = T->o->faulty_tactic, .cuda = T->o->cuda, .cuda_device = T->o->cuda_device, .allow_reduced_reduction = T->o->allow_reduced};
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
		if (wh_node_is_constant(n) || kinds[id] == WH_LAYER_SHAPE || kinds[id] == WH_LAYER_CONST)
			continue;
		struct lw_layer *L = &T->lw[T->n_lw];
		L->node = id;
		L->value = WH_NONE;
		L->rel = NAN;
		for (uint32_t j = 0; j < n->n_outputs; j++) {
			uint32_t v = n->outputs[j];
			if (v == WH_NONE || (!uses[v] && !(g->values[v].flags & WH_VALUE_OUTPUT)))
				continue;
			const struct wh_tensor *a = wh_tensor_set_find(&res, g->values[v].name), *r = wh_triage_ref(T, g->values[v].name);
			if (!a || !r)
				continue;
			struct wh_compare_stats s;
			if ((st = wh_builtin_compare_tensor(a, r, &T->o->compare, &s)) != WH_OK)
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
	/* where the failure starts: overflow first, then the layer adding the most error
	 * relative to what it receives (the rule `run --compare --mark-all` uses) */
	T->tol_first = T->first_fail;
	T->start_kind = WH_DIAG_NONE;
	if (T->first_fail >= 0) {
		struct wh_diagnosis dg;
		wh_diagnosis_init(&dg);
		if ((st = wh_diagnose(T->m, &eo, &res, &T->ref, &dg)) != WH_OK)
			goto out;
		for (uint32_t k = 0; dg.start >= 0 && k < T->n_lw; k++)
			if (T->lw[k].node == dg.layers[dg.start].node) {
				T->first_fail = (int32_t)k;
				T->start_kind = (uint8_t)dg.kind;
			}
		wh_diagnosis_release(&dg);
	}
	if (record_step) {
		struct step *S = add_step(T, "Layerwise comparison");
		wh_text_printf(S->text, sizeof S->text, "Ran %s with every tensor kept (marking tensors does not change what whittle computes) and compared %u layers with FP32 (atol %g, rtol %g): %u fail.",
			T->pin && T->pin->n ? "a failing build" : "the model", T->n_lw, T->o->compare.atol, T->o->compare.rtol, T->lw_failing);
		if (T->tol_first >= 0) {
			const struct lw_layer *L = &T->lw[T->tol_first];
			const struct wh_node *n = &g->nodes[L->node];
			wh_text_cat(S->text, sizeof S->text, " The first failing tensor in topological order is %s, made by layer %s (%s): max abs error %.4g, max rel error %.4g%s.",
			     wh_name_md(g->values[L->value].name), wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type), L->s.max_abs, L->s.max_rel,
			     L->s.inf_actual || L->s.nan_actual ? ", with inf/NaN where FP32 is finite" : "");
		}
		if (T->start_kind != WH_DIAG_NONE) {
			const struct lw_layer *L = &T->lw[T->first_fail];
			const struct wh_node *n = &g->nodes[L->node];
			wh_text_cat(S->text, sizeof S->text, " Each layer run alone on the FP32 values of its inputs shows where the failure starts: layer %s (%s), %s.",
			     wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type),
			     T->start_kind == WH_DIAG_OVERFLOW ? "the first to make inf/NaN where FP32 has none (an overflow)"
							       : "the one adding the most error relative to the error it receives");
		} else {
			wh_text_cat(S->text, sizeof S->text, " No tensor fails the built-in comparison%s.",
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
		if (v != WH_NONE && g->values[v].producer != WH_NONE && wh_node_is_constant(&g->nodes[g->values[v].producer]))
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
	wh_text_printf(model, sizeof model, "%s/model.onnx", dir);
	wh_text_printf(ins, sizeof ins, "%s/inputs", dir);
	wh_text_printf(gold, sizeof gold, "%s/golden", dir);
	wh_text_printf(tac, sizeof tac, "%s/tactics.json", dir);
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
	struct step *S = add_step(T, T->start_kind != WH_DIAG_NONE ? "Where it starts, alone" : "First failing layer alone");
	wh_triage_say(T, "step 3: layer '%s' (%s) alone, fed FP32 reference values", wh_name_term(wh_triage_node_name(n)), wh_name_term(n->op_type));
	struct wh_model *single = NULL;
	enum wh_status st = extract_layer(T, L->node, &single);
	if (st != WH_OK)
		return st;
	if (!single->graph->n_outputs) {
		wh_text_printf(S->text, sizeof S->text, "Layer %s (%s) has no output that the rest of the model reads; skipped.", wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type));
		wh_model_destroy(single);
		return WH_OK;
	}
	char dir[PATH_MAX + 16];
	wh_text_printf(dir, sizeof dir, "%s/single", T->dir);
	st = check_part(T, single, T->pin, dir, &T->single_v, &T->single_s, &T->single_s_valid, T->single_why, sizeof T->single_why);
	if (st != WH_OK) {
		wh_model_destroy(single);
		return st;
	}
	T->single_run = true;
	T->alone_checks++;
	wh_triage_say(T, "  alone: %s (%s)", T->single_v == WH_VERDICT_FAIL ? "fails" : T->single_v == WH_VERDICT_PASS ? "passes" : "cannot tell",
	    T->single_why);
	wh_text_printf(S->text, sizeof S->text, "Extracted layer %s (%s) alone, its inputs fed with their FP32 reference values, and ran the check at %s: ",
		wh_name_md(wh_triage_node_name(n)), wh_name_md(n->op_type), wh_precision_name(T->o->precision));
	if (T->single_v == WH_VERDICT_FAIL) {
		wh_text_cat(S->text, sizeof S->text, "it **fails** on its own (%s). The failure is in this layer: done localizing.", wh_name_md(T->single_why));
		*single_out = single;
		return WH_OK;
	}
	if (T->single_v == WH_VERDICT_PASS)
		wh_text_cat(S->text, sizeof S->text, "it passes on its own (%s), so the failure needs %s: go on with the reduction.", wh_name_md(T->single_why),
		     T->start_kind != WH_DIAG_NONE ? "more layers than this one" : "the error of earlier layers");
	else
		wh_text_cat(S->text, sizeof S->text, "the check cannot tell (%s): go on with the reduction.", wh_name_md(T->single_why));
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
		if (wh_node_is_constant(pn) || !pn->name)
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
	wh_text_printf(rdir, sizeof rdir, "%s/reduce", T->dir);
	wh_text_printf(out, sizeof out, "%s/reduced.onnx", rdir);
	wh_triage_say(T, "step 4: reducing to the minimal failing subgraph (progress in %s/triage.log)", T->dir);
	struct wh_reduce_options ro = {
		.mode = WH_SEARCH_DDMIN,
		.jobs = T->o->jobs > 1 ? T->o->jobs : 1,
		.reduce_inputs = true,
		.reduce_outputs = true,
		.check = T->c_reduce,
		.check_display = T->check_display,
		.engine = {.threads = T->o->threads, .precision = &T->pc, .tactics = T->pin, .faulty_tactic = T->o->faulty_tactic},
		.compare = T->o->compare,
		.artifacts_dir = rdir,
		.force = true, /* a part of this run's folder, claimed by triage */
		.output_path = out,
		.model_path = T->o->model_path,
		.log = T->logf,
		.confirm_runs = 1,
		.prior = T->o->prior,
	};
	struct wh_reduce_data data = {.inputs = T->inputs, .n_samples = 1};
	T->reduce_run = true;
	T->reduce_st = wh_reduce_run(T->m, &data, &ro, &T->rr);
	T->checks += T->rr.checks_run;
	if (T->reduce_st != WH_OK) {
		wh_text_printf(T->reduce_err, sizeof T->reduce_err, "%s", wh_error_message());
		wh_text_printf(S->text, sizeof S->text, "The reduction stopped: %s.", wh_name_md(T->reduce_err));
		wh_triage_say(T, "  reduce: %s", T->reduce_err);
		/* a broken check is the user's to fix; anything else leaves the answer open */
		return T->reduce_st == WH_ERR_CHECK && T->rr.checks_run == 0 ? T->reduce_st : WH_OK;
	}
	struct wh_model *red = NULL;
	enum wh_status st = wh_model_load(out, &red);
	if (st == WH_OK)
		st = wh_model_infer_shapes_eval(red, wh_executor_fold_eval);
	if (st != WH_OK) {
		wh_model_destroy(red);
		return st;
	}
	*reduced_out = red;
	wh_text_printf(S->text, sizeof S->text, "Searched for the smallest subgraph that still fails (ddmin over layers; every candidate's new inputs fed with FP32 reference values): %u of %u layers remain, after %u checks (%u from the cache), %.1f s; %s.",
		T->rr.nodes_after, T->rr.nodes_before, T->rr.checks_run, T->rr.checks_cached, T->rr.seconds,
		T->rr.one_minimal ? "1-minimal: removing any one of them makes it pass" : "not verified 1-minimal");
	if (T->rr.prior[0])
		wh_text_cat(S->text, sizeof S->text, " The search tried the layers ranked first by a prior (%s) before anything else: %s.", T->rr.prior,
			    T->rr.prior_hit >= 0 ? "its guess failed and the search stayed inside it" : "its guesses passed, so the whole model was searched");
	wh_triage_say(T, "  reduced: %u of %u layers, %u checks", T->rr.nodes_after, T->rr.nodes_before, T->rr.checks_run);
	return WH_OK;
}

/* ---- step 5: the layers to keep in higher precision ---- */

static enum wh_status step_precision(struct tri *T)
{
	struct step *S = add_step(T, "Precision search");
	if (T->o->precision == WH_PREC_FP32) {
		wh_text_printf(S->text, sizeof S->text, "Skipped: the model runs in fp32 already, so no layer can be kept higher.");
		return WH_OK;
	}
	wh_triage_say(T, "step 5: searching the layers to keep in fp32");
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
		.jobs = T->o->jobs,
		.calib = T->o->calib,
		.log = T->logf,
		.prior = T->o->prior,
	};
	T->prec_run = true;
	T->prec_st = wh_precision_search(T->m, T->inputs, 1, &so, &T->keep, &T->pr);
	T->checks += T->pr.checks_run;
	if (T->prec_st != WH_OK) {
		wh_text_printf(T->prec_err, sizeof T->prec_err, "%s", wh_error_message());
		wh_text_printf(S->text, sizeof S->text, "No set of layers found: %s.", wh_name_md(T->prec_err));
		wh_triage_say(T, "  precision: %s", T->prec_err);
		return T->prec_st == WH_ERR_CHECK ? T->prec_st : WH_OK;
	}
	char path[PATH_MAX + 32];
	wh_text_printf(path, sizeof path, "%s/layer-precisions.json", T->dir);
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
	/* the layers themselves are listed once, in the report's table "Layers to keep in fp32" */
	wh_text_printf(S->text, sizeof S->text, "Searched the %u float layers for a set to keep in fp32 (bisection, then ddmin ordered by each layer's error, then a 1-minimality pass): keep %u layer%s (listed under \"Layers to keep in fp32\")",
		T->pr.candidates, T->n_keep, T->n_keep == 1 ? "" : "s");
	wh_text_cat(S->text, sizeof S->text, "; %u checks (%u from the cache), %.1f s; %s. Written to `layer-precisions.json`.", T->pr.checks_run,
	     T->pr.checks_cached, T->pr.seconds, T->pr.one_minimal ? "1-minimal" : "not verified 1-minimal");
	wh_triage_say(T, "  keep %u layer%s in fp32 (%u checks)", T->n_keep, T->n_keep == 1 ? "" : "s", T->pr.checks_run);
	return WH_OK;
}

/* ---- the repro bundle ---- */

static enum wh_status write_bundle(struct tri *T, const struct wh_model *model, const struct wh_tactic_plan *plan)
{
	char dir[PATH_MAX + 16], p[PATH_MAX + 64];
	wh_text_printf(dir, sizeof dir, "%s/repro", T->dir);
	wh_os_remove_tree(dir); /* a bundle of one run only */
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	wh_text_printf(p, sizeof p, "%s/model.onnx", dir);
	if ((st = wh_model_save_with(model, p, T->o->save)) != WH_OK)
		return st;
	wh_text_printf(p, sizeof p, "%s/inputs", dir);
	if ((st = write_ref_tensors(T, model, false, p)) != WH_OK)
		return st;
	wh_text_printf(p, sizeof p, "%s/golden", dir);
	if ((st = write_ref_tensors(T, model, true, p)) != WH_OK)
		return st;
	wh_text_printf(p, sizeof p, "%s/precisions.json", dir);
	if ((st = wh_precision_config_write(&T->pc, p)) != WH_OK)
		return st;
	T->repro_tactics = plan && plan->n;
	if (T->repro_tactics) {
		wh_text_printf(p, sizeof p, "%s/tactics.json", dir);
		if ((st = wh_tactic_plan_write(plan, p)) != WH_OK)
			return st;
	}
	char *cmd = NULL;
	if (T->c_raw) {
		struct wh_check_vars v = {.model = "model.onnx", .inputs = "inputs", .golden = "golden",
					  .tactics = T->repro_tactics ? "tactics.json" : NULL, .precisions = "precisions.json"};
		if ((st = wh_check_bundle_trt(T->c_raw, dir, &v)) != WH_OK)
			return st;
		if (!(cmd = wh_check_command_line(T->c_raw, &v)))
			return wh_error(WH_ERR_NOMEM, "triage: out of memory");
		wh_text_printf(T->repro_cmd, sizeof T->repro_cmd, "%s", cmd);
	} else {
		wh_text_printf(T->repro_cmd, sizeof T->repro_cmd,
			"\"$WHITTLE\" run model.onnx --load-inputs inputs --precision %s%s --compare golden --atol %.17g --rtol %.17g",
			wh_precision_name(T->o->precision), T->repro_tactics ? " --load-tactics tactics.json" : "", T->o->compare.atol, T->o->compare.rtol);
		if (T->o->compare.stat != WH_STAT_ELEMWISE) {
			static const char *const names[] = {"elemwise", "max", "mean", "median", "quantile"};
			if (T->o->compare.stat == WH_STAT_QUANTILE)
				wh_text_cat(T->repro_cmd, sizeof T->repro_cmd, " --check-error-stat quantile=%.17g", T->o->compare.quantile);
			else
				wh_text_cat(T->repro_cmd, sizeof T->repro_cmd, " --check-error-stat %s", names[T->o->compare.stat]);
		}
	}
	free(cmd);
	wh_text_printf(p, sizeof p, "%s/command.sh", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", p, strerror(errno));
	char *self = wh_text_whittle_line();
	fprintf(f, "#!/bin/sh\n# whittle triage repro: exits non-zero while the failure is there.\n"
		   "# Runs from this folder with the whittle that made it; set WHITTLE to use another.\n"
		   "cd \"$(dirname \"$0\")\" || exit 2\n%s\n", self ? self : "WHITTLE=${WHITTLE:-whittle}");
	free(self);
	if (T->o->faulty_tactic && *T->o->faulty_tactic) {
		char q[512];
		wh_sh_quote(T->o->faulty_tactic, q, sizeof q);
		fprintf(f, "# fault injection was on during triage (a test setting): keep it for the repro\nexport WHITTLE_FAULTY_TACTIC=%s\n", q);
	}
	fprintf(f, "%s\n", T->repro_cmd);
	if (fclose(f) != 0)
		return wh_error(WH_ERR_IO, "%s: write failed (check free disk space)", p);
	chmod(p, 0755);
	const struct wh_cpu_features *cpu = wh_cpu();
	wh_text_printf(p, sizeof p, "%s/version.txt", dir);
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
	wh_text_printf(cmd, sizeof cmd, "%s/repro/command.sh", T->dir);
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
		wh_text_printf(T->repro_out, sizeof T->repro_out, "%.*s", (int)(len - start > 400 ? 400 : len - start), o + start);
		T->rep->repro_checked = true;
		T->rep->repro_exit = T->repro_exit;
		T->rep->repro_fails = T->repro_fails;
	}
	wh_check_result_release(&r);
	wh_check_destroy(c);
	return st;
}

/* Removes what an earlier triage into the same folder left and this one may not write. */
static void remove_stale(struct tri *T)
{
	static const char *const files[] = {"fixed.json", "layer-precisions.json", "layer-errors.svg", "subgraph.svg", "subgraph.dot",
					    "report.md", "repro/tactics.json", "repro/command.sh", "model-inlined.onnx"};
	char p[PATH_MAX + 64];
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		wh_text_printf(p, sizeof p, "%s/%s", T->dir, files[i]);
		remove(p);
	}
	for (uint32_t k = 0; k < 100000; k++) {
		wh_text_printf(p, sizeof p, "%s/build_%u.json", T->builds_dir, k);
		if (remove(p) != 0)
			break;
	}
	for (uint32_t k = 1; k < 100000; k++) {
		int gone = 0;
		wh_text_printf(p, sizeof p, "%s/swap_%u_forward.json", T->builds_dir, k);
		gone += remove(p) == 0;
		wh_text_printf(p, sizeof p, "%s/swap_%u_reverse.json", T->builds_dir, k);
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
		wh_text_printf(S->text, sizeof S->text, "No confirmed culprit: the repro is the whole model with a bad build's tactics.");
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
	wh_text_printf(dir, sizeof dir, "%s/single", T->dir);
	if (single->graph->n_outputs) {
		st = check_part(T, single, T->pin, dir, &v, &s, &valid, why, sizeof why);
		T->alone_checks++;
	}
	else
		wh_text_printf(why, sizeof why, "it has no output the rest of the model reads");
	if (st == WH_OK && v == WH_VERDICT_FAIL) {
		*owned = single;
		wh_text_printf(S->text, sizeof S->text, "Extracted layer %s alone (inputs fed with FP32 reference values) and pinned tactic %s: it fails on its own (%s), so the repro is that layer alone with the bad build's tactics.",
			wh_name_md(T->diff.s[T->culprit].layer), wh_name_md(T->diff.s[T->culprit].tactic), wh_name_md(why));
		return WH_OK;
	}
	wh_model_destroy(single);
	if (st == WH_OK)
		wh_text_printf(S->text, sizeof S->text, "Layer %s alone with tactic %s does not fail (%s): the repro is the whole model with the bad build's tactics.",
			wh_name_md(T->diff.s[T->culprit].layer), wh_name_md(T->diff.s[T->culprit].tactic), wh_name_md(why));
	return st;
}

enum wh_status wh_triage_run(const struct wh_model *m, const struct wh_tensor_set *inputs, const struct wh_triage_options *o,
			     struct wh_triage_report *rep)
{
	struct tri TT = {.m = m, .g = m->graph, .inputs = inputs, .o = o, .rep = rep, .check_threads = o->threads};
	struct tri *T = &TT;
	memset(rep, 0, sizeof *rep);
	rep->outcome = WH_TRIAGE_UNLOCALIZED;
	T->culprit = T->fixed_build = T->bad_build = T->first_fail = T->tol_first = -1;
	T->t0 = wh_os_now_s();
	wh_precision_config_init(&T->pc);
	wh_precision_config_init(&T->keep);
	wh_tensor_set_init(&T->ref);
	wh_tactic_diff_init(&T->diff);
	struct wh_model *owned = NULL;     /* the repro model when it is a part of m */
	int artifacts_lock = -1;
	enum wh_status st = WH_OK;
	const struct wh_graph *g = m->graph;
	if (!o->artifacts_dir || !*o->artifacts_dir)
		return wh_error(WH_ERR_USAGE, "triage: no artifacts folder (give --artifacts-dir DIR)");
	if (strlen(o->artifacts_dir) >= sizeof T->dir - 64)
		return wh_error(WH_ERR_INVALID, "%s: path too long (use a shorter --artifacts-dir)", o->artifacts_dir);
	wh_text_printf(T->dir, sizeof T->dir, "%s", o->artifacts_dir);
	wh_text_printf(T->inputs_dir, sizeof T->inputs_dir, "%s/inputs", T->dir);
	wh_text_printf(T->golden_dir, sizeof T->golden_dir, "%s/golden", T->dir);
	wh_text_printf(T->prec_path, sizeof T->prec_path, "%s/precisions.json", T->dir);
	wh_text_printf(T->builds_dir, sizeof T->builds_dir, "%s/builds", T->dir);
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
	if ((st = wh_artifacts_claim(T->dir, o->force, NULL, &artifacts_lock)) != WH_OK || (st = wh_os_make_dir(T->builds_dir)) != WH_OK)
		goto out;
	remove_stale(T);
	{
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/triage.log", T->dir);
		if (!(T->logf = fopen(p, "w"))) {
			st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder)", p, strerror(errno));
			goto out;
		}
	}
	if ((st = wh_tensor_set_write_dir(T->inputs_dir, NULL, inputs)) != WH_OK)
		goto out;
	if (o->inlined) {
		/* the layers every step names are the branch's: convert and trtexec need them as
		 * layers of the main graph */
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/model-inlined.onnx", T->dir);
		if ((st = wh_model_save_with(m, p, o->save)) != WH_OK)
			goto out;
		wh_triage_say(T, "the model with its If inlined, which every step works on: %s", p);
	}
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
	wh_triage_say(T, "%s at %s; check: %s%s; artifacts in %s", o->model_path ? o->model_path : "model", wh_precision_name(o->precision),
	    T->check_display ? T->check_display : "built-in comparison with FP32",
	    o->faulty_tactic && *o->faulty_tactic ? " (fault injection on: WHITTLE_FAULTY_TACTIC)" : "", T->dir);

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
			wh_text_printf(rep->layer, sizeof rep->layer, "%s", s->layer);
			wh_text_printf(rep->tactic, sizeof rep->tactic, "%s", s->tactic);
			wh_text_printf(rep->op, sizeof rep->op, "%s", node != WH_NONE ? g->nodes[node].op_type : "?");
		}
		wh_triage_say(T, "step 2: layerwise comparison of bad build %d (for the report)", T->bad_build);
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
			wh_text_printf(tac, sizeof tac, "%s/build_%d.json", T->builds_dir, T->bad_build);
			const char *k1[] = {"{tactics}", "{precisions}"}, *v1[] = {tac, T->prec_path};
			const char *k2[] = {"{tactics}", "{golden}"}, *v2[] = {tac, T->golden_dir};
			if ((st = derived_check(o->check, k1, v1, 2, &T->w_reduce, &T->c_reduce)) != WH_OK ||
			    (st = derived_check(o->check, k2, v2, 2, &T->w_prec, &T->c_prec)) != WH_OK)
				goto out;
		}
		wh_triage_say(T, "step 2: layerwise comparison with every tensor kept");
		if ((st = layerwise(T, true)) != WH_OK)
			goto out;
		if (T->first_fail >= 0) {
			const struct lw_layer *L = &T->lw[T->first_fail];
			wh_triage_say(T, "  where it starts: '%s' (layer '%s', %s)", wh_name_term(g->values[L->value].name), wh_name_term(wh_triage_node_name(&g->nodes[L->node])),
			    wh_name_term(g->nodes[L->node].op_type));
			if ((st = step_single(T, &owned)) != WH_OK)
				goto out;
		} else {
			struct step *S = add_step(T, "First failing layer alone");
			wh_text_printf(S->text, sizeof S->text, "Skipped: no layer fails the layerwise comparison.");
		}
		if (owned) {
			rep->outcome = WH_TRIAGE_SINGLE_LAYER;
			answer = owned;
			struct step *S = add_step(T, "Reduce");
			wh_text_printf(S->text, sizeof S->text, "Skipped: the layer fails on its own, nothing smaller exists.");
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
			wh_text_printf(rep->layer, sizeof rep->layer, "%s", wh_triage_node_name(&g->nodes[node]));
			wh_text_printf(rep->op, sizeof rep->op, "%s", g->nodes[node].op_type);
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
					wh_text_printf(rep->layer, sizeof rep->layer, "%s", wh_triage_node_name(&g->nodes[i]));
					wh_text_printf(rep->op, sizeof rep->op, "%s", g->nodes[i].op_type);
					for (uint32_t k = 0; k < T->n_lw; k++)
						if (T->lw[k].node == i)
							T->first_fail = (int32_t)k;
				}
		}
		wh_triage_say(T, "step 6: repro bundle in %s/repro", T->dir);
		if ((st = write_bundle(T, answer, repro_plan)) != WH_OK)
			goto out;
		if ((st = check_bundle(T)) != WH_OK)
			goto out;
		struct step *S = add_step(T, "Repro bundle");
		wh_text_printf(S->text, sizeof S->text, "Wrote `repro/` (%u layer%s%s) and ran `sh repro/command.sh` ", T->n_answer, T->n_answer == 1 ? "" : "s",
			repro_plan ? ", with the bad build's tactic replay" : "");
		if (T->repro_checked)
		{
			char w[768];
			wh_triage_repro_words(T, w, sizeof w);
			wh_text_cat(S->text, sizeof S->text, "as a user would: it %s.", w);
		}
		else
			wh_text_cat(S->text, sizeof S->text, "(not run: the whittle binary is unknown).");
	}
	wh_triage_compose_finding(T);
	if (T->n_lw && (st = wh_triage_write_plot(T)) != WH_OK)
		goto out;
	if ((st = wh_triage_write_picture(T)) != WH_OK)
		goto out;
	rep->checks = T->checks;
	rep->seconds = wh_os_now_s() - T->t0;
	wh_triage_write_report(T);
	wh_triage_say(T, "done: %s; %u checks, %.1f s", wh_triage_outcome_words(rep->outcome), T->checks, rep->seconds);
	if (o->json)
		wh_triage_print_json(T);
	else if (o->out)
		wh_triage_print_summary(T, o->out);
out:
	rep->checks = T->checks;
	rep->seconds = wh_os_now_s() - T->t0;
	if (T->logf)
		fclose(T->logf);
	wh_artifacts_unlock(artifacts_lock);
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
