/* Recurrent layers: RNN, GRU, LSTM (every opset, layout 0 and 1, all directions).
 *
 * Each (direction, batch entry) pair is an independent chain over time, so the pairs are
 * the parallel units: a unit reads its own rows of X and the shared weights and writes only
 * its own slices of Y, Y_h and Y_c, which keeps results bit-identical for any thread count.
 *
 * Two paths with the same semantics:
 * - the scalar reference (ctx->cpu->isa scalar): per step, every gate is a dot product over
 *   contiguous weight rows, activations from libm; the tests hold the fast path to it.
 * - the fast path (AVX2 / AVX-512): the input projection X W^T of all timesteps, for all
 *   directions, is one packed GEMM (gemm-internal.h) before the recurrence; per step only
 *   h R^T remains, a single-row product over R^T (transposed once per run) with the GEMM's
 *   M = 1 kernel, and the gates go through the elementwise row kernels (their own exp,
 *   sigmoid and tanh, elementwise-internal.h). The GEMM is bit-identical for any thread
 *   count and the rest is per unit, so the fast path is too; it differs from the
 *   reference by rounding only (summation order, about 1 ulp activations).
 *
 * Non-float32 inputs (float16, bfloat16, double) are converted to float32, computed, and
 * the outputs converted back with round-to-nearest-even. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/ops/elementwise-internal.h"
#include "executor/ops/gemm-internal.h"

enum rnn_kind { KIND_RNN, KIND_GRU, KIND_LSTM };

enum act_fn {
	ACT_RELU,
	ACT_TANH,
	ACT_SIGMOID,
	ACT_AFFINE,
	ACT_LEAKYRELU,
	ACT_THRESHOLDEDRELU,
	ACT_SCALEDTANH,
	ACT_HARDSIGMOID,
	ACT_ELU,
	ACT_SOFTSIGN,
	ACT_SOFTPLUS,
};

struct act {
	enum act_fn fn;
	float alpha, beta;
};

struct act_name {
	const char *name;
	enum act_fn fn;
	bool uses_alpha, uses_beta;
	float alpha, beta; /* defaults, as the ONNX operators of the same name */
};

static const struct act_name act_names[] = {
	{"relu", ACT_RELU, false, false, 0.0f, 0.0f},
	{"tanh", ACT_TANH, false, false, 0.0f, 0.0f},
	{"sigmoid", ACT_SIGMOID, false, false, 0.0f, 0.0f},
	{"affine", ACT_AFFINE, true, true, 1.0f, 0.0f},
	{"leakyrelu", ACT_LEAKYRELU, true, false, 0.01f, 0.0f},
	{"thresholdedrelu", ACT_THRESHOLDEDRELU, true, false, 1.0f, 0.0f},
	{"scaledtanh", ACT_SCALEDTANH, true, true, 1.0f, 1.0f},
	{"hardsigmoid", ACT_HARDSIGMOID, true, true, 0.2f, 0.5f},
	{"elu", ACT_ELU, true, false, 1.0f, 0.0f},
	{"softsign", ACT_SOFTSIGN, false, false, 0.0f, 0.0f},
	{"softplus", ACT_SOFTPLUS, false, false, 0.0f, 0.0f},
};

static float act_apply(const struct act *a, float x)
{
	switch (a->fn) {
	case ACT_RELU: return x > 0.0f ? x : 0.0f;
	case ACT_TANH: return tanhf(x);
	case ACT_SIGMOID: return x >= 0.0f ? 1.0f / (1.0f + expf(-x)) : expf(x) / (1.0f + expf(x));
	case ACT_AFFINE: return a->alpha * x + a->beta;
	case ACT_LEAKYRELU: return x >= 0.0f ? x : a->alpha * x;
	case ACT_THRESHOLDEDRELU: return x > a->alpha ? x : 0.0f;
	case ACT_SCALEDTANH: return a->alpha * tanhf(a->beta * x);
	case ACT_HARDSIGMOID: {
		float v = a->alpha * x + a->beta;
		return v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
	}
	case ACT_ELU: return x >= 0.0f ? x : a->alpha * (expf(x) - 1.0f);
	case ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
	case ACT_SOFTPLUS: return x > 20.0f ? x : log1pf(expf(x));
	}
	return x;
}

struct rnn_args {
	enum rnn_kind kind;
	int64_t S, B, I, H, D, G; /* seq length, batch, input size, hidden, directions, gates */
	int layout;
	bool reverse;        /* the only direction runs backwards ("reverse") */
	const float *x, *w, *r, *bias, *p, *h0, *c0;
	const int64_t *lens; /* B entries, or NULL: all S */
	bool has_clip;
	float clip;
	bool input_forget, linear_before_reset;
	struct act acts[2][3]; /* per direction: f, g, h */
	float *y, *yh, *yc;    /* NULL when not wanted */
	float *scratch;
	size_t scratch_per_unit;
	/* the fast path (NULL xw: the scalar reference) */
	enum wh_isa isa;
	wh_sgemm_m1_fn m1;
	const float *xw;       /* D x (S B) x GH: x W^T per direction, rows in X's order */
	const float *rt;       /* D x H x GH: R^T */
	const float *bx, *br;  /* D x GH: bias added to x W^T, to h R^T (zeros without B) */
	const ptrdiff_t *boff; /* k GH for k < H: rows of R^T */
};

