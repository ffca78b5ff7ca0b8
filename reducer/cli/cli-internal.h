/* Private to reducer/: shared pieces of the subcommands (cmd-*.c). */
#ifndef WH_CLI_INTERNAL_H
#define WH_CLI_INTERNAL_H

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "graph/ir.h"
#include "graph/shape.h"
#include "graph/status.h"
#include "executor/precision.h"
#include "reducer/cli/options.h"

enum wh_exit {
	WH_EXIT_OK = 0,
	WH_EXIT_FAILS = 1,
	WH_EXIT_USAGE = 2,
	WH_EXIT_INPUT = 3,
	WH_EXIT_CHECK = 4,
};

struct wh_cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	uint32_t bit;         /* WH_CMD_* (options.h): which rows of the option table are its */
	const char *summary;
};

/* Usage errors take one way: the place that finds one records it with wh_cli_usage_error
 * (WH_ERR_USAGE, "<cmd>: <what>: <why> (<what to do>)") and passes the status up; the
 * command prints it with wh_cli_fail, as every other error (exit 2). */

/* Prints the recorded error (wh_error_message) as the one error line and maps the status
 * to an exit code. */
int wh_cli_fail(enum wh_status st);
/* Records "<cmd>: <fmt...>" (cmd may be NULL) as a usage error; returns WH_ERR_USAGE. */
enum wh_status wh_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int wh_exit_for(enum wh_status st);


/* Loads a model and, when shapes is not NULL/empty, binds the input shapes; always runs
 * shape inference (so extraction and inspection see types). */
enum wh_status wh_cli_load_model(const char *path, const char *input_shapes, struct wh_model **out);

/* The check command's options, shared by reduce, precision, build, repeat and triage (their
 * rows in options.c): wh_cli_parse hands every option to wh_cli_check_option first.
 * Caller-owned, no heap (the lists hold at most 64 entries). */
#include "reducer/check.h"

struct wh_cli_check_opts {
	struct wh_check_options co;
	const char *regex[64];
	int fail_codes[64], ignore_codes[64];
	int n_regex, n_fail, n_ignore;
	int jobs;            /* -j N: checks (and builds) in flight, 1..64 (default 1); not a check
			      * option in wh_cli_check_opts_given: the built-in check takes it too */
	bool launcher_given; /* any launcher option, for wh_cli_check_opts_given */
	bool retries_given;  /* else finish sets the default, 2, for slurm */
};

/* getopt values of the launcher options: above every character, so no command's own short
 * or numbered options collide with them */
enum {
	WH_CLI_OPT_LAUNCHER = 0x5300,
	WH_CLI_OPT_SLURM_ARGS,
	WH_CLI_OPT_SHARED_DIR,
	WH_CLI_OPT_RETRIES,
	WH_CLI_OPT_QUEUE_TIMEOUT,
};

/* Help text of the launcher options, for each command's usage. */
#define WH_CLI_LAUNCHER_HELP                                                                           \
	"launcher:\n"                                                                                  \
	"  -j, --jobs N             checks in flight at once, 1..64 (default 1): N processes, steps\n" \
	"                           or jobs (build: N builds and their checks); the answer is the\n"  \
	"                           same for any N\n"                                                \
	"  --launcher L             where checks run: local (default; process groups) or slurm (a\n"   \
	"                           step per check inside an allocation, else a job per check)\n"     \
	"  --slurm-args \"ARGS\"     srun/sbatch flags for every check (e.g. \"-p gpu --gres=gpu:1\")\n" \
	"  --shared-dir DIR         folder every node sees, where checks are staged (default: the\n"  \
	"                           work folder of the candidates)\n"                                 \
	"  --retries N              a job that fails to start, a node failure or a preemption is\n"   \
	"                           retried N times (default 2), then counts as cannot tell\n"        \
	"  --queue-timeout S        cancel a job pending longer than S seconds: cannot tell\n"

void wh_cli_check_opts_init(struct wh_cli_check_opts *o);
/* 1: consumed; 0: not a check option; -1: a bad value (recorded with wh_cli_usage_error). */
int wh_cli_check_option(struct wh_cli_check_opts *o, const char *cmd, int c, const char *arg);
/* Whether any check option was given (an error without --check). */
bool wh_cli_check_opts_given(const struct wh_cli_check_opts *o);
/* Sets the command words and points the options at the lists. */
void wh_cli_check_opts_finish(struct wh_cli_check_opts *o, char **words, int n_words);

/* The help lines of the check options (after a command's "--check CMD ..." line). */
#define WH_CLI_CHECK_HELP                                                                                 \
	"  --shell                  run the check command through /bin/sh -c\n"                               \
	"  --fail-regex RE          the check fails when RE (PCRE2) matches its output (repeatable)\n"        \
	"  --fail-code N            with --fail-regex: also require one of these exit codes; alone:\n"        \
	"                           the check fails on these exit codes only (repeatable)\n"                  \
	"  --ignore-fail-code N     a non-zero exit that does not mean failure (repeatable)\n"                \
	"  --timeout S              kill the check (and its children) after S seconds\n"                      \
	"  --timeout-is V           skip (default), fail or pass\n"                                          \
	WH_CLI_LAUNCHER_HELP

