/* Shape and data-movement kernels: semantic checks that a plausible but wrong
 * implementation fails (Slice with negative steps and clamping, Reshape 0/-1, TopK ties,
 * Resize coordinate rules, DepthToSpace modes, Pad modes, Unique order, strings moving
 * through Gather/Concat), and the Resize float32 2-D fast path against the general N-D path
 * for awkward sizes and several thread counts. Kernels are called directly through the op
 * registry with a hand-built node. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/ops/data-internal.h"
#include "graph/tensor.h"

/* ---- a tiny harness: one node, its attributes, inputs and outputs ---- */

#define MAX_ATTRS 8
#define MAX_IO 6

struct harness {
	struct wh_node node;
	struct wh_attr attrs[MAX_ATTRS];
	struct wh_tensor in[MAX_IO];
	const struct wh_tensor *inp[MAX_IO];
	struct wh_tensor out[MAX_IO];
	bool wanted[MAX_IO];
	struct wh_kernel_ctx ctx;
	struct wh_cpu_features cpu;
};

static void h_init(struct harness *h, const char *op, int64_t opset, uint32_t n_in, uint32_t n_out)
{
	memset(h, 0, sizeof *h);
	h->node.name = "n";
	h->node.op_type = op;
	h->node.domain = "";
	h->node.attrs = h->attrs;
	for (int i = 0; i < MAX_IO; i++) {
		wh_tensor_init(&h->in[i]);
		wh_tensor_init(&h->out[i]);
		h->inp[i] = &h->in[i];
		h->wanted[i] = true;
	}
	h->cpu = *wh_cpu();
	h->ctx.node = &h->node;
	h->ctx.opset = opset;
	h->ctx.n_inputs = n_in;
	h->ctx.inputs = h->inp;
	h->ctx.n_outputs = n_out;
	h->ctx.outputs = h->out;
	h->ctx.output_wanted = h->wanted;
	h->ctx.cpu = &h->cpu;
}

static void h_free(struct harness *h)
{
	for (int i = 0; i < MAX_IO; i++) {
		wh_tensor_release(&h->in[i]);
		wh_tensor_release(&h->out[i]);
	}
}

static struct wh_attr *h_attr(struct harness *h, const char *name, enum wh_attr_type type)
{
	ck_assert_uint_lt(h->node.n_attrs, MAX_ATTRS);
	struct wh_attr *a = &h->attrs[h->node.n_attrs++];
	memset(a, 0, sizeof *a);
	a->name = name;
	a->type = type;
	return a;
}

static void attr_int(struct harness *h, const char *name, int64_t v)
{
	h_attr(h, name, WH_ATTR_INT)->i = v;
}

static void attr_float(struct harness *h, const char *name, float v)
{
	h_attr(h, name, WH_ATTR_FLOAT)->f = v;
}

static void attr_str(struct harness *h, const char *name, const char *s)
{
	struct wh_attr *a = h_attr(h, name, WH_ATTR_STRING);
	a->s.data = (const uint8_t *)s;
	a->s.len = strlen(s);
}

static void attr_ints(struct harness *h, const char *name, int64_t *v, size_t n)
{
	struct wh_attr *a = h_attr(h, name, WH_ATTR_INTS);
	a->ints = v;
	a->n = n;
}

static void in_f32(struct harness *h, int i, int32_t rank, const int64_t *dims, const float *v)
{
	ck_assert_int_eq(wh_tensor_alloc(&h->in[i], WH_DT_FLOAT, rank, dims), WH_OK);
	if (h->in[i].count)
		memcpy(h->in[i].data, v, wh_tensor_nbytes(&h->in[i]));
}

static void in_i64(struct harness *h, int i, int32_t rank, const int64_t *dims, const int64_t *v)
{
	ck_assert_int_eq(wh_tensor_alloc(&h->in[i], WH_DT_INT64, rank, dims), WH_OK);
	if (h->in[i].count)
		memcpy(h->in[i].data, v, wh_tensor_nbytes(&h->in[i]));
}

