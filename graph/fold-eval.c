#include "graph/fold-eval.h"

#include "graph/onnx-io.h"

#include <stdlib.h>
#include <string.h>

/* Shape inference's own evaluator, for graph-only callers: the integer shape arithmetic that
 * makes Reshape/Expand/Slice/ConstantOfShape/Range targets known (Shape, Gather, Concat,
 * Slice, Unsqueeze, integer +, -, *, /, ...). Everything else, and everything when the
 * caller passes the executor's evaluator (graph/shape.h), is computed by the executor's
 * kernels: this file is deliberately not a second implementation of the ops. */

/* Internal results of an op evaluation: done, not handled (no error), or a negative
 * enum wh_status. */
#define EV_DONE 1
#define EV_SKIP 0

/* Operand counts beyond this are not folded (variadic Max/Min of many constants is rare). */
#define EV_MAX_OPERANDS 8

struct ev {
	const struct wh_node *n;
	int64_t opset;
	const struct wh_tensor *const *in;
	uint32_t nin;
	struct wh_tensor *out;
	uint32_t nout;
	uint64_t max;
};

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

/* The element types this evaluator computes with: byte-sized or wider integers and bool. */
static bool int_ok(enum wh_dtype dt)
{
	return dt == WH_DT_BOOL || (wh_dtype_is_int(dt) && wh_fold_dtype_ok(dt));
}

/* ---- helpers ---- */

static bool has_in(const struct ev *e, uint32_t i)
{
	return i < e->nin && e->in[i] != NULL;
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
		vals[i] = wh_tensor_get_i64(t, i);
	*n_out = (uint32_t)t->count;
	return true;
}

bool wh_fold_attr_ints(const struct wh_node *n, const char *name, int64_t *vals, uint32_t cap, uint32_t *n_out)
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

/* Element offset in a broadcast operand of output element o. */
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

/* ---- integer elementwise ---- */

enum ew_op { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_MOD, EW_MAX, EW_MIN, EW_EQ, EW_LT, EW_GT, EW_LE, EW_GE, EW_AND, EW_OR };

static const struct {
	const char *name;
	enum ew_op op;
	bool variadic, compare;
} ew_table[] = {
	{"Add", EW_ADD, false, false}, {"Sub", EW_SUB, false, false}, {"Mul", EW_MUL, false, false},
	{"Div", EW_DIV, false, false}, {"Mod", EW_MOD, false, false}, {"Max", EW_MAX, true, false},
	{"Min", EW_MIN, true, false}, {"Equal", EW_EQ, false, true}, {"Less", EW_LT, false, true},
	{"Greater", EW_GT, false, true}, {"LessOrEqual", EW_LE, false, true},
	{"GreaterOrEqual", EW_GE, false, true}, {"And", EW_AND, false, false}, {"Or", EW_OR, false, false},
};

/* One step of an integer operation; false when undefined (division by zero, overflow). */
static bool ew_int(enum ew_op op, int64_t a, int64_t b, bool fmod_mode, int64_t *r)
{
	switch (op) {
	case EW_ADD: *r = (int64_t)((uint64_t)a + (uint64_t)b); return true;
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
	case EW_MAX: *r = a > b ? a : b; return true;
	case EW_MIN: *r = a < b ? a : b; return true;
	case EW_EQ: *r = a == b; return true;
	case EW_LT: *r = a < b; return true;
	case EW_GT: *r = a > b; return true;
	case EW_LE: *r = a <= b; return true;
	case EW_GE: *r = a >= b; return true;
	case EW_AND: *r = a && b; return true;
	case EW_OR: *r = a || b; return true;
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
		if (!has_in(e, i) || e->in[i]->dtype != e->in[0]->dtype)
			return EV_SKIP;
		ts[i] = e->in[i];
	}
	enum wh_dtype dt = ts[0]->dtype;
	if ((op == EW_AND || op == EW_OR) != (dt == WH_DT_BOOL))
		return EV_SKIP;
	int32_t rank;
	int64_t dims[WH_MAX_RANK], strides[EV_MAX_OPERANDS][WH_MAX_RANK];
	if (!wh_broadcast_shapes(n, ts, &rank, dims))
		return EV_SKIP;
	int r = alloc_out(e, 0, compare ? WH_DT_BOOL : dt, rank, dims);
	if (r != EV_DONE)
		return r;
	for (uint32_t i = 0; i < n; i++)
		wh_broadcast_strides(ts[i], rank, dims, strides[i]);
	bool fmod_mode = wh_node_attr_int(e->n, "fmod", 0) != 0;
	struct wh_tensor *out = &e->out[0];
	for (uint64_t o = 0; o < out->count; o++) {
		int64_t acc = wh_tensor_get_i64(ts[0], offset_of(o, dims, rank, strides[0]));
		for (uint32_t i = 1; i < n; i++)
			if (!ew_int(op, acc, wh_tensor_get_i64(ts[i], offset_of(o, dims, rank, strides[i])), fmod_mode, &acc))
				return EV_SKIP;
		wh_tensor_set_int_wrap(out, o, (uint64_t)acc);
	}
	return EV_DONE;
}

