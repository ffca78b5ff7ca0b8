/* Resize (opsets 10-19), Upsample (7, 9) and GridSample (16-22).
 *
 * Resize is separable: every axis gets a table of source taps (indices and weights) per
 * output index, computed in double exactly as the ONNX reference does (coordinate
 * transformation, then nearest rounding or linear/cubic coefficients, optional antialias
 * filter and exclude_outside renormalisation, edge clamping). An output element is the
 * weighted sum over the product of its axes' taps. Taps of weight 0 are dropped, so axes
 * that are not resized cost nothing. A float32 path handles the common NCHW case where only
 * the last two axes are resized with nearest or 2-tap linear taps; it runs planes in
 * parallel. Every output element is computed independently, so results do not depend on
 * the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"
#include "executor/ops/data-internal.h"

enum rs_mode { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum rs_coord {
	RS_HALF_PIXEL,
	RS_HALF_PIXEL_SYMMETRIC,
	RS_PYTORCH_HALF_PIXEL,
	RS_ALIGN_CORNERS,
	RS_ASYMMETRIC,
	RS_TF_HALF_PIXEL_FOR_NN,
	RS_TF_CROP_AND_RESIZE,
};
enum rs_nearest { RS_ROUND_PREFER_FLOOR, RS_ROUND_PREFER_CEIL, RS_FLOOR, RS_CEIL, RS_SIMPLE };

struct rs_params {
	enum rs_mode mode;
	enum rs_coord coord;
	enum rs_nearest nearest;
	double cubic_a;
	bool exclude_outside, antialias;
	double extrapolation;
};

/* Source taps of one axis: for output index o, count[o] taps at idx/w[o*stride ..]. */
struct rs_axis {
	int64_t in, out;
	double scale, roi0, roi1;
	int32_t stride;
	int32_t *count;
	int64_t *idx;
	double *w;
	uint8_t *outside; /* tf_crop_and_resize: position lies outside the input */
};

static void axis_free(struct rs_axis *a)
{
	free(a->count);
	free(a->idx);
	free(a->w);
	free(a->outside);
}

static double cubic_kernel(double x, double A)
{
	x = fabs(x);
	double x2 = x * x, x3 = x2 * x;
	if (x <= 1)
		return (A + 2) * x3 - (A + 3) * x2 + 1;
	if (x < 2)
		return A * x3 - 5 * A * x2 + 8 * A * x - 4 * A;
	return 0;
}

/* Source coordinate of output index x on one axis. Computed in float32 like ONNX Runtime
 * (the golden runner for real models): nearest rounding at exact ties depends on it. The
 * lengths follow the ONNX reference: align_corners and tf_crop_and_resize divide by
 * scale * length, which differs from the integer output length for fractional scales. */
static double source_coord(const struct rs_params *p, const struct rs_axis *a, int64_t xo, bool *outside)
{
	float x = (float)xo, s = (float)a->scale, L = (float)a->in, ow = s * L;
	*outside = false;
	switch (p->coord) {
	case RS_HALF_PIXEL:
		return (x + 0.5f) / s - 0.5f;
	case RS_HALF_PIXEL_SYMMETRIC: {
		float adj = (float)a->out / ow, center = L / 2;
		return center * (1 - adj) + (x + 0.5f) / s - 0.5f;
	}
	case RS_PYTORCH_HALF_PIXEL:
		return a->out > 1 ? (x + 0.5f) / s - 0.5f : 0;
	case RS_ALIGN_CORNERS:
		return ow == 1 ? 0 : x * (L - 1) / (ow - 1);
	case RS_ASYMMETRIC:
		return x / s;
	case RS_TF_HALF_PIXEL_FOR_NN:
		return (x + 0.5f) / s;
	case RS_TF_CROP_AND_RESIZE:
	default: {
		float r = (float)(a->roi1 - a->roi0), v;
		v = ow == 1 ? r * (L - 1) / 2 : x * r * (L - 1) / (ow - 1);
		v += (float)a->roi0 * (L - 1);
		*outside = v < 0 || v > L - 1;
		return v;
	}
	}
}

static int64_t clamp_idx(double v, int64_t n)
{
	if (!(v > 0))
		return 0;
	if (v >= (double)(n - 1))
		return n - 1;
	return (int64_t)v;
}