static void in_vec_i64(struct harness *h, int i, int64_t n, const int64_t *v)
{
	in_i64(h, i, 1, &n, v);
}

static void omit_input(struct harness *h, int i)
{
	h->inp[i] = NULL;
}

static enum wh_status h_run(struct harness *h)
{
	const struct wh_op_def *d = wh_op_lookup("", h->node.op_type, h->ctx.opset);
	ck_assert_msg(d != NULL, "no kernel for %s-%lld", h->node.op_type, (long long)h->ctx.opset);
	return d->run(&h->ctx);
}

static void run_ok(struct harness *h)
{
	enum wh_status st = h_run(h);
	ck_assert_msg(st == WH_OK, "%s failed: %s", h->node.op_type, wh_error_message());
}

static void expect_shape(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->rank, rank);
	for (int32_t d = 0; d < rank; d++)
		ck_assert_int_eq(t->dims[d], dims[d]);
}

static void expect_f32(const struct wh_tensor *t, const float *v, uint64_t n, float tol)
{
	ck_assert_int_eq(t->dtype, WH_DT_FLOAT);
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(fabsf(((const float *)t->data)[i] - v[i]) <= tol, "element %llu: got %g, expected %g",
			      (unsigned long long)i, ((const float *)t->data)[i], v[i]);
}

static void expect_i64(const struct wh_tensor *t, const int64_t *v, uint64_t n)
{
	ck_assert_int_eq(t->dtype, WH_DT_INT64);
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_msg(((const int64_t *)t->data)[i] == v[i], "element %llu: got %lld, expected %lld",
			      (unsigned long long)i, (long long)((const int64_t *)t->data)[i], (long long)v[i]);
}

static float *iota_f32(uint64_t n)
{
	float *v = malloc(n * sizeof *v);
	ck_assert_ptr_nonnull(v);
	for (uint64_t i = 0; i < n; i++)
		v[i] = (float)i;
	return v;
}

/* ---- Slice ---- */

START_TEST(slice_negative_steps_and_clamping)
{
	struct harness h;
	h_init(&h, "Slice", 13, 5, 1);
	float *v = iota_f32(20);
	int64_t dims[2] = {4, 5};
	in_f32(&h, 0, 2, dims, v);
	/* rows from the last backwards in steps of 2 (start beyond the end clamps to 3);
	 * columns from -1 down past the start (end far below clamps to "before 0") */
	int64_t starts[2] = {100, -1}, ends[2] = {-100, INT64_MIN}, axes[2] = {0, -1}, steps[2] = {-2, -3};
	in_vec_i64(&h, 1, 2, starts);
	in_vec_i64(&h, 2, 2, ends);
	in_vec_i64(&h, 3, 2, axes);
	in_vec_i64(&h, 4, 2, steps);
	run_ok(&h);
	int64_t od[2] = {2, 2};
	expect_shape(&h.out[0], 2, od);
	float want[4] = {19, 16, 9, 6};
	expect_f32(&h.out[0], want, 4, 0);
	h_free(&h);

	/* Slice-1: attributes; an out-of-range start gives an empty axis, not an error */
	h_init(&h, "Slice", 1, 1, 1);
	in_f32(&h, 0, 2, dims, v);
	int64_t s1[2] = {1, 7}, e1[2] = {3, 9}, a1[2] = {0, 1};
	attr_ints(&h, "starts", s1, 2);
	attr_ints(&h, "ends", e1, 2);
	attr_ints(&h, "axes", a1, 2);
	run_ok(&h);
	int64_t od1[2] = {2, 0};
	expect_shape(&h.out[0], 2, od1);
	h_free(&h);
	free(v);
}
END_TEST

/* ---- Reshape ---- */

