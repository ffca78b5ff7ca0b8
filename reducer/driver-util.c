#include "reducer/driver-util.h"
#include "graph/names.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "executor/control-flow.h"
#include "graph/os.h"

void wh_progress_init(struct wh_progress *p, FILE *log, bool json)
{
	p->log = log;
	p->json = json;
	p->tty = log && isatty(fileno(log)) && !json;
	p->t0 = wh_os_now_s();
}

void wh_progress_log(const struct wh_progress *p, const char *fmt, ...)
{
	if (!p->log)
		return;
	va_list ap;
	va_start(ap, fmt);
	char small[1024], *line = small;
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof small && (line = malloc((size_t)n + 1))) {
		va_start(ap, fmt);
		vsnprintf(line, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (p->tty)
		fputs("\r\033[K", p->log);
	/* names inside should be escaped where they were formatted; a missed one (or a path, a
	 * check's output) still never reaches the terminal raw (escaping is idempotent) */
	wh_name_write(p->log, WH_NAME_TERM, line ? line : small);
	fputc('\n', p->log);
	fflush(p->log);
	if (line != small)
		free(line);
}

void wh_progress_event(const struct wh_progress *p, json_t *e)
{
	if (p->json) {
		json_object_set_new(e, "elapsed_s", json_real(wh_os_now_s() - p->t0));
		char *s = json_dumps(e, JSON_COMPACT);
		if (s) {
			puts(s);
			fflush(stdout);
		}
		free(s);
	}
	json_decref(e);
}

void wh_progress_clear(const struct wh_progress *p)
{
	if (p->tty && p->log) {
		fputs("\r\033[K", p->log);
		fflush(p->log);
	}
}

void wh_text_printf(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, size, fmt, ap);
	va_end(ap);
}

void wh_text_cat(char *out, size_t size, const char *fmt, ...)
{
	size_t len = strnlen(out, size);
	if (len + 1 >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + len, size - len, fmt, ap);
	va_end(ap);
}

void wh_text_one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
}

char *wh_text_sh_quote(const char *s)
{
	size_t n = 4 * strlen(s) + 8; /* every character a quote ('\'') fits */
	char *out = malloc(n);
	if (out)
		wh_sh_quote(s, out, n);
	return out;
}

char *wh_text_subst_shell(const char *tmpl, const char *const *keys, const char *const *vals, int n)
{
	if (n > 16)
		return NULL;
	char kb[48][72];
	const char *k3[48] = {0}, *v3[48] = {0};
	char *quoted[16] = {0};
	char *out = NULL;
	for (int i = 0; i < n; i++) {
		if (vals[i] && !(quoted[i] = wh_text_sh_quote(vals[i])))
			goto out;
		/* the quoted forms first: at a quote, they match before the bare key does */
		wh_text_printf(kb[3 * i], sizeof kb[0], "'%s'", keys[i]);
		wh_text_printf(kb[3 * i + 1], sizeof kb[0], "\"%s\"", keys[i]);
		wh_text_printf(kb[3 * i + 2], sizeof kb[0], "%s", keys[i]);
		for (int k = 0; k < 3; k++) {
			k3[3 * i + k] = kb[3 * i + k];
			v3[3 * i + k] = quoted[i];
		}
	}
	out = wh_text_subst(tmpl, k3, v3, 3 * n);
out:
	for (int i = 0; i < n; i++)
		free(quoted[i]);
	return out;
}

char *wh_text_whittle_line(void)
{
	char self[PATH_MAX];
	char *q = wh_os_self_exe(self, sizeof self) ? wh_text_sh_quote(self) : NULL;
	size_t n = (q ? strlen(q) : 8) + 24;
	char *out = malloc(n);
	/* an assignment: the quotes inside ${...:-'...'} are removed there, not inside "..." */
	if (out)
		snprintf(out, n, "WHITTLE=${WHITTLE:-%s}", q ? q : "whittle");
	free(q);
	return out;
}

char *wh_text_subst(const char *tmpl, const char *const *keys, const char *const *vals, int n)
{
	size_t cap = strlen(tmpl) + 1;
	for (int k = 0; k < n; k++)
		for (const char *p = vals[k] ? strstr(tmpl, keys[k]) : NULL; p; p = strstr(p + 1, keys[k]))
			cap += strlen(vals[k]);
	char *s = malloc(cap);
	if (!s)
		return NULL;
	size_t len = 0;
	for (const char *p = tmpl; *p;) {
		int hit = -1;
		for (int k = 0; k < n && hit < 0; k++)
			if (vals[k] && !strncmp(p, keys[k], strlen(keys[k])))
				hit = k;
		if (hit >= 0) {
			memcpy(s + len, vals[hit], strlen(vals[hit]));
			len += strlen(vals[hit]);
			p += strlen(keys[hit]);
		} else {
			s[len++] = *p++;
		}
	}
	s[len] = '\0';
	return s;
}

