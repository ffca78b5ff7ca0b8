/* A fixed pool of worker threads for data-parallel loops.
 *
 * Determinism: wh_parallel_for splits [0, n) into chunks of `grain` indices whose bounds
 * depend only on n and grain, never on the number of threads, so a kernel whose result per
 * chunk does not depend on which thread runs it gives bit-identical results for every
 * thread count. Kernels must not split a reduction across chunks.
 * Owned by the engine that creates it; a NULL pool runs loops on the calling thread. */
#ifndef WH_THREADPOOL_H
#define WH_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "graph/status.h"

struct wh_threadpool;

/* threads <= 0: one per online CPU. */
enum wh_status wh_threadpool_create(int threads, struct wh_threadpool **out);
void wh_threadpool_destroy(struct wh_threadpool *p);
int wh_threadpool_size(const struct wh_threadpool *p); /* 1 for NULL */
/* How many loops were handed to the workers so far; the others ran on the calling thread
 * alone (one chunk, a nested loop, a loop too small to pay for a wake-up: threadpool.c
 * SMALL_LOOP_S). 0 for NULL. For tests and diagnostics. */
uint64_t wh_threadpool_shared_loops(const struct wh_threadpool *p);

/* Calls fn(ctx, begin, end) for consecutive chunks covering [0, n); returns when all are
 * done. Not re-entrant: a loop body must not start another parallel loop on the same pool
 * (nested calls run inline). */
typedef void (*wh_range_fn)(void *ctx, size_t begin, size_t end);
void wh_parallel_for(struct wh_threadpool *p, size_t n, size_t grain, wh_range_fn fn, void *ctx);

/* The chunking rule of the kernels: a chunk holds about WH_CHUNK_ELEMS elements of work,
 * large enough that scheduling costs little next to the work, small enough to spread a
 * mid-sized tensor over the threads. Elementwise loops pass it as the grain; a loop over
 * items of per_item elements each passes wh_grain_for(per_item) (an item of WH_CHUNK_ELEMS
 * or more is a chunk of its own). Both depend only on sizes, never on the thread count, so
 * the chunk bounds, and with them every kernel's bits, are the same for any --threads. */
#define WH_CHUNK_ELEMS ((size_t)32768)

static inline size_t wh_grain_for(uint64_t per_item)
{
	if (per_item == 0)
		per_item = 1;
	return per_item >= WH_CHUNK_ELEMS ? 1 : (size_t)(WH_CHUNK_ELEMS / per_item);
}

#endif
