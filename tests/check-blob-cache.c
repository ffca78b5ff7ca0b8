/* Caches of freed blobs (graph/blob.h) and the engine's use of them (executor/runtime.c):
 * memory comes back only for the same padded size, only while the cache is the thread's
 * current one, never beyond its limits, with a fresh digest; an engine's repeated runs give
 * the same bits with its cache as the first run did without one; wh_blob_shared says whether
 * a blob has holders besides the caller. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "graph/blob.h"
#include "graph/ir.h"
#include "graph/onnx-io.h"
#include "graph/tensor-file.h"
#include "graph/tensor.h"

static struct wh_blob *make(size_t size, void **w)
{
	struct wh_blob *b = NULL;
	ck_assert_int_eq(wh_blob_create(size, &b, w), WH_OK);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(b->size, size);
	return b;
}

START_TEST(test_same_padded_size_reuses_memory)
{
	struct wh_blob_cache *c;
	ck_assert_int_eq(wh_blob_cache_create(1 << 20, &c), WH_OK);
	struct wh_blob_cache *prev = wh_blob_cache_use(c);
	ck_assert_ptr_null(prev);
	void *w;
	struct wh_blob *a = make(1000, &w);
	const void *mem = a->data;
	ck_assert_uint_eq((uintptr_t)mem % 64, 0);
	wh_blob_release(a);
	/* 1000 and 1010 pad to the same 1024 bytes: the memory comes back, with the new size */
	struct wh_blob *b = make(1010, &w);
	ck_assert_ptr_eq(b->data, mem);
	ck_assert_ptr_eq(w, mem);
	ck_assert_uint_eq(b->size, 1010);
	/* a blob in use is not handed out twice */
	struct wh_blob *d = make(1010, &w);
	ck_assert_ptr_ne(d->data, mem);
	wh_blob_release(d);
	wh_blob_release(b);
	/* another padded size does not take it */
	struct wh_blob *e = make(2048, &w);
	ck_assert_ptr_ne(e->data, mem);
	wh_blob_release(e);
	wh_blob_cache_use(prev);
	wh_blob_cache_destroy(c);
}
END_TEST

START_TEST(test_shared_blob_comes_back_only_when_the_last_reference_goes)
{
	struct wh_blob_cache *c;
	ck_assert_int_eq(wh_blob_cache_create(1 << 20, &c), WH_OK);
	wh_blob_cache_use(c);
	void *w;
	struct wh_blob *a = make(4096, &w);
	const void *mem = a->data;
	wh_blob_retain(a);
	wh_blob_release(a);
	struct wh_blob *b = make(4096, &w);
	ck_assert_ptr_ne(b->data, mem); /* a is still held */
	wh_blob_release(a);
	struct wh_blob *d = make(4096, &w);
	ck_assert_ptr_eq(d->data, mem);
	wh_blob_release(b);
	wh_blob_release(d);
	wh_blob_cache_use(NULL);
	wh_blob_cache_destroy(c);
}
END_TEST

START_TEST(test_no_reuse_without_a_current_cache_and_limits_hold)
{
	struct wh_blob_cache *c;
	ck_assert_int_eq(wh_blob_cache_create(8192, &c), WH_OK);
	void *w;
	/* freed while the cache is not current: back to malloc, not into the cache */
	struct wh_blob *a = make(512, &w);
	wh_blob_release(a);
	wh_blob_cache_use(c);
	struct wh_blob *big = make((size_t)512 << 10, &w); /* above the 256 KiB a cache holds */
	const void *big_mem = big->data;
	wh_blob_release(big);
	struct wh_blob *big2 = make((size_t)512 << 10, &w);
	ck_assert_ptr_ne(big2->data, big_mem);
	wh_blob_release(big2);
	/* max_bytes 8192: two 4096-byte blobs fit, a third is freed */
	struct wh_blob *x[3];
	const void *mem[3];
	for (int i = 0; i < 3; i++) {
		x[i] = make(4096, &w);
		mem[i] = x[i]->data;
	}
	for (int i = 0; i < 3; i++)
		wh_blob_release(x[i]);
	int back = 0;
	struct wh_blob *y[3];
	for (int i = 0; i < 3; i++) {
		y[i] = make(4096, &w);
		for (int k = 0; k < 3; k++)
			back += y[i]->data == mem[k] && k < 2;
	}
	ck_assert_int_eq(back, 2);
	wh_blob_cache_use(NULL);
	for (int i = 0; i < 3; i++)
		wh_blob_release(y[i]); /* no cache current: freed */
	wh_blob_cache_destroy(c);
}
END_TEST

