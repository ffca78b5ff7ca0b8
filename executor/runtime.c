/* The runtime: execution plans (one per graph and subgraph) and their interpretation.
 * It calls no builder code: a build hands it a tactic chooser (executor/build-internal.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "executor/build-internal.h"
#include "executor/cpu.h"
#include "executor/emulate.h"
#include "executor/executor.h"
#include "executor/gpu.h"
#include "executor/kernel.h"
#include "executor/precision.h"
#include "executor/qdq.h"
#include "executor/tactic-plan.h"
#include "executor/threadpool.h"
#include "graph/blob.h"
#include "graph/onnx-io.h"
#include "graph/os.h"
#include "graph/topo.h"

/* A Concat whose inputs its producers write straight into its output (plan_concats). The
 * runs learn the shapes: the last run's tell the next where each input goes. */
struct concat_plan {
	uint32_t node; /* the Concat */
	uint32_t n;    /* its inputs */
	bool known;    /* the last run's shapes are below and concatenate along a leading axis */
	uint8_t misses; /* runs whose inputs did not land in place; 2 turn the plan off */
	enum wh_dtype dt;
	int32_t rank;
	int64_t out_dims[WH_MAX_RANK];
	int64_t (*in_dims)[WH_MAX_RANK]; /* n */
	uint64_t *offset;                /* n: element offset of each input in the output */
};

/* a main-graph input's type and shape, as a run gave it */
struct shape_rec {
	int dtype;
	int32_t rank;
	bool seq;
	int64_t dims[WH_MAX_RANK];
};

struct plan {
	const struct wh_graph *g;
	uint32_t *order;                    /* node ids in execution order */
	const struct wh_op_def **kernels;   /* per node id */
	int64_t *opsets;                    /* per node id */
	uint32_t *last_use;                 /* per value id: last step reading it, or WH_NONE */
	struct wh_tensor *inits;            /* per value id: initializer tensors (shared blobs) */
	uint8_t *exec_prec, *out_prec;      /* per node id of g, NULL: all FP32 */
	uint8_t *kinds;                     /* per node id (main graph on a GPU): enum wh_layer_kind */
	/* main graph on a GPU: the initializers' blobs, sorted (a tensor sharing one, a view of a
	 * weight, is an engine constant the GPU keeps) */
	const struct wh_blob **init_blobs;
	uint32_t n_init_blobs;
	const struct wh_tactic **pinned;    /* per node id (main graph), NULL entries: default */
	const char **gpu_tac;               /* per node id: a pinned GPU tactic (the replay's string), or NULL */
	struct wh_emul_cache emul;
	/* Fused activations (plan_fusions): per node id, the activation a producing node applies
	 * to its output 0 (epi) and the value that then receives it (fused_out, WH_NONE: no
	 * fusion); a node whose work was done so is skipped while its input fused_skip is
	 * absent (WH_NONE: never skipped). NULL when the plan fuses nothing. */
	struct wh_epilogue *epi;
	uint32_t *fused_out, *fused_skip;
	/* QDQ convolutions (executor/qdq.h): per node id, NULL when the graph has none; and
	 * the QuantizeLinear each writes directly (plan_fuse_quant, NULL: none) */
	struct wh_qdq_link *qdq;
	struct wh_qdq_fuse *fq;
	uint8_t *dq_skip; /* per node id: a DequantizeLinear only linked Convs read (not run when fusing) */

	/* Constant layers (plan_constants): per node id, CONST_NO, or CONST_YES until the first
	 * run computes the layer (CONST_LATER until the second for a large one), then CONST_CACHED
	 * (its outputs are in const_vals, at const_slot[value]) or CONST_UNCACHED (past the budget:
	 * it runs every time). */
	uint8_t *const_node;
	/* per node id: a cached constant layer that only cached constant layers read (none of
	 * its outputs kept): a run that reports no tensors skips it (plan_quiet, NULL: none);
	 * recomputed before a run after const_node changed (quiet_stale) */
	uint8_t *const_quiet;
	bool quiet_stale;
	uint32_t *const_slot; /* per value id, WH_NONE where no constant layer writes it */
	struct wh_tensor *const_vals;
	/* Constant layers that hold only given the main graph's input shapes (a Shape or Size of
	 * a tensor whose shape follows from the input shapes alone, and what is computed from
	 * it: masks, position tables, shape arithmetic): per node id 1 (NULL: none). They are
	 * computed again in a run whose input shapes differ from shape_in's (input_shapes_check). */
	uint8_t *shape_const;
	uint32_t n_shape_const;
	struct shape_rec *shape_in; /* per main-graph input: its shape at the constants' run */
	bool main;                  /* the main graph's plan */
	size_t const_bytes;
	size_t const_budget, const_tensor_max; /* what keep_constant may hold, in all and a layer */
	/* In-place Concat (plan_concats): per node id, the concat (index into concats) whose
	 * input the node writes, and which input (WH_NONE: none); per Concat node id its index
	 * (WH_NONE: not planned). */
	struct concat_plan *concats;
	uint32_t n_concats;
	uint32_t *place_concat, *place_input, *concat_index;
	/* A frame's value array kept between runs (a Loop body runs once per iteration, the
	 * main graph once per run): it holds only the initializers' references (see
	 * frame_init); NULL while a frame of this plan has it. */
	struct wh_tensor *spare_vals;
	/* per node id: the branches each If took in this engine's runs (1: then, 2: else) */
	uint8_t *branch_seen;
	/* the values captured from enclosing graphs (WH_VALUE_OUTER), n_outer of them */
	uint32_t *outer, n_outer;
};

/* At most this much freed activation memory is kept between runs (graph/blob.h holds only
 * blobs of 256 KiB or less): enough for the small models where allocation shows. */
#define WH_ENGINE_BLOB_CACHE_BYTES ((size_t)4 << 20)

struct wh_engine {
	const struct wh_model *m;
	const struct wh_precision_config *precision;
	const struct wh_tactic_plan *tactics;
	bool tactics_strict;
	int64_t weight_cache_bytes;
	char faulty_tactic[128], faulty_layer[256];
	bool allow_reduced; /* --allow-reduced-precision-reduction (GPU tactics) */
	struct wh_tactic_chooser chooser; /* a build's (choose NULL otherwise) */
	struct wh_threadpool *pool;
	/* the memory of the activations freed in a run, for the next run's (graph/blob.h): a
	 * tensor of a small model costs as much in malloc's aligned path as in its kernel */
	struct wh_blob_cache *blobs;
	const struct wh_cpu_features *cpu;
	struct wh_gemm_packs *packs; /* packed constant GEMM operands (kernel.h) */
	struct plan **plans;
	uint32_t n_plans, cap_plans;
	/* opt->profile: one entry per step of the main graph, NULL otherwise */
	struct wh_layer_profile *prof;
	uint32_t n_prof;
	/* opt->cuda: the GPU (executor/gpu.h) and the device copies of the weights */
	struct wh_gpu *gpu;
	struct wh_gpu_weights *gpu_weights;
	/* CUDA graphs (docs/gpu.md): after a run that a replay could repeat, the next run with
	 * the same input shapes is captured; later ones replay it. gpu_graph_off: never (a
	 * capture failed, or WHITTLE_CUDA_GRAPHS=0) */
	struct wh_gpu_graph *gpu_graph;
	bool gpu_graph_off, gpu_capturable;
	uint64_t gpu_sig; /* the input shapes of the last run */
};

struct wh_frame {
	struct wh_engine *e;
	struct plan *plan;
	struct wh_tensor *vals; /* per value id */
	const struct wh_frame *parent;
	/* wh_engine_run_each: told of each tensor of the main graph as it is computed */
	wh_engine_tensor_fn each;
	void *each_state;
	/* the main graph's frame of an engine on the GPU: the values' device copies */
	struct wh_gpu_vals *dv;
};

/* ---- unsupported-op listing ---- */

struct name_list {
	char *buf;
	size_t size, len;
	uint32_t count;
};

static void list_add(struct name_list *l, const char *domain, const char *op)
{
	char name[256];
	snprintf(name, sizeof name, "%s%s%s", domain && *domain ? domain : "", domain && *domain ? "." : "", op);
	/* already listed? */
	const char *p = l->buf;
	size_t nl = strlen(name);
	while (p && (p = strstr(p, name)) != NULL) {
		bool start = p == l->buf || (p >= l->buf + 2 && p[-1] == ' ' && p[-2] == ',');
		bool end = p[nl] == '\0' || p[nl] == ',';
		if (start && end)
			return;
		p += nl;
	}
	l->count++;
	if (!l->size)
		return;
	int w = snprintf(l->buf + l->len, l->size - l->len, "%s%s", l->len ? ", " : "", name);
	if (w > 0)
		l->len = l->len + (size_t)w < l->size ? l->len + (size_t)w : l->size - 1;
}

static void scan_unsupported(const struct wh_model *m, const struct wh_graph *g, struct name_list *l)
{
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		int64_t opset = wh_model_opset(m, n->domain);
		if (!wh_op_lookup(n->domain, n->op_type, opset ? opset : 1))
			list_add(l, n->domain, n->op_type);
		for (uint32_t a = 0; a < n->n_attrs; a++) {
			const struct wh_attr *at = &n->attrs[a];
			if (at->type == WH_ATTR_GRAPH && at->g)
				scan_unsupported(m, at->g, l);
			if (at->type == WH_ATTR_GRAPHS)
				for (size_t k = 0; k < at->n; k++)
					scan_unsupported(m, at->graphs[k], l);
		}
	}
}

uint32_t wh_model_unsupported_ops(const struct wh_model *m, char *buf, size_t size)
{
	struct name_list l = {.buf = buf, .size = size};
	if (size)
		buf[0] = '\0';
	/* duplicates are detected in buf, so use a big scratch buffer when none is given */
	char scratch[8192];
	if (!size) {
		l.buf = scratch;
		l.size = sizeof scratch;
		scratch[0] = '\0';
	}
	scan_unsupported(m, m->graph, &l);
	return l.count;
}

/* ---- plans ---- */

static void plan_destroy(struct plan *p)
{
	if (!p)
		return;
	if (p->spare_vals)
		for (uint32_t v = 0; v < p->g->n_values; v++)
			wh_tensor_release(&p->spare_vals[v]);
	free(p->spare_vals);
	if (p->inits)
		for (uint32_t v = 0; v < p->g->n_values; v++)
			wh_tensor_release(&p->inits[v]);
	free(p->inits);
	free(p->exec_prec);
	free(p->out_prec);
	free(p->kinds);
	free(p->init_blobs);
	free(p->pinned);
	free(p->gpu_tac);
	if (p->const_vals)
		for (uint32_t i = 0; i < p->g->n_values; i++)
			if (p->const_slot[i] != WH_NONE)
				wh_tensor_release(&p->const_vals[p->const_slot[i]]);
	free(p->const_node);
	free(p->const_quiet);
	free(p->const_slot);
	free(p->const_vals);
	free(p->shape_const);
	free(p->shape_in);
	for (uint32_t i = 0; i < p->n_concats; i++) {
		free(p->concats[i].in_dims);
		free(p->concats[i].offset);
	}
	free(p->concats);
	free(p->place_concat);
	free(p->place_input);
	free(p->concat_index);
	free(p->epi);
	free(p->fused_out);
	free(p->fused_skip);
	free(p->qdq);
	free(p->fq);
	free(p->dq_skip);
	wh_emul_cache_release(&p->emul);
	free(p->order);
	free(p->kernels);
	free(p->opsets);
	free(p->last_use);
	free(p->branch_seen);
	free(p->outer);
	free(p);
}

static enum wh_status build_plan(struct wh_engine *e, const struct wh_graph *g, enum wh_precision dflt);

/* Values of g read by name from inside sg or any graph nested in it live until step s. */
static void extend_captures(const struct wh_graph *g, const struct wh_graph *sg, uint32_t *last_use, uint32_t s)
{
	for (uint32_t v = 0; v < sg->n_values; v++)
		if (sg->values[v].flags & WH_VALUE_OUTER) {
			uint32_t ov = wh_graph_find_value(g, sg->values[v].name);
			if (ov != WH_NONE && (last_use[ov] == WH_NONE || last_use[ov] < s))
				last_use[ov] = s;
		}
	for (uint32_t n = 0; n < sg->n_nodes; n++)
		for (uint32_t a = 0; a < sg->nodes[n].n_attrs; a++) {
			const struct wh_attr *at = &sg->nodes[n].attrs[a];
			if (at->type == WH_ATTR_GRAPH && at->g)
				extend_captures(g, at->g, last_use, s);
			if (at->type == WH_ATTR_GRAPHS)
				for (size_t k = 0; k < at->n; k++)
					extend_captures(g, at->graphs[k], last_use, s);
		}
}

static bool is_kept(const struct wh_graph *g, uint32_t v)
{
	return (g->values[v].flags & (WH_VALUE_OUTPUT | WH_VALUE_INITIALIZER | WH_VALUE_OUTER)) != 0;
}

/* A node the fusion may take into its producer: runs at FP32 and stores FP32, no pinned
 * tactic. */
static bool fusable_node(const struct plan *p, uint32_t nid)
{
	if (p->exec_prec && (p->exec_prec[nid] != WH_PREC_FP32 || p->out_prec[nid] != WH_PREC_FP32))
		return false;
	return !(p->pinned && p->pinned[nid]);
}

/* A value only the fusion reads: computed, not kept, read by its readers only at the step
 * of the last of them (a subgraph capturing it would read it later). */
static bool fusable_value(const struct plan *p, uint32_t v, uint32_t last_step)
{
	const struct wh_graph *g = p->g;
	return v != WH_NONE && !is_kept(g, v) && !(g->values[v].flags & WH_VALUE_INPUT) && p->last_use[v] == last_step;
}

/* CONST_LATER: computed once, over WH_CONST_TENSOR_BYTES: kept at its second run, so an engine
 * that runs once (a reduce candidate, a single run) never holds it longer than the layer */
enum { CONST_NO, CONST_YES, CONST_CACHED, CONST_UNCACHED, CONST_LATER };

/* Who reads each value, for the plans below (computed once per plan build): per value id
 * the number of input slots reading it and the first two readers; per node id its step. */
struct plan_readers {
	uint32_t *uses, *first, *second; /* per value id */
	uint32_t *step;                  /* per node id */
};

