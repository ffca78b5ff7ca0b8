/* Neural-network kernels: pooling, normalizations, the softmax family, Dropout.
 *
 * Numerics: sums over float data are accumulated in double and rounded once (see
 * nn-internal.h), except where ONNX Runtime sums float32 in float32 (float32 AveragePool
 * without dilation, GlobalAveragePool, Softmax and LogSoftmax): there whittle follows its
 * order and arithmetic, so that the results agree with ORT bit for bit. Per-element
 * arithmetic of the non-float32 types goes through double, except 2-D uint8/int8 MaxPool
 * (exact byte maxima, nn-internal.h).
 * Work is split over independent rows or planes with wh_parallel_for, whose chunks depend
 * only on the shapes, and no sum is ever split across chunks, so results are bit-identical
 * for every thread count. */
#include <float.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/ops/nn-internal.h"

static bool wanted(const struct wh_kernel_ctx *ctx, uint32_t i)
{
	return i < ctx->n_outputs && (!ctx->output_wanted || ctx->output_wanted[i]);
}

static enum wh_isa isa_of(const struct wh_kernel_ctx *ctx)
{
	return ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR;
}

/* ---- float32 row primitives (scalar references and dispatch) ---- */

double wh_nn_sum_f32_scalar(const float *x, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += x[i];
	return s;
}

double wh_nn_sqdev_f32_scalar(const float *x, size_t n, double mean)
{
	double s = 0;
	for (size_t i = 0; i < n; i++) {
		double d = (double)x[i] - mean;
		s += d * d;
	}
	return s;
}

void wh_nn_affine_f32_scalar(const float *x, float *y, size_t n, float a, float b)
{
	for (size_t i = 0; i < n; i++) {
		float t = x[i] * a;
		y[i] = t + b;
	}
}

float wh_nn_sum4_f32(const float *x, size_t n)
{
	float l0 = 0.0f, l1 = 0.0f, l2 = 0.0f, l3 = 0.0f;
	size_t i = 0;
	for (; i + 4 <= n; i += 4) {
		l0 = l0 + x[i];
		l1 = l1 + x[i + 1];
		l2 = l2 + x[i + 2];
		l3 = l3 + x[i + 3];
	}
	float r = (l0 + l2) + (l1 + l3);
	for (; i < n; i++)
		r = r + x[i];
	return r;
}

/* MLAS's exp of v = x + negmax (v <= 0 or NaN in a softmax). */
static float nn_exp_elem(float v)
{
	if (v != v)
		return v;
	v = WH_NN_EXP_LO > v ? WH_NN_EXP_LO : v;
	float b = fmaf(v, WH_NN_EXP_LOG2E, WH_NN_EXP_BIAS);
	float m = b - WH_NN_EXP_BIAS;
	v = fmaf(m, WH_NN_EXP_LN2_HI, v);
	v = fmaf(m, WH_NN_EXP_LN2_LO, v);
	float p = WH_NN_EXP_P0;
	p = fmaf(p, v, WH_NN_EXP_P1);
	p = fmaf(p, v, WH_NN_EXP_P2);
	p = fmaf(p, v, WH_NN_EXP_P3);
	p = fmaf(p, v, WH_NN_EXP_P4);
	p = fmaf(p, v, WH_NN_EXP_P56);
	p = fmaf(p, v, WH_NN_EXP_P56);
	/* p * 2^m rounded once, as VSCALEFPS does: the first factor keeps the product exact */
	int32_t e = (int32_t)m + 64 + 127;
	e = e < 1 ? 1 : e > 254 ? 254 : e;
	return (p * wh_bits_f32((uint32_t)e << 23)) * 0x1p-64f;
}

float wh_nn_sumexp_f32_scalar(const float *x, float *y, size_t n, float negmax)
{
	float lane[16] = {0};
	for (size_t i = 0; i < n; i++) {
		float e = nn_exp_elem(x[i] + negmax);
		if (y)
			y[i] = e;
		lane[i % 16] = lane[i % 16] + e;
	}
	float v[8];
	for (int i = 0; i < 8; i++)
		v[i] = lane[i + 8] + lane[i];
	return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}

float wh_nn_sumexp_f32(enum wh_isa isa, const float *x, float *y, size_t n, float negmax)
{
	if (isa >= WH_ISA_AVX512)
		return wh_nn_sumexp_f32_avx512(x, y, n, negmax);
	if (isa >= WH_ISA_AVX2)
		return wh_nn_sumexp_f32_avx2(x, y, n, negmax);
	return wh_nn_sumexp_f32_scalar(x, y, n, negmax);
}

double wh_nn_sum_f32(enum wh_isa isa, const float *x, size_t n)
{
	if (isa >= WH_ISA_AVX512)
		return wh_nn_sum_f32_avx512(x, n);
	if (isa >= WH_ISA_AVX2)
		return wh_nn_sum_f32_avx2(x, n);
	return wh_nn_sum_f32_scalar(x, n);
}

double wh_nn_sqdev_f32(enum wh_isa isa, const float *x, size_t n, double mean)
{
	if (isa >= WH_ISA_AVX512)
		return wh_nn_sqdev_f32_avx512(x, n, mean);
	if (isa >= WH_ISA_AVX2)
		return wh_nn_sqdev_f32_avx2(x, n, mean);
	return wh_nn_sqdev_f32_scalar(x, n, mean);
}

void wh_nn_affine_f32(enum wh_isa isa, const float *x, float *y, size_t n, float a, float b)
{
	if (isa >= WH_ISA_AVX512)
		wh_nn_affine_f32_avx512(x, y, n, a, b);
	else if (isa >= WH_ISA_AVX2)
		wh_nn_affine_f32_avx2(x, y, n, a, b);
	else
		wh_nn_affine_f32_scalar(x, y, n, a, b);
}

void wh_nn_maxpool_row_f32_scalar(const float *const *rows, size_t nrows, float *y, size_t n, size_t k, size_t s,
				  size_t d)
{
	for (size_t q = 0; q < n; q++) {
		float best = -INFINITY;
		for (size_t r = 0; r < nrows; r++) {
			const float *row = rows[r] + q * s;
			for (size_t b = 0; b < k; b++) {
				float v = row[b * d];
				best = v > best ? v : best;
			}
		}
		y[q] = best;
	}
}

void wh_nn_maxpool_row_f32(enum wh_isa isa, const float *const *rows, size_t nrows, float *y, size_t n, size_t k,
			   size_t s, size_t d)
{
	if (isa >= WH_ISA_AVX512)
		wh_nn_maxpool_row_f32_avx512(rows, nrows, y, n, k, s, d);
	else if (isa >= WH_ISA_AVX2)
		wh_nn_maxpool_row_f32_avx2(rows, nrows, y, n, k, s, d);
	else
		wh_nn_maxpool_row_f32_scalar(rows, nrows, y, n, k, s, d);
}

bool wh_nn_maxpool_plane_avx512_fits(const struct wh_nn_pool2d *g)
{
	/* sizes far below what the padded rows' arithmetic could overflow */
	const int64_t big = (int64_t)1 << 24;
	return (g->sw == 1 || g->sw == 2) && g->kh >= 1 && g->kh <= WH_NN_POOL2D_MAXK && g->kw >= 1 &&
	       g->kw <= WH_NN_POOL2D_MAXK && g->OW >= 1 && g->OH >= 1 && g->H >= 1 && g->W >= 1 && g->W < big &&
	       g->OW < big && g->dw < big && g->pw < big;
}

size_t wh_nn_maxpool_plane_pl(const struct wh_nn_pool2d *g)
{
	return (size_t)(g->pw / g->sw + 16);
}

size_t wh_nn_maxpool_plane_len(const struct wh_nn_pool2d *g)
{
	/* reads up to ow + floor(((kw - 1) dw - pw) / sw) for ow < OW rounded to vectors;
	 * writes whole vectors up to ceil(W / (16 sw)) of them */
	size_t reads = (size_t)(g->OW + 15) / 16 * 16 + (size_t)((g->kw - 1) * g->dw / g->sw) + 1;
	size_t writes = (size_t)(g->W + 16 * g->sw - 1) / (size_t)(16 * g->sw) * 16;
	return wh_nn_maxpool_plane_pl(g) + (reads > writes ? reads : writes) + 16;
}

size_t wh_nn_maxpool_plane_scratch(const struct wh_nn_pool2d *g)
{
	return (size_t)g->sw * wh_nn_maxpool_plane_len(g);
}

void wh_nn_maxpool_plane_f32_scalar(const struct wh_nn_pool2d *g, const float *x, float *y)
{
	for (int64_t oh = 0; oh < g->OH; oh++)
		for (int64_t ow = 0; ow < g->OW; ow++) {
			float best = -INFINITY;
			for (int64_t b = 0; b < g->kw; b++) {
				int64_t w = ow * g->sw - g->pw + b * g->dw;
				for (int64_t a = 0; w >= 0 && w < g->W && a < g->kh; a++) {
					int64_t h = oh * g->sh - g->ph + a * g->dh;
					if (h < 0 || h >= g->H)
						continue;
					float v = x[h * g->W + w];
					best = v > best ? v : best;
				}
			}
			y[oh * g->OW + ow] = best;
		}
}

bool wh_nn_maxpool_plane_q8_fits(const struct wh_nn_pool2d *g)
{
	return wh_nn_maxpool_plane_avx512_fits(g);
}

size_t wh_nn_maxpool_plane_q8_pl(const struct wh_nn_pool2d *g)
{
	return (size_t)(g->pw / g->sw + 64);
}

size_t wh_nn_maxpool_plane_q8_len(const struct wh_nn_pool2d *g)
{
	/* as the float32 one, in vectors of 64 bytes (the AVX2 variant's 32 fit in them) */
	size_t reads = (size_t)(g->OW + 63) / 64 * 64 + (size_t)((g->kw - 1) * g->dw / g->sw) + 1;
	size_t writes = (size_t)(g->W + 64 * g->sw - 1) / (size_t)(64 * g->sw) * 64;
	return wh_nn_maxpool_plane_q8_pl(g) + (reads > writes ? reads : writes) + 64;
}

size_t wh_nn_maxpool_plane_q8_scratch(const struct wh_nn_pool2d *g)
{
	return (size_t)g->sw * wh_nn_maxpool_plane_q8_len(g);
}

void wh_nn_maxpool_plane_q8_scalar(const struct wh_nn_pool2d *g, const uint8_t *x, uint8_t *y, bool s8)
{
	/* int8 compares as uint8 with the sign bit flipped */
	const uint8_t flip = s8 ? 0x80 : 0;
	for (int64_t oh = 0; oh < g->OH; oh++) {
		int64_t a0 = 0, a1 = g->kh;
		while (a0 < a1 && oh * g->sh - g->ph + a0 * g->dh < 0)
			a0++;
		while (a1 > a0 && oh * g->sh - g->ph + (a1 - 1) * g->dh >= g->H)
			a1--;
		for (int64_t ow = 0; ow < g->OW; ow++) {
			uint8_t best = 0;
			for (int64_t b = 0; b < g->kw; b++) {
				int64_t w = ow * g->sw - g->pw + b * g->dw;
				if (w < 0 || w >= g->W)
					continue;
				for (int64_t a = a0; a < a1; a++) {
					int64_t h = oh * g->sh - g->ph + a * g->dh;
					uint8_t v = (uint8_t)(x[h * g->W + w] ^ flip);
					best = v > best ? v : best;
				}
			}
			y[oh * g->OW + ow] = (uint8_t)(best ^ flip);
		}
	}
}

bool wh_nn_minmax_f32(enum wh_isa isa, const float *x, size_t n, bool is_min, float *out)
{
	if (isa >= WH_ISA_AVX512)
		return wh_nn_minmax_f32_avx512(x, n, is_min, out);
	if (isa >= WH_ISA_AVX2)
		return wh_nn_minmax_f32_avx2(x, n, is_min, out);
	return false; /* the caller's scan is the scalar variant */
}

void wh_nn_ln_apply_f32_scalar(const float *x, float *y, size_t n, double mean, double inv, const double *scale,
			       const double *bias)
{
	for (size_t i = 0; i < n; i++) {
		double v = ((double)x[i] - mean) * inv * scale[i];
		if (bias)
			v += bias[i];
		y[i] = (float)v;
	}
}

void wh_nn_ln_apply_f32(enum wh_isa isa, const float *x, float *y, size_t n, double mean, double inv,
			const double *scale, const double *bias)
{
	if (isa >= WH_ISA_AVX512)
		wh_nn_ln_apply_f32_avx512(x, y, n, mean, inv, scale, bias);
	else if (isa >= WH_ISA_AVX2)
		wh_nn_ln_apply_f32_avx2(x, y, n, mean, inv, scale, bias);
	else
		wh_nn_ln_apply_f32_scalar(x, y, n, mean, inv, scale, bias);
}

