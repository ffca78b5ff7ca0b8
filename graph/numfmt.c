/* Number formats: float32 <-> the reduced storage formats, with round-to-nearest-even.
 *
 * Every narrowing conversion goes through one integer routine (small_code) that rounds the
 * float32 magnitude to a format described by its mantissa width and smallest normal
 * exponent. Working on the integer significand keeps the rounding exact (no double
 * rounding through an intermediate float) and independent of the FPU's MXCSR state
 * (DAZ/FTZ), so the results match the IEEE definition bit for bit. The callers then apply
 * each format's own overflow, NaN and signed-zero rules. */
#include "graph/numfmt.h"

#include <math.h>

/* Rounds |f| (a finite float32 given by its bits, sign ignored) to the format with mbits
 * explicit mantissa bits and smallest normal exponent emin, and returns the encoding of the
 * magnitude: ((E - emin) << mbits) + q, which is exactly the biased-exponent/mantissa code
 * of IEEE-style formats (subnormals have exponent field 0). A rounding carry moves into
 * the exponent field by itself. The caller compares the code with its largest finite code
 * to detect overflow (the code of any float32 fits in 18 bits). */
static uint32_t small_code(uint32_t bits, int mbits, int emin)
{
	uint32_t ef = (bits >> 23) & 0xFF;
	uint32_t sig = bits & 0x7FFFFF;
	int e;

	if (ef == 0) {
		if (sig == 0)
			return 0;
		e = -126; /* float32 subnormal: no implicit bit */
	} else {
		sig |= 0x800000;
		e = (int)ef - 127;
	}
	int E = e < emin ? emin : e;
	/* Bits of sig below the target's quantum 2^(E - mbits); sig's quantum is 2^(e - 23). */
	int shift = 23 - mbits + (E - e);
	if (shift > 25)
		return 0; /* below half of the smallest subnormal: rounds to zero */
	uint32_t q = sig >> shift;
	uint32_t rem = sig & ((1u << shift) - 1);
	uint32_t half = 1u << (shift - 1);
	if (rem > half || (rem == half && (q & 1)))
		q++;
	return ((uint32_t)(E - emin) << mbits) + q;
}

static bool is_nan_bits(uint32_t bits)
{
	return (bits & 0x7FFFFFFF) > 0x7F800000;
}

static bool is_inf_bits(uint32_t bits)
{
	return (bits & 0x7FFFFFFF) == 0x7F800000;
}

/* ---- IEEE binary16 ---- */

uint16_t wh_f32_to_f16(float f)
{
	uint32_t b = wh_f32_bits(f);
	uint16_t sign = (uint16_t)((b >> 16) & 0x8000);

	if (is_nan_bits(b))
		/* As x86 F16C does: quiet bit set, top payload bits kept. */
		return (uint16_t)(sign | 0x7E00 | ((b >> 13) & 0x3FF));
	if (is_inf_bits(b))
		return sign | 0x7C00;
	uint32_t c = small_code(b, 10, -14);
	if (c >= 0x7C00)
		return sign | 0x7C00;
	return (uint16_t)(sign | c);
}

float wh_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t ef = (h >> 10) & 0x1F;
	uint32_t m = h & 0x3FF;

	if (ef == 0x1F) {
		if (m == 0)
			return wh_bits_f32(sign | 0x7F800000);
		return wh_bits_f32(sign | 0x7FC00000 | (m << 13));
	}
	if (ef == 0) {
		if (m == 0)
			return wh_bits_f32(sign);
		/* Subnormal m * 2^-24: normalise into float32's normal range. */
		int e = -14;
		while (!(m & 0x400)) {
			m <<= 1;
			e--;
		}
		m &= 0x3FF;
		return wh_bits_f32(sign | ((uint32_t)(e + 127) << 23) | (m << 13));
	}
	return wh_bits_f32(sign | ((ef + 112) << 23) | (m << 13));
}

/* ---- bfloat16 and TF32 ---- */

uint16_t wh_f32_to_bf16(float f)
{
	uint32_t b = wh_f32_bits(f);

	if (is_nan_bits(b))
		return (uint16_t)((b >> 16) | 0x40);
	/* Same exponent range as float32, so adding half an ulp with the tie bit rounds to
	 * nearest even and carries into the exponent (up to inf) exactly. */
	uint32_t r = b + 0x7FFF + ((b >> 16) & 1);
	return (uint16_t)(r >> 16);
}


