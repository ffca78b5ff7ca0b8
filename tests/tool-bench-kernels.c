/* Micro-benchmark of the convolution and GEMM drivers on the heaviest shapes of PaddleOCR
 * PP-OCRv4 det (1x3x640x640) and rec (1x3x48x320) and of the corpus's CNNs.
 *
 *   tool-bench-kernels [--threads N] [--iters N] [--filter SUBSTR] [--algo auto|gemm|dw]
 *
 * Also the corpus's depthwise shapes (mnasnet0_35, efficientnet_b0_w05, repvit_s, convnext,
 * mobilevit_s, mobilenet_v3_small: filter "dw"); --algo forces the
 * Conv algorithm (wh_conv_f32_algo: the GEMM over planes or the direct depthwise kernels).
 * Prints per shape the median time of N runs and GFLOP/s (2 flops per multiply-add);
 * WHITTLE_ISA caps the ISA as everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/cpu.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/gemm-internal.h"
#include "executor/threadpool.h"
#include "graph/os.h"

struct bench {
	const char *name;
	int kind; /* 0 conv, 1 convtranspose, 2 matmul */
	int64_t C, M, G, H, W, k, s, pad; /* matmul: M=M, C=K, W=N */
};

static const struct bench benches[] = {
	/* the depthwise convolutions of mnasnet0_35 and efficientnet_b0_w05 (fixtures/corpus), their stems */
	{"stem 3x3 s2 3->16 @224", 0, 3, 16, 1, 224, 224, 3, 2, 1},
	{"dw3 s1 16 @112", 0, 16, 16, 16, 112, 112, 3, 1, 1},
	{"dw3 s2 24 @112", 0, 24, 24, 24, 112, 112, 3, 2, 1},
	{"dw3 s2 48 @112", 0, 48, 48, 48, 112, 112, 3, 2, 1},
	{"dw3 s1 24 @56", 0, 24, 24, 24, 56, 56, 3, 1, 1},
	{"dw5 s2 24 @56", 0, 24, 24, 24, 56, 56, 5, 2, 2},
	{"dw5 s2 96 @56", 0, 96, 96, 96, 56, 56, 5, 2, 2},
	{"dw5 s1 48 @28", 0, 48, 48, 48, 28, 28, 5, 1, 2},
	{"dw5 s2 96 @28", 0, 96, 96, 96, 28, 28, 5, 2, 2},
	{"dw3 s2 144 @28", 0, 144, 144, 144, 28, 28, 3, 2, 1},
	{"dw5 s1 192 @14", 0, 192, 192, 192, 14, 14, 5, 1, 2},
	{"dw3 s1 192 @14", 0, 192, 192, 192, 14, 14, 3, 1, 1},
	{"dw3 s1 240 @14", 0, 240, 240, 240, 14, 14, 3, 1, 1},
	{"dw5 s1 240 @14", 0, 240, 240, 240, 14, 14, 5, 1, 2},
	{"dw5 s1 336 @14", 0, 336, 336, 336, 14, 14, 5, 1, 2},
	{"dw5 s2 192 @14", 0, 192, 192, 192, 14, 14, 5, 2, 2},
	{"dw5 s2 336 @14", 0, 336, 336, 336, 14, 14, 5, 2, 2},
	{"dw5 s1 384 @7", 0, 384, 384, 384, 7, 7, 5, 1, 2},
	{"dw3 s1 384 @7", 0, 384, 384, 384, 7, 7, 3, 1, 1},
	{"dw5 s1 576 @7", 0, 576, 576, 576, 7, 7, 5, 1, 2},
	{"dw3 s1 576 @7", 0, 576, 576, 576, 7, 7, 3, 1, 1},
	/* the other corpus CNNs' depthwise convolutions (issue 26): repvit_s, convnext_pico and
	 * convnextv2_s (7x7), edgenext_s, mobilevit_s, mobilenet_v3_small */
	{"rv dw3 s1 16 @56", 0, 16, 16, 16, 56, 56, 3, 1, 1},
	{"rv dw3 s1 32 @28", 0, 32, 32, 32, 28, 28, 3, 1, 1},
	{"rv dw3 s2 32 @28", 0, 32, 32, 32, 28, 28, 3, 2, 1},
	{"rv dw3 s1 48 @14", 0, 48, 48, 48, 14, 14, 3, 1, 1},
	{"rv dw3 s1 96 @7", 0, 96, 96, 96, 7, 7, 3, 1, 1},
	{"cn dw7 s1 16 @56", 0, 16, 16, 16, 56, 56, 7, 1, 3},
	{"cn dw7 s1 32 @28", 0, 32, 32, 32, 28, 28, 7, 1, 3},
	{"cn dw7 s1 64 @14", 0, 64, 64, 64, 14, 14, 7, 1, 3},
	{"cn dw7 s1 128 @7", 0, 128, 128, 128, 7, 7, 7, 1, 3},
	{"mv dw3 s1 16 @128", 0, 16, 16, 16, 128, 128, 3, 1, 1},
	{"mv dw3 s2 16 @128", 0, 16, 16, 16, 128, 128, 3, 2, 1},
	{"mv dw3 s1 24 @64", 0, 24, 24, 24, 64, 64, 3, 1, 1},
	{"m3 dw3 s2 8 @112", 0, 8, 8, 8, 112, 112, 3, 2, 1},
	{"m3 dw3 s2 40 @56", 0, 40, 40, 40, 56, 56, 3, 2, 1},
	{"m3 dw5 s2 48 @28", 0, 48, 48, 48, 28, 28, 5, 2, 2},
	{"m3 dw5 s1 120 @14", 0, 120, 120, 120, 14, 14, 5, 1, 2},
	{"m3 dw5 s1 288 @7", 0, 288, 288, 288, 7, 7, 5, 1, 2},
	{"det conv3x3 s2 3->16 @640", 0, 3, 16, 1, 640, 640, 3, 2, 1},
	{"det dw3x3 16 @320", 0, 16, 16, 16, 320, 320, 3, 1, 1},
	{"det 1x1 16->32 @320", 0, 16, 32, 1, 320, 320, 1, 1, 0},
	{"det dw3x3 s2 32 @320", 0, 32, 32, 32, 320, 320, 3, 2, 1},
	{"det 1x1 48->48 @160", 0, 48, 48, 1, 160, 160, 1, 1, 0},
	{"det 1x1 96->96 @80", 0, 96, 96, 1, 80, 80, 1, 1, 0},
	{"det 1x1 192->192 @40", 0, 192, 192, 1, 40, 40, 1, 1, 0},
	{"det dw5x5 192 @40", 0, 192, 192, 192, 40, 40, 5, 1, 2},
	{"det 1x1 384->384 @20", 0, 384, 384, 1, 20, 20, 1, 1, 0},
	{"det 1x1 12->96 @160", 0, 12, 96, 1, 160, 160, 1, 1, 0},
	{"det conv3x3 96->24 @160", 0, 96, 24, 1, 160, 160, 3, 1, 1},
	{"det conv3x3 96->24 @80", 0, 96, 24, 1, 80, 80, 3, 1, 1},
	{"det conv3x3 96->24 @40", 0, 96, 24, 1, 40, 40, 3, 1, 1},
	{"det convT2x2 24->24 @160", 1, 24, 24, 1, 160, 160, 2, 2, 0},
	{"det convT2x2 24->1 @320", 1, 24, 1, 1, 320, 320, 2, 2, 0},
	{"rec 1x1 480->480 6x80", 0, 480, 480, 1, 6, 80, 1, 1, 0},
	{"rec 1x1 240->240 12x80", 0, 240, 240, 1, 12, 80, 1, 1, 0},
	{"rec dw5x5 240 12x80", 0, 240, 240, 240, 12, 80, 5, 1, 2},
	{"rec matmul 40x120 * 120x6625", 2, 120, 40, 1, 1, 6625, 0, 0, 0},
	/* squeezenet1_1 and mnasnet0_35 (corpus) */
	{"sq stem3x3 s2 3->64 @224", 0, 3, 64, 1, 224, 224, 3, 2, 0},
	{"sq 1x1 64->16 @55", 0, 64, 16, 1, 55, 55, 1, 1, 0},
	{"sq 1x1 16->64 @55", 0, 16, 64, 1, 55, 55, 1, 1, 0},
	{"sq 3x3 16->64 @55", 0, 16, 64, 1, 55, 55, 3, 1, 1},
	{"sq 1x1 128->32 @27", 0, 128, 32, 1, 27, 27, 1, 1, 0},
	{"sq 1x1 32->128 @27", 0, 32, 128, 1, 27, 27, 1, 1, 0},
	{"sq 3x3 32->128 @27", 0, 32, 128, 1, 27, 27, 3, 1, 1},
	{"sq 1x1 384->48 @13", 0, 384, 48, 1, 13, 13, 1, 1, 0},
	{"sq 1x1 48->192 @13", 0, 48, 192, 1, 13, 13, 1, 1, 0},
	{"sq 3x3 48->192 @13", 0, 48, 192, 1, 13, 13, 3, 1, 1},
	{"sq 1x1 512->64 @13", 0, 512, 64, 1, 13, 13, 1, 1, 0},
	{"sq 3x3 64->256 @13", 0, 64, 256, 1, 13, 13, 3, 1, 1},
	{"mn 1x1 8->24 @112", 0, 8, 24, 1, 112, 112, 1, 1, 0},
	{"mn 1x1 16->8 @112", 0, 16, 8, 1, 112, 112, 1, 1, 0},
	{"mn 1x1 24->8 @56", 0, 24, 8, 1, 56, 56, 1, 1, 0},
	/* the CNN stems of the corpus (3 input channels, K = 27 or 48) */
	{"stem mn 3x3 s2 3->16 @224", 0, 3, 16, 1, 224, 224, 3, 2, 1},
	{"stem cn 4x4 s4 3->16 @224", 0, 3, 16, 1, 224, 224, 4, 4, 0},
	{"mn 1x1 8->24 @56", 0, 8, 24, 1, 56, 56, 1, 1, 0},
	{"mn 1x1 32->192 @14", 0, 32, 192, 1, 14, 14, 1, 1, 0},
	{"mn 1x1 64->384 @7", 0, 64, 384, 1, 7, 7, 1, 1, 0},
	{"mn 1x1 112->1280 @7", 0, 112, 1280, 1, 7, 7, 1, 1, 0},
	/* the plain ResNet stem (resnet18_s, resnet34_s: K = 147) and a regular 3x3 */
	{"rn stem7x7 s2 3->64 @224", 0, 3, 64, 1, 224, 224, 7, 2, 3},
	{"rn 3x3 64->64 @56", 0, 64, 64, 1, 56, 56, 3, 1, 1},
	/* HRNet's two stride-2 stems (hrnet_s) */
	{"hr stem3x3 s2 3->64 @224", 0, 3, 64, 1, 224, 224, 3, 2, 1},
	{"hr 3x3 s2 64->64 @112", 0, 64, 64, 1, 112, 112, 3, 2, 1},
	/* efficientnet's and regnet's 3x3 stride-2 stems with 32 or 16 output channels */
	{"stem 3x3 s2 3->32 @224", 0, 3, 32, 1, 224, 224, 3, 2, 1},
	/* scripts/gen-quant-models.py's float CNN (quant-cnn-f32, 224x224) */
	{"qc 3x3 32->64 @112", 0, 32, 64, 1, 112, 112, 3, 1, 1},
	{"qc 3x3 s2 64->64 @112", 0, 64, 64, 1, 112, 112, 3, 2, 1},
	{"qc 1x1 64->128 @56", 0, 64, 128, 1, 56, 56, 1, 1, 0},
	{"qc 3x3 s2 128->128 @56", 0, 128, 128, 1, 56, 56, 3, 2, 1},
	{"qc 1x1 128->256 @28", 0, 128, 256, 1, 28, 28, 1, 1, 0},
};

