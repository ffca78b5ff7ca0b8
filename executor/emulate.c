#include "executor/emulate.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor/numfmt-bulk.h"
#include "executor/numfmt-quant.h"
#include "executor/numfmt.h"
#include "graph/blob.h"

enum wh_status wh_emul_cache_init(struct wh_emul_cache *c, uint32_t n_values, size_t budget)
{
	c->n = n_values;
	c->budget = budget;
	c->bytes = 0;
	c->clock = 0;
	c->calib = NULL;
	c->e = calloc((size_t)n_values + 1, sizeof *c->e);
	c->range = calloc((size_t)n_values + 1, sizeof *c->range);
	c->calib_idx = malloc(((size_t)n_values + 1) * sizeof *c->calib_idx);
	if (!c->e || !c->range || !c->calib_idx) {
		free(c->e);
		free(c->range);
		free(c->calib_idx);
		c->e = NULL;
		c->range = NULL;
		c->calib_idx = NULL;
		return wh_error(WH_ERR_NOMEM, "engine: out of memory");
	}
	return WH_OK;
}

static void entry_drop(struct wh_emul_cache *c, struct wh_emul_entry *ce)
{
	wh_tensor_release(&ce->t);
	free(ce->scales);
	ce->scales = NULL;
	ce->n_scales = 0;
	c->bytes -= ce->bytes;
	ce->bytes = 0;
	ce->valid = false;
}

void wh_emul_cache_release(struct wh_emul_cache *c)
{
	if (!c || !c->e)
		return;
	for (uint32_t i = 0; i < c->n; i++)
		entry_drop(c, &c->e[i]);
	free(c->e);
	free(c->range);
	free(c->calib_idx);
	c->e = NULL;
	c->range = NULL;
	c->calib_idx = NULL;
}

void wh_emul_cache_forget_outputs(struct wh_emul_cache *c, const struct wh_node *node)
{
	for (uint32_t k = 0; c && c->range && k < node->n_outputs; k++)
		if (node->outputs[k] != WH_NONE && node->outputs[k] < c->n)
			c->range[node->outputs[k]].data = NULL;
}

/* The range a producer recorded for value vid when it wrote t (see struct wh_emul_range), or
 * -1. */
static float range_get(const struct wh_emul_cache *c, uint32_t vid, const struct wh_tensor *t)
{
	if (!c || !c->range || vid >= c->n)
		return -1;
	const struct wh_emul_range *r = &c->range[vid];
	return r->data && r->data == t->data && r->count == t->count ? r->amax : -1;
}

static void range_put(struct wh_emul_cache *c, uint32_t vid, const struct wh_tensor *t, float amax)
{
	if (!c || !c->range || vid >= c->n)
		return;
	c->range[vid] = (struct wh_emul_range){.data = t->data, .count = t->count, .amax = amax};
}

/* The cached copy of value vid at precision p, or NULL; marks it used. */
static struct wh_emul_entry *cache_get(struct wh_emul_cache *c, uint32_t vid, enum wh_precision p, uint8_t kind)
{
	struct wh_emul_entry *ce = &c->e[vid];
	if (!ce->valid || ce->prec != (uint8_t)p || ce->kind != kind)
		return NULL;
	ce->last_use = ++c->clock;
	return ce;
}

/* Drops value vid's copy and, if need bytes fit the budget at all, the least recently used
 * copies until they fit: called before the new copy is allocated, so that the old ones are
 * gone before it exists (the peak is the budget, not the budget plus the largest weight). */
static void cache_make_room(struct wh_emul_cache *c, uint32_t vid, size_t need)
{
	entry_drop(c, &c->e[vid]);
	if (need > c->budget)
		return;
	bool dropped = false;
	while (c->bytes + need > c->budget) {
		struct wh_emul_entry *lru = NULL;
		for (uint32_t i = 0; i < c->n; i++)
			if (c->e[i].valid && (!lru || c->e[i].last_use < lru->last_use))
				lru = &c->e[i];
		if (!lru)
			break;
		entry_drop(c, lru);
		dropped = true;
	}
#ifdef __GLIBC__
	/* copies below glibc's mmap threshold (32 MiB at most) live in the heap, where a freed
	 * one stays resident unless trimmed: without this, the process keeps up to half of
	 * the budget more than the cache holds (measured on a 3 GB decoder: 240 MB at 512 MiB) */
	if (dropped)
		malloc_trim(0);
#else
	(void)dropped;
#endif
}

/* Keeps a reference to t (and a copy of the scales) as value vid's copy at precision p,
 * within the budget (cache_make_room). A copy larger than the whole budget is not kept (its
 * layer frees it). Callers hold their own reference to what they use, so dropping an entry
 * never frees a tensor a running layer reads. Keeping is best effort: without memory for
 * the scales, nothing is kept. */
