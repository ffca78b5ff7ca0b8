/* convert (graph/convert.h): the op table's answers, and the model written for a small
 * graph built here: which nodes take the target type, where Casts go (one per producer and
 * type, none between layers of one type), weights converted with clamping and flushing
 * counted, a graph output written under its own name by a Cast, kept layers. The end-to-end
 * checks (the checker, ONNX Runtime, the emulation's bits) are tests/e2e-convert.sh. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/convert.h"
#include "graph/ir.h"
#include "graph/numfmt.h"

static struct wh_model *new_model(int64_t opset)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = opset;
	return m;
}

static uint32_t val(struct wh_model *m, const char *name)
{
	uint32_t id;
	ck_assert_int_eq(wh_graph_intern_value(m->graph, name, &id), WH_OK);
	return id;
}

static uint32_t fval(struct wh_model *m, const char *name)
{
	uint32_t id = val(m, name);
	int64_t d = 4;
	ck_assert_int_eq(wh_graph_set_shape(m->graph, id, WH_DT_FLOAT, 1, &d), WH_OK);
	return id;
}

static void node(struct wh_model *m, const char *op, const char *name, uint32_t a, uint32_t b, uint32_t y)
{
	uint32_t ins[2] = {a, b}, id;
	ck_assert_int_eq(wh_graph_add_node(m->graph, op, "", name, b == WH_NONE ? 1 : 2, ins, 1, &y, &id), WH_OK);
}

/* x -> add(w) -> relu -> y (graph output), relu -> mul(w) -> z; w = {1e6, 1e-9, 0.5, -70000} */
static struct wh_model *small_model(void)
{
	struct wh_model *m = new_model(17);
	uint32_t x = fval(m, "x"), w = val(m, "w");
	m->graph->values[x].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(m->graph, x), WH_OK);
	struct wh_blob *b;
	void *p;
	float wv[4] = {1e6f, 1e-9f, 0.5f, -70000.0f};
	int64_t d = 4;
	ck_assert_int_eq(wh_blob_create(sizeof wv, &b, &p), WH_OK);
	memcpy(p, wv, sizeof wv);
	ck_assert_int_eq(wh_graph_set_initializer(m->graph, w, WH_DT_FLOAT, 1, &d, b), WH_OK);
	wh_blob_release(b);
	node(m, "Add", "add", x, w, fval(m, "a"));
	node(m, "Relu", "relu", val(m, "a"), WH_NONE, fval(m, "y"));
	node(m, "Mul", "mul", val(m, "y"), w, fval(m, "z"));
	for (const char *o = "y"; o; o = strcmp(o, "y") ? NULL : "z") {
		uint32_t id = val(m, o);
		m->graph->values[id].flags |= WH_VALUE_HAS_INFO;
		ck_assert_int_eq(wh_graph_add_output(m->graph, id), WH_OK);
	}
	return m;
}

static const struct wh_node *find_node(const struct wh_graph *g, const char *name)
{
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].name && !strcmp(g->nodes[i].name, name))
			return &g->nodes[i];
	return NULL;
}

static enum wh_dtype type_of(const struct wh_graph *g, uint32_t v)
{
	return g->values[v].dtype;
}

START_TEST(test_op_table)
{
	ck_assert(wh_convert_op_supports("Add", 7, WH_DT_FLOAT16));
	ck_assert(!wh_convert_op_supports("Add", 7, WH_DT_BFLOAT16)); /* bf16 came with Add-13 */
	ck_assert(wh_convert_op_supports("Add", 14, WH_DT_BFLOAT16));
	ck_assert(!wh_convert_op_supports("Conv", 17, WH_DT_BFLOAT16));
	ck_assert(wh_convert_op_supports("Conv", 17, WH_DT_FLOAT16));
	ck_assert(!wh_convert_op_supports("Range", 17, WH_DT_FLOAT16));
	ck_assert(!wh_convert_op_supports("DequantizeLinear", 21, WH_DT_FLOAT16));
	ck_assert(!wh_convert_op_supports("If", 17, WH_DT_FLOAT16));
	ck_assert(wh_convert_op_supports("Gelu", 20, WH_DT_BFLOAT16));
	ck_assert(!wh_convert_op_supports("Gelu", 17, WH_DT_FLOAT16)); /* no Gelu before opset 20 */
	ck_assert(!wh_convert_op_supports("NoSuchOp", 17, WH_DT_FLOAT16));
}
END_TEST

