/* Recurrent layers and control flow: semantic checks that a plausible but wrong
 * implementation fails.
 *
 * RNN/GRU/LSTM are compared with values ONNX Runtime 1.x gives for the same inputs
 * (bidirectional output layout with sequence_lens padding, GRU linear_before_reset 0 vs 1,
 * LSTM peepholes + input_forget + clip, RNN reverse with LeakyRelu alpha), layout 1 against
 * layout 0 on transposed data, several thread counts bit for bit, and bad shapes.
 * The inputs follow kh_pat(): ((7i + 3 seed) mod 11 - 5) / 10, the same in the generator.
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
#include "tests/kernel-harness.h"

/* ---- RNN family against ONNX Runtime ---- */

/* LSTM bidirectional, S=3 B=2 I=2 H=2, sequence_lens {3, 2}, initial h and c. */
static void lstm_bidi_setup(struct kh_harness *h, int layout)
{
	kh_init(h, "", "LSTM", 22, 7, 3);
	kh_attr_str(h, "direction", "bidirectional");
	kh_attr_int(h, "hidden_size", 2);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {2, 8, 2}, dr[3] = {2, 8, 2}, db[2] = {2, 16}, dh[3] = {2, 2, 2};
	kh_in_pat(h, 0, 3, dx, 1, 1.0f);
	kh_in_pat(h, 1, 3, dw, 2, 1.0f);
	kh_in_pat(h, 2, 3, dr, 3, 1.0f);
	kh_in_pat(h, 3, 2, db, 4, 1.0f);
	int32_t sl[2] = {3, 2};
	kh_in_raw(h, 4, WH_DT_INT32, 1, (int64_t[]){2}, sl);
	kh_in_pat(h, 5, 3, dh, 5, 1.0f);
	kh_in_pat(h, 6, 3, dh, 6, 1.0f);
	if (!layout)
		return;
	kh_attr_int(h, "layout", 1);
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
	struct kh_harness h;
	lstm_bidi_setup(&h, 0);
	kh_run_ok(&h);
	/* Y is [S, D, B, H]: the reverse direction's batch entry 1 (length 2) starts at t=1, its
	 * Y_h is its output at t=0, and both directions are zero at t=2 for that entry */
	int64_t dy[4] = {3, 2, 2, 2}, dh[3] = {2, 2, 2};
	kh_expect_shape(&h.out[0], 4, dy);
	kh_expect_shape(&h.out[1], 3, dh);
	kh_expect_shape(&h.out[2], 3, dh);
	kh_expect_f32(&h.out[0], lstm_bidi_y, 24, 2e-6f);
	kh_expect_f32(&h.out[1], lstm_bidi_yh, 8, 2e-6f);
	kh_expect_f32(&h.out[2], lstm_bidi_yc, 8, 2e-6f);
	kh_free(&h);
}
END_TEST

START_TEST(lstm_layout1_is_layout0_transposed)
{
	struct kh_harness h;
	lstm_bidi_setup(&h, 1);
	kh_run_ok(&h);
	int64_t dy[4] = {2, 3, 2, 2}, dh[3] = {2, 2, 2};
	kh_expect_shape(&h.out[0], 4, dy);
	kh_expect_shape(&h.out[1], 3, dh);
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
	kh_expect_f32(&h.out[0], y, 24, 2e-6f);
	kh_expect_f32(&h.out[1], yh, 8, 2e-6f);
	kh_expect_f32(&h.out[2], yc, 8, 2e-6f);
	kh_free(&h);
}
END_TEST

