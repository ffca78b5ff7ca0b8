#include "reducer/builds.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "graph/names.h"
#include "executor/precision.h"
#include "graph/os.h"
#include "reducer/builtin-check.h"
#include "reducer/driver-util.h"

/* ---- the build loop ---- */

struct loop_build {
	char path[PATH_MAX + 64]; /* the replay, sorted into good/, bad/ or skipped/ */
	uint64_t seed;
	double secs;
	struct wh_tactic_plan plan;
	enum wh_verdict verdict;
	char why[160];
	uint32_t k;          /* iteration */
	enum wh_status st;   /* of making and checking it (on a thread of its own) */
	char err[512];       /* its error message */
};

struct loop {
	int lock; /* the artifacts folder's (wh_artifacts_claim) */
	const struct wh_model *m;
	const struct wh_tensor_set *inputs;
	const struct wh_build_loop_options *o;
	struct wh_build_loop_report *rep;
	struct loop_build **b;
	const struct wh_tactic_plan **plans; /* &b[i]->plan */
	uint32_t blocked;                    /* entries of DIR/blocklist.json, 0: none written */
	enum wh_verdict *verdicts;
	uint32_t n, cap;
	struct wh_tensor_set ref;            /* FP32 outputs for the built-in check */
	char dir[PATH_MAX];
	char inputs_dir[PATH_MAX + 16], golden_dir[PATH_MAX + 16], precisions[PATH_MAX + 32];
	struct wh_tactic_diff diff;          /* over the builds of the last confirmation */
	uint32_t diff_builds;
	struct wh_progress pr;
	struct loop_build **round;           /* the builds in flight (wh_run_tasks) */
	pthread_mutex_t build_lock;          /* whittle's builds with a timing cache: one at a time */
};

static enum wh_status confirm_now(struct loop *L, bool run_swaps);

static void live_line(struct loop *L)
{
	if (!L->pr.tty)
		return;
	const struct wh_build_loop_report *r = L->rep;
	fprintf(L->o->log, "\r\033[Kbuild: %u build%s (%u good, %u bad, %u skipped) | %.1f s", r->builds, r->builds == 1 ? "" : "s",
		r->n_good, r->n_bad, r->n_skip, wh_os_now_s() - L->pr.t0);
	if (L->o->until == WH_UNTIL_COUNT && r->builds && r->builds < L->o->count)
		fprintf(L->o->log, " | ~%.0f s left", (wh_os_now_s() - L->pr.t0) / r->builds * (L->o->count - r->builds));
	fflush(L->o->log);
}

/* Removes files of an earlier run named <prefix>*.json from a folder of ours, so that the
 * good/ and bad/ folders hold this run's replays only. */
static void remove_stale(const char *dir, const char *prefix)
{
	DIR *dh = opendir(dir);
	if (!dh)
		return;
	struct dirent *de;
	size_t pl = strlen(prefix);
	while ((de = readdir(dh))) {
		size_t len = strlen(de->d_name);
		if (len > pl + 5 && !strncmp(de->d_name, prefix, pl) && !strcmp(de->d_name + len - 5, ".json")) {
			char p[PATH_MAX + 256];
			wh_text_printf(p, sizeof p, "%s/%s", dir, de->d_name);
			remove(p);
		}
	}
	closedir(dh);
}

/* Runs a shell command of the user's (the external builder or pinner) through the check
 * runner, for its timeout and process-group handling; anything but exit 0 is an error. */
static enum wh_status run_tool(struct loop *L, const char *what, const char *tmpl, uint64_t seed, uint32_t iter,
			       const char *tactics)
{
	char num[2][32];
	wh_text_printf(num[0], sizeof num[0], "%llu", (unsigned long long)seed);
	wh_text_printf(num[1], sizeof num[1], "%u", iter);
	/* the command is shell text: every value goes in quoted (a path with a space or a ';'
	 * stays one word) */
	static const char *const keys[6] = {"{seed}", "{iteration}", "{model}", "{tactics}", "{inputs}", "{precisions}"};
	const char *vals[6] = {num[0], num[1], L->o->model_path, tactics, L->inputs_dir[0] ? L->inputs_dir : NULL,
			       L->precisions[0] ? L->precisions : NULL};
	char *cmd = wh_text_subst_shell(tmpl, keys, vals, 6);
	if (!cmd)
		return wh_error(WH_ERR_NOMEM, "%s: out of memory", what);
	enum wh_status st = WH_OK;
	char *argv[2] = {cmd, NULL};
	struct wh_check_options co = {.argv = argv, .argc = 1, .shell = true, .timeout_s = L->o->build_timeout_s};
	const struct wh_check_options *la = L->o->launch;
	if (la) {
		/* where the checks run, the builds and pins run too (a GPU node, for TensorRT) */
		co.launcher = la->launcher;
		co.slurm_args = la->slurm_args;
		co.shared_dir = la->shared_dir;
		co.retries = la->retries;
		co.queue_timeout_s = la->queue_timeout_s;
	}
	struct wh_check *c = NULL;
	struct wh_check_result r = {0};
	struct wh_check_vars vars = {0}; /* substituted above, quoted */
	st = wh_check_create(&co, &c);
	if (st == WH_OK)
		st = wh_check_run(c, &vars, &r);
	if (st == WH_OK && (r.verdict != WH_VERDICT_PASS || r.exit_code != 0)) {
		const char *out = r.output ? r.output : "";
		size_t len = strlen(out);
		char tail[301];
		wh_text_printf(tail, sizeof tail, "%s", len > 300 ? out + len - 300 : out);
		wh_text_one_line(tail);
		char *line = wh_check_command_line(c, &vars);
		st = wh_error(WH_ERR_CHECK, "%s: %s (%s; run it by hand: %s; its output ends: %s)", what,
			      r.cluster_fault ? "the cluster could not run it" : r.timed_out ? "timed out" : r.signal ? "killed by a signal" : "exited non-zero",
			      r.why ? r.why : "",
			      line ? line : cmd, tail);
		free(line);
	}
	if (st == WH_OK && tactics && access(tactics, R_OK) != 0)
		st = wh_error(WH_ERR_CHECK, "%s: did not write the replay %s (put {tactics} where the command writes its tactic replay)",
			      what, tactics);
	wh_check_result_release(&r);
	wh_check_destroy(c);
	free(cmd);
	return st;
}

