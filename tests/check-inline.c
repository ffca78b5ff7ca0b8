/* graph/inline.h: an If replaced by one of its branches. Each case builds a model with an If
 * in the IR, inlines it and checks the graph that comes out (no If left where one was chosen,
 * the If's output names kept, branch names that collide with outer ones renamed, outer
 * values captured by name, nested Ifs, Identity for a branch output computed outside it) and
 * that the executor gives the inlined model the outputs of the original, bit for bit. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "tests/kernel-harness.h"
#include "graph/inline.h"
#include "graph/ir.h"
#include "graph/sanitize.h"
#include "graph/tensor-file.h"
#include "graph/tensor.h"

static void typed(struct wh_graph *g, uint32_t id, enum wh_dtype dt)
{
	int64_t dims[2] = {1, 4};
	ck_assert_int_eq(wh_graph_set_shape(g, id, dt, dt == WH_DT_BOOL ? 0 : 2, dims), WH_OK);
	g->values[id].flags |= WH_VALUE_HAS_INFO;
}

static void input(struct wh_graph *g, const char *name, enum wh_dtype dt)
{
	uint32_t id = kh_value(g, name);
	typed(g, id, dt);
	ck_assert_int_eq(wh_graph_add_input(g, id), WH_OK);
}

static void output(struct wh_graph *g, const char *name)
{
	uint32_t id = kh_value(g, name);
	typed(g, id, WH_DT_FLOAT);
	ck_assert_int_eq(wh_graph_add_output(g, id), WH_OK);
}

/* op(in) -> out; an input not defined here is captured from the enclosing graph */
static uint32_t node1(struct wh_graph *g, const char *op, const char *name, const char *in, const char *out)
{
	uint32_t i = kh_value(g, in), o = kh_value(g, out), id;
	const struct wh_value *v = &g->values[i];
	if (g->parent && v->producer == WH_NONE && !(v->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER)))
		g->values[i].flags |= WH_VALUE_OUTER;
	ck_assert_int_eq(wh_graph_add_node(g, op, "", name, 1, &i, 1, &o, &id), WH_OK);
	return id;
}

static struct wh_graph *branch(struct wh_model *m, struct wh_graph *parent)
{
	struct wh_graph *g;
	ck_assert_int_eq(wh_graph_create_in(m, parent, &g), WH_OK);
	g->name = "branch";
	return g;
}

/* If(cond) -> out with the two branches */
static uint32_t if_node(struct wh_model *m, struct wh_graph *g, const char *name, const char *cond, const char *out,
			struct wh_graph *then_g, struct wh_graph *else_g)
{
	uint32_t c = kh_value(g, cond), o = kh_value(g, out), id;
	if (g->parent && g->values[c].producer == WH_NONE && !(g->values[c].flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER)))
		g->values[c].flags |= WH_VALUE_OUTER;
	ck_assert_int_eq(wh_graph_add_node(g, "If", "", name, 1, &c, 1, &o, &id), WH_OK);
	struct wh_attr *a = wh_arena_calloc(m->arena, 3, sizeof *a);
	a[0].name = "then_branch";
	a[0].type = WH_ATTR_GRAPH;
	a[0].g = then_g;
	a[1].name = "else_branch";
	a[1].type = WH_ATTR_GRAPH;
	a[1].g = else_g;
	g->nodes[id].attrs = a;
	g->nodes[id].n_attrs = 2;
	return id;
}

static int always(void *state, const struct wh_graph *g, uint32_t node)
{
	(void)g;
	(void)node;
	return *(const int *)state;
}

static uint32_t count_op(const struct wh_graph *g, const char *op)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++)
		n += !strcmp(g->nodes[i].op_type, op);
	return n;
}

static const struct wh_node *node_named(const struct wh_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (!strcmp(g->nodes[i].name, name))
			return &g->nodes[i];
	return NULL;
}

