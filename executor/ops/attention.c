/* Transformer ops: Attention (opsets 23 and 24), RotaryEmbedding (23), SwiGLU (28),
 * LinearAttention (27), CausalConvWithState (27) and FlexAttention (ai.onnx.preview 1).
 *
 * Numerics: every op computes in float32 (float16, bfloat16 and double inputs are widened
 * to float32) and rounds once, when it stores its outputs. The ONNX test data for the
 * float16 cases were produced in at least float32 precision, and rounding each function-body
 * step to float16 instead would drift by up to an ulp per step. Dot products and sums run
 * in index order with a float32 accumulator; Attention's softmax subtracts the row maximum.
 * Attention follows the order of its ONNX function body: Q and K are each scaled by
 * sqrt(scale), their product is soft-capped, the mask bias is added, softmax is taken, and a
 * row whose bias is -inf everywhere gets zero probabilities (so its output is zero, not
 * NaN). softmax_precision is validated but the softmax always runs in float32, which is at
 * least as precise as every precision it allows except double.
 *
 * FlexAttention shares Attention's rows (the same sqrt(scale) split, grouped heads, softmax
 * and product with V) and adds its modifier subgraphs: score_mod gets the whole score tensor
 * [B, Hq, L, S] and prob_mod the probabilities, as tensors of the softmax precision (float32
 * by default, double for double inputs), run through wh_kernel_run_subgraph. Scores and
 * probabilities are rounded to that precision only where a subgraph sees them (or where
 * softmax_precision asks for float16/bfloat16); a row that score_mod masks entirely is NaN,
 * as the function body's plain Softmax gives.
 *
 * Work is split over independent output rows (Attention, FlexAttention's passes), row groups
 * (RotaryEmbedding), (batch, head) recurrences (LinearAttention) or channels
 * (CausalConvWithState) with wh_parallel_for; no sum spans two chunks, so results are
 * bit-identical for every thread count. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"

static bool wanted(const struct wh_kernel_ctx *ctx, uint32_t i)
{
	return i < ctx->n_outputs && (!ctx->output_wanted || ctx->output_wanted[i]);
}

static bool is_float_dt(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16 || dt == WH_DT_DOUBLE;
}

static const char *shape_of(const struct wh_tensor *t, char *buf, size_t size)
{
	return wh_shape_str(t->dims, t->rank, buf, size);
}

/* ---- float32 views of inputs and float32 work buffers for outputs ---- */

/* *view_out: t's elements as float32: t's own data for a float32 tensor, else a converted
 * copy in *owned_out (freed by the caller). t must have a float type. */
static enum wh_status f32_view(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what,
			       const float **view_out, float **owned_out)
{
	*view_out = NULL;
	*owned_out = NULL;
	if (t->dtype == WH_DT_FLOAT) {
		*view_out = t->data;
		return WH_OK;
	}
	float *f = malloc((t->count ? t->count : 1) * sizeof(float));
	if (!f)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory converting %s to float32 (free some memory)",
				      what);
	switch (t->dtype) {
	case WH_DT_FLOAT16:
		wh_f16_to_f32_n(t->data, f, (size_t)t->count, ctx->cpu);
		break;
	case WH_DT_BFLOAT16:
		wh_bf16_to_f32_n(t->data, f, (size_t)t->count);
		break;
	case WH_DT_DOUBLE:
		for (uint64_t i = 0; i < t->count; i++)
			f[i] = (float)((const double *)t->data)[i];
		break;
	default:
		free(f);
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "%s has type %s, expected a float type (fix the model)",
				      what, wh_dtype_name(t->dtype));
	}
	*owned_out = f;
	*view_out = f;
	return WH_OK;
}

/* Where to compute output t (already allocated) in float32: its own data for float32, else a
 * new buffer that out_store converts into t. */
static enum wh_status out_buf(const struct wh_kernel_ctx *ctx, struct wh_tensor *t, float **buf_out)
{
	if (t->dtype == WH_DT_FLOAT) {
		*buf_out = t->data;
		return WH_OK;
	}
	*buf_out = malloc((t->count ? t->count : 1) * sizeof(float));
	if (!*buf_out)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for a float32 result (free some memory)");
	return WH_OK;
}

/* Converts buf into t's type (rounding to nearest even) and frees buf when it is not t's
 * data. NULL buf: nothing to do. */
static void out_store(const struct wh_kernel_ctx *ctx, struct wh_tensor *t, float *buf)
{
	if (!buf || buf == t->data)
		return;
	switch (t->dtype) {
	case WH_DT_FLOAT16:
		wh_f32_to_f16_n(buf, t->data, (size_t)t->count, ctx->cpu);
		break;
	case WH_DT_BFLOAT16:
		wh_f32_to_bf16_n(buf, t->data, (size_t)t->count, ctx->cpu);
		break;
	case WH_DT_DOUBLE:
		for (uint64_t i = 0; i < t->count; i++)
			((double *)t->data)[i] = buf[i];
		break;
	default:
		break;
	}
	free(buf);
}

static void out_discard(struct wh_tensor *t, float *buf)
{
	if (buf && buf != t->data)
		free(buf);
}

/* Logistic sigmoid without overflow for large |x|. */
static float sigmoidf(float x)
{
	if (x >= 0.0f)
		return 1.0f / (1.0f + expf(-x));
	float e = expf(x);
	return e / (1.0f + e);
}

/* ---- Attention ---- */

/* [B, H, P + S, D] from past [B, H, P, D] (NULL when P is 0) and x, which is [B, H, S, D]
 * or, with x3d, [B, S, H * D]; elements of esz bytes. Used both for the present_key /
 * present_value outputs (raw bytes) and for the float32 working copies. */
static void concat_heads(uint8_t *dst, const uint8_t *past, const uint8_t *x, bool x3d, int64_t B, int64_t H,
			 int64_t P, int64_t S, int64_t D, size_t esz)
{
	size_t row = (size_t)D * esz;
	int64_t T = P + S;
	for (int64_t b = 0; b < B; b++)
		for (int64_t h = 0; h < H; h++) {
			uint8_t *o = dst + (size_t)((b * H + h) * T) * row;
			if (P)
				memcpy(o, past + (size_t)((b * H + h) * P) * row, (size_t)P * row);
			o += (size_t)P * row;
			if (!S || !row)
				continue;
			if (!x3d) {
				memcpy(o, x + (size_t)((b * H + h) * S) * row, (size_t)S * row);
				continue;
			}
			for (int64_t s = 0; s < S; s++)
				memcpy(o + (size_t)s * row, x + (size_t)((b * S + s) * H + h) * row, row);
		}
}

struct attn_job {
	int64_t B, Hq, Hkv, Sq, T, D, Dv;
	bool y3d;
	const float *q; /* [B, Hq, Sq, D], scaled */
	const float *k; /* [B, Hkv, T, D], scaled */
	const float *v; /* [B, Hkv, T, Dv] */
	/* Additive bias from attn_mask (bool: 0 / -inf), broadcast to [B, Hq, Sq, M] by the
	 * strides; columns M..T-1 are -inf (the mask is padded, not broadcast, along T). */
	const float *mask;
	int64_t mstride[3];
	int64_t M;
	bool causal;
	const int64_t *offset;  /* per batch: key j is visible to query i iff j <= i + offset */
	const int64_t *nonpad;  /* per batch: keys j >= nonpad[b] are padding; NULL: none */
	float softcap;          /* 0: none */
	int mode;               /* qk_matmul_output_mode */
	float *qk;              /* [B, Hq, Sq, T] or NULL */
	float *y;               /* Y in its output layout */
	atomic_int failed;
};

static float attn_bias(const struct attn_job *J, int64_t b, int64_t h, int64_t i, int64_t j)
{
	float bias = 0.0f;
	if (J->mask) {
		if (j < J->M)
			bias += J->mask[b * J->mstride[0] + h * J->mstride[1] + i * J->mstride[2] + j];
		else
			bias += -INFINITY;
	}
	if (J->causal && j > i + J->offset[b])
		bias += -INFINITY;
	if (J->nonpad && j >= J->nonpad[b])
		bias += -INFINITY;
	return bias;
}

/* Scores of query row r against every key into sc: the product of the scaled Q and K rows,
 * soft-capped and biased as the job says (writing qk_matmul_output modes 0 to 2 on the
 * way). Returns whether some key is visible, i.e. its bias is not -inf. */