/* The row of X (and of x W^T) that holds step t of batch entry b. */
static size_t x_row(const struct rnn_args *a, int64_t t, int64_t b)
{
	return (size_t)(a->layout ? b * a->S + t : t * a->B + b);
}

static size_t x_off(const struct rnn_args *a, int64_t t, int64_t b)
{
	return x_row(a, t, b) * (size_t)a->I;
}

static size_t state_off(const struct rnn_args *a, int64_t d, int64_t b)
{
	return (size_t)(a->layout ? b * a->D + d : d * a->B + b) * (size_t)a->H;
}

static size_t y_off(const struct rnn_args *a, int64_t t, int64_t d, int64_t b)
{
	return (size_t)(a->layout ? (b * a->S + t) * a->D + d : (t * a->D + d) * a->B + b) * (size_t)a->H;
}

static float dot(const float *u, const float *v, int64_t n)
{
	float s = 0.0f;
	for (int64_t k = 0; k < n; k++)
		s += u[k] * v[k];
	return s;
}

static float clipv(const struct rnn_args *a, float v)
{
	if (!a->has_clip)
		return v;
	return v < -a->clip ? -a->clip : v > a->clip ? a->clip : v;
}

/* Pre-activations x*W^T + h*R^T + Wb + Rb for gate rows [j0, j1). */
static void gate_pre(const struct rnn_args *a, const float *xt, const float *h, const float *W,
		     const float *R, const float *bias, int64_t j0, int64_t j1, float *out)
{
	int64_t GH = a->G * a->H;
	for (int64_t j = j0; j < j1; j++) {
		float v = dot(xt, W + (size_t)j * (size_t)a->I, a->I) + dot(h, R + (size_t)j * (size_t)a->H, a->H);
		if (bias)
			v += bias[j] + bias[GH + j];
		out[j] = v;
	}
}

static void rnn_step(const struct rnn_args *a, const struct act *act, const float *xt, const float *W,
		     const float *R, const float *bias, float *gates, float *h)
{
	gate_pre(a, xt, h, W, R, bias, 0, a->H, gates);
	for (int64_t k = 0; k < a->H; k++)
		h[k] = act_apply(&act[0], clipv(a, gates[k]));
}

/* Gates z, r, h (rows 0, H, 2H). */
static void gru_step(const struct rnn_args *a, const struct act *act, const float *xt, const float *W,
		     const float *R, const float *bias, float *gates, float *h, float *tmp)
{
	int64_t H = a->H, GH = a->G * H, I = a->I;
	gate_pre(a, xt, h, W, R, bias, 0, 2 * H, gates);
	float *z = gates, *rg = gates + H, *hh = gates + 2 * H;
	for (int64_t k = 0; k < 2 * H; k++)
		gates[k] = act_apply(&act[0], clipv(a, gates[k]));
	if (a->linear_before_reset) {
		for (int64_t k = 0; k < H; k++) {
			int64_t j = 2 * H + k;
			float rec = dot(h, R + (size_t)j * (size_t)H, H) + (bias ? bias[GH + j] : 0.0f);
			float v = dot(xt, W + (size_t)j * (size_t)I, I) + (bias ? bias[j] : 0.0f) + rg[k] * rec;
			hh[k] = act_apply(&act[1], clipv(a, v));
		}
	} else {
		for (int64_t k = 0; k < H; k++)
			tmp[k] = rg[k] * h[k];
		for (int64_t k = 0; k < H; k++) {
			int64_t j = 2 * H + k;
			float v = dot(xt, W + (size_t)j * (size_t)I, I) + dot(tmp, R + (size_t)j * (size_t)H, H);
			if (bias)
				v += bias[GH + j] + bias[j];
			hh[k] = act_apply(&act[1], clipv(a, v));
		}
	}
	for (int64_t k = 0; k < H; k++)
		h[k] = (1.0f - z[k]) * hh[k] + z[k] * h[k];
}

