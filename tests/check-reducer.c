/* The reducer's parts: the check runner on the fault fixtures, and the search strategies
 * on synthetic oracles (planted culprits), where check counts are exact. */
#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "graph/ir.h"
#include "reducer/check.h"
#include "reducer/layer-groups.h"
#include "reducer/search.h"

static char fixture[4096];

static const char *fx(const char *name)
{
	const char *src = getenv("WHITTLE_SRC");
	snprintf(fixture, sizeof fixture, "%s/fixtures/checks/%s", src ? src : ".", name);
	return fixture;
}

static struct wh_check *make_check(char **argv, int argc, const char *regex, double timeout)
{
	struct wh_check_options o = {.argv = argv, .argc = argc, .timeout_s = timeout, .kill_grace_s = 0.5};
	const char *re[1] = {regex};
	if (regex) {
		o.fail_regex = re;
		o.n_fail_regex = 1;
	}
	struct wh_check *c;
	ck_assert_int_eq(wh_check_create(&o, &c), WH_OK);
	return c;
}

START_TEST(test_runner_exit_codes)
{
	char *pass[] = {"/bin/true", NULL}, *fail[] = {"/bin/false", NULL};
	struct wh_check_result r;
	struct wh_check *c = make_check(pass, 1, NULL, 0);
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	ck_assert_int_eq(r.verdict, WH_VERDICT_PASS);
	wh_check_result_release(&r);
	wh_check_destroy(c);
	c = make_check(fail, 1, NULL, 0);
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	ck_assert_int_eq(r.verdict, WH_VERDICT_FAIL);
	ck_assert_int_eq(r.exit_code, 1);
	wh_check_result_release(&r);
	wh_check_destroy(c);
	char *skip[] = {(char *)fx("skip.sh"), NULL};
	c = make_check(skip, 1, NULL, 0);
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	ck_assert_int_eq(r.verdict, WH_VERDICT_SKIP);
	wh_check_result_release(&r);
	wh_check_destroy(c);
}
END_TEST

START_TEST(test_runner_signal_is_failure)
{
	char *crash[] = {(char *)fx("crash.sh"), NULL};
	struct wh_check *c = make_check(crash, 1, NULL, 0);
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	ck_assert_int_eq(r.verdict, WH_VERDICT_FAIL);
	ck_assert_int_eq(r.signal, SIGSEGV);
	wh_check_result_release(&r);
	wh_check_destroy(c);
}
END_TEST

/* A killed orphan may stay a zombie until init reaps it: that is not a running process. */
static bool alive(int pid)
{
	if (kill(pid, 0) != 0)
		return false;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}

START_TEST(test_runner_hang_kills_group)
{
	char pids[256];
	snprintf(pids, sizeof pids, "/tmp/whittle-hang-%d", (int)getpid());
	unlink(pids);
	setenv("WHITTLE_HANG_PIDS", pids, 1);
	char *hang[] = {(char *)fx("hang.sh"), NULL};
	struct wh_check *c = make_check(hang, 1, NULL, 1.0);
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	ck_assert(r.timed_out);
	ck_assert_int_eq(r.verdict, WH_VERDICT_SKIP);
	ck_assert(r.seconds < 4.0);
	wh_check_result_release(&r);
	wh_check_destroy(c);
	/* the background child and the script itself are gone */
	FILE *f = fopen(pids, "r");
	ck_assert_ptr_nonnull(f);
	int child = 0, self = 0;
	ck_assert_int_eq(fscanf(f, "%d %d", &child, &self), 2);
	fclose(f);
	unlink(pids);
	usleep(200000);
	ck_assert(!alive(child));
	ck_assert(!alive(self));
}
END_TEST

