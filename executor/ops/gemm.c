/* Placeholder table: filled in by the kernels of this file. */
#include "executor/kernel.h"

const struct wh_op_def wh_ops_gemm[] = {{"", "", 0, NULL}};
const size_t wh_ops_gemm_count = 0;