START_TEST(test_small_model_fp16)
{
	struct wh_model *m = small_model(), *out = NULL;
	struct wh_convert_options o = {.target = WH_DT_FLOAT16};
	struct wh_convert_stats s;
	ck_assert_int_eq(wh_model_convert(m, &o, &out, &s), WH_OK);
	const struct wh_graph *g = out->graph;
	ck_assert_uint_eq(s.converted, 3);
	ck_assert_uint_eq(s.n_unsupported, 0);
	ck_assert_uint_eq(s.inits, 1);
	ck_assert_uint_eq(s.clamped, 2); /* 1e6 and -70000 */
	ck_assert_uint_eq(s.flushed, 1); /* 1e-9 */
	/* Casts: x to fp16, relu's output back to fp32 under the name y, mul's output to z */
	ck_assert_uint_eq(s.casts, 3);
	uint32_t n_cast = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		if (strcmp(n->op_type, "Cast"))
			continue;
		n_cast++;
		ck_assert_int_ne(type_of(g, n->inputs[0]), type_of(g, n->outputs[0])); /* never between one type */
	}
	ck_assert_uint_eq(n_cast, 3);
	/* the weight converted in place: fp16, clamped, flushed */
	uint32_t w = wh_graph_find_value(g, "w");
	ck_assert_int_eq(type_of(g, w), WH_DT_FLOAT16);
	const uint16_t *h = g->values[w].data->data;
	ck_assert_float_eq(wh_f16_to_f32(h[0]), 65504.0f);
	ck_assert_uint_eq(h[1], 0);
	ck_assert_float_eq(wh_f16_to_f32(h[2]), 0.5f);
	ck_assert_float_eq(wh_f16_to_f32(h[3]), -65504.0f);
	/* y keeps its name and float32, written by a Cast; mul reads the fp16 relu output */
	uint32_t y = wh_graph_find_value(g, "y");
	ck_assert_int_eq(type_of(g, y), WH_DT_FLOAT);
	ck_assert_str_eq(g->nodes[g->values[y].producer].op_type, "Cast");
	const struct wh_node *relu = find_node(g, "relu"), *mul = find_node(g, "mul");
	ck_assert_int_eq(type_of(g, relu->outputs[0]), WH_DT_FLOAT16);
	ck_assert_uint_eq(mul->inputs[0], relu->outputs[0]);
	ck_assert_int_eq(type_of(g, wh_graph_find_value(g, "x")), WH_DT_FLOAT);
	ck_assert_int_eq(type_of(g, wh_graph_find_value(g, "z")), WH_DT_FLOAT);
	/* the source is unchanged */
	ck_assert_int_eq(m->graph->values[wh_graph_find_value(m->graph, "w")].dtype, WH_DT_FLOAT);
	ck_assert_uint_eq(m->graph->n_nodes, 3);
	wh_convert_stats_release(&s);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

START_TEST(test_kept_layer_and_io)
{
	struct wh_model *m = small_model(), *out = NULL;
	uint8_t keep[3] = {0, 0, 1}; /* mul stays fp32 */
	struct wh_convert_options o = {.target = WH_DT_BFLOAT16, .keep = keep, .convert_io = true};
	struct wh_convert_stats s;
	ck_assert_int_eq(wh_model_convert(m, &o, &out, &s), WH_OK);
	const struct wh_graph *g = out->graph;
	ck_assert_uint_eq(s.converted, 2);
	ck_assert_uint_eq(s.clamped, 0); /* 1e6 fits bf16 */
	/* inputs and outputs in bf16: x with no Cast; mul (fp32) reads a Cast of relu's output
	 * and the float32 w (a converted copy serves add); z is Cast to bf16 */
	ck_assert_int_eq(type_of(g, wh_graph_find_value(g, "x")), WH_DT_BFLOAT16);
	ck_assert_int_eq(type_of(g, wh_graph_find_value(g, "y")), WH_DT_BFLOAT16);
	ck_assert_int_eq(type_of(g, wh_graph_find_value(g, "z")), WH_DT_BFLOAT16);
	const struct wh_node *mul = find_node(g, "mul"), *add = find_node(g, "add");
	ck_assert_int_eq(type_of(g, mul->inputs[0]), WH_DT_FLOAT);
	ck_assert_int_eq(type_of(g, mul->inputs[1]), WH_DT_FLOAT);
	ck_assert_str_eq(g->values[mul->inputs[1]].name, "w");
	ck_assert_int_eq(type_of(g, add->inputs[1]), WH_DT_BFLOAT16);
	ck_assert_str_eq(g->values[add->inputs[1]].name, "w.bf16");
	ck_assert_uint_eq(s.casts, 2);
	wh_convert_stats_release(&s);
	wh_model_destroy(out);
	wh_model_destroy(m);
}
END_TEST

static Suite *convert_suite(void)
{
	Suite *s = suite_create("convert");
	TCase *tc = tcase_create("convert");
	tcase_add_test(tc, test_op_table);
	tcase_add_test(tc, test_small_model_fp16);
	tcase_add_test(tc, test_kept_layer_and_io);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(convert_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
