/* Type conversion and quantization: Cast, CastLike, QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear.
 *
 * Numerics. A conversion rounds once, to nearest even: a float32 source goes straight to
 * the target; a double or 64-bit integer source headed for a format narrower than float32
 * is first rounded to a float32 "to odd" (numfmt-bulk.h), which makes the second rounding
 * exact. float8 overflow follows the saturate attribute (numfmt.c has the table), e2m1
 * always saturates, e8m0 follows round_mode. Floats to integers truncate toward zero,
 * integers to narrower integers wrap, as ONNX's own tests expect (e.g. -3.0 to int2 is 1).
 * Quantization divides in the scale's precision (float32 arithmetic rounded to fp16/bf16 for
 * those scales, or the `precision` attribute's type), rounds half to even, adds the zero
 * point and clamps to the output type: the ONNX reference's order. */
#include <ctype.h>
#include <emmintrin.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "executor/kernel.h"
#include "executor/numfmt-bulk.h"
#include "executor/numfmt.h"
#include "executor/ops/cast-internal.h"
#include "executor/ops/qgemm-internal.h"

static bool is_narrow_float(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_FLOAT16: case WH_DT_BFLOAT16: case WH_DT_FLOAT8E4M3FN: case WH_DT_FLOAT8E4M3FNUZ:
	case WH_DT_FLOAT8E5M2: case WH_DT_FLOAT8E5M2FNUZ: case WH_DT_FLOAT4E2M1: case WH_DT_FLOAT8E8M0:
		return true;
	default:
		return false;
	}
}

/* Types Cast converts from and to. */
static bool castable(enum wh_dtype dt)
{
	return wh_dtype_valid((int)dt) && dt != WH_DT_COMPLEX64 && dt != WH_DT_COMPLEX128;
}

/* ---- elements ---- */

/* One source element in the forms the targets need. */
struct elem {
	bool is_int;      /* u holds the exact value (two's complement for signed types) */
	uint64_t u;
	double d;         /* the value; nearest double for 64-bit integers */
	float f;          /* nearest float32 */
	float fo;         /* float32 rounded to odd, for targets narrower than float32 */
};

static void read_elem(const struct wh_tensor *t, uint64_t k, bool need_odd, struct elem *e)
{
	const void *p = t->data;

	e->is_int = false;
	switch (t->dtype) {
	case WH_DT_FLOAT:
		e->f = e->fo = ((const float *)p)[k];
		e->d = e->f;
		return;
	case WH_DT_DOUBLE:
		e->d = ((const double *)p)[k];
		e->f = (float)e->d;
		e->fo = need_odd ? wh_f64_to_f32_odd(e->d) : e->f;
		return;
	case WH_DT_UINT64:
		e->is_int = true;
		e->u = ((const uint64_t *)p)[k];
		e->d = (double)e->u;
		e->f = (float)e->u;
		e->fo = need_odd ? wh_u64_to_f32_odd(e->u) : e->f;
		return;
	default:
		if (is_narrow_float(t->dtype)) {
			e->f = e->fo = (float)wh_tensor_get_f64(t, k); /* exact */
			e->d = e->f;
			return;
		}
		/* the other integers and bool */
		int64_t v = wh_tensor_get_i64(t, k);
		e->is_int = true;
		e->u = (uint64_t)v;
		e->d = (double)v;
		e->f = (float)v;
		e->fo = need_odd ? wh_i64_to_f32_odd(v) : e->f;
		return;
	}
}

static bool only_space(const char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	return *s == '\0';
}

/* A string element: integers exactly when the text is one, else as a decimal float
 * (strtod takes "inf", "+INF", "-Infinity", "NaN" in any case, and exponents). */
static void parse_elem(const char *s, bool need_odd, struct elem *e)
{
	char *end;

	if (!s)
		s = "";
	e->is_int = false;
	if (!strcasecmp(s, "true") || !strcasecmp(s, "false")) {
		e->is_int = true;
		e->u = s[0] == 't' || s[0] == 'T';
		e->d = e->f = e->fo = (float)e->u;
		return;
	}
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end != s && only_space(end) && errno == 0) {
		e->is_int = true;
		e->u = (uint64_t)v;
		e->d = (double)v;
		e->f = (float)v;
		e->fo = need_odd ? wh_i64_to_f32_odd(v) : e->f;
		return;
	}
	errno = 0;
	unsigned long long uv = strtoull(s, &end, 10);
	if (end != s && only_space(end) && errno == 0 && s[strspn(s, " \t\n")] != '-') {
		e->is_int = true;
		e->u = uv;
		e->d = (double)uv;
		e->f = (float)uv;
		e->fo = need_odd ? wh_u64_to_f32_odd(uv) : e->f;
		return;
	}
	e->d = strtod(s, &end);
	if (end == s)
		e->d = NAN; /* not a number: ONNX leaves it undefined */
	e->f = end == s ? NAN : strtof(s, NULL);
	e->fo = need_odd ? wh_f64_to_f32_odd(e->d) : e->f;
}

/* float -> integer: truncation toward zero; NaN gives 0 and out-of-range values clamp to
 * the 64-bit range (ONNX leaves both undefined; this avoids C's undefined behaviour). */
