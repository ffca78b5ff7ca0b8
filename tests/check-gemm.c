/* The float32 GEMM engine and Gemm / MatMul / MatMulInteger / QLinearMatMul
 * (executor/ops/gemm.c): every micro-kernel (scalar, AVX2, AVX-512, forced through
 * wh_cpu_capped) against the scalar reference on awkward sizes, bit-identical results for
 * 1, 2 and 3 threads, and the op semantics (transposes, alpha/beta, C broadcast, numpy
 * matmul broadcasting and 1-D operands, integer and reduced-precision types).
 *
 * Tolerance: the SIMD kernels fuse each multiply-add, the reference rounds the product
 * and the sum separately, so an element may differ by rounding: we accept
 * |got - ref| <= 1e-5 * sum_k |a_ik * b_kj| (+1e-30), a relative bound on the terms'
 * magnitude that stays meaningful under cancellation. The scalar kernel sums in the same
 * order without fusing, so it must equal the reference exactly. The orders of ONNX Runtime
 * (K blocks, the single-row kernel) are checked against plain restatements of them. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/cpu.h"
#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/ops/gemm-internal.h"
#include "executor/threadpool.h"
#include "graph/arena.h"
#include "graph/blob.h"
#include "kernel-harness.h"
#include "graph/onnx-io.h"

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static float rng_float(uint64_t *s, float lo, float hi)
{
	return lo + (hi - lo) * (float)((rng_next(s) >> 40) * (1.0 / 16777216.0));
}

static float *random_floats(size_t n, uint64_t seed)
{
	float *v = malloc((n ? n : 1) * sizeof(float));
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++)
		v[i] = rng_float(&seed, -2, 2);
	return v;
}

/* ISAs this machine can run, lowest first. */
static int isas(enum wh_isa *out)
{
	int n = 0;
	for (int i = WH_ISA_SCALAR; i <= (int)wh_cpu()->detected; i++)
		out[n++] = (enum wh_isa)i;
	return n;
}

/* Compares C = A(MxK, strides rsa/csa) * B(KxN row-major) + bias from wh_sgemm_run at isa
 * with the reference. */
static void check_product(enum wh_isa isa, struct wh_threadpool *pool, size_t M, size_t N, size_t K,
			  bool trans_a, bool bias, uint64_t seed)
{
	float *a = random_floats(M * K, seed), *b = random_floats(K * N, seed + 1);
	float *bi = bias ? random_floats(M, seed + 2) : NULL;
	size_t mn = M * N;
	if (!mn)
		mn = 1;
	float *c = malloc(mn * sizeof(float)), *r = malloc(mn * sizeof(float));
	size_t rsa = trans_a ? 1 : K, csa = trans_a ? M : 1;
	struct wh_cpu_features cpu = wh_cpu_capped(isa);
	struct wh_sgemm_desc d = {.M = M, .N = N, .K = K, .batch = 1, .a = a, .rsa = rsa, .csa = csa,
				  .b = b, .ldb = N, .c = c, .ldc = N, .bias = bi};
	for (size_t i = 0; i < M * N; i++)
		c[i] = NAN;
	ck_assert_int_eq(wh_sgemm_run(&cpu, pool, &d), WH_OK);
	wh_sgemm_ref(M, N, K, a, rsa, csa, b, N, 1, r, N, bi);
	for (size_t i = 0; i < M; i++)
		for (size_t j = 0; j < N; j++) {
			double mag = bi ? fabs(bi[i]) : 0;
			for (size_t k = 0; k < K; k++)
				mag += fabs((double)a[i * rsa + k * csa] * b[k * N + j]);
			float got = c[i * N + j], want = r[i * N + j];
			if (isa == WH_ISA_SCALAR)
				ck_assert_msg(got == want, "scalar %zux%zux%zu at (%zu,%zu): %.9g, reference %.9g",
					      M, N, K, i, j, got, want);
			else
				ck_assert_msg(fabs((double)got - want) <= 1e-5 * mag + 1e-30,
					      "%s %zux%zux%zu%s at (%zu,%zu): %.9g, reference %.9g",
					      wh_isa_name(isa), M, N, K, trans_a ? " transA" : "", i, j, got, want);
		}
	free(a);
	free(b);
	free(bi);
	free(c);
	free(r);
}

START_TEST(kernels_match_reference)
{
	static const size_t mn[] = {1, 2, 3, 5, 6, 7, 11, 12, 13, 16, 17, 24, 31, 32, 33, 47, 64, 67, 70};
	static const size_t ks[] = {0, 1, 2, 3, 7, 16, 31, 67, 257, 530};
	enum wh_isa list[3];
	int n = isas(list);
	uint64_t seed = 1;
	for (int ii = 0; ii < n; ii++)
		for (size_t mi = 0; mi < sizeof mn / sizeof mn[0]; mi++)
			for (size_t ni = 0; ni < sizeof mn / sizeof mn[0]; ni += 2)
				for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
					/* keep the big-K cases to a few shapes */
					if (ks[ki] > 100 && (mi % 5 || ni % 4))
						continue;
					check_product(list[ii], NULL, mn[mi], mn[ni], ks[ki], (mi + ki) % 3 == 0,
						      (ni + ki) % 2 == 0, seed++);
				}
}
END_TEST

START_TEST(kernel_tails_every_width)
{
	/* every column count up to two full AVX-512 panels, every row count up to two panels */
	enum wh_isa list[3];
	int n = isas(list);
	for (int ii = 0; ii < n; ii++)
		for (size_t m = 1; m <= 25; m++)
			for (size_t nn = 1; nn <= 65; nn += (m % 3) + 1)
				check_product(list[ii], NULL, m, nn, 5 + m % 4, false, m % 2, m * 100 + nn);
}
END_TEST

/* Results for 1, 2 and 3 threads are bit-identical. */
START_TEST(threads_bit_identical)
{
	static const size_t shapes[][3] = {{480, 240, 480}, {24, 25600 / 8, 864}, {67, 301, 129}, {1, 999, 77}, {200, 7, 300}};
	struct wh_threadpool *p2, *p3;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &p3), WH_OK);
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
		float *a = random_floats(M * K, s * 3), *b = random_floats(K * N, s * 3 + 1);
		float *c[3];
		struct wh_threadpool *pools[3] = {NULL, p2, p3};
		const struct wh_cpu_features *cpu = wh_cpu();
		for (int t = 0; t < 3; t++) {
			c[t] = malloc(M * N * sizeof(float));
			struct wh_sgemm_desc d = {.M = M, .N = N, .K = K, .batch = 1, .a = a, .rsa = K, .csa = 1,
						  .b = b, .ldb = N, .c = c[t], .ldc = N};
			ck_assert_int_eq(wh_sgemm_run(cpu, pools[t], &d), WH_OK);
		}
		ck_assert_msg(!memcmp(c[0], c[1], M * N * sizeof(float)), "%zux%zux%zu: 1 and 2 threads differ", M, N, K);
		ck_assert_msg(!memcmp(c[0], c[2], M * N * sizeof(float)), "%zux%zux%zu: 1 and 3 threads differ", M, N, K);
		for (int t = 0; t < 3; t++)
			free(c[t]);
		free(a);
		free(b);
	}
	wh_threadpool_destroy(p2);
	wh_threadpool_destroy(p3);
}
END_TEST

