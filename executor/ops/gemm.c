/* Gemm, MatMul, MatMulInteger, QLinearMatMul, and the float32 GEMM engine they share with
 * the convolutions (see gemm-internal.h for its contract). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/ops/tactics-extra.h"
#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/ops/elementwise-internal.h"
#include "executor/ops/gemm-internal.h"
#include "executor/ops/qgemm-internal.h"

/* ---- the float32 GEMM engine ---- */

/* K is cut into equal slices of at most this many steps so that a slice of B's panel
 * (KC x NR floats) stays in L1 while the kernel walks down the rows of A. */
#define WH_SGEMM_KC 256

static void ukernel_scalar(size_t mr, size_t nr, size_t kc, const float *a, const float *b,
			   const ptrdiff_t *boff, float *c, size_t ldc, const float *bias, unsigned flags)
{
	float acc[WH_SGEMM_MR_SCALAR][WH_SGEMM_NR_SCALAR];
	for (size_t i = 0; i < mr; i++)
		for (size_t j = 0; j < nr; j++)
			acc[i][j] = (flags & WH_SGEMM_LOAD_C) ? c[i * ldc + j] : 0.0f;
	for (size_t k = 0; k < kc; k++) {
		const float *bp = b + boff[k];
		for (size_t i = 0; i < mr; i++) {
			float ai = a[k * mr + i];
			for (size_t j = 0; j < nr; j++)
				acc[i][j] += ai * bp[j];
		}
	}
	if (flags & WH_SGEMM_ADD_C)
		for (size_t i = 0; i < mr; i++)
			for (size_t j = 0; j < nr; j++)
				acc[i][j] += c[i * ldc + j];
	for (size_t i = 0; i < mr; i++)
		for (size_t j = 0; j < nr; j++)
			c[i * ldc + j] = (flags & WH_SGEMM_BIAS) ? acc[i][j] + bias[i] : acc[i][j];
}

void wh_sgemm_m1_ref(size_t n, size_t K, const float *a, const float *b, const ptrdiff_t *boff, float *c,
		     const float *bias)
{
	for (size_t j = 0; j < n; j++)
		c[j] = 0.0f;
	size_t k = 0;
	for (; k + 4 <= K; k += 4) {
		const float *b0 = b + boff[k], *b1 = b + boff[k + 1], *b2 = b + boff[k + 2], *b3 = b + boff[k + 3];
		for (size_t j = 0; j < n; j++) {
			float t = a[k] * b0[j] + a[k + 1] * b1[j];
			t = t + a[k + 2] * b2[j];
			t = t + a[k + 3] * b3[j];
			c[j] = t + c[j];
		}
	}
	if (K - k >= 2) {
		const float *b0 = b + boff[k], *b1 = b + boff[k + 1];
		for (size_t j = 0; j < n; j++)
			c[j] = (a[k] * b0[j] + a[k + 1] * b1[j]) + c[j];
		k += 2;
	}
	if (K - k == 1) {
		const float *b0 = b + boff[k];
		for (size_t j = 0; j < n; j++)
			c[j] = a[k] * b0[j] + c[j];
	}
	if (bias)
		for (size_t j = 0; j < n; j++)
			c[j] = c[j] + *bias;
}

size_t wh_sgemm_ort_kblock(size_t K, size_t N)
{
	/* MlasSgemmOperation: StrideN = StrideK = 128; a wide N shrinks StrideK down to K, a
	 * narrow N trades StrideN for StrideK (never below 16 columns) */
	if (K <= 128)
		return 0;
	if (N >= K)
		return 128;
	size_t sn = 128, sk = 128;
	while (sn > 16 && sn / 2 >= N) {
		sk *= 2;
		sn /= 2;
	}
	return sk >= K ? 0 : sk;
}

static size_t round_up(size_t x, size_t m)
{
	return (x + m - 1) / m * m;
}

void wh_sgemm_kernel_get(enum wh_isa isa, struct wh_sgemm_kernel *out)
{
	if (isa >= WH_ISA_AVX512)
		*out = (struct wh_sgemm_kernel){WH_ISA_AVX512, WH_SGEMM_MR_AVX512, WH_SGEMM_NR_AVX512,
						wh_sgemm_ukernel_avx512, wh_sgemm_m1_avx512};
	else if (isa >= WH_ISA_AVX2)
		*out = (struct wh_sgemm_kernel){WH_ISA_AVX2, WH_SGEMM_MR_AVX2, WH_SGEMM_NR_AVX2,
						wh_sgemm_ukernel_avx2, wh_sgemm_m1_avx2};
	else
		*out = (struct wh_sgemm_kernel){WH_ISA_SCALAR, WH_SGEMM_MR_SCALAR, WH_SGEMM_NR_SCALAR,
						ukernel_scalar, wh_sgemm_m1_ref};
}

void wh_sgemm_kernel_for(enum wh_isa isa, size_t M, size_t N, struct wh_sgemm_kernel *out)
{
	(void)N;
	wh_sgemm_kernel_get(isa, out);
	if (out->isa != WH_ISA_AVX512)
		return;
	/* Both tiles run the same multiply-adds (a partial panel runs only its rows, a column
	 * tail of 16 or fewer one vector), so the choice is about density: a last panel of 4
	 * rows or fewer runs at a third of the 12-row panel's multiply-adds a step, where the
	 * 8-row tile has full panels (squeezenet's 16, 64 and 256 output channels: 5 to 20 %
	 * faster in the model). Elsewhere the 12 x 32 tile measured as fast or faster
	 * (mnasnet's 8 and 32 output channels: 6 % slower on the 8 x 48 tile). */
	size_t t12 = M % out->mr, t8 = M % WH_SGEMM_MR_AVX512W;
	if (M > out->mr && t12 && t12 <= 4 && (t8 == 0 || t8 > 4)) {
		out->mr = WH_SGEMM_MR_AVX512W;
		out->nr = WH_SGEMM_NR_AVX512W;
		out->ukernel = wh_sgemm_ukernel_avx512w;
	}
}

void wh_sgemm_pack_a(const struct wh_sgemm_kernel *kern, size_t M, size_t K, const float *a,
		     size_t rsa, size_t csa, float *dst)
{
	for (size_t i0 = 0; i0 < M; i0 += kern->mr) {
		size_t mr = M - i0 < kern->mr ? M - i0 : kern->mr;
		float *d = dst + i0 * K;
		const float *s = a + i0 * rsa;
		if (csa == 1 && mr >= 4 && kern->isa >= WH_ISA_AVX2) {
			wh_sgemm_pack_panel_avx2(mr, K, s, rsa, d);
		} else if (csa == 1 && mr > 1) {
			/* blocks of 16 columns: contiguous reads per row, writes within 16 panel rows */
			size_t k0 = 0;
			for (; k0 + 16 <= K; k0 += 16)
				for (size_t r = 0; r < mr; r++)
					for (size_t k = k0; k < k0 + 16; k++)
						d[k * mr + r] = s[r * rsa + k];
			for (size_t r = 0; r < mr; r++)
				for (size_t k = k0; k < K; k++)
					d[k * mr + r] = s[r * rsa + k];
		} else {
			for (size_t k = 0; k < K; k++)
				for (size_t r = 0; r < mr; r++)
					d[k * mr + r] = s[r * rsa + k * csa];
		}
	}
}

