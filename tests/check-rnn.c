/* Recurrent layers and control flow: semantic checks that a plausible but wrong
 * implementation fails.
 *
 * RNN/GRU/LSTM are compared with values ONNX Runtime 1.x gives for the same inputs
 * (bidirectional output layout with sequence_lens padding, GRU linear_before_reset 0 vs 1,
 * LSTM peepholes + input_forget + clip, RNN reverse with LeakyRelu alpha), layout 1 against
 * layout 0 on transposed data, several thread counts bit for bit, and bad shapes.
 * The inputs follow pat(): ((7i + 3 seed) mod 11 - 5) / 10, the same in the generator.
 * If, Loop and Scan run in small models built here through the engine, with bodies that
 * read values of the enclosing graph. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/threadpool.h"
#include "graph/arena.h"
#include "graph/tensor-file.h"
#include "graph/tensor.h"

/* ---- one kernel call with a hand-built node ---- */

#define MAX_ATTRS 8
#define MAX_IO 8

struct harness {
	struct wh_node node;
	struct wh_attr attrs[MAX_ATTRS];
	struct wh_bytes strs[8];
	struct wh_tensor in[MAX_IO];
	const struct wh_tensor *inp[MAX_IO];
	struct wh_tensor out[MAX_IO];
	bool wanted[MAX_IO];
	struct wh_kernel_ctx ctx;
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
		h->inp[i] = NULL;
		h->wanted[i] = true;
	}
	h->ctx.node = &h->node;
	h->ctx.opset = opset;
	h->ctx.n_inputs = n_in;
	h->ctx.inputs = h->inp;
	h->ctx.n_outputs = n_out;
	h->ctx.outputs = h->out;
	h->ctx.output_wanted = h->wanted;
	h->ctx.cpu = wh_cpu();
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

static void attr_strs1(struct harness *h, const char *name, const char *s)
{
	struct wh_attr *a = h_attr(h, name, WH_ATTR_STRINGS);
	h->strs[0].data = (const uint8_t *)s;
	h->strs[0].len = strlen(s);
	a->strings = h->strs;
	a->n = 1;
}

static void attr_floats(struct harness *h, const char *name, float *v, size_t n)
{
	struct wh_attr *a = h_attr(h, name, WH_ATTR_FLOATS);
	a->floats = v;
	a->n = n;
}

static float pat1(int64_t i, int64_t seed)
{
	return (float)((double)((i * 7 + seed * 3) % 11 - 5) / 10.0);
}

static void in_pat(struct harness *h, int i, int32_t rank, const int64_t *dims, int64_t seed, float scale)
{
	ck_assert_int_eq(wh_tensor_alloc(&h->in[i], WH_DT_FLOAT, rank, dims), WH_OK);
	for (uint64_t k = 0; k < h->in[i].count; k++)
		((float *)h->in[i].data)[k] = scale * pat1((int64_t)k, seed);
	h->inp[i] = &h->in[i];
}