/* ---- B packed once (wh_sgemm_pack_b, gemm-pack.c) ---- */

/* A B read from its packed panels gives the bits of the same B read by rows, for every
 * kernel, B given as is or transposed (Gemm's transB), tails of every panel width, M = 1
 * (the GEMV of a classifier) and 1, 2 and 3 threads; the scalar kernel equals the
 * reference. */
START_TEST(packed_b_bit_identical)
{
	static const size_t shapes[][3] = {{1, 1000, 576}, {1, 7, 3}, {5, 33, 17}, {13, 64, 300}, {32, 100, 257},
					   {25, 1, 40}, {1, 45, 1}, {67, 301, 129}};
	enum wh_isa list[3];
	int n = isas(list);
	struct wh_threadpool *pools[3] = {NULL, NULL, NULL};
	ck_assert_int_eq(wh_threadpool_create(2, &pools[1]), WH_OK);
	ck_assert_int_eq(wh_threadpool_create(3, &pools[2]), WH_OK);
	for (int ii = 0; ii < n; ii++)
		for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
			for (int tb = 0; tb < 2; tb++) {
				size_t M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
				float *a = random_floats(M * K, 10 * s + 1), *b = random_floats(K * N, 10 * s + 2);
				float *bias = random_floats(M, 10 * s + 3);
				/* b is K x N row-major; bt the same matrix stored transposed (N x K) */
				float *bt = malloc(K * N * sizeof(float));
				for (size_t k = 0; k < K; k++)
					for (size_t j = 0; j < N; j++)
						bt[j * K + k] = b[k * N + j];
				struct wh_cpu_features cpu = wh_cpu_capped(list[ii]);
				struct wh_sgemm_kernel kern;
				wh_sgemm_kernel_get(cpu.isa, &kern);
				size_t nf = wh_sgemm_pack_b_floats(kern.nr, K, N);
				ck_assert_uint_eq(nf % (kern.nr * K), 0);
				ck_assert_uint_ge(nf, K * N);
				float *bp = malloc(nf * sizeof(float));
				for (size_t i = 0; i < nf; i++)
					bp[i] = NAN; /* every float must be written, padding included */
				wh_sgemm_pack_b(kern.nr, pools[s % 3], K, N, tb ? bt : b, tb ? 1 : N, tb ? K : 1, bp);
				for (size_t i = 0; i < nf; i++)
					ck_assert_msg(!isnan(bp[i]), "pack %zux%zu tb=%d: float %zu not written", K, N, tb, i);
				float *want = malloc(M * N * sizeof(float)), *got = malloc(M * N * sizeof(float));
				struct wh_sgemm_desc d = {.M = M, .N = N, .K = K, .batch = 1, .a = a, .rsa = K, .csa = 1,
							  .b = b, .ldb = N, .c = want, .ldc = N, .bias = s % 2 ? bias : NULL};
				ck_assert_int_eq(wh_sgemm_run(&cpu, NULL, &d), WH_OK);
				if (cpu.isa == WH_ISA_SCALAR) {
					wh_sgemm_ref(M, N, K, a, K, 1, b, N, 1, got, N, d.bias);
					ck_assert(!memcmp(got, want, M * N * sizeof(float)));
				}
				d.b = NULL; /* never read */
				d.bpack = bp;
				d.bpack_nr = kern.nr;
				for (int t = 0; t < 3; t++) {
					d.c = got;
					memset(got, 0xff, M * N * sizeof(float));
					ck_assert_int_eq(wh_sgemm_run(&cpu, pools[t], &d), WH_OK);
					ck_assert_msg(!memcmp(got, want, M * N * sizeof(float)),
						      "%s %zux%zux%zu tb=%d, %d threads: packed B differs from B",
						      wh_isa_name(cpu.isa), M, N, K, tb, t + 1);
				}
				/* a B packed for another panel width is refused, not misread */
				d.bpack_nr = kern.nr + 1;
				ck_assert_int_eq(wh_sgemm_run(&cpu, NULL, &d), WH_ERR_INTERNAL);
				free(a);
				free(b);
				free(bt);
				free(bias);
				free(bp);
				free(want);
				free(got);
			}
	wh_threadpool_destroy(pools[1]);
	wh_threadpool_destroy(pools[2]);
}
END_TEST

/* ---- ONNX Runtime's orders (wh_sgemm_block_kb, the single-row kernel) ---- */

/* MLAS's K blocks: one chain up to K = 128; wide N: blocks of 128; narrow N trades columns
 * for longer blocks, never below 16 columns. */
START_TEST(ort_kblock_rule)
{
	ck_assert_uint_eq(wh_sgemm_ort_kblock(128, 1), 0);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(27, 3840), 0);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(240, 960), 128);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(480, 480), 128);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(480, 100), 128);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(480, 64), 256);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(1440, 40), 256);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(1440, 32), 512);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(2880, 16), 1024);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(2880, 1), 1024);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(300, 40), 256);
	ck_assert_uint_eq(wh_sgemm_ort_kblock(300, 20), 0); /* one block of 512 covers K */
}
END_TEST

/* K blocks summed separately then added (ADD_C), through every micro-kernel: the scalar
 * one equals a plain-loop restatement exactly, the fused ones are within rounding. */