/* Column j of B at b + j (row-major, rows at boff), or, with bps (packed B, gemm-internal.h),
 * in panel j / nr at b + (j / nr) * bps (j is a multiple of nr here). */
static const float *b_cols(const struct wh_sgemm_kernel *kern, const float *b, size_t j, size_t bps)
{
	return bps ? b + j / kern->nr * bps : b + j;
}

static void block_one_chain(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K,
			    const float *apack, const float *b, size_t bps, const ptrdiff_t *boff, float *c,
			    size_t ldc, const float *bias)
{
	size_t n_slices = (K + WH_SGEMM_KC - 1) / WH_SGEMM_KC;
	size_t kc = n_slices ? (K + n_slices - 1) / n_slices : 0;
	size_t k0 = 0;
	do {
		size_t kk = K - k0 < kc ? K - k0 : kc;
		unsigned flags = (k0 ? WH_SGEMM_LOAD_C : 0) | (k0 + kk == K && bias ? WH_SGEMM_BIAS : 0);
		for (size_t j = 0; j < N; j += kern->nr) {
			size_t nr = N - j < kern->nr ? N - j : kern->nr;
			const float *bj = b_cols(kern, b, j, bps);
			for (size_t i = 0; i < M; i += kern->mr) {
				size_t mr = M - i < kern->mr ? M - i : kern->mr;
				kern->ukernel(mr, nr, kk, apack + i * K + k0 * mr, bj, boff + k0,
					      c + i * ldc + j, ldc, bias ? bias + i : NULL, flags);
			}
		}
		k0 += kk;
	} while (k0 < K);
}

void wh_sgemm_block(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K,
		    const float *apack, const float *b, const ptrdiff_t *boff, float *c, size_t ldc,
		    const float *bias)
{
	block_one_chain(kern, M, N, K, apack, b, 0, boff, c, ldc, bias);
}

static void block_kb(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, size_t kb,
		     const float *apack, const float *b, size_t bps, const ptrdiff_t *boff, float *c, size_t ldc,
		     const float *bias)
{
	if (kb == 0 || kb >= K) {
		block_one_chain(kern, M, N, K, apack, b, bps, boff, c, ldc, bias);
		return;
	}
	for (size_t k0 = 0; k0 < K; k0 += kb) {
		size_t kk = K - k0 < kb ? K - k0 : kb;
		unsigned flags = (k0 ? WH_SGEMM_ADD_C : 0) | (k0 + kk == K && bias ? WH_SGEMM_BIAS : 0);
		for (size_t j = 0; j < N; j += kern->nr) {
			size_t nr = N - j < kern->nr ? N - j : kern->nr;
			const float *bj = b_cols(kern, b, j, bps);
			for (size_t i = 0; i < M; i += kern->mr) {
				size_t mr = M - i < kern->mr ? M - i : kern->mr;
				kern->ukernel(mr, nr, kk, apack + i * K + k0 * mr, bj, boff + k0,
					      c + i * ldc + j, ldc, bias ? bias + i : NULL, flags);
			}
		}
	}
}

void wh_sgemm_block_kb(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, size_t kb,
		       const float *apack, const float *b, const ptrdiff_t *boff, float *c, size_t ldc,
		       const float *bias)
{
	block_kb(kern, M, N, K, kb, apack, b, 0, boff, c, ldc, bias);
}

void wh_sgemm_block_kb_packed(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, size_t kb,
			      const float *apack, const float *bpack, size_t bps, const ptrdiff_t *boff, float *c,
			      size_t ldc)
{
	block_kb(kern, M, N, K, kb, apack, bpack, bps, boff, c, ldc, NULL);
}

void wh_sgemm_tiles(const struct wh_sgemm_kernel *kern, size_t M, size_t N, size_t K, int threads,
		    size_t *mc_out, size_t *nc_out)
{
	(void)K;
	size_t mc = M <= 16 * kern->mr ? M : 16 * kern->mr;
	size_t nc = round_up(N < 512 ? N : 512, kern->nr);
	if (nc == 0)
		nc = kern->nr;
	if (threads > 1) {
		size_t want = 4 * (size_t)threads;
		for (;;) {
			size_t tiles = ((M + mc - 1) / (mc ? mc : 1)) * ((N + nc - 1) / nc);
			if (tiles >= want)
				break;
			if (nc > 2 * kern->nr)
				nc = round_up(nc / 2, kern->nr);
			else if (mc > kern->mr)
				mc = round_up(mc / 2, kern->mr);
			else
				break;
		}
	}
	*mc_out = mc ? mc : 1;
	*nc_out = nc;
}

struct sgemm_job {
	const struct wh_sgemm_kernel *kern;
	const struct wh_sgemm_desc *d;
	float *apack;
	const ptrdiff_t *boff;
	const float *bpack; /* B packed for kern, or NULL */
	size_t bps;         /* floats per panel of bpack (NR * K), 0 without */
	size_t mc, nc, mt, nt;
	enum wh_isa isa;
	struct pack_job *pack; /* A packed by each tile's task (its rows' panels), or NULL */
};

/* Packing panel by panel in parallel: a panel packed alone has the layout it has in the
 * whole matrix. */
struct pack_job {
	const struct wh_sgemm_kernel *kern;
	size_t M, K, rsa, csa, np; /* np: panels per matrix */
	const float *a;
	size_t a_stride;     /* matrix g at a + g*a_stride, unless a_off */
	const size_t *a_off;
	float *dst;
};

static void pack_task(void *arg, size_t begin, size_t end)
{
	struct pack_job *j = arg;
	for (size_t t = begin; t < end; t++) {
		size_t g = t / j->np, i0 = (t % j->np) * j->kern->mr;
		size_t m = j->M - i0 < j->kern->mr ? j->M - i0 : j->kern->mr;
		const float *a = j->a + (j->a_off ? j->a_off[g] : g * j->a_stride) + i0 * j->rsa;
		wh_sgemm_pack_a(j->kern, m, j->K, a, j->rsa, j->csa, j->dst + g * j->M * j->K + i0 * j->K);
	}
}

static void pack_parallel(struct pack_job *j, struct wh_threadpool *pool, size_t count)
{
	j->np = (j->M + j->kern->mr - 1) / j->kern->mr;
	size_t per = j->kern->mr * (j->K ? j->K : 1);
	size_t grain = ((size_t)1 << 15) / per;
	wh_parallel_for(pool, count * j->np, grain ? grain : 1, pack_task, j);
}