static void cache_put(struct wh_emul_cache *c, uint32_t vid, enum wh_precision p, uint8_t kind, const struct wh_tensor *t,
		      const float *scales, uint32_t n_scales, int axis)
{
	struct wh_emul_entry *ce = &c->e[vid];
	size_t need = wh_tensor_nbytes(t) + (size_t)n_scales * sizeof(float);
	cache_make_room(c, vid, need);
	if (need > c->budget)
		return;
	if (n_scales) {
		if (!(ce->scales = malloc(n_scales * sizeof *ce->scales)))
			return;
		memcpy(ce->scales, scales, n_scales * sizeof *ce->scales);
	}
	wh_tensor_ref(&ce->t, t);
	ce->n_scales = n_scales;
	ce->axis = (int8_t)axis;
	ce->prec = (uint8_t)p;
	ce->kind = kind;
	ce->bytes = need;
	ce->last_use = ++c->clock;
	ce->valid = true;
	c->bytes += need;
}

static bool is_gemm_like(const char *op)
{
	return !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "MatMul") || !strcmp(op, "Gemm");
}

/* Inputs that parameterise an op rather than carry its data; every other float input of a
 * reduced-precision layer is converted to the layer's format (TensorRT's reformat). Shape,
 * index and integer inputs are not floats and never converted. Coordinates, scales and ranges
 * are shape computations, which engines do in FP32 at any precision: never rounded
 * (rounding Resize's scales would change where it samples). Bounds and exponents are
 * computed with in the layer's float format, but are not tensors to quantize: an int8/fp8
 * layer keeps them as they are. */
bool wh_emulate_parameter_input(const char *op, uint32_t k, enum wh_precision p)
{
	/* Q/DQ scales (and float zero points) are FP32 in TensorRT whatever the layer's
	 * precision; a threshold or a ratio is a parameter, not data */
	if (!strcmp(op, "QuantizeLinear") || !strcmp(op, "DequantizeLinear"))
		return k >= 1;
	if (!strcmp(op, "NonMaxSuppression"))
		return k >= 3; /* iou_threshold, score_threshold */
	if (!strcmp(op, "Dropout"))
		return k == 1; /* ratio */
	if (!strcmp(op, "Resize"))
		return k >= 1; /* roi, scales, sizes */
	if (!strcmp(op, "Upsample"))
		return k == 1; /* scales */
	if (!strcmp(op, "Range"))
		return true;
	bool grid = p == WH_PREC_INT8 || p == WH_PREC_FP8 || p == WH_PREC_FP8E5M2;
	if (!strcmp(op, "Clip"))
		return grid && k >= 1; /* min, max */
	if (!strcmp(op, "Pow"))
		return grid && k == 1; /* exponent */
	return false;
}

/* Ops whose output elements are copies of input elements (selected, moved, repeated). At
 * fp16/bf16, rounding such an op's outputs gives the same bits as rounding its inputs
 * (rounding is a function of each element alone), so a constant input (an embedding table
 * that a Gather reads 32 rows of) is left as it is and the outputs are rounded instead: the
 * weight is neither copied nor read in full. */
static bool moves_values(const char *op)
{
	static const char *const ops[] = {"Gather", "Reshape", "Transpose", "Concat", "Slice", "Split", "Squeeze",
					  "Unsqueeze", "Flatten", "Identity", "Expand", "Tile", NULL};
	for (int i = 0; ops[i]; i++)
		if (!strcmp(op, ops[i]))
			return true;
	return false;
}

/* The bias / addend input of a gemm-like op, or -1. */
static int bias_input(const char *op)
{
	if (!strcmp(op, "Conv") || !strcmp(op, "ConvTranspose") || !strcmp(op, "Gemm"))
		return 2;
	return -1;
}

static float qmax_of(enum wh_precision p)
{
	switch (p) {
	case WH_PREC_INT8: return 127.0f;
	case WH_PREC_FP8: return 448.0f;
	case WH_PREC_FP8E5M2: return 57344.0f;
	default: return 1.0f;
	}
}

/* Quantizes x/scale onto the format's grid and returns the grid value (an integer for int8,
 * an fp8 value for fp8); saturating. */
static inline float quant(float x, float inv_scale, enum wh_precision p)
{
	float y = x * inv_scale;
	switch (p) {
	case WH_PREC_INT8:
		return wh_quant_int8(x, inv_scale);
	case WH_PREC_FP8: return wh_e4m3fn_to_f32(wh_f32_to_e4m3fn(y, true));
	case WH_PREC_FP8E5M2: return wh_e5m2_to_f32(wh_f32_to_e5m2(y, true));
	default: return y;
	}
}

struct round_job {
	const float *src;
	float *dst;
	enum wh_precision p;
	const struct wh_cpu_features *cpu;
};

