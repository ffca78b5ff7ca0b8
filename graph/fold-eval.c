#include "graph/fold-eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Internal results of an op evaluation: done, not handled (no error), or a negative
 * enum wh_status. */
#define EV_DONE 1
#define EV_SKIP 0

/* Operand counts beyond this are not folded (variadic Sum/Max/... of many constants is
 * rare and not worth a general n-ary iterator). */
#define EV_MAX_OPERANDS 8
/* MatMul work (multiply-adds) beyond this is left to the executor. */
#define EV_MAX_MATMUL_WORK ((uint64_t)1 << 26)

struct ev {
	const struct wh_node *n;
	int64_t opset;
	const struct wh_tensor *in;
	uint32_t nin;
	struct wh_tensor *out;
	uint32_t nout;
	uint64_t max;
};

/* ---- element access ---- */

static float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, f;
	if (exp == 0) {
		if (man == 0) {
			f = sign;
		} else {
			/* subnormal half: renormalise into a float */
			exp = 127 - 15 + 1;
			while (!(man & 0x400u)) {
				man <<= 1;
				exp--;
			}
			f = sign | (exp << 23) | ((man & 0x3ffu) << 13);
		}
	} else if (exp == 31) {
		f = sign | 0x7f800000u | (man << 13);
	} else {
		f = sign | ((exp + 112) << 23) | (man << 13);
	}
	float x;
	memcpy(&x, &f, sizeof x);
	return x;
}

static uint16_t float_to_half(float x)
{
	uint32_t f;
	memcpy(&f, &x, sizeof f);
	uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
	uint32_t a = f & 0x7fffffffu;
	if (a >= 0x7f800000u)
		return (uint16_t)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
	if (a >= 0x477ff000u) /* rounds to infinity */
		return (uint16_t)(sign | 0x7c00u);
	if (a < 0x38800000u) {
		/* half subnormal (or zero): scaling by 2^24 is exact, nearbyint rounds to even */
		float v;
		memcpy(&v, &a, sizeof v);
		return (uint16_t)(sign | (uint16_t)nearbyintf(v * 16777216.0f));
	}
	uint32_t h = (((a >> 23) - 112) << 10) | ((a & 0x7fffffu) >> 13);
	uint32_t rem = a & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
}

static float bf16_to_float(uint16_t h)
{
	uint32_t f = (uint32_t)h << 16;
	float x;
	memcpy(&x, &f, sizeof x);
	return x;
}

