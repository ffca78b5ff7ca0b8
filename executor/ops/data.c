/* Data-movement kernels: gathers, scatters, index-producing ops (TopK, ArgMax, NonZero,
 * Unique), OneHot and CumSum. Resize, Upsample and GridSample live in resize.c and are
 * listed here. Elements move generically by element size; comparisons and reductions go
 * through a per-type path so int64 values stay exact. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/ops/data-internal.h"

static enum wh_status need_input(const struct wh_kernel_ctx *ctx, uint32_t i, const struct wh_tensor **out)
{
	*out = wh_kin(ctx, i);
	if (!*out)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %u is missing (connect it)", i);
	return WH_OK;
}

static const char *shp(const struct wh_tensor *t, char *buf, size_t size)
{
	return wh_shape_str(t->dims, t->rank, buf, size);
}

static bool is_index_type(enum wh_dtype dt)
{
	return dt == WH_DT_INT64 || dt == WH_DT_INT32;
}

static void set_i64(struct wh_tensor *t, uint64_t i, int64_t v)
{
	void *p = t->data;
	switch (t->dtype) {
	case WH_DT_INT64: case WH_DT_UINT64: ((int64_t *)p)[i] = v; break;
	case WH_DT_INT32: case WH_DT_UINT32: ((int32_t *)p)[i] = (int32_t)v; break;
	case WH_DT_INT16: case WH_DT_UINT16: ((int16_t *)p)[i] = (int16_t)v; break;
	case WH_DT_INT8: case WH_DT_UINT8: ((int8_t *)p)[i] = (int8_t)v; break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	default: wh_tensor_set_f64(t, i, (double)v); break;
	}
}

/* Three-way comparison of elements i of a and j of b (same type). NaN compares greater
 * than any number and equal to itself, so sorts are total and deterministic. */
static int cmp_elem(const struct wh_tensor *a, uint64_t i, const struct wh_tensor *b, uint64_t j)
{
	enum wh_dtype dt = a->dtype;
	if (dt == WH_DT_STRING) {
		const char *x = ((const char *const *)a->data)[i], *y = ((const char *const *)b->data)[j];
		int c = strcmp(x ? x : "", y ? y : "");
		return (c > 0) - (c < 0);
	}
	if (dt == WH_DT_UINT64) {
		uint64_t x = ((const uint64_t *)a->data)[i], y = ((const uint64_t *)b->data)[j];
		return (x > y) - (x < y);
	}
	if (wh_dtype_is_int(dt) || dt == WH_DT_BOOL) {
		int64_t x = wh_tensor_get_i64(a, i), y = wh_tensor_get_i64(b, j);
		return (x > y) - (x < y);
	}
	double x = dt == WH_DT_FLOAT ? ((const float *)a->data)[i] : wh_tensor_get_f64(a, i);
	double y = dt == WH_DT_FLOAT ? ((const float *)b->data)[j] : wh_tensor_get_f64(b, j);
	bool nx = x != x, ny = y != y;
	if (nx || ny)
		return nx - ny;
	return (x > y) - (x < y);
}

/* Stable bottom-up merge sort of idx[0..n) by cmp(ctx, a, b). */
typedef int (*cmp_fn)(const void *ctx, uint64_t a, uint64_t b);

static void merge_sort(uint64_t *idx, uint64_t *tmp, size_t n, cmp_fn cmp, const void *cctx)
{
	uint64_t *src = idx, *dst = tmp;
	for (size_t w = 1; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				dst[k++] = cmp(cctx, src[j], src[i]) < 0 ? src[j++] : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		uint64_t *t = src;
		src = dst;
		dst = t;
	}
	if (src != idx)
		memcpy(idx, src, n * sizeof *idx);
}

/* Reads index k of an index tensor and resolves a negative value against dim. */
static bool get_index(const struct wh_tensor *ind, uint64_t k, int64_t dim, int64_t *out)
{
	int64_t v = wh_tensor_get_i64(ind, k);
	if (v < 0)
		v += dim;
	if (v < 0 || v >= dim)
		return false;
	*out = v;
	return true;
}

/* ---- Gather, GatherElements, GatherND ---- */

