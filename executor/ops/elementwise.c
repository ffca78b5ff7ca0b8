/* Elementwise and activation ops: unary math, binary and variadic arithmetic with numpy
 * broadcasting, comparisons, logic, bit operations, Where, Clip and the activations.
 *
 * Every op goes through one broadcast walker: the output shape is split into chunks of
 * fixed size (independent of the thread count), each chunk into rows along the innermost
 * merged dimension, where every input advances by 0 or 1 element per output element. A row
 * is handed to a row function chosen once per node: the float32 row kernels of
 * elementwise-internal.h (scalar reference, AVX2, AVX-512) for the hot ops, a float32 loop
 * over per-element functions for the rest, and generic loops for the other types:
 * float16/bfloat16/float8 compute in float32 (as numpy does for float16), double in double,
 * integers as 64-bit values (sign- or zero-extended, wrapped when stored back). */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/numfmt.h"
#include "executor/ops/elementwise-internal.h"

/* ---- float32 reference math (bit-identical with the SIMD variants, see the header) ---- */

float wh_ew_expf(float x)
{
	if (x != x)
		return x;
	x = WH_EW_EXP_LO > x ? WH_EW_EXP_LO : x;
	x = WH_EW_EXP_HI < x ? WH_EW_EXP_HI : x;
	float t = x * WH_EW_LOG2E;
	t = t + WH_EW_ROUND_MAGIC;
	float n = t - WH_EW_ROUND_MAGIC;
	float r = x - n * WH_EW_EXP_C1;
	r = r - n * WH_EW_EXP_C2;
	float p = WH_EW_EXP_P0;
	p = p * r + WH_EW_EXP_P1;
	p = p * r + WH_EW_EXP_P2;
	p = p * r + WH_EW_EXP_P3;
	p = p * r + WH_EW_EXP_P4;
	p = p * r + WH_EW_EXP_P5;
	float z = r * r;
	float y = p * z;
	y = y + r;
	y = y + 1.0f;
	int32_t ni = (int32_t)n;
	int32_t n1 = (ni - (ni & 1)) / 2; /* floor(ni / 2) */
	int32_t n2 = ni - n1;
	float s1 = wh_bits_f32((uint32_t)(n1 + 127) << 23);
	float s2 = wh_bits_f32((uint32_t)(n2 + 127) << 23);
	y = y * s1;
	return y * s2;
}

float wh_ew_sigmoidf(float x)
{
	/* exp of -|x| never overflows; the x < 0 side is e / (1 + e) */
	float e = wh_ew_expf(-fabsf(x));
	float num = x >= 0.0f ? 1.0f : e;
	return num / (1.0f + e);
}

float wh_ew_tanhf(float x)
{
	float a = fabsf(x);
	if (a < WH_EW_TANH_SMALL) {
		/* (1 - e) / (1 + e) would cancel here */
		float x2 = x * x;
		float p = WH_EW_TANH_T15;
		p = p * x2 + WH_EW_TANH_T13;
		p = p * x2 + WH_EW_TANH_T11;
		p = p * x2 + WH_EW_TANH_T9;
		p = p * x2 + WH_EW_TANH_T7;
		p = p * x2 + WH_EW_TANH_T5;
		p = p * x2 + WH_EW_TANH_T3;
		float x3 = x * x2;
		return x + x3 * p;
	}
	float e = wh_ew_expf(-2.0f * a);
	float r = (1.0f - e) / (1.0f + e);
	return wh_bits_f32(wh_f32_bits(r) | (wh_f32_bits(x) & 0x80000000u));
}

/* erfc(a) for a >= 0.5 (see the header), given a2 = a^2 */
static float ew_erfc_tail(float a, float a2)
{
	float t = 1.0f / (1.0f + a);
	float p = WH_EW_ERF_B8;
	p = p * t + WH_EW_ERF_B7;
	p = p * t + WH_EW_ERF_B6;
	p = p * t + WH_EW_ERF_B5;
	p = p * t + WH_EW_ERF_B4;
	p = p * t + WH_EW_ERF_B3;
	p = p * t + WH_EW_ERF_B2;
	p = p * t + WH_EW_ERF_B1;
	p = p * t + WH_EW_ERF_B0;
	return wh_ew_expf(-a2) * p;
}

/* erf(x) for |x| < 1 */
static float ew_erf_small(float x)
{
	float z = x * x;
	float p = WH_EW_ERF_A6;
	p = p * z + WH_EW_ERF_A5;
	p = p * z + WH_EW_ERF_A4;
	p = p * z + WH_EW_ERF_A3;
	p = p * z + WH_EW_ERF_A2;
	p = p * z + WH_EW_ERF_A1;
	p = p * z + WH_EW_ERF_A0;
	return x * p;
}

float wh_ew_erff(float x)
{
	if (x != x)
		return x;
	float a = fabsf(x);
	if (a < 1.0f)
		return ew_erf_small(x);
	/* erf rounds to 1 from ERF_ONE on; the clamp keeps exp from subnormal results, which
	 * cost microcode assists on x86 */
	a = WH_EW_ERF_ONE < a ? WH_EW_ERF_ONE : a;
	float r = 1.0f - ew_erfc_tail(a, a * a);
	return wh_bits_f32(wh_f32_bits(r) | (wh_f32_bits(x) & 0x80000000u));
}

float wh_ew_geluf(float x)
{
	if (x != x)
		return x;
	float z = x * WH_EW_SQRT1_2;
	float h = 0.5f * x;
	float a = fabsf(z);
	if (z > -0.5f && z < 1.0f)
		return h * (1.0f + ew_erf_small(z));
	float c = ew_erfc_tail(a, h * x);
	return h * (z > 0.0f ? 2.0f - c : c);
}

float wh_ew_gelu_tanhf(float x)
{
	float x3 = x * x * x;
	float u = WH_EW_GELU_K2 * (x + WH_EW_GELU_C * x3);
	return x * wh_ew_sigmoidf(u);
}

static inline float ref_max(float a, float b)
{
	float r = a > b ? a : b;
	return a != a ? a : r;
}

static inline float ref_min(float a, float b)
{
	float r = a < b ? a : b;
	return a != a ? a : r;
}

static inline float ref_prelu(float a, float b)
{
	return a < 0.0f ? a * b : a;
}

static inline float ref_relu(float x)
{
	return 0.0f > x ? 0.0f : x;
}

static inline float ref_leaky(float x, float alpha)
{
	return x < 0.0f ? x * alpha : x;
}

static inline float ref_clip(float x, float lo, float hi)
{
	float t = lo > x ? lo : x;
	return hi < t ? hi : t;
}

static inline float ref_hsig(float x, float alpha, float beta)
{
	float t = x * alpha;
	t = t + beta;
	return ref_clip(t, 0.0f, 1.0f);
}

/* ---- float32 scalar row kernels ---- */

#define BIN_ROWS(EXPR)                                                  \
	do {                                                            \
		if (sa && sb) {                                         \
			for (size_t i = 0; i < n; i++) {                \
				float x = a[i], y = b[i];               \
				o[i] = (EXPR);                          \
			}                                               \
		} else if (sa) {                                        \
			float y = b[0];                                 \
			for (size_t i = 0; i < n; i++) {                \
				float x = a[i];                         \
				o[i] = (EXPR);                          \
			}                                               \
		} else if (sb) {                                        \
			float x = a[0];                                 \
			for (size_t i = 0; i < n; i++) {                \
				float y = b[i];                         \
				o[i] = (EXPR);                          \
			}                                               \
		} else {                                                \
			float x = a[0], y = b[0];                       \
			float r = (EXPR);                               \
			for (size_t i = 0; i < n; i++)                  \
				o[i] = r;                               \
		}                                                       \
	} while (0)

void wh_ew_bin_f32_scalar(enum wh_ew_bin op, const float *a, size_t sa, const float *b, size_t sb,
			  float *o, size_t n)
{
	if (n == 0)
		return;
	switch (op) {
	case WH_EW_ADD: BIN_ROWS(x + y); break;
	case WH_EW_SUB: BIN_ROWS(x - y); break;
	case WH_EW_MUL: BIN_ROWS(x * y); break;
	case WH_EW_DIV: BIN_ROWS(x / y); break;
	case WH_EW_MAX: BIN_ROWS(ref_max(x, y)); break;
	case WH_EW_MIN: BIN_ROWS(ref_min(x, y)); break;
	case WH_EW_PRELU: BIN_ROWS(ref_prelu(x, y)); break;
	default: break;
	}
}

#define UN_ROWS(EXPR)                                   \
	do {                                            \
		for (size_t i = 0; i < n; i++) {        \
			float v = x[i];                 \
			y[i] = (EXPR);                  \
		}                                       \
	} while (0)

void wh_ew_un_f32_scalar(enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
{
	switch (op) {
	case WH_EW_RELU: UN_ROWS(ref_relu(v)); break;
	case WH_EW_LEAKY_RELU: UN_ROWS(ref_leaky(v, p1)); break;
	case WH_EW_CLIP: UN_ROWS(ref_clip(v, p1, p2)); break;
	case WH_EW_HARD_SIGMOID: UN_ROWS(ref_hsig(v, p1, p2)); break;
	case WH_EW_HARD_SWISH: UN_ROWS(v * ref_hsig(v, p1, p2)); break;
	case WH_EW_SIGMOID: UN_ROWS(wh_ew_sigmoidf(v)); break;
	case WH_EW_TANH: UN_ROWS(wh_ew_tanhf(v)); break;
	case WH_EW_EXP: UN_ROWS(wh_ew_expf(v)); break;
	case WH_EW_ERF: UN_ROWS(wh_ew_erff(v)); break;
	case WH_EW_GELU: UN_ROWS(wh_ew_geluf(v)); break;
	case WH_EW_GELU_TANH: UN_ROWS(wh_ew_gelu_tanhf(v)); break;
	case WH_EW_ABS: UN_ROWS(fabsf(v)); break;
	case WH_EW_NEG: UN_ROWS(-v); break;
	case WH_EW_SQRT: UN_ROWS(sqrtf(v)); break;
	case WH_EW_RECIPROCAL: UN_ROWS(1.0f / v); break;
	case WH_EW_FLOOR: UN_ROWS(floorf(v)); break;
	case WH_EW_CEIL: UN_ROWS(ceilf(v)); break;
	case WH_EW_ROUND: UN_ROWS(rintf(v)); break;
	default: break;
	}
}

static void bin_f32(enum wh_isa isa, enum wh_ew_bin op, const float *a, size_t sa, const float *b,
		    size_t sb, float *o, size_t n)
{
	if (isa >= WH_ISA_AVX512)
		wh_ew_bin_f32_avx512(op, a, sa, b, sb, o, n);
	else if (isa >= WH_ISA_AVX2)
		wh_ew_bin_f32_avx2(op, a, sa, b, sb, o, n);
	else
		wh_ew_bin_f32_scalar(op, a, sa, b, sb, o, n);
}

static void un_f32(enum wh_isa isa, enum wh_ew_un op, const float *x, float *y, size_t n, float p1, float p2)
{
	if (isa >= WH_ISA_AVX512)
		wh_ew_un_f32_avx512(op, x, y, n, p1, p2);
	else if (isa >= WH_ISA_AVX2)
		wh_ew_un_f32_avx2(op, x, y, n, p1, p2);
	else
		wh_ew_un_f32_scalar(op, x, y, n, p1, p2);
}

/* ---- element types ---- */

enum ew_dom { DOM_NONE, DOM_F32, DOM_F64, DOM_SINT, DOM_UINT };

/* which element types an op accepts */
enum { T_FLT = 1, T_SINT = 2, T_UINT = 4, T_BOOL = 8, T_STR = 16 };
#define T_INT (T_SINT | T_UINT)
#define T_NUM (T_FLT | T_INT)

static enum ew_dom dom_of(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_FLOAT: case WH_DT_FLOAT16: case WH_DT_BFLOAT16: case WH_DT_FLOAT8E4M3FN:
	case WH_DT_FLOAT8E4M3FNUZ: case WH_DT_FLOAT8E5M2: case WH_DT_FLOAT8E5M2FNUZ:
	case WH_DT_FLOAT4E2M1: case WH_DT_FLOAT8E8M0:
		return DOM_F32;
	case WH_DT_DOUBLE: return DOM_F64;
	case WH_DT_INT8: case WH_DT_INT16: case WH_DT_INT32: case WH_DT_INT64: case WH_DT_INT4:
		return DOM_SINT;
	case WH_DT_UINT8: case WH_DT_UINT16: case WH_DT_UINT32: case WH_DT_UINT64: case WH_DT_UINT4:
	case WH_DT_BOOL:
		return DOM_UINT;
	default: return DOM_NONE;
	}
}