START_TEST(reshape_zero_and_minus_one)
{
	struct harness h;
	h_init(&h, "Reshape", 14, 2, 1);
	float *v = iota_f32(24);
	int64_t dims[3] = {2, 3, 4};
	in_f32(&h, 0, 3, dims, v);
	int64_t shape[3] = {0, -1, 2};
	in_vec_i64(&h, 1, 3, shape);
	run_ok(&h);
	int64_t od[3] = {2, 6, 2};
	expect_shape(&h.out[0], 3, od);
	/* a view: the data is shared, not copied */
	ck_assert_ptr_eq(h.out[0].data, h.in[0].data);
	h_free(&h);

	/* allowzero: 0 means an empty axis, so 24 elements cannot become 0x24 */
	h_init(&h, "Reshape", 14, 2, 1);
	in_f32(&h, 0, 3, dims, v);
	int64_t shape2[2] = {0, 24};
	in_vec_i64(&h, 1, 2, shape2);
	attr_int(&h, "allowzero", 1);
	ck_assert_int_eq(h_run(&h), WH_ERR_SHAPE);
	h_free(&h);

	/* two -1 entries are rejected */
	h_init(&h, "Reshape", 13, 2, 1);
	in_f32(&h, 0, 3, dims, v);
	int64_t shape3[2] = {-1, -1};
	in_vec_i64(&h, 1, 2, shape3);
	ck_assert_int_eq(h_run(&h), WH_ERR_SHAPE);
	h_free(&h);
	free(v);
}
END_TEST

/* ---- TopK ---- */

START_TEST(topk_ties_keep_lower_index_first)
{
	struct harness h;
	int64_t x[7] = {3, 1, 3, 2, 3, 1, 0}, k = 4;
	for (int largest = 0; largest <= 1; largest++) {
		h_init(&h, "TopK", 11, 2, 2);
		in_vec_i64(&h, 0, 7, x);
		int64_t kd = 1;
		in_i64(&h, 1, 1, &kd, &k);
		attr_int(&h, "largest", largest);
		run_ok(&h);
		int64_t want_v[2][4] = {{0, 1, 1, 2}, {3, 3, 3, 2}};
		int64_t want_i[2][4] = {{6, 1, 5, 3}, {0, 2, 4, 3}};
		expect_i64(&h.out[0], want_v[largest], 4);
		expect_i64(&h.out[1], want_i[largest], 4);
		h_free(&h);
	}
	/* along axis 0 of a 2-D tensor (strided slices) */
	h_init(&h, "TopK", 11, 2, 2);
	float m[6] = {1, 5, 2, 5, 2, 0};
	int64_t md[2] = {3, 2}, kd = 1, k2 = 2;
	in_f32(&h, 0, 2, md, m);
	in_i64(&h, 1, 1, &kd, &k2);
	attr_int(&h, "axis", 0);
	run_ok(&h);
	float wv[4] = {2, 5, 2, 5};
	int64_t wi[4] = {1, 0, 2, 1};
	expect_f32(&h.out[0], wv, 4, 0);
	expect_i64(&h.out[1], wi, 4);
	h_free(&h);
}
END_TEST

/* ---- Resize ---- */

static void resize_setup(struct harness *h, int64_t opset, int32_t rank, const int64_t *dims, const float *x,
			 const float *scales, const int64_t *sizes)
{
	h_init(h, "Resize", opset, 4, 1);
	in_f32(h, 0, rank, dims, x);
	omit_input(h, 1);
	int64_t n = rank;
	if (scales) {
		in_f32(h, 2, 1, &n, scales);
		omit_input(h, 3);
	} else {
		omit_input(h, 2);
		in_vec_i64(h, 3, rank, sizes);
	}
}

