/* Private to executor/ops/elementwise*.c, executor/ops/rnn.c (its gates) and
 * tests/check-elementwise.c: the float32 row kernels behind the elementwise ops. Each has a
 * scalar reference (elementwise.c) and AVX2 / AVX-512 variants (elementwise-avx2.c,
 * elementwise-avx512.c) that must only be called when ctx->cpu->isa allows them.
 *
 * Numerics: every variant gives bit-identical results to the scalar reference.
 * Add/Sub/Mul/Div/Max/Min/PRelu/Relu/Clip/Abs/Neg/Sqrt/Reciprocal/Floor/Ceil/Round are
 * exactly rounded IEEE operations. Exp, Sigmoid and Tanh do not call libm: they share one
 * exp (Cody-Waite range reduction and the Cephes degree-5 polynomial, about 1 ulp) written
 * as plain multiplies and adds in the same order in every variant, with no FMA (the
 * scalar file is built for baseline x86-64, which has none), so the SIMD variants perform
 * the same operations and round identically. Erf and Gelu use that exp too (see the erf
 * constants below). LeakyRelu/HardSigmoid/HardSwish avoid FMA for
 * the same reason. Max/Min propagate a NaN in either operand, as numpy's maximum does.
 * The constants below are shared so that the variants cannot drift apart. */
#ifndef WH_ELEMENTWISE_INTERNAL_H
#define WH_ELEMENTWISE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "executor/cpu.h"

/* Binary float32 row kernels: o[i] = a[i*sa] OP b[i*sb], sa and sb each 0 or 1. */
enum wh_ew_bin {
	WH_EW_ADD,
	WH_EW_SUB,
	WH_EW_MUL,
	WH_EW_DIV,
	WH_EW_MAX,   /* a > b ? a : b, NaN in a or b gives NaN */
	WH_EW_MIN,   /* a < b ? a : b, NaN in a or b gives NaN */
	WH_EW_PRELU, /* a < 0 ? a * b : a */
	WH_EW_BIN_COUNT_
};

/* Unary float32 row kernels: y[i] = f(x[i]); p1/p2 are the op's parameters. */
enum wh_ew_un {
	WH_EW_RELU,         /* 0 > x ? 0 : x */
	WH_EW_LEAKY_RELU,   /* x < 0 ? x * p1 : x */
	WH_EW_CLIP,         /* t = p1 > x ? p1 : x; p2 < t ? p2 : t */
	WH_EW_HARD_SIGMOID, /* t = x * p1 + p2, clamped to [0, 1] as CLIP does */
	WH_EW_HARD_SWISH,   /* x * HARD_SIGMOID(x) */
	WH_EW_SIGMOID,
	WH_EW_TANH,
	WH_EW_EXP,
	WH_EW_ABS,
	WH_EW_NEG,
	WH_EW_SQRT,
	WH_EW_RECIPROCAL,
	WH_EW_FLOOR,
	WH_EW_CEIL,
	WH_EW_ROUND, /* half to even */
	WH_EW_ERF,
	WH_EW_GELU,      /* 0.5 x (1 + erf(x / sqrt 2)), in one pass */
	WH_EW_GELU_TANH, /* Gelu approximate="tanh", as x * sigmoid(2u) (see below) */
	WH_EW_UN_COUNT_
};

/* exp: inputs are clamped to [LO, HI] (beyond them the result is 0 or overflows anyway);
 * n = round(x * log2(e)) by the 1.5 * 2^23 trick (exact for |n| < 2^22, ties to even);
 * r = x - n * C1 - n * C2; y = P(r) * r^2 + r + 1; 2^n applied as two normal factors
 * 2^(floor(n/2)) * 2^(n - floor(n/2)) so that results down to the subnormals are right. */
#define WH_EW_EXP_HI 88.72283935546875f
#define WH_EW_EXP_LO (-103.97208404541015625f)
#define WH_EW_LOG2E 1.44269504088896341f
#define WH_EW_ROUND_MAGIC 12582912.0f
#define WH_EW_EXP_C1 0.693359375f
#define WH_EW_EXP_C2 (-2.12194440e-4f)
#define WH_EW_EXP_P0 1.9875691500e-4f
#define WH_EW_EXP_P1 1.3981999507e-3f
#define WH_EW_EXP_P2 8.3334519073e-3f
#define WH_EW_EXP_P3 4.1665795894e-2f
#define WH_EW_EXP_P4 1.6666665459e-1f
#define WH_EW_EXP_P5 5.0000001201e-1f

