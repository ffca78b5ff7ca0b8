/* Conv, ConvTranspose, ConvInteger, QLinearConv: geometry, scalar references and the fast
 * float32 drivers (see conv-internal.h for how they avoid im2col and stay deterministic). */
#include <emmintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/ops/conv-internal.h"
#include "executor/ops/elementwise-internal.h"
#include "executor/ops/gemm-internal.h"
#include "executor/ops/qgemm-internal.h"
#include "executor/ops/tactics-extra.h"

static int64_t prod_dims(const int64_t *d, int n)
{
	int64_t p = 1;
	for (int i = 0; i < n; i++)
		p *= d[i];
	return p;
}

static size_t round_up(size_t x, size_t m)
{
	return (x + m - 1) / m * m;
}

/* Advances a multi-index over dims (last fastest). */
static void next_index(int64_t *idx, const int64_t *dims, int n)
{
	for (int d = n - 1; d >= 0; d--) {
		if (++idx[d] < dims[d])
			return;
		idx[d] = 0;
	}
}

/* ---- scalar references ---- */

/* Each output sums (input channel, tap) products in order, skipping padding, then adds
 * the bias; ACC is the accumulator type. */
#define WH_CONV_REF(NAME, T, ACC)                                                               \
	static void NAME(const struct wh_conv_shape *s, const T *x, const T *w, const T *b, T *y) \
	{                                                                                       \
		int nsp = s->nsp;                                                               \
		int64_t Cg = s->C / s->G, Mg = s->M / s->G;                                     \
		int64_t P = prod_dims(s->out, nsp), Pin = prod_dims(s->in, nsp);                \
		int64_t KS = prod_dims(s->k, nsp);                                              \
		int64_t instr[WH_MAX_RANK];                                                     \
		wh_shape_strides(s->in, nsp, instr);                                            \
		for (int64_t n = 0; n < s->N; n++)                                              \
			for (int64_t co = 0; co < s->M; co++) {                                 \
				int64_t g = co / Mg;                                            \
				int64_t o[WH_MAX_RANK] = {0};                                   \
				for (int64_t p = 0; p < P; p++, next_index(o, s->out, nsp)) {   \
					ACC acc = 0;                                            \
					for (int64_t ci = 0; ci < Cg; ci++) {                   \
						const T *xc = x + (n * s->C + g * Cg + ci) * Pin; \
						const T *wc = w + (co * Cg + ci) * KS;          \
						int64_t kx[WH_MAX_RANK] = {0};                  \
						for (int64_t kp = 0; kp < KS; kp++, next_index(kx, s->k, nsp)) { \
							int64_t off = 0;                        \
							bool ok = true;                         \
							for (int d = 0; d < nsp; d++) {         \
								int64_t i = o[d] * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d]; \
								if (i < 0 || i >= s->in[d])     \
									ok = false;             \
								off += i * instr[d];            \
							}                                       \
							if (ok)                                 \
								acc += (ACC)xc[off] * (ACC)wc[kp]; \
						}                                               \
					}                                                       \
					if (b)                                                  \
						acc += (ACC)b[co];                              \
					y[(n * s->M + co) * P + p] = (T)acc;                    \
				}                                                               \
			}                                                                       \
	}

WH_CONV_REF(conv_ref_f64, double, double)
WH_CONV_REF(conv_ref_i32, int32_t, int64_t)

/* ---- ONNX Runtime's summation order (MLAS on x86-64) ----
 *
 * ORT runs a float32 Conv as GEMMs of the weights (Mg x K per group, K = (channel, tap)
 * in order) with the im2col columns (padding contributes zeros): one output channel per
 * group (Mg = 1) goes through MLAS's single-row kernel (wh_sgemm_m1_ref); a single output
 * position through its single-column kernel (n1_dot) when the columns are contiguous;
 * anything else through the blocked GEMM (wh_sgemm_ort_kblock). The bias is added last. */

/* MLAS's single-column kernel (M1TransposeB): 8 lanes, lane l summing the products of
 * k = l, l + 8, ... (product rounded, then added); rows are reduced 4, then 2, then 1 at a
 * time, each block size with its own order of the lanes, so the order depends on the
 * row's place m among the Mg rows. The result is added to a zero C. */
static float n1_dot(const float *wr, const float *v, size_t K, size_t m, size_t Mg)
{
	float l[8] = {0, 0, 0, 0, 0, 0, 0, 0};
	size_t i = 0;
	for (; i + 8 <= K; i += 8)
		for (size_t j = 0; j < 8; j++)
			l[j] = l[j] + wr[i + j] * v[i + j];
	/* the last partial block adds zero products (masked loads) in the other lanes */
	for (size_t j = 0; i < K && j < 8; j++)
		l[j] = l[j] + (i + j < K ? wr[i + j] * v[i + j] : 0.0f);
	size_t full4 = Mg / 4 * 4;
	float r;
	if (m < full4)
		r = (((l[0] + l[1]) + l[2]) + l[3]) + (((l[4] + l[5]) + l[6]) + l[7]);
	else if (Mg - full4 >= 2 && m < full4 + 2)
		r = ((l[0] + l[2]) + (l[4] + l[6])) + ((l[1] + l[3]) + (l[5] + l[7]));
	else
		r = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
	return r + 0.0f;
}

/* Whether MLAS computes this convolution through its single-column kernel: one output
 * position, several output channels per group, and im2col columns that are contiguous
 * (not so for a one-channel kernel covering the whole unpadded input, which MLAS feeds
 * to the GEMM straight from the input rows). */
static bool ort_n1(const struct wh_conv_shape *s)
{
	int64_t P = prod_dims(s->out, s->nsp), KS = prod_dims(s->k, s->nsp);
	if (P != 1 || s->M / s->G <= 1)
		return false;
	if (s->C / s->G != 1 || KS == 1 || s->nsp > 2)
		return true;
	for (int d = 0; d < s->nsp; d++)
		if (s->stride[d] != 1 || s->pad0[d] || s->pad1[d] || s->dil[d] != 1)
			return true;
	return s->in[s->nsp - 1] == 1;
}

/* One input and one output channel per group, unit strides, no padding or dilation, and a
 * kernel as wide as the input: MLAS runs its GEMM on the input rows as they are, as a
 * transposed B, and a single output channel then goes through the single-column kernel
 * with the output positions as its rows (n1_dot with the position's place among them). */
static bool ort_m1t(const struct wh_conv_shape *s)
{
	int last = s->nsp - 1;
	if (s->C / s->G != 1 || s->M / s->G != 1 || s->nsp > 2 || prod_dims(s->k, s->nsp) == 1)
		return false;
	for (int d = 0; d < s->nsp; d++)
		if (s->stride[d] != 1 || s->pad0[d] || s->pad1[d] || s->dil[d] != 1)
			return false;
	return s->k[last] == s->in[last];
}

/* The im2col column of output position o (multi-index) for batch item n and group g:
 * v[ci * KS + kp] = the input that tap kp of channel ci reads, 0 in the padding. */
static void conv_column(const struct wh_conv_shape *s, const float *x, int64_t n, int64_t g, const int64_t *o,
			float *v)
{
	int nsp = s->nsp;
	int64_t Cg = s->C / s->G, KS = prod_dims(s->k, nsp), Pin = prod_dims(s->in, nsp);
	int64_t instr[WH_MAX_RANK];
	wh_shape_strides(s->in, nsp, instr);
	for (int64_t ci = 0; ci < Cg; ci++) {
		const float *xc = x + (n * s->C + g * Cg + ci) * Pin;
		int64_t kx[WH_MAX_RANK] = {0};
		for (int64_t kp = 0; kp < KS; kp++, next_index(kx, s->k, nsp)) {
			int64_t off = 0;
			bool ok = true;
			for (int d = 0; d < nsp; d++) {
				int64_t i = o[d] * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d];
				if (i < 0 || i >= s->in[d])
					ok = false;
				off += i * instr[d];
			}
			v[ci * KS + kp] = ok ? xc[off] : 0.0f;
		}
	}
}

/* The reference: each output in ORT's order (above) with plain multiplies and adds. */
void wh_conv_f32_ref(const struct wh_conv_shape *s, const float *x, const float *w, const float *b,
		     float *y)
{
	int nsp = s->nsp;
	int64_t Mg = s->M / s->G, P = prod_dims(s->out, nsp);
	size_t K = (size_t)(s->C / s->G * prod_dims(s->k, nsp));
	size_t kb = wh_sgemm_ort_kblock(K, (size_t)P);
	bool n1 = ort_n1(s), m1t = ort_m1t(s);
	float *v = malloc((K ? K : 1) * sizeof(float));
	if (!v) {
		for (int64_t i = 0; i < s->N * s->M * P; i++)
			y[i] = NAN;
		return;
	}
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t co = 0; co < s->M; co++) {
			int64_t g = co / Mg;
			const float *wr = w + co * (int64_t)K;
			int64_t o[WH_MAX_RANK] = {0};
			for (int64_t p = 0; p < P; p++, next_index(o, s->out, nsp)) {
				conv_column(s, x, n, g, o, v);
				float acc;
				if (m1t) {
					acc = n1_dot(wr, v, K, (size_t)p, (size_t)P);
				} else if (Mg == 1) {
					acc = 0.0f;
					size_t k = 0;
					for (; k + 4 <= K; k += 4)
						acc = (((wr[k] * v[k] + wr[k + 1] * v[k + 1]) + wr[k + 2] * v[k + 2]) +
						       wr[k + 3] * v[k + 3]) + acc;
					if (K - k >= 2) {
						acc = (wr[k] * v[k] + wr[k + 1] * v[k + 1]) + acc;
						k += 2;
					}
					if (K - k == 1)
						acc = wr[k] * v[k] + acc;
				} else if (n1) {
					acc = n1_dot(wr, v, K, (size_t)(co % Mg), (size_t)Mg);
				} else {
					size_t blk = kb ? kb : (K ? K : 1);
					acc = 0.0f;
					for (size_t k0 = 0; k0 < K; k0 += blk) {
						float part = 0.0f;
						for (size_t k = k0; k < K && k < k0 + blk; k++)
							part += wr[k] * v[k];
						acc = k0 ? part + acc : part;
					}
				}
				if (b)
					acc = acc + b[co];
				y[(n * s->M + co) * P + p] = acc;
			}
		}
	free(v);
}

/* The direct depthwise kernels' order (conv-internal.h wh_conv_dw_fma_ref): the taps in
 * groups of 4, each group a chain of fused multiply-adds from its first (rounded) product,
 * added to the sum; a last group of 2 the same; a last single tap fused into the sum; the
 * padding as zero inputs; then the bias. */
void wh_conv_dw_fma_ref(const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y)
{
	int nsp = s->nsp;
	int64_t P = prod_dims(s->out, nsp);
	size_t K = (size_t)prod_dims(s->k, nsp);
	float *v = malloc((K ? K : 1) * sizeof(float));
	if (!v) {
		for (int64_t i = 0; i < s->N * s->M * P; i++)
			y[i] = NAN;
		return;
	}
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t co = 0; co < s->M; co++) {
			const float *wr = w + co * (int64_t)K;
			int64_t o[WH_MAX_RANK] = {0};
			for (int64_t p = 0; p < P; p++, next_index(o, s->out, nsp)) {
				conv_column(s, x, n, co, o, v);
				float acc = 0.0f;
				size_t k = 0;
				for (; k + 4 <= K; k += 4) {
					float t = wr[k] * v[k];
					t = fmaf(wr[k + 1], v[k + 1], t);
					t = fmaf(wr[k + 2], v[k + 2], t);
					t = fmaf(wr[k + 3], v[k + 3], t);
					acc = t + acc;
				}
				if (K - k >= 2) {
					acc = fmaf(wr[k + 1], v[k + 1], wr[k] * v[k]) + acc;
					k += 2;
				}
				if (K - k == 1)
					acc = fmaf(wr[k], v[k], acc);
				if (b)
					acc = acc + b[co];
				y[(n * s->M + co) * P + p] = acc;
			}
		}
	free(v);
}

/* Each output channel: zero, then scatter every (input channel, input position, tap)
 * product in that order, then the bias. */
#define WH_CONVT_REF(NAME, T)                                                                   \
	static void NAME(const struct wh_conv_shape *s, const T *x, const T *w, const T *b, T *y) \
	{                                                                                       \
		int nsp = s->nsp;                                                               \
		int64_t Cg = s->C / s->G, Mg = s->M / s->G;                                     \
		int64_t P = prod_dims(s->out, nsp), Pin = prod_dims(s->in, nsp);                \
		int64_t KS = prod_dims(s->k, nsp);                                              \
		int64_t ostr[WH_MAX_RANK];                                                      \
		wh_shape_strides(s->out, nsp, ostr);                                            \
		for (int64_t n = 0; n < s->N; n++)                                              \
			for (int64_t co = 0; co < s->M; co++) {                                 \
				int64_t g = co / Mg, m = co % Mg;                               \
				T *yp = y + (n * s->M + co) * P;                                \
				for (int64_t p = 0; p < P; p++)                                 \
					yp[p] = 0;                                              \
				for (int64_t ci = 0; ci < Cg; ci++) {                           \
					const T *xc = x + (n * s->C + g * Cg + ci) * Pin;       \
					const T *wc = w + ((g * Cg + ci) * Mg + m) * KS;        \
					int64_t ix[WH_MAX_RANK] = {0};                          \
					for (int64_t ip = 0; ip < Pin; ip++, next_index(ix, s->in, nsp)) { \
						int64_t kx[WH_MAX_RANK] = {0};                  \
						for (int64_t kp = 0; kp < KS; kp++, next_index(kx, s->k, nsp)) { \
							int64_t off = 0;                        \
							bool ok = true;                         \
							for (int d = 0; d < nsp; d++) {         \
								int64_t o = ix[d] * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d]; \
								if (o < 0 || o >= s->out[d])    \
									ok = false;             \
								off += o * ostr[d];             \
							}                                       \
							if (ok)                                 \
								yp[off] += xc[ip] * wc[kp];     \
						}                                               \
					}                                                       \
				}                                                               \
				if (b)                                                          \
					for (int64_t p = 0; p < P; p++)                         \
						yp[p] += b[co];                                 \
			}                                                                       \
	}

WH_CONVT_REF(convt_ref_f32, float)
WH_CONVT_REF(convt_ref_f64, double)

void wh_convt_f32_ref(const struct wh_conv_shape *s, const float *x, const float *w,
		      const float *b, float *y)
{
	convt_ref_f32(s, x, w, b, y);
}

/* ---- fast float32 Conv ---- */

/* How the input is laid out for the kernels. An input "plane" per channel: the outer
 * spatial dimensions padded, the last one padded and split into `sw` stride phases of wq
 * floats each, so output column ow of tap t reads phase t % sw at index ow + t / sw. */
struct conv_plan {
	const struct wh_conv_shape *s;
	struct wh_sgemm_kernel kern;
	int64_t Cg, Mg, KS, K, P, Pin;
	size_t kb; /* MLAS's K block (wh_sgemm_ort_kblock) */
	bool flat; /* 1x1, stride 1, no padding: the input channels are B's rows as they are */
	bool prep; /* the planes are a padded copy (else the input itself) */
	bool im2col; /* 2-D with short output rows: each channel's "plane" is its im2col rows,
		      * KS rows of P, and the GEMM runs over all P positions at once */
	size_t plane, sw, wq, wp;
	size_t pdim[WH_MAX_RANK], ostr[WH_MAX_RANK];
	size_t R, L; /* output rows (all spatial dims but the last) and their length */
	const struct wh_out_round *round; /* outputs rounded as written (emulation), or NULL */
	/* the node whose input 1 is w itself (an initializer's bytes may have a packed copy
	 * in the engine's cache, wh_gemm_packed_a), or NULL: pack w on every call */
	const struct wh_kernel_ctx *wctx;
};

