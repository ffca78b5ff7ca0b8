#include "graph/shape.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/fold-eval.h"
#include "graph/onnx-io.h"
#include "graph/topo.h"

/* Tensors computed during plain inference are kept when this small: shape arithmetic only
 * ever needs a few elements, and anything larger would just cost memory. */
#define WH_INFER_VALUE_LIMIT ((uint64_t)1 << 16)
/* Ends above this mean "to the end" in exported models (INT_MAX, INT64_MAX, ...). */
#define WH_SLICE_TO_END ((int64_t)1 << 30)
#define WH_MAX_UNKNOWN_OPS 32

struct ictx {
	const struct wh_model *m;
	const struct wh_graph *g;
	struct wh_vstate *st;
	const struct ictx *parent;
	int64_t opset;
	uint64_t limit;
	bool write_back;
	wh_fold_fn eval; /* NULL: fold-eval.c's shape arithmetic */
	const struct wh_node *n; /* node being inferred */
	/* op types seen without a rule, reported once per run */
	const char **unknown;
	uint32_t *n_unknown;
};

static enum wh_status infer_graph(const struct wh_model *m, const struct wh_graph *g, const struct ictx *parent,
				  const struct wh_vstate *seeds, uint32_t n_seeds, uint64_t limit, bool write_back,
				  wh_fold_fn eval, const char **unknown, uint32_t *n_unknown, struct wh_vstate **out);

/* ---- small helpers ---- */

static const char *node_label(const struct wh_node *n)
{
	return n->name && *n->name ? n->name : n->op_type;
}

static enum wh_status node_err(struct ictx *c, enum wh_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum wh_status node_err(struct ictx *c, enum wh_status st, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return wh_error(st, "node '%s' (%s): %s (check the model and the input shapes)", node_label(c->n),
			c->n->op_type, msg);
}

static const char *dims_str(const struct wh_vstate *s, char *buf, size_t size)
{
	if (s->rank < 0)
		return "unknown";
	if (s->rank == 0)
		return "scalar";
	size_t k = 0;
	buf[0] = '\0';
	for (int32_t i = 0; i < s->rank && k + 24 < size; i++) {
		if (s->dims[i] >= 0)
			k += (size_t)snprintf(buf + k, size - k, "%s%lld", i ? "x" : "", (long long)s->dims[i]);
		else
			k += (size_t)snprintf(buf + k, size - k, "%s%s", i ? "x" : "",
					      s->params[i] ? s->params[i] : "?");
	}
	return buf;
}

static const struct wh_vstate *IN(struct ictx *c, uint32_t i)
{
	if (i >= c->n->n_inputs || c->n->inputs[i] == WH_NONE)
		return NULL;
	return &c->st[c->n->inputs[i]];
}

static struct wh_vstate *OUT(struct ictx *c, uint32_t k)
{
	if (k >= c->n->n_outputs || c->n->outputs[k] == WH_NONE)
		return NULL;
	return &c->st[c->n->outputs[k]];
}

static bool ranked(const struct wh_vstate *s)
{
	return s && s->rank >= 0;
}

static bool all_static(const struct wh_vstate *s)
{
	if (!ranked(s))
		return false;
	for (int32_t i = 0; i < s->rank; i++)
		if (s->dims[i] < 0)
			return false;
	return true;
}

static void st_clear_value(struct wh_vstate *s)
{
	if (s->known)
		wh_tensor_release(&s->value);
	s->known = false;
}

/* Output k gets a type and a rank with unknown dimensions (rank -1: unknown rank). */
static struct wh_vstate *out_set(struct ictx *c, uint32_t k, enum wh_dtype dt, int32_t rank)
{
	struct wh_vstate *o = OUT(c, k);
	if (!o)
		return NULL;
	st_clear_value(o);
	o->sym.valid = false;
	o->seq = false;
	o->dtype = dt;
	o->rank = rank > WH_MAX_RANK ? -1 : rank;
	for (int32_t i = 0; i < WH_MAX_RANK; i++) {
		o->dims[i] = -1;
		o->params[i] = NULL;
	}
	return o;
}

/* Output 0 of type dt and unknown rank, for a rule that can say no more. */
static enum wh_status out_unknown(struct ictx *c, enum wh_dtype dt)
{
	out_set(c, 0, dt, -1);
	return WH_OK;
}

static void dim_copy(struct wh_vstate *o, int32_t oi, const struct wh_vstate *s, int32_t si)
{
	o->dims[oi] = s->dims[si];
	o->params[oi] = s->dims[si] >= 0 ? NULL : s->params[si];
}

static void dim_set(struct wh_vstate *o, int32_t i, int64_t v)
{
	/* attribute values (sample_size, output_height, ...) may be negative in a bad model */
	o->dims[i] = v < 0 ? -1 : v;
	o->params[i] = NULL;
}

/* Output k = input i's type and shape. */
static void out_like(struct ictx *c, uint32_t k, const struct wh_vstate *s, enum wh_dtype dt)
{
	struct wh_vstate *o = out_set(c, k, dt, s ? s->rank : -1);
	if (o && s)
		o->seq = s->seq;
	if (!o || !ranked(s))
		return;
	for (int32_t i = 0; i < s->rank; i++)
		dim_copy(o, i, s, i);
}

/* Output 0 of type dt with the rank of x, or of y where x's is unknown (ops whose two
 * inputs have one rank: input and weight, input and grid); NULL when neither is known. */
static struct wh_vstate *out_rank_of_either(struct ictx *c, enum wh_dtype dt, const struct wh_vstate *x,
					    const struct wh_vstate *y)
{
	struct wh_vstate *o = out_set(c, 0, dt, ranked(x) ? x->rank : (ranked(y) ? y->rank : -1));
	return o && o->rank >= 0 ? o : NULL;
}

/* Output 0 = input 0's type and shape; returns it when that rank is known (for rules that
 * then change some dimensions), else NULL. */
static struct wh_vstate *out_like_x(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	return ranked(x) ? OUT(c, 0) : NULL;
}

static bool same_dim(int64_t a, const char *pa, int64_t b, const char *pb)
{
	if (a >= 0 || b >= 0)
		return a == b;
	return pa && pb && !strcmp(pa, pb);
}

/* Integer contents of a known scalar or 1-D tensor. */
static bool st_ints(const struct wh_vstate *s, int64_t *vals, uint32_t cap, uint32_t *n_out)
{
	if (!s || !s->known || !wh_dtype_is_int(s->value.dtype) || s->value.rank > 1 || s->value.count > cap)
		return false;
	for (uint64_t i = 0; i < s->value.count; i++)
		vals[i] = wh_tensor_get_i64(&s->value, i);
	*n_out = (uint32_t)s->value.count;
	return true;
}

static bool st_floats(const struct wh_vstate *s, double *vals, uint32_t cap, uint32_t *n_out)
{
	if (!s || !s->known || s->value.rank > 1 || s->value.count > cap)
		return false;
	for (uint64_t i = 0; i < s->value.count; i++)
		vals[i] = wh_tensor_get_f64(&s->value, i);
	*n_out = (uint32_t)s->value.count;
	return true;
}

/* An element-type attribute (output_datatype, dtype), or UNDEFINED when it is not a type. */
static enum wh_dtype attr_dtype(const struct wh_node *n, const char *name, enum wh_dtype dflt)
{
	int64_t dt = wh_node_attr_int(n, name, dflt);
	return wh_dtype_valid((int)dt) ? (enum wh_dtype)dt : WH_DT_UNDEFINED;
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

static enum wh_status bad_axis(struct ictx *c, int64_t axis, int32_t rank)
{
	return node_err(c, WH_ERR_SHAPE, "axis %lld is out of range for rank %d", (long long)axis, rank);
}

/* The node's axis attribute (dflt when absent) as an index below rank. */
static enum wh_status attr_axis(struct ictx *c, int64_t dflt, int32_t rank, int32_t *axis_out)
{
	int64_t axis = wh_node_attr_int(c->n, "axis", dflt);
	*axis_out = 0;
	return norm_axis(axis, rank, axis_out) ? WH_OK : bad_axis(c, axis, rank);
}

/* Length of a 1-D input whose shape is static (for a Reshape target of unknown contents). */
static int64_t static_len(const struct wh_vstate *s)
{
	if (!ranked(s))
		return -1;
	if (s->rank == 0)
		return 1;
	return s->rank == 1 ? s->dims[0] : -1;
}

/* ---- symbolic shape vectors ---- */

/* The contents of a small integer vector, fully known or symbolic. */
static bool sym_of(const struct wh_vstate *s, struct wh_symvec *out)
{
	if (!s)
		return false;
	if (s->known) {
		const struct wh_tensor *t = &s->value;
		if (!wh_dtype_is_int(t->dtype) || t->rank > 1 || t->count > WH_MAX_RANK)
			return false;
		out->valid = true;
		out->scalar = t->rank == 0;
		out->n = (int32_t)t->count;
		for (int32_t i = 0; i < out->n; i++) {
			out->v[i] = wh_tensor_get_i64(t, (uint64_t)i);
			out->p[i] = NULL;
			out->k[i] = true;
		}
		return true;
	}
	if (!s->sym.valid)
		return false;
	*out = s->sym;
	return true;
}

static void sym_elem_dim(struct wh_symvec *v, int32_t i, const struct wh_vstate *x, int32_t d)
{
	v->k[i] = x->dims[d] >= 0;
	v->v[i] = x->dims[d];
	v->p[i] = x->dims[d] >= 0 ? NULL : x->params[d];
}

static bool sym_arith(const char *op, const struct wh_symvec *a, int32_t i, const struct wh_symvec *b, int32_t j,
		      struct wh_symvec *o, int32_t k)
{
	o->k[k] = false;
	o->p[k] = NULL;
	o->v[k] = -1;
	bool mul = !strcmp(op, "Mul"), add = !strcmp(op, "Add"), sub = !strcmp(op, "Sub"), div = !strcmp(op, "Div");
	if (a->k[i] && b->k[j]) {
		int64_t x = a->v[i], y = b->v[j], r = 0;
		if ((mul && !wh_mul_i64(x, y, &r)) || (add && !wh_add_i64(x, y, &r)) ||
		    (sub && __builtin_sub_overflow(x, y, &r)) || (div && (y == 0 || (x == INT64_MIN && y == -1))))
			return true;
		if (div)
			r = x / y;
		o->k[k] = true;
		o->v[k] = r;
		return true;
	}
	/* x*1, 1*x, x+0, 0+x, x-0, x/1 keep the symbolic element */
	if (b->k[j] && ((mul && b->v[j] == 1) || ((add || sub) && b->v[j] == 0) || (div && b->v[j] == 1)))
		o->p[k] = a->p[i];
	else if (a->k[i] && ((mul && a->v[i] == 1) || (add && a->v[i] == 0)))
		o->p[k] = b->p[j];
	return true;
}

/* Partly known contents of the node's first output, for ops that move shape elements. */
static void infer_sym(struct ictx *c)
{
	struct wh_vstate *o = OUT(c, 0);
	const struct wh_vstate *x = IN(c, 0);
	if (!o || o->known || !x || (o->dtype != WH_DT_INT64 && o->dtype != WH_DT_INT32))
		return;
	const char *op = c->n->op_type;
	struct wh_symvec in, r = {0};
	r.valid = true;
	if (!strcmp(op, "Shape")) {
		if (!ranked(x))
			return;
		int64_t start = wh_node_attr_int(c->n, "start", 0), end = wh_node_attr_int(c->n, "end", x->rank);
		if (start < 0)
			start += x->rank;
		if (end < 0)
			end += x->rank;
		start = start < 0 ? 0 : (start > x->rank ? x->rank : start);
		end = end < 0 ? 0 : (end > x->rank ? x->rank : end);
		r.n = end > start ? (int32_t)(end - start) : 0;
		for (int32_t i = 0; i < r.n; i++)
			sym_elem_dim(&r, i, x, (int32_t)start + i);
	} else if (!strcmp(op, "Cast") || !strcmp(op, "Identity")) {
		if (!sym_of(x, &r))
			return;
	} else if (!strcmp(op, "Gather")) {
		int64_t idx[WH_MAX_RANK];
		uint32_t ni;
		const struct wh_vstate *is = IN(c, 1);
		if (!sym_of(x, &in) || in.scalar || wh_node_attr_int(c->n, "axis", 0) != 0 || !st_ints(is, idx, WH_MAX_RANK, &ni))
			return;
		r.scalar = is->value.rank == 0;
		r.n = (int32_t)ni;
		for (uint32_t i = 0; i < ni; i++) {
			int64_t j = idx[i] < 0 ? idx[i] + in.n : idx[i];
			if (j < 0 || j >= in.n)
				return;
			r.v[i] = in.v[j];
			r.p[i] = in.p[j];
			r.k[i] = in.k[j];
		}
	} else if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze")) {
		if (!sym_of(x, &r) || r.n != 1 || o->rank > 1 || o->rank < 0)
			return;
		r.scalar = o->rank == 0;
	} else if (!strcmp(op, "Slice")) {
		int64_t st[1], en[1], ax[1] = {0}, sp[1] = {1};
		uint32_t n1 = 0, n2 = 0, n3 = 1, n4 = 1;
		if (!sym_of(x, &in) || in.scalar)
			return;
		bool ok;
		if (c->opset < 10) {
			ok = wh_fold_attr_ints(c->n, "starts", st, 1, &n1) && wh_fold_attr_ints(c->n, "ends", en, 1, &n2);
			if (ok && !wh_fold_attr_ints(c->n, "axes", ax, 1, &n3))
				n3 = 1;
		} else {
			ok = st_ints(IN(c, 1), st, 1, &n1) && st_ints(IN(c, 2), en, 1, &n2) &&
			     (!IN(c, 3) || st_ints(IN(c, 3), ax, 1, &n3)) && (!IN(c, 4) || st_ints(IN(c, 4), sp, 1, &n4));
		}
		if (!ok || n1 != 1 || n2 != 1 || n3 != 1 || n4 != 1 || (ax[0] != 0 && ax[0] != -1) || sp[0] == 0)
			return;
		int64_t first, cnt;
		wh_fold_slice_range(in.n, st[0], en[0], sp[0], &first, &cnt);
		r.n = (int32_t)cnt;
		for (int32_t i = 0; i < r.n; i++) {
			int64_t j = first + i * sp[0];
			r.v[i] = in.v[j];
			r.p[i] = in.p[j];
			r.k[i] = in.k[j];
		}
	} else if (!strcmp(op, "Concat")) {
		r.n = 0;
		for (uint32_t i = 0; i < c->n->n_inputs; i++) {
			if (!IN(c, i))
				continue;
			if (!sym_of(IN(c, i), &in) || in.scalar || r.n + in.n > WH_MAX_RANK)
				return;
			for (int32_t j = 0; j < in.n; j++, r.n++) {
				r.v[r.n] = in.v[j];
				r.p[r.n] = in.p[j];
				r.k[r.n] = in.k[j];
			}
		}
	} else if (!strcmp(op, "Mul") || !strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Div")) {
		struct wh_symvec b;
		if (!sym_of(x, &in) || !sym_of(IN(c, 1), &b))
			return;
		if (in.n != b.n && in.n != 1 && b.n != 1)
			return;
		/* numpy broadcast of lengths: 1 stretches, 0 wins */
		r.n = (in.n == 0 || b.n == 0) ? 0 : (in.n > b.n ? in.n : b.n);
		r.scalar = in.scalar && b.scalar;
		for (int32_t i = 0; i < r.n; i++)
			sym_arith(op, &in, in.n == 1 ? 0 : i, &b, b.n == 1 ? 0 : i, &r, i);
	} else {
		return;
	}
	o->sym = r;
}

/* ---- elementwise and broadcasting ---- */

static enum wh_status broadcast(struct ictx *c, const struct wh_vstate *const *ins, uint32_t n, enum wh_dtype dt)
{
	int32_t rank = 0;
	for (uint32_t i = 0; i < n; i++) {
		if (!ranked(ins[i]))
			return out_unknown(c, dt);
		if (ins[i]->rank > rank)
			rank = ins[i]->rank;
	}
	struct wh_vstate *o = out_set(c, 0, dt, rank);
	if (!o)
		return WH_OK;
	for (int32_t k = 0; k < rank; k++) {
		int64_t v = 1;
		const char *p = NULL;
		for (uint32_t i = 0; i < n; i++) {
			int32_t j = k - (rank - ins[i]->rank);
			if (j < 0)
				continue;
			int64_t v2 = ins[i]->dims[j];
			const char *p2 = v2 >= 0 ? NULL : ins[i]->params[j];
			if (v2 == 1)
				continue;
			if (v == 1) {
				v = v2;
				p = p2;
			} else if (v2 >= 0 && v >= 0) {
				if (v != v2) {
					char b1[256], b2[256];
					return node_err(c, WH_ERR_SHAPE, "inputs of shapes %s and %s do not broadcast",
							dims_str(ins[0], b1, sizeof b1), dims_str(ins[i], b2, sizeof b2));
				}
			} else if (v2 >= 0) {
				/* an unknown dimension meeting a fixed one is that one or 1: the result is fixed */
				v = v2;
				p = NULL;
			} else if (v < 0 && !same_dim(v, p, v2, p2)) {
				p = NULL;
			}
		}
		o->dims[k] = v;
		o->params[k] = v >= 0 ? NULL : p;
	}
	return WH_OK;
}

static enum wh_status r_broadcast_common(struct ictx *c, uint32_t first, enum wh_dtype dt)
{
	const struct wh_vstate *ins[WH_MAX_RANK * 4];
	uint32_t n = 0;
	for (uint32_t i = first; i < c->n->n_inputs && n < sizeof ins / sizeof ins[0]; i++)
		if (IN(c, i))
			ins[n++] = IN(c, i);
	if (!n)
		return WH_OK;
	/* before opset 7, binary ops broadcast the second input into the first (attribute
	 * "broadcast"), so the output is the first input's shape */
	if (c->opset < 7 && n == 2 && first == 0) {
		out_like(c, 0, ins[0], dt);
		return WH_OK;
	}
	return broadcast(c, ins, n, dt);
}

static enum wh_status r_arith(struct ictx *c)
{
	const struct wh_vstate *a = IN(c, 0);
	return r_broadcast_common(c, 0, a ? a->dtype : WH_DT_UNDEFINED);
}

static enum wh_status r_compare(struct ictx *c)
{
	return r_broadcast_common(c, 0, WH_DT_BOOL);
}

static enum wh_status r_where(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 1);
	return r_broadcast_common(c, 0, x ? x->dtype : WH_DT_UNDEFINED);
}

static enum wh_status r_unary(struct ictx *c)
{
	out_like_x(c);
	return WH_OK;
}

/* ---- sequences ---- */

static void out_seq(struct ictx *c, uint32_t k, enum wh_dtype elem)
{
	struct wh_vstate *o = out_set(c, k, elem, -1);
	if (o)
		o->seq = true;
}

static enum wh_status r_seq_of_input(struct ictx *c) /* SequenceConstruct, SplitToSequence */
{
	const struct wh_vstate *x = IN(c, 0);
	out_seq(c, 0, x ? x->dtype : WH_DT_UNDEFINED);
	return WH_OK;
}

static enum wh_status r_seq_empty(struct ictx *c)
{
	out_seq(c, 0, attr_dtype(c->n, "dtype", WH_DT_FLOAT));
	return WH_OK;
}

