/* Control flow: If, Loop, Scan (opset 8 batched form and opset 9+ axes/directions form).
 *
 * Bodies run through wh_kernel_run_subgraph, one frame per iteration. Values passed between
 * iterations and the per-iteration scan outputs are shared by reference (tensor blobs are
 * immutable once produced), so only the final stacking and the scan-input slicing copy
 * element data. Element copies are raw byte blocks, which serves every element type;
 * string tensors (arrays of pointers into their blob) are copied as pointer arrays and
 * re-made with wh_tensor_alloc_strings so the result owns its characters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/kernel.h"

static uint64_t prod(const int64_t *dims, int32_t from, int32_t to)
{
	uint64_t p = 1;
	for (int32_t d = from; d < to; d++)
		p *= (uint64_t)dims[d];
	return p;
}

/* dst = src[..., idx, ...] along axis (the axis removed). */
static enum wh_status slice_along(const struct wh_tensor *src, int32_t axis, int64_t idx, struct wh_tensor *dst)
{
	int64_t dims[WH_MAX_RANK];
	int32_t rank = src->rank - 1;
	for (int32_t d = 0, k = 0; d < src->rank; d++)
		if (d != axis)
			dims[k++] = src->dims[d];
	uint8_t *raw;
	enum wh_status st = wh_kernel_out_begin(dst, src->dtype, rank, dims, &raw);
	if (st != WH_OK)
		return st;
	size_t esz = wh_dtype_size(src->dtype);
	uint64_t outer = prod(src->dims, 0, axis), len = (uint64_t)src->dims[axis];
	size_t inner = (size_t)prod(src->dims, axis + 1, src->rank) * esz;
	const uint8_t *s = src->data;
	if (inner)
		for (uint64_t o = 0; o < outer; o++)
			memcpy(raw + o * inner, s + (o * len + (uint64_t)idx) * inner, inner);
	return wh_kernel_out_finish(dst, src->dtype, rank, dims, raw);
}

/* Stacks n parts of one shape along a new axis at position axis (part i at index i); an
 * empty part (dtype 0) stands for zeros. With no non-empty part the shape comes from the
 * fallback (unknown dims taken as 0). */
struct fallback {
	enum wh_dtype dtype;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
};

static enum wh_status stack_parts(struct wh_kernel_ctx *ctx, const struct wh_tensor *parts, uint64_t n,
				  int64_t axis_in, const struct fallback *fb, const char *what, struct wh_tensor *dst)
{
	const struct wh_tensor *ref = NULL;
	for (uint64_t i = 0; i < n && !ref; i++)
		if (parts[i].dtype)
			ref = &parts[i];
	enum wh_dtype dt = ref ? ref->dtype : fb->dtype ? fb->dtype : WH_DT_FLOAT;
	int32_t prank = ref ? ref->rank : fb->rank < 0 ? 0 : fb->rank;
	int64_t pdims[WH_MAX_RANK];
	for (int32_t d = 0; d < prank; d++)
		pdims[d] = ref ? ref->dims[d] : fb->dims[d] < 0 ? 0 : fb->dims[d];
	if (prank + 1 > WH_MAX_RANK)
		return wh_kernel_fail(ctx, WH_ERR_UNSUPPORTED, "%s would have rank %d, above the limit %d (use a smaller model)",
				      what, prank + 1, WH_MAX_RANK);
	int32_t axis;
	if (!wh_norm_axis(axis_in, prank + 1, &axis))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s: axis %lld is out of range for rank %d (fix the model)",
				      what, (long long)axis_in, prank + 1);
	for (uint64_t i = 0; i < n; i++) {
		const struct wh_tensor *p = &parts[i];
		if (!wh_value_is_tensor(p))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s: iteration %llu gives a %s, and scan outputs are tensors (fix the model)",
					      what, (unsigned long long)i, wh_value_kind_name(p));
		if (!p->dtype)
			continue;
		if (p->dtype != dt || !wh_tensor_same_shape(p, ref)) {
			char a[64], b[64];
			return wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s: iteration %llu gives %s %s, iteration 0 gave %s %s (the body must give one shape every iteration)",
					      what, (unsigned long long)i, wh_dtype_name(p->dtype),
					      wh_shape_str(p->dims, p->rank, a, sizeof a), wh_dtype_name(dt),
					      wh_shape_str(ref->dims, ref->rank, b, sizeof b));
		}
	}
	if (n > (uint64_t)INT64_MAX)
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "%s: too many iterations", what);
	int64_t odims[WH_MAX_RANK];
	for (int32_t d = 0, k = 0; d <= prank; d++)
		odims[d] = d == axis ? (int64_t)n : pdims[k++];
	uint64_t cnt;
	if (!wh_shape_count(odims, prank + 1, &cnt))
		return wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "%s would be too large (use smaller inputs)", what);
	uint8_t *raw;
	enum wh_status st = wh_kernel_out_begin(dst, dt, prank + 1, odims, &raw);
	if (st != WH_OK)
		return st;
	size_t esz = wh_dtype_size(dt);
	uint64_t outer = prod(pdims, 0, axis);
	size_t inner = (size_t)prod(pdims, axis, prank) * esz;
	if (inner)
		for (uint64_t i = 0; i < n; i++)
			for (uint64_t o = 0; o < outer; o++) {
				uint8_t *d = raw + (o * n + i) * inner;
				if (parts[i].dtype)
					memcpy(d, (const uint8_t *)parts[i].data + o * inner, inner);
				else if (dt != WH_DT_STRING)
					memset(d, 0, inner);
			}
	return wh_kernel_out_finish(dst, dt, prank + 1, odims, raw);
}