static enum wh_status gather_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *data, *ind;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &data)) != WH_OK || (st = need_input(ctx, 1, &ind)) != WH_OK)
		return st;
	if (!is_index_type(ind->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "indices must be int32 or int64, got %s (fix the model)", wh_dtype_name(ind->dtype));
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 0);
	int32_t axis;
	if (!wh_norm_axis(axis_attr, data->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, data->rank);
	int32_t r = data->rank - 1 + ind->rank;
	if (r > WH_MAX_RANK)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "output rank %d is above %d (whittle's limit)", r, WH_MAX_RANK);
	int64_t dims[WH_MAX_RANK];
	int32_t k = 0;
	for (int32_t d = 0; d < axis; d++)
		dims[k++] = data->dims[d];
	for (int32_t d = 0; d < ind->rank; d++)
		dims[k++] = ind->dims[d];
	for (int32_t d = axis + 1; d < data->rank; d++)
		dims[k++] = data->dims[d];
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, data->dtype, r, dims)) != WH_OK)
		return st;
	uint64_t outer = 1, inner = 1;
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)data->dims[d];
	for (int32_t d = axis + 1; d < data->rank; d++)
		inner *= (uint64_t)data->dims[d];
	int64_t dim = data->dims[axis];
	size_t blk = (size_t)inner * wh_dtype_size(data->dtype);
	char *dst = out->data;
	for (uint64_t o = 0; o < outer; o++) {
		const char *src = (const char *)data->data + o * (uint64_t)dim * blk;
		for (uint64_t i = 0; i < ind->count; i++) {
			int64_t v;
			if (!get_index(ind, i, dim, &v))
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "index %lld is out of range for axis %d of size %lld (fix the input)",
						      (long long)wh_tensor_get_i64(ind, i), axis, (long long)dim);
			memcpy(dst, src + (uint64_t)v * blk, blk);
			dst += blk;
		}
	}
	return wh_dm_own_strings(out);
}

/* Walks every position of `ind` (same rank as data); calls fn with the flat position in
 * ind and the flat offset in data of the same position with the axis coordinate replaced
 * by the index value. Shared by GatherElements and ScatterElements. */
struct elem_walk {
	const struct wh_kernel_ctx *ctx;
	const struct wh_tensor *data, *ind;
	int32_t axis;
};

static enum wh_status elem_check(const struct elem_walk *w)
{
	char b1[64], b2[64];
	const struct wh_tensor *data = w->data, *ind = w->ind;
	if (!is_index_type(ind->dtype))
		return wh_kernel_fail(w->ctx, WH_ERR_INVALID, "indices must be int32 or int64, got %s (fix the model)", wh_dtype_name(ind->dtype));
	bool ok = ind->rank == data->rank;
	for (int32_t d = 0; ok && d < data->rank; d++)
		ok = d == w->axis || ind->dims[d] <= data->dims[d];
	if (!ok)
		return wh_kernel_fail(w->ctx, WH_ERR_SHAPE, "indices shape %s does not fit data shape %s (fix the model)",
				      shp(ind, b1, sizeof b1), shp(data, b2, sizeof b2));
	return WH_OK;
}

/* Flat data offsets for every index position into offs[ind->count]. */
static enum wh_status elem_offsets(const struct elem_walk *w, uint64_t *offs)
{
	const struct wh_tensor *data = w->data, *ind = w->ind;
	int32_t r = data->rank, axis = w->axis;
	int64_t dstr[WH_MAX_RANK], idx[WH_MAX_RANK] = {0};
	wh_shape_strides(data->dims, r, dstr);
	uint64_t base = 0; /* offset of idx with the axis coordinate at 0 */
	for (uint64_t i = 0; i < ind->count; i++) {
		int64_t v;
		if (!get_index(ind, i, data->dims[axis], &v))
			return wh_kernel_fail(w->ctx, WH_ERR_INVALID, "index %lld is out of range for axis %d of size %lld (fix the input)",
					      (long long)wh_tensor_get_i64(ind, i), axis, (long long)data->dims[axis]);
		offs[i] = base + (uint64_t)(v * dstr[axis]);
		for (int32_t d = r - 1; d >= 0; d--) {
			idx[d]++;
			if (d != axis)
				base += (uint64_t)dstr[d];
			if (idx[d] < ind->dims[d])
				break;
			if (d != axis)
				base -= (uint64_t)(dstr[d] * ind->dims[d]);
			idx[d] = 0;
		}
	}
	return WH_OK;
}

static enum wh_status gather_elements_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *data, *ind;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &data)) != WH_OK || (st = need_input(ctx, 1, &ind)) != WH_OK)
		return st;
	struct elem_walk w = {ctx, data, ind, 0};
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 0);
	if (!wh_norm_axis(axis_attr, data->rank, &w.axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, data->rank);
	if ((st = elem_check(&w)) != WH_OK)
		return st;
	struct wh_tensor *out = &ctx->outputs[0];
	uint64_t *offs = malloc((ind->count ? ind->count : 1) * sizeof *offs);
	if (!offs)
		return wh_error(WH_ERR_NOMEM, "gather: out of memory (free some memory)");
	if ((st = elem_offsets(&w, offs)) != WH_OK)
		goto out;
	if ((st = wh_tensor_alloc(out, data->dtype, ind->rank, ind->dims)) != WH_OK)
		goto out;
	size_t es = wh_dtype_size(data->dtype);
	for (uint64_t i = 0; i < ind->count; i++)
		memcpy((char *)out->data + i * es, (const char *)data->data + offs[i] * es, es);
	st = wh_dm_own_strings(out);
out:
	free(offs);
	return st;
}

