#include "reducer/launcher-slurm.h"
#include "graph/os.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>


#define MAX_ARGS 64

struct wh_slurm {
	struct wh_check_options o;
	char *args[MAX_ARGS]; /* --slurm-args split on blanks */
	int n_args;
	bool inside; /* SLURM_JOB_ID set: checks are steps */
	pthread_mutex_t lock;
	char root[PATH_MAX]; /* <shared>/whittle-slurm.XXXXXX, made on the first check */
	atomic_uint seq;
	atomic_bool any_ok; /* some check got through: later refusals are faults, not a broken setup */
};

enum wh_status wh_slurm_create(const struct wh_check_options *o, struct wh_slurm **out)
{
	/* a shared folder is a mount every node sees: whittle never creates it, since a folder it
	 * made (a typo for the mount) would be local to this node and invisible to the jobs */
	if (o->shared_dir && !wh_os_is_dir(o->shared_dir))
		return wh_error(WH_ERR_USAGE, "--shared-dir '%s': %s (give a folder that exists on every node; whittle does not create it)",
				o->shared_dir, access(o->shared_dir, F_OK) == 0 ? "is not a folder" : "does not exist");
	struct wh_slurm *s = calloc(1, sizeof *s);
	if (!s)
		return wh_error(WH_ERR_NOMEM, "slurm: out of memory");
	s->o = *o;
	pthread_mutex_init(&s->lock, NULL);
	const char *a = o->slurm_args ? o->slurm_args : "";
	while (*a) {
		while (*a == ' ' || *a == '\t')
			a++;
		if (!*a)
			break;
		size_t n = strcspn(a, " \t");
		if (s->n_args == MAX_ARGS) {
			wh_slurm_destroy(s);
			return wh_error(WH_ERR_USAGE, "--slurm-args: more than %d words (put them in a Slurm script or SBATCH_* variables)", MAX_ARGS);
		}
		if (!(s->args[s->n_args++] = strndup(a, n))) {
			wh_slurm_destroy(s);
			return wh_error(WH_ERR_NOMEM, "slurm: out of memory");
		}
		a += n;
	}
	const char *job = getenv("SLURM_JOB_ID");
	s->inside = job && *job;
	*out = s;
	return WH_OK;
}