float wh_nn_max_f32_scalar(const float *x, size_t n)
{
	float mx = -FLT_MAX;
	for (size_t i = 0; i < n; i++)
		mx = x[i] > mx ? x[i] : mx;
	return mx;
}

float wh_nn_max_f32(enum wh_isa isa, const float *x, size_t n)
{
	if (isa >= WH_ISA_AVX512)
		return wh_nn_max_f32_avx512(x, n);
	if (isa >= WH_ISA_AVX2)
		return wh_nn_max_f32_avx2(x, n);
	return wh_nn_max_f32_scalar(x, n);
}

void wh_nn_scale_f32_scalar(const float *x, float *y, size_t n, float a)
{
	for (size_t i = 0; i < n; i++)
		y[i] = x[i] * a;
}

void wh_nn_scale_f32(enum wh_isa isa, const float *x, float *y, size_t n, float a)
{
	if (isa >= WH_ISA_AVX512)
		wh_nn_scale_f32_avx512(x, y, n, a);
	else if (isa >= WH_ISA_AVX2)
		wh_nn_scale_f32_avx2(x, y, n, a);
	else
		wh_nn_scale_f32_scalar(x, y, n, a);
}

/* ---- shared helpers ---- */

static bool is_float_type(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_DOUBLE || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

static enum wh_status need_float(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what)
{
	if (!is_float_type(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "%s has type %s, expected a floating type", what,
				      wh_dtype_name(t->dtype));
	return WH_OK;
}

/* A copy of t's elements as doubles (caller frees). */
/* fp16 and bf16 tensors compute as the FP32 kernel on the values widened to float, the
 * output rounded once to the tensor's type (docs/precision.md, "Strongly typed models"): the
 * bits of an fp16 layer's emulation, and what ONNX Runtime's CPU does between its casts.
 * widen_half gives 2 * count floats: x widened, then room for the output. */
static bool is_half(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

static enum wh_status widen_half(const struct wh_kernel_ctx *ctx, const struct wh_tensor *x, float **out)
{
	float *f = malloc(2 * (x->count ? x->count : 1) * sizeof *f);
	if (!f)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for %llu elements", (unsigned long long)x->count);
	const uint16_t *h = x->data;
	for (uint64_t i = 0; i < x->count; i++)
		f[i] = x->dtype == WH_DT_FLOAT16 ? wh_f16_to_f32(h[i]) : wh_bf16_to_f32(h[i]);
	*out = f;
	return WH_OK;
}

static void narrow_half(struct wh_tensor *t, const float *y)
{
	uint16_t *h = t->data;
	for (uint64_t i = 0; i < t->count; i++)
		h[i] = t->dtype == WH_DT_FLOAT16 ? wh_f32_to_f16(y[i]) : wh_f32_to_bf16(y[i]);
}

static enum wh_status load_f64(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, double **out)
{
	double *v = malloc((t->count ? t->count : 1) * sizeof *v);
	if (!v)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for %llu elements", (unsigned long long)t->count);
	for (uint64_t i = 0; i < t->count; i++)
		v[i] = wh_tensor_get_f64(t, i);
	*out = v;
	return WH_OK;
}

static void store_f64(struct wh_tensor *t, const double *v)
{
	if (t->dtype == WH_DT_DOUBLE) {
		if (t->count)
			memcpy(t->data, v, t->count * sizeof *v);
		return;
	}
	for (uint64_t i = 0; i < t->count; i++)
		wh_tensor_set_f64(t, i, v[i]);
}

/* A parameter tensor that must hold exactly n elements, as doubles. */
static enum wh_status load_param(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, uint64_t n,
				 const char *what, double **out)
{
	char buf[32];
	if (!t)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing", what);
	if (t->count != n)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %s has shape %s (%llu elements), expected %llu elements",
				      what, wh_shape_str(t->dims, t->rank, buf, sizeof buf),
				      (unsigned long long)t->count, (unsigned long long)n);
	enum wh_status st = need_float(ctx, t, what);
	if (st)
		return st;
	return load_f64(ctx, t, out);
}

static uint64_t prod_dims(const int64_t *dims, int32_t from, int32_t to)
{
	uint64_t p = 1;
	for (int32_t i = from; i < to; i++)
		p *= (uint64_t)dims[i];
	return p;
}

/* Output i with the same type and shape as t. */
static enum wh_status alloc_like(struct wh_kernel_ctx *ctx, uint32_t i, const struct wh_tensor *t)
{
	return wh_tensor_alloc(&ctx->outputs[i], t->dtype, t->rank, t->dims);
}

/* ---- BatchNormalization ---- */

struct bn_job {
	const float *x;
	float *y;
	const float *a, *b; /* per channel, or per channel*spatial when per_elem */
	uint64_t C, S;
	bool per_elem;
	enum wh_isa isa;
};

static void bn_range(void *p, size_t lo, size_t hi)
{
	const struct bn_job *j = p;
	for (size_t pl = lo; pl < hi; pl++) {
		uint64_t c = pl % j->C;
		const float *x = j->x + pl * j->S;
		float *y = j->y + pl * j->S;
		if (!j->per_elem) {
			wh_nn_affine_f32(j->isa, x, y, j->S, j->a[c], j->b[c]);
		} else {
			const float *a = j->a + c * j->S, *b = j->b + c * j->S;
			for (uint64_t i = 0; i < j->S; i++) {
				float t = x[i] * a[i];
				y[i] = t + b[i];
			}
		}
	}
}

/* Training mode (opset 14+): normalizes with the batch statistics (population variance,
 * as the ONNX reference computes them) and outputs the running statistics blended by
 * momentum. */
static enum wh_status batchnorm_training(struct wh_kernel_ctx *ctx, const struct wh_tensor *x, const double *scale,
					 const double *bias, const double *mean, const double *var, double eps,
					 double momentum)
{
	enum wh_status st;
	uint64_t N = (uint64_t)x->dims[0], C = (uint64_t)x->dims[1], S = prod_dims(x->dims, 2, x->rank);
	double *xd = NULL;
	double *bm = calloc(C ? C : 1, sizeof *bm), *bv = calloc(C ? C : 1, sizeof *bv);
	if (!bm || !bv) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
		goto out;
	}
	if ((st = load_f64(ctx, x, &xd)))
		goto out;
	double cnt = (double)N * (double)S;
	for (uint64_t pl = 0; pl < N * C; pl++)
		for (uint64_t i = 0; i < S; i++)
			bm[pl % C] += xd[pl * S + i];
	for (uint64_t c = 0; c < C; c++)
		bm[c] /= cnt;
	for (uint64_t pl = 0; pl < N * C; pl++)
		for (uint64_t i = 0; i < S; i++) {
			double d = xd[pl * S + i] - bm[pl % C];
			bv[pl % C] += d * d;
		}
	for (uint64_t c = 0; c < C; c++)
		bv[c] /= cnt;
	for (uint64_t pl = 0; pl < N * C; pl++) {
		uint64_t c = pl % C;
		double inv = 1.0 / sqrt(bv[c] + eps);
		for (uint64_t i = 0; i < S; i++)
			xd[pl * S + i] = (xd[pl * S + i] - bm[c]) * inv * scale[c] + bias[c];
	}
	store_f64(&ctx->outputs[0], xd);
	for (uint32_t o = 1; o < 3; o++) {
		if (!wanted(ctx, o))
			continue;
		const struct wh_tensor *like = wh_kin(ctx, o == 1 ? 3 : 4);
		if ((st = wh_tensor_alloc(&ctx->outputs[o], like->dtype, like->rank, like->dims)))
			goto out;
		for (uint64_t c = 0; c < C; c++) {
			double run = o == 1 ? mean[c] * momentum + bm[c] * (1 - momentum)
					    : var[c] * momentum + bv[c] * (1 - momentum);
			wh_tensor_set_f64(&ctx->outputs[o], c, run);
		}
	}
out:
	free(xd);
	free(bm);
	free(bv);
	return st;
}

static enum wh_status batchnorm_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st = WH_OK;
	double *scale = NULL, *bias = NULL, *mean = NULL, *var = NULL, *xd = NULL;
	float *ab = NULL;
	if (!x || ctx->n_inputs < 5)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs 5 inputs (X, scale, B, mean, var)");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	if (x->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has rank %d, expected at least 2", x->rank);
	double eps = wh_node_attr_float(ctx->node, "epsilon", 1e-5f);
	double momentum = wh_node_attr_float(ctx->node, "momentum", 0.9f);
	bool training = ctx->opset >= 14 && wh_node_attr_int(ctx->node, "training_mode", 0) != 0;
	uint64_t C = (uint64_t)x->dims[1];
	uint64_t N = (uint64_t)x->dims[0];
	uint64_t S = prod_dims(x->dims, 2, x->rank);
	/* spatial=0 (before opset 9) gives one parameter per channel and position */
	uint64_t pc = C;
	if (ctx->opset < 9 && wh_node_attr_int(ctx->node, "spatial", 1) == 0)
		pc = C * S;
	bool per_elem = pc != C;
	if (training && per_elem)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "training mode with spatial=0 is not supported");
	if (!training)
		for (uint32_t i = 1; i < ctx->n_outputs; i++)
			if (wanted(ctx, i))
				return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED,
						      "output %u is only computed in training mode (opset 14+, training_mode=1)", i);
	if ((st = load_param(ctx, wh_kin(ctx, 1), pc, "scale", &scale)) ||
	    (st = load_param(ctx, wh_kin(ctx, 2), pc, "B", &bias)) ||
	    (st = load_param(ctx, wh_kin(ctx, 3), pc, "mean", &mean)) ||
	    (st = load_param(ctx, wh_kin(ctx, 4), pc, "var", &var)))
		goto out;
	if ((st = alloc_like(ctx, 0, x)))
		goto out;
	if (training) {
		st = batchnorm_training(ctx, x, scale, bias, mean, var, eps, momentum);
		goto out;
	}
	if (x->dtype == WH_DT_FLOAT || is_half(x->dtype)) {
		/* Y = X * a + b with a = scale * (1 / sqrt(var + eps)), b = B - mean * a, each step
		 * rounded to float: ONNX Runtime's formula and order of operations, so whittle and
		 * ONNX Runtime agree bit for bit where an output nearly cancels (a double-precision
		 * a and b would be closer to exact but differ from ONNX Runtime there by 1e-3
		 * relative) */
		ab = malloc(2 * pc * sizeof *ab);
		if (!ab) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
			goto out;
		}
		float eps_f = (float)eps;
		for (uint64_t c = 0; c < pc; c++) {
			float inv = 1.0f / sqrtf((float)var[c] + eps_f);
			float a = inv * (float)scale[c];
			float ma = (float)mean[c] * a;
			ab[c] = a;
			ab[pc + c] = (float)bias[c] - ma;
		}
		float *xh = NULL;
		if (is_half(x->dtype) && (st = widen_half(ctx, x, &xh)))
			goto out;
		struct bn_job job = {xh ? xh : x->data, xh ? xh + x->count : ctx->outputs[0].data, ab, ab + pc, C ? C : 1, S,
				     per_elem, isa_of(ctx)};
		wh_parallel_for(ctx->pool, N * C, wh_grain_for(S), bn_range, &job);
		if (xh) {
			narrow_half(&ctx->outputs[0], xh + x->count);
			free(xh);
		}
		goto out;
	}
	if ((st = load_f64(ctx, x, &xd)))
		goto out;
	for (uint64_t pl = 0; pl < N * C; pl++) {
		uint64_t c = pl % C;
		for (uint64_t i = 0; i < S; i++) {
			uint64_t k = per_elem ? c * S + i : c;
			double *v = &xd[pl * S + i];
			*v = (*v - mean[k]) / sqrt(var[k] + eps) * scale[k] + bias[k];
		}
	}
	store_f64(&ctx->outputs[0], xd);
out:
	free(scale);
	free(bias);
	free(mean);
	free(var);
	free(xd);
	free(ab);
	return st;
}

/* ---- InstanceNormalization, GroupNormalization ---- */

/* Normalizes `groups` contiguous blocks of `len` elements each; the affine parameters are
 * per channel, `cpg` channels of `S` elements per block (len = cpg * S). */
struct gn_job {
	const float *xf;
	float *yf;
	double *xd; /* in place for non-float32 */
	const double *scale, *bias;
	uint64_t C, cpg, S, len;
	bool per_group_params; /* GroupNormalization-18: one scale per group */
	uint64_t G;
	double eps;
	enum wh_isa isa;
};