static enum wh_status build_axis(const struct rs_params *p, struct rs_axis *a)
{
	int32_t taps = 1;
	double sa = a->scale < 1 ? a->scale : 1;
	int64_t start = 0;
	if (p->mode != RS_NEAREST) {
		taps = p->mode == RS_LINEAR ? 2 : 4;
		start = p->mode == RS_LINEAR ? 0 : -1;
		if (p->antialias) {
			/* the filter widens as 1/scale; bound it before converting */
			double s0 = floor((p->mode == RS_LINEAR ? -1 : -2) / sa) + 1;
			if (!(2 - 2 * s0 <= (double)(1 << 20)))
				return wh_error(WH_ERR_UNSUPPORTED, "resize: the antialias filter for scale %g is too wide (use a larger scale)", a->scale);
			start = (int64_t)s0;
			taps = (int32_t)(2 - 2 * start);
		}
	}
	if ((double)taps * (double)(a->out ? a->out : 1) > (double)(1 << 27))
		return wh_error(WH_ERR_UNSUPPORTED, "resize: the antialias filter for scale %g is too wide (use a larger scale)", a->scale);
	size_t n = (size_t)(a->out ? a->out : 1);
	a->stride = taps;
	a->count = calloc(n, sizeof *a->count);
	a->idx = calloc(n * (size_t)taps, sizeof *a->idx);
	a->w = calloc(n * (size_t)taps, sizeof *a->w);
	a->outside = calloc(n, 1);
	double *cw = malloc((size_t)taps * sizeof *cw);
	int64_t *ci = malloc((size_t)taps * sizeof *ci);
	if (!a->count || !a->idx || !a->w || !a->outside || !cw || !ci) {
		free(cw);
		free(ci);
		return wh_error(WH_ERR_NOMEM, "resize: out of memory (free some memory)");
	}
	/* an axis kept at its size maps each index to itself in every mode but
	 * tf_crop_and_resize (its roi crops); ONNX Runtime resizes only such axes, which
	 * matters for tf_half_pixel_for_nn, whose half-pixel shift would blend neighbours */
	bool identity = a->in == a->out && a->scale == 1 && p->coord != RS_TF_CROP_AND_RESIZE;
	for (int64_t o = 0; o < a->out; o++) {
		if (identity) {
			a->idx[o * taps] = o;
			a->w[o * taps] = 1;
			a->count[o] = 1;
			continue;
		}
		bool outside;
		double x = source_coord(p, a, o, &outside);
		/* extreme scales: keep the coordinate where integer conversions are defined */
		if (!(fabs(x) < 1e15))
			x = x < 0 ? -1e15 : 1e15;
		a->outside[o] = outside;
		int64_t *oi = a->idx + o * taps;
		double *owt = a->w + o * taps;
		if (p->mode == RS_NEAREST) {
			double v;
			if (p->nearest == RS_SIMPLE) {
				v = a->scale < 1 ? ceil(x) : trunc(x);
			} else if (x == floor(x)) {
				v = x;
			} else {
				double fl = floor(x), r = x - fl;
				switch (p->nearest) {
				case RS_ROUND_PREFER_FLOOR: v = r <= 0.5 ? fl : fl + 1; break;
				case RS_ROUND_PREFER_CEIL: v = r < 0.5 ? fl : fl + 1; break;
				case RS_FLOOR: v = fl; break;
				default: v = fl + 1; break;
				}
			}
			oi[0] = clamp_idx(v, a->in);
			owt[0] = 1;
			a->count[o] = 1;
			continue;
		}
		/* base tap i0 = ceil(x) - 1 so the ratio lies in (0, 1], as the reference picks
		 * neighbours (an integer coordinate takes ratio 1) */
		double i0f = ceil(x) - 1, r = x - i0f;
		if (!isfinite(i0f))
			i0f = 0, r = 1;
		int64_t i0 = (int64_t)i0f;
		double sum = 0;
		for (int32_t k = 0; k < taps; k++) {
			int64_t off = start + k;
			double w;
			if (p->mode == RS_LINEAR)
				w = p->antialias ? fmax(0, fmin(1, 1 - fabs(((double)off - r) * sa))) : (k == 0 ? 1 - r : r);
			else if (p->antialias)
				w = cubic_kernel(sa * ((double)off - r), p->cubic_a);
			else {
				double A = p->cubic_a, t;
				switch (k) {
				case 0: t = r + 1; w = ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; break;
				case 1: w = ((A + 2) * r - (A + 3)) * r * r + 1; break;
				case 2: t = 1 - r; w = ((A + 2) * t - (A + 3)) * t * t + 1; break;
				default: t = 2 - r; w = ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; break;
				}
			}
			ci[k] = i0 + off;
			cw[k] = w;
			sum += w;
		}
		if (p->antialias && p->mode != RS_NEAREST && sum != 0)
			for (int32_t k = 0; k < taps; k++)
				cw[k] /= sum;
		if (p->exclude_outside) {
			sum = 0;
			for (int32_t k = 0; k < taps; k++) {
				if (ci[k] < 0 || ci[k] >= a->in)
					cw[k] = 0;
				sum += cw[k];
			}
			if (sum != 0)
				for (int32_t k = 0; k < taps; k++)
					cw[k] /= sum;
		}
		int32_t c = 0;
		for (int32_t k = 0; k < taps; k++) {
			if (cw[k] == 0)
				continue;
			oi[c] = ci[k] < 0 ? 0 : ci[k] >= a->in ? a->in - 1 : ci[k];
			owt[c] = cw[k];
			c++;
		}
		if (c == 0) { /* all weights cancelled: keep one tap so the sum is 0, not undefined */
			oi[0] = clamp_idx(x, a->in);
			owt[0] = 0;
			c = 1;
		}
		a->count[o] = c;
	}
	free(cw);
	free(ci);
	return WH_OK;
}

/* ---- general N-D path ---- */

struct rs_job {
	const struct rs_params *p;
	const struct rs_axis *axes;
	int32_t rank;
	const struct wh_tensor *in;
	struct wh_tensor *out;
	int64_t istr[WH_MAX_RANK];
	bool numeric; /* false: nearest byte copy */
};

