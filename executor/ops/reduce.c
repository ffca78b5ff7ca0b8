/* Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1, ReduceL2,
 * ReduceLogSum, ReduceLogSumExp, ReduceSumSquare.
 *
 * Axes come from the `axes` attribute before ReduceSum-13 / the others' opset 18 and from
 * the optional second input since. Empty axes reduce everything unless
 * noop_with_empty_axes is set, in which case every element is reduced on its own (the
 * op's per-element function is still applied, as in the ONNX reference: ReduceSumSquare
 * squares, ReduceL1 takes the absolute value, ...). A reduction over zero elements gives
 * the identity of the op (0 for sums, 1 for products, -inf/+inf or the integer type's
 * limits for Max/Min, log(0) = -inf for the log ops).
 *
 * Numerics: floating data (any floating type) is accumulated in double and rounded once
 * to the output type, except float32 ReduceSum/ReduceMean over contiguous rows, which
 * follow ONNX Runtime's float32 order (eigen_sum_f32) so that whittle agrees with ORT;
 * integers are accumulated in 64 bits and wrap like the output type.
 * Each output element is reduced by a single chunk of the parallel loop, in a fixed order
 * over the reduced elements, so results do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/ops/nn-internal.h"

enum red_op { R_SUM, R_MEAN, R_MAX, R_MIN, R_PROD, R_L1, R_L2, R_LOGSUM, R_LOGSUMEXP, R_SUMSQ };

struct red_plan {
	enum red_op op;
	const struct wh_tensor *x;
	struct wh_tensor *y;
	/* kept dims (output order) and reduced dims, merged where adjacent, with input strides */
	int32_t nk, nr;
	int64_t kd[WH_MAX_RANK], ks[WH_MAX_RANK];
	int64_t rd[WH_MAX_RANK], rs[WH_MAX_RANK];
	uint64_t out_count, red_count;
	enum wh_isa isa;
};

static bool is_float_type(enum wh_dtype dt)
{
	return wh_dtype_is_float(dt);
}

static bool is_unsigned(enum wh_dtype dt)
{
	return dt == WH_DT_UINT8 || dt == WH_DT_UINT16 || dt == WH_DT_UINT32 || dt == WH_DT_UINT64 ||
	       dt == WH_DT_UINT4 || dt == WH_DT_BOOL;
}

/* Limits of an integer type, as int64 (unsigned 64-bit handled by the caller). */
static void int_limits(enum wh_dtype dt, int64_t *lo, int64_t *hi)
{
	switch (dt) {
	case WH_DT_INT8: *lo = INT8_MIN; *hi = INT8_MAX; break;
	case WH_DT_UINT8: *lo = 0; *hi = UINT8_MAX; break;
	case WH_DT_INT16: *lo = INT16_MIN; *hi = INT16_MAX; break;
	case WH_DT_UINT16: *lo = 0; *hi = UINT16_MAX; break;
	case WH_DT_INT32: *lo = INT32_MIN; *hi = INT32_MAX; break;
	case WH_DT_UINT32: *lo = 0; *hi = UINT32_MAX; break;
	case WH_DT_BOOL: *lo = 0; *hi = 1; break;
	case WH_DT_INT4: *lo = -8; *hi = 7; break;
	case WH_DT_UINT4: *lo = 0; *hi = 15; break;
	default: *lo = INT64_MIN; *hi = INT64_MAX; break;
	}
}

/* Input offset of the first element reduced into output element o. */
static uint64_t base_offset(const struct red_plan *p, uint64_t o)
{
	uint64_t off = 0;
	for (int32_t d = p->nk - 1; d >= 0; d--) {
		uint64_t dim = (uint64_t)p->kd[d];
		off += (o % dim) * (uint64_t)p->ks[d];
		o /= dim;
	}
	return off;
}

/* Calls the loop body for every input offset reduced into one output, in row-major order
 * of the reduced dims. */
#define FOR_REDUCED(p, base, off, body)                                                  \
	do {                                                                             \
		int64_t idx_[WH_MAX_RANK] = {0};                                         \
		uint64_t off = (base);                                                   \
		for (uint64_t n_ = 0; n_ < (p)->red_count; n_++) {                       \
			body;                                                            \
			for (int32_t d_ = (p)->nr - 1; d_ >= 0; d_--) {                  \
				off += (uint64_t)(p)->rs[d_];                            \
				if (++idx_[d_] < (p)->rd[d_])                            \
					break;                                           \
				off -= (uint64_t)(p)->rs[d_] * (uint64_t)(p)->rd[d_];    \
				idx_[d_] = 0;                                            \
			}                                                                \
		}                                                                        \
	} while (0)

