/* Private to the front end: the options of every command that runs a model, parsed and
 * validated in one place (--input-shapes, --load-inputs, --seed, --val-range, --precision,
 * --layer-precisions, --atol, --rtol, --check-error-stat, --threads, --device and, through
 * calib-opts.h, the calibration options).
 *
 * Which commands take which of these options is their rows in options.c; a command hands
 * its struct wh_run_opts to wh_cli_parse (cli-internal.h), which offers every option to
 * wh_run_opts_parse before the command's own switch. Each value is checked there, once:
 * finite, in range, with one message shape
 *   whittle: <cmd>: --<option> <value>: <why> (<what to do>)
 * Then the finish steps turn the values into the drivers' option structs: the model
 * (wh_run_opts_load_model), the input samples (wh_run_opts_load_inputs), the precision
 * config with its calibration (wh_run_opts_precision) and the engine options
 * (wh_run_opts_engine). The struct is caller-owned (_init/_release); the config and the
 * calibration table it holds must outlive every engine built from it. Strings are
 * borrowed from argv. */
#ifndef WH_RUN_OPTS_H
#define WH_RUN_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "executor/compare.h"
#include "executor/executor.h"
#include "executor/precision.h"
#include "graph/ir.h"
#include "graph/tensor-file.h"
#include "reducer/cli/calib-opts.h"

/* getopt_long codes, out of the range of characters, of the calibration codes and of the
 * commands' own codes (options.h) */
enum wh_run_opt {
	WH_RUN_OPT_INPUT_SHAPES = 0x1b00,
	WH_RUN_OPT_LOAD_INPUTS,
	WH_RUN_OPT_SEED,
	WH_RUN_OPT_VAL_RANGE,
	WH_RUN_OPT_PRECISION,
	WH_RUN_OPT_LAYER_PRECISIONS,
	WH_RUN_OPT_ATOL,
	WH_RUN_OPT_RTOL,
	WH_RUN_OPT_ERROR_STAT,
	WH_RUN_OPT_THREADS,
	WH_RUN_OPT_VALIDATE,
	WH_RUN_OPT_FILL_MISSING,
	WH_RUN_OPT_DEVICE,
	WH_RUN_OPT_ALLOW_REDUCED,
	WH_RUN_OPT_REFERENCE_DEVICE,
	WH_RUN_OPT_END,
};

/* The largest --seed: a command adds the sample or build number to it. */
#define WH_RUN_SEED_MAX (INT64_MAX / 2)

struct wh_run_opts {
	const char *cmd;           /* for the messages */
	const char *input_shapes;  /* validated spec, or NULL */
	const char *load_inputs;   /* folder, or NULL */
	bool fill_missing;         /* --fill-missing: inputs without a file in it are generated */
	const char *layer_precisions;
	const char *error_stat;    /* as given (for the commands a report prints), or NULL */
	uint64_t seed;             /* default 1 */
	double lo, hi;             /* --val-range, default 0,1 */
	enum wh_precision precision; /* the command's default unless given */
	int threads;               /* 0: all cores */
	bool cuda;                 /* --device cuda[:N] (checked when given: the module loads
				    * and the GPU starts) */
	int cuda_device;
	bool allow_reduced;        /* --allow-reduced-precision-reduction (GPU tactics) */
	struct wh_compare_options compare;
	struct wh_calib_opts calib;
	struct wh_precision_config config; /* wh_run_opts_precision fills it */
	uint32_t given;            /* bit (code - WH_RUN_OPT_INPUT_SHAPES) per option given */
};

void wh_run_opts_init(struct wh_run_opts *o, const char *cmd, enum wh_precision dflt);
void wh_run_opts_release(struct wh_run_opts *o);

/* Offers getopt_long's code c with its optarg. *consumed: whether c is a run or a
 * calibration option; a bad value is WH_ERR_USAGE with the message recorded. */
enum wh_status wh_run_opts_parse(struct wh_run_opts *o, int c, const char *arg, bool *consumed);

/* Whether the option with this code (WH_RUN_OPT_*) was given. */
bool wh_run_opts_given(const struct wh_run_opts *o, enum wh_run_opt code);

/* A usage error for the first option of `codes` (a WH_RUN_OPT_END-terminated list; the
 * calibration options count as one, WH_CALIB_OPT_METHOD) that was given; `why` says why
 * it means nothing here and what to do, e.g. "the check command decides (drop it, or drop
 * --check to use the built-in check)". WH_OK when none was given. */
enum wh_status wh_run_opts_refuse(const struct wh_run_opts *o, const int *codes, const char *why);

/* Loads the model at path with --input-shapes bound and shapes inferred. */
enum wh_status wh_run_opts_load_model(const struct wh_run_opts *o, const char *path, struct wh_model **out);

/* The input samples: --load-inputs (a folder of sample folders gives several), the inputs
 * missing from each generated from --seed (+ sample number) and --val-range. See
 * wh_cli_load_samples. */
enum wh_status wh_run_opts_load_inputs(const struct wh_run_opts *o, const struct wh_model *m, struct wh_tensor_set **out,
				       uint32_t *n_out, size_t *n_generated_out);

/* The same for a command that runs one sample: a folder of sample folders is a usage
 * error. *out is caller-initialised (wh_tensor_set_init) and owned. */
enum wh_status wh_run_opts_load_sample(const struct wh_run_opts *o, const struct wh_model *m, struct wh_tensor_set *out);

/* Call once. Fills o->config (a command may set o->config.fp16_accumulate first): --precision, --layer-precisions and the calibration table (computed on
 * `inputs` unless --calib-data or a cache says otherwise). A calibration option where no
 * layer runs in int8 or fp8 is a usage error. *reduced_out (may be NULL): whether any layer
 * runs below FP32, i.e. whether engines should be given o->config. */
enum wh_status wh_run_opts_precision(struct wh_run_opts *o, const struct wh_model *m, const struct wh_tensor_set *inputs,
				     bool *reduced_out);

/* The engine options of the run at the reduced precision: threads and o->config when
 * reduced (call wh_run_opts_precision first). */
struct wh_engine_options wh_run_opts_engine(const struct wh_run_opts *o, bool reduced);

/* WHITTLE_FAULTY_TACTIC from the environment (fault injection; docs/tactics.md), or NULL. */
const char *wh_run_opts_faulty_tactic(void);

#endif
