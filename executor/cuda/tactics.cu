/* The CUDA module's tactics (executor/cuda/tactics.h; docs/gpu.md, "Tactics"): cuBLASLt's
 * heuristic algorithms with their split-K variants and compute types for MatMul/Gemm, and
 * cuDNN's forward algorithms with their math types for Conv. A tactic's name is built from
 * what identifies it (algorithm id, tile, stages, split-K, reduction scheme, ...) so that the
 * same device and libraries give the same names for the same layer, run after run. */
#include "executor/cuda/tactics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct tac_request g_tac;
static char tac_err[512];

const char *tac_error(void) { return tac_err; }

static int tfail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int tfail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tac_err, sizeof tac_err, fmt, ap);
	va_end(ap);
	return -1;
}

bool tac_acc16(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	return n > 6 && !strcmp(name + n - 6, "-acc16");
}

static void list_add(const char *name, const char *notes, uint32_t flags)
{
	if (!g_tac.list || !g_tac.n)
		return;
	for (int32_t i = 0; i < *g_tac.n; i++)
		if (!strcmp(g_tac.list[i].name, name))
			return;
	if (*g_tac.n >= g_tac.max)
		return;
	struct whcu_tactic *t = &g_tac.list[(*g_tac.n)++];
	snprintf(t->name, sizeof t->name, "%s", name);
	snprintf(t->notes, sizeof t->notes, "%s", notes);
	t->flags = flags;
}

/* ---- cuBLASLt ---- */

struct lt_cand {
	char name[WHCU_TACTIC_NAME];
	char notes[160];
	uint32_t flags;
	cublasLtMatmulAlgo_t algo;
};

static const char *red_name(uint32_t s)
{
	return s == CUBLASLT_REDUCTION_SCHEME_INPLACE ? "inplace" : s == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE ? "compute"
	       : s == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE                                         ? "output"
												    : "none";
}

static uint32_t cfg_u32(const cublasLtMatmulAlgo_t *a, cublasLtMatmulAlgoConfigAttributes_t at)
{
	uint32_t v = 0;
	size_t w = 0;
	if (cublasLtMatmulAlgoConfigGetAttribute(a, at, &v, sizeof v, &w) != CUBLAS_STATUS_SUCCESS)
		return 0;
	return w == 2 ? (v & 0xffff) : v;
}

static void cand_name(struct lt_cand *c, int acc16, uint32_t extra)
{
	int32_t id = (int32_t)cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_ID);
	uint32_t tile = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_TILE_ID), stages = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
	uint32_t sk = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), red = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
	uint32_t sw = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING), cust = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
	uint32_t inner = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID), cl = cfg_u32(&c->algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
	if (sk < 1)
		sk = 1;
	int o = snprintf(c->name, sizeof c->name, "lt-a%d-t%u-s%u-k%u-red-%s", id, tile, stages, sk, red_name(red));
	if (sw && o < (int)sizeof c->name)
		o += snprintf(c->name + o, sizeof c->name - (size_t)o, "-sw%u", sw);
	if (cust && o < (int)sizeof c->name)
		o += snprintf(c->name + o, sizeof c->name - (size_t)o, "-c%u", cust);
	if (inner && o < (int)sizeof c->name)
		o += snprintf(c->name + o, sizeof c->name - (size_t)o, "-i%u", inner);
	if (cl && o < (int)sizeof c->name)
		o += snprintf(c->name + o, sizeof c->name - (size_t)o, "-cl%u", cl);
	if (acc16 && o < (int)sizeof c->name)
		snprintf(c->name + o, sizeof c->name - (size_t)o, "-acc16");
	c->flags = extra | (sk > 1 ? WHCU_TAC_SPLITK : 0) | (acc16 ? WHCU_TAC_FP16ACC : 0);
	char sks[96] = "no split-K";
	if (sk > 1)
		snprintf(sks, sizeof sks, "split-K %u, %s reduction", sk, red_name(red));
	snprintf(c->notes, sizeof c->notes, "cuBLASLt algo %d, tile %u, stages %u; %s; %s", id, tile, stages, sks,
		 acc16 ? "fp16 accumulation (reduced-precision reduction)" : "fp32 accumulation");
}

/* the problem's candidates for these descriptors: the heuristic's answers, then split-K
 * variants of the first ones that allow it (deduplicated by name, in a fixed order) */
