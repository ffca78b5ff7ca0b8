/* Number formats: exhaustive tests where the format is small, every rounding midpoint of
 * fp16 / bf16 / fp8 / fp4, overflow and subnormal boundaries, and the SIMD bulk converters
 * against the scalar ones (and, where the CPU has them, against F16C / AVX-512 BF16). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"

/* ck_assert records a checkpoint through a syscall on every call: loops over millions of
 * values use CHECK, which only calls into Check on failure. */
#define CHECK(cond, ...)                                                                                    \
	do {                                                                                                \
		if (!(cond))                                                                                \
			ck_abort_msg(__VA_ARGS__);                                                          \
	} while (0)
#define CHECK_EQ(a, b) CHECK((a) == (b), "%s == %s: 0x%llx != 0x%llx", #a, #b, (unsigned long long)(a), \
			     (unsigned long long)(b))

static float next_up(float f)
{
	return nextafterf(f, INFINITY);
}

static float next_down(float f)
{
	return nextafterf(f, -INFINITY);
}

static bool same_bits(float a, float b)
{
	return wh_f32_bits(a) == wh_f32_bits(b);
}

/* Splitmix64: a fixed-seed generator so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* ---- fp16 ---- */

/* Independent decoding of binary16 by its definition. */
static double f16_value(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 0x1F, m = h & 0x3FF;
	double v = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, e - 25);
	return s ? -v : v;
}

START_TEST(f16_all_patterns_round_trip)
{
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t h = (uint16_t)i;
		float f = wh_f16_to_f32(h);
		bool nan = (h & 0x7C00) == 0x7C00 && (h & 0x3FF);
		if (nan) {
			CHECK(isnan(f), "0x%04x should decode to NaN", h);
			CHECK_EQ(signbit(f) != 0, (h >> 15) != 0);
			/* NaNs come back quiet with their payload */
			CHECK_EQ(wh_f32_to_f16(f), h | 0x200);
			continue;
		}
		if ((h & 0x7FFF) == 0x7C00)
			CHECK(isinf(f) && (signbit(f) != 0) == (h >> 15), "isinf(f) && (signbit(f) != 0) == (h >> 15)");
		else
			CHECK((double)f == f16_value(h), "0x%04x decodes to %a", h, (double)f);
		CHECK_EQ(signbit(f) != 0, (h >> 15) != 0);
		CHECK(wh_f32_to_f16(f) == h, "0x%04x -> %a -> 0x%04x", h, (double)f, wh_f32_to_f16(f));
	}
}
END_TEST

/* Between every pair of adjacent finite fp16 values, of both signs: the exact midpoint goes
 * to the even one, one float32 ulp either side goes to the nearer one. */
START_TEST(f16_every_midpoint_ties_to_even)
{
	for (uint32_t h = 0; h < 0x7BFF; h++) {
		for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
			uint16_t lo = (uint16_t)(sign | h), hi = (uint16_t)(sign | (h + 1));
			float a = wh_f16_to_f32(lo), b = wh_f16_to_f32(hi);
			float mid = (a + b) / 2; /* exact: fp16 has 11 bits, float32 24 */
			CHECK((double)mid == (f16_value(lo) + f16_value(hi)) / 2, "(double)mid == (f16_value(lo) + f16_value(hi)) / 2");
			uint16_t even = (h & 1) ? hi : lo;
			CHECK(wh_f32_to_f16(mid) == even, "midpoint of 0x%04x 0x%04x", lo, hi);
			float toward_b = sign ? next_down(mid) : next_up(mid);
			float toward_a = sign ? next_up(mid) : next_down(mid);
			CHECK_EQ(wh_f32_to_f16(toward_b), hi);
			CHECK_EQ(wh_f32_to_f16(toward_a), lo);
		}
	}
}
END_TEST

