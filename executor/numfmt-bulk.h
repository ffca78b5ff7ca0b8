/* Private to executor/ (and its tests): bulk number-format conversions and the full set of
 * e8m0 rounding modes. The bulk functions give exactly the results of the scalar ones in
 * numfmt.h for every input (NaN payloads included); they pick the ISA variant from cpu
 * (NULL means scalar). The _avx2 / _avx512 variants live in numfmt-avx2.c / numfmt-avx512.c
 * and may only be called when cpu says the ISA is usable; they are declared here for the
 * tests that compare them with the scalar code. */
#ifndef WH_NUMFMT_BULK_H
#define WH_NUMFMT_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"

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

void wh_f32_to_f16_n(const float *src, uint16_t *dst, size_t n, const struct wh_cpu_features *cpu);
void wh_f16_to_f32_n(const uint16_t *src, float *dst, size_t n, const struct wh_cpu_features *cpu);
void wh_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n, const struct wh_cpu_features *cpu);
void wh_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n);
/* dst[i] = src[i] rounded through fp16 / bf16 (dst may equal src): emulates a layer whose
 * output precision is fp16 / bf16. */
void wh_round_f16_n(const float *src, float *dst, size_t n, const struct wh_cpu_features *cpu);
void wh_round_bf16_n(const float *src, float *dst, size_t n, const struct wh_cpu_features *cpu);

/* ISA variants (F16C and integer rounding; exact). */
void wh_f32_to_f16_n_avx2(const float *src, uint16_t *dst, size_t n);
void wh_f16_to_f32_n_avx2(const uint16_t *src, float *dst, size_t n);
void wh_f32_to_bf16_n_avx2(const float *src, uint16_t *dst, size_t n);
void wh_round_f16_n_avx2(const float *src, float *dst, size_t n);
void wh_round_bf16_n_avx2(const float *src, float *dst, size_t n);
void wh_f32_to_f16_n_avx512(const float *src, uint16_t *dst, size_t n);
void wh_f16_to_f32_n_avx512(const uint16_t *src, float *dst, size_t n);
void wh_f32_to_bf16_n_avx512(const float *src, uint16_t *dst, size_t n);
void wh_round_f16_n_avx512(const float *src, float *dst, size_t n);
void wh_round_bf16_n_avx512(const float *src, float *dst, size_t n);
/* The AVX-512 BF16 instruction VCVTNEPS2BF16 (needs cpu->avx512bf16): round to nearest
 * even, but it always treats float32 subnormal inputs as zero, so it differs from
 * wh_f32_to_bf16 there; the dispatchers never use it. For tests and comparisons. */
void wh_f32_to_bf16_n_avx512bf16(const float *src, uint16_t *dst, size_t n);

#endif
