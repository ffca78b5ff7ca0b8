/* Private to reducer/: the calibration options shared by the subcommands that run a model
 * (--calib-method, --calib-data, --calibration-cache) and the step that turns them into the
 * calibration table of a precision config.
 *
 * The commands that run a model take them (their rows in options.c); each option is offered
 * to wh_calib_opts_parse (through wh_run_opts_parse), and wh_calib_opts_apply runs once the
 * model and the run's inputs are loaded, before the first reduced-precision run. The table lives in
 * struct wh_calib_opts (caller-owned, _init/_release), which must outlive every engine that
 * uses the config. */
#ifndef WH_CALIB_OPTS_H
#define WH_CALIB_OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "executor/calibrate.h"
#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"

/* getopt_long codes, out of the range of characters and of the subcommands' own codes */
enum {
	WH_CALIB_OPT_METHOD = 0x1c00,
	WH_CALIB_OPT_DATA,
	WH_CALIB_OPT_CACHE,
};

#define WH_CALIB_HELP                                                                                      \
	"calibration (int8, fp8; without these, each tensor's own range in the run):\n"                  \
	"  --calib-method M        entropy (default, TensorRT's EntropyCalibration2), minmax,\n"           \
	"                          percentile[=P] (default P 99.99)\n"                                    \
	"  --calib-data DIR        calibrate on DIR: one folder of input tensors, or a folder of such\n"    \
	"                          folders (one per sample); default: the run's own inputs\n"             \
	"  --calibration-cache F   TensorRT calibration cache: read when F exists and no --calib-data\n"  \
	"                          is given, else written after calibrating\n"

struct wh_calib_opts {
	const char *cmd;        /* for the messages; may be NULL */
	enum wh_calib_method method;
	double percentile;
	bool method_given;
	const char *method_arg; /* borrowed (argv) */
	const char *data_dir;   /* borrowed (argv) */
	const char *cache_path; /* borrowed (argv) */
	int threads;            /* for the calibration runs; <= 0: all cores */
	struct wh_calib table;  /* what config->calib points to after apply */
};

void wh_calib_opts_init(struct wh_calib_opts *o);
void wh_calib_opts_release(struct wh_calib_opts *o);

/* Takes getopt_long's code c and optarg. Returns true when c is a calibration option;
 * then *st_out is WH_OK, or WH_ERR_USAGE with the message recorded for a bad value. */
bool wh_calib_opts_parse(struct wh_calib_opts *o, int c, const char *arg, enum wh_status *st_out);

/* True when any calibration option was given. */
bool wh_calib_opts_given(const struct wh_calib_opts *o);
/* The name of the first calibration option given ("calib-method", ...), or NULL. */
const char *wh_calib_opts_first_given(const struct wh_calib_opts *o);

/* Loads the cache or calibrates (on --calib-data, else on `inputs`), writes the cache when
 * asked, warns about a cache that does not fit the model or the asked method and about
 * calibration data whose range differs strongly from `inputs`, and sets config->calib.
 * Does nothing when no calibration option was given; a usage error when one was given but
 * no layer of config runs in int8 or fp8 (the option would change nothing). */
enum wh_status wh_calib_opts_apply(struct wh_calib_opts *o, const struct wh_model *m,
				   struct wh_precision_config *config, const struct wh_tensor_set *inputs);

#endif
