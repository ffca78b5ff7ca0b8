#include "graph/dtype.h"

#include <string.h>

static const struct {
	const char *name, *onnx_name;
	size_t size;
} dtype_table[WH_DT_COUNT_] = {
	[WH_DT_UNDEFINED] = {"undefined", "undefined", 0},
	[WH_DT_FLOAT] = {"float32", "float", 4},
	[WH_DT_UINT8] = {"uint8", "uint8", 1},
	[WH_DT_INT8] = {"int8", "int8", 1},
	[WH_DT_UINT16] = {"uint16", "uint16", 2},
	[WH_DT_INT16] = {"int16", "int16", 2},
	[WH_DT_INT32] = {"int32", "int32", 4},
	[WH_DT_INT64] = {"int64", "int64", 8},
	[WH_DT_STRING] = {"string", "string", sizeof(char *)},
	[WH_DT_BOOL] = {"bool", "bool", 1},
	[WH_DT_FLOAT16] = {"float16", "float16", 2},
	[WH_DT_DOUBLE] = {"float64", "double", 8},
	[WH_DT_UINT32] = {"uint32", "uint32", 4},
	[WH_DT_UINT64] = {"uint64", "uint64", 8},
	[WH_DT_COMPLEX64] = {"complex64", "complex64", 8},
	[WH_DT_COMPLEX128] = {"complex128", "complex128", 16},
	[WH_DT_BFLOAT16] = {"bfloat16", "bfloat16", 2},
	[WH_DT_FLOAT8E4M3FN] = {"float8e4m3fn", "float8e4m3fn", 1},
	[WH_DT_FLOAT8E4M3FNUZ] = {"float8e4m3fnuz", "float8e4m3fnuz", 1},
	[WH_DT_FLOAT8E5M2] = {"float8e5m2", "float8e5m2", 1},
	[WH_DT_FLOAT8E5M2FNUZ] = {"float8e5m2fnuz", "float8e5m2fnuz", 1},
	[WH_DT_UINT4] = {"uint4", "uint4", 1},
	[WH_DT_INT4] = {"int4", "int4", 1},
	[WH_DT_FLOAT4E2M1] = {"float4e2m1", "float4e2m1", 1},
	[WH_DT_FLOAT8E8M0] = {"float8e8m0", "float8e8m0", 1},
	[WH_DT_UINT2] = {"uint2", "uint2", 1},
	[WH_DT_INT2] = {"int2", "int2", 1},
};
_Static_assert(sizeof dtype_table / sizeof dtype_table[0] == WH_DT_COUNT_, "dtype table size");

bool wh_dtype_valid(int dt)
{
	return dt > 0 && dt < WH_DT_COUNT_;
}

size_t wh_dtype_size(enum wh_dtype dt)
{
	return wh_dtype_valid((int)dt) ? dtype_table[dt].size : 0;
}

bool wh_dtype_raw_bytes(enum wh_dtype dt, uint64_t count, uint64_t *bytes_out)
{
	if (dt == WH_DT_UINT4 || dt == WH_DT_INT4 || dt == WH_DT_FLOAT4E2M1) {
		*bytes_out = count / 2 + (count & 1);
		return true;
	}
	if (dt == WH_DT_UINT2 || dt == WH_DT_INT2) {
		*bytes_out = count / 4 + ((count & 3) != 0);
		return true;
	}
	if (dt == WH_DT_STRING || !wh_dtype_valid((int)dt))
		return false;
	return wh_mul_u64(count, dtype_table[dt].size, bytes_out);
}

const char *wh_dtype_name(enum wh_dtype dt)
{
	return wh_dtype_valid((int)dt) ? dtype_table[dt].name : "undefined";
}

enum wh_dtype wh_dtype_from_name(const char *name)
{
	for (int i = 1; i < WH_DT_COUNT_; i++)
		if (!strcmp(name, dtype_table[i].name) || !strcmp(name, dtype_table[i].onnx_name))
			return (enum wh_dtype)i;
	if (!strcmp(name, "fp32"))
		return WH_DT_FLOAT;
	if (!strcmp(name, "fp16") || !strcmp(name, "half"))
		return WH_DT_FLOAT16;
	if (!strcmp(name, "bf16"))
		return WH_DT_BFLOAT16;
	if (!strcmp(name, "fp64"))
		return WH_DT_DOUBLE;
	return WH_DT_UNDEFINED;
}

bool wh_dtype_is_subbyte(enum wh_dtype dt)
{
	return wh_dtype_bits(dt) < 8;
}

int wh_dtype_bits(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_UINT4: case WH_DT_INT4: case WH_DT_FLOAT4E2M1: return 4;
	case WH_DT_UINT2: case WH_DT_INT2: return 2;
	default: return (int)(8 * wh_dtype_size(dt));
	}
}

bool wh_dtype_is_float(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_FLOAT: case WH_DT_FLOAT16: case WH_DT_DOUBLE: case WH_DT_BFLOAT16:
	case WH_DT_FLOAT8E4M3FN: case WH_DT_FLOAT8E4M3FNUZ: case WH_DT_FLOAT8E5M2:
	case WH_DT_FLOAT8E5M2FNUZ: case WH_DT_FLOAT4E2M1: case WH_DT_FLOAT8E8M0:
		return true;
	default:
		return false;
	}
}

bool wh_dtype_is_int(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_UINT8: case WH_DT_INT8: case WH_DT_UINT16: case WH_DT_INT16: case WH_DT_INT32:
	case WH_DT_INT64: case WH_DT_UINT32: case WH_DT_UINT64: case WH_DT_UINT4: case WH_DT_INT4:
	case WH_DT_UINT2: case WH_DT_INT2:
		return true;
	default:
		return false;
	}
}

bool wh_shape_count(const int64_t *dims, int rank, uint64_t *count_out)
{
	uint64_t n = 1;
	for (int i = 0; i < rank; i++) {
		if (dims[i] < 0 || !wh_mul_u64(n, (uint64_t)dims[i], &n))
			return false;
	}
	if (n > WH_MAX_ELEMENTS)
		return false;
	*count_out = n;
	return true;
}
