/* Signal kernels: DFT against a direct O(n^2) transform for lengths that take each FFT path
 * (radix 2, mixed radix, a large prime through Bluestein), inverse and one-sided round
 * trips, dft_length padding and truncation, opset 17's axis attribute against opset 20's
 * axis input, STFT frames against per-frame DFTs (a one-second 16 kHz signal), window
 * functions and the mel filter bank on hand-derived values, bit-identical results for
 * several thread counts, and every error path. Kernels are called directly through the op
 * registry with a hand-built node (tests/kernel-harness.h). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "executor/cpu.h"
#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/threadpool.h"
#include "graph/tensor.h"
#include "tests/kernel-harness.h"

/* deterministic pseudo-random values in [-1, 1) */
static double rnd(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (double)(*s >> 11) / (double)(1ULL << 52) - 1.0;
}

/* X[k] = sum_j x[j] exp(sign * 2 pi i j k / n) in long double, phases reduced exactly */
static void naive_dft(const double *x, double *y, uint64_t n, int sign)
{
	long double *c = malloc(2 * n * sizeof *c);
	ck_assert_ptr_nonnull(c);
	for (uint64_t t = 0; t < n; t++) {
		long double a = sign * 2.0L * 3.14159265358979323846264338327950288L * (long double)t / (long double)n;
		c[2 * t] = cosl(a);
		c[2 * t + 1] = sinl(a);
	}
	for (uint64_t k = 0; k < n; k++) {
		long double re = 0, im = 0;
		for (uint64_t j = 0; j < n; j++) {
			uint64_t t = j * k % n;
			re += (long double)x[2 * j] * c[2 * t] - (long double)x[2 * j + 1] * c[2 * t + 1];
			im += (long double)x[2 * j] * c[2 * t + 1] + (long double)x[2 * j + 1] * c[2 * t];
		}
		y[2 * k] = (double)re;
		y[2 * k + 1] = (double)im;
	}
	free(c);
}

/* ---- DFT ---- */

START_TEST(dft_matches_direct_transform)
{
	/* 1, 2: trivial; 8, 4096: radix 2; 12, 400, 2310: mixed radix; 61: the largest
	 * butterfly; 97, 1031: primes through Bluestein; 2*97: Bluestein of an even length */
	static const uint64_t lens[] = {1, 2, 3, 8, 12, 61, 97, 194, 400, 1031, 2310, 4096};
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		uint64_t n = lens[li];
		double *x = malloc(2 * n * sizeof *x), *want = malloc(2 * n * sizeof *want);
		ck_assert_ptr_nonnull(x);
		ck_assert_ptr_nonnull(want);
		uint64_t seed = n;
		double mx = 0;
		for (uint64_t i = 0; i < 2 * n; i++)
			x[i] = rnd(&seed);
		for (int inv = 0; inv < 2; inv++) {
			naive_dft(x, want, n, inv ? 1 : -1);
			for (uint64_t i = 0; i < 2 * n; i++) {
				if (inv)
					want[i] /= (double)n;
				mx = fmax(mx, fabs(want[i]));
			}
			struct kh_harness h;
			kh_init(&h, "", "DFT", 20, 3, 1);
			int64_t dims[3] = {1, (int64_t)n, 2};
			kh_in_raw(&h, 0, WH_DT_DOUBLE, 3, dims, x);
			kh_omit(&h, 1);
			kh_in_scalar_i64(&h, 2, 1);
			if (inv)
				kh_attr_int(&h, "inverse", 1);
			kh_run_ok(&h);
			kh_expect_shape(&h.out[0], 3, dims);
			kh_expect_near(&h.out[0], want, 2 * n, 1e-12 * mx * sqrt((double)n) + 1e-15);
			kh_free(&h);
		}
		free(x);
		free(want);
	}
}
END_TEST

