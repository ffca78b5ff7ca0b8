#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "graph/names.h"
#include "graph/onnx-io.h"
#include "graph/sanitize.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/save-opts.h"
#include "reducer/cli/run-opts.h"

static const char sanitize_help[] =
	"usage: whittle sanitize MODEL -o OUT [--fold-constants [--bind-input NAME=VALUE,...]] [--input-shapes S]\n\n"
	"Turns Constant nodes into initializers and removes dead layers; with --fold-constants,\n"
	"also folds every layer computable from constants and static shapes (shape arithmetic),\n"
	"and replaces an If whose condition folds by the branch it picks.\n\n"
	"  -o, --output OUT    path of the model to write\n"
	"  --fold-constants    fold constant subgraphs into initializers, and Ifs on constants\n"
	"  --bind-input NAME=VALUE[,NAME=VALUE...]\n"
	"                      make one-element inputs constants first (e.g. sr=16000, flag=true),\n"
	"                      so that what depends on them folds (with --fold-constants)\n"
	"  --input-shapes S    bind dynamic input dimensions first (makes more shapes static)\n\n" WH_SAVE_HELP;

struct sanitize_cmd {
	struct wh_cli_save_opts save;
	const char *out_path;
	struct wh_sanitize_options opt;
	struct wh_run_opts run;
	struct wh_input_binding *bind;
	uint32_t n_bind;
};

static enum wh_status sanitize_option(void *self, int c, const char *arg)
{
	struct sanitize_cmd *x = self;
	if (c == 'o')
		x->out_path = arg;
	else if (c == WH_OPT_FOLD_CONSTANTS)
		x->opt.fold_constants = true;
	else if (c == WH_OPT_BIND_INPUT && wh_input_bindings_parse(arg, &x->bind, &x->n_bind) != WH_OK)
		return wh_cli_usage_error("sanitize", "--bind-input '%s': %s", arg, wh_error_message());
	return WH_OK;
}

static enum wh_status sanitize_validate(void *self, const struct wh_cli_args *a)
{
	(void)a;
	const struct sanitize_cmd *x = self;
	if (!x->out_path)
		return wh_cli_usage_error("sanitize", "no output path (give -o OUT.onnx)");
	if (x->n_bind && !x->opt.fold_constants)
		return wh_cli_usage_error("sanitize", "--bind-input makes inputs constants for folding (add --fold-constants)");
	return WH_OK;
}

static enum wh_status sanitize(void *self, const struct wh_cli_args *a, struct wh_cmd_ctx *c)
{
	struct sanitize_cmd *x = self;
	struct wh_model *out = NULL;
	struct wh_sanitize_stats stats = {0};
	enum wh_status st = wh_cmd_ctx_load(c, &x->run, a->operands[0], WH_SAMPLES_NONE);
	uint32_t n_before = st == WH_OK ? c->model->graph->n_nodes : 0;
	if (st == WH_OK && x->n_bind)
		st = wh_model_bind_input_values(c->model, x->bind, x->n_bind);
	if (st == WH_OK)
		st = wh_model_sanitize(c->model, &x->opt, &out, &stats);
	if (st == WH_OK && (st = wh_model_save_with(out, x->out_path, &x->save.save)) == WH_OK) {
		char ifs[64] = "";
		if (stats.ifs_folded)
			snprintf(ifs, sizeof ifs, ", %u If layer%s replaced by %s branch", stats.ifs_folded, stats.ifs_folded > 1 ? "s" : "",
				 stats.ifs_folded > 1 ? "their" : "its");
		printf("sanitized %u -> %u layers: %u constants lifted, %u layers folded%s, %u dead layers removed; wrote %s\n", n_before,
		       out->graph->n_nodes, stats.constants_lifted, stats.nodes_folded, ifs, stats.dead_removed, wh_name_term(x->out_path));
	}
	wh_model_destroy(out);
	wh_input_bindings_free(x->bind, x->n_bind);
	x->bind = NULL;
	x->n_bind = 0;
	return st;
}

int wh_cmd_sanitize(int argc, char **argv)
{
	struct sanitize_cmd x = {.opt.evaluate = wh_executor_fold_eval};
	struct wh_cli_spec spec = {.cmd = "sanitize", .help = sanitize_help, .operands = "one MODEL", .n_operands = 1, .run_opts = &x.run, .save_opts = &x.save,
				   .own = sanitize_option, .validate = sanitize_validate, .go = sanitize, .self = &x};
	int rc = wh_cli_command(&spec, argc, argv);
	/* parsed before a usage error that stops the command before sanitize() runs */
	wh_input_bindings_free(x.bind, x.n_bind);
	return rc;
}
