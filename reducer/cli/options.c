#include "reducer/cli/options.h"

#include <string.h>

#include "reducer/cli/calib-opts.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"
#include "reducer/cli/save-opts.h"

/* Which commands take a group of options. */
#define ALL 0xffffffffu
#define RUNS (WH_CMD_RUN | WH_CMD_REDUCE | WH_CMD_PRECISION | WH_CMD_BUILD | WH_CMD_TRIAGE)
#define SHAPES (RUNS | WH_CMD_EXTRACT | WH_CMD_SANITIZE | WH_CMD_INSPECT | WH_CMD_CONVERT)
#define TOLERANCES (RUNS | WH_CMD_COMPARE)
#define CHECKS (WH_CMD_REDUCE | WH_CMD_PRECISION | WH_CMD_BUILD | WH_CMD_REPEAT | WH_CMD_TRIAGE)
#define LAYER_PRECISIONS (WH_CMD_RUN | WH_CMD_REDUCE | WH_CMD_BUILD | WH_CMD_CONVERT)
#define TIMING (WH_CMD_RUN | WH_CMD_BUILD | WH_CMD_TRIAGE)
#define SAVES (WH_CMD_EXTRACT | WH_CMD_SANITIZE | WH_CMD_REDUCE | WH_CMD_TRIAGE | WH_CMD_CONVERT | WH_CMD_PRECISION)
/* the precision answer in the forms other tools take (cmd-convert.c) */
#define ANSWERS (WH_CMD_CONVERT | WH_CMD_PRECISION)

/* Sorted by name within each part; a new option is one row. The last field, where there is
 * one, marks a path the command reads or writes (options.h, enum wh_cli_path): every option
 * that writes a file or folder must carry its mark. */
