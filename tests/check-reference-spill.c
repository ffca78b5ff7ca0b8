/* Reference values of reduce past their memory budget (reducer/reduce.h reference_memory):
 * - wh_engine_run_each hands over exactly the tensors, bits and order that WH_KEEP_ALL
 *   returns, on the PaddleOCR rec model;
 * - wh_reduce_run with the built-in check at fp16 reduces that model to the same bytes, and
 *   writes the same reference values into its repro bundle (inputs/, golden/), whether
 *   every reference value is in memory (the default budget), none is (each one a mapped
 *   .npy), or a budget keeps some; the report says how many bytes went where, within the
 *   budget. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/executor.h"
#include "tests/kernel-harness.h"
#include "executor/precision.h"
#include "graph/onnx-io.h"
#include "graph/os.h"
#include "graph/shape.h"
#include "reducer/reduce.h"

/* a path into buf, refused when it does not fit */
#define PATHF(buf, ...) ck_assert_int_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf)

static enum wh_status collect(void *state, const char *name, const struct wh_tensor *t)
{
	return wh_tensor_set_add(state, name, -1, t);
}

START_TEST(test_run_each_is_keep_all)
{
	struct wh_model *m = kh_rec_model();
	struct wh_engine_options eo = {.threads = 2};
	struct wh_engine *e = NULL;
	ck_assert_msg(wh_engine_create(m, &eo, &e) == WH_OK, "%s", wh_error_message());
	struct wh_tensor_set ins, all, each;
	kh_rec_input(&ins, 777);
	wh_tensor_set_init(&all);
	wh_tensor_set_init(&each);
	ck_assert_msg(wh_engine_run(e, &ins, WH_KEEP_ALL, &all) == WH_OK, "%s", wh_error_message());
	ck_assert_msg(wh_engine_run_each(e, &ins, collect, &each) == WH_OK, "%s", wh_error_message());
	ck_assert_uint_gt(all.n, 100);
	ck_assert_uint_eq(each.n, all.n);
	for (size_t i = 0; i < all.n; i++) {
		const struct wh_tensor *x = &all.items[i].t, *y = &each.items[i].t;
		ck_assert_str_eq(each.items[i].name, all.items[i].name);
		ck_assert(x->dtype == y->dtype && wh_tensor_same_shape(x, y));
		ck_assert_msg(!memcmp(x->data, y->data, wh_tensor_nbytes(x)), "tensor %s differs", all.items[i].name);
	}
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&all);
	wh_tensor_set_release(&each);
	wh_engine_destroy(e);
	wh_model_destroy(m);
}
END_TEST

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	char *b = malloc(*len + 1);
	ck_assert_uint_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

/* The files of dir/repro/inputs and dir/repro/golden, name and bytes, one after the other. */
static char *repro_values(const char *dir, size_t *len_out)
{
	size_t len = 0;
	char *all = NULL;
	static const char *const subs[] = {"inputs", "golden"};
	for (int i = 0; i < 2; i++) {
		char d[1200];
		PATHF(d, "%s/repro/%s", dir, subs[i]);
		struct dirent **names = NULL;
		int n = scandir(d, &names, NULL, alphasort);
		ck_assert_msg(n > 2, "%s: no files", d);
		for (int k = 0; k < n; k++) {
			if (names[k]->d_name[0] != '.') {
				char p[1500];
				PATHF(p, "%s/%s", d, names[k]->d_name);
				size_t l, nl = strlen(p) - strlen(dir);
				char *b = read_file(p, &l);
				all = realloc(all, len + nl + l);
				memcpy(all + len, p + strlen(dir), nl);
				memcpy(all + len + nl, b, l);
				len += nl + l;
				free(b);
			}
			free(names[k]);
		}
		free(names);
	}
	*len_out = len;
	return all;
}

/* Reduces the rec model at fp16 (atol/rtol 1e-5: the fp16 run fails) with the given budget,
 * -j jobs, into dir/out.onnx. */
