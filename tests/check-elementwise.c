/* Elementwise and activation kernels (executor/ops/elementwise*.c): the AVX2 and AVX-512
 * row kernels against the scalar reference, bit for bit, on every length 1..67 and a large
 * one, in each broadcast mode; whole kernels with broadcasting under each ISA cap and with
 * a thread pool; the accuracy of the shared exp/sigmoid/tanh; and op semantics that a
 * broken implementation gets wrong (Mod signs, Round half to even, integer Pow and Div,
 * Clip forms, legacy broadcasting, Where on strings, NaN in Max/Min). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"
#include "executor/ops/elementwise-internal.h"

/* Splitmix64: a fixed-seed generator so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float rng_float(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

/* Random values in [lo, hi) with special values mixed in: NaN, infinities, signed zeros,
 * subnormals, ties for rounding, values at the clip bounds and the tanh threshold. */
static void fill(float *v, size_t n, uint64_t seed, float lo, float hi)
{
	static const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, -0.5f, 2.5f, -2.5f, 0.4f, -0.4f,
					1e-40f, -1e-40f, 1e-8f, 88.7f, -88.7f, 89.0f, -104.0f, -200.0f, 200.0f,
					3.0f, -3.0f, 1e30f, -1e30f};
	for (size_t i = 0; i < n; i++) {
		uint64_t r = rng_next(&seed);
		if (r % 7 == 0) {
			size_t k = (size_t)(r >> 8) % (sizeof special / sizeof special[0] + 3);
			if (k < sizeof special / sizeof special[0])
				v[i] = special[k];
			else
				v[i] = k == sizeof special / sizeof special[0] ? NAN : (k % 2 ? INFINITY : -INFINITY);
		} else {
			v[i] = rng_float(&seed, lo, hi);
		}
	}
}

static bool same_float(float a, float b)
{
	if (a != a && b != b)
		return true;
	return wh_f32_bits(a) == wh_f32_bits(b);
}

/* per-element checks only call into Check on failure: a passing ck_assert costs a
 * message to the parent process each time */
