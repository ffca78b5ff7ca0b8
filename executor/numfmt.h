/* Number formats: conversions between float32 and the reduced formats, with
 * round-to-nearest-even, as hardware and ONNX Cast define them. Pure functions. */
#ifndef WH_NUMFMT_H
#define WH_NUMFMT_H

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
/* float32 rounded to TF32 (10 explicit mantissa bits), kept in a float. */
float wh_round_tf32(float f);
/* Rounds through fp16 / bf16 and back. */
static inline float wh_round_f16(float f)
{
	return wh_f16_to_f32(wh_f32_to_f16(f));
}
static inline float wh_round_bf16(float f)
{
	return wh_bf16_to_f32(wh_f32_to_bf16(f));
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

#endif