/* The outputs of m and of its inlined copy on x = [-2, -1, 1, 2] and flag are the same bits. */
static void same_outputs(const struct wh_model *a, const struct wh_model *b, bool flag, bool with_flag)
{
	struct wh_tensor x, f;
	wh_tensor_init(&x);
	wh_tensor_init(&f);
	int64_t dims[2] = {1, 4};
	ck_assert_int_eq(wh_tensor_alloc(&x, WH_DT_FLOAT, 2, dims), WH_OK);
	float xs[4] = {-2, -1, 1, 2};
	memcpy(x.data, xs, sizeof xs);
	ck_assert_int_eq(wh_tensor_alloc(&f, WH_DT_BOOL, 0, dims), WH_OK);
	*(uint8_t *)f.data = flag;
	const struct wh_model *ms[2] = {a, b};
	struct wh_tensor_set outs[2];
	for (int k = 0; k < 2; k++) {
		struct wh_tensor_set in;
		wh_tensor_set_init(&in);
		wh_tensor_set_init(&outs[k]);
		ck_assert_int_eq(wh_tensor_set_add(&in, "x", -1, &x), WH_OK);
		if (with_flag)
			ck_assert_int_eq(wh_tensor_set_add(&in, "flag", -1, &f), WH_OK);
		struct wh_engine *e;
		struct wh_engine_options eo = {.threads = 1};
		ck_assert_int_eq(wh_engine_create(ms[k], &eo, &e), WH_OK);
		ck_assert_int_eq(wh_engine_run(e, &in, WH_KEEP_OUTPUTS, &outs[k]), WH_OK);
		wh_engine_destroy(e);
		wh_tensor_set_release(&in);
	}
	ck_assert_uint_eq(outs[0].n, outs[1].n);
	for (size_t i = 0; i < outs[0].n; i++) {
		ck_assert_str_eq(outs[0].items[i].name, outs[1].items[i].name);
		ck_assert_uint_eq(outs[0].items[i].t.count, outs[1].items[i].t.count);
		ck_assert(!memcmp(outs[0].items[i].t.data, outs[1].items[i].t.data,
				  wh_tensor_nbytes(&outs[0].items[i].t)));
	}
	wh_tensor_set_release(&outs[0]);
	wh_tensor_set_release(&outs[1]);
	wh_tensor_release(&x);
	wh_tensor_release(&f);
}

/* y = If(flag, then: Relu(x), else: Neg(x)) */
static struct wh_model *simple(void)
{
	struct wh_model *m = kh_model_new();
	struct wh_graph *g = m->graph;
	input(g, "x", WH_DT_FLOAT);
	input(g, "flag", WH_DT_BOOL);
	struct wh_graph *t = branch(m, g), *e = branch(m, g);
	node1(t, "Relu", "then_relu", "x", "t_out");
	output(t, "t_out");
	node1(e, "Neg", "else_neg", "x", "e_out");
	output(e, "e_out");
	if_node(m, g, "If_0", "flag", "y", t, e);
	output(g, "y");
	return m;
}

START_TEST(test_then_and_else)
{
	for (int pick = 0; pick <= 1; pick++) {
		struct wh_model *m = simple(), *out = NULL;
		struct wh_inline_stats st = {0};
		ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, &st), WH_OK);
		ck_assert_uint_eq(st.inlined, 1);
		const struct wh_graph *g = out->graph;
		ck_assert_uint_eq(g->n_nodes, 1);
		ck_assert_uint_eq(count_op(g, "If"), 0);
		/* the branch's own node name; its output takes the If's output name */
		const struct wh_node *n = node_named(g, pick ? "then_relu" : "else_neg");
		ck_assert_ptr_nonnull(n);
		ck_assert_str_eq(g->values[n->outputs[0]].name, "y");
		ck_assert_str_eq(g->values[n->inputs[0]].name, "x");
		ck_assert_uint_eq(g->n_outputs, 1);
		ck_assert_str_eq(g->values[g->outputs[0]].name, "y");
		same_outputs(m, out, pick, true);
		wh_model_destroy(out);
		wh_model_destroy(m);
	}
}
END_TEST

START_TEST(test_keep)
{
	int keep = -1;
	struct wh_model *m = simple(), *out = NULL;
	struct wh_inline_stats st = {0};
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &keep, &out, &st), WH_OK);
	ck_assert_uint_eq(st.inlined, 0);
	ck_assert_uint_eq(count_op(out->graph, "If"), 1);
	const struct wh_attr *a = wh_node_attr(&out->graph->nodes[0], "then_branch");
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(a->g->n_nodes, 1);
	ck_assert_ptr_eq(a->g->parent, out->graph);
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

/* The branch defines "h", a name the main graph has too (names are untrusted): the branch's
 * is renamed, the main graph's stays, and every reader reads the right one. */