struct wh_run_opts;
struct wh_cmd_ctx;
struct wh_cli_save_opts;

/* A path given to an option marked in options.c as read or written (enum wh_cli_path). */
struct wh_cli_path_arg {
	const struct wh_cli_option *opt;
	const char *arg; /* into argv; NULL for --save-external-data without a value */
};

struct wh_cli_args {
	struct wh_cli_path_arg paths[160]; /* every path option given, in order */
	int n_paths;
	char **operands;      /* into argv */
	char **check;         /* the words after --check (finished into check_opts); NULL: none */
	int n_check;
	bool help;            /* the help was printed: exit 0 */
};

/* A command: its name, help and operands, the option groups it takes and its own steps.
 * Its options are its rows in options.c's table (by the command's WH_CMD_* bit, cli.c). */
struct wh_cli_spec {
	const char *cmd;
	const char *help;                 /* printed on stdout for -h/--help */
	const char *operands;             /* e.g. "one MODEL": exactly these; NULL: none */
	int n_operands;
	bool check;                       /* takes --check CMD ... (the rest of the line) */
	struct wh_cli_check_opts *check_opts; /* the check options; NULL: not taken */
	struct wh_run_opts *run_opts;     /* the run options; NULL: not taken */
	struct wh_cli_save_opts *save_opts; /* how saved models store weights; NULL: not taken */
	enum wh_precision precision;      /* the run options' default --precision */
	/* the command's own options: WH_OK or a usage error (wh_cli_usage_error) */
	enum wh_status (*own)(void *self, int c, const char *arg);
	/* the rules between the options, once parsed (may be NULL) */
	enum wh_status (*validate)(void *self, const struct wh_cli_args *a);
	/* the command's work; what it holds in c is released after it */
	enum wh_status (*go)(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c);
	void *self;                       /* the command's own state, for own/validate/go */
};

/* Parses argv (argv[0] is the command's name) by spec: every option is offered to the check
 * options, then to the run options, then to own; the operands are counted; --check without
 * a command and check options without --check are refused. The groups must be
 * initialised (wh_cli_command does). */
enum wh_status wh_cli_parse(const struct wh_cli_spec *spec, int argc, char **argv, struct wh_cli_args *out);

/* What a command holds while it runs: wh_cli_command gives `go` an empty one and releases
 * it after, so that a command's error paths free nothing of it themselves. */
struct wh_cmd_ctx {
	struct wh_model *model;
	struct wh_check *check;           /* the --check command, or NULL */
	char *check_display;              /* its command line, for messages */
	struct wh_tensor_set *samples;    /* n_samples input samples, or NULL */
	uint32_t n_samples;
	size_t n_generated;               /* how many input tensors were generated */
	bool fails;                       /* a verdict failed: the command exits 1 */
};

/* What wh_cmd_ctx_load loads besides the model. */
enum wh_cmd_samples {
	WH_SAMPLES_NONE,
	WH_SAMPLES_ONE, /* one sample (a folder of sample folders is a usage error) */
	WH_SAMPLES_ALL, /* every sample of --load-inputs */
};

/* Creates the check of --check into c->check and c->check_display; nothing without
 * --check. */
enum wh_status wh_cmd_ctx_check(struct wh_cmd_ctx *c, const struct wh_cli_args *a, const struct wh_cli_check_opts *o);
/* Loads the model at path (wh_run_opts_load_model) and the samples asked for
 * (wh_run_opts_load_inputs, wh_run_opts_load_sample). */
enum wh_status wh_cmd_ctx_load(struct wh_cmd_ctx *c, const struct wh_run_opts *o, const char *path, enum wh_cmd_samples want);
void wh_cmd_ctx_release(struct wh_cmd_ctx *c);

/* The one rule for output paths (paths.c), run by wh_cli_command after validate and before
 * go, so before anything is read or written: no path that an option marked WH_PATH_WRITE,
 * WH_PATH_WRITE_DIR or WH_PATH_SAVE_NAME writes may be a file or folder the command reads (the
 * MODEL operand, each external-data file it names, the operands and every path an option
 * marked WH_PATH_READ gives), nor a path another output option writes. Compared by device
 * and inode (links and "./x" included) and by resolved path. A refusal is one usage error,
 * "<cmd>: <option> '<path>': <why> (<what to do>)". */
enum wh_status wh_cli_check_paths(const struct wh_cli_spec *spec, const struct wh_cli_args *a);

/* A whole command: initialises the groups, parses, validates, goes, releases; returns
 * the exit code (0, 1 when c->fails, else the status's). */
int wh_cli_command(const struct wh_cli_spec *spec, int argc, char **argv);

/* The WH_CMD_* bit of the command `name` (cli.c's command table), or 0. */
uint32_t wh_cli_cmd_bit(const char *name);

/* --artifacts FILE (reduce, build, repeat): appends arg to files (64 entries at most). */
enum wh_status wh_cli_artifact(const char *cmd, const char **files, int *n, const char *arg);
/* --artifacts with -j above 1 is a usage error: the files are fixed paths that every check
 * in flight writes, so one check's file would be sorted by another's verdict (or lost). */