START_TEST(f16_overflow_and_subnormal_boundaries)
{
	CHECK_EQ(wh_f32_to_f16(65504.0f), 0x7BFF);
	CHECK_EQ(wh_f32_to_f16(next_down(65520.0f)), 0x7BFF);
	/* 65520 is the midpoint to the would-be 65536; 0x7BFF is odd, so it rounds to inf */
	CHECK_EQ(wh_f32_to_f16(65520.0f), 0x7C00);
	CHECK_EQ(wh_f32_to_f16(-65520.0f), 0xFC00);
	CHECK_EQ(wh_f32_to_f16(1e10f), 0x7C00);
	CHECK_EQ(wh_f32_to_f16(3.4e38f), 0x7C00);
	CHECK_EQ(wh_f32_to_f16(INFINITY), 0x7C00);
	CHECK_EQ(wh_f32_to_f16(-INFINITY), 0xFC00);
	CHECK_EQ(wh_f32_to_f16(wh_bits_f32(0x7FC00000)), 0x7E00);
	CHECK_EQ(wh_f32_to_f16(wh_bits_f32(0xFFC00000)), 0xFE00);
	/* a signalling NaN whose payload sits below fp16's mantissa stays a NaN */
	CHECK_EQ(wh_f32_to_f16(wh_bits_f32(0x7F800001)), 0x7E00);
	CHECK_EQ(wh_f32_to_f16(0.0f), 0x0000);
	CHECK_EQ(wh_f32_to_f16(-0.0f), 0x8000);
	/* subnormals: 2^-24 is the smallest; half of it ties to zero; just above goes up */
	CHECK_EQ(wh_f32_to_f16(ldexpf(1, -24)), 0x0001);
	CHECK_EQ(wh_f32_to_f16(ldexpf(1, -25)), 0x0000);
	CHECK_EQ(wh_f32_to_f16(-ldexpf(1, -25)), 0x8000);
	CHECK_EQ(wh_f32_to_f16(next_up(ldexpf(1, -25))), 0x0001);
	CHECK_EQ(wh_f32_to_f16(ldexpf(3, -25)), 0x0002);
	CHECK_EQ(wh_f32_to_f16(ldexpf(1, -30)), 0x0000);
	CHECK_EQ(wh_f32_to_f16(wh_bits_f32(1)), 0x0000); /* float32 subnormal */
	CHECK_EQ(wh_f32_to_f16(ldexpf(1023, -24)), 0x03FF);
	CHECK_EQ(wh_f32_to_f16(ldexpf(1, -14)), 0x0400);
	/* the largest subnormal rounding up into the smallest normal */
	CHECK_EQ(wh_f32_to_f16(ldexpf(2047, -25)), 0x0400);
	CHECK_EQ(wh_f32_to_f16(1.0f), 0x3C00);
	CHECK_EQ(wh_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3C00);
	CHECK_EQ(wh_f32_to_f16(1.0f + ldexpf(3, -11)), 0x3C02);
	CHECK(same_bits(wh_round_f16(0.1f), 0.0999755859375f), "same_bits(wh_round_f16(0.1f), 0.0999755859375f)");
}
END_TEST

/* ---- bf16 and tf32 ---- */

START_TEST(bf16_all_patterns_round_trip_and_midpoints)
{
	for (uint32_t i = 0; i < 65536; i++) {
		uint16_t b = (uint16_t)i;
		float f = wh_bf16_to_f32(b);
		if (isnan(f)) {
			CHECK_EQ(wh_f32_to_bf16(f), b | 0x40);
			/* any payload below bf16's mantissa still gives a NaN */
			CHECK(isnan(wh_bf16_to_f32(wh_f32_to_bf16(wh_bits_f32(((uint32_t)b << 16) | 1)))), "isnan(wh_bf16_to_f32(wh_f32_to_bf16(wh_bits_f32(((uint32_t)b << 16) | 1))))");
			continue;
		}
		CHECK_EQ(wh_f32_to_bf16(f), b);
		if ((b & 0x7FFF) >= 0x7F7F)
			continue; /* the largest finite value and inf have no upper neighbour */
		uint32_t mid = ((uint32_t)b << 16) | 0x8000;
		uint16_t up = (uint16_t)(b + 1), even = (b & 1) ? up : b;
		CHECK(wh_f32_to_bf16(wh_bits_f32(mid)) == even, "midpoint above 0x%04x", b);
		CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(mid + 1)), up);
		CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(mid - 1)), b);
	}
	/* overflow: the midpoint above the largest finite value (odd mantissa) goes to inf */
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x7F7F8000)), 0x7F80);
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x7F7F7FFF)), 0x7F7F);
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0xFF7FFFFF)), 0xFF80);
	/* float32 subnormals are kept (no flush to zero) */
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x00010000)), 0x0001);
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x00018000)), 0x0002);
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x00008000)), 0x0000);
	CHECK_EQ(wh_f32_to_bf16(wh_bits_f32(0x00008001)), 0x0001);
	CHECK(same_bits(wh_round_bf16(1.00390625f), 1.0f), "same_bits(wh_round_bf16(1.00390625f), 1.0f)");    /* tie, 1.0 even */
	CHECK(same_bits(wh_round_bf16(1.01171875f), 1.015625f), "same_bits(wh_round_bf16(1.01171875f), 1.015625f)"); /* tie, goes up to even */
}
END_TEST

