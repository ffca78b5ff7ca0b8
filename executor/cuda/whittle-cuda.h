/* The interface between whittle and its CUDA module, libwhittle-cuda.so (executor/cuda/).
 *
 * The module is a separate shared object that links the CUDA libraries (cudart, cuBLASLt,
 * cuDNN 9); whittle dlopens it only when a command is given --device cuda, so the whittle
 * binary has no CUDA library among its start-up dependencies (docs/architecture.md,
 * "Devices"). This header is the whole contract: plain C types, one table of functions
 * (struct whcu_api) returned by the one exported symbol whittle_cuda_api(). The module
 * needs no symbol of whittle; what it needs from a node (its attributes) it asks through
 * the callbacks in struct whcu_node.
 *
 * Versioning: WHCU_ABI changes whenever a field is added, removed or changes meaning;
 * whittle_cuda_api(abi) returns NULL when it was built for another version, and whittle
 * then says so in one line. Every function is called from one thread at a time; the module
 * runs everything on one CUDA stream of the device given to init, so work queued by calls
 * in order runs in that order. Memory: device buffers come from alloc and go back with
 * free; an op's outputs are allocated by the module (run) and owned by the caller after. */
#ifndef WHITTLE_CUDA_H
#define WHITTLE_CUDA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WHCU_ABI 5
#define WHCU_MAX_RANK 8

/* Element types: ONNX TensorProto.DataType numbers (1 float, 6 int32, 7 int64, 9 bool,
 * 10 float16, 16 bfloat16, ...). Precisions: whittle's enum wh_precision numbers. */
enum {
	WHCU_FLOAT = 1,
	WHCU_UINT8 = 2,
	WHCU_INT8 = 3,
	WHCU_INT32 = 6,
	WHCU_INT64 = 7,
	WHCU_BOOL = 9,
	WHCU_FLOAT16 = 10,
	WHCU_BFLOAT16 = 16,
};
enum { WHCU_PREC_FP32 = 0, WHCU_PREC_TF32 = 1, WHCU_PREC_FP16 = 2, WHCU_PREC_BF16 = 3 };

/* A GPU tactic: one cuBLASLt algorithm configuration or cuDNN forward algorithm, with its
 * compute type or math type (docs/gpu.md, "Tactics"). The name is stable for a device and
 * library version and says what it is; run takes it back in whcu_node.tactic. */
#define WHCU_TACTIC_NAME 64
#define WHCU_MAX_TACTICS 48
enum {
	WHCU_TAC_SPLITK = 1u << 0,    /* split-K: partial sums over chunks of K, then reduced */
	WHCU_TAC_FFT = 1u << 1,       /* FFT-based convolution */
	WHCU_TAC_WINOGRAD = 1u << 2,  /* Winograd transforms */
	WHCU_TAC_FP16ACC = 1u << 3,   /* reduced-precision reduction: accumulates in fp16 */
	WHCU_TAC_NONDET = 1u << 4,    /* nondeterministic: bits may change run to run */
	WHCU_TAC_TENSOROP = 1u << 5,  /* tensor cores (cuDNN's tensor-op math) */
	WHCU_TAC_DEFAULT = 1u << 6,   /* what run picks with no tactic given */
};
struct whcu_tactic {
	char name[WHCU_TACTIC_NAME];
	char notes[160]; /* its numerics in words: "split-K 4, in-place reduction; fp32 accumulation" */
	uint32_t flags;  /* WHCU_TAC_* */
};

struct whcu_tensor {
	int32_t dtype;  /* 0: omitted (an optional input left out) */
	int32_t rank;
	int64_t dims[WHCU_MAX_RANK];
	void *data;       /* device memory, or NULL (count 0, or passed on the host) */
	const void *host; /* host memory, for the inputs the module asked on the host */
	/* ABI 4: when not NULL, the same values as data in the 16-bit format of the node's prec
	 * (fp16 or bf16), in device memory the caller keeps (a weight's persistent copy, made
	 * once by to16): MatMul, Gemm and Conv read it instead of converting data on every run */
	const void *half;
};

