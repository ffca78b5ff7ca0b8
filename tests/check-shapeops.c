/* Shape and data-movement kernels: semantic checks that a plausible but wrong
 * implementation fails (Slice with negative steps and clamping, Reshape 0/-1, TopK ties,
 * Resize coordinate rules, DepthToSpace modes, Pad modes, Unique order, strings moving
 * through Gather/Concat), and the Resize float32 2-D fast path against the general N-D path
 * for awkward sizes and several thread counts. Kernels are called directly through the op
 * registry with a hand-built node (tests/kernel-harness.h). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/ops/data-internal.h"
#include "graph/tensor.h"
#include "tests/kernel-harness.h"

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
	struct kh_harness h;
	kh_init(&h, "", "Slice", 13, 5, 1);
	float *v = iota_f32(20);
	int64_t dims[2] = {4, 5};
	kh_in_f32(&h, 0, 2, dims, v);
	/* rows from the last backwards in steps of 2 (start beyond the end clamps to 3);
	 * columns from -1 down past the start (end far below clamps to "before 0") */
	int64_t starts[2] = {100, -1}, ends[2] = {-100, INT64_MIN}, axes[2] = {0, -1}, steps[2] = {-2, -3};
	kh_in_vec_i64(&h, 1, 2, starts);
	kh_in_vec_i64(&h, 2, 2, ends);
	kh_in_vec_i64(&h, 3, 2, axes);
	kh_in_vec_i64(&h, 4, 2, steps);
	kh_run_ok(&h);
	int64_t od[2] = {2, 2};
	kh_expect_shape(&h.out[0], 2, od);
	float want[4] = {19, 16, 9, 6};
	kh_expect_f32(&h.out[0], want, 4, 0);
	kh_free(&h);

	/* Slice-1: attributes; an out-of-range start gives an empty axis, not an error */
	kh_init(&h, "", "Slice", 1, 1, 1);
	kh_in_f32(&h, 0, 2, dims, v);
	int64_t s1[2] = {1, 7}, e1[2] = {3, 9}, a1[2] = {0, 1};
	kh_attr_ints(&h, "starts", s1, 2);
	kh_attr_ints(&h, "ends", e1, 2);
	kh_attr_ints(&h, "axes", a1, 2);
	kh_run_ok(&h);
	int64_t od1[2] = {2, 0};
	kh_expect_shape(&h.out[0], 2, od1);
	kh_free(&h);
	free(v);
}
END_TEST

/* ---- Reshape ---- */

START_TEST(reshape_zero_and_minus_one)
{
	struct kh_harness h;
	kh_init(&h, "", "Reshape", 14, 2, 1);
	float *v = iota_f32(24);
	int64_t dims[3] = {2, 3, 4};
	kh_in_f32(&h, 0, 3, dims, v);
	int64_t shape[3] = {0, -1, 2};
	kh_in_vec_i64(&h, 1, 3, shape);
	kh_run_ok(&h);
	int64_t od[3] = {2, 6, 2};
	kh_expect_shape(&h.out[0], 3, od);
	/* a view: the data is shared, not copied */
	ck_assert_ptr_eq(h.out[0].data, h.in[0].data);
	kh_free(&h);

	/* allowzero: 0 means an empty axis, so 24 elements cannot become 0x24 */
	kh_init(&h, "", "Reshape", 14, 2, 1);
	kh_in_f32(&h, 0, 3, dims, v);
	int64_t shape2[2] = {0, 24};
	kh_in_vec_i64(&h, 1, 2, shape2);
	kh_attr_int(&h, "allowzero", 1);
	ck_assert_int_eq(kh_run(&h), WH_ERR_SHAPE);
	kh_free(&h);

	/* two -1 entries are rejected */
	kh_init(&h, "", "Reshape", 13, 2, 1);
	kh_in_f32(&h, 0, 3, dims, v);
	int64_t shape3[2] = {-1, -1};
	kh_in_vec_i64(&h, 1, 2, shape3);
	ck_assert_int_eq(kh_run(&h), WH_ERR_SHAPE);
	kh_free(&h);
	free(v);
}
END_TEST

/* ---- TopK ---- */