static void round_range(const float *src, float *dst, uint64_t n, enum wh_precision p, const struct wh_cpu_features *cpu);

static void round_task(void *arg, size_t b, size_t e)
{
	const struct round_job *j = arg;
	round_range(j->src + b, j->dst + b, e - b, j->p, j->cpu);
}

/* Elementwise, so chunks change nothing in the result; big tensors are rounded in
 * parallel. */
static void round_to_pool(const float *src, float *dst, uint64_t n, enum wh_precision p, const struct wh_cpu_features *cpu,
			  struct wh_threadpool *pool)
{
	struct round_job j = {src, dst, p, cpu};
	if (n < 65536 || !pool)
		round_range(src, dst, n, p, cpu);
	else
		wh_parallel_for(pool, (size_t)n, 32768, round_task, &j);
}

static void round_range(const float *src, float *dst, uint64_t n, enum wh_precision p, const struct wh_cpu_features *cpu)
{
	switch (p) {
	case WH_PREC_FP16: wh_round_f16_n(src, dst, n, cpu); break;
	case WH_PREC_BF16: wh_round_bf16_n(src, dst, n, cpu); break;
	case WH_PREC_TF32:
		for (uint64_t i = 0; i < n; i++)
			dst[i] = wh_round_tf32(src[i]);
		break;
	default:
		if (dst != src)
			memcpy(dst, src, n * sizeof *dst);
		break;
	}
}

/* The int8/fp8 passes over a tensor (measure its range; fake-quantize it; write its grid
 * values) run over chunks of a fixed size on the pool. They are elementwise, and the range
 * is a maximum, which does not depend on the order: results never depend on the threads. */
#define EMUL_CHUNK ((size_t)16384)

enum pass_op {
	PASS_AMAX, /* the range of src */
	PASS_FQ,   /* dst = src fake-quantized; the range of dst */
	PASS_GRID  /* dst = the grid values of src / scale */
};

struct pass_job {
	enum pass_op op;
	const float *src;
	float *dst;
	uint64_t n;
	float scale, inv;
	enum wh_precision p;
	const struct wh_cpu_features *cpu;
	float *part; /* per chunk: its range */
};

static float pass_range(const struct pass_job *j, uint64_t b, uint64_t e)
{
	const float *src = j->src + b;
	float *dst = j->dst ? j->dst + b : NULL;
	size_t n = (size_t)(e - b);
	switch (j->op) {
	case PASS_AMAX: return wh_amax_n(src, n, j->cpu);
	case PASS_GRID:
		if (j->p == WH_PREC_INT8)
			wh_quant_int8_n(src, dst, n, j->inv, j->cpu);
		else
			for (size_t i = 0; i < n; i++)
				dst[i] = quant(src[i], j->inv, j->p);
		return 0;
	case PASS_FQ:
		if (j->p == WH_PREC_INT8)
			return wh_fake_quant_int8_n(src, dst, n, j->inv, j->scale, j->cpu);
		if (j->p == WH_PREC_FP8 || j->p == WH_PREC_FP8E5M2)
			return wh_fake_quant_fp8_n(src, dst, n, j->inv, j->scale, j->p == WH_PREC_FP8E5M2, j->cpu);
		for (size_t i = 0; i < n; i++)
			dst[i] = quant(src[i], j->inv, j->p) * j->scale;
		return wh_amax_n(dst, n, j->cpu); /* while the chunk is in cache */
	}
	return 0;
}

static void pass_task(void *arg, size_t b, size_t e)
{
	const struct pass_job *j = arg;
	for (size_t c = b; c < e; c++) {
		uint64_t lo = (uint64_t)c * EMUL_CHUNK, hi = lo + EMUL_CHUNK < j->n ? lo + EMUL_CHUNK : j->n;
		j->part[c] = pass_range(j, lo, hi);
	}
}

/* Runs the pass; returns its range (0 for PASS_GRID). */
/* Runs task over `chunks` chunks on the pool, each chunk writing its maximum to (*part)[c]
 * (part points into the job), and stores the largest (at least 0) in *out. Returns false,
 * having run nothing, for fewer than 2 chunks, no pool or no memory for the maxima: the caller
 * then runs the whole range on its own thread, which gives the same result. */
static bool parallel_max(struct wh_threadpool *pool, size_t chunks, wh_range_fn task, void *job, float **part,
			 float *out)
{
	float fixed[256], *p = chunks <= 256 ? fixed : malloc(chunks * sizeof *p);
	if (chunks < 2 || !pool || !p) {
		if (p != fixed)
			free(p);
		return false;
	}
	*part = p;
	wh_parallel_for(pool, chunks, 1, task, job);
	float r = 0;
	for (size_t c = 0; c < chunks; c++)
		r = p[c] > r ? p[c] : r;
	if (p != fixed)
		free(p);
	*part = NULL;
	*out = r;
	return true;
}