static int ev_unary(struct ev *e)
{
	const char *op = e->n->op_type;
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0];
	bool not = !strcmp(op, "Not");
	if (not != (x->dtype == WH_DT_BOOL))
		return EV_SKIP;
	int r = alloc_out(e, 0, x->dtype, x->rank, x->dims);
	if (r != EV_DONE)
		return r;
	for (uint64_t i = 0; i < x->count; i++) {
		int64_t v = wh_tensor_get_i64(x, i);
		uint64_t neg = 0 - (uint64_t)v;
		wh_tensor_set_int_wrap(&e->out[0], i, not ? (uint64_t)!v : !strcmp(op, "Neg") || v < 0 ? neg : (uint64_t)v);
	}
	return EV_DONE;
}

static int ev_where(struct ev *e)
{
	if (e->nin != 3 || !has_in(e, 0) || !has_in(e, 1) || !has_in(e, 2) || e->in[0]->dtype != WH_DT_BOOL ||
	    e->in[1]->dtype != e->in[2]->dtype)
		return EV_SKIP;
	const struct wh_tensor *ts[3] = {e->in[0], e->in[1], e->in[2]};
	int32_t rank;
	int64_t dims[WH_MAX_RANK], st[3][WH_MAX_RANK];
	if (!wh_broadcast_shapes(3, ts, &rank, dims))
		return EV_SKIP;
	int r = alloc_out(e, 0, ts[1]->dtype, rank, dims);
	if (r != EV_DONE)
		return r;
	for (int i = 0; i < 3; i++)
		wh_broadcast_strides(ts[i], rank, dims, st[i]);
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

/* ---- type and shape ---- */

static int ev_cast(struct ev *e)
{
	enum wh_dtype to = (enum wh_dtype)wh_node_attr_int(e->n, "to", 0);
	if (!has_in(e, 0) || !int_ok(to))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0];
	if (to == x->dtype)
		return share_out(e, 0, x, x->rank, x->dims);
	int r = alloc_out(e, 0, to, x->rank, x->dims);
	if (r != EV_DONE)
		return r;
	for (uint64_t i = 0; i < x->count; i++)
		wh_tensor_set_int_wrap(&e->out[0], i, (uint64_t)wh_tensor_get_i64(x, i));
	return EV_DONE;
}

static int ev_range(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1) || !has_in(e, 2))
		return EV_SKIP;
	const struct wh_tensor *s = e->in[0], *l = e->in[1], *d = e->in[2];
	if (s->count != 1 || l->count != 1 || d->count != 1 || s->dtype != l->dtype || s->dtype != d->dtype)
		return EV_SKIP;
	int64_t is = wh_tensor_get_i64(s, 0), il = wh_tensor_get_i64(l, 0), id = wh_tensor_get_i64(d, 0);
	if (id == 0)
		return EV_SKIP;
	/* ceil((limit - start) / delta) without overflow: work in 128 bits */
	__int128 span = (__int128)il - is, q = span / id;
	if (span % id != 0 && ((span < 0) == (id < 0)))
		q++;
	if (q > (__int128)INT64_MAX)
		return EV_SKIP;
	int64_t n = q > 0 ? (int64_t)q : 0;
	int r = alloc_out(e, 0, s->dtype, 1, &n);
	if (r != EV_DONE)
		return r;
	int64_t v = is;
	for (int64_t i = 0; i < n; i++, v = (int64_t)((uint64_t)v + (uint64_t)id))
		wh_tensor_set_int_wrap(&e->out[0], (uint64_t)i, (uint64_t)v);
	return EV_DONE;
}

void wh_fold_shape_range(const struct wh_node *n, int32_t rank, int64_t *start_out, int64_t *len_out)
{
	int64_t start = wh_node_attr_int(n, "start", 0), end = wh_node_attr_int(n, "end", rank);
	if (start < 0)
		start += rank;
	if (end < 0)
		end += rank;
	start = start < 0 ? 0 : (start > rank ? rank : start);
	end = end < 0 ? 0 : (end > rank ? rank : end);
	*start_out = start;
	*len_out = end > start ? end - start : 0;
}

