/* LpNormalization, CumProd, BitCast, TensorScatter.
 *
 * Numerics: LpNormalization sums each line in double and divides in double (a line whose
 * norm is 0 gives zeros, as ONNX Runtime does, instead of 0/0); CumProd keeps its running
 * product as CumSum keeps its sum: float32 in float32 (numpy's and ONNX Runtime's order),
 * other float types in double, integers in 64 bits wrapping like the element type.
 * BitCast and TensorScatter only move bytes.
 * Work is split over independent lines with wh_parallel_for, so results are bit-identical
 * for every thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

/* outer x n x inner view of a shape around one axis */
static void split_axis(const struct wh_tensor *t, int32_t axis, uint64_t *outer, uint64_t *n, uint64_t *inner)
{
	*outer = 1;
	*inner = 1;
	for (int32_t d = 0; d < axis; d++)
		*outer *= (uint64_t)t->dims[d];
	for (int32_t d = axis + 1; d < t->rank; d++)
		*inner *= (uint64_t)t->dims[d];
	*n = (uint64_t)t->dims[axis];
}

/* ---- LpNormalization ---- */

struct lpn_job {
	const struct wh_tensor *x;
	struct wh_tensor *y;
	uint64_t n, inner;
	int p;
};

static void lpn_range(void *arg, size_t lo, size_t hi)
{
	const struct lpn_job *j = arg;
	bool f32 = j->x->dtype == WH_DT_FLOAT;
	const float *xf = j->x->data;
	float *yf = j->y->data;
	for (size_t l = lo; l < hi; l++) {
		uint64_t base = (l / j->inner) * j->n * j->inner + l % j->inner;
		double s = 0;
		for (uint64_t k = 0; k < j->n; k++) {
			uint64_t e = base + k * j->inner;
			double v = f32 ? (double)xf[e] : wh_tensor_get_f64(j->x, e);
			s += j->p == 1 ? fabs(v) : v * v;
		}
		double norm = j->p == 1 ? s : sqrt(s);
		for (uint64_t k = 0; k < j->n; k++) {
			uint64_t e = base + k * j->inner;
			double v = f32 ? (double)xf[e] : wh_tensor_get_f64(j->x, e);
			double r = norm != 0 ? v / norm : 0.0;
			if (f32)
				yf[e] = (float)r;
			else
				wh_tensor_set_f64(j->y, e, r);
		}
	}
}

