/* Number formats: conversions between float32 and the reduced storage formats of ONNX
 * tensors (fp16, bf16, float8, float4, e8m0), with round-to-nearest-even, as hardware and
 * ONNX Cast define them. Pure functions.
 *
 * They live in graph/ because what an element of a tensor is worth belongs to the tensor
 * (graph/tensor.h reads and writes elements through them); the executor adds the bulk and
 * ISA variants (executor/numfmt-bulk.h) and the emulation's rounding (executor/numfmt.h). */
#ifndef WH_GRAPH_NUMFMT_H
#define WH_GRAPH_NUMFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t wh_f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static inline float wh_bits_f32(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* IEEE binary16: overflow to inf, subnormals kept, NaN stays NaN (quiet). */
uint16_t wh_f32_to_f16(float f);
float wh_f16_to_f32(uint16_t h);
/* bfloat16: round to nearest even, NaN stays NaN. */
uint16_t wh_f32_to_bf16(float f);
static inline float wh_bf16_to_f32(uint16_t b)
{
	return wh_bits_f32((uint32_t)b << 16);
}

/* float8 formats (ONNX): saturate=true clamps finite overflow to the largest finite value,
 * as ONNX Cast/QuantizeLinear do by default; false gives NaN (e4m3fn) or inf (e5m2). */
uint8_t wh_f32_to_e4m3fn(float f, bool saturate);
float wh_e4m3fn_to_f32(uint8_t v);
uint8_t wh_f32_to_e4m3fnuz(float f, bool saturate);
float wh_e4m3fnuz_to_f32(uint8_t v);
uint8_t wh_f32_to_e5m2(float f, bool saturate);
float wh_e5m2_to_f32(uint8_t v);
uint8_t wh_f32_to_e5m2fnuz(float f, bool saturate);
float wh_e5m2fnuz_to_f32(uint8_t v);
/* float4 e2m1 (ONNX 1.18+), saturating. */
uint8_t wh_f32_to_e2m1(float f, bool saturate);
float wh_e2m1_to_f32(uint8_t v);
/* float8 e8m0 (scale format): rounding "up" as ONNX Cast defines by default. */
uint8_t wh_f32_to_e8m0(float f, bool saturate, bool round_up);
float wh_e8m0_to_f32(uint8_t v);
/* Cast's round_mode attribute for FLOAT8E8M0 (opset 24): "up" (default), "nearest",
 * "down". */
enum wh_e8m0_round { WH_E8M0_ROUND_UP = 0, WH_E8M0_ROUND_NEAREST = 1, WH_E8M0_ROUND_DOWN = 2 };
uint8_t wh_f32_to_e8m0_mode(float f, bool saturate, enum wh_e8m0_round mode);

/* A double / 64-bit integer rounded to a float32 with "round to odd" (truncate, then set the
 * lowest mantissa bit when inexact). Rounding that float to any format with at most 22
 * mantissa bits (fp16, bf16, fp8, fp4) gives the correctly rounded result of the original
 * value: no double rounding. Not for float32 results themselves (use a plain cast). */
float wh_f64_to_f32_odd(double d);
float wh_i64_to_f32_odd(int64_t v);
float wh_u64_to_f32_odd(uint64_t v);

#endif
