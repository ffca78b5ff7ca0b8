#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"

static const char extract_help[] =
	"usage: whittle extract MODEL -o OUT --inputs T[,T...] --outputs T[,T...] [--input-shapes S]\n\n"
	"Writes the subgraph that computes the --outputs tensors from the --inputs tensors as a\n"
	"self-contained ONNX model (weights included). Inputs may be intermediate tensors; their\n"
	"types and shapes come from shape inference (bind dynamic dimensions with --input-shapes).\n\n"
	"  -o, --output OUT    path of the model to write\n"
	"  --inputs LIST       comma-separated tensor names that become graph inputs\n"
	"  --outputs LIST      comma-separated tensor names that become graph outputs\n"
	"  --input-shapes S    bind dynamic input dimensions, e.g. x:1x3x640x640\n";

enum { OPT_INPUTS = WH_CLI_OPT_BASE, OPT_OUTPUTS };

struct extract_cmd {
	const char *out_path, *ins, *outs;
};

static enum wh_status extract_option(void *ctx, int c, const char *arg)
{
	struct extract_cmd *x = ctx;
	switch (c) {
	case 'o': x->out_path = arg; break;
	case OPT_INPUTS: x->ins = arg; break;
	case OPT_OUTPUTS: x->outs = arg; break;
	}
	return WH_OK;
}

static enum wh_status extract(const char *path, const struct extract_cmd *x, const struct wh_run_opts *ro)
{
	if (!x->out_path)
		return wh_cli_usage_error("extract", "no output path (give -o OUT.onnx)");
	if (!x->outs)
		return wh_cli_usage_error("extract", "no outputs (give --outputs with tensor names)");
	struct wh_model *m = NULL, *sub = NULL;
	uint32_t n_in = 0, n_out = 0;
	char **vin = x->ins ? wh_cli_split(x->ins, &n_in) : NULL;
	char **vout = wh_cli_split(x->outs, &n_out);
	enum wh_status st = wh_run_opts_load_model(ro, path, &m);
	if (st == WH_OK)
		st = wh_model_extract(m, (const char *const *)vin, n_in, (const char *const *)vout, n_out, &sub);
	if (st == WH_OK)
		st = wh_model_save(sub, x->out_path);
	if (st == WH_OK)
		printf("extracted %u of %u layers into %s (%u inputs, %u outputs)\n", sub->graph->n_nodes, m->graph->n_nodes,
		       x->out_path, sub->graph->n_inputs, sub->graph->n_outputs);
	wh_cli_free_split(vin, n_in);
	wh_cli_free_split(vout, n_out);
	wh_model_destroy(sub);
	wh_model_destroy(m);
	return st;
}

int wh_cmd_extract(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"inputs", required_argument, NULL, OPT_INPUTS},
		{"outputs", required_argument, NULL, OPT_OUTPUTS},
		WH_RUN_SHAPES_LONGOPTS,
		WH_CLI_HELP_LONGOPTS,
	};
	struct extract_cmd x = {0};
	struct wh_run_opts ro;
	wh_run_opts_init(&ro, "extract", WH_PREC_FP32);
	struct wh_cli_spec spec = {.cmd = "extract", .help = extract_help, .shortopts = "o:", .longopts = longopts,
				   .operands = "one MODEL", .n_operands = 1, .run_opts = &ro, .own = extract_option, .ctx = &x};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	if (st == WH_OK && !a.help)
		st = extract(a.operands[0], &x, &ro);
	wh_run_opts_release(&ro);
	return wh_cli_exit(st);
}
