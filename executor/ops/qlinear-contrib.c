/* ONNX Runtime's quantized contrib ops (domain com.microsoft), as its static quantizer writes
 * them in QOperator format: QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
 * QLinearSoftmax and QGemm. Scalar references of ONNX Runtime's ContribOperators
 * definitions, int8 and uint8, per-tensor scales and zero points (QGemm: B's per column):
 * - QLinearAdd: y = round(a_scale/c_scale * (a - a_zp) + b_scale/c_scale * (b - b_zp)) + c_zp;
 *   QLinearMul: y = round((a - a_zp) * (b - b_zp) * (a_scale * b_scale / c_scale)) + c_zp;
 *   numpy broadcasting of a and b;
 * - QLinearGlobalAveragePool: per channel, y = round((sum(x) - n * x_zp) * x_scale /
 *   (y_scale * n)) + y_zp over the n spatial elements; channels_last: the input is
 *   N x spatial... x C and the output N x 1... x C, else N x C x spatial... and N x C x 1...;
 * - QLinearSoftmax: softmax of the dequantized input along axis (attribute opset >= 13: the
 *   one axis, default -1; older: the input flattened to 2-D at axis, default 1), quantized
 *   with y_scale / y_zero_point;
 * - QGemm: acc = sum_k (A - a_zp)(B - b_zp[n]) + C (int32, broadcast to M x N; ONNX Runtime
 *   quantizes the bias at alpha * a_scale * b_scale), then Y = alpha * a_scale * b_scale[n]
 *   * acc as float32 when y_scale is absent, else round(acc * (alpha * a_scale *
 *   b_scale[n] / y_scale)) + y_zp; transA, transB.
 * Numerics: the scale ratios and requantization in float32 as ONNX Runtime's MLAS kernels
 * do (round half to even, nearbyintf), the sums in int32; Softmax's exponentials and sum in
 * float32. A value at a rounding boundary can differ from ONNX Runtime's lookup-table
 * kernels (QLinearSoftmax, the vectorized QLinearAdd) by one unit. A value NaN (a zero
 * or non-finite scale) stores the type's lowest value.
 * QLinearAdd, QLinearMul and QLinearGlobalAveragePool's sums run on the row kernels of
 * qlinear-internal.h (AVX-512, AVX2 or scalar: the same bytes); QLinearAdd/Mul,
 * QLinearGlobalAveragePool (channels first) and QLinearSoftmax split their rows or chunks
 * over the pool, each element computed alone, so the bytes are the same for every thread
 * count; so does QGemm for transB without transA (a dot product an output), other layouts
 * one thread, one order. */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/ops/qlinear-internal.h"

static bool q8(const struct wh_tensor *t)
{
	return t && (t->dtype == WH_DT_UINT8 || t->dtype == WH_DT_INT8);
}

static int32_t zp_of(const struct wh_tensor *t)
{
	return t && t->count ? (int32_t)wh_tensor_get_i64(t, 0) : 0;
}

static float scale_of(const struct wh_tensor *t)
{
	return (float)wh_tensor_get_f64(t, 0);
}

static int32_t q_at(const struct wh_tensor *t, uint64_t i)
{
	return t->dtype == WH_DT_INT8 ? ((const int8_t *)t->data)[i] : ((const uint8_t *)t->data)[i];
}

/* round half to even, + zp, clamped to the 8-bit type (NaN: its lowest value) */
static uint8_t q_round(float v, int32_t zp, bool s8)
{
	float r = nearbyintf(v) + (float)zp;
	if (s8) {
		r = !(r >= -128.f) ? -128.f : r > 127.f ? 127.f : r;
		return (uint8_t)(int8_t)r;
	}
	r = !(r >= 0.f) ? 0.f : r > 255.f ? 255.f : r;
	return (uint8_t)r;
}

/* q_round stored at i */
static void q_store(struct wh_tensor *y, uint64_t i, float v, int32_t zp)
{
	((uint8_t *)y->data)[i] = q_round(v, zp, y->dtype == WH_DT_INT8);
}