static enum wh_status r_seq_item(struct ictx *c) /* SequenceAt, ConcatFromSequence */
{
	const struct wh_vstate *s = IN(c, 0);
	out_set(c, 0, s ? s->dtype : WH_DT_UNDEFINED, -1);
	return WH_OK;
}

static enum wh_status r_seq_length(struct ictx *c)
{
	out_set(c, 0, WH_DT_INT64, 0);
	return WH_OK;
}

static enum wh_status r_unary_bool(struct ictx *c)
{
	out_like(c, 0, IN(c, 0), WH_DT_BOOL);
	return WH_OK;
}

static enum wh_status r_dropout(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	out_like(c, 1, x, c->opset < 10 && c->opset >= 7 ? (x ? x->dtype : WH_DT_UNDEFINED) : WH_DT_BOOL);
	return WH_OK;
}

static enum wh_status r_cast(struct ictx *c)
{
	int64_t to = wh_node_attr_int(c->n, "to", 0);
	out_like(c, 0, IN(c, 0), wh_dtype_valid((int)to) ? (enum wh_dtype)to : WH_DT_UNDEFINED);
	return WH_OK;
}

static enum wh_status r_bitcast(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	int64_t to = wh_node_attr_int(c->n, "to", 0);
	enum wh_dtype dt = wh_dtype_valid((int)to) ? (enum wh_dtype)to : WH_DT_UNDEFINED;
	/* same element size: same shape; otherwise the last dimension changes */
	if (x && x->dtype && dt && wh_dtype_size(x->dtype) == wh_dtype_size(dt))
		out_like(c, 0, x, dt);
	else
		out_set(c, 0, dt, -1);
	return WH_OK;
}

static enum wh_status r_castlike(struct ictx *c)
{
	const struct wh_vstate *t = IN(c, 1);
	out_like(c, 0, IN(c, 0), t ? t->dtype : WH_DT_UNDEFINED);
	return WH_OK;
}

/* ---- convolution and pooling ---- */

struct window {
	int32_t nsp; /* spatial dims */
	int64_t kernel[WH_MAX_RANK], strides[WH_MAX_RANK], dilations[WH_MAX_RANK];
	int64_t pads[2 * WH_MAX_RANK], out_pad[WH_MAX_RANK];
	char auto_pad[16];
	bool ceil_mode;
};

/* The window attributes of a node whose input has this rank (batch, channels, then the
 * spatial dimensions); what names the operation in the error for a rank below 3. */
static enum wh_status read_window(struct ictx *c, int32_t rank, const char *what, const struct wh_vstate *w,
				  struct window *win)
{
	if (rank < 3)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, %s needs at least 3", rank, what);
	int32_t nsp = rank - 2;
	uint32_t n;
	win->nsp = nsp;
	for (int32_t i = 0; i < nsp; i++) {
		win->kernel[i] = -1;
		win->strides[i] = win->dilations[i] = 1;
		win->pads[i] = win->pads[nsp + i] = win->out_pad[i] = 0;
	}
	if (wh_fold_attr_ints(c->n, "kernel_shape", win->kernel, WH_MAX_RANK, &n)) {
		if ((int32_t)n != nsp)
			return node_err(c, WH_ERR_SHAPE, "kernel_shape has %u values for %d spatial dimensions", n, nsp);
	} else if (ranked(w) && w->rank == nsp + 2) {
		for (int32_t i = 0; i < nsp; i++)
			win->kernel[i] = w->dims[2 + i];
	}
	if (wh_fold_attr_ints(c->n, "strides", win->strides, WH_MAX_RANK, &n) && (int32_t)n != nsp)
		return node_err(c, WH_ERR_SHAPE, "strides has %u values for %d spatial dimensions", n, nsp);
	if (wh_fold_attr_ints(c->n, "dilations", win->dilations, WH_MAX_RANK, &n) && (int32_t)n != nsp)
		return node_err(c, WH_ERR_SHAPE, "dilations has %u values for %d spatial dimensions", n, nsp);
	if (wh_fold_attr_ints(c->n, "pads", win->pads, 2 * WH_MAX_RANK, &n) && (int32_t)n != 2 * nsp)
		return node_err(c, WH_ERR_SHAPE, "pads has %u values for %d spatial dimensions", n, nsp);
	if (wh_fold_attr_ints(c->n, "output_padding", win->out_pad, WH_MAX_RANK, &n) && (int32_t)n != nsp)
		return node_err(c, WH_ERR_SHAPE, "output_padding has %u values for %d spatial dimensions", n, nsp);
	for (int32_t i = 0; i < nsp; i++) {
		if (win->strides[i] <= 0 || win->dilations[i] <= 0)
			return node_err(c, WH_ERR_SHAPE, "strides and dilations must be positive");
		if (win->kernel[i] == 0 || win->kernel[i] < -1)
			return node_err(c, WH_ERR_SHAPE, "kernel dimension %d is %lld", i, (long long)win->kernel[i]);
	}
	wh_node_attr_string(c->n, "auto_pad", "NOTSET", win->auto_pad, sizeof win->auto_pad);
	if (!wh_node_attr(c->n, "auto_pad"))
		strcpy(win->auto_pad, "NOTSET");
	win->ceil_mode = wh_node_attr_int(c->n, "ceil_mode", 0) != 0;
	return WH_OK;
}

/* Output size of one sliding-window dimension (Conv and pooling). */
static enum wh_status window_out(struct ictx *c, const struct window *win, int32_t i, int64_t in, int64_t *out)
{
	*out = -1;
	int64_t k = win->kernel[i], s = win->strides[i], d = win->dilations[i];
	if (in < 0)
		return WH_OK;
	if (!strcmp(win->auto_pad, "SAME_UPPER") || !strcmp(win->auto_pad, "SAME_LOWER")) {
		*out = in == 0 ? 0 : (in - 1) / s + 1;
		return WH_OK;
	}
	if (k < 0)
		return WH_OK;
	int64_t ek, total;
	if (!wh_mul_i64(k - 1, d, &ek) || !wh_add_i64(ek, 1, &ek))
		return node_err(c, WH_ERR_OVERFLOW, "kernel extent overflows");
	bool valid = !strcmp(win->auto_pad, "VALID");
	int64_t pb = valid ? 0 : win->pads[i], pe = valid ? 0 : win->pads[win->nsp + i];
	if (!wh_add_i64(in, pb, &total) || !wh_add_i64(total, pe, &total))
		return node_err(c, WH_ERR_OVERFLOW, "padded size overflows");
	if (total < ek)
		return node_err(c, WH_ERR_SHAPE, "window of %lld (kernel %lld, dilation %lld) is larger than the padded input %lld",
				(long long)ek, (long long)k, (long long)d, (long long)total);
	total -= ek;
	if (win->ceil_mode && !valid) {
		*out = total / s + (total % s != 0) + 1;
		/* ONNX Runtime (like PyTorch) drops a last window that would start in the end padding */
		int64_t last_start, in_pb;
		if (wh_mul_i64(*out - 1, s, &last_start) && wh_add_i64(in, pb, &in_pb) && last_start >= in_pb)
			(*out)--;
	} else {
		*out = total / s + 1;
	}
	return WH_OK;
}

static enum wh_status r_conv_like(struct ictx *c, uint32_t xi, uint32_t wi, enum wh_dtype dt)
{
	const struct wh_vstate *x = IN(c, xi), *w = IN(c, wi);
	struct wh_vstate *o = out_rank_of_either(c, dt, x, w);
	if (!o)
		return WH_OK;
	int32_t rank = o->rank;
	if (rank < 3)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, convolution needs at least 3", rank);
	if (ranked(x) && ranked(w) && x->rank != w->rank)
		return node_err(c, WH_ERR_SHAPE, "input rank %d and weight rank %d differ", x->rank, w->rank);
	struct window win;
	enum wh_status st = read_window(c, rank, "convolution", w, &win);
	if (st != WH_OK)
		return st;
	if (ranked(x))
		dim_copy(o, 0, x, 0);
	if (ranked(w))
		dim_copy(o, 1, w, 0);
	int64_t group = wh_node_attr_int(c->n, "group", 1);
	int64_t expect_ch;
	if (ranked(x) && ranked(w) && x->dims[1] >= 0 && w->dims[1] >= 0 && group > 0 &&
	    (!wh_mul_i64(w->dims[1], group, &expect_ch) || x->dims[1] != expect_ch)) {
		char b1[256], b2[256];
		return node_err(c, WH_ERR_SHAPE, "input %s has %lld channels, weight %s with group %lld expects %lld x %lld",
				dims_str(x, b1, sizeof b1), (long long)x->dims[1], dims_str(w, b2, sizeof b2),
				(long long)group, (long long)w->dims[1], (long long)group);
	}
	for (int32_t i = 0; i < win.nsp; i++) {
		int64_t v;
		if ((st = window_out(c, &win, i, ranked(x) ? x->dims[2 + i] : -1, &v)) != WH_OK)
			return st;
		dim_set(o, 2 + i, v);
	}
	return WH_OK;
}

static enum wh_status r_conv(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	return r_conv_like(c, 0, 1, x ? x->dtype : WH_DT_UNDEFINED);
}

static enum wh_status r_conv_integer(struct ictx *c)
{
	return r_conv_like(c, 0, 1, WH_DT_INT32);
}

static enum wh_status r_qlinear_conv(struct ictx *c)
{
	const struct wh_vstate *zp = IN(c, 7);
	return r_conv_like(c, 0, 3, zp ? zp->dtype : WH_DT_UINT8);
}

static enum wh_status r_conv_transpose(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *w = IN(c, 1);
	struct wh_vstate *o = out_rank_of_either(c, x ? x->dtype : WH_DT_UNDEFINED, x, w);
	if (!o)
		return WH_OK;
	int32_t rank = o->rank;
	struct window win;
	enum wh_status st = read_window(c, rank, "convolution", w, &win);
	if (st != WH_OK)
		return st;
	int64_t group = wh_node_attr_int(c->n, "group", 1);
	if (ranked(x))
		dim_copy(o, 0, x, 0);
	if (ranked(w) && w->dims[1] >= 0 && group > 0) {
		int64_t m;
		if (!wh_mul_i64(w->dims[1], group, &m))
			return node_err(c, WH_ERR_OVERFLOW, "output channels overflow");
		dim_set(o, 1, m);
	}
	int64_t oshape[WH_MAX_RANK];
	uint32_t nos = 0;
	bool have_os = wh_fold_attr_ints(c->n, "output_shape", oshape, WH_MAX_RANK, &nos);
	if (have_os && (int32_t)nos != win.nsp && (int32_t)nos != rank)
		return node_err(c, WH_ERR_SHAPE, "output_shape has %u values for %d spatial dimensions", nos, win.nsp);
	for (int32_t i = 0; i < win.nsp; i++) {
		if (have_os) {
			dim_set(o, 2 + i, oshape[(int32_t)nos - win.nsp + i]);
			continue;
		}
		int64_t in = ranked(x) ? x->dims[2 + i] : -1, k = win.kernel[i];
		if (in < 0 || k < 0)
			continue;
		int64_t v, ek;
		if (!strcmp(win.auto_pad, "SAME_UPPER") || !strcmp(win.auto_pad, "SAME_LOWER")) {
			if (!wh_mul_i64(in, win.strides[i], &v))
				return node_err(c, WH_ERR_OVERFLOW, "output size overflows");
		} else {
			bool valid = !strcmp(win.auto_pad, "VALID");
			if (!wh_mul_i64(win.strides[i], in - 1, &v) || !wh_mul_i64(k - 1, win.dilations[i], &ek) ||
			    !wh_add_i64(ek, 1, &ek) || !wh_add_i64(v, ek, &v) || !wh_add_i64(v, win.out_pad[i], &v))
				return node_err(c, WH_ERR_OVERFLOW, "output size overflows");
			int64_t pads;
			if (!valid && (!wh_add_i64(win.pads[i], win.pads[win.nsp + i], &pads) || __builtin_sub_overflow(v, pads, &v)))
				return node_err(c, WH_ERR_OVERFLOW, "output size overflows");
			if (v < 0)
				return node_err(c, WH_ERR_SHAPE, "output dimension %d would be %lld", 2 + i, (long long)v);
		}
		dim_set(o, 2 + i, v);
	}
	return WH_OK;
}

static enum wh_status r_pool(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	if (!ranked(x)) {
		out_set(c, 0, dt, -1);
		out_set(c, 1, WH_DT_INT64, -1);
		return WH_OK;
	}
	struct window win;
	enum wh_status st = read_window(c, x->rank, "pooling", NULL, &win);
	if (st != WH_OK)
		return st;
	for (uint32_t k = 0; k < 2; k++) {
		struct wh_vstate *o = out_set(c, k, k ? WH_DT_INT64 : dt, x->rank);
		if (!o)
			continue;
		dim_copy(o, 0, x, 0);
		dim_copy(o, 1, x, 1);
		for (int32_t i = 0; i < win.nsp; i++) {
			int64_t v;
			if ((st = window_out(c, &win, i, x->dims[2 + i], &v)) != WH_OK)
				return st;
			dim_set(o, 2 + i, v);
		}
	}
	return WH_OK;
}

static enum wh_status r_global_pool(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	if (x->rank < 2)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, pooling needs at least 2", x->rank);
	dim_copy(o, 0, x, 0);
	dim_copy(o, 1, x, 1);
	for (int32_t i = 2; i < x->rank; i++)
		dim_set(o, i, 1);
	return WH_OK;
}

/* ---- normalisation ---- */

static enum wh_status r_batchnorm(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *mean = IN(c, 3);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	/* running / saved statistics (training mode and old opsets): one value per channel */
	for (uint32_t k = 1; k < c->n->n_outputs; k++) {
		struct wh_vstate *o = out_set(c, k, mean ? mean->dtype : (x ? x->dtype : WH_DT_UNDEFINED), 1);
		if (o && ranked(x) && x->rank >= 2)
			dim_copy(o, 0, x, 1);
	}
	return WH_OK;
}

static enum wh_status r_layernorm(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	int64_t stash = wh_node_attr_int(c->n, "stash_type", 1);
	for (uint32_t k = 1; k < 3; k++) {
		struct wh_vstate *o = out_set(c, k, wh_dtype_valid((int)stash) ? (enum wh_dtype)stash : WH_DT_FLOAT,
					      x ? x->rank : -1);
		if (!o || !ranked(x))
			continue;
		int32_t axis;
		enum wh_status st = attr_axis(c, -1, x->rank, &axis);
		if (st != WH_OK)
			return st;
		for (int32_t i = 0; i < x->rank; i++) {
			if (i < axis)
				dim_copy(o, i, x, i);
			else
				dim_set(o, i, 1);
		}
	}
	return WH_OK;
}

/* ---- matrix products ---- */

static enum wh_status matmul_shape(struct ictx *c, const struct wh_vstate *a, const struct wh_vstate *b, enum wh_dtype dt)
{
	if (!ranked(a) || !ranked(b))
		return out_unknown(c, dt);
	if (a->rank < 1 || b->rank < 1)
		return node_err(c, WH_ERR_SHAPE, "matrix product of a scalar");
	/* promote 1-D operands to matrices, broadcast the batch dims, then drop the promotion */
	struct wh_vstate A = {0}, B = {0};
	A.rank = a->rank < 2 ? 2 : a->rank;
	B.rank = b->rank < 2 ? 2 : b->rank;
	if (a->rank == 1) {
		dim_set(&A, 0, 1);
		dim_copy(&A, 1, a, 0);
	} else {
		for (int32_t i = 0; i < a->rank; i++)
			dim_copy(&A, i, a, i);
	}
	if (b->rank == 1) {
		dim_copy(&B, 0, b, 0);
		dim_set(&B, 1, 1);
	} else {
		for (int32_t i = 0; i < b->rank; i++)
			dim_copy(&B, i, b, i);
	}
	int64_t ka = A.dims[A.rank - 1], kb = B.dims[B.rank - 2];
	if (ka >= 0 && kb >= 0 && ka != kb) {
		char b1[256], b2[256];
		return node_err(c, WH_ERR_SHAPE, "inner dimensions of %s and %s differ", dims_str(a, b1, sizeof b1),
				dims_str(b, b2, sizeof b2));
	}
	struct wh_vstate Ab = A, Bb = B;
	Ab.rank -= 2;
	Bb.rank -= 2;
	const struct wh_vstate *ins[2] = {&Ab, &Bb};
	enum wh_status st = broadcast(c, ins, 2, dt);
	if (st != WH_OK)
		return st;
	struct wh_vstate *o = OUT(c, 0);
	if (!o)
		return WH_OK;
	int32_t r = o->rank;
	if (a->rank > 1) {
		if (r >= WH_MAX_RANK)
			goto too_big;
		dim_copy(o, r++, &A, A.rank - 2);
	}
	if (b->rank > 1) {
		if (r >= WH_MAX_RANK)
			goto too_big;
		dim_copy(o, r++, &B, B.rank - 1);
	}
	o->rank = r;
	return WH_OK;
too_big:
	o->rank = -1;
	return WH_OK;
}

static enum wh_status r_matmul(struct ictx *c)
{
	const struct wh_vstate *a = IN(c, 0);
	return matmul_shape(c, a, IN(c, 1), a ? a->dtype : WH_DT_UNDEFINED);
}

static enum wh_status r_matmul_integer(struct ictx *c)
{
	return matmul_shape(c, IN(c, 0), IN(c, 1), WH_DT_INT32);
}

static enum wh_status r_qlinear_matmul(struct ictx *c)
{
	const struct wh_vstate *zp = IN(c, 7);
	return matmul_shape(c, IN(c, 0), IN(c, 3), zp ? zp->dtype : WH_DT_UINT8);
}

static enum wh_status r_gemm(struct ictx *c)
{
	const struct wh_vstate *a = IN(c, 0), *b = IN(c, 1);
	struct wh_vstate *o = out_set(c, 0, a ? a->dtype : WH_DT_UNDEFINED, 2);
	if (!o)
		return WH_OK;
	bool ta = wh_node_attr_int(c->n, "transA", 0) != 0, tb = wh_node_attr_int(c->n, "transB", 0) != 0;
	if (ranked(a) && a->rank != 2)
		return node_err(c, WH_ERR_SHAPE, "A has rank %d, Gemm needs 2", a->rank);
	if (ranked(b) && b->rank != 2)
		return node_err(c, WH_ERR_SHAPE, "B has rank %d, Gemm needs 2", b->rank);
	if (ranked(a))
		dim_copy(o, 0, a, ta ? 1 : 0);
	if (ranked(b))
		dim_copy(o, 1, b, tb ? 0 : 1);
	if (ranked(a) && ranked(b)) {
		int64_t ka = a->dims[ta ? 0 : 1], kb = b->dims[tb ? 1 : 0];
		if (ka >= 0 && kb >= 0 && ka != kb)
			return node_err(c, WH_ERR_SHAPE, "inner dimensions %lld and %lld differ", (long long)ka, (long long)kb);
	}
	return WH_OK;
}

/* ---- ONNX Runtime's quantized contrib ops (com.microsoft) ---- */

static enum wh_status r_qlinear_binary(struct ictx *c) /* QLinearAdd, QLinearMul: A, B at 0 and 3 */
{
	const struct wh_vstate *ins[2] = {IN(c, 0), IN(c, 3)};
	if (!ins[0] || !ins[1])
		return WH_OK;
	return broadcast(c, ins, 2, ins[0]->dtype);
}

