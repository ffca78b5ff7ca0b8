/* The engine's cache of packed constant GEMM operands (executor/kernel.h, struct
 * wh_gemm_packs): B of MatMul and Gemm (panels of NR columns), A of Conv (the weights in
 * panels of MR rows), the 8-bit B of MatMulInteger and QLinearMatMul (qgemm-internal.h);
 * and the B packing of the float32 GEMM engine (gemm-internal.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/ops/gemm-internal.h"
#include "executor/ops/qgemm-internal.h"
#include "graph/blob.h"

/* ---- packing ---- */

size_t wh_sgemm_pack_b_floats(size_t nr, size_t K, size_t N)
{
	return (N + nr - 1) / nr * nr * K;
}

struct packb_job {
	size_t nr, K, N, rsb, csb;
	size_t p0, k0, k1; /* panels from p0 on, steps [k0, k1) of each */
	const float *b;
	float *dst;
};

static void packb_task(void *arg, size_t begin, size_t end)
{
	const struct packb_job *j = arg;
	size_t nr = j->nr, K = j->K;
	for (size_t p = j->p0 + begin; p < j->p0 + end; p++) {
		size_t j0 = p * nr, w = j->N - j0 < nr ? j->N - j0 : nr;
		float *d = j->dst + p * nr * K;
		if (j->csb == 1) {
			/* rows of B: each panel row is a contiguous run of w floats */
			for (size_t k = j->k0; k < j->k1; k++) {
				memcpy(d + k * nr, j->b + k * j->rsb + j0, w * sizeof(float));
				memset(d + k * nr + w, 0, (nr - w) * sizeof(float));
			}
			continue;
		}
		/* columns of B are rows of the stored matrix (Gemm's transB): read each in blocks
		 * of 16 steps so that reads are contiguous and writes stay within 16 panel rows */
		const float *s = j->b + j0 * j->csb;
		for (size_t k0 = j->k0; k0 < j->k1; k0 += 16) {
			size_t k1 = k0 + 16 < j->k1 ? k0 + 16 : j->k1;
			for (size_t c = 0; c < w; c++)
				for (size_t k = k0; k < k1; k++)
					d[k * nr + c] = s[c * j->csb + k * j->rsb];
			for (size_t k = k0; k < k1; k++)
				memset(d + k * nr + w, 0, (nr - w) * sizeof(float));
		}
	}
}

/* Packs steps [k0, k1) of panels [p0, p1). */
static void packb_range(struct packb_job *j, struct wh_threadpool *pool, size_t p0, size_t p1, size_t k0, size_t k1)
{
	j->p0 = p0;
	j->k0 = k0;
	j->k1 = k1;
	size_t per = j->nr * (k1 > k0 ? k1 - k0 : 1);
	size_t grain = ((size_t)1 << 16) / per;
	wh_parallel_for(pool, p1 - p0, grain ? grain : 1, packb_task, j);
}

void wh_sgemm_pack_b(size_t nr, struct wh_threadpool *pool, size_t K, size_t N, const float *b, size_t rsb,
		     size_t csb, float *dst)
{
	struct packb_job j = {.nr = nr, .K = K, .N = N, .rsb = rsb, .csb = csb, .b = b, .dst = dst};
	packb_range(&j, pool, 0, (N + nr - 1) / nr, 0, K);
}

/* ---- the cache ---- */

enum pack_kind { PACK_B, PACK_A, PACK_Q8B };

struct pack_entry {
	const float *src; /* the initializer's bytes: with the kind and geometry, the key */
	enum pack_kind kind;
	size_t K, N, nr; /* A: G matrices of N rows, K columns, in panels of nr (MR) rows */
	size_t G;        /* B: 1 */
	bool tb;
	bool dup;         /* the source lives in memory: the copy counts against dup_budget */
	uint32_t uses;
	float *p;         /* NULL until packed, and for good when it did not fit */
	size_t bytes;
};