static void rs_rows(void *arg, size_t begin, size_t end)
{
	const struct rs_job *J = arg;
	int32_t r = J->rank;
	const struct rs_axis *ax = J->axes;
	int64_t ol = ax[r - 1].out;
	size_t es = wh_dtype_size(J->in->dtype);
	bool f32 = J->in->dtype == WH_DT_FLOAT;
	for (size_t row = begin; row < end; row++) {
		int64_t pos[WH_MAX_RANK];
		uint64_t rem = row;
		for (int32_t d = r - 2; d >= 0; d--) {
			pos[d] = (int64_t)(rem % (uint64_t)ax[d].out);
			rem /= (uint64_t)ax[d].out;
		}
		for (int64_t xo = 0; xo < ol; xo++) {
			pos[r - 1] = xo;
			uint64_t oidx = (uint64_t)row * (uint64_t)ol + (uint64_t)xo;
			bool outside = false;
			for (int32_t d = 0; d < r; d++)
				outside = outside || ax[d].outside[pos[d]];
			if (outside) {
				if (f32)
					((float *)J->out->data)[oidx] = (float)J->p->extrapolation;
				else
					wh_tensor_set_f64(J->out, oidx, J->p->extrapolation);
				continue;
			}
			if (!J->numeric) {
				int64_t off = 0;
				for (int32_t d = 0; d < r; d++)
					off += ax[d].idx[pos[d] * ax[d].stride] * J->istr[d];
				memcpy((char *)J->out->data + oidx * es, (const char *)J->in->data + (uint64_t)off * es, es);
				continue;
			}
			/* odometer over the tap combinations */
			int32_t t[WH_MAX_RANK] = {0};
			double acc = 0;
			for (;;) {
				double w = 1;
				int64_t off = 0;
				for (int32_t d = 0; d < r; d++) {
					int64_t k = pos[d] * ax[d].stride + t[d];
					w *= ax[d].w[k];
					off += ax[d].idx[k] * J->istr[d];
				}
				double v = f32 ? ((const float *)J->in->data)[off] : wh_tensor_get_f64(J->in, (uint64_t)off);
				acc += w * v;
				int32_t d = r - 1;
				for (; d >= 0; d--) {
					if (++t[d] < ax[d].count[pos[d]])
						break;
					t[d] = 0;
				}
				if (d < 0)
					break;
			}
			if (f32)
				((float *)J->out->data)[oidx] = (float)acc;
			else
				wh_tensor_set_f64(J->out, oidx, acc);
		}
	}
}

/* ---- float32 2-D path ---- */

struct rs2d_job {
	const struct wh_resize2d_plan *p;
	const float *src;
	float *dst;
};

static void rs2d_rows(void *arg, size_t begin, size_t end)
{
	const struct rs2d_job *J = arg;
	const struct wh_resize2d_plan *p = J->p;
	/* linear: two horizontally interpolated source rows (hkey: plane * ih + source row, or
	 * -1), or NULL when out of memory (then a row at a time) */
	float *hrow = p->linear ? malloc(2 * (size_t)(p->ow ? p->ow : 1) * sizeof *hrow) : NULL;
	int64_t hkey[2] = {-1, -1};
	for (size_t row = begin; row < end; row++) {
		int64_t plane = (int64_t)row / p->oh, oy = (int64_t)row % p->oh;
		const float *in = J->src + plane * p->ih * p->iw;
		float *out = J->dst + (int64_t)row * p->ow;
		if (!p->linear) {
			/* upsampling repeats source rows: copy the row just written (same chunk, so
			 * no other thread is still writing it) instead of gathering again */
			if (row > begin && oy > 0 && p->y0[oy] == p->y0[oy - 1]) {
				memcpy(out, out - p->ow, (size_t)p->ow * sizeof *out);
				continue;
			}
			const float *s = in + p->y0[oy] * p->iw;
			for (int64_t ox = 0; ox < p->ow; ox++)
				out[ox] = s[p->x0[ox]];
			continue;
		}
		/* the horizontal pass of source rows y0 and y1, each computed once for the output
		 * rows that share it (upsampling by 2 reads each source row in 4 output rows):
		 * the same products and sums as a row at a time, so the same bits */
		if (hrow) {
			int64_t want[2] = {plane * p->ih + p->y0[oy], plane * p->ih + p->y1[oy]};
			const float *got[2];
			for (int k = 0; k < 2; k++) {
				int slot = hkey[0] == want[k] ? 0 : hkey[1] == want[k] ? 1 : -1;
				if (slot < 0) {
					/* the slot that does not hold the other row wanted */
					slot = hkey[0] == want[1 - k] ? 1 : 0;
					const float *sr = in + (want[k] - plane * p->ih) * p->iw;
					float *h = hrow + (size_t)slot * (size_t)p->ow;
					for (int64_t ox = 0; ox < p->ow; ox++)
						h[ox] = p->wx0[ox] * sr[p->x0[ox]] + p->wx1[ox] * sr[p->x1[ox]];
					hkey[slot] = want[k];
				}
				got[k] = hrow + (size_t)slot * (size_t)p->ow;
			}
			const float *top = got[0], *bot = got[1];
			float a = p->wy0[oy], b = p->wy1[oy];
			for (int64_t ox = 0; ox < p->ow; ox++)
				out[ox] = a * top[ox] + b * bot[ox];
			continue;
		}
		const float *s0 = in + p->y0[oy] * p->iw, *s1 = in + p->y1[oy] * p->iw;
		float a = p->wy0[oy], b = p->wy1[oy];
		for (int64_t ox = 0; ox < p->ow; ox++) {
			int64_t x0 = p->x0[ox], x1 = p->x1[ox];
			float c = p->wx0[ox], d = p->wx1[ox];
			float tp = c * s0[x0] + d * s0[x1];
			float bt = c * s1[x0] + d * s1[x1];
			out[ox] = a * tp + b * bt;
		}
	}
	free(hrow);
}

