#include "executor/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "graph/os.h"

/* How the pool stays fast on a machine where other processes take cores.
 *
 * A pool whose caller waits for particular workers (a barrier, a slice per worker) runs at
 * the speed of its slowest thread: when another process holds a core, the worker that lives
 * there runs only every few milliseconds, and every loop waits for it. Here no work belongs
 * to a thread. The chunk bounds are fixed by n and the grain (determinism), but a chunk is
 * CLAIMED from a shared counter by whoever comes first, the caller included; the caller
 * waits only for chunks already claimed, so a worker that has not woken up yet delays
 * nothing, and a worker descheduled inside a chunk delays that one chunk. Workers spin a
 * short while after a job (models run hundreds of small loops back to back and a futex
 * round trip costs more than a small loop), then sleep on a futex; the caller wakes only as
 * many as there are chunks beyond its own first one, and runs one-chunk loops inline
 * without waking anyone. Workers run as SCHED_BATCH (see worker()).
 *
 * Publication: the caller writes the job's fields, resets `done`, then stores the chunk
 * count in `left` (release). A thread reads the job's fields only after it claimed a chunk
 * by decrementing `left` (acquire); the caller does not touch the fields again until every
 * claimed chunk reported `done`, so the claimer always sees the job it claimed from, even if
 * it slept through several jobs before claiming. */

/* Spin budgets in nanoseconds: a worker's wait for the next job, the caller's wait for
 * claimed chunks. Short enough that a loaded machine loses little to spinning. */
#define WORKER_SPIN_S 60e-6
#define CALLER_SPIN_S 30e-6
/* A claimed chunk that keeps the caller waiting much longer than the caller's own chunks
 * took means its claimer lost its core (another process got it for a time slice, and the
 * scheduler does not move a task that just ran to the caller's idle core). Then the loops
 * of the next SOLO_S run on the caller alone: on a loaded machine that caps the loss at one
 * such wait per window; on a quiet one it never triggers. */
#define SLOW_FACTOR 4.0
#define SLOW_SLACK_S 200e-6
#define SOLO_S 50e-3
/* Loops too small to pay for waking the workers run on the caller alone. What a loop costs
 * is known only once it ran: the pool keeps, per loop (its function, n and grain), the time
 * the caller alone would take, measured on its last run (inline: the whole loop; shared: the
 * caller's own chunks scaled to all of them), and runs it inline while that is under
 * SMALL_LOOP_S. Sharing a loop of a few microseconds costs more than it saves: the wake-up,
 * the claims on shared counters, and the next layer reading from its own cache what the
 * other core wrote (a 1.2 us 1x1 Conv took 3 us on 2 threads). 5 us, not 10: with conv
 * tiles of 2^17 multiply-adds (conv.c) loops of 5-10 us gain from the second core. The chunk bounds stay those
 * of n and the grain either way, so the bits do not change. A loop seen for the first time
 * is shared. */
#define SMALL_LOOP_S 5e-6
#define LOOP_SLOTS 256

struct wh_threadpool {
	int n_workers; /* threads besides the caller */
	pthread_t *threads;
	/* current job: written by the caller only while no chunk is claimed and unfinished */
	wh_range_fn fn;
	void *ctx;
	size_t n, grain, n_chunks;
	atomic_int_least64_t left; /* chunks not claimed yet (<= 0: none) */
	atomic_uint done;      /* chunks finished (futex word of the caller's wait) */
	atomic_uint job;       /* job counter (futex word of the workers' wait) */
	atomic_int sleepers;   /* workers asleep (or about to be) on `job` */
	atomic_int caller_asleep;
	atomic_bool stop;
	atomic_bool busy;      /* a loop is running: nested loops run inline */
	double solo_until;     /* (caller, under busy) run loops inline until then; 0: off */
	/* (caller, under busy) the last measured caller-alone time per loop (SMALL_LOOP_S),
	 * a direct-mapped table: a collision only costs a loop one shared run */
	struct loop_cost {
		wh_range_fn fn;
		size_t n, grain;
		double alone_s;
	} costs[LOOP_SLOTS];
	atomic_uint_least64_t shared; /* loops handed to the workers */
};

