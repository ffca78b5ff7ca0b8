/* ONNX Runtime's quantized contrib ops (executor/ops/qlinear-contrib*.c): the AVX2 and
 * AVX-512 row kernels of QLinearAdd / QLinearMul and of QLinearGlobalAveragePool's sums
 * against their scalar references, byte for byte (bound: 0 units; qlinear-internal.h says
 * why), ties and saturation included; and the ops under every ISA cap and thread count
 * against the definitions written out here (numpy broadcasting of the operands, a scalar
 * operand, a row operand, rows cut into chunks), so a wrong broadcast or a wrong scalar
 * reference fails as well. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/ops/qlinear-internal.h"
#include "tests/kernel-harness.h"

/* Splitmix64: a fixed-seed generator so failures reproduce. */
static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

/* the definition: round half to even, + zp, clamped */
static uint8_t def_q(float v, int32_t zp, bool s8)
{
	float r = nearbyintf(v) + (float)zp;
	float lo = s8 ? -128.f : 0.f, hi = s8 ? 127.f : 255.f;
	r = r < lo ? lo : r > hi ? hi : r;
	return s8 ? (uint8_t)(int8_t)r : (uint8_t)r;
}

static int32_t val(uint8_t b, bool s8)
{
	return s8 ? (int32_t)(int8_t)b : (int32_t)b;
}

/* parameter sets: ordinary scales, ties (ratios of 0.5: many x.5 values), ratios that
 * saturate, extreme zero points, a NaN ratio (the lowest value) */
static struct wh_qlin_bin params(int k, bool mul, bool s8)
{
	struct wh_qlin_bin p = {.mul = mul, .s8 = s8};
	int32_t lo = s8 ? -128 : 0, hi = s8 ? 127 : 255;
	switch (k) {
	case 0: p.za = s8 ? -5 : 3; p.zb = s8 ? 2 : 130; p.zc = s8 ? 9 : 121;
		p.ra = 0.031f / 0.09f; p.rb = 0.047f / 0.09f; p.rab = 0.031f * 0.047f / 0.5f; break;
	case 1: p.za = lo; p.zb = hi; p.zc = 0; p.ra = 0.5f; p.rb = 0.5f; p.rab = 0.5f / 256; break;
	case 2: p.za = 0; p.zb = lo; p.zc = hi; p.ra = 37.f; p.rb = -1e6f; p.rab = 3e5f; break;
	case 3: p.za = hi; p.zb = 0; p.zc = lo; p.ra = 1e-3f; p.rb = 2e-3f; p.rab = 1e-4f; break;
	default: p.za = 1; p.zb = 1; p.zc = 7; p.ra = NAN; p.rb = 1.f; p.rab = NAN; break;
	}
	return p;
}

START_TEST(bin_rows_simd_vs_scalar)
{
	static const size_t lens[] = {0, 1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 200, 1000};
	enum wh_isa top = wh_cpu()->detected;
	uint8_t a[1000], b[1000], y0[1064], y1[1064];
	uint64_t seed = 11;
	for (int mul = 0; mul < 2; mul++)
		for (int s8 = 0; s8 < 2; s8++)
			for (int k = 0; k < 5; k++) {
				struct wh_qlin_bin p = params(k, mul, s8);
				for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
					for (int st = 0; st < 4; st++) {
						size_t n = lens[li], sa = st & 1, sb = st >> 1;
						for (size_t i = 0; i < 1000; i++) {
							a[i] = (uint8_t)rng_next(&seed);
							b[i] = (uint8_t)rng_next(&seed);
						}
						memset(y0, 0xa5, sizeof y0);
						wh_qlin_bin_row_scalar(&p, a, sa, b, sb, y0, n);
						/* the reference against the definition */
						for (size_t i = 0; i < n; i++) {
							int32_t va = val(a[i * sa], s8) - p.za, vb = val(b[i * sb], s8) - p.zb;
							float v = mul ? (float)(va * vb) * p.rab : p.ra * (float)va + p.rb * (float)vb;
							uint8_t want = isnan(v) ? (uint8_t)(s8 ? 0x80 : 0) : def_q(v, p.zc, s8);
							ck_assert_msg(y0[i] == want, "scalar mul %d s8 %d set %d at %zu: %u, want %u",
								      mul, s8, k, i, y0[i], want);
						}
						for (int isa = WH_ISA_AVX2; isa <= (int)top; isa++) {
							memset(y1, 0xa5, sizeof y1);
							if (isa == WH_ISA_AVX512)
								wh_qlin_bin_row_avx512(&p, a, sa, b, sb, y1, n);
							else
								wh_qlin_bin_row_avx2(&p, a, sa, b, sb, y1, n);
							ck_assert_msg(!memcmp(y0, y1, n + 64),
								      "isa %d mul %d s8 %d set %d n %zu steps %zu %zu", isa, mul,
								      s8, k, n, sa, sb);
						}
					}
			}
}
END_TEST

