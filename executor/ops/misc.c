/* Miscellaneous math: Einsum, Det, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss.
 *
 * Numerics: floating products and sums are computed in double and rounded once to the
 * output type; integer Einsum accumulates in 64 bits and wraps like the output type. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

static bool is_float_type(enum wh_dtype dt)
{
	return wh_dtype_is_float(dt);
}

/* ---- Einsum ---- */

/* Labels: 'A'..'Z' are 0..25 and 'a'..'z' 26..51 (ASCII order, which the implicit output
 * follows); the broadcast dims of "..." get 52.., aligned to the right. */
#define EIN_LETTERS 52
#define EIN_MAX_LABELS (EIN_LETTERS + WH_MAX_RANK)
#define EIN_MAX_INPUTS 16

struct ein_term {
	int n;                   /* labels in order of the dims, "..." expanded */
	int labels[WH_MAX_RANK];
	int n_letters;
	int ell_pos;             /* index of "..." among the letters, -1 if none */
	int letters[WH_MAX_RANK * 2];
};

static int letter_id(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return 26 + (c - 'a');
	return -1;
}

/* Parses one term of the equation [s, e) into letters and the position of "...". */
static bool parse_term(const char *s, const char *e, struct ein_term *t)
{
	t->n_letters = 0;
	t->ell_pos = -1;
	while (s < e) {
		if (*s == '.') {
			if (e - s < 3 || s[1] != '.' || s[2] != '.' || t->ell_pos >= 0)
				return false;
			t->ell_pos = t->n_letters;
			s += 3;
			continue;
		}
		int id = letter_id(*s);
		if (id < 0 || t->n_letters >= WH_MAX_RANK * 2)
			return false;
		t->letters[t->n_letters++] = id;
		s++;
	}
	return true;
}

struct ein_job {
	uint32_t n_in;
	const struct wh_tensor *in[EIN_MAX_INPUTS];
	struct wh_tensor *y;
	bool flt, all_f32;
	int n_out, n_sum;
	int64_t out_size[EIN_MAX_LABELS], sum_size[EIN_MAX_LABELS];
	/* per input, the element stride of each output label and summed label */
	int64_t out_stride[EIN_MAX_INPUTS][EIN_MAX_LABELS];
	int64_t sum_stride[EIN_MAX_INPUTS][EIN_MAX_LABELS];
	uint64_t sum_count;
};

static void ein_range(void *p, size_t lo, size_t hi)
{
	const struct ein_job *j = p;
	for (size_t o = lo; o < hi; o++) {
		uint64_t base[EIN_MAX_INPUTS] = {0};
		uint64_t rest = o;
		for (int l = j->n_out - 1; l >= 0; l--) {
			uint64_t idx = rest % (uint64_t)j->out_size[l];
			rest /= (uint64_t)j->out_size[l];
			for (uint32_t t = 0; t < j->n_in; t++)
				base[t] += idx * (uint64_t)j->out_stride[t][l];
		}
		int64_t sidx[EIN_MAX_LABELS] = {0};
		double acc = 0;
		uint64_t iacc = 0;
		for (uint64_t s = 0; s < j->sum_count; s++) {
			if (j->all_f32) {
				double prod = 1;
				for (uint32_t t = 0; t < j->n_in; t++)
					prod *= ((const float *)j->in[t]->data)[base[t]];
				acc += prod;
			} else if (j->flt) {
				double prod = 1;
				for (uint32_t t = 0; t < j->n_in; t++)
					prod *= wh_tensor_get_f64(j->in[t], base[t]);
				acc += prod;
			} else {
				uint64_t prod = 1;
				for (uint32_t t = 0; t < j->n_in; t++)
					prod *= (uint64_t)wh_tensor_get_i64(j->in[t], base[t]);
				iacc += prod;
			}
			for (int l = j->n_sum - 1; l >= 0; l--) {
				for (uint32_t t = 0; t < j->n_in; t++)
					base[t] += (uint64_t)j->sum_stride[t][l];
				if (++sidx[l] < j->sum_size[l])
					break;
				for (uint32_t t = 0; t < j->n_in; t++)
					base[t] -= (uint64_t)j->sum_stride[t][l] * (uint64_t)j->sum_size[l];
				sidx[l] = 0;
			}
		}
		if (j->flt)
			wh_tensor_set_f64(j->y, o, acc);
		else
			wh_tensor_set_int_wrap(j->y, o, iacc);
	}
}