static uint16_t float_to_bf16(float x)
{
	uint32_t f;
	memcpy(&f, &x, sizeof f);
	if ((f & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((f >> 16) | 0x40u);
	f += 0x7fffu + ((f >> 16) & 1u);
	return (uint16_t)(f >> 16);
}

bool wh_fold_dtype_ok(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_FLOAT: case WH_DT_DOUBLE: case WH_DT_FLOAT16: case WH_DT_BFLOAT16:
	case WH_DT_INT8: case WH_DT_INT16: case WH_DT_INT32: case WH_DT_INT64:
	case WH_DT_UINT8: case WH_DT_UINT16: case WH_DT_UINT32: case WH_DT_UINT64:
	case WH_DT_BOOL:
		return true;
	default:
		return false;
	}
}

static bool is_floatish(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_DOUBLE || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

static int64_t sat_i64(double x)
{
	if (isnan(x))
		return 0;
	if (x >= 9223372036854775807.0)
		return INT64_MAX;
	if (x <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)x;
}

double wh_fold_get_f(const struct wh_tensor *t, uint64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case WH_DT_FLOAT: return ((const float *)p)[i];
	case WH_DT_DOUBLE: return ((const double *)p)[i];
	case WH_DT_FLOAT16: return half_to_float(((const uint16_t *)p)[i]);
	case WH_DT_BFLOAT16: return bf16_to_float(((const uint16_t *)p)[i]);
	case WH_DT_INT8: return ((const int8_t *)p)[i];
	case WH_DT_INT16: return ((const int16_t *)p)[i];
	case WH_DT_INT32: return ((const int32_t *)p)[i];
	case WH_DT_INT64: return (double)((const int64_t *)p)[i];
	case WH_DT_UINT8: return ((const uint8_t *)p)[i];
	case WH_DT_UINT16: return ((const uint16_t *)p)[i];
	case WH_DT_UINT32: return ((const uint32_t *)p)[i];
	case WH_DT_UINT64: return (double)((const uint64_t *)p)[i];
	case WH_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	default: return 0;
	}
}

int64_t wh_fold_get_i(const struct wh_tensor *t, uint64_t i)
{
	const void *p = t->data;
	switch (t->dtype) {
	case WH_DT_INT8: return ((const int8_t *)p)[i];
	case WH_DT_INT16: return ((const int16_t *)p)[i];
	case WH_DT_INT32: return ((const int32_t *)p)[i];
	case WH_DT_INT64: return ((const int64_t *)p)[i];
	case WH_DT_UINT8: return ((const uint8_t *)p)[i];
	case WH_DT_UINT16: return ((const uint16_t *)p)[i];
	case WH_DT_UINT32: return ((const uint32_t *)p)[i];
	case WH_DT_UINT64: return (int64_t)((const uint64_t *)p)[i];
	case WH_DT_BOOL: return ((const uint8_t *)p)[i] != 0;
	default: return sat_i64(wh_fold_get_f(t, i));
	}
}

static void put_i(struct wh_tensor *t, uint64_t i, int64_t x)
{
	void *p = t->data;
	switch (t->dtype) {
	case WH_DT_INT8: ((int8_t *)p)[i] = (int8_t)x; break;
	case WH_DT_INT16: ((int16_t *)p)[i] = (int16_t)x; break;
	case WH_DT_INT32: ((int32_t *)p)[i] = (int32_t)x; break;
	case WH_DT_INT64: ((int64_t *)p)[i] = x; break;
	case WH_DT_UINT8: ((uint8_t *)p)[i] = (uint8_t)x; break;
	case WH_DT_UINT16: ((uint16_t *)p)[i] = (uint16_t)x; break;
	case WH_DT_UINT32: ((uint32_t *)p)[i] = (uint32_t)x; break;
	case WH_DT_UINT64: ((uint64_t *)p)[i] = (uint64_t)x; break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = x != 0; break;
	case WH_DT_FLOAT: ((float *)p)[i] = (float)x; break;
	case WH_DT_DOUBLE: ((double *)p)[i] = (double)x; break;
	case WH_DT_FLOAT16: ((uint16_t *)p)[i] = float_to_half((float)x); break;
	case WH_DT_BFLOAT16: ((uint16_t *)p)[i] = float_to_bf16((float)x); break;
	default: break;
	}
}

static void put_f(struct wh_tensor *t, uint64_t i, double x)
{
	void *p = t->data;
	switch (t->dtype) {
	case WH_DT_FLOAT: ((float *)p)[i] = (float)x; break;
	case WH_DT_DOUBLE: ((double *)p)[i] = x; break;
	case WH_DT_FLOAT16: ((uint16_t *)p)[i] = float_to_half((float)x); break;
	case WH_DT_BFLOAT16: ((uint16_t *)p)[i] = float_to_bf16((float)x); break;
	case WH_DT_BOOL: ((uint8_t *)p)[i] = x != 0; break;
	default: put_i(t, i, sat_i64(x)); break;
	}
}

/* ---- helpers ---- */

static bool has_in(const struct ev *e, uint32_t i)
{
	return i < e->nin && e->in[i].dtype != WH_DT_UNDEFINED;
}

static int alloc_out(struct ev *e, uint32_t k, enum wh_dtype dt, int32_t rank, const int64_t *dims)
{
	if (k >= e->nout)
		return EV_SKIP;
	if (rank < 0 || rank > WH_MAX_RANK)
		return EV_SKIP;
	uint64_t count;
	if (!wh_shape_count(dims, rank, &count) || count > e->max)
		return EV_SKIP;
	enum wh_status st = wh_tensor_alloc(&e->out[k], dt, rank, dims);
	if (st != WH_OK)
		return st == WH_ERR_NOMEM ? st : EV_SKIP;
	return EV_DONE;
}

/* Output k shares input i's data with a new shape (Reshape, Squeeze, Identity, ...). */
static int share_out(struct ev *e, uint32_t k, const struct wh_tensor *src, int32_t rank, const int64_t *dims)
{
	if (k >= e->nout)
		return EV_SKIP;
	uint64_t count;
	if (!wh_shape_count(dims, rank, &count) || count != src->count)
		return EV_SKIP;
	wh_tensor_ref(&e->out[k], src);
	e->out[k].rank = rank;
	for (int32_t i = 0; i < rank; i++)
		e->out[k].dims[i] = dims[i];
	return EV_DONE;
}

/* Integer values of a constant 1-D (or scalar) tensor; false when too many or not ints. */
static bool int_list(const struct wh_tensor *t, int64_t *vals, uint32_t cap, uint32_t *n_out)
{
	if (!wh_dtype_is_int(t->dtype) || t->rank > 1 || t->count > cap)
		return false;
	for (uint64_t i = 0; i < t->count; i++)
		vals[i] = wh_fold_get_i(t, i);
	*n_out = (uint32_t)t->count;
	return true;
}

static bool attr_int_list(const struct wh_node *n, const char *name, int64_t *vals, uint32_t cap, uint32_t *n_out)
{
	const int64_t *v;
	int64_t cnt = wh_node_attr_ints(n, name, &v);
	if (cnt < 0 || cnt > cap)
		return false;
	for (int64_t i = 0; i < cnt; i++)
		vals[i] = v[i];
	*n_out = (uint32_t)cnt;
	return true;
}

static bool norm_axis(int64_t axis, int32_t rank, int32_t *out)
{
	if (axis < 0)
		axis += rank;
	if (axis < 0 || axis >= rank)
		return false;
	*out = (int32_t)axis;
	return true;
}

/* row-major strides in elements */
static void strides_of(const int64_t *dims, int32_t rank, int64_t *strides)
{
	int64_t s = 1;
	for (int32_t i = rank - 1; i >= 0; i--) {
		strides[i] = s;
		s *= dims[i];
	}
}

/* Broadcast of several shapes (numpy rules); false on a mismatch or too high a rank. */
static bool bcast_shape(const struct wh_tensor *const *ts, uint32_t n, int32_t *rank_out, int64_t *dims)
{
	int32_t r = 0;
	for (uint32_t i = 0; i < n; i++)
		if (ts[i]->rank > r)
			r = ts[i]->rank;
	for (int32_t k = 0; k < r; k++)
		dims[k] = 1;
	for (uint32_t i = 0; i < n; i++) {
		int32_t off = r - ts[i]->rank;
		for (int32_t k = 0; k < ts[i]->rank; k++) {
			int64_t d = ts[i]->dims[k], *o = &dims[off + k];
			if (d == *o || d == 1)
				continue;
			if (*o != 1)
				return false;
			*o = d;
		}
	}
	*rank_out = r;
	return true;
}

/* Per-operand strides aligned to the output rank (0 along broadcast dimensions). */
static void bcast_strides(const struct wh_tensor *t, int32_t rank, int64_t *strides)
{
	int64_t s[WH_MAX_RANK];
	strides_of(t->dims, t->rank, s);
	int32_t off = rank - t->rank;
	for (int32_t k = 0; k < rank; k++)
		strides[k] = (k < off || t->dims[k - off] == 1) ? 0 : s[k - off];
}

static uint64_t offset_of(uint64_t o, const int64_t *dims, int32_t rank, const int64_t *strides)
{
	uint64_t off = 0;
	for (int32_t k = rank - 1; k >= 0; k--) {
		uint64_t d = (uint64_t)dims[k];
		off += (o % d) * (uint64_t)strides[k];
		o /= d;
	}
	return off;
}

/* ---- elementwise ---- */

enum ew_op {
	EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MOD, EW_POW, EW_MAX, EW_MIN, EW_SUM, EW_MEAN,
	EW_EQ, EW_LT, EW_GT, EW_LE, EW_GE, EW_AND, EW_OR, EW_XOR, EW_PRELU, EW_BITSHIFT,
};

static const struct {
	const char *name;
	enum ew_op op;
	bool variadic, compare;
} ew_table[] = {
	{"Add", EW_ADD, false, false}, {"Sub", EW_SUB, false, false}, {"Mul", EW_MUL, false, false},
	{"Div", EW_DIV, false, false}, {"Mod", EW_MOD, false, false}, {"Pow", EW_POW, false, false},
	{"Max", EW_MAX, true, false}, {"Min", EW_MIN, true, false}, {"Sum", EW_SUM, true, false},
	{"Mean", EW_MEAN, true, false}, {"Equal", EW_EQ, false, true}, {"Less", EW_LT, false, true},
	{"Greater", EW_GT, false, true}, {"LessOrEqual", EW_LE, false, true},
	{"GreaterOrEqual", EW_GE, false, true}, {"And", EW_AND, false, false},
	{"Or", EW_OR, false, false}, {"Xor", EW_XOR, false, false}, {"PRelu", EW_PRELU, false, false},
	{"BitShift", EW_BITSHIFT, false, false},
};

/* One step of an integer operation; false when undefined (division by zero, overflow). */
static bool ew_int(enum ew_op op, int64_t a, int64_t b, bool fmod_mode, bool shift_left, int64_t *r)
{
	switch (op) {
	case EW_ADD: case EW_SUM: *r = (int64_t)((uint64_t)a + (uint64_t)b); return true;
	case EW_SUB: *r = (int64_t)((uint64_t)a - (uint64_t)b); return true;
	case EW_MUL: *r = (int64_t)((uint64_t)a * (uint64_t)b); return true;
	case EW_DIV:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return false;
		*r = a / b;
		return true;
	case EW_MOD:
		if (b == 0 || (a == INT64_MIN && b == -1))
			return false;
		*r = a % b;
		if (!fmod_mode && *r != 0 && ((*r < 0) != (b < 0)))
			*r += b;
		return true;
	case EW_POW: {
		if (b < 0)
			return false;
		uint64_t acc = 1, base = (uint64_t)a;
		for (int64_t e = b; e > 0; e >>= 1) {
			if (e & 1)
				acc *= base;
			base *= base;
		}
		*r = (int64_t)acc;
		return true;
	}
	case EW_MAX: *r = a > b ? a : b; return true;
	case EW_MIN: *r = a < b ? a : b; return true;
	case EW_EQ: *r = a == b; return true;
	case EW_LT: *r = a < b; return true;
	case EW_GT: *r = a > b; return true;
	case EW_LE: *r = a <= b; return true;
	case EW_GE: *r = a >= b; return true;
	case EW_AND: *r = a && b; return true;
	case EW_OR: *r = a || b; return true;
	case EW_XOR: *r = (a != 0) != (b != 0); return true;
	case EW_PRELU: *r = a < 0 ? (int64_t)((uint64_t)a * (uint64_t)b) : a; return true;
	case EW_BITSHIFT:
		if ((uint64_t)b >= 64) {
			*r = 0;
			return true;
		}
		*r = shift_left ? (int64_t)((uint64_t)a << b) : (int64_t)((uint64_t)a >> b);
		return true;
	default: return false;
	}
}

static bool ew_float(enum ew_op op, double a, double b, double *r)
{
	switch (op) {
	case EW_ADD: case EW_SUM: case EW_MEAN: *r = a + b; return true;
	case EW_SUB: *r = a - b; return true;
	case EW_MUL: *r = a * b; return true;
	case EW_DIV: *r = a / b; return true;
	case EW_MOD: *r = fmod(a, b); return true;
	case EW_POW: *r = pow(a, b); return true;
	case EW_MAX: *r = (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b); return true;
	case EW_MIN: *r = (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b); return true;
	case EW_EQ: *r = a == b; return true;
	case EW_LT: *r = a < b; return true;
	case EW_GT: *r = a > b; return true;
	case EW_LE: *r = a <= b; return true;
	case EW_GE: *r = a >= b; return true;
	case EW_PRELU: *r = a < 0 ? a * b : a; return true;
	default: return false;
	}
}

static int ev_elementwise(struct ev *e, enum ew_op op, bool variadic, bool compare)
{
	uint32_t n = e->nin;
	if (n < 1 || n > EV_MAX_OPERANDS || (!variadic && n != 2))
		return EV_SKIP;
	const struct wh_tensor *ts[EV_MAX_OPERANDS];
	for (uint32_t i = 0; i < n; i++) {
		if (!has_in(e, i))
			return EV_SKIP;
		ts[i] = &e->in[i];
	}
	enum wh_dtype dt = ts[0]->dtype;
	bool fl = is_floatish(dt);
	if (op == EW_MOD && fl && !wh_node_attr_int(e->n, "fmod", 0))
		return EV_SKIP;
	if ((op == EW_AND || op == EW_OR || op == EW_XOR) && dt != WH_DT_BOOL)
		return EV_SKIP;
	if (op == EW_MEAN && !fl)
		return EV_SKIP;
	bool shift_left = false;
	if (op == EW_BITSHIFT) {
		char buf[16];
		const char *dir = wh_node_attr_string(e->n, "direction", "", buf, sizeof buf);
		if (fl || (strcmp(dir, "LEFT") && strcmp(dir, "RIGHT")))
			return EV_SKIP;
		shift_left = !strcmp(dir, "LEFT");
	}
	int32_t rank;
	int64_t dims[WH_MAX_RANK], strides[EV_MAX_OPERANDS][WH_MAX_RANK];
	if (!bcast_shape(ts, n, &rank, dims))
		return EV_SKIP;
	int r = alloc_out(e, 0, compare ? WH_DT_BOOL : dt, rank, dims);
	if (r != EV_DONE)
		return r;
	for (uint32_t i = 0; i < n; i++)
		bcast_strides(ts[i], rank, strides[i]);
	bool fmod_mode = wh_node_attr_int(e->n, "fmod", 0) != 0;
	/* Pow with an integer base and a float exponent goes through double, as ORT does */
	bool float_pow = op == EW_POW && !fl && is_floatish(ts[1]->dtype);
	struct wh_tensor *out = &e->out[0];
	for (uint64_t o = 0; o < out->count; o++) {
		uint64_t off0 = offset_of(o, dims, rank, strides[0]);
		if (fl || float_pow) {
			double acc = wh_fold_get_f(ts[0], off0);
			for (uint32_t i = 1; i < n; i++)
				if (!ew_float(op, acc, wh_fold_get_f(ts[i], offset_of(o, dims, rank, strides[i])), &acc))
					return EV_SKIP;
			if (op == EW_MEAN)
				acc /= n;
			if (compare || float_pow)
				put_i(out, o, sat_i64(acc));
			else
				put_f(out, o, acc);
		} else {
			int64_t acc = wh_fold_get_i(ts[0], off0);
			for (uint32_t i = 1; i < n; i++)
				if (!ew_int(op, acc, wh_fold_get_i(ts[i], offset_of(o, dims, rank, strides[i])), fmod_mode,
					    shift_left, &acc))
					return EV_SKIP;
			put_i(out, o, acc);
		}
	}
	return EV_DONE;
}

static int ev_where(struct ev *e)
{
	if (e->nin != 3 || !has_in(e, 0) || !has_in(e, 1) || !has_in(e, 2) || e->in[0].dtype != WH_DT_BOOL ||
	    e->in[1].dtype != e->in[2].dtype)
		return EV_SKIP;
	const struct wh_tensor *ts[3] = {&e->in[0], &e->in[1], &e->in[2]};
	int32_t rank;
	int64_t dims[WH_MAX_RANK], st[3][WH_MAX_RANK];
	if (!bcast_shape(ts, 3, &rank, dims))
		return EV_SKIP;
	int r = alloc_out(e, 0, ts[1]->dtype, rank, dims);
	if (r != EV_DONE)
		return r;
	for (int i = 0; i < 3; i++)
		bcast_strides(ts[i], rank, st[i]);
	size_t es = wh_dtype_size(ts[1]->dtype);
	struct wh_tensor *out = &e->out[0];
	for (uint64_t o = 0; o < out->count; o++) {
		bool c = ((const uint8_t *)ts[0]->data)[offset_of(o, dims, rank, st[0])] != 0;
		const struct wh_tensor *src = c ? ts[1] : ts[2];
		uint64_t off = offset_of(o, dims, rank, st[c ? 1 : 2]);
		memcpy((char *)out->data + o * es, (const char *)src->data + off * es, es);
	}
	return EV_DONE;
}

static double erf_d(double x)
{
	return erf(x);
}

/* Unary ops; ints take the integer path where the op is defined for them. */
static int ev_unary(struct ev *e, const char *op)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	bool fl = is_floatish(x->dtype);
	enum wh_dtype odt = x->dtype;
	if (!strcmp(op, "IsNaN") || !strcmp(op, "IsInf"))
		odt = WH_DT_BOOL;
	if (!strcmp(op, "Not") && x->dtype != WH_DT_BOOL)
		return EV_SKIP;
	float alpha = wh_node_attr_float(e->n, "alpha", 0), beta = wh_node_attr_float(e->n, "beta", 0);
	if (!strcmp(op, "HardSigmoid")) {
		alpha = wh_node_attr_float(e->n, "alpha", 0.2f);
		beta = wh_node_attr_float(e->n, "beta", 0.5f);
	} else if (!strcmp(op, "LeakyRelu")) {
		alpha = wh_node_attr_float(e->n, "alpha", 0.01f);
	} else if (!strcmp(op, "Elu")) {
		alpha = wh_node_attr_float(e->n, "alpha", 1.0f);
	}
	/* Clip: bounds from attributes before opset 11, from optional inputs after */
	double lo = -INFINITY, hi = INFINITY;
	int64_t ilo = INT64_MIN, ihi = INT64_MAX;
	bool clip = !strcmp(op, "Clip");
	if (clip) {
		if (e->opset < 11) {
			lo = wh_node_attr_float(e->n, "min", -INFINITY);
			hi = wh_node_attr_float(e->n, "max", INFINITY);
		} else {
			if (has_in(e, 1)) {
				if (e->in[1].count != 1)
					return EV_SKIP;
				lo = wh_fold_get_f(&e->in[1], 0);
				ilo = wh_fold_get_i(&e->in[1], 0);
			}
			if (has_in(e, 2)) {
				if (e->in[2].count != 1)
					return EV_SKIP;
				hi = wh_fold_get_f(&e->in[2], 0);
				ihi = wh_fold_get_i(&e->in[2], 0);
			}
		}
	}
	/* ops defined for integers */
	bool int_ok = !strcmp(op, "Abs") || !strcmp(op, "Neg") || !strcmp(op, "Sign") || !strcmp(op, "Relu") ||
		      clip || !strcmp(op, "Not") || !strcmp(op, "IsNaN") || !strcmp(op, "IsInf");
	if (!fl && !int_ok)
		return EV_SKIP;
	int r = alloc_out(e, 0, odt, x->rank, x->dims);
	if (r != EV_DONE)
		return r;
	struct wh_tensor *out = &e->out[0];
	for (uint64_t i = 0; i < x->count; i++) {
		if (!fl) {
			int64_t v = wh_fold_get_i(x, i), y;
			if (!strcmp(op, "Abs")) y = v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
			else if (!strcmp(op, "Neg")) y = (int64_t)(0 - (uint64_t)v);
			else if (!strcmp(op, "Sign")) y = (v > 0) - (v < 0);
			else if (!strcmp(op, "Relu")) y = v < 0 ? 0 : v;
			else if (!strcmp(op, "Not")) y = !v;
			else if (!strcmp(op, "IsNaN") || !strcmp(op, "IsInf")) y = 0;
			else y = v < ilo ? ilo : (v > ihi ? ihi : v);
			put_i(out, i, y);
			continue;
		}
		double v = wh_fold_get_f(x, i), y;
		if (!strcmp(op, "Abs")) y = fabs(v);
		else if (!strcmp(op, "Neg")) y = -v;
		else if (!strcmp(op, "Floor")) y = floor(v);
		else if (!strcmp(op, "Ceil")) y = ceil(v);
		else if (!strcmp(op, "Round")) y = nearbyint(v);
		else if (!strcmp(op, "Sqrt")) y = sqrt(v);
		else if (!strcmp(op, "Exp")) y = exp(v);
		else if (!strcmp(op, "Log")) y = log(v);
		else if (!strcmp(op, "Reciprocal")) y = 1.0 / v;
		else if (!strcmp(op, "Relu")) y = v < 0 ? 0 : v;
		else if (!strcmp(op, "Sigmoid")) y = 1.0 / (1.0 + exp(-v));
		else if (!strcmp(op, "Tanh")) y = tanh(v);
		else if (!strcmp(op, "Sin")) y = sin(v);
		else if (!strcmp(op, "Cos")) y = cos(v);
		else if (!strcmp(op, "Tan")) y = tan(v);
		else if (!strcmp(op, "Asin")) y = asin(v);
		else if (!strcmp(op, "Acos")) y = acos(v);
		else if (!strcmp(op, "Atan")) y = atan(v);
		else if (!strcmp(op, "Sinh")) y = sinh(v);
		else if (!strcmp(op, "Cosh")) y = cosh(v);
		else if (!strcmp(op, "Asinh")) y = asinh(v);
		else if (!strcmp(op, "Acosh")) y = acosh(v);
		else if (!strcmp(op, "Atanh")) y = atanh(v);
		else if (!strcmp(op, "Erf")) y = erf_d(v);
		else if (!strcmp(op, "Sign")) y = (v > 0) - (v < 0);
		else if (!strcmp(op, "Softplus")) y = log1p(exp(v));
		else if (!strcmp(op, "Softsign")) y = v / (1.0 + fabs(v));
		else if (!strcmp(op, "HardSigmoid")) y = fmax(0.0, fmin(1.0, alpha * v + beta));
		else if (!strcmp(op, "HardSwish")) y = v * fmax(0.0, fmin(1.0, v / 6.0 + 0.5));
		else if (!strcmp(op, "LeakyRelu")) y = v < 0 ? alpha * v : v;
		else if (!strcmp(op, "Elu")) y = v < 0 ? alpha * (exp(v) - 1.0) : v;
		else if (!strcmp(op, "IsNaN")) y = isnan(v);
		else if (!strcmp(op, "IsInf")) y = isinf(v);
		else if (clip) y = isnan(v) ? v : (v < lo ? lo : (v > hi ? hi : v));
		else return EV_SKIP;
		put_f(out, i, y);
	}
	return EV_DONE;
}

