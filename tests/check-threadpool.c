/* The chunking rule that determinism rests on (executor/threadpool.h): wh_parallel_for's
 * chunk bounds depend only on n and the grain, and wh_grain_for only on the work per item,
 * so a kernel computes the same chunks, and the same bits, for any thread count. */
#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

int main(void)
{
	Suite *s = suite_create("threadpool");
	TCase *tc = tcase_create("chunks");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_chunk_bounds_do_not_depend_on_threads);
	tcase_add_test(tc, test_grain_for_holds_about_one_chunk_of_work);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
