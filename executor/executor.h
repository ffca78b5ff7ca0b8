/* The executor: builds an engine from a model and runs it.
 *
 * An engine holds the model's execution plan: nodes in topological order, the kernel of
 * each, and the initializers as tensors sharing the model's weight blobs. The engine
 * borrows the model (which must outlive it) and owns its thread pool.
 * wh_engine_create fails with WH_ERR_UNSUPPORTED and one message naming every unsupported
 * op of the model (including ops inside subgraphs). An engine runs one inference at a time
 * (it caches converted weights between runs, within weight_cache_bytes); use one engine per
 * thread. */
#ifndef WH_EXECUTOR_H
#define WH_EXECUTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/ir.h"
#include "graph/tensor-file.h"

struct wh_engine;

struct wh_precision_config;
struct wh_tactic_plan;

/* weight_cache_bytes 0 means this: the rounded weights of a model up to 512 MiB (FP32) stay
 * between runs; a bigger model's are converted layer by layer without holding more. */
#define WH_ENGINE_WEIGHT_CACHE_DEFAULT ((int64_t)512 << 20)

struct wh_engine_options {
	int threads; /* <= 0: all cores */
	/* reduced-precision emulation (executor/precision.h), borrowed; NULL: FP32 */
	const struct wh_precision_config *precision;
	/* pinned tactics (executor/tactic-plan.h), borrowed; NULL: each op picks its default */
	const struct wh_tactic_plan *tactics;
	/* a layer with tactics missing from the plan: error (true) or a warning (false) */
	bool tactics_strict;
	/* WHITTLE_FAULTY_TACTIC=<tactic>[:<layer>] as read by the CLI (fault injection for
	 * testing the flaky-tactic loop; off when NULL): that tactic corrupts its output */
	const char *faulty_tactic;
	/* reduced-precision copies of the weights (rounded to fp16, quantized to int8, ...) kept
	 * between runs, in bytes: 0 is the default (512 MiB); < 0 keeps none (each is converted
	 * when its layer runs and freed after it). Past the budget, the least recently used
	 * copies are dropped: an engine never holds a second copy of a large model's weights. */
	int64_t weight_cache_bytes;
	/* time every layer of the main graph in each run (wh_engine_profile); off: no cost */
	bool profile;
	/* --device cuda:N: layers run on CUDA GPU cuda_device where the CUDA module takes them
	 * (docs/gpu.md); creating the engine fails with one line when the module, the CUDA
	 * libraries or the GPU are missing. false: the CPU. */
	bool cuda;
	int cuda_device;
	/* --allow-reduced-precision-reduction: fp16 layers on the GPU may take tactics that
	 * accumulate in fp16 (a build times them; docs/gpu.md). Off: FP32 accumulation only. */
	bool allow_reduced_reduction;
};

enum wh_status wh_engine_create(const struct wh_model *m, const struct wh_engine_options *opt,
				struct wh_engine **out);
void wh_engine_destroy(struct wh_engine *e);
/* Bytes of reduced-precision weight copies e holds now (at most weight_cache_bytes). */
size_t wh_engine_weight_cache_bytes(const struct wh_engine *e);

/* What a run returns. */
enum wh_run_keep {
	WH_KEEP_OUTPUTS = 0, /* graph outputs only */
	WH_KEEP_ALL = 1,     /* every tensor computed (--mark-all), in topological order */
};

/* Runs the model on inputs (matched to graph inputs by name, or by index for unnamed
 * entries), appending results to *results (caller-initialised set). Missing inputs,
 * wrong element types and shapes that contradict the model are WH_ERR_SHAPE/INVALID
 * naming the input, the expected and the given shape. Intermediate tensors are freed as
 * soon as their last consumer has run unless kept. */
enum wh_status wh_engine_run(struct wh_engine *e, const struct wh_tensor_set *inputs,
			     enum wh_run_keep keep, struct wh_tensor_set *results);

/* Told of one tensor of a run: t is borrowed (wh_tensor_ref keeps it); a status other than
 * WH_OK stops the run with it. */
typedef enum wh_status (*wh_engine_tensor_fn)(void *state, const char *name, const struct wh_tensor *t);
/* Runs the model as wh_engine_run does and calls fn for every tensor a node of the main graph
 * computes, in execution order, as soon as it is computed, then for the graph outputs no node
 * produces. The engine frees its own reference after the last consumer, as with
 * WH_KEEP_OUTPUTS: a caller that writes each tensor away (reduce's reference values on disk)
 * holds at most what the run needs at once, where WH_KEEP_ALL holds every tensor. */
enum wh_status wh_engine_run_each(struct wh_engine *e, const struct wh_tensor_set *inputs, wh_engine_tensor_fn fn, void *state);