static unsigned tclass_of(enum wh_dtype dt)
{
	if (dt == WH_DT_BOOL)
		return T_BOOL;
	if (dt == WH_DT_STRING)
		return T_STR;
	switch (dom_of(dt)) {
	case DOM_F32: case DOM_F64: return T_FLT;
	case DOM_SINT: return T_SINT;
	case DOM_UINT: return T_UINT;
	default: return 0;
	}
}

/* An integer element as 64 bits: sign-extended for signed types, zero-extended otherwise. */
static inline uint64_t ld_int(enum wh_dtype dt, const void *p, uint64_t i)
{
	switch (dt) {
	case WH_DT_INT8: case WH_DT_INT4: return (uint64_t)(int64_t)((const int8_t *)p)[i];
	case WH_DT_INT16: return (uint64_t)(int64_t)((const int16_t *)p)[i];
	case WH_DT_INT32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
	case WH_DT_INT64: return (uint64_t)((const int64_t *)p)[i];
	case WH_DT_UINT8: case WH_DT_UINT4: case WH_DT_BOOL: return ((const uint8_t *)p)[i];
	case WH_DT_UINT16: return ((const uint16_t *)p)[i];
	case WH_DT_UINT32: return ((const uint32_t *)p)[i];
	case WH_DT_UINT64: return ((const uint64_t *)p)[i];
	default: return 0;
	}
}

/* Stores the low bits of v (two's complement wrap, as numpy's integer arithmetic does). */
static inline void st_int(enum wh_dtype dt, void *p, uint64_t i, uint64_t v)
{
	switch (dt) {
	case WH_DT_INT8: ((int8_t *)p)[i] = (int8_t)(uint8_t)v; break;
	case WH_DT_INT16: ((int16_t *)p)[i] = (int16_t)(uint16_t)v; break;
	case WH_DT_INT32: ((int32_t *)p)[i] = (int32_t)(uint32_t)v; break;
	case WH_DT_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
	case WH_DT_INT4: ((int8_t *)p)[i] = (int8_t)((v & 8) ? (int)(v & 15) - 16 : (int)(v & 15)); break;
	case WH_DT_UINT4: ((uint8_t *)p)[i] = (uint8_t)(v & 15); break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = v != 0; break;
	case WH_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)v; break;
	case WH_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)v; break;
	case WH_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)v; break;
	case WH_DT_UINT64: ((uint64_t *)p)[i] = v; break;
	default: break;
	}
}

/* Integers compare by signedness of their type. */
static inline bool i_lt(uint64_t a, uint64_t b, bool sgn)
{
	return sgn ? (int64_t)a < (int64_t)b : a < b;
}

static inline bool i_neg(uint64_t a, bool sgn)
{
	return sgn && (int64_t)a < 0;
}

/* ---- parameters of an op, set once per node ---- */

struct ew_par {
	float f1, f2;
	double d1, d2;
	uint64_t i1, i2;
	int mode;
};

/* ---- the broadcast walker ---- */

#define EW_MAX_IN 3
#define EW_GRAIN_FAST ((size_t)1 << 15)
#define EW_GRAIN_SLOW ((size_t)1 << 12)

struct ew_iter {
	int32_t rank;
	uint32_t n_in;
	int64_t dims[WH_MAX_RANK];
	int64_t st[EW_MAX_IN][WH_MAX_RANK];
};

struct ew_job;
/* one row: input k starts at element off[k] and steps by job->it.st[k][rank-1] */
typedef void (*ew_row_fn)(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n);

struct ew_job {
	struct ew_iter it;
	const struct wh_tensor *in[EW_MAX_IN];
	struct wh_tensor *out;
	ew_row_fn row;
	const struct ew_un_def *uop;
	const struct ew_bin_def *bop;
	struct ew_par par;
	enum wh_isa isa;
	bool sgn;
	size_t esz;
	const struct wh_out_round *round; /* float32 output rounded per chunk (emulation) */
	/* row_bin_periodic: operand per_k repeats its `period` elements along each row */
	size_t period;
	uint32_t per_k;
};

/* Views the inputs at the output's shape and merges adjacent dimensions along which every
 * operand is contiguous (or broadcast), so rows are as long as possible: [1,C,H,W] * [1,C,1,1]
 * becomes C rows of H*W with the second operand fixed per row. */
static void ew_iter_init(struct ew_iter *it, uint32_t n_in, const struct wh_tensor *const *in,
			 const struct wh_tensor *out)
{
	int64_t full[EW_MAX_IN][WH_MAX_RANK];
	for (uint32_t k = 0; k < n_in; k++)
		wh_broadcast_strides(in[k], out->rank, out->dims, full[k]);
	it->n_in = n_in;
	it->rank = 0;
	for (int32_t d = 0; d < out->rank; d++) {
		if (out->dims[d] == 1)
			continue;
		if (it->rank > 0) {
			int32_t l = it->rank - 1;
			bool merge = true;
			for (uint32_t k = 0; k < n_in; k++)
				if (it->st[k][l] != full[k][d] * out->dims[d])
					merge = false;
			if (merge) {
				it->dims[l] *= out->dims[d];
				for (uint32_t k = 0; k < n_in; k++)
					it->st[k][l] = full[k][d];
				continue;
			}
		}
		it->dims[it->rank] = out->dims[d];
		for (uint32_t k = 0; k < n_in; k++)
			it->st[k][it->rank] = full[k][d];
		it->rank++;
	}
	if (it->rank == 0) {
		it->rank = 1;
		it->dims[0] = 1;
		for (uint32_t k = 0; k < n_in; k++)
			it->st[k][0] = 0;
	}
}

static void ew_chunk(void *arg, size_t begin, size_t end)
{
	const struct ew_job *j = arg;
	const struct ew_iter *it = &j->it;
	int32_t r = it->rank, last = r - 1;
	int64_t idx[WH_MAX_RANK];
	uint64_t off[EW_MAX_IN] = {0, 0, 0};
	uint64_t rem = begin;
	for (int32_t d = last; d >= 0; d--) {
		idx[d] = (int64_t)(rem % (uint64_t)it->dims[d]);
		rem /= (uint64_t)it->dims[d];
		for (uint32_t k = 0; k < it->n_in; k++)
			off[k] += (uint64_t)(idx[d] * it->st[k][d]);
	}
	uint64_t pos = begin;
	while (pos < end) {
		uint64_t left = (uint64_t)(it->dims[last] - idx[last]);
		size_t n = (size_t)(left < end - pos ? left : end - pos);
		j->row(j, off, pos, n);
		pos += n;
		idx[last] += (int64_t)n;
		for (uint32_t k = 0; k < it->n_in; k++)
			off[k] += (uint64_t)((int64_t)n * it->st[k][last]);
		if (idx[last] < it->dims[last])
			continue;
		for (int32_t d = last; d >= 0; d--) {
			if (d < last) {
				idx[d]++;
				for (uint32_t k = 0; k < it->n_in; k++)
					off[k] += (uint64_t)it->st[k][d];
				if (idx[d] < it->dims[d])
					break;
			}
			for (uint32_t k = 0; k < it->n_in; k++)
				off[k] -= (uint64_t)(it->dims[d] * it->st[k][d]);
			idx[d] = 0;
		}
	}
	if (j->round)
		wh_out_round_apply(j->round, (float *)j->out->data + begin, end - begin);
}

/* The float32 output of a node's last pass may be rounded to the layer's storage format
 * chunk by chunk (see wh_kernel_ctx.round_out). */
static void ew_round_output(struct wh_kernel_ctx *ctx, struct ew_job *j)
{
	if (ctx->round_out && j->out->dtype == WH_DT_FLOAT && j->out == &ctx->outputs[0] && ctx->n_outputs == 1) {
		j->round = ctx->round_out;
		ctx->outputs_rounded = true;
	}
}

static void row_bin_fast(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n);
static void row_bin_periodic(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n);

/* The longest period row_bin_periodic takes, and the length of its repeated copy. */
#define EW_PERIOD_MAX 128
#define EW_PERIOD_TILE 1024

/* A float32 binary op whose rows are short because one operand is a vector along the last
 * axis repeated over the one before ([rows, C] + [C]: a bias over tokens, C small): the two
 * axes become one row with that operand periodic (row_bin_periodic), so the kernel is called
 * on long stretches instead of once per C elements. */
static void ew_periodic(struct ew_job *j)
{
	struct ew_iter *it = &j->it;
	int32_t l = it->rank - 1;
	if (j->row != row_bin_fast || it->rank < 2 || it->dims[l] > EW_PERIOD_MAX)
		return;
	for (uint32_t k = 0; k < 2; k++) {
		uint32_t o = 1 - k;
		if (it->st[k][l] == 1 && it->st[k][l - 1] == 0 && it->st[o][l] == 1 && it->st[o][l - 1] == it->dims[l]) {
			j->period = (size_t)it->dims[l];
			j->per_k = k;
			it->dims[l - 1] *= it->dims[l];
			it->st[k][l - 1] = 0;
			it->st[o][l - 1] = 1;
			it->rank--;
			j->row = row_bin_periodic;
			return;
		}
	}
}

