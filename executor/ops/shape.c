/* Shape kernels: ops that rearrange, view, pad or generate tensors without arithmetic on
 * the values. Elements move generically by element size, so every type (bool, strings,
 * fp8, ...) works wherever the spec allows it. Views (Reshape, Squeeze, Flatten, ...) share
 * the input's data instead of copying. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "graph/onnx-io.h"
#include "executor/ops/data-internal.h"
#include "executor/ops/transpose-internal.h"

/* ---- shared helpers (declared in data-internal.h) ---- */

enum wh_status wh_dm_read_ints(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t,
			       const char *what, int64_t *out, size_t max, size_t *n_out)
{
	char buf[32];
	if (!t)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing (connect it)", what);
	if (!wh_dtype_is_int(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s must be an integer tensor, got %s (fix the model)",
				      what, wh_dtype_name(t->dtype));
	if (t->rank > 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s must be 1-D, got shape %s (fix the model)", what,
				      wh_shape_str(t->dims, t->rank, buf, sizeof buf));
	if (t->count > max)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s has %llu entries, at most %zu allowed (fix the model)",
				      what, (unsigned long long)t->count, max);
	for (uint64_t i = 0; i < t->count; i++)
		out[i] = wh_tensor_get_i64(t, i);
	*n_out = (size_t)t->count;
	return WH_OK;
}

enum wh_status wh_dm_own_strings(struct wh_tensor *t)
{
	if (t->dtype != WH_DT_STRING)
		return WH_OK;
	enum wh_status st = WH_OK;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	size_t n = (size_t)t->count;
	const char **ptrs = malloc((n ? n : 1) * sizeof *ptrs);
	size_t *lens = malloc((n ? n : 1) * sizeof *lens);
	if (!ptrs || !lens) {
		st = wh_error(WH_ERR_NOMEM, "strings: out of memory (free some memory)");
		goto out;
	}
	const char *const *src = t->data;
	for (size_t i = 0; i < n; i++) {
		ptrs[i] = src[i] ? src[i] : "";
		lens[i] = strlen(ptrs[i]);
	}
	if ((st = wh_tensor_alloc_strings(&tmp, t->rank, t->dims, ptrs, lens)) != WH_OK)
		goto out;
	wh_tensor_release(t);
	*t = tmp;
out:
	free(ptrs);
	free(lens);
	return st;
}

#define COPY_ROW(T)                                          \
	do {                                                 \
		T *d_ = dst;                                 \
		const T *s_ = (const T *)src + off;          \
		for (int64_t j = 0; j < n; j++)              \
			d_[j] = s_[j * step];                \
	} while (0)

static void copy_row(void *dst, const void *src, size_t es, int64_t off, int64_t n, int64_t step)
{
	/* the runs of a head's channels (8, 16 or 32 floats): fixed-size copies the compiler
	 * inlines, in place of a memcpy call each */
	if (step == 1 && n * (int64_t)es == 32) {
		memcpy(dst, (const char *)src + off * (int64_t)es, 32);
		return;
	}
	if (step == 1 && n * (int64_t)es == 64) {
		memcpy(dst, (const char *)src + off * (int64_t)es, 64);
		return;
	}
	if (step == 1 && n * (int64_t)es == 128) {
		memcpy(dst, (const char *)src + off * (int64_t)es, 128);
		return;
	}
	if (step == 1) {
		memcpy(dst, (const char *)src + off * (int64_t)es, (size_t)n * es);
		return;
	}
	switch (es) {
	case 1: COPY_ROW(uint8_t); break;
	case 2: COPY_ROW(uint16_t); break;
	case 4: COPY_ROW(uint32_t); break;
	case 8: COPY_ROW(uint64_t); break;
	default:
		for (int64_t j = 0; j < n; j++)
			memcpy((char *)dst + j * (int64_t)es, (const char *)src + (off + j * step) * (int64_t)es, es);
		break;
	}
}

void wh_dm_copy_view(void *dst, const void *src, size_t esize, int32_t rank, const int64_t *dims,
		     int64_t base, const int64_t *sstride)
{
	uint64_t count = 1;
	for (int32_t d = 0; d < rank; d++)
		count *= (uint64_t)dims[d];
	if (count == 0)
		return;
	if (rank == 0) {
		memcpy(dst, (const char *)src + base * (int64_t)esize, esize);
		return;
	}
	int64_t idx[WH_MAX_RANK] = {0};
	int64_t n = dims[rank - 1], off = base;
	uint64_t rows = count / (uint64_t)n;
	char *out = dst;
	for (uint64_t r = 0; r < rows; r++) {
		copy_row(out, src, esize, off, n, sstride[rank - 1]);
		out += (size_t)n * esize;
		/* advance the outer index (all but the last dimension) */
		for (int32_t d = rank - 2; d >= 0; d--) {
			idx[d]++;
			off += sstride[d];
			if (idx[d] < dims[d])
				break;
			off -= sstride[d] * dims[d];
			idx[d] = 0;
		}
	}
}

/* The output shares the input's data with a new shape (same element count). */
static void make_view(struct wh_kernel_ctx *ctx, const struct wh_tensor *in, int32_t rank, const int64_t *dims)
{
	struct wh_tensor *out = &ctx->outputs[0];
	wh_tensor_ref(out, in);
	out->rank = rank;
	for (int32_t d = 0; d < rank; d++)
		out->dims[d] = dims[d];
}

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

/* Reads an axes list (attribute or input) and normalises it against rank; rejects
 * duplicates. */
static enum wh_status norm_axes(const struct wh_kernel_ctx *ctx, const int64_t *axes, size_t n, int32_t rank,
				int32_t *out)
{
	bool seen[WH_MAX_RANK] = {false};
	for (size_t i = 0; i < n; i++) {
		if (!wh_norm_axis(axes[i], rank, &out[i]))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)",
					      (long long)axes[i], rank);
		if (seen[out[i]])
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is listed twice (fix the model)", (long long)axes[i]);
		seen[out[i]] = true;
	}
	return WH_OK;
}

/* ---- Constant ---- */

static enum wh_status constant_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_node *n = ctx->node;
	struct wh_tensor *out = &ctx->outputs[0];
	const struct wh_attr *a;
	if ((a = wh_node_attr(n, "value")) && a->type == WH_ATTR_TENSOR && a->t) {
		enum wh_status st = wh_const_tensor_value(a->t, out);
		return st == WH_OK ? st : wh_kernel_fail(ctx, st, "value: %s", wh_error_message());
	}
	if (wh_node_attr(n, "sparse_value"))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "sparse_value is not supported (use a dense value)");
	enum wh_status st;
	int64_t dims[1];
	if ((a = wh_node_attr(n, "value_float")) && a->type == WH_ATTR_FLOAT) {
		if ((st = wh_tensor_alloc(out, WH_DT_FLOAT, 0, dims)) != WH_OK)
			return st;
		*(float *)out->data = a->f;
		return WH_OK;
	}
	if ((a = wh_node_attr(n, "value_int")) && a->type == WH_ATTR_INT) {
		if ((st = wh_tensor_alloc(out, WH_DT_INT64, 0, dims)) != WH_OK)
			return st;
		*(int64_t *)out->data = a->i;
		return WH_OK;
	}
	if ((a = wh_node_attr(n, "value_floats")) && a->type == WH_ATTR_FLOATS) {
		dims[0] = (int64_t)a->n;
		if ((st = wh_tensor_alloc(out, WH_DT_FLOAT, 1, dims)) != WH_OK)
			return st;
		if (a->n)
			memcpy(out->data, a->floats, a->n * sizeof(float));
		return WH_OK;
	}
	if ((a = wh_node_attr(n, "value_ints")) && a->type == WH_ATTR_INTS) {
		dims[0] = (int64_t)a->n;
		if ((st = wh_tensor_alloc(out, WH_DT_INT64, 1, dims)) != WH_OK)
			return st;
		if (a->n)
			memcpy(out->data, a->ints, a->n * sizeof(int64_t));
		return WH_OK;
	}
	if ((a = wh_node_attr(n, "value_string")) && a->type == WH_ATTR_STRING) {
		const char *s = a->s.len ? (const char *)a->s.data : "";
		size_t len = a->s.len;
		return wh_tensor_alloc_strings(out, 0, dims, &s, &len);
	}
	if ((a = wh_node_attr(n, "value_strings")) && a->type == WH_ATTR_STRINGS) {
		st = WH_OK;
		dims[0] = (int64_t)a->n;
		const char **ptrs = calloc(a->n ? a->n : 1, sizeof *ptrs);
		size_t *lens = calloc(a->n ? a->n : 1, sizeof *lens);
		if (!ptrs || !lens) {
			st = wh_error(WH_ERR_NOMEM, "constant: out of memory (free some memory)");
			goto out;
		}
		for (size_t i = 0; i < a->n; i++) {
			ptrs[i] = a->strings[i].len ? (const char *)a->strings[i].data : "";
			lens[i] = a->strings[i].len;
		}
		st = wh_tensor_alloc_strings(out, 1, dims, ptrs, lens);
out:
		free(ptrs);
		free(lens);
		return st;
	}
	return wh_kernel_fail(ctx, WH_ERR_INVALID, "has no value attribute (fix the model)");
}

