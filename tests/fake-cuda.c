/* A stand-in for libwhittle-cuda.so that runs on the host (tests/e2e-gpu-host.sh): the same
 * table (executor/cuda/whittle-cuda.h) with "device" memory from malloc and a few ops (Relu,
 * Add, Mul, Sub of equal shapes or a scalar, MatMul of 2-D matrices, Transpose of 2-D, and
 * Softmax declining so that the CPU takes it, ConstantOfShape of a float value through the
 * attr_scalar callback), so that the runtime's side of the backend (placement,
 * uploads, downloads at CPU segments, views of device buffers, weights uploaded once, the
 * rounding of fp16 layers) is tested where there is no GPU. MatMul has tactics like the
 * module's (ABI 3): "lt-a1-t1-s1-k1-red-none" (the default, a double sum), a split-K one
 * (four float chunks) and, for fp16 layers with allow_reduced, an fp16-accumulating one
 * (the running sum rounded to fp16 at every step), so that the builder, replays and block
 * lists are tested here too; WHITTLE_FAKE_CUDA_IDENT names the "device" (default "fake
 * GPU;sm_00;cublasLt 0;cudnn 0"). ABI 4: to16 makes a weight's 16-bit copy, and MatMul
 * reads its B operand from that copy (whcu_tensor.half) when it has one, so that a wrong
 * copy shows as a wrong result. Every allocation is counted: WHITTLE_FAKE_CUDA_LOG=FILE gets
 * "allocs N frees N uploads N bytes_up N" and, on a second line, "to16 N half_reads N
 * fused_rounds N captures N" at unload (the binary ops round an fp16/bf16 layer's output themselves,
 * whcu_node.out_rounded), and on a third "warms N" (ABI 5: whittle's background start warms the
 * module up once). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/cuda/whittle-cuda.h"

static long n_alloc, n_free, n_upload, n_to16, n_half_reads, n_fused;
static unsigned long long bytes_up;
static char err[256];

static int init(int device, char *e, size_t len)
{
	/* WHITTLE_FAKE_CUDA_INIT_MS=N: a start that takes N ms, as a real context does */
	const char *ms = getenv("WHITTLE_FAKE_CUDA_INIT_MS");
	if (ms && atoi(ms) > 0)
		usleep((useconds_t)atoi(ms) * 1000);
	if (device != 0) {
		snprintf(e, len, "no GPU %d: this machine has 1 (give --device cuda:0)", device);
		return -1;
	}
	return 0;
}

/* ABI 5: the device count, at once */
static int probe(int device, char *e, size_t len)
{
	if (device != 0) {
		snprintf(e, len, "no GPU %d: this machine has 1 (give --device cuda:0)", device);
		return -1;
	}
	return 0;
}

static void shutdown_(void) {}
static void info(char *buf, size_t len) { snprintf(buf, len, "fake GPU (host memory, tests/fake-cuda.c)"); }
static const char *last_error(void) { return err; }

static void *alloc_(size_t bytes)
{
	n_alloc++;
	return malloc(bytes ? bytes : 16);
}

static void free_(void *p)
{
	if (p) {
		n_free++;
		/* poison: a use after free shows as NaN */
		free(p);
	}
}

static int upload(void *d, const void *s, size_t n)
{
	n_upload++;
	bytes_up += n;
	memcpy(d, s, n);
	return 0;
}

static int download(void *d, const void *s, size_t n)
{
	memcpy(d, s, n);
	return 0;
}

static int sync_(void) { return 0; }

static uint64_t count(const struct whcu_tensor *t) { return whcu_count(t); }

static const char *const ops[] = {"Relu", "Add", "Mul", "Sub", "MatMul", "Transpose", "Softmax", "ConstantOfShape", NULL};

static int supports(const struct whcu_node *n, uint32_t *mask)
{
	*mask = !strcmp(n->op_type, "ConstantOfShape") ? 1u : 0u; /* the shape on the host */
	for (int i = 0; ops[i]; i++)
		if (!strcmp(n->op_type, ops[i]))
			return 1;
	return 0;
}

static int out(const struct whcu_node *n, uint32_t k, int32_t rank, const int64_t *dims)
{
	struct whcu_tensor *t = &n->out[k];
	t->dtype = WHCU_FLOAT;
	t->rank = rank;
	for (int32_t d = 0; d < rank; d++)
		t->dims[d] = dims[d];
	t->data = alloc_(count(t) * sizeof(float));
	return t->data ? 0 : -1;
}

static int round_(float *dst, const float *src, size_t n, int32_t prec);

