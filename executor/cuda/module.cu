/* libwhittle-cuda.so: whittle's CUDA kernels behind the table of executor/cuda/whittle-cuda.h.
 *
 * One device, one stream, one cuBLASLt and one cuDNN handle per process. MatMul and Gemm go
 * through cuBLASLt (fp32 with TF32 off, tf32, fp16 and bf16 on tensor cores, accumulating in
 * fp32), Conv through cuDNN (FMA math for fp32 so that TF32 stays off), every other op through
 * the few kernels below: a broadcasting elementwise kernel (unary and binary op codes), a
 * strided copy (Transpose, Slice, Concat, Split, Expand), gathers, reductions, softmax,
 * normalisations, pooling and resize. Every kernel sums in a fixed order: the same inputs give
 * the same bits run after run (cuBLASLt's first heuristic algorithm for a shape, cuDNN's
 * fastest deterministic algorithm). */
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "executor/cuda/tactics.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "executor/cuda/whittle-cuda.h"

#define EXPORT extern "C" __attribute__((visibility("default")))

static int g_device = -1;
static cudaStream_t g_stream;
static cublasLtHandle_t g_lt;
static cudnnHandle_t g_dnn;
/* what starting cost, ms (start_times): the driver and context, the stream and pool,
 * cuBLASLt's handle, cuDNN's handle, the workspace; the handles at their first use, so that
 * a model without convolutions never loads cuDNN's engines */
static double g_t_ctx, g_t_stream, g_t_lt = -1, g_t_dnn = -1, g_t_ws;
/* the host time of the first Conv, the first GEMM and the first other op (their first use
 * loads kernels and, for cuDNN, its engine libraries) */
static double g_t_first_conv = -1, g_t_first_gemm = -1, g_t_first_other = -1;
/* what the process spent in cuDNN's algorithm queries, cuBLASLt's heuristics, cudaMallocAsync
 * and synchronous copies (start_times; WHITTLE_CUDA_TRACE) */
static double g_ms_convq, g_ms_heur, g_ms_malloc, g_ms_sync;
static long g_n_convq, g_n_heur, g_n_malloc, g_n_sync;
static double g_ms_direct;
static long g_n_direct;
static bool g_conv_query; /* WHITTLE_CUDA_CONV_QUERY=1: cuDNN's ranking for every shape */
static double g_t_warm = -1;
static double now_ms(void);
static void *g_ws;
static const size_t g_ws_bytes = (size_t)32 << 20;
static char g_err[1024];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_err, sizeof g_err, fmt, ap);
	va_end(ap);
	return -1;
}