static uint64_t float_to_int_bits(double v, bool to_unsigned64)
{
	if (v != v)
		return 0;
	if (to_unsigned64 && v >= 0) {
		if (v >= 18446744073709551616.0)
			return UINT64_MAX;
		return (uint64_t)v;
	}
	if (v >= 9223372036854775808.0)
		return (uint64_t)INT64_MAX;
	if (v < -9223372036854775808.0)
		return (uint64_t)INT64_MIN;
	return (uint64_t)(int64_t)v;
}

static void put_elem(struct wh_tensor *t, uint64_t k, const struct elem *e, const struct wh_cast_opts *o)
{
	void *p = t->data;
	uint64_t w = 0;

	switch (t->dtype) {
	case WH_DT_FLOAT: ((float *)p)[k] = e->f; return;
	case WH_DT_DOUBLE: ((double *)p)[k] = e->d; return;
	case WH_DT_FLOAT16: ((uint16_t *)p)[k] = wh_f32_to_f16(e->fo); return;
	case WH_DT_BFLOAT16: ((uint16_t *)p)[k] = wh_f32_to_bf16(e->fo); return;
	case WH_DT_FLOAT8E4M3FN: ((uint8_t *)p)[k] = wh_f32_to_e4m3fn(e->fo, o->saturate); return;
	case WH_DT_FLOAT8E4M3FNUZ: ((uint8_t *)p)[k] = wh_f32_to_e4m3fnuz(e->fo, o->saturate); return;
	case WH_DT_FLOAT8E5M2: ((uint8_t *)p)[k] = wh_f32_to_e5m2(e->fo, o->saturate); return;
	case WH_DT_FLOAT8E5M2FNUZ: ((uint8_t *)p)[k] = wh_f32_to_e5m2fnuz(e->fo, o->saturate); return;
	case WH_DT_FLOAT4E2M1: ((uint8_t *)p)[k] = wh_f32_to_e2m1(e->fo, true); return;
	/* ONNX's reference converts to float32 first and applies round_mode to that */
	case WH_DT_FLOAT8E8M0: ((uint8_t *)p)[k] = wh_f32_to_e8m0_mode(e->f, o->saturate, o->round_mode); return;
	case WH_DT_BOOL: ((uint8_t *)p)[k] = e->is_int ? e->u != 0 : e->d != 0; return;
	default: break;
	}
	w = e->is_int ? e->u : float_to_int_bits(e->d, t->dtype == WH_DT_UINT64);
	switch (t->dtype) {
	case WH_DT_INT64: case WH_DT_UINT64: ((uint64_t *)p)[k] = w; break;
	case WH_DT_INT32: case WH_DT_UINT32: ((uint32_t *)p)[k] = (uint32_t)w; break;
	case WH_DT_INT16: case WH_DT_UINT16: ((uint16_t *)p)[k] = (uint16_t)w; break;
	case WH_DT_INT8: case WH_DT_UINT8: ((uint8_t *)p)[k] = (uint8_t)w; break;
	/* sub-byte integers: one per byte in memory, the signed ones sign-extended */
	case WH_DT_INT4: ((int8_t *)p)[k] = (int8_t)((w & 8) ? (int)(w & 0xF) - 16 : (int)(w & 0xF)); break;
	case WH_DT_UINT4: ((uint8_t *)p)[k] = (uint8_t)(w & 0xF); break;
	case WH_DT_INT2: ((int8_t *)p)[k] = (int8_t)((w & 2) ? (int)(w & 3) - 4 : (int)(w & 3)); break;
	case WH_DT_UINT2: ((uint8_t *)p)[k] = (uint8_t)(w & 3); break;
	default: break;
	}
}

/* ---- numbers as text ---- */

/* Shortest digits that read back to v (as a float32 when single), laid out as Python and
 * numpy print them: positional for 1e-4 <= |v| < 1e16 ("0.1", "3.0"), else "1e+16". */
static void format_real(double v, bool single, char *buf, size_t size)
{
	char tmp[64];
	int prec;

	if (v != v) {
		snprintf(buf, size, "nan");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, size, v < 0 ? "-inf" : "inf");
		return;
	}
	if (v == 0) {
		snprintf(buf, size, signbit(v) ? "-0.0" : "0.0");
		return;
	}
	for (prec = 1; prec < 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
		if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(tmp, sizeof tmp, "%.16e", v);
	/* tmp is "-d.ddde+XX": collect the digits and the exponent */
	char digits[32];
	int nd = 0, exp10;
	const char *q = tmp;
	bool neg = *q == '-';
	if (neg)
		q++;
	for (; *q && *q != 'e'; q++)
		if (isdigit((unsigned char)*q) && nd < 31)
			digits[nd++] = *q;
	digits[nd] = '\0';
	exp10 = *q == 'e' ? atoi(q + 1) : 0;
	while (nd > 1 && digits[nd - 1] == '0')
		digits[--nd] = '\0';

	char out[64];
	size_t o = 0;
	if (neg)
		out[o++] = '-';
	if (exp10 < -4 || exp10 >= 16) {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			for (int i = 1; i < nd; i++)
				out[o++] = digits[i];
		}
		snprintf(out + o, sizeof out - o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
	} else if (exp10 < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -exp10 - 1; i++)
			out[o++] = '0';
		for (int i = 0; i < nd; i++)
			out[o++] = digits[i];
		out[o] = '\0';
	} else {
		for (int i = 0; i <= exp10 || i < nd; i++) {
			if (i == exp10 + 1)
				out[o++] = '.';
			out[o++] = i < nd ? digits[i] : '0';
		}
		if (nd <= exp10 + 1) {
			out[o++] = '.';
			out[o++] = '0';
		}
		out[o] = '\0';
	}
	snprintf(buf, size, "%s", out);
}