START_TEST(topk_ties_keep_lower_index_first)
{
	struct kh_harness h;
	int64_t x[7] = {3, 1, 3, 2, 3, 1, 0}, k = 4;
	for (int largest = 0; largest <= 1; largest++) {
		kh_init(&h, "", "TopK", 11, 2, 2);
		kh_in_vec_i64(&h, 0, 7, x);
		int64_t kd = 1;
		kh_in_i64(&h, 1, 1, &kd, &k);
		kh_attr_int(&h, "largest", largest);
		kh_run_ok(&h);
		int64_t want_v[2][4] = {{0, 1, 1, 2}, {3, 3, 3, 2}};
		int64_t want_i[2][4] = {{6, 1, 5, 3}, {0, 2, 4, 3}};
		kh_expect_i64(&h.out[0], want_v[largest], 4);
		kh_expect_i64(&h.out[1], want_i[largest], 4);
		kh_free(&h);
	}
	/* along axis 0 of a 2-D tensor (strided slices) */
	kh_init(&h, "", "TopK", 11, 2, 2);
	float m[6] = {1, 5, 2, 5, 2, 0};
	int64_t md[2] = {3, 2}, kd = 1, k2 = 2;
	kh_in_f32(&h, 0, 2, md, m);
	kh_in_i64(&h, 1, 1, &kd, &k2);
	kh_attr_int(&h, "axis", 0);
	kh_run_ok(&h);
	float wv[4] = {2, 5, 2, 5};
	int64_t wi[4] = {1, 0, 2, 1};
	kh_expect_f32(&h.out[0], wv, 4, 0);
	kh_expect_i64(&h.out[1], wi, 4);
	kh_free(&h);
}
END_TEST

/* ---- Resize ---- */

static void resize_setup(struct kh_harness *h, int64_t opset, int32_t rank, const int64_t *dims, const float *x,
			 const float *scales, const int64_t *sizes)
{
	kh_init(h, "", "Resize", opset, 4, 1);
	kh_in_f32(h, 0, rank, dims, x);
	kh_omit(h, 1);
	int64_t n = rank;
	if (scales) {
		kh_in_f32(h, 2, 1, &n, scales);
		kh_omit(h, 3);
	} else {
		kh_omit(h, 2);
		kh_in_vec_i64(h, 3, rank, sizes);
	}
}

START_TEST(resize_asymmetric_nearest_2x)
{
	struct kh_harness h;
	float x[6] = {1, 2, 3, 4, 5, 6};
	int64_t dims[4] = {1, 1, 2, 3};
	float scales[4] = {1, 1, 2, 2};
	resize_setup(&h, 11, 4, dims, x, scales, NULL);
	kh_attr_str(&h, "mode", "nearest");
	kh_attr_str(&h, "coordinate_transformation_mode", "asymmetric");
	kh_attr_str(&h, "nearest_mode", "floor");
	kh_run_ok(&h);
	int64_t od[4] = {1, 1, 4, 6};
	kh_expect_shape(&h.out[0], 4, od);
	float want[24] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
	kh_expect_f32(&h.out[0], want, 24, 0);
	kh_free(&h);

	/* asymmetric 2x puts every odd output exactly between two inputs: round_prefer_ceil
	 * takes the upper one, round_prefer_floor the lower, and the last clamps */
	float y[3] = {10, 20, 30};
	int64_t d1[1] = {3};
	float s1[1] = {2};
	float want_nm[2][6] = {{10, 10, 20, 20, 30, 30}, {10, 20, 20, 30, 30, 30}};
	for (int ceil_mode = 0; ceil_mode <= 1; ceil_mode++) {
		resize_setup(&h, 13, 1, d1, y, s1, NULL);
		kh_attr_str(&h, "coordinate_transformation_mode", "asymmetric");
		kh_attr_str(&h, "nearest_mode", ceil_mode ? "round_prefer_ceil" : "round_prefer_floor");
		kh_run_ok(&h);
		kh_expect_f32(&h.out[0], want_nm[ceil_mode], 6, 0);
		kh_free(&h);
	}
}
END_TEST