/* Gates i, o, f, c (rows 0, H, 2H, 3H); peepholes P i, o, f. */
static void lstm_step(const struct rnn_args *a, const struct act *act, const float *xt, const float *W,
		      const float *R, const float *bias, const float *P, float *gates, float *h, float *c)
{
	int64_t H = a->H;
	gate_pre(a, xt, h, W, R, bias, 0, 4 * H, gates);
	float *gi = gates, *go = gates + H, *gf = gates + 2 * H, *gc = gates + 3 * H;
	for (int64_t k = 0; k < H; k++) {
		float i = act_apply(&act[0], clipv(a, gi[k] + (P ? P[k] * c[k] : 0.0f)));
		float f = a->input_forget ? 1.0f - i
					  : act_apply(&act[0], clipv(a, gf[k] + (P ? P[2 * H + k] * c[k] : 0.0f)));
		float cc = act_apply(&act[1], clipv(a, gc[k]));
		float cn = f * c[k] + i * cc;
		float o = act_apply(&act[0], clipv(a, go[k] + (P ? P[H + k] * cn : 0.0f)));
		c[k] = cn;
		h[k] = o * act_apply(&act[2], cn);
	}
}

/* ---- the fast path ---- */

static void ew_un(enum wh_isa isa, enum wh_ew_un op, float *x, size_t n, float p1, float p2)
{
	if (isa >= WH_ISA_AVX512)
		wh_ew_un_f32_avx512(op, x, x, n, p1, p2);
	else if (isa >= WH_ISA_AVX2)
		wh_ew_un_f32_avx2(op, x, x, n, p1, p2);
	else
		wh_ew_un_f32_scalar(op, x, x, n, p1, p2);
}

/* o[i] = a[i * sa] OP b[i] */
static void ew_bin(enum wh_isa isa, enum wh_ew_bin op, const float *a, size_t sa, const float *b, float *o,
		   size_t n)
{
	if (isa >= WH_ISA_AVX512)
		wh_ew_bin_f32_avx512(op, a, sa, b, 1, o, n);
	else if (isa >= WH_ISA_AVX2)
		wh_ew_bin_f32_avx2(op, a, sa, b, 1, o, n);
	else
		wh_ew_bin_f32_scalar(op, a, sa, b, 1, o, n);
}

/* x = f(clip(x)) in place (f(x) without clip: LSTM's h = o h(c)): sigmoid and tanh (the
 * defaults) as row kernels, the others element by element. */
static void act_rows(const struct rnn_args *a, const struct act *ac, float *x, size_t n, bool clip)
{
	if (clip && a->has_clip) {
		if (a->clip >= 0.0f)
			ew_un(a->isa, WH_EW_CLIP, x, n, -a->clip, a->clip);
		else
			for (size_t k = 0; k < n; k++)
				x[k] = clipv(a, x[k]);
	}
	if (ac->fn == ACT_SIGMOID)
		ew_un(a->isa, WH_EW_SIGMOID, x, n, 0.0f, 0.0f);
	else if (ac->fn == ACT_TANH)
		ew_un(a->isa, WH_EW_TANH, x, n, 0.0f, 0.0f);
	else
		for (size_t k = 0; k < n; k++)
			x[k] = act_apply(ac, x[k]);
}

/* rec[0..n) = v R^T over columns [j0, j0 + n) of R^T, plus br there */
static void rec_rows(const struct rnn_args *a, const float *v, const float *rt, const float *br, size_t j0,
		     size_t n, float *rec)
{
	a->m1(n, (size_t)a->H, v, rt + j0, a->boff, rec, NULL);
	ew_bin(a->isa, WH_EW_ADD, rec, 1, br + j0, rec, n);
}

/* gates[j0..j0+n) = (xw + bx) + rec over those columns */
static void pre_rows(const struct rnn_args *a, const float *xw, const float *bx, const float *rec, size_t j0,
		     size_t n, float *gates)
{
	ew_bin(a->isa, WH_EW_ADD, xw + j0, 1, bx + j0, gates + j0, n);
	ew_bin(a->isa, WH_EW_ADD, gates + j0, 1, rec + j0, gates + j0, n);
}

static void rnn_step_fast(const struct rnn_args *a, const struct act *act, const float *xw, const float *rt,
			  const float *bx, const float *br, float *gates, float *rec, float *h)
{
	size_t H = (size_t)a->H;
	rec_rows(a, h, rt, br, 0, H, rec);
	pre_rows(a, xw, bx, rec, 0, H, gates);
	act_rows(a, &act[0], gates, H, true);
	memcpy(h, gates, H * sizeof *h);
}

/* h = (1 - z) hh + z h, rounded as the reference's expression */
static void gru_blend(const struct rnn_args *a, const float *z, const float *hh, float *h, float *tmp)
{
	static const float one = 1.0f;
	size_t H = (size_t)a->H;
	ew_bin(a->isa, WH_EW_SUB, &one, 0, z, tmp, H);
	ew_bin(a->isa, WH_EW_MUL, tmp, 1, hh, tmp, H);
	ew_bin(a->isa, WH_EW_MUL, z, 1, h, h, H);
	ew_bin(a->isa, WH_EW_ADD, tmp, 1, h, h, H);
}