#define CHECK_SAME(a, b, ...)                   \
	do {                                     \
		if (!same_float((a), (b)))       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

static const enum wh_isa simd_isas[] = {WH_ISA_AVX2, WH_ISA_AVX512};

static bool isa_usable(enum wh_isa isa)
{
	return wh_cpu()->detected >= isa;
}

typedef void (*bin_fn)(enum wh_ew_bin, const float *, size_t, const float *, size_t, float *, size_t);
typedef void (*un_fn)(enum wh_ew_un, const float *, float *, size_t, float, float);

static bin_fn bin_variant(enum wh_isa isa)
{
	return isa == WH_ISA_AVX512 ? wh_ew_bin_f32_avx512 : wh_ew_bin_f32_avx2;
}

static un_fn un_variant(enum wh_isa isa)
{
	return isa == WH_ISA_AVX512 ? wh_ew_un_f32_avx512 : wh_ew_un_f32_avx2;
}

#define BIG_N 100003

static size_t test_len(int k)
{
	return k <= 67 ? (size_t)k : BIG_N;
}

START_TEST(test_row_bin_simd)
{
	float *a = malloc(BIG_N * sizeof *a), *b = malloc(BIG_N * sizeof *b);
	float *ref = malloc((BIG_N + 1) * sizeof *ref), *got = malloc((BIG_N + 1) * sizeof *got);
	ck_assert(a && b && ref && got);
	fill(a, BIG_N, 1, -5, 5);
	fill(b, BIG_N, 2, -5, 5);
	int checked = 0;
	for (size_t vi = 0; vi < 2; vi++) {
		enum wh_isa isa = simd_isas[vi];
		if (!isa_usable(isa))
			continue;
		for (int op = 0; op < WH_EW_BIN_COUNT_; op++)
			for (int mode = 0; mode < 4; mode++)
				for (int k = 1; k <= 68; k++) {
					size_t n = test_len(k), sa = mode & 1 ? 0 : 1, sb = mode & 2 ? 0 : 1;
					/* a sentinel after the row catches stores past the end */
					ref[n] = got[n] = 12345.0f;
					wh_ew_bin_f32_scalar((enum wh_ew_bin)op, a, sa, b, sb, ref, n);
					bin_variant(isa)((enum wh_ew_bin)op, a, sa, b, sb, got, n);
					ck_assert_float_eq(got[n], 12345.0f);
					for (size_t i = 0; i < n; i++)
						CHECK_SAME(ref[i], got[i],
							      "%s op %d mode %d n %zu [%zu]: %a(%a,%a) scalar %a simd %a",
							      wh_isa_name(isa), op, mode, n, i, ref[i], a[i * sa], b[i * sb],
							      ref[i], got[i]);
					checked++;
				}
	}
	/* in place (out aliases a), as Sum/Mean accumulate */
	if (isa_usable(WH_ISA_AVX2)) {
		memcpy(ref, a, 67 * sizeof *a);
		memcpy(got, a, 67 * sizeof *a);
		wh_ew_bin_f32_scalar(WH_EW_ADD, ref, 1, b, 1, ref, 67);
		wh_ew_bin_f32_avx2(WH_EW_ADD, got, 1, b, 1, got, 67);
		for (size_t i = 0; i < 67; i++)
			ck_assert(same_float(ref[i], got[i]));
	}
	if (!isa_usable(WH_ISA_AVX2))
		fprintf(stderr, "check-elementwise: no AVX2 on this machine, SIMD rows not compared\n");
	(void)checked;
	free(a);
	free(b);
	free(ref);
	free(got);
}
END_TEST

/* A repeated vector along a stretch (wh_ew_bin_f32_periodic: broadcast bias Adds, a MatMul's
 * fused bias): each element is v[(ph + i) % p] OP x[i] (or x OP v), exactly, at every ISA, for
 * periods within and past the repeated copy, any starting phase, either operand order, in
 * place. */
START_TEST(test_bin_periodic)
{
	static const size_t periods[] = {1, 3, 8, 24, 49, 100, 128, 129, 300};
	static const size_t lens[] = {1, 5, 47, 1000, 5003};
	float *x = malloc(6000 * sizeof *x), *v = malloc(300 * sizeof *v);
	float *got = malloc(6001 * sizeof *got), *ref = malloc(6000 * sizeof *ref);
	ck_assert(x && v && got && ref);
	fill(x, 6000, 3, -5, 5);
	fill(v, 300, 4, -5, 5);
	enum wh_isa isas[3] = {WH_ISA_SCALAR, WH_ISA_AVX2, WH_ISA_AVX512};
	for (int ii = 0; ii < 3; ii++) {
		if (isas[ii] != WH_ISA_SCALAR && !isa_usable(isas[ii]))
			continue;
		for (size_t pi = 0; pi < sizeof periods / sizeof periods[0]; pi++)
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
				for (int vf = 0; vf < 2; vf++)
					for (int op = WH_EW_ADD; op <= WH_EW_DIV; op++) {
						size_t p = periods[pi], n = lens[li], ph = (7 * pi + li) % p;
						for (size_t i = 0; i < n; i++) {
							float a = v[(ph + i) % p], b = x[i];
							wh_ew_bin_f32_scalar((enum wh_ew_bin)op, vf ? &a : &b, 0, vf ? &b : &a, 0,
									     &ref[i], 1);
						}
						got[n] = 12345.0f;
						memcpy(got, x, n * sizeof *got);
						wh_ew_bin_f32_periodic(isas[ii], (enum wh_ew_bin)op, got, v, p, vf, got, n, ph);
						ck_assert_float_eq(got[n], 12345.0f);
						for (size_t i = 0; i < n; i++)
							CHECK_SAME(ref[i], got[i], "isa %d op %d p %zu n %zu ph %zu v_first %d [%zu]",
								   ii, op, p, n, ph, vf, i);
					}
	}
	free(x);
	free(v);
	free(got);
	free(ref);
}
END_TEST

START_TEST(test_row_un_simd)
{
	static const struct {
		float lo, hi, p1, p2;
	} cfg[WH_EW_UN_COUNT_] = {
		[WH_EW_RELU] = {-5, 5, 0, 0},
		[WH_EW_LEAKY_RELU] = {-5, 5, 0.1f, 0},
		[WH_EW_CLIP] = {-5, 5, -1.0f, 2.5f},
		[WH_EW_HARD_SIGMOID] = {-8, 8, 0.2f, 0.5f},
		[WH_EW_HARD_SWISH] = {-8, 8, 1.0f / 6.0f, 0.5f},
		[WH_EW_SIGMOID] = {-30, 30, 0, 0},
		[WH_EW_TANH] = {-3, 3, 0, 0},
		[WH_EW_EXP] = {-110, 95, 0, 0},
		[WH_EW_ABS] = {-5, 5, 0, 0},
		[WH_EW_NEG] = {-5, 5, 0, 0},
		[WH_EW_SQRT] = {-1, 100, 0, 0},
		[WH_EW_RECIPROCAL] = {-5, 5, 0, 0},
		[WH_EW_FLOOR] = {-5, 5, 0, 0},
		[WH_EW_CEIL] = {-5, 5, 0, 0},
		[WH_EW_ROUND] = {-5, 5, 0, 0},
		[WH_EW_ERF] = {-5, 5, 0, 0},
		[WH_EW_GELU] = {-14, 14, 0, 0},
		[WH_EW_GELU_TANH] = {-14, 14, 0, 0},
	};
	float *x = malloc(BIG_N * sizeof *x);
	float *ref = malloc((BIG_N + 1) * sizeof *ref), *got = malloc((BIG_N + 1) * sizeof *got);
	ck_assert(x && ref && got);
	for (size_t vi = 0; vi < 2; vi++) {
		enum wh_isa isa = simd_isas[vi];
		if (!isa_usable(isa))
			continue;
		for (int op = 0; op < WH_EW_UN_COUNT_; op++) {
			fill(x, BIG_N, 10 + (uint64_t)op, cfg[op].lo, cfg[op].hi);
			for (int k = 1; k <= 68; k++) {
				size_t n = test_len(k);
				ref[n] = got[n] = 12345.0f;
				wh_ew_un_f32_scalar((enum wh_ew_un)op, x, ref, n, cfg[op].p1, cfg[op].p2);
				un_variant(isa)((enum wh_ew_un)op, x, got, n, cfg[op].p1, cfg[op].p2);
				ck_assert_float_eq(got[n], 12345.0f);
				for (size_t i = 0; i < n; i++)
					CHECK_SAME(ref[i], got[i], "%s op %d n %zu [%zu]: f(%a) scalar %a simd %a",
						      wh_isa_name(isa), op, n, i, x[i], ref[i], got[i]);
			}
		}
	}
	free(x);
	free(ref);
	free(got);
}
END_TEST

/* Erf and Gelu compute only the branch every lane of a vector takes (the polynomial for
 * small arguments, the erfc tail for large ones) and blend both otherwise: each SIMD path
 * must equal the scalar reference bit for bit on blocks of 64 (a vector of either width)
 * that are all small, all large, or mixed, with the branch bounds, zeros and NaN. */
START_TEST(test_erf_gelu_uniform_blocks)
{
	enum { BLK = 64, NBLK = 8 };
	static const float edges[] = {-0.70710677f, -0.7071068f, 1.4142135f, 1.4142137f, 1.0f, -1.0f,
				      0.99999994f, -0.99999994f, 0.0f, -0.0f, 4.0f, -4.0f};
	float x[BLK * NBLK], ref[BLK * NBLK], got[BLK * NBLK];
	uint64_t s = 91;
	for (size_t b = 0; b < NBLK; b++)
		for (size_t i = 0; i < BLK; i++) {
			float *v = &x[b * BLK + i];
			switch (b) {
			case 0: *v = rng_float(&s, -0.7f, 0.7f); break;   /* every lane small (erf, gelu) */
			case 1: *v = rng_float(&s, 1.5f, 9.0f); break;    /* every lane large */
			case 2: *v = rng_float(&s, -9.0f, -1.5f); break;  /* every lane large, negative */
			case 3: *v = rng_float(&s, -3.0f, 3.0f); break;   /* mixed */
			case 4: *v = edges[i % (sizeof edges / sizeof *edges)]; break;
			case 5: *v = i == 7 ? NAN : rng_float(&s, -0.6f, 0.6f); break; /* small but a NaN */
			case 6: *v = i == 9 ? 0.1f : rng_float(&s, 2.0f, 5.0f); break; /* large but one */
			default: *v = rng_float(&s, -1e-3f, 1e-3f); break;
			}
		}
	static const enum wh_ew_un ops[] = {WH_EW_ERF, WH_EW_GELU};
	for (size_t vi = 0; vi < 2; vi++) {
		enum wh_isa isa = simd_isas[vi];
		if (!isa_usable(isa))
			continue;
		for (size_t o = 0; o < 2; o++) {
			wh_ew_un_f32_scalar(ops[o], x, ref, BLK * NBLK, 0, 0);
			un_variant(isa)(ops[o], x, got, BLK * NBLK, 0, 0);
			for (size_t i = 0; i < BLK * NBLK; i++)
				CHECK_SAME(ref[i], got[i], "%s op %d [%zu]: f(%a) scalar %a simd %a", wh_isa_name(isa),
					   (int)ops[o], i, x[i], ref[i], got[i]);
		}
	}
}
END_TEST

/* ulp distance of two finite floats of the same sign region */
static int64_t ulps(float a, double exact)
{
	float e = (float)exact;
	int64_t ia = (int32_t)wh_f32_bits(a), ie = (int32_t)wh_f32_bits(e);
	if (ia < 0)
		ia = INT32_MIN - ia;
	if (ie < 0)
		ie = INT32_MIN - ie;
	return ia > ie ? ia - ie : ie - ia;
}

START_TEST(test_reference_math_accuracy)
{
	uint64_t s = 77;
	int64_t worst_exp = 0, worst_sig = 0, worst_tanh = 0;
	for (int i = 0; i < 200000; i++) {
		float x = rng_float(&s, -87.0f, 88.0f);
		int64_t u = ulps(wh_ew_expf(x), exp((double)x));
		worst_exp = u > worst_exp ? u : worst_exp;
		float y = rng_float(&s, -16.0f, 16.0f);
		u = ulps(wh_ew_sigmoidf(y), 1.0 / (1.0 + exp(-(double)y)));
		worst_sig = u > worst_sig ? u : worst_sig;
		float z = rng_float(&s, -5.0f, 5.0f);
		if (i % 4 == 0)
			z *= 1e-3f; /* the polynomial range and tiny arguments */
		u = ulps(wh_ew_tanhf(z), tanh((double)z));
		worst_tanh = u > worst_tanh ? u : worst_tanh;
	}
	ck_assert_msg(worst_exp <= 2, "exp off by %lld ulp", (long long)worst_exp);
	ck_assert_msg(worst_sig <= 3, "sigmoid off by %lld ulp", (long long)worst_sig);
	ck_assert_msg(worst_tanh <= 3, "tanh off by %lld ulp", (long long)worst_tanh);
	/* ends of the range */
	ck_assert_float_eq(wh_ew_expf(0.0f), 1.0f);
	ck_assert(isinf(wh_ew_expf(89.0f)));
	ck_assert(isinf(wh_ew_expf(INFINITY)));
	ck_assert_float_eq(wh_ew_expf(-INFINITY), 0.0f);
	ck_assert(isnan(wh_ew_expf(NAN)));
	ck_assert(wh_ew_expf(-100.0f) > 0.0f && wh_ew_expf(-100.0f) < 1e-43f); /* subnormal, not flushed */
	ck_assert_float_eq(wh_ew_sigmoidf(0.0f), 0.5f);
	ck_assert_float_eq(wh_ew_sigmoidf(-200.0f), 0.0f);
	ck_assert_float_eq(wh_ew_sigmoidf(200.0f), 1.0f);
	ck_assert_float_eq(wh_ew_tanhf(20.0f), 1.0f);
	ck_assert_float_eq(wh_ew_tanhf(-20.0f), -1.0f);
}
END_TEST

/* erf against libm's double erf (the exact value) and float erff, every 2^-12 over
 * [-6, 6] and random tiny arguments; Gelu in both forms against double evaluations of
 * their formulas. The bounds hold with the fitted coefficients; a wrong coefficient, term
 * order or branch moves them by orders of magnitude. The Gelu negative tail is checked for
 * relative error, which 0.5 x (1 + erf(z)) in float32 would fail by cancellation. */
START_TEST(test_erf_gelu_accuracy)
{
	int64_t worst_erf = 0, worst_erff = 0, worst_gelu = 0, worst_gelu_t = 0;
	double tail_gelu = 0, tail_gelu_t = 0;
	for (int k = -6 * 4096; k <= 6 * 4096; k++) {
		float x = (float)k / 4096.0f;
		int64_t u = ulps(wh_ew_erff(x), erf((double)x));
		worst_erf = u > worst_erf ? u : worst_erf;
		u = ulps(wh_ew_erff(x), erff(x));
		worst_erff = u > worst_erff ? u : worst_erff;
	}
	uint64_t s = 99;
	for (int i = 0; i < 200000; i++) {
		float t = rng_float(&s, -1.0f, 1.0f) * 1e-6f;
		int64_t u = ulps(wh_ew_erff(t), erf((double)t));
		worst_erf = u > worst_erf ? u : worst_erf;
		/* Gelu in ulp where its value is not small, then its negative tail, where an
		 * error in the argument is magnified by the slope of exp(-z^2) */
		float x = rng_float(&s, -3.0f, 10.0f);
		double g = 0.5 * x * erfc(-(double)x / sqrt(2.0));
		u = ulps(wh_ew_geluf(x), g);
		worst_gelu = u > worst_gelu ? u : worst_gelu;
		x = rng_float(&s, -1.0f, 10.0f);
		double v = sqrt(2 / M_PI) * (x + 0.044715 * (double)x * x * x);
		u = ulps(wh_ew_gelu_tanhf(x), x / (1 + exp(-2 * v)));
		worst_gelu_t = u > worst_gelu_t ? u : worst_gelu_t;
		float y = rng_float(&s, -12.0f, -3.0f);
		g = 0.5 * y * erfc(-(double)y / sqrt(2.0));
		double r = fabs(wh_ew_geluf(y) / g - 1);
		tail_gelu = r > tail_gelu ? r : tail_gelu;
		y = rng_float(&s, -12.0f, -1.0f);
		v = sqrt(2 / M_PI) * (y + 0.044715 * (double)y * y * y);
		g = y / (1 + exp(-2 * v));
		if (g < -1e-37) { /* a normal float */
			r = fabs(wh_ew_gelu_tanhf(y) / g - 1);
			tail_gelu_t = r > tail_gelu_t ? r : tail_gelu_t;
		}
	}
	fprintf(stderr, "erf %lld ulp (erff %lld), gelu %lld ulp tail %g, gelu tanh %lld ulp tail %g\n",
		(long long)worst_erf, (long long)worst_erff, (long long)worst_gelu, tail_gelu,
		(long long)worst_gelu_t, tail_gelu_t);
	ck_assert_msg(worst_erf <= 3, "erf off by %lld ulp", (long long)worst_erf);
	ck_assert_msg(worst_erff <= 4, "erf off libm erff by %lld ulp", (long long)worst_erff);
	ck_assert_msg(worst_gelu <= 8, "gelu off by %lld ulp", (long long)worst_gelu);
	ck_assert_msg(worst_gelu_t <= 4, "gelu tanh off by %lld ulp", (long long)worst_gelu_t);
	ck_assert_msg(tail_gelu < 5e-6, "gelu tail off by %g relative", tail_gelu);
	ck_assert_msg(tail_gelu_t < 5e-5, "gelu tanh tail off by %g relative", tail_gelu_t);
	/* ends and specials */
	ck_assert_float_eq(wh_ew_erff(0.0f), 0.0f);
	ck_assert(signbit(wh_ew_erff(-0.0f)));
	ck_assert_float_eq(wh_ew_erff(INFINITY), 1.0f);
	ck_assert_float_eq(wh_ew_erff(-INFINITY), -1.0f);
	ck_assert_float_eq(wh_ew_erff(1e30f), 1.0f);
	ck_assert(isnan(wh_ew_erff(NAN)));
	ck_assert_float_eq(wh_ew_geluf(INFINITY), INFINITY);
	ck_assert_float_eq(wh_ew_geluf(-20.0f), 0.0f);
	ck_assert_float_eq(wh_ew_geluf(1e30f), 1e30f);
	ck_assert(isnan(wh_ew_geluf(NAN)));
	ck_assert_float_eq(wh_ew_gelu_tanhf(INFINITY), INFINITY);
	ck_assert_float_eq(wh_ew_gelu_tanhf(-20.0f), 0.0f);
	ck_assert(isnan(wh_ew_gelu_tanhf(NAN)));
}
END_TEST

/* ---- whole kernels ---- */

struct attr_spec {
	const char *name;
	enum wh_attr_type type;
	int64_t i;
	float f;
	const char *s;
};

#define A_INT(nm, v) {nm, WH_ATTR_INT, v, 0, NULL}
#define A_FLOAT(nm, v) {nm, WH_ATTR_FLOAT, 0, v, NULL}
#define A_STR(nm, v) {nm, WH_ATTR_STRING, 0, 0, v}

/* Calls the registered kernel of op directly, with the ISA capped and an optional pool. */
/* round: the output format of an emulated layer (NULL: none); *rounded_out (may be NULL)
 * says whether the kernel rounded its output itself */
static enum wh_status run_kernel_round(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
				       const struct attr_spec *as, uint32_t n_attrs, enum wh_isa isa,
				       struct wh_threadpool *pool, struct wh_tensor *out,
				       void (*round)(const float *, float *, size_t, const struct wh_cpu_features *),
				       bool *rounded_out)
{
	const struct wh_op_def *def = wh_op_lookup("", op, opset);
	ck_assert_msg(def != NULL, "no kernel for %s-%lld", op, (long long)opset);
	struct wh_attr attrs[8];
	memset(attrs, 0, sizeof attrs);
	ck_assert_uint_le(n_attrs, 8);
	for (uint32_t i = 0; i < n_attrs; i++) {
		attrs[i].name = as[i].name;
		attrs[i].type = as[i].type;
		attrs[i].i = as[i].i;
		attrs[i].f = as[i].f;
		if (as[i].s) {
			attrs[i].s.data = (const uint8_t *)as[i].s;
			attrs[i].s.len = strlen(as[i].s);
		}
	}
	struct wh_node node = {.name = "n", .op_type = op, .domain = "", .n_attrs = n_attrs, .attrs = attrs};
	struct wh_cpu_features cpu = wh_cpu_capped(isa);
	bool wanted = true;
	wh_tensor_init(out);
	struct wh_out_round r = {round, &cpu};
	struct wh_kernel_ctx ctx = {
		.node = &node, .opset = opset, .n_inputs = n_in, .inputs = ins, .n_outputs = 1,
		.outputs = out, .output_wanted = &wanted, .pool = pool, .cpu = &cpu, .round_out = round ? &r : NULL,
	};
	enum wh_status st = def->run(&ctx);
	if (rounded_out)
		*rounded_out = ctx.outputs_rounded;
	return st;
}

static enum wh_status run_kernel_isa(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
				     const struct attr_spec *as, uint32_t n_attrs, enum wh_isa isa,
				     struct wh_threadpool *pool, struct wh_tensor *out)
{
	return run_kernel_round(op, opset, n_in, ins, as, n_attrs, isa, pool, out, NULL, NULL);
}

static void run_kernel(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
		       const struct attr_spec *as, uint32_t n_attrs, struct wh_tensor *out)
{
	enum wh_status st = run_kernel_isa(op, opset, n_in, ins, as, n_attrs, WH_ISA_SCALAR, NULL, out);
	ck_assert_msg(st == WH_OK, "%s: %s", op, wh_error_message());
}

static void mk(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims, const void *v)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
	if (v && t->count)
		memcpy(t->data, v, t->count * wh_dtype_size(dt));
}

