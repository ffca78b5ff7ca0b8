/* Extra MatMul and Gemm tactics (tactics-extra.h, docs/tactics.md): a plain-loop reference,
 * split-K (another summation order) at every ISA, and fp16 accumulation; plus the float32
 * views of half tensors that conv-tactics.c shares. */
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"
#include "executor/ops/gemm-internal.h"
#include "executor/ops/tactics-extra.h"

/* ---- float32 views ---- */

bool wh_tx_float_dtype(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

enum wh_status wh_tx_view_f32(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, float **owned_out,
			      const float **view_out)
{
	*owned_out = NULL;
	*view_out = NULL;
	if (!t)
		return WH_OK;
	if (t->dtype == WH_DT_FLOAT) {
		*view_out = t->data;
		return WH_OK;
	}
	if (!wh_tx_float_dtype(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "type %s is not supported by this tactic",
				      wh_dtype_name(t->dtype));
	float *f = malloc((t->count ? t->count : 1) * sizeof(float));
	if (!f)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory converting %llu elements to float32",
				      (unsigned long long)t->count);
	if (t->dtype == WH_DT_FLOAT16)
		wh_f16_to_f32_n(t->data, f, (size_t)t->count, ctx->cpu);
	else
		wh_bf16_to_f32_n(t->data, f, (size_t)t->count);
	*owned_out = f;
	*view_out = f;
	return WH_OK;
}

void wh_tx_store_half(const struct wh_kernel_ctx *ctx, const float *src, struct wh_tensor *dst)
{
	if (dst->dtype == WH_DT_FLOAT16)
		wh_f32_to_f16_n(src, dst->data, (size_t)dst->count, ctx->cpu);
	else if (dst->dtype == WH_DT_BFLOAT16)
		wh_f32_to_bf16_n(src, dst->data, (size_t)dst->count, ctx->cpu);
}

/* ---- fp16 accumulation ---- */

void wh_tx_axpy_f16_scalar(float *y, const float *x, size_t xs, float w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		y[i] = wh_tx_round_f16d((double)y[i] + (double)x[i * xs] * (double)w);
}

wh_tx_axpy_f16_fn wh_tx_axpy_f16_get(enum wh_isa isa)
{
	return isa >= WH_ISA_AVX512 ? wh_tx_axpy_f16_avx512 : isa >= WH_ISA_AVX2 ? wh_tx_axpy_f16_avx2 : wh_tx_axpy_f16_scalar;
}

/* ---- the products ---- */

/* A batch of C_b = A_b B_b: A_b element (i, k) at a[a_off[b] + i*rsa + k*csa], B_b row-major
 * at b + b_off[b] (row stride ldb), C_b contiguous at c + b*M*N. Offsets may be NULL. */
struct tx_prod {
	size_t M, N, K, batch;
	const float *a;
	size_t rsa, csa;
	const size_t *a_off;
	const float *b;
	size_t ldb;
	const size_t *b_off;
	float *c;
	const size_t *c_off; /* b*M*N, or NULL for one matrix */
	wh_tx_axpy_f16_fn axpy; /* fp16 accumulation only */
};

enum tx_mm_algo { TX_MM_REF, TX_MM_SPLITK, TX_MM_FP16ACC };

static size_t row_grain(const struct tx_prod *p)
{
	size_t work = p->N * (p->K ? p->K : 1);
	size_t g = work ? ((size_t)1 << 16) / work : 1;
	return g ? g : 1;
}

static void ref_task(void *arg, size_t begin, size_t end)
{
	const struct tx_prod *p = arg;
	for (size_t r = begin; r < end; r++) {
		size_t bi = r / p->M, i = r % p->M;
		const float *a = p->a + (p->a_off ? p->a_off[bi] : 0) + i * p->rsa;
		const float *b = p->b + (p->b_off ? p->b_off[bi] : 0);
		float *c = p->c + bi * p->M * p->N + i * p->N;
		wh_sgemm_ref(1, p->N, p->K, a, p->rsa, p->csa, b, p->ldb, 1, c, p->N, NULL);
	}
}

/* One output row: every element one chain over k in order, each step an fp16 fused
 * multiply-add (operands already fp16 values). */
static void fp16acc_task(void *arg, size_t begin, size_t end)
{
	const struct tx_prod *p = arg;
	for (size_t r = begin; r < end; r++) {
		size_t bi = r / p->M, i = r % p->M;
		const float *a = p->a + (p->a_off ? p->a_off[bi] : 0) + i * p->rsa;
		const float *b = p->b + (p->b_off ? p->b_off[bi] : 0);
		float *c = p->c + bi * p->M * p->N + i * p->N;
		for (size_t j = 0; j < p->N; j++)
			c[j] = 0.0f;
		for (size_t k = 0; k < p->K; k++)
			p->axpy(c, b + k * p->ldb, 1, a[k * p->csa], p->N);
	}
}

struct add_job {
	float *dst;
	const float *src;
};

static void add_task(void *arg, size_t begin, size_t end)
{
	const struct add_job *j = arg;
	for (size_t i = begin; i < end; i++)
		j->dst[i] += j->src[i];
}

/* C = sum over chunks q of (the chunk's products summed from zero in k order), the chunk
 * sums added to C in q order. Chunk q covers k in [q*CH, (q+1)*CH). */
static enum wh_status splitk(const struct wh_kernel_ctx *ctx, enum wh_isa isa, const struct tx_prod *p)
{
	struct wh_cpu_features cpu = *ctx->cpu;
	cpu.isa = isa;
	size_t total = p->batch * p->M * p->N;
	size_t ch = WH_TX_SPLITK_CHUNK;
	struct wh_sgemm_desc d = {
		.M = p->M, .N = p->N, .K = p->K < ch ? p->K : ch, .batch = p->batch,
		.a = p->a, .rsa = p->rsa, .csa = p->csa, .a_off = p->a_off,
		.b = p->b, .ldb = p->ldb, .b_off = p->b_off,
		.c = p->c, .ldc = p->N, .c_off = p->c_off,
	};
	enum wh_status st = wh_sgemm_run(&cpu, ctx->pool, &d);
	if (st || p->K <= ch)
		return st;
	float *tmp = malloc((total ? total : 1) * sizeof(float));
	if (!tmp)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for a split-k partial sum of %zu floats", total);
	struct add_job aj = {p->c, tmp};
	for (size_t k0 = ch; k0 < p->K; k0 += ch) {
		d.K = p->K - k0 < ch ? p->K - k0 : ch;
		d.a = p->a + k0 * p->csa;
		d.b = p->b + k0 * p->ldb;
		d.c = tmp;
		if ((st = wh_sgemm_run(&cpu, ctx->pool, &d)))
			break;
		wh_parallel_for(ctx->pool, total, (size_t)1 << 14, add_task, &aj);
	}
	free(tmp);
	return st;
}

/* Runs the product; a_n / b_n: how many floats a and b hold (for the fp16 copies). */
static enum wh_status prod_run(const struct wh_kernel_ctx *ctx, enum tx_mm_algo algo, enum wh_isa isa,
			       const struct tx_prod *p, size_t a_n, size_t b_n)
{
	if (p->batch == 0 || p->M == 0 || p->N == 0)
		return WH_OK;
	if (algo == TX_MM_SPLITK)
		return splitk(ctx, isa, p);
	if (algo == TX_MM_REF) {
		struct tx_prod q = *p;
		wh_parallel_for(ctx->pool, p->batch * p->M, row_grain(p), ref_task, &q);
		return WH_OK;
	}
	/* fp16 hardware multiplies fp16 operands: round them once, not per use */
	float *ra = malloc((a_n ? a_n : 1) * sizeof(float)), *rb = malloc((b_n ? b_n : 1) * sizeof(float));
	if (!ra || !rb) {
		free(ra);
		free(rb);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for fp16 copies of the operands");
	}
	wh_round_f16_n(p->a, ra, a_n, ctx->cpu);
	wh_round_f16_n(p->b, rb, b_n, ctx->cpu);
	struct tx_prod q = *p;
	q.a = ra;
	q.b = rb;
	q.axpy = wh_tx_axpy_f16_get(isa);
	wh_parallel_for(ctx->pool, p->batch * p->M, row_grain(p), fp16acc_task, &q);
	free(ra);
	free(rb);
	return WH_OK;
}

/* ---- MatMul ---- */

struct tx_mm {
	size_t M, N, K, batch;
	bool b_batched;
	size_t *a_off, *b_off, *c_off;
	int32_t out_rank;
	int64_t out_dims[WH_MAX_RANK];
};

static void mm_release(struct tx_mm *s)
{
	free(s->a_off);
	free(s->b_off);
	free(s->c_off);
}

/* numpy matmul semantics: 1-D operands are promoted and their dimension dropped from the
 * output, batch dimensions broadcast. */
static enum wh_status mm_geometry(struct wh_kernel_ctx *ctx, const struct wh_tensor *A, const struct wh_tensor *B,
				  struct tx_mm *s)
{
	char sa[64], sb[64];
	memset(s, 0, sizeof *s);
	if (A->rank < 1 || B->rank < 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s, matmul needs at least 1-d inputs",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
	int64_t K = A->dims[A->rank - 1], M = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
	int64_t kb = B->rank >= 2 ? B->dims[B->rank - 2] : B->dims[0], N = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
	if (kb != K)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s: inner dimensions %lld and %lld differ",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb), (long long)K, (long long)kb);
	int32_t ra = A->rank > 2 ? A->rank - 2 : 0, rb = B->rank > 2 ? B->rank - 2 : 0;
	int32_t br = ra > rb ? ra : rb;
	int64_t bd[WH_MAX_RANK], stra[WH_MAX_RANK], strb[WH_MAX_RANK];
	for (int32_t d = 0; d < br; d++) {
		int64_t x = d - (br - ra) >= 0 ? A->dims[d - (br - ra)] : 1;
		int64_t y = d - (br - rb) >= 0 ? B->dims[d - (br - rb)] : 1;
		if (x != y && x != 1 && y != 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s: batch dimensions do not broadcast",
					      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
					      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
		bd[d] = x == 1 ? y : x;
	}
	for (int32_t d = 0; d < br; d++)
		s->out_dims[s->out_rank++] = bd[d];
	if (A->rank >= 2)
		s->out_dims[s->out_rank++] = M;
	if (B->rank >= 2)
		s->out_dims[s->out_rank++] = N;
	uint64_t batch, cnt;
	if (!wh_shape_count(bd, br, &batch) || !wh_shape_count(s->out_dims, s->out_rank, &cnt))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output of inputs %s and %s is too large",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
	s->M = (size_t)M, s->N = (size_t)N, s->K = (size_t)K, s->batch = (size_t)batch;
	s->b_batched = rb > 0;
	size_t n = s->batch ? s->batch : 1;
	s->a_off = malloc(n * sizeof(size_t));
	s->b_off = malloc(n * sizeof(size_t));
	s->c_off = malloc(n * sizeof(size_t));
	if (!s->a_off || !s->b_off || !s->c_off) {
		mm_release(s);
		memset(s, 0, sizeof *s);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for %zu batch offsets", n);
	}
	/* strides of each input's batch dimensions in matrices, 0 where broadcast */
	int64_t acc_a = 1, acc_b = 1;
	for (int32_t d = br - 1; d >= 0; d--) {
		int32_t da = d - (br - ra), db = d - (br - rb);
		int64_t xa = da >= 0 ? A->dims[da] : 1, xb = db >= 0 ? B->dims[db] : 1;
		stra[d] = xa == 1 ? 0 : acc_a;
		strb[d] = xb == 1 ? 0 : acc_b;
		acc_a *= xa;
		acc_b *= xb;
	}
	int64_t idx[WH_MAX_RANK] = {0};
	for (size_t b = 0; b < s->batch; b++) {
		size_t oa = 0, ob = 0;
		for (int32_t d = 0; d < br; d++) {
			oa += (size_t)(idx[d] * stra[d]);
			ob += (size_t)(idx[d] * strb[d]);
		}
		s->a_off[b] = oa * s->M * s->K;
		s->b_off[b] = ob * s->K * s->N;
		s->c_off[b] = b * s->M * s->N;
		for (int32_t d = br - 1; d >= 0; d--) {
			if (++idx[d] < bd[d])
				break;
			idx[d] = 0;
		}
	}
	return WH_OK;
}

static enum wh_status mm_common(struct wh_kernel_ctx *ctx, enum tx_mm_algo algo, enum wh_isa isa)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *B = wh_kin(ctx, 1);
	if (!A || !B)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B");
	if (A->dtype != B->dtype || !wh_tx_float_dtype(A->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "inputs of types %s and %s are not supported by this tactic (float32, float16 or bfloat16)",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype));
	struct tx_mm s;
	enum wh_status st = mm_geometry(ctx, A, B, &s);
	if (st)
		return st;
	float *oa = NULL, *ob = NULL, *fy = NULL;
	const float *a, *b;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], A->dtype, s.out_rank, s.out_dims)) ||
	    (st = wh_tx_view_f32(ctx, A, &oa, &a)) || (st = wh_tx_view_f32(ctx, B, &ob, &b)))
		goto out;
	struct wh_tensor *Y = &ctx->outputs[0];
	float *y = Y->data;
	if (Y->dtype != WH_DT_FLOAT) {
		if (!(fy = malloc((Y->count ? Y->count : 1) * sizeof(float)))) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
			goto out;
		}
		y = fy;
	}
	struct tx_prod p = {
		.M = s.M, .N = s.N, .K = s.K, .batch = s.batch,
		.a = a, .rsa = s.K, .csa = 1, .a_off = s.a_off,
		.b = b, .ldb = s.N, .b_off = s.b_off,
		.c = y, .c_off = s.c_off,
	};
	/* With B shared by the whole batch, A's matrices are the rows of one tall matrix (no
	 * change to any element's chain). */
	if (!s.b_batched && s.batch > 1) {
		p.M *= s.batch;
		p.batch = 1;
		p.a_off = p.b_off = p.c_off = NULL;
	}
	if ((st = prod_run(ctx, algo, isa, &p, (size_t)A->count, (size_t)B->count)))
		goto out;
	if (fy)
		wh_tx_store_half(ctx, fy, Y);