const char *wh_cast_format(const struct wh_tensor *t, uint64_t i, char *buf, size_t size)
{
	switch (t->dtype) {
	case WH_DT_BOOL:
		snprintf(buf, size, "%s", ((const uint8_t *)t->data)[i] ? "True" : "False");
		break;
	case WH_DT_UINT64:
		snprintf(buf, size, "%llu", (unsigned long long)((const uint64_t *)t->data)[i]);
		break;
	case WH_DT_DOUBLE:
		format_real(((const double *)t->data)[i], false, buf, size);
		break;
	case WH_DT_STRING: {
		const char *s = ((const char *const *)t->data)[i];
		snprintf(buf, size, "%s", s ? s : "");
		break;
	}
	default:
		if (wh_dtype_is_float(t->dtype))
			format_real(wh_tensor_get_f64(t, i), true, buf, size);
		else
			snprintf(buf, size, "%lld", (long long)wh_tensor_get_i64(t, i));
		break;
	}
	return buf;
}

/* ---- whole tensors ---- */

struct cast_job {
	const struct wh_tensor *src;
	struct wh_tensor *out;
	const struct wh_cast_opts *opts;
	const struct wh_cpu_features *cpu;
};

static void cast_chunk_generic(void *arg, size_t begin, size_t end)
{
	const struct cast_job *j = arg;
	bool need_odd = is_narrow_float(j->out->dtype);
	struct elem e;

	if (j->src->dtype == WH_DT_STRING) {
		const char *const *s = j->src->data;
		for (size_t k = begin; k < end; k++) {
			parse_elem(s[k], need_odd, &e);
			put_elem(j->out, k, &e, j->opts);
		}
		return;
	}
	for (size_t k = begin; k < end; k++) {
		read_elem(j->src, k, need_odd, &e);
		put_elem(j->out, k, &e, j->opts);
	}
}

/* The hot pairs in models: bulk converters (SIMD where the CPU has them). */
static void cast_chunk_fast(void *arg, size_t begin, size_t end)
{
	const struct cast_job *j = arg;
	const void *s = j->src->data;
	void *d = j->out->data;
	size_t n = end - begin;

	switch (j->src->dtype * 100 + j->out->dtype) {
	case WH_DT_FLOAT * 100 + WH_DT_FLOAT16:
		wh_f32_to_f16_n((const float *)s + begin, (uint16_t *)d + begin, n, j->cpu);
		break;
	case WH_DT_FLOAT16 * 100 + WH_DT_FLOAT:
		wh_f16_to_f32_n((const uint16_t *)s + begin, (float *)d + begin, n, j->cpu);
		break;
	case WH_DT_FLOAT * 100 + WH_DT_BFLOAT16:
		wh_f32_to_bf16_n((const float *)s + begin, (uint16_t *)d + begin, n, j->cpu);
		break;
	case WH_DT_BFLOAT16 * 100 + WH_DT_FLOAT:
		wh_bf16_to_f32_n((const uint16_t *)s + begin, (float *)d + begin, n);
		break;
	case WH_DT_FLOAT * 100 + WH_DT_DOUBLE:
		for (size_t k = begin; k < end; k++)
			((double *)d)[k] = ((const float *)s)[k];
		break;
	case WH_DT_DOUBLE * 100 + WH_DT_FLOAT:
		for (size_t k = begin; k < end; k++)
			((float *)d)[k] = (float)((const double *)s)[k];
		break;
	case WH_DT_INT64 * 100 + WH_DT_INT32:
		for (size_t k = begin; k < end; k++)
			((int32_t *)d)[k] = (int32_t)(uint32_t)((const int64_t *)s)[k];
		break;
	case WH_DT_INT32 * 100 + WH_DT_INT64:
		for (size_t k = begin; k < end; k++)
			((int64_t *)d)[k] = ((const int32_t *)s)[k];
		break;
	case WH_DT_INT64 * 100 + WH_DT_FLOAT:
		for (size_t k = begin; k < end; k++)
			((float *)d)[k] = (float)((const int64_t *)s)[k];
		break;
	case WH_DT_INT32 * 100 + WH_DT_FLOAT: {
		/* the Cast after ConvInteger / MatMulInteger in dynamically quantized models:
		 * cvtdq2ps (SSE2, every x86-64) rounds to nearest even as the C conversion does */
		size_t k = begin;
		for (; k + 4 <= end; k += 4)
			_mm_storeu_ps((float *)d + k, _mm_cvtepi32_ps(_mm_loadu_si128((const __m128i *)((const int32_t *)s + k))));
		for (; k < end; k++)
			((float *)d)[k] = (float)((const int32_t *)s)[k];
		break;
	}
	default:
		cast_chunk_generic(arg, begin, end);
		break;
	}
}

static enum wh_status cast_to_strings(const struct wh_tensor *src, struct wh_tensor *out)
{
	enum { SLOT = 48 };
	enum wh_status st = WH_OK;
	uint64_t bytes;
	char *text = NULL;
	const char **ptrs = NULL;
	size_t *lens = NULL;
	uint64_t n = src->count;