static enum wh_status r_qlinear_gap(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, x ? x->rank : -1);
	if (!o || !ranked(x))
		return WH_OK;
	if (x->rank < 3)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, QLinearGlobalAveragePool needs at least 3", x->rank);
	int32_t cax = wh_node_attr_int(c->n, "channels_last", 0) ? x->rank - 1 : 1;
	for (int32_t i = 0; i < x->rank; i++) {
		if (i == 0 || i == cax)
			dim_copy(o, i, x, i);
		else
			dim_set(o, i, 1);
	}
	return WH_OK;
}

static enum wh_status r_qgemm(struct ictx *c)
{
	const struct wh_vstate *a = IN(c, 0), *b = IN(c, 3), *ys = IN(c, 7), *yz = IN(c, 8);
	enum wh_dtype dt = !ys ? WH_DT_FLOAT : yz ? yz->dtype : a ? a->dtype : WH_DT_UNDEFINED;
	struct wh_vstate *o = out_set(c, 0, dt, 2);
	if (!o)
		return WH_OK;
	bool ta = wh_node_attr_int(c->n, "transA", 0) != 0, tb = wh_node_attr_int(c->n, "transB", 0) != 0;
	if ((ranked(a) && a->rank != 2) || (ranked(b) && b->rank != 2))
		return node_err(c, WH_ERR_SHAPE, "A and B must be matrices");
	if (ranked(a))
		dim_copy(o, 0, a, ta ? 1 : 0);
	if (ranked(b))
		dim_copy(o, 1, b, tb ? 0 : 1);
	return WH_OK;
}

/* ---- shape manipulation ---- */

static enum wh_status make_int64_value(struct wh_vstate *o, const int64_t *vals, int64_t n)
{
	struct wh_tensor t;
	wh_tensor_init(&t);
	enum wh_status st = wh_tensor_alloc(&t, WH_DT_INT64, n == 0 && !vals ? 0 : 1, &n);
	if (st != WH_OK)
		return st;
	for (int64_t i = 0; i < n; i++)
		((int64_t *)t.data)[i] = vals[i];
	st_clear_value(o);
	o->value = t;
	o->known = true;
	return WH_OK;
}

static enum wh_status r_shape(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, WH_DT_INT64, 1);
	if (!o || !ranked(x))
		return WH_OK;
	int64_t start, len;
	wh_fold_shape_range(c->n, x->rank, &start, &len);
	dim_set(o, 0, len);
	for (int64_t i = 0; i < len; i++)
		if (x->dims[start + i] < 0)
			return WH_OK;
	return make_int64_value(o, x->dims + start, len);
}

static enum wh_status r_size(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, WH_DT_INT64, 0);
	if (!o || !all_static(x))
		return WH_OK;
	uint64_t count;
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, x->dims, sizeof dims);
	if (!wh_shape_count(dims, x->rank, &count))
		return node_err(c, WH_ERR_OVERFLOW, "element count overflows");
	int64_t v = (int64_t)count;
	enum wh_status st = make_int64_value(o, &v, 1);
	if (st == WH_OK)
		o->value.rank = 0;
	return st;
}

static enum wh_status r_reshape(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *sh = IN(c, 1);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	struct wh_symvec sv = {0};
	bool have;
	if (c->opset < 5) {
		uint32_t n = 0;
		have = wh_fold_attr_ints(c->n, "shape", sv.v, WH_MAX_RANK, &n);
		sv.n = (int32_t)n;
		for (int32_t i = 0; i < sv.n; i++)
			sv.k[i] = true;
	} else {
		have = sym_of(sh, &sv) && !sv.scalar;
	}
	if (!have) {
		out_set(c, 0, dt, c->opset < 5 ? -1 : (int32_t)static_len(sh));
		return WH_OK;
	}
	int32_t n = sv.n;
	struct wh_vstate *o = out_set(c, 0, dt, n);
	if (!o)
		return WH_OK;
	bool allowzero = wh_node_attr_int(c->n, "allowzero", 0) != 0;
	int32_t infer = -1;
	/* product of the output dims we know, and of the input dims no output dim accounts for */
	uint64_t out_prod = 1, in_prod = 1;
	bool out_ok = true, in_ok = ranked(x);
	bool used[WH_MAX_RANK] = {false};
	for (int32_t i = 0; i < n; i++) {
		if (!sv.k[i]) {
			o->dims[i] = -1;
			o->params[i] = sv.p[i];
			/* a named dimension of the input cancels out of the element count */
			bool matched = false;
			for (int32_t j = 0; sv.p[i] && ranked(x) && j < x->rank && !matched; j++)
				if (!used[j] && x->dims[j] < 0 && x->params[j] && !strcmp(x->params[j], sv.p[i]))
					used[j] = matched = true;
			out_ok = out_ok && matched;
			continue;
		}
		int64_t v = sv.v[i];
		if (v == 0 && !allowzero) {
			if (!ranked(x) || i >= x->rank) {
				if (ranked(x))
					return node_err(c, WH_ERR_SHAPE, "shape[%d] is 0 (copy) but the input has rank %d", i, x->rank);
				continue;
			}
			dim_copy(o, i, x, i);
			used[i] = true;
			continue;
		}
		if (v == -1) {
			if (infer >= 0)
				return node_err(c, WH_ERR_SHAPE, "shape has more than one -1");
			infer = i;
			continue;
		}
		if (v < 0)
			return node_err(c, WH_ERR_SHAPE, "shape[%d] is %lld", i, (long long)v);
		dim_set(o, i, v);
		if (!wh_mul_u64(out_prod, (uint64_t)v, &out_prod))
			return node_err(c, WH_ERR_OVERFLOW, "target shape overflows");
	}
	if (!ranked(x))
		return WH_OK;
	for (int32_t i = 0; i < x->rank && in_ok; i++) {
		if (used[i])
			continue;
		if (x->dims[i] < 0)
			in_ok = false;
		else if (!wh_mul_u64(in_prod, (uint64_t)x->dims[i], &in_prod))
			return node_err(c, WH_ERR_OVERFLOW, "input size overflows");
	}
	if (!in_ok || !out_ok)
		return WH_OK;
	char b1[256];
	if (infer >= 0) {
		if (out_prod == 0 || in_prod % out_prod)
			return node_err(c, WH_ERR_SHAPE, "cannot reshape %s: %llu elements do not divide by %llu",
					dims_str(x, b1, sizeof b1), (unsigned long long)in_prod, (unsigned long long)out_prod);
		dim_set(o, infer, (int64_t)(in_prod / out_prod));
	} else if (in_prod != out_prod) {
		char b2[256];
		return node_err(c, WH_ERR_SHAPE, "cannot reshape %s into %s", dims_str(x, b1, sizeof b1), dims_str(o, b2, sizeof b2));
	}
	return WH_OK;
}

static enum wh_status r_flatten(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, 2);
	if (!o || !ranked(x))
		return WH_OK;
	int64_t axis = wh_node_attr_int(c->n, "axis", 1);
	if (axis < 0)
		axis += x->rank;
	if (axis < 0 || axis > x->rank)
		return bad_axis(c, wh_node_attr_int(c->n, "axis", 1), x->rank);
	for (int side = 0; side < 2; side++) {
		int32_t lo = side ? (int32_t)axis : 0, hi = side ? x->rank : (int32_t)axis;
		uint64_t p = 1;
		bool ok = true;
		for (int32_t i = lo; i < hi; i++) {
			if (x->dims[i] < 0) {
				ok = false;
				continue;
			}
			if (!wh_mul_u64(p, (uint64_t)x->dims[i], &p))
				return node_err(c, WH_ERR_OVERFLOW, "flattened size overflows");
		}
		if (hi - lo == 1)
			dim_copy(o, side, x, lo);
		else if (ok)
			dim_set(o, side, (int64_t)p);
	}
	return WH_OK;
}

/* Axes of Squeeze/Unsqueeze/Reduce*: attribute before `from_opset`, optional input after. */
static bool node_axes(struct ictx *c, int64_t from_opset, uint32_t input, int64_t *axes, uint32_t *n,
		      bool *given, bool *unknown)
{
	*given = *unknown = false;
	*n = 0;
	if (c->opset >= from_opset) {
		const struct wh_vstate *a = IN(c, input);
		if (!a)
			return true;
		*given = true;
		if (!st_ints(a, axes, WH_MAX_RANK, n)) {
			*unknown = true;
			*n = (uint32_t)(static_len(a) >= 0 ? static_len(a) : 0);
		}
		return true;
	}
	const int64_t *v;
	if (wh_node_attr_ints(c->n, "axes", &v) < 0)
		return true;
	*given = true;
	return wh_fold_attr_ints(c->n, "axes", axes, WH_MAX_RANK, n);
}

/* Squeeze drops axes of size 1 (every one of them when none are listed); Unsqueeze inserts
 * axes of size 1. One mask over the longer of the two shapes marks those axes. */
static enum wh_status r_squeeze_unsqueeze(struct ictx *c)
{
	bool squeeze = !strcmp(c->n->op_type, "Squeeze");
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	int64_t axes[WH_MAX_RANK];
	uint32_t n;
	bool given, unknown;
	if (!node_axes(c, 13, 1, axes, &n, &given, &unknown))
		return node_err(c, WH_ERR_SHAPE, "too many axes");
	if (!ranked(x) || (!squeeze && !given))
		return out_unknown(c, dt);
	int32_t r = squeeze ? x->rank - (int32_t)n : x->rank + (int32_t)n;
	if (unknown) {
		out_set(c, 0, dt, static_len(IN(c, 1)) >= 0 ? r : -1);
		return WH_OK;
	}
	int32_t full = squeeze ? x->rank : r;
	if (full > WH_MAX_RANK)
		return out_unknown(c, dt);
	bool mark[WH_MAX_RANK] = {false};
	for (int32_t i = 0; squeeze && !given && i < x->rank; i++) {
		if (x->dims[i] < 0)
			return out_unknown(c, dt);
		mark[i] = x->dims[i] == 1;
	}
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!norm_axis(axes[i], full, &a))
			return bad_axis(c, axes[i], full);
		if (squeeze && x->dims[a] >= 0 && x->dims[a] != 1)
			return node_err(c, WH_ERR_SHAPE, "cannot squeeze axis %d of size %lld", a, (long long)x->dims[a]);
		if (!squeeze && mark[a])
			return node_err(c, WH_ERR_SHAPE, "axis %d is listed twice", a);
		mark[a] = true;
	}
	if (squeeze) {
		r = 0;
		for (int32_t i = 0; i < full; i++)
			r += !mark[i];
	}
	struct wh_vstate *o = out_set(c, 0, dt, r);
	if (!o)
		return WH_OK;
	/* k walks the shorter shape: the output's for Squeeze, the input's for Unsqueeze */
	for (int32_t i = 0, k = 0; i < full; i++) {
		if (squeeze && !mark[i])
			dim_copy(o, k++, x, i);
		else if (!squeeze && mark[i])
			dim_set(o, i, 1);
		else if (!squeeze)
			dim_copy(o, i, x, k++);
	}
	return WH_OK;
}

static enum wh_status r_transpose(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	int64_t perm[WH_MAX_RANK];
	uint32_t n;
	if (!wh_fold_attr_ints(c->n, "perm", perm, WH_MAX_RANK, &n)) {
		n = (uint32_t)x->rank;
		for (uint32_t i = 0; i < n; i++)
			perm[i] = (int64_t)n - 1 - i;
	}
	if ((int32_t)n != x->rank)
		return node_err(c, WH_ERR_SHAPE, "perm has %u values for rank %d", n, x->rank);
	bool seen[WH_MAX_RANK] = {false};
	for (uint32_t i = 0; i < n; i++) {
		if (perm[i] < 0 || perm[i] >= x->rank || seen[perm[i]])
			return node_err(c, WH_ERR_SHAPE, "perm is not a permutation of 0..%d", x->rank - 1);
		seen[perm[i]] = true;
		dim_copy(o, (int32_t)i, x, (int32_t)perm[i]);
	}
	return WH_OK;
}

static enum wh_status r_concat(struct ictx *c)
{
	const struct wh_vstate *x0 = NULL;
	int32_t rank = -1;
	for (uint32_t i = 0; i < c->n->n_inputs; i++) {
		const struct wh_vstate *s = IN(c, i);
		if (!s)
			continue;
		if (!x0 || (!x0->dtype && s->dtype))
			x0 = s;
		if (ranked(s)) {
			if (rank >= 0 && s->rank != rank)
				return node_err(c, WH_ERR_SHAPE, "inputs have ranks %d and %d", rank, s->rank);
			rank = s->rank;
		}
	}
	struct wh_vstate *o = out_set(c, 0, x0 ? x0->dtype : WH_DT_UNDEFINED, rank);
	if (!o || rank < 0)
		return WH_OK;
	int32_t axis;
	enum wh_status st = attr_axis(c, c->opset < 4 ? 1 : 0, rank, &axis);
	if (st != WH_OK)
		return st;
	int64_t sum = 0;
	bool sum_known = true;
	for (uint32_t i = 0; i < c->n->n_inputs; i++) {
		const struct wh_vstate *s = IN(c, i);
		if (!s)
			continue;
		if (!ranked(s)) {
			sum_known = false;
			continue;
		}
		for (int32_t k = 0; k < rank; k++) {
			if (k == axis)
				continue;
			if (o->dims[k] < 0 && s->dims[k] >= 0) {
				dim_copy(o, k, s, k);
			} else if (o->dims[k] >= 0 && s->dims[k] >= 0 && o->dims[k] != s->dims[k]) {
				char b1[256];
				return node_err(c, WH_ERR_SHAPE, "input %u of shape %s differs in dimension %d (%lld)", i,
						dims_str(s, b1, sizeof b1), k, (long long)o->dims[k]);
			} else if (o->dims[k] < 0 && !o->params[k]) {
				o->params[k] = s->params[k];
			}
		}
		if (s->dims[axis] < 0)
			sum_known = false;
		else if (!wh_add_i64(sum, s->dims[axis], &sum))
			return node_err(c, WH_ERR_OVERFLOW, "concatenated dimension overflows");
	}
	if (sum_known)
		dim_set(o, axis, sum);
	return WH_OK;
}

static enum wh_status r_split(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	uint32_t nout = c->n->n_outputs;
	for (uint32_t k = 0; k < nout; k++)
		out_like(c, k, x, dt);
	if (!ranked(x) || nout == 0)
		return WH_OK;
	int32_t axis;
	enum wh_status st = attr_axis(c, 0, x->rank, &axis);
	if (st != WH_OK)
		return st;
	int64_t split[256];
	uint32_t ns = 0;
	bool have = false;
	if (nout > 256)
		return WH_OK;
	if (c->opset >= 13 && IN(c, 1)) {
		have = st_ints(IN(c, 1), split, 256, &ns);
		if (!have) {
			for (uint32_t k = 0; k < nout; k++)
				if (OUT(c, k))
					dim_set(OUT(c, k), axis, -1);
			return WH_OK;
		}
	} else if (c->opset < 13 && wh_fold_attr_ints(c->n, "split", split, 256, &ns)) {
		have = true;
	}
	int64_t d = x->dims[axis];
	if (!have) {
		if (d < 0) {
			for (uint32_t k = 0; k < nout; k++)
				if (OUT(c, k))
					dim_set(OUT(c, k), axis, -1);
			return WH_OK;
		}
		int64_t num = wh_node_attr_int(c->n, "num_outputs", 0);
		ns = nout;
		int64_t chunk = d / ns + (d % ns != 0);
		if (num <= 0 && d % ns)
			return node_err(c, WH_ERR_SHAPE, "dimension %lld does not split evenly into %u outputs", (long long)d, ns);
		for (uint32_t i = 0; i < ns; i++) {
			int64_t left = d - chunk * (int64_t)i;
			split[i] = left < 0 ? 0 : (left < chunk ? left : chunk);
		}
	}
	if (ns != nout)
		return node_err(c, WH_ERR_SHAPE, "split has %u sizes for %u outputs", ns, nout);
	int64_t total = 0;
	for (uint32_t i = 0; i < ns; i++) {
		if (split[i] < 0)
			return node_err(c, WH_ERR_SHAPE, "split size %lld is negative", (long long)split[i]);
		if (!wh_add_i64(total, split[i], &total))
			return node_err(c, WH_ERR_OVERFLOW, "split sizes overflow");
		if (OUT(c, i))
			dim_set(OUT(c, i), axis, split[i]);
	}
	if (d >= 0 && total != d)
		return node_err(c, WH_ERR_SHAPE, "split sizes add up to %lld, the dimension is %lld", (long long)total, (long long)d);
	return WH_OK;
}

static enum wh_status r_gather(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *idx = IN(c, 1);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	if (!ranked(x) || !ranked(idx))
		return out_unknown(c, dt);
	int32_t axis;
	enum wh_status st = attr_axis(c, 0, x->rank, &axis);
	if (st != WH_OK)
		return st;
	struct wh_vstate *o = out_set(c, 0, dt, x->rank - 1 + idx->rank);
	if (!o || o->rank < 0)
		return WH_OK;
	int32_t k = 0;
	for (int32_t i = 0; i < axis; i++)
		dim_copy(o, k++, x, i);
	for (int32_t i = 0; i < idx->rank; i++)
		dim_copy(o, k++, idx, i);
	for (int32_t i = axis + 1; i < x->rank; i++)
		dim_copy(o, k++, x, i);
	return WH_OK;
}

static enum wh_status r_gather_elements(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, IN(c, 1), x ? x->dtype : WH_DT_UNDEFINED);
	return WH_OK;
}

static enum wh_status r_gather_nd(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *idx = IN(c, 1);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	int64_t b = wh_node_attr_int(c->n, "batch_dims", 0);
	if (!ranked(x) || !ranked(idx) || idx->rank < 1 || idx->dims[idx->rank - 1] < 0)
		return out_unknown(c, dt);
	int64_t last = idx->dims[idx->rank - 1];
	if (b < 0 || b > x->rank || last > x->rank - b)
		return node_err(c, WH_ERR_SHAPE, "index depth %lld with batch_dims %lld exceeds the data rank %d",
				(long long)last, (long long)b, x->rank);
	struct wh_vstate *o = out_set(c, 0, dt, idx->rank - 1 + x->rank - (int32_t)(b + last));
	if (!o || o->rank < 0)
		return WH_OK;
	int32_t k = 0;
	for (int32_t i = 0; i < idx->rank - 1; i++)
		dim_copy(o, k++, idx, i);
	for (int32_t i = (int32_t)(b + last); i < x->rank; i++)
		dim_copy(o, k++, x, i);
	return WH_OK;
}