/* ---- type and shape ---- */

static int ev_cast(struct ev *e, enum wh_dtype to)
{
	if (!has_in(e, 0) || !wh_fold_dtype_ok(to))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	if (to == x->dtype)
		return share_out(e, 0, x, x->rank, x->dims);
	int r = alloc_out(e, 0, to, x->rank, x->dims);
	if (r != EV_DONE)
		return r;
	bool via_float = is_floatish(x->dtype);
	for (uint64_t i = 0; i < x->count; i++) {
		if (via_float)
			put_f(&e->out[0], i, wh_fold_get_f(x, i));
		else
			put_i(&e->out[0], i, wh_fold_get_i(x, i));
	}
	return EV_DONE;
}

static int ev_shape(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t start = wh_node_attr_int(e->n, "start", 0), end = wh_node_attr_int(e->n, "end", x->rank);
	if (start < 0)
		start += x->rank;
	if (end < 0)
		end += x->rank;
	start = start < 0 ? 0 : (start > x->rank ? x->rank : start);
	end = end < 0 ? 0 : (end > x->rank ? x->rank : end);
	int64_t len = end > start ? end - start : 0;
	int r = alloc_out(e, 0, WH_DT_INT64, 1, &len);
	if (r != EV_DONE)
		return r;
	for (int64_t i = 0; i < len; i++)
		((int64_t *)e->out[0].data)[i] = x->dims[start + i];
	return EV_DONE;
}