static void in_i32(struct harness *h, int i, int64_t n, const int32_t *v)
{
	ck_assert_int_eq(wh_tensor_alloc(&h->in[i], WH_DT_INT32, 1, &n), WH_OK);
	memcpy(h->in[i].data, v, (size_t)n * sizeof *v);
	h->inp[i] = &h->in[i];
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

static void expect_dims(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
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
		ck_assert_msg(fabsf(((const float *)t->data)[i] - v[i]) <= tol, "element %llu: got %.9g, expected %.9g",
			      (unsigned long long)i, ((const float *)t->data)[i], v[i]);
}

/* ---- RNN family against ONNX Runtime ---- */

/* LSTM bidirectional, S=3 B=2 I=2 H=2, sequence_lens {3, 2}, initial h and c. */
static void lstm_bidi_setup(struct harness *h, int layout)
{
	h_init(h, "LSTM", 22, 7, 3);
	attr_str(h, "direction", "bidirectional");
	attr_int(h, "hidden_size", 2);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {2, 8, 2}, dr[3] = {2, 8, 2}, db[2] = {2, 16}, dh[3] = {2, 2, 2};
	in_pat(h, 0, 3, dx, 1, 1.0f);
	in_pat(h, 1, 3, dw, 2, 1.0f);
	in_pat(h, 2, 3, dr, 3, 1.0f);
	in_pat(h, 3, 2, db, 4, 1.0f);
	int32_t sl[2] = {3, 2};
	in_i32(h, 4, 2, sl);
	in_pat(h, 5, 3, dh, 5, 1.0f);
	in_pat(h, 6, 3, dh, 6, 1.0f);
	if (!layout)
		return;
	attr_int(h, "layout", 1);
	/* X [S,B,I] -> [B,S,I]; initial states [D,B,H] -> [B,D,H] */
	struct wh_tensor x, s;
	wh_tensor_init(&x);
	wh_tensor_init(&s);
	int64_t dxt[3] = {2, 3, 2};
	ck_assert_int_eq(wh_tensor_alloc(&x, WH_DT_FLOAT, 3, dxt), WH_OK);
	for (int t = 0; t < 3; t++)
		for (int b = 0; b < 2; b++)
			for (int i = 0; i < 2; i++)
				((float *)x.data)[(b * 3 + t) * 2 + i] = ((const float *)h->in[0].data)[(t * 2 + b) * 2 + i];
	wh_tensor_release(&h->in[0]);
	h->in[0] = x;
	for (int k = 5; k <= 6; k++) {
		ck_assert_int_eq(wh_tensor_alloc(&s, WH_DT_FLOAT, 3, dh), WH_OK);
		for (int d = 0; d < 2; d++)
			for (int b = 0; b < 2; b++)
				for (int i = 0; i < 2; i++)
					((float *)s.data)[(b * 2 + d) * 2 + i] = ((const float *)h->in[k].data)[(d * 2 + b) * 2 + i];
		wh_tensor_release(&h->in[k]);
		h->in[k] = s;
		wh_tensor_init(&s);
	}
}

static const float lstm_bidi_y[24] = {
	0.138370946f, 0.0000125694041f, 0.136263490f, 0.109523349f, -0.401732802f, 0.158926934f,
	-0.239930943f, 0.115686081f, 0.0486288741f, 0.0640089884f, 0.125328600f, 0.0681375787f,
	-0.279470593f, 0.188020855f, -0.188822955f, 0.0149527239f, 0.000957106589f, 0.131103814f,
	0.0f, 0.0f, -0.166099280f, 0.233208686f, 0.0f, 0.0f};
static const float lstm_bidi_yh[8] = {0.000957106589f, 0.131103814f, 0.125328600f, 0.0681375787f,
				      -0.401732802f, 0.158926934f, -0.239930943f, 0.115686081f};
static const float lstm_bidi_yc[8] = {0.00218221545f, 0.400650799f, 0.245660484f, 0.259917498f,
				      -0.765019476f, 0.557663918f, -0.491737604f, 0.311509162f};

START_TEST(lstm_bidirectional_layout_and_padding)
{
	struct harness h;
	lstm_bidi_setup(&h, 0);
	run_ok(&h);
	/* Y is [S, D, B, H]: the reverse direction's batch entry 1 (length 2) starts at t=1, its
	 * Y_h is its output at t=0, and both directions are zero at t=2 for that entry */
	int64_t dy[4] = {3, 2, 2, 2}, dh[3] = {2, 2, 2};
	expect_dims(&h.out[0], 4, dy);
	expect_dims(&h.out[1], 3, dh);
	expect_dims(&h.out[2], 3, dh);
	expect_f32(&h.out[0], lstm_bidi_y, 24, 2e-6f);
	expect_f32(&h.out[1], lstm_bidi_yh, 8, 2e-6f);
	expect_f32(&h.out[2], lstm_bidi_yc, 8, 2e-6f);
	h_free(&h);
}
END_TEST

START_TEST(lstm_layout1_is_layout0_transposed)
{
	struct harness h;
	lstm_bidi_setup(&h, 1);
	run_ok(&h);
	int64_t dy[4] = {2, 3, 2, 2}, dh[3] = {2, 2, 2};
	expect_dims(&h.out[0], 4, dy);
	expect_dims(&h.out[1], 3, dh);
	float y[24], yh[8], yc[8];
	for (int t = 0; t < 3; t++)
		for (int d = 0; d < 2; d++)
			for (int b = 0; b < 2; b++)
				for (int k = 0; k < 2; k++)
					y[((b * 3 + t) * 2 + d) * 2 + k] = lstm_bidi_y[((t * 2 + d) * 2 + b) * 2 + k];
	for (int d = 0; d < 2; d++)
		for (int b = 0; b < 2; b++)
			for (int k = 0; k < 2; k++) {
				yh[(b * 2 + d) * 2 + k] = lstm_bidi_yh[(d * 2 + b) * 2 + k];
				yc[(b * 2 + d) * 2 + k] = lstm_bidi_yc[(d * 2 + b) * 2 + k];
			}
	expect_f32(&h.out[0], y, 24, 2e-6f);
	expect_f32(&h.out[1], yh, 8, 2e-6f);
	expect_f32(&h.out[2], yc, 8, 2e-6f);
	h_free(&h);
}
END_TEST

static void gru_case(int lbr, const float *want_y)
{
	struct harness h;
	h_init(&h, "GRU", 22, 4, 2);
	attr_int(&h, "hidden_size", 2);
	attr_int(&h, "linear_before_reset", lbr);
	int64_t dx[3] = {2, 1, 3}, dw[3] = {1, 6, 3}, dr[3] = {1, 6, 2}, db[2] = {1, 12};
	in_pat(&h, 0, 3, dx, 7, 1.0f);
	in_pat(&h, 1, 3, dw, 8, 1.0f);
	in_pat(&h, 2, 3, dr, 9, 1.0f);
	in_pat(&h, 3, 2, db, 10, 1.0f);
	h.wanted[1] = false; /* an omitted Y_h must not be made */
	run_ok(&h);
	ck_assert_int_eq(h.out[1].dtype, WH_DT_UNDEFINED);
	int64_t dy[4] = {2, 1, 1, 2};
	expect_dims(&h.out[0], 4, dy);
	expect_f32(&h.out[0], want_y, 4, 2e-6f);
	h_free(&h);
}

START_TEST(gru_linear_before_reset)
{
	static const float y0[4] = {-0.116804428f, 0.503477514f, -0.238966331f, 0.695000291f};
	static const float y1[4] = {-0.0227324832f, 0.475862175f, -0.0769344568f, 0.663534045f};
	/* the two forms differ by far more than the tolerance */
	ck_assert(fabsf(y0[0] - y1[0]) > 0.05f);
	gru_case(0, y0);
	gru_case(1, y1);
}
END_TEST

START_TEST(lstm_peepholes_input_forget_clip)
{
	struct harness h;
	h_init(&h, "LSTM", 22, 8, 3);
	attr_int(&h, "hidden_size", 3);
	attr_int(&h, "input_forget", 1);
	attr_float(&h, "clip", 0.3f);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 12, 2}, dr[3] = {1, 12, 3}, db[2] = {1, 24}, dc[3] = {1, 2, 3},
		dp[2] = {1, 9};
	in_pat(&h, 0, 3, dx, 11, 3.0f);
	in_pat(&h, 1, 3, dw, 12, 1.0f);
	in_pat(&h, 2, 3, dr, 13, 1.0f);
	in_pat(&h, 3, 2, db, 14, 1.0f);
	in_pat(&h, 6, 3, dc, 15, 1.0f);
	in_pat(&h, 7, 2, dp, 16, 1.0f);
	run_ok(&h);
	static const float y[18] = {-0.186867371f, 0.122528948f, 0.0282689445f, -0.208414987f, 0.0997581184f,
				    0.00386470370f, -0.109138817f, 0.0260269418f, -0.0219648629f, -0.0594555549f,
				    0.00563420495f, 0.0345704071f, -0.148173615f, 0.0652886629f, 0.0421058722f,
				    -0.0709464699f, -0.00906376168f, -0.0427460596f};
	static const float yc[6] = {-0.263903946f, 0.154640138f, 0.0992676467f,
				    -0.149051696f, -0.0165470298f, -0.0877630711f};
	expect_f32(&h.out[0], y, 18, 2e-6f);
	expect_f32(&h.out[1], y + 12, 6, 2e-6f);
	expect_f32(&h.out[2], yc, 6, 2e-6f);
	h_free(&h);
}
END_TEST