START_TEST(test_runner_big_output_capped_and_matched)
{
	char *loud[] = {(char *)fx("loud.sh"), NULL};
	struct wh_check *c = make_check(loud, 1, "ACCURACY FAILURE", 0);
	struct rusage before, after;
	getrusage(RUSAGE_SELF, &before);
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	getrusage(RUSAGE_SELF, &after);
	ck_assert_int_eq(r.verdict, WH_VERDICT_FAIL);
	ck_assert(r.output_bytes > 100000000u);
	ck_assert(strlen(r.output) < 3u << 20);
	/* memory stays flat: the peak grew by far less than the 100 MB printed */
	ck_assert(after.ru_maxrss - before.ru_maxrss < 20 * 1024);
	wh_check_result_release(&r);
	wh_check_destroy(c);
}
END_TEST

/* Runs `sh -c script` with one fail regex and returns the verdict. */
static enum wh_verdict shell_verdict(const char *script, const char *regex)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct wh_check *c = make_check(argv, 3, regex, 60);
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_OK);
	enum wh_verdict v = r.verdict;
	wh_check_result_release(&r);
	wh_check_destroy(c);
	return v;
}

/* The fail regex sees the whole stream, not only the kept head and tail of the output: a
 * failure line in the middle of 3 MiB (a verbose engine build) fails the check, a pattern
 * split across two writes matches, and ^ matches at a line start after a cut. */
START_TEST(test_runner_regex_on_the_whole_stream)
{
	const char *filler = "i=0; while [ $i -lt 48000 ]; do echo 'build log line ................................'; "
			     "i=$((i+1)); done";
	char script[1024];
	snprintf(script, sizeof script, "%s; echo 'ACCURACY FAILURE in layer 7'; %s", filler, filler);
	ck_assert_int_eq(shell_verdict(script, "ACCURACY FAILURE"), WH_VERDICT_FAIL);
	snprintf(script, sizeof script, "%s; %s", filler, filler);
	ck_assert_int_eq(shell_verdict(script, "ACCURACY FAILURE"), WH_VERDICT_PASS);
	ck_assert_int_eq(shell_verdict("printf 'xx ACCURACY FAI'; sleep 0.3; printf 'LURE yy\\n'", "ACCURACY FAILURE"),
			 WH_VERDICT_FAIL);
	ck_assert_int_eq(shell_verdict("printf 'xx ACCURACY FAI'; sleep 0.3; printf 'LED yy\\n'", "ACCURACY FAILURE"),
			 WH_VERDICT_PASS);
	snprintf(script, sizeof script, "%s; printf 'abc\\nERR'; sleep 0.3; printf 'OR: bad\\n'; %s", filler, filler);
	ck_assert_int_eq(shell_verdict(script, "^ERROR: bad$"), WH_VERDICT_FAIL);
	snprintf(script, sizeof script, "%s; printf 'abcERROR: bad\\n'", filler);
	ck_assert_int_eq(shell_verdict(script, "^ERROR: bad$"), WH_VERDICT_PASS);
}
END_TEST

START_TEST(test_runner_not_executable_is_broken_check)
{
	char *bad[] = {(char *)fx("not-executable.sh"), NULL};
	struct wh_check *c = make_check(bad, 1, NULL, 0);
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, NULL, &r), WH_ERR_CHECK);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "not-executable.sh"));
	wh_check_destroy(c);
}
END_TEST

START_TEST(test_runner_placeholders)
{
	char *argv[] = {"/bin/sh", "-c", "echo model={model} inputs={inputs}; exit 3", NULL};
	struct wh_check *c = make_check(argv, 3, "model=/m\\.onnx inputs=/in", 0);
	struct wh_check_vars v = {.model = "/m.onnx", .inputs = "/in"};
	struct wh_check_result r;
	ck_assert_int_eq(wh_check_run(c, &v, &r), WH_OK);
	ck_assert_int_eq(r.verdict, WH_VERDICT_FAIL);
	ck_assert_int_eq(r.exit_code, 3);
	wh_check_result_release(&r);
	wh_check_destroy(c);
	struct wh_check_options o = {.argv = argv, .argc = 3};
	const char *bad_re[1] = {"(unclosed"};
	o.fail_regex = bad_re;
	o.n_fail_regex = 1;
	ck_assert_int_eq(wh_check_create(&o, &c), WH_ERR_USAGE);
}
END_TEST