void wh_sgemm_pack_groups(const struct wh_sgemm_kernel *kern, struct wh_threadpool *pool, size_t G,
			  size_t M, size_t K, const float *a, size_t a_stride, size_t rsa, size_t csa,
			  float *dst)
{
	struct pack_job j = {.kern = kern, .M = M, .K = K, .rsa = rsa, .csa = csa, .a = a,
			     .a_stride = a_stride, .dst = dst};
	pack_parallel(&j, pool, G);
}

/* The fused bias Add and activation of an m x n tile at column n0 (wh_sgemm_desc.col_bias,
 * fin), right after its products: a tile as wide as the matrix is one block. */
static void finish_tile(const struct wh_sgemm_desc *d, enum wh_isa isa, float *c, size_t m, size_t n, size_t n0)
{
	bool whole = n == d->ldc;
	if (whole) {
		/* rows back to back: the bias along the whole block, repeated (one call, not one a
		 * row: a projection to 24 channels has 784 rows) */
		if (d->col_bias)
			wh_ew_bin_f32_periodic(isa, WH_EW_ADD, c, d->col_bias, n, false, c, m * n, 0);
		wh_out_round_apply(d->fin, c, m * n);
		return;
	}
	for (size_t i = 0; i < m; i++) {
		float *ci = c + i * d->ldc;
		if (d->col_bias) {
			/* the Add's own row kernel: a + b exactly rounded, whichever ISA */
			const float *b = d->col_bias + n0;
			if (isa >= WH_ISA_AVX512)
				wh_ew_bin_f32_avx512(WH_EW_ADD, ci, 1, b, 1, ci, n);
			else if (isa >= WH_ISA_AVX2)
				wh_ew_bin_f32_avx2(WH_EW_ADD, ci, 1, b, 1, ci, n);
			else
				wh_ew_bin_f32_scalar(WH_EW_ADD, ci, 1, b, 1, ci, n);
		}
		wh_out_round_apply(d->fin, ci, n);
	}
}

static void sgemm_task(void *arg, size_t begin, size_t end)
{
	struct sgemm_job *j = arg;
	const struct wh_sgemm_desc *d = j->d;
	for (size_t t = begin; t < end; t++) {
		size_t bi = t / (j->mt * j->nt), r = t % (j->mt * j->nt);
		size_t m0 = (r / j->nt) * j->mc, n0 = (r % j->nt) * j->nc;
		size_t m = d->M - m0 < j->mc ? d->M - m0 : j->mc;
		size_t n = d->N - n0 < j->nc ? d->N - n0 : j->nc;
		/* n0 is a multiple of nc, itself a multiple of NR: a packed B's tile starts a panel */
		const float *b = j->bps ? j->bpack + n0 / j->kern->nr * j->bps
					: d->b + (d->b_off ? d->b_off[bi] : 0) + n0;
		float *c = d->c + (d->c_off ? d->c_off[bi] : 0) + m0 * d->ldc + n0;
		if (j->pack) /* this tile's rows are its own (one column tile): pack them here */
			pack_task(j->pack, bi * j->pack->np + m0 / j->kern->mr,
				  bi * j->pack->np + (m0 + m + j->kern->mr - 1) / j->kern->mr);
		block_kb(j->kern, m, n, d->K, d->kb, j->apack + bi * d->M * d->K + m0 * d->K, b, j->bps, j->boff, c,
			 d->ldc, d->bias ? d->bias + m0 : NULL);
		if (d->col_bias || d->fin)
			finish_tile(d, j->isa, c, m, n, n0);
	}
}

enum wh_status wh_sgemm_run(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_sgemm_desc *d)
{
	if (d->M == 0 || d->N == 0 || d->batch == 0)
		return WH_OK;
	struct wh_sgemm_kernel kern;
	wh_sgemm_kernel_get(cpu->isa, &kern);
	uint64_t mk, apack_n, work;
	if (!wh_mul_u64(d->M, d->K, &mk) || !wh_mul_u64(mk, d->batch, &apack_n) ||
	    apack_n > WH_MAX_ELEMENTS || !wh_mul_u64(apack_n, d->N, &work))
		return wh_error(WH_ERR_OVERFLOW, "gemm: %zux%zux%zu times %zu is too large (use smaller inputs)",
				d->M, d->K, d->N, d->batch);
	enum wh_status st = WH_OK;
	float *apack = malloc((apack_n ? apack_n : 1) * sizeof(float));
	ptrdiff_t *boff = malloc((d->K ? d->K : 1) * sizeof(ptrdiff_t));
	if (!apack || !boff) {
		st = wh_error(WH_ERR_NOMEM, "gemm: out of memory packing a %zux%zu matrix", d->M, d->K);
		goto out;
	}
	bool packed = d->bpack != NULL;
	if (packed && (d->bpack_nr != kern.nr || d->batch != 1)) {
		st = wh_error(WH_ERR_INTERNAL, "gemm: B was packed in panels of %zu columns for a kernel of %zu, batch %zu (report this bug)",
			      d->bpack_nr, kern.nr, d->batch);
		goto out;
	}
	for (size_t k = 0; k < d->K; k++)
		boff[k] = (ptrdiff_t)(k * (packed ? kern.nr : d->ldb));
	/* Small products are not worth waking the pool for. */
	if (work < ((uint64_t)1 << 16))
		pool = NULL;
	struct sgemm_job job = {.kern = &kern, .d = d, .apack = apack, .boff = boff,
				.bpack = packed ? d->bpack : NULL, .bps = packed ? kern.nr * d->K : 0, .isa = cpu->isa};
	struct pack_job pj = {.kern = &kern, .M = d->M, .K = d->K, .rsa = d->rsa, .csa = d->csa, .a = d->a,
			      .a_off = d->a_off, .dst = apack};
	/* a batch of at least four items a thread (window attention's products, 49 x 49 over
	 * 16 windows) is balanced by its items: each item's tiles stay whole instead of being
	 * cut to single row panels, which only adds calls */
	int threads = wh_threadpool_size(pool);
	wh_sgemm_tiles(&kern, d->M, d->N, d->K, d->batch >= 4 * (size_t)threads ? 1 : threads, &job.mc, &job.nc);
	/* a fused bias and activation (finish_tile) run once over a tile as wide as the matrix,
	 * and row by row over a narrower one (a 32-wide column tile of an MLP's first Linear:
	 * two calls or more per 32 outputs): such products are cut along the rows only */
	if ((d->col_bias || d->fin) && job.nc < d->N && d->N <= 512) {
		size_t want = 4 * (size_t)threads;
		job.nc = round_up(d->N, kern.nr);
		job.mc = d->M <= 16 * kern.mr ? d->M : 16 * kern.mr;
		while ((d->M + job.mc - 1) / job.mc * d->batch < want && job.mc > kern.mr)
			job.mc = round_up(job.mc / 2, kern.mr);
	}
	job.mt = (d->M + job.mc - 1) / job.mc;
	job.nt = (d->N + job.nc - 1) / job.nc;
	/* with one column tile every row panel of A is read by one task: it packs them itself,
	 * right before its product (no separate pass over the pool, and the panels still in
	 * cache); otherwise A is packed first, in parallel. The same packed values either way. */
	if (job.nt == 1) {
		pj.np = (d->M + kern.mr - 1) / kern.mr;
		job.pack = &pj;
	} else {
		pack_parallel(&pj, pool, d->batch);
	}
	wh_parallel_for(pool, d->batch * job.mt * job.nt, 1, sgemm_task, &job);
out:
	free(apack);
	free(boff);
	return st;
}