static void gru_step_fast(const struct rnn_args *a, const struct act *act, const float *xw, const float *rt,
			  const float *bx, const float *br, float *gates, float *rec, float *h, float *tmp)
{
	size_t H = (size_t)a->H;
	float *z = gates, *rg = gates + H, *hh = gates + 2 * H;
	if (a->linear_before_reset) {
		/* hh = g(x Wh + Wbh + r (h Rh + Rbh)) */
		rec_rows(a, h, rt, br, 0, 3 * H, rec);
		pre_rows(a, xw, bx, rec, 0, 2 * H, gates);
		act_rows(a, &act[0], gates, 2 * H, true);
		ew_bin(a->isa, WH_EW_ADD, xw + 2 * H, 1, bx + 2 * H, hh, H);
		ew_bin(a->isa, WH_EW_MUL, rg, 1, rec + 2 * H, tmp, H);
		ew_bin(a->isa, WH_EW_ADD, hh, 1, tmp, hh, H);
	} else {
		/* hh = g(x Wh + (r h) Rh + Wbh + Rbh) */
		rec_rows(a, h, rt, br, 0, 2 * H, rec);
		pre_rows(a, xw, bx, rec, 0, 2 * H, gates);
		act_rows(a, &act[0], gates, 2 * H, true);
		ew_bin(a->isa, WH_EW_MUL, rg, 1, h, tmp, H);
		rec_rows(a, tmp, rt, br, 2 * H, H, rec + 2 * H);
		pre_rows(a, xw, bx, rec, 2 * H, H, gates);
	}
	act_rows(a, &act[1], hh, H, true);
	gru_blend(a, z, hh, h, tmp);
}

static void lstm_step_fast(const struct rnn_args *a, const struct act *act, const float *xw, const float *rt,
			   const float *bx, const float *br, const float *P, float *gates, float *rec, float *h,
			   float *c, float *tmp)
{
	size_t H = (size_t)a->H;
	float *gi = gates, *go = gates + H, *gf = gates + 2 * H, *gc = gates + 3 * H;
	rec_rows(a, h, rt, br, 0, 4 * H, rec);
	pre_rows(a, xw, bx, rec, 0, 4 * H, gates);
	if (P) {
		ew_bin(a->isa, WH_EW_MUL, P, 1, c, tmp, H);
		ew_bin(a->isa, WH_EW_ADD, gi, 1, tmp, gi, H);
	}
	act_rows(a, &act[0], gi, H, true);
	if (a->input_forget) {
		static const float one = 1.0f;
		ew_bin(a->isa, WH_EW_SUB, &one, 0, gi, gf, H);
	} else {
		if (P) {
			ew_bin(a->isa, WH_EW_MUL, P + 2 * H, 1, c, tmp, H);
			ew_bin(a->isa, WH_EW_ADD, gf, 1, tmp, gf, H);
		}
		act_rows(a, &act[0], gf, H, true);
	}
	act_rows(a, &act[1], gc, H, true);
	/* c = f c + i cc */
	ew_bin(a->isa, WH_EW_MUL, gf, 1, c, c, H);
	ew_bin(a->isa, WH_EW_MUL, gi, 1, gc, tmp, H);
	ew_bin(a->isa, WH_EW_ADD, c, 1, tmp, c, H);
	if (P) {
		ew_bin(a->isa, WH_EW_MUL, P + H, 1, c, tmp, H);
		ew_bin(a->isa, WH_EW_ADD, go, 1, tmp, go, H);
	}
	act_rows(a, &act[0], go, H, true);
	memcpy(tmp, c, H * sizeof *tmp);
	act_rows(a, &act[2], tmp, H, false);
	ew_bin(a->isa, WH_EW_MUL, go, 1, tmp, h, H);
}

