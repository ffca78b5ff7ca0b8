#define PCRE2_CODE_UNIT_WIDTH 8
#include "reducer/check.h"
#include "graph/names.h"
#include "graph/os.h"
#include "graph/tensor-file.h"
#include "reducer/driver-util.h"
#include "reducer/launcher-slurm.h"
#include "reducer/launcher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

bool wh_check_uses(const struct wh_check *c, const char *placeholder)
{
	for (int i = 0; c && i < c->o.argc; i++)
		if (c->o.argv[i] && strstr(c->o.argv[i], placeholder))
			return true;
	return false;
}

/* ---- trtexec's data: raw tensor files and their specifications ---- */

/* trtexec splits a specification on ',' first, then takes what a pair of '\'' quotes holds
 * as the name and what follows the ':' after it as the file (splitNameAndValue in
 * samples/common/sampleOptions.cpp): a name or a path with a ',' or a '\'' cannot be said. */
static bool trt_sayable(const char *s)
{
	return !strchr(s, ',') && !strchr(s, '\'');
}

enum wh_status wh_check_write_trt_dir(const char *tensor_dir, const char *raw_dir)
{
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	enum wh_status st = wh_tensor_set_read_dir(tensor_dir, NULL, &s);
	if (st == WH_OK)
		st = wh_os_make_dir(raw_dir);
	for (size_t i = 0; i < s.n && st == WH_OK; i++) {
		const char *name = s.items[i].name;
		if (!name || !*name) {
			st = wh_error(WH_ERR_INVALID, "%s: tensor file %d has no stored name (input_<k>/output_<k>.pb): trtexec's specification names tensors (write the folder with named files, e.g. with whittle run --save-inputs)",
				      tensor_dir, s.items[i].index);
			break;
		}
		if (!trt_sayable(name)) {
			st = wh_error(WH_ERR_INVALID, "tensor %s: trtexec's --loadInputs/--loadRefOutputs cannot name it (its specification splits on ',' and quotes names with \"'\"; rename the tensor)",
				      wh_name_term(name));
			break;
		}
		char stem[WH_TENSOR_STEM_MAX + 1], path[PATH_MAX + 1100];
		wh_tensor_name_to_file(name, stem);
		/* the specification gives each raw file's tensor by undoing its file name: a name
		 * cut and hashed to fit a file name cannot be undone */
		if (wh_tensor_file_is_hashed(stem, strlen(stem))) {
			st = wh_error(WH_ERR_INVALID, "tensor %s: name too long for the file name of its raw copy (rename the tensor)", wh_name_term(name));
			break;
		}
		if ((size_t)snprintf(path, sizeof path, "%s/%s.raw", raw_dir, stem) >= sizeof path) {
			st = wh_error(WH_ERR_IO, "%s: path too long for the raw file of tensor %s (set TMPDIR to a shorter folder)", raw_dir,
				      wh_name_term(name));
			break;
		}
		st = wh_tensor_write_raw(path, &s.items[i].t);
	}
	wh_tensor_set_release(&s);
	return st;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The tensor name of a file stem that wh_tensor_name_to_file wrote (malloc'd). */
static char *stem_to_name(const char *file, size_t len)
{
	char *out = malloc(len + 1);
	size_t o = 0;
	for (size_t i = 0; out && i < len; i++) {
		int hi = i + 2 < len ? hexval(file[i + 1]) : -1, lo = i + 2 < len ? hexval(file[i + 2]) : -1;
		if (file[i] == '%' && hi >= 0 && lo >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[o++] = file[i];
		}
	}
	if (out)
		out[o] = '\0';
	return out;
}

enum wh_status wh_check_trt_spec(const char *raw_dir, const char *base, char **out)
{
	*out = NULL;
	if (!trt_sayable(raw_dir))
		return wh_error(WH_ERR_INVALID, "%s: trtexec's --loadInputs/--loadRefOutputs cannot hold a path with ',' or \"'\" (set TMPDIR, or --shared-dir, to a folder without them)",
				raw_dir);
	char where[PATH_MAX * 2];
	if (raw_dir[0] != '/' && base)
		snprintf(where, sizeof where, "%s/%s", base, raw_dir);
	else
		snprintf(where, sizeof where, "%s", raw_dir);
	DIR *d = opendir(where);
	if (!d)
		return wh_error(WH_ERR_IO, "%s: cannot list the raw tensor files: %s (internal error)", where, strerror(errno));
	char **files = NULL;
	size_t n = 0, cap = 0;
	enum wh_status st = WH_OK;
	struct dirent *de;
	while (st == WH_OK && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l <= 4 || strcmp(de->d_name + l - 4, ".raw"))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			char **f = realloc(files, cap * sizeof *f);
			if (!f) {
				st = wh_error(WH_ERR_NOMEM, "check: out of memory");
				break;
			}
			files = f;
		}
		if (!(files[n] = strdup(de->d_name)))
			st = wh_error(WH_ERR_NOMEM, "check: out of memory");
		else
			n++;
	}
	closedir(d);
	if (n)
		qsort(files, n, sizeof *files, cmp_str);
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += 2 * strlen(files[i]) + strlen(raw_dir) + 8;
	char *spec = st == WH_OK ? malloc(len) : NULL;
	if (st == WH_OK && !spec)
		st = wh_error(WH_ERR_NOMEM, "check: out of memory");
	size_t o = 0;
	for (size_t i = 0; spec && i < n && st == WH_OK; i++) {
		char *name = stem_to_name(files[i], strlen(files[i]) - 4);
		if (!name) {
			st = wh_error(WH_ERR_NOMEM, "check: out of memory");
			break;
		}
		o += (size_t)snprintf(spec + o, len - o, "%s'%s':%s/%s", i ? "," : "", name, raw_dir, files[i]);
		free(name);
	}
	if (spec)
		spec[o] = '\0';
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	if (st != WH_OK) {
		free(spec);
		return st;
	}
	*out = spec;
	return WH_OK;
}

