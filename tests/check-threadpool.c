/* The chunking rule that determinism rests on (executor/threadpool.h): wh_parallel_for's
 * chunk bounds depend only on n and the grain, and wh_grain_for only on the work per item,
 * so a kernel computes the same chunks, and the same bits, for any thread count. */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "executor/threadpool.h"

struct record {
	size_t grain;
	size_t *ends; /* per chunk index: the end its call saw (0: never called) */
	atomic_size_t calls;
	atomic_bool bad;  /* a chunk that does not start at a multiple of the grain */
};

static void note(void *arg, size_t begin, size_t end)
{
	struct record *r = arg;
	if (begin % r->grain || end <= begin || end - begin > r->grain)
		atomic_store(&r->bad, true);
	else
		r->ends[begin / r->grain] = end;
	atomic_fetch_add(&r->calls, 1);
}

/* Runs a loop of n items with the given grain on a pool of `threads` (0: no pool) and
 * returns the chunk ends it saw, per chunk index (caller frees). */
static size_t *chunks_of(int threads, size_t n, size_t grain, size_t *n_chunks)
{
	struct wh_threadpool *pool = NULL;
	if (threads > 0)
		ck_assert_int_eq(wh_threadpool_create(threads, &pool), WH_OK);
	size_t g = grain ? grain : 1;
	*n_chunks = (n + g - 1) / g;
	struct record r = {.grain = g, .ends = calloc(*n_chunks + 1, sizeof(size_t))};
	ck_assert_ptr_nonnull(r.ends);
	atomic_init(&r.calls, 0);
	atomic_init(&r.bad, false);
	wh_parallel_for(pool, n, grain, note, &r);
	wh_threadpool_destroy(pool);
	ck_assert_msg(!atomic_load(&r.bad), "n %zu grain %zu, %d threads: a chunk is not [k * grain, min(n, (k + 1) * grain))",
		      n, g, threads);
	ck_assert_uint_eq(atomic_load(&r.calls), *n_chunks);
	return r.ends;
}

START_TEST(test_chunk_bounds_do_not_depend_on_threads)
{
	const size_t sizes[] = {1, 7, 1000, 32768, 32769, 100003, 1u << 20};
	const uint64_t per_item[] = {0, 1, 3, 64, 1000, 32768, 1u << 20};
	const int threads[] = {0, 1, 2, 3, 8};
	for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
		for (size_t pi = 0; pi < sizeof per_item / sizeof *per_item; pi++) {
			size_t grain = wh_grain_for(per_item[pi]);
			size_t n_ref;
			size_t *ref = chunks_of(0, sizes[si], grain, &n_ref);
			for (size_t ti = 1; ti < sizeof threads / sizeof *threads; ti++) {
				size_t n_chunks;
				size_t *got = chunks_of(threads[ti], sizes[si], grain, &n_chunks);
				ck_assert_uint_eq(n_chunks, n_ref);
				ck_assert_msg(!memcmp(got, ref, n_chunks * sizeof *got),
					      "n %zu grain %zu: %d threads cut other chunks than one", sizes[si], grain, threads[ti]);
				free(got);
			}
			free(ref);
		}
}
END_TEST

START_TEST(test_grain_for_holds_about_one_chunk_of_work)
{
	ck_assert_uint_eq(wh_grain_for(0), WH_CHUNK_ELEMS); /* no work per item counts as one */
	ck_assert_uint_eq(wh_grain_for(1), WH_CHUNK_ELEMS);
	ck_assert_uint_eq(wh_grain_for(WH_CHUNK_ELEMS), 1);
	ck_assert_uint_eq(wh_grain_for(UINT64_MAX), 1);
	for (uint64_t per = 1; per < 3 * WH_CHUNK_ELEMS; per = per * 3 + 1) {
		size_t g = wh_grain_for(per);
		ck_assert_uint_ge(g, 1);
		if (per < WH_CHUNK_ELEMS) {
			/* as many items as fit in a chunk's work, and not one fewer */
			ck_assert_uint_le(g * per, WH_CHUNK_ELEMS);
			ck_assert_uint_gt((g + 1) * per, WH_CHUNK_ELEMS);
		}
	}
}
END_TEST

/* Every element of every loop is visited exactly once, over many loops of mixed sizes back
 * to back (the claim and publish protocol under contention, with more threads than cores). */