static void rnn_unit(const struct rnn_args *a, size_t unit)
{
	int64_t d = (int64_t)unit / a->B, b = (int64_t)unit % a->B;
	int64_t H = a->H, GH = a->G * H;
	float *gates = a->scratch + unit * a->scratch_per_unit;
	float *h = gates + GH, *c = h + H, *tmp = c + H, *rec = tmp + H;
	size_t so = state_off(a, d, b);
	for (int64_t k = 0; k < H; k++) {
		h[k] = a->h0 ? a->h0[so + (size_t)k] : 0.0f;
		c[k] = a->c0 ? a->c0[so + (size_t)k] : 0.0f;
	}
	bool rev = a->reverse || d == 1;
	const float *W = a->w + (size_t)d * (size_t)GH * (size_t)a->I;
	const float *R = a->r + (size_t)d * (size_t)GH * (size_t)H;
	const float *bias = a->bias ? a->bias + (size_t)d * 2 * (size_t)GH : NULL;
	const float *P = a->p ? a->p + (size_t)d * 3 * (size_t)H : NULL;
	const struct act *act = a->acts[d];
	const float *xw = NULL, *rt = NULL, *bx = NULL, *br = NULL;
	if (a->xw) {
		xw = a->xw + (size_t)d * (size_t)(a->S * a->B) * (size_t)GH;
		rt = a->rt + (size_t)d * (size_t)H * (size_t)GH;
		bx = a->bx + (size_t)d * (size_t)GH;
		br = a->br + (size_t)d * (size_t)GH;
	}
	int64_t len = a->lens ? a->lens[b] : a->S;
	for (int64_t step = 0; step < len; step++) {
		int64_t t = rev ? len - 1 - step : step;
		if (xw) {
			const float *xwt = xw + x_row(a, t, b) * (size_t)GH;
			switch (a->kind) {
			case KIND_RNN: rnn_step_fast(a, act, xwt, rt, bx, br, gates, rec, h); break;
			case KIND_GRU: gru_step_fast(a, act, xwt, rt, bx, br, gates, rec, h, tmp); break;
			case KIND_LSTM: lstm_step_fast(a, act, xwt, rt, bx, br, P, gates, rec, h, c, tmp); break;
			}
		} else {
			const float *xt = a->x + x_off(a, t, b);
			switch (a->kind) {
			case KIND_RNN: rnn_step(a, act, xt, W, R, bias, gates, h); break;
			case KIND_GRU: gru_step(a, act, xt, W, R, bias, gates, h, tmp); break;
			case KIND_LSTM: lstm_step(a, act, xt, W, R, bias, P, gates, h, c); break;
			}
		}
		if (a->y)
			memcpy(a->y + y_off(a, t, d, b), h, (size_t)H * sizeof *h);
	}
	if (a->y)
		for (int64_t t = len; t < a->S; t++)
			memset(a->y + y_off(a, t, d, b), 0, (size_t)H * sizeof *h);
	if (a->yh)
		memcpy(a->yh + so, h, (size_t)H * sizeof *h);
	if (a->yc)
		memcpy(a->yc + so, c, (size_t)H * sizeof *c);
}

static void rnn_range(void *arg, size_t begin, size_t end)
{
	for (size_t u = begin; u < end; u++)
		rnn_unit(arg, u);
}

/* ---- argument handling ---- */

static bool name_eq(const struct wh_bytes *s, const char *name)
{
	size_t n = strlen(name);
	if (s->len != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = (char)s->data[i];
		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if (ch != name[i])
			return false;
	}
	return true;
}

/* activations / activation_alpha / activation_beta: alphas and betas are consumed in list
 * order by the functions that take them (as ONNX Runtime does); missing ones default to the
 * values of the ONNX operator of the same name. */
static enum wh_status parse_acts(struct wh_kernel_ctx *ctx, int64_t per_dir, int64_t D,
				 struct act (*acts)[3])
{
	static const enum act_fn dflt[3][3] = {
		{ACT_TANH, ACT_TANH, ACT_TANH},          /* RNN */
		{ACT_SIGMOID, ACT_TANH, ACT_TANH},       /* GRU */
		{ACT_SIGMOID, ACT_TANH, ACT_TANH},       /* LSTM */
	};
	for (int64_t d = 0; d < 2; d++)
		for (int64_t k = 0; k < 3; k++)
			acts[d][k] = (struct act){dflt[per_dir - 1][k], 0.0f, 0.0f};
	const struct wh_attr *names = wh_node_attr(ctx->node, "activations");
	if (!names || names->type != WH_ATTR_STRINGS || names->n == 0)
		return WH_OK;
	size_t n = names->n;
	if (n != (size_t)per_dir && n != (size_t)(per_dir * D))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "activations lists %zu functions, expected %lld (one set per direction) (fix the model)",
				      n, (long long)(per_dir * D));
	const float *alphas = NULL, *betas = NULL;
	size_t n_alpha = 0, n_beta = 0, ia = 0, ib = 0;
	const struct wh_attr *aa = wh_node_attr(ctx->node, "activation_alpha");
	const struct wh_attr *ab = wh_node_attr(ctx->node, "activation_beta");
	if (aa && aa->type == WH_ATTR_FLOATS) {
		alphas = aa->floats;
		n_alpha = aa->n;
	}
	if (ab && ab->type == WH_ATTR_FLOATS) {
		betas = ab->floats;
		n_beta = ab->n;
	}
	for (size_t i = 0; i < n; i++) {
		const struct act_name *an = NULL;
		for (size_t k = 0; k < sizeof act_names / sizeof act_names[0]; k++)
			if (name_eq(&names->strings[i], act_names[k].name))
				an = &act_names[k];
		if (!an)
			return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "activation '%.*s' is not supported (use Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign or Softplus)",
					      (int)(names->strings[i].len > 64 ? 64 : names->strings[i].len),
					      (const char *)names->strings[i].data);
		struct act ac = {an->fn, an->alpha, an->beta};
		if (an->uses_alpha && ia < n_alpha)
			ac.alpha = alphas[ia++];
		if (an->uses_beta && ib < n_beta)
			ac.beta = betas[ib++];
		acts[i / (size_t)per_dir][i % (size_t)per_dir] = ac;
	}
	if (n == (size_t)per_dir && D == 2)
		for (int64_t k = 0; k < per_dir; k++)
			acts[1][k] = acts[0][k];
	return WH_OK;
}