static bool attn_row_scores(const struct attn_job *J, size_t r, float *sc)
{
	int64_t T = J->T, D = J->D, G = J->Hq / J->Hkv;
	int64_t i = (int64_t)r % J->Sq, h = ((int64_t)r / J->Sq) % J->Hq, b = (int64_t)r / (J->Sq * J->Hq);
	const float *q = J->q + (size_t)r * (size_t)D;
	const float *kb = J->k + (size_t)((b * J->Hkv + h / G) * T) * (size_t)D;
	float *qk = J->qk ? J->qk + (size_t)r * (size_t)T : NULL;
	bool has_bias = J->mask || J->causal || J->nonpad, visible = false;
	for (int64_t j = 0; j < T; j++) {
		const float *k = kb + (size_t)j * (size_t)D;
		float x = 0.0f;
		for (int64_t d = 0; d < D; d++)
			x += q[d] * k[d];
		if (qk && J->mode == 0)
			qk[j] = x;
		if (J->softcap != 0.0f)
			x = tanhf(x / J->softcap) * J->softcap;
		if (qk && J->mode == 1)
			qk[j] = x;
		if (has_bias) {
			float bias = attn_bias(J, b, h, i, j);
			if (bias != -INFINITY)
				visible = true;
			x += bias;
		} else {
			visible = true;
		}
		if (qk && J->mode == 2)
			qk[j] = x;
		sc[j] = x;
	}
	return visible;
}

/* Softmax of the T scores in sc, in place, after subtracting the row maximum. A row with no
 * visible key gets zero probabilities, as Attention's function body (RowAllMasked) does;
 * FlexAttention's body is a plain Softmax and always passes visible = true. */
static void attn_row_softmax(float *sc, int64_t T, bool visible)
{
	if (!visible) {
		for (int64_t j = 0; j < T; j++)
			sc[j] = 0.0f;
		return;
	}
	float mx = -INFINITY, sum = 0.0f;
	for (int64_t j = 0; j < T; j++)
		/* a NaN score makes the row NaN, as in the reference */
		if (sc[j] > mx || isnan(sc[j]))
			mx = sc[j];
	for (int64_t j = 0; j < T; j++) {
		sc[j] = expf(sc[j] - mx);
		sum += sc[j];
	}
	for (int64_t j = 0; j < T; j++)
		sc[j] = sc[j] / sum;
}

/* Output row r (in the job's layout) from the T probabilities p of that row and V. */
static void attn_row_values(const struct attn_job *J, size_t r, const float *p)
{
	int64_t T = J->T, Dv = J->Dv, G = J->Hq / J->Hkv;
	int64_t i = (int64_t)r % J->Sq, h = ((int64_t)r / J->Sq) % J->Hq, b = (int64_t)r / (J->Sq * J->Hq);
	const float *vb = J->v + (size_t)((b * J->Hkv + h / G) * T) * (size_t)Dv;
	float *y = J->y3d ? J->y + (size_t)(((b * J->Sq + i) * J->Hq + h) * Dv) : J->y + (size_t)r * (size_t)Dv;
	for (int64_t d = 0; d < Dv; d++)
		y[d] = 0.0f;
	for (int64_t j = 0; j < T; j++) {
		const float *v = vb + (size_t)j * (size_t)Dv;
		for (int64_t d = 0; d < Dv; d++)
			y[d] += p[j] * v[d];
	}
}

static void attn_rows(void *arg, size_t begin, size_t end)
{
	struct attn_job *J = arg;
	float *sc = malloc((size_t)(J->T ? J->T : 1) * sizeof(float));
	if (!sc) {
		atomic_store(&J->failed, 1);
		return;
	}
	for (size_t r = begin; r < end; r++) {
		bool visible = attn_row_scores(J, r, sc);
		attn_row_softmax(sc, J->T, visible);
		if (J->qk && J->mode == 3)
			memcpy(J->qk + (size_t)r * (size_t)J->T, sc, (size_t)J->T * sizeof(float));
		attn_row_values(J, r, sc);
	}
	free(sc);
}

/* The attention geometry from Q, K, V and the head attributes. */
struct attn_geom {
	bool in3d;
	int64_t B, Hq, Hkv, Sq, Skv, D, Dv, P, T;
};

static enum wh_status attn_geometry(const struct wh_kernel_ctx *ctx, const struct wh_tensor *q,
				    const struct wh_tensor *k, const struct wh_tensor *v, struct attn_geom *g)
{
	char b1[48], b2[48], b3[48];
	int64_t qh = wh_node_attr_int(ctx->node, "q_num_heads", 0);
	int64_t kvh = wh_node_attr_int(ctx->node, "kv_num_heads", 0);
	memset(g, 0, sizeof *g);
	if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE,
				      "Q, K, V have shapes %s, %s, %s, expected all rank 3 or all rank 4 (fix the model)",
				      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3));
	g->B = q->dims[0];
	if (k->dims[0] != g->B || v->dims[0] != g->B)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "Q, K, V have shapes %s, %s, %s: batch sizes differ (fix the model)",
				      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3));
	if (q->rank == 3) {
		g->in3d = true;
		if (qh <= 0 || kvh <= 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID,
					      "3-d inputs need q_num_heads and kv_num_heads > 0, got %lld and %lld (set the attributes)",
					      (long long)qh, (long long)kvh);
		if (q->dims[2] % qh || k->dims[2] % kvh || v->dims[2] % kvh)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "Q, K, V have shapes %s, %s, %s: hidden sizes are not multiples of q_num_heads %lld / kv_num_heads %lld (fix the model)",
					      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2),
					      shape_of(v, b3, sizeof b3), (long long)qh, (long long)kvh);
		g->Hq = qh;
		g->Hkv = kvh;
		g->Sq = q->dims[1];
		g->Skv = k->dims[1];
		g->D = q->dims[2] / qh;
		if (k->dims[2] / kvh != g->D)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "Q %s and K %s give head sizes %lld and %lld, expected equal (fix the model)",
					      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), (long long)g->D,
					      (long long)(k->dims[2] / kvh));
		g->Dv = v->dims[2] / kvh;
		if (v->dims[1] != g->Skv)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "K %s and V %s have different sequence lengths (fix the model)",
					      shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3));
	} else {
		g->Hq = q->dims[1];
		g->Hkv = k->dims[1];
		g->Sq = q->dims[2];
		g->Skv = k->dims[2];
		g->D = q->dims[3];
		g->Dv = v->dims[3];
		if (v->dims[1] != g->Hkv || v->dims[2] != g->Skv || k->dims[3] != g->D)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "Q, K, V have shapes %s, %s, %s, expected [B,Hq,Sq,D], [B,Hkv,S,D], [B,Hkv,S,Dv] (fix the model)",
					      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3));
		if ((qh > 0 && qh != g->Hq) || (kvh > 0 && kvh != g->Hkv))
			return wh_kernel_fail(ctx, WH_ERR_INVALID,
					      "q_num_heads %lld / kv_num_heads %lld disagree with Q %s and K %s (fix the attributes)",
					      (long long)qh, (long long)kvh, shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2));
	}
	if (g->Hkv <= 0 || g->Hq % g->Hkv)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE,
				      "%lld query heads are not a multiple of %lld key/value heads (fix the model)",
				      (long long)g->Hq, (long long)g->Hkv);
	return WH_OK;
}

/* Float32 copies of Q, laid out [B, Hq, Sq, D] (from [B, Sq, Hq * D] for 3-d inputs), and
 * of K, each multiplied by sqrt(scale) before their product, as the function bodies of
 * Attention and FlexAttention do; scale defaults to 1/sqrt(D). The caller frees both. */
static enum wh_status attn_scaled_qk(const struct wh_kernel_ctx *ctx, const struct wh_tensor *q,
				     const struct wh_tensor *k, const struct attn_geom *g, float **qf_out,
				     float **kf_out)
{
	const float *qv, *kv;
	float *own_q = NULL, *own_k = NULL, *qf = NULL, *kf = NULL;
	enum wh_status st;
	*qf_out = NULL;
	*kf_out = NULL;
	if ((st = f32_view(ctx, q, "Q", &qv, &own_q)) || (st = f32_view(ctx, k, "K", &kv, &own_k)))
		goto out;
	const struct wh_attr *sa = wh_node_attr(ctx->node, "scale");
	float scale = sa ? wh_node_attr_float(ctx->node, "scale", 1.0f) : 1.0f / sqrtf((float)g->D);
	float sq = sqrtf(scale);
	qf = malloc((q->count ? q->count : 1) * sizeof(float));
	kf = malloc((k->count ? k->count : 1) * sizeof(float));
	if (!qf || !kf) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	if (q->count)
		concat_heads((uint8_t *)qf, NULL, (const uint8_t *)qv, g->in3d, g->B, g->Hq, 0, g->Sq, g->D,
			     sizeof(float));
	for (uint64_t i = 0; i < q->count; i++)
		qf[i] *= sq;
	for (uint64_t i = 0; i < k->count; i++)
		kf[i] = kv[i] * sq;
	*qf_out = qf;
	*kf_out = kf;
	qf = kf = NULL;
out:
	free(own_q);
	free(own_k);
	free(qf);
	free(kf);
	return st;
}