/* The loop's engine options for one of the builds or checks in flight. */
static struct wh_engine_options engine_options(const struct loop *L, bool in_flight)
{
	struct wh_engine_options eo = L->o->engine;
	if (in_flight)
		eo.threads = wh_threads_per_job(eo.threads, L->o->jobs);
	return eo;
}

static enum wh_status builtin_check(struct loop *L, const struct wh_tactic_plan *plan, bool in_flight, enum wh_verdict *v,
				    char *why, size_t wsize)
{
	struct wh_engine_options eo = engine_options(L, in_flight);
	eo.tactics = plan;
	eo.tactics_strict = true;
	struct wh_builtin_check_options bo = {.compare = L->o->compare, .all_tensors = L->o->mark_all};
	struct wh_builtin_check_result res;
	enum wh_status st = wh_builtin_check_run(L->m, &eo, L->inputs, &L->ref, 1, &bo, &res);
	*v = res.verdict;
	wh_text_printf(why, wsize, "%s", res.why);
	return st;
}

/* Runs the check on one replay. plan: the replay's content (for the built-in check); first:
 * the first build's (a broken check shows there); in_flight: one of -j builds. */
static enum wh_status check_replay(struct loop *L, const char *replay, const struct wh_tactic_plan *plan, bool first,
				   bool in_flight, enum wh_verdict *v, char *why, size_t wsize)
{
	if (!L->o->check)
		return builtin_check(L, plan, in_flight, v, why, wsize);
	struct wh_check_vars vars = {.model = L->o->model_path, .tactics = replay,
				     .inputs = L->inputs_dir[0] ? L->inputs_dir : NULL,
				     .golden = L->golden_dir[0] ? L->golden_dir : NULL,
				     .precisions = L->precisions[0] ? L->precisions : NULL};
	struct wh_check_result r = {0};
	enum wh_status st = wh_check_run(L->o->check, &vars, &r);
	if (st != WH_OK)
		return st;
	*v = r.verdict;
	if (first)
		st = wh_check_result_broken(&r, " on the first build");
	if (r.signal)
		wh_text_printf(why, wsize, "check: %s (signal %d)", r.why ? r.why : "", r.signal);
	else if (r.exit_code == 0 || r.exit_code == 125)
		wh_text_printf(why, wsize, "check: %s", r.why ? r.why : "");
	else
		wh_text_printf(why, wsize, "check: %s (exit %d)", r.why ? r.why : "", r.exit_code);
	wh_check_result_release(&r);
	return st;
}

/* Appends b to the builds taken (the loop owns it from now on). */
static enum wh_status append_build(struct loop *L, struct loop_build *b)
{
	if (L->n == L->cap) {
		uint32_t cap = L->cap ? L->cap * 2 : 32;
		if (cap <= L->cap)
			return wh_error(WH_ERR_OVERFLOW, "build: too many builds");
		struct loop_build **nb = realloc(L->b, (size_t)cap * sizeof *nb);
		if (!nb)
			return wh_error(WH_ERR_NOMEM, "build: out of memory");
		L->b = nb;
		const struct wh_tactic_plan **np = realloc(L->plans, (size_t)cap * sizeof *np);
		if (!np)
			return wh_error(WH_ERR_NOMEM, "build: out of memory");
		L->plans = np;
		enum wh_verdict *nv = realloc(L->verdicts, (size_t)cap * sizeof *nv);
		if (!nv)
			return wh_error(WH_ERR_NOMEM, "build: out of memory");
		L->verdicts = nv;
		L->cap = cap;
	}
	L->b[L->n] = b;
	L->plans[L->n] = &b->plan;
	L->verdicts[L->n] = b->verdict;
	L->n++;
	return WH_OK;
}

static void free_build(struct loop_build *b)
{
	if (!b)
		return;
	wh_tactic_plan_release(&b->plan);
	free(b);
}

/* Where build k's replay is written before it is sorted. */
static void work_path(const struct loop *L, uint32_t k, char *out, size_t size)
{
	wh_text_printf(out, size, "%s/work/build_%u.json", L->dir, k);
}

/* Makes build b->k and checks it; touches nothing of the loop but b (it runs beside the
 * other builds in flight). */
static enum wh_status make_build(struct loop *L, struct loop_build *b)
{
	const struct wh_build_loop_options *o = L->o;
	uint32_t k = b->k;
	bool in_flight = o->jobs > 1;
	enum wh_status st;
	char work[PATH_MAX + 64];
	work_path(L, k, work, sizeof work);
	if (o->build_cmd) {
		char what[64];
		wh_text_printf(what, sizeof what, "build command (build %u)", k);
		remove(work);
		if ((st = run_tool(L, what, o->build_cmd, b->seed, k, work)) != WH_OK)
			return st;
		if ((st = wh_tactic_plan_read(work, &b->plan)) != WH_OK)
			return st;
	} else {
		struct wh_build_options bo = o->build;
		bo.seed = b->seed;
		struct wh_engine_options eo = engine_options(L, in_flight);
		bool serial = in_flight && bo.timing_cache;
		if (serial)
			pthread_mutex_lock(&L->build_lock);
		st = wh_engine_build(L->m, &eo, L->inputs, &bo, &b->plan);
		if (serial)
			pthread_mutex_unlock(&L->build_lock);
		if (st != WH_OK)
			return st;
		if ((st = wh_tactic_plan_write(&b->plan, work)) != WH_OK)
			return st;
	}
	return check_replay(L, work, &b->plan, k == 0, in_flight, &b->verdict, b->why, sizeof b->why);
}