static enum wh_status gather_nd_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *data, *ind;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &data)) != WH_OK || (st = need_input(ctx, 1, &ind)) != WH_OK)
		return st;
	char b1[64], b2[64];
	if (ind->dtype != WH_DT_INT64)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "indices must be int64, got %s (fix the model)", wh_dtype_name(ind->dtype));
	int64_t b = ctx->opset >= 12 ? wh_node_attr_int(ctx->node, "batch_dims", 0) : 0;
	if (ind->rank < 1 || b < 0 || b >= ind->rank || b >= data->rank)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "batch_dims %lld does not fit indices %s and data %s (fix the model)",
				      (long long)b, shp(ind, b1, sizeof b1), shp(data, b2, sizeof b2));
	int64_t k = ind->dims[ind->rank - 1];
	if (k < 1 || k > data->rank - b)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "index tuples of length %lld do not fit data %s with batch_dims %lld (fix the model)",
				      (long long)k, shp(data, b2, sizeof b2), (long long)b);
	for (int64_t d = 0; d < b; d++)
		if (ind->dims[d] != data->dims[d])
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "batch dims of indices %s and data %s differ (fix the model)",
					      shp(ind, b1, sizeof b1), shp(data, b2, sizeof b2));
	int64_t dims[WH_MAX_RANK];
	int32_t r = 0;
	for (int32_t d = 0; d < ind->rank - 1; d++)
		dims[r++] = ind->dims[d];
	for (int64_t d = b + k; d < data->rank; d++) {
		if (r >= WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "output rank is above %d (whittle's limit)", WH_MAX_RANK);
		dims[r++] = data->dims[d];
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, data->dtype, r, dims)) != WH_OK)
		return st;
	int64_t dstr[WH_MAX_RANK];
	wh_shape_strides(data->dims, data->rank, dstr);
	uint64_t batches = 1, per_batch = 1, inner = 1;
	for (int64_t d = 0; d < b; d++)
		batches *= (uint64_t)ind->dims[d];
	for (int32_t d = (int32_t)b; d < ind->rank - 1; d++)
		per_batch *= (uint64_t)ind->dims[d];
	for (int64_t d = b + k; d < data->rank; d++)
		inner *= (uint64_t)data->dims[d];
	size_t es = wh_dtype_size(data->dtype), blk = (size_t)inner * es;
	char *dst = out->data;
	for (uint64_t bi = 0; bi < batches; bi++) {
		uint64_t base = bi * (b ? (uint64_t)dstr[b - 1] : 0);
		for (uint64_t j = 0; j < per_batch; j++) {
			uint64_t t = (bi * per_batch + j) * (uint64_t)k, off = base;
			for (int64_t c = 0; c < k; c++) {
				int64_t v;
				if (!get_index(ind, t + (uint64_t)c, data->dims[b + c], &v))
					return wh_kernel_fail(ctx, WH_ERR_INVALID, "index %lld is out of range for axis %lld of size %lld (fix the input)",
							      (long long)wh_tensor_get_i64(ind, t + (uint64_t)c), (long long)(b + c), (long long)data->dims[b + c]);
				off += (uint64_t)(v * dstr[b + c]);
			}
			memcpy(dst, (const char *)data->data + off * es, blk);
			dst += blk;
		}
	}
	return wh_dm_own_strings(out);
}

/* ---- ScatterElements, Scatter, ScatterND ---- */

enum reduction { RED_NONE, RED_ADD, RED_MUL, RED_MAX, RED_MIN };

static enum wh_status parse_reduction(const struct wh_kernel_ctx *ctx, enum wh_dtype dt, enum reduction *out)
{
	char buf[16];
	const char *s = wh_node_attr_string(ctx->node, "reduction", "none", buf, sizeof buf);
	if (!strcmp(s, "none"))
		*out = RED_NONE;
	else if (!strcmp(s, "add"))
		*out = RED_ADD;
	else if (!strcmp(s, "mul"))
		*out = RED_MUL;
	else if (!strcmp(s, "max"))
		*out = RED_MAX;
	else if (!strcmp(s, "min"))
		*out = RED_MIN;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "reduction '%s' is not none, add, mul, max or min (fix the model)", s);
	if (*out != RED_NONE && !wh_dtype_is_float(dt) && !wh_dtype_is_int(dt) && dt != WH_DT_BOOL)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "reduction '%s' needs numeric data, got %s (fix the model)", s, wh_dtype_name(dt));
	return WH_OK;
}