START_TEST(resize_asymmetric_nearest_2x)
{
	struct harness h;
	float x[6] = {1, 2, 3, 4, 5, 6};
	int64_t dims[4] = {1, 1, 2, 3};
	float scales[4] = {1, 1, 2, 2};
	resize_setup(&h, 11, 4, dims, x, scales, NULL);
	attr_str(&h, "mode", "nearest");
	attr_str(&h, "coordinate_transformation_mode", "asymmetric");
	attr_str(&h, "nearest_mode", "floor");
	run_ok(&h);
	int64_t od[4] = {1, 1, 4, 6};
	expect_shape(&h.out[0], 4, od);
	float want[24] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
	expect_f32(&h.out[0], want, 24, 0);
	h_free(&h);

	/* asymmetric 2x puts every odd output exactly between two inputs: round_prefer_ceil
	 * takes the upper one, round_prefer_floor the lower, and the last clamps */
	float y[3] = {10, 20, 30};
	int64_t d1[1] = {3};
	float s1[1] = {2};
	float want_nm[2][6] = {{10, 10, 20, 20, 30, 30}, {10, 20, 20, 30, 30, 30}};
	for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
		resize_setup(&h, 13, 1, d1, y, s1, NULL);
		attr_str(&h, "coordinate_transformation_mode", "asymmetric");
		attr_str(&h, "nearest_mode", ceil_mode ? "round_prefer_ceil" : "round_prefer_floor");
		run_ok(&h);
		expect_f32(&h.out[0], want_nm[ceil_mode], 6, 0);
		h_free(&h);
	}
}
END_TEST

START_TEST(resize_linear_modes)
{
	struct harness h;
	float x[4] = {1, 2, 3, 4};
	int64_t d[1] = {4};
	/* align_corners with scales: the reference divides by scale*len - 1 (2.4 - 1), not by
	 * the integer output size - 1 */
	float s[1] = {0.6f};
	resize_setup(&h, 19, 1, d, x, s, NULL);
	attr_str(&h, "mode", "linear");
	attr_str(&h, "coordinate_transformation_mode", "align_corners");
	run_ok(&h);
	double ow = 0.6f * 4.0;
	float want[2] = {1, (float)(1 + 3 / (ow - 1))};
	expect_f32(&h.out[0], want, 2, 1e-6f);
	h_free(&h);

	/* half_pixel upsampling clamps at the edges: [1,2,3,4] x2 */
	float s2[1] = {2};
	resize_setup(&h, 19, 1, d, x, s2, NULL);
	attr_str(&h, "mode", "linear");
	run_ok(&h);
	float want2[8] = {1, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f, 4};
	expect_f32(&h.out[0], want2, 8, 1e-6f);
	h_free(&h);

	/* sizes 4x4 with not_larger keeps the aspect ratio of 2x4: the scale is
	 * min(4/2, 4/4) = 1, so the output stays 2x4 (stretch would give 4x4) */
	float x2[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t d2[2] = {2, 4}, sz[2] = {4, 4};
	resize_setup(&h, 19, 2, d2, x2, NULL, sz);
	attr_str(&h, "keep_aspect_ratio_policy", "not_larger");
	run_ok(&h);
	expect_shape(&h.out[0], 2, d2);
	expect_f32(&h.out[0], x2, 8, 0);
	h_free(&h);
}
END_TEST

/* The 2-D fast path against the general path, and both across thread counts. */
START_TEST(resize_fast_path_matches_general)
{
	static const char *modes[][3] = {
		{"nearest", "asymmetric", "floor"},
		{"nearest", "half_pixel", "round_prefer_floor"},
		{"linear", "half_pixel", ""},
		{"linear", "align_corners", ""},
		{"linear", "pytorch_half_pixel", ""},
		{"linear", "asymmetric", ""},
		{"linear", "tf_half_pixel_for_nn", ""},
	};
	static const float scales[][2] = {{2, 2}, {1.7f, 0.6f}, {0.5f, 3}, {1, 1.3f}};
	int64_t dims[4] = {2, 3, 5, 7};
	float *x = malloc(210 * sizeof *x);
	ck_assert_ptr_nonnull(x);
	for (int i = 0; i < 210; i++)
		x[i] = sinf((float)i * 0.37f) * 10;
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
		for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
			float sc[4] = {1, 1, scales[s][0], scales[s][1]};
			struct wh_tensor res[3];
			for (int variant = 0; variant < 3; variant++) {
				struct harness h;
				resize_setup(&h, 13, 4, dims, x, sc, NULL);
				attr_str(&h, "mode", modes[m][0]);
				attr_str(&h, "coordinate_transformation_mode", modes[m][1]);
				if (*modes[m][2])
					attr_str(&h, "nearest_mode", modes[m][2]);
				/* 0: general path, 1: fast path, 2: fast path on 3 threads */
				struct wh_resize_opts o = {variant == 0};
				h.ctx.pool = variant == 2 ? pool : NULL;
				enum wh_status st = wh_resize_run_opts(&h.ctx, &o);
				ck_assert_msg(st == WH_OK, "%s", wh_error_message());
				wh_tensor_init(&res[variant]);
				wh_tensor_ref(&res[variant], &h.out[0]);
				h_free(&h);
			}
			ck_assert(wh_tensor_same_shape(&res[0], &res[1]));
			for (uint64_t i = 0; i < res[0].count; i++) {
				float a = ((float *)res[0].data)[i], b = ((float *)res[1].data)[i];
				ck_assert_msg(fabsf(a - b) <= 1e-5f * (1 + fabsf(a)), "%s/%s scale %g,%g element %llu: general %g fast %g",
					      modes[m][0], modes[m][1], scales[s][0], scales[s][1], (unsigned long long)i, a, b);
			}
			ck_assert(memcmp(res[1].data, res[2].data, wh_tensor_nbytes(&res[1])) == 0);
			for (int v = 0; v < 3; v++)
				wh_tensor_release(&res[v]);
		}
	}
	wh_threadpool_destroy(pool);
	free(x);
}
END_TEST

