/* Private to executor/ops/shape.c, data.c and resize.c (and tests/check-shapeops.c):
 * helpers shared by the shape and data-movement kernels, and the Resize kernels that live
 * in resize.c but are listed in data.c's table.
 *
 * String tensors: kernels move elements generically by element size, so a string output
 * first holds borrowed pointers into its input's blob; wh_dm_own_strings then copies the
 * strings into the output's own blob before the kernel returns (inputs outlive the call,
 * outputs may outlive the inputs). */
#ifndef WH_DATA_INTERNAL_H
#define WH_DATA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor/kernel.h"

/* Reads a scalar or 1-D integer tensor into out[0..max); what names it in errors. */
enum wh_status wh_dm_read_ints(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t,
			       const char *what, int64_t *out, size_t max, size_t *n_out);

/* Makes a string tensor that holds borrowed pointers own copies of its strings (NULL
 * pointers become ""). No-op for other types. */
enum wh_status wh_dm_own_strings(struct wh_tensor *t);

/* Fills dst (dense, row-major, rank/dims) from a strided view of src: the element at output
 * index (i_0..i_{r-1}) is src element base + sum i_d * sstride[d] (strides in elements, may
 * be negative or zero). */
void wh_dm_copy_view(void *dst, const void *src, size_t esize, int32_t rank, const int64_t *dims,
		     int64_t base, const int64_t *sstride);

/* Resize (opsets 10..19) and Upsample (7, 9), implemented in resize.c. */
enum wh_status wh_resize_run(struct wh_kernel_ctx *ctx);
enum wh_status wh_upsample_run(struct wh_kernel_ctx *ctx);
/* GridSample (16..22), implemented in resize.c. */
enum wh_status wh_gridsample_run(struct wh_kernel_ctx *ctx);

/* The float32 2-D fast path of Resize, exposed so tests can compare it with the general
 * N-D path: n_planes planes of ih x iw resized to oh x ow, with per-axis source taps already
 * resolved (nearest: index y0/x0; linear: indices y0,y1 / x0,x1 with weights wy0,wy1 /
 * wx0,wx1). Deterministic for any pool size. */
struct wh_resize2d_plan {
	int64_t n_planes; /* N*C */
	int64_t ih, iw, oh, ow;
	bool linear;
	const int64_t *y0, *y1, *x0, *x1;     /* y1/x1 only for linear */
	const float *wy0, *wy1, *wx0, *wx1;   /* only for linear */
};
void wh_resize2d_f32(struct wh_threadpool *pool, const struct wh_resize2d_plan *plan,
		     const float *src, float *dst);

/* Set by tests to force the general N-D path (the fast path is taken whenever it applies);
 * passed through wh_resize_run_opts. */
struct wh_resize_opts {
	bool no_fast_path;
};
enum wh_status wh_resize_run_opts(struct wh_kernel_ctx *ctx, const struct wh_resize_opts *opts);

#endif
