#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/save-opts.h"

static const char extract_help[] =
	"usage: whittle extract MODEL -o OUT --inputs T[,T...] --outputs T[,T...] [--input-shapes S]\n\n"
	"Writes the subgraph that computes the --outputs tensors from the --inputs tensors as an\n"
	"ONNX model (weights included; weights in the original's external-data file stay there,\n"
	"the file linked next to OUT). Inputs may be intermediate tensors; their\n"
	"types and shapes come from shape inference (bind dynamic dimensions with --input-shapes).\n\n"
	"  -o, --output OUT    path of the model to write\n"
	"  --inputs LIST       comma-separated tensor names that become graph inputs\n"
	"  --outputs LIST      comma-separated tensor names that become graph outputs\n"
	"  --input-shapes S    bind dynamic input dimensions, e.g. x:1x3x640x640\n\n" WH_SAVE_HELP;

int wh_cmd_extract(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"inputs", required_argument, NULL, 'i'},
		{"outputs", required_argument, NULL, 'O'},
		{"input-shapes", required_argument, NULL, 'I'},
		{"help", no_argument, NULL, 'h'},
		WH_SAVE_LONGOPTS,
		{0, 0, 0, 0},
	};
	const char *out_path = NULL, *ins = NULL, *outs = NULL, *shapes = NULL;
	struct wh_cli_save_opts so;
	wh_cli_save_opts_init(&so);
	enum wh_status ost;
	int c;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out_path = optarg; break;
		case 'i': ins = optarg; break;
		case 'O': outs = optarg; break;
		case 'I': shapes = optarg; break;
		case 'h': fputs(extract_help, stdout); return 0;
		default:
			if (!wh_cli_save_opts_parse(&so, c, optarg, &ost))
				return wh_cli_bad_option("extract", c, argv);
			if (ost != WH_OK)
				return wh_cli_fail(ost);
			break;
		}
	}
	if (optind != argc - 1)
		return wh_cli_usage_error("extract", "expects exactly one MODEL (see whittle extract --help)");
	if (!out_path)
		return wh_cli_usage_error("extract", "no output path (give -o OUT.onnx)");
	if (!outs)
		return wh_cli_usage_error("extract", "no outputs (give --outputs with tensor names)");
	struct wh_model *m = NULL, *sub = NULL;
	uint32_t n_in = 0, n_out = 0;
	char **vin = ins ? wh_cli_split(ins, &n_in) : NULL;
	char **vout = wh_cli_split(outs, &n_out);
	int rc = 0;
	enum wh_status st = wh_cli_load_model(argv[optind], shapes, &m);
	if (st == WH_OK)
		st = wh_model_extract(m, (const char *const *)vin, n_in, (const char *const *)vout, n_out, &sub);
	if (st == WH_OK)
		st = wh_model_save_with(sub, out_path, &so.save);
	if (st != WH_OK)
		rc = wh_cli_fail(st);
	else
		printf("extracted %u of %u layers into %s (%u inputs, %u outputs)\n", sub->graph->n_nodes,
		       m->graph->n_nodes, out_path, sub->graph->n_inputs, sub->graph->n_outputs);
	wh_cli_free_split(vin, n_in);
	wh_cli_free_split(vout, n_out);
	wh_model_destroy(sub);
	wh_model_destroy(m);
	return rc;
}