/* ---- a long list of layers, grouped by module scope ---- */

/* A graph of n unconnected layers with these names and ops; ids 0..n-1. */
static struct wh_model *layers_model(const char *const *names, const char *const *ops, uint32_t n)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	for (uint32_t i = 0; i < n; i++) {
		char out[32];
		uint32_t v, id;
		snprintf(out, sizeof out, "t%u", i);
		ck_assert_int_eq(wh_graph_add_value(m->graph, out, &v), WH_OK);
		ck_assert_int_eq(wh_graph_add_node(m->graph, ops[i], "", names[i], 0, NULL, 1, &v, &id), WH_OK);
		ck_assert_uint_eq(id, i);
	}
	return m;
}

static char *groups_printed(const struct wh_layer_groups *lg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	wh_layer_groups_print(f, lg, "  ");
	fclose(f);
	return buf;
}

START_TEST(test_layer_groups)
{
	/* 20 layers of 4 decoder layers, 2 parts each: with room for 7 groups, the cut that names
	 * the decoder layers (4 groups) */
	char names[20][64];
	const char *np[20], *op[20];
	uint32_t ids[20];
	for (uint32_t i = 0; i < 20; i++) {
		snprintf(names[i], sizeof names[i], "/model/layers.%u/%s/proj%u/%s", i / 5, i % 5 < 3 ? "self_attn" : "mlp", i % 5,
			 i % 2 ? "Add" : "MatMul");
		np[i] = names[i];
		op[i] = i % 2 ? "Add" : "MatMul";
		ids[i] = i;
	}
	struct wh_model *m = layers_model(np, op, 20);
	struct wh_layer_groups lg;
	ck_assert_int_eq(wh_layer_groups_build(m->graph, ids, 20, 7, &lg), WH_OK);
	ck_assert_uint_eq(lg.n, 4);
	ck_assert_uint_eq(lg.shown, 4);
	ck_assert_str_eq(lg.g[0].scope, "/model/layers.0");
	ck_assert_str_eq(lg.g[3].scope, "/model/layers.3");
	ck_assert_uint_eq(lg.g[1].n, 5);
	ck_assert_uint_eq(lg.n_ops, 2);
	ck_assert_str_eq(lg.ops[0].op, "Add"); /* 10 MatMul, 10 Add: ties by name */
	ck_assert_uint_eq(lg.ops[0].n, 10);
	char *out = groups_printed(&lg);
	ck_assert_ptr_nonnull(strstr(out, "  /model/layers.2    5  "));
	free(out);
	wh_layer_groups_release(&lg);
	/* with room for 8: the deeper cut, 4 decoder layers x 2 parts (20 projections do not fit) */
	ck_assert_int_eq(wh_layer_groups_build(m->graph, ids, 20, 8, &lg), WH_OK);
	ck_assert_uint_eq(lg.n, 8);
	ck_assert_str_eq(lg.g[0].scope, "/model/layers.0/self_attn");
	ck_assert_uint_eq(lg.g[0].n, 3);
	wh_layer_groups_release(&lg);
	wh_model_destroy(m);

	/* names without a scope: one group, shown as such */
	const char *flat[3] = {"p2o.Pow.0", "p2o.ReduceMean.0", "p2o.Pow.1"}, *fops[3] = {"Pow", "ReduceMean", "Pow"};
	m = layers_model(flat, fops, 3);
	ck_assert_int_eq(wh_layer_groups_build(m->graph, ids, 3, 8, &lg), WH_OK);
	ck_assert_uint_eq(lg.n, 1);
	ck_assert_str_eq(lg.g[0].scope, "");
	ck_assert_str_eq(lg.g[0].ops[0].op, "Pow");
	ck_assert_uint_eq(lg.g[0].ops[0].n, 2);
	out = groups_printed(&lg);
	ck_assert_ptr_nonnull(strstr(out, "(no module scope)"));
	free(out);
	wh_layer_groups_release(&lg);
	wh_model_destroy(m);

	/* 12 top-level scopes, one with a hostile name: one group says nothing, so the 12 are
	 * taken, the 7 largest shown and the rest counted; names escaped */
	for (uint32_t i = 0; i < 12; i++) {
		if (i < 2)
			snprintf(names[i], sizeof names[i], "/s\x1b[2J0/Mul%s", i ? "_1" : "");
		else
			snprintf(names[i], sizeof names[i], "/s%u/Mul", i);
		np[i] = names[i];
		op[i] = "Mul";
	}
	m = layers_model(np, op, 12);
	ck_assert_int_eq(wh_layer_groups_build(m->graph, ids, 12, 8, &lg), WH_OK);
	ck_assert_uint_eq(lg.n, 11);
	ck_assert_uint_eq(lg.shown, 7);
	out = groups_printed(&lg);
	ck_assert_ptr_null(strchr(out, '\x1b'));
	ck_assert_ptr_nonnull(strstr(out, "/s\\x1b[2J0"));
	ck_assert_ptr_nonnull(strstr(out, "... and 4 more scopes (4 layers)"));
	int lines = 0;
	for (char *p = out; *p; p++)
		lines += *p == '\n';
	ck_assert_int_eq(lines, 8);
	free(out);
	wh_layer_groups_release(&lg);
	wh_model_destroy(m);
}
END_TEST