/* ---- row kernels (qlinear-internal.h): scalar references and dispatch ---- */

void wh_qlin_bin_row_scalar(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			    uint8_t *y, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int32_t qa = p->s8 ? (int8_t)a[i * sa] : a[i * sa], qb = p->s8 ? (int8_t)b[i * sb] : b[i * sb];
		int32_t va = qa - p->za, vb = qb - p->zb;
		float v = p->mul ? (float)(va * vb) * p->rab : p->ra * (float)va + p->rb * (float)vb;
		y[i] = q_round(v, p->zc, p->s8);
	}
}

void wh_qlin_bin_row(enum wh_isa isa, const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b,
		     size_t sb, uint8_t *y, size_t n)
{
	if (isa >= WH_ISA_AVX512)
		wh_qlin_bin_row_avx512(p, a, sa, b, sb, y, n);
	else if (isa >= WH_ISA_AVX2)
		wh_qlin_bin_row_avx2(p, a, sa, b, sb, y, n);
	else
		wh_qlin_bin_row_scalar(p, a, sa, b, sb, y, n);
}

void wh_qlin_quant_row_scalar(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = q_round(x[i] * m, zp, s8);
}

void wh_qlin_quant_row(enum wh_isa isa, const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n)
{
	if (isa >= WH_ISA_AVX512)
		wh_qlin_quant_row_avx512(x, m, zp, s8, y, n);
	else if (isa >= WH_ISA_AVX2)
		wh_qlin_quant_row_avx2(x, m, zp, s8, y, n);
	else
		wh_qlin_quant_row_scalar(x, m, zp, s8, y, n);
}

int32_t wh_qlin_dot_scalar(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8, size_t k)
{
	uint32_t acc = 0;
	for (size_t i = 0; i < k; i++) {
		int32_t va = (as8 ? (int8_t)a[i] : a[i]) - za, vb = (bs8 ? (int8_t)b[i] : b[i]) - zb;
		acc += (uint32_t)(va * vb);
	}
	return (int32_t)acc;
}

int32_t wh_qlin_dot(enum wh_isa isa, const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8,
		    size_t k)
{
	if (isa >= WH_ISA_AVX512)
		return wh_qlin_dot_avx512(a, za, as8, b, zb, bs8, k);
	if (isa >= WH_ISA_AVX2)
		return wh_qlin_dot_avx2(a, za, as8, b, zb, bs8, k);
	return wh_qlin_dot_scalar(a, za, as8, b, zb, bs8, k);
}

int64_t wh_qlin_sum_q8_scalar(const uint8_t *x, size_t n, bool s8)
{
	int64_t s = 0;
	for (size_t i = 0; i < n; i++)
		s += s8 ? (int8_t)x[i] : x[i];
	return s;
}

int64_t wh_qlin_sum_q8(enum wh_isa isa, const uint8_t *x, size_t n, bool s8)
{
	if (isa >= WH_ISA_AVX512)
		return wh_qlin_sum_q8_avx512(x, n, s8);
	if (isa >= WH_ISA_AVX2)
		return wh_qlin_sum_q8_avx2(x, n, s8);
	return wh_qlin_sum_q8_scalar(x, n, s8);
}