/* out[oi] = reduce(out[oi], upd[ui]) in the element type. */
static void combine(struct wh_tensor *out, uint64_t oi, const struct wh_tensor *upd, uint64_t ui, enum reduction red)
{
	size_t es = wh_dtype_size(out->dtype);
	if (red == RED_NONE) {
		memcpy((char *)out->data + oi * es, (const char *)upd->data + ui * es, es);
		return;
	}
	enum wh_dtype dt = out->dtype;
	if (dt == WH_DT_FLOAT) {
		float a = ((float *)out->data)[oi], b = ((const float *)upd->data)[ui];
		float r = red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
		((float *)out->data)[oi] = r;
	} else if (wh_dtype_is_float(dt)) {
		double a = wh_tensor_get_f64(out, oi), b = wh_tensor_get_f64(upd, ui);
		double r = red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
		wh_tensor_set_f64(out, oi, r);
	} else if (dt == WH_DT_UINT64) {
		uint64_t a = ((uint64_t *)out->data)[oi], b = ((const uint64_t *)upd->data)[ui];
		((uint64_t *)out->data)[oi] = red == RED_ADD ? a + b : red == RED_MUL ? a * b : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
	} else {
		int64_t a = wh_tensor_get_i64(out, oi), b = wh_tensor_get_i64(upd, ui);
		int64_t r = red == RED_ADD ? (int64_t)((uint64_t)a + (uint64_t)b)
			  : red == RED_MUL ? (int64_t)((uint64_t)a * (uint64_t)b)
			  : red == RED_MAX ? (a > b ? a : b) : (a < b ? a : b);
		set_i64(out, oi, r);
	}
}

/* The output starts as a private copy of data. */
static enum wh_status copy_of(struct wh_tensor *out, const struct wh_tensor *data)
{
	enum wh_status st = wh_tensor_alloc(out, data->dtype, data->rank, data->dims);
	if (st != WH_OK)
		return st;
	if (out->count)
		memcpy(out->data, data->data, wh_tensor_nbytes(data));
	return WH_OK;
}

static enum wh_status scatter_elements_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *data, *ind, *upd;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &data)) != WH_OK || (st = need_input(ctx, 1, &ind)) != WH_OK ||
	    (st = need_input(ctx, 2, &upd)) != WH_OK)
		return st;
	enum reduction red = RED_NONE;
	if (ctx->opset >= 16 && (st = parse_reduction(ctx, data->dtype, &red)) != WH_OK)
		return st;
	if (upd->dtype != data->dtype || !wh_tensor_same_shape(upd, ind)) {
		char b1[64], b2[64];
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "updates (%s %s) must have the type of data and the shape of indices %s (fix the model)",
				      wh_dtype_name(upd->dtype), shp(upd, b1, sizeof b1), shp(ind, b2, sizeof b2));
	}
	struct elem_walk w = {ctx, data, ind, 0};
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 0);
	if (!wh_norm_axis(axis_attr, data->rank, &w.axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, data->rank);
	if ((st = elem_check(&w)) != WH_OK)
		return st;
	struct wh_tensor *out = &ctx->outputs[0];
	uint64_t *offs = malloc((ind->count ? ind->count : 1) * sizeof *offs);
	if (!offs)
		return wh_error(WH_ERR_NOMEM, "scatter: out of memory (free some memory)");
	if ((st = elem_offsets(&w, offs)) != WH_OK || (st = copy_of(out, data)) != WH_OK)
		goto out;
	for (uint64_t i = 0; i < ind->count; i++)
		combine(out, offs[i], upd, i, red);
	st = wh_dm_own_strings(out);
out:
	free(offs);
	return st;
}

static enum wh_status scatter_nd_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *data, *ind, *upd;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &data)) != WH_OK || (st = need_input(ctx, 1, &ind)) != WH_OK ||
	    (st = need_input(ctx, 2, &upd)) != WH_OK)
		return st;
	enum reduction red = RED_NONE;
	if (ctx->opset >= 16 && (st = parse_reduction(ctx, data->dtype, &red)) != WH_OK)
		return st;
	char b1[64], b2[64], b3[64];
	if (ind->dtype != WH_DT_INT64 || ind->rank < 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "indices must be int64 with rank >= 1 (fix the model)");
	int64_t k = ind->dims[ind->rank - 1];
	bool ok = k >= 1 && k <= data->rank && upd->dtype == data->dtype &&
		  upd->rank == ind->rank - 1 + data->rank - (int32_t)k;
	for (int32_t d = 0; ok && d < ind->rank - 1; d++)
		ok = upd->dims[d] == ind->dims[d];
	for (int32_t d = (int32_t)k; ok && d < data->rank; d++)
		ok = upd->dims[ind->rank - 1 + d - k] == data->dims[d];
	if (!ok)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "data %s, indices %s and updates %s do not fit together (fix the model)",
				      shp(data, b1, sizeof b1), shp(ind, b2, sizeof b2), shp(upd, b3, sizeof b3));
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = copy_of(out, data)) != WH_OK)
		return st;
	int64_t dstr[WH_MAX_RANK];
	wh_shape_strides(data->dims, data->rank, dstr);
	uint64_t inner = 1;
	for (int32_t d = (int32_t)k; d < data->rank; d++)
		inner *= (uint64_t)data->dims[d];
	uint64_t tuples = ind->count / (uint64_t)k;
	for (uint64_t t = 0; t < tuples; t++) {
		uint64_t off = 0;
		for (int64_t c = 0; c < k; c++) {
			int64_t v;
			if (!get_index(ind, t * (uint64_t)k + (uint64_t)c, data->dims[c], &v))
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "index %lld is out of range for axis %lld of size %lld (fix the input)",
						      (long long)wh_tensor_get_i64(ind, t * (uint64_t)k + (uint64_t)c), (long long)c, (long long)data->dims[c]);
			off += (uint64_t)(v * dstr[c]);
		}
		for (uint64_t e = 0; e < inner; e++)
			combine(out, off + e, upd, t * inner + e, red);
	}
	return wh_dm_own_strings(out);
}