static struct loop_cost *loop_slot(struct wh_threadpool *p, wh_range_fn fn, size_t n, size_t grain)
{
	uint64_t h = (uint64_t)(uintptr_t)fn ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)grain * 0xc2b2ae3d27d4eb4full);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return &p->costs[h & (LOOP_SLOTS - 1)];
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("pause" ::: "memory");
#else
	atomic_signal_fence(memory_order_seq_cst);
#endif
}

#ifdef __linux__
static void futex_wait(atomic_uint *addr, unsigned expected)
{
	syscall(SYS_futex, (unsigned *)addr, FUTEX_WAIT_PRIVATE, expected, NULL, NULL, 0);
}

static void futex_wake(atomic_uint *addr, int count)
{
	syscall(SYS_futex, (unsigned *)addr, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}
#else
/* No futex: sleep a little and let the caller re-check. */
static void futex_wait(atomic_uint *addr, unsigned expected)
{
	if (atomic_load(addr) == expected) {
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
}

static void futex_wake(atomic_uint *addr, int count)
{
	(void)addr;
	(void)count;
}
#endif

/* Claims and runs chunks of the current job until none is left, then reports how many it
 * ran (one `done` update per thread and job, not per chunk: chunks can be tiny); returns
 * that count. */
static unsigned run_chunks(struct wh_threadpool *p)
{
	unsigned ran = 0;
	size_t n_chunks = 0;
	for (;;) {
		/* `left` may go below zero; the next job stores its count over it */
		int64_t left = atomic_fetch_sub_explicit(&p->left, 1, memory_order_acquire);
		if (left <= 0)
			break;
		/* claimed: the fields are this job's until its `done` reaches n_chunks, which
		 * cannot happen before this thread reports */
		n_chunks = p->n_chunks;
		size_t b = (n_chunks - (size_t)left) * p->grain;
		size_t e = b + p->grain < p->n ? b + p->grain : p->n;
		p->fn(p->ctx, b, e);
		ran++;
	}
	if (ran && atomic_fetch_add(&p->done, ran) + ran == n_chunks && atomic_load(&p->caller_asleep))
		futex_wake(&p->done, 1);
	return ran;
}

/* Spins up to budget seconds while *word == value (and the pool is not stopping); true if
 * it changed. Reads the clock every 64 pauses only. */
static bool spin_while_equal(struct wh_threadpool *p, atomic_uint *word, unsigned value, double budget)
{
	double start = 0;
	for (unsigned i = 0;; i++) {
		if (atomic_load_explicit(word, memory_order_acquire) != value || atomic_load_explicit(&p->stop, memory_order_relaxed))
			return true;
		if ((i & 63) == 0) {
			double now = wh_os_now_s();
			if (i == 0)
				start = now;
			else if (now - start > budget)
				return false;
		}
		cpu_relax();
	}
}

static void *worker(void *arg)
{
	struct wh_threadpool *p = arg;
#ifdef SCHED_BATCH
	/* A woken worker must not preempt the thread that woke it: on a loaded machine the
	 * preempted caller waits behind every other runnable process for its next turn (a
	 * 22 us Conv took 1.5 ms at load 14). SCHED_BATCH drops wake-up preemption and nothing
	 * else; it needs no privilege, and if it is refused the pool works as before. */
	struct sched_param sp = {0};
	pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp);
#endif
	unsigned seen = 0; /* the counter's start: a worker that starts late still joins job 1 */
	for (;;) {
		if (!spin_while_equal(p, &p->job, seen, WORKER_SPIN_S)) {
			atomic_fetch_add(&p->sleepers, 1);
			/* the caller bumps `job` before it reads `sleepers` (both seq_cst): either it
			 * sees this sleeper, or this re-check sees the new job */
			while (atomic_load(&p->job) == seen && !atomic_load(&p->stop))
				futex_wait(&p->job, seen);
			atomic_fetch_sub(&p->sleepers, 1);
		}
		if (atomic_load(&p->stop))
			break;
		seen = atomic_load(&p->job);
		(void)run_chunks(p);
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
	atomic_init(&p->left, 0);
	atomic_init(&p->done, 0);
	atomic_init(&p->job, 0);
	atomic_init(&p->sleepers, 0);
	atomic_init(&p->caller_asleep, 0);
	atomic_init(&p->stop, false);
	atomic_init(&p->busy, false);
	atomic_init(&p->shared, 0);
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
	atomic_store(&p->stop, true);
	atomic_fetch_add(&p->job, 1);
	futex_wake(&p->job, p->n_workers > 0 ? p->n_workers : 1);
	for (int i = 0; i < p->n_workers; i++)
		pthread_join(p->threads[i], NULL);
	free(p->threads);
	free(p);
}

int wh_threadpool_size(const struct wh_threadpool *p)
{
	return p ? p->n_workers + 1 : 1;
}

uint64_t wh_threadpool_shared_loops(const struct wh_threadpool *p)
{
	return p ? atomic_load_explicit(&p->shared, memory_order_relaxed) : 0;
}

void wh_parallel_for(struct wh_threadpool *p, size_t n, size_t grain, wh_range_fn fn, void *ctx)
{
	if (n == 0)
		return;
	if (grain == 0)
		grain = 1;
	size_t n_chunks = (n + grain - 1) / grain;
	bool expected = false;
	bool inline_run = !p || p->n_workers == 0 || n_chunks == 1 || n_chunks > UINT32_MAX ||
			  !atomic_compare_exchange_strong(&p->busy, &expected, true);
	if (!inline_run && p->solo_until > 0) {
		if (wh_os_now_s() < p->solo_until) {
			inline_run = true;
			atomic_store(&p->busy, false);
		} else {
			p->solo_until = 0;
		}
	}
	struct loop_cost *lc = NULL;
	if (!inline_run) {
		lc = loop_slot(p, fn, n, grain);
		if (lc->fn != fn || lc->n != n || lc->grain != grain) {
			lc->fn = fn;
			lc->n = n;
			lc->grain = grain;
			lc->alone_s = -1; /* unknown: share it and measure */
		} else if (lc->alone_s >= 0 && lc->alone_s < SMALL_LOOP_S) {
			double t0 = wh_os_now_s();
			for (size_t b = 0; b < n; b += grain)
				fn(ctx, b, b + grain < n ? b + grain : n);
			lc->alone_s = wh_os_now_s() - t0;
			atomic_store(&p->busy, false);
			return;
		}
	}
	if (inline_run) {
		for (size_t b = 0; b < n; b += grain)
			fn(ctx, b, b + grain < n ? b + grain : n);
		return;
	}
	atomic_fetch_add_explicit(&p->shared, 1, memory_order_relaxed);
	p->fn = fn;
	p->ctx = ctx;
	p->n = n;
	p->grain = grain;
	p->n_chunks = n_chunks;
	atomic_store_explicit(&p->done, 0, memory_order_relaxed);
	atomic_store_explicit(&p->left, (int64_t)n_chunks, memory_order_release);
	atomic_fetch_add(&p->job, 1);
	int sleepers = atomic_load(&p->sleepers);
	if (sleepers > 0) {
		/* the caller takes one chunk itself: wake at most one worker per other chunk */
		size_t want = n_chunks - 1 < (size_t)p->n_workers ? n_chunks - 1 : (size_t)p->n_workers;
		futex_wake(&p->job, (int)want);
	}
	double t0 = wh_os_now_s();
	unsigned mine = run_chunks(p);
	double t1 = wh_os_now_s();
	bool waited = atomic_load_explicit(&p->done, memory_order_acquire) != n_chunks;
	/* only chunks claimed by others are left: spin briefly, then sleep (which frees this
	 * core, so the scheduler can move a descheduled claimer here) */
	double start = 0;
	for (unsigned i = 0, d; (d = atomic_load_explicit(&p->done, memory_order_acquire)) != n_chunks; i++) {
		if ((i & 63) == 0) {
			double now = wh_os_now_s();
			if (i == 0) {
				start = now;
			} else if (now - start > CALLER_SPIN_S) {
				atomic_store(&p->caller_asleep, 1);
				while ((d = atomic_load(&p->done)) != n_chunks)
					futex_wait(&p->done, d);
				atomic_store(&p->caller_asleep, 0);
				break;
			}
		}
		cpu_relax();
	}
	/* the caller's chunks: all of the same size but the last */
	if (mine)
		lc->alone_s = (t1 - t0) / mine * (double)n_chunks;
	if (waited && mine) {
		double t2 = wh_os_now_s();
		if (t2 - t1 > SLOW_FACTOR * (t1 - t0) / mine + SLOW_SLACK_S)
			p->solo_until = t2 + SOLO_S;
	}
	atomic_store(&p->busy, false);
}