struct count_ctx {
	atomic_uint *hits;
	size_t n;
};

static void count_range(void *arg, size_t begin, size_t end)
{
	struct count_ctx *c = arg;
	for (size_t i = begin; i < end && i < c->n; i++)
		atomic_fetch_add_explicit(&c->hits[i], 1, memory_order_relaxed);
}

START_TEST(test_every_index_once_over_many_loops)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(4, &pool), WH_OK);
	enum { MAX_N = 4096 };
	atomic_uint *hits = calloc(MAX_N, sizeof *hits);
	ck_assert_ptr_nonnull(hits);
	unsigned seed = 12345;
	for (int loop = 0; loop < 1000; loop++) {
		seed = seed * 1103515245u + 12345u;
		size_t n = 1 + (seed >> 8) % MAX_N, grain = 1 + (seed >> 20) % 64;
		for (size_t i = 0; i < n; i++)
			atomic_store_explicit(&hits[i], 0, memory_order_relaxed);
		struct count_ctx c = {hits, n};
		wh_parallel_for(pool, n, grain, count_range, &c);
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(atomic_load(&hits[i]) == 1, "loop %d (n %zu grain %zu): index %zu visited %u times", loop, n, grain,
				      i, atomic_load(&hits[i]));
	}
	free(hits);
	wh_threadpool_destroy(pool);
}
END_TEST

/* A descheduled worker must not hold up loops it has not claimed a chunk of: the test parks
 * the pool's worker inside a signal handler (as another process holding its core would) and
 * runs loops; they must finish on the calling thread while the worker is still parked.
 * A pool whose caller waits for every worker to check in hangs here until the park times out. */
static atomic_int parked, unpark;

static void park_handler(int sig)
{
	(void)sig;
	atomic_store(&parked, 1);
	struct timespec ts = {0, 1000000};
	for (int i = 0; i < 5000 && !atomic_load(&unpark); i++) /* 5 s at most */
		nanosleep(&ts, NULL);
	atomic_store(&parked, 0);
}

START_TEST(test_loops_do_not_wait_for_a_parked_worker)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = park_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	/* block the signal here (after the worker started with the old mask), so that the
	 * process-directed signal lands on the worker */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &set, &old), 0);
	atomic_store(&unpark, 0);
	ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
	struct timespec ts = {0, 1000000};
	for (int i = 0; i < 5000 && !atomic_load(&parked); i++)
		nanosleep(&ts, NULL);
	ck_assert_msg(atomic_load(&parked), "the worker did not take the signal");
	enum { N = 1024 };
	atomic_uint *hits = calloc(N, sizeof *hits);
	ck_assert_ptr_nonnull(hits);
	for (int loop = 0; loop < 200; loop++) {
		struct count_ctx c = {hits, N};
		wh_parallel_for(pool, N, 16, count_range, &c);
	}
	bool still_parked = atomic_load(&parked);
	atomic_store(&unpark, 1);
	for (size_t i = 0; i < N; i++)
		ck_assert_uint_eq(atomic_load(&hits[i]), 200);
	ck_assert_msg(still_parked, "200 loops waited for the parked worker (the caller must run unclaimed chunks itself)");
	wh_threadpool_destroy(pool);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(hits);
}
END_TEST

/* A claimer that keeps the caller waiting far longer than the caller's own chunks took has
 * lost its core: the loops right after run on the caller alone (threadpool.c SOLO_S), so a
 * loaded machine loses one such wait per window instead of one per loop. */
static pthread_t caller_thread;
static atomic_int foreign_chunks, stalled;

static void busy_wait_s(double s)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < s);
}

static void stall_once(void *arg, size_t begin, size_t end)
{
	(void)arg, (void)begin, (void)end;
	if (!pthread_equal(pthread_self(), caller_thread) && !atomic_exchange(&stalled, 1)) {
		struct timespec ts = {0, 200000000}; /* the claimer "loses its core" for 0.2 s, far
							* longer than the caller's 32 ms even on a loaded machine */
		nanosleep(&ts, NULL);
		return;
	}
	busy_wait_s(1e-3);
}

static void note_thread(void *arg, size_t begin, size_t end)
{
	(void)arg, (void)begin, (void)end;
	if (!pthread_equal(pthread_self(), caller_thread))
		atomic_fetch_add(&foreign_chunks, 1);
	busy_wait_s(100e-6);
}