START_TEST(rnn_reverse_leakyrelu_seq_lens)
{
	struct harness h;
	h_init(&h, "RNN", 22, 5, 2);
	attr_int(&h, "hidden_size", 2);
	attr_str(&h, "direction", "reverse");
	attr_strs1(&h, "activations", "LeakyRelu");
	float alpha = 0.5f;
	attr_floats(&h, "activation_alpha", &alpha, 1);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 2, 2}, dr[3] = {1, 2, 2}, db[2] = {1, 4};
	in_pat(&h, 0, 3, dx, 17, 1.0f);
	in_pat(&h, 1, 3, dw, 18, 1.0f);
	in_pat(&h, 2, 3, dr, 19, 1.0f);
	in_pat(&h, 3, 2, db, 20, 1.0f);
	int32_t sl[2] = {1, 3};
	in_i32(&h, 4, 2, sl);
	run_ok(&h);
	static const float y[12] = {0.379999995f, -0.319999993f, 0.383300006f, -0.244400010f, 0.0f, 0.0f,
				    0.185000017f, -0.303000003f, 0.0f, 0.0f, 0.0700000077f, -0.134999990f};
	expect_f32(&h.out[0], y, 12, 2e-6f);
	expect_f32(&h.out[1], y, 4, 2e-6f);
	h_free(&h);
}
END_TEST

/* A larger bidirectional LSTM with random-looking data: results must not depend on the
 * thread count, and double inputs give the float32 results converted. */
static void big_lstm(struct harness *h, struct wh_threadpool *pool, enum wh_dtype dt)
{
	h_init(h, "LSTM", 14, 8, 3);
	attr_str(h, "direction", "bidirectional");
	int64_t S = 7, B = 5, I = 9, H = 6;
	int64_t dx[3] = {S, B, I}, dw[3] = {2, 4 * H, I}, dr[3] = {2, 4 * H, H}, db[2] = {2, 8 * H},
		dh[3] = {2, B, H}, dp[2] = {2, 3 * H};
	in_pat(h, 0, 3, dx, 21, 2.0f);
	in_pat(h, 1, 3, dw, 22, 0.5f);
	in_pat(h, 2, 3, dr, 23, 0.5f);
	in_pat(h, 3, 2, db, 24, 1.0f);
	int32_t sl[5] = {7, 1, 0, 6, 7};
	in_i32(h, 4, 5, sl);
	in_pat(h, 5, 3, dh, 25, 1.0f);
	in_pat(h, 6, 3, dh, 26, 1.0f);
	in_pat(h, 7, 2, dp, 27, 1.0f);
	if (dt != WH_DT_FLOAT)
		for (int i = 0; i < 8; i++) {
			if (i == 4)
				continue;
			struct wh_tensor t;
			wh_tensor_init(&t);
			ck_assert_int_eq(wh_tensor_alloc(&t, dt, h->in[i].rank, h->in[i].dims), WH_OK);
			for (uint64_t k = 0; k < t.count; k++)
				wh_tensor_set_f64(&t, k, ((const float *)h->in[i].data)[k]);
			wh_tensor_release(&h->in[i]);
			h->in[i] = t;
		}
	h->ctx.pool = pool;
	run_ok(h);
}

