/* ONNX model load and save (protobuf-c, generated at build time from Debian's onnx.proto).
 *
 * Model files are untrusted: every size is checked, external-data paths must stay inside
 * the model's folder (relative, no "..", no symlink leaving the folder), and a model whose
 * graph references a tensor nothing produces, or produces one twice, is rejected with
 * WH_ERR_INVALID. External weights are mapped at load, never read (graph/blob.h views of
 * one read-only mapping per file, shared by every model, subgraph and engine that uses
 * them). Saving never writes a protobuf of 2 GiB or more: see struct wh_save_opts. The
 * returned model belongs to the caller (wh_model_destroy). */
#ifndef WH_ONNX_IO_H
#define WH_ONNX_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/ir.h"
#include "graph/tensor.h"

enum wh_status wh_model_load(const char *path, struct wh_model **out);
/* dir: folder for external data, NULL to reject external data; label names the source in
 * error messages. */
enum wh_status wh_model_load_buffer(const void *data, size_t len, const char *dir,
				    const char *label, struct wh_model **out);

/* The external-data files that the model file at path names: each tensor's "location"
 * joined to the model's folder ("<dir>/<location>", as written; not checked to exist or to
 * stay inside the folder: the loader does that), each once. Found by walking the file's wire
 * format, nothing unpacked, so asking costs little for a model of any size. *out (n_out
 * strings) belongs to the caller: wh_model_files_free. WH_ERR_IO when path cannot be read. */
enum wh_status wh_model_external_files(const char *path, char ***out, uint32_t *n_out);
void wh_model_files_free(char **files, uint32_t n);

/* How a model is saved to a file (options as Polygraphy's --save-external-data,
 * --external-data-size-threshold, --no-save-all-tensors-to-one-file).
 *
 * Weights that are views of an original weights file (loaded external data) keep pointing
 * at it, with their original offsets: the file is hard-linked into the saved model's folder
 * under the name the original gives it (nothing when that name already is the same file),
 * so saving a subgraph of a 100 GB model writes kilobytes. Where a different file has that
 * name (another model's weights), it is kept: the link gets the first free "<name>.N", the
 * saved model points at it, and a warning says so. No save replaces a weights file that the
 * saved model's tensors view (WH_ERR_USAGE). Where a hard link is impossible (another file
 * system) the save warns and proceeds as self_contained: a symbolic link out of the folder
 * would be refused by ONNX Runtime and by wh_model_load. Other weights are written inline,
 * unless the model would be inline_limit bytes or more (or external is set): then each
 * initializer of size_threshold bytes or more goes to a new weights file next to the model
 * ("<model file name>.data", or one file per tensor named after it; a name used by the model
 * file or by a linked file gets a ".N" suffix). Tensor attributes (Constant values) stay
 * inline, as onnx's converter leaves them. Files are written to a temporary name and renamed
 * (a replaced file may be mapped by a loaded model), the model file last. */
#define WH_SAVE_DEFAULT_SIZE_THRESHOLD 1024u
#define WH_SAVE_DEFAULT_INLINE_LIMIT ((uint64_t)2 << 30)
struct wh_save_opts {
	bool external;                  /* always write tensors >= size_threshold externally */
	const char *external_data_path; /* new weights file (relative to the model's folder);
					 * implies external and self_contained; borrowed */
	uint64_t size_threshold;        /* bytes; tensors below stay inline */
	uint64_t inline_limit;          /* bytes; a model this large inline goes external */
	bool one_file;                  /* false: one new file per tensor */
	bool self_contained;            /* write every weight (never link the original's files) */
	const char *const *keep;        /* files no save replaces, whatever names they take (the
					 * input model's weights files); n_keep of them; borrowed */
	uint32_t n_keep;
};
void wh_save_opts_init(struct wh_save_opts *o); /* the defaults above, one file */
/* opts NULL: the defaults. */
enum wh_status wh_model_save_with(const struct wh_model *m, const char *path,
				  const struct wh_save_opts *opts);
/* wh_model_save_with(m, path, NULL). */
enum wh_status wh_model_save(const struct wh_model *m, const char *path);
/* Everything inline (a buffer cannot point at files); WH_ERR_UNSUPPORTED over 2 GiB.
 * *data_out is malloc'd, owned by the caller. */
enum wh_status wh_model_save_buffer(const struct wh_model *m, uint8_t **data_out, size_t *len_out);

/* What a value's declared type holds (ONNX TypeProto): a tensor (also when no type is
 * declared), a sequence of tensors, an optional tensor or an optional sequence of tensors,
 * or anything else (maps, sparse tensors, nested sequences). *elem_out (may be NULL): the
 * tensor element type inside, UNDEFINED when not declared. */
enum wh_value_type {
	WH_TYPE_TENSOR = 0,
	WH_TYPE_SEQUENCE = 1,
	WH_TYPE_OPTIONAL = 2,          /* optional(tensor) */
	WH_TYPE_OPTIONAL_SEQUENCE = 3, /* optional(sequence(tensor)) */
	WH_TYPE_OTHER = 4,
};
enum wh_value_type wh_value_type_of(const struct wh_value *v, enum wh_dtype *elem_out);
/* The value of a tensor held by an attribute (Constant's value, LabelEncoder's
 * keys_tensor, ...) as a tensor t (released first): numbers share the attribute's bytes,
 * strings are decoded from the kept TensorProto fields (protobuf-c) and copied (an embedded
 * NUL ends a string). WH_ERR_INVALID when the data does not match the shape. */
enum wh_status wh_const_tensor_value(const struct wh_const_tensor *ct, struct wh_tensor *t);
/* Declares value id of g a sequence of tensors of elem (UNDEFINED: unknown), as shape
 * inference finds it; the TypeProto is kept in the graph's arena. */
enum wh_status wh_value_set_sequence_type(struct wh_graph *g, uint32_t id, enum wh_dtype elem);
/* The same for a TYPE_PROTO attribute (Optional's `type`); WH_TYPE_OTHER when a is not one. */
enum wh_value_type wh_attr_type_of(const struct wh_attr *a, enum wh_dtype *elem_out);

#endif