static void build_task(void *ctx, uint32_t i)
{
	struct loop *L = ctx;
	struct loop_build *b = L->round[i];
	double t0 = wh_os_now_s();
	wh_error_clear();
	if ((b->st = make_build(L, b)) != WH_OK)
		wh_text_printf(b->err, sizeof b->err, "%s", wh_error_message());
	b->secs = wh_os_now_s() - t0;
}

/* Takes a made and checked build (the loop owns it from now on, even on an error): sorts
 * its replay, counts it, says so. */
static enum wh_status take_build(struct loop *L, struct loop_build *b)
{
	const struct wh_build_loop_options *o = L->o;
	uint32_t k = b->k;
	enum wh_status st = append_build(L, b);
	if (st != WH_OK) {
		free_build(b);
		return st;
	}
	char work[PATH_MAX + 64];
	work_path(L, k, work, sizeof work);
	wh_text_printf(b->path, sizeof b->path, "%s/%s/build_%u.json", L->dir, wh_verdict_dir(b->verdict), k);
	if ((st = wh_os_move_file(work, b->path)) != WH_OK)
		return st;
	wh_artifacts_sort(o->artifacts, o->n_artifacts, L->dir, b->verdict, k);
	struct wh_build_loop_report *r = L->rep;
	r->builds++;
	r->n_good += b->verdict == WH_VERDICT_PASS;
	r->n_bad += b->verdict == WH_VERDICT_FAIL;
	r->n_skip += b->verdict == WH_VERDICT_SKIP;
	if (!L->pr.tty)
		wh_progress_log(&L->pr, "build %u: seed %llu, %s, %u layers with tactics, %.2f s: %s (%u good, %u bad so far)", k,
		      (unsigned long long)b->seed, b->verdict == WH_VERDICT_PASS ? "good" : b->verdict == WH_VERDICT_FAIL ? "bad" : "skipped",
		      b->plan.n, b->secs, wh_name_term(b->why), r->n_good, r->n_bad);
	json_t *e = json_object();
	json_object_set_new(e, "event", json_string("build"));
	json_object_set_new(e, "n", json_integer(k));
	json_object_set_new(e, "seed", json_integer((json_int_t)b->seed));
	json_object_set_new(e, "verdict", json_string(wh_verdict_name(b->verdict)));
	json_object_set_new(e, "replay", json_string(b->path));
	json_object_set_new(e, "layers", json_integer(b->plan.n));
	json_object_set_new(e, "seconds", json_real(b->secs));
	json_object_set_new(e, "good", json_integer(r->n_good));
	json_object_set_new(e, "bad", json_integer(r->n_bad));
	wh_progress_event(&L->pr, e);
	live_line(L);
	return WH_OK;
}

/* After a build of verdict v was taken: whether the loop stops there. */
static enum wh_status stop_after(struct loop *L, enum wh_verdict v, bool *stop)
{
	const struct wh_build_loop_options *o = L->o;
	struct wh_build_loop_report *rep = L->rep;
	*stop = (o->until == WH_UNTIL_GOOD && v == WH_VERDICT_PASS) || (o->until == WH_UNTIL_BAD && v == WH_VERDICT_FAIL);
	/* until confirmed: try as soon as a build brings new evidence (a bad build, or the
	 * first good one) */
	if (o->until == WH_UNTIL_CONFIRMED && rep->n_good && rep->n_bad &&
	    (v == WH_VERDICT_FAIL || (v == WH_VERDICT_PASS && rep->n_good == 1))) {
		enum wh_status st = confirm_now(L, true);
		if (st != WH_OK)
			return st;
		*stop = rep->confirm.confirmed > 0;
	}
	return WH_OK;
}

/* The builds, -j at a time: made and checked in flight, then taken in seed order until the
 * stopping rule says stop, exactly as one at a time would; the builds of a round past that
 * point are dropped (their replays removed), so the answer does not depend on -j. */
static enum wh_status build_rounds(struct loop *L, bool *stopped)
{
	const struct wh_build_loop_options *o = L->o;
	uint32_t jobs = o->jobs > 1 ? (uint32_t)(o->jobs < 64 ? o->jobs : 64) : 1;
	struct loop_build *round[64] = {0};
	enum wh_status st = WH_OK;
	*stopped = false;
	for (uint32_t k0 = 0; k0 < o->count && !*stopped && st == WH_OK;) {
		uint32_t n = o->count - k0 < jobs ? o->count - k0 : jobs;
		for (uint32_t i = 0; i < n && st == WH_OK; i++) {
			if (!(round[i] = calloc(1, sizeof *round[i]))) {
				st = wh_error(WH_ERR_NOMEM, "build: out of memory");
				break;
			}
			wh_tactic_plan_init(&round[i]->plan);
			round[i]->k = k0 + i;
			round[i]->seed = o->build.seed + k0 + i;
			round[i]->verdict = WH_VERDICT_SKIP;
		}
		if (st == WH_OK) {
			L->round = round;
			wh_run_tasks((int)jobs, n, build_task, L);
			L->round = NULL;
		}
		for (uint32_t i = 0; i < n && st == WH_OK && !*stopped; i++) {
			struct loop_build *b = round[i];
			round[i] = NULL;
			if (b->st != WH_OK) {
				/* as one at a time: its replay, if any, stays in work/ for a look */
				st = wh_error(b->st, "%s", b->err);
				free_build(b);
			} else if ((st = take_build(L, b)) == WH_OK) {
				st = stop_after(L, b->verdict, stopped);
			}
		}
		/* the builds past the stopping point (or an error) are dropped */
		for (uint32_t i = 0; i < n; i++)
			if (round[i]) {
				char work[PATH_MAX + 64];
				work_path(L, round[i]->k, work, sizeof work);
				remove(work);
				free_build(round[i]);
				round[i] = NULL;
			}
		k0 += n;
	}
	return st;
}

