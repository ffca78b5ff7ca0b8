/* Tensor files and data sets.
 *
 * A tensor file is an ONNX TensorProto (".pb", as in the ONNX test data) or a NumPy ".npy"
 * (version 1-3, little-endian, C order). A data set is a folder of such files: either
 * input_<k>.pb / output_<k>.pb (matched to the model's inputs or outputs by position), or
 * one file per tensor named after it (wh_tensor_name_to_file: characters outside
 * [A-Za-z0-9._-] written as %XX, a name too long for a file name cut and hashed). The name
 * stored inside a .pb takes precedence over its file name.
 * Files are untrusted input: sizes are checked before allocation. */
#ifndef WH_TENSOR_FILE_H
#define WH_TENSOR_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "graph/ir.h"
#include "graph/tensor.h"

/* *name_out (may be NULL) receives a malloc'd copy of the stored name, or NULL if none. */
enum wh_status wh_tensor_read_pb(const char *path, struct wh_tensor *t, char **name_out);

/* Which message a .pb file holds. The file does not say; the declared type of the value it
 * is for does (wh_value_type_of in graph/onnx-io.h). A sequence holds tensors; an optional
 * is read as its value, or as an empty optional (kind WH_VALUE_NONE). */
enum wh_pb_kind { WH_PB_TENSOR = 0, WH_PB_SEQUENCE = 1, WH_PB_OPTIONAL = 2 };
enum wh_status wh_value_read_pb(const char *path, enum wh_pb_kind kind, struct wh_tensor *t, char **name_out);
enum wh_status wh_value_read_pb_buffer(const void *data, size_t len, const char *label, enum wh_pb_kind kind,
				       struct wh_tensor *t, char **name_out);
/* Writes t as the message of that kind (a tensor or a sequence under WH_PB_OPTIONAL is
 * wrapped in an OptionalProto; an empty optional is always one). wh_tensor_write_pb picks
 * the kind from t->kind. */
enum wh_status wh_value_write_pb(const char *path, const char *name, const struct wh_tensor *t, enum wh_pb_kind kind);
enum wh_status wh_tensor_read_pb_buffer(const void *data, size_t len, const char *label,
					struct wh_tensor *t, char **name_out);
enum wh_status wh_tensor_write_pb(const char *path, const char *name, const struct wh_tensor *t);
enum wh_status wh_tensor_read_npy(const char *path, struct wh_tensor *t);
enum wh_status wh_tensor_read_npy_buffer(const void *data, size_t len, const char *label,
					 struct wh_tensor *t);
enum wh_status wh_tensor_write_npy(const char *path, const struct wh_tensor *t);
/* Writes the elements alone, as ONNX raw_data lays them out: little-endian, row-major, no
 * header, sub-byte types packed two (or four) to a byte, bool one byte. This is the file
 * trtexec's --loadInputs and --loadRefOutputs read (the tensor's bytes in its engine type).
 * Strings, sequences and empty optionals have no such form: WH_ERR_UNSUPPORTED. */
enum wh_status wh_tensor_write_raw(const char *path, const struct wh_tensor *t);
/* Whether .npy has a type for dt (numpy lacks bfloat16, the float8 and the sub-byte types). */
bool wh_npy_holds(enum wh_dtype dt);
/* A .npy file as a tensor that views the file read-only (graph/blob.h: mapped, nothing read
 * before it is touched, shared by every reference to t); the file must not change while t
 * or a reference to it lives. Data that needs fixing (big-endian, bool) is copied instead. */
enum wh_status wh_tensor_map_npy(const char *path, struct wh_tensor *t);
/* By extension (.pb or .npy). */
enum wh_status wh_tensor_read_file(const char *path, struct wh_tensor *t, char **name_out);

struct wh_named_tensor {
	char *name;     /* malloc'd; for input_<k>.pb without a stored name: NULL */
	int index;      /* k for input_<k>/output_<k> files, else -1 */
	struct wh_tensor t;
};

/* Caller-owned (_init/_release). */
struct wh_tensor_set {
	size_t n;
	struct wh_named_tensor *items;
};