static enum wh_status einsum_run(struct wh_kernel_ctx *ctx)
{
	enum wh_status st;
	char eqbuf[512], eq[512];
	const char *raw = wh_node_attr_string(ctx->node, "equation", NULL, eqbuf, sizeof eqbuf);
	if (!raw)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute equation is missing");
	size_t n = 0;
	for (const char *c = raw; *c; c++)
		if (*c != ' ' && *c != '\t')
			eq[n++] = *c;
	eq[n] = '\0';
	uint32_t n_in = ctx->n_inputs;
	if (n_in == 0 || n_in > EIN_MAX_INPUTS)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "einsum of %u inputs is not supported (1 to %d)", n_in,
				      EIN_MAX_INPUTS);
	struct ein_job *j = calloc(1, sizeof *j);
	struct ein_term *terms = calloc(n_in + 1, sizeof *terms);
	if (!j || !terms) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
		goto out;
	}
	j->n_in = n_in;
	j->flt = true;
	j->all_f32 = true;
	enum wh_dtype dt = WH_DT_UNDEFINED;
	for (uint32_t t = 0; t < n_in; t++) {
		j->in[t] = ctx->inputs[t];
		if (!j->in[t]) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "input %u is missing", t);
			goto out;
		}
		if (t == 0)
			dt = j->in[t]->dtype;
		else if (j->in[t]->dtype != dt) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs have different types (%s and %s)",
					    wh_dtype_name(dt), wh_dtype_name(j->in[t]->dtype));
			goto out;
		}
	}
	if (!is_float_type(dt) && !wh_dtype_is_int(dt)) {
		st = wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "inputs of type %s are not supported", wh_dtype_name(dt));
		goto out;
	}
	j->flt = is_float_type(dt);
	j->all_f32 = dt == WH_DT_FLOAT;

	/* split "lhs->rhs" and the lhs terms */
	const char *arrow = strstr(eq, "->");
	const char *lhs_end = arrow ? arrow : eq + n;
	const char *s = eq;
	for (uint32_t t = 0; t < n_in; t++) {
		const char *e = memchr(s, ',', (size_t)(lhs_end - s));
		if (!e)
			e = lhs_end;
		if ((t + 1 < n_in) != (e < lhs_end) || !parse_term(s, e, &terms[t])) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "equation '%s' does not match %u inputs", raw, n_in);
			goto out;
		}
		s = e + 1;
	}
	/* broadcast rank of "..." */
	int ell = 0;
	for (uint32_t t = 0; t < n_in; t++) {
		int r = j->in[t]->rank - terms[t].n_letters;
		if ((terms[t].ell_pos < 0 && r != 0) || r < 0) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "input %u has rank %d, the equation gives it %d labels", t,
					    j->in[t]->rank, terms[t].n_letters);
			goto out;
		}
		if (r > ell)
			ell = r;
	}
	int64_t size[EIN_MAX_LABELS];
	int count[EIN_MAX_LABELS] = {0};
	for (int l = 0; l < EIN_MAX_LABELS; l++)
		size[l] = -1;
	for (uint32_t t = 0; t < n_in; t++) {
		struct ein_term *tm = &terms[t];
		int r = j->in[t]->rank - tm->n_letters;
		tm->n = 0;
		for (int i = 0; i <= tm->n_letters; i++) {
			if (i == tm->ell_pos)
				for (int k = 0; k < r; k++)
					tm->labels[tm->n++] = EIN_LETTERS + (ell - r) + k;
			if (i < tm->n_letters)
				tm->labels[tm->n++] = tm->letters[i];
		}
		for (int d = 0; d < tm->n; d++) {
			int l = tm->labels[d];
			int64_t sz = j->in[t]->dims[d];
			if (l < EIN_LETTERS)
				count[l]++;
			if (size[l] < 0 || size[l] == 1)
				size[l] = sz;
			else if (sz != size[l] && sz != 1) {
				st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "label sizes disagree (%lld and %lld) in '%s'",
						    (long long)size[l], (long long)sz, raw);
				goto out;
			}
		}
	}
	/* output labels */
	int out_labels[EIN_MAX_LABELS], n_out = 0;
	bool in_out[EIN_MAX_LABELS] = {false};
	if (arrow) {
		struct ein_term ot;
		if (!parse_term(arrow + 2, eq + n, &ot)) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "equation '%s' has a malformed output", raw);
			goto out;
		}
		for (int i = 0; i <= ot.n_letters; i++) {
			if (i == ot.ell_pos)
				for (int k = 0; k < ell; k++)
					out_labels[n_out++] = EIN_LETTERS + k;
			if (i < ot.n_letters) {
				int l = ot.letters[i];
				if (size[l] < 0 || in_out[l]) {
					st = wh_kernel_fail(ctx, WH_ERR_INVALID,
							    "output label '%c' of '%s' is not an input label or repeats",
							    l < 26 ? 'A' + l : 'a' + l - 26, raw);
					goto out;
				}
				in_out[l] = true;
				out_labels[n_out++] = l;
			}
		}
	} else {
		for (int k = 0; k < ell; k++)
			out_labels[n_out++] = EIN_LETTERS + k;
		for (int l = 0; l < EIN_LETTERS; l++)
			if (count[l] == 1)
				out_labels[n_out++] = l;
	}
	for (int i = 0; i < n_out; i++)
		in_out[out_labels[i]] = true;
	int sum_labels[EIN_MAX_LABELS], n_sum = 0;
	for (int l = 0; l < EIN_MAX_LABELS; l++)
		if (size[l] >= 0 && !in_out[l])
			sum_labels[n_sum++] = l;
	j->n_out = n_out;
	j->n_sum = n_sum;
	int64_t od[EIN_MAX_LABELS];
	if (n_out > WH_MAX_RANK) {
		st = wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "output rank %d exceeds %d", n_out, WH_MAX_RANK);
		goto out;
	}
	uint64_t sum_count = 1;
	for (int i = 0; i < n_out; i++)
		od[i] = j->out_size[i] = size[out_labels[i]];
	for (int i = 0; i < n_sum; i++) {
		j->sum_size[i] = size[sum_labels[i]];
		if (!wh_mul_u64(sum_count, (uint64_t)j->sum_size[i], &sum_count) || sum_count > WH_MAX_ELEMENTS) {
			st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "summation space of '%s' is too large", raw);
			goto out;
		}
	}
	j->sum_count = sum_count;
	for (uint32_t t = 0; t < n_in; t++) {
		int64_t strides[WH_MAX_RANK];
		wh_shape_strides(j->in[t]->dims, j->in[t]->rank, strides);
		int64_t lstride[EIN_MAX_LABELS] = {0};
		for (int d = 0; d < terms[t].n; d++) {
			int l = terms[t].labels[d];
			/* a size-1 dim broadcast against a larger one does not move; a repeated
			 * label walks the diagonal (sum of its strides) */
			if (!(j->in[t]->dims[d] == 1 && size[l] != 1))
				lstride[l] += strides[d];
		}
		for (int i = 0; i < n_out; i++)
			j->out_stride[t][i] = lstride[out_labels[i]];
		for (int i = 0; i < n_sum; i++)
			j->sum_stride[t][i] = lstride[sum_labels[i]];
	}
	if ((st = wh_tensor_alloc(&ctx->outputs[0], dt, n_out, od)))
		goto out;
	j->y = &ctx->outputs[0];
	wh_parallel_for(ctx->pool, j->y->count, wh_grain_for(sum_count * n_in), ein_range, j);