START_TEST(block_kb_matches_reference)
{
	static const size_t cases[][4] = {{5, 37, 300, 128}, {13, 70, 257, 128}, {1, 9, 600, 256}, {7, 33, 129, 128},
					  {12, 32, 1030, 512}, {3, 17, 140, 0}};
	enum wh_isa list[3];
	int n = isas(list);
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		size_t M = cases[ci][0], N = cases[ci][1], K = cases[ci][2], kb = cases[ci][3];
		float *a = random_floats(M * K, ci * 5), *b = random_floats(K * N, ci * 5 + 1);
		float *bias = random_floats(M, ci * 5 + 2);
		float *want = malloc(M * N * sizeof(float)), *got = malloc(M * N * sizeof(float));
		float *apack = malloc(M * K * sizeof(float));
		ptrdiff_t *boff = malloc(K * sizeof(ptrdiff_t));
		for (size_t k = 0; k < K; k++)
			boff[k] = (ptrdiff_t)(k * N);
		for (size_t i = 0; i < M; i++)
			for (size_t j = 0; j < N; j++) {
				size_t blk = kb ? kb : K;
				float acc = 0;
				for (size_t k0 = 0; k0 < K; k0 += blk) {
					float part = 0;
					for (size_t k = k0; k < K && k < k0 + blk; k++)
						part += a[i * K + k] * b[k * N + j];
					acc = k0 ? part + acc : part;
				}
				want[i * N + j] = acc + bias[i];
			}
		for (int ii = 0; ii < n; ii++) {
			struct wh_sgemm_kernel kern;
			wh_sgemm_kernel_get(list[ii], &kern);
			wh_sgemm_pack_a(&kern, M, K, a, K, 1, apack);
			for (size_t i = 0; i < M * N; i++)
				got[i] = NAN;
			wh_sgemm_block_kb(&kern, M, N, K, kb, apack, b, boff, got, N, bias);
			for (size_t i = 0; i < M; i++)
				for (size_t j = 0; j < N; j++) {
					double mag = fabs(bias[i]);
					for (size_t k = 0; k < K; k++)
						mag += fabs((double)a[i * K + k] * b[k * N + j]);
					float g = got[i * N + j], w = want[i * N + j];
					if (list[ii] == WH_ISA_SCALAR)
						ck_assert_msg(g == w, "scalar %zux%zux%zu kb %zu at (%zu,%zu): %.9g, want %.9g", M,
							      N, K, kb, i, j, g, w);
					else
						ck_assert_msg(fabs((double)g - w) <= 1e-5 * mag, "%s %zux%zux%zu kb %zu at (%zu,%zu)",
							      wh_isa_name(list[ii]), M, N, K, kb, i, j);
				}
		}
		free(a);
		free(b);
		free(bias);
		free(want);
		free(got);
		free(apack);
		free(boff);
	}
}
END_TEST

/* The single-row kernel: no fused multiply-add, so every variant gives the reference's bits
 * (row offsets with gaps, every column tail, K with every remainder mod 4), and the order
 * is MLAS's: groups of 4 summed before they meet the running sum. */
START_TEST(m1_variants_bit_identical)
{
	enum wh_isa list[3];
	int n = isas(list);
	size_t kmax = 140, nmax = 75, stride = 80;
	float *a = random_floats(kmax, 11), *b = random_floats(kmax * stride, 12);
	float *want = malloc(nmax * sizeof(float)), *got = malloc(nmax * sizeof(float));
	ptrdiff_t *boff = malloc(kmax * sizeof(ptrdiff_t));
	for (size_t k = 0; k < kmax; k++)
		boff[k] = (ptrdiff_t)(k * stride + (k % 3));
	float bias = 0.375f;
	for (size_t K = 1; K <= kmax; K += K < 20 ? 1 : 29)
		for (size_t nn = 1; nn <= nmax; nn += nn < 40 ? 1 : 7)
			for (int wb = 0; wb < 2; wb++) {
				wh_sgemm_m1_ref(nn, K, a, b, boff, want, wb ? &bias : NULL);
				for (int ii = 0; ii < n; ii++) {
					struct wh_sgemm_kernel kern;
					wh_sgemm_kernel_get(list[ii], &kern);
					for (size_t j = 0; j < nn; j++)
						got[j] = NAN;
					kern.m1(nn, K, a, b, boff, got, wb ? &bias : NULL);
					ck_assert_msg(!memcmp(got, want, nn * sizeof(float)), "%s m1 n=%zu K=%zu bias %d differs",
						      wh_isa_name(list[ii]), nn, K, wb);
				}
			}
	/* 1e8 then four groups of 2s: the group (8) survives, 2s added one by one would not */
	float a8[8] = {1, 1, 1, 1, 1, 1, 1, 1}, b8[8] = {1e8f, 0, 0, 0, 2, 2, 2, 2}, c8;
	ptrdiff_t o8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	wh_sgemm_m1_ref(1, 8, a8, b8, o8, &c8, NULL);
	ck_assert_float_eq(c8, 1e8f + 8.0f);
	free(a);
	free(b);
	free(want);
	free(got);
	free(boff);
}
END_TEST

/* ---- ops through one-node models ---- */

struct attr_spec {
	const char *name;
	enum wh_attr_type type;
	int64_t i;
	float f;
};

#define A_INT(nm, v) {nm, WH_ATTR_INT, v, 0}
#define A_FLOAT(nm, v) {nm, WH_ATTR_FLOAT, 0, v}

static void tensor_new(struct wh_tensor *t, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	wh_tensor_init(t);
	ck_assert_int_eq(wh_tensor_alloc(t, dt, rank, dims), WH_OK);
}

static void tensor_random(struct wh_tensor *t, int32_t rank, const int64_t *dims, uint64_t seed)
{
	tensor_new(t, WH_DT_FLOAT, rank, dims);
	for (uint64_t i = 0; i < t->count; i++)
		((float *)t->data)[i] = rng_float(&seed, -2, 2);
}