/* Tiles of a convolution's GEMM hold at least this many multiply-adds (about 3 us of one
 * core): a smaller tile costs more in the pool's hand-off and in the kernel's edges than a
 * second thread saves (kws_gru's 0.6 M multiply-add Conv: 21.7 us on one thread, 33.6 us
 * on two as 9 tiles). It was 2^19 while the pool woke its workers for every loop; with
 * loops under 5 us run inline (threadpool.c), 2^17 made kws_dscnn 0.077 -> 0.064 ms,
 * mobilenet_v3_small 0.69 -> 0.61 and mnasnet0_35 1.36 -> 1.28 on an idle 2-core machine,
 * and 2 threads stay within 1.05x of 1 with the other core busy. The bound depends on the
 * work only; bits never depend on tiles. */
#define WH_CONV_TILE_WORK ((uint64_t)1 << 17)

/* How many tiles the work of one batch item is worth splitting into, at most: 4 a thread
 * (to balance), but none below WH_CONV_TILE_WORK. */
static size_t tiles_wanted(int threads, uint64_t work)
{
	if (threads <= 1)
		return 1;
	uint64_t cap = work / WH_CONV_TILE_WORK, want = 4 * (uint64_t)threads;
	return (size_t)(cap < want ? (cap ? cap : 1) : want);
}

/* The group-packed weights (G matrices of Mg x K): the engine's copy when it has one,
 * else packed into *own (caller frees; NULL when out of memory). */
static const float *conv_apack(const struct conv_plan *pl, struct wh_threadpool *pool, const float *w,
			       float **own)
{
	size_t K = (size_t)pl->K, Mg = (size_t)pl->Mg, G = (size_t)pl->s->G;
	*own = NULL;
	const float *cached = pl->wctx ? wh_gemm_packed_a(pl->wctx, 1, &pl->kern, G, Mg, K) : NULL;
	if (cached)
		return cached;
	size_t na = (size_t)pl->s->M * K;
	*own = malloc((na ? na : 1) * sizeof(float));
	if (*own)
		wh_sgemm_pack_groups(&pl->kern, pool, G, Mg, K, w, Mg * K, K, 1, *own);
	return *own;
}

static enum wh_status plan_init(const struct wh_conv_shape *s, enum wh_isa isa, struct conv_plan *pl)
{
	memset(pl, 0, sizeof *pl);
	int nsp = s->nsp, last = nsp - 1;
	pl->s = s;
	wh_sgemm_kernel_get(isa, &pl->kern);
	pl->Cg = s->C / s->G;
	pl->Mg = s->M / s->G;
	pl->KS = prod_dims(s->k, nsp);
	pl->K = pl->Cg * pl->KS;
	pl->P = prod_dims(s->out, nsp);
	pl->Pin = prod_dims(s->in, nsp);
	/* MLAS's blocks: one chain (2-7 % faster on the 3x3 convs with one thread) moved
	 * PP-OCR rec's activations to 1.5e-5 of their magnitude from ONNX Runtime's, past
	 * e2e-ort-agree's 1e-5 (8e-6 in ORT's order) */
	pl->kb = wh_sgemm_ort_kblock((size_t)pl->K, (size_t)pl->P);
	bool flat = true, pads = false;
	for (int d = 0; d < nsp; d++) {
		if (s->k[d] != 1 || s->stride[d] != 1 || s->pad0[d] || s->pad1[d])
			flat = false;
		if (s->pad0[d] || s->pad1[d])
			pads = true;
	}
	pl->flat = flat;
	if (flat) {
		pl->plane = (size_t)pl->Pin;
		pl->R = 1;
		pl->L = (size_t)pl->P;
		pl->sw = 1;
		pl->wq = pl->wp = pl->plane;
		return WH_OK;
	}
	pl->prep = pads || s->stride[last] != 1;
	uint64_t wp = (uint64_t)s->in[last], plane;
	for (int d = 0; d < nsp; d++) {
		uint64_t v = (uint64_t)s->in[d];
		if (pl->prep && (!wh_add_u64(v, (uint64_t)s->pad0[d], &v) || !wh_add_u64(v, (uint64_t)s->pad1[d], &v)))
			return wh_error(WH_ERR_OVERFLOW, "conv: padded input is too large (use smaller pads)");
		if (d < last)
			pl->pdim[d] = (size_t)v;
		else
			wp = v;
	}
	pl->sw = pl->prep ? (size_t)s->stride[last] : 1;
	/* With a single output column only phases below the padded width are ever read, so
	 * a stride beyond it must not blow up the row. */
	if (s->out[last] == 1 && pl->sw > wp)
		pl->sw = (size_t)wp;
	pl->wp = (size_t)wp;
	pl->wq = (size_t)((wp + pl->sw - 1) / pl->sw);
	if (!wh_mul_u64(pl->sw, pl->wq, &plane))
		return wh_error(WH_ERR_OVERFLOW, "conv: padded input is too large (use smaller pads)");
	for (int d = last - 1; d >= 0; d--) {
		pl->ostr[d] = (size_t)plane;
		if (!wh_mul_u64(plane, pl->pdim[d], &plane))
			return wh_error(WH_ERR_OVERFLOW, "conv: padded input is too large (use smaller pads)");
	}
	uint64_t total;
	if (plane > WH_MAX_ELEMENTS || !wh_mul_u64(plane, (uint64_t)s->C, &total) || total > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "conv: padded input is too large (use smaller pads)");
	pl->plane = (size_t)plane;
	pl->L = (size_t)s->out[last];
	pl->R = (size_t)prod_dims(s->out, last);
	return WH_OK;
}

/* Writes one padded, phase-split row from input row src (NULL: a row of padding): phase
 * ph's wq floats at dr + ph * ps (ps >= wq; wq: the phases side by side). */
static void prep_row(const struct conv_plan *pl, const float *src, float *dr, size_t ps)
{
	const struct wh_conv_shape *s = pl->s;
	int last = s->nsp - 1;
	size_t sw = pl->sw, wq = pl->wq, W = (size_t)s->in[last], p0 = (size_t)s->pad0[last];
	if (!src) {
		for (size_t ph = 0; ph < sw; ph++)
			memset(dr + ph * ps, 0, wq * sizeof(float));
		return;
	}
	if (sw == 1) {
		size_t n = W < wq - p0 ? W : wq - p0;
		memset(dr, 0, p0 * sizeof(float));
		memcpy(dr + p0, src, n * sizeof(float));
		memset(dr + p0 + n, 0, (wq - p0 - n) * sizeof(float));
		return;
	}
	if (sw == 2 && pl->kern.isa >= WH_ISA_AVX2 && wq >= 2) {
		/* interior q (both phases inside the input): vector deinterleave; edges: below */
		size_t qa = (p0 + 1) / 2, qb = (p0 + W - 1) / 2;
		if (qb > wq)
			qb = wq;
		if (qa < qb) {
			const float *sp = src + 2 * qa - p0;
			if (pl->kern.isa >= WH_ISA_AVX512)
				wh_deinterleave2_avx512(sp, qb - qa, dr + qa, dr + ps + qa);
			else
				wh_deinterleave2_avx2(sp, qb - qa, dr + qa, dr + ps + qa);
			for (size_t ph = 0; ph < 2; ph++) {
				float *dp = dr + ph * ps;
				for (size_t q = 0; q < qa; q++) {
					size_t j = 2 * q + ph;
					dp[q] = j >= p0 && j - p0 < W ? src[j - p0] : 0.0f;
				}
				for (size_t q = qb; q < wq; q++) {
					size_t j = 2 * q + ph;
					dp[q] = j >= p0 && j - p0 < W ? src[j - p0] : 0.0f;
				}
			}
			return;
		}
	}
	if (sw == 4 && pl->kern.isa >= WH_ISA_AVX512) {
		/* interior q (all four phases inside the input): vector split; edges: below */
		size_t qa = (p0 + 3) / 4, qb = (p0 + W) / 4;
		if (qb > wq)
			qb = wq;
		if (qa < qb) {
			wh_deinterleave4_avx512(src + 4 * qa - p0, qb - qa, dr + qa, dr + ps + qa, dr + 2 * ps + qa,
						dr + 3 * ps + qa);
			for (size_t ph = 0; ph < 4; ph++) {
				float *dp = dr + ph * ps;
				for (size_t q = 0; q < qa; q++) {
					size_t j = 4 * q + ph;
					dp[q] = j >= p0 && j - p0 < W ? src[j - p0] : 0.0f;
				}
				for (size_t q = qb; q < wq; q++) {
					size_t j = 4 * q + ph;
					dp[q] = j >= p0 && j - p0 < W ? src[j - p0] : 0.0f;
				}
			}
			return;
		}
	}
	for (size_t ph = 0; ph < sw; ph++) {
		float *dp = dr + ph * ps;
		/* q whose padded column q*sw + ph falls inside the input row */
		size_t qlo = ph >= p0 ? 0 : (p0 - ph + sw - 1) / sw;
		size_t qhi = p0 + W > ph ? (p0 + W - ph + sw - 1) / sw : 0;
		if (qhi > wq)
			qhi = wq;
		if (qlo > qhi)
			qlo = qhi;
		/* no call for an edge without padding: with a wide stride (a 16x16 stride-16 patch
		 * embedding: 16 phases of 14 columns a row) the calls cost more than the copy */
		if (qlo)
			memset(dp, 0, qlo * sizeof(float));
		for (size_t q = qlo; q < qhi; q++)
			dp[q] = src[q * sw + ph - p0];
		if (wq > qhi)
			memset(dp + qhi, 0, (wq - qhi) * sizeof(float));
	}
}

/* Copies input channel plane xc into its padded, phase-split layout at dst. */
static void prep_plane(const struct conv_plan *pl, const float *xc, float *dst)
{
	const struct wh_conv_shape *s = pl->s;
	int last = s->nsp - 1;
	size_t row = pl->sw * pl->wq;
	size_t rows = pl->plane / row;
	int64_t instr[WH_MAX_RANK];
	wh_shape_strides(s->in, s->nsp, instr);
	int64_t rp[WH_MAX_RANK] = {0}, pdim[WH_MAX_RANK];
	for (int d = 0; d < last; d++)
		pdim[d] = (int64_t)pl->pdim[d];
	for (size_t r = 0; r < rows; r++, next_index(rp, pdim, last)) {
		const float *src = xc;
		for (int d = 0; d < last && src; d++) {
			int64_t i = rp[d] - s->pad0[d];
			src = i < 0 || i >= s->in[d] ? NULL : src + i * instr[d];
		}
		prep_row(pl, src, dst + r * row, pl->wq);
	}
}

/* The im2col rows of input channel plane xc (2-D): dst[kp * P + p] = the input that tap kp
 * of output position p reads, 0 in the padding. */
static void im2col_plane(const struct conv_plan *pl, const float *xc, float *dst)
{
	const struct wh_conv_shape *s = pl->s;
	size_t H = (size_t)s->in[0], W = (size_t)s->in[1], OH = (size_t)s->out[0], OW = (size_t)s->out[1];
	size_t sw = (size_t)s->stride[1], P = (size_t)pl->P;
	for (int64_t kh = 0; kh < s->k[0]; kh++)
		for (int64_t kw = 0; kw < s->k[1]; kw++, dst += P) {
			/* output columns whose input column ow*sw + kw*dw - pw is inside the row */
			int64_t c = kw * s->dil[1] - s->pad0[1];
			size_t lo = c >= 0 ? 0 : (size_t)((-c + (int64_t)sw - 1) / (int64_t)sw);
			size_t hi = (int64_t)W > c ? (size_t)(((int64_t)W - c + (int64_t)sw - 1) / (int64_t)sw) : 0;
			if (hi > OW)
				hi = OW;
			if (lo > hi)
				lo = hi;
			for (size_t oh = 0; oh < OH; oh++) {
				float *d = dst + oh * OW;
				int64_t ih = (int64_t)oh * s->stride[0] + kh * s->dil[0] - s->pad0[0];
				/* rows are short here (narrower than a tile): plain loops, not calls */
				if (ih < 0 || ih >= (int64_t)H) {
					for (size_t ow = 0; ow < OW; ow++)
						d[ow] = 0.0f;
					continue;
				}
				const float *src = xc + (size_t)ih * W;
				for (size_t ow = 0; ow < lo; ow++)
					d[ow] = 0.0f;
				if (sw == 1) {
					const float *sc = src + ((int64_t)lo + c); /* the input of column lo */
					for (size_t i = 0; i < hi - lo; i++)
						d[lo + i] = sc[i];
				} else {
					for (size_t ow = lo; ow < hi; ow++)
						d[ow] = src[(size_t)((int64_t)(ow * sw) + c)];
				}
				for (size_t ow = hi; ow < OW; ow++)
					d[ow] = 0.0f;
			}
		}
}

/* Offset in the planes (from the group's first channel) of the input that output (0, ..)
 * reads for k = (channel, tap). */
static void plan_koff(const struct conv_plan *pl, size_t chan_stride, ptrdiff_t *koff)
{
	const struct wh_conv_shape *s = pl->s;
	int last = s->nsp - 1;
	int64_t kx[WH_MAX_RANK] = {0};
	for (int64_t kp = 0; kp < pl->KS; kp++, next_index(kx, s->k, s->nsp)) {
		size_t off = 0;
		if (!pl->flat) {
			for (int d = 0; d < last; d++)
				off += (size_t)(kx[d] * s->dil[d]) * pl->ostr[d];
			size_t t = (size_t)(kx[last] * s->dil[last]);
			off += (t % pl->sw) * pl->wq + t / pl->sw;
		}
		for (int64_t ci = 0; ci < pl->Cg; ci++)
			koff[ci * pl->KS + kp] = (ptrdiff_t)((size_t)ci * chan_stride + off);
	}
}

/* Offset in a plane of output row r's first input (tap 0). */
static size_t row_base(const struct conv_plan *pl, size_t r)
{
	const struct wh_conv_shape *s = pl->s;
	size_t off = 0;
	for (int d = s->nsp - 2; d >= 0 && !pl->flat; d--) {
		size_t o = r % (size_t)s->out[d];
		r /= (size_t)s->out[d];
		off += o * (size_t)s->stride[d] * pl->ostr[d];
	}
	return off;
}

/* One block of output rows: m output channels (from row m0 of the group's packed weights
 * a) x n columns, reading B's rows at base + koff[k], into c (row stride ldc); one output
 * channel per group goes through the single-row kernel, as in MLAS. Tile by tile, each
 * running all of K (MLAS's blocks of kb, each from zero and added to the sum so far, or
 * with kb 0 one chain) before the next: the bits of wh_sgemm_block_kb, whose loops run each
 * block over all tiles before the next block, but a tile's partial sums come back from L1
 * instead of from y or the wide buffer (and its loads and stores per block): 2-5 % on the
 * 3x3 convs with one thread. */
