/* Private to graph/: conversions between protobuf-c messages and the IR, shared by the
 * model loader/saver and the tensor-file reader/writer. */
#ifndef WH_ONNX_INTERNAL_H
#define WH_ONNX_INTERNAL_H

#include <protobuf-c/protobuf-c.h>

#include "graph/arena.h"
#include "graph/ir.h"
#include "onnx/onnx.pb-c.h"

/* protobuf-c allocator drawing from an arena (nothing freed individually). */
void wh_pb_allocator_init(ProtobufCAllocator *alloc, struct wh_arena *arena);

/* The weights files that one load has opened (each mapped once, shared by its tensors). */
struct wh_pb_files {
	const char *dir; /* folder that external-data locations are relative to; NULL: refused */
	uint32_t n, cap;
	struct wh_blob_file **files; /* malloc'd; one reference each */
};
void wh_pb_files_release(struct wh_pb_files *fs); /* drops the references; keeps dir */

/* Decodes a TensorProto's type, shape and data. The data is in ONNX raw_data layout
 * (little-endian; 4-bit types packed two per byte); NULL for string tensors. External data
 * is resolved against dir (NULL: rejected) and mapped, never read (graph/blob.h views).
 * label names the tensor in errors. */
enum wh_status wh_pb_tensor_decode(const Onnx__TensorProto *tp, const char *dir, const char *label,
				   enum wh_dtype *dtype_out, int32_t *rank_out, int64_t *dims_out,
				   struct wh_blob **data_out);
/* The same, opening each external-data file once per fs (a view of its mapping). */
enum wh_status wh_pb_tensor_decode_in(const Onnx__TensorProto *tp, struct wh_pb_files *fs,
				      const char *label, enum wh_dtype *dtype_out, int32_t *rank_out,
				      int64_t *dims_out, struct wh_blob **data_out);
/* Fills tp (already initialised) from type, shape and raw data; pointers refer to dims and
 * the blob, which must outlive tp. */
void wh_pb_tensor_encode(Onnx__TensorProto *tp, const char *name, enum wh_dtype dtype,
			 int32_t rank, const int64_t *dims, const struct wh_blob *data);

#endif