static void ew_run(struct wh_kernel_ctx *ctx, struct ew_job *j, uint32_t n_in, size_t grain)
{
	if (j->out->count == 0)
		return;
	ew_iter_init(&j->it, n_in, j->in, j->out);
	if (n_in == 2)
		ew_periodic(j);
	j->isa = ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR;
	wh_parallel_for(ctx->pool, (size_t)j->out->count, grain, ew_chunk, j);
}

static const char *dt_name(enum wh_dtype dt)
{
	const char *s = wh_dtype_name(dt);
	return s ? s : "unknown";
}

static enum wh_status check_type(struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what,
				 unsigned types)
{
	if (!(tclass_of(t->dtype) & types))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED,
				      "%s has type %s, which this op does not take (cast it to a supported type)",
				      what, dt_name(t->dtype));
	return WH_OK;
}

static enum wh_status need_input(struct wh_kernel_ctx *ctx, uint32_t i, const struct wh_tensor **out)
{
	const struct wh_tensor *t = wh_kin(ctx, i);
	if (!t)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %u is missing (the op needs it)", i);
	*out = t;
	return WH_OK;
}

static enum wh_status shape_mismatch(struct wh_kernel_ctx *ctx, uint32_t n, const struct wh_tensor *const *ts)
{
	char msg[512] = "", buf[128];
	size_t len = 0;
	for (uint32_t i = 0; i < n && len < sizeof msg; i++) {
		if (!ts[i])
			continue;
		int w = snprintf(msg + len, sizeof msg - len, "%s%s", len ? " and " : "",
				 wh_shape_str(ts[i]->dims, ts[i]->rank, buf, sizeof buf));
		if (w < 0)
			break;
		len += (size_t)w;
	}
	return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input shapes %s do not broadcast (fix the shapes)", msg);
}

/* ---- unary ops ---- */

struct ew_un_def {
	unsigned types;
	int fast; /* enum wh_ew_un, or -1 */
	bool out_bool;
	float (*f)(float, const struct ew_par *);
	double (*d)(double, const struct ew_par *);
	/* NULL: integer inputs go through d */
	uint64_t (*i)(uint64_t, bool, const struct ew_par *);
};

static void row_un_fast(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	un_f32(j->isa, (enum wh_ew_un)j->uop->fast, (const float *)j->in[0]->data + off[0],
	       (float *)j->out->data + o, n, j->par.f1, j->par.f2);
}

static void row_un_f32(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	const float *x = (const float *)j->in[0]->data + off[0];
	float *y = (float *)j->out->data + o;
	float (*f)(float, const struct ew_par *) = j->uop->f;
	for (size_t i = 0; i < n; i++)
		y[i] = f(x[i], &j->par);
}

static void row_un_f64(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	const double *x = (const double *)j->in[0]->data + off[0];
	double *y = (double *)j->out->data + o;
	double (*d)(double, const struct ew_par *) = j->uop->d;
	for (size_t i = 0; i < n; i++)
		y[i] = d(x[i], &j->par);
}

static void row_un_conv_f(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		float r = j->uop->f((float)wh_tensor_get_f64(j->in[0], off[0] + i), &j->par);
		wh_tensor_set_f64(j->out, o + i, r);
	}
}

static void row_un_conv_d(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		wh_tensor_set_f64(j->out, o + i, j->uop->d(wh_tensor_get_f64(j->in[0], off[0] + i), &j->par));
}

static void row_un_int(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	enum wh_dtype dt = j->in[0]->dtype;
	for (size_t i = 0; i < n; i++)
		st_int(j->out->dtype, j->out->data, o + i, j->uop->i(ld_int(dt, j->in[0]->data, off[0] + i), j->sgn, &j->par));
}

static enum wh_status run_unary(struct wh_kernel_ctx *ctx, const struct ew_un_def *op, const struct ew_par *par)
{
	const struct wh_tensor *x = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &x)) != WH_OK || (st = check_type(ctx, x, "input", op->types)) != WH_OK)
		return st;
	enum wh_dtype odt = op->out_bool ? WH_DT_BOOL : x->dtype;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_kernel_out_alloc(ctx, 0, odt, x->rank, x->dims)) != WH_OK)
		return st;
	struct ew_job j = {.in = {x}, .out = out, .uop = op};
	if (par)
		j.par = *par;
	size_t grain = EW_GRAIN_SLOW;
	enum ew_dom dom = dom_of(x->dtype);
	if (dom == DOM_F32 && x->dtype == WH_DT_FLOAT && odt == WH_DT_FLOAT) {
		j.row = op->fast >= 0 ? row_un_fast : row_un_f32;
		grain = op->fast >= 0 ? EW_GRAIN_FAST : EW_GRAIN_SLOW;
	} else if (dom == DOM_F32) {
		j.row = row_un_conv_f;
	} else if (dom == DOM_F64) {
		j.row = odt == WH_DT_DOUBLE ? row_un_f64 : row_un_conv_d;
	} else {
		j.sgn = dom == DOM_SINT;
		j.row = op->i ? row_un_int : row_un_conv_d;
	}
	ew_round_output(ctx, &j);
	ew_run(ctx, &j, 1, grain);
	return WH_OK;
}

/* Float and double versions of one formula. The activations below evaluate their float
 * version in double (double parameters, double libm) and round once, which is at least as
 * accurate as float32 evaluation; none of them has a SIMD variant to agree with. */
#define UN_FD(NAME, EXPR)                                                         \
	static float NAME##_f(float x, const struct ew_par *p) { return (EXPR); } \
	static double NAME##_d(double x, const struct ew_par *p) { return (EXPR); }
#define UN_D(NAME, EXPR) static double NAME##_d(double x, const struct ew_par *p) { return (EXPR); }

UN_D(u_abs, fabs(x))
UN_D(u_neg, -x)
UN_D(u_log, log(x))
UN_D(u_sqrt, sqrt(x))
UN_D(u_recip, 1 / x)
UN_D(u_floor, floor(x))
UN_D(u_ceil, ceil(x))
UN_D(u_round, rint(x))
UN_D(u_sin, sin(x))
UN_D(u_cos, cos(x))
UN_D(u_tan, tan(x))
UN_D(u_asin, asin(x))
UN_D(u_acos, acos(x))
UN_D(u_atan, atan(x))
UN_D(u_sinh, sinh(x))
UN_D(u_cosh, cosh(x))
UN_D(u_asinh, asinh(x))
UN_D(u_acosh, acosh(x))
UN_D(u_atanh, atanh(x))
UN_D(u_erf, erf(x))
UN_FD(u_sign, x > 0 ? 1 : (x < 0 ? -1 : x))
UN_FD(u_isnan, x != x)
UN_FD(u_isinf, isinf(x) && ((x > 0 && p->mode & 1) || (x < 0 && p->mode & 2)))
UN_FD(u_elu, x < 0 ? p->d1 * expm1(x) : x)
UN_FD(u_selu, x > 0 ? p->d2 * x : p->d2 * (p->d1 * expm1(x)))
UN_FD(u_celu, (x > 0 ? x : 0) + (x < 0 ? p->d1 * expm1(x / p->d1) : 0))
UN_FD(u_softplus, (x > 0 ? x : 0) + log1p(exp(-fabs(x))))
UN_FD(u_softsign, x / (1 + fabs(x)))
UN_FD(u_threlu, x > p->d1 ? x : 0)
UN_FD(u_shrink, x < -p->d1 ? x + p->d2 : (x > p->d1 ? x - p->d2 : 0))
UN_FD(u_mish, x * tanh((x > 0 ? x : 0) + log1p(exp(-fabs(x)))))

/* The float32 versions that the row kernels also use, so that float16 and friends get the
 * same results as the float32 path. Libm calls in float: numpy evaluates float32 and
 * float16 math in float32. */
static float u_abs_fr(float x, const struct ew_par *p) { return fabsf(x); }
static float u_neg_fr(float x, const struct ew_par *p) { return -x; }
static float u_exp_fr(float x, const struct ew_par *p) { return wh_ew_expf(x); }
static double u_exp_d(double x, const struct ew_par *p) { return exp(x); }
static float u_log_fr(float x, const struct ew_par *p) { return logf(x); }
static float u_sqrt_fr(float x, const struct ew_par *p) { return sqrtf(x); }
static float u_recip_fr(float x, const struct ew_par *p) { return 1.0f / x; }
static float u_floor_fr(float x, const struct ew_par *p) { return floorf(x); }
static float u_ceil_fr(float x, const struct ew_par *p) { return ceilf(x); }
static float u_round_fr(float x, const struct ew_par *p) { return rintf(x); }
static float u_sin_fr(float x, const struct ew_par *p) { return sinf(x); }
static float u_cos_fr(float x, const struct ew_par *p) { return cosf(x); }
static float u_tan_fr(float x, const struct ew_par *p) { return tanf(x); }
static float u_asin_fr(float x, const struct ew_par *p) { return asinf(x); }
static float u_acos_fr(float x, const struct ew_par *p) { return acosf(x); }
static float u_atan_fr(float x, const struct ew_par *p) { return atanf(x); }
static float u_sinh_fr(float x, const struct ew_par *p) { return sinhf(x); }
static float u_cosh_fr(float x, const struct ew_par *p) { return coshf(x); }
static float u_asinh_fr(float x, const struct ew_par *p) { return asinhf(x); }
static float u_acosh_fr(float x, const struct ew_par *p) { return acoshf(x); }
static float u_atanh_fr(float x, const struct ew_par *p) { return atanhf(x); }
static float u_erf_fr(float x, const struct ew_par *p) { return wh_ew_erff(x); }
static float u_relu_fr(float x, const struct ew_par *p) { return ref_relu(x); }
static double u_relu_d(double x, const struct ew_par *p) { return 0 > x ? 0 : x; }
static float u_leaky_fr(float x, const struct ew_par *p) { return ref_leaky(x, p->f1); }
static double u_leaky_d(double x, const struct ew_par *p) { return x < 0 ? x * p->d1 : x; }
static float u_clip_fr(float x, const struct ew_par *p) { return ref_clip(x, p->f1, p->f2); }
static double u_clip_d(double x, const struct ew_par *p)
{
	double t = p->d1 > x ? p->d1 : x;
	return p->d2 < t ? p->d2 : t;
}
static float u_hsig_fr(float x, const struct ew_par *p) { return ref_hsig(x, p->f1, p->f2); }
static double u_hsig_d(double x, const struct ew_par *p)
{
	double t = x * p->d1 + p->d2;
	t = 0 > t ? 0 : t;
	return 1 < t ? 1 : t;
}
static float u_hswish_fr(float x, const struct ew_par *p) { return x * ref_hsig(x, p->f1, p->f2); }
static double u_hswish_d(double x, const struct ew_par *p) { return x * u_hsig_d(x, p); }
static float u_sigmoid_fr(float x, const struct ew_par *p) { return wh_ew_sigmoidf(x); }
static double u_sigmoid_d(double x, const struct ew_par *p)
{
	double e = exp(-fabs(x));
	return (x >= 0 ? 1 : e) / (1 + e);
}
static float u_tanh_fr(float x, const struct ew_par *p) { return wh_ew_tanhf(x); }
static double u_tanh_d(double x, const struct ew_par *p) { return tanh(x); }
/* Gelu: the float32 path's one-pass forms (see elementwise-internal.h) */
static float u_gelu_fr(float x, const struct ew_par *p) { return wh_ew_geluf(x); }
static float u_gelu_tanh_fr(float x, const struct ew_par *p) { return wh_ew_gelu_tanhf(x); }
static double u_gelu_d(double x, const struct ew_par *p) { return 0.5 * x * (1 + erf(x * 0.70710678118654752440)); }
static double u_gelu_tanh_d(double x, const struct ew_par *p)
{
	return 0.5 * x * (1 + tanh(0.79788456080286535588 * (x + 0.044715 * x * x * x)));
}
/* Swish: the sigmoid of the float32 path, as for Sigmoid itself */
static float u_swish_f(float x, const struct ew_par *p) { return x * wh_ew_sigmoidf(x * p->f1); }
static double u_swish_d(double x, const struct ew_par *p) { return x * u_sigmoid_d(x * p->d1, p); }
static float u_not_f(float x, const struct ew_par *p) { return x == 0; }
static double u_not_d(double x, const struct ew_par *p) { return x == 0; }

