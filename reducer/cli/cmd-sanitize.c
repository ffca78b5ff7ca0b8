#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "graph/onnx-io.h"
#include "graph/sanitize.h"
#include "reducer/cli/cli-internal.h"

static const char sanitize_help[] =
	"usage: whittle sanitize MODEL -o OUT [--fold-constants] [--input-shapes S]\n\n"
	"Turns Constant nodes into initializers and removes dead layers; with --fold-constants,\n"
	"also folds every layer computable from constants and static shapes (shape arithmetic).\n\n"
	"  -o, --output OUT    path of the model to write\n"
	"  --fold-constants    fold constant subgraphs into initializers\n"
	"  --input-shapes S    bind dynamic input dimensions first (makes more shapes static)\n";

int wh_cmd_sanitize(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"fold-constants", no_argument, NULL, 'f'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	const char *out_path = NULL, *shapes = NULL;
	struct wh_sanitize_options opt = {.evaluate = wh_executor_fold_eval};
	int c;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out_path = optarg; break;
		case 'f': opt.fold_constants = true; break;
		case 'I': shapes = optarg; break;
		case 'h': fputs(sanitize_help, stdout); return 0;
		default: return wh_cli_bad_option("sanitize", c, argv);
		}
	}
	if (optind != argc - 1)
		return wh_cli_usage_error("sanitize", "expects exactly one MODEL (see whittle sanitize --help)");
	if (!out_path)
		return wh_cli_usage_error("sanitize", "no output path (give -o OUT.onnx)");
	struct wh_model *m = NULL, *out = NULL;
	struct wh_sanitize_stats stats = {0};
	int rc = 0;
	enum wh_status st = wh_cli_load_model(argv[optind], shapes, &m);
	if (st == WH_OK)
		st = wh_model_sanitize(m, &opt, &out, &stats);
	if (st == WH_OK)
		st = wh_model_save(out, out_path);
	if (st != WH_OK)
		rc = wh_cli_fail(st);
	else
		printf("sanitized %u -> %u layers: %u constants lifted, %u layers folded, %u dead layers removed; wrote %s\n",
		       m->graph->n_nodes, out->graph->n_nodes, stats.constants_lifted, stats.nodes_folded,
		       stats.dead_removed, out_path);
	wh_model_destroy(out);
	wh_model_destroy(m);
	return rc;
}