static inline uint64_t whcu_count(const struct whcu_tensor *t)
{
	uint64_t n = 1;
	for (int32_t d = 0; d < t->rank; d++)
		n *= (uint64_t)t->dims[d];
	return n;
}

/* One node to run. Attribute callbacks take `node` and a name; absent attributes give dflt
 * (attr_ints: the count, or -1 when absent, writing at most max values). */
struct whcu_node {
	const char *op_type, *name, *domain;
	int64_t opset;
	const void *node;
	int64_t (*attr_int)(const void *node, const char *name, int64_t dflt);
	double (*attr_float)(const void *node, const char *name, double dflt);
	int32_t (*attr_ints)(const void *node, const char *name, int64_t *out, int32_t max);
	const char *(*attr_str)(const void *node, const char *name, const char *dflt);
	int32_t prec;           /* WHCU_PREC_*: the layer's execution precision (its float inputs
				 * are already on that format's grid, see executor/gpu.c) */
	int32_t fp16_accumulate; /* fp16 GEMMs accumulate in fp16 */
	/* ABI 3: tactics. tactic: NULL runs the default; a name from a list runs exactly that
	 * tactic, and a name the layer does not have (on this device, library, shape or
	 * precision) fails (-1, last_error says so). allow_reduced: fp16 layers may list
	 * fp16-accumulating tactics (--allow-reduced-precision-reduction). list: when not NULL,
	 * run also writes the layer's eligible tactics (at most list_max) and their count to
	 * *list_n (0 for ops without tactics). */
	const char *tactic;
	int32_t allow_reduced;
	int32_t list_max;
	struct whcu_tactic *list;
	int32_t *list_n;
	uint32_t n_in, n_out;
	const struct whcu_tensor *in; /* n_in */
	struct whcu_tensor *out;      /* n_out: run fills every entry (dtype 0: not wanted) */
	const uint8_t *out_wanted;    /* n_out */
	/* A one-element tensor attribute (ConstantOfShape's value): its element type, its bytes
	 * copied to value (at most 8); 0 when absent, -1 when it is not one element of at most 8
	 * bytes. */
	int32_t (*attr_scalar)(const void *node, const char *name, void *value);
	/* ABI 4: out_prec (WHCU_PREC_FP16 or BF16; 0: none) is the format the caller rounds the
	 * float outputs to after run. A module whose kernel rounds them itself as it stores them
	 * (the same values) sets *out_rounded to 1, and the caller's rounding kernel is skipped
	 * (one launch less per layer). out_rounded may be NULL (then the module does not). */
	int32_t out_prec;
	int32_t *out_rounded;
};

