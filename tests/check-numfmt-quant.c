/* The int8 emulation's bulk loops (executor/numfmt-quant.h): the scalar reference against an
 * independent definition (round half to even with rintf, saturation, NaN to 0, every zero
 * +0; the range as the largest finite |x|), and every SIMD variant and dispatch against the
 * scalar reference bit for bit, on specials, every rounding midpoint of the int8 grid, the
 * saturation boundaries, a sweep of float bit patterns and random values, at every tail
 * length and misalignment, in place and not; the float8 fake quantization (e4m3fn, e5m2)
 * against the formats' own conversions on every code, midpoint and special. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/numfmt-quant.h"
#include "graph/numfmt.h"

/* ck_assert records a checkpoint through a syscall on every call: loops over millions of
 * values use CHECK, which only calls into Check on failure. */
#define CHECK(cond, ...)                                                                                    \
	do {                                                                                                \
		if (!(cond))                                                                                \
			ck_abort_msg(__VA_ARGS__);                                                          \
	} while (0)

static bool same_bits(float a, float b)
{
	return wh_f32_bits(a) == wh_f32_bits(b);
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* The definition: x / scale (as x * inv), saturated to [-127, 127], rounded half to even
 * (rintf in the default rounding mode), NaN to 0, and a zero result is +0. */
static float def_quant(float x, float inv)
{
	float y = x * inv;
	if (isnan(y))
		return 0.0f;
	if (y > 127.0f)
		y = 127.0f;
	if (y < -127.0f)
		y = -127.0f;
	float r = rintf(y);
	return r == 0 ? 0.0f : r;
}

static float def_amax(const float *x, size_t n)
{
	float m = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(x[i]) && fabsf(x[i]) > m)
			m = fabsf(x[i]);
	return m;
}

/* scales the stress inputs are quantized with: 1, a typical activation's, a tiny and a huge
 * one */
static const float scales[] = {1.0f, 0.0123f, 1e-30f, 3e36f};
#define N_SCALES (sizeof scales / sizeof scales[0])

static float *stress_inputs(size_t *n_out)
{
	size_t n = (((size_t)1 << 32) / 4099 + 1) + N_SCALES * 256 * 5 + 40 + 200000;
	float *v = malloc(n * sizeof *v);
	size_t k = 0;
	ck_assert_ptr_nonnull(v);
	for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 4099)
		v[k++] = wh_bits_f32((uint32_t)u);
	/* the grid's midpoints and the values next to them, for each scale, saturation included */
	for (size_t s = 0; s < N_SCALES; s++)
		for (int q = -128; q < 128; q++) {
			float mid = ((float)q + 0.5f) * scales[s];
			v[k++] = mid;
			v[k++] = nextafterf(mid, INFINITY);
			v[k++] = nextafterf(mid, -INFINITY);
			v[k++] = (float)q * scales[s];
			v[k++] = -((float)q + 0.5f) * scales[s];
		}
	const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 3.4028234663852886e38f,
				 -3.4028234663852886e38f, 1e-45f, -1e-45f, 1.17549435e-38f, 0.49999997f, -0.49999997f,
				 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 126.5f, -126.5f, 127.5f, -127.5f, 127.0f,
				 -127.0f, 128.0f, -128.0f, 8388608.0f, 12582912.0f, -12582912.0f, 16777216.0f,
				 0.3f, -0.3f, 1e30f, -1e30f, 6e-39f, -6e-39f, 65504.0f, -65504.0f, 1.0f};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		v[k++] = special[i];
	uint64_t s = 42;
	for (int i = 0; i < 100000; i++)
		v[k++] = wh_bits_f32((uint32_t)rng_next(&s));
	for (int i = 0; i < 100000; i++) /* moderate magnitudes: most land inside the grid */
		v[k++] = ((float)(rng_next(&s) >> 40) / 16777216.0f - 0.5f) * 4.0f;
	*n_out = k;
	return v;
}

