/* Extra Conv tactics (tactics-extra.h, docs/tactics.md): direct loops with the taps outside
 * the channels, explicit im2col + GEMM, Winograd F(2x2, 3x3), 1x1 as one GEMM, and an
 * fp16-accumulating direct kernel. Geometry is read from the node as conv.c reads it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/gemm-internal.h"
#include "executor/ops/tactics-extra.h"

#define TX_ATTR_MAX ((int64_t)1 << 32)

static int64_t prod_dims(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

/* ---- geometry from the node (the rules of conv.c's Conv) ---- */

/* Eligibility checks read the geometry too, quietly: only a run reports why it failed. */
static enum wh_status gfail(const struct wh_kernel_ctx *ctx, bool report, enum wh_status st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static enum wh_status gfail(const struct wh_kernel_ctx *ctx, bool report, enum wh_status st, const char *fmt, ...)
{
	if (!report)
		return st;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return wh_kernel_fail(ctx, st, "%s", msg);
}

static enum wh_status read_ints(const struct wh_kernel_ctx *ctx, bool report, const char *name, int64_t want,
				int64_t dflt, int64_t lo, int64_t *out)
{
	const int64_t *v;
	int64_t n = wh_node_attr_ints(ctx->node, name, &v);
	if (n < 0) {
		for (int64_t i = 0; i < want; i++)
			out[i] = dflt;
		return WH_OK;
	}
	if (n != want)
		return gfail(ctx, report, WH_ERR_INVALID, "attribute %s has %lld values, expected %lld", name,
			     (long long)n, (long long)want);
	for (int64_t i = 0; i < n; i++) {
		if (v[i] < lo || v[i] > TX_ATTR_MAX)
			return gfail(ctx, report, WH_ERR_INVALID, "attribute %s has value %lld, expected %lld..%lld", name,
				     (long long)v[i], (long long)lo, (long long)TX_ATTR_MAX);
		out[i] = v[i];
	}
	return WH_OK;
}

static enum wh_status conv_geometry(const struct wh_kernel_ctx *ctx, bool report, struct wh_conv_shape *s)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1);
	char bx[64], bw[64];
	memset(s, 0, sizeof *s);
	if (!x || !w)
		return gfail(ctx, report, WH_ERR_INVALID, "needs inputs X and W");
	if (x->rank < 3 || w->rank != x->rank)
		return gfail(ctx, report, WH_ERR_SHAPE, "X has shape %s and W %s, expected the same rank of at least 3",
			     wh_shape_str(x->dims, x->rank, bx, sizeof bx), wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	int nsp = x->rank - 2;
	s->nsp = nsp;
	s->N = x->dims[0];
	s->C = x->dims[1];
	s->G = wh_node_attr_int(ctx->node, "group", 1);
	if (s->G < 1 || s->G > TX_ATTR_MAX)
		return gfail(ctx, report, WH_ERR_INVALID, "group is %lld, expected at least 1", (long long)s->G);
	if (s->C % s->G)
		return gfail(ctx, report, WH_ERR_SHAPE, "X has %lld channels, not a multiple of group %lld",
			     (long long)s->C, (long long)s->G);
	s->M = w->dims[0];
	if (w->dims[1] != s->C / s->G || s->M % s->G)
		return gfail(ctx, report, WH_ERR_SHAPE,
			     "W has shape %s, expected [M, C/group, k...] with %lld input channels per group and output channels a multiple of group %lld",
			     wh_shape_str(w->dims, w->rank, bw, sizeof bw), (long long)(s->C / s->G), (long long)s->G);
	for (int d = 0; d < nsp; d++) {
		s->in[d] = x->dims[2 + d];
		s->k[d] = w->dims[2 + d];
		if (s->in[d] < 1 || s->k[d] < 1)
			return gfail(ctx, report, WH_ERR_SHAPE, "X has shape %s and W %s: spatial sizes must be at least 1",
				     wh_shape_str(x->dims, x->rank, bx, sizeof bx), wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	}
	const int64_t *ks;
	int64_t nk = wh_node_attr_ints(ctx->node, "kernel_shape", &ks);
	if (nk >= 0) {
		bool ok = nk == nsp;
		for (int d = 0; ok && d < nsp; d++)
			ok = ks[d] == s->k[d];
		if (!ok)
			return gfail(ctx, report, WH_ERR_SHAPE, "kernel_shape does not match W of shape %s",
				     wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	}
	enum wh_status st;
	int64_t pads[2 * WH_MAX_RANK];
	if ((st = read_ints(ctx, report, "strides", nsp, 1, 1, s->stride)) ||
	    (st = read_ints(ctx, report, "dilations", nsp, 1, 1, s->dil)) ||
	    (st = read_ints(ctx, report, "pads", 2 * nsp, 0, 0, pads)))
		return st;
	char buf[32];
	const char *ap = wh_node_attr_string(ctx->node, "auto_pad", "NOTSET", buf, sizeof buf);
	bool same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"), valid = !strcmp(ap, "VALID");
	if (!same && !valid && strcmp(ap, "NOTSET") && ap[0])
		return gfail(ctx, report, WH_ERR_INVALID,
			     "auto_pad is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
	for (int d = 0; d < nsp; d++) {
		int64_t dk, in = s->in[d], sd = s->stride[d];
		if (!wh_mul_i64(s->k[d] - 1, s->dil[d], &dk) || !wh_add_i64(dk, 1, &dk))
			return gfail(ctx, report, WH_ERR_OVERFLOW, "dilated kernel is too large");
		s->pad0[d] = same || valid ? 0 : pads[d];
		s->pad1[d] = same || valid ? 0 : pads[nsp + d];
		if (same) {
			int64_t out = (in + sd - 1) / sd;
			int64_t total = (out - 1) * sd + dk - in;
			if (total < 0)
				total = 0;
			s->pad0[d] = !strcmp(ap, "SAME_UPPER") ? total / 2 : total - total / 2;
			s->pad1[d] = total - s->pad0[d];
		}
		int64_t span = in + s->pad0[d] + s->pad1[d];
		if (span < dk)
			return gfail(ctx, report, WH_ERR_SHAPE,
				     "X has shape %s: padded spatial size %lld is smaller than the dilated kernel %lld",
				     wh_shape_str(x->dims, x->rank, bx, sizeof bx), (long long)span, (long long)dk);
		s->out[d] = (span - dk) / sd + 1;
	}
	int64_t yd[WH_MAX_RANK];
	uint64_t cnt, wk;
	yd[0] = s->N;
	yd[1] = s->M;
	for (int d = 0; d < nsp; d++)
		yd[2 + d] = s->out[d];
	if (!wh_shape_count(yd, x->rank, &cnt) || !wh_mul_u64((uint64_t)prod_dims(s->k, nsp), (uint64_t)s->C, &wk) ||
	    wk > WH_MAX_ELEMENTS)
		return gfail(ctx, report, WH_ERR_OVERFLOW, "output of X %s and W %s is too large",
			     wh_shape_str(x->dims, x->rank, bx, sizeof bx), wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	return WH_OK;
}

bool wh_tx_conv_supports(enum wh_tx_conv_algo algo, const struct wh_conv_shape *s)
{
	if (algo == WH_TX_CONV_WINOGRAD)
		return s->nsp == 2 && s->G == 1 && s->k[0] == 3 && s->k[1] == 3 && s->stride[0] == 1 &&
		       s->stride[1] == 1 && s->dil[0] == 1 && s->dil[1] == 1;
	if (algo == WH_TX_CONV_1X1) {
		for (int d = 0; d < s->nsp; d++)
			if (s->k[d] != 1 || s->stride[d] != 1 || s->pad0[d] || s->pad1[d])
				return false;
		return true;
	}
	return true;
}

/* ---- row walking shared by the direct loops and im2col ----
 *
 * An output plane is rows of its last dimension. For kernel tap kx and output row o (all
 * dims but the last), row_span gives the input offset of the row's first output and the
 * range [lo, hi) of outputs in the row whose input lies inside (the others read padding). */
struct tx_geo {
	const struct wh_conv_shape *s;
	int nsp;
	int64_t P, Pin, KS, Cg, Mg, L, rows;
	int64_t instr[WH_MAX_RANK];
};

static void geo_init(const struct wh_conv_shape *s, struct tx_geo *g)
{
	g->s = s;
	g->nsp = s->nsp;
	g->P = prod_dims(s->out, s->nsp);
	g->Pin = prod_dims(s->in, s->nsp);
	g->KS = prod_dims(s->k, s->nsp);
	g->Cg = s->C / s->G;
	g->Mg = s->M / s->G;
	g->L = s->out[s->nsp - 1];
	g->rows = g->P / g->L;
	wh_shape_strides(s->in, s->nsp, g->instr);
}

/* kx: the tap's multi-index; row: the row number. False when the row reads only padding. */
static bool row_span(const struct tx_geo *g, const int64_t *kx, int64_t row, int64_t *off_out, int64_t *lo_out,
		     int64_t *hi_out)
{
	const struct wh_conv_shape *s = g->s;
	int last = g->nsp - 1;
	int64_t off = 0;
	for (int d = last - 1; d >= 0; d--) {
		int64_t o = row % s->out[d];
		row /= s->out[d];
		int64_t i = o * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d];
		if (i < 0 || i >= s->in[d])
			return false;
		off += i * g->instr[d];
	}
	/* input column of output o: o*st + base, base = kx*dil - pad0 */
	int64_t st = s->stride[last], base = kx[last] * s->dil[last] - s->pad0[last];
	int64_t lo = base >= 0 ? 0 : (-base + st - 1) / st;
	int64_t hi = s->in[last] - base <= 0 ? 0 : (s->in[last] - base + st - 1) / st;
	if (hi > g->L)
		hi = g->L;
	if (lo > hi)
		lo = hi;
	*off_out = off + base;
	*lo_out = lo;
	*hi_out = hi;
	return lo < hi;
}

static void tap_index(const struct wh_conv_shape *s, int64_t kp, int64_t *kx)
{
	for (int d = s->nsp - 1; d >= 0; d--) {
		kx[d] = kp % s->k[d];
		kp /= s->k[d];
	}
}

/* ---- direct loops ---- */

struct direct_job {
	struct tx_geo g;
	const float *x, *w, *b;
	float *y;
};

/* yp[o] += x * wv over the rows of one (channel, tap) pair. */
static void direct_pass(const struct tx_geo *g, const float *xc, float wv, const int64_t *kx, float *yp)
{
	int64_t st = g->s->stride[g->nsp - 1];
	for (int64_t r = 0; r < g->rows; r++) {
		int64_t off, lo, hi;
		if (!row_span(g, kx, r, &off, &lo, &hi))
			continue;
		float *yr = yp + r * g->L;
		for (int64_t o = lo; o < hi; o++)
			yr[o] += xc[off + o * st] * wv;
	}
}

/* One output plane (image, output channel): every output sums over taps in order, and for
 * each tap over its group's input channels in order, skipping the padding. */
static void direct_task(void *arg, size_t begin, size_t end)
{
	const struct direct_job *j = arg;
	const struct tx_geo *g = &j->g;
	const struct wh_conv_shape *s = g->s;
	for (size_t t = begin; t < end; t++) {
		int64_t n = (int64_t)t / s->M, co = (int64_t)t % s->M, grp = co / g->Mg;
		float *yp = j->y + (int64_t)t * g->P;
		for (int64_t p = 0; p < g->P; p++)
			yp[p] = 0.0f;
		const float *x0 = j->x + (n * s->C + grp * g->Cg) * g->Pin, *w0 = j->w + co * g->Cg * g->KS;
		int64_t kx[WH_MAX_RANK];
		for (int64_t kp = 0; kp < g->KS; kp++) {
			tap_index(s, kp, kx);
			for (int64_t ci = 0; ci < g->Cg; ci++)
				direct_pass(g, x0 + ci * g->Pin, w0[ci * g->KS + kp], kx, yp);
		}
		if (j->b) {
			float bv = j->b[co];
			for (int64_t p = 0; p < g->P; p++)
				yp[p] += bv;
		}
	}
}

static enum wh_status conv_direct(struct wh_threadpool *pool, const struct wh_conv_shape *s, const float *x,
				  const float *w, const float *b, float *y)
{
	struct direct_job j = {.x = x, .w = w, .b = b, .y = y};
	geo_init(s, &j.g);
	uint64_t work;
	if (!wh_mul_u64((uint64_t)j.g.P, (uint64_t)(j.g.KS * j.g.Cg), &work))
		work = UINT64_MAX;
	size_t grain = work ? (size_t)(((uint64_t)1 << 16) / work) : 1;
	wh_parallel_for(pool, (size_t)(s->N * s->M), grain ? grain : 1, direct_task, &j);
	return WH_OK;
}

/* ---- explicit im2col, then the GEMM engine ---- */

/* The column buffer holds at most about this many floats; more rows of output at once
 * only save GEMM calls. */
#define TX_COL_FLOATS ((size_t)1 << 22)

struct col_job {
	struct tx_geo g;
	const float *xg; /* the group's first input channel of the image */
	int64_t r0, nr;  /* output rows of this chunk */
	float *col;      /* [Cg*KS][nr*L] */
};

static void col_task(void *arg, size_t begin, size_t end)
{
	const struct col_job *j = arg;
	const struct tx_geo *g = &j->g;
	int64_t st = g->s->stride[g->nsp - 1], pc = j->nr * g->L;
	int64_t kx[WH_MAX_RANK];
	for (size_t row = begin; row < end; row++) {
		int64_t ci = (int64_t)row / g->KS, kp = (int64_t)row % g->KS;
		tap_index(g->s, kp, kx);
		const float *xc = j->xg + ci * g->Pin;
		float *dst = j->col + (int64_t)row * pc;
		for (int64_t r = 0; r < j->nr; r++) {
			float *dr = dst + r * g->L;
			int64_t off, lo, hi;
			if (!row_span(g, kx, j->r0 + r, &off, &lo, &hi)) {
				memset(dr, 0, (size_t)g->L * sizeof(float));
				continue;
			}
			for (int64_t o = 0; o < lo; o++)
				dr[o] = 0.0f;
			for (int64_t o = lo; o < hi; o++)
				dr[o] = xc[off + o * st];
			for (int64_t o = hi; o < g->L; o++)
				dr[o] = 0.0f;
		}
	}
}

/* fp16 accumulation over a column chunk, in segments of TX_F16_SEG outputs: for every
 * (channel, tap) row of the buffer in order, one fp16 step for each of the group's output
 * channels, then the bias; a segment's rows stay in cache across the output channels. */
#define TX_F16_SEG 256

struct f16_job {
	const float *col, *w, *b; /* w: the group's first filter; b: the group's first bias or NULL */
	float *y;                 /* the group's first output plane at the chunk */
	size_t kc, pc, P, mg;
	wh_tx_axpy_f16_fn axpy;
};

static void f16_task(void *arg, size_t begin, size_t end)
{
	const struct f16_job *j = arg;
	for (size_t sg = begin; sg < end; sg++) {
		size_t o0 = sg * TX_F16_SEG, n = j->pc - o0 < TX_F16_SEG ? j->pc - o0 : TX_F16_SEG;
		for (size_t m = 0; m < j->mg; m++)
			memset(j->y + m * j->P + o0, 0, n * sizeof(float));
		for (size_t k = 0; k < j->kc; k++)
			for (size_t m = 0; m < j->mg; m++)
				j->axpy(j->y + m * j->P + o0, j->col + k * j->pc + o0, 1, j->w[m * j->kc + k], n);
		for (size_t m = 0; j->b && m < j->mg; m++)
			j->axpy(j->y + m * j->P + o0, &j->b[m], 0, 1.0f, n); /* bias * 1 is exact */
	}
}

/* Fills the column buffer chunk by chunk and runs the product on each: the GEMM engine, or
 * (axpy set) fp16-accumulating rows. */
static enum wh_status conv_columns(enum wh_isa isa, wh_tx_axpy_f16_fn axpy, struct wh_threadpool *pool,
				   const struct wh_conv_shape *s, const float *x, const float *w, const float *b,
				   float *y)
{
	struct col_job j;
	geo_init(s, &j.g);
	const struct tx_geo *g = &j.g;
	if (g->Mg == 0 || g->P == 0 || s->N == 0)
		return WH_OK;
	size_t kc = (size_t)(g->Cg * g->KS), per_row = kc * (size_t)g->L;
	size_t nr = per_row ? TX_COL_FLOATS / per_row : (size_t)g->rows;
	if (nr < 1)
		nr = 1;
	if (nr > (size_t)g->rows)
		nr = (size_t)g->rows;
	uint64_t col_n;
	if (!wh_mul_u64(per_row, nr, &col_n) || col_n > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "conv: im2col buffer of %zu x %zu floats is too large (use another tactic)",
				kc, (size_t)g->L);
	float *col = malloc((col_n ? col_n : 1) * sizeof(float));
	if (!col)
		return wh_error(WH_ERR_NOMEM, "conv: out of memory for an im2col buffer of %llu floats",
				(unsigned long long)col_n);
	struct wh_cpu_features cpu = *wh_cpu();
	cpu.isa = isa;
	enum wh_status st = WH_OK;
	j.col = col;
	for (int64_t n = 0; n < s->N && !st; n++)
		for (int64_t grp = 0; grp < s->G && !st; grp++)
			for (int64_t r0 = 0; r0 < g->rows && !st; r0 += (int64_t)nr) {
				j.r0 = r0;
				j.nr = g->rows - r0 < (int64_t)nr ? g->rows - r0 : (int64_t)nr;
				j.xg = x + (n * s->C + grp * g->Cg) * g->Pin;
				size_t pc = (size_t)(j.nr * g->L);
				size_t grain = ((size_t)1 << 14) / (pc ? pc : 1);
				wh_parallel_for(pool, kc, grain ? grain : 1, col_task, &j);
				float *yc = y + (n * s->M + grp * g->Mg) * g->P + r0 * g->L;
				const float *wg = w + grp * g->Mg * (int64_t)kc, *bg = b ? b + grp * g->Mg : NULL;
				if (axpy) {
					struct f16_job fj = {col, wg, bg, yc, kc, pc, (size_t)g->P, (size_t)g->Mg, axpy};
					wh_parallel_for(pool, (pc + TX_F16_SEG - 1) / TX_F16_SEG, 1, f16_task, &fj);
					continue;
				}
				struct wh_sgemm_desc d = {
					.M = (size_t)g->Mg, .N = pc, .K = kc, .batch = 1,
					.a = wg, .rsa = kc, .csa = 1,
					.b = col, .ldb = pc,
					.c = yc, .ldc = (size_t)g->P,
					.bias = bg,
				};
				st = wh_sgemm_run(&cpu, pool, &d);
			}
	free(col);
	return st;
}

static float *round_copy(const float *src, size_t n)
{
	float *d = malloc((n ? n : 1) * sizeof(float));
	if (d)
		wh_round_f16_n(src, d, n, NULL);
	return d;
}

/* fp16 hardware multiplies fp16 operands: round them once. */
static enum wh_status conv_fp16acc(enum wh_isa isa, struct wh_threadpool *pool, const struct wh_conv_shape *s,
				   const float *x, const float *w, const float *b, float *y)
{
	int64_t KS = prod_dims(s->k, s->nsp);
	size_t nx = (size_t)(s->N * s->C * prod_dims(s->in, s->nsp)), nw = (size_t)(s->M * (s->C / s->G) * KS);
	float *rx = round_copy(x, nx), *rw = round_copy(w, nw), *rb = b ? round_copy(b, (size_t)s->M) : NULL;
	enum wh_status st;
	if (!rx || !rw || (b && !rb))
		st = wh_error(WH_ERR_NOMEM, "conv: out of memory for fp16 copies of the operands");
	else
		st = conv_columns(isa, wh_tx_axpy_f16_get(isa), pool, s, rx, rw, rb, y);
	free(rx);
	free(rw);
	free(rb);
	return st;
}

/* ---- 1x1, stride 1, no padding: Y_g = W_g X_g per image and group ---- */

static enum wh_status conv_1x1(enum wh_isa isa, struct wh_threadpool *pool, const struct wh_conv_shape *s,
			       const float *x, const float *w, const float *b, float *y)
{
	int64_t P = prod_dims(s->out, s->nsp), Cg = s->C / s->G, Mg = s->M / s->G;
	if (s->N == 0 || Mg == 0 || P == 0)
		return WH_OK;
	size_t *off = malloc(2 * (size_t)s->N * sizeof(size_t));
	if (!off)
		return wh_error(WH_ERR_NOMEM, "conv: out of memory for %lld image offsets", (long long)s->N);
	for (int64_t n = 0; n < s->N; n++) {
		off[n] = (size_t)(n * s->C * P);
		off[s->N + n] = (size_t)(n * s->M * P);
	}
	struct wh_cpu_features cpu = *wh_cpu();
	cpu.isa = isa;
	enum wh_status st = WH_OK;
	for (int64_t grp = 0; grp < s->G && !st; grp++) {
		struct wh_sgemm_desc d = {
			.M = (size_t)Mg, .N = (size_t)P, .K = (size_t)Cg, .batch = (size_t)s->N,
			.a = w + grp * Mg * Cg, .rsa = (size_t)Cg, .csa = 1,
			.b = x + grp * Cg * P, .ldb = (size_t)P, .b_off = off,
			.c = y + grp * Mg * P, .ldc = (size_t)P, .c_off = off + s->N,
			.bias = b ? b + grp * Mg : NULL,
		};
		st = wh_sgemm_run(&cpu, pool, &d);
	}
	free(off);
	return st;
}

/* ---- Winograd F(2x2, 3x3) ---- */

static void wino_in_tile(const float d[4][4], float *v, size_t vs)
{
	float t[4][4];
	for (int a = 0; a < 4; a++) {
		t[a][0] = d[a][0] - d[a][2];
		t[a][1] = d[a][1] + d[a][2];
		t[a][2] = d[a][2] - d[a][1];
		t[a][3] = d[a][1] - d[a][3];
	}
	for (int j = 0; j < 4; j++) {
		v[(size_t)j * vs] = t[0][j] - t[2][j];
		v[(size_t)(4 + j) * vs] = t[1][j] + t[2][j];
		v[(size_t)(8 + j) * vs] = t[2][j] - t[1][j];
		v[(size_t)(12 + j) * vs] = t[1][j] - t[3][j];
	}
}

void wh_wino_input_scalar(const struct wh_wino_in *p)
{
	for (size_t i = 0; i < p->cnt; i++) {
		size_t t = p->t0 + i, th = t / p->tw_n, tw = t % p->tw_n;
		const float *r0 = p->plane + 2 * th * p->rs;
		float d[4][4];
		for (int a = 0; a < 4; a++) {
			const float *row = r0 + (size_t)a * p->rs;
			d[a][0] = row[tw];
			d[a][1] = row[p->half + tw];
			d[a][2] = row[tw + 1];
			d[a][3] = row[p->half + tw + 1];
		}
		wino_in_tile(d, p->v + i, p->v_stride);
	}
}

void wh_wino_output_scalar(const struct wh_wino_out *p)
{
	for (size_t i = 0; i < p->cnt; i++) {
		size_t t = p->t0 + i, th = t / p->tw_n, tw = t % p->tw_n;
		float m[4][4], s0[4], s1[4], r[2][2];
		for (int a = 0; a < 4; a++)
			for (int j = 0; j < 4; j++)
				m[a][j] = p->m[(size_t)(4 * a + j) * p->m_stride + i];
		for (int j = 0; j < 4; j++) {
			s0[j] = (m[0][j] + m[1][j]) + m[2][j];
			s1[j] = (m[1][j] - m[2][j]) - m[3][j];
		}
		r[0][0] = (s0[0] + s0[1]) + s0[2];
		r[0][1] = (s0[1] - s0[2]) - s0[3];
		r[1][0] = (s1[0] + s1[1]) + s1[2];
		r[1][1] = (s1[1] - s1[2]) - s1[3];
		size_t oy = 2 * th, ox = 2 * tw;
		for (size_t a = 0; a < 2 && oy + a < p->oh; a++)
			for (size_t j = 0; j < 2 && ox + j < p->ow; j++)
				p->y[(oy + a) * p->ow + ox + j] = p->has_bias ? r[a][j] + p->bias : r[a][j];
	}
}

struct wino_job {
	const struct wh_conv_shape *s;
	const struct wh_sgemm_kernel *kern;
	size_t C, M, th_n, tw_n, tiles, rs, half, plane_n;
	size_t T, nblk, total, nb;
	const float *x, *w, *b;
	float *planes, *wt, *u, *upack, *scratch;
	float *y;
	const ptrdiff_t *boff;
	void (*w_fn)(const float *, size_t, float *, size_t);
	void (*in_fn)(const struct wh_wino_in *);
	void (*out_fn)(const struct wh_wino_out *);
};

void wh_wino_weights_scalar(const float *gt, size_t C, float *u, size_t u_stride)
{
	const float *g0 = gt, *g1 = gt + C, *g2 = gt + 2 * C, *g3 = gt + 3 * C, *g4 = gt + 4 * C;
	const float *g5 = gt + 5 * C, *g6 = gt + 6 * C, *g7 = gt + 7 * C, *g8 = gt + 8 * C;
	for (size_t c = 0; c < C; c++) {
		/* rows of G g: row 0, (r0 + r1 + r2)/2, (r0 - r1 + r2)/2, row 2 */
		float t[4][3] = {
			{g0[c], g1[c], g2[c]},
			{0.5f * ((g0[c] + g3[c]) + g6[c]), 0.5f * ((g1[c] + g4[c]) + g7[c]), 0.5f * ((g2[c] + g5[c]) + g8[c])},
			{0.5f * ((g0[c] - g3[c]) + g6[c]), 0.5f * ((g1[c] - g4[c]) + g7[c]), 0.5f * ((g2[c] - g5[c]) + g8[c])},
			{g6[c], g7[c], g8[c]},
		};
		for (size_t a = 0; a < 4; a++) {
			u[(4 * a) * u_stride + c] = t[a][0];
			u[(4 * a + 1) * u_stride + c] = 0.5f * ((t[a][0] + t[a][1]) + t[a][2]);
			u[(4 * a + 2) * u_stride + c] = 0.5f * ((t[a][0] - t[a][1]) + t[a][2]);
			u[(4 * a + 3) * u_stride + c] = t[a][2];
		}
	}
}

/* U = G g G^T for output channel m (all input channels), stored as u[xi][m][c]. The taps
 * are first gathered per tap (into wt[m][tap][c]) so that the transform runs along the
 * channels, vectorised. */
static void wino_weight_task(void *arg, size_t begin, size_t end)
{
	const struct wino_job *j = arg;
	size_t C = j->C;
	for (size_t m = begin; m < end; m++) {
		float *gt = j->wt + m * 9 * C;
		const float *wm = j->w + m * C * 9;
		for (size_t c = 0; c < C; c++)
			for (size_t k = 0; k < 9; k++)
				gt[k * C + c] = wm[c * 9 + k];
		j->w_fn(gt, C, j->u + m * C, j->M * C);
	}
}

/* The zero-padded, column-split plane of channel (n, c) = index t. */
static void wino_plane_task(void *arg, size_t begin, size_t end)
{
	const struct wino_job *j = arg;
	const struct wh_conv_shape *s = j->s;
	size_t H = (size_t)s->in[0], W = (size_t)s->in[1];
	int64_t pt = s->pad0[0], pl = s->pad0[1];
	size_t rows = 2 * j->th_n + 2, cols = 2 * j->half;
	for (size_t t = begin; t < end; t++) {
		const float *xc = j->x + t * H * W;
		float *pp = j->planes + t * j->plane_n;
		for (size_t r = 0; r < rows; r++) {
			int64_t ih = (int64_t)r - pt;
			float *dr = pp + r * j->rs;
			bool in_row = ih >= 0 && ih < (int64_t)H;
			for (size_t q = 0; q < cols; q++) {
				int64_t iw = (int64_t)q - pl;
				float v = in_row && iw >= 0 && iw < (int64_t)W ? xc[(size_t)ih * W + (size_t)iw] : 0.0f;
				dr[(q & 1) * j->half + q / 2] = v;
			}
		}
	}
}

/* Bands of tile blocks, each with its own scratch: V [16][C][T], then M [16][M][T]. */
static void wino_band_task(void *arg, size_t begin, size_t end)
{
	const struct wino_job *j = arg;
	for (size_t band = begin; band < end; band++) {
		float *v = j->scratch + band * 16 * (j->C + j->M) * j->T, *mb = v + 16 * j->C * j->T;
		size_t b0 = band * j->total / j->nb, b1 = (band + 1) * j->total / j->nb;
		for (size_t blk = b0; blk < b1; blk++) {
			size_t n = blk / j->nblk, t0 = (blk % j->nblk) * j->T;
			size_t cnt = j->tiles - t0 < j->T ? j->tiles - t0 : j->T;
			struct wh_wino_in in = {.rs = j->rs, .half = j->half, .tw_n = j->tw_n, .t0 = t0, .cnt = cnt,
						.v_stride = j->C * j->T};
			for (size_t c = 0; c < j->C; c++) {
				in.plane = j->planes + (n * j->C + c) * j->plane_n;
				in.v = v + c * j->T;
				j->in_fn(&in);
			}
			for (size_t xi = 0; xi < 16; xi++)
				wh_sgemm_block(j->kern, j->M, cnt, j->C, j->upack + xi * j->M * j->C, v + xi * j->C * j->T,
					       j->boff, mb + xi * j->M * j->T, j->T, NULL);
			size_t oh = (size_t)j->s->out[0], ow = (size_t)j->s->out[1];
			struct wh_wino_out out = {.m_stride = j->M * j->T, .tw_n = j->tw_n, .t0 = t0, .cnt = cnt,
						  .has_bias = j->b != NULL, .oh = oh, .ow = ow};
			for (size_t m = 0; m < j->M; m++) {
				out.m = mb + m * j->T;
				out.bias = j->b ? j->b[m] : 0.0f;
				out.y = j->y + (n * j->M + m) * oh * ow;
				j->out_fn(&out);
			}
		}
	}
}

static enum wh_status conv_winograd(enum wh_isa isa, struct wh_threadpool *pool, const struct wh_conv_shape *s,
				    const float *x, const float *w, const float *b, float *y)
{
	struct wh_sgemm_kernel kern;
	wh_sgemm_kernel_get(isa, &kern);
	struct wino_job j = {.s = s, .kern = &kern, .C = (size_t)s->C, .M = (size_t)s->M, .x = x, .w = w, .b = b, .y = y};
	j.th_n = ((size_t)s->out[0] + 1) / 2;
	j.tw_n = ((size_t)s->out[1] + 1) / 2;
	j.tiles = j.th_n * j.tw_n;
	j.half = j.tw_n + 1;
	j.rs = 2 * j.half;
	j.plane_n = (2 * j.th_n + 2) * j.rs;
	if (s->N == 0 || j.M == 0)
		return WH_OK;
	switch (isa) {
	case WH_ISA_AVX512:
		j.w_fn = wh_wino_weights_avx512, j.in_fn = wh_wino_input_avx512, j.out_fn = wh_wino_output_avx512;
		break;
	case WH_ISA_AVX2:
		j.w_fn = wh_wino_weights_avx2, j.in_fn = wh_wino_input_avx2, j.out_fn = wh_wino_output_avx2;
		break;
	default:
		j.w_fn = wh_wino_weights_scalar, j.in_fn = wh_wino_input_scalar, j.out_fn = wh_wino_output_scalar;
	}
	/* Tile blocks are the GEMMs' N: only speed depends on T and on the bands. */
	size_t cm = j.C + j.M;
	j.T = ((size_t)1 << 18) / (16 * cm);
	j.T = j.T > 64 ? 64 : j.T < 16 ? 16 : j.T / 16 * 16;
	j.nblk = (j.tiles + j.T - 1) / j.T;
	j.total = (size_t)s->N * j.nblk;
	/* one band per thread: each band's scratch is touched by one thread only */
	size_t threads = (size_t)wh_threadpool_size(pool);
	j.nb = j.total < threads ? j.total : threads;
	uint64_t planes_n, u_n, scratch_n;
	if (!wh_mul_u64((uint64_t)s->N * j.C, j.plane_n, &planes_n) || planes_n > WH_MAX_ELEMENTS ||
	    !wh_mul_u64(16 * (uint64_t)j.M, j.C, &u_n) || u_n > WH_MAX_ELEMENTS ||
	    !wh_mul_u64(16 * (uint64_t)cm * j.T, j.nb, &scratch_n) || scratch_n > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "conv: winograd buffers for %zu channels are too large (use another tactic)",
				cm);
	enum wh_status st = WH_OK;
	j.planes = malloc((planes_n ? planes_n : 1) * sizeof(float));
	j.u = malloc((u_n ? u_n : 1) * sizeof(float));
	j.upack = malloc((u_n ? u_n : 1) * sizeof(float));
	j.wt = j.upack; /* 9*M*C floats, dead before the packing overwrites them */
	j.scratch = malloc((scratch_n ? scratch_n : 1) * sizeof(float));
	ptrdiff_t *boff = malloc((j.C ? j.C : 1) * sizeof(ptrdiff_t));
	if (!j.planes || !j.u || !j.upack || !j.scratch || !boff) {
		st = wh_error(WH_ERR_NOMEM, "conv: out of memory for winograd buffers (%zu channels, %zu tiles)", cm, j.tiles);
		goto out;
	}
	for (size_t k = 0; k < j.C; k++)
		boff[k] = (ptrdiff_t)(k * j.T);
	j.boff = boff;
	wh_parallel_for(pool, j.M, 1, wino_weight_task, &j);
	wh_sgemm_pack_groups(&kern, pool, 16, j.M, j.C, j.u, j.M * j.C, j.C, 1, j.upack);
	wh_parallel_for(pool, (size_t)s->N * j.C, 16, wino_plane_task, &j);
	wh_parallel_for(pool, j.nb, 1, wino_band_task, &j);
out:
	free(j.planes);
	free(j.u);
	free(j.upack);
	free(j.scratch);
	free(boff);
	return st;
}

/* ---- dispatch ---- */

enum wh_status wh_tx_conv_f32(enum wh_tx_conv_algo algo, enum wh_isa isa, struct wh_threadpool *pool,
			      const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y)
{
	if (!wh_tx_conv_supports(algo, s))
		return wh_error(WH_ERR_UNSUPPORTED, "conv: this tactic cannot run the geometry (pick one whose eligibility holds)");
	switch (algo) {
	case WH_TX_CONV_DIRECT:
		return conv_direct(pool, s, x, w, b, y);
	case WH_TX_CONV_FP16ACC:
		return conv_fp16acc(isa, pool, s, x, w, b, y);
	case WH_TX_CONV_IM2COL:
		return conv_columns(isa, NULL, pool, s, x, w, b, y);
	case WH_TX_CONV_1X1:
		return conv_1x1(isa, pool, s, x, w, b, y);
	case WH_TX_CONV_WINOGRAD:
		return conv_winograd(isa, pool, s, x, w, b, y);
	}
	return wh_error(WH_ERR_INTERNAL, "conv: unknown tactic algorithm %d", (int)algo);
}

/* ---- the tactics ---- */

static enum wh_status tx_conv_run(struct wh_kernel_ctx *ctx, enum wh_tx_conv_algo algo, enum wh_isa isa)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1), *b = wh_kin(ctx, 2);
	if (!x || !w)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs X and W");
	if (!wh_tx_float_dtype(x->dtype) || w->dtype != x->dtype || (b && b->dtype != x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED,
				      "inputs of types X %s, W %s%s%s are not supported by this tactic (all float32, float16 or bfloat16)",
				      wh_dtype_name(x->dtype), wh_dtype_name(w->dtype), b ? ", B " : "",
				      b ? wh_dtype_name(b->dtype) : "");
	struct wh_conv_shape s;
	enum wh_status st = conv_geometry(ctx, true, &s);
	if (st)
		return st;
	if (!wh_tx_conv_supports(algo, &s))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "tactic %s cannot run this geometry (it is not eligible)",
				      ctx->tactic ? ctx->tactic->name : "?");
	if (b && (b->rank != 1 || b->dims[0] != s.M)) {
		char bb[64];
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "B has shape %s, expected [%lld]",
				      wh_shape_str(b->dims, b->rank, bb, sizeof bb), (long long)s.M);
	}
	int64_t yd[WH_MAX_RANK];
	yd[0] = s.N;
	yd[1] = s.M;
	for (int d = 0; d < s.nsp; d++)
		yd[2 + d] = s.out[d];
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank, yd)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	float *ox = NULL, *ow = NULL, *ob = NULL, *fy = NULL;
	const float *fx, *fw, *fb;
	if ((st = wh_tx_view_f32(ctx, x, &ox, &fx)) || (st = wh_tx_view_f32(ctx, w, &ow, &fw)) ||
	    (st = wh_tx_view_f32(ctx, b, &ob, &fb)))
		goto out;
	float *yf = y->data;
	if (y->dtype != WH_DT_FLOAT) {
		if (!(fy = malloc((y->count ? y->count : 1) * sizeof(float)))) {
			st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
			goto out;
		}
		yf = fy;
	}
	if ((st = wh_tx_conv_f32(algo, isa, ctx->pool, &s, fx, fw, fb, yf)))
		goto out;
	if (fy)
		wh_tx_store_half(ctx, fy, y);