/* ---- search on a synthetic oracle: fails iff every culprit is kept ---- */

struct oracle {
	uint32_t n;
	uint32_t culprits[8];
	int k;
	uint32_t checks, rounds, jobs;
};

static enum wh_status oracle_eval(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *v)
{
	struct oracle *o = ctx;
	for (uint32_t i = 0; i < n; i++) {
		bool all = true;
		for (int c = 0; c < o->k; c++)
			all &= masks[i][o->culprits[c]] != 0;
		v[i] = all ? WH_VERDICT_FAIL : WH_VERDICT_PASS;
		o->checks++;
	}
	o->rounds += o->jobs ? (n + o->jobs - 1) / o->jobs : n;
	return WH_OK;
}

static uint32_t ceil_log2(uint32_t n)
{
	uint32_t r = 0;
	while ((1u << r) < n)
		r++;
	return r;
}

/* Issue 27's bound for k culprits among n: ceil(log2 C(n,k)) + k + 2, the original's check
 * counted (the proof of the answer is the search's own check of K alone). */
static uint32_t issue27_bound(uint32_t n, uint32_t k)
{
	double lc = lgamma(n + 1.0) - lgamma(k + 1.0) - lgamma(n - k + 1.0);
	return (uint32_t)ceil(lc / log(2.0) - 1e-9) + k + 2;
}

/* Runs ddmin on planted culprits: the result is exactly the culprits, 1-minimal, and at -j 1
 * within issue 27's bound (up to 4 culprits among at most WH_SEARCH_DP_MAX nodes; for one
 * culprit that is ceil(log2 n) + 3). Counts include the driver's check of the original
 * (before the search at -j 1, riding in its first batch at -j > 1). Returns the result mask
 * (caller frees). */