static void gru_case(int lbr, const float *want_y)
{
	struct kh_harness h;
	kh_init(&h, "", "GRU", 22, 4, 2);
	kh_attr_int(&h, "hidden_size", 2);
	kh_attr_int(&h, "linear_before_reset", lbr);
	int64_t dx[3] = {2, 1, 3}, dw[3] = {1, 6, 3}, dr[3] = {1, 6, 2}, db[2] = {1, 12};
	kh_in_pat(&h, 0, 3, dx, 7, 1.0f);
	kh_in_pat(&h, 1, 3, dw, 8, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 9, 1.0f);
	kh_in_pat(&h, 3, 2, db, 10, 1.0f);
	h.wanted[1] = false; /* an omitted Y_h must not be made */
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[1].dtype, WH_DT_UNDEFINED);
	int64_t dy[4] = {2, 1, 1, 2};
	kh_expect_shape(&h.out[0], 4, dy);
	kh_expect_f32(&h.out[0], want_y, 4, 2e-6f);
	kh_free(&h);
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
	struct kh_harness h;
	kh_init(&h, "", "LSTM", 22, 8, 3);
	kh_attr_int(&h, "hidden_size", 3);
	kh_attr_int(&h, "input_forget", 1);
	kh_attr_float(&h, "clip", 0.3f);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 12, 2}, dr[3] = {1, 12, 3}, db[2] = {1, 24}, dc[3] = {1, 2, 3},
		dp[2] = {1, 9};
	kh_in_pat(&h, 0, 3, dx, 11, 3.0f);
	kh_in_pat(&h, 1, 3, dw, 12, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 13, 1.0f);
	kh_in_pat(&h, 3, 2, db, 14, 1.0f);
	kh_in_pat(&h, 6, 3, dc, 15, 1.0f);
	kh_in_pat(&h, 7, 2, dp, 16, 1.0f);
	kh_run_ok(&h);
	static const float y[18] = {-0.186867371f, 0.122528948f, 0.0282689445f, -0.208414987f, 0.0997581184f,
				    0.00386470370f, -0.109138817f, 0.0260269418f, -0.0219648629f, -0.0594555549f,
				    0.00563420495f, 0.0345704071f, -0.148173615f, 0.0652886629f, 0.0421058722f,
				    -0.0709464699f, -0.00906376168f, -0.0427460596f};
	static const float yc[6] = {-0.263903946f, 0.154640138f, 0.0992676467f,
				    -0.149051696f, -0.0165470298f, -0.0877630711f};
	kh_expect_f32(&h.out[0], y, 18, 2e-6f);
	kh_expect_f32(&h.out[1], y + 12, 6, 2e-6f);
	kh_expect_f32(&h.out[2], yc, 6, 2e-6f);
	kh_free(&h);
}
END_TEST

START_TEST(rnn_reverse_leakyrelu_seq_lens)
{
	struct kh_harness h;
	kh_init(&h, "", "RNN", 22, 5, 2);
	kh_attr_int(&h, "hidden_size", 2);
	kh_attr_str(&h, "direction", "reverse");
	kh_attr_strings(&h, "activations", 1, (const char *const[]){"LeakyRelu"});
	float alpha = 0.5f;
	kh_attr_floats(&h, "activation_alpha", &alpha, 1);
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 2, 2}, dr[3] = {1, 2, 2}, db[2] = {1, 4};
	kh_in_pat(&h, 0, 3, dx, 17, 1.0f);
	kh_in_pat(&h, 1, 3, dw, 18, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 19, 1.0f);
	kh_in_pat(&h, 3, 2, db, 20, 1.0f);
	int32_t sl[2] = {1, 3};
	kh_in_raw(&h, 4, WH_DT_INT32, 1, (int64_t[]){2}, sl);
	kh_run_ok(&h);
	static const float y[12] = {0.379999995f, -0.319999993f, 0.383300006f, -0.244400010f, 0.0f, 0.0f,
				    0.185000017f, -0.303000003f, 0.0f, 0.0f, 0.0700000077f, -0.134999990f};
	kh_expect_f32(&h.out[0], y, 12, 2e-6f);
	kh_expect_f32(&h.out[1], y, 4, 2e-6f);
	kh_free(&h);
}
END_TEST

/* A larger bidirectional LSTM with random-looking data: results must not depend on the
 * thread count, and double inputs give the float32 results converted. */