static void conv_block(const struct conv_plan *pl, size_t m, size_t n, const float *a, const float *base,
		       const ptrdiff_t *koff, float *c, size_t ldc, const float *bias)
{
	size_t K = (size_t)pl->K;
	if (pl->Mg == 1) {
		pl->kern.m1(n, K, a, base, koff, c, bias);
		return;
	}
	if (K == 0) {
		wh_sgemm_block_kb(&pl->kern, m, n, K, pl->kb, a, base, koff, c, ldc, bias);
		return;
	}
	/* kb 0 (one chain) only for K <= 1024 (wh_sgemm_ort_kblock) */
	const struct wh_sgemm_kernel *kern = &pl->kern;
	size_t kc = pl->kb && pl->kb < K ? pl->kb : K;
	for (size_t j = 0; j < n; j += kern->nr) {
		size_t nr = n - j < kern->nr ? n - j : kern->nr;
		for (size_t i = 0; i < m; i += kern->mr) {
			size_t mr = m - i < kern->mr ? m - i : kern->mr;
			for (size_t k0 = 0; k0 < K; k0 += kc) {
				size_t kk = K - k0 < kc ? K - k0 : kc;
				unsigned flags = (k0 ? WH_SGEMM_ADD_C : 0) | (k0 + kk == K && bias ? WH_SGEMM_BIAS : 0);
				kern->ukernel(mr, nr, kk, a + i * K + k0 * mr, base + j, koff + k0, c + i * ldc + j, ldc,
					      bias ? bias + i : NULL, flags);
			}
		}
	}
}

struct prep_job {
	const struct conv_plan *pl;
	const float *x; /* batch item */
	float *planes;
};

static void prep_task(void *arg, size_t begin, size_t end)
{
	struct prep_job *j = arg;
	for (size_t c = begin; c < end; c++) {
		const float *xc = j->x + c * (size_t)j->pl->Pin;
		if (j->pl->im2col)
			im2col_plane(j->pl, xc, j->planes + c * j->pl->plane);
		else
			prep_plane(j->pl, xc, j->planes + c * j->pl->plane);
	}
}

struct gemm_job {
	const struct conv_plan *pl;
	const float *apack, *planes, *bias;
	const ptrdiff_t *koff;
	float *y; /* batch item */
	size_t rt, nc, mc, nrb, ncb, nmb;
};

static void gemm_task(void *arg, size_t begin, size_t end)
{
	struct gemm_job *j = arg;
	const struct conv_plan *pl = j->pl;
	size_t per_g = j->nrb * j->ncb * j->nmb;
	size_t Mg = (size_t)pl->Mg, K = (size_t)pl->K, P = (size_t)pl->P;
	for (size_t t = begin; t < end; t++) {
		size_t g = t / per_g, rem = t % per_g;
		size_t rb = rem / (j->ncb * j->nmb);
		rem %= j->ncb * j->nmb;
		size_t cb = rem / j->nmb, mb = rem % j->nmb;
		size_t n0 = cb * j->nc, n = pl->L - n0 < j->nc ? pl->L - n0 : j->nc;
		size_t m0 = mb * j->mc, m = Mg - m0 < j->mc ? Mg - m0 : j->mc;
		size_t r1 = (rb + 1) * j->rt < pl->R ? (rb + 1) * j->rt : pl->R;
		const float *a = j->apack + (g * Mg + m0) * K;
		const float *bias = j->bias ? j->bias + g * Mg + m0 : NULL;
		for (size_t r = rb * j->rt; r < r1; r++) {
			const float *base = j->planes + g * (size_t)pl->Cg * pl->plane + row_base(pl, r) + n0;
			float *c = j->y + (g * Mg + m0) * P + r * pl->L + n0;
			conv_block(pl, m, n, a, base, j->koff, c, P, bias);
			for (size_t i = 0; pl->round && i < m; i++)
				wh_out_round_apply(pl->round, c + i * P, n);
		}
	}
}

/* 2-D convolutions (other than 1x1 pointwise) copy, per task, only the band of input rows
 * that its output rows read, for all channels of the group, so the GEMM reads a buffer
 * that is still in L2 instead of missing on a plane-sized copy. A channel's band is split
 * into stride phases both ways, [row phase][column phase][vr rows][wq], so that for every
 * tap the inputs of consecutive output rows are wq floats apart (band_koff) whatever the
 * strides: the wide GEMM then drops only the wq - L columns between rows. */
struct band_job {
	const struct conv_plan *pl;
	const float *apack, *bias, *x; /* x: batch item */
	const ptrdiff_t *koff;
	float *y;
	size_t rt, nbands, band_plane;
	size_t vr; /* rows of a phase (band_koff) */
	size_t mc, nmb; /* output channels of a task (a multiple of the kernel's rows), tasks a band */
	/* wide: a band's output rows, wr at a time, are one GEMM over the band's padded rows
	 * (the columns between the rows are computed and dropped), into a buffer of mc x
	 * wide_n, instead of one GEMM per row whose last tile is mostly empty; 0: row by row */
	size_t wide_n, wr;
	/* stem: rows through wh_conv_stem_row_avx512 (few multiply-adds an output: the
	 * vectors just cover a row, no tile edge) with the unpacked weights w */
	bool stem;
	const float *w;
	atomic_int failed;
};

/* outputs of a chunk of stem rows (band_task): 64 KB, in L2 when rounded */
#define WH_STEM_CHUNK_FLOATS ((size_t)16 * 1024)

static void band_task(void *arg, size_t begin, size_t end)
{
	struct band_job *j = arg;
	const struct conv_plan *pl = j->pl;
	const struct wh_conv_shape *s = pl->s;
	size_t Cg = (size_t)pl->Cg, Mg = (size_t)pl->Mg, K = (size_t)pl->K, P = (size_t)pl->P;
	size_t sh = (size_t)s->stride[0];
	size_t dkh = (size_t)((s->k[0] - 1) * s->dil[0] + 1), H = (size_t)s->in[0], W = (size_t)s->in[1];
	float *buf = malloc((Cg * j->band_plane + j->mc * j->wide_n + 1) * sizeof(float));
	if (!buf) {
		atomic_store(&j->failed, 1);
		return;
	}
	size_t have = SIZE_MAX; /* the band (g, b) in buf: tasks of one band share its copy */
	for (size_t t = begin; t < end; t++) {
		size_t gb = t / j->nmb, mb = t % j->nmb;
		size_t g = gb / j->nbands, b = gb % j->nbands;
		size_t r0 = b * j->rt, r1 = r0 + j->rt < pl->R ? r0 + j->rt : pl->R;
		size_t pr0 = r0 * sh, nrows = (r1 - r0 - 1) * sh + dkh;
		size_t m0 = mb * j->mc, m = Mg - m0 < j->mc ? Mg - m0 : j->mc;
		for (size_t ci = 0; ci < Cg && have != gb; ci++) {
			const float *xc = j->x + (g * Cg + ci) * (size_t)pl->Pin;
			for (size_t i = 0; i < nrows; i++) {
				size_t pr = pr0 + i;
				const float *src = pr >= (size_t)s->pad0[0] && pr - (size_t)s->pad0[0] < H
							   ? xc + (pr - (size_t)s->pad0[0]) * W : NULL;
				float *d = buf + ci * j->band_plane + ((i % sh) * pl->sw * j->vr + i / sh) * pl->wq;
				prep_row(pl, src, d, j->vr * pl->wq);
			}
		}
		have = gb;
		const float *a = j->apack + (g * Mg + m0) * K;
		const float *bias = j->bias ? j->bias + g * Mg + m0 : NULL;
		float *y = j->y + (g * Mg + m0) * P;
		if (j->wide_n) {
			/* output row r's column ow is the wide product's column (r - ra)*wq + ow:
			 * the same inputs in the same order as row by row, so the same bits */
			float *wide = buf + Cg * j->band_plane;
			size_t step = pl->wq;
			for (size_t ra = r0; ra < r1; ra += j->wr) {
				size_t rb = ra + j->wr < r1 ? ra + j->wr : r1, n = (rb - ra - 1) * step + pl->L;
				conv_block(pl, m, n, a, buf + (ra - r0) * step, j->koff, wide, n, bias);
				for (size_t i = 0; i < m; i++)
					for (size_t r = ra; r < rb; r++)
						memcpy(y + i * P + r * pl->L, wide + i * n + (r - ra) * step,
						       pl->L * sizeof(float));
				for (size_t i = 0; pl->round && i < m; i++)
					wh_out_round_apply(pl->round, y + i * P + ra * pl->L, (rb - ra) * pl->L);
			}
			continue;
		}
		if (j->stem) {
			/* rows in chunks of about WH_STEM_CHUNK_FLOATS outputs: a channel's rows of a
			 * chunk are one run of y, rounded (the fused activation) in one call while
			 * still in cache, instead of one call a row (squeezenet's stem with its Relu
			 * was 0.45 -> 0.73 ms row by row). Without columns between the rows (stride 4
			 * over 224, no padding) a chunk's rows are also one row of the band's padded
			 * input and one call: the same inputs a column as row by row, so the same
			 * bits. */
			size_t ch = WH_STEM_CHUNK_FLOATS / (m * pl->L);
			ch = ch ? ch : 1;
			const float *wg = j->w + (g * Mg + m0) * K;
			/* a fused Relu alone is applied in registers before the store (a call a
			 * channel and chunk of 2 rows was 0.2 ms of squeezenet1_1's stem) */
			const struct wh_out_round *rd = pl->round;
			bool relu = rd && !rd->fn && rd->act && !rd->act->times_input && rd->act->op == WH_EW_RELU;
			for (size_t ra = r0; ra < r1; ra += ch) {
				size_t rb = ra + ch < r1 ? ra + ch : r1;
				float *c = y + ra * pl->L;
				if (pl->wq == pl->L)
					wh_conv_stem_row_avx512(m, (rb - ra) * pl->L, K, wg, K, buf + (ra - r0) * pl->wq,
								j->koff, c, P, bias, relu);
				else
					for (size_t r = ra; r < rb; r++)
						wh_conv_stem_row_avx512(m, pl->L, K, wg, K, buf + (r - r0) * pl->wq, j->koff,
									y + r * pl->L, P, bias, relu);
				for (size_t i = 0; pl->round && !relu && i < m; i++)
					wh_out_round_apply(pl->round, c + i * P, (rb - ra) * pl->L);
			}
			continue;
		}
		for (size_t r = r0; r < r1; r++) {
			float *c = y + r * pl->L;
			conv_block(pl, m, pl->L, a, buf + (r - r0) * pl->wq, j->koff, c, P, bias);
			for (size_t i = 0; pl->round && i < m; i++)
				wh_out_round_apply(pl->round, c + i * P, pl->L);
		}
	}
	free(buf);
}

struct dw_job {
	const struct conv_plan *pl;
	const float *x, *w, *b;
	const ptrdiff_t *toff; /* tap offsets in a plane */
	float *y;
	atomic_int failed;
	size_t span, rstep; /* span_of's: 0, or one call of span columns, rows rstep apart */
};

#define WH_DW_SPAN_MAX ((size_t)2048)

/* Depthwise planes of short rows (a 3x3 over 25x5 is 25 calls of 5 columns, mostly call
 * overhead and empty vector lanes): in 2-D, output row r reads the plane at r * rstep, so
 * one call over span = (R - 1) * rstep + L consecutive columns computes every output at
 * column r * rstep + l, with the gap columns in between computed and dropped. Each column
 * is summed alone, taps in the same order, so the bits are those of the row-by-row calls;
 * every column read lies below the last real output's. Used when the gaps at most double
 * the work; 0 otherwise. */
static size_t span_of(const struct conv_plan *pl, size_t *rstep)
{
	const struct wh_conv_shape *s = pl->s;
	if (s->nsp != 2 || pl->R < 2 || pl->L >= 16)
		return 0;
	*rstep = (size_t)s->stride[0] * pl->ostr[0];
	size_t span = (pl->R - 1) * *rstep + pl->L;
	return *rstep <= 2 * pl->L && span <= WH_DW_SPAN_MAX ? span : 0;
}

/* Depthwise with one output channel per group: each plane (prepared when padded or
 * strided) row by row through the single-row kernel, which sums the taps in MLAS's order. */
static void dw_task(void *arg, size_t begin, size_t end)
{
	struct dw_job *j = arg;
	const struct conv_plan *pl = j->pl;
	const struct wh_conv_shape *s = pl->s;
	float *scratch = NULL;
	if (pl->prep) {
		scratch = malloc(pl->plane * sizeof(float));
		if (!scratch) {
			atomic_store(&j->failed, 1);
			return;
		}
	}
	size_t KS = (size_t)pl->KS, P = (size_t)pl->P;
	for (size_t t = begin; t < end; t++) {
		size_t n = t / (size_t)s->M, co = t % (size_t)s->M;
		const float *xc = j->x + (n * (size_t)s->C + co) * (size_t)pl->Pin;
		if (pl->prep) {
			prep_plane(pl, xc, scratch);
			xc = scratch;
		}
		float *y = j->y + (n * (size_t)s->M + co) * P;
		const float *bias = j->b ? j->b + co : NULL;
		if (j->span) {
			/* short rows: one call over the plane's rows side by side (see span_of) */
			float tmp[WH_DW_SPAN_MAX];
			pl->kern.m1(j->span, KS, j->w + co * KS, xc, j->toff, tmp, bias);
			for (size_t r = 0; r < pl->R; r++)
				memcpy(y + r * pl->L, tmp + r * j->rstep, pl->L * sizeof(float));
		} else {
			for (size_t r = 0; r < pl->R; r++)
				pl->kern.m1(pl->L, KS, j->w + co * KS, xc + row_base(pl, r), j->toff, y + r * pl->L, bias);
		}
		wh_out_round_apply(pl->round, y, P);
	}
	free(scratch);
}

/* The direct depthwise kernels (conv-internal.h): the geometry of one plane, or false
 * where they do not apply (scalar ISA, 3-D, a column stride above 2, a kernel wider than
 * WH_DW_MAXK, sizes that do not fit their lane arithmetic). */
#define WH_DW_BIG_P ((size_t)1024)

static bool dw_direct_geom(const struct conv_plan *pl, enum wh_conv_algo algo, struct wh_dw_geom *g)
{
	const struct wh_conv_shape *s = pl->s;
	int last = s->nsp - 1;
	if (pl->kern.isa < WH_ISA_AVX2 || s->nsp > 2 || s->stride[last] > 2)
		return false;
	bool two = s->nsp == 2;
	*g = (struct wh_dw_geom){
		.H = two ? (size_t)s->in[0] : 1, .W = (size_t)s->in[last],
		.OH = two ? (size_t)s->out[0] : 1, .OW = (size_t)s->out[last],
		.KH = two ? (size_t)s->k[0] : 1, .KW = (size_t)s->k[last],
		.sh = two ? (size_t)s->stride[0] : 1, .sw = (size_t)s->stride[last],
		.dh = two ? (size_t)s->dil[0] : 1, .dw = (size_t)s->dil[last],
		.ph = two ? (size_t)s->pad0[0] : 0, .pw = (size_t)s->pad0[last],
	};
	/* Kernels above 3x3 (5x5, 7x7) only where they measured faster than the padded plane
	 * through the single-row kernel (one thread, timing wh_conv_f32_algo alone): AVX-512 (AVX2
	 * lost 1.2-4x), column stride 1 (stride 2 loads twice the inputs: 0.67-1.1x), planes
	 * of at most WH_DW_BIG_P outputs (7x7 on 14x14 1.35x, 7x7 1.9x, 5x5 on 14x14 1.5x,
	 * 28x28 1.07-1.26x; 56x56 0.97-1.03x, and 7x7 on convnext's 16 planes of 56x56 lost
	 * 1.6x with two threads, the padding masks being remade every two planes). The AVX-512
	 * phase planes (conv-dw-avx512.c planes_phased: strides 1-2, no dilation) take every
	 * size: 5x5 at stride 2 on mnasnet's and efficientnet's planes 1.8-2.8x faster than the
	 * padded plane with one thread, 3x3 at stride 2 1.1-1.3x than the masked rows */
	bool phased = pl->kern.isa >= WH_ISA_AVX512 && g->sh <= 2 && g->dh == 1 && g->dw == 1;
	if (algo == WH_CONV_AUTO && g->KH * g->KW > 9 && !phased &&
	    (pl->kern.isa < WH_ISA_AVX512 || g->sw != 1 || g->OH * g->OW > WH_DW_BIG_P))
		return false;
	size_t v[] = {g->H, g->W, g->OH, g->OW, g->sh, g->dh * g->KH, g->dw * g->KW, g->ph, g->pw};
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (v[i] >= WH_DW_MAXDIM)
			return false;
	return g->OH * g->OW < WH_DW_MAXDIM;
}