static uint8_t *run_planted(uint32_t n, const uint32_t *culprits, int k, int jobs, uint32_t *checks_out, uint32_t *rounds_out)
{
	struct oracle o = {.n = n, .k = k, .jobs = (uint32_t)jobs};
	memcpy(o.culprits, culprits, sizeof(uint32_t) * (size_t)k);
	struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = jobs, .reduce_inputs = true, .reduce_outputs = true,
				       .confirm_full = jobs > 1};
	struct wh_search_ops ops = {.ctx = &o, .eval = oracle_eval};
	uint8_t *res = malloc(n);
	struct wh_search_report rep;
	ck_assert_int_eq(wh_search_run(n, &so, &ops, res, &rep), WH_OK);
	uint32_t cnt = 0;
	for (uint32_t i = 0; i < n; i++)
		cnt += res[i];
	ck_assert_uint_eq(cnt, (uint32_t)k);
	for (int c = 0; c < k; c++)
		ck_assert(res[culprits[c]]);
	ck_assert(rep.one_minimal);
	ck_assert(rep.monotone);
	ck_assert(!rep.inconsistent);
	ck_assert_uint_eq(rep.probes, o.checks);
	uint32_t total = o.checks + 1, rounds = o.rounds + (jobs > 1 ? 0 : 1);
	if (jobs == 1 && k <= 4 && n <= WH_SEARCH_DP_MAX) {
		uint32_t bound = issue27_bound(n, (uint32_t)k);
		ck_assert_msg(total <= bound, "n=%u k=%d culprits %u..: %u checks, bound %u", n, k, culprits[0], total, bound);
		ck_assert_uint_eq(rep.bound_k, n < 4 ? n : 4);
	}
	if (checks_out)
		*checks_out = total;
	if (rounds_out)
		*rounds_out = rounds;
	return res;
}

/* Every n, k, placement: the same model at -j 1, 4 and 8; rounds at -j 8 within bounds. */
static void planted_all_jobs(uint32_t n, const uint32_t *culprits, int k)
{
	uint8_t *r1 = run_planted(n, culprits, k, 1, NULL, NULL);
	int js[] = {2, 4, 8};
	for (int j = 0; j < 3; j++) {
		uint32_t rounds;
		uint8_t *rj = run_planted(n, culprits, k, js[j], NULL, &rounds);
		ck_assert_msg(!memcmp(r1, rj, n), "n=%u k=%d: -j %d gives another result than -j 1", n, k, js[j]);
		if (js[j] == 8) {
			/* the issue's bounds hold for the benchmark's sizes (up to 330 layers);
			 * beyond, a round per factor 9 more */
			uint32_t l9 = 0;
			for (uint64_t p = 1; p < n; p *= 9)
				l9++;
			uint32_t bound = n <= 330 ? (k == 1 ? 6 : 3 * (uint32_t)k + 4) : (uint32_t)k * (l9 + 1) + 2;
			ck_assert_msg(rounds <= bound, "n=%u k=%d first culprit %u: %u rounds at -j 8, bound %u", n, k, culprits[0], rounds,
				      bound);
		}
		free(rj);
	}
	free(r1);
}

START_TEST(test_search_one_culprit_everywhere)
{
	uint32_t sizes[] = {2, 3, 17, 64, 200, 330, 672, 1000};
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
		for (uint32_t c = 0; c < sizes[s]; c += sizes[s] / 40 + 1)
			planted_all_jobs(sizes[s], &c, 1);
}
END_TEST

START_TEST(test_search_k_culprits)
{
	unsigned seed = 7;
	for (int trial = 0; trial < 400; trial++) {
		uint32_t n = 8 + rand_r(&seed) % 1000;
		int k = 2 + (int)(rand_r(&seed) % 3);
		uint32_t cul[8];
		for (int i = 0; i < k; i++) {
			bool dup;
			do {
				cul[i] = (uint32_t)rand_r(&seed) % n;
				dup = false;
				for (int j = 0; j < i; j++)
					dup |= cul[j] == cul[i];
			} while (dup);
		}
		/* adjacent culprits, a cluster at either end, evenly spread */
		if (trial % 5 == 0 && cul[0] + 1 < n)
			cul[1] = cul[0] + 1, k = 2;
		if (trial % 7 == 1)
			for (int i = 0; i < k; i++)
				cul[i] = n - 1 - (uint32_t)i;
		if (trial % 7 == 2)
			for (int i = 0; i < k; i++)
				cul[i] = (uint32_t)i;
		if (trial % 7 == 3)
			for (int i = 0; i < k; i++)
				cul[i] = (uint32_t)(((uint64_t)n * (uint64_t)(2 * i + 1)) / (uint64_t)(2 * k));
		planted_all_jobs(n, cul, k);
	}
}
END_TEST

