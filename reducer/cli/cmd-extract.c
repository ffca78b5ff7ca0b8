#include <stdlib.h>
#include <string.h>

#include "graph/extract.h"
#include "graph/names.h"
#include "graph/onnx-io.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"
#include "reducer/cli/run-opts.h"

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

struct extract_cmd {
	struct wh_cli_save_opts save;
	const char *out_path, *ins, *outs;
	struct wh_run_opts run;
};

static enum wh_status extract_option(void *self, int c, const char *arg)
{
	struct extract_cmd *x = self;
	switch (c) {
	case 'o': x->out_path = arg; break;
	case WH_OPT_INPUTS: x->ins = arg; break;
	case WH_OPT_OUTPUTS: x->outs = arg; break;
	}
	return WH_OK;
}

static enum wh_status extract_validate(void *self, const struct wh_cli_args *a)
{
	const struct extract_cmd *x = self;
	(void)a;
	if (!x->out_path)
		return wh_cli_usage_error("extract", "no output path (give -o OUT.onnx)");
	if (!x->outs)
		return wh_cli_usage_error("extract", "no outputs (give --outputs with tensor names)");
	return WH_OK;
}

static enum wh_status extract(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct extract_cmd *x = self;
	struct wh_model *sub = NULL;
	uint32_t n_in = 0, n_out = 0;
	char **vin = x->ins ? wh_cli_split(x->ins, &n_in) : NULL;
	char **vout = wh_cli_split(x->outs, &n_out);
	enum wh_status st = wh_cmd_ctx_load(c, &x->run, a->operands[0], WH_SAMPLES_NONE);
	if (st == WH_OK)
		st = wh_model_extract(c->model, (const char *const *)vin, n_in, (const char *const *)vout, n_out, &sub);
	if (st == WH_OK && (st = wh_model_save_with(sub, x->out_path, &x->save.save)) == WH_OK)
		printf("extracted %u of %u layers into %s (%u inputs, %u outputs)\n", sub->graph->n_nodes, c->model->graph->n_nodes,
		       wh_name_term(x->out_path), sub->graph->n_inputs, sub->graph->n_outputs);
	wh_cli_free_split(vin, n_in);
	wh_cli_free_split(vout, n_out);
	wh_model_destroy(sub);
	return st;
}

int wh_cmd_extract(int argc, char **argv)
{
	struct extract_cmd x = {0};
	struct wh_cli_spec spec = {.cmd = "extract", .help = extract_help, .operands = "one MODEL", .n_operands = 1, .run_opts = &x.run, .save_opts = &x.save,
				   .own = extract_option, .validate = extract_validate, .go = extract, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
