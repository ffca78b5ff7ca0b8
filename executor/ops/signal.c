/* Signal processing: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix.
 *
 * Numerics: every transform runs in double and each output is rounded once to its type.
 * A length whose prime factors are all small runs as a mixed-radix Cooley-Tukey FFT
 * (O(n log n) for smooth lengths such as 400 or 512); a length with a large prime factor
 * goes through Bluestein's chirp-z algorithm on a power-of-two FFT, so no length is
 * quadratic. Twiddles are read from one table of exp(-2 pi i t / n) indexed by exact
 * integer phases, so a transform's numbers depend only on its length.
 * Work is split over independent lines (one transform each) with wh_parallel_for, so the
 * results are bit-identical for every thread count.
 *
 * Semantics where the spec is loose follow ONNX's test data and ONNX Runtime: DFT with
 * onesided=1 and inverse=1 is an IRFFT at every opset (complex one-sided spectrum in, real
 * signal of dft_length = 2 * (bins - 1) by default out); a forward one-sided DFT needs real
 * input; STFT slices a complex signal's spectrum when onesided=1, and takes a 2-D signal
 * [batch][length] as real ([batch][length][1]), as ONNX Runtime does (PyTorch's TorchScript
 * exporter writes torch.stft so); a one-point symmetric window is 0/0 (NaN). */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

/* Prime factors up to this go through the generic radix-p butterfly (O(p) per element);
 * a length with a larger one uses Bluestein. */
#define FFT_MAX_RADIX 61
#define FFT_MAX_FACTORS 64
/* Longest transform accepted: its tables take 16 bytes per point, several times over. */
#define FFT_MAX_LEN ((uint64_t)1 << 32)

struct cplx {
	double re, im;
};

