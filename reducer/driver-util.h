/* What the drivers (reduce, precision, build, triage) share besides the built-in check:
 * progress lines and JSON events, bounded text buffers, placeholder substitution, the
 * check's "broken" exits, a verdict cache, artifacts sorted into good/ and bad/, reference tensors written to
 * a folder. Written once so that the drivers print, name and sort things the same way.
 *
 * Ownership: struct wh_progress borrows its FILE; everything else is borrowed or returned
 * malloc'd as said. */
#ifndef WH_DRIVER_UTIL_H
#define WH_DRIVER_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "executor/executor.h"
#include "graph/hash.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"
#include "reducer/check.h"

/* ---- progress ---- */

struct wh_progress {
	FILE *log;   /* human progress (stderr); may be NULL */
	bool tty;    /* log is a terminal and no JSON: a live line is redrawn in place */
	bool json;   /* JSON lines events on stdout */
	double t0;   /* start (graph/os.h clock) */
};

void wh_progress_init(struct wh_progress *p, FILE *log, bool json);
/* One line on the log (clearing a live line first). */
void wh_progress_log(const struct wh_progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints e with "elapsed_s" added as one compact line on stdout when json; takes e. */
void wh_progress_event(const struct wh_progress *p, json_t *e);
/* Clears the live line (a terminal only). */
void wh_progress_clear(const struct wh_progress *p);

/* ---- text ---- */

/* snprintf into a fixed buffer, cut short rather than overflow (paths and texts built from
 * user-given names); wh_text_cat appends. */
void wh_text_printf(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void wh_text_cat(char *out, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Folds newlines into spaces: error lines are one line. */
void wh_text_one_line(char *s);
/* tmpl with every keys[i] replaced by vals[i]; a NULL vals[i] leaves keys[i] as it is
 * (malloc'd; NULL when out of memory). */
char *wh_text_subst(const char *tmpl, const char *const *keys, const char *const *vals, int n);
/* wh_text_subst for shell text: each value goes in single-quoted (wh_sh_quote), so a path
 * with a space or a ';' stays one word; a key the template already quotes ('{model}' or
 * "{model}") is replaced with its quotes. keys are the bare placeholders, n <= 16. */
char *wh_text_subst_shell(const char *tmpl, const char *const *keys, const char *const *vals, int n);

/* wh_sh_quote (reducer/check.h) into a malloc'd string that always fits; NULL when out of
 * memory. */
char *wh_text_sh_quote(const char *s);
/* The line a repro script starts with to call this whittle as "$WHITTLE":
 * WHITTLE=${WHITTLE:-'/abs/path/whittle'} (the binary that wrote it; the environment's
 * WHITTLE overrides), malloc'd; NULL when out of memory. */
char *wh_text_whittle_line(void);

/* ---- checks ---- */

/* Exit 126/127 (not a signal): a command inside the check was not found or cannot run,
 * which is a broken check, not a verdict. Records the error and returns WH_ERR_CHECK; WH_OK
 * for any other result. where: " on the original model" and the like, or "". */
enum wh_status wh_check_result_broken(const struct wh_check_result *r, const char *where);

/* ---- checks in flight (-j) ---- */

/* Calls fn(ctx, i) for every i < n, up to jobs at once, each on a thread of its own (jobs
 * <= 1 or n == 1: in order on the calling thread), taking the indices in order; returns when
 * every call is done. fn keeps its own status (wh_error is per thread): the caller reads
 * the results in index order afterwards, so what it decides does not depend on jobs. */
void wh_run_tasks(int jobs, uint32_t n, void (*fn)(void *ctx, uint32_t i), void *ctx);
/* Executor threads for each of jobs checks at once: threads (<= 0: every core) shared
 * among them, at least one each. */
int wh_threads_per_job(int threads, int jobs);

/* ---- verdicts by candidate ---- */

/* The verdicts of the candidates checked so far, by hash (a candidate model's canonical
 * hash, or a hash of a layer mask); runs and fails count the real runs of this session.
 * Caller-owned (_init/_release). */
struct wh_verdict_entry {
	struct wh_hash h;
	enum wh_verdict v;
	uint16_t runs, fails;
};

struct wh_verdict_cache {
	struct wh_verdict_entry *e;
	size_t n, cap;
};

void wh_verdict_cache_init(struct wh_verdict_cache *c);
void wh_verdict_cache_release(struct wh_verdict_cache *c);
/* The entry of h, or NULL (valid until the next put). */
struct wh_verdict_entry *wh_verdict_cache_find(const struct wh_verdict_cache *c, struct wh_hash h);
/* Records v for h (replacing an earlier verdict; runs and fails are kept). */
enum wh_status wh_verdict_cache_put(struct wh_verdict_cache *c, struct wh_hash h, enum wh_verdict v);

/* Adds the verdicts of a reduce replay (JSON lines, docs/formats.md) to c; *loaded_out
 * counts them. A replay of another model (its "original" is not model_hash; NULL: any), a
 * folder, or a line that is neither a header nor a verdict whittle wrote is an error; a
 * partial last line (a run killed mid-write) is ignored. */
enum wh_status wh_verdict_cache_load(struct wh_verdict_cache *c, const char *path, const char *model_hash,
				     unsigned *loaded_out);

/* ---- files ---- */

/* Checks before any work that path can be written as `what` ("the reduced model"): not a
 * folder, in a folder that exists and is writable. One line on failure. (That it is no file
 * the command reads is the front end's one rule: reducer/cli/paths.c.) */
enum wh_status wh_output_check(const char *path, const char *what);

/* Claims an artifacts folder for one run: creates it and locks it (dir/.whittle-lock, held
 * until wh_artifacts_unlock) so that a second run into it refuses at once; a folder holding
 * files of an earlier run is refused unless force, or unless resume names a file inside it
 * that this run continues from (the --load-replay file). *lock_out: the lock (-1 on error). */
enum wh_status wh_artifacts_claim(const char *dir, bool force, const char *resume, int *lock_out);
void wh_artifacts_unlock(int lock);
/* A fresh default artifacts folder name for cmd ("build" -> whittle-build-<date>-<time>-<pid>)
 * into out: two runs in one folder never share one unless the user names it. */
void wh_artifacts_default_dir(const char *cmd, char *out, size_t size);

/* Moves the files a check wrote into dir/<good|bad|skipped>/<seq>_<name> by the verdict
 * (a warning when one cannot be moved; missing files are skipped). */
void wh_artifacts_sort(const char *const *files, int n, const char *dir, enum wh_verdict v, uint32_t seq);
/* "good", "bad" or "skipped". */
const char *wh_verdict_dir(enum wh_verdict v);

/* Writes the reference values of model's inputs (initializers aside) or outputs, found by
 * name in ref, to dir (created); names ref lacks are left out. */
enum wh_status wh_reference_write(const struct wh_model *model, const struct wh_tensor_set *ref, bool outputs,
				  const char *dir);

/* Opens dir/name for writing a report; NULL with a warning when it cannot (a report that
 * cannot be written does not undo the work it reports). */
FILE *wh_report_open(const char *dir, const char *name);

/* Whether n is a Constant node of the default domain (kept aside by the searches). */
bool wh_node_is_constant(const struct wh_node *n);

/* ---- control flow ---- */

/* Looks inside If layers for reduce, precision and run's --mark-all diagnosis
 * (executor/control-flow.h): runs *m in FP32 on the samples and, when an If took the same
 * branch on every one, replaces *m (the caller's; the old model is destroyed) with the
 * model in which it is inlined. Writes each note as "<cmd>: <note>" on log (NULL: none);
 * a model whittle cannot run is left as it is, with a note. */
enum wh_status wh_driver_inline_ifs(const char *cmd, struct wh_model **m, const struct wh_engine_options *eo,
				    const struct wh_tensor_set *samples, uint32_t n_samples, FILE *log);

#endif