START_TEST(scalar_reference_is_the_definition)
{
	size_t n;
	float *in = stress_inputs(&n);
	float *out = malloc(n * sizeof *out);
	ck_assert_ptr_nonnull(out);
	for (size_t s = 0; s < N_SCALES; s++) {
		float inv = 1.0f / scales[s];
		for (size_t i = 0; i < n; i++) {
			float d = def_quant(in[i], inv);
			CHECK(same_bits(wh_quant_int8(in[i], inv), d), "quant(0x%08x, scale %g) = %a, want %a",
			      wh_f32_bits(in[i]), scales[s], wh_quant_int8(in[i], inv), d);
		}
		wh_quant_int8_n_scalar(in, out, n, inv);
		for (size_t i = 0; i < n; i++)
			CHECK(same_bits(out[i], def_quant(in[i], inv)), "quant_n at %zu", i);
		float m = wh_fake_quant_int8_n_scalar(in, out, n, inv, scales[s]);
		for (size_t i = 0; i < n; i++)
			CHECK(same_bits(out[i], def_quant(in[i], inv) * scales[s]), "fake_quant_n at %zu", i);
		CHECK(same_bits(m, def_amax(out, n)), "fake_quant_n's range %a, want %a", m, def_amax(out, n));
	}
	CHECK(same_bits(wh_amax_n_scalar(in, n), def_amax(in, n)), "amax");
	memcpy(out, in, n * sizeof *out);
	float m = wh_scale_add_n_scalar(out, n, 0.37f, -1.25f);
	for (size_t i = 0; i < n; i++) {
		float p = in[i] * 0.37f;
		CHECK(same_bits(out[i], p + -1.25f), "scale_add at %zu", i);
	}
	CHECK(same_bits(m, def_amax(out, n)), "scale_add's range");
	/* the cases the definition is about, spelled out */
	CHECK(same_bits(wh_quant_int8(-0.3f, 1.0f), 0.0f), "-0.3 -> +0");
	CHECK(same_bits(wh_quant_int8(2.5f, 1.0f), 2.0f), "2.5 -> 2");
	CHECK(same_bits(wh_quant_int8(-3.5f, 1.0f), -4.0f), "-3.5 -> -4");
	CHECK(same_bits(wh_quant_int8(1e9f, 1.0f), 127.0f), "saturates");
	CHECK(same_bits(wh_quant_int8(NAN, 1.0f), 0.0f), "NaN -> 0");
	const float nf[] = {NAN, INFINITY, -INFINITY, -2.0f, 1.0f};
	CHECK(same_bits(wh_amax_n_scalar(nf, 5), 2.0f), "amax skips NaN and infinities");
	CHECK(same_bits(wh_amax_n_scalar(nf, 3), 0.0f), "amax of no finite value is 0");
	free(out);
	free(in);
}
END_TEST

/* Inputs for the float8 round trip: a sweep of bit patterns, every code's value and the
 * midpoints between neighbouring codes with the floats next to them (both formats, both
 * signs), the saturation boundaries and the specials. */