/* The branches If node `node` of graph g (the main graph or any subgraph of e's model) took
 * in e's runs so far: bit 0 then_branch, bit 1 else_branch; 0 when it never ran. The
 * reference run of reduce, precision and the --mark-all diagnosis reads it to inline an If
 * whose branch was the same for every sample (graph/inline.h). */
unsigned wh_engine_if_branches(const struct wh_engine *e, const struct wh_graph *g, uint32_t node);

/* Constant folding with the executor's kernels: a wh_fold_fn (graph/shape.h) that shape
 * inference and sanitize --fold-constants call, passed in by the front end (graph/ cannot
 * call up into the executor). The kernel runs as it does at run time but without a thread
 * pool and capped to the scalar ISA, so folded bytes do not depend on the machine; FP32, no
 * tactic pinned. Not evaluated (*done_out false, no error): an op without a kernel, an op
 * whose result is random (Random*, Bernoulli, Multinomial, training-mode Dropout), a
 * kernel that refuses the inputs (its message is dropped). */
enum wh_status wh_executor_fold_eval(const struct wh_model *m, const struct wh_graph *g, const struct wh_node *n,
				     int64_t opset, const struct wh_tensor *const *in, struct wh_tensor *out,
				     bool *done_out);

/* One layer (main-graph node) of the last run of an engine created with opt->profile. */
struct wh_layer_profile {
	const char *name, *op_type; /* borrowed from the model */
	const char *tactic;         /* the pinned or chosen tactic, or "default" (static) */
	double ms;                  /* wall time of the layer in the last run */
	double flops;               /* Conv, ConvTranspose, MatMul, Gemm: 2 x multiply-adds of the
				     * last run; 0 for other ops */
	const char *device;         /* "cpu" or "cuda" (static); ms is GPU time (CUDA events) there */
	uint64_t h2d_bytes, d2h_bytes; /* copied to and from the GPU for the layer */
};

/* The layers of the last run in execution order (owned by the engine, valid until the next
 * run or destroy); NULL and *n_out 0 when the engine was created without opt->profile or
 * has not run yet. */
const struct wh_layer_profile *wh_engine_profile(const struct wh_engine *e, uint32_t *n_out);

/* The GPU side of an engine created with opt->cuda (`run --profile --device cuda`):
 * weights_fmt_bytes, what the engine uploaded counted at its layers' formats (2 bytes per
 * fp16/bf16 value: what its layers read of them in a run); weights_device_bytes, what the
 * device holds for them (a float copy on the format's grid, plus the 16-bit copy GEMMs and
 * convolutions read); copy_gbps, the device-to-device copy bandwidth measured by this call
 * with a 256 MiB copy (bytes read plus written per second, GB/s; < 0 when not measured);
 * start, what starting the GPU cost. false: not a GPU engine. */
struct wh_engine_gpu_stats {
	uint64_t weights_fmt_bytes, weights_device_bytes;
	double copy_gbps;
	char start[768];
};
bool wh_engine_gpu_stats(const struct wh_engine *e, struct wh_engine_gpu_stats *out);

/* The GPU of --device cuda:N: loads the CUDA module and starts the device (once per
 * process), and writes one line about it (the GPU, the library versions) into info. Fails
 * with WH_ERR_UNSUPPORTED and "--device cuda: <what is missing> (<what to do>)". */
enum wh_status wh_device_cuda_check(int device, char *info, size_t size);
/* Starts GPU `device` in the background (docs/gpu.md): the module is loaded, the device
 * started and the libraries warmed up by a thread while the command goes on; the first
 * engine on the GPU waits for it, and fails with the start's message ("--device cuda:
 * <what is missing> (<what to do>)", WH_ERR_UNSUPPORTED) when it failed. With
 * WHITTLE_CUDA_START=sync the start happens here and fails here. */
enum wh_status wh_device_cuda_start(int device);
/* The end of a process that may have used a GPU (the front end's main, with its exit
 * code): waits for a background start, and ends the process at once (_exit, stdio flushed)
 * when the CUDA module says the driver reclaims the device, skipping the libraries' own
 * teardown (WHITTLE_CUDA_FULL_EXIT=1: a normal exit). Returns when it does not end it. */
void wh_device_finish(int code);
/* Whether the CUDA backend of GPU `device` has a kernel for node n of the main graph
 * (call wh_device_cuda_check first): what `inspect --device cuda` prints. Shape arithmetic
 * on small integer tensors is done on the host whatever this says (docs/gpu.md). */
bool wh_device_cuda_claims(int device, const struct wh_model *m, const struct wh_node *n);

/* Names of the ops of m (and its subgraphs) that the executor cannot run, as
 * "A, B, C" into buf; returns their count. */
uint32_t wh_model_unsupported_ops(const struct wh_model *m, char *buf, size_t size);

#endif
