#define PCRE2_CODE_UNIT_WIDTH 8
#include "reducer/check.h"
#include "graph/os.h"

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct wh_check {
	struct wh_check_options o;
	pcre2_code **re;
};

const char *wh_verdict_name(enum wh_verdict v)
{
	switch (v) {
	case WH_VERDICT_PASS: return "pass";
	case WH_VERDICT_FAIL: return "fail";
	default: return "skip";
	}
}

enum wh_status wh_check_create(const struct wh_check_options *o, struct wh_check **out)
{
	if (!o->argv || o->argc < 1)
		return wh_error(WH_ERR_USAGE, "check: no command (give --check CMD ...)");
	struct wh_check *c = calloc(1, sizeof *c);
	if (!c)
		return wh_error(WH_ERR_NOMEM, "check: out of memory");
	c->o = *o;
	if (c->o.kill_grace_s <= 0)
		c->o.kill_grace_s = 2.0;
	if (!c->o.output_cap)
		c->o.output_cap = (size_t)1 << 20;
	if (o->n_fail_regex) {
		c->re = calloc((size_t)o->n_fail_regex, sizeof *c->re);
		if (!c->re) {
			free(c);
			return wh_error(WH_ERR_NOMEM, "check: out of memory");
		}
		for (int i = 0; i < o->n_fail_regex; i++) {
			int err;
			PCRE2_SIZE off;
			c->re[i] = pcre2_compile((PCRE2_SPTR)o->fail_regex[i], PCRE2_ZERO_TERMINATED, PCRE2_MULTILINE, &err, &off, NULL);
			if (!c->re[i]) {
				PCRE2_UCHAR msg[256];
				pcre2_get_error_message(err, msg, sizeof msg);
				wh_check_destroy(c);
				return wh_error(WH_ERR_USAGE, "--fail-regex '%s': %s at offset %zu (fix the pattern)", o->fail_regex[i], (char *)msg, (size_t)off);
			}
		}
	}
	*out = c;
	return WH_OK;
}

void wh_check_destroy(struct wh_check *c)
{
	if (!c)
		return;
	if (c->re)
		for (int i = 0; i < c->o.n_fail_regex; i++)
			pcre2_code_free(c->re[i]);
	free(c->re);
	free(c);
}

void wh_check_result_release(struct wh_check_result *r)
{
	if (!r)
		return;
	free(r->output);
	memset(r, 0, sizeof *r);
}

/* Replaces the placeholders of one word (malloc'd result). */
static char *substitute(const char *word, const struct wh_check_vars *v)
{
	static const char *const names[] = {"{model}", "{inputs}", "{golden}", "{tactics}", "{precisions}"};
	const char *vals[] = {v ? v->model : NULL, v ? v->inputs : NULL, v ? v->golden : NULL, v ? v->tactics : NULL,
			      v ? v->precisions : NULL};
	size_t cap = strlen(word) + 1;
	for (int i = 0; i < 5; i++)
		if (vals[i])
			for (const char *p = strstr(word, names[i]); p; p = strstr(p + 1, names[i]))
				cap += strlen(vals[i]);
	char *out = malloc(cap);
	if (!out)
		return NULL;
	size_t n = 0;
	for (const char *p = word; *p;) {
		bool done = false;
		for (int i = 0; i < 5 && !done; i++) {
			size_t len = strlen(names[i]);
			if (vals[i] && !strncmp(p, names[i], len)) {
				size_t vl = strlen(vals[i]);
				memcpy(out + n, vals[i], vl);
				n += vl;
				p += len;
				done = true;
			}
		}
		if (!done)
			out[n++] = *p++;
	}
	out[n] = '\0';
	return out;
}

static void free_argv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static char **build_argv(const struct wh_check *c, const struct wh_check_vars *vars)
{
	int n = c->o.shell ? 3 : c->o.argc;
	char **v = calloc((size_t)n + 1, sizeof *v);
	if (!v)
		return NULL;
	if (c->o.shell) {
		size_t len = 1;
		char **words = calloc((size_t)c->o.argc + 1, sizeof *words);
		if (!words) {
			free(v);
			return NULL;
		}
		for (int i = 0; i < c->o.argc; i++) {
			words[i] = substitute(c->o.argv[i], vars);
			len += (words[i] ? strlen(words[i]) : 0) + 1;
		}
		char *cmd = malloc(len);
		if (cmd) {
			cmd[0] = '\0';
			for (int i = 0; i < c->o.argc; i++) {
				if (i)
					strcat(cmd, " ");
				if (words[i])
					strcat(cmd, words[i]);
			}
		}
		free_argv(words);
		v[0] = strdup("/bin/sh");
		v[1] = strdup("-c");
		v[2] = cmd;
		if (!v[0] || !v[1] || !v[2]) {
			free_argv(v);
			return NULL;
		}
		return v;
	}
	for (int i = 0; i < c->o.argc; i++)
		if (!(v[i] = substitute(c->o.argv[i], vars))) {
			free_argv(v);
			return NULL;
		}
	return v;
}