static int ev_size(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	int r = alloc_out(e, 0, WH_DT_INT64, 0, NULL);
	if (r != EV_DONE)
		return r;
	((int64_t *)e->out[0].data)[0] = (int64_t)e->in[0].count;
	return EV_DONE;
}

static int ev_reshape(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t shape[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(&e->in[1], shape, WH_MAX_RANK, &n))
		return EV_SKIP;
	bool allowzero = wh_node_attr_int(e->n, "allowzero", 0) != 0;
	int32_t infer = -1;
	uint64_t known = 1;
	for (uint32_t i = 0; i < n; i++) {
		if (shape[i] == 0 && !allowzero) {
			if ((int32_t)i >= x->rank)
				return EV_SKIP;
			shape[i] = x->dims[i];
		}
		if (shape[i] == -1) {
			if (infer >= 0)
				return EV_SKIP;
			infer = (int32_t)i;
			continue;
		}
		if (shape[i] < 0 || !wh_mul_u64(known, (uint64_t)shape[i], &known))
			return EV_SKIP;
	}
	if (infer >= 0) {
		if (known == 0 || x->count % known)
			return EV_SKIP;
		shape[infer] = (int64_t)(x->count / known);
	}
	return share_out(e, 0, x, (int32_t)n, shape);
}

static int ev_flatten(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t axis = wh_node_attr_int(e->n, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return EV_SKIP;
	int64_t d[2] = {1, 1};
	for (int32_t i = 0; i < x->rank; i++)
		d[i < axis ? 0 : 1] *= x->dims[i];
	return share_out(e, 0, x, 2, d);
}

/* Axes from the attribute (before opset 13) or the second input. */
static bool axes_of(struct ev *e, int64_t opset_input, int64_t *axes, uint32_t *n, bool *given)
{
	*given = false;
	*n = 0;
	if (e->opset >= opset_input) {
		if (!has_in(e, 1))
			return e->nin < 2 || e->in[1].dtype == WH_DT_UNDEFINED;
		*given = true;
		return int_list(&e->in[1], axes, WH_MAX_RANK, n);
	}
	const int64_t *v;
	int64_t cnt = wh_node_attr_ints(e->n, "axes", &v);
	if (cnt < 0)
		return true;
	*given = true;
	return attr_int_list(e->n, "axes", axes, WH_MAX_RANK, n);
}

static int ev_squeeze(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t axes[WH_MAX_RANK];
	uint32_t n;
	bool given;
	if (!axes_of(e, 13, axes, &n, &given))
		return EV_SKIP;
	bool drop[WH_MAX_RANK] = {false};
	if (!given) {
		for (int32_t i = 0; i < x->rank; i++)
			drop[i] = x->dims[i] == 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!norm_axis(axes[i], x->rank, &a) || x->dims[a] != 1)
			return EV_SKIP;
		drop[a] = true;
	}
	int64_t dims[WH_MAX_RANK];
	int32_t r = 0;
	for (int32_t i = 0; i < x->rank; i++)
		if (!drop[i])
			dims[r++] = x->dims[i];
	return share_out(e, 0, x, r, dims);
}

static int ev_unsqueeze(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t axes[WH_MAX_RANK];
	uint32_t n;
	bool given;
	if (!axes_of(e, 13, axes, &n, &given) || !given)
		return EV_SKIP;
	int32_t r = x->rank + (int32_t)n;
	if (r > WH_MAX_RANK)
		return EV_SKIP;
	bool ins[WH_MAX_RANK] = {false};
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!norm_axis(axes[i], r, &a) || ins[a])
			return EV_SKIP;
		ins[a] = true;
	}
	int64_t dims[WH_MAX_RANK];
	for (int32_t i = 0, k = 0; i < r; i++)
		dims[i] = ins[i] ? 1 : x->dims[k++];
	return share_out(e, 0, x, r, dims);
}

static int ev_transpose(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t perm[WH_MAX_RANK];
	uint32_t n;
	if (wh_node_attr_ints(e->n, "perm", &(const int64_t *){NULL}) >= 0) {
		if (!attr_int_list(e->n, "perm", perm, WH_MAX_RANK, &n) || (int32_t)n != x->rank)
			return EV_SKIP;
	} else {
		n = (uint32_t)x->rank;
		for (uint32_t i = 0; i < n; i++)
			perm[i] = (int64_t)n - 1 - i;
	}
	bool seen[WH_MAX_RANK] = {false};
	int64_t dims[WH_MAX_RANK], xs[WH_MAX_RANK], st[WH_MAX_RANK];
	for (uint32_t i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]])
			return EV_SKIP;
		seen[perm[i]] = true;
		dims[i] = x->dims[perm[i]];
	}
	strides_of(x->dims, x->rank, xs);
	for (uint32_t i = 0; i < n; i++)
		st[i] = xs[perm[i]];
	int r = alloc_out(e, 0, x->dtype, x->rank, dims);
	if (r != EV_DONE)
		return r;
	size_t es = wh_dtype_size(x->dtype);
	for (uint64_t o = 0; o < e->out[0].count; o++)
		memcpy((char *)e->out[0].data + o * es, (const char *)x->data + offset_of(o, dims, x->rank, st) * es, es);
	return EV_DONE;
}

static int ev_concat(struct ev *e)
{
	if (e->nin < 1 || !has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x0 = &e->in[0];
	int32_t axis;
	if (!norm_axis(wh_node_attr_int(e->n, "axis", 0), x0->rank, &axis))
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, x0->dims, sizeof dims);
	dims[axis] = 0;
	for (uint32_t i = 0; i < e->nin; i++) {
		const struct wh_tensor *t = &e->in[i];
		if (!has_in(e, i) || t->dtype != x0->dtype || t->rank != x0->rank)
			return EV_SKIP;
		for (int32_t k = 0; k < t->rank; k++)
			if (k != axis && t->dims[k] != x0->dims[k])
				return EV_SKIP;
		if (!wh_add_i64(dims[axis], t->dims[axis], &dims[axis]))
			return EV_SKIP;
	}
	int r = alloc_out(e, 0, x0->dtype, x0->rank, dims);
	if (r != EV_DONE || e->out[0].count == 0)
		return r;
	size_t es = wh_dtype_size(x0->dtype);
	uint64_t outer = 1;
	for (int32_t k = 0; k < axis; k++)
		outer *= (uint64_t)dims[k];
	char *dst = e->out[0].data;
	for (uint64_t o = 0; o < outer; o++) {
		for (uint32_t i = 0; i < e->nin; i++) {
			const struct wh_tensor *t = &e->in[i];
			uint64_t chunk = outer ? t->count / outer : 0;
			if (!chunk)
				continue;
			memcpy(dst, (const char *)t->data + o * chunk * es, chunk * es);
			dst += chunk * es;
		}
	}
	return EV_DONE;
}