/* ---- OneHot, NonZero ---- */

static enum wh_status one_hot_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *ind, *depth_t, *vals;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &ind)) != WH_OK || (st = need_input(ctx, 1, &depth_t)) != WH_OK ||
	    (st = need_input(ctx, 2, &vals)) != WH_OK)
		return st;
	if (depth_t->count != 1 || depth_t->dtype == WH_DT_STRING)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "depth must be a numeric scalar (fix the model)");
	if (vals->count != 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "values must hold [off, on], got %llu elements (fix the model)", (unsigned long long)vals->count);
	if (ind->dtype == WH_DT_STRING)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "indices must be numeric (fix the model)");
	double dd = wh_tensor_get_f64(depth_t, 0);
	if (!(dd >= 1 && dd <= (double)WH_MAX_ELEMENTS))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "depth %g is not a positive size (fix the input)", dd);
	int64_t depth = (int64_t)dd;
	int32_t r = ind->rank + 1;
	if (r > WH_MAX_RANK)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "output rank %d is above %d (whittle's limit)", r, WH_MAX_RANK);
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", -1);
	int32_t axis;
	if (!wh_norm_axis(axis_attr, r, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, r);
	int64_t dims[WH_MAX_RANK];
	for (int32_t d = 0, s = 0; d < r; d++)
		dims[d] = d == axis ? depth : ind->dims[s++];
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, vals->dtype, r, dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(vals->dtype);
	const char *off_v = vals->data, *on_v = (const char *)vals->data + es;
	for (uint64_t i = 0; i < out->count; i++)
		memcpy((char *)out->data + i * es, off_v, es);
	uint64_t inner = 1;
	for (int32_t d = axis + 1; d < r; d++)
		inner *= (uint64_t)dims[d];
	for (uint64_t i = 0; i < ind->count; i++) {
		int64_t v;
		if (wh_dtype_is_int(ind->dtype)) {
			v = wh_tensor_get_i64(ind, i);
		} else {
			/* float indices truncate; NaN and far-out values select nothing */
			double dv = wh_tensor_get_f64(ind, i);
			if (!(fabs(dv) < (double)depth + 1))
				continue;
			v = (int64_t)dv;
		}
		if (v < 0)
			v += depth;
		if (v < 0 || v >= depth)
			continue;
		uint64_t o = i / inner, in = i % inner;
		memcpy((char *)out->data + ((o * (uint64_t)depth + (uint64_t)v) * inner + in) * es, on_v, es);
	}
	return wh_dm_own_strings(out);
}

static bool nonzero_at(const struct wh_tensor *t, uint64_t i)
{
	if (t->dtype == WH_DT_STRING) {
		const char *s = ((const char *const *)t->data)[i];
		return s && *s;
	}
	if (wh_dtype_is_float(t->dtype))
		return wh_tensor_get_f64(t, i) != 0.0;
	size_t es = wh_dtype_size(t->dtype);
	const uint8_t *p = (const uint8_t *)t->data + i * es;
	for (size_t b = 0; b < es; b++)
		if (p[b])
			return true;
	return false;
}

static enum wh_status nonzero_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t nnz = 0;
	for (uint64_t i = 0; i < in->count; i++)
		nnz += nonzero_at(in, i);
	/* a scalar behaves like a 1-element 1-D tensor */
	int32_t r = in->rank ? in->rank : 1;
	int64_t dims[2] = {in->rank, nnz}, one = 1;
	const int64_t *idims = in->rank ? in->dims : &one;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, WH_DT_INT64, 2, dims)) != WH_OK)
		return st;
	int64_t *o = out->data, idx[WH_MAX_RANK] = {0}, k = 0;
	for (uint64_t i = 0; i < in->count; i++) {
		if (nonzero_at(in, i)) {
			for (int32_t d = 0; d < in->rank; d++)
				o[d * nnz + k] = idx[d];
			k++;
		}
		for (int32_t d = r - 1; d >= 0; d--) {
			if (++idx[d] < idims[d])
				break;
			idx[d] = 0;
		}
	}
	return WH_OK;
}