enum wh_status wh_check_result_broken(const struct wh_check_result *r, const char *where)
{
	if (r->signal || (r->exit_code != 126 && r->exit_code != 127))
		return WH_OK;
	char said[201];
	wh_text_printf(said, sizeof said, "%s", r->output ? r->output : "");
	wh_text_one_line(said);
	return wh_error(WH_ERR_CHECK, "check: exited %d%s (a command inside the check was not found or is not executable; it printed: %s)",
			r->exit_code, where, said);
}

void wh_verdict_cache_init(struct wh_verdict_cache *c)
{
	c->e = NULL;
	c->n = c->cap = 0;
}

void wh_verdict_cache_release(struct wh_verdict_cache *c)
{
	free(c->e);
	wh_verdict_cache_init(c);
}

struct wh_verdict_entry *wh_verdict_cache_find(const struct wh_verdict_cache *c, struct wh_hash h)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->e[i].h.lo == h.lo && c->e[i].h.hi == h.hi)
			return &c->e[i];
	return NULL;
}

enum wh_status wh_verdict_cache_put(struct wh_verdict_cache *c, struct wh_hash h, enum wh_verdict v)
{
	struct wh_verdict_entry *e = wh_verdict_cache_find(c, h);
	if (e) {
		e->v = v;
		return WH_OK;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct wh_verdict_entry *ne = realloc(c->e, cap * sizeof *ne);
		if (!ne)
			return wh_error(WH_ERR_NOMEM, "verdict cache: out of memory");
		c->e = ne;
		c->cap = cap;
	}
	c->e[c->n++] = (struct wh_verdict_entry){.h = h, .v = v};
	return WH_OK;
}

const char *wh_verdict_dir(enum wh_verdict v)
{
	return v == WH_VERDICT_PASS ? "good" : v == WH_VERDICT_FAIL ? "bad" : "skipped";
}

/* ---- replays ---- */

/* false for a name wh_verdict_name never writes */
static bool verdict_from_name(const char *s, enum wh_verdict *out)
{
	for (enum wh_verdict v = WH_VERDICT_PASS; v <= WH_VERDICT_SKIP; v++)
		if (!strcmp(s, wh_verdict_name(v))) {
			*out = v;
			return true;
		}
	return false;
}

static bool is_hex32(const char *s)
{
	size_t n = 0;
	while (n < 32 && isxdigit((unsigned char)s[n]))
		n++;
	return n == 32 && !s[n];
}

enum wh_status wh_verdict_cache_load(struct wh_verdict_cache *c, const char *path, const char *model_hash, unsigned *loaded_out)
{
	*loaded_out = 0;
	FILE *f = fopen(path, "r");
	if (!f) {
		if (errno == ENOENT)
			return wh_error(WH_ERR_IO, "%s: replay file not found (check the path, or drop --load-replay)", path);
		return wh_error(WH_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
	}
	struct stat sb;
	if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
		fclose(f);
		return wh_error(WH_ERR_IO, "%s: not a replay file (a folder or a device; give the replay.jsonl a run wrote)", path);
	}
	/* whole lines, however long (a fixed buffer would count its pieces as lines) */
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	unsigned lineno = 0, loaded = 0;
	enum wh_status st = WH_OK;
	while ((got = getline(&line, &cap, f)) >= 0) {
		lineno++;
		json_error_t err;
		json_t *j = json_loadb(line, (size_t)got, 0, &err);
		if (!j) {
			/* a run killed mid-write leaves a partial last line: ignore it */
			if (got && line[got - 1] == '\n') {
				st = wh_error(WH_ERR_PARSE, "%s:%u: not a replay line: %s (was the file edited?)", path, lineno, err.text);
				break;
			}
			continue;
		}
		const char *orig = json_string_value(json_object_get(j, "original"));
		if (orig && model_hash && strcmp(orig, model_hash)) {
			/* orig lives in j: the message is made before j is released */
			st = wh_error(WH_ERR_USAGE, "%s: replay of another model (hash %s, this model %s; use a fresh replay file)", path, orig, model_hash);
			json_decref(j);
			break;
		}
		json_t *hj = json_object_get(j, "hash"), *vj = json_object_get(j, "verdict");
		const char *hs = json_string_value(hj), *vs = json_string_value(vj);
		enum wh_verdict v = WH_VERDICT_SKIP;
		if (!json_is_object(j) || ((hj || vj) && (!hs || !is_hex32(hs) || !vs || !verdict_from_name(vs, &v)))) {
			/* a line that is not a header must be a verdict whittle wrote: never drop it silently */
			json_decref(j);
			st = wh_error(WH_ERR_PARSE, "%s:%u: not a replay line (\"hash\" must be 32 hex digits and \"verdict\" pass, fail or skip; was the file edited?)",
				      path, lineno);
			break;
		}
		if (hs && vs) {
			char hi[17], lo[17];
			memcpy(hi, hs, 16);
			hi[16] = '\0';
			memcpy(lo, hs + 16, 16);
			lo[16] = '\0';
			struct wh_hash h = {.hi = strtoull(hi, NULL, 16), .lo = strtoull(lo, NULL, 16)};
			if ((st = wh_verdict_cache_put(c, h, v)) != WH_OK) {
				json_decref(j);
				break;
			}
			loaded++;
		}
		json_decref(j);
	}
	free(line);
	fclose(f);
	*loaded_out = loaded;
	return st;
}

