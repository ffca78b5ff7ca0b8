#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reducer/check.h"
#include "reducer/driver-util.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "graph/os.h"
#include "graph/names.h"

static const char repeat_help[] =
	"usage: whittle repeat --until N|good|bad [options] --check CMD ARGS...\n\n"
	"Runs the check again and again (no model involved) and counts good and bad runs: how\n"
	"flaky is it? --check takes the rest of the command line.\n\n"
	"  --until N|good|bad       N runs, or until the first good (passing) or bad (failing) run\n"
	"  --max-runs N             cap for --until good|bad (default 1000)\n"
	"  --artifacts-dir DIR      where --artifacts files go (DIR/good, DIR/bad, DIR/skipped)\n"
	"  --artifacts FILE         a file the check writes, moved after each run into DIR/good or\n"
	"                           DIR/bad as <run>_<name> (repeatable)\n"
	"  --json                   machine-readable events on stdout (one JSON object a line)\n"
	"check (with -j N, N runs at a time, counted in run order: --until good|bad stops at the\n"
	"same run as with -j 1):\n"
	WH_CLI_CHECK_HELP
	"exit status: 0 done (counts in the output), 2 usage, 4 the check is broken\n";

enum until { COUNT, GOOD, BAD };

struct repeat_cmd {
	enum until until;
	bool until_given, max_given, json;
	long long count, max_runs;
	const char *dir;
	const char *artifacts[64];
	int n_artifacts;
	struct wh_cli_check_opts check;
};

static enum wh_status repeat_option(void *self, int c, const char *arg)
{
	struct repeat_cmd *x = self;
	switch (c) {
	case WH_OPT_UNTIL:
		x->until_given = true;
		if (!strcmp(arg, "good"))
			x->until = GOOD;
		else if (!strcmp(arg, "bad"))
			x->until = BAD;
		else if (wh_cli_parse_int(arg, 1, 100000000, &x->count))
			x->until = COUNT;
		else
			return wh_cli_usage_error("repeat", "--until '%s': not a stopping rule (give a number of runs, good or bad)", arg);
		break;
	case WH_OPT_MAX_RUNS:
		if (!wh_cli_parse_int(arg, 1, 100000000, &x->max_runs))
			return wh_cli_usage_error("repeat", "--max-runs '%s': not an integer from 1 to 100000000 (give a cap such as 1000)", arg);
		x->max_given = true;
		break;
	case WH_OPT_ARTIFACTS_DIR: x->dir = arg; break;
	case WH_OPT_ARTIFACTS: return wh_cli_artifact("repeat", x->artifacts, &x->n_artifacts, arg);
	case WH_OPT_JSON: x->json = true; break;
	}
	return WH_OK;
}

static enum wh_status repeat_validate(void *self, const struct wh_cli_args *a)
{
	const struct repeat_cmd *x = self;
	if (!x->until_given)
		return wh_cli_usage_error("repeat", "no stopping rule (give --until N, --until good or --until bad)");
	if (x->until == COUNT && x->max_given)
		return wh_cli_usage_error("repeat", "--max-runs goes with --until good|bad (--until N already says how many)");
	if (!a->check)
		return wh_cli_usage_error("repeat", "no check command (put --check CMD ... last)");
	if (x->n_artifacts && !x->dir)
		return wh_cli_usage_error("repeat", "--artifacts needs --artifacts-dir (give the folder to sort them into)");
	enum wh_status st = wh_cli_artifacts_jobs("repeat", x->n_artifacts, x->check.jobs);
	if (st != WH_OK)
		return st;
	if (x->dir && strlen(x->dir) > PATH_MAX - 64)
		return wh_cli_usage_error("repeat", "--artifacts-dir: path too long (give a shorter path)");
	return WH_OK;
}

/* The runs in flight: each runs the check on a thread of its own (wh_run_tasks). */
struct repeat_run {
	const struct wh_check *check;
	struct wh_check_result r;
	enum wh_status st;
	char err[512];
};

static void run_task(void *ctx, uint32_t i)
{
	struct repeat_run *u = &((struct repeat_run *)ctx)[i];
	memset(&u->r, 0, sizeof u->r);
	wh_error_clear();
	if ((u->st = wh_check_run(u->check, NULL, &u->r)) != WH_OK)
		snprintf(u->err, sizeof u->err, "%s", wh_error_message());
}

/* What the runs came to. */
struct repeat_counts {
	uint64_t n_pass, n_fail_runs, n_skip, done, runs;
	const struct wh_progress *pr;
	bool stopped;
};

static void print_result(const struct repeat_cmd *x, const struct repeat_counts *c)
{
	uint64_t decided = c->n_pass + c->n_fail_runs;
	double rate = decided ? (double)c->n_fail_runs / (double)decided : 0;
	if (x->json) {
		json_t *e = json_object();
		json_object_set_new(e, "event", json_string("result"));
		json_object_set_new(e, "runs", json_integer((json_int_t)c->done));
		json_object_set_new(e, "good", json_integer((json_int_t)c->n_pass));
		json_object_set_new(e, "bad", json_integer((json_int_t)c->n_fail_runs));
		json_object_set_new(e, "skipped", json_integer((json_int_t)c->n_skip));
		json_object_set_new(e, "fail_rate", decided ? json_real(rate) : json_null());
		json_object_set_new(e, "stopped", json_boolean(x->until == COUNT || c->stopped));
		wh_progress_event(c->pr, e);
	} else {
		printf("repeat: %llu runs: %llu good, %llu bad, %llu skipped\n", (unsigned long long)c->done, (unsigned long long)c->n_pass,
		       (unsigned long long)c->n_fail_runs, (unsigned long long)c->n_skip);
		if (decided)
			printf("repeat: fails in %.1f %% of decided runs (%s)\n", 100 * rate,
			       !c->n_fail_runs ? "never failed" : !c->n_pass ? "always fails: not flaky" : "flaky");
		else
			printf("repeat: no run was decided (every run exited 125 or timed out)\n");
		if (x->until != COUNT && !c->stopped)
			printf("repeat: stopped at --max-runs %llu without a %s run\n", (unsigned long long)c->runs, x->until == GOOD ? "good" : "bad");
		if (x->dir && x->n_artifacts)
			printf("repeat: artifacts sorted into %s/good and %s/bad\n", wh_name_term(x->dir), wh_name_term(x->dir));
	}
}