static void big_lstm(struct kh_harness *h, struct wh_threadpool *pool, enum wh_dtype dt)
{
	kh_init(h, "", "LSTM", 14, 8, 3);
	kh_attr_str(h, "direction", "bidirectional");
	int64_t S = 7, B = 5, I = 9, H = 6;
	int64_t dx[3] = {S, B, I}, dw[3] = {2, 4 * H, I}, dr[3] = {2, 4 * H, H}, db[2] = {2, 8 * H},
		dh[3] = {2, B, H}, dp[2] = {2, 3 * H};
	kh_in_pat(h, 0, 3, dx, 21, 2.0f);
	kh_in_pat(h, 1, 3, dw, 22, 0.5f);
	kh_in_pat(h, 2, 3, dr, 23, 0.5f);
	kh_in_pat(h, 3, 2, db, 24, 1.0f);
	int32_t sl[5] = {7, 1, 0, 6, 7};
	kh_in_raw(h, 4, WH_DT_INT32, 1, (int64_t[]){5}, sl);
	kh_in_pat(h, 5, 3, dh, 25, 1.0f);
	kh_in_pat(h, 6, 3, dh, 26, 1.0f);
	kh_in_pat(h, 7, 2, dp, 27, 1.0f);
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
	kh_run_ok(h);
}

START_TEST(rnn_threads_and_dtypes)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	struct kh_harness a, b, c;
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
	kh_free(&a);
	kh_free(&b);
	kh_free(&c);
	wh_threadpool_destroy(pool);
}
END_TEST

/* ---- the fast path (AVX2, AVX-512) against the scalar reference ---- */

struct rnn_cfg {
	const char *op;
	const char *dir;
	int layout;
	int64_t S, B, I, H;
	int lbr, input_forget, peep;
	float clip;             /* 0: none */
	const char *acts[6];    /* NULL-terminated, or {NULL}: the defaults */
	bool seq_lens, init;
};

/* A layer of cfg with the CPU capped at isa and the given pool; outputs stay in h. */
static void rnn_cfg_run(struct kh_harness *h, const struct rnn_cfg *c, enum wh_isa isa, struct wh_threadpool *pool)
{
	int G = !strcmp(c->op, "RNN") ? 1 : !strcmp(c->op, "GRU") ? 3 : 4;
	bool lstm = G == 4;
	int64_t D = !strcmp(c->dir, "bidirectional") ? 2 : 1;
	kh_init(h, "", c->op, 14, lstm ? 8 : 6, lstm ? 3 : 2);
	kh_attr_str(h, "direction", c->dir);
	kh_attr_int(h, "hidden_size", c->H);
	if (c->layout)
		kh_attr_int(h, "layout", 1);
	if (c->lbr)
		kh_attr_int(h, "linear_before_reset", 1);
	if (c->input_forget)
		kh_attr_int(h, "input_forget", 1);
	if (c->clip > 0.0f)
		kh_attr_float(h, "clip", c->clip);
	size_t n_acts = 0;
	while (c->acts[n_acts])
		n_acts++;
	if (n_acts)
		kh_attr_strings(h, "activations", n_acts, c->acts);
	int64_t dx[3] = {c->S, c->B, c->I}, dw[3] = {D, G * c->H, c->I}, dr[3] = {D, G * c->H, c->H},
		db[2] = {D, 2 * G * c->H}, dh[3] = {D, c->B, c->H}, dp[2] = {D, 3 * c->H};
	if (c->layout) {
		dx[0] = c->B;
		dx[1] = c->S;
		dh[0] = c->B;
		dh[1] = D;
	}
	kh_in_pat(h, 0, 3, dx, 31, 2.0f);
	kh_in_pat(h, 1, 3, dw, 32, 0.6f);
	kh_in_pat(h, 2, 3, dr, 33, 0.6f);
	kh_in_pat(h, 3, 2, db, 34, 1.0f);
	if (c->seq_lens) {
		int32_t sl[8];
		for (int64_t b = 0; b < c->B; b++)
			sl[b] = (int32_t)((c->S - 2 * b) > 0 ? c->S - 2 * b : 0);
		kh_in_raw(h, 4, WH_DT_INT32, 1, (int64_t[]){c->B}, sl);
	} else {
		kh_omit(h, 4);
	}
	if (c->init) {
		kh_in_pat(h, 5, 3, dh, 35, 1.0f);
		if (lstm)
			kh_in_pat(h, 6, 3, dh, 36, 1.0f);
	} else {
		kh_omit(h, 5);
		if (lstm)
			kh_omit(h, 6);
	}
	if (lstm) {
		if (c->peep)
			kh_in_pat(h, 7, 2, dp, 37, 1.0f);
		else
			kh_omit(h, 7);
	}
	h->cpu = wh_cpu_capped(isa);
	h->ctx.pool = pool;
	kh_run_ok(h);
}