/* Issue 27, acceptance 3: the benchmark's cases (scripts/bench-reduce.sh) and seeded random
 * placements of 2, 3 and 4 culprits among 65, 221 and 330 layers stay within
 * ceil(log2 C(n,k)) + k + 2 checks at -j 1 (run_planted asserts it), exact and 1-minimal. */
START_TEST(test_search_issue27_bound)
{
	uint32_t sizes[] = {65, 221, 330};
	for (int s = 0; s < 3; s++) {
		uint32_t n = sizes[s];
		uint32_t cases[][5] = {{1, n / 10}, {1, n / 2}, {1, n - 1}, {2, n / 2, n / 2 + 1}, {2, n / 5, 4 * n / 5},
				       {3, n / 6, n / 2, 5 * n / 6}, {3, n / 4, 3 * n / 4, 3 * n / 4 + 1},
				       {4, n / 8, 3 * n / 8, 5 * n / 8, 7 * n / 8}, {4, n / 3, n / 3 + 1, n / 3 + 2, n / 3 + 3}};
		for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
			free(run_planted(n, cases[c] + 1, (int)cases[c][0], 1, NULL, NULL));
		unsigned seed = 27 + n;
		for (int k = 2; k <= 4; k++)
			for (int trial = 0; trial < 150; trial++) {
				uint32_t cul[4];
				for (int i = 0; i < k; i++) {
					bool dup;
					do {
						cul[i] = (uint32_t)rand_r(&seed) % n;
						dup = false;
						for (int j = 0; j < i; j++)
							dup |= cul[j] == cul[i];
					} while (dup);
				}
				free(run_planted(n, cul, k, 1, NULL, NULL));
			}
	}
}
END_TEST

/* The budgeted trees exist for every list size up to WH_SEARCH_DP_MAX (the dynamic program
 * meets the budgets of 1 to 4 culprits), and plain bisection runs beyond. */
START_TEST(test_search_tree_sizes)
{
	uint32_t sizes[] = {2, 3, 4, 5, 6, 17, 100, 1000, WH_SEARCH_DP_MAX, WH_SEARCH_DP_MAX + 1};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		uint32_t n = sizes[i], c = n / 2;
		struct oracle o = {.n = n, .k = 1, .jobs = 1, .culprits = {c}};
		struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = 1, .reduce_inputs = true, .reduce_outputs = true};
		struct wh_search_ops ops = {.ctx = &o, .eval = oracle_eval};
		uint8_t *res = malloc(n);
		struct wh_search_report rep;
		ck_assert_int_eq(wh_search_run(n, &so, &ops, res, &rep), WH_OK);
		ck_assert(res[c] && rep.one_minimal);
		ck_assert_uint_eq(rep.bound_k, n > WH_SEARCH_DP_MAX ? 0 : (n < 4 ? n : 4));
		free(res);
	}
}
END_TEST

/* Culprits next to each other cost one or two checks each after the first. */
START_TEST(test_search_adjacent_is_cheap)
{
	uint32_t cul[2] = {200, 201}, checks1, checks2;
	free(run_planted(330, cul, 1, 1, &checks1, NULL));
	free(run_planted(330, cul, 2, 1, &checks2, NULL));
	ck_assert_msg(checks2 <= checks1 + 2, "adjacent culprit: %u checks vs %u for one", checks2, checks1);
}
END_TEST

/* ---- prior-first (issue 27) ---- */

/* ddmin with prior sets (each a range [lo[i], hi[i])); the result into res (n bytes);
 * returns the checks, the driver's check of the original counted. */
