/* Private to executor/ops/cast.c and its tests: element conversion between any two ONNX
 * types, as Cast defines it, for kernels that need a conversion of a whole tensor. */
#ifndef WH_CAST_INTERNAL_H
#define WH_CAST_INTERNAL_H

#include <stdbool.h>

#include "executor/cpu.h"
#include "executor/numfmt-bulk.h"
#include "executor/threadpool.h"
#include "graph/tensor.h"

struct wh_cast_opts {
	bool saturate;                   /* float8 overflow clamps (ONNX default true) */
	enum wh_e8m0_round round_mode;   /* float8e8m0 targets (ONNX default "up") */
};

/* out = src converted to `to` (out released first; shares src's data when the types are
 * equal). Floats are rounded once, to nearest even (from double and 64-bit integers too);
 * floats to integers truncate toward zero and integers wrap to the target width; numbers to
 * strings use the shortest text that reads back to the same value; strings parse as
 * decimal numbers, "inf", "+INF", "-inf", "NaN" in any case. cpu may be NULL (scalar),
 * pool may be NULL. WH_ERR_UNSUPPORTED for complex types. */
enum wh_status wh_cast_tensor(const struct wh_tensor *src, enum wh_dtype to, const struct wh_cast_opts *opts,
			      const struct wh_cpu_features *cpu, struct wh_threadpool *pool, struct wh_tensor *out);

/* The text Cast writes for element i of a numeric tensor (buf of at least 48 bytes). */
const char *wh_cast_format(const struct wh_tensor *t, uint64_t i, char *buf, size_t size);

#endif
