/* Constant layers that hold only for the input shapes (executor/runtime.c, plan_constants:
 * a Shape of a tensor whose shape follows from the graph inputs' shapes, and what is
 * computed from it). The model: s = Shape(x), c = ConstantOfShape(s), t = ReduceSum(Cast(s))
 * (1 + N for x of shape [1, N]), y = x + t + c. Its second run must take s, c and t from the
 * constants (the profile says "constant"), and a run with another N must compute them again:
 * y = x + 1 + N, never the last shape's 1 + N, and no broadcast of a stale [1, N]. A Shape of
 * a NonZero's output (a shape the inputs' values decide) is never constant. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "tests/kernel-harness.h"
#include "graph/ir.h"
#include "graph/tensor.h"

static uint32_t node(struct wh_graph *g, const char *op, const char *name, uint32_t n_in, const char *const *in,
		     const char *out)
{
	uint32_t ins[4], o = kh_value(g, out), id;
	for (uint32_t k = 0; k < n_in; k++)
		ins[k] = kh_value(g, in[k]);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", name, n_in, ins, 1, &o, &id), WH_OK);
	return id;
}

static void int_attr(struct wh_model *m, struct wh_graph *g, uint32_t id, const char *name, int64_t v)
{
	struct wh_attr *a = wh_arena_calloc(m->arena, 1, sizeof *a);
	a->name = name;
	a->type = WH_ATTR_INT;
	a->i = v;
	g->nodes[id].attrs = a;
	g->nodes[id].n_attrs = 1;
}

/* nonzero: s is the Shape of NonZero(x) instead (its shape depends on x's values) */
static struct wh_model *model(bool nonzero)
{
	struct wh_model *m = kh_model_new();
	struct wh_graph *g = m->graph;
	uint32_t x = kh_value(g, "x");
	int64_t dims[2] = {1, -1};
	ck_assert_int_eq(wh_graph_set_shape(g, x, WH_DT_FLOAT, 2, dims), WH_OK);
	g->values[x].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(g, x), WH_OK);
	if (nonzero) {
		node(g, "NonZero", "nz", 1, (const char *[]){"x"}, "nzo");
		node(g, "Shape", "shape", 1, (const char *[]){"nzo"}, "s");
	} else {
		node(g, "Shape", "shape", 1, (const char *[]){"x"}, "s");
	}
	node(g, "ConstantOfShape", "zeros", 1, (const char *[]){"s"}, "c");
	int_attr(m, g, node(g, "Cast", "cast", 1, (const char *[]){"s"}, "sf"), "to", WH_DT_FLOAT);
	int_attr(m, g, node(g, "ReduceSum", "sum", 1, (const char *[]){"sf"}, "t"), "keepdims", 0);
	node(g, "Add", "add_t", 2, (const char *[]){"x", "t"}, "xt");
	node(g, "Add", nonzero ? "add_t2" : "add_c", 2, (const char *[]){"xt", nonzero ? "t" : "c"}, "y");
	uint32_t y = kh_value(g, "y");
	ck_assert_int_eq(wh_graph_add_output(g, y), WH_OK);
	return m;
}

/* One run on x = [1..n] (shape [1, n]): y must be x + (1 + n); returns the layers that ran as
 * constants. nz_count: for the NonZero model, how many of x's entries are nonzero (the rest 0). */
static uint32_t run_n(struct wh_engine *e, int64_t n, int64_t nz_count, bool nonzero)
{
	struct wh_tensor x;
	wh_tensor_init(&x);
	int64_t dims[2] = {1, n};
	ck_assert_int_eq(wh_tensor_alloc(&x, WH_DT_FLOAT, 2, dims), WH_OK);
	float *xs = x.data;
	for (int64_t i = 0; i < n; i++)
		xs[i] = nonzero ? (i < nz_count ? 1.0f : 0.0f) : (float)(i + 1);
	struct wh_tensor_set in, out;
	wh_tensor_set_init(&in);
	wh_tensor_set_init(&out);
	ck_assert_int_eq(wh_tensor_set_add(&in, "x", -1, &x), WH_OK);
	ck_assert_msg(wh_engine_run(e, &in, WH_KEEP_OUTPUTS, &out) == WH_OK, "n = %lld: %s", (long long)n, wh_error_message());
	ck_assert_uint_eq(out.n, 1);
	const struct wh_tensor *y = &out.items[0].t;
	ck_assert_int_eq(y->rank, 2);
	ck_assert_int_eq(y->dims[1], n);
	/* Shape(x) = [1, n]; Shape(NonZero(x)) = [2, nz_count] */
	float t = nonzero ? (float)(2 + nz_count) : (float)(1 + n);
	for (int64_t i = 0; i < n; i++)
		ck_assert_msg(((const float *)y->data)[i] == xs[i] + t + (nonzero ? t : 0.0f), "n = %lld: y[%lld] = %g, want %g",
			      (long long)n, (long long)i, ((const float *)y->data)[i], xs[i] + t + (nonzero ? t : 0.0f));
	uint32_t np, constants = 0;
	const struct wh_layer_profile *lp = wh_engine_profile(e, &np);
	for (uint32_t i = 0; i < np; i++)
		constants += lp[i].tactic && !strcmp(lp[i].tactic, "constant");
	wh_tensor_set_release(&in);
	wh_tensor_set_release(&out);
	wh_tensor_release(&x);
	return constants;
}

START_TEST(shape_constants_follow_the_input_shapes)
{
	struct wh_model *m = model(false);
	struct wh_engine *e;
	struct wh_engine_options eo = {.threads = 1, .profile = true};
	ck_assert_int_eq(wh_engine_create(m, &eo, &e), WH_OK);
	ck_assert_uint_eq(run_n(e, 4, 0, false), 0);
	/* Shape, ConstantOfShape, Cast and ReduceSum from the constants */
	ck_assert_uint_eq(run_n(e, 4, 0, false), 4);
	ck_assert_uint_eq(run_n(e, 6, 0, false), 0); /* another shape: computed again */
	ck_assert_uint_eq(run_n(e, 6, 0, false), 4);
	ck_assert_uint_eq(run_n(e, 4, 0, false), 0);
	ck_assert_uint_eq(run_n(e, 4, 0, false), 4);
	wh_engine_destroy(e);
	wh_model_destroy(m);
}
END_TEST

START_TEST(shape_of_a_value_dependent_shape_is_not_constant)
{
	struct wh_model *m = model(true);
	struct wh_engine *e;
	struct wh_engine_options eo = {.threads = 1, .profile = true};
	ck_assert_int_eq(wh_engine_create(m, &eo, &e), WH_OK);
	/* the same input shape, another count of nonzeros: Shape(NonZero(x)) changes */
	ck_assert_uint_eq(run_n(e, 6, 3, true), 0);
	ck_assert_uint_eq(run_n(e, 6, 5, true), 0);
	ck_assert_uint_eq(run_n(e, 6, 2, true), 0);
	wh_engine_destroy(e);
	wh_model_destroy(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("shape-constants");
	TCase *tc = tcase_create("runs");
	tcase_add_test(tc, shape_constants_follow_the_input_shapes);
	tcase_add_test(tc, shape_of_a_value_dependent_shape_is_not_constant);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