START_TEST(resize_linear_modes)
{
	struct kh_harness h;
	float x[4] = {1, 2, 3, 4};
	int64_t d[1] = {4};
	/* align_corners with scales: the reference divides by scale*len - 1 (2.4 - 1), not by
	 * the integer output size - 1 */
	float s[1] = {0.6f};
	resize_setup(&h, 19, 1, d, x, s, NULL);
	kh_attr_str(&h, "mode", "linear");
	kh_attr_str(&h, "coordinate_transformation_mode", "align_corners");
	kh_run_ok(&h);
	double ow = 0.6f * 4.0;
	float want[2] = {1, (float)(1 + 3 / (ow - 1))};
	kh_expect_f32(&h.out[0], want, 2, 1e-6f);
	kh_free(&h);

	/* half_pixel upsampling clamps at the edges: [1,2,3,4] x2 */
	float s2[1] = {2};
	resize_setup(&h, 19, 1, d, x, s2, NULL);
	kh_attr_str(&h, "mode", "linear");
	kh_run_ok(&h);
	float want2[8] = {1, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f, 4};
	kh_expect_f32(&h.out[0], want2, 8, 1e-6f);
	kh_free(&h);

	/* sizes 4x4 with not_larger keeps the aspect ratio of 2x4: the scale is
	 * min(4/2, 4/4) = 1, so the output stays 2x4 (stretch would give 4x4) */
	float x2[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t d2[2] = {2, 4}, sz[2] = {4, 4};
	resize_setup(&h, 19, 2, d2, x2, NULL, sz);
	kh_attr_str(&h, "keep_aspect_ratio_policy", "not_larger");
	kh_run_ok(&h);
	kh_expect_shape(&h.out[0], 2, d2);
	kh_expect_f32(&h.out[0], x2, 8, 0);
	kh_free(&h);
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
				struct kh_harness h;
				resize_setup(&h, 13, 4, dims, x, sc, NULL);
				kh_attr_str(&h, "mode", modes[m][0]);
				kh_attr_str(&h, "coordinate_transformation_mode", modes[m][1]);
				if (*modes[m][2])
					kh_attr_str(&h, "nearest_mode", modes[m][2]);
				/* 0: general path, 1: fast path, 2: fast path on 3 threads */
				struct wh_resize_opts o = {variant == 0};
				h.ctx.pool = variant == 2 ? pool : NULL;
				enum wh_status st = wh_resize_run_opts(kh_ctx(&h), &o);
				ck_assert_msg(st == WH_OK, "%s", wh_error_message());
				wh_tensor_init(&res[variant]);
				wh_tensor_ref(&res[variant], &h.out[0]);
				kh_free(&h);
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

/* The linear 2-D kernel keeps two horizontally interpolated source rows for the output
 * rows that share them: bit for bit the row-at-a-time formula written out, with source
 * row maps that go up, back and repeat (hits and misses of both rows), over 3 planes, on
 * one and 3 threads. */
START_TEST(resize2d_linear_rows_cached)
{
	enum { IH = 6, IW = 9, OH = 11, OW = 20, NP = 3 };
	static const int64_t y0[OH] = {0, 0, 1, 1, 2, 5, 5, 3, 0, 4, 4}, y1[OH] = {1, 1, 2, 1, 3, 5, 4, 3, 5, 5, 4};
	int64_t x0[OW], x1[OW];
	float wy0[OH], wy1[OH], wx0[OW], wx1[OW];
	for (int o = 0; o < OH; o++) {
		wy0[o] = 0.25f + 0.05f * (float)o;
		wy1[o] = 1.0f - wy0[o];
	}
	for (int o = 0; o < OW; o++) {
		x0[o] = (o * 7) % IW;
		x1[o] = (o * 7 + 1) % IW;
		wx0[o] = 0.1f + 0.04f * (float)o;
		wx1[o] = 1.0f - wx0[o];
	}
	float src[NP * IH * IW], want[NP * OH * OW], got[NP * OH * OW];
	for (int i = 0; i < NP * IH * IW; i++)
		src[i] = sinf((float)i * 0.91f) * (i % 5 ? 1.0f : 1e6f);
	for (int p = 0; p < NP; p++)
		for (int oy = 0; oy < OH; oy++)
			for (int ox = 0; ox < OW; ox++) {
				const float *s0 = src + (p * IH + y0[oy]) * IW, *s1 = src + (p * IH + y1[oy]) * IW;
				float top = wx0[ox] * s0[x0[ox]] + wx1[ox] * s0[x1[ox]];
				float bot = wx0[ox] * s1[x0[ox]] + wx1[ox] * s1[x1[ox]];
				want[(p * OH + oy) * OW + ox] = wy0[oy] * top + wy1[oy] * bot;
			}
	struct wh_resize2d_plan plan = {.n_planes = NP, .ih = IH, .iw = IW, .oh = OH, .ow = OW, .linear = true,
					.y0 = y0, .y1 = y1, .x0 = x0, .x1 = x1, .wy0 = wy0, .wy1 = wy1, .wx0 = wx0, .wx1 = wx1};
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	for (int t = 0; t < 2; t++) {
		memset(got, 0, sizeof got);
		wh_resize2d_f32(t ? pool : NULL, &plan, src, got);
		ck_assert_msg(!memcmp(want, got, sizeof got), "resize2d linear, %d threads", t ? 3 : 1);
	}
	wh_threadpool_destroy(pool);
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
		struct kh_harness h;
		kh_init(&h, "", "DepthToSpace", 13, 1, 1);
		kh_in_f32(&h, 0, 4, dims, x);
		kh_attr_int(&h, "blocksize", 2);
		kh_attr_str(&h, "mode", crd ? "CRD" : "DCR");
		kh_run_ok(&h);
		int64_t od[4] = {1, 2, 2, 2};
		kh_expect_shape(&h.out[0], 4, od);
		kh_expect_f32(&h.out[0], want[crd], 8, 0);
		kh_free(&h);
	}
	/* SpaceToDepth inverts DepthToSpace DCR */
	struct kh_harness h;
	kh_init(&h, "", "SpaceToDepth", 13, 1, 1);
	int64_t sd[4] = {1, 2, 2, 2};
	kh_in_f32(&h, 0, 4, sd, want[0]);
	kh_attr_int(&h, "blocksize", 2);
	kh_run_ok(&h);
	kh_expect_shape(&h.out[0], 4, dims);
	kh_expect_f32(&h.out[0], x, 8, 0);
	kh_free(&h);
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
		struct kh_harness h;
		kh_init(&h, "", "Pad", 19, 3, 1);
		kh_in_f32(&h, 0, 1, &d, x);
		kh_in_vec_i64(&h, 1, 2, pads);
		float cv = 9;
		kh_in_f32(&h, 2, 0, NULL, &cv);
		kh_attr_str(&h, "mode", modes[m]);
		kh_run_ok(&h);
		kh_expect_f32(&h.out[0], want[m], 10, 0);
		kh_free(&h);
	}
	/* negative pads crop */
	struct kh_harness h;
	kh_init(&h, "", "Pad", 2, 1, 1);
	kh_in_f32(&h, 0, 1, &d, x);
	int64_t neg[2] = {-1, 1};
	kh_attr_ints(&h, "pads", neg, 2);
	kh_attr_float(&h, "value", 7);
	kh_run_ok(&h);
	float wneg[3] = {2, 3, 7};
	kh_expect_f32(&h.out[0], wneg, 3, 0);
	kh_free(&h);
	/* 2-d: rows of the constant and runs of the source; zero pads give the input */
	float x2[6] = {1, 2, 3, 4, 5, 6};
	int64_t d2[2] = {2, 3};
	int64_t p2[3][4] = {{1, 2, 0, 1}, {0, 0, 0, 0}, {0, -1, 1, 2}};
	float w2[3][18] = {
		{0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0},
		{1, 2, 3, 4, 5, 6},
		{2, 3, 0, 0, 5, 6, 0, 0, 0, 0, 0, 0},
	};
	int64_t wd2[3][2] = {{3, 6}, {2, 3}, {3, 4}};
	for (int c = 0; c < 3; c++) {
		kh_init(&h, "", "Pad", 19, 2, 1);
		kh_in_f32(&h, 0, 2, d2, x2);
		kh_in_vec_i64(&h, 1, 4, p2[c]);
		kh_run_ok(&h);
		kh_expect_shape(&h.out[0], 2, wd2[c]);
		kh_expect_f32(&h.out[0], w2[c], (size_t)(wd2[c][0] * wd2[c][1]), 0);
		kh_free(&h);
	}
}
END_TEST

