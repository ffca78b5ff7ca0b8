/* Flaky-tactic localization on synthetic builds: the diff's ranking, the confirmation
 * logic against planted culprits (one, two, a decoy, an interaction, a bad build with two
 * causes), the best good build, replay files (whittle's and Polygraphy's formats), and the
 * number of builds needed when the faulty tactic is picked in 30 % of builds. */
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reducer/tactic-diff.h"

/* ---- synthetic builds ---- */

struct culprit {
	const char *layer, *tactic;
};

/* An oracle: a plan fails when it uses any culprit of `any`, or every culprit of `all`. */
struct oracle {
	const struct wh_tactic_plan *const *plans;
	struct culprit any[4];
	int n_any;
	struct culprit all[4];
	int n_all;
	uint32_t checks, forward, reverse;
	bool skip; /* every swap's check says "cannot tell" */
};

static bool plan_uses(const struct wh_tactic_plan *p, const char *layer, const char *tactic)
{
	const struct wh_tactic_choice *c = wh_tactic_plan_find(p, layer);
	return c && !strcmp(c->tactic, tactic);
}

static enum wh_verdict oracle_verdict(const struct oracle *o, const struct wh_tactic_plan *p)
{
	for (int i = 0; i < o->n_any; i++)
		if (plan_uses(p, o->any[i].layer, o->any[i].tactic))
			return WH_VERDICT_FAIL;
	if (o->n_all) {
		for (int i = 0; i < o->n_all; i++)
			if (!plan_uses(p, o->all[i].layer, o->all[i].tactic))
				return WH_VERDICT_PASS;
		return WH_VERDICT_FAIL;
	}
	return WH_VERDICT_PASS;
}

/* The swap, done the way the CLI does it: a copy of base with donor's choice for the layer. */
static enum wh_status oracle_swap(void *ctx, const struct wh_tactic_swap *sw, enum wh_verdict *out)
{
	struct oracle *o = ctx;
	const struct wh_tactic_plan *base = o->plans[sw->base], *donor = o->plans[sw->donor];
	struct wh_tactic_plan p;
	wh_tactic_plan_init(&p);
	for (uint32_t i = 0; i < base->n; i++)
		ck_assert_int_eq(wh_tactic_plan_set(&p, base->c[i].layer, base->c[i].op, base->c[i].tactic, 0, -1), WH_OK);
	const struct wh_tactic_choice *dc = wh_tactic_plan_find(donor, sw->layer);
	ck_assert_ptr_nonnull(dc);
	ck_assert_str_eq(dc->tactic, sw->tactic);
	ck_assert_int_eq(wh_tactic_plan_set(&p, sw->layer, dc->op, dc->tactic, 0, -1), WH_OK);
	/* the swap touches exactly one layer */
	for (uint32_t i = 0; i < base->n; i++)
		if (strcmp(base->c[i].layer, sw->layer))
			ck_assert_str_eq(wh_tactic_plan_find(&p, base->c[i].layer)->tactic, base->c[i].tactic);
	*out = o->skip ? WH_VERDICT_SKIP : oracle_verdict(o, &p);
	o->checks++;
	o->forward += sw->forward;
	o->reverse += !sw->forward;
	wh_tactic_plan_release(&p);
	return WH_OK;
}

/* Builds given as strings: "layer=tactic layer=tactic ...". */
struct builds {
	uint32_t n;
	struct wh_tactic_plan p[64];
	const struct wh_tactic_plan *ptr[64];
	enum wh_verdict v[64];
};

static void add_build(struct builds *b, const char *spec, enum wh_verdict v)
{
	ck_assert_uint_lt(b->n, 64);
	struct wh_tactic_plan *p = &b->p[b->n];
	wh_tactic_plan_init(p);
	char buf[1024];
	snprintf(buf, sizeof buf, "%s", spec);
	for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
		char *eq = strchr(tok, '=');
		ck_assert_ptr_nonnull(eq);
		*eq = '\0';
		ck_assert_int_eq(wh_tactic_plan_set(p, tok, "Conv", eq + 1, 0, -1), WH_OK);
	}
	b->ptr[b->n] = p;
	b->v[b->n] = v;
	b->n++;
}