static void gn_range(void *p, size_t lo, size_t hi)
{
	const struct gn_job *j = p;
	for (size_t blk = lo; blk < hi; blk++) {
		uint64_t g = blk % j->G;
		uint64_t off = blk * j->len;
		double mean, var;
		if (j->xf) {
			mean = wh_nn_sum_f32(j->isa, j->xf + off, j->len) / (double)j->len;
			var = wh_nn_sqdev_f32(j->isa, j->xf + off, j->len, mean) / (double)j->len;
		} else {
			double s = 0;
			for (uint64_t i = 0; i < j->len; i++)
				s += j->xd[off + i];
			mean = s / (double)j->len;
			s = 0;
			for (uint64_t i = 0; i < j->len; i++) {
				double d = j->xd[off + i] - mean;
				s += d * d;
			}
			var = s / (double)j->len;
		}
		double inv = 1.0 / sqrt(var + j->eps);
		for (uint64_t cc = 0; cc < j->cpg; cc++) {
			uint64_t c = g * j->cpg + cc;
			uint64_t pi = j->per_group_params ? g : c;
			double a = j->scale[pi] * inv, b = j->bias[pi] - mean * a;
			uint64_t o = off + cc * j->S;
			if (j->xf)
				wh_nn_affine_f32(j->isa, j->xf + o, j->yf + o, j->S, (float)a, (float)b);
			else
				for (uint64_t i = 0; i < j->S; i++)
					j->xd[o + i] = j->xd[o + i] * a + b;
		}
	}
}

static enum wh_status group_norm_common(struct wh_kernel_ctx *ctx, uint64_t G, bool per_group_params,
					double eps)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	double *scale = NULL, *bias = NULL, *xd = NULL;
	float *xh = NULL;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	if (x->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has rank %d, expected at least 2", x->rank);
	uint64_t N = (uint64_t)x->dims[0], C = (uint64_t)x->dims[1];
	uint64_t S = prod_dims(x->dims, 2, x->rank);
	if (G == 0 || C % G)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%llu channels cannot be split into %llu groups",
				      (unsigned long long)C, (unsigned long long)G);
	uint64_t pc = per_group_params ? G : C;
	if ((st = load_param(ctx, wh_kin(ctx, 1), pc, "scale", &scale)) ||
	    (st = load_param(ctx, wh_kin(ctx, 2), pc, "B", &bias)))
		goto out;
	if ((st = alloc_like(ctx, 0, x)))
		goto out;
	struct gn_job job = {0};
	job.scale = scale;
	job.bias = bias;
	job.C = C;
	job.G = G;
	job.cpg = C / G;
	job.S = S;
	job.len = job.cpg * S;
	job.per_group_params = per_group_params;
	job.eps = eps;
	job.isa = isa_of(ctx);
	if (x->dtype == WH_DT_FLOAT) {
		job.xf = x->data;
		job.yf = ctx->outputs[0].data;
	} else if (is_half(x->dtype)) {
		if ((st = widen_half(ctx, x, &xh)))
			goto out;
		job.xf = xh;
		job.yf = xh + x->count;
	} else {
		if ((st = load_f64(ctx, x, &xd)))
			goto out;
		job.xd = xd;
	}
	if (job.len > 0)
		wh_parallel_for(ctx->pool, N * G, wh_grain_for(job.len), gn_range, &job);
	if (xd)
		store_f64(&ctx->outputs[0], xd);
	if (xh)
		narrow_half(&ctx->outputs[0], job.yf);
out:
	free(scale);
	free(bias);
	free(xd);
	free(xh);
	return st;
}

static enum wh_status instancenorm_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	if (!x || x->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X must have rank 2 or more (N x C x ...)");
	return group_norm_common(ctx, (uint64_t)x->dims[1], false, wh_node_attr_float(ctx->node, "epsilon", 1e-5f));
}

static enum wh_status groupnorm_run(struct wh_kernel_ctx *ctx)
{
	int64_t g = wh_node_attr_int(ctx->node, "num_groups", -1);
	if (g <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute num_groups is missing or not positive");
	/* opset 18 had one scale and bias per group; opset 21 has one per channel */
	return group_norm_common(ctx, (uint64_t)g, ctx->opset < 21, wh_node_attr_float(ctx->node, "epsilon", 1e-5f));
}

/* ---- LayerNormalization, RMSNormalization ---- */

/* The work of a LayerNormalization or Softmax row of n, in elements of an elementwise op
 * (wh_grain_for's unit): several passes with exponentials or double sums, and a fixed cost
 * per row. Counted as such, window attention's 784 rows of 49 and a token LayerNorm's 784
 * rows of 8 are cut into chunks for both threads, not run as one or two (1 + 6 chunks
 * balance two threads badly). The chunks' bounds still depend on n alone. */
#define NORM_ROW_COST(n) (8 * (uint64_t)(n) + 64)

/* Expands a parameter broadcastable to the normalized shape dims[axis..rank) into a dense
 * array of m doubles. */
static enum wh_status expand_norm_param(const struct wh_kernel_ctx *ctx, const struct wh_tensor *p,
					const struct wh_tensor *x, int32_t axis, uint64_t m, const char *what,
					double **out)
{
	char b1[32], b2[32];
	enum wh_status st = need_float(ctx, p, what);
	if (st)
		return st;
	int32_t nr = x->rank - axis;
	/* leading dims of size 1 beyond the normalized rank are allowed */
	int32_t prank = p->rank;
	int32_t lead = 0;
	while (prank - lead > nr && p->dims[lead] == 1)
		lead++;
	bool ok = prank - lead <= nr;
	for (int32_t d = lead; ok && d < prank; d++) {
		int64_t want = x->dims[x->rank - (prank - d)];
		if (p->dims[d] != want && p->dims[d] != 1)
			ok = false;
	}
	if (!ok)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %s has shape %s, not broadcastable to %s", what,
				      wh_shape_str(p->dims, p->rank, b1, sizeof b1),
				      wh_shape_str(x->dims + axis, nr, b2, sizeof b2));
	double *v = malloc((m ? m : 1) * sizeof *v);
	if (!v)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	if (p->count == m) {
		for (uint64_t i = 0; i < m; i++)
			v[i] = wh_tensor_get_f64(p, i);
	} else {
		int64_t ps[WH_MAX_RANK];
		struct wh_tensor view = *p;
		view.rank = prank - lead;
		memmove(view.dims, p->dims + lead, (size_t)view.rank * sizeof view.dims[0]);
		wh_broadcast_strides(&view, nr, x->dims + axis, ps);
		int64_t idx[WH_MAX_RANK] = {0};
		uint64_t off = 0;
		for (uint64_t i = 0; i < m; i++) {
			v[i] = wh_tensor_get_f64(p, off);
			for (int32_t d = nr - 1; d >= 0; d--) {
				off += (uint64_t)ps[d];
				if (++idx[d] < x->dims[axis + d])
					break;
				off -= (uint64_t)ps[d] * (uint64_t)idx[d];
				idx[d] = 0;
			}
		}
	}
	*out = v;
	return WH_OK;
}

struct ln_job {
	const float *xf;
	float *yf;
	double *xd;
	const double *scale, *bias; /* bias may be NULL */
	double *mean_out, *inv_out; /* per row, may be NULL */
	uint64_t m;
	double eps;
	bool rms;
	enum wh_isa isa;
};

/* Float rows in batches: each row's statistics are the same operations as ln_range's, but
 * the batch's sums, then deviations, then 1/sqrt are computed one after another, so the rows'
 * dependent chains (sum, divide, deviations, divide, square root, divide) overlap instead of
 * running back to back: short rows (channels-last LayerNorm over 16-64 channels) were bound
 * by that latency. Same bits. */
static void ln_rows_f32(const struct ln_job *j, size_t lo, size_t hi)
{
	if (j->isa >= WH_ISA_AVX512) {
		wh_nn_ln_rows_f32_avx512(j->xf + lo * j->m, j->yf + lo * j->m, j->m, hi - lo, j->eps, j->rms, j->scale,
					 j->bias, j->mean_out ? j->mean_out + lo : NULL, j->inv_out ? j->inv_out + lo : NULL);
		return;
	}
	enum { B = 32 };
	double mean[B], inv[B];
	for (size_t r0 = lo; r0 < hi; r0 += B) {
		size_t nb = hi - r0 < B ? hi - r0 : B;
		for (size_t b = 0; b < nb; b++)
			mean[b] = j->rms ? 0 : wh_nn_sum_f32(j->isa, j->xf + (r0 + b) * j->m, j->m) / (double)j->m;
		for (size_t b = 0; b < nb; b++)
			inv[b] = wh_nn_sqdev_f32(j->isa, j->xf + (r0 + b) * j->m, j->m, mean[b]) / (double)j->m;
		for (size_t b = 0; b < nb; b++)
			inv[b] = 1.0 / sqrt(inv[b] + j->eps);
		for (size_t b = 0; b < nb; b++) {
			size_t r = r0 + b;
			if (j->mean_out)
				j->mean_out[r] = mean[b];
			if (j->inv_out)
				j->inv_out[r] = inv[b];
			wh_nn_ln_apply_f32(j->isa, j->xf + r * j->m, j->yf + r * j->m, j->m, mean[b], inv[b], j->scale,
					   j->bias);
		}
	}
}

static void ln_range(void *p, size_t lo, size_t hi)
{
	const struct ln_job *j = p;
	if (j->xf) {
		ln_rows_f32(j, lo, hi);
		return;
	}
	for (size_t r = lo; r < hi; r++) {
		uint64_t off = r * j->m;
		double mean = 0, var;
		if (j->xf) {
			if (!j->rms)
				mean = wh_nn_sum_f32(j->isa, j->xf + off, j->m) / (double)j->m;
			var = wh_nn_sqdev_f32(j->isa, j->xf + off, j->m, mean) / (double)j->m;
		} else {
			double s = 0;
			if (!j->rms) {
				for (uint64_t i = 0; i < j->m; i++)
					s += j->xd[off + i];
				mean = s / (double)j->m;
			}
			s = 0;
			for (uint64_t i = 0; i < j->m; i++) {
				double d = j->xd[off + i] - mean;
				s += d * d;
			}
			var = s / (double)j->m;
		}
		double inv = 1.0 / sqrt(var + j->eps);
		if (j->mean_out)
			j->mean_out[r] = mean;
		if (j->inv_out)
			j->inv_out[r] = inv;
		if (j->xf) {
			wh_nn_ln_apply_f32(j->isa, j->xf + off, j->yf + off, j->m, mean, inv, j->scale, j->bias);
			continue;
		}
		for (uint64_t i = 0; i < j->m; i++) {
			double y = (j->xd[off + i] - mean) * inv * j->scale[i];
			if (j->bias)
				y += j->bias[i];
			j->xd[off + i] = y;
		}
	}
}

static enum wh_status layer_norm_common(struct wh_kernel_ctx *ctx, bool rms)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *sc = wh_kin(ctx, 1), *bt = rms ? NULL : wh_kin(ctx, 2);
	enum wh_status st;
	double *scale = NULL, *bias = NULL, *xd = NULL, *stats = NULL;
	float *xh = NULL;
	if (!x || !sc)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs X and Scale are required");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	int32_t axis;
	if (!wh_norm_axis(wh_node_attr_int(ctx->node, "axis", -1), x->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d",
				      (long long)wh_node_attr_int(ctx->node, "axis", -1), x->rank);
	double eps = wh_node_attr_float(ctx->node, "epsilon", 1e-5f);
	int64_t stash = wh_node_attr_int(ctx->node, "stash_type", 1);
	if (!wh_dtype_valid((int)stash) || !is_float_type((enum wh_dtype)stash))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "stash_type %lld is not a floating type", (long long)stash);
	uint64_t rows = prod_dims(x->dims, 0, axis), m = prod_dims(x->dims, axis, x->rank);
	if ((st = expand_norm_param(ctx, sc, x, axis, m, "Scale", &scale)))
		goto out;
	if (bt && (st = expand_norm_param(ctx, bt, x, axis, m, "B", &bias)))
		goto out;
	if ((st = alloc_like(ctx, 0, x)))
		goto out;
	bool want_stats = !rms && (wanted(ctx, 1) || wanted(ctx, 2));
	if (want_stats) {
		stats = malloc(2 * (rows ? rows : 1) * sizeof *stats);
		if (!stats) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
			goto out;
		}
	}
	struct ln_job job = {0};
	job.scale = scale;
	job.bias = bias;
	job.m = m;
	job.eps = eps;
	job.rms = rms;
	job.isa = isa_of(ctx);
	job.mean_out = stats;
	job.inv_out = stats ? stats + rows : NULL;
	bool half = is_half(x->dtype);
	if (x->dtype == WH_DT_FLOAT) {
		job.xf = x->data;
		job.yf = ctx->outputs[0].data;
	} else if (half) {
		if ((st = widen_half(ctx, x, &xh)))
			goto out;
		job.xf = xh;
		job.yf = xh + x->count;
	} else {
		if ((st = load_f64(ctx, x, &xd)))
			goto out;
		job.xd = xd;
	}
	if (m > 0)
		wh_parallel_for(ctx->pool, rows, wh_grain_for(NORM_ROW_COST(m)), ln_range, &job);
	if (xd)
		store_f64(&ctx->outputs[0], xd);
	if (half)
		narrow_half(&ctx->outputs[0], job.yf);
	if (want_stats) {
		int64_t sd[WH_MAX_RANK];
		for (int32_t d = 0; d < x->rank; d++)
			sd[d] = d < axis ? x->dims[d] : 1;
		for (uint32_t o = 1; o < 3; o++) {
			if (!wanted(ctx, o))
				continue;
			if ((st = wh_tensor_alloc(&ctx->outputs[o], (enum wh_dtype)stash, x->rank, sd)))
				goto out;
			const double *src = o == 1 ? job.mean_out : job.inv_out;
			for (uint64_t r = 0; r < rows; r++)
				wh_tensor_set_f64(&ctx->outputs[o], r, m > 0 ? src[r] : NAN);
		}
	}