struct wh_gemm_packs {
	struct pack_entry *e;
	size_t n, cap;
	size_t dup_budget, dup_bytes; /* copies of weights held in memory */
	size_t map_budget, map_bytes; /* copies of mapped weights (their pages dropped) */
};

enum wh_status wh_gemm_packs_create(int64_t dup_budget, struct wh_gemm_packs **out)
{
	struct wh_gemm_packs *p = calloc(1, sizeof *p);
	if (!p)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	p->dup_budget = dup_budget < 0 ? 0 : (size_t)(dup_budget ? dup_budget : WH_ENGINE_WEIGHT_CACHE_DEFAULT);
	/* a mapped weight's pages can be evicted and read again, anonymous memory cannot (no
	 * swap assumed): a model larger than memory keeps reading most weights from its file */
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	p->map_budget = pages > 0 && psz > 0 ? (size_t)pages / 2 * (size_t)psz : (size_t)1 << 30;
	*out = p;
	return WH_OK;
}

void wh_gemm_packs_destroy(struct wh_gemm_packs *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->e[i].p);
	free(p->e);
	free(p);
}

size_t wh_gemm_packs_bytes(const struct wh_gemm_packs *p)
{
	return p ? p->dup_bytes + p->map_bytes : 0;
}

/* Packs B into p; a mapped B is packed in slices of about 8 MiB of its bytes, each slice's
 * source pages dropped once packed, so that the source and the copy are never both resident
 * (the resident peak grows by a slice, not by the weight). */
static void pack_entry_fill(struct wh_threadpool *pool, const struct pack_entry *e, bool mapped, float *p)
{
	struct packb_job j = {.nr = e->nr, .K = e->K, .N = e->N, .rsb = e->tb ? 1 : e->N, .csb = e->tb ? e->K : 1,
			      .b = e->src, .dst = p};
	size_t panels = (e->N + e->nr - 1) / e->nr;
	if (!mapped) {
		packb_range(&j, pool, 0, panels, 0, e->K);
		return;
	}
	const size_t slice = (size_t)8 << 20;
	uintptr_t from = (uintptr_t)e->src, end = (uintptr_t)(e->src + e->K * e->N);
	if (!e->tb) {
		/* the stored rows are B's rows: slices of rows across all panels */
		size_t rows = slice / (e->N * sizeof(float));
		rows = rows ? rows : 1;
		for (size_t k0 = 0; k0 < e->K; k0 += rows) {
			size_t k1 = k0 + rows < e->K ? k0 + rows : e->K;
			packb_range(&j, pool, 0, panels, k0, k1);
			wh_blob_drop_pages(&from, k1 == e->K ? end : (uintptr_t)(e->src + k1 * e->N));
		}
	} else {
		/* the stored rows are B's columns: slices of whole panels */
		size_t per = slice / (e->nr * e->K * sizeof(float));
		per = per ? per : 1;
		for (size_t p0 = 0; p0 < panels; p0 += per) {
			size_t p1 = p0 + per < panels ? p0 + per : panels;
			packb_range(&j, pool, p0, p1, 0, e->K);
			wh_blob_drop_pages(&from, p1 == panels ? end : (uintptr_t)(e->src + p1 * e->nr * e->K));
		}
	}
}

static struct pack_entry *entry_find(struct wh_gemm_packs *c, const struct pack_entry *key)
{
	for (size_t i = 0; i < c->n; i++) {
		struct pack_entry *e = &c->e[i];
		if (e->src == key->src && e->kind == key->kind && e->K == key->K && e->N == key->N &&
		    e->nr == key->nr && e->G == key->G && e->tb == key->tb)
			return e;
	}
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 16;
		struct pack_entry *ne = realloc(c->e, cap * sizeof *ne);
		if (!ne)
			return NULL;
		c->e = ne;
		c->cap = cap;
	}
	struct pack_entry *e = &c->e[c->n++];
	*e = *key;
	e->uses = 0;
	e->p = NULL;
	e->bytes = 0;
	return e;
}