void wh_slurm_destroy(struct wh_slurm *s)
{
	if (!s)
		return;
	for (int i = 0; i < s->n_args; i++)
		free(s->args[i]);
	if (s->root[0]) {
		wh_interrupt_untrack_dir(s->root);
		wh_os_remove_tree(s->root);
	}
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static bool exists(const char *p)
{
	struct stat sb;
	return stat(p, &sb) == 0;
}

/* Whether path lies inside dir (both resolved). */
static bool is_under(const char *path, const char *dir)
{
	char rp[PATH_MAX], rd[PATH_MAX];
	if (!realpath(path, rp) || !realpath(dir, rd))
		return false;
	size_t n = strlen(rd);
	return !strncmp(rp, rd, n) && (rp[n] == '/' || rp[n] == '\0');
}

/* With --shared-dir: one folder for the run, <shared>/whittle-slurm.XXXXXX. */
static enum wh_status make_root(struct wh_slurm *s)
{
	enum wh_status st = WH_OK;
	pthread_mutex_lock(&s->lock);
	if (!s->root[0]) {
		char tmpl[PATH_MAX + 32];
		if ((size_t)snprintf(tmpl, sizeof tmpl, "%s/whittle-slurm.XXXXXX", s->o.shared_dir) >= sizeof s->root - 64) {
			st = wh_error(WH_ERR_IO, "%s: shared folder path too long (give a shorter --shared-dir)", s->o.shared_dir);
		} else if ((st = wh_os_make_temp_dir(tmpl)) == WH_OK) {
			char rp[PATH_MAX];
			/* absolute: the job runs in another process, maybe on another node */
			snprintf(s->root, sizeof s->root, "%.4000s", realpath(tmpl, rp) ? rp : tmpl);
			wh_interrupt_track_dir(s->root);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return st;
}

static enum wh_status copy_tree(const char *from, const char *to)
{
	if (!wh_os_is_dir(from))
		return wh_os_copy_file(from, to);
	enum wh_status st = wh_os_make_dir(to);
	if (st != WH_OK)
		return st;
	DIR *d = opendir(from);
	if (!d)
		return wh_error(WH_ERR_IO, "%s: cannot read the folder to stage it: %s (check the permissions)", from, strerror(errno));
	struct dirent *de;
	while (st == WH_OK && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char a[PATH_MAX], b[PATH_MAX];
		if ((size_t)snprintf(a, sizeof a, "%s/%s", from, de->d_name) >= sizeof a ||
		    (size_t)snprintf(b, sizeof b, "%s/%s", to, de->d_name) >= sizeof b) {
			st = wh_error(WH_ERR_IO, "%s: path too long to stage (give a shorter --shared-dir)", from);
			break;
		}
		st = copy_tree(a, b);
	}
	closedir(d);
	return st;
}

/* The placeholder files, in the shared folder: those outside it are copied (hard links
 * first) into dir; paths are made absolute. */
static enum wh_status stage(const char *shared, const char *dir, const struct wh_check_vars *in,
			    struct wh_check_vars *out, char (*buf)[PATH_MAX])
{
	const char *src[7] = {in ? in->model : NULL, in ? in->inputs : NULL, in ? in->golden : NULL,
			      in ? in->tactics : NULL, in ? in->precisions : NULL, in ? in->trt_inputs : NULL,
			      in ? in->trt_golden : NULL};
	static const char *const names[7] = {"model", "inputs", "golden", "tactics", "precisions", "trt-inputs", "trt-golden"};
	const char *dst[7] = {0};
	for (int i = 0; i < 7; i++) {
		if (!src[i])
			continue;
		if (!exists(src[i]) || is_under(src[i], shared)) {
			/* inside the shared folder (or not written yet, like a {tactics} the check
			 * writes): the absolute path as it is */
			char rp[PATH_MAX];
			if (src[i][0] == '/' || !getcwd(rp, sizeof rp))
				snprintf(buf[i], PATH_MAX, "%s", src[i]);
			else if ((size_t)snprintf(buf[i], PATH_MAX, "%s/%s", rp, src[i]) >= PATH_MAX)
				return wh_error(WH_ERR_IO, "%s: path too long", src[i]);
		} else {
			const char *base = strrchr(src[i], '/') ? strrchr(src[i], '/') + 1 : src[i];
			if ((size_t)snprintf(buf[i], PATH_MAX, "%s/%s-%s", dir, names[i], base) >= PATH_MAX)
				return wh_error(WH_ERR_IO, "%s: path too long to stage (give a shorter --shared-dir)", src[i]);
			enum wh_status st = copy_tree(src[i], buf[i]);
			if (st != WH_OK)
				return st;
		}
		dst[i] = buf[i];
	}
	out->model = dst[0];
	out->inputs = dst[1];
	out->golden = dst[2];
	out->tactics = dst[3];
	out->precisions = dst[4];
	out->trt_inputs = dst[5];
	out->trt_golden = dst[6];
	out->base = NULL; /* every path is absolute now */
	return WH_OK;
}

static void sh_quote(FILE *f, const char *w)
{
	fputc('\'', f);
	for (; *w; w++)
		if (*w == '\'')
			fputs("'\\''", f);
		else
			fputc(*w, f);
	fputc('\'', f);
}

static enum wh_status write_script(const char *dir, char *const words[])
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/check.sh", dir);
	FILE *f = fopen(p, "w");
	if (!f)
		return wh_error(WH_ERR_IO, "%s: cannot write the check script: %s (check --shared-dir)", p, strerror(errno));
	fprintf(f, "#!/bin/sh\n# written by whittle: one check as Slurm work\nd=");
	sh_quote(f, dir);
	/* a job cancelled (scancel, time limit, preemption) must leave no status: its check did
	 * not run to its end, whatever it exited with */
	fprintf(f, "\ntrap 'exit 143' TERM INT HUP\necho \"$SLURM_JOB_ID.${SLURM_STEP_ID:-batch}\" > \"$d/started\"\n");
	for (int i = 0; words[i]; i++) {
		if (i)
			fputc(' ', f);
		sh_quote(f, words[i]);
	}
	fprintf(f, " < /dev/null > \"$d/output\" 2>&1\necho $? > \"$d/status.tmp\" && mv \"$d/status.tmp\" \"$d/status\"\n");
	bool ok = !ferror(f);
	if (fclose(f) != 0 || !ok)
		return wh_error(WH_ERR_IO, "%s: cannot write the check script (disk full?)", p);
	return WH_OK;
}

/* Runs a Slurm command (sbatch, squeue, scancel) and keeps its output (first line in
 * line, when given). */
static enum wh_status slurm_cmd(char *const argv[], int *rc, char *text, size_t text_size)
{
	struct wh_keeper k;
	enum wh_status st = wh_keeper_init(&k, 16384);
	if (st != WH_OK)
		return st;
	struct wh_proc_options po = {.timeout_s = 60};
	struct wh_proc_result pr;
	st = wh_proc_run(argv, &po, &k, &pr);
	if (st == WH_OK) {
		*rc = pr.timed_out ? 124 : pr.exit_code;
		char *t = wh_keeper_text(&k);
		if (text)
			snprintf(text, text_size, "%s", t ? t : "");
		free(t);
	}
	wh_keeper_release(&k);
	return st;
}

static void scancel(const char *id)
{
	char *argv[] = {"scancel", (char *)id, NULL};
	int rc;
	slurm_cmd(argv, &rc, NULL, 0);
}

/* Slurm's message: the first line holding "error", else the first line. */
static void error_line(const char *text, char *out, size_t n)
{
	const char *l = strstr(text, "error");
	if (l)
		while (l > text && l[-1] != '\n')
			l--;
	else
		l = text;
	snprintf(out, n, "%.*s", (int)strcspn(l, "\n"), l);
}

static void read_id(const char *dir, char *id, size_t n)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/started", dir);
	FILE *f = fopen(p, "r");
	id[0] = '\0';
	if (f) {
		if (fgets(id, (int)n, f))
			id[strcspn(id, "\n")] = '\0';
		fclose(f);
	}
}

struct step_watch {
	const struct wh_slurm *s;
	const char *dir;
	double t0, started_at;
	bool pending_too_long, timed_out;
	char id[32];
};

static bool step_tick(void *arg)
{
	struct step_watch *w = arg;
	double now = wh_os_now_s();
	if (!w->started_at) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s/started", w->dir);
		if (exists(p)) {
			w->started_at = now;
			read_id(w->dir, w->id, sizeof w->id);
			if (w->id[0])
				wh_interrupt_track_job(w->id);
		} else if (w->s->o.queue_timeout_s > 0 && now - w->t0 > w->s->o.queue_timeout_s) {
			w->pending_too_long = true;
			return true;
		}
	}
	if (w->started_at && w->s->o.timeout_s > 0 && now - w->started_at > w->s->o.timeout_s) {
		w->timed_out = true;
		return true;
	}
	return false;
}