static bool needs_quote(const char *s)
{
	if (!*s)
		return true;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || strchr("-_./=:,+%@", *s)))
			return true;
	return false;
}

char *wh_check_command_line(const struct wh_check *c, const struct wh_check_vars *vars)
{
	size_t cap = 1;
	char **words = calloc((size_t)c->o.argc + 1, sizeof *words);
	if (!words)
		return NULL;
	for (int i = 0; i < c->o.argc; i++) {
		words[i] = substitute(c->o.argv[i], vars);
		cap += (words[i] ? 4 * strlen(words[i]) : 0) + 3;
	}
	char *out = malloc(cap);
	size_t n = 0;
	for (int i = 0; out && i < c->o.argc; i++) {
		const char *w = words[i] ? words[i] : "";
		if (i)
			out[n++] = ' ';
		if (c->o.shell || !needs_quote(w)) {
			size_t l = strlen(w);
			memcpy(out + n, w, l);
			n += l;
			continue;
		}
		out[n++] = '\'';
		for (const char *p = w; *p; p++) {
			if (*p == '\'') {
				memcpy(out + n, "'\\''", 4);
				n += 4;
			} else {
				out[n++] = *p;
			}
		}
		out[n++] = '\'';
	}
	if (out)
		out[n] = '\0';
	free_argv(words);
	return out;
}

/* Output keeper: the first cap bytes and a ring of the last cap bytes. */
struct keeper {
	char *head, *ring;
	size_t cap, head_len, ring_pos, total;
};

static void keep(struct keeper *k, const char *buf, size_t n)
{
	k->total += n;
	size_t h = k->head_len < k->cap ? k->cap - k->head_len : 0;
	if (h > n)
		h = n;
	memcpy(k->head + k->head_len, buf, h);
	k->head_len += h;
	buf += h;
	n -= h;
	for (size_t i = 0; i < n; i++) {
		k->ring[k->ring_pos % k->cap] = buf[i];
		k->ring_pos++;
	}
}

static char *keeper_text(const struct keeper *k)
{
	size_t tail = k->ring_pos < k->cap ? k->ring_pos : k->cap;
	const char *sep = tail && k->ring_pos > k->cap ? "\n[... output cut ...]\n" : "";
	size_t sl = strlen(sep);
	char *out = malloc(k->head_len + sl + tail + 1);
	if (!out)
		return NULL;
	memcpy(out, k->head, k->head_len);
	memcpy(out + k->head_len, sep, sl);
	size_t start = k->ring_pos > k->cap ? k->ring_pos % k->cap : 0;
	for (size_t i = 0; i < tail; i++)
		out[k->head_len + sl + i] = k->ring[(start + i) % k->cap];
	out[k->head_len + sl + tail] = '\0';
	/* the text is matched by regexes: NUL bytes from binary output must not end it early */
	for (size_t i = 0; i < k->head_len + sl + tail; i++)
		if (!out[i])
			out[i] = ' ';
	return out;
}

static bool in_list(int x, const int *v, int n)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