START_TEST(rnn_threads_and_dtypes)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	struct harness a, b, c;
	big_lstm(&a, NULL, WH_DT_FLOAT);
	big_lstm(&b, pool, WH_DT_FLOAT);
	big_lstm(&c, NULL, WH_DT_DOUBLE);
	for (int k = 0; k < 3; k++) {
		ck_assert(wh_tensor_same_shape(&a.out[k], &b.out[k]));
		ck_assert_mem_eq(a.out[k].data, b.out[k].data, wh_tensor_nbytes(&a.out[k]));
		ck_assert_int_eq(c.out[k].dtype, WH_DT_DOUBLE);
		ck_assert(wh_tensor_same_shape(&a.out[k], &c.out[k]));
		bool nonzero = false;
		for (uint64_t i = 0; i < a.out[k].count; i++) {
			double x = ((const float *)a.out[k].data)[i];
			ck_assert(fabs(x - ((const double *)c.out[k].data)[i]) < 1e-6);
			nonzero |= x != 0.0;
		}
		ck_assert(nonzero);
	}
	/* batch entry 2 has length 0: no output steps, final state = initial state */
	const float *y = a.out[0].data, *yh = a.out[1].data, *h0 = a.in[5].data;
	for (int t = 0; t < 7; t++)
		for (int d = 0; d < 2; d++)
			for (int k = 0; k < 6; k++)
				ck_assert(y[((t * 2 + d) * 5 + 2) * 6 + k] == 0.0f);
	for (int d = 0; d < 2; d++)
		for (int k = 0; k < 6; k++)
			ck_assert(yh[(d * 5 + 2) * 6 + k] == h0[(d * 5 + 2) * 6 + k]);
	h_free(&a);
	h_free(&b);
	h_free(&c);
	wh_threadpool_destroy(pool);
}
END_TEST

START_TEST(rnn_bad_inputs)
{
	struct harness h;
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 2, 2}, dwbad[3] = {1, 3, 2}, dr[3] = {1, 2, 2};
	h_init(&h, "RNN", 14, 3, 2);
	in_pat(&h, 0, 3, dx, 1, 1.0f);
	in_pat(&h, 1, 3, dwbad, 2, 1.0f);
	in_pat(&h, 2, 3, dr, 3, 1.0f);
	ck_assert_int_eq(h_run(&h), WH_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "input W has shape 1x3x2, expected 1x2x2"));
	h_free(&h);

	h_init(&h, "RNN", 14, 5, 2);
	in_pat(&h, 0, 3, dx, 1, 1.0f);
	in_pat(&h, 1, 3, dw, 2, 1.0f);
	in_pat(&h, 2, 3, dr, 3, 1.0f);
	int32_t sl[2] = {1, 4};
	in_i32(&h, 4, 2, sl);
	ck_assert_int_eq(h_run(&h), WH_ERR_INVALID);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_UNDEFINED);
	h_free(&h);

	h_init(&h, "RNN", 14, 3, 2);
	attr_str(&h, "direction", "sideways");
	in_pat(&h, 0, 3, dx, 1, 1.0f);
	in_pat(&h, 1, 3, dw, 2, 1.0f);
	in_pat(&h, 2, 3, dr, 3, 1.0f);
	ck_assert_int_eq(h_run(&h), WH_ERR_INVALID);
	h_free(&h);
}
END_TEST

/* ---- control flow through the engine ---- */

struct mb {
	struct wh_model *m;
	struct wh_tensor_set in;
};

static void mb_init(struct mb *b, int64_t opset)
{
	ck_assert_int_eq(wh_model_create(&b->m), WH_OK);
	b->m->n_opsets = 1;
	b->m->opsets = wh_arena_calloc(b->m->arena, 1, sizeof *b->m->opsets);
	b->m->opsets[0].domain = "";
	b->m->opsets[0].version = opset;
	wh_tensor_set_init(&b->in);
}

static void mb_free(struct mb *b)
{
	wh_tensor_set_release(&b->in);
	wh_model_destroy(b->m);
}

static uint32_t vid(struct wh_graph *g, const char *name)
{
	uint32_t id;
	ck_assert_int_eq(wh_graph_intern_value(g, name, &id), WH_OK);
	return id;
}