START_TEST(test_loops_after_a_stalled_claimer_run_on_the_caller)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	caller_thread = pthread_self();
	atomic_store(&stalled, 0);
	atomic_store(&foreign_chunks, 0);
	wh_parallel_for(pool, 32, 1, stall_once, NULL); /* 32 chunks of 1 ms: the worker claims one */
	ck_assert_msg(atomic_load(&stalled), "the worker claimed no chunk of 32 ms of work");
	for (int loop = 0; loop < 10; loop++) /* 4 ms of work, well inside the 50 ms window */
		wh_parallel_for(pool, 4, 1, note_thread, NULL);
	ck_assert_msg(atomic_load(&foreign_chunks) == 0, "%d chunks ran on the worker right after it stalled a loop",
		      atomic_load(&foreign_chunks));
	wh_threadpool_destroy(pool);
}
END_TEST

/* Loops that take the caller alone less than a wake-up's worth of time run on the caller
 * (threadpool.c SMALL_LOOP_S) from their second run on, with the same chunks; loops that
 * take longer are still handed to the workers. */
START_TEST(test_small_loops_run_on_the_caller_with_the_same_chunks)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	const size_t n = 100, grain = 7, n_chunks = (n + grain - 1) / grain;
	size_t n_ref;
	size_t *ref = chunks_of(0, n, grain, &n_ref);
	ck_assert_uint_eq(n_ref, n_chunks);
	uint64_t shared_first = 0;
	for (int loop = 0; loop < 50; loop++) {
		struct record r = {.grain = grain, .ends = calloc(n_chunks + 1, sizeof(size_t))};
		ck_assert_ptr_nonnull(r.ends);
		atomic_init(&r.calls, 0);
		atomic_init(&r.bad, false);
		wh_parallel_for(pool, n, grain, note, &r);
		ck_assert(!atomic_load(&r.bad));
		ck_assert_uint_eq(atomic_load(&r.calls), n_chunks);
		ck_assert_msg(!memcmp(r.ends, ref, n_chunks * sizeof *ref), "run %d cut other chunks", loop);
		if (loop == 0)
			shared_first = wh_threadpool_shared_loops(pool);
		free(r.ends);
	}
	/* the first run is shared and measured; the loop (well under a microsecond) is far below
	 * a wake-up's cost, so later runs stay on the caller, unless a measurement was inflated
	 * by losing the core on a loaded machine: a few may be shared */
	ck_assert_uint_eq(shared_first, 1);
	uint64_t later = wh_threadpool_shared_loops(pool) - shared_first;
	ck_assert_msg(later <= 5, "%llu of 49 runs of a tiny loop were handed to the workers", (unsigned long long)later);
	free(ref);
	wh_threadpool_destroy(pool);
}
END_TEST

static void long_chunk(void *arg, size_t begin, size_t end)
{
	(void)arg, (void)begin, (void)end;
	busy_wait_s(100e-6);
}

START_TEST(test_long_loops_stay_shared)
{
	struct wh_threadpool *pool;
	ck_assert_int_eq(wh_threadpool_create(2, &pool), WH_OK);
	for (int loop = 0; loop < 5; loop++) {
		struct timespec ts = {0, 60000000}; /* past any solo window a stall may open */
		nanosleep(&ts, NULL);
		wh_parallel_for(pool, 8, 1, long_chunk, NULL); /* 0.8 ms alone */
	}
	ck_assert_uint_eq(wh_threadpool_shared_loops(pool), 5);
	wh_threadpool_destroy(pool);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("threadpool");
	TCase *tc = tcase_create("chunks");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_chunk_bounds_do_not_depend_on_threads);
	tcase_add_test(tc, test_grain_for_holds_about_one_chunk_of_work);
	tcase_add_test(tc, test_every_index_once_over_many_loops);
	tcase_add_test(tc, test_loops_do_not_wait_for_a_parked_worker);
	tcase_add_test(tc, test_loops_after_a_stalled_claimer_run_on_the_caller);
	tcase_add_test(tc, test_small_loops_run_on_the_caller_with_the_same_chunks);
	tcase_add_test(tc, test_long_loops_stay_shared);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