/* The entry of input k of the node for key (src is filled in here), when input k is an
 * initializer's own bytes, float32, at least `floats` of them; NULL otherwise. *mapped
 * says whether those bytes are mapped from a file. */
static struct pack_entry *entry_of(const struct wh_kernel_ctx *ctx, uint32_t k, uint64_t floats,
				   struct pack_entry *key, bool *mapped)
{
	struct wh_gemm_packs *c = ctx->packs;
	const struct wh_tensor *t = wh_kin(ctx, k);
	if (!c || !t || t->dtype != WH_DT_FLOAT || !t->data || floats == 0 || t->count < floats ||
	    k >= ctx->node->n_inputs || ctx->node->inputs[k] == WH_NONE)
		return NULL;
	/* the tensor must be the initializer's own bytes: those never change while the engine
	 * lives (the model outlives it and blobs are immutable), so they can key the copy; a
	 * computed tensor, or a rounded copy made by the emulation, is read as it is */
	const struct wh_value *val = &ctx->graph->values[ctx->node->inputs[k]];
	if (k < 32 && (ctx->const_inputs >> k & 1)) {
		/* a constant layer's kept output: held by the plan, unchanged, for the engine's life */
		key->src = t->data;
		*mapped = false;
		return entry_find(c, key);
	}
	if (!(val->flags & WH_VALUE_INITIALIZER) || !val->data || val->data->data != t->data ||
	    val->data->size / sizeof(float) < floats)
		return NULL;
	key->src = t->data;
	*mapped = wh_blob_is_mapped(val->data);
	return entry_find(c, key);
}

/* The memory for e's copy of bytes, at the second use only (the first returns NULL, as
 * does any later one when it was not packed then), within the budget of its kind. */