out:
	free(scale);
	free(bias);
	free(xd);
	free(xh);
	free(stats);
	return st;
}

static enum wh_status layernorm_run(struct wh_kernel_ctx *ctx)
{
	return layer_norm_common(ctx, false);
}

static enum wh_status rmsnorm_run(struct wh_kernel_ctx *ctx)
{
	return layer_norm_common(ctx, true);
}

/* ---- LRN ---- */

static enum wh_status lrn_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	double *xd = NULL, *yd = NULL;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	if (x->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has rank %d, expected at least 2", x->rank);
	int64_t size = wh_node_attr_int(ctx->node, "size", 0);
	if (size <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute size is missing or not positive");
	double alpha = wh_node_attr_float(ctx->node, "alpha", 1e-4f);
	double beta = wh_node_attr_float(ctx->node, "beta", 0.75f);
	double bias = wh_node_attr_float(ctx->node, "bias", 1.0f);
	int64_t C = x->dims[1];
	uint64_t N = (uint64_t)x->dims[0], S = prod_dims(x->dims, 2, x->rank);
	int64_t lo = (size - 1) / 2, hi = size - 1 - lo; /* floor and ceil of (size-1)/2 */
	if ((st = alloc_like(ctx, 0, x)) || (st = load_f64(ctx, x, &xd)))
		goto out;
	yd = malloc((x->count ? x->count : 1) * sizeof *yd);
	if (!yd) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
		goto out;
	}
	for (uint64_t n = 0; n < N; n++)
		for (int64_t c = 0; c < C; c++)
			for (uint64_t i = 0; i < S; i++) {
				double sq = 0;
				int64_t c0 = c - lo < 0 ? 0 : c - lo, c1 = c + hi > C - 1 ? C - 1 : c + hi;
				for (int64_t k = c0; k <= c1; k++) {
					double v = xd[(n * (uint64_t)C + (uint64_t)k) * S + i];
					sq += v * v;
				}
				uint64_t idx = (n * (uint64_t)C + (uint64_t)c) * S + i;
				yd[idx] = xd[idx] / pow(bias + alpha / (double)size * sq, beta);
			}
	store_f64(&ctx->outputs[0], yd);
out:
	free(xd);
	free(yd);
	return st;
}

/* ---- MeanVarianceNormalization ---- */

static enum wh_status mvn_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	double *xd = NULL, *mean = NULL, *var = NULL;
	uint64_t *grp = NULL;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	static const int64_t dflt_axes[] = {0, 2, 3};
	const int64_t *axes = dflt_axes;
	int64_t na = wh_node_attr_ints(ctx->node, "axes", &axes);
	if (na < 0) {
		axes = dflt_axes;
		na = 3;
	}
	bool red[WH_MAX_RANK] = {false};
	for (int64_t i = 0; i < na; i++) {
		int32_t a;
		if (!wh_norm_axis(axes[i], x->rank, &a))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d",
					      (long long)axes[i], x->rank);
		red[a] = true;
	}
	/* group index of every element: its position among the kept dims */
	uint64_t ngroups = 1;
	for (int32_t d = 0; d < x->rank; d++)
		if (!red[d])
			ngroups *= (uint64_t)x->dims[d];
	if ((st = alloc_like(ctx, 0, x)) || (st = load_f64(ctx, x, &xd)))
		goto out;
	mean = calloc(ngroups ? ngroups : 1, sizeof *mean);
	var = calloc(ngroups ? ngroups : 1, sizeof *var);
	grp = malloc((x->count ? x->count : 1) * sizeof *grp);
	if (!mean || !var || !grp) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
		goto out;
	}
	int64_t idx[WH_MAX_RANK] = {0};
	for (uint64_t i = 0; i < x->count; i++) {
		uint64_t g = 0;
		for (int32_t d = 0; d < x->rank; d++)
			if (!red[d])
				g = g * (uint64_t)x->dims[d] + (uint64_t)idx[d];
		grp[i] = g;
		for (int32_t d = x->rank - 1; d >= 0; d--) {
			if (++idx[d] < x->dims[d])
				break;
			idx[d] = 0;
		}
	}
	double per = ngroups ? (double)x->count / (double)ngroups : 1;
	for (uint64_t i = 0; i < x->count; i++)
		mean[grp[i]] += xd[i];
	for (uint64_t g = 0; g < ngroups; g++)
		mean[g] /= per;
	for (uint64_t i = 0; i < x->count; i++) {
		double d = xd[i] - mean[grp[i]];
		var[grp[i]] += d * d;
	}
	for (uint64_t g = 0; g < ngroups; g++)
		var[g] = sqrt(var[g] / per) + 1e-9; /* the epsilon of the op's function body */
	for (uint64_t i = 0; i < x->count; i++)
		xd[i] = (xd[i] - mean[grp[i]]) / var[grp[i]];
	store_f64(&ctx->outputs[0], xd);
out:
	free(xd);
	free(mean);
	free(var);
	free(grp);
	return st;
}

/* ---- Softmax, LogSoftmax, Hardmax ---- */

enum smax_kind { SM_SOFTMAX, SM_LOGSOFTMAX, SM_HARDMAX };

/* Each "line" is n elements at stride `inner`; line l starts at (l / inner) * n * inner +
 * l % inner. */
struct smax_job {
	enum smax_kind kind;
	const float *xf;
	float *yf;
	double *xd;
	uint64_t n, inner;
	enum wh_isa isa;
	atomic_int failed;
};

/* float32 Softmax and LogSoftmax as ONNX Runtime computes them (MlasComputeSoftmax, on a
 * contiguous line: ORT transposes a strided axis to the end): the maximum (from
 * -FLT_MAX, as MLAS starts), MLAS's exponentials and sum (wh_nn_sumexp_f32), then
 * y = e * (1 / sum), or y = (x - max) - log(sum). A NaN makes the whole line NaN. */
static void smax_line_f32(const struct smax_job *j, const float *x, float *y)
{
	uint64_t n = j->n;
	if (j->kind == SM_HARDMAX) {
		float mx = -INFINITY;
		uint64_t arg = 0;
		for (uint64_t i = 0; i < n; i++) {
			if (x[i] > mx) {
				mx = x[i];
				arg = i;
			}
		}
		for (uint64_t i = 0; i < n; i++)
			y[i] = i == arg ? 1.0f : 0.0f;
		return;
	}
	float negmax = -wh_nn_max_f32(j->isa, x, n);
	if (j->kind == SM_SOFTMAX) {
		float scale = 1.0f / wh_nn_sumexp_f32(j->isa, x, y, n, negmax);
		wh_nn_scale_f32(j->isa, y, y, n, scale);
	} else {
		float lg = logf(wh_nn_sumexp_f32(j->isa, x, NULL, n, negmax));
		for (uint64_t i = 0; i < n; i++)
			y[i] = (x[i] + negmax) - lg;
	}
}

static void smax_line_f64(const struct smax_job *j, double *x, uint64_t st)
{
	uint64_t n = j->n;
	double mx = -INFINITY;
	uint64_t arg = 0;
	for (uint64_t i = 0; i < n; i++) {
		double v = x[i * st];
		if (v > mx) {
			mx = v;
			arg = i;
		}
	}
	if (j->kind == SM_HARDMAX) {
		for (uint64_t i = 0; i < n; i++)
			x[i * st] = i == arg ? 1.0 : 0.0;
		return;
	}
	double sum = 0;
	if (j->kind == SM_SOFTMAX) {
		for (uint64_t i = 0; i < n; i++) {
			x[i * st] = exp(x[i * st] - mx);
			sum += x[i * st];
		}
		for (uint64_t i = 0; i < n; i++)
			x[i * st] /= sum;
	} else {
		for (uint64_t i = 0; i < n; i++)
			sum += exp(x[i * st] - mx);
		double ls = log(sum);
		for (uint64_t i = 0; i < n; i++)
			x[i * st] = x[i * st] - mx - ls;
	}
}

static void smax_range(void *p, size_t lo, size_t hi)
{
	struct smax_job *j = p;
	float *tx = NULL;
	if (j->xf && j->inner > 1) {
		/* a strided line is gathered, computed and scattered back */
		tx = malloc(2 * j->n * sizeof(float));
		if (!tx) {
			atomic_store(&j->failed, 1);
			return;
		}
	}
	if (j->xf && j->inner == 1 && j->kind == SM_SOFTMAX && j->isa >= WH_ISA_AVX512 && j->n <= WH_NN_SOFTMAX_SHORT) {
		/* contiguous short lines: several at once in registers */
		wh_nn_softmax_short_f32_avx512(j->xf + lo * j->n, j->yf + lo * j->n, j->n, hi - lo);
		return;
	}
	for (size_t l = lo; l < hi; l++) {
		uint64_t off = (l / j->inner) * j->n * j->inner + l % j->inner;
		if (!j->xf) {
			smax_line_f64(j, j->xd + off, j->inner);
		} else if (!tx) {
			smax_line_f32(j, j->xf + off, j->yf + off);
		} else {
			for (uint64_t i = 0; i < j->n; i++)
				tx[i] = j->xf[off + i * j->inner];
			smax_line_f32(j, tx, tx + j->n);
			for (uint64_t i = 0; i < j->n; i++)
				j->yf[off + i * j->inner] = tx[j->n + i];
		}
	}
	free(tx);
}

static enum wh_status softmax_common(struct wh_kernel_ctx *ctx, enum smax_kind kind)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	double *xd = NULL;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	if ((st = need_float(ctx, x, "input")))
		return st;
	bool coerced = ctx->opset < 13;
	int64_t a = wh_node_attr_int(ctx->node, "axis", coerced ? 1 : -1);
	int32_t axis;
	/* the coerced 2-D form allows axis == rank (an empty second dimension) */
	if (coerced && a == x->rank)
		axis = x->rank;
	else if (x->rank == 0 && (a == 0 || a == -1))
		axis = 0;
	else if (!wh_norm_axis(a, x->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, x->rank);
	uint64_t outer = prod_dims(x->dims, 0, axis);
	uint64_t n, inner;
	if (x->rank == 0) {
		n = 1;
		inner = 1;
	} else if (coerced) {
		/* opset < 13: the input is viewed as 2-D [d0*..*d(axis-1), d(axis)*..*d(rank-1)] */
		n = prod_dims(x->dims, axis, x->rank);
		inner = 1;
	} else {
		n = (uint64_t)x->dims[axis];
		inner = prod_dims(x->dims, axis + 1, x->rank);
	}
	if ((st = alloc_like(ctx, 0, x)))
		return st;
	if (x->count == 0)
		return WH_OK;
	struct smax_job job = {kind, NULL, NULL, NULL, n, inner, isa_of(ctx), 0};
	atomic_init(&job.failed, 0);
	float *xh = NULL;
	if (x->dtype == WH_DT_FLOAT) {
		job.xf = x->data;
		job.yf = ctx->outputs[0].data;
	} else if (is_half(x->dtype)) {
		if ((st = widen_half(ctx, x, &xh)))
			return st;
		job.xf = xh;
		job.yf = xh + x->count;
	} else {
		if ((st = load_f64(ctx, x, &xd)))
			return st;
		job.xd = xd;
	}
	wh_parallel_for(ctx->pool, outer * inner, wh_grain_for(NORM_ROW_COST(n)), smax_range, &job);
	if (atomic_load(&job.failed)) {
		free(xh);
		free(xd);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for a line of %llu elements",
				      (unsigned long long)n);
	}
	if (xd) {
		store_f64(&ctx->outputs[0], xd);
		free(xd);
	}
	if (xh) {
		narrow_half(&ctx->outputs[0], job.yf);
		free(xh);
	}
	return WH_OK;
}

