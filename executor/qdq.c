/* QDQ convolutions: the plan-time links (qdq.h). */
#include <string.h>

#include "executor/qdq.h"

static bool is_op(const struct wh_node *n, const char *op)
{
	return !n->domain[0] && !strcmp(n->op_type, op);
}

/* Value v is an initializer's tensor that no graph input overrides. */
static const struct wh_tensor *init_of(const struct wh_graph *g, const struct wh_tensor *inits, uint32_t v)
{
	if (v == WH_NONE || v >= g->n_values || (g->values[v].flags & WH_VALUE_INPUT) ||
	    !(g->values[v].flags & WH_VALUE_INITIALIZER) || !wh_value_present(&inits[v]))
		return NULL;
	return &inits[v];
}

static bool is_8bit(enum wh_dtype dt)
{
	return dt == WH_DT_UINT8 || dt == WH_DT_INT8;
}

/* Node dq (a DequantizeLinear of 8 bits into float32 with a float32 scale) with scale and
 * zero point initializers of `per` values (1, or that many along axis 0 of its input of
 * rank `rank`); fills xs, xz. */
static bool dq_ok(const struct wh_graph *g, const struct wh_tensor *inits, const struct wh_node *dq, int64_t opset,
		  uint64_t per, int32_t rank, uint32_t *xs, uint32_t *xz)
{
	if (!is_op(dq, "DequantizeLinear") || dq->n_inputs < 2 || dq->n_inputs > 3 || dq->n_outputs != 1 ||
	    dq->inputs[0] == WH_NONE)
		return false;
	if (wh_node_attr_int(dq, "block_size", 0) != 0 || wh_node_attr_int(dq, "output_dtype", 0) != 0)
		return false;
	const struct wh_tensor *s = init_of(g, inits, dq->inputs[1]);
	uint32_t zv = dq->n_inputs > 2 ? dq->inputs[2] : WH_NONE;
	const struct wh_tensor *z = zv != WH_NONE ? init_of(g, inits, zv) : NULL;
	if (!s || s->dtype != WH_DT_FLOAT || (zv != WH_NONE && (!z || !is_8bit(z->dtype))))
		return false;
	if (s->count != 1) {
		int64_t axis = opset >= 13 ? wh_node_attr_int(dq, "axis", 1) : 0;
		if (axis < 0)
			axis += rank;
		if (s->count != per || s->rank != 1 || axis != 0)
			return false;
	}
	if (z && z->count != s->count)
		return false;
	*xs = dq->inputs[1];
	*xz = zv;
	return true;
}

uint32_t wh_qdq_find(const struct wh_graph *g, const int64_t *opsets, const struct wh_tensor *inits,
		     struct wh_qdq_link *links)
{
	uint32_t linked = 0;
	for (uint32_t i = 0; i < g->n_nodes; i++) {
		const struct wh_node *n = &g->nodes[i];
		struct wh_qdq_link l = {WH_NONE, WH_NONE, WH_NONE, WH_NONE, WH_NONE, WH_NONE, WH_NONE, WH_NONE};
		links[i] = l;
		if (!is_op(n, "Conv") || n->n_inputs < 2 || n->n_outputs < 1 || n->inputs[0] == WH_NONE ||
		    n->inputs[1] == WH_NONE)
			continue;
		uint32_t px = g->values[n->inputs[0]].producer, pw = g->values[n->inputs[1]].producer;
		if (px == WH_NONE || pw == WH_NONE || px == pw)
			continue;
		const struct wh_node *dx = &g->nodes[px], *dw = &g->nodes[pw];
		if (dw->n_inputs < 1 || dw->inputs[0] == WH_NONE)
			continue;
		/* the weight: 8-bit, rank 3 or 4 (1-D and 2-D convolutions), an initializer */
		const struct wh_tensor *w = init_of(g, inits, dw->inputs[0]);
		if (!w || !is_8bit(w->dtype) || w->rank < 3 || w->rank > 4)
			continue;
		if (!dq_ok(g, inits, dx, opsets[px], 1, 0, &l.xs, &l.xz) ||
		    !dq_ok(g, inits, dw, opsets[pw], (uint64_t)w->dims[0], w->rank, &l.ws, &l.wz))
			continue;
		if (l.wz != WH_NONE && inits[l.wz].dtype != w->dtype)
			continue;
		l.dqx = px;
		l.dqw = pw;
		l.xq = dx->inputs[0];
		l.wq = dw->inputs[0];
		links[i] = l;
		linked++;
	}
	return linked;
}

bool wh_qdq_requant_of(const struct wh_graph *g, const struct wh_tensor *inits, const struct wh_node *q, int64_t opset,
		       struct wh_requant *out)
{
	if (!is_op(q, "QuantizeLinear") || q->n_inputs < 2 || q->n_inputs > 3 || q->n_outputs != 1 ||
	    q->outputs[0] == WH_NONE || q->inputs[0] == WH_NONE)
		return false;
	if (wh_node_attr_int(q, "block_size", 0) != 0 || wh_node_attr_int(q, "output_dtype", 0) != 0 ||
	    (opset >= 23 && wh_node_attr_int(q, "precision", 0) != 0))
		return false;
	const struct wh_tensor *s = init_of(g, inits, q->inputs[1]);
	uint32_t zv = q->n_inputs > 2 ? q->inputs[2] : WH_NONE;
	const struct wh_tensor *z = zv != WH_NONE ? init_of(g, inits, zv) : NULL;
	if (!s || s->dtype != WH_DT_FLOAT || s->count != 1 || (zv != WH_NONE && (!z || !is_8bit(z->dtype) || z->count != 1)))
		return false;
	out->scale = *(const float *)s->data;
	out->s8 = z && z->dtype == WH_DT_INT8;
	out->zp = !z ? 0.0f : out->s8 ? (float)*(const int8_t *)z->data : (float)*(const uint8_t *)z->data;
	return true;
}