#define CK(x)                                                                                       \
	do {                                                                                        \
		cudaError_t e_ = (x);                                                               \
		if (e_ != cudaSuccess)                                                              \
			return fail("%s: %s (%s:%d)", #x, cudaGetErrorString(e_), __FILE__, __LINE__); \
	} while (0)
#define CKLT(x)                                                                                    \
	do {                                                                                       \
		cublasStatus_t s_ = (x);                                                           \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                                   \
			return fail("%s: cuBLASLt status %d (%s:%d)", #x, (int)s_, __FILE__, __LINE__); \
	} while (0)
#define CKDNN(x)                                                                                     \
	do {                                                                                         \
		cudnnStatus_t s_ = (x);                                                              \
		if (s_ != CUDNN_STATUS_SUCCESS)                                                      \
			return fail("%s: %s (%s:%d)", #x, cudnnGetErrorString(s_), __FILE__, __LINE__); \
	} while (0)
/* a kernel launch: its configuration error, if any */
#define CKL() CK(cudaGetLastError())

static size_t dtype_size(int32_t dt)
{
	switch (dt) {
	case WHCU_FLOAT: case WHCU_INT32: return 4;
	case WHCU_INT64: return 8;
	case WHCU_FLOAT16: case WHCU_BFLOAT16: return 2;
	case WHCU_BOOL: case WHCU_UINT8: case WHCU_INT8: return 1;
	default: return 0;
	}
}

/* ---- memory ---- */

/* Freed buffers are kept on the host side and handed out again by size. Every kernel runs
 * on the one stream, so a buffer freed once the last kernel reading it is queued can go to a
 * kernel queued later: stream order keeps them apart, as cudaFreeAsync does, without the two
 * calls per layer (an output's allocation, a dead value's free: about a microsecond each,
 * which a large model's run at a few tokens pays hundreds of times). Buffers of at most
 * CACHE_MAX_ONE bytes, CACHE_MAX_ALL in all; the rest go back to the pool at once, and a
 * failed allocation empties the cache and tries again. g_live maps each live buffer to its
 * size (open addressing, backward-shift deletion). */
#define CACHE_MAX_ONE ((size_t)64 << 20)
#define CACHE_MAX_ALL ((size_t)1 << 30)
struct live_buf {
	void *p;
	size_t bytes;
};
static struct live_buf *g_live;
static size_t g_live_cap, g_live_n;
static struct live_buf g_cache[512];
static int g_cache_n;
static size_t g_cache_bytes;

static size_t live_hash(const void *p, size_t cap)
{
	return (size_t)(((uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
}

static void live_put(void *p, size_t bytes)
{
	if ((g_live_n + 1) * 2 > g_live_cap) {
		size_t cap = g_live_cap ? g_live_cap * 2 : 1024;
		struct live_buf *ne = (struct live_buf *)calloc(cap, sizeof *ne);
		if (!ne)
			return; /* untracked: its free goes straight to the pool */
		for (size_t i = 0; i < g_live_cap; i++)
			if (g_live[i].p) {
				size_t j = live_hash(g_live[i].p, cap);
				while (ne[j].p)
					j = (j + 1) & (cap - 1);
				ne[j] = g_live[i];
			}
		free(g_live);
		g_live = ne;
		g_live_cap = cap;
	}
	size_t j = live_hash(p, g_live_cap);
	while (g_live[j].p)
		j = (j + 1) & (g_live_cap - 1);
	g_live[j].p = p;
	g_live[j].bytes = bytes;
	g_live_n++;
}

/* p's size, forgetting p; 0 when it is not tracked */
static size_t live_take(void *p)
{
	if (!g_live_cap)
		return 0;
	size_t i = live_hash(p, g_live_cap);
	while (g_live[i].p && g_live[i].p != p)
		i = (i + 1) & (g_live_cap - 1);
	if (!g_live[i].p)
		return 0;
	size_t bytes = g_live[i].bytes;
	g_live[i].p = NULL;
	g_live_n--;
	/* backward shift: the entries after i that probed past it move back */
	for (size_t j = (i + 1) & (g_live_cap - 1); g_live[j].p; j = (j + 1) & (g_live_cap - 1)) {
		size_t h = live_hash(g_live[j].p, g_live_cap);
		if (((j - h) & (g_live_cap - 1)) >= ((j - i) & (g_live_cap - 1))) {
			g_live[i] = g_live[j];
			g_live[j].p = NULL;
			i = j;
		}
	}
	return bytes;
}

/* CUDA graphs (api capture_*): while a run is captured, allocations and frees are graph
 * nodes (cudaMallocAsync and cudaFreeAsync on the capturing stream), never the cache's
 * buffers: a graph owns its memory from capture to destruction. g_cap lists what the
 * capture allocated: after a failed capture those addresses were never memory, and their
 * frees are dropped. A buffer from before the capture freed inside it breaks the capture
 * (the graph would free it again at every launch). */
static bool g_capturing, g_cap_broken, g_cap_void;
static void *g_cap_exec; /* the last capture's graph, until its first launch */
static void **g_cap;
static size_t g_cap_n, g_cap_cap;

static bool cap_owned(void *p)
{
	for (size_t i = 0; i < g_cap_n; i++)
		if (g_cap[i] == p)
			return true;
	return false;
}

static void cache_flush(void)
{
	for (int i = 0; i < g_cache_n; i++)
		cudaFreeAsync(g_cache[i].p, g_stream);
	g_cache_n = 0;
	g_cache_bytes = 0;
}

static void *dev_alloc(size_t bytes)
{
	size_t b = bytes ? bytes : 16;
	if (g_capturing) {
		void *p = NULL;
		if (g_cap_n == g_cap_cap) {
			size_t cap = g_cap_cap ? g_cap_cap * 2 : 256;
			void **n = (void **)realloc(g_cap, cap * sizeof *n);
			if (!n) {
				g_cap_broken = true;
				fail("capture: out of host memory");
				return NULL;
			}
			g_cap = n;
			g_cap_cap = cap;
		}
		if (cudaMallocAsync(&p, b, g_stream) != cudaSuccess) {
			cudaGetLastError();
			g_cap_broken = true;
			fail("cudaMallocAsync of %zu bytes failed while capturing a CUDA graph", bytes);
			return NULL;
		}
		g_cap[g_cap_n++] = p;
		return p;
	}
	for (int i = g_cache_n - 1; i >= 0; i--)
		if (g_cache[i].bytes == b) {
			void *p = g_cache[i].p;
			g_cache[i] = g_cache[--g_cache_n];
			g_cache_bytes -= b;
			live_put(p, b);
			return p;
		}
	void *p = NULL;
	double tm = now_ms();
	cudaError_t me = cudaMallocAsync(&p, b, g_stream);
	g_ms_malloc += now_ms() - tm;
	g_n_malloc++;
	if (me != cudaSuccess) {
		cudaGetLastError();
		cache_flush();
		if (cudaMallocAsync(&p, b, g_stream) != cudaSuccess) {
			cudaGetLastError();
			fail("cudaMallocAsync of %zu bytes failed (free GPU memory, or run a smaller input)", bytes);
			return NULL;
		}
	}
	live_put(p, b);
	return p;
}

static void dev_free(void *p)
{
	if (!p)
		return;
	if (g_cap_void && cap_owned(p))
		return; /* an allocation of a failed capture: nothing to free */
	size_t b = live_take(p);
	if (g_capturing && b) {
		live_put(p, b);
		g_cap_broken = true;
		return;
	}
	if (b && b <= CACHE_MAX_ONE && g_cache_n < (int)(sizeof g_cache / sizeof g_cache[0]) && g_cache_bytes + b <= CACHE_MAX_ALL) {
		g_cache[g_cache_n].p = p;
		g_cache[g_cache_n++].bytes = b;
		g_cache_bytes += b;
		return;
	}
	if (cudaFreeAsync(p, g_stream) != cudaSuccess)
		cudaGetLastError(); /* not one to report later as a kernel's */
}

/* a scratch buffer freed at scope end (stream-ordered: safe after queued work) */
struct scratch {
	void *p;
	scratch() : p(NULL) {}
	~scratch() { dev_free(p); }
	void *get(size_t bytes) { return p = dev_alloc(bytes); }
};

static int out_alloc(const struct whcu_node *n, uint32_t k, int32_t dt, int32_t rank, const int64_t *dims)
{
	struct whcu_tensor *t = &n->out[k];
	t->dtype = dt;
	t->rank = rank;
	for (int32_t d = 0; d < rank; d++)
		t->dims[d] = dims[d];
	t->host = NULL;
	t->data = dev_alloc(whcu_count(t) * dtype_size(dt));
	return t->data ? 0 : -1;
}

/* frees what run allocated before failing */
static void out_release(const struct whcu_node *n)
{
	for (uint32_t k = 0; k < n->n_out; k++) {
		dev_free(n->out[k].data);
		n->out[k].data = NULL;
		n->out[k].dtype = 0;
	}
}

static inline unsigned grid_for(uint64_t n)
{
	uint64_t b = (n + 255) / 256;
	return (unsigned)(b > 65535u * 8 ? 65535u * 8 : b ? b : 1);
}
#define GRID_STRIDE(i, n) for (uint64_t i = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; i < (n); i += (uint64_t)gridDim.x * blockDim.x)

/* ---- shapes ---- */

struct shape {
	int32_t rank;
	int64_t d[WHCU_MAX_RANK];
};

static void strides_of(const int64_t *dims, int32_t rank, int64_t *st)
{
	int64_t s = 1;
	for (int32_t d = rank - 1; d >= 0; d--) {
		st[d] = s;
		s *= dims[d];
	}
}

static bool broadcast(uint32_t n, const struct whcu_tensor *const *ts, struct shape *out)
{
	out->rank = 0;
	for (uint32_t i = 0; i < n; i++)
		if (ts[i]->rank > out->rank)
			out->rank = ts[i]->rank;
	for (int32_t d = 0; d < out->rank; d++)
		out->d[d] = 1;
	for (uint32_t i = 0; i < n; i++) {
		int32_t off = out->rank - ts[i]->rank;
		for (int32_t d = 0; d < ts[i]->rank; d++) {
			int64_t v = ts[i]->dims[d], *o = &out->d[off + d];
			if (v == *o || v == 1)
				continue;
			if (*o != 1)
				return false;
			*o = v;
		}
	}
	return true;
}

/* strides of t viewed at the broadcast shape (0 on broadcast dims) */
static void bstrides(const struct whcu_tensor *t, const struct shape *s, int64_t *st)
{
	int64_t own[WHCU_MAX_RANK];
	strides_of(t->dims, t->rank, own);
	int32_t off = s->rank - t->rank;
	for (int32_t d = 0; d < s->rank; d++)
		st[d] = d < off || t->dims[d - off] == 1 ? 0 : own[d - off];
}

static int32_t norm_axis(int64_t a, int32_t rank)
{
	if (a < 0)
		a += rank;
	return a < 0 || a >= rank ? -1 : (int32_t)a;
}

/* ---- strided copy ---- */

struct strided {
	int32_t rank;
	int64_t dims[WHCU_MAX_RANK];
	int64_t ss[WHCU_MAX_RANK], ds[WHCU_MAX_RANK];
	int64_t soff, doff;
	int small; /* every index fits 32 bits: 32-bit division (64-bit division is slow on GPUs) */
};

/* Drops the dimensions of size 1 and merges each dimension into the next where every
 * operand's strides run on (the outer stride is the inner one times the inner size): a
 * broadcast over channels of NCHW becomes 3 dimensions, a copy of whole rows 1. */
static void coalesce(int32_t *rank, int64_t *dims, int64_t *const *st, int ns)
{
	int32_t r = 0;
	for (int32_t d = 0; d < *rank; d++) {
		if (dims[d] == 1)
			continue;
		int32_t o = r;
		if (r > 0) {
			bool merge = true;
			for (int k = 0; k < ns && merge; k++)
				merge = st[k][r - 1] == st[k][d] * dims[d];
			if (merge) {
				dims[r - 1] *= dims[d];
				for (int k = 0; k < ns; k++)
					st[k][r - 1] = st[k][d];
				continue;
			}
		}
		dims[o] = dims[d];
		for (int k = 0; k < ns; k++)
			st[k][o] = st[k][d];
		r++;
	}
	if (r == 0) {
		dims[0] = 1;
		for (int k = 0; k < ns; k++)
			st[k][0] = 0;
		r = 1;
	}
	*rank = r;
}

template <typename T>
__global__ void k_copy(T *dst, const T *src, struct strided p, uint64_t n)
{
	GRID_STRIDE(i, n)
	{
		int64_t so = p.soff, dof = p.doff;
		if (p.small) {
			uint32_t r = (uint32_t)i;
			for (int32_t d = p.rank - 1; d >= 0; d--) {
				uint32_t dim = (uint32_t)p.dims[d], c = r % dim;
				r /= dim;
				so += (int64_t)c * p.ss[d];
				dof += (int64_t)c * p.ds[d];
			}
		} else {
			uint64_t r = i;
			for (int32_t d = p.rank - 1; d >= 0; d--) {
				int64_t c = (int64_t)(r % (uint64_t)p.dims[d]);
				r /= (uint64_t)p.dims[d];
				so += c * p.ss[d];
				dof += c * p.ds[d];
			}
		}
		dst[dof] = src[so];
	}
}

static int copy_strided(void *dst, const void *src, size_t esz, const struct strided *p0)
{
	struct strided q = *p0, *p = &q;
	uint64_t n = 1;
	for (int32_t d = 0; d < p->rank; d++)
		n *= (uint64_t)p->dims[d];
	if (!n)
		return 0;
	int64_t *st[2] = {q.ss, q.ds};
	coalesce(&q.rank, q.dims, st, 2);
	q.small = n <= 0x7fffffffu;
	unsigned g = grid_for(n);
	switch (esz) {
	case 1: k_copy<uint8_t><<<g, 256, 0, g_stream>>>((uint8_t *)dst, (const uint8_t *)src, *p, n); break;
	case 2: k_copy<uint16_t><<<g, 256, 0, g_stream>>>((uint16_t *)dst, (const uint16_t *)src, *p, n); break;
	case 4: k_copy<uint32_t><<<g, 256, 0, g_stream>>>((uint32_t *)dst, (const uint32_t *)src, *p, n); break;
	case 8: k_copy<uint64_t><<<g, 256, 0, g_stream>>>((uint64_t *)dst, (const uint64_t *)src, *p, n); break;
	default: return fail("copy: element size %zu", esz);
	}
	CKL();
	return 0;
}

/* ---- conversions ---- */

__device__ __forceinline__ float round_tf32(float f)
{
	uint32_t b = __float_as_uint(f);
	if ((b & 0x7FFFFFFFu) > 0x7F800000u)
		return __uint_as_float(b | 0x400000u);
	uint32_t r = b + 0xFFFu + ((b >> 13) & 1u);
	return __uint_as_float(r & 0xFFFFE000u);
}

__global__ void k_round(float *dst, const float *src, uint64_t n, int32_t prec)
{
	GRID_STRIDE(i, n)
	{
		float x = src[i];
		if (prec == WHCU_PREC_FP16)
			x = __half2float(__float2half_rn(x));
		else if (prec == WHCU_PREC_BF16)
			x = __bfloat162float(__float2bfloat16_rn(x));
		else if (prec == WHCU_PREC_TF32)
			x = round_tf32(x);
		dst[i] = x;
	}
}

/* x on the grid of prec (fp16, bf16; anything else: x), as k_round stores it */
__device__ __forceinline__ float round_to(float x, int prec)
{
	if (prec == WHCU_PREC_FP16)
		return __half2float(__float2half_rn(x));
	if (prec == WHCU_PREC_BF16)
		return __bfloat162float(__float2bfloat16_rn(x));
	return x;
}
template <typename T> __device__ __forceinline__ T round_out(T x, int) { return x; }
template <> __device__ __forceinline__ float round_out<float>(float x, int prec) { return round_to(x, prec); }

/* The format a kernel rounds its float output to (whcu_node.out_prec: fp16 or bf16, when the
 * caller takes it), and says so; 0 (none) otherwise */
static int fused_round(const struct whcu_node *n)
{
	if (!n->out_rounded || (n->out_prec != WHCU_PREC_FP16 && n->out_prec != WHCU_PREC_BF16))
		return 0;
	*n->out_rounded = 1;
	return n->out_prec;
}

__global__ void k_f32_to_f16(__half *dst, const float *src, uint64_t n)
{
	GRID_STRIDE(i, n) dst[i] = __float2half_rn(src[i]);
}
__global__ void k_f32_to_bf16(__nv_bfloat16 *dst, const float *src, uint64_t n)
{
	GRID_STRIDE(i, n) dst[i] = __float2bfloat16_rn(src[i]);
}
__global__ void k_f16_to_f32(float *dst, const __half *src, uint64_t n)
{
	GRID_STRIDE(i, n) dst[i] = __half2float(src[i]);
}
__global__ void k_bf16_to_f32(float *dst, const __nv_bfloat16 *src, uint64_t n)
{
	GRID_STRIDE(i, n) dst[i] = __bfloat162float(src[i]);
}

/* a float buffer as fp16/bf16 (prec) in a new scratch buffer; the caller's persistent
 * 16-bit copy (whcu_tensor.half, a weight's) when it has one */
static void *to_half(scratch &s, const float *src, uint64_t n, int32_t prec, const void *have = NULL)
{
	if (have)
		return (void *)have;
	void *p = s.get(n * 2);
	if (!p || !n)
		return p;
	if (prec == WHCU_PREC_BF16)
		k_f32_to_bf16<<<grid_for(n), 256, 0, g_stream>>>((__nv_bfloat16 *)p, src, n);
	else
		k_f32_to_f16<<<grid_for(n), 256, 0, g_stream>>>((__half *)p, src, n);
	return cudaGetLastError() == cudaSuccess ? p : NULL;
}

static int from_half(float *dst, const void *src, uint64_t n, int32_t prec)
{
	if (!n)
		return 0;
	if (prec == WHCU_PREC_BF16)
		k_bf16_to_f32<<<grid_for(n), 256, 0, g_stream>>>(dst, (const __nv_bfloat16 *)src, n);
	else
		k_f16_to_f32<<<grid_for(n), 256, 0, g_stream>>>(dst, (const __half *)src, n);
	CKL();
	return 0;
}

/* Cast: through double, as the CPU's Cast does (round to nearest even into floats,
 * truncation toward zero into integers, != 0 into bool) */
template <typename T> __device__ __forceinline__ double load_d(const T *p, uint64_t i) { return (double)p[i]; }
template <> __device__ __forceinline__ double load_d<__half>(const __half *p, uint64_t i) { return (double)__half2float(p[i]); }
template <> __device__ __forceinline__ double load_d<__nv_bfloat16>(const __nv_bfloat16 *p, uint64_t i) { return (double)__bfloat162float(p[i]); }
template <typename T> __device__ __forceinline__ void store_d(T *p, uint64_t i, double v) { p[i] = (T)v; }
template <> __device__ __forceinline__ void store_d<float>(float *p, uint64_t i, double v) { p[i] = (float)v; }
template <> __device__ __forceinline__ void store_d<__half>(__half *p, uint64_t i, double v) { p[i] = __double2half(v); }
template <> __device__ __forceinline__ void store_d<__nv_bfloat16>(__nv_bfloat16 *p, uint64_t i, double v) { p[i] = __float2bfloat16_rn((float)v); }
template <> __device__ __forceinline__ void store_d<bool>(bool *p, uint64_t i, double v) { p[i] = v != 0; }
template <> __device__ __forceinline__ void store_d<int64_t>(int64_t *p, uint64_t i, double v)
{
	p[i] = v != v ? INT64_MIN : v >= 9.2233720368547758e18 ? INT64_MIN : v < -9.2233720368547758e18 ? INT64_MIN : (int64_t)v;
}
template <> __device__ __forceinline__ void store_d<int32_t>(int32_t *p, uint64_t i, double v)
{
	p[i] = v != v ? INT32_MIN : (int32_t)(int64_t)v;
}

template <typename S, typename D>
__global__ void k_cast(D *dst, const S *src, uint64_t n)
{
	GRID_STRIDE(i, n) store_d<D>(dst, i, load_d<S>(src, i));
}

template <typename S>
static int cast_from(void *dst, int32_t ddt, const S *src, uint64_t n)
{
	unsigned g = grid_for(n);
	switch (ddt) {
	case WHCU_FLOAT: k_cast<S, float><<<g, 256, 0, g_stream>>>((float *)dst, src, n); break;
	case WHCU_FLOAT16: k_cast<S, __half><<<g, 256, 0, g_stream>>>((__half *)dst, src, n); break;
	case WHCU_BFLOAT16: k_cast<S, __nv_bfloat16><<<g, 256, 0, g_stream>>>((__nv_bfloat16 *)dst, src, n); break;
	case WHCU_INT64: k_cast<S, int64_t><<<g, 256, 0, g_stream>>>((int64_t *)dst, src, n); break;
	case WHCU_INT32: k_cast<S, int32_t><<<g, 256, 0, g_stream>>>((int32_t *)dst, src, n); break;
	case WHCU_BOOL: k_cast<S, bool><<<g, 256, 0, g_stream>>>((bool *)dst, src, n); break;
	default: return fail("Cast: to type %d", ddt);
	}
	CKL();
	return 0;
}

static bool cast_type_ok(int32_t dt)
{
	return dt == WHCU_FLOAT || dt == WHCU_FLOAT16 || dt == WHCU_BFLOAT16 || dt == WHCU_INT64 || dt == WHCU_INT32 || dt == WHCU_BOOL;
}

static int op_cast(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	int32_t to = (int32_t)n->attr_int(n->node, "to", 0);
	if (!cast_type_ok(x->dtype) || !cast_type_ok(to))
		return 1;
	if (out_alloc(n, 0, to, x->rank, x->dims))
		return -1;
	uint64_t cnt = whcu_count(x);
	if (!cnt)
		return 0;
	void *y = n->out[0].data;
	switch (x->dtype) {
	case WHCU_FLOAT: return cast_from(y, to, (const float *)x->data, cnt);
	case WHCU_FLOAT16: return cast_from(y, to, (const __half *)x->data, cnt);
	case WHCU_BFLOAT16: return cast_from(y, to, (const __nv_bfloat16 *)x->data, cnt);
	case WHCU_INT64: return cast_from(y, to, (const int64_t *)x->data, cnt);
	case WHCU_INT32: return cast_from(y, to, (const int32_t *)x->data, cnt);
	default: return cast_from(y, to, (const bool *)x->data, cnt);
	}
}

/* ---- elementwise ---- */

enum un_op {
	U_RELU, U_SIGMOID, U_TANH, U_ERF, U_NEG, U_SQRT, U_RECIP, U_LOG, U_EXP, U_ABS, U_HSIGMOID, U_HSWISH,
	U_CLIP, U_GELU, U_GELU_TANH, U_LEAKY, U_SOFTPLUS, U_FLOOR, U_CEIL, U_SIN, U_COS, U_ELU, U_NOT, U_SIGN,
	U_ROUND,
};

__device__ __forceinline__ float un_apply(int op, float x, float a, float b)
{
	switch (op) {
	case U_RELU: return x > 0.f ? x : (x == x ? 0.f : x);
	case U_SIGMOID: return 1.f / (1.f + expf(-x));
	case U_TANH: return tanhf(x);
	case U_ERF: return erff(x);
	case U_NEG: return -x;
	case U_SQRT: return sqrtf(x);
	case U_RECIP: return 1.f / x;
	case U_LOG: return logf(x);
	case U_EXP: return expf(x);
	case U_ABS: return fabsf(x);
	case U_HSIGMOID: return fmaxf(0.f, fminf(1.f, a * x + b));
	case U_HSWISH: return x * fmaxf(0.f, fminf(1.f, x * (1.f / 6.f) + 0.5f));
	case U_CLIP: return x != x ? x : fminf(fmaxf(x, a), b);
	case U_GELU: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
	case U_GELU_TANH: return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
	case U_LEAKY: return x >= 0.f ? x : a * x;
	case U_SOFTPLUS: return x > 20.f ? x : log1pf(expf(x));
	case U_FLOOR: return floorf(x);
	case U_CEIL: return ceilf(x);
	case U_SIN: return sinf(x);
	case U_COS: return cosf(x);
	case U_ELU: return x >= 0.f ? x : a * (expf(x) - 1.f);
	case U_SIGN: return x > 0.f ? 1.f : x < 0.f ? -1.f : x;
	case U_ROUND: return rintf(x);
	default: return x;
	}
}

__global__ void k_unary(float *y, const float *x, uint64_t n, int op, float a, float b, int prec)
{
	GRID_STRIDE(i, n) y[i] = round_to(un_apply(op, x[i], a, b), prec);
}

__global__ void k_not(bool *y, const bool *x, uint64_t n)
{
	GRID_STRIDE(i, n) y[i] = !x[i];
}

static float host_scalar(const struct whcu_tensor *t, float dflt)
{
	if (!t || !t->dtype || !t->host || !whcu_count(t))
		return dflt;
	return *(const float *)t->host;
}

static int op_unary(const struct whcu_node *n, int op)
{
	const struct whcu_tensor *x = &n->in[0];
	if (op == U_NOT) {
		if (x->dtype != WHCU_BOOL)
			return 1;
		if (out_alloc(n, 0, WHCU_BOOL, x->rank, x->dims))
			return -1;
		uint64_t cnt = whcu_count(x);
		if (cnt)
			k_not<<<grid_for(cnt), 256, 0, g_stream>>>((bool *)n->out[0].data, (const bool *)x->data, cnt);
		CKL();
		return 0;
	}
	if (x->dtype != WHCU_FLOAT)
		return 1;
	float a = 0, b = 0;
	switch (op) {
	case U_HSIGMOID:
		a = (float)n->attr_float(n->node, "alpha", 0.2);
		b = (float)n->attr_float(n->node, "beta", 0.5);
		break;
	case U_LEAKY: a = (float)n->attr_float(n->node, "alpha", 0.01); break;
	case U_ELU: a = (float)n->attr_float(n->node, "alpha", 1.0); break;
	case U_CLIP:
		if (n->opset < 11) {
			a = (float)n->attr_float(n->node, "min", -3.402823466e38);
			b = (float)n->attr_float(n->node, "max", 3.402823466e38);
		} else {
			a = host_scalar(n->n_in > 1 ? &n->in[1] : NULL, -INFINITY);
			b = host_scalar(n->n_in > 2 ? &n->in[2] : NULL, INFINITY);
		}
		break;
	case U_GELU: {
		const char *ap = n->attr_str(n->node, "approximate", "none");
		if (!strcmp(ap, "tanh"))
			op = U_GELU_TANH;
		break;
	}
	default: break;
	}
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, x->dims))
		return -1;
	uint64_t cnt = whcu_count(x);
	if (cnt)
		k_unary<<<grid_for(cnt), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, cnt, op, a, b, fused_round(n));
	CKL();
	return 0;
}

enum bin_op { B_ADD, B_SUB, B_MUL, B_DIV, B_POW, B_MAX, B_MIN, B_EQ, B_LT, B_LE, B_GT, B_GE, B_AND, B_OR, B_XOR, B_PRELU };

static bool bin_is_compare(int op) { return op >= B_EQ && op <= B_GE; }
static bool bin_is_logic(int op) { return op >= B_AND && op <= B_XOR; }

struct bparams {
	int32_t rank;
	int64_t dims[WHCU_MAX_RANK];
	int64_t sa[WHCU_MAX_RANK], sb[WHCU_MAX_RANK], sc[WHCU_MAX_RANK];
	int same;  /* a and b contiguous with the output's shape */
	int small; /* 32-bit index arithmetic */
};

template <typename T>
__device__ __forceinline__ T bin_apply(int op, T a, T b)
{
	switch (op) {
	case B_ADD: return a + b;
	case B_SUB: return a - b;
	case B_MUL: return a * b;
	case B_DIV: return b == (T)0 ? (T)0 : a / b;
	case B_MAX: return a > b ? a : b;
	case B_MIN: return a < b ? a : b;
	default: return a;
	}
}
template <>
__device__ __forceinline__ float bin_apply<float>(int op, float a, float b)
{
	switch (op) {
	case B_ADD: return a + b;
	case B_SUB: return a - b;
	case B_MUL: return a * b;
	case B_DIV: return a / b;
	case B_POW: return powf(a, b);
	case B_MAX: return a != a || b != b ? __int_as_float(0x7fc00000) : fmaxf(a, b);
	case B_MIN: return a != a || b != b ? __int_as_float(0x7fc00000) : fminf(a, b);
	case B_PRELU: return a < 0.f ? a * b : a;
	default: return a;
	}
}

template <typename T>
__device__ __forceinline__ bool cmp_apply(int op, T a, T b)
{
	switch (op) {
	case B_EQ: return a == b;
	case B_LT: return a < b;
	case B_LE: return a <= b;
	case B_GT: return a > b;
	default: return a >= b;
	}
}

__device__ __forceinline__ void boffsets(const struct bparams &p, uint64_t i, int64_t *ia, int64_t *ib, int64_t *ic)
{
	if (p.same) {
		*ia = *ib = *ic = (int64_t)i;
		return;
	}
	int64_t a = 0, b = 0, c = 0;
	if (p.small) {
		uint32_t r = (uint32_t)i;
		for (int32_t d = p.rank - 1; d >= 0; d--) {
			uint32_t dim = (uint32_t)p.dims[d], k = r % dim;
			r /= dim;
			a += (int64_t)k * p.sa[d];
			b += (int64_t)k * p.sb[d];
			c += (int64_t)k * p.sc[d];
		}
	} else {
		uint64_t r = i;
		for (int32_t d = p.rank - 1; d >= 0; d--) {
			int64_t k = (int64_t)(r % (uint64_t)p.dims[d]);
			r /= (uint64_t)p.dims[d];
			a += k * p.sa[d];
			b += k * p.sb[d];
			c += k * p.sc[d];
		}
	}
	*ia = a;
	*ib = b;
	*ic = c;
}

template <typename T>
__global__ void k_binary(T *y, const T *a, const T *b, struct bparams p, uint64_t n, int op, int prec)
{
	GRID_STRIDE(i, n)
	{
		int64_t ia, ib, ic;
		boffsets(p, i, &ia, &ib, &ic);
		y[i] = round_out<T>(bin_apply<T>(op, a[ia], b[ib]), prec);
	}
}

template <typename T>
__global__ void k_compare(bool *y, const T *a, const T *b, struct bparams p, uint64_t n, int op)
{
	GRID_STRIDE(i, n)
	{
		int64_t ia, ib, ic;
		boffsets(p, i, &ia, &ib, &ic);
		y[i] = cmp_apply<T>(op, a[ia], b[ib]);
	}
}

__global__ void k_logic(bool *y, const bool *a, const bool *b, struct bparams p, uint64_t n, int op)
{
	GRID_STRIDE(i, n)
	{
		int64_t ia, ib, ic;
		boffsets(p, i, &ia, &ib, &ic);
		bool x = a[ia], z = b[ib];
		y[i] = op == B_AND ? (x && z) : op == B_OR ? (x || z) : (x != z);
	}
}

template <typename T>
__global__ void k_where(T *y, const bool *c, const T *a, const T *b, struct bparams p, uint64_t n)
{
	GRID_STRIDE(i, n)
	{
		int64_t ia, ib, ic;
		boffsets(p, i, &ia, &ib, &ic);
		y[i] = c[ic] ? a[ia] : b[ib];
	}
}

static void bparams_of(const struct shape *s, const struct whcu_tensor *a, const struct whcu_tensor *b,
		       const struct whcu_tensor *c, struct bparams *p)
{
	memset(p, 0, sizeof *p);
	p->rank = s->rank;
	for (int32_t d = 0; d < s->rank; d++)
		p->dims[d] = s->d[d];
	bstrides(a, s, p->sa);
	bstrides(b, s, p->sb);
	if (c)
		bstrides(c, s, p->sc);
	uint64_t cnt = 1;
	for (int32_t d = 0; d < s->rank; d++)
		cnt *= (uint64_t)s->d[d];
	p->same = whcu_count(a) == cnt && whcu_count(b) == cnt && (!c || whcu_count(c) == cnt) && a->rank == s->rank &&
		  b->rank == s->rank && (!c || c->rank == s->rank);
	int64_t so[WHCU_MAX_RANK];
	strides_of(s->d, s->rank, so);
	int64_t *st[4] = {p->sa, p->sb, p->sc, so};
	coalesce(&p->rank, p->dims, st, 4);
	p->small = cnt <= 0x7fffffffu;
}

static int op_binary(const struct whcu_node *n, int op)
{
	const struct whcu_tensor *a = &n->in[0], *b = &n->in[1];
	if (a->dtype != b->dtype)
		return 1;
	const struct whcu_tensor *ts[2] = {a, b};
	struct shape s;
	if (!broadcast(2, ts, &s))
		return fail("%s: shapes do not broadcast", n->op_type);
	struct bparams p;
	bparams_of(&s, a, b, NULL, &p);
	uint64_t cnt = 1;
	for (int32_t d = 0; d < s.rank; d++)
		cnt *= (uint64_t)s.d[d];
	unsigned g = grid_for(cnt);
	if (bin_is_logic(op)) {
		if (a->dtype != WHCU_BOOL)
			return 1;
		if (out_alloc(n, 0, WHCU_BOOL, s.rank, s.d))
			return -1;
		if (cnt)
			k_logic<<<g, 256, 0, g_stream>>>((bool *)n->out[0].data, (const bool *)a->data, (const bool *)b->data, p, cnt, op);
		CKL();
		return 0;
	}
	if (bin_is_compare(op)) {
		if (a->dtype != WHCU_FLOAT && a->dtype != WHCU_INT64 && a->dtype != WHCU_INT32 && !(op == B_EQ && a->dtype == WHCU_BOOL))
			return 1;
		if (out_alloc(n, 0, WHCU_BOOL, s.rank, s.d))
			return -1;
		if (!cnt)
			return 0;
		bool *y = (bool *)n->out[0].data;
		if (a->dtype == WHCU_FLOAT)
			k_compare<float><<<g, 256, 0, g_stream>>>(y, (const float *)a->data, (const float *)b->data, p, cnt, op);
		else if (a->dtype == WHCU_INT64)
			k_compare<int64_t><<<g, 256, 0, g_stream>>>(y, (const int64_t *)a->data, (const int64_t *)b->data, p, cnt, op);
		else if (a->dtype == WHCU_INT32)
			k_compare<int32_t><<<g, 256, 0, g_stream>>>(y, (const int32_t *)a->data, (const int32_t *)b->data, p, cnt, op);
		else
			k_compare<bool><<<g, 256, 0, g_stream>>>(y, (const bool *)a->data, (const bool *)b->data, p, cnt, op);
		CKL();
		return 0;
	}
	if (a->dtype != WHCU_FLOAT && !((a->dtype == WHCU_INT64 || a->dtype == WHCU_INT32) &&
					 (op == B_ADD || op == B_SUB || op == B_MUL || op == B_MAX || op == B_MIN)))
		return 1;
	if (out_alloc(n, 0, a->dtype, s.rank, s.d))
		return -1;
	if (!cnt)
		return 0;
	if (a->dtype == WHCU_FLOAT)
		k_binary<float><<<g, 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)a->data, (const float *)b->data, p, cnt, op, fused_round(n));
	else if (a->dtype == WHCU_INT64)
		k_binary<int64_t><<<g, 256, 0, g_stream>>>((int64_t *)n->out[0].data, (const int64_t *)a->data, (const int64_t *)b->data, p, cnt, op, 0);
	else
		k_binary<int32_t><<<g, 256, 0, g_stream>>>((int32_t *)n->out[0].data, (const int32_t *)a->data, (const int32_t *)b->data, p, cnt, op, 0);
	CKL();
	return 0;
}

/* Sum/Max/Min/Mean of 2 inputs go through op_binary; more are declined */
static int op_variadic(const struct whcu_node *n, int op)
{
	if (n->n_in != 2 || !n->in[0].dtype || !n->in[1].dtype)
		return 1;
	return op_binary(n, op);
}

static int op_where(const struct whcu_node *n)
{
	const struct whcu_tensor *c = &n->in[0], *a = &n->in[1], *b = &n->in[2];
	if (c->dtype != WHCU_BOOL || a->dtype != b->dtype || !dtype_size(a->dtype))
		return 1;
	const struct whcu_tensor *ts[3] = {c, a, b};
	struct shape s;
	if (!broadcast(3, ts, &s))
		return fail("Where: shapes do not broadcast");
	struct bparams p;
	bparams_of(&s, a, b, c, &p);
	if (out_alloc(n, 0, a->dtype, s.rank, s.d))
		return -1;
	uint64_t cnt = whcu_count(&n->out[0]);
	if (!cnt)
		return 0;
	unsigned g = grid_for(cnt);
	const bool *cd = (const bool *)c->data;
	switch (dtype_size(a->dtype)) {
	case 1: k_where<uint8_t><<<g, 256, 0, g_stream>>>((uint8_t *)n->out[0].data, cd, (const uint8_t *)a->data, (const uint8_t *)b->data, p, cnt); break;
	case 2: k_where<uint16_t><<<g, 256, 0, g_stream>>>((uint16_t *)n->out[0].data, cd, (const uint16_t *)a->data, (const uint16_t *)b->data, p, cnt); break;
	case 4: k_where<uint32_t><<<g, 256, 0, g_stream>>>((uint32_t *)n->out[0].data, cd, (const uint32_t *)a->data, (const uint32_t *)b->data, p, cnt); break;
	default: k_where<uint64_t><<<g, 256, 0, g_stream>>>((uint64_t *)n->out[0].data, cd, (const uint64_t *)a->data, (const uint64_t *)b->data, p, cnt); break;
	}
	CKL();
	return 0;
}

/* ---- data movement ---- */

static int op_transpose(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	size_t esz = dtype_size(x->dtype);
	if (!esz)
		return 1;
	int64_t perm[WHCU_MAX_RANK];
	int32_t np = n->attr_ints(n->node, "perm", perm, WHCU_MAX_RANK);
	if (np < 0) {
		np = x->rank;
		for (int32_t d = 0; d < x->rank; d++)
			perm[d] = x->rank - 1 - d;
	}
	if (np != x->rank)
		return fail("Transpose: perm has %d entries for rank %d", np, x->rank);
	int64_t st[WHCU_MAX_RANK], od[WHCU_MAX_RANK];
	strides_of(x->dims, x->rank, st);
	struct strided p;
	memset(&p, 0, sizeof p);
	p.rank = x->rank;
	for (int32_t d = 0; d < x->rank; d++) {
		int32_t a = norm_axis(perm[d], x->rank);
		if (a < 0)
			return fail("Transpose: bad perm");
		od[d] = x->dims[a];
		p.dims[d] = od[d];
		p.ss[d] = st[a];
	}
	strides_of(od, x->rank, p.ds);
	if (out_alloc(n, 0, x->dtype, x->rank, od))
		return -1;
	return copy_strided(n->out[0].data, x->data, esz, &p);
}

static int64_t host_i64(const struct whcu_tensor *t, uint64_t i)
{
	if (t->dtype == WHCU_INT32)
		return ((const int32_t *)t->host)[i];
	return ((const int64_t *)t->host)[i];
}

static bool host_ints_ok(const struct whcu_tensor *t)
{
	return t && t->dtype && t->host && (t->dtype == WHCU_INT64 || t->dtype == WHCU_INT32);
}

static int op_slice(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	size_t esz = dtype_size(x->dtype);
	if (!esz)
		return 1;
	int64_t starts[WHCU_MAX_RANK], ends[WHCU_MAX_RANK], axes[WHCU_MAX_RANK], steps[WHCU_MAX_RANK];
	int32_t k;
	if (n->opset < 10) {
		k = n->attr_ints(n->node, "starts", starts, WHCU_MAX_RANK);
		if (k < 0 || n->attr_ints(n->node, "ends", ends, WHCU_MAX_RANK) != k)
			return 1;
		if (n->attr_ints(n->node, "axes", axes, WHCU_MAX_RANK) < 0)
			for (int32_t i = 0; i < k; i++)
				axes[i] = i;
		for (int32_t i = 0; i < k; i++)
			steps[i] = 1;
	} else {
		if (!host_ints_ok(&n->in[1]) || n->n_in < 3 || !host_ints_ok(&n->in[2]))
			return 1;
		k = (int32_t)whcu_count(&n->in[1]);
		if (k > WHCU_MAX_RANK || (int32_t)whcu_count(&n->in[2]) != k)
			return 1;
		bool has_axes = n->n_in > 3 && n->in[3].dtype, has_steps = n->n_in > 4 && n->in[4].dtype;
		if ((has_axes && !host_ints_ok(&n->in[3])) || (has_steps && !host_ints_ok(&n->in[4])))
			return 1;
		for (int32_t i = 0; i < k; i++) {
			starts[i] = host_i64(&n->in[1], (uint64_t)i);
			ends[i] = host_i64(&n->in[2], (uint64_t)i);
			axes[i] = has_axes ? host_i64(&n->in[3], (uint64_t)i) : i;
			steps[i] = has_steps ? host_i64(&n->in[4], (uint64_t)i) : 1;
		}
	}
	int64_t st[WHCU_MAX_RANK];
	strides_of(x->dims, x->rank, st);
	struct strided p;
	memset(&p, 0, sizeof p);
	p.rank = x->rank;
	for (int32_t d = 0; d < x->rank; d++) {
		p.dims[d] = x->dims[d];
		p.ss[d] = st[d];
	}
	for (int32_t i = 0; i < k; i++) {
		int32_t a = norm_axis(axes[i], x->rank);
		if (a < 0 || steps[i] == 0)
			return fail("Slice: bad axis or step 0");
		int64_t dim = x->dims[a], s = starts[i], e = ends[i], stp = steps[i];
		if (s < 0)
			s += dim;
		if (e < 0)
			e += dim;
		int64_t len;
		if (stp > 0) {
			s = s < 0 ? 0 : s > dim ? dim : s;
			e = e < 0 ? 0 : e > dim ? dim : e;
			len = e > s ? (e - s + stp - 1) / stp : 0;
		} else {
			s = s < 0 ? -1 : s > dim - 1 ? dim - 1 : s;
			e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
			len = s > e ? (s - e + (-stp) - 1) / (-stp) : 0;
		}
		p.dims[a] = len;
		if (len)
			p.soff += s * st[a];
		p.ss[a] = st[a] * stp;
	}
	strides_of(p.dims, p.rank, p.ds);
	if (out_alloc(n, 0, x->dtype, x->rank, p.dims))
		return -1;
	return copy_strided(n->out[0].data, x->data, esz, &p);
}

static int op_concat(const struct whcu_node *n)
{
	const struct whcu_tensor *x0 = NULL;
	for (uint32_t k = 0; k < n->n_in && !x0; k++)
		if (n->in[k].dtype)
			x0 = &n->in[k];
	if (!x0 || !dtype_size(x0->dtype))
		return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", 0), x0->rank);
	if (a < 0)
		return fail("Concat: bad axis");
	int64_t od[WHCU_MAX_RANK];
	memcpy(od, x0->dims, sizeof od);
	od[a] = 0;
	for (uint32_t k = 0; k < n->n_in; k++) {
		if (!n->in[k].dtype)
			continue;
		if (n->in[k].dtype != x0->dtype || n->in[k].rank != x0->rank)
			return fail("Concat: inputs differ in type or rank");
		od[a] += n->in[k].dims[a];
	}
	if (out_alloc(n, 0, x0->dtype, x0->rank, od))
		return -1;
	int64_t ost[WHCU_MAX_RANK];
	strides_of(od, x0->rank, ost);
	int64_t off = 0;
	for (uint32_t k = 0; k < n->n_in; k++) {
		const struct whcu_tensor *x = &n->in[k];
		if (!x->dtype)
			continue;
		struct strided p;
		memset(&p, 0, sizeof p);
		p.rank = x->rank;
		memcpy(p.dims, x->dims, sizeof p.dims);
		strides_of(x->dims, x->rank, p.ss);
		memcpy(p.ds, ost, sizeof p.ds);
		p.doff = off * ost[a];
		if (copy_strided(n->out[0].data, x->data, dtype_size(x->dtype), &p))
			return -1;
		off += x->dims[a];
	}
	return 0;
}

static int op_split(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	size_t esz = dtype_size(x->dtype);
	if (!esz || n->n_out > 64)
		return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", 0), x->rank);
	if (a < 0)
		return fail("Split: bad axis");
	int64_t sizes[64];
	int32_t ns = -1;
	if (n->opset >= 13 && n->n_in > 1 && n->in[1].dtype) {
		if (!host_ints_ok(&n->in[1]) || whcu_count(&n->in[1]) != n->n_out)
			return 1;
		ns = (int32_t)n->n_out;
		for (int32_t i = 0; i < ns; i++)
			sizes[i] = host_i64(&n->in[1], (uint64_t)i);
	} else if (n->opset < 13) {
		ns = n->attr_ints(n->node, "split", sizes, 64);
	}
	if (ns < 0) {
		int64_t parts = n->opset >= 18 ? n->attr_int(n->node, "num_outputs", (int64_t)n->n_out) : (int64_t)n->n_out;
		if (parts <= 0 || (uint32_t)parts != n->n_out)
			return 1;
		int64_t each = (x->dims[a] + parts - 1) / parts;
		for (int64_t i = 0; i < parts; i++) {
			int64_t rest = x->dims[a] - i * each;
			sizes[i] = rest < each ? (rest < 0 ? 0 : rest) : each;
		}
		ns = (int32_t)parts;
	}
	if ((uint32_t)ns != n->n_out)
		return fail("Split: %d sizes for %u outputs", ns, n->n_out);
	int64_t st[WHCU_MAX_RANK];
	strides_of(x->dims, x->rank, st);
	int64_t off = 0;
	for (uint32_t k = 0; k < n->n_out; k++) {
		int64_t od[WHCU_MAX_RANK];
		memcpy(od, x->dims, sizeof od);
		od[a] = sizes[k];
		if (off + sizes[k] > x->dims[a] || sizes[k] < 0)
			return fail("Split: sizes exceed the axis");
		if (n->out_wanted && !n->out_wanted[k]) {
			off += sizes[k];
			continue;
		}
		if (out_alloc(n, k, x->dtype, x->rank, od))
			return -1;
		struct strided p;
		memset(&p, 0, sizeof p);
		p.rank = x->rank;
		memcpy(p.dims, od, sizeof p.dims);
		memcpy(p.ss, st, sizeof p.ss);
		p.soff = off * st[a];
		strides_of(od, x->rank, p.ds);
		if (copy_strided(n->out[k].data, x->data, esz, &p))
			return -1;
		off += sizes[k];
	}
	return 0;
}

static int op_expand(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *sh = &n->in[1];
	size_t esz = dtype_size(x->dtype);
	if (!esz || !host_ints_ok(sh) || whcu_count(sh) > WHCU_MAX_RANK)
		return 1;
	struct whcu_tensor shape_t;
	memset(&shape_t, 0, sizeof shape_t);
	shape_t.dtype = WHCU_FLOAT;
	shape_t.rank = (int32_t)whcu_count(sh);
	for (int32_t d = 0; d < shape_t.rank; d++)
		shape_t.dims[d] = host_i64(sh, (uint64_t)d);
	const struct whcu_tensor *ts[2] = {x, &shape_t};
	struct shape s;
	if (!broadcast(2, ts, &s))
		return fail("Expand: shapes do not broadcast");
	struct strided p;
	memset(&p, 0, sizeof p);
	p.rank = s.rank;
	memcpy(p.dims, s.d, sizeof p.dims);
	bstrides(x, &s, p.ss);
	strides_of(s.d, s.rank, p.ds);
	if (out_alloc(n, 0, x->dtype, s.rank, s.d))
		return -1;
	return copy_strided(n->out[0].data, x->data, esz, &p);
}

template <typename T, typename I>
__global__ void k_gather(T *y, const T *x, const I *idx, uint64_t n, int64_t n_idx, int64_t axis_len, int64_t inner)
{
	GRID_STRIDE(i, n)
	{
		int64_t in = (int64_t)(i % (uint64_t)inner);
		uint64_t r = i / (uint64_t)inner;
		int64_t j = (int64_t)(r % (uint64_t)n_idx);
		int64_t o = (int64_t)(r / (uint64_t)n_idx);
		int64_t k = (int64_t)idx[j];
		if (k < 0)
			k += axis_len;
		y[i] = k < 0 || k >= axis_len ? (T)0 : x[(o * axis_len + k) * inner + in];
	}
}

template <typename T>
static int gather_t(const struct whcu_node *n, const struct whcu_tensor *x, const struct whcu_tensor *ix, uint64_t cnt,
		    int64_t n_idx, int64_t axis_len, int64_t inner)
{
	unsigned g = grid_for(cnt);
	if (ix->dtype == WHCU_INT64)
		k_gather<T, int64_t><<<g, 256, 0, g_stream>>>((T *)n->out[0].data, (const T *)x->data, (const int64_t *)ix->data, cnt, n_idx, axis_len, inner);
	else
		k_gather<T, int32_t><<<g, 256, 0, g_stream>>>((T *)n->out[0].data, (const T *)x->data, (const int32_t *)ix->data, cnt, n_idx, axis_len, inner);
	CKL();
	return 0;
}

static int op_gather(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *ix = &n->in[1];
	size_t esz = dtype_size(x->dtype);
	if (!esz || (ix->dtype != WHCU_INT64 && ix->dtype != WHCU_INT32))
		return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", 0), x->rank);
	if (a < 0 || x->rank + ix->rank - 1 > WHCU_MAX_RANK)
		return fail("Gather: bad axis or rank");
	int64_t od[WHCU_MAX_RANK];
	int32_t r = 0;
	int64_t inner = 1;
	for (int32_t d = 0; d < a; d++)
		od[r++] = x->dims[d];
	for (int32_t d = 0; d < ix->rank; d++)
		od[r++] = ix->dims[d];
	for (int32_t d = a + 1; d < x->rank; d++) {
		od[r++] = x->dims[d];
		inner *= x->dims[d];
	}
	if (out_alloc(n, 0, x->dtype, r, od))
		return -1;
	uint64_t cnt = whcu_count(&n->out[0]);
	if (!cnt)
		return 0;
	int64_t n_idx = (int64_t)whcu_count(ix);
	switch (esz) {
	case 1: return gather_t<uint8_t>(n, x, ix, cnt, n_idx, x->dims[a], inner);
	case 2: return gather_t<uint16_t>(n, x, ix, cnt, n_idx, x->dims[a], inner);
	case 4: return gather_t<uint32_t>(n, x, ix, cnt, n_idx, x->dims[a], inner);
	default: return gather_t<uint64_t>(n, x, ix, cnt, n_idx, x->dims[a], inner);
	}
}

struct geparams {
	int32_t rank, axis;
	int64_t dims[WHCU_MAX_RANK]; /* the index's (= output's) */
	int64_t xs[WHCU_MAX_RANK];   /* the data's strides */
	int64_t axis_len;
};

template <typename T, typename I>
__global__ void k_gather_el(T *y, const T *x, const I *idx, struct geparams p, uint64_t n)
{
	GRID_STRIDE(i, n)
	{
		uint64_t r = i;
		int64_t off = 0;
		for (int32_t d = p.rank - 1; d >= 0; d--) {
			int64_t c = (int64_t)(r % (uint64_t)p.dims[d]);
			r /= (uint64_t)p.dims[d];
			if (d == p.axis) {
				c = (int64_t)idx[i];
				if (c < 0)
					c += p.axis_len;
			}
			off += c * p.xs[d];
		}
		y[i] = x[off];
	}
}

static int op_gather_elements(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *ix = &n->in[1];
	if (dtype_size(x->dtype) != 4 || (ix->dtype != WHCU_INT64 && ix->dtype != WHCU_INT32) || ix->rank != x->rank)
		return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", 0), x->rank);
	if (a < 0)
		return fail("GatherElements: bad axis");
	struct geparams p;
	memset(&p, 0, sizeof p);
	p.rank = x->rank;
	p.axis = a;
	memcpy(p.dims, ix->dims, sizeof p.dims);
	strides_of(x->dims, x->rank, p.xs);
	p.axis_len = x->dims[a];
	if (out_alloc(n, 0, x->dtype, ix->rank, ix->dims))
		return -1;
	uint64_t cnt = whcu_count(ix);
	if (!cnt)
		return 0;
	if (ix->dtype == WHCU_INT64)
		k_gather_el<uint32_t, int64_t><<<grid_for(cnt), 256, 0, g_stream>>>((uint32_t *)n->out[0].data, (const uint32_t *)x->data, (const int64_t *)ix->data, p, cnt);
	else
		k_gather_el<uint32_t, int32_t><<<grid_for(cnt), 256, 0, g_stream>>>((uint32_t *)n->out[0].data, (const uint32_t *)x->data, (const int32_t *)ix->data, p, cnt);
	CKL();
	return 0;
}

/* ---- reductions, softmax, normalisation ---- */

enum red_op { R_SUM, R_MEAN, R_MAX, R_MIN, R_SUMSQ, R_L2, R_PROD };

/* y[o, i] = reduce over r of x[o, r, i] (the reduced axes moved together by the caller) */
struct rparams {
	int32_t rank;            /* of the kept-dims iteration space */
	int64_t kd[WHCU_MAX_RANK]; /* kept dims (output order) */
	int64_t ks[WHCU_MAX_RANK]; /* their strides in x */
	int32_t rrank;
	int64_t rd[WHCU_MAX_RANK]; /* reduced dims */
	int64_t rs[WHCU_MAX_RANK]; /* their strides in x */
	uint64_t rcount;
};

__device__ __forceinline__ float red_combine(int op, float acc, float v)
{
	switch (op) {
	case R_MAX: return v != v || acc != acc ? __int_as_float(0x7fc00000) : fmaxf(acc, v);
	case R_MIN: return v != v || acc != acc ? __int_as_float(0x7fc00000) : fminf(acc, v);
	case R_SUMSQ: case R_L2: return acc + v * v;
	case R_PROD: return acc * v;
	default: return acc + v;
	}
}

/* One block per output over one reduced axis of many elements (GlobalAveragePool): each
 * thread sums a strided share, then a tree in shared memory; the order is fixed, so the bits
 * are the same run after run. */
__global__ void k_reduce_blocks(float *y, const float *x, struct rparams p, int op)
{
	__shared__ float sh[256];
	uint64_t i = blockIdx.x;
	uint64_t r = i;
	int64_t base = 0;
	for (int32_t d = p.rank - 1; d >= 0; d--) {
		int64_t c = (int64_t)(r % (uint64_t)p.kd[d]);
		r /= (uint64_t)p.kd[d];
		base += c * p.ks[d];
	}
	float id = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : op == R_PROD ? 1.f : 0.f, acc = id;
	for (uint64_t j = threadIdx.x; j < p.rcount; j += blockDim.x) {
		float v = x[base + (int64_t)j * p.rs[0]];
		acc = red_combine(op, acc, v);
	}
	sh[threadIdx.x] = acc;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s) {
			float v = sh[threadIdx.x + s];
			/* partial results combine as sums (of squares too), products or extremes */
			sh[threadIdx.x] = op == R_SUMSQ || op == R_L2 ? sh[threadIdx.x] + v : red_combine(op, sh[threadIdx.x], v);
		}
		__syncthreads();
	}
	if (threadIdx.x == 0) {
		float a = sh[0];
		if (op == R_MEAN)
			a = a / (float)p.rcount;
		if (op == R_L2)
			a = sqrtf(a);
		y[i] = a;
	}
}

