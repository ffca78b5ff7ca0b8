#include "graph/tensor.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/numfmt.h"

void wh_tensor_init(struct wh_tensor *t)
{
	memset(t, 0, sizeof *t);
}

struct wh_seq {
	atomic_uint refs;
	uint32_t n;
	struct wh_tensor items[];
};

static void seq_release(struct wh_seq *s)
{
	if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (uint32_t i = 0; i < s->n; i++)
		wh_tensor_release(&s->items[i]);
	free(s);
}

void wh_tensor_release(struct wh_tensor *t)
{
	if (!t)
		return;
	wh_blob_release(t->blob);
	seq_release(t->seq);
	wh_tensor_init(t);
}

const char *wh_value_kind_name(const struct wh_tensor *t)
{
	switch (t ? t->kind : WH_VALUE_TENSOR) {
	case WH_VALUE_SEQUENCE: return "sequence";
	case WH_VALUE_NONE: return "empty optional";
	default: return "tensor";
	}
}

/* Sequences longer than this are refused: whittle's limit, far beyond real models. */
#define WH_SEQ_MAX_ITEMS ((uint32_t)1 << 24)

enum wh_status wh_seq_new(struct wh_tensor *t, enum wh_dtype elem, uint32_t n)
{
	wh_tensor_release(t);
	if (n > WH_SEQ_MAX_ITEMS)
		return wh_error(WH_ERR_OVERFLOW, "sequence: %u items is more than whittle's limit of %u", n, WH_SEQ_MAX_ITEMS);
	struct wh_seq *s = calloc(1, sizeof *s + (size_t)n * sizeof s->items[0]);
	if (!s)
		return wh_error(WH_ERR_NOMEM, "sequence: out of memory for %u items", n);
	atomic_init(&s->refs, 1);
	s->n = n;
	t->kind = WH_VALUE_SEQUENCE;
	t->elem = (uint8_t)elem;
	t->seq = s;
	return WH_OK;
}

uint32_t wh_seq_len(const struct wh_tensor *t)
{
	return t && t->kind == WH_VALUE_SEQUENCE && t->seq ? t->seq->n : 0;
}

const struct wh_tensor *wh_seq_item(const struct wh_tensor *t, uint32_t i)
{
	return &t->seq->items[i];
}

struct wh_tensor *wh_seq_item_mut(struct wh_tensor *t, uint32_t i)
{
	return &t->seq->items[i];
}

void wh_value_set_none(struct wh_tensor *t, enum wh_dtype elem)
{
	wh_tensor_release(t);
	t->kind = WH_VALUE_NONE;
	t->elem = (uint8_t)elem;
}

static bool is_4bit(enum wh_dtype dt)
{
	return wh_dtype_is_subbyte(dt);
}

static enum wh_status set_shape(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	if (rank < 0 || rank > WH_MAX_RANK)
		return wh_error(WH_ERR_UNSUPPORTED, "tensor: rank %d is outside 0..%d (whittle's limit)", rank, WH_MAX_RANK);
	if (!wh_dtype_valid((int)dt))
		return wh_error(WH_ERR_INVALID, "tensor: unknown data type %d", (int)dt);
	uint64_t count;
	if (!wh_shape_count(dims, rank, &count))
		return wh_error(WH_ERR_OVERFLOW, "tensor: shape has a negative dimension or too many elements (check the input shapes)");
	t->dtype = dt;
	t->rank = rank;
	for (int32_t i = 0; i < rank; i++)
		t->dims[i] = dims[i];
	t->count = count;
	return WH_OK;
}

enum wh_status wh_tensor_alloc(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	wh_tensor_release(t);
	enum wh_status st = set_shape(t, dt, rank, dims);
	if (st != WH_OK)
		return st;
	uint64_t bytes;
	if (!wh_mul_u64(t->count, wh_dtype_size(dt), &bytes))
		return wh_error(WH_ERR_OVERFLOW, "tensor: too large");
	void *w;
	if ((st = wh_blob_create((size_t)bytes, &t->blob, &w)) != WH_OK)
		return st;
	t->data = w;
	if (dt == WH_DT_STRING && bytes)
		memset(w, 0, (size_t)bytes);
	return WH_OK;
}

