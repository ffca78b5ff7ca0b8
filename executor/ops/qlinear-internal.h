/* Private to executor/ops/qlinear-contrib*.c and tests/check-qlinear.c: the row kernels of
 * ONNX Runtime's quantized contrib ops (com.microsoft QLinearAdd, QLinearMul,
 * QLinearGlobalAveragePool), each with a scalar reference (qlinear-contrib.c) and AVX2 /
 * AVX-512 variants (qlinear-contrib-avx2.c, qlinear-contrib-avx512.c) that must only be
 * called when the CPU's ISA allows them.
 *
 * Numerics: every variant gives the scalar reference's bytes (bound: 0 units). The float32
 * steps are the same operations in the same order without fused multiply-adds (the SIMD
 * files are built with contraction off); the rounding to an integer is nearbyintf's (round
 * half to even) and the clamp to the 8-bit range saturates, which the SIMD variants do on
 * integers after clamping the float to +-2^30 (the same result: every value beyond is
 * clamped anyway); a NaN (only from a zero or non-finite scale) gives the type's lowest
 * value in every variant. Integer sums are exact. */
#ifndef WH_QLINEAR_INTERNAL_H
#define WH_QLINEAR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cpu.h"

/* QLinearAdd (mul false): y = q(ra * (float)(a - za) + rb * (float)(b - zb)), the two
 * products then the sum; QLinearMul: y = q((float)((a - za) * (b - zb)) * rab); where
 * q(v) = clamp(nearbyintf(v) + zc) to uint8, or int8 where s8 (a, b and y are of that
 * type, passed as bytes). */
struct wh_qlin_bin {
	bool mul, s8;
	int32_t za, zb, zc;
	float ra, rb, rab;
};

/* y[i] = op(a[i * sa], b[i * sb]) for i < n; sa and sb each 0 (a scalar operand) or 1. */
void wh_qlin_bin_row(enum wh_isa isa, const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b,
		     size_t sb, uint8_t *y, size_t n);
void wh_qlin_bin_row_scalar(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			    uint8_t *y, size_t n);
void wh_qlin_bin_row_avx2(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			  uint8_t *y, size_t n);
void wh_qlin_bin_row_avx512(const struct wh_qlin_bin *p, const uint8_t *a, size_t sa, const uint8_t *b, size_t sb,
			    uint8_t *y, size_t n);

/* y[i] = q(x[i] * m) for i < n, q as above with zero point zp (QLinearSoftmax's last pass). */
void wh_qlin_quant_row(enum wh_isa isa, const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n);
void wh_qlin_quant_row_scalar(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n);
void wh_qlin_quant_row_avx2(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n);
void wh_qlin_quant_row_avx512(const float *x, float m, int32_t zp, bool s8, uint8_t *y, size_t n);

/* QGemm's accumulator: sum over i < k of (a[i] - za) * (b[i] - zb), each operand uint8 or
 * int8 (as8, bs8), summed modulo 2^32 as int32 wrapping (what a sum past int32 gives in
 * the reference: exact otherwise). */
int32_t wh_qlin_dot(enum wh_isa isa, const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8,
		    size_t k);
int32_t wh_qlin_dot_scalar(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8, size_t k);
int32_t wh_qlin_dot_avx2(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8, size_t k);
int32_t wh_qlin_dot_avx512(const uint8_t *a, int32_t za, bool as8, const uint8_t *b, int32_t zb, bool bs8,
			   size_t k);

/* The sum of x[0..n) as uint8, or int8 where s8 (exact). */
int64_t wh_qlin_sum_q8(enum wh_isa isa, const uint8_t *x, size_t n, bool s8);
int64_t wh_qlin_sum_q8_scalar(const uint8_t *x, size_t n, bool s8);
int64_t wh_qlin_sum_q8_avx2(const uint8_t *x, size_t n, bool s8);
int64_t wh_qlin_sum_q8_avx512(const uint8_t *x, size_t n, bool s8);

#endif