void wh_resize2d_f32(struct wh_threadpool *pool, const struct wh_resize2d_plan *plan,
		     const float *src, float *dst)
{
	struct rs2d_job J = {plan, src, dst};
	size_t rows = (size_t)(plan->n_planes * plan->oh);
	size_t grain = plan->ow > 0 ? (size_t)(16384 / plan->ow) + 1 : rows + 1;
	wh_parallel_for(pool, rows, grain, rs2d_rows, &J);
}

/* The 2-D path applies when only the last two axes have real taps (at most two each) and
 * nothing is extrapolated. */
static bool try_fast(struct wh_kernel_ctx *ctx, const struct rs_params *p, const struct rs_axis *ax, int32_t r,
		     const struct wh_tensor *in, struct wh_tensor *out, enum wh_status *st)
{
	*st = WH_OK;
	if (in->dtype != WH_DT_FLOAT || r < 2 || p->mode == RS_CUBIC)
		return false;
	for (int32_t d = 0; d < r - 2; d++) {
		if (ax[d].in != ax[d].out)
			return false;
		for (int64_t o = 0; o < ax[d].out; o++)
			if (ax[d].count[o] != 1 || ax[d].idx[o * ax[d].stride] != o || ax[d].w[o * ax[d].stride] != 1 || ax[d].outside[o])
				return false;
	}
	for (int32_t d = r - 2; d < r; d++)
		for (int64_t o = 0; o < ax[d].out; o++)
			if (ax[d].count[o] > 2 || ax[d].outside[o] || (p->mode == RS_NEAREST && ax[d].count[o] != 1))
				return false;
	const struct rs_axis *ay = &ax[r - 2], *axx = &ax[r - 1];
	int64_t oh = ay->out, ow = axx->out;
	size_t nh = (size_t)(oh ? oh : 1), nw = (size_t)(ow ? ow : 1);
	int64_t *y0 = malloc(nh * sizeof *y0), *y1 = malloc(nh * sizeof *y1);
	int64_t *x0 = malloc(nw * sizeof *x0), *x1 = malloc(nw * sizeof *x1);
	float *wy0 = malloc(nh * sizeof *wy0), *wy1 = malloc(nh * sizeof *wy1);
	float *wx0 = malloc(nw * sizeof *wx0), *wx1 = malloc(nw * sizeof *wx1);
	if (!y0 || !y1 || !x0 || !x1 || !wy0 || !wy1 || !wx0 || !wx1) {
		*st = wh_error(WH_ERR_NOMEM, "resize: out of memory (free some memory)");
		goto out;
	}
	for (int64_t o = 0; o < oh; o++) {
		const int64_t *i = ay->idx + o * ay->stride;
		const double *w = ay->w + o * ay->stride;
		bool two = ay->count[o] == 2;
		y0[o] = i[0];
		y1[o] = two ? i[1] : i[0];
		wy0[o] = (float)w[0];
		wy1[o] = two ? (float)w[1] : 0.0f;
	}
	for (int64_t o = 0; o < ow; o++) {
		const int64_t *i = axx->idx + o * axx->stride;
		const double *w = axx->w + o * axx->stride;
		bool two = axx->count[o] == 2;
		x0[o] = i[0];
		x1[o] = two ? i[1] : i[0];
		wx0[o] = (float)w[0];
		wx1[o] = two ? (float)w[1] : 0.0f;
	}
	struct wh_resize2d_plan plan = {
		.n_planes = 1, .ih = ay->in, .iw = axx->in, .oh = oh, .ow = ow,
		.linear = p->mode == RS_LINEAR,
		.y0 = y0, .y1 = y1, .x0 = x0, .x1 = x1, .wy0 = wy0, .wy1 = wy1, .wx0 = wx0, .wx1 = wx1,
	};
	for (int32_t d = 0; d < r - 2; d++)
		plan.n_planes *= ax[d].out;
	wh_resize2d_f32(ctx->pool, &plan, in->data, out->data);
out:
	free(y0);
	free(y1);
	free(x0);
	free(x1);
	free(wy0);
	free(wy1);
	free(wx0);
	free(wx1);
	return *st == WH_OK;
}