static const char *layer_op(const struct loop *L, const char *layer)
{
	for (uint32_t i = 0; i < L->n; i++) {
		const struct wh_tactic_choice *c = wh_tactic_plan_find(L->plans[i], layer);
		if (c && c->op && *c->op)
			return c->op;
	}
	return NULL;
}

static enum wh_status swap_check(void *ctx, const struct wh_tactic_swap *sw, enum wh_verdict *out)
{
	struct loop *L = ctx;
	char path[PATH_MAX + 64], why[160];
	uint32_t seq = sw->seq;
	wh_text_printf(path, sizeof path, "%s/confirm/swap_%u_%s.json", L->dir, seq, sw->forward ? "forward" : "reverse");
	enum wh_status st = wh_tactic_replay_swap(L->b[sw->base]->path, L->b[sw->donor]->path, sw->layer, path);
	if (st != WH_OK)
		return st;
	struct wh_tactic_plan plan;
	wh_tactic_plan_init(&plan);
	if (!L->o->check && (st = wh_tactic_plan_read(path, &plan)) != WH_OK)
		goto out;
	if (L->o->pin_cmd) {
		char what[64];
		wh_text_printf(what, sizeof what, "pin command (swap %u)", seq);
		if ((st = run_tool(L, what, L->o->pin_cmd, L->b[sw->base]->seed, sw->base, path)) != WH_OK)
			goto out;
	}
	if ((st = check_replay(L, path, &plan, false, false, out, why, sizeof why)) != WH_OK)
		goto out;
	wh_progress_log(&L->pr, "confirm: swap %u: %s build %u with layer '%s' tactic '%s' (from %s build %u): %s, %s", seq,
	      sw->forward ? "good" : "bad", sw->base, wh_name_term(sw->layer), wh_name_term(sw->tactic), sw->forward ? "bad" : "good", sw->donor,
	      *out == WH_VERDICT_PASS ? "good" : *out == WH_VERDICT_FAIL ? "bad" : "skipped", wh_name_term(why));
	json_t *e = json_object();
	json_object_set_new(e, "event", json_string("swap"));
	json_object_set_new(e, "n", json_integer(seq));
	json_object_set_new(e, "direction", json_string(sw->forward ? "forward" : "reverse"));
	json_object_set_new(e, "base", json_integer(sw->base));
	json_object_set_new(e, "donor", json_integer(sw->donor));
	json_object_set_new(e, "layer", json_string(sw->layer));
	json_object_set_new(e, "tactic", json_string(sw->tactic));
	json_object_set_new(e, "verdict", json_string(wh_verdict_name(*out)));
	json_object_set_new(e, "replay", json_string(path));
	wh_progress_event(&L->pr, e);
out:
	wh_tactic_plan_release(&plan);
	return st;
}

static json_t *suspect_json(const struct loop *L, const struct wh_tactic_suspect *s, uint32_t rank)
{
	json_t *o = json_object();
	const char *op = L ? layer_op(L, s->layer) : NULL;
	json_object_set_new(o, "rank", json_integer(rank));
	json_object_set_new(o, "layer", json_string(s->layer));
	if (op)
		json_object_set_new(o, "op", json_string(op));
	json_object_set_new(o, "tactic", json_string(s->tactic));
	json_object_set_new(o, "bad", json_integer(s->n_bad));
	json_object_set_new(o, "good", json_integer(s->n_good));
	json_object_set_new(o, "score", json_real(s->score));
	json_object_set_new(o, "state", json_string(wh_suspect_state_name(s->state)));
	if (s->forward_run) {
		json_object_set_new(o, "good_build", json_integer(s->good_build));
		json_object_set_new(o, "forward", json_string(wh_verdict_name(s->forward)));
	}
	if (s->reverse_run) {
		json_object_set_new(o, "bad_build", json_integer(s->bad_build));
		json_object_set_new(o, "reverse", json_string(wh_verdict_name(s->reverse)));
	}
	return o;
}

static void on_suspect(void *ctx, const struct wh_tactic_suspect *s)
{
	struct loop *L = ctx;
	wh_progress_log(&L->pr, "confirm: layer '%s' tactic '%s': %s", wh_name_term(s->layer), wh_name_term(s->tactic), wh_suspect_state_name(s->state));
	json_t *e = suspect_json(L, s, 0);
	json_object_del(e, "rank");
	json_object_set_new(e, "event", json_string("suspect"));
	wh_progress_event(&L->pr, e);
}