static enum wh_status run_op(const char *op, int64_t opset, uint32_t n_in, const struct wh_tensor *const *ins,
			     const struct attr_spec *attrs, uint32_t n_attrs, int threads, struct wh_tensor *out)
{
	struct wh_model *m;
	ck_assert_int_eq(wh_model_create(&m), WH_OK);
	m->n_opsets = 1;
	m->opsets = wh_arena_calloc(m->arena, 1, sizeof *m->opsets);
	m->opsets[0].domain = "";
	m->opsets[0].version = opset;
	struct wh_graph *g = m->graph;
	uint32_t in_ids[16], out_id, id;
	struct wh_tensor_set set, res;
	wh_tensor_set_init(&set);
	wh_tensor_set_init(&res);
	char name[16];
	for (uint32_t i = 0; i < n_in; i++) {
		if (!ins[i]) {
			in_ids[i] = WH_NONE;
			continue;
		}
		snprintf(name, sizeof name, "in%u", i);
		ck_assert_int_eq(wh_graph_add_value(g, name, &in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_graph_set_shape(g, in_ids[i], ins[i]->dtype, ins[i]->rank, ins[i]->dims), WH_OK);
		g->values[in_ids[i]].flags |= WH_VALUE_HAS_INFO;
		ck_assert_int_eq(wh_graph_add_input(g, in_ids[i]), WH_OK);
		ck_assert_int_eq(wh_tensor_set_add(&set, name, -1, ins[i]), WH_OK);
	}
	ck_assert_int_eq(wh_graph_add_value(g, "out", &out_id), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", "node", n_in, in_ids, 1, &out_id, &id), WH_OK);
	ck_assert_int_eq(wh_graph_add_output(g, out_id), WH_OK);
	struct wh_node *nd = &g->nodes[id];
	nd->n_attrs = n_attrs;
	nd->attrs = n_attrs ? wh_arena_calloc(m->arena, n_attrs, sizeof *nd->attrs) : NULL;
	for (uint32_t i = 0; i < n_attrs; i++) {
		nd->attrs[i].name = attrs[i].name;
		nd->attrs[i].type = attrs[i].type;
		nd->attrs[i].i = attrs[i].i;
		nd->attrs[i].f = attrs[i].f;
	}
	struct wh_engine *e;
	struct wh_engine_options opt = {.threads = threads};
	ck_assert_int_eq(wh_engine_create(m, &opt, &e), WH_OK);
	enum wh_status st = wh_engine_run(e, &set, WH_KEEP_OUTPUTS, &res);
	if (st == WH_OK) {
		const struct wh_tensor *t = wh_tensor_set_find(&res, "out");
		ck_assert_ptr_nonnull(t);
		wh_tensor_init(out);
		wh_tensor_ref(out, t);
	}
	wh_tensor_set_release(&res);
	wh_tensor_set_release(&set);
	wh_engine_destroy(e);
	wh_model_destroy(m);
	return st;
}

static void assert_dims(const struct wh_tensor *t, int32_t rank, const int64_t *dims)
{
	ck_assert_int_eq(t->rank, rank);
	for (int32_t i = 0; i < rank; i++)
		ck_assert_int_eq(t->dims[i], dims[i]);
}

START_TEST(gemm_attributes)
{
	/* Y = alpha * A' B' + beta * C for every transpose combination and C shape */
	const int64_t M = 5, N = 7, K = 9;
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int cs = 0; cs < 5; cs++) {
				int64_t ad[2] = {ta ? K : M, ta ? M : K}, bd[2] = {tb ? N : K, tb ? K : N};
				int64_t cdims[5][2] = {{0, 0}, {M, N}, {1, N}, {M, 1}, {1, 1}};
				int32_t crank = cs == 0 ? 0 : cs == 2 ? 1 : 2;
				int64_t cd1[1] = {N};
				struct wh_tensor a, b, c, y;
				tensor_random(&a, 2, ad, 10 + ta);
				tensor_random(&b, 2, bd, 20 + tb);
				if (cs)
					tensor_random(&c, crank, cs == 2 ? cd1 : cdims[cs], 30 + cs);
				const struct wh_tensor *ins[3] = {&a, &b, cs ? &c : NULL};
				struct attr_spec at[] = {A_INT("transA", ta), A_INT("transB", tb), A_FLOAT("alpha", 0.5f),
							 A_FLOAT("beta", -1.5f)};
				ck_assert_int_eq(run_op("Gemm", 13, 3, ins, at, 4, 2, &y), WH_OK);
				int64_t yd[2] = {M, N};
				assert_dims(&y, 2, yd);
				const float *av = a.data, *bv = b.data, *yv = y.data;
				for (int64_t i = 0; i < M; i++)
					for (int64_t j = 0; j < N; j++) {
						double s = 0, mag = 0;
						for (int64_t k = 0; k < K; k++) {
							double p = (double)av[ta ? k * M + i : i * K + k] * bv[tb ? j * K + k : k * N + j];
							s += p;
							mag += fabs(p);
						}
						double want = 0.5 * s;
						if (cs) {
							const float *cv = c.data;
							int64_t ci = cs == 1 ? i * N + j : cs == 2 ? j : cs == 3 ? i : 0;
							want += -1.5 * cv[ci];
						}
						ck_assert_msg(fabs(yv[i * N + j] - want) <= 1e-5 * (mag + 4),
							      "transA=%d transB=%d C#%d (%lld,%lld): %g, expected %g", ta, tb, cs,
							      (long long)i, (long long)j, yv[i * N + j], want);
					}
				wh_tensor_release(&a);
				wh_tensor_release(&b);
				if (cs)
					wh_tensor_release(&c);
				wh_tensor_release(&y);
			}
}
END_TEST

START_TEST(gemm_bad_shapes_fail)
{
	int64_t ad[2] = {3, 4}, bd[2] = {5, 6}, cd[2] = {2, 6};
	struct wh_tensor a, b, c, y;
	tensor_random(&a, 2, ad, 1);
	tensor_random(&b, 2, bd, 2);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_op("Gemm", 13, 2, ins, NULL, 0, 1, &y), WH_ERR_SHAPE);
	int64_t bd2[2] = {4, 6};
	wh_tensor_release(&b);
	tensor_random(&b, 2, bd2, 2);
	tensor_random(&c, 2, cd, 3);
	const struct wh_tensor *ins3[3] = {&a, &b, &c};
	/* C of 2x6 does not broadcast to 3x6 */
	ck_assert_int_eq(run_op("Gemm", 13, 3, ins3, NULL, 0, 1, &y), WH_ERR_SHAPE);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&c);
}
END_TEST

/* MatMul of shapes a x b against a double-precision numpy-matmul reference. */
static void check_matmul(int32_t ra, const int64_t *da, int32_t rb, const int64_t *db, int32_t ry,
			 const int64_t *dy, int threads)
{
	struct wh_tensor a, b, y;
	tensor_random(&a, ra, da, 5);
	tensor_random(&b, rb, db, 6);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, threads, &y), WH_OK);
	assert_dims(&y, ry, dy);
	/* promote to >= 2-d with batch dims, as numpy does */
	int64_t K = da[ra - 1], M = ra >= 2 ? da[ra - 2] : 1, N = rb >= 2 ? db[rb - 1] : 1;
	int32_t bra = ra > 2 ? ra - 2 : 0, brb = rb > 2 ? rb - 2 : 0, br = bra > brb ? bra : brb;
	int64_t bdims[8], batch = 1;
	for (int32_t d = 0; d < br; d++) {
		int64_t x = d - (br - bra) >= 0 ? da[d - (br - bra)] : 1, z = d - (br - brb) >= 0 ? db[d - (br - brb)] : 1;
		bdims[d] = x > z ? x : z;
		batch *= bdims[d];
	}
	const float *av = a.data, *bv = b.data, *yv = y.data;
	for (int64_t t = 0; t < batch; t++) {
		int64_t rem = t, oa = 0, ob = 0, sa = 1, sb = 1;
		for (int32_t d = br - 1; d >= 0; d--) {
			int64_t i = rem % bdims[d];
			rem /= bdims[d];
			int64_t x = d - (br - bra) >= 0 ? da[d - (br - bra)] : 1, z = d - (br - brb) >= 0 ? db[d - (br - brb)] : 1;
			oa += (x == 1 ? 0 : i) * sa;
			ob += (z == 1 ? 0 : i) * sb;
			sa *= x;
			sb *= z;
		}
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				double s = 0, mag = 0;
				for (int64_t k = 0; k < K; k++) {
					double p = (double)av[oa * M * K + i * K + k] * bv[ob * K * N + k * N + j];
					s += p;
					mag += fabs(p);
				}
				float got = yv[t * M * N + i * N + j];
				ck_assert_msg(fabs(got - s) <= 1e-5 * mag + 1e-30, "batch %lld (%lld,%lld): %g, expected %g",
					      (long long)t, (long long)i, (long long)j, got, s);
			}
	}
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&y);
}

