/* Reductions, pooling, normalizations, the softmax family, Einsum and the losses
 * (executor/ops/{reduce,nn,misc}.c): semantics that the ONNX spec pins down and a broken
 * kernel gets wrong (coerced 2-D Softmax before opset 13, count_include_pad, ceil_mode,
 * reductions over zero elements, ...), ONNX Runtime's float32 summation orders where whittle
 * follows them (pooling, ReduceSum/ReduceMean over rows, Softmax), bit-identical results for
 * every thread count, and the SIMD row primitives against their scalar reference. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/ops/nn-internal.h"
#include "tests/kernel-harness.h"
#include "graph/onnx-io.h"

/* Splitmix64: a fixed-seed generator so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float rng_float(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

/* ---- one-node models run through the engine ---- */

struct attr_spec {
	const char *name;
	enum wh_attr_type type;
	int64_t i;
	float f;
	const char *s;
	const int64_t *ints;
	size_t n;
};

#define A_INT(nm, v) {nm, WH_ATTR_INT, v, 0, NULL, NULL, 0}
#define A_FLOAT(nm, v) {nm, WH_ATTR_FLOAT, 0, v, NULL, NULL, 0}
#define A_STR(nm, v) {nm, WH_ATTR_STRING, 0, 0, v, NULL, 0}
#define A_INTS(nm, arr) {nm, WH_ATTR_INTS, 0, 0, NULL, arr, sizeof arr / sizeof arr[0]}

static void tensor_f32(struct wh_tensor *t, int32_t rank, const int64_t *dims, const float *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, WH_DT_FLOAT, rank, dims), WH_OK);
	if (v && t->count)
		memcpy(t->data, v, t->count * sizeof(float));
}

static void tensor_i64(struct wh_tensor *t, int32_t rank, const int64_t *dims, const int64_t *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, WH_DT_INT64, rank, dims), WH_OK);
	if (v && t->count)
		memcpy(t->data, v, t->count * sizeof(int64_t));
}

static void tensor_random(struct wh_tensor *t, int32_t rank, const int64_t *dims, uint64_t seed)
{
	tensor_f32(t, rank, dims, NULL);
	for (uint64_t i = 0; i < t->count; i++)
		((float *)t->data)[i] = rng_float(&seed, -3, 3);
}

/* Runs op (default domain, given opset) on ins (NULL entries are omitted inputs) and
 * fills outs[0..n_out). Returns the run's status (model building must succeed). */
static enum wh_status run_op_threads(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
				     uint32_t n_out, const struct attr_spec *attrs, uint32_t n_attrs, int threads,
				     struct wh_tensor *outs)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = opset;
	struct wh_graph *g = m->graph;
	uint32_t in_ids[16], out_ids[8], id;
	struct wh_tensor_set set, res;
	wh_tensor_set_init(&set);
	wh_tensor_set_init(&res);
	char name[16];
	for (uint32_t i = 0; i < n_in; i++) {
		if (!ins[i]) {
			in_ids[i] = WH_NONE;
			continue;
		}
		snprintf(name, sizeof name, "in%u", i);
		ck_assert_int_eq(wh_graph_add_value(g, name, &in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_graph_set_shape(g, in_ids[i], ins[i]->dtype, ins[i]->rank, ins[i]->dims), WH_OK);
		g->values[in_ids[i]].flags |= WH_VALUE_HAS_INFO;
		ck_assert_int_eq(wh_graph_add_input(g, in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_tensor_set_add(&set, name, -1, ins[i]), WH_OK);
	}
	for (uint32_t i = 0; i < n_out; i++) {
		snprintf(name, sizeof name, "out%u", i);
		ck_assert_int_eq(wh_graph_add_value(g, name, &out_ids[i]), WH_OK);
	}
	ck_assert_int_eq(wh_graph_add_node(g, op, "", "node", n_in, in_ids, n_out, out_ids, &id), WH_OK);
	for (uint32_t i = 0; i < n_out; i++)
		ck_assert_int_eq(wh_graph_add_output(g, out_ids[i]), WH_OK);
	struct wh_node *nd = &g->nodes[id];
	nd->n_attrs = n_attrs;
	nd->attrs = n_attrs ? wh_arena_calloc(m->arena, n_attrs, sizeof *nd->attrs) : NULL;
	for (uint32_t i = 0; i < n_attrs; i++) {
		struct wh_attr *a = &nd->attrs[i];
		a->name = attrs[i].name;
		a->type = attrs[i].type;
		a->i = attrs[i].i;
		a->f = attrs[i].f;
		if (attrs[i].s) {
			a->s.data = (const uint8_t *)attrs[i].s;
			a->s.len = strlen(attrs[i].s);
		}
		if (attrs[i].ints) {
			a->ints = wh_arena_memdup(m->arena, attrs[i].ints, attrs[i].n * sizeof(int64_t));
			a->n = attrs[i].n;
		}
	}
	struct wh_engine *e;
	struct wh_engine_options opt = {.threads = threads};
	ck_assert_int_eq(wh_engine_create(m, &opt, &e), WH_OK);
	enum wh_status st = wh_engine_run(e, &set, WH_KEEP_OUTPUTS, &res);
	for (uint32_t i = 0; st == WH_OK && i < n_out; i++) {
		snprintf(name, sizeof name, "out%u", i);
		const struct wh_tensor *t = wh_tensor_set_find(&res, name);
		ck_assert_ptr_nonnull(t);
		wh_tensor_init(&outs[i]);
		wh_tensor_ref(&outs[i], t);
	}
	wh_tensor_set_release(&res);
	wh_tensor_set_release(&set);
	wh_engine_destroy(e);
	wh_model_destroy(m);
	return st;
}

static enum wh_status run_op(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
			     uint32_t n_out, const struct attr_spec *attrs, uint32_t n_attrs, struct wh_tensor *outs)
{
	return run_op_threads(op, opset, n_in, ins, n_out, attrs, n_attrs, 1, outs);
}

static void assert_shape(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->rank, rank);
	for (int32_t i = 0; i < rank; i++)
		ck_assert_int_eq(t->dims[i], dims[i]);
}

static void assert_close(const struct wh_tensor *t, const double *want, uint64_t n, double tol)
{
	ck_assert_int_eq(t->dtype, WH_DT_FLOAT);
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++) {
		double got = ((const float *)t->data)[i];
		if (isinf(want[i]) || isnan(want[i])) {
			ck_assert_msg(isinf(want[i]) ? got == want[i] : isnan(got), "element %llu: %g, expected %g",
				      (unsigned long long)i, got, want[i]);
			continue;
		}
		ck_assert_msg(fabs(got - want[i]) <= tol * (1 + fabs(want[i])), "element %llu: %.9g, expected %.9g",
			      (unsigned long long)i, got, want[i]);
	}
}

/* ---- Softmax family ---- */

START_TEST(softmax_coerced_vs_axis)
{
	/* 2x3x4 with axis=1: opset 11 normalizes each batch over all 12 elements (coerced
	 * to 2x12), opset 13 over the 3 elements of dim 1 only */
	int64_t dims[3] = {2, 3, 4};
	struct wh_tensor x, y11, y13;
	tensor_random(&x, 3, dims, 7);
	const struct wh_tensor *ins[1] = {&x};
	struct attr_spec ax[] = {A_INT("axis", 1)};
	ck_assert_int_eq(run_op("Softmax", 11, 1, ins, 1, ax, 1, &y11), WH_OK);
	ck_assert_int_eq(run_op("Softmax", 13, 1, ins, 1, ax, 1, &y13), WH_OK);
	const float *xv = x.data;
	double w11[24], w13[24];
	for (int b = 0; b < 2; b++) {
		double mx = -INFINITY, s = 0;
		for (int i = 0; i < 12; i++)
			mx = fmax(mx, xv[b * 12 + i]);
		for (int i = 0; i < 12; i++)
			s += exp(xv[b * 12 + i] - mx);
		for (int i = 0; i < 12; i++)
			w11[b * 12 + i] = exp(xv[b * 12 + i] - mx) / s;
		for (int k = 0; k < 4; k++) {
			double t = 0;
			for (int c = 0; c < 3; c++)
				t += exp(xv[b * 12 + c * 4 + k]);
			for (int c = 0; c < 3; c++)
				w13[b * 12 + c * 4 + k] = exp(xv[b * 12 + c * 4 + k]) / t;
		}
	}
	assert_close(&y11, w11, 24, 1e-6);
	assert_close(&y13, w13, 24, 1e-6);
	/* defaults: axis 1 before opset 13, -1 since */
	struct wh_tensor d11, d13;
	ck_assert_int_eq(run_op("Softmax", 11, 1, ins, 1, NULL, 0, &d11), WH_OK);
	ck_assert_int_eq(run_op("Softmax", 13, 1, ins, 1, NULL, 0, &d13), WH_OK);
	assert_close(&d11, w11, 24, 1e-6);
	double last[24];
	for (int r = 0; r < 6; r++) {
		double s = 0;
		for (int k = 0; k < 4; k++)
			s += exp(xv[r * 4 + k]);
		for (int k = 0; k < 4; k++)
			last[r * 4 + k] = exp(xv[r * 4 + k]) / s;
	}
	assert_close(&d13, last, 24, 1e-6);
	wh_tensor_release(&x);
	wh_tensor_release(&y11);
	wh_tensor_release(&y13);
	wh_tensor_release(&d11);
	wh_tensor_release(&d13);
}
END_TEST

START_TEST(logsoftmax_hardmax)
{
	int64_t dims[2] = {2, 3};
	float v[6] = {1000, 1001, 1002, -1, 5, 5};
	struct wh_tensor x, ls, hm;
	tensor_f32(&x, 2, dims, v);
	const struct wh_tensor *ins[1] = {&x};
	ck_assert_int_eq(run_op("LogSoftmax", 13, 1, ins, 1, NULL, 0, &ls), WH_OK);
	ck_assert_int_eq(run_op("Hardmax", 13, 1, ins, 1, NULL, 0, &hm), WH_OK);
	/* large inputs must not overflow: log-softmax is shift invariant */
	double l0 = log(1 + exp(-1.0) + exp(-2.0));
	double l1 = log(exp(-6.0) + 2);
	double want[6] = {-2 - l0, -1 - l0, -l0, -6 - l1, -l1, -l1};
	assert_close(&ls, want, 6, 1e-6);
	/* ties: the first maximum wins */
	double hw[6] = {0, 0, 1, 0, 1, 0};
	assert_close(&hm, hw, 6, 0);
	wh_tensor_release(&x);
	wh_tensor_release(&ls);
	wh_tensor_release(&hm);
}
END_TEST

/* ---- pooling ---- */