static void expect_shape(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->rank, rank);
	for (int32_t d = 0; d < rank; d++)
		ck_assert_int_eq(t->dims[d], dims[d]);
}

static void expect_f32(const struct wh_tensor *t, const float *want, size_t n)
{
	ck_assert_int_eq(t->dtype, WH_DT_FLOAT);
	ck_assert_uint_eq(t->count, n);
	for (size_t i = 0; i < n; i++)
		CHECK_SAME(((const float *)t->data)[i], want[i], "[%zu] got %a want %a", i,
			      (double)((const float *)t->data)[i], (double)want[i]);
}

static void expect_i64(const struct wh_tensor *t, const int64_t *want, size_t n)
{
	ck_assert_uint_eq(t->count, n);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(wh_tensor_get_i64(t, i) == want[i], "[%zu] got %lld want %lld", i,
			      (long long)wh_tensor_get_i64(t, i), (long long)want[i]);
}

/* Binary float32 ops with broadcasting: every ISA and a thread pool give the same bits as
 * a naive loop over the broadcast index. */
START_TEST(test_broadcast_kernels)
{
	static const struct {
		int32_t ra, rb;
		int64_t da[4], db[4];
	} cases[] = {
		{4, 4, {1, 16, 67, 61}, {1, 16, 1, 1}}, /* per-channel vector over NCHW */
		{4, 4, {1, 16, 1, 1}, {1, 16, 67, 61}}, /* the vector on the left */
		{4, 0, {2, 3, 33, 17}, {0}},            /* scalar */
		{0, 4, {0}, {2, 3, 33, 17}},
		{3, 1, {5, 7, 19}, {19}},               /* trailing vector */
		{2, 2, {37, 1}, {1, 29}},               /* outer product */
		{4, 4, {2, 1, 9, 11}, {1, 5, 9, 1}},
		{2, 2, {300, 700}, {300, 700}},         /* same shape, several chunks */
		{4, 4, {1, 8, 128, 128}, {1, 8, 1, 1}}, /* several chunks of rows */
		/* short rows merged with the vector operand periodic (ew_periodic): a bias over
		 * tokens on either side, a period that does not divide the repeated copy, one
		 * that varies with an outer index, and chunks that start mid-period */
		{3, 1, {16, 49, 8}, {8}},
		{1, 3, {8}, {16, 49, 8}},
		{3, 1, {4, 300, 24}, {24}},
		{3, 3, {4, 100, 6}, {4, 1, 6}},
		{2, 1, {9000, 7}, {7}},
		{2, 2, {1, 5}, {3000, 5}},
	};
	static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min"};
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(3, &pool), WH_OK);
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct wh_tensor a, b;
		mk(&a, WH_DT_FLOAT, cases[c].ra, cases[c].da, NULL);
		mk(&b, WH_DT_FLOAT, cases[c].rb, cases[c].db, NULL);
		fill(a.data, a.count, 100 + c, -4, 4);
		fill(b.data, b.count, 200 + c, -4, 4);
		const struct wh_tensor *ins[2] = {&a, &b};
		int32_t rank;
		int64_t dims[WH_MAX_RANK], sa[WH_MAX_RANK], sb[WH_MAX_RANK];
		ck_assert(wh_broadcast_shapes(2, ins, &rank, dims));
		wh_broadcast_strides(&a, rank, dims, sa);
		wh_broadcast_strides(&b, rank, dims, sb);
		for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
			struct wh_tensor want;
			run_kernel(ops[o], 14, 2, ins, NULL, 0, &want);
			expect_shape(&want, rank, dims);
			/* naive reference over the multi-index */
			for (uint64_t i = 0; i < want.count; i++) {
				uint64_t rem = i, ia = 0, ib = 0;
				for (int32_t d = rank - 1; d >= 0; d--) {
					uint64_t idx = rem % (uint64_t)dims[d];
					rem /= (uint64_t)dims[d];
					ia += idx * (uint64_t)sa[d];
					ib += idx * (uint64_t)sb[d];
				}
				float x = ((float *)a.data)[ia], y = ((float *)b.data)[ib], r;
				switch (o) {
				case 0: r = x + y; break;
				case 1: r = x - y; break;
				case 2: r = x * y; break;
				case 3: r = x / y; break;
				case 4: r = (x != x || y != y) ? NAN : (x > y ? x : y); break;
				default: r = (x != x || y != y) ? NAN : (x < y ? x : y); break;
				}
				float g = ((float *)want.data)[i];
				if (!(r != r && g != g) && !(r == 0 && g == 0))
					CHECK_SAME(r, g, "%s case %zu [%llu]: %a vs %a", ops[o], c,
						      (unsigned long long)i, (double)g, (double)r);
			}
			for (int isa = WH_ISA_AVX2; isa <= WH_ISA_AVX512; isa++)
				for (int threaded = 0; threaded < 2; threaded++) {
					struct wh_tensor got;
					ck_assert_int_eq(run_kernel_isa(ops[o], 14, 2, ins, NULL, 0, (enum wh_isa)isa,
									threaded ? pool : NULL, &got), WH_OK);
					for (uint64_t i = 0; i < want.count; i++)
						CHECK_SAME(((float *)want.data)[i], ((float *)got.data)[i],
							      "%s case %zu isa %d threaded %d [%llu]", ops[o], c, isa,
							      threaded, (unsigned long long)i);
					wh_tensor_release(&got);
				}
			wh_tensor_release(&want);
		}
		wh_tensor_release(&a);
		wh_tensor_release(&b);
	}
	wh_threadpool_destroy(pool);
}
END_TEST

