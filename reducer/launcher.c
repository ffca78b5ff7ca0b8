#include "reducer/launcher.h"
#include "graph/os.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- registry ---- */

#define MAX_GROUPS 512
#define MAX_JOBS 512
#define MAX_DIRS 32

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t groups[MAX_GROUPS];
static char jobs[MAX_JOBS][32];
static char dirs[MAX_DIRS][PATH_MAX];
static char replay[PATH_MAX];
static char run_name[64];
static bool used_slurm, used_outside;
static bool ran_checks; /* a check process was started: what an interrupt stops is checks */
static atomic_int interrupted;

int wh_interrupted(void)
{
	return atomic_load(&interrupted);
}

const char *wh_interrupt_run_name(void)
{
	pthread_mutex_lock(&reg_lock);
	if (!run_name[0])
		snprintf(run_name, sizeof run_name, "whittle-%ld", (long)getpid());
	pthread_mutex_unlock(&reg_lock);
	return run_name;
}

void wh_interrupt_note_slurm(bool inside_allocation)
{
	pthread_mutex_lock(&reg_lock);
	used_slurm = true;
	used_outside |= !inside_allocation;
	pthread_mutex_unlock(&reg_lock);
}

static void track_str(char *tab, size_t width, int n, const char *s, bool add)
{
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < n; i++) {
		char *e = tab + (size_t)i * width;
		if (add && !e[0]) {
			snprintf(e, width, "%s", s);
			break;
		}
		if (!add && !strcmp(e, s)) {
			e[0] = '\0';
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
}

void wh_interrupt_track_dir(const char *path) { track_str(&dirs[0][0], PATH_MAX, MAX_DIRS, path, true); }
void wh_interrupt_untrack_dir(const char *path) { track_str(&dirs[0][0], PATH_MAX, MAX_DIRS, path, false); }
void wh_interrupt_track_job(const char *id) { track_str(&jobs[0][0], 32, MAX_JOBS, id, true); }
void wh_interrupt_untrack_job(const char *id) { track_str(&jobs[0][0], 32, MAX_JOBS, id, false); }

void wh_interrupt_set_replay(const char *path)
{
	pthread_mutex_lock(&reg_lock);
	snprintf(replay, sizeof replay, "%s", path ? path : "");
	pthread_mutex_unlock(&reg_lock);
}

static bool track_group(pid_t g, bool add)
{
	bool ok = !add;
	pthread_mutex_lock(&reg_lock);
	for (int i = 0; i < MAX_GROUPS; i++) {
		if (add && !groups[i]) {
			groups[i] = g;
			ok = true;
			ran_checks = true;
			break;
		}
		if (!add && groups[i] == g) {
			groups[i] = 0;
			break;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return ok;
}

/* ---- the signal thread ---- */

static sigset_t stop_signals(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGINT);
	sigaddset(&s, SIGTERM);
	sigaddset(&s, SIGHUP);
	return s;
}

/* Runs a Slurm command to its end (at most limit_s), output discarded. */
static void run_quiet(char *const argv[], double limit_s)
{
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setpgid(0, 0);
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	double end = wh_os_now_s() + limit_s;
	while (waitpid(pid, NULL, WNOHANG) == 0) {
		if (wh_os_now_s() > end) {
			kill(-pid, SIGKILL);
			waitpid(pid, NULL, 0);
			break;
		}
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static void *signal_thread(void *arg)
{
	(void)arg;
	sigset_t s = stop_signals();
	int sig = 0;
	while (sigwait(&s, &sig) != 0 || !sig)
		;
	atomic_store(&interrupted, sig);
	/* from here no check starts and no check that ends gives a verdict */
	pthread_mutex_lock(&reg_lock);
	static pid_t g[MAX_GROUPS];
	int ng = 0;
	for (int i = 0; i < MAX_GROUPS; i++)
		if (groups[i])
			g[ng++] = groups[i];
	static char *cancel[MAX_JOBS + 8];
	int nc = 0;
	cancel[nc++] = "scancel";
	for (int i = 0; i < MAX_JOBS; i++)
		if (jobs[i][0])
			cancel[nc++] = jobs[i];
	cancel[nc] = NULL;
	bool slurm = used_slurm, outside = used_outside;
	char name[80];
	snprintf(name, sizeof name, "--name=%s", run_name);
	pthread_mutex_unlock(&reg_lock);
	/* SIGTERM first: srun cancels its step on it */
	for (int i = 0; i < ng; i++)
		kill(-g[i], SIGTERM);
	if (nc > 1)
		run_quiet(cancel, 10);
	if (slurm && outside) {
		char *by_name[] = {"scancel", name, NULL};
		run_quiet(by_name, 10);
	}
	struct timespec ts = {0, 200 * 1000 * 1000};
	nanosleep(&ts, NULL);
	for (int i = 0; i < ng; i++)
		kill(-g[i], SIGKILL);
	pthread_mutex_lock(&reg_lock);
	/* groups registered meanwhile (a check that was starting) */
	for (int i = 0; i < MAX_GROUPS; i++)
		if (groups[i])
			kill(-groups[i], SIGKILL);
	char line[PATH_MAX + 200];
	const char *sname = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP";
	int n;
	if (!ran_checks && !slurm && !replay[0])
		/* `run` and the like: no check to speak of */
		n = snprintf(line, sizeof line, "whittle: interrupted by %s: stopped (run it again)\n", sname);
	else if (replay[0])
		n = snprintf(line, sizeof line, "whittle: interrupted by %s: checks stopped%s (resume with --load-replay %s)\n",
			     sname, slurm ? ", Slurm work cancelled" : "", replay);
	else
		n = snprintf(line, sizeof line, "whittle: interrupted by %s: checks stopped%s (no replay to resume from; run again)\n",
			     sname, slurm ? ", Slurm work cancelled" : "");
	for (int i = 0; i < MAX_DIRS; i++)
		if (dirs[i][0])
			wh_os_remove_tree(dirs[i]);
	if (n > 0) {
		ssize_t w = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
		(void)w;
	}
	_exit(128 + sig);
	return NULL;
}

enum wh_status wh_interrupt_install(void)
{
	wh_interrupt_run_name();
	sigset_t s = stop_signals();
	if (pthread_sigmask(SIG_BLOCK, &s, NULL) != 0)
		return wh_error(WH_ERR_IO, "signals: cannot block SIGINT/SIGTERM/SIGHUP (report this)");
	pthread_t t;
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256 * 1024);
	int e = pthread_create(&t, &a, signal_thread, NULL);
	pthread_attr_destroy(&a);
	if (e) {
		pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		return wh_error(WH_ERR_IO, "signals: cannot start the interrupt thread: %s (raise the thread limit)", strerror(e));
	}
	return WH_OK;
}

/* ---- keeper ---- */

enum wh_status wh_keeper_init(struct wh_keeper *k, size_t cap)
{
	memset(k, 0, sizeof *k);
	k->cap = cap ? cap : 1;
	k->head = malloc(k->cap);
	k->ring = malloc(k->cap);
	if (!k->head || !k->ring) {
		wh_keeper_release(k);
		return wh_error(WH_ERR_NOMEM, "check: out of memory");
	}
	return WH_OK;
}

void wh_keeper_release(struct wh_keeper *k)
{
	free(k->head);
	free(k->ring);
	memset(k, 0, sizeof *k);
}

void wh_keeper_add(struct wh_keeper *k, const char *buf, size_t n)
{
	if (k->tap)
		k->tap(k->tap_ctx, buf, n);
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

char *wh_keeper_text(const struct wh_keeper *k)
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

/* ---- processes ---- */

enum wh_status wh_proc_run(char *const argv[], const struct wh_proc_options *o, struct wh_keeper *k,
			   struct wh_proc_result *out)
{
	memset(out, 0, sizeof *out);
	enum wh_status st = WH_OK;
	int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
	double grace = o->kill_grace_s > 0 ? o->kill_grace_s : 2.0;
	if (wh_interrupted())
		return wh_error(WH_ERR_CHECK, "check: interrupted (not started)");
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
		/* whittle blocks the stop signals for its signal thread; the check must not */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
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
	bool tracked = track_group(pid, true);
	if (wh_interrupted()) /* the interrupt may have missed this group */
		kill(-pid, SIGKILL);
	close(out_pipe[1]);
	out_pipe[1] = -1;
	close(err_pipe[1]);
	err_pipe[1] = -1;
	int exec_errno = 0;
	if (read(err_pipe[0], &exec_errno, sizeof exec_errno) == (ssize_t)sizeof exec_errno) {
		waitpid(pid, NULL, 0);
		if (tracked)
			track_group(pid, false);
		st = wh_error(WH_ERR_CHECK, "check command '%s': cannot run it: %s (check the path and that it is executable)",
			      argv[0], strerror(exec_errno));
		goto out;
	}
	double deadline = o->timeout_s > 0 ? t0 + o->timeout_s : 0;
	double kill_at = 0;
	bool term_sent = false, eof = false;
	int status = 0;
	bool reaped = false;
	char buf[65536];
	while (!eof || !reaped) {
		double now = wh_os_now_s();
		if (!term_sent && deadline && now >= deadline)
			out->timed_out = true;
		if (!term_sent && !out->timed_out && o->tick && o->tick(o->tick_arg))
			out->stopped = true;
		if (!term_sent && (out->timed_out || out->stopped)) {
			kill(-pid, SIGTERM);
			term_sent = true;
			kill_at = now + grace;
		}
		if (term_sent && kill_at && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = 0;
		}
		if (!eof) {
			struct pollfd p = {.fd = out_pipe[0], .events = POLLIN};
			int r = poll(&p, 1, 50);
			if (r > 0) {
				ssize_t n = read(out_pipe[0], buf, sizeof buf);
				if (n > 0)
					wh_keeper_add(k, buf, (size_t)n);
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
				wh_keeper_add(k, buf, (size_t)n);
			}
			eof = true;
		}
	}
	if (tracked)
		track_group(pid, false);
	out->seconds = wh_os_now_s() - t0;
	if (WIFSIGNALED(status)) {
		out->signal = WTERMSIG(status);
		out->exit_code = -1;
	} else {
		out->exit_code = WEXITSTATUS(status);
	}
	/* a check that ended because of the interrupt has no verdict */
	if (wh_interrupted())
		st = wh_error(WH_ERR_CHECK, "check: interrupted");
out:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	return st;
}