void wh_sgemm_ref(size_t M, size_t N, size_t K, const float *a, size_t rsa, size_t csa,
		  const float *b, size_t rsb, size_t csb, float *c, size_t ldc, const float *bias)
{
	for (size_t i = 0; i < M; i++) {
		float *ci = c + i * ldc;
		for (size_t j = 0; j < N; j++)
			ci[j] = 0.0f;
		/* i-k-j order: each element still sums its products in k order from zero. */
		for (size_t k = 0; k < K; k++) {
			float aik = a[i * rsa + k * csa];
			const float *bk = b + k * rsb;
			for (size_t j = 0; j < N; j++)
				ci[j] += aik * bk[j * csb];
		}
		if (bias)
			for (size_t j = 0; j < N; j++)
				ci[j] += bias[i];
	}
}

/* ---- float views of reduced-precision tensors ---- */

static bool is_half(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

/* A float32 copy of an fp16/bf16 tensor's elements (caller frees). */
static enum wh_status half_to_f32(const struct wh_tensor *t, float **out)
{
	float *f = malloc((t->count ? t->count : 1) * sizeof(float));
	if (!f)
		return wh_error(WH_ERR_NOMEM, "matmul: out of memory converting %llu elements to float32",
				(unsigned long long)t->count);
	const uint16_t *h = t->data;
	for (uint64_t i = 0; i < t->count; i++)
		f[i] = t->dtype == WH_DT_FLOAT16 ? wh_f16_to_f32(h[i]) : wh_bf16_to_f32(h[i]);
	*out = f;
	return WH_OK;
}

static void f32_to_half(const float *f, struct wh_tensor *t)
{
	uint16_t *h = t->data;
	for (uint64_t i = 0; i < t->count; i++)
		h[i] = t->dtype == WH_DT_FLOAT16 ? wh_f32_to_f16(f[i]) : wh_f32_to_bf16(f[i]);
}

/* ---- MatMul shapes (numpy matmul semantics) ---- */

struct mm_shape {
	int64_t M, N, K;
	int32_t out_rank;
	int64_t out_dims[WH_MAX_RANK];
	size_t batch;
	size_t *a_off, *b_off, *c_off; /* element offsets of each matrix of the batch */
	bool a_batched, b_batched;
};

static void mm_shape_release(struct mm_shape *s)
{
	free(s->a_off);
	free(s->b_off);
	free(s->c_off);
	s->a_off = s->b_off = s->c_off = NULL;
}

static enum wh_status mm_shape_init(struct wh_kernel_ctx *ctx, const struct wh_tensor *A,
				    const struct wh_tensor *B, struct mm_shape *s)
{
	char sa[64], sb[64];
	memset(s, 0, sizeof *s);
	if (A->rank < 1 || B->rank < 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s, matmul needs at least 1-d inputs",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
	s->K = A->dims[A->rank - 1];
	s->M = A->rank >= 2 ? A->dims[A->rank - 2] : 1;
	int64_t kb = B->rank >= 2 ? B->dims[B->rank - 2] : B->dims[0];
	s->N = B->rank >= 2 ? B->dims[B->rank - 1] : 1;
	if (kb != s->K)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s: inner dimensions %lld and %lld differ",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb), (long long)s->K, (long long)kb);
	int32_t ra = A->rank > 2 ? A->rank - 2 : 0, rb = B->rank > 2 ? B->rank - 2 : 0;
	int32_t br = ra > rb ? ra : rb;
	int64_t bd[WH_MAX_RANK];
	for (int32_t d = 0; d < br; d++) {
		int64_t x = d - (br - ra) >= 0 ? A->dims[d - (br - ra)] : 1;
		int64_t y = d - (br - rb) >= 0 ? B->dims[d - (br - rb)] : 1;
		if (x != y && x != 1 && y != 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s: batch dimensions do not broadcast",
					      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
					      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
		bd[d] = x == 1 ? y : x;
	}
	s->out_rank = 0;
	for (int32_t d = 0; d < br; d++)
		s->out_dims[s->out_rank++] = bd[d];
	if (A->rank >= 2)
		s->out_dims[s->out_rank++] = s->M;
	if (B->rank >= 2)
		s->out_dims[s->out_rank++] = s->N;
	uint64_t batch, cnt;
	if (!wh_shape_count(bd, br, &batch) || !wh_shape_count(s->out_dims, s->out_rank, &cnt))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output of inputs %s and %s is too large",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
	s->batch = (size_t)batch;
	s->a_batched = ra > 0;
	s->b_batched = rb > 0;
	size_t n = s->batch ? s->batch : 1;
	s->a_off = malloc(n * sizeof(size_t));
	s->b_off = malloc(n * sizeof(size_t));
	s->c_off = malloc(n * sizeof(size_t));
	if (!s->a_off || !s->b_off || !s->c_off) {
		mm_shape_release(s);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for %zu batch offsets", n);
	}
	/* Strides of each input's batch dimensions in matrices, 0 where broadcast. */
	int64_t stra[WH_MAX_RANK], strb[WH_MAX_RANK];
	int64_t accA = 1, accB = 1;
	for (int32_t d = br - 1; d >= 0; d--) {
		int32_t da = d - (br - ra), db = d - (br - rb);
		int64_t xa = da >= 0 ? A->dims[da] : 1, xb = db >= 0 ? B->dims[db] : 1;
		stra[d] = xa == 1 ? 0 : accA;
		strb[d] = xb == 1 ? 0 : accB;
		accA *= xa;
		accB *= xb;
	}
	size_t mk = (size_t)(s->M * s->K), kn = (size_t)(s->K * s->N), mn = (size_t)(s->M * s->N);
	int64_t idx[WH_MAX_RANK] = {0};
	for (size_t b = 0; b < s->batch; b++) {
		size_t oa = 0, ob = 0;
		for (int32_t d = 0; d < br; d++) {
			oa += (size_t)(idx[d] * stra[d]);
			ob += (size_t)(idx[d] * strb[d]);
		}
		s->a_off[b] = oa * mk;
		s->b_off[b] = ob * kn;
		s->c_off[b] = b * mn;
		for (int32_t d = br - 1; d >= 0; d--) {
			if (++idx[d] < bd[d])
				break;
			idx[d] = 0;
		}
	}
	return WH_OK;
}

/* ---- generic (non-float32) products ---- */

static uint64_t store_int(struct wh_tensor *t, uint64_t i, uint64_t v)
{
	switch (t->dtype) {
	case WH_DT_INT32: ((int32_t *)t->data)[i] = (int32_t)(uint32_t)v; break;
	case WH_DT_UINT32: ((uint32_t *)t->data)[i] = (uint32_t)v; break;
	case WH_DT_INT64: ((int64_t *)t->data)[i] = (int64_t)v; break;
	case WH_DT_UINT64: ((uint64_t *)t->data)[i] = v; break;
	default: break;
	}
	return v;
}

/* Integer products wrap modulo 2^bits as the hardware does (unsigned arithmetic, no UB). */
static void mm_int(const struct mm_shape *s, const struct wh_tensor *A, const struct wh_tensor *B,
		   struct wh_tensor *Y)
{
	for (size_t b = 0; b < s->batch; b++)
		for (int64_t i = 0; i < s->M; i++)
			for (int64_t j = 0; j < s->N; j++) {
				uint64_t acc = 0;
				for (int64_t k = 0; k < s->K; k++) {
					uint64_t x = (uint64_t)wh_tensor_get_i64(A, s->a_off[b] + (uint64_t)(i * s->K + k));
					uint64_t y = (uint64_t)wh_tensor_get_i64(B, s->b_off[b] + (uint64_t)(k * s->N + j));
					acc += x * y;
				}
				store_int(Y, s->c_off[b] + (uint64_t)(i * s->N + j), acc);
			}
}

static void mm_double(const struct mm_shape *s, const double *A, const double *B, double *Y)
{
	for (size_t b = 0; b < s->batch; b++)
		for (int64_t i = 0; i < s->M; i++) {
			double *y = Y + s->c_off[b] + i * s->N;
			for (int64_t j = 0; j < s->N; j++)
				y[j] = 0;
			for (int64_t k = 0; k < s->K; k++) {
				double a = A[s->a_off[b] + i * s->K + k];
				const double *bk = B + s->b_off[b] + k * s->N;
				for (int64_t j = 0; j < s->N; j++)
					y[j] += a * bk[j];
			}
		}
}

/* float32 product of a batch described by s (fast path). */
static enum wh_status mm_f32(struct wh_kernel_ctx *ctx, const struct wh_cpu_features *cpu,
			     const struct mm_shape *s, const float *A, const float *B, float *Y, bool pack,
			     const float *col_bias, const struct wh_out_round *fin)
{
	struct wh_sgemm_desc d = {
		.M = (size_t)s->M, .N = (size_t)s->N, .K = (size_t)s->K, .batch = s->batch,
		.a = A, .rsa = (size_t)s->K, .csa = 1, .a_off = s->a_off,
		.b = B, .ldb = (size_t)s->N, .b_off = s->b_off,
		.c = Y, .ldc = (size_t)s->N, .c_off = s->c_off,
		.col_bias = col_bias, .fin = fin,
	};
	/* a constant 2-d B (a weight) is read from the engine's packed copy when it has one */
	if (pack && !s->b_batched && wh_kin(ctx, 1)->rank == 2) {
		struct wh_sgemm_kernel kern;
		wh_sgemm_kernel_get(cpu->isa, &kern);
		d.bpack = wh_gemm_packed_b(ctx, 1, &kern, d.K, d.N, false);
		d.bpack_nr = kern.nr;
	}
	/* With B shared by the whole batch, A's matrices are rows of one tall matrix. */
	if (!s->b_batched && s->batch > 1) {
		d.M = (size_t)s->M * s->batch;
		d.batch = 1;
		d.a_off = d.b_off = d.c_off = NULL;
	}
	return wh_sgemm_run(cpu, ctx->pool, &d);
}

/* Below this many outputs a MatMul leaves its fused bias Add and activation to their own
 * layers: their tensors stay in cache anyway, and per-tile epilogue calls on short rows may
 * cost more than the pass they save (an earlier row-by-row version made bert 7 % slower;
 * this one, at 4K, measured the same as at 64K on bert and vit_timm). */
#define MM_FUSE_MIN_OUTPUTS ((uint64_t)1 << 14)

/* Whether this float MatMul finishes its output with the fused bias Add and activation the
 * runtime offers (ctx->round_out, runtime.c plan_fusions): only when the bias runs along the
 * output's last axis alone (so the Add's output has the MatMul's shape), and no rounding to
 * a storage format is asked for. Fills *col_bias and *fin (NULL: that part absent). */
static bool mm_fusion(const struct wh_kernel_ctx *ctx, const struct wh_tensor *Y, int64_t N,
		      const float **col_bias, const struct wh_out_round **fin)
{
	const struct wh_out_round *r = ctx->round_out;
	if (!r || !r->act || r->fn || Y->count < MM_FUSE_MIN_OUTPUTS)
		return false;
	const struct wh_epilogue *e = r->act;
	const struct wh_tensor *b = e->bias;
	if (b) {
		if (b->dtype != WH_DT_FLOAT || b->rank < 1 || b->rank > Y->rank || b->count != (uint64_t)N ||
		    b->dims[b->rank - 1] != N || !b->data)
			return false;
		*col_bias = b->data;
	}
	*fin = e->bias_only ? NULL : r;
	return true;
}

static enum wh_status matmul_common(struct wh_kernel_ctx *ctx, const struct wh_cpu_features *cpu)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *B = wh_kin(ctx, 1);
	if (!A || !B)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B");
	if (A->dtype != B->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs have types %s and %s, expected the same",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype));
	enum wh_dtype dt = A->dtype;
	if (dt != WH_DT_FLOAT && dt != WH_DT_DOUBLE && !is_half(dt) && dt != WH_DT_INT32 &&
	    dt != WH_DT_INT64 && dt != WH_DT_UINT32 && dt != WH_DT_UINT64)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "type %s is not supported", wh_dtype_name(dt));
	struct mm_shape s;
	enum wh_status st = mm_shape_init(ctx, A, B, &s);
	if (st)
		return st;
	float *fa = NULL, *fb = NULL, *fy = NULL;
	st = wh_tensor_alloc(&ctx->outputs[0], dt, s.out_rank, s.out_dims);
	if (st)
		goto out;
	struct wh_tensor *Y = &ctx->outputs[0];
	if (dt == WH_DT_FLOAT) {
		const float *col_bias = NULL;
		const struct wh_out_round *fin = NULL;
		bool fuse = mm_fusion(ctx, Y, s.N, &col_bias, &fin);
		st = mm_f32(ctx, cpu, &s, A->data, B->data, Y->data, true, col_bias, fin);
		if (st == WH_OK && fuse)
			ctx->outputs_rounded = true;
	} else if (is_half(dt)) {
		if ((st = half_to_f32(A, &fa)) || (st = half_to_f32(B, &fb)))
			goto out;
		fy = malloc((Y->count ? Y->count : 1) * sizeof(float));
		if (!fy) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
			goto out;
		}
		if ((st = mm_f32(ctx, cpu, &s, fa, fb, fy, false, NULL, NULL)))
			goto out;
		f32_to_half(fy, Y);
	} else if (dt == WH_DT_DOUBLE) {
		mm_double(&s, A->data, B->data, Y->data);
	} else {
		mm_int(&s, A, B, Y);
	}
out:
	free(fa);
	free(fb);
	free(fy);
	mm_shape_release(&s);
	return st;
}

/* ---- Gemm ---- */

/* Gemm's shared checks and geometry (gemm-internal.h). */
enum wh_status wh_gemm_geometry(const struct wh_kernel_ctx *ctx, const struct wh_tensor *A, const struct wh_tensor *B,
				const struct wh_tensor *C, struct wh_gemm_geom *g)
{
	char sa[64], sb[64], sc[64];
	if (A->rank != 2 || B->rank != 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "inputs have shapes %s and %s, expected 2-d matrices",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb));
	g->ta = wh_node_attr_int(ctx->node, "transA", 0) != 0;
	g->tb = wh_node_attr_int(ctx->node, "transB", 0) != 0;
	g->alpha = wh_node_attr_float(ctx->node, "alpha", 1.0f);
	g->beta = wh_node_attr_float(ctx->node, "beta", 1.0f);
	g->M = g->ta ? A->dims[1] : A->dims[0];
	g->K = g->ta ? A->dims[0] : A->dims[1];
	int64_t kb = g->tb ? B->dims[1] : B->dims[0];
	g->N = g->tb ? B->dims[0] : B->dims[1];
	if (kb != g->K)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "A has shape %s and B %s (transA=%d, transB=%d): inner dimensions %lld and %lld differ",
				      wh_shape_str(A->dims, A->rank, sa, sizeof sa),
				      wh_shape_str(B->dims, B->rank, sb, sizeof sb), g->ta, g->tb, (long long)g->K,
				      (long long)kb);
	/* C broadcasts to M x N (unidirectionally) */
	g->cstr[0] = g->cstr[1] = 0;
	if (C) {
		if (C->rank > 2)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "C has shape %s, expected at most 2-d",
					      wh_shape_str(C->dims, C->rank, sc, sizeof sc));
		int64_t cd[2] = {1, 1};
		for (int32_t d = 0; d < C->rank; d++)
			cd[2 - C->rank + d] = C->dims[d];
		if ((cd[0] != g->M && cd[0] != 1) || (cd[1] != g->N && cd[1] != 1))
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "C has shape %s, which does not broadcast to %lldx%lld",
					      wh_shape_str(C->dims, C->rank, sc, sizeof sc), (long long)g->M, (long long)g->N);
		g->cstr[0] = cd[0] == 1 ? 0 : cd[1];
		g->cstr[1] = cd[1] == 1 ? 0 : 1;
	}
	return WH_OK;
}