/* Diffs the builds so far and confirms, keeping what earlier confirmations found. */
static enum wh_status confirm_now(struct loop *L, bool run_swaps)
{
	struct wh_tactic_diff d;
	enum wh_status st = wh_tactic_diff_compute(L->plans, L->verdicts, L->n, NULL, &d);
	if (st != WH_OK)
		return st;
	wh_tactic_diff_inherit(&d, &L->diff);
	wh_tactic_diff_release(&L->diff);
	L->diff = d;
	L->diff_builds = L->n;
	L->rep->n_suspects = d.n;
	if (!run_swaps || !d.n_good || !d.n_bad)
		return WH_OK;
	struct wh_confirm_options co = {.max_suspects = L->o->max_suspects, .first_seq = L->rep->confirm.checks + 1};
	struct wh_confirm_ops ops = {.ctx = L, .check_swap = swap_check, .on_suspect = on_suspect};
	struct wh_confirm_report cr;
	uint32_t before = L->rep->confirm.checks;
	st = wh_tactic_confirm(L->plans, L->verdicts, L->n, &co, &ops, &L->diff, &cr);
	L->rep->confirm = cr;
	L->rep->confirm.checks += before;
	L->rep->confirmed_run = true;
	return st;
}

static void print_suspects(struct loop *L, FILE *f, bool markdown)
{
	const struct wh_tactic_diff *d = &L->diff;
	uint32_t shown = d->n < 20 ? d->n : 20;
	if (markdown && d->n) {
		fprintf(f, "| # | layer | op | tactic | bad builds | good builds | score | confirmation |\n");
		fprintf(f, "| ---: | --- | --- | --- | ---: | ---: | ---: | --- |\n");
	}
	for (uint32_t i = 0; i < (markdown ? d->n : shown); i++) {
		const struct wh_tactic_suspect *s = &d->s[i];
		const char *op = layer_op(L, s->layer);
		if (markdown)
			fprintf(f, "| %u | %s | %s | %s | %u of %u | %u of %u | %.3f | %s |\n", i + 1, wh_name_md_cell(s->layer), op ? wh_name_md_cell(op) : "",
				wh_name_md_cell(s->tactic), s->n_bad, d->n_bad, s->n_good, d->n_good, s->score, wh_suspect_state_name(s->state));
		else
			fprintf(f, "  %u. layer '%s'%s%s%s tactic '%s': %u of %u bad builds, %u of %u good; score %.3f; %s\n", i + 1,
				wh_name_term(s->layer), op ? " (" : "", op ? wh_name_term(op) : "", op ? ")" : "", wh_name_term(s->tactic), s->n_bad, d->n_bad, s->n_good,
				d->n_good, s->score, wh_suspect_state_name(s->state));
	}
	if (!markdown && d->n > shown)
		fprintf(f, "  ... and %u more (all in %s/report.md)\n", d->n - shown, wh_name_term(L->dir));
}