/* Unary activations through the kernels: ISA caps and threads agree bit for bit. */
START_TEST(test_unary_kernels_isa)
{
	static const char *ops[] = {"Relu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Exp", "LeakyRelu", "Clip"};
	int64_t dims[4] = {1, 24, 57, 61};
	struct wh_tensor x;
	mk(&x, WH_DT_FLOAT, 4, dims, NULL);
	fill(x.data, x.count, 5, -9, 9);
	const struct wh_tensor *ins[1] = {&x};
	struct attr_spec clip6[2] = {A_FLOAT("min", 0.0f), A_FLOAT("max", 6.0f)};
	struct wh_threadpool *pool = NULL;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
		bool clip = !strcmp(ops[o], "Clip");
		struct wh_tensor want;
		run_kernel(ops[o], clip ? 9 : 22, 1, ins, clip ? clip6 : NULL, clip ? 2 : 0, &want);
		for (int isa = WH_ISA_AVX2; isa <= WH_ISA_AVX512; isa++) {
			struct wh_tensor got;
			ck_assert_int_eq(run_kernel_isa(ops[o], clip ? 9 : 22, 1, ins, clip ? clip6 : NULL, clip ? 2 : 0,
							(enum wh_isa)isa, pool, &got), WH_OK);
			for (uint64_t i = 0; i < want.count; i++)
				CHECK_SAME(((float *)want.data)[i], ((float *)got.data)[i], "%s isa %d [%llu]",
					      ops[o], isa, (unsigned long long)i);
			wh_tensor_release(&got);
		}
		if (clip) {
			for (uint64_t i = 0; i < want.count; i++) {
				float v = ((float *)x.data)[i], g = ((float *)want.data)[i];
				if (v == v && !(g >= 0.0f && g <= 6.0f))
					ck_abort_msg("Clip(%g) = %g", (double)v, (double)g);
			}
		}
		wh_tensor_release(&want);
	}
	wh_tensor_release(&x);
	wh_threadpool_destroy(pool);
}
END_TEST