START_TEST(tf32_rounding)
{
	uint64_t s = 1;
	for (int i = 0; i < 200000; i++) {
		uint32_t b = (uint32_t)rng_next(&s);
		if ((b & 0x7F800000) == 0x7F800000)
			continue;
		uint32_t base = b & 0xFFFFE000u;
		if ((base & 0x7FFFE000) == 0x7F7FE000)
			continue; /* rounding up from the top would overflow to inf, checked below */
		uint32_t next = base + 0x2000;
		uint32_t even = (base & 0x2000) ? next : base;
		CHECK_EQ(wh_f32_bits(wh_round_tf32(wh_bits_f32(base | 0x1000))), even);
		CHECK_EQ(wh_f32_bits(wh_round_tf32(wh_bits_f32(base | 0x1001))), next);
		CHECK_EQ(wh_f32_bits(wh_round_tf32(wh_bits_f32(base | 0x0FFF))), base);
		CHECK_EQ(wh_f32_bits(wh_round_tf32(wh_bits_f32(base))), base);
	}
	CHECK(isinf(wh_round_tf32(wh_bits_f32(0x7F7FF000))), "isinf(wh_round_tf32(wh_bits_f32(0x7F7FF000)))");
	CHECK(isnan(wh_round_tf32(wh_bits_f32(0x7F800001))), "isnan(wh_round_tf32(wh_bits_f32(0x7F800001)))");
	CHECK(same_bits(wh_round_tf32(1.0f + ldexpf(1, -11)), 1.0f), "same_bits(wh_round_tf32(1.0f + ldexpf(1, -11)), 1.0f)");
	CHECK(same_bits(wh_round_tf32(1.0f + ldexpf(3, -11)), 1.0f + ldexpf(1, -9)), "same_bits(wh_round_tf32(1.0f + ldexpf(3, -11)), 1.0f + ldexpf(1, -9))");
}
END_TEST

/* ---- float8 and float4 ---- */

struct small_fmt {
	const char *name;
	int mbits, bias;
	unsigned bits;     /* 8 or 4 */
	unsigned max_code; /* largest finite magnitude */
	bool fnuz;         /* 0x80 is NaN, no -0 */
	bool has_inf;      /* e5m2 */
	bool has_nan;
	uint8_t (*enc)(float, bool);
	float (*dec)(uint8_t);
};

static const struct small_fmt fmts[] = {
	{"e4m3fn", 3, 7, 8, 0x7E, false, false, true, wh_f32_to_e4m3fn, wh_e4m3fn_to_f32},
	{"e4m3fnuz", 3, 8, 8, 0x7F, true, false, true, wh_f32_to_e4m3fnuz, wh_e4m3fnuz_to_f32},
	{"e5m2", 2, 15, 8, 0x7B, false, true, true, wh_f32_to_e5m2, wh_e5m2_to_f32},
	{"e5m2fnuz", 2, 16, 8, 0x7F, true, false, true, wh_f32_to_e5m2fnuz, wh_e5m2fnuz_to_f32},
	{"e2m1", 1, 1, 4, 0x7, false, false, false, wh_f32_to_e2m1, wh_e2m1_to_f32},
};

/* Independent decoding of a finite magnitude code by the format's definition. */
static double small_value(const struct small_fmt *fm, unsigned code)
{
	unsigned e = code >> fm->mbits, m = code & ((1u << fm->mbits) - 1);
	if (e == 0)
		return ldexp(m, 1 - fm->bias - fm->mbits);
	return ldexp((1u << fm->mbits) + m, (int)e - fm->bias - fm->mbits);
}

static unsigned sign_bit(const struct small_fmt *fm)
{
	return 1u << (fm->bits - 1);
}

/* The encoding of what overflows (the rounded magnitude exceeds max_code). */
static unsigned overflow_code(const struct small_fmt *fm, unsigned sign, bool saturate)
{
	if (saturate || !fm->has_nan)
		return sign | fm->max_code;
	if (fm->fnuz)
		return 0x80;
	if (fm->has_inf)
		return sign | 0x7C;
	return sign | 0x7F;
}

START_TEST(small_all_codes_decode_and_round_trip)
{
	const struct small_fmt *fm = &fmts[_i];
	unsigned n = 1u << fm->bits, sb = sign_bit(fm);
	for (unsigned c = 0; c < n; c++) {
		float f = fm->dec((uint8_t)c);
		unsigned mag = c & (sb - 1);
		bool nan = (fm->fnuz && c == 0x80) || (!fm->fnuz && fm->has_nan && !fm->has_inf && mag == 0x7F) ||
			   (fm->has_inf && mag > 0x7C);
		if (nan) {
			CHECK(isnan(f), "%s 0x%02x should be NaN", fm->name, c);
			unsigned back = fm->enc(f, true);
			CHECK(isnan(fm->dec((uint8_t)back)), "%s NaN 0x%02x -> 0x%02x", fm->name, c, back);
			continue;
		}
		if (fm->has_inf && mag == 0x7C) {
			CHECK(isinf(f) && (signbit(f) != 0) == ((c & sb) != 0), "isinf(f) && (signbit(f) != 0) == ((c & sb) != 0)");
			CHECK_EQ(fm->enc(f, false), c);
			CHECK_EQ(fm->enc(f, true), (c & sb) | fm->max_code);
			continue;
		}
		double want = (c & sb) ? -small_value(fm, mag) : small_value(fm, mag);
		CHECK((double)f == want, "%s 0x%02x decodes to %g, want %g", fm->name, c, (double)f, want);
		CHECK_EQ(signbit(f) != 0, (c & sb) != 0);
		for (int sat = 0; sat <= 1; sat++)
			CHECK(fm->enc(f, sat) == c, "%s 0x%02x -> %g -> 0x%02x", fm->name, c, (double)f,
				      fm->enc(f, sat));
		if (mag > 0 && mag < fm->max_code)
			CHECK(fabsf(fm->dec((uint8_t)(c + 1))) > fabsf(f), "fabsf(fm->dec((uint8_t)(c + 1))) > fabsf(f)"); /* codes are ordered */
	}
}
END_TEST