static float pass_run(struct pass_job *j, struct wh_threadpool *pool)
{
	size_t chunks = (size_t)((j->n + EMUL_CHUNK - 1) / EMUL_CHUNK);
	float r;
	return parallel_max(pool, chunks, pass_task, j, &j->part, &r) ? r : pass_range(j, 0, j->n);
}

/* dst = src fake-quantized with scale (a copy when scale <= 0, which holds only zeros and
 * non-finite values); returns the range of dst. */
static float fake_quant(const float *src, float *dst, uint64_t n, float scale, enum wh_precision p,
			const struct wh_cpu_features *cpu, struct wh_threadpool *pool)
{
	if (scale <= 0) {
		if (dst != src)
			memcpy(dst, src, n * sizeof *dst);
		struct pass_job j = {.op = PASS_AMAX, .src = dst, .n = n, .cpu = cpu};
		return pass_run(&j, pool);
	}
	struct pass_job j = {.op = PASS_FQ, .src = src, .dst = dst, .n = n, .scale = scale, .inv = 1.0f / scale, .p = p, .cpu = cpu};
	return pass_run(&j, pool);
}

/* dst = the grid values of src/scale (the integers of int8); scale > 0. */
static void quant_grid(const float *src, float *dst, uint64_t n, float scale, enum wh_precision p,
		       const struct wh_cpu_features *cpu, struct wh_threadpool *pool)
{
	struct pass_job j = {.op = PASS_GRID, .src = src, .dst = dst, .n = n, .scale = scale, .inv = 1.0f / scale, .p = p, .cpu = cpu};
	pass_run(&j, pool);
}

/* The calibration's amax of value vid (named name), or -1; by name once per table. */
static float calib_amax(const struct wh_emul_node *en, uint32_t vid, const char *name)
{
	const struct wh_calib *cal = en->calib;
	struct wh_emul_cache *c = en->cache;
	if (!cal)
		return -1;
	if (!c || !c->calib_idx || vid >= c->n)
		return wh_calib_get(cal, name);
	if (c->calib != cal || c->calib_n != cal->n || c->calib_names != (const void *)cal->names) {
		for (uint32_t i = 0; i < c->n; i++)
			c->calib_idx[i] = -2;
		c->calib = cal;
		c->calib_n = cal->n;
		c->calib_names = cal->names;
	}
	if (c->calib_idx[vid] == -2) {
		c->calib_idx[vid] = -1;
		for (uint32_t i = 0; i < cal->n; i++)
			if (!strcmp(cal->names[i], name)) {
				c->calib_idx[vid] = (int32_t)i;
				break;
			}
	}
	return c->calib_idx[vid] >= 0 ? cal->amax[c->calib_idx[vid]] : -1;
}

/* The per-tensor scale of t (value vid): from the calibration, else from the range known
 * (known >= 0: recorded by its producer or measured while it was written), else measured. */
static float act_scale(const struct wh_emul_node *en, uint32_t vid, const char *name, const struct wh_tensor *t,
		       enum wh_precision p, float known, const struct wh_cpu_features *cpu, struct wh_threadpool *pool)
{
	float amax = calib_amax(en, vid, name);
	if (amax < 0)
		amax = known;
	if (amax < 0) {
		struct pass_job j = {.op = PASS_AMAX, .src = t->data, .n = t->count, .cpu = cpu};
		amax = pass_run(&j, pool);
	}
	return amax > 0 ? amax / qmax_of(p) : 0;
}

/* Integer (int8) or grid (fp8) values of a weight with per-channel scales on axis. */
static enum wh_status quant_weight(const struct wh_tensor *w, int axis, enum wh_precision p, struct wh_tensor *q,
				   float **scales_out, uint32_t *n_out)
{
	uint32_t channels = axis >= 0 ? (uint32_t)w->dims[axis] : 1;
	uint64_t inner = 1;
	for (int32_t d = axis + 1; axis >= 0 && d < w->rank; d++)
		inner *= (uint64_t)w->dims[d];
	float *scales = calloc(channels ? channels : 1, sizeof *scales);
	if (!scales)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory");
	enum wh_status st = wh_tensor_alloc(q, WH_DT_FLOAT, w->rank, w->dims);
	if (st != WH_OK) {
		free(scales);
		return st;
	}
	const float *src = w->data;
	float *dst = q->data;
	/* element i belongs to channel (i / inner) % channels */
	float *amax = calloc(channels ? channels : 1, sizeof *amax);
	if (!amax) {
		free(scales);
		wh_tensor_release(q);
		return wh_error(WH_ERR_NOMEM, "engine: out of memory");
	}
	for (uint64_t i = 0; i < w->count; i++) {
		uint32_t c = axis >= 0 ? (uint32_t)((i / inner) % channels) : 0;
		float a = fabsf(src[i]);
		if (a > amax[c] && !isinf(a))
			amax[c] = a;
	}
	for (uint32_t c = 0; c < channels; c++)
		scales[c] = amax[c] > 0 ? amax[c] / qmax_of(p) : 0;
	for (uint64_t i = 0; i < w->count; i++) {
		uint32_t c = axis >= 0 ? (uint32_t)((i / inner) % channels) : 0;
		dst[i] = scales[c] > 0 ? quant(src[i], 1.0f / scales[c], p) : 0;
	}
	free(amax);
	*scales_out = scales;
	*n_out = channels;
	return WH_OK;
}