out:
	free(oa);
	free(ob);
	free(fy);
	mm_release(&s);
	return st;
}

/* ---- Gemm ---- */

static enum wh_status gemm_common(struct wh_kernel_ctx *ctx, enum tx_mm_algo algo, enum wh_isa isa)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *B = wh_kin(ctx, 1), *C = wh_kin(ctx, 2);
	if (!A || !B)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B");
	if (A->dtype != B->dtype || (C && C->dtype != A->dtype) || !wh_tx_float_dtype(A->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "inputs of types %s, %s%s%s are not supported by this tactic (all float32, float16 or bfloat16)",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype), C ? ", " : "",
				      C ? wh_dtype_name(C->dtype) : "");
	struct wh_gemm_geom gg;
	enum wh_status gst = wh_gemm_geometry(ctx, A, B, C, &gg);
	if (gst != WH_OK)
		return gst;
	bool ta = gg.ta, tb = gg.tb;
	float alpha = gg.alpha, beta = gg.beta;
	int64_t M = gg.M, N = gg.N, K = gg.K;
	int64_t cstr[2] = {gg.cstr[0], gg.cstr[1]};
	int64_t yd[2] = {M, N};
	enum wh_status st = wh_tensor_alloc(&ctx->outputs[0], A->dtype, 2, yd);
	if (st)
		return st;
	struct wh_tensor *Y = &ctx->outputs[0];
	float *oa = NULL, *ob = NULL, *oc = NULL, *fy = NULL, *bt = NULL;
	const float *a, *b, *c;
	if ((st = wh_tx_view_f32(ctx, A, &oa, &a)) || (st = wh_tx_view_f32(ctx, B, &ob, &b)) ||
	    (st = wh_tx_view_f32(ctx, C, &oc, &c)))
		goto out;
	float *y = Y->data;
	if (Y->dtype != WH_DT_FLOAT) {
		if (!(fy = malloc((Y->count ? Y->count : 1) * sizeof(float)))) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
			goto out;
		}
		y = fy;
	}
	if (tb) {
		/* the products read B by rows: transpose it once */
		if (!(bt = malloc((B->count ? B->count : 1) * sizeof(float)))) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory transposing B");
			goto out;
		}
		for (int64_t n = 0; n < N; n++)
			for (int64_t k = 0; k < K; k++)
				bt[k * N + n] = b[n * K + k];
		b = bt;
	}
	struct tx_prod p = {
		.M = (size_t)M, .N = (size_t)N, .K = (size_t)K, .batch = 1,
		.a = a, .rsa = ta ? 1 : (size_t)K, .csa = ta ? (size_t)M : 1,
		.b = b, .ldb = (size_t)N, .c = y,
	};
	if ((st = prod_run(ctx, algo, isa, &p, (size_t)A->count, (size_t)B->count)))
		goto out;
	if (alpha != 1.0f || c) {
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				float v = alpha * y[i * N + j];
				if (c)
					v += beta * c[i * cstr[0] + j * cstr[1]];
				y[i * N + j] = v;
			}
	}
	if (fy)
		wh_tx_store_half(ctx, fy, Y);