static enum wh_status r_slice(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	for (int32_t i = 0; i < x->rank; i++)
		dim_copy(o, i, x, i);
	int64_t starts[WH_MAX_RANK], ends[WH_MAX_RANK], axes[WH_MAX_RANK], steps[WH_MAX_RANK];
	uint32_t ns = 0, ne = 0, na = 0, nst = 0;
	bool axes_known = true, se_known;
	if (c->opset < 10) {
		se_known = wh_fold_attr_ints(c->n, "starts", starts, WH_MAX_RANK, &ns) &&
			   wh_fold_attr_ints(c->n, "ends", ends, WH_MAX_RANK, &ne);
		if (!wh_fold_attr_ints(c->n, "axes", axes, WH_MAX_RANK, &na))
			na = 0;
	} else {
		se_known = st_ints(IN(c, 1), starts, WH_MAX_RANK, &ns) && st_ints(IN(c, 2), ends, WH_MAX_RANK, &ne);
		if (IN(c, 3) && !st_ints(IN(c, 3), axes, WH_MAX_RANK, &na))
			axes_known = false;
		if (IN(c, 4) && !st_ints(IN(c, 4), steps, WH_MAX_RANK, &nst))
			se_known = false;
	}
	if (!axes_known) {
		for (int32_t i = 0; i < x->rank; i++)
			dim_set(o, i, -1);
		return WH_OK;
	}
	if (se_known && (ns != ne || (na && na != ns) || (nst && nst != ns)))
		return node_err(c, WH_ERR_SHAPE, "starts, ends, axes and steps have different lengths");
	uint32_t count = se_known ? ns : na;
	if (!se_known && !na) {
		for (int32_t i = 0; i < x->rank; i++)
			dim_set(o, i, -1);
		return WH_OK;
	}
	bool seen[WH_MAX_RANK] = {false};
	for (uint32_t i = 0; i < count; i++) {
		int64_t ax = na ? axes[i] : (int64_t)i;
		int32_t a;
		if (!norm_axis(ax, x->rank, &a))
			return bad_axis(c, ax, x->rank);
		if (seen[a])
			return node_err(c, WH_ERR_SHAPE, "axis %d is sliced twice", a);
		seen[a] = true;
		if (!se_known) {
			dim_set(o, a, -1);
			continue;
		}
		int64_t step = nst ? steps[i] : 1;
		if (step == 0)
			return node_err(c, WH_ERR_SHAPE, "step is 0");
		int64_t d = x->dims[a], first, cnt;
		if (d < 0) {
			/* slicing everything keeps an unknown dimension (and its name) */
			if (!(step == 1 && starts[i] == 0 && ends[i] >= WH_SLICE_TO_END))
				dim_set(o, a, -1);
			continue;
		}
		wh_fold_slice_range(d, starts[i], ends[i], step, &first, &cnt);
		dim_set(o, a, cnt);
	}
	return WH_OK;
}

/* Broadcast of x's shape with a shape given as values (Expand). */
static enum wh_status r_expand(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *sh = IN(c, 1);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	struct wh_symvec sv;
	if (!sym_of(sh, &sv) || sv.scalar) {
		int64_t len = static_len(sh);
		out_set(c, 0, dt, ranked(x) && len >= 0 ? (x->rank > len ? x->rank : (int32_t)len) : -1);
		return WH_OK;
	}
	struct wh_vstate t = {0};
	t.rank = sv.n;
	for (int32_t i = 0; i < sv.n; i++) {
		if (!sv.k[i]) {
			t.dims[i] = -1;
			t.params[i] = sv.p[i];
			continue;
		}
		if (sv.v[i] < 0)
			return node_err(c, WH_ERR_SHAPE, "shape[%d] is %lld", i, (long long)sv.v[i]);
		dim_set(&t, i, sv.v[i]);
	}
	const struct wh_vstate *ins[2] = {x, &t};
	if (!x)
		return out_unknown(c, dt);
	return broadcast(c, ins, 2, dt);
}

static enum wh_status r_tile(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	int64_t rep[WH_MAX_RANK];
	uint32_t n;
	if (!st_ints(IN(c, 1), rep, WH_MAX_RANK, &n))
		return WH_OK;
	if ((int32_t)n != x->rank)
		return node_err(c, WH_ERR_SHAPE, "repeats has %u values for rank %d", n, x->rank);
	for (uint32_t i = 0; i < n; i++) {
		if (rep[i] < 0)
			return node_err(c, WH_ERR_SHAPE, "repeats[%u] is %lld", i, (long long)rep[i]);
		if (x->dims[i] < 0) {
			if (rep[i] == 1)
				dim_copy(o, (int32_t)i, x, (int32_t)i);
			else if (rep[i] == 0)
				dim_set(o, (int32_t)i, 0);
			continue;
		}
		int64_t v;
		if (!wh_mul_i64(x->dims[i], rep[i], &v))
			return node_err(c, WH_ERR_OVERFLOW, "dimension %u (%lld x %lld) overflows", i,
					(long long)x->dims[i], (long long)rep[i]);
		dim_set(o, (int32_t)i, v);
	}
	return WH_OK;
}

static enum wh_status r_pad(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	int64_t pads[2 * WH_MAX_RANK], axes[WH_MAX_RANK];
	uint32_t np, na = 0;
	bool have;
	if (c->opset < 11)
		have = wh_fold_attr_ints(c->n, c->opset < 2 ? "paddings" : "pads", pads, 2 * WH_MAX_RANK, &np);
	else
		have = st_ints(IN(c, 1), pads, 2 * WH_MAX_RANK, &np);
	if (have && IN(c, 3) && !st_ints(IN(c, 3), axes, WH_MAX_RANK, &na))
		have = false;
	if (!have)
		return WH_OK;
	int64_t pb[WH_MAX_RANK] = {0}, pe[WH_MAX_RANK] = {0};
	if (na) {
		if (np != 2 * na)
			return node_err(c, WH_ERR_SHAPE, "pads has %u values for %u axes", np, na);
		for (uint32_t i = 0; i < na; i++) {
			int32_t a;
			if (!norm_axis(axes[i], x->rank, &a))
				return bad_axis(c, axes[i], x->rank);
			pb[a] = pads[i];
			pe[a] = pads[na + i];
		}
	} else {
		if ((int32_t)np != 2 * x->rank)
			return node_err(c, WH_ERR_SHAPE, "pads has %u values for rank %d", np, x->rank);
		for (int32_t i = 0; i < x->rank; i++) {
			pb[i] = pads[i];
			pe[i] = pads[x->rank + i];
		}
	}
	for (int32_t i = 0; i < x->rank; i++) {
		if (x->dims[i] < 0) {
			if (pb[i] != 0 || pe[i] != 0)
				dim_set(o, i, -1);
			continue;
		}
		int64_t v;
		if (!wh_add_i64(x->dims[i], pb[i], &v) || !wh_add_i64(v, pe[i], &v))
			return node_err(c, WH_ERR_OVERFLOW, "padded dimension %d overflows", i);
		if (v < 0)
			return node_err(c, WH_ERR_SHAPE, "padded dimension %d would be %lld", i, (long long)v);
		dim_set(o, i, v);
	}
	return WH_OK;
}

static enum wh_dtype attr_tensor_dtype(const struct wh_node *n, const char *name, enum wh_dtype dflt)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	return a && a->type == WH_ATTR_TENSOR && a->t ? a->t->dtype : dflt;
}

static enum wh_status r_constant_of_shape(struct ictx *c)
{
	const struct wh_vstate *sh = IN(c, 0);
	enum wh_dtype dt = attr_tensor_dtype(c->n, "value", WH_DT_FLOAT);
	struct wh_symvec sv;
	if (!sym_of(sh, &sv) || sv.scalar) {
		out_set(c, 0, dt, (int32_t)static_len(sh));
		return WH_OK;
	}
	struct wh_vstate *o = out_set(c, 0, dt, sv.n);
	for (int32_t i = 0; o && i < sv.n; i++) {
		if (!sv.k[i]) {
			o->params[i] = sv.p[i];
			continue;
		}
		if (sv.v[i] < 0)
			return node_err(c, WH_ERR_SHAPE, "shape[%d] is %lld", i, (long long)sv.v[i]);
		dim_set(o, i, sv.v[i]);
	}
	return WH_OK;
}

static enum wh_status r_range(struct ictx *c)
{
	const struct wh_vstate *s = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, s ? s->dtype : WH_DT_UNDEFINED, 1);
	double v[3];
	uint32_t n;
	for (uint32_t i = 0; o && i < 3; i++) {
		if (!st_floats(IN(c, i), &v[i], 1, &n) || n != 1)
			return WH_OK;
	}
	if (!o)
		return WH_OK;
	if (v[2] == 0)
		return node_err(c, WH_ERR_SHAPE, "delta is 0");
	double cnt = ceil((v[1] - v[0]) / v[2]);
	if (!(cnt < 9.0e18))
		return node_err(c, WH_ERR_OVERFLOW, "range has too many elements");
	dim_set(o, 0, cnt > 0 ? (int64_t)cnt : 0);
	return WH_OK;
}

/* EyeLike, RandomNormalLike, ...: input 0's shape, the type of attribute dtype (else input 0's). */
static enum wh_status r_like_dtype(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, x, attr_dtype(c->n, "dtype", x ? x->dtype : WH_DT_UNDEFINED));
	return WH_OK;
}

static enum wh_status r_onehot(struct ictx *c)
{
	const struct wh_vstate *idx = IN(c, 0), *vals = IN(c, 2);
	enum wh_dtype dt = vals ? vals->dtype : WH_DT_UNDEFINED;
	if (!ranked(idx))
		return out_unknown(c, dt);
	struct wh_vstate *o = out_set(c, 0, dt, idx->rank + 1);
	if (!o || o->rank < 0)
		return WH_OK;
	int32_t axis;
	enum wh_status st = attr_axis(c, -1, o->rank, &axis);
	if (st != WH_OK)
		return st;
	for (int32_t i = 0, k = 0; i < o->rank; i++)
		if (i != axis)
			dim_copy(o, i, idx, k++);
	double depth;
	uint32_t n;
	if (st_floats(IN(c, 1), &depth, 1, &n) && n == 1) {
		if (depth < 0 || !(depth < 9.0e18))
			return node_err(c, WH_ERR_SHAPE, "depth %g is invalid", depth);
		dim_set(o, axis, (int64_t)depth);
	}
	return WH_OK;
}

static enum wh_status r_topk(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	out_like(c, 1, x, WH_DT_INT64);
	if (!ranked(x))
		return WH_OK;
	int32_t axis;
	enum wh_status st = attr_axis(c, -1, x->rank, &axis);
	if (st != WH_OK)
		return st;
	int64_t k = -1;
	uint32_t n;
	if (c->opset < 10) {
		k = wh_node_attr_int(c->n, "k", -1);
	} else if (!st_ints(IN(c, 1), &k, 1, &n) || n != 1) {
		k = -1;
	}
	if (k >= 0 && x->dims[axis] >= 0 && k > x->dims[axis])
		return node_err(c, WH_ERR_SHAPE, "k=%lld is larger than dimension %d (%lld)", (long long)k, axis,
				(long long)x->dims[axis]);
	for (uint32_t j = 0; j < 2; j++)
		if (OUT(c, j))
			dim_set(OUT(c, j), axis, k);
	return WH_OK;
}

static enum wh_status r_argminmax(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	bool keep = wh_node_attr_int(c->n, "keepdims", 1) != 0;
	if (!ranked(x))
		return out_unknown(c, WH_DT_INT64);
	int32_t axis;
	enum wh_status st = attr_axis(c, 0, x->rank, &axis);
	if (st != WH_OK)
		return st;
	struct wh_vstate *o = out_set(c, 0, WH_DT_INT64, keep ? x->rank : x->rank - 1);
	if (!o)
		return WH_OK;
	for (int32_t i = 0, k = 0; i < x->rank; i++) {
		if (i == axis) {
			if (keep)
				dim_set(o, k++, 1);
		} else {
			dim_copy(o, k++, x, i);
		}
	}
	return WH_OK;
}

static enum wh_status r_reduce(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	bool keep = wh_node_attr_int(c->n, "keepdims", 1) != 0;
	int64_t axes[WH_MAX_RANK];
	uint32_t n;
	bool given, unknown;
	if (!node_axes(c, strcmp(c->n->op_type, "ReduceSum") ? 18 : 13, 1, axes, &n, &given, &unknown))
		return node_err(c, WH_ERR_SHAPE, "too many axes");
	if (!ranked(x))
		return out_unknown(c, dt);
	if (unknown) {
		out_set(c, 0, dt, keep ? x->rank : -1);
		return WH_OK;
	}
	bool red[WH_MAX_RANK] = {false};
	if (n == 0) {
		if (wh_node_attr_int(c->n, "noop_with_empty_axes", 0)) {
			out_like(c, 0, x, dt);
			return WH_OK;
		}
		for (int32_t i = 0; i < x->rank; i++)
			red[i] = true;
	}
	for (uint32_t i = 0; i < n; i++) {
		int32_t a;
		if (!norm_axis(axes[i], x->rank, &a))
			return bad_axis(c, axes[i], x->rank);
		red[a] = true;
	}
	int32_t r = 0;
	for (int32_t i = 0; i < x->rank; i++)
		r += keep || !red[i];
	struct wh_vstate *o = out_set(c, 0, dt, r);
	if (!o)
		return WH_OK;
	for (int32_t i = 0, k = 0; i < x->rank; i++) {
		if (!red[i])
			dim_copy(o, k++, x, i);
		else if (keep)
			dim_set(o, k++, 1);
	}
	return WH_OK;
}

/* Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) and Upsample. */
static enum wh_status r_resize(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	bool upsample = !strcmp(c->n->op_type, "Upsample");
	double scales[WH_MAX_RANK];
	int64_t sizes[WH_MAX_RANK], axes[WH_MAX_RANK];
	uint32_t nsc = 0, nsz = 0, na = 0;
	bool have_scales = false, have_sizes = false;
	const struct wh_vstate *sc_in = NULL, *sz_in = NULL;
	if (upsample && c->opset < 9) {
		const struct wh_attr *a = wh_node_attr(c->n, "scales");
		if (a && a->type == WH_ATTR_FLOATS && a->n <= WH_MAX_RANK) {
			for (size_t i = 0; i < a->n; i++)
				scales[i] = a->floats[i];
			nsc = (uint32_t)a->n;
			have_scales = true;
		}
	} else if (upsample || c->opset < 11) {
		sc_in = IN(c, 1);
	} else {
		sc_in = IN(c, 2);
		sz_in = IN(c, 3);
	}
	if (sz_in && st_ints(sz_in, sizes, WH_MAX_RANK, &nsz) && nsz)
		have_sizes = true;
	if (!have_sizes && sc_in && st_floats(sc_in, scales, WH_MAX_RANK, &nsc) && nsc)
		have_scales = true;
	if (!have_sizes && !have_scales) {
		/* unknown scales and sizes: only dimensions that cannot change are known */
		for (int32_t i = 0; i < x->rank; i++)
			dim_set(o, i, -1);
		return WH_OK;
	}
	if (!wh_fold_attr_ints(c->n, "axes", axes, WH_MAX_RANK, &na))
		na = 0;
	uint32_t cnt = have_sizes ? nsz : nsc;
	if ((na && cnt != na) || (!na && (int32_t)cnt != x->rank))
		return node_err(c, WH_ERR_SHAPE, "%s has %u values for rank %d", have_sizes ? "sizes" : "scales", cnt, x->rank);
	char policy[32];
	wh_node_attr_string(c->n, "keep_aspect_ratio_policy", "stretch", policy, sizeof policy);
	if (!wh_node_attr(c->n, "keep_aspect_ratio_policy"))
		strcpy(policy, "stretch");
	if (have_sizes && strcmp(policy, "stretch")) {
		/* one scale for all listed axes, the smaller or the larger of sizes/in */
		bool larger = !strcmp(policy, "not_smaller");
		double s = larger ? 0 : INFINITY;
		for (uint32_t i = 0; i < cnt; i++) {
			int32_t a = (int32_t)(na ? axes[i] : (int64_t)i);
			if (!norm_axis(a, x->rank, &a))
				return bad_axis(c, na ? axes[i] : (int64_t)i, x->rank);
			if (x->dims[a] <= 0)
				return WH_OK;
			double r = (double)sizes[i] / (double)x->dims[a];
			s = larger ? (r > s ? r : s) : (r < s ? r : s);
		}
		for (uint32_t i = 0; i < cnt; i++) {
			int32_t a = 0;
			norm_axis(na ? axes[i] : (int64_t)i, x->rank, &a);
			double v = floor(s * (double)x->dims[a] + 0.5);
			if (!(v >= 0 && v < 9.0e18))
				return node_err(c, WH_ERR_OVERFLOW, "resized dimension %d overflows", a);
			dim_set(o, a, (int64_t)v);
		}
		return WH_OK;
	}
	for (uint32_t i = 0; i < cnt; i++) {
		int32_t a;
		if (!norm_axis(na ? axes[i] : (int64_t)i, x->rank, &a))
			return bad_axis(c, na ? axes[i] : (int64_t)i, x->rank);
		if (have_sizes) {
			if (sizes[i] < 0)
				return node_err(c, WH_ERR_SHAPE, "sizes[%u] is %lld", i, (long long)sizes[i]);
			dim_set(o, a, sizes[i]);
			continue;
		}
		if (!(scales[i] > 0) || !isfinite(scales[i]))
			return node_err(c, WH_ERR_SHAPE, "scales[%u] is %g", i, scales[i]);
		if (x->dims[a] < 0) {
			if (scales[i] != 1)
				dim_set(o, a, -1);
			continue;
		}
		/* ONNX Runtime multiplies in float and truncates */
		float v = (float)x->dims[a] * (float)scales[i];
		if (!(v < 9.0e18f))
			return node_err(c, WH_ERR_OVERFLOW, "resized dimension %d overflows", a);
		dim_set(o, a, (int64_t)v);
	}
	return WH_OK;
}

static enum wh_status r_depth_space(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	if (x->rank != 4)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, 4 needed", x->rank);
	int64_t b = wh_node_attr_int(c->n, "blocksize", 0);
	if (b <= 0 || b > (1 << 20))
		return node_err(c, WH_ERR_SHAPE, "blocksize %lld is invalid", (long long)b);
	bool d2s = !strcmp(c->n->op_type, "DepthToSpace");
	dim_copy(o, 0, x, 0);
	if (x->dims[1] >= 0) {
		if (d2s && x->dims[1] % (b * b))
			return node_err(c, WH_ERR_SHAPE, "%lld channels do not divide by blocksize^2", (long long)x->dims[1]);
		int64_t v;
		if (!d2s && !wh_mul_i64(x->dims[1], b * b, &v))
			return node_err(c, WH_ERR_OVERFLOW, "channels overflow");
		dim_set(o, 1, d2s ? x->dims[1] / (b * b) : v);
	}
	for (int32_t i = 2; i < 4; i++) {
		if (x->dims[i] < 0)
			continue;
		int64_t v;
		if (d2s) {
			if (!wh_mul_i64(x->dims[i], b, &v))
				return node_err(c, WH_ERR_OVERFLOW, "dimension overflows");
		} else {
			if (x->dims[i] % b)
				return node_err(c, WH_ERR_SHAPE, "dimension %lld does not divide by blocksize %lld",
						(long long)x->dims[i], (long long)b);
			v = x->dims[i] / b;
		}
		dim_set(o, i, v);
	}
	return WH_OK;
}