/* ---- Identity, Reshape, Flatten, Squeeze, Unsqueeze: views ---- */

static enum wh_status identity_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	wh_tensor_ref(&ctx->outputs[0], in);
	return WH_OK;
}

static enum wh_status reshape_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t shape[WH_MAX_RANK], dims[WH_MAX_RANK];
	size_t n;
	char b1[64], b2[64];
	if (ctx->opset < 5) {
		const int64_t *ints;
		int64_t cnt = wh_node_attr_ints(ctx->node, "shape", &ints);
		if (cnt < 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "shape attribute is missing (fix the model)");
		if (cnt > WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "target rank %lld is above %d (whittle's limit)", (long long)cnt, WH_MAX_RANK);
		n = (size_t)cnt;
		memcpy(shape, ints, n * sizeof *shape);
	} else if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "shape", shape, WH_MAX_RANK, &n)) != WH_OK) {
		return st;
	}
	bool allowzero = ctx->opset >= 14 && wh_node_attr_int(ctx->node, "allowzero", 0) != 0;
	int infer = -1;
	uint64_t known = 1;
	for (size_t i = 0; i < n; i++) {
		int64_t s = shape[i];
		if (s == 0 && !allowzero) {
			if ((int32_t)i >= in->rank)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape entry %zu is 0 (copy) but the input %s has only %d dims (fix the model)",
						      i, shp(in, b1, sizeof b1), in->rank);
			s = in->dims[i];
		} else if (s == -1) {
			if (infer >= 0)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape has more than one -1 (fix the model)");
			infer = (int)i;
			dims[i] = 1;
			continue;
		} else if (s < 0) {
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape entry %lld is negative (fix the model)", (long long)s);
		}
		dims[i] = s;
		if (!wh_mul_u64(known, (uint64_t)s, &known))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "target shape is too large (fix the model)");
	}
	if (infer >= 0) {
		if (known == 0 || in->count % known)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot reshape %s into %s: the -1 entry cannot be inferred (fix the shape)",
					      shp(in, b1, sizeof b1), wh_shape_str(shape, (int32_t)n, b2, sizeof b2));
		dims[infer] = (int64_t)(in->count / known);
		known = in->count;
	}
	if (known != in->count)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot reshape %s (%llu elements) into %s (fix the shape)",
				      shp(in, b1, sizeof b1), (unsigned long long)in->count, wh_shape_str(dims, (int32_t)n, b2, sizeof b2));
	make_view(ctx, in, (int32_t)n, dims);
	return WH_OK;
}

static enum wh_status flatten_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t axis = wh_node_attr_int(ctx->node, "axis", 1);
	if (axis < 0)
		axis += in->rank;
	if (axis < 0 || axis > in->rank)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)",
				      (long long)wh_node_attr_int(ctx->node, "axis", 1), in->rank);
	int64_t dims[2] = {1, 1};
	for (int32_t d = 0; d < in->rank; d++)
		dims[d < axis ? 0 : 1] *= in->dims[d];
	make_view(ctx, in, 2, dims);
	return WH_OK;
}

static enum wh_status squeeze_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t axes[WH_MAX_RANK];
	size_t n = 0;
	bool given;
	if (ctx->opset >= 13) {
		given = wh_kin(ctx, 1) != NULL;
		if (given && (st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "axes", axes, WH_MAX_RANK, &n)) != WH_OK)
			return st;
	} else {
		const int64_t *ints;
		int64_t cnt = wh_node_attr_ints(ctx->node, "axes", &ints);
		given = cnt >= 0;
		if (cnt > WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "too many axes (fix the model)");
		if (given) {
			n = (size_t)cnt;
			memcpy(axes, ints, n * sizeof *axes);
		}
	}
	bool drop[WH_MAX_RANK] = {false};
	if (given) {
		int32_t norm[WH_MAX_RANK];
		if ((st = norm_axes(ctx, axes, n, in->rank, norm)) != WH_OK)
			return st;
		for (size_t i = 0; i < n; i++) {
			if (in->dims[norm[i]] != 1) {
				char b[64];
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot squeeze axis %d of shape %s: its size is not 1 (fix the axes)",
						      norm[i], shp(in, b, sizeof b));
			}
			drop[norm[i]] = true;
		}
	} else {
		for (int32_t d = 0; d < in->rank; d++)
			drop[d] = in->dims[d] == 1;
	}
	int64_t dims[WH_MAX_RANK];
	int32_t r = 0;
	for (int32_t d = 0; d < in->rank; d++)
		if (!drop[d])
			dims[r++] = in->dims[d];
	make_view(ctx, in, r, dims);
	return WH_OK;
}

static enum wh_status unsqueeze_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t axes[WH_MAX_RANK];
	size_t n = 0;
	if (ctx->opset >= 13) {
		if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "axes", axes, WH_MAX_RANK, &n)) != WH_OK)
			return st;
	} else {
		const int64_t *ints;
		int64_t cnt = wh_node_attr_ints(ctx->node, "axes", &ints);
		if (cnt < 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axes attribute is missing (fix the model)");
		if (cnt > WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "too many axes (fix the model)");
		n = (size_t)cnt;
		memcpy(axes, ints, n * sizeof *axes);
	}
	int32_t out_rank = in->rank + (int32_t)n;
	if (out_rank > WH_MAX_RANK)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "output rank %d is above %d (whittle's limit)", out_rank, WH_MAX_RANK);
	int32_t norm[WH_MAX_RANK];
	if ((st = norm_axes(ctx, axes, n, out_rank, norm)) != WH_OK)
		return st;
	bool ins[WH_MAX_RANK] = {false};
	for (size_t i = 0; i < n; i++)
		ins[norm[i]] = true;
	int64_t dims[WH_MAX_RANK];
	int32_t src = 0;
	for (int32_t d = 0; d < out_rank; d++)
		dims[d] = ins[d] ? 1 : in->dims[src++];
	make_view(ctx, in, out_rank, dims);
	return WH_OK;
}

/* ---- Shape, Size ---- */

static enum wh_status shape_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t r = in->rank;
	int64_t start = ctx->opset >= 15 ? wh_node_attr_int(ctx->node, "start", 0) : 0;
	int64_t end = ctx->opset >= 15 ? wh_node_attr_int(ctx->node, "end", r) : r;
	if (start < 0)
		start += r;
	if (end < 0)
		end += r;
	start = start < 0 ? 0 : start > r ? r : start;
	end = end < 0 ? 0 : end > r ? r : end;
	int64_t n = end > start ? end - start : 0;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], WH_DT_INT64, 1, &n)) != WH_OK)
		return st;
	for (int64_t i = 0; i < n; i++)
		((int64_t *)ctx->outputs[0].data)[i] = in->dims[start + i];
	return WH_OK;
}

static enum wh_status size_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], WH_DT_INT64, 0, NULL)) != WH_OK)
		return st;
	*(int64_t *)ctx->outputs[0].data = (int64_t)in->count;
	return WH_OK;
}

/* ---- Transpose ---- */

#define WH_TR_TILE 16

/* A batch of 2-D transposes: nb matrices (the source's at src + b * bs elements) of
 * cols x rows, each written transposed (rows x cols) to dst. */