/* A graph input; in the main graph also fed with t. */
static void g_input(struct mb *b, struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank,
		    const int64_t *dims, const struct wh_tensor *t)
{
	uint32_t id = vid(g, name);
	ck_assert_int_eq(wh_graph_set_shape(g, id, dt, rank, dims), WH_OK);
	g->values[id].flags |= WH_VALUE_HAS_INFO;
	ck_assert_int_eq(wh_graph_add_input(g, id), WH_OK);
	if (t)
		ck_assert_int_eq(wh_tensor_set_add(&b->in, name, -1, t), WH_OK);
}

static void g_output(struct wh_graph *g, const char *name, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	uint32_t id = vid(g, name);
	if (dt)
		ck_assert_int_eq(wh_graph_set_shape(g, id, dt, rank, dims), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, id), WH_OK);
}

/* A value of an enclosing graph, read by name in this subgraph. */
static void g_outer(struct wh_graph *g, const char *name)
{
	uint32_t id = vid(g, name); /* may grow g->values */
	g->values[id].flags |= WH_VALUE_OUTER;
}

/* ins/outs: names separated by spaces, "-" for an omitted one. */
static struct wh_node *g_node(struct wh_graph *g, const char *op, const char *ins, const char *outs)
{
	uint32_t iv[8], ov[8], ni = 0, no = 0, nid;
	char buf[256], *save, *tok;
	snprintf(buf, sizeof buf, "%s", ins);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		iv[ni++] = strcmp(tok, "-") ? vid(g, tok) : WH_NONE;
	snprintf(buf, sizeof buf, "%s", outs);
	for (tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save))
		ov[no++] = vid(g, tok);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", op, ni, iv, no, ov, &nid), WH_OK);
	return &g->nodes[nid];
}

static struct wh_attr *n_attr(struct mb *b, struct wh_node *n, const char *name, enum wh_attr_type type)
{
	n->attrs = wh_arena_grow(b->m->arena, n->attrs, n->n_attrs, n->n_attrs + 1, sizeof *n->attrs);
	ck_assert_ptr_nonnull(n->attrs);
	struct wh_attr *a = &n->attrs[n->n_attrs++];
	a->name = name;
	a->type = type;
	return a;
}

static void n_graph(struct mb *b, struct wh_node *n, const char *name, struct wh_graph *sub)
{
	n_attr(b, n, name, WH_ATTR_GRAPH)->g = sub;
}

static void n_ints(struct mb *b, struct wh_node *n, const char *name, const int64_t *v, size_t cnt)
{
	struct wh_attr *a = n_attr(b, n, name, WH_ATTR_INTS);
	a->ints = wh_arena_memdup(b->m->arena, v, cnt * sizeof *v);
	a->n = cnt;
}

static void n_int(struct mb *b, struct wh_node *n, const char *name, int64_t v)
{
	n_attr(b, n, name, WH_ATTR_INT)->i = v;
}

static struct wh_graph *subgraph(struct mb *b, const char *name)
{
	struct wh_graph *g;
	ck_assert_int_eq(wh_graph_create_in(b->m, b->m->graph, &g), WH_OK);
	g->name = name;
	return g;
}

static void t_f32(struct wh_tensor *t, int32_t rank, const int64_t *dims, const float *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, WH_DT_FLOAT, rank, dims), WH_OK);
	if (t->count)
		memcpy(t->data, v, t->count * sizeof *v);
}

static void t_scalar(struct wh_tensor *t, enum wh_dtype dt, int64_t v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, 0, NULL), WH_OK);
	wh_tensor_set_f64(t, 0, (double)v);
}

/* Runs the model; results by output name into res (caller releases). */
static enum wh_status mb_run(struct mb *b, struct wh_tensor_set *res)
{
	struct wh_engine *e;
	struct wh_engine_options opt = {.threads = 2};
	wh_tensor_set_init(res);
	ck_assert_msg(wh_engine_create(b->m, &opt, &e) == WH_OK, "engine: %s", wh_error_message());
	enum wh_status st = wh_engine_run(e, &b->in, WH_KEEP_OUTPUTS, res);
	wh_engine_destroy(e);
	return st;
}

static const struct wh_tensor *res_get(const struct wh_tensor_set *res, const char *name)
{
	const struct wh_tensor *t = wh_tensor_set_find(res, name);
	ck_assert_msg(t != NULL, "no result '%s'", name);
	return t;
}

static void expect_i64(const struct wh_tensor *t, const int64_t *v, uint64_t n)
{
	ck_assert_int_eq(t->dtype, WH_DT_INT64);
	ck_assert_uint_eq(t->count, n);
	for (uint64_t i = 0; i < n; i++)
		ck_assert_int_eq(((const int64_t *)t->data)[i], v[i]);
}

/* Loop(M, cond, x0) whose body adds kk (an intermediate of the main graph) to x, stops when
 * i >= lim, and scans out y and i. */