START_TEST(dft_hand_values)
{
	/* an impulse at 1 gives the roots of unity, clockwise */
	struct kh_harness h;
	kh_init(&h, "", "DFT", 17, 1, 1);
	float x[4] = {0, 1, 0, 0};
	int64_t dims[3] = {1, 4, 1};
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, x);
	kh_run_ok(&h);
	int64_t od[3] = {1, 4, 2};
	kh_expect_shape(&h.out[0], 3, od);
	double want[8] = {1, 0, 0, -1, -1, 0, 0, 1};
	kh_expect_near(&h.out[0], want, 8, 1e-7);
	kh_free(&h);

	/* dft_length truncates (first 2 of [1 2 3 4]) and zero-pads (to 8) */
	float y[4] = {1, 2, 3, 4};
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, y);
	kh_in_scalar_i32(&h, 1, 2);
	kh_run_ok(&h);
	double want2[4] = {3, 0, -1, 0};
	kh_expect_near(&h.out[0], want2, 4, 1e-6);
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, y);
	kh_in_scalar_i64(&h, 1, 8);
	kh_attr_int(&h, "onesided", 1);
	kh_run_ok(&h);
	int64_t od3[3] = {1, 5, 2};
	kh_expect_shape(&h.out[0], 3, od3);
	/* k = 0: the sum; k = 4: the alternating sum; k = 2: 1 - 3 + i(-2 + 4) */
	float *o = h.out[0].data;
	ck_assert_float_eq_tol(o[0], 10, 1e-5);
	ck_assert_float_eq_tol(o[8], -2, 1e-5);
	ck_assert_float_eq_tol(o[9], 0, 1e-5);
	ck_assert_float_eq_tol(o[4], -2, 1e-5);
	ck_assert_float_eq_tol(o[5], 2, 1e-5);
	kh_free(&h);
}
END_TEST

START_TEST(dft_onesided_round_trips)
{
	/* rfft then irfft with the original length (odd and even) gives the signal back */
	static const int64_t lens[] = {5, 8, 97, 400};
	for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
		int64_t n = lens[li];
		double *x = malloc((size_t)n * 3 * sizeof *x);
		ck_assert_ptr_nonnull(x);
		uint64_t seed = 7 + (uint64_t)n;
		for (int64_t i = 0; i < 3 * n; i++)
			x[i] = rnd(&seed);
		struct kh_harness h;
		kh_init(&h, "", "DFT", 20, 3, 1);
		int64_t dims[4] = {3, n, 1};
		kh_in_raw(&h, 0, WH_DT_DOUBLE, 3, dims, x);
		kh_omit(&h, 1);
		kh_in_scalar_i64(&h, 2, -2);
		kh_attr_int(&h, "onesided", 1);
		kh_run_ok(&h);
		int64_t od[3] = {3, n / 2 + 1, 2};
		kh_expect_shape(&h.out[0], 3, od);
		struct kh_harness g;
		kh_init(&g, "", "DFT", 20, 3, 1);
		wh_tensor_ref(&g.in[0], &h.out[0]);
		kh_in_scalar_i64(&g, 1, n);
		kh_in_scalar_i64(&g, 2, 1);
		kh_attr_int(&g, "onesided", 1);
		kh_attr_int(&g, "inverse", 1);
		kh_run_ok(&g);
		kh_expect_shape(&g.out[0], 3, dims);
		kh_expect_near(&g.out[0], x, (uint64_t)(3 * n), 1e-12);
		kh_free(&g);
		/* without dft_length the inverse assumes the even length 2 * (bins - 1) */
		kh_init(&g, "", "DFT", 20, 1, 1);
		wh_tensor_ref(&g.in[0], &h.out[0]);
		kh_attr_int(&g, "onesided", 1);
		kh_attr_int(&g, "inverse", 1);
		kh_run_ok(&g);
		int64_t ev[3] = {3, 2 * (n / 2), 1};
		kh_expect_shape(&g.out[0], 3, ev);
		kh_free(&g);
		kh_free(&h);
		free(x);
	}
}
END_TEST