static void reduce_with(const struct wh_model *m, const char *dir, int64_t budget, int jobs, struct wh_reduce_report *rep)
{
	struct wh_precision_config pc;
	wh_precision_config_init(&pc);
	pc.dflt = WH_PREC_FP16;
	char out[1200], art[1200];
	PATHF(out, "%s/out.onnx", dir);
	PATHF(art, "%s/art", dir);
	FILE *log = fopen("/dev/null", "w");
	struct wh_reduce_options o = {
		.mode = WH_SEARCH_DDMIN,
		.jobs = jobs,
		.reduce_inputs = true,
		.reduce_outputs = true,
		.engine = {.threads = 2, .precision = &pc},
		.compare = {.atol = 1e-5, .rtol = 1e-5},
		.output_path = out,
		.artifacts_dir = art,
		.log = log,
		.confirm_runs = 1,
		.reference_memory = budget,
	};
	struct wh_tensor_set ins;
	kh_rec_input(&ins, 777);
	struct wh_reduce_data data = {.inputs = &ins, .n_samples = 1};
	ck_assert_msg(wh_reduce_run(m, &data, &o, rep) == WH_OK, "budget %lld: %s", (long long)budget, wh_error_message());
	ck_assert_uint_lt(rep->nodes_after, rep->nodes_before);
	wh_tensor_set_release(&ins);
	fclose(log);
}

START_TEST(test_reduce_same_whatever_the_budget)
{
	struct wh_model *m = kh_rec_model();
	char root[1024];
	const char *tmp = getenv("TMPDIR");
	PATHF(root, "%s/wh-spill-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_int_eq(wh_os_make_temp_dir(root), WH_OK);
	static const int64_t budgets[] = {0, -1, 64 << 10};
	char *first = NULL, *first_vals = NULL;
	size_t first_len = 0, first_vals_len = 0;
	for (int i = 0; i < 4; i++) {
		int64_t b = budgets[i < 3 ? i : 1];
		int jobs = i == 3 ? 2 : 1; /* -j 2 with every value on disk */
		char dir[1100], out[1200], art[1200];
		PATHF(dir, "%s/b%d", root, i);
		ck_assert_int_eq(wh_os_make_dir(dir), WH_OK);
		struct wh_reduce_report rep;
		reduce_with(m, dir, b, jobs, &rep);
		if (b == 0) {
			ck_assert_uint_eq(rep.ref_disk_bytes, 0);
			ck_assert_uint_gt(rep.ref_memory_bytes, 0);
		} else if (b < 0) {
			ck_assert_uint_eq(rep.ref_memory_bytes, 0);
			ck_assert_uint_gt(rep.ref_disk_bytes, 0);
		} else {
			ck_assert_uint_le(rep.ref_memory_bytes, (uint64_t)b);
			ck_assert_uint_gt(rep.ref_memory_bytes, 0);
			ck_assert_uint_gt(rep.ref_disk_bytes, 0);
		}
		PATHF(out, "%s/out.onnx", dir);
		PATHF(art, "%s/art", dir);
		size_t len, vlen;
		char *bytes = read_file(out, &len), *vals = repro_values(art, &vlen);
		if (!first) {
			first = bytes;
			first_len = len;
			first_vals = vals;
			first_vals_len = vlen;
		} else {
			ck_assert_msg(len == first_len && !memcmp(bytes, first, len), "budget %lld, -j %d: another reduced model",
				      (long long)b, jobs);
			ck_assert_msg(vlen == first_vals_len && !memcmp(vals, first_vals, vlen),
				      "budget %lld, -j %d: other reference values in the repro bundle", (long long)b, jobs);
			free(bytes);
			free(vals);
		}
	}
	free(first);
	free(first_vals);
	wh_os_remove_tree(root);
	wh_model_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("reference-spill");
	TCase *tc = tcase_create("spill");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_run_each_is_keep_all);
	tcase_add_test(tc, test_reduce_same_whatever_the_budget);
	suite_add_tcase(s, tc);
	SRunner *r = srunner_create(s);
	srunner_run_all(r, CK_NORMAL);
	int failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