/* ---- TopK, ArgMax, ArgMin ---- */

struct slice_cmp {
	const struct wh_tensor *t;
	uint64_t base, stride;
	bool largest;
};

/* Orders positions of one slice: by value (descending when largest), ties by position. */
static int slice_order(const void *c, uint64_t a, uint64_t b)
{
	const struct slice_cmp *s = c;
	int v = cmp_elem(s->t, s->base + a * s->stride, s->t, s->base + b * s->stride);
	return s->largest ? -v : v;
}

static enum wh_status topk_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	if (in->rank == 0)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input must have rank >= 1 (fix the model)");
	int64_t k;
	if (ctx->opset < 10) {
		k = wh_node_attr_int(ctx->node, "k", -1);
	} else {
		const struct wh_tensor *kt = wh_kin(ctx, 1);
		if (!kt || kt->count != 1 || !wh_dtype_is_int(kt->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "K must be a 1-element integer tensor (fix the model)");
		k = wh_tensor_get_i64(kt, 0);
	}
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", -1);
	int32_t axis;
	if (!wh_norm_axis(axis_attr, in->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, in->rank);
	int64_t n = in->dims[axis];
	if (k < 0 || k > n)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "k = %lld is outside 0..%lld (fix the model)", (long long)k, (long long)n);
	bool largest = ctx->opset < 11 || wh_node_attr_int(ctx->node, "largest", 1) != 0;
	/* sorted=0 lets any order through; sorting anyway is one valid answer */
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
	dims[axis] = k;
	struct wh_tensor *vals = &ctx->outputs[0], *idxs = ctx->n_outputs > 1 ? &ctx->outputs[1] : NULL;
	if ((st = wh_tensor_alloc(vals, in->dtype, in->rank, dims)) != WH_OK)
		return st;
	if (idxs && (st = wh_tensor_alloc(idxs, WH_DT_INT64, in->rank, dims)) != WH_OK)
		return st;
	uint64_t outer = 1, inner = 1;
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)in->dims[d];
	for (int32_t d = axis + 1; d < in->rank; d++)
		inner *= (uint64_t)in->dims[d];
	uint64_t *ord = malloc((size_t)(n ? n : 1) * 2 * sizeof *ord);
	if (!ord)
		return wh_error(WH_ERR_NOMEM, "topk: out of memory (free some memory)");
	size_t es = wh_dtype_size(in->dtype);
	for (uint64_t o = 0; o < outer; o++) {
		for (uint64_t i = 0; i < inner; i++) {
			struct slice_cmp sc = {in, o * (uint64_t)n * inner + i, inner, largest};
			for (int64_t j = 0; j < n; j++)
				ord[j] = (uint64_t)j;
			merge_sort(ord, ord + n, (size_t)n, slice_order, &sc);
			for (int64_t j = 0; j < k; j++) {
				uint64_t dst = (o * (uint64_t)k + (uint64_t)j) * inner + i;
				memcpy((char *)vals->data + dst * es, (const char *)in->data + (sc.base + ord[j] * inner) * es, es);
				if (idxs)
					((int64_t *)idxs->data)[dst] = (int64_t)ord[j];
			}
		}
	}
	free(ord);
	return wh_dm_own_strings(vals);
}

static enum wh_status arg_extreme(struct wh_kernel_ctx *ctx, bool max)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 0);
	int32_t axis, r = in->rank ? in->rank : 1;
	if (!wh_norm_axis(axis_attr, r, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, in->rank);
	int64_t n = in->rank ? in->dims[axis] : 1;
	if (n == 0)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot reduce the empty axis %d (fix the input)", axis);
	bool keep = wh_node_attr_int(ctx->node, "keepdims", 1) != 0;
	bool last = ctx->opset >= 12 && wh_node_attr_int(ctx->node, "select_last_index", 0) != 0;
	int64_t dims[WH_MAX_RANK];
	int32_t orank = 0;
	for (int32_t d = 0; d < in->rank; d++) {
		if (d == axis && !keep)
			continue;
		dims[orank++] = d == axis ? 1 : in->dims[d];
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, WH_DT_INT64, orank, dims)) != WH_OK)
		return st;
	uint64_t outer = 1, inner = 1;
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)in->dims[d];
	for (int32_t d = axis + 1; d < in->rank; d++)
		inner *= (uint64_t)in->dims[d];
	for (uint64_t o = 0; o < outer; o++) {
		for (uint64_t i = 0; i < inner; i++) {
			uint64_t base = o * (uint64_t)n * inner + i;
			int64_t best = 0;
			for (int64_t j = 1; j < n; j++) {
				int c = cmp_elem(in, base + (uint64_t)j * inner, in, base + (uint64_t)best * inner);
				if (!max)
					c = -c;
				if (c > 0 || (c == 0 && last))
					best = j;
			}
			((int64_t *)out->data)[o * inner + i] = best;
		}
	}
	return WH_OK;
}

