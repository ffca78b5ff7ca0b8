/* Private to executor/ (and its tests): the bulk loops of the int8 emulation (emulate.c):
 * the range of a tensor, fake quantization onto the int8 grid, the grid values themselves,
 * and the integer GEMM's rescale. The dispatchers pick the ISA variant from cpu (NULL means
 * scalar); every variant gives exactly the scalar reference's bits for every input (NaN,
 * infinities, signed zeros, ties), which tests/check-numfmt-quant.c checks. The _avx2 /
 * _avx512 variants (numfmt-quant-avx2.c / -avx512.c) may only be called when cpu says the
 * ISA is usable. No function keeps a pointer. */
#ifndef WH_NUMFMT_QUANT_H
#define WH_NUMFMT_QUANT_H

#include <stdbool.h>
#include <stddef.h>

#include "executor/cpu.h"

/* The largest finite float: |x| above it (infinity) or unordered (NaN) does not count in a
 * range. */
#define WH_QUANT_FLT_MAX 3.4028234663852886e38f

/* Round half to even of a value already clamped to [-127, 127]: adding and subtracting
 * 1.5 * 2^23 rounds in the FPU's default mode, without a libm call per element (C does not
 * let the compiler fold the pair without -ffast-math, which whittle never uses). The SIMD
 * variants do the same two operations, so a small negative value rounds to +0 in all. */
static inline float wh_rne_small(float y)
{
	const float m = 12582912.0f;
	return (y + m) - m;
}

/* The int8 grid value of x / scale (inv_scale = 1 / scale): saturated to [-127, 127],
 * rounded half to even; NaN becomes 0. Written as selects, without branches, so that
 * scalar loops around it vectorize. */
static inline float wh_quant_int8(float x, float inv_scale)
{
	float y = x * inv_scale;
	y = y > 127.0f ? 127.0f : y;
	y = y < -127.0f ? -127.0f : y;
	float r = wh_rne_small(y);
	return y == y ? r : 0.0f;
}

/* The largest finite |x[i]| (0 when there is none). */
float wh_amax_n(const float *x, size_t n, const struct wh_cpu_features *cpu);
/* dst[i] = wh_quant_int8(src[i], inv) * scale (dst may equal src); returns the largest
 * finite |dst[i]|, the range a consumer would measure on dst. */
float wh_fake_quant_int8_n(const float *src, float *dst, size_t n, float inv, float scale,
			   const struct wh_cpu_features *cpu);
/* dst[i] = wh_quant_int8(src[i], inv) (the integers, as floats). */
void wh_quant_int8_n(const float *src, float *dst, size_t n, float inv, const struct wh_cpu_features *cpu);
/* dst[i] = fp8(src[i] * inv) * scale, fp8 the round trip through float8 e4m3fn (e5m2 false)
 * or e5m2 (true) with saturation, as graph/numfmt.h's wh_f32_to_e4m3fn / wh_e4m3fn_to_f32 (dst
 * may equal src); returns the largest finite |dst[i]|. */
float wh_fake_quant_fp8_n(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2,
			  const struct wh_cpu_features *cpu);
/* y[i] = y[i] * s + b (two roundings, never fused); returns the largest finite |y[i]|. */
float wh_scale_add_n(float *y, size_t n, float s, float b, const struct wh_cpu_features *cpu);

float wh_amax_n_scalar(const float *x, size_t n);
float wh_fake_quant_int8_n_scalar(const float *src, float *dst, size_t n, float inv, float scale);
void wh_quant_int8_n_scalar(const float *src, float *dst, size_t n, float inv);
float wh_scale_add_n_scalar(float *y, size_t n, float s, float b);
float wh_fake_quant_fp8_n_scalar(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2);
float wh_fake_quant_fp8_n_avx2(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2);
float wh_fake_quant_fp8_n_avx512(const float *src, float *dst, size_t n, float inv, float scale, bool e5m2);
float wh_amax_n_avx2(const float *x, size_t n);
float wh_fake_quant_int8_n_avx2(const float *src, float *dst, size_t n, float inv, float scale);
void wh_quant_int8_n_avx2(const float *src, float *dst, size_t n, float inv);
float wh_scale_add_n_avx2(float *y, size_t n, float s, float b);
float wh_amax_n_avx512(const float *x, size_t n);
float wh_fake_quant_int8_n_avx512(const float *src, float *dst, size_t n, float inv, float scale);
void wh_quant_int8_n_avx512(const float *src, float *dst, size_t n, float inv);
float wh_scale_add_n_avx512(float *y, size_t n, float s, float b);

#endif
