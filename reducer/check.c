#define PCRE2_CODE_UNIT_WIDTH 8
#include "reducer/check.h"
#include "graph/os.h"
#include "reducer/driver-util.h"
#include "reducer/launcher-slurm.h"
#include "reducer/launcher.h"

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
	struct wh_slurm *slurm; /* the slurm launcher's state, NULL for local checks */
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
	if (o->launcher != WH_LAUNCHER_SLURM &&
	    ((o->slurm_args && *o->slurm_args) || o->shared_dir || o->queue_timeout_s > 0 || o->retries > 0))
		return wh_error(WH_ERR_USAGE, "check: --slurm-args, --shared-dir, --retries and --queue-timeout need --launcher slurm");
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
	if (o->launcher == WH_LAUNCHER_SLURM) {
		enum wh_status st = wh_slurm_create(&c->o, &c->slurm);
		if (st != WH_OK) {
			wh_check_destroy(c);
			return st;
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
	wh_slurm_destroy(c->slurm);
	free(c);
}

void wh_check_result_release(struct wh_check_result *r)
{
	if (!r)
		return;
	free(r->output);
	memset(r, 0, sizeof *r);
}

/* Replaces the placeholders of one word (malloc'd result); in a --shell command the values
 * go in quoted for the shell, so a path with a space or a ';' stays one word. */
static char *substitute(const char *word, const struct wh_check_vars *v, bool shell)
{
	static const char *const names[] = {"{model}", "{inputs}", "{golden}", "{tactics}", "{precisions}"};
	const char *vals[] = {v ? v->model : NULL, v ? v->inputs : NULL, v ? v->golden : NULL, v ? v->tactics : NULL,
			      v ? v->precisions : NULL};
	return shell ? wh_text_subst_shell(word, names, vals, 5) : wh_text_subst(word, names, vals, 5);
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
			words[i] = substitute(c->o.argv[i], vars, true);
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
		if (!(v[i] = substitute(c->o.argv[i], vars, false))) {
			free_argv(v);
			return NULL;
		}
	return v;
}

void wh_sh_quote(const char *s, char *out, size_t size)
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
		words[i] = substitute(c->o.argv[i], vars, c->o.shell);
		cap += (words[i] ? 4 * strlen(words[i]) : 0) + 4;
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
		wh_sh_quote(w, out + n, cap - n);
		n += strlen(out + n);
	}
	if (out)
		out[n] = '\0';
	free_argv(words);
	return out;
}

static bool in_list(int x, const int *v, int n)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return true;
	return false;
}

/* The verdict from the outcome in out (exit code, signal, timeout, output). */
static void decide(const struct wh_check *c, struct wh_check_result *out)
{
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
}

enum wh_status wh_check_run(const struct wh_check *c, const struct wh_check_vars *vars,
			    struct wh_check_result *out)
{
	memset(out, 0, sizeof *out);
	struct wh_keeper k;
	enum wh_status st = wh_keeper_init(&k, c->o.output_cap);
	if (st != WH_OK)
		return st;
	if (c->slurm) {
		struct wh_slurm_outcome so;
		if ((st = wh_slurm_run(c->slurm, c, vars, &k, &so)) != WH_OK)
			goto out;
		out->seconds = so.seconds;
		out->attempts = so.attempts;
		out->timed_out = so.timed_out;
		out->exit_code = so.exit_code;
		out->signal = so.signal;
		if (so.fault) {
			/* never pass or fail: the cluster, not the candidate, decided */
			wh_warn("slurm: %s after %d attempt%s: the check counts as cannot tell", so.why, so.attempts,
				so.attempts == 1 ? "" : "s");
			out->cluster_fault = true;
			out->exit_code = 125;
		}
	} else {
		char **argv = build_argv(c, vars);
		if (!argv) {
			st = wh_error(WH_ERR_NOMEM, "check: out of memory");
			goto out;
		}
		struct wh_proc_options po = {.timeout_s = c->o.timeout_s, .kill_grace_s = c->o.kill_grace_s};
		struct wh_proc_result pr;
		st = wh_proc_run(argv, &po, &k, &pr);
		free_argv(argv);
		if (st != WH_OK)
			goto out;
		out->seconds = pr.seconds;
		out->attempts = 1;
		out->timed_out = pr.timed_out;
		out->exit_code = pr.exit_code;
		out->signal = pr.signal;
	}
	out->output_bytes = k.total;
	out->output = wh_keeper_text(&k);
	if (out->cluster_fault) {
		out->verdict = WH_VERDICT_SKIP;
		out->why = "Slurm fault after retries (cannot tell)";
	} else {
		decide(c, out);
	}
out:
	wh_keeper_release(&k);
	return st;
}

char **wh_check_build_argv(const struct wh_check *c, const struct wh_check_vars *vars)
{
	return build_argv(c, vars);
}

void wh_check_free_argv(char **v)
{
	free_argv(v);
}