/* Runs the resize once every axis has its in/out sizes, scale and roi. */
static enum wh_status rs_execute(struct wh_kernel_ctx *ctx, const struct rs_params *p, struct rs_axis *ax,
				 const struct wh_tensor *in, const struct wh_resize_opts *opts)
{
	int32_t r = in->rank;
	enum wh_status st = WH_OK;
	bool numeric = p->mode != RS_NEAREST || p->coord == RS_TF_CROP_AND_RESIZE;
	if (numeric && !wh_dtype_is_float(in->dtype) && !wh_dtype_is_int(in->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s input cannot be interpolated (use mode nearest)", wh_dtype_name(in->dtype));
	if (p->mode != RS_NEAREST && in->dtype == WH_DT_BOOL)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "bool input cannot be interpolated (use mode nearest)");
	int64_t dims[WH_MAX_RANK];
	for (int32_t d = 0; d < r; d++)
		dims[d] = ax[d].out;
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, in->dtype, r, dims)) != WH_OK)
		return st;
	if (out->count == 0)
		return WH_OK;
	for (int32_t d = 0; d < r; d++)
		if ((st = build_axis(p, &ax[d])) != WH_OK)
			return st;
	if (r == 0) {
		memcpy(out->data, in->data, wh_dtype_size(in->dtype));
		return wh_dm_own_strings(out);
	}
	if (!(opts && opts->no_fast_path) && try_fast(ctx, p, ax, r, in, out, &st))
		return WH_OK;
	if (st != WH_OK)
		return st;
	struct rs_job J = {p, ax, r, in, out, {0}, numeric};
	wh_shape_strides(in->dims, r, J.istr);
	size_t rows = (size_t)(out->count / (uint64_t)ax[r - 1].out);
	wh_parallel_for(ctx->pool, rows, (size_t)(4096 / ax[r - 1].out) + 1, rs_rows, &J);
	return wh_dm_own_strings(out);
}

static enum wh_status parse_mode(const struct wh_kernel_ctx *ctx, const char *s, enum rs_mode *out)
{
	if (!strcmp(s, "nearest"))
		*out = RS_NEAREST;
	else if (!strcmp(s, "linear") || !strcmp(s, "bilinear"))
		*out = RS_LINEAR;
	else if (!strcmp(s, "cubic") || !strcmp(s, "bicubic"))
		*out = RS_CUBIC;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "mode '%s' is not nearest, linear or cubic (fix the model)", s);
	return WH_OK;
}

/* Reads a float tensor (scales, roi) as doubles. */
static enum wh_status read_floats(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what,
				  double *out, size_t max, size_t *n_out)
{
	if (!wh_dtype_is_float(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s must be a float tensor, got %s (fix the model)", what, wh_dtype_name(t->dtype));
	if (t->count > max)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s has %llu entries, at most %zu allowed (fix the model)", what,
				      (unsigned long long)t->count, max);
	for (uint64_t i = 0; i < t->count; i++)
		out[i] = wh_tensor_get_f64(t, i);
	*n_out = (size_t)t->count;
	return WH_OK;
}

/* Output sizes from scales (floor(in * scale)), validating them. */
static enum wh_status sizes_from_scales(const struct wh_kernel_ctx *ctx, struct rs_axis *ax, int32_t r)
{
	for (int32_t d = 0; d < r; d++) {
		double s = ax[d].scale, o = floor(s * (double)ax[d].in);
		if (!(s > 0) || !isfinite(s))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "scale %g on axis %d is not positive (fix the model)", s, d);
		if (!(o <= (double)WH_MAX_ELEMENTS))
			return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "scale %g makes axis %d too large (fix the model)", s, d);
		ax[d].out = (int64_t)o;
	}
	return WH_OK;
}

static void init_axes(struct rs_axis *ax, const struct wh_tensor *in)
{
	memset(ax, 0, sizeof(struct rs_axis) * WH_MAX_RANK);
	for (int32_t d = 0; d < in->rank; d++) {
		ax[d].in = in->dims[d];
		ax[d].out = in->dims[d];
		ax[d].scale = 1;
		ax[d].roi0 = 0;
		ax[d].roi1 = 1;
	}
}

static void free_axes(struct rs_axis *ax)
{
	for (int32_t d = 0; d < WH_MAX_RANK; d++)
		axis_free(&ax[d]);
}