/* scale (float) and zero point (8-bit, matching type, optional) are per tensor */
static enum wh_status check_qparams(struct wh_kernel_ctx *ctx, const char *what, const struct wh_tensor *s,
				    const struct wh_tensor *zp, const struct wh_tensor *x)
{
	if (!s || !wh_dtype_is_float(s->dtype) || s->count != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s's scale must be a float scalar", what);
	if (zp && (zp->count != 1 || (x && zp->dtype != x->dtype) || !q8(zp)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s's zero point must be an 8-bit scalar of its tensor's type", what);
	return WH_OK;
}

/* ---- QLinearAdd, QLinearMul ---- */

/* The broadcast, collapsed (qbin_plan): rows of n elements, each operand contiguous along
 * a row (step 1) or one value for it (step 0); the outer dimensions give each row's start.
 * A row longer than QBIN_CHUNK is cut into chunks of that many; each chunk is a work item,
 * and a chunk's bytes do not depend on which thread runs it. */
#define QBIN_CHUNK ((size_t)16384)

struct qbin_job {
	struct wh_qlin_bin p;
	enum wh_isa isa;
	const uint8_t *a, *b;
	uint8_t *y;
	int32_t orank;
	int64_t odims[WH_MAX_RANK], osa[WH_MAX_RANK], osb[WH_MAX_RANK];
	size_t n, sa, sb, nck;
};

static void qbin_plan(struct qbin_job *j, int32_t rank, const int64_t *dims, const int64_t *sa, const int64_t *sb)
{
	/* drop the dimensions of 1, then merge each dimension into the next where both
	 * operands' strides allow (outer stride = inner stride * inner size) */
	int64_t d[WH_MAX_RANK], a[WH_MAX_RANK], b[WH_MAX_RANK];
	int32_t k = 0;
	for (int32_t i = 0; i < rank; i++) {
		if (dims[i] == 1)
			continue;
		if (k > 0 && a[k - 1] == sa[i] * dims[i] && b[k - 1] == sb[i] * dims[i]) {
			d[k - 1] *= dims[i];
			a[k - 1] = sa[i];
			b[k - 1] = sb[i];
			continue;
		}
		d[k] = dims[i];
		a[k] = sa[i];
		b[k] = sb[i];
		k++;
	}
	if (k == 0) {
		d[0] = 1;
		a[0] = b[0] = 0;
		k = 1;
	}
	j->n = (size_t)d[k - 1];
	j->sa = (size_t)a[k - 1];
	j->sb = (size_t)b[k - 1];
	j->orank = k - 1;
	for (int32_t i = 0; i < k - 1; i++) {
		j->odims[i] = d[i];
		j->osa[i] = a[i];
		j->osb[i] = b[i];
	}
	j->nck = (j->n + QBIN_CHUNK - 1) / QBIN_CHUNK;
	if (j->nck == 0)
		j->nck = 1;
}

static void qbin_range(void *arg, size_t lo, size_t hi)
{
	const struct qbin_job *j = arg;
	for (size_t it = lo; it < hi; it++) {
		size_t row = it / j->nck, off = it % j->nck * QBIN_CHUNK;
		uint64_t ia = 0, ib = 0, r = row;
		for (int32_t d = j->orank - 1; d >= 0; d--) {
			uint64_t i = r % (uint64_t)j->odims[d];
			r /= (uint64_t)j->odims[d];
			ia += i * (uint64_t)j->osa[d];
			ib += i * (uint64_t)j->osb[d];
		}
		size_t len = j->n - off < QBIN_CHUNK ? j->n - off : QBIN_CHUNK;
		wh_qlin_bin_row(j->isa, &j->p, j->a + ia + off * j->sa, j->sa, j->b + ib + off * j->sb, j->sb,
				j->y + row * j->n + off, len);
	}
}

static enum wh_status qlinear_binary(struct wh_kernel_ctx *ctx, bool mul)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *as = wh_kin(ctx, 1), *az = wh_kin(ctx, 2);
	const struct wh_tensor *B = wh_kin(ctx, 3), *bs = wh_kin(ctx, 4), *bz = wh_kin(ctx, 5);
	const struct wh_tensor *cs = wh_kin(ctx, 6), *cz = wh_kin(ctx, 7);
	if (!q8(A) || !q8(B) || A->dtype != B->dtype)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "inputs A and B must both be int8 or both uint8");
	enum wh_status st;
	if ((st = check_qparams(ctx, "A", as, az, A)) || (st = check_qparams(ctx, "B", bs, bz, B)) ||
	    (st = check_qparams(ctx, "C", cs, cz, A)))
		return st;
	const struct wh_tensor *ts[2] = {A, B};
	int32_t rank;
	int64_t dims[WH_MAX_RANK], sa[WH_MAX_RANK], sb[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shapes of A and B do not broadcast");
	if ((st = wh_tensor_alloc(&ctx->outputs[0], A->dtype, rank, dims)))
		return wh_kernel_fail(ctx, st, "out of memory for the output");
	struct wh_tensor *Y = &ctx->outputs[0];
	if (Y->count == 0)
		return WH_OK;
	wh_broadcast_strides(A, rank, dims, sa);
	wh_broadcast_strides(B, rank, dims, sb);
	struct qbin_job j = {0};
	j.p = (struct wh_qlin_bin){.mul = mul, .s8 = A->dtype == WH_DT_INT8, .za = zp_of(az), .zb = zp_of(bz),
				   .zc = zp_of(cz), .ra = scale_of(as) / scale_of(cs), .rb = scale_of(bs) / scale_of(cs),
				   .rab = scale_of(as) * scale_of(bs) / scale_of(cs)};
	j.isa = ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR;
	j.a = A->data;
	j.b = B->data;
	j.y = Y->data;
	qbin_plan(&j, rank, dims, sa, sb);
	size_t rows = (size_t)(Y->count / j.n);
	wh_parallel_for(ctx->pool, rows * j.nck, wh_grain_for(j.n < QBIN_CHUNK ? j.n : QBIN_CHUNK), qbin_range, &j);
	return WH_OK;
}

static enum wh_status qlinear_add_run(struct wh_kernel_ctx *ctx)
{
	return qlinear_binary(ctx, false);
}

static enum wh_status qlinear_mul_run(struct wh_kernel_ctx *ctx)
{
	return qlinear_binary(ctx, true);
}

/* ---- QLinearGlobalAveragePool ---- */

struct gap_job {
	const uint8_t *x;
	uint8_t *y;
	uint64_t img;
	int64_t zsum; /* x_zero_point * img */
	float scale;
	int32_t zy;
	bool s8;
	enum wh_isa isa;
};

static void gap_range(void *arg, size_t lo, size_t hi)
{
	const struct gap_job *j = arg;
	for (size_t pl = lo; pl < hi; pl++) {
		int64_t sum = wh_qlin_sum_q8(j->isa, j->x + pl * j->img, (size_t)j->img, j->s8) - j->zsum;
		j->y[pl] = q_round((float)sum * j->scale, j->zy, j->s8);
	}
}

static enum wh_status qlinear_gap_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *X = wh_kin(ctx, 0), *xs = wh_kin(ctx, 1), *xz = wh_kin(ctx, 2);
	const struct wh_tensor *ys = wh_kin(ctx, 3), *yz = wh_kin(ctx, 4);
	if (!q8(X))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input X must be int8 or uint8");
	enum wh_status st;
	if ((st = check_qparams(ctx, "X", xs, xz, X)) || (st = check_qparams(ctx, "Y", ys, yz, X)))
		return st;
	if (X->rank < 3)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X must have rank 3 or more (N, C, spatial...)");
	bool last = wh_node_attr_int(ctx->node, "channels_last", 0) != 0;
	int32_t cax = last ? X->rank - 1 : 1;
	int64_t dims[WH_MAX_RANK];
	uint64_t n = (uint64_t)X->dims[0], c = (uint64_t)X->dims[cax], img = 1;
	for (int32_t d = 0; d < X->rank; d++) {
		bool spatial = d != 0 && d != cax;
		dims[d] = spatial ? 1 : X->dims[d];
		if (spatial)
			img *= (uint64_t)X->dims[d];
	}
	if (img == 0 && n != 0 && c != 0)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "the spatial dimensions are empty: there is no average");
	if ((st = wh_tensor_alloc(&ctx->outputs[0], X->dtype, X->rank, dims)))
		return wh_kernel_fail(ctx, st, "out of memory for the output");
	struct wh_tensor *Y = &ctx->outputs[0];
	int32_t zx = zp_of(xz), zy = zp_of(yz);
	float scale = scale_of(xs) / (scale_of(ys) * (float)img);
	if (!last) {
		/* a plane a channel: its sum (exact on every ISA), then the one rounding */
		struct gap_job j = {X->data, Y->data, img, (int64_t)zx * (int64_t)img, scale, zy,
				    X->dtype == WH_DT_INT8, ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR};
		wh_parallel_for(ctx->pool, (size_t)(n * c), wh_grain_for(img), gap_range, &j);
		return WH_OK;
	}
	for (uint64_t b = 0; b < n; b++)
		for (uint64_t ch = 0; ch < c; ch++) {
			int64_t sum = 0;
			for (uint64_t p = 0; p < img; p++)
				sum += q_at(X, (b * img + p) * c + ch);
			sum -= (int64_t)zx * (int64_t)img;
			q_store(Y, b * c + ch, (float)sum * scale, zy);
		}
	return WH_OK;
}