/* The command that checks one replay by hand, for the report (malloc'd). */
static char *repro_cmd(const struct loop *L, const char *replay)
{
	const struct wh_build_loop_options *o = L->o;
	if (o->check) {
		struct wh_check_vars vars = {.model = o->model_path, .tactics = replay,
					     .inputs = L->inputs_dir[0] ? L->inputs_dir : NULL,
					     .golden = L->golden_dir[0] ? L->golden_dir : NULL,
					     .precisions = L->precisions[0] ? L->precisions : NULL};
		return wh_check_command_line(o->check, &vars);
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fprintf(f, "whittle run %s", o->model_path ? o->model_path : "MODEL");
	if (o->input_shapes && *o->input_shapes)
		fprintf(f, " --input-shapes %s", o->input_shapes);
	fprintf(f, " --load-inputs %s --load-tactics %s", L->inputs_dir, replay);
	if (L->precisions[0])
		fprintf(f, " --layer-precisions %s", L->precisions);
	fprintf(f, " --compare fp32 --atol %g --rtol %g", o->compare.atol, o->compare.rtol);
	if (o->compare.stat == WH_STAT_QUANTILE)
		fprintf(f, " --check-error-stat quantile=%g", o->compare.quantile);
	else if (o->compare.stat != WH_STAT_ELEMWISE)
		fprintf(f, " --check-error-stat %s", o->compare.stat == WH_STAT_MAX ? "max" : o->compare.stat == WH_STAT_MEAN ? "mean" : "median");
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* DIR/blocklist.json: the confirmed culprits (and the tactics that break builds alone),
 * with the tactics of --block-tactics kept, so that `build --block-tactics` keeps them out
 * (docs/formats.md). Written when there is something to block. */
static enum wh_status write_blocklist(struct loop *L)
{
	struct wh_tactic_blocklist bl;
	memset(&bl, 0, sizeof bl);
	enum wh_status st = WH_OK;
	const struct wh_tactic_blocklist *old = L->o->build.block;
	for (uint32_t i = 0; old && i < old->n && st == WH_OK; i++)
		st = wh_tactic_blocklist_add(&bl, old->b[i].layer, old->b[i].tactic, old->b[i].why);
	for (uint32_t i = 0; i < L->diff.n && st == WH_OK; i++) {
		const struct wh_tactic_suspect *s = &L->diff.s[i];
		if (s->state != WH_SUSPECT_CONFIRMED && s->state != WH_SUSPECT_SUFFICIENT)
			continue;
		char why[160];
		wh_text_printf(why, sizeof why, "%s: good build %d turns bad with it", s->state == WH_SUSPECT_CONFIRMED ? "confirmed" : "breaks builds",
			       s->good_build);
		st = wh_tactic_blocklist_add(&bl, s->layer, s->tactic, why);
	}
	for (uint32_t i = 0; i < L->n && !bl.device[0]; i++)
		if (L->plans && L->plans[i] && L->plans[i]->device[0])
			wh_text_printf(bl.device, sizeof bl.device, "%s", L->plans[i]->device);
	if (st == WH_OK && bl.n) {
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/blocklist.json", L->dir);
		st = wh_tactic_blocklist_write(&bl, p);
		L->blocked = bl.n;
	}
	wh_tactic_blocklist_release(&bl);
	return st;
}

static void write_report(struct loop *L, int32_t fixed)
{
	FILE *f = wh_report_open(L->dir, "report.md");
	if (!f)
		return;
	const struct wh_build_loop_options *o = L->o;
	const struct wh_build_loop_report *r = L->rep;
	const struct wh_cpu_features *cpu = wh_cpu();
	fprintf(f, "# whittle build: flaky-tactic report\n\n");
	fprintf(f, "- model: %s\n- whittle %s, CPU %s (ISA %s)\n", wh_name_md(o->model_path ? o->model_path : "?"), WHITTLE_VERSION,
		cpu->brand[0] ? cpu->brand : "unknown", wh_isa_name(cpu->isa));
	fprintf(f, "- builder: %s\n", o->build_cmd ? wh_name_md(o->build_cmd) : "whittle");
	fprintf(f, "- check: %s\n", wh_name_md(o->check_display ? o->check_display : "built-in (pinned run compared with FP32)"));
	if (!o->check)
		fprintf(f, "- tolerances: atol %g, rtol %g\n", o->compare.atol, o->compare.rtol);
	if (o->engine.faulty_tactic && *o->engine.faulty_tactic)
		fprintf(f, "- fault injection: WHITTLE_FAULTY_TACTIC=%s (a test setting: that tactic corrupts its output)\n",
			wh_name_md(o->engine.faulty_tactic));
	fprintf(f, "- builds: %u (%u good, %u bad, %u skipped), seeds %llu..%llu\n", r->builds, r->n_good, r->n_bad, r->n_skip,
		(unsigned long long)o->build.seed, (unsigned long long)(o->build.seed + (r->builds ? r->builds - 1 : 0)));
	fprintf(f, "- confirmation: %s\n- time: %.2f s\n\n", r->confirmed_run ? "run" : "not run", wh_os_now_s() - L->pr.t0);
	fprintf(f, "## Builds\n\n| build | seed | verdict | layers with tactics | seconds | replay | why |\n| ---: | ---: | --- | ---: | ---: | --- | --- |\n");
	for (uint32_t i = 0; i < L->n; i++) {
		const struct loop_build *b = L->b[i];
		fprintf(f, "| %u | %llu | %s | %u | %.2f | %s | %s |\n", i, (unsigned long long)b->seed,
			b->verdict == WH_VERDICT_PASS ? "good" : b->verdict == WH_VERDICT_FAIL ? "bad" : "skipped", b->plan.n, b->secs,
			wh_name_md_cell(b->path), wh_name_md_cell(b->why));
	}
	fprintf(f, "\n## Suspects\n\nTactics that layers use only in bad builds, most likely first (score: the share of bad\nbuilds that use it).\n\n");
	if (!L->diff.n)
		fprintf(f, "None.\n");
	print_suspects(L, f, true);
	fprintf(f, "\n## Confirmation\n\nA suspect is swapped into a good build for its layer only (forward); when that build\nturns bad, a bad build using it gets the good build's tactic for the layer (reverse) and\nmust turn good. Both: **confirmed**.\n\n");
	uint32_t seq = 0;
	for (uint32_t i = 0; i < L->diff.n; i++) {
		const struct wh_tactic_suspect *s = &L->diff.s[i];
		if (!s->forward_run)
			continue;
		seq++;
		fprintf(f, "- layer %s tactic %s: **%s**; in good build %d it makes the build %s", wh_name_md(s->layer), wh_name_md(s->tactic),
			wh_suspect_state_name(s->state), s->good_build, s->forward == WH_VERDICT_FAIL ? "bad" : s->forward == WH_VERDICT_PASS ? "good" : "undecided");
		if (s->reverse_run)
			fprintf(f, "; bad build %d without it is %s", s->bad_build,
				s->reverse == WH_VERDICT_PASS ? "good" : s->reverse == WH_VERDICT_FAIL ? "still bad" : "undecided");
		fprintf(f, "\n");
		if (s->state == WH_SUSPECT_CONFIRMED) {
			char p1[PATH_MAX + 64], p2[PATH_MAX + 64];
			wh_text_printf(p1, sizeof p1, "%s/confirm/swap_%u_forward.json", L->dir, s->forward_seq);
			wh_text_printf(p2, sizeof p2, "%s/confirm/swap_%u_reverse.json", L->dir, s->reverse_seq);
			char *c1 = repro_cmd(L, p1), *c2 = repro_cmd(L, p2);
			fprintf(f, "  - fails (good build %d with the suspect):\n\n        %s\n\n  - passes (bad build %d without it):\n\n        %s\n\n",
				s->good_build, c1 ? wh_name_term(c1) : "?", s->bad_build, c2 ? wh_name_term(c2) : "?");
			free(c1);
			free(c2);
		}
	}
	if (!seq)
		fprintf(f, "No swap was run%s.\n", !r->n_good || !r->n_bad ? " (it needs both good and bad builds)" : "");
	char confirm[PATH_MAX + 16];
	wh_text_printf(confirm, sizeof confirm, "%s/confirm/", L->dir);
	fprintf(f, "\nThe swapped replays are in %s (`swap_<n>_forward.json`, `swap_<n>_reverse.json`).\n", wh_name_md(confirm));
	if (fixed >= 0) {
		char p1[PATH_MAX + 64];
		wh_text_printf(p1, sizeof p1, "%s/fixed.json", L->dir);
		char *c1 = repro_cmd(L, p1);
		fprintf(f, "\n## Fixed replay\n\n%s is good build %d (the fastest good build; it avoids every\nconfirmed tactic). Check it with:\n\n    %s\n",
			wh_name_md(p1), fixed, c1 ? wh_name_term(c1) : "?");
		if (o->build_cmd) {
			char use[PATH_MAX + 96];
			wh_text_printf(use, sizeof use, "polygraphy ... --load-tactics %s", p1);
			fprintf(f, "\nand load it into your builder (e.g. %s).\n", wh_name_md(use));
		}
		free(c1);
	}
	fclose(f);
}

enum wh_status wh_build_loop_run(const struct wh_model *m, const struct wh_tensor_set *inputs,
				 const struct wh_build_loop_options *o, struct wh_build_loop_report *rep)
{
	struct loop LL = {.lock = -1, .m = m, .inputs = inputs, .o = o, .rep = rep};
	struct loop *L = &LL;
	memset(rep, 0, sizeof *rep);
	rep->fixed_build = -1;
	wh_progress_init(&L->pr, o->log, o->json);
	wh_tensor_set_init(&L->ref);
	wh_tactic_diff_init(&L->diff);
	pthread_mutex_init(&L->build_lock, NULL);
	enum wh_status st = WH_OK;
	if (!o->artifacts_dir || !*o->artifacts_dir)
		return wh_error(WH_ERR_USAGE, "build: no artifacts folder (give --artifacts-dir DIR)");
	if (o->check == NULL && o->build_cmd)
		return wh_error(WH_ERR_USAGE, "build: an external builder needs --check (the built-in check runs whittle's own builds only)");
	if (strlen(o->artifacts_dir) >= sizeof L->dir - 64)
		return wh_error(WH_ERR_INVALID, "%s: path too long", o->artifacts_dir);
	wh_text_printf(L->dir, sizeof L->dir, "%s", o->artifacts_dir);
	static const char *const subs[] = {"good", "bad", "skipped", "work", "confirm"};
	if ((st = wh_artifacts_claim(L->dir, o->force, NULL, &L->lock)) != WH_OK)
		return st;
	for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
		char p[PATH_MAX + 16];
		wh_text_printf(p, sizeof p, "%s/%s", L->dir, subs[i]);
		if ((st = wh_os_make_dir(p)) != WH_OK)
			goto out;
		remove_stale(p, i < 4 ? "build_" : "swap_");
	}
	if (o->need_inputs || !o->check) {
		wh_text_printf(L->inputs_dir, sizeof L->inputs_dir, "%s/inputs", L->dir);
		if ((st = wh_tensor_set_write_dir(L->inputs_dir, NULL, inputs)) != WH_OK)
			goto out;
	}
	if (!o->check || o->need_golden) {
		/* the reference: FP32 with each op's default implementation */
		if ((st = wh_builtin_reference(m, o->engine.threads, inputs, 1, o->mark_all && !o->check, &L->ref)) != WH_OK)
			goto out;
		if (o->need_golden) {
			wh_text_printf(L->golden_dir, sizeof L->golden_dir, "%s/golden", L->dir);
			if ((st = wh_tensor_set_write_dir(L->golden_dir, NULL, &L->ref)) != WH_OK)
				goto out;
		}
	}
	if (o->engine.precision) {
		wh_text_printf(L->precisions, sizeof L->precisions, "%s/layer-precisions.json", L->dir);
		if ((st = wh_precision_config_write(o->engine.precision, L->precisions)) != WH_OK)
			goto out;
	}
	wh_progress_log(&L->pr, "build: %s, %s, check: %s%s; artifacts in %s", o->build_cmd ? "external builder" : "whittle's builder",
	      o->until == WH_UNTIL_COUNT ? "fixed number of builds" : o->until == WH_UNTIL_GOOD ? "until a good build" :
	      o->until == WH_UNTIL_BAD ? "until a bad build" : "until a culprit is confirmed",
	      o->check_display ? wh_name_term(o->check_display) : "built-in comparison with FP32",
	      o->engine.faulty_tactic && *o->engine.faulty_tactic ? " (fault injection on: WHITTLE_FAULTY_TACTIC)" : "", L->dir);
	{
		json_t *e = json_object();
		json_object_set_new(e, "event", json_string("start"));
		json_object_set_new(e, "model", json_string(o->model_path ? o->model_path : ""));
		json_object_set_new(e, "until", json_string(o->until == WH_UNTIL_COUNT ? "count" : o->until == WH_UNTIL_GOOD ? "good" :
							     o->until == WH_UNTIL_BAD ? "bad" : "confirmed"));
		json_object_set_new(e, "max_builds", json_integer(o->count));
		json_object_set_new(e, "first_seed", json_integer((json_int_t)o->build.seed));
		json_object_set_new(e, "artifacts_dir", json_string(L->dir));
		wh_progress_event(&L->pr, e);
	}
	bool stopped = false;
	if ((st = build_rounds(L, &stopped)) != WH_OK)
		goto out;
	if (o->until != WH_UNTIL_COUNT && !stopped)
		wh_progress_log(&L->pr, "build: stopped after %u builds (the most asked with --max-builds) without %s", rep->builds,
		      o->until == WH_UNTIL_GOOD ? "a good build" : o->until == WH_UNTIL_BAD ? "a bad build" : "a confirmed culprit");
	wh_progress_clear(&L->pr);
	if (!o->out)
		wh_progress_log(&L->pr, "build: %u builds: %u good, %u bad, %u skipped", rep->builds, rep->n_good, rep->n_bad, rep->n_skip);
	bool can_confirm = o->confirm && rep->n_good && rep->n_bad && (!o->build_cmd || o->pin_cmd);
	if (L->diff_builds != L->n || (can_confirm && !rep->confirmed_run)) {
		if ((st = confirm_now(L, can_confirm)) != WH_OK)
			goto out;
	}
	if (o->confirm && rep->n_good && rep->n_bad && o->build_cmd && !o->pin_cmd)
		wh_progress_log(&L->pr, "build: suspects not confirmed: an external builder needs --pin-cmd to rebuild from a swapped replay");
	uint32_t best = 0;
	if (rep->n_good && wh_tactic_best_good(L->plans, L->verdicts, L->n, &best) == WH_OK) {
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/fixed.json", L->dir);
		if ((st = wh_os_copy_file(L->b[best]->path, p)) != WH_OK)
			goto out;
		rep->fixed_build = (int32_t)best;
	}
	if ((st = write_blocklist(L)) != WH_OK)
		goto out;
	write_report(L, rep->fixed_build);
	rep->seconds = wh_os_now_s() - L->pr.t0;
	if (o->out) {
		FILE *f = o->out;
		fprintf(f, "build: %u builds: %u good, %u bad, %u skipped\n", rep->builds, rep->n_good, rep->n_bad, rep->n_skip);
		if (!rep->n_bad)
			fprintf(f, "build: no bad build: no flaky tactic showed up (try more builds)\n");
		else if (!rep->n_good)
			fprintf(f, "build: no good build: every build fails, so no tactic choice explains it (check the tolerances, or run `whittle reduce`)\n");
		else if (!L->diff.n)
			fprintf(f, "build: no suspect: bad builds use no tactic that good builds never use\n");
		if (L->diff.n) {
			fprintf(f, "suspects (tactics used only in bad builds, most likely first):\n");
			print_suspects(L, f, false);
		}
		for (uint32_t i = 0; i < L->diff.n; i++) {
			const struct wh_tactic_suspect *s = &L->diff.s[i];
			if (s->state == WH_SUSPECT_CONFIRMED)
				fprintf(f, "confirmed: layer '%s' tactic '%s' (good build %d turns bad with it; bad build %d turns good without it)\n",
					wh_name_term(s->layer), wh_name_term(s->tactic), s->good_build, s->bad_build);
			else if (s->state == WH_SUSPECT_SUFFICIENT)
				fprintf(f, "breaks builds: layer '%s' tactic '%s' (good build %d turns bad with it; bad build %d stays bad without it: it has another cause too)\n",
					wh_name_term(s->layer), wh_name_term(s->tactic), s->good_build, s->bad_build);
		}
		if (rep->confirmed_run)
			fprintf(f, "confirmation: %u confirmed, %u suspect%s tested, %u swap checks, %u bad build%s unexplained%s\n",
				rep->confirm.confirmed, rep->confirm.tested, rep->confirm.tested == 1 ? "" : "s", rep->confirm.checks,
				rep->confirm.bad_unexplained, rep->confirm.bad_unexplained == 1 ? "" : "s",
				!rep->confirm.bad_unexplained && rep->confirm.tested < L->diff.n ? " (so the other suspects need no test)" : "");
		if (rep->fixed_build >= 0)
			fprintf(f, "fixed: %s/fixed.json (good build %d)\n", wh_name_term(L->dir), rep->fixed_build);
		if (L->blocked)
			fprintf(f, "block list: %s/blocklist.json (%u tactic%s; give it to --block-tactics)\n", wh_name_term(L->dir), L->blocked,
				L->blocked == 1 ? "" : "s");
		fprintf(f, "report: %s/report.md\n", wh_name_term(L->dir));
	}
	{
		json_t *e = json_pack("{s:s, s:i, s:i, s:i, s:i}", "event", "result", "builds", (json_int_t)rep->builds, "good",
				      (json_int_t)rep->n_good, "bad", (json_int_t)rep->n_bad, "skipped", (json_int_t)rep->n_skip);
		json_t *sa = json_array(), *ca = json_array();
		for (uint32_t i = 0; i < L->diff.n; i++) {
			json_array_append_new(sa, suspect_json(L, &L->diff.s[i], i + 1));
			if (L->diff.s[i].state == WH_SUSPECT_CONFIRMED) {
				json_t *c = json_object();
				json_object_set_new(c, "layer", json_string(L->diff.s[i].layer));
				json_object_set_new(c, "tactic", json_string(L->diff.s[i].tactic));
				json_array_append_new(ca, c);
			}
		}
		json_object_set_new(e, "suspects", sa);
		json_object_set_new(e, "confirmed", ca);
		json_object_set_new(e, "swap_checks", json_integer(rep->confirm.checks));
		json_object_set_new(e, "bad_unexplained", json_integer(rep->confirm.bad_unexplained));
		if (rep->fixed_build >= 0) {
			char p[PATH_MAX + 32];
			wh_text_printf(p, sizeof p, "%s/fixed.json", L->dir);
			json_object_set_new(e, "fixed", json_string(p));
			json_object_set_new(e, "fixed_build", json_integer(rep->fixed_build));
		} else {
			json_object_set_new(e, "fixed", json_null());
		}
		char p[PATH_MAX + 32];
		wh_text_printf(p, sizeof p, "%s/report.md", L->dir);
		json_object_set_new(e, "report", json_string(p));
		wh_progress_event(&L->pr, e);
	}
out:
	wh_progress_clear(&L->pr);
	wh_artifacts_unlock(L->lock);
	if (L->dir[0]) {
		/* empty unless a build stopped half-way; then its replay stays for a look */
		char p[PATH_MAX + 16];
		wh_text_printf(p, sizeof p, "%s/work", L->dir);
		rmdir(p);
	}
	for (uint32_t i = 0; i < L->n; i++)
		free_build(L->b[i]);
	pthread_mutex_destroy(&L->build_lock);
	free(L->b);
	free(L->plans);
	free(L->verdicts);
	wh_tactic_diff_release(&L->diff);
	wh_tensor_set_release(&L->ref);
	rep->seconds = wh_os_now_s() - L->pr.t0;
	return st;
}