static enum wh_status argmax_run(struct wh_kernel_ctx *ctx)
{
	return arg_extreme(ctx, true);
}

static enum wh_status argmin_run(struct wh_kernel_ctx *ctx)
{
	return arg_extreme(ctx, false);
}

/* ---- CumSum ---- */

static enum wh_status cumsum_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in, *at;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &in)) != WH_OK || (st = need_input(ctx, 1, &at)) != WH_OK)
		return st;
	if (at->count != 1 || !wh_dtype_is_int(at->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis must be an integer scalar (fix the model)");
	if (!wh_dtype_is_int(in->dtype) && !wh_dtype_is_float(in->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "type %s is not numeric (fix the model)", wh_dtype_name(in->dtype));
	int32_t axis;
	int64_t axis_v = wh_tensor_get_i64(at, 0);
	if (!wh_norm_axis(axis_v, in->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_v, in->rank);
	bool excl = wh_node_attr_int(ctx->node, "exclusive", 0) != 0;
	bool rev = wh_node_attr_int(ctx->node, "reverse", 0) != 0;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, in->rank, in->dims)) != WH_OK)
		return st;
	uint64_t outer = 1, inner = 1;
	int64_t n = in->dims[axis];
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)in->dims[d];
	for (int32_t d = axis + 1; d < in->rank; d++)
		inner *= (uint64_t)in->dims[d];
	bool integer = wh_dtype_is_int(in->dtype);
	for (uint64_t o = 0; o < outer; o++) {
		for (uint64_t i = 0; i < inner; i++) {
			/* accumulate in the element type's precision: float in float, others wider */
			float accf = 0;
			double accd = 0;
			uint64_t acci = 0;
			for (int64_t s = 0; s < n; s++) {
				int64_t j = rev ? n - 1 - s : s;
				uint64_t p = (o * (uint64_t)n + (uint64_t)j) * inner + i;
				if (in->dtype == WH_DT_FLOAT) {
					float x = ((const float *)in->data)[p];
					if (!excl)
						accf += x;
					((float *)out->data)[p] = accf;
					if (excl)
						accf += x;
				} else if (integer) {
					uint64_t x = (uint64_t)wh_tensor_get_i64(in, p);
					if (!excl)
						acci += x;
					set_i64(out, p, (int64_t)acci);
					if (excl)
						acci += x;
				} else {
					double x = wh_tensor_get_f64(in, p);
					if (!excl)
						accd += x;
					wh_tensor_set_f64(out, p, accd);
					if (excl)
						accd += x;
				}
			}
		}
	}
	return WH_OK;
}

/* ---- Unique ---- */

/* Items are slices along the axis (or single elements when flattened). */
struct items {
	const struct wh_tensor *t;
	uint64_t outer, n, inner; /* item i covers outer x inner elements at stride n*inner */
};

static int item_cmp(const void *c, uint64_t a, uint64_t b)
{
	const struct items *it = c;
	for (uint64_t o = 0; o < it->outer; o++) {
		for (uint64_t e = 0; e < it->inner; e++) {
			uint64_t base = o * it->n * it->inner + e;
			int v = cmp_elem(it->t, base + a * it->inner, it->t, base + b * it->inner);
			if (v)
				return v;
		}
	}
	return 0;
}