/* tanh: |x| < TANH_SMALL uses the Taylor series to x^15 (error < 1e-9 relative there);
 * beyond, (1 - e) / (1 + e) with e = exp(-2|x|) and the sign of x. */
#define WH_EW_TANH_SMALL 0.4f
#define WH_EW_TANH_T3 (-3.33333333333333333e-1f)
#define WH_EW_TANH_T5 1.33333333333333333e-1f
#define WH_EW_TANH_T7 (-5.39682539682539683e-2f)
#define WH_EW_TANH_T9 2.18694885361552028e-2f
#define WH_EW_TANH_T11 (-8.86323552990219656e-3f)
#define WH_EW_TANH_T13 3.59212803657248102e-3f
#define WH_EW_TANH_T15 (-1.45583438705131827e-3f)

/* erf, within 3 ulp of the exact value (tests/check-elementwise.c sweeps it):
 * |x| < 1: x * A(x^2), A a degree-6 least-squares fit of erf(x)/x on [0, 1];
 * |x| >= 1: 1 - erfc(|x|) with the sign of x, where erfc(a) = exp(-a^2) * B(1 / (1 + a)) and
 * B a degree-8 fit of erfcx(a) = exp(a^2) erfc(a) on [0.5, 10], relative error < 3e-7 there
 * (the coefficients were fitted for whittle with numpy; erfcx is smooth in 1 / (1 + a)).
 * Gelu uses the same pieces on z = x / sqrt 2: A where -0.5 < z < 1, elsewhere
 * 0.5 x (2 - erfc(z)) or, for z <= -0.5, 0.5 x erfc(-z), so that its negative side does
 * not cancel in 1 + erf(z); and it takes a^2 = z^2 as (0.5 x) x, one rounding instead of
 * two, because an error in the exponent is multiplied by a^2 in exp(-a^2).
 * Gelu approximate="tanh" is 0.5 x (1 + tanh(u)) = x * sigmoid(2u) with
 * u = sqrt(2/pi) (x + 0.044715 x^3): the sigmoid form does not cancel for negative u. */
#define WH_EW_ERF_A0 1.128379226e+00f
#define WH_EW_ERF_A1 (-3.761262894e-01f)
#define WH_EW_ERF_A2 1.128361225e-01f
#define WH_EW_ERF_A3 (-2.685480565e-02f)
#define WH_EW_ERF_A4 5.190048832e-03f
#define WH_EW_ERF_A5 (-8.024311974e-04f)
#define WH_EW_ERF_A6 7.898066542e-05f
#define WH_EW_ERF_B0 8.143324521e-06f
#define WH_EW_ERF_B1 5.638264418e-01f
#define WH_EW_ERF_B2 5.710436702e-01f
#define WH_EW_ERF_B3 2.104107291e-01f
#define WH_EW_ERF_B4 1.732083261e-01f
#define WH_EW_ERF_B5 (-2.498208761e+00f)
#define WH_EW_ERF_B6 4.022960663e+00f
#define WH_EW_ERF_B7 (-2.828511477e+00f)
#define WH_EW_ERF_B8 7.891016603e-01f
#define WH_EW_ERF_ONE 4.0f /* 1 - erfc(4) rounds to 1 */
#define WH_EW_SQRT1_2 0.70710678118654752f
#define WH_EW_GELU_K2 1.59576912160573071f /* 2 sqrt(2/pi) */
#define WH_EW_GELU_C 0.044715f

/* The scalar reference math (elementwise.c), also used for float16/bfloat16/float8. */
float wh_ew_expf(float x);
float wh_ew_sigmoidf(float x);
float wh_ew_tanhf(float x);
float wh_ew_erff(float x);
float wh_ew_geluf(float x);
float wh_ew_gelu_tanhf(float x);

void wh_ew_bin_f32_scalar(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
			  float *o, size_t n);
void wh_ew_bin_f32_avx2(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
			float *o, size_t n);
void wh_ew_bin_f32_avx512(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
			  float *o, size_t n);

/* y[i] = v[(ph + i) % p] op x[i] (v_first) or x[i] op v[(ph + i) % p], for i < n: a vector of
 * p repeated along a stretch (a bias over rows of p), the row kernel of the ISA called on
 * long runs of a repeated copy of v; the same bits as row by row. */
void wh_ew_bin_f32_periodic(enum wh_isa isa, enum wh_ew_bin op, const float *x, const float *v, size_t p,
			    bool v_first, float *y, size_t n, size_t ph);

void wh_ew_un_f32_scalar(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2);
void wh_ew_un_f32_avx2(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2);
void wh_ew_un_f32_avx512(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2);

#endif