static int ev_gather(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1) || !wh_dtype_is_int(e->in[1].dtype))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0], *idx = &e->in[1];
	int32_t axis;
	if (!norm_axis(wh_node_attr_int(e->n, "axis", 0), x->rank, &axis))
		return EV_SKIP;
	int32_t r = x->rank - 1 + idx->rank;
	if (r > WH_MAX_RANK)
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	int32_t k = 0;
	for (int32_t i = 0; i < axis; i++)
		dims[k++] = x->dims[i];
	for (int32_t i = 0; i < idx->rank; i++)
		dims[k++] = idx->dims[i];
	for (int32_t i = axis + 1; i < x->rank; i++)
		dims[k++] = x->dims[i];
	int rr = alloc_out(e, 0, x->dtype, r, dims);
	if (rr != EV_DONE || e->out[0].count == 0)
		return rr;
	size_t es = wh_dtype_size(x->dtype);
	uint64_t outer = 1, inner = 1, d = (uint64_t)x->dims[axis];
	for (int32_t i = 0; i < axis; i++)
		outer *= (uint64_t)x->dims[i];
	for (int32_t i = axis + 1; i < x->rank; i++)
		inner *= (uint64_t)x->dims[i];
	char *dst = e->out[0].data;
	for (uint64_t o = 0; o < outer; o++) {
		for (uint64_t j = 0; j < idx->count; j++) {
			int64_t v = wh_fold_get_i(idx, j);
			if (v < 0)
				v += (int64_t)d;
			if (v < 0 || (uint64_t)v >= d)
				return EV_SKIP;
			memcpy(dst, (const char *)x->data + ((o * d + (uint64_t)v) * inner) * es, inner * es);
			dst += inner * es;
		}
	}
	return EV_DONE;
}

void wh_fold_slice_range(int64_t dim, int64_t start, int64_t end, int64_t step,
			 int64_t *first_out, int64_t *count_out)
{
	if (start < 0)
		start = start < -dim ? 0 : start + dim;
	if (end < 0)
		end = end < -dim ? -1 : end + dim;
	if (step > 0) {
		start = start > dim ? dim : start;
		end = end > dim ? dim : (end < 0 ? 0 : end);
		*first_out = start;
		*count_out = end > start ? (end - start - 1) / step + 1 : 0;
	} else {
		/* negative steps walk down from start (clamped to dim-1) to end (down to -1) */
		start = start > dim - 1 ? dim - 1 : start;
		end = end > dim - 1 ? dim - 1 : end;
		*first_out = start;
		uint64_t down = step == INT64_MIN ? (uint64_t)1 << 63 : (uint64_t)(-step);
		*count_out = start > end ? (int64_t)((uint64_t)(start - end - 1) / down) + 1 : 0;
	}
}

static int ev_slice(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t starts[WH_MAX_RANK], ends[WH_MAX_RANK], axes[WH_MAX_RANK], steps[WH_MAX_RANK];
	uint32_t ns, ne, na, nst;
	if (e->opset < 10) {
		if (!attr_int_list(e->n, "starts", starts, WH_MAX_RANK, &ns) ||
		    !attr_int_list(e->n, "ends", ends, WH_MAX_RANK, &ne))
			return EV_SKIP;
		if (!attr_int_list(e->n, "axes", axes, WH_MAX_RANK, &na))
			na = 0;
		nst = 0;
	} else {
		if (!has_in(e, 1) || !has_in(e, 2) || !int_list(&e->in[1], starts, WH_MAX_RANK, &ns) ||
		    !int_list(&e->in[2], ends, WH_MAX_RANK, &ne))
			return EV_SKIP;
		na = nst = 0;
		if (has_in(e, 3) && !int_list(&e->in[3], axes, WH_MAX_RANK, &na))
			return EV_SKIP;
		if (has_in(e, 4) && !int_list(&e->in[4], steps, WH_MAX_RANK, &nst))
			return EV_SKIP;
	}
	if (ns != ne || (na && na != ns) || (nst && nst != ns))
		return EV_SKIP;
	int64_t first[WH_MAX_RANK], step[WH_MAX_RANK], dims[WH_MAX_RANK];
	bool seen[WH_MAX_RANK] = {false};
	for (int32_t i = 0; i < x->rank; i++) {
		first[i] = 0;
		step[i] = 1;
		dims[i] = x->dims[i];
	}
	for (uint32_t i = 0; i < ns; i++) {
		int32_t a;
		if (!norm_axis(na ? axes[i] : (int64_t)i, x->rank, &a) || seen[a])
			return EV_SKIP;
		seen[a] = true;
		int64_t s = nst ? steps[i] : 1;
		if (s == 0)
			return EV_SKIP;
		step[a] = s;
		wh_fold_slice_range(x->dims[a], starts[i], ends[i], s, &first[a], &dims[a]);
	}
	int r = alloc_out(e, 0, x->dtype, x->rank, dims);
	if (r != EV_DONE)
		return r;
	int64_t xs[WH_MAX_RANK];
	strides_of(x->dims, x->rank, xs);
	size_t es = wh_dtype_size(x->dtype);
	for (uint64_t o = 0; o < e->out[0].count; o++) {
		uint64_t rem = o;
		int64_t off = 0;
		for (int32_t k = x->rank - 1; k >= 0; k--) {
			int64_t ik = (int64_t)(rem % (uint64_t)dims[k]);
			rem /= (uint64_t)dims[k];
			off += (first[k] + ik * step[k]) * xs[k];
		}
		memcpy((char *)e->out[0].data + o * es, (const char *)x->data + (uint64_t)off * es, es);
	}
	return EV_DONE;
}

/* Copies src broadcast to the output shape. */
static int bcast_copy(struct ev *e, const struct wh_tensor *src, int32_t rank, const int64_t *dims)
{
	int r = alloc_out(e, 0, src->dtype, rank, dims);
	if (r != EV_DONE)
		return r;
	int64_t st[WH_MAX_RANK];
	bcast_strides(src, rank, st);
	size_t es = wh_dtype_size(src->dtype);
	for (uint64_t o = 0; o < e->out[0].count; o++)
		memcpy((char *)e->out[0].data + o * es, (const char *)src->data + offset_of(o, dims, rank, st) * es, es);
	return EV_DONE;
}

static int ev_expand(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1))
		return EV_SKIP;
	int64_t shape[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(&e->in[1], shape, WH_MAX_RANK, &n))
		return EV_SKIP;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	tmp.rank = (int32_t)n;
	for (uint32_t i = 0; i < n; i++) {
		if (shape[i] < 0)
			return EV_SKIP;
		tmp.dims[i] = shape[i];
	}
	const struct wh_tensor *ts[2] = {&e->in[0], &tmp};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!bcast_shape(ts, 2, &rank, dims))
		return EV_SKIP;
	return bcast_copy(e, &e->in[0], rank, dims);
}

static int ev_tile(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t rep[WH_MAX_RANK], dims[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(&e->in[1], rep, WH_MAX_RANK, &n) || (int32_t)n != x->rank)
		return EV_SKIP;
	for (uint32_t i = 0; i < n; i++)
		if (rep[i] < 0 || !wh_mul_i64(x->dims[i], rep[i], &dims[i]))
			return EV_SKIP;
	int r = alloc_out(e, 0, x->dtype, x->rank, dims);
	if (r != EV_DONE)
		return r;
	int64_t xs[WH_MAX_RANK];
	strides_of(x->dims, x->rank, xs);
	size_t es = wh_dtype_size(x->dtype);
	for (uint64_t o = 0; o < e->out[0].count; o++) {
		uint64_t rem = o, off = 0;
		for (int32_t k = x->rank - 1; k >= 0; k--) {
			uint64_t ik = rem % (uint64_t)dims[k];
			rem /= (uint64_t)dims[k];
			off += (ik % (uint64_t)x->dims[k]) * (uint64_t)xs[k];
		}
		memcpy((char *)e->out[0].data + o * es, (const char *)x->data + off * es, es);
	}
	return EV_DONE;
}