static int lt_enum(const struct tac_gemm *p, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
		   cublasLtMatrixLayout_t lc, int acc16, struct lt_cand *out, int max)
{
	cublasLtMatmulPreference_t pref = NULL;
	cublasLtMatmulHeuristicResult_t heur[8];
	int found = 0, n = 0;
	if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS)
		return tfail("cuBLASLt: no preference descriptor");
	cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &p->ws_bytes, sizeof p->ws_bytes);
	cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(p->lt, op, la, lb, lc, lc, pref, 8, heur, &found);
	cublasLtMatmulPreferenceDestroy(pref);
	if (s != CUBLAS_STATUS_SUCCESS)
		found = 0;
	for (int i = 0; i < found && n < max; i++) {
		if (heur[i].state != CUBLAS_STATUS_SUCCESS || heur[i].workspaceSize > p->ws_bytes)
			continue;
		struct lt_cand c;
		c.algo = heur[i].algo;
		cand_name(&c, acc16, i == 0 && !acc16 ? WHCU_TAC_DEFAULT : 0);
		bool dup = false;
		for (int j = 0; j < n && !dup; j++)
			dup = !strcmp(out[j].name, c.name);
		if (!dup)
			out[n++] = c;
	}
	for (int i = 0; i < found && i < 3 && n < max; i++) {
		int32_t splitk = 0;
		uint32_t mask = 0;
		size_t w = 0;
		if (heur[i].state != CUBLAS_STATUS_SUCCESS ||
		    cublasLtMatmulAlgoCapGetAttribute(&heur[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT, &splitk, sizeof splitk, &w) != CUBLAS_STATUS_SUCCESS ||
		    !splitk ||
		    cublasLtMatmulAlgoCapGetAttribute(&heur[i].algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &mask, sizeof mask, &w) != CUBLAS_STATUS_SUCCESS)
			continue;
		static const uint32_t splits[] = {2, 4, 8};
		static const uint32_t schemes[] = {CUBLASLT_REDUCTION_SCHEME_INPLACE, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE,
						   CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE};
		for (uint32_t si = 0; si < 3 && n < max; si++) {
			if ((uint64_t)p->k < (uint64_t)splits[si] * 64)
				continue;
			for (uint32_t ri = 0; ri < 3 && n < max; ri++) {
				if (!(mask & schemes[ri]))
					continue;
				struct lt_cand c;
				c.algo = heur[i].algo;
				cublasLtMatmulHeuristicResult_t r;
				if (cublasLtMatmulAlgoConfigSetAttribute(&c.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits[si], sizeof splits[si]) != CUBLAS_STATUS_SUCCESS ||
				    cublasLtMatmulAlgoConfigSetAttribute(&c.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &schemes[ri], sizeof schemes[ri]) != CUBLAS_STATUS_SUCCESS ||
				    cublasLtMatmulAlgoCheck(p->lt, op, la, lb, lc, lc, &c.algo, &r) != CUBLAS_STATUS_SUCCESS || r.workspaceSize > p->ws_bytes)
					continue;
				cand_name(&c, acc16, 0);
				bool dup = false;
				for (int j = 0; j < n && !dup; j++)
					dup = !strcmp(out[j].name, c.name);
				if (!dup)
					out[n++] = c;
			}
		}
	}
	return n;
}

/* lt_enum's answers per problem and compute type, kept for the process: a build runs each
 * tactic several times, and the heuristic query with its checks costs more than a small
 * GEMM (the same answers every time: the query is deterministic) */
struct lt_memo {
	int64_t m, n, k, batch, sa, sb;
	int ta, tb, beta, acc16;
	int32_t in_t, prec;
	int n_cand;
	struct lt_cand c[16];
};
static struct lt_memo g_memo[96];
static int g_memo_n, g_memo_next;

static int lt_enum_memo(const struct tac_gemm *p, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
			cublasLtMatrixLayout_t lc, int acc16, const struct lt_cand **out)
{
	for (int i = 0; i < g_memo_n; i++) {
		struct lt_memo *e = &g_memo[i];
		if (e->m == p->m && e->n == p->n && e->k == p->k && e->batch == p->batch && e->sa == p->sa && e->sb == p->sb &&
		    e->ta == p->ta && e->tb == p->tb && e->beta == p->beta && e->acc16 == acc16 && e->in_t == (int32_t)p->in_t &&
		    e->prec == p->prec) {
			*out = e->c;
			return e->n_cand;
		}
	}
	struct lt_memo *e = &g_memo[g_memo_n < 96 ? g_memo_n++ : (g_memo_next++ % 96)];
	e->m = p->m, e->n = p->n, e->k = p->k, e->batch = p->batch, e->sa = p->sa, e->sb = p->sb;
	e->ta = p->ta, e->tb = p->tb, e->beta = p->beta, e->acc16 = acc16, e->in_t = (int32_t)p->in_t, e->prec = p->prec;
	e->n_cand = lt_enum(p, op, la, lb, lc, acc16, e->c, 16);
	if (e->n_cand < 0)
		e->n_cand = 0;
	*out = e->c;
	return e->n_cand;
}