	if (!wh_mul_u64(n, SLOT, &bytes) || bytes > SIZE_MAX)
		return wh_error(WH_ERR_OVERFLOW, "cast: %llu strings are too many (use a smaller tensor)",
				(unsigned long long)n);
	text = malloc(bytes ? (size_t)bytes : 1);
	ptrs = malloc(n ? (size_t)n * sizeof *ptrs : 1);
	lens = malloc(n ? (size_t)n * sizeof *lens : 1);
	if (!text || !ptrs || !lens) {
		st = wh_error(WH_ERR_NOMEM, "cast: out of memory for %llu strings", (unsigned long long)n);
		goto out;
	}
	for (uint64_t i = 0; i < n; i++) {
		char *slot = text + i * SLOT;
		wh_cast_format(src, i, slot, SLOT);
		ptrs[i] = slot;
		lens[i] = strlen(slot);
	}
	st = wh_tensor_alloc_strings(out, src->rank, src->dims, ptrs, lens);
out:
	free(text);
	free(ptrs);
	free(lens);
	return st;
}

enum wh_status wh_cast_tensor(const struct wh_tensor *src, enum wh_dtype to, const struct wh_cast_opts *opts,
			      const struct wh_cpu_features *cpu, struct wh_threadpool *pool, struct wh_tensor *out)
{
	enum wh_status st;

	if (!castable(src->dtype) || !castable(to))
		return wh_error(WH_ERR_UNSUPPORTED, "cast: %s to %s is not supported (only real and string types)",
				wh_dtype_name(src->dtype), wh_dtype_name(to));
	if (src->dtype == to) {
		wh_tensor_ref(out, src);
		return WH_OK;
	}
	if (to == WH_DT_STRING)
		return cast_to_strings(src, out);
	if ((st = wh_tensor_alloc(out, to, src->rank, src->dims)) != WH_OK)
		return st;
	struct cast_job job = {src, out, opts, cpu};
	wh_parallel_for(pool, (size_t)src->count, WH_CHUNK_ELEMS, cast_chunk_fast, &job);
	return WH_OK;
}

/* ---- Cast, CastLike ---- */

static enum wh_status read_cast_opts(struct wh_kernel_ctx *ctx, struct wh_cast_opts *o)
{
	char buf[32];
	const char *mode;

	o->saturate = wh_node_attr_int(ctx->node, "saturate", 1) != 0;
	mode = wh_node_attr_string(ctx->node, "round_mode", "up", buf, sizeof buf);
	if (!strcmp(mode, "up"))
		o->round_mode = WH_E8M0_ROUND_UP;
	else if (!strcmp(mode, "nearest"))
		o->round_mode = WH_E8M0_ROUND_NEAREST;
	else if (!strcmp(mode, "down"))
		o->round_mode = WH_E8M0_ROUND_DOWN;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "round_mode '%s' is not one of up, nearest, down", mode);
	return WH_OK;
}

static enum wh_status run_cast(struct wh_kernel_ctx *ctx, const struct wh_tensor *x, enum wh_dtype to)
{
	struct wh_cast_opts o;
	enum wh_status st;

	if (!castable(x->dtype) || !castable(to))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "cast from %s to %s is not supported (complex types)",
				      wh_dtype_name(x->dtype), wh_dtype_name(to));
	if ((st = read_cast_opts(ctx, &o)) != WH_OK)
		return st;
	return wh_cast_tensor(x, to, &o, ctx->cpu, ctx->pool, &ctx->outputs[0]);
}

static enum wh_status cast_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	const struct wh_attr *a = wh_node_attr(ctx->node, "to");
	enum wh_dtype to;

	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	if (!a)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute 'to' is missing (give the target type)");
	if (a->type == WH_ATTR_STRING) {
		/* Cast-1 names the type ("FLOAT", "INT64") */
		char name[32];
		size_t n = a->s.len < sizeof name - 1 ? a->s.len : sizeof name - 1;
		for (size_t i = 0; i < n; i++)
			name[i] = (char)tolower(a->s.data[i]);
		name[n] = '\0';
		to = wh_dtype_from_name(name);
		if (to == WH_DT_UNDEFINED)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute 'to' names an unknown type '%s'", name);
	} else {
		if (!wh_dtype_valid((int)(a->i < 0 || a->i > 1000 ? 0 : a->i)))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute 'to' is %lld, not a tensor element type",
					      (long long)a->i);
		to = (enum wh_dtype)a->i;
	}
	return run_cast(ctx, x, to);
}

static enum wh_status castlike_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *like = wh_kin(ctx, 1);

	if (!x || !like)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "CastLike needs two inputs, input and target_type");
	return run_cast(ctx, x, like->dtype);
}

/* ---- quantization parameters ---- */

/* How scale and zero point map onto x: x is viewed as [outer, axis_len, inner]; the scale
 * is one value, one per index along the axis, or (blocked) one per block of block_size
 * indices along the axis for every outer and inner index. */
enum qmode { Q_TENSOR, Q_AXIS, Q_BLOCKED };

struct qlayout {
	enum qmode mode;
	uint64_t outer, axis_len, inner;
	int64_t block, n_blocks;
};