START_TEST(test_reused_blob_gets_a_fresh_digest)
{
	struct wh_blob_cache *c;
	ck_assert_int_eq(wh_blob_cache_create(1 << 20, &c), WH_OK);
	wh_blob_cache_use(c);
	void *w;
	struct wh_blob *a = make(256, &w);
	memset(w, 1, 256);
	uint64_t d1[2], d2[2];
	wh_blob_digest(a, d1);
	const void *mem = a->data;
	wh_blob_release(a);
	struct wh_blob *b = make(256, &w);
	ck_assert_ptr_eq(b->data, mem);
	memset(w, 2, 256);
	wh_blob_digest(b, d2);
	ck_assert_msg(d1[0] != d2[0] || d1[1] != d2[1], "the reused blob kept the digest of its old bytes");
	wh_blob_release(b);
	wh_blob_cache_use(NULL);
	wh_blob_cache_destroy(c);
}
END_TEST

/* A small model (Conv, Relu, Add and MatMul with tensors freed mid-run) run many times on
 * one engine: every run gives the bits of a run on a fresh engine, and the calling thread
 * has no cache once the run returned. */
static struct wh_model *small_model(void)
{
	struct wh_model *m = NULL;
	const char *src = getenv("WHITTLE_SRC");
	char path[4096];
	snprintf(path, sizeof path, "%s/fixtures/corpus/kws_dscnn.onnx", src ? src : ".");
	ck_assert_int_eq(wh_model_load(path, &m), WH_OK);
	return m;
}

static void run_once(struct wh_engine *e, const struct wh_tensor *x, struct wh_tensor *out)
{
	struct wh_tensor_set in, res;
	wh_tensor_set_init(&in);
	wh_tensor_set_init(&res);
	ck_assert_int_eq(wh_tensor_set_add(&in, "mfcc", -1, x), WH_OK);
	ck_assert_int_eq(wh_engine_run(e, &in, WH_KEEP_OUTPUTS, &res), WH_OK);
	ck_assert_uint_eq(res.n, 1);
	wh_tensor_ref(out, &res.items[0].t);
	wh_tensor_set_release(&res);
	wh_tensor_set_release(&in);
}

START_TEST(test_engine_runs_are_bit_identical_with_the_cache)
{
	struct wh_model *m = small_model();
	struct wh_tensor x;
	wh_tensor_init(&x);
	int64_t dims[4] = {1, 1, 49, 10};
	ck_assert_int_eq(wh_tensor_alloc(&x, WH_DT_FLOAT, 4, dims), WH_OK);
	float *xd = x.data;
	for (uint64_t i = 0; i < x.count; i++)
		xd[i] = (float)((i * 7919) % 200) / 100.0f - 1.0f;
	struct wh_engine_options opt = {.threads = 2};
	struct wh_engine *fresh, *e;
	struct wh_tensor ref, got;
	wh_tensor_init(&ref);
	wh_tensor_init(&got);
	ck_assert_int_eq(wh_engine_create(m, &opt, &fresh), WH_OK);
	run_once(fresh, &x, &ref);
	wh_engine_destroy(fresh);
	ck_assert_int_eq(wh_engine_create(m, &opt, &e), WH_OK);
	for (int r = 0; r < 20; r++) {
		run_once(e, &x, &got);
		ck_assert(wh_tensor_same_shape(&got, &ref));
		ck_assert_msg(!memcmp(got.data, ref.data, wh_tensor_nbytes(&ref)), "run %d differs from a fresh engine's", r);
		/* no cache left current: this blob goes back to malloc */
		ck_assert_ptr_null(wh_blob_cache_use(NULL));
		wh_tensor_release(&got);
	}
	wh_engine_destroy(e);
	wh_tensor_release(&ref);
	wh_tensor_release(&x);
	wh_model_destroy(m);
}
END_TEST

/* graph/blob.c keeps nothing under AddressSanitizer: only the engine test applies there */
#if defined(__SANITIZE_ADDRESS__)
#define WH_CACHE_HOLDS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define WH_CACHE_HOLDS 0
#endif
#endif
#ifndef WH_CACHE_HOLDS
#define WH_CACHE_HOLDS 1
#endif

/* wh_blob_shared: whether anyone but the caller's one reference holds the blob (the GPU's
 * weights store frees an entry when not) */
START_TEST(test_shared_counts_other_holders)
{
	void *w;
	struct wh_blob *b = make(64, &w);
	ck_assert(!wh_blob_shared(b));
	ck_assert_ptr_eq(wh_blob_retain(b), b);
	ck_assert(wh_blob_shared(b));
	wh_blob_release(b);
	ck_assert(!wh_blob_shared(b));
	ck_assert(!wh_blob_shared(NULL));
	wh_blob_release(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blob-cache");
	TCase *tc = tcase_create("cache");
	tcase_set_timeout(tc, 60);
	if (WH_CACHE_HOLDS) {
		tcase_add_test(tc, test_same_padded_size_reuses_memory);
		tcase_add_test(tc, test_shared_blob_comes_back_only_when_the_last_reference_goes);
		tcase_add_test(tc, test_no_reuse_without_a_current_cache_and_limits_hold);
		tcase_add_test(tc, test_reused_blob_gets_a_fresh_digest);
	}
	tcase_add_test(tc, test_engine_runs_are_bit_identical_with_the_cache);
	tcase_add_test(tc, test_shared_counts_other_holders);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