struct lt_descs {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
};

static void descs_free(struct lt_descs *d)
{
	if (d->lc)
		cublasLtMatrixLayoutDestroy(d->lc);
	if (d->lb)
		cublasLtMatrixLayoutDestroy(d->lb);
	if (d->la)
		cublasLtMatrixLayoutDestroy(d->la);
	if (d->op)
		cublasLtMatmulDescDestroy(d->op);
	memset(d, 0, sizeof *d);
}

/* the descriptors gemm_lt makes for this problem and compute type */
static int descs_make(const struct tac_gemm *p, int acc16, struct lt_descs *d)
{
	memset(d, 0, sizeof *d);
	cublasComputeType_t comp = acc16 ? CUBLAS_COMPUTE_16F : p->prec == WHCU_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	cudaDataType_t scale_t = acc16 ? CUDA_R_16F : CUDA_R_32F, out_t = acc16 ? CUDA_R_16F : CUDA_R_32F;
	cublasOperation_t opa = p->tb ? CUBLAS_OP_T : CUBLAS_OP_N, opb = p->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
	uint64_t ra = p->tb ? (uint64_t)p->k : (uint64_t)p->n, ca = p->tb ? (uint64_t)p->n : (uint64_t)p->k;
	uint64_t rb = p->ta ? (uint64_t)p->m : (uint64_t)p->k, cb = p->ta ? (uint64_t)p->k : (uint64_t)p->m;
	int32_t bc = (int32_t)p->batch;
	int64_t sy = p->m * p->n, sa = p->sa, sb = p->sb;
	bool ok = cublasLtMatmulDescCreate(&d->op, comp, scale_t) == CUBLAS_STATUS_SUCCESS &&
		  cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa) == CUBLAS_STATUS_SUCCESS &&
		  cublasLtMatmulDescSetAttribute(d->op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb) == CUBLAS_STATUS_SUCCESS &&
		  cublasLtMatrixLayoutCreate(&d->la, p->in_t, ra, ca, (int64_t)ra) == CUBLAS_STATUS_SUCCESS &&
		  cublasLtMatrixLayoutCreate(&d->lb, p->in_t, rb, cb, (int64_t)rb) == CUBLAS_STATUS_SUCCESS &&
		  cublasLtMatrixLayoutCreate(&d->lc, out_t, (uint64_t)p->n, (uint64_t)p->m, p->n) == CUBLAS_STATUS_SUCCESS;
	if (ok && p->batch > 1)
		ok = cublasLtMatrixLayoutSetAttribute(d->la, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatrixLayoutSetAttribute(d->la, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sb, sizeof sb) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatrixLayoutSetAttribute(d->lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatrixLayoutSetAttribute(d->lb, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sa, sizeof sa) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatrixLayoutSetAttribute(d->lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc) == CUBLAS_STATUS_SUCCESS &&
		     cublasLtMatrixLayoutSetAttribute(d->lc, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &sy, sizeof sy) == CUBLAS_STATUS_SUCCESS;
	if (!ok) {
		descs_free(d);
		return tfail("cuBLASLt: cannot describe a %lldx%lldx%lld GEMM", (long long)p->m, (long long)p->n, (long long)p->k);
	}
	return 0;
}

void tac_gemm_list(const struct tac_gemm *p)
{
	for (int acc16 = 0; acc16 < 2; acc16++) {
		if (acc16 && !(p->prec == WHCU_PREC_FP16 && g_tac.allow_reduced && !p->beta))
			break;
		struct lt_descs d;
		if (descs_make(p, acc16, &d))
			continue;
		const struct lt_cand *c;
		int n = lt_enum_memo(p, d.op, d.la, d.lb, d.lc, acc16, &c);
		for (int i = 0; i < n; i++)
			list_add(c[i].name, c[i].notes, c[i].flags);
		descs_free(&d);
	}
}

int tac_gemm_find(const struct tac_gemm *p, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t la, cublasLtMatrixLayout_t lb,
		  cublasLtMatrixLayout_t lc, int acc16, const char *name, cublasLtMatmulAlgo_t *out)
{
	if (acc16 && p->prec != WHCU_PREC_FP16)
		return tfail("tactic '%s' accumulates in fp16 and the layer does not run at fp16 (rebuild the tactic replay)", name);
	const struct lt_cand *c;
	int n = lt_enum_memo(p, op, la, lb, lc, acc16, &c);
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, name)) {
			*out = c[i].algo;
			return 0;
		}
	return tfail("tactic '%s' is not one cuBLASLt offers for this %lldx%lldx%lld GEMM on this GPU and library (rebuild the tactic replay here)",
		     name, (long long)p->m, (long long)p->n, (long long)p->k);
}

