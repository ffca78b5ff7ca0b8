/* How the check runner starts work and how whittle stops it: child processes in their own
 * process groups (the `local` launcher, and the Slurm commands the `slurm` launcher runs),
 * the output keeper, the registry of everything in flight, and the interrupt.
 *
 * Interrupts: wh_interrupt_install (called once by the front end before any thread starts)
 * blocks SIGINT, SIGTERM and SIGHUP in every thread and waits for them in one thread of its
 * own (sigwait: no code runs in a signal handler, so the registry is an ordinary
 * mutex-guarded table). On a signal that thread marks the run interrupted (no new check
 * starts, and a check that ends from now on gives no verdict, so nothing killed is recorded
 * in a replay), sends SIGTERM and then SIGKILL to every registered process group, cancels
 * every registered Slurm job or step with scancel (and the jobs of this run by name, for a
 * submission whose id was not read yet), prints ONE line (how to resume, when a replay was
 * registered), removes the registered folders and exits with 128 + the signal. Children
 * get an empty signal mask back before exec (wh_proc_run does that).
 *
 * Everything here is safe from any thread. Registered strings are copied (fixed tables, no
 * ownership crosses). */
#ifndef WH_LAUNCHER_H
#define WH_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "graph/status.h"

/* ---- interrupts ---- */

/* Starts the signal thread. Call from the main thread before any other thread exists. */
enum wh_status wh_interrupt_install(void);
/* 0, or the signal that interrupted the run. */
int wh_interrupted(void);
/* Folders removed on an interrupt (temporary work folders). untrack before removing one. */
void wh_interrupt_track_dir(const char *path);
void wh_interrupt_untrack_dir(const char *path);
/* The replay file that resumes this run (NULL: none); named in the interrupt's line. */
void wh_interrupt_set_replay(const char *path);
/* Slurm job or step ids ("123", "123.4") cancelled on an interrupt. */
void wh_interrupt_track_job(const char *id);
void wh_interrupt_untrack_job(const char *id);
/* The name every Slurm job and step of this run carries ("whittle-<pid>"). */
const char *wh_interrupt_run_name(void);
/* Whether this run ever submitted to Slurm (then an interrupt also cancels by name). */
void wh_interrupt_note_slurm(bool inside_allocation);

/* ---- output keeper: the first cap bytes and a ring of the last cap bytes ---- */

struct wh_keeper {
	char *head, *ring;
	size_t cap, head_len, ring_pos, total;
	/* optional: sees every byte as it is read, before any is cut (the check runner matches
	 * the fail regexes on the whole stream here) */
	void (*tap)(void *ctx, const char *buf, size_t n);
	void *tap_ctx;
};

enum wh_status wh_keeper_init(struct wh_keeper *k, size_t cap);
void wh_keeper_add(struct wh_keeper *k, const char *buf, size_t n);
/* head + "[... output cut ...]" + tail, NUL bytes replaced by spaces (malloc'd; NULL when
 * out of memory). */
char *wh_keeper_text(const struct wh_keeper *k);
void wh_keeper_release(struct wh_keeper *k);

/* ---- one child process in its own group ---- */

struct wh_proc_options {
	double timeout_s;   /* <= 0: none */
	double kill_grace_s; /* SIGTERM -> SIGKILL */
	/* Called about every 50 ms while the child runs (may be NULL); returning true stops
	 * the child like a timeout does, without marking it timed out. */
	bool (*tick)(void *arg);
	void *tick_arg;
};

struct wh_proc_result {
	int exit_code;  /* -1 when killed by a signal */
	int signal;
	bool timed_out, stopped; /* stopped: tick asked for it */
	double seconds;
};

/* Runs argv (PATH searched) with stdin from /dev/null and stdout + stderr into k. The
 * group is registered for interrupts while it runs and killed (SIGKILL) when the child
 * exits, so no grandchild outlives it. WH_ERR_CHECK when the command cannot be started or
 * the run is interrupted (the message says which). */
enum wh_status wh_proc_run(char *const argv[], const struct wh_proc_options *o, struct wh_keeper *k,
			   struct wh_proc_result *out);

#endif