/* ---- QLinearSoftmax ---- */

struct smax_job {
	const uint8_t *x;
	uint8_t *y;
	uint64_t len, inner;
	float xs, inv_y;
	int32_t zy;
	bool xs8, ys8, use_tab;
	enum wh_isa isa;
	float tab[256];
	atomic_bool nomem;
};

static void smax_range(void *arg, size_t lo, size_t hi)
{
	struct smax_job *j = arg;
	float *e = malloc((j->len ? j->len : 1) * sizeof *e);
	if (!e) {
		atomic_store(&j->nomem, true);
		return;
	}
	const uint64_t len = j->len, inner = j->inner;
	for (size_t row = lo; row < hi; row++) {
		uint64_t base = row / inner * len * inner + row % inner;
		const uint8_t *x = j->x + base;
		int32_t mx = INT32_MIN;
		for (uint64_t k = 0; k < len; k++) {
			int32_t v = j->xs8 ? (int8_t)x[k * inner] : x[k * inner];
			mx = v > mx ? v : mx;
		}
		float sum = 0.f;
		for (uint64_t k = 0; k < len; k++) {
			/* the zero point cancels: exp(x_scale * (x - max)) */
			int32_t d = (j->xs8 ? (int8_t)x[k * inner] : x[k * inner]) - mx;
			e[k] = j->use_tab ? j->tab[-d] : expf(j->xs * (float)d);
			sum += e[k];
		}
		float r = j->inv_y / sum;
		if (inner == 1) {
			wh_qlin_quant_row(j->isa, e, r, j->zy, j->ys8, j->y + base, (size_t)len);
			continue;
		}
		for (uint64_t k = 0; k < len; k++)
			j->y[base + k * inner] = q_round(e[k] * r, j->zy, j->ys8);
	}
	free(e);
}