static void plan_readers_release(struct plan_readers *r)
{
	free(r->uses);
	free(r->first);
	free(r->second);
	free(r->step);
}

static enum wh_status plan_readers_init(const struct plan *p, struct plan_readers *r)
{
	const struct wh_graph *g = p->g;
	size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
	r->uses = calloc(nv, sizeof *r->uses);
	r->first = calloc(nv, sizeof *r->first);
	r->second = calloc(nv, sizeof *r->second);
	r->step = calloc(nn, sizeof *r->step);
	if (!r->uses || !r->first || !r->second || !r->step) {
		plan_readers_release(r);
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	}
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t nid = p->order[s];
		const struct wh_node *n = &g->nodes[nid];
		r->step[nid] = s;
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v == WH_NONE)
				continue;
			if (r->uses[v]++ == 0)
				r->first[v] = nid;
			else
				r->second[v] = nid;
		}
	}
	return WH_OK;
}

/* Finds the Concats whose every input is written by a node (output 0, FP32, not constant;
 * for an activation fused into its producer, that producer) and read by the Concat alone:
 * those nodes are offered their slice of the Concat's output (wh_kernel_ctx.place_out) and,
 * when every input landed there, the Concat copies nothing. Runs after plan_fusions and
 * plan_constants. */
static enum wh_status plan_concats(struct plan *p, const struct plan_readers *r)
{
	const struct wh_graph *g = p->g;
	size_t nn = (size_t)g->n_nodes + 1;
	enum wh_status st = WH_OK;
	p->place_concat = malloc(nn * sizeof *p->place_concat);
	p->place_input = malloc(nn * sizeof *p->place_input);
	p->concat_index = malloc(nn * sizeof *p->concat_index);
	if (!p->place_concat || !p->place_input || !p->concat_index)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	for (uint32_t i = 0; i < nn; i++)
		p->place_concat[i] = p->place_input[i] = p->concat_index[i] = WH_NONE;
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t cid = p->order[s];
		const struct wh_node *c = &g->nodes[cid];
		if (strcmp(c->op_type, "Concat") || c->domain[0] || c->n_inputs < 2 || c->n_outputs != 1 || !fusable_node(p, cid))
			continue;
		uint32_t writers[64];
		bool ok = c->n_inputs <= 64;
		for (uint32_t k = 0; ok && k < c->n_inputs; k++) {
			uint32_t v = c->inputs[k];
			ok = v != WH_NONE && r->uses[v] == 1 && fusable_value(p, v, s) && g->values[v].producer != WH_NONE &&
			     g->values[v].producer_output == 0;
			if (!ok)
				break;
			uint32_t w = g->values[v].producer;
			if (p->fused_skip[w] != WH_NONE) {
				/* an activation fused into its producer: the producer writes v */
				uint32_t pv = p->fused_skip[w], pw = g->values[pv].producer;
				ok = pw != WH_NONE && p->fused_out[pw] == v;
				w = pw;
			}
			ok = ok && fusable_node(p, w) && p->const_node[w] == CONST_NO && p->place_concat[w] == WH_NONE &&
			     g->nodes[w].n_outputs >= 1;
			writers[k] = w;
		}
		if (!ok)
			continue;
		struct concat_plan *np = realloc(p->concats, (p->n_concats + 1) * sizeof *np);
		if (!np) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		p->concats = np;
		struct concat_plan *cp = &p->concats[p->n_concats];
		*cp = (struct concat_plan){.node = cid, .n = c->n_inputs};
		cp->in_dims = calloc(c->n_inputs, sizeof *cp->in_dims);
		cp->offset = calloc(c->n_inputs, sizeof *cp->offset);
		if (!cp->in_dims || !cp->offset) {
			free(cp->in_dims);
			free(cp->offset);
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		for (uint32_t k = 0; k < c->n_inputs; k++) {
			p->place_concat[writers[k]] = p->n_concats;
			p->place_input[writers[k]] = k;
		}
		p->concat_index[cid] = p->n_concats++;
	}
out:
	return st;
}

/* After Concat cp ran as a kernel (inputs ins, output y): learns where each input goes,
 * when the inputs are one type and the axis has nothing before it but ones (so that each
 * input is one run of the output's elements). */
static void learn_concat(struct concat_plan *cp, const struct wh_tensor *const *ins, const struct wh_tensor *y)
{
	cp->known = false;
	if (!wh_value_is_tensor(y) || y->rank < 1 || y->dtype == WH_DT_STRING || wh_dtype_size(y->dtype) == 0)
		return;
	int32_t axis = -1;
	for (int32_t d = 0; d < y->rank; d++) {
		bool differs = false;
		for (uint32_t k = 0; k < cp->n; k++)
			differs |= !ins[k] || ins[k]->rank != y->rank || ins[k]->dims[d] != y->dims[d];
		if (differs) {
			if (axis >= 0)
				return;
			axis = d;
		}
	}
	if (axis < 0)
		axis = 0; /* every input as long as the output: one of them holds it all */
	for (int32_t d = 0; d < axis; d++)
		if (y->dims[d] != 1)
			return;
	uint64_t off = 0;
	for (uint32_t k = 0; k < cp->n; k++) {
		if (!ins[k] || ins[k]->dtype != y->dtype || !wh_value_is_tensor(ins[k]))
			return;
		memcpy(cp->in_dims[k], ins[k]->dims, sizeof cp->in_dims[k]);
		cp->offset[k] = off;
		off += ins[k]->count;
	}
	if (off != y->count)
		return;
	cp->dt = y->dtype;
	cp->rank = y->rank;
	memcpy(cp->out_dims, y->dims, sizeof cp->out_dims);
	cp->known = true;
}

/* A constant layer's outputs are kept when they take at most WH_CONST_TENSOR_BYTES, and a
 * plan keeps at most WH_CONST_CACHE_BYTES of them: enough for masks, shape arithmetic and
 * small tables. The main graph of an FP32 engine also keeps larger ones, a widened copy of a
 * weight stored in fp16 or int8 (Cast or DequantizeLinear of a weight), within the engine's
 * weight_cache_bytes, the budget the emulation's rounded copies use in reduced-precision
 * engines (which plan no constant layers): an engine holds the mapped weights plus at most
 * that budget, and a layer past it is computed run by run as before. */
#define WH_CONST_TENSOR_BYTES ((size_t)4 << 20)
#define WH_CONST_CACHE_BYTES ((size_t)32 << 20)

/* Ops (default domain) whose outputs' shapes follow from their inputs' shapes and their
 * attributes alone, whatever the inputs hold. */
static const char *const shape_only_ops[] = {
	"Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "AveragePool",
	"BatchNormalization", "BitShift", "Cast", "CastLike", "Ceil", "Celu", "Clip", "Concat", "Conv", "Cos", "Cosh",
	"CumSum", "DepthToSpace", "Div", "Elu", "Equal", "Erf", "Exp", "Flatten", "Floor", "Gather", "GatherElements",
	"Gelu", "Gemm", "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GroupNormalization",
	"HardSigmoid", "HardSwish", "Identity", "InstanceNormalization", "IsInf", "IsNaN", "LayerNormalization",
	"LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mish", "Mod",
	"Mul", "Neg", "Not", "Or", "PRelu", "Pow", "Reciprocal", "Relu", "Round", "ScatterElements", "ScatterND", "Selu",
	"Shape", "Sigmoid", "Sign", "Sin", "Sinh", "Size", "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Sqrt",
	"Sub", "Sum", "Tan", "Tanh", "ThresholdedRelu", "Transpose", "Trilu", "Where", "Xor", NULL};
/* Ops whose outputs' shapes follow from input 0's shape and the values of the others (a
 * target shape, axes, pads, repeats...): known when those others are constant. */
static const char *const value_shaped_ops[] = {
	"Reshape", "Expand", "Slice", "Tile", "Pad", "Squeeze", "Unsqueeze", "Split", "Resize", "TopK", "OneHot",
	"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
	"ReduceLogSumExp", "ReduceSumSquare", NULL};

static bool op_listed(const struct wh_node *n, const char *const *list)
{
	if (n->domain[0] && strcmp(n->domain, "ai.onnx"))
		return false;
	for (int i = 0; list[i]; i++)
		if (!strcmp(n->op_type, list[i]))
			return true;
	return false;
}

/* Finds the constant layers: every input omitted, an initializer or a constant layer's
 * output; no subgraph; not random (nor Dropout, random in training mode); no tactics (a
 * build times each of them, a replay pins them); FP32 (emulation rounds per run). The
 * first run computes them as any layer; later runs take their kept outputs (run_constant).
 * In the main graph a Shape or Size is constant too when its input's shape follows from
 * the graph inputs' shapes alone (through shape_only_ops, and value_shaped_ops with
 * constant shape operands), and so is what is computed from it: those layers are marked
 * in shape_const and computed again when a run's input shapes differ (input_shapes_check).
 * A tensor after a NonZero, a Loop or any op outside the two lists has no such shape. */
static enum wh_status plan_constants(struct plan *p)
{
	static const char *const random_ops[] = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
						 "Multinomial", "Bernoulli", "Dropout", NULL};
	const struct wh_graph *g = p->g;
	size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
	uint32_t n_slots = 0;
	p->const_node = calloc(nn, 1);
	p->const_slot = malloc(nv * sizeof *p->const_slot);
	if (!p->const_node || !p->const_slot)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	for (uint32_t v = 0; v < nv; v++)
		p->const_slot[v] = WH_NONE;
	/* main graph: per value, its shape follows from the input shapes (stat) and it is a
	 * constant that holds only for them (dep) */
	uint8_t *stat = NULL, *dep = NULL;
	if (p->main) {
		stat = calloc(nv, 1);
		dep = calloc(nv, 1);
		p->shape_const = calloc(nn, 1);
		if (!stat || !dep || !p->shape_const) {
			free(stat);
			free(dep);
			return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
		}
		for (uint32_t i = 0; i < g->n_inputs; i++)
			stat[g->inputs[i]] = 1;
		for (uint32_t v = 0; v < g->n_values; v++)
			if (g->values[v].flags & WH_VALUE_INITIALIZER)
				stat[v] = 1;
	}
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t nid = p->order[s];
		const struct wh_node *n = &g->nodes[nid];
		bool shape_op = stat && !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
		bool ok = fusable_node(p, nid) && p->kernels[nid]->n_tactics == 0 && !p->kernels[nid]->any_value;
		bool root = false, from_root = false;
		for (int i = 0; ok && random_ops[i]; i++)
			ok = strcmp(n->op_type, random_ops[i]) != 0;
		for (uint32_t a = 0; ok && a < n->n_attrs; a++)
			ok = n->attrs[a].type != WH_ATTR_GRAPH && n->attrs[a].type != WH_ATTR_GRAPHS;
		for (uint32_t k = 0; ok && k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v != WH_NONE && shape_op && k == 0 && stat[v] && p->const_slot[v] == WH_NONE) {
				root = true;
				continue;
			}
			ok = v == WH_NONE || p->const_slot[v] != WH_NONE ||
			     ((g->values[v].flags & WH_VALUE_INITIALIZER) && wh_value_present(&p->inits[v]));
			from_root |= ok && v != WH_NONE && dep && dep[v];
		}
		if (ok) {
			p->const_node[nid] = CONST_YES;
			for (uint32_t k = 0; k < n->n_outputs; k++)
				if (n->outputs[k] != WH_NONE && p->const_slot[n->outputs[k]] == WH_NONE)
					p->const_slot[n->outputs[k]] = n_slots++;
			if (dep && (root || from_root)) {
				p->shape_const[nid] = 1;
				p->n_shape_const++;
				for (uint32_t k = 0; k < n->n_outputs; k++)
					if (n->outputs[k] != WH_NONE)
						dep[n->outputs[k]] = 1;
			}
		}
		if (!stat)
			continue;
		/* the outputs' shapes: static when the node is constant, or by its op */
		bool st_out = ok;
		if (!st_out && op_listed(n, shape_only_ops)) {
			st_out = true;
			for (uint32_t k = 0; st_out && k < n->n_inputs; k++)
				st_out = n->inputs[k] == WH_NONE || stat[n->inputs[k]];
		} else if (!st_out && op_listed(n, value_shaped_ops) && n->n_inputs && n->inputs[0] != WH_NONE) {
			st_out = stat[n->inputs[0]];
			for (uint32_t k = 1; st_out && k < n->n_inputs; k++) {
				uint32_t v = n->inputs[k];
				st_out = v == WH_NONE || p->const_slot[v] != WH_NONE ||
					 ((g->values[v].flags & WH_VALUE_INITIALIZER) && wh_value_present(&p->inits[v]));
			}
		}
		if (st_out)
			for (uint32_t k = 0; k < n->n_outputs; k++)
				if (n->outputs[k] != WH_NONE)
					stat[n->outputs[k]] = 1;
	}
	free(stat);
	free(dep);
	if (n_slots && !(p->const_vals = calloc(n_slots, sizeof *p->const_vals)))
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	return WH_OK;
}

/* After constant layer nid ran (its outputs in outs): keeps them if they fit. */
static void keep_constant(struct plan *p, uint32_t nid, const struct wh_tensor *outs, const bool *wanted)
{
	const struct wh_node *n = &p->g->nodes[nid];
	size_t bytes = 0;
	for (uint32_t k = 0; k < n->n_outputs; k++) {
		if (!wanted[k])
			continue;
		if (!wh_value_is_tensor(&outs[k])) {
			p->const_node[nid] = CONST_UNCACHED;
			return;
		}
		bytes += wh_tensor_nbytes(&outs[k]);
	}
	if (bytes > WH_CONST_TENSOR_BYTES && p->const_node[nid] == CONST_YES && bytes <= p->const_tensor_max) {
		p->const_node[nid] = CONST_LATER;
		return;
	}
	if (bytes > p->const_tensor_max || p->const_bytes + bytes > p->const_budget) {
		p->const_node[nid] = CONST_UNCACHED;
		return;
	}
	for (uint32_t k = 0; k < n->n_outputs; k++)
		if (wanted[k])
			wh_tensor_ref(&p->const_vals[p->const_slot[n->outputs[k]]], &outs[k]);
	p->const_bytes += bytes;
	p->const_node[nid] = CONST_CACHED;
	p->quiet_stale = true;
}