/* CPU time of the whole process: on a loaded machine wall time says little. */
static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int threads = 2, iters = 20;
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
				fprintf(stderr, "tool-bench-kernels: --algo is auto, gemm or dw, not '%s'\n", a);
				return 2;
			}
		} else {
			fprintf(stderr, "usage: tool-bench-kernels [--threads N] [--iters N] [--filter SUBSTR] "
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
		size_t nx, nw, ny;
		double flops;
		struct wh_conv_shape s = {0};
		if (b->kind == 2) {
			nx = (size_t)(b->M * b->C), nw = (size_t)(b->C * b->W), ny = (size_t)(b->M * b->W);
			flops = 2.0 * b->M * b->C * b->W;
		} else {
			s.nsp = 2, s.N = 1, s.C = b->C, s.M = b->M, s.G = b->G;
			for (int d = 0; d < 2; d++) {
				s.in[d] = d ? b->W : b->H, s.k[d] = b->k, s.stride[d] = b->s, s.dil[d] = 1;
				s.pad0[d] = s.pad1[d] = b->pad;
				s.out[d] = b->kind == 0 ? (s.in[d] + 2 * b->pad - b->k) / b->s + 1
							: (s.in[d] - 1) * b->s + b->k - 2 * b->pad;
			}
			nx = (size_t)(b->C * b->H * b->W);
			nw = (size_t)(b->M / b->G * b->C * b->k * b->k);
			ny = (size_t)(b->M * s.out[0] * s.out[1]);
			flops = b->kind == 0 ? 2.0 * (double)ny * (double)(b->C / b->G * b->k * b->k)
					     : 2.0 * (double)nx * (double)(b->M * b->k * b->k);
		}
		float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float));
		float *bias = malloc((size_t)b->M * sizeof(float)), *y = malloc(ny * sizeof(float));
		for (size_t i = 0; i < nx; i++)
			x[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
		for (size_t i = 0; i < nw; i++)
			w[i] = (float)((i * 104729) % 1000) * 1e-3f - 0.5f;
		for (int64_t i = 0; i < b->M; i++)
			bias[i] = 0.01f * (float)i;
		double *t = malloc((size_t)iters * sizeof(double)), *tc = malloc((size_t)iters * sizeof(double));
		for (int it = -1; it < iters; it++) {
			double t0 = wh_os_now_s(), c0 = cpu_s();
			enum wh_status st;
			if (b->kind == 0)
				st = wh_conv_f32_algo(cpu, pool, &s, x, w, bias, y, algo);
			else if (b->kind == 1)
				st = wh_convt_f32(cpu, pool, &s, x, w, bias, y);
			else {
				struct wh_sgemm_desc d = {.M = (size_t)b->M, .N = (size_t)b->W, .K = (size_t)b->C,
							  .batch = 1, .a = x, .rsa = (size_t)b->C, .csa = 1, .b = w,
							  .ldb = (size_t)b->W, .c = y, .ldc = (size_t)b->W};
				st = wh_sgemm_run(cpu, pool, &d);
			}
			if (st != WH_OK) {
				fprintf(stderr, "%s: %s\n", b->name, wh_error_message());
				return 1;
			}
			if (it >= 0) {
				t[it] = wh_os_now_s() - t0;
				tc[it] = cpu_s() - c0;
			}
		}
		qsort(t, (size_t)iters, sizeof(double), cmp_d);
		qsort(tc, (size_t)iters, sizeof(double), cmp_d);
		double med = t[iters / 2];
		total += med;
		printf("%-30s %8.3f ms (min %8.3f) %7.1f GFLOP/s  cpu %8.3f ms %7.1f GFLOP/s/thread\n", b->name,
		       med * 1e3, t[0] * 1e3, flops / med * 1e-9, tc[iters / 2] * 1e3, flops / tc[iters / 2] * 1e-9);
		free(t);
		free(tc);
		free(x);
		free(w);
		free(bias);
		free(y);
	}
	printf("total %.3f ms\n", total * 1e3);
	wh_threadpool_destroy(pool);
	return 0;
}