/* Validates past_key / past_value against the geometry and sets P and T. */
static enum wh_status attn_past(const struct wh_kernel_ctx *ctx, const struct wh_tensor *k, const struct wh_tensor *v,
				const struct wh_tensor *pk, const struct wh_tensor *pv, struct attn_geom *g)
{
	char b1[48], b2[48];
	if (!pk != !pv)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "past_key and past_value must be given together (fix the model)");
	if (pk) {
		if (pk->dtype != k->dtype || pv->dtype != v->dtype)
			return wh_kernel_fail(ctx, WH_ERR_INVALID,
					      "past_key / past_value have types %s / %s, expected %s / %s like K / V (fix the model)",
					      wh_dtype_name(pk->dtype), wh_dtype_name(pv->dtype), wh_dtype_name(k->dtype),
					      wh_dtype_name(v->dtype));
		if (pk->rank != 4 || pv->rank != 4 || pk->dims[0] != g->B || pk->dims[1] != g->Hkv ||
		    pk->dims[3] != g->D || pv->dims[0] != g->B || pv->dims[1] != g->Hkv || pv->dims[2] != pk->dims[2] ||
		    pv->dims[3] != g->Dv)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "past_key %s / past_value %s, expected [%lld,%lld,P,%lld] / [%lld,%lld,P,%lld] (fix the model)",
					      shape_of(pk, b1, sizeof b1), shape_of(pv, b2, sizeof b2), (long long)g->B,
					      (long long)g->Hkv, (long long)g->D, (long long)g->B, (long long)g->Hkv,
					      (long long)g->Dv);
		g->P = pk->dims[2];
	}
	if (!wh_add_i64(g->P, g->Skv, &g->T))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "past and new sequence lengths overflow (fix the model)");
	return WH_OK;
}

/* The mask as an additive float32 bias with its broadcast strides over [B, Hq, Sq]. */
static enum wh_status attn_mask_bias(const struct wh_kernel_ctx *ctx, const struct wh_tensor *m,
				     const struct attn_geom *g, struct attn_job *J, float **owned_out)
{
	char b1[48];
	*owned_out = NULL;
	if (m->dtype != WH_DT_BOOL && !is_float_dt(m->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attn_mask has type %s, expected bool or a float type (fix the model)",
				      wh_dtype_name(m->dtype));
	const int64_t full[4] = {g->B, g->Hq, g->Sq, g->T};
	if (m->rank < 1 || m->rank > 4)
		goto bad;
	for (int32_t a = 0; a < m->rank - 1; a++) {
		int64_t d = m->dims[a], want = full[4 - m->rank + a];
		if (d != 1 && d != want)
			goto bad;
	}
	J->M = m->dims[m->rank - 1];
	if (J->M > g->T)
		goto bad;
	/* strides of the leading axes, 0 where the mask broadcasts; unsigned because an empty
	 * mask may have huge dimensions, and then no stride is used */
	uint64_t stride = (uint64_t)J->M;
	for (int a = 2; a >= 0; a--) {
		int32_t ma = m->rank - 4 + a;
		J->mstride[a] = 0;
		if (ma >= 0) {
			J->mstride[a] = m->dims[ma] == 1 ? 0 : (int64_t)stride;
			stride *= (uint64_t)m->dims[ma];
		}
	}
	if (m->dtype == WH_DT_BOOL) {
		float *f = malloc((m->count ? m->count : 1) * sizeof(float));
		if (!f)
			return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory converting attn_mask (free some memory)");
		for (uint64_t i = 0; i < m->count; i++)
			f[i] = ((const uint8_t *)m->data)[i] ? 0.0f : -INFINITY;
		*owned_out = f;
		J->mask = f;
		return WH_OK;
	}
	return f32_view(ctx, m, "attn_mask", &J->mask, owned_out);
bad:
	return wh_kernel_fail(ctx, WH_ERR_SHAPE,
			      "attn_mask has shape %s, expected one broadcastable to [%lld,%lld,%lld,<=%lld] (fix the model)",
			      shape_of(m, b1, sizeof b1), (long long)g->B, (long long)g->Hq, (long long)g->Sq,
			      (long long)g->T);
}

static enum wh_status attention_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *q = wh_kin(ctx, 0), *k = wh_kin(ctx, 1), *v = wh_kin(ctx, 2);
	const struct wh_tensor *mask = wh_kin(ctx, 3), *pk = wh_kin(ctx, 4), *pv = wh_kin(ctx, 5);
	const struct wh_tensor *npad = wh_kin(ctx, 6);
	char b1[48];
	enum wh_status st = WH_OK;
	if (!q || !k || !v)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs Q, K and V (fix the model)");
	if (!is_float_dt(q->dtype) || k->dtype != q->dtype || !is_float_dt(v->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "Q, K, V have types %s, %s, %s, expected float types with K like Q (fix the model)",
				      wh_dtype_name(q->dtype), wh_dtype_name(k->dtype), wh_dtype_name(v->dtype));
	if (npad && ctx->opset < 24)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "nonpad_kv_seqlen needs opset 24, the model imports %lld (fix the model)",
				      (long long)ctx->opset);
	int64_t is_causal = wh_node_attr_int(ctx->node, "is_causal", 0);
	int64_t mode = wh_node_attr_int(ctx->node, "qk_matmul_output_mode", 0);
	int64_t sp = wh_node_attr_int(ctx->node, "softmax_precision", q->dtype);
	float softcap = wh_node_attr_float(ctx->node, "softcap", 0.0f);
	if (is_causal != 0 && is_causal != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "is_causal is %lld, expected 0 or 1 (fix the attribute)",
				      (long long)is_causal);
	if (mode < 0 || mode > 3)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "qk_matmul_output_mode is %lld, expected 0 to 3 (fix the attribute)",
				      (long long)mode);
	if (sp != WH_DT_FLOAT && sp != WH_DT_FLOAT16 && sp != WH_DT_BFLOAT16 && sp != WH_DT_DOUBLE)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "softmax_precision is %lld, expected 1, 10, 11 or 16 (a float type; fix the attribute)",
				      (long long)sp);
	struct attn_geom g;
	if ((st = attn_geometry(ctx, q, k, v, &g)) || (st = attn_past(ctx, k, v, pk, pv, &g)))
		return st;

	struct attn_job J;
	memset(&J, 0, sizeof J);
	atomic_init(&J.failed, 0);
	J.B = g.B;
	J.Hq = g.Hq;
	J.Hkv = g.Hkv;
	J.Sq = g.Sq;
	J.T = g.T;
	J.D = g.D;
	J.Dv = g.Dv;
	J.y3d = g.in3d;
	J.softcap = softcap;
	J.mode = (int)mode;
	J.causal = is_causal != 0;

	float *mask_owned = NULL, *qf = NULL, *kf = NULL, *yb = NULL, *qkb = NULL;
	float *own_v = NULL;
	int64_t *offset = NULL, *nonpad = NULL;
	struct wh_tensor pk_tmp, pv_tmp;
	wh_tensor_init(&pk_tmp);
	wh_tensor_init(&pv_tmp);
	if (npad && (!wh_dtype_is_int(npad->dtype) || npad->rank != 1 || npad->dims[0] != g.B)) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "nonpad_kv_seqlen is %s %s, expected int64 [%lld] (fix the model)",
				    wh_dtype_name(npad->dtype), shape_of(npad, b1, sizeof b1), (long long)g.B);
		goto out;
	}
	if (mask && (st = attn_mask_bias(ctx, mask, &g, &J, &mask_owned)))
		goto out;

	/* the outputs first: when every wanted one is empty there is nothing to compute, and
	 * the dimensions of empty inputs may be huge (a 0 next to 2^40 heads) */
	int64_t yd[4] = {g.B, g.Hq, g.Sq, g.Dv};
	int32_t yr = g.in3d ? 3 : 4;
	if (g.in3d) {
		yd[1] = g.Sq;
		if (!wh_mul_i64(g.Hq, g.Dv, &yd[2])) {
			st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output hidden size overflows (fix the model)");
			goto out;
		}
	}
	int64_t pkd[4] = {g.B, g.Hkv, g.T, g.D}, pvd[4] = {g.B, g.Hkv, g.T, g.Dv}, qd[4] = {g.B, g.Hq, g.Sq, g.T};
	struct wh_tensor *pko = wanted(ctx, 1) ? &ctx->outputs[1] : &pk_tmp;
	struct wh_tensor *pvo = wanted(ctx, 2) ? &ctx->outputs[2] : &pv_tmp;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], q->dtype, yr, yd)) ||
	    (wanted(ctx, 3) && (st = wh_tensor_alloc(&ctx->outputs[3], q->dtype, 4, qd))) ||
	    (wanted(ctx, 1) && (st = wh_tensor_alloc(pko, k->dtype, 4, pkd))) ||
	    (wanted(ctx, 2) && (st = wh_tensor_alloc(pvo, v->dtype, 4, pvd))))
		goto out;
	bool compute = ctx->outputs[0].count || (wanted(ctx, 3) && ctx->outputs[3].count);
	if (!compute && !(wanted(ctx, 1) && pko->count) && !(wanted(ctx, 2) && pvo->count))
		goto out;
	/* present_key / present_value: the outputs when wanted, else scratch (its size is
	 * bounded now: a non-empty output bounds every dimension the scratch has) */
	if (compute && ((!wanted(ctx, 1) && (st = wh_tensor_alloc(pko, k->dtype, 4, pkd))) ||
			(!wanted(ctx, 2) && (st = wh_tensor_alloc(pvo, v->dtype, 4, pvd)))))
		goto out;
	if (pko->count)
		concat_heads(pko->data, pk ? pk->data : NULL, k->data, g.in3d, g.B, g.Hkv, g.P, g.Skv, g.D,
			     wh_dtype_size(k->dtype));
	if (pvo->count)
		concat_heads(pvo->data, pv ? pv->data : NULL, v->data, g.in3d, g.B, g.Hkv, g.P, g.Skv, g.Dv,
			     wh_dtype_size(v->dtype));
	if (!compute)
		goto out;

	offset = calloc((size_t)(g.B ? g.B : 1), sizeof *offset);
	nonpad = npad ? calloc((size_t)(g.B ? g.B : 1), sizeof *nonpad) : NULL;
	if (!offset || (npad && !nonpad)) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	for (int64_t b = 0; b < g.B; b++) {
		if (npad)
			nonpad[b] = wh_tensor_get_i64(npad, (uint64_t)b);
		/* causal alignment: bottom-right after a past cache, or per batch from the count of
		 * valid keys of an external cache (opset 24) */
		if (pk)
			offset[b] = g.P;
		else if (npad)
			offset[b] = nonpad[b] < INT64_MIN + g.Sq ? INT64_MIN : nonpad[b] - g.Sq;
	}
	J.offset = offset;
	J.nonpad = nonpad;

	const float *vv;
	if ((st = attn_scaled_qk(ctx, q, pko, &g, &qf, &kf)) || (st = f32_view(ctx, pvo, "V", &vv, &own_v)))
		goto out;
	J.q = qf;
	J.k = kf;
	J.v = vv;

	if ((st = out_buf(ctx, &ctx->outputs[0], &yb)) ||
	    (wanted(ctx, 3) && (st = out_buf(ctx, &ctx->outputs[3], &qkb))))
		goto out;
	J.y = yb;
	J.qk = qkb;
	/* a non-empty output bounds B * Hq * Sq, and T too (Y through V, qk_matmul_output
	 * directly) */
	uint64_t rows = (uint64_t)g.B * (uint64_t)g.Hq * (uint64_t)g.Sq, per_row;
	if (!wh_mul_u64((uint64_t)(g.T ? g.T : 1), (uint64_t)g.D + (uint64_t)g.Dv + 1, &per_row))
		per_row = UINT64_MAX;
	wh_parallel_for(ctx->pool, (size_t)rows, wh_grain_for(per_row), attn_rows, &J);
	if (atomic_load(&J.failed)) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for attention scores (free some memory)");
		goto out;
	}
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
	if (qkb) {
		out_store(ctx, &ctx->outputs[3], qkb);
		qkb = NULL;
	}