__global__ void k_reduce(float *y, const float *x, struct rparams p, uint64_t n, int op)
{
	GRID_STRIDE(i, n)
	{
		uint64_t r = i;
		int64_t base = 0;
		for (int32_t d = p.rank - 1; d >= 0; d--) {
			int64_t c = (int64_t)(r % (uint64_t)p.kd[d]);
			r /= (uint64_t)p.kd[d];
			base += c * p.ks[d];
		}
		float acc = op == R_MAX ? -INFINITY : op == R_MIN ? INFINITY : op == R_PROD ? 1.f : 0.f;
		for (uint64_t j = 0; j < p.rcount; j++) {
			int64_t off = base;
			if (p.rrank == 1) {
				off += (int64_t)j * p.rs[0];
			} else {
				uint64_t q = j;
				for (int32_t d = p.rrank - 1; d >= 0; d--) {
					int64_t c = (int64_t)(q % (uint64_t)p.rd[d]);
					q /= (uint64_t)p.rd[d];
					off += c * p.rs[d];
				}
			}
			float v = x[off];
			switch (op) {
			case R_MAX: acc = v != v || acc != acc ? __int_as_float(0x7fc00000) : fmaxf(acc, v); break;
			case R_MIN: acc = v != v || acc != acc ? __int_as_float(0x7fc00000) : fminf(acc, v); break;
			case R_SUMSQ: case R_L2: acc += v * v; break;
			case R_PROD: acc *= v; break;
			default: acc += v;
			}
		}
		if (op == R_MEAN)
			acc = p.rcount ? acc / (float)p.rcount : __int_as_float(0x7fc00000);
		if (op == R_L2)
			acc = sqrtf(acc);
		y[i] = acc;
	}
}

