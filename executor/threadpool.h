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

#include "graph/status.h"

struct wh_threadpool;

/* threads <= 0: one per online CPU. */
enum wh_status wh_threadpool_create(int threads, struct wh_threadpool **out);
void wh_threadpool_destroy(struct wh_threadpool *p);
int wh_threadpool_size(const struct wh_threadpool *p); /* 1 for NULL */

/* Calls fn(ctx, begin, end) for consecutive chunks covering [0, n); returns when all are
 * done. Not re-entrant: a loop body must not start another parallel loop on the same pool
 * (nested calls run inline). */
typedef void (*wh_range_fn)(void *ctx, size_t begin, size_t end);
void wh_parallel_for(struct wh_threadpool *p, size_t n, size_t grain, wh_range_fn fn, void *ctx);

#endif