enum wh_status wh_resize_run_opts(struct wh_kernel_ctx *ctx, const struct wh_resize_opts *opts)
{
	const struct wh_tensor *in = wh_kin(ctx, 0);
	if (!in)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing (connect it)");
	int32_t r = in->rank;
	const struct wh_node *n = ctx->node;
	char buf[40];
	struct rs_params p = {RS_NEAREST, RS_ASYMMETRIC, RS_SIMPLE, -0.75, false, false, 0};
	enum wh_status st = parse_mode(ctx, wh_node_attr_string(n, "mode", "nearest", buf, sizeof buf), &p.mode);
	if (st != WH_OK)
		return st;
	struct rs_axis ax[WH_MAX_RANK];
	init_axes(ax, in);
	const struct wh_tensor *roi_t = NULL, *scales_t, *sizes_t = NULL;
	if (ctx->opset < 11) {
		scales_t = wh_kin(ctx, 1);
	} else {
		roi_t = wh_kin(ctx, 1);
		scales_t = wh_kin(ctx, 2);
		sizes_t = wh_kin(ctx, 3);
		const char *c = wh_node_attr_string(n, "coordinate_transformation_mode", "half_pixel", buf, sizeof buf);
		static const char *const names[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
						    "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"};
		size_t i = 0;
		while (i < sizeof names / sizeof names[0] && strcmp(names[i], c))
			i++;
		if (i == sizeof names / sizeof names[0])
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "coordinate_transformation_mode '%s' is unknown (fix the model)", c);
		p.coord = (enum rs_coord)i;
		const char *nm = wh_node_attr_string(n, "nearest_mode", "round_prefer_floor", buf, sizeof buf);
		if (!strcmp(nm, "round_prefer_floor"))
			p.nearest = RS_ROUND_PREFER_FLOOR;
		else if (!strcmp(nm, "round_prefer_ceil"))
			p.nearest = RS_ROUND_PREFER_CEIL;
		else if (!strcmp(nm, "floor"))
			p.nearest = RS_FLOOR;
		else if (!strcmp(nm, "ceil"))
			p.nearest = RS_CEIL;
		else
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "nearest_mode '%s' is unknown (fix the model)", nm);
		p.cubic_a = wh_node_attr_float(n, "cubic_coeff_a", -0.75f);
		p.exclude_outside = wh_node_attr_int(n, "exclude_outside", 0) != 0;
		p.extrapolation = wh_node_attr_float(n, "extrapolation_value", 0.0f);
		p.antialias = ctx->opset >= 18 && wh_node_attr_int(n, "antialias", 0) != 0;
	}
	/* axes (18+): scales, sizes and roi list only these axes */
	int32_t axes[WH_MAX_RANK];
	size_t na = (size_t)r;
	for (int32_t d = 0; d < r; d++)
		axes[d] = d;
	const int64_t *ints;
	int64_t cnt = ctx->opset >= 18 ? wh_node_attr_ints(n, "axes", &ints) : -1;
	if (cnt >= 0) {
		if (cnt > r)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "axes lists %lld axes for rank %d (fix the model)", (long long)cnt, r);
		bool seen[WH_MAX_RANK] = {false};
		na = (size_t)cnt;
		for (size_t i = 0; i < na; i++) {
			if (!wh_norm_axis(ints[i], r, &axes[i]) || seen[axes[i]])
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "axes entry %lld is out of range or repeated (fix the model)", (long long)ints[i]);
			seen[axes[i]] = true;
		}
	}
	if (roi_t && roi_t->count > 0 && p.coord == RS_TF_CROP_AND_RESIZE) {
		double roi[2 * WH_MAX_RANK];
		size_t nr;
		if ((st = read_floats(ctx, roi_t, "roi", roi, 2 * WH_MAX_RANK, &nr)) != WH_OK)
			return st;
		if (nr != 2 * na)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "roi has %zu entries, expected %zu (fix the model)", nr, 2 * na);
		for (size_t i = 0; i < na; i++) {
			ax[axes[i]].roi0 = roi[i];
			ax[axes[i]].roi1 = roi[na + i];
		}
	}
	bool have_sizes = sizes_t && sizes_t->count > 0;
	bool have_scales = scales_t && scales_t->count > 0;
	if (have_sizes && have_scales)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "both scales and sizes are given (give only one)");
	if (have_scales) {
		double sc[WH_MAX_RANK];
		size_t ns;
		if ((st = read_floats(ctx, scales_t, "scales", sc, WH_MAX_RANK, &ns)) != WH_OK)
			return st;
		if (ns != na)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "scales has %zu entries for %zu axes (fix the model)", ns, na);
		for (size_t i = 0; i < na; i++)
			ax[axes[i]].scale = sc[i];
		if ((st = sizes_from_scales(ctx, ax, r)) != WH_OK)
			return st;
	} else if (have_sizes) {
		int64_t sz[WH_MAX_RANK];
		size_t ns;
		if ((st = wh_dm_read_ints(ctx, sizes_t, "sizes", sz, WH_MAX_RANK, &ns)) != WH_OK)
			return st;
		if (ns != na)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "sizes has %zu entries for %zu axes (fix the model)", ns, na);
		for (size_t i = 0; i < na; i++) {
			if (sz[i] < 0)
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "sizes entry %lld is negative (fix the model)", (long long)sz[i]);
			if (ax[axes[i]].in == 0 && sz[i] > 0)
				return wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot resize the empty axis %d (fix the input)", axes[i]);
		}
		char pbuf[16];
		const char *pol = ctx->opset >= 18 ? wh_node_attr_string(n, "keep_aspect_ratio_policy", "stretch", pbuf, sizeof pbuf) : "stretch";
		if (!strcmp(pol, "stretch")) {
			for (size_t i = 0; i < na; i++) {
				struct rs_axis *a = &ax[axes[i]];
				a->out = sz[i];
				a->scale = a->in ? (double)sz[i] / (double)a->in : 1;
			}
		} else {
			bool larger = !strcmp(pol, "not_smaller");
			if (!larger && strcmp(pol, "not_larger"))
				return wh_kernel_fail(ctx, WH_ERR_INVALID, "keep_aspect_ratio_policy '%s' is unknown (fix the model)", pol);
			double s = 0;
			for (size_t i = 0; i < na; i++) {
				double q = ax[axes[i]].in ? (double)sz[i] / (double)ax[axes[i]].in : 1;
				if (i == 0 || (larger ? q > s : q < s))
					s = q;
			}
			for (size_t i = 0; i < na; i++) {
				struct rs_axis *a = &ax[axes[i]];
				a->scale = s;
				double o = s * (double)a->in + 0.5;
				if (!(o <= (double)WH_MAX_ELEMENTS))
					return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "output is too large (fix the model)");
				a->out = (int64_t)o;
			}
		}
	} else {
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "neither scales nor sizes is given (give one)");
	}
	st = rs_execute(ctx, &p, ax, in, opts);
	free_axes(ax);
	return st;
}