/* What the body declares for one of its outputs: the shape of an empty scan output. */
static void fallback_of(const struct wh_graph *g, uint32_t out_idx, struct fallback *fb)
{
	const struct wh_value *v = &g->values[g->outputs[out_idx]];
	fb->dtype = v->dtype;
	fb->rank = v->rank > WH_MAX_RANK - 1 ? -1 : v->rank;
	for (int32_t d = 0; d < fb->rank; d++)
		fb->dims[d] = v->dims[d].value;
}

static const struct wh_graph *graph_attr(struct wh_kernel_ctx *ctx, const char *name)
{
	const struct wh_attr *a = wh_node_attr(ctx->node, name);
	return a && a->type == WH_ATTR_GRAPH ? a->g : NULL;
}

static void release_all(struct wh_tensor *ts, size_t n)
{
	if (ts)
		for (size_t i = 0; i < n; i++)
			wh_tensor_release(&ts[i]);
}

/* A growing list of tensors (per-iteration scan outputs). */
struct tlist {
	struct wh_tensor *t;
	uint64_t n, cap;
};

static enum wh_status tlist_push(struct wh_kernel_ctx *ctx, struct tlist *l, struct wh_tensor *t)
{
	if (l->n == l->cap) {
		uint64_t cap = l->cap ? l->cap * 2 : 16;
		struct wh_tensor *nt = cap < SIZE_MAX / sizeof *nt ? realloc(l->t, (size_t)cap * sizeof *nt) : NULL;
		if (!nt)
			return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory keeping scan outputs (free some memory)");
		l->t = nt;
		l->cap = cap;
	}
	l->t[l->n++] = *t;
	wh_tensor_init(t);
	return WH_OK;
}

static void tlist_release(struct tlist *l)
{
	release_all(l->t, (size_t)l->n);
	free(l->t);
	l->t = NULL;
	l->n = l->cap = 0;
}

/* A bool/number tensor holding one element, read as true/false. */
static enum wh_status read_cond(struct wh_kernel_ctx *ctx, const struct wh_tensor *t, const char *what, bool *out)
{
	if (!t || !wh_value_is_tensor(t) || t->count != 1 || t->dtype == WH_DT_STRING) {
		char b[64];
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s must be one boolean, got %s (fix the model)", what,
				      !t ? "nothing" : !wh_value_is_tensor(t) ? wh_value_kind_name(t)
									: wh_shape_str(t->dims, t->rank, b, sizeof b));
	}
	*out = wh_dtype_is_float(t->dtype) ? wh_tensor_get_f64(t, 0) != 0.0 : wh_tensor_get_i64(t, 0) != 0;
	return WH_OK;
}