START_TEST(small_midpoints_overflow_and_specials)
{
	const struct small_fmt *fm = &fmts[_i];
	unsigned sb = sign_bit(fm);
	for (unsigned sign = 0; sign <= sb; sign += sb) {
		float sg = sign ? -1.0f : 1.0f;
		for (unsigned c = 0; c <= fm->max_code; c++) {
			double a = small_value(fm, c);
			/* the code above max_code is where the next value would be: same ulp */
			double b = c < fm->max_code ? small_value(fm, c + 1) : a + (a - small_value(fm, c - 1));
			float mid = sg * (float)((a + b) / 2);
			float toward_b = sign ? next_down(mid) : next_up(mid);
			float toward_a = sign ? next_up(mid) : next_down(mid);
			for (int sat = 0; sat <= 1; sat++) {
				unsigned lo = sign | c;
				unsigned hi = c < fm->max_code ? (sign | (c + 1)) : overflow_code(fm, sign, sat);
				/* fnuz formats have no -0: what rounds to zero is +0 */
				if (fm->fnuz && c == 0)
					lo = 0;
				unsigned even = (c & 1) ? hi : lo;
				CHECK(fm->enc(mid, sat) == even, "%s midpoint %g sat %d: 0x%02x, want 0x%02x",
					      fm->name, (double)mid, sat, fm->enc(mid, sat), even);
				CHECK(fm->enc(toward_b, sat) == hi, "%s above %g sat %d: 0x%02x want 0x%02x",
					      fm->name, (double)mid, sat, fm->enc(toward_b, sat), hi);
				CHECK(fm->enc(toward_a, sat) == lo, "%s below %g sat %d: 0x%02x want 0x%02x",
					      fm->name, (double)mid, sat, fm->enc(toward_a, sat), lo);
			}
		}
		/* far overflow and infinities */
		for (int sat = 0; sat <= 1; sat++) {
			CHECK_EQ(fm->enc(sg * 1e30f, sat), overflow_code(fm, sign, sat));
			CHECK_EQ(fm->enc(sg * 3.4e38f, sat), overflow_code(fm, sign, sat));
			CHECK_EQ(fm->enc(sg * INFINITY, sat), overflow_code(fm, sign, sat));
			/* tiny values and signed zeros */
			unsigned zero = fm->fnuz ? 0 : sign;
			CHECK_EQ(fm->enc(sg * 1e-30f, sat), zero);
			CHECK_EQ(fm->enc(sg * wh_bits_f32(1), sat), zero);
			CHECK_EQ(fm->enc(sg * 0.0f, sat), zero);
		}
	}
}
END_TEST