static float *fp8_inputs(size_t *n_out)
{
	size_t n = (((size_t)1 << 32) / 257 + 1) + 2 * 2 * 256 * 5 + 64;
	float *v = malloc(n * sizeof *v);
	size_t k = 0;
	ck_assert_ptr_nonnull(v);
	for (uint64_t u = 0; u < ((uint64_t)1 << 32); u += 257)
		v[k++] = wh_bits_f32((uint32_t)u);
	for (int f = 0; f < 2; f++)
		for (uint32_t code = 0; code < 128; code++)
			for (uint32_t sign = 0; sign <= 0x80; sign += 0x80) {
				float a = f ? wh_e5m2_to_f32((uint8_t)(sign | code)) : wh_e4m3fn_to_f32((uint8_t)(sign | code));
				float b = f ? wh_e5m2_to_f32((uint8_t)(sign | (code + 1))) : wh_e4m3fn_to_f32((uint8_t)(sign | (code + 1)));
				float mid = (a + b) / 2;
				v[k++] = a;
				v[k++] = mid;
				v[k++] = nextafterf(mid, INFINITY);
				v[k++] = nextafterf(mid, -INFINITY);
				v[k++] = nextafterf(a, 0.0f);
			}
	const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, 448.0f, -448.0f, 464.0f, 463.9f, 464.1f,
				 480.0f, 57344.0f, 61440.0f, 61439.9f, 65536.0f, -61440.0f, 1e30f, -1e30f, 0x1p-6f,
				 0x1p-9f, 0x1p-10f, 0x1.8p-10f, -0x1p-10f, 0x1p-14f, 0x1p-16f, 0x1p-17f, 0x1.8p-17f,
				 -0x1p-17f, 1e-45f, -1e-45f, 3.4028234663852886e38f, wh_bits_f32(0x7FA00001),
				 wh_bits_f32(0xFFC00123)};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		v[k++] = special[i];
	*n_out = k;
	return v;
}

static float def_fp8(float y, bool e5m2)
{
	return e5m2 ? wh_e5m2_to_f32(wh_f32_to_e5m2(y, true)) : wh_e4m3fn_to_f32(wh_f32_to_e4m3fn(y, true));
}

/* fn against the definition (the storage format's conversion and decoding): inv 1 and scale
 * 1 give the round trip itself; then a scale of an activation's size; tails and offsets. */
static void check_fp8(float (*fn)(const float *, float *, size_t, float, float, bool), const char *name)
{
	size_t n;
	float *in = fp8_inputs(&n);
	float *a = malloc((n + 1) * sizeof *a), *b = malloc((n + 1) * sizeof *b);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	for (int f = 0; f < 2; f++) {
		float m = fn(in, a, n, 1.0f, 1.0f, f);
		for (size_t i = 0; i < n; i++)
			CHECK(same_bits(a[i], def_fp8(in[i], f)), "%s %s: 0x%08x -> %a, want %a", name, f ? "e5m2" : "e4m3fn",
			      wh_f32_bits(in[i]), a[i], def_fp8(in[i], f));
		CHECK(same_bits(m, def_amax(a, n)), "%s %s range", name, f ? "e5m2" : "e4m3fn");
		const float sc = 0.0123f, inv = 1.0f / sc;
		float ma = fn(in, a, n, inv, sc, f), mb = wh_fake_quant_fp8_n_scalar(in, b, n, inv, sc, f);
		CHECK(!memcmp(a, b, n * sizeof *a) && same_bits(ma, mb), "%s %s scaled", name, f ? "e5m2" : "e4m3fn");
		for (size_t len = 0; len <= 40; len++)
			for (size_t off = 0; off < 3; off++) {
				memcpy(a, in + 1000 + off, (len + 1) * sizeof *a);
				memcpy(b, a, (len + 1) * sizeof *b);
				ma = fn(a, a, len, inv, sc, f); /* in place */
				mb = wh_fake_quant_fp8_n_scalar(b, b, len, inv, sc, f);
				CHECK(!memcmp(a, b, (len + 1) * sizeof *a) && same_bits(ma, mb), "%s %s length %zu", name,
				      f ? "e5m2" : "e4m3fn", len);
			}
	}
	free(a);
	free(b);
	free(in);
}