struct tr_job {
	void *dst;
	const void *src;
	int64_t bs, rows, cols, row_tiles;
	bool avx2; /* 4-byte elements: whole 8 x 8 blocks through wh_tr8x8_u32_avx2 */
};

#define TRANSPOSE_TILES(T)                                                                      \
	do {                                                                                    \
		const int64_t rows = j->rows, cols = j->cols, rt = j->row_tiles;                \
		for (size_t it = lo; it < hi; it++) {                                           \
			int64_t b = (int64_t)it / rt, r0 = ((int64_t)it % rt) * WH_TR_TILE;     \
			int64_t r1 = r0 + WH_TR_TILE < rows ? r0 + WH_TR_TILE : rows;           \
			T *d_ = (T *)j->dst + b * rows * cols;                                  \
			const T *s_ = (const T *)j->src + b * j->bs;                            \
			for (int64_t c0 = 0; c0 < cols; c0 += WH_TR_TILE) {                     \
				int64_t c1 = c0 + WH_TR_TILE < cols ? c0 + WH_TR_TILE : cols;   \
				for (int64_t r = r0; r < r1; r++)                               \
					for (int64_t c = c0; c < c1; c++)                       \
						d_[r * cols + c] = s_[c * rows + r];            \
			}                                                                       \
		}                                                                               \
	} while (0)

/* Items [lo, hi) are strips of WH_TR_TILE output rows, copied tile by tile so that both
 * sides stay in cache. */
static void tr_range_1(void *p, size_t lo, size_t hi)
{
	const struct tr_job *j = p;
	TRANSPOSE_TILES(uint8_t);
}

static void tr_range_2(void *p, size_t lo, size_t hi)
{
	const struct tr_job *j = p;
	TRANSPOSE_TILES(uint16_t);
}

static void tr_range_4(void *p, size_t lo, size_t hi)
{
	const struct tr_job *j = p;
	if (!j->avx2) {
		TRANSPOSE_TILES(uint32_t);
		return;
	}
	const int64_t rows = j->rows, cols = j->cols, rt = j->row_tiles;
	for (size_t it = lo; it < hi; it++) {
		int64_t b = (int64_t)it / rt, r0 = ((int64_t)it % rt) * WH_TR_TILE;
		int64_t r1 = r0 + WH_TR_TILE < rows ? r0 + WH_TR_TILE : rows;
		uint32_t *d = (uint32_t *)j->dst + b * rows * cols;
		const uint32_t *s = (const uint32_t *)j->src + b * j->bs;
		int64_t r8 = r0 + (r1 - r0) / 8 * 8, c8 = cols / 8 * 8;
		for (int64_t r = r0; r < r8; r += 8)
			for (int64_t c = 0; c < c8; c += 8)
				wh_tr8x8_u32_avx2(s + c * rows + r, (size_t)rows, d + r * cols + c, (size_t)cols);
		/* the rows and columns left over from whole blocks */
		for (int64_t r = r0; r < r1; r++)
			for (int64_t c = r < r8 ? c8 : 0; c < cols; c++)
				d[r * cols + c] = s[c * rows + r];
	}
}

static void tr_range_8(void *p, size_t lo, size_t hi)
{
	const struct tr_job *j = p;
	TRANSPOSE_TILES(uint64_t);
}

/* Returns false where es has no fixed-size type (the caller copies row by row). */
static bool transpose_tiles(const struct wh_kernel_ctx *ctx, void *dst, const void *src, size_t es, int64_t nb,
			    int64_t bs, int64_t rows, int64_t cols)
{
	wh_range_fn fn = es == 1 ? tr_range_1 : es == 2 ? tr_range_2 : es == 4 ? tr_range_4 : es == 8 ? tr_range_8 : NULL;
	if (!fn)
		return false;
	struct tr_job job = {dst, src, bs, rows, cols, (rows + WH_TR_TILE - 1) / WH_TR_TILE,
			     ctx->cpu && ctx->cpu->isa >= WH_ISA_AVX2};
	/* on the calling thread: a feature-map permute takes tens of microseconds, about what
	 * waking a worker costs */
	fn(&job, 0, (size_t)(nb * job.row_tiles));
	return true;
}

/* Merges the output dims whose source strides chain (and drops dims of 1), so that
 * NCHW <-> NHWC permutes become batches of 2-D transposes; returns the new rank. */
static int32_t coalesce_view(int32_t r, const int64_t *dims, const int64_t *sstr, int64_t *cd, int64_t *cs)
{
	int32_t n = 0;
	for (int32_t d = 0; d < r; d++) {
		if (dims[d] == 1)
			continue;
		if (n > 0 && cs[n - 1] == sstr[d] * dims[d]) {
			cd[n - 1] *= dims[d];
			cs[n - 1] = sstr[d];
		} else {
			cd[n] = dims[d];
			cs[n] = sstr[d];
			n++;
		}
	}
	return n;
}

static enum wh_status transpose_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int32_t r = in->rank;
	int64_t perm[WH_MAX_RANK];
	const int64_t *ints;
	int64_t cnt = wh_node_attr_ints(ctx->node, "perm", &ints);
	if (cnt < 0) {
		for (int32_t d = 0; d < r; d++)
			perm[d] = r - 1 - d;
	} else {
		if (cnt != r)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "perm has %lld entries, the input has rank %d (fix the model)", (long long)cnt, r);
		bool seen[WH_MAX_RANK] = {false};
		for (int32_t d = 0; d < r; d++) {
			int32_t a;
			if (!wh_norm_axis(ints[d], r, &a) || seen[a])
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "perm is not a permutation of 0..%d (fix the model)", r - 1);
			seen[a] = true;
			perm[d] = a;
		}
	}
	int64_t dims[WH_MAX_RANK], istr[WH_MAX_RANK], sstr[WH_MAX_RANK];
	wh_shape_strides(in->dims, r, istr);
	/* a permutation that keeps the order of the non-1 dims is a view */
	bool view = true;
	int64_t last = -1;
	for (int32_t d = 0; d < r; d++) {
		dims[d] = in->dims[perm[d]];
		sstr[d] = istr[perm[d]];
		if (dims[d] != 1) {
			if (perm[d] < last)
				view = false;
			last = perm[d];
		}
	}
	if (view) {
		make_view(ctx, in, r, dims);
		return WH_OK;
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	/* a batch of 2-D transposes (NCHW <-> NHWC and the like): out[b][i][j] = src[b * bs +
	 * j * rows + i] goes by tiles; other permutes row by row */
	int64_t cd[WH_MAX_RANK], cs[WH_MAX_RANK];
	int32_t cr = coalesce_view(r, dims, sstr, cd, cs);
	bool tiles = in->dtype != WH_DT_STRING && (cr == 2 || (cr == 3 && cs[0] == cd[1] * cd[2])) &&
		     cs[cr - 2] == 1 && cs[cr - 1] == cd[cr - 2];
	/* others row by row over the merged dims: a channel shuffle ([1, 2, C/2, H, W] -> [1,
	 * C/2, 2, H, W]) copies runs of H*W, not of W */
	if (!tiles || !transpose_tiles(ctx, out->data, in->data, wh_dtype_size(in->dtype), cr == 3 ? cd[0] : 1,
				       cr == 3 ? cs[0] : 0, cd[cr - 2], cd[cr - 1]))
		wh_dm_copy_view(out->data, in->data, wh_dtype_size(in->dtype), cr, cd, 0, cs);
	return wh_dm_own_strings(out);
}

/* ---- Concat, Split ---- */