START_TEST(matmul_numpy_semantics)
{
	{ int64_t a[1] = {7}, b[1] = {7}; check_matmul(1, a, 1, b, 0, NULL, 1); }
	{ int64_t a[1] = {7}, b[3] = {2, 7, 5}, y[2] = {2, 5}; check_matmul(1, a, 3, b, 2, y, 2); }
	{ int64_t a[4] = {2, 3, 4, 7}, b[1] = {7}, y[3] = {2, 3, 4}; check_matmul(4, a, 1, b, 3, y, 2); }
	{ int64_t a[3] = {3, 5, 7}, b[2] = {7, 9}, y[3] = {3, 5, 9}; check_matmul(3, a, 2, b, 3, y, 2); }
	{ int64_t a[4] = {2, 1, 5, 7}, b[3] = {3, 7, 9}, y[4] = {2, 3, 5, 9}; check_matmul(4, a, 3, b, 4, y, 2); }
	{ int64_t a[2] = {33, 70}, b[4] = {2, 2, 70, 17}, y[4] = {2, 2, 33, 17}; check_matmul(2, a, 4, b, 4, y, 2); }
	{ int64_t a[3] = {8, 40, 15}, b[3] = {8, 15, 40}, y[3] = {8, 40, 40}; check_matmul(3, a, 3, b, 3, y, 2); }
	{ int64_t a[2] = {0, 7}, b[2] = {7, 3}, y[2] = {0, 3}; check_matmul(2, a, 2, b, 2, y, 1); }
	{ int64_t a[2] = {4, 0}, b[2] = {0, 3}, y[2] = {4, 3}; check_matmul(2, a, 2, b, 2, y, 1); }
}
END_TEST

START_TEST(matmul_mismatch_fails)
{
	int64_t da[2] = {3, 4}, db[2] = {5, 6};
	struct wh_tensor a, b, y;
	tensor_random(&a, 2, da, 1);
	tensor_random(&b, 2, db, 2);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 1, &y), WH_ERR_SHAPE);
	int64_t da3[3] = {2, 3, 5}, db3[3] = {3, 5, 6};
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	tensor_random(&a, 3, da3, 1);
	tensor_random(&b, 3, db3, 2);
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 1, &y), WH_ERR_SHAPE);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
}
END_TEST

START_TEST(matmul_int_and_half_types)
{
	/* int32 wraps modulo 2^32; int64 exact; float16 goes through float32 */
	int64_t da[2] = {2, 3}, db[2] = {3, 2};
	struct wh_tensor a, b, y;
	tensor_new(&a, WH_DT_INT32, 2, da);
	tensor_new(&b, WH_DT_INT32, 2, db);
	int32_t av[6] = {65536, 2, -3, 4, 5, 6}, bv[6] = {65536, 1, 1, 1, 7, -1};
	memcpy(a.data, av, sizeof av);
	memcpy(b.data, bv, sizeof bv);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 1, &y), WH_OK);
	ck_assert_int_eq(y.dtype, WH_DT_INT32);
	const int32_t *yv = y.data;
	/* 65536*65536 wraps to 0: 0 + 2*1 + -3*7 = -19 */
	ck_assert_int_eq(yv[0], -19);
	ck_assert_int_eq(yv[1], 65536 + 2 + 3);
	ck_assert_int_eq(yv[2], 4 * 65536 + 5 + 42);
	ck_assert_int_eq(yv[3], 4 + 5 - 6);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&y);

	tensor_new(&a, WH_DT_FLOAT16, 2, da);
	tensor_new(&b, WH_DT_FLOAT16, 2, db);
	float fa[6] = {1, 2, 3, 4, 5, 6}, fb[6] = {0.5f, -1, 2, 0.25f, 1, 1};
	for (int i = 0; i < 6; i++) {
		((uint16_t *)a.data)[i] = wh_f32_to_f16(fa[i]);
		((uint16_t *)b.data)[i] = wh_f32_to_f16(fb[i]);
	}
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 1, &y), WH_OK);
	ck_assert_int_eq(y.dtype, WH_DT_FLOAT16);
	const uint16_t *hv = y.data;
	ck_assert_float_eq(wh_f16_to_f32(hv[0]), 0.5f + 4 + 3);
	ck_assert_float_eq(wh_f16_to_f32(hv[3]), -4 + 1.25f + 6);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&y);
}
END_TEST

START_TEST(matmul_integer_zero_points)
{
	int64_t da[2] = {2, 3}, db[2] = {3, 2}, dz[1] = {2};
	struct wh_tensor a, b, az, bz, y;
	tensor_new(&a, WH_DT_UINT8, 2, da);
	tensor_new(&b, WH_DT_INT8, 2, db);
	tensor_new(&az, WH_DT_UINT8, 1, dz); /* per row of A */
	tensor_new(&bz, WH_DT_INT8, 0, NULL);
	uint8_t av[6] = {255, 0, 10, 1, 2, 3};
	int8_t bv[6] = {-128, 127, 1, 2, 3, 4};
	memcpy(a.data, av, 6);
	memcpy(b.data, bv, 6);
	((uint8_t *)az.data)[0] = 10;
	((uint8_t *)az.data)[1] = 1;
	((int8_t *)bz.data)[0] = -1;
	const struct wh_tensor *ins[4] = {&a, &b, &az, &bz};
	ck_assert_int_eq(run_op("MatMulInteger", 10, 4, ins, NULL, 0, 1, &y), WH_OK);
	ck_assert_int_eq(y.dtype, WH_DT_INT32);
	const int32_t *yv = y.data;
	/* row 0: a - 10 = {245, -10, 0}; b + 1 = {{-127, 128}, {2, 3}, {4, 5}} */
	ck_assert_int_eq(yv[0], 245 * -127 + -10 * 2);
	ck_assert_int_eq(yv[1], 245 * 128 + -10 * 3);
	/* row 1: a - 1 = {0, 1, 2} */
	ck_assert_int_eq(yv[2], 2 + 8);
	ck_assert_int_eq(yv[3], 3 + 10);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&az);
	wh_tensor_release(&bz);
	wh_tensor_release(&y);
}
END_TEST

