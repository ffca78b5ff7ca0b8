/* Private to executor/: the CUDA backend's host side (gpu.c). It loads libwhittle-cuda.so
 * (executor/cuda/whittle-cuda.h) at run time, keeps the device copies of a run's values and
 * of an engine's weights, and runs the layers the module takes (docs/gpu.md).
 *
 * Where a value lives: a frame's value slot (struct wh_tensor) always says the type and the
 * shape; its blob holds the host copy when there is one. struct wh_gpu_vals holds, per value
 * id, the device copy when there is one. A value computed on the GPU has no host copy until a
 * CPU layer, the caller or a tensor callback needs it (wh_gpu_vals_to_host); a host value a
 * GPU layer reads is uploaded once (weights and constant layers' outputs once per process,
 * into the store that struct wh_gpu_weights handles share; anything else once per run). */
#ifndef WH_GPU_H
#define WH_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/cuda/whittle-cuda.h"
#include "graph/ir.h"
#include "graph/tensor.h"

struct wh_gpu; /* the loaded module bound to one device: one per process and device */

/* The module for GPU `device` (loaded and initialised at the first call, kept for the
 * process). On failure the message is "--device cuda: <what is missing> (<what to do>)"
 * and the status WH_ERR_UNSUPPORTED. */
enum wh_status wh_gpu_get(int device, struct wh_gpu **out);
/* The background start (docs/gpu.md, "Where a GPU process's time goes"): a thread loads
 * the module, starts GPU `device` and warms the libraries up (whcu_api.warm) while the
 * caller goes on (loading the model, the CPU's reference); the first wh_gpu_get waits for
 * the start and returns its failure, if any. WHITTLE_CUDA_START=sync (or no thread): started
 * here, failing here. A second call does nothing. wh_gpu_start_join waits for the thread.
 * wh_gpu_finish(code), at the end of the process: joins the thread and, when the module
 * allows it (whcu_api.quick_exit) and WHITTLE_CUDA_FULL_EXIT is not 1, flushes stdio and
 * ends the process with _exit(code), skipping the CUDA libraries' teardown; otherwise
 * returns (the exit handlers free every device copy, tests/fake-cuda.c counts them). */
enum wh_status wh_gpu_start(int device);
void wh_gpu_start_join(void);
void wh_gpu_finish(int code);
/* One line: the GPU and the library versions. */
const char *wh_gpu_info(const struct wh_gpu *g);
/* What a GPU tactic belongs to: "<GPU name>;sm_XY;cublasLt V;cudnn V" (replays and timing
 * caches record it; docs/formats.md). */
const char *wh_gpu_ident(const struct wh_gpu *g);
/* The device-to-device copy bandwidth measured now with a copy of `bytes` (bytes read plus
 * written per second, GB/s; < 0 on failure). */
double wh_gpu_copy_gbps(const struct wh_gpu *g, size_t bytes);
/* One line: what starting the GPU cost so far (context, stream, cuBLASLt, cuDNN; ms). */
void wh_gpu_start_times(const struct wh_gpu *g, char *buf, size_t len);
/* Whether a tactic name is a GPU tactic (cuBLASLt's "lt-..." or cuDNN's "cudnn-..."). */
bool wh_gpu_tactic_name(const char *name);
/* Whether the module has a kernel for the op (at this opset), or the host side handles it
 * on the GPU (views): the static answer `inspect --device` prints. */
bool wh_gpu_claims(const struct wh_gpu *g, const struct wh_node *n, int64_t opset);

/* An engine's handle on the device copies of constants (weights, constant layers' outputs):
 * one store per process and device, by host data, size and format, shared by every engine;
 * each entry holds a reference to its host blob. Destroying a handle frees the entries whose
 * blob no one else holds; the rest are freed at exit. wh_gpu_weights_bytes: what this
 * engine uploaded. */
struct wh_gpu_weights;
enum wh_status wh_gpu_weights_create(struct wh_gpu *g, struct wh_gpu_weights **out);
void wh_gpu_weights_destroy(struct wh_gpu_weights *w); /* NULL-safe */
size_t wh_gpu_weights_bytes(const struct wh_gpu_weights *w);
/* The same weights counted at their layers' formats: 2 bytes per value of an fp16 or bf16
 * layer's float weight (what its GEMM reads), their own size otherwise. */
size_t wh_gpu_weights_fmt_bytes(const struct wh_gpu_weights *w);

