/* The one rule for the paths a command writes (cli-internal.h, wh_cli_check_paths): an
 * output is never a file the command reads, nor a file another output writes. The option
 * table (options.c) marks which options read and which write; this file alone decides. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "graph/onnx-io.h"
#include "graph/os.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"

/* A file or folder the command reads, and how to name it in a refusal. */
struct read_path {
	const char *path;
	bool by_option;  /* given to a read option (not the model or its weights) */
	bool folder;     /* a folder of files read (WH_PATH_FOLDER) */
	char label[PATH_MAX + 96];
};

struct reads {
	struct read_path *v;
	uint32_t n, cap;
};

static enum wh_status add_read(struct reads *r, const char *path, const char *fmt, const char *arg)
{
	if (r->n == r->cap) {
		uint32_t cap = r->cap ? r->cap * 2 : 16;
		struct read_path *nv = realloc(r->v, cap * sizeof *nv);
		if (!nv)
			return wh_error(WH_ERR_NOMEM, "out of memory checking the output paths (free some memory)");
		r->v = nv;
		r->cap = cap;
	}
	r->v[r->n].path = path;
	r->v[r->n].by_option = false;
	r->v[r->n].folder = false;
	snprintf(r->v[r->n].label, sizeof r->v[r->n].label, fmt, arg);
	r->n++;
	return WH_OK;
}

/* How a refusal names the option: its letter where it has one, else --name. */
static void option_name(const struct wh_cli_option *o, char *buf, size_t size)
{
	if (o->letter)
		snprintf(buf, size, "-%c", (char)o->code);
	else
		snprintf(buf, size, "--%s", o->name);
}

/* The absolute path that `path` names or will name once written (its folder resolved, links
 * followed where they exist); false when not even the folder resolves. */
static bool future_real(const char *path, char *out)
{
	if (realpath(path, out))
		return true;
	char dir[PATH_MAX], real[PATH_MAX];
	if (wh_os_dir_of(path, dir, sizeof dir) != WH_OK || !realpath(dir, real))
		return false;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	return (size_t)snprintf(out, PATH_MAX, "%s/%s", strcmp(real, "/") ? real : "", base) < PATH_MAX;
}

/* Whether the folder `dir` holds (at any depth) what `path` names or will name. */
static bool inside(const char *path, const char *dir, char *real_dir)
{
	char rp[PATH_MAX];
	if (!realpath(dir, real_dir) || !future_real(path, rp))
		return false;
	size_t n = strlen(real_dir);
	return !strncmp(rp, real_dir, n) && (rp[n] == '/' || rp[n] == '\0' || n == 1);
}

/* Refuses when `path` (what option `opt` writes; shown as `shown`) is any file or folder in
 * r: the same device and inode, so "./m.onnx", a symbolic or a hard link all count; nor may
 * it lie inside a folder read (a file written among the inputs would replace one, or stop
 * the folder loading). flags: the option's marks. */
static enum wh_status not_read(const char *cmd, const char *opt, const char *shown, const char *path, bool dir,
			       const struct reads *r, const char *self, uint32_t flags)
{
	struct stat so, si;
	char rd[PATH_MAX];
	for (uint32_t i = 0; i < r->n; i++) {
		if (!r->v[i].folder || r->v[i].path == self || stat(r->v[i].path, &si) != 0 || !S_ISDIR(si.st_mode) ||
		    !inside(path, r->v[i].path, rd))
			continue;
		return wh_cli_usage_error(cmd, "%s '%s': inside %s (%s), whose files would then change (give another folder)", opt, path,
					  r->v[i].label, rd);
	}
	if (stat(path, &so) != 0)
		return WH_OK; /* nothing there yet: not a file anyone reads */
	for (uint32_t i = 0; i < r->n; i++) {
		if (r->v[i].path == self || stat(r->v[i].path, &si) != 0 || so.st_dev != si.st_dev || so.st_ino != si.st_ino)
			continue;
		if ((flags & WH_PATH_RESUMES) && r->v[i].by_option)
			continue; /* continues the file it reads */
		if (strcmp(shown, path))
			return wh_cli_usage_error(cmd, "%s '%s': %s is %s, and writing there would overwrite it (give another name)", opt,
						  shown, path, r->v[i].label);
		return wh_cli_usage_error(cmd, "%s '%s': is %s, and %s there would overwrite it (choose another path)", opt, path,
					  r->v[i].label, dir ? "writing files" : "writing");
	}
	return WH_OK;
}

