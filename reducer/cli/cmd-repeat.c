#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reducer/check.h"
#include "reducer/cli/cli-internal.h"
#include "graph/os.h"

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
	"check:\n"
	"  --shell                  run the check command through /bin/sh -c\n"
	"  --fail-regex RE          the check fails when RE (PCRE2) matches its output (repeatable)\n"
	"  --fail-code N            with --fail-regex: also require one of these exit codes; alone:\n"
	"                           the check fails on these exit codes only (repeatable)\n"
	"  --ignore-fail-code N     a non-zero exit that does not mean failure (repeatable)\n"
	"  --timeout S              kill the check (and its children) after S seconds\n"
	"  --timeout-is V           skip (default), fail or pass\n"
	WH_CLI_LAUNCHER_HELP
	"exit status: 0 done (counts in the output), 2 usage, 4 the check is broken\n";

static void move_artifacts(const char *dir, const char *const *artifacts, int n, enum wh_verdict v, uint32_t run)
{
	const char *sub = v == WH_VERDICT_PASS ? "good" : v == WH_VERDICT_FAIL ? "bad" : "skipped";
	for (int i = 0; i < n; i++) {
		if (access(artifacts[i], F_OK) != 0)
			continue;
		const char *base = strrchr(artifacts[i], '/') ? strrchr(artifacts[i], '/') + 1 : artifacts[i];
		char dst[PATH_MAX + 300];
		if ((size_t)snprintf(dst, sizeof dst, "%s/%s/%04u_%s", dir, sub, run, base) >= sizeof dst)
			continue;
		if (rename(artifacts[i], dst) != 0) {
			/* another file system: copy, then remove */
			FILE *a = fopen(artifacts[i], "rb"), *b = a ? fopen(dst, "wb") : NULL;
			bool ok = a && b;
			char buf[65536];
			size_t k;
			while (ok && (k = fread(buf, 1, sizeof buf, a)) > 0)
				ok = fwrite(buf, 1, k, b) == k;
			if (a)
				fclose(a);
			if (b && fclose(b) != 0)
				ok = false;
			if (ok)
				remove(artifacts[i]);
			else
				wh_warn("%s: cannot move the artifact to %s", artifacts[i], dst);
		}
	}
}

