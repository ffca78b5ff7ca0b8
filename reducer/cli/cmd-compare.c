#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"
#include "reducer/cli/run-opts.h"

static const char compare_help[] =
	"usage: whittle compare DIR_A DIR_B [--atol X] [--rtol X] [--check-error-stat S] [--show-histogram]\n\n"
	"Compares the tensors of DIR_A with the same-named tensors of DIR_B (the reference).\n"
	"An element fails when its absolute error exceeds --atol AND its relative error exceeds\n"
	"--rtol (Polygraphy's semantics). Exit 0 when all pass, 1 when any differs.\n";

enum { OPT_HISTOGRAM = WH_CLI_OPT_BASE };

static enum wh_status compare_option(void *ctx, int c, const char *arg)
{
	(void)arg;
	if (c == OPT_HISTOGRAM)
		*(bool *)ctx = true;
	return WH_OK;
}

/* Exit 0 when every tensor of dir_b has a passing counterpart in dir_a, 1 when not. */
static int compare_dirs(const char *dir_a, const char *dir_b, const struct wh_compare_options *co, bool histogram)
{
	struct wh_tensor_set a, b;
	wh_tensor_set_init(&a);
	wh_tensor_set_init(&b);
	int rc = 0;
	enum wh_status st = wh_tensor_set_read_dir(dir_a, NULL, &a);
	if (st == WH_OK)
		st = wh_tensor_set_read_dir(dir_b, NULL, &b);
	if (st != WH_OK) {
		rc = wh_cli_fail(st);
		goto out;
	}
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
			printf("MISSING %s: not in %s\n", name, dir_a);
			missing++;
			continue;
		}
		struct wh_compare_stats s;
		if ((st = wh_compare_tensors(t, &b.items[i].t, co, &s)) != WH_OK) {
			rc = wh_cli_fail(st);
			goto out;
		}
		wh_compare_print(stdout, name, &s, histogram);
		compared++;
		failed += !s.pass || !s.comparable;
	}
	if (!compared) {
		rc = wh_cli_fail(wh_error(WH_ERR_NOT_FOUND, "%s and %s: no tensor names in common (name the files after the tensors)", dir_a, dir_b));
		goto out;
	}
	if (failed || missing) {
		printf("compare: FAIL: %zu of %zu tensors differ, %zu missing\n", failed, compared, missing);
		rc = WH_EXIT_FAILS;
	} else {
		printf("compare: PASS: %zu tensors within atol %g rtol %g\n", compared, co->atol, co->rtol);
	}
out:
	wh_tensor_set_release(&a);
	wh_tensor_set_release(&b);
	return rc;
}

int wh_cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
		WH_RUN_TOLERANCE_LONGOPTS,
		{"show-histogram", no_argument, NULL, OPT_HISTOGRAM},
		WH_CLI_HELP_LONGOPTS,
	};
	bool histogram = false;
	struct wh_run_opts ro;
	wh_run_opts_init(&ro, "compare", WH_PREC_FP32);
	struct wh_cli_spec spec = {.cmd = "compare", .help = compare_help, .longopts = longopts, .operands = "two folders DIR_A DIR_B",
				   .n_operands = 2, .run_opts = &ro, .own = compare_option, .ctx = &histogram};
	struct wh_cli_args a;
	enum wh_status st = wh_cli_parse(&spec, argc, argv, &a);
	int rc = st != WH_OK || a.help ? wh_cli_exit(st) : compare_dirs(a.operands[0], a.operands[1], &ro.compare, histogram);
	wh_run_opts_release(&ro);
	return rc;
}