static uint64_t ui_abs(uint64_t x, bool sgn, const struct ew_par *p) { return i_neg(x, sgn) ? 0 - x : x; }
static uint64_t ui_neg(uint64_t x, bool sgn, const struct ew_par *p) { return 0 - x; }
static uint64_t ui_sign(uint64_t x, bool sgn, const struct ew_par *p)
{
	return i_neg(x, sgn) ? (uint64_t)-1 : (x != 0);
}
static uint64_t ui_relu(uint64_t x, bool sgn, const struct ew_par *p) { return i_neg(x, sgn) ? 0 : x; }
static uint64_t ui_not(uint64_t x, bool sgn, const struct ew_par *p) { return x == 0; }
static uint64_t ui_bnot(uint64_t x, bool sgn, const struct ew_par *p) { return ~x; }
static uint64_t ui_clip(uint64_t x, bool sgn, const struct ew_par *p)
{
	uint64_t t = i_lt(x, p->i1, sgn) ? p->i1 : x;
	return i_lt(p->i2, t, sgn) ? p->i2 : t;
}

#define FLT_ONLY(NAME) T_FLT, -1, false, NAME##_fr, NAME##_d, NULL

static const struct ew_un_def UN_ABS = {T_NUM, WH_EW_ABS, false, u_abs_fr, u_abs_d, ui_abs};
static const struct ew_un_def UN_NEG = {T_FLT | T_SINT, WH_EW_NEG, false, u_neg_fr, u_neg_d, ui_neg};
static const struct ew_un_def UN_EXP = {T_FLT, WH_EW_EXP, false, u_exp_fr, u_exp_d, NULL};
static const struct ew_un_def UN_LOG = {FLT_ONLY(u_log)};
static const struct ew_un_def UN_SQRT = {T_FLT, WH_EW_SQRT, false, u_sqrt_fr, u_sqrt_d, NULL};
static const struct ew_un_def UN_RECIP = {T_FLT, WH_EW_RECIPROCAL, false, u_recip_fr, u_recip_d, NULL};
static const struct ew_un_def UN_FLOOR = {T_FLT, WH_EW_FLOOR, false, u_floor_fr, u_floor_d, NULL};
static const struct ew_un_def UN_CEIL = {T_FLT, WH_EW_CEIL, false, u_ceil_fr, u_ceil_d, NULL};
static const struct ew_un_def UN_ROUND = {T_FLT, WH_EW_ROUND, false, u_round_fr, u_round_d, NULL};
static const struct ew_un_def UN_SIGN = {T_NUM, -1, false, u_sign_f, u_sign_d, ui_sign};
static const struct ew_un_def UN_SIN = {FLT_ONLY(u_sin)};
static const struct ew_un_def UN_COS = {FLT_ONLY(u_cos)};
static const struct ew_un_def UN_TAN = {FLT_ONLY(u_tan)};
static const struct ew_un_def UN_ASIN = {FLT_ONLY(u_asin)};
static const struct ew_un_def UN_ACOS = {FLT_ONLY(u_acos)};
static const struct ew_un_def UN_ATAN = {FLT_ONLY(u_atan)};
static const struct ew_un_def UN_SINH = {FLT_ONLY(u_sinh)};
static const struct ew_un_def UN_COSH = {FLT_ONLY(u_cosh)};
static const struct ew_un_def UN_ASINH = {FLT_ONLY(u_asinh)};
static const struct ew_un_def UN_ACOSH = {FLT_ONLY(u_acosh)};
static const struct ew_un_def UN_ATANH = {FLT_ONLY(u_atanh)};
static const struct ew_un_def UN_ERF = {T_FLT, WH_EW_ERF, false, u_erf_fr, u_erf_d, NULL};
static const struct ew_un_def UN_ISNAN = {T_FLT, -1, true, u_isnan_f, u_isnan_d, NULL};
static const struct ew_un_def UN_ISINF = {T_FLT, -1, true, u_isinf_f, u_isinf_d, NULL};
static const struct ew_un_def UN_NOT = {T_BOOL, -1, true, u_not_f, u_not_d, ui_not};
static const struct ew_un_def UN_BNOT = {T_INT, -1, false, NULL, NULL, ui_bnot};
static const struct ew_un_def UN_RELU = {T_FLT | T_SINT, WH_EW_RELU, false, u_relu_fr, u_relu_d, ui_relu};
static const struct ew_un_def UN_LEAKY = {T_FLT, WH_EW_LEAKY_RELU, false, u_leaky_fr, u_leaky_d, NULL};
static const struct ew_un_def UN_ELU = {T_FLT, -1, false, u_elu_f, u_elu_d, NULL};
static const struct ew_un_def UN_SELU = {T_FLT, -1, false, u_selu_f, u_selu_d, NULL};
static const struct ew_un_def UN_CELU = {T_FLT, -1, false, u_celu_f, u_celu_d, NULL};
static const struct ew_un_def UN_SIGMOID = {T_FLT, WH_EW_SIGMOID, false, u_sigmoid_fr, u_sigmoid_d, NULL};
static const struct ew_un_def UN_HSIG = {T_FLT, WH_EW_HARD_SIGMOID, false, u_hsig_fr, u_hsig_d, NULL};
static const struct ew_un_def UN_HSWISH = {T_FLT, WH_EW_HARD_SWISH, false, u_hswish_fr, u_hswish_d, NULL};
static const struct ew_un_def UN_SOFTPLUS = {T_FLT, -1, false, u_softplus_f, u_softplus_d, NULL};
static const struct ew_un_def UN_SOFTSIGN = {T_FLT, -1, false, u_softsign_f, u_softsign_d, NULL};
static const struct ew_un_def UN_TANH = {T_FLT, WH_EW_TANH, false, u_tanh_fr, u_tanh_d, NULL};
static const struct ew_un_def UN_THRELU = {T_FLT, -1, false, u_threlu_f, u_threlu_d, NULL};
static const struct ew_un_def UN_GELU = {T_FLT, WH_EW_GELU, false, u_gelu_fr, u_gelu_d, NULL};
static const struct ew_un_def UN_GELU_TANH = {T_FLT, WH_EW_GELU_TANH, false, u_gelu_tanh_fr, u_gelu_tanh_d, NULL};
static const struct ew_un_def UN_SWISH = {T_FLT, -1, false, u_swish_f, u_swish_d, NULL};
static const struct ew_un_def UN_MISH = {T_FLT, -1, false, u_mish_f, u_mish_d, NULL};
static const struct ew_un_def UN_SHRINK = {T_NUM, -1, false, u_shrink_f, u_shrink_d, NULL};
static const struct ew_un_def UN_CLIP = {T_NUM, WH_EW_CLIP, false, u_clip_fr, u_clip_d, ui_clip};

#define UNARY_OP(FN, DEF) \
	static enum wh_status FN(struct wh_kernel_ctx *ctx) { return run_unary(ctx, &DEF, NULL); }

UNARY_OP(op_abs, UN_ABS)
UNARY_OP(op_neg, UN_NEG)
UNARY_OP(op_exp, UN_EXP)
UNARY_OP(op_log, UN_LOG)
UNARY_OP(op_sqrt, UN_SQRT)
UNARY_OP(op_reciprocal, UN_RECIP)
UNARY_OP(op_floor, UN_FLOOR)
UNARY_OP(op_ceil, UN_CEIL)
UNARY_OP(op_round, UN_ROUND)
UNARY_OP(op_sign, UN_SIGN)
UNARY_OP(op_sin, UN_SIN)
UNARY_OP(op_cos, UN_COS)
UNARY_OP(op_tan, UN_TAN)
UNARY_OP(op_asin, UN_ASIN)
UNARY_OP(op_acos, UN_ACOS)
UNARY_OP(op_atan, UN_ATAN)
UNARY_OP(op_sinh, UN_SINH)
UNARY_OP(op_cosh, UN_COSH)
UNARY_OP(op_asinh, UN_ASINH)
UNARY_OP(op_acosh, UN_ACOSH)
UNARY_OP(op_atanh, UN_ATANH)
UNARY_OP(op_erf, UN_ERF)
UNARY_OP(op_isnan, UN_ISNAN)
UNARY_OP(op_not, UN_NOT)
UNARY_OP(op_bitwise_not, UN_BNOT)
UNARY_OP(op_relu, UN_RELU)
UNARY_OP(op_sigmoid, UN_SIGMOID)
UNARY_OP(op_softplus, UN_SOFTPLUS)
UNARY_OP(op_softsign, UN_SOFTSIGN)
UNARY_OP(op_tanh, UN_TANH)
UNARY_OP(op_mish, UN_MISH)

static enum wh_status op_isinf(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = {0};
	p.mode = (wh_node_attr_int(ctx->node, "detect_positive", 1) ? 1 : 0) |
		 (wh_node_attr_int(ctx->node, "detect_negative", 1) ? 2 : 0);
	return run_unary(ctx, &UN_ISINF, &p);
}

/* One float attribute into f1/d1 (and optionally a second into f2/d2). */
static struct ew_par par_attrs(const struct wh_node *node, const char *n1, float v1, const char *n2, float v2)
{
	struct ew_par p = {0};
	p.f1 = wh_node_attr_float(node, n1, v1);
	p.d1 = p.f1;
	if (n2) {
		p.f2 = wh_node_attr_float(node, n2, v2);
		p.d2 = p.f2;
	}
	return p;
}