static void loop_model(struct mb *b, int64_t M, bool cond, bool omit_m)
{
	mb_init(b, 13);
	struct wh_graph *g = b->m->graph;
	int64_t two = 2;
	struct wh_tensor tm, tc, tx, tk, tl;
	float x0[2] = {1.0f, -2.0f}, k[2] = {0.5f, 3.0f};
	t_scalar(&tm, WH_DT_INT64, M);
	t_scalar(&tc, WH_DT_BOOL, cond);
	t_f32(&tx, 1, &two, x0);
	t_f32(&tk, 1, &two, k);
	t_scalar(&tl, WH_DT_INT64, 3);
	if (!omit_m)
		g_input(b, g, "M", WH_DT_INT64, 0, NULL, &tm);
	g_input(b, g, "cond", WH_DT_BOOL, 0, NULL, &tc);
	g_input(b, g, "x0", WH_DT_FLOAT, 1, &two, &tx);
	g_input(b, g, "k", WH_DT_FLOAT, 1, &two, &tk);
	g_input(b, g, "lim", WH_DT_INT64, 0, NULL, &tl);
	g_node(g, "Identity", "k", "kk");
	struct wh_node *loop = g_node(g, "Loop", omit_m ? "- cond x0" : "M cond x0", "xf ys is");
	g_output(g, "xf", WH_DT_FLOAT, 1, &two);
	g_output(g, "ys", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "is", WH_DT_UNDEFINED, -1, NULL);

	struct wh_graph *body = subgraph(b, "body");
	g_input(b, body, "i", WH_DT_INT64, 0, NULL, NULL);
	g_input(b, body, "c", WH_DT_BOOL, 0, NULL, NULL);
	g_input(b, body, "x", WH_DT_FLOAT, 1, &two, NULL);
	g_outer(body, "kk");
	g_outer(body, "lim");
	g_node(body, "Add", "x kk", "y");
	g_node(body, "Less", "i lim", "c_out");
	g_node(body, "Identity", "y", "y2");
	g_node(body, "Identity", "i", "i_out");
	g_output(body, "c_out", WH_DT_BOOL, 0, NULL);
	g_output(body, "y", WH_DT_FLOAT, 1, &two);
	g_output(body, "y2", WH_DT_FLOAT, 1, &two);
	g_output(body, "i_out", WH_DT_INT64, 0, NULL);
	n_graph(b, loop, "body", body);
	wh_tensor_release(&tm);
	wh_tensor_release(&tc);
	wh_tensor_release(&tx);
	wh_tensor_release(&tk);
	wh_tensor_release(&tl);
}

START_TEST(loop_cond_trip_count_and_scan_outputs)
{
	struct mb b;
	struct wh_tensor_set res;
	/* M=10 but the body's cond turns false after i=3: 4 iterations */
	loop_model(&b, 10, true, false);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	float xf[2] = {3.0f, 10.0f};
	float ys[8] = {1.5f, 1.0f, 2.0f, 4.0f, 2.5f, 7.0f, 3.0f, 10.0f};
	int64_t is[4] = {0, 1, 2, 3}, dys[2] = {4, 2};
	expect_f32(res_get(&res, "xf"), xf, 2, 0);
	expect_dims(res_get(&res, "ys"), 2, dys);
	expect_f32(res_get(&res, "ys"), ys, 8, 0);
	expect_i64(res_get(&res, "is"), is, 4);
	wh_tensor_set_release(&res);
	mb_free(&b);

	/* M=2 stops first */
	loop_model(&b, 2, true, false);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	int64_t dys2[2] = {2, 2};
	expect_dims(res_get(&res, "ys"), 2, dys2);
	expect_f32(res_get(&res, "ys"), ys, 4, 0);
	expect_f32(res_get(&res, "xf"), ys + 2, 2, 0);
	wh_tensor_set_release(&res);
	mb_free(&b);

	/* no M: only the condition ends the loop */
	loop_model(&b, 0, true, true);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	expect_i64(res_get(&res, "is"), is, 4);
	wh_tensor_set_release(&res);
	mb_free(&b);

	/* cond false on entry: no iteration, empty scan outputs of the body's declared shape */
	loop_model(&b, 10, false, false);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	float x0[2] = {1.0f, -2.0f};
	int64_t d0[2] = {0, 2}, d1[1] = {0};
	expect_f32(res_get(&res, "xf"), x0, 2, 0);
	expect_dims(res_get(&res, "ys"), 2, d0);
	expect_dims(res_get(&res, "is"), 1, d1);
	wh_tensor_set_release(&res);
	mb_free(&b);
}
END_TEST