START_TEST(dft_axis_attribute_and_input)
{
	/* opset 17: axis attribute defaulting to 1; opset 20: axis input defaulting to -2.
	 * dft_length 3 shows which axis was transformed. */
	float x[2 * 4 * 5] = {0};
	int64_t dims[4] = {2, 4, 5, 1};
	struct kh_harness h;
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 4, dims, x);
	kh_in_scalar_i64(&h, 1, 3);
	kh_run_ok(&h);
	int64_t a1[4] = {2, 3, 5, 2};
	kh_expect_shape(&h.out[0], 4, a1);
	kh_free(&h);

	kh_init(&h, "", "DFT", 20, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 4, dims, x);
	kh_in_scalar_i64(&h, 1, 3);
	kh_run_ok(&h);
	int64_t a2[4] = {2, 4, 3, 2};
	kh_expect_shape(&h.out[0], 4, a2);
	kh_free(&h);

	kh_init(&h, "", "DFT", 20, 3, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 4, dims, x);
	kh_in_scalar_i64(&h, 1, 3);
	kh_in_scalar_i64(&h, 2, 0);
	kh_run_ok(&h);
	int64_t a0[4] = {3, 4, 5, 2};
	kh_expect_shape(&h.out[0], 4, a0);
	kh_free(&h);
}
END_TEST

START_TEST(dft_half_precision_inputs)
{
	/* float16 and bfloat16 in and out, computed in double */
	enum wh_dtype dts[2] = {WH_DT_FLOAT16, WH_DT_BFLOAT16};
	for (int t = 0; t < 2; t++) {
		uint16_t x[6];
		float xv[6] = {1, 2, 3, 4, 5, 6};
		for (int i = 0; i < 6; i++)
			x[i] = t ? wh_f32_to_bf16(xv[i]) : wh_f32_to_f16(xv[i]);
		struct kh_harness h;
		kh_init(&h, "", "DFT", 20, 1, 1);
		int64_t dims[3] = {2, 3, 1};
		kh_in_raw(&h, 0, dts[t], 3, dims, x);
		kh_attr_int(&h, "onesided", 1);
		kh_run_ok(&h);
		ck_assert_int_eq(h.out[0].dtype, dts[t]);
		/* [1 2 3]: 6, then -1.5 + 0.866i */
		double want[8] = {6, 0, -1.5, 0.8660254, 15, 0, -1.5, 0.8660254};
		kh_expect_near(&h.out[0], want, 8, t ? 0.06 : 0.01);
		kh_free(&h);
	}
}
END_TEST

START_TEST(results_do_not_depend_on_threads)
{
	/* 64 lines of a 400-point (mixed radix) and a 401-point (Bluestein) transform, and
	 * an STFT over the same samples */
	static const int64_t lens[] = {400, 401};
	for (int li = 0; li < 2; li++) {
		int64_t n = lens[li];
		float *x = malloc((size_t)(64 * n * 2) * sizeof *x);
		ck_assert_ptr_nonnull(x);
		uint64_t seed = 3;
		for (int64_t i = 0; i < 64 * n * 2; i++)
			x[i] = (float)rnd(&seed);
		int64_t dims[3] = {64, n, 2};
		struct kh_harness a, b;
		kh_init(&a, "", "DFT", 17, 1, 1);
		kh_in_raw(&a, 0, WH_DT_FLOAT, 3, dims, x);
		kh_run_threads(&a, 1);
		kh_init(&b, "", "DFT", 17, 1, 1);
		kh_in_raw(&b, 0, WH_DT_FLOAT, 3, dims, x);
		kh_run_threads(&b, 3);
		ck_assert_int_eq(memcmp(a.out[0].data, b.out[0].data, wh_tensor_nbytes(&a.out[0])), 0);
		kh_free(&a);
		kh_free(&b);

		int64_t sd[3] = {1, 64 * n, 2};
		for (int k = 0; k < 2; k++) {
			struct kh_harness *t = k ? &b : &a;
			kh_init(t, "", "STFT", 17, 4, 1);
			kh_in_raw(t, 0, WH_DT_FLOAT, 3, sd, x);
			kh_in_scalar_i64(t, 1, n / 3);
			kh_omit(t, 2);
			kh_in_scalar_i64(t, 3, n);
			kh_attr_int(t, "onesided", 0);
			kh_run_threads(t, k ? 4 : 1);
		}
		ck_assert_uint_eq(a.out[0].count, b.out[0].count);
		ck_assert_int_eq(memcmp(a.out[0].data, b.out[0].data, wh_tensor_nbytes(&a.out[0])), 0);
		kh_free(&a);
		kh_free(&b);
		free(x);
	}
}
END_TEST

/* ---- STFT ---- */