/* The parameters of the activations a layer can also apply as an epilogue (wh_epilogue_of):
 * one definition for the op's kernel and for the fusion. */
static struct ew_par leaky_par(const struct wh_node *n)
{
	return par_attrs(n, "alpha", 0.01f, NULL, 0);
}

static struct ew_par hard_sigmoid_par(const struct wh_node *n)
{
	return par_attrs(n, "alpha", 0.2f, "beta", 0.5f);
}

static struct ew_par hard_swish_par(void)
{
	return (struct ew_par){.f1 = 1.0f / 6.0f, .f2 = 0.5f, .d1 = 1.0 / 6.0, .d2 = 0.5};
}

/* Clip-1/6: attributes, defaulting to the float range as the spec says */
static struct ew_par clip_attr_par(const struct wh_node *n)
{
	struct ew_par p = {0};
	p.f1 = wh_node_attr_float(n, "min", -FLT_MAX);
	p.f2 = wh_node_attr_float(n, "max", FLT_MAX);
	p.d1 = p.f1;
	p.d2 = p.f2;
	return p;
}

/* Clip-11+ on floats: scalar bounds (NULL: that side open) */
static struct ew_par clip_float_par(const struct wh_tensor *lo, const struct wh_tensor *hi)
{
	struct ew_par p = {0};
	p.d1 = lo ? wh_tensor_get_f64(lo, 0) : -INFINITY;
	p.d2 = hi ? wh_tensor_get_f64(hi, 0) : INFINITY;
	p.f1 = (float)p.d1;
	p.f2 = (float)p.d2;
	return p;
}

static enum wh_status op_leaky_relu(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = leaky_par(ctx->node);
	return run_unary(ctx, &UN_LEAKY, &p);
}

static enum wh_status op_elu(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "alpha", 1.0f, NULL, 0);
	return run_unary(ctx, &UN_ELU, &p);
}

static enum wh_status op_selu(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f);
	return run_unary(ctx, &UN_SELU, &p);
}

static enum wh_status op_celu(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "alpha", 1.0f, NULL, 0);
	if (p.d1 == 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "alpha is 0 (Celu divides by it; use a non-zero alpha)");
	return run_unary(ctx, &UN_CELU, &p);
}

static enum wh_status op_swish(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "alpha", 1.0f, NULL, 0);
	return run_unary(ctx, &UN_SWISH, &p);
}

static enum wh_status op_hard_sigmoid(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = hard_sigmoid_par(ctx->node);
	return run_unary(ctx, &UN_HSIG, &p);
}

static enum wh_status op_hard_swish(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = hard_swish_par();
	return run_unary(ctx, &UN_HSWISH, &p);
}

static enum wh_status op_thresholded_relu(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "alpha", 1.0f, NULL, 0);
	return run_unary(ctx, &UN_THRELU, &p);
}

static enum wh_status op_shrink(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = par_attrs(ctx->node, "lambd", 0.5f, "bias", 0.0f);
	return run_unary(ctx, &UN_SHRINK, &p);
}

static enum wh_status op_gelu(struct wh_kernel_ctx *ctx)
{
	char buf[16];
	const char *a = wh_node_attr_string(ctx->node, "approximate", "none", buf, sizeof buf);
	if (!strcmp(a, "tanh"))
		return run_unary(ctx, &UN_GELU_TANH, NULL);
	if (strcmp(a, "none"))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "approximate is '%s' (use 'none' or 'tanh')", a);
	return run_unary(ctx, &UN_GELU, NULL);
}

/* A scalar bound of Clip-11+ (an omitted input or an empty name leaves that side open). */
static enum wh_status clip_bound(struct wh_kernel_ctx *ctx, uint32_t i, const struct wh_tensor *x,
				 const struct wh_tensor **out)
{
	const struct wh_tensor *t = wh_kin(ctx, i);
	*out = NULL;
	if (!t)
		return WH_OK;
	if (t->count != 1) {
		char buf[64];
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s has shape %s, expected a scalar (pass one value)",
				      i == 1 ? "min" : "max", wh_shape_str(t->dims, t->rank, buf, sizeof buf));
	}
	if (t->dtype != x->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s has type %s, the input %s (use the same type)",
				      i == 1 ? "min" : "max", dt_name(t->dtype), dt_name(x->dtype));
	*out = t;
	return WH_OK;
}

static uint64_t int_limit(enum wh_dtype dt, bool hi)
{
	switch (dt) {
	case WH_DT_INT8: return hi ? INT8_MAX : (uint64_t)INT8_MIN;
	case WH_DT_INT16: return hi ? INT16_MAX : (uint64_t)INT16_MIN;
	case WH_DT_INT32: return hi ? INT32_MAX : (uint64_t)INT32_MIN;
	case WH_DT_INT64: return hi ? INT64_MAX : (uint64_t)INT64_MIN;
	case WH_DT_INT4: return hi ? 7 : (uint64_t)-8;
	case WH_DT_UINT8: return hi ? UINT8_MAX : 0;
	case WH_DT_UINT16: return hi ? UINT16_MAX : 0;
	case WH_DT_UINT32: return hi ? UINT32_MAX : 0;
	case WH_DT_UINT4: return hi ? 15 : 0;
	case WH_DT_BOOL: return hi ? 1 : 0;
	default: return hi ? UINT64_MAX : 0;
	}
}

/* A float attribute as an integer bound, saturating instead of overflowing. */
static uint64_t sat_i64(double v)
{
	if (v != v)
		return 0;
	if (v >= 9.2233720368547758e18)
		return (uint64_t)INT64_MAX;
	if (v <= -9.2233720368547758e18)
		return (uint64_t)INT64_MIN;
	return (uint64_t)(int64_t)v;
}

static enum wh_status op_clip(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = NULL, *lo = NULL, *hi = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &x)) != WH_OK || (st = check_type(ctx, x, "input", T_NUM)) != WH_OK)
		return st;
	struct ew_par p = {0};
	if (ctx->opset < 11) {
		p = clip_attr_par(ctx->node);
		if (dom_of(x->dtype) == DOM_SINT || dom_of(x->dtype) == DOM_UINT) {
			p.i1 = wh_node_attr(ctx->node, "min") ? sat_i64(p.d1) : int_limit(x->dtype, false);
			p.i2 = wh_node_attr(ctx->node, "max") ? sat_i64(p.d2) : int_limit(x->dtype, true);
		}
		return run_unary(ctx, &UN_CLIP, &p);
	}
	if ((st = clip_bound(ctx, 1, x, &lo)) != WH_OK || (st = clip_bound(ctx, 2, x, &hi)) != WH_OK)
		return st;
	enum ew_dom dom = dom_of(x->dtype);
	if (dom == DOM_SINT || dom == DOM_UINT) {
		p.i1 = lo ? ld_int(lo->dtype, lo->data, 0) : int_limit(x->dtype, false);
		p.i2 = hi ? ld_int(hi->dtype, hi->data, 0) : int_limit(x->dtype, true);
		return run_unary(ctx, &UN_CLIP, &p);
	}
	p = clip_float_par(lo, hi);
	return run_unary(ctx, &UN_CLIP, &p);
}

bool wh_epilogue_of(const struct wh_node *n, int64_t opset, const struct wh_tensor *const *consts,
		    struct wh_epilogue *e)
{
	const char *op = n->op_type;
	const struct ew_un_def *def = NULL;
	struct ew_par p = {0};
	if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
		return false;
	if (!strcmp(op, "Relu")) {
		def = &UN_RELU;
	} else if (!strcmp(op, "LeakyRelu")) {
		def = &UN_LEAKY;
		p = leaky_par(n);
	} else if (!strcmp(op, "HardSigmoid")) {
		def = &UN_HSIG;
		p = hard_sigmoid_par(n);
	} else if (!strcmp(op, "HardSwish")) {
		def = &UN_HSWISH;
		p = hard_swish_par();
	} else if (!strcmp(op, "Sigmoid")) {
		def = &UN_SIGMOID;
	} else if (!strcmp(op, "Tanh")) {
		def = &UN_TANH;
	} else if (!strcmp(op, "Gelu") && opset >= 20) {
		char buf[16];
		const char *a = wh_node_attr_string(n, "approximate", "none", buf, sizeof buf);
		if (!strcmp(a, "none"))
			def = &UN_GELU;
		else if (!strcmp(a, "tanh"))
			def = &UN_GELU_TANH;
		else
			return false; /* op_gelu refuses it */
	} else if (!strcmp(op, "Clip")) {
		def = &UN_CLIP;
		if (opset < 11) {
			p = clip_attr_par(n);
		} else {
			const struct wh_tensor *lo = n->n_inputs > 1 ? consts[0] : NULL;
			const struct wh_tensor *hi = n->n_inputs > 2 ? consts[1] : NULL;
			/* what op_clip would refuse is left to it */
			if ((lo && (lo->dtype != WH_DT_FLOAT || lo->count != 1)) ||
			    (hi && (hi->dtype != WH_DT_FLOAT || hi->count != 1)))
				return false;
			p = clip_float_par(lo, hi);
		}
	} else {
		return false;
	}
	*e = (struct wh_epilogue){.op = def->fast, .times_input = false, .p1 = p.f1, .p2 = p.f2};
	return true;
}

void wh_epilogue_apply(const struct wh_epilogue *e, const struct wh_cpu_features *cpu, float *y, size_t n)
{
	enum wh_isa isa = cpu ? cpu->isa : WH_ISA_SCALAR;
	if (e->bias_only)
		return;
	if (e->chain) {
		float t[512];
		for (size_t i = 0; i < n; i += 512) {
			size_t m = n - i < 512 ? n - i : 512;
			float *x = y + i;
			bin_f32(isa, e->chain == 1 ? WH_EW_DIV : WH_EW_MUL, x, 1, &e->c1, 0, t, m);
			if (e->chain == 3) { /* QuickGELU: x * sigmoid(x * c1) */
				un_f32(isa, WH_EW_SIGMOID, t, t, m, 0, 0);
				bin_f32(isa, WH_EW_MUL, x, 1, t, 1, x, m);
				continue;
			}
			un_f32(isa, WH_EW_ERF, t, t, m, 0, 0);
			bin_f32(isa, WH_EW_ADD, t, 1, &e->c2, 0, t, m);
			if (e->half_first) {
				bin_f32(isa, WH_EW_MUL, x, 1, &e->c3, 0, x, m);
				bin_f32(isa, WH_EW_MUL, x, 1, t, 1, x, m);
			} else {
				bin_f32(isa, WH_EW_MUL, x, 1, t, 1, x, m);
				bin_f32(isa, WH_EW_MUL, x, 1, &e->c3, 0, x, m);
			}
		}
		return;
	}
	if (!e->times_input) {
		un_f32(isa, (enum wh_ew_un)e->op, y, y, n, e->p1, e->p2);
		return;
	}
	/* the activation's layer, then the Mul's: a[i] * b[i] is exact whichever comes first */
	float act[512];
	for (size_t i = 0; i < n; i += 512) {
		size_t m = n - i < 512 ? n - i : 512;
		un_f32(isa, (enum wh_ew_un)e->op, y + i, act, m, e->p1, e->p2);
		bin_f32(isa, WH_EW_MUL, y + i, 1, act, 1, y + i, m);
	}
}