START_TEST(sums_simd_vs_scalar)
{
	static const size_t lens[] = {0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 3136, 50000};
	enum wh_isa top = wh_cpu()->detected;
	uint8_t *x = malloc(50000);
	ck_assert_ptr_nonnull(x);
	uint64_t seed = 5;
	for (int fill = 0; fill < 3; fill++)
		for (int s8 = 0; s8 < 2; s8++)
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
				size_t n = lens[li];
				int64_t want = 0;
				for (size_t i = 0; i < n; i++) {
					x[i] = fill == 0 ? (uint8_t)rng_next(&seed) : fill == 1 ? 0xff : 0x80;
					want += val(x[i], s8);
				}
				for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++) {
					int64_t got = isa == WH_ISA_AVX512 ? wh_qlin_sum_q8_avx512(x, n, s8)
						      : isa == WH_ISA_AVX2 ? wh_qlin_sum_q8_avx2(x, n, s8)
									   : wh_qlin_sum_q8_scalar(x, n, s8);
					ck_assert_msg(got == want, "sum isa %d s8 %d n %zu fill %d: %lld, want %lld", isa, s8, n,
						      fill, (long long)got, (long long)want);
				}
			}
	free(x);
}
END_TEST

/* QLinearSoftmax's last pass, q(x * m): every ISA against the definition, with ties
 * (x.5 values), values past the 8-bit range and past 2^31, negatives and NaN */
START_TEST(quant_rows_simd_vs_scalar)
{
	enum wh_isa top = wh_cpu()->detected;
	float x[300];
	uint8_t y[364];
	uint64_t seed = 31;
	for (size_t i = 0; i < 300; i++) {
		uint64_t r = rng_next(&seed);
		x[i] = i % 7 == 0 ? (float)(int)(r % 600) * 0.5f - 150.f
		       : i % 11 == 0 ? (r & 1 ? 3e9f : -3e9f)
		       : i % 13 == 0 ? NAN
		       : (float)(r % 100000) / 997.f - 20.f;
	}
	static const size_t lens[] = {0, 1, 7, 8, 15, 16, 17, 33, 300};
	for (int s8 = 0; s8 < 2; s8++)
		for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
			for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++) {
				size_t n = lens[li];
				int32_t zp = s8 ? -3 : 17;
				float m = 1.37f;
				memset(y, 0xa5, sizeof y);
				if (isa == WH_ISA_AVX512)
					wh_qlin_quant_row_avx512(x, m, zp, s8, y, n);
				else if (isa == WH_ISA_AVX2)
					wh_qlin_quant_row_avx2(x, m, zp, s8, y, n);
				else
					wh_qlin_quant_row_scalar(x, m, zp, s8, y, n);
				for (size_t i = 0; i < n; i++) {
					uint8_t want = isnan(x[i]) ? (uint8_t)(s8 ? 0x80 : 0) : def_q(x[i] * m, zp, s8);
					ck_assert_msg(y[i] == want, "quant isa %d s8 %d n %zu at %zu (%g): %u, want %u", isa, s8, n,
						      i, (double)x[i], y[i], want);
				}
				for (size_t i = n; i < n + 64; i++)
					ck_assert(y[i] == 0xa5);
			}
}
END_TEST

static void in_zp(struct kh_harness *h, int i, bool s8, int32_t v)
{
	uint8_t b = (uint8_t)v;
	kh_in_raw(h, i, s8 ? WH_DT_INT8 : WH_DT_UINT8, 0, NULL, &b);
}

static void fill_bytes(uint8_t *p, size_t n, uint64_t *seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng_next(seed);
}

/* QLinearAdd and QLinearMul: shapes as the quantized models have them (a row bias, a
 * scalar, an attention mask, same shapes longer than a chunk) against the definition, for
 * every ISA cap and 1 and 3 threads */