static float *entry_alloc(struct wh_gemm_packs *c, struct pack_entry *e, bool mapped, size_t bytes)
{
	if (e->uses == UINT32_MAX || ++e->uses < 2)
		return NULL;
	e->uses = UINT32_MAX; /* packed now or never */
	size_t used = mapped ? c->map_bytes : c->dup_bytes, budget = mapped ? c->map_budget : c->dup_budget;
	if (bytes > budget || used > budget - bytes)
		return NULL;
	return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static void entry_commit(struct wh_gemm_packs *c, struct pack_entry *e, bool mapped, float *p, size_t bytes)
{
	e->p = p;
	e->bytes = bytes;
	e->dup = !mapped;
	*(mapped ? &c->map_bytes : &c->dup_bytes) += bytes;
}

/* B (K x N, transposed when tb) of input k in panels of nr columns. */
static const float *packed_b(const struct wh_kernel_ctx *ctx, uint32_t k, size_t nr, size_t K, size_t N, bool tb)
{
	struct pack_entry key = {.kind = PACK_B, .K = K, .N = N, .nr = nr, .G = 1, .tb = tb}, *e;
	bool mapped;
	if (!(e = entry_of(ctx, k, (uint64_t)K * N, &key, &mapped)))
		return NULL;
	if (e->p)
		return e->p;
	size_t bytes = wh_sgemm_pack_b_floats(nr, K, N) * sizeof(float);
	float *p = entry_alloc(ctx->packs, e, mapped, bytes);
	if (!p)
		return NULL;
	pack_entry_fill(ctx->pool, e, mapped, p);
	entry_commit(ctx->packs, e, mapped, p, bytes);
	return p;
}

const float *wh_gemm_packed_b(const struct wh_kernel_ctx *ctx, uint32_t k, const struct wh_sgemm_kernel *kern,
			      size_t K, size_t N, bool tb)
{
	const struct wh_tensor *t = wh_kin(ctx, k);
	if (!t || t->rank != 2 || K == 0 || N == 0)
		return NULL;
	return packed_b(ctx, k, kern->nr, K, N, tb);
}

const float *wh_gemm_packed_wt(const struct wh_kernel_ctx *ctx, uint32_t k, size_t nr, size_t K, size_t M)
{
	const struct wh_tensor *t = wh_kin(ctx, k);
	if (!t || t->rank < 3 || K == 0 || M == 0 || (uint64_t)K * M > WH_MAX_ELEMENTS)
		return NULL;
	/* W [M][K] read as B^T: element (k, m) at w[m * K + k] */
	return packed_b(ctx, k, nr, K, M, true);
}

const float *wh_gemm_packed_a(const struct wh_kernel_ctx *ctx, uint32_t k, const struct wh_sgemm_kernel *kern,
			      size_t G, size_t M, size_t K)
{
	uint64_t mk, floats;
	if (G == 0 || M == 0 || K == 0 || !wh_mul_u64(M, K, &mk) || !wh_mul_u64(mk, G, &floats) ||
	    floats > WH_MAX_ELEMENTS)
		return NULL;
	struct pack_entry key = {.kind = PACK_A, .K = K, .N = M, .nr = kern->mr, .G = G}, *e;
	bool mapped;
	if (!(e = entry_of(ctx, k, floats, &key, &mapped)))
		return NULL;
	if (e->p)
		return e->p;
	size_t bytes = (size_t)floats * sizeof(float);
	float *p = entry_alloc(ctx->packs, e, mapped, bytes);
	if (!p)
		return NULL;
	wh_sgemm_pack_groups(kern, ctx->pool, G, M, K, e->src, (size_t)mk, K, 1, p);
	if (mapped) {
		/* the copy replaces the mapped pages (convolution weights are small: packed
		 * whole, then dropped, rather than in slices as B) */
		uintptr_t from = (uintptr_t)e->src;
		wh_blob_drop_pages(&from, (uintptr_t)(e->src + floats));
	}
	entry_commit(ctx->packs, e, mapped, p, bytes);
	return p;
}

/* The 8-bit B (qgemm-internal.h): the panels, then the column sums. Always counted as a
 * second copy (dup_budget), mapped or not: the source pages are not dropped. The key's tb
 * holds the flip (the packed bytes depend on it). */
const int8_t *wh_qgemm_packed_b(const struct wh_kernel_ctx *ctx, uint32_t k, size_t K, size_t N, uint8_t flip,
				const int32_t **colsum)
{
	struct wh_gemm_packs *c = ctx->packs;
	const struct wh_tensor *t = wh_kin(ctx, k);
	uint64_t kn;
	if (!c || !t || t->rank != 2 || (t->dtype != WH_DT_UINT8 && t->dtype != WH_DT_INT8) || !t->data || K == 0 ||
	    N == 0 || !wh_mul_u64(K, N, &kn) || t->count != kn || k >= ctx->node->n_inputs ||
	    ctx->node->inputs[k] == WH_NONE)
		return NULL;
	const struct wh_value *val = &ctx->graph->values[ctx->node->inputs[k]];
	if (!(val->flags & WH_VALUE_INITIALIZER) || !val->data || val->data->data != t->data || val->data->size < kn)
		return NULL;
	struct pack_entry key = {.src = (const float *)t->data, .kind = PACK_Q8B, .K = K, .N = N, .nr = WH_QG_NR,
				 .G = 1, .tb = flip != 0},
			  *e;
	if (!(e = entry_find(c, &key)))
		return NULL;
	size_t np = wh_qg_panels(N), kp = wh_qg_kp(K), pb = np * kp * WH_QG_NR;
	if (!e->p) {
		size_t bytes = pb + np * WH_QG_NR * sizeof(int32_t);
		float *p = entry_alloc(c, e, false, bytes);
		if (!p)
			return NULL;
		wh_qg_pack(t->data, N, K, N, flip, (int8_t *)p);
		wh_qg_colsums((const int8_t *)p, kp, N, (int32_t *)((uint8_t *)p + pb), ctx->cpu);
		entry_commit(c, e, false, p, bytes);
	}
	*colsum = (const int32_t *)((const uint8_t *)e->p + pb);
	return (const int8_t *)e->p;
}