static enum wh_status qlinear_softmax_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *X = wh_kin(ctx, 0), *xs = wh_kin(ctx, 1), *xz = wh_kin(ctx, 2);
	const struct wh_tensor *ys = wh_kin(ctx, 3), *yz = wh_kin(ctx, 4);
	if (!q8(X))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input X must be int8 or uint8");
	enum wh_status st;
	if ((st = check_qparams(ctx, "X", xs, xz, X)) || (st = check_qparams(ctx, "Y", ys, NULL, NULL)))
		return st;
	if (yz && (yz->count != 1 || !q8(yz)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "y_zero_point must be an 8-bit scalar");
	int64_t opset = wh_node_attr_int(ctx->node, "opset", 0);
	if (opset <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute opset (the Softmax opset it replaces) is required");
	bool flat = opset < 13;
	int32_t axis;
	if (X->rank < 1 || !wh_norm_axis(wh_node_attr_int(ctx->node, "axis", flat ? 1 : -1), X->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis out of range for rank %d", (int)X->rank);
	uint64_t outer = 1, len = 1, inner = 1;
	for (int32_t d = 0; d < X->rank; d++) {
		uint64_t v = (uint64_t)X->dims[d];
		if (d < axis)
			outer *= v;
		else if (d == axis || flat)
			len *= v;
		else
			inner *= v;
	}
	enum wh_dtype ydt = yz ? yz->dtype : X->dtype;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], ydt, X->rank, X->dims)))
		return wh_kernel_fail(ctx, st, "out of memory for the output");
	struct wh_tensor *Y = &ctx->outputs[0];
	float xsv = scale_of(xs), inv_y = 1.0f / scale_of(ys);
	int32_t zy = zp_of(yz);
	/* x - max takes at most 256 values: past 256 elements their exponentials come from a
	 * table of the same expf calls (the same bits) */
	struct smax_job j = {X->data, Y->data, len, inner, xsv, inv_y, zy, X->dtype == WH_DT_INT8,
			     ydt == WH_DT_INT8, X->count >= 256, ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR, {0}};
	for (int k = 0; j.use_tab && k < 256; k++)
		j.tab[k] = expf(xsv * (float)(-k));
	/* a row a work item: the bits of a row do not depend on the thread */
	wh_parallel_for(ctx->pool, (size_t)(outer * inner), wh_grain_for(3 * len), smax_range, &j);
	return j.nomem ? wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the exponentials") : WH_OK;
}