static enum wh_status q_layout(struct wh_kernel_ctx *ctx, const struct wh_tensor *x, const struct wh_tensor *scale,
			       const struct wh_tensor *zp, struct qlayout *l)
{
	char want[32], got[32];
	int64_t block = ctx->opset >= 21 ? wh_node_attr_int(ctx->node, "block_size", 0) : 0;
	int64_t axis_attr = wh_node_attr_int(ctx->node, "axis", 1);
	int32_t axis;

	memset(l, 0, sizeof *l);
	if (block < 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "block_size is %lld, must not be negative", (long long)block);
	/* a per-tensor scale may be a scalar or a 1-element vector, and its zero point either */
	bool per_tensor = block == 0 && scale->count == 1 && scale->rank <= 1;
	if (zp && !(per_tensor ? zp->count == 1 && zp->rank <= 1 : wh_tensor_same_shape(zp, scale)))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "zero point has shape %s, the scale %s (give them one shape)",
				      wh_shape_str(zp->dims, zp->rank, got, sizeof got),
				      wh_shape_str(scale->dims, scale->rank, want, sizeof want));
	if (per_tensor) {
		l->mode = Q_TENSOR;
		l->outer = 1;
		l->axis_len = 1;
		l->inner = x->count;
		return WH_OK;
	}
	if (!wh_norm_axis(axis_attr, x->rank, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis_attr,
				      x->rank);
	l->outer = 1;
	l->inner = 1;
	for (int32_t d = 0; d < axis; d++)
		l->outer *= (uint64_t)x->dims[d];
	for (int32_t d = axis + 1; d < x->rank; d++)
		l->inner *= (uint64_t)x->dims[d];
	l->axis_len = (uint64_t)x->dims[axis];
	if (block == 0) {
		if (scale->rank != 1 || scale->dims[0] != x->dims[axis])
			return wh_kernel_fail(ctx, WH_ERR_SHAPE,
					      "scale has shape %s; per-axis quantization along axis %d needs %lld values",
					      wh_shape_str(scale->dims, scale->rank, got, sizeof got), axis,
					      (long long)x->dims[axis]);
		l->mode = Q_AXIS;
		return WH_OK;
	}
	l->mode = Q_BLOCKED;
	l->block = block;
	l->n_blocks = (x->dims[axis] + block - 1) / block;
	bool ok = scale->rank == x->rank;
	for (int32_t d = 0; ok && d < x->rank; d++)
		ok = d == axis ? scale->dims[d] == l->n_blocks : scale->dims[d] == x->dims[d];
	if (!ok) {
		int64_t w[WH_MAX_RANK];
		memcpy(w, x->dims, sizeof w);
		w[axis] = l->n_blocks;
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "scale has shape %s; blocks of %lld along axis %d need %s",
				      wh_shape_str(scale->dims, scale->rank, got, sizeof got), (long long)block, axis,
				      wh_shape_str(w, x->rank, want, sizeof want));
	}
	return WH_OK;
}

/* Index of the scale / zero point for element (o, a, i) of x. */
static inline uint64_t q_index(const struct qlayout *l, uint64_t o, uint64_t a, uint64_t i)
{
	switch (l->mode) {
	case Q_TENSOR: return 0;
	case Q_AXIS: return a;
	default: return (o * (uint64_t)l->n_blocks + a / (uint64_t)l->block) * l->inner + i;
	}
}

/* Per-tensor or per-axis (not blocked) layout: the run of elements from k (before end) that
 * share one scale, and that scale's index in *si. */
static inline size_t q_run(const struct qlayout *l, size_t k, size_t end, uint64_t *si)
{
	if (l->mode == Q_TENSOR) {
		*si = 0;
		return end - k;
	}
	*si = (k / l->inner) % l->axis_len;
	size_t next = (k / l->inner + 1) * l->inner;
	return (next < end ? next : end) - k;
}

static bool is_quant_int(enum wh_dtype dt, double *lo, double *hi)
{
	switch (dt) {
	case WH_DT_INT8: *lo = -128; *hi = 127; return true;
	case WH_DT_UINT8: *lo = 0; *hi = 255; return true;
	case WH_DT_INT16: *lo = -32768; *hi = 32767; return true;
	case WH_DT_UINT16: *lo = 0; *hi = 65535; return true;
	case WH_DT_INT4: *lo = -8; *hi = 7; return true;
	case WH_DT_UINT4: *lo = 0; *hi = 15; return true;
	case WH_DT_INT2: *lo = -2; *hi = 1; return true;
	case WH_DT_UINT2: *lo = 0; *hi = 3; return true;
	case WH_DT_INT32: *lo = -2147483648.0; *hi = 2147483647.0; return true;
	default: return false;
	}
}

static bool is_quant_float(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT8E4M3FN || dt == WH_DT_FLOAT8E4M3FNUZ || dt == WH_DT_FLOAT8E5M2 ||
	       dt == WH_DT_FLOAT8E5M2FNUZ || dt == WH_DT_FLOAT4E2M1;
}

/* Rounds a float32 result to the arithmetic precision of type dt (fp16 / bf16 arithmetic
 * as numpy does it: computed in float32, rounded once). */
static float round_to(enum wh_dtype dt, float v)
{
	if (dt == WH_DT_FLOAT16)
		return wh_round_f16(v);
	if (dt == WH_DT_BFLOAT16)
		return wh_round_bf16(v);
	return v;
}

