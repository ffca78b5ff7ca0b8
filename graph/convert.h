/* Conversion to a strongly typed mixed-precision model (`whittle convert`, `precision
 * --save-model`; docs/precision.md, "The answer as a strongly typed model").
 *
 * The float layers of the main graph take the target type (float16 or bfloat16) except the
 * ones the caller keeps; ONNX's types then say which layer computes in which precision, as
 * TensorRT's strongly typed networks (and ModelOpt AutoCast's output) expect:
 *  - A node is converted when the caller does not keep it, its op's schema at the model's
 *    opset admits the target type for the type variable its float outputs follow
 *    (graph/convert-types.inc, generated from onnx.defs by scripts/gen-convert-types.py), and
 *    every input and output bound to that variable is float32. Its inputs and outputs bound
 *    to that variable take the target type, and so do float32 inputs of another variable
 *    that admits it (Pow's exponent, BatchNormalization's statistics at opset 14+,
 *    GridSample's grid), as the emulation rounds every float input of an fp16 layer; every
 *    other input keeps its type (Resize's roi and scales, Upsample's scales, Dropout's
 *    ratio: parameters, never rounded; indices, axes, shapes) and so do outputs of another
 *    variable (LayerNormalization's Mean/InvStdDev). A converted Cast gets `to` = the
 *    target type.
 *  - Ops the spec gives no target type at that opset, ops whose output type is an attribute
 *    (ConstantOfShape, EyeLike, Random*), QuantizeLinear/DequantizeLinear (their scales stay
 *    float32, as in TensorRT) and If/Loop/Scan (the node and its bodies keep their types)
 *    keep float32 and are listed in the stats.
 *  - A Cast is inserted where a tensor crosses between types: one per producer and type,
 *    placed before its first reader; none between layers of one type. A tensor that must
 *    keep its type under its own name (a graph output, a tensor a subgraph reads) is written
 *    by a Cast, and its producer's output is renamed (`<name>.fp16`, `.bf16`, made unique).
 *  - Float32 initializers read by converted slots are converted (round to nearest even;
 *    finite values beyond the format clamped to its largest finite value, as
 *    onnxconverter-common does; values below half the smallest subnormal flushed to zero as
 *    rounding gives). One read by both converted and float32 slots gets a converted copy
 *    (`<name>.fp16`); the original stays for the float32 readers. A weight also listed as a
 *    graph input (models of IR version < 4 list every weight there) is converted as a weight,
 *    its input declaration following its type.
 *  - Graph inputs and outputs keep their types unless convert_io (AutoCast's keep_io_types
 *    off): then float32 ones take the target type.
 *
 * The source is unchanged; the result is a new model (caller owns it) sharing every weight
 * blob it does not convert, so external data still links when saved. */
#ifndef WH_CONVERT_H
#define WH_CONVERT_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/ir.h"

struct wh_convert_options {
	enum wh_dtype target; /* WH_DT_FLOAT16 or WH_DT_BFLOAT16 */
	/* g->n_nodes flags of the main graph, nonzero: the node keeps its types; NULL: none */
	const uint8_t *keep;
	bool convert_io; /* float32 graph inputs and outputs take the target type */
};

struct wh_convert_stats {
	uint32_t converted;    /* nodes that took the target type */
	uint32_t casts;        /* Cast nodes inserted */
	uint32_t inits;        /* initializers converted (or copied converted) */
	uint64_t clamped;      /* initializer elements beyond the format, set to its largest finite */
	uint64_t flushed;      /* nonzero initializer elements that became zero */
	/* nodes not kept by the caller that read or write float32 but stay float32 (see above):
	 * source node ids, malloc'd (wh_convert_stats_release) */
	uint32_t n_unsupported;
	uint32_t *unsupported;
};

/* Whether the op (default domain) at this opset computes in dt (WH_DT_FLOAT16/BFLOAT16). */
bool wh_convert_op_supports(const char *op_type, int64_t opset, enum wh_dtype dt);

/* *out: the converted model. Value types must be known (run shape inference first): a node
 * whose converted slots have unknown types keeps float32. */
enum wh_status wh_model_convert(const struct wh_model *m, const struct wh_convert_options *o, struct wh_model **out,
				struct wh_convert_stats *stats);
void wh_convert_stats_release(struct wh_convert_stats *s);

#endif
