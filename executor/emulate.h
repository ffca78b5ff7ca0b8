/* Private to executor/: runs one node under a reduced precision (see executor/precision.h
 * for the semantics). The runtime calls wh_emulate_node instead of the kernel for every
 * node whose execution or output precision is not FP32. A constant input (a weight) is
 * converted when its layer runs; the converted copy is kept in a per-plan cache (struct
 * wh_emul_cache, one entry per value id) so that the next run does not convert it again, up
 * to the cache's byte budget: past it, the least recently used copies are dropped, and a
 * weight larger than the whole budget is converted for its layer and freed right after. So
 * an engine never holds a second full copy of a large model's weights. A constant that an
 * int8/fp8 layer fake-quantizes (an addend, a scale factor) is kept the same way.
 *
 * The cache also remembers, per value, the range (largest finite |x|) of what an int8/fp8
 * layer last wrote there: the layer measures it in the same pass that quantizes its output,
 * and a consumer that needs the range of that input (an int8 Conv's per-tensor scale) reads
 * it instead of measuring again. Not thread-safe: an engine runs one inference at a time. */
#ifndef WH_EMULATE_H
#define WH_EMULATE_H

#include "executor/executor.h"
#include "executor/kernel.h"
#include "executor/precision.h"

/* what an entry holds */
enum {
	WH_EMUL_CONVERTED = 0, /* rounded (fp16, bf16, tf32) or a GEMM weight's grid values */
	WH_EMUL_FAKE_QUANT = 1 /* fake-quantized with a per-tensor scale (int8, fp8) */
};

struct wh_emul_entry {
	bool valid;
	uint8_t prec;   /* enum wh_precision the entry was made for */
	uint8_t kind;   /* WH_EMUL_CONVERTED or WH_EMUL_FAKE_QUANT */
	int8_t axis;    /* per-channel axis, -1 for per-tensor */
	struct wh_tensor t;
	float *scales;  /* per channel (or one) */
	uint32_t n_scales;
	uint64_t last_use; /* the cache's clock when last used (least recently used goes first) */
	size_t bytes;      /* t's elements and the scales */
};

/* executor.h's default of weight_cache_bytes */
#define WH_EMUL_CACHE_DEFAULT_BYTES ((size_t)WH_ENGINE_WEIGHT_CACHE_DEFAULT)

/* The range of a value as its int8/fp8 producer wrote it in this run. It is valid for the
 * tensor at data with count elements only: a value's producer writes it again in every run
 * before any consumer reads it, and whoever changes a tensor after its layer ran (fault
 * injection) calls wh_emul_cache_forget_outputs. data NULL: none. */
struct wh_emul_range {
	const void *data;
	uint64_t count;
	float amax;
};

struct wh_emul_cache {
	uint32_t n;
	struct wh_emul_entry *e; /* per value id */
	size_t budget;           /* bytes the entries may hold together */
	size_t bytes;            /* bytes they hold */
	uint64_t clock;
	struct wh_emul_range *range; /* per value id */
	/* per value id: the index of its name in the calibration table (-1: none, -2: not
	 * looked up yet), valid while the table is the one seen (same table, entries, names
	 * array): a lookup by name per tensor and run cost a linear search of the table */
	const struct wh_calib *calib;
	uint32_t calib_n;
	const void *calib_names;
	int32_t *calib_idx;
};

/* budget: bytes of converted weights kept between runs (0 keeps none). */
enum wh_status wh_emul_cache_init(struct wh_emul_cache *c, uint32_t n_values, size_t budget);
void wh_emul_cache_release(struct wh_emul_cache *c);
/* Forgets the ranges recorded for node's outputs: for a caller that changed them after the
 * layer ran. */
void wh_emul_cache_forget_outputs(struct wh_emul_cache *c, const struct wh_node *node);

struct wh_emul_node {
	enum wh_precision exec, out;
	const struct wh_calib *calib;
	struct wh_emul_cache *cache;
	bool fp16_accumulate;
	/* output precision of every node of the graph (to know which inputs are already in the
	 * layer's format and need no second rounding); NULL: unknown */
	const uint8_t *node_out_prec;
};

/* Whether input k of op is a parameter (scales, coordinates, thresholds; at int8/fp8 also
 * bounds and exponents) that a layer at p does not convert to its format; every other float
 * input is converted (TensorRT's reformat). Shared with the diagnosis (diagnose.c), which
 * needs to know which consumers convert an out-of-range value. */
bool wh_emulate_parameter_input(const char *op, uint32_t k, enum wh_precision p);

enum wh_status wh_emulate_node(struct wh_kernel_ctx *ctx, wh_kernel_fn run, const struct wh_emul_node *en);

#endif