static uint32_t run_prior(uint32_t n, const uint32_t *culprits, int k, int jobs, const uint32_t *lo, const uint32_t *hi, uint32_t n_sets,
			  uint8_t *res, struct wh_search_report *rep)
{
	struct oracle o = {.n = n, .k = k, .jobs = (uint32_t)jobs};
	memcpy(o.culprits, culprits, sizeof(uint32_t) * (size_t)k);
	uint8_t *sets[4];
	for (uint32_t i = 0; i < n_sets; i++) {
		sets[i] = calloc(n, 1);
		memset(sets[i] + lo[i], 1, hi[i] - lo[i]);
	}
	struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = jobs, .reduce_inputs = true, .reduce_outputs = true,
				       .confirm_full = jobs > 1, .prior_sets = (const uint8_t *const *)sets, .n_prior_sets = n_sets};
	struct wh_search_ops ops = {.ctx = &o, .eval = oracle_eval};
	ck_assert_int_eq(wh_search_run(n, &so, &ops, res, rep), WH_OK);
	for (uint32_t i = 0; i < n_sets; i++)
		free(sets[i]);
	uint32_t cnt = 0;
	for (uint32_t i = 0; i < n; i++)
		cnt += res[i];
	ck_assert_uint_eq(cnt, (uint32_t)k);
	for (int c = 0; c < k; c++)
		ck_assert(res[culprits[c]]);
	ck_assert(rep->one_minimal);
	return o.checks + 1;
}

/* A right prior costs its own check (2 in all at 330 layers, against ceil(log2 n) + 3 = 12);
 * a wider one that fails is searched inside; a wrong one costs its checks, no more; the
 * same answer and the same set searched at -j 1, 2 and 8. */
START_TEST(test_search_prior)
{
	uint8_t *res = malloc(330), *r1 = malloc(330);
	struct wh_search_report rep;
	uint32_t c = 200, c2[2] = {120, 200};
	/* right: {200} */
	uint32_t lo1[] = {200, 190}, hi1[] = {201, 230};
	ck_assert_uint_le(run_prior(330, &c, 1, 1, lo1, hi1, 2, res, &rep), 2);
	ck_assert_int_eq(rep.prior_hit, 0);
	ck_assert_uint_eq(rep.prior_checks, 1);
	/* the second set: [190, 230) fails; searched inside (40 layers: at most ceil(log2 40) + 3 + its 2) */
	uint32_t lo2[] = {150, 190}, hi2[] = {151, 230};
	uint32_t checks = run_prior(330, &c, 1, 1, lo2, hi2, 2, r1, &rep);
	ck_assert_int_eq(rep.prior_hit, 1);
	ck_assert_uint_le(checks, ceil_log2(40) + 3 + 2);
	ck_assert_uint_lt(checks, ceil_log2(330) + 3);
	for (int j = 2; j <= 8; j *= 4) {
		run_prior(330, &c, 1, j, lo2, hi2, 2, res, &rep);
		ck_assert_int_eq(rep.prior_hit, 1);
		ck_assert(!memcmp(res, r1, 330));
	}
	/* wrong: two sets that pass cost 2 checks over the unbiased search, same answer */
	uint32_t plain;
	uint8_t *u = run_planted(330, &c, 1, 1, &plain, NULL);
	uint32_t lo3[] = {10, 10}, hi3[] = {11, 40};
	ck_assert_uint_le(run_prior(330, &c, 1, 1, lo3, hi3, 2, res, &rep), plain + 2);
	ck_assert_int_eq(rep.prior_hit, -1);
	ck_assert(!memcmp(res, u, 330));
	free(u);
	/* half-right: one of two culprits, no more than 2 over, same answer */
	u = run_planted(330, c2, 2, 1, &plain, NULL);
	uint32_t lo4[] = {200, 195}, hi4[] = {201, 205};
	ck_assert_uint_le(run_prior(330, c2, 2, 1, lo4, hi4, 2, res, &rep), plain + 2);
	ck_assert(!memcmp(res, u, 330));
	free(u);
	/* a small set holding both culprits and two more is proven by its single removals */
	uint32_t c3[2] = {120, 121}, lo5[] = {119}, hi5[] = {123};
	ck_assert_uint_le(run_prior(330, c3, 2, 1, lo5, hi5, 1, res, &rep), 1 + 1 + 4 + 1);
	ck_assert_int_eq(rep.prior_hit, 0);
	free(res);
	free(r1);
}
END_TEST

/* A check that is not monotone: noted, and 1-minimality is then checked directly. The
 * candidate fails when it holds node 5 and not node 2, or holds nodes 2 and 9. */