static int ev_shape(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0];
	int64_t start, len;
	wh_fold_shape_range(e->n, x->rank, &start, &len);
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
	((int64_t *)e->out[0].data)[0] = (int64_t)e->in[0]->count;
	return EV_DONE;
}

static int ev_reshape(struct ev *e)
{
	if (!has_in(e, 0) || !has_in(e, 1))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0];
	int64_t shape[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(e->in[1], shape, WH_MAX_RANK, &n))
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

/* Axes from the attribute (before opset 13) or the second input. */
static bool axes_of(struct ev *e, int64_t opset_input, int64_t *axes, uint32_t *n, bool *given)
{
	*given = false;
	*n = 0;
	if (e->opset >= opset_input) {
		if (!has_in(e, 1))
			return e->nin < 2 || !e->in[1];
		*given = true;
		return int_list(e->in[1], axes, WH_MAX_RANK, n);
	}
	const int64_t *v;
	int64_t cnt = wh_node_attr_ints(e->n, "axes", &v);
	if (cnt < 0)
		return true;
	*given = true;
	return wh_fold_attr_ints(e->n, "axes", axes, WH_MAX_RANK, n);
}

/* Squeeze and Unsqueeze: only the shape changes (the data is shared). */
static int ev_squeeze(struct ev *e)
{
	bool unsq = !strcmp(e->n->op_type, "Unsqueeze");
	int64_t axes[WH_MAX_RANK], dims[WH_MAX_RANK];
	uint32_t n;
	bool given, mark[WH_MAX_RANK] = {false};
	if (!has_in(e, 0) || !axes_of(e, 13, axes, &n, &given) || (unsq && !given))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0];
	/* Unsqueeze's axes index the output, Squeeze's the input; without axes, Squeeze drops
	 * every 1 */
	int32_t r = unsq ? x->rank + (int32_t)n : x->rank;
	if (r > WH_MAX_RANK)
		return EV_SKIP;
	for (int32_t i = 0; !given && i < x->rank; i++)
		mark[i] = x->dims[i] == 1;
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!wh_norm_axis(axes[i], r, &a) || (unsq ? mark[a] : x->dims[a] != 1))
			return EV_SKIP;
		mark[a] = true;
	}
	int32_t k = 0;
	for (int32_t i = 0, j = 0; i < r; i++) {
		if (unsq)
			dims[k++] = mark[i] ? 1 : x->dims[j++];
		else if (!mark[i])
			dims[k++] = x->dims[i];
	}
	return share_out(e, 0, x, k, dims);
}