static int reduce_axes(const struct whcu_node *n, const struct whcu_tensor *x, bool *red, const bool all_if_none, int op)
{
	const struct whcu_tensor *xs = x;
	int64_t axes[WHCU_MAX_RANK];
	int32_t na = -1;
	bool axes_input = n->opset >= 18 || (n->opset >= 13 && !strcmp(n->op_type, "ReduceSum"));
	if (axes_input) {
		if (n->n_in > 1 && n->in[1].dtype) {
			if (!host_ints_ok(&n->in[1]) || whcu_count(&n->in[1]) > WHCU_MAX_RANK)
				return 1;
			na = (int32_t)whcu_count(&n->in[1]);
			for (int32_t i = 0; i < na; i++)
				axes[i] = host_i64(&n->in[1], (uint64_t)i);
		}
	} else {
		na = n->attr_ints(n->node, "axes", axes, WHCU_MAX_RANK);
	}
	for (int32_t d = 0; d < xs->rank; d++)
		red[d] = false;
	if (na <= 0) {
		if (axes_input && n->attr_int(n->node, "noop_with_empty_axes", 0))
			return 2; /* identity */
		for (int32_t d = 0; d < xs->rank; d++)
			red[d] = all_if_none;
		return 0;
	}
	for (int32_t i = 0; i < na; i++) {
		int32_t a = norm_axis(axes[i], xs->rank);
		if (a < 0)
			return fail("%s: bad axis", n->op_type);
		red[a] = true;
	}
	(void)op;
	return 0;
}

static int reduce_run(const struct whcu_node *n, const struct whcu_tensor *x, const bool *red, bool keepdims, int op)
{
	int64_t st[WHCU_MAX_RANK], od[WHCU_MAX_RANK];
	strides_of(x->dims, x->rank, st);
	struct rparams p;
	memset(&p, 0, sizeof p);
	p.rcount = 1;
	int32_t orank = 0;
	for (int32_t d = 0; d < x->rank; d++) {
		if (red[d]) {
			p.rd[p.rrank] = x->dims[d];
			p.rs[p.rrank++] = st[d];
			p.rcount *= (uint64_t)x->dims[d];
			if (keepdims)
				od[orank++] = 1;
		} else {
			p.kd[p.rank] = x->dims[d];
			p.ks[p.rank++] = st[d];
			od[orank++] = x->dims[d];
		}
	}
	if (out_alloc(n, 0, WHCU_FLOAT, orank, od))
		return -1;
	{
		int64_t *kst[1] = {p.ks}, *rst[1] = {p.rs};
		coalesce(&p.rank, p.kd, kst, 1);
		coalesce(&p.rrank, p.rd, rst, 1);
	}
	uint64_t cnt = whcu_count(&n->out[0]);
	if (cnt && p.rrank == 1 && p.rcount >= 2048 && cnt <= 0x7fffffffu)
		k_reduce_blocks<<<(unsigned)cnt, 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, p, op);
	else if (cnt)
		k_reduce<<<grid_for(cnt), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, p, cnt, op);
	CKL();
	return 0;
}

static int op_reduce(const struct whcu_node *n, int op)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT)
		return 1;
	bool red[WHCU_MAX_RANK];
	int r = reduce_axes(n, x, red, true, op);
	if (r == 1 || r < 0)
		return r;
	if (r == 2) { /* noop_with_empty_axes: a copy */
		for (int32_t d = 0; d < x->rank; d++)
			red[d] = false;
	}
	return reduce_run(n, x, red, n->attr_int(n->node, "keepdims", 1) != 0, op);
}

static int op_global_pool(const struct whcu_node *n, int op)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT || x->rank < 3)
		return 1;
	bool red[WHCU_MAX_RANK];
	for (int32_t d = 0; d < x->rank; d++)
		red[d] = d >= 2;
	return reduce_run(n, x, red, true, op);
}

/* softmax over the middle axis of [outer, len, inner]: one thread per (outer, inner) */
__global__ void k_softmax(float *y, const float *x, int64_t outer, int64_t len, int64_t inner, int log_sm)
{
	uint64_t n = (uint64_t)outer * (uint64_t)inner;
	GRID_STRIDE(i, n)
	{
		int64_t o = (int64_t)(i / (uint64_t)inner), in = (int64_t)(i % (uint64_t)inner);
		const float *xp = x + o * len * inner + in;
		float *yp = y + o * len * inner + in;
		float m = -INFINITY;
		for (int64_t j = 0; j < len; j++)
			m = fmaxf(m, xp[j * inner]);
		float s = 0.f;
		for (int64_t j = 0; j < len; j++)
			s += expf(xp[j * inner] - m);
		if (log_sm) {
			float ls = logf(s);
			for (int64_t j = 0; j < len; j++)
				yp[j * inner] = xp[j * inner] - m - ls;
		} else {
			float inv = 1.f / s;
			for (int64_t j = 0; j < len; j++)
				yp[j * inner] = expf(xp[j * inner] - m) * inv;
		}
	}
}

/* the same with one warp per row when the axis is the last (inner 1) */
__global__ void k_softmax_rows(float *y, const float *x, int64_t rows, int64_t len, int log_sm)
{
	int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	const float *xp = x + row * len;
	float *yp = y + row * len;
	float m = -INFINITY;
	for (int64_t j = lane; j < len; j += 32)
		m = fmaxf(m, xp[j]);
	for (int o = 16; o; o >>= 1)
		m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
	float s = 0.f;
	for (int64_t j = lane; j < len; j += 32)
		s += expf(xp[j] - m);
	for (int o = 16; o; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	float ls = logf(s), inv = 1.f / s;
	for (int64_t j = lane; j < len; j += 32)
		yp[j] = log_sm ? xp[j] - m - ls : expf(xp[j] - m) * inv;
}

static int op_softmax(const struct whcu_node *n, int log_sm)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT)
		return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", n->opset >= 13 ? -1 : 1), x->rank > 0 ? x->rank : 1);
	if (a < 0)
		return fail("%s: bad axis", n->op_type);
	int64_t outer = 1, len = 1, inner = 1;
	for (int32_t d = 0; d < x->rank; d++) {
		if (d < a)
			outer *= x->dims[d];
		else if (d == a || n->opset < 13)
			len *= x->dims[d];
		else
			inner *= x->dims[d];
	}
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, x->dims))
		return -1;
	if (!outer || !len || !inner)
		return 0;
	if (inner == 1) {
		unsigned blocks = (unsigned)((outer + 7) / 8);
		k_softmax_rows<<<blocks, 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, outer, len, log_sm);
	} else {
		k_softmax<<<grid_for((uint64_t)(outer * inner)), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, outer, len, inner, log_sm);
	}
	CKL();
	return 0;
}

/* LayerNormalization over the trailing len elements of each row: one warp per row, the mean
 * and the variance in two passes */
__global__ void k_layernorm(float *y, const float *x, const float *scale, const float *bias, int64_t rows, int64_t len,
			    int64_t scale_n, int64_t bias_n, float eps)
{
	int64_t row = (int64_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	const float *xp = x + row * len;
	float *yp = y + row * len;
	float s = 0.f;
	for (int64_t j = lane; j < len; j += 32)
		s += xp[j];
	for (int o = 16; o; o >>= 1)
		s += __shfl_xor_sync(0xffffffffu, s, o);
	float mean = s / (float)len, v = 0.f;
	for (int64_t j = lane; j < len; j += 32) {
		float d = xp[j] - mean;
		v += d * d;
	}
	for (int o = 16; o; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	float inv = 1.f / sqrtf(v / (float)len + eps);
	for (int64_t j = lane; j < len; j += 32) {
		float r = (xp[j] - mean) * inv * scale[j % scale_n];
		yp[j] = bias ? r + bias[j % bias_n] : r;
	}
}

static int op_layernorm(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *sc = &n->in[1], *b = n->n_in > 2 && n->in[2].dtype ? &n->in[2] : NULL;
	if (x->dtype != WHCU_FLOAT || sc->dtype != WHCU_FLOAT || (b && b->dtype != WHCU_FLOAT))
		return 1;
	for (uint32_t k = 1; k < n->n_out; k++)
		if (n->out_wanted && n->out_wanted[k])
			return 1;
	int32_t a = norm_axis(n->attr_int(n->node, "axis", -1), x->rank);
	if (a < 0)
		return fail("LayerNormalization: bad axis");
	int64_t rows = 1, len = 1;
	for (int32_t d = 0; d < x->rank; d++)
		(d < a ? rows : len) *= x->dims[d];
	uint64_t scn = whcu_count(sc), bn = b ? whcu_count(b) : 1;
	if ((scn != 1 && scn != (uint64_t)len) || (b && bn != 1 && bn != (uint64_t)len))
		return 1;
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, x->dims))
		return -1;
	if (!rows || !len)
		return 0;
	k_layernorm<<<(unsigned)((rows + 7) / 8), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data,
								    (const float *)sc->data, b ? (const float *)b->data : NULL, rows, len,
								    (int64_t)scn, (int64_t)bn, (float)n->attr_float(n->node, "epsilon", 1e-5));
	CKL();
	return 0;
}

__global__ void k_batchnorm(float *y, const float *x, const float *sc, const float *b, const float *mean, const float *var,
			    uint64_t n, int64_t c, int64_t inner, float eps)
{
	GRID_STRIDE(i, n)
	{
		int64_t ch = n <= 0x7fffffffu ? (int64_t)(((uint32_t)i / (uint32_t)inner) % (uint32_t)c) : (int64_t)((i / (uint64_t)inner) % (uint64_t)c);
		y[i] = (x[i] - mean[ch]) / sqrtf(var[ch] + eps) * sc[ch] + b[ch];
	}
}

static int op_batchnorm(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT || x->rank < 2 || n->n_in < 5 || n->attr_int(n->node, "training_mode", 0))
		return 1;
	for (uint32_t k = 1; k < 5; k++)
		if (n->in[k].dtype != WHCU_FLOAT || whcu_count(&n->in[k]) != (uint64_t)x->dims[1])
			return 1;
	for (uint32_t k = 1; k < n->n_out; k++)
		if (n->out_wanted && n->out_wanted[k])
			return 1;
	int64_t inner = 1;
	for (int32_t d = 2; d < x->rank; d++)
		inner *= x->dims[d];
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, x->dims))
		return -1;
	uint64_t cnt = whcu_count(x);
	if (cnt)
		k_batchnorm<<<grid_for(cnt), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, (const float *)n->in[1].data,
								 (const float *)n->in[2].data, (const float *)n->in[3].data,
								 (const float *)n->in[4].data, cnt, x->dims[1], inner,
								 (float)n->attr_float(n->node, "epsilon", 1e-5));
	CKL();
	return 0;
}

/* ---- pooling (2-D, NCHW) ---- */

struct pparams {
	int64_t N, C, H, W, OH, OW;
	int64_t kh, kw, sh, sw, ph, pw, dh, dw;
	int include_pad, is_max;
	int64_t pad_h_end, pad_w_end;
};