/* ---- If ---- */

static enum wh_status if_run(struct wh_kernel_ctx *ctx)
{
	bool c;
	enum wh_status st = read_cond(ctx, wh_kin(ctx, 0), "input cond", &c);
	if (st != WH_OK)
		return st;
	const char *which = c ? "then_branch" : "else_branch";
	wh_kernel_note_branch(ctx, c);
	const struct wh_graph *g = graph_attr(ctx, which);
	if (!g)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s is missing (fix the model)", which);
	if (g->n_outputs < ctx->n_outputs)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "%s gives %u outputs, the node has %u (fix the model)", which,
				      g->n_outputs, ctx->n_outputs);
	/* the branch gives as many outputs as the node has (the usual case): straight into the
	 * node's slots, which the runtime empties where unwanted (a per-run allocation and the
	 * moves were most of an If's fixed cost) */
	if (g->n_outputs == ctx->n_outputs)
		return wh_kernel_run_subgraph(ctx, g, 0, NULL, ctx->outputs);
	struct wh_tensor *outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
	if (!outs)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
	for (uint32_t i = 0; i < g->n_outputs; i++)
		wh_tensor_init(&outs[i]);
	if ((st = wh_kernel_run_subgraph(ctx, g, 0, NULL, outs)) == WH_OK)
		for (uint32_t i = 0; i < ctx->n_outputs; i++)
			if (ctx->output_wanted[i]) {
				ctx->outputs[i] = outs[i];
				wh_tensor_init(&outs[i]);
			}
	release_all(outs, g->n_outputs);
	free(outs);
	return st;
}

/* ---- Loop ---- */

/* The body's iteration number / condition input: a scalar, or [1] where the body says so
 * (models of Loop-1 declare them that way). A new tensor each time: shared data is never
 * written. */
static enum wh_status loop_scalar(const struct wh_graph *body, uint32_t in_idx, enum wh_dtype dt, int64_t v,
				  struct wh_tensor *t)
{
	int64_t one = 1;
	int32_t rank = in_idx < body->n_inputs && body->values[body->inputs[in_idx]].rank == 1 ? 1 : 0;
	enum wh_status st = wh_tensor_alloc(t, dt, rank, &one);
	if (st != WH_OK)
		return st;
	if (dt == WH_DT_BOOL)
		*(uint8_t *)t->data = v != 0;
	else
		*(int64_t *)t->data = v;
	return WH_OK;
}