out:
	out_discard(&ctx->outputs[0], yb);
	if (wanted(ctx, 3))
		out_discard(&ctx->outputs[3], qkb);
	free(own_v);
	free(mask_owned);
	free(qf);
	free(kf);
	free(offset);
	free(nonpad);
	wh_tensor_release(&pk_tmp);
	wh_tensor_release(&pv_tmp);
	return st;
}

/* ---- RotaryEmbedding ---- */

struct rope_job {
	int64_t B, S, H, D, rd;
	bool x4d, interleaved;
	const float *x;
	const float *cos, *sin; /* rows of cs floats */
	int64_t cs;
	const int64_t *row;     /* [B * S]: the cos/sin row of each (b, s) */
	float *y;
};

static void rope_rows(void *arg, size_t begin, size_t end)
{
	const struct rope_job *J = arg;
	int64_t half = J->rd / 2;
	for (size_t r = begin; r < end; r++) {
		int64_t b = (int64_t)r / J->S, s = (int64_t)r % J->S;
		const float *c = J->cos + (size_t)J->row[r] * (size_t)J->cs;
		const float *sn = J->sin + (size_t)J->row[r] * (size_t)J->cs;
		for (int64_t h = 0; h < J->H; h++) {
			size_t off = J->x4d ? (size_t)(((b * J->H + h) * J->S + s) * J->D)
					    : (size_t)(((b * J->S + s) * J->H + h) * J->D);
			const float *x = J->x + off;
			float *y = J->y + off;
			for (int64_t i = 0; i < half; i++) {
				int64_t i1 = J->interleaved ? 2 * i : i, i2 = J->interleaved ? 2 * i + 1 : i + half;
				float x1 = x[i1], x2 = x[i2];
				float re = c[i] * x1 - sn[i] * x2;
				float im = sn[i] * x1 + c[i] * x2;
				y[i1] = re;
				y[i2] = im;
			}
			for (int64_t d = J->rd; d < J->D; d++)
				y[d] = x[d];
		}
	}
}

