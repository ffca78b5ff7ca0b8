/* Element types (numbered as ONNX TensorProto.DataType), their sizes and names, and
 * overflow-checked size arithmetic for every size computed from untrusted input. */
#ifndef WH_DTYPE_H
#define WH_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/status.h"

enum wh_dtype {
	WH_DT_UNDEFINED = 0,
	WH_DT_FLOAT = 1,
	WH_DT_UINT8 = 2,
	WH_DT_INT8 = 3,
	WH_DT_UINT16 = 4,
	WH_DT_INT16 = 5,
	WH_DT_INT32 = 6,
	WH_DT_INT64 = 7,
	WH_DT_STRING = 8,
	WH_DT_BOOL = 9,
	WH_DT_FLOAT16 = 10,
	WH_DT_DOUBLE = 11,
	WH_DT_UINT32 = 12,
	WH_DT_UINT64 = 13,
	WH_DT_COMPLEX64 = 14,
	WH_DT_COMPLEX128 = 15,
	WH_DT_BFLOAT16 = 16,
	WH_DT_FLOAT8E4M3FN = 17,
	WH_DT_FLOAT8E4M3FNUZ = 18,
	WH_DT_FLOAT8E5M2 = 19,
	WH_DT_FLOAT8E5M2FNUZ = 20,
	WH_DT_UINT4 = 21,
	WH_DT_INT4 = 22,
	WH_DT_FLOAT4E2M1 = 23,
	WH_DT_FLOAT8E8M0 = 24,
	WH_DT_UINT2 = 25,
	WH_DT_INT2 = 26,
	WH_DT_COUNT_ = 27,
};

/* Maximum tensor rank whittle handles; larger ranks are rejected as unsupported. */
#define WH_MAX_RANK 16

bool wh_dtype_valid(int dt);
/* Storage size of one element in bytes (sub-byte types: 1, packed 2 (4-bit) or 4 (2-bit)
 * per byte on disk;
 * string: sizeof(char *)); 0 for undefined. */
size_t wh_dtype_size(enum wh_dtype dt);
/* Bytes needed to store count elements in ONNX raw_data layout (sub-byte types packed). */
bool wh_dtype_is_subbyte(enum wh_dtype dt);
int wh_dtype_bits(enum wh_dtype dt); /* 2, 4 or 8*size */
bool wh_dtype_raw_bytes(enum wh_dtype dt, uint64_t count, uint64_t *bytes_out);
const char *wh_dtype_name(enum wh_dtype dt); /* "float32", "int64", ... */
/* Parses names as printed by wh_dtype_name and ONNX names ("float", "float16", ...). */
enum wh_dtype wh_dtype_from_name(const char *name);
bool wh_dtype_is_float(enum wh_dtype dt); /* any floating type incl. fp8/fp16/bf16 */
bool wh_dtype_is_int(enum wh_dtype dt);   /* signed or unsigned integer, not bool */

/* Overflow-checked arithmetic: return false on overflow. */
static inline bool wh_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}
static inline bool wh_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
static inline bool wh_mul_i64(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}
static inline bool wh_add_i64(int64_t a, int64_t b, int64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
/* Element count of a shape; fails on a negative dim or overflow, and on counts beyond
 * WH_MAX_ELEMENTS (a tensor larger than any machine whittle runs on). */
#define WH_MAX_ELEMENTS ((uint64_t)1 << 40)
bool wh_shape_count(const int64_t *dims, int rank, uint64_t *count_out);

#endif
