/* The op registry: every op the executor runs has a shape rule (so `extract` and `reduce`
 * can cut right after it), and the rules of the ops that were missing one agree with the
 * declared outputs of every ONNX backend test case of those ops. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/shape.h"
#include "graph/tensor-file.h"
#include "tests/kernel-harness.h"

START_TEST(test_every_op_has_a_shape_rule)
{
	char missing[4096] = "";
	size_t k = 0;
	uint32_t n_missing = 0;
	ck_assert_uint_gt(wh_op_count(), 150);
	for (size_t i = 0; i < wh_op_count(); i++) {
		const struct wh_op_def *d = wh_op_at(i);
		ck_assert_ptr_nonnull(d);
		if (wh_shape_has_rule(d->domain, d->op_type))
			continue;
		n_missing++;
		if (k + 64 < sizeof missing)
			k += (size_t)snprintf(missing + k, sizeof missing - k, " %s%s%s", d->domain && *d->domain ? d->domain : "",
					      d->domain && *d->domain ? "." : "", d->op_type);
	}
	ck_assert_msg(n_missing == 0, "%u executor ops have no shape rule:%s", n_missing, missing);
	/* and the lookup is not a yes to everything */
	ck_assert(!wh_shape_has_rule("", "NoSuchOp"));
	ck_assert(!wh_shape_has_rule("ai.onnx.ml", "Add"));
	ck_assert(wh_shape_has_rule("ai.onnx", "Add"));
}
END_TEST

/* The ops that got their rule with the registry check. The outputs of the `open` ones depend
 * on the input values (substrings per string, stop words removed) or are sequences and
 * optionals, whose shapes inference does not track: they may stay unknown. MaxRoiPool and
 * Optional have no ONNX backend test case of their own (MaxRoiPool is tested below). */
static const struct {
	const char *op;
	bool open;
} new_ops[] = {
	{"AffineGrid", false}, {"Attention", false}, {"BlackmanWindow", false}, {"CausalConvWithState", false},
	{"Col2Im", false}, {"DFT", false}, {"DeformConv", false}, {"Einsum", false}, {"HammingWindow", false},
	{"HannWindow", false}, {"LinearAttention", false}, {"MaxUnpool", false},
	{"MelWeightMatrix", false}, {"NegativeLogLikelihoodLoss", false}, {"STFT", false},
	{"SoftmaxCrossEntropyLoss", false}, {"StringConcat", false}, {"StringNormalizer", true},
	{"StringSplit", true}, {"SwiGLU", false}, {"TfIdfVectorizer", false}, {"ArrayFeatureExtractor", false},
	{"Binarizer", false}, {"LabelEncoder", false}, {"TreeEnsemble", false}, {"FlexAttention", false},
	{"Adagrad", false}, {"Adam", false}, {"Momentum", false}, {"CenterCropPad", false},
	{"SequenceMap", true}, {"OptionalHasElement", false}, {"OptionalGetElement", true},
};

static int new_op_index(const struct wh_graph *g)
{
	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (size_t i = 0; i < sizeof new_ops / sizeof new_ops[0]; i++)
			if (!strcmp(g->nodes[n].op_type, new_ops[i].op))
				return (int)i;
	return -1;
}

