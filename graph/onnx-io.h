/* ONNX model load and save (protobuf-c, generated at build time from Debian's onnx.proto).
 *
 * Model files are untrusted: every size is checked, external-data paths must stay inside
 * the model's folder (relative, no "..", no symlink leaving the folder), and a model whose
 * graph references a tensor nothing produces, or produces one twice, is rejected with
 * WH_ERR_INVALID. External weights are read into blobs at load; saving writes all weights
 * inline. The returned model belongs to the caller (wh_model_destroy). */
#ifndef WH_ONNX_IO_H
#define WH_ONNX_IO_H

#include <stddef.h>
#include <stdint.h>

#include "graph/ir.h"

enum wh_status wh_model_load(const char *path, struct wh_model **out);
/* dir: folder for external data, NULL to reject external data; label names the source in
 * error messages. */
enum wh_status wh_model_load_buffer(const void *data, size_t len, const char *dir,
				    const char *label, struct wh_model **out);
enum wh_status wh_model_save(const struct wh_model *m, const char *path);
/* *data_out is malloc'd, owned by the caller. */
enum wh_status wh_model_save_buffer(const struct wh_model *m, uint8_t **data_out, size_t *len_out);

#endif
