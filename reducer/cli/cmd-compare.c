#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "graph/names.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/options.h"
#include "reducer/cli/run-opts.h"

static const char compare_help[] =
	"usage: whittle compare DIR_A DIR_B [--atol X] [--rtol X] [--check-error-stat S] [--show-histogram]\n\n"
	"Compares the tensors of DIR_A with the same-named tensors of DIR_B (the reference).\n"
	"An element fails when its absolute error exceeds --atol AND its relative error exceeds\n"
	"--rtol (Polygraphy's semantics). Exit 0 when all pass, 1 when any differs.\n";

struct compare_cmd {
	bool histogram;
	struct wh_run_opts run;
};

static enum wh_status compare_option(void *self, int c, const char *arg)
{
	(void)arg;
	if (c == WH_OPT_SHOW_HISTOGRAM)
		((struct compare_cmd *)self)->histogram = true;
	return WH_OK;
}

/* c->fails unless every tensor of dir_b has a passing counterpart in dir_a. */
static enum wh_status compare_dirs(void *self, const struct wh_cli_args *args, struct wh_cmd_ctx *c)
{
	const struct compare_cmd *x = self;
	const char *dir_a = args->operands[0], *dir_b = args->operands[1];
	const struct wh_compare_options *co = &x->run.compare;
	struct wh_tensor_set a, b;
	wh_tensor_set_init(&a);
	wh_tensor_set_init(&b);
	enum wh_status st = wh_tensor_set_read_dir(dir_a, NULL, &a);
	if (st == WH_OK)
		st = wh_tensor_set_read_dir(dir_b, NULL, &b);
	if (st != WH_OK)
		goto out;
	size_t compared = 0, failed = 0, missing = 0;
	for (size_t i = 0; i < b.n; i++) {
		char label[64];
		const char *name = b.items[i].name;
		const struct wh_tensor *t = NULL;
		if (name) {
			t = wh_tensor_set_find(&a, name);
		} else {
			snprintf(label, sizeof label, "#%d", b.items[i].index);
			name = label;
			for (size_t k = 0; k < a.n; k++)
				if (!a.items[k].name && a.items[k].index == b.items[i].index)
					t = &a.items[k].t;
		}
		if (!t) {
			printf("MISSING %s: not in %s\n", wh_name_term(name), wh_name_term(dir_a));
			missing++;
			continue;
		}
		struct wh_compare_stats s;
		if ((st = wh_compare_tensors(t, &b.items[i].t, co, &s)) != WH_OK)
			goto out;
		wh_compare_print(stdout, name, &s, x->histogram);
		compared++;
		failed += !s.pass || !s.comparable;
	}
	if (!compared) {
		st = wh_error(WH_ERR_NOT_FOUND, "%s and %s: no tensor names in common (name the files after the tensors)", dir_a, dir_b);
		goto out;
	}
	c->fails = failed || missing;
	if (c->fails)
		printf("compare: FAIL: %zu of %zu tensors differ, %zu missing\n", failed, compared, missing);
	else
		printf("compare: PASS: %zu tensors within atol %g rtol %g\n", compared, co->atol, co->rtol);
out:
	wh_tensor_set_release(&a);
	wh_tensor_set_release(&b);
	return st;
}

int wh_cmd_compare(int argc, char **argv)
{
	struct compare_cmd x = {0};
	struct wh_cli_spec spec = {.cmd = "compare", .help = compare_help, .operands = "two folders DIR_A DIR_B", .n_operands = 2,
				   .run_opts = &x.run, .own = compare_option, .go = compare_dirs, .self = &x};
	return wh_cli_command(&spec, argc, argv);
}