__global__ void k_pool(float *y, const float *x, struct pparams p, uint64_t n)
{
	GRID_STRIDE(i, n)
	{
		int64_t ow, oh;
		uint64_t r;
		if (n <= 0x7fffffffu) {
			uint32_t q = (uint32_t)i;
			ow = q % (uint32_t)p.OW;
			q /= (uint32_t)p.OW;
			oh = q % (uint32_t)p.OH;
			r = q / (uint32_t)p.OH;
		} else {
			ow = (int64_t)(i % (uint64_t)p.OW);
			r = i / (uint64_t)p.OW;
			oh = (int64_t)(r % (uint64_t)p.OH);
			r /= (uint64_t)p.OH;
		}
		const float *xp = x + (int64_t)r * p.H * p.W;
		int64_t h0 = oh * p.sh - p.ph, w0 = ow * p.sw - p.pw;
		float acc = p.is_max ? -INFINITY : 0.f;
		int64_t cnt = 0;
		for (int64_t a = 0; a < p.kh; a++) {
			int64_t h = h0 + a * p.dh;
			for (int64_t b = 0; b < p.kw; b++) {
				int64_t w = w0 + b * p.dw;
				bool inside = h >= 0 && h < p.H && w >= 0 && w < p.W;
				if (!inside) {
					/* padding counts for the average where it is real padding */
					if (!p.is_max && p.include_pad && h < p.H + p.pad_h_end && w < p.W + p.pad_w_end)
						cnt++;
					continue;
				}
				float v = xp[h * p.W + w];
				if (p.is_max)
					acc = v != v ? v : fmaxf(acc, v);
				else
					acc += v;
				cnt++;
			}
		}
		y[i] = p.is_max ? acc : acc / (float)(cnt ? cnt : 1);
	}
}

static int op_pool(const struct whcu_node *n, int is_max)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT || x->rank != 4 || (n->n_out > 1 && n->out_wanted && n->out_wanted[1]))
		return 1;
	const char *ap = n->attr_str(n->node, "auto_pad", "NOTSET");
	if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
		return 1;
	int64_t k[2], s[2] = {1, 1}, pads[4] = {0, 0, 0, 0}, dil[2] = {1, 1};
	if (n->attr_ints(n->node, "kernel_shape", k, 2) != 2)
		return 1;
	if (n->attr_ints(n->node, "strides", s, 2) == -1) {
		s[0] = s[1] = 1;
	}
	if (strcmp(ap, "VALID") && n->attr_ints(n->node, "pads", pads, 4) != 4)
		pads[0] = pads[1] = pads[2] = pads[3] = 0;
	if (n->attr_ints(n->node, "dilations", dil, 2) == -1)
		dil[0] = dil[1] = 1;
	int ceil_mode = (int)n->attr_int(n->node, "ceil_mode", 0);
	struct pparams p;
	memset(&p, 0, sizeof p);
	p.N = x->dims[0];
	p.C = x->dims[1];
	p.H = x->dims[2];
	p.W = x->dims[3];
	p.kh = k[0];
	p.kw = k[1];
	p.sh = s[0];
	p.sw = s[1];
	p.ph = pads[0];
	p.pw = pads[1];
	p.pad_h_end = pads[2];
	p.pad_w_end = pads[3];
	p.dh = dil[0];
	p.dw = dil[1];
	p.is_max = is_max;
	p.include_pad = (int)n->attr_int(n->node, "count_include_pad", 0);
	int64_t ext_h = (p.kh - 1) * p.dh + 1, ext_w = (p.kw - 1) * p.dw + 1;
	int64_t nh = p.H + pads[0] + pads[2] - ext_h, nw = p.W + pads[1] + pads[3] - ext_w;
	if (nh < 0 || nw < 0 || p.sh <= 0 || p.sw <= 0)
		return fail("%s: the window is larger than the padded input", n->op_type);
	p.OH = (ceil_mode ? (nh + p.sh - 1) / p.sh : nh / p.sh) + 1;
	p.OW = (ceil_mode ? (nw + p.sw - 1) / p.sw : nw / p.sw) + 1;
	/* ceil mode: the last window must start inside the input or its left padding */
	if (ceil_mode && (p.OH - 1) * p.sh >= p.H + pads[0])
		p.OH--;
	if (ceil_mode && (p.OW - 1) * p.sw >= p.W + pads[1])
		p.OW--;
	int64_t od[4] = {p.N, p.C, p.OH, p.OW};
	if (out_alloc(n, 0, WHCU_FLOAT, 4, od))
		return -1;
	uint64_t cnt = whcu_count(&n->out[0]);
	if (cnt)
		k_pool<<<grid_for(cnt), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, p, cnt);
	CKL();
	return 0;
}

/* ---- Resize (nearest and linear on the last two axes, NCHW) ---- */

struct rzparams {
	int64_t H, W, OH, OW;
	float sh, sw; /* scales (output / input) */
	int coord;    /* 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel */
	int linear;
	int nearest;  /* 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil */
};

__device__ __forceinline__ float rz_coord(float o, float scale, int64_t in, int64_t out, int mode)
{
	float ow = scale * (float)in; /* the ONNX reference's length (not the integer one) */
	switch (mode) {
	case 1: return o / scale;
	case 2: return ow == 1.f ? 0.f : o * (float)(in - 1) / (ow - 1.f);
	case 3: return out > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
	default: return (o + 0.5f) / scale - 0.5f;
	}
}

__device__ __forceinline__ int64_t rz_nearest(float c, int mode, int64_t in)
{
	float r;
	switch (mode) {
	case 1: r = c == floorf(c) + 0.5f ? ceilf(c) : rintf(c); break;
	case 2: r = floorf(c); break;
	case 3: r = ceilf(c); break;
	default: r = c == floorf(c) + 0.5f ? floorf(c) : rintf(c); break;
	}
	int64_t k = (int64_t)r;
	return k < 0 ? 0 : k >= in ? in - 1 : k;
}

__global__ void k_resize(float *y, const float *x, struct rzparams p, uint64_t n)
{
	GRID_STRIDE(i, n)
	{
		int64_t ow, oh;
		uint64_t r;
		if (n <= 0x7fffffffu) {
			uint32_t q = (uint32_t)i;
			ow = q % (uint32_t)p.OW;
			q /= (uint32_t)p.OW;
			oh = q % (uint32_t)p.OH;
			r = q / (uint32_t)p.OH;
		} else {
			ow = (int64_t)(i % (uint64_t)p.OW);
			r = i / (uint64_t)p.OW;
			oh = (int64_t)(r % (uint64_t)p.OH);
			r /= (uint64_t)p.OH;
		}
		const float *xp = x + (int64_t)r * p.H * p.W;
		float ch = rz_coord((float)oh, p.sh, p.H, p.OH, p.coord), cw = rz_coord((float)ow, p.sw, p.W, p.OW, p.coord);
		if (!p.linear) {
			y[i] = xp[rz_nearest(ch, p.nearest, p.H) * p.W + rz_nearest(cw, p.nearest, p.W)];
			continue;
		}
		ch = fminf(fmaxf(ch, 0.f), (float)(p.H - 1));
		cw = fminf(fmaxf(cw, 0.f), (float)(p.W - 1));
		int64_t h0 = (int64_t)floorf(ch), w0 = (int64_t)floorf(cw);
		int64_t h1 = h0 + 1 < p.H ? h0 + 1 : h0, w1 = w0 + 1 < p.W ? w0 + 1 : w0;
		float fh = ch - (float)h0, fw = cw - (float)w0;
		float a = xp[h0 * p.W + w0], b = xp[h0 * p.W + w1], c = xp[h1 * p.W + w0], d = xp[h1 * p.W + w1];
		y[i] = (a * (1.f - fw) + b * fw) * (1.f - fh) + (c * (1.f - fw) + d * fw) * fh;
	}
}

static int op_resize(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0];
	if (x->dtype != WHCU_FLOAT || x->rank != 4 || n->opset < 11)
		return 1;
	const char *mode = n->attr_str(n->node, "mode", "nearest");
	const char *ct = n->attr_str(n->node, "coordinate_transformation_mode", "half_pixel");
	const char *nm = n->attr_str(n->node, "nearest_mode", "round_prefer_floor");
	struct rzparams p;
	memset(&p, 0, sizeof p);
	p.linear = !strcmp(mode, "linear");
	if (!p.linear && strcmp(mode, "nearest"))
		return 1;
	if (!strcmp(ct, "half_pixel")) p.coord = 0;
	else if (!strcmp(ct, "asymmetric")) p.coord = 1;
	else if (!strcmp(ct, "align_corners")) p.coord = 2;
	else if (!strcmp(ct, "pytorch_half_pixel")) p.coord = 3;
	else return 1;
	if (!strcmp(nm, "round_prefer_floor")) p.nearest = 0;
	else if (!strcmp(nm, "round_prefer_ceil")) p.nearest = 1;
	else if (!strcmp(nm, "floor")) p.nearest = 2;
	else if (!strcmp(nm, "ceil")) p.nearest = 3;
	else return 1;
	if (n->attr_int(n->node, "antialias", 0) || n->attr_ints(n->node, "axes", NULL, 0) >= 0 ||
	    strcmp(n->attr_str(n->node, "keep_aspect_ratio_policy", "stretch"), "stretch"))
		return 1;
	const struct whcu_tensor *scales = n->n_in > 2 && n->in[2].dtype && whcu_count(&n->in[2]) ? &n->in[2] : NULL;
	const struct whcu_tensor *sizes = n->n_in > 3 && n->in[3].dtype && whcu_count(&n->in[3]) ? &n->in[3] : NULL;
	int64_t od[4];
	float sc[4];
	if (sizes) {
		if (!host_ints_ok(sizes) || whcu_count(sizes) != 4)
			return 1;
		for (int d = 0; d < 4; d++) {
			od[d] = host_i64(sizes, (uint64_t)d);
			sc[d] = (float)od[d] / (float)x->dims[d];
		}
	} else if (scales) {
		if (scales->dtype != WHCU_FLOAT || !scales->host || whcu_count(scales) != 4)
			return 1;
		for (int d = 0; d < 4; d++) {
			sc[d] = ((const float *)scales->host)[d];
			od[d] = (int64_t)floor((double)x->dims[d] * (double)sc[d]);
		}
	} else {
		return 1;
	}
	if (od[0] != x->dims[0] || od[1] != x->dims[1])
		return 1;
	p.H = x->dims[2];
	p.W = x->dims[3];
	p.OH = od[2];
	p.OW = od[3];
	p.sh = sc[2];
	p.sw = sc[3];
	if (out_alloc(n, 0, WHCU_FLOAT, 4, od))
		return -1;
	uint64_t cnt = whcu_count(&n->out[0]);
	if (cnt && p.H && p.W)
		k_resize<<<grid_for(cnt), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)x->data, p, cnt);
	CKL();
	return 0;
}

/* ---- GEMM (cuBLASLt) ---- */

/* Y[b] (m x n, row-major, ldy) = alpha A[b] (m x k, or k x m when ta) B[b] (k x n, or n x k
 * when tb) + beta Y[b]; a and b hold floats, converted to the layer's format when it is
 * fp16 or bf16 (values already on its grid, so the conversion is exact). */
/* cuBLASLt's heuristic answer per problem, asked once (the query costs more than a small
 * GEMM): the same algorithm for the same shape in every run, hence the same bits */
struct gemm_key {
	int64_t m, n, k, batch, sa, sb;
	int32_t ta, tb, in_t, out_t, comp, beta;
};
struct gemm_algo {
	struct gemm_key key;
	cublasLtMatmulAlgo_t algo;
	/* its descriptors, made once and kept for the process (a GEMM's host cost is mostly
	 * making and destroying them) */
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
};
static struct gemm_algo g_gemm_cache[512];
static int g_gemm_n;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* cuBLASLt's handle, made at the first GEMM */
static int need_lt(void)
{
	if (g_t_lt >= 0)
		return 0;
	double t0 = now_ms();
	CKLT(cublasLtCreate(&g_lt));
	g_t_lt = now_ms() - t0;
	return 0;
}

/* cuDNN's handle, made at the first convolution (it loads cuDNN's engine libraries) */
static int need_dnn(void)
{
	if (g_t_dnn >= 0)
		return 0;
	double t0 = now_ms();
	cudnnStatus_t ds = cudnnCreate(&g_dnn);
	if (ds != CUDNN_STATUS_SUCCESS)
		return fail("cuDNN did not start: %s (install cuDNN 9 for CUDA 13)", cudnnGetErrorString(ds));
	cudnnSetStream(g_dnn, g_stream);
	g_t_dnn = now_ms() - t0;
	return 0;
}