/* Whether conv_f32 takes the direct depthwise kernels (their fused order) for this plan. */
static bool dw_direct_plan(const struct conv_plan *pl, enum wh_conv_algo algo, struct wh_dw_geom *g)
{
	const struct wh_conv_shape *s = pl->s;
	return !ort_n1(s) && !ort_m1t(s) && pl->Cg == 1 && pl->Mg == 1 && s->nsp <= 2 && !pl->flat &&
	       algo != WH_CONV_GEMM && dw_direct_geom(pl, algo, g);
}

bool wh_conv_dw_direct(const struct wh_cpu_features *cpu, const struct wh_conv_shape *s, enum wh_conv_algo algo)
{
	struct conv_plan pl;
	struct wh_dw_geom g;
	return plan_init(s, cpu->isa, &pl) == WH_OK && dw_direct_plan(&pl, algo, &g);
}

#define WH_DW_GRAIN ((size_t)8)

struct dwd_job {
	const struct conv_plan *pl;
	const struct wh_dw_geom *g;
	const float *x, *w, *b;
	float *y;
};

static void dwd_task(void *arg, size_t begin, size_t end)
{
	struct dwd_job *j = arg;
	const struct conv_plan *pl = j->pl;
	size_t KS = (size_t)pl->KS, P = (size_t)pl->P, M = (size_t)pl->s->M;
	/* runs of channels of one batch item (C == M: plane t of the input is t's) */
	for (size_t t = begin; t < end;) {
		size_t co = t % M, n = M - co < end - t ? M - co : end - t;
		const float *xc = j->x + t * (size_t)pl->Pin, *wc = j->w + co * KS, *bias = j->b ? j->b + co : NULL;
		if (pl->kern.isa >= WH_ISA_AVX512)
			wh_conv_dw_planes_avx512(j->g, n, xc, wc, bias, j->y + t * P);
		else
			wh_conv_dw_planes_avx2(j->g, n, xc, wc, bias, j->y + t * P);
		t += n;
	}
	wh_out_round_apply(pl->round, j->y + begin * P, (end - begin) * P);
}

#define WH_BAND_FLOATS ((size_t)128 * 1024)
#define WH_BAND_MIN_M ((size_t)16)
#define WH_BAND_MACS ((size_t)64)
/* floats of a task's wide product (band_job): its output stays in L2 until copied out */
#define WH_WIDE_FLOATS ((size_t)32 * 1024)
/* wide products copy each output once more: worth it from this many multiply-adds an
 * output (squeezenet's stem, K = 27, was 15 % slower wide than row by row) */
#define WH_WIDE_MIN_K ((size_t)64)
#define WH_IM2COL_FLOATS ((uint64_t)256 * 1024)

/* Offsets in a band (band_job) of the input that output (0, 0) reads for k = (channel,
 * tap): tap (kh, kw) reads row phase th % sh, row th / sh, column phase tw % sw, column
 * tw / sw (th, tw: the dilated tap). */
static void band_koff(const struct conv_plan *pl, size_t band_plane, size_t vr, ptrdiff_t *koff)
{
	const struct wh_conv_shape *s = pl->s;
	size_t sh = (size_t)s->stride[0], sw = pl->sw, wq = pl->wq, k = 0;
	for (int64_t ci = 0; ci < pl->Cg; ci++)
		for (int64_t kh = 0; kh < s->k[0]; kh++)
			for (int64_t kw = 0; kw < s->k[1]; kw++) {
				size_t th = (size_t)(kh * s->dil[0]), tw = (size_t)(kw * s->dil[1]);
				koff[k++] = (ptrdiff_t)((size_t)ci * band_plane + ((th % sh) * sw + tw % sw) * vr * wq +
							(th / sh) * wq + tw / sw);
			}
}

/* Padding lanes the best tile computes on an m x n product. */
static uint64_t tile_lanes(enum wh_isa isa, size_t m, size_t n)
{
	struct wh_sgemm_kernel k;
	wh_sgemm_kernel_for(isa, m, n, &k);
	return (uint64_t)round_up(m, k.mr) * round_up(n, k.nr);
}

/* Whether a plane of short rows is better served by wide bands (conv_bands: a copy of
 * the padded input, the columns between rows computed and dropped) than by an im2col
 * copy (KS times the input, every lane useful): the wide GEMM over the whole plane may
 * compute up to a tenth more lanes, which the smaller copy pays for. */
static bool wide_beats_im2col(const struct conv_plan *pl)
{
	size_t Mg = (size_t)pl->Mg;
	if (pl->R < 2 || Mg < 2 || (size_t)pl->K < WH_WIDE_MIN_K)
		return false;
	uint64_t wide = tile_lanes(pl->kern.isa, Mg, (pl->R - 1) * pl->wq + pl->L);
	return wide * 10 <= tile_lanes(pl->kern.isa, Mg, (size_t)pl->P) * 11;
}

static enum wh_status conv_bands(struct conv_plan *pl, struct wh_threadpool *pool, int threads,
				 const float *x, const float *w, const float *b, float *y)
{
	const struct wh_conv_shape *s = pl->s;
	size_t K = (size_t)pl->K, G = (size_t)s->G, Cg = (size_t)pl->Cg;
	size_t row = pl->sw * pl->wq, sh = (size_t)s->stride[0];
	size_t dkh = (size_t)((s->k[0] - 1) * s->dil[0] + 1);
	size_t per_row = Cg * row;
	size_t fit = WH_BAND_FLOATS / (per_row ? per_row : 1);
	size_t rt = fit > dkh ? (fit - dkh) / sh + 1 : 1;
	if (rt > pl->R)
		rt = pl->R;
	size_t want = tiles_wanted(threads, (uint64_t)s->M * (uint64_t)pl->P * (uint64_t)K);
	/* enough tasks for the threads: first the output channels in halves of at least
	 * WH_BAND_MIN_M rows (each such task copies the band again: while it does at least
	 * WH_BAND_MACS multiply-adds per float copied, about mc * KS / (sh * sw), the copy is
	 * cheap next to its GEMM), then shorter bands (whose wide GEMMs are narrower) */
	size_t Mg = (size_t)pl->Mg, nmb = 1, KS = (size_t)pl->KS;
	while (G * ((pl->R + rt - 1) / rt) * nmb < want) {
		size_t half = Mg / (2 * nmb);
		if (half >= WH_BAND_MIN_M && half * KS >= WH_BAND_MACS * sh * pl->sw)
			nmb *= 2;
		else if (rt > 1)
			rt = (rt + 1) / 2;
		else
			break;
	}
	struct band_job j = {.pl = pl, .bias = b, .rt = rt, .nbands = (pl->R + rt - 1) / rt};
	/* row by row or wide (band_job), each with the tile that computes the fewest padding
	 * lanes: only speed depends on the choice */
	size_t mraw = (Mg + nmb - 1) / nmb, wr = WH_WIDE_FLOATS / (mraw * pl->wq);
	if (wr > rt)
		wr = rt;
	size_t wn = wr ? (wr - 1) * pl->wq + pl->L : 0;
	struct wh_sgemm_kernel kr, kw;
	wh_sgemm_kernel_for(pl->kern.isa, mraw, pl->L, &kr);
	wh_sgemm_kernel_for(pl->kern.isa, mraw, wn, &kw);
	uint64_t lanes_r = (uint64_t)wr * round_up(pl->L, kr.nr) * round_up(mraw, kr.mr);
	uint64_t lanes_w = (uint64_t)round_up(wn, kw.nr) * round_up(mraw, kw.mr);
	if (wr > 1 && K >= WH_WIDE_MIN_K && lanes_w < lanes_r) {
		pl->kern = kw;
		j.wide_n = wn;
		j.wr = wr;
	} else {
		pl->kern = kr;
	}
	/* few multiply-adds an output in one chain (the stems, K = 27 or 48): the stem rows
	 * (same chains, so the same bits) */
	j.stem = !j.wide_n && pl->kern.isa >= WH_ISA_AVX512 && pl->kb == 0 && Mg >= 2 && K <= WH_CONV_STEM_MAX_K;
	j.w = w;
	j.mc = round_up(mraw, pl->kern.mr);
	j.nmb = (Mg + j.mc - 1) / j.mc;
	uint64_t bp;
	j.vr = ((rt - 1) * sh + dkh + sh - 1) / sh;
	if (!wh_mul_u64((uint64_t)sh * j.vr, row, &bp) || bp > WH_MAX_ELEMENTS / (Cg ? Cg : 1))
		return wh_error(WH_ERR_OVERFLOW, "conv: padded input rows are too large (use smaller inputs)");
	j.band_plane = (size_t)bp;
	atomic_init(&j.failed, 0);
	enum wh_status st = WH_OK;
	float *apack = NULL;
	/* the stem rows read the weights as they are */
	const float *a = j.stem ? w : conv_apack(pl, pool, w, &apack);
	ptrdiff_t *koff = malloc((K ? K : 1) * sizeof(ptrdiff_t));
	if (!a || !koff) {
		st = wh_error(WH_ERR_NOMEM, "conv: out of memory for packed weights");
		goto out;
	}
	band_koff(pl, j.band_plane, j.vr, koff);
	j.apack = a;
	j.koff = koff;
	size_t ntasks = G * j.nbands * j.nmb, grain = ntasks / want;
	for (int64_t n = 0; n < s->N && !st; n++) {
		j.x = x + (size_t)n * (size_t)s->C * (size_t)pl->Pin;
		j.y = y + (size_t)n * (size_t)s->M * (size_t)pl->P;
		wh_parallel_for(pool, ntasks, grain ? grain : 1, band_task, &j);
		if (atomic_load(&j.failed))
			st = wh_error(WH_ERR_NOMEM, "conv: out of memory for a band of padded input rows");
	}
out:
	free(apack);
	free(koff);
	return st;
}

/* One output position with several output channels per group: MLAS's single-column
 * kernel, the columns of every (batch item, group) gathered first, then the output
 * channels in parallel. */
struct n1_job {
	const struct wh_conv_shape *s;
	const float *v, *w, *b; /* v: the column of (n, g) at (n * G + g) * K */
	float *y;
	size_t K;
	const struct wh_out_round *round;
};

static void n1_task(void *arg, size_t begin, size_t end)
{
	struct n1_job *j = arg;
	size_t M = (size_t)j->s->M, Mg = M / (size_t)j->s->G;
	for (size_t t = begin; t < end; t++) {
		size_t n = t / M, co = t % M, g = co / Mg;
		const float *v = j->v + (n * (size_t)j->s->G + g) * j->K;
		float acc = n1_dot(j->w + co * j->K, v, j->K, co % Mg, Mg);
		j->y[t] = j->b ? acc + j->b[co] : acc;
	}
	wh_out_round_apply(j->round, j->y + begin, end - begin);
}

static enum wh_status conv_n1(const struct wh_conv_shape *s, struct wh_threadpool *pool, const float *x,
			      const float *w, const float *b, float *y, const struct wh_out_round *round)
{
	size_t K = (size_t)(s->C / s->G * prod_dims(s->k, s->nsp)), cols = (size_t)(s->N * s->G);
	uint64_t nv;
	if (!wh_mul_u64(cols, K, &nv) || nv > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "conv: %zu columns of %zu inputs are too large", cols, K);
	float *v = malloc((nv ? nv : 1) * sizeof(float));
	if (!v)
		return wh_error(WH_ERR_NOMEM, "conv: out of memory for %zu columns of %zu inputs", cols, K);
	int64_t o[WH_MAX_RANK] = {0};
	for (int64_t n = 0; n < s->N; n++)
		for (int64_t g = 0; g < s->G; g++)
			conv_column(s, x, n, g, o, v + (size_t)(n * s->G + g) * K);
	struct n1_job j = {.s = s, .v = v, .w = w, .b = b, .y = y, .K = K, .round = round};
	size_t grain = ((size_t)1 << 16) / (K ? K : 1);
	wh_parallel_for(pool, (size_t)(s->N * s->M), grain ? grain : 1, n1_task, &j);
	free(v);
	return WH_OK;
}

/* ---- 1x1 convolutions with few output positions: the transposed product ----
 *
 * A plane of 49 or 196 positions fills the vectors of the product C = W X (positions in
 * the lanes) badly and pays a tile edge on every row of output channels. Computing C^T =
 * X^T W^T instead puts the output channels in the lanes (whole vectors for 32 or 48 of
 * them) and broadcasts the positions, whose count the tile's rows can cover with little
 * padding; the tile is then stored transposed (wh_sgemm_t_store_avx512). Each output's
 * chain is unchanged (gemm-internal.h), so are the bits. */

/* Planes of at most this many positions, with at least WH_PWT_MINM output channels: where
 * it measured faster with one thread (mnasnet0_35's 112->1280 at 7x7 0.205 -> 0.179 ms, its
 * 64->384 at 7x7 4 % faster). At 14x14 (196 positions) it lost by 20 to 40 % (the product
 * gains little there, and the transposed store and the X^T copy cost more than it gains),
 * at 7x7 with 64 output channels by 10 %. */
#define WH_PWT_MAXP 64
#define WH_PWT_MINM 128

static bool pwt_applies(const struct conv_plan *pl, enum wh_isa isa)
{
	return isa >= WH_ISA_AVX512 && pl->flat && pl->s->G == 1 && pl->P <= WH_PWT_MAXP &&
	       pl->Mg >= WH_PWT_MINM && pl->P > 1;
}

/* The tile for P positions by M channels: 6 to 8 rows of 48 channels or 9 to 12 rows of 32
 * (the AVX-512 kernels take any row count up to theirs), whichever pads the product least;
 * on a tie the most rows. Only speed depends on it. */
static void pwt_kernel(size_t P, size_t M, struct wh_sgemm_kernel *k)
{
	wh_sgemm_kernel_get(WH_ISA_AVX512, k);
	uint64_t best = UINT64_MAX;
	for (size_t mr = WH_SGEMM_MR_AVX512; mr >= 6; mr--) {
		bool w = mr <= WH_SGEMM_MR_AVX512W;
		size_t nr = w ? WH_SGEMM_NR_AVX512W : WH_SGEMM_NR_AVX512;
		uint64_t padded = (uint64_t)((P + mr - 1) / mr * mr) * (uint64_t)((M + nr - 1) / nr * nr);
		if (padded < best) {
			best = padded;
			k->mr = mr;
			k->nr = nr;
			k->ukernel = w ? wh_sgemm_ukernel_avx512w : wh_sgemm_ukernel_avx512;
		}
	}
}

