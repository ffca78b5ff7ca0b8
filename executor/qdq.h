/* Private to executor/ (runtime.c builds the links, ops/conv.c reads them through
 * wh_kernel_ctx.qdq): QDQ convolutions, found at plan time from the graph alone.
 *
 * ONNX Runtime's static quantizer in QDQ format writes a quantized convolution as a float
 * Conv whose data input is DequantizeLinear(xq, x_scale, x_zero_point) of an 8-bit tensor
 * (per tensor) and whose weight is DequantizeLinear(wq, w_scale, w_zero_point) of an 8-bit
 * initializer (per tensor, or per output channel on axis 0); the bias, if any, is the float
 * output of its own DequantizeLinear of an int32 initializer. A Conv linked so runs on the
 * integer GEMM over xq and wq (exact int32 sums), then y = float(acc) * (x_scale *
 * w_scale[m]) + bias[m] in float32 (docs/architecture.md, "QDQ convolutions").
 *
 * The link depends on the graph only (the producers' ops and which of their inputs are
 * initializers), never on who else reads the dequantized tensors, whether they are kept or
 * reported, or whether fusion is on: the Conv's output is the same whether or not anything
 * observes it. The runtime still runs the DequantizeLinear layers (their outputs are
 * tensors of the graph like any other). */
#ifndef WH_QDQ_H
#define WH_QDQ_H

#include <stdint.h>

#include "executor/kernel.h"
#include "graph/ir.h"
#include "graph/tensor.h"

/* The values a linked Conv reads in place of its dequantized inputs 0 and 1, and the
 * DequantizeLinear nodes that made those (dqx == WH_NONE: not linked). Scales and zero
 * points (WH_NONE: omitted) and wq are initializers that no graph input overrides. */
struct wh_qdq_link {
	uint32_t dqx, dqw;      /* node ids */
	uint32_t xq, xs, xz;    /* value ids */
	uint32_t wq, ws, wz;
};

/* A QuantizeLinear that a linked Conv may apply as it writes (struct wh_requant): where the
 * Conv's float output (or that of the activation fused into it) is read by this
 * QuantizeLinear alone and is no tensor anyone observes (the runtime decides that with its
 * fusions: not while every tensor is kept or reported); the bits are the two layers' run
 * apart, so observing changes nothing. */
struct wh_qdq_fuse {
	struct wh_requant q;
	bool on;  /* the Conv writes q's output */
	bool act; /* with the activation fused before it (wh_kernel_ctx.round_out->act) */
};

/* Whether node q (at opset) is a QuantizeLinear that can be fused so: float32 per tensor,
 * scale and zero point initializers, 8 bits out; fills *out. */
bool wh_qdq_requant_of(const struct wh_graph *g, const struct wh_tensor *inits, const struct wh_node *q, int64_t opset,
		       struct wh_requant *out);

/* Fills links[nid] for every node of g (inits: the plan's initializer tensors per value
 * id, empty where none); returns how many nodes are linked. */
uint32_t wh_qdq_find(const struct wh_graph *g, const int64_t *opsets, const struct wh_tensor *inits,
		     struct wh_qdq_link *links);

#endif