/* ---- QuantizeLinear ---- */

struct quant_job {
	const struct wh_tensor *x, *scale, *zp;
	struct wh_tensor *y;
	struct qlayout l;
	enum wh_dtype prec; /* precision of x / scale */
	bool saturate;
	bool int_out;
	double lo, hi;
	const struct wh_cpu_features *cpu;
};

static void quant_chunk(void *arg, size_t begin, size_t end)
{
	const struct quant_job *j = arg;
	const struct qlayout *l = &j->l;
	struct wh_cast_opts o = {j->saturate, WH_E8M0_ROUND_UP};

	for (size_t k = begin; k < end; k++) {
		uint64_t i = k % l->inner, rest = k / l->inner;
		uint64_t a = rest % l->axis_len, oo = rest / l->axis_len;
		uint64_t si = q_index(l, oo, a, i);
		double q;
		if (j->prec == WH_DT_DOUBLE) {
			q = wh_tensor_get_f64(j->x, k) / wh_tensor_get_f64(j->scale, si);
		} else {
			float xf = (float)wh_tensor_get_f64(j->x, k), sf = (float)wh_tensor_get_f64(j->scale, si);
			q = round_to(j->prec, round_to(j->prec, xf) / round_to(j->prec, sf));
		}
		if (j->int_out) {
			double v = nearbyint(q); /* half to even in the default rounding mode */
			if (j->zp)
				v += (double)wh_tensor_get_i64(j->zp, si);
			if (v != v)
				v = 0;
			v = v < j->lo ? j->lo : v > j->hi ? j->hi : v;
			struct elem e = {true, (uint64_t)(int64_t)v, v, (float)v, (float)v};
			put_elem(j->y, k, &e, &o);
		} else {
			if (j->zp)
				q += wh_tensor_get_f64(j->zp, si);
			struct elem e = {false, 0, q, (float)q, wh_f64_to_f32_odd(q)};
			put_elem(j->y, k, &e, &o);
		}
	}
}

/* QDQ models quantize float32 activations to 8 bits per tensor or per channel: the same
 * arithmetic as quant_chunk, in runs of one scale with the vector loops of
 * qgemm-internal.h (wh_q_quant, the same bits on every ISA). */
static void quant_chunk_f32_8(void *arg, size_t begin, size_t end)
{
	const struct quant_job *j = arg;
	const float *x = j->x->data, *s = j->scale->data;
	bool s8 = j->y->dtype == WH_DT_INT8;
	uint8_t *y = j->y->data;

	for (size_t k = begin; k < end;) {
		uint64_t si;
		size_t len = q_run(&j->l, k, end, &si);
		float zp = 0.0f;
		if (j->zp)
			zp = s8 ? (float)((const int8_t *)j->zp->data)[si] : (float)((const uint8_t *)j->zp->data)[si];
		wh_q_quant(x + k, len, s[si], zp, s8, y + k, j->cpu);
		k += len;
	}
}

static enum wh_dtype precision_attr(struct wh_kernel_ctx *ctx, enum wh_dtype dflt)
{
	int64_t p = ctx->opset >= 23 ? wh_node_attr_int(ctx->node, "precision", 0) : 0;
	if (p == WH_DT_FLOAT || p == WH_DT_FLOAT16 || p == WH_DT_BFLOAT16 || p == WH_DT_DOUBLE)
		return (enum wh_dtype)p;
	return dflt;
}

static enum wh_status quantize_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *scale = wh_kin(ctx, 1), *zp = wh_kin(ctx, 2);
	struct quant_job j = {0};
	enum wh_dtype out_dt = WH_DT_UINT8;
	int64_t attr_dt = ctx->opset >= 21 ? wh_node_attr_int(ctx->node, "output_dtype", 0) : 0;
	enum wh_status st;

	if (!x || !scale)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "QuantizeLinear needs inputs x and y_scale");
	if (!wh_dtype_is_float(x->dtype) && x->dtype != WH_DT_INT32)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "x is %s; QuantizeLinear takes float types or int32",
				      wh_dtype_name(x->dtype));
	if (!wh_dtype_is_float(scale->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "y_scale is %s, must be a float type", wh_dtype_name(scale->dtype));
	if (zp)
		out_dt = zp->dtype;
	else if (attr_dt != 0)
		out_dt = wh_dtype_valid((int)(attr_dt > 1000 || attr_dt < 0 ? 0 : attr_dt)) ? (enum wh_dtype)attr_dt
											    : WH_DT_UNDEFINED;
	if (zp && attr_dt != 0 && attr_dt != (int64_t)zp->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "output_dtype %lld differs from the zero point's type %s",
				      (long long)attr_dt, wh_dtype_name(zp->dtype));
	j.int_out = is_quant_int(out_dt, &j.lo, &j.hi);
	if (!j.int_out && !is_quant_float(out_dt))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "quantizing to %s is not supported",
				      wh_dtype_name(out_dt));
	if ((st = q_layout(ctx, x, scale, zp, &j.l)) != WH_OK)
		return st;
	j.x = x;
	j.scale = scale;
	j.zp = zp;
	j.cpu = ctx->cpu;
	/* numpy's promotion: the quotient of two fp16 (bf16) tensors is fp16 (bf16), of mixed
	 * types float32, with int32 or double involved float64 */
	enum wh_dtype prec = x->dtype == scale->dtype ? scale->dtype : WH_DT_FLOAT;
	if (x->dtype == WH_DT_INT32 || x->dtype == WH_DT_DOUBLE || scale->dtype == WH_DT_DOUBLE)
		prec = WH_DT_DOUBLE;
	j.prec = precision_attr(ctx, prec);
	j.saturate = ctx->opset < 19 || wh_node_attr_int(ctx->node, "saturate", 1) != 0;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], out_dt, x->rank, x->dims)) != WH_OK)
		return st;
	j.y = &ctx->outputs[0];
	wh_range_fn fn = quant_chunk;
	if (x->dtype == WH_DT_FLOAT && scale->dtype == WH_DT_FLOAT && j.prec == WH_DT_FLOAT && j.l.mode != Q_BLOCKED) {
		if (out_dt == WH_DT_UINT8 || out_dt == WH_DT_INT8)
			fn = quant_chunk_f32_8;
	}
	wh_parallel_for(ctx->pool, (size_t)x->count, WH_CHUNK_ELEMS, fn, &j);
	return WH_OK;
}