/* ---- QGemm ---- */

struct qgemm_job {
	const uint8_t *a, *b;
	const int32_t *c; /* NULL: no bias */
	void *y;
	enum wh_dtype ydt;
	const struct wh_tensor *bs, *bz;
	size_t M, N, K;
	int64_t cs[2];
	int32_t za, zy;
	float alpha_as, inv; /* inv: y_scale (1 without) */
	bool quant, as8, bs8;
	enum wh_isa isa;
};

/* the reference's steps per output (m, n), its accumulator from wh_qlin_dot */
static void qgemm_range(void *arg, size_t lo, size_t hi)
{
	const struct qgemm_job *j = arg;
	for (size_t o = lo; o < hi; o++) {
		size_t m = o / j->N, n = o % j->N;
		int32_t zb = j->bz ? (int32_t)wh_tensor_get_i64(j->bz, j->bz->count == 1 ? 0 : (uint64_t)n) : 0;
		float mult = j->alpha_as * (float)wh_tensor_get_f64(j->bs, j->bs->count == 1 ? 0 : (uint64_t)n);
		if (j->quant)
			mult /= j->inv;
		int32_t acc = wh_qlin_dot(j->isa, j->a + m * j->K, j->za, j->as8, j->b + n * j->K, zb, j->bs8, j->K);
		if (j->c)
			acc = (int32_t)((uint32_t)acc + (uint32_t)j->c[(int64_t)m * j->cs[0] + (int64_t)n * j->cs[1]]);
		if (j->quant)
			((uint8_t *)j->y)[o] = q_round((float)acc * mult, j->zy, j->ydt == WH_DT_INT8);
		else
			((float *)j->y)[o] = (float)acc * mult;
	}
}