START_TEST(fp8_variants_match_the_format)
{
	check_fp8(wh_fake_quant_fp8_n_scalar, "scalar");
	if (wh_cpu()->detected >= WH_ISA_AVX2)
		check_fp8(wh_fake_quant_fp8_n_avx2, "avx2");
	if (wh_cpu()->detected >= WH_ISA_AVX512)
		check_fp8(wh_fake_quant_fp8_n_avx512, "avx512");
	for (int cap = WH_ISA_SCALAR; cap <= WH_ISA_AVX512; cap++) {
		struct wh_cpu_features cpu = wh_cpu_capped((enum wh_isa)cap);
		float x[37], a[37], b[37];
		for (int i = 0; i < 37; i++)
			x[i] = (float)(i - 18) * 13.7f;
		float ma = wh_fake_quant_fp8_n(x, a, 37, 0.5f, 2.0f, cap & 1, &cpu);
		float mb = wh_fake_quant_fp8_n_scalar(x, b, 37, 0.5f, 2.0f, cap & 1);
		CHECK(!memcmp(a, b, sizeof a) && same_bits(ma, mb), "fp8 dispatch under cap %d", cap);
	}
}
END_TEST

struct variant {
	const char *name;
	float (*amax)(const float *, size_t);
	float (*fq)(const float *, float *, size_t, float, float);
	void (*grid)(const float *, float *, size_t, float);
	float (*scale_add)(float *, size_t, float, float);
};

/* fn against the scalar reference over the whole stress set, then every length up to 70 at
 * offsets 0-3 (the tails and misaligned starts), out of place and in place. */
static void check_variant(const struct variant *v, const float *in, size_t n)
{
	float *a = malloc((n + 4) * sizeof *a), *b = malloc((n + 4) * sizeof *b);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	CHECK(same_bits(v->amax(in, n), wh_amax_n_scalar(in, n)), "%s amax", v->name);
	for (size_t s = 0; s < N_SCALES; s++) {
		float inv = 1.0f / scales[s];
		v->grid(in, a, n, inv);
		wh_quant_int8_n_scalar(in, b, n, inv);
		CHECK(!memcmp(a, b, n * sizeof *a), "%s grid values (scale %g)", v->name, scales[s]);
		float ma = v->fq(in, a, n, inv, scales[s]), mb = wh_fake_quant_int8_n_scalar(in, b, n, inv, scales[s]);
		CHECK(!memcmp(a, b, n * sizeof *a), "%s fake quantization (scale %g)", v->name, scales[s]);
		CHECK(same_bits(ma, mb), "%s fake quantization's range (scale %g): %a, want %a", v->name, scales[s], ma, mb);
	}
	memcpy(a, in, n * sizeof *a);
	memcpy(b, in, n * sizeof *b);
	float ma = v->scale_add(a, n, 0.37f, -1.25f), mb = wh_scale_add_n_scalar(b, n, 0.37f, -1.25f);
	CHECK(!memcmp(a, b, n * sizeof *a) && same_bits(ma, mb), "%s scale and add", v->name);
	/* lengths and offsets, with a sentinel after the end that no variant may write */
	uint64_t seed = 9;
	for (size_t off = 0; off < 4; off++)
		for (size_t len = 0; len <= 70; len++) {
			const float *src = in + (rng_next(&seed) % (n - 80)) + off;
			float *x = a + off, *y = b + off;
			for (int inplace = 0; inplace <= 1; inplace++) {
				for (size_t s = 0; s < N_SCALES; s++) {
					float inv = 1.0f / scales[s];
					memcpy(x, src, len * sizeof *x);
					memcpy(y, src, len * sizeof *y);
					x[len] = y[len] = 7.0f;
					float r1 = v->fq(inplace ? x : src, x, len, inv, scales[s]);
					float r2 = wh_fake_quant_int8_n_scalar(inplace ? y : src, y, len, inv, scales[s]);
					CHECK(!memcmp(x, y, (len + 1) * sizeof *x) && same_bits(r1, r2),
					      "%s fake quantization, length %zu offset %zu in place %d", v->name, len, off, inplace);
					memcpy(x, src, len * sizeof *x);
					v->grid(inplace ? x : src, x, len, inv);
					wh_quant_int8_n_scalar(src, y, len, inv);
					CHECK(!memcmp(x, y, (len + 1) * sizeof *x), "%s grid, length %zu offset %zu", v->name, len, off);
				}
				memcpy(x, src, len * sizeof *x);
				memcpy(y, src, len * sizeof *y);
				float r1 = v->scale_add(x, len, 3.0f, 0.5f), r2 = wh_scale_add_n_scalar(y, len, 3.0f, 0.5f);
				CHECK(!memcmp(x, y, (len + 1) * sizeof *x) && same_bits(r1, r2), "%s scale and add, length %zu",
				      v->name, len);
				CHECK(same_bits(v->amax(src, len), wh_amax_n_scalar(src, len)), "%s amax, length %zu offset %zu",
				      v->name, len, off);
			}
		}
	free(a);
	free(b);
}