/* ha, hb: the operands' persistent 16-bit copies (whcu_tensor.half) or NULL */
static int gemm_lt(int32_t prec, int fp16acc, const float *a, const float *b, float *y, int64_t m, int64_t nn, int64_t k,
		   int ta, int tb, int64_t batch, int64_t stride_a, int64_t stride_b, float alpha, float beta, const void *ha = NULL,
		   const void *hb = NULL)
{
	if (!m || !nn || !batch)
		return 0;
	if (need_lt())
		return -1;
	scratch sa, sb, sy;
	const void *pa = a, *pb = b;
	cudaDataType_t in_t = CUDA_R_32F, out_t = CUDA_R_32F, scale_t = CUDA_R_32F;
	cublasComputeType_t comp = CUBLAS_COMPUTE_32F;
	void *py = y;
	int64_t na = stride_a ? stride_a * batch : m * k, nb = stride_b ? stride_b * batch : k * nn;
	if (prec == WHCU_PREC_TF32)
		comp = CUBLAS_COMPUTE_32F_FAST_TF32;
	if (prec == WHCU_PREC_FP16 || prec == WHCU_PREC_BF16) {
		in_t = prec == WHCU_PREC_FP16 ? CUDA_R_16F : CUDA_R_16BF;
		if (!(pa = to_half(sa, a, (uint64_t)na, prec, ha)) || !(pb = to_half(sb, b, (uint64_t)nb, prec, hb)))
			return fail("gemm: converting the operands: %s", g_err);
		if (prec == WHCU_PREC_FP16 && fp16acc) {
			comp = CUBLAS_COMPUTE_16F;
			scale_t = CUDA_R_16F;
			out_t = CUDA_R_16F;
			if (beta != 0.f)
				return 1;
			if (!(py = sy.get((size_t)(m * nn * batch) * 2)))
				return -1;
		}
	}
	if (k == 0) {
		if (beta == 0.f)
			CK(cudaMemsetAsync(y, 0, (size_t)(m * nn * batch) * sizeof(float), g_stream));
		return 0;
	}
	cublasLtMatmulDesc_t op = NULL;
	cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
	cublasLtMatmulPreference_t pref = NULL;
	int rc = 0;
	/* column-major view: Y^T (n x m) = op(B)^T (n x k) op(A)^T (k x m) */
	cublasOperation_t opa = tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	uint64_t ra = tb ? (uint64_t)k : (uint64_t)nn, ca = tb ? (uint64_t)nn : (uint64_t)k;
	uint64_t rb = ta ? (uint64_t)m : (uint64_t)k, cb = ta ? (uint64_t)k : (uint64_t)m;
	int32_t bc = (int32_t)batch;
	int64_t sy_ = m * nn;
	__half alpha_h = __float2half(alpha), beta_h = __float2half(beta);
	const void *palpha = scale_t == CUDA_R_16F ? (const void *)&alpha_h : (const void *)&alpha;
	const void *pbeta = scale_t == CUDA_R_16F ? (const void *)&beta_h : (const void *)&beta;
	cublasLtMatmulHeuristicResult_t heur[1];
	int found = 0;
	struct gemm_key key;
	memset(&key, 0, sizeof key);
	key.m = m, key.n = nn, key.k = k, key.batch = batch, key.sa = stride_a, key.sb = stride_b;
	key.ta = ta, key.tb = tb, key.in_t = (int32_t)in_t, key.out_t = (int32_t)out_t, key.comp = (int32_t)comp, key.beta = beta != 0.f;
	struct gemm_algo *cached = NULL;
	for (int i = 0; i < g_gemm_n && !cached; i++)
		if (!memcmp(&g_gemm_cache[i].key, &key, sizeof key))
			cached = &g_gemm_cache[i];
#define LT(x)                                                                                    \
	do {                                                                                     \
		cublasStatus_t s_ = (x);                                                         \
		if (s_ != CUBLAS_STATUS_SUCCESS) {                                               \
			rc = fail("%s: cuBLASLt status %d (%s:%d)", #x, (int)s_, __FILE__, __LINE__); \
			goto out;                                                                \
		}                                                                                \
	} while (0)
	if (cached && !g_tac.list && !g_tac.name) {
		/* seen before: its descriptors and algorithm */
		LT(cublasLtMatmul(g_lt, cached->op, palpha, pb, cached->la, pa, cached->lb, pbeta, py, cached->lc, py, cached->lc, &cached->algo, g_ws,
				  g_ws_bytes, g_stream));
		goto done;
	}
	LT(cublasLtMatmulDescCreate(&op, comp, scale_t));
	LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
	LT(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
	LT(cublasLtMatrixLayoutCreate(&la, in_t, ra, ca, (int64_t)ra));
	LT(cublasLtMatrixLayoutCreate(&lb, in_t, rb, cb, (int64_t)rb));
	LT(cublasLtMatrixLayoutCreate(&lc, out_t, (uint64_t)nn, (uint64_t)m, nn));
	if (batch > 1) {
		LT(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
		LT(cublasLtMatrixLayoutSetAttribute(la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_b, sizeof stride_b));
		LT(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
		LT(cublasLtMatrixLayoutSetAttribute(lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride_a, sizeof stride_a));
		LT(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
		LT(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sy_, sizeof sy_));
	}
	if (g_tac.list || g_tac.name) {
		/* tactics (tactics.cu): list them, or run the one named */
		struct tac_gemm tp = {g_lt, m, nn, k, batch, stride_a, stride_b, ta, tb, beta != 0.f, in_t, prec, g_ws_bytes};
		if (g_tac.list)
			tac_gemm_list(&tp);
		if (g_tac.name) {
			cublasLtMatmulAlgo_t ta_algo;
			if (tac_gemm_find(&tp, op, la, lb, lc, comp == CUBLAS_COMPUTE_16F, g_tac.name, &ta_algo)) {
				rc = fail("%s", tac_error());
				goto out;
			}
			LT(cublasLtMatmul(g_lt, op, palpha, pb, la, pa, lb, pbeta, py, lc, py, lc, &ta_algo, g_ws, g_ws_bytes, g_stream));
			goto done;
		}
	}
	{
		const cublasLtMatmulAlgo_t *algo = cached ? &cached->algo : NULL;
		if (!algo) {
			LT(cublasLtMatmulPreferenceCreate(&pref));
			LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &g_ws_bytes, sizeof g_ws_bytes));
			double th = now_ms();
			LT(cublasLtMatmulAlgoGetHeuristic(g_lt, op, la, lb, lc, lc, pref, 1, heur, &found));
			g_ms_heur += now_ms() - th;
			g_n_heur++;
			if (!found) {
				rc = fail("cuBLASLt: no algorithm for %lldx%lldx%lld (type %d, compute %d)", (long long)m, (long long)nn, (long long)k,
					  (int)in_t, (int)comp);
				goto out;
			}
			algo = &heur[0].algo;
			if (g_gemm_n < (int)(sizeof g_gemm_cache / sizeof g_gemm_cache[0])) {
				cached = &g_gemm_cache[g_gemm_n++];
				memset(cached, 0, sizeof *cached);
				cached->key = key;
				cached->algo = heur[0].algo;
			}
		}
		LT(cublasLtMatmul(g_lt, op, palpha, pb, la, pa, lb, pbeta, py, lc, py, lc, algo, g_ws, g_ws_bytes, g_stream));
		if (cached && !cached->op) {
			/* kept for the next call */
			cached->op = op, cached->la = la, cached->lb = lb, cached->lc = lc;
			op = NULL;
			la = lb = lc = NULL;
		}
	}
done:
	if (py != (void *)y)
		rc = from_half(y, py, (uint64_t)(m * nn * batch), WHCU_PREC_FP16);
#undef LT
out:
	if (pref)
		cublasLtMatmulPreferenceDestroy(pref);
	if (lc)
		cublasLtMatrixLayoutDestroy(lc);
	if (lb)
		cublasLtMatrixLayoutDestroy(lb);
	if (la)
		cublasLtMatrixLayoutDestroy(la);
	if (op)
		cublasLtMatmulDescDestroy(op);
	return rc;
}

static int op_matmul(const struct whcu_node *n)
{
	const struct whcu_tensor *a = &n->in[0], *b = &n->in[1];
	if (a->dtype != WHCU_FLOAT || b->dtype != WHCU_FLOAT || a->rank < 1 || b->rank < 1)
		return 1;
	int64_t m = a->rank >= 2 ? a->dims[a->rank - 2] : 1, k = a->dims[a->rank - 1];
	int64_t kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0], nn = b->rank >= 2 ? b->dims[b->rank - 1] : 1;
	if (k != kb)
		return fail("MatMul: inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	int64_t ba = 1, bb = 1;
	for (int32_t d = 0; d < a->rank - 2; d++)
		ba *= a->dims[d];
	for (int32_t d = 0; d < b->rank - 2; d++)
		bb *= b->dims[d];
	/* the batch dims: equal, or one side without any (its matrix shared) */
	int32_t abr = a->rank > 2 ? a->rank - 2 : 0, bbr = b->rank > 2 ? b->rank - 2 : 0;
	int64_t od[WHCU_MAX_RANK];
	int32_t orank = 0;
	int64_t batch, stride_a, stride_b;
	if (bbr == 0 || bb == 1) {
		if (bbr > abr)
			return 1;
		for (int32_t d = 0; d < abr; d++)
			od[orank++] = a->dims[d];
		/* a's batch folded into its rows */
		m *= ba;
		batch = 1;
		stride_a = stride_b = 0;
	} else if (abr == bbr && ba == bb) {
		for (int32_t d = 0; d < abr; d++) {
			if (a->dims[d] != b->dims[d])
				return 1;
			od[orank++] = a->dims[d];
		}
		batch = ba;
		stride_a = m * k;
		stride_b = k * nn;
	} else if (ba == 1 && abr <= bbr) {
		for (int32_t d = 0; d < bbr; d++)
			od[orank++] = b->dims[d];
		batch = bb;
		stride_a = 0;
		stride_b = k * nn;
	} else {
		return 1;
	}
	int64_t mrow = a->rank >= 2 ? a->dims[a->rank - 2] : 1;
	if (a->rank >= 2)
		od[orank++] = mrow;
	if (b->rank >= 2)
		od[orank++] = nn;
	if (out_alloc(n, 0, WHCU_FLOAT, orank, od))
		return -1;
	int r = gemm_lt(n->prec, n->fp16_accumulate || tac_acc16(n->tactic), (const float *)a->data, (const float *)b->data, (float *)n->out[0].data, m, nn, k, 0, 0,
			batch, stride_a, stride_b, 1.f, 0.f, a->half, b->half);
	return r;
}

static int op_gemm(const struct whcu_node *n)
{
	const struct whcu_tensor *a = &n->in[0], *b = &n->in[1];
	const struct whcu_tensor *c = n->n_in > 2 && n->in[2].dtype ? &n->in[2] : NULL;
	if (a->dtype != WHCU_FLOAT || b->dtype != WHCU_FLOAT || a->rank != 2 || b->rank != 2 || (c && c->dtype != WHCU_FLOAT))
		return 1;
	int ta = (int)n->attr_int(n->node, "transA", 0), tb = (int)n->attr_int(n->node, "transB", 0);
	float alpha = (float)n->attr_float(n->node, "alpha", 1.0), beta = (float)n->attr_float(n->node, "beta", 1.0);
	int64_t m = ta ? a->dims[1] : a->dims[0], k = ta ? a->dims[0] : a->dims[1];
	int64_t kb = tb ? b->dims[1] : b->dims[0], nn = tb ? b->dims[0] : b->dims[1];
	if (k != kb)
		return fail("Gemm: inner dimensions %lld and %lld differ", (long long)k, (long long)kb);
	if (c && (n->fp16_accumulate || tac_acc16(n->tactic)) && n->prec == WHCU_PREC_FP16)
		return 1;
	int64_t od[2] = {m, nn};
	if (out_alloc(n, 0, WHCU_FLOAT, 2, od))
		return -1;
	if (c && beta != 0.f) {
		/* Y starts as C broadcast to m x n */
		if (c->rank > 2 || (c->rank == 2 && ((c->dims[0] != 1 && c->dims[0] != m) || (c->dims[1] != 1 && c->dims[1] != nn))) ||
		    (c->rank == 1 && c->dims[0] != 1 && c->dims[0] != nn))
			return fail("Gemm: C does not broadcast to %lldx%lld", (long long)m, (long long)nn);
		struct shape s = {2, {m, nn}};
		struct strided p;
		memset(&p, 0, sizeof p);
		p.rank = 2;
		p.dims[0] = m;
		p.dims[1] = nn;
		bstrides(c, &s, p.ss);
		p.ds[0] = nn;
		p.ds[1] = 1;
		if (copy_strided(n->out[0].data, c->data, 4, &p))
			return -1;
	} else {
		beta = 0.f;
	}
	return gemm_lt(n->prec, n->fp16_accumulate || tac_acc16(n->tactic), (const float *)a->data, (const float *)b->data, (float *)n->out[0].data, m, nn, k,
		       ta, tb, 1, 0, 0, alpha, beta, a->half, b->half);
}

/* ---- Conv (cuDNN) ---- */

__global__ void k_add_channel_bias(float *y, const float *b, uint64_t n, int64_t c, int64_t inner)
{
	GRID_STRIDE(i, n)
	{
		uint64_t ch = n <= 0x7fffffffu ? ((uint32_t)i / (uint32_t)inner) % (uint32_t)c : (i / (uint64_t)inner) % (uint64_t)c;
		y[i] += b[ch];
	}
}

/* cuDNN's choice per convolution, asked once per shape (the query costs more than a small
 * convolution) */
struct conv_key {
	int xd[4], wd[4], pad[2], st[2], dil[2], group, dt, prec, transposed;
};
struct conv_algo {
	struct conv_key key;
	int algo;
	cudnnMathType_t math;
	size_t ws;
	int none; /* no algorithm keeps to the precision: declined */
	/* Conv's descriptors, made once (NULL: made per call) */
	cudnnTensorDescriptor_t tx, ty;
	cudnnFilterDescriptor_t fw;
	cudnnConvolutionDescriptor_t cv;
};
static struct conv_algo g_conv_cache[512];
static int g_conv_n;

static struct conv_algo *conv_cached(const struct conv_key *k)
{
	for (int i = 0; i < g_conv_n; i++)
		if (!memcmp(&g_conv_cache[i].key, k, sizeof *k))
			return &g_conv_cache[i];
	return NULL;
}

static struct conv_algo *conv_remember(const struct conv_key *k, int algo, cudnnMathType_t math, size_t ws, int none)
{
	static struct conv_algo spare;
	struct conv_algo *c = g_conv_n < (int)(sizeof g_conv_cache / sizeof g_conv_cache[0]) ? &g_conv_cache[g_conv_n++] : &spare;
	memset(c, 0, sizeof *c);
	c->key = *k;
	c->algo = algo;
	c->math = math;
	c->ws = ws;
	c->none = none;
	return c;
}

static int op_conv(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *w = &n->in[1];
	const struct whcu_tensor *b = n->n_in > 2 && n->in[2].dtype ? &n->in[2] : NULL;
	if (x->dtype != WHCU_FLOAT || w->dtype != WHCU_FLOAT || (b && b->dtype != WHCU_FLOAT))
		return 1;
	if (x->rank != 4 && x->rank != 3)
		return 1;
	if (w->rank != x->rank)
		return fail("Conv: weight rank %d, input rank %d", w->rank, x->rank);
	const char *ap = n->attr_str(n->node, "auto_pad", "NOTSET");
	int sp = x->rank - 2;
	int64_t pads[4] = {0, 0, 0, 0}, st[2] = {1, 1}, dil[2] = {1, 1};
	int64_t group = n->attr_int(n->node, "group", 1);
	if (n->attr_ints(n->node, "strides", st, 2) == -1)
		st[0] = st[1] = 1;
	if (n->attr_ints(n->node, "dilations", dil, 2) == -1)
		dil[0] = dil[1] = 1;
	int64_t in_sp[2] = {x->dims[2], sp == 2 ? x->dims[3] : 1}, k_sp[2] = {w->dims[2], sp == 2 ? w->dims[3] : 1};
	if (!strcmp(ap, "NOTSET")) {
		int32_t np = n->attr_ints(n->node, "pads", pads, 4);
		if (np == 2 * sp && sp == 1) {
			pads[2] = pads[1];
			pads[1] = 0;
			pads[3] = 0;
		} else if (np != -1 && np != 2 * sp) {
			return 1;
		}
	} else if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
		for (int d = 0; d < sp; d++) {
			int64_t out = (in_sp[d] + st[d] - 1) / st[d];
			int64_t need = (out - 1) * st[d] + (k_sp[d] - 1) * dil[d] + 1 - in_sp[d];
			if (need < 0)
				need = 0;
			int64_t lo = !strcmp(ap, "SAME_UPPER") ? need / 2 : need - need / 2;
			pads[d] = lo;
			pads[d + 2] = need - lo;
		}
	} else if (strcmp(ap, "VALID")) {
		return 1;
	}
	if (sp == 1) {
		st[1] = dil[1] = 1;
	}
	/* cuDNN takes symmetric padding only */
	if (pads[0] != pads[2] || pads[1] != pads[3])
		return 1;
	int64_t N = x->dims[0], C = x->dims[1], M = w->dims[0];
	if (group <= 0 || C != w->dims[1] * group || M % group)
		return fail("Conv: %lld input channels, weight %lldx%lld, group %lld", (long long)C, (long long)M, (long long)w->dims[1],
			    (long long)group);
	int64_t od[4];
	od[0] = N;
	od[1] = M;
	for (int d = 0; d < 2; d++) {
		int64_t ext = (k_sp[d] - 1) * dil[d] + 1;
		od[2 + d] = (in_sp[d] + pads[d] + pads[d + 2] - ext) / st[d] + 1;
	}
	if (od[2] <= 0 || od[3] <= 0)
		return fail("Conv: empty output");
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, od))
		return -1;
	if (!N)
		return 0;
	if (need_dnn())
		return -1;
	int32_t prec = n->prec;
	bool half = prec == WHCU_PREC_FP16 || prec == WHCU_PREC_BF16;
	cudnnDataType_t dt = prec == WHCU_PREC_FP16 ? CUDNN_DATA_HALF : prec == WHCU_PREC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
	scratch sx, sw, sy, sws;
	const void *px = x->data, *pw = w->data;
	void *py = n->out[0].data;
	uint64_t ny = (uint64_t)(od[0] * od[1] * od[2] * od[3]);
	if (half) {
		if (!(px = to_half(sx, (const float *)x->data, whcu_count(x), prec)) || !(pw = to_half(sw, (const float *)w->data, whcu_count(w), prec, w->half)) ||
		    !(py = sy.get(ny * 2)))
			return -1;
	}
	cudnnTensorDescriptor_t tx = NULL, ty = NULL;
	cudnnFilterDescriptor_t fw = NULL;
	cudnnConvolutionDescriptor_t cv = NULL;
	int rc = 0;
	int pad_a[2] = {(int)pads[0], (int)pads[1]}, st_a[2] = {(int)st[0], (int)st[1]}, dil_a[2] = {(int)dil[0], (int)dil[1]};
	int xd[4] = {(int)N, (int)C, (int)in_sp[0], (int)in_sp[1]}, yd[4] = {(int)od[0], (int)od[1], (int)od[2], (int)od[3]};
	int wd[4] = {(int)M, (int)w->dims[1], (int)k_sp[0], (int)k_sp[1]};
	cudnnConvolutionFwdAlgoPerf_t perf[16];
	int got = 0;
	cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
	size_t ws = 0;
	void *wsp = NULL;
	float one = 1.f, zero = 0.f;
	cudnnMathType_t math = prec == WHCU_PREC_FP32 ? CUDNN_FMA_MATH : prec == WHCU_PREC_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
	struct conv_key key;
	memset(&key, 0, sizeof key);
	memcpy(key.xd, xd, sizeof xd);
	memcpy(key.wd, wd, sizeof wd);
	memcpy(key.pad, pad_a, sizeof pad_a);
	memcpy(key.st, st_a, sizeof st_a);
	memcpy(key.dil, dil_a, sizeof dil_a);
	key.group = (int)group;
	key.dt = (int)dt;
	key.prec = prec;
	struct conv_algo *c = g_tac.name ? NULL : conv_cached(&key); /* a named tactic: its own descriptors */
#define DNN(x)                                                                                             \
	do {                                                                                               \
		cudnnStatus_t s_ = (x);                                                                    \
		if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
			rc = fail("%s: %s (%s:%d)", #x, cudnnGetErrorString(s_), __FILE__, __LINE__);     \
			goto out;                                                                          \
		}                                                                                          \
	} while (0)
	if (c && c->none)
		return 1; /* none that keeps to the precision: the caller runs it on the CPU */
	if (c && c->cv) {
		/* seen before: its descriptors and algorithm */
		if (c->ws && !(wsp = sws.get(c->ws)))
			return -1;
		if (g_tac.list)
			tac_conv_list(g_dnn, c->tx, c->fw, c->cv, c->ty, prec, c->algo, c->math);
		DNN(cudnnConvolutionForward(g_dnn, &one, c->tx, px, c->fw, pw, c->cv, (cudnnConvolutionFwdAlgo_t)c->algo, wsp, c->ws, &zero,
					    c->ty, py));
		goto finish;
	}
	DNN(cudnnCreateTensorDescriptor(&tx));
	DNN(cudnnCreateTensorDescriptor(&ty));
	DNN(cudnnCreateFilterDescriptor(&fw));
	DNN(cudnnCreateConvolutionDescriptor(&cv));
	DNN(cudnnSetTensor4dDescriptor(tx, CUDNN_TENSOR_NCHW, dt, xd[0], xd[1], xd[2], xd[3]));
	DNN(cudnnSetTensor4dDescriptor(ty, CUDNN_TENSOR_NCHW, dt, yd[0], yd[1], yd[2], yd[3]));
	DNN(cudnnSetFilter4dDescriptor(fw, dt, CUDNN_TENSOR_NCHW, wd[0], wd[1], wd[2], wd[3]));
	DNN(cudnnSetConvolution2dDescriptor(cv, pad_a[0], pad_a[1], st_a[0], st_a[1], dil_a[0], dil_a[1], CUDNN_CROSS_CORRELATION,
					    CUDNN_DATA_FLOAT));
	DNN(cudnnSetConvolutionGroupCount(cv, (int)group));
	DNN(cudnnSetConvolutionMathType(cv, math));
	{
		static struct conv_algo tac_c;
		if (g_tac.name) {
			int ta = 0;
			cudnnMathType_t tm = CUDNN_DEFAULT_MATH;
			if (tac_conv_find(g_dnn, tx, fw, cv, ty, prec, g_tac.name, &ta, &tm)) {
				rc = fail("%s", tac_error());
				goto out;
			}
			DNN(cudnnSetConvolutionMathType(cv, tm));
			DNN(cudnnGetConvolutionForwardWorkspaceSize(g_dnn, tx, fw, cv, ty, (cudnnConvolutionFwdAlgo_t)ta, &ws));
			memset(&tac_c, 0, sizeof tac_c);
			tac_c.key = key, tac_c.algo = ta, tac_c.math = tm, tac_c.ws = ws;
			c = &tac_c; /* not cached: its descriptors go at the end */
		}
		if (!c && !g_conv_query) {
			/* the implicit-GEMM family at the layer's math, tried in order, without cuDNN's
			 * ranking of every algorithm (cudnnGetConvolutionForwardAlgorithm_v7 costs about
			 * 10 ms per shape, more than a small model's whole run): the first one cuDNN can
			 * size a workspace for is the choice (docs/gpu.md, "Where a GPU process's time
			 * goes"); WHITTLE_CUDA_CONV_QUERY=1 asks cuDNN's ranking as before */
			static const cudnnConvolutionFwdAlgo_t fam[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
									CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM};
			double tq = now_ms();
			for (size_t i = 0; i < sizeof fam / sizeof fam[0] && !c; i++) {
				size_t need = 0;
				if (cudnnGetConvolutionForwardWorkspaceSize(g_dnn, tx, fw, cv, ty, fam[i], &need) == CUDNN_STATUS_SUCCESS &&
				    need <= ((size_t)1 << 30))
					c = conv_remember(&key, (int)fam[i], math, need, 0);
			}
			g_ms_direct += now_ms() - tq;
			g_n_direct++;
		}
		if (!c) {
			double tq = now_ms();
			DNN(cudnnGetConvolutionForwardAlgorithm_v7(g_dnn, tx, fw, cv, ty, 16, &got, perf));
			g_ms_convq += now_ms() - tq;
			g_n_convq++;
			/* the implicit-GEMM family first: it sums products as the CPU's kernels do (FFT and
			 * Winograd transform the operands, which costs accuracy in fp16 and bf16) */
			int pick = -1;
			for (int pass = 0; pass < 2 && pick < 0; pass++)
				for (int i = 0; i < got && pick < 0; i++)
					if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
					    (prec != WHCU_PREC_FP32 || perf[i].mathType == CUDNN_FMA_MATH) &&
					    (pass == 1 || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
					     perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || perf[i].algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM))
						pick = i;
			if (pick < 0) {
				c = conv_remember(&key, 0, math, 0, 1);
			} else {
				DNN(cudnnSetConvolutionMathType(cv, perf[pick].mathType));
				DNN(cudnnGetConvolutionForwardWorkspaceSize(g_dnn, tx, fw, cv, ty, perf[pick].algo, &ws));
				c = conv_remember(&key, (int)perf[pick].algo, perf[pick].mathType, ws, 0);
			}
		}
		if (c->none) {
			/* none that keeps to the precision: the caller runs it on the CPU */
			rc = 1;
			goto out;
		}
		algo = (cudnnConvolutionFwdAlgo_t)c->algo;
		ws = c->ws;
		DNN(cudnnSetConvolutionMathType(cv, c->math));
		if (g_tac.list)
			tac_conv_list(g_dnn, tx, fw, cv, ty, prec, c->algo, c->math);
	}
	if (ws && !(wsp = sws.get(ws))) {
		rc = -1;
		goto out;
	}
	DNN(cudnnConvolutionForward(g_dnn, &one, tx, px, fw, pw, cv, algo, wsp, ws, &zero, ty, py));
	if (c != conv_cached(&key) || c->cv) {
		/* the cache is full (or holds these already): made per call */
	} else {
		c->tx = tx, c->ty = ty, c->fw = fw, c->cv = cv; /* kept for the next call */
		tx = ty = NULL;
		fw = NULL;
		cv = NULL;
	}
