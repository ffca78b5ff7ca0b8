/* Micro-benchmark of the depthwise convolutions of mnasnet0_35 and efficientnet_b0_w05
 * (fixtures/corpus) and their stems, through wh_conv_f32_algo.
 *
 *   tool-bench-dw [--threads N] [--iters N] [--filter SUBSTR] [--algo auto|gemm|dw]
 *
 * Prints per shape the median and minimum time of N runs and GFLOP/s (2 flops per
 * multiply-add) of the median; WHITTLE_ISA caps the ISA as everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/cpu.h"
#include "executor/ops/conv-internal.h"
#include "executor/threadpool.h"
#include "graph/os.h"

struct bench {
	const char *name;
	int64_t C, G, H, W, k, s, M; /* M: output channels (C for depthwise) */
};

static const struct bench benches[] = {
	{"stem 3x3 s2 3->16 @224", 3, 1, 224, 224, 3, 2, 16},
	{"dw3 s1 16 @112", 16, 16, 112, 112, 3, 1, 16},
	{"dw3 s2 24 @112", 24, 24, 112, 112, 3, 2, 24},
	{"dw3 s2 48 @112", 48, 48, 112, 112, 3, 2, 48},
	{"dw3 s1 24 @56", 24, 24, 56, 56, 3, 1, 24},
	{"dw5 s2 24 @56", 24, 24, 56, 56, 5, 2, 24},
	{"dw5 s2 96 @56", 96, 96, 56, 56, 5, 2, 96},
	{"dw5 s1 48 @28", 48, 48, 28, 28, 5, 1, 48},
	{"dw5 s2 96 @28", 96, 96, 28, 28, 5, 2, 96},
	{"dw3 s2 144 @28", 144, 144, 28, 28, 3, 2, 144},
	{"dw5 s1 192 @14", 192, 192, 14, 14, 5, 1, 192},
	{"dw3 s1 192 @14", 192, 192, 14, 14, 3, 1, 192},
	{"dw3 s1 240 @14", 240, 240, 14, 14, 3, 1, 240},
	{"dw5 s1 240 @14", 240, 240, 14, 14, 5, 1, 240},
	{"dw5 s1 336 @14", 336, 336, 14, 14, 5, 1, 336},
	{"dw5 s2 192 @14", 192, 192, 14, 14, 5, 2, 192},
	{"dw5 s2 336 @14", 336, 336, 14, 14, 5, 2, 336},
	{"dw5 s1 384 @7", 384, 384, 7, 7, 5, 1, 384},
	{"dw3 s1 384 @7", 384, 384, 7, 7, 3, 1, 384},
	{"dw5 s1 576 @7", 576, 576, 7, 7, 5, 1, 576},
	{"dw3 s1 576 @7", 576, 576, 7, 7, 3, 1, 576},
};

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int threads = 2, iters = 200;
	const char *filter = NULL;
	enum wh_conv_algo algo = WH_CONV_AUTO;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
			iters = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
			filter = argv[++i];
		else if (!strcmp(argv[i], "--algo") && i + 1 < argc) {
			const char *a = argv[++i];
			if (!strcmp(a, "auto"))
				algo = WH_CONV_AUTO;
			else if (!strcmp(a, "gemm"))
				algo = WH_CONV_GEMM;
			else if (!strcmp(a, "dw"))
				algo = WH_CONV_DIRECT_DW;
			else {
				fprintf(stderr, "tool-bench-dw: --algo is auto, gemm or dw, not '%s'\n", a);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: tool-bench-dw [--threads N] [--iters N] [--filter SUBSTR] "
					"[--algo auto|gemm|dw]\n");
			return 2;
		}
	}
	if (iters < 1)
		iters = 1;
	wh_cpu_init();
	const struct wh_cpu_features *cpu = wh_cpu();
	struct wh_threadpool *pool = NULL;
	if (wh_threadpool_create(threads, &pool) != WH_OK)
		return 1;
	printf("isa %s, %d threads\n", wh_isa_name(cpu->isa), threads);
	double total = 0;
	for (size_t bi = 0; bi < sizeof benches / sizeof benches[0]; bi++) {
		const struct bench *b = &benches[bi];
		if (filter && !strstr(b->name, filter))
			continue;
		struct wh_conv_shape s = {0};
		s.nsp = 2, s.N = 1, s.C = b->C, s.M = b->M, s.G = b->G;
		for (int d = 0; d < 2; d++) {
			s.in[d] = d ? b->W : b->H, s.k[d] = b->k, s.stride[d] = b->s, s.dil[d] = 1;
			s.pad0[d] = s.pad1[d] = b->k / 2;
			s.out[d] = (s.in[d] + 2 * (b->k / 2) - b->k) / b->s + 1;
		}
		size_t nx = (size_t)(b->C * b->H * b->W), nw = (size_t)(b->M * (b->C / b->G) * b->k * b->k);
		size_t ny = (size_t)(b->M * s.out[0] * s.out[1]);
		double flops = 2.0 * (double)ny * (double)(b->C / b->G * b->k * b->k);
		float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float));
		float *bias = malloc((size_t)b->M * sizeof(float)), *y = malloc(ny * sizeof(float));
		double *t = malloc((size_t)iters * sizeof(double));
		if (!x || !w || !bias || !y || !t)
			return 1;
		for (size_t i = 0; i < nx; i++)
			x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
		for (size_t i = 0; i < nw; i++)
			w[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
		for (int64_t i = 0; i < b->M; i++)
			bias[i] = 0.01f * (float)i;
		for (int it = -3; it < iters; it++) {
			double t0 = wh_os_now_s();
			if (wh_conv_f32_algo(cpu, pool, &s, x, w, bias, y, algo) != WH_OK) {
				fprintf(stderr, "%s: %s\n", b->name, wh_error_message());
				return 1;
			}
			if (it >= 0)
				t[it] = wh_os_now_s() - t0;
		}
		qsort(t, (size_t)iters, sizeof(double), cmp_d);
		double med = t[iters / 2];
		total += med;
		printf("%-26s %8.4f ms (min %8.4f) %7.1f GFLOP/s\n", b->name, med * 1e3, t[0] * 1e3,
		       flops / med * 1e-9);
		free(t);
		free(x);
		free(w);
		free(bias);
		free(y);
	}
	printf("total %.3f ms\n", total * 1e3);
	wh_threadpool_destroy(pool);
	return 0;
}