START_TEST(transpose_and_split)
{
	struct kh_harness h;
	kh_init(&h, "", "Transpose", 13, 1, 1);
	float *v = iota_f32(24);
	int64_t dims[3] = {2, 3, 4}, perm[3] = {2, 0, 1};
	kh_in_f32(&h, 0, 3, dims, v);
	kh_attr_ints(&h, "perm", perm, 3);
	kh_run_ok(&h);
	int64_t od[3] = {4, 2, 3};
	kh_expect_shape(&h.out[0], 3, od);
	/* out[i][j][k] = in[j][k][i] */
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 3; k++)
				ck_assert_float_eq(((float *)h.out[0].data)[(i * 2 + j) * 3 + k], v[(j * 3 + k) * 4 + i]);
	kh_free(&h);

	/* Split-18 with num_outputs: ceil(7/3) = 3, so 3, 3, 1 */
	kh_init(&h, "", "Split", 18, 1, 3);
	int64_t d7 = 7;
	kh_in_f32(&h, 0, 1, &d7, v);
	kh_attr_int(&h, "num_outputs", 3);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dims[0], 3);
	ck_assert_int_eq(h.out[1].dims[0], 3);
	ck_assert_int_eq(h.out[2].dims[0], 1);
	ck_assert_float_eq(((float *)h.out[2].data)[0], 6);
	kh_free(&h);
	free(v);
}
END_TEST