START_TEST(avgpool_count_include_pad)
{
	int64_t dims[4] = {1, 1, 3, 3};
	float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	struct wh_tensor x, y0, y1;
	tensor_f32(&x, 4, dims, ones);
	const struct wh_tensor *ins[1] = {&x};
	static const int64_t k[] = {3, 3}, pads[] = {1, 1, 1, 1};
	struct attr_spec a0[] = {A_INTS("kernel_shape", k), A_INTS("pads", pads), A_INT("count_include_pad", 0)};
	struct attr_spec a1[] = {A_INTS("kernel_shape", k), A_INTS("pads", pads), A_INT("count_include_pad", 1)};
	ck_assert_int_eq(run_op("AveragePool", 19, 1, ins, 1, a0, 3, &y0), WH_OK);
	ck_assert_int_eq(run_op("AveragePool", 19, 1, ins, 1, a1, 3, &y1), WH_OK);
	assert_shape(&y0, 4, dims);
	double w0[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	double w1[9] = {4 / 9., 6 / 9., 4 / 9., 6 / 9., 1, 6 / 9., 4 / 9., 6 / 9., 4 / 9.};
	assert_close(&y0, w0, 9, 1e-7);
	assert_close(&y1, w1, 9, 1e-7);
	wh_tensor_release(&x);
	wh_tensor_release(&y0);
	wh_tensor_release(&y1);
}
END_TEST

START_TEST(maxpool_ceil_mode)
{
	int64_t dims[4] = {1, 1, 4, 4};
	float v[16];
	for (int i = 0; i < 16; i++)
		v[i] = (float)i;
	struct wh_tensor x, yf, yc;
	tensor_f32(&x, 4, dims, v);
	const struct wh_tensor *ins[1] = {&x};
	static const int64_t k[] = {3, 3}, s[] = {2, 2};
	struct attr_spec af[] = {A_INTS("kernel_shape", k), A_INTS("strides", s)};
	struct attr_spec ac[] = {A_INTS("kernel_shape", k), A_INTS("strides", s), A_INT("ceil_mode", 1)};
	ck_assert_int_eq(run_op("MaxPool", 12, 1, ins, 1, af, 2, &yf), WH_OK);
	ck_assert_int_eq(run_op("MaxPool", 12, 1, ins, 1, ac, 3, &yc), WH_OK);
	int64_t d1[4] = {1, 1, 1, 1}, d2[4] = {1, 1, 2, 2};
	assert_shape(&yf, 4, d1);
	assert_shape(&yc, 4, d2);
	double wf[1] = {10}, wc[4] = {10, 11, 14, 15};
	assert_close(&yf, wf, 1, 0);
	assert_close(&yc, wc, 4, 0);
	/* a last window that would start in the padding is dropped: 2x2, k 1, s 2 -> 1x1 */
	int64_t sd[4] = {1, 1, 2, 2};
	static const int64_t k1[] = {1, 1};
	struct attr_spec a2[] = {A_INTS("kernel_shape", k1), A_INTS("strides", s), A_INT("ceil_mode", 1)};
	struct wh_tensor xs, ys;
	tensor_f32(&xs, 4, sd, v);
	const struct wh_tensor *ins2[1] = {&xs};
	ck_assert_int_eq(run_op("MaxPool", 12, 1, ins2, 1, a2, 3, &ys), WH_OK);
	assert_shape(&ys, 4, d1);
	wh_tensor_release(&x);
	wh_tensor_release(&yf);
	wh_tensor_release(&yc);
	wh_tensor_release(&xs);
	wh_tensor_release(&ys);
}
END_TEST

START_TEST(maxpool_indices_storage_order)
{
	/* batch 2 x channel 1 x 2 x 3: the maxima are at (0, 2) and (1, 0) */
	int64_t dims[4] = {2, 1, 2, 3};
	float v[12] = {0, 1, 9, 3, 4, 2, 0, 1, 2, 8, 4, 5};
	struct wh_tensor x, y[2], yc[2];
	tensor_f32(&x, 4, dims, v);
	const struct wh_tensor *ins[1] = {&x};
	static const int64_t k[] = {2, 3};
	struct attr_spec a0[] = {A_INTS("kernel_shape", k)};
	struct attr_spec a1[] = {A_INTS("kernel_shape", k), A_INT("storage_order", 1)};
	ck_assert_int_eq(run_op("MaxPool", 12, 1, ins, 2, a0, 1, y), WH_OK);
	ck_assert_int_eq(run_op("MaxPool", 12, 1, ins, 2, a1, 2, yc), WH_OK);
	const int64_t *ix = y[1].data, *ixc = yc[1].data;
	ck_assert_int_eq(y[1].dtype, WH_DT_INT64);
	ck_assert_int_eq(ix[0], 2);      /* row-major h*W + w = 0*3 + 2 */
	ck_assert_int_eq(ix[1], 6 + 3);  /* plus the plane offset: 1*3 + 0 */
	ck_assert_int_eq(ixc[0], 4);     /* column-major h + w*H = 0 + 2*2 */
	ck_assert_int_eq(ixc[1], 6 + 1); /* 1 + 0*2 */
	/* same answer through MaxUnpool: the values go back where they came from */
	struct wh_tensor u;
	const struct wh_tensor *uins[2] = {&y[0], &y[1]};
	ck_assert_int_eq(run_op("MaxUnpool", 11, 2, uins, 1, a0, 1, &u), WH_OK);
	assert_shape(&u, 4, dims);
	double uw[12] = {0, 0, 9, 0, 0, 0, 0, 0, 0, 8, 0, 0};
	assert_close(&u, uw, 12, 0);
	for (int i = 0; i < 2; i++) {
		wh_tensor_release(&y[i]);
		wh_tensor_release(&yc[i]);
	}
	wh_tensor_release(&u);
	wh_tensor_release(&x);
}
END_TEST

START_TEST(pool_auto_pad_and_global)
{
	int64_t dims[4] = {1, 2, 3, 3};
	float v[18];
	for (int i = 0; i < 18; i++)
		v[i] = (float)(i % 9);
	struct wh_tensor x, y, g, gm;
	tensor_f32(&x, 4, dims, v);
	const struct wh_tensor *ins[1] = {&x};
	static const int64_t k[] = {2, 2};
	struct attr_spec a[] = {A_INTS("kernel_shape", k), A_STR("auto_pad", "SAME_UPPER")};
	ck_assert_int_eq(run_op("AveragePool", 11, 1, ins, 1, a, 2, &y), WH_OK);
	assert_shape(&y, 4, dims);
	/* SAME_UPPER puts the extra padding at the end: the last column averages 2 values */
	const float *yv = y.data;
	ck_assert_float_eq_tol(yv[0], (0 + 1 + 3 + 4) / 4.0f, 1e-6f);
	ck_assert_float_eq_tol(yv[2], (2 + 5) / 2.0f, 1e-6f);
	ck_assert_float_eq_tol(yv[8], 8.0f, 1e-6f);
	ck_assert_int_eq(run_op("GlobalAveragePool", 1, 1, ins, 1, NULL, 0, &g), WH_OK);
	ck_assert_int_eq(run_op("GlobalMaxPool", 1, 1, ins, 1, NULL, 0, &gm), WH_OK);
	int64_t gd[4] = {1, 2, 1, 1};
	assert_shape(&g, 4, gd);
	double gw[2] = {4, 4}, gmw[2] = {8, 8};
	assert_close(&g, gw, 2, 1e-7);
	assert_close(&gm, gmw, 2, 0);
	wh_tensor_release(&x);
	wh_tensor_release(&y);
	wh_tensor_release(&g);
	wh_tensor_release(&gm);
}
END_TEST

/* ---- reductions ---- */

START_TEST(reduce_empty_set)
{
	int64_t dims[3] = {2, 0, 3};
	int64_t axes_v[1] = {1}, ad[1] = {1};
	struct wh_tensor x, axes;
	tensor_f32(&x, 3, dims, NULL);
	tensor_i64(&axes, 1, ad, axes_v);
	const struct wh_tensor *ins[2] = {&x, &axes};
	int64_t od[3] = {2, 1, 3};
	static const struct {
		const char *op;
		double want;
	} cases[] = {
		{"ReduceSum", 0}, {"ReduceProd", 1}, {"ReduceMax", -INFINITY}, {"ReduceMin", INFINITY},
		{"ReduceL1", 0}, {"ReduceL2", 0}, {"ReduceSumSquare", 0}, {"ReduceLogSum", -INFINITY},
		{"ReduceLogSumExp", -INFINITY},
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct wh_tensor y;
		ck_assert_int_eq(run_op(cases[c].op, 18, 2, ins, 1, NULL, 0, &y), WH_OK);
		assert_shape(&y, 3, od);
		double w[6];
		for (int i = 0; i < 6; i++)
			w[i] = cases[c].want;
		assert_close(&y, w, 6, 0);
		wh_tensor_release(&y);
	}
	/* integer Max/Min over nothing: the type's limits */
	struct wh_tensor xi, yi;
	wh_tensor_init(&xi);
	ck_assert_int_eq(wh_tensor_alloc(&xi, WH_DT_INT32, 3, dims), WH_OK);
	const struct wh_tensor *insi[2] = {&xi, &axes};
	ck_assert_int_eq(run_op("ReduceMin", 18, 2, insi, 1, NULL, 0, &yi), WH_OK);
	ck_assert_int_eq(yi.dtype, WH_DT_INT32);
	ck_assert_int_eq(((const int32_t *)yi.data)[0], INT32_MAX);
	wh_tensor_release(&yi);
	wh_tensor_release(&xi);
	wh_tensor_release(&x);
	wh_tensor_release(&axes);
}
END_TEST

START_TEST(reduce_axes_attr_vs_input)
{
	int64_t dims[3] = {2, 3, 4};
	struct wh_tensor x, a1, a18, y11, y18, yk;
	tensor_random(&x, 3, dims, 3);
	static const int64_t ax[] = {0, -1};
	int64_t ad[1] = {2};
	tensor_i64(&a18, 1, ad, ax);
	const struct wh_tensor *ins1[1] = {&x};
	const struct wh_tensor *ins18[2] = {&x, &a18};
	struct attr_spec attr[] = {A_INTS("axes", ax), A_INT("keepdims", 0)};
	struct attr_spec keep0[] = {A_INT("keepdims", 0)};
	ck_assert_int_eq(run_op("ReduceMean", 13, 1, ins1, 1, attr, 2, &y11), WH_OK);
	ck_assert_int_eq(run_op("ReduceMean", 18, 2, ins18, 1, keep0, 1, &y18), WH_OK);
	int64_t od[1] = {3};
	assert_shape(&y11, 1, od);
	assert_shape(&y18, 1, od);
	const float *xv = x.data;
	double w[3];
	for (int c = 0; c < 3; c++) {
		double s = 0;
		for (int b = 0; b < 2; b++)
			for (int k = 0; k < 4; k++)
				s += xv[b * 12 + c * 4 + k];
		w[c] = s / 8;
	}
	assert_close(&y11, w, 3, 1e-6);
	assert_close(&y18, w, 3, 1e-6);
	/* ReduceSum takes axes as an input since opset 13 and as an attribute before */
	ck_assert_int_eq(run_op("ReduceSum", 13, 2, ins18, 1, keep0, 1, &yk), WH_OK);
	for (int c = 0; c < 3; c++)
		w[c] *= 8;
	assert_close(&yk, w, 3, 1e-5);
	wh_tensor_release(&yk);
	ck_assert_int_eq(run_op("ReduceSum", 11, 1, ins1, 1, attr, 2, &yk), WH_OK);
	assert_close(&yk, w, 3, 1e-5);
	/* noop_with_empty_axes: ReduceSumSquare squares each element and keeps the shape */
	int64_t zd[1] = {0};
	tensor_i64(&a1, 1, zd, NULL);
	const struct wh_tensor *insn[2] = {&x, &a1};
	struct attr_spec noop[] = {A_INT("noop_with_empty_axes", 1)};
	struct wh_tensor yn, yall;
	ck_assert_int_eq(run_op("ReduceSumSquare", 18, 2, insn, 1, noop, 1, &yn), WH_OK);
	assert_shape(&yn, 3, dims);
	ck_assert_float_eq_tol(((const float *)yn.data)[5], xv[5] * xv[5], 1e-6f);
	/* without noop, empty axes reduce everything (keepdims default 1) */
	ck_assert_int_eq(run_op("ReduceMax", 18, 2, insn, 1, NULL, 0, &yall), WH_OK);
	int64_t one[3] = {1, 1, 1};
	assert_shape(&yall, 3, one);
	float mx = -INFINITY;
	for (int i = 0; i < 24; i++)
		mx = fmaxf(mx, xv[i]);
	ck_assert_float_eq(((const float *)yall.data)[0], mx);
	/* an axis listed twice or out of range is an error, not a crash */
	static const int64_t bad[] = {1, -2};
	struct attr_spec badattr[] = {A_INTS("axes", bad)};
	struct wh_tensor yb;
	ck_assert_int_eq(run_op("ReduceMean", 13, 1, ins1, 1, badattr, 1, &yb), WH_ERR_INVALID);
	static const int64_t oob[] = {3};
	struct attr_spec oobattr[] = {A_INTS("axes", oob)};
	ck_assert_int_eq(run_op("ReduceMean", 13, 1, ins1, 1, oobattr, 1, &yb), WH_ERR_INVALID);
	wh_tensor_release(&x);
	wh_tensor_release(&a1);
	wh_tensor_release(&a18);
	wh_tensor_release(&y11);
	wh_tensor_release(&y18);
	wh_tensor_release(&yk);
	wh_tensor_release(&yn);
	wh_tensor_release(&yall);
}
END_TEST

START_TEST(reduce_integers)
{
	int64_t dims[2] = {2, 2};
	int64_t v[4] = {-3, -4, INT64_MAX, 1};
	struct wh_tensor x, mean, sum;
	tensor_i64(&x, 2, dims, v);
	const struct wh_tensor *ins[1] = {&x};
	static const int64_t ax[] = {1};
	struct attr_spec a[] = {A_INTS("axes", ax)};
	ck_assert_int_eq(run_op("ReduceMean", 13, 1, ins, 1, a, 1, &mean), WH_OK);
	ck_assert_int_eq(run_op("ReduceSum", 11, 1, ins, 1, a, 1, &sum), WH_OK);
	ck_assert_int_eq(mean.dtype, WH_DT_INT64);
	/* -3.5 truncates toward zero; int64 sums are exact (no detour through double) and wrap */
	ck_assert_int_eq(((const int64_t *)mean.data)[0], -3);
	ck_assert_int_eq(((const int64_t *)sum.data)[0], -7);
	ck_assert_int_eq(((const int64_t *)sum.data)[1], INT64_MIN);
	wh_tensor_release(&x);
	wh_tensor_release(&mean);
	wh_tensor_release(&sum);
}
END_TEST

/* ---- normalizations ---- */

START_TEST(batchnorm_inference)
{
	int64_t dims[4] = {2, 3, 2, 2}, cd[1] = {3};
	struct wh_tensor x, sc, b, m, var, y;
	tensor_random(&x, 4, dims, 11);
	float scv[3] = {1, 2, -0.5f}, bv[3] = {0, 1, 2}, mv[3] = {0.5f, -1, 0}, vv[3] = {1, 4, 0.25f};
	tensor_f32(&sc, 1, cd, scv);
	tensor_f32(&b, 1, cd, bv);
	tensor_f32(&m, 1, cd, mv);
	tensor_f32(&var, 1, cd, vv);
	const struct wh_tensor *ins[5] = {&x, &sc, &b, &m, &var};
	struct attr_spec eps[] = {A_FLOAT("epsilon", 1e-3f)};
	ck_assert_int_eq(run_op("BatchNormalization", 15, 5, ins, 1, eps, 1, &y), WH_OK);
	double w[24];
	const float *xv = x.data;
	for (int i = 0; i < 24; i++) {
		int c = (i / 4) % 3;
		w[i] = (xv[i] - mv[c]) / sqrt(vv[c] + (double)1e-3f) * scv[c] + bv[c];
	}
	assert_close(&y, w, 24, 1e-6);
	wh_tensor_release(&y);
	/* training mode: batch statistics, and running statistics blended by momentum */
	struct wh_tensor t[3];
	struct attr_spec tr[] = {A_INT("training_mode", 1), A_FLOAT("momentum", 0.75f)};
	ck_assert_int_eq(run_op("BatchNormalization", 15, 5, ins, 3, tr, 2, t), WH_OK);
	for (int c = 0; c < 3; c++) {
		double s = 0, q = 0;
		for (int n = 0; n < 2; n++)
			for (int k = 0; k < 4; k++)
				s += xv[n * 12 + c * 4 + k];
		double mean = s / 8;
		for (int n = 0; n < 2; n++)
			for (int k = 0; k < 4; k++)
				q += (xv[n * 12 + c * 4 + k] - mean) * (xv[n * 12 + c * 4 + k] - mean);
		double bvar = q / 8;
		ck_assert_float_eq_tol(((const float *)t[1].data)[c], (float)(mv[c] * 0.75 + mean * 0.25), 1e-6f);
		ck_assert_float_eq_tol(((const float *)t[2].data)[c], (float)(vv[c] * 0.75 + bvar * 0.25), 1e-6f);
		float y0 = (float)((xv[c * 4] - mean) / sqrt(bvar + 1e-5) * scv[c] + bv[c]);
		ck_assert_float_eq_tol(((const float *)t[0].data)[c * 4], y0, 1e-5f);
	}
	for (int i = 0; i < 3; i++)
		wh_tensor_release(&t[i]);
	wh_tensor_release(&x);
	wh_tensor_release(&sc);
	wh_tensor_release(&b);
	wh_tensor_release(&m);
	wh_tensor_release(&var);
}
END_TEST

/* Float rows are normalized in batches of 32 (nn.c, ln_rows_f32): 70 rows (two whole
 * batches and a partial one) give each row, its mean and its inverse deviation bit for bit
 * as the same row normalized alone. */
START_TEST(layernorm_batches_bit_identical)
{
	enum { ROWS = 70, C = 16 };
	int64_t dims[2] = {ROWS, C}, d1[2] = {1, C}, sd[1] = {C};
	struct wh_tensor x, sc, b, y[3];
	tensor_random(&x, 2, dims, 41);
	tensor_random(&sc, 1, sd, 42);
	tensor_random(&b, 1, sd, 43);
	const struct wh_tensor *ins[3] = {&x, &sc, &b};
	struct attr_spec a[] = {A_INT("axis", -1)};
	ck_assert_int_eq(run_op("LayerNormalization", 17, 3, ins, 3, a, 1, y), WH_OK);
	for (int r = 0; r < ROWS; r++) {
		struct wh_tensor xr, yr[3];
		tensor_f32(&xr, 2, d1, (const float *)x.data + r * C);
		const struct wh_tensor *rin[3] = {&xr, &sc, &b};
		ck_assert_int_eq(run_op("LayerNormalization", 17, 3, rin, 3, a, 1, yr), WH_OK);
		ck_assert_msg(!memcmp((const float *)y[0].data + r * C, yr[0].data, C * sizeof(float)), "row %d differs", r);
		ck_assert_msg(!memcmp((const float *)y[1].data + r, yr[1].data, sizeof(float)), "row %d: mean differs", r);
		ck_assert_msg(!memcmp((const float *)y[2].data + r, yr[2].data, sizeof(float)), "row %d: inverse differs", r);
		for (int i = 0; i < 3; i++)
			wh_tensor_release(&yr[i]);
		wh_tensor_release(&xr);
	}
	for (int i = 0; i < 3; i++)
		wh_tensor_release(&y[i]);
	wh_tensor_release(&x);
	wh_tensor_release(&sc);
	wh_tensor_release(&b);
}
END_TEST

START_TEST(layernorm_stats)
{
	int64_t dims[3] = {2, 3, 5}, sd[2] = {3, 5};
	struct wh_tensor x, sc, b, y[3];
	tensor_random(&x, 3, dims, 5);
	tensor_random(&sc, 2, sd, 6);
	tensor_random(&b, 2, sd, 8);
	const struct wh_tensor *ins[3] = {&x, &sc, &b};
	struct attr_spec a[] = {A_INT("axis", -2)};
	ck_assert_int_eq(run_op("LayerNormalization", 17, 3, ins, 3, a, 1, y), WH_OK);
	int64_t md[3] = {2, 1, 1};
	assert_shape(&y[1], 3, md);
	assert_shape(&y[2], 3, md);
	const float *xv = x.data, *sv = sc.data, *bv = b.data;
	double w[30], wm[2], wi[2];
	for (int r = 0; r < 2; r++) {
		double s = 0, q = 0;
		for (int i = 0; i < 15; i++)
			s += xv[r * 15 + i];
		double mean = s / 15;
		for (int i = 0; i < 15; i++)
			q += (xv[r * 15 + i] - mean) * (xv[r * 15 + i] - mean);
		double inv = 1 / sqrt(q / 15 + (double)1e-5f);
		wm[r] = mean;
		wi[r] = inv;
		for (int i = 0; i < 15; i++)
			w[r * 15 + i] = (xv[r * 15 + i] - mean) * inv * sv[i] + bv[i];
	}
	assert_close(&y[0], w, 30, 1e-6);
	assert_close(&y[1], wm, 2, 1e-6);
	assert_close(&y[2], wi, 2, 1e-6);
	for (int i = 0; i < 3; i++)
		wh_tensor_release(&y[i]);
	/* a Scale of shape [5] broadcasts over the normalized 3 x 5; B may be omitted */
	int64_t d5[1] = {5};
	struct wh_tensor s5, yb;
	tensor_random(&s5, 1, d5, 9);
	const struct wh_tensor *bins[2] = {&x, &s5};
	ck_assert_int_eq(run_op("LayerNormalization", 17, 2, bins, 1, a, 1, &yb), WH_OK);
	const float *s5v = s5.data;
	for (int r = 0; r < 2; r++)
		for (int i = 0; i < 15; i++)
			w[r * 15 + i] = (xv[r * 15 + i] - wm[r]) * wi[r] * s5v[i % 5];
	assert_close(&yb, w, 30, 1e-6);
	wh_tensor_release(&yb);
	wh_tensor_release(&s5);
	/* RMSNormalization: no mean subtraction */
	struct wh_tensor r;
	const struct wh_tensor *rins[2] = {&x, &sc};
	ck_assert_int_eq(run_op("RMSNormalization", 23, 2, rins, 1, a, 1, &r), WH_OK);
	for (int row = 0; row < 2; row++) {
		double q = 0;
		for (int i = 0; i < 15; i++)
			q += (double)xv[row * 15 + i] * xv[row * 15 + i];
		double inv = 1 / sqrt(q / 15 + (double)1e-5f);
		for (int i = 0; i < 15; i++)
			w[row * 15 + i] = xv[row * 15 + i] * inv * sv[i];
	}
	assert_close(&r, w, 30, 1e-6);
	wh_tensor_release(&r);
	wh_tensor_release(&x);
	wh_tensor_release(&sc);
	wh_tensor_release(&b);
}
END_TEST

START_TEST(groupnorm_param_forms)
{
	/* 1 x 4 x 2 in 2 groups: opset 18 scales per group, opset 21 per channel */
	int64_t dims[3] = {1, 4, 2}, gd[1] = {2}, cdim[1] = {4};
	float xv[8] = {1, 2, 3, 4, 10, 20, 30, 40};
	float g2[2] = {2, 3}, gb[2] = {0, 1}, c4[4] = {2, 2, 3, 3}, cb[4] = {0, 0, 1, 1};
	struct wh_tensor x, s18, b18, s21, b21, y18, y21;
	tensor_f32(&x, 3, dims, xv);
	tensor_f32(&s18, 1, gd, g2);
	tensor_f32(&b18, 1, gd, gb);
	tensor_f32(&s21, 1, cdim, c4);
	tensor_f32(&b21, 1, cdim, cb);
	struct attr_spec a[] = {A_INT("num_groups", 2)};
	const struct wh_tensor *i18[3] = {&x, &s18, &b18}, *i21[3] = {&x, &s21, &b21};
	ck_assert_int_eq(run_op("GroupNormalization", 18, 3, i18, 1, a, 1, &y18), WH_OK);
	ck_assert_int_eq(run_op("GroupNormalization", 21, 3, i21, 1, a, 1, &y21), WH_OK);
	/* each group holds an arithmetic sequence: normalized values are (+-3, +-1)/sqrt(5) */
	double w[8];
	double inv0 = 1 / sqrt(1.25 + (double)1e-5f), inv1 = 1 / sqrt(125 + (double)1e-5f);
	for (int i = 0; i < 4; i++) {
		w[i] = (xv[i] - 2.5) * inv0 * 2;
		w[4 + i] = (xv[4 + i] - 25) * inv1 * 3 + 1;
	}
	assert_close(&y18, w, 8, 1e-6);
	assert_close(&y21, w, 8, 1e-6);
	/* the opset-21 form rejects per-group parameters */
	struct wh_tensor yb;
	ck_assert_int_eq(run_op("GroupNormalization", 21, 3, i18, 1, a, 1, &yb), WH_ERR_SHAPE);
	wh_tensor_release(&x);
	wh_tensor_release(&s18);
	wh_tensor_release(&b18);
	wh_tensor_release(&s21);
	wh_tensor_release(&b21);
	wh_tensor_release(&y18);
	wh_tensor_release(&y21);
}
END_TEST

/* ---- Dropout ---- */

START_TEST(dropout_modes)
{
	int64_t dims[1] = {10}, sd[1] = {0};
	float v[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	struct wh_tensor x, ratio, tm, y[2];
	tensor_f32(&x, 1, dims, v);
	float r = 0.5f;
	tensor_f32(&ratio, 0, sd, &r);
	wh_tensor_init(&tm);
	ck_assert_int_eq(wh_tensor_alloc(&tm, WH_DT_BOOL, 0, sd), WH_OK);
	*(uint8_t *)tm.data = 1;
	/* inference: identity and an all-true mask */
	const struct wh_tensor *inf[1] = {&x};
	ck_assert_int_eq(run_op("Dropout", 13, 1, inf, 2, NULL, 0, y), WH_OK);
	ck_assert_int_eq(y[1].dtype, WH_DT_BOOL);
	for (int i = 0; i < 10; i++) {
		ck_assert_float_eq(((const float *)y[0].data)[i], v[i]);
		ck_assert_int_eq(((const uint8_t *)y[1].data)[i], 1);
	}
	wh_tensor_release(&y[0]);
	wh_tensor_release(&y[1]);
	/* training with seed 0 draws numpy's RandomState(0).random_sample(): 0.549 0.715 0.603
	 * 0.545 0.424 0.646 0.438 0.892 0.964 0.383, kept where >= 0.5, scaled by 2 */
	const struct wh_tensor *tr[3] = {&x, &ratio, &tm};
	struct attr_spec seed[] = {A_INT("seed", 0)};
	ck_assert_int_eq(run_op("Dropout", 13, 3, tr, 2, seed, 1, y), WH_OK);
	static const int keep[10] = {1, 1, 1, 1, 0, 1, 0, 1, 1, 0};
	for (int i = 0; i < 10; i++) {
		ck_assert_int_eq(((const uint8_t *)y[1].data)[i], keep[i]);
		ck_assert_float_eq(((const float *)y[0].data)[i], keep[i] ? 2 * v[i] : 0.0f);
	}
	wh_tensor_release(&y[0]);
	wh_tensor_release(&y[1]);
	wh_tensor_release(&x);
	wh_tensor_release(&ratio);
	wh_tensor_release(&tm);
}
END_TEST

/* ---- Einsum, Det, losses ---- */

START_TEST(einsum_forms)
{
	int64_t d33[2] = {3, 3};
	float m[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	struct wh_tensor a, y;
	tensor_f32(&a, 2, d33, m);
	const struct wh_tensor *ins[1] = {&a};
	struct attr_spec diag[] = {A_STR("equation", "ii->i")};
	ck_assert_int_eq(run_op("Einsum", 12, 1, ins, 1, diag, 1, &y), WH_OK);
	double wd[3] = {1, 5, 9};
	assert_close(&y, wd, 3, 0);
	wh_tensor_release(&y);
	/* implicit output: "ii" has no label used once, so it is the trace */
	struct attr_spec tr[] = {A_STR("equation", "ii")};
	ck_assert_int_eq(run_op("Einsum", 12, 1, ins, 1, tr, 1, &y), WH_OK);
	ck_assert_int_eq(y.rank, 0);
	double wt[1] = {15};
	assert_close(&y, wt, 1, 0);
	wh_tensor_release(&y);
	/* implicit output in alphabetical order: "ji" is the transpose */
	struct attr_spec tp[] = {A_STR("equation", "ji")};
	ck_assert_int_eq(run_op("Einsum", 12, 1, ins, 1, tp, 1, &y), WH_OK);
	double wtp[9] = {1, 4, 7, 2, 5, 8, 3, 6, 9};
	assert_close(&y, wtp, 9, 0);
	wh_tensor_release(&y);
	/* broadcast batch matmul through the ellipsis: (2,1,2,3) x (3,3,2) -> (2,3,2,2) */
	int64_t da[4] = {2, 1, 2, 3}, db[3] = {3, 3, 2};
	struct wh_tensor p, q;
	tensor_random(&p, 4, da, 21);
	tensor_random(&q, 3, db, 22);
	const struct wh_tensor *mm[2] = {&p, &q};
	struct attr_spec bm[] = {A_STR("equation", "...ij, ...jk -> ...ik")};
	ck_assert_int_eq(run_op("Einsum", 12, 2, mm, 1, bm, 1, &y), WH_OK);
	int64_t od[4] = {2, 3, 2, 2};
	assert_shape(&y, 4, od);
	const float *pv = p.data, *qv = q.data;
	double w[24];
	for (int b0 = 0; b0 < 2; b0++)
		for (int b1 = 0; b1 < 3; b1++)
			for (int i = 0; i < 2; i++)
				for (int k = 0; k < 2; k++) {
					double s = 0;
					for (int j = 0; j < 3; j++)
						s += (double)pv[b0 * 6 + i * 3 + j] * qv[b1 * 6 + j * 2 + k];
					w[((b0 * 3 + b1) * 2 + i) * 2 + k] = s;
				}
	assert_close(&y, w, 24, 1e-6);
	wh_tensor_release(&y);
	struct attr_spec badeq[] = {A_STR("equation", "...ij,...jk->...iz")};
	ck_assert_int_eq(run_op("Einsum", 12, 2, mm, 1, badeq, 1, &y), WH_ERR_INVALID);
	wh_tensor_release(&p);
	wh_tensor_release(&q);
	/* Det of a singular and a permuted matrix */
	ck_assert_int_eq(run_op("Det", 11, 1, ins, 1, NULL, 0, &y), WH_OK);
	ck_assert_float_eq_tol(((const float *)y.data)[0], 0.0f, 1e-5f);
	wh_tensor_release(&y);
	float perm[9] = {0, 1, 0, 2, 0, 0, 0, 0, 3};
	struct wh_tensor pm;
	tensor_f32(&pm, 2, d33, perm);
	const struct wh_tensor *pins[1] = {&pm};
	ck_assert_int_eq(run_op("Det", 11, 1, pins, 1, NULL, 0, &y), WH_OK);
	ck_assert_float_eq_tol(((const float *)y.data)[0], -6.0f, 1e-6f);
	wh_tensor_release(&y);
	wh_tensor_release(&pm);
	wh_tensor_release(&a);
}
END_TEST

START_TEST(nll_loss_weighted_mean)
{
	int64_t dims[2] = {3, 2}, td[1] = {3}, wdim[1] = {2};
	float lp[6] = {-1, -2, -3, -4, -5, -6};
	int64_t t[3] = {1, 0, -1};
	float wv[2] = {0.5f, 2};
	struct wh_tensor x, tg, w, y;
	tensor_f32(&x, 2, dims, lp);
	tensor_i64(&tg, 1, td, t);
	tensor_f32(&w, 1, wdim, wv);
	const struct wh_tensor *ins[3] = {&x, &tg, &w};
	struct attr_spec a[] = {A_INT("ignore_index", -1)};
	ck_assert_int_eq(run_op("NegativeLogLikelihoodLoss", 13, 3, ins, 1, a, 1, &y), WH_OK);
	/* (2*2 + 0.5*3) / (2 + 0.5): the ignored target counts in neither sum */
	ck_assert_int_eq(y.rank, 0);
	ck_assert_float_eq_tol(((const float *)y.data)[0], 5.5f / 2.5f, 1e-6f);
	wh_tensor_release(&y);
	wh_tensor_release(&x);
	wh_tensor_release(&tg);
	wh_tensor_release(&w);
}
END_TEST

/* ---- determinism across thread counts ---- */

static void same_for_threads(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
			     const struct attr_spec *attrs, uint32_t n_attrs)
{
	struct wh_tensor y1, y3;
	ck_assert_int_eq(run_op_threads(op, opset, n_in, ins, 1, attrs, n_attrs, 1, &y1), WH_OK);
	ck_assert_int_eq(run_op_threads(op, opset, n_in, ins, 1, attrs, n_attrs, 3, &y3), WH_OK);
	ck_assert_msg(wh_tensor_same_shape(&y1, &y3) && !memcmp(y1.data, y3.data, wh_tensor_nbytes(&y1)),
		      "%s differs between 1 and 3 threads", op);
	wh_tensor_release(&y1);
	wh_tensor_release(&y3);
}

START_TEST(thread_count_invariance)
{
	int64_t dims[4] = {2, 37, 29, 31}, cd[1] = {37};
	struct wh_tensor x, sc, b, m, v;
	tensor_random(&x, 4, dims, 99);
	tensor_random(&sc, 1, cd, 1);
	tensor_random(&b, 1, cd, 2);
	tensor_random(&m, 1, cd, 3);
	tensor_random(&v, 1, cd, 4);
	for (int i = 0; i < 37; i++)
		((float *)v.data)[i] = fabsf(((float *)v.data)[i]);
	const struct wh_tensor *ins[5] = {&x, &sc, &b, &m, &v};
	same_for_threads("GlobalAveragePool", 1, 1, ins, NULL, 0);
	same_for_threads("BatchNormalization", 9, 5, ins, NULL, 0);
	same_for_threads("Softmax", 13, 1, ins, NULL, 0);
	struct attr_spec ax1[] = {A_INT("axis", 1)};
	same_for_threads("Softmax", 13, 1, ins, ax1, 1);
	static const int64_t last[] = {-1}, mid[] = {1, 2};
	struct attr_spec rl[] = {A_INTS("axes", last)}, rm[] = {A_INTS("axes", mid)};
	same_for_threads("ReduceMean", 13, 1, ins, rl, 1);
	same_for_threads("ReduceSum", 11, 1, ins, rm, 1);
	static const int64_t k[] = {3, 3}, s[] = {2, 2}, p[] = {1, 1, 1, 1};
	struct attr_spec pa[] = {A_INTS("kernel_shape", k), A_INTS("strides", s), A_INTS("pads", p)};
	same_for_threads("AveragePool", 11, 1, ins, pa, 3);
	same_for_threads("MaxPool", 12, 1, ins, pa, 3);
	same_for_threads("InstanceNormalization", 6, 3, ins, NULL, 0);
	wh_tensor_release(&x);
	wh_tensor_release(&sc);
	wh_tensor_release(&b);
	wh_tensor_release(&m);
	wh_tensor_release(&v);
}
END_TEST

/* ---- ONNX Runtime's float32 orders ---- */

/* Eigen's sum as ORT runs it (SSE packets from the first 16-byte boundary, two packet
 * sums, lanes (0 + 2) + (1 + 3), then the scalars before the boundary and the tail),
 * restated here for rows starting at element `start` of an aligned tensor. */
static float eigen_sum(const float *x, size_t n, size_t start)
{
	size_t a0 = (4 - start % 4) % 4;
	if (a0 > n)
		a0 = n;
	size_t n4 = (n - a0) / 4, n8 = (n - a0) / 8;
	if (n4 == 0) {
		float r = x[0];
		for (size_t i = 1; i < n; i++)
			r += x[i];
		return r;
	}
	float p[2][4];
	memcpy(p[0], x + a0, sizeof p[0]);
	if (n4 > 1) {
		memcpy(p[1], x + a0 + 4, sizeof p[1]);
		for (size_t q = 1; q < n8; q++)
			for (int l = 0; l < 4; l++) {
				p[0][l] += x[a0 + 8 * q + l];
				p[1][l] += x[a0 + 8 * q + 4 + l];
			}
		for (int l = 0; l < 4; l++)
			p[0][l] += p[1][l];
		if (n4 > 2 * n8)
			for (int l = 0; l < 4; l++)
				p[0][l] += x[a0 + 8 * n8 + l];
	}
	float r = (p[0][0] + p[0][2]) + (p[0][1] + p[0][3]);
	for (size_t i = 0; i < a0; i++)
		r += x[i];
	for (size_t i = a0 + 4 * n4; i < n; i++)
		r += x[i];
	return r;
}

START_TEST(ort_orders)
{
	/* 1e8, 1, 1, -1e8: MLAS's 4 lanes pair (1e8 + 1) with (1 + -1e8) and lose both ones;
	 * the exact mean is 0.5 */
	int64_t d4[4] = {1, 1, 2, 2};
	float v4[4] = {1e8f, 1, 1, -1e8f};
	struct wh_tensor x, y;
	tensor_f32(&x, 4, d4, v4);
	const struct wh_tensor *ins[1] = {&x};
	ck_assert_int_eq(run_op("GlobalAveragePool", 1, 1, ins, 1, NULL, 0, &y), WH_OK);
	ck_assert_float_eq(((float *)y.data)[0], 0.0f);
	wh_tensor_release(&y);
	/* AveragePool 2x2 (stride 2): columns first, (1e8 + 1) + (1 + -1e8) = 0; with stride 3
	 * MLAS's generic kernel goes row-major: ((1e8 + 1) + 1) - 1e8 = 0 as well; 1e8, -1e8 on
	 * the first row tells them apart */
	float w4[4] = {1e8f, -1e8f, 1, 1};
	wh_tensor_release(&x);
	tensor_f32(&x, 4, d4, w4);
	static const int64_t k2[] = {2, 2}, s2[] = {2, 2}, s3[] = {3, 3};
	struct attr_spec av[] = {A_INTS("kernel_shape", k2), A_INTS("strides", s2)};
	struct attr_spec ag[] = {A_INTS("kernel_shape", k2), A_INTS("strides", s3)};
	ck_assert_int_eq(run_op("AveragePool", 11, 1, ins, 1, av, 2, &y), WH_OK);
	ck_assert_float_eq(((float *)y.data)[0], 0.0f);
	wh_tensor_release(&y);
	ck_assert_int_eq(run_op("AveragePool", 11, 1, ins, 1, ag, 2, &y), WH_OK);
	ck_assert_float_eq(((float *)y.data)[0], 0.5f);
	wh_tensor_release(&y);
	wh_tensor_release(&x);
	/* ReduceMean / ReduceSum over the last axis: Eigen's order on rows of every length
	 * (rows of odd length start off the 16-byte boundary), float32 division */
	uint64_t seed = 5;
	for (int64_t n = 1; n <= 41; n += (n < 12 ? 1 : 5)) {
		int64_t dims[2] = {3, n};
		tensor_random(&x, 2, dims, seed++);
		float *xv = x.data;
		xv[0] = 1e7f; /* make the order matter */
		static const int64_t last[] = {-1};
		struct attr_spec ax[] = {A_INTS("axes", last), A_INT("keepdims", 0)};
		struct wh_tensor ym;
		ck_assert_int_eq(run_op("ReduceMean", 13, 1, ins, 1, ax, 2, &ym), WH_OK);
		ck_assert_int_eq(run_op("ReduceSum", 11, 1, ins, 1, ax, 2, &y), WH_OK);
		for (int64_t r = 0; r < 3; r++) {
			float sum = eigen_sum(xv + r * n, (size_t)n, (size_t)(r * n));
			ck_assert_msg(((float *)y.data)[r] == sum, "ReduceSum n=%lld row %lld", (long long)n, (long long)r);
			ck_assert_msg(((float *)ym.data)[r] == sum / (float)n, "ReduceMean n=%lld row %lld", (long long)n,
				      (long long)r);
		}
		wh_tensor_release(&y);
		wh_tensor_release(&ym);
		wh_tensor_release(&x);
	}
	/* Softmax: the exponentials and sum of wh_nn_sumexp_f32, times 1 / sum; a strided axis
	 * (opset 13, axis 0) gives the same bits as the contiguous one */
	int64_t ds[2] = {5, 37}, dt[2] = {37, 5};
	struct wh_tensor xt, yt;
	tensor_random(&x, 2, ds, 99);
	tensor_f32(&xt, 2, dt, NULL);
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 37; j++)
			((float *)xt.data)[j * 5 + i] = ((float *)x.data)[i * 37 + j];
	ck_assert_int_eq(run_op("Softmax", 13, 1, ins, 1, NULL, 0, &y), WH_OK);
	const struct wh_tensor *inst[1] = {&xt};
	struct attr_spec a0[] = {A_INT("axis", 0)};
	ck_assert_int_eq(run_op("Softmax", 13, 1, inst, 1, a0, 1, &yt), WH_OK);
	for (int i = 0; i < 5; i++) {
		const float *row = (const float *)x.data + i * 37;
		float mx = row[0], e[37];
		for (int j = 1; j < 37; j++)
			mx = row[j] > mx ? row[j] : mx;
		float scale = 1.0f / wh_nn_sumexp_f32_scalar(row, e, 37, -mx);
		for (int j = 0; j < 37; j++) {
			ck_assert(((float *)y.data)[i * 37 + j] == e[j] * scale);
			ck_assert(((float *)yt.data)[j * 5 + i] == e[j] * scale);
		}
	}
	wh_tensor_release(&x);
	wh_tensor_release(&xt);
	wh_tensor_release(&y);
	wh_tensor_release(&yt);
}
END_TEST

/* ---- SIMD row primitives against the scalar reference ---- */

START_TEST(simd_vs_scalar)
{
	const struct wh_cpu_features *cpu = wh_cpu();
	enum wh_isa isas[2] = {WH_ISA_AVX2, WH_ISA_AVX512};
	size_t n_max = 1031 + 3;
	float *buf = malloc(n_max * sizeof *buf), *y0 = malloc(n_max * sizeof *y0), *y1 = malloc(n_max * sizeof *y1);
	ck_assert_ptr_nonnull(buf);
	uint64_t seed = 42;
	for (size_t i = 0; i < n_max; i++)
		buf[i] = rng_float(&seed, -100, 100);
	int tested = 0;
	for (int k = 0; k < 2; k++) {
		struct wh_cpu_features c = wh_cpu_capped(isas[k]);
		if (c.isa != isas[k])
			continue; /* the machine lacks it */
		tested++;
		for (size_t off = 0; off < 3; off++)
			for (size_t n = 0; n + off <= n_max; n = n < 70 ? n + 1 : n * 2 + 7) {
				const float *x = buf + off;
				double s0 = wh_nn_sum_f32_scalar(x, n), s1 = wh_nn_sum_f32(c.isa, x, n);
				ck_assert_msg(fabs(s0 - s1) <= 1e-9 * (1 + fabs(s0)), "sum n=%zu isa=%s: %.17g vs %.17g", n,
					      wh_isa_name(c.isa), s0, s1);
				double q0 = wh_nn_sqdev_f32_scalar(x, n, 1.25), q1 = wh_nn_sqdev_f32(c.isa, x, n, 1.25);
				ck_assert_msg(fabs(q0 - q1) <= 1e-9 * (1 + fabs(q0)), "sqdev n=%zu isa=%s", n,
					      wh_isa_name(c.isa));
				/* the affine map is a multiply then an add on every ISA: bit-identical */
				wh_nn_affine_f32_scalar(x, y0, n, 0.37f, -1.5f);
				wh_nn_affine_f32(c.isa, x, y1, n, 0.37f, -1.5f);
				ck_assert_msg(!memcmp(y0, y1, n * sizeof *y0), "affine n=%zu isa=%s", n, wh_isa_name(c.isa));
				/* ONNX Runtime's softmax exponentials: fused multiply-adds (fmaf in the
				 * scalar code) and exact scaling, so bit-identical; x - 100 reaches the
				 * clamp and the subnormal results */
				for (int withy = 0; withy < 2; withy++) {
					float e0 = wh_nn_sumexp_f32_scalar(x, withy ? y0 : NULL, n, -100.0f);
					float e1 = wh_nn_sumexp_f32(c.isa, x, withy ? y1 : NULL, n, -100.0f);
					ck_assert_msg(!memcmp(&e0, &e1, sizeof e0), "sumexp n=%zu isa=%s: %.9g vs %.9g", n,
						      wh_isa_name(c.isa), e0, e1);
					ck_assert_msg(!withy || !memcmp(y0, y1, n * sizeof *y0), "sumexp values n=%zu isa=%s", n,
						      wh_isa_name(c.isa));
				}
			}
	}
	(void)cpu;
	/* a sum that float accumulation gets wrong: 1e8 followed by many ones */
	buf[0] = 1e8f;
	for (size_t i = 1; i < 1025; i++)
		buf[i] = 1.0f;
	ck_assert(wh_nn_sum_f32_scalar(buf, 1025) == 1e8 + 1024);
	if (tested)
		ck_assert(wh_nn_sum_f32(wh_cpu()->isa, buf, 1025) == 1e8 + 1024);
	free(buf);
	free(y0);
	free(y1);
}
END_TEST

/* MaxPool row and LayerNormalization normalize pass: bit-identical to the scalar
 * reference on every ISA, with NaN, signed zeros and infinities among the data (the
 * first of equal maxima and the skipping of NaN show in the bits). */
START_TEST(simd_vs_scalar_pool_ln)
{
	enum wh_isa isas[2] = {WH_ISA_AVX2, WH_ISA_AVX512};
	size_t n_max = 4096;
	float *buf = malloc(n_max * sizeof *buf), *y0 = malloc(n_max * sizeof *y0), *y1 = malloc(n_max * sizeof *y1);
	double *sc = malloc(n_max * sizeof *sc), *bi = malloc(n_max * sizeof *bi);
	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(sc);
	ck_assert_ptr_nonnull(bi);
	uint64_t seed = 7;
	for (size_t i = 0; i < n_max; i++) {
		float r = rng_float(&seed, 0, 1);
		buf[i] = r < 0.03f ? NAN : r < 0.08f ? 0.0f : r < 0.13f ? -0.0f : r < 0.15f ? -INFINITY
			: rng_float(&seed, -4, 4);
		sc[i] = rng_float(&seed, -2, 2);
		bi[i] = rng_float(&seed, -1, 1);
	}
	/* a row of only NaN and zeros: the result is a zero whose sign is the first seen */
	for (size_t i = 0; i < 64; i++)
		buf[i] = i % 3 == 0 ? NAN : (i % 3 == 1 ? -0.0f : 0.0f);
	for (int kk = 0; kk < 2; kk++) {
		struct wh_cpu_features c = wh_cpu_capped(isas[kk]);
		if (c.isa != isas[kk])
			continue; /* the machine lacks it */
		for (size_t s = 1; s <= 3; s++)
			for (size_t k = 1; k <= 5; k += 2)
				for (size_t d = 1; d <= 2; d++)
					for (size_t nr = 0; nr <= 3; nr++)
						for (size_t n = 0; n < 150; n = n < 20 ? n + 1 : n + 13) {
							const float *rows[3];
							size_t need = n ? (n - 1) * s + (k - 1) * d + 1 : 0;
							for (size_t r = 0; r < nr; r++)
								rows[r] = buf + (r * 37 + n) % 64; /* NaN rows too */
							/* the last row ends where the reads must end */
							if (nr)
								rows[nr - 1] = buf + n_max - need;
							wh_nn_maxpool_row_f32_scalar(rows, nr, y0, n, k, s, d);
							wh_nn_maxpool_row_f32(c.isa, rows, nr, y1, n, k, s, d);
							ck_assert_msg(!memcmp(y0, y1, n * sizeof *y0),
								      "maxpool row n=%zu k=%zu s=%zu d=%zu rows=%zu isa=%s", n,
								      k, s, d, nr, wh_isa_name(c.isa));
						}
		for (size_t off = 0; off < 3; off++)
			for (size_t n = 0; n + off <= 1000; n = n < 40 ? n + 1 : n * 2 + 5)
				for (int wb = 0; wb < 2; wb++) {
					const float *x = buf + 200 + off;
					wh_nn_ln_apply_f32_scalar(x, y0, n, 0.3, 1.7, sc, wb ? bi : NULL);
					wh_nn_ln_apply_f32(c.isa, x, y1, n, 0.3, 1.7, sc, wb ? bi : NULL);
					ck_assert_msg(!memcmp(y0, y1, n * sizeof *y0), "ln apply n=%zu bias=%d isa=%s", n, wb,
						      wh_isa_name(c.isa));
				}
		/* the softmax maximum: the same bits, also where it is a zero of either sign
		 * (neg: the data with every positive value negated, so zeros are the maximum) */
		float *neg = malloc(n_max * sizeof *neg);
		ck_assert_ptr_nonnull(neg);
		for (size_t i = 0; i < n_max; i++)
			neg[i] = buf[i] > 0 ? -buf[i] : buf[i];
		for (size_t off = 0; off < 70; off += 23)
			for (size_t n = 0; n + off <= n_max; n = n < 140 ? n + 1 : n * 2 + 5)
				for (int w = 0; w < 2; w++) {
					const float *x = (w ? neg : buf) + off;
					float m0 = wh_nn_max_f32_scalar(x, n), m1 = wh_nn_max_f32(c.isa, x, n);
					ck_assert_msg(!memcmp(&m0, &m1, sizeof m0), "max n=%zu off=%zu neg=%d isa=%s: %g vs %g",
						      n, off, w, wh_isa_name(c.isa), m0, m1);
					wh_nn_scale_f32_scalar(x, y0, n, 0.37f);
					wh_nn_scale_f32(c.isa, x, y1, n, 0.37f);
					ck_assert_msg(!memcmp(y0, y1, n * sizeof *y0), "scale n=%zu isa=%s", n,
						      wh_isa_name(c.isa));
				}
		/* a short softmax line in registers: the bits of the maximum, exponentials, sum
		 * and scaling run one by one (scalar), also with zeros as the maximum and NaN */
		/* LayerNormalization rows with the primitives inlined: the bits of calling them
		 * one by one (AVX-512), statistics included, across a batch of 32 rows */
		if (c.isa == WH_ISA_AVX512)
			for (size_t m = 1; m <= 70; m += (m < 20 ? 1 : 7))
				for (int variant = 0; variant < 3; variant++) {
					size_t rows = 37;
					bool rms = variant == 2;
					const double *bias = variant == 1 ? (const double *)NULL : sc + 3;
					float *ya = malloc(rows * m * sizeof *ya), *yb = malloc(rows * m * sizeof *yb);
					double st[4][37];
					ck_assert(ya && yb && rows * m + 11 <= n_max);
					const float *x = buf + 11;
					wh_nn_ln_rows_f32_avx512(x, ya, m, rows, 1e-5, rms, sc, bias, st[0], st[1]);
					for (size_t r = 0; r < rows; r++) {
						double mean = rms ? 0 : wh_nn_sum_f32(c.isa, x + r * m, m) / (double)m;
						double var = wh_nn_sqdev_f32(c.isa, x + r * m, m, mean) / (double)m;
						st[2][r] = mean;
						st[3][r] = 1.0 / sqrt(var + 1e-5);
						wh_nn_ln_apply_f32(c.isa, x + r * m, yb + r * m, m, mean, st[3][r], sc, bias);
					}
					ck_assert_msg(!memcmp(ya, yb, rows * m * sizeof *ya), "ln rows m=%zu variant %d", m, variant);
					ck_assert_msg(!memcmp(st[0], st[2], sizeof st[0]) && !memcmp(st[1], st[3], sizeof st[1]),
						      "ln rows statistics m=%zu variant %d", m, variant);
					free(ya);
					free(yb);
				}
		/* (lines 0..6: groups of four and single lines; line 3 of w = 2 holds a NaN) */
		if (c.isa == WH_ISA_AVX512)
			for (size_t off = 0; off < 70; off += 23)
				for (size_t n = 1; n <= WH_NN_SOFTMAX_SHORT && 7 * n + off <= n_max; n++)
					for (int w = 0; w < 3; w++) {
						float xs[7 * WH_NN_SOFTMAX_SHORT], ys[7 * WH_NN_SOFTMAX_SHORT];
						memcpy(xs, (w == 1 ? neg : buf) + off, 7 * n * sizeof *xs);
						if (w == 2)
							xs[3 * n + n / 2] = NAN;
						wh_nn_softmax_short_f32_avx512(xs, ys, n, 7);
						for (size_t l = 0; l < 7; l++) {
							const float *xl = xs + l * n;
							float mx = wh_nn_max_f32_scalar(xl, n);
							float s0 = 1.0f / wh_nn_sumexp_f32_scalar(xl, y0, n, -mx);
							wh_nn_scale_f32_scalar(y0, y0, n, s0);
							ck_assert_msg(!memcmp(y0, ys + l * n, n * sizeof *y0),
								      "softmax short n=%zu off=%zu w=%d line %zu", n, off, w, l);
						}
					}
		free(neg);
	}
	free(buf);
	free(y0);
	free(y1);
	free(sc);
	free(bi);
}
END_TEST

/* MaxPool's two passes on AVX2/AVX-512 (each input row's horizontal maxima, then vertical
 * maxima over rows) give the bits of the scalar row-major scan: strides 1..3 both ways,
 * dilations, pads, ceil mode, with NaN, zeros of both signs and -inf in the data. */
START_TEST(maxpool_two_pass_vs_scalar)
{
	static const int64_t geo[][10] = {
		/* H, W, kh, kw, sh, sw, dh, dw, pad, ceil */
		{111, 111, 3, 3, 2, 2, 1, 1, 0, 1}, {55, 55, 3, 3, 2, 2, 1, 1, 0, 1}, {27, 27, 3, 3, 2, 2, 1, 1, 0, 1},
		{20, 70, 3, 3, 1, 1, 1, 1, 1, 0}, {19, 67, 5, 3, 1, 2, 1, 1, 2, 0}, {13, 80, 3, 5, 2, 1, 2, 1, 1, 1},
		{16, 99, 2, 2, 2, 2, 1, 1, 0, 0}, {9, 41, 3, 3, 3, 3, 1, 2, 1, 1}, {8, 40, 1, 4, 1, 2, 1, 1, 0, 0},
		{30, 34, 4, 1, 3, 1, 1, 1, 0, 1}, {5, 200, 3, 7, 2, 2, 1, 1, 3, 0}, {12, 33, 3, 3, 2, 2, 2, 2, 2, 1},
		/* no column padding: the vertical pass of the inner rows is one call */
		{21, 40, 3, 3, 2, 1, 2, 1, 0, 0}, {25, 30, 3, 2, 3, 2, 3, 1, 0, 0}, {18, 19, 4, 3, 1, 2, 2, 1, 0, 1},
		/* mnasnet/ResNet-like 112 with pad 1, even kernels, a 1-row kernel, row stride 1 */
		{112, 112, 3, 3, 2, 2, 1, 1, 1, 0}, {17, 40, 2, 2, 2, 2, 1, 1, 0, 0}, {9, 33, 3, 3, 2, 2, 1, 1, 1, 1},
		{14, 14, 5, 5, 1, 2, 1, 1, 2, 0}, {7, 70, 1, 3, 2, 2, 1, 1, 0, 0}, {6, 6, 4, 4, 2, 2, 1, 1, 0, 1},
	};
	for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++) {
		const int64_t *G = geo[gi];
		int64_t dims[4] = {1, 2, G[0], G[1]};
		size_t n = (size_t)(2 * G[0] * G[1]);
		float *v = malloc(n * sizeof *v);
		ck_assert_ptr_nonnull(v);
		uint64_t seed = 101 + gi;
		for (size_t i = 0; i < n; i++) {
			float r = rng_float(&seed, 0, 1);
			v[i] = r < 0.04f ? NAN : r < 0.3f ? 0.0f : r < 0.55f ? -0.0f : r < 0.6f ? -INFINITY
				: rng_float(&seed, -4, 4);
		}
		/* a whole row of NaN, one of -inf and one of zeros: the vertical pass meets -inf
		 * rows and zeros of both signs */
		for (int64_t w = 0; w < G[1]; w++) {
			v[(size_t)w] = NAN;
			v[(size_t)(G[1] + w)] = -INFINITY;
			if (G[0] > 3)
				v[(size_t)(3 * G[1] + w)] = w % 2 ? 0.0f : -0.0f;
		}
		int64_t k[2] = {G[2], G[3]}, st[2] = {G[4], G[5]}, dl[2] = {G[6], G[7]};
		int64_t pads[4] = {G[8], G[8], G[8], G[8]};
		struct kh_harness ref, simd;
		struct kh_harness *hs[2] = {&ref, &simd};
		for (int w = 0; w < 2; w++) {
			struct kh_harness *h = hs[w];
			kh_init(h, "", "MaxPool", 12, 1, 1);
			kh_attr_ints(h, "kernel_shape", k, 2);
			kh_attr_ints(h, "strides", st, 2);
			kh_attr_ints(h, "dilations", dl, 2);
			kh_attr_ints(h, "pads", pads, 4);
			kh_attr_int(h, "ceil_mode", G[9]);
			kh_in_f32(h, 0, 4, dims, v);
			h->cpu = wh_cpu_capped(w ? wh_cpu()->detected : WH_ISA_SCALAR);
			kh_run_ok(h);
		}
		const struct wh_tensor *a = &ref.out[0], *b = &simd.out[0];
		ck_assert_uint_eq(a->count, b->count);
		ck_assert_uint_gt(a->count, 0);
		/* equal as floats: the AVX-512 plane kernel takes the window column-major, which may
		 * pick the other zero of a zero maximum (wh_nn_maxpool_plane_f32 in nn-internal.h);
		 * no output is NaN */
		const float *fa = a->data, *fb = b->data;
		for (size_t i = 0; i < a->count; i++)
			ck_assert_msg(fa[i] == fb[i], "two-pass MaxPool geometry %zu at %zu: %g vs %g", gi, i,
				      (double)fa[i], (double)fb[i]);
		kh_free(&ref);
		kh_free(&simd);
		free(v);
	}
}
END_TEST

/* The plane geometry of a test row {H, W, kh, kw, sh, sw, dh, dw, pad, ceil}; trim: a
 * ceil-mode window that would start in the end padding is dropped, as ONNX says. */
static struct wh_nn_pool2d pool2d_of_row(const int64_t *G, bool trim)
{
	struct wh_nn_pool2d g = {.H = G[0], .W = G[1], .kh = G[2], .kw = G[3], .sh = G[4], .sw = G[5],
				 .dh = G[6], .dw = G[7], .ph = G[8], .pw = G[8]};
	int64_t ext[2] = {G[0] + 2 * G[8] - ((G[2] - 1) * G[6] + 1), G[1] + 2 * G[8] - ((G[3] - 1) * G[7] + 1)};
	g.OH = (G[9] ? ext[0] + G[4] - 1 : ext[0]) / G[4] + 1;
	g.OW = (G[9] ? ext[1] + G[5] - 1 : ext[1]) / G[5] + 1;
	if (trim && G[9] && (g.OH - 1) * G[4] >= G[0] + G[8])
		g.OH--;
	if (trim && G[9] && (g.OW - 1) * G[5] >= G[1] + G[8])
		g.OW--;
	return g;
}

/* The AVX-512 MaxPool plane kernel (vertical maxima first, then the taps from -inf-padded
 * even/odd columns) against its scalar reference, bit for bit (bound: 0 ulp, zeros' signs
 * included): strides 1 and 2 by columns, 1..3 by rows, dilations, pads, ceil-mode extents,
 * kernels up to 7, rows narrower and wider than a vector, with NaN, both zeros and -inf. */
START_TEST(maxpool_plane_avx512_vs_scalar)
{
	if (wh_cpu()->detected < WH_ISA_AVX512)
		return;
	static const int64_t geo[][10] = {
		/* H, W, kh, kw, sh, sw, dh, dw, pad, ceil */
		{112, 112, 3, 3, 2, 2, 1, 1, 1, 0}, {111, 111, 3, 3, 2, 2, 1, 1, 0, 1}, {55, 55, 3, 3, 2, 2, 1, 1, 0, 1},
		{27, 27, 3, 3, 2, 2, 1, 1, 0, 1}, {56, 56, 3, 3, 1, 1, 1, 1, 1, 0}, {64, 64, 2, 2, 2, 2, 1, 1, 0, 0},
		{20, 70, 3, 3, 1, 1, 1, 1, 1, 0}, {19, 67, 5, 3, 1, 2, 1, 1, 2, 0}, {13, 80, 3, 5, 2, 1, 2, 1, 1, 1},
		{9, 41, 3, 3, 3, 2, 1, 2, 1, 1}, {8, 40, 1, 4, 1, 2, 1, 1, 0, 0}, {30, 34, 4, 1, 3, 1, 1, 1, 0, 1},
		{5, 200, 3, 7, 2, 2, 1, 1, 3, 0}, {12, 33, 3, 3, 2, 2, 2, 2, 2, 1}, {7, 7, 7, 7, 1, 1, 1, 1, 3, 0},
		{3, 1, 3, 3, 1, 1, 1, 1, 1, 0}, {4, 17, 2, 3, 2, 2, 1, 3, 1, 1}, {6, 300, 3, 3, 2, 2, 1, 1, 1, 1},
		{33, 31, 5, 5, 2, 2, 1, 1, 2, 1}, {2, 15, 2, 2, 1, 1, 1, 1, 1, 0},
	};
	for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++) {
		const int64_t *G = geo[gi];
		struct wh_nn_pool2d g = pool2d_of_row(G, false);
		ck_assert(wh_nn_maxpool_plane_avx512_fits(&g));
		size_t n = (size_t)(g.H * g.W), no = (size_t)(g.OH * g.OW), ns = wh_nn_maxpool_plane_scratch(&g);
		float *x = malloc(n * sizeof *x), *y0 = malloc(no * sizeof *y0), *y1 = malloc((no + 16) * sizeof *y1);
		float *scratch = malloc(ns * sizeof *scratch);
		ck_assert(x && y0 && y1 && scratch);
		uint64_t seed = 707 + gi;
		for (int rep = 0; rep < 3; rep++) {
			for (size_t i = 0; i < n; i++) {
				float r = rng_float(&seed, 0, 1);
				x[i] = rep == 2 ? (r < 0.5f ? 0.0f : -0.0f)
				       : r < 0.04f ? NAN : r < 0.3f ? 0.0f : r < 0.55f ? -0.0f : r < 0.6f ? -INFINITY
				       : rng_float(&seed, -4, 4);
			}
			/* past the output: the kernel's masked last store leaves it */
			for (size_t i = 0; i < no + 16; i++)
				y1[i] = 1234.5f;
			wh_nn_maxpool_plane_f32_scalar(&g, x, y0);
			wh_nn_maxpool_plane_f32_avx512(&g, x, y1, scratch);
			ck_assert_msg(!memcmp(y0, y1, no * sizeof(float)), "MaxPool plane geometry %zu rep %d", gi, rep);
			for (size_t i = no; i < no + 16; i++)
				ck_assert(y1[i] == 1234.5f);
		}
		free(x);
		free(y0);
		free(y1);
		free(scratch);
	}
}
END_TEST