enum wh_status wh_check_bundle_trt(const struct wh_check *c, const char *dir, struct wh_check_vars *v)
{
	const char *src[2] = {v->inputs, v->golden}, *ph[2] = {"{trt-inputs}", "{trt-golden}"}, *dst[2] = {"trt-inputs", "trt-golden"};
	enum wh_status st = WH_OK;
	for (int i = 0; i < 2 && st == WH_OK; i++) {
		if (!src[i] || !wh_check_uses(c, ph[i]))
			continue;
		char from[PATH_MAX * 2], to[PATH_MAX * 2];
		snprintf(from, sizeof from, "%s/%s", dir, src[i]);
		snprintf(to, sizeof to, "%s/%s", dir, dst[i]);
		if ((st = wh_check_write_trt_dir(from, to)) != WH_OK)
			break;
		if (i == 0)
			v->trt_inputs = dst[i];
		else
			v->trt_golden = dst[i];
		v->base = dir;
	}
	return st;
}

/* The values of the placeholders, in the order of names[] below; specs[] the trtexec
 * specifications (NULL: left as is). */
#define N_PLACEHOLDERS 7
static const char *const ph_names[N_PLACEHOLDERS] = {"{model}", "{inputs}", "{golden}", "{tactics}", "{precisions}",
						      "{trt-inputs}", "{trt-golden}"};

/* Replaces the placeholders of one word (malloc'd result); in a --shell command the values
 * go in quoted for the shell, so a path with a space or a ';' stays one word. */
static char *substitute(const char *word, const struct wh_check_vars *v, char *const *specs, bool shell)
{
	const char *vals[N_PLACEHOLDERS] = {v ? v->model : NULL, v ? v->inputs : NULL, v ? v->golden : NULL,
					    v ? v->tactics : NULL, v ? v->precisions : NULL, specs[0], specs[1]};
	return shell ? wh_text_subst_shell(word, ph_names, vals, N_PLACEHOLDERS) : wh_text_subst(word, ph_names, vals, N_PLACEHOLDERS);
}

/* The specifications of the raw folders the command uses (specs[i] NULL when not). */
static enum wh_status trt_specs(const struct wh_check *c, const struct wh_check_vars *v, char *specs[2])
{
	specs[0] = specs[1] = NULL;
	const char *dirs[2] = {v ? v->trt_inputs : NULL, v ? v->trt_golden : NULL};
	enum wh_status st = WH_OK;
	for (int i = 0; i < 2 && st == WH_OK; i++)
		if (dirs[i] && wh_check_uses(c, ph_names[5 + i]))
			st = wh_check_trt_spec(dirs[i], v->base, &specs[i]);
	return st;
}