/* Output-channel axis of a gemm-like weight. */
static int weight_axis(const struct wh_kernel_ctx *ctx, const struct wh_tensor *w)
{
	const char *op = ctx->node->op_type;
	if (!strcmp(op, "Conv"))
		return 0;
	if (!strcmp(op, "ConvTranspose"))
		return w->rank > 1 ? 1 : -1; /* [C, M/group, ...]: exact per-channel only for group 1 */
	if (!strcmp(op, "Gemm"))
		return wh_node_attr_int(ctx->node, "transB", 0) ? 0 : 1;
	/* MatMul: columns of a 2-D weight */
	return w->rank == 2 ? 1 : -1;
}

static bool value_is_const(const struct wh_kernel_ctx *ctx, uint32_t k)
{
	uint32_t v = ctx->node->inputs[k];
	if (v == WH_NONE)
		return false;
	const struct wh_value *val = &ctx->graph->values[v];
	return (val->flags & WH_VALUE_INITIALIZER) ||
	       (val->producer != WH_NONE && !strcmp(ctx->graph->nodes[val->producer].op_type, "Constant"));
}

/* int8 GEMM-like output: y = acc * s_x * s_w[c] (+ bias[c]). Conv: rows of `inner`
 * elements, row r belonging to channel r % C, and the bias added (0 without one), so that y
 * is final and its range is measured in the same pass. MatMul/Gemm: rows of the C channels
 * (the last axis), scaled only (C is added later). The chunks are groups of `grain` rows. */
struct rescale_job {
	float *y;
	uint64_t rows, C, inner;
	size_t grain;
	float in_scale;
	const float *w_scales, *bias;
	bool per_channel;
	bool add; /* Conv */
	const struct wh_cpu_features *cpu;
	float *part; /* per chunk: the range of its rows (Conv) */
};

static float rescale_rows(const struct rescale_job *j, uint64_t b, uint64_t e)
{
	float m = 0;
	for (uint64_t r = b; r < e; r++) {
		float *row = j->y + r * j->inner;
		if (j->add) {
			uint64_t c = r % j->C;
			float sc = j->in_scale * (j->w_scales ? j->w_scales[j->per_channel ? c : 0] : 0);
			float mr = wh_scale_add_n(row, (size_t)j->inner, sc, j->bias ? j->bias[c] : 0.0f, j->cpu);
			m = mr > m ? mr : m;
		} else if (j->w_scales && j->per_channel) {
			/* the factor of each channel as the Conv's: in_scale * w_scale, then the product */
			for (uint64_t k = 0; k < j->inner; k++)
				row[k] *= j->in_scale * j->w_scales[k];
		} else {
			float sc = j->in_scale * (j->w_scales ? j->w_scales[0] : 0);
			for (uint64_t k = 0; k < j->inner; k++)
				row[k] *= sc;
		}
	}
	return m;
}

static void rescale_task(void *arg, size_t b, size_t e)
{
	const struct rescale_job *j = arg;
	for (size_t c = b; c < e; c++) {
		uint64_t lo = (uint64_t)c * j->grain, hi = lo + j->grain < j->rows ? lo + j->grain : j->rows;
		j->part[c] = rescale_rows(j, lo, hi);
	}
}

/* Runs the rescale; returns the range of y (Conv) or 0. */
static float rescale_run(struct rescale_job *j, struct wh_threadpool *pool)
{
	j->grain = j->inner ? EMUL_CHUNK / (size_t)j->inner + 1 : (size_t)j->rows + 1;
	size_t chunks = (size_t)((j->rows + j->grain - 1) / j->grain);
	float r;
	return parallel_max(pool, chunks, rescale_task, j, &j->part, &r) ? r : rescale_rows(j, 0, j->rows);
}

/* Adds beta * C (unidirectionally broadcast) to y [M, N]. */
static void add_gemm_c(struct wh_tensor *y, const struct wh_tensor *c, float beta)
{
	int64_t strides[WH_MAX_RANK];
	wh_broadcast_strides(c, y->rank, y->dims, strides);
	int64_t M = y->rank >= 2 ? y->dims[0] : 1, N = y->dims[y->rank - 1];
	float *py = y->data;
	const float *pc = c->data;
	for (int64_t i = 0; i < M; i++)
		for (int64_t j = 0; j < N; j++)
			py[i * N + j] += beta * pc[(y->rank >= 2 ? i * strides[0] : 0) + j * strides[y->rank - 1]];
}