/* 8-bit MaxPool (uint8 and int8): the op under every ISA cap against the definition written
 * out here (the maximum over the taps inside the plane, the type's lowest where none is),
 * and the AVX-512 and AVX2 plane kernels against the scalar one, byte for byte (bound: 0,
 * the maxima are exact), with a canary past the output; strides 1 to 3, dilations, pads,
 * ceil-mode extents, kernels up to 7, rows narrower and wider than a vector (64 and 32
 * bytes), whole rows at the type's extremes. */
START_TEST(maxpool_q8_vs_definition)
{
	static const int64_t geo[][10] = {
		/* H, W, kh, kw, sh, sw, dh, dw, pad, ceil */
		{112, 112, 3, 3, 2, 2, 1, 1, 1, 0}, {111, 111, 3, 3, 2, 2, 1, 1, 0, 1}, {56, 56, 3, 3, 1, 1, 1, 1, 1, 0},
		{64, 64, 2, 2, 2, 2, 1, 1, 0, 0}, {20, 70, 3, 3, 1, 1, 1, 1, 1, 0}, {19, 67, 5, 3, 1, 2, 1, 1, 2, 0},
		{13, 80, 3, 5, 2, 1, 2, 1, 1, 1}, {9, 41, 3, 3, 3, 2, 1, 2, 1, 1}, {8, 40, 1, 4, 1, 2, 1, 1, 0, 0},
		{30, 34, 4, 1, 3, 1, 1, 1, 0, 1}, {5, 200, 3, 7, 2, 2, 1, 1, 3, 0}, {12, 33, 3, 3, 2, 2, 2, 2, 2, 1},
		{7, 7, 7, 7, 1, 1, 1, 1, 3, 0}, {3, 1, 3, 3, 1, 1, 1, 1, 1, 0}, {4, 17, 2, 3, 2, 2, 1, 3, 1, 1},
		{6, 300, 3, 3, 2, 2, 1, 1, 1, 1}, {33, 31, 5, 5, 2, 2, 1, 1, 2, 1}, {2, 15, 2, 2, 1, 1, 1, 1, 1, 0},
		{9, 129, 3, 3, 2, 2, 1, 1, 1, 0}, {10, 95, 3, 3, 3, 3, 1, 1, 1, 0}, {5, 65, 2, 2, 1, 1, 1, 1, 0, 0},
	};
	const struct wh_cpu_features *cpu = wh_cpu();
	for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++) {
		const int64_t *G = geo[gi];
		struct wh_nn_pool2d g = pool2d_of_row(G, true);
		const size_t C = 3, n = (size_t)(g.H * g.W), no = (size_t)(g.OH * g.OW);
		uint8_t *x = malloc(C * n), *want = malloc(C * no), *y = malloc(no + 64);
		size_t ns = wh_nn_maxpool_plane_q8_scratch(&g);
		uint8_t *scratch = malloc(ns);
		ck_assert(x && want && y && scratch);
		for (int s8 = 0; s8 < 2; s8++) {
			uint64_t seed = 909 + gi + 100 * (uint64_t)s8;
			for (size_t i = 0; i < C * n; i++)
				x[i] = (uint8_t)rng_next(&seed);
			/* a row of the lowest value and one of the highest */
			memset(x, s8 ? 0x80 : 0, (size_t)g.W);
			if (g.H > 2)
				memset(x + 2 * g.W, s8 ? 0x7f : 0xff, (size_t)g.W);
			for (size_t c = 0; c < C; c++)
				for (int64_t oh = 0; oh < g.OH; oh++)
					for (int64_t ow = 0; ow < g.OW; ow++) {
						int best = s8 ? -128 : 0;
						for (int64_t a = 0; a < g.kh; a++)
							for (int64_t b = 0; b < g.kw; b++) {
								int64_t h = oh * g.sh - g.ph + a * g.dh, w = ow * g.sw - g.pw + b * g.dw;
								if (h < 0 || h >= g.H || w < 0 || w >= g.W)
									continue;
								uint8_t u = x[c * n + (size_t)(h * g.W + w)];
								int v = s8 ? (int)(int8_t)u : (int)u;
								best = v > best ? v : best;
							}
						want[c * no + (size_t)(oh * g.OW + ow)] = (uint8_t)best;
					}
			/* the op, every ISA cap (the SIMD planes where the geometry fits) */
			for (int isa = WH_ISA_SCALAR; isa <= (int)cpu->detected; isa++) {
				struct kh_harness h;
				int64_t dims[4] = {1, (int64_t)C, g.H, g.W}, k[2] = {G[2], G[3]}, st[2] = {G[4], G[5]};
				int64_t dl[2] = {G[6], G[7]}, pads[4] = {G[8], G[8], G[8], G[8]};
				kh_init(&h, "", "MaxPool", 12, 1, 1);
				kh_attr_ints(&h, "kernel_shape", k, 2);
				kh_attr_ints(&h, "strides", st, 2);
				kh_attr_ints(&h, "dilations", dl, 2);
				kh_attr_ints(&h, "pads", pads, 4);
				kh_attr_int(&h, "ceil_mode", G[9]);
				kh_in_raw(&h, 0, s8 ? WH_DT_INT8 : WH_DT_UINT8, 4, dims, x);
				h.cpu = wh_cpu_capped((enum wh_isa)isa);
				kh_run_ok(&h);
				ck_assert_uint_eq(h.out[0].count, C * no);
				ck_assert_msg(!memcmp(h.out[0].data, want, C * no), "8-bit MaxPool geometry %zu s8 %d isa %d",
					      gi, s8, isa);
				kh_free(&h);
			}
			/* the plane kernels directly, with a canary */
			if (!wh_nn_maxpool_plane_q8_fits(&g))
				continue;
			for (int isa = WH_ISA_SCALAR; isa <= (int)cpu->detected; isa++) {
				memset(y, 0x5a, no + 64);
				if (isa == WH_ISA_AVX512)
					wh_nn_maxpool_plane_q8_avx512(&g, x + n, y, s8, scratch);
				else if (isa == WH_ISA_AVX2)
					wh_nn_maxpool_plane_q8_avx2(&g, x + n, y, s8, scratch);
				else
					wh_nn_maxpool_plane_q8_scalar(&g, x + n, y, s8);
				ck_assert_msg(!memcmp(y, want + no, no), "8-bit MaxPool plane geometry %zu s8 %d isa %d", gi,
					      s8, isa);
				for (size_t i = no; i < no + 64; i++)
					ck_assert(y[i] == 0x5a);
			}
		}
		free(x);
		free(want);
		free(y);
		free(scratch);
	}
}
END_TEST