static enum wh_status odd_eval(void *ctx, const uint8_t *const *masks, uint32_t n, enum wh_verdict *v)
{
	(void)ctx;
	for (uint32_t i = 0; i < n; i++) {
		bool f = (masks[i][5] && !masks[i][2]) || (masks[i][2] && masks[i][9]);
		v[i] = f ? WH_VERDICT_FAIL : WH_VERDICT_PASS;
	}
	return WH_OK;
}

START_TEST(test_search_not_monotone)
{
	for (int jobs = 1; jobs <= 8; jobs *= 2) {
		struct wh_search_options so = {.mode = WH_SEARCH_DDMIN, .jobs = jobs, .reduce_inputs = true, .reduce_outputs = true};
		struct wh_search_ops ops = {.eval = odd_eval};
		uint8_t res[16];
		struct wh_search_report rep;
		ck_assert_int_eq(wh_search_run(16, &so, &ops, res, &rep), WH_OK);
		/* whatever was found fails, and every single removal was checked */
		const uint8_t *mm = res;
		enum wh_verdict v;
		odd_eval(NULL, &mm, 1, &v);
		ck_assert_int_eq(v, WH_VERDICT_FAIL);
		for (int i = 0; i < 16; i++) {
			if (!res[i])
				continue;
			uint8_t t[16];
			memcpy(t, res, 16);
			t[i] = 0;
			const uint8_t *tp = t;
			bool empty = true;
			for (int j = 0; j < 16; j++)
				empty &= !t[j];
			if (empty)
				continue;
			odd_eval(NULL, &tp, 1, &v);
			ck_assert_msg(v == WH_VERDICT_PASS, "-j %d: removing %d still fails", jobs, i);
		}
		ck_assert(rep.one_minimal);
		if (!rep.monotone)
			ck_assert(strstr(rep.note, "not monotone"));
	}
}
END_TEST

START_TEST(test_search_bisect_mode_is_contiguous)
{
	struct oracle o = {.n = 100, .k = 2, .culprits = {20, 60}};
	struct wh_search_options so = {.mode = WH_SEARCH_BISECT, .jobs = 1, .reduce_inputs = true, .reduce_outputs = true};
	struct wh_search_ops ops = {.ctx = &o, .eval = oracle_eval};
	uint8_t res[100];
	struct wh_search_report rep;
	ck_assert_int_eq(wh_search_run(100, &so, &ops, res, &rep), WH_OK);
	ck_assert_uint_eq(rep.bisect_lo, 20);
	ck_assert_uint_eq(rep.bisect_hi, 61);
	ck_assert(!rep.one_minimal);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reducer");
	TCase *tr = tcase_create("runner");
	tcase_set_timeout(tr, 120);
	tcase_add_test(tr, test_runner_exit_codes);
	tcase_add_test(tr, test_runner_signal_is_failure);
	tcase_add_test(tr, test_runner_hang_kills_group);
	tcase_add_test(tr, test_runner_big_output_capped_and_matched);
	tcase_add_test(tr, test_runner_regex_on_the_whole_stream);
	tcase_add_test(tr, test_runner_not_executable_is_broken_check);
	tcase_add_test(tr, test_runner_placeholders);
	tcase_add_test(tr, test_layer_groups);
	suite_add_tcase(s, tr);
	TCase *ts = tcase_create("search");
	tcase_set_timeout(ts, 120);
	tcase_add_test(ts, test_search_one_culprit_everywhere);
	tcase_add_test(ts, test_search_k_culprits);
	tcase_add_test(ts, test_search_issue27_bound);
	tcase_add_test(ts, test_search_tree_sizes);
	tcase_add_test(ts, test_search_bisect_mode_is_contiguous);
	tcase_add_test(ts, test_search_adjacent_is_cheap);
	tcase_add_test(ts, test_search_not_monotone);
	tcase_add_test(ts, test_search_prior);
	suite_add_tcase(s, ts);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