/* ---- binary ops ---- */

struct ew_bin_def {
	unsigned types;
	int fast; /* enum wh_ew_bin, or -1 */
	bool out_bool;
	float (*f)(float, float, const struct ew_par *);
	double (*d)(double, double, const struct ew_par *);
	uint64_t (*i)(uint64_t, uint64_t, bool, const struct ew_par *);
};

static void row_bin_fast(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	bin_f32(j->isa, (enum wh_ew_bin)j->bop->fast, (const float *)j->in[0]->data + off[0], (size_t)j->it.st[0][l],
		(const float *)j->in[1]->data + off[1], (size_t)j->it.st[1][l], (float *)j->out->data + o, n);
}

void wh_ew_bin_f32_periodic(enum wh_isa isa, enum wh_ew_bin op, const float *x, const float *v, size_t p,
			    bool v_first, float *y, size_t n, size_t ph)
{
	if (p > EW_PERIOD_MAX) {
		/* long periods: along each period's stretch */
		while (n) {
			size_t c = n < p - ph ? n : p - ph;
			if (v_first)
				bin_f32(isa, op, v + ph, 1, x, 1, y, c);
			else
				bin_f32(isa, op, x, 1, v + ph, 1, y, c);
			x += c;
			y += c;
			n -= c;
			ph = 0;
		}
		return;
	}
	float tile[EW_PERIOD_TILE];
	size_t reps = EW_PERIOD_TILE / p, t = p * reps;
	size_t fill = n + ph < t ? n + ph : t; /* what the row reads of the copy */
	for (size_t i = 0; i < fill; i += p)
		memcpy(tile + i, v, (fill - i < p ? fill - i : p) * sizeof *tile);
	while (n) {
		size_t c = n < t - ph ? n : t - ph;
		if (v_first)
			bin_f32(isa, op, tile + ph, 1, x, 1, y, c);
		else
			bin_f32(isa, op, x, 1, tile + ph, 1, y, c);
		x += c;
		y += c;
		n -= c;
		ph = (ph + c) % p;
	}
}

/* A row (ew_periodic) where operand per_k repeats j->period elements from off[per_k], the
 * output's element o at phase o % period of it (the merged rows start at multiples of the
 * period). */
static void row_bin_periodic(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	uint32_t k = j->per_k;
	wh_ew_bin_f32_periodic(j->isa, (enum wh_ew_bin)j->bop->fast, (const float *)j->in[1 - k]->data + off[1 - k],
			       (const float *)j->in[k]->data + off[k], j->period, k == 0, (float *)j->out->data + o, n,
			       (size_t)(o % j->period));
}

static void row_bin_f32(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	int64_t sa = j->it.st[0][l], sb = j->it.st[1][l];
	const float *a = (const float *)j->in[0]->data + off[0], *b = (const float *)j->in[1]->data + off[1];
	float *y = (float *)j->out->data + o;
	for (size_t i = 0; i < n; i++)
		y[i] = j->bop->f(a[(int64_t)i * sa], b[(int64_t)i * sb], &j->par);
}

static void row_bin_f64(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	int64_t sa = j->it.st[0][l], sb = j->it.st[1][l];
	const double *a = (const double *)j->in[0]->data + off[0], *b = (const double *)j->in[1]->data + off[1];
	double *y = (double *)j->out->data + o;
	for (size_t i = 0; i < n; i++)
		y[i] = j->bop->d(a[(int64_t)i * sa], b[(int64_t)i * sb], &j->par);
}

static void row_bin_conv_f(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sa = (uint64_t)j->it.st[0][l], sb = (uint64_t)j->it.st[1][l];
	for (size_t i = 0; i < n; i++) {
		float a = (float)wh_tensor_get_f64(j->in[0], off[0] + i * sa);
		float b = (float)wh_tensor_get_f64(j->in[1], off[1] + i * sb);
		wh_tensor_set_f64(j->out, o + i, j->bop->f(a, b, &j->par));
	}
}

static void row_bin_conv_d(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sa = (uint64_t)j->it.st[0][l], sb = (uint64_t)j->it.st[1][l];
	for (size_t i = 0; i < n; i++) {
		double a = wh_tensor_get_f64(j->in[0], off[0] + i * sa);
		double b = wh_tensor_get_f64(j->in[1], off[1] + i * sb);
		wh_tensor_set_f64(j->out, o + i, j->bop->d(a, b, &j->par));
	}
}

static void row_bin_int(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sa = (uint64_t)j->it.st[0][l], sb = (uint64_t)j->it.st[1][l];
	const struct wh_tensor *A = j->in[0], *B = j->in[1];
	for (size_t i = 0; i < n; i++) {
		uint64_t a = ld_int(A->dtype, A->data, off[0] + i * sa);
		uint64_t b = ld_int(B->dtype, B->data, off[1] + i * sb);
		st_int(j->out->dtype, j->out->data, o + i, j->bop->i(a, b, j->sgn, &j->par));
	}
}

/* out = a OP b, with a and b broadcast to out's (already allocated) shape; out may be a. */
/* last: this pass writes the node's final output (the output may be rounded as it goes) */
static void ew_binary_apply(struct wh_kernel_ctx *ctx, const struct ew_bin_def *op, const struct ew_par *par,
			    const struct wh_tensor *a, const struct wh_tensor *b, struct wh_tensor *out, bool last)
{
	struct ew_job j = {.in = {a, b}, .out = out, .bop = op};
	if (par)
		j.par = *par;
	size_t grain = EW_GRAIN_SLOW;
	enum ew_dom dom = dom_of(a->dtype);
	bool all_f32 = a->dtype == WH_DT_FLOAT && b->dtype == WH_DT_FLOAT && out->dtype == WH_DT_FLOAT;
	if (all_f32 && op->fast >= 0) {
		j.row = row_bin_fast;
		grain = EW_GRAIN_FAST;
	} else if (all_f32) {
		j.row = row_bin_f32;
	} else if (dom == DOM_F32) {
		j.row = row_bin_conv_f;
	} else if (dom == DOM_F64) {
		bool all_f64 = b->dtype == WH_DT_DOUBLE && out->dtype == WH_DT_DOUBLE;
		j.row = all_f64 ? row_bin_f64 : row_bin_conv_d;
	} else {
		j.sgn = dom == DOM_SINT;
		j.row = row_bin_int;
	}
	if (last)
		ew_round_output(ctx, &j);
	ew_run(ctx, &j, 2, grain);
}

/* Opset < 7 binary ops broadcast only with broadcast=1, B aligned at `axis` of A (or at
 * the end when axis is absent): B viewed with A's rank and ones elsewhere. */
static void legacy_view(struct wh_kernel_ctx *ctx, const struct wh_tensor *a, const struct wh_tensor *b,
			struct wh_tensor *view)
{
	*view = *b;
	if (ctx->opset >= 7 || !wh_node_attr_int(ctx->node, "broadcast", 0) || !wh_node_attr(ctx->node, "axis"))
		return;
	int64_t axis = wh_node_attr_int(ctx->node, "axis", 0);
	if (axis < 0)
		axis += a->rank;
	if (axis < 0 || axis + b->rank > a->rank)
		return; /* the broadcast check reports it */
	view->rank = a->rank;
	for (int32_t d = 0; d < a->rank; d++)
		view->dims[d] = (d >= axis && d < axis + b->rank) ? b->dims[d - axis] : 1;
}

static enum wh_status run_binary(struct wh_kernel_ctx *ctx, const struct ew_bin_def *op, const struct ew_par *par)
{
	const struct wh_tensor *a = NULL, *b = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &a)) != WH_OK || (st = need_input(ctx, 1, &b)) != WH_OK ||
	    (st = check_type(ctx, a, "input A", op->types)) != WH_OK)
		return st;
	if (a->dtype != b->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs have types %s and %s (cast them to one type)",
				      dt_name(a->dtype), dt_name(b->dtype));
	struct wh_tensor bv;
	legacy_view(ctx, a, b, &bv);
	const struct wh_tensor *ts[2] = {a, &bv};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims))
		return shape_mismatch(ctx, 2, ts);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_kernel_out_alloc(ctx, 0, op->out_bool ? WH_DT_BOOL : a->dtype, rank, dims)) != WH_OK)
		return st;
	ew_binary_apply(ctx, op, par, a, &bv, out, true);
	return WH_OK;
}

#define BIN_FD(NAME, EXPR)                                                                   \
	static float NAME##_f(float a, float b, const struct ew_par *p) { return (EXPR); }    \
	static double NAME##_d(double a, double b, const struct ew_par *p) { return (EXPR); }

BIN_FD(b_add, a + b)
BIN_FD(b_sub, a - b)
BIN_FD(b_mul, a * b)
BIN_FD(b_div, a / b)
BIN_FD(b_eq, a == b)
BIN_FD(b_lt, a < b)
BIN_FD(b_gt, a > b)
BIN_FD(b_le, a <= b)
BIN_FD(b_ge, a >= b)
BIN_FD(b_and, a != 0 && b != 0)
BIN_FD(b_or, a != 0 || b != 0)
BIN_FD(b_xor, (a != 0) != (b != 0))

static float b_max_fr(float a, float b, const struct ew_par *p) { return ref_max(a, b); }
static float b_min_fr(float a, float b, const struct ew_par *p) { return ref_min(a, b); }
static float b_prelu_fr(float a, float b, const struct ew_par *p) { return ref_prelu(a, b); }
static double b_max_d(double a, double b, const struct ew_par *p) { return a != a ? a : (a > b ? a : b); }
static double b_min_d(double a, double b, const struct ew_par *p) { return a != a ? a : (a < b ? a : b); }
static double b_prelu_d(double a, double b, const struct ew_par *p) { return a < 0 ? a * b : a; }