enum wh_status wh_tensor_alloc_strings(struct wh_tensor *t, int32_t rank, const int64_t *dims,
				       const char *const *strings, const size_t *lengths)
{
	wh_tensor_release(t);
	enum wh_status st = set_shape(t, WH_DT_STRING, rank, dims);
	if (st != WH_OK)
		return st;
	uint64_t total = t->count * sizeof(char *);
	for (uint64_t i = 0; i < t->count; i++)
		if (!wh_add_u64(total, (uint64_t)lengths[i] + 1, &total))
			return wh_error(WH_ERR_OVERFLOW, "tensor: strings too large");
	void *w;
	if ((st = wh_blob_create((size_t)total, &t->blob, &w)) != WH_OK)
		return st;
	t->data = w;
	if (!t->count)
		return WH_OK;
	const char **ptrs = w;
	char *p = (char *)w + t->count * sizeof(char *);
	for (uint64_t i = 0; i < t->count; i++) {
		memcpy(p, strings[i], lengths[i]);
		p[lengths[i]] = '\0';
		ptrs[i] = p;
		p += lengths[i] + 1;
	}
	t->data = w;
	return WH_OK;
}

void wh_tensor_ref(struct wh_tensor *dst, const struct wh_tensor *src)
{
	if (dst == src)
		return;
	struct wh_blob *b = wh_blob_retain(src->blob);
	struct wh_seq *q = src->seq;
	if (q)
		atomic_fetch_add_explicit(&q->refs, 1, memory_order_relaxed);
	wh_tensor_release(dst);
	*dst = *src;
	dst->blob = b;
	dst->seq = q;
}

enum wh_status wh_tensor_from_raw(struct wh_tensor *t, enum wh_dtype dt, int32_t rank,
				  const int64_t *dims, struct wh_blob *raw)
{
	wh_tensor_release(t);
	enum wh_status st;
	if (dt == WH_DT_STRING)
		return wh_error(WH_ERR_UNSUPPORTED, "tensor: string data is not stored as raw bytes");
	if (!is_4bit(dt)) {
		if ((st = set_shape(t, dt, rank, dims)) != WH_OK)
			return st;
		uint64_t bytes;
		if (!wh_dtype_raw_bytes(dt, t->count, &bytes) || (raw ? raw->size : 0) != bytes) {
			wh_tensor_init(t);
			return wh_error(WH_ERR_INVALID, "tensor: data has %zu bytes, its shape needs %llu", raw ? raw->size : 0, (unsigned long long)bytes);
		}
		t->blob = wh_blob_retain(raw);
		t->data = raw ? (void *)raw->data : NULL;
		return WH_OK;
	}
	if ((st = wh_tensor_alloc(t, dt, rank, dims)) != WH_OK)
		return st;
	uint64_t bytes;
	wh_dtype_raw_bytes(dt, t->count, &bytes);
	if ((raw ? raw->size : 0) != bytes) {
		wh_tensor_release(t);
		return wh_error(WH_ERR_INVALID, "tensor: 4-bit data has %zu bytes, its shape needs %llu", raw ? raw->size : 0, (unsigned long long)bytes);
	}
	const uint8_t *src = raw ? raw->data : NULL;
	uint8_t *dst = t->data;
	int bits = wh_dtype_bits(dt), per = 8 / bits;
	uint8_t mask = (uint8_t)((1u << bits) - 1), sign = (uint8_t)(1u << (bits - 1));
	for (uint64_t i = 0; i < t->count; i++) {
		uint8_t x = (uint8_t)((src[i / per] >> ((i % per) * bits)) & mask);
		if ((dt == WH_DT_INT4 || dt == WH_DT_INT2) && (x & sign))
			x |= (uint8_t)~mask;
		dst[i] = x;
	}
	return WH_OK;
}

enum wh_status wh_tensor_to_raw(const struct wh_tensor *t, struct wh_blob **raw_out)
{
	if (t->dtype == WH_DT_STRING)
		return wh_error(WH_ERR_UNSUPPORTED, "tensor: string data is not stored as raw bytes");
	if (!is_4bit(t->dtype)) {
		if (t->blob && t->blob->size == wh_tensor_nbytes(t)) {
			*raw_out = wh_blob_retain(t->blob);
			return WH_OK;
		}
		return wh_blob_create_copy(t->data, wh_tensor_nbytes(t), raw_out);
	}
	uint64_t bytes;
	wh_dtype_raw_bytes(t->dtype, t->count, &bytes);
	void *w;
	enum wh_status st = wh_blob_create((size_t)bytes, raw_out, &w);
	if (st != WH_OK)
		return st;
	uint8_t *dst = w;
	const uint8_t *src = t->data;
	if (!bytes)
		return WH_OK;
	memset(dst, 0, (size_t)bytes);
	int bits = wh_dtype_bits(t->dtype), per = 8 / bits;
	uint8_t mask = (uint8_t)((1u << bits) - 1);
	for (uint64_t i = 0; i < t->count; i++)
		dst[i / per] |= (uint8_t)((src[i] & mask) << ((i % per) * bits));
	return WH_OK;
}