/* ---- layout ops ---- */

START_TEST(depth_to_space_modes_differ)
{
	/* 1x8x1x1 -> 1x2x2x2: DCR takes channels blocks-first, CRD channels-first */
	float x[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t dims[4] = {1, 8, 1, 1};
	float want[2][8] = {{0, 2, 4, 6, 1, 3, 5, 7}, {0, 1, 2, 3, 4, 5, 6, 7}};
	for (int crd = 0; crd <= 1; crd++) {
		struct harness h;
		h_init(&h, "DepthToSpace", 13, 1, 1);
		in_f32(&h, 0, 4, dims, x);
		attr_int(&h, "blocksize", 2);
		attr_str(&h, "mode", crd ? "CRD" : "DCR");
		run_ok(&h);
		int64_t od[4] = {1, 2, 2, 2};
		expect_shape(&h.out[0], 4, od);
		expect_f32(&h.out[0], want[crd], 8, 0);
		h_free(&h);
	}
	/* SpaceToDepth inverts DepthToSpace DCR */
	struct harness h;
	h_init(&h, "SpaceToDepth", 13, 1, 1);
	int64_t sd[4] = {1, 2, 2, 2};
	in_f32(&h, 0, 4, sd, want[0]);
	attr_int(&h, "blocksize", 2);
	run_ok(&h);
	expect_shape(&h.out[0], 4, dims);
	expect_f32(&h.out[0], x, 8, 0);
	h_free(&h);
}
END_TEST

START_TEST(pad_modes)
{
	float x[3] = {1, 2, 3};
	int64_t d = 3, pads[2] = {4, 3};
	static const char *modes[4] = {"constant", "reflect", "edge", "wrap"};
	float want[4][10] = {
		{9, 9, 9, 9, 1, 2, 3, 9, 9, 9},
		{1, 2, 3, 2, 1, 2, 3, 2, 1, 2},
		{1, 1, 1, 1, 1, 2, 3, 3, 3, 3},
		{3, 1, 2, 3, 1, 2, 3, 1, 2, 3},
	};
	for (int m = 0; m < 4; m++) {
		struct harness h;
		h_init(&h, "Pad", 19, 3, 1);
		in_f32(&h, 0, 1, &d, x);
		in_vec_i64(&h, 1, 2, pads);
		float cv = 9;
		in_f32(&h, 2, 0, NULL, &cv);
		attr_str(&h, "mode", modes[m]);
		run_ok(&h);
		expect_f32(&h.out[0], want[m], 10, 0);
		h_free(&h);
	}
	/* negative pads crop */
	struct harness h;
	h_init(&h, "Pad", 2, 1, 1);
	in_f32(&h, 0, 1, &d, x);
	int64_t neg[2] = {-1, 1};
	attr_ints(&h, "pads", neg, 2);
	attr_float(&h, "value", 7);
	run_ok(&h);
	float wneg[3] = {2, 3, 7};
	expect_f32(&h.out[0], wneg, 3, 0);
	h_free(&h);
}
END_TEST

START_TEST(transpose_and_split)
{
	struct harness h;
	h_init(&h, "Transpose", 13, 1, 1);
	float *v = iota_f32(24);
	int64_t dims[3] = {2, 3, 4}, perm[3] = {2, 0, 1};
	in_f32(&h, 0, 3, dims, v);
	attr_ints(&h, "perm", perm, 3);
	run_ok(&h);
	int64_t od[3] = {4, 2, 3};
	expect_shape(&h.out[0], 3, od);
	/* out[i][j][k] = in[j][k][i] */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				ck_assert_float_eq(((float *)h.out[0].data)[(i * 2 + j) * 3 + k], v[(j * 3 + k) * 4 + i]);
	h_free(&h);

	/* Split-18 with num_outputs: ceil(7/3) = 3, so 3, 3, 1 */
	h_init(&h, "Split", 18, 1, 3);
	int64_t d7 = 7;
	in_f32(&h, 0, 1, &d7, v);
	attr_int(&h, "num_outputs", 3);
	run_ok(&h);
	ck_assert_int_eq(h.out[0].dims[0], 3);
	ck_assert_int_eq(h.out[1].dims[0], 3);
	ck_assert_int_eq(h.out[2].dims[0], 1);
	ck_assert_float_eq(((float *)h.out[2].data)[0], 6);
	h_free(&h);
	free(v);
}
END_TEST

START_TEST(unique_orders)
{
	float x[6] = {2, 1, 1, 3, 4, 3};
	int64_t d = 6;
	for (int sorted = 0; sorted <= 1; sorted++) {
		struct harness h;
		h_init(&h, "Unique", 11, 1, 4);
		in_f32(&h, 0, 1, &d, x);
		attr_int(&h, "sorted", sorted);
		run_ok(&h);
		float wy[2][4] = {{2, 1, 3, 4}, {1, 2, 3, 4}};
		int64_t wi[2][4] = {{0, 1, 3, 4}, {1, 0, 3, 4}};
		int64_t winv[2][6] = {{0, 1, 1, 2, 3, 2}, {1, 0, 0, 2, 3, 2}};
		int64_t wc[2][4] = {{1, 2, 2, 1}, {2, 1, 2, 1}};
		expect_f32(&h.out[0], wy[sorted], 4, 0);
		expect_i64(&h.out[1], wi[sorted], 4);
		expect_i64(&h.out[2], winv[sorted], 6);
		expect_i64(&h.out[3], wc[sorted], 4);
		h_free(&h);
	}
}
END_TEST

START_TEST(strings_survive_their_input)
{
	/* Gather of a string tensor must own its strings: the input is released first */
	struct harness h;
	h_init(&h, "Gather", 13, 2, 1);
	const char *s[3] = {"alpha", "be", "gamma"};
	size_t len[3] = {5, 2, 5};
	int64_t d = 3, idx[4] = {2, 0, -1, 1};
	ck_assert_int_eq(wh_tensor_alloc_strings(&h.in[0], 1, &d, s, len), WH_OK);
	in_vec_i64(&h, 1, 4, idx);
	run_ok(&h);
	wh_tensor_release(&h.in[0]);
	const char *const *o = h.out[0].data;
	ck_assert_str_eq(o[0], "gamma");
	ck_assert_str_eq(o[1], "alpha");
	ck_assert_str_eq(o[2], "gamma");
	ck_assert_str_eq(o[3], "be");
	h_free(&h);

	/* out-of-range indices are an error, not a read past the end */
	h_init(&h, "Gather", 13, 2, 1);
	float x[3] = {1, 2, 3};
	int64_t bad = 3;
	in_f32(&h, 0, 1, &d, x);
	in_vec_i64(&h, 1, 1, &bad);
	ck_assert_int_eq(h_run(&h), WH_ERR_INVALID);
	h_free(&h);
}
END_TEST

START_TEST(scatter_and_gather_nd)
{
	/* ScatterND with reduction add accumulates duplicates */
	struct harness h;
	h_init(&h, "ScatterND", 18, 3, 1);
	float x[4] = {1, 1, 1, 1}, u[3] = {5, 7, 2};
	int64_t d = 4, id[2] = {3, 1}, ind[3] = {1, 1, 3}, ud = 3;
	in_f32(&h, 0, 1, &d, x);
	in_i64(&h, 1, 2, id, ind);
	in_f32(&h, 2, 1, &ud, u);
	attr_str(&h, "reduction", "add");
	run_ok(&h);
	float want[4] = {1, 13, 1, 3};
	expect_f32(&h.out[0], want, 4, 0);
	h_free(&h);

	/* GatherND with batch_dims 1 */
	h_init(&h, "GatherND", 13, 2, 1);
	float y[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t yd[3] = {2, 2, 2}, gi[2] = {2, 1}, gv[2] = {1, 0};
	in_f32(&h, 0, 3, yd, y);
	in_i64(&h, 1, 2, gi, gv);
	attr_int(&h, "batch_dims", 1);
	run_ok(&h);
	int64_t od[2] = {2, 2};
	expect_shape(&h.out[0], 2, od);
	float wg[4] = {2, 3, 4, 5};
	expect_f32(&h.out[0], wg, 4, 0);
	h_free(&h);
}
END_TEST

/* Hostile attribute and input values end in an error status, never a crash. */
START_TEST(hostile_inputs_fail_cleanly)
{
	struct harness h;
	float x[6] = {1, 2, 3, 4, 5, 6};
	int64_t d2[2] = {2, 3};

	/* Slice step 0 */
	h_init(&h, "Slice", 13, 5, 1);
	in_f32(&h, 0, 2, d2, x);
	int64_t z = 0, big = 5;
	in_vec_i64(&h, 1, 1, &z);
	in_vec_i64(&h, 2, 1, &big);
	in_vec_i64(&h, 3, 1, &z);
	in_vec_i64(&h, 4, 1, &z);
	ck_assert_int_eq(h_run(&h), WH_ERR_INVALID);
	h_free(&h);

	/* Tile with a negative repeat */
	h_init(&h, "Tile", 13, 2, 1);
	in_f32(&h, 0, 2, d2, x);
	int64_t reps[2] = {1, -2};
	in_vec_i64(&h, 1, 2, reps);
	ck_assert_int_eq(h_run(&h), WH_ERR_INVALID);
	h_free(&h);

	/* Expand to a shape too large to allocate */
	h_init(&h, "Expand", 13, 2, 1);
	in_f32(&h, 0, 2, d2, x);
	int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 3};
	in_vec_i64(&h, 1, 3, huge);
	ck_assert_int_ne(h_run(&h), WH_OK);
	h_free(&h);

	/* wrap-padding an empty axis has nothing to repeat */
	h_init(&h, "Pad", 19, 2, 1);
	int64_t d0[2] = {2, 0};
	in_f32(&h, 0, 2, d0, x);
	int64_t pads[4] = {0, 1, 0, 1};
	in_vec_i64(&h, 1, 4, pads);
	attr_str(&h, "mode", "wrap");
	ck_assert_int_eq(h_run(&h), WH_ERR_SHAPE);
	h_free(&h);

	/* Resize with an absurd scale: an overflow error, not a giant allocation */
	float sc[2] = {1, 1e30f};
	resize_setup(&h, 13, 2, d2, x, sc, NULL);
	ck_assert_int_eq(h_run(&h), WH_ERR_OVERFLOW);
	h_free(&h);

	/* Resize with a tiny antialias scale: the filter width is refused */
	float tiny[2] = {1, 1e-6f};
	int64_t wide[2] = {1, 2000000};
	h_init(&h, "Resize", 19, 3, 1);
	ck_assert_int_eq(wh_tensor_alloc(&h.in[0], WH_DT_FLOAT, 2, wide), WH_OK);
	memset(h.in[0].data, 0, wh_tensor_nbytes(&h.in[0]));
	omit_input(&h, 1);
	int64_t two = 2;
	in_f32(&h, 2, 1, &two, tiny);
	attr_str(&h, "mode", "linear");
	attr_int(&h, "antialias", 1);
	ck_assert_int_eq(h_run(&h), WH_ERR_UNSUPPORTED);
	h_free(&h);

	/* OneHot with NaN and huge float indices selects nothing */
	h_init(&h, "OneHot", 11, 3, 1);
	float idx[3] = {NAN, 1e30f, 1};
	int64_t three = 3;
	in_f32(&h, 0, 1, &three, idx);
	float depth = 3;
	in_f32(&h, 1, 0, NULL, &depth);
	float vals[2] = {0, 1};
	in_f32(&h, 2, 1, &two, vals);
	run_ok(&h);
	float want[9] = {0, 0, 0, 0, 0, 0, 0, 1, 0};
	expect_f32(&h.out[0], want, 9, 0);
	h_free(&h);

	/* GatherElements with indices larger than data off the axis (axis 0 may differ) */
	h_init(&h, "GatherElements", 13, 2, 1);
	in_f32(&h, 0, 2, d2, x);
	int64_t id[2] = {1, 4}, iv[4] = {0, 0, 0, 0};
	in_i64(&h, 1, 2, id, iv);
	ck_assert_int_eq(h_run(&h), WH_ERR_SHAPE);
	h_free(&h);

	/* empty outputs need no data */
	h_init(&h, "EyeLike", 22, 1, 1);
	int64_t e0[2] = {0, 4};
	in_f32(&h, 0, 2, e0, x);
	run_ok(&h);
	ck_assert_uint_eq(h.out[0].count, 0);
	h_free(&h);
}
END_TEST

static Suite *shapeops_suite(void)
{
	Suite *s = suite_create("shapeops");
	TCase *tc = tcase_create("semantics");
	tcase_add_test(tc, slice_negative_steps_and_clamping);
	tcase_add_test(tc, reshape_zero_and_minus_one);
	tcase_add_test(tc, topk_ties_keep_lower_index_first);
	tcase_add_test(tc, resize_asymmetric_nearest_2x);
	tcase_add_test(tc, resize_linear_modes);
	tcase_add_test(tc, resize_fast_path_matches_general);
	tcase_add_test(tc, depth_to_space_modes_differ);
	tcase_add_test(tc, pad_modes);
	tcase_add_test(tc, transpose_and_split);
	tcase_add_test(tc, unique_orders);
	tcase_add_test(tc, strings_survive_their_input);
	tcase_add_test(tc, scatter_and_gather_nd);
	tcase_add_test(tc, hostile_inputs_fail_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(shapeops_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