static enum wh_status list_reads(const struct wh_cli_spec *spec, const struct wh_cli_args *a, struct reads *r,
				 char ***weights, uint32_t *n_weights)
{
	enum wh_status st = WH_OK;
	bool models = spec->operands && strstr(spec->operands, "MODEL");
	for (int i = 0; i < spec->n_operands && a->operands && st == WH_OK; i++) {
		const char *m = a->operands[i];
		if (!models) {
			st = add_read(r, m, "'%s', which the command reads", m);
			continue;
		}
		if ((st = add_read(r, m, "the input model '%s'", m)) != WH_OK)
			break;
		/* the weights files it names: a model that cannot be read fails in the command */
		char **files = NULL;
		uint32_t n = 0;
		if (wh_model_external_files(m, &files, &n) != WH_OK) {
			wh_error_clear();
			continue;
		}
		char **all = realloc(*weights, (*n_weights + n) * sizeof *all);
		if (!all && n) {
			wh_model_files_free(files, n);
			return wh_error(WH_ERR_NOMEM, "out of memory checking the output paths (free some memory)");
		}
		*weights = all;
		for (uint32_t k = 0; k < n; k++)
			(*weights)[(*n_weights)++] = files[k];
		free(files);
		for (uint32_t k = *n_weights - n; k < *n_weights && st == WH_OK; k++)
			st = add_read(r, (*weights)[k], "a weights file that the input model reads", NULL);
	}
	for (int i = 0; i < a->n_paths && st == WH_OK; i++) {
		const struct wh_cli_path_arg *p = &a->paths[i];
		if ((p->opt->path & WH_PATH_READ) && p->arg) {
			char what[128];
			snprintf(what, sizeof what, "the %s that --%s reads", wh_os_is_dir(p->arg) ? "folder" : "file", p->opt->name);
			if ((st = add_read(r, p->arg, "%s", what)) == WH_OK) {
				r->v[r->n - 1].by_option = true;
				r->v[r->n - 1].folder = p->opt->path & WH_PATH_FOLDER;
			}
		}
	}
	return st;
}

/* One written file against the files the others write (by resolved path). */
static enum wh_status not_written_twice(const char *cmd, const struct wh_cli_args *a, int i)
{
	char ri[PATH_MAX], rj[PATH_MAX];
	const struct wh_cli_path_arg *pi = &a->paths[i];
	if (!future_real(pi->arg, ri))
		return WH_OK;
	for (int j = 0; j < i; j++) {
		const struct wh_cli_path_arg *pj = &a->paths[j];
		if (!(pj->opt->path & WH_PATH_WRITE) || !pj->arg || !future_real(pj->arg, rj) || strcmp(ri, rj))
			continue;
		char oi[64], oj[64];
		option_name(pi->opt, oi, sizeof oi);
		option_name(pj->opt, oj, sizeof oj);
		if (pi->opt == pj->opt)
			continue; /* the same option twice: its own rule (a repeatable list) */
		return wh_cli_usage_error(cmd, "%s '%s': %s writes the same file (give each output its own path)", oi, pi->arg, oj);
	}
	return WH_OK;
}

enum wh_status wh_cli_check_paths(const struct wh_cli_spec *spec, const struct wh_cli_args *a)
{
	struct reads r = {0};
	char **weights = NULL;
	uint32_t n_weights = 0;
	enum wh_status st = list_reads(spec, a, &r, &weights, &n_weights);
	for (int i = 0; i < a->n_paths && st == WH_OK; i++) {
		const struct wh_cli_path_arg *p = &a->paths[i];
		char opt[64];
		option_name(p->opt, opt, sizeof opt);
		if ((p->opt->path & (WH_PATH_WRITE | WH_PATH_WRITE_DIR)) && p->arg) {
			bool dir = p->opt->path & WH_PATH_WRITE_DIR;
			/* a cache that is read and written is compared with the other reads only */
			const char *self = NULL;
			for (uint32_t k = 0; k < r.n; k++)
				if (r.v[k].path == p->arg)
					self = p->arg;
			st = not_read(spec->cmd, opt, p->arg, p->arg, dir, &r, self, p->opt->path);
			if (st == WH_OK && !dir)
				st = not_written_twice(spec->cmd, a, i);
			continue;
		}
		if (!(p->opt->path & WH_PATH_SAVE_NAME))
			continue;
		/* a weights file name: next to every model saved (a -o file) or in a folder written */
		for (int j = 0; j < a->n_paths && st == WH_OK; j++) {
			const struct wh_cli_path_arg *q = &a->paths[j];
			if (!q->arg || !(q->opt->path & (WH_PATH_WRITE | WH_PATH_WRITE_DIR)))
				continue;
			char dir[PATH_MAX], file[PATH_MAX + 16];
			const char *shown = p->arg;
			if (q->opt->path & WH_PATH_WRITE_DIR)
				snprintf(dir, sizeof dir, "%s", q->arg);
			else if (wh_os_dir_of(q->arg, dir, sizeof dir) != WH_OK)
				continue;
			if (p->arg)
				snprintf(file, sizeof file, "%s/%s", dir, p->arg);
			else if (q->opt->path & WH_PATH_WRITE)
				snprintf(file, sizeof file, "%s.data", q->arg), shown = file;
			else
				continue;
			st = not_read(spec->cmd, opt, shown, file, false, &r, NULL, 0);
		}
	}
	free(r.v);
	if (st == WH_OK && spec->save_opts) {
		/* the saver keeps them too, under whatever name a save would give a new file */
		wh_cli_save_opts_release(spec->save_opts);
		spec->save_opts->keep = weights;
		spec->save_opts->n_keep = n_weights;
		spec->save_opts->save.keep = (const char *const *)weights;
		spec->save_opts->save.n_keep = n_weights;
		return st;
	}
	wh_model_files_free(weights, n_weights);
	return st;
}