static const struct rnn_cfg fast_cfgs[] = {
	{"GRU", "forward", 0, 98, 1, 40, 64, 1, 0, 0, 0.0f, {NULL}, false, true}, /* kws_gru's layer */
	{"GRU", "bidirectional", 0, 9, 3, 7, 5, 0, 0, 0, 0.0f, {NULL}, true, true},
	{"GRU", "reverse", 1, 6, 2, 4, 17, 1, 0, 0, 0.4f, {NULL}, false, false},
	{"GRU", "forward", 0, 5, 2, 3, 6, 0, 0, 0, 0.0f, {"HardSigmoid", "Relu", NULL}, true, true},
	{"LSTM", "bidirectional", 1, 7, 5, 9, 6, 0, 0, 1, 0.0f, {NULL}, true, true},
	{"LSTM", "forward", 0, 8, 2, 5, 19, 0, 1, 1, 0.3f, {NULL}, false, true},
	{"LSTM", "reverse", 0, 4, 3, 6, 4, 0, 0, 0, 0.0f, {"Sigmoid", "Softsign", "Elu", NULL}, true, false},
	{"RNN", "bidirectional", 0, 6, 4, 5, 33, 0, 0, 0, 0.0f, {"Tanh", "LeakyRelu", NULL}, true, true},
	{"RNN", "forward", 1, 5, 2, 3, 3, 0, 0, 0, 0.5f, {NULL}, false, false},
};

START_TEST(rnn_fast_path_matches_reference)
{
	const struct rnn_cfg *c = &fast_cfgs[_i];
	struct kh_harness ref;
	rnn_cfg_run(&ref, c, WH_ISA_SCALAR, NULL);
	for (int isa = WH_ISA_AVX2; isa <= (int)wh_cpu()->detected; isa++) {
		struct kh_harness f;
		rnn_cfg_run(&f, c, (enum wh_isa)isa, NULL);
		uint32_t n_out = ref.ctx.n_outputs;
		bool differs = false;
		for (uint32_t k = 0; k < n_out; k++) {
			ck_assert(wh_tensor_same_shape(&ref.out[k], &f.out[k]));
			const float *r = ref.out[k].data, *v = f.out[k].data;
			bool nonzero = false;
			for (uint64_t i = 0; i < ref.out[k].count; i++) {
				/* rounding only: summation order and ~1 ulp activations, compounded over
				 * the steps of a bounded recurrence */
				ck_assert_msg(fabsf(r[i] - v[i]) <= 2e-5f + 1e-5f * fabsf(r[i]),
					      "case %d isa %d output %u [%llu]: fast %.9g, reference %.9g", _i, isa, k,
					      (unsigned long long)i, (double)v[i], (double)r[i]);
				nonzero |= r[i] != 0.0f;
				differs |= r[i] != v[i];
			}
			ck_assert(nonzero);
		}
		/* the fast path ran (its sums and activations round differently somewhere) */
		if (c->S * c->B * c->H > 200)
			ck_assert_msg(differs, "case %d isa %d: bit-identical to the reference", _i, isa);
		kh_free(&f);
	}
	kh_free(&ref);
}
END_TEST

/* The fast path with the input GEMM large enough to go to the pool: bit for bit the same
 * for 1, 2 and 3 threads. */
START_TEST(rnn_fast_path_threads)
{
	static const struct rnn_cfg cfgs[] = {
		{"LSTM", "bidirectional", 0, 24, 6, 32, 32, 0, 0, 1, 0.0f, {NULL}, true, true},
		{"GRU", "bidirectional", 1, 24, 6, 32, 48, 1, 0, 0, 0.0f, {NULL}, true, true},
	};
	struct wh_threadpool *pools[2];
	ck_assert_int_eq(wh_threadpool_create(2, &pools[0]), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &pools[1]), WH_OK);
	for (size_t ci = 0; ci < 2; ci++) {
		struct kh_harness one;
		rnn_cfg_run(&one, &cfgs[ci], wh_cpu()->isa, NULL);
		for (int p = 0; p < 2; p++) {
			struct kh_harness m;
			rnn_cfg_run(&m, &cfgs[ci], wh_cpu()->isa, pools[p]);
			for (uint32_t k = 0; k < one.ctx.n_outputs; k++) {
				ck_assert(wh_tensor_same_shape(&one.out[k], &m.out[k]));
				ck_assert_mem_eq(one.out[k].data, m.out[k].data, wh_tensor_nbytes(&one.out[k]));
			}
			kh_free(&m);
		}
		kh_free(&one);
	}
	wh_threadpool_destroy(pools[0]);
	wh_threadpool_destroy(pools[1]);
}
END_TEST

