/* The `slurm` launcher of the check runner: each check is a job step (`srun --exclusive -n1`)
 * inside an allocation (SLURM_JOB_ID set), or a job of its own (`sbatch`, then polled with
 * squeue) outside one. Private to the check runner (reducer/check.c).
 *
 * Per check a folder in the shared folder (every node sees it) holds a small sh script that
 * writes "started" (the job or step id), runs the check command with its output into
 * "output" and writes its exit status into "status". The placeholders' files are staged
 * there (hard links first) when they lie outside the shared folder.
 *
 * Outcomes: "status" written -> the check ran (its exit status; a status of 128+N is death by
 * signal N, as sh reports it). No status: a job cut by its time limit (TIMEOUT, or srun's
 * "DUE TO TIME LIMIT") is a timeout; a job cancelled from outside, failed to start, a node
 * failure, a preemption or a job that vanished is a fault, retried (retries) and then
 * "cannot tell"; pending longer than queue_timeout_s is cancelled and is a fault too.
 * whittle's own --timeout counts from the start of the check and cancels it (timeout).
 * A submission that Slurm refuses before any check of this runner got through (e.g. a bad
 * partition) is a broken check: WH_ERR_CHECK with Slurm's own line. */
#ifndef WH_LAUNCHER_SLURM_H
#define WH_LAUNCHER_SLURM_H

#include <stdbool.h>

#include "reducer/check.h"
#include "reducer/launcher.h"

struct wh_slurm;

struct wh_slurm_outcome {
	bool ran;          /* status written: exit_code/signal are the check's */
	int exit_code, signal;
	bool timed_out;
	bool fault;        /* cannot tell: why says which fault */
	bool queue_timeout; /* the fault: pending past --queue-timeout (on every attempt, after retries) */
	char why[320];
	double seconds;
	int attempts;
};

enum wh_status wh_slurm_create(const struct wh_check_options *o, struct wh_slurm **out);
void wh_slurm_destroy(struct wh_slurm *s);
/* Runs check c on vars (staged first) as Slurm work; the check's output goes into k.
 * WH_ERR_CHECK when Slurm refuses the very first check, or on an interrupt. */
enum wh_status wh_slurm_run(struct wh_slurm *s, const struct wh_check *c, const struct wh_check_vars *vars,
			    struct wh_keeper *k, struct wh_slurm_outcome *out);

/* The check runner's command words with vars substituted (reducer/check.c; malloc'd,
 * NULL-terminated; wh_check_free_argv). */
enum wh_status wh_check_build_argv(const struct wh_check *c, const struct wh_check_vars *vars, char ***out);
void wh_check_free_argv(char **v);

#endif