/* 2-D float32 AveragePool, MLAS's column-first order (avgpool2d_f32_ort_rows): the op's
 * output against that order written out here, bit for bit, with magnitudes that make the
 * order matter: pads, ceil mode, count_include_pad, strides 1 and 2, rectangular windows. */
START_TEST(avgpool_rows_vs_reference)
{
	static const int64_t geo[][8] = {
		/* H, W, kh, kw, s, pad, ceil, count_include_pad */
		{56, 56, 2, 2, 2, 0, 0, 0}, {28, 28, 2, 2, 2, 0, 0, 0}, {13, 17, 3, 3, 1, 1, 0, 0},
		{13, 17, 3, 3, 1, 1, 0, 1}, {15, 15, 3, 3, 2, 1, 1, 0}, {15, 15, 3, 3, 2, 1, 1, 1},
		{9, 30, 2, 5, 2, 2, 0, 1}, {7, 7, 7, 7, 1, 3, 0, 0}, {5, 11, 3, 2, 2, 0, 1, 0}, {1, 40, 1, 3, 2, 1, 0, 1},
	};
	for (size_t gi = 0; gi < sizeof geo / sizeof geo[0]; gi++) {
		const int64_t *G = geo[gi];
		int64_t H = G[0], W = G[1], kh = G[2], kw = G[3], st = G[4], p = G[5];
		int64_t dims[4] = {1, 3, H, W};
		struct wh_tensor x, y;
		tensor_random(&x, 4, dims, 900 + gi);
		float *xv = x.data;
		for (int64_t i = 0; i < 3 * H * W; i += 7)
			xv[i] *= 1e7f;
		const struct wh_tensor *ins[1] = {&x};
		int64_t k2[2] = {kh, kw}, s2[2] = {st, st}, p4[4] = {p, p, p, p};
		struct attr_spec a[] = {A_INTS("kernel_shape", k2), A_INTS("strides", s2), A_INTS("pads", p4),
					A_INT("ceil_mode", G[6]), A_INT("count_include_pad", G[7])};
		ck_assert_int_eq(run_op("AveragePool", 19, 1, ins, 1, a, 5, &y), WH_OK);
		int64_t OH = y.dims[2], OW = y.dims[3];
		const float *yv = y.data;
		for (int64_t c = 0; c < 3; c++)
			for (int64_t oh = 0; oh < OH; oh++)
				for (int64_t ow = 0; ow < OW; ow++) {
					const float *xc = xv + c * H * W;
					int64_t h0 = oh * st - p, w0 = ow * st - p, nr = 0, nc = 0, ph = 0, pw = 0;
					float acc = 0.0f;
					for (int64_t t = 0; t < kw; t++) {
						int64_t w = w0 + t;
						float col = 0.0f;
						bool first = true;
						for (int64_t r = 0; r < kh && w >= 0 && w < W; r++) {
							int64_t h = h0 + r;
							if (h < 0 || h >= H)
								continue;
							col = first ? xc[h * W + w] : col + xc[h * W + w];
							first = false;
						}
						acc = t == 0 ? col : acc + col;
						nc += w >= 0 && w < W;
						pw += w < W + p;
					}
					for (int64_t r = 0; r < kh; r++) {
						nr += h0 + r >= 0 && h0 + r < H;
						ph += h0 + r < H + p;
					}
					float want = acc / (float)(G[7] ? ph * pw : nr * nc);
					float got = yv[(c * OH + oh) * OW + ow];
					ck_assert_msg(!memcmp(&want, &got, sizeof want), "AveragePool geometry %zu (%lld, %lld, %lld): %a vs %a",
						      gi, (long long)c, (long long)oh, (long long)ow, (double)want, (double)got);
				}
		wh_tensor_release(&y);
		wh_tensor_release(&x);
	}
}
END_TEST

