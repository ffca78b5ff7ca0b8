/* The int8 emulation's bulk loops (executor/numfmt-quant.h): the scalar reference against an
 * independent definition (round half to even with rintf, saturation, NaN to 0, every zero
 * +0; the range as the largest finite |x|), and every SIMD variant and dispatch against the
 * scalar reference bit for bit, on specials, every rounding midpoint of the int8 grid, the
 * saturation boundaries, a sweep of float bit patterns and random values, at every tail
 * length and misalignment, in place and not. */
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
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