static enum wh_status concat_run(struct wh_kernel_ctx *ctx)
{
	if (ctx->n_inputs == 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "has no inputs (fix the model)");
	const struct wh_tensor *first;
	enum wh_status st = need_input(ctx, 0, &first);
	if (st != WH_OK)
		return st;
	int32_t r = first->rank;
	if (r == 0)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot concatenate scalars (fix the model)");
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", ctx->opset < 4 ? 1 : INT64_MIN);
	if (axis_attr == INT64_MIN)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis attribute is missing (fix the model)");
	int32_t axis;
	if (!wh_norm_axis(axis_attr, r, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, r);
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, first->dims, sizeof(int64_t) * (size_t)r);
	dims[axis] = 0;
	char b1[64], b2[64];
	for (uint32_t i = 0; i < ctx->n_inputs; i++) {
		const struct wh_tensor *t;
		if ((st = need_input(ctx, i, &t)) != WH_OK)
			return st;
		if (t->dtype != first->dtype)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %u is %s, input 0 is %s (fix the model)", i,
					      wh_dtype_name(t->dtype), wh_dtype_name(first->dtype));
		bool ok = t->rank == r;
		for (int32_t d = 0; ok && d < r; d++)
			ok = d == axis || t->dims[d] == first->dims[d];
		if (!ok)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %u has shape %s, expected %s except on axis %d (fix the model)",
					      i, shp(t, b1, sizeof b1), shp(first, b2, sizeof b2), axis);
		if (!wh_add_i64(dims[axis], t->dims[axis], &dims[axis]))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output is too large (fix the model)");
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, first->dtype, r, dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(first->dtype);
	uint64_t outer = 1, inner = 1;
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)dims[d];
	for (int32_t d = axis + 1; d < r; d++)
		inner *= (uint64_t)dims[d];
	size_t out_row = (size_t)((uint64_t)dims[axis] * inner * es);
	size_t off = 0;
	for (uint32_t i = 0; i < ctx->n_inputs; i++) {
		const struct wh_tensor *t = ctx->inputs[i];
		size_t row = (size_t)((uint64_t)t->dims[axis] * inner * es);
		if (row)
			for (uint64_t o = 0; o < outer; o++)
				memcpy((char *)out->data + o * out_row + off, (const char *)t->data + o * row, row);
		off += row;
	}
	return wh_dm_own_strings(out);
}

/* A part of in that is one run of its elements, from element `first`, as a view of in's
 * memory instead of a copy (ShuffleNet's channel split: Slice or Split of the channels of a
 * batch of one). Not for strings (their items are owned per tensor) nor empty parts. A view
 * is read-only like every shared tensor: the emulation rounds a copy (wh_blob_writable). */
static bool view_run(const struct wh_tensor *in, int32_t rank, const int64_t *dims, uint64_t first,
		     struct wh_tensor *out)
{
	uint64_t count = 1;
	for (int32_t d = 0; d < rank; d++)
		count *= (uint64_t)dims[d];
	if (in->dtype == WH_DT_STRING || !count || !in->blob)
		return false;
	wh_tensor_ref(out, in);
	out->rank = rank;
	memcpy(out->dims, dims, sizeof(int64_t) * (size_t)rank);
	out->count = count;
	out->data = (char *)in->data + first * wh_dtype_size(in->dtype);
	return true;
}

static enum wh_status split_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	uint32_t n = ctx->n_outputs;
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 0);
	int32_t axis;
	if (!wh_norm_axis(axis_attr, in->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)axis_attr, in->rank);
	int64_t dim = in->dims[axis];
	int64_t *sizes = malloc((n ? n : 1) * sizeof *sizes);
	if (!sizes)
		return wh_error(WH_ERR_NOMEM, "split: out of memory (free some memory)");
	const struct wh_tensor *split_in = wh_kin(ctx, 1);
	const int64_t *ints;
	int64_t cnt = ctx->opset < 13 ? wh_node_attr_ints(ctx->node, "split", &ints) : -1;
	size_t got = 0;
	if (split_in && (ctx->opset < 2 || ctx->opset >= 13)) {
		if ((st = wh_dm_read_ints(ctx, split_in, "split", sizes, n, &got)) != WH_OK)
			goto out;
		if (got != n) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "split has %zu entries for %u outputs (fix the model)", got, n);
			goto out;
		}
	} else if (cnt >= 0) {
		if ((uint64_t)cnt != n) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "split has %lld entries for %u outputs (fix the model)", (long long)cnt, n);
			goto out;
		}
		memcpy(sizes, ints, n * sizeof *sizes);
	} else {
		int64_t parts = ctx->opset >= 18 ? wh_node_attr_int(ctx->node, "num_outputs", n) : n;
		if (parts != (int64_t)n || n == 0) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "num_outputs is %lld but the node has %u outputs (fix the model)", (long long)parts, n);
			goto out;
		}
		if (ctx->opset < 18 && dim % n) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "axis %d of size %lld does not split evenly into %u parts (give split sizes)", axis, (long long)dim, n);
			goto out;
		}
		/* opset 18: chunks of ceil(dim/n), the last one smaller */
		int64_t chunk = (dim + (int64_t)n - 1) / (int64_t)n, left = dim;
		for (uint32_t i = 0; i < n; i++) {
			sizes[i] = chunk < left ? chunk : left;
			left -= sizes[i];
		}
	}
	int64_t total = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (sizes[i] < 0 || !wh_add_i64(total, sizes[i], &total)) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "split size %lld is invalid (fix the model)", (long long)sizes[i]);
			goto out;
		}
	}
	if (total != dim) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "split sizes add up to %lld, axis %d has size %lld (fix the model)", (long long)total, axis, (long long)dim);
		goto out;
	}
	size_t es = wh_dtype_size(in->dtype);
	uint64_t outer = 1, inner = 1;
	for (int32_t d = 0; d < axis; d++)
		outer *= (uint64_t)in->dims[d];
	for (int32_t d = axis + 1; d < in->rank; d++)
		inner *= (uint64_t)in->dims[d];
	size_t in_row = (size_t)((uint64_t)dim * inner * es);
	size_t off = 0;
	for (uint32_t i = 0; i < n; i++) {
		size_t row = (size_t)((uint64_t)sizes[i] * inner * es);
		if (ctx->output_wanted && !ctx->output_wanted[i]) {
			off += row;
			continue;
		}
		int64_t dims[WH_MAX_RANK];
		memcpy(dims, in->dims, sizeof(int64_t) * (size_t)in->rank);
		dims[axis] = sizes[i];
		struct wh_tensor *o = &ctx->outputs[i];
		if (outer == 1 && view_run(in, in->rank, dims, off / es, o)) {
			off += row;
			continue;
		}
		if ((st = wh_tensor_alloc(o, in->dtype, in->rank, dims)) != WH_OK)
			goto out;
		if (row)
			for (uint64_t k = 0; k < outer; k++)
				memcpy((char *)o->data + k * row, (const char *)in->data + k * in_row + off, row);
		off += row;
		if ((st = wh_dm_own_strings(o)) != WH_OK)
			goto out;
	}
out:
	free(sizes);
	return st;
}

/* ---- Slice ---- */

