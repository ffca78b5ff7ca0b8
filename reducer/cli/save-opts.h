/* Private to reducer/cli: the options of every subcommand that saves a model (extract,
 * sanitize, reduce, triage): how weights are stored (graph/onnx-io.h, struct
 * wh_save_opts). Names as Polygraphy's: --save-external-data[=PATH] (alias
 * --external-data-path PATH), --external-data-size-threshold SIZE,
 * --no-save-all-tensors-to-one-file; whittle's own: --max-inline-size SIZE and
 * --self-contained.
 *
 * The commands that save take them (their rows in options.c); a command hands its struct
 * to wh_cli_parse (spec.save_opts), which offers each option to wh_cli_save_opts_parse, and
 * passes &o->save to wh_model_save_with (or to the reducer's options). Caller-owned, no heap; strings are borrowed from argv. */
#ifndef WH_SAVE_OPTS_H
#define WH_SAVE_OPTS_H

#include <getopt.h>
#include <stdbool.h>

#include "graph/onnx-io.h"

/* getopt_long codes, out of the range of characters and of the other groups' codes */
enum {
	WH_SAVE_OPT_EXTERNAL = 0x1d00,
	WH_SAVE_OPT_EXTERNAL_PATH,
	WH_SAVE_OPT_THRESHOLD,
	WH_SAVE_OPT_NOT_ONE_FILE,
	WH_SAVE_OPT_INLINE_LIMIT,
	WH_SAVE_OPT_SELF_CONTAINED,
};

#define WH_SAVE_HELP                                                                                 \
	"saving weights (default: weights from the original's external-data file stay there, the\n"   \
	"file linked next to the saved model; others inline unless the model would reach 2 GiB):\n"  \
	"  --save-external-data[=PATH]  write every weight of at least the threshold to PATH (a\n"   \
	"                          name next to the model; default <model file>.data), copying\n"  \
	"                          linked weights only when PATH is given\n"                           \
	"  --external-data-path PATH    the same as --save-external-data=PATH\n"                    \
	"  --external-data-size-threshold SIZE  smallest tensor written externally (default 1K;\n" \
	"                          suffixes K, M, G for KiB, MiB, GiB)\n"                              \
	"  --no-save-all-tensors-to-one-file    one external file per tensor, named after it\n"     \
	"  --max-inline-size SIZE  a model this large inline is saved with external data\n"         \
	"                          (default 2G, protobuf's limit)\n"                                   \
	"  --self-contained        never link the original's weights file: write the weights the\n"  \
	"                          saved model needs\n"

struct wh_cli_save_opts {
	struct wh_save_opts save;
	bool given; /* any saving option */
	char **keep; /* the input model's weights files (save.keep points here), set by
		      * wh_cli_check_paths; owned, freed by wh_cli_save_opts_release */
	uint32_t n_keep;
};

void wh_cli_save_opts_init(struct wh_cli_save_opts *o);
/* Frees what o owns (NULL-safe). */
void wh_cli_save_opts_release(struct wh_cli_save_opts *o);

/* Takes getopt_long's code c and optarg. Returns true when c is a saving option; then
 * *st_out is WH_OK, or WH_ERR_USAGE with the message recorded for a bad value. */
bool wh_cli_save_opts_parse(struct wh_cli_save_opts *o, int c, const char *arg, enum wh_status *st_out);

/* "123", "16K", "1M", "2G" (KiB, MiB, GiB) into bytes; false for anything else. */
bool wh_cli_parse_size(const char *s, uint64_t *out);

#endif