START_TEST(stft_hand_values)
{
	/* eight ones, frames of 4 every 4 samples: each frame's spectrum is [4 0 0] */
	float x[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	int64_t dims[3] = {1, 8, 1};
	struct kh_harness h;
	kh_init(&h, "", "STFT", 17, 4, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, x);
	kh_in_scalar_i64(&h, 1, 4);
	kh_omit(&h, 2);
	kh_in_scalar_i64(&h, 3, 4);
	kh_run_ok(&h);
	int64_t od[4] = {1, 2, 3, 2};
	kh_expect_shape(&h.out[0], 4, od);
	double want[12] = {4, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0};
	kh_expect_near(&h.out[0], want, 12, 1e-6);
	kh_free(&h);

	/* a periodic Hann window [0 .5 1 .5]: bins 2, -1, 0; frame_length from the window;
	 * frames every 3 samples: 1 + (8 - 4) / 3 = 2 */
	float w[4] = {0, 0.5f, 1, 0.5f};
	int64_t wd[1] = {4};
	kh_init(&h, "", "STFT", 17, 3, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, x);
	kh_in_scalar_i64(&h, 1, 3);
	kh_in_raw(&h, 2, WH_DT_FLOAT, 1, wd, w);
	kh_run_ok(&h);
	kh_expect_shape(&h.out[0], 4, od);
	double want2[12] = {2, 0, -1, 0, 0, 0, 2, 0, -1, 0, 0, 0};
	kh_expect_near(&h.out[0], want2, 12, 1e-6);
	kh_free(&h);
}
END_TEST

START_TEST(stft_two_dim_signal_is_real)
{
	/* PyTorch's TorchScript exporter gives STFT a [batch][length] signal (ONNX Runtime reads
	 * it as real): the same bits as [batch][length][1], and the shape rule agrees */
	float x[2 * 10], w[4] = {0, 0.5f, 1, 0.5f};
	for (int i = 0; i < 20; i++)
		x[i] = kh_pat(i, 3);
	int64_t d2[2] = {2, 10}, d3[3] = {2, 10, 1}, wd[1] = {4};
	struct kh_harness a, b;
	kh_init(&a, "", "STFT", 17, 3, 1);
	kh_in_raw(&a, 0, WH_DT_FLOAT, 2, d2, x);
	kh_in_scalar_i64(&a, 1, 3);
	kh_in_raw(&a, 2, WH_DT_FLOAT, 1, wd, w);
	kh_run_ok(&a);
	kh_init(&b, "", "STFT", 17, 3, 1);
	kh_in_raw(&b, 0, WH_DT_FLOAT, 3, d3, x);
	kh_in_scalar_i64(&b, 1, 3);
	kh_in_raw(&b, 2, WH_DT_FLOAT, 1, wd, w);
	kh_run_ok(&b);
	int64_t od[4] = {2, 3, 3, 2};
	kh_expect_shape(&a.out[0], 4, od);
	kh_expect_shape(&b.out[0], 4, od);
	ck_assert_mem_eq(a.out[0].data, b.out[0].data, wh_tensor_nbytes(&b.out[0]));
	/* frame 1 of batch 1: x[13..16] windowed, bin 0 = the windowed sum */
	const float *y = a.out[0].data;
	float s0 = 0.0f;
	for (int t = 0; t < 4; t++)
		s0 += x[13 + t] * w[t];
	ck_assert(fabsf(y[((1 * 3 + 1) * 3 + 0) * 2] - s0) < 1e-6f);
	kh_free(&a);
	kh_free(&b);
}
END_TEST

START_TEST(stft_one_second_of_audio_matches_frame_dfts)
{
	/* 16000 samples at 16 kHz, 25 ms frames (400) every 10 ms (160), Hann window: each
	 * frame must equal the DFT of the windowed samples (checked on a few frames against the
	 * direct transform) */
	const int64_t len = 16000, fl = 400, step = 160;
	float *x = malloc((size_t)len * sizeof *x), *w = malloc((size_t)fl * sizeof *w);
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(w);
	uint64_t seed = 11;
	for (int64_t i = 0; i < len; i++)
		x[i] = (float)rnd(&seed);
	for (int64_t i = 0; i < fl; i++)
		w[i] = (float)(0.5 - 0.5 * cos(2 * M_PI * (double)i / (double)fl));
	struct kh_harness h;
	kh_init(&h, "", "STFT", 17, 4, 1);
	int64_t dims[3] = {1, len, 1}, wd[1] = {fl};
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, dims, x);
	kh_in_scalar_i64(&h, 1, step);
	kh_in_raw(&h, 2, WH_DT_FLOAT, 1, wd, w);
	kh_in_scalar_i64(&h, 3, fl);
	kh_run_ok(&h);
	int64_t frames = 1 + (len - fl) / step;
	int64_t od[4] = {1, frames, fl / 2 + 1, 2};
	kh_expect_shape(&h.out[0], 4, od);
	double *fr = malloc((size_t)(2 * fl) * sizeof *fr), *want = malloc((size_t)(2 * fl) * sizeof *want);
	ck_assert_ptr_nonnull(fr);
	ck_assert_ptr_nonnull(want);
	const int64_t check[3] = {0, 41, frames - 1};
	for (int c = 0; c < 3; c++) {
		int64_t f = check[c];
		for (int64_t t = 0; t < fl; t++) {
			fr[2 * t] = (double)x[f * step + t] * (double)w[t];
			fr[2 * t + 1] = 0;
		}
		naive_dft(fr, want, (uint64_t)fl, -1);
		const float *o = (const float *)h.out[0].data + f * (fl / 2 + 1) * 2;
		for (int64_t k = 0; k < 2 * (fl / 2 + 1); k++)
			ck_assert_msg(fabs((double)o[k] - want[k]) < 1e-4, "frame %lld value %lld: %g vs %g", (long long)f,
				      (long long)k, (double)o[k], want[k]);
	}
	free(fr);
	free(want);
	free(x);
	free(w);
	kh_free(&h);
}
END_TEST

