#include "executor/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* Workers spin a little after each job before sleeping, and the caller spins a little
 * before waiting: models run hundreds of small parallel loops back to back, and a futex
 * wake-up per loop costs more than the loop. */
enum { SPIN_ITERATIONS = 20000 };

struct wh_threadpool {
	int n_workers; /* threads besides the caller */
	pthread_t *threads;
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv;
	/* current job */
	wh_range_fn fn;
	void *ctx;
	size_t n, grain, n_chunks;
	atomic_size_t next_chunk;
	atomic_int active;     /* workers still inside the current job */
	atomic_ulong gen;      /* job generation */
	atomic_bool stop;
	int sleeping;          /* workers waiting on work_cv (under mu) */
	bool main_waiting;     /* the caller waits on done_cv (under mu) */
	atomic_bool busy;      /* a loop is running: nested loops run inline */
};

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" ::: "memory");
}

static void run_chunks(struct wh_threadpool *p)
{
	for (;;) {
		size_t c = atomic_fetch_add_explicit(&p->next_chunk, 1, memory_order_relaxed);
		if (c >= p->n_chunks)
			break;
		size_t b = c * p->grain;
		size_t e = b + p->grain < p->n ? b + p->grain : p->n;
		p->fn(p->ctx, b, e);
	}
}

static void *worker(void *arg)
{
	struct wh_threadpool *p = arg;
	unsigned long seen = 0;
	for (;;) {
		for (int i = 0; i < SPIN_ITERATIONS && atomic_load(&p->gen) == seen && !atomic_load(&p->stop); i++)
			cpu_relax();
		pthread_mutex_lock(&p->mu);
		while (!atomic_load(&p->stop) && atomic_load(&p->gen) == seen) {
			p->sleeping++;
			pthread_cond_wait(&p->work_cv, &p->mu);
			p->sleeping--;
		}
		if (atomic_load(&p->stop)) {
			pthread_mutex_unlock(&p->mu);
			break;
		}
		seen = atomic_load(&p->gen);
		pthread_mutex_unlock(&p->mu);
		run_chunks(p);
		if (atomic_fetch_sub(&p->active, 1) == 1) {
			pthread_mutex_lock(&p->mu);
			if (p->main_waiting)
				pthread_cond_signal(&p->done_cv);
			pthread_mutex_unlock(&p->mu);
		}
	}
	return NULL;
}

enum wh_status wh_threadpool_create(int threads, struct wh_threadpool **out)
{
	if (threads <= 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		threads = n > 0 ? (int)n : 1;
	}
	if (threads > 256)
		threads = 256;
	struct wh_threadpool *p = calloc(1, sizeof *p);
	if (!p)
		return wh_error(WH_ERR_NOMEM, "thread pool: out of memory");
	p->n_workers = threads - 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work_cv, NULL);
	pthread_cond_init(&p->done_cv, NULL);
	atomic_init(&p->busy, false);
	atomic_init(&p->stop, false);
	atomic_init(&p->gen, 0);
	atomic_init(&p->active, 0);
	if (p->n_workers) {
		p->threads = calloc((size_t)p->n_workers, sizeof *p->threads);
		if (!p->threads) {
			free(p);
			return wh_error(WH_ERR_NOMEM, "thread pool: out of memory");
		}
		for (int i = 0; i < p->n_workers; i++) {
			if (pthread_create(&p->threads[i], NULL, worker, p) != 0) {
				p->n_workers = i;
				wh_threadpool_destroy(p);
				return wh_error(WH_ERR_INTERNAL, "thread pool: cannot start thread %d (lower --threads)", i);
			}
		}
	}
	*out = p;
	return WH_OK;
}

void wh_threadpool_destroy(struct wh_threadpool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n_workers; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->work_cv);
	pthread_cond_destroy(&p->done_cv);
	free(p);
}

int wh_threadpool_size(const struct wh_threadpool *p)
{
	return p ? p->n_workers + 1 : 1;
}

void wh_parallel_for(struct wh_threadpool *p, size_t n, size_t grain, wh_range_fn fn, void *ctx)
{
	if (n == 0)
		return;
	if (grain == 0)
		grain = 1;
	size_t n_chunks = (n + grain - 1) / grain;
	bool expected = false;
	if (!p || p->n_workers == 0 || n_chunks == 1 ||
	    !atomic_compare_exchange_strong(&p->busy, &expected, true)) {
		for (size_t b = 0; b < n; b += grain)
			fn(ctx, b, b + grain < n ? b + grain : n);
		return;
	}
	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	p->grain = grain;
	p->n_chunks = n_chunks;
	atomic_store(&p->next_chunk, 0);
	atomic_store(&p->active, p->n_workers);
	pthread_mutex_lock(&p->mu);
	atomic_fetch_add(&p->gen, 1); /* publishes the job fields written above */
	if (p->sleeping)
		pthread_cond_broadcast(&p->work_cv);
	pthread_mutex_unlock(&p->mu);
	run_chunks(p);
	for (int i = 0; i < SPIN_ITERATIONS && atomic_load(&p->active) > 0; i++)
		cpu_relax();
	if (atomic_load(&p->active) > 0) {
		pthread_mutex_lock(&p->mu);
		p->main_waiting = true;
		while (atomic_load(&p->active) > 0)
			pthread_cond_wait(&p->done_cv, &p->mu);
		p->main_waiting = false;
		pthread_mutex_unlock(&p->mu);
	}
	atomic_store(&p->busy, false);
}