/* Permutes that become batches of 2-D transposes (NCHW <-> NHWC, a full reversal of two
 * merged halves) go by tiles and 8 x 8 AVX2 blocks: sizes that are not multiples of either,
 * on this machine and with the ISA capped to scalar, against the index arithmetic of the
 * definition. */
START_TEST(transpose_tiled_permutes)
{
	int64_t dims[4] = {2, 5, 37, 19};
	int64_t perms[6][4] = {{0, 2, 3, 1}, {0, 3, 1, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}, {1, 0, 2, 3}, {0, 1, 3, 2}};
	uint64_t n = 2 * 5 * 37 * 19;
	float *v = iota_f32(n);
	for (int p = 0; p < 12; p++) {
		struct kh_harness h;
		kh_init(&h, "", "Transpose", 13, 1, 1);
		if (p >= 6)
			h.cpu = wh_cpu_capped(WH_ISA_SCALAR); /* the tiles without the AVX2 blocks */
		kh_in_f32(&h, 0, 4, dims, v);
		int64_t *pm = perms[p % 6];
		kh_attr_ints(&h, "perm", pm, 4);
		kh_run_ok(&h);
		int64_t od[4], is[4] = {5 * 37 * 19, 37 * 19, 19, 1};
		for (int d = 0; d < 4; d++)
			od[d] = dims[pm[d]];
		kh_expect_shape(&h.out[0], 4, od);
		const float *y = h.out[0].data;
		uint64_t o = 0;
		for (int64_t a = 0; a < od[0]; a++)
			for (int64_t b = 0; b < od[1]; b++)
				for (int64_t c = 0; c < od[2]; c++)
					for (int64_t e = 0; e < od[3]; e++, o++) {
						int64_t src = a * is[pm[0]] + b * is[pm[1]] + c * is[pm[2]] + e * is[pm[3]];
						ck_assert_msg(y[o] == v[src], "perm %d: out %llu", p, (unsigned long long)o);
					}
		kh_free(&h);
	}
	free(v);
}
END_TEST

START_TEST(unique_orders)
{
	float x[6] = {2, 1, 1, 3, 4, 3};
	int64_t d = 6;
	for (int sorted = 0; sorted <= 1; sorted++) {
		struct kh_harness h;
		kh_init(&h, "", "Unique", 11, 1, 4);
		kh_in_f32(&h, 0, 1, &d, x);
		kh_attr_int(&h, "sorted", sorted);
		kh_run_ok(&h);
		float wy[2][4] = {{2, 1, 3, 4}, {1, 2, 3, 4}};
		int64_t wi[2][4] = {{0, 1, 3, 4}, {1, 0, 3, 4}};
		int64_t winv[2][6] = {{0, 1, 1, 2, 3, 2}, {1, 0, 0, 2, 3, 2}};
		int64_t wc[2][4] = {{1, 2, 2, 1}, {2, 1, 2, 1}};
		kh_expect_f32(&h.out[0], wy[sorted], 4, 0);
		kh_expect_i64(&h.out[1], wi[sorted], 4);
		kh_expect_i64(&h.out[2], winv[sorted], 6);
		kh_expect_i64(&h.out[3], wc[sorted], 4);
		kh_free(&h);
	}
}
END_TEST