static inline struct cplx cmul(struct cplx a, struct cplx b)
{
	return (struct cplx){a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}

/* ---- FFT plans ---- */

struct fft_plan {
	uint64_t n;
	int n_factors;
	uint32_t factors[FFT_MAX_FACTORS];
	struct cplx *tw; /* tw[t] = exp(-2 pi i t / n), for the mixed-radix path */
	/* Bluestein: a length-m (power of two >= 2n-1) plan convolves with the chirp */
	struct fft_plan *sub;
	uint64_t m;
	struct cplx *chirp; /* exp(-i pi t^2 / n) for t < n */
	struct cplx *bfft;  /* the FFT of the conjugate chirp, wrapped to length m */
};

static void fft_plan_destroy(struct fft_plan *p)
{
	if (!p)
		return;
	free(p->tw);
	free(p->chirp);
	free(p->bfft);
	fft_plan_destroy(p->sub);
	free(p);
}

static void fft_exec(const struct fft_plan *p, const struct cplx *in, struct cplx *out, struct cplx *scratch);

/* Points of scratch fft_exec needs. */
static uint64_t fft_scratch_len(const struct fft_plan *p)
{
	return p->sub ? 2 * p->m : 0;
}

static enum wh_status fft_plan_create(uint64_t n, struct fft_plan **out)
{
	enum wh_status st = WH_ERR_NOMEM;
	*out = NULL;
	if (n == 0 || n > FFT_MAX_LEN)
		return WH_ERR_INVALID;
	struct fft_plan *p = calloc(1, sizeof *p);
	if (!p)
		return WH_ERR_NOMEM;
	p->n = n;
	uint64_t rest = n;
	uint64_t largest = 1;
	for (uint64_t f = 2; f * f <= rest; f += (f == 2 ? 1 : 2)) {
		while (rest % f == 0) {
			p->factors[p->n_factors++] = (uint32_t)(f <= FFT_MAX_RADIX ? f : 0);
			largest = f;
			rest /= f;
		}
	}
	if (rest > 1) {
		if (rest > largest)
			largest = rest;
		p->factors[p->n_factors++] = (uint32_t)(rest <= FFT_MAX_RADIX ? rest : 0);
	}
	if (largest <= FFT_MAX_RADIX) {
		p->tw = malloc(n * sizeof *p->tw);
		if (!p->tw)
			goto out;
		for (uint64_t t = 0; t < n; t++) {
			double a = -2.0 * M_PI * (double)t / (double)n;
			p->tw[t] = (struct cplx){cos(a), sin(a)};
		}
		*out = p;
		return WH_OK;
	}
	/* Bluestein: X[k] = c[k] * sum_j (x[j] c[j]) conj(c[k-j]) with c[t] = exp(-i pi t^2/n) */
	p->n_factors = 0;
	uint64_t m = 1;
	while (m < 2 * n - 1)
		m <<= 1;
	p->m = m;
	if ((st = fft_plan_create(m, &p->sub)) != WH_OK)
		goto out;
	st = WH_ERR_NOMEM;
	p->chirp = malloc(n * sizeof *p->chirp);
	p->bfft = calloc(m, sizeof *p->bfft);
	struct cplx *b = calloc(m, sizeof *b);
	if (!p->chirp || !p->bfft || !b) {
		free(b);
		goto out;
	}
	for (uint64_t t = 0; t < n; t++) {
		/* t^2 mod 2n keeps the phase exact for long transforms */
		uint64_t sq = t * t % (2 * n); /* t < 2^32 */
		double a = -M_PI * (double)sq / (double)n;
		p->chirp[t] = (struct cplx){cos(a), sin(a)};
		struct cplx cc = {p->chirp[t].re, -p->chirp[t].im};
		b[t] = cc;
		if (t)
			b[m - t] = cc;
	}
	fft_exec(p->sub, b, p->bfft, NULL);
	free(b);
	*out = p;
	return WH_OK;
out:
	fft_plan_destroy(p);
	return st;
}

/* Decimation in time: out[0..n) is the DFT of in[0], in[is], ..., in[(n-1)*is]. */
static void fft_rec(const struct fft_plan *pl, const struct cplx *in, uint64_t is, struct cplx *out, uint64_t n,
		    int fi)
{
	uint32_t p = pl->factors[fi];
	uint64_t m = n / p;
	if (m == 1) {
		for (uint32_t q = 0; q < p; q++)
			out[q] = in[q * is];
	} else {
		for (uint32_t q = 0; q < p; q++)
			fft_rec(pl, in + q * is, is * p, out + q * m, m, fi + 1);
	}
	uint64_t step = pl->n / n; /* W_n^e = tw[e * step] */
	const struct cplx *tw = pl->tw;
	if (p == 2) {
		for (uint64_t k = 0; k < m; k++) {
			struct cplx a = out[k];
			struct cplx b = k ? cmul(out[m + k], tw[k * step]) : out[m + k];
			out[k] = (struct cplx){a.re + b.re, a.im + b.im};
			out[m + k] = (struct cplx){a.re - b.re, a.im - b.im};
		}
		return;
	}
	struct cplx t[FFT_MAX_RADIX], wp[FFT_MAX_RADIX];
	for (uint32_t e = 0; e < p; e++)
		wp[e] = tw[e * m * step]; /* W_p^e */
	for (uint64_t k = 0; k < m; k++) {
		for (uint32_t q = 0; q < p; q++)
			t[q] = k && q ? cmul(out[q * m + k], tw[q * k * step]) : out[q * m + k]; /* q k < n */
		for (uint32_t r = 0; r < p; r++) {
			struct cplx s = t[0];
			for (uint32_t q = 1; q < p; q++) {
				struct cplx v = cmul(t[q], wp[(q * r) % p]);
				s.re += v.re;
				s.im += v.im;
			}
			out[r * m + k] = s;
		}
	}
}

/* Forward DFT of in[0..n) into out[0..n) (distinct buffers; in is left intact). */
static void fft_exec(const struct fft_plan *p, const struct cplx *in, struct cplx *out, struct cplx *scratch)
{
	uint64_t n = p->n;
	if (!p->sub) {
		if (n == 1)
			out[0] = in[0];
		else
			fft_rec(p, in, 1, out, n, 0);
		return;
	}
	uint64_t m = p->m;
	struct cplx *a = scratch, *fa = scratch + m;
	for (uint64_t j = 0; j < n; j++)
		a[j] = cmul(in[j], p->chirp[j]);
	for (uint64_t j = n; j < m; j++)
		a[j] = (struct cplx){0, 0};
	fft_exec(p->sub, a, fa, NULL);
	/* inverse FFT of the product through conj(FFT(conj(.))) */
	for (uint64_t j = 0; j < m; j++) {
		struct cplx v = cmul(fa[j], p->bfft[j]);
		fa[j] = (struct cplx){v.re, -v.im};
	}
	fft_exec(p->sub, fa, a, NULL);
	double inv = 1.0 / (double)m;
	for (uint64_t k = 0; k < n; k++) {
		struct cplx v = {a[k].re * inv, -a[k].im * inv};
		out[k] = cmul(v, p->chirp[k]);
	}
}

/* ---- element access ---- */

static inline double get(const struct wh_tensor *t, uint64_t i)
{
	if (t->dtype == WH_DT_FLOAT)
		return ((const float *)t->data)[i];
	if (t->dtype == WH_DT_DOUBLE)
		return ((const double *)t->data)[i];
	return wh_tensor_get_f64(t, i);
}

static inline void put(struct wh_tensor *t, uint64_t i, double v)
{
	if (t->dtype == WH_DT_FLOAT)
		((float *)t->data)[i] = (float)v;
	else if (t->dtype == WH_DT_DOUBLE)
		((double *)t->data)[i] = v;
	else
		wh_tensor_set_f64(t, i, v);
}

static bool is_signal_type(enum wh_dtype dt)
{
	return dt == WH_DT_FLOAT || dt == WH_DT_DOUBLE || dt == WH_DT_FLOAT16 || dt == WH_DT_BFLOAT16;
}

/* A one-element integer tensor (a scalar or a 1-element vector). */
static enum wh_status scalar_int(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *name,
				 int64_t *out)
{
	if (t->dtype != WH_DT_INT32 && t->dtype != WH_DT_INT64)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s has type %s, expected int32 or int64", name,
				      wh_dtype_name(t->dtype));
	if (t->count != 1 || t->rank > 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %s has %llu elements, expected a scalar", name,
				      (unsigned long long)t->count);
	*out = wh_tensor_get_i64(t, 0);
	return WH_OK;
}