static enum wh_status run_step(struct wh_slurm *s, const char *dir, struct wh_slurm_outcome *out)
{
	char script[PATH_MAX + 16], name[96];
	snprintf(script, sizeof script, "%s/check.sh", dir);
	snprintf(name, sizeof name, "--job-name=%s", wh_interrupt_run_name());
	char *argv[MAX_ARGS + 12];
	int n = 0;
	argv[n++] = "srun";
	argv[n++] = "--exclusive";
	argv[n++] = "-n1";
	argv[n++] = "-N1";
	argv[n++] = "--quiet";
	argv[n++] = name;
	for (int i = 0; i < s->n_args; i++)
		argv[n++] = s->args[i];
	argv[n++] = "/bin/sh";
	argv[n++] = script;
	argv[n] = NULL;
	struct step_watch w = {.s = s, .dir = dir, .t0 = wh_os_now_s()};
	struct wh_proc_options po = {.tick = step_tick, .tick_arg = &w};
	struct wh_keeper k;
	enum wh_status st = wh_keeper_init(&k, 16384);
	if (st != WH_OK)
		return st;
	struct wh_proc_result pr;
	st = wh_proc_run(argv, &po, &k, &pr);
	if (!w.id[0])
		read_id(dir, w.id, sizeof w.id);
	if (w.id[0]) {
		if (w.timed_out || w.pending_too_long || st != WH_OK)
			scancel(w.id);
		wh_interrupt_untrack_job(w.id);
	}
	if (st != WH_OK)
		goto out;
	char *text = wh_keeper_text(&k);
	char status[PATH_MAX + 16];
	snprintf(status, sizeof status, "%s/status", dir);
	if (w.timed_out) {
		out->timed_out = true;
		snprintf(out->why, sizeof out->why, "timeout (step %s cancelled)", w.id);
	} else if (w.pending_too_long) {
		out->fault = true;
		out->queue_timeout = true;
		snprintf(out->why, sizeof out->why, "step pending longer than --queue-timeout");
	} else if (exists(status) && pr.exit_code == 0) {
		/* srun exits non-zero when the step was cancelled, even after the check ended */
		out->ran = true;
	} else if (text && strstr(text, "TIME LIMIT")) {
		out->timed_out = true;
		snprintf(out->why, sizeof out->why, "Slurm time limit (step %s)", w.id[0] ? w.id : "?");
	} else {
		char line[160];
		error_line(text ? text : "", line, sizeof line);
		if (!w.id[0] && !atomic_load(&s->any_ok) && pr.exit_code != 0) {
			free(text);
			st = wh_error(WH_ERR_CHECK, "slurm: srun cannot start the check as a step: %s (fix --slurm-args or the allocation)",
				      line[0] ? line : "no message");
			goto out;
		}
		out->fault = true;
		snprintf(out->why, sizeof out->why, "step %s ended without running the check to its end (%.160s)", w.id[0] ? w.id : "?",
			 line[0] ? line : "no message");
	}
	free(text);
out:
	wh_keeper_release(&k);
	return st;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

static enum wh_status run_job(struct wh_slurm *s, const char *dir, struct wh_slurm_outcome *out)
{
	char script[PATH_MAX + 16], name[96], log[PATH_MAX + 32], text[16384];
	snprintf(script, sizeof script, "%s/check.sh", dir);
	snprintf(name, sizeof name, "--job-name=%s", wh_interrupt_run_name());
	snprintf(log, sizeof log, "--output=%s/slurm.log", dir);
	char *argv[MAX_ARGS + 12];
	int n = 0;
	argv[n++] = "sbatch";
	argv[n++] = "--parsable";
	argv[n++] = name;
	argv[n++] = log;
	for (int i = 0; i < s->n_args; i++)
		argv[n++] = s->args[i];
	argv[n++] = script;
	argv[n] = NULL;
	int rc = 0;
	double t0 = wh_os_now_s();
	enum wh_status st = slurm_cmd(argv, &rc, text, sizeof text);
	if (st != WH_OK)
		return st;
	char id[32];
	snprintf(id, sizeof id, "%.*s", (int)strcspn(text, ";\n"), text);
	if (rc != 0 || !id[0] || strspn(id, "0123456789") != strlen(id)) {
		char line[160];
		error_line(text, line, sizeof line);
		if (!atomic_load(&s->any_ok))
			return wh_error(WH_ERR_CHECK, "slurm: sbatch refused the check job: %s (fix --slurm-args or the cluster)",
					line[0] ? line : "no message");
		out->fault = true;
		snprintf(out->why, sizeof out->why, "sbatch failed: %.160s", line);
		return WH_OK;
	}
	wh_interrupt_track_job(id);
	char status[PATH_MAX + 16], started[PATH_MAX + 16];
	snprintf(status, sizeof status, "%s/status", dir);
	snprintf(started, sizeof started, "%s/started", dir);
	double started_at = 0, next_poll = t0 + 0.5, gone_since = 0;
	bool cancel = false, status_seen = false;
	for (;;) {
		if (wh_interrupted()) {
			st = wh_error(WH_ERR_CHECK, "check: interrupted");
			break;
		}
		double now = wh_os_now_s();
		if (exists(status) && !status_seen) {
			/* the check ended; believe it once Slurm says the job completed (a job
			 * cancelled while its check was ending is a fault) */
			status_seen = true;
			next_poll = now;
		}
		if (!started_at && exists(started))
			started_at = now;
		if (!status_seen && started_at && s->o.timeout_s > 0 && now - started_at > s->o.timeout_s) {
			out->timed_out = true;
			snprintf(out->why, sizeof out->why, "timeout (job %s cancelled)", id);
			cancel = true;
			break;
		}
		if (now >= next_poll) {
			next_poll = now + (status_seen ? 0.1 : 1.0);
			char *q[] = {"squeue", "-h", "-t", "all", "-j", id, "-o", "%T", NULL};
			if ((st = slurm_cmd(q, &rc, text, sizeof text)) != WH_OK)
				break;
			char state[64];
			snprintf(state, sizeof state, "%.*s", (int)strcspn(text, " \n"), text);
			if (rc != 0 || !state[0]) {
				/* purged, or the controller did not answer: give it 30 s */
				if (!gone_since)
					gone_since = now;
				if (status_seen && now - gone_since > 1) {
					out->ran = true; /* purged already: it completed */
					break;
				}
				if (now - gone_since > 30) {
					if (exists(status)) {
						out->ran = true;
						break;
					}
					out->fault = true;
					snprintf(out->why, sizeof out->why, "job %s vanished from squeue without running the check", id);
					break;
				}
			} else {
				gone_since = 0;
				bool pending = !strcmp(state, "PENDING") || !strcmp(state, "CONFIGURING") || !strcmp(state, "REQUEUED") ||
					       !strcmp(state, "REQUEUE_HOLD") || !strcmp(state, "REQUEUE_FED") || !strcmp(state, "RESV_DEL_HOLD") ||
					       !strcmp(state, "SUSPENDED");
				bool active = !strcmp(state, "RUNNING") || !strcmp(state, "COMPLETING") || !strcmp(state, "STAGE_OUT") ||
					      !strcmp(state, "SIGNALING") || !strcmp(state, "RESIZING");
				if (pending) {
					if (s->o.queue_timeout_s > 0 && !started_at && now - t0 > s->o.queue_timeout_s) {
						out->fault = true;
						out->queue_timeout = true;
						snprintf(out->why, sizeof out->why, "job %s pending longer than --queue-timeout (cancelled)", id);
						cancel = true;
						break;
					}
				} else if (!active) {
					if (!status_seen && strcmp(state, "COMPLETED"))
						sleep_s(0.2); /* the status file is written before the job ends */
					if (!strcmp(state, "COMPLETED") && exists(status)) {
						out->ran = true;
					} else if (!strcmp(state, "TIMEOUT") || !strcmp(state, "DEADLINE")) {
						out->timed_out = true;
						snprintf(out->why, sizeof out->why, "Slurm time limit (job %s %s)", id, state);
					} else {
						out->fault = true;
						snprintf(out->why, sizeof out->why, "job %s ended %s without running the check to its end", id, state);
					}
					break;
				}
			}
		}
		sleep_s(0.05);
	}
	if (cancel || st != WH_OK)
		scancel(id);
	wh_interrupt_untrack_job(id);
	return st;
}

static enum wh_status read_output(const char *dir, struct wh_keeper *k)
{
	char p[PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/output", dir);
	FILE *f = fopen(p, "rb");
	if (!f)
		return WH_OK; /* the check printed nothing before it was stopped */
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, f)) > 0)
		wh_keeper_add(k, buf, n);
	fclose(f);
	return WH_OK;
}