/* The cached constant layers a run may skip (plan.const_quiet): those whose outputs only
 * cached constant layers read and no one keeps. A graph with subgraphs has none (a subgraph
 * reads captured values by name, outside the node inputs seen here). */
static void plan_quiet(struct plan *p)
{
	const struct wh_graph *g = p->g;
	p->quiet_stale = false;
	if (!p->const_quiet && !(p->const_quiet = calloc((size_t)g->n_nodes + 1, 1)))
		return; /* nothing skipped */
	bool any = false;
	for (uint32_t nid = 0; nid < g->n_nodes; nid++) {
		const struct wh_node *n = &g->nodes[nid];
		if (wh_node_holds_graphs(n)) {
			memset(p->const_quiet, 0, (size_t)g->n_nodes + 1);
			return;
		}
		p->const_quiet[nid] = p->const_node[nid] == CONST_CACHED;
		any |= p->const_quiet[nid];
	}
	if (!any)
		return;
	for (uint32_t nid = 0; nid < g->n_nodes; nid++) {
		const struct wh_node *n = &g->nodes[nid];
		if (p->const_node[nid] == CONST_CACHED)
			continue;
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v != WH_NONE && g->values[v].producer != WH_NONE)
				p->const_quiet[g->values[v].producer] = 0;
		}
	}
	for (uint32_t v = 0; v < g->n_values; v++)
		if (g->values[v].producer != WH_NONE && (is_kept(g, v) || (g->values[v].flags & WH_VALUE_INPUT)))
			p->const_quiet[g->values[v].producer] = 0;
	/* a skipped layer releases nothing, so one that reads last a value some placed layer
	 * wrote is placed too (in step order: producers are decided first) */
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t nid = p->order[s];
		const struct wh_node *n = &g->nodes[nid];
		for (uint32_t k = 0; p->const_quiet[nid] && k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			if (v != WH_NONE && p->last_use[v] == s && !is_kept(g, v) && !(g->values[v].flags & WH_VALUE_INPUT) &&
			    (g->values[v].producer == WH_NONE || !p->const_quiet[g->values[v].producer]))
				p->const_quiet[nid] = 0;
		}
	}
}

/* The activation node aid reading value w alone, as an epilogue: fills *e. */
static bool activation_of(const struct plan *p, const struct plan_readers *r, uint32_t aid, uint32_t w,
			  struct wh_epilogue *e)
{
	const struct wh_graph *g = p->g;
	const struct wh_node *a = &g->nodes[aid];
	const struct wh_tensor *consts[2] = {NULL, NULL};
	bool ok = a->n_inputs >= 1 && a->n_inputs <= 3 && a->inputs[0] == w && a->n_outputs == 1 &&
		  a->outputs[0] != WH_NONE && fusable_node(p, aid) && fusable_value(p, w, r->step[aid]);
	for (uint32_t k = 1; ok && k < a->n_inputs; k++) {
		uint32_t c = a->inputs[k];
		if (c == WH_NONE)
			continue;
		ok = c != w && (g->values[c].flags & WH_VALUE_INITIALIZER) && wh_value_present(&p->inits[c]);
		if (ok)
			consts[k - 1] = &p->inits[c];
	}
	return ok && wh_epilogue_of(a, p->opsets[aid], consts, e);
}

/* A float scalar that never changes: an initializer, or a Constant layer's value. */
static bool scalar_of(const struct plan *p, uint32_t c, float *out)
{
	const struct wh_graph *g = p->g;
	if (c == WH_NONE)
		return false;
	if (g->values[c].flags & WH_VALUE_INITIALIZER) {
		const struct wh_tensor *t = &p->inits[c];
		if (!wh_value_present(t) || t->dtype != WH_DT_FLOAT || t->count != 1 || !t->data)
			return false;
		*out = *(const float *)t->data;
		return true;
	}
	uint32_t k = g->values[c].producer;
	if (k == WH_NONE || strcmp(g->nodes[k].op_type, "Constant") || g->nodes[k].domain[0])
		return false;
	const struct wh_attr *a = wh_node_attr(&g->nodes[k], "value");
	if (!a || a->type != WH_ATTR_TENSOR || !a->t || a->t->dtype != WH_DT_FLOAT || !a->t->data ||
	    a->t->data->size != sizeof(float))
		return false;
	for (int32_t d = 0; d < a->t->rank; d++)
		if (a->t->dims[d] != 1)
			return false;
	memcpy(out, a->t->data->data, sizeof(float));
	return true;
}

/* Node nid is op (a float binary layer at FP32) of value in and a constant scalar (*c),
 * with in first where the op does not commute. */
static bool scalar_op(const struct plan *p, uint32_t nid, const char *op, uint32_t in, float *c)
{
	const struct wh_node *n = &p->g->nodes[nid];
	if (strcmp(n->op_type, op) || n->domain[0] || n->n_inputs != 2 || n->n_outputs != 1 ||
	    n->outputs[0] == WH_NONE || !fusable_node(p, nid))
		return false;
	if (n->inputs[0] == in)
		return n->inputs[1] != in && scalar_of(p, n->inputs[1], c);
	return strcmp(op, "Div") && n->inputs[1] == in && scalar_of(p, n->inputs[0], c);
}

/* Value w, read by node nid alone, which nothing else keeps: its one reader's output. */
static uint32_t only_reader_out(const struct plan *p, const struct plan_readers *r, uint32_t w, uint32_t *nid)
{
	const struct wh_graph *g = p->g;
	if (w == WH_NONE || is_kept(g, w) || (g->values[w].flags & WH_VALUE_INPUT) || r->uses[w] != 1)
		return WH_NONE;
	*nid = r->first[w];
	return fusable_value(p, w, r->step[*nid]) ? w : WH_NONE;
}

/* A GELU exported as layers: its n layers and, per layer, the value it reads from the chain
 * (its skip value: absent when the producer applied the chain). */
struct gelu_chain {
	uint32_t nodes[5], reads[5];
	int n;
};

/* QuickGELU (CLIP): Mul(Sigmoid(Mul(v, c1)), v), d the inner Mul and o the outer. */
static uint32_t quick_gelu_of(const struct plan *p, const struct plan_readers *r, uint32_t v, uint32_t d, uint32_t o,
			      struct wh_epilogue *e, struct gelu_chain *ch)
{
	const struct wh_graph *g = p->g;
	struct wh_epilogue x = {.op = WH_EPILOGUE_OP_NONE, .chain = 3};
	uint32_t sn, mn;
	if (!scalar_op(p, d, "Mul", v, &x.c1))
		return WH_NONE;
	uint32_t dv = g->nodes[d].outputs[0];
	if (only_reader_out(p, r, dv, &sn) == WH_NONE)
		return WH_NONE;
	const struct wh_node *S = &g->nodes[sn];
	if (strcmp(S->op_type, "Sigmoid") || S->domain[0] || S->n_inputs != 1 || S->n_outputs != 1 ||
	    S->outputs[0] == WH_NONE || !fusable_node(p, sn))
		return WH_NONE;
	uint32_t sv = S->outputs[0];
	if (only_reader_out(p, r, sv, &mn) == WH_NONE || mn != o)
		return WH_NONE;
	const struct wh_node *M = &g->nodes[mn];
	if (strcmp(M->op_type, "Mul") || M->domain[0] || M->n_inputs != 2 || M->n_outputs != 1 ||
	    M->outputs[0] == WH_NONE || !fusable_node(p, mn) ||
	    !((M->inputs[0] == v && M->inputs[1] == sv) || (M->inputs[0] == sv && M->inputs[1] == v)))
		return WH_NONE;
	/* M reads v and the chain: skip it on the Sigmoid's output (absent only when fused) */
	*ch = (struct gelu_chain){{d, sn, mn}, {v, dv, sv}, 3};
	*e = x;
	return M->outputs[0];
}

/* GELU in its Erf form as exporters write it, reading v (read by two layers, nothing else):
 * D = Div(v, c1) or Mul(v, c1), E = Erf(D), A = Add(E, c2), then Mul(Mul(v, A), c3) or
 * Mul(Mul(v, c3), A); or QuickGELU, Mul(v, Sigmoid(Mul(v, c1))). Fills *e and *ch and
 * returns the last layer's output (WH_NONE: no such chain). */
static uint32_t gelu_chain_of(const struct plan *p, const struct plan_readers *r, uint32_t v, struct wh_epilogue *e,
			      struct gelu_chain *ch)
{
	const struct wh_graph *g = p->g;
	if (v == WH_NONE || r->uses[v] != 2 || is_kept(g, v) || (g->values[v].flags & WH_VALUE_INPUT))
		return WH_NONE;
	for (int pass = 0; pass < 2; pass++) {
		uint32_t d = pass ? r->second[v] : r->first[v], o = pass ? r->first[v] : r->second[v];
		uint32_t last = r->step[d] > r->step[o] ? r->step[d] : r->step[o];
		struct wh_epilogue x = {.op = WH_EPILOGUE_OP_NONE};
		if (d == o || p->last_use[v] != last)
			continue;
		uint32_t q = quick_gelu_of(p, r, v, d, o, e, ch);
		if (q != WH_NONE)
			return q;
		if (scalar_op(p, d, "Div", v, &x.c1))
			x.chain = 1;
		else if (scalar_op(p, d, "Mul", v, &x.c1))
			x.chain = 2;
		else
			continue;
		uint32_t dv = g->nodes[d].outputs[0], en, an, mn, m2;
		if (only_reader_out(p, r, dv, &en) == WH_NONE)
			continue;
		const struct wh_node *E = &g->nodes[en];
		if (strcmp(E->op_type, "Erf") || E->domain[0] || E->n_inputs != 1 || E->n_outputs != 1 ||
		    E->outputs[0] == WH_NONE || !fusable_node(p, en))
			continue;
		uint32_t ev = E->outputs[0];
		if (only_reader_out(p, r, ev, &an) == WH_NONE || !scalar_op(p, an, "Add", ev, &x.c2))
			continue;
		uint32_t av = g->nodes[an].outputs[0];
		if (only_reader_out(p, r, av, &mn) == WH_NONE)
			continue;
		const struct wh_node *M = &g->nodes[mn];
		if (strcmp(M->op_type, "Mul") || M->domain[0] || M->n_inputs != 2 || M->n_outputs != 1 ||
		    M->outputs[0] == WH_NONE || !fusable_node(p, mn))
			continue;
		uint32_t other = M->inputs[0] == av ? M->inputs[1] : M->inputs[0];
		if (other == av)
			continue;
		if (other == v && mn == o) {
			/* (v * A) * c3 */
			uint32_t mv = M->outputs[0];
			if (only_reader_out(p, r, mv, &m2) == WH_NONE || !scalar_op(p, m2, "Mul", mv, &x.c3))
				continue;
			*ch = (struct gelu_chain){{d, en, an, mn, m2}, {v, dv, ev, av, mv}, 5};
			*e = x;
			return g->nodes[m2].outputs[0];
		}
		/* (v * c3) * A: o is Mul(v, c3) whose output only M reads */
		uint32_t hn;
		if (!scalar_op(p, o, "Mul", v, &x.c3) || only_reader_out(p, r, g->nodes[o].outputs[0], &hn) == WH_NONE ||
		    hn != mn || other != g->nodes[o].outputs[0])
			continue;
		x.half_first = true;
		/* M reads both chain values: skip it on the Add's (absent only when fused) */
		*ch = (struct gelu_chain){{o, d, en, an, mn}, {v, v, dv, ev, av}, 5};
		*e = x;
		return M->outputs[0];
	}
	return WH_NONE;
}

static void take_chain(struct plan *p, uint32_t pid, const struct gelu_chain *ch, uint32_t out)
{
	p->fused_out[pid] = out;
	for (int k = 0; k < ch->n; k++)
		p->fused_skip[ch->nodes[k]] = ch->reads[k];
}

/* A MatMul (node pid) whose output only an Add of a float initializer B reads: the Add,
 * and the activation that alone reads the Add's output if there is one, run in the
 * MatMul's tiles (wh_epilogue.bias; the kernel checks at run time that B runs along the
 * last axis alone and the output is large enough, and otherwise leaves both to their
 * layers). The Add is skipped while the MatMul's output is absent, the activation while the
 * Add's is. With no activation taken, the MatMul writes the Add's output, and whatever
 * plan_fusions fuses into the Add runs there or as its own layers. */
static bool plan_bias_fusion(struct plan *p, const struct plan_readers *r, uint32_t pid)
{
	const struct wh_graph *g = p->g;
	const struct wh_node *pn = &g->nodes[pid];
	if (strcmp(pn->op_type, "MatMul") || pn->domain[0])
		return false;
	uint32_t v = pn->outputs[0], bid = r->first[v];
	const struct wh_node *bn = &g->nodes[bid];
	if (strcmp(bn->op_type, "Add") || bn->domain[0] || bn->n_inputs != 2 || bn->n_outputs != 1 ||
	    bn->outputs[0] == WH_NONE || !fusable_node(p, bid) || !fusable_value(p, v, r->step[bid]))
		return false;
	uint32_t c = bn->inputs[0] == v ? bn->inputs[1] : bn->inputs[0];
	if (c == v)
		return false;
	/* the bias may be an Identity of an initializer: exporters write one initializer and
	 * Identities for tensors equal to it (the zero biases of a freshly initialized model) */
	for (int hops = 0; hops < 8 && c != WH_NONE && !(g->values[c].flags & WH_VALUE_INITIALIZER); hops++) {
		uint32_t k = g->values[c].producer;
		if (k == WH_NONE || strcmp(g->nodes[k].op_type, "Identity") || g->nodes[k].domain[0] ||
		    g->nodes[k].n_inputs != 1 || !fusable_node(p, k))
			return false;
		c = g->nodes[k].inputs[0];
	}
	if (c == WH_NONE || !(g->values[c].flags & WH_VALUE_INITIALIZER) || !wh_value_present(&p->inits[c]) ||
	    p->inits[c].dtype != WH_DT_FLOAT)
		return false;
	uint32_t w = bn->outputs[0];
	struct wh_epilogue e = {.op = WH_EPILOGUE_OP_NONE};
	struct gelu_chain ch;
	uint32_t chain_out = gelu_chain_of(p, r, w, &e, &ch);
	bool act = chain_out == WH_NONE && !is_kept(g, w) && !(g->values[w].flags & WH_VALUE_INPUT) &&
		   r->uses[w] == 1 && activation_of(p, r, r->first[w], w, &e);
	e.bias = &p->inits[c];
	e.bias_only = !act && chain_out == WH_NONE;
	p->epi[pid] = e;
	p->fused_skip[bid] = v;
	if (chain_out != WH_NONE) {
		take_chain(p, pid, &ch, chain_out);
	} else if (act) {
		uint32_t aid = r->first[w];
		p->fused_out[pid] = g->nodes[aid].outputs[0];
		p->fused_skip[aid] = w;
	} else {
		p->fused_out[pid] = w;
	}
	return true;
}