out:
	free(oa);
	free(ob);
	free(oc);
	free(fy);
	free(bt);
	return st;
}

/* ---- the tactics ---- */

static bool tx_ok(const struct wh_kernel_ctx *ctx, enum wh_isa isa)
{
	const struct wh_tensor *a = wh_kin(ctx, 0);
	return a && wh_tx_float_dtype(a->dtype) && ctx->cpu->isa >= isa;
}

bool wh_tx_ok_mm_scalar(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_SCALAR);
}

bool wh_tx_ok_mm_avx2(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_AVX2);
}

bool wh_tx_ok_mm_avx512(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_AVX512);
}

bool wh_tx_ok_mm_fp16acc_scalar(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_SCALAR) && wh_tx_fp16_layer(ctx);
}

bool wh_tx_ok_mm_fp16acc_avx2(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_AVX2) && wh_tx_fp16_layer(ctx);
}

bool wh_tx_ok_mm_fp16acc_avx512(const struct wh_kernel_ctx *ctx)
{
	return tx_ok(ctx, WH_ISA_AVX512) && wh_tx_fp16_layer(ctx);
}

#define WH_TX_MM(NAME, ALGO, ISA)                                                  \
	enum wh_status wh_tx_run_matmul_##NAME(struct wh_kernel_ctx *ctx)          \
	{                                                                          \
		return mm_common(ctx, ALGO, ISA);                                  \
	}                                                                          \
	enum wh_status wh_tx_run_gemm_##NAME(struct wh_kernel_ctx *ctx)            \
	{                                                                          \
		return gemm_common(ctx, ALGO, ISA);                                \
	}