static enum wh_status scalar_float(const struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *name,
				   double *out)
{
	if (!wh_dtype_is_float(t->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s has type %s, expected a float type", name,
				      wh_dtype_name(t->dtype));
	if (t->count != 1 || t->rank > 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %s has %llu elements, expected a scalar", name,
				      (unsigned long long)t->count);
	*out = wh_tensor_get_f64(t, 0);
	return WH_OK;
}

/* ---- DFT ---- */

struct dft_job {
	const struct wh_tensor *x;
	struct wh_tensor *y;
	uint64_t inner;    /* lines between the axis and the complex dim */
	uint64_t n_in;     /* x's size along the axis */
	uint64_t n_out;    /* y's size along the axis */
	int cin, cout;     /* x's and y's last dims (1 real, 2 complex) */
	bool inverse, irfft;
	const struct fft_plan *plan;
	atomic_int failed;
};

static void dft_range(void *arg, size_t lo, size_t hi)
{
	struct dft_job *j = arg;
	uint64_t n = j->plan->n;
	struct cplx *buf = malloc((2 * n + fft_scratch_len(j->plan)) * sizeof *buf);
	if (!buf) {
		atomic_store(&j->failed, 1);
		return;
	}
	struct cplx *res = buf + n, *scratch = buf + 2 * n;
	for (size_t l = lo; l < hi; l++) {
		uint64_t o = l / j->inner, i = l % j->inner;
		uint64_t xbase = o * j->n_in * j->inner + i, ybase = o * j->n_out * j->inner + i;
		/* gather the signal (truncated or zero-padded to n); conjugated for the inverse,
		 * which is conj(DFT(conj(y))) / n */
		double sgn = j->inverse ? -1.0 : 1.0;
		for (uint64_t a = 0; a < n; a++) {
			uint64_t src = a;
			bool conj = false;
			if (j->irfft && a > n / 2) {
				/* the missing half of a Hermitian spectrum */
				src = n - a;
				conj = true;
			}
			struct cplx v = {0, 0};
			if (src < j->n_in) {
				uint64_t e = (xbase + src * j->inner) * (uint64_t)j->cin;
				v.re = get(j->x, e);
				v.im = j->cin == 2 ? get(j->x, e + 1) : 0.0;
			}
			if (conj)
				v.im = -v.im;
			v.im *= sgn;
			buf[a] = v;
		}
		fft_exec(j->plan, buf, res, scratch);
		double div = j->inverse ? (double)n : 1.0;
		for (uint64_t a = 0; a < j->n_out; a++) {
			uint64_t e = (ybase + a * j->inner) * (uint64_t)j->cout;
			put(j->y, e, res[a].re / div);
			if (j->cout == 2)
				put(j->y, e + 1, sgn * res[a].im / div);
		}
	}
	free(buf);
}

static enum wh_status dft_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	const struct wh_tensor *len_t = wh_kin(ctx, 1);
	const struct wh_tensor *axis_t = ctx->opset >= 20 ? wh_kin(ctx, 2) : NULL;
	struct fft_plan *plan = NULL;
	enum wh_status s;
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input is missing");
	if (!is_signal_type(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input of type %s is not supported (float16, bfloat16, float32 or float64)",
				      wh_dtype_name(x->dtype));
	int32_t r = x->rank;
	if (r < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input has rank %d, expected at least 2 (signal dims, then 1 or 2)", r);
	int64_t cin = x->dims[r - 1];
	if (cin != 1 && cin != 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input's last dim is %lld, expected 1 (real) or 2 (complex)",
				      (long long)cin);
	int64_t axis = ctx->opset >= 20 ? -2 : wh_node_attr_int(ctx->node, "axis", 1);
	if (axis_t && (s = scalar_int(ctx, axis_t, "axis", &axis)) != WH_OK)
		return s;
	int64_t ax = axis < 0 ? axis + r : axis;
	if (ax < 0 || ax > r - 2)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "axis %lld is out of range for rank %d (the last dim holds real and imaginary parts)",
				      (long long)axis, r);
	int64_t inverse = wh_node_attr_int(ctx->node, "inverse", 0);
	int64_t onesided = wh_node_attr_int(ctx->node, "onesided", 0);
	if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attributes inverse=%lld and onesided=%lld must be 0 or 1",
				      (long long)inverse, (long long)onesided);
	bool irfft = inverse && onesided;
	if (irfft && cin != 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "an inverse one-sided dft needs complex input (last dim 2), got last dim %lld",
				      (long long)cin);
	if (onesided && !inverse && cin != 1)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "a one-sided dft needs real input (last dim 1), got last dim %lld",
				      (long long)cin);
	int64_t n_in = x->dims[ax];
	int64_t n = irfft ? 2 * (n_in - 1) : n_in;
	if (len_t && (s = scalar_int(ctx, len_t, "dft_length", &n)) != WH_OK)
		return s;
	if (n <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "dft_length is %lld, expected a positive length%s", (long long)n,
				      len_t ? "" : " (give dft_length)");
	int64_t n_out = onesided && !inverse ? n / 2 + 1 : n;
	int64_t dims[WH_MAX_RANK];
	memcpy(dims, x->dims, (size_t)r * sizeof dims[0]);
	dims[ax] = n_out;
	dims[r - 1] = irfft ? 1 : 2;
	uint64_t count;
	if (!wh_shape_count(dims, r, &count))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output of dft_length %lld is too large", (long long)n);
	if ((s = wh_tensor_alloc(&ctx->outputs[0], x->dtype, r, dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	if (count == 0)
		return WH_OK;
	if ((uint64_t)n > FFT_MAX_LEN)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "dft_length %lld is too long (at most 2^32)", (long long)n);
	if ((s = fft_plan_create((uint64_t)n, &plan)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory for a %lld-point transform", (long long)n);
	struct dft_job j = {
		.x = x, .y = &ctx->outputs[0], .n_in = (uint64_t)n_in, .n_out = (uint64_t)n_out,
		.cin = (int)cin, .cout = irfft ? 1 : 2, .inverse = inverse, .irfft = irfft, .plan = plan,
	};
	uint64_t inner = 1;
	for (int32_t d = (int32_t)ax + 1; d < r - 1; d++)
		inner *= (uint64_t)x->dims[d];
	j.inner = inner;
	atomic_init(&j.failed, 0);
	uint64_t lines = count / ((uint64_t)n_out * (uint64_t)j.cout);
	wh_parallel_for(ctx->pool, (size_t)lines, wh_grain_for((uint64_t)n * 8), dft_range, &j);
	fft_plan_destroy(plan);
	if (atomic_load(&j.failed))
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	return WH_OK;
}

/* ---- STFT ---- */

struct stft_job {
	const struct wh_tensor *x, *w;
	struct wh_tensor *y;
	uint64_t len, frames, step, frame_len, bins;
	int cin;
	const struct fft_plan *plan;
	atomic_int failed;
};

static void stft_range(void *arg, size_t lo, size_t hi)
{
	struct stft_job *j = arg;
	uint64_t n = j->frame_len;
	struct cplx *buf = malloc((2 * n + fft_scratch_len(j->plan)) * sizeof *buf);
	if (!buf) {
		atomic_store(&j->failed, 1);
		return;
	}
	struct cplx *res = buf + n, *scratch = buf + 2 * n;
	for (size_t l = lo; l < hi; l++) {
		uint64_t b = l / j->frames, f = l % j->frames;
		uint64_t base = b * j->len + f * j->step;
		for (uint64_t t = 0; t < n; t++) {
			/* the frame fits in the signal: frames were counted so */
			uint64_t e = (base + t) * (uint64_t)j->cin;
			double w = j->w ? get(j->w, t) : 1.0;
			buf[t].re = get(j->x, e) * w;
			buf[t].im = j->cin == 2 ? get(j->x, e + 1) * w : 0.0;
		}
		fft_exec(j->plan, buf, res, scratch);
		uint64_t ob = l * j->bins * 2;
		for (uint64_t k = 0; k < j->bins; k++) {
			put(j->y, ob + 2 * k, res[k].re);
			put(j->y, ob + 2 * k + 1, res[k].im);
		}
	}
	free(buf);
}

static enum wh_status stft_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	const struct wh_tensor *step_t = wh_kin(ctx, 1);
	const struct wh_tensor *w = wh_kin(ctx, 2);
	const struct wh_tensor *len_t = wh_kin(ctx, 3);
	struct fft_plan *plan = NULL;
	enum wh_status s;
	if (!x || !step_t)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing", x ? "frame_step" : "signal");
	if (!is_signal_type(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "signal of type %s is not supported (float16, bfloat16, float32 or float64)",
				      wh_dtype_name(x->dtype));
	if ((x->rank != 2 && x->rank != 3) || (x->rank == 3 && x->dims[2] != 1 && x->dims[2] != 2)) {
		char buf[64];
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "signal has shape %s, expected [batch][length][1 or 2] or [batch][length] (real)",
				      wh_shape_str(x->dims, x->rank, buf, sizeof buf));
	}
	int64_t step = 0, frame_len = 0;
	if ((s = scalar_int(ctx, step_t, "frame_step", &step)) != WH_OK)
		return s;
	if (step <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "frame_step is %lld, expected a positive step", (long long)step);
	if (w) {
		if (!is_signal_type(w->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "window has type %s, expected a float type",
					      wh_dtype_name(w->dtype));
		if (w->rank != 1)
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "window has rank %d, expected 1", w->rank);
	}
	frame_len = w ? w->dims[0] : x->dims[1];
	if (len_t && (s = scalar_int(ctx, len_t, "frame_length", &frame_len)) != WH_OK)
		return s;
	if (frame_len <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "frame_length is %lld, expected a positive length", (long long)frame_len);
	if (w && w->dims[0] != frame_len)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "window has %lld points, frame_length is %lld (they must agree)",
				      (long long)w->dims[0], (long long)frame_len);
	if (frame_len > x->dims[1])
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "frame_length %lld is longer than the signal (%lld samples)",
				      (long long)frame_len, (long long)x->dims[1]);
	int64_t onesided = wh_node_attr_int(ctx->node, "onesided", 1);
	if (onesided != 0 && onesided != 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute onesided is %lld, expected 0 or 1", (long long)onesided);
	int64_t frames = 1 + (x->dims[1] - frame_len) / step;
	int64_t bins = onesided ? frame_len / 2 + 1 : frame_len;
	int64_t dims[4] = {x->dims[0], frames, bins, 2};
	uint64_t count;
	if (!wh_shape_count(dims, 4, &count))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output is too large");
	if ((s = wh_tensor_alloc(&ctx->outputs[0], x->dtype, 4, dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	if (count == 0)
		return WH_OK;
	if ((uint64_t)frame_len > FFT_MAX_LEN)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "frame_length %lld is too long (at most 2^32)", (long long)frame_len);
	if ((s = fft_plan_create((uint64_t)frame_len, &plan)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory for a %lld-point transform", (long long)frame_len);
	struct stft_job j = {
		.x = x, .w = w, .y = &ctx->outputs[0], .len = (uint64_t)x->dims[1], .frames = (uint64_t)frames,
		.step = (uint64_t)step, .frame_len = (uint64_t)frame_len, .bins = (uint64_t)bins,
		.cin = x->rank == 3 ? (int)x->dims[2] : 1, .plan = plan,
	};
	atomic_init(&j.failed, 0);
	wh_parallel_for(ctx->pool, (size_t)(x->dims[0] * frames), wh_grain_for((uint64_t)frame_len * 8), stft_range, &j);
	fft_plan_destroy(plan);
	if (atomic_load(&j.failed))
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	return WH_OK;
}

/* ---- window functions ---- */

static bool numeric_type(enum wh_dtype dt)
{
	return wh_dtype_is_float(dt) || wh_dtype_is_int(dt);
}

/* w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), N = size (periodic) or size - 1. */
static enum wh_status window_run(struct wh_kernel_ctx *ctx, double a0, double a1, double a2)
{
	const struct wh_tensor *len_t = wh_kin(ctx, 0);
	enum wh_status s;
	if (!len_t)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input size is missing");
	int64_t size = 0;
	if ((s = scalar_int(ctx, len_t, "size", &size)) != WH_OK)
		return s;
	if (size < 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "size is %lld, expected at least 0", (long long)size);
	int64_t periodic = wh_node_attr_int(ctx->node, "periodic", 1);
	int64_t odt = wh_node_attr_int(ctx->node, "output_datatype", WH_DT_FLOAT);
	if (!wh_dtype_valid((int)odt) || odt != (int)odt || !numeric_type((enum wh_dtype)odt))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "output_datatype %lld is not a numeric type", (long long)odt);
	int64_t dims[1] = {size};
	uint64_t count;
	if (!wh_shape_count(dims, 1, &count))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "size %lld is too large", (long long)size);
	if ((s = wh_tensor_alloc(&ctx->outputs[0], (enum wh_dtype)odt, 1, dims)) != WH_OK)
		return wh_kernel_fail(ctx, s, "out of memory");
	int64_t den = periodic ? size : size - 1;
	struct wh_tensor *y = &ctx->outputs[0];
	for (int64_t k = 0; k < size; k++) {
		/* a one-point symmetric window divides 0 by 0: NaN, as in ONNX's function body,
		 * its reference and ONNX Runtime */
		double ph = 2.0 * M_PI * (double)k / (double)den;
		put(y, (uint64_t)k, a0 - a1 * cos(ph) + a2 * cos(2.0 * ph));
	}
	return WH_OK;
}

static enum wh_status hann_run(struct wh_kernel_ctx *ctx)
{
	return window_run(ctx, 0.5, 0.5, 0.0);
}

static enum wh_status hamming_run(struct wh_kernel_ctx *ctx)
{
	return window_run(ctx, 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

static enum wh_status blackman_run(struct wh_kernel_ctx *ctx)
{
	return window_run(ctx, 0.42, 0.5, 0.08);
}

/* ---- MelWeightMatrix ---- */

static double hz_to_mel(double hz)
{
	return 2595.0 * log10(1.0 + hz / 700.0);
}

static double mel_to_hz(double mel)
{
	return 700.0 * (pow(10.0, mel / 2595.0) - 1.0);
}

static enum wh_status mel_run(struct wh_kernel_ctx *ctx)
{
	static const char *const names[5] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
					     "upper_edge_hertz"};
	int64_t iv[3];
	double lo_hz = 0, hi_hz = 0;
	enum wh_status s;
	int64_t *bins = NULL;
	for (uint32_t i = 0; i < 5; i++)
		if (!wh_kin(ctx, i))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "input %s is missing", names[i]);
	for (uint32_t i = 0; i < 3; i++)
		if ((s = scalar_int(ctx, wh_kin(ctx, i), names[i], &iv[i])) != WH_OK)
			return s;
	if ((s = scalar_float(ctx, wh_kin(ctx, 3), names[3], &lo_hz)) != WH_OK ||
	    (s = scalar_float(ctx, wh_kin(ctx, 4), names[4], &hi_hz)) != WH_OK)
		return s;
	int64_t n_mel = iv[0], dft_len = iv[1], rate = iv[2];
	if (n_mel <= 0 || dft_len <= 0 || rate <= 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "num_mel_bins %lld, dft_length %lld and sample_rate %lld must be positive",
				      (long long)n_mel, (long long)dft_len, (long long)rate);
	if (!(lo_hz >= 0) || !(hi_hz > lo_hz))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "edges %g..%g hz are not an increasing range from 0", lo_hz, hi_hz);
	int64_t odt = wh_node_attr_int(ctx->node, "output_datatype", WH_DT_FLOAT);
	if (!wh_dtype_valid((int)odt) || odt != (int)odt || !numeric_type((enum wh_dtype)odt))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "output_datatype %lld is not a numeric type", (long long)odt);
	int64_t n_spec = dft_len / 2 + 1;
	int64_t dims[2] = {n_spec, n_mel};
	uint64_t count;
	if (!wh_shape_count(dims, 2, &count) || n_mel > INT32_MAX)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "output %lldx%lld is too large", (long long)n_spec, (long long)n_mel);
	bins = malloc((size_t)(n_mel + 2) * sizeof *bins);
	double *w = calloc((size_t)count, sizeof *w);
	if (!bins || !w) {
		s = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
		goto out;
	}
	/* n_mel + 2 edges evenly spaced in mel, the step taken as (high - low) / (n_mel + 2)
	 * as ONNX's reference and ONNX Runtime do, each mapped to an fft bin by flooring */
	double lo_mel = hz_to_mel(lo_hz), hi_mel = hz_to_mel(hi_hz);
	double step = (hi_mel - lo_mel) / (double)(n_mel + 2);
	for (int64_t i = 0; i < n_mel + 2; i++) {
		double hz = mel_to_hz((double)i * step + lo_mel);
		double b = floor((double)(dft_len + 1) * hz / (double)rate);
		if (!(b >= 0) || b >= (double)n_spec) {
			s = wh_kernel_fail(ctx, WH_ERR_INVALID, "upper_edge_hertz %g maps past the last of %lld spectrogram bins (keep it at most sample_rate / 2)",
					   hi_hz, (long long)n_spec);
			goto out;
		}
		bins[i] = (int64_t)b;
	}
	for (int64_t i = 0; i < n_mel; i++) {
		int64_t left = bins[i], center = bins[i + 1], right = bins[i + 2];
		if (center == left)
			w[center * n_mel + i] = 1.0;
		else
			for (int64_t k = left; k <= center; k++)
				w[k * n_mel + i] = (double)(k - left) / (double)(center - left);
		for (int64_t k = center; k < right; k++)
			w[k * n_mel + i] = (double)(right - k) / (double)(right - center);
	}
	if ((s = wh_tensor_alloc(&ctx->outputs[0], (enum wh_dtype)odt, 2, dims)) != WH_OK) {
		s = wh_kernel_fail(ctx, s, "out of memory");
		goto out;
	}
	for (uint64_t i = 0; i < count; i++)
		put(&ctx->outputs[0], i, w[i]);
	s = WH_OK;
out:
	free(bins);
	free(w);
	return s;
}

const struct wh_op_def wh_ops_signal[] = {
	{"", "DFT", 17, dft_run},
	{"", "DFT", 20, dft_run},
	{"", "STFT", 17, stft_run},
	{"", "HannWindow", 17, hann_run},
	{"", "HammingWindow", 17, hamming_run},
	{"", "BlackmanWindow", 17, blackman_run},
	{"", "MelWeightMatrix", 17, mel_run},
};
const size_t wh_ops_signal_count = sizeof wh_ops_signal / sizeof wh_ops_signal[0];