/* ---- windows ---- */

START_TEST(window_values)
{
	struct kh_harness h;
	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 4);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_FLOAT);
	double hann4[4] = {0, 0.5, 1, 0.5};
	kh_expect_near(&h.out[0], hann4, 4, 1e-7);
	kh_free(&h);

	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i32(&h, 0, 5);
	kh_attr_int(&h, "periodic", 0);
	kh_attr_int(&h, "output_datatype", WH_DT_DOUBLE);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_DOUBLE);
	double hann5[5] = {0, 0.5, 1, 0.5, 0};
	kh_expect_near(&h.out[0], hann5, 5, 1e-15);
	kh_free(&h);

	kh_init(&h, "", "HammingWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 2);
	kh_run_ok(&h);
	double ham2[2] = {4.0 / 46.0, 1};
	kh_expect_near(&h.out[0], ham2, 2, 1e-7);
	kh_free(&h);

	kh_init(&h, "", "BlackmanWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 3);
	kh_attr_int(&h, "periodic", 0);
	kh_attr_int(&h, "output_datatype", WH_DT_DOUBLE);
	kh_run_ok(&h);
	double bl3[3] = {0.42 - 0.5 + 0.08, 1, 0.42 - 0.5 + 0.08};
	kh_expect_near(&h.out[0], bl3, 3, 1e-15);
	kh_free(&h);

	/* periodic Blackman of 4: 0.42 - 0.5 cos(pi k / 2) + 0.08 cos(pi k) */
	kh_init(&h, "", "BlackmanWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 4);
	kh_attr_int(&h, "output_datatype", WH_DT_FLOAT16);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_FLOAT16);
	double bl4[4] = {0, 0.34, 1, 0.34};
	kh_expect_near(&h.out[0], bl4, 4, 1e-3);
	kh_free(&h);

	/* integer outputs truncate; an empty window; a one-point symmetric window is 0/0 */
	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 4);
	kh_attr_int(&h, "output_datatype", WH_DT_INT32);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_INT32);
	ck_assert_int_eq(((int32_t *)h.out[0].data)[2], 1);
	ck_assert_int_eq(((int32_t *)h.out[0].data)[1], 0);
	kh_free(&h);
	kh_init(&h, "", "HammingWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 0);
	kh_run_ok(&h);
	ck_assert_uint_eq(h.out[0].count, 0);
	kh_free(&h);
	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 1);
	kh_attr_int(&h, "periodic", 0);
	kh_run_ok(&h);
	ck_assert(isnan(((float *)h.out[0].data)[0]));
	kh_free(&h);
}
END_TEST

/* ---- MelWeightMatrix ---- */