static enum wh_status lpnorm_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status s;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	if (x->dtype != WH_DT_FLOAT && x->dtype != WH_DT_DOUBLE && x->dtype != WH_DT_FLOAT16 &&
	    x->dtype != WH_DT_BFLOAT16)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input of type %s is not supported (float16, bfloat16, float32 or float64)",
				      wh_dtype_name(x->dtype));
	int64_t p = wh_node_attr_int(ctx->node, "p", 2);
	if (p != 1 && p != 2)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute p is %lld, expected 1 or 2", (long long)p);
	int64_t axis_v = wh_node_attr_int(ctx->node, "axis", -1);
	int32_t axis;
	if (x->rank == 0 || !wh_norm_axis(axis_v, x->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis_v, x->rank);
	if ((s = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, x->dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	uint64_t outer, n, inner;
	split_axis(x, axis, &outer, &n, &inner);
	if (x->count == 0)
		return WH_OK;
	struct lpn_job j = {x, &ctx->outputs[0], n, inner, (int)p};
	wh_parallel_for(ctx->pool, (size_t)(outer * inner), wh_grain_for(n * 2), lpn_range, &j);
	return WH_OK;
}

/* ---- CumProd ---- */

struct cumprod_job {
	const struct wh_tensor *x;
	struct wh_tensor *y;
	uint64_t n, inner;
	bool excl, rev;
};

static void cumprod_range(void *arg, size_t lo, size_t hi)
{
	const struct cumprod_job *j = arg;
	enum wh_dtype dt = j->x->dtype;
	bool integer = wh_dtype_is_int(dt);
	for (size_t l = lo; l < hi; l++) {
		uint64_t base = (l / j->inner) * j->n * j->inner + l % j->inner;
		float accf = 1;
		double accd = 1;
		uint64_t acci = 1;
		for (uint64_t s = 0; s < j->n; s++) {
			uint64_t e = base + (j->rev ? j->n - 1 - s : s) * j->inner;
			if (dt == WH_DT_FLOAT) {
				float v = ((const float *)j->x->data)[e];
				if (!j->excl)
					accf *= v;
				((float *)j->y->data)[e] = accf;
				if (j->excl)
					accf *= v;
			} else if (integer) {
				uint64_t v = (uint64_t)wh_tensor_get_i64(j->x, e);
				if (!j->excl)
					acci *= v;
				wh_tensor_set_int_wrap(j->y, e, acci);
				if (j->excl)
					acci *= v;
			} else {
				double v = wh_tensor_get_f64(j->x, e);
				if (!j->excl)
					accd *= v;
				wh_tensor_set_f64(j->y, e, accd);
				if (j->excl)
					accd *= v;
			}
		}
	}
}

static enum wh_status cumprod_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *at = wh_kin(ctx, 1);
	enum wh_status s;
	if (!x || !at)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing", x ? "axis" : "x");
	if (!wh_dtype_is_int(x->dtype) && !wh_dtype_is_float(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input of type %s is not numeric", wh_dtype_name(x->dtype));
	if (at->count != 1 || at->rank > 1 || (at->dtype != WH_DT_INT32 && at->dtype != WH_DT_INT64))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis must be an int32 or int64 scalar (got %s with %llu elements)",
				      wh_dtype_name(at->dtype), (unsigned long long)at->count);
	int64_t axis_v = wh_tensor_get_i64(at, 0);
	int32_t axis;
	if (x->rank == 0 || !wh_norm_axis(axis_v, x->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis_v, x->rank);
	if ((s = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, x->dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	uint64_t outer, n, inner;
	split_axis(x, axis, &outer, &n, &inner);
	if (x->count == 0)
		return WH_OK;
	struct cumprod_job j = {x, &ctx->outputs[0], n, inner, wh_node_attr_int(ctx->node, "exclusive", 0) != 0,
				wh_node_attr_int(ctx->node, "reverse", 0) != 0};
	wh_parallel_for(ctx->pool, (size_t)(outer * inner), wh_grain_for(n), cumprod_range, &j);
	return WH_OK;
}

/* ---- BitCast ---- */

static enum wh_status bitcast_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status s;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	const struct wh_attr *a = wh_node_attr(ctx->node, "to");
	if (!a || a->type != WH_ATTR_INT)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute to is missing");
	int64_t to_v = a->i;
	if (to_v != (int)to_v || !wh_dtype_valid((int)to_v) || to_v == WH_DT_UNDEFINED)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute to is %lld, not a tensor type", (long long)to_v);
	enum wh_dtype to = (enum wh_dtype)to_v;
	if (to == WH_DT_STRING || x->dtype == WH_DT_STRING)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "bitcast from %s to %s: strings have no bit pattern",
				      wh_dtype_name(x->dtype), wh_dtype_name(to));
	if (wh_dtype_bits(to) != wh_dtype_bits(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "bitcast from %s (%d bits) to %s (%d bits): the widths must be equal",
				      wh_dtype_name(x->dtype), wh_dtype_bits(x->dtype), wh_dtype_name(to), wh_dtype_bits(to));
	struct wh_tensor *y = &ctx->outputs[0];
	if ((s = wh_tensor_alloc(y, to, x->rank, x->dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	if (!wh_dtype_is_subbyte(to)) {
		/* a copy, not a view: the output may be rounded in place by precision emulation */
		if (x->count)
			memcpy(y->data, x->data, wh_tensor_nbytes(x));
		return WH_OK;
	}
	/* sub-byte types sit one per byte in memory, signed ones sign-extended: keep the low
	 * bits and extend them as the target type does */
	int bits = wh_dtype_bits(to);
	uint8_t mask = (uint8_t)((1u << bits) - 1), sign = (uint8_t)(1u << (bits - 1));
	bool is_signed = to == WH_DT_INT4 || to == WH_DT_INT2;
	const uint8_t *src = x->data;
	uint8_t *dst = y->data;
	for (uint64_t i = 0; i < x->count; i++) {
		uint8_t v = src[i] & mask;
		if (is_signed && (v & sign))
			v |= (uint8_t)~mask;
		dst[i] = v;
	}
	return WH_OK;
}

/* ---- TensorScatter ---- */

static enum wh_status tensor_scatter_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *past = wh_kin(ctx, 0), *upd = wh_kin(ctx, 1), *wi = wh_kin(ctx, 2);
	enum wh_status s;
	char b1[64], b2[64];
	uint8_t *raw = NULL;
	if (!past || !upd)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing", past ? "update" : "past_cache");
	if (upd->dtype != past->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "update has type %s, past_cache %s (they must agree)",
				      wh_dtype_name(upd->dtype), wh_dtype_name(past->dtype));
	int32_t r = past->rank;
	if (r < 2 || upd->rank != r)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "past_cache has rank %d and update rank %d, expected equal ranks of at least 2",
				      r, upd->rank);
	int64_t axis_v = wh_node_attr_int(ctx->node, "axis", -2);
	int32_t axis;
	if (!wh_norm_axis(axis_v, r, &axis) || axis == 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (the sequence axis cannot be the batch axis 0)",
				      (long long)axis_v, r);
	char mbuf[16];
	const char *mode = wh_node_attr_string(ctx->node, "mode", "linear", mbuf, sizeof mbuf);
	bool circular = !strcmp(mode, "circular");
	if (!circular && strcmp(mode, "linear"))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "mode '%s' is not linear or circular", mode);
	for (int32_t d = 0; d < r; d++)
		if (d == axis ? upd->dims[d] > past->dims[d] : upd->dims[d] != past->dims[d])
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "update has shape %s, past_cache %s (they must agree except on axis %d, where update may be shorter)",
					      wh_shape_str(upd->dims, r, b1, sizeof b1), wh_shape_str(past->dims, r, b2, sizeof b2), axis);
	int64_t batch = past->dims[0];
	int64_t max_seq = past->dims[axis], seq = upd->dims[axis];
	if (wi) {
		if (!wh_dtype_is_int(wi->dtype) || wi->rank != 1 || wi->dims[0] != batch)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "write_indices is %s %s, expected an int64 vector of %lld (the batch size)",
					      wh_dtype_name(wi->dtype), wh_shape_str(wi->dims, wi->rank, b1, sizeof b1), (long long)batch);
		for (int64_t b = 0; b < batch; b++) {
			int64_t w = wh_tensor_get_i64(wi, (uint64_t)b);
			if (w < 0 || (!circular && (w > max_seq || seq > max_seq - w)))
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "write_indices[%lld] = %lld does not fit %lld updates in a cache of %lld%s",
						      (long long)b, (long long)w, (long long)seq, (long long)max_seq,
						      circular ? " (must be at least 0)" : " (use mode circular to wrap)");
		}
	}
	if ((s = wh_kernel_out_begin(&ctx->outputs[0], past->dtype, r, past->dims, &raw)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	size_t es = past->dtype == WH_DT_STRING ? sizeof(char *) : wh_dtype_size(past->dtype);
	if (past->count)
		memcpy(raw, past->data, (size_t)past->count * es);
	uint64_t outer, n, inner;
	split_axis(past, axis, &outer, &n, &inner);
	uint64_t per_batch = batch ? outer / (uint64_t)batch : 0;
	size_t row = (size_t)inner * es;
	const uint8_t *src = upd->data;
	for (uint64_t o = 0; o < outer && row; o++) {
		int64_t w = wi ? wh_tensor_get_i64(wi, o / per_batch) : 0;
		for (int64_t q = 0; q < seq; q++) {
			int64_t at = w + q;
			if (circular)
				at %= max_seq;
			memcpy(raw + ((o * n + (uint64_t)at) * inner) * es, src + ((o * (uint64_t)seq + (uint64_t)q) * inner) * es,
			       row);
		}
	}
	if ((s = wh_kernel_out_finish(&ctx->outputs[0], past->dtype, r, past->dims, raw)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	return WH_OK;
}

const struct wh_op_def wh_ops_extra[] = {
	{"", "LpNormalization", 1, lpnorm_run},
	{"", "CumProd", 26, cumprod_run},
	{"", "BitCast", 26, bitcast_run},
	{"", "TensorScatter", 24, tensor_scatter_run},
};
const size_t wh_ops_extra_count = sizeof wh_ops_extra / sizeof wh_ops_extra[0];