static enum wh_status loop_run(struct wh_kernel_ctx *ctx)
{
	enum wh_status st = WH_OK;
	const struct wh_graph *body = graph_attr(ctx, "body");
	if (!body)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute body is missing (fix the model)");
	if (ctx->n_inputs < 2)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "takes M and cond inputs (empty names when omitted), got %u inputs (fix the model)",
				      ctx->n_inputs);
	uint32_t N = ctx->n_inputs - 2;
	if (body->n_inputs != N + 2 || body->n_outputs < N + 1)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "body takes %u inputs and gives %u outputs, expected %u inputs and at least %u outputs (fix the model)",
				      body->n_inputs, body->n_outputs, N + 2, N + 1);
	uint32_t K = body->n_outputs - 1 - N;
	if (ctx->n_outputs > N + K)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "has %u outputs, the body gives %u (fix the model)",
				      ctx->n_outputs, N + K);
	const struct wh_tensor *M = wh_kin(ctx, 0), *C = wh_kin(ctx, 1);
	if ((M && !wh_value_is_tensor(M)) || (C && !wh_value_is_tensor(C)))
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "M and cond must be tensors, got a %s (fix the model)",
				      wh_value_kind_name(M && !wh_value_is_tensor(M) ? M : C));
	int64_t max_trip = INT64_MAX;
	if (M) {
		if (M->count != 1 || !wh_dtype_is_int(M->dtype))
			return wh_kernel_fail(ctx, WH_ERR_INVALID, "M must be one int64, got %s with %llu elements (fix the model)",
					      wh_dtype_name(M->dtype), (unsigned long long)M->count);
		max_trip = wh_tensor_get_i64(M, 0);
	}
	bool cond = true;
	if (C && (st = read_cond(ctx, C, "input cond", &cond)) != WH_OK)
		return st;

	struct wh_tensor *state = calloc((size_t)N + 1, sizeof *state);
	const struct wh_tensor **ins = calloc((size_t)N + 3, sizeof *ins);
	struct wh_tensor *outs = calloc((size_t)body->n_outputs + 1, sizeof *outs);
	struct tlist *scans = calloc((size_t)K + 1, sizeof *scans);
	struct wh_tensor it, ct;
	wh_tensor_init(&it);
	wh_tensor_init(&ct);
	if (!state || !ins || !outs || !scans) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	for (uint32_t j = 0; j < N; j++) {
		wh_tensor_init(&state[j]);
		if (ctx->inputs[2 + j])
			wh_tensor_ref(&state[j], ctx->inputs[2 + j]);
	}
	for (uint32_t j = 0; j < body->n_outputs; j++)
		wh_tensor_init(&outs[j]);
	for (int64_t i = 0; i < max_trip && cond; i++) {
		if ((st = loop_scalar(body, 0, WH_DT_INT64, i, &it)) != WH_OK ||
		    (st = loop_scalar(body, 1, WH_DT_BOOL, cond, &ct)) != WH_OK)
			goto out;
		ins[0] = &it;
		ins[1] = &ct;
		for (uint32_t j = 0; j < N; j++)
			ins[2 + j] = wh_value_present(&state[j]) ? &state[j] : NULL;
		if ((st = wh_kernel_run_subgraph(ctx, body, N + 2, ins, outs)) != WH_OK)
			goto out;
		if ((st = read_cond(ctx, &outs[0], "the body's cond output", &cond)) != WH_OK)
			goto out;
		for (uint32_t j = 0; j < N; j++) {
			wh_tensor_release(&state[j]);
			state[j] = outs[1 + j];
			wh_tensor_init(&outs[1 + j]);
		}
		for (uint32_t k = 0; k < K; k++)
			if ((st = tlist_push(ctx, &scans[k], &outs[1 + N + k])) != WH_OK)
				goto out;
		release_all(outs, body->n_outputs);
	}
	for (uint32_t j = 0; j < N && j < ctx->n_outputs; j++) {
		if (!ctx->output_wanted[j])
			continue;
		if (!wh_value_present(&state[j])) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "loop-carried value %u has no value (give its initial value)", j);
			goto out;
		}
		ctx->outputs[j] = state[j];
		wh_tensor_init(&state[j]);
	}
	for (uint32_t k = 0; k < K && N + k < ctx->n_outputs; k++) {
		if (!ctx->output_wanted[N + k])
			continue;
		struct fallback fb;
		char what[48];
		fallback_of(body, 1 + N + k, &fb);
		snprintf(what, sizeof what, "scan output %u", k);
		if ((st = stack_parts(ctx, scans[k].t, scans[k].n, 0, &fb, what, &ctx->outputs[N + k])) != WH_OK)
			goto out;
	}
out:
	wh_tensor_release(&it);
	wh_tensor_release(&ct);
	release_all(state, N);
	if (outs)
		release_all(outs, body->n_outputs);
	if (scans)
		for (uint32_t k = 0; k < K; k++)
			tlist_release(&scans[k]);
	free(state);
	free(ins);
	free(outs);
	free(scans);
	if (st != WH_OK)
		release_all(ctx->outputs, ctx->n_outputs);
	return st;
}

/* ---- Scan ---- */

/* An INTS attribute of exactly n entries (each in [lo, hi] when lo <= hi), or all dflt. */
static enum wh_status ints_attr(struct wh_kernel_ctx *ctx, const char *name, uint32_t n, int64_t dflt,
				int64_t *out)
{
	const int64_t *v;
	int64_t cnt = wh_node_attr_ints(ctx->node, name, &v);
	for (uint32_t i = 0; i < n; i++)
		out[i] = dflt;
	if (cnt < 0)
		return WH_OK;
	if (cnt != (int64_t)n)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute %s has %lld entries, expected %u (fix the model)", name,
				      (long long)cnt, n);
	for (uint32_t i = 0; i < n; i++)
		out[i] = v[i];
	return WH_OK;
}