START_TEST(rnn_bad_inputs)
{
	struct kh_harness h;
	int64_t dx[3] = {3, 2, 2}, dw[3] = {1, 2, 2}, dwbad[3] = {1, 3, 2}, dr[3] = {1, 2, 2};
	kh_init(&h, "", "RNN", 14, 3, 2);
	kh_in_pat(&h, 0, 3, dx, 1, 1.0f);
	kh_in_pat(&h, 1, 3, dwbad, 2, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 3, 1.0f);
	ck_assert_int_eq(kh_run(&h), WH_ERR_SHAPE);
	ck_assert_ptr_nonnull(strstr(wh_error_message(), "input W has shape 1x3x2, expected 1x2x2"));
	kh_free(&h);

	kh_init(&h, "", "RNN", 14, 5, 2);
	kh_in_pat(&h, 0, 3, dx, 1, 1.0f);
	kh_in_pat(&h, 1, 3, dw, 2, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 3, 1.0f);
	int32_t sl[2] = {1, 4};
	kh_in_raw(&h, 4, WH_DT_INT32, 1, (int64_t[]){2}, sl);
	ck_assert_int_eq(kh_run(&h), WH_ERR_INVALID);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_UNDEFINED);
	kh_free(&h);

	kh_init(&h, "", "RNN", 14, 3, 2);
	kh_attr_str(&h, "direction", "sideways");
	kh_in_pat(&h, 0, 3, dx, 1, 1.0f);
	kh_in_pat(&h, 1, 3, dw, 2, 1.0f);
	kh_in_pat(&h, 2, 3, dr, 3, 1.0f);
	ck_assert_int_eq(kh_run(&h), WH_ERR_INVALID);
	kh_free(&h);
}
END_TEST

/* ---- control flow through the engine ---- */

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

/* Loop(M, cond, x0) whose body adds kk (an intermediate of the main graph) to x, stops when
 * i >= lim, and scans out y and i. */
static void loop_model(struct kh_model *b, int64_t M, bool cond, bool omit_m)
{
	kh_model_init(b, 13);
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
		kh_graph_input(b, g, "M", WH_DT_INT64, 0, NULL, &tm);
	kh_graph_input(b, g, "cond", WH_DT_BOOL, 0, NULL, &tc);
	kh_graph_input(b, g, "x0", WH_DT_FLOAT, 1, &two, &tx);
	kh_graph_input(b, g, "k", WH_DT_FLOAT, 1, &two, &tk);
	kh_graph_input(b, g, "lim", WH_DT_INT64, 0, NULL, &tl);
	kh_graph_node(g, "Identity", "k", "kk");
	struct wh_node *loop = kh_graph_node(g, "Loop", omit_m ? "- cond x0" : "M cond x0", "xf ys is");
	kh_graph_output(g, "xf", WH_DT_FLOAT, 1, &two);
	kh_graph_output(g, "ys", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "is", WH_DT_UNDEFINED, -1, NULL);

	struct wh_graph *body = kh_subgraph(b, "body");
	kh_graph_input(b, body, "i", WH_DT_INT64, 0, NULL, NULL);
	kh_graph_input(b, body, "c", WH_DT_BOOL, 0, NULL, NULL);
	kh_graph_input(b, body, "x", WH_DT_FLOAT, 1, &two, NULL);
	kh_graph_outer(body, "kk");
	kh_graph_outer(body, "lim");
	kh_graph_node(body, "Add", "x kk", "y");
	kh_graph_node(body, "Less", "i lim", "c_out");
	kh_graph_node(body, "Identity", "y", "y2");
	kh_graph_node(body, "Identity", "i", "i_out");
	kh_graph_output(body, "c_out", WH_DT_BOOL, 0, NULL);
	kh_graph_output(body, "y", WH_DT_FLOAT, 1, &two);
	kh_graph_output(body, "y2", WH_DT_FLOAT, 1, &two);
	kh_graph_output(body, "i_out", WH_DT_INT64, 0, NULL);
	kh_node_graph(b, loop, "body", body);
	wh_tensor_release(&tm);
	wh_tensor_release(&tc);
	wh_tensor_release(&tx);
	wh_tensor_release(&tk);
	wh_tensor_release(&tl);
}