finish:
	if (half && (rc = from_half((float *)n->out[0].data, py, ny, prec)) != 0)
		goto out;
	if (b) {
		if (whcu_count(b) != (uint64_t)M) {
			rc = fail("Conv: bias of %llu values for %lld channels", (unsigned long long)whcu_count(b), (long long)M);
			goto out;
		}
		k_add_channel_bias<<<grid_for(ny), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)b->data, ny, M, od[2] * od[3]);
		if (cudaGetLastError() != cudaSuccess)
			rc = fail("Conv: bias kernel launch failed");
	}
#undef DNN
out:
	if (cv)
		cudnnDestroyConvolutionDescriptor(cv);
	if (fw)
		cudnnDestroyFilterDescriptor(fw);
	if (ty)
		cudnnDestroyTensorDescriptor(ty);
	if (tx)
		cudnnDestroyTensorDescriptor(tx);
	return rc;
}

/* ConvTranspose as cuDNN's backward-data convolution: y (N, M, OH, OW) is the "input" whose
 * forward convolution with w (C, M/group, kh, kw) gives x (N, C, H, W) */
static int op_conv_transpose(const struct whcu_node *n)
{
	const struct whcu_tensor *x = &n->in[0], *w = &n->in[1];
	const struct whcu_tensor *b = n->n_in > 2 && n->in[2].dtype ? &n->in[2] : NULL;
	if (x->dtype != WHCU_FLOAT || w->dtype != WHCU_FLOAT || (b && b->dtype != WHCU_FLOAT) || (x->rank != 4 && x->rank != 3) ||
	    w->rank != x->rank)
		return 1;
	if (strcmp(n->attr_str(n->node, "auto_pad", "NOTSET"), "NOTSET") || n->attr_ints(n->node, "output_shape", NULL, 0) >= 0)
		return 1;
	int sp = x->rank - 2;
	int64_t pads[4] = {0, 0, 0, 0}, st[2] = {1, 1}, dil[2] = {1, 1}, opad[2] = {0, 0};
	int64_t group = n->attr_int(n->node, "group", 1);
	int32_t np = n->attr_ints(n->node, "pads", pads, 4);
	if (np == 2 && sp == 1) {
		pads[2] = pads[1];
		pads[1] = 0;
		pads[3] = 0;
	} else if (np != -1 && np != 2 * sp) {
		return 1;
	}
	n->attr_ints(n->node, "strides", st, 2);
	if (n->attr_ints(n->node, "dilations", dil, 2) == -1)
		dil[0] = dil[1] = 1;
	if (n->attr_ints(n->node, "output_padding", opad, 2) == -1)
		opad[0] = opad[1] = 0;
	if (sp == 1) {
		dil[1] = 1;
		opad[1] = 0;
	}
	if (pads[0] != pads[2] || pads[1] != pads[3])
		return 1;
	int64_t N = x->dims[0], C = x->dims[1];
	if (group <= 0 || C != w->dims[0] || C % group)
		return fail("ConvTranspose: %lld input channels, weight %lld, group %lld", (long long)C, (long long)w->dims[0], (long long)group);
	int64_t M = w->dims[1] * group;
	int64_t in_sp[2] = {x->dims[2], sp == 2 ? x->dims[3] : 1}, k_sp[2] = {w->dims[2], sp == 2 ? w->dims[3] : 1};
	int64_t od[4] = {N, M, 1, 1};
	for (int d = 0; d < 2; d++) {
		od[2 + d] = st[d] * (in_sp[d] - 1) + opad[d] + (k_sp[d] - 1) * dil[d] + 1 - pads[d] - pads[d + 2];
		if (od[2 + d] <= 0 || opad[d] >= st[d])
			return 1;
	}
	if (out_alloc(n, 0, WHCU_FLOAT, x->rank, od))
		return -1;
	if (!N)
		return 0;
	if (need_dnn())
		return -1;
	int32_t prec = n->prec;
	bool half = prec == WHCU_PREC_FP16 || prec == WHCU_PREC_BF16;
	cudnnDataType_t dt = prec == WHCU_PREC_FP16 ? CUDNN_DATA_HALF : prec == WHCU_PREC_BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
	scratch sx, sw, sy, sws;
	const void *px = x->data, *pw = w->data;
	void *py = n->out[0].data;
	uint64_t ny = (uint64_t)(od[0] * od[1] * od[2] * od[3]);
	if (half) {
		if (!(px = to_half(sx, (const float *)x->data, whcu_count(x), prec)) || !(pw = to_half(sw, (const float *)w->data, whcu_count(w), prec, w->half)) ||
		    !(py = sy.get(ny * 2)))
			return -1;
	}
	cudnnTensorDescriptor_t tx = NULL, ty = NULL;
	cudnnFilterDescriptor_t fw = NULL;
	cudnnConvolutionDescriptor_t cv = NULL;
	int rc = 0;
	int pad_a[2] = {(int)pads[0], (int)pads[1]}, st_a[2] = {(int)st[0], (int)st[1]}, dil_a[2] = {(int)dil[0], (int)dil[1]};
	int xd[4] = {(int)N, (int)C, (int)in_sp[0], (int)in_sp[1]}, yd[4] = {(int)od[0], (int)od[1], (int)od[2], (int)od[3]};
	int wd[4] = {(int)C, (int)w->dims[1], (int)k_sp[0], (int)k_sp[1]};
	cudnnConvolutionBwdDataAlgoPerf_t perf[16];
	int got = 0;
	size_t ws = 0;
	void *wsp = NULL;
	float one = 1.f, zero = 0.f;
	cudnnMathType_t math = prec == WHCU_PREC_FP32 ? CUDNN_FMA_MATH : prec == WHCU_PREC_TF32 ? CUDNN_DEFAULT_MATH : CUDNN_TENSOR_OP_MATH;
	struct conv_algo *c;
#define DNN(x)                                                                                             \
	do {                                                                                               \
		cudnnStatus_t s_ = (x);                                                                    \
		if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
			rc = fail("%s: %s (%s:%d)", #x, cudnnGetErrorString(s_), __FILE__, __LINE__);     \
			goto out;                                                                          \
		}                                                                                          \
	} while (0)
	DNN(cudnnCreateTensorDescriptor(&tx));
	DNN(cudnnCreateTensorDescriptor(&ty));
	DNN(cudnnCreateFilterDescriptor(&fw));
	DNN(cudnnCreateConvolutionDescriptor(&cv));
	DNN(cudnnSetTensor4dDescriptor(tx, CUDNN_TENSOR_NCHW, dt, xd[0], xd[1], xd[2], xd[3]));
	DNN(cudnnSetTensor4dDescriptor(ty, CUDNN_TENSOR_NCHW, dt, yd[0], yd[1], yd[2], yd[3]));
	DNN(cudnnSetFilter4dDescriptor(fw, dt, CUDNN_TENSOR_NCHW, wd[0], wd[1], wd[2], wd[3]));
	DNN(cudnnSetConvolution2dDescriptor(cv, pad_a[0], pad_a[1], st_a[0], st_a[1], dil_a[0], dil_a[1], CUDNN_CROSS_CORRELATION,
					    CUDNN_DATA_FLOAT));
	DNN(cudnnSetConvolutionGroupCount(cv, (int)group));
	DNN(cudnnSetConvolutionMathType(cv, math));
	{
		struct conv_key key;
		memset(&key, 0, sizeof key);
		memcpy(key.xd, xd, sizeof xd);
		memcpy(key.wd, wd, sizeof wd);
		memcpy(key.pad, pad_a, sizeof pad_a);
		memcpy(key.st, st_a, sizeof st_a);
		memcpy(key.dil, dil_a, sizeof dil_a);
		key.group = (int)group;
		key.dt = (int)dt;
		key.prec = prec;
		key.transposed = 1 + (int)(opad[0] * 64 + opad[1]);
		c = conv_cached(&key);
		if (!c) {
			DNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(g_dnn, fw, tx, cv, ty, 16, &got, perf));
			int pick = -1;
			for (int i = 0; i < got && pick < 0; i++)
				if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].determinism == CUDNN_DETERMINISTIC &&
				    (prec != WHCU_PREC_FP32 || perf[i].mathType == CUDNN_FMA_MATH))
					pick = i;
			if (pick < 0) {
				c = conv_remember(&key, 0, math, 0, 1);
			} else {
				DNN(cudnnSetConvolutionMathType(cv, perf[pick].mathType));
				DNN(cudnnGetConvolutionBackwardDataWorkspaceSize(g_dnn, fw, tx, cv, ty, perf[pick].algo, &ws));
				c = conv_remember(&key, (int)perf[pick].algo, perf[pick].mathType, ws, 0);
			}
		}
		if (c->none) {
			rc = 1;
			goto out;
		}
		ws = c->ws;
		DNN(cudnnSetConvolutionMathType(cv, c->math));
	}
	if (ws && !(wsp = sws.get(ws))) {
		rc = -1;
		goto out;
	}
	DNN(cudnnConvolutionBackwardData(g_dnn, &one, fw, pw, tx, px, cv, (cudnnConvolutionBwdDataAlgo_t)c->algo, wsp, ws, &zero, ty, py));
	if (half && (rc = from_half((float *)n->out[0].data, py, ny, prec)) != 0)
		goto out;
	if (b) {
		if (whcu_count(b) != (uint64_t)M) {
			rc = fail("ConvTranspose: bias of %llu values for %lld channels", (unsigned long long)whcu_count(b), (long long)M);
			goto out;
		}
		k_add_channel_bias<<<grid_for(ny), 256, 0, g_stream>>>((float *)n->out[0].data, (const float *)b->data, ny, M, od[2] * od[3]);
		if (cudaGetLastError() != cudaSuccess)
			rc = fail("ConvTranspose: bias kernel launch failed");
	}
#undef DNN
out:
	if (cv)
		cudnnDestroyConvolutionDescriptor(cv);
	if (fw)
		cudnnDestroyFilterDescriptor(fw);
	if (ty)
		cudnnDestroyTensorDescriptor(ty);
	if (tx)
		cudnnDestroyTensorDescriptor(tx);
	return rc;
}

/* ---- ops in their own files (one translation unit: they use the helpers above) ---- */

#include "executor/cuda/fill.cu"
#include "executor/cuda/rnn.cu"
#include "executor/cuda/signal.cu"

/* ---- the op table ---- */

struct op_entry {
	const char *name;
	int (*run)(const struct whcu_node *n, int arg);
	int arg;
	uint32_t host_mask; /* inputs wanted on the host */
	int32_t min_opset;
};

static int r_unary(const struct whcu_node *n, int a) { return op_unary(n, a); }
static int r_binary(const struct whcu_node *n, int a) { return op_binary(n, a); }
static int r_variadic(const struct whcu_node *n, int a) { return op_variadic(n, a); }
static int r_reduce(const struct whcu_node *n, int a) { return op_reduce(n, a); }
static int r_gpool(const struct whcu_node *n, int a) { return op_global_pool(n, a); }
static int r_softmax(const struct whcu_node *n, int a) { return op_softmax(n, a); }
static int r_pool(const struct whcu_node *n, int a) { return op_pool(n, a); }
static int r_cast(const struct whcu_node *n, int) { return op_cast(n); }
static int r_where(const struct whcu_node *n, int) { return op_where(n); }
static int r_transpose(const struct whcu_node *n, int) { return op_transpose(n); }
static int r_slice(const struct whcu_node *n, int) { return op_slice(n); }
static int r_concat(const struct whcu_node *n, int) { return op_concat(n); }
static int r_split(const struct whcu_node *n, int) { return op_split(n); }
static int r_expand(const struct whcu_node *n, int) { return op_expand(n); }
static int r_gather(const struct whcu_node *n, int) { return op_gather(n); }
static int r_gather_el(const struct whcu_node *n, int) { return op_gather_elements(n); }
static int r_layernorm(const struct whcu_node *n, int) { return op_layernorm(n); }
static int r_batchnorm(const struct whcu_node *n, int) { return op_batchnorm(n); }
static int r_resize(const struct whcu_node *n, int) { return op_resize(n); }
static int r_matmul(const struct whcu_node *n, int) { return op_matmul(n); }
static int r_gemm(const struct whcu_node *n, int) { return op_gemm(n); }
static int r_conv(const struct whcu_node *n, int) { return op_conv(n); }
static int r_conv_t(const struct whcu_node *n, int) { return op_conv_transpose(n); }
static int r_const_of_shape(const struct whcu_node *n, int) { return op_constant_of_shape(n); }
static int r_stft(const struct whcu_node *n, int) { return op_stft(n); }
static int r_gru(const struct whcu_node *n, int) { return op_gru(n); }

static const struct op_entry ops[] = {
	{"Relu", r_unary, U_RELU, 0, 1},
	{"Sigmoid", r_unary, U_SIGMOID, 0, 1},
	{"Tanh", r_unary, U_TANH, 0, 1},
	{"Erf", r_unary, U_ERF, 0, 1},
	{"Neg", r_unary, U_NEG, 0, 1},
	{"Sqrt", r_unary, U_SQRT, 0, 1},
	{"Reciprocal", r_unary, U_RECIP, 0, 1},
	{"Log", r_unary, U_LOG, 0, 1},
	{"Exp", r_unary, U_EXP, 0, 1},
	{"Abs", r_unary, U_ABS, 0, 1},
	{"HardSigmoid", r_unary, U_HSIGMOID, 0, 1},
	{"HardSwish", r_unary, U_HSWISH, 0, 1},
	{"Clip", r_unary, U_CLIP, 0x6, 1},
	{"Gelu", r_unary, U_GELU, 0, 1},
	{"LeakyRelu", r_unary, U_LEAKY, 0, 1},
	{"Softplus", r_unary, U_SOFTPLUS, 0, 1},
	{"Floor", r_unary, U_FLOOR, 0, 1},
	{"Ceil", r_unary, U_CEIL, 0, 1},
	{"Sin", r_unary, U_SIN, 0, 1},
	{"Cos", r_unary, U_COS, 0, 1},
	{"Elu", r_unary, U_ELU, 0, 1},
	{"Not", r_unary, U_NOT, 0, 1},
	{"Sign", r_unary, U_SIGN, 0, 1},
	{"Round", r_unary, U_ROUND, 0, 1},
	{"Add", r_binary, B_ADD, 0, 7},
	{"Sub", r_binary, B_SUB, 0, 7},
	{"Mul", r_binary, B_MUL, 0, 7},
	{"Div", r_binary, B_DIV, 0, 7},
	{"Pow", r_binary, B_POW, 0, 7},
	{"PRelu", r_binary, B_PRELU, 0, 7},
	{"Equal", r_binary, B_EQ, 0, 7},
	{"Less", r_binary, B_LT, 0, 7},
	{"LessOrEqual", r_binary, B_LE, 0, 7},
	{"Greater", r_binary, B_GT, 0, 7},
	{"GreaterOrEqual", r_binary, B_GE, 0, 7},
	{"And", r_binary, B_AND, 0, 7},
	{"Or", r_binary, B_OR, 0, 7},
	{"Xor", r_binary, B_XOR, 0, 7},
	{"Max", r_variadic, B_MAX, 0, 8},
	{"Min", r_variadic, B_MIN, 0, 8},
	{"Sum", r_variadic, B_ADD, 0, 8},
	{"Where", r_where, 0, 0, 9},
	{"Cast", r_cast, 0, 0, 6},
	{"Transpose", r_transpose, 0, 0, 1},
	{"Slice", r_slice, 0, 0x1e, 1},
	{"Concat", r_concat, 0, 0, 4},
	{"Split", r_split, 0, 0x2, 2},
	{"Expand", r_expand, 0, 0x2, 8},
	{"Gather", r_gather, 0, 0, 1},
	{"GatherElements", r_gather_el, 0, 0, 11},
	{"ReduceSum", r_reduce, R_SUM, 0x2, 1},
	{"ReduceMean", r_reduce, R_MEAN, 0x2, 1},
	{"ReduceMax", r_reduce, R_MAX, 0x2, 1},
	{"ReduceMin", r_reduce, R_MIN, 0x2, 1},
	{"ReduceSumSquare", r_reduce, R_SUMSQ, 0x2, 1},
	{"ReduceL2", r_reduce, R_L2, 0x2, 1},
	{"ReduceProd", r_reduce, R_PROD, 0x2, 1},
	{"GlobalAveragePool", r_gpool, R_MEAN, 0, 1},
	{"GlobalMaxPool", r_gpool, R_MAX, 0, 1},
	{"Softmax", r_softmax, 0, 0, 1},
	{"LogSoftmax", r_softmax, 1, 0, 1},
	{"LayerNormalization", r_layernorm, 0, 0, 17},
	{"BatchNormalization", r_batchnorm, 0, 0, 9},
	{"MaxPool", r_pool, 1, 0, 8},
	{"AveragePool", r_pool, 0, 0, 7},
	{"Resize", r_resize, 0, 0xe, 11},
	{"MatMul", r_matmul, 0, 0, 1},
	{"Gemm", r_gemm, 0, 0, 7},
	{"Conv", r_conv, 0, 0, 1},
	{"ConvTranspose", r_conv_t, 0, 0, 1},
	{"ConstantOfShape", r_const_of_shape, 0, 0x1, 9},
	{"STFT", r_stft, 0, 0xa, 17},
	{"GRU", r_gru, 0, 0x10, 1},
};