enum wh_status wh_slurm_run(struct wh_slurm *s, const struct wh_check *c, const struct wh_check_vars *vars,
			    struct wh_keeper *k, struct wh_slurm_outcome *out)
{
	memset(out, 0, sizeof *out);
	double t0 = wh_os_now_s();
	enum wh_status st = WH_OK;
	char shared[PATH_MAX], dir[PATH_MAX];
	bool own_dir = false;
	wh_interrupt_note_slurm(s->inside);
	if (s->o.shared_dir) {
		if ((st = make_root(s)) != WH_OK)
			return st;
		snprintf(shared, sizeof shared, "%s", s->o.shared_dir);
		snprintf(dir, sizeof dir, "%.4000s/c%06u", s->root, atomic_fetch_add(&s->seq, 1));
		if ((st = wh_os_make_dir(dir)) != WH_OK)
			return st;
	} else {
		/* the driver's work folder, where the candidate already is (else the current
		 * folder, where Slurm runs the job too): a folder of this check's own next to it */
		if (vars && vars->model && strrchr(vars->model, '/'))
			snprintf(shared, sizeof shared, "%.*s", (int)(strrchr(vars->model, '/') - vars->model), vars->model);
		else
			snprintf(shared, sizeof shared, ".");
		if (!shared[0])
			snprintf(shared, sizeof shared, "/");
		char tmpl[PATH_MAX + 32], rp[PATH_MAX];
		if ((size_t)snprintf(tmpl, sizeof tmpl, "%s/whittle-slurm.XXXXXX", shared) >= sizeof dir - 64)
			return wh_error(WH_ERR_IO, "%s: folder path too long to stage a check (give a shorter --shared-dir)", shared);
		if ((st = wh_os_make_temp_dir(tmpl)) != WH_OK)
			return st;
		snprintf(dir, sizeof dir, "%.4000s", realpath(tmpl, rp) ? rp : tmpl);
		wh_interrupt_track_dir(dir);
		own_dir = true;
	}
	char bufs[7][PATH_MAX];
	struct wh_check_vars staged;
	char **words = NULL;
	if ((st = stage(shared, dir, vars, &staged, bufs)) != WH_OK)
		goto out;
	if ((st = wh_check_build_argv(c, &staged, &words)) != WH_OK)
		goto out;
	if ((st = write_script(dir, words)) != WH_OK)
		goto out;
	int attempts = 1 + (s->o.retries > 0 ? s->o.retries : 0);
	bool every_queue_timeout = true;
	for (int a = 0; a < attempts; a++) {
		static const char *const leftovers[] = {"started", "status", "status.tmp", "output", "slurm.log"};
		for (size_t i = 0; i < sizeof leftovers / sizeof *leftovers; i++) {
			char p[PATH_MAX + 16];
			snprintf(p, sizeof p, "%s/%s", dir, leftovers[i]);
			unlink(p);
		}
		struct wh_slurm_outcome o = {0};
		st = s->inside ? run_step(s, dir, &o) : run_job(s, dir, &o);
		if (st != WH_OK)
			goto out;
		*out = o;
		out->attempts = a + 1;
		every_queue_timeout &= o.queue_timeout;
		out->queue_timeout = o.fault && every_queue_timeout;
		if (!o.fault)
			break;
		if (a + 1 < attempts)
			wh_warn("slurm: %s: retrying (%d of %d)", o.why, a + 1, attempts - 1);
	}
	if (out->ran) {
		char p[PATH_MAX + 16];
		snprintf(p, sizeof p, "%s/status", dir);
		FILE *f = fopen(p, "r");
		int code = -1;
		if (!f || fscanf(f, "%d", &code) != 1) {
			out->ran = false;
			out->fault = true;
			snprintf(out->why, sizeof out->why, "the check's status file is unreadable (is --shared-dir shared?)");
		} else if (code > 128 && code < 128 + 65) {
			out->signal = code - 128;
			out->exit_code = -1;
		} else {
			out->exit_code = code;
		}
		if (f)
			fclose(f);
		atomic_store(&s->any_ok, true);
	}
	if (out->timed_out)
		atomic_store(&s->any_ok, true);
	st = read_output(dir, k);
out:
	out->seconds = wh_os_now_s() - t0;
	wh_check_free_argv(words);
	if (own_dir)
		wh_interrupt_untrack_dir(dir);
	wh_os_remove_tree(dir);
	return st;
}