static enum wh_status r_constant(struct ictx *c)
{
	for (uint32_t i = 0; i < c->n->n_attrs; i++) {
		const struct wh_attr *a = &c->n->attrs[i];
		struct wh_vstate *o;
		if (!strcmp(a->name, "value") && a->type == WH_ATTR_TENSOR && a->t) {
			if ((o = out_set(c, 0, a->t->dtype, a->t->rank)) != NULL)
				for (int32_t k = 0; k < a->t->rank; k++)
					dim_set(o, k, a->t->dims[k]);
			return WH_OK;
		}
		if (!strcmp(a->name, "value_string") && a->type == WH_ATTR_STRING) {
			out_set(c, 0, WH_DT_STRING, 0);
			return WH_OK;
		}
		if (!strcmp(a->name, "value_strings") && a->type == WH_ATTR_STRINGS) {
			if ((o = out_set(c, 0, WH_DT_STRING, 1)) != NULL)
				dim_set(o, 0, (int64_t)a->n);
			return WH_OK;
		}
	}
	return WH_OK;
}

static enum wh_status r_nonzero(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, WH_DT_INT64, 2);
	if (o && ranked(x))
		dim_set(o, 0, x->rank ? x->rank : 1);
	return WH_OK;
}

static enum wh_status r_nms(struct ictx *c)
{
	struct wh_vstate *o = out_set(c, 0, WH_DT_INT64, 2);
	if (o)
		dim_set(o, 1, 3);
	return WH_OK;
}

static enum wh_status r_compress(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	const struct wh_attr *a = wh_node_attr(c->n, "axis");
	if (!a) {
		out_set(c, 0, dt, 1);
		return WH_OK;
	}
	out_like(c, 0, x, dt);
	int32_t axis;
	if (ranked(x) && OUT(c, 0)) {
		if (!norm_axis(a->i, x->rank, &axis))
			return bad_axis(c, a->i, x->rank);
		dim_set(OUT(c, 0), axis, -1);
	}
	return WH_OK;
}

static enum wh_status r_unique(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	const struct wh_attr *a = wh_node_attr(c->n, "axis");
	if (a && ranked(x)) {
		int32_t axis;
		out_like(c, 0, x, x->dtype);
		if (!norm_axis(a->i, x->rank, &axis))
			return bad_axis(c, a->i, x->rank);
		if (OUT(c, 0))
			dim_set(OUT(c, 0), axis, -1);
	} else {
		out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, a ? -1 : 1);
	}
	for (uint32_t k = 1; k < 4; k++)
		out_set(c, k, WH_DT_INT64, 1);
	return WH_OK;
}

static enum wh_status r_quantize(struct ictx *c)
{
	const struct wh_vstate *zp = IN(c, 2);
	int64_t odt = wh_node_attr_int(c->n, "output_dtype", 0);
	enum wh_dtype dt = zp ? zp->dtype : (odt > 0 && wh_dtype_valid((int)odt) ? (enum wh_dtype)odt : WH_DT_UINT8);
	out_like(c, 0, IN(c, 0), dt);
	return WH_OK;
}

static enum wh_status r_dequantize(struct ictx *c)
{
	const struct wh_vstate *sc = IN(c, 1);
	enum wh_dtype dt = WH_DT_FLOAT;
	if (c->opset >= 19 && sc && sc->dtype)
		dt = sc->dtype;
	int64_t odt = wh_node_attr_int(c->n, "output_dtype", 0);
	if (odt > 0 && wh_dtype_valid((int)odt))
		dt = (enum wh_dtype)odt;
	out_like(c, 0, IN(c, 0), dt);
	return WH_OK;
}

static enum wh_status r_dyn_quantize(struct ictx *c)
{
	out_like(c, 0, IN(c, 0), WH_DT_UINT8);
	out_set(c, 1, WH_DT_FLOAT, 0);
	out_set(c, 2, WH_DT_UINT8, 0);
	return WH_OK;
}

static enum wh_status r_random(struct ictx *c)
{
	int64_t dt = wh_node_attr_int(c->n, "dtype", WH_DT_FLOAT);
	int64_t shape[WH_MAX_RANK];
	uint32_t n;
	enum wh_dtype t = wh_dtype_valid((int)dt) ? (enum wh_dtype)dt : WH_DT_UNDEFINED;
	if (!wh_fold_attr_ints(c->n, "shape", shape, WH_MAX_RANK, &n))
		return out_unknown(c, t);
	struct wh_vstate *o = out_set(c, 0, t, (int32_t)n);
	for (uint32_t i = 0; o && i < n; i++)
		dim_set(o, (int32_t)i, shape[i]);
	return WH_OK;
}

static enum wh_status r_multinomial(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	int64_t dt = wh_node_attr_int(c->n, "dtype", WH_DT_INT32);
	struct wh_vstate *o = out_set(c, 0, wh_dtype_valid((int)dt) ? (enum wh_dtype)dt : WH_DT_UNDEFINED, 2);
	if (!o)
		return WH_OK;
	if (ranked(x) && x->rank == 2)
		dim_copy(o, 0, x, 0);
	dim_set(o, 1, wh_node_attr_int(c->n, "sample_size", 1));
	return WH_OK;
}

/* LSTM, GRU, RNN: Y [seq, dirs, batch, hidden] and the final states [dirs, batch, hidden]
 * (layout 1 puts batch first). */
static enum wh_status r_rnn(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	char dir[32];
	wh_node_attr_string(c->n, "direction", "forward", dir, sizeof dir);
	int64_t dirs = !strcmp(dir, "bidirectional") ? 2 : 1;
	int64_t hidden = wh_node_attr_int(c->n, "hidden_size", -1);
	bool batch_first = wh_node_attr_int(c->n, "layout", 0) != 0;
	bool xr = ranked(x) && x->rank == 3;
	struct wh_vstate *y = out_set(c, 0, dt, 4);
	if (y) {
		if (xr) {
			dim_copy(y, 0, x, 0);
			dim_copy(y, batch_first ? 1 : 2, x, 1);
		}
		dim_set(y, batch_first ? 2 : 1, dirs);
		dim_set(y, 3, hidden);
	}
	for (uint32_t k = 1; k < c->n->n_outputs; k++) {
		struct wh_vstate *h = out_set(c, k, dt, 3);
		if (!h)
			continue;
		if (xr)
			dim_copy(h, batch_first ? 0 : 1, x, batch_first ? 0 : 1);
		dim_set(h, batch_first ? 1 : 0, dirs);
		dim_set(h, 2, hidden);
	}
	return WH_OK;
}

static enum wh_status r_grid_sample(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *grid = IN(c, 1);
	struct wh_vstate *o = out_rank_of_either(c, x ? x->dtype : WH_DT_UNDEFINED, x, grid);
	if (!o || o->rank < 3)
		return WH_OK;
	int32_t rank = o->rank;
	if (ranked(x))
		dim_copy(o, 0, x, 0), dim_copy(o, 1, x, 1);
	if (ranked(grid) && grid->rank == rank)
		for (int32_t i = 2; i < rank; i++)
			dim_copy(o, i, grid, i - 1);
	return WH_OK;
}

static enum wh_status r_det(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	if (!ranked(x) || x->rank < 2)
		return out_unknown(c, x ? x->dtype : WH_DT_UNDEFINED);
	struct wh_vstate *o = out_set(c, 0, x->dtype, x->rank - 2);
	for (int32_t i = 0; o && i < x->rank - 2; i++)
		dim_copy(o, i, x, i);
	return WH_OK;
}

/* ---- control flow ---- */

static const struct wh_graph *attr_graph(const struct wh_node *n, const char *name)
{
	const struct wh_attr *a = wh_node_attr(n, name);
	return a && a->type == WH_ATTR_GRAPH ? a->g : NULL;
}

/* Runs inference on a subgraph; *out is NULL (not an error) when it could not be done. */
static enum wh_status sub_infer(struct ictx *c, const struct wh_graph *g, const struct wh_vstate *seeds, uint32_t n_seeds,
				struct wh_vstate **out)
{
	*out = NULL;
	if (!g)
		return WH_OK;
	return infer_graph(c->m, g, c, seeds, n_seeds, c->limit, c->write_back, c->eval, c->unknown, c->n_unknown, out);
}

static void merge_into(struct wh_vstate *o, const struct wh_vstate *b)
{
	/* o and b are two possible values: keep what both agree on */
	if (o->dtype != b->dtype)
		o->dtype = o->dtype ? (b->dtype ? WH_DT_UNDEFINED : o->dtype) : b->dtype;
	if (o->rank != b->rank) {
		o->rank = -1;
		return;
	}
	for (int32_t i = 0; i < o->rank; i++)
		if (!same_dim(o->dims[i], o->params[i], b->dims[i], b->params[i])) {
			o->dims[i] = -1;
			o->params[i] = NULL;
		}
}

static void copy_shape(struct wh_vstate *o, const struct wh_vstate *s)
{
	o->dtype = s->dtype;
	o->rank = s->rank;
	memcpy(o->dims, s->dims, sizeof o->dims);
	memcpy(o->params, s->params, sizeof o->params);
}

static enum wh_status r_if(struct ictx *c)
{
	const struct wh_graph *gt = attr_graph(c->n, "then_branch"), *ge = attr_graph(c->n, "else_branch");
	struct wh_vstate *st_t = NULL, *st_e = NULL;
	enum wh_status st = sub_infer(c, gt, NULL, 0, &st_t);
	if (st == WH_OK)
		st = sub_infer(c, ge, NULL, 0, &st_e);
	if (st != WH_OK)
		goto out;
	/* a known condition selects one branch */
	const struct wh_vstate *cond = IN(c, 0);
	int which = -1;
	if (cond && cond->known && cond->value.count == 1)
		which = wh_tensor_get_i64(&cond->value, 0) ? 0 : 1;
	for (uint32_t k = 0; k < c->n->n_outputs; k++) {
		struct wh_vstate *o = out_set(c, k, WH_DT_UNDEFINED, -1);
		if (!o)
			continue;
		const struct wh_vstate *a = st_t && k < gt->n_outputs ? &st_t[gt->outputs[k]] : NULL;
		const struct wh_vstate *b = st_e && k < ge->n_outputs ? &st_e[ge->outputs[k]] : NULL;
		if (which == 0)
			b = NULL;
		if (which == 1)
			a = NULL;
		if (a && b) {
			copy_shape(o, a);
			merge_into(o, b);
		} else if (a && which == 0) {
			copy_shape(o, a);
		} else if (b && which == 1) {
			copy_shape(o, b);
		}
	}
out:
	if (st_t)
		wh_infer_states_free(st_t, gt->n_values);
	if (st_e)
		wh_infer_states_free(st_e, ge->n_values);
	return st;
}

static enum wh_status r_loop(struct ictx *c)
{
	const struct wh_graph *body = attr_graph(c->n, "body");
	/* carried values: inputs 2.., outputs 0..N-1; then scan outputs */
	uint32_t n_carried = c->n->n_inputs > 2 ? c->n->n_inputs - 2 : 0;
	for (uint32_t k = 0; k < c->n->n_outputs; k++)
		out_set(c, k, WH_DT_UNDEFINED, -1);
	if (!body)
		return WH_OK;
	struct wh_vstate seeds[2 + 64];
	uint32_t n_seeds = 2 + (n_carried < 64 ? n_carried : 64);
	memset(seeds, 0, sizeof seeds);
	seeds[0].dtype = WH_DT_INT64;
	seeds[1].dtype = WH_DT_BOOL;
	seeds[1].rank = 0;
	seeds[0].rank = 0;
	for (uint32_t i = 2; i < n_seeds; i++) {
		const struct wh_vstate *s = IN(c, i);
		seeds[i].rank = -1;
		if (s) {
			copy_shape(&seeds[i], s);
			/* the shape may change from one iteration to the next: keep only the type */
			seeds[i].rank = -1;
		}
	}
	struct wh_vstate *bs = NULL;
	enum wh_status st = sub_infer(c, body, seeds, n_seeds, &bs);
	if (st != WH_OK || !bs)
		return st;
	for (uint32_t k = 0; k < c->n->n_outputs; k++) {
		struct wh_vstate *o = OUT(c, k);
		uint32_t bo = k + 1; /* body outputs: cond, carried..., scan... */
		if (!o || bo >= body->n_outputs)
			continue;
		const struct wh_vstate *b = &bs[body->outputs[bo]];
		if (k < n_carried) {
			const struct wh_vstate *init = IN(c, 2 + k);
			copy_shape(o, b);
			if (init)
				merge_into(o, init);
			else
				o->rank = -1;
		} else {
			o->dtype = b->dtype;
			if (ranked(b) && b->rank < WH_MAX_RANK) {
				o->rank = b->rank + 1;
				dim_set(o, 0, -1);
				for (int32_t i = 0; i < b->rank; i++)
					dim_copy(o, i + 1, b, i);
			}
		}
	}
	wh_infer_states_free(bs, body->n_values);
	return WH_OK;
}

/* Scan (opset 9+): N state inputs then M scanned inputs; outputs are the N final states and
 * K scan outputs, each stacking one body output per iteration along its scan axis. */
static enum wh_status r_scan(struct ictx *c)
{
	const struct wh_graph *body = attr_graph(c->n, "body");
	for (uint32_t k = 0; k < c->n->n_outputs; k++)
		out_set(c, k, WH_DT_UNDEFINED, -1);
	int64_t m = wh_node_attr_int(c->n, "num_scan_inputs", -1);
	if (!body || c->opset < 9 || m < 0 || m > c->n->n_inputs || c->n->n_inputs > 64)
		return WH_OK;
	uint32_t n_state = c->n->n_inputs - (uint32_t)m;
	int64_t in_axes[64], out_axes[64];
	uint32_t n_in_axes = 0, n_out_axes = 0;
	if (!wh_fold_attr_ints(c->n, "scan_input_axes", in_axes, 64, &n_in_axes))
		n_in_axes = 0;
	if (!wh_fold_attr_ints(c->n, "scan_output_axes", out_axes, 64, &n_out_axes))
		n_out_axes = 0;
	struct wh_vstate seeds[64];
	memset(seeds, 0, sizeof seeds);
	int64_t seq = -1;
	for (uint32_t i = 0; i < c->n->n_inputs; i++) {
		const struct wh_vstate *s = IN(c, i);
		seeds[i].rank = -1;
		if (!s)
			continue;
		copy_shape(&seeds[i], s);
		if (i < n_state || !ranked(s))
			continue;
		uint32_t j = i - n_state;
		int32_t axis;
		if (!norm_axis(j < n_in_axes ? in_axes[j] : 0, s->rank, &axis))
			return bad_axis(c, j < n_in_axes ? in_axes[j] : 0, s->rank);
		if (seq < 0)
			seq = s->dims[axis];
		seeds[i].rank = s->rank - 1;
		for (int32_t d = 0, k = 0; d < s->rank; d++)
			if (d != axis) {
				seeds[i].dims[k] = s->dims[d];
				seeds[i].params[k++] = s->params[d];
			}
	}
	struct wh_vstate *bs = NULL;
	enum wh_status st = sub_infer(c, body, seeds, c->n->n_inputs, &bs);
	if (st != WH_OK || !bs)
		return st;
	for (uint32_t k = 0; k < c->n->n_outputs && k < body->n_outputs; k++) {
		struct wh_vstate *o = OUT(c, k);
		const struct wh_vstate *b = &bs[body->outputs[k]];
		if (!o)
			continue;
		if (k < n_state) {
			copy_shape(o, b);
			if (IN(c, k))
				merge_into(o, IN(c, k));
			continue;
		}
		o->dtype = b->dtype;
		if (!ranked(b) || b->rank >= WH_MAX_RANK)
			continue;
		uint32_t j = k - n_state;
		int32_t axis;
		if (!norm_axis(j < n_out_axes ? out_axes[j] : 0, b->rank + 1, &axis)) {
			int32_t r = b->rank + 1;
			wh_infer_states_free(bs, body->n_values);
			return bad_axis(c, j < n_out_axes ? out_axes[j] : 0, r);
		}
		o->rank = b->rank + 1;
		for (int32_t d = 0, i = 0; d < o->rank; d++) {
			if (d == axis)
				dim_set(o, d, seq);
			else
				dim_copy(o, d, b, i++);
		}
	}
	wh_infer_states_free(bs, body->n_values);
	return WH_OK;
}

/* ---- transformer, signal, string, ML and training ops ---- */

/* A dimension known as a product of two (head count x head size), or unknown. */
static void dim_mul(struct wh_vstate *o, int32_t i, int64_t a, int64_t b)
{
	int64_t v;
	dim_set(o, i, a >= 0 && b >= 0 && wh_mul_i64(a, b, &v) ? v : -1);
}

/* s->dims[i] / by when both are known and it divides, else -1. */
static int64_t dim_div(const struct wh_vstate *s, int32_t i, int64_t by)
{
	return ranked(s) && i < s->rank && s->dims[i] >= 0 && by > 0 && s->dims[i] % by == 0 ? s->dims[i] / by : -1;
}

/* Attention (Q, K, V, attn_mask, past_key, past_value) and FlexAttention (Q, K, V): Q, K, V
 * are [B, H, S, D] or, with the head counts as attributes, [B, S, H * D]. Outputs: Y, then
 * present_key [B, Hkv, T, D], present_value [B, Hkv, T, Dv], qk_matmul_output
 * [B, Hq, Sq, T] where T = past length + S. */
static enum wh_status r_attention(struct ictx *c)
{
	const struct wh_vstate *q = IN(c, 0), *k = IN(c, 1), *v = IN(c, 2), *pk = IN(c, 4);
	enum wh_dtype qdt = q ? q->dtype : WH_DT_UNDEFINED;
	out_set(c, 0, qdt, -1);
	out_set(c, 1, k ? k->dtype : WH_DT_UNDEFINED, -1);
	out_set(c, 2, v ? v->dtype : WH_DT_UNDEFINED, -1);
	out_set(c, 3, qdt, -1);
	if (!ranked(q) || !ranked(k) || !ranked(v))
		return WH_OK;
	if ((q->rank != 3 && q->rank != 4) || k->rank != q->rank || v->rank != q->rank) {
		char b1[256], b2[256];
		return node_err(c, WH_ERR_SHAPE, "Q %s and K %s (and V) must all be rank 3 or all rank 4",
				dims_str(q, b1, sizeof b1), dims_str(k, b2, sizeof b2));
	}
	/* g: [B, Hq, Sq, Hkv, T, D, Dv] */
	struct wh_vstate g = {.rank = 7};
	dim_copy(&g, 0, q, 0);
	if (q->rank == 4) {
		dim_copy(&g, 1, q, 1);
		dim_copy(&g, 2, q, 2);
		dim_copy(&g, 3, k, 1);
		dim_copy(&g, 4, k, 2);
		dim_copy(&g, 5, q, 3);
		dim_copy(&g, 6, v, 3);
	} else {
		int64_t qh = wh_node_attr_int(c->n, "q_num_heads", 0), kvh = wh_node_attr_int(c->n, "kv_num_heads", 0);
		dim_set(&g, 1, qh > 0 ? qh : -1);
		dim_copy(&g, 2, q, 1);
		dim_set(&g, 3, kvh > 0 ? kvh : -1);
		dim_copy(&g, 4, k, 1);
		dim_set(&g, 5, dim_div(q, 2, qh));
		dim_set(&g, 6, dim_div(v, 2, kvh));
	}
	if (pk) {
		int64_t t = -1;
		if (ranked(pk) && pk->rank == 4 && pk->dims[2] >= 0 && g.dims[4] >= 0 && !wh_add_i64(pk->dims[2], g.dims[4], &t))
			return node_err(c, WH_ERR_OVERFLOW, "the total sequence length overflows");
		dim_set(&g, 4, t);
	}
	struct wh_vstate *o = out_set(c, 0, qdt, q->rank);
	if (o) {
		dim_copy(o, 0, &g, 0);
		if (q->rank == 4) {
			dim_copy(o, 1, &g, 1);
			dim_copy(o, 2, &g, 2);
			dim_copy(o, 3, &g, 6);
		} else {
			dim_copy(o, 1, &g, 2);
			dim_mul(o, 2, g.dims[1], g.dims[6]);
		}
	}
	static const int32_t outs[3][4] = {{0, 3, 4, 5}, {0, 3, 4, 6}, {0, 1, 2, 4}};
	for (uint32_t j = 0; j < 3; j++) {
		const struct wh_vstate *like = j == 0 ? k : (j == 1 ? v : q);
		if (!(o = out_set(c, 1 + j, like->dtype, 4)))
			continue;
		for (int32_t i = 0; i < 4; i++)
			dim_copy(o, i, &g, outs[j][i]);
	}
	return WH_OK;
}

