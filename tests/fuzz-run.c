/* libFuzzer target for the executor: bytes -> a model (as fuzz-model loads it) -> an engine ->
 * one run on seeded inputs. Seeded with the ONNX backend test models, so mutations reach
 * every kernel with odd attributes, shapes and types. Models whose inputs are not small,
 * static tensors are skipped (their data would have to come from elsewhere); a run may fail
 * with any status, but never crash, hang or leak (ASan, UBSan, libFuzzer's limits). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor/executor.h"
#include "graph/onnx-io.h"
#include "graph/status.h"
#include "graph/tensor-file.h"
#include "reducer/cli/cli-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs the run can make up: static, at most this many elements each. */
#define MAX_INPUT_ELEMENTS 4096

static bool runnable_inputs(const struct wh_model *m)
{
	const struct wh_graph *g = m->graph;
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		if (wh_value_type_of(v, NULL) != WH_TYPE_TENSOR || !v->dtype || v->dtype == WH_DT_STRING || v->rank < 0)
			return false;
		uint64_t n = 1;
		for (int32_t d = 0; d < v->rank; d++) {
			if (v->dims[d].value < 0)
				return false;
			n *= (uint64_t)v->dims[d].value;
			if (n > MAX_INPUT_ELEMENTS)
				return false;
		}
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wh_model *m = NULL;
	struct wh_engine *e = NULL;
	struct wh_tensor_set ins, outs;
	wh_tensor_set_init(&ins);
	wh_tensor_set_init(&outs);
	if (wh_model_load_buffer(data, size, NULL, "fuzz", &m) != WH_OK || !runnable_inputs(m))
		goto out;
	if (wh_cli_random_inputs(m, size, -2, 2, &ins) != WH_OK)
		goto out;
	struct wh_engine_options eo = {.threads = 1};
	if (wh_engine_create(m, &eo, &e) != WH_OK)
		goto out;
	(void)wh_engine_run(e, &ins, WH_KEEP_OUTPUTS, &outs);
out:
	wh_tensor_set_release(&ins);
	wh_tensor_set_release(&outs);
	wh_engine_destroy(e);
	wh_model_destroy(m);
	return 0;
}