out:
	free(ox);
	free(ow);
	free(ob);
	free(fy);
	return st;
}

static bool tx_conv_ok(const struct wh_kernel_ctx *ctx, enum wh_tx_conv_algo algo, enum wh_isa isa)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1);
	if (!x || !w || ctx->qdq || !wh_tx_float_dtype(x->dtype) || w->dtype != x->dtype || ctx->cpu->isa < isa)
		return false;
	if (algo == WH_TX_CONV_FP16ACC)
		return wh_tx_fp16_layer(ctx);
	if (algo != WH_TX_CONV_WINOGRAD && algo != WH_TX_CONV_1X1)
		return true;
	struct wh_conv_shape s;
	return conv_geometry(ctx, false, &s) == WH_OK && wh_tx_conv_supports(algo, &s);
}

#define WH_TX_CONV(NAME, ALGO, ISA)                                         \
	bool wh_tx_ok_conv_##NAME(const struct wh_kernel_ctx *ctx)          \
	{                                                                   \
		return tx_conv_ok(ctx, ALGO, ISA);                          \
	}                                                                   \
	enum wh_status wh_tx_run_conv_##NAME(struct wh_kernel_ctx *ctx)     \
	{                                                                   \
		return tx_conv_run(ctx, ALGO, ISA);                         \
	}