/* A float32 view of t: its own data, or a converted copy in *buf (caller frees). */
static enum wh_status as_f32(struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what,
			     float **buf, const float **out)
{
	*out = NULL;
	if (!t)
		return WH_OK;
	if (t->dtype == WH_DT_FLOAT) {
		*out = t->data;
		return WH_OK;
	}
	if (!wh_dtype_is_float(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input %s has element type %s, expected a floating type (convert it)",
				      what, wh_dtype_name(t->dtype));
	*buf = malloc((t->count ? t->count : 1) * sizeof **buf);
	if (!*buf)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory converting input %s (free some memory)", what);
	for (uint64_t i = 0; i < t->count; i++)
		(*buf)[i] = (float)wh_tensor_get_f64(t, i);
	*out = *buf;
	return WH_OK;
}

static bool dims_are(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	if (t->rank != rank)
		return false;
	for (int32_t d = 0; d < rank; d++)
		if (t->dims[d] != dims[d])
			return false;
	return true;
}

static enum wh_status expect_shape(struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what,
				   int32_t rank, const int64_t *dims)
{
	if (!t || dims_are(t, rank, dims))
		return WH_OK;
	char got[64], want[64];
	return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %s has shape %s, expected %s (fix the model or its inputs)", what,
			      wh_shape_str(t->dims, t->rank, got, sizeof got), wh_shape_str(dims, rank, want, sizeof want));
}

/* The fast path's operands: R^T, the biases, and x W^T for every row of X and direction as
 * one GEMM on the pool. *buf_out gets the memory (caller frees). Leaves a->xw NULL (the
 * scalar reference runs) when the products would be too large to hold. */
static enum wh_status fast_setup(struct wh_kernel_ctx *ctx, struct rnn_args *a, float **buf_out,
				 ptrdiff_t **boff_out)
{
	*buf_out = NULL;
	*boff_out = NULL;
	size_t D = (size_t)a->D, I = (size_t)a->I, H = (size_t)a->H, GH = (size_t)(a->G * a->H);
	uint64_t rows, xw_n, wt_n, rt_n, total;
	if (!wh_mul_u64((uint64_t)a->S, (uint64_t)a->B, &rows) || !wh_mul_u64(rows, (uint64_t)(D * GH), &xw_n) ||
	    !wh_mul_u64((uint64_t)(D * GH), I, &wt_n) || !wh_mul_u64((uint64_t)(D * GH), H, &rt_n) ||
	    !wh_add_u64(xw_n, wt_n, &total) || !wh_add_u64(total, rt_n, &total) ||
	    !wh_add_u64(total, 2 * (uint64_t)(D * GH), &total) || total > WH_MAX_ELEMENTS)
		return WH_OK;
	float *buf = malloc((size_t)total * sizeof *buf);
	ptrdiff_t *boff = malloc(H * sizeof *boff);
	if (!buf || !boff) {
		free(buf);
		free(boff);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
	}
	float *xw = buf, *wt = xw + xw_n, *rt = wt + wt_n, *bx = rt + rt_n, *br = bx + D * GH;
	for (size_t d = 0; d < D; d++) {
		for (size_t j = 0; j < GH; j++) {
			const float *wj = a->w + (d * GH + j) * I, *rj = a->r + (d * GH + j) * H;
			for (size_t k = 0; k < I; k++)
				wt[(d * I + k) * GH + j] = wj[k];
			for (size_t k = 0; k < H; k++)
				rt[(d * H + k) * GH + j] = rj[k];
			/* GRU with linear_before_reset keeps Rbh inside r (h Rh + Rbh) */
			const float *bd = a->bias ? a->bias + d * 2 * GH : NULL;
			bool rec_bias = a->kind == KIND_GRU && a->linear_before_reset && j >= 2 * H;
			bx[d * GH + j] = !bd ? 0.0f : rec_bias ? bd[j] : bd[j] + bd[GH + j];
			br[d * GH + j] = bd && rec_bias ? bd[GH + j] : 0.0f;
		}
	}
	for (size_t k = 0; k < H; k++)
		boff[k] = (ptrdiff_t)(k * GH);
	size_t b_off[2] = {0, I * GH}, c_off[2] = {0, (size_t)rows * GH};
	struct wh_sgemm_desc g = {
		.M = (size_t)rows, .N = GH, .K = I, .batch = D, .a = a->x, .rsa = I, .csa = 1, .b = wt, .ldb = GH,
		.b_off = b_off, .c = xw, .ldc = GH, .c_off = c_off,
	};
	enum wh_status st = wh_sgemm_run(ctx->cpu, ctx->pool, &g);
	if (st != WH_OK) {
		free(buf);
		free(boff);
		return st;
	}
	struct wh_sgemm_kernel kern;
	wh_sgemm_kernel_get(ctx->cpu->isa, &kern);
	a->isa = ctx->cpu->isa;
	a->m1 = kern.m1;
	a->xw = xw;
	a->rt = rt;
	a->bx = bx;
	a->br = br;
	a->boff = boff;
	*buf_out = buf;
	*boff_out = boff;
	return WH_OK;
}