static enum wh_status gemm_common(struct wh_kernel_ctx *ctx, const struct wh_cpu_features *cpu)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *B = wh_kin(ctx, 1), *C = wh_kin(ctx, 2);
	if (!A || !B)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B");
	enum wh_dtype dt = A->dtype;
	if (B->dtype != dt || (C && C->dtype != dt))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs have different types (%s, %s%s%s)",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype), C ? ", " : "",
				      C ? wh_dtype_name(C->dtype) : "");
	if (dt != WH_DT_FLOAT && dt != WH_DT_DOUBLE && !is_half(dt) && dt != WH_DT_INT32 &&
	    dt != WH_DT_INT64 && dt != WH_DT_UINT32 && dt != WH_DT_UINT64)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "type %s is not supported", wh_dtype_name(dt));
	struct wh_gemm_geom gg;
	enum wh_status gst = wh_gemm_geometry(ctx, A, B, C, &gg);
	if (gst != WH_OK)
		return gst;
	bool ta = gg.ta, tb = gg.tb;
	float alpha = gg.alpha, beta = gg.beta;
	int64_t M = gg.M, N = gg.N, K = gg.K;
	int64_t cstr[2] = {gg.cstr[0], gg.cstr[1]};
	int64_t yd[2] = {M, N};
	enum wh_status st = wh_tensor_alloc(&ctx->outputs[0], dt, 2, yd);
	if (st)
		return st;
	struct wh_tensor *Y = &ctx->outputs[0];
	float *fa = NULL, *fb = NULL, *fc = NULL, *fy = NULL, *bt = NULL;
	if (dt == WH_DT_FLOAT || is_half(dt)) {
		const float *a = A->data, *b = B->data, *c = C ? C->data : NULL;
		float *y = Y->data;
		if (is_half(dt)) {
			if ((st = half_to_f32(A, &fa)) || (st = half_to_f32(B, &fb)) ||
			    (C && (st = half_to_f32(C, &fc))))
				goto out;
			fy = malloc((Y->count ? Y->count : 1) * sizeof(float));
			if (!fy) {
				st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
				goto out;
			}
			a = fa, b = fb, c = fc, y = fy;
		}
		/* a weight is read from the engine's packed copy when it has one (transB included) */
		struct wh_sgemm_kernel kern;
		wh_sgemm_kernel_get(cpu->isa, &kern);
		const float *bpack = dt == WH_DT_FLOAT ? wh_gemm_packed_b(ctx, 1, &kern, (size_t)K, (size_t)N, tb) : NULL;
		if (tb && !bpack) {
			/* The engine reads B by rows: transpose it once. */
			bt = malloc((B->count ? B->count : 1) * sizeof(float));
			if (!bt) {
				st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory transposing B");
				goto out;
			}
			/* in 32 x 32 tiles: a plain double loop strides through bt (or b) a row at a
			 * time and misses the cache on every element (0.4 ms for a 512 x 288 B) */
			for (int64_t n0 = 0; n0 < N; n0 += 32)
				for (int64_t k0 = 0; k0 < K; k0 += 32) {
					int64_t n1 = n0 + 32 < N ? n0 + 32 : N, k1 = k0 + 32 < K ? k0 + 32 : K;
					for (int64_t n = n0; n < n1; n++)
						for (int64_t k = k0; k < k1; k++)
							bt[k * N + n] = b[n * K + k];
				}
			b = bt;
		}
		struct wh_sgemm_desc d = {
			.M = (size_t)M, .N = (size_t)N, .K = (size_t)K, .batch = 1,
			.a = a, .rsa = ta ? 1 : (size_t)K, .csa = ta ? (size_t)M : 1,
			.b = b, .ldb = (size_t)N, .c = y, .ldc = (size_t)N,
			.bpack = bpack, .bpack_nr = kern.nr,
		};
		if ((st = wh_sgemm_run(cpu, ctx->pool, &d)))
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
		if (is_half(dt))
			f32_to_half(fy, Y);
	} else {
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				uint64_t ai = ta ? 1 : (uint64_t)K, ak = ta ? (uint64_t)M : 1;
				uint64_t bk = tb ? 1 : (uint64_t)N, bj = tb ? (uint64_t)K : 1;
				double acc = 0;
				if (dt == WH_DT_DOUBLE) {
					const double *a = A->data, *b = B->data;
					for (int64_t k = 0; k < K; k++)
						acc += a[(uint64_t)i * ai + (uint64_t)k * ak] * b[(uint64_t)k * bk + (uint64_t)j * bj];
				} else {
					uint64_t iacc = 0;
					for (int64_t k = 0; k < K; k++)
						iacc += (uint64_t)wh_tensor_get_i64(A, (uint64_t)i * ai + (uint64_t)k * ak) *
							(uint64_t)wh_tensor_get_i64(B, (uint64_t)k * bk + (uint64_t)j * bj);
					acc = (double)(int64_t)iacc;
				}
				double v = (double)alpha * acc;
				if (C)
					v += (double)beta * wh_tensor_get_f64(C, (uint64_t)(i * cstr[0] + j * cstr[1]));
				wh_tensor_set_f64(Y, (uint64_t)(i * N + j), v);
			}
	}