/* Finds the activations that can run as their producer's epilogue (struct wh_epilogue):
 * node P's output 0 read by one activation A alone (Relu, Clip with constant bounds, ...),
 * or by a Sigmoid S and a Mul M of it and S's output alone (SiLU). The fused output goes to
 * A's (M's) value; A (S and M) are then skipped. Only kernels that finish their blocks
 * with wh_out_round_apply fuse (they set outputs_rounded); for any other the activation
 * runs as its own layer, as it does in runs that keep or report every tensor. */
static enum wh_status plan_fusions(struct plan *p, const struct plan_readers *r)
{
	const struct wh_graph *g = p->g;
	size_t nn = (size_t)g->n_nodes + 1;
	const uint32_t *uses = r->uses, *rd0 = r->first, *rd1 = r->second, *step = r->step;
	p->epi = calloc(nn, sizeof *p->epi);
	p->fused_out = malloc(nn * sizeof *p->fused_out);
	p->fused_skip = malloc(nn * sizeof *p->fused_skip);
	if (!p->epi || !p->fused_out || !p->fused_skip)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	for (uint32_t i = 0; i < nn; i++)
		p->fused_out[i] = p->fused_skip[i] = WH_NONE;
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t pid = p->order[s];
		const struct wh_node *pn = &g->nodes[pid];
		/* a MatMul's bias Add still fuses its own activation here: where the MatMul leaves
		 * the Add to its layer (ops/gemm.c), the Add applies it; the activation's skip
		 * (the Add's output absent) is the same either way */
		if (pn->n_outputs < 1 || !fusable_node(p, pid))
			continue;
		uint32_t v = pn->outputs[0];
		if (v == WH_NONE || is_kept(g, v) || (g->values[v].flags & WH_VALUE_INPUT))
			continue;
		if (uses[v] == 1 && plan_bias_fusion(p, r, pid))
			continue;
		if (uses[v] == 1) {
			uint32_t aid = rd0[v];
			const struct wh_node *a = &g->nodes[aid];
			const struct wh_tensor *consts[2] = {NULL, NULL};
			bool ok = a->n_inputs >= 1 && a->n_inputs <= 3 && a->inputs[0] == v && a->n_outputs == 1 &&
				  a->outputs[0] != WH_NONE && fusable_node(p, aid) && fusable_value(p, v, step[aid]);
			for (uint32_t k = 1; ok && k < a->n_inputs; k++) {
				uint32_t c = a->inputs[k];
				if (c == WH_NONE)
					continue;
				ok = c != v && (g->values[c].flags & WH_VALUE_INITIALIZER) && wh_value_present(&p->inits[c]);
				if (ok)
					consts[k - 1] = &p->inits[c];
			}
			if (ok && wh_epilogue_of(a, p->opsets[aid], consts, &p->epi[pid])) {
				p->fused_out[pid] = a->outputs[0];
				p->fused_skip[aid] = v;
			}
		} else if (uses[v] == 2) {
			struct gelu_chain ch;
			uint32_t out = gelu_chain_of(p, r, v, &p->epi[pid], &ch);
			if (out != WH_NONE) {
				take_chain(p, pid, &ch, out);
				continue;
			}
			/* SiLU: S = Sigmoid(v), M = Mul(v, S) or Mul(S, v) */
			uint32_t sid = rd0[v], mid = rd1[v];
			if (strcmp(g->nodes[sid].op_type, "Sigmoid"))
				sid = rd1[v], mid = rd0[v];
			const struct wh_node *sn = &g->nodes[sid], *mn = &g->nodes[mid];
			if (sid == mid || strcmp(sn->op_type, "Sigmoid") || strcmp(mn->op_type, "Mul") || sn->domain[0] ||
			    mn->domain[0] || sn->n_inputs != 1 || sn->n_outputs != 1 || mn->n_inputs != 2 || mn->n_outputs != 1 ||
			    mn->outputs[0] == WH_NONE || !fusable_node(p, sid) || !fusable_node(p, mid))
				continue;
			uint32_t sv = sn->outputs[0];
			if (!((mn->inputs[0] == v && mn->inputs[1] == sv) || (mn->inputs[0] == sv && mn->inputs[1] == v)) ||
			    uses[sv] != 1 || !fusable_value(p, sv, step[mid]) || !fusable_value(p, v, step[mid]))
				continue;
			if (wh_epilogue_of(sn, p->opsets[sid], NULL, &p->epi[pid])) {
				p->epi[pid].times_input = true;
				p->fused_out[pid] = mn->outputs[0];
				p->fused_skip[sid] = v;
				p->fused_skip[mid] = v;
			}
		}
	}
	return WH_OK;
}

/* Links the QDQ convolutions (executor/qdq.h); a linked Conv reads its 8-bit data input
 * itself, which then lives until the Conv's step. */
static enum wh_status plan_qdq(struct plan *p)
{
	const struct wh_graph *g = p->g;
	if (!(p->qdq = malloc(((size_t)g->n_nodes + 1) * sizeof *p->qdq)))
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	if (!wh_qdq_find(g, p->opsets, p->inits, p->qdq)) {
		free(p->qdq);
		p->qdq = NULL;
		return WH_OK;
	}
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t xq = p->qdq[p->order[s]].xq;
		if (xq != WH_NONE && (p->last_use[xq] == WH_NONE || p->last_use[xq] < s))
			p->last_use[xq] = s;
	}
	return WH_OK;
}

/* The 8-bit inputs of node nid when it runs as a QDQ convolution here: linked, on the CPU,
 * at FP32 with its DequantizeLinear producers; false otherwise. */
static bool qdq_inputs(const struct wh_frame *f, uint32_t nid, struct wh_qdq_inputs *q)
{
	const struct plan *p = f->plan;
	const struct wh_qdq_link *l = p->qdq ? &p->qdq[nid] : NULL;
	if (!l || l->dqx == WH_NONE || f->dv || !wh_value_present(&f->vals[l->xq]))
		return false;
	if (p->exec_prec)
		for (int i = 0; i < 3; i++) {
			uint32_t id = i == 0 ? nid : i == 1 ? l->dqx : l->dqw;
			if (p->exec_prec[id] != WH_PREC_FP32 || p->out_prec[id] != WH_PREC_FP32)
				return false;
		}
	*q = (struct wh_qdq_inputs){&f->vals[l->xq], &p->inits[l->xs], l->xz != WH_NONE ? &p->inits[l->xz] : NULL,
				    &p->inits[l->wq], &p->inits[l->ws], l->wz != WH_NONE ? &p->inits[l->wz] : NULL};
	return true;
}

/* A QuantizeLinear reading a linked Conv's output (or that of the activation fused into it)
 * alone, under plan_fusions' rules: the Conv writes its 8-bit output (wh_out_round.quant) and
 * it is skipped as a fused activation is. */
static enum wh_status plan_fuse_quant(struct plan *p, const struct plan_readers *r)
{
	const struct wh_graph *g = p->g;
	if (!p->qdq || !p->fused_out)
		return WH_OK;
	if (!(p->fq = calloc((size_t)g->n_nodes + 1, sizeof *p->fq)))
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	for (uint32_t pid = 0; pid < g->n_nodes; pid++) {
		const struct wh_node *pn = &g->nodes[pid];
		if (p->qdq[pid].dqx == WH_NONE || !fusable_node(p, pid))
			continue;
		bool act = p->fused_out[pid] != WH_NONE;
		uint32_t v = act ? p->fused_out[pid] : pn->outputs[0];
		if (v == WH_NONE || is_kept(g, v) || (g->values[v].flags & WH_VALUE_INPUT) || r->uses[v] != 1)
			continue;
		uint32_t qid = r->first[v];
		const struct wh_node *q = &g->nodes[qid];
		struct wh_requant rq;
		if (q->inputs[0] != v || !fusable_node(p, qid) || !fusable_value(p, v, r->step[qid]) ||
		    !wh_qdq_requant_of(g, p->inits, q, p->opsets[qid], &rq))
			continue;
		p->fq[pid] = (struct wh_qdq_fuse){rq, true, act};
		p->fused_out[pid] = q->outputs[0];
		p->fused_skip[qid] = v;
	}
	/* the data inputs' DequantizeLinears that only linked Convs read (as input 0), with an
	 * 8-bit input of known type (so that the Conv never falls back to the float path); not
	 * in a graph with subgraphs (which may read a value by name) */
	for (uint32_t i = 0; i < g->n_nodes; i++)
		if (wh_node_holds_graphs(&g->nodes[i]))
			return WH_OK;
	uint32_t *cnt = calloc((size_t)g->n_values + 1, sizeof *cnt);
	if (!cnt || !(p->dq_skip = calloc((size_t)g->n_nodes + 1, 1))) {
		free(cnt);
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	}
	for (uint32_t nid = 0; nid < g->n_nodes; nid++)
		if (p->qdq[nid].dqx != WH_NONE && fusable_node(p, nid))
			cnt[g->nodes[nid].inputs[0]]++;
	for (uint32_t nid = 0; nid < g->n_nodes; nid++) {
		const struct wh_qdq_link *l = &p->qdq[nid];
		if (l->dqx == WH_NONE || p->dq_skip[l->dqx])
			continue;
		uint32_t v = g->nodes[nid].inputs[0];
		enum wh_dtype xt = g->values[l->xq].dtype;
		if (cnt[v] == r->uses[v] && !is_kept(g, v) && !(g->values[v].flags & WH_VALUE_INPUT) &&
		    fusable_node(p, l->dqx) && (xt == WH_DT_UINT8 || xt == WH_DT_INT8))
			p->dq_skip[l->dqx] = 1;
	}
	free(cnt);
	return WH_OK;
}

static int cmp_blob(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(const struct wh_blob *const *)a, y = (uintptr_t)*(const struct wh_blob *const *)b;
	return x < y ? -1 : x > y;
}

/* Whether blob b holds an initializer of p (then it lives as long as the engine). */
static bool init_blob(const struct plan *p, const struct wh_blob *b)
{
	return p->n_init_blobs && bsearch(&b, p->init_blobs, p->n_init_blobs, sizeof *p->init_blobs, cmp_blob);
}

/* dflt: the precision of g's float layers the config does not name (the build's default for
 * the main graph, the container's for a body: executor/precision.h) */
