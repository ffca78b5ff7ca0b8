/* Check enforces a case's timeout (tcase_set_timeout, CK_DEFAULT_TIMEOUT) only when the case
 * runs in a process of its own (fork mode, Check's default); a suite that runs its cases in
 * the runner's process never stops a hanging case, and only ctest's limit ends it, minutes
 * later and without naming the case. This suite proves that the way every suite runs stops
 * a hanging case at its timeout with a message naming it, and that no suite turns fork mode
 * off.
 *
 * The hanging case runs in a second copy of this program (WH_CHECK_HANG=1 selects it), so
 * that its runner is configured exactly as a suite's main configures one. */
#include <check.h>
#include <errno.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "graph/os.h"

/* ---- the hanging suite (child mode) ---- */

START_TEST(test_sleeps_forever)
{
	for (;;)
		sleep(1);
}
END_TEST

static int run_hanging_suite(void)
{
	Suite *s = suite_create("hang");
	TCase *tc = tcase_create("hang");
	tcase_set_timeout(tc, 1);
	tcase_add_test(tc, test_sleeps_forever);
	suite_add_tcase(s, tc);
	/* configured as every suite's main configures its runner */
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

/* ---- the tests ---- */

/* Runs this program in child mode; collects its output (stdout and stderr) into out and its
 * wait status into *status. Gives up (kills it, returns false) after limit_s seconds. */
static bool run_child(double limit_s, char *out, size_t size, int *status, double *elapsed)
{
	int fds[2];
	ck_assert_int_eq(pipe(fds), 0);
	double t0 = wh_os_now_s();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* its own process group, so that giving up kills the runner and its case together */
		setpgid(0, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		setenv("WH_CHECK_HANG", "1", 1);
		execl("/proc/self/exe", "check-timeout", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0;
	bool in_time = true;
	for (;;) {
		double left = limit_s - (wh_os_now_s() - t0);
		if (left <= 0) {
			in_time = false;
			break;
		}
		struct pollfd p = {.fd = fds[0], .events = POLLIN};
		int r = poll(&p, 1, (int)(left * 1000) + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char buf[4096];
		ssize_t n = read(fds[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* EOF: the runner and its case are gone */
		size_t take = (size_t)n < size - 1 - len ? (size_t)n : size - 1 - len;
		memcpy(out + len, buf, take);
		len += take;
	}
	out[len] = '\0';
	close(fds[0]);
	if (!in_time)
		kill(-pid, SIGKILL);
	while (waitpid(pid, status, 0) < 0 && errno == EINTR)
		;
	*elapsed = wh_os_now_s() - t0;
	return in_time;
}

START_TEST(test_hanging_case_is_stopped_at_its_timeout)
{
	char out[16384];
	int status = 0;
	double elapsed = 0;
	bool in_time = run_child(30, out, sizeof out, &status, &elapsed);
	ck_assert_msg(in_time, "a case with a 1 s timeout still ran after 30 s: timeouts are not enforced (output: %s)", out);
	/* 1 s plus the runner's start and Check's kill; far below the 30 s limit */
	ck_assert_msg(elapsed < 10, "the hanging case was stopped only after %.1f s", elapsed);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1, "the runner should report one failed case (status %d; output: %s)",
		      status, out);
	ck_assert_msg(strstr(out, "test_sleeps_forever") && strstr(out, "timeout"),
		      "the failure should name the case and say it timed out: %s", out);
}
END_TEST

/* A suite that runs its cases in the runner's process disables every timeout of its own. */
START_TEST(test_no_suite_turns_fork_mode_off)
{
	const char *src = getenv("WHITTLE_SRC");
	ck_assert_msg(src && *src, "WHITTLE_SRC is not set (run the suite through ctest)");
	char pattern[4096];
	snprintf(pattern, sizeof pattern, "%s/tests/check-*.c", src);
	glob_t g;
	ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
	ck_assert_uint_gt(g.gl_pathc, 10);
	/* spelled in two pieces so that this file does not match itself */
	const char *const needles[] = {"CK_" "NOFORK", "CK_FORK" "=no", "CK_FORK" "\", \"no"};
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		ck_assert_msg(f != NULL, "%s: cannot read", g.gl_pathv[i]);
		char line[4096];
		int no = 0;
		while (fgets(line, sizeof line, f)) {
			no++;
			for (size_t k = 0; k < sizeof needles / sizeof *needles; k++)
				ck_assert_msg(!strstr(line, needles[k]), "%s:%d: turns Check's fork mode off, so its timeouts are not enforced",
					      g.gl_pathv[i], no);
		}
		fclose(f);
	}
	globfree(&g);
}
END_TEST

int main(void)
{
	if (getenv("WH_CHECK_HANG"))
		return run_hanging_suite();
	Suite *s = suite_create("timeout");
	TCase *tc = tcase_create("enforced");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hanging_case_is_stopped_at_its_timeout);
	tcase_add_test(tc, test_no_suite_turns_fork_mode_off);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