static double finish_f(enum red_op op, double acc, uint64_t n)
{
	switch (op) {
	case R_MEAN: return acc / (double)n;
	case R_L2: return sqrt(acc);
	case R_LOGSUM: return log(acc);
	default: return acc;
	}
}

/* ONNX Runtime sums a contiguous float32 row (its fast reduction of trailing axes, or of
 * all of them) with Eigen's vectorised sum, SSE packets of 4 floats: scalars before the
 * first 16-byte boundary (ORT's buffers are 64-byte aligned, so that is where element
 * `start` of the tensor falls) wait; two packet sums take alternate packets, then add up,
 * then one more packet if there is an odd one; the packet's lanes are summed as
 * (p0 + p2) + (p1 + p3); then the waiting scalars and the tail, one by one. A row shorter
 * than a packet after the boundary is summed left to right. */
static float eigen_sum_f32(const float *x, uint64_t n, uint64_t start)
{
	if (n == 0)
		return 0.0f;
	uint64_t a0 = (4 - start % 4) % 4;
	if (a0 > n)
		a0 = n;
	uint64_t size1 = (n - a0) / 4 * 4, size2 = (n - a0) / 8 * 8;
	float r;
	if (size1 == 0) {
		r = x[0];
		for (uint64_t i = 1; i < n; i++)
			r = r + x[i];
		return r;
	}
	float p0[4], p1[4];
	for (int l = 0; l < 4; l++)
		p0[l] = x[a0 + (uint64_t)l];
	if (size1 > 4) {
		for (int l = 0; l < 4; l++)
			p1[l] = x[a0 + 4 + (uint64_t)l];
		for (uint64_t i = a0 + 8; i < a0 + size2; i += 8)
			for (int l = 0; l < 4; l++) {
				p0[l] = p0[l] + x[i + (uint64_t)l];
				p1[l] = p1[l] + x[i + 4 + (uint64_t)l];
			}
		for (int l = 0; l < 4; l++)
			p0[l] = p0[l] + p1[l];
		if (size1 > size2)
			for (int l = 0; l < 4; l++)
				p0[l] = p0[l] + x[a0 + size2 + (uint64_t)l];
	}
	r = (p0[0] + p0[2]) + (p0[1] + p0[3]);
	for (uint64_t i = 0; i < a0; i++)
		r = r + x[i];
	for (uint64_t i = a0 + size1; i < n; i++)
		r = r + x[i];
	return r;
}

/* ReduceMax's (ReduceMin's) step: keep the running value unless the new one is greater
 * (smaller); a NaN, once met, stays (so the first NaN wins), and so does the first of equal
 * values (+0 or -0). */
static double minmax_step(double acc, double v, bool is_min)
{
	return (isnan(acc) || (is_min ? v >= acc : v <= acc)) ? acc : v;
}

/* The float32 maximum (minimum) of a contiguous run: the vector kernel where the order of
 * the elements cannot matter (see wh_nn_minmax_f32), else the scan in order. */
static float minmax_run_f32(enum wh_isa isa, const float *x, uint64_t n, bool is_min)
{
	float r;
	if (wh_nn_minmax_f32(isa, x, (size_t)n, is_min, &r))
		return r;
	double acc = is_min ? INFINITY : -INFINITY;
	for (uint64_t i = 0; i < n; i++)
		acc = minmax_step(acc, x[i], is_min);
	return (float)acc;
}