static enum wh_status build_plan(struct wh_engine *e, const struct wh_graph *g, enum wh_precision dflt)
{
	enum wh_status st = WH_OK;
	struct plan *p = calloc(1, sizeof *p);
	if (!p)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	p->g = g;
	p->main = g == e->m->graph;
	size_t nn = (size_t)g->n_nodes + 1, nv = (size_t)g->n_values + 1;
	p->order = calloc(nn, sizeof *p->order);
	p->kernels = calloc(nn, sizeof *p->kernels);
	p->opsets = calloc(nn, sizeof *p->opsets);
	p->last_use = calloc(nv, sizeof *p->last_use);
	p->inits = calloc(nv, sizeof *p->inits);
	p->branch_seen = calloc(nn, 1);
	if (!p->order || !p->kernels || !p->opsets || !p->last_use || !p->inits || !p->branch_seen) {
		st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
		goto out;
	}
	if ((st = wh_graph_topo_order(g, p->order)) != WH_OK)
		goto out;
	p->const_budget = WH_CONST_CACHE_BYTES;
	p->const_tensor_max = WH_CONST_TENSOR_BYTES;
	if (g == e->m->graph && !e->precision && e->weight_cache_bytes >= 0) {
		int64_t wc = e->weight_cache_bytes ? e->weight_cache_bytes : WH_ENGINE_WEIGHT_CACHE_DEFAULT;
		if ((uint64_t)wc > p->const_budget)
			p->const_budget = p->const_tensor_max = (size_t)wc;
	}
	if (e->precision) {
		/* every graph's float layers take the build's precision: an If's branch and a
		 * Loop's or Scan's body too, as in a TensorRT build (their plans are built here) */
		p->exec_prec = calloc(nn, 1);
		p->out_prec = calloc(nn, 1);
		if (!p->exec_prec || !p->out_prec) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		if ((st = wh_precision_resolve_graph(e->m, g, e->precision, dflt, p->exec_prec, p->out_prec)) != WH_OK)
			goto out;
		int64_t wc = e->weight_cache_bytes;
		if ((st = wh_emul_cache_init(&p->emul, g->n_values, wc < 0 ? 0 : wc ? (size_t)wc : WH_EMUL_CACHE_DEFAULT_BYTES)) != WH_OK)
			goto out;
	}
	if (g == e->m->graph && e->gpu) {
		/* shape arithmetic and constants stay on the host (docs/gpu.md) */
		if (!(p->kinds = calloc(nn, 1))) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		if ((st = wh_model_layer_kinds(e->m, p->kinds)) != WH_OK)
			goto out;
	}
	if (g == e->m->graph && e->tactics) {
		if (!(p->pinned = calloc(nn, sizeof *p->pinned)) || !(p->gpu_tac = calloc(nn, sizeof *p->gpu_tac))) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
	}
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		p->opsets[i] = wh_model_opset(e->m, n->domain);
		if (!p->opsets[i])
			p->opsets[i] = 1;
		p->kernels[i] = wh_op_lookup(n->domain, n->op_type, p->opsets[i]);
		if (!p->kernels[i]) {
			st = wh_error(WH_ERR_UNSUPPORTED, "node '%s': op %s is not supported (internal: missed by the op scan)", n->name, n->op_type);
			goto out;
		}
		if (p->pinned && p->kernels[i]->n_tactics) {
			const struct wh_tactic_choice *ch = wh_tactic_plan_find(e->tactics, n->name);
			if (!ch) {
				if (e->tactics_strict) {
					st = wh_error(WH_ERR_NOT_FOUND, "layer '%s' (%s): not in the tactic replay (rebuild it, or load it without --strict-tactics)", n->name, n->op_type);
					goto out;
				}
				wh_warn("layer '%s' (%s): not in the tactic replay; it uses its default tactic", n->name, n->op_type);
				continue;
			}
			if (wh_gpu_tactic_name(ch->tactic)) {
				/* a GPU tactic: the module runs it by name (executor/gpu.h) */
				if (!e->gpu) {
					st = wh_error(WH_ERR_INVALID, "layer '%s' (%s): tactic '%s' in the replay is a GPU tactic (run with --device cuda, or rebuild the replay without it)",
						      n->name, n->op_type, ch->tactic);
					goto out;
				}
				p->gpu_tac[i] = ch->tactic;
				continue;
			}
			for (uint32_t t = 0; t < p->kernels[i]->n_tactics; t++)
				if (!strcmp(p->kernels[i]->tactics[t].name, ch->tactic))
					p->pinned[i] = &p->kernels[i]->tactics[t];
			if (!p->pinned[i]) {
				st = wh_error(WH_ERR_INVALID, "layer '%s' (%s): tactic '%s' in the replay does not exist for this op (list them with `whittle inspect --tactics`)", n->name, n->op_type, ch->tactic);
				goto out;
			}
		}
	}
	for (uint32_t v = 0; v < g->n_values; v++)
		p->n_outer += (g->values[v].flags & WH_VALUE_OUTER) != 0;
	if (p->n_outer && !(p->outer = malloc(p->n_outer * sizeof *p->outer))) {
		st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
		goto out;
	}
	for (uint32_t v = 0, k = 0; v < g->n_values && p->n_outer; v++)
		if (g->values[v].flags & WH_VALUE_OUTER)
			p->outer[k++] = v;
	for (uint32_t v = 0; v < g->n_values; v++) {
		p->last_use[v] = WH_NONE;
		const struct wh_value *val = &g->values[v];
		if ((val->flags & WH_VALUE_INITIALIZER) && val->data) {
			int64_t dims[WH_MAX_RANK];
			for (int32_t d = 0; d < val->rank; d++)
				dims[d] = val->dims[d].value;
			if ((st = wh_tensor_from_raw(&p->inits[v], val->dtype, val->rank, dims, val->data)) != WH_OK) {
				st = wh_error(st, "initializer '%s': %s", val->name, wh_error_message());
				goto out;
			}
		}
	}
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		const struct wh_node *n = &g->nodes[p->order[s]];
		for (uint32_t k = 0; k < n->n_inputs; k++)
			if (n->inputs[k] != WH_NONE)
				p->last_use[n->inputs[k]] = s;
	}
	/* values read by subgraphs by name must live until the node owning the subgraph ran:
	 * a subgraph's outer reference counts as a use by that node */
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t nid = p->order[s];
		const struct wh_node *n = &g->nodes[nid];
		bool container = false;
		for (uint32_t a = 0; a < n->n_attrs; a++) {
			const struct wh_attr *at = &n->attrs[a];
			size_t cnt = wh_attr_graph_count(at);
			for (size_t k = 0; k < cnt; k++) {
				const struct wh_graph *sg = wh_attr_graph(at, k);
				if (!sg)
					continue;
				/* any name the subgraph (or its nested subgraphs) captures */
				extend_captures(g, sg, p->last_use, s);
				container = true;
				if ((st = build_plan(e, sg, p->exec_prec ? (enum wh_precision)p->exec_prec[nid] : WH_PREC_FP32)) != WH_OK)
					goto out;
			}
		}
		/* a container's precision went to its bodies; it rounds nothing itself */
		if (container && p->exec_prec)
			p->exec_prec[nid] = p->out_prec[nid] = WH_PREC_FP32;
	}
	if (p->kinds) {
		if (!(p->init_blobs = calloc(nv, sizeof *p->init_blobs))) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		for (uint32_t v = 0; v < g->n_values; v++)
			if (p->inits[v].blob)
				p->init_blobs[p->n_init_blobs++] = p->inits[v].blob;
		qsort(p->init_blobs, p->n_init_blobs, sizeof *p->init_blobs, cmp_blob);
	}
	if ((st = plan_qdq(p)) != WH_OK)
		goto out;
	struct plan_readers readers = {0};
	if ((st = plan_readers_init(p, &readers)) != WH_OK)
		goto out;
	if ((st = plan_fusions(p, &readers)) == WH_OK && (st = plan_fuse_quant(p, &readers)) == WH_OK &&
	    (st = plan_constants(p)) == WH_OK)
		st = plan_concats(p, &readers);
	plan_readers_release(&readers);
	if (st != WH_OK)
		goto out;
	if (e->n_plans == e->cap_plans) {
		uint32_t cap = e->cap_plans ? e->cap_plans * 2 : 4;
		struct plan **np = realloc(e->plans, cap * sizeof *np);
		if (!np) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto out;
		}
		e->plans = np;
		e->cap_plans = cap;
	}
	e->plans[e->n_plans++] = p;
	return WH_OK;
out:
	plan_destroy(p);
	return st;
}

static struct plan *find_plan(const struct wh_engine *e, const struct wh_graph *g)
{
	for (uint32_t i = 0; i < e->n_plans; i++)
		if (e->plans[i]->g == g)
			return e->plans[i];
	return NULL;
}

static enum wh_status engine_create(const struct wh_model *m, const struct wh_engine_options *opt,
				    const struct wh_tactic_chooser *chooser, struct wh_engine **out)
{
	char names[2048];
	uint32_t n_unsup = wh_model_unsupported_ops(m, names, sizeof names);
	if (n_unsup)
		return wh_error(WH_ERR_UNSUPPORTED, "model: uses %u op%s whittle cannot run: %s (reduce it with an external --check, or extract the part whittle supports)",
				n_unsup, n_unsup > 1 ? "s" : "", names);
	struct wh_engine *e = calloc(1, sizeof *e);
	if (!e)
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	e->m = m;
	e->cpu = wh_cpu();
	e->precision = opt ? opt->precision : NULL;
	e->tactics = opt && !chooser ? opt->tactics : NULL;
	e->tactics_strict = opt && opt->tactics_strict;
	e->allow_reduced = opt && opt->allow_reduced_reduction;
	e->weight_cache_bytes = opt ? opt->weight_cache_bytes : 0;
	if (chooser)
		e->chooser = *chooser;
	if (opt && opt->faulty_tactic && *opt->faulty_tactic) {
		const char *colon = strchr(opt->faulty_tactic, ':');
		size_t len = colon ? (size_t)(colon - opt->faulty_tactic) : strlen(opt->faulty_tactic);
		snprintf(e->faulty_tactic, sizeof e->faulty_tactic, "%.*s", (int)len, opt->faulty_tactic);
		if (colon)
			snprintf(e->faulty_layer, sizeof e->faulty_layer, "%s", colon + 1);
	}
	enum wh_status st = wh_threadpool_create(opt ? opt->threads : 0, &e->pool);
	if (st == WH_OK)
		st = wh_gemm_packs_create(e->weight_cache_bytes, &e->packs);
	if (st == WH_OK)
		st = wh_blob_cache_create(WH_ENGINE_BLOB_CACHE_BYTES, &e->blobs);
	if (st == WH_OK && opt && opt->cuda && (st = wh_gpu_get(opt->cuda_device, &e->gpu)) == WH_OK && e->tactics &&
	    e->tactics->device[0] && strcmp(e->tactics->device, wh_gpu_ident(e->gpu)))
		wh_warn("the tactic replay was recorded on %s; this is %s: its GPU tactics run where they still exist, and one that does not stops the run (rebuild the replay here)",
			e->tactics->device, wh_gpu_ident(e->gpu));
	if (st == WH_OK && opt && opt->cuda && e->gpu) {
		st = wh_gpu_weights_create(e->gpu, &e->gpu_weights);
		const char *gr = getenv("WHITTLE_CUDA_GRAPHS");
		e->gpu_graph_off = gr && !strcmp(gr, "0");
	}
	if (st == WH_OK)
		st = build_plan(e, m->graph, e->precision ? e->precision->dflt : WH_PREC_FP32);
	if (st == WH_OK && opt && opt->profile) {
		e->prof = calloc((size_t)m->graph->n_nodes + 1, sizeof *e->prof);
		if (!e->prof)
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	}
	if (st != WH_OK) {
		wh_engine_destroy(e);
		return st;
	}
	*out = e;
	return WH_OK;
}

enum wh_status wh_engine_create(const struct wh_model *m, const struct wh_engine_options *opt,
				struct wh_engine **out)
{
	return engine_create(m, opt, NULL, out);
}

enum wh_status wh_engine_create_for_build(const struct wh_model *m, const struct wh_engine_options *opt,
					  const struct wh_tactic_chooser *chooser, struct wh_engine **out)
{
	return engine_create(m, opt, chooser, out);
}

void wh_engine_destroy(struct wh_engine *e)
{
	if (!e)
		return;
	for (uint32_t i = 0; i < e->n_plans; i++)
		plan_destroy(e->plans[i]);
	free(e->plans);
	wh_threadpool_destroy(e->pool);
	wh_gemm_packs_destroy(e->packs);
	wh_blob_cache_destroy(e->blobs);
	wh_gpu_graph_destroy(e->gpu_graph);
	wh_gpu_weights_destroy(e->gpu_weights);
	free(e->prof);
	free(e);
}

bool wh_engine_gpu_stats(const struct wh_engine *e, struct wh_engine_gpu_stats *out)
{
	memset(out, 0, sizeof *out);
	out->copy_gbps = -1;
	if (!e || !e->gpu)
		return false;
	out->weights_fmt_bytes = wh_gpu_weights_fmt_bytes(e->gpu_weights);
	out->weights_device_bytes = wh_gpu_weights_bytes(e->gpu_weights);
	out->copy_gbps = wh_gpu_copy_gbps(e->gpu, (size_t)256 << 20);
	wh_gpu_start_times(e->gpu, out->start, sizeof out->start);
	return true;
}

size_t wh_engine_weight_cache_bytes(const struct wh_engine *e)
{
	size_t n = 0;
	for (uint32_t i = 0; e && i < e->n_plans; i++)
		n += e->plans[i]->emul.bytes;
	return n;
}

const struct wh_layer_profile *wh_engine_profile(const struct wh_engine *e, uint32_t *n_out)
{
	*n_out = e && e->prof ? e->n_prof : 0;
	return *n_out ? e->prof : NULL;
}

/* 2 x the multiply-adds of a Conv, ConvTranspose, MatMul or Gemm node that just ran (from
 * its inputs' and first output's shapes); 0 for other ops or shapes it cannot tell. */
static double node_flops(const struct wh_kernel_ctx *ctx)
{
	const char *op = ctx->node->op_type;
	const struct wh_tensor *a = wh_kin(ctx, 0) ? wh_kin(ctx, 0) : ctx->qdq ? ctx->qdq->xq : NULL, *b = wh_kin(ctx, 1);
	const struct wh_tensor *y = ctx->n_outputs ? &ctx->outputs[0] : NULL;
	if (!a || !b || !y || !wh_value_is_tensor(a) || !wh_value_is_tensor(b) || !wh_value_is_tensor(y) || !wh_value_present(y))
		return 0;
	if (!strcmp(op, "Conv") && b->rank >= 3)
		/* each output element: C/group x kernel window multiply-adds */
		return 2.0 * (double)y->count * (double)(b->count / (uint64_t)(b->dims[0] ? b->dims[0] : 1));
	if (!strcmp(op, "ConvTranspose") && b->rank >= 3)
		/* each input element meets M/group x kernel window weights */
		return 2.0 * (double)a->count * (double)(b->count / (uint64_t)(b->dims[0] ? b->dims[0] : 1));
	if (!strcmp(op, "MatMul") && a->rank >= 1)
		return 2.0 * (double)y->count * (double)a->dims[a->rank - 1];
	if (!strcmp(op, "Gemm") && a->rank == 2)
		return 2.0 * (double)y->count * (double)a->dims[wh_node_attr_int(ctx->node, "transA", 0) ? 0 : 1];
	return 0;
}


/* ---- execution ---- */

/* Fault injection (WHITTLE_FAULTY_TACTIC): deterministically corrupts the float outputs of
 * a node, to test the flaky-tactic loop. */
static void corrupt_outputs(struct wh_kernel_ctx *ctx)
{
	for (uint32_t k = 0; k < ctx->n_outputs; k++) {
		struct wh_tensor *y = &ctx->outputs[k];
		if (y->dtype != WH_DT_FLOAT)
			continue;
		float *d = y->data;
		/* every 16th element pushed off by 10 % of its magnitude plus 0.05: wrong
		 * enough for any accuracy check, yet finite */
		for (uint64_t i = 0; i < y->count; i += 16)
			d[i] += 0.05f + 0.1f * fabsf(d[i]);
	}
}

/* Empties a value slot. wh_tensor_release clears the whole struct (a `rep stos` of 176
 * bytes, slow to start: it was 5 % of a 0.16 ms model's run when done for every slot of every
 * step); a slot holding no sequence only needs its blob dropped and the fields that say what
 * it holds cleared, down to the dimensions it used, which leaves it all zero as before. */
static inline void slot_clear(struct wh_tensor *t)
{
	if (t->seq) {
		wh_tensor_release(t);
		return;
	}
	wh_blob_release(t->blob);
	int32_t rank = t->rank > 0 && t->rank <= WH_MAX_RANK ? t->rank : 0;
	for (int32_t d = 0; d < rank; d++)
		t->dims[d] = 0;
	t->dtype = WH_DT_UNDEFINED;
	t->rank = 0;
	t->count = 0;
	t->blob = NULL;
	t->data = NULL;
	t->kind = 0;
	t->elem = 0;
}

/* Whether a slot holds or says anything (a kernel may have set a shape it never filled). */
static inline bool slot_used(const struct wh_tensor *t)
{
	return t->dtype || t->rank || t->count || t->blob || t->data || t->kind || t->elem || t->seq;
}