static enum wh_status slice_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int32_t r = in->rank;
	int64_t starts[WH_MAX_RANK], ends[WH_MAX_RANK], axes[WH_MAX_RANK], steps[WH_MAX_RANK];
	size_t ns, ne, na, nst;
	bool have_axes, have_steps;
	if (ctx->opset < 10) {
		const int64_t *a, *b, *c;
		int64_t cs = wh_node_attr_ints(ctx->node, "starts", &a);
		int64_t ce = wh_node_attr_ints(ctx->node, "ends", &b);
		int64_t ca = wh_node_attr_ints(ctx->node, "axes", &c);
		if (cs < 0 || ce < 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "starts and ends attributes are required (fix the model)");
		if (cs > WH_MAX_RANK || ce > WH_MAX_RANK || ca > WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "too many slice entries (fix the model)");
		ns = (size_t)cs;
		ne = (size_t)ce;
		if (ns)
			memcpy(starts, a, ns * sizeof(int64_t));
		if (ne)
			memcpy(ends, b, ne * sizeof(int64_t));
		have_axes = ca >= 0;
		na = have_axes ? (size_t)ca : 0;
		if (na)
			memcpy(axes, c, na * sizeof(int64_t));
		have_steps = false;
		nst = 0;
	} else {
		if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "starts", starts, WH_MAX_RANK, &ns)) != WH_OK ||
		    (st = wh_dm_read_ints(ctx, wh_kin(ctx, 2), "ends", ends, WH_MAX_RANK, &ne)) != WH_OK)
			return st;
		have_axes = wh_kin(ctx, 3) != NULL;
		have_steps = wh_kin(ctx, 4) != NULL;
		na = nst = 0;
		if (have_axes && (st = wh_dm_read_ints(ctx, wh_kin(ctx, 3), "axes", axes, WH_MAX_RANK, &na)) != WH_OK)
			return st;
		if (have_steps && (st = wh_dm_read_ints(ctx, wh_kin(ctx, 4), "steps", steps, WH_MAX_RANK, &nst)) != WH_OK)
			return st;
	}
	if (ne != ns || (have_axes && na != ns) || (have_steps && nst != ns))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "starts, ends, axes and steps differ in length (fix the model)");
	if (!have_axes) {
		if ((int64_t)ns > r)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%zu starts for rank %d (fix the model)", ns, r);
		for (size_t i = 0; i < ns; i++)
			axes[i] = (int64_t)i;
	}
	if (!have_steps)
		for (size_t i = 0; i < ns; i++)
			steps[i] = 1;
	int32_t norm[WH_MAX_RANK];
	if ((st = norm_axes(ctx, axes, ns, r, norm)) != WH_OK)
		return st;
	int64_t dims[WH_MAX_RANK], str[WH_MAX_RANK], sstr[WH_MAX_RANK];
	wh_shape_strides(in->dims, r, str);
	memcpy(dims, in->dims, sizeof(int64_t) * (size_t)r);
	memcpy(sstr, str, sizeof(int64_t) * (size_t)r);
	int64_t base = 0;
	for (size_t i = 0; i < ns; i++) {
		int32_t a = norm[i];
		int64_t dim = in->dims[a], step = steps[i], s = starts[i], e = ends[i];
		if (step == 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "step on axis %d is 0 (fix the model)", a);
		if (s < 0)
			s += dim;
		if (e < 0)
			e += dim;
		int64_t len;
		if (step > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			len = e > s ? (e - s - 1) / step + 1 : 0;
		} else {
			s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			int64_t mstep = step == INT64_MIN ? INT64_MAX : -step;
			len = s > e ? (s - e - 1) / mstep + 1 : 0;
		}
		dims[a] = len;
		if (len > 0)
			base += s * str[a];
		sstr[a] = len > 1 ? step * str[a] : str[a];
	}
	struct wh_tensor *out = &ctx->outputs[0];
	/* one run of the input: trailing axes whole with their own strides, one axis cut with
	 * step 1, nothing but ones before it */
	int32_t k = r - 1;
	while (k >= 0 && dims[k] == in->dims[k] && (dims[k] <= 1 || sstr[k] == str[k]))
		k--;
	bool run = k < 0 || dims[k] <= 1 || sstr[k] == str[k];
	for (int32_t a = k - 1; run && a >= 0; a--)
		run = dims[a] == 1;
	if (run && view_run(in, r, dims, (uint64_t)base, out))
		return WH_OK;
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	wh_dm_copy_view(out->data, in->data, wh_dtype_size(in->dtype), r, dims, base, sstr);
	return wh_dm_own_strings(out);
}

/* ---- Expand, Tile ---- */

static enum wh_status expand_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int64_t shape[WH_MAX_RANK];
	size_t n;
	if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "shape", shape, WH_MAX_RANK, &n)) != WH_OK)
		return st;
	int32_t r = in->rank > (int32_t)n ? in->rank : (int32_t)n;
	int64_t dims[WH_MAX_RANK];
	char b1[64], b2[64];
	for (int32_t d = 0; d < r; d++) {
		int32_t di = d - (r - in->rank), ds = d - (r - (int32_t)n);
		int64_t a = di >= 0 ? in->dims[di] : 1, b = ds >= 0 ? shape[ds] : 1;
		if (b < 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape entry %lld is negative (fix the model)", (long long)b);
		if (a == b || b == 1)
			dims[d] = a;
		else if (a == 1)
			dims[d] = b;
		else
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot expand %s to %s (fix the shape)", shp(in, b1, sizeof b1),
					      wh_shape_str(shape, (int32_t)n, b2, sizeof b2));
	}
	int64_t sstr[WH_MAX_RANK];
	wh_broadcast_strides(in, r, dims, sstr);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	wh_dm_copy_view(out->data, in->data, wh_dtype_size(in->dtype), r, dims, 0, sstr);
	return wh_dm_own_strings(out);
}

static enum wh_status tile_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int32_t r = in->rank;
	int64_t reps[WH_MAX_RANK];
	size_t n;
	if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "repeats", reps, WH_MAX_RANK, &n)) != WH_OK)
		return st;
	if ((int32_t)n != r)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "repeats has %zu entries, the input has rank %d (fix the model)", n, r);
	int64_t dims[WH_MAX_RANK];
	for (int32_t d = 0; d < r; d++) {
		if (reps[d] < 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "repeats entry %lld is negative (fix the model)", (long long)reps[d]);
		if (!wh_mul_i64(in->dims[d], reps[d], &dims[d]))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output is too large (fix the model)");
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(in->dtype);
	if (out->count == 0)
		return WH_OK;
	if (r == 0) {
		memcpy(out->data, in->data, es);
		return wh_dm_own_strings(out);
	}
	/* each output row (last axis) is the input row repeated; outer indices wrap */
	int64_t istr[WH_MAX_RANK], idx[WH_MAX_RANK] = {0};
	wh_shape_strides(in->dims, r, istr);
	size_t irow = (size_t)in->dims[r - 1] * es;
	uint64_t rows = out->count / (uint64_t)dims[r - 1];
	char *dst = out->data;
	int64_t off = 0;
	for (uint64_t row = 0; row < rows; row++) {
		for (int64_t k = 0; k < reps[r - 1]; k++) {
			memcpy(dst, (const char *)in->data + off * (int64_t)es, irow);
			dst += irow;
		}
		for (int32_t d = r - 2; d >= 0; d--) {
			idx[d]++;
			off += istr[d];
			if (idx[d] % in->dims[d] == 0)
				off -= istr[d] * in->dims[d];
			if (idx[d] < dims[d])
				break;
			idx[d] = 0;
		}
	}
	return wh_dm_own_strings(out);
}

/* ---- Pad, CenterCropPad ---- */

enum pad_mode { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP };

/* Source index of output position o on an axis of size n padded by `before`; -1 = the
 * constant. */
static int64_t pad_src(enum pad_mode m, int64_t o, int64_t before, int64_t n)
{
	int64_t i = o - before;
	if (i >= 0 && i < n)
		return i;
	switch (m) {
	case PAD_CONSTANT:
		return -1;
	case PAD_EDGE:
		return i < 0 ? 0 : n - 1;
	case PAD_WRAP:
		return ((i % n) + n) % n;
	case PAD_REFLECT:
	default: {
		if (n == 1)
			return 0;
		int64_t p = 2 * (n - 1), k = ((i % p) + p) % p;
		return k < n ? k : p - k;
	}
	}
}

/* Generic padded copy: out[o] = in[map(o)] per axis, or *value where any axis maps to -1.
 * maps[d] holds dims[d] source indices. The last axis is cut once into runs (consecutive
 * sources, or the constant) that each row copies or fills whole. */