START_TEST(strings_survive_their_input)
{
	/* Gather of a string tensor must own its strings: the input is released first */
	struct kh_harness h;
	kh_init(&h, "", "Gather", 13, 2, 1);
	const char *s[3] = {"alpha", "be", "gamma"};
	size_t len[3] = {5, 2, 5};
	int64_t d = 3, idx[4] = {2, 0, -1, 1};
	ck_assert_int_eq(wh_tensor_alloc_strings(&h.in[0], 1, &d, s, len), WH_OK);
	kh_in_vec_i64(&h, 1, 4, idx);
	kh_run_ok(&h);
	wh_tensor_release(&h.in[0]);
	const char *const *o = h.out[0].data;
	ck_assert_str_eq(o[0], "gamma");
	ck_assert_str_eq(o[1], "alpha");
	ck_assert_str_eq(o[2], "gamma");
	ck_assert_str_eq(o[3], "be");
	kh_free(&h);

	/* out-of-range indices are an error, not a read past the end */
	kh_init(&h, "", "Gather", 13, 2, 1);
	float x[3] = {1, 2, 3};
	int64_t bad = 3;
	kh_in_f32(&h, 0, 1, &d, x);
	kh_in_vec_i64(&h, 1, 1, &bad);
	ck_assert_int_eq(kh_run(&h), WH_ERR_INVALID);
	kh_free(&h);
}
END_TEST

