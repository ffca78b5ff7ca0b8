/* The bounded cache of reduced-precision weight copies (executor/emulate.h): whatever the
 * budget (the default, one that forces least-recently-used copies out and leaves weights
 * larger than itself uncached, none at all), every tensor of a run of the PaddleOCR rec model
 * at fp16, bf16 and int8 has the same bits, on the first run and on the next (which reads
 * what the first kept), and the engine never holds more than its budget. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "tests/kernel-harness.h"
#include "executor/precision.h"
#include "graph/onnx-io.h"
#include "graph/shape.h"

static void same_bits(const struct wh_tensor_set *a, const struct wh_tensor_set *b, const char *what)
{
	ck_assert_msg(a->n == b->n, "%s: %zu tensors, want %zu", what, b->n, a->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct wh_tensor *x = &a->items[i].t, *y = &b->items[i].t;
		ck_assert_msg(x->dtype == y->dtype && wh_tensor_same_shape(x, y), "%s: tensor %s differs in type or shape",
			      what, a->items[i].name);
		ck_assert_msg(!memcmp(x->data, y->data, wh_tensor_nbytes(x)), "%s: tensor %s differs", what,
			      a->items[i].name);
	}
}

/* Two runs with the given budget; returns the first run's tensors in *first. */
static void run_twice(const struct wh_model *m, enum wh_precision p, int64_t budget, struct wh_tensor_set *first,
		      size_t *held_out)
{
	struct wh_precision_config c;
	wh_precision_config_init(&c);
	c.dflt = p;
	struct wh_engine_options eo = {.threads = 2, .precision = &c, .weight_cache_bytes = budget};
	struct wh_engine *e = NULL;
	ck_assert_msg(wh_engine_create(m, &eo, &e) == WH_OK, "%s", wh_error_message());
	struct wh_tensor_set ins, second;
	kh_rec_input(&ins, 12345);
	wh_tensor_set_init(first);
	wh_tensor_set_init(&second);
	ck_assert_msg(wh_engine_run(e, &ins, WH_KEEP_ALL, first) == WH_OK, "%s", wh_error_message());
	size_t held = wh_engine_weight_cache_bytes(e);
	ck_assert_msg(wh_engine_run(e, &ins, WH_KEEP_ALL, &second) == WH_OK, "%s", wh_error_message());
	size_t limit = budget < 0 ? 0 : budget ? (size_t)budget : (size_t)512 << 20;
	ck_assert_msg(held <= limit && wh_engine_weight_cache_bytes(e) <= limit, "budget %lld: holds %zu bytes",
		      (long long)budget, held);
	same_bits(first, &second, "second run");
	*held_out = held;
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&second);
	wh_engine_destroy(e);
	wh_precision_config_release(&c);
}

START_TEST(budgets_change_no_bits)
{
	static const enum wh_precision precs[] = {WH_PREC_FP16, WH_PREC_BF16, WH_PREC_INT8};
	struct wh_model *m = kh_rec_model();
	for (size_t i = 0; i < sizeof precs / sizeof precs[0]; i++) {
		struct wh_tensor_set dflt, small, none;
		size_t held_dflt, held_small, held_none;
		run_twice(m, precs[i], 0, &dflt, &held_dflt);
		/* 1 MiB: some copies are dropped for others, and the largest weights (the
		 * classifier's 3 MB) are never kept */
		run_twice(m, precs[i], 1 << 20, &small, &held_small);
		run_twice(m, precs[i], -1, &none, &held_none);
		ck_assert_msg(held_dflt > ((size_t)2 << 20), "default budget keeps only %zu bytes", held_dflt);
		ck_assert_msg(held_small > 0 && held_small < held_dflt, "1 MiB budget keeps %zu bytes", held_small);
		ck_assert_uint_eq(held_none, 0);
		same_bits(&dflt, &small, "1 MiB budget");
		same_bits(&dflt, &none, "no cache");
		wh_tensor_set_release(&dflt);
		wh_tensor_set_release(&small);
		wh_tensor_set_release(&none);
	}
	wh_model_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("emul-cache");
	TCase *tc = tcase_create("budgets");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, budgets_change_no_bits);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