out:
	free(j);
	free(terms);
	return st;
}

/* ---- Det ---- */

static enum wh_status det_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *x = wh_kin(ctx, 0);
	enum wh_status st;
	char buf[32];
	if (!x)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "input X is missing");
	if (!is_float_type(x->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input X has type %s, expected a floating type",
				      wh_dtype_name(x->dtype));
	if (x->rank < 2 || x->dims[x->rank - 1] != x->dims[x->rank - 2])
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input X has shape %s, expected [..., M, M]",
				      wh_shape_str(x->dims, x->rank, buf, sizeof buf));
	int64_t m = x->dims[x->rank - 1];
	if ((st = wh_tensor_alloc(&ctx->outputs[0], x->dtype, x->rank - 2, x->dims)))
		return st;
	double *a = malloc((size_t)(m > 0 ? m * m : 1) * sizeof *a);
	if (!a)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	uint64_t mm = (uint64_t)(m * m);
	for (uint64_t b = 0; b < ctx->outputs[0].count; b++) {
		for (uint64_t i = 0; i < mm; i++)
			a[i] = wh_tensor_get_f64(x, b * mm + i);
		/* LU decomposition with partial pivoting */
		double det = 1;
		for (int64_t c = 0; c < m && det != 0; c++) {
			int64_t piv = c;
			for (int64_t r = c + 1; r < m; r++)
				if (fabs(a[r * m + c]) > fabs(a[piv * m + c]))
					piv = r;
			if (a[piv * m + c] == 0) {
				det = 0;
				break;
			}
			if (piv != c) {
				for (int64_t k = 0; k < m; k++) {
					double t = a[c * m + k];
					a[c * m + k] = a[piv * m + k];
					a[piv * m + k] = t;
				}
				det = -det;
			}
			double p = a[c * m + c];
			det *= p;
			for (int64_t r = c + 1; r < m; r++) {
				double f = a[r * m + c] / p;
				for (int64_t k = c + 1; k < m; k++)
					a[r * m + k] -= f * a[c * m + k];
			}
		}
		wh_tensor_set_f64(&ctx->outputs[0], b, det);
	}
	free(a);
	return WH_OK;
}