static enum wh_status unique_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	bool sorted = wh_node_attr_int(ctx->node, "sorted", 1) != 0;
	const struct wh_attr *aa = wh_node_attr(ctx->node, "axis");
	struct items it = {in, 1, in->count, 1};
	int32_t axis = -1;
	if (aa) {
		if (!wh_norm_axis(aa->i, in->rank, &axis))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)aa->i, in->rank);
		it.n = (uint64_t)in->dims[axis];
		for (int32_t d = 0; d < axis; d++)
			it.outer *= (uint64_t)in->dims[d];
		for (int32_t d = axis + 1; d < in->rank; d++)
			it.inner *= (uint64_t)in->dims[d];
	}
	uint64_t n = it.n;
	size_t cap = (size_t)(n ? n : 1);
	uint64_t *ord = malloc(cap * 2 * sizeof *ord), *first = malloc(cap * sizeof *first);
	uint64_t *group = malloc(cap * sizeof *group), *cnt = malloc(cap * sizeof *cnt);
	if (!ord || !first || !group || !cnt) {
		st = wh_error(WH_ERR_NOMEM, "unique: out of memory (free some memory)");
		goto out;
	}
	for (uint64_t i = 0; i < n; i++)
		ord[i] = i;
	merge_sort(ord, ord + n, (size_t)n, item_cmp, &it);
	/* groups of equal items in sorted order; stable sort puts each group's first occurrence first */
	uint64_t ng = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (i == 0 || item_cmp(&it, ord[i - 1], ord[i]) != 0) {
			first[ng] = ord[i];
			cnt[ng] = 0;
			ng++;
		}
		group[ord[i]] = ng - 1;
		cnt[ng - 1]++;
	}
	/* output position of each group: sorted order, or order of first occurrence */
	uint64_t *pos = ord + n; /* reuse the scratch half */
	if (sorted) {
		for (uint64_t g = 0; g < ng; g++)
			pos[g] = g;
	} else {
		/* groups in order of first occurrence */
		uint64_t *tmp = malloc(cap * sizeof *tmp);
		if (!tmp) {
			st = wh_error(WH_ERR_NOMEM, "unique: out of memory (free some memory)");
			goto out;
		}
		uint64_t p = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t g = group[i];
			if (first[g] == i)
				tmp[p++] = g;
		}
		for (uint64_t q = 0; q < ng; q++)
			pos[tmp[q]] = q;
		free(tmp);
	}
	int64_t dims[WH_MAX_RANK];
	int32_t r;
	if (aa) {
		r = in->rank;
		memcpy(dims, in->dims, sizeof(int64_t) * (size_t)r);
		dims[axis] = (int64_t)ng;
	} else {
		r = 1;
		dims[0] = (int64_t)ng;
	}
	struct wh_tensor *y = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(y, in->dtype, r, dims)) != WH_OK)
		goto out;
	size_t es = wh_dtype_size(in->dtype), blk = (size_t)it.inner * es;
	for (uint64_t g = 0; g < ng; g++)
		for (uint64_t o = 0; o < it.outer; o++)
			memcpy((char *)y->data + ((o * ng + pos[g]) * it.inner) * es,
			       (const char *)in->data + ((o * n + first[g]) * it.inner) * es, blk);
	if ((st = wh_dm_own_strings(y)) != WH_OK)
		goto out;
	int64_t ngd = (int64_t)ng, nd = (int64_t)n;
	if (ctx->n_outputs > 1 && (!ctx->output_wanted || ctx->output_wanted[1])) {
		if ((st = wh_tensor_alloc(&ctx->outputs[1], WH_DT_INT64, 1, &ngd)) != WH_OK)
			goto out;
		for (uint64_t g = 0; g < ng; g++)
			((int64_t *)ctx->outputs[1].data)[pos[g]] = (int64_t)first[g];
	}
	if (ctx->n_outputs > 2 && (!ctx->output_wanted || ctx->output_wanted[2])) {
		if ((st = wh_tensor_alloc(&ctx->outputs[2], WH_DT_INT64, 1, &nd)) != WH_OK)
			goto out;
		for (uint64_t i = 0; i < n; i++)
			((int64_t *)ctx->outputs[2].data)[i] = (int64_t)pos[group[i]];
	}
	if (ctx->n_outputs > 3 && (!ctx->output_wanted || ctx->output_wanted[3])) {
		if ((st = wh_tensor_alloc(&ctx->outputs[3], WH_DT_INT64, 1, &ngd)) != WH_OK)
			goto out;
		for (uint64_t g = 0; g < ng; g++)
			((int64_t *)ctx->outputs[3].data)[pos[g]] = (int64_t)cnt[g];
	}
out:
	free(ord);
	free(first);
	free(group);
	free(cnt);
	return st;
}

/* ai.onnx entries without alternative tactics */
#define OP(name, since, fn) {.domain = "", .op_type = name, .since_version = since, .run = fn}

const struct wh_op_def wh_ops_data[] = {
	OP("Gather", 1, gather_run),
	OP("GatherElements", 11, gather_elements_run),
	OP("GatherND", 11, gather_nd_run),
	OP("Scatter", 9, scatter_elements_run),
	OP("ScatterElements", 11, scatter_elements_run),
	OP("ScatterND", 11, scatter_nd_run),
	OP("OneHot", 9, one_hot_run),
	OP("NonZero", 9, nonzero_run),
	OP("TopK", 1, topk_run),
	OP("ArgMax", 1, argmax_run),
	OP("ArgMin", 1, argmin_run),
	OP("CumSum", 11, cumsum_run),
	OP("Unique", 11, unique_run),
	OP("Upsample", 7, wh_upsample_run),
	OP("Resize", 10, wh_resize_run),
	OP("GridSample", 16, wh_gridsample_run),
};
const size_t wh_ops_data_count = sizeof wh_ops_data / sizeof wh_ops_data[0];