static void frame_release(struct wh_frame *f)
{
	wh_gpu_vals_destroy(f->dv);
	f->dv = NULL;
	if (!f->vals)
		return;
	struct plan *p = f->plan;
	const struct wh_graph *g = p->g;
	/* the initializers' slots keep their references for the next frame (unless something
	 * else was bound there: a graph input that has an initializer as its default); every
	 * other slot is emptied */
	for (uint32_t v = 0; v < g->n_values; v++) {
		struct wh_tensor *t = &f->vals[v];
		if (p->inits[v].dtype) {
			if (t->blob != p->inits[v].blob || t->data != p->inits[v].data || t->dtype != p->inits[v].dtype ||
			    t->rank != p->inits[v].rank || t->seq || t->kind != WH_VALUE_TENSOR)
				wh_tensor_ref(t, &p->inits[v]);
		} else if (slot_used(t)) {
			slot_clear(t);
		}
	}
	if (!p->spare_vals) {
		p->spare_vals = f->vals;
	} else {
		for (uint32_t v = 0; v < g->n_values; v++)
			if (f->vals[v].blob || f->vals[v].seq)
				wh_tensor_release(&f->vals[v]);
		free(f->vals);
	}
	f->vals = NULL;
}

static enum wh_status frame_init(struct wh_frame *f, struct wh_engine *e, struct plan *p,
				 const struct wh_frame *parent)
{
	f->e = e;
	f->plan = p;
	f->parent = parent;
	const struct wh_graph *g = p->g;
	if (p->spare_vals) {
		/* the last frame's array: initializers bound, every other slot empty */
		f->vals = p->spare_vals;
		p->spare_vals = NULL;
	} else {
		f->vals = calloc((size_t)g->n_values + 1, sizeof *f->vals);
		if (!f->vals)
			return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
		for (uint32_t v = 0; v < g->n_values; v++)
			if (p->inits[v].dtype)
				wh_tensor_ref(&f->vals[v], &p->inits[v]);
	}
	if (e->gpu && !parent) {
		enum wh_status st = wh_gpu_vals_create(e->gpu, e->gpu_weights, g->n_values, &f->dv);
		if (st != WH_OK)
			return st;
	}
	/* the values captured from enclosing graphs (listed once per plan: a subgraph of a
	 * large body runs per iteration), bound by name from the nearest frame that has one */
	for (uint32_t i = 0; i < p->n_outer; i++) {
		uint32_t v = p->outer[i];
		const char *name = g->values[v].name;
		for (const struct wh_frame *q = parent; q; q = q->parent) {
			uint32_t id = wh_graph_find_value(q->plan->g, name);
			if (id != WH_NONE && wh_value_present(&q->vals[id])) {
				wh_tensor_ref(&f->vals[v], &q->vals[id]);
				break;
			}
		}
	}
	return WH_OK;
}

/* A build's step on the GPU (executor/build-internal.h): runs the layer's default tactic
 * asking for its list of GPU tactics, lets the chooser time them (each run replaces the
 * outputs' device copies) and runs the chosen one last, so its outputs are what the layers
 * after it read. */
struct gpu_timing {
	struct wh_frame *f;
	struct wh_gpu_step gs;
	struct wh_tensor *outs;
	uint32_t n_slots;
};