struct scan_cfg {
	const struct wh_graph *body;
	uint32_t N, Mi, K; /* states, scan inputs, scan outputs */
	int64_t *in_axes, *in_dirs, *out_axes, *out_dirs;
};

/* Runs the body over len steps: states (N, updated in place), scan inputs sliced along
 * in_axes at the index each direction gives; parts[k*len + t] receive the outputs. */
static enum wh_status scan_steps(struct wh_kernel_ctx *ctx, const struct scan_cfg *c,
				 struct wh_tensor *state, const struct wh_tensor *const *xs, int64_t len,
				 struct wh_tensor *parts)
{
	enum wh_status st = WH_OK;
	uint32_t nin = c->N + c->Mi;
	const struct wh_tensor **ins = calloc((size_t)nin + 1, sizeof *ins);
	struct wh_tensor *slices = calloc((size_t)c->Mi + 1, sizeof *slices);
	struct wh_tensor *outs = calloc((size_t)c->body->n_outputs + 1, sizeof *outs);
	if (!ins || !slices || !outs) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	for (uint32_t j = 0; j < c->Mi; j++)
		wh_tensor_init(&slices[j]);
	for (uint32_t j = 0; j < c->body->n_outputs; j++)
		wh_tensor_init(&outs[j]);
	for (int64_t t = 0; t < len; t++) {
		for (uint32_t j = 0; j < c->N; j++)
			ins[j] = &state[j];
		for (uint32_t j = 0; j < c->Mi; j++) {
			int64_t idx = c->in_dirs[j] ? len - 1 - t : t;
			if ((st = slice_along(xs[j], (int32_t)c->in_axes[j], idx, &slices[j])) != WH_OK)
				goto out;
			ins[c->N + j] = &slices[j];
		}
		if ((st = wh_kernel_run_subgraph(ctx, c->body, nin, ins, outs)) != WH_OK)
			goto out;
		for (uint32_t j = 0; j < c->N; j++) {
			wh_tensor_release(&state[j]);
			state[j] = outs[j];
			wh_tensor_init(&outs[j]);
		}
		for (uint32_t k = 0; k < c->K; k++) {
			struct wh_tensor *dst = &parts[(size_t)k * (size_t)len + (size_t)t];
			*dst = outs[c->N + k];
			wh_tensor_init(&outs[c->N + k]);
		}
		release_all(slices, c->Mi);
	}
out:
	if (slices)
		release_all(slices, c->Mi);
	if (outs)
		release_all(outs, c->body->n_outputs);
	free(ins);
	free(slices);
	free(outs);
	return st;
}

static enum wh_status scan_setup(struct wh_kernel_ctx *ctx, uint32_t n_data_inputs, struct scan_cfg *c)
{
	c->body = graph_attr(ctx, "body");
	if (!c->body)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "attribute body is missing (fix the model)");
	int64_t m = wh_node_attr_int(ctx->node, "num_scan_inputs", -1);
	if (m < 1 || m > (int64_t)n_data_inputs)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "num_scan_inputs is %lld, expected 1..%u (fix the model)",
				      (long long)m, n_data_inputs);
	c->Mi = (uint32_t)m;
	c->N = n_data_inputs - c->Mi;
	if (c->body->n_inputs != c->N + c->Mi || c->body->n_outputs < c->N)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "body takes %u inputs and gives %u outputs, expected %u inputs and at least %u outputs (fix the model)",
				      c->body->n_inputs, c->body->n_outputs, c->N + c->Mi, c->N);
	c->K = c->body->n_outputs - c->N;
	if (ctx->n_outputs > c->N + c->K)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "has %u outputs, the body gives %u (fix the model)",
				      ctx->n_outputs, c->N + c->K);
	size_t n = (size_t)c->Mi * 2 + (size_t)c->K * 2 + 1;
	int64_t *buf = calloc(n, sizeof *buf);
	if (!buf)
		return wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
	c->in_axes = buf;
	c->in_dirs = buf + c->Mi;
	c->out_axes = buf + 2 * (size_t)c->Mi;
	c->out_dirs = c->out_axes + c->K;
	return WH_OK;
}

