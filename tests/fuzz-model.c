/* libFuzzer target for the model loader: bytes -> wh_model_load_buffer (no folder, so
 * external data is refused); a model that loads is saved and loaded again, and the second
 * save must give the same bytes as the first (load/save is a fixed point after one trip). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/onnx-io.h"
#include "graph/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz-model: %s: %s\n", what, wh_error_message());
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wh_model *m = NULL, *m2 = NULL;
	uint8_t *buf = NULL, *buf2 = NULL;
	size_t len = 0, len2 = 0;
	if (wh_model_load_buffer(data, size, NULL, "fuzz", &m) != WH_OK)
		goto out;
	if (wh_model_save_buffer(m, &buf, &len) != WH_OK)
		goto out;
	/* what whittle wrote, whittle must read */
	if (wh_model_load_buffer(buf, len, NULL, "fuzz-saved", &m2) != WH_OK)
		fail("the saved model does not load again");
	if (wh_model_save_buffer(m2, &buf2, &len2) != WH_OK)
		fail("the reloaded model does not save");
	if (len != len2 || memcmp(buf, buf2, len) != 0)
		fail("saving the reloaded model gives other bytes");
out:
	free(buf);
	free(buf2);
	wh_model_destroy(m);
	wh_model_destroy(m2);
	wh_error_clear();
	return 0;
}