static double reduce_one_f(const struct red_plan *p, uint64_t base)
{
	const struct wh_tensor *x = p->x;
	bool f32 = x->dtype == WH_DT_FLOAT;
	const float *xf = x->data;
	enum red_op op = p->op;
	/* contiguous rows: ONNX Runtime's order, and its float32 division for the mean */
	if (f32 && (op == R_SUM || op == R_MEAN) && p->nr == 1 && p->rs[0] == 1 && p->red_count) {
		float sum = eigen_sum_f32(xf + base, p->red_count, base);
		return op == R_MEAN ? sum / (float)p->red_count : sum;
	}
	if (f32 && (op == R_MAX || op == R_MIN) && p->nr == 1 && p->rs[0] == 1)
		return minmax_run_f32(p->isa, xf + base, p->red_count, op == R_MIN);
#define GETF(off) (f32 ? (double)xf[off] : wh_tensor_get_f64(x, off))
	double acc;
	switch (op) {
	case R_MAX:
		acc = -INFINITY;
		FOR_REDUCED(p, base, off, { double v = GETF(off); acc = (isnan(acc) || v <= acc) ? acc : v; });
		return acc;
	case R_MIN:
		acc = INFINITY;
		FOR_REDUCED(p, base, off, { double v = GETF(off); acc = (isnan(acc) || v >= acc) ? acc : v; });
		return acc;
	case R_PROD:
		acc = 1;
		FOR_REDUCED(p, base, off, { acc *= GETF(off); });
		return acc;
	case R_L1:
		acc = 0;
		FOR_REDUCED(p, base, off, { acc += fabs(GETF(off)); });
		return acc;
	case R_L2:
	case R_SUMSQ:
		acc = 0;
		FOR_REDUCED(p, base, off, { double v = GETF(off); acc += v * v; });
		return finish_f(op, acc, p->red_count);
	case R_LOGSUMEXP: {
		double mx = -INFINITY;
		FOR_REDUCED(p, base, off, { double v = GETF(off); mx = (isnan(mx) || v <= mx) ? mx : v; });
		if (isinf(mx) || isnan(mx))
			return mx;
		acc = 0;
		FOR_REDUCED(p, base, off, { acc += exp(GETF(off) - mx); });
		return mx + log(acc);
	}
	default:
		acc = 0;
		FOR_REDUCED(p, base, off, { acc += GETF(off); });
		return finish_f(op, acc, p->red_count);
	}
#undef GETF
}

static void reduce_one_i(const struct red_plan *p, uint64_t o, uint64_t base)
{
	const struct wh_tensor *x = p->x;
	enum red_op op = p->op;
	bool uns = is_unsigned(x->dtype);
	bool u64 = x->dtype == WH_DT_UINT64;
	int64_t lo, hi;
	int_limits(x->dtype, &lo, &hi);
	uint64_t acc;
	switch (op) {
	case R_MAX:
	case R_MIN: {
		bool mx = op == R_MAX;
		if (u64) {
			uint64_t a = mx ? 0 : UINT64_MAX;
			FOR_REDUCED(p, base, off, {
				uint64_t v = (uint64_t)wh_tensor_get_i64(x, off);
				if (mx ? v > a : v < a)
					a = v;
			});
			acc = a;
		} else {
			int64_t a = mx ? lo : hi;
			FOR_REDUCED(p, base, off, {
				int64_t v = wh_tensor_get_i64(x, off);
				if (mx ? v > a : v < a)
					a = v;
			});
			acc = (uint64_t)a;
		}
		break;
	}
	case R_SUM:
	case R_MEAN:
	case R_L1:
	case R_SUMSQ:
	case R_PROD:
		acc = op == R_PROD ? 1 : 0;
		FOR_REDUCED(p, base, off, {
			uint64_t v = (uint64_t)wh_tensor_get_i64(x, off);
			if (op == R_L1 && !uns && (int64_t)v < 0)
				v = 0 - v;
			if (op == R_PROD)
				acc *= v;
			else
				acc += op == R_SUMSQ ? v * v : v;
		});
		if (op == R_MEAN) {
			/* integer mean truncates toward zero, as a cast of the exact mean does */
			if (p->red_count == 0)
				acc = 0;
			else if (uns)
				acc /= p->red_count;
			else
				acc = (uint64_t)((int64_t)acc / (int64_t)p->red_count);
		}
		break;
	default: {
		/* L2, LogSum, LogSumExp of integers: through double */
		double s = 0, mx = -INFINITY;
		if (op == R_LOGSUMEXP)
			FOR_REDUCED(p, base, off, { double v = wh_tensor_get_f64(x, off); mx = v > mx ? v : mx; });
		FOR_REDUCED(p, base, off, {
			double v = wh_tensor_get_f64(x, off);
			s += op == R_L2 ? v * v : (op == R_LOGSUMEXP ? exp(v - mx) : v);
		});
		double r = op == R_L2 ? sqrt(s) : (op == R_LOGSUM ? log(s) : (isinf(mx) ? mx : mx + log(s)));
		wh_tensor_set_f64(p->y, o, r);
		return;
	}
	}
	wh_tensor_set_int_wrap(p->y, o, acc);
}