/* Mod: fmod=1 takes the dividend's sign (C fmod), fmod=0 the divisor's (Python %). */
static double b_mod_d(double a, double b, const struct ew_par *p)
{
	double r = fmod(a, b);
	if (!p->mode && r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}
static float b_mod_f(float a, float b, const struct ew_par *p)
{
	float r = fmodf(a, b);
	if (!p->mode && r != 0 && ((r < 0) != (b < 0)))
		r += b;
	return r;
}

static uint64_t bi_add(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a + b; }
static uint64_t bi_sub(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a - b; }
static uint64_t bi_mul(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a * b; }
/* Integer division truncates toward zero (C, and the ONNX reference's cast of the float
 * quotient); division by zero gives 0 rather than trapping. */
static uint64_t bi_div(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p)
{
	if (b == 0)
		return 0;
	if (!sgn)
		return a / b;
	if ((int64_t)b == -1)
		return 0 - a;
	return (uint64_t)((int64_t)a / (int64_t)b);
}
static uint64_t bi_mod(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p)
{
	if (b == 0)
		return 0;
	if (!sgn)
		return a % b;
	if ((int64_t)b == -1)
		return 0;
	int64_t r = (int64_t)a % (int64_t)b;
	if (!p->mode && r != 0 && ((r < 0) != ((int64_t)b < 0)))
		r += (int64_t)b;
	return (uint64_t)r;
}
static uint64_t bi_max(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return i_lt(a, b, sgn) ? b : a; }
static uint64_t bi_min(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return i_lt(b, a, sgn) ? b : a; }
static uint64_t bi_prelu(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return i_neg(a, sgn) ? a * b : a; }
static uint64_t bi_eq(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a == b; }
static uint64_t bi_lt(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return i_lt(a, b, sgn); }
static uint64_t bi_gt(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return i_lt(b, a, sgn); }
static uint64_t bi_le(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return !i_lt(b, a, sgn); }
static uint64_t bi_ge(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return !i_lt(a, b, sgn); }
static uint64_t bi_and(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a && b; }
static uint64_t bi_or(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a || b; }
static uint64_t bi_xor(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return !a != !b; }
static uint64_t bi_band(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a & b; }
static uint64_t bi_bor(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a | b; }
static uint64_t bi_bxor(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p) { return a ^ b; }
/* BitShift: shifting by the type's width or more gives 0 (the bits are shifted out); the
 * store truncates left shifts to the type. */
static uint64_t bi_shift(uint64_t a, uint64_t b, bool sgn, const struct ew_par *p)
{
	if (b >= 64)
		return 0;
	return p->mode ? a >> b : a << b;
}

static const struct ew_bin_def BIN_ADD = {T_NUM, WH_EW_ADD, false, b_add_f, b_add_d, bi_add};
static const struct ew_bin_def BIN_SUB = {T_NUM, WH_EW_SUB, false, b_sub_f, b_sub_d, bi_sub};
static const struct ew_bin_def BIN_MUL = {T_NUM, WH_EW_MUL, false, b_mul_f, b_mul_d, bi_mul};
static const struct ew_bin_def BIN_DIV = {T_NUM, WH_EW_DIV, false, b_div_f, b_div_d, bi_div};
static const struct ew_bin_def BIN_MAX = {T_NUM, WH_EW_MAX, false, b_max_fr, b_max_d, bi_max};
static const struct ew_bin_def BIN_MIN = {T_NUM, WH_EW_MIN, false, b_min_fr, b_min_d, bi_min};
static const struct ew_bin_def BIN_PRELU = {T_NUM, WH_EW_PRELU, false, b_prelu_fr, b_prelu_d, bi_prelu};
static const struct ew_bin_def BIN_MOD = {T_NUM, -1, false, b_mod_f, b_mod_d, bi_mod};
static const struct ew_bin_def BIN_EQ = {T_NUM | T_BOOL, -1, true, b_eq_f, b_eq_d, bi_eq};
static const struct ew_bin_def BIN_LT = {T_NUM | T_BOOL, -1, true, b_lt_f, b_lt_d, bi_lt};
static const struct ew_bin_def BIN_GT = {T_NUM | T_BOOL, -1, true, b_gt_f, b_gt_d, bi_gt};
static const struct ew_bin_def BIN_LE = {T_NUM | T_BOOL, -1, true, b_le_f, b_le_d, bi_le};
static const struct ew_bin_def BIN_GE = {T_NUM | T_BOOL, -1, true, b_ge_f, b_ge_d, bi_ge};
static const struct ew_bin_def BIN_AND = {T_BOOL, -1, true, b_and_f, b_and_d, bi_and};
static const struct ew_bin_def BIN_OR = {T_BOOL, -1, true, b_or_f, b_or_d, bi_or};
static const struct ew_bin_def BIN_XOR = {T_BOOL, -1, true, b_xor_f, b_xor_d, bi_xor};
static const struct ew_bin_def BIN_BAND = {T_INT | T_BOOL, -1, false, NULL, NULL, bi_band};
static const struct ew_bin_def BIN_BOR = {T_INT | T_BOOL, -1, false, NULL, NULL, bi_bor};
static const struct ew_bin_def BIN_BXOR = {T_INT | T_BOOL, -1, false, NULL, NULL, bi_bxor};
static const struct ew_bin_def BIN_SHIFT = {T_INT, -1, false, NULL, NULL, bi_shift};

#define BINARY_OP(FN, DEF) \
	static enum wh_status FN(struct wh_kernel_ctx *ctx) { return run_binary(ctx, &DEF, NULL); }

BINARY_OP(op_add, BIN_ADD)
BINARY_OP(op_sub, BIN_SUB)
BINARY_OP(op_mul, BIN_MUL)
BINARY_OP(op_div, BIN_DIV)
BINARY_OP(op_less, BIN_LT)
BINARY_OP(op_greater, BIN_GT)
BINARY_OP(op_less_equal, BIN_LE)
BINARY_OP(op_greater_equal, BIN_GE)
BINARY_OP(op_and, BIN_AND)
BINARY_OP(op_or, BIN_OR)
BINARY_OP(op_xor, BIN_XOR)
BINARY_OP(op_bitwise_and, BIN_BAND)
BINARY_OP(op_bitwise_or, BIN_BOR)
BINARY_OP(op_bitwise_xor, BIN_BXOR)

static enum wh_status op_mod(struct wh_kernel_ctx *ctx)
{
	struct ew_par p = {.mode = wh_node_attr_int(ctx->node, "fmod", 0) != 0};
	return run_binary(ctx, &BIN_MOD, &p);
}

static enum wh_status op_bit_shift(struct wh_kernel_ctx *ctx)
{
	char buf[16];
	const char *d = wh_node_attr_string(ctx->node, "direction", "", buf, sizeof buf);
	struct ew_par p = {0};
	if (!strcmp(d, "RIGHT"))
		p.mode = 1;
	else if (strcmp(d, "LEFT"))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "direction is '%s' (use LEFT or RIGHT)", d);
	return run_binary(ctx, &BIN_SHIFT, &p);
}

/* Equal also compares strings (opset 19). */
static void row_eq_str(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sa = (uint64_t)j->it.st[0][l], sb = (uint64_t)j->it.st[1][l];
	const char *const *a = j->in[0]->data, *const *b = j->in[1]->data;
	uint8_t *y = j->out->data;
	for (size_t i = 0; i < n; i++) {
		const char *x = a[off[0] + i * sa], *z = b[off[1] + i * sb];
		y[o + i] = !strcmp(x ? x : "", z ? z : "");
	}
}

static enum wh_status op_equal(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *a = NULL, *b = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &a)) != WH_OK || (st = need_input(ctx, 1, &b)) != WH_OK)
		return st;
	if (a->dtype != WH_DT_STRING || b->dtype != WH_DT_STRING)
		return run_binary(ctx, &BIN_EQ, NULL);
	const struct wh_tensor *ts[2] = {a, b};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims))
		return shape_mismatch(ctx, 2, ts);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, WH_DT_BOOL, rank, dims)) != WH_OK)
		return st;
	struct ew_job j = {.in = {a, b}, .out = out, .row = row_eq_str};
	ew_run(ctx, &j, 2, EW_GRAIN_SLOW);
	return WH_OK;
}

/* PRelu: slope broadcasts to X's shape (opset 7+); PRelu-1/6 took a per-channel slope of
 * shape [C] for X of shape [N, C, ...]. */
static enum wh_status op_prelu(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = NULL, *s = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &x)) != WH_OK || (st = need_input(ctx, 1, &s)) != WH_OK ||
	    (st = check_type(ctx, x, "input X", T_NUM)) != WH_OK)
		return st;
	if (x->dtype != s->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "X has type %s, slope %s (use one type)",
				      dt_name(x->dtype), dt_name(s->dtype));
	struct wh_tensor sv = *s;
	if (ctx->opset < 7 && s->rank == 1 && x->rank >= 2 && s->dims[0] == x->dims[1] && s->dims[0] != 1) {
		sv.rank = x->rank - 1;
		for (int32_t d = 1; d < sv.rank; d++)
			sv.dims[d] = 1;
	}
	const struct wh_tensor *ts[2] = {x, &sv};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims) || rank != x->rank ||
	    memcmp(dims, x->dims, sizeof(int64_t) * (size_t)rank))
		return shape_mismatch(ctx, 2, ts);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, x->dtype, x->rank, x->dims)) != WH_OK)
		return st;
	ew_binary_apply(ctx, &BIN_PRELU, NULL, x, &sv, out, true);
	return WH_OK;
}

/* ---- Pow: base and exponent may have different types; the result has the base's ---- */

static uint64_t ipow(uint64_t base, uint64_t e, bool e_neg, bool sgn)
{
	if (e_neg) {
		/* 1 / base^e truncated: only +-1 survive */
		if (base == 1)
			return 1;
		if (sgn && (int64_t)base == -1)
			return (e & 1) ? base : 1;
		return 0;
	}
	uint64_t r = 1;
	while (e) {
		if (e & 1)
			r *= base;
		base *= base;
		e >>= 1;
	}
	return r;
}

static void row_pow(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sa = (uint64_t)j->it.st[0][l], sb = (uint64_t)j->it.st[1][l];
	const struct wh_tensor *A = j->in[0], *B = j->in[1];
	enum ew_dom da = dom_of(A->dtype), db = dom_of(B->dtype);
	if (A->dtype == WH_DT_FLOAT && B->dtype == WH_DT_FLOAT) {
		const float *a = (const float *)A->data + off[0], *b = (const float *)B->data + off[1];
		float *y = (float *)j->out->data + o;
		for (size_t i = 0; i < n; i++) {
			/* squares and cubes as products, as ONNX Runtime computes them (GELU's x^3:
			 * powf is ~20x slower than two multiplies) */
			float e = b[i * sb], x = a[i * sa];
			y[i] = e == 2.0f ? x * x : e == 3.0f ? x * x * x : powf(x, e);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t ia = off[0] + i * sa, ib = off[1] + i * sb;
		if ((da == DOM_SINT || da == DOM_UINT) && (db == DOM_SINT || db == DOM_UINT)) {
			uint64_t e = ld_int(B->dtype, B->data, ib);
			bool neg = db == DOM_SINT && (int64_t)e < 0;
			uint64_t r = ipow(ld_int(A->dtype, A->data, ia), neg ? 0 - e : e, neg, da == DOM_SINT);
			st_int(j->out->dtype, j->out->data, o + i, r);
		} else if (da == DOM_F32 && db == DOM_F32) {
			float r = powf((float)wh_tensor_get_f64(A, ia), (float)wh_tensor_get_f64(B, ib));
			wh_tensor_set_f64(j->out, o + i, r);
		} else {
			wh_tensor_set_f64(j->out, o + i, pow(wh_tensor_get_f64(A, ia), wh_tensor_get_f64(B, ib)));
		}
	}
}

static enum wh_status op_pow(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *a = NULL, *b = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &a)) != WH_OK || (st = need_input(ctx, 1, &b)) != WH_OK ||
	    (st = check_type(ctx, a, "input X", T_NUM)) != WH_OK || (st = check_type(ctx, b, "input Y", T_NUM)) != WH_OK)
		return st;
	struct wh_tensor bv;
	legacy_view(ctx, a, b, &bv);
	const struct wh_tensor *ts[2] = {a, &bv};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims))
		return shape_mismatch(ctx, 2, ts);
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, a->dtype, rank, dims)) != WH_OK)
		return st;
	struct ew_job j = {.in = {a, &bv}, .out = out, .row = row_pow};
	ew_run(ctx, &j, 2, EW_GRAIN_SLOW);
	return WH_OK;
}