/* ---- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ---- */

/* loss over log-probabilities lp laid out as (N, C, D): weighted, with ignore_index, and
 * reduced as asked; writes output 0. */
static enum wh_status nll_common(struct wh_kernel_ctx *ctx, const struct wh_tensor *in, const double *lp,
				 const struct wh_tensor *target, const struct wh_tensor *weight)
{
	enum wh_status st;
	char b1[32], b2[32], rbuf[16];
	if (in->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "input has shape %s, expected N x C x ...",
				      wh_shape_str(in->dims, in->rank, b1, sizeof b1));
	bool ok = target->rank == in->rank - 1 && target->dims[0] == in->dims[0];
	for (int32_t d = 2; ok && d < in->rank; d++)
		ok = target->dims[d - 1] == in->dims[d];
	if (!ok)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "target has shape %s, expected input shape %s without dim 1",
				      wh_shape_str(target->dims, target->rank, b1, sizeof b1),
				      wh_shape_str(in->dims, in->rank, b2, sizeof b2));
	if (!wh_dtype_is_int(target->dtype))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "target has type %s, expected an integer type",
				      wh_dtype_name(target->dtype));
	int64_t C = in->dims[1];
	uint64_t N = (uint64_t)in->dims[0];
	uint64_t D = 1;
	for (int32_t d = 2; d < in->rank; d++)
		D *= (uint64_t)in->dims[d];
	if (weight && (weight->rank != 1 || weight->dims[0] != C))
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "weight has shape %s, expected [%lld]",
				      wh_shape_str(weight->dims, weight->rank, b1, sizeof b1), (long long)C);
	const struct wh_attr *ia = wh_node_attr(ctx->node, "ignore_index");
	bool has_ii = ia && ia->type == WH_ATTR_INT;
	int64_t ii = has_ii ? ia->i : 0;
	const char *red = wh_node_attr_string(ctx->node, "reduction", "mean", rbuf, sizeof rbuf);
	int mode = !strcmp(red, "none") ? 0 : (!strcmp(red, "sum") ? 1 : (!strcmp(red, "mean") ? 2 : -1));
	if (mode < 0)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "reduction '%s' is not none, sum or mean", red);
	if (mode == 0)
		st = wh_tensor_alloc(&ctx->outputs[0], in->dtype, target->rank, target->dims);
	else
		st = wh_tensor_alloc(&ctx->outputs[0], in->dtype, 0, NULL);
	if (st)
		return st;
	double sum = 0, wsum = 0;
	for (uint64_t n = 0; n < N; n++)
		for (uint64_t d = 0; d < D; d++) {
			uint64_t ti = n * D + d;
			int64_t c = wh_tensor_get_i64(target, ti);
			double l = 0, w = 0;
			if (!(has_ii && c == ii)) {
				if (c < 0 || c >= C)
					return wh_kernel_fail(ctx, WH_ERR_INVALID, "target %lld is outside [0, %lld)",
							      (long long)c, (long long)C);
				w = weight ? wh_tensor_get_f64(weight, (uint64_t)c) : 1.0;
				l = -lp[(n * (uint64_t)C + (uint64_t)c) * D + d] * w;
			}
			if (mode == 0)
				wh_tensor_set_f64(&ctx->outputs[0], ti, l);
			sum += l;
			wsum += w;
		}
	if (mode == 1)
		wh_tensor_set_f64(&ctx->outputs[0], 0, sum);
	else if (mode == 2)
		/* the weighted mean divides by the weights of the counted targets; without weights
		 * and ignore_index that is the plain mean */
		wh_tensor_set_f64(&ctx->outputs[0], 0, (weight || has_ii) ? sum / wsum : sum / (double)(N * D));
	return WH_OK;
}

