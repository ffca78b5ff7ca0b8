/* executor/compare.h on values that are not finite (issue 22 finding 4): a tensor of Inf or
 * NaN against a finite reference is never "identical" (cosine 1, SQNR inf), and pairs that
 * differ in NaN/Inf are counted. */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "executor/compare.h"

static void floats(struct wh_tensor *t, const float *v, int64_t n)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, WH_DT_FLOAT, 1, &n), WH_OK);
	for (int64_t i = 0; i < n; i++)
		((float *)t->data)[i] = v[i];
}

static void compare(const float *a, const float *r, int64_t n, struct wh_compare_stats *s)
{
	struct wh_tensor ta, tr;
	struct wh_compare_options o;
	wh_compare_options_default(&o);
	floats(&ta, a, n);
	floats(&tr, r, n);
	ck_assert_int_eq(wh_compare_tensors(&ta, &tr, &o, s), WH_OK);
	wh_tensor_release(&ta);
	wh_tensor_release(&tr);
}

START_TEST(test_all_inf_against_finite_is_not_identical)
{
	const float a[3] = {INFINITY, INFINITY, -INFINITY}, r[3] = {1, 2, 3};
	struct wh_compare_stats s;
	compare(a, r, 3, &s);
	ck_assert(!s.pass);
	ck_assert_uint_eq(s.nonfinite_mismatch, 3);
	ck_assert(isnan(s.cosine));
	ck_assert(isinf(s.sqnr_db) && s.sqnr_db < 0);
	ck_assert(isinf(s.max_abs));
}
END_TEST

START_TEST(test_all_nan_against_finite_is_not_identical)
{
	const float a[2] = {NAN, NAN}, r[2] = {0.5f, -1};
	struct wh_compare_stats s;
	compare(a, r, 2, &s);
	ck_assert(!s.pass);
	ck_assert_uint_eq(s.nonfinite_mismatch, 2);
	ck_assert_uint_eq(s.nan_actual, 2);
	ck_assert(isnan(s.cosine));
	ck_assert(s.sqnr_db == -INFINITY);
}
END_TEST

START_TEST(test_one_mismatch_among_finite_pairs)
{
	const float a[4] = {1, 2, 3, NAN}, r[4] = {1, 2, 3, 4};
	struct wh_compare_stats s;
	compare(a, r, 4, &s);
	ck_assert_uint_eq(s.nonfinite_mismatch, 1);
	ck_assert(isnan(s.cosine));
	ck_assert(s.sqnr_db == -INFINITY);
	ck_assert(s.median_abs == 0);
}
END_TEST

START_TEST(test_matching_nonfinite_values_are_equal)
{
	const float a[3] = {NAN, INFINITY, 2}, r[3] = {NAN, INFINITY, 2};
	struct wh_compare_stats s;
	compare(a, r, 3, &s);
	ck_assert(s.pass);
	ck_assert_uint_eq(s.nonfinite_mismatch, 0);
	ck_assert(s.cosine == 1.0);
	ck_assert(s.sqnr_db == INFINITY);
	ck_assert(s.max_abs == 0);
	/* the same infinity with the other sign is a mismatch */
	const float b[1] = {-INFINITY}, q[1] = {INFINITY};
	compare(b, q, 1, &s);
	ck_assert(!s.pass);
	ck_assert_uint_eq(s.nonfinite_mismatch, 1);
}
END_TEST

START_TEST(test_finite_values_unchanged)
{
	const float a[2] = {1, 2}, r[2] = {1, 2.5f};
	struct wh_compare_stats s;
	compare(a, r, 2, &s);
	ck_assert_uint_eq(s.nonfinite_mismatch, 0);
	ck_assert(isfinite(s.cosine) && s.cosine > 0.99 && s.cosine < 1);
	ck_assert(isfinite(s.sqnr_db));
	ck_assert(fabs(s.max_abs - 0.5) < 1e-12);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare");
	TCase *tc = tcase_create("nonfinite");
	tcase_add_test(tc, test_all_inf_against_finite_is_not_identical);
	tcase_add_test(tc, test_all_nan_against_finite_is_not_identical);
	tcase_add_test(tc, test_one_mismatch_among_finite_pairs);
	tcase_add_test(tc, test_matching_nonfinite_values_are_equal);
	tcase_add_test(tc, test_finite_values_unchanged);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