enum wh_status wh_check_run(const struct wh_check *c, const struct wh_check_vars *vars,
			    struct wh_check_result *out)
{
	memset(out, 0, sizeof *out);
	enum wh_status st = WH_OK;
	struct keeper k = {.cap = c->o.output_cap};
	char **argv = build_argv(c, vars);
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
	k.head = malloc(k.cap);
	k.ring = malloc(k.cap);
	/* everything the child needs is allocated before fork */
	if (!argv || !k.head || !k.ring) {
		st = wh_error(WH_ERR_NOMEM, "check: out of memory");
		goto out;
	}
	if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
		st = wh_error(WH_ERR_CHECK, "check: cannot create a pipe: %s (raise the open-file limit)", strerror(errno));
		goto out;
	}
	double t0 = wh_os_now_s();
	pid_t pid = fork();
	if (pid < 0) {
		st = wh_error(WH_ERR_CHECK, "check: cannot fork: %s (too many processes?)", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		dup2(out_pipe[1], 1);
		dup2(out_pipe[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, 0);
		execvp(argv[0], argv);
		int e = errno;
		ssize_t w = write(err_pipe[1], &e, sizeof e);
		(void)w;
		_exit(127);
	}
	setpgid(pid, pid); /* also from the parent, so the group exists before any kill */
	close(out_pipe[1]);
	out_pipe[1] = -1;
	close(err_pipe[1]);
	err_pipe[1] = -1;
	int exec_errno = 0;
	if (read(err_pipe[0], &exec_errno, sizeof exec_errno) == (ssize_t)sizeof exec_errno) {
		waitpid(pid, NULL, 0);
		st = wh_error(WH_ERR_CHECK, "check command '%s': cannot run it: %s (check the path and that it is executable)",
			      argv[0], strerror(exec_errno));
		goto out;
	}
	double deadline = c->o.timeout_s > 0 ? t0 + c->o.timeout_s : 0;
	double kill_at = 0;
	bool term_sent = false, eof = false;
	int status = 0;
	bool reaped = false;
	char buf[65536];
	while (!eof || !reaped) {
		int wait_ms = 100;
		double now = wh_os_now_s();
		if (deadline && now >= deadline && !term_sent) {
			kill(-pid, SIGTERM);
			term_sent = true;
			out->timed_out = true;
			kill_at = now + c->o.kill_grace_s;
		}
		if (term_sent && kill_at && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		if (!eof) {
			struct pollfd p = {.fd = out_pipe[0], .events = POLLIN};
			int r = poll(&p, 1, wait_ms);
			if (r > 0) {
				ssize_t n = read(out_pipe[0], buf, sizeof buf);
				if (n > 0)
					keep(&k, buf, (size_t)n);
				else if (n == 0 || (errno != EINTR && errno != EAGAIN))
					eof = true;
			}
		} else {
			/* the output is closed; the child is about to exit */
			struct timespec ts = {0, 1000 * 1000};
			nanosleep(&ts, NULL);
		}
		if (!reaped) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid) {
				reaped = true;
				/* the check is over: whatever it left behind goes too */
				kill(-pid, SIGKILL);
			}
		}
		if (reaped && !eof) {
			/* grandchildren holding the pipe were just killed; drain what is left */
			struct pollfd p = {.fd = out_pipe[0], .events = POLLIN};
			while (poll(&p, 1, 200) > 0) {
				ssize_t n = read(out_pipe[0], buf, sizeof buf);
				if (n <= 0)
					break;
				keep(&k, buf, (size_t)n);
			}
			eof = true;
		}
	}
	out->seconds = wh_os_now_s() - t0;
	out->output_bytes = k.total;
	out->output = keeper_text(&k);
	if (WIFSIGNALED(status)) {
		out->signal = WTERMSIG(status);
		out->exit_code = -1;
	} else {
		out->exit_code = WEXITSTATUS(status);
	}
	/* verdict */
	if (out->timed_out) {
		out->verdict = c->o.timeout_is == WH_TIMEOUT_FAIL ? WH_VERDICT_FAIL :
			       c->o.timeout_is == WH_TIMEOUT_PASS ? WH_VERDICT_PASS : WH_VERDICT_SKIP;
		out->why = "timeout";
	} else if (out->exit_code == 125) {
		out->verdict = WH_VERDICT_SKIP;
		out->why = "exit 125 (cannot tell)";
	} else if (c->o.n_fail_regex) {
		bool matched = false;
		pcre2_match_data *md = NULL;
		for (int i = 0; i < c->o.n_fail_regex && !matched && out->output; i++) {
			md = pcre2_match_data_create_from_pattern(c->re[i], NULL);
			if (md && pcre2_match(c->re[i], (PCRE2_SPTR)out->output, strlen(out->output), 0, 0, md, NULL) >= 0)
				matched = true;
			pcre2_match_data_free(md);
		}
		bool code_ok = !c->o.n_fail_codes || in_list(out->exit_code, c->o.fail_codes, c->o.n_fail_codes);
		out->verdict = matched && code_ok ? WH_VERDICT_FAIL : WH_VERDICT_PASS;
		out->why = matched ? (code_ok ? "fail regex matched" : "fail regex matched, exit code not listed") : "no fail regex matched";
	} else if (out->signal) {
		out->verdict = WH_VERDICT_FAIL;
		out->why = "killed by a signal";
	} else if (c->o.n_fail_codes) {
		out->verdict = in_list(out->exit_code, c->o.fail_codes, c->o.n_fail_codes) ? WH_VERDICT_FAIL : WH_VERDICT_PASS;
		out->why = out->verdict == WH_VERDICT_FAIL ? "exit code listed in --fail-code" : "exit code not listed in --fail-code";
	} else if (out->exit_code != 0 && !in_list(out->exit_code, c->o.ignore_codes, c->o.n_ignore_codes)) {
		out->verdict = WH_VERDICT_FAIL;
		out->why = "non-zero exit";
	} else {
		out->verdict = WH_VERDICT_PASS;
		out->why = out->exit_code ? "exit code ignored" : "exit 0";
	}
out:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	free(k.head);
	free(k.ring);
	free_argv(argv);
	return st;
}