static enum wh_status softmax_run(struct wh_kernel_ctx *ctx)
{
	return softmax_common(ctx, SM_SOFTMAX);
}

static enum wh_status logsoftmax_run(struct wh_kernel_ctx *ctx)
{
	return softmax_common(ctx, SM_LOGSOFTMAX);
}

static enum wh_status hardmax_run(struct wh_kernel_ctx *ctx)
{
	return softmax_common(ctx, SM_HARDMAX);
}

/* ---- Dropout ---- */

/* MT19937 with numpy's legacy seeding and random_sample(), so a seeded training-mode
 * Dropout draws the same mask as the ONNX reference (numpy.random.RandomState(seed)). */
struct mt19937 {
	uint32_t s[624];
	int pos;
};

static void mt_seed(struct mt19937 *m, uint32_t seed)
{
	m->s[0] = seed;
	for (int i = 1; i < 624; i++)
		m->s[i] = 1812433253u * (m->s[i - 1] ^ (m->s[i - 1] >> 30)) + (uint32_t)i;
	m->pos = 624;
}

static uint32_t mt_next(struct mt19937 *m)
{
	if (m->pos >= 624) {
		for (int i = 0; i < 624; i++) {
			uint32_t y = (m->s[i] & 0x80000000u) | (m->s[(i + 1) % 624] & 0x7fffffffu);
			m->s[i] = m->s[(i + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
		}
		m->pos = 0;
	}
	uint32_t y = m->s[m->pos++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

static double mt_double(struct mt19937 *m)
{
	uint32_t a = mt_next(m) >> 5, b = mt_next(m) >> 6;
	return ((double)a * 67108864.0 + (double)b) / 9007199254740992.0;
}

static enum wh_status dropout_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input data is missing");
	double ratio = 0.5;
	bool training = false;
	if (ctx->opset >= 12) {
		const struct wh_tensor *r = wh_kin(ctx, 1), *t = wh_kin(ctx, 2);
		if (r && r->count >= 1)
			ratio = wh_tensor_get_f64(r, 0);
		if (t && t->count >= 1)
			training = wh_tensor_get_i64(t, 0) != 0;
	} else {
		/* before opset 12 Dropout is run in inference mode, as runtimes do */
		ratio = wh_node_attr_float(ctx->node, "ratio", 0.5f);
	}
	if (training && !(ratio >= 0 && ratio < 1))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "ratio %g is outside [0, 1)", ratio);
	bool drop = training && ratio > 0;
	enum wh_dtype mask_dt = ctx->opset >= 10 ? WH_DT_BOOL : x->dtype;
	if (!drop) {
		wh_tensor_ref(&ctx->outputs[0], x);
		if (wanted(ctx, 1)) {
			if ((st = wh_tensor_alloc(&ctx->outputs[1], mask_dt, x->rank, x->dims)))
				return st;
			for (uint64_t i = 0; i < x->count; i++)
				wh_tensor_set_f64(&ctx->outputs[1], i, 1.0);
		}
		return WH_OK;
	}
	if ((st = need_float(ctx, x, "input data")))
		return st;
	struct mt19937 *mt = malloc(sizeof *mt);
	if (!mt)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	/* without a seed the draw is still reproducible: whittle's runs must be deterministic */
	mt_seed(mt, (uint32_t)wh_node_attr_int(ctx->node, "seed", 0));
	if ((st = alloc_like(ctx, 0, x)))
		goto out;
	if (wanted(ctx, 1) && (st = wh_tensor_alloc(&ctx->outputs[1], mask_dt, x->rank, x->dims)))
		goto out;
	double scale = 1.0 / (1.0 - ratio);
	float scale_f = (float)scale;
	for (uint64_t i = 0; i < x->count; i++) {
		bool keep = mt_double(mt) >= ratio;
		if (x->dtype == WH_DT_FLOAT)
			((float *)ctx->outputs[0].data)[i] = keep ? ((const float *)x->data)[i] * scale_f : 0.0f;
		else
			wh_tensor_set_f64(&ctx->outputs[0], i, keep ? wh_tensor_get_f64(x, i) * scale : 0.0);
		if (wanted(ctx, 1))
			wh_tensor_set_f64(&ctx->outputs[1], i, keep ? 1.0 : 0.0);
	}
out:
	free(mt);
	return st;
}

/* ---- pooling ---- */

enum pool_kind { PK_MAX, PK_AVG, PK_LP };

struct pool_geo {
	int32_t ns;
	int64_t in[WH_MAX_RANK], out[WH_MAX_RANK], k[WH_MAX_RANK], s[WH_MAX_RANK], d[WH_MAX_RANK];
	int64_t pb[WH_MAX_RANK], pe[WH_MAX_RANK];
	uint64_t planes, in_sp, out_sp;
};

static enum wh_status read_spatial_ints(const struct wh_kernel_ctx *ctx, const char *name, int32_t n,
					int64_t dflt, bool positive, int64_t *out)
{
	const int64_t *v;
	int64_t cnt = wh_node_attr_ints(ctx->node, name, &v);
	if (cnt < 0) {
		for (int32_t i = 0; i < n; i++)
			out[i] = dflt;
		return WH_OK;
	}
	if (cnt != n)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s has %lld values, expected %d", name,
				      (long long)cnt, n);
	for (int32_t i = 0; i < n; i++) {
		if (positive ? v[i] <= 0 : v[i] < 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s has value %lld, expected %s", name,
					      (long long)v[i], positive ? "> 0" : ">= 0");
		out[i] = v[i];
	}
	return WH_OK;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
	return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

static enum wh_status pool_geometry(const struct wh_kernel_ctx *ctx, const struct wh_tensor *x, bool allow_ceil,
				    bool allow_dil, struct pool_geo *g)
{
	enum wh_status st;
	char buf[32];
	if (x->rank < 3)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has shape %s, expected N x C x D1 x ...",
				      wh_shape_str(x->dims, x->rank, buf, sizeof buf));
	memset(g, 0, sizeof *g);
	g->ns = x->rank - 2;
	const int64_t *ks;
	if (wh_node_attr_ints(ctx->node, "kernel_shape", &ks) != g->ns)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute kernel_shape must have %d values", g->ns);
	if ((st = read_spatial_ints(ctx, "kernel_shape", g->ns, 1, true, g->k)) ||
	    (st = read_spatial_ints(ctx, "strides", g->ns, 1, true, g->s)))
		return st;
	if (allow_dil) {
		if ((st = read_spatial_ints(ctx, "dilations", g->ns, 1, true, g->d)))
			return st;
	} else {
		for (int32_t i = 0; i < g->ns; i++)
			g->d[i] = 1;
	}
	int64_t pads[2 * WH_MAX_RANK];
	if ((st = read_spatial_ints(ctx, "pads", 2 * g->ns, 0, false, pads)))
		return st;
	char ap[32];
	const char *auto_pad = wh_node_attr_string(ctx->node, "auto_pad", "NOTSET", ap, sizeof ap);
	bool ceil_mode = allow_ceil && wh_node_attr_int(ctx->node, "ceil_mode", 0) != 0;
	g->planes = (uint64_t)x->dims[0] * (uint64_t)x->dims[1];
	g->in_sp = g->out_sp = 1;
	for (int32_t i = 0; i < g->ns; i++) {
		int64_t in = x->dims[2 + i], k = g->k[i], s = g->s[i];
		int64_t dk;
		if (!wh_mul_i64(k - 1, g->d[i], &dk) || !wh_add_i64(dk, 1, &dk))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "kernel extent overflows");
		int64_t out, pb = pads[i], pe = pads[g->ns + i];
		if (!strcmp(auto_pad, "SAME_UPPER") || !strcmp(auto_pad, "SAME_LOWER")) {
			out = ceil_div(in, s);
			int64_t total;
			if (!wh_add_i64((out - 1) * s, dk, &total))
				return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "kernel extent of spatial dim %d overflows", i);
			total -= in;
			if (total < 0)
				total = 0;
			pb = !strcmp(auto_pad, "SAME_UPPER") ? total / 2 : total - total / 2;
			pe = total - pb;
		} else if (!strcmp(auto_pad, "VALID")) {
			pb = pe = 0;
			if (in < dk)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "kernel extent %lld exceeds input size %lld",
						      (long long)dk, (long long)in);
			out = (in - dk) / s + 1;
		} else if (!strcmp(auto_pad, "NOTSET") || !*auto_pad) {
			int64_t span;
			if (!wh_add_i64(in, pb, &span) || !wh_add_i64(span, pe, &span))
				return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "padded size of spatial dim %d overflows", i);
			span -= dk;
			if (span < 0)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE,
						      "kernel extent %lld exceeds padded input size %lld",
						      (long long)dk, (long long)(in + pb + pe));
			out = (ceil_mode ? ceil_div(span, s) : span / s) + 1;
			/* a last window that would start in the end padding is dropped */
			if (ceil_mode && (out - 1) * s >= in + pb)
				out--;
		} else {
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, "
					      "SAME_LOWER, VALID", auto_pad);
		}
		g->in[i] = in;
		g->out[i] = out;
		g->pb[i] = pb;
		g->pe[i] = pe;
		g->in_sp *= (uint64_t)in;
		g->out_sp *= (uint64_t)out;
	}
	return WH_OK;
}

struct pool_job {
	enum pool_kind kind;
	const struct pool_geo *g;
	const struct wh_tensor *x;
	struct wh_tensor *y, *idx; /* idx: MaxPool indices or NULL */
	bool count_include_pad;
	bool col_major;
	double p;
	enum wh_isa isa;
	/* per spatial dim i and output coordinate o: taps[i][3o..3o+2] = the first and past-the-
	 * end valid kernel tap, and the taps inside the padded extent (pool_taps) */
	const int64_t *taps[WH_MAX_RANK];
};

/* Valid kernel taps [lo, hi) of output coordinate o in spatial dim i, and the taps inside
 * the padded extent (for count_include_pad). */
static void pool_taps(const struct pool_geo *g, int32_t i, int64_t o, int64_t *lo, int64_t *hi, int64_t *padded)
{
	int64_t start = o * g->s[i] - g->pb[i], d = g->d[i];
	int64_t l = start < 0 ? ceil_div(-start, d) : 0;
	int64_t h = ceil_div(g->in[i] - start, d);
	if (h > g->k[i])
		h = g->k[i];
	if (h < l)
		h = l;
	int64_t p = ceil_div(g->in[i] + g->pe[i] - start, d);
	if (p > g->k[i])
		p = g->k[i];
	if (p < 0)
		p = 0;
	*lo = l;
	*hi = h;
	*padded = p;
}

static double pool_finish(const struct pool_job *j, double acc, double nvalid, double npadded)
{
	switch (j->kind) {
	case PK_AVG: return acc / (j->count_include_pad ? npadded : nvalid);
	case PK_LP: return j->p == 2 ? sqrt(acc) : (j->p == 1 ? acc : pow(acc, 1.0 / j->p));
	default: return acc;
	}
}

static double lp_term(double v, double p)
{
	v = fabs(v);
	return p == 2 ? v * v : (p == 1 ? v : pow(v, p));
}

/* 2-D float32 MaxPool without indices: the outputs whose window lies inside the row go
 * through wh_nn_maxpool_row_f32, the others one by one; both take the taps in the generic
 * path's order (row-major over the window), so the bits are the same.
 * On AVX2 and AVX-512 the inner columns go in two passes: the horizontal maxima of every
 * input row (one row kernel call with nrows 1: over the kw taps, first wins), then for each
 * output row the vertical maximum over its input rows' horizontal maxima (nrows rows, one
 * tap, stride 1). Row-major order over the window is lexicographic in (row, tap), and the
 * first-wins maximum of a lexicographic sequence is the first-wins maximum over the rows of
 * each row's first-wins maximum (NaN skipped at both levels, an all-NaN row gives -inf which
 * never replaces anything), so the bits are those of the one-pass scan; an input row read by
 * several output rows (kh > sh) is scanned once. */
/* The whole-plane AVX-512 kernel (wh_nn_maxpool_plane_f32_avx512: both passes in one call,
 * taps outside the plane masked, 0.31 -> 0.16 ms on resnet18_s's 64 planes of 112x112
 * with one thread, where the call a row cost more than the maxima): its geometry, or
 * false where it does not apply (another ISA, a column stride above 2, kernels above
 * WH_NN_POOL2D_MAXK, rows of more than 1024 outputs). */