START_TEST(loop_cond_trip_count_and_scan_outputs)
{
	struct kh_model b;
	struct wh_tensor_set res;
	/* M=10 but the body's cond turns false after i=3: 4 iterations */
	loop_model(&b, 10, true, false);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	float xf[2] = {3.0f, 10.0f};
	float ys[8] = {1.5f, 1.0f, 2.0f, 4.0f, 2.5f, 7.0f, 3.0f, 10.0f};
	int64_t is[4] = {0, 1, 2, 3}, dys[2] = {4, 2};
	kh_expect_f32(kh_result(&res, "xf"), xf, 2, 0);
	kh_expect_shape(kh_result(&res, "ys"), 2, dys);
	kh_expect_f32(kh_result(&res, "ys"), ys, 8, 0);
	kh_expect_i64(kh_result(&res, "is"), is, 4);
	wh_tensor_set_release(&res);
	kh_model_free(&b);

	/* M=2 stops first */
	loop_model(&b, 2, true, false);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	int64_t dys2[2] = {2, 2};
	kh_expect_shape(kh_result(&res, "ys"), 2, dys2);
	kh_expect_f32(kh_result(&res, "ys"), ys, 4, 0);
	kh_expect_f32(kh_result(&res, "xf"), ys + 2, 2, 0);
	wh_tensor_set_release(&res);
	kh_model_free(&b);

	/* no M: only the condition ends the loop */
	loop_model(&b, 0, true, true);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	kh_expect_i64(kh_result(&res, "is"), is, 4);
	wh_tensor_set_release(&res);
	kh_model_free(&b);

	/* cond false on entry: no iteration, empty scan outputs of the body's declared shape */
	loop_model(&b, 10, false, false);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	float x0[2] = {1.0f, -2.0f};
	int64_t d0[2] = {0, 2}, d1[1] = {0};
	kh_expect_f32(kh_result(&res, "xf"), x0, 2, 0);
	kh_expect_shape(kh_result(&res, "ys"), 2, d0);
	kh_expect_shape(kh_result(&res, "is"), 1, d1);
	wh_tensor_set_release(&res);
	kh_model_free(&b);
}
END_TEST

/* A loop-carried value may change shape; a scan output may not. */
START_TEST(loop_scan_output_shape_change_is_an_error)
{
	struct kh_model b;
	struct wh_tensor_set res;
	kh_model_init(&b, 13);
	struct wh_graph *g = b.m->graph;
	int64_t one = 1;
	struct wh_tensor tm, tx;
	float x0[1] = {4.0f};
	t_scalar(&tm, WH_DT_INT64, 3);
	t_f32(&tx, 1, &one, x0);
	kh_graph_input(&b, g, "M", WH_DT_INT64, 0, NULL, &tm);
	kh_graph_input(&b, g, "x0", WH_DT_FLOAT, 1, &one, &tx);
	struct wh_node *loop = kh_graph_node(g, "Loop", "M - x0", "xf ys");
	kh_graph_output(g, "xf", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "ys", WH_DT_UNDEFINED, -1, NULL);
	struct wh_graph *body = kh_subgraph(&b, "body");
	kh_graph_input(&b, body, "i", WH_DT_INT64, 0, NULL, NULL);
	kh_graph_input(&b, body, "c", WH_DT_BOOL, 0, NULL, NULL);
	kh_graph_input(&b, body, "x", WH_DT_FLOAT, -1, NULL, NULL);
	struct wh_node *cat = kh_graph_node(body, "Concat", "x x", "x2");
	kh_node_int(&b, cat, "axis", 0);
	kh_graph_node(body, "Identity", "c", "c_out");
	kh_graph_node(body, "Identity", "x2", "y");
	kh_graph_output(body, "c_out", WH_DT_BOOL, 0, NULL);
	kh_graph_output(body, "x2", WH_DT_FLOAT, -1, NULL);
	kh_graph_output(body, "y", WH_DT_FLOAT, -1, NULL);
	kh_node_graph(&b, loop, "body", body);
	ck_assert_int_eq(kh_model_run(&b, 2, &res), WH_ERR_SHAPE);
	ck_assert_msg(strstr(wh_error_message(), "iteration 1 gives float32 4, iteration 0 gave float32 2") != NULL,
		      "%s", wh_error_message());
	wh_tensor_set_release(&res);
	wh_tensor_release(&tm);
	wh_tensor_release(&tx);
	kh_model_free(&b);
}
END_TEST