out:
	free(fa);
	free(fb);
	free(fc);
	free(fy);
	free(bt);
	return st;
}

static enum wh_status matmul_run(struct wh_kernel_ctx *ctx)
{
	return matmul_common(ctx, ctx->cpu);
}

static enum wh_status gemm_run(struct wh_kernel_ctx *ctx)
{
	return gemm_common(ctx, ctx->cpu);
}

/* ---- tactics: the float32 engine with its micro-kernel forced ---- */

static bool tac_ok(const struct wh_kernel_ctx *ctx, enum wh_isa isa)
{
	const struct wh_tensor *a = wh_kin(ctx, 0);
	return a && (a->dtype == WH_DT_FLOAT || is_half(a->dtype)) && ctx->cpu->isa >= isa;
}

#define WH_GEMM_TACTICS(ISA, NAME)                                                 \
	static bool tac_ok_##NAME(const struct wh_kernel_ctx *ctx)                 \
	{                                                                          \
		return tac_ok(ctx, ISA);                                           \
	}                                                                          \
	static enum wh_status gemm_##NAME(struct wh_kernel_ctx *ctx)               \
	{                                                                          \
		struct wh_cpu_features cpu = *ctx->cpu;                            \
		cpu.isa = ISA;                                                     \
		return gemm_common(ctx, &cpu);                                     \
	}                                                                          \
	static enum wh_status matmul_##NAME(struct wh_kernel_ctx *ctx)             \
	{                                                                          \
		struct wh_cpu_features cpu = *ctx->cpu;                            \
		cpu.isa = ISA;                                                     \
		return matmul_common(ctx, &cpu);                                   \
	}