START_TEST(scatter_and_gather_nd)
{
	/* ScatterND with reduction add accumulates duplicates */
	struct kh_harness h;
	kh_init(&h, "", "ScatterND", 18, 3, 1);
	float x[4] = {1, 1, 1, 1}, u[3] = {5, 7, 2};
	int64_t d = 4, id[2] = {3, 1}, ind[3] = {1, 1, 3}, ud = 3;
	kh_in_f32(&h, 0, 1, &d, x);
	kh_in_i64(&h, 1, 2, id, ind);
	kh_in_f32(&h, 2, 1, &ud, u);
	kh_attr_str(&h, "reduction", "add");
	kh_run_ok(&h);
	float want[4] = {1, 13, 1, 3};
	kh_expect_f32(&h.out[0], want, 4, 0);
	kh_free(&h);

	/* GatherND with batch_dims 1 */
	kh_init(&h, "", "GatherND", 13, 2, 1);
	float y[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	int64_t yd[3] = {2, 2, 2}, gi[2] = {2, 1}, gv[2] = {1, 0};
	kh_in_f32(&h, 0, 3, yd, y);
	kh_in_i64(&h, 1, 2, gi, gv);
	kh_attr_int(&h, "batch_dims", 1);
	kh_run_ok(&h);
	int64_t od[2] = {2, 2};
	kh_expect_shape(&h.out[0], 2, od);
	float wg[4] = {2, 3, 4, 5};
	kh_expect_f32(&h.out[0], wg, 4, 0);
	kh_free(&h);
}
END_TEST

/* Hostile attribute and input values end in an error status, never a crash. */
START_TEST(hostile_inputs_fail_cleanly)
{
	struct kh_harness h;
	float x[6] = {1, 2, 3, 4, 5, 6};
	int64_t d2[2] = {2, 3};

	/* Slice step 0 */
	kh_init(&h, "", "Slice", 13, 5, 1);
	kh_in_f32(&h, 0, 2, d2, x);
	int64_t z = 0, big = 5;
	kh_in_vec_i64(&h, 1, 1, &z);
	kh_in_vec_i64(&h, 2, 1, &big);
	kh_in_vec_i64(&h, 3, 1, &z);
	kh_in_vec_i64(&h, 4, 1, &z);
	ck_assert_int_eq(kh_run(&h), WH_ERR_INVALID);
	kh_free(&h);

	/* Tile with a negative repeat */
	kh_init(&h, "", "Tile", 13, 2, 1);
	kh_in_f32(&h, 0, 2, d2, x);
	int64_t reps[2] = {1, -2};
	kh_in_vec_i64(&h, 1, 2, reps);
	ck_assert_int_eq(kh_run(&h), WH_ERR_INVALID);
	kh_free(&h);

	/* Expand to a shape too large to allocate */
	kh_init(&h, "", "Expand", 13, 2, 1);
	kh_in_f32(&h, 0, 2, d2, x);
	int64_t huge[3] = {INT64_C(1) << 40, INT64_C(1) << 40, 3};
	kh_in_vec_i64(&h, 1, 3, huge);
	ck_assert_int_ne(kh_run(&h), WH_OK);
	kh_free(&h);

	/* wrap-padding an empty axis has nothing to repeat */
	kh_init(&h, "", "Pad", 19, 2, 1);
	int64_t d0[2] = {2, 0};
	kh_in_f32(&h, 0, 2, d0, x);
	int64_t pads[4] = {0, 1, 0, 1};
	kh_in_vec_i64(&h, 1, 4, pads);
	kh_attr_str(&h, "mode", "wrap");
	ck_assert_int_eq(kh_run(&h), WH_ERR_SHAPE);
	kh_free(&h);

	/* Resize with an absurd scale: an overflow error, not a giant allocation */
	float sc[2] = {1, 1e30f};
	resize_setup(&h, 13, 2, d2, x, sc, NULL);
	ck_assert_int_eq(kh_run(&h), WH_ERR_OVERFLOW);
	kh_free(&h);

	/* Resize with a tiny antialias scale: the filter width is refused */
	float tiny[2] = {1, 1e-6f};
	int64_t wide[2] = {1, 2000000};
	kh_init(&h, "", "Resize", 19, 3, 1);
	ck_assert_int_eq(wh_tensor_alloc(&h.in[0], WH_DT_FLOAT, 2, wide), WH_OK);
	memset(h.in[0].data, 0, wh_tensor_nbytes(&h.in[0]));
	kh_omit(&h, 1);
	int64_t two = 2;
	kh_in_f32(&h, 2, 1, &two, tiny);
	kh_attr_str(&h, "mode", "linear");
	kh_attr_int(&h, "antialias", 1);
	ck_assert_int_eq(kh_run(&h), WH_ERR_UNSUPPORTED);
	kh_free(&h);

	/* OneHot with NaN and huge float indices selects nothing */
	kh_init(&h, "", "OneHot", 11, 3, 1);
	float idx[3] = {NAN, 1e30f, 1};
	int64_t three = 3;
	kh_in_f32(&h, 0, 1, &three, idx);
	float depth = 3;
	kh_in_f32(&h, 1, 0, NULL, &depth);
	float vals[2] = {0, 1};
	kh_in_f32(&h, 2, 1, &two, vals);
	kh_run_ok(&h);
	float want[9] = {0, 0, 0, 0, 0, 0, 0, 1, 0};
	kh_expect_f32(&h.out[0], want, 9, 0);
	kh_free(&h);

	/* GatherElements with indices larger than data off the axis (axis 0 may differ) */
	kh_init(&h, "", "GatherElements", 13, 2, 1);
	kh_in_f32(&h, 0, 2, d2, x);
	int64_t id[2] = {1, 4}, iv[4] = {0, 0, 0, 0};
	kh_in_i64(&h, 1, 2, id, iv);
	ck_assert_int_eq(kh_run(&h), WH_ERR_SHAPE);
	kh_free(&h);

	/* empty outputs need no data */
	kh_init(&h, "", "EyeLike", 22, 1, 1);
	int64_t e0[2] = {0, 4};
	kh_in_f32(&h, 0, 2, e0, x);
	kh_run_ok(&h);
	ck_assert_uint_eq(h.out[0].count, 0);
	kh_free(&h);
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
	tcase_add_test(tc, resize2d_linear_rows_cached);
	tcase_add_test(tc, depth_to_space_modes_differ);
	tcase_add_test(tc, pad_modes);
	tcase_add_test(tc, transpose_and_split);
	tcase_add_test(tc, transpose_tiled_permutes);
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