static enum wh_status qgemm_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *as = wh_kin(ctx, 1), *az = wh_kin(ctx, 2);
	const struct wh_tensor *B = wh_kin(ctx, 3), *bs = wh_kin(ctx, 4), *bz = wh_kin(ctx, 5);
	const struct wh_tensor *C = wh_kin(ctx, 6), *ys = wh_kin(ctx, 7), *yz = wh_kin(ctx, 8);
	if (!q8(A) || !q8(B))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "inputs A and B must be int8 or uint8");
	if (A->rank != 2 || B->rank != 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "A and B must be matrices");
	enum wh_status st;
	if ((st = check_qparams(ctx, "A", as, az, A)))
		return st;
	bool ta = wh_node_attr_int(ctx->node, "transA", 0) != 0, tb = wh_node_attr_int(ctx->node, "transB", 0) != 0;
	float alpha = wh_node_attr_float(ctx->node, "alpha", 1.0f);
	int64_t M = A->dims[ta], K = A->dims[!ta], N = B->dims[!tb];
	if (B->dims[tb] != K)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inner dimensions differ (%lld and %lld)", (long long)K,
				      (long long)B->dims[tb]);
	if (!bs || !wh_dtype_is_float(bs->dtype) || (bs->count != 1 && bs->count != (uint64_t)N))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "b_scale must be a float scalar or one per column of B");
	if (bz && (bz->dtype != B->dtype || (bz->count != 1 && bz->count != (uint64_t)N)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "b_zero_point must be of B's type, a scalar or one per column");
	if (C && C->dtype != WH_DT_INT32)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "C must be int32");
	if (ys && (st = check_qparams(ctx, "Y", ys, NULL, NULL)))
		return st;
	if (yz && (yz->count != 1 || !q8(yz)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "y_zero_point must be an 8-bit scalar");
	int64_t odims[2] = {M, N}, cs[2] = {0, 0};
	if (C) {
		struct wh_tensor mn = {0};
		mn.rank = 2;
		mn.dims[0] = M;
		mn.dims[1] = N;
		const struct wh_tensor *ts[2] = {C, &mn};
		int32_t r;
		int64_t bd[WH_MAX_RANK];
		if (C->rank > 2 || !wh_broadcast_shapes(2, ts, &r, bd) || r != 2 || bd[0] != M || bd[1] != N)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "C does not broadcast to M x N");
		wh_broadcast_strides(C, 2, odims, cs);
	}
	enum wh_dtype ydt = !ys ? WH_DT_FLOAT : yz ? yz->dtype : A->dtype;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], ydt, 2, odims)))
		return wh_kernel_fail(ctx, st, "out of memory for the output");
	struct wh_tensor *Y = &ctx->outputs[0];
	int32_t za = zp_of(az), zy = zp_of(yz);
	float asv = scale_of(as), inv = ys ? scale_of(ys) : 1.0f;
	if (!ta && tb && M > 0 && N > 0) {
		/* rows of A and of B contiguous along K: an output a dot product (qlinear-internal.h),
		 * each computed alone, so the bits do not depend on the split */
		struct qgemm_job j = {A->data, B->data, C ? C->data : NULL, Y->data, Y->dtype, bs, bz,
				      (size_t)M, (size_t)N, (size_t)K, {cs[0], cs[1]}, za, zy, alpha * asv, inv,
				      ys != NULL, A->dtype == WH_DT_INT8, B->dtype == WH_DT_INT8,
				      ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR};
		wh_parallel_for(ctx->pool, (size_t)(M * N), wh_grain_for((uint64_t)K), qgemm_range, &j);
		return WH_OK;
	}
	for (int64_t n = 0; n < N; n++) {
		uint64_t bi = bs->count == 1 ? 0 : (uint64_t)n;
		int32_t zb = bz ? (int32_t)wh_tensor_get_i64(bz, bz->count == 1 ? 0 : (uint64_t)n) : 0;
		float mult = alpha * asv * (float)wh_tensor_get_f64(bs, bi);
		if (ys)
			mult /= inv;
		for (int64_t m = 0; m < M; m++) {
			int32_t acc = 0;
			for (int64_t k = 0; k < K; k++) {
				int32_t a = q_at(A, (uint64_t)(ta ? k * M + m : m * K + k)) - za;
				int32_t b = q_at(B, (uint64_t)(tb ? n * K + k : k * N + n)) - zb;
				acc = (int32_t)((uint32_t)acc + (uint32_t)(a * b));
			}
			if (C)
				acc = (int32_t)((uint32_t)acc + (uint32_t)((const int32_t *)C->data)[m * cs[0] + n * cs[1]]);
			uint64_t o = (uint64_t)(m * N + n);
			if (ys)
				q_store(Y, o, (float)acc * mult, zy);
			else
				((float *)Y->data)[o] = (float)acc * mult;
		}
	}
	return WH_OK;
}

const struct wh_op_def wh_ops_qlinear_contrib[] = {
	{"com.microsoft", "QLinearAdd", 1, qlinear_add_run, NULL, 0},
	{"com.microsoft", "QLinearMul", 1, qlinear_mul_run, NULL, 0},
	{"com.microsoft", "QLinearGlobalAveragePool", 1, qlinear_gap_run, NULL, 0},
	{"com.microsoft", "QLinearSoftmax", 1, qlinear_softmax_run, NULL, 0},
	{"com.microsoft", "QGemm", 1, qgemm_run, NULL, 0},
};
const size_t wh_ops_qlinear_contrib_count = sizeof wh_ops_qlinear_contrib / sizeof wh_ops_qlinear_contrib[0];