/* A loop-carried value may change shape; a scan output may not. */
START_TEST(loop_scan_output_shape_change_is_an_error)
{
	struct mb b;
	struct wh_tensor_set res;
	mb_init(&b, 13);
	struct wh_graph *g = b.m->graph;
	int64_t one = 1;
	struct wh_tensor tm, tx;
	float x0[1] = {4.0f};
	t_scalar(&tm, WH_DT_INT64, 3);
	t_f32(&tx, 1, &one, x0);
	g_input(&b, g, "M", WH_DT_INT64, 0, NULL, &tm);
	g_input(&b, g, "x0", WH_DT_FLOAT, 1, &one, &tx);
	struct wh_node *loop = g_node(g, "Loop", "M - x0", "xf ys");
	g_output(g, "xf", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "ys", WH_DT_UNDEFINED, -1, NULL);
	struct wh_graph *body = subgraph(&b, "body");
	g_input(&b, body, "i", WH_DT_INT64, 0, NULL, NULL);
	g_input(&b, body, "c", WH_DT_BOOL, 0, NULL, NULL);
	g_input(&b, body, "x", WH_DT_FLOAT, -1, NULL, NULL);
	struct wh_node *cat = g_node(body, "Concat", "x x", "x2");
	n_int(&b, cat, "axis", 0);
	g_node(body, "Identity", "c", "c_out");
	g_node(body, "Identity", "x2", "y");
	g_output(body, "c_out", WH_DT_BOOL, 0, NULL);
	g_output(body, "x2", WH_DT_FLOAT, -1, NULL);
	g_output(body, "y", WH_DT_FLOAT, -1, NULL);
	n_graph(&b, loop, "body", body);
	ck_assert_int_eq(mb_run(&b, &res), WH_ERR_SHAPE);
	ck_assert_msg(strstr(wh_error_message(), "iteration 1 gives float32 4, iteration 0 gave float32 2") != NULL,
		      "%s", wh_error_message());
	wh_tensor_set_release(&res);
	wh_tensor_release(&tm);
	wh_tensor_release(&tx);
	mb_free(&b);
}
END_TEST

START_TEST(if_branches_of_different_shapes)
{
	for (int c = 0; c < 2; c++) {
		struct mb b;
		struct wh_tensor_set res;
		mb_init(&b, 13);
		struct wh_graph *g = b.m->graph;
		int64_t three = 3, two = 2;
		struct wh_tensor tc, ta, tb;
		float a[3] = {1, 2, 3}, bv[2] = {5, 7};
		t_scalar(&tc, WH_DT_BOOL, c);
		t_f32(&ta, 1, &three, a);
		t_f32(&tb, 1, &two, bv);
		g_input(&b, g, "c", WH_DT_BOOL, 0, NULL, &tc);
		g_input(&b, g, "a", WH_DT_FLOAT, 1, &three, &ta);
		g_input(&b, g, "b", WH_DT_FLOAT, 1, &two, &tb);
		g_node(g, "Identity", "b", "bb");
		struct wh_node *n = g_node(g, "If", "c", "r");
		g_output(g, "r", WH_DT_UNDEFINED, -1, NULL);
		struct wh_graph *th = subgraph(&b, "then"), *el = subgraph(&b, "else");
		g_outer(th, "a");
		g_node(th, "Identity", "a", "t_out");
		g_output(th, "t_out", WH_DT_FLOAT, 1, &three);
		g_outer(el, "bb");
		g_node(el, "Add", "bb bb", "e_out");
		g_output(el, "e_out", WH_DT_FLOAT, 1, &two);
		n_graph(&b, n, "then_branch", th);
		n_graph(&b, n, "else_branch", el);
		ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
		float e[2] = {10, 14};
		if (c)
			expect_f32(res_get(&res, "r"), a, 3, 0);
		else
			expect_f32(res_get(&res, "r"), e, 2, 0);
		wh_tensor_set_release(&res);
		wh_tensor_release(&tc);
		wh_tensor_release(&ta);
		wh_tensor_release(&tb);
		mb_free(&b);
	}
}
END_TEST

/* Body: s_out = s + x; outputs s_out, y1 = s_out, y2 = x. */
static struct wh_graph *scan_body(struct mb *b, int32_t srank, const int64_t *sdims)
{
	struct wh_graph *body = subgraph(b, "body");
	g_input(b, body, "s", WH_DT_FLOAT, srank, sdims, NULL);
	g_input(b, body, "x", WH_DT_FLOAT, srank, sdims, NULL);
	g_node(body, "Add", "s x", "s_out");
	g_node(body, "Identity", "s_out", "y1");
	g_node(body, "Identity", "x", "y2");
	g_output(body, "s_out", WH_DT_FLOAT, srank, sdims);
	g_output(body, "y1", WH_DT_FLOAT, srank, sdims);
	g_output(body, "y2", WH_DT_FLOAT, srank, sdims);
	return body;
}

