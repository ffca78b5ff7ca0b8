/* Reduced-precision emulation: which layers run in which number format, and how.
 *
 * A layer has an execution precision and an output precision (TensorRT's setPrecision and
 * setOutputType). Emulation semantics (docs/precision.md has the full table):
 *  - fp16 / bf16 (TensorRT's setPrecision): every float input of the layer is converted to
 *    the layer's format when its producer wrote another one (TensorRT's reformat, counted as
 *    part of the layer: an input that overflows the format becomes +-inf here); constants are
 *    stored in the format (converted once per engine); the kernel computes as it documents
 *    (FP32 accumulation unless an fp16-accumulating tactic is chosen); outputs are stored in
 *    the output format (setOutputType; default the execution format). An FP32 layer thus
 *    hands FP32 values to an FP16 consumer, which rounds them. Inputs that parameterise
 *    an op (Resize/Upsample scales and roi, Range, Q/DQ scales and zero points, NMS
 *    thresholds, a Dropout ratio) are never converted; shape, index and integer inputs are
 *    not floats and never converted either.
 *  - tf32: the inputs of MatMul, Gemm, Conv and ConvTranspose are rounded to 10 mantissa
 *    bits; accumulation and outputs stay FP32; other layers run in FP32.
 *  - int8: activations symmetric per-tensor (scale amax/127 from calibration, or the tensor's
 *    own range when none), weights of MatMul/Gemm/Conv/ConvTranspose symmetric per output
 *    channel; those layers multiply the integer values and accumulate exactly (as int32 up
 *    to 2^24), then scale and add the bias in FP32; other int8 layers see fake-quantized
 *    inputs; outputs are fake-quantized with the output tensor's scale.
 *  - fp8 (e4m3fn) / fp8e5m2: like int8 with the fp8 grid and scale amax/448 (amax/57344),
 *    per-tensor for activations and weights, FP32 accumulation, saturating.
 * Layers that compute shapes or indices (everything downstream of Shape/Size, integer and
 * bool tensors) keep their own types whatever is asked.
 *
 * struct wh_precision_config is caller-owned (_init/_release) and borrowed by engines. */
#ifndef WH_PRECISION_H
#define WH_PRECISION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "graph/ir.h"

enum wh_precision {
	WH_PREC_FP32 = 0,
	WH_PREC_TF32,
	WH_PREC_FP16,
	WH_PREC_BF16,
	WH_PREC_FP8,     /* float8 e4m3fn */
	WH_PREC_FP8E5M2, /* float8 e5m2 */
	WH_PREC_INT8,
	WH_PREC_COUNT_,
};

const char *wh_precision_name(enum wh_precision p);
bool wh_precision_parse(const char *s, enum wh_precision *out);

struct wh_layer_precision {
	char *layer;              /* node name (malloc'd) */
	enum wh_precision exec;
	int output;               /* enum wh_precision, or -1: same as exec */
};

/* Per-tensor calibration: amax (the largest magnitude to represent) by tensor name. */
struct wh_calib {
	uint32_t n, cap;
	char **names;
	float *amax;
	char algorithm[64]; /* e.g. "EntropyCalibration2", "MinMaxCalibration" */
};

struct wh_precision_config {
	enum wh_precision dflt;
	uint32_t n_layers, cap_layers;
	struct wh_layer_precision *layers;
	const struct wh_calib *calib; /* borrowed; NULL: dynamic ranges */
	bool fp16_accumulate;         /* MatMul/Gemm/Conv in fp16 accumulate in fp16 */
};

void wh_precision_config_init(struct wh_precision_config *c);
void wh_precision_config_release(struct wh_precision_config *c);
/* Adds or replaces one layer's precisions. */
enum wh_status wh_precision_config_set(struct wh_precision_config *c, const char *layer,
				       enum wh_precision exec, int output);
/* "NAME:P[/OUT],NAME:P" or the path of a JSON file ({"layers": {NAME: {"precision": P,
 * "output": P}}, "default": P}); a name may itself contain ':' (the last one splits). */
enum wh_status wh_precision_config_parse(struct wh_precision_config *c, const char *spec);
/* Writes the layers as the JSON file format above. */
enum wh_status wh_precision_config_write(const struct wh_precision_config *c, const char *path);

enum wh_layer_kind {
	WH_LAYER_FLOAT = 0,  /* can run in any precision */
	WH_LAYER_SHAPE = 1,  /* shape arithmetic: stays in its own type */
	WH_LAYER_OTHER = 2,  /* indices, bool, integers: stays in its own type */
	WH_LAYER_CONST = 3,  /* Constant */
};
const char *wh_layer_kind_name(enum wh_layer_kind k);
/* kinds_out[n_nodes] for the main graph. */
enum wh_status wh_model_layer_kinds(const struct wh_model *m, uint8_t *kinds_out);
/* kinds_out[g->n_nodes] for any graph (a subgraph's values captured from an outer scope
 * count as computed values). */
enum wh_status wh_graph_layer_kinds(const struct wh_graph *g, uint8_t *kinds_out);
/* Checks the config against the model: every named layer exists (in the main graph or in a
 * subgraph: an If's branch, a Loop's or Scan's body) and can take its precision; fills
 * exec_out/out_out[n_nodes] of the main graph (FP32 for layers that keep their types). */
enum wh_status wh_precision_resolve(const struct wh_model *m, const struct wh_precision_config *c,
				    uint8_t *exec_out, uint8_t *out_out);
/* The same for g, the main graph or any subgraph of m: dflt for g's float layers (c->dflt
 * for the main graph; for a body, the precision its If, Loop or Scan resolved to), the named
 * layers g has (a subgraph ignores the names it lacks; the main graph fails on a name no
 * graph of m has). exec_out/out_out[g->n_nodes].
 * A node holding subgraphs is a container: the precision it resolves to is its bodies'
 * default (keeping a Loop in fp32 keeps its body in fp32, as TensorRT runs a conditional's or
 * loop's layers in the build's precision); the executor runs the container itself unrounded,
 * so that a model and the same model with an If inlined (graph/inline.h) compute alike. */
enum wh_status wh_precision_resolve_graph(const struct wh_model *m, const struct wh_graph *g,
					  const struct wh_precision_config *c, enum wh_precision dflt,
					  uint8_t *exec_out, uint8_t *out_out);
/* Whether name is a layer of a subgraph of m but not of its main graph. */
bool wh_model_subgraph_has_layer(const struct wh_model *m, const char *name);

void wh_calib_init(struct wh_calib *c);
void wh_calib_release(struct wh_calib *c);
enum wh_status wh_calib_set(struct wh_calib *c, const char *name, float amax);
/* amax for a tensor, or a negative number when unknown. */
float wh_calib_get(const struct wh_calib *c, const char *name);

#endif