static int ev_concat(struct ev *e)
{
	if (e->nin < 1 || !has_in(e, 0))
		return EV_SKIP;
	const struct wh_tensor *x0 = e->in[0];
	int32_t axis;
	if (!wh_norm_axis(wh_node_attr_int(e->n, "axis", 0), x0->rank, &axis))
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, x0->dims, sizeof dims);
	dims[axis] = 0;
	for (uint32_t i = 0; i < e->nin; i++) {
		const struct wh_tensor *t = e->in[i];
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
			const struct wh_tensor *t = e->in[i];
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
	if (!has_in(e, 0) || !has_in(e, 1) || !wh_dtype_is_int(e->in[1]->dtype))
		return EV_SKIP;
	const struct wh_tensor *x = e->in[0], *idx = e->in[1];
	int32_t axis;
	if (!wh_norm_axis(wh_node_attr_int(e->n, "axis", 0), x->rank, &axis))
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
			int64_t v = wh_tensor_get_i64(idx, j);
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
	const struct wh_tensor *x = e->in[0];
	int64_t starts[WH_MAX_RANK], ends[WH_MAX_RANK], axes[WH_MAX_RANK], steps[WH_MAX_RANK];
	uint32_t ns, ne, na, nst;
	if (e->opset < 10) {
		if (!wh_fold_attr_ints(e->n, "starts", starts, WH_MAX_RANK, &ns) ||
		    !wh_fold_attr_ints(e->n, "ends", ends, WH_MAX_RANK, &ne))
			return EV_SKIP;
		if (!wh_fold_attr_ints(e->n, "axes", axes, WH_MAX_RANK, &na))
			na = 0;
		nst = 0;
	} else {
		if (!has_in(e, 1) || !has_in(e, 2) || !int_list(e->in[1], starts, WH_MAX_RANK, &ns) ||
		    !int_list(e->in[2], ends, WH_MAX_RANK, &ne))
			return EV_SKIP;
		na = nst = 0;
		if (has_in(e, 3) && !int_list(e->in[3], axes, WH_MAX_RANK, &na))
			return EV_SKIP;
		if (has_in(e, 4) && !int_list(e->in[4], steps, WH_MAX_RANK, &nst))
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
		if (!wh_norm_axis(na ? axes[i] : (int64_t)i, x->rank, &a) || seen[a])
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
	wh_shape_strides(x->dims, x->rank, xs);
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
	wh_broadcast_strides(src, rank, dims, st);
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
	if (!int_list(e->in[1], shape, WH_MAX_RANK, &n))
		return EV_SKIP;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	tmp.rank = (int32_t)n;
	for (uint32_t i = 0; i < n; i++) {
		if (shape[i] < 0)
			return EV_SKIP;
		tmp.dims[i] = shape[i];
	}
	const struct wh_tensor *ts[2] = {e->in[0], &tmp};
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	if (!wh_broadcast_shapes(2, ts, &rank, dims))
		return EV_SKIP;
	return bcast_copy(e, e->in[0], rank, dims);
}

static int ev_constant_of_shape(struct ev *e)
{
	if (!has_in(e, 0))
		return EV_SKIP;
	int64_t dims[WH_MAX_RANK];
	uint32_t n;
	if (!int_list(e->in[0], dims, WH_MAX_RANK, &n))
		return EV_SKIP;
	for (uint32_t i = 0; i < n; i++)
		if (dims[i] < 0)
			return EV_SKIP;
	struct wh_tensor val;
	wh_tensor_init(&val);
	const struct wh_attr *a = wh_node_attr(e->n, "value");
	enum wh_dtype dt = WH_DT_FLOAT;
	if (a && a->type == WH_ATTR_TENSOR && a->t) {
		if (!int_ok(a->t->dtype) || wh_const_tensor_value(a->t, &val) != WH_OK || val.count != 1) {
			wh_error_clear();
			wh_tensor_release(&val);
			return EV_SKIP;
		}
		dt = val.dtype;
	}
	if (!int_ok(dt)) {
		wh_tensor_release(&val);
		return EV_SKIP;
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

/* ---- constants ---- */

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
			if ((st = wh_const_tensor_value(a->t, t)) != WH_OK)
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

static int ev_identity(struct ev *e)
{
	return has_in(e, 0) ? share_out(e, 0, e->in[0], e->in[0]->rank, e->in[0]->dims) : EV_SKIP;
}

/* the integer ops besides the elementwise table */
static const struct {
	const char *name;
	int (*fn)(struct ev *e);
} ops[] = {
	{"Neg", ev_unary}, {"Abs", ev_unary}, {"Not", ev_unary}, {"Identity", ev_identity}, {"Cast", ev_cast},
	{"Where", ev_where}, {"Reshape", ev_reshape}, {"Squeeze", ev_squeeze}, {"Unsqueeze", ev_squeeze},
	{"Concat", ev_concat}, {"Gather", ev_gather}, {"Slice", ev_slice}, {"Expand", ev_expand},
	{"ConstantOfShape", ev_constant_of_shape}, {"Range", ev_range},
};

static int dispatch(struct ev *e)
{
	const char *op = e->n->op_type;
	if (!strcmp(op, "Constant")) {
		bool found;
		enum wh_status st = e->nout == 1 ? wh_fold_constant_node(e->n, &e->out[0], &found) : WH_OK;
		if (st != WH_OK)
			return st == WH_ERR_NOMEM ? st : (wh_error_clear(), EV_SKIP);
		return e->nout == 1 && found ? EV_DONE : EV_SKIP;
	}
	/* Shape and Size read only the shape: any element type */
	if (!strcmp(op, "Shape"))
		return ev_shape(e);
	if (!strcmp(op, "Size"))
		return ev_size(e);
	/* everything else computes with integers only */
	for (uint32_t i = 0; i < e->nin; i++)
		if (has_in(e, i) && !int_ok(e->in[i]->dtype))
			return EV_SKIP;
	for (size_t i = 0; i < sizeof ew_table / sizeof ew_table[0]; i++)
		if (!strcmp(op, ew_table[i].name))
			return ev_elementwise(e, ew_table[i].op, ew_table[i].variadic, ew_table[i].compare);
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
		if (!strcmp(op, ops[i].name))
			return ops[i].fn(e);
	return EV_SKIP;
}

enum wh_status wh_fold_eval(const struct wh_node *n, int64_t opset, const struct wh_tensor *const *in,
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