enum wh_status wh_resize_run(struct wh_kernel_ctx *ctx)
{
	return wh_resize_run_opts(ctx, NULL);
}

enum wh_status wh_upsample_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in = wh_kin(ctx, 0);
	if (!in)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing (connect it)");
	char buf[16];
	/* Upsample and Resize-10: asymmetric coordinates, ONNX Runtime's "simple" nearest rule */
	struct rs_params p = {RS_NEAREST, RS_ASYMMETRIC, RS_SIMPLE, -0.75, false, false, 0};
	enum wh_status st = parse_mode(ctx, wh_node_attr_string(ctx->node, "mode", "nearest", buf, sizeof buf), &p.mode);
	if (st != WH_OK)
		return st;
	double sc[WH_MAX_RANK];
	size_t ns;
	if (ctx->opset < 9) {
		const struct wh_attr *a = wh_node_attr(ctx->node, "scales");
		if (!a || a->type != WH_ATTR_FLOATS)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "scales attribute is missing (fix the model)");
		if (a->n > WH_MAX_RANK)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "too many scales (fix the model)");
		ns = a->n;
		for (size_t i = 0; i < ns; i++)
			sc[i] = a->floats[i];
	} else {
		const struct wh_tensor *s = wh_kin(ctx, 1);
		if (!s)
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input scales is missing (connect it)");
		if ((st = read_floats(ctx, s, "scales", sc, WH_MAX_RANK, &ns)) != WH_OK)
			return st;
	}
	if ((int32_t)ns != in->rank)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "scales has %zu entries for rank %d (fix the model)", ns, in->rank);
	struct rs_axis ax[WH_MAX_RANK];
	init_axes(ax, in);
	for (int32_t d = 0; d < in->rank; d++)
		ax[d].scale = sc[d];
	if ((st = sizes_from_scales(ctx, ax, in->rank)) == WH_OK)
		st = rs_execute(ctx, &p, ax, in, NULL);
	free_axes(ax);
	return st;
}

/* ---- GridSample ---- */

enum gs_pad { GS_ZEROS, GS_BORDER, GS_REFLECTION };

static double gs_reflect(double x, double lo, double hi)
{
	double rng = hi - lo;
	if (rng <= 0)
		return lo;
	if (x < lo) {
		double dx = lo - x;
		double k = trunc(dx / rng), r = dx - k * rng;
		return fmod(k, 2) == 0 ? lo + r : hi - r;
	}
	if (x > hi) {
		double dx = x - hi;
		double k = trunc(dx / rng), r = dx - k * rng;
		return fmod(k, 2) == 0 ? hi - r : lo + r;
	}
	return x;
}

/* Resolves integer tap i on an axis of length L; false when it reads the zero padding. */
static bool gs_tap(enum gs_pad pad, int64_t i, int64_t L, double lo, double hi, int64_t *out)
{
	if (pad == GS_ZEROS) {
		*out = i;
		return i >= 0 && i < L;
	}
	if (pad == GS_BORDER)
		*out = i < 0 ? 0 : i >= L ? L - 1 : i;
	else {
		int64_t v = (int64_t)gs_reflect((double)i, lo, hi);
		*out = v < 0 ? 0 : v >= L ? L - 1 : v;
	}
	return true;
}

