/* Tensors in memory: type, shape and a reference to a blob holding the elements.
 *
 * Memory layout: elements packed densely in row-major order, wh_dtype_size() bytes each;
 * sub-byte types (int4, uint4, float4e2m1, int2, uint2) take one byte per element in memory
 * (signed ones sign-extended), and are packed only in files (wh_tensor_from_raw /
 * wh_tensor_to_raw convert). String tensors hold `const char *` pointers into the same blob.
 * struct wh_tensor is caller-owned (_init/_release); the blob is shared by reference
 * counting, so copying a tensor with wh_tensor_ref never copies data. Data is writable only
 * by the code that allocated it, before it is shared.
 *
 * The same struct carries ONNX's other runtime values, so that the executor keeps one slot
 * type per value: a sequence (SequenceProto: an ordered list of tensors, shared by
 * reference counting and immutable once shared, like a blob) and an optional without a
 * value (OptionalProto with none). An optional that has a value is that value itself. */
#ifndef WH_TENSOR_H
#define WH_TENSOR_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/blob.h"
#include "graph/dtype.h"

enum wh_value_kind {
	WH_VALUE_TENSOR = 0,   /* the tensor fields */
	WH_VALUE_SEQUENCE = 1, /* seq holds the items */
	WH_VALUE_NONE = 2,     /* an empty optional */
};

struct wh_seq; /* a sequence's items (tensor.c) */

struct wh_tensor {
	enum wh_dtype dtype;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	uint64_t count;        /* product of dims */
	struct wh_blob *blob;  /* owns the data (may be NULL when count is 0) */
	void *data;            /* blob->data */
	/* Not a tensor: dtype is UNDEFINED (so code that handles tensors of some type never
	 * takes one for a tensor) and elem says the element type when known (UNDEFINED if not). */
	uint8_t kind;          /* enum wh_value_kind */
	uint8_t elem;          /* enum wh_dtype of a sequence's items or of what an empty optional
				* would hold */
	struct wh_seq *seq;    /* kind SEQUENCE: shared items (reference counted) */
};

void wh_tensor_init(struct wh_tensor *t);
void wh_tensor_release(struct wh_tensor *t); /* drops the blob reference; re-inits */
/* Allocates storage for the given type and shape (contents uninitialised; string tensors
 * get NULL pointers... use wh_tensor_alloc_strings for them). Releases what t held. */
enum wh_status wh_tensor_alloc(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims);
/* A string tensor from count C strings (copied). */
enum wh_status wh_tensor_alloc_strings(struct wh_tensor *t, int32_t rank, const int64_t *dims,
				       const char *const *strings, const size_t *lengths);
/* dst shares src's data, or its items for a sequence (dst released first). */
void wh_tensor_ref(struct wh_tensor *dst, const struct wh_tensor *src);

/* ---- sequences and empty optionals ---- */

/* Whether a value slot holds anything (a tensor, a sequence or an empty optional). */
static inline bool wh_value_present(const struct wh_tensor *t)
{
	return t && (t->dtype != WH_DT_UNDEFINED || t->kind != WH_VALUE_TENSOR);
}
static inline bool wh_value_is_tensor(const struct wh_tensor *t)
{
	return t && t->kind == WH_VALUE_TENSOR;
}
/* "tensor", "sequence" or "empty optional", for messages. */
const char *wh_value_kind_name(const struct wh_tensor *t);
/* t becomes a sequence of n empty items with element type elem; the caller fills them
 * through wh_seq_item_mut before sharing t (t released first). */
enum wh_status wh_seq_new(struct wh_tensor *t, enum wh_dtype elem, uint32_t n);
uint32_t wh_seq_len(const struct wh_tensor *t); /* 0 for a non-sequence */
const struct wh_tensor *wh_seq_item(const struct wh_tensor *t, uint32_t i); /* i < len */
struct wh_tensor *wh_seq_item_mut(struct wh_tensor *t, uint32_t i);
/* t becomes an empty optional of the given element type (t released first). */
void wh_value_set_none(struct wh_tensor *t, enum wh_dtype elem);
/* A tensor over ONNX raw_data bytes; shares raw when the layouts agree. */
enum wh_status wh_tensor_from_raw(struct wh_tensor *t, enum wh_dtype dt, int32_t rank,
				  const int64_t *dims, struct wh_blob *raw);
/* The tensor's data in ONNX raw_data layout (a new reference; shares when layouts agree). */
enum wh_status wh_tensor_to_raw(const struct wh_tensor *t, struct wh_blob **raw_out);
size_t wh_tensor_nbytes(const struct wh_tensor *t);
bool wh_tensor_same_shape(const struct wh_tensor *a, const struct wh_tensor *b);
/* "1x3x640x640" (or "scalar"); buf of at least 32 bytes. */
const char *wh_shape_str(const int64_t *dims, int32_t rank, char *buf, size_t size);

/* ---- elements and broadcasting (used by kernels and by the reducer alike) ---- */

/* Numpy-style multidirectional broadcast of n shapes (NULL entries skipped); false if they
 * are incompatible. */
bool wh_broadcast_shapes(uint32_t n, const struct wh_tensor *const *ts, int32_t *rank_out, int64_t *dims_out);
/* Element strides of t viewed at the broadcast rank/dims (0 for broadcast dims). */
void wh_broadcast_strides(const struct wh_tensor *t, int32_t rank, const int64_t *dims, int64_t *strides_out);
/* Row-major element strides of a shape. */
void wh_shape_strides(const int64_t *dims, int32_t rank, int64_t *strides_out);
/* Normalises a possibly negative axis against rank; false if out of range. */
bool wh_norm_axis(int64_t axis, int32_t rank, int32_t *out);
/* Reads element i of an integer tensor (any int type or bool) as int64. */
int64_t wh_tensor_get_i64(const struct wh_tensor *t, uint64_t i);
/* Reads element i of any numeric tensor as double / writes double into element i with the
 * conversion Cast uses (round to nearest even for floats, truncation/wrap for ints). */
double wh_tensor_get_f64(const struct wh_tensor *t, uint64_t i);
void wh_tensor_set_f64(struct wh_tensor *t, uint64_t i, double v);
/* Writes the integer v (two's complement) into element i with the wrap-around of t's
 * integer type (sub-byte types masked, signed ones sign-extended; bool: v != 0); a float
 * type gets (double)(int64_t)v; other types are left alone. */
void wh_tensor_set_int_wrap(struct wh_tensor *t, uint64_t i, uint64_t v);

#endif