static enum wh_status pad_copy(struct wh_tensor *out, const struct wh_tensor *in, int64_t *const *maps, const void *value)
{
	int32_t r = in->rank;
	size_t es = wh_dtype_size(in->dtype);
	if (out->count == 0)
		return WH_OK;
	if (r == 0) {
		memcpy(out->data, in->data, es);
		return WH_OK;
	}
	int64_t istr[WH_MAX_RANK], idx[WH_MAX_RANK] = {0};
	wh_shape_strides(in->dims, r, istr);
	int64_t n = out->dims[r - 1];
	uint64_t rows = out->count / (uint64_t)n;
	char *dst = out->data;
	const char *src = in->data;
	const int64_t *inner = maps[r - 1];
	/* the runs of the last axis: run k covers [rs[k], rs[k+1]) from source rsrc[k] (-1: the
	 * constant) */
	int64_t *rs = malloc(((size_t)n + 1) * 2 * sizeof *rs);
	if (!rs)
		return wh_error(WH_ERR_NOMEM, "pad: out of memory (free some memory)");
	int64_t *rsrc = rs + n + 1, nr = 0;
	for (int64_t j = 0; j < n; j++)
		if (j == 0 || (inner[j] < 0) != (inner[j - 1] < 0) || (inner[j] >= 0 && inner[j] != inner[j - 1] + 1)) {
			rs[nr] = j;
			rsrc[nr++] = inner[j];
		}
	rs[nr] = n;
	bool zero = true; /* the constant is all zero bytes: rows of it are a memset */
	for (size_t b = 0; b < es; b++)
		zero = zero && ((const unsigned char *)value)[b] == 0;
	for (uint64_t row = 0; row < rows; row++) {
		int64_t off = 0;
		bool constant = false;
		for (int32_t d = 0; d < r - 1; d++) {
			int64_t s = maps[d][idx[d]];
			if (s < 0)
				constant = true;
			off += s * istr[d];
		}
		for (int64_t k = 0; k < nr; k++) {
			char *d0 = dst + (size_t)rs[k] * es;
			size_t len = (size_t)(rs[k + 1] - rs[k]);
			if (!constant && rsrc[k] >= 0) {
				memcpy(d0, src + (off + rsrc[k]) * (int64_t)es, len * es);
			} else if (zero) {
				memset(d0, 0, len * es);
			} else {
				for (size_t j = 0; j < len; j++)
					memcpy(d0 + j * es, value, es);
			}
		}
		dst += (size_t)n * es;
		for (int32_t d = r - 2; d >= 0; d--) {
			if (++idx[d] < out->dims[d])
				break;
			idx[d] = 0;
		}
	}
	free(rs);
	return WH_OK;
}

/* Allocates the output, then maps every output index to its source and copies. */
static enum wh_status pad_fill(struct wh_tensor *out, const struct wh_tensor *in, const int64_t *dims,
			       const int64_t *before, enum pad_mode m, const void *value)
{
	int32_t r = in->rank;
	enum wh_status st = wh_tensor_alloc(out, in->dtype, r, dims);
	if (st != WH_OK || out->count == 0)
		return st;
	int64_t *maps[WH_MAX_RANK] = {NULL};
	for (int32_t d = 0; d < r; d++) {
		maps[d] = malloc((size_t)dims[d] * sizeof(int64_t));
		if (!maps[d]) {
			st = wh_error(WH_ERR_NOMEM, "pad: out of memory (free some memory)");
			goto out;
		}
		for (int64_t o = 0; o < dims[d]; o++)
			maps[d][o] = pad_src(m, o, before[d], in->dims[d]);
	}
	if ((st = pad_copy(out, in, maps, value)) == WH_OK)
		st = wh_dm_own_strings(out);
out:
	for (int32_t d = 0; d < r; d++)
		free(maps[d]);
	return st;
}

static enum wh_status pad_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int32_t r = in->rank;
	char mbuf[16];
	const char *mode = wh_node_attr_string(ctx->node, "mode", "constant", mbuf, sizeof mbuf);
	enum pad_mode m;
	if (!strcmp(mode, "constant"))
		m = PAD_CONSTANT;
	else if (!strcmp(mode, "reflect"))
		m = PAD_REFLECT;
	else if (!strcmp(mode, "edge"))
		m = PAD_EDGE;
	else if (!strcmp(mode, "wrap"))
		m = PAD_WRAP;
	else
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "mode '%s' is not supported (use constant, reflect, edge or wrap)", mode);
	int64_t raw[2 * WH_MAX_RANK], axes[WH_MAX_RANK];
	size_t np, na = 0;
	bool have_axes = false;
	if (ctx->opset < 11) {
		const int64_t *ints;
		int64_t cnt = wh_node_attr_ints(ctx->node, "pads", &ints);
		if (cnt < 0)
			cnt = wh_node_attr_ints(ctx->node, "paddings", &ints);
		if (cnt < 0 || cnt > 2 * WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "pads attribute is missing or too long (fix the model)");
		np = (size_t)cnt;
		memcpy(raw, ints, np * sizeof *raw);
	} else {
		if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "pads", raw, 2 * WH_MAX_RANK, &np)) != WH_OK)
			return st;
		if (wh_kin(ctx, 3)) {
			have_axes = true;
			if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 3), "axes", axes, WH_MAX_RANK, &na)) != WH_OK)
				return st;
		}
	}
	int64_t before[WH_MAX_RANK] = {0}, after[WH_MAX_RANK] = {0};
	if (have_axes) {
		int32_t norm[WH_MAX_RANK];
		if ((st = norm_axes(ctx, axes, na, r, norm)) != WH_OK)
			return st;
		if (np != 2 * na)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "pads has %zu entries for %zu axes (fix the model)", np, na);
		for (size_t i = 0; i < na; i++) {
			before[norm[i]] = raw[i];
			after[norm[i]] = raw[na + i];
		}
	} else {
		if (np != 2 * (size_t)r)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "pads has %zu entries for rank %d (fix the model)", np, r);
		for (int32_t d = 0; d < r; d++) {
			before[d] = raw[d];
			after[d] = raw[r + d];
		}
	}
	int64_t dims[WH_MAX_RANK];
	for (int32_t d = 0; d < r; d++) {
		if (!wh_add_i64(in->dims[d], before[d], &dims[d]) || !wh_add_i64(dims[d], after[d], &dims[d]) || dims[d] < 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "pads %lld,%lld on axis %d of size %lld give a negative or huge size (fix the model)",
					      (long long)before[d], (long long)after[d], d, (long long)in->dims[d]);
		if (m != PAD_CONSTANT && in->dims[d] == 0 && dims[d] > 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot %s-pad the empty axis %d (fix the model)", mode, d);
	}
	/* the constant, in the input's type */
	union { uint8_t b[16]; double d; const char *s; } value;
	memset(&value, 0, sizeof value);
	size_t es = wh_dtype_size(in->dtype);
	const struct wh_tensor *cv = ctx->opset >= 11 ? wh_kin(ctx, 2) : NULL;
	if (m == PAD_CONSTANT && cv && cv->count > 0) {
		if (cv->dtype != in->dtype)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "constant_value is %s, data is %s (fix the model)",
					      wh_dtype_name(cv->dtype), wh_dtype_name(in->dtype));
		memcpy(&value, cv->data, es);
	} else if (m == PAD_CONSTANT && ctx->opset < 11 && in->dtype != WH_DT_STRING) {
		struct wh_tensor tmp = *in;
		tmp.data = &value;
		wh_tensor_set_f64(&tmp, 0, wh_node_attr_float(ctx->node, "value", 0.0f));
	} else if (in->dtype == WH_DT_STRING) {
		value.s = "";
	}
	/* nothing to pad (a window-multiple padding of a size that divides): the input itself */
	bool none = true;
	for (int32_t d = 0; d < r; d++)
		none = none && before[d] == 0 && after[d] == 0;
	if (none) {
		wh_tensor_ref(&ctx->outputs[0], in);
		return WH_OK;
	}
	return pad_fill(&ctx->outputs[0], in, dims, before, m, &value);
}

static enum wh_status center_crop_pad_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	int32_t r = in->rank;
	int64_t shape[WH_MAX_RANK], axes[WH_MAX_RANK];
	size_t ns, na;
	if ((st = wh_dm_read_ints(ctx, wh_kin(ctx, 1), "shape", shape, WH_MAX_RANK, &ns)) != WH_OK)
		return st;
	const int64_t *ints;
	int64_t cnt = wh_node_attr_ints(ctx->node, "axes", &ints);
	if (cnt > WH_MAX_RANK)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "too many axes (fix the model)");
	if (cnt >= 0) {
		na = (size_t)cnt;
		memcpy(axes, ints, na * sizeof *axes);
	} else {
		na = (size_t)r;
		for (int32_t d = 0; d < r; d++)
			axes[d] = d;
	}
	if (ns != na)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape has %zu entries for %zu axes (fix the model)", ns, na);
	int32_t norm[WH_MAX_RANK];
	if ((st = norm_axes(ctx, axes, na, r, norm)) != WH_OK)
		return st;
	int64_t dims[WH_MAX_RANK], before[WH_MAX_RANK] = {0};
	memcpy(dims, in->dims, sizeof(int64_t) * (size_t)r);
	for (size_t i = 0; i < na; i++) {
		int32_t a = norm[i];
		if (shape[i] < 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape entry %lld is negative (fix the model)", (long long)shape[i]);
		dims[a] = shape[i];
		/* crop: start (dim-s)/2 in the input; pad: the input starts at (s-dim)/2 */
		before[a] = shape[i] < in->dims[a] ? -((in->dims[a] - shape[i]) / 2) : (shape[i] - in->dims[a]) / 2;
	}
	union { uint8_t b[16]; const char *s; } zero;
	memset(&zero, 0, sizeof zero);
	if (in->dtype == WH_DT_STRING)
		zero.s = "";
	return pad_fill(&ctx->outputs[0], in, dims, before, PAD_CONSTANT, &zero);
}