void wh_tensor_set_init(struct wh_tensor_set *s);
void wh_tensor_set_release(struct wh_tensor_set *s);
/* Adds a reference to t under name (copied). */
enum wh_status wh_tensor_set_add(struct wh_tensor_set *s, const char *name, int index,
				 const struct wh_tensor *t);
const struct wh_tensor *wh_tensor_set_find(const struct wh_tensor_set *s, const char *name);
/* Reads every .pb/.npy file of a folder, sorted by file name (input_<k> by k).
 * prefix: when not NULL, only files named <prefix>_<k>.pb are read ("input", "output"). */
enum wh_status wh_tensor_set_read_dir(const char *dir, const char *prefix, struct wh_tensor_set *s);
/* The same, each .pb read as the message its value is declared as in g (see wh_pb_kind):
 * <prefix>_<k> is the k-th input of g that is not an initializer (or the k-th output when
 * outputs is true), a named file the value of that name; g NULL: every file a tensor. */
enum wh_status wh_tensor_set_read_dir_for(const char *dir, const char *prefix, const struct wh_graph *g, bool outputs,
					  struct wh_tensor_set *s);
/* Which names of a model a data folder's tensors must carry. */
enum wh_names {
	WH_NAMES_INPUTS = 0, /* the graph inputs that are not initializers (input data) */
	WH_NAMES_VALUES = 1, /* any value of the graph (reference values of every tensor) */
};
/* Matches every named tensor of s (read from dir) to a name of g, strictly: exactly, or
 * else through the spellings that ONNX Runtime, Polygraphy and exporters write into file
 * names ('/' and ':' written as '_', so onnx__Flatten_0 is onnx::Flatten_0), in which case
 * the tensor takes the model's name. A tensor that matches no name, or that matches several
 * (an ambiguous spelling), is WH_ERR_INVALID naming it and, for inputs, the model's inputs;
 * so is a second tensor for the same name. Tensors without a name (input_<k>.pb) are left
 * to their position. */
enum wh_status wh_tensor_set_match_names(struct wh_tensor_set *s, const struct wh_graph *g, enum wh_names what, const char *dir);

/* Writes each tensor as <wh_tensor_name_to_file(name)>.pb holding its name (creating dir),
 * or as <prefix>_<k>.pb when prefix is not NULL. A failure removes the files this call
 * wrote (and dir, when this call made it). */
enum wh_status wh_tensor_set_write_dir(const char *dir, const char *prefix, const struct wh_tensor_set *s);
/* The same, values declared optional in g written as OptionalProto. */
enum wh_status wh_tensor_set_write_dir_for(const char *dir, const char *prefix, const struct wh_graph *g, bool outputs,
					   const struct wh_tensor_set *s);
/* The longest file name stem of a tensor: NAME_MAX (255) less room for an extension
 * (".npy") and a ".<n>" suffix. */
#define WH_TENSOR_STEM_MAX 240
/* The file name stem of a tensor name, always a valid file name of at most
 * WH_TENSOR_STEM_MAX bytes, distinct for distinct names: every byte outside [A-Za-z0-9._-]
 * (and a leading '.') written as %XX; when that is longer than WH_TENSOR_STEM_MAX, the
 * first part of it (no %XX cut) followed by '~' and the 32 hex digits of the name's XXH3-128
 * hash (such a stem cannot be undone: the .pb files whittle writes store the name). The
 * empty name is "%00". */
void wh_tensor_name_to_file(const char *name, char out[WH_TENSOR_STEM_MAX + 1]);
/* Whether a stem is a cut-and-hashed one. */
bool wh_tensor_file_is_hashed(const char *stem, size_t len);
/* dir/<stem of name><ext> into path; WH_ERR_INVALID when it does not fit size. */
enum wh_status wh_tensor_file_path(const char *dir, const char *name, const char *ext, char *path, size_t size);
/* Whether the file of any tensor name fits under dir (PATH_MAX); WH_ERR_INVALID naming what
 * (the folder's role) when not. For checks before a long run. */
enum wh_status wh_tensor_dir_fits(const char *dir, const char *what);

#endif
