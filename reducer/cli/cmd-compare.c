#include <stdlib.h>
#include <string.h>

#include "executor/compare.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"

static const char compare_help[] =
	"usage: whittle compare DIR_A DIR_B [--atol X] [--rtol X] [--check-error-stat S] [--show-histogram]\n\n"
	"Compares the tensors of DIR_A with the same-named tensors of DIR_B (the reference).\n"
	"An element fails when its absolute error exceeds --atol AND its relative error exceeds\n"
	"--rtol (Polygraphy's semantics). Exit 0 when all pass, 1 when any differs.\n";

int wh_cmd_compare(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"atol", required_argument, NULL, 'a'},
		{"rtol", required_argument, NULL, 'R'},
		{"check-error-stat", required_argument, NULL, 'E'},
		{"show-histogram", no_argument, NULL, 'H'},
		{"help", no_argument, NULL, 'h'},
		{0, 0, 0, 0},
	};
	struct wh_compare_options co;
	wh_compare_options_default(&co);
	bool histogram = false;
	int c;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (!wh_cli_parse_double(optarg, &co.atol) || co.atol < 0)
				return wh_cli_usage_error("compare", "--atol takes a non-negative number, not '%s'", optarg);
			break;
		case 'R':
			if (!wh_cli_parse_double(optarg, &co.rtol) || co.rtol < 0)
				return wh_cli_usage_error("compare", "--rtol takes a non-negative number, not '%s'", optarg);
			break;
		case 'E':
			if (!wh_error_stat_parse(optarg, &co.stat, &co.quantile))
				return wh_cli_usage_error("compare", "--check-error-stat takes elemwise, max, mean, median or quantile[=Q], not '%s'", optarg);
			break;
		case 'H': histogram = true; break;
		case 'h': fputs(compare_help, stdout); return 0;
		default: return wh_cli_bad_option("compare", c, argv);
		}
	}
	if (optind != argc - 2)
		return wh_cli_usage_error("compare", "expects two folders DIR_A DIR_B (see whittle compare --help)");
	struct wh_tensor_set a, b;
	wh_tensor_set_init(&a);
	wh_tensor_set_init(&b);
	int rc = 0;
	enum wh_status st = wh_tensor_set_read_dir(argv[optind], NULL, &a);
	if (st == WH_OK)
		st = wh_tensor_set_read_dir(argv[optind + 1], NULL, &b);
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
			printf("MISSING %s: not in %s\n", name, argv[optind]);
			missing++;
			continue;
		}
		struct wh_compare_stats s;
		if ((st = wh_compare_tensors(t, &b.items[i].t, &co, &s)) != WH_OK) {
			rc = wh_cli_fail(st);
			goto out;
		}
		wh_compare_print(stdout, name, &s, histogram);
		compared++;
		failed += !s.pass || !s.comparable;
	}
	if (!compared) {
		rc = wh_cli_fail(wh_error(WH_ERR_NOT_FOUND, "%s and %s: no tensor names in common (name the files after the tensors)", argv[optind], argv[optind + 1]));
		goto out;
	}
	if (failed || missing) {
		printf("compare: FAIL: %zu of %zu tensors differ, %zu missing\n", failed, compared, missing);
		rc = WH_EXIT_FAILS;
	} else {
		printf("compare: PASS: %zu tensors within atol %g rtol %g\n", compared, co.atol, co.rtol);
	}
out:
	wh_tensor_set_release(&a);
	wh_tensor_set_release(&b);
	return rc;
}