/* LinearAttention: query [B, T, Hq * dk], key [B, T, Hkv * dk], value [B, T, Hkv * dv];
 * output [B, T, Hq * dv], present_state [B, Hkv, dk, dv] (past_state's type, else query's). */
static enum wh_status r_linear_attention(struct ictx *c)
{
	const struct wh_vstate *q = IN(c, 0), *v = IN(c, 2), *past = IN(c, 3);
	enum wh_dtype qdt = q ? q->dtype : WH_DT_UNDEFINED;
	int64_t hq = wh_node_attr_int(c->n, "q_num_heads", 0), hkv = wh_node_attr_int(c->n, "kv_num_heads", 0);
	struct wh_vstate *o = out_set(c, 0, qdt, ranked(q) ? 3 : -1);
	if (o) {
		dim_copy(o, 0, q, 0);
		dim_copy(o, 1, q, 1);
		dim_mul(o, 2, hq, dim_div(v, 2, hkv));
	}
	if (!(o = out_set(c, 1, past ? past->dtype : qdt, 4)))
		return WH_OK;
	if (ranked(q))
		dim_copy(o, 0, q, 0);
	dim_set(o, 1, hkv > 0 ? hkv : -1);
	dim_set(o, 2, dim_div(q, 2, hq));
	dim_set(o, 3, dim_div(v, 2, hkv));
	return WH_OK;
}

/* CausalConvWithState: input [B, C, L], weight [C, 1, K]; output like the input,
 * present_state [B, C, K - 1]. */
static enum wh_status r_causal_conv_state(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *w = IN(c, 1);
	out_like(c, 0, x, x ? x->dtype : WH_DT_UNDEFINED);
	struct wh_vstate *o = out_set(c, 1, x ? x->dtype : WH_DT_UNDEFINED, 3);
	if (!o)
		return WH_OK;
	if (ranked(x) && x->rank == 3) {
		dim_copy(o, 0, x, 0);
		dim_copy(o, 1, x, 1);
	}
	if (ranked(w) && w->rank == 3 && w->dims[2] >= 1)
		dim_set(o, 2, w->dims[2] - 1);
	return WH_OK;
}

/* A scalar integer input's value (dft_length, axis, frame_step, ...). */
static bool st_scalar(const struct wh_vstate *s, int64_t *v)
{
	uint32_t n;
	return st_ints(s, v, 1, &n) && n == 1;
}

/* DFT: the signal axis becomes the transform's length (n / 2 + 1 bins one-sided), the last
 * dimension 2 (complex), or 1 for an inverse one-sided transform (n = 2 * (bins - 1) by
 * default). The axis is an attribute before opset 20, then an input (default -2). */
static enum wh_status r_dft(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *len = IN(c, 1), *axis_in = c->opset >= 20 ? IN(c, 2) : NULL;
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, ranked(x) ? x->rank : -1);
	if (!o || !ranked(x))
		return WH_OK;
	if (x->rank < 2)
		return node_err(c, WH_ERR_SHAPE, "input has rank %d, expected at least 2", x->rank);
	bool inverse = wh_node_attr_int(c->n, "inverse", 0) != 0, onesided = wh_node_attr_int(c->n, "onesided", 0) != 0;
	int64_t axis = c->opset >= 20 ? -2 : wh_node_attr_int(c->n, "axis", 1);
	bool axis_known = !axis_in || st_scalar(axis_in, &axis);
	int32_t ax = -1;
	if (axis_known && (!norm_axis(axis, x->rank, &ax) || ax == x->rank - 1))
		return bad_axis(c, axis, x->rank - 1);
	int64_t n = -1;
	bool len_known = len ? st_scalar(len, &n) : false;
	bool resized = len || onesided;
	for (int32_t i = 0; i < x->rank - 1; i++)
		if (!resized || (axis_known && i != ax))
			dim_copy(o, i, x, i);
	dim_set(o, x->rank - 1, inverse && onesided ? 1 : 2);
	if (!resized || !axis_known)
		return WH_OK;
	if (!len)
		n = x->dims[ax] < 0 ? -1 : (inverse ? 2 * (x->dims[ax] - 1) : x->dims[ax]);
	if ((len && !len_known) || n < 0)
		return WH_OK;
	dim_set(o, ax, onesided && !inverse ? n / 2 + 1 : n);
	return WH_OK;
}

/* STFT: signal [B, L, 1 or 2] or [B, L] (real) -> [B, frames, bins, 2]; the frame length is frame_length,
 * else the window's length (else the signal's). */
static enum wh_status r_stft(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *step = IN(c, 1), *w = IN(c, 2), *len = IN(c, 3);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, 4);
	if (!o)
		return WH_OK;
	if (ranked(x) && x->rank >= 1)
		dim_copy(o, 0, x, 0);
	dim_set(o, 3, 2);
	int64_t s = -1, fl = -1, siglen = ranked(x) && (x->rank == 2 || x->rank == 3) ? x->dims[1] : -1;
	if (len)
		st_scalar(len, &fl);
	else if (w)
		fl = ranked(w) && w->rank == 1 ? w->dims[0] : -1;
	else
		fl = siglen;
	if (fl > 0)
		dim_set(o, 2, wh_node_attr_int(c->n, "onesided", 1) ? fl / 2 + 1 : fl);
	if (st_scalar(step, &s) && s > 0 && fl > 0 && siglen >= fl)
		dim_set(o, 1, 1 + (siglen - fl) / s);
	return WH_OK;
}

/* Hann, Hamming, Blackman windows: [size] of output_datatype. */
static enum wh_status r_window_fn(struct ictx *c)
{
	int64_t n = -1;
	struct wh_vstate *o = out_set(c, 0, attr_dtype(c->n, "output_datatype", WH_DT_FLOAT), 1);
	if (o && st_scalar(IN(c, 0), &n))
		dim_set(o, 0, n);
	return WH_OK;
}

/* MelWeightMatrix(num_mel_bins, dft_length, ...): [dft_length / 2 + 1, num_mel_bins]. */
static enum wh_status r_mel_weight(struct ictx *c)
{
	int64_t bins, len;
	struct wh_vstate *o = out_set(c, 0, attr_dtype(c->n, "output_datatype", WH_DT_FLOAT), 2);
	if (o && st_scalar(IN(c, 1), &len) && len >= 0)
		dim_set(o, 0, len / 2 + 1);
	if (o && st_scalar(IN(c, 0), &bins))
		dim_set(o, 1, bins);
	return WH_OK;
}

/* AffineGrid(theta, size [N, C, H, W] or [N, C, D, H, W]) -> [N, H, W, 2] or [N, D, H, W, 3]. */
static enum wh_status r_affine_grid(struct ictx *c)
{
	const struct wh_vstate *theta = IN(c, 0);
	int64_t sz[5];
	uint32_t n = 0;
	bool known = st_ints(IN(c, 1), sz, 5, &n);
	int64_t len = known ? n : static_len(IN(c, 1));
	enum wh_dtype dt = theta ? theta->dtype : WH_DT_UNDEFINED;
	if (len != 4 && len != 5)
		return out_unknown(c, dt);
	struct wh_vstate *o = out_set(c, 0, dt, (int32_t)len);
	if (!o)
		return WH_OK;
	if (ranked(theta) && theta->rank >= 1)
		dim_copy(o, 0, theta, 0);
	for (int32_t i = 2; known && i < len; i++)
		dim_set(o, i - 1, sz[i]);
	if (known)
		dim_set(o, 0, sz[0]);
	dim_set(o, (int32_t)len - 1, len - 2);
	return WH_OK;
}

/* Col2Im(input [N, C * prod(block), L], image_shape, block_shape) -> [N, C, image...]. */
static enum wh_status r_col2im(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	int64_t img[WH_MAX_RANK], blk[WH_MAX_RANK];
	uint32_t ni = 0, nb = 0;
	bool ki = st_ints(IN(c, 1), img, WH_MAX_RANK, &ni), kb = st_ints(IN(c, 2), blk, WH_MAX_RANK, &nb);
	int64_t nsp = ki ? ni : static_len(IN(c, 1));
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	struct wh_vstate *o = out_set(c, 0, dt, nsp >= 0 && nsp + 2 <= WH_MAX_RANK ? (int32_t)nsp + 2 : -1);
	if (!o || o->rank < 0)
		return WH_OK;
	if (ranked(x) && x->rank == 3) {
		dim_copy(o, 0, x, 0);
		int64_t prod = 1;
		for (uint32_t i = 0; kb && i < nb && prod > 0; i++)
			if (blk[i] <= 0 || !wh_mul_i64(prod, blk[i], &prod))
				prod = -1;
		if (kb && prod > 0)
			dim_set(o, 1, dim_div(x, 1, prod));
	}
	for (uint32_t i = 0; ki && i < ni; i++)
		dim_set(o, 2 + (int32_t)i, img[i]);
	return WH_OK;
}

/* RoiAlign and MaxRoiPool (X [N, C, H, W], rois [R, ...]) -> [R, C, h, w], the output size
 * (h, w) from output_height and output_width (RoiAlign) or pooled_shape (MaxRoiPool). */
static enum wh_status r_roi_pool(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *rois = IN(c, 1);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, 4);
	if (!o)
		return WH_OK;
	if (ranked(rois) && rois->rank == 2)
		dim_copy(o, 0, rois, 0);
	if (ranked(x) && x->rank == 4)
		dim_copy(o, 1, x, 1);
	int64_t ps[2];
	uint32_t n;
	if (!strcmp(c->n->op_type, "RoiAlign")) {
		dim_set(o, 2, wh_node_attr_int(c->n, "output_height", 1));
		dim_set(o, 3, wh_node_attr_int(c->n, "output_width", 1));
	} else if (wh_fold_attr_ints(c->n, "pooled_shape", ps, 2, &n) && n == 2) {
		dim_set(o, 2, ps[0]);
		dim_set(o, 3, ps[1]);
	}
	return WH_OK;
}

/* MaxUnpool(X, I, output_shape): output_shape when given, else each spatial dimension is
 * (in - 1) * stride + kernel - pads. */
static enum wh_status r_max_unpool(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *os = IN(c, 2);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	int64_t v[WH_MAX_RANK] = {0};
	uint32_t n = 0;
	if (os) {
		bool known = st_ints(os, v, WH_MAX_RANK, &n);
		int64_t len = known ? n : static_len(os);
		struct wh_vstate *o = out_set(c, 0, dt, len >= 0 && len <= WH_MAX_RANK ? (int32_t)len : -1);
		for (uint32_t i = 0; o && known && i < n; i++)
			dim_set(o, (int32_t)i, v[i]);
		return WH_OK;
	}
	struct wh_vstate *o = out_set(c, 0, dt, ranked(x) ? x->rank : -1);
	if (!o || !ranked(x))
		return WH_OK;
	struct window win;
	enum wh_status st = read_window(c, x->rank, "unpooling", NULL, &win);
	if (st != WH_OK)
		return st;
	dim_copy(o, 0, x, 0);
	dim_copy(o, 1, x, 1);
	for (int32_t i = 0; i < win.nsp; i++) {
		int64_t in = x->dims[2 + i], r;
		if (in < 1 || win.kernel[i] < 0)
			continue;
		if (!wh_mul_i64(in - 1, win.strides[i], &r) || !wh_add_i64(r, win.kernel[i], &r) ||
		    __builtin_sub_overflow(r, win.pads[i], &r) || __builtin_sub_overflow(r, win.pads[win.nsp + i], &r))
			return node_err(c, WH_ERR_OVERFLOW, "output size overflows");
		dim_set(o, 2 + i, r);
	}
	return WH_OK;
}

/* NegativeLogLikelihoodLoss(input, target) and SoftmaxCrossEntropyLoss(scores, labels): the
 * loss is a scalar, or the target's shape with reduction "none"; SoftmaxCrossEntropyLoss's
 * second output (log_prob) has the scores' shape. */
static enum wh_status r_loss(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *t = IN(c, 1);
	enum wh_dtype dt = x ? x->dtype : WH_DT_UNDEFINED;
	char red[16];
	wh_node_attr_string(c->n, "reduction", "mean", red, sizeof red);
	if (!strcmp(red, "none"))
		out_like(c, 0, t, dt);
	else
		out_set(c, 0, dt, 0);
	out_like(c, 1, x, dt);
	return WH_OK;
}

/* StringSplit(X) -> substrings [X..., max splits] (strings), lengths like X (int64). */
static enum wh_status r_string_split(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, WH_DT_STRING, ranked(x) && x->rank < WH_MAX_RANK ? x->rank + 1 : -1);
	for (int32_t i = 0; o && o->rank > 0 && i < x->rank; i++)
		dim_copy(o, i, x, i);
	out_like(c, 1, x, WH_DT_INT64);
	return WH_OK;
}

/* StringNormalizer(X [C] or [1, C]): stop words may remove elements. */
static enum wh_status r_string_normalizer(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	if (!wh_node_attr(c->n, "stopwords")) {
		out_like(c, 0, x, WH_DT_STRING);
		return WH_OK;
	}
	struct wh_vstate *o = out_set(c, 0, WH_DT_STRING, ranked(x) ? x->rank : -1);
	if (o && ranked(x) && x->rank == 2)
		dim_copy(o, 0, x, 0);
	return WH_OK;
}

/* TfIdfVectorizer(X [C] or [N, C]) -> [max(ngram_indexes) + 1] or [N, that] floats. */
static enum wh_status r_tfidf(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, WH_DT_FLOAT, ranked(x) ? x->rank : -1);
	if (!o || !ranked(x) || x->rank < 1)
		return WH_OK;
	const int64_t *idx;
	int64_t n = wh_node_attr_ints(c->n, "ngram_indexes", &idx), width = 0;
	for (int64_t i = 0; i < n; i++)
		if (idx[i] >= width)
			width = idx[i] + 1;
	if (x->rank == 2)
		dim_copy(o, 0, x, 0);
	dim_set(o, x->rank - 1, n >= 0 ? width : -1);
	return WH_OK;
}

/* Einsum: each letter of the equation is one dimension; "..." the broadcast of the inputs'
 * remaining leading dimensions. Without "->" the output is "..." then the letters used
 * once, in alphabetical order. */
static enum wh_status r_einsum(struct ictx *c)
{
	const struct wh_vstate *x0 = IN(c, 0);
	enum wh_dtype dt = x0 ? x0->dtype : WH_DT_UNDEFINED;
	char eq[256], buf[256];
	wh_node_attr_string(c->n, "equation", "", buf, sizeof buf);
	size_t k = 0;
	for (const char *p = buf; *p && k + 1 < sizeof eq; p++)
		if (*p != ' ')
			eq[k++] = *p;
	eq[k] = '\0';
	out_set(c, 0, dt, -1);
	char *arrow = strstr(eq, "->");
	if (arrow)
		*arrow = '\0';
	int64_t letter[52];
	const char *lparam[52] = {0};
	int uses[52] = {0};
	for (int i = 0; i < 52; i++)
		letter[i] = -2; /* not seen */
	struct wh_vstate ell = {.rank = 0}; /* the broadcast "..." dimensions */
	bool have_ell = false;
	uint32_t in = 0;
	for (char *term = eq, *next; term; term = next, in++) {
		next = strchr(term, ',');
		if (next)
			*next++ = '\0';
		const struct wh_vstate *x = IN(c, in);
		if (!ranked(x))
			return WH_OK;
		int32_t n_letters = 0;
		char *dots = strstr(term, "...");
		for (char *p = term; *p; p++)
			n_letters += *p != '.';
		int32_t n_ell = dots ? x->rank - n_letters : 0;
		if (n_ell < 0 || (!dots && n_letters != x->rank))
			return node_err(c, WH_ERR_SHAPE, "term '%s' does not match input %u of rank %d", term, in, x->rank);
		int32_t d = 0;
		for (char *p = term; *p; p++) {
			if (*p == '.') {
				if (p != dots)
					continue;
				/* right-aligned broadcast into ell */
				const struct wh_vstate *parts[2] = {&ell, NULL};
				struct wh_vstate sub = {.rank = n_ell};
				for (int32_t i = 0; i < n_ell; i++)
					dim_copy(&sub, i, x, d + i);
				parts[1] = &sub;
				int32_t r = n_ell > ell.rank ? n_ell : ell.rank;
				struct wh_vstate merged = {.rank = r};
				for (int32_t i = 0; i < r; i++) {
					int32_t a = i - (r - ell.rank), b = i - (r - n_ell);
					const struct wh_vstate *src = parts[0];
					int32_t si = a;
					if (a < 0 || (b >= 0 && (ell.dims[a] == 1 || (ell.dims[a] < 0 && sub.dims[b] > 1)))) {
						src = parts[1];
						si = b;
					}
					dim_copy(&merged, i, src, si);
				}
				ell = merged;
				have_ell = true;
				d += n_ell;
				continue;
			}
			int li = *p >= 'a' && *p <= 'z' ? *p - 'a' : (*p >= 'A' && *p <= 'Z' ? 26 + *p - 'A' : -1);
			if (li < 0)
				return node_err(c, WH_ERR_SHAPE, "equation '%s' has the character '%c'", buf, *p);
			uses[li]++;
			if (letter[li] < 0 && (letter[li] == -2 || x->dims[d] >= 0)) {
				letter[li] = x->dims[d];
				lparam[li] = x->dims[d] >= 0 ? NULL : x->params[d];
			}
			d++;
		}
	}
	char out_term[128];
	k = 0;
	if (arrow) {
		snprintf(out_term, sizeof out_term, "%s", arrow + 2);
	} else {
		if (have_ell)
			k += (size_t)snprintf(out_term, sizeof out_term, "...");
		for (int li = 0; li < 52 && k + 1 < sizeof out_term; li++)
			if (uses[li] == 1)
				out_term[k++] = (char)(li < 26 ? 'a' + li : 'A' + li - 26);
		out_term[k] = '\0';
	}
	int32_t rank = 0;
	for (const char *p = out_term; *p; p++)
		rank += *p != '.';
	if (strstr(out_term, "..."))
		rank += ell.rank;
	if (rank > WH_MAX_RANK)
		return WH_OK;
	struct wh_vstate *o = out_set(c, 0, dt, rank);
	if (!o)
		return WH_OK;
	int32_t d = 0;
	for (const char *p = out_term; *p; p++) {
		if (*p == '.') {
			if (!strncmp(p, "...", 3) && (p == out_term || p[-1] != '.'))
				for (int32_t i = 0; i < ell.rank; i++)
					dim_copy(o, d++, &ell, i);
			continue;
		}
		int li = *p >= 'a' && *p <= 'z' ? *p - 'a' : (*p >= 'A' && *p <= 'Z' ? 26 + *p - 'A' : -1);
		if (li < 0 || letter[li] == -2)
			return node_err(c, WH_ERR_SHAPE, "output label '%c' of '%s' is in no input", *p, buf);
		o->dims[d] = letter[li];
		o->params[d++] = lparam[li];
	}
	return WH_OK;
}