/* ---- Range, ConstantOfShape, EyeLike ---- */

static enum wh_status range_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *ts[3];
	enum wh_status st;
	for (uint32_t i = 0; i < 3; i++) {
		if ((st = need_input(ctx, i, &ts[i])) != WH_OK)
			return st;
		if (ts[i]->count != 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %u must be a scalar (fix the model)", i);
		if (ts[i]->dtype != ts[0]->dtype)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs differ in type (fix the model)");
	}
	enum wh_dtype dt = ts[0]->dtype;
	struct wh_tensor *out = &ctx->outputs[0];
	int64_t n;
	if (wh_dtype_is_int(dt)) {
		int64_t s = wh_tensor_get_i64(ts[0], 0), l = wh_tensor_get_i64(ts[1], 0), d = wh_tensor_get_i64(ts[2], 0);
		if (d == 0)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "delta is 0 (fix the model)");
		/* ceil((l - s) / d) in 128 bits: the difference of two int64 may not fit */
		__int128 diff = (__int128)l - s, q = diff / d;
		if (q * d != diff && ((diff > 0) == (d > 0)))
			q++;
		if (q < 0)
			q = 0;
		if (q > (__int128)WH_MAX_ELEMENTS)
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "range has too many elements (fix the model)");
		n = (int64_t)q;
		if ((st = wh_tensor_alloc(out, dt, 1, &n)) != WH_OK)
			return st;
		for (int64_t i = 0; i < n; i++) {
			__int128 v = (__int128)s + (__int128)i * d;
			switch (dt) {
			case WH_DT_INT64: ((int64_t *)out->data)[i] = (int64_t)v; break;
			case WH_DT_INT32: ((int32_t *)out->data)[i] = (int32_t)v; break;
			case WH_DT_INT16: ((int16_t *)out->data)[i] = (int16_t)v; break;
			default: wh_tensor_set_f64(out, (uint64_t)i, (double)v); break;
			}
		}
		return WH_OK;
	}
	double s = wh_tensor_get_f64(ts[0], 0), l = wh_tensor_get_f64(ts[1], 0), d = wh_tensor_get_f64(ts[2], 0);
	if (d == 0 || s != s || l != l || d != d)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "delta is 0 or an input is NaN (fix the model)");
	double q = ceil((l - s) / d);
	if (q < 0)
		q = 0;
	if (!(q <= (double)WH_MAX_ELEMENTS))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "range has too many elements (fix the model)");
	n = (int64_t)q;
	if ((st = wh_tensor_alloc(out, dt, 1, &n)) != WH_OK)
		return st;
	for (int64_t i = 0; i < n; i++) {
		if (dt == WH_DT_FLOAT)
			((float *)out->data)[i] = (float)s + (float)i * (float)d;
		else
			wh_tensor_set_f64(out, (uint64_t)i, s + (double)i * d);
	}
	return WH_OK;
}

static enum wh_status constant_of_shape_run(struct wh_kernel_ctx *ctx)
{
	int64_t dims[WH_MAX_RANK];
	size_t n;
	enum wh_status st = wh_dm_read_ints(ctx, wh_kin(ctx, 0), "shape", dims, WH_MAX_RANK, &n);
	if (st != WH_OK)
		return st;
	for (size_t i = 0; i < n; i++)
		if (dims[i] < 0)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "shape entry %lld is negative (fix the model)", (long long)dims[i]);
	enum wh_dtype dt = WH_DT_FLOAT;
	union { uint8_t b[16]; double d; } value;
	memset(&value, 0, sizeof value);
	const struct wh_attr *a = wh_node_attr(ctx->node, "value");
	if (a && a->type == WH_ATTR_TENSOR && a->t) {
		const struct wh_const_tensor *ct = a->t;
		uint64_t cnt;
		if (!wh_shape_count(ct->dims, ct->rank, &cnt) || cnt != 1)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "value must hold one element (fix the model)");
		if (ct->dtype == WH_DT_STRING)
			return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "string values are not supported (use a numeric value)");
		struct wh_tensor tmp;
		wh_tensor_init(&tmp);
		if ((st = wh_tensor_from_raw(&tmp, ct->dtype, ct->rank, ct->dims, ct->data)) != WH_OK)
			return st;
		dt = ct->dtype;
		memcpy(&value, tmp.data, wh_dtype_size(dt));
		wh_tensor_release(&tmp);
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, dt, (int32_t)n, dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(dt);
	bool zero = true;
	for (size_t i = 0; i < es; i++)
		zero = zero && value.b[i] == 0;
	if (zero && out->count)
		memset(out->data, 0, wh_tensor_nbytes(out));
	else
		for (uint64_t i = 0; i < out->count; i++)
			memcpy((char *)out->data + i * es, &value, es);
	return WH_OK;
}

static enum wh_status eye_like_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	if (in->rank != 2) {
		char b[64];
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input must be 2-D, got %s (fix the model)", shp(in, b, sizeof b));
	}
	int64_t dt = wh_node_attr_int(ctx->node, "dtype", in->dtype);
	if (!wh_dtype_valid((int)dt) || dt == WH_DT_STRING || dt == WH_DT_UNDEFINED)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "dtype %lld is not valid here (fix the model)", (long long)dt);
	int64_t k = wh_node_attr_int(ctx->node, "k", 0);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, (enum wh_dtype)dt, 2, in->dims)) != WH_OK)
		return st;
	if (out->count)
		memset(out->data, 0, wh_tensor_nbytes(out));
	for (int64_t i = 0; i < in->dims[0]; i++) {
		if (k > INT64_MAX - i)
			continue;
		int64_t j = i + k;
		if (j < 0 || j >= in->dims[1])
			continue;
		wh_tensor_set_f64(out, (uint64_t)(i * in->dims[1] + j), 1.0);
	}
	return WH_OK;
}

/* ---- DepthToSpace, SpaceToDepth ---- */

static enum wh_status depth_space(struct wh_kernel_ctx *ctx, bool to_space)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	char b[64], mbuf[8];
	if (in->rank != 4)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input must be 4-D (NCHW), got %s (fix the model)", shp(in, b, sizeof b));
	int64_t bs = wh_node_attr_int(ctx->node, "blocksize", 0);
	if (bs <= 0 || bs > (1 << 20))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "blocksize %lld is not positive (fix the model)", (long long)bs);
	int64_t N = in->dims[0], C = in->dims[1], H = in->dims[2], W = in->dims[3];
	int64_t vd[6], vs[6], od[4];
	if (to_space) {
		const char *mode = wh_node_attr_string(ctx->node, "mode", "DCR", mbuf, sizeof mbuf);
		bool crd = !strcmp(mode, "CRD");
		if (!crd && strcmp(mode, "DCR"))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "mode '%s' is not DCR or CRD (fix the model)", mode);
		if (C % (bs * bs))
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "channels %lld are not divisible by blocksize^2 = %lld (fix the model)", (long long)C, (long long)(bs * bs));
		int64_t c = C / (bs * bs);
		/* output viewed as [N, c, H, b1, W, b2]; input channel = DCR: (b1*b + b2)*c + ci,
		 * CRD: (ci*b + b1)*b + b2 */
		int64_t sc = H * W;
		int64_t s_ci = crd ? bs * bs * sc : sc, s_b1 = crd ? bs * sc : bs * c * sc, s_b2 = crd ? sc : c * sc;
		int64_t d6[6] = {N, c, H, bs, W, bs}, s6[6] = {C * sc, s_ci, W, s_b1, 1, s_b2};
		memcpy(vd, d6, sizeof vd);
		memcpy(vs, s6, sizeof vs);
		od[0] = N, od[1] = c, od[2] = H * bs, od[3] = W * bs;
	} else {
		if (H % bs || W % bs)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "height and width of %s are not divisible by blocksize %lld (fix the model)", shp(in, b, sizeof b), (long long)bs);
		int64_t h = H / bs, w = W / bs;
		/* output viewed as [N, b1, b2, C, h, w]; input [N, C, h, b1, w, b2] */
		int64_t d6[6] = {N, bs, bs, C, h, w}, s6[6] = {C * H * W, W, 1, H * W, bs * W, bs};
		memcpy(vd, d6, sizeof vd);
		memcpy(vs, s6, sizeof vs);
		od[0] = N, od[1] = C * bs * bs, od[2] = h, od[3] = w;
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, 4, od)) != WH_OK)
		return st;
	wh_dm_copy_view(out->data, in->data, wh_dtype_size(in->dtype), 6, vd, 0, vs);
	return wh_dm_own_strings(out);
}