static enum wh_status rotary_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *cosc = wh_kin(ctx, 1), *sinc = wh_kin(ctx, 2);
	const struct wh_tensor *pos = wh_kin(ctx, 3);
	char b1[48], b2[48], b3[48];
	enum wh_status st = WH_OK;
	if (!x || !cosc || !sinc)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs X, cos_cache and sin_cache (fix the model)");
	if (!is_float_dt(x->dtype) || cosc->dtype != x->dtype || sinc->dtype != x->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "X, cos_cache, sin_cache have types %s, %s, %s, expected one float type (fix the model)",
				      wh_dtype_name(x->dtype), wh_dtype_name(cosc->dtype), wh_dtype_name(sinc->dtype));
	int64_t interleaved = wh_node_attr_int(ctx->node, "interleaved", 0);
	int64_t nh = wh_node_attr_int(ctx->node, "num_heads", 0);
	int64_t rd = wh_node_attr_int(ctx->node, "rotary_embedding_dim", 0);
	if (interleaved != 0 && interleaved != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "interleaved is %lld, expected 0 or 1 (fix the attribute)",
				      (long long)interleaved);
	struct rope_job J;
	memset(&J, 0, sizeof J);
	J.interleaved = interleaved != 0;
	if (x->rank == 4) {
		J.x4d = true;
		J.B = x->dims[0];
		J.H = x->dims[1];
		J.S = x->dims[2];
		J.D = x->dims[3];
		if (nh > 0 && nh != J.H)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "num_heads is %lld but X %s has %lld heads (fix the attribute)",
					      (long long)nh, shape_of(x, b1, sizeof b1), (long long)J.H);
	} else if (x->rank == 3) {
		if (nh <= 0 || x->dims[2] % nh)
			return wh_kernel_fail(ctx, WH_ERR_INVALID,
					      "3-d X %s needs num_heads > 0 dividing its hidden size, got %lld (set the attribute)",
					      shape_of(x, b1, sizeof b1), (long long)nh);
		J.B = x->dims[0];
		J.S = x->dims[1];
		J.H = nh;
		J.D = x->dims[2] / nh;
	} else {
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X has shape %s, expected rank 3 or 4 (fix the model)",
				      shape_of(x, b1, sizeof b1));
	}
	J.rd = rd > 0 ? rd : J.D;
	if (rd < 0 || J.rd > J.D || J.rd % 2)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "rotary_embedding_dim is %lld, expected an even number up to the head size %lld (fix the attribute)",
				      (long long)(rd ? rd : J.rd), (long long)J.D);
	if (!wh_tensor_same_shape(cosc, sinc))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cos_cache %s and sin_cache %s differ in shape (fix the model)",
				      shape_of(cosc, b1, sizeof b1), shape_of(sinc, b2, sizeof b2));
	J.cs = cosc->rank ? cosc->dims[cosc->rank - 1] : 0;
	int64_t n_rows = 0;
	if (pos) {
		if (cosc->rank != 2 || J.cs < J.rd / 2)
			goto bad_cache;
		if (!wh_dtype_is_int(pos->dtype) || pos->rank != 2 || pos->dims[0] != J.B || pos->dims[1] != J.S)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "position_ids is %s %s, expected int64 [%lld,%lld] (fix the model)",
					      wh_dtype_name(pos->dtype), shape_of(pos, b3, sizeof b3), (long long)J.B,
					      (long long)J.S);
		n_rows = cosc->dims[0];
	} else {
		if (cosc->rank != 3 || (cosc->dims[0] != J.B && cosc->dims[0] != 1) ||
		    (cosc->dims[1] != J.S && cosc->dims[1] != 1) || J.cs < J.rd / 2)
			goto bad_cache;
	}
	if (!x->count)
		return wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, x->dims);
	uint64_t nbs = (uint64_t)J.B * (uint64_t)J.S;
	int64_t *row = malloc((size_t)(nbs ? nbs : 1) * sizeof *row);
	float *xo = NULL, *co = NULL, *so = NULL, *yb = NULL;
	if (!row)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
	for (uint64_t r = 0; r < nbs; r++) {
		int64_t b = (int64_t)r / J.S, s = (int64_t)r % J.S;
		if (pos) {
			/* Gather semantics: negative ids count from the end */
			int64_t p = wh_tensor_get_i64(pos, r);
			int64_t pp = p < 0 ? p + n_rows : p;
			if (pp < 0 || pp >= n_rows) {
				st = wh_kernel_fail(ctx, WH_ERR_INVALID,
						    "position_ids[%lld][%lld] is %lld, outside the %lld cache rows (fix the input)",
						    (long long)b, (long long)s, (long long)p, (long long)n_rows);
				goto out;
			}
			row[r] = pp;
		} else {
			row[r] = (cosc->dims[0] == 1 ? 0 : b) * cosc->dims[1] + (cosc->dims[1] == 1 ? 0 : s);
		}
	}
	J.row = row;
	if ((st = f32_view(ctx, x, "X", &J.x, &xo)) || (st = f32_view(ctx, cosc, "cos_cache", &J.cos, &co)) ||
	    (st = f32_view(ctx, sinc, "sin_cache", &J.sin, &so)))
		goto out;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, x->dims)) ||
	    (st = out_buf(ctx, &ctx->outputs[0], &yb)))
		goto out;
	J.y = yb;
	wh_parallel_for(ctx->pool, (size_t)nbs, wh_grain_for((uint64_t)J.H * (uint64_t)J.D), rope_rows, &J);
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
out:
	out_discard(&ctx->outputs[0], yb);
	free(row);
	free(xo);
	free(co);
	free(so);
	return st;
bad_cache:
	return wh_kernel_fail(ctx, WH_ERR_SHAPE,
			      "cos_cache has shape %s, expected %s with a last dimension of at least %lld (fix the model)",
			      shape_of(cosc, b1, sizeof b1), pos ? "[max_position, >=rotary_dim/2]" : "[batch, sequence, >=rotary_dim/2]",
			      (long long)(J.rd / 2));
}

/* ---- SwiGLU ---- */

struct swiglu_job {
	const float *a, *b;
	float *y;
	float alpha;
};

static void swiglu_range(void *arg, size_t begin, size_t end)
{
	const struct swiglu_job *J = arg;
	for (size_t i = begin; i < end; i++) {
		float a = J->a[i];
		float swish = a * sigmoidf(J->alpha * a);
		J->y[i] = swish * J->b[i];
	}
}

static enum wh_status swiglu_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *a = wh_kin(ctx, 0), *b = wh_kin(ctx, 1);
	char b1[48], b2[48];
	enum wh_status st;
	if (!a || !b)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B (fix the model)");
	if (!is_float_dt(a->dtype) || b->dtype != a->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "A and B have types %s and %s, expected one float type (fix the model)",
				      wh_dtype_name(a->dtype), wh_dtype_name(b->dtype));
	if (!wh_tensor_same_shape(a, b))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "A %s and B %s differ in shape; SwiGLU does not broadcast (fix the model)",
				      shape_of(a, b1, sizeof b1), shape_of(b, b2, sizeof b2));
	float alpha = wh_node_attr_float(ctx->node, "alpha", 1.0f);
	if ((st = wh_tensor_alloc(&ctx->outputs[0], a->dtype, a->rank, a->dims)))
		return st;
	if (a->dtype == WH_DT_DOUBLE) {
		/* double keeps its precision: no float32 type in between */
		const double *pa = a->data, *pb = b->data;
		double *y = ctx->outputs[0].data, al = alpha;
		for (uint64_t i = 0; i < a->count; i++) {
			double z = al * pa[i];
			double s = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
			y[i] = pa[i] * s * pb[i];
		}
		return WH_OK;
	}
	struct swiglu_job J = {.alpha = alpha};
	float *ao = NULL, *bo = NULL, *yb = NULL;
	if ((st = f32_view(ctx, a, "A", &J.a, &ao)) || (st = f32_view(ctx, b, "B", &J.b, &bo)) ||
	    (st = out_buf(ctx, &ctx->outputs[0], &yb)))
		goto out;
	J.y = yb;
	wh_parallel_for(ctx->pool, (size_t)a->count, WH_CHUNK_ELEMS, swiglu_range, &J);
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
out:
	out_discard(&ctx->outputs[0], yb);
	free(ao);
	free(bo);
	return st;
}

/* ---- LinearAttention ---- */

enum la_rule { LA_LINEAR, LA_GATED, LA_DELTA, LA_GATED_DELTA };

struct la_job {
	enum la_rule rule;
	int64_t B, T, Hq, Hkv, dk, dv;
	const float *q, *k, *v;  /* packed [B, T, H * d] */
	const float *decay;      /* [B, T, Hkv * dk] or [B, T, Hkv]; NULL when unused */
	bool decay_per_key;
	const float *beta;       /* [B, T, Hkv] or [B, T, 1]; NULL when unused */
	bool beta_shared;
	const float *past;       /* [B, Hkv, dk, dv] or NULL (zeros) */
	float scale;
	float *y;                /* [B, T, Hq * dv] */
	float *state;            /* [B, Hkv, dk, dv] */
	atomic_int failed;
};

/* One (batch, kv head) recurrence over all time steps, in the order of the function body:
 * decay the state, read it back along k, write the (delta) update, then read every query
 * head of the group. */
static void la_heads(void *arg, size_t begin, size_t end)
{
	struct la_job *J = arg;
	int64_t dk = J->dk, dv = J->dv, G = J->Hq / J->Hkv;
	float *w = malloc((size_t)(dv ? dv : 1) * sizeof(float));
	if (!w) {
		atomic_store(&J->failed, 1);
		return;
	}
	for (size_t r = begin; r < end; r++) {
		int64_t b = (int64_t)r / J->Hkv, kh = (int64_t)r % J->Hkv;
		float *S = J->state + (size_t)r * (size_t)(dk * dv);
		size_t n = (size_t)(dk * dv);
		if (J->past && n)
			memcpy(S, J->past + r * n, n * sizeof(float));
		else if (n)
			memset(S, 0, n * sizeof(float));
		for (int64_t t = 0; t < J->T; t++) {
			size_t bt = (size_t)(b * J->T + t);
			const float *k = J->k + (bt * (size_t)J->Hkv + (size_t)kh) * (size_t)dk;
			const float *v = J->v + (bt * (size_t)J->Hkv + (size_t)kh) * (size_t)dv;
			if (J->rule == LA_GATED || J->rule == LA_GATED_DELTA) {
				if (J->decay_per_key) {
					const float *g = J->decay + (bt * (size_t)J->Hkv + (size_t)kh) * (size_t)dk;
					for (int64_t i = 0; i < dk; i++) {
						float e = expf(g[i]);
						for (int64_t j = 0; j < dv; j++)
							S[i * dv + j] *= e;
					}
				} else {
					float e = expf(J->decay[bt * (size_t)J->Hkv + (size_t)kh]);
					for (int64_t i = 0; i < dk * dv; i++)
						S[i] *= e;
				}
			}
			if (J->rule == LA_DELTA || J->rule == LA_GATED_DELTA) {
				float beta = J->beta[J->beta_shared ? bt : bt * (size_t)J->Hkv + (size_t)kh];
				for (int64_t j = 0; j < dv; j++) {
					float rj = 0.0f;
					for (int64_t i = 0; i < dk; i++)
						rj += S[i * dv + j] * k[i];
					w[j] = beta * (v[j] - rj);
				}
			} else {
				memcpy(w, v, (size_t)dv * sizeof(float));
			}
			for (int64_t i = 0; i < dk; i++)
				for (int64_t j = 0; j < dv; j++)
					S[i * dv + j] += k[i] * w[j];
			for (int64_t g = 0; g < G; g++) {
				int64_t qh = kh * G + g;
				const float *q = J->q + (bt * (size_t)J->Hq + (size_t)qh) * (size_t)dk;
				float *y = J->y + (bt * (size_t)J->Hq + (size_t)qh) * (size_t)dv;
				for (int64_t j = 0; j < dv; j++) {
					float o = 0.0f;
					for (int64_t i = 0; i < dk; i++)
						o += q[i] * S[i * dv + j];
					y[j] = J->scale * o;
				}
			}
		}
	}
	free(w);
}