START_TEST(test_mod_signs)
{
	int64_t d4[1] = {4};
	int32_t a[4] = {-4, 7, 5, -3}, b[4] = {3, -3, -2, 2};
	struct wh_tensor ta, tb, out;
	mk(&ta, WH_DT_INT32, 1, d4, a);
	mk(&tb, WH_DT_INT32, 1, d4, b);
	const struct wh_tensor *ins[2] = {&ta, &tb};
	run_kernel("Mod", 13, 2, ins, NULL, 0, &out);
	int64_t py[4] = {2, -2, -1, 1}; /* sign of the divisor */
	ck_assert_int_eq(out.dtype, WH_DT_INT32);
	expect_i64(&out, py, 4);
	wh_tensor_release(&out);
	struct attr_spec fm[1] = {A_INT("fmod", 1)};
	run_kernel("Mod", 13, 2, ins, fm, 1, &out);
	int64_t c[4] = {-1, 1, 1, -1}; /* sign of the dividend */
	expect_i64(&out, c, 4);
	wh_tensor_release(&out);
	float fa[4] = {-4.5f, 7.5f, 5.0f, -3.25f}, fb[4] = {2.0f, -2.0f, -3.0f, 2.0f};
	struct wh_tensor fta, ftb;
	mk(&fta, WH_DT_FLOAT, 1, d4, fa);
	mk(&ftb, WH_DT_FLOAT, 1, d4, fb);
	const struct wh_tensor *fins[2] = {&fta, &ftb};
	run_kernel("Mod", 13, 2, fins, fm, 1, &out);
	float want[4] = {-0.5f, 1.5f, 2.0f, -1.25f};
	expect_f32(&out, want, 4);
	wh_tensor_release(&out);
	/* a zero divisor must not trap */
	int32_t z[4] = {0, 0, 0, 0};
	struct wh_tensor tz;
	mk(&tz, WH_DT_INT32, 1, d4, z);
	const struct wh_tensor *zins[2] = {&ta, &tz};
	run_kernel("Mod", 13, 2, zins, NULL, 0, &out);
	wh_tensor_release(&out);
	run_kernel("Div", 14, 2, zins, NULL, 0, &out);
	wh_tensor_release(&out);
	wh_tensor_release(&tz);
	wh_tensor_release(&ta);
	wh_tensor_release(&tb);
	wh_tensor_release(&fta);
	wh_tensor_release(&ftb);
}
END_TEST

START_TEST(test_round_half_even)
{
	float v[9] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 2.4999998f, 3.5000002f, 1e30f};
	float want[9] = {0.0f, 2.0f, 2.0f, -0.0f, -2.0f, -2.0f, 2.0f, 4.0f, 1e30f};
	int64_t d[1] = {9};
	struct wh_tensor x, out;
	mk(&x, WH_DT_FLOAT, 1, d, v);
	const struct wh_tensor *ins[1] = {&x};
	for (int isa = WH_ISA_SCALAR; isa <= WH_ISA_AVX512; isa++) {
		ck_assert_int_eq(run_kernel_isa("Round", 22, 1, ins, NULL, 0, (enum wh_isa)isa, NULL, &out), WH_OK);
		expect_f32(&out, want, 9);
		wh_tensor_release(&out);
	}
	/* double goes through its own path */
	double dv[3] = {0.5, 1.5, -2.5};
	struct wh_tensor xd;
	int64_t d3[1] = {3};
	mk(&xd, WH_DT_DOUBLE, 1, d3, dv);
	const struct wh_tensor *dins[1] = {&xd};
	run_kernel("Round", 22, 1, dins, NULL, 0, &out);
	ck_assert(((double *)out.data)[0] == 0.0 && ((double *)out.data)[1] == 2.0 && ((double *)out.data)[2] == -2.0);
	wh_tensor_release(&out);
	wh_tensor_release(&xd);
	wh_tensor_release(&x);
}
END_TEST

START_TEST(test_pow_int_and_mixed)
{
	int64_t d3[1] = {3};
	int64_t base[3] = {2, 3, -2}, ex[3] = {10, 3, 3};
	struct wh_tensor tb, te, out;
	mk(&tb, WH_DT_INT64, 1, d3, base);
	mk(&te, WH_DT_INT64, 1, d3, ex);
	const struct wh_tensor *ins[2] = {&tb, &te};
	run_kernel("Pow", 15, 2, ins, NULL, 0, &out);
	ck_assert_int_eq(out.dtype, WH_DT_INT64);
	int64_t want[3] = {1024, 27, -8};
	expect_i64(&out, want, 3);
	wh_tensor_release(&out);
	/* int base, float exponent: computed in floating point, truncated to the base type */
	int32_t ib[3] = {2, 3, 10};
	float fe[3] = {0.5f, 2.0f, -1.0f};
	struct wh_tensor tib, tfe;
	mk(&tib, WH_DT_INT32, 1, d3, ib);
	mk(&tfe, WH_DT_FLOAT, 1, d3, fe);
	const struct wh_tensor *mins[2] = {&tib, &tfe};
	run_kernel("Pow", 15, 2, mins, NULL, 0, &out);
	ck_assert_int_eq(out.dtype, WH_DT_INT32);
	int64_t want2[3] = {1, 9, 0};
	expect_i64(&out, want2, 3);
	wh_tensor_release(&out);
	/* float base, int exponent */
	float fb[3] = {1.5f, -2.0f, 4.0f};
	int64_t ie[3] = {2, 3, -1};
	struct wh_tensor tfb, tie;
	mk(&tfb, WH_DT_FLOAT, 1, d3, fb);
	mk(&tie, WH_DT_INT64, 1, d3, ie);
	const struct wh_tensor *fins[2] = {&tfb, &tie};
	run_kernel("Pow", 15, 2, fins, NULL, 0, &out);
	float want3[3] = {2.25f, -8.0f, 0.25f};
	expect_f32(&out, want3, 3);
	wh_tensor_release(&out);
	wh_tensor_release(&tb);
	wh_tensor_release(&te);
	wh_tensor_release(&tib);
	wh_tensor_release(&tfe);
	wh_tensor_release(&tfb);
	wh_tensor_release(&tie);
}
END_TEST