START_TEST(binary_ops_vs_definition)
{
	static const int64_t shapes[][2][4] = {
		/* rank 4 each, leading 1s where fewer */
		{{1, 3, 4, 5}, {1, 3, 1, 5}},     {{1, 2, 32, 96}, {1, 1, 1, 96}}, {{1, 1, 1, 1}, {1, 2, 32, 96}},
		{{1, 2, 32, 32}, {1, 1, 1, 32}},   {{1, 16, 56, 56}, {1, 16, 56, 56}}, {{2, 1, 3, 1}, {1, 4, 1, 70}},
		{{1, 1, 40000, 1}, {1, 1, 1, 1}}, {{1, 64, 1, 1}, {1, 64, 7, 7}},
	};
	enum wh_isa top = wh_cpu()->detected;
	uint64_t seed = 77;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int mul = 0; mul < 2; mul++)
			for (int s8 = 0; s8 < 2; s8++) {
				const int64_t *da = shapes[si][0], *db = shapes[si][1];
				int64_t dy[4];
				size_t na = 1, nb = 1, ny = 1;
				for (int d = 0; d < 4; d++) {
					dy[d] = da[d] > db[d] ? da[d] : db[d];
					na *= (size_t)da[d];
					nb *= (size_t)db[d];
					ny *= (size_t)dy[d];
				}
				uint8_t *a = malloc(na), *b = malloc(nb), *want = malloc(ny);
				ck_assert(a && b && want);
				fill_bytes(a, na, &seed);
				fill_bytes(b, nb, &seed);
				float as = 0.031f, bs = 0.047f, cs = mul ? 0.5f : 0.09f;
				int32_t za = s8 ? -5 : 3, zb = s8 ? 2 : 130, zc = s8 ? 9 : 121;
				for (size_t o = 0; o < ny; o++) {
					size_t idx[4], r = o, ia = 0, ib = 0;
					for (int d = 3; d >= 0; d--) {
						idx[d] = r % (size_t)dy[d];
						r /= (size_t)dy[d];
					}
					for (int d = 0; d < 4; d++) {
						ia = ia * (size_t)da[d] + (da[d] == 1 ? 0 : idx[d]);
						ib = ib * (size_t)db[d] + (db[d] == 1 ? 0 : idx[d]);
					}
					int32_t va = val(a[ia], s8) - za, vb = val(b[ib], s8) - zb;
					float v = mul ? (float)(va * vb) * (as * bs / cs) : as / cs * (float)va + bs / cs * (float)vb;
					want[o] = def_q(v, zc, s8);
				}
				for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++)
					for (int threads = 1; threads <= 3; threads += 2) {
						struct kh_harness h;
						kh_init(&h, "com.microsoft", mul ? "QLinearMul" : "QLinearAdd", 1, 8, 1);
						kh_in_raw(&h, 0, s8 ? WH_DT_INT8 : WH_DT_UINT8, 4, da, a);
						kh_in_scalar_f32(&h, 1, as);
						in_zp(&h, 2, s8, za);
						kh_in_raw(&h, 3, s8 ? WH_DT_INT8 : WH_DT_UINT8, 4, db, b);
						kh_in_scalar_f32(&h, 4, bs);
						in_zp(&h, 5, s8, zb);
						kh_in_scalar_f32(&h, 6, cs);
						in_zp(&h, 7, s8, zc);
						h.cpu = wh_cpu_capped((enum wh_isa)isa);
						kh_run_threads(&h, threads);
						kh_expect_shape(&h.out[0], 4, dy);
						const uint8_t *got = h.out[0].data;
						for (size_t o = 0; o < ny; o++)
							ck_assert_msg(got[o] == want[o],
								      "shapes %zu mul %d s8 %d isa %d threads %d at %zu: %u, want %u",
								      si, mul, s8, isa, threads, o, got[o], want[o]);
						kh_free(&h);
					}
				free(a);
				free(b);
				free(want);
			}
}
END_TEST

/* QLinearGlobalAveragePool (channels first) against the definition, every ISA cap */
START_TEST(gap_vs_definition)
{
	static const int64_t shapes[][4] = {{1, 48, 7, 7}, {2, 5, 56, 56}, {1, 3, 1, 1}, {1, 4, 11, 13}};
	enum wh_isa top = wh_cpu()->detected;
	uint64_t seed = 99;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int s8 = 0; s8 < 2; s8++) {
			const int64_t *d = shapes[si];
			size_t img = (size_t)(d[2] * d[3]), planes = (size_t)(d[0] * d[1]);
			uint8_t *x = malloc(planes * img);
			ck_assert_ptr_nonnull(x);
			fill_bytes(x, planes * img, &seed);
			float xs = 0.02f, ys = 0.013f;
			int32_t zx = s8 ? -5 : 3, zy = s8 ? 4 : 130;
			for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++) {
				struct kh_harness h;
				kh_init(&h, "com.microsoft", "QLinearGlobalAveragePool", 1, 5, 1);
				kh_in_raw(&h, 0, s8 ? WH_DT_INT8 : WH_DT_UINT8, 4, d, x);
				kh_in_scalar_f32(&h, 1, xs);
				in_zp(&h, 2, s8, zx);
				kh_in_scalar_f32(&h, 3, ys);
				in_zp(&h, 4, s8, zy);
				h.cpu = wh_cpu_capped((enum wh_isa)isa);
				kh_run_threads(&h, 2);
				const uint8_t *got = h.out[0].data;
				for (size_t pl = 0; pl < planes; pl++) {
					int64_t sum = 0;
					for (size_t i = 0; i < img; i++)
						sum += val(x[pl * img + i], s8);
					sum -= (int64_t)zx * (int64_t)img;
					uint8_t want = def_q((float)sum * (xs / (ys * (float)img)), zy, s8);
					ck_assert_msg(got[pl] == want, "shape %zu s8 %d isa %d plane %zu: %u, want %u", si, s8,
						      isa, pl, got[pl], want);
				}
				kh_free(&h);
			}
			free(x);
		}
}
END_TEST