static bool maxpool_plane_geo(const struct pool_job *j, struct wh_nn_pool2d *p)
{
	const struct pool_geo *g = j->g;
	if (j->kind != PK_MAX || j->idx || g->ns != 2 || j->isa < WH_ISA_AVX512 || j->x->dtype != WH_DT_FLOAT)
		return false;
	*p = (struct wh_nn_pool2d){.H = g->in[0], .W = g->in[1], .OH = g->out[0], .OW = g->out[1],
				   .kh = g->k[0], .kw = g->k[1], .sh = g->s[0], .sw = g->s[1],
				   .dh = g->d[0], .dw = g->d[1], .ph = g->pb[0], .pw = g->pb[1]};
	return wh_nn_maxpool_plane_avx512_fits(p);
}

/* The two-pass path's scratch: one row of horizontal maxima per input row, that many floats
 * per plane (0: the one-pass path). */
static size_t maxpool_hmax_floats(const struct pool_job *j)
{
	const struct pool_geo *g = j->g;
	bool two = j->kind == PK_MAX && !j->idx && g->ns == 2 && j->isa >= WH_ISA_AVX2 && g->k[0] <= 64 &&
		   j->x->dtype == WH_DT_FLOAT;
	if (!two)
		return 0;
	size_t rows = (size_t)(g->in[0] + g->s[0] - 1) * (size_t)g->out[1];
	struct wh_nn_pool2d p2;
	if (maxpool_plane_geo(j, &p2)) {
		size_t pl = wh_nn_maxpool_plane_scratch(&p2);
		rows = pl > rows ? pl : rows;
	}
	return rows;
}

/* Where the two-pass path keeps input row h's horizontal maxima, in rows of its scratch:
 * grouped by h modulo the row stride s (nph rows per group), so that tap a of consecutive
 * output rows reads consecutive scratch rows. */
static size_t maxpool_hpos(int64_t h, int64_t s, int64_t nph)
{
	return (size_t)(h % s * nph + h / s);
}

/* hmax: NULL, or maxpool_hmax_floats(j) floats of scratch for the two-pass path */
static void maxpool2d_f32_plane(const struct pool_job *j, const float *x, float *y, float *hmax)
{
	const struct pool_geo *g = j->g;
	int64_t W = g->in[1], OW = g->out[1];
	/* [wlo, whi): the output columns with every tap inside the row */
	int64_t wlo = 0, whi = OW;
	while (wlo < OW && (j->taps[1][3 * wlo] != 0 || j->taps[1][3 * wlo + 1] != g->k[1]))
		wlo++;
	while (whi > wlo && (j->taps[1][3 * (whi - 1)] != 0 || j->taps[1][3 * (whi - 1) + 1] != g->k[1]))
		whi--;
	int64_t w0 = wlo * g->s[1] - g->pb[1];
	size_t ni = (size_t)(whi - wlo);
	int64_t sh = g->s[0], nph = (g->in[0] + sh - 1) / sh;
	if (hmax && ni > 0)
		for (int64_t h = 0; h < g->in[0]; h++) {
			const float *r = x + h * W + w0;
			wh_nn_maxpool_row_f32(j->isa, &r, 1, hmax + maxpool_hpos(h, sh, nph) * ni, ni, (size_t)g->k[1],
					      (size_t)g->s[1], (size_t)g->d[1]);
		}
	/* [hlo, hhi): the output rows with every tap inside the plane; when the output rows
	 * have no edge columns as well, their vertical pass is one call: tap a of output row oh
	 * reads scratch row maxpool_hpos(hlo * sh - pb + a * dh) + (oh - hlo) */
	int64_t hlo = 0, hhi = 0;
	if (hmax && ni > 0 && (int64_t)ni == OW) {
		const int64_t *th = j->taps[0];
		hhi = g->out[0];
		while (hlo < hhi && (th[3 * hlo] != 0 || th[3 * hlo + 1] != g->k[0]))
			hlo++;
		while (hhi > hlo && (th[3 * (hhi - 1)] != 0 || th[3 * (hhi - 1) + 1] != g->k[0]))
			hhi--;
		if (hhi > hlo) {
			const float *r0[64];
			for (int64_t a = 0; a < g->k[0]; a++)
				r0[a] = hmax + maxpool_hpos(hlo * sh - g->pb[0] + a * g->d[0], sh, nph) * ni;
			wh_nn_maxpool_row_f32(j->isa, r0, (size_t)g->k[0], y + hlo * OW, (size_t)(hhi - hlo) * ni, 1, 1, 1);
		}
	}
	const float *rows[64];
	for (int64_t oh = 0; oh < g->out[0]; oh++) {
		if (oh == hlo && hhi > hlo) {
			oh = hhi - 1;
			continue;
		}
		const int64_t *th = j->taps[0] + 3 * oh;
		int64_t h0 = oh * g->s[0] - g->pb[0];
		size_t nr = 0;
		for (int64_t a = th[0]; a < th[1]; a++)
			rows[nr++] = x + (h0 + a * g->d[0]) * W;
		float *yr = y + oh * OW;
		for (int64_t ow = 0; ow < OW; ow++) {
			if (ow == wlo && ni > 0) {
				const float *r0[64];
				if (hmax) {
					for (size_t r = 0; r < nr; r++)
						r0[r] = hmax + maxpool_hpos(h0 + (th[0] + (int64_t)r) * g->d[0], sh, nph) * ni;
					wh_nn_maxpool_row_f32(j->isa, r0, nr, yr + wlo, ni, 1, 1, 1);
				} else {
					for (size_t r = 0; r < nr; r++)
						r0[r] = rows[r] + w0;
					wh_nn_maxpool_row_f32(j->isa, r0, nr, yr + wlo, ni, (size_t)g->k[1],
							      (size_t)g->s[1], (size_t)g->d[1]);
				}
				ow = whi - 1;
				continue;
			}
			/* NaN is skipped, as in ONNX Runtime; an empty window gives -inf */
			const int64_t *tw = j->taps[1] + 3 * ow;
			int64_t c0 = ow * g->s[1] - g->pb[1];
			float best = -INFINITY;
			for (size_t r = 0; r < nr; r++)
				for (int64_t b = tw[0]; b < tw[1]; b++) {
					float v = rows[r][c0 + b * g->d[1]];
					best = v > best ? v : best;
				}
			yr[ow] = best;
		}
	}
}

/* 2-D float32 path, same tap order as the generic path (row-major over the window). */
static void pool2d_f32_plane(const struct pool_job *j, uint64_t pl, float *hmax)
{
	const struct pool_geo *g = j->g;
	const float *x = (const float *)j->x->data + pl * g->in_sp;
	float *y = (float *)j->y->data + pl * g->out_sp;
	int64_t *ix = j->idx ? (int64_t *)j->idx->data + pl * g->out_sp : NULL;
	int64_t W = g->in[1], H = g->in[0];
	struct wh_nn_pool2d p2;
	if (hmax && maxpool_plane_geo(j, &p2)) {
		wh_nn_maxpool_plane_f32_avx512(&p2, x, y, hmax);
		return;
	}
	if (j->kind == PK_MAX && !ix && g->k[0] <= 64) {
		maxpool2d_f32_plane(j, x, y, hmax);
		return;
	}
	for (int64_t oh = 0; oh < g->out[0]; oh++) {
		const int64_t *th = j->taps[0] + 3 * oh;
		int64_t hl = th[0], hh = th[1], hp = th[2];
		int64_t h0 = oh * g->s[0] - g->pb[0];
		for (int64_t ow = 0; ow < g->out[1]; ow++) {
			const int64_t *tw = j->taps[1] + 3 * ow;
			int64_t wl = tw[0], wh = tw[1], wp = tw[2];
			int64_t w0 = ow * g->s[1] - g->pb[1];
			uint64_t o = (uint64_t)(oh * g->out[1] + ow);
			if (j->kind == PK_MAX && !ix) {
				/* NaN is skipped, as in ONNX Runtime; an empty window gives -inf */
				float best = -INFINITY;
				for (int64_t a = hl; a < hh; a++) {
					const float *row = x + (h0 + a * g->d[0]) * W + w0;
					for (int64_t b = wl; b < wh; b++) {
						float v = row[b * g->d[1]];
						best = v > best ? v : best;
					}
				}
				y[o] = best;
			} else if (j->kind == PK_MAX) {
				float best = -INFINITY;
				int64_t bi = -1;
				for (int64_t a = hl; a < hh; a++) {
					int64_t h = h0 + a * g->d[0];
					const float *row = x + h * W;
					for (int64_t b = wl; b < wh; b++) {
						int64_t w = w0 + b * g->d[1];
						if (row[w] > best) {
							best = row[w];
							bi = h * W + w;
						}
					}
				}
				y[o] = best;
				if (ix) {
					int64_t h = bi < 0 ? 0 : bi / W, w = bi < 0 ? 0 : bi % W;
					int64_t flat = j->col_major ? h + w * H : h * W + w;
					ix[o] = (int64_t)(pl * g->in_sp) + flat;
				}
			} else {
				double acc = 0;
				for (int64_t a = hl; a < hh; a++) {
					const float *row = x + (h0 + a * g->d[0]) * W;
					for (int64_t b = wl; b < wh; b++) {
						double v = row[w0 + b * g->d[1]];
						acc += j->kind == PK_LP ? lp_term(v, j->p) : v;
					}
				}
				double nv = (double)((hh - hl) * (wh - wl)), np = (double)(hp * wp);
				y[o] = (float)pool_finish(j, acc, nv, np);
			}
		}
	}
}

/* Any spatial rank and dtype, through double. */
static void pool_generic_plane(const struct pool_job *j, uint64_t pl)
{
	const struct pool_geo *g = j->g;
	int32_t ns = g->ns;
	int64_t o[WH_MAX_RANK] = {0};
	int64_t lo[WH_MAX_RANK], hi[WH_MAX_RANK], st[WH_MAX_RANK];
	st[ns - 1] = 1;
	for (int32_t i = ns - 2; i >= 0; i--)
		st[i] = st[i + 1] * g->in[i + 1];
	uint64_t base = pl * g->in_sp;
	for (uint64_t oi = 0; oi < g->out_sp; oi++) {
		double nv = 1, np = 1;
		bool empty = false;
		for (int32_t i = 0; i < ns; i++) {
			const int64_t *tp = j->taps[i] + 3 * o[i];
			int64_t pd = tp[2];
			lo[i] = tp[0];
			hi[i] = tp[1];
			nv *= (double)(hi[i] - lo[i]);
			np *= (double)pd;
			empty |= hi[i] <= lo[i];
		}
		double acc = j->kind == PK_MAX ? -INFINITY : 0;
		int64_t best_pos[WH_MAX_RANK] = {0};
		bool found = false;
		if (!empty) {
			int64_t t[WH_MAX_RANK];
			for (int32_t i = 0; i < ns; i++)
				t[i] = lo[i];
			for (;;) {
				uint64_t off = 0;
				for (int32_t i = 0; i < ns; i++)
					off += (uint64_t)((o[i] * g->s[i] - g->pb[i] + t[i] * g->d[i]) * st[i]);
				double v = wh_tensor_get_f64(j->x, base + off);
				if (j->kind == PK_MAX) {
					if (v > acc || (!found && !isnan(v))) {
						acc = v;
						found = true;
						for (int32_t i = 0; i < ns; i++)
							best_pos[i] = o[i] * g->s[i] - g->pb[i] + t[i] * g->d[i];
					}
				} else {
					acc += j->kind == PK_LP ? lp_term(v, j->p) : v;
				}
				int32_t i = ns - 1;
				for (; i >= 0; i--) {
					if (++t[i] < hi[i])
						break;
					t[i] = lo[i];
				}
				if (i < 0)
					break;
			}
		}
		wh_tensor_set_f64(j->y, pl * g->out_sp + oi, pool_finish(j, acc, nv, np));
		if (j->idx) {
			int64_t flat = 0;
			if (j->col_major) {
				for (int32_t i = ns - 1; i >= 0; i--)
					flat = flat * g->in[i] + best_pos[i];
			} else {
				for (int32_t i = 0; i < ns; i++)
					flat = flat * g->in[i] + best_pos[i];
			}
			((int64_t *)j->idx->data)[pl * g->out_sp + oi] = (int64_t)base + flat;
		}
		for (int32_t i = ns - 1; i >= 0; i--) {
			if (++o[i] < g->out[i])
				break;
			o[i] = 0;
		}
	}
}

/* float32 AveragePool without dilation in ONNX Runtime's order (MlasPool), 1 to 3 spatial
 * dims. MLAS picks one of three kernels: a window covering the whole unpadded input with
 * unit strides is a global pooling (wh_nn_sum4_f32); 2-D and 3-D pooling with a last
 * stride of at most 2, windows of at most 32 and rows that fit MLAS's buffer first sums
 * each input column over the window's valid rows (2-D: from the first row; 3-D: from
 * zero, planes then rows), then the window's columns left to right from the first one,
 * padding columns counting as zeros; anything else sums the valid inputs row-major from
 * zero. The sum is divided in float32 by the divisor ONNX defines. */