START_TEST(test_new_rules_match_onnx_tests)
{
	const char *root = getenv("WHITTLE_ONNX_TESTS");
	ck_assert_msg(root && *root, "WHITTLE_ONNX_TESTS is not set (run through ctest)");
	char dir[4096];
	snprintf(dir, sizeof dir, "%s/node", root);
	DIR *d = opendir(dir);
	ck_assert_msg(d != NULL, "%s: cannot open", dir);
	uint32_t seen[sizeof new_ops / sizeof new_ops[0]] = {0};
	uint32_t cases = 0, outputs = 0, wrong = 0, open_unknown = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strstr(e->d_name, "_expanded"))
			continue;
		char path[8192];
		snprintf(path, sizeof path, "%s/%s/model.onnx", dir, e->d_name);
		struct wh_model *m;
		if (wh_model_load(path, &m) != WH_OK) {
			wh_error_clear();
			continue;
		}
		struct wh_graph *g = m->graph;
		int op = new_op_index(g);
		if (op < 0) {
			wh_model_destroy(m);
			continue;
		}
		cases++;
		seen[op]++;
		struct wh_input_shape sh[16];
		uint32_t ns = 0, k = 0, n_in = g->n_inputs, ins[64];
		if (n_in)
			memcpy(ins, g->inputs, (n_in < 64 ? n_in : 64) * sizeof ins[0]);
		for (uint32_t i = 0; i < n_in && i < 64; i++) {
			const struct wh_value *v = &g->values[ins[i]];
			if (v->flags & WH_VALUE_INITIALIZER)
				continue;
			snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%u.pb", dir, e->d_name, k++);
			struct wh_tensor t;
			wh_tensor_init(&t);
			if (v->type_rest.len || wh_tensor_read_pb(path, &t, NULL) != WH_OK) {
				wh_error_clear();
				continue;
			}
			/* small integer inputs (axes, lengths, target shapes) become constants, as
			 * ONNX's own inference needs them to get the output shape */
			if (wh_dtype_is_int(t.dtype) && t.count <= 8 && t.dtype != WH_DT_BOOL) {
				kh_input_to_constant(g, ins[i], &t);
			} else if (ns < 16) {
				sh[ns].name = (char *)v->name;
				sh[ns].rank = t.rank;
				memcpy(sh[ns].dims, t.dims, sizeof t.dims);
				ns++;
			}
			wh_tensor_release(&t);
		}
		ck_assert_msg(wh_model_bind_inputs(m, sh, ns) == WH_OK, "%s: %s", e->d_name, wh_error_message());
		/* forget what the file declares, so that inference is what is compared */
		for (uint32_t i = 0; i < g->n_values; i++) {
			struct wh_value *v = &g->values[i];
			if (v->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER))
				continue;
			v->flags &= ~(uint32_t)WH_VALUE_HAS_INFO;
			v->dtype = WH_DT_UNDEFINED;
			v->rank = -1;
			v->dims = NULL;
		}
		ck_assert_msg(wh_model_infer_shapes(m) == WH_OK, "%s: %s", e->d_name, wh_error_message());
		for (uint32_t i = 0; i < g->n_outputs; i++) {
			snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%u.pb", dir, e->d_name, i);
			struct wh_tensor t;
			wh_tensor_init(&t);
			if (wh_tensor_read_pb(path, &t, NULL) != WH_OK) {
				/* a sequence or an optional: only the open ops have those */
				ck_assert_msg(new_ops[op].open, "%s: %s", path, wh_error_message());
				wh_error_clear();
				outputs++;
				open_unknown++;
				continue;
			}
			const struct wh_value *v = &g->values[g->outputs[i]];
			bool unknown = new_ops[op].open && v->rank < 0 && !v->dtype;
			bool ok = unknown || (v->dtype == t.dtype && v->rank == t.rank);
			for (int32_t j = 0; ok && j < v->rank; j++) {
				if (v->dims[j].value < 0 && new_ops[op].open)
					unknown = true;
				else
					ok = v->dims[j].value == t.dims[j];
			}
			outputs++;
			open_unknown += ok && unknown;
			if (!ok && wrong++ < 20) {
				char b1[128], b2[128];
				int64_t dims[WH_MAX_RANK];
				for (int32_t j = 0; j < v->rank && j < WH_MAX_RANK; j++)
					dims[j] = v->dims[j].value;
				fprintf(stderr, "%s: output %u: inferred %s %s, expected %s %s\n", e->d_name, i,
					wh_dtype_name(v->dtype), v->rank < 0 ? "unknown" : wh_shape_str(dims, v->rank, b1, sizeof b1),
					wh_dtype_name(t.dtype), wh_shape_str(t.dims, t.rank, b2, sizeof b2));
			}
			wh_tensor_release(&t);
		}
		wh_model_destroy(m);
	}
	closedir(d);
	for (size_t i = 0; i < sizeof new_ops / sizeof new_ops[0]; i++)
		ck_assert_msg(seen[i] > 0, "no ONNX test case of %s", new_ops[i].op);
	fprintf(stderr, "registry: %u cases, %u outputs, %u mismatches, %u left open by design\n", cases, outputs, wrong,
		open_unknown);
	ck_assert_uint_eq(wrong, 0);
}
END_TEST

static Suite *registry_suite(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_op_has_a_shape_rule);
	tcase_add_test(tc, test_new_rules_match_onnx_tests);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(registry_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