static enum wh_status linear_attention_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *q = wh_kin(ctx, 0), *k = wh_kin(ctx, 1), *v = wh_kin(ctx, 2);
	const struct wh_tensor *past = wh_kin(ctx, 3), *decay = wh_kin(ctx, 4), *beta = wh_kin(ctx, 5);
	char b1[48], b2[48], b3[48], rb[32];
	enum wh_status st = WH_OK;
	if (!q || !k || !v)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs query, key and value (fix the model)");
	const char *rs = wh_node_attr_string(ctx->node, "update_rule", "gated_delta", rb, sizeof rb);
	struct la_job J;
	memset(&J, 0, sizeof J);
	atomic_init(&J.failed, 0);
	if (!strcmp(rs, "linear"))
		J.rule = LA_LINEAR;
	else if (!strcmp(rs, "gated"))
		J.rule = LA_GATED;
	else if (!strcmp(rs, "delta"))
		J.rule = LA_DELTA;
	else if (!strcmp(rs, "gated_delta"))
		J.rule = LA_GATED_DELTA;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "update_rule is '%s', expected linear, gated, delta or gated_delta (fix the attribute)", rs);
	bool gated = J.rule == LA_GATED || J.rule == LA_GATED_DELTA;
	bool delta = J.rule == LA_DELTA || J.rule == LA_GATED_DELTA;
	const struct wh_tensor *used[5] = {q, k, v, gated ? decay : NULL, delta ? beta : NULL};
	for (int i = 0; i < 5; i++)
		if (used[i] && (!is_float_dt(used[i]->dtype) || used[i]->dtype != q->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %d has type %s, expected %s like query (fix the model)",
					      i < 3 ? i : i + 1, wh_dtype_name(used[i]->dtype), wh_dtype_name(q->dtype));
	if (past && !is_float_dt(past->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "past_state has type %s, expected a float type (fix the model)",
				      wh_dtype_name(past->dtype));
	J.Hq = wh_node_attr_int(ctx->node, "q_num_heads", 0);
	J.Hkv = wh_node_attr_int(ctx->node, "kv_num_heads", 0);
	if (J.Hq <= 0 || J.Hkv <= 0 || J.Hq % J.Hkv)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "q_num_heads %lld must be a positive multiple of kv_num_heads %lld (set the attributes)",
				      (long long)J.Hq, (long long)J.Hkv);
	int64_t kw = -1;
	if (q->rank != 3 || k->rank != 3 || v->rank != 3 || k->dims[0] != q->dims[0] || v->dims[0] != q->dims[0] ||
	    k->dims[1] != q->dims[1] || v->dims[1] != q->dims[1] || q->dims[2] % J.Hq || v->dims[2] % J.Hkv ||
	    !wh_mul_i64(q->dims[2] / J.Hq, J.Hkv, &kw) || k->dims[2] != kw)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE,
				      "query %s, key %s, value %s, expected [B,T,%lld*dk], [B,T,%lld*dk], [B,T,%lld*dv] (fix the model)",
				      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3),
				      (long long)J.Hq, (long long)J.Hkv, (long long)J.Hkv);
	J.B = q->dims[0];
	J.T = q->dims[1];
	J.dk = q->dims[2] / J.Hq;
	J.dv = v->dims[2] / J.Hkv;
	if (gated) {
		if (!decay)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "update_rule %s needs the decay input (fix the model)", rs);
		if (decay->rank != 3 || decay->dims[0] != J.B || decay->dims[1] != J.T ||
		    (decay->dims[2] != kw && decay->dims[2] != J.Hkv))
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "decay has shape %s, expected [%lld,%lld,%lld] or [%lld,%lld,%lld] (fix the model)",
					      shape_of(decay, b1, sizeof b1), (long long)J.B, (long long)J.T,
					      (long long)kw, (long long)J.B, (long long)J.T, (long long)J.Hkv);
		J.decay_per_key = decay->dims[2] == kw && J.dk != 1;
	}
	if (delta) {
		if (!beta)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "update_rule %s needs the beta input (fix the model)", rs);
		if (beta->rank != 3 || beta->dims[0] != J.B || beta->dims[1] != J.T ||
		    (beta->dims[2] != J.Hkv && beta->dims[2] != 1))
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "beta has shape %s, expected [%lld,%lld,%lld] or [%lld,%lld,1] (fix the model)",
					      shape_of(beta, b1, sizeof b1), (long long)J.B, (long long)J.T, (long long)J.Hkv,
					      (long long)J.B, (long long)J.T);
		J.beta_shared = beta->dims[2] == 1;
	}
	int64_t sd[4] = {J.B, J.Hkv, J.dk, J.dv};
	if (past && (past->rank != 4 || memcmp(past->dims, sd, sizeof sd)))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "past_state has shape %s, expected [%lld,%lld,%lld,%lld] (fix the model)",
				      shape_of(past, b1, sizeof b1), (long long)J.B, (long long)J.Hkv, (long long)J.dk,
				      (long long)J.dv);
	const struct wh_attr *sa = wh_node_attr(ctx->node, "scale");
	J.scale = sa ? wh_node_attr_float(ctx->node, "scale", 0.0f) : 1.0f / sqrtf((float)J.dk);

	float *own[6] = {NULL, NULL, NULL, NULL, NULL, NULL}, *yb = NULL, *sb = NULL;
	struct wh_tensor st_tmp;
	wh_tensor_init(&st_tmp);
	/* the state is float32 throughout; present_state takes past_state's type, else query's */
	struct wh_tensor *so = wanted(ctx, 1) ? &ctx->outputs[1] : &st_tmp;
	int64_t yd[3] = {J.B, J.T, 0};
	if (!wh_mul_i64(J.Hq, J.dv, &yd[2])) {
		st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output hidden size overflows (fix the model)");
		goto out;
	}
	enum wh_dtype sdt = past ? past->dtype : q->dtype;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], q->dtype, 3, yd)) ||
	    (wanted(ctx, 1) && (st = wh_tensor_alloc(so, sdt, 4, sd))))
		goto out;
	/* empty outputs may come with huge dimensions (a 0 next to 2^40 heads): nothing to do;
	 * a non-empty output bounds B * Hkv, dk and dv, and so the scratch state */
	if (!ctx->outputs[0].count && !(wanted(ctx, 1) && so->count))
		goto out;
	if ((!wanted(ctx, 1) && (st = wh_tensor_alloc(so, sdt, 4, sd))) ||
	    (st = out_buf(ctx, &ctx->outputs[0], &yb)) || (st = out_buf(ctx, so, &sb)))
		goto out;
	if ((st = f32_view(ctx, q, "query", &J.q, &own[0])) || (st = f32_view(ctx, k, "key", &J.k, &own[1])) ||
	    (st = f32_view(ctx, v, "value", &J.v, &own[2])) ||
	    (gated && (st = f32_view(ctx, decay, "decay", &J.decay, &own[3]))) ||
	    (delta && (st = f32_view(ctx, beta, "beta", &J.beta, &own[4]))) ||
	    (past && (st = f32_view(ctx, past, "past_state", &J.past, &own[5]))))
		goto out;
	J.y = yb;
	J.state = sb;
	uint64_t per = (uint64_t)(J.T ? J.T : 1) * (uint64_t)(J.dk * J.dv + 1) * (uint64_t)(J.Hq / J.Hkv + 3);
	wh_parallel_for(ctx->pool, (size_t)(J.B * J.Hkv), wh_grain_for(per), la_heads, &J);
	if (atomic_load(&J.failed)) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
	out_store(ctx, so, sb);
	sb = NULL;
out:
	out_discard(&ctx->outputs[0], yb);
	out_discard(so, sb);
	for (int i = 0; i < 6; i++)
		free(own[i]);
	wh_tensor_release(&st_tmp);
	return st;
}