START_TEST(test_int_arith_wrap_and_trunc)
{
	int64_t d4[1] = {4};
	int8_t a[4] = {-7, 7, 100, -128}, b[4] = {2, -2, 100, -1};
	struct wh_tensor ta, tb, out;
	mk(&ta, WH_DT_INT8, 1, d4, a);
	mk(&tb, WH_DT_INT8, 1, d4, b);
	const struct wh_tensor *ins[2] = {&ta, &tb};
	run_kernel("Div", 14, 2, ins, NULL, 0, &out);
	int64_t q[4] = {-3, -3, 1, -128}; /* truncation toward zero; -128 / -1 wraps */
	expect_i64(&out, q, 4);
	wh_tensor_release(&out);
	run_kernel("Add", 14, 2, ins, NULL, 0, &out);
	int64_t s[4] = {-5, 5, -56, 127}; /* 200 and -129 wrap in int8 */
	expect_i64(&out, s, 4);
	wh_tensor_release(&out);
	uint8_t ua[4] = {200, 3, 255, 1}, ub[4] = {100, 1, 7, 9};
	struct wh_tensor tua, tub;
	mk(&tua, WH_DT_UINT8, 1, d4, ua);
	mk(&tub, WH_DT_UINT8, 1, d4, ub);
	const struct wh_tensor *uins[2] = {&tua, &tub};
	run_kernel("Greater", 13, 2, uins, NULL, 0, &out); /* unsigned compare: 200 > 100 */
	ck_assert_int_eq(out.dtype, WH_DT_BOOL);
	int64_t g[4] = {1, 1, 1, 0};
	expect_i64(&out, g, 4);
	wh_tensor_release(&out);
	struct attr_spec left[1] = {A_STR("direction", "LEFT")}, right[1] = {A_STR("direction", "RIGHT")};
	run_kernel("BitShift", 11, 2, uins, left, 1, &out);
	int64_t l[4] = {0, 6, 128, 0}; /* shifted-out bits vanish; a shift of 9 on uint8 gives 0 */
	expect_i64(&out, l, 4);
	wh_tensor_release(&out);
	run_kernel("BitShift", 11, 2, uins, right, 1, &out);
	int64_t r[4] = {0, 1, 1, 0};
	expect_i64(&out, r, 4);
	wh_tensor_release(&out);
	wh_tensor_release(&ta);
	wh_tensor_release(&tb);
	wh_tensor_release(&tua);
	wh_tensor_release(&tub);
}
END_TEST