static void mel_inputs(struct kh_harness *h, int32_t n_mel, int32_t dft, int32_t rate, float lo, float hi)
{
	kh_init(h, "", "MelWeightMatrix", 17, 5, 1);
	kh_in_scalar_i32(h, 0, n_mel);
	kh_in_scalar_i32(h, 1, dft);
	kh_in_scalar_i32(h, 2, rate);
	kh_in_scalar_f32(h, 3, lo);
	kh_in_scalar_f32(h, 4, hi);
}

START_TEST(mel_triangles)
{
	/* 2 filters, 64-point dft at 400 Hz, 0..200 Hz: 4 mel edges at fft bins 0, 7, 15, 23
	 * ((dft + 1) * hz / rate floored: 0, 7.38, 15.23, 23.59) */
	struct kh_harness h;
	mel_inputs(&h, 2, 64, 400, 0, 200);
	kh_run_ok(&h);
	int64_t od[2] = {33, 2};
	kh_expect_shape(&h.out[0], 2, od);
	double want[66] = {0};
	for (int k = 0; k <= 7; k++)
		want[k * 2] = k / 7.0;
	for (int k = 7; k < 15; k++)
		want[k * 2] = (15 - k) / 8.0;
	for (int k = 7; k <= 15; k++)
		want[k * 2 + 1] = (k - 7) / 8.0;
	for (int k = 15; k < 23; k++)
		want[k * 2 + 1] = (23 - k) / 8.0;
	kh_expect_near(&h.out[0], want, 66, 1e-7);
	kh_free(&h);

	/* ONNX's case: filters narrower than a bin collapse to single ones */
	mel_inputs(&h, 8, 16, 8192, 0, 4096);
	kh_attr_int(&h, "output_datatype", WH_DT_DOUBLE);
	kh_run_ok(&h);
	ck_assert_int_eq(h.out[0].dtype, WH_DT_DOUBLE);
	const double *o = h.out[0].data;
	ck_assert(o[0] == 1 && o[1] == 1 && o[2] == 0 && o[8 + 2] == 1 && o[8 + 3] == 1 && o[5 * 8 + 7] == 1);
	kh_free(&h);
}
END_TEST

/* ---- errors ---- */