/* Float32 ReduceMax/ReduceMin: the vector kernels and the parallel chunks (runs of 2^16
 * elements and more) give the scalar scan's bits: the first NaN (payload kept), the first
 * zero of a zero result, -inf/+inf where nothing is greater. */
START_TEST(reduce_minmax_simd_vs_scalar)
{
	static const size_t lens[] = {1, 7, 15, 16, 17, 63, 64, 65, 100, 1000, 65535, 65536, 100000, 200001};
	const enum wh_isa isas[2] = {WH_ISA_AVX2, WH_ISA_AVX512};
	uint32_t nan_a = 0x7fc00001u, nan_b = 0xffc00002u;
	float qa, qb;
	memcpy(&qa, &nan_a, sizeof qa);
	memcpy(&qb, &nan_b, sizeof qb);
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
		for (int kind = 0; kind < 5; kind++)
			for (int op = 0; op < 2; op++) {
				size_t n = lens[li];
				float *v = malloc(n * sizeof *v);
				ck_assert_ptr_nonnull(v);
				uint64_t seed = 7 + li * 5 + (size_t)kind;
				for (size_t i = 0; i < n; i++) {
					float r = rng_float(&seed, 0, 1);
					switch (kind) {
					case 0: v[i] = rng_float(&seed, -4, 4); break;
					/* zeros of both signs are the extremes */
					case 1: v[i] = r < 0.5f ? 0.0f : -0.0f; break;
					case 2: v[i] = r < 0.3f ? 0.0f : r < 0.6f ? -0.0f : (op ? 1.0f : -1.0f) * r; break;
					/* two NaNs with different payloads late in the run (the last chunk) */
					case 3: v[i] = rng_float(&seed, -4, 4); break;
					default: v[i] = op ? INFINITY : -INFINITY; break;
					}
				}
				if (kind == 3) {
					v[n - 1 - n / 7] = qb;
					v[n - 1] = qa;
				}
				int64_t dims[3] = {1, 1, (int64_t)n};
				struct kh_harness ref;
				kh_init(&ref, "", op ? "ReduceMin" : "ReduceMax", 13, 1, 1);
				kh_attr_int(&ref, "keepdims", 0);
				kh_in_f32(&ref, 0, 3, dims, v);
				ref.cpu = wh_cpu_capped(WH_ISA_SCALAR);
				kh_run_ok(&ref);
				for (int ii = 0; ii < 2; ii++) {
					struct wh_cpu_features c = wh_cpu_capped(isas[ii]);
					if (c.isa != isas[ii])
						continue; /* the machine lacks it */
					struct kh_harness h;
					kh_init(&h, "", op ? "ReduceMin" : "ReduceMax", 13, 1, 1);
					kh_attr_int(&h, "keepdims", 0);
					kh_in_f32(&h, 0, 3, dims, v);
					h.cpu = c;
					kh_run_ok(&h);
					ck_assert_uint_eq(h.out[0].count, 1);
					ck_assert_msg(!memcmp(ref.out[0].data, h.out[0].data, sizeof(float)),
						      "%s n=%zu kind=%d isa=%s", op ? "ReduceMin" : "ReduceMax", n, kind,
						      wh_isa_name(c.isa));
					kh_free(&h);
				}
				if (kind == 3 && n > 1) /* the first NaN, with its payload */
					ck_assert(!memcmp(ref.out[0].data, &qb, sizeof qb));
				kh_free(&ref);
				free(v);
			}
}
END_TEST