START_TEST(test_collision)
{
	struct wh_model *m = kh_model_new(), *out = NULL;
	struct wh_graph *g = m->graph;
	input(g, "x", WH_DT_FLOAT);
	input(g, "flag", WH_DT_BOOL);
	node1(g, "Neg", "outer_h", "x", "h");
	struct wh_graph *t = branch(m, g), *e = branch(m, g);
	node1(t, "Relu", "then_relu", "x", "h"); /* shadows the outer h */
	node1(t, "Sigmoid", "then_sig", "h", "t_out");
	output(t, "t_out");
	node1(e, "Identity", "else_id", "h", "e_out"); /* the outer h */
	output(e, "e_out");
	if_node(m, g, "If_0", "flag", "y", t, e);
	node1(g, "Abs", "after", "h", "h_abs");
	output(g, "y");
	output(g, "h_abs");
	int pick = 1;
	struct wh_inline_stats st = {0};
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, &st), WH_OK);
	ck_assert_uint_eq(st.renamed, 1);
	const struct wh_graph *og = out->graph;
	const struct wh_node *relu = node_named(og, "then_relu"), *sig = node_named(og, "then_sig"), *after = node_named(og, "after");
	ck_assert_ptr_nonnull(relu);
	ck_assert_str_eq(og->values[relu->outputs[0]].name, "h__1");
	ck_assert_str_eq(og->values[sig->inputs[0]].name, "h__1");
	ck_assert_str_eq(og->values[sig->outputs[0]].name, "y");
	ck_assert_str_eq(og->values[after->inputs[0]].name, "h");
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	/* else: the branch reads the outer h, and gives it through an Identity (its output is
	 * computed outside the branch) */
	pick = 0;
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, &st), WH_OK);
	const struct wh_node *id = node_named(out->graph, "else_id");
	ck_assert_ptr_nonnull(id);
	ck_assert_str_eq(out->graph->values[id->inputs[0]].name, "h");
	ck_assert_str_eq(out->graph->values[id->outputs[0]].name, "y");
	same_outputs(m, out, false, true);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

/* A branch whose output is an outer value: an Identity named after the If gives it. */
START_TEST(test_passthrough)
{
	struct wh_model *m = kh_model_new(), *out = NULL;
	struct wh_graph *g = m->graph;
	input(g, "x", WH_DT_FLOAT);
	input(g, "flag", WH_DT_BOOL);
	struct wh_graph *t = branch(m, g), *e = branch(m, g);
	uint32_t xo = kh_value(t, "x");
	t->values[xo].flags |= WH_VALUE_OUTER;
	output(t, "x");
	node1(e, "Neg", "else_neg", "x", "e_out");
	output(e, "e_out");
	if_node(m, g, "If_0", "flag", "y", t, e);
	output(g, "y");
	int pick = 1;
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, NULL), WH_OK);
	const struct wh_node *n = node_named(out->graph, "If_0/output_0");
	ck_assert_ptr_nonnull(n);
	ck_assert_str_eq(n->op_type, "Identity");
	ck_assert_str_eq(out->graph->values[n->inputs[0]].name, "x");
	ck_assert_str_eq(out->graph->values[n->outputs[0]].name, "y");
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

/* If(flag) whose then branch holds If(flag) (captured from two levels up): both inlined;
 * keeping the outer one keeps the inner one inside it. */
static int outer_only(void *state, const struct wh_graph *g, uint32_t node)
{
	const struct wh_model *m = state;
	(void)node;
	return g == m->graph ? 1 : -1;
}

START_TEST(test_nested)
{
	struct wh_model *m = kh_model_new(), *out = NULL;
	struct wh_graph *g = m->graph;
	input(g, "x", WH_DT_FLOAT);
	input(g, "flag", WH_DT_BOOL);
	struct wh_graph *t = branch(m, g), *e = branch(m, g);
	struct wh_graph *it = branch(m, t), *ie = branch(m, t);
	node1(it, "Relu", "inner_relu", "x", "it_out");
	output(it, "it_out");
	node1(ie, "Neg", "inner_neg", "x", "ie_out");
	output(ie, "ie_out");
	if_node(m, t, "If_inner", "flag", "inner_y", it, ie);
	node1(t, "Sigmoid", "then_sig", "inner_y", "t_out");
	output(t, "t_out");
	node1(e, "Neg", "else_neg", "x", "e_out");
	output(e, "e_out");
	if_node(m, g, "If_outer", "flag", "y", t, e);
	output(g, "y");
	int pick = 1;
	struct wh_inline_stats st = {0};
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, &st), WH_OK);
	ck_assert_uint_eq(st.inlined, 2);
	ck_assert_uint_eq(count_op(out->graph, "If"), 0);
	ck_assert_ptr_nonnull(node_named(out->graph, "inner_relu"));
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	ck_assert_int_eq(wh_model_inline_ifs(m, outer_only, m, &out, &st), WH_OK);
	ck_assert_uint_eq(st.inlined, 1);
	ck_assert_uint_eq(count_op(out->graph, "If"), 1);
	ck_assert_ptr_nonnull(node_named(out->graph, "If_inner"));
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

/* A subgraph kept inside the chosen branch reads a branch value whose name had to change:
 * refused (inlining would make it read another value). */
