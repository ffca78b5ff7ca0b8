/* Recurrent layers: RNN, GRU, LSTM (every opset, layout 0 and 1, all directions).
 *
 * Each (direction, batch entry) pair is an independent chain over time, so the pairs are
 * the parallel units: a unit reads its own rows of X and the shared weights and writes only
 * its own slices of Y, Y_h and Y_c, which keeps results bit-identical for any thread count.
 * A step is a few matrix-vector products (dot products over contiguous weight rows); the
 * layers are small in the models whittle meets, so no GEMM packing is worth it.
 *
 * Non-float32 inputs (float16, bfloat16, double) are converted to float32, computed, and
 * the outputs converted back with round-to-nearest-even. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

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
};

static size_t x_off(const struct rnn_args *a, int64_t t, int64_t b)
{
	return (size_t)(a->layout ? b * a->S + t : t * a->B + b) * (size_t)a->I;
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

static void rnn_unit(const struct rnn_args *a, size_t unit)
{
	int64_t d = (int64_t)unit / a->B, b = (int64_t)unit % a->B;
	int64_t H = a->H, GH = a->G * H;
	float *gates = a->scratch + unit * a->scratch_per_unit;
	float *h = gates + GH, *c = h + H, *tmp = c + H;
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
	int64_t len = a->lens ? a->lens[b] : a->S;
	for (int64_t step = 0; step < len; step++) {
		int64_t t = rev ? len - 1 - step : step;
		const float *xt = a->x + x_off(a, t, b);
		switch (a->kind) {
		case KIND_RNN: rnn_step(a, act, xt, W, R, bias, gates, h); break;
		case KIND_GRU: gru_step(a, act, xt, W, R, bias, gates, h, tmp); break;
		case KIND_LSTM: lstm_step(a, act, xt, W, R, bias, P, gates, h, c); break;
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

static enum wh_status rnn_common(struct wh_kernel_ctx *ctx, enum rnn_kind kind)
{
	enum wh_status st = WH_OK;
	struct rnn_args a = {.kind = kind};
	float *cvt[8] = {0};
	float *outbuf[3] = {0};
	int64_t *lens = NULL;
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
	if (!wh_add_u64((uint64_t)GH, 3 * (uint64_t)a.H, &per) || !wh_mul_u64(units, per, &total) ||
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
