/* Private to executor/ops/{nn,reduce,misc}.c, their SIMD variants (nn-avx2.c, nn-avx512.c)
 * and tests/check-nn.c: float32 row primitives shared by the normalization, pooling and
 * reduction kernels, with a scalar reference and ISA variants chosen by the caller.
 *
 * Numerics: sums of float32 data are accumulated in double and rounded once by the caller,
 * so the result is within one float rounding of the exact value whatever the summation
 * order; the scalar and SIMD variants differ only in the order of the double additions
 * (fixed per ISA, never per thread count). The affine map is a multiply then an add, never
 * a fused multiply-add, so it is bit-identical on every ISA. */
#ifndef WH_NN_INTERNAL_H
#define WH_NN_INTERNAL_H

#include <stddef.h>

#include "executor/cpu.h"

/* Sum of x[0..n) in double. */
double wh_nn_sum_f32(enum wh_isa isa, const float *x, size_t n);
double wh_nn_sum_f32_scalar(const float *x, size_t n);
double wh_nn_sum_f32_avx2(const float *x, size_t n);
double wh_nn_sum_f32_avx512(const float *x, size_t n);

/* Sum of (x[i] - mean)^2 in double. */
double wh_nn_sqdev_f32(enum wh_isa isa, const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_scalar(const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_avx2(const float *x, size_t n, double mean);
double wh_nn_sqdev_f32_avx512(const float *x, size_t n, double mean);

/* y[i] = x[i] * a + b, in float32 (x and y may alias). */
void wh_nn_affine_f32(enum wh_isa isa, const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_scalar(const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_avx2(const float *x, float *y, size_t n, float a, float b);
void wh_nn_affine_f32_avx512(const float *x, float *y, size_t n, float a, float b);

#endif