static int run(const struct whcu_node *n)
{
	const struct whcu_tensor *a = &n->in[0];
	if (!strcmp(n->op_type, "ConstantOfShape")) {
		float v = 0;
		int32_t dt = n->attr_scalar(n->node, "value", &v);
		if ((dt != 0 && dt != WHCU_FLOAT) || !a->host || a->dtype != WHCU_INT64 || a->rank != 1 || a->dims[0] > WHCU_MAX_RANK)
			return 1;
		if (out(n, 0, (int32_t)a->dims[0], a->host))
			return -1;
		float *y = n->out[0].data;
		for (uint64_t i = 0; i < count(&n->out[0]); i++)
			y[i] = v;
		return 0;
	}
	for (uint32_t k = 0; k < n->n_in; k++)
		if (n->in[k].dtype && n->in[k].dtype != WHCU_FLOAT)
			return 1;
	if (!strcmp(n->op_type, "Softmax"))
		return 1; /* declined: the CPU runs it */
	if (!strcmp(n->op_type, "Relu")) {
		if (out(n, 0, a->rank, a->dims))
			return -1;
		const float *x = a->data;
		float *y = n->out[0].data;
		for (uint64_t i = 0; i < count(a); i++)
			y[i] = x[i] > 0 ? x[i] : 0;
		return 0;
	}
	if (!strcmp(n->op_type, "Transpose")) {
		if (a->rank != 2)
			return 1;
		int64_t d[2] = {a->dims[1], a->dims[0]};
		if (out(n, 0, 2, d))
			return -1;
		const float *x = a->data;
		float *y = n->out[0].data;
		for (int64_t i = 0; i < d[0]; i++)
			for (int64_t j = 0; j < d[1]; j++)
				y[i * d[1] + j] = x[j * d[0] + i];
		return 0;
	}
	const struct whcu_tensor *b = &n->in[1];
	if (!strcmp(n->op_type, "MatMul")) {
		if (a->rank != 2 || b->rank != 2 || a->dims[1] != b->dims[0])
			return 1;
		static const char *const tac[] = {"lt-a1-t1-s1-k1-red-none", "lt-a1-t1-s1-k4-red-inplace", "lt-a2-t1-s1-k1-red-none-acc16"};
		static const char *const notes[] = {"fake: one double sum; fp32 accumulation", "fake: split-K 4, inplace reduction; fp32 accumulation",
						    "fake: fp16 accumulation (reduced-precision reduction)"};
		static const uint32_t flags[] = {WHCU_TAC_DEFAULT, WHCU_TAC_SPLITK, WHCU_TAC_FP16ACC};
		int ntac = n->prec == WHCU_PREC_FP16 && n->allow_reduced ? 3 : 2, which = 0;
		if (n->tactic) {
			which = -1;
			for (int t = 0; t < ntac; t++)
				if (!strcmp(n->tactic, tac[t]))
					which = t;
			if (which < 0) {
				snprintf(err, sizeof err, "tactic '%s' is not one this fake GPU offers for this layer (rebuild the tactic replay here)", n->tactic);
				return -1;
			}
		}
		if (n->list_n) {
			*n->list_n = 0;
			for (int t = 0; t < ntac && t < n->list_max; t++) {
				snprintf(n->list[t].name, sizeof n->list[t].name, "%s", tac[t]);
				snprintf(n->list[t].notes, sizeof n->list[t].notes, "%s", notes[t]);
				n->list[t].flags = flags[t];
				(*n->list_n)++;
			}
		}
		int64_t d[2] = {a->dims[0], b->dims[1]}, k = a->dims[1];
		if (out(n, 0, 2, d))
			return -1;
		const float *x = a->data, *w = b->data;
		float *y = n->out[0].data;
		float *wh = NULL; /* B from its 16-bit copy */
		if (b->half && (n->prec == WHCU_PREC_FP16 || n->prec == WHCU_PREC_BF16)) {
			if (!(wh = malloc(count(b) * sizeof(float))))
				return -1;
			for (uint64_t i = 0; i < count(b); i++) {
				if (n->prec == WHCU_PREC_FP16) {
					wh[i] = (float)((const _Float16 *)b->half)[i];
				} else {
					uint32_t u = (uint32_t)((const uint16_t *)b->half)[i] << 16;
					memcpy(&wh[i], &u, 4);
				}
			}
			w = wh;
			n_half_reads++;
		}
		for (int64_t i = 0; i < d[0]; i++)
			for (int64_t j = 0; j < d[1]; j++) {
				double s = 0;
				if (which == 0) {
					for (int64_t q = 0; q < k; q++)
						s += (double)x[i * k + q] * w[q * d[1] + j];
				} else if (which == 1) {
					int64_t c = (k + 3) / 4;
					for (int64_t q0 = 0; q0 < k; q0 += c) {
						float part = 0;
						for (int64_t q = q0; q < q0 + c && q < k; q++)
							part += x[i * k + q] * w[q * d[1] + j];
						s += part;
					}
				} else {
					_Float16 acc = 0;
					for (int64_t q = 0; q < k; q++)
						acc = (_Float16)((float)acc + x[i * k + q] * w[q * d[1] + j]);
					s = (float)acc;
				}
				y[i * d[1] + j] = (float)s;
			}
		free(wh);
		return 0;
	}
	/* binary: equal shapes, or b a scalar */
	bool same = a->rank == b->rank && count(a) == count(b);
	if (!same && count(b) != 1)
		return 1;
	if (out(n, 0, a->rank, a->dims))
		return -1;
	const float *x = a->data, *z = b->data;
	float *y = n->out[0].data;
	for (uint64_t i = 0; i < count(a); i++) {
		float v = z[same ? i : 0];
		y[i] = !strcmp(n->op_type, "Add") ? x[i] + v : !strcmp(n->op_type, "Sub") ? x[i] - v : x[i] * v;
	}
	/* ABI 4: the binary ops round their output themselves, as the module's kernels do */
	if (n->out_rounded && (n->out_prec == WHCU_PREC_FP16 || n->out_prec == WHCU_PREC_BF16)) {
		round_(y, y, count(a), n->out_prec);
		*n->out_rounded = 1;
		n_fused++;
	}
	return 0;
}