static Suite *nn_suite(void)
{
	Suite *s = suite_create("nn");
	TCase *tc = tcase_create("kernels");
	tcase_add_test(tc, softmax_coerced_vs_axis);
	tcase_add_test(tc, logsoftmax_hardmax);
	tcase_add_test(tc, avgpool_count_include_pad);
	tcase_add_test(tc, maxpool_ceil_mode);
	tcase_add_test(tc, maxpool_indices_storage_order);
	tcase_add_test(tc, maxpool_two_pass_vs_scalar);
	tcase_add_test(tc, maxpool_plane_avx512_vs_scalar);
	tcase_add_test(tc, maxpool_q8_vs_definition);
	tcase_add_test(tc, avgpool_rows_vs_reference);
	tcase_add_test(tc, reduce_minmax_simd_vs_scalar);
	tcase_add_test(tc, pool_auto_pad_and_global);
	tcase_add_test(tc, reduce_empty_set);
	tcase_add_test(tc, reduce_axes_attr_vs_input);
	tcase_add_test(tc, reduce_integers);
	tcase_add_test(tc, batchnorm_inference);
	tcase_add_test(tc, layernorm_stats);
	tcase_add_test(tc, layernorm_batches_bit_identical);
	tcase_add_test(tc, groupnorm_param_forms);
	tcase_add_test(tc, dropout_modes);
	tcase_add_test(tc, einsum_forms);
	tcase_add_test(tc, nll_loss_weighted_mean);
	tcase_add_test(tc, thread_count_invariance);
	tcase_add_test(tc, ort_orders);
	tcase_add_test(tc, simd_vs_scalar);
	tcase_add_test(tc, simd_vs_scalar_pool_ln);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(nn_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