size_t wh_tensor_nbytes(const struct wh_tensor *t)
{
	return (size_t)t->count * wh_dtype_size(t->dtype);
}

bool wh_tensor_same_shape(const struct wh_tensor *a, const struct wh_tensor *b)
{
	if (a->rank != b->rank)
		return false;
	for (int32_t i = 0; i < a->rank; i++)
		if (a->dims[i] != b->dims[i])
			return false;
	return true;
}

const char *wh_shape_str(const int64_t *dims, int32_t rank, char *buf, size_t size)
{
	if (rank == 0) {
		snprintf(buf, size, "scalar");
		return buf;
	}
	size_t off = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < rank && off < size; i++) {
		int w = snprintf(buf + off, size - off, i ? "x%lld" : "%lld", (long long)dims[i]);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	return buf;
}

/* ---- elements and broadcasting ---- */

bool wh_broadcast_shapes(uint32_t n, const struct wh_tensor *const *ts, int32_t *rank_out, int64_t *dims_out)
{
	int32_t rank = 0;
	for (uint32_t i = 0; i < n; i++)
		if (ts[i] && ts[i]->rank > rank)
			rank = ts[i]->rank;
	for (int32_t d = 0; d < rank; d++)
		dims_out[d] = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct wh_tensor *t = ts[i];
		if (!t)
			continue;
		int32_t off = rank - t->rank;
		for (int32_t d = 0; d < t->rank; d++) {
			int64_t a = dims_out[off + d], b = t->dims[d];
			if (a == b || b == 1)
				continue;
			if (a == 1)
				dims_out[off + d] = b;
			else
				return false;
		}
	}
	*rank_out = rank;
	return true;
}

void wh_shape_strides(const int64_t *dims, int32_t rank, int64_t *strides_out)
{
	int64_t s = 1;
	for (int32_t d = rank - 1; d >= 0; d--) {
		strides_out[d] = s;
		s *= dims[d];
	}
}

void wh_broadcast_strides(const struct wh_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides_out)
{
	int64_t own[WH_MAX_RANK];
	wh_shape_strides(t->dims, t->rank, own);
	int32_t off = rank - t->rank;
	for (int32_t d = 0; d < rank; d++) {
		if (d < off)
			strides_out[d] = 0;
		else
			strides_out[d] = (t->dims[d - off] == 1 && dims[d] != 1) ? 0 : own[d - off];
	}
}

bool wh_norm_axis(int64_t axis, int32_t rank, int32_t *out)
{
	if (axis < -(int64_t)rank || axis >= rank)
		return false;
	*out = (int32_t)(axis < 0 ? axis + rank : axis);
	return true;
}

int64_t wh_tensor_get_i64(const struct wh_tensor *t, uint64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case WH_DT_INT64: return ((const int64_t *)p)[i];
	case WH_DT_INT32: return ((const int32_t *)p)[i];
	case WH_DT_INT16: return ((const int16_t *)p)[i];
	case WH_DT_INT8: case WH_DT_INT4: case WH_DT_INT2: return ((const int8_t *)p)[i];
	case WH_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	case WH_DT_UINT32: return ((const uint32_t *)p)[i];
	case WH_DT_UINT16: return ((const uint16_t *)p)[i];
	case WH_DT_UINT8: case WH_DT_BOOL: case WH_DT_UINT4: case WH_DT_UINT2: return ((const uint8_t *)p)[i];
	default: return (int64_t)wh_tensor_get_f64(t, i);
	}
}

double wh_tensor_get_f64(const struct wh_tensor *t, uint64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case WH_DT_FLOAT: return ((const float *)p)[i];
	case WH_DT_DOUBLE: return ((const double *)p)[i];
	case WH_DT_FLOAT16: return wh_f16_to_f32(((const uint16_t *)p)[i]);
	case WH_DT_BFLOAT16: return wh_bf16_to_f32(((const uint16_t *)p)[i]);
	case WH_DT_FLOAT8E4M3FN: return wh_e4m3fn_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_FLOAT8E4M3FNUZ: return wh_e4m3fnuz_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_FLOAT8E5M2: return wh_e5m2_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_FLOAT8E5M2FNUZ: return wh_e5m2fnuz_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_FLOAT4E2M1: return wh_e2m1_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_FLOAT8E8M0: return wh_e8m0_to_f32(((const uint8_t *)p)[i]);
	case WH_DT_UINT64: return (double)((const uint64_t *)p)[i];
	default:
		/* every other integer type and bool fits int64 exactly */
		return wh_dtype_is_int(t->dtype) || t->dtype == WH_DT_BOOL ? (double)wh_tensor_get_i64(t, i) : NAN;
	}
}