static enum wh_status repeat_check(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	const struct repeat_cmd *x = self;
	uint64_t runs = x->until == COUNT ? (uint64_t)x->count : (uint64_t)x->max_runs;
	enum wh_status st = wh_cmd_ctx_check(c, a, &x->check);
	if (st != WH_OK)
		return st;
	struct wh_check *check = c->check;
	const char *display = c->check_display;
	if (x->dir) {
		static const char *const subs[] = {"", "/good", "/bad", "/skipped"};
		for (size_t i = 0; i < 4 && st == WH_OK; i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof p, "%s%s", x->dir, subs[i]);
			st = wh_os_make_dir(p);
		}
		if (st != WH_OK)
			return st;
	}
	struct wh_progress pr;
	wh_progress_init(&pr, stderr, x->json);
	uint64_t n_pass = 0, n_fail_runs = 0, n_skip = 0, done = 0;
	bool stopped = false;
	if (!pr.tty)
		fprintf(stderr, "repeat: check: %s\n", display ? wh_name_term(display) : "?");
	/* rounds of -j runs, taken in run order; the runs of a round past the stop are dropped */
	int jobs = x->check.jobs;
	struct repeat_run round[64];
	uint32_t in_round = 0, next = 0;
	for (uint64_t k = 0; k < runs && !stopped; k++) {
		if (next == in_round) {
			in_round = runs - k < (uint64_t)jobs ? (uint32_t)(runs - k) : (uint32_t)jobs;
			for (uint32_t i = 0; i < in_round; i++)
				round[i].check = check;
			wh_run_tasks(jobs, in_round, run_task, round);
			next = 0;
		}
		struct repeat_run *u = &round[next++];
		struct wh_check_result r = u->r;
		memset(&u->r, 0, sizeof u->r);
		if ((st = u->st) != WH_OK) {
			wh_check_result_release(&r);
			wh_error(st, "%s", u->err);
			break;
		}
		if (k == 0 && !r.signal && (r.exit_code == 126 || r.exit_code == 127)) {
			st = wh_error(WH_ERR_CHECK, "check: exited %d on the first run (a command inside the check was not found or is not executable; output: %.200s)",
				      r.exit_code, r.output ? r.output : "");
			wh_check_result_release(&r);
			break;
		}
		done++;
		n_pass += r.verdict == WH_VERDICT_PASS;
		n_fail_runs += r.verdict == WH_VERDICT_FAIL;
		n_skip += r.verdict == WH_VERDICT_SKIP;
		if (x->dir)
			wh_artifacts_sort(x->artifacts, x->n_artifacts, x->dir, r.verdict, (uint32_t)k);
		const char *word = wh_verdict_dir(r.verdict);
		if (pr.tty)
			fprintf(stderr, "\r\033[Krepeat: %llu runs (%llu good, %llu bad, %llu skipped) | %.1f s", (unsigned long long)done,
				(unsigned long long)n_pass, (unsigned long long)n_fail_runs, (unsigned long long)n_skip, wh_os_now_s() - pr.t0);
		else
			fprintf(stderr, "run %llu: %s, %s, exit %d, %.2f s\n", (unsigned long long)k, word, r.why ? wh_name_term(r.why) : "", r.exit_code,
				r.seconds);
		if (x->json) {
			json_t *e = json_object();
			json_object_set_new(e, "event", json_string("run"));
			json_object_set_new(e, "n", json_integer((json_int_t)k));
			json_object_set_new(e, "verdict", json_string(wh_verdict_name(r.verdict)));
			json_object_set_new(e, "exit", json_integer(r.exit_code));
			if (r.signal)
				json_object_set_new(e, "signal", json_integer(r.signal));
			if (r.timed_out)
				json_object_set_new(e, "timeout", json_true());
			json_object_set_new(e, "seconds", json_real(r.seconds));
			wh_progress_event(&pr, e);
		}
		if ((x->until == GOOD && r.verdict == WH_VERDICT_PASS) || (x->until == BAD && r.verdict == WH_VERDICT_FAIL))
			stopped = true;
		wh_check_result_release(&r);
	}
	for (uint32_t i = next; i < in_round; i++)
		wh_check_result_release(&round[i].r);
	if (st != WH_OK)
		return st;
	wh_progress_clear(&pr);
	struct repeat_counts counts = {n_pass, n_fail_runs, n_skip, done, runs, &pr, stopped};
	print_result(x, &counts);
	return WH_OK;
}

int wh_cmd_repeat(int argc, char **argv)
{
	struct repeat_cmd x = {.until = COUNT, .max_runs = 1000};
	struct wh_cli_spec spec = {.cmd = "repeat", .help = repeat_help, .check = true, .check_opts = &x.check, .own = repeat_option,
				   .validate = repeat_validate, .go = repeat_check, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