START_TEST(avx2_matches_scalar)
{
	if (wh_cpu()->detected < WH_ISA_AVX2)
		return; /* no AVX2 on this machine: nothing to compare */
	size_t n;
	float *in = stress_inputs(&n);
	struct variant v = {"avx2", wh_amax_n_avx2, wh_fake_quant_int8_n_avx2, wh_quant_int8_n_avx2, wh_scale_add_n_avx2};
	check_variant(&v, in, n);
	free(in);
}
END_TEST

START_TEST(avx512_matches_scalar)
{
	if (wh_cpu()->detected < WH_ISA_AVX512)
		return;
	size_t n;
	float *in = stress_inputs(&n);
	struct variant v = {"avx512", wh_amax_n_avx512, wh_fake_quant_int8_n_avx512, wh_quant_int8_n_avx512,
			    wh_scale_add_n_avx512};
	check_variant(&v, in, n);
	free(in);
}
END_TEST

/* The dispatchers under every ISA cap give the scalar results. */
START_TEST(dispatch_under_isa_caps)
{
	size_t n;
	float *in = stress_inputs(&n);
	float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	for (int cap = WH_ISA_SCALAR; cap <= WH_ISA_AVX512; cap++) {
		struct wh_cpu_features cpu = wh_cpu_capped((enum wh_isa)cap);
		CHECK(same_bits(wh_amax_n(in, n, &cpu), wh_amax_n_scalar(in, n)), "amax under cap %d", cap);
		float ma = wh_fake_quant_int8_n(in, a, n, 1.0f / 0.0123f, 0.0123f, &cpu);
		float mb = wh_fake_quant_int8_n_scalar(in, b, n, 1.0f / 0.0123f, 0.0123f);
		CHECK(!memcmp(a, b, n * sizeof *a) && same_bits(ma, mb), "fake quantization under cap %d", cap);
		wh_quant_int8_n(in, a, n, 1.0f / 0.0123f, &cpu);
		wh_quant_int8_n_scalar(in, b, n, 1.0f / 0.0123f);
		CHECK(!memcmp(a, b, n * sizeof *a), "grid under cap %d", cap);
		memcpy(a, in, n * sizeof *a);
		memcpy(b, in, n * sizeof *b);
		ma = wh_scale_add_n(a, n, 0.5f, 1.0f, &cpu);
		mb = wh_scale_add_n_scalar(b, n, 0.5f, 1.0f);
		CHECK(!memcmp(a, b, n * sizeof *a) && same_bits(ma, mb), "scale and add under cap %d", cap);
	}
	/* NULL: scalar */
	CHECK(same_bits(wh_amax_n(in, n, NULL), wh_amax_n_scalar(in, n)), "amax without features");
	free(a);
	free(b);
	free(in);
}
END_TEST

int main(void)
{
	wh_cpu_init();
	Suite *s = suite_create("numfmt-quant");
	TCase *tc = tcase_create("quant");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, scalar_reference_is_the_definition);
	tcase_add_test(tc, avx2_matches_scalar);
	tcase_add_test(tc, avx512_matches_scalar);
	tcase_add_test(tc, dispatch_under_isa_caps);
	tcase_add_test(tc, fp8_variants_match_the_format);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