/* ---- DequantizeLinear ---- */

struct dequant_job {
	const struct wh_tensor *x, *scale, *zp;
	struct wh_tensor *y;
	struct qlayout l;
	bool in_double;
	const struct wh_cpu_features *cpu;
};

static void dequant_chunk(void *arg, size_t begin, size_t end)
{
	const struct dequant_job *j = arg;
	const struct qlayout *l = &j->l;
	struct wh_cast_opts o = {true, WH_E8M0_ROUND_UP};
	bool x_int = !wh_dtype_is_float(j->x->dtype);

	for (size_t k = begin; k < end; k++) {
		uint64_t i = k % l->inner, rest = k / l->inner;
		uint64_t a = rest % l->axis_len, oo = rest / l->axis_len;
		uint64_t si = q_index(l, oo, a, i);
		double diff;
		if (x_int)
			diff = (double)(wh_tensor_get_i64(j->x, k) - (j->zp ? wh_tensor_get_i64(j->zp, si) : 0));
		else
			diff = wh_tensor_get_f64(j->x, k) - (j->zp ? wh_tensor_get_f64(j->zp, si) : 0);
		double s = wh_tensor_get_f64(j->scale, si);
		double v = j->in_double ? diff * s : (double)((float)diff * (float)s);
		struct elem e = {false, 0, v, (float)v, wh_f64_to_f32_odd(v)};
		put_elem(j->y, k, &e, &o);
	}
}

/* The 8-bit to float32 case of dequant_chunk, per tensor or per channel, in runs of one
 * scale with wh_q_dequant (qgemm-internal.h). */
static void dequant_chunk_8_f32(void *arg, size_t begin, size_t end)
{
	const struct dequant_job *j = arg;
	const float *s = j->scale->data;
	bool s8 = j->x->dtype == WH_DT_INT8;
	const uint8_t *x = j->x->data;

	for (size_t k = begin; k < end;) {
		uint64_t si;
		size_t len = q_run(&j->l, k, end, &si);
		int32_t zp = 0;
		if (j->zp)
			zp = s8 ? ((const int8_t *)j->zp->data)[si] : ((const uint8_t *)j->zp->data)[si];
		wh_q_dequant(x + k, s8, len, zp, s[si], (float *)j->y->data + k, j->cpu);
		k += len;
	}
}

static enum wh_status dequantize_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0), *scale = wh_kin(ctx, 1), *zp = wh_kin(ctx, 2);
	struct dequant_job j = {0};
	double lo, hi;
	enum wh_status st;

	if (!x || !scale)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "DequantizeLinear needs inputs x and x_scale");
	if (!is_quant_int(x->dtype, &lo, &hi) && !is_quant_float(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "dequantizing %s is not supported", wh_dtype_name(x->dtype));
	if (!wh_dtype_is_float(scale->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "x_scale is %s, must be a float type", wh_dtype_name(scale->dtype));
	if (zp && zp->dtype != x->dtype)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "zero point is %s, x is %s (they must match)",
				      wh_dtype_name(zp->dtype), wh_dtype_name(x->dtype));
	enum wh_dtype out_dt = scale->dtype;
	int64_t attr_dt = ctx->opset >= 23 ? wh_node_attr_int(ctx->node, "output_dtype", 0) : 0;
	if (attr_dt != 0) {
		if (attr_dt != WH_DT_FLOAT && attr_dt != WH_DT_FLOAT16 && attr_dt != WH_DT_BFLOAT16 &&
		    attr_dt != WH_DT_DOUBLE)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "output_dtype %lld is not a float type",
					      (long long)attr_dt);
		out_dt = (enum wh_dtype)attr_dt;
	}
	if ((st = q_layout(ctx, x, scale, zp, &j.l)) != WH_OK)
		return st;
	j.x = x;
	j.scale = scale;
	j.zp = zp;
	j.in_double = scale->dtype == WH_DT_DOUBLE || out_dt == WH_DT_DOUBLE;
	j.cpu = ctx->cpu;
	if ((st = wh_tensor_alloc(&ctx->outputs[0], out_dt, x->rank, x->dims)) != WH_OK)
		return st;
	j.y = &ctx->outputs[0];
	wh_range_fn fn = dequant_chunk;
	if ((x->dtype == WH_DT_UINT8 || x->dtype == WH_DT_INT8) && scale->dtype == WH_DT_FLOAT &&
	    out_dt == WH_DT_FLOAT && j.l.mode != Q_BLOCKED)
		fn = dequant_chunk_8_f32;
	wh_parallel_for(ctx->pool, (size_t)x->count, WH_CHUNK_ELEMS, fn, &j);
	return WH_OK;
}