/* QLinearSoftmax (opset 13, last axis) against the definition (expf of the scaled
 * differences from the row's maximum, summed in order), below and above the 256 elements
 * from which the kernel takes its exponentials from a table */
START_TEST(softmax_vs_definition)
{
	static const int64_t shapes[][3] = {{2, 3, 8}, {2, 32, 32}, {1, 4, 300}};
	uint64_t seed = 123;
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
		for (int s8 = 0; s8 < 2; s8++) {
			const int64_t *d = shapes[si];
			size_t rows = (size_t)(d[0] * d[1]), len = (size_t)d[2];
			uint8_t *x = malloc(rows * len);
			float *e = malloc(len * sizeof *e);
			ck_assert(x && e);
			fill_bytes(x, rows * len, &seed);
			/* one row of equal values, one with the extremes */
			memset(x, 7, len);
			x[len] = s8 ? 0x80 : 0;
			x[len + 1] = s8 ? 0x7f : 0xff;
			float xs = 0.05f, ys = 1.0f / 256;
			int32_t zy = s8 ? -128 : 0;
			struct kh_harness h;
			kh_init(&h, "com.microsoft", "QLinearSoftmax", 1, 5, 1);
			kh_attr_int(&h, "opset", 13);
			kh_attr_int(&h, "axis", -1);
			kh_in_raw(&h, 0, s8 ? WH_DT_INT8 : WH_DT_UINT8, 3, d, x);
			kh_in_scalar_f32(&h, 1, xs);
			in_zp(&h, 2, s8, 3);
			kh_in_scalar_f32(&h, 3, ys);
			in_zp(&h, 4, s8, zy);
			kh_run_ok(&h);
			const uint8_t *got = h.out[0].data;
			for (size_t r = 0; r < rows; r++) {
				int32_t mx = INT32_MIN;
				for (size_t k = 0; k < len; k++)
					mx = val(x[r * len + k], s8) > mx ? val(x[r * len + k], s8) : mx;
				float sum = 0.f;
				for (size_t k = 0; k < len; k++) {
					e[k] = expf(xs * (float)(val(x[r * len + k], s8) - mx));
					sum += e[k];
				}
				for (size_t k = 0; k < len; k++) {
					uint8_t want = def_q(e[k] * ((1.0f / ys) / sum), zy, s8);
					ck_assert_msg(got[r * len + k] == want, "shape %zu s8 %d row %zu at %zu: %u, want %u", si,
						      s8, r, k, got[r * len + k], want);
				}
			}
			kh_free(&h);
			free(x);
			free(e);
		}
}
END_TEST

/* QGemm's dot products: every ISA against the reference, operand types mixed, zero points
 * at the extremes, lengths around the vector widths (bound 0: integer sums) */
START_TEST(dots_simd_vs_scalar)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 200, 512, 1000};
	enum wh_isa top = wh_cpu()->detected;
	uint8_t a[1000], b[1000];
	uint64_t seed = 41;
	for (int t = 0; t < 4; t++) {
		bool as8 = t & 1, bs8 = t >> 1;
		for (int z = 0; z < 3; z++) {
			int32_t za = z == 0 ? 0 : z == 1 ? (as8 ? -128 : 255) : (as8 ? 127 : 0);
			int32_t zb = z == 0 ? (bs8 ? 3 : 128) : z == 1 ? (bs8 ? 127 : 0) : (bs8 ? -128 : 255);
			for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
				size_t k = lens[li];
				fill_bytes(a, k, &seed);
				fill_bytes(b, k, &seed);
				int64_t want = 0;
				for (size_t i = 0; i < k; i++)
					want += (int64_t)(val(a[i], as8) - za) * (val(b[i], bs8) - zb);
				for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++) {
					int32_t got = isa == WH_ISA_AVX512 ? wh_qlin_dot_avx512(a, za, as8, b, zb, bs8, k)
						      : isa == WH_ISA_AVX2 ? wh_qlin_dot_avx2(a, za, as8, b, zb, bs8, k)
									   : wh_qlin_dot_scalar(a, za, as8, b, zb, bs8, k);
					ck_assert_msg(got == (int32_t)want, "dot isa %d types %d zps %d k %zu: %d, want %lld", isa,
						      t, z, k, got, (long long)want);
				}
			}
		}
	}
}
END_TEST

