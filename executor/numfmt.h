/* Number formats in the executor: the conversions of the storage formats (fp16, bf16,
 * float8, float4, e8m0) are graph/numfmt.h, included here; this header adds the rounding the
 * precision emulation applies to float32 values: TF32 (a compute format with no tensor
 * type) and rounding through fp16 / bf16 and back. Pure functions. */
#ifndef WH_NUMFMT_H
#define WH_NUMFMT_H

#include "graph/numfmt.h"

/* float32 rounded to TF32 (10 explicit mantissa bits), kept in a float. */
float wh_round_tf32(float f);
/* Rounds through fp16 / bf16 and back. */
static inline float wh_round_f16(float f)
{
	return wh_f16_to_f32(wh_f32_to_f16(f));
}
static inline float wh_round_bf16(float f)
{
	return wh_bf16_to_f32(wh_f32_to_bf16(f));
}

#endif