static int cmp_ms(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static enum wh_status gpu_time(void *state, const char *tactic, int reps, double *ms)
{
	struct gpu_timing *t = state;
	double runs[64];
	if (reps < 1)
		reps = 1;
	if (reps > 64)
		reps = 64;
	struct wh_gpu_step gs = t->gs;
	gs.tactic = tactic;
	gs.list = NULL;
	gs.list_n = NULL;
	gs.timed = true;
	for (int r = -1; r < reps; r++) {
		bool ran = false;
		for (uint32_t k = 0; k < t->n_slots; k++)
			if (slot_used(&t->outs[k]))
				slot_clear(&t->outs[k]);
		enum wh_status st = wh_gpu_run_step(t->f->dv, &gs, t->f->vals, t->outs, &ran);
		double x = wh_gpu_vals_step_ms(t->f->dv);
		if (st != WH_OK)
			return st;
		if (!ran)
			return wh_error(WH_ERR_INTERNAL, "node '%s' (%s): the GPU declined tactic '%s' it listed", gs.n->name, gs.n->op_type, tactic);
		if (r >= 0)
			runs[r] = x < 0 ? 0 : x;
	}
	qsort(runs, (size_t)reps, sizeof *runs, cmp_ms);
	*ms = runs[reps / 2];
	return WH_OK;
}

static enum wh_status gpu_build_step(struct wh_frame *f, const struct wh_gpu_step *gs0, const struct wh_kernel_ctx *ctx,
				     struct wh_tensor *outs, uint32_t n_slots, bool *on_gpu)
{
	struct whcu_tactic list[WHCU_MAX_TACTICS];
	uint32_t n = 0;
	struct gpu_timing t = {.f = f, .gs = *gs0, .outs = outs, .n_slots = n_slots};
	t.gs.list = list;
	t.gs.list_n = &n;
	enum wh_status st = wh_gpu_run_step(f->dv, &t.gs, f->vals, outs, on_gpu);
	t.gs.list = NULL;
	t.gs.list_n = NULL;
	if (st != WH_OK || !*on_gpu || !n)
		return st;
	struct wh_gpu_timer timer = {gpu_time, &t};
	uint32_t pick = 0;
	if ((st = f->e->chooser.choose_gpu(f->e->chooser.state, ctx, t.gs.exec, wh_gpu_ident(f->e->gpu), list, n, &timer, &pick)) != WH_OK)
		return st;
	if (pick >= n)
		pick = 0;
	for (uint32_t k = 0; k < n_slots; k++)
		if (slot_used(&outs[k]))
			slot_clear(&outs[k]);
	t.gs.tactic = list[pick].name;
	st = wh_gpu_run_step(f->dv, &t.gs, f->vals, outs, on_gpu);
	if (st == WH_OK && !*on_gpu)
		st = wh_error(WH_ERR_INTERNAL, "node '%s' (%s): the GPU declined tactic '%s' it listed", gs0->n->name, gs0->n->op_type, list[pick].name);
	return st;
}

/* The profile row of a kept constant layer's step that did not run its kernel. */
static void prof_constant(struct wh_engine *e, struct wh_layer_profile *lp, const struct wh_node *n, uint32_t s,
			  double t0)
{
	if (!lp)
		return;
	lp->name = n->name;
	lp->op_type = n->op_type;
	lp->tactic = "constant";
	lp->flops = 0;
	lp->device = "cpu";
	lp->h2d_bytes = lp->d2h_bytes = 0;
	e->n_prof = s + 1;
	lp->ms = (wh_os_now_s() - t0) * 1e3;
}

static enum wh_status frame_execute(struct wh_frame *f, bool keep_all)
{
	const struct plan *p = f->plan;
	const struct wh_graph *g = p->g;
	enum wh_status st = WH_OK;
	const struct wh_tensor *ins_fixed[16];
	struct wh_tensor outs_fixed[8];
	bool wanted_fixed[8];
	/* the fixed slots are emptied once here and left empty by every step (slot_clear) */
	for (uint32_t k = 0; k < 8; k++)
		wh_tensor_init(&outs_fixed[k]);
	/* activations run as their producer's epilogue (plan_fusions), except where every tensor
	 * is kept or reported, while a build times tactics layer by layer, and where a tactic is
	 * made faulty (it corrupts the producer's own output) */
	bool fuse = p->fused_out && !keep_all && !f->each && !f->e->chooser.choose && !f->e->faulty_tactic[0] && !f->dv;
	/* this run's outputs of the in-place Concats (plan_concats), made at the first write */
	struct wh_tensor cbuf_fixed[8], *cbuf = cbuf_fixed;
	uint32_t n_cbuf = fuse ? p->n_concats : 0;
	if (n_cbuf > 8 && !(cbuf = calloc(n_cbuf, sizeof *cbuf)))
		n_cbuf = 0; /* nothing placed: every Concat copies */
	for (uint32_t k = 0; k < n_cbuf && cbuf == cbuf_fixed; k++)
		wh_tensor_init(&cbuf[k]);
	/* cached constant layers in a run that reports no tensors: their outputs are placed
	 * directly (those only other such layers read, not at all: plan_quiet) */
	if (p->quiet_stale && p->const_node)
		plan_quiet((struct plan *)p);
	bool quiet = p->const_quiet && !keep_all && !f->each && !f->dv && !f->e->chooser.choose && !f->e->chooser.choose_gpu;
	for (uint32_t s = 0; s < g->n_nodes; s++) {
		uint32_t nid = p->order[s];
		const struct wh_node *n = &g->nodes[nid];
		/* a layer's time is its whole step: binding, the kernel, freeing what it last read */
		struct wh_layer_profile *lp = f->e->prof && !f->parent ? &f->e->prof[s] : NULL;
		double t0 = lp ? wh_os_now_s() : 0;
		bool on_gpu = false; /* the step ran on the GPU (below) */
		const char *gpu_tactic = NULL; /* the pinned GPU tactic it ran */
		struct wh_tensor slice; /* a Concat's slice offered to this node (below) */
		bool have_slice = false; /* (kept uninitialised otherwise: a struct clear per step shows) */
		/* done by its producer: what it read was never stored, what it writes is there;
		 * whatever else it reads is constant */
		if (fuse && ((p->fused_skip[nid] != WH_NONE && !wh_value_present(&f->vals[p->fused_skip[nid]])) ||
			     (p->dq_skip && p->dq_skip[nid]))) {
			if (lp) {
				lp->name = n->name;
				lp->op_type = n->op_type;
				lp->tactic = "fused";
				lp->flops = 0;
				f->e->n_prof = s + 1;
				lp->ms = (wh_os_now_s() - t0) * 1e3;
			}
			continue;
		}
		if (quiet && p->const_quiet[nid]) {
			/* skipped without reading the node (plan_quiet): a per-step cost otherwise,
			 * in cache misses on the graph, for shape arithmetic of hundreds of layers */
			prof_constant(f->e, lp, n, s, t0);
			continue;
		}
		if (quiet && p->const_node[nid] == CONST_CACHED) {
			/* its inputs are not bound (a skipped layer's are absent), its outputs are
			 * the kept ones; what it read last is released as after any step */
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				uint32_t v = n->outputs[k];
				if (v == WH_NONE || (p->last_use[v] == WH_NONE && !is_kept(g, v)))
					continue;
				if (slot_used(&f->vals[v]))
					slot_clear(&f->vals[v]);
				wh_tensor_ref(&f->vals[v], &p->const_vals[p->const_slot[v]]);
			}
			for (uint32_t k = 0; k < n->n_inputs; k++) {
				uint32_t v = n->inputs[k];
				if (v != WH_NONE && p->last_use[v] == s && !is_kept(g, v) && !(g->values[v].flags & WH_VALUE_INPUT) &&
				    slot_used(&f->vals[v]))
					slot_clear(&f->vals[v]);
			}
			prof_constant(f->e, lp, n, s, t0);
			continue;
		}
		const struct wh_tensor **ins = ins_fixed;
		struct wh_tensor *outs = outs_fixed;
		bool *wanted = wanted_fixed;
		uint32_t n_slots = 0; /* output slots that may be used (emptied at step_out) */
		if (n->n_inputs > 16)
			ins = calloc(n->n_inputs, sizeof *ins);
		if (n->n_outputs > 8) {
			/* calloc: empty slots */
			outs = calloc(n->n_outputs, sizeof *outs);
			wanted = calloc(n->n_outputs, sizeof *wanted);
		}
		if (!ins || !outs || !wanted) {
			st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
			goto step_out;
		}
		for (uint32_t k = 0; k < n->n_inputs; k++) {
			uint32_t v = n->inputs[k];
			ins[k] = (v != WH_NONE && wh_value_present(&f->vals[v])) ? &f->vals[v] : NULL;
			/* a QDQ Conv reads its 8-bit input itself (its DequantizeLinear skipped) */
			if (v != WH_NONE && !ins[k] &&
			    !(fuse && k == 0 && p->dq_skip && p->qdq[nid].dqx != WH_NONE && p->dq_skip[p->qdq[nid].dqx])) {
				st = wh_error(WH_ERR_INTERNAL, "node '%s' (%s): input '%s' has no value (was it computed?)", n->name, n->op_type, g->values[v].name);
				goto step_out;
			}
		}
		/* a kernel may write the outputs its op defines even where the (bad) model lists
		 * fewer: every slot starts empty and unwanted, and is released below */
		n_slots = n->n_outputs > 8 ? n->n_outputs : 8;
		for (uint32_t k = 0; k < n_slots; k++)
			wanted[k] = k < n->n_outputs && n->outputs[k] != WH_NONE;
		for (uint32_t k = 0; k < n->n_inputs && !p->kernels[nid]->any_value; k++)
			if (ins[k] && !wh_value_is_tensor(ins[k])) {
				st = wh_error(WH_ERR_INVALID, "node '%s' (%s): input '%s' is a %s, and this op takes tensors (fix the model)",
					      n->name, n->op_type, g->values[n->inputs[k]].name, wh_value_kind_name(ins[k]));
				goto step_out;
			}
		struct wh_kernel_ctx ctx = {
			.model = f->e->m,
			.graph = g,
			.node = n,
			.opset = p->opsets[nid],
			.n_inputs = n->n_inputs,
			.inputs = ins,
			.n_outputs = n->n_outputs,
			.outputs = outs,
			.output_wanted = wanted,
			.pool = f->e->pool,
			.cpu = f->e->cpu,
			.frame = f,
			.packs = f->e->packs,
		};
		/* only where the kernel reads the kept tensors themselves: an emulated layer reads
		 * rounded copies, made anew (and at reused addresses) each run */
		if (p->const_node && (!p->exec_prec || (p->exec_prec[nid] == WH_PREC_FP32 && p->out_prec[nid] == WH_PREC_FP32)))
			for (uint32_t k = 0; k < n->n_inputs && k < 32; k++) {
				uint32_t v = n->inputs[k], prod = v != WH_NONE ? g->values[v].producer : WH_NONE;
				if (prod != WH_NONE && p->const_node[prod] == CONST_CACHED)
					ctx.const_inputs |= 1u << k;
			}
		/* a Concat input this node writes: its slice of the Concat's output, when the last
		 * run says where; the kernel takes it if the shape is the same */
		uint32_t ci = n_cbuf && p->place_concat[nid] != WH_NONE ? p->place_concat[nid] : WH_NONE;
		if (ci != WH_NONE && p->concats[ci].known && p->concats[ci].misses < 2) {
			const struct concat_plan *cp = &p->concats[ci];
			uint32_t k = p->place_input[nid];
			if (!cbuf[ci].blob && wh_tensor_alloc(&cbuf[ci], cp->dt, cp->rank, cp->out_dims) != WH_OK)
				wh_tensor_release(&cbuf[ci]); /* no room: the Concat copies */
			if (cbuf[ci].blob) {
				wh_tensor_init(&slice);
				have_slice = true;
				slice.dtype = cp->dt;
				slice.kind = WH_VALUE_TENSOR;
				slice.rank = cp->rank;
				memcpy(slice.dims, cp->in_dims[k], sizeof slice.dims);
				wh_shape_count(slice.dims, slice.rank, &slice.count);
				slice.blob = wh_blob_retain(cbuf[ci].blob);
				slice.data = (char *)cbuf[ci].data + cp->offset[k] * wh_dtype_size(cp->dt);
				ctx.place_out = &slice;
			}
		}
		/* a Concat whose inputs all landed in this run's output: nothing to copy */
		bool in_place = false;
		uint32_t cj = n_cbuf ? p->concat_index[nid] : WH_NONE;
		if (cj != WH_NONE && cbuf[cj].blob) {
			const struct concat_plan *cp = &p->concats[cj];
			size_t esz = wh_dtype_size(cp->dt);
			in_place = true;
			for (uint32_t k = 0; in_place && k < n->n_inputs; k++)
				in_place = ins[k] && ins[k]->blob == cbuf[cj].blob && ins[k]->dtype == cp->dt &&
					   ins[k]->data == (char *)cbuf[cj].data + cp->offset[k] * esz &&
					   !memcmp(ins[k]->dims, cp->in_dims[k], (size_t)cp->rank * sizeof(int64_t));
		}
		/* on the GPU when the module takes it (executor/gpu.h); otherwise every input the
		 * CPU kernel reads gets a host copy first */
		if (f->dv) {
			bool subgraph = wh_node_holds_graphs(n);
			if (!subgraph && p->const_node[nid] == CONST_NO && !ctx.tactic && !(p->pinned && p->pinned[nid]) &&
			    (!f->e->chooser.choose || f->e->chooser.choose_gpu)) {
				bool pers_fixed[16], *pers = n->n_inputs <= 16 ? pers_fixed : calloc(n->n_inputs, sizeof *pers);
				if (!pers) {
					st = wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
					goto step_out;
				}
				for (uint32_t k = 0; k < n->n_inputs; k++) {
					uint32_t v = n->inputs[k];
					uint32_t prod = v != WH_NONE ? g->values[v].producer : WH_NONE;
					pers[k] = v != WH_NONE && ins[k] && ins[k]->blob &&
						  ((prod != WH_NONE && p->const_node[prod] == CONST_CACHED) || init_blob(p, ins[k]->blob));
				}
				struct wh_gpu_step gs = {
					.g = g,
					.n = n,
					.opset = p->opsets[nid],
					.exec = p->exec_prec ? p->exec_prec[nid] : WH_PREC_FP32,
					.out = p->out_prec ? p->out_prec[nid] : WH_PREC_FP32,
					.fp16_accumulate = f->e->precision && f->e->precision->fp16_accumulate,
					.persistent = pers,
					.wanted = wanted,
					.timed = lp != NULL,
					.host_only = p->kinds && (p->kinds[nid] == WH_LAYER_SHAPE || p->kinds[nid] == WH_LAYER_CONST),
					.tactic = p->gpu_tac ? p->gpu_tac[nid] : NULL,
					.allow_reduced = f->e->allow_reduced,
				};
				if (f->e->chooser.choose_gpu && g == f->e->m->graph && p->kernels[nid]->n_tactics)
					st = gpu_build_step(f, &gs, &ctx, outs, n_slots, &on_gpu);
				else
					st = wh_gpu_run_step(f->dv, &gs, f->vals, outs, &on_gpu);
				if (st == WH_OK && gs.tactic && !on_gpu)
					st = wh_error(WH_ERR_INVALID, "layer '%s' (%s): the replay pins GPU tactic '%s', and the GPU does not run this layer here (rebuild the tactic replay)",
						      n->name, n->op_type, gs.tactic);
				if (st == WH_OK && on_gpu && gs.tactic)
					gpu_tactic = gs.tactic;
				if (pers != pers_fixed)
					free(pers);
				if (st != WH_OK)
					goto step_out;
			}
			bool meta_only = !n->domain[0] && (!strcmp(n->op_type, "Shape") || !strcmp(n->op_type, "Size"));
			for (uint32_t k = 0; !on_gpu && k < n->n_inputs; k++) {
				uint32_t v = n->inputs[k];
				if (v != WH_NONE && !(meta_only && k == 0) && (st = wh_gpu_vals_to_host(f->dv, v, &f->vals[v])) != WH_OK)
					goto step_out;
				/* a graph input's data read off the GPU: a CUDA graph could not repeat it */
				if (v != WH_NONE && !(meta_only && k == 0) && (g->values[v].flags & WH_VALUE_INPUT) &&
				    !(g->values[v].flags & WH_VALUE_INITIALIZER))
					wh_gpu_vals_taint(f->dv);
			}
			if (!on_gpu && subgraph)
				for (uint32_t v = 0; v < g->n_values; v++)
					if ((st = wh_gpu_vals_to_host(f->dv, v, &f->vals[v])) != WH_OK)
						goto step_out;
		}
		wh_kernel_fn run = p->kernels[nid]->run;
		bool fused = false; /* the kernel applied p->epi[nid]: output 0 is the activation's */
		bool constant = false; /* outputs taken from the plan's constants */
		ctx.precision = p->exec_prec ? p->exec_prec[nid] : WH_PREC_FP32;
		struct wh_qdq_inputs qdq;
		if (qdq_inputs(f, nid, &qdq)) {
			/* its tactic is the integer one (the float tactics are not eligible) */
			ctx.qdq = &qdq;
			for (uint32_t t = 0; t < p->kernels[nid]->n_tactics && !ctx.tactic; t++) {
				const struct wh_tactic *tc = &p->kernels[nid]->tactics[t];
				if (tc->eligible && tc->eligible(&ctx))
					ctx.tactic = tc;
			}
			run = ctx.tactic ? ctx.tactic->run : run;
		}
		if (p->pinned && p->pinned[nid]) {
			ctx.tactic = p->pinned[nid];
			if (ctx.tactic->eligible && !ctx.tactic->eligible(&ctx)) {
				st = wh_error(WH_ERR_INVALID, "layer '%s' (%s): tactic '%s' is not eligible for its inputs (rebuild the tactic replay)", n->name, n->op_type, ctx.tactic->name);
				goto step_out;
			}
			run = ctx.tactic->run;
		}
		/* --fp16-accumulate: fp16 layers whose op has an fp16-accumulating tactic use it */
		if (!ctx.tactic && ctx.precision == WH_PREC_FP16 && f->e->precision && f->e->precision->fp16_accumulate && !f->e->chooser.choose)
			for (uint32_t t = 0; t < p->kernels[nid]->n_tactics; t++) {
				const struct wh_tactic *tc = &p->kernels[nid]->tactics[t];
				if (strstr(tc->name, "fp16acc") && (!tc->eligible || tc->eligible(&ctx))) {
					ctx.tactic = tc;
					run = tc->run;
				}
			}
		if (f->e->chooser.choose && g == f->e->m->graph && p->kernels[nid]->n_tactics && !on_gpu) {
			const struct wh_tactic *chosen = NULL;
			if ((st = f->e->chooser.choose(f->e->chooser.state, &ctx, p->kernels[nid], &chosen)) != WH_OK)
				goto step_out;
			ctx.tactic = chosen;
			run = chosen ? chosen->run : run;
		}
		if (on_gpu) {
			ctx.tactic = NULL;
		} else if (p->exec_prec && (p->exec_prec[nid] != WH_PREC_FP32 || p->out_prec[nid] != WH_PREC_FP32)) {
			struct wh_emul_node en = {
				.exec = (enum wh_precision)p->exec_prec[nid],
				.out = (enum wh_precision)p->out_prec[nid],
				.calib = f->e->precision->calib,
				.cache = (struct wh_emul_cache *)&p->emul,
				.fp16_accumulate = f->e->precision->fp16_accumulate,
				.node_out_prec = p->out_prec,
			};
			st = wh_emulate_node(&ctx, run, &en);
		} else if (in_place) {
			outs[0] = cbuf[cj];
			wh_tensor_init(&cbuf[cj]);
			ctx.tactic = NULL;
		} else if (p->const_node[nid] == CONST_CACHED) {
			/* a constant layer computed by an earlier run: its outputs as they were */
			for (uint32_t k = 0; k < n->n_outputs; k++)
				if (wanted[k])
					wh_tensor_ref(&outs[k], &p->const_vals[p->const_slot[n->outputs[k]]]);
			ctx.tactic = NULL;
			constant = true;
		} else if (fuse && p->fused_out[nid] != WH_NONE && p->fq && p->fq[nid].on && !ctx.qdq) {
			st = run(&ctx); /* (not taken: the quantization is fused only into a QDQ Conv) */
		} else if (fuse && p->fused_out[nid] != WH_NONE) {
			bool fq = p->fq && p->fq[nid].on;
			struct wh_out_round fin = {NULL, ctx.cpu, !fq || p->fq[nid].act ? &p->epi[nid] : NULL,
						   fq ? &p->fq[nid].q : NULL};
			ctx.round_out = &fin;
			ctx.outputs_rounded = false;
			st = run(&ctx);
			fused = ctx.outputs_rounded;
			ctx.round_out = NULL;
		} else {
			st = run(&ctx);
			if (st == WH_OK && (p->const_node[nid] == CONST_YES || p->const_node[nid] == CONST_LATER))
				keep_constant((struct plan *)p, nid, outs, wanted);
		}
		if (have_slice) {
			wh_tensor_release(&slice);
			have_slice = false;
		}
		if (cj != WH_NONE && !in_place) {
			/* copied: learn this run's shapes for the next (a run whose inputs should have
			 * landed in place and did not counts as a miss) */
			struct concat_plan *cp = &((struct plan *)p)->concats[cj];
			if (cbuf[cj].blob)
				cp->misses++;
			wh_tensor_release(&cbuf[cj]);
			if (st == WH_OK)
				learn_concat(cp, ins, &outs[0]);
		}
		if (lp) {
			lp->name = n->name;
			lp->op_type = n->op_type;
			lp->tactic = constant ? "constant" : in_place ? "in place" : ctx.tactic ? ctx.tactic->name : gpu_tactic ? gpu_tactic : "default";
			lp->flops = st == WH_OK && !constant && !in_place ? node_flops(&ctx) : 0;
			lp->device = on_gpu ? "cuda" : "cpu";
			wh_gpu_vals_copies(f->dv, &lp->h2d_bytes, &lp->d2h_bytes);
			f->e->n_prof = s + 1;
		}
		if (st == WH_OK && ctx.tactic && f->e->faulty_tactic[0] && !strcmp(ctx.tactic->name, f->e->faulty_tactic) &&
		    (!f->e->faulty_layer[0] || !strcmp(f->e->faulty_layer, n->name))) {
			corrupt_outputs(&ctx);
			wh_emul_cache_forget_outputs((struct wh_emul_cache *)&p->emul, n); /* the ranges it recorded */
		}
		for (uint32_t k = 0; k < n->n_outputs; k++) {
			if (st == WH_OK && wanted[k]) {
				if (!wh_value_present(&outs[k])) {
					st = wh_error(WH_ERR_INTERNAL, "node '%s' (%s): kernel did not produce output %u", n->name, n->op_type, k);
				} else {
					struct wh_tensor *dst = &f->vals[k == 0 && fused ? p->fused_out[nid] : n->outputs[k]];
					if (slot_used(dst))
						slot_clear(dst);
					/* a move: the slot keeps its dims (cleared below), nothing else */
					*dst = outs[k];
					outs[k].blob = NULL;
					outs[k].seq = NULL;
				}
			}
		}
		for (uint32_t k = 0; f->each && k < n->n_outputs && st == WH_OK; k++)
			if (wanted[k] && wh_value_present(&f->vals[n->outputs[k]]) &&
			    (st = wh_gpu_vals_to_host(f->dv, n->outputs[k], &f->vals[n->outputs[k]])) == WH_OK)
				st = f->each(f->each_state, g->values[n->outputs[k]].name, &f->vals[n->outputs[k]]);
		if (st == WH_OK && !keep_all) {
			for (uint32_t k = 0; k < n->n_inputs; k++) {
				uint32_t v = n->inputs[k];
				if (v != WH_NONE && p->last_use[v] == s && !is_kept(g, v) && !(g->values[v].flags & WH_VALUE_INPUT)) {
					slot_clear(&f->vals[v]);
					wh_gpu_vals_drop(f->dv, v);
				}
			}
			/* outputs nobody reads */
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				uint32_t v = n->outputs[k];
				if (v != WH_NONE && p->last_use[v] == WH_NONE && !is_kept(g, v)) {
					slot_clear(&f->vals[v]);
					wh_gpu_vals_drop(f->dv, v);
				}
			}
		}
step_out:
		if (have_slice)
			wh_tensor_release(&slice);
		for (uint32_t k = 0; outs && k < n_slots; k++)
			if (slot_used(&outs[k]))
				slot_clear(&outs[k]);
		if (ins != ins_fixed)
			free(ins);
		if (outs != outs_fixed)
			free(outs);
		if (wanted != wanted_fixed)
			free(wanted);
		if (lp) {
			double gms = on_gpu ? wh_gpu_vals_step_ms(f->dv) : -1;
			lp->ms = gms >= 0 ? gms : (wh_os_now_s() - t0) * 1e3;
		}
		if (st != WH_OK)
			break;
	}
	for (uint32_t k = 0; k < n_cbuf; k++)
		wh_tensor_release(&cbuf[k]);
	if (cbuf != cbuf_fixed)
		free(cbuf);
	return st;
}