WH_TX_MM(ref_scalar, TX_MM_REF, WH_ISA_SCALAR)
WH_TX_MM(splitk_scalar, TX_MM_SPLITK, WH_ISA_SCALAR)
WH_TX_MM(splitk_avx2, TX_MM_SPLITK, WH_ISA_AVX2)
WH_TX_MM(splitk_avx512, TX_MM_SPLITK, WH_ISA_AVX512)
WH_TX_MM(fp16acc_scalar, TX_MM_FP16ACC, WH_ISA_SCALAR)
WH_TX_MM(fp16acc_avx2, TX_MM_FP16ACC, WH_ISA_AVX2)
WH_TX_MM(fp16acc_avx512, TX_MM_FP16ACC, WH_ISA_AVX512)

const struct wh_tactic wh_matmul_extra_tactics[] = {WH_MATMUL_EXTRA_TACTICS, WH_MATMUL_FP16ACC_TACTICS};
const uint32_t wh_matmul_extra_tactics_count = sizeof wh_matmul_extra_tactics / sizeof wh_matmul_extra_tactics[0];
const struct wh_tactic wh_gemm_extra_tactics[] = {WH_GEMM_EXTRA_TACTICS, WH_GEMM_FP16ACC_TACTICS};
const uint32_t wh_gemm_extra_tactics_count = sizeof wh_gemm_extra_tactics / sizeof wh_gemm_extra_tactics[0];