/* float -> integer as C casts do for in-range values; out of range saturates rather than
 * invoking undefined behaviour (ONNX leaves it undefined). */
static int64_t f64_to_i64(double v)
{
	if (isnan(v))
		return 0;
	if (v >= 9.2233720368547758e18)
		return INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return INT64_MIN;
	return (int64_t)v;
}

void wh_tensor_set_f64(struct wh_tensor *t, uint64_t i, double v)
{
	void *p = t->data;
	switch (t->dtype) {
	case WH_DT_FLOAT: ((float *)p)[i] = (float)v; break;
	case WH_DT_DOUBLE: ((double *)p)[i] = v; break;
	case WH_DT_FLOAT16: ((uint16_t *)p)[i] = wh_f32_to_f16(wh_f64_to_f32_odd(v)); break;
	case WH_DT_BFLOAT16: ((uint16_t *)p)[i] = wh_f32_to_bf16(wh_f64_to_f32_odd(v)); break;
	case WH_DT_FLOAT8E4M3FN: ((uint8_t *)p)[i] = wh_f32_to_e4m3fn(wh_f64_to_f32_odd(v), true); break;
	case WH_DT_FLOAT8E4M3FNUZ: ((uint8_t *)p)[i] = wh_f32_to_e4m3fnuz(wh_f64_to_f32_odd(v), true); break;
	case WH_DT_FLOAT8E5M2: ((uint8_t *)p)[i] = wh_f32_to_e5m2(wh_f64_to_f32_odd(v), true); break;
	case WH_DT_FLOAT8E5M2FNUZ: ((uint8_t *)p)[i] = wh_f32_to_e5m2fnuz(wh_f64_to_f32_odd(v), true); break;
	case WH_DT_FLOAT4E2M1: ((uint8_t *)p)[i] = wh_f32_to_e2m1(wh_f64_to_f32_odd(v), true); break;
	case WH_DT_FLOAT8E8M0: ((uint8_t *)p)[i] = wh_f32_to_e8m0(wh_f64_to_f32_odd(v), true, true); break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case WH_DT_INT64: ((int64_t *)p)[i] = f64_to_i64(v); break;
	case WH_DT_UINT64: ((uint64_t *)p)[i] = v < 0 ? (uint64_t)f64_to_i64(v) : (v >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)v); break;
	case WH_DT_INT32: ((int32_t *)p)[i] = (int32_t)f64_to_i64(v); break;
	case WH_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)f64_to_i64(v); break;
	case WH_DT_INT16: ((int16_t *)p)[i] = (int16_t)f64_to_i64(v); break;
	case WH_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)f64_to_i64(v); break;
	case WH_DT_INT8: ((int8_t *)p)[i] = (int8_t)f64_to_i64(v); break;
	case WH_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)f64_to_i64(v); break;
	case WH_DT_INT4: { int64_t x = f64_to_i64(v) & 0xf; ((int8_t *)p)[i] = (int8_t)(x & 8 ? x - 16 : x); break; }
	case WH_DT_UINT4: ((uint8_t *)p)[i] = (uint8_t)(f64_to_i64(v) & 0xf); break;
	case WH_DT_INT2: { int64_t x = f64_to_i64(v) & 3; ((int8_t *)p)[i] = (int8_t)(x & 2 ? x - 4 : x); break; }
	case WH_DT_UINT2: ((uint8_t *)p)[i] = (uint8_t)(f64_to_i64(v) & 3); break;
	default: break;
	}
}

void wh_tensor_set_int_wrap(struct wh_tensor *t, uint64_t i, uint64_t v)
{
	void *p = t->data;
	switch (t->dtype) {
	case WH_DT_INT64: case WH_DT_UINT64: ((uint64_t *)p)[i] = v; break;
	case WH_DT_INT32: case WH_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case WH_DT_INT16: case WH_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case WH_DT_INT8: case WH_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case WH_DT_UINT4: ((uint8_t *)p)[i] = (uint8_t)(v & 0xf); break;
	case WH_DT_UINT2: ((uint8_t *)p)[i] = (uint8_t)(v & 3); break;
	/* signed sub-byte types are stored sign-extended */
	case WH_DT_INT4: ((int8_t *)p)[i] = (int8_t)((v & 8) ? (int)(v & 0xf) - 16 : (int)(v & 0xf)); break;
	case WH_DT_INT2: ((int8_t *)p)[i] = (int8_t)((v & 2) ? (int)(v & 3) - 4 : (int)(v & 3)); break;
	default:
		if (wh_dtype_is_float(t->dtype))
			wh_tensor_set_f64(t, i, (double)(int64_t)v);
		break;
	}
}