enum wh_status wh_kernel_run_subgraph(struct wh_kernel_ctx *ctx, const struct wh_graph *g,
				      uint32_t n_ins, const struct wh_tensor *const *ins,
				      struct wh_tensor *outs)
{
	struct wh_frame *parent = ctx->frame;
	struct plan *p = find_plan(parent->e, g);
	if (!p)
		return wh_kernel_fail(ctx, WH_ERR_INTERNAL, "subgraph has no plan");
	if (n_ins > g->n_inputs)
		return wh_kernel_fail(ctx, WH_ERR_INVALID, "subgraph takes %u inputs, %u given", g->n_inputs, n_ins);
	struct wh_frame f = {0};
	enum wh_status st = frame_init(&f, parent->e, p, parent);
	if (st != WH_OK)
		return st;
	for (uint32_t i = 0; i < n_ins; i++)
		if (ins[i])
			wh_tensor_ref(&f.vals[g->inputs[i]], ins[i]);
	if ((st = frame_execute(&f, false)) == WH_OK) {
		for (uint32_t i = 0; i < g->n_outputs; i++) {
			const struct wh_tensor *src = &f.vals[g->outputs[i]];
			if (!wh_value_present(src)) {
				st = wh_kernel_fail(ctx, WH_ERR_INVALID, "subgraph output '%s' was not computed", g->values[g->outputs[i]].name);
				break;
			}
			wh_tensor_ref(&outs[i], src);
		}
	}
	frame_release(&f);
	return st;
}

void wh_kernel_note_branch(struct wh_kernel_ctx *ctx, bool then)
{
	struct plan *p = ctx->frame ? ctx->frame->plan : NULL;
	if (!p || ctx->node < p->g->nodes || ctx->node >= p->g->nodes + p->g->n_nodes)
		return;
	p->branch_seen[ctx->node - p->g->nodes] |= then ? 1 : 2;
}

unsigned wh_engine_if_branches(const struct wh_engine *e, const struct wh_graph *g, uint32_t node)
{
	const struct plan *p = find_plan(e, g);
	return p && node < g->n_nodes ? p->branch_seen[node] : 0;
}

static enum wh_status check_input(const struct wh_value *v, const struct wh_tensor *t)
{
	char want[256], got[128];
	enum wh_dtype elem;
	enum wh_value_type declared = wh_value_type_of(v, &elem);
	bool seq_ok = declared == WH_TYPE_SEQUENCE || declared == WH_TYPE_OPTIONAL_SEQUENCE;
	bool opt = declared == WH_TYPE_OPTIONAL || declared == WH_TYPE_OPTIONAL_SEQUENCE;
	static const char *const declared_name[] = {"a tensor", "a sequence", "an optional tensor",
						    "an optional sequence", "a map or sparse tensor"};
	/* a value declared with no type at all (a cut made by extract) takes any kind */
	bool untyped = declared == WH_TYPE_TENSOR && !v->dtype && v->rank < 0;
	if (untyped && t->kind != WH_VALUE_TENSOR)
		return WH_OK;
	if ((t->kind == WH_VALUE_SEQUENCE && !seq_ok) || (t->kind == WH_VALUE_NONE && !opt) ||
	    (t->kind == WH_VALUE_TENSOR && declared != WH_TYPE_TENSOR && declared != WH_TYPE_OPTIONAL))
		return wh_error(WH_ERR_SHAPE, "input '%s': the data is a %s, the model expects %s (give data of the declared type)",
				v->name, wh_value_kind_name(t), declared_name[declared]);
	if (t->kind == WH_VALUE_SEQUENCE) {
		for (uint32_t i = 0; i < wh_seq_len(t); i++)
			if (elem && wh_seq_item(t, i)->dtype != elem)
				return wh_error(WH_ERR_SHAPE, "input '%s': sequence item %u has element type %s, the model expects %s (convert the data)",
						v->name, i, wh_dtype_name(wh_seq_item(t, i)->dtype), wh_dtype_name(elem));
		return WH_OK;
	}
	if (t->kind == WH_VALUE_NONE)
		return WH_OK;
	if (v->dtype && t->dtype != v->dtype)
		return wh_error(WH_ERR_SHAPE, "input '%s': element type %s, the model expects %s (convert the data)",
				v->name, wh_dtype_name(t->dtype), wh_dtype_name(v->dtype));
	if (v->rank < 0)
		return WH_OK;
	bool ok = v->rank == t->rank;
	for (int32_t d = 0; ok && d < v->rank; d++)
		if (v->dims[d].value >= 0 && v->dims[d].value != t->dims[d])
			ok = false;
	if (ok)
		return WH_OK;
	size_t off = 0;
	want[0] = '\0';
	for (int32_t d = 0; d < v->rank && off < sizeof want; d++) {
		int w;
		if (v->dims[d].value >= 0)
			w = snprintf(want + off, sizeof want - off, d ? "x%lld" : "%lld", (long long)v->dims[d].value);
		else
			w = snprintf(want + off, sizeof want - off, d ? "x%s" : "%s", v->dims[d].param ? v->dims[d].param : "?");
		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (v->rank == 0)
		snprintf(want, sizeof want, "scalar");
	return wh_error(WH_ERR_SHAPE, "input '%s': shape %s, the model expects %s (give data of the expected shape)",
			v->name, wh_shape_str(t->dims, t->rank, got, sizeof got), want);
}

/* Binds a run's inputs to f's slots: by name, or by position among the inputs that are not
 * initializers. */
static enum wh_status bind_inputs(struct wh_frame *f, const struct wh_graph *g, const struct wh_tensor_set *inputs)
{
	enum wh_status st = WH_OK;
	uint32_t pos = 0;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		uint32_t v = g->inputs[i];
		const struct wh_value *val = &g->values[v];
		const struct wh_tensor *t = inputs ? wh_tensor_set_find(inputs, val->name) : NULL;
		if (!t && inputs && !(val->flags & WH_VALUE_INITIALIZER)) {
			for (size_t k = 0; k < inputs->n; k++)
				if (!inputs->items[k].name && (inputs->items[k].index == (int)pos ||
							       (inputs->items[k].index < 0 && k == pos))) {
					t = &inputs->items[k].t;
					break;
				}
		}
		if (!(val->flags & WH_VALUE_INITIALIZER))
			pos++;
		if (!t) {
			if (val->flags & WH_VALUE_INITIALIZER)
				continue;
			st = wh_error(WH_ERR_NOT_FOUND, "input '%s': no data given (provide it in the input folder, or let whittle generate random inputs)", val->name);
			return st;
		}
		if ((st = check_input(val, t)) != WH_OK)
			return st;
		wh_tensor_ref(&f->vals[v], t);
	}
	return st;
}

/* The input shapes of a run (CUDA graphs replay only runs of the shapes they captured). */
static uint64_t input_sig(const struct wh_graph *g, const struct wh_tensor *vals)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_tensor *t = &vals[g->inputs[i]];
		uint64_t x[2] = {(uint64_t)t->dtype << 32 | (uint32_t)t->rank, (uint64_t)(uintptr_t)t->seq};
		for (int k = 0; k < 2; k++)
			h = (h ^ x[k]) * 0x100000001b3ull;
		for (int32_t d = 0; d < t->rank; d++)
			h = (h ^ (uint64_t)t->dims[d]) * 0x100000001b3ull;
	}
	return h;
}

/* Before a run of the main graph (its inputs bound in vals): the constant layers that hold
 * only for the input shapes they were computed with (plan.shape_const) are computed again
 * when this run's input shapes differ. */
static enum wh_status input_shapes_check(struct plan *p, const struct wh_tensor *vals)
{
	const struct wh_graph *g = p->g;
	if (!p->n_shape_const)
		return WH_OK;
	bool first = !p->shape_in;
	if (first && !(p->shape_in = calloc((size_t)g->n_inputs + 1, sizeof *p->shape_in)))
		return wh_error(WH_ERR_NOMEM, "engine: out of memory (free some memory)");
	bool same = !first;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_tensor *t = &vals[g->inputs[i]];
		struct shape_rec *r = &p->shape_in[i];
		bool seq = t->seq != NULL;
		int32_t rank = t->rank < 0 ? 0 : t->rank > WH_MAX_RANK ? WH_MAX_RANK : t->rank;
		if (same && (r->dtype != (int)t->dtype || r->rank != t->rank || r->seq != seq ||
			     memcmp(r->dims, t->dims, (size_t)rank * sizeof *t->dims)))
			same = false;
		r->dtype = (int)t->dtype;
		r->rank = t->rank;
		r->seq = seq;
		memset(r->dims, 0, sizeof r->dims);
		memcpy(r->dims, t->dims, (size_t)rank * sizeof *t->dims);
	}
	if (same || first)
		return WH_OK;
	for (uint32_t nid = 0; nid < g->n_nodes; nid++) {
		if (!p->shape_const[nid] || p->const_node[nid] == CONST_NO)
			continue;
		const struct wh_node *n = &g->nodes[nid];
		if (p->const_node[nid] == CONST_CACHED)
			for (uint32_t k = 0; k < n->n_outputs; k++) {
				uint32_t v = n->outputs[k];
				if (v == WH_NONE || p->const_slot[v] == WH_NONE)
					continue;
				struct wh_tensor *t = &p->const_vals[p->const_slot[v]];
				p->const_bytes -= wh_tensor_nbytes(t);
				wh_tensor_release(t);
			}
		p->const_node[nid] = CONST_YES;
	}
	p->quiet_stale = true;
	return WH_OK;
}

static enum wh_status engine_run(struct wh_engine *e, const struct wh_tensor_set *inputs, enum wh_run_keep keep,
				 wh_engine_tensor_fn each, void *each_state, struct wh_tensor_set *results)
{
	struct plan *p = find_plan(e, e->m->graph);
	const struct wh_graph *g = p->g;
	struct wh_frame f = {0};
	e->n_prof = 0;
	struct wh_blob_cache *prev_blobs = wh_blob_cache_use(e->blobs);
	enum wh_status st = frame_init(&f, e, p, NULL);
	if (st != WH_OK)
		goto out;
	f.each = each;
	f.each_state = each_state;
	if ((st = bind_inputs(&f, g, inputs)) != WH_OK || (st = input_shapes_check(p, f.vals)) != WH_OK)
		goto out;
	/* on the GPU, a run that only gives its outputs: a CUDA graph replays the last capture,
	 * or captures this run when the last one could be replayed (wh_gpu_vals_capturable) */
	bool graphs = f.dv && keep == WH_KEEP_OUTPUTS && !each && !e->prof && !e->chooser.choose && !e->chooser.choose_gpu && !e->gpu_graph_off;
	uint64_t sig = graphs ? input_sig(g, f.vals) : 0;
	bool done = false;
	if (graphs && e->gpu_graph) {
		done = wh_gpu_graph_replay(e->gpu_graph, f.dv, f.vals);
	} else if (graphs && e->gpu_capturable && sig == e->gpu_sig) {
		struct wh_gpu_graph *gr = NULL;
		if ((st = wh_gpu_capture_begin(f.dv, f.vals, g->inputs, g->n_inputs, &gr)) != WH_OK)
			goto out;
		if (gr) {
			enum wh_status xs = frame_execute(&f, false);
			if (wh_gpu_capture_end(f.dv, f.vals, gr, xs == WH_OK)) {
				e->gpu_graph = gr;
				done = true;
			} else {
				/* nothing of it ran: the run again, as usual */
				wh_gpu_graph_destroy(gr);
				e->gpu_graph_off = true;
				wh_error_clear();
				frame_release(&f);
				if ((st = frame_init(&f, e, p, NULL)) != WH_OK || (st = bind_inputs(&f, g, inputs)) != WH_OK)
					goto out;
			}
		}
	}
	if (!done) {
		if ((st = frame_execute(&f, keep == WH_KEEP_ALL)) != WH_OK)
			goto out;
		if (graphs) {
			e->gpu_capturable = wh_gpu_vals_capturable(f.dv);
			e->gpu_sig = sig;
		}
	}
	/* what the caller gets lives on the host */
	for (uint32_t v = 0; f.dv && v < g->n_values && st == WH_OK; v++)
		if (keep == WH_KEEP_ALL || (g->values[v].flags & WH_VALUE_OUTPUT))
			st = wh_gpu_vals_to_host(f.dv, v, &f.vals[v]);
	if (st != WH_OK)
		goto out;
	if (each) {
		/* graph outputs that no node produces (inputs or initializers passed through) */
		for (uint32_t i = 0; i < g->n_outputs && st == WH_OK; i++) {
			uint32_t v = g->outputs[i];
			if (g->values[v].producer == WH_NONE && wh_value_present(&f.vals[v]))
				st = each(each_state, g->values[v].name, &f.vals[v]);
		}
	} else if (keep == WH_KEEP_ALL) {
		for (uint32_t s = 0; s < g->n_nodes && st == WH_OK; s++) {
			const struct wh_node *n = &g->nodes[p->order[s]];
			for (uint32_t k = 0; k < n->n_outputs && st == WH_OK; k++) {
				uint32_t v = n->outputs[k];
				if (v != WH_NONE && wh_value_present(&f.vals[v]))
					st = wh_tensor_set_add(results, g->values[v].name, -1, &f.vals[v]);
			}
		}
		/* graph outputs that no node produces (inputs or initializers passed through) */
		for (uint32_t i = 0; i < g->n_outputs && st == WH_OK; i++) {
			uint32_t v = g->outputs[i];
			if (g->values[v].producer == WH_NONE)
				st = wh_tensor_set_add(results, g->values[v].name, -1, &f.vals[v]);
		}
	} else {
		for (uint32_t i = 0; i < g->n_outputs && st == WH_OK; i++) {
			uint32_t v = g->outputs[i];
			if (!wh_value_present(&f.vals[v])) {
				st = wh_error(WH_ERR_INTERNAL, "output '%s': was not computed", g->values[v].name);
				break;
			}
			st = wh_tensor_set_add(results, g->values[v].name, (int)i, &f.vals[v]);
		}
	}
out:
	frame_release(&f);
	wh_blob_cache_use(prev_blobs);
	return st;
}

enum wh_status wh_engine_run(struct wh_engine *e, const struct wh_tensor_set *inputs,
			     enum wh_run_keep keep, struct wh_tensor_set *results)
{
	return engine_run(e, inputs, keep, NULL, NULL, results);
}

enum wh_status wh_engine_run_each(struct wh_engine *e, const struct wh_tensor_set *inputs, wh_engine_tensor_fn fn, void *state)
{
	return engine_run(e, inputs, WH_KEEP_OUTPUTS, fn, state, NULL);
}