/* The values ONNX's own Cast tests (opset 25) expect, as seen in the backend test data. */
START_TEST(float8_onnx_reference_values)
{
	const uint32_t in_bits[] = {0x3EF535B8, 0x3EF5EEB0, 0x3EFFD6B2, 0x3F51B0E5, 0x3EF0CCCC,
				    0x3F391039, 0x49742400, 0x33D6BF95, 0x7FC00000, 0x7F800000,
				    0x7F800000, 0xFF800000, 0xB3D6BF95, 0x33D6BF95, 0xC9742400};
	float in[15];
	for (size_t i = 0; i < 15; i++)
		in[i] = wh_bits_f32(in_bits[i]);
	const uint8_t e4m3fn_sat[] = {0x2F, 0x2F, 0x30, 0x35, 0x2F, 0x34, 0x7E, 0x00, 0x7F, 0x7E, 0x7E, 0xFE, 0x80, 0x00, 0xFE};
	const uint8_t e4m3fnuz_sat[] = {0x37, 0x37, 0x38, 0x3D, 0x37, 0x3C, 0x7F, 0x00, 0x80, 0x7F, 0x7F, 0xFF, 0x00, 0x00, 0xFF};
	const uint8_t e4m3fnuz_nosat[] = {0x37, 0x37, 0x38, 0x3D, 0x37, 0x3C, 0x80, 0x00, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x80};
	const uint8_t e5m2_sat[] = {0x38, 0x38, 0x38, 0x3B, 0x38, 0x3A, 0x7B, 0x00, 0x7E, 0x7B, 0x7B, 0xFB, 0x80, 0x00, 0xFB};
	const uint8_t e5m2_nosat[] = {0x38, 0x38, 0x38, 0x3B, 0x38, 0x3A, 0x7C, 0x00, 0x7E, 0x7C, 0x7C, 0xFC, 0x80, 0x00, 0xFC};
	for (size_t i = 0; i < 15; i++) {
		CHECK_EQ(wh_f32_to_e4m3fn(in[i], true), e4m3fn_sat[i]);
		CHECK_EQ(wh_f32_to_e4m3fnuz(in[i], true), e4m3fnuz_sat[i]);
		CHECK_EQ(wh_f32_to_e4m3fnuz(in[i], false), e4m3fnuz_nosat[i]);
		CHECK_EQ(wh_f32_to_e5m2(in[i], true), e5m2_sat[i]);
		CHECK_EQ(wh_f32_to_e5m2(in[i], false), e5m2_nosat[i]);
	}
	/* e4m3fn: 464 is the midpoint above 448 (0x7E, even): stays; beyond it is NaN unsaturated */
	CHECK_EQ(wh_f32_to_e4m3fn(464.0f, false), 0x7E);
	CHECK_EQ(wh_f32_to_e4m3fn(next_up(464.0f), false), 0x7F);
	CHECK_EQ(wh_f32_to_e4m3fn(next_up(464.0f), true), 0x7E);
	CHECK_EQ(wh_f32_to_e4m3fn(-INFINITY, false), 0xFF);
	CHECK_EQ(wh_f32_to_e5m2(61440.0f, false), 0x7C);
	CHECK_EQ(wh_f32_to_e5m2(next_down(61440.0f), false), 0x7B);
	CHECK_EQ(wh_f32_to_e4m3fnuz(248.0f, true), 0x7F);
	CHECK_EQ(wh_f32_to_e4m3fnuz(248.0f, false), 0x80);
	CHECK(wh_e4m3fn_to_f32(0x7E) == 448.0f, "wh_e4m3fn_to_f32(0x7E) == 448.0f");
	CHECK(wh_e4m3fnuz_to_f32(0x7F) == 240.0f, "wh_e4m3fnuz_to_f32(0x7F) == 240.0f");
	CHECK(wh_e5m2_to_f32(0x7B) == 57344.0f, "wh_e5m2_to_f32(0x7B) == 57344.0f");
	CHECK(wh_e5m2fnuz_to_f32(0x7F) == 57344.0f, "wh_e5m2fnuz_to_f32(0x7F) == 57344.0f");
	CHECK(wh_e4m3fn_to_f32(0x01) == ldexpf(1, -9), "wh_e4m3fn_to_f32(0x01) == ldexpf(1, -9)");
	CHECK(wh_e4m3fnuz_to_f32(0x01) == ldexpf(1, -10), "wh_e4m3fnuz_to_f32(0x01) == ldexpf(1, -10)");
	CHECK(wh_e5m2_to_f32(0x01) == ldexpf(1, -16), "wh_e5m2_to_f32(0x01) == ldexpf(1, -16)");
	CHECK(wh_e5m2fnuz_to_f32(0x01) == ldexpf(1, -17), "wh_e5m2fnuz_to_f32(0x01) == ldexpf(1, -17)");
}
END_TEST