enum wh_status wh_emulate_node(struct wh_kernel_ctx *ctx, wh_kernel_fn run, const struct wh_emul_node *en)
{
	const struct wh_node *node = ctx->node;
	enum wh_precision p = en->exec;
	bool gemm = is_gemm_like(node->op_type);
	bool integer_gemm = gemm && p == WH_PREC_INT8;
	int bias = bias_input(node->op_type);
	uint32_t n = ctx->n_inputs;
	const struct wh_tensor *orig_fixed[16], **orig = orig_fixed;
	struct wh_tensor tmp_fixed[16], *tmp = tmp_fixed;
	enum wh_status st = WH_OK;
	if (n > 16) {
		orig = calloc(n, sizeof *orig);
		tmp = calloc(n, sizeof *tmp);
		if (!orig || !tmp) {
			free(orig);
			free(tmp);
			return wh_error(WH_ERR_NOMEM, "engine: out of memory");
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		orig[k] = ctx->inputs[k];
		wh_tensor_init(&tmp[k]);
	}
	float in_scale = 0, *w_scales = NULL;
	float y_amax = -1; /* the range of output 0 when known without a pass */
	uint32_t n_w_scales = 0;
	int w_axis = -1;
	const struct wh_tensor *bias_t = NULL;
	const struct wh_tensor **ins = (const struct wh_tensor **)ctx->inputs;
	bool round_outputs_only = (p == WH_PREC_FP16 || p == WH_PREC_BF16) && en->out == p && moves_values(node->op_type);
	bool inputs_left = false; /* constant inputs not rounded: the outputs must be */
	for (uint32_t k = 0; k < n && st == WH_OK && p != WH_PREC_FP32; k++) {
		const struct wh_tensor *t = orig[k];
		if (!t || t->dtype != WH_DT_FLOAT || wh_emulate_parameter_input(node->op_type, k, p))
			continue;
		uint32_t vid = node->inputs[k];
		bool is_bias = gemm && (int)k == bias;
		bool cacheable = value_is_const(ctx, k) && en->cache && vid < en->cache->n;
		if (p == WH_PREC_TF32 && (!gemm || is_bias))
			continue;
		/* an activation its producer already rounded to this format needs nothing more */
		uint32_t prod = vid != WH_NONE ? ctx->graph->values[vid].producer : WH_NONE;
		bool in_format = en->node_out_prec && prod != WH_NONE && !cacheable && en->node_out_prec[prod] == (uint8_t)p;
		if (in_format && (p == WH_PREC_FP16 || p == WH_PREC_BF16))
			continue;
		if (in_format && !gemm && (p == WH_PREC_INT8 || p == WH_PREC_FP8 || p == WH_PREC_FP8E5M2))
			continue; /* fake quantization with the same tensor's scale is idempotent */
		/* TensorRT's semantics: a layer's precision is the type of its inputs and of its
		 * computation, so a float input that its producer wrote in another format is
		 * converted to the layer's format first (TensorRT inserts a reformat layer; the
		 * conversion counts as part of this layer). An FP32 layer therefore hands FP32
		 * values to an FP16 consumer, which rounds them: an overflow shows up here, in
		 * the consumer, as it does in a real engine. */
		if (round_outputs_only && value_is_const(ctx, k)) {
			inputs_left = true;
			continue;
		}
		if ((p == WH_PREC_FP16 || p == WH_PREC_BF16 || p == WH_PREC_TF32)) {
			struct wh_emul_entry *hit = cacheable ? cache_get(en->cache, vid, p, WH_EMUL_CONVERTED) : NULL;
			if (hit) {
				wh_tensor_ref(&tmp[k], &hit->t);
				ins[k] = &tmp[k];
				continue;
			}
			if (cacheable)
				cache_make_room(en->cache, vid, t->count * sizeof(float));
			if ((st = wh_tensor_alloc(&tmp[k], WH_DT_FLOAT, t->rank, t->dims)) != WH_OK)
				break;
			round_to_pool(t->data, tmp[k].data, t->count, p, ctx->cpu, ctx->pool);
			if (cacheable)
				cache_put(en->cache, vid, p, WH_EMUL_CONVERTED, &tmp[k], NULL, 0, -1);
			ins[k] = &tmp[k];
			continue;
		}
		/* int8 / fp8 */
		if (is_bias) {
			bias_t = t;
			if (integer_gemm)
				ins[k] = NULL; /* added after scaling */
			continue;
		}
		bool weight = gemm && k == 1 && value_is_const(ctx, k);
		if (weight) {
			int axis = p == WH_PREC_INT8 ? weight_axis(ctx, t) : -1;
			if (!strcmp(node->op_type, "ConvTranspose") && wh_node_attr_int(node, "group", 1) != 1)
				axis = -1;
			struct wh_emul_entry *hit = cacheable ? cache_get(en->cache, vid, p, WH_EMUL_CONVERTED) : NULL;
			if (hit) {
				wh_tensor_ref(&tmp[k], &hit->t);
				w_scales = malloc((hit->n_scales ? hit->n_scales : 1) * sizeof *w_scales);
				if (!w_scales) {
					st = wh_error(WH_ERR_NOMEM, "engine: out of memory");
					break;
				}
				memcpy(w_scales, hit->scales, hit->n_scales * sizeof *w_scales);
				n_w_scales = hit->n_scales;
				w_axis = hit->axis;
			} else {
				if (cacheable)
					cache_make_room(en->cache, vid, t->count * sizeof(float));
				if ((st = quant_weight(t, axis, p, &tmp[k], &w_scales, &n_w_scales)) != WH_OK)
					break;
				if (!integer_gemm) {
					/* fp8: back to real values (the kernel accumulates in FP32) */
					float *d = tmp[k].data;
					for (uint64_t i = 0; i < tmp[k].count; i++)
						d[i] *= w_scales[0];
				}
				w_axis = axis;
				if (cacheable)
					cache_put(en->cache, vid, p, WH_EMUL_CONVERTED, &tmp[k], w_scales, n_w_scales, axis);
			}
			ins[k] = &tmp[k];
			continue;
		}
		/* an activation (or a non-constant weight): per-tensor. A constant one (an addend,
		 * a factor) gives the same copy in every run: kept like a weight */
		bool grid_in = integer_gemm && (k == 0 || k == 1);
		bool keep = cacheable && !grid_in;
		struct wh_emul_entry *hit = keep ? cache_get(en->cache, vid, p, WH_EMUL_FAKE_QUANT) : NULL;
		if (hit) {
			wh_tensor_ref(&tmp[k], &hit->t);
			ins[k] = &tmp[k];
			continue;
		}
		/* a producer records the range of every output it quantizes, so a record is read only
		 * where the producer quantizes its outputs (then it wrote one in this run) */
		uint8_t prod_out = en->node_out_prec && prod != WH_NONE ? en->node_out_prec[prod] : (uint8_t)WH_PREC_FP32;
		bool recorded = prod_out == WH_PREC_INT8 || prod_out == WH_PREC_FP8 || prod_out == WH_PREC_FP8E5M2;
		float scale = act_scale(en, vid, ctx->graph->values[vid].name, t, p, recorded ? range_get(en->cache, vid, t) : -1,
					ctx->cpu, ctx->pool);
		if (keep)
			cache_make_room(en->cache, vid, t->count * sizeof(float));
		if ((st = wh_tensor_alloc(&tmp[k], WH_DT_FLOAT, t->rank, t->dims)) != WH_OK)
			break;
		if (grid_in) {
			if (scale > 0)
				quant_grid(t->data, tmp[k].data, t->count, scale, p, ctx->cpu, ctx->pool);
			else if (t->count)
				memset(tmp[k].data, 0, t->count * sizeof(float));
			if (k == 0)
				in_scale = scale;
			else {
				free(w_scales);
				w_scales = malloc(sizeof *w_scales);
				if (!w_scales) {
					st = wh_error(WH_ERR_NOMEM, "engine: out of memory");
					break;
				}
				w_scales[0] = scale;
				n_w_scales = 1;
				w_axis = -1;
			}
		} else {
			fake_quant(t->data, tmp[k].data, t->count, scale, p, ctx->cpu, ctx->pool);
			if (keep)
				cache_put(en->cache, vid, p, WH_EMUL_FAKE_QUANT, &tmp[k], NULL, 0, -1);
		}
		ins[k] = &tmp[k];
	}
	/* outputs in the output format; every float input now holds values of the layer's
	 * format, so ops that only select, move or compare values of the format (and Relu/Clip
	 * at 0 and 6, which the format holds) already produce values of it: rounding again would
	 * change nothing, so it is skipped */
	bool exact_op = false;
	if (en->out == p && (p == WH_PREC_FP16 || p == WH_PREC_BF16)) {
		static const char *const value_preserving[] = {
			"Relu", "MaxPool", "GlobalMaxPool", "Reshape", "Transpose", "Concat", "Slice", "Split", "Squeeze",
			"Unsqueeze", "Flatten", "Identity", "Gather", "Expand", "Tile", "Max", "Min", "Neg", "Abs", NULL};
		for (int i = 0; value_preserving[i]; i++)
			exact_op |= !strcmp(node->op_type, value_preserving[i]);
		/* Clip from opset 11 takes its bounds as inputs, which are in the format too */
		if (!strcmp(node->op_type, "Clip") && ctx->opset >= 11)
			exact_op = true;
		if (!strcmp(node->op_type, "Resize") || !strcmp(node->op_type, "Upsample")) {
			char mode[16];
			exact_op = !strcmp(wh_node_attr_string(node, "mode", "nearest", mode, sizeof mode), "nearest");
		}
		if (inputs_left)
			exact_op = false;
	}
	/* fp16/bf16 outputs: kernels that can round each block as they write it do so (same
	 * bits, one pass over memory less); the loop below rounds what they did not */
	struct wh_out_round rnd = {en->out == WH_PREC_FP16 ? wh_round_f16_n : wh_round_bf16_n, ctx->cpu};
	ctx->round_out = (en->out == WH_PREC_FP16 || en->out == WH_PREC_BF16) && !exact_op && !integer_gemm ? &rnd : NULL;
	ctx->outputs_rounded = false;
	if (st == WH_OK)
		st = run(ctx);
	bool kernel_rounded = ctx->round_out && ctx->outputs_rounded;
	ctx->round_out = NULL;
	/* integer GEMM: y = acc * s_x * s_w[c] + bias */
	if (st == WH_OK && integer_gemm && ctx->outputs[0].dtype == WH_DT_FLOAT) {
		struct wh_tensor *y = &ctx->outputs[0];
		float *py = y->data;
		const char *op = node->op_type;
		/* output channel axis: 1 for Conv/ConvTranspose, last for MatMul/Gemm */
		bool conv = !strcmp(op, "Conv") || !strcmp(op, "ConvTranspose");
		int64_t C = conv ? (y->rank > 1 ? y->dims[1] : 1) : (y->rank ? y->dims[y->rank - 1] : 1);
		uint64_t inner = 1;
		for (int32_t d = 2; conv && d < y->rank; d++)
			inner *= (uint64_t)y->dims[d];
		bool per_channel = w_axis >= 0 && n_w_scales == (uint32_t)C;
		uint64_t outer = C && inner ? y->count / ((uint64_t)C * inner) : 0;
		struct rescale_job rj = {.y = py, .C = (uint64_t)C, .in_scale = in_scale, .w_scales = w_scales,
					 .per_channel = per_channel, .bias = bias_t && conv ? bias_t->data : NULL, .add = conv,
					 .cpu = ctx->cpu};
		if (conv) {
			rj.rows = outer * (uint64_t)C;
			rj.inner = inner;
		} else {
			rj.rows = outer; /* channels are the last axis */
			rj.inner = (uint64_t)C;
		}
		float m = rescale_run(&rj, ctx->pool);
		if (conv)
			y_amax = m;
		if (bias_t) {
			if (conv) {
				/* added above */
			} else {
				add_gemm_c(y, bias_t, wh_node_attr_float(node, "beta", 1.0f));
			}
		}
	}
	for (uint32_t k = 0; st == WH_OK && k < ctx->n_outputs; k++) {
		struct wh_tensor *y = &ctx->outputs[k];
		if (y->dtype != WH_DT_FLOAT || !y->count || exact_op || kernel_rounded)
			continue;
		if (!wh_blob_writable(y->blob)) {
			/* a view of an input (Reshape of a weight, a Constant's value): rounded in a
			 * copy, never in the blob that the input, the FP32 engine or the weights file
			 * still read */
			struct wh_tensor c;
			wh_tensor_init(&c);
			if ((st = wh_tensor_alloc(&c, WH_DT_FLOAT, y->rank, y->dims)) != WH_OK)
				break;
			memcpy(c.data, y->data, y->count * sizeof(float));
			wh_tensor_release(y);
			*y = c;
		}
		uint32_t vid = node->outputs[k];
		switch (en->out) {
		case WH_PREC_FP16:
		case WH_PREC_BF16:
			round_to_pool(y->data, y->data, y->count, en->out, ctx->cpu, ctx->pool);
			break;
		case WH_PREC_INT8:
		case WH_PREC_FP8:
		case WH_PREC_FP8E5M2: {
			/* the range: an integer Conv measured it while it wrote y */
			float scale = act_scale(en, vid, vid != WH_NONE ? ctx->graph->values[vid].name : "", y, en->out,
						k == 0 ? y_amax : -1, ctx->cpu, ctx->pool);
			range_put(en->cache, vid, y, fake_quant(y->data, y->data, y->count, scale, en->out, ctx->cpu, ctx->pool));
			break;
		}
		default:
			break;
		}
	}
	for (uint32_t k = 0; k < n; k++) {
		ins[k] = orig[k];
		wh_tensor_release(&tmp[k]);
	}
	free(w_scales);
	if (orig != orig_fixed)
		free(orig);
	if (tmp != tmp_fixed)
		free(tmp);
	return st;
}