enum wh_status wh_gridsample_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *X = wh_kin(ctx, 0), *G = wh_kin(ctx, 1);
	if (!X || !G)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs X and grid are required (connect them)");
	char b1[64], b2[64], buf[16];
	int32_t k = X->rank - 2;
	bool ok = k >= 1 && G->rank == X->rank && G->dims[0] == X->dims[0] && G->dims[G->rank - 1] == k;
	if (!ok)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "X %s and grid %s do not fit (grid must be N x D1..Dk x k) (fix the model)",
				      wh_shape_str(X->dims, X->rank, b1, sizeof b1), wh_shape_str(G->dims, G->rank, b2, sizeof b2));
	if (!wh_dtype_is_float(X->dtype) || !wh_dtype_is_float(G->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "X and grid must be floating point (fix the model)");
	enum rs_mode mode;
	enum wh_status st = parse_mode(ctx, wh_node_attr_string(ctx->node, "mode", ctx->opset >= 20 ? "linear" : "bilinear", buf, sizeof buf), &mode);
	if (st != WH_OK)
		return st;
	const char *ps = wh_node_attr_string(ctx->node, "padding_mode", "zeros", buf, sizeof buf);
	enum gs_pad pad;
	if (!strcmp(ps, "zeros"))
		pad = GS_ZEROS;
	else if (!strcmp(ps, "border"))
		pad = GS_BORDER;
	else if (!strcmp(ps, "reflection"))
		pad = GS_REFLECTION;
	else
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "padding_mode '%s' is unknown (fix the model)", ps);
	bool align = wh_node_attr_int(ctx->node, "align_corners", 0) != 0;
	int64_t N = X->dims[0], C = X->dims[1];
	int64_t dims[WH_MAX_RANK];
	dims[0] = N;
	dims[1] = C;
	uint64_t npos = 1, nin = 1;
	for (int32_t d = 0; d < k; d++) {
		dims[2 + d] = G->dims[1 + d];
		npos *= (uint64_t)G->dims[1 + d];
		nin *= (uint64_t)X->dims[2 + d];
	}
	struct wh_tensor *out = &ctx->outputs[0];
	if ((st = wh_tensor_alloc(out, X->dtype, X->rank, dims)) != WH_OK)
		return st;
	if (nin == 0 && out->count) {
		memset(out->data, 0, wh_tensor_nbytes(out));
		return pad == GS_ZEROS ? WH_OK : wh_kernel_fail(ctx, WH_ERR_SHAPE, "cannot sample an empty input with %s padding (fix the input)", ps);
	}
	int64_t istr[WH_MAX_RANK];
	wh_shape_strides(X->dims + 2, k, istr);
	int32_t ntap = mode == RS_NEAREST ? 1 : mode == RS_LINEAR ? 2 : 4;
	for (int64_t nb = 0; nb < N; nb++) {
		for (uint64_t g = 0; g < npos; g++) {
			int64_t tidx[WH_MAX_RANK][4];
			double tw[WH_MAX_RANK][4];
			bool tvalid[WH_MAX_RANK][4];
			for (int32_t d = 0; d < k; d++) {
				int64_t L = X->dims[2 + d];
				/* the grid's last axis lists coordinates innermost-first (x, y, ...) */
				double v = wh_tensor_get_f64(G, ((uint64_t)nb * npos + g) * (uint64_t)k + (uint64_t)(k - 1 - d));
				double x = (float)(align ? (v + 1) / 2.0 * (double)(L - 1) : ((v + 1) * (double)L - 1) / 2.0);
				double lo = align ? 0 : -0.5, hi = align ? (double)L - 1 : (double)L - 0.5;
				/* half to even in every rank: the backend test data for 3-D was made
				 * that way, although PyTorch's 3-D kernel rounds half away */
				if (mode == RS_NEAREST)
					x = nearbyint(x);
				if (x < lo || x > hi) {
					if (pad == GS_BORDER)
						x = x < 0 ? 0 : x > (double)(L - 1) ? (double)(L - 1) : x;
					else if (pad == GS_REFLECTION)
						x = gs_reflect(x, lo, hi);
				}
				if (!(fabs(x) < 1e15)) /* NaN or far outside: reads padding */
					x = x > 0 ? 1e15 : -1e15;
				if (mode == RS_NEAREST) {
					tvalid[d][0] = gs_tap(pad, (int64_t)x, L, lo, hi, &tidx[d][0]);
					tw[d][0] = 1;
					continue;
				}
				double fl = floor(x), t = x - fl;
				int64_t x0 = (int64_t)fl;
				if (mode == RS_LINEAR) {
					tw[d][0] = 1 - t;
					tw[d][1] = t;
				} else {
					tw[d][0] = cubic_kernel(t + 1, -0.75);
					tw[d][1] = cubic_kernel(t, -0.75);
					tw[d][2] = cubic_kernel(1 - t, -0.75);
					tw[d][3] = cubic_kernel(2 - t, -0.75);
					x0 -= 1;
				}
				for (int32_t j = 0; j < ntap; j++)
					tvalid[d][j] = gs_tap(pad, x0 + j, L, lo, hi, &tidx[d][j]);
			}
			for (int64_t c = 0; c < C; c++) {
				uint64_t ibase = ((uint64_t)nb * (uint64_t)C + (uint64_t)c) * nin;
				int32_t t[WH_MAX_RANK] = {0};
				double acc = 0;
				for (;;) {
					double w = 1;
					bool valid = true;
					int64_t off = 0;
					for (int32_t d = 0; d < k; d++) {
						w *= tw[d][t[d]];
						valid = valid && tvalid[d][t[d]];
						off += tidx[d][t[d]] * istr[d];
					}
					if (valid && w != 0)
						acc += w * wh_tensor_get_f64(X, ibase + (uint64_t)off);
					int32_t d = k - 1;
					for (; d >= 0; d--) {
						if (++t[d] < ntap)
							break;
						t[d] = 0;
					}
					if (d < 0)
						break;
				}
				wh_tensor_set_f64(out, ((uint64_t)nb * (uint64_t)C + (uint64_t)c) * npos + g, acc);
			}
		}
	}
	return WH_OK;
}