struct pwt_job {
	const struct conv_plan *pl;
	const struct wh_sgemm_kernel *kern;
	const float *xpack, *wpack, *bias;
	const ptrdiff_t *boff;
	float *y; /* batch item */
	size_t mc; /* output channels a task, a multiple of the tile's nr */
	atomic_int failed;
};

static void pwt_task(void *arg, size_t begin, size_t end)
{
	struct pwt_job *j = arg;
	const struct conv_plan *pl = j->pl;
	size_t P = (size_t)pl->P, K = (size_t)pl->K, M = (size_t)pl->s->M, nr = j->kern->nr;
	/* one panel of channels at a time: its tile of C^T is still in L1 when stored */
	float *ct = malloc(P * nr * sizeof(float));
	if (!ct) {
		atomic_store(&j->failed, 1);
		return;
	}
	for (size_t m0 = begin * j->mc; m0 < end * j->mc && m0 < M; m0 += nr) {
		size_t m = M - m0 < nr ? M - m0 : nr;
		wh_sgemm_block_kb_packed(j->kern, P, m, K, pl->kb, j->xpack, j->wpack + m0 * K, nr * K, j->boff, ct,
					 nr);
		float *y = j->y + m0 * P;
		wh_sgemm_t_store_avx512(P, m, ct, nr, j->bias ? j->bias + m0 : NULL, y, P);
		for (size_t i = 0; pl->round && i < m; i++)
			wh_out_round_apply(pl->round, y + i * P, P);
	}
	free(ct);
}

/* wpack: W^T packed for kern (the engine's copy), or NULL: pack it here. */
static enum wh_status conv_pwt(const struct conv_plan *pl, struct wh_threadpool *pool, int threads,
			       const struct wh_sgemm_kernel *kp, const float *wpack, const float *x, const float *w,
			       const float *b, float *y)
{
	const struct wh_conv_shape *s = pl->s;
	size_t P = (size_t)pl->P, K = (size_t)pl->K, M = (size_t)s->M;
	struct wh_sgemm_kernel kern = *kp;
	enum wh_status st = WH_OK;
	float *own = NULL, *xpack = malloc((P * K + 1) * sizeof(float));
	ptrdiff_t *boff = malloc((K ? K : 1) * sizeof(ptrdiff_t));
	if (!wpack && (own = malloc(wh_sgemm_pack_b_floats(kern.nr, K, M) * sizeof(float))))
		wh_sgemm_pack_b(kern.nr, pool, K, M, w, 1, K, own), wpack = own;
	if (!wpack || !xpack || !boff) {
		st = wh_error(WH_ERR_NOMEM, "conv: out of memory for packed weights or input");
		goto out;
	}
	for (size_t k = 0; k < K; k++)
		boff[k] = (ptrdiff_t)(k * kern.nr);
	struct pwt_job j = {.pl = pl, .kern = &kern, .xpack = xpack, .wpack = wpack, .bias = b, .boff = boff};
	atomic_init(&j.failed, 0);
	size_t want = tiles_wanted(threads, (uint64_t)M * P * K);
	j.mc = round_up((M + want - 1) / want, kern.nr);
	size_t ntasks = (M + j.mc - 1) / j.mc;
	for (int64_t n = 0; n < s->N; n++) {
		const float *xn = x + (size_t)n * (size_t)s->C * P;
		/* X^T (P x K, element (p, k) at xn[k * P + p]) in panels of the tile's rows */
		wh_sgemm_pack_groups(&kern, pool, 1, P, K, xn, 0, 1, P, xpack);
		j.y = y + (size_t)n * M * P;
		wh_parallel_for(pool, ntasks, 1, pwt_task, &j);
		if (atomic_load(&j.failed)) {
			st = wh_error(WH_ERR_NOMEM, "conv: out of memory for a transposed output tile");
			break;
		}
	}
out:
	free(own);
	free(xpack);
	free(boff);
	return st;
}

enum wh_status wh_conv_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			   const struct wh_conv_shape *s, const float *x, const float *w,
			   const float *b, float *y)
{
	return wh_conv_f32_algo(cpu, pool, s, x, w, b, y, WH_CONV_AUTO);
}

enum wh_status wh_conv_f32_algo(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
				const struct wh_conv_shape *s, const float *x, const float *w,
				const float *b, float *y, enum wh_conv_algo algo)
{
	return wh_conv_f32_round(cpu, pool, s, x, w, b, y, algo, NULL);
}

static enum wh_status conv_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			       const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y,
			       enum wh_conv_algo algo, const struct wh_out_round *round, const struct wh_kernel_ctx *wctx);

enum wh_status wh_conv_f32_round(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
				 const struct wh_conv_shape *s, const float *x, const float *w,
				 const float *b, float *y, enum wh_conv_algo algo, const struct wh_out_round *round)
{
	return conv_f32(cpu, pool, s, x, w, b, y, algo, round, NULL);
}

static enum wh_status conv_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			       const struct wh_conv_shape *s, const float *x, const float *w, const float *b, float *y,
			       enum wh_conv_algo algo, const struct wh_out_round *round, const struct wh_kernel_ctx *wctx)
{
	struct conv_plan pl;
	enum wh_status st = plan_init(s, cpu->isa, &pl);
	if (st)
		return st;
	pl.round = round;
	pl.wctx = wctx;
	if (s->N == 0 || pl.P == 0 || s->M == 0)
		return WH_OK;
	int threads = wh_threadpool_size(pool);
	uint64_t work = (uint64_t)s->N * (uint64_t)s->M * (uint64_t)pl.P * (uint64_t)(pl.K ? pl.K : 1);
	if (work < ((uint64_t)1 << 16))
		pool = NULL, threads = 1;

	if (ort_n1(s))
		return conv_n1(s, pool, x, w, b, y, round);
	if (ort_m1t(s)) {
		/* each output's window is contiguous in its input plane */
		size_t KS = (size_t)pl.KS, W = (size_t)s->in[s->nsp - 1], P = (size_t)pl.P;
		for (int64_t n = 0; n < s->N; n++)
			for (int64_t co = 0; co < s->M; co++) {
				const float *xc = x + (size_t)(n * s->C + co) * (size_t)pl.Pin;
				float *yc = y + (size_t)(n * s->M + co) * P;
				for (size_t p = 0; p < P; p++) {
					float acc = n1_dot(w + (size_t)co * KS, xc + p * W, KS, p, P);
					yc[p] = b ? acc + b[co] : acc;
				}
				wh_out_round_apply(round, yc, P);
			}
		return WH_OK;
	}
	if (pl.Cg == 1 && pl.Mg == 1 && s->nsp <= 2 && !pl.flat && algo != WH_CONV_GEMM) {
		struct wh_dw_geom dg;
		if (dw_direct_plan(&pl, algo, &dg)) {
			/* planes are computed alone: any chunking gives the same bits */
			struct dwd_job dj = {.pl = &pl, .g = &dg, .x = x, .w = w, .b = b, .y = y};
			/* several planes a chunk where there are enough: a call makes its padding
			 * masks once for all its planes (conv-dw-*.c) */
			size_t nm = (size_t)(s->N * s->M), grain = wh_grain_for((uint64_t)pl.P * (uint64_t)pl.KS);
			if (grain < WH_DW_GRAIN)
				grain = nm / 8 < WH_DW_GRAIN ? (nm / 8 ? nm / 8 : 1) : WH_DW_GRAIN;
			/* the small-plane kernel takes 16 planes at a time (conv-internal.h) */
			if (pl.kern.isa >= WH_ISA_AVX512 && wh_dw_lanes(&dg))
				grain = (grain + 15) / 16 * 16;
			wh_parallel_for(pool, nm, grain, dwd_task, &dj);
			return WH_OK;
		}
		ptrdiff_t *toff = malloc((size_t)pl.KS * sizeof(ptrdiff_t));
		if (!toff)
			return wh_error(WH_ERR_NOMEM, "conv: out of memory for tap offsets");
		plan_koff(&pl, pl.plane, toff);
		struct dw_job dj = {.pl = &pl, .x = x, .w = w, .b = b, .y = y, .toff = toff};
		dj.span = span_of(&pl, &dj.rstep);
		atomic_init(&dj.failed, 0);
		/* planes are computed alone, so any chunking gives the same bits: about
		 * WH_CHUNK_ELEMS multiply-adds a chunk rather than a plane each */
		wh_parallel_for(pool, (size_t)(s->N * s->M), wh_grain_for((uint64_t)pl.P * (uint64_t)pl.KS), dw_task, &dj);
		free(toff);
		if (atomic_load(&dj.failed))
			return wh_error(WH_ERR_NOMEM, "conv: out of memory for a padded input plane");
		return WH_OK;
	}

	if (pwt_applies(&pl, pl.kern.isa)) {
		/* W^T costs a strided copy (the plane GEMM's weights a contiguous one): a layer
		 * of an engine takes this path only with the engine's packed copy, so that a run
		 * without one (an engine's first, a computed or rounded weight) packs nothing
		 * more than before; a driver called without an engine packs it per call */
		struct wh_sgemm_kernel kt;
		pwt_kernel((size_t)pl.P, (size_t)s->M, &kt);
		const float *wt = wctx ? wh_gemm_packed_wt(wctx, 1, kt.nr, (size_t)pl.K, (size_t)s->M) : NULL;
		if (!wctx || wt)
			return conv_pwt(&pl, pool, threads, &kt, wt, x, w, b, y);
	}
	size_t K = (size_t)pl.K, Mg = (size_t)pl.Mg, G = (size_t)s->G;
	if (s->nsp == 2 && !pl.flat) {
		/* Short output rows (a row is narrower than the kernel's tile): one GEMM over all
		 * the positions of an im2col copy instead of one call per row with mostly empty
		 * tiles. Each output still sums K in the same order and blocks, so the bits are
		 * those of the row-by-row GEMM. Bounded to small planes. */
		uint64_t cols;
		if (pl.L < pl.kern.nr && wh_mul_u64((uint64_t)pl.KS * (uint64_t)pl.P, (uint64_t)s->C, &cols) &&
		    cols <= WH_IM2COL_FLOATS && !wide_beats_im2col(&pl)) {
			pl.im2col = pl.prep = true;
			pl.plane = (size_t)pl.KS * (size_t)pl.P;
			pl.R = 1;
			pl.L = (size_t)pl.P;
		} else {
			return conv_bands(&pl, pool, threads, x, w, b, y);
		}
	}
	/* the tile that computes the fewest padding lanes (only speed depends on it) */
	wh_sgemm_kernel_for(pl.kern.isa, Mg, pl.L, &pl.kern);
	size_t np = pl.plane * (size_t)s->C;
	float *apack;
	const float *a = conv_apack(&pl, pool, w, &apack);
	ptrdiff_t *koff = malloc((K ? K : 1) * sizeof(ptrdiff_t));
	float *planes = NULL;
	if (pl.prep)
		planes = malloc((np ? np : 1) * sizeof(float));
	if (!a || !koff || (pl.prep && !planes)) {
		st = wh_error(WH_ERR_NOMEM, "conv: out of memory for packed weights or padded input");
		goto out;
	}
	if (pl.im2col)
		for (size_t k = 0; k < K; k++)
			koff[k] = (ptrdiff_t)(k * (size_t)pl.P);
	else
		plan_koff(&pl, pl.plane, koff);

	struct gemm_job gj = {.pl = &pl, .apack = a, .koff = koff, .bias = b};
	size_t NR = pl.kern.nr, MR = pl.kern.mr;
	size_t ncb = (pl.L + 511) / 512;
	gj.nc = round_up((pl.L + ncb - 1) / ncb, NR);
	gj.rt = 1024 / gj.nc ? 1024 / gj.nc : 1;
	if (gj.rt > pl.R)
		gj.rt = pl.R;
	gj.mc = Mg <= 16 * MR ? Mg : 16 * MR;
	size_t want = tiles_wanted(threads, (uint64_t)s->M * (uint64_t)pl.P * (uint64_t)K);
	for (;;) {
		gj.nrb = (pl.R + gj.rt - 1) / gj.rt;
		gj.ncb = (pl.L + gj.nc - 1) / gj.nc;
		gj.nmb = (Mg + gj.mc - 1) / gj.mc;
		if (G * gj.nrb * gj.ncb * gj.nmb >= want)
			break;
		if (gj.rt > 1)
			gj.rt = (gj.rt + 1) / 2;
		else if (gj.nc > 2 * NR)
			gj.nc = round_up(gj.nc / 2, NR);
		else if (gj.mc > MR)
			gj.mc = round_up(gj.mc / 2, MR);
		else
			break;
	}
	size_t ntiles = G * gj.nrb * gj.ncb * gj.nmb;
	for (int64_t n = 0; n < s->N; n++) {
		const float *xn = x + (size_t)n * (size_t)s->C * (size_t)pl.Pin;
		if (pl.prep) {
			struct prep_job pj = {.pl = &pl, .x = xn, .planes = planes};
			wh_parallel_for(pool, (size_t)s->C, wh_grain_for(pl.plane), prep_task, &pj);
		}
		gj.planes = pl.prep ? planes : xn;
		gj.y = y + (size_t)n * (size_t)s->M * (size_t)pl.P;
		wh_parallel_for(pool, ntiles, ntiles / want ? ntiles / want : 1, gemm_task, &gj);
	}
out:
	free(apack);
	free(koff);
	free(planes);
	return st;
}

/* ---- fast float32 ConvTranspose: GEMM into columns, then col2im per output channel ---- */

struct col2im_job {
	const struct wh_conv_shape *s;
	const float *col, *b;
	float *y;  /* batch item */
	int64_t g; /* group of this pass */
};

static void col2im_task(void *arg, size_t begin, size_t end)
{
	struct col2im_job *j = arg;
	const struct wh_conv_shape *s = j->s;
	int nsp = s->nsp, last = nsp - 1;
	int64_t Mg = s->M / s->G, KS = prod_dims(s->k, nsp), Pin = prod_dims(s->in, nsp);
	int64_t P = prod_dims(s->out, nsp), Rin = prod_dims(s->in, last);
	int64_t ostr[WH_MAX_RANK];
	wh_shape_strides(s->out, nsp, ostr);
	for (size_t m = begin; m < end; m++) {
		int64_t co = j->g * Mg + (int64_t)m;
		float *yp = j->y + co * P;
		memset(yp, 0, (size_t)P * sizeof(float));
		int64_t kx[WH_MAX_RANK] = {0};
		for (int64_t kp = 0; kp < KS; kp++, next_index(kx, s->k, nsp)) {
			const float *cp = j->col + ((int64_t)m * KS + kp) * Pin;
			int64_t ix[WH_MAX_RANK] = {0};
			for (int64_t r = 0; r < Rin; r++, next_index(ix, s->in, last)) {
				int64_t off = 0;
				bool ok = true;
				for (int d = 0; d < last; d++) {
					int64_t o = ix[d] * s->stride[d] + kx[d] * s->dil[d] - s->pad0[d];
					if (o < 0 || o >= s->out[d])
						ok = false;
					off += o * ostr[d];
				}
				if (!ok)
					continue;
				const float *cr = cp + r * s->in[last];
				int64_t st = s->stride[last], o0 = kx[last] * s->dil[last] - s->pad0[last];
				/* inputs i with 0 <= i*st + o0 < out */
				int64_t i0 = o0 >= 0 ? 0 : (-o0 + st - 1) / st;
				int64_t i1 = s->out[last] - o0 <= 0 ? 0 : (s->out[last] - o0 + st - 1) / st;
				if (i1 > s->in[last])
					i1 = s->in[last];
				float *yr = yp + off + o0;
				for (int64_t i = i0; i < i1; i++)
					yr[i * st] += cr[i];
			}
		}
		if (j->b)
			for (int64_t p = 0; p < P; p++)
				yp[p] += j->b[co];
	}
}