void wh_artifacts_sort(const char *const *files, int n, const char *dir, enum wh_verdict v, uint32_t seq)
{
	for (int i = 0; i < n; i++) {
		const char *a = files[i];
		if (access(a, F_OK) != 0)
			continue;
		const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
		char dst[PATH_MAX + 300];
		wh_text_printf(dst, sizeof dst, "%s/%s/%04u_%s", dir, wh_verdict_dir(v), seq, base);
		if (wh_os_move_file(a, dst) != WH_OK)
			wh_warn("%s: cannot move the artifact into %s/%s", a, dir, wh_verdict_dir(v));
	}
}

enum wh_status wh_reference_write(const struct wh_model *model, const struct wh_tensor_set *ref, bool outputs,
				  const char *dir)
{
	const struct wh_graph *g = model->graph;
	struct wh_tensor_set s;
	wh_tensor_set_init(&s);
	enum wh_status st = wh_os_make_dir(dir);
	uint32_t cnt = outputs ? g->n_outputs : g->n_inputs;
	const uint32_t *ids = outputs ? g->outputs : g->inputs;
	for (uint32_t i = 0; i < cnt && st == WH_OK; i++) {
		const struct wh_value *v = &g->values[ids[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		const struct wh_tensor *t = wh_tensor_set_find(ref, v->name);
		if (t)
			st = wh_tensor_set_add(&s, v->name, -1, t);
	}
	if (st == WH_OK)
		st = wh_tensor_set_write_dir(dir, NULL, &s);
	wh_tensor_set_release(&s);
	return st;
}

FILE *wh_report_open(const char *dir, const char *name)
{
	char p[PATH_MAX + 256];
	wh_text_printf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		wh_warn("%s: cannot write the report: %s", p, strerror(errno));
	return f;
}

bool wh_node_is_constant(const struct wh_node *n)
{
	return !strcmp(n->op_type, "Constant") && (!n->domain || !*n->domain);
}

/* ---- checks in flight ---- */

struct task_run {
	void (*fn)(void *ctx, uint32_t i);
	void *ctx;
	uint32_t n;
	atomic_uint next;
};

static void *task_thread(void *arg)
{
	struct task_run *t = arg;
	for (;;) {
		uint32_t i = atomic_fetch_add(&t->next, 1);
		if (i >= t->n)
			return NULL;
		t->fn(t->ctx, i);
	}
}

void wh_run_tasks(int jobs, uint32_t n, void (*fn)(void *ctx, uint32_t i), void *ctx)
{
	struct task_run t = {.fn = fn, .ctx = ctx, .n = n};
	atomic_init(&t.next, 0);
	uint32_t threads = jobs > 1 ? (uint32_t)jobs : 1;
	if (threads > n)
		threads = n;
	if (threads > 64)
		threads = 64;
	pthread_t tids[64];
	uint32_t started = 0;
	/* a thread that cannot start leaves its share to the others (the calling thread too) */
	for (uint32_t k = 1; k < threads; k++)
		if (pthread_create(&tids[started], NULL, task_thread, &t) == 0)
			started++;
	task_thread(&t);
	for (uint32_t k = 0; k < started; k++)
		pthread_join(tids[k], NULL);
}

int wh_threads_per_job(int threads, int jobs)
{
	if (jobs <= 1)
		return threads;
	if (threads <= 0)
		return 1;
	return threads / jobs > 0 ? threads / jobs : 1;
}

enum wh_status wh_output_check(const char *path, const char *what)
{
	struct stat sp;
	if (stat(path, &sp) == 0 && S_ISDIR(sp.st_mode))
		return wh_error(WH_ERR_USAGE, "%s: is a folder, not a file for %s (give a file path)", path, what);
	char dir[PATH_MAX];
	enum wh_status st = wh_os_dir_of(path, dir, sizeof dir);
	if (st != WH_OK)
		return st;
	struct stat sd;
	if (stat(dir, &sd) != 0 || !S_ISDIR(sd.st_mode))
		return wh_error(WH_ERR_IO, "%s: cannot write %s: the folder %s does not exist (create it, or choose another path)", path,
				what, dir);
	if (access(dir, W_OK | X_OK) != 0)
		return wh_error(WH_ERR_IO, "%s: cannot write %s: the folder %s is not writable (choose another path)", path, what, dir);
	return WH_OK;
}

#define WH_ARTIFACTS_LOCK ".whittle-lock"

enum wh_status wh_artifacts_claim(const char *dir, bool force, const char *resume, int *lock_out)
{
	*lock_out = -1;
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	char lock[PATH_MAX + 32];
	wh_text_printf(lock, sizeof lock, "%s/" WH_ARTIFACTS_LOCK, dir);
	bool busy;
	if ((st = wh_os_lock(lock, false, "the artifacts folder", lock_out, &busy)) != WH_OK) {
		if (busy)
			return wh_error(WH_ERR_IO, "%s: another whittle run is writing into this artifacts folder (wait for it, or give another --artifacts-dir)",
					dir);
		return st;
	}
	if (force)
		return WH_OK;
	/* resuming from a replay inside the folder continues that run: its files are ours */
	char rd[PATH_MAX], rr[PATH_MAX];
	if (resume && realpath(dir, rd) && realpath(resume, rr) && !strncmp(rr, rd, strlen(rd)) && rr[strlen(rd)] == '/')
		return WH_OK;
	DIR *dh = opendir(dir);
	struct dirent *de;
	bool empty = true;
	while (dh && empty && (de = readdir(dh)))
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, WH_ARTIFACTS_LOCK);
	if (dh)
		closedir(dh);
	if (!empty) {
		wh_artifacts_unlock(*lock_out);
		*lock_out = -1;
		return wh_error(WH_ERR_USAGE, "%s: holds files of an earlier run (give a new --artifacts-dir, or --force to write over them)", dir);
	}
	return WH_OK;
}

void wh_artifacts_unlock(int lock)
{
	wh_os_unlock(lock);
}

void wh_artifacts_default_dir(const char *cmd, char *out, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32] = "0";
	if (localtime_r(&now, &tm))
		strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	wh_text_printf(out, size, "whittle-%s-%s-%ld", cmd, stamp, (long)getpid());
}

/* ---- control flow ---- */

struct cf_log {
	const char *cmd;
	FILE *log;
};

static void cf_note(void *state, const char *line)
{
	const struct cf_log *l = state;
	char esc[2048];
	if (!l->log)
		return;
	wh_name_escape_line(line, esc, sizeof esc);
	fprintf(l->log, "%s: %s\n", l->cmd, esc);
}

enum wh_status wh_driver_inline_ifs(const char *cmd, struct wh_model **m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *samples, uint32_t n_samples, FILE *log)
{
	if (!wh_model_has_control_flow(*m))
		return WH_OK;
	struct cf_log l = {cmd, log};
	char names[256];
	if (wh_model_unsupported_ops(*m, names, sizeof names)) {
		cf_note(&l, "the If layers stay whole: whittle cannot run the model to see which branches it takes");
		return WH_OK;
	}
	struct wh_model *inl = NULL;
	enum wh_status st = wh_model_inline_taken(*m, eo, samples, n_samples, &inl, cf_note, &l);
	if (st == WH_OK && inl) {
		wh_model_destroy(*m);
		*m = inl;
	}
	return st;
}