static const struct wh_cli_option options[] = {
	{"help", no_argument, 'h', true, ALL},
	/* the check command's options (cli.c, wh_cli_check_option) */
	{"fail-code", required_argument, 'f', false, CHECKS},
	{"fail-regex", required_argument, 'r', false, CHECKS},
	{"ignore-fail-code", required_argument, 'i', false, CHECKS},
	{"jobs", required_argument, 'j', true, CHECKS},
	{"launcher", required_argument, WH_CLI_OPT_LAUNCHER, false, CHECKS},
	{"queue-timeout", required_argument, WH_CLI_OPT_QUEUE_TIMEOUT, false, CHECKS},
	{"retries", required_argument, WH_CLI_OPT_RETRIES, false, CHECKS},
	{"shared-dir", required_argument, WH_CLI_OPT_SHARED_DIR, false, CHECKS},
	{"shell", no_argument, 'S', false, CHECKS},
	{"slurm-args", required_argument, WH_CLI_OPT_SLURM_ARGS, false, CHECKS},
	{"timeout", required_argument, 'T', false, CHECKS},
	{"timeout-is", required_argument, 'U', false, CHECKS},
	/* the run options (run-opts.c) */
	{"allow-reduced-precision-reduction", no_argument, WH_RUN_OPT_ALLOW_REDUCED, false, RUNS | WH_CMD_INSPECT},
	{"atol", required_argument, WH_RUN_OPT_ATOL, false, TOLERANCES},
	{"device", required_argument, WH_RUN_OPT_DEVICE, false, RUNS | WH_CMD_INSPECT},
	{"check-error-stat", required_argument, WH_RUN_OPT_ERROR_STAT, false, TOLERANCES},
	{"input-shapes", required_argument, WH_RUN_OPT_INPUT_SHAPES, false, SHAPES},
	{"layer-precisions", required_argument, WH_RUN_OPT_LAYER_PRECISIONS, false, LAYER_PRECISIONS},
	{"fill-missing", no_argument, WH_RUN_OPT_FILL_MISSING, false, RUNS},
	{"load-inputs", required_argument, WH_RUN_OPT_LOAD_INPUTS, false, RUNS, WH_PATH_READ | WH_PATH_FOLDER},
	{"precision", required_argument, WH_RUN_OPT_PRECISION, false, RUNS | WH_CMD_CONVERT | WH_CMD_INSPECT},
	/* where the built-in check's FP32 reference runs (builtin-check.h) */
	{"reference-device", required_argument, WH_RUN_OPT_REFERENCE_DEVICE, false, RUNS & CHECKS},
	{"rtol", required_argument, WH_RUN_OPT_RTOL, false, TOLERANCES},
	{"seed", required_argument, WH_RUN_OPT_SEED, false, RUNS},
	{"threads", required_argument, WH_RUN_OPT_THREADS, false, RUNS},
	{"val-range", required_argument, WH_RUN_OPT_VAL_RANGE, false, RUNS},
	/* fail on NaN/Inf: the built-in check's mode (only where FP32 is finite), and for `run`
	 * a check of its one run's outputs (cmd-run.c) */
	{"validate", no_argument, WH_RUN_OPT_VALIDATE, false, WH_CMD_RUN | WH_CMD_REDUCE | WH_CMD_PRECISION | WH_CMD_TRIAGE},
	/* the calibration options (calib-opts.c) */
	{"calib-data", required_argument, WH_CALIB_OPT_DATA, false, RUNS, WH_PATH_READ | WH_PATH_FOLDER},
	{"calib-method", required_argument, WH_CALIB_OPT_METHOD, false, RUNS},
	{"calibration-cache", required_argument, WH_CALIB_OPT_CACHE, false, RUNS, WH_PATH_READ | WH_PATH_WRITE},
	/* the saving options (save-opts.c) */
	{"external-data-path", required_argument, WH_SAVE_OPT_EXTERNAL_PATH, false, SAVES, WH_PATH_SAVE_NAME},
	{"external-data-size-threshold", required_argument, WH_SAVE_OPT_THRESHOLD, false, SAVES},
	{"max-inline-size", required_argument, WH_SAVE_OPT_INLINE_LIMIT, false, SAVES},
	{"no-save-all-tensors-to-one-file", no_argument, WH_SAVE_OPT_NOT_ONE_FILE, false, SAVES},
	{"save-external-data", optional_argument, WH_SAVE_OPT_EXTERNAL, false, SAVES, WH_PATH_SAVE_NAME},
	{"self-contained", no_argument, WH_SAVE_OPT_SELF_CONTAINED, false, SAVES},
	/* the commands' own options (each command's switch) */
	{"artifacts", required_argument, WH_OPT_ARTIFACTS, false, WH_CMD_REDUCE | WH_CMD_BUILD | WH_CMD_REPEAT, WH_PATH_WRITE},
	{"artifacts-dir", required_argument, WH_OPT_ARTIFACTS_DIR, false, WH_CMD_REDUCE | WH_CMD_BUILD | WH_CMD_REPEAT | WH_CMD_TRIAGE, WH_PATH_WRITE_DIR},
	{"bad", required_argument, WH_OPT_BAD, false, WH_CMD_DIFF_TACTICS, WH_PATH_READ | WH_PATH_FOLDER},
	{"bind-input", required_argument, WH_OPT_BIND_INPUT, false, WH_CMD_SANITIZE},
	{"build-cmd", required_argument, WH_OPT_BUILD_CMD, false, WH_CMD_BUILD},
	{"build-seed", required_argument, WH_OPT_BUILD_SEED, false, WH_CMD_RUN},
	{"build-timeout", required_argument, WH_OPT_BUILD_TIMEOUT, false, WH_CMD_BUILD},
	{"builds", required_argument, WH_OPT_BUILDS, false, WH_CMD_TRIAGE},
	{"compare", required_argument, WH_OPT_COMPARE, false, WH_CMD_RUN, WH_PATH_READ | WH_PATH_FOLDER},
	{"confirm", required_argument, WH_OPT_CONFIRM, false, WH_CMD_REDUCE},
	{"dir", required_argument, WH_OPT_DIR, false, WH_CMD_DIFF_TACTICS, WH_PATH_READ | WH_PATH_FOLDER},
	{"direction", required_argument, WH_OPT_DIRECTION, false, WH_CMD_PRECISION},
	{"fold-constants", no_argument, WH_OPT_FOLD_CONSTANTS, false, WH_CMD_SANITIZE},
	{"force", no_argument, WH_OPT_FORCE, false, WH_CMD_REDUCE | WH_CMD_BUILD | WH_CMD_TRIAGE},
	{"fp16-accumulate", no_argument, WH_OPT_FP16_ACCUMULATE, false, WH_CMD_RUN},
	{"good", required_argument, WH_OPT_GOOD, false, WH_CMD_DIFF_TACTICS, WH_PATH_READ | WH_PATH_FOLDER},
	{"hash-outputs", no_argument, WH_OPT_HASH_OUTPUTS, false, WH_CMD_RUN},
	{"profile", no_argument, WH_OPT_PROFILE, false, WH_CMD_RUN},
	{"higher", required_argument, WH_OPT_HIGHER, false, WH_CMD_PRECISION},
	{"inputs", required_argument, WH_OPT_INPUTS, false, WH_CMD_EXTRACT},
	{"iterations", required_argument, WH_OPT_ITERATIONS, false, WH_CMD_RUN},
	{"json", no_argument, WH_OPT_JSON, false, WH_CMD_INSPECT | WH_CMD_DIFF_TACTICS | WH_CMD_REPEAT | RUNS},
	{"load-replay", required_argument, WH_OPT_LOAD_REPLAY, false, WH_CMD_REDUCE, WH_PATH_READ},
	{"load-tactics", required_argument, WH_OPT_LOAD_TACTICS, false, WH_CMD_RUN, WH_PATH_READ},
	{"mark-all", no_argument, WH_OPT_MARK_ALL, false, WH_CMD_RUN | WH_CMD_BUILD},
	{"max-builds", required_argument, WH_OPT_MAX_BUILDS, false, WH_CMD_BUILD},
	{"max-runs", required_argument, WH_OPT_MAX_RUNS, false, WH_CMD_REPEAT},
	{"max-suspects", required_argument, WH_OPT_MAX_SUSPECTS, false, WH_CMD_BUILD},
	{"min-good", required_argument, WH_OPT_MIN_GOOD, false, WH_CMD_REDUCE, WH_PATH_WRITE},
	{"mode", required_argument, WH_OPT_MODE, false, WH_CMD_REDUCE | WH_CMD_PRECISION},
	{"no-confirm", no_argument, WH_OPT_NO_CONFIRM, false, WH_CMD_BUILD},
	{"no-keep-io-types", no_argument, WH_OPT_NO_KEEP_IO_TYPES, false, ANSWERS},
	{"no-graphviz", no_argument, WH_OPT_NO_GRAPHVIZ, false, WH_CMD_TRIAGE},
	{"no-precision-search", no_argument, WH_OPT_NO_PRECISION_SEARCH, false, WH_CMD_TRIAGE},
	{"no-reduce-inputs", no_argument, WH_OPT_NO_REDUCE_INPUTS, false, WH_CMD_REDUCE},
	{"no-reduce-outputs", no_argument, WH_OPT_NO_REDUCE_OUTPUTS, false, WH_CMD_REDUCE},
	{"output", required_argument, 'o', true, WH_CMD_EXTRACT | WH_CMD_SANITIZE | WH_CMD_REDUCE | WH_CMD_PRECISION | WH_CMD_CONVERT, WH_PATH_WRITE},
	{"outputs", required_argument, WH_OPT_OUTPUTS, false, WH_CMD_EXTRACT},
	{"pin-cmd", required_argument, WH_OPT_PIN_CMD, false, WH_CMD_BUILD},
	{"prior", required_argument, WH_OPT_PRIOR, false, WH_CMD_REDUCE | WH_CMD_PRECISION | WH_CMD_TRIAGE, WH_PATH_READ},
	{"reference", required_argument, WH_OPT_REFERENCE, false, WH_CMD_REDUCE, WH_PATH_READ | WH_PATH_FOLDER},
	{"reference-memory", required_argument, WH_OPT_REFERENCE_MEMORY, false, WH_CMD_REDUCE},
	{"repeat", required_argument, WH_OPT_REPEAT, false, WH_CMD_RUN},
	{"report", required_argument, WH_OPT_REPORT, false, WH_CMD_RUN, WH_PATH_WRITE},
	{"save-exclusions", required_argument, WH_OPT_SAVE_EXCLUSIONS, false, ANSWERS, WH_PATH_WRITE},
	{"save-inputs", required_argument, WH_OPT_SAVE_INPUTS, false, WH_CMD_RUN, WH_PATH_WRITE_DIR},
	{"save-layer-precisions", required_argument, WH_OPT_SAVE_LAYER_PRECISIONS, false, WH_CMD_CONVERT, WH_PATH_WRITE},
	{"save-layer-precisions-string", required_argument, WH_OPT_SAVE_LAYER_PRECISIONS_STRING, false, ANSWERS, WH_PATH_WRITE},
	{"save-model", required_argument, WH_OPT_SAVE_MODEL, false, WH_CMD_PRECISION, WH_PATH_WRITE},
	{"save-outputs", required_argument, WH_OPT_SAVE_OUTPUTS, false, WH_CMD_RUN, WH_PATH_WRITE_DIR},
	{"save-replay", required_argument, WH_OPT_SAVE_REPLAY, false, WH_CMD_REDUCE, WH_PATH_WRITE | WH_PATH_RESUMES},
	{"save-tactics", required_argument, WH_OPT_SAVE_TACTICS, false, WH_CMD_RUN, WH_PATH_WRITE},
	{"show", required_argument, WH_OPT_SHOW, false, WH_CMD_INSPECT},
	{"show-histogram", no_argument, WH_OPT_SHOW_HISTOGRAM, false, WH_CMD_RUN | WH_CMD_COMPARE},
	{"strict-tactics", no_argument, WH_OPT_STRICT_TACTICS, false, WH_CMD_RUN},
	{"tactics", no_argument, WH_OPT_TACTICS, false, WH_CMD_INSPECT},
	{"timing-cache", required_argument, WH_OPT_TIMING_CACHE, false, WH_CMD_RUN | WH_CMD_BUILD, WH_PATH_READ | WH_PATH_WRITE},
	{"timing-iterations", required_argument, WH_OPT_TIMING_ITERATIONS, false, TIMING},
	{"timing-tolerance", required_argument, WH_OPT_TIMING_TOLERANCE, false, TIMING},
	{"top", required_argument, WH_OPT_TOP, false, WH_CMD_DIFF_TACTICS},
	{"until", required_argument, WH_OPT_UNTIL, false, WH_CMD_BUILD | WH_CMD_REPEAT},
	{"block-tactics", required_argument, WH_OPT_BLOCK_TACTICS, false, WH_CMD_BUILD, WH_PATH_READ},
};

bool wh_cli_options_for(uint32_t cmd, struct option *longopts, size_t n_longopts, char *shortopts, size_t n_shortopts)
{
	size_t nl = 0, ns = 0;
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
		const struct wh_cli_option *o = &options[i];
		if (!(o->cmds & cmd))
			continue;
		if (nl + 1 >= n_longopts || ns + 3 >= n_shortopts)
			return false;
		longopts[nl++] = (struct option){o->name, o->has_arg, NULL, o->code};
		if (o->letter) {
			shortopts[ns++] = (char)o->code;
			if (o->has_arg == required_argument)
				shortopts[ns++] = ':';
		}
	}
	memset(&longopts[nl], 0, sizeof longopts[nl]);
	shortopts[ns] = '\0';
	return true;
}

const struct wh_cli_option *wh_cli_option_of(uint32_t cmd, int code)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
		if ((options[i].cmds & cmd) && options[i].code == code)
			return &options[i];
	return NULL;
}