START_TEST(matmul_threads_bit_identical)
{
	int64_t da[3] = {3, 130, 97}, db[2] = {97, 201};
	struct wh_tensor a, b, y1, y2;
	tensor_random(&a, 3, da, 11);
	tensor_random(&b, 2, db, 12);
	const struct wh_tensor *ins[2] = {&a, &b};
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 1, &y1), WH_OK);
	ck_assert_int_eq(run_op("MatMul", 13, 2, ins, NULL, 0, 2, &y2), WH_OK);
	ck_assert_uint_eq(y1.count, y2.count);
	ck_assert(!memcmp(y1.data, y2.data, y1.count * sizeof(float)));
	wh_tensor_release(&a);
	wh_tensor_release(&b);
	wh_tensor_release(&y1);
	wh_tensor_release(&y2);
}
END_TEST

/* A one-node MatMul or Gemm (transB) whose B is an initializer with the bytes of blob. */
struct const_b_node {
	struct wh_model *m;
	struct wh_node *node;
	struct wh_tensor a, b, y;
	const struct wh_tensor *ins[2];
	bool wanted;
	struct wh_kernel_ctx ctx;
};

static void const_b_node_init(struct const_b_node *x, const char *op, int64_t M, int64_t K, int64_t N, bool tb,
			      struct wh_blob *blob)
{
	memset(x, 0, sizeof *x);
	ck_assert_int_eq(wh_model_create(&x->m), WH_OK);
	struct wh_graph *g = x->m->graph;
	uint32_t ids[2], out, nid;
	ck_assert_int_eq(wh_graph_add_value(g, "a", &ids[0]), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "w", &ids[1]), WH_OK);
	ck_assert_int_eq(wh_graph_add_value(g, "y", &out), WH_OK);
	int64_t bd[2] = {tb ? N : K, tb ? K : N}, ad[2] = {M, K};
	ck_assert_int_eq(wh_graph_set_initializer(g, ids[1], WH_DT_FLOAT, 2, bd, blob), WH_OK);
	ck_assert_int_eq(wh_graph_add_node(g, op, "", "node", 2, ids, 1, &out, &nid), WH_OK);
	x->node = &g->nodes[nid];
	if (tb) {
		x->node->n_attrs = 1;
		x->node->attrs = wh_arena_calloc(x->m->arena, 1, sizeof *x->node->attrs);
		x->node->attrs[0] = (struct wh_attr){.name = "transB", .type = WH_ATTR_INT, .i = 1};
	}
	tensor_random(&x->a, 2, ad, (uint64_t)(M * 7 + N));
	/* B read as the runtime reads an initializer: a tensor sharing the value's blob */
	wh_tensor_init(&x->b);
	ck_assert_int_eq(wh_tensor_from_raw(&x->b, WH_DT_FLOAT, 2, bd, g->values[ids[1]].data), WH_OK);
	x->ins[0] = &x->a;
	x->ins[1] = &x->b;
	x->wanted = true;
	x->ctx = (struct wh_kernel_ctx){.model = x->m, .graph = g, .node = x->node, .opset = 13, .n_inputs = 2,
					.inputs = x->ins, .n_outputs = 1, .outputs = &x->y, .output_wanted = &x->wanted,
					.cpu = wh_cpu()};
}

static void const_b_node_release(struct const_b_node *x)
{
	wh_tensor_release(&x->a);
	wh_tensor_release(&x->b);
	wh_model_destroy(x->m);
}

/* Runs the node's default kernel; returns its output (caller frees). */
static float *const_b_run(struct const_b_node *x)
{
	const struct wh_op_def *op = wh_op_lookup("", x->node->op_type, 13);
	wh_tensor_init(&x->y);
	ck_assert_msg(op->run(&x->ctx) == WH_OK, "%s", wh_error_message());
	float *r = malloc(x->y.count * sizeof(float));
	memcpy(r, x->y.data, x->y.count * sizeof(float));
	wh_tensor_release(&x->y);
	return r;
}

/* B from blob (a K x N matrix, or N x K with tb) in a MatMul or Gemm: the first run reads B
 * as it is, the second packs it (the cache then holds pack_bytes), every later run reads the
 * copy; the bits never change, for any thread count, and equal those of an engine without
 * a cache. */
static void check_const_b(const char *op, int64_t M, int64_t K, int64_t N, bool tb, struct wh_blob *blob,
			  int64_t dup_budget, bool expect_packed)
{
	struct const_b_node x;
	const_b_node_init(&x, op, M, K, N, tb, blob);
	float *want = const_b_run(&x); /* no cache: B as it is */
	size_t bytes = (size_t)(M * N) * sizeof(float);
	struct wh_threadpool *p2;
	ck_assert_int_eq(wh_threadpool_create(2, &p2), WH_OK);
	for (int threads = 1; threads <= 2; threads++) {
		struct wh_gemm_packs *packs;
		ck_assert_int_eq(wh_gemm_packs_create(dup_budget, &packs), WH_OK);
		x.ctx.packs = packs;
		x.ctx.pool = threads == 2 ? p2 : NULL;
		for (int run = 0; run < 4; run++) {
			float *got = const_b_run(&x);
			ck_assert_msg(!memcmp(got, want, bytes), "%s %lldx%lldx%lld tb=%d, %d threads, run %d: bits differ",
				      op, (long long)M, (long long)K, (long long)N, tb, threads, run + 1);
			free(got);
			size_t held = wh_gemm_packs_bytes(packs);
			if (run == 0 || !expect_packed)
				ck_assert_uint_eq(held, 0);
			else
				ck_assert_uint_ge(held, (size_t)(K * N) * sizeof(float));
		}
		x.ctx.packs = NULL;
		wh_gemm_packs_destroy(packs);
	}
	/* the scalar kernel packs for its own panel width and still equals the reference */
	float *ref = malloc(bytes);
	const float *bv = x.b.data;
	wh_sgemm_ref((size_t)M, (size_t)N, (size_t)K, x.a.data, (size_t)K, 1, bv, tb ? 1 : (size_t)N, tb ? (size_t)K : 1,
		     ref, (size_t)N, NULL);
	struct wh_cpu_features scalar = wh_cpu_capped(WH_ISA_SCALAR);
	struct wh_gemm_packs *packs;
	ck_assert_int_eq(wh_gemm_packs_create(dup_budget, &packs), WH_OK);
	x.ctx.packs = packs;
	x.ctx.cpu = &scalar;
	for (int run = 0; run < 3; run++) {
		float *got = const_b_run(&x);
		ck_assert_msg(!memcmp(got, ref, bytes), "%s scalar run %d differs from the reference", op, run + 1);
		free(got);
	}
	wh_gemm_packs_destroy(packs);
	free(ref);
	free(want);
	wh_threadpool_destroy(p2);
	const_b_node_release(&x);
}