/* ---- CausalConvWithState ---- */

struct ccs_job {
	int64_t C, L, K;
	const float *x, *w, *bias, *past; /* bias, past may be NULL */
	bool silu;
	bool round_half;  /* float16/bfloat16: the convolution output is stored before SiLU */
	enum wh_dtype dt;
	float *y, *state; /* state may be NULL */
	atomic_int failed;
};

static float round_to(enum wh_dtype dt, float f)
{
	return dt == WH_DT_FLOAT16 ? wh_round_f16(f) : dt == WH_DT_BFLOAT16 ? wh_round_bf16(f) : f;
}

/* One (batch, channel) row: the sequence is past (or zeros) followed by x. */
static void ccs_rows(void *arg, size_t begin, size_t end)
{
	struct ccs_job *J = arg;
	int64_t K = J->K, L = J->L, km1 = K - 1;
	float *seq = malloc((size_t)(km1 + L > 0 ? km1 + L : 1) * sizeof(float));
	if (!seq) {
		atomic_store(&J->failed, 1);
		return;
	}
	for (size_t r = begin; r < end; r++) {
		int64_t c = (int64_t)r % J->C;
		if (J->past && km1)
			memcpy(seq, J->past + r * (size_t)km1, (size_t)km1 * sizeof(float));
		else if (km1)
			memset(seq, 0, (size_t)km1 * sizeof(float));
		if (L)
			memcpy(seq + km1, J->x + r * (size_t)L, (size_t)L * sizeof(float));
		const float *w = J->w + (size_t)c * (size_t)K;
		float *y = J->y + r * (size_t)L;
		for (int64_t t = 0; t < L; t++) {
			float acc = 0.0f;
			for (int64_t i = 0; i < K; i++)
				acc += w[i] * seq[t + i];
			if (J->bias)
				acc += J->bias[c];
			if (J->silu) {
				if (J->round_half)
					acc = round_to(J->dt, acc);
				acc = acc * sigmoidf(acc);
			}
			y[t] = acc;
		}
		if (J->state && km1)
			memcpy(J->state + r * (size_t)km1, seq + L, (size_t)km1 * sizeof(float));
	}
	free(seq);
}

static enum wh_status causal_conv_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1), *bias = wh_kin(ctx, 2), *past = wh_kin(ctx, 3);
	char b1[48], b2[48], ab[16];
	enum wh_status st = WH_OK;
	if (!x || !w)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs input and weight (fix the model)");
	const struct wh_tensor *all[4] = {x, w, bias, past};
	for (int i = 0; i < 4; i++)
		if (all[i] && (!is_float_dt(all[i]->dtype) || all[i]->dtype != x->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %d has type %s, expected %s like input (fix the model)", i,
					      wh_dtype_name(all[i]->dtype), wh_dtype_name(x->dtype));
	const char *act = wh_node_attr_string(ctx->node, "activation", "none", ab, sizeof ab);
	struct ccs_job J;
	memset(&J, 0, sizeof J);
	atomic_init(&J.failed, 0);
	if (!strcmp(act, "silu") || !strcmp(act, "swish"))
		J.silu = true;
	else if (strcmp(act, "none"))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "activation is '%s', expected silu, swish or none (fix the attribute)",
				      act);
	if (x->rank != 3)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input has shape %s, expected [batch, channels, length] (fix the model)",
				      shape_of(x, b1, sizeof b1));
	int64_t B = x->dims[0];
	J.C = x->dims[1];
	J.L = x->dims[2];
	if (w->rank != 3 || w->dims[0] != J.C || w->dims[1] != 1 || w->dims[2] < 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "weight has shape %s, expected [%lld,1,k] with k >= 1 (fix the model)",
				      shape_of(w, b1, sizeof b1), (long long)J.C);
	J.K = w->dims[2];
	if (bias && (bias->rank != 1 || bias->dims[0] != J.C))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "bias has shape %s, expected [%lld] (fix the model)",
				      shape_of(bias, b1, sizeof b1), (long long)J.C);
	int64_t sd[3] = {B, J.C, J.K - 1};
	if (past && (past->rank != 3 || memcmp(past->dims, sd, sizeof sd)))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "past_state has shape %s, expected %s (fix the model)",
				      shape_of(past, b1, sizeof b1), wh_shape_str(sd, 3, b2, sizeof b2));
	J.dt = x->dtype;
	J.round_half = x->dtype == WH_DT_FLOAT16 || x->dtype == WH_DT_BFLOAT16;
	float *own[4] = {NULL, NULL, NULL, NULL}, *yb = NULL, *sb = NULL;
	if ((st = f32_view(ctx, x, "input", &J.x, &own[0])) || (st = f32_view(ctx, w, "weight", &J.w, &own[1])) ||
	    (bias && (st = f32_view(ctx, bias, "bias", &J.bias, &own[2]))) ||
	    (past && (st = f32_view(ctx, past, "past_state", &J.past, &own[3]))))
		goto out;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, 3, x->dims)) || (st = out_buf(ctx, &ctx->outputs[0], &yb)))
		goto out;
	if (wanted(ctx, 1) &&
	    ((st = wh_tensor_alloc(&ctx->outputs[1], x->dtype, 3, sd)) || (st = out_buf(ctx, &ctx->outputs[1], &sb))))
		goto out;
	J.y = yb;
	J.state = sb;
	/* with an empty input and no state to write, B * C may be huge: nothing to do; else it
	 * is bounded by the input's or the state's size */
	if (x->count || (sb && ctx->outputs[1].count))
		wh_parallel_for(ctx->pool, (size_t)(B * J.C), wh_grain_for((uint64_t)(J.L + 1) * (uint64_t)J.K), ccs_rows, &J);
	if (atomic_load(&J.failed)) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
	if (sb) {
		out_store(ctx, &ctx->outputs[1], sb);
		sb = NULL;
	}
out:
	out_discard(&ctx->outputs[0], yb);
	if (wanted(ctx, 1))
		out_discard(&ctx->outputs[1], sb);
	for (int i = 0; i < 4; i++)
		free(own[i]);
	return st;
}

/* ---- FlexAttention (ai.onnx.preview) ---- */

/* The modifier subgraphs see the whole [B, Hq, Sq, T] tensor at once, so when one is given
 * the rows run in three passes over a materialised score tensor (scores, softmax, times V)
 * with the subgraphs in between; each pass is split over rows like attn_rows. */
struct flex_job {
	const struct attn_job *J;
	const float *in; /* [rows, T]: scores for the softmax pass, probabilities for the V pass */
	float *out;      /* [rows, T]: scores of the first pass, probabilities of the softmax */
};

static void flex_scores(void *arg, size_t begin, size_t end)
{
	const struct flex_job *F = arg;
	size_t T = (size_t)F->J->T;
	/* no keys: nothing to write, and the empty buffers may be NULL */
	for (size_t r = begin; r < end && T; r++)
		attn_row_scores(F->J, r, F->out + r * T);
}

static void flex_softmax(void *arg, size_t begin, size_t end)
{
	const struct flex_job *F = arg;
	size_t T = (size_t)F->J->T;
	for (size_t r = begin; r < end && T; r++) {
		memcpy(F->out + r * T, F->in + r * T, T * sizeof(float));
		/* the function body is a plain Softmax: a row that score_mod masks entirely
		 * (all -inf) is NaN, unlike Attention's zeros */
		attn_row_softmax(F->out + r * T, F->J->T, true);
	}
}

static void flex_values(void *arg, size_t begin, size_t end)
{
	const struct flex_job *F = arg;
	size_t T = (size_t)F->J->T;
	for (size_t r = begin; r < end; r++)
		attn_row_values(F->J, r, T ? F->in + r * T : NULL);
}

/* The modifier subgraph named name, or NULL when the node has none. */
static enum wh_status flex_mod_attr(const struct wh_kernel_ctx *ctx, const char *name, const struct wh_graph **g_out)
{
	const struct wh_attr *a = wh_node_attr(ctx->node, name);
	*g_out = NULL;
	if (!a)
		return WH_OK;
	if (a->type != WH_ATTR_GRAPH || !a->g)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s is not a graph (fix the model)", name);
	if (a->g->n_inputs != 1 || a->g->n_outputs != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "%s has %u inputs and %u outputs, expected 1 and 1: a [B,Hq,L,S] tensor in and one of the same shape and type out (fix the model)",
				      name, a->g->n_inputs, a->g->n_outputs);
	/* subgraphs run in a frame of the engine; a kernel called on its own has none */
	if (!ctx->frame)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "%s needs an engine to run its subgraph (run the model through the engine)",
				      name);
	*g_out = a->g;
	return WH_OK;
}