static enum wh_status rnn_common(struct wh_kernel_ctx *ctx, enum rnn_kind kind)
{
	enum wh_status st = WH_OK;
	struct rnn_args a = {.kind = kind};
	float *cvt[8] = {0};
	float *outbuf[3] = {0};
	int64_t *lens = NULL;
	float *fastbuf = NULL;
	ptrdiff_t *fastboff = NULL;
	a.G = kind == KIND_RNN ? 1 : kind == KIND_GRU ? 3 : 4;
	const struct wh_tensor *X = wh_kin(ctx, 0), *W = wh_kin(ctx, 1), *R = wh_kin(ctx, 2);
	const struct wh_tensor *Bt = wh_kin(ctx, 3), *SL = wh_kin(ctx, 4), *H0 = wh_kin(ctx, 5);
	const struct wh_tensor *C0 = kind == KIND_LSTM ? wh_kin(ctx, 6) : NULL;
	const struct wh_tensor *P = kind == KIND_LSTM ? wh_kin(ctx, 7) : NULL;
	if (!X || !W || !R)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs X, W and R are required (fix the model)");
	if (X->rank != 3 || W->rank != 3 || R->rank != 3)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X, W and R must have rank 3, got %d, %d and %d (fix the model)",
				      X->rank, W->rank, R->rank);
	a.layout = ctx->opset >= 14 ? (int)wh_node_attr_int(ctx->node, "layout", 0) : 0;
	if (a.layout != 0 && a.layout != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "layout is %d, expected 0 or 1 (fix the model)", a.layout);
	char dirbuf[32];
	const char *dir = wh_node_attr_string(ctx->node, "direction", "forward", dirbuf, sizeof dirbuf);
	if (!strcmp(dir, "forward") || !strcmp(dir, "reverse")) {
		a.D = 1;
		a.reverse = dir[0] == 'r';
	} else if (!strcmp(dir, "bidirectional")) {
		a.D = 2;
	} else {
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "direction '%s' is not forward, reverse or bidirectional (fix the model)", dir);
	}
	a.S = a.layout ? X->dims[1] : X->dims[0];
	a.B = a.layout ? X->dims[0] : X->dims[1];
	a.I = X->dims[2];
	a.H = R->dims[2];
	int64_t hs = wh_node_attr_int(ctx->node, "hidden_size", a.H);
	if (hs != a.H)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "hidden_size is %lld but R has shape ...x%lld (fix the model)",
				      (long long)hs, (long long)a.H);
	int64_t GH;
	if (!wh_mul_i64(a.G, a.H, &GH))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "hidden_size %lld is too large (fix the model)", (long long)a.H);
	int64_t dw[3] = {a.D, GH, a.I}, dr[3] = {a.D, GH, a.H}, db[2] = {a.D, 2 * GH}, dsl[1] = {a.B};
	int64_t dh[3] = {a.D, a.B, a.H}, dp[2] = {a.D, 3 * a.H};
	if (a.layout) {
		dh[0] = a.B;
		dh[1] = a.D;
	}
	if ((st = expect_shape(ctx, W, "W", 3, dw)) || (st = expect_shape(ctx, R, "R", 3, dr)) ||
	    (st = expect_shape(ctx, Bt, "B", 2, db)) || (st = expect_shape(ctx, SL, "sequence_lens", 1, dsl)) ||
	    (st = expect_shape(ctx, H0, "initial_h", 3, dh)) || (st = expect_shape(ctx, C0, "initial_c", 3, dh)) ||
	    (st = expect_shape(ctx, P, "P", 2, dp)))
		return st;
	if ((st = parse_acts(ctx, kind == KIND_RNN ? 1 : kind == KIND_GRU ? 2 : 3, a.D, a.acts)) != WH_OK)
		return st;
	const struct wh_attr *clip = wh_node_attr(ctx->node, "clip");
	if (clip && clip->type == WH_ATTR_FLOAT) {
		a.has_clip = true;
		a.clip = clip->f;
	}
	a.input_forget = wh_node_attr_int(ctx->node, "input_forget", 0) != 0;
	a.linear_before_reset = wh_node_attr_int(ctx->node, "linear_before_reset", 0) != 0;

	if (SL) {
		if (!wh_dtype_is_int(SL->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "sequence_lens has element type %s, expected int32 (fix the model)",
					      wh_dtype_name(SL->dtype));
		lens = malloc(((size_t)a.B + 1) * sizeof *lens);
		if (!lens)
			return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		for (int64_t b = 0; b < a.B; b++) {
			lens[b] = wh_tensor_get_i64(SL, (uint64_t)b);
			if (lens[b] < 0 || lens[b] > a.S) {
				st = wh_kernel_fail(ctx, WH_ERR_INVALID, "sequence_lens[%lld] is %lld, outside [0, %lld] (fix the input)",
						    (long long)b, (long long)lens[b], (long long)a.S);
				goto out;
			}
		}
		a.lens = lens;
	}
	if ((st = as_f32(ctx, X, "X", &cvt[0], &a.x)) || (st = as_f32(ctx, W, "W", &cvt[1], &a.w)) ||
	    (st = as_f32(ctx, R, "R", &cvt[2], &a.r)) || (st = as_f32(ctx, Bt, "B", &cvt[3], &a.bias)) ||
	    (st = as_f32(ctx, H0, "initial_h", &cvt[4], &a.h0)) || (st = as_f32(ctx, C0, "initial_c", &cvt[5], &a.c0)) ||
	    (st = as_f32(ctx, P, "P", &cvt[6], &a.p)))
		goto out;

	/* outputs */
	enum wh_dtype odt = X->dtype;
	int64_t dy[4] = {a.S, a.D, a.B, a.H};
	if (a.layout) {
		dy[0] = a.B;
		dy[1] = a.S;
		dy[2] = a.D;
	}
	uint64_t cnt;
	if (!wh_shape_count(dy, 4, &cnt)) {
		st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output Y would be too large (use smaller inputs)");
		goto out;
	}
	uint32_t n_out = ctx->n_outputs < 3 ? ctx->n_outputs : 3;
	if (kind != KIND_LSTM && n_out > 2)
		n_out = 2;
	float **dst[3] = {&a.y, &a.yh, &a.yc};
	for (uint32_t k = 0; k < n_out; k++) {
		if (!ctx->output_wanted[k])
			continue;
		if ((st = wh_tensor_alloc(&ctx->outputs[k], odt, k ? 3 : 4, k ? dh : dy)) != WH_OK)
			goto out;
		if (odt == WH_DT_FLOAT) {
			*dst[k] = ctx->outputs[k].data;
		} else {
			outbuf[k] = malloc((ctx->outputs[k].count + 1) * sizeof **dst[k]);
			if (!outbuf[k]) {
				st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
				goto out;
			}
			*dst[k] = outbuf[k];
		}
	}

	uint64_t units = (uint64_t)a.D * (uint64_t)a.B, per = 0, total = 0;
	if (!wh_add_u64(2 * (uint64_t)GH, 3 * (uint64_t)a.H, &per) || !wh_mul_u64(units, per, &total) ||
	    total > WH_MAX_ELEMENTS) {
		st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "working memory would be too large (use smaller inputs)");
		goto out;
	}
	a.scratch_per_unit = (size_t)per;
	a.scratch = malloc(((size_t)total + 1) * sizeof *a.scratch);
	if (!a.scratch) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	if (ctx->cpu->isa >= WH_ISA_AVX2 && a.I > 0 && a.H > 0 && units > 0 &&
	    (st = fast_setup(ctx, &a, &fastbuf, &fastboff)) != WH_OK) {
		free(a.scratch);
		goto out;
	}
	wh_parallel_for(ctx->pool, (size_t)units, 1, rnn_range, &a);
	free(a.scratch);

	for (uint32_t k = 0; k < n_out; k++)
		if (outbuf[k])
			for (uint64_t i = 0; i < ctx->outputs[k].count; i++)
				wh_tensor_set_f64(&ctx->outputs[k], i, outbuf[k][i]);
out:
	for (size_t i = 0; i < sizeof cvt / sizeof cvt[0]; i++)
		free(cvt[i]);
	for (size_t i = 0; i < 3; i++)
		free(outbuf[i]);
	free(lens);
	free(fastbuf);
	free(fastboff);
	if (st != WH_OK)
		for (uint32_t k = 0; k < ctx->n_outputs; k++)
			wh_tensor_release(&ctx->outputs[k]);
	return st;
}

static enum wh_status rnn_run(struct wh_kernel_ctx *ctx)
{
	return rnn_common(ctx, KIND_RNN);
}

static enum wh_status gru_run(struct wh_kernel_ctx *ctx)
{
	return rnn_common(ctx, KIND_GRU);
}

static enum wh_status lstm_run(struct wh_kernel_ctx *ctx)
{
	return rnn_common(ctx, KIND_LSTM);
}

const struct wh_op_def wh_ops_rnn[] = {
	{"", "RNN", 1, rnn_run},
	{"", "GRU", 1, gru_run},
	{"", "LSTM", 1, lstm_run},
};
const size_t wh_ops_rnn_count = sizeof wh_ops_rnn / sizeof wh_ops_rnn[0];