START_TEST(test_refuses_renamed_capture)
{
	struct wh_model *m = kh_model_new(), *out = NULL;
	struct wh_graph *g = m->graph;
	input(g, "x", WH_DT_FLOAT);
	input(g, "flag", WH_DT_BOOL);
	node1(g, "Neg", "outer_h", "x", "h");
	struct wh_graph *t = branch(m, g), *e = branch(m, g);
	node1(t, "Relu", "then_relu", "x", "h");
	struct wh_graph *it = branch(m, t), *ie = branch(m, t);
	node1(it, "Sigmoid", "inner_sig", "h", "it_out");
	output(it, "it_out");
	node1(ie, "Neg", "inner_neg", "h", "ie_out");
	output(ie, "ie_out");
	if_node(m, t, "If_inner", "flag", "t_out", it, ie);
	output(t, "t_out");
	node1(e, "Neg", "else_neg", "x", "e_out");
	output(e, "e_out");
	if_node(m, g, "If_outer", "flag", "y", t, e);
	node1(g, "Abs", "after", "h", "h_abs");
	output(g, "y");
	output(g, "h_abs");
	ck_assert_int_eq(wh_model_inline_ifs(m, outer_only, m, &out, NULL), WH_ERR_UNSUPPORTED);
	ck_assert_ptr_null(out);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "If_outer"));
	/* inlining both is fine: the inner one's readers are renamed with it */
	int pick = 1;
	ck_assert_int_eq(wh_model_inline_ifs(m, always, &pick, &out, NULL), WH_OK);
	same_outputs(m, out, true, true);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

/* --bind-input's parser: values, booleans, and each way to get it wrong */
START_TEST(test_bindings_parse)
{
	struct wh_input_binding *b = NULL;
	uint32_t n = 0;
	ck_assert_int_eq(wh_input_bindings_parse("sr=16000,flag=true,gain=-0.5,off=false", &b, &n), WH_OK);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(b[0].name, "sr");
	ck_assert(b[0].value == 16000.0);
	ck_assert(b[1].value == 1.0 && b[2].value == -0.5 && b[3].value == 0.0);
	wh_input_bindings_free(b, n);
	/* a name holding '=' splits at the last one */
	ck_assert_int_eq(wh_input_bindings_parse("a=b=2", &b, &n), WH_OK);
	ck_assert_str_eq(b[0].name, "a=b");
	wh_input_bindings_free(b, n);
	const char *bad[] = {"sr", "=1", "sr=", "sr=abc", "sr=1,sr=2", "sr=inf", "sr=nan", ",", ""};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		b = NULL;
		ck_assert_msg(wh_input_bindings_parse(bad[i], &b, &n) == WH_ERR_USAGE, "'%s' accepted", bad[i]);
		ck_assert_ptr_null(b);
	}
}
END_TEST

/* flag bound to true / false: sanitize --fold-constants replaces the If by that branch and the
 * input is gone; without the binding the If stays. */
START_TEST(test_bind_and_fold)
{
	for (int pick = -1; pick <= 1; pick++) {
		struct wh_model *m = simple(), *out = NULL;
		if (pick >= 0) {
			struct wh_input_binding b = {.name = "flag", .value = pick};
			ck_assert_int_eq(wh_model_bind_input_values(m, &b, 1), WH_OK);
			ck_assert_uint_eq(m->graph->n_inputs, 1);
			uint32_t f = wh_graph_find_value(m->graph, "flag");
			ck_assert(m->graph->values[f].flags & WH_VALUE_INITIALIZER);
			ck_assert(!(m->graph->values[f].flags & WH_VALUE_INPUT));
		}
		struct wh_sanitize_options o = {.fold_constants = true, .evaluate = wh_executor_fold_eval};
		struct wh_sanitize_stats st = {0};
		ck_assert_int_eq(wh_model_sanitize(m, &o, &out, &st), WH_OK);
		if (pick < 0) {
			ck_assert_uint_eq(st.ifs_folded, 0);
			ck_assert_uint_eq(count_op(out->graph, "If"), 1);
		} else {
			ck_assert_uint_eq(st.ifs_folded, 1);
			ck_assert_uint_eq(out->graph->n_nodes, 1);
			ck_assert_str_eq(out->graph->nodes[0].op_type, pick ? "Relu" : "Neg");
			ck_assert_str_eq(out->graph->values[out->graph->outputs[0]].name, "y");
		}
		wh_model_destroy(out);
		wh_model_destroy(m);
	}
	/* not an input; an input of 4 elements */
	struct wh_model *m = simple();
	struct wh_input_binding nope = {.name = "nope", .value = 1}, x = {.name = "x", .value = 1};
	ck_assert_int_eq(wh_model_bind_input_values(m, &nope, 1), WH_ERR_NOT_FOUND);
	ck_assert_int_eq(wh_model_bind_input_values(m, &x, 1), WH_ERR_SHAPE);
	ck_assert_uint_eq(m->graph->n_inputs, 2);
	wh_model_destroy(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("inline");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_then_and_else);
	tcase_add_test(tc, test_keep);
	tcase_add_test(tc, test_collision);
	tcase_add_test(tc, test_passthrough);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_refuses_renamed_capture);
	tcase_add_test(tc, test_bindings_parse);
	tcase_add_test(tc, test_bind_and_fold);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