static const struct op_entry *find_op(const struct whcu_node *n)
{
	if (n->domain && n->domain[0] && strcmp(n->domain, "ai.onnx"))
		return NULL;
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (!strcmp(ops[i].name, n->op_type))
			return n->opset >= ops[i].min_opset ? &ops[i] : NULL;
	return NULL;
}

/* ---- the table ---- */

static int api_probe(int device, char *err, size_t errlen)
{
	int count = 0;
	cudaError_t e = cudaGetDeviceCount(&count);
	if (e != cudaSuccess || count == 0) {
		snprintf(err, errlen, "no usable CUDA GPU or driver: %s (run on a machine with an NVIDIA GPU and its driver, or drop --device)",
			 e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
		return -1;
	}
	if (device < 0 || device >= count) {
		snprintf(err, errlen, "no GPU %d: this machine has %d (give --device cuda:0 to cuda:%d)", device, count, count - 1);
		return -1;
	}
	return 0;
}

static int api_init(int device, char *err, size_t errlen)
{
	double t0 = now_ms();
	cudaError_t e;
	if (api_probe(device, err, errlen) != 0)
		return -1;
	/* cudaFree(0) makes the context now, so that its cost is counted here */
	if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(0)) != cudaSuccess) {
		snprintf(err, errlen, "GPU %d: %s (check the driver with nvidia-smi)", device, cudaGetErrorString(e));
		return -1;
	}
	g_t_ctx = now_ms() - t0;
	t0 = now_ms();
	if ((e = cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking)) != cudaSuccess) {
		snprintf(err, errlen, "GPU %d: %s (check the driver with nvidia-smi)", device, cudaGetErrorString(e));
		return -1;
	}
	/* keep freed memory in the pool between runs */
	cudaMemPool_t pool;
	if (cudaDeviceGetDefaultMemPool(&pool, device) == cudaSuccess) {
		uint64_t keep = UINT64_MAX;
		cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
	}
	g_t_stream = now_ms() - t0;
	/* cuBLASLt's and cuDNN's handles are made at their first use (need_lt, need_dnn):
	 * starting cuDNN loads its engine libraries, which a model without convolutions (or
	 * a reduce whose candidates have none) need not pay */
	t0 = now_ms();
	if (cudaMalloc(&g_ws, g_ws_bytes) != cudaSuccess) {
		snprintf(err, errlen, "GPU %d: no memory for the GEMM workspace (free GPU memory)", device);
		return -1;
	}
	g_t_ws = now_ms() - t0;
	const char *q = getenv("WHITTLE_CUDA_CONV_QUERY");
	g_conv_query = q && !strcmp(q, "1");
	g_device = device;
	return 0;
}

static void api_shutdown(void)
{
	if (g_device < 0)
		return;
	cache_flush();
	cudaStreamSynchronize(g_stream);
	cudaFree(g_ws);
	if (g_t_dnn >= 0)
		cudnnDestroy(g_dnn);
	if (g_t_lt >= 0)
		cublasLtDestroy(g_lt);
	g_t_dnn = g_t_lt = -1;
	cudaStreamDestroy(g_stream);
	g_device = -1;
}

static void api_info(char *buf, size_t len)
{
	cudaDeviceProp p;
	int rt = 0, drv = 0;
	cudaRuntimeGetVersion(&rt);
	cudaDriverGetVersion(&drv);
	if (cudaGetDeviceProperties(&p, g_device) != cudaSuccess) {
		snprintf(buf, len, "GPU %d (no properties)", g_device);
		return;
	}
	size_t lt = cublasLtGetVersion(), dnn = cudnnGetVersion();
	snprintf(buf, len, "%s (sm_%d%d, %.0f GiB), CUDA runtime %d.%d, driver %d.%d, cuBLASLt %zu.%zu.%zu, cuDNN %zu.%zu.%zu", p.name,
		 p.major, p.minor, (double)p.totalGlobalMem / (1 << 30), rt / 1000, rt % 1000 / 10, drv / 1000, drv % 1000 / 10,
		 lt / 10000, lt / 100 % 100, lt % 100, dnn / 10000, dnn / 100 % 100, dnn % 100);
}

static void api_ident(char *buf, size_t len)
{
	cudaDeviceProp p;
	size_t lt = cublasLtGetVersion(), dnn = cudnnGetVersion();
	if (cudaGetDeviceProperties(&p, g_device) != cudaSuccess)
		snprintf(buf, len, "GPU %d;sm_?;cublasLt %zu;cudnn %zu", g_device, lt, dnn);
	else
		snprintf(buf, len, "%s;sm_%d%d;cublasLt %zu;cudnn %zu", p.name, p.major, p.minor, lt, dnn);
}

static const char *api_last_error(void) { return g_err; }
static void *api_alloc(size_t bytes) { return dev_alloc(bytes); }
static void api_free(void *p) { dev_free(p); }

static int api_upload(void *dst, const void *src, size_t bytes)
{
	if (!bytes)
		return 0;
	double t0 = now_ms();
	CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, g_stream));
	CK(cudaStreamSynchronize(g_stream));
	g_ms_sync += now_ms() - t0;
	g_n_sync++;
	return 0;
}

static int api_download(void *dst, const void *src, size_t bytes)
{
	if (!bytes)
		return 0;
	double t0 = now_ms();
	CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, g_stream));
	CK(cudaStreamSynchronize(g_stream));
	g_ms_sync += now_ms() - t0;
	g_n_sync++;
	return 0;
}

static int api_sync(void)
{
	CK(cudaStreamSynchronize(g_stream));
	return 0;
}

static int api_supports(const struct whcu_node *n, uint32_t *host_mask)
{
	const struct op_entry *o = find_op(n);
	*host_mask = o ? o->host_mask : 0;
	return o != NULL;
}

static int api_run(const struct whcu_node *n)
{
	const struct op_entry *o = find_op(n);
	if (!o)
		return 1;
	for (uint32_t k = 0; k < n->n_out; k++) {
		n->out[k].dtype = 0;
		n->out[k].data = NULL;
	}
	g_tac.name = n->tactic && *n->tactic ? n->tactic : NULL;
	g_tac.list = n->list_n ? n->list : NULL;
	g_tac.max = n->list_max;
	g_tac.n = n->list_n;
	g_tac.allow_reduced = n->allow_reduced;
	g_tac.prec = n->prec;
	if (n->list_n)
		*n->list_n = 0;
	double *first = !strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose") ? &g_t_first_conv
			: !strcmp(n->op_type, "MatMul") || !strcmp(n->op_type, "Gemm")          ? &g_t_first_gemm
												  : &g_t_first_other;
	double t0 = *first < 0 ? now_ms() : 0;
	int r = o->run(n, o->arg);
	if (*first < 0)
		*first = now_ms() - t0;
	memset(&g_tac, 0, sizeof g_tac);
	if (r != 0)
		out_release(n);
	return r;
}

static int api_round(float *dst, const float *src, size_t n, int32_t prec)
{
	if (!n)
		return 0;
	k_round<<<grid_for(n), 256, 0, g_stream>>>(dst, src, n, prec);
	CKL();
	return 0;
}

static void *api_event_record(void)
{
	cudaEvent_t ev;
	if (cudaEventCreate(&ev) != cudaSuccess)
		return NULL;
	cudaEventRecord(ev, g_stream);
	return (void *)ev;
}

static double api_event_ms(void *a, void *b)
{
	float ms = 0;
	if (!a || !b || cudaEventSynchronize((cudaEvent_t)b) != cudaSuccess ||
	    cudaEventElapsedTime(&ms, (cudaEvent_t)a, (cudaEvent_t)b) != cudaSuccess)
		return -1;
	return ms;
}

static void api_event_free(void *ev)
{
	if (ev)
		cudaEventDestroy((cudaEvent_t)ev);
}

static int api_to16(void *dst, const float *src, size_t n, int32_t prec)
{
	if (prec != WHCU_PREC_FP16 && prec != WHCU_PREC_BF16)
		return fail("to16: precision %d is not fp16 or bf16", (int)prec);
	if (!n)
		return 0;
	if (prec == WHCU_PREC_BF16)
		k_f32_to_bf16<<<grid_for(n), 256, 0, g_stream>>>((__nv_bfloat16 *)dst, src, n);
	else
		k_f32_to_f16<<<grid_for(n), 256, 0, g_stream>>>((__half *)dst, src, n);
	CKL();
	return 0;
}

static double api_copy_gbps(size_t bytes)
{
	void *a = NULL, *b = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	double best = -1;
	if (!bytes || cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
	    cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
		goto out;
	cudaMemsetAsync(a, 1, bytes, g_stream);
	for (int r = 0; r < 6; r++) {
		float ms = 0;
		cudaEventRecord(e0, g_stream);
		cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, g_stream);
		cudaEventRecord(e1, g_stream);
		if (cudaEventSynchronize(e1) != cudaSuccess || cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
			goto out;
		double gbps = 2.0 * (double)bytes / ((double)ms * 1e-3) / 1e9;
		if (r > 0 && ms > 0 && gbps > best) /* the first one warms up */
			best = gbps;
	}
out:
	cudaGetLastError();
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	cudaFree(a);
	cudaFree(b);
	return best;
}

static void api_start_times(char *buf, size_t len)
{
	char lt[32] = "not started", dnn[32] = "not started";
	if (g_t_lt >= 0)
		snprintf(lt, sizeof lt, "%.1f ms", g_t_lt);
	if (g_t_dnn >= 0)
		snprintf(dnn, sizeof dnn, "%.1f ms", g_t_dnn);
	snprintf(buf, len, "driver and context %.1f ms, stream %.1f ms, workspace %.1f ms, cuBLASLt %s, cuDNN %s; first Conv %.1f ms, first GEMM %.1f ms, first other op %.1f ms; warm-up %.1f ms; cuDNN algorithms: %ld picked directly (%.1f ms), %ld ranked (%.1f ms); cuBLASLt heuristics %ld (%.1f ms), cudaMallocAsync %ld (%.1f ms), synchronous copies %ld (%.1f ms)",
		 g_t_ctx, g_t_stream, g_t_ws, lt, dnn, g_t_first_conv, g_t_first_gemm, g_t_first_other, g_t_warm, g_n_direct, g_ms_direct,
		 g_n_convq, g_ms_convq, g_n_heur, g_ms_heur, g_n_malloc, g_ms_malloc, g_n_sync, g_ms_sync);
}

/* ---- CUDA graphs ---- */

static int api_capture_begin(void)
{
	g_cap_n = 0;
	g_cap_broken = false;
	g_cap_void = false;
	CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeRelaxed));
	g_capturing = true;
	return 0;
}

static void *api_capture_end(void)
{
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	g_capturing = false;
	cudaError_t e = cudaStreamEndCapture(g_stream, &graph);
	if (e == cudaSuccess && !g_cap_broken)
		e = cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
	if (graph)
		cudaGraphDestroy(graph);
	if (e != cudaSuccess || g_cap_broken || !exec) {
		fail("capturing a CUDA graph: %s", g_cap_broken ? "the run freed or could not allocate memory" : cudaGetErrorString(e));
		cudaGetLastError();
		if (exec)
			cudaGraphExecDestroy(exec);
		g_cap_void = true; /* its allocations were never made */
		return NULL;
	}
	g_cap_exec = (void *)exec;
	return (void *)exec;
}

static int api_graph_launch(void *exec)
{
	CK(cudaGraphLaunch((cudaGraphExec_t)exec, g_stream));
	if (exec == g_cap_exec)
		g_cap_exec = NULL;
	return 0;
}

static void api_graph_free(void *exec)
{
	if (!exec)
		return;
	cudaStreamSynchronize(g_stream);
	cudaGraphExecDestroy((cudaGraphExec_t)exec);
	if (exec == g_cap_exec) {
		/* never launched: its allocations were never made */
		g_cap_exec = NULL;
		g_cap_void = true;
	}
}

/* ABI 5: the libraries' first-use costs, paid where whittle has time to spare (its
 * background start, docs/gpu.md): cuBLASLt's handle and heuristics (the first query costs
 * about 50 ms), one fp16 GEMM; cuDNN's handle and one fp16 convolution (its engines load at
 * the first). The algorithms chosen for these shapes stay in the caches like any other. */
static int api_warm(void)
{
	double t0 = now_ms();
	const int64_t n = 64;
	float *a = (float *)dev_alloc(n * n * sizeof(float)), *y = (float *)dev_alloc(n * n * sizeof(float));
	int rc = -1;
	if (!a || !y)
		goto out;
	if (cudaMemsetAsync(a, 0, n * n * sizeof(float), g_stream) != cudaSuccess) {
		fail("warming up: cudaMemsetAsync failed");
		goto out;
	}
	if (need_lt() || gemm_lt(WHCU_PREC_FP16, 0, a, a, y, n, n, n, 0, 0, 1, 0, 0, 1.f, 0.f) != 0)
		goto out;
	if (need_dnn())
		goto out;
	{
		/* 1x16x8x8 by 16x16x3x3, pad 1: the implicit-GEMM family in fp16 with tensor cores */
		cudnnTensorDescriptor_t tx = NULL;
		cudnnFilterDescriptor_t fw = NULL;
		cudnnConvolutionDescriptor_t cv = NULL;
		size_t ws = 0;
		void *wsp = NULL;
		float one = 1.f, zero = 0.f;
		bool ok = cudnnCreateTensorDescriptor(&tx) == CUDNN_STATUS_SUCCESS && cudnnCreateFilterDescriptor(&fw) == CUDNN_STATUS_SUCCESS &&
			  cudnnCreateConvolutionDescriptor(&cv) == CUDNN_STATUS_SUCCESS &&
			  cudnnSetTensor4dDescriptor(tx, CUDNN_TENSOR_NCHW, CUDNN_DATA_HALF, 1, 16, 8, 8) == CUDNN_STATUS_SUCCESS &&
			  cudnnSetFilter4dDescriptor(fw, CUDNN_DATA_HALF, CUDNN_TENSOR_NCHW, 16, 16, 3, 3) == CUDNN_STATUS_SUCCESS &&
			  cudnnSetConvolution2dDescriptor(cv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
			  cudnnSetConvolutionMathType(cv, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS &&
			  cudnnGetConvolutionForwardWorkspaceSize(g_dnn, tx, fw, cv, tx, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, &ws) ==
				  CUDNN_STATUS_SUCCESS &&
			  ws <= ((size_t)64 << 20) && (!ws || (wsp = dev_alloc(ws)) != NULL);
		/* x, w and y: the 16 KB of a (zeros; 1x16x8x8 and 16x16x3x3 halves fit) and y */
		if (ok)
			ok = cudnnConvolutionForward(g_dnn, &one, tx, a, fw, a, cv, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, wsp, ws,
						     &zero, tx, y) == CUDNN_STATUS_SUCCESS;
		dev_free(wsp);
		if (cv)
			cudnnDestroyConvolutionDescriptor(cv);
		if (fw)
			cudnnDestroyFilterDescriptor(fw);
		if (tx)
			cudnnDestroyTensorDescriptor(tx);
		if (!ok) {
			fail("warming cuDNN up: a small convolution failed");
			goto out;
		}
	}
	if (cudaStreamSynchronize(g_stream) != cudaSuccess) {
		fail("warming up: the stream failed");
		goto out;
	}
	rc = 0;
out:
	dev_free(a);
	dev_free(y);
	g_t_warm = now_ms() - t0;
	return rc;
}

static const struct whcu_api api = {
	WHCU_ABI,
	sizeof(struct whcu_api),
	api_init,
	api_shutdown,
	api_info,
	api_last_error,
	api_alloc,
	api_free,
	api_upload,
	api_download,
	api_sync,
	api_supports,
	api_run,
	api_round,
	api_event_record,
	api_event_ms,
	api_event_free,
	api_ident,
	api_to16,
	api_copy_gbps,
	api_start_times,
	api_capture_begin,
	api_capture_end,
	api_graph_launch,
	api_graph_free,
	api_probe,
	api_warm,
	1, /* quick_exit: the driver reclaims the device at exit */
};

EXPORT const struct whcu_api *whittle_cuda_api(uint32_t abi)
{
	return abi == WHCU_ABI ? &api : NULL;
}