/* Runs modifier g on x (softmax precision, [B, Hq, Sq, T]) and replaces x with the result,
 * which must keep x's type and shape. */
static enum wh_status flex_modify(struct wh_kernel_ctx *ctx, const struct wh_graph *g, const char *name,
				  struct wh_tensor *x)
{
	char b1[48], b2[48];
	const struct wh_tensor *ins[1] = {x};
	struct wh_tensor res;
	wh_tensor_init(&res);
	enum wh_status st = wh_kernel_run_subgraph(ctx, g, 1, ins, &res);
	if (st != WH_OK)
		goto out;
	if (!wh_value_is_tensor(&res) || res.dtype != x->dtype || !wh_tensor_same_shape(&res, x)) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s gives %s %s, expected %s %s like its input (fix the subgraph)", name,
				    wh_value_is_tensor(&res) ? wh_dtype_name(res.dtype) : wh_value_kind_name(&res),
				    wh_value_is_tensor(&res) ? shape_of(&res, b1, sizeof b1) : "", wh_dtype_name(x->dtype),
				    shape_of(x, b2, sizeof b2));
		goto out;
	}
	wh_tensor_release(x);
	*x = res;
	wh_tensor_init(&res);
out:
	wh_tensor_release(&res);
	return st;
}

static enum wh_status flex_attention_run(struct wh_kernel_ctx *ctx)
{
	static const char *const mod_names[3] = {"score_mod", "mask_mod", "prob_mod"};
	const struct wh_tensor *q = wh_kin(ctx, 0), *k = wh_kin(ctx, 1), *v = wh_kin(ctx, 2);
	char b1[48], b2[48], b3[48];
	enum wh_status st = WH_OK;
	if (!q || !k || !v)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs Q, K and V (fix the model)");
	if (!is_float_dt(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "Q, K, V have types %s, %s, %s, expected one of float, float16, bfloat16, double for all three (fix the model)",
				      wh_dtype_name(q->dtype), wh_dtype_name(k->dtype), wh_dtype_name(v->dtype));
	if (q->rank != 4 || k->rank != 4 || v->rank != 4)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE,
				      "Q, K, V have shapes %s, %s, %s, expected rank 4: [B,Hq,L,D], [B,Hkv,S,D], [B,Hkv,S,Dv] (fix the model)",
				      shape_of(q, b1, sizeof b1), shape_of(k, b2, sizeof b2), shape_of(v, b3, sizeof b3));
	int64_t sp = wh_node_attr_int(ctx->node, "softmax_precision",
				      q->dtype == WH_DT_DOUBLE ? WH_DT_DOUBLE : WH_DT_FLOAT);
	if (sp != WH_DT_FLOAT && sp != WH_DT_FLOAT16 && sp != WH_DT_BFLOAT16 && sp != WH_DT_DOUBLE)
		return wh_kernel_fail(ctx, WH_ERR_INVALID,
				      "softmax_precision is %lld, expected 1, 10, 11 or 16 (a float type; fix the attribute)",
				      (long long)sp);
	const struct wh_graph *mods[3];
	for (int i = 0; i < 3; i++)
		if ((st = flex_mod_attr(ctx, mod_names[i], &mods[i])) != WH_OK)
			return st;
	/* mask_mod is not in FlexAttention-1 as released (masks go into score_mod as -inf); its
	 * drafts disagree on what it takes, so it is refused rather than guessed */
	if (mods[1])
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED,
				      "attribute mask_mod is not part of FlexAttention-1 (put the mask into score_mod as -inf)");
	struct attn_geom g;
	if ((st = attn_geometry(ctx, q, k, v, &g)) != WH_OK)
		return st;
	g.T = g.Skv;
	int64_t yd[4] = {g.B, g.Hq, g.Sq, g.Dv};
	if ((st = wh_tensor_alloc(&ctx->outputs[0], q->dtype, 4, yd)) != WH_OK || !ctx->outputs[0].count)
		return st;

	struct attn_job J;
	memset(&J, 0, sizeof J);
	atomic_init(&J.failed, 0);
	J.B = g.B;
	J.Hq = g.Hq;
	J.Hkv = g.Hkv;
	J.Sq = g.Sq;
	J.T = g.T;
	J.D = g.D;
	J.Dv = g.Dv;
	float *qf = NULL, *kf = NULL, *own_v = NULL, *yb = NULL, *xb = NULL, *pb = NULL;
	float *own_x = NULL, *own_p = NULL;
	struct wh_tensor x, p;
	wh_tensor_init(&x);
	wh_tensor_init(&p);
	const float *vv;
	if ((st = attn_scaled_qk(ctx, q, k, &g, &qf, &kf)) || (st = f32_view(ctx, v, "V", &vv, &own_v)) ||
	    (st = out_buf(ctx, &ctx->outputs[0], &yb)))
		goto out;
	J.q = qf;
	J.k = kf;
	J.v = vv;
	J.y = yb;
	/* a non-empty Y bounds B * Hq * Sq, and T through V */
	size_t rows = (size_t)g.B * (size_t)g.Hq * (size_t)g.Sq;
	uint64_t T1 = (uint64_t)(g.T ? g.T : 1), per_qk, per_v;
	if (!wh_mul_u64(T1, (uint64_t)g.D + 1, &per_qk))
		per_qk = UINT64_MAX;
	if (!wh_mul_u64(T1, (uint64_t)g.Dv + 1, &per_v))
		per_v = UINT64_MAX;
	/* without modifiers in float32 or double (computed in float32 either way) nothing needs
	 * the whole score tensor: one pass, the same rows as Attention's */
	if (!mods[0] && !mods[1] && !mods[2] && (sp == WH_DT_FLOAT || sp == WH_DT_DOUBLE)) {
		uint64_t per_row;
		if (!wh_add_u64(per_qk, per_v, &per_row))
			per_row = UINT64_MAX;
		wh_parallel_for(ctx->pool, rows, wh_grain_for(per_row), attn_rows, &J);
		if (atomic_load(&J.failed)) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for attention scores (free some memory)");
			goto out;
		}
	} else {
		/* the scores and probabilities are tensors of the softmax precision, which the
		 * modifiers read and write; the passes compute in float32 in between */
		int64_t sd[4] = {g.B, g.Hq, g.Sq, g.T};
		struct flex_job F = {&J, NULL, NULL};
		if ((st = wh_tensor_alloc(&x, (enum wh_dtype)sp, 4, sd)) || (st = out_buf(ctx, &x, &xb)))
			goto out;
		F.out = xb;
		wh_parallel_for(ctx->pool, rows, wh_grain_for(per_qk), flex_scores, &F);
		out_store(ctx, &x, xb);
		xb = NULL;
		for (int i = 0; i < 2; i++)
			if (mods[i] && (st = flex_modify(ctx, mods[i], mod_names[i], &x)))
				goto out;
		if ((st = f32_view(ctx, &x, "scores", &F.in, &own_x)) ||
		    (st = wh_tensor_alloc(&p, (enum wh_dtype)sp, 4, sd)) || (st = out_buf(ctx, &p, &pb)))
			goto out;
		F.out = pb;
		wh_parallel_for(ctx->pool, rows, wh_grain_for(T1 + 1), flex_softmax, &F);
		out_store(ctx, &p, pb);
		pb = NULL;
		free(own_x);
		own_x = NULL;
		wh_tensor_release(&x);
		if (mods[2] && (st = flex_modify(ctx, mods[2], mod_names[2], &p)))
			goto out;
		if ((st = f32_view(ctx, &p, "probabilities", &F.in, &own_p)))
			goto out;
		F.out = NULL;
		wh_parallel_for(ctx->pool, rows, wh_grain_for(per_v), flex_values, &F);
	}
	out_store(ctx, &ctx->outputs[0], yb);
	yb = NULL;
out:
	out_discard(&ctx->outputs[0], yb);
	out_discard(&x, xb);
	out_discard(&p, pb);
	free(qf);
	free(kf);
	free(own_v);
	free(own_x);
	free(own_p);
	wh_tensor_release(&x);
	wh_tensor_release(&p);
	return st;
}

const struct wh_op_def wh_ops_attention[] = {
	{"", "Attention", 23, attention_run},
	{"", "RotaryEmbedding", 23, rotary_run},
	{"", "SwiGLU", 28, swiglu_run},
	{"", "LinearAttention", 27, linear_attention_run},
	{"", "CausalConvWithState", 27, causal_conv_run},
	{"ai.onnx.preview", "FlexAttention", 1, flex_attention_run},
};
const size_t wh_ops_attention_count = sizeof wh_ops_attention / sizeof wh_ops_attention[0];