/* ArrayFeatureExtractor(X, Y): X's last dimension becomes Y's element count ([1, K] for a
 * 1-d X, as the ONNX reference and ONNX Runtime give). */
static enum wh_status r_array_feature(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0), *y = IN(c, 1);
	int32_t rank = !ranked(x) ? -1 : (x->rank == 1 ? 2 : x->rank);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, rank);
	if (!o || rank < 1)
		return WH_OK;
	if (x->rank == 1)
		dim_set(o, 0, 1);
	for (int32_t i = 0; x->rank > 1 && i < x->rank - 1; i++)
		dim_copy(o, i, x, i);
	uint64_t count;
	if (all_static(y) && wh_shape_count(y->dims, y->rank, &count))
		dim_set(o, rank - 1, (int64_t)count);
	return WH_OK;
}

/* LabelEncoder: X's shape, the type of the values attribute. */
static enum wh_status r_label_encoder(struct ictx *c)
{
	static const struct {
		const char *attr;
		enum wh_dtype dt;
	} kinds[] = {{"values_strings", WH_DT_STRING}, {"values_int64s", WH_DT_INT64}, {"values_floats", WH_DT_FLOAT}};
	enum wh_dtype dt = WH_DT_UNDEFINED;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (wh_node_attr(c->n, kinds[i].attr))
			dt = kinds[i].dt;
	const struct wh_attr *t = wh_node_attr(c->n, "values_tensor");
	if (t && t->type == WH_ATTR_TENSOR && t->t)
		dt = t->t->dtype;
	out_like(c, 0, IN(c, 0), dt);
	return WH_OK;
}

/* TreeEnsemble(X [N, F]) -> [N, n_targets] (n_targets, else the largest leaf target + 1). */
static enum wh_status r_tree_ensemble(struct ictx *c)
{
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, 2);
	if (!o)
		return WH_OK;
	if (ranked(x) && x->rank >= 1)
		dim_copy(o, 0, x, 0);
	int64_t n = wh_node_attr_int(c->n, "n_targets", -1);
	if (n < 0) {
		const int64_t *t;
		int64_t cnt = wh_node_attr_ints(c->n, "leaf_targetids", &t);
		for (int64_t i = 0; i < cnt; i++)
			if (t[i] + 1 > n)
				n = t[i] + 1;
	}
	dim_set(o, 1, n);
	return WH_OK;
}

/* Adagrad (R, T, X[n], G[n], H[n] -> X[n], H[n]), Momentum (X, G, V -> X, V) and Adam
 * (X, G, V, H -> X, V, H): every output is its tensor's input updated; the gradients G
 * have no output, so output k is input 2 + k for the first group and 2 + n + k after it. */
static enum wh_status r_optimizer(struct ictx *c)
{
	uint32_t ins = c->n->n_inputs, outs = c->n->n_outputs;
	if (ins < 2 + outs)
		return WH_OK;
	uint32_t n = ins - 2 - outs;
	for (uint32_t k = 0; k < outs; k++) {
		const struct wh_vstate *x = IN(c, 2 + k + (k >= n ? n : 0));
		out_like(c, k, x, x ? x->dtype : WH_DT_UNDEFINED);
	}
	return WH_OK;
}

/* CenterCropPad(input, shape): the listed axes (all by default) take shape's values. */
static enum wh_status r_center_crop_pad(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o)
{
	int64_t axes[WH_MAX_RANK], shape[WH_MAX_RANK];
	uint32_t na = 0, nsh = 0;
	if (!wh_fold_attr_ints(c->n, "axes", axes, WH_MAX_RANK, &na)) {
		na = (uint32_t)x->rank;
		for (uint32_t i = 0; i < na; i++)
			axes[i] = i;
	}
	bool known = st_ints(IN(c, 1), shape, WH_MAX_RANK, &nsh);
	if (known && nsh != na)
		return node_err(c, WH_ERR_SHAPE, "shape has %u values for %u axes", nsh, na);
	for (uint32_t i = 0; i < na; i++) {
		int32_t ax;
		if (!norm_axis(axes[i], x->rank, &ax))
			return bad_axis(c, axes[i], x->rank);
		dim_set(o, ax, known ? shape[i] : -1);
	}
	return WH_OK;
}

/* SequenceMap: each output is a sequence of the body's output of the same index. */
static enum wh_status r_sequence_map(struct ictx *c)
{
	const struct wh_graph *body = attr_graph(c->n, "body");
	for (uint32_t k = 0; k < c->n->n_outputs; k++)
		out_seq(c, k, body && k < body->n_outputs ? body->values[body->outputs[k]].dtype : WH_DT_UNDEFINED);
	return WH_OK;
}

/* Optional: inference has no optional type (an optional that holds a value is that value),
 * so its output stays untyped rather than be declared a plain tensor. */
static enum wh_status r_optional(struct ictx *c)
{
	return out_unknown(c, WH_DT_UNDEFINED);
}

static enum wh_status r_optional_has_element(struct ictx *c)
{
	out_set(c, 0, WH_DT_BOOL, 0);
	return WH_OK;
}

/* ---- dispatch ---- */

typedef enum wh_status (*rule_fn)(struct ictx *c);
/* A rule whose output 0 keeps input 0's type and rank: the dispatcher sets that output up
 * (run_rule) and calls it only when x's rank is known. on_x rules get the dimensions
 * unknown, like_x rules get x's, to change some of them. */
typedef enum wh_status (*x_rule_fn)(struct ictx *c, const struct wh_vstate *x, struct wh_vstate *o);

struct rule {
	rule_fn fn;
	x_rule_fn on_x, like_x;
};

static const struct {
	const char *op;
	rule_fn fn;
	x_rule_fn on_x, like_x;
} rules[] = {
	/* elementwise, same shape */
	{"Abs", r_unary}, {"Neg", r_unary}, {"Floor", r_unary}, {"Ceil", r_unary}, {"Round", r_unary},
	{"Sqrt", r_unary}, {"Exp", r_unary}, {"Log", r_unary}, {"Reciprocal", r_unary}, {"Relu", r_unary},
	{"Sigmoid", r_unary}, {"Tanh", r_unary}, {"HardSigmoid", r_unary}, {"HardSwish", r_unary},
	{"LeakyRelu", r_unary}, {"Elu", r_unary}, {"Selu", r_unary}, {"Celu", r_unary}, {"Softplus", r_unary},
	{"Softsign", r_unary}, {"Sin", r_unary}, {"Cos", r_unary}, {"Tan", r_unary}, {"Asin", r_unary},
	{"Acos", r_unary}, {"Atan", r_unary}, {"Sinh", r_unary}, {"Cosh", r_unary}, {"Asinh", r_unary},
	{"Acosh", r_unary}, {"Atanh", r_unary}, {"Erf", r_unary}, {"Sign", r_unary}, {"Identity", r_unary},
	{"Clip", r_unary}, {"Gelu", r_unary}, {"Mish", r_unary}, {"ThresholdedRelu", r_unary},
	{"Shrink", r_unary}, {"Not", r_unary}, {"BitwiseNot", r_unary}, {"Softmax", r_unary},
	{"LogSoftmax", r_unary}, {"Hardmax", r_unary}, {"LpNormalization", r_unary},
	{"InstanceNormalization", r_unary}, {"LRN", r_unary}, {"MeanVarianceNormalization", r_unary},
	{"GroupNormalization", r_unary}, {"CumSum", r_unary}, {"Trilu", r_unary},
	{"ReverseSequence", r_unary}, {"ScatterND", r_unary}, {"ScatterElements", r_unary},
	{"Scatter", r_unary}, {"IsNaN", r_unary_bool}, {"IsInf", r_unary_bool}, {"Dropout", r_dropout},
	{"Cast", r_cast}, {"CastLike", r_castlike}, {"Swish", r_unary}, {"CumProd", r_unary},
	{"RMSNormalization", r_unary}, {"RegexFullMatch", r_unary_bool}, {"BitCast", r_bitcast},
	{"RotaryEmbedding", r_unary}, {"TensorScatter", r_unary}, /* the output is input 0 updated */
	/* sequences (Identity passes one through as r_unary does) */
	{"SequenceConstruct", r_seq_of_input}, {"SplitToSequence", r_seq_of_input}, {"SequenceEmpty", r_seq_empty},
	{"SequenceInsert", r_unary}, {"SequenceErase", r_unary}, {"SequenceAt", r_seq_item},
	{"ConcatFromSequence", r_seq_item}, {"SequenceLength", r_seq_length},
	/* broadcasting */
	{"Add", r_arith}, {"Sub", r_arith}, {"Mul", r_arith}, {"Div", r_arith}, {"Pow", r_arith},
	{"Mod", r_arith}, {"Max", r_arith}, {"Min", r_arith}, {"Sum", r_arith}, {"Mean", r_arith},
	{"PRelu", r_arith}, {"BitShift", r_arith}, {"BitwiseAnd", r_arith}, {"BitwiseOr", r_arith},
	{"BitwiseXor", r_arith}, {"And", r_compare}, {"Or", r_compare}, {"Xor", r_compare},
	{"Equal", r_compare}, {"Less", r_compare}, {"Greater", r_compare}, {"LessOrEqual", r_compare},
	{"GreaterOrEqual", r_compare}, {"Where", r_where},
	/* windows */
	{"Conv", r_conv}, {"ConvInteger", r_conv_integer}, {"QLinearConv", r_qlinear_conv},
	{"ConvTranspose", r_conv_transpose}, {"AveragePool", r_pool}, {"MaxPool", r_pool},
	{"LpPool", r_pool}, {"GlobalAveragePool", .on_x = r_global_pool}, {"GlobalMaxPool", .on_x = r_global_pool},
	{"GlobalLpPool", .on_x = r_global_pool},
	/* normalisation, products */
	{"BatchNormalization", r_batchnorm}, {"LayerNormalization", r_layernorm},
	{"MatMul", r_matmul}, {"MatMulInteger", r_matmul_integer}, {"QLinearMatMul", r_qlinear_matmul},
	{"Gemm", r_gemm},
	/* shapes */
	{"Shape", r_shape}, {"Size", r_size}, {"Reshape", r_reshape}, {"Flatten", r_flatten},
	{"Squeeze", r_squeeze_unsqueeze}, {"Unsqueeze", r_squeeze_unsqueeze}, {"Transpose", .on_x = r_transpose}, {"Concat", r_concat},
	{"Split", r_split}, {"Gather", r_gather}, {"GatherElements", r_gather_elements},
	{"GatherND", r_gather_nd}, {"Slice", .on_x = r_slice}, {"Expand", r_expand}, {"Tile", .on_x = r_tile}, {"Pad", .on_x = r_pad},
	{"ConstantOfShape", r_constant_of_shape}, {"Range", r_range}, {"EyeLike", r_like_dtype},
	{"OneHot", r_onehot}, {"TopK", r_topk}, {"ArgMax", r_argminmax}, {"ArgMin", r_argminmax},
	{"ReduceSum", r_reduce}, {"ReduceMean", r_reduce}, {"ReduceMax", r_reduce}, {"ReduceMin", r_reduce},
	{"ReduceProd", r_reduce}, {"ReduceL1", r_reduce}, {"ReduceL2", r_reduce},
	{"ReduceSumSquare", r_reduce}, {"ReduceLogSum", r_reduce}, {"ReduceLogSumExp", r_reduce},
	{"Resize", .like_x = r_resize}, {"Upsample", .like_x = r_resize}, {"DepthToSpace", .on_x = r_depth_space},
	{"SpaceToDepth", .on_x = r_depth_space}, {"Constant", r_constant}, {"NonZero", r_nonzero},
	{"NonMaxSuppression", r_nms}, {"Compress", r_compress}, {"Unique", r_unique},
	{"QuantizeLinear", r_quantize}, {"DequantizeLinear", r_dequantize},
	{"DynamicQuantizeLinear", r_dyn_quantize}, {"RandomNormal", r_random}, {"RandomUniform", r_random},
	{"RandomNormalLike", r_like_dtype}, {"RandomUniformLike", r_like_dtype},
	{"Bernoulli", r_like_dtype}, {"Multinomial", r_multinomial}, {"LSTM", r_rnn}, {"GRU", r_rnn},
	{"RNN", r_rnn}, {"RoiAlign", r_roi_pool}, {"GridSample", r_grid_sample}, {"Det", r_det},
	{"If", r_if}, {"Loop", r_loop}, {"Scan", r_scan},
	/* transformer, signal, string ops */
	{"Attention", r_attention}, {"LinearAttention", r_linear_attention},
	{"CausalConvWithState", r_causal_conv_state}, {"SwiGLU", r_unary}, {"Einsum", r_einsum},
	{"DFT", r_dft}, {"STFT", r_stft}, {"HannWindow", r_window_fn}, {"HammingWindow", r_window_fn},
	{"BlackmanWindow", r_window_fn}, {"MelWeightMatrix", r_mel_weight}, {"AffineGrid", r_affine_grid},
	{"Col2Im", r_col2im}, {"DeformConv", r_conv}, {"MaxRoiPool", r_roi_pool}, {"MaxUnpool", r_max_unpool},
	{"NegativeLogLikelihoodLoss", r_loss}, {"SoftmaxCrossEntropyLoss", r_loss}, {"StringConcat", r_arith},
	{"StringSplit", r_string_split}, {"StringNormalizer", r_string_normalizer}, {"TfIdfVectorizer", r_tfidf},
	{"CenterCropPad", .like_x = r_center_crop_pad}, {"SequenceMap", r_sequence_map}, {"Optional", r_optional},
	{"OptionalHasElement", r_optional_has_element}, {"OptionalGetElement", r_unary} /* the value held passes through */,
};

/* Ops of other domains. */
static const struct {
	const char *domain, *op;
	rule_fn fn;
} domain_rules[] = {
	{"ai.onnx.ml", "ArrayFeatureExtractor", r_array_feature}, {"ai.onnx.ml", "Binarizer", r_unary},
	{"ai.onnx.ml", "LabelEncoder", r_label_encoder}, {"ai.onnx.ml", "TreeEnsemble", r_tree_ensemble},
	{"ai.onnx.preview", "FlexAttention", r_attention}, {"ai.onnx.preview.training", "Adagrad", r_optimizer},
	{"ai.onnx.preview.training", "Adam", r_optimizer}, {"ai.onnx.preview.training", "Momentum", r_optimizer},
	{"com.microsoft", "QLinearAdd", r_qlinear_binary}, {"com.microsoft", "QLinearMul", r_qlinear_binary},
	{"com.microsoft", "QLinearGlobalAveragePool", r_qlinear_gap}, {"com.microsoft", "QLinearSoftmax", r_unary},
	{"com.microsoft", "QGemm", r_qgemm},
};

static bool is_default_domain(const char *d)
{
	return !d || !*d || !strcmp(d, "ai.onnx");
}

/* The rule of an op; false when it has none. */
static bool find_rule(const char *domain, const char *op, struct rule *out)
{
	if (is_default_domain(domain)) {
		for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++)
			if (!strcmp(rules[i].op, op)) {
				*out = (struct rule){rules[i].fn, rules[i].on_x, rules[i].like_x};
				return true;
			}
		return false;
	}
	for (size_t i = 0; i < sizeof domain_rules / sizeof domain_rules[0]; i++)
		if (!strcmp(domain_rules[i].domain, domain) && !strcmp(domain_rules[i].op, op)) {
			*out = (struct rule){domain_rules[i].fn, NULL, NULL};
			return true;
		}
	return false;
}

bool wh_shape_has_rule(const char *domain, const char *op_type)
{
	struct rule r;
	return find_rule(domain, op_type, &r);
}

static enum wh_status run_rule(struct ictx *c, const struct rule *r)
{
	if (r->fn)
		return r->fn(c);
	const struct wh_vstate *x = IN(c, 0);
	struct wh_vstate *o = r->like_x ? out_like_x(c) : out_set(c, 0, x ? x->dtype : WH_DT_UNDEFINED, x ? x->rank : -1);
	if (!o || !ranked(x))
		return WH_OK;
	return r->like_x ? r->like_x(c, x, o) : r->on_x(c, x, o);
}

static bool default_domain(const struct wh_node *n)
{
	return is_default_domain(n->domain);
}

static void note_unknown(struct ictx *c)
{
	for (uint32_t i = 0; i < *c->n_unknown; i++)
		if (!strcmp(c->unknown[i], c->n->op_type))
			return;
	if (*c->n_unknown < WH_MAX_UNKNOWN_OPS) {
		c->unknown[(*c->n_unknown)++] = c->n->op_type;
		wh_info("shape inference: op %s%s%s has no shape rule: its outputs stay unknown", c->n->domain && *c->n->domain ? c->n->domain : "",
			c->n->domain && *c->n->domain ? "." : "", c->n->op_type);
	}
}

enum { EVAL_MAX_INPUTS = 64, EVAL_MAX_OUTPUTS = 16 };

/* The node's inputs as constant tensors (ins[i] NULL for an omitted input); false when one is
 * not known. Shape and Size read only the shape: an input of static shape but unknown
 * contents stands in as a tensor without data (*shape_only_out). */
static bool eval_inputs(struct ictx *c, struct wh_tensor *store, const struct wh_tensor **ins, bool *shape_only_out)
{
	const struct wh_node *n = c->n;
	*shape_only_out = false;
	if (!default_domain(n) || n->n_outputs == 0 || n->n_outputs > EVAL_MAX_OUTPUTS || n->n_inputs > EVAL_MAX_INPUTS)
		return false;
	if (wh_node_holds_graphs(n))
		return false;
	bool shape_op = !strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size");
	for (uint32_t i = 0; i < n->n_inputs; i++) {
		const struct wh_vstate *s = IN(c, i);
		ins[i] = NULL;
		if (!s)
			continue;
		if (s->known) {
			ins[i] = &s->value;
			continue;
		}
		if (!shape_op || !all_static(s))
			return false;
		/* only the shape is read */
		struct wh_tensor *t = &store[i];
		wh_tensor_init(t);
		t->dtype = s->dtype ? s->dtype : WH_DT_FLOAT;
		t->rank = s->rank;
		memcpy(t->dims, s->dims, sizeof t->dims);
		if (!wh_shape_count(t->dims, t->rank, &t->count))
			return false;
		ins[i] = t;
		*shape_only_out = true;
	}
	return true;
}

/* Whether the outputs the rule inferred are static and within the limit, so that an evaluator
 * that allocates its own outputs (the executor's kernels) may run. Ops whose output size
 * depends on the values are bounded by their inputs' size instead. */