enum wh_status wh_cli_artifacts_jobs(const char *cmd, int n_artifacts, int jobs);

/* Prints root on stdout as one text, keys in their order (json_dumps flags: JSON_INDENT(1)
 * or JSON_COMPACT), and takes root. */
void wh_cli_print_json(json_t *root, size_t flags);

/* Splits "a,b,c" into a malloc'd array of malloc'd strings. */
char **wh_cli_split(const char *s, uint32_t *n_out);
void wh_cli_free_split(char **v, uint32_t n);
bool wh_cli_parse_double(const char *s, double *out);
bool wh_cli_parse_int(const char *s, long long lo, long long hi, long long *out);

/* Adds seeded uniform random tensors in [lo, hi) for every graph input of m missing from
 * set (splitmix64, so the same seed gives the same inputs everywhere). */
struct wh_tensor_set;
enum wh_status wh_cli_random_inputs(const struct wh_model *m, uint64_t seed, double lo, double hi,
				    struct wh_tensor_set *set);
/* The data samples of --load-inputs DIR: a folder of tensors is one sample, a folder of
 * folders one sample each (sorted by name); dir NULL: one empty sample. With a model, each
 * file is read as the value it declares and matched to an input strictly by name
 * (wh_tensor_set_match_names: a file for no input is an error); an input a sample lacks is
 * an error unless flags has WH_SAMPLES_FILL_MISSING (or dir is NULL), and then generated
 * (wh_cli_random_inputs with seed + k for sample k), which one warning line names. With
 * WH_SAMPLES_REFERENCE the files may name any tensor of m and nothing is generated; without
 * a model the files are tensors and nothing is matched or generated. *out (n_out sets) belongs to the caller:
 * wh_cli_samples_free. *n_generated_out (may be NULL): how many tensors were generated. */
/* Where "--check" stands in argv (the check command is everything after it), or -1. */
/* The builder's timing options (run, build, triage): name is "timing-iterations" (1..64) or
 * "timing-tolerance" (a fraction >= 0, or inf: every eligible tactic is equally fast). */
struct wh_build_options;
enum wh_status wh_cli_timing_option(const char *cmd, const char *name, const char *arg, struct wh_build_options *bo);
int wh_cli_check_at(int argc, char **argv);
/* flags of wh_cli_load_samples */
#define WH_SAMPLES_FILL_MISSING 1u /* inputs without a file are generated (--fill-missing) */
#define WH_SAMPLES_REFERENCE 2u    /* the files are reference values of any tensor of m; none generated */
enum wh_status wh_cli_load_samples(const struct wh_model *m, const char *dir, unsigned flags, uint64_t seed, double lo, double hi,
				   struct wh_tensor_set **out, uint32_t *n_out, size_t *n_generated_out);
void wh_cli_samples_free(struct wh_tensor_set *sets, uint32_t n);

/* The precision answer in the forms other tools take (cmd-convert.c; `convert` and
 * `precision`). Paths are borrowed from argv; NULL: not written. */
struct wh_cli_answer_opts {
	const char *model_path;  /* the strongly typed model (convert's -o, precision's --save-model) */
	const char *exclusions;  /* --save-exclusions: ModelOpt AutoCast's --nodes_to_exclude */
	const char *trt_string;  /* --save-layer-precisions-string: trtexec's --layerPrecisions value */
	const char *json;        /* --save-layer-precisions: the layer-precisions JSON */
	bool convert_io;         /* --no-keep-io-types */
	/* the forms list the layers the written model keeps in fp32 because ONNX gives their op
	 * no target type, besides the answer's (convert: yes; precision: the answer only) */
	bool forced_in_forms;
};
/* The output-path rule (wh_output_check) for every path given. */
enum wh_status wh_cli_answer_check(const struct wh_cli_answer_opts *o);
/* Writes what o asks for: the model m with every float layer in target (fp16 or bf16) except
 * answer's layers (fp32 only: another precision is a usage error), and the forms, listing
 * the layers kept in fp32 in topological order. Prints one summary line and the counts
 * (layers kept for want of a type, clamped weights) on stderr. */
struct wh_precision_config;
struct wh_save_opts;
enum wh_status wh_cli_answer_write(const char *cmd, const struct wh_model *m, enum wh_precision target,
				   const struct wh_precision_config *answer, const struct wh_cli_answer_opts *o,
				   const struct wh_save_opts *save);

int wh_cmd_reduce(int argc, char **argv);
int wh_cmd_precision(int argc, char **argv);
int wh_cmd_inspect(int argc, char **argv);
int wh_cmd_extract(int argc, char **argv);
int wh_cmd_sanitize(int argc, char **argv);
int wh_cmd_convert(int argc, char **argv);
int wh_cmd_run(int argc, char **argv);
int wh_cmd_compare(int argc, char **argv);
int wh_cmd_triage(int argc, char **argv);
int wh_cmd_build(int argc, char **argv);
int wh_cmd_diff_tactics(int argc, char **argv);
int wh_cmd_repeat(int argc, char **argv);

#endif