static int ev_constant_of_shape(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(&e->in[0], dims, WH_MAX_RANK, &n))
		return EV_SKIP;
	for (uint32_t i = 0; i < n; i++)
		if (dims[i] < 0)
			return EV_SKIP;
	struct wh_tensor val;
	wh_tensor_init(&val);
	const struct wh_attr *a = wh_node_attr(e->n, "value");
	enum wh_dtype dt = WH_DT_FLOAT;
	if (a && a->type == WH_ATTR_TENSOR && a->t) {
		if (wh_fold_const_tensor(a->t, &val) != WH_OK || val.count != 1) {
			wh_tensor_release(&val);
			return EV_SKIP;
		}
		dt = val.dtype;
	}
	int r = alloc_out(e, 0, dt, (int32_t)n, dims);
	if (r == EV_DONE) {
		size_t es = wh_dtype_size(dt);
		for (uint64_t i = 0; i < e->out[0].count; i++) {
			if (val.data)
				memcpy((char *)e->out[0].data + i * es, val.data, es);
			else
				memset((char *)e->out[0].data + i * es, 0, es);
		}
	}
	wh_tensor_release(&val);
	return r;
}

static int ev_range(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1) || !has_in(e, 2))
		return EV_SKIP;
	const struct wh_tensor *s = &e->in[0], *l = &e->in[1], *d = &e->in[2];
	if (s->count != 1 || l->count != 1 || d->count != 1 || s->dtype != l->dtype || s->dtype != d->dtype)
		return EV_SKIP;
	enum wh_dtype dt = s->dtype;
	int64_t n;
	if (is_floatish(dt)) {
		double fs = wh_fold_get_f(s, 0), fl = wh_fold_get_f(l, 0), fd = wh_fold_get_f(d, 0);
		if (fd == 0 || !isfinite(fs) || !isfinite(fl) || !isfinite(fd))
			return EV_SKIP;
		double c = ceil((fl - fs) / fd);
		if (!(c < 9.0e15))
			return EV_SKIP;
		n = c > 0 ? (int64_t)c : 0;
	} else {
		int64_t is = wh_fold_get_i(s, 0), il = wh_fold_get_i(l, 0), id = wh_fold_get_i(d, 0);
		if (id == 0)
			return EV_SKIP;
		/* ceil((limit - start) / delta) without overflow: work in 128 bits */
		__int128 span = (__int128)il - is, q = span / id;
		if (span % id != 0 && ((span < 0) == (id < 0)))
			q++;
		if (q > (__int128)INT64_MAX)
			return EV_SKIP;
		n = q > 0 ? (int64_t)q : 0;
	}
	int r = alloc_out(e, 0, dt, 1, &n);
	if (r != EV_DONE)
		return r;
	struct wh_tensor *o = &e->out[0];
	/* accumulate in the element type, as ONNX Runtime does */
	if (dt == WH_DT_FLOAT) {
		float v = (float)wh_fold_get_f(s, 0), dd = (float)wh_fold_get_f(d, 0);
		for (int64_t i = 0; i < n; i++, v += dd)
			((float *)o->data)[i] = v;
	} else if (is_floatish(dt)) {
		double v = wh_fold_get_f(s, 0), dd = wh_fold_get_f(d, 0);
		for (int64_t i = 0; i < n; i++, v += dd)
			put_f(o, (uint64_t)i, v);
	} else {
		int64_t v = wh_fold_get_i(s, 0), dd = wh_fold_get_i(d, 0);
		for (int64_t i = 0; i < n; i++, v = (int64_t)((uint64_t)v + (uint64_t)dd))
			put_i(o, (uint64_t)i, v);
	}
	return EV_DONE;
}

static int ev_split(struct ev *e)
{
	if (!has_in(e, 0) || e->nout < 1)
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int32_t axis;
	if (!norm_axis(wh_node_attr_int(e->n, "axis", 0), x->rank, &axis))
		return EV_SKIP;
	int64_t split[64];
	uint32_t ns = 0;
	if (e->nout > 64)
		return EV_SKIP;
	int64_t d = x->dims[axis];
	if (e->opset >= 13 && has_in(e, 1)) {
		if (!int_list(&e->in[1], split, 64, &ns))
			return EV_SKIP;
	} else if (e->opset < 13 && wh_node_attr_ints(e->n, "split", &(const int64_t *){NULL}) >= 0) {
		if (!attr_int_list(e->n, "split", split, 64, &ns))
			return EV_SKIP;
	} else {
		ns = e->nout;
		int64_t chunk = d / ns + (d % ns != 0);
		if (wh_node_attr_int(e->n, "num_outputs", 0) <= 0 && d % ns)
			return EV_SKIP;
		for (uint32_t i = 0; i < ns; i++) {
			int64_t left = d - chunk * (int64_t)i;
			split[i] = left < 0 ? 0 : (left < chunk ? left : chunk);
		}
	}
	if (ns != e->nout)
		return EV_SKIP;
	int64_t total = 0;
	for (uint32_t i = 0; i < ns; i++) {
		if (split[i] < 0 || !wh_add_i64(total, split[i], &total))
			return EV_SKIP;
	}
	if (total != d)
		return EV_SKIP;
	size_t es = wh_dtype_size(x->dtype);
	uint64_t outer = 1, inner = 1;
	for (int32_t i = 0; i < axis; i++)
		outer *= (uint64_t)x->dims[i];
	for (int32_t i = axis + 1; i < x->rank; i++)
		inner *= (uint64_t)x->dims[i];
	if (x->count == 0)
		outer = 0; /* the products above may have wrapped; nothing to copy anyway */
	int64_t pos = 0;
	for (uint32_t k = 0; k < ns; k++) {
		int64_t dims[WH_MAX_RANK];
		memcpy(dims, x->dims, sizeof dims);
		dims[axis] = split[k];
		int r = alloc_out(e, k, x->dtype, x->rank, dims);
		if (r != EV_DONE)
			return r;
		uint64_t chunk = (uint64_t)split[k] * inner * es;
		for (uint64_t o = 0; o < outer && chunk; o++)
			memcpy((char *)e->out[k].data + o * chunk,
			       (const char *)x->data + ((o * (uint64_t)d + (uint64_t)pos) * inner) * es, chunk);
		pos += split[k];
	}
	return EV_DONE;
}

static int ev_pad(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	char buf[16];
	if (strcmp(wh_node_attr_string(e->n, "mode", "constant", buf, sizeof buf), "constant"))
		return EV_SKIP;
	int64_t pads[2 * WH_MAX_RANK], axes[WH_MAX_RANK];
	uint32_t np, na = 0;
	double cval = 0;
	if (e->opset < 11) {
		if (!attr_int_list(e->n, e->opset < 2 ? "paddings" : "pads", pads, 2 * WH_MAX_RANK, &np))
			return EV_SKIP;
		cval = wh_node_attr_float(e->n, "value", 0);
	} else {
		if (!has_in(e, 1) || !int_list(&e->in[1], pads, 2 * WH_MAX_RANK, &np))
			return EV_SKIP;
		if (has_in(e, 2)) {
			if (e->in[2].count != 1)
				return EV_SKIP;
			cval = wh_fold_get_f(&e->in[2], 0);
		}
		if (has_in(e, 3) && !int_list(&e->in[3], axes, WH_MAX_RANK, &na))
			return EV_SKIP;
	}
	int64_t pb[WH_MAX_RANK] = {0}, pe[WH_MAX_RANK] = {0}, dims[WH_MAX_RANK];
	if (na) {
		if (np != 2 * na)
			return EV_SKIP;
		for (uint32_t i = 0; i < na; i++) {
			int32_t a;
			if (!norm_axis(axes[i], x->rank, &a))
				return EV_SKIP;
			pb[a] = pads[i];
			pe[a] = pads[na + i];
		}
	} else {
		if ((int32_t)np != 2 * x->rank)
			return EV_SKIP;
		for (int32_t i = 0; i < x->rank; i++) {
			pb[i] = pads[i];
			pe[i] = pads[x->rank + i];
		}
	}
	for (int32_t i = 0; i < x->rank; i++) {
		if (!wh_add_i64(x->dims[i], pb[i], &dims[i]) || !wh_add_i64(dims[i], pe[i], &dims[i]) || dims[i] < 0)
			return EV_SKIP;
	}
	int r = alloc_out(e, 0, x->dtype, x->rank, dims);
	if (r != EV_DONE)
		return r;
	int64_t xs[WH_MAX_RANK];
	strides_of(x->dims, x->rank, xs);
	size_t es = wh_dtype_size(x->dtype);
	struct wh_tensor *o = &e->out[0];
	for (uint64_t i = 0; i < o->count; i++) {
		uint64_t rem = i;
		int64_t off = 0;
		bool inside = true;
		for (int32_t k = x->rank - 1; k >= 0; k--) {
			int64_t ik = (int64_t)(rem % (uint64_t)dims[k]) - pb[k];
			rem /= (uint64_t)dims[k];
			if (ik < 0 || ik >= x->dims[k])
				inside = false;
			off += ik * xs[k];
		}
		if (inside)
			memcpy((char *)o->data + i * es, (const char *)x->data + (uint64_t)off * es, es);
		else
			put_f(o, i, cval);
	}
	return EV_DONE;
}

