#include <stdlib.h>
#include <string.h>

#include "graph/onnx-io.h"
#include "graph/sanitize.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"

static const char sanitize_help[] =
	"usage: whittle sanitize MODEL -o OUT [--fold-constants] [--input-shapes S]\n\n"
	"Turns Constant nodes into initializers and removes dead layers; with --fold-constants,\n"
	"also folds every layer computable from constants and static shapes (shape arithmetic).\n\n"
	"  -o, --output OUT    path of the model to write\n"
	"  --fold-constants    fold constant subgraphs into initializers\n"
	"  --input-shapes S    bind dynamic input dimensions first (makes more shapes static)\n";

enum { OPT_FOLD = WH_CLI_OPT_BASE };

struct sanitize_cmd {
	const char *out_path;
	struct wh_sanitize_options opt;
};

static enum wh_status sanitize_option(void *ctx, int c, const char *arg)
{
	struct sanitize_cmd *x = ctx;
	if (c == 'o')
		x->out_path = arg;
	else if (c == OPT_FOLD)
		x->opt.fold_constants = true;
	return WH_OK;
}

static enum wh_status sanitize(const char *path, const struct sanitize_cmd *x, const struct wh_run_opts *ro)
{
	if (!x->out_path)
		return wh_cli_usage_error("sanitize", "no output path (give -o OUT.onnx)");
	struct wh_model *m = NULL, *out = NULL;
	struct wh_sanitize_stats stats = {0};
	enum wh_status st = wh_run_opts_load_model(ro, path, &m);
	if (st == WH_OK)
		st = wh_model_sanitize(m, &x->opt, &out, &stats);
	if (st == WH_OK)
		st = wh_model_save(out, x->out_path);
	if (st == WH_OK)
		printf("sanitized %u -> %u layers: %u constants lifted, %u layers folded, %u dead layers removed; wrote %s\n",
		       m->graph->n_nodes, out->graph->n_nodes, stats.constants_lifted, stats.nodes_folded, stats.dead_removed,
		       x->out_path);
	wh_model_destroy(out);
	wh_model_destroy(m);
	return st;
}

int wh_cmd_sanitize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"fold-constants", no_argument, NULL, OPT_FOLD},
		WH_RUN_SHAPES_LONGOPTS,
		WH_CLI_HELP_LONGOPTS,
	};
	struct sanitize_cmd x = {0};
	struct wh_run_opts ro;
	wh_run_opts_init(&ro, "sanitize", WH_PREC_FP32);
	struct wh_cli_spec spec = {.cmd = "sanitize", .help = sanitize_help, .shortopts = "o:", .longopts = longopts,
				   .operands = "one MODEL", .n_operands = 1, .run_opts = &ro, .own = sanitize_option, .ctx = &x};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	if (st == WH_OK && !a.help)
		st = sanitize(a.operands[0], &x, &ro);
	wh_run_opts_release(&ro);
	return wh_cli_exit(st);
}