/* Scan-9 and later: no batch axis, scan axes and directions per input and output. */
static enum wh_status scan9_run(struct wh_kernel_ctx *ctx)
{
	struct scan_cfg c = {0};
	enum wh_status st = scan_setup(ctx, ctx->n_inputs, &c);
	struct wh_tensor *state = NULL, *parts = NULL;
	size_t n_parts = 0;
	if (st != WH_OK)
		return st;
	if ((st = ints_attr(ctx, "scan_input_axes", c.Mi, 0, c.in_axes)) ||
	    (st = ints_attr(ctx, "scan_input_directions", c.Mi, 0, c.in_dirs)) ||
	    (st = ints_attr(ctx, "scan_output_axes", c.K, 0, c.out_axes)) ||
	    (st = ints_attr(ctx, "scan_output_directions", c.K, 0, c.out_dirs)))
		goto out;
	const struct wh_tensor *const *xs = ctx->inputs + c.N;
	int64_t len = -1;
	for (uint32_t j = 0; j < c.Mi; j++) {
		const struct wh_tensor *x = xs[j];
		int32_t ax;
		if (!x) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "scan input %u is missing (fix the model)", j);
			goto out;
		}
		if (!wh_norm_axis(c.in_axes[j], x->rank, &ax)) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "scan_input_axes[%u] is %lld, out of range for rank %d (fix the model)",
					    j, (long long)c.in_axes[j], x->rank);
			goto out;
		}
		c.in_axes[j] = ax;
		if (len >= 0 && x->dims[ax] != len) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "scan input %u has %lld steps along axis %d, scan input 0 has %lld (give inputs of one sequence length)",
					    j, (long long)x->dims[ax], ax, (long long)len);
			goto out;
		}
		len = x->dims[ax];
	}
	for (uint32_t j = 0; j < c.N; j++)
		if (!ctx->inputs[j]) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "initial state %u is missing (fix the model)", j);
			goto out;
		}
	state = calloc((size_t)c.N + 1, sizeof *state);
	uint64_t np;
	if (!wh_mul_u64((uint64_t)c.K, (uint64_t)len, &np) || np > WH_MAX_ELEMENTS) {
		st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "too many scan steps (use smaller inputs)");
		goto out;
	}
	n_parts = (size_t)np;
	parts = calloc(n_parts + 1, sizeof *parts);
	if (!state || !parts) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	for (size_t i = 0; i < n_parts; i++)
		wh_tensor_init(&parts[i]);
	for (uint32_t j = 0; j < c.N; j++) {
		wh_tensor_init(&state[j]);
		wh_tensor_ref(&state[j], ctx->inputs[j]);
	}
	if ((st = scan_steps(ctx, &c, state, xs, len, parts)) != WH_OK)
		goto out;
	for (uint32_t j = 0; j < c.N && j < ctx->n_outputs; j++)
		if (ctx->output_wanted[j]) {
			ctx->outputs[j] = state[j];
			wh_tensor_init(&state[j]);
		}
	for (uint32_t k = 0; k < c.K && c.N + k < ctx->n_outputs; k++) {
		if (!ctx->output_wanted[c.N + k])
			continue;
		struct wh_tensor *pk = parts + (size_t)k * (size_t)len;
		if (c.out_dirs[k])
			for (int64_t a = 0, b = len - 1; a < b; a++, b--) {
				struct wh_tensor tmp = pk[a];
				pk[a] = pk[b];
				pk[b] = tmp;
			}
		struct fallback fb;
		char what[48];
		fallback_of(c.body, c.N + k, &fb);
		snprintf(what, sizeof what, "scan output %u", k);
		if ((st = stack_parts(ctx, pk, (uint64_t)len, c.out_axes[k], &fb, what, &ctx->outputs[c.N + k])) != WH_OK)
			goto out;
	}