/* The device copies of one frame's values (one per value id). */
struct wh_gpu_vals;
enum wh_status wh_gpu_vals_create(struct wh_gpu *g, struct wh_gpu_weights *w, uint32_t n_values, struct wh_gpu_vals **out);
void wh_gpu_vals_destroy(struct wh_gpu_vals *dv); /* NULL-safe */
/* Whether value v has a device copy and no host one (t is its slot). */
bool wh_gpu_vals_device_only(const struct wh_gpu_vals *dv, uint32_t v, const struct wh_tensor *t);
/* Gives slot t (value v) a host copy of its device one, when it has none. */
enum wh_status wh_gpu_vals_to_host(struct wh_gpu_vals *dv, uint32_t v, struct wh_tensor *t);
/* Forgets v's device copy (its slot is being cleared). */
void wh_gpu_vals_drop(struct wh_gpu_vals *dv, uint32_t v);
/* Bytes copied to and from the device since the last call (then reset). */
void wh_gpu_vals_copies(struct wh_gpu_vals *dv, uint64_t *h2d, uint64_t *d2h);

/* One layer offered to the GPU. */
struct wh_gpu_step {
	const struct wh_graph *g;
	const struct wh_node *n;
	int64_t opset;
	uint8_t exec, out;     /* enum wh_precision of the layer's execution and outputs */
	bool fp16_accumulate;
	const bool *persistent; /* per input: its host copy is an engine constant (cached) */
	const bool *wanted;     /* per output */
	bool timed;             /* record CUDA events around it (wh_gpu_vals_step_ms) */
	bool host_only;         /* shape arithmetic or a constant: stays on the host */
	/* tactics (docs/gpu.md): tactic names the one to run (NULL: the default; one the layer
	 * does not have is the step's error); list, when not NULL, gets the layer's eligible
	 * tactics (at most WHCU_MAX_TACTICS) and *list_n their count */
	const char *tactic;
	bool allow_reduced; /* --allow-reduced-precision-reduction */
	struct whcu_tactic *list;
	uint32_t *list_n;
};

/* Runs the layer on the GPU when the module takes it: *ran true, outs[k] (empty on entry)
 * get the type and shape of each wanted output, and dv the device copies of the output
 * values. *ran false: nothing done (the caller runs it on the CPU). An error of the module
 * is the layer's error. vals: the frame's slots (inputs may get a host or device copy). */
enum wh_status wh_gpu_run_step(struct wh_gpu_vals *dv, const struct wh_gpu_step *s, struct wh_tensor *vals,
			       struct wh_tensor *outs, bool *ran);
/* CUDA graphs (docs/gpu.md, "A large decoder"): a run of the main graph is captured once
 * and replayed. wh_gpu_vals_taint marks a run that a replay could not repeat (a layer off
 * the GPU read a graph input's data); wh_gpu_vals_capturable says whether the run so far
 * can be (nothing uploaded but graph inputs, nothing downloaded, nothing tainted).
 * wh_gpu_capture_begin uploads the graph inputs in[0..n_in) and starts capturing: *out
 * NULL when capture is not possible (the run goes on as usual). wh_gpu_capture_end, after
 * the run (run_ok: it succeeded): true when the graph holds the whole run, launched once,
 * and dv has its results as device values; false when it failed (nothing ran: the caller
 * destroys gr, drops the frame and runs again without capture). wh_gpu_graph_replay: with
 * the same input shapes, the inputs uploaded and the graph launched, dv and vals get every
 * value the captured run left (outputs included); false when the shapes differ or the
 * launch failed (nothing given). */
struct wh_gpu_graph;
void wh_gpu_vals_taint(struct wh_gpu_vals *dv);
bool wh_gpu_vals_capturable(const struct wh_gpu_vals *dv);
enum wh_status wh_gpu_capture_begin(struct wh_gpu_vals *dv, struct wh_tensor *vals, const uint32_t *in, uint32_t n_in,
				    struct wh_gpu_graph **out);
bool wh_gpu_capture_end(struct wh_gpu_vals *dv, const struct wh_tensor *vals, struct wh_gpu_graph *gr, bool run_ok);
bool wh_gpu_graph_replay(struct wh_gpu_graph *gr, struct wh_gpu_vals *dv, struct wh_tensor *vals);
void wh_gpu_graph_destroy(struct wh_gpu_graph *gr); /* NULL-safe */

/* The GPU time of the last timed step, waiting for it (ms; < 0 when none). */
double wh_gpu_vals_step_ms(struct wh_gpu_vals *dv);

#endif