static void reduce_range(void *arg, size_t lo, size_t hi)
{
	const struct red_plan *p = arg;
	bool flt = is_float_type(p->x->dtype);
	/* [outer, reduced, inner] with float32 sums: reduce whole rows of inner outputs at once,
	 * in the same order over the reduced elements as the generic loop */
	if (p->x->dtype == WH_DT_FLOAT && p->nr == 1 && p->nk >= 1 && p->rs[0] == p->kd[p->nk - 1] &&
	    p->ks[p->nk - 1] == 1 && (p->op == R_SUM || p->op == R_MEAN || p->op == R_SUMSQ || p->op == R_L2)) {
		uint64_t inner = (uint64_t)p->kd[p->nk - 1];
		const float *xf = p->x->data;
		float *yf = p->y->data;
		double buf[256];
		for (size_t o = lo; o < hi;) {
			/* a run of consecutive outputs that share an outer index */
			uint64_t i0 = o % inner;
			uint64_t run = inner - i0;
			if (run > hi - o)
				run = hi - o;
			if (run > 256)
				run = 256;
			uint64_t base = base_offset(p, o);
			for (uint64_t i = 0; i < run; i++)
				buf[i] = 0;
			for (int64_t r = 0; r < p->rd[0]; r++) {
				const float *row = xf + base + (uint64_t)r * inner;
				if (p->op == R_SUMSQ || p->op == R_L2)
					for (uint64_t i = 0; i < run; i++)
						buf[i] += (double)row[i] * (double)row[i];
				else
					for (uint64_t i = 0; i < run; i++)
						buf[i] += row[i];
			}
			for (uint64_t i = 0; i < run; i++)
				yf[o + i] = (float)finish_f(p->op, buf[i], p->red_count);
			o += run;
		}
		return;
	}
	for (size_t o = lo; o < hi; o++) {
		uint64_t base = base_offset(p, o);
		if (flt)
			wh_tensor_set_f64(p->y, o, reduce_one_f(p, base));
		else
			reduce_one_i(p, o, base);
	}
}

/* Float32 ReduceMax/ReduceMin over long contiguous runs: each run in chunks of this many
 * elements, the chunks in parallel, then each run's chunk results combined in order with
 * the same step (the first NaN, or the first of equal values, still wins). */
#define MINMAX_CHUNK 32768

struct minmax_job {
	const struct red_plan *p;
	uint64_t cpo; /* chunks per output */
	float *res;   /* out_count * cpo chunk results */
};

static void minmax_chunks(void *arg, size_t lo, size_t hi)
{
	const struct minmax_job *j = arg;
	const struct red_plan *p = j->p;
	for (size_t c = lo; c < hi; c++) {
		uint64_t o = c / j->cpo, first = c % j->cpo * MINMAX_CHUNK;
		uint64_t n = p->red_count - first < MINMAX_CHUNK ? p->red_count - first : MINMAX_CHUNK;
		j->res[c] = minmax_run_f32(p->isa, (const float *)p->x->data + base_offset(p, o) + first, n,
					   p->op == R_MIN);
	}
}

/* false: not this case, or no memory for the chunk results (the caller's loop does it) */
static bool minmax_parallel(struct wh_kernel_ctx *ctx, const struct red_plan *p)
{
	if (p->x->dtype != WH_DT_FLOAT || (p->op != R_MAX && p->op != R_MIN) || p->nr != 1 || p->rs[0] != 1 ||
	    p->red_count < 2 * MINMAX_CHUNK)
		return false;
	struct minmax_job j = {p, (p->red_count + MINMAX_CHUNK - 1) / MINMAX_CHUNK, NULL};
	j.res = malloc(p->out_count * j.cpo * sizeof *j.res);
	if (!j.res)
		return false;
	wh_parallel_for(ctx->pool, p->out_count * j.cpo, 1, minmax_chunks, &j);
	float *y = p->y->data;
	for (uint64_t o = 0; o < p->out_count; o++) {
		double acc = j.res[o * j.cpo];
		for (uint64_t c = 1; c < j.cpo; c++)
			acc = minmax_step(acc, j.res[o * j.cpo + c], p->op == R_MIN);
		y[o] = (float)acc;
	}
	free(j.res);
	return true;
}