static bool avg_ort_vector(const struct pool_geo *g)
{
	int32_t last = g->ns - 1;
	if (g->ns < 2 || g->s[last] > 2)
		return false;
	for (int32_t i = 0; i < g->ns; i++)
		if (g->k[i] > 32)
			return false;
	return g->pb[last] + g->pe[last] + g->in[last] <= 2048 - 3;
}

/* The 2-D case of avg_ort_vector's order, row by row: each output row's column sums over
 * its valid rows for the whole input row at once (a loop the compiler vectorizes; each
 * column summed alone, rows in order), zero-padded, then each output's window of column
 * sums left to right: the steps of the per-output loop below, so the same bits, without
 * its index arithmetic per input (densenet121_s's 2x2 transitions: 0.77 -> 0.1 ms). */
#define WH_AVG_ROW_MAX 4096
static void avgpool2d_f32_ort_rows(const struct pool_job *j, const float *x, float *y)
{
	const struct pool_geo *g = j->g;
	int64_t W = g->in[1], OW = g->out[1], k1 = g->k[1], s1 = g->s[1], pb1 = g->pb[1];
	float cp[WH_AVG_ROW_MAX];
	/* columns -pb1 .. (OW - 1) s1 + k1 - 1 - pb1, at cp[col + pb1]; zeros outside the row */
	int64_t span = (OW - 1) * s1 + k1;
	for (int64_t c = 0; c < span; c++)
		cp[c] = 0.0f;
	float *row = cp + pb1;
	for (int64_t oh = 0; oh < g->out[0]; oh++) {
		const int64_t *t0 = j->taps[0] + 3 * oh;
		int64_t a = oh * g->s[0] - g->pb[0] + t0[0], rows = t0[1] - t0[0];
		if (rows > 0) {
			const float *xa = x + a * W;
			for (int64_t w = 0; w < W; w++)
				row[w] = xa[w];
			for (int64_t r = 1; r < rows; r++) {
				const float *xr = xa + r * W;
				for (int64_t w = 0; w < W; w++)
					row[w] = row[w] + xr[w];
			}
		} else {
			for (int64_t w = 0; w < W; w++)
				row[w] = 0.0f;
		}
		float *yr = y + oh * OW;
		for (int64_t ow = 0; ow < OW; ow++) {
			const float *c = cp + ow * s1;
			float acc = c[0];
			for (int64_t t = 1; t < k1; t++)
				acc = acc + c[t];
			const int64_t *t1 = j->taps[1] + 3 * ow;
			double nv = (double)rows * (double)(t1[1] - t1[0]), np = (double)t0[2] * (double)t1[2];
			yr[ow] = acc / (float)(j->count_include_pad ? np : nv);
		}
	}
}

/* whether avgpool2d_f32_ort_rows's row of column sums fits its buffer */
static bool pb_fits_row(const struct pool_geo *g)
{
	int64_t span = (g->out[1] - 1) * g->s[1] + g->k[1];
	return span <= WH_AVG_ROW_MAX && g->pb[1] + g->in[1] <= WH_AVG_ROW_MAX;
}

static void avgpool_f32_ort_plane(const struct pool_job *j, uint64_t pl)
{
	const struct pool_geo *g = j->g;
	int32_t ns = g->ns, last = ns - 1;
	const float *x = (const float *)j->x->data + pl * g->in_sp;
	float *y = (float *)j->y->data + pl * g->out_sp;
	bool global = true;
	for (int32_t i = 0; i < ns; i++)
		global &= g->k[i] == g->in[i] && g->s[i] == 1 && !g->pb[i] && !g->pe[i];
	if (global) {
		y[0] = wh_nn_sum4_f32(x, g->in_sp) / (float)g->in_sp;
		return;
	}
	bool vec = avg_ort_vector(g);
	if (vec && ns == 2 && pb_fits_row(g)) {
		avgpool2d_f32_ort_rows(j, x, y);
		return;
	}
	int64_t st[WH_MAX_RANK];
	st[last] = 1;
	for (int32_t i = last - 1; i >= 0; i--)
		st[i] = st[i + 1] * g->in[i + 1];
	int64_t o[WH_MAX_RANK] = {0};
	for (uint64_t oi = 0; oi < g->out_sp; oi++) {
		/* valid input ranges [a, b) per dim */
		int64_t a[WH_MAX_RANK], b[WH_MAX_RANK];
		double nv = 1, np = 1;
		for (int32_t i = 0; i < ns; i++) {
			const int64_t *tp = j->taps[i] + 3 * o[i];
			int64_t start = o[i] * g->s[i] - g->pb[i];
			a[i] = start + tp[0];
			b[i] = start + tp[1];
			nv *= (double)(tp[1] - tp[0]);
			np *= (double)tp[2];
		}
		float acc = 0.0f;
		if (vec) {
			int64_t w0 = o[last] * g->s[last] - g->pb[last];
			int64_t rows = 1;
			for (int32_t i = 0; i < last; i++)
				rows *= b[i] - a[i];
			for (int64_t t = 0; t < g->k[last]; t++) {
				int64_t w = w0 + t;
				float col = 0.0f;
				if (w >= 0 && w < g->in[last] && rows > 0) {
					int64_t idx[WH_MAX_RANK];
					for (int32_t i = 0; i < last; i++)
						idx[i] = a[i];
					for (int64_t r = 0; r < rows; r++) {
						int64_t off = w;
						for (int32_t i = 0; i < last; i++)
							off += idx[i] * st[i];
						col = r == 0 && ns == 2 ? x[off] : col + x[off];
						for (int32_t i = last - 1; i >= 0; i--) {
							if (++idx[i] < b[i])
								break;
							idx[i] = a[i];
						}
					}
				}
				acc = t == 0 ? col : acc + col;
			}
		} else if (nv > 0) {
			int64_t idx[WH_MAX_RANK];
			for (int32_t i = 0; i < ns; i++)
				idx[i] = a[i];
			for (;;) {
				int64_t off = 0;
				for (int32_t i = 0; i < ns; i++)
					off += idx[i] * st[i];
				acc = acc + x[off];
				int32_t i = last;
				for (; i >= 0; i--) {
					if (++idx[i] < b[i])
						break;
					idx[i] = a[i];
				}
				if (i < 0)
					break;
			}
		}
		y[oi] = acc / (float)(j->count_include_pad ? np : nv);
		for (int32_t i = last; i >= 0; i--) {
			if (++o[i] < g->out[i])
				break;
			o[i] = 0;
		}
	}
}

/* 2-D 8-bit MaxPool without indices: a plane a call (nn-internal.h), the AVX-512 or AVX2
 * variant where the geometry fits, else the scalar one (the same bytes). */
static bool maxpool_q8_geo(const struct pool_job *j, struct wh_nn_pool2d *p)
{
	const struct pool_geo *g = j->g;
	if (j->kind != PK_MAX || j->idx || g->ns != 2 || (j->x->dtype != WH_DT_UINT8 && j->x->dtype != WH_DT_INT8))
		return false;
	*p = (struct wh_nn_pool2d){.H = g->in[0], .W = g->in[1], .OH = g->out[0], .OW = g->out[1],
				   .kh = g->k[0], .kw = g->k[1], .sh = g->s[0], .sw = g->s[1],
				   .dh = g->d[0], .dw = g->d[1], .ph = g->pb[0], .pw = g->pb[1]};
	return true;
}

static void maxpool_q8_range(const struct pool_job *j, const struct wh_nn_pool2d *p2, size_t lo, size_t hi)
{
	const struct pool_geo *g = j->g;
	bool s8 = j->x->dtype == WH_DT_INT8;
	bool simd = j->isa >= WH_ISA_AVX2 && wh_nn_maxpool_plane_q8_fits(p2);
	uint8_t *scratch = simd ? malloc(wh_nn_maxpool_plane_q8_scratch(p2)) : NULL;
	for (size_t pl = lo; pl < hi; pl++) {
		const uint8_t *x = (const uint8_t *)j->x->data + pl * g->in_sp;
		uint8_t *y = (uint8_t *)j->y->data + pl * g->out_sp;
		if (scratch && j->isa >= WH_ISA_AVX512)
			wh_nn_maxpool_plane_q8_avx512(p2, x, y, s8, scratch);
		else if (scratch)
			wh_nn_maxpool_plane_q8_avx2(p2, x, y, s8, scratch);
		else
			wh_nn_maxpool_plane_q8_scalar(p2, x, y, s8);
	}
	free(scratch);
}

static void pool_range(void *p, size_t lo, size_t hi)
{
	const struct pool_job *j = p;
	struct wh_nn_pool2d q8;
	if (maxpool_q8_geo(j, &q8)) {
		maxpool_q8_range(j, &q8, lo, hi);
		return;
	}
	bool ort_avg = j->kind == PK_AVG && j->x->dtype == WH_DT_FLOAT && j->g->ns <= 3;
	for (int32_t i = 0; ort_avg && i < j->g->ns; i++)
		ort_avg = j->g->d[i] == 1;
	/* without the scratch, the same taps read in place */
	size_t nh = maxpool_hmax_floats(j);
	float *hmax = nh ? malloc(nh * sizeof(float)) : NULL;
	for (size_t pl = lo; pl < hi; pl++) {
		if (ort_avg)
			avgpool_f32_ort_plane(j, pl);
		else if (j->g->ns == 2 && j->x->dtype == WH_DT_FLOAT)
			pool2d_f32_plane(j, pl, hmax);
		else
			pool_generic_plane(j, pl);
	}
	free(hmax);
}

static enum wh_status lp_order(const struct wh_kernel_ctx *ctx, double *p_out)
{
	const struct wh_attr *a = wh_node_attr(ctx->node, "p");
	double p = 2;
	if (a && a->type == WH_ATTR_INT)
		p = (double)a->i;
	else if (a && a->type == WH_ATTR_FLOAT)
		p = a->f; /* LpPool-1 and GlobalLpPool-1 had a float p */
	if (!(p > 0))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute p is %g, expected > 0", p);
	*p_out = p;
	return WH_OK;
}

static enum wh_status pool_common(struct wh_kernel_ctx *ctx, enum pool_kind kind)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	bool int_ok = kind == PK_MAX && (x->dtype == WH_DT_INT8 || x->dtype == WH_DT_UINT8);
	if (!int_ok && (st = need_float(ctx, x, "input X")))
		return st;
	bool allow_ceil = kind == PK_LP ? ctx->opset >= 18 : ctx->opset >= 10;
	bool allow_dil = kind == PK_MAX ? ctx->opset >= 10 : (kind == PK_AVG ? ctx->opset >= 19 : ctx->opset >= 18);
	struct pool_geo g;
	if ((st = pool_geometry(ctx, x, allow_ceil, allow_dil, &g)))
		return st;
	struct pool_job job = {0};
	job.kind = kind;
	job.g = &g;
	job.x = x;
	job.isa = isa_of(ctx);
	job.count_include_pad = kind == PK_AVG && wh_node_attr_int(ctx->node, "count_include_pad", 0) != 0;
	job.col_major = kind == PK_MAX && wh_node_attr_int(ctx->node, "storage_order", 0) != 0;
	if (kind == PK_LP && (st = lp_order(ctx, &job.p)))
		return st;
	int64_t od[WH_MAX_RANK];
	od[0] = x->dims[0];
	od[1] = x->dims[1];
	for (int32_t i = 0; i < g.ns; i++)
		od[2 + i] = g.out[i];
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, od)))
		return st;
	job.y = &ctx->outputs[0];
	if (kind == PK_MAX && wanted(ctx, 1)) {
		if ((st = wh_tensor_alloc(&ctx->outputs[1], WH_DT_INT64, x->rank, od)))
			return st;
		job.idx = &ctx->outputs[1];
	}
	uint64_t ksz = 1, n_taps = 0;
	for (int32_t i = 0; i < g.ns; i++) {
		ksz *= (uint64_t)g.k[i];
		n_taps += 3 * (uint64_t)g.out[i];
	}
	if (g.out_sp == 0)
		return WH_OK;
	int64_t *taps = malloc(n_taps * sizeof *taps);
	if (!taps)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	int64_t *t = taps;
	for (int32_t i = 0; i < g.ns; i++) {
		job.taps[i] = t;
		for (int64_t o = 0; o < g.out[i]; o++, t += 3)
			pool_taps(&g, i, o, &t[0], &t[1], &t[2]);
	}
	wh_parallel_for(ctx->pool, g.planes, wh_grain_for(g.out_sp * ksz), pool_range, &job);
	free(taps);
	return WH_OK;
}