/* ---- float8 ---- */

/* Largest finite magnitude codes and NaN codes of the float8 formats. */
#define E4M3FN_MAX 0x7E
#define E4M3FN_NAN 0x7F
#define E4M3FNUZ_MAX 0x7F
#define E5M2_MAX 0x7B
#define E5M2_INF 0x7C
#define E5M2FNUZ_MAX 0x7F
#define FNUZ_NAN 0x80

uint8_t wh_f32_to_e4m3fn(float f, bool saturate)
{
	uint32_t b = wh_f32_bits(f);
	uint8_t sign = (uint8_t)(b >> 24) & 0x80;

	if (is_nan_bits(b))
		return sign | E4M3FN_NAN;
	if (is_inf_bits(b))
		return sign | (saturate ? E4M3FN_MAX : E4M3FN_NAN);
	uint32_t c = small_code(b, 3, -6);
	if (c > E4M3FN_MAX)
		return sign | (saturate ? E4M3FN_MAX : E4M3FN_NAN);
	return (uint8_t)(sign | c);
}

/* Decodes the magnitude code of a format with mbits mantissa bits and bias. */
static float small_decode(uint32_t code, int mbits, int bias)
{
	uint32_t ef = code >> mbits;
	uint32_t m = code & ((1u << mbits) - 1);
	float scale;

	if (ef == 0) {
		/* m * 2^(1 - bias - mbits), exact in float32 for every format here. */
		scale = wh_bits_f32((uint32_t)(127 + 1 - bias - mbits) << 23);
		return (float)m * scale;
	}
	return wh_bits_f32(((ef - (uint32_t)bias + 127) << 23) | (m << (23 - mbits)));
}

static float with_sign(float v, uint8_t signbit)
{
	return signbit ? -v : v;
}

float wh_e4m3fn_to_f32(uint8_t v)
{
	if ((v & 0x7F) == E4M3FN_NAN)
		return wh_bits_f32(((uint32_t)(v & 0x80) << 24) | 0x7FC00000);
	return with_sign(small_decode(v & 0x7F, 3, 7), v & 0x80);
}

/* The "fnuz" formats have no negative zero: 0x80 is their only NaN, so anything that
 * rounds to zero is +0 whatever its sign. */
static uint8_t fnuz_finish(uint8_t sign, uint32_t c, uint32_t max, bool saturate)
{
	if (c > max)
		return saturate ? (uint8_t)(sign | max) : FNUZ_NAN;
	if (c == 0)
		return 0;
	return (uint8_t)(sign | c);
}

/* The fnuz formats differ only in their field widths: one encoder and one decoder. */
static uint8_t to_fnuz(float f, bool saturate, int mbits, int emin, uint32_t max)
{
	uint32_t b = wh_f32_bits(f);
	uint8_t sign = (uint8_t)(b >> 24) & 0x80;

	if (is_nan_bits(b))
		return FNUZ_NAN;
	if (is_inf_bits(b))
		return saturate ? (uint8_t)(sign | max) : FNUZ_NAN;
	return fnuz_finish(sign, small_code(b, mbits, emin), max, saturate);
}

static float from_fnuz(uint8_t v, int mbits, int bias)
{
	if (v == FNUZ_NAN)
		return wh_bits_f32(0x7FC00000);
	return with_sign(small_decode(v & 0x7F, mbits, bias), v & 0x80);
}

uint8_t wh_f32_to_e4m3fnuz(float f, bool saturate)
{
	return to_fnuz(f, saturate, 3, -7, E4M3FNUZ_MAX);
}

float wh_e4m3fnuz_to_f32(uint8_t v)
{
	return from_fnuz(v, 3, 8);
}

uint8_t wh_f32_to_e5m2(float f, bool saturate)
{
	uint32_t b = wh_f32_bits(f);
	uint8_t sign = (uint8_t)(b >> 24) & 0x80;

	if (is_nan_bits(b))
		return sign | 0x7E;
	if (is_inf_bits(b))
		return sign | (saturate ? E5M2_MAX : E5M2_INF);
	uint32_t c = small_code(b, 2, -14);
	if (c > E5M2_MAX)
		return sign | (saturate ? E5M2_MAX : E5M2_INF);
	return (uint8_t)(sign | c);
}

