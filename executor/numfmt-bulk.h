/* Private to executor/ (and its tests): bulk number-format conversions. The bulk functions
 * give exactly the results of the scalar ones in graph/numfmt.h for every input (NaN
 * payloads included); they pick the ISA variant from cpu (NULL means scalar). The _avx2 /
 * _avx512 variants live in numfmt-avx2.c / numfmt-avx512.c and may only be called when cpu
 * says the ISA is usable; they are declared here for the tests that compare them with the
 * scalar code. */
#ifndef WH_NUMFMT_BULK_H
#define WH_NUMFMT_BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"
#include "graph/numfmt.h" /* the scalar conversions, e8m0 rounding modes and round to odd */

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
