/* Constant folding evaluates with the executor's kernels: every ONNX backend test case (node
 * suite) whose inputs are all made constants is sanitized with --fold-constants, and every
 * output that folded into an initializer must equal the case's expected output at ONNX's
 * tolerance. The ONNX test data is the oracle. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/sanitize.h"
#include "graph/tensor-file.h"
#include "tests/kernel-harness.h"

/* ONNX's backend tests compare at rtol 1e-3, atol 1e-7 (NaN equals NaN), except where the
 * expected output is float32 noise of the generator around an exact 0 (DFT inverse: 1.9e-7;
 * the same cases get atol 1e-6 in tests/tool-conformance.c, for the same reason). */
static bool same_values(const struct wh_tensor *got, const struct wh_tensor *exp, double atol, char *why, size_t size)
{
	if (got->dtype != exp->dtype || !wh_tensor_same_shape(got, exp)) {
		char a[64], b[64];
		snprintf(why, size, "%s %s, expected %s %s", wh_dtype_name(got->dtype), wh_shape_str(got->dims, got->rank, a, sizeof a),
			 wh_dtype_name(exp->dtype), wh_shape_str(exp->dims, exp->rank, b, sizeof b));
		return false;
	}
	bool fl = wh_dtype_is_float(exp->dtype);
	for (uint64_t i = 0; i < exp->count; i++) {
		if (!fl) {
			if (wh_tensor_get_i64(got, i) != wh_tensor_get_i64(exp, i)) {
				snprintf(why, size, "element %llu: %lld, expected %lld", (unsigned long long)i,
					 (long long)wh_tensor_get_i64(got, i), (long long)wh_tensor_get_i64(exp, i));
				return false;
			}
			continue;
		}
		double a = wh_tensor_get_f64(got, i), e = wh_tensor_get_f64(exp, i);
		if ((isnan(a) && isnan(e)) || a == e || fabs(a - e) <= atol + 1e-3 * fabs(e))
			continue;
		snprintf(why, size, "element %llu: %.9g, expected %.9g", (unsigned long long)i, a, e);
		return false;
	}
	return true;
}

START_TEST(test_fold_matches_onnx_tests)
{
	const char *root = getenv("WHITTLE_ONNX_TESTS");
	ck_assert_msg(root && *root, "WHITTLE_ONNX_TESTS is not set (run through ctest)");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/node", root);
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "%s: cannot open", dir);
	uint32_t cases = 0, folded = 0, outputs = 0, wrong = 0;
	char ops[64][40];
	uint32_t n_ops = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strstr(e->d_name, "_expanded"))
			continue;
		char path[8192];
		snprintf(path, sizeof path, "%s/%s/model.onnx", dir, e->d_name);
		struct wh_model *m, *s = NULL;
		if (wh_model_load(path, &m) != WH_OK) {
			wh_error_clear();
			continue;
		}
		struct wh_graph *g = m->graph;
		bool ok = g->n_nodes == 1;
		uint32_t n_in = g->n_inputs, ins[64], k = 0;
		if (n_in)
			memcpy(ins, g->inputs, (n_in < 64 ? n_in : 64) * sizeof ins[0]);
		for (uint32_t i = 0; ok && i < n_in && i < 64; i++) {
			const struct wh_value *v = &g->values[ins[i]];
			if (v->flags & WH_VALUE_INITIALIZER)
				continue;
			snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%u.pb", dir, e->d_name, k++);
			struct wh_tensor t;
			wh_tensor_init(&t);
			/* sequences, optionals and strings are not folded */
			ok = !v->type_rest.len && wh_tensor_read_pb(path, &t, NULL) == WH_OK && t.dtype != WH_DT_STRING;
			if (ok)
				kh_input_to_constant(g, ins[i], &t);
			wh_error_clear();
			wh_tensor_release(&t);
		}
		struct wh_sanitize_options opt = {
			.fold_constants = true, .max_fold_elements = (uint64_t)1 << 24, .evaluate = wh_executor_fold_eval,
		};
		if (ok) {
			cases++;
			ck_assert_msg(wh_model_sanitize(m, &opt, &s, NULL) == WH_OK, "%s: %s", e->d_name, wh_error_message());
		}
		bool any = false;
		for (uint32_t i = 0; s && i < s->graph->n_outputs; i++) {
			const struct wh_value *v = &s->graph->values[s->graph->outputs[i]];
			if (!(v->flags & WH_VALUE_INITIALIZER) || s->graph->n_nodes)
				continue;
			struct wh_tensor got, exp;
			wh_tensor_init(&got);
			wh_tensor_init(&exp);
			int64_t dims[WH_MAX_RANK];
			for (int32_t j = 0; j < v->rank; j++)
				dims[j] = v->dims[j].value;
			ck_assert_int_eq(wh_tensor_from_raw(&got, v->dtype, v->rank, dims, v->data), WH_OK);
			snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%u.pb", dir, e->d_name, i);
			ck_assert_msg(wh_tensor_read_pb(path, &exp, NULL) == WH_OK, "%s: %s", path, wh_error_message());
			char why[256];
			outputs++;
			any = true;
			double atol = strncmp(e->d_name, "test_dft_inverse", 16) ? 1e-7 : 1e-6;
			if (!same_values(&got, &exp, atol, why, sizeof why) && wrong++ < 20)
				fprintf(stderr, "%s: output %u folded to a different value: %s\n", e->d_name, i, why);
			wh_tensor_release(&got);
			wh_tensor_release(&exp);
		}
		if (any) {
			folded++;
			const char *op = g->nodes[0].op_type;
			bool seen = false;
			for (uint32_t i = 0; i < n_ops; i++)
				seen = seen || !strcmp(ops[i], op);
			/* remember a few ops fold-eval.c never had, to check below */
			if (!seen && n_ops < 64 && (!strcmp(op, "Einsum") || !strcmp(op, "Softmax") || !strcmp(op, "Conv") ||
						   !strcmp(op, "DFT") || !strcmp(op, "TopK") || !strcmp(op, "Gemm")))
				snprintf(ops[n_ops++], sizeof ops[0], "%s", op);
		}
		wh_model_destroy(s);
		wh_model_destroy(m);
	}
	closedir(d);
	fprintf(stderr, "fold: %u of %u single-node cases folded completely, %u outputs compared, %u wrong\n", folded, cases,
		outputs, wrong);
	ck_assert_uint_gt(cases, 1000);
	/* most cases fold (not: random ops, sequence and string outputs, ops with subgraphs) */
	ck_assert_uint_gt(folded, cases * 3 / 4);
	ck_assert_msg(n_ops == 6, "only %u of Einsum, Softmax, Conv, DFT, TopK, Gemm folded", n_ops);
	ck_assert_msg(wrong == 0, "%u folded outputs differ from the ONNX test data", wrong);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fold");
	TCase *tc = tcase_create("onnx");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_fold_matches_onnx_tests);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