/* QGemm as ONNX Runtime's quantizer writes it (transB, per-column B scales and zero points,
 * an int32 bias, alpha; a quantized and a float output) against the definition, every ISA
 * cap, 1 and 3 threads */
START_TEST(qgemm_vs_definition)
{
	enum wh_isa top = wh_cpu()->detected;
	const int64_t M = 3, N = 37, K = 70;
	uint8_t A[3 * 70], B[37 * 70], bz[37];
	int32_t C[37];
	float bs[37];
	uint64_t seed = 55;
	fill_bytes(A, sizeof A, &seed);
	fill_bytes(B, sizeof B, &seed);
	for (int64_t n = 0; n < N; n++) {
		bz[n] = (uint8_t)(100 + rng_next(&seed) % 50);
		C[n] = (int32_t)(rng_next(&seed) % 6000) - 3000;
		bs[n] = 0.002f + (float)(rng_next(&seed) % 1000) * 1e-5f;
	}
	const float as = 0.02f, ys = 0.07f, alpha = 0.75f;
	const int32_t za = 3, zy = 121;
	for (int quant = 0; quant < 2; quant++)
		for (int isa = WH_ISA_SCALAR; isa <= (int)top; isa++)
			for (int threads = 1; threads <= 3; threads += 2) {
				struct kh_harness h;
				int64_t da[2] = {M, K}, db[2] = {N, K}, dn[1] = {N};
				kh_init(&h, "com.microsoft", "QGemm", 1, quant ? 9 : 7, 1);
				kh_attr_int(&h, "transB", 1);
				kh_attr_float(&h, "alpha", alpha);
				kh_in_raw(&h, 0, WH_DT_UINT8, 2, da, A);
				kh_in_scalar_f32(&h, 1, as);
				in_zp(&h, 2, false, za);
				kh_in_raw(&h, 3, WH_DT_UINT8, 2, db, B);
				kh_in_raw(&h, 4, WH_DT_FLOAT, 1, dn, bs);
				kh_in_raw(&h, 5, WH_DT_UINT8, 1, dn, bz);
				kh_in_raw(&h, 6, WH_DT_INT32, 1, dn, C);
				if (quant) {
					kh_in_scalar_f32(&h, 7, ys);
					in_zp(&h, 8, false, zy);
				}
				h.cpu = wh_cpu_capped((enum wh_isa)isa);
				kh_run_threads(&h, threads);
				for (int64_t m = 0; m < M; m++)
					for (int64_t n = 0; n < N; n++) {
						int32_t acc = C[n];
						for (int64_t k = 0; k < K; k++)
							acc += ((int32_t)A[m * K + k] - za) * ((int32_t)B[n * K + k] - bz[n]);
						float mult = alpha * as * bs[n];
						size_t o = (size_t)(m * N + n);
						if (quant) {
							uint8_t want = def_q((float)acc * (mult / ys), zy, false);
							uint8_t got = ((const uint8_t *)h.out[0].data)[o];
							ck_assert_msg(got == want, "QGemm isa %d threads %d at %zu: %u, want %u", isa,
								      threads, o, got, want);
						} else {
							float want = (float)acc * mult, got = ((const float *)h.out[0].data)[o];
							ck_assert_msg(got == want, "QGemm float isa %d threads %d at %zu: %g, want %g",
								      isa, threads, o, (double)got, (double)want);
						}
					}
				kh_free(&h);
			}
}
END_TEST

int main(void)
{
	wh_cpu_init();
	Suite *s = suite_create("qlinear");
	TCase *tc = tcase_create("kernels");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, bin_rows_simd_vs_scalar);
	tcase_add_test(tc, sums_simd_vs_scalar);
	tcase_add_test(tc, quant_rows_simd_vs_scalar);
	tcase_add_test(tc, binary_ops_vs_definition);
	tcase_add_test(tc, gap_vs_definition);
	tcase_add_test(tc, softmax_vs_definition);
	tcase_add_test(tc, dots_simd_vs_scalar);
	tcase_add_test(tc, qgemm_vs_definition);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