START_TEST(hostile_inputs_fail_cleanly)
{
	struct kh_harness h;
	float x[12] = {0};
	int64_t d3[3] = {1, 4, 3}, d2[3] = {1, 4, 2}, d1[3] = {1, 4, 1}, v4[1] = {4};

	kh_init(&h, "", "DFT", 20, 1, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d3, x);
	kh_run_fails(&h, WH_ERR_SHAPE, "last dim is 3");
	kh_free(&h);
	kh_init(&h, "", "DFT", 20, 1, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 1, v4, x);
	kh_run_fails(&h, WH_ERR_SHAPE, "rank 1");
	kh_free(&h);
	kh_init(&h, "", "DFT", 20, 3, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d2, x);
	kh_omit(&h, 1);
	kh_in_scalar_i64(&h, 2, 2);
	kh_run_fails(&h, WH_ERR_INVALID, "axis 2 is out of range");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 1, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d2, x);
	kh_attr_int(&h, "axis", -1);
	kh_run_fails(&h, WH_ERR_INVALID, "axis -1 is out of range");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 1, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d2, x);
	kh_attr_int(&h, "onesided", 1);
	kh_run_fails(&h, WH_ERR_SHAPE, "needs real input");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 1, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_attr_int(&h, "onesided", 1);
	kh_attr_int(&h, "inverse", 1);
	kh_run_fails(&h, WH_ERR_SHAPE, "needs complex input");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_i64(&h, 1, 0);
	kh_run_fails(&h, WH_ERR_INVALID, "dft_length is 0");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_raw(&h, 1, WH_DT_INT64, 1, d2 + 2, (int64_t[2]){2, 2});
	kh_run_fails(&h, WH_ERR_SHAPE, "expected a scalar");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_i64(&h, 1, INT64_MAX);
	kh_run_fails(&h, WH_ERR_SHAPE, "too large");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 1, 1);
	kh_in_raw(&h, 0, WH_DT_INT32, 3, d1, x);
	kh_run_fails(&h, WH_ERR_UNSUPPORTED, "int32");
	kh_free(&h);
	kh_init(&h, "", "DFT", 17, 1, 1);
	kh_omit(&h, 0);
	kh_run_fails(&h, WH_ERR_INVALID, "missing");
	kh_free(&h);

	/* STFT */
	kh_init(&h, "", "STFT", 17, 4, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_i64(&h, 1, 1);
	kh_omit(&h, 2);
	kh_in_scalar_i64(&h, 3, 5);
	kh_run_fails(&h, WH_ERR_SHAPE, "longer than the signal");
	kh_free(&h);
	kh_init(&h, "", "STFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_i64(&h, 1, 0);
	kh_run_fails(&h, WH_ERR_INVALID, "frame_step is 0");
	kh_free(&h);
	kh_init(&h, "", "STFT", 17, 4, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_i64(&h, 1, 1);
	kh_in_raw(&h, 2, WH_DT_FLOAT, 1, (int64_t[1]){3}, x);
	kh_in_scalar_i64(&h, 3, 2);
	kh_run_fails(&h, WH_ERR_SHAPE, "must agree");
	kh_free(&h);
	kh_init(&h, "", "STFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 1, d1 + 1, x);
	kh_in_scalar_i64(&h, 1, 1);
	kh_run_fails(&h, WH_ERR_SHAPE, "expected [batch][length][1 or 2] or [batch][length]");
	kh_free(&h);
	kh_init(&h, "", "STFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d3, x);
	kh_in_scalar_i64(&h, 1, 1);
	kh_run_fails(&h, WH_ERR_SHAPE, "signal has shape 1x4x3");
	kh_free(&h);
	kh_init(&h, "", "STFT", 17, 2, 1);
	kh_in_raw(&h, 0, WH_DT_FLOAT, 3, d1, x);
	kh_in_scalar_f32(&h, 1, 1);
	kh_run_fails(&h, WH_ERR_INVALID, "frame_step has type float32");
	kh_free(&h);

	/* windows */
	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, -1);
	kh_run_fails(&h, WH_ERR_INVALID, "size is -1");
	kh_free(&h);
	kh_init(&h, "", "HannWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, 4);
	kh_attr_int(&h, "output_datatype", WH_DT_STRING);
	kh_run_fails(&h, WH_ERR_INVALID, "not a numeric type");
	kh_free(&h);
	kh_init(&h, "", "BlackmanWindow", 17, 1, 1);
	kh_in_scalar_i64(&h, 0, INT64_MAX);
	kh_run_fails(&h, WH_ERR_SHAPE, "too large");
	kh_free(&h);

	/* mel */
	mel_inputs(&h, 8, 16, 8000, 0, 6000);
	kh_run_fails(&h, WH_ERR_INVALID, "maps past the last");
	kh_free(&h);
	mel_inputs(&h, 8, 16, 8000, 300, 100);
	kh_run_fails(&h, WH_ERR_INVALID, "not an increasing range");
	kh_free(&h);
	mel_inputs(&h, 0, 16, 8000, 0, 100);
	kh_run_fails(&h, WH_ERR_INVALID, "must be positive");
	kh_free(&h);
	mel_inputs(&h, 8, 16, 8000, 0, 100);
	kh_omit(&h, 4);
	kh_run_fails(&h, WH_ERR_INVALID, "upper_edge_hertz is missing");
	kh_free(&h);
}
END_TEST

static Suite *signal_suite(void)
{
	Suite *s = suite_create("signal");
	TCase *tc = tcase_create("ops");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, dft_matches_direct_transform);
	tcase_add_test(tc, dft_hand_values);
	tcase_add_test(tc, dft_onesided_round_trips);
	tcase_add_test(tc, dft_axis_attribute_and_input);
	tcase_add_test(tc, dft_half_precision_inputs);
	tcase_add_test(tc, results_do_not_depend_on_threads);
	tcase_add_test(tc, stft_hand_values);
	tcase_add_test(tc, stft_two_dim_signal_is_real);
	tcase_add_test(tc, stft_one_second_of_audio_matches_frame_dfts);
	tcase_add_test(tc, window_values);
	tcase_add_test(tc, mel_triangles);
	tcase_add_test(tc, hostile_inputs_fail_cleanly);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(signal_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