static void add_judged(struct builds *b, const struct oracle *o, const char *spec)
{
	add_build(b, spec, WH_VERDICT_PASS);
	b->v[b->n - 1] = oracle_verdict(o, &b->p[b->n - 1]);
}

static void free_builds(struct builds *b)
{
	for (uint32_t i = 0; i < b->n; i++)
		wh_tactic_plan_release(&b->p[i]);
	b->n = 0;
}

static const struct wh_tactic_suspect *state_of(const struct wh_tactic_diff *d, const char *layer, const char *tactic)
{
	const struct wh_tactic_suspect *s = wh_tactic_diff_find(d, layer, tactic);
	ck_assert_msg(s != NULL, "%s/%s is not a suspect", layer, tactic);
	return s;
}

/* ---- the diff ---- */

START_TEST(test_diff_ranking)
{
	struct builds b = {0};
	/* good: a=t1 always; b varies; c=v2 once; never d=w9 */
	add_build(&b, "a=t1 b=u1 c=v1 d=w1", WH_VERDICT_PASS);
	add_build(&b, "a=t1 b=u2 c=v2 d=w1", WH_VERDICT_PASS);
	add_build(&b, "a=t1 b=u1 c=v1 d=w2", WH_VERDICT_PASS);
	add_build(&b, "a=t1 b=u2 c=v1 d=w1", WH_VERDICT_PASS);
	add_build(&b, "a=t1 b=u1 c=v1 d=w2", WH_VERDICT_PASS);
	add_build(&b, "a=t1 b=u2 c=v1 d=w1", WH_VERDICT_PASS);
	/* bad: a=T always; b=decoy twice; c=v2 once (also in a good build); d=w9 twice */
	add_build(&b, "a=T b=decoy c=v2 d=w9", WH_VERDICT_FAIL);
	add_build(&b, "a=T b=decoy c=v1 d=w1", WH_VERDICT_FAIL);
	add_build(&b, "a=T b=u1 c=v1 d=w9", WH_VERDICT_FAIL);
	add_build(&b, "a=T b=u2 c=v1 d=w2", WH_VERDICT_FAIL);
	/* a skipped build takes no part */
	add_build(&b, "a=zzz e=x", WH_VERDICT_SKIP);
	struct wh_tactic_diff d;
	ck_assert_int_eq(wh_tactic_diff_compute(b.ptr, b.v, b.n, NULL, &d), WH_OK);
	ck_assert_uint_eq(d.n_good, 6);
	ck_assert_uint_eq(d.n_bad, 4);
	ck_assert_uint_eq(d.n, 3);
	ck_assert_str_eq(d.s[0].layer, "a");
	ck_assert_str_eq(d.s[0].tactic, "T");
	ck_assert_uint_eq(d.s[0].n_bad, 4);
	ck_assert_uint_eq(d.s[0].n_good, 0);
	ck_assert(d.s[0].score == 1.0);
	/* equal scores: by layer name */
	ck_assert_str_eq(d.s[1].layer, "b");
	ck_assert_str_eq(d.s[1].tactic, "decoy");
	ck_assert_str_eq(d.s[2].layer, "d");
	ck_assert_str_eq(d.s[2].tactic, "w9");
	ck_assert(d.s[1].score == 0.5 && d.s[2].score == 0.5);
	ck_assert(d.s[0].state == WH_SUSPECT_UNTESTED);
	wh_tactic_diff_release(&d);

	/* leaving out the bad builds that use a=T leaves nothing to blame on a */
	bool skip[64] = {0};
	skip[6] = skip[7] = true;
	ck_assert_int_eq(wh_tactic_diff_compute(b.ptr, b.v, b.n, skip, &d), WH_OK);
	ck_assert_uint_eq(d.n_bad, 2);
	ck_assert_str_eq(d.s[0].layer, "a");
	ck_assert_uint_eq(d.s[0].n_bad, 2);
	ck_assert_ptr_null(wh_tactic_diff_find(&d, "b", "decoy"));
	ck_assert_ptr_nonnull(wh_tactic_diff_find(&d, "d", "w9"));
	ck_assert_uint_eq(wh_tactic_diff_find(&d, "d", "w9")->n_bad, 1);
	wh_tactic_diff_release(&d);

	/* no bad build: no suspect */
	for (uint32_t i = 0; i < b.n; i++)
		b.v[i] = WH_VERDICT_PASS;
	ck_assert_int_eq(wh_tactic_diff_compute(b.ptr, b.v, b.n, NULL, &d), WH_OK);
	ck_assert_uint_eq(d.n, 0);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

/* ---- confirmation ---- */

static void confirm(struct builds *b, struct oracle *o, struct wh_tactic_diff *d, struct wh_confirm_report *rep,
		    uint32_t max)
{
	o->plans = b->ptr;
	ck_assert_int_eq(wh_tactic_diff_compute(b->ptr, b->v, b->n, NULL, d), WH_OK);
	struct wh_confirm_options co = {.max_suspects = max};
	struct wh_confirm_ops ops = {.ctx = o, .check_swap = oracle_swap};
	ck_assert_int_eq(wh_tactic_confirm(b->ptr, b->v, b->n, &co, &ops, d, rep), WH_OK);
	ck_assert_uint_eq(rep->checks, o->checks);
}

START_TEST(test_confirm_culprit_and_decoy)
{
	/* layer c3's tactic k breaks builds; layer a0's tactic z appears in every bad build by
	 * chance and ranks first (same score, earlier name): it must be cleared, not confirmed */
	struct oracle o = {.any = {{"c3", "k"}}, .n_any = 1};
	struct builds b = {0};
	add_judged(&b, &o, "a0=x c3=g e=1");
	add_judged(&b, &o, "a0=y c3=g e=2");
	add_judged(&b, &o, "a0=z c3=k e=1");
	add_judged(&b, &o, "a0=x c3=h e=2");
	add_judged(&b, &o, "a0=z c3=k e=2");
	add_judged(&b, &o, "a0=y c3=h e=1");
	ck_assert_int_eq(b.v[2], WH_VERDICT_FAIL);
	ck_assert_int_eq(b.v[4], WH_VERDICT_FAIL);
	struct wh_tactic_diff d;
	struct wh_confirm_report rep;
	confirm(&b, &o, &d, &rep, 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_str_eq(d.s[0].layer, "a0"); /* the decoy comes first */
	ck_assert_int_eq(state_of(&d, "a0", "z")->state, WH_SUSPECT_CLEARED);
	const struct wh_tactic_suspect *s = state_of(&d, "c3", "k");
	ck_assert_int_eq(s->state, WH_SUSPECT_CONFIRMED);
	ck_assert_int_eq(b.v[s->good_build], WH_VERDICT_PASS);
	ck_assert_int_eq(b.v[s->bad_build], WH_VERDICT_FAIL);
	ck_assert(s->forward_run && s->forward == WH_VERDICT_FAIL);
	ck_assert(s->reverse_run && s->reverse == WH_VERDICT_PASS);
	ck_assert_uint_eq(rep.confirmed, 1);
	ck_assert_uint_eq(rep.tested, 2);
	ck_assert_uint_eq(rep.checks, 3); /* decoy forward, culprit forward + reverse */
	ck_assert_uint_eq(o.forward, 2);
	ck_assert_uint_eq(rep.bad_unexplained, 0);
	wh_tactic_diff_release(&d);

	/* --max-suspects 1 stops after the decoy */
	o.checks = o.forward = o.reverse = 0;
	confirm(&b, &o, &d, &rep, 1);
	ck_assert_uint_eq(rep.tested, 1);
	ck_assert_uint_eq(rep.confirmed, 0);
	ck_assert_int_eq(state_of(&d, "c3", "k")->state, WH_SUSPECT_UNTESTED);
	ck_assert_uint_eq(rep.bad_unexplained, 2);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

START_TEST(test_confirm_two_culprits)
{
	/* two independent culprits: once the first is confirmed, the bad builds it explains
	 * drop out and the second comes up */
	struct oracle o = {.any = {{"l1", "bad1"}, {"l5", "bad5"}}, .n_any = 2};
	struct builds b = {0};
	add_judged(&b, &o, "l1=a l2=a l5=a");
	add_judged(&b, &o, "l1=b l2=b l5=b");
	add_judged(&b, &o, "l1=bad1 l2=a l5=a");
	add_judged(&b, &o, "l1=bad1 l2=b l5=b");
	add_judged(&b, &o, "l1=bad1 l2=a l5=bad5");
	add_judged(&b, &o, "l1=a l2=b l5=bad5");
	add_judged(&b, &o, "l1=b l2=a l5=a");
	struct wh_tactic_diff d;
	struct wh_confirm_report rep;
	confirm(&b, &o, &d, &rep, 0);
	ck_assert_int_eq(state_of(&d, "l1", "bad1")->state, WH_SUSPECT_CONFIRMED);
	ck_assert_int_eq(state_of(&d, "l5", "bad5")->state, WH_SUSPECT_CONFIRMED);
	ck_assert_uint_eq(rep.confirmed, 2);
	ck_assert_uint_eq(rep.bad_unexplained, 0);
	ck_assert_uint_eq(rep.checks, 4);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

START_TEST(test_confirm_interaction_not_claimed)
{
	/* builds fail only when p=x and q=y together: neither alone turns a good build bad,
	 * so nothing may be claimed as confirmed */
	struct oracle o = {.all = {{"p", "x"}, {"q", "y"}}, .n_all = 2};
	struct builds b = {0};
	add_judged(&b, &o, "p=a q=a r=1");
	add_judged(&b, &o, "p=b q=b r=2");
	add_judged(&b, &o, "p=x q=y r=1");
	add_judged(&b, &o, "p=a q=b r=2");
	add_judged(&b, &o, "p=x q=y r=2");
	struct wh_tactic_diff d;
	struct wh_confirm_report rep;
	confirm(&b, &o, &d, &rep, 0);
	ck_assert_uint_eq(d.n, 2);
	ck_assert_int_eq(state_of(&d, "p", "x")->state, WH_SUSPECT_CLEARED);
	ck_assert_int_eq(state_of(&d, "q", "y")->state, WH_SUSPECT_CLEARED);
	ck_assert_uint_eq(rep.confirmed, 0);
	ck_assert_uint_eq(rep.bad_unexplained, 2);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

START_TEST(test_confirm_bad_build_with_two_causes)
{
	/* build X has two culprits (c1, c2), build Y one (c3). c1 and c2 break good builds but
	 * X stays bad without either: "sufficient", not confirmed; c3 is confirmed. */
	struct oracle o = {.any = {{"c1", "t"}, {"c2", "t"}, {"c3", "t"}}, .n_any = 3};
	struct builds b = {0};
	add_judged(&b, &o, "c1=g c2=g c3=g");
	add_judged(&b, &o, "c1=h c2=h c3=h");
	add_judged(&b, &o, "c1=t c2=t c3=g");
	add_judged(&b, &o, "c1=g c2=h c3=t");
	struct wh_tactic_diff d;
	struct wh_confirm_report rep;
	confirm(&b, &o, &d, &rep, 0);
	ck_assert_int_eq(state_of(&d, "c1", "t")->state, WH_SUSPECT_SUFFICIENT);
	ck_assert_int_eq(state_of(&d, "c2", "t")->state, WH_SUSPECT_SUFFICIENT);
	ck_assert_int_eq(state_of(&d, "c3", "t")->state, WH_SUSPECT_CONFIRMED);
	ck_assert_uint_eq(rep.confirmed, 1);
	ck_assert_uint_eq(rep.sufficient, 2);
	ck_assert_uint_eq(rep.bad_unexplained, 1);
	ck_assert_uint_eq(rep.checks, 6);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

START_TEST(test_confirm_skip_is_unclear)
{
	/* a swap whose check cannot tell (exit 125, timeout) proves nothing */
	struct oracle o = {.any = {{"c", "t"}}, .n_any = 1, .skip = true};
	struct builds b = {0};
	add_judged(&b, &o, "c=g");
	add_judged(&b, &o, "c=t");
	struct wh_tactic_diff d;
	struct wh_confirm_report rep;
	confirm(&b, &o, &d, &rep, 0);
	ck_assert_int_eq(state_of(&d, "c", "t")->state, WH_SUSPECT_UNCLEAR);
	ck_assert_uint_eq(rep.confirmed, 0);
	ck_assert_uint_eq(rep.checks, 1);
	wh_tactic_diff_release(&d);
	free_builds(&b);
}
END_TEST

START_TEST(test_best_good)
{
	struct builds b = {0};
	add_build(&b, "a=x", WH_VERDICT_PASS);
	add_build(&b, "a=y", WH_VERDICT_FAIL);
	add_build(&b, "a=z", WH_VERDICT_PASS);
	ck_assert_int_eq(wh_tactic_plan_set(&b.p[0], "a", "Conv", "x", 1, 2.0), WH_OK);
	ck_assert_int_eq(wh_tactic_plan_set(&b.p[0], "b", "Conv", "x", 1, 1.0), WH_OK);
	ck_assert_int_eq(wh_tactic_plan_set(&b.p[1], "a", "Conv", "y", 1, 0.1), WH_OK);
	ck_assert_int_eq(wh_tactic_plan_set(&b.p[2], "a", "Conv", "z", 1, 1.5), WH_OK);
	ck_assert_int_eq(wh_tactic_plan_set(&b.p[2], "b", "Conv", "x", 1, 1.0), WH_OK);
	uint32_t i = 99;
	ck_assert_int_eq(wh_tactic_best_good(b.ptr, b.v, b.n, &i), WH_OK);
	ck_assert_uint_eq(i, 2); /* 2.5 ms against 3.0; the bad build is faster but bad */
	b.v[0] = b.v[2] = WH_VERDICT_FAIL;
	ck_assert_int_eq(wh_tactic_best_good(b.ptr, b.v, b.n, &i), WH_ERR_NOT_FOUND);
	free_builds(&b);
}
END_TEST

/* ---- replay files ---- */

static char tmpdir[256];

static void write_text(const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", tmpdir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static const char *tpath(const char *name)
{
	static char p[4][512];
	static int k;
	k = (k + 1) % 4;
	snprintf(p[k], sizeof p[k], "%s/%s", tmpdir, name);
	return p[k];
}

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/whittle-check-tactics-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_replay_swap_formats)
{
	make_tmpdir();
	write_text("w-base.json", "{\"format\": \"whittle-tactics\", \"version\": 1, \"model\": \"abc\", \"precision\": \"fp16\", \"seed\": 3,"
				  " \"layers\": {\"c0\": {\"op\": \"Conv\", \"tactic\": \"conv-a\", \"id\": 1, \"ms\": 0.5},"
				  " \"c1\": {\"op\": \"Conv\", \"tactic\": \"conv-a\", \"id\": 1, \"ms\": 0.7}}}");
	write_text("w-donor.json", "{\"format\": \"whittle-tactics\", \"version\": 1, \"model\": \"abc\", \"precision\": \"fp16\", \"seed\": 4,"
				   " \"layers\": {\"c0\": {\"op\": \"Conv\", \"tactic\": \"conv-b\", \"id\": 2, \"ms\": 0.4},"
				   " \"c1\": {\"op\": \"Conv\", \"tactic\": \"conv-c\", \"id\": 3, \"ms\": 0.6}}}");
	ck_assert_int_eq(wh_tactic_replay_swap(tpath("w-base.json"), tpath("w-donor.json"), "c1", tpath("w-out.json")), WH_OK);
	struct wh_tactic_plan p;
	wh_tactic_plan_init(&p);
	ck_assert_int_eq(wh_tactic_plan_read(tpath("w-out.json"), &p), WH_OK);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_str_eq(wh_tactic_plan_find(&p, "c0")->tactic, "conv-a");
	ck_assert_str_eq(wh_tactic_plan_find(&p, "c1")->tactic, "conv-c");
	ck_assert_uint_eq(wh_tactic_plan_find(&p, "c1")->id, 3);
	ck_assert_str_eq(p.precision, "fp16");
	ck_assert_uint_eq(p.seed, 3); /* the base's other fields stay */
	wh_tactic_plan_release(&p);
	ck_assert_int_eq(wh_tactic_replay_swap(tpath("w-base.json"), tpath("w-donor.json"), "nope", tpath("w-out2.json")),
			 WH_ERR_NOT_FOUND);

	/* Polygraphy's format keeps its shape: "replay", integer ids, the class tags */
	write_text("p-base.json", "{\"replay\": {\"conv1\": {\"implementation\": 2147483661, \"tactic\": 3, \"inputs\": [], \"outputs\": [],"
				  " \"polygraphy_class\": \"Algorithm\"}, \"relu\": {\"implementation\": 5, \"tactic\": 0, \"inputs\": [],"
				  " \"outputs\": [], \"polygraphy_class\": \"Algorithm\"}}, \"polygraphy_class\": \"TacticReplayData\"}");
	write_text("p-donor.json", "{\"replay\": {\"conv1\": {\"implementation\": 2147483661, \"tactic\": 7, \"inputs\": [], \"outputs\": [],"
				   " \"polygraphy_class\": \"Algorithm\"}, \"relu\": {\"implementation\": 5, \"tactic\": 1, \"inputs\": [],"
				   " \"outputs\": [], \"polygraphy_class\": \"Algorithm\"}}, \"polygraphy_class\": \"TacticReplayData\"}");
	ck_assert_int_eq(wh_tactic_replay_swap(tpath("p-base.json"), tpath("p-donor.json"), "conv1", tpath("p-out.json")), WH_OK);
	wh_tactic_plan_init(&p);
	ck_assert_int_eq(wh_tactic_plan_read(tpath("p-out.json"), &p), WH_OK);
	ck_assert_str_eq(wh_tactic_plan_find(&p, "conv1")->tactic, "2147483661:7");
	ck_assert_str_eq(wh_tactic_plan_find(&p, "relu")->tactic, "5:0");
	wh_tactic_plan_release(&p);
	json_error_t err;
	json_t *j = json_load_file(tpath("p-out.json"), 0, &err);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(json_string_value(json_object_get(j, "polygraphy_class")), "TacticReplayData");
	ck_assert(json_is_integer(json_object_get(json_object_get(json_object_get(j, "replay"), "conv1"), "tactic")));
	json_decref(j);
	remove_tmpdir();
}
END_TEST

START_TEST(test_replays_folder)
{
	make_tmpdir();
	char sub[600];
	snprintf(sub, sizeof sub, "%s/good", tmpdir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	write_text("good/build_10.json", "{\"layers\": {\"c\": {\"tactic\": \"t10\"}}}");
	write_text("good/build_2.json", "{\"layers\": {\"c\": {\"tactic\": \"t2\"}}}");
	write_text("good/notes.txt", "not a replay");
	struct wh_tactic_replays r;
	wh_tactic_replays_init(&r);
	ck_assert_int_eq(wh_tactic_replays_add(&r, sub), WH_OK);
	ck_assert_uint_eq(r.n, 2);
	ck_assert_str_eq(wh_tactic_plan_find(&r.plans[0], "c")->tactic, "t2"); /* build_2 before build_10 */
	ck_assert_str_eq(wh_tactic_plan_find(&r.plans[1], "c")->tactic, "t10");
	ck_assert_int_eq(wh_tactic_replays_add(&r, tpath("good/build_2.json")), WH_OK);
	ck_assert_uint_eq(r.n, 3);
	wh_tactic_replays_release(&r);
	snprintf(sub, sizeof sub, "%s/empty", tmpdir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_eq(wh_tactic_replays_add(&r, sub), WH_ERR_NOT_FOUND);
	write_text("bad.json", "{\"neither\": 1}");
	ck_assert_int_eq(wh_tactic_replays_add(&r, tpath("bad.json")), WH_ERR_PARSE);
	write_text("broken.json", "{\"layers\": ");
	ck_assert_int_eq(wh_tactic_replays_add(&r, tpath("broken.json")), WH_ERR_PARSE);
	ck_assert_int_eq(wh_tactic_replays_add(&r, tpath("missing.json")), WH_ERR_IO);
	ck_assert_uint_eq(r.n, 0);
	wh_tactic_replays_release(&r);
	remove_tmpdir();
}
END_TEST

/* ---- builds needed when the faulty tactic is picked in 30 % of builds ---- */

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

#define SIM_LAYERS 60
#define SIM_MAX_BUILDS 60

/* One trial: a model of SIM_LAYERS layers with 2..5 tactics each; the culprit layer picks
 * its faulty tactic with probability 0.3, every other choice is uniform. After each build
 * that brings new evidence, diff and confirm (keeping what earlier rounds found), as
 * `whittle build --until confirmed` does. Returns the builds needed (0: not within
 * SIM_MAX_BUILDS); *checks_out: swap checks. */
static uint32_t sim_trial(uint64_t seed, uint32_t *checks_out)
{
	uint64_t rng = seed;
	uint32_t n_tac[SIM_LAYERS];
	for (int l = 0; l < SIM_LAYERS; l++)
		n_tac[l] = 2 + (uint32_t)(splitmix(&rng) % 4);
	uint32_t culprit = (uint32_t)(splitmix(&rng) % SIM_LAYERS);
	char cl[16];
	snprintf(cl, sizeof cl, "layer%02u", culprit);
	struct oracle o = {.any = {{cl, "faulty"}}, .n_any = 1};
	struct wh_tactic_plan *plans = calloc(SIM_MAX_BUILDS, sizeof *plans);
	const struct wh_tactic_plan **ptr = calloc(SIM_MAX_BUILDS, sizeof *ptr);
	enum wh_verdict *v = calloc(SIM_MAX_BUILDS, sizeof *v);
	struct wh_tactic_diff memo;
	wh_tactic_diff_init(&memo);
	uint32_t needed = 0, n_good = 0, n_bad = 0;
	o.plans = ptr;
	for (uint32_t k = 0; k < SIM_MAX_BUILDS && !needed; k++) {
		wh_tactic_plan_init(&plans[k]);
		for (uint32_t l = 0; l < SIM_LAYERS; l++) {
			char ln[16], tn[16];
			snprintf(ln, sizeof ln, "layer%02u", l);
			uint64_t r = splitmix(&rng);
			if (l == culprit && (double)(r >> 11) / 9007199254740992.0 < 0.3)
				snprintf(tn, sizeof tn, "faulty");
			else
				snprintf(tn, sizeof tn, "t%u", (unsigned)(splitmix(&rng) % (l == culprit ? n_tac[l] - 1 : n_tac[l])));
			ck_assert_int_eq(wh_tactic_plan_set(&plans[k], ln, "Conv", tn, 0, -1), WH_OK);
		}
		ptr[k] = &plans[k];
		v[k] = oracle_verdict(&o, &plans[k]);
		n_good += v[k] == WH_VERDICT_PASS;
		n_bad += v[k] == WH_VERDICT_FAIL;
		if (!n_good || !n_bad || (v[k] == WH_VERDICT_PASS && n_good > 1))
			continue;
		struct wh_tactic_diff d;
		ck_assert_int_eq(wh_tactic_diff_compute(ptr, v, k + 1, NULL, &d), WH_OK);
		wh_tactic_diff_inherit(&d, &memo);
		struct wh_confirm_options co = {.max_suspects = 32}; /* whittle build's default */
		struct wh_confirm_ops ops = {.ctx = &o, .check_swap = oracle_swap};
		struct wh_confirm_report rep;
		ck_assert_int_eq(wh_tactic_confirm(ptr, v, k + 1, &co, &ops, &d, &rep), WH_OK);
		for (uint32_t i = 0; i < d.n; i++) {
			/* only the culprit may ever be confirmed */
			if (d.s[i].state == WH_SUSPECT_CONFIRMED) {
				ck_assert_str_eq(d.s[i].layer, cl);
				ck_assert_str_eq(d.s[i].tactic, "faulty");
				needed = k + 1;
			} else {
				ck_assert_int_ne(d.s[i].state, WH_SUSPECT_SUFFICIENT);
			}
		}
		wh_tactic_diff_release(&memo);
		memo = d;
	}
	*checks_out = o.checks;
	for (uint32_t k = 0; k < SIM_MAX_BUILDS; k++)
		wh_tactic_plan_release(&plans[k]);
	wh_tactic_diff_release(&memo);
	free(plans);
	free(ptr);
	free(v);
	return needed;
}

START_TEST(test_builds_needed_at_30_percent)
{
	uint32_t within = 0, total_checks = 0, worst = 0;
	char line[512];
	size_t off = 0;
	for (uint64_t t = 0; t < 20; t++) {
		uint32_t checks;
		uint32_t n = sim_trial(1000 + t, &checks);
		within += n && n <= 20;
		total_checks += checks;
		if (!n || n > worst)
			worst = n ? n : SIM_MAX_BUILDS + 1;
		off += (size_t)snprintf(line + off, sizeof line - off, "%s%u", t ? " " : "", n);
	}
	printf("builds needed to confirm the culprit (picked in 30 %% of builds), 20 seeded trials: %s; "
	       "within 20 builds: %u of 20; worst %u; swap checks %.1f per trial\n",
	       line, within, worst, total_checks / 20.0);
	ck_assert_msg(within >= 19, "only %u of 20 trials confirmed the culprit within 20 builds (%s)", within, line);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tactics");
	TCase *td = tcase_create("diff");
	tcase_add_test(td, test_diff_ranking);
	tcase_add_test(td, test_best_good);
	suite_add_tcase(s, td);
	TCase *tc = tcase_create("confirm");
	tcase_add_test(tc, test_confirm_culprit_and_decoy);
	tcase_add_test(tc, test_confirm_two_culprits);
	tcase_add_test(tc, test_confirm_interaction_not_claimed);
	tcase_add_test(tc, test_confirm_bad_build_with_two_causes);
	tcase_add_test(tc, test_confirm_skip_is_unclear);
	tcase_add_test(tc, test_builds_needed_at_30_percent);
	suite_add_tcase(s, tc);
	TCase *tf = tcase_create("files");
	tcase_add_test(tf, test_replay_swap_formats);
	tcase_add_test(tf, test_replays_folder);
	suite_add_tcase(s, tf);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