struct whcu_api {
	uint32_t abi;  /* WHCU_ABI */
	uint32_t size; /* sizeof(struct whcu_api) */
	/* Binds the device (cudaSetDevice), creates the stream and the library handles.
	 * 0 on success; otherwise err holds "<what is missing> (<what to do>)". */
	int (*init)(int device, char *err, size_t errlen);
	void (*shutdown)(void);
	/* One line: the GPU, its compute capability and memory, the runtime, driver, cuBLASLt
	 * and cuDNN versions. */
	void (*info)(char *buf, size_t len);
	/* The message of the last failure (a CUDA, cuBLASLt or cuDNN error, or the op's reason). */
	const char *(*last_error)(void);
	void *(*alloc)(size_t bytes); /* NULL on failure (bytes 0: a valid non-NULL pointer) */
	void (*free)(void *p);        /* NULL-safe; stream-ordered */
	int (*upload)(void *dst, const void *src, size_t bytes);   /* 0 ok; synchronous */
	int (*download)(void *dst, const void *src, size_t bytes); /* 0 ok; synchronous */
	int (*sync)(void);
	/* Whether run can take this node (inputs' dtype/rank/dims set, data not): 1 yes, 0 no.
	 * *host_mask gets the inputs (bit k) it wants on the host (shape-like parameters). */
	int (*supports)(const struct whcu_node *n, uint32_t *host_mask);
	/* Runs the node: 0 done (outputs allocated and queued), 1 declined (the caller runs it
	 * elsewhere; nothing allocated), -1 failed (last_error). */
	int (*run)(const struct whcu_node *n);
	/* dst[i] = src[i] rounded to the grid of prec (tf32, fp16, bf16; round to nearest
	 * even, overflow to inf), stored as float. dst may be src. 0 ok. */
	int (*round)(float *dst, const float *src, size_t n, int32_t prec);
	/* CUDA events on the stream, for per-layer times. */
	void *(*event_record)(void);
	double (*event_ms)(void *start, void *end); /* waits for end; < 0 on failure */
	void (*event_free)(void *ev);
	/* ABI 3: one line naming the device and libraries a tactic belongs to, stable across
	 * runs: "<GPU name>;sm_<major><minor>;cublasLt <version>;cudnn <version>". */
	void (*ident)(char *buf, size_t len);
	/* ABI 4: dst (n 16-bit values, device) = src (n floats, device) in the format of prec
	 * (WHCU_PREC_FP16 or WHCU_PREC_BF16), round to nearest even; queued. 0 ok. */
	int (*to16)(void *dst, const float *src, size_t n, int32_t prec);
	/* ABI 4: the device-to-device copy bandwidth, measured now with a copy of `bytes` bytes
	 * (CUDA events around a few cudaMemcpyAsync, the best of them): bytes read plus bytes
	 * written per second, in GB/s (1e9); < 0 on failure. */
	double (*copy_gbps)(size_t bytes);
	/* ABI 4: one line: what starting the device cost (ms): the driver and context, the
	 * stream, cuBLASLt's and cuDNN's handles (created at their first use), the workspace. */
	void (*start_times)(char *buf, size_t len);
	/* ABI 4: CUDA graphs. capture_begin starts capturing the stream (0 ok): the calls that
	 * follow queue nothing, they are recorded, and their allocations belong to the graph.
	 * capture_end returns the instantiated graph, or NULL when something in between could not
	 * be captured (a synchronous copy, a free of a buffer from before the capture; last_error
	 * says): then nothing recorded ran, and the device buffers it returned are void (freeing
	 * them is a no-op). graph_launch queues one replay (its buffers: the same addresses every
	 * time; what a launch left allocated is freed by the next launch). graph_free waits for
	 * the stream and destroys the graph; the buffers it allocated stay until freed. */
	int (*capture_begin)(void);
	void *(*capture_end)(void);
	int (*graph_launch)(void *graph);
	void (*graph_free)(void *graph);
	/* ABI 5: whether the driver and GPU `device` are there (the device count; no context is
	 * made): 0 yes; otherwise err holds "<what is missing> (<what to do>)", as init's. whittle
	 * probes before it starts the device in the background (docs/gpu.md). */
	int (*probe)(int device, char *err, size_t errlen);
	/* ABI 5: pays the libraries' first-use costs now (cuBLASLt's and cuDNN's handles, their
	 * first heuristics and kernels, on small problems): whittle calls it from its background
	 * start, so that the first layers of the first run do not (docs/gpu.md). 0 ok; a failure
	 * is not an error of any layer (the first one that needs the library reports its own). */
	int (*warm)(void);
	/* ABI 5: 1 when the process may end without shutdown or freeing device memory (the
	 * driver reclaims the device at exit): whittle then ends with _exit once its own output
	 * is flushed, skipping the CUDA libraries' teardown (about 0.1 s). 0: a full exit (a
	 * module that counts its frees at unload, tests/fake-cuda.c). */
	uint32_t quick_exit;
};

typedef const struct whcu_api *(*whcu_api_fn)(uint32_t abi);
/* The one exported symbol. */
const struct whcu_api *whittle_cuda_api(uint32_t abi);

#ifdef __cplusplus
}
#endif

#endif
