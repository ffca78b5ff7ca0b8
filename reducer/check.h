/* The check runner: runs the user's check command on a candidate and turns its outcome into
 * a verdict.
 *
 * The command is an argv (or, with shell, one string run by /bin/sh -c) whose words may hold
 * the placeholders {model}, {inputs}, {golden}, {tactics} and {precisions}, replaced per run,
 * and {trt-inputs} / {trt-golden}: trtexec's --loadInputs / --loadRefOutputs specifications
 * ('name':file,...) over raw little-endian files of the tensors of {inputs} / {golden},
 * which the run writes into a temporary folder of its own (removed after it). The child
 * runs in its own process group; at the timeout the whole group gets SIGTERM, then SIGKILL
 * after a grace period, and the group is killed again after the child exits so that no
 * grandchild outlives the check. stdout and stderr are drained together through one pipe;
 * the first and the last bytes up to a cap are kept (memory stays flat whatever the check
 * prints). An exec failure is reported through a close-on-exec pipe (git's run-command
 * technique) and is a broken check, not a verdict.
 *
 * Verdicts, compatible with Polygraphy and git bisect: with fail patterns, the run fails when
 * a pattern matches the output (and, with fail codes, the exit code is one of them); without
 * patterns it fails on a non-zero exit not in the ignore list; exit 125 means "cannot tell"
 * (skip); a timeout is "cannot tell" unless timeout_is says otherwise; death by a signal is a
 * failure (a crash is a bug) unless patterns decide.
 *
 * With the slurm launcher the same command runs as a Slurm step or job and its output comes
 * back through a file; cluster faults become "cannot tell" after retries, never pass or fail
 * (reducer/launcher-slurm.h). Every process and job is registered for interrupts
 * (reducer/launcher.h): after an interrupt no check starts and none gives a verdict.
 *
 * struct wh_check is created from options and owned by the caller (wh_check_destroy). Runs
 * are independent and may happen from several threads at once. */
#ifndef WH_CHECK_H
#define WH_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/status.h"

enum wh_verdict { WH_VERDICT_PASS = 0, WH_VERDICT_FAIL = 1, WH_VERDICT_SKIP = 2 };

enum wh_timeout_is { WH_TIMEOUT_SKIP = 0, WH_TIMEOUT_FAIL, WH_TIMEOUT_PASS };

/* Where a check runs: a local process group, or Slurm work (reducer/launcher-slurm.h: a
 * step inside an allocation, a job outside one). */
enum wh_launcher { WH_LAUNCHER_LOCAL = 0, WH_LAUNCHER_SLURM };

struct wh_check_options {
	char **argv;   /* command words (borrowed), NULL-terminated */
	int argc;
	bool shell;    /* run argv joined by spaces with /bin/sh -c */
	const char *const *fail_regex; /* PCRE2 patterns (borrowed) */
	int n_fail_regex;
	const int *fail_codes;
	int n_fail_codes;
	const int *ignore_codes;
	int n_ignore_codes;
	double timeout_s;           /* <= 0: none */
	enum wh_timeout_is timeout_is;
	double kill_grace_s;        /* SIGTERM -> SIGKILL delay; default 2 s */
	size_t output_cap;          /* bytes kept of the head and of the tail each; default 1 MiB */
	enum wh_launcher launcher;
	/* slurm only */
	const char *slurm_args;     /* extra srun/sbatch flags, split on blanks (borrowed) */
	const char *shared_dir;     /* staging folder all nodes see; NULL: the folder of {model},
				     * else the current folder */
	int retries;                /* cluster faults retried before "cannot tell" (0: none; the
				     * front end's default is 2) */
	double queue_timeout_s;     /* pending longer: cancelled, cannot tell; <= 0: no limit */
};

struct wh_check_vars {
	/* NULL: placeholder left as is */
	const char *model, *inputs, *golden, *tactics, *precisions;
	/* Folders of raw tensor files (wh_check_write_trt_dir) for {trt-inputs} / {trt-golden};
	 * NULL: wh_check_run writes them from inputs / golden when the command uses them. */
	const char *trt_inputs, *trt_golden;
	/* The folder that relative trt_inputs / trt_golden are under, for whittle to list them
	 * (a repro bundle's command line names them relative to the bundle); NULL: the current
	 * folder. */
	const char *base;
};

struct wh_check_result {
	enum wh_verdict verdict;
	int exit_code;      /* -1 when killed by a signal */
	int signal;         /* 0 when it exited */
	bool timed_out;
	double seconds;
	size_t output_bytes;     /* total printed */
	char *output;            /* head + tail kept, NUL-terminated, malloc'd */
	const char *why;         /* static text: what decided the verdict */
	int attempts;            /* slurm: jobs or steps it took (retries + 1); local: 1 */
	bool cluster_fault;      /* slurm: cannot tell because of the cluster (logged) */
	bool queue_timed_out;    /* slurm: the fault was the queue (--queue-timeout) on every attempt */
};

struct wh_check;

/* Compiles the patterns once; WH_ERR_USAGE naming a bad pattern. */
enum wh_status wh_check_create(const struct wh_check_options *o, struct wh_check **out);
void wh_check_destroy(struct wh_check *c);
/* Runs the check once. WH_ERR_CHECK when the command cannot be started (not found, not
 * executable): the error message says so. */
enum wh_status wh_check_run(const struct wh_check *c, const struct wh_check_vars *vars,
			    struct wh_check_result *out);
void wh_check_result_release(struct wh_check_result *r);
const char *wh_verdict_name(enum wh_verdict v);
/* Whether the command holds the placeholder (e.g. "{golden}"), in any word. */
bool wh_check_uses(const struct wh_check *c, const char *placeholder);
/* trtexec's data: every tensor file of tensor_dir (.pb/.npy, each naming its tensor) written
 * to raw_dir (created) as <escaped name>.raw, its bytes as wh_tensor_write_raw lays them out.
 * WH_ERR_INVALID for a file without a stored name (input_<k>.pb), or a name trtexec's
 * specification cannot hold (a ',' or a '\''). */
enum wh_status wh_check_write_trt_dir(const char *tensor_dir, const char *raw_dir);
/* The --loadInputs / --loadRefOutputs specification of a folder that wh_check_write_trt_dir
 * wrote: 'name':<raw_dir>/<file>, comma-separated, in file-name order; raw_dir as given
 * (relative stays relative), listed under base when relative (base NULL: the current
 * folder). malloc'd into *out. */
enum wh_status wh_check_trt_spec(const char *raw_dir, const char *base, char **out);
/* For a repro bundle in dir whose v->inputs / v->golden (relative to dir) are written: when
 * the command uses {trt-inputs} / {trt-golden}, writes dir/trt-inputs/ / dir/trt-golden/
 * and points v at them (relative, v->base = dir), so that wh_check_command_line names the
 * bundle's own files. */
enum wh_status wh_check_bundle_trt(const struct wh_check *c, const char *dir, struct wh_check_vars *v);
/* s single-quoted for /bin/sh into out (NUL-terminated; cut short to fit size). */
void wh_sh_quote(const char *s, char *out, size_t size);
/* The command with placeholders replaced, shell-quoted, for logs and repro bundles
 * (malloc'd). */
char *wh_check_command_line(const struct wh_check *c, const struct wh_check_vars *vars);

#endif