/* ONNX Runtime's ConvTranspose (weights constant, so transposed at load) computes the
 * columns with MLAS's GEMM: K = input channels in MLAS's blocks, or for a single input
 * position its single-column kernel (n1_dot); then col2im adds the taps of each output in
 * (kh, kw) order from zero, and the bias last. */
static bool convt_n1(const struct wh_conv_shape *s)
{
	return prod_dims(s->in, s->nsp) == 1 && s->C / s->G > 1 && s->M / s->G * prod_dims(s->k, s->nsp) > 1;
}

/* 2-D ConvTranspose whose kernel rows never overlap (dilated kernel height <= stride):
 * each output row receives contributions from one input row only, so tasks over bands of
 * input rows own disjoint output rows. A task computes one input row's columns into a
 * small buffer (still in cache) and scatters them at once, instead of a plane-sized
 * column buffer. Each output adds its taps in (kh, kw) order from zero, then the bias, as
 * ONNX Runtime does. */
static void interleave2_scalar(const float *c0, const float *c1, float bias, size_t n, float *dst)
{
	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = bias + c0[i];
		dst[2 * i + 1] = bias + c1[i];
	}
}

struct convt_band_job {
	const struct wh_conv_shape *s;
	const struct wh_sgemm_kernel *kern;
	void (*interleave2)(const float *c0, const float *c1, float bias, size_t n, float *dst);
	const float *apack, *x, *b; /* x, y: batch item */
	const ptrdiff_t *koff;
	float *y;
	size_t rows, nbands, kb;
	atomic_int failed;
};

static void convt_band_task(void *arg, size_t begin, size_t end)
{
	struct convt_band_job *j = arg;
	const struct wh_conv_shape *s = j->s;
	int64_t Cg = s->C / s->G, Mg = s->M / s->G, KH = s->k[0], KW = s->k[1], KS = KH * KW;
	int64_t IH = s->in[0], IW = s->in[1], OH = s->out[0], OW = s->out[1];
	int64_t P = OH * OW, Pin = IH * IW, sh = s->stride[0], sw = s->stride[1];
	float *col = malloc((size_t)(Mg * KS * IW + 1) * sizeof(float));
	if (!col) {
		atomic_store(&j->failed, 1);
		return;
	}
	for (size_t t = begin; t < end; t++) {
		int64_t g = (int64_t)(t / j->nbands), band = (int64_t)(t % j->nbands);
		int64_t i0 = band * (int64_t)j->rows, i1 = i0 + (int64_t)j->rows < IH ? i0 + (int64_t)j->rows : IH;
		/* output rows owned: those whose input row floor((oh + pad0) / sh), clamped, is ours */
		int64_t lo = i0 == 0 ? 0 : i0 * sh - s->pad0[0], hi = i1 == IH ? OH : i1 * sh - s->pad0[0];
		lo = lo < 0 ? 0 : lo > OH ? OH : lo;
		hi = hi < lo ? lo : hi > OH ? OH : hi;
		/* a 2x2 kernel at stride 2 without padding writes every output once: each row
		 * is two interleaved column rows plus the bias, no fill needed */
		bool il = KW == 2 && s->dil[1] == 1 && sw == 2 && s->pad0[1] == 0 && OW >= 2 * IW;
		bool cover = il && OW == 2 * IW && KH == sh && s->dil[0] == 1 && s->pad0[0] == 0 && OH == IH * sh;
		for (int64_t m = 0; m < Mg && !cover; m++) {
			int64_t co = g * Mg + m;
			float v = il && j->b ? j->b[co] : 0.0f;
			float *yr = j->y + co * P + lo * OW;
			for (int64_t i = 0; i < (hi - lo) * OW; i++)
				yr[i] = v;
		}
		const float *a = j->apack + g * Mg * KS * Cg;
		const float *xg = j->x + g * Cg * Pin;
		for (int64_t ih = i0; ih < i1; ih++) {
			wh_sgemm_block_kb(j->kern, (size_t)(Mg * KS), (size_t)IW, (size_t)Cg, j->kb, a, xg + ih * IW,
					  j->koff, col, (size_t)IW, NULL);
			for (int64_t m = 0; m < Mg; m++) {
				float *yc = j->y + (g * Mg + m) * P;
				for (int64_t kh = 0; kh < KH; kh++) {
					int64_t oh = ih * sh + kh * s->dil[0] - s->pad0[0];
					if (oh < 0 || oh >= OH)
						continue;
					if (il) {
						const float *cr = col + (m * KS + kh * KW) * IW;
						j->interleave2(cr, cr + IW, j->b ? j->b[g * Mg + m] : 0.0f, (size_t)IW,
							       yc + oh * OW);
						continue;
					}
					for (int64_t kw = 0; kw < KW; kw++) {
						const float *cr = col + (m * KS + kh * KW + kw) * IW;
						int64_t o0 = kw * s->dil[1] - s->pad0[1];
						int64_t q0 = o0 >= 0 ? 0 : (-o0 + sw - 1) / sw;
						int64_t q1 = OW - o0 <= 0 ? 0 : (OW - o0 + sw - 1) / sw;
						if (q1 > IW)
							q1 = IW;
						float *yr = yc + oh * OW + o0;
						for (int64_t q = q0; q < q1; q++)
							yr[q * sw] += cr[q];
					}
				}
			}
		}
		/* the bias comes after all the taps (the interleaved rows started from it: one tap
		 * per output, so the order is the same) */
		for (int64_t m = 0; m < Mg && !il && j->b; m++) {
			int64_t co = g * Mg + m;
			float *yr = j->y + co * P + lo * OW;
			for (int64_t i = 0; i < (hi - lo) * OW; i++)
				yr[i] = yr[i] + j->b[co];
		}
	}
	free(col);
}

static enum wh_status convt_bands(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
				  const struct wh_conv_shape *s, const float *x, const float *w,
				  const float *b, float *y)
{
	struct wh_sgemm_kernel kern;
	wh_sgemm_kernel_get(cpu->isa, &kern);
	size_t Cg = (size_t)(s->C / s->G), Mg = (size_t)(s->M / s->G), G = (size_t)s->G;
	size_t KS = (size_t)(s->k[0] * s->k[1]), IH = (size_t)s->in[0], Pin = IH * (size_t)s->in[1];
	int threads = wh_threadpool_size(pool);
	uint64_t colsz;
	if (!wh_mul_u64(Mg * KS, (uint64_t)s->in[1], &colsz) || colsz > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "convtranspose: a row of %zux%lld columns is too large",
				Mg * KS, (long long)s->in[1]);
	uint64_t work = (uint64_t)s->M * KS * Cg * Pin;
	if (work < ((uint64_t)1 << 16))
		pool = NULL, threads = 1;
	size_t rows = IH * G / (8 * (size_t)threads);
	rows = rows < 1 ? 1 : rows > IH ? IH : rows;
	struct convt_band_job j = {.s = s, .kern = &kern, .b = b, .rows = rows, .nbands = (IH + rows - 1) / rows,
				   .kb = wh_sgemm_ort_kblock(Cg, Pin)};
	j.interleave2 = kern.isa >= WH_ISA_AVX512 ? wh_interleave2_avx512 :
			kern.isa >= WH_ISA_AVX2 ? wh_interleave2_avx2 : interleave2_scalar;
	atomic_init(&j.failed, 0);
	enum wh_status st = WH_OK;
	size_t na = G * Mg * KS * Cg;
	float *apack = malloc((na ? na : 1) * sizeof(float));
	ptrdiff_t *koff = malloc((Cg ? Cg : 1) * sizeof(ptrdiff_t));
	if (!apack || !koff) {
		st = wh_error(WH_ERR_NOMEM, "convtranspose: out of memory for packed weights");
		goto out;
	}
	wh_sgemm_pack_groups(&kern, pool, G, Mg * KS, Cg, w, Cg * Mg * KS, 1, Mg * KS, apack);
	for (size_t c = 0; c < Cg; c++)
		koff[c] = (ptrdiff_t)(c * Pin);
	j.apack = apack;
	j.koff = koff;
	for (int64_t n = 0; n < s->N && !st; n++) {
		j.x = x + (size_t)n * (size_t)s->C * Pin;
		j.y = y + (size_t)n * (size_t)s->M * (size_t)(s->out[0] * s->out[1]);
		wh_parallel_for(pool, G * j.nbands, 1, convt_band_task, &j);
		if (atomic_load(&j.failed))
			st = wh_error(WH_ERR_NOMEM, "convtranspose: out of memory for a row of columns");
	}
out:
	free(apack);
	free(koff);
	return st;
}

enum wh_status wh_convt_f32(const struct wh_cpu_features *cpu, struct wh_threadpool *pool,
			    const struct wh_conv_shape *s, const float *x, const float *w,
			    const float *b, float *y)
{
	int nsp = s->nsp;
	if (nsp == 2 && (s->k[0] - 1) * s->dil[0] < s->stride[0] && s->N > 0 && s->M > 0 && !convt_n1(s))
		return convt_bands(cpu, pool, s, x, w, b, y);
	size_t Cg = (size_t)(s->C / s->G), Mg = (size_t)(s->M / s->G);
	size_t KS = (size_t)prod_dims(s->k, nsp), Pin = (size_t)prod_dims(s->in, nsp);
	size_t P = (size_t)prod_dims(s->out, nsp);
	uint64_t cols;
	if (!wh_mul_u64(Mg * KS, Pin, &cols) || cols > WH_MAX_ELEMENTS)
		return wh_error(WH_ERR_OVERFLOW, "convtranspose: column buffer of %zux%zu is too large", Mg * KS, Pin);
	if (s->N == 0 || s->M == 0 || P == 0)
		return WH_OK;
	float *col = malloc((cols ? cols : 1) * sizeof(float));
	if (!col)
		return wh_error(WH_ERR_NOMEM, "convtranspose: out of memory for a %zux%zu column buffer", Mg * KS, Pin);
	enum wh_status st = WH_OK;
	bool n1 = convt_n1(s);
	float *wt = n1 ? malloc(Cg * sizeof(float)) : NULL;
	if (n1 && !wt) {
		free(col);
		return wh_error(WH_ERR_NOMEM, "convtranspose: out of memory for a row of %zu weights", Cg);
	}
	for (int64_t n = 0; n < s->N && !st; n++) {
		float *yn = y + (size_t)n * (size_t)s->M * P;
		for (int64_t g = 0; g < s->G && !st; g++) {
			const float *wg = w + (size_t)g * Cg * Mg * KS;
			const float *xg = x + ((size_t)n * (size_t)s->C + (size_t)g * Cg) * Pin;
			if (n1) {
				/* MLAS's single-column kernel over the (pre-transposed) weight rows */
				for (size_t m = 0; m < Mg * KS; m++) {
					for (size_t c = 0; c < Cg; c++)
						wt[c] = wg[c * Mg * KS + m];
					col[m] = n1_dot(wt, xg, Cg, m, Mg * KS);
				}
			} else {
				struct wh_sgemm_desc d = {
					.M = Mg * KS, .N = Pin, .K = Cg, .batch = 1,
					.a = wg, .rsa = 1, .csa = Mg * KS,
					.b = xg, .ldb = Pin,
					.c = col, .ldc = Pin, .kb = wh_sgemm_ort_kblock(Cg, Pin),
				};
				if ((st = wh_sgemm_run(cpu, pool, &d)))
					break;
			}
			struct col2im_job cj = {.s = s, .col = col, .b = b, .y = yn, .g = g};
			uint64_t per = (uint64_t)KS * Pin;
			wh_parallel_for(per * Mg < ((uint64_t)1 << 16) ? NULL : pool, Mg, 1, col2im_task, &cj);
		}
	}
	free(col);
	free(wt);
	return st;
}

/* ---- geometry from attributes ---- */

#define WH_ATTR_MAX ((int64_t)1 << 32)

static enum wh_status read_ints(struct wh_kernel_ctx *ctx, const char *name, int64_t want,
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
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s has %lld values, expected %lld",
				      name, (long long)n, (long long)want);
	for (int64_t i = 0; i < n; i++) {
		if (v[i] < lo || v[i] > WH_ATTR_MAX)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s has value %lld, expected %lld..%lld",
					      name, (long long)v[i], (long long)lo, (long long)WH_ATTR_MAX);
		out[i] = v[i];
	}
	return WH_OK;
}