static struct wh_blob *random_blob(size_t n, uint64_t seed)
{
	struct wh_blob *b;
	void *w;
	ck_assert_int_eq(wh_blob_create(n * sizeof(float), &b, &w), WH_OK);
	float *f = random_floats(n, seed);
	memcpy(w, f, n * sizeof(float));
	free(f);
	return b;
}

START_TEST(constant_b_packed_once)
{
	/* a classifier's GEMV (M = 1, transB), a decoder's projection, tails */
	static const int64_t shapes[][3] = {{1, 576, 1000}, {32, 256, 160}, {7, 33, 45}, {1, 3, 1}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int o = 0; o < 3; o++) {
			int64_t M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
			struct wh_blob *blob = random_blob((size_t)(K * N), 100 + s);
			check_const_b(o == 0 ? "MatMul" : "Gemm", M, K, N, o == 2, blob, 0, true);
			wh_blob_release(blob);
		}
	/* weight_cache_bytes < 0 keeps no copies of in-memory weights: never packed, same bits */
	struct wh_blob *blob = random_blob(64 * 48, 7);
	check_const_b("MatMul", 9, 64, 48, false, blob, -1, false);
	/* a budget smaller than the copy: not packed */
	check_const_b("Gemm", 9, 64, 48, true, blob, 1000, false);
	wh_blob_release(blob);
}
END_TEST

/* A weight mapped from a file is packed in slices, its pages dropped as it goes (several
 * slices of 8 MiB here); reading it again (the unpacked run of another cache) faults them
 * back with the same bytes. */
START_TEST(constant_b_mapped_packed_once)
{
	char dir[] = "/tmp/check-gemm.XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/w.bin", dir);
	const int64_t K = 1200, N = 2100; /* 10 MB */
	float *w = random_floats((size_t)(K * N), 77);
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(w, sizeof(float), (size_t)(K * N), f), (size_t)(K * N));
	ck_assert_int_eq(fclose(f), 0);
	free(w);
	struct wh_blob_file *bf;
	struct wh_blob *blob;
	ck_assert_int_eq(wh_blob_file_open(path, "w.bin", &bf), WH_OK);
	ck_assert_int_eq(wh_blob_create_view(bf, 0, (size_t)(K * N) * sizeof(float), &blob), WH_OK);
	ck_assert(wh_blob_is_mapped(blob));
	check_const_b("MatMul", 3, K, N, false, blob, -1, true); /* the in-memory budget does not apply */
	check_const_b("Gemm", 2, N, K, true, blob, -1, true);
	wh_blob_release(blob);
	wh_blob_file_release(bf);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Every eligible Gemm / MatMul tactic runs and matches the reference; the scalar ones
 * bit for bit (same order, no fused multiply-add). */
START_TEST(tactics_run_and_match)
{
	const int64_t M = 13, K = 37, N = 45;
	int64_t ad[2] = {M, K}, bd[2] = {K, N};
	struct wh_tensor a, b, y;
	tensor_random(&a, 2, ad, 50);
	tensor_random(&b, 2, bd, 51);
	float *ref = malloc((size_t)(M * N) * sizeof(float));
	wh_sgemm_ref((size_t)M, (size_t)N, (size_t)K, a.data, (size_t)K, 1, b.data, (size_t)N, 1, ref, (size_t)N, NULL);
	const char *ops[2] = {"Gemm", "MatMul"};
	for (int o = 0; o < 2; o++) {
		const struct wh_op_def *op = wh_op_lookup("", ops[o], 13);
		ck_assert_ptr_nonnull(op);
		ck_assert_uint_ge(op->n_tactics, 3);
		struct wh_node node = {.name = "n", .op_type = op->op_type, .domain = ""};
		const struct wh_tensor *ins[2] = {&a, &b};
		bool wanted = true;
		struct wh_kernel_ctx ctx = {.node = &node, .opset = 13, .n_inputs = 2, .inputs = ins, .n_outputs = 1,
					    .outputs = &y, .output_wanted = &wanted, .cpu = wh_cpu()};
		int ran = 0;
		for (uint32_t t = 0; t < op->n_tactics; t++) {
			const struct wh_tactic *tc = &op->tactics[t];
			ctx.tactic = tc;
			if (tc->eligible && !tc->eligible(&ctx))
				continue;
			wh_tensor_init(&y);
			ck_assert_msg(tc->run(&ctx) == WH_OK, "tactic %s: %s", tc->name, wh_error_message());
			ck_assert_uint_eq(y.count, (uint64_t)(M * N));
			const float *yv = y.data;
			/* the original scalar kernels follow the reference exactly; the extra tactics
			 * (ids from 1000, executor/ops/tactics-extra.h) have their own orders */
			bool scalar = strstr(tc->name, "scalar") != NULL && tc->id < 1000;
			for (int64_t i = 0; i < M * N; i++)
				ck_assert_msg(scalar ? yv[i] == ref[i] : fabsf(yv[i] - ref[i]) <= 1e-4f,
					      "tactic %s: y[%lld] = %.9g, reference %.9g", tc->name, (long long)i, yv[i], ref[i]);
			wh_tensor_release(&y);
			ran++;
		}
		ck_assert_int_ge(ran, 1);
	}
	free(ref);
	wh_tensor_release(&a);
	wh_tensor_release(&b);
}
END_TEST

/* wh_sgemm_kernel_for's tiles: the 8 x 48 AVX-512 tile gives every element the bits of
 * the 12 x 32 one (the same chain of fused multiply-adds) through every row and column
 * tail, K slices and MLAS's K blocks with the bias, and is chosen only where the 12-row
 * tile would end on a panel of 4 rows or fewer. */