static enum wh_status maxpool_run(struct wh_kernel_ctx *ctx)
{
	return pool_common(ctx, PK_MAX);
}

static enum wh_status avgpool_run(struct wh_kernel_ctx *ctx)
{
	return pool_common(ctx, PK_AVG);
}

static enum wh_status lppool_run(struct wh_kernel_ctx *ctx)
{
	return pool_common(ctx, PK_LP);
}

/* ---- global pooling ---- */

struct gpool_job {
	enum pool_kind kind;
	const struct wh_tensor *x;
	struct wh_tensor *y;
	uint64_t S;
	double p;
	enum wh_isa isa;
};

static void gpool_range(void *p, size_t lo, size_t hi)
{
	const struct gpool_job *j = p;
	for (size_t pl = lo; pl < hi; pl++) {
		uint64_t base = pl * j->S;
		double r;
		if (j->x->dtype == WH_DT_FLOAT) {
			const float *x = (const float *)j->x->data + base;
			if (j->kind == PK_AVG) {
				/* ONNX Runtime's order and float32 division (MLAS's global pooling) */
				((float *)j->y->data)[pl] = wh_nn_sum4_f32(x, j->S) / (float)j->S;
				continue;
			} else if (j->kind == PK_MAX) {
				float m = -INFINITY;
				/* NaN is skipped, as in MaxPool */
				for (uint64_t i = 0; i < j->S; i++)
					m = x[i] > m ? x[i] : m;
				r = m;
			} else {
				double s = 0;
				for (uint64_t i = 0; i < j->S; i++)
					s += lp_term(x[i], j->p);
				r = pow(s, 1.0 / j->p);
			}
			((float *)j->y->data)[pl] = (float)r;
			continue;
		}
		double acc = j->kind == PK_MAX ? -INFINITY : 0;
		for (uint64_t i = 0; i < j->S; i++) {
			double v = wh_tensor_get_f64(j->x, base + i);
			if (j->kind == PK_MAX)
				acc = v > acc ? v : acc;
			else
				acc += j->kind == PK_LP ? lp_term(v, j->p) : v;
		}
		if (j->kind == PK_AVG)
			acc /= (double)j->S;
		else if (j->kind == PK_LP)
			acc = pow(acc, 1.0 / j->p);
		wh_tensor_set_f64(j->y, pl, acc);
	}
}

static enum wh_status global_pool_common(struct wh_kernel_ctx *ctx, enum pool_kind kind)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	char buf[32];
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	if ((st = need_float(ctx, x, "input X")))
		return st;
	if (x->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has shape %s, expected N x C x D1 x ...",
				      wh_shape_str(x->dims, x->rank, buf, sizeof buf));
	struct gpool_job job = {kind, x, NULL, prod_dims(x->dims, 2, x->rank), 2, isa_of(ctx)};
	if (kind == PK_LP && (st = lp_order(ctx, &job.p)))
		return st;
	int64_t od[WH_MAX_RANK];
	for (int32_t i = 0; i < x->rank; i++)
		od[i] = i < 2 ? x->dims[i] : 1;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, od)))
		return st;
	job.y = &ctx->outputs[0];
	uint64_t planes = (uint64_t)x->dims[0] * (uint64_t)x->dims[1];
	wh_parallel_for(ctx->pool, planes, wh_grain_for(job.S), gpool_range, &job);
	return WH_OK;
}

static enum wh_status gavgpool_run(struct wh_kernel_ctx *ctx)
{
	return global_pool_common(ctx, PK_AVG);
}

static enum wh_status gmaxpool_run(struct wh_kernel_ctx *ctx)
{
	return global_pool_common(ctx, PK_MAX);
}

static enum wh_status glppool_run(struct wh_kernel_ctx *ctx)
{
	return global_pool_common(ctx, PK_LP);
}

/* ---- MaxRoiPool ---- */

/* Rounded roi coordinate; coordinates far outside any image are clamped (the window is
 * clipped to the image anyway), NaN becomes 0, so the conversion is always defined. */
static int64_t roi_coord(double v)
{
	v = round(v);
	if (!(v == v))
		return 0;
	if (v > 4.5e15)
		return (int64_t)4.5e15;
	if (v < -4.5e15)
		return (int64_t)-4.5e15;
	return (int64_t)v;
}

static enum wh_status maxroipool_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *rois = wh_kin(ctx, 1);
	enum wh_status st;
	char buf[32];
	if (!x || !rois)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs X and rois are required");
	if ((st = need_float(ctx, x, "input X")) || (st = need_float(ctx, rois, "input rois")))
		return st;
	if (x->rank != 4)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has shape %s, expected N x C x H x W",
				      wh_shape_str(x->dims, x->rank, buf, sizeof buf));
	if (rois->rank != 2 || rois->dims[1] != 5)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input rois has shape %s, expected num_rois x 5",
				      wh_shape_str(rois->dims, rois->rank, buf, sizeof buf));
	const int64_t *ps;
	if (wh_node_attr_ints(ctx->node, "pooled_shape", &ps) != 2 || ps[0] <= 0 || ps[1] <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute pooled_shape must be two positive values");
	double scale = wh_node_attr_float(ctx->node, "spatial_scale", 1.0f);
	int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3], PH = ps[0], PW = ps[1];
	int64_t od[4] = {rois->dims[0], C, PH, PW};
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, 4, od)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	uint64_t oi = 0;
	for (int64_t r = 0; r < rois->dims[0]; r++) {
		double rv[5];
		for (int k = 0; k < 5; k++)
			rv[k] = wh_tensor_get_f64(rois, (uint64_t)(r * 5 + k));
		if (!(rv[0] >= 0 && rv[0] < (double)N))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "roi %lld has batch index %g, expected [0, %lld)",
					      (long long)r, rv[0], (long long)N);
		int64_t b = (int64_t)rv[0];
		int64_t x1 = roi_coord(rv[1] * scale), y1 = roi_coord(rv[2] * scale);
		int64_t x2 = roi_coord(rv[3] * scale), y2 = roi_coord(rv[4] * scale);
		int64_t rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1, rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1;
		double bh = (double)rh / (double)PH, bw = (double)rw / (double)PW;
		for (int64_t c = 0; c < C; c++)
			for (int64_t ph = 0; ph < PH; ph++)
				for (int64_t pw = 0; pw < PW; pw++) {
					int64_t hs = (int64_t)floor((double)ph * bh) + y1;
					int64_t he = (int64_t)ceil((double)(ph + 1) * bh) + y1;
					int64_t ws = (int64_t)floor((double)pw * bw) + x1;
					int64_t we = (int64_t)ceil((double)(pw + 1) * bw) + x1;
					hs = hs < 0 ? 0 : (hs > H ? H : hs);
					he = he < 0 ? 0 : (he > H ? H : he);
					ws = ws < 0 ? 0 : (ws > W ? W : ws);
					we = we < 0 ? 0 : (we > W ? W : we);
					double m = (he <= hs || we <= ws) ? 0 : -INFINITY;
					for (int64_t h = hs; h < he; h++)
						for (int64_t w = ws; w < we; w++) {
							double v = wh_tensor_get_f64(x, (uint64_t)(((b * C + c) * H + h) * W + w));
							if (v > m)
								m = v;
						}
					wh_tensor_set_f64(y, oi++, m);
				}
	}
	return WH_OK;
}

/* ---- MaxUnpool ---- */

static enum wh_status maxunpool_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *ind = wh_kin(ctx, 1), *oshape = wh_kin(ctx, 2);
	enum wh_status st;
	char b1[32], b2[32];
	if (!x || !ind)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs X and I are required");
	if (x->rank < 3)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has shape %s, expected N x C x D1 x ...",
				      wh_shape_str(x->dims, x->rank, b1, sizeof b1));
	if (!wh_tensor_same_shape(x, ind))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input I has shape %s, expected the shape of X %s",
				      wh_shape_str(ind->dims, ind->rank, b1, sizeof b1),
				      wh_shape_str(x->dims, x->rank, b2, sizeof b2));
	if (!wh_dtype_is_int(ind->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input I has type %s, expected int64", wh_dtype_name(ind->dtype));
	int32_t ns = x->rank - 2;
	int64_t k[WH_MAX_RANK], s[WH_MAX_RANK], pads[2 * WH_MAX_RANK], od[WH_MAX_RANK];
	const int64_t *ks;
	if (wh_node_attr_ints(ctx->node, "kernel_shape", &ks) != ns)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute kernel_shape must have %d values", ns);
	if ((st = read_spatial_ints(ctx, "kernel_shape", ns, 1, true, k)) ||
	    (st = read_spatial_ints(ctx, "strides", ns, 1, true, s)) ||
	    (st = read_spatial_ints(ctx, "pads", 2 * ns, 0, false, pads)))
		return st;
	/* indices address the default unpooled shape (what MaxPool saw); an explicit
	 * output_shape only adds room, so each index is moved to the same coordinates there */
	int64_t dd[WH_MAX_RANK];
	dd[0] = x->dims[0];
	dd[1] = x->dims[1];
	for (int32_t i = 0; i < ns; i++) {
		int64_t v;
		if (!wh_mul_i64(x->dims[2 + i] - 1, s[i], &v) || !wh_add_i64(v, k[i] - pads[i] - pads[ns + i], &v))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output dimension %d overflows", 2 + i);
		if (v < 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output dimension %d would be negative", 2 + i);
		dd[2 + i] = v;
	}
	if (oshape) {
		if (oshape->rank != 1 || oshape->dims[0] != x->rank)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input output_shape must hold %d values", x->rank);
		for (int32_t i = 0; i < x->rank; i++) {
			od[i] = wh_tensor_get_i64(oshape, (uint64_t)i);
			if (i < 2 ? od[i] != x->dims[i] : od[i] < 0)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output_shape dimension %d is %lld, expected %s", i,
						      (long long)od[i], i < 2 ? "the batch and channel sizes of X" : ">= 0");
		}
	} else {
		memcpy(od, dd, (size_t)x->rank * sizeof od[0]);
	}
	uint64_t cnt, dcnt;
	if (!wh_shape_count(od, x->rank, &cnt) || !wh_shape_count(dd, x->rank, &dcnt))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output shape is too large");
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, od)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	if (y->count)
		memset(y->data, 0, wh_tensor_nbytes(y));
	size_t es = wh_dtype_size(x->dtype);
	uint64_t dsp = prod_dims(dd, 2, x->rank), osp = prod_dims(od, 2, x->rank);
	for (uint64_t i = 0; i < x->count; i++) {
		int64_t t = wh_tensor_get_i64(ind, i);
		if (t < 0 || (uint64_t)t >= dcnt)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "index %lld is outside the unpooled shape (%llu elements)",
					      (long long)t, (unsigned long long)dcnt);
		uint64_t plane = (uint64_t)t / dsp, rest = (uint64_t)t % dsp, dst = 0, mul = 1;
		bool fits = true;
		for (int32_t d = x->rank - 1; d >= 2; d--) {
			uint64_t c = rest % (uint64_t)dd[d];
			rest /= (uint64_t)dd[d];
			fits &= c < (uint64_t)od[d];
			dst += c * mul;
			mul *= (uint64_t)od[d];
		}
		if (!fits)
			continue;
		memcpy((char *)y->data + (plane * osp + dst) * es, (const char *)x->data + i * es, es);
	}
	return WH_OK;
}

const struct wh_op_def wh_ops_nn[] = {
	{"", "BatchNormalization", 1, batchnorm_run},
	{"", "InstanceNormalization", 1, instancenorm_run},
	{"", "GroupNormalization", 18, groupnorm_run},
	{"", "LayerNormalization", 17, layernorm_run},
	{"", "RMSNormalization", 23, rmsnorm_run},
	{"", "LRN", 1, lrn_run},
	{"", "MeanVarianceNormalization", 9, mvn_run},
	{"", "Softmax", 1, softmax_run},
	{"", "LogSoftmax", 1, logsoftmax_run},
	{"", "Hardmax", 1, hardmax_run},
	{"", "Dropout", 1, dropout_run},
	{"", "MaxPool", 1, maxpool_run},
	{"", "AveragePool", 1, avgpool_run},
	{"", "LpPool", 1, lppool_run},
	{"", "GlobalAveragePool", 1, gavgpool_run},
	{"", "GlobalMaxPool", 1, gmaxpool_run},
	{"", "GlobalLpPool", 1, glppool_run},
	{"", "MaxRoiPool", 1, maxroipool_run},
	{"", "MaxUnpool", 9, maxunpool_run},
};
const size_t wh_ops_nn_count = sizeof wh_ops_nn / sizeof wh_ops_nn[0];