static void free_argv(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static char **build_argv_with(const struct wh_check *c, const struct wh_check_vars *vars, char *const *specs)
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
			words[i] = substitute(c->o.argv[i], vars, specs, true);
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
		if (!(v[i] = substitute(c->o.argv[i], vars, specs, false))) {
			free_argv(v);
			return NULL;
		}
	return v;
}

static enum wh_status build_argv(const struct wh_check *c, const struct wh_check_vars *vars, char ***out)
{
	char *specs[2];
	enum wh_status st = trt_specs(c, vars, specs);
	*out = NULL;
	if (st == WH_OK && !(*out = build_argv_with(c, vars, specs)))
		st = wh_error(WH_ERR_NOMEM, "check: out of memory");
	free(specs[0]);
	free(specs[1]);
	return st;
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
	/* a folder that cannot be listed leaves its placeholder as it is */
	char *specs[2];
	if (trt_specs(c, vars, specs) != WH_OK)
		wh_error_clear();
	for (int i = 0; i < c->o.argc; i++) {
		words[i] = substitute(c->o.argv[i], vars, specs, c->o.shell);
		cap += (words[i] ? 4 * strlen(words[i]) : 0) + 4;
	}
	free(specs[0]);
	free(specs[1]);
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

/* The fail regexes run on the whole output as it streams in, not on the capped copy kept
 * for the log (a failure line in the middle of a long build log must count). Each chunk is
 * matched after what is carried over from the previous ones; PCRE2's hard partial matching
 * says where a match may continue into the next chunk, and the carry starts there (less a
 * little context for lookbehinds and for ^ after a newline). A match longer than
 * STREAM_CARRY_MAX is the limit of what can be found. */
#define STREAM_CONTEXT 256
#define STREAM_CARRY_MAX ((size_t)1 << 20)

struct stream_match {
	const struct wh_check *c;
	pcre2_match_data *md;
	char *buf;
	size_t len, cap;
	bool dropped; /* bytes before buf were consumed: ^ cannot match at its start */
	bool matched;
	bool nomem;
};

static void stream_scan(struct stream_match *sm, bool final)
{
	size_t keep_from = sm->len > STREAM_CONTEXT ? sm->len - STREAM_CONTEXT : 0;
	uint32_t opts = (sm->dropped ? PCRE2_NOTBOL : 0) | (final ? 0 : PCRE2_PARTIAL_HARD);
	for (int i = 0; i < sm->c->o.n_fail_regex && !sm->matched; i++) {
		int rc = pcre2_match(sm->c->re[i], (PCRE2_SPTR)sm->buf, sm->len, 0, opts, sm->md, NULL);
		if (rc >= 0) {
			sm->matched = true;
		} else if (rc == PCRE2_ERROR_PARTIAL) {
			size_t start = pcre2_get_ovector_pointer(sm->md)[0];
			start = start > STREAM_CONTEXT ? start - STREAM_CONTEXT : 0;
			if (start < keep_from)
				keep_from = start;
		}
	}
	if (sm->matched || final)
		return;
	if (sm->len - keep_from > STREAM_CARRY_MAX)
		keep_from = sm->len - STREAM_CARRY_MAX;
	if (keep_from) {
		memmove(sm->buf, sm->buf + keep_from, sm->len - keep_from);
		sm->len -= keep_from;
		sm->dropped = true;
	}
}

static void stream_feed(void *ctx, const char *buf, size_t n)
{
	struct stream_match *sm = ctx;
	if (sm->matched || sm->nomem || !n)
		return;
	if (sm->len + n > sm->cap) {
		size_t cap = sm->cap ? sm->cap : 65536;
		while (cap < sm->len + n)
			cap *= 2;
		char *b = realloc(sm->buf, cap);
		if (!b) {
			sm->nomem = true;
			return;
		}
		sm->buf = b;
		sm->cap = cap;
	}
	memcpy(sm->buf + sm->len, buf, n);
	sm->len += n;
	stream_scan(sm, false);
}

/* The verdict from the outcome in out (exit code, signal, timeout, output). */
static void decide(const struct wh_check *c, const struct stream_match *sm, struct wh_check_result *out)
{
	if (out->timed_out) {
		out->verdict = c->o.timeout_is == WH_TIMEOUT_FAIL ? WH_VERDICT_FAIL :
			       c->o.timeout_is == WH_TIMEOUT_PASS ? WH_VERDICT_PASS : WH_VERDICT_SKIP;
		out->why = "timeout";
	} else if (out->exit_code == 125) {
		out->verdict = WH_VERDICT_SKIP;
		out->why = "exit 125 (cannot tell)";
	} else if (c->o.n_fail_regex) {
		bool matched = sm->matched;
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
	struct stream_match sm = {.c = c};
	/* {trt-inputs}, {trt-golden}: raw files of this run's tensors, in a folder of its own */
	struct wh_check_vars v2 = {0};
	if (vars)
		v2 = *vars;
	vars = &v2;
	char trt_tmp[PATH_MAX] = "", trt_in[PATH_MAX + 16], trt_gold[PATH_MAX + 16];
	bool need_in = v2.inputs && !v2.trt_inputs && wh_check_uses(c, "{trt-inputs}");
	bool need_gold = v2.golden && !v2.trt_golden && wh_check_uses(c, "{trt-golden}");
	if (need_in || need_gold) {
		const char *t = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		if ((size_t)snprintf(trt_tmp, sizeof trt_tmp, "%s/whittle-trt-XXXXXX", t) >= sizeof trt_tmp - 16) {
			trt_tmp[0] = '\0';
			st = wh_error(WH_ERR_IO, "%s: path too long for the raw tensor files (set TMPDIR)", t);
			goto out;
		}
		if ((st = wh_os_make_temp_dir(trt_tmp)) != WH_OK) {
			trt_tmp[0] = '\0';
			goto out;
		}
		wh_interrupt_track_dir(trt_tmp);
		snprintf(trt_in, sizeof trt_in, "%s/inputs", trt_tmp);
		snprintf(trt_gold, sizeof trt_gold, "%s/golden", trt_tmp);
		if (need_in && (st = wh_check_write_trt_dir(v2.inputs, trt_in)) != WH_OK)
			goto out;
		if (need_gold && (st = wh_check_write_trt_dir(v2.golden, trt_gold)) != WH_OK)
			goto out;
		if (need_in)
			v2.trt_inputs = trt_in;
		if (need_gold)
			v2.trt_golden = trt_gold;
	}
	if (c->o.n_fail_regex) {
		/* one match block sized for the pattern with the most groups */
		uint32_t pairs = 1;
		for (int i = 0; i < c->o.n_fail_regex; i++) {
			uint32_t cc = 0;
			pcre2_pattern_info(c->re[i], PCRE2_INFO_CAPTURECOUNT, &cc);
			pairs = cc + 1 > pairs ? cc + 1 : pairs;
		}
		if (!(sm.md = pcre2_match_data_create(pairs, NULL))) {
			wh_keeper_release(&k);
			return wh_error(WH_ERR_NOMEM, "check: out of memory");
		}
		k.tap = stream_feed;
		k.tap_ctx = &sm;
	}
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
			out->queue_timed_out = so.queue_timeout;
			out->exit_code = 125;
		}
	} else {
		char **argv;
		if ((st = build_argv(c, vars, &argv)) != WH_OK)
			goto out;
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
	if (sm.md && !sm.matched && !sm.nomem)
		stream_scan(&sm, true);
	if (sm.nomem) {
		free(out->output);
		out->output = NULL;
		st = wh_error(WH_ERR_NOMEM, "check: out of memory matching --fail-regex on the output");
		goto out;
	}
	if (out->cluster_fault) {
		out->verdict = WH_VERDICT_SKIP;
		out->why = "Slurm fault after retries (cannot tell)";
	} else {
		decide(c, &sm, out);
	}
out:
	if (trt_tmp[0]) {
		wh_interrupt_untrack_dir(trt_tmp);
		wh_os_remove_tree(trt_tmp);
	}
	pcre2_match_data_free(sm.md);
	free(sm.buf);
	wh_keeper_release(&k);
	return st;
}

enum wh_status wh_check_build_argv(const struct wh_check *c, const struct wh_check_vars *vars, char ***out)
{
	return build_argv(c, vars, out);
}

void wh_check_free_argv(char **v)
{
	free_argv(v);
}