/* ---- variadic: Sum, Mean, Max, Min ---- */

static enum wh_status run_variadic(struct wh_kernel_ctx *ctx, const struct ew_bin_def *op, bool mean)
{
	uint32_t n = ctx->n_inputs;
	enum wh_status st;
	if (n == 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "no inputs (the op needs at least one)");
	const struct wh_tensor *first = NULL;
	if ((st = need_input(ctx, 0, &first)) != WH_OK || (st = check_type(ctx, first, "input 0", mean ? T_FLT : op->types)) != WH_OK)
		return st;
	for (uint32_t i = 1; i < n; i++) {
		const struct wh_tensor *t = NULL;
		if ((st = need_input(ctx, i, &t)) != WH_OK)
			return st;
		if (t->dtype != first->dtype)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %u has type %s, input 0 %s (use one type)", i,
					      dt_name(t->dtype), dt_name(first->dtype));
	}
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(n, ctx->inputs, &rank, dims))
		return shape_mismatch(ctx, n, ctx->inputs);
	struct wh_tensor *out = &ctx->outputs[0];
	if (n == 1) {
		wh_tensor_ref(out, first);
		return WH_OK;
	}
	if ((st = wh_tensor_alloc(out, first->dtype, rank, dims)) != WH_OK)
		return st;
	ew_binary_apply(ctx, op, NULL, ctx->inputs[0], ctx->inputs[1], out, false);
	for (uint32_t i = 2; i < n; i++)
		ew_binary_apply(ctx, op, NULL, out, ctx->inputs[i], out, false);
	if (mean) {
		struct wh_tensor cnt;
		wh_tensor_init(&cnt);
		int64_t none[1] = {1};
		if ((st = wh_tensor_alloc(&cnt, out->dtype, 0, none)) != WH_OK)
			return st;
		wh_tensor_set_f64(&cnt, 0, (double)n);
		ew_binary_apply(ctx, &BIN_DIV, NULL, out, &cnt, out, false);
		wh_tensor_release(&cnt);
	}
	return WH_OK;
}

static enum wh_status op_sum(struct wh_kernel_ctx *ctx) { return run_variadic(ctx, &BIN_ADD, false); }
static enum wh_status op_mean(struct wh_kernel_ctx *ctx) { return run_variadic(ctx, &BIN_ADD, true); }
static enum wh_status op_max(struct wh_kernel_ctx *ctx) { return run_variadic(ctx, &BIN_MAX, false); }
static enum wh_status op_min(struct wh_kernel_ctx *ctx) { return run_variadic(ctx, &BIN_MIN, false); }

/* ---- Where ---- */

static void row_where(const struct ew_job *j, const uint64_t *off, uint64_t o, size_t n)
{
	int32_t l = j->it.rank - 1;
	uint64_t sc = (uint64_t)j->it.st[0][l], sx = (uint64_t)j->it.st[1][l], sy = (uint64_t)j->it.st[2][l];
	const struct wh_tensor *C = j->in[0];
	const unsigned char *x = j->in[1]->data, *y = j->in[2]->data;
	unsigned char *out = j->out->data;
	for (size_t i = 0; i < n; i++) {
		bool c = ld_int(C->dtype, C->data, off[0] + i * sc) != 0;
		const unsigned char *src = c ? x + (off[1] + i * sx) * j->esz : y + (off[2] + i * sy) * j->esz;
		unsigned char *dst = out + (o + i) * j->esz;
		switch (j->esz) {
		case 1: *dst = *src; break;
		case 2: memcpy(dst, src, 2); break;
		case 4: memcpy(dst, src, 4); break;
		case 8: memcpy(dst, src, 8); break;
		default: memcpy(dst, src, j->esz); break;
		}
	}
}

static enum wh_status op_where(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *c = NULL, *x = NULL, *y = NULL;
	enum wh_status st;
	if ((st = need_input(ctx, 0, &c)) != WH_OK || (st = need_input(ctx, 1, &x)) != WH_OK ||
	    (st = need_input(ctx, 2, &y)) != WH_OK || (st = check_type(ctx, c, "condition", T_BOOL | T_INT)) != WH_OK)
		return st;
	if (x->dtype != y->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "X has type %s, Y %s (use one type)", dt_name(x->dtype),
				      dt_name(y->dtype));
	const struct wh_tensor *ts[3] = {c, x, y};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(3, ts, &rank, dims))
		return shape_mismatch(ctx, 3, ts);
	struct wh_tensor *out = &ctx->outputs[0];
	if (x->dtype != WH_DT_STRING) {
		if ((st = wh_tensor_alloc(out, x->dtype, rank, dims)) != WH_OK)
			return st;
		struct ew_job j = {.in = {c, x, y}, .out = out, .row = row_where, .esz = wh_dtype_size(x->dtype)};
		ew_run(ctx, &j, 3, EW_GRAIN_SLOW);
		return WH_OK;
	}
	_Static_assert(sizeof(char *) <= sizeof(int64_t), "string pointers fit an int64 tensor");
	/* strings: pick the pointers through a pointer-sized Where, then copy the strings */
	struct wh_tensor idx;
	wh_tensor_init(&idx);
	const char **ptrs = NULL;
	size_t *lens = NULL;
	if ((st = wh_tensor_alloc(&idx, WH_DT_INT64, rank, dims)) != WH_OK)
		goto out;
	struct ew_job j = {.in = {c, x, y}, .out = &idx, .row = row_where, .esz = sizeof(char *)};
	ew_run(ctx, &j, 3, EW_GRAIN_SLOW);
	size_t cnt = (size_t)idx.count;
	ptrs = calloc(cnt ? cnt : 1, sizeof *ptrs);
	lens = calloc(cnt ? cnt : 1, sizeof *lens);
	if (!ptrs || !lens) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for %zu strings (free memory)", cnt);
		goto out;
	}
	memcpy(ptrs, idx.data, cnt * sizeof *ptrs);
	for (size_t i = 0; i < cnt; i++) {
		if (!ptrs[i])
			ptrs[i] = "";
		lens[i] = strlen(ptrs[i]);
	}
	st = wh_tensor_alloc_strings(out, rank, dims, ptrs, lens);
out:
	free(ptrs);
	free(lens);
	wh_tensor_release(&idx);
	return st;
}

const struct wh_op_def wh_ops_elementwise[] = {
	{"", "Abs", 1, op_abs},
	{"", "Neg", 1, op_neg},
	{"", "Exp", 1, op_exp},
	{"", "Log", 1, op_log},
	{"", "Sqrt", 1, op_sqrt},
	{"", "Reciprocal", 1, op_reciprocal},
	{"", "Floor", 1, op_floor},
	{"", "Ceil", 1, op_ceil},
	{"", "Round", 11, op_round},
	{"", "Sign", 9, op_sign},
	{"", "Sin", 7, op_sin},
	{"", "Cos", 7, op_cos},
	{"", "Tan", 7, op_tan},
	{"", "Asin", 7, op_asin},
	{"", "Acos", 7, op_acos},
	{"", "Atan", 7, op_atan},
	{"", "Sinh", 9, op_sinh},
	{"", "Cosh", 9, op_cosh},
	{"", "Asinh", 9, op_asinh},
	{"", "Acosh", 9, op_acosh},
	{"", "Atanh", 9, op_atanh},
	{"", "Erf", 9, op_erf},
	{"", "IsNaN", 9, op_isnan},
	{"", "IsInf", 10, op_isinf},
	{"", "Not", 1, op_not},
	{"", "BitwiseNot", 18, op_bitwise_not},
	{"", "Add", 1, op_add},
	{"", "Sub", 1, op_sub},
	{"", "Mul", 1, op_mul},
	{"", "Div", 1, op_div},
	{"", "Pow", 1, op_pow},
	{"", "Mod", 10, op_mod},
	{"", "Max", 1, op_max},
	{"", "Min", 1, op_min},
	{"", "Sum", 1, op_sum},
	{"", "Mean", 1, op_mean},
	{"", "And", 1, op_and},
	{"", "Or", 1, op_or},
	{"", "Xor", 1, op_xor},
	{"", "Equal", 1, op_equal},
	{"", "Less", 1, op_less},
	{"", "Greater", 1, op_greater},
	{"", "LessOrEqual", 12, op_less_equal},
	{"", "GreaterOrEqual", 12, op_greater_equal},
	{"", "BitShift", 11, op_bit_shift},
	{"", "BitwiseAnd", 18, op_bitwise_and},
	{"", "BitwiseOr", 18, op_bitwise_or},
	{"", "BitwiseXor", 18, op_bitwise_xor},
	{"", "Where", 9, op_where},
	{"", "Relu", 1, op_relu},
	{"", "LeakyRelu", 1, op_leaky_relu},
	{"", "PRelu", 1, op_prelu},
	{"", "Elu", 1, op_elu},
	{"", "Selu", 1, op_selu},
	{"", "Celu", 12, op_celu},
	{"", "Sigmoid", 1, op_sigmoid},
	{"", "HardSigmoid", 1, op_hard_sigmoid},
	{"", "HardSwish", 14, op_hard_swish},
	{"", "Softplus", 1, op_softplus},
	{"", "Softsign", 1, op_softsign},
	{"", "Tanh", 1, op_tanh},
	{"", "ThresholdedRelu", 10, op_thresholded_relu},
	{"", "Gelu", 20, op_gelu},
	{"", "Mish", 18, op_mish},
	{"", "Swish", 24, op_swish},
	{"", "Clip", 1, op_clip},
	{"", "Shrink", 9, op_shrink},
};
const size_t wh_ops_elementwise_count = sizeof wh_ops_elementwise / sizeof wh_ops_elementwise[0];