START_TEST(e2m1_values)
{
	const float vals[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
	for (unsigned c = 0; c < 16; c++) {
		float want = (c & 8) ? -vals[c & 7] : vals[c & 7];
		CHECK(same_bits(wh_e2m1_to_f32((uint8_t)c), want), "same_bits(wh_e2m1_to_f32((uint8_t)c), want)");
	}
	/* ONNX's test_cast_FLOAT_to_FLOAT4E2M1: NaN becomes 0x8, inf saturates to +-6 */
	const float in[] = {0.48f, 0.25f, 1.05f, -3.5f, -8, 9, 1e6f, 1e-7f, NAN, INFINITY, -INFINITY, -4, 0.01f, -0.0f};
	const uint8_t want[] = {1, 0, 2, 0xE, 0xF, 7, 7, 0, 8, 7, 0xF, 0xE, 0, 8};
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
		CHECK(wh_f32_to_e2m1(in[i], true) == want[i], "e2m1(%g) = %u", (double)in[i],
			      wh_f32_to_e2m1(in[i], true));
	CHECK_EQ(wh_f32_to_e2m1(0.75f, true), 2);  /* tie: 1.0 is even */
	CHECK_EQ(wh_f32_to_e2m1(1.25f, true), 2);  /* tie: 1.0 is even */
	CHECK_EQ(wh_f32_to_e2m1(2.5f, true), 4);   /* tie: 2.0 is even */
	CHECK_EQ(wh_f32_to_e2m1(5.0f, true), 6);   /* tie: 4.0 is even */
	CHECK_EQ(wh_f32_to_e2m1(next_up(5.0f), true), 7);
}
END_TEST

START_TEST(e8m0_values)
{
	for (unsigned v = 0; v < 255; v++) {
		float f = wh_e8m0_to_f32((uint8_t)v);
		CHECK((double)f == ldexp(1, (int)v - 127), "(double)f == ldexp(1, (int)v - 127)");
		/* powers of two are exact in every mode, except 2^-127: ONNX's reference sees its
		 * float32 subnormal mantissa as a fraction and rounds it up to 2^-126 */
		for (int mode = v == 0 ? 1 : 0; mode < 3; mode++)
			CHECK_EQ(wh_f32_to_e8m0_mode(f, true, (enum wh_e8m0_round)mode), v);
	}
	CHECK(isnan(wh_e8m0_to_f32(0xFF)), "isnan(wh_e8m0_to_f32(0xFF))");
	/* ONNX's test_cast_e8m0_FLOAT_to_FLOAT8E8M0 (round up, saturate) */
	const float in[] = {0, 0.124f, 0.25f, 0.5f, 1.1f, 2, 4, 8};
	const uint8_t want[] = {0x00, 0x7C, 0x7D, 0x7E, 0x80, 0x80, 0x81, 0x82};
	for (size_t i = 0; i < 8; i++)
		CHECK_EQ(wh_f32_to_e8m0(in[i], true, true), want[i]);
	CHECK_EQ(wh_f32_to_e8m0_mode(1.5f, true, WH_E8M0_ROUND_NEAREST), 0x80);
	CHECK_EQ(wh_f32_to_e8m0_mode(next_down(1.5f), true, WH_E8M0_ROUND_NEAREST), 0x7F);
	CHECK_EQ(wh_f32_to_e8m0_mode(1.9f, true, WH_E8M0_ROUND_DOWN), 0x7F);
	CHECK_EQ(wh_f32_to_e8m0_mode(1.1f, true, WH_E8M0_ROUND_UP), 0x80);
	/* saturation at 2^127 (0xFE) */
	CHECK_EQ(wh_f32_to_e8m0(3e38f, true, true), 0xFE);
	CHECK_EQ(wh_f32_to_e8m0(3e38f, false, true), 0xFF);
	CHECK_EQ(wh_f32_to_e8m0(NAN, true, true), 0xFF);
	CHECK_EQ(wh_f32_to_e8m0(INFINITY, true, true), 0xFF);
}
END_TEST

/* ---- SIMD and hardware ---- */

/* Inputs that stress conversions: every 251st float32 bit pattern (all exponents, NaNs,
 * subnormals), every fp16 midpoint and its neighbours, and random patterns. */
static float *stress_inputs(size_t *n_out)
{
	size_t n = (((size_t)1 << 32) / 251 + 1) + 0x7C00 * 2 * 3 + 2000000;
	float *v = malloc(n * sizeof *v);
	size_t k = 0;
	ck_assert_ptr_nonnull(v);
	for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 251)
		v[k++] = wh_bits_f32((uint32_t)u);
	for (uint32_t h = 0; h < 0x7C00; h++) {
		for (uint32_t sign = 0; sign <= 0x8000; sign += 0x8000) {
			float a = wh_f16_to_f32((uint16_t)(sign | h)), b = wh_f16_to_f32((uint16_t)(sign | (h + 1)));
			float mid = (a + b) / 2;
			v[k++] = mid;
			v[k++] = next_up(mid);
			v[k++] = next_down(mid);
		}
	}
	uint64_t s = 42;
	for (int i = 0; i < 2000000; i++)
		v[k++] = wh_bits_f32((uint32_t)rng_next(&s));
	*n_out = k;
	return v;
}

static void check_f16_conv(void (*fn)(const float *, uint16_t *, size_t), const char *name, const float *in,
			   size_t n)
{
	uint16_t *out = malloc(n * sizeof *out);
	ck_assert_ptr_nonnull(out);
	fn(in, out, n);
	for (size_t i = 0; i < n; i++)
		CHECK(out[i] == wh_f32_to_f16(in[i]), "%s(0x%08x) = 0x%04x, scalar 0x%04x", name,
			      wh_f32_bits(in[i]), out[i], wh_f32_to_f16(in[i]));
	/* awkward lengths: tails must not write past n */
	for (size_t len = 0; len < 40; len++) {
		uint16_t buf[48];
		memset(buf, 0xAB, sizeof buf);
		fn(in + 7, buf, len);
		for (size_t i = 0; i < len; i++)
			CHECK_EQ(buf[i], wh_f32_to_f16(in[7 + i]));
		for (size_t i = len; i < 48; i++)
			CHECK_EQ(buf[i], 0xABAB);
	}
	free(out);
}