WH_TX_CONV(direct_scalar, WH_TX_CONV_DIRECT, WH_ISA_SCALAR)
WH_TX_CONV(im2col_scalar, WH_TX_CONV_IM2COL, WH_ISA_SCALAR)
WH_TX_CONV(im2col_avx2, WH_TX_CONV_IM2COL, WH_ISA_AVX2)
WH_TX_CONV(im2col_avx512, WH_TX_CONV_IM2COL, WH_ISA_AVX512)
WH_TX_CONV(wino_scalar, WH_TX_CONV_WINOGRAD, WH_ISA_SCALAR)
WH_TX_CONV(wino_avx2, WH_TX_CONV_WINOGRAD, WH_ISA_AVX2)
WH_TX_CONV(wino_avx512, WH_TX_CONV_WINOGRAD, WH_ISA_AVX512)
WH_TX_CONV(1x1_scalar, WH_TX_CONV_1X1, WH_ISA_SCALAR)
WH_TX_CONV(1x1_avx2, WH_TX_CONV_1X1, WH_ISA_AVX2)
WH_TX_CONV(1x1_avx512, WH_TX_CONV_1X1, WH_ISA_AVX512)
WH_TX_CONV(fp16acc_scalar, WH_TX_CONV_FP16ACC, WH_ISA_SCALAR)
WH_TX_CONV(fp16acc_avx2, WH_TX_CONV_FP16ACC, WH_ISA_AVX2)
WH_TX_CONV(fp16acc_avx512, WH_TX_CONV_FP16ACC, WH_ISA_AVX512)

const struct wh_tactic wh_conv_extra_tactics[] = {WH_CONV_EXTRA_TACTICS, WH_CONV_FP16ACC_TACTICS};
const uint32_t wh_conv_extra_tactics_count = sizeof wh_conv_extra_tactics / sizeof wh_conv_extra_tactics[0];