START_TEST(if_branches_of_different_shapes)
{
	for (int c = 0; c < 2; c++) {
		struct kh_model b;
		struct wh_tensor_set res;
		kh_model_init(&b, 13);
		struct wh_graph *g = b.m->graph;
		int64_t three = 3, two = 2;
		struct wh_tensor tc, ta, tb;
		float a[3] = {1, 2, 3}, bv[2] = {5, 7};
		t_scalar(&tc, WH_DT_BOOL, c);
		t_f32(&ta, 1, &three, a);
		t_f32(&tb, 1, &two, bv);
		kh_graph_input(&b, g, "c", WH_DT_BOOL, 0, NULL, &tc);
		kh_graph_input(&b, g, "a", WH_DT_FLOAT, 1, &three, &ta);
		kh_graph_input(&b, g, "b", WH_DT_FLOAT, 1, &two, &tb);
		kh_graph_node(g, "Identity", "b", "bb");
		struct wh_node *n = kh_graph_node(g, "If", "c", "r");
		kh_graph_output(g, "r", WH_DT_UNDEFINED, -1, NULL);
		struct wh_graph *th = kh_subgraph(&b, "then"), *el = kh_subgraph(&b, "else");
		kh_graph_outer(th, "a");
		kh_graph_node(th, "Identity", "a", "t_out");
		kh_graph_output(th, "t_out", WH_DT_FLOAT, 1, &three);
		kh_graph_outer(el, "bb");
		kh_graph_node(el, "Add", "bb bb", "e_out");
		kh_graph_output(el, "e_out", WH_DT_FLOAT, 1, &two);
		kh_node_graph(&b, n, "then_branch", th);
		kh_node_graph(&b, n, "else_branch", el);
		ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
		float e[2] = {10, 14};
		if (c)
			kh_expect_f32(kh_result(&res, "r"), a, 3, 0);
		else
			kh_expect_f32(kh_result(&res, "r"), e, 2, 0);
		wh_tensor_set_release(&res);
		wh_tensor_release(&tc);
		wh_tensor_release(&ta);
		wh_tensor_release(&tb);
		kh_model_free(&b);
	}
}
END_TEST

/* Body: s_out = s + x; outputs s_out, y1 = s_out, y2 = x. */
static struct wh_graph *scan_body(struct kh_model *b, int32_t srank, const int64_t *sdims)
{
	struct wh_graph *body = kh_subgraph(b, "body");
	kh_graph_input(b, body, "s", WH_DT_FLOAT, srank, sdims, NULL);
	kh_graph_input(b, body, "x", WH_DT_FLOAT, srank, sdims, NULL);
	kh_graph_node(body, "Add", "s x", "s_out");
	kh_graph_node(body, "Identity", "s_out", "y1");
	kh_graph_node(body, "Identity", "x", "y2");
	kh_graph_output(body, "s_out", WH_DT_FLOAT, srank, sdims);
	kh_graph_output(body, "y1", WH_DT_FLOAT, srank, sdims);
	kh_graph_output(body, "y2", WH_DT_FLOAT, srank, sdims);
	return body;
}

