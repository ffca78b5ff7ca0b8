/* Private to the front end: the one table of every command's options (options.c).
 *
 * Each row names a long option, whether it takes a value, the code getopt_long returns
 * for it and the commands that accept it (a mask of WH_CMD_*). wh_cli_parse builds each
 * command's getopt table from the rows of that command, so no cmd-<name>.c lists its
 * options: a new option is one row here (and, for a command's own option, one WH_OPT_*
 * code below and one case in that command's switch). The group options keep their codes
 * (run-opts.h, calib-opts.h, cli-internal.h's check options) and their parsers. */
#ifndef WH_CLI_OPTIONS_H
#define WH_CLI_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One bit per subcommand (cli.c's command table gives each its bit). */
enum wh_cmd_bit {
	WH_CMD_INSPECT = 1u << 0,
	WH_CMD_EXTRACT = 1u << 1,
	WH_CMD_SANITIZE = 1u << 2,
	WH_CMD_RUN = 1u << 3,
	WH_CMD_COMPARE = 1u << 4,
	WH_CMD_REDUCE = 1u << 5,
	WH_CMD_BUILD = 1u << 6,
	WH_CMD_DIFF_TACTICS = 1u << 7,
	WH_CMD_REPEAT = 1u << 8,
	WH_CMD_PRECISION = 1u << 9,
	WH_CMD_TRIAGE = 1u << 10,
	WH_CMD_CONVERT = 1u << 11,
};

/* The getopt_long codes of the commands' own long-only options: out of the range of
 * characters, so that none is also a short option letter (a command's letters are its real
 * short options: -o, -j, -h), and below the group codes (run-opts.h: 0x1b00, calib-opts.h:
 * 0x1c00, save-opts.h: 0x1d00, the launcher's in cli-internal.h: 0x5300). An option that several commands take has one code. */
enum wh_cli_opt {
	WH_OPT_ARTIFACTS = 0x1a00,
	WH_OPT_ARTIFACTS_DIR,
	WH_OPT_BAD,
	WH_OPT_BIND_INPUT,
	WH_OPT_BUILD_CMD,
	WH_OPT_BUILD_SEED,
	WH_OPT_BUILD_TIMEOUT,
	WH_OPT_BUILDS,
	WH_OPT_COMPARE,
	WH_OPT_CONFIRM,
	WH_OPT_DIR,
	WH_OPT_DIRECTION,
	WH_OPT_FOLD_CONSTANTS,
	WH_OPT_FORCE,
	WH_OPT_FP16_ACCUMULATE,
	WH_OPT_GOOD,
	WH_OPT_HASH_OUTPUTS,
	WH_OPT_PROFILE,
	WH_OPT_HIGHER,
	WH_OPT_INPUTS,
	WH_OPT_ITERATIONS,
	WH_OPT_JSON,
	WH_OPT_LOAD_REPLAY,
	WH_OPT_LOAD_TACTICS,
	WH_OPT_MARK_ALL,
	WH_OPT_MAX_BUILDS,
	WH_OPT_MAX_RUNS,
	WH_OPT_MAX_SUSPECTS,
	WH_OPT_MIN_GOOD,
	WH_OPT_MODE,
	WH_OPT_NO_CONFIRM,
	WH_OPT_NO_KEEP_IO_TYPES,
	WH_OPT_NO_GRAPHVIZ,
	WH_OPT_NO_PRECISION_SEARCH,
	WH_OPT_NO_REDUCE_INPUTS,
	WH_OPT_NO_REDUCE_OUTPUTS,
	WH_OPT_OUTPUTS,
	WH_OPT_PIN_CMD,
	WH_OPT_PRIOR,
	WH_OPT_REFERENCE,
	WH_OPT_REFERENCE_MEMORY,
	WH_OPT_REPEAT,
	WH_OPT_REPORT,
	WH_OPT_SAVE_EXCLUSIONS,
	WH_OPT_SAVE_INPUTS,
	WH_OPT_SAVE_LAYER_PRECISIONS,
	WH_OPT_SAVE_LAYER_PRECISIONS_STRING,
	WH_OPT_SAVE_MODEL,
	WH_OPT_SAVE_OUTPUTS,
	WH_OPT_SAVE_REPLAY,
	WH_OPT_SAVE_TACTICS,
	WH_OPT_SHOW,
	WH_OPT_SHOW_HISTOGRAM,
	WH_OPT_STRICT_TACTICS,
	WH_OPT_TACTICS,
	WH_OPT_TIMING_CACHE,
	WH_OPT_BLOCK_TACTICS,
	WH_OPT_TIMING_ITERATIONS,
	WH_OPT_TIMING_TOLERANCE,
	WH_OPT_TOP,
	WH_OPT_UNTIL,
	WH_OPT_END, /* keep last, below 0x1b00 */
};

/* What an option's value is to the one rule on output paths (paths.c): the files and
 * folders a command reads, and those it writes. An option that writes a file or folder is
 * marked here, in its row, so no writer can escape the rule (tests/e2e-overwrite.sh loops
 * over these marks). */
enum wh_cli_path {
	WH_PATH_READ = 1u << 0,      /* a file or folder the command reads */
	WH_PATH_WRITE = 1u << 1,     /* a file the command writes (or replaces, or moves away) */
	WH_PATH_WRITE_DIR = 1u << 2, /* a folder the command creates or writes files into */
	WH_PATH_SAVE_NAME = 1u << 3, /* a weights file name next to each model the command saves */
	WH_PATH_RESUMES = 1u << 4,   /* with WRITE: may be a file another option reads, which the
				      * run continues (--save-replay F --load-replay F) */
	WH_PATH_FOLDER = 1u << 5,    /* with READ: may be a folder of files read (no output may
				      * lie inside it) */
};

struct wh_cli_option {
	const char *name; /* without the dashes */
	int has_arg;      /* no_argument, required_argument or optional_argument */
	int code;         /* what getopt_long returns: WH_OPT_*, a group's code, or the letter */
	bool letter;      /* also the short option -<code> */
	uint32_t cmds;    /* the WH_CMD_* bits of the commands that take it */
	uint32_t path;    /* WH_PATH_* bits: what its value is to the output-path rule; 0: not a path */
};

/* Fills longopts (n_longopts entries, the last left all zero) and shortopts (getopt
 * syntax, NUL-terminated) with the options of the command `cmd` (one WH_CMD_* bit).
 * Returns false when the arrays are too small. */
bool wh_cli_options_for(uint32_t cmd, struct option *longopts, size_t n_longopts, char *shortopts, size_t n_shortopts);

/* The row of the option that getopt_long returned `code` for in command `cmd`, or NULL. */
const struct wh_cli_option *wh_cli_option_of(uint32_t cmd, int code);

#endif