WH_GEMM_TACTICS(WH_ISA_SCALAR, scalar)
WH_GEMM_TACTICS(WH_ISA_AVX2, avx2)
WH_GEMM_TACTICS(WH_ISA_AVX512, avx512)

#define WH_NUM_SCALAR "packed GEMM, 4x16 tiles; float32 multiply then add (two roundings) over k in order"
#define WH_NUM_AVX2 "packed GEMM, 6x16 tiles; float32 fused multiply-adds over k in order"
#define WH_NUM_AVX512 "packed GEMM, 12x32 tiles; float32 fused multiply-adds over k in order"

static const struct wh_tactic gemm_tactics[] = {
	{1, "gemm-scalar", WH_NUM_SCALAR "; then alpha*sum + beta*C", tac_ok_scalar, gemm_scalar},
	{2, "gemm-avx2", WH_NUM_AVX2 "; then alpha*sum + beta*C", tac_ok_avx2, gemm_avx2},
	{3, "gemm-avx512", WH_NUM_AVX512 "; then alpha*sum + beta*C", tac_ok_avx512, gemm_avx512},
	WH_GEMM_EXTRA_TACTICS,
	WH_GEMM_FP16ACC_TACTICS,
};

static const struct wh_tactic matmul_tactics[] = {
	{1, "matmul-scalar", WH_NUM_SCALAR, tac_ok_scalar, matmul_scalar},
	{2, "matmul-avx2", WH_NUM_AVX2, tac_ok_avx2, matmul_avx2},
	{3, "matmul-avx512", WH_NUM_AVX512, tac_ok_avx512, matmul_avx512},
	WH_MATMUL_EXTRA_TACTICS,
	WH_MATMUL_FP16ACC_TACTICS,
};

/* ---- MatMulInteger and QLinearMatMul ---- */

static bool is_8bit(const struct wh_tensor *t)
{
	return t->dtype == WH_DT_UINT8 || t->dtype == WH_DT_INT8;
}

/* Value of a per-tensor / per-row (a) / per-column (b) parameter for matrix b, row i or
 * column j; count-based: 1 = per tensor, M (or N) = per row (column) shared by the batch,
 * batch*M (batch*N) = one set per matrix. */
static bool qparam_index(const struct wh_tensor *p, size_t batch, int64_t len, size_t b, int64_t i,
			 uint64_t *idx_out)
{
	if (!p || p->count == 1) {
		*idx_out = 0;
		return true;
	}
	if (p->count == (uint64_t)len) {
		*idx_out = (uint64_t)i;
		return true;
	}
	if (p->count == (uint64_t)len * batch) {
		*idx_out = (uint64_t)b * (uint64_t)len + (uint64_t)i;
		return true;
	}
	return false;
}

/* Integer product of 8-bit inputs with zero points, int32 accumulation (wrapping), with the
 * integer GEMM (qgemm-internal.h). A batch whose B is shared and whose A and C matrices are
 * consecutive is one product of batch * M rows. */