START_TEST(test_clip_forms)
{
	int64_t d5[1] = {5};
	float v[5] = {-3.0f, -0.5f, 0.5f, 7.0f, INFINITY};
	struct wh_tensor x, out, lo, hi;
	mk(&x, WH_DT_FLOAT, 1, d5, v);
	/* Clip-6: attributes */
	const struct wh_tensor *ins1[1] = {&x};
	struct attr_spec mm[2] = {A_FLOAT("min", -1.0f), A_FLOAT("max", 1.0f)};
	run_kernel("Clip", 6, 1, ins1, mm, 2, &out);
	float w6[5] = {-1.0f, -0.5f, 0.5f, 1.0f, 1.0f};
	expect_f32(&out, w6, 5);
	wh_tensor_release(&out);
	/* Clip-6 without max: the default is FLT_MAX, so +inf becomes FLT_MAX */
	run_kernel("Clip", 6, 1, ins1, mm, 1, &out);
	float w6b[5] = {-1.0f, -0.5f, 0.5f, 7.0f, FLT_MAX};
	expect_f32(&out, w6b, 5);
	wh_tensor_release(&out);
	/* Clip-13: max only, min omitted */
	float hv = 0.0f;
	mk(&hi, WH_DT_FLOAT, 0, NULL, &hv);
	const struct wh_tensor *ins2[3] = {&x, NULL, &hi};
	run_kernel("Clip", 13, 3, ins2, NULL, 0, &out);
	float w13[5] = {-3.0f, -0.5f, 0.0f, 0.0f, 0.0f};
	expect_f32(&out, w13, 5);
	wh_tensor_release(&out);
	/* min > max: everything becomes max */
	float lv = 2.0f;
	mk(&lo, WH_DT_FLOAT, 0, NULL, &lv);
	const struct wh_tensor *ins3[3] = {&x, &lo, &hi};
	run_kernel("Clip", 13, 3, ins3, NULL, 0, &out);
	float wmax[5] = {0, 0, 0, 0, 0};
	expect_f32(&out, wmax, 5);
	wh_tensor_release(&out);
	/* integer Clip with a min only */
	int8_t iv[5] = {-128, -5, 0, 5, 127}, imin = -4;
	struct wh_tensor xi, mi;
	mk(&xi, WH_DT_INT8, 1, d5, iv);
	mk(&mi, WH_DT_INT8, 0, NULL, &imin);
	const struct wh_tensor *ins4[2] = {&xi, &mi};
	run_kernel("Clip", 13, 2, ins4, NULL, 0, &out);
	int64_t wi[5] = {-4, -4, 0, 5, 127};
	expect_i64(&out, wi, 5);
	wh_tensor_release(&out);
	/* a non-scalar bound is an error, not a crash */
	int64_t d2[1] = {2};
	struct wh_tensor bad;
	mk(&bad, WH_DT_FLOAT, 1, d2, v);
	const struct wh_tensor *ins5[2] = {&x, &bad};
	ck_assert_int_eq(run_kernel_isa("Clip", 13, 2, ins5, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_INVALID);
	wh_tensor_release(&out);
	wh_tensor_release(&bad);
	wh_tensor_release(&x);
	wh_tensor_release(&lo);
	wh_tensor_release(&hi);
	wh_tensor_release(&xi);
	wh_tensor_release(&mi);
}
END_TEST

START_TEST(test_legacy_broadcast)
{
	/* Add-6 with broadcast=1, axis=1: B of shape [3] lines up with A's dimension 1 */
	int64_t da[3] = {2, 3, 2}, db[1] = {3};
	float a[12] = {0}, b[3] = {10, 20, 30};
	struct wh_tensor ta, tb, out;
	mk(&ta, WH_DT_FLOAT, 3, da, a);
	mk(&tb, WH_DT_FLOAT, 1, db, b);
	const struct wh_tensor *ins[2] = {&ta, &tb};
	struct attr_spec at[2] = {A_INT("broadcast", 1), A_INT("axis", 1)};
	run_kernel("Add", 6, 2, ins, at, 2, &out);
	float want[12] = {10, 10, 20, 20, 30, 30, 10, 10, 20, 20, 30, 30};
	expect_shape(&out, 3, da);
	expect_f32(&out, want, 12);
	wh_tensor_release(&out);
	/* PRelu-6: per-channel slope [C] for X [N, C, L] */
	float x[12] = {-1, 1, -1, 1, -1, 1, -2, 2, -2, 2, -2, 2};
	struct wh_tensor tx;
	mk(&tx, WH_DT_FLOAT, 3, da, x);
	const struct wh_tensor *pins[2] = {&tx, &tb};
	run_kernel("PRelu", 6, 2, pins, NULL, 0, &out);
	float pw[12] = {-10, 1, -20, 1, -30, 1, -20, 2, -40, 2, -60, 2};
	expect_f32(&out, pw, 12);
	wh_tensor_release(&out);
	/* with numpy rules (opset 9) the same shapes do not broadcast */
	ck_assert_int_eq(run_kernel_isa("PRelu", 9, 2, pins, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_SHAPE);
	wh_tensor_release(&out);
	wh_tensor_release(&ta);
	wh_tensor_release(&tb);
	wh_tensor_release(&tx);
}
END_TEST

START_TEST(test_variadic_and_nan)
{
	int64_t d3[1] = {3}, d23[2] = {2, 3}, d21[2] = {2, 1};
	float a[3] = {1, NAN, 3}, b[6] = {4, 5, NAN, 0, 1, 2}, c[2] = {10, 20};
	struct wh_tensor ta, tb, tc, out;
	mk(&ta, WH_DT_FLOAT, 1, d3, a);
	mk(&tb, WH_DT_FLOAT, 2, d23, b);
	mk(&tc, WH_DT_FLOAT, 2, d21, c);
	const struct wh_tensor *ins[3] = {&ta, &tb, &tc};
	run_kernel("Sum", 13, 3, ins, NULL, 0, &out);
	expect_shape(&out, 2, d23);
	float ws[6] = {15, NAN, NAN, 21, NAN, 25};
	expect_f32(&out, ws, 6);
	wh_tensor_release(&out);
	run_kernel("Mean", 13, 3, ins, NULL, 0, &out);
	float wm[6] = {5, NAN, NAN, 7, NAN, 25.0f / 3.0f};
	expect_f32(&out, wm, 6);
	wh_tensor_release(&out);
	run_kernel("Max", 13, 3, ins, NULL, 0, &out);
	float wx[6] = {10, NAN, NAN, 20, NAN, 20}; /* NaN from either side propagates */
	expect_f32(&out, wx, 6);
	wh_tensor_release(&out);
	const struct wh_tensor *two[2] = {&tb, &ta};
	run_kernel("Min", 13, 2, two, NULL, 0, &out);
	float wn[6] = {1, NAN, NAN, 0, NAN, 2};
	expect_f32(&out, wn, 6);
	wh_tensor_release(&out);
	const struct wh_tensor *one[1] = {&ta};
	run_kernel("Sum", 13, 1, one, NULL, 0, &out);
	expect_f32(&out, a, 3);
	wh_tensor_release(&out);
	wh_tensor_release(&ta);
	wh_tensor_release(&tb);
	wh_tensor_release(&tc);
}
END_TEST

START_TEST(test_where_and_strings)
{
	int64_t d21[2] = {2, 1}, d13[2] = {1, 3}, d23[2] = {2, 3};
	uint8_t cond[2] = {1, 0};
	int64_t x[3] = {1, 2, 3}, y = -9;
	struct wh_tensor tc, tx, ty, out;
	mk(&tc, WH_DT_BOOL, 2, d21, cond);
	mk(&tx, WH_DT_INT64, 2, d13, x);
	mk(&ty, WH_DT_INT64, 0, NULL, &y);
	const struct wh_tensor *ins[3] = {&tc, &tx, &ty};
	run_kernel("Where", 16, 3, ins, NULL, 0, &out);
	expect_shape(&out, 2, d23);
	int64_t w[6] = {1, 2, 3, -9, -9, -9};
	expect_i64(&out, w, 6);
	wh_tensor_release(&out);
	const char *sx[3] = {"a", "bb", ""}, *sy[1] = {"zz"};
	size_t lx[3] = {1, 2, 0}, ly[1] = {2};
	struct wh_tensor stx, sty;
	wh_tensor_init(&stx);
	wh_tensor_init(&sty);
	ck_assert_int_eq(wh_tensor_alloc_strings(&stx, 2, d13, sx, lx), WH_OK);
	int64_t d1[1] = {1};
	ck_assert_int_eq(wh_tensor_alloc_strings(&sty, 1, d1, sy, ly), WH_OK);
	const struct wh_tensor *sins[3] = {&tc, &stx, &sty};
	run_kernel("Where", 16, 3, sins, NULL, 0, &out);
	ck_assert_int_eq(out.dtype, WH_DT_STRING);
	expect_shape(&out, 2, d23);
	const char *const *s = out.data;
	ck_assert_str_eq(s[0], "a");
	ck_assert_str_eq(s[1], "bb");
	ck_assert_str_eq(s[2], "");
	ck_assert_str_eq(s[3], "zz");
	ck_assert_str_eq(s[5], "zz");
	ck_assert_ptr_ne(s[3], ((const char *const *)sty.data)[0]); /* copied, not borrowed */
	wh_tensor_release(&out);
	const struct wh_tensor *eins[2] = {&stx, &sty};
	run_kernel("Equal", 19, 2, eins, NULL, 0, &out);
	int64_t we[3] = {0, 0, 0};
	expect_i64(&out, we, 3);
	wh_tensor_release(&out);
	const struct wh_tensor *eins2[2] = {&stx, &stx};
	run_kernel("Equal", 19, 2, eins2, NULL, 0, &out);
	int64_t we2[3] = {1, 1, 1};
	expect_i64(&out, we2, 3);
	wh_tensor_release(&out);
	wh_tensor_release(&tc);
	wh_tensor_release(&tx);
	wh_tensor_release(&ty);
	wh_tensor_release(&stx);
	wh_tensor_release(&sty);
}
END_TEST

START_TEST(test_activation_values)
{
	int64_t d6[1] = {6};
	float v[6] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f, 4.0f};
	struct wh_tensor x, out;
	mk(&x, WH_DT_FLOAT, 1, d6, v);
	const struct wh_tensor *ins[1] = {&x};
	run_kernel("HardSigmoid", 6, 1, ins, NULL, 0, &out);
	float hs[6] = {0.0f, 0.3f, 0.5f, 0.6f, 0.9f, 1.0f};
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq_tol(((float *)out.data)[i], hs[i], 1e-6f);
	wh_tensor_release(&out);
	run_kernel("HardSwish", 14, 1, ins, NULL, 0, &out);
	float hw[6] = {0.0f, -1.0f / 3.0f, 0.0f, 0.5f * (0.5f / 6.0f + 0.5f), 2.0f * (2.0f / 6.0f + 0.5f), 4.0f};
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq_tol(((float *)out.data)[i], hw[i], 1e-6f);
	wh_tensor_release(&out);
	struct attr_spec ga[1] = {A_STR("approximate", "tanh")};
	run_kernel("Gelu", 20, 1, ins, NULL, 0, &out);
	for (int i = 0; i < 6; i++)
		ck_assert_float_eq_tol(((float *)out.data)[i], 0.5 * v[i] * (1 + erf(v[i] / sqrt(2.0))), 1e-6);
	wh_tensor_release(&out);
	run_kernel("Gelu", 20, 1, ins, ga, 1, &out);
	for (int i = 0; i < 6; i++) {
		double t = 0.5 * v[i] * (1 + tanh(sqrt(2 / M_PI) * (v[i] + 0.044715 * pow(v[i], 3))));
		ck_assert_float_eq_tol(((float *)out.data)[i], t, 1e-6);
	}
	wh_tensor_release(&out);
	struct attr_spec sh[2] = {A_FLOAT("lambd", 1.5f), A_FLOAT("bias", 1.0f)};
	run_kernel("Shrink", 9, 1, ins, sh, 2, &out);
	float sw[6] = {-2.0f, 0.0f, 0.0f, 0.0f, 1.0f, 3.0f};
	expect_f32(&out, sw, 6);
	wh_tensor_release(&out);
	struct attr_spec ii[1] = {A_INT("detect_negative", 0)};
	float iv[3] = {INFINITY, -INFINITY, NAN};
	int64_t d3[1] = {3};
	struct wh_tensor xi;
	mk(&xi, WH_DT_FLOAT, 1, d3, iv);
	const struct wh_tensor *iins[1] = {&xi};
	run_kernel("IsInf", 20, 1, iins, ii, 1, &out);
	int64_t wi[3] = {1, 0, 0};
	expect_i64(&out, wi, 3);
	wh_tensor_release(&out);
	run_kernel("IsNaN", 20, 1, iins, NULL, 0, &out);
	int64_t wn[3] = {0, 0, 1};
	expect_i64(&out, wn, 3);
	wh_tensor_release(&out);
	/* float16 goes through the float32 math and is rounded back */
	uint16_t h[2] = {wh_f32_to_f16(-2.0f), wh_f32_to_f16(1.0f)};
	int64_t d2[1] = {2};
	struct wh_tensor xh;
	mk(&xh, WH_DT_FLOAT16, 1, d2, h);
	const struct wh_tensor *hins[1] = {&xh};
	run_kernel("Sigmoid", 13, 1, hins, NULL, 0, &out);
	ck_assert_int_eq(out.dtype, WH_DT_FLOAT16);
	ck_assert_uint_eq(((uint16_t *)out.data)[0], wh_f32_to_f16(wh_ew_sigmoidf(-2.0f)));
	ck_assert_uint_eq(((uint16_t *)out.data)[1], wh_f32_to_f16(wh_ew_sigmoidf(1.0f)));
	wh_tensor_release(&out);
	/* a type the op does not take is an error */
	const struct wh_tensor *bins[1] = {&xi};
	ck_assert_int_eq(run_kernel_isa("Not", 1, 1, bins, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_UNSUPPORTED);
	wh_tensor_release(&out);
	wh_tensor_release(&xh);
	wh_tensor_release(&xi);
	wh_tensor_release(&x);
}
END_TEST

/* Emulated fp16/bf16 layers: unary and binary float kernels round their output chunk by
 * chunk as they write it (wh_kernel_ctx.round_out); the bits equal those of a separate pass
 * over the finished output. Variadic ops (several passes) leave the rounding to the
 * emulation and say so. */
START_TEST(test_fused_output_rounding)
{
	static const struct {
		const char *op;
		uint32_t n_in;
		int32_t ra, rb;
		int64_t da[4], db[4];
		bool fused;
	} cases[] = {
		{"Add", 2, 4, 4, {1, 24, 80, 80}, {1, 24, 1, 1}, true},
		{"Mul", 2, 4, 4, {1, 16, 96, 97}, {1, 16, 96, 97}, true},
		{"Div", 2, 4, 1, {1, 3, 70, 70}, {1}, true},
		{"Sigmoid", 1, 4, 0, {1, 40, 60, 60}, {0}, true},
		{"HardSigmoid", 1, 3, 0, {7, 99, 101}, {0}, true},
		{"Sum", 2, 2, 2, {300, 301}, {300, 301}, false},
	};
	struct wh_threadpool *p2;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	uint64_t seed = 77;
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		struct wh_tensor a, b, want, got;
		mk(&a, WH_DT_FLOAT, cases[c].ra, cases[c].da, NULL);
		mk(&b, WH_DT_FLOAT, cases[c].rb, cases[c].db, NULL);
		for (uint64_t i = 0; i < a.count; i++)
			((float *)a.data)[i] = rng_float(&seed, -137, 137);
		for (uint64_t i = 0; i < b.count; i++)
			((float *)b.data)[i] = rng_float(&seed, -29, 29) + 0.01f;
		const struct wh_tensor *ins[2] = {&a, &b};
		for (int isa = WH_ISA_SCALAR; isa <= (int)wh_cpu()->detected; isa++)
			for (int fmt = 0; fmt < 2; fmt++) {
				void (*fn)(const float *, float *, size_t, const struct wh_cpu_features *) =
					fmt ? wh_round_bf16_n : wh_round_f16_n;
				struct wh_threadpool *pool = (isa + fmt) % 2 ? p2 : NULL;
				ck_assert_int_eq(run_kernel_isa(cases[c].op, 13, cases[c].n_in, ins, NULL, 0, (enum wh_isa)isa,
								pool, &want), WH_OK);
				fn(want.data, want.data, want.count, NULL);
				bool rounded = false;
				ck_assert_int_eq(run_kernel_round(cases[c].op, 13, cases[c].n_in, ins, NULL, 0, (enum wh_isa)isa,
								  pool, &got, fn, &rounded), WH_OK);
				ck_assert_msg(rounded == cases[c].fused, "%s: kernel says rounded=%d", cases[c].op, rounded);
				if (!rounded)
					fn(got.data, got.data, got.count, NULL);
				ck_assert_uint_eq(got.count, want.count);
				ck_assert_msg(!memcmp(got.data, want.data, got.count * sizeof(float)),
					      "%s at ISA %d, %s: fused rounding differs from a pass", cases[c].op, isa,
					      fmt ? "bf16" : "fp16");
				wh_tensor_release(&want);
				wh_tensor_release(&got);
			}
		wh_tensor_release(&a);
		wh_tensor_release(&b);
	}
	wh_threadpool_destroy(p2);
}
END_TEST

START_TEST(test_bad_shapes)
{
	int64_t d3[1] = {3}, d4[1] = {4};
	struct wh_tensor a, b, out;
	mk(&a, WH_DT_FLOAT, 1, d3, NULL);
	mk(&b, WH_DT_FLOAT, 1, d4, NULL);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_kernel_isa("Add", 14, 2, ins, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_SHAPE);
	ck_assert(strstr(wh_error_message(), "3 and 4") != NULL);
	wh_tensor_release(&out);
	struct wh_tensor c;
	mk(&c, WH_DT_INT32, 1, d3, NULL);
	const struct wh_tensor *mixed[2] = {&a, &c};
	ck_assert_int_eq(run_kernel_isa("Mul", 14, 2, mixed, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_INVALID);
	wh_tensor_release(&out);
	const struct wh_tensor *missing[2] = {&a, NULL};
	ck_assert_int_eq(run_kernel_isa("Sub", 14, 2, missing, NULL, 0, WH_ISA_SCALAR, NULL, &out), WH_ERR_INVALID);
	wh_tensor_release(&out);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&c);
}
END_TEST

int main(void)
{
	wh_cpu_init();
	Suite *s = suite_create("elementwise");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_row_bin_simd);
	tcase_add_test(tc, test_row_un_simd);
	tcase_add_test(tc, test_reference_math_accuracy);
	tcase_add_test(tc, test_erf_gelu_accuracy);
	tcase_add_test(tc, test_erf_gelu_uniform_blocks);
	tcase_add_test(tc, test_broadcast_kernels);
	tcase_add_test(tc, test_bin_periodic);
	tcase_add_test(tc, test_unary_kernels_isa);
	tcase_add_test(tc, test_mod_signs);
	tcase_add_test(tc, test_round_half_even);
	tcase_add_test(tc, test_pow_int_and_mixed);
	tcase_add_test(tc, test_int_arith_wrap_and_trunc);
	tcase_add_test(tc, test_clip_forms);
	tcase_add_test(tc, test_legacy_broadcast);
	tcase_add_test(tc, test_variadic_and_nan);
	tcase_add_test(tc, test_where_and_strings);
	tcase_add_test(tc, test_activation_values);
	tcase_add_test(tc, test_bad_shapes);
	tcase_add_test(tc, test_fused_output_rounding);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