static int ev_reduce(struct ev *e, const char *op)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	bool fl = is_floatish(x->dtype);
	int64_t axes[WH_MAX_RANK];
	uint32_t n;
	bool given;
	if (!axes_of(e, !strcmp(op, "ReduceSum") ? 13 : 18, axes, &n, &given))
		return EV_SKIP;
	bool keep = wh_node_attr_int(e->n, "keepdims", 1) != 0;
	bool red[WH_MAX_RANK] = {false};
	if (n == 0) {
		if (wh_node_attr_int(e->n, "noop_with_empty_axes", 0))
			return share_out(e, 0, x, x->rank, x->dims);
		for (int32_t i = 0; i < x->rank; i++)
			red[i] = true;
	}
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!norm_axis(axes[i], x->rank, &a))
			return EV_SKIP;
		red[a] = true;
	}
	bool is_sum = !strcmp(op, "ReduceSum"), is_mean = !strcmp(op, "ReduceMean"),
	     is_prod = !strcmp(op, "ReduceProd"), is_min = !strcmp(op, "ReduceMin"),
	     is_max = !strcmp(op, "ReduceMax"), is_l1 = !strcmp(op, "ReduceL1"), is_l2 = !strcmp(op, "ReduceL2"),
	     is_ss = !strcmp(op, "ReduceSumSquare"), is_ls = !strcmp(op, "ReduceLogSum"),
	     is_lse = !strcmp(op, "ReduceLogSumExp");
	if (!fl && !(is_sum || is_prod || is_min || is_max || is_mean))
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK], full[WH_MAX_RANK];
	int32_t r = 0;
	uint64_t group = 1;
	for (int32_t i = 0; i < x->rank; i++) {
		full[i] = red[i] ? 1 : x->dims[i];
		if (red[i])
			group *= (uint64_t)x->dims[i];
		if (!red[i] || keep)
			dims[r++] = full[i];
	}
	if (group == 0 && (is_min || is_max))
		return EV_SKIP;
	int rr = alloc_out(e, 0, x->dtype, r, dims);
	if (rr != EV_DONE)
		return rr;
	struct wh_tensor *o = &e->out[0];
	double *accf = NULL;
	int64_t *acci = NULL;
	if (fl)
		accf = malloc((o->count ? o->count : 1) * sizeof *accf);
	else
		acci = malloc((o->count ? o->count : 1) * sizeof *acci);
	if (!accf && !acci)
		return wh_error(WH_ERR_NOMEM, "constant folding: out of memory (free some memory)");
	double f0 = is_prod ? 1 : (is_min ? INFINITY : (is_max ? -INFINITY : 0));
	int64_t i0 = is_prod ? 1 : (is_min ? INT64_MAX : (is_max ? INT64_MIN : 0));
	for (uint64_t i = 0; i < o->count; i++) {
		if (fl)
			accf[i] = f0;
		else
			acci[i] = i0;
	}
	int64_t os[WH_MAX_RANK];
	strides_of(full, x->rank, os);
	for (int32_t k = 0; k < x->rank; k++)
		if (red[k])
			os[k] = 0;
	for (uint64_t i = 0; i < x->count; i++) {
		uint64_t oi = offset_of(i, x->dims, x->rank, os);
		if (fl) {
			double v = wh_fold_get_f(x, i), *a = &accf[oi];
			if (is_sum || is_mean || is_ls) *a += v;
			else if (is_prod) *a *= v;
			else if (is_min) *a = (isnan(v) || v < *a) ? v : *a;
			else if (is_max) *a = (isnan(v) || v > *a) ? v : *a;
			else if (is_l1) *a += fabs(v);
			else if (is_l2 || is_ss) *a += v * v;
			else if (is_lse) *a += exp(v);
		} else {
			int64_t v = wh_fold_get_i(x, i), *a = &acci[oi];
			if (is_sum || is_mean) *a = (int64_t)((uint64_t)*a + (uint64_t)v);
			else if (is_prod) *a = (int64_t)((uint64_t)*a * (uint64_t)v);
			else if (is_min) *a = v < *a ? v : *a;
			else *a = v > *a ? v : *a;
		}
	}
	for (uint64_t i = 0; i < o->count; i++) {
		if (fl) {
			double v = accf[i];
			if (is_mean) v = group ? v / (double)group : NAN;
			else if (is_l2) v = sqrt(v);
			else if (is_ls || is_lse) v = log(v);
			put_f(o, i, v);
		} else {
			int64_t v = acci[i];
			if (is_mean)
				v = group ? v / (int64_t)group : 0;
			put_i(o, i, v);
		}
	}
	free(accf);
	free(acci);
	return EV_DONE;
}

static int ev_matmul(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1))
		return EV_SKIP;
	const struct wh_tensor *a = &e->in[0], *b = &e->in[1];
	if (a->dtype != b->dtype || a->rank < 1 || b->rank < 1 || a->dtype == WH_DT_BOOL)
		return EV_SKIP;
	/* promote 1-D operands, broadcast the batch dimensions, drop the promoted ones after */
	struct wh_tensor A = *a, B = *b;
	if (A.rank == 1) {
		A.rank = 2;
		A.dims[1] = a->dims[0];
		A.dims[0] = 1;
	}
	if (B.rank == 1) {
		B.rank = 2;
		B.dims[1] = 1;
		B.dims[0] = b->dims[0];
	}
	int64_t M = A.dims[A.rank - 2], K = A.dims[A.rank - 1], N = B.dims[B.rank - 1];
	if (B.dims[B.rank - 2] != K)
		return EV_SKIP;
	struct wh_tensor Ab = A, Bb = B;
	Ab.rank -= 2;
	Bb.rank -= 2;
	const struct wh_tensor *ts[2] = {&Ab, &Bb};
	int32_t br;
	int64_t bd[WH_MAX_RANK];
	if (!bcast_shape(ts, 2, &br, bd) || br + 2 > WH_MAX_RANK)
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	int32_t r = 0;
	for (int32_t i = 0; i < br; i++)
		dims[r++] = bd[i];
	if (a->rank > 1)
		dims[r++] = M;
	if (b->rank > 1)
		dims[r++] = N;
	uint64_t batch = 1, work;
	for (int32_t i = 0; i < br; i++)
		batch *= (uint64_t)bd[i];
	if (!wh_mul_u64(batch, (uint64_t)M, &work) || !wh_mul_u64(work, (uint64_t)N, &work) ||
	    !wh_mul_u64(work, (uint64_t)K, &work) || work > EV_MAX_MATMUL_WORK)
		return EV_SKIP;
	int rr = alloc_out(e, 0, a->dtype, r, dims);
	if (rr != EV_DONE)
		return rr;
	int64_t sa[WH_MAX_RANK], sb[WH_MAX_RANK];
	bcast_strides(&Ab, br, sa);
	bcast_strides(&Bb, br, sb);
	bool fl = is_floatish(a->dtype);
	uint64_t mk = (uint64_t)(M * K), kn = (uint64_t)(K * N);
	for (uint64_t bi = 0; bi < batch; bi++) {
		uint64_t oa = offset_of(bi, bd, br, sa) * mk, ob = offset_of(bi, bd, br, sb) * kn;
		for (int64_t i = 0; i < M; i++)
			for (int64_t j = 0; j < N; j++) {
				uint64_t oi = (bi * (uint64_t)M + (uint64_t)i) * (uint64_t)N + (uint64_t)j;
				if (fl) {
					double acc = 0;
					for (int64_t k = 0; k < K; k++)
						acc += wh_fold_get_f(a, oa + (uint64_t)(i * K + k)) *
						       wh_fold_get_f(b, ob + (uint64_t)(k * N + j));
					put_f(&e->out[0], oi, acc);
				} else {
					uint64_t acc = 0;
					for (int64_t k = 0; k < K; k++)
						acc += (uint64_t)wh_fold_get_i(a, oa + (uint64_t)(i * K + k)) *
						       (uint64_t)wh_fold_get_i(b, ob + (uint64_t)(k * N + j));
					put_i(&e->out[0], oi, (int64_t)acc);
				}
			}
	}
	return EV_DONE;
}

