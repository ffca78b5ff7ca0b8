/* Private to reducer/: shared pieces of the subcommands (cmd-*.c). */
#ifndef WH_CLI_INTERNAL_H
#define WH_CLI_INTERNAL_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "graph/ir.h"
#include "graph/shape.h"
#include "graph/status.h"

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

/* The check command's options, shared by reduce, precision, build, repeat and triage: each
 * lists WH_CLI_CHECK_LONGOPTS among its long options and hands every option to
 * wh_cli_check_option first (wh_cli_parse does). Caller-owned, no heap (the lists hold at
 * most 64 entries). */
#include "reducer/check.h"

struct wh_cli_check_opts {
	struct wh_check_options co;
	const char *regex[64];
	int fail_codes[64], ignore_codes[64];
	int n_regex, n_fail, n_ignore;
};

#define WH_CLI_CHECK_LONGOPTS                                                   \
	{"shell", no_argument, NULL, 'S'}, {"fail-regex", required_argument, NULL, 'r'}, \
	{"fail-code", required_argument, NULL, 'f'},                            \
	{"ignore-fail-code", required_argument, NULL, 'i'},                     \
	{"timeout", required_argument, NULL, 'T'},                              \
	{"timeout-is", required_argument, NULL, 'U'}

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
	"  --timeout-is V           skip (default), fail or pass\n"

/* One getopt_long loop for every command. The getopt codes of the commands' own long-only
 * options are WH_CLI_OPT_BASE and up, so that none of them is also a short option letter
 * (a command's letters are its real short options: -o, -j, -h). */
#define WH_CLI_OPT_BASE 0x1a00
#define WH_CLI_HELP_LONGOPTS {"help", no_argument, NULL, 'h'}, {0, 0, 0, 0}

struct wh_run_opts;

struct wh_cli_spec {
	const char *cmd;
	const char *help;                 /* printed on stdout for -h/--help */
	const char *shortopts;            /* the command's short options (getopt syntax), or "" */
	const struct option *longopts;    /* ends with WH_CLI_HELP_LONGOPTS */
	const char *operands;             /* e.g. "one MODEL": exactly these; NULL: none */
	int n_operands;
	bool check;                       /* takes --check CMD ... (the rest of the line) */
	struct wh_cli_check_opts *check_opts; /* the check options; NULL: not taken */
	struct wh_run_opts *run_opts;     /* the run options; NULL: not taken */
	/* the command's own options: WH_OK or a usage error (wh_cli_usage_error) */
	enum wh_status (*own)(void *ctx, int c, const char *arg);
	void *ctx;
};

struct wh_cli_args {
	char **operands;      /* into argv */
	char **check;         /* the words after --check (finished into check_opts); NULL: none */
	int n_check;
	bool help;            /* the help was printed: exit 0 */
};

/* Parses argv (argv[0] is the command's name) by spec: every option is offered to the check
 * options, then to the run options, then to own; the operands are counted; --check without
 * a command and check options without --check are refused. */
enum wh_status wh_cli_parse(const struct wh_cli_spec *spec, int argc, char **argv, struct wh_cli_args *out);
/* The exit code of a command that only failed or succeeded. */
int wh_cli_exit(enum wh_status st);

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
 * file is read as the value it declares and the inputs a sample lacks are generated
 * (wh_cli_random_inputs with seed + k for sample k); without one (reference folders) the
 * files are tensors and nothing is generated. *out (n_out sets) belongs to the caller:
 * wh_cli_samples_free. *n_generated_out (may be NULL): how many tensors were generated. */
/* Where "--check" stands in argv (the check command is everything after it), or -1. */
/* The builder's timing options (run, build, triage): name is "timing-iterations" (1..64) or
 * "timing-tolerance" (a fraction >= 0, or inf: every eligible tactic is equally fast). */
struct wh_build_options;
enum wh_status wh_cli_timing_option(const char *cmd, const char *name, const char *arg, struct wh_build_options *bo);
int wh_cli_check_at(int argc, char **argv);
enum wh_status wh_cli_load_samples(const struct wh_model *m, const char *dir, uint64_t seed, double lo, double hi,
				   struct wh_tensor_set **out, uint32_t *n_out, size_t *n_generated_out);
void wh_cli_samples_free(struct wh_tensor_set *sets, uint32_t n);

int wh_cmd_reduce(int argc, char **argv);
int wh_cmd_precision(int argc, char **argv);
int wh_cmd_inspect(int argc, char **argv);
int wh_cmd_extract(int argc, char **argv);
int wh_cmd_sanitize(int argc, char **argv);
int wh_cmd_run(int argc, char **argv);
int wh_cmd_compare(int argc, char **argv);
int wh_cmd_triage(int argc, char **argv);
int wh_cmd_build(int argc, char **argv);
int wh_cmd_diff_tactics(int argc, char **argv);
int wh_cmd_repeat(int argc, char **argv);

#endif