float wh_e5m2_to_f32(uint8_t v)
{
	uint32_t sign = (uint32_t)(v & 0x80) << 24;
	uint32_t mag = v & 0x7F;

	if (mag == E5M2_INF)
		return wh_bits_f32(sign | 0x7F800000);
	if (mag > E5M2_INF)
		return wh_bits_f32(sign | 0x7FC00000 | ((mag & 3) << 21));
	return with_sign(small_decode(mag, 2, 15), v & 0x80);
}

uint8_t wh_f32_to_e5m2fnuz(float f, bool saturate)
{
	return to_fnuz(f, saturate, 2, -15, E5M2FNUZ_MAX);
}

float wh_e5m2fnuz_to_f32(uint8_t v)
{
	return from_fnuz(v, 2, 16);
}

/* ---- float4 e2m1 ---- */

uint8_t wh_f32_to_e2m1(float f, bool saturate)
{
	uint32_t b = wh_f32_bits(f);
	uint8_t sign = (uint8_t)(b >> 28) & 0x8;

	/* No NaN or inf in e2m1. ONNX (through ml_dtypes) maps NaN to 0x8 and always
	 * saturates: Cast's saturate attribute applies to float8 types only. */
	(void)saturate;
	if (is_nan_bits(b))
		return 0x8;
	if (is_inf_bits(b))
		return sign | 0x7;
	uint32_t c = small_code(b, 1, 0);
	if (c > 0x7)
		c = 0x7;
	return (uint8_t)(sign | c);
}

float wh_e2m1_to_f32(uint8_t v)
{
	return with_sign(small_decode(v & 0x7, 1, 1), v & 0x8);
}

/* ---- float8 e8m0 (a power of two, no sign, no zero) ---- */

uint8_t wh_f32_to_e8m0_mode(float f, bool saturate, enum wh_e8m0_round mode)
{
	uint32_t b = wh_f32_bits(f);
	uint32_t ef = (b >> 23) & 0xFF;
	uint32_t m = b & 0x7FFFFF;
	bool up = false;

	/* The sign is ignored (negative inputs are undefined in ONNX), and NaN and inf both
	 * give the NaN code 0xFF, as the ONNX reference does. */
	if (ef == 0xFF)
		return 0xFF;
	switch (mode) {
	case WH_E8M0_ROUND_UP:
		up = m != 0;
		break;
	case WH_E8M0_ROUND_NEAREST:
		/* Guard bit set and (more bits below it, or an odd exponent field... the ONNX
		 * reference treats every non-zero exponent field as "odd"): ties between
		 * 2^e and 2^(e+1) go up except from the subnormal range. */
		up = (m & 0x400000) && ((m & 0x3FFFFF) || ef > 0);
		break;
	case WH_E8M0_ROUND_DOWN:
		break;
	}
	if (up && ef == 0xFE && saturate)
		up = false;
	return (uint8_t)(ef + up);
}

uint8_t wh_f32_to_e8m0(float f, bool saturate, bool round_up)
{
	return wh_f32_to_e8m0_mode(f, saturate, round_up ? WH_E8M0_ROUND_UP : WH_E8M0_ROUND_NEAREST);
}

float wh_e8m0_to_f32(uint8_t v)
{
	if (v == 0xFF)
		return wh_bits_f32(0x7FC00000);
	if (v == 0)
		return wh_bits_f32(0x00400000); /* 2^-127, a float32 subnormal */
	return wh_bits_f32((uint32_t)v << 23);
}

/* ---- round to odd ---- */

float wh_f64_to_f32_odd(double d)
{
	float f = (float)d;
	if (d != d || (double)f == d)
		return f;
	/* inexact: truncate toward zero (this also brings an overflowed inf back to FLT_MAX)
	 * and mark the lost bits in the last place */
	if (fabs((double)f) > fabs(d))
		f = nextafterf(f, 0.0f);
	return wh_bits_f32(wh_f32_bits(f) | 1);
}

float wh_u64_to_f32_odd(uint64_t v)
{
	int shift = 0;
	uint64_t q = v;
	while (q >= (1u << 24)) {
		q >>= 1;
		shift++;
	}
	if (shift && (v & ((UINT64_C(1) << shift) - 1)))
		q |= 1;
	return ldexpf((float)q, shift); /* exact: q has at most 24 bits */
}

float wh_i64_to_f32_odd(int64_t v)
{
	uint64_t mag = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	float f = wh_u64_to_f32_odd(mag);
	return v < 0 ? -f : f;
}