static enum wh_status depth_to_space_run(struct wh_kernel_ctx *ctx)
{
	return depth_space(ctx, true);
}

static enum wh_status space_to_depth_run(struct wh_kernel_ctx *ctx)
{
	return depth_space(ctx, false);
}

/* ---- Trilu, Compress, ReverseSequence ---- */

static enum wh_status trilu_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in;
	enum wh_status st = need_input(ctx, 0, &in);
	if (st != WH_OK)
		return st;
	if (in->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input must have rank >= 2, got %d (fix the model)", in->rank);
	if (in->dtype == WH_DT_STRING)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "string input is not supported (fix the model)");
	int64_t k = 0;
	const struct wh_tensor *kt = wh_kin(ctx, 1);
	if (kt) {
		if (kt->count != 1 || !wh_dtype_is_int(kt->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "k must be an integer scalar (fix the model)");
		k = wh_tensor_get_i64(kt, 0);
	}
	bool upper = wh_node_attr_int(ctx->node, "upper", 1) != 0;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, in->rank, in->dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(in->dtype);
	int64_t R = in->dims[in->rank - 2], C = in->dims[in->rank - 1];
	uint64_t mats = (R && C) ? in->count / (uint64_t)(R * C) : 0;
	/* clamp k so j - i comparisons cannot overflow */
	if (k > C)
		k = C + 1;
	if (k < -R)
		k = -R - 1;
	for (uint64_t m = 0; m < mats; m++) {
		for (int64_t i = 0; i < R; i++) {
			size_t row = (size_t)((m * (uint64_t)R + (uint64_t)i) * (uint64_t)C) * es;
			char *d = (char *)out->data + row;
			const char *s = (const char *)in->data + row;
			for (int64_t j = 0; j < C; j++) {
				bool keep = upper ? j - i >= k : j - i <= k;
				if (keep)
					memcpy(d + (size_t)j * es, s + (size_t)j * es, es);
				else
					memset(d + (size_t)j * es, 0, es);
			}
		}
	}
	return WH_OK;
}

static enum wh_status compress_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in, *cond;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &in)) != WH_OK || (st = need_input(ctx, 1, &cond)) != WH_OK)
		return st;
	if (cond->rank != 1 || cond->dtype != WH_DT_BOOL)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "condition must be a 1-D bool tensor (fix the model)");
	const struct wh_attr *aa = wh_node_attr(ctx->node, "axis");
	bool flat = !aa;
	int32_t axis = 0;
	int64_t dims[WH_MAX_RANK];
	int32_t r;
	uint64_t outer = 1, inner = 1;
	int64_t dim;
	if (flat) {
		r = 1;
		dim = (int64_t)in->count;
	} else {
		if (!wh_norm_axis(aa->i, in->rank, &axis))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (fix the model)", (long long)aa->i, in->rank);
		r = in->rank;
		memcpy(dims, in->dims, sizeof(int64_t) * (size_t)r);
		dim = in->dims[axis];
		for (int32_t d = 0; d < axis; d++)
			outer *= (uint64_t)in->dims[d];
		for (int32_t d = axis + 1; d < r; d++)
			inner *= (uint64_t)in->dims[d];
	}
	if (cond->dims[0] > dim)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "condition has %lld entries, the axis only %lld (fix the model)", (long long)cond->dims[0], (long long)dim);
	int64_t sel = 0;
	for (int64_t i = 0; i < cond->dims[0]; i++)
		sel += wh_tensor_get_i64(cond, (uint64_t)i) != 0;
	if (flat)
		dims[0] = sel;
	else
		dims[axis] = sel;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(in->dtype), blk = (size_t)inner * es;
	char *dst = out->data;
	for (uint64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < cond->dims[0]; i++)
			if (wh_tensor_get_i64(cond, (uint64_t)i)) {
				memcpy(dst, (const char *)in->data + (o * (uint64_t)dim + (uint64_t)i) * blk, blk);
				dst += blk;
			}
	return wh_dm_own_strings(out);
}

static enum wh_status reverse_sequence_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in, *lens;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &in)) != WH_OK || (st = need_input(ctx, 1, &lens)) != WH_OK)
		return st;
	char b[64];
	if (in->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input must have rank >= 2, got %s (fix the model)", shp(in, b, sizeof b));
	int64_t ta = wh_node_attr_int(ctx->node, "time_axis", 0), ba = wh_node_attr_int(ctx->node, "batch_axis", 1);
	if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "time_axis/batch_axis must be 0/1 or 1/0 (fix the model)");
	int64_t T = in->dims[ta], B = in->dims[ba];
	if (lens->rank != 1 || lens->dims[0] != B || !wh_dtype_is_int(lens->dtype))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "sequence_lens must be integers of shape %lld (fix the model)", (long long)B);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, in->rank, in->dims)) != WH_OK)
		return st;
	size_t es = wh_dtype_size(in->dtype);
	uint64_t inner = 1;
	for (int32_t d = 2; d < in->rank; d++)
		inner *= (uint64_t)in->dims[d];
	size_t blk = (size_t)inner * es;
	int64_t st_t = ta == 0 ? B : 1, st_b = ta == 0 ? 1 : T;
	for (int64_t bi = 0; bi < B; bi++) {
		int64_t len = wh_tensor_get_i64(lens, (uint64_t)bi);
		if (len < 0 || len > T)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "sequence length %lld is outside 0..%lld (fix the input)", (long long)len, (long long)T);
		for (int64_t t = 0; t < T; t++) {
			int64_t src_t = t < len ? len - 1 - t : t;
			memcpy((char *)out->data + (size_t)(t * st_t + bi * st_b) * blk,
			       (const char *)in->data + (size_t)(src_t * st_t + bi * st_b) * blk, blk);
		}
	}
	return wh_dm_own_strings(out);
}

/* ai.onnx entries without alternative tactics */
#define OP(name, since, fn) {.domain = "", .op_type = name, .since_version = since, .run = fn}

const struct wh_op_def wh_ops_shape[] = {
	OP("Constant", 1, constant_run),
	{"", "Identity", 1, identity_run, NULL, 0, true},
	OP("Reshape", 1, reshape_run),
	OP("Transpose", 1, transpose_run),
	OP("Concat", 1, concat_run),
	OP("Split", 1, split_run),
	OP("Slice", 1, slice_run),
	OP("Squeeze", 1, squeeze_run),
	OP("Unsqueeze", 1, unsqueeze_run),
	OP("Flatten", 1, flatten_run),
	OP("Shape", 1, shape_run),
	OP("Size", 1, size_run),
	OP("Expand", 8, expand_run),
	OP("Tile", 6, tile_run),
	OP("Pad", 1, pad_run),
	OP("Range", 11, range_run),
	OP("ConstantOfShape", 9, constant_of_shape_run),
	OP("EyeLike", 9, eye_like_run),
	OP("DepthToSpace", 1, depth_to_space_run),
	OP("SpaceToDepth", 1, space_to_depth_run),
	OP("Trilu", 14, trilu_run),
	OP("Compress", 9, compress_run),
	OP("ReverseSequence", 10, reverse_sequence_run),
	OP("CenterCropPad", 18, center_crop_pad_run),
};
const size_t wh_ops_shape_count = sizeof wh_ops_shape / sizeof wh_ops_shape[0];