out:
	if (state)
		release_all(state, c.N);
	if (parts)
		release_all(parts, n_parts);
	free(state);
	free(parts);
	free(c.in_axes);
	if (st != WH_OK)
		release_all(ctx->outputs, ctx->n_outputs);
	return st;
}

/* Scan-8: input 0 is the optional sequence_lens; every state and scan input has a leading
 * batch axis, scan inputs [batch, sequence, ...]. Each batch entry runs on its own; scan
 * outputs shorter than the longest sequence are padded with zeros. */
static enum wh_status scan8_run(struct wh_kernel_ctx *ctx)
{
	struct scan_cfg c = {0};
	enum wh_status st;
	if (ctx->n_inputs < 2)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "needs at least one scan input (fix the model)");
	if ((st = scan_setup(ctx, ctx->n_inputs - 1, &c)) != WH_OK)
		return st;
	struct wh_tensor *state = NULL, *parts = NULL, *bstate = NULL, *bscan = NULL;
	struct wh_tensor *xsl = NULL;
	const struct wh_tensor **xp = NULL;
	size_t n_parts = 0, n_bstate = 0, n_bscan = 0;
	int64_t B = -1, L = -1;
	const struct wh_tensor *SL = wh_kin(ctx, 0);
	const struct wh_tensor *const *sts = ctx->inputs + 1, *const *xs = ctx->inputs + 1 + c.N;
	if ((st = ints_attr(ctx, "directions", c.Mi, 0, c.in_dirs)) != WH_OK)
		goto out;
	for (uint32_t j = 0; j < c.N + c.Mi; j++) {
		const struct wh_tensor *t = sts[j];
		bool is_scan = j >= c.N;
		if (!t || t->rank < (is_scan ? 2 : 1)) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "%s %u needs a batch axis%s (fix the model)",
					    is_scan ? "scan input" : "initial state", is_scan ? j - c.N : j,
					    is_scan ? " and a sequence axis" : "");
			goto out;
		}
		if (B >= 0 && t->dims[0] != B) {
			st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "batch sizes differ: %lld and %lld (give inputs of one batch size)",
					    (long long)B, (long long)t->dims[0]);
			goto out;
		}
		B = t->dims[0];
		if (is_scan) {
			if (L >= 0 && t->dims[1] != L) {
				st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "sequence lengths differ: %lld and %lld (give inputs of one sequence length)",
						    (long long)L, (long long)t->dims[1]);
				goto out;
			}
			L = t->dims[1];
		}
	}
	if (SL && (SL->count != (uint64_t)B || !wh_dtype_is_int(SL->dtype))) {
		st = wh_kernel_fail(ctx, WH_ERR_SHAPE, "sequence_lens must hold %lld integers, got %llu %s (fix the model)",
				    (long long)B, (unsigned long long)SL->count, wh_dtype_name(SL->dtype));
		goto out;
	}
	for (uint32_t j = 0; j < c.Mi; j++)
		c.in_axes[j] = 0; /* axis 0 of the per-batch slice, i.e. the sequence axis */
	uint64_t np, nb, ns;
	if (!wh_mul_u64((uint64_t)c.K, (uint64_t)L, &np) || !wh_mul_u64((uint64_t)c.N, (uint64_t)B, &nb) ||
	    !wh_mul_u64((uint64_t)c.K, (uint64_t)B, &ns) || np > WH_MAX_ELEMENTS || nb > WH_MAX_ELEMENTS ||
	    ns > WH_MAX_ELEMENTS) {
		st = wh_kernel_fail(ctx, WH_ERR_OVERFLOW, "too many scan steps (use smaller inputs)");
		goto out;
	}
	n_parts = (size_t)np;
	n_bstate = (size_t)nb;
	n_bscan = (size_t)ns;
	state = calloc((size_t)c.N + 1, sizeof *state);
	parts = calloc(n_parts + 1, sizeof *parts);
	bstate = calloc(n_bstate + 1, sizeof *bstate);
	bscan = calloc(n_bscan + 1, sizeof *bscan);
	xsl = calloc((size_t)c.Mi + 1, sizeof *xsl);
	xp = calloc((size_t)c.Mi + 1, sizeof *xp);
	if (!state || !parts || !bstate || !bscan || !xsl || !xp) {
		st = wh_kernel_fail(ctx, WH_ERR_NOMEM, "out of memory (free some memory)");
		goto out;
	}
	for (int64_t b = 0; b < B; b++) {
		int64_t len = SL ? wh_tensor_get_i64(SL, (uint64_t)b) : L;
		if (len < 0 || len > L) {
			st = wh_kernel_fail(ctx, WH_ERR_INVALID, "sequence_lens[%lld] is %lld, outside [0, %lld] (fix the input)",
					    (long long)b, (long long)len, (long long)L);
			goto out;
		}
		for (uint32_t j = 0; j < c.N; j++)
			if ((st = slice_along(sts[j], 0, b, &state[j])) != WH_OK)
				goto out;
		for (uint32_t j = 0; j < c.Mi; j++) {
			if ((st = slice_along(xs[j], 0, b, &xsl[j])) != WH_OK)
				goto out;
			xp[j] = &xsl[j];
		}
		/* parts laid out [k][t] with stride len for scan_steps, then re-spread to stride L */
		if ((st = scan_steps(ctx, &c, state, xp, len, parts)) != WH_OK)
			goto out;
		for (uint32_t k = c.K; k-- > 0;)
			for (int64_t t = len; t-- > 0;) {
				struct wh_tensor tmp = parts[(size_t)k * (size_t)len + (size_t)t];
				wh_tensor_init(&parts[(size_t)k * (size_t)len + (size_t)t]);
				parts[(size_t)k * (size_t)L + (size_t)t] = tmp;
			}
		for (uint32_t j = 0; j < c.N; j++) {
			bstate[(size_t)j * (size_t)B + (size_t)b] = state[j];
			wh_tensor_init(&state[j]);
		}
		for (uint32_t k = 0; k < c.K; k++) {
			struct fallback fb;
			fallback_of(c.body, c.N + k, &fb);
			st = stack_parts(ctx, parts + (size_t)k * (size_t)L, (uint64_t)L, 0, &fb, "scan output",
					 &bscan[(size_t)k * (size_t)B + (size_t)b]);
			release_all(parts + (size_t)k * (size_t)L, (size_t)L);
			if (st != WH_OK)
				goto out;
		}
		release_all(xsl, c.Mi);
	}
	for (uint32_t j = 0; j < c.N + c.K && j < ctx->n_outputs; j++) {
		if (!ctx->output_wanted[j])
			continue;
		struct wh_tensor *src = j < c.N ? bstate + (size_t)j * (size_t)B : bscan + (size_t)(j - c.N) * (size_t)B;
		struct fallback fb;
		fallback_of(c.body, j, &fb);
		if (j >= c.N && fb.rank >= 0 && fb.rank < WH_MAX_RANK - 1) {
			/* a batch of nothing still has the sequence axis */
			memmove(fb.dims + 1, fb.dims, (size_t)fb.rank * sizeof fb.dims[0]);
			fb.dims[0] = L;
			fb.rank++;
		}
		if ((st = stack_parts(ctx, src, (uint64_t)B, 0, &fb, j < c.N ? "final state" : "scan output", &ctx->outputs[j])) != WH_OK)
			goto out;
	}
out:
	if (state)
		release_all(state, c.N);
	if (parts)
		release_all(parts, n_parts);
	if (bstate)
		release_all(bstate, n_bstate);
	if (bscan)
		release_all(bscan, n_bscan);
	if (xsl)
		release_all(xsl, c.Mi);
	free(state);
	free(parts);
	free(bstate);
	free(bscan);
	free(xsl);
	free(xp);
	free(c.in_axes);
	if (st != WH_OK)
		release_all(ctx->outputs, ctx->n_outputs);
	return st;
}

const struct wh_op_def wh_ops_control[] = {
	{"", "If", 1, if_run, NULL, 0, true},
	{"", "Loop", 1, loop_run, NULL, 0, true},
	{"", "Scan", 8, scan8_run},
	{"", "Scan", 9, scan9_run},
};
const size_t wh_ops_control_count = sizeof wh_ops_control / sizeof wh_ops_control[0];