/* ---- DynamicQuantizeLinear ---- */

/* float32 input: the range per chunk of the vector loops (min and max are order-independent,
 * so the chunks' results combine to the same answer for any thread count), then the
 * quantization, chunk by chunk. */
struct dql_job {
	const struct wh_cpu_features *cpu;
	const float *x;
	uint8_t *y;
	size_t n;
	float *lo, *hi; /* per chunk */
	float scale, zp;
};

static void dql_range_chunk(void *arg, size_t begin, size_t end)
{
	struct dql_job *j = arg;
	for (size_t c = begin; c < end; c++) {
		size_t k0 = c * WH_CHUNK_ELEMS, len = j->n - k0 < WH_CHUNK_ELEMS ? j->n - k0 : WH_CHUNK_ELEMS;
		wh_q_minmax(j->x + k0, len, &j->lo[c], &j->hi[c], j->cpu);
	}
}

static void dql_quant_chunk(void *arg, size_t begin, size_t end)
{
	struct dql_job *j = arg;
	wh_q_quant(j->x + begin, end - begin, j->scale, j->zp, false, j->y + begin, j->cpu);
}

static enum wh_status dynamic_quantize_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	int64_t scalar_dims[1] = {0};
	enum wh_status st;

	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	if (x->dtype != WH_DT_FLOAT && x->dtype != WH_DT_FLOAT16 && x->dtype != WH_DT_BFLOAT16)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "x is %s; DynamicQuantizeLinear takes float",
				      wh_dtype_name(x->dtype));
	/* The range always includes 0 so that 0 is exact. Min and max are order-independent,
	 * so a single pass gives the same answer for any thread count. */
	float lo = 0, hi = 0;
	struct dql_job j = {.cpu = ctx->cpu, .x = x->data, .n = (size_t)x->count};
	if (x->dtype == WH_DT_FLOAT) {
		size_t nc = (j.n + WH_CHUNK_ELEMS - 1) / WH_CHUNK_ELEMS;
		float *r = malloc((nc ? 2 * nc : 1) * sizeof(float));
		if (!r)
			return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory for the range");
		j.lo = r;
		j.hi = r + nc;
		wh_parallel_for(ctx->pool, nc, 1, dql_range_chunk, &j);
		for (size_t c = 0; c < nc; c++) {
			lo = j.lo[c] < lo ? j.lo[c] : lo;
			hi = j.hi[c] > hi ? j.hi[c] : hi;
		}
		free(r);
	} else {
		for (uint64_t k = 0; k < x->count; k++) {
			float v = (float)wh_tensor_get_f64(x, k);
			if (v < lo)
				lo = v;
			if (v > hi)
				hi = v;
		}
	}
	float scale = (hi == lo ? 1.0f : hi - lo) / 255.0f;
	float zp_f = 0.0f - lo / scale;
	zp_f = zp_f < 0 ? 0 : zp_f > 255 ? 255 : zp_f;
	float zp = nearbyintf(zp_f);

	if ((st = wh_tensor_alloc(&ctx->outputs[0], WH_DT_UINT8, x->rank, x->dims)) != WH_OK)
		return st;
	uint8_t *y = ctx->outputs[0].data;
	if (x->dtype == WH_DT_FLOAT) {
		j.y = y;
		j.scale = scale;
		j.zp = zp;
		wh_parallel_for(ctx->pool, j.n, WH_CHUNK_ELEMS, dql_quant_chunk, &j);
	} else {
		for (uint64_t k = 0; k < x->count; k++) {
			float v = nearbyintf((float)wh_tensor_get_f64(x, k) / scale) + zp;
			v = v != v ? 0 : v < 0 ? 0 : v > 255 ? 255 : v;
			y[k] = (uint8_t)v;
		}
	}
	if (ctx->n_outputs > 1) {
		if ((st = wh_tensor_alloc(&ctx->outputs[1], x->dtype, 0, scalar_dims)) != WH_OK)
			return st;
		wh_tensor_set_f64(&ctx->outputs[1], 0, scale);
	}
	if (ctx->n_outputs > 2) {
		if ((st = wh_tensor_alloc(&ctx->outputs[2], WH_DT_UINT8, 0, scalar_dims)) != WH_OK)
			return st;
		((uint8_t *)ctx->outputs[2].data)[0] = (uint8_t)zp;
	}
	return WH_OK;
}

const struct wh_op_def wh_ops_cast[] = {
	{"", "Cast", 1, cast_run},
	{"", "CastLike", 15, castlike_run},
	{"", "QuantizeLinear", 10, quantize_run},
	{"", "DequantizeLinear", 10, dequantize_run},
	{"", "DynamicQuantizeLinear", 11, dynamic_quantize_run},
};
const size_t wh_ops_cast_count = sizeof wh_ops_cast / sizeof wh_ops_cast[0];