int wh_cmd_repeat(int argc, char **argv)
{
	/* --check takes the rest of the line */
	int check_at = wh_cli_check_at(argc, argv);
	int nargs = check_at >= 0 ? check_at : argc;
	static const struct option longopts[] = {
		{"until", required_argument, NULL, 'u'},
		{"max-runs", required_argument, NULL, 'M'},
		{"artifacts-dir", required_argument, NULL, 'A'},
		{"artifacts", required_argument, NULL, 'a'},
		{"json", no_argument, NULL, 'J'},
		WH_CLI_CHECK_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	enum { COUNT, GOOD, BAD } until = COUNT;
	bool until_given = false, max_given = false, json = false;
	long long count = 0, max_runs = 1000;
	const char *dir = NULL;
	const char *artifacts[64];
	int n_artifacts = 0;
	struct wh_cli_check_opts cko;
	wh_cli_check_opts_init(&cko);
	int c;
	while ((c = getopt_long(nargs, argv, ":h", longopts, NULL)) != -1) {
		int cr = wh_cli_check_option(&cko, "repeat", c, optarg);
		if (cr < 0)
			return WH_EXIT_USAGE;
		if (cr > 0)
			continue;
		switch (c) {
		case 'u':
			until_given = true;
			if (!strcmp(optarg, "good"))
				until = GOOD;
			else if (!strcmp(optarg, "bad"))
				until = BAD;
			else if (wh_cli_parse_int(optarg, 1, 100000000, &count))
				until = COUNT;
			else
				return wh_cli_usage_error("repeat", "--until takes a number of runs, good or bad, not '%s'", optarg);
			break;
		case 'M':
			if (!wh_cli_parse_int(optarg, 1, 100000000, &max_runs))
				return wh_cli_usage_error("repeat", "--max-runs takes 1..100000000, not '%s'", optarg);
			max_given = true;
			break;
		case 'A': dir = optarg; break;
		case 'a':
			if (n_artifacts == 64)
				return wh_cli_usage_error("repeat", "too many --artifacts (64 at most)");
			artifacts[n_artifacts++] = optarg;
			break;
		case 'J': json = true; break;
		case 'h': fputs(repeat_help, stdout); return 0;
		default: return wh_cli_bad_option("repeat", c, argv);
		}
	}
	if (optind != nargs)
		return wh_cli_usage_error("repeat", "unexpected argument '%s' (repeat takes no model; put --check CMD ... last)", argv[optind]);
	if (!until_given)
		return wh_cli_usage_error("repeat", "no stopping rule (give --until N, --until good or --until bad)");
	if (until == COUNT && max_given)
		return wh_cli_usage_error("repeat", "--max-runs goes with --until good|bad (--until N already says how many)");
	if (check_at < 0 || check_at + 1 >= argc)
		return wh_cli_usage_error("repeat", "no check command (put --check CMD ... last)");
	if (n_artifacts && !dir)
		return wh_cli_usage_error("repeat", "--artifacts needs --artifacts-dir");
	if (dir && strlen(dir) > PATH_MAX - 64)
		return wh_cli_usage_error("repeat", "--artifacts-dir: path too long");
	uint64_t runs = until == COUNT ? (uint64_t)count : (uint64_t)max_runs;

	wh_cli_check_opts_finish(&cko, argv + check_at + 1, argc - check_at - 1);
	struct wh_check *check = NULL;
	char *display = NULL;
	enum wh_status st = wh_check_create(&cko.co, &check);
	int rc = 0;
	if (st != WH_OK)
		goto fail;
	display = wh_check_command_line(check, NULL);
	if (dir) {
		static const char *const subs[] = {"", "/good", "/bad", "/skipped"};
		for (size_t i = 0; i < 4 && st == WH_OK; i++) {
			char p[PATH_MAX];
			snprintf(p, sizeof p, "%s%s", dir, subs[i]);
			st = wh_os_make_dir(p);
		}
		if (st != WH_OK)
			goto fail;
	}
	bool tty = isatty(STDERR_FILENO) && !json;
	double t0 = wh_os_now_s();
	uint64_t n_pass = 0, n_fail_runs = 0, n_skip = 0, done = 0;
	bool stopped = false;
	if (!tty)
		fprintf(stderr, "repeat: check: %s\n", display ? display : "?");
	for (uint64_t k = 0; k < runs && !stopped; k++) {
		struct wh_check_result r = {0};
		if ((st = wh_check_run(check, NULL, &r)) != WH_OK)
			goto fail;
		if (k == 0 && !r.signal && (r.exit_code == 126 || r.exit_code == 127)) {
			st = wh_error(WH_ERR_CHECK, "check: exited %d on the first run (a command inside the check was not found or is not executable; output: %.200s)",
				      r.exit_code, r.output ? r.output : "");
			wh_check_result_release(&r);
			goto fail;
		}
		done++;
		n_pass += r.verdict == WH_VERDICT_PASS;
		n_fail_runs += r.verdict == WH_VERDICT_FAIL;
		n_skip += r.verdict == WH_VERDICT_SKIP;
		if (dir)
			move_artifacts(dir, artifacts, n_artifacts, r.verdict, (uint32_t)k);
		const char *word = r.verdict == WH_VERDICT_PASS ? "good" : r.verdict == WH_VERDICT_FAIL ? "bad" : "skipped";
		if (tty)
			fprintf(stderr, "\r\033[Krepeat: %llu runs (%llu good, %llu bad, %llu skipped) | %.1f s", (unsigned long long)done,
				(unsigned long long)n_pass, (unsigned long long)n_fail_runs, (unsigned long long)n_skip, wh_os_now_s() - t0);
		else
			fprintf(stderr, "run %llu: %s, %s, exit %d, %.2f s\n", (unsigned long long)k, word, r.why ? r.why : "", r.exit_code,
				r.seconds);
		if (json) {
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
			json_object_set_new(e, "elapsed_s", json_real(wh_os_now_s() - t0));
			char *s = json_dumps(e, JSON_COMPACT);
			if (s)
				puts(s);
			free(s);
			fflush(stdout);
			json_decref(e);
		}
		if ((until == GOOD && r.verdict == WH_VERDICT_PASS) || (until == BAD && r.verdict == WH_VERDICT_FAIL))
			stopped = true;
		wh_check_result_release(&r);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	uint64_t decided = n_pass + n_fail_runs;
	double rate = decided ? (double)n_fail_runs / (double)decided : 0;
	if (json) {
		json_t *e = json_object();
		json_object_set_new(e, "event", json_string("result"));
		json_object_set_new(e, "runs", json_integer((json_int_t)done));
		json_object_set_new(e, "good", json_integer((json_int_t)n_pass));
		json_object_set_new(e, "bad", json_integer((json_int_t)n_fail_runs));
		json_object_set_new(e, "skipped", json_integer((json_int_t)n_skip));
		json_object_set_new(e, "fail_rate", decided ? json_real(rate) : json_null());
		json_object_set_new(e, "stopped", json_boolean(until == COUNT || stopped));
		json_object_set_new(e, "elapsed_s", json_real(wh_os_now_s() - t0));
		char *s = json_dumps(e, JSON_COMPACT);
		if (s)
			puts(s);
		free(s);
		json_decref(e);
	} else {
		printf("repeat: %llu runs: %llu good, %llu bad, %llu skipped\n", (unsigned long long)done, (unsigned long long)n_pass,
		       (unsigned long long)n_fail_runs, (unsigned long long)n_skip);
		if (decided)
			printf("repeat: fails in %.1f %% of decided runs (%s)\n", 100 * rate,
			       !n_fail_runs ? "never failed" : !n_pass ? "always fails: not flaky" : "flaky");
		else
			printf("repeat: no run was decided (every run exited 125 or timed out)\n");
		if (until != COUNT && !stopped)
			printf("repeat: stopped at --max-runs %llu without a %s run\n", (unsigned long long)runs, until == GOOD ? "good" : "bad");
		if (dir && n_artifacts)
			printf("repeat: artifacts sorted into %s/good and %s/bad\n", dir, dir);
	}
	goto out;
fail:
	rc = wh_cli_fail(st);
out:
	free(display);
	wh_check_destroy(check);
	return rc;
}