static float bf16(float x)
{
	uint32_t b;
	memcpy(&b, &x, 4);
	if ((b & 0x7FFFFFFFu) > 0x7F800000u)
		return x;
	b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
	memcpy(&x, &b, 4);
	return x;
}

static int round_(float *dst, const float *src, size_t n, int32_t prec)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = prec == WHCU_PREC_FP16 ? (float)(_Float16)src[i] : prec == WHCU_PREC_BF16 ? bf16(src[i]) : src[i];
	return 0;
}

static int to16(void *dst, const float *src, size_t n, int32_t prec)
{
	if (prec != WHCU_PREC_FP16 && prec != WHCU_PREC_BF16)
		return -1;
	n_to16++;
	for (size_t i = 0; i < n; i++) {
		if (prec == WHCU_PREC_FP16) {
			((_Float16 *)dst)[i] = (_Float16)src[i];
		} else {
			float r = bf16(src[i]);
			uint32_t u;
			memcpy(&u, &r, 4);
			((uint16_t *)dst)[i] = (uint16_t)(u >> 16);
		}
	}
	return 0;
}

static double copy_gbps(size_t bytes) { return bytes ? 1.0 : -1; }
static void start_times(char *buf, size_t len) { snprintf(buf, len, "fake: nothing to start"); }

/* CUDA graphs: the fake runs every op at once, so it cannot record a run to replay: a capture
 * starts and "fails" at its end, which tests the runtime's way back (the run again, without
 * capture, giving the same results); captures counts them */
static long n_captures;
static int capture_begin(void)
{
	n_captures++;
	return 0;
}
static void *capture_end(void)
{
	snprintf(err, sizeof err, "the fake GPU cannot replay a run");
	return NULL;
}
static int graph_launch(void *g) { return g ? 0 : -1; }
static void graph_free(void *g) { (void)g; }

static void *event_record(void) { return malloc(1); }
static double event_ms(void *a, void *b) { return a && b ? 0.001 : -1; }
static void event_free(void *e) { free(e); }
static void ident(char *buf, size_t len)
{
	const char *e = getenv("WHITTLE_FAKE_CUDA_IDENT");
	snprintf(buf, len, "%s", e && *e ? e : "fake GPU;sm_00;cublasLt 0;cudnn 0");
}

/* ABI 5: warm-ups counted (whittle's background start calls it once) */
static long n_warm;
static int warm(void)
{
	n_warm++;
	return 0;
}

static struct whcu_api api = {
	WHCU_ABI, sizeof(struct whcu_api), init, shutdown_, info, last_error, alloc_, free_, upload, download, sync_, supports, run,
	round_, event_record, event_ms, event_free, ident, to16, copy_gbps, start_times, capture_begin, capture_end, graph_launch,
	graph_free, probe, warm, 0,
};

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("WHITTLE_FAKE_CUDA_LOG");
	FILE *f = path ? fopen(path, "w") : NULL;
	if (f) {
		fprintf(f, "allocs %ld frees %ld uploads %ld bytes_up %llu\nto16 %ld half_reads %ld fused_rounds %ld captures %ld\nwarms %ld\n", n_alloc, n_free,
			n_upload, bytes_up, n_to16, n_half_reads, n_fused, n_captures, n_warm);
		fclose(f);
	}
}

__attribute__((visibility("default"))) const struct whcu_api *whittle_cuda_api(uint32_t abi)
{
	/* WHITTLE_FAKE_CUDA_QUICK_EXIT=1: the module lets whittle end with _exit (the log is then
	 * not written: its destructor does not run) */
	const char *q = getenv("WHITTLE_FAKE_CUDA_QUICK_EXIT");
	api.quick_exit = q && !strcmp(q, "1");
	return abi == WHCU_ABI ? &api : NULL;
}