static bool eval_bounded(struct ictx *c, const struct wh_tensor *const *ins)
{
	const struct wh_node *n = c->n;
	bool all = true;
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		const struct wh_vstate *o = OUT(c, k);
		uint64_t count;
		if (o && (o->seq || !all_static(o) || !wh_shape_count(o->dims, o->rank, &count) || count > c->limit))
			all = false;
	}
	if (all)
		return true;
	if (strcmp(n->op_type, "NonZero") && strcmp(n->op_type, "Unique") && strcmp(n->op_type, "Compress"))
		return false;
	uint64_t total = 0;
	for (uint32_t i = 0; i < n->n_inputs; i++)
		if (ins[i])
			total += ins[i]->count * (uint64_t)(ins[i]->rank > 0 ? ins[i]->rank : 1);
	return total <= c->limit;
}

/* Stores evaluated outputs as the node's known values: numeric tensors within the limit only
 * (anything else leaves the rule's result). Takes the outputs. */
static void eval_store(struct ictx *c, struct wh_tensor *outs, bool *done)
{
	const struct wh_node *n = c->n;
	for (uint32_t k = 0; *done && k < n->n_outputs; k++)
		if (OUT(c, k) && (!wh_value_is_tensor(&outs[k]) || !wh_fold_dtype_ok(outs[k].dtype) || outs[k].count > c->limit))
			*done = false;
	for (uint32_t k = 0; *done && k < n->n_outputs; k++) {
		struct wh_vstate *o = OUT(c, k);
		if (!o)
			continue;
		st_clear_value(o);
		o->sym.valid = false;
		o->seq = false;
		o->dtype = outs[k].dtype;
		o->rank = outs[k].rank;
		for (int32_t i = 0; i < WH_MAX_RANK; i++) {
			o->dims[i] = i < outs[k].rank ? outs[k].dims[i] : -1;
			o->params[i] = NULL;
		}
		o->value = outs[k];
		o->known = true;
		wh_tensor_init(&outs[k]);
	}
}

/* Computes the node's outputs from known inputs. Without an evaluator, before the shape rule
 * (fold-eval.c bounds its outputs itself); with one, after it (after_rule), when the rule has
 * bounded the outputs. Constant, and Shape and Size of an input without contents, are shape
 * inference's own (fold-eval.c) in both cases. */
static enum wh_status try_eval(struct ictx *c, bool after_rule, bool *done)
{
	const struct wh_node *n = c->n;
	struct wh_tensor store[EVAL_MAX_INPUTS], outs[EVAL_MAX_OUTPUTS];
	const struct wh_tensor *ins[EVAL_MAX_INPUTS];
	bool shape_only;
	*done = false;
	if (!eval_inputs(c, store, ins, &shape_only))
		return WH_OK;
	/* a Constant's value is its attribute: nothing to compute */
	bool own = !c->eval || shape_only || !strcmp(n->op_type, "Constant");
	if (own == after_rule || (after_rule && !eval_bounded(c, ins)))
		return WH_OK;
	for (uint32_t k = 0; k < n->n_outputs; k++)
		wh_tensor_init(&outs[k]);
	enum wh_status st = own ? wh_fold_eval(n, c->opset, ins, outs, c->limit, done)
				: c->eval(c->m, c->g, n, c->opset, ins, outs, done);
	if (st == WH_OK && *done)
		eval_store(c, outs, done);
	for (uint32_t k = 0; k < n->n_outputs; k++)
		wh_tensor_release(&outs[k]);
	return st;
}

/* Combines the inferred state with a type/shape the model declares for the value. */
static void merge_declared(struct wh_vstate *s, const struct wh_value *v)
{
	if (!s->dtype)
		s->dtype = v->dtype;
	if (v->rank < 0)
		return;
	if (s->rank < 0) {
		if (v->rank > WH_MAX_RANK)
			return;
		s->rank = v->rank;
		for (int32_t i = 0; i < v->rank; i++) {
			s->dims[i] = v->dims[i].value;
			s->params[i] = v->dims[i].value >= 0 ? NULL : v->dims[i].param;
		}
		return;
	}
	if (s->rank != v->rank) {
		wh_debug("tensor '%s': inferred rank %d, the model declares %d; keeping the inferred one", v->name,
			 s->rank, v->rank);
		return;
	}
	for (int32_t i = 0; i < s->rank; i++) {
		if (s->dims[i] >= 0)
			continue;
		if (v->dims[i].value >= 0) {
			s->dims[i] = v->dims[i].value;
			s->params[i] = NULL;
		} else if (!s->params[i]) {
			s->params[i] = v->dims[i].param;
		}
	}
}

static enum wh_status infer_node(struct ictx *c)
{
	const struct wh_node *n = c->n;
	bool done = false;
	enum wh_status st = try_eval(c, false, &done);
	if (st != WH_OK)
		return st;
	if (!done) {
		struct rule r;
		if (find_rule(n->domain, n->op_type, &r)) {
			if ((st = run_rule(c, &r)) != WH_OK)
				return st;
			infer_sym(c);
			if ((st = try_eval(c, true, &done)) != WH_OK)
				return st;
		} else {
			note_unknown(c);
		}
	}
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		struct wh_vstate *o = OUT(c, k);
		if (!o)
			continue;
		const struct wh_value *v = &c->g->values[n->outputs[k]];
		if (v->flags & (WH_VALUE_HAS_INFO | WH_VALUE_OUTPUT))
			merge_declared(o, v);
		if (all_static(o)) {
			uint64_t count;
			if (!wh_shape_count(o->dims, o->rank, &count)) {
				char b[256];
				return node_err(c, WH_ERR_OVERFLOW, "output '%s' of shape %s has too many elements", v->name,
						dims_str(o, b, sizeof b));
			}
		}
	}
	return WH_OK;
}

static const struct wh_vstate *outer_lookup(const struct ictx *parent, const char *name)
{
	for (const struct ictx *p = parent; p; p = p->parent) {
		uint32_t id = wh_graph_find_value(p->g, name);
		if (id != WH_NONE)
			return &p->st[id];
	}
	return NULL;
}

static void state_from_value(struct wh_vstate *s, const struct wh_value *v)
{
	enum wh_dtype elem;
	if (v->type_rest.len && wh_value_type_of(v, &elem) == WH_TYPE_SEQUENCE) {
		s->seq = true;
		s->dtype = elem;
		s->rank = -1;
		for (int32_t i = 0; i < WH_MAX_RANK; i++) {
			s->dims[i] = -1;
			s->params[i] = NULL;
		}
		return;
	}
	s->seq = false;
	s->dtype = v->dtype;
	s->rank = v->rank > WH_MAX_RANK ? -1 : v->rank;
	for (int32_t i = 0; i < WH_MAX_RANK; i++) {
		s->dims[i] = i < s->rank ? v->dims[i].value : -1;
		s->params[i] = i < s->rank && v->dims[i].value < 0 ? v->dims[i].param : NULL;
	}
}

static enum wh_status write_back(const struct wh_graph *cg, const struct wh_vstate *st)
{
	/* the model is the caller's, not const: wh_model_infer_shapes asked for this */
	struct wh_graph *g = (struct wh_graph *)cg;
	for (uint32_t id = 0; id < g->n_values; id++) {
		struct wh_value *v = &g->values[id];
		const struct wh_vstate *s = &st[id];
		if (v->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER | WH_VALUE_OUTER))
			continue;
		if (s->seq) {
			enum wh_dtype elem;
			bool declared = v->type_rest.len && wh_value_type_of(v, &elem) == WH_TYPE_SEQUENCE;
			if (!declared || (!elem && s->dtype)) {
				enum wh_status e = wh_value_set_sequence_type(g, id, s->dtype);
				if (e != WH_OK)
					return e;
			}
			continue;
		}
		if (!s->dtype && s->rank < 0)
			continue;
		/* an unchanged type keeps the declaration as loaded (set_shape would drop it) */
		bool same = v->dtype == s->dtype && v->rank == s->rank;
		for (int32_t i = 0; same && i < s->rank; i++)
			same = same_dim(v->dims[i].value, v->dims[i].param, s->dims[i], s->params[i]) ||
			       (v->dims[i].value < 0 && s->dims[i] < 0 && !v->dims[i].param && !s->params[i]);
		if (same)
			continue;
		enum wh_status e = wh_graph_set_shape(g, id, s->dtype, s->rank, s->dims);
		if (e != WH_OK)
			return e;
		for (int32_t i = 0; i < s->rank; i++)
			if (s->dims[i] < 0)
				g->values[id].dims[i].param = s->params[i];
	}
	return WH_OK;
}

static enum wh_status infer_graph(const struct wh_model *m, const struct wh_graph *g, const struct ictx *parent,
				  const struct wh_vstate *seeds, uint32_t n_seeds, uint64_t limit, bool wb,
				  wh_fold_fn eval, const char **unknown, uint32_t *n_unknown, struct wh_vstate **out)
{
	*out = NULL;
	enum wh_status st = WH_OK;
	uint32_t *order = NULL;
	struct wh_vstate *s = calloc(g->n_values ? g->n_values : 1, sizeof *s);
	if (!s)
		return wh_error(WH_ERR_NOMEM, "shape inference: out of memory (free some memory)");
	if (g->n_nodes && !(order = malloc((size_t)g->n_nodes * sizeof *order))) {
		st = wh_error(WH_ERR_NOMEM, "shape inference: out of memory (free some memory)");
		goto out;
	}
	for (uint32_t id = 0; id < g->n_values; id++) {
		const struct wh_value *v = &g->values[id];
		struct wh_vstate *vs = &s[id];
		vs->rank = -1;
		for (int32_t i = 0; i < WH_MAX_RANK; i++)
			vs->dims[i] = -1;
		if (v->flags & WH_VALUE_OUTER) {
			const struct wh_vstate *o = outer_lookup(parent, v->name);
			if (o) {
				copy_shape(vs, o);
				vs->sym = o->sym;
				if (o->known) {
					wh_tensor_ref(&vs->value, &o->value);
					vs->known = true;
				}
			}
			continue;
		}
		if (v->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER))
			state_from_value(vs, v);
		/* initializers are constants unless also listed as inputs, which may override them;
		 * before IR version 4 every initializer had to be listed as an input, so there the
		 * listing means nothing */
		bool overridable = (v->flags & WH_VALUE_INPUT) && m->ir_version >= 4;
		if ((v->flags & WH_VALUE_INITIALIZER) && !overridable && wh_fold_dtype_ok(v->dtype) && all_static(vs)) {
			if (wh_tensor_from_raw(&vs->value, v->dtype, vs->rank, vs->dims, v->data) == WH_OK)
				vs->known = true;
			else
				wh_error_clear();
		}
	}
	for (uint32_t i = 0; seeds && i < g->n_inputs && i < n_seeds; i++) {
		struct wh_vstate *vs = &s[g->inputs[i]];
		if (!vs->dtype)
			vs->dtype = seeds[i].dtype;
		if (vs->rank < 0 && seeds[i].rank >= 0)
			copy_shape(vs, &seeds[i]);
	}
	if (g->n_nodes && (st = wh_graph_topo_order(g, order)) != WH_OK)
		goto out;
	struct ictx c = {
		.m = m, .g = g, .st = s, .parent = parent, .opset = wh_model_opset(m, ""), .limit = limit,
		.write_back = wb, .eval = eval, .unknown = unknown, .n_unknown = n_unknown,
	};
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		c.n = &g->nodes[order[i]];
		if ((st = infer_node(&c)) != WH_OK)
			goto out;
	}
	if (wb && parent && (st = write_back(g, s)) != WH_OK)
		goto out;
out:
	free(order);
	if (st != WH_OK) {
		wh_infer_states_free(s, g->n_values);
		return st;
	}
	*out = s;
	return WH_OK;
}

void wh_infer_states_free(struct wh_vstate *s, uint32_t n)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < n; i++)
		st_clear_value(&s[i]);
	free(s);
}

enum wh_status wh_infer_run(const struct wh_model *m, uint64_t max_value_elements, bool wb, wh_fold_fn eval,
			    struct wh_vstate **states_out)
{
	const char *unknown[WH_MAX_UNKNOWN_OPS];
	uint32_t n_unknown = 0;
	*states_out = NULL;
	struct wh_vstate *s;
	enum wh_status st = infer_graph(m, m->graph, NULL, NULL, 0, max_value_elements, wb, eval, unknown, &n_unknown, &s);
	if (st != WH_OK)
		return st;
	if (wb && (st = write_back(m->graph, s)) != WH_OK) {
		wh_infer_states_free(s, m->graph->n_values);
		return st;
	}
	*states_out = s;
	return WH_OK;
}

/* ---- public API ---- */

enum wh_status wh_model_infer_shapes(struct wh_model *m)
{
	return wh_model_infer_shapes_eval(m, NULL);
}

enum wh_status wh_model_infer_shapes_eval(struct wh_model *m, wh_fold_fn eval)
{
	struct wh_vstate *s;
	enum wh_status st = wh_infer_run(m, WH_INFER_VALUE_LIMIT, true, eval, &s);
	if (st != WH_OK)
		return st;
	wh_infer_states_free(s, m->graph->n_values);
	return WH_OK;
}

uint32_t wh_model_count_static(const struct wh_model *m)
{
	const struct wh_graph *g = m->graph;
	uint32_t n = 0;
	for (uint32_t id = 0; id < g->n_values; id++) {
		const struct wh_value *v = &g->values[id];
		if (!v->dtype || v->rank < 0)
			continue;
		bool ok = true;
		for (int32_t i = 0; i < v->rank && ok; i++)
			ok = v->dims[i].value >= 0;
		n += ok;
	}
	return n;
}

/* ---- --input-shapes ---- */

void wh_input_shapes_free(struct wh_input_shape *s, uint32_t n)
{
	if (!s)
		return;
	for (uint32_t i = 0; i < n; i++)
		free(s[i].name);
	free(s);
}

static enum wh_status parse_dims(const char *spec, const char *p, const char *end, struct wh_input_shape *out)
{
	out->rank = 0;
	bool bracket = p < end && *p == '[';
	char sep = bracket ? ',' : 'x';
	if (bracket) {
		if (end[-1] != ']' || end - p < 2)
			return wh_error(WH_ERR_USAGE, "input shapes '%s': unbalanced '[' (use NAME:[1,3,224,224])", spec);
		p++;
		end--;
	}
	while (p < end && *p == ' ')
		p++;
	if (p == end)
		return WH_OK; /* scalar */
	for (;;) {
		while (p < end && *p == ' ')
			p++;
		if (p == end || *p < '0' || *p > '9')
			return wh_error(WH_ERR_USAGE, "input shapes '%s': a dimension is not a non-negative integer (use NAME:1x3x224x224)", spec);
		errno = 0;
		char *stop;
		long long v = strtoll(p, &stop, 10);
		if (errno == ERANGE || stop > end)
			return wh_error(WH_ERR_USAGE, "input shapes '%s': a dimension is too large", spec);
		if (out->rank >= WH_MAX_RANK)
			return wh_error(WH_ERR_USAGE, "input shapes '%s': more than %d dimensions", spec, WH_MAX_RANK);
		out->dims[out->rank++] = v;
		p = stop;
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			return WH_OK;
		if (*p != sep)
			return wh_error(WH_ERR_USAGE, "input shapes '%s': unexpected '%c' in the dimensions (use NAME:1x3x224x224 or NAME:[1,3,224,224])",
					spec, *p);
		p++;
	}
}

enum wh_status wh_input_shapes_parse(const char *spec, struct wh_input_shape **out, uint32_t *n_out)
{
	*out = NULL;
	*n_out = 0;
	if (!spec || !*spec)
		return wh_error(WH_ERR_USAGE, "input shapes: empty (use NAME:1x3x224x224[,NAME:...])");
	uint32_t cap = 1;
	for (const char *p = spec; *p; p++)
		cap += *p == ',';
	struct wh_input_shape *s = calloc(cap, sizeof *s);
	if (!s)
		return wh_error(WH_ERR_NOMEM, "input shapes: out of memory (free some memory)");
	uint32_t n = 0;
	enum wh_status st = WH_OK;
	const char *p = spec;
	while (*p) {
		/* an entry ends at a comma outside brackets */
		const char *e = p;
		int depth = 0;
		while (*e && (depth > 0 || *e != ',')) {
			depth += *e == '[';
			depth -= *e == ']';
			e++;
		}
		/* the last colon separates name and dims, so names like "input:0" work */
		const char *colon = NULL;
		for (const char *q = p; q < e; q++)
			if (*q == ':' && !memchr(p, '[', (size_t)(q - p)))
				colon = q;
		if (!colon || colon == p) {
			st = wh_error(WH_ERR_USAGE, "input shapes '%s': entry '%.*s' is not NAME:DIMS (use NAME:1x3x224x224)", spec,
				      (int)(e - p), p);
			goto out;
		}
		struct wh_input_shape *cur = &s[n];
		if (!(cur->name = strndup(p, (size_t)(colon - p)))) {
			st = wh_error(WH_ERR_NOMEM, "input shapes: out of memory (free some memory)");
			goto out;
		}
		n++;
		for (uint32_t i = 0; i + 1 < n; i++)
			if (!strcmp(s[i].name, cur->name)) {
				st = wh_error(WH_ERR_USAGE, "input shapes '%s': '%s' is given twice", spec, cur->name);
				goto out;
			}
		if ((st = parse_dims(spec, colon + 1, e, cur)) != WH_OK)
			goto out;
		p = *e ? e + 1 : e;
		if (*e && !*p) {
			st = wh_error(WH_ERR_USAGE, "input shapes '%s': ends with ',' (remove it)", spec);
			goto out;
		}
	}
out:
	if (st != WH_OK) {
		wh_input_shapes_free(s, n);
		return st;
	}
	*out = s;
	*n_out = n;
	return WH_OK;
}

enum wh_status wh_model_bind_inputs(struct wh_model *m, const struct wh_input_shape *s, uint32_t n)
{
	struct wh_graph *g = m->graph;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t id = wh_graph_find_value(g, s[i].name);
		if (id == WH_NONE || !(g->values[id].flags & WH_VALUE_INPUT)) {
			char names[256] = "";
			size_t k = 0;
			for (uint32_t j = 0; j < g->n_inputs && k + 2 < sizeof names; j++) {
				const struct wh_value *in = &g->values[g->inputs[j]];
				if (in->flags & WH_VALUE_INITIALIZER)
					continue;
				k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", k ? ", " : "", in->name);
			}
			return wh_error(WH_ERR_NOT_FOUND, "input shapes: the model has no input '%s' (its inputs: %s)", s[i].name,
					names);
		}
		const struct wh_value *v = &g->values[id];
		if (v->rank >= 0 && v->rank != s[i].rank)
			return wh_error(WH_ERR_SHAPE, "input '%s': given %d dimensions, the model declares %d (fix --input-shapes)",
					s[i].name, s[i].rank, v->rank);
		for (int32_t k = 0; v->rank >= 0 && k < v->rank; k++)
			if (v->dims[k].value >= 0 && v->dims[k].value != s[i].dims[k])
				return wh_error(WH_ERR_SHAPE,
						"input '%s': dimension %d is fixed to %lld in the model, given %lld (fix --input-shapes)",
						s[i].name, k, (long long)v->dims[k].value, (long long)s[i].dims[k]);
		if (v->flags & WH_VALUE_INITIALIZER)
			continue; /* its shape is its data's, already checked equal */
		enum wh_status st = wh_graph_set_shape(g, id, v->dtype, s[i].rank, s[i].dims);
		if (st != WH_OK)
			return st;
	}
	return WH_OK;
}