static void check_bf16_conv(void (*fn)(const float *, uint16_t *, size_t), const char *name, const float *in,
			    size_t n)
{
	uint16_t *out = malloc(n * sizeof *out);
	ck_assert_ptr_nonnull(out);
	fn(in, out, n);
	for (size_t i = 0; i < n; i++)
		CHECK(out[i] == wh_f32_to_bf16(in[i]), "%s(0x%08x) = 0x%04x, scalar 0x%04x", name,
			      wh_f32_bits(in[i]), out[i], wh_f32_to_bf16(in[i]));
	for (size_t len = 0; len < 40; len++) {
		uint16_t buf[48];
		memset(buf, 0xAB, sizeof buf);
		fn(in + 3, buf, len);
		for (size_t i = 0; i < len; i++)
			CHECK_EQ(buf[i], wh_f32_to_bf16(in[3 + i]));
		for (size_t i = len; i < 48; i++)
			CHECK_EQ(buf[i], 0xABAB);
	}
	free(out);
}

static void check_f16_decode(void (*fn)(const uint16_t *, float *, size_t), const char *name)
{
	static uint16_t all[65536];
	static float out[65536];
	for (uint32_t i = 0; i < 65536; i++)
		all[i] = (uint16_t)i;
	fn(all, out, 65536);
	for (uint32_t i = 0; i < 65536; i++)
		CHECK(same_bits(out[i], wh_f16_to_f32((uint16_t)i)), "%s(0x%04x) = 0x%08x, scalar 0x%08x", name,
			      i, wh_f32_bits(out[i]), wh_f32_bits(wh_f16_to_f32((uint16_t)i)));
	for (size_t len = 0; len < 40; len++) {
		float buf[48];
		for (size_t i = 0; i < 48; i++)
			buf[i] = -7.0f;
		fn(all + 0x3BF0, buf, len);
		for (size_t i = 0; i < len; i++)
			CHECK(same_bits(buf[i], wh_f16_to_f32((uint16_t)(0x3BF0 + i))), "same_bits(buf[i], wh_f16_to_f32((uint16_t)(0x3BF0 + i)))");
		for (size_t i = len; i < 48; i++)
			CHECK(buf[i] == -7.0f, "buf[i] == -7.0f");
	}
}

static void check_round(void (*fn)(const float *, float *, size_t), float (*ref)(float), const char *name,
			const float *in, size_t n)
{
	float *out = malloc(n * sizeof *out);
	ck_assert_ptr_nonnull(out);
	fn(in, out, n);
	for (size_t i = 0; i < n; i++)
		CHECK(same_bits(out[i], ref(in[i])), "%s(0x%08x) = 0x%08x, scalar 0x%08x", name,
			      wh_f32_bits(in[i]), wh_f32_bits(out[i]), wh_f32_bits(ref(in[i])));
	free(out);
}

static float ref_round_f16(float f)
{
	return wh_round_f16(f);
}

static float ref_round_bf16(float f)
{
	return wh_round_bf16(f);
}

START_TEST(avx2_matches_scalar_and_f16c)
{
	const struct wh_cpu_features *cpu = wh_cpu();
	if (!(cpu->detected >= WH_ISA_AVX2 && cpu->f16c))
		return; /* no AVX2/F16C on this machine: nothing to compare */
	size_t n;
	float *in = stress_inputs(&n);
	check_f16_conv(wh_f32_to_f16_n_avx2, "f16 avx2 (F16C)", in, n);
	check_f16_decode(wh_f16_to_f32_n_avx2, "f16->f32 avx2 (F16C)");
	check_bf16_conv(wh_f32_to_bf16_n_avx2, "bf16 avx2", in, n);
	check_round(wh_round_f16_n_avx2, ref_round_f16, "round f16 avx2", in, n);
	check_round(wh_round_bf16_n_avx2, ref_round_bf16, "round bf16 avx2", in, n);
	free(in);
}
END_TEST

START_TEST(avx512_matches_scalar)
{
	const struct wh_cpu_features *cpu = wh_cpu();
	if (cpu->detected < WH_ISA_AVX512)
		return;
	size_t n;
	float *in = stress_inputs(&n);
	check_f16_conv(wh_f32_to_f16_n_avx512, "f16 avx512", in, n);
	check_f16_decode(wh_f16_to_f32_n_avx512, "f16->f32 avx512");
	check_bf16_conv(wh_f32_to_bf16_n_avx512, "bf16 avx512", in, n);
	check_round(wh_round_f16_n_avx512, ref_round_f16, "round f16 avx512", in, n);
	check_round(wh_round_bf16_n_avx512, ref_round_bf16, "round bf16 avx512", in, n);
	free(in);
}
END_TEST

/* VCVTNEPS2BF16 rounds to nearest even like wh_f32_to_bf16 but always flushes float32
 * subnormal inputs to zero: equal everywhere else. */