enum auto_pad { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

static enum wh_status conv_geometry(struct wh_kernel_ctx *ctx, const struct wh_tensor *x,
				    const struct wh_tensor *w, bool transpose, struct wh_conv_shape *s)
{
	char bx[64], bw[64];
	memset(s, 0, sizeof *s);
	if (x->rank < 3 || w->rank != x->rank)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X has shape %s and W %s, expected the same rank of at least 3",
				      wh_shape_str(x->dims, x->rank, bx, sizeof bx),
				      wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	int nsp = x->rank - 2;
	s->nsp = nsp;
	s->N = x->dims[0];
	s->C = x->dims[1];
	s->G = wh_node_attr_int(ctx->node, "group", 1);
	if (s->G < 1 || s->G > WH_ATTR_MAX)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "group is %lld, expected at least 1", (long long)s->G);
	if (s->C % s->G)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X has %lld channels, not a multiple of group %lld",
				      (long long)s->C, (long long)s->G);
	if (!transpose) {
		s->M = w->dims[0];
		if (w->dims[1] != s->C / s->G || s->M % s->G)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "W has shape %s, expected %s with %lld input channels per group and output channels a multiple of group %lld",
					      wh_shape_str(w->dims, w->rank, bw, sizeof bw), "[M, C/group, k...]",
					      (long long)(s->C / s->G), (long long)s->G);
	} else {
		if (w->dims[0] != s->C || !wh_mul_i64(w->dims[1], s->G, &s->M))
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "W has shape %s, expected [C=%lld, M/group, k...]",
					      wh_shape_str(w->dims, w->rank, bw, sizeof bw), (long long)s->C);
	}
	for (int d = 0; d < nsp; d++) {
		s->in[d] = x->dims[2 + d];
		s->k[d] = w->dims[2 + d];
		if (s->in[d] < 1 || s->k[d] < 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X has shape %s and W %s: spatial sizes must be at least 1",
					      wh_shape_str(x->dims, x->rank, bx, sizeof bx),
					      wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	}
	const int64_t *ks;
	int64_t nk = wh_node_attr_ints(ctx->node, "kernel_shape", &ks);
	if (nk >= 0) {
		bool ok = nk == nsp;
		for (int d = 0; ok && d < nsp; d++)
			ok = ks[d] == s->k[d];
		if (!ok)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "kernel_shape does not match W of shape %s",
					      wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	}
	enum wh_status st;
	int64_t pads[2 * WH_MAX_RANK], opad[WH_MAX_RANK];
	if ((st = read_ints(ctx, "strides", nsp, 1, 1, s->stride)) ||
	    (st = read_ints(ctx, "dilations", nsp, 1, 1, s->dil)) ||
	    (st = read_ints(ctx, "pads", 2 * nsp, 0, 0, pads)))
		return st;
	if (transpose && (st = read_ints(ctx, "output_padding", nsp, 0, 0, opad)))
		return st;
	char buf[32];
	const char *ap = wh_node_attr_string(ctx->node, "auto_pad", "NOTSET", buf, sizeof buf);
	enum auto_pad mode;
	if (!strcmp(ap, "NOTSET") || !ap[0])
		mode = PAD_NOTSET;
	else if (!strcmp(ap, "SAME_UPPER"))
		mode = PAD_SAME_UPPER;
	else if (!strcmp(ap, "SAME_LOWER"))
		mode = PAD_SAME_LOWER;
	else if (!strcmp(ap, "VALID"))
		mode = PAD_VALID;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "auto_pad is '%s', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID", ap);
	const int64_t *oshape = NULL;
	int64_t n_oshape = transpose ? wh_node_attr_ints(ctx->node, "output_shape", &oshape) : -1;
	if (n_oshape >= 0 && n_oshape < nsp)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "output_shape has %lld values, expected %d",
				      (long long)n_oshape, nsp);
	for (int d = 0; d < nsp; d++) {
		int64_t dk, t, in = s->in[d], sd = s->stride[d];
		if (!wh_mul_i64(s->k[d] - 1, s->dil[d], &dk) || !wh_add_i64(dk, 1, &dk))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "dilated kernel is too large");
		s->pad0[d] = mode == PAD_NOTSET ? pads[d] : 0;
		s->pad1[d] = mode == PAD_NOTSET ? pads[nsp + d] : 0;
		if (!transpose) {
			if (mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
				int64_t out = (in + sd - 1) / sd;
				int64_t total = (out - 1) * sd + dk - in;
				if (total < 0)
					total = 0;
				s->pad0[d] = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
				s->pad1[d] = total - s->pad0[d];
			}
			int64_t span = in + s->pad0[d] + s->pad1[d];
			if (span < dk)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X has shape %s: padded spatial size %lld is smaller than the dilated kernel %lld",
						      wh_shape_str(x->dims, x->rank, bx, sizeof bx), (long long)span, (long long)dk);
			s->out[d] = (span - dk) / sd + 1;
		} else {
			/* natural size: stride*(in-1) + output_padding + dilated kernel */
			int64_t full;
			if (!wh_mul_i64(sd, in - 1, &t) || !wh_add_i64(t, opad[d], &t) || !wh_add_i64(t, dk, &full))
				return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output of ConvTranspose is too large");
			if (n_oshape >= 0 || mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
				int64_t out;
				if (n_oshape >= 0)
					out = oshape[n_oshape - nsp + d];
				else if (!wh_mul_i64(in, sd, &out))
					return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output of ConvTranspose is too large");
				if (out < 1 || out > WH_ATTR_MAX)
					return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output_shape %lld is out of range",
							      (long long)out);
				/* A negative total (a larger output) pads with zeros; halves round
				 * down as in the ONNX reference (Python's //). */
				int64_t total = full - out;
				int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
				if (mode == PAD_SAME_UPPER) {
					s->pad0[d] = half;
					s->pad1[d] = total - half;
				} else {
					s->pad0[d] = total - half;
					s->pad1[d] = half;
				}
			}
			s->out[d] = full - s->pad0[d] - s->pad1[d];
			if (s->out[d] < 1)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "pads leave no output for input of shape %s",
						      wh_shape_str(x->dims, x->rank, bx, sizeof bx));
		}
	}
	int64_t yd[WH_MAX_RANK];
	uint64_t cnt;
	yd[0] = s->N;
	yd[1] = s->M;
	for (int d = 0; d < nsp; d++)
		yd[2 + d] = s->out[d];
	uint64_t wk;
	if (!wh_shape_count(yd, x->rank, &cnt) || !wh_mul_u64((uint64_t)prod_dims(s->k, nsp), (uint64_t)s->C, &wk) ||
	    wk > WH_MAX_ELEMENTS)
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output of X %s and W %s is too large",
				      wh_shape_str(x->dims, x->rank, bx, sizeof bx),
				      wh_shape_str(w->dims, w->rank, bw, sizeof bw));
	return WH_OK;
}

static void out_dims(const struct wh_conv_shape *s, int64_t *yd)
{
	yd[0] = s->N;
	yd[1] = s->M;
	for (int d = 0; d < s->nsp; d++)
		yd[2 + d] = s->out[d];
}

/* ---- float16/bfloat16 through float32 ---- */

static bool is_half(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

static enum wh_status half_to_f32(const struct wh_tensor *t, float **out)
{
	*out = NULL;
	if (!t)
		return WH_OK;
	float *f = malloc((t->count ? t->count : 1) * sizeof(float));
	if (!f)
		return wh_error(WH_ERR_NOMEM, "conv: out of memory converting %llu elements to float32",
				(unsigned long long)t->count);
	const uint16_t *h = t->data;
	for (uint64_t i = 0; i < t->count; i++)
		f[i] = t->dtype == WH_DT_FLOAT16 ? wh_f16_to_f32(h[i]) : wh_bf16_to_f32(h[i]);
	*out = f;
	return WH_OK;
}

/* ---- Conv / ConvTranspose ---- */

static enum wh_status conv_common(struct wh_kernel_ctx *ctx, bool transpose,
				  const struct wh_cpu_features *cpu, enum wh_conv_algo algo)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1), *b = wh_kin(ctx, 2);
	if (!x || !w)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs X and W");
	enum wh_dtype dt = x->dtype;
	if (dt != WH_DT_FLOAT && dt != WH_DT_DOUBLE && !is_half(dt))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "type %s is not supported", wh_dtype_name(dt));
	if (w->dtype != dt || (b && b->dtype != dt))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs have different types (X %s, W %s%s%s)",
				      wh_dtype_name(dt), wh_dtype_name(w->dtype), b ? ", B " : "",
				      b ? wh_dtype_name(b->dtype) : "");
	struct wh_conv_shape s;
	enum wh_status st = conv_geometry(ctx, x, w, transpose, &s);
	if (st)
		return st;
	if (b && (b->rank != 1 || b->dims[0] != s.M)) {
		char bb[64];
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "B has shape %s, expected [%lld]",
				      wh_shape_str(b->dims, b->rank, bb, sizeof bb), (long long)s.M);
	}
	int64_t yd[WH_MAX_RANK];
	out_dims(&s, yd);
	if ((st = wh_kernel_out_alloc(ctx, 0, dt, x->rank, yd)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	if (dt == WH_DT_DOUBLE) {
		if (transpose)
			convt_ref_f64(&s, x->data, w->data, b ? b->data : NULL, y->data);
		else
			conv_ref_f64(&s, x->data, w->data, b ? b->data : NULL, y->data);
		return WH_OK;
	}
	if (dt == WH_DT_FLOAT) {
		if (transpose)
			return wh_convt_f32(cpu, ctx->pool, &s, x->data, w->data, b ? b->data : NULL, y->data);
		ctx->outputs_rounded = ctx->round_out != NULL;
		return conv_f32(cpu, ctx->pool, &s, x->data, w->data, b ? b->data : NULL, y->data, algo,
				ctx->round_out, ctx);
	}
	float *fx = NULL, *fw = NULL, *fb = NULL, *fy = NULL;
	if ((st = half_to_f32(x, &fx)) || (st = half_to_f32(w, &fw)) || (st = half_to_f32(b, &fb)))
		goto out;
	fy = malloc((y->count ? y->count : 1) * sizeof(float));
	if (!fy) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the float32 result");
		goto out;
	}
	if (transpose)
		st = wh_convt_f32(cpu, ctx->pool, &s, fx, fw, fb, fy);
	else
		st = wh_conv_f32_algo(cpu, ctx->pool, &s, fx, fw, fb, fy, algo);
	if (!st) {
		uint16_t *h = y->data;
		for (uint64_t i = 0; i < y->count; i++)
			h[i] = dt == WH_DT_FLOAT16 ? wh_f32_to_f16(fy[i]) : wh_f32_to_bf16(fy[i]);
	}
out:
	free(fx);
	free(fw);
	free(fb);
	free(fy);
	return st;
}

static enum wh_status conv_qdq_run(struct wh_kernel_ctx *ctx);

static enum wh_status conv_run(struct wh_kernel_ctx *ctx)
{
	if (ctx->qdq)
		return conv_qdq_run(ctx);
	return conv_common(ctx, false, ctx->cpu, WH_CONV_AUTO);
}

static enum wh_status conv_transpose_run(struct wh_kernel_ctx *ctx)
{
	return conv_common(ctx, true, ctx->cpu, WH_CONV_AUTO);
}

/* ---- tactics: the float32 paths with the ISA and (Conv) the algorithm forced ---- */

static bool tac_float(const struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	return x && !ctx->qdq && (x->dtype == WH_DT_FLOAT || is_half(x->dtype));
}

static bool conv_qdq_ok(const struct wh_kernel_ctx *ctx)
{
	return ctx->qdq != NULL;
}

static bool tac_isa_ok(const struct wh_kernel_ctx *ctx, enum wh_isa isa)
{
	return tac_float(ctx) && ctx->cpu->isa >= isa;
}

static bool tac_depthwise(const struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1);
	return x && w && w->rank >= 3 && w->rank <= 4 && w->dims[1] == 1 &&
	       wh_node_attr_int(ctx->node, "group", 1) > 1;
}

static enum wh_status tac_run(struct wh_kernel_ctx *ctx, bool transpose, enum wh_isa isa, enum wh_conv_algo algo)
{
	struct wh_cpu_features cpu = *ctx->cpu;
	cpu.isa = isa;
	return conv_common(ctx, transpose, &cpu, algo);
}

#define WH_CONV_TACTICS(ISA, NAME)                                                                  \
	static bool conv_gemm_ok_##NAME(const struct wh_kernel_ctx *ctx)                            \
	{                                                                                           \
		return tac_isa_ok(ctx, ISA);                                                        \
	}                                                                                           \
	static bool conv_dw_ok_##NAME(const struct wh_kernel_ctx *ctx)                              \
	{                                                                                           \
		return tac_isa_ok(ctx, ISA) && tac_depthwise(ctx);                                  \
	}                                                                                           \
	static enum wh_status conv_gemm_##NAME(struct wh_kernel_ctx *ctx)                           \
	{                                                                                           \
		return tac_run(ctx, false, ISA, WH_CONV_GEMM);                                      \
	}                                                                                           \
	static enum wh_status conv_dw_##NAME(struct wh_kernel_ctx *ctx)                             \
	{                                                                                           \
		return tac_run(ctx, false, ISA, WH_CONV_DIRECT_DW);                                 \
	}                                                                                           \
	static enum wh_status convt_gemm_##NAME(struct wh_kernel_ctx *ctx)                          \
	{                                                                                           \
		return tac_run(ctx, true, ISA, WH_CONV_AUTO);                                       \
	}
WH_CONV_TACTICS(WH_ISA_SCALAR, scalar)
WH_CONV_TACTICS(WH_ISA_AVX2, avx2)
WH_CONV_TACTICS(WH_ISA_AVX512, avx512)

#define WH_NUM_FMA "float32 fused multiply-adds"
#define WH_NUM_MULADD "float32 multiply then add (two roundings), the reference's order"

/* Every Conv tactic sums in ONNX Runtime's order (conv-internal.h); the single-row and
 * single-column orders have no FMA, so every ISA gives their bits. */
static const struct wh_tactic conv_tactics[] = {
	{1, "conv-gemm-scalar", "GEMM over padded planes, mul+add in ONNX Runtime's (MLAS's) order: K blocks summed "
	 "apart, single-row order for one output channel per group, single-column order for one output position; bias last",
	 conv_gemm_ok_scalar, conv_gemm_scalar},
	{2, "conv-gemm-avx2", "as conv-gemm-scalar with " WH_NUM_FMA " in the K blocks, 6x16 tiles", conv_gemm_ok_avx2,
	 conv_gemm_avx2},
	{3, "conv-gemm-avx512", "as conv-gemm-scalar with " WH_NUM_FMA " in the K blocks, 12x32 tiles", conv_gemm_ok_avx512,
	 conv_gemm_avx512},
	{4, "conv-dw-direct-scalar", "direct depthwise (none at this ISA: as conv-gemm-scalar)",
	 conv_dw_ok_scalar, conv_dw_scalar},
	{5, "conv-dw-direct-avx2", "direct depthwise, planes in MLAS's single-row groups of 4 taps, each group fused multiply-adds",
	 conv_dw_ok_avx2, conv_dw_avx2},
	{6, "conv-dw-direct-avx512", "direct depthwise, planes in MLAS's single-row groups of 4 taps, each group fused multiply-adds",
	 conv_dw_ok_avx512, conv_dw_avx512},
	/* the one tactic of a QDQ convolution (executor/qdq.h), the others' only where not */
	{20, "conv-qdq-int8", "QDQ convolution on the 8-bit values: exact int32 sums (integer GEMM: VNNI, AVX2 or "
	 "scalar, the same bits), then float32 (float)acc * (x_scale * w_scale[m]) + bias[m], two roundings",
	 conv_qdq_ok, conv_qdq_run},
	/* more orders and algorithms (executor/ops/conv-tactics*.c) */
	WH_CONV_EXTRA_TACTICS,
	WH_CONV_FP16ACC_TACTICS,
};

static const struct wh_tactic convt_tactics[] = {
	{1, "convtranspose-gemm-scalar", "GEMM into columns, " WH_NUM_MULADD " over input channels; taps added per output in (kh, kw) order",
	 conv_gemm_ok_scalar, convt_gemm_scalar},
	{2, "convtranspose-gemm-avx2", "GEMM into columns, " WH_NUM_FMA " over input channels; taps added per output in (kh, kw) order",
	 conv_gemm_ok_avx2, convt_gemm_avx2},
	{3, "convtranspose-gemm-avx512", "GEMM into columns, " WH_NUM_FMA " over input channels; taps added per output in (kh, kw) order",
	 conv_gemm_ok_avx512, convt_gemm_avx512},
};

/* ---- ConvInteger / QLinearConv ---- */

static bool is_8bit(const struct wh_tensor *t)
{
	return t && (t->dtype == WH_DT_UINT8 || t->dtype == WH_DT_INT8);
}

/* Integer convolution of 8-bit x and w less their zero points (x: scalar; w: scalar or
 * one per output channel), plus an optional int32 bias, into int32 acc: the integer GEMM
 * (qgemm-internal.h) for 1-D and 2-D, the plain loops for other ranks. */