static enum wh_status mm_integer(struct wh_kernel_ctx *ctx, const struct mm_shape *s,
				 const struct wh_tensor *A, const struct wh_tensor *azp,
				 const struct wh_tensor *B, uint32_t b_input, const struct wh_tensor *bzp, int32_t *acc)
{
	uint64_t t;
	if (!qparam_index(azp, s->batch, s->M, 0, 0, &t) || !qparam_index(bzp, s->batch, s->N, 0, 0, &t))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "zero points must be scalars, per row of A or per column of B");
	if (s->batch == 0 || s->M == 0 || s->N == 0)
		return WH_OK;
	bool merged = s->batch > 1;
	for (size_t b = 0; merged && b < s->batch; b++)
		merged = s->b_off[b] == s->b_off[0] && s->a_off[b] == b * (size_t)(s->M * s->K) &&
			 s->c_off[b] == b * (size_t)(s->M * s->N);
	if (bzp && bzp->count != 1 && bzp->count != (uint64_t)s->N)
		merged = false;
	size_t rows = merged ? s->batch * (size_t)s->M : (size_t)s->M;
	int32_t *za = malloc((rows + (size_t)s->N) * sizeof(int32_t));
	if (!za)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the zero points");
	int32_t *zb = za + rows;
	enum wh_status st = WH_OK;
	/* a 2-D initializer B: packed once per engine */
	const int32_t *bsum = NULL;
	const int8_t *bp = B->rank == 2 ? wh_qgemm_packed_b(ctx, b_input, (size_t)s->K, (size_t)s->N,
							       B->dtype == WH_DT_INT8 ? 0 : 0x80, &bsum)
					: NULL;
	for (size_t b = 0; b < s->batch && !st; b++) {
		if (merged && b > 0)
			break;
		for (size_t r = 0; r < rows; r++) {
			size_t bb = merged ? r / (size_t)s->M : b;
			uint64_t ia = 0;
			qparam_index(azp, s->batch, s->M, bb, (int64_t)(r % (size_t)s->M), &ia);
			za[r] = azp ? (int32_t)wh_tensor_get_i64(azp, ia) : 0;
		}
		for (int64_t j = 0; j < s->N; j++) {
			uint64_t ib = 0;
			qparam_index(bzp, s->batch, s->N, b, j, &ib);
			zb[j] = bzp ? (int32_t)wh_tensor_get_i64(bzp, ib) : 0;
		}
		st = wh_qmatmul(ctx->cpu, ctx->pool, rows, (size_t)s->N, (size_t)s->K,
				(const uint8_t *)A->data + s->a_off[b], A->dtype == WH_DT_INT8, za,
				(const uint8_t *)B->data + s->b_off[b], B->dtype == WH_DT_INT8, zb, bp, bsum,
				acc + s->c_off[b]);
	}
	free(za);
	if (st)
		return wh_kernel_fail(ctx, st, "out of memory for the packed operands");
	return WH_OK;
}

static enum wh_status matmul_integer_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *B = wh_kin(ctx, 1);
	const struct wh_tensor *azp = wh_kin(ctx, 2), *bzp = wh_kin(ctx, 3);
	if (!A || !B)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs A and B");
	if (!is_8bit(A) || !is_8bit(B) || (azp && azp->dtype != A->dtype) || (bzp && bzp->dtype != B->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "types %s and %s are not supported (expected int8/uint8 with matching zero points)",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype));
	struct mm_shape s;
	enum wh_status st = mm_shape_init(ctx, A, B, &s);
	if (st)
		return st;
	st = wh_tensor_alloc(&ctx->outputs[0], WH_DT_INT32, s.out_rank, s.out_dims);
	if (!st)
		st = mm_integer(ctx, &s, A, azp, B, 1, bzp, ctx->outputs[0].data);
	mm_shape_release(&s);
	return st;
}

/* Rounds like the ONNX reference's arithmetic in the scale's own type. */
static float round_scale(enum wh_dtype dt, float v)
{
	if (dt == WH_DT_FLOAT16)
		return wh_round_f16(v);
	if (dt == WH_DT_BFLOAT16)
		return wh_round_bf16(v);
	return v;
}

static float scale_at(const struct wh_tensor *t, uint64_t i)
{
	return (float)wh_tensor_get_f64(t, i);
}

static enum wh_status qlinear_matmul_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *A = wh_kin(ctx, 0), *as = wh_kin(ctx, 1), *azp = wh_kin(ctx, 2);
	const struct wh_tensor *B = wh_kin(ctx, 3), *bs = wh_kin(ctx, 4), *bzp = wh_kin(ctx, 5);
	const struct wh_tensor *ys = wh_kin(ctx, 6), *yzp = wh_kin(ctx, 7);
	if (!A || !as || !B || !bs || !ys)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs a, a_scale, b, b_scale and y_scale");
	if (!is_8bit(A) || !is_8bit(B) || (yzp && !is_8bit(yzp)))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "types %s and %s are not supported (expected int8/uint8)",
				      wh_dtype_name(A->dtype), wh_dtype_name(B->dtype));
	if (!wh_dtype_is_float(as->dtype) || !wh_dtype_is_float(bs->dtype) || !wh_dtype_is_float(ys->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "scales must be floating point");
	if (ys->count != 1 || (yzp && yzp->count != 1))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "y_scale and y_zero_point must be scalars");
	struct mm_shape s;
	enum wh_status st = mm_shape_init(ctx, A, B, &s);
	if (st)
		return st;
	int32_t *acc = NULL;
	uint64_t t;
	if (!qparam_index(as, s.batch, s.M, 0, 0, &t) || !qparam_index(bs, s.batch, s.N, 0, 0, &t)) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "scales must be scalars, per row of a or per column of b");
		goto out;
	}
	enum wh_dtype ydt = yzp ? yzp->dtype : A->dtype;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], ydt, s.out_rank, s.out_dims)))
		goto out;
	struct wh_tensor *Y = &ctx->outputs[0];
	acc = malloc((Y->count ? Y->count : 1) * sizeof(int32_t));
	if (!acc) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the int32 accumulators");
		goto out;
	}
	if ((st = mm_integer(ctx, &s, A, azp, B, 3, bzp, acc)))
		goto out;
	float ysv = scale_at(ys, 0);
	int32_t yz = yzp ? (int32_t)wh_tensor_get_i64(yzp, 0) : 0;
	bool y_s8 = ydt == WH_DT_INT8;
	float *mult = malloc((s.N ? (size_t)s.N : 1) * sizeof(float));
	if (!mult) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the multipliers");
		goto out;
	}
	/* one multiplier per output column of the row (the same for every row when a's scale
	 * is a scalar) */
	bool per_row = as->count != 1;
	for (size_t b = 0; b < s.batch; b++)
		for (int64_t i = 0; i < s.M; i++) {
			uint64_t ia = 0;
			qparam_index(as, s.batch, s.M, b, i, &ia);
			if (per_row || i == 0)
				for (int64_t j = 0; j < s.N; j++) {
					uint64_t ib = 0;
					qparam_index(bs, s.batch, s.N, b, j, &ib);
					float m = round_scale(as->dtype, scale_at(as, ia) * scale_at(bs, ib));
					mult[j] = round_scale(as->dtype, m / ysv);
				}
			uint64_t o = s.c_off[b] + (uint64_t)(i * s.N);
			wh_q_requant(acc + o, (size_t)s.N, mult, 1, yz, y_s8, (uint8_t *)Y->data + o, ctx->cpu);
		}
	free(mult);
out:
	free(acc);
	mm_shape_release(&s);
	return st;
}

const struct wh_op_def wh_ops_gemm[] = {
	{"", "Gemm", 1, gemm_run, gemm_tactics, sizeof gemm_tactics / sizeof gemm_tactics[0]},
	{"", "MatMul", 1, matmul_run, matmul_tactics, sizeof matmul_tactics / sizeof matmul_tactics[0]},
	{"", "MatMulInteger", 10, matmul_integer_run, NULL, 0},
	{"", "QLinearMatMul", 10, qlinear_matmul_run, NULL, 0},
};
const size_t wh_ops_gemm_count = sizeof wh_ops_gemm / sizeof wh_ops_gemm[0];