static int ev_nonzero(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int64_t nnz = 0;
	for (uint64_t i = 0; i < x->count; i++)
		nnz += wh_fold_get_f(x, i) != 0;
	int32_t rank = x->rank ? x->rank : 1;
	int64_t dims[2] = {rank, nnz};
	int r = alloc_out(e, 0, WH_DT_INT64, 2, dims);
	if (r != EV_DONE)
		return r;
	int64_t *o = e->out[0].data, j = 0;
	for (uint64_t i = 0; i < x->count; i++) {
		if (wh_fold_get_f(x, i) == 0)
			continue;
		uint64_t rem = i;
		for (int32_t k = x->rank - 1; k >= 0; k--) {
			o[k * nnz + j] = (int64_t)(rem % (uint64_t)x->dims[k]);
			rem /= (uint64_t)x->dims[k];
		}
		if (!x->rank)
			o[j] = 0;
		j++;
	}
	return EV_DONE;
}

static int ev_dropout(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	/* training mode (input 2) would drop values at random: not foldable */
	if (has_in(e, 2) && (e->in[2].count != 1 || wh_fold_get_i(&e->in[2], 0)))
		return EV_SKIP;
	const struct wh_tensor *x = &e->in[0];
	int r = share_out(e, 0, x, x->rank, x->dims);
	if (r != EV_DONE || e->nout < 2)
		return r;
	if ((r = alloc_out(e, 1, WH_DT_BOOL, x->rank, x->dims)) != EV_DONE)
		return r;
	if (e->out[1].count)
		memset(e->out[1].data, 1, e->out[1].count);
	return EV_DONE;
}

/* ---- constants ---- */

enum wh_status wh_fold_const_tensor(const struct wh_const_tensor *ct, struct wh_tensor *t)
{
	if (!wh_fold_dtype_ok(ct->dtype))
		return wh_error(WH_ERR_UNSUPPORTED, "constant '%s': type %s is not evaluated", ct->name ? ct->name : "",
				wh_dtype_name(ct->dtype));
	return wh_tensor_from_raw(t, ct->dtype, ct->rank, ct->dims, ct->data);
}

enum wh_status wh_fold_constant_node(const struct wh_node *n, struct wh_tensor *t, bool *found_out)
{
	*found_out = false;
	for (uint32_t i = 0; i < n->n_attrs; i++) {
		const struct wh_attr *a = &n->attrs[i];
		enum wh_status st;
		int64_t len = (int64_t)a->n;
		if (!strcmp(a->name, "value") && a->type == WH_ATTR_TENSOR && a->t) {
			if (!wh_fold_dtype_ok(a->t->dtype))
				return WH_OK;
			if ((st = wh_fold_const_tensor(a->t, t)) != WH_OK)
				return st;
		} else if (!strcmp(a->name, "value_float") && a->type == WH_ATTR_FLOAT) {
			if ((st = wh_tensor_alloc(t, WH_DT_FLOAT, 0, NULL)) != WH_OK)
				return st;
			((float *)t->data)[0] = a->f;
		} else if (!strcmp(a->name, "value_int") && a->type == WH_ATTR_INT) {
			if ((st = wh_tensor_alloc(t, WH_DT_INT64, 0, NULL)) != WH_OK)
				return st;
			((int64_t *)t->data)[0] = a->i;
		} else if (!strcmp(a->name, "value_floats") && a->type == WH_ATTR_FLOATS) {
			if ((st = wh_tensor_alloc(t, WH_DT_FLOAT, 1, &len)) != WH_OK)
				return st;
			if (a->n)
				memcpy(t->data, a->floats, a->n * sizeof(float));
		} else if (!strcmp(a->name, "value_ints") && a->type == WH_ATTR_INTS) {
			if ((st = wh_tensor_alloc(t, WH_DT_INT64, 1, &len)) != WH_OK)
				return st;
			if (a->n)
				memcpy(t->data, a->ints, a->n * sizeof(int64_t));
		} else {
			continue;
		}
		*found_out = true;
		return WH_OK;
	}
	return WH_OK;
}

/* ---- dispatch ---- */

static const char *const unary_ops[] = {
	"Abs", "Neg", "Floor", "Ceil", "Round", "Sqrt", "Exp", "Log", "Reciprocal", "Relu", "Sigmoid",
	"Tanh", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
	"Erf", "Sign", "Softplus", "Softsign", "HardSigmoid", "HardSwish", "LeakyRelu", "Elu", "Not",
	"IsNaN", "IsInf", "Clip",
};

static int dispatch(struct ev *e)
{
	const char *op = e->n->op_type;
	if (!strcmp(op, "Constant")) {
		bool found;
		enum wh_status st = wh_fold_constant_node(e->n, &e->out[0], &found);
		if (st == WH_ERR_NOMEM)
			return st;
		return st == WH_OK && found ? EV_DONE : EV_SKIP;
	}
	if (!strcmp(op, "Shape"))
		return ev_shape(e);
	if (!strcmp(op, "Size"))
		return ev_size(e);
	for (uint32_t i = 0; i < e->nin; i++)
		if (has_in(e, i) && !wh_fold_dtype_ok(e->in[i].dtype))
			return EV_SKIP;
	for (size_t i = 0; i < sizeof ew_table / sizeof ew_table[0]; i++)
		if (!strcmp(op, ew_table[i].name))
			return ev_elementwise(e, ew_table[i].op, ew_table[i].variadic, ew_table[i].compare);
	for (size_t i = 0; i < sizeof unary_ops / sizeof unary_ops[0]; i++)
		if (!strcmp(op, unary_ops[i]))
			return ev_unary(e, op);
	if (!strcmp(op, "Identity"))
		return has_in(e, 0) ? share_out(e, 0, &e->in[0], e->in[0].rank, e->in[0].dims) : EV_SKIP;
	if (!strcmp(op, "Cast"))
		return ev_cast(e, (enum wh_dtype)wh_node_attr_int(e->n, "to", 0));
	if (!strcmp(op, "CastLike"))
		return has_in(e, 1) ? ev_cast(e, e->in[1].dtype) : EV_SKIP;
	if (!strcmp(op, "Where"))
		return ev_where(e);
	if (!strcmp(op, "Reshape"))
		return ev_reshape(e);
	if (!strcmp(op, "Flatten"))
		return ev_flatten(e);
	if (!strcmp(op, "Squeeze"))
		return ev_squeeze(e);
	if (!strcmp(op, "Unsqueeze"))
		return ev_unsqueeze(e);
	if (!strcmp(op, "Transpose"))
		return ev_transpose(e);
	if (!strcmp(op, "Concat"))
		return ev_concat(e);
	if (!strcmp(op, "Gather"))
		return ev_gather(e);
	if (!strcmp(op, "Slice"))
		return ev_slice(e);
	if (!strcmp(op, "Expand"))
		return ev_expand(e);
	if (!strcmp(op, "Tile"))
		return ev_tile(e);
	if (!strcmp(op, "ConstantOfShape"))
		return ev_constant_of_shape(e);
	if (!strcmp(op, "Range"))
		return ev_range(e);
	if (!strcmp(op, "Split"))
		return ev_split(e);
	if (!strcmp(op, "Pad"))
		return ev_pad(e);
	if (!strncmp(op, "Reduce", 6))
		return ev_reduce(e, op);
	if (!strcmp(op, "MatMul"))
		return ev_matmul(e);
	if (!strcmp(op, "NonZero"))
		return ev_nonzero(e);
	if (!strcmp(op, "Dropout"))
		return ev_dropout(e);
	return EV_SKIP;
}

enum wh_status wh_fold_eval(const struct wh_node *n, int64_t opset, const struct wh_tensor *in,
			    struct wh_tensor *out, uint64_t max_elements, bool *done_out)
{
	*done_out = false;
	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
		return WH_OK;
	struct ev e = {n, opset, in, n->n_inputs, out, n->n_outputs, max_elements};
	int r = dispatch(&e);
	if (r < 0)
		return (enum wh_status)r;
	if (r == EV_DONE) {
		/* every requested output must have been produced */
		for (uint32_t k = 0; k < n->n_outputs; k++)
			if (n->outputs[k] != WH_NONE && out[k].dtype == WH_DT_UNDEFINED)
				return WH_OK;
		*done_out = true;
	}
	return WH_OK;
}