static enum wh_status conv_integer(struct wh_kernel_ctx *ctx, const struct wh_conv_shape *s,
				   const struct wh_tensor *x, const struct wh_tensor *xzp,
				   const struct wh_tensor *w, const struct wh_tensor *wzp,
				   const struct wh_tensor *bias, int32_t *acc, const struct wh_qconv_finish *fin)
{
	if (xzp && xzp->count != 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "x zero point must be a scalar");
	if (wzp && wzp->count != 1 && wzp->count != (uint64_t)s->M)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "w zero point has %llu values, expected 1 or %lld",
				      (unsigned long long)wzp->count, (long long)s->M);
	if (bias && (bias->dtype != WH_DT_INT32 || bias->count != (uint64_t)s->M))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "B must be int32 with %lld values", (long long)s->M);
	if ((xzp && xzp->dtype != x->dtype) || (wzp && wzp->dtype != w->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "zero points must have the types of x and w");
	int32_t zx = xzp ? (int32_t)wh_tensor_get_i64(xzp, 0) : 0;
	int32_t *zw = malloc((s->M ? (size_t)s->M : 1) * sizeof(int32_t));
	if (!zw)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the zero points");
	for (int64_t m = 0; m < s->M; m++)
		zw[m] = wzp ? (int32_t)wh_tensor_get_i64(wzp, wzp->count == 1 ? 0 : (uint64_t)m) : 0;
	enum wh_status st;
	if (fin) /* 1-D and 2-D only (the caller checks); the bias is fin's to add */
		st = wh_qconv_fin(ctx->cpu, ctx->pool, s, x->data, x->dtype == WH_DT_INT8, zx, w->data,
				  w->dtype == WH_DT_INT8, zw, acc, fin);
	else
		st = wh_qconv(ctx->cpu, ctx->pool, s, x->data, x->dtype == WH_DT_INT8, zx, w->data,
			      w->dtype == WH_DT_INT8, zw, bias ? bias->data : NULL, acc);
	free(zw);
	if (st == WH_ERR_NOMEM)
		return wh_kernel_fail(ctx, st, "out of memory for the packed columns");
	if (st != WH_ERR_UNSUPPORTED)
		return st;
	int32_t *xi = malloc((x->count ? x->count : 1) * sizeof(int32_t));
	int32_t *wi = malloc((w->count ? w->count : 1) * sizeof(int32_t));
	if (!xi || !wi) {
		free(xi);
		free(wi);
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory widening inputs to int32");
	}
	for (uint64_t i = 0; i < x->count; i++)
		xi[i] = (int32_t)wh_tensor_get_i64(x, i) - zx;
	uint64_t per = s->M ? w->count / (uint64_t)s->M : 0;
	for (uint64_t i = 0; i < w->count; i++) {
		int32_t z = wzp ? (int32_t)wh_tensor_get_i64(wzp, wzp->count == 1 ? 0 : i / per) : 0;
		wi[i] = (int32_t)wh_tensor_get_i64(w, i) - z;
	}
	conv_ref_i32(s, xi, wi, bias ? bias->data : NULL, acc);
	free(xi);
	free(wi);
	return WH_OK;
}

static enum wh_status conv_integer_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *w = wh_kin(ctx, 1);
	const struct wh_tensor *xzp = wh_kin(ctx, 2), *wzp = wh_kin(ctx, 3);
	if (!x || !w)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs x and w");
	if (!is_8bit(x) || !is_8bit(w))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "types %s and %s are not supported (expected int8/uint8)",
				      wh_dtype_name(x->dtype), wh_dtype_name(w->dtype));
	struct wh_conv_shape s;
	enum wh_status st = conv_geometry(ctx, x, w, false, &s);
	if (st)
		return st;
	int64_t yd[WH_MAX_RANK];
	out_dims(&s, yd);
	if ((st = wh_tensor_alloc(&ctx->outputs[0], WH_DT_INT32, x->rank, yd)))
		return st;
	return conv_integer(ctx, &s, x, xzp, w, wzp, NULL, ctx->outputs[0].data, NULL);
}

static float round_scale(enum wh_dtype dt, float v)
{
	if (dt == WH_DT_FLOAT16)
		return wh_round_f16(v);
	if (dt == WH_DT_BFLOAT16)
		return wh_round_bf16(v);
	return v;
}

/* y = requantized acc, one multiplier per output channel (rows of P outputs). */
struct qrequant_job {
	const struct wh_cpu_features *cpu;
	const int32_t *acc;
	uint8_t *y;
	const float *mult;
	size_t P, M;
	int32_t yz;
	bool y_s8;
};

static void qrequant_rows(void *arg, size_t begin, size_t end)
{
	const struct qrequant_job *j = arg;
	for (size_t r = begin; r < end; r++)
		wh_q_requant(j->acc + r * j->P, j->P, j->mult + r % j->M, 0, j->yz, j->y_s8, j->y + r * j->P, j->cpu);
}

/* QLinearConv's finish of a block of sums (wh_qconv_fin): + bias, then requantized. */
struct qlc_fin {
	const struct wh_cpu_features *cpu;
	uint8_t *y;
	const float *mult;
	const int32_t *bias;
	size_t P, M;
	int32_t yz;
	bool y_s8;
};

static void qlc_finish(void *arg, size_t plane, size_t col0, int32_t *sums, size_t ld, size_t rows, size_t cnt)
{
	const struct qlc_fin *j = arg;
	size_t m = plane % j->M;
	wh_q_requant_bias_rows(sums, ld, rows, cnt, j->bias ? j->bias + m : NULL, j->mult + m, j->yz, j->y_s8,
			       j->y + plane * j->P + col0, j->P, j->cpu);
}

static enum wh_status qlinear_conv_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *xs = wh_kin(ctx, 1), *xzp = wh_kin(ctx, 2);
	const struct wh_tensor *w = wh_kin(ctx, 3), *ws = wh_kin(ctx, 4), *wzp = wh_kin(ctx, 5);
	const struct wh_tensor *ys = wh_kin(ctx, 6), *yzp = wh_kin(ctx, 7), *bias = wh_kin(ctx, 8);
	if (!x || !xs || !w || !ws || !ys)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs inputs x, x_scale, w, w_scale and y_scale");
	if (!is_8bit(x) || !is_8bit(w) || (yzp && !is_8bit(yzp)))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "types %s and %s are not supported (expected int8/uint8)",
				      wh_dtype_name(x->dtype), wh_dtype_name(w->dtype));
	if (!wh_dtype_is_float(xs->dtype) || !wh_dtype_is_float(ws->dtype) || !wh_dtype_is_float(ys->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "scales must be floating point");
	if (xs->count != 1 || ys->count != 1 || (yzp && yzp->count != 1))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "x_scale, y_scale and y_zero_point must be scalars");
	struct wh_conv_shape s;
	enum wh_status st = conv_geometry(ctx, x, w, false, &s);
	if (st)
		return st;
	if (ws->count != 1 && ws->count != (uint64_t)s.M)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "w_scale has %llu values, expected 1 or %lld",
				      (unsigned long long)ws->count, (long long)s.M);
	int64_t yd[WH_MAX_RANK];
	out_dims(&s, yd);
	enum wh_dtype ydt = yzp ? yzp->dtype : x->dtype;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], ydt, x->rank, yd)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	float xsv = (float)wh_tensor_get_f64(xs, 0), ysv = (float)wh_tensor_get_f64(ys, 0);
	struct qrequant_job j = {ctx->cpu, NULL, y->data, NULL, (size_t)prod_dims(s.out, s.nsp), (size_t)s.M,
				 yzp ? (int32_t)wh_tensor_get_i64(yzp, 0) : 0, ydt == WH_DT_INT8};
	/* 1-D and 2-D: each block of sums requantized as it is computed (no int32 tensor) */
	bool direct = s.nsp <= 2;
	int32_t *acc = direct ? NULL : malloc((y->count ? y->count : 1) * sizeof(int32_t));
	float *mult = malloc((s.M ? (size_t)s.M : 1) * sizeof(float));
	if ((!direct && !acc) || !mult) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the int32 accumulators");
		goto out;
	}
	for (int64_t co = 0; co < s.M; co++) {
		float m = round_scale(xs->dtype, xsv * (float)wh_tensor_get_f64(ws, ws->count == 1 ? 0 : (uint64_t)co));
		mult[co] = round_scale(xs->dtype, m / ysv);
	}
	j.mult = mult;
	if (direct && bias && (bias->dtype != WH_DT_INT32 || bias->count != (uint64_t)s.M)) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "B must be int32 with %lld values", (long long)s.M);
		goto out;
	}
	struct qlc_fin qf = {ctx->cpu, y->data, mult, direct && bias ? bias->data : NULL, j.P, j.M, j.yz, j.y_s8};
	struct wh_qconv_finish fin = {qlc_finish, &qf};
	if ((st = conv_integer(ctx, &s, x, xzp, w, wzp, direct ? NULL : bias, acc, direct ? &fin : NULL)) || direct)
		goto out;
	j.acc = acc;
	wh_parallel_for(ctx->pool, (size_t)(s.N * s.M), wh_grain_for(j.P), qrequant_rows, &j);
out:
	free(mult);
	free(acc);
	return st;
}

/* ---- QDQ convolutions (executor/qdq.h) ---- */

/* The finish of a QDQ convolution's sums (wh_qconv_fin), block by block while in cache:
 * y = float(acc) * mult[m] + bias[m] (in place over the sums), the fused activation; or
 * with a fused QuantizeLinear the 8-bit values of that (the float values in a stack piece). */
struct qdq_fin {
	const struct wh_cpu_features *cpu;
	float *y;     /* float output, or NULL */
	uint8_t *q8;  /* 8-bit output (round->quant), or NULL */
	const float *mult, *bias;
	size_t P, M;
	const struct wh_out_round *round;
};

static void qdq_finish(void *arg, size_t plane, size_t col0, int32_t *sums, size_t ld, size_t rows, size_t cnt)
{
	const struct qdq_fin *j = arg;
	size_t m0 = plane % j->M;
	const struct wh_requant *rq = j->y ? NULL : j->round->quant;
	const struct wh_epilogue *act = j->round ? j->round->act : NULL;
	if (rq && act && act->op == WH_EW_RELU && !act->times_input) {
		wh_q_scale_relu_quant_rows(sums, ld, rows, cnt, j->mult + m0, j->bias ? j->bias + m0 : NULL, rq->scale,
					   rq->zp, rq->s8, j->q8 + plane * j->P + col0, j->P, j->cpu);
		return;
	}
	for (size_t r = 0; r < rows; r++) {
		size_t m = m0 + r;
		float bias = j->bias ? j->bias[m] : 0.0f;
		int32_t *sr = sums + r * ld;
		if (j->y) {
			float *y = j->y + (plane + r) * j->P + col0; /* the same memory as sums */
			wh_q_scale_bias(sr, cnt, j->mult[m], bias, j->bias != NULL, y, j->cpu);
			wh_out_round_apply(j->round, y, cnt);
			continue;
		}
		float tmp[512];
		for (size_t i = 0; i < cnt; i += 512) {
			size_t len = cnt - i < 512 ? cnt - i : 512;
			wh_q_scale_bias(sr + i, len, j->mult[m], bias, j->bias != NULL, tmp, j->cpu);
			if (act)
				wh_epilogue_apply(act, j->cpu, tmp, len);
			wh_q_quant(tmp, len, rq->scale, rq->zp, rq->s8, j->q8 + (plane + r) * j->P + col0 + i, j->cpu);
		}
	}
}

/* y = float(conv(xq - zx, wq - zw[m])) * (x_scale * w_scale[m]) + B[m], the sums exact in
 * int32 (wh_qconv). Inputs that do not fit (types, shapes, ranks above 2) run the float
 * Conv on the dequantized tensors, as any unlinked Conv. */
static enum wh_status conv_qdq_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_qdq_inputs *q = ctx->qdq;
	const struct wh_tensor *x = q ? q->xq : NULL, *w = q ? q->wq : NULL, *b = wh_kin(ctx, 2);
	const struct wh_tensor *fx = wh_kin(ctx, 0), *fw = wh_kin(ctx, 1);
	struct wh_conv_shape s;
	if (q && !fx && (!is_8bit(x) || !fw)) /* its DequantizeLinear was skipped (runtime.c, dq_skip) */
		return wh_kernel_fail(ctx, WH_ERR_INTERNAL, "the 8-bit input of a QDQ Conv is %s", wh_dtype_name(x->dtype));
	if (!q || !fw || fw->dtype != WH_DT_FLOAT || !is_8bit(x) || !is_8bit(w) ||
	    (fx && (fx->dtype != WH_DT_FLOAT || x->rank != fx->rank ||
		    memcmp(x->dims, fx->dims, (size_t)x->rank * sizeof x->dims[0]))) ||
	    (q->xz && q->xz->dtype != x->dtype) || (q->wz && q->wz->dtype != w->dtype) ||
	    (b && (b->dtype != WH_DT_FLOAT || b->rank != 1 || b->dims[0] != w->dims[0])) || x->rank < 3 || x->rank > 4)
		goto floating;
	enum wh_status st = conv_geometry(ctx, x, w, false, &s);
	if (st)
		return st;
	if (q->ws->count != 1 && q->ws->count != (uint64_t)s.M)
		goto floating;
	int64_t yd[WH_MAX_RANK];
	out_dims(&s, yd);
	/* a fused QuantizeLinear (wh_out_round.quant): 8 bits out, the sums apart */
	const struct wh_requant *rq = ctx->round_out ? ctx->round_out->quant : NULL;
	if ((st = wh_kernel_out_alloc(ctx, 0, rq ? (rq->s8 ? WH_DT_INT8 : WH_DT_UINT8) : WH_DT_FLOAT, x->rank, yd)))
		return st;
	struct wh_tensor *y = &ctx->outputs[0];
	size_t M = (size_t)s.M;
	int32_t *zw = malloc((M ? M : 1) * (sizeof(int32_t) + sizeof(float)));
	if (!zw)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the zero points");
	float *mult = (float *)(void *)(zw + M);
	float xs = *(const float *)q->xs->data;
	int32_t zx = q->xz ? (int32_t)wh_tensor_get_i64(q->xz, 0) : 0;
	for (size_t m = 0; m < M; m++) {
		uint64_t i = q->ws->count == 1 ? 0 : m;
		zw[m] = q->wz ? (int32_t)wh_tensor_get_i64(q->wz, i) : 0;
		mult[m] = xs * ((const float *)q->ws->data)[i];
	}
	struct qdq_fin j = {ctx->cpu, rq ? NULL : y->data, rq ? y->data : NULL, mult, b ? b->data : NULL,
			    (size_t)prod_dims(s.out, s.nsp), M, ctx->round_out};
	struct wh_qconv_finish fin = {qdq_finish, &j};
	st = wh_qconv_fin(ctx->cpu, ctx->pool, &s, x->data, x->dtype == WH_DT_INT8, zx, w->data, w->dtype == WH_DT_INT8,
			  zw, rq ? NULL : (int32_t *)y->data, &fin);
	if (st == WH_OK)
		ctx->outputs_rounded = ctx->round_out != NULL;
	free(zw);
	if (st == WH_ERR_NOMEM)
		return wh_kernel_fail(ctx, st, "out of memory for the packed columns");
	return st;
floating:
	if (ctx->round_out && ctx->round_out->quant) {
		/* not fused: the runtime runs the activation and the QuantizeLinear */
		const struct wh_out_round *keep = ctx->round_out;
		ctx->round_out = NULL;
		enum wh_status fst = conv_common(ctx, false, ctx->cpu, WH_CONV_AUTO);
		ctx->round_out = keep;
		ctx->outputs_rounded = false;
		return fst;
	}
	return conv_common(ctx, false, ctx->cpu, WH_CONV_AUTO);
}

const struct wh_op_def wh_ops_conv[] = {
	{"", "Conv", 1, conv_run, conv_tactics, sizeof conv_tactics / sizeof conv_tactics[0]},
	{"", "ConvTranspose", 1, conv_transpose_run, convt_tactics, sizeof convt_tactics / sizeof convt_tactics[0]},
	{"", "ConvInteger", 10, conv_integer_run, NULL, 0},
	{"", "QLinearConv", 10, qlinear_conv_run, NULL, 0},
};
const size_t wh_ops_conv_count = sizeof wh_ops_conv / sizeof wh_ops_conv[0];