/* ---- cuDNN ---- */

static const char *const conv_algo_names[] = {"implicit-gemm", "implicit-precomp-gemm", "gemm", "direct",
					      "fft", "fft-tiling", "winograd", "winograd-nonfused"};
static const char *const conv_algo_words[] = {"implicit GEMM", "implicit precomputed GEMM", "explicit GEMM (im2col)", "direct",
					      "FFT", "FFT tiling", "Winograd (fused)", "Winograd (non-fused)"};

static const char *math_name(cudnnMathType_t m)
{
	return m == CUDNN_TENSOR_OP_MATH ? "tensorop" : m == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? "tensorop-conv"
	       : m == CUDNN_FMA_MATH                                                         ? "fma"
											     : "default";
}

static bool math_ok(int32_t prec, cudnnMathType_t m)
{
	/* fp32 layers keep to FMA math (TF32 off), as the default path does */
	return prec == WHCU_PREC_FP32 ? m == CUDNN_FMA_MATH : true;
}

static void conv_name(int algo, cudnnMathType_t m, char *buf, size_t len)
{
	snprintf(buf, len, "cudnn-%s-%s", algo >= 0 && algo < 8 ? conv_algo_names[algo] : "unknown", math_name(m));
}

static int conv_perf(cudnnHandle_t h, cudnnTensorDescriptor_t tx, cudnnFilterDescriptor_t fw, cudnnConvolutionDescriptor_t cv,
		     cudnnTensorDescriptor_t ty, cudnnConvolutionFwdAlgoPerf_t *perf, int max)
{
	int got = 0;
	if (cudnnGetConvolutionForwardAlgorithm_v7(h, tx, fw, cv, ty, max, &got, perf) != CUDNN_STATUS_SUCCESS)
		return 0;
	return got;
}

void tac_conv_list(cudnnHandle_t h, cudnnTensorDescriptor_t tx, cudnnFilterDescriptor_t fw, cudnnConvolutionDescriptor_t cv,
		   cudnnTensorDescriptor_t ty, int32_t prec, int dflt_algo, cudnnMathType_t dflt_math)
{
	cudnnConvolutionFwdAlgoPerf_t perf[32];
	int got = conv_perf(h, tx, fw, cv, ty, perf, 32);
	for (int i = 0; i < got; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_ok(prec, perf[i].mathType) || (int)perf[i].algo < 0 || (int)perf[i].algo >= 8 ||
		    perf[i].memory > ((size_t)1 << 30))
			continue;
		char name[WHCU_TACTIC_NAME], notes[160];
		int a = (int)perf[i].algo;
		conv_name(a, perf[i].mathType, name, sizeof name);
		uint32_t flags = (a == 4 || a == 5 ? WHCU_TAC_FFT : 0) | (a == 6 || a == 7 ? WHCU_TAC_WINOGRAD : 0) |
				 (perf[i].determinism == CUDNN_NON_DETERMINISTIC ? WHCU_TAC_NONDET : 0) |
				 (perf[i].mathType == CUDNN_TENSOR_OP_MATH || perf[i].mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION ? WHCU_TAC_TENSOROP : 0) |
				 (a == dflt_algo && perf[i].mathType == dflt_math ? WHCU_TAC_DEFAULT : 0);
		snprintf(notes, sizeof notes, "cuDNN %s, %s math; %s", conv_algo_words[a], math_name(perf[i].mathType),
			 perf[i].determinism == CUDNN_NON_DETERMINISTIC ? "nondeterministic" : "deterministic");
		list_add(name, notes, flags);
	}
}

int tac_conv_find(cudnnHandle_t h, cudnnTensorDescriptor_t tx, cudnnFilterDescriptor_t fw, cudnnConvolutionDescriptor_t cv,
		  cudnnTensorDescriptor_t ty, int32_t prec, const char *name, int *algo, cudnnMathType_t *math)
{
	cudnnConvolutionFwdAlgoPerf_t perf[32];
	int got = conv_perf(h, tx, fw, cv, ty, perf, 32);
	for (int i = 0; i < got; i++) {
		char nm[WHCU_TACTIC_NAME];
		if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_ok(prec, perf[i].mathType))
			continue;
		conv_name((int)perf[i].algo, perf[i].mathType, nm, sizeof nm);
		if (!strcmp(nm, name)) {
			*algo = (int)perf[i].algo;
			*math = perf[i].mathType;
			return 0;
		}
	}
	return tfail("tactic '%s' is not one cuDNN offers for this convolution on this GPU and library at this precision (rebuild the tactic replay here)", name);
}