static enum wh_status reduce_common(struct wh_kernel_ctx *ctx, enum red_op op)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input data is missing");
	bool is_bool = x->dtype == WH_DT_BOOL;
	if (x->dtype == WH_DT_STRING || x->dtype == WH_DT_COMPLEX64 || x->dtype == WH_DT_COMPLEX128 ||
	    (is_bool && op != R_MAX && op != R_MIN) || x->dtype == WH_DT_UNDEFINED)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input data has type %s, not supported by this reduction",
				      wh_dtype_name(x->dtype));
	bool axes_input = op == R_SUM ? ctx->opset >= 13 : ctx->opset >= 18;
	int64_t keepdims = wh_node_attr_int(ctx->node, "keepdims", 1);
	int64_t noop = wh_node_attr_int(ctx->node, "noop_with_empty_axes", 0);
	bool red[WH_MAX_RANK] = {false};
	int64_t n_axes = 0;
	const struct wh_tensor *at = axes_input ? wh_kin(ctx, 1) : NULL;
	const int64_t *attr_axes = NULL;
	if (axes_input) {
		if (at && at->rank > 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input axes must be 1-D");
		if (at && !wh_dtype_is_int(at->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input axes has type %s, expected int64",
					      wh_dtype_name(at->dtype));
		n_axes = at ? (int64_t)at->count : 0;
	} else {
		n_axes = wh_node_attr_ints(ctx->node, "axes", &attr_axes);
		if (n_axes < 0)
			n_axes = 0;
	}
	for (int64_t i = 0; i < n_axes; i++) {
		int64_t a = at ? wh_tensor_get_i64(at, (uint64_t)i) : attr_axes[i];
		int32_t ax;
		if (!wh_norm_axis(a, x->rank, &ax))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a,
					      x->rank);
		if (red[ax])
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is listed twice", (long long)a);
		red[ax] = true;
	}
	if (n_axes == 0 && !noop)
		for (int32_t d = 0; d < x->rank; d++)
			red[d] = true;

	struct red_plan p;
	memset(&p, 0, sizeof p);
	p.op = op;
	p.x = x;
	p.isa = ctx->cpu ? ctx->cpu->isa : WH_ISA_SCALAR;
	int64_t od[WH_MAX_RANK], strides[WH_MAX_RANK];
	int32_t orank = 0;
	wh_shape_strides(x->dims, x->rank, strides);
	p.out_count = p.red_count = 1;
	for (int32_t d = 0; d < x->rank; d++) {
		if (red[d]) {
			if (keepdims)
				od[orank++] = 1;
			p.red_count *= (uint64_t)x->dims[d];
			/* merge with the previous reduced dim when contiguous with it */
			if (p.nr > 0 && d > 0 && red[d - 1] && p.rs[p.nr - 1] == x->dims[d] * strides[d]) {
				p.rd[p.nr - 1] *= x->dims[d];
				p.rs[p.nr - 1] = strides[d];
			} else {
				p.rd[p.nr] = x->dims[d];
				p.rs[p.nr++] = strides[d];
			}
		} else {
			od[orank++] = x->dims[d];
			p.out_count *= (uint64_t)x->dims[d];
			if (p.nk > 0 && d > 0 && !red[d - 1] && p.ks[p.nk - 1] == x->dims[d] * strides[d]) {
				p.kd[p.nk - 1] *= x->dims[d];
				p.ks[p.nk - 1] = strides[d];
			} else {
				p.kd[p.nk] = x->dims[d];
				p.ks[p.nk++] = strides[d];
			}
		}
	}
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, orank, od)))
		return st;
	p.y = &ctx->outputs[0];
	if (!minmax_parallel(ctx, &p))
		wh_parallel_for(ctx->pool, p.out_count, wh_grain_for(p.red_count), reduce_range, &p);
	return WH_OK;
}

#define REDUCE_KERNEL(name, op)                                     \
	static enum wh_status name(struct wh_kernel_ctx *ctx)       \
	{                                                           \
		return reduce_common(ctx, op);                      \
	}
REDUCE_KERNEL(reduce_sum_run, R_SUM)
REDUCE_KERNEL(reduce_mean_run, R_MEAN)
REDUCE_KERNEL(reduce_max_run, R_MAX)
REDUCE_KERNEL(reduce_min_run, R_MIN)
REDUCE_KERNEL(reduce_prod_run, R_PROD)
REDUCE_KERNEL(reduce_l1_run, R_L1)
REDUCE_KERNEL(reduce_l2_run, R_L2)
REDUCE_KERNEL(reduce_logsum_run, R_LOGSUM)
REDUCE_KERNEL(reduce_logsumexp_run, R_LOGSUMEXP)
REDUCE_KERNEL(reduce_sumsq_run, R_SUMSQ)

const struct wh_op_def wh_ops_reduce[] = {
	{"", "ReduceSum", 1, reduce_sum_run},
	{"", "ReduceMean", 1, reduce_mean_run},
	{"", "ReduceMax", 1, reduce_max_run},
	{"", "ReduceMin", 1, reduce_min_run},
	{"", "ReduceProd", 1, reduce_prod_run},
	{"", "ReduceL1", 1, reduce_l1_run},
	{"", "ReduceL2", 1, reduce_l2_run},
	{"", "ReduceLogSum", 1, reduce_logsum_run},
	{"", "ReduceLogSumExp", 1, reduce_logsumexp_run},
	{"", "ReduceSumSquare", 1, reduce_sumsq_run},
};
const size_t wh_ops_reduce_count = sizeof wh_ops_reduce / sizeof wh_ops_reduce[0];