START_TEST(avx512bf16_hardware_matches_scalar)
{
	const struct wh_cpu_features *cpu = wh_cpu();
	if (!(cpu->detected >= WH_ISA_AVX512 && cpu->avx512bf16))
		return;
	size_t n;
	float *in = stress_inputs(&n);
	uint16_t *out = malloc(n * sizeof *out);
	ck_assert_ptr_nonnull(out);
	wh_f32_to_bf16_n_avx512bf16(in, out, n);
	size_t subnormals = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t b = wh_f32_bits(in[i]);
		if ((b & 0x7F800000) == 0 && (b & 0x7FFFFF)) {
			CHECK_EQ(out[i], (b >> 16) & 0x8000);
			subnormals++;
			continue;
		}
		if (isnan(in[i])) {
			CHECK(isnan(wh_bf16_to_f32(out[i])), "isnan(wh_bf16_to_f32(out[i]))");
			continue;
		}
		CHECK(out[i] == wh_f32_to_bf16(in[i]), "vcvtneps2bf16(0x%08x) = 0x%04x, scalar 0x%04x", b,
			      out[i], wh_f32_to_bf16(in[i]));
	}
	ck_assert_uint_gt(subnormals, 1000);
	free(out);
	free(in);
}
END_TEST

/* The dispatchers under every ISA cap give the scalar results. */
START_TEST(dispatch_under_isa_caps)
{
	float in[203];
	uint64_t s = 7;
	for (size_t i = 0; i < 203; i++)
		in[i] = wh_bits_f32((uint32_t)rng_next(&s) & 0x8FFFFFFF); /* mostly moderate magnitudes */
	in[5] = 65520.0f;
	in[6] = NAN;
	in[7] = wh_bits_f32(0x00018000);
	for (int cap = WH_ISA_SCALAR; cap <= WH_ISA_AVX512; cap++) {
		struct wh_cpu_features cpu = wh_cpu_capped((enum wh_isa)cap);
		uint16_t h[203], b[203];
		float back[203], rf[203], rb[203];
		wh_f32_to_f16_n(in, h, 203, &cpu);
		wh_f32_to_bf16_n(in, b, 203, &cpu);
		wh_f16_to_f32_n(h, back, 203, &cpu);
		wh_round_f16_n(in, rf, 203, &cpu);
		wh_round_bf16_n(in, rb, 203, &cpu);
		for (size_t i = 0; i < 203; i++) {
			CHECK_EQ(h[i], wh_f32_to_f16(in[i]));
			CHECK_EQ(b[i], wh_f32_to_bf16(in[i]));
			CHECK(same_bits(back[i], wh_f16_to_f32(h[i])), "same_bits(back[i], wh_f16_to_f32(h[i]))");
			CHECK(same_bits(rf[i], wh_round_f16(in[i])), "same_bits(rf[i], wh_round_f16(in[i]))");
			CHECK(same_bits(rb[i], wh_round_bf16(in[i])), "same_bits(rb[i], wh_round_bf16(in[i]))");
		}
		/* in place */
		float inplace[203];
		memcpy(inplace, in, sizeof in);
		wh_round_f16_n(inplace, inplace, 203, &cpu);
		CHECK_EQ(memcmp(inplace, rf, sizeof rf), 0);
	}
	CHECK_EQ(wh_f32_to_f16(65520.0f), 0x7C00);
}
END_TEST

static Suite *numfmt_suite(void)
{
	Suite *s = suite_create("numfmt");
	TCase *tc = tcase_create("scalar");
	tcase_add_test(tc, f16_all_patterns_round_trip);
	tcase_add_test(tc, f16_every_midpoint_ties_to_even);
	tcase_add_test(tc, f16_overflow_and_subnormal_boundaries);
	tcase_add_test(tc, bf16_all_patterns_round_trip_and_midpoints);
	tcase_add_test(tc, tf32_rounding);
	tcase_add_loop_test(tc, small_all_codes_decode_and_round_trip, 0, (int)(sizeof fmts / sizeof fmts[0]));
	tcase_add_loop_test(tc, small_midpoints_overflow_and_specials, 0, (int)(sizeof fmts / sizeof fmts[0]));
	tcase_add_test(tc, float8_onnx_reference_values);
	tcase_add_test(tc, e2m1_values);
	tcase_add_test(tc, e8m0_values);
	suite_add_tcase(s, tc);
	TCase *simd = tcase_create("simd");
	tcase_set_timeout(simd, 300);
	tcase_add_test(simd, avx2_matches_scalar_and_f16c);
	tcase_add_test(simd, avx512_matches_scalar);
	tcase_add_test(simd, avx512bf16_hardware_matches_scalar);
	tcase_add_test(simd, dispatch_under_isa_caps);
	suite_add_tcase(s, simd);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(numfmt_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