START_TEST(scan9_directions_and_axes)
{
	struct kh_model b;
	struct wh_tensor_set res;
	kh_model_init(&b, 11);
	struct wh_graph *g = b.m->graph;
	int64_t two = 2, dx[2] = {3, 2};
	struct wh_tensor ts, tx;
	float s0[2] = {0, 100}, x[6] = {1, 2, 3, 4, 5, 6};
	t_f32(&ts, 1, &two, s0);
	t_f32(&tx, 2, dx, x);
	kh_graph_input(&b, g, "s0", WH_DT_FLOAT, 1, &two, &ts);
	kh_graph_input(&b, g, "X", WH_DT_FLOAT, 2, dx, &tx);
	struct wh_node *n = kh_graph_node(g, "Scan", "s0 X", "sf Y1 Y2");
	kh_graph_output(g, "sf", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "Y1", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "Y2", WH_DT_UNDEFINED, -1, NULL);
	kh_node_graph(&b, n, "body", scan_body(&b, 1, &two));
	kh_node_int(&b, n, "num_scan_inputs", 1);
	int64_t in_dirs[1] = {1}, out_axes[2] = {-1, 0}, out_dirs[2] = {0, 1};
	kh_node_ints(&b, n, "scan_input_directions", in_dirs, 1);
	kh_node_ints(&b, n, "scan_output_axes", out_axes, 2);
	kh_node_ints(&b, n, "scan_output_directions", out_dirs, 2);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	/* rows visited 2, 1, 0; Y1 stacked along the last axis: Y1[:, t] = running sums */
	float sf[2] = {9, 112}, y1[6] = {5, 8, 9, 106, 110, 112};
	int64_t dy1[2] = {2, 3};
	kh_expect_f32(kh_result(&res, "sf"), sf, 2, 0);
	kh_expect_shape(kh_result(&res, "Y1"), 2, dy1);
	kh_expect_f32(kh_result(&res, "Y1"), y1, 6, 0);
	/* reversed input and reversed output give the input back */
	kh_expect_shape(kh_result(&res, "Y2"), 2, dx);
	kh_expect_f32(kh_result(&res, "Y2"), x, 6, 0);
	wh_tensor_set_release(&res);
	wh_tensor_release(&ts);
	wh_tensor_release(&tx);
	kh_model_free(&b);
}
END_TEST

START_TEST(scan8_batch_and_sequence_lens)
{
	struct kh_model b;
	struct wh_tensor_set res;
	kh_model_init(&b, 8);
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
	kh_graph_input(&b, g, "lens", WH_DT_INT32, 1, &two, &tl);
	kh_graph_input(&b, g, "s0", WH_DT_FLOAT, 2, ds, &ts);
	kh_graph_input(&b, g, "X", WH_DT_FLOAT, 3, dx, &tx);
	struct wh_node *n = kh_graph_node(g, "Scan", "lens s0 X", "sf Y1 Y2");
	kh_graph_output(g, "sf", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "Y1", WH_DT_UNDEFINED, -1, NULL);
	kh_graph_output(g, "Y2", WH_DT_UNDEFINED, -1, NULL);
	kh_node_graph(&b, n, "body", scan_body(&b, 1, &two));
	kh_node_int(&b, n, "num_scan_inputs", 1);
	int64_t dirs[1] = {1};
	kh_node_ints(&b, n, "directions", dirs, 1);
	ck_assert_msg(kh_model_run(&b, 2, &res) == WH_OK, "%s", wh_error_message());
	/* batch 0 visits rows 2,1,0 of its 3; batch 1 only its row 0, the rest is padding */
	float sf[4] = {9, 12, 17, 28}, y1[12] = {5, 6, 8, 10, 9, 12, 17, 28, 0, 0, 0, 0},
	      y2[12] = {5, 6, 3, 4, 1, 2, 7, 8, 0, 0, 0, 0};
	int64_t dy[3] = {2, 3, 2};
	kh_expect_f32(kh_result(&res, "sf"), sf, 4, 0);
	kh_expect_shape(kh_result(&res, "Y1"), 3, dy);
	kh_expect_f32(kh_result(&res, "Y1"), y1, 12, 0);
	kh_expect_f32(kh_result(&res, "Y2"), y2, 12, 0);
	wh_tensor_set_release(&res);
	wh_tensor_release(&tl);
	wh_tensor_release(&ts);
	wh_tensor_release(&tx);
	kh_model_free(&b);
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
	tcase_add_loop_test(tc, rnn_fast_path_matches_reference, 0, (int)(sizeof fast_cfgs / sizeof fast_cfgs[0]));
	tcase_add_test(tc, rnn_fast_path_threads);
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