START_TEST(tile_shapes_bit_identical)
{
	if (wh_cpu()->detected < WH_ISA_AVX512)
		return;
	struct wh_sgemm_kernel k12, kw;
	wh_sgemm_kernel_get(WH_ISA_AVX512, &k12);
	wh_sgemm_kernel_for(WH_ISA_AVX512, 64, 3000, &kw);
	ck_assert_uint_eq(kw.mr, WH_SGEMM_MR_AVX512W);
	ck_assert_uint_eq(kw.nr, WH_SGEMM_NR_AVX512W);
	struct wh_sgemm_kernel kc;
	wh_sgemm_kernel_for(WH_ISA_AVX512, 36, 64, &kc); /* 12 x 32 fits exactly */
	ck_assert_uint_eq(kc.mr, WH_SGEMM_MR_AVX512);
	wh_sgemm_kernel_for(WH_ISA_AVX512, 8, 3000, &kc); /* one dense panel either way */
	ck_assert_uint_eq(kc.mr, WH_SGEMM_MR_AVX512);
	wh_sgemm_kernel_for(WH_ISA_AVX2, 64, 3000, &kc);
	ck_assert_uint_eq(kc.mr, WH_SGEMM_MR_AVX2);
	static const size_t cases[][4] = {{8, 48, 7, 0},    {16, 100, 144, 128}, {13, 47, 300, 128},
					  {1, 49, 20, 0},   {25, 97, 530, 0},    {24, 95, 600, 256},
					  {7, 17, 1, 0},    {64, 145, 144, 128}};
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		size_t M = cases[ci][0], N = cases[ci][1], K = cases[ci][2], kb = cases[ci][3];
		float *a = random_floats(M * K, ci * 3 + 900), *b = random_floats(K * N, ci * 3 + 901);
		float *bias = random_floats(M, ci * 3 + 902);
		float *c12 = malloc(M * N * sizeof(float)), *cw = malloc(M * N * sizeof(float));
		float *p12 = malloc(M * K * sizeof(float)), *pw = malloc(M * K * sizeof(float));
		ptrdiff_t *boff = malloc(K * sizeof(ptrdiff_t));
		for (size_t k = 0; k < K; k++)
			boff[k] = (ptrdiff_t)(k * N);
		wh_sgemm_pack_a(&k12, M, K, a, K, 1, p12);
		wh_sgemm_pack_a(&kw, M, K, a, K, 1, pw);
		for (size_t i = 0; i < M * N; i++)
			c12[i] = cw[i] = NAN;
		wh_sgemm_block_kb(&k12, M, N, K, kb, p12, b, boff, c12, N, ci % 2 ? bias : NULL);
		wh_sgemm_block_kb(&kw, M, N, K, kb, pw, b, boff, cw, N, ci % 2 ? bias : NULL);
		ck_assert_msg(!memcmp(c12, cw, M * N * sizeof(float)), "%zux%zux%zu kb %zu: the tiles differ", M, N, K, kb);
		free(a);
		free(b);
		free(bias);
		free(c12);
		free(cw);
		free(p12);
		free(pw);
		free(boff);
	}
}
END_TEST

/* A packed with the SIMD panels (AVX2 and up: 4x4 transposes, rows and columns past the
 * last group of 4 one by one) holds exactly what the plain loops put there: every tile
 * height, edge panels, K not a multiple of 4, rows at a stride longer than K. */
START_TEST(pack_a_simd_matches_loops)
{
	static const size_t Ms[] = {1, 3, 4, 5, 6, 7, 8, 11, 12, 13, 25, 37};
	static const size_t Ks[] = {1, 3, 4, 5, 16, 17, 33, 64};
	for (int i = WH_ISA_AVX2; i <= (int)wh_cpu()->detected; i++)
		for (int w = 0; w < 2; w++) {
			struct wh_sgemm_kernel kern;
			wh_sgemm_kernel_for((enum wh_isa)i, w ? 16 : 36, w ? 3000 : 64, &kern);
			for (size_t mi = 0; mi < sizeof Ms / sizeof *Ms; mi++)
				for (size_t ki = 0; ki < sizeof Ks / sizeof *Ks; ki++) {
					size_t M = Ms[mi], K = Ks[ki], rsa = K + 3;
					float *a = random_floats(M * rsa, 1000 + mi * 10 + ki);
					float *got = malloc(M * K * sizeof(float)), *want = malloc(M * K * sizeof(float));
					ck_assert(got && want);
					wh_sgemm_pack_a(&kern, M, K, a, rsa, 1, got);
					for (size_t i0 = 0; i0 < M; i0 += kern.mr) {
						size_t mr = M - i0 < kern.mr ? M - i0 : kern.mr;
						for (size_t k = 0; k < K; k++)
							for (size_t r = 0; r < mr; r++)
								want[i0 * K + k * mr + r] = a[(i0 + r) * rsa + k];
					}
					ck_assert_msg(!memcmp(got, want, M * K * sizeof(float)), "isa %d mr %zu: %zux%zu packs differ",
						      i, kern.mr, M, K);
					free(a);
					free(got);
					free(want);
				}
		}
}
END_TEST

static Suite *gemm_suite(void)
{
	Suite *s = suite_create("gemm");
	TCase *tc = tcase_create("engine");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, kernels_match_reference);
	tcase_add_test(tc, kernel_tails_every_width);
	tcase_add_test(tc, threads_bit_identical);
	tcase_add_test(tc, ort_kblock_rule);
	tcase_add_test(tc, block_kb_matches_reference);
	tcase_add_test(tc, m1_variants_bit_identical);
	tcase_add_test(tc, packed_b_bit_identical);
	tcase_add_test(tc, tile_shapes_bit_identical);
	tcase_add_test(tc, pack_a_simd_matches_loops);
	suite_add_tcase(s, tc);
	TCase *ops = tcase_create("ops");
	tcase_set_timeout(ops, 600);
	tcase_add_test(ops, gemm_attributes);
	tcase_add_test(ops, gemm_bad_shapes_fail);
	tcase_add_test(ops, matmul_numpy_semantics);
	tcase_add_test(ops, matmul_mismatch_fails);
	tcase_add_test(ops, matmul_int_and_half_types);
	tcase_add_test(ops, matmul_integer_zero_points);
	tcase_add_test(ops, matmul_threads_bit_identical);
	tcase_add_test(ops, tactics_run_and_match);
	tcase_add_test(ops, constant_b_packed_once);
	tcase_add_test(ops, constant_b_mapped_packed_once);
	suite_add_tcase(s, ops);
	return s;
}

int main(void)
{
	wh_cpu_init();
	SRunner *sr = srunner_create(gemm_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