START_TEST(scan9_directions_and_axes)
{
	struct mb b;
	struct wh_tensor_set res;
	mb_init(&b, 11);
	struct wh_graph *g = b.m->graph;
	int64_t two = 2, dx[2] = {3, 2};
	struct wh_tensor ts, tx;
	float s0[2] = {0, 100}, x[6] = {1, 2, 3, 4, 5, 6};
	t_f32(&ts, 1, &two, s0);
	t_f32(&tx, 2, dx, x);
	g_input(&b, g, "s0", WH_DT_FLOAT, 1, &two, &ts);
	g_input(&b, g, "X", WH_DT_FLOAT, 2, dx, &tx);
	struct wh_node *n = g_node(g, "Scan", "s0 X", "sf Y1 Y2");
	g_output(g, "sf", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "Y1", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "Y2", WH_DT_UNDEFINED, -1, NULL);
	n_graph(&b, n, "body", scan_body(&b, 1, &two));
	n_int(&b, n, "num_scan_inputs", 1);
	int64_t in_dirs[1] = {1}, out_axes[2] = {-1, 0}, out_dirs[2] = {0, 1};
	n_ints(&b, n, "scan_input_directions", in_dirs, 1);
	n_ints(&b, n, "scan_output_axes", out_axes, 2);
	n_ints(&b, n, "scan_output_directions", out_dirs, 2);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	/* rows visited 2, 1, 0; Y1 stacked along the last axis: Y1[:, t] = running sums */
	float sf[2] = {9, 112}, y1[6] = {5, 8, 9, 106, 110, 112};
	int64_t dy1[2] = {2, 3};
	expect_f32(res_get(&res, "sf"), sf, 2, 0);
	expect_dims(res_get(&res, "Y1"), 2, dy1);
	expect_f32(res_get(&res, "Y1"), y1, 6, 0);
	/* reversed input and reversed output give the input back */
	expect_dims(res_get(&res, "Y2"), 2, dx);
	expect_f32(res_get(&res, "Y2"), x, 6, 0);
	wh_tensor_set_release(&res);
	wh_tensor_release(&ts);
	wh_tensor_release(&tx);
	mb_free(&b);
}
END_TEST

START_TEST(scan8_batch_and_sequence_lens)
{
	struct mb b;
	struct wh_tensor_set res;
	mb_init(&b, 8);
	struct wh_graph *g = b.m->graph;
	int64_t two = 2, ds[2] = {2, 2}, dx[3] = {2, 3, 2};
	struct wh_tensor tl, ts, tx;
	float s0[4] = {0, 0, 10, 20}, x[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
	int64_t lens[2] = {3, 1};
	wh_tensor_init(&tl);
	ck_assert_int_eq(wh_tensor_alloc(&tl, WH_DT_INT32, 1, &two), WH_OK);
	((int32_t *)tl.data)[0] = (int32_t)lens[0];
	((int32_t *)tl.data)[1] = (int32_t)lens[1];
	t_f32(&ts, 2, ds, s0);
	t_f32(&tx, 3, dx, x);
	g_input(&b, g, "lens", WH_DT_INT32, 1, &two, &tl);
	g_input(&b, g, "s0", WH_DT_FLOAT, 2, ds, &ts);
	g_input(&b, g, "X", WH_DT_FLOAT, 3, dx, &tx);
	struct wh_node *n = g_node(g, "Scan", "lens s0 X", "sf Y1 Y2");
	g_output(g, "sf", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "Y1", WH_DT_UNDEFINED, -1, NULL);
	g_output(g, "Y2", WH_DT_UNDEFINED, -1, NULL);
	n_graph(&b, n, "body", scan_body(&b, 1, &two));
	n_int(&b, n, "num_scan_inputs", 1);
	int64_t dirs[1] = {1};
	n_ints(&b, n, "directions", dirs, 1);
	ck_assert_msg(mb_run(&b, &res) == WH_OK, "%s", wh_error_message());
	/* batch 0 visits rows 2,1,0 of its 3; batch 1 only its row 0, the rest is padding */
	float sf[4] = {9, 12, 17, 28}, y1[12] = {5, 6, 8, 10, 9, 12, 17, 28, 0, 0, 0, 0},
	      y2[12] = {5, 6, 3, 4, 1, 2, 7, 8, 0, 0, 0, 0};
	int64_t dy[3] = {2, 3, 2};
	expect_f32(res_get(&res, "sf"), sf, 4, 0);
	expect_dims(res_get(&res, "Y1"), 3, dy);
	expect_f32(res_get(&res, "Y1"), y1, 12, 0);
	expect_f32(res_get(&res, "Y2"), y2, 12, 0);
	wh_tensor_set_release(&res);
	wh_tensor_release(&tl);
	wh_tensor_release(&ts);
	wh_tensor_release(&tx);
	mb_free(&b);
}
END_TEST

static Suite *rnn_suite(void)
{
	Suite *s = suite_create("rnn");
	TCase *tc = tcase_create("rnn");
	tcase_add_test(tc, lstm_bidirectional_layout_and_padding);
	tcase_add_test(tc, lstm_layout1_is_layout0_transposed);
	tcase_add_test(tc, gru_linear_before_reset);
	tcase_add_test(tc, lstm_peepholes_input_forget_clip);
	tcase_add_test(tc, rnn_reverse_leakyrelu_seq_lens);
	tcase_add_test(tc, rnn_threads_and_dtypes);
	tcase_add_test(tc, rnn_bad_inputs);
	suite_add_tcase(s, tc);
	TCase *cf = tcase_create("control");
	tcase_add_test(cf, loop_cond_trip_count_and_scan_outputs);
	tcase_add_test(cf, loop_scan_output_shape_change_is_an_error);
	tcase_add_test(cf, if_branches_of_different_shapes);
	tcase_add_test(cf, scan9_directions_and_axes);
	tcase_add_test(cf, scan8_batch_and_sequence_lens);
	suite_add_tcase(s, cf);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rnn_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