static enum wh_status nllloss_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in = wh_kin(ctx, 0), *target = wh_kin(ctx, 1), *weight = wh_kin(ctx, 2);
	if (!in || !target)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs input and target are required");
	if (!is_float_type(in->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "input has type %s, expected a floating type",
				      wh_dtype_name(in->dtype));
	double *lp = malloc((in->count ? in->count : 1) * sizeof *lp);
	if (!lp)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	for (uint64_t i = 0; i < in->count; i++)
		lp[i] = wh_tensor_get_f64(in, i);
	enum wh_status st = nll_common(ctx, in, lp, target, weight);
	free(lp);
	return st;
}

static enum wh_status sce_run(struct wh_kernel_ctx *ctx)
{
	const struct wh_tensor *in = wh_kin(ctx, 0), *target = wh_kin(ctx, 1), *weight = wh_kin(ctx, 2);
	enum wh_status st;
	if (!in || !target)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "inputs scores and labels are required");
	if (!is_float_type(in->dtype))
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "scores has type %s, expected a floating type",
				      wh_dtype_name(in->dtype));
	if (in->rank < 2)
		return wh_kernel_fail(ctx, WH_ERR_SHAPE, "scores must have rank 2 or more (N x C x ...)");
	double *lp = malloc((in->count ? in->count : 1) * sizeof *lp);
	if (!lp)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory");
	uint64_t N = (uint64_t)in->dims[0], C = (uint64_t)in->dims[1], D = (N > 0 && C > 0) ? in->count / (N * C) : 1;
	for (uint64_t n = 0; n < N; n++)
		for (uint64_t d = 0; d < D; d++) {
			double mx = -INFINITY, s = 0;
			for (uint64_t c = 0; c < C; c++) {
				double v = wh_tensor_get_f64(in, (n * C + c) * D + d);
				mx = v > mx ? v : mx;
			}
			for (uint64_t c = 0; c < C; c++)
				s += exp(wh_tensor_get_f64(in, (n * C + c) * D + d) - mx);
			double ls = log(s);
			for (uint64_t c = 0; c < C; c++) {
				uint64_t i = (n * C + c) * D + d;
				lp[i] = wh_tensor_get_f64(in, i) - mx - ls;
			}
		}
	st = nll_common(ctx, in, lp, target, weight);
	if (!st && ctx->n_outputs > 1 && (!ctx->output_wanted || ctx->output_wanted[1])) {
		st = wh_tensor_alloc(&ctx->outputs[1], in->dtype, in->rank, in->dims);
		if (!st)
			for (uint64_t i = 0; i < in->count; i++)
				wh_tensor_set_f64(&ctx->outputs[1], i, lp[i]);
	}
	free(lp);
	return st;
}

const struct wh_op_def wh_ops_misc[] = {
	{"", "Einsum", 12, einsum_run},
	{"", "Det", 11, det_run},
	{"", "NegativeLogLikelihoodLoss", 12, nllloss_run},
	{"", "SoftmaxCrossEntropyLoss", 12, sce_run},
};
const size_t wh_ops_misc_count = sizeof wh_ops_misc / sizeof wh_ops_misc[0];
