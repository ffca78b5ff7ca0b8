#include "graph/onnx-io.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/onnx-depth.h"
#include "graph/onnx-internal.h"
#include "graph/os.h"
#include "graph/topo.h"

/* protobuf's hard limit: a message of 2 GiB or more cannot be parsed by anyone */
#define PROTOBUF_MAX ((uint64_t)INT32_MAX)

/* ---- protobuf-c allocator on an arena ---- */

static void *pb_alloc(void *data, size_t size)
{
	return wh_arena_alloc(data, size);
}

static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

void wh_pb_allocator_init(ProtobufCAllocator *alloc, struct wh_arena *arena)
{
	alloc->alloc = pb_alloc;
	alloc->free = pb_free;
	alloc->allocator_data = arena;
}

/* Serializes what is left of a message after the modelled fields were cleared. */
static enum wh_status pack_rest(struct wh_arena *arena, const ProtobufCMessage *msg,
				struct wh_bytes *out)
{
	size_t n = protobuf_c_message_get_packed_size(msg);
	out->len = 0;
	out->data = NULL;
	if (!n)
		return WH_OK;
	uint8_t *buf = wh_arena_alloc(arena, n);
	if (!buf)
		return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
	protobuf_c_message_pack(msg, buf);
	out->data = buf;
	out->len = n;
	return WH_OK;
}

/* ---- external data ---- */

void wh_pb_files_release(struct wh_pb_files *fs)
{
	for (uint32_t i = 0; i < fs->n; i++)
		wh_blob_file_release(fs->files[i]);
	free(fs->files);
	fs->files = NULL;
	fs->n = fs->cap = 0;
}

/* The mapping of a checked external-data file, opened once per load. */
static enum wh_status files_get(struct wh_pb_files *fs, const char *real_path, const char *location,
				struct wh_blob_file **out)
{
	for (uint32_t i = 0; i < fs->n; i++)
		if (!strcmp(wh_blob_file_path(fs->files[i]), real_path)) {
			*out = fs->files[i];
			return WH_OK;
		}
	if (fs->n == fs->cap) {
		uint32_t cap = fs->cap ? fs->cap * 2 : 4;
		struct wh_blob_file **n = realloc(fs->files, cap * sizeof *n);
		if (!n)
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		fs->files = n;
		fs->cap = cap;
	}
	enum wh_status st = wh_blob_file_open(real_path, location, &fs->files[fs->n]);
	if (st == WH_OK)
		*out = fs->files[fs->n++];
	return st;
}

static enum wh_status read_external(struct wh_pb_files *fs, const char *label, const char *location,
				    uint64_t offset, int64_t length, uint64_t expected,
				    struct wh_blob **out)
{
	const char *dir = fs ? fs->dir : NULL;
	if (!dir)
		return wh_error(WH_ERR_INVALID, "tensor '%s': uses external data but the model was not loaded from a file (save it with weights inline)", label);
	if (!location || !*location)
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data without a location (fix the model)", label);
	if (location[0] == '/' || strstr(location, ".."))
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data path '%s' leaves the model's folder (only relative paths inside the model folder are allowed)", label, location);
	char path[PATH_MAX], real_dir[PATH_MAX], real_path[PATH_MAX];
	if (snprintf(path, sizeof path, "%s/%s", dir, location) >= (int)sizeof path)
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data path too long (shorten it)", label);
	if (!realpath(dir, real_dir))
		return wh_error(WH_ERR_IO, "%s: cannot resolve model folder: %s (check the path)", dir, strerror(errno));
	if (!realpath(path, real_path))
		return wh_error(WH_ERR_IO, "tensor '%s': external data file '%s': %s (place it next to the model)", label, path, strerror(errno));
	size_t dl = strlen(real_dir);
	if (strncmp(real_path, real_dir, dl) != 0 || real_path[dl] != '/')
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data file '%s' resolves outside the model's folder (remove the symlink)", label, location);
	struct stat sb;
	if (stat(real_path, &sb) != 0 || !S_ISREG(sb.st_mode))
		return wh_error(WH_ERR_IO, "tensor '%s': external data '%s' is not a regular file (point it at a file)", label, path);
	uint64_t size = (uint64_t)sb.st_size;
	uint64_t len = length >= 0 ? (uint64_t)length : (size > offset ? size - offset : 0);
	uint64_t end;
	if (!wh_add_u64(offset, len, &end) || end > size)
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data range %llu+%llu is beyond the end of '%s' (%llu bytes) (the weights file is truncated)",
				label, (unsigned long long)offset, (unsigned long long)len, path, (unsigned long long)size);
	if (len != expected)
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data has %llu bytes, its shape needs %llu (fix the model)",
				label, (unsigned long long)len, (unsigned long long)expected);
	struct wh_blob_file *f = NULL;
	enum wh_status st = files_get(fs, real_path, location, &f);
	if (st != WH_OK)
		return st;
	/* the file may have changed between the stat and the mapping: check the mapped size */
	if (end > wh_blob_file_size(f))
		return wh_error(WH_ERR_INVALID, "tensor '%s': external data range %llu+%llu is beyond the end of '%s' (%llu bytes) (the weights file is truncated)",
				label, (unsigned long long)offset, (unsigned long long)len, path, (unsigned long long)wh_blob_file_size(f));
	return wh_blob_create_view(f, offset, (size_t)len, out);
}

/* ---- tensors ---- */

enum wh_status wh_pb_tensor_decode(const Onnx__TensorProto *tp, const char *dir, const char *label,
				   enum wh_dtype *dtype_out, int32_t *rank_out, int64_t *dims_out,
				   struct wh_blob **data_out)
{
	struct wh_pb_files fs = {.dir = dir};
	enum wh_status st = wh_pb_tensor_decode_in(tp, &fs, label, dtype_out, rank_out, dims_out, data_out);
	wh_pb_files_release(&fs);
	return st;
}

enum wh_status wh_pb_tensor_decode_in(const Onnx__TensorProto *tp, struct wh_pb_files *fs,
				      const char *label, enum wh_dtype *dtype_out, int32_t *rank_out,
				      int64_t *dims_out, struct wh_blob **data_out)
{
	*data_out = NULL;
	int dt = tp->has_data_type ? tp->data_type : 0;
	if (!wh_dtype_valid(dt))
		return wh_error(WH_ERR_INVALID, "tensor '%s': unknown data type %d (fix the model)", label, dt);
	if (tp->n_dims > WH_MAX_RANK)
		return wh_error(WH_ERR_UNSUPPORTED, "tensor '%s': rank %zu is above %d (whittle's limit)", label, tp->n_dims, WH_MAX_RANK);
	for (size_t i = 0; i < tp->n_dims; i++) {
		if (tp->dims[i] < 0)
			return wh_error(WH_ERR_INVALID, "tensor '%s': negative dimension %lld (fix the model)", label, (long long)tp->dims[i]);
		dims_out[i] = tp->dims[i];
	}
	*dtype_out = (enum wh_dtype)dt;
	*rank_out = (int32_t)tp->n_dims;
	uint64_t count;
	if (!wh_shape_count(tp->dims, (int)tp->n_dims, &count))
		return wh_error(WH_ERR_OVERFLOW, "tensor '%s': %zu-d shape has too many elements (fix the model)", label, tp->n_dims);
	if (dt == WH_DT_STRING) {
		if (tp->n_string_data != count)
			return wh_error(WH_ERR_INVALID, "tensor '%s': has %zu strings, its shape needs %llu (fix the model)", label, tp->n_string_data, (unsigned long long)count);
		return WH_OK;
	}
	uint64_t bytes;
	if (!wh_dtype_raw_bytes((enum wh_dtype)dt, count, &bytes))
		return wh_error(WH_ERR_OVERFLOW, "tensor '%s': too large (fix the model)", label);

	if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
		const char *location = NULL;
		uint64_t offset = 0;
		int64_t length = -1;
		for (size_t i = 0; i < tp->n_external_data; i++) {
			const char *k = tp->external_data[i]->key, *v = tp->external_data[i]->value;
			if (!k || !v)
				continue;
			/* a key given twice has no one meaning: refuse rather than take the last */
			for (size_t j = 0; j < i; j++)
				if (tp->external_data[j]->key && !strcmp(tp->external_data[j]->key, k))
					return wh_error(WH_ERR_INVALID, "tensor '%s': external data key '%s' given twice (fix the model)", label, k);
			char *end = (char *)v;
			if (!strcmp(k, "location")) {
				location = v;
			} else if (!strcmp(k, "offset") || !strcmp(k, "length")) {
				/* decimal digits only: strtoll would take "", " 0" and "+0" */
				errno = 0;
				long long x = *v >= '0' && *v <= '9' ? strtoll(v, &end, 10) : -1;
				if (errno || x < 0 || *end)
					return wh_error(WH_ERR_INVALID, "tensor '%s': bad external data %s '%s' (fix the model)", label, k, v);
				if (!strcmp(k, "offset"))
					offset = (uint64_t)x;
				else
					length = x;
			}
		}
		return read_external(fs, label, location, offset, length, bytes, data_out);
	}

	void *w;
	enum wh_status st;
	if (tp->has_raw_data) {
		if (tp->raw_data.len != bytes)
			return wh_error(WH_ERR_INVALID, "tensor '%s': raw data has %zu bytes, its shape needs %llu (fix the model)", label, tp->raw_data.len, (unsigned long long)bytes);
		return wh_blob_create_copy(tp->raw_data.data, bytes, data_out);
	}
	/* typed fields: check the count before allocating */
	size_t have;
	uint64_t want = count;
	switch (dt) {
	case WH_DT_FLOAT: have = tp->n_float_data; break;
	case WH_DT_COMPLEX64: have = tp->n_float_data; want = count * 2; break;
	case WH_DT_DOUBLE: have = tp->n_double_data; break;
	case WH_DT_COMPLEX128: have = tp->n_double_data; want = count * 2; break;
	case WH_DT_INT64: have = tp->n_int64_data; break;
	case WH_DT_UINT32: case WH_DT_UINT64: have = tp->n_uint64_data; break;
	case WH_DT_UINT4: case WH_DT_INT4: case WH_DT_FLOAT4E2M1: case WH_DT_UINT2: case WH_DT_INT2:
		have = tp->n_int32_data; want = bytes; break;
	default: have = tp->n_int32_data; break;
	}
	if (have != want) {
		if (have == 0 && count == 0)
			return wh_blob_create(0, data_out, &w);
		return wh_error(WH_ERR_INVALID, "tensor '%s': holds %zu values, its shape needs %llu (fix the model)", label, have, (unsigned long long)want);
	}
	if ((st = wh_blob_create(bytes, data_out, &w)) != WH_OK)
		return st;
	for (uint64_t i = 0; i < want; i++) {
		switch (dt) {
		case WH_DT_FLOAT: case WH_DT_COMPLEX64: ((float *)w)[i] = tp->float_data[i]; break;
		case WH_DT_DOUBLE: case WH_DT_COMPLEX128: ((double *)w)[i] = tp->double_data[i]; break;
		case WH_DT_INT64: ((int64_t *)w)[i] = tp->int64_data[i]; break;
		case WH_DT_UINT32: ((uint32_t *)w)[i] = (uint32_t)tp->uint64_data[i]; break;
		case WH_DT_UINT64: ((uint64_t *)w)[i] = tp->uint64_data[i]; break;
		case WH_DT_INT32: ((int32_t *)w)[i] = tp->int32_data[i]; break;
		case WH_DT_INT16: ((int16_t *)w)[i] = (int16_t)tp->int32_data[i]; break;
		case WH_DT_UINT16: case WH_DT_FLOAT16: case WH_DT_BFLOAT16:
			((uint16_t *)w)[i] = (uint16_t)tp->int32_data[i]; break;
		default: ((uint8_t *)w)[i] = (uint8_t)tp->int32_data[i]; break;
		}
	}
	return WH_OK;
}

void wh_pb_tensor_encode(Onnx__TensorProto *tp, const char *name, enum wh_dtype dtype,
			 int32_t rank, const int64_t *dims, const struct wh_blob *data)
{
	tp->name = (char *)name;
	tp->has_data_type = 1;
	tp->data_type = dtype;
	tp->n_dims = rank > 0 ? (size_t)rank : 0;
	tp->dims = (int64_t *)dims;
	if (dtype != WH_DT_STRING && data) {
		tp->has_raw_data = 1;
		tp->raw_data.data = (uint8_t *)data->data;
		tp->raw_data.len = data->size;
	}
}

static void tensor_clear_modelled(Onnx__TensorProto *tp)
{
	tp->n_dims = 0;
	tp->has_data_type = 0;
	tp->name = NULL;
	tp->has_raw_data = 0;
	tp->n_float_data = tp->n_int32_data = tp->n_int64_data = 0;
	tp->n_double_data = tp->n_uint64_data = 0;
	tp->n_external_data = 0;
	tp->has_data_location = 0;
}

/* ---- load ---- */

struct loader {
	struct wh_model *m;
	struct wh_arena *tmp;
	const char *label;
	struct wh_pb_files files; /* the external-data files opened so far */
};

static enum wh_status convert_graph(struct loader *L, Onnx__GraphProto *gp, struct wh_graph *g);

static enum wh_status convert_const_tensor(struct loader *L, Onnx__TensorProto *tp,
					   struct wh_const_tensor *t, const char *label)
{
	int64_t dims[WH_MAX_RANK];
	enum wh_status st = wh_pb_tensor_decode_in(tp, &L->files, label, &t->dtype, &t->rank, dims, &t->data);
	if (st != WH_OK)
		return st;
	t->dims = wh_arena_memdup(L->m->arena, dims, sizeof(int64_t) * (size_t)(t->rank ? t->rank : 1));
	t->name = wh_arena_strdup(L->m->arena, tp->name ? tp->name : "");
	if (!t->dims || !t->name)
		return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
	tensor_clear_modelled(tp);
	return pack_rest(L->m->arena, &tp->base, &t->rest);
}

static enum wh_status copy_bytes(struct wh_arena *a, const ProtobufCBinaryData *b, struct wh_bytes *out)
{
	out->len = b->len;
	out->data = b->len ? wh_arena_memdup(a, b->data, b->len) : NULL;
	if (b->len && !out->data)
		return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
	return WH_OK;
}

static enum wh_status convert_attr(struct loader *L, struct wh_graph *g, const char *node_label,
				   Onnx__AttributeProto *ap, struct wh_attr *a)
{
	struct wh_arena *A = L->m->arena;
	enum wh_status st = WH_OK;
	a->name = wh_arena_strdup(A, ap->name ? ap->name : "");
	if (!a->name)
		return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
	a->type = ap->has_type ? (enum wh_attr_type)ap->type : WH_ATTR_UNDEFINED;
	if (!ap->has_type) {
		/* IR < 3 files leave type out; infer it from the field that is set */
		if (ap->has_f) a->type = WH_ATTR_FLOAT;
		else if (ap->has_i) a->type = WH_ATTR_INT;
		else if (ap->has_s) a->type = WH_ATTR_STRING;
		else if (ap->t) a->type = WH_ATTR_TENSOR;
		else if (ap->g) a->type = WH_ATTR_GRAPH;
		else if (ap->n_floats) a->type = WH_ATTR_FLOATS;
		else if (ap->n_ints) a->type = WH_ATTR_INTS;
		else if (ap->n_strings) a->type = WH_ATTR_STRINGS;
		else if (ap->n_tensors) a->type = WH_ATTR_TENSORS;
		else if (ap->n_graphs) a->type = WH_ATTR_GRAPHS;
	}
	char label[512];
	snprintf(label, sizeof label, "%s.%s", node_label, a->name);
	switch (a->type) {
	case WH_ATTR_FLOAT: a->f = ap->f; break;
	case WH_ATTR_INT: a->i = ap->i; break;
	case WH_ATTR_STRING: st = copy_bytes(A, &ap->s, &a->s); break;
	case WH_ATTR_TENSOR:
		if (!ap->t)
			return wh_error(WH_ERR_INVALID, "attribute '%s': tensor attribute without a tensor (fix the model)", label);
		if (!(a->t = wh_arena_alloc(A, sizeof *a->t)))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		st = convert_const_tensor(L, ap->t, a->t, label);
		break;
	case WH_ATTR_GRAPH:
		if (!ap->g)
			return wh_error(WH_ERR_INVALID, "attribute '%s': graph attribute without a graph (fix the model)", label);
		if ((st = wh_graph_create_in(L->m, g, &a->g)) == WH_OK)
			st = convert_graph(L, ap->g, a->g);
		break;
	case WH_ATTR_FLOATS:
		a->n = ap->n_floats;
		if (a->n && !(a->floats = wh_arena_memdup(A, ap->floats, a->n * sizeof(float))))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		break;
	case WH_ATTR_INTS:
		a->n = ap->n_ints;
		if (a->n && !(a->ints = wh_arena_memdup(A, ap->ints, a->n * sizeof(int64_t))))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		break;
	case WH_ATTR_STRINGS:
		a->n = ap->n_strings;
		if (!(a->strings = wh_arena_calloc(A, a->n + 1, sizeof *a->strings)))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		for (size_t i = 0; i < a->n && st == WH_OK; i++)
			st = copy_bytes(A, &ap->strings[i], &a->strings[i]);
		break;
	case WH_ATTR_TENSORS:
		a->n = ap->n_tensors;
		if (!(a->tensors = wh_arena_calloc(A, a->n + 1, sizeof *a->tensors)))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		for (size_t i = 0; i < a->n && st == WH_OK; i++)
			st = convert_const_tensor(L, ap->tensors[i], &a->tensors[i], label);
		break;
	case WH_ATTR_GRAPHS:
		a->n = ap->n_graphs;
		if (!(a->graphs = wh_arena_calloc(A, a->n + 1, sizeof *a->graphs)))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		for (size_t i = 0; i < a->n && st == WH_OK; i++)
			if ((st = wh_graph_create_in(L->m, g, &a->graphs[i])) == WH_OK)
				st = convert_graph(L, ap->graphs[i], a->graphs[i]);
		break;
	default:
		break; /* sparse tensors and type protos stay in rest */
	}
	if (st != WH_OK)
		return st;
	ap->name = NULL;
	ap->has_type = 0;
	ap->has_f = ap->has_i = ap->has_s = 0;
	ap->t = NULL;
	ap->g = NULL;
	ap->n_floats = ap->n_ints = ap->n_strings = ap->n_tensors = ap->n_graphs = 0;
	return pack_rest(A, &ap->base, &a->rest);
}

static enum wh_status apply_type(struct loader *L, struct wh_graph *g, uint32_t id,
				 Onnx__TypeProto *tp)
{
	if (!tp)
		return WH_OK;
	if (tp->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE && tp->tensor_type) {
		Onnx__TypeProto__Tensor *tt = tp->tensor_type;
		struct wh_value *v = &g->values[id];
		int dt = tt->has_elem_type ? tt->elem_type : 0;
		if (dt && !wh_dtype_valid(dt))
			return wh_error(WH_ERR_INVALID, "tensor '%s': unknown element type %d (fix the model)", v->name, dt);
		Onnx__TensorShapeProto *sp = tt->shape;
		if (sp && sp->n_dim > WH_MAX_RANK)
			return wh_error(WH_ERR_UNSUPPORTED, "tensor '%s': rank %zu is above %d (whittle's limit)", v->name, sp->n_dim, WH_MAX_RANK);
		enum wh_status st = wh_graph_set_shape(g, id, (enum wh_dtype)dt, sp ? (int32_t)sp->n_dim : -1, NULL);
		if (st != WH_OK)
			return st;
		v = &g->values[id];
		for (size_t i = 0; sp && i < sp->n_dim; i++) {
			Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
			if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
				if (d->dim_value < 0)
					return wh_error(WH_ERR_INVALID, "tensor '%s': negative dimension %lld (fix the model)", v->name, (long long)d->dim_value);
				v->dims[i].value = d->dim_value;
			} else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
				v->dims[i].param = wh_arena_strdup(g->arena, d->dim_param);
			}
		}
		/* keep the message as loaded, for what the IR does not model */
		return pack_rest(L->m->arena, &tp->base, &g->values[id].type_orig);
	}
	/* sequences, maps, optionals: kept verbatim */
	return pack_rest(L->m->arena, &tp->base, &g->values[id].type_rest);
}

/* Whether a declared type (dtype 0: any; rank -1: any; a dimension < 0: any) admits a tensor
 * of dt and these dims. */
static bool declaration_admits(const struct wh_value *decl, enum wh_dtype dt, int32_t rank, const struct wh_dim *dims)
{
	if (decl->dtype && decl->dtype != dt)
		return false;
	if (decl->rank < 0)
		return true;
	if (decl->rank != rank)
		return false;
	for (int32_t d = 0; d < rank; d++)
		if (decl->dims[d].value >= 0 && decl->dims[d].value != dims[d].value)
			return false;
	return true;
}

/* A declaration (graph input, value_info, graph output) of a tensor that is also an
 * initializer describes the initializer's data, which keeps its own type and shape (the
 * saver writes the data's dims): the declaration must admit them, and is kept as loaded
 * (type_orig) for the saver to write. */
static enum wh_status keep_declaration(struct wh_graph *g, uint32_t id, const struct wh_value *decl, const struct wh_value *data)
{
	struct wh_value *v = &g->values[id];
	if (!declaration_admits(decl, data->dtype, data->rank, data->dims))
		return wh_error(WH_ERR_INVALID, "tensor '%s': its declared type or shape differs from its initializer's (fix the model)", v->name);
	v->dtype = data->dtype;
	v->rank = data->rank;
	v->dims = data->dims;
	v->type_orig = decl->type_orig;
	return WH_OK;
}

static enum wh_status convert_value_info(struct loader *L, struct wh_graph *g, Onnx__ValueInfoProto *vi,
					 uint32_t *id_out)
{
	if (!vi->name || !*vi->name)
		return wh_error(WH_ERR_INVALID, "graph '%s': a value info without a name (fix the model)", g->name ? g->name : "");
	enum wh_status st = wh_graph_intern_value(g, vi->name, id_out);
	if (st != WH_OK)
		return st;
	struct wh_value *v = &g->values[*id_out];
	if (!(v->flags & WH_VALUE_HAS_INFO)) {
		/* a value_info or graph output after the initializers: apply_type would give the
		 * initializer the declared shape */
		struct wh_value data = *v;
		if ((st = apply_type(L, g, *id_out, vi->type)) != WH_OK)
			return st;
		struct wh_value decl = g->values[*id_out];
		if ((data.flags & WH_VALUE_INITIALIZER) && (st = keep_declaration(g, *id_out, &decl, &data)) != WH_OK)
			return st;
		v = &g->values[*id_out];
		v->flags |= WH_VALUE_HAS_INFO;
		vi->name = NULL;
		vi->type = NULL;
		st = pack_rest(L->m->arena, &vi->base, &v->info_rest);
	}
	return st;
}

/* Looks a name up in the enclosing graphs of a subgraph. */
static bool outer_has(const struct wh_graph *g, const char *name)
{
	for (const struct wh_graph *p = g->parent; p; p = p->parent)
		if (wh_graph_find_value(p, name) != WH_NONE)
			return true;
	return false;
}

static enum wh_status convert_graph(struct loader *L, Onnx__GraphProto *gp, struct wh_graph *g)
{
	struct wh_arena *A = L->m->arena;
	enum wh_status st;
	uint32_t id;
	g->name = wh_arena_strdup(A, gp->name ? gp->name : "");

	for (size_t i = 0; i < gp->n_input; i++) {
		if ((st = convert_value_info(L, g, gp->input[i], &id)) != WH_OK)
			return st;
		if (g->values[id].flags & WH_VALUE_INPUT)
			return wh_error(WH_ERR_INVALID, "graph input '%s': listed twice (fix the model)", g->values[id].name);
		if ((st = wh_graph_add_input(g, id)) != WH_OK)
			return st;
	}
	for (size_t i = 0; i < gp->n_initializer; i++) {
		Onnx__TensorProto *tp = gp->initializer[i];
		const char *nm = tp->name ? tp->name : "";
		if (!*nm)
			return wh_error(WH_ERR_INVALID, "initializer %zu: has no name (fix the model)", i);
		if ((st = wh_graph_intern_value(g, nm, &id)) != WH_OK)
			return st;
		if (g->values[id].flags & WH_VALUE_INITIALIZER)
			return wh_error(WH_ERR_INVALID, "initializer '%s': defined twice (fix the model)", nm);
		enum wh_dtype dt;
		int32_t rank;
		int64_t dims[WH_MAX_RANK];
		struct wh_blob *blob;
		if ((st = wh_pb_tensor_decode_in(tp, &L->files, nm, &dt, &rank, dims, &blob)) != WH_OK)
			return st;
		/* an initializer that doubles as a graph input is its default value (ONNX allows
		 * it): the input's declaration stays as loaded, the value takes the data's shape */
		struct wh_value decl = g->values[id];
		st = wh_graph_set_initializer(g, id, dt, rank, dims, blob);
		wh_blob_release(blob);
		if (st != WH_OK)
			return st;
		struct wh_value data = g->values[id];
		if ((decl.flags & WH_VALUE_HAS_INFO) && (st = keep_declaration(g, id, &decl, &data)) != WH_OK)
			return st;
		tensor_clear_modelled(tp);
		if ((st = pack_rest(A, &tp->base, &g->values[id].tensor_rest)) != WH_OK)
			return st;
	}
	/* Pass 1: create every node output so that nodes may come in any order. */
	for (size_t n = 0; n < gp->n_node; n++) {
		Onnx__NodeProto *np = gp->node[n];
		for (size_t o = 0; o < np->n_output; o++) {
			if (!np->output[o] || !*np->output[o])
				continue;
			if ((st = wh_graph_intern_value(g, np->output[o], &id)) != WH_OK)
				return st;
		}
	}
	for (size_t i = 0; i < gp->n_value_info; i++)
		if ((st = convert_value_info(L, g, gp->value_info[i], &id)) != WH_OK)
			return st;
	/* Pass 2: nodes with resolved inputs. */
	for (size_t n = 0; n < gp->n_node; n++) {
		Onnx__NodeProto *np = gp->node[n];
		char label[384];
		snprintf(label, sizeof label, "%s", np->name && *np->name ? np->name : (np->op_type ? np->op_type : "?"));
		if (!np->op_type || !*np->op_type)
			return wh_error(WH_ERR_INVALID, "node %zu ('%s'): has no op type (fix the model)", n, label);
		uint32_t *ins = wh_arena_calloc(L->tmp, np->n_input + 1, sizeof *ins);
		uint32_t *outs = wh_arena_calloc(L->tmp, np->n_output + 1, sizeof *outs);
		if (!ins || !outs)
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		for (size_t i = 0; i < np->n_input; i++) {
			const char *in = np->input[i];
			if (!in || !*in) {
				ins[i] = WH_NONE;
				continue;
			}
			ins[i] = wh_graph_find_value(g, in);
			if (ins[i] == WH_NONE) {
				if (!g->parent || !outer_has(g, in))
					return wh_error(WH_ERR_INVALID, "node '%s' (%s): input '%s' is produced by nothing (fix the model or extract a subgraph that includes its source)",
							label, np->op_type, in);
				if ((st = wh_graph_add_value(g, in, &ins[i])) != WH_OK)
					return st;
				g->values[ins[i]].flags |= WH_VALUE_OUTER;
			}
		}
		for (size_t o = 0; o < np->n_output; o++)
			outs[o] = (np->output[o] && *np->output[o]) ? wh_graph_find_value(g, np->output[o]) : WH_NONE;
		uint32_t nid;
		if ((st = wh_graph_add_node(g, np->op_type, np->domain, np->name, (uint32_t)np->n_input, ins,
					    (uint32_t)np->n_output, outs, &nid)) != WH_OK)
			return st;
		struct wh_node *node = &g->nodes[nid];
		node->n_attrs = (uint32_t)np->n_attribute;
		if (!(node->attrs = wh_arena_calloc(A, np->n_attribute + 1, sizeof *node->attrs)))
			return wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		for (size_t a = 0; a < np->n_attribute; a++) {
			/* converting a subgraph may grow g->nodes: re-fetch the node after each */
			struct wh_attr tmp_attr = {0};
			if ((st = convert_attr(L, g, label, np->attribute[a], &tmp_attr)) != WH_OK) {
				g->nodes[nid].attrs[a] = tmp_attr;
				g->nodes[nid].n_attrs = (uint32_t)a + 1;
				return st;
			}
			g->nodes[nid].attrs[a] = tmp_attr;
		}
		np->name = np->op_type = np->domain = NULL;
		np->n_input = np->n_output = np->n_attribute = 0;
		if ((st = pack_rest(A, &np->base, &g->nodes[nid].rest)) != WH_OK)
			return st;
	}
	for (size_t i = 0; i < gp->n_output; i++) {
		Onnx__ValueInfoProto *vi = gp->output[i];
		if (!vi->name || !*vi->name)
			return wh_error(WH_ERR_INVALID, "graph '%s': an output without a name (fix the model)", g->name);
		id = wh_graph_find_value(g, vi->name);
		if (id == WH_NONE) {
			if (!g->parent || !outer_has(g, vi->name))
				return wh_error(WH_ERR_INVALID, "graph output '%s': is produced by nothing (fix the model)", vi->name);
			if ((st = wh_graph_add_value(g, vi->name, &id)) != WH_OK)
				return st;
			g->values[id].flags |= WH_VALUE_OUTER;
		}
		struct wh_value *v = &g->values[id];
		if (v->flags & WH_VALUE_HAS_INFO) {
			/* already described (e.g. in value_info or as an input); keep the output's own */
			v->flags &= ~(uint32_t)WH_VALUE_HAS_INFO;
		}
		if ((st = convert_value_info(L, g, vi, &id)) != WH_OK)
			return st;
		if ((st = wh_graph_add_output(g, id)) != WH_OK)
			return st;
	}
	/* every tensor read must come from somewhere: a node, a graph input, an initializer or
	 * (in a subgraph) an enclosing graph; a value_info alone produces nothing */
	for (uint32_t n = 0; n < g->n_nodes; n++)
		for (uint32_t i = 0; i < g->nodes[n].n_inputs; i++) {
			uint32_t v = g->nodes[n].inputs[i];
			if (v == WH_NONE)
				continue;
			struct wh_value *val = &g->values[v];
			if (val->producer != WH_NONE || (val->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER | WH_VALUE_OUTER)))
				continue;
			if (g->parent && outer_has(g, val->name)) {
				val->flags |= WH_VALUE_OUTER;
				continue;
			}
			return wh_error(WH_ERR_INVALID, "node '%s' (%s): input '%s' is produced by nothing (fix the model or extract a subgraph that includes its source)",
					g->nodes[n].name, g->nodes[n].op_type, val->name);
		}
	for (uint32_t i = 0; i < g->n_outputs; i++) {
		struct wh_value *val = &g->values[g->outputs[i]];
		if (val->producer == WH_NONE && !(val->flags & (WH_VALUE_INPUT | WH_VALUE_INITIALIZER | WH_VALUE_OUTER)))
			return wh_error(WH_ERR_INVALID, "graph output '%s': is produced by nothing (fix the model)", val->name);
	}
	gp->n_node = gp->n_initializer = gp->n_input = gp->n_output = gp->n_value_info = 0;
	gp->name = NULL;
	return pack_rest(A, &gp->base, &g->rest);
}

enum wh_status wh_model_load_buffer(const void *data, size_t len, const char *dir,
				    const char *label, struct wh_model **out)
{
	struct loader L = {.label = label ? label : "model", .files = {.dir = dir}};
	enum wh_status st = wh_model_create(&L.m);
	if (st != WH_OK)
		return st;
	if ((st = wh_arena_create(&L.tmp)) != WH_OK)
		goto out;
	ProtobufCAllocator alloc;
	wh_pb_allocator_init(&alloc, L.tmp);
	if ((st = wh_pb_check_depth(&onnx__model_proto__descriptor, data, len, L.label)) != WH_OK)
		goto out;
	Onnx__ModelProto *mp = onnx__model_proto__unpack(&alloc, len, data);
	if (!mp) {
		st = wh_error(WH_ERR_PARSE, "%s: not a valid ONNX model (truncated or corrupt protobuf; re-export the model)", L.label);
		goto out;
	}
	if (!mp->graph) {
		st = wh_error(WH_ERR_PARSE, "%s: not an ONNX model (no graph; check that the file is a model)", L.label);
		goto out;
	}
	L.m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
	L.m->n_opsets = (uint32_t)mp->n_opset_import;
	L.m->opsets = wh_arena_calloc(L.m->arena, mp->n_opset_import + 1, sizeof *L.m->opsets);
	if (!L.m->opsets) {
		st = wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		goto out;
	}
	for (size_t i = 0; i < mp->n_opset_import; i++) {
		L.m->opsets[i].domain = wh_arena_strdup(L.m->arena, mp->opset_import[i]->domain ? mp->opset_import[i]->domain : "");
		L.m->opsets[i].version = mp->opset_import[i]->version;
	}
	if (dir)
		L.m->dir = wh_arena_strdup(L.m->arena, dir);
	if ((st = convert_graph(&L, mp->graph, L.m->graph)) != WH_OK)
		goto out;
	/* a cycle makes the model meaningless: reject it at the door */
	uint32_t *order = calloc((size_t)L.m->graph->n_nodes + 1, sizeof *order);
	if (!order) {
		st = wh_error(WH_ERR_NOMEM, "model: out of memory (free some memory)");
		goto out;
	}
	st = wh_graph_topo_order(L.m->graph, order);
	free(order);
	if (st != WH_OK)
		goto out;
	mp->has_ir_version = 0;
	mp->n_opset_import = 0;
	mp->graph = NULL;
	st = pack_rest(L.m->arena, &mp->base, &L.m->rest);
out:
	wh_arena_destroy(L.tmp);
	wh_pb_files_release(&L.files); /* the blobs keep the files they view */
	if (st != WH_OK) {
		wh_model_destroy(L.m);
		return st;
	}
	*out = L.m;
	return WH_OK;
}

enum wh_status wh_model_load(const char *path, struct wh_model **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot open: %s (check the path)", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return wh_error(WH_ERR_IO, "%s: not a regular file (give the path of a .onnx file)", path);
	}
	/* protobuf messages are limited to 2 GiB; larger weights must be external */
	if ((uint64_t)sb.st_size > PROTOBUF_MAX) {
		close(fd);
		return wh_error(WH_ERR_UNSUPPORTED, "%s: %lld bytes, above protobuf's 2 GiB limit (store its weights as external data, e.g. onnx.save_model(model, path, save_as_external_data=True))",
				path, (long long)sb.st_size);
	}
	/* mapped, not read: protobuf-c copies what it keeps, the file's pages stay in the cache */
	size_t len = (size_t)sb.st_size;
	void *buf = len ? mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (len && buf == MAP_FAILED)
		return wh_error(WH_ERR_IO, "%s: cannot map: %s (check the file)", path, strerror(errno));
	char dir[PATH_MAX];
	enum wh_status st = wh_os_dir_of(path, dir, sizeof dir);
	if (st == WH_OK)
		st = wh_model_load_buffer(len ? buf : "", len, dir, path, out);
	if (len)
		munmap(buf, len);
	return st;
}

struct files_list {
	const char *dir;
	char **v;
	uint32_t n, cap;
	bool failed;
};

static void add_location(void *ctx, const char *loc, size_t n)
{
	struct files_list *l = ctx;
	if (l->failed)
		return;
	char *p = NULL;
	if (asprintf(&p, "%s/%.*s", l->dir, (int)(n > 4096 ? 4096 : n), loc) < 0) {
		l->failed = true;
		return;
	}
	for (uint32_t i = 0; i < l->n; i++)
		if (!strcmp(l->v[i], p)) {
			free(p);
			return;
		}
	if (l->n == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 8;
		char **nv = realloc(l->v, cap * sizeof *nv);
		if (!nv) {
			free(p);
			l->failed = true;
			return;
		}
		l->v = nv;
		l->cap = cap;
	}
	l->v[l->n++] = p;
}

enum wh_status wh_model_external_files(const char *path, char ***out, uint32_t *n_out)
{
	*out = NULL;
	*n_out = 0;
	char dir[PATH_MAX];
	enum wh_status st = wh_os_dir_of(path, dir, sizeof dir);
	if (st != WH_OK)
		return st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot open: %s (check the path)", path, strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > PROTOBUF_MAX || !sb.st_size) {
		close(fd);
		return WH_OK; /* nothing a loader would read external data from */
	}
	void *buf = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (buf == MAP_FAILED)
		return wh_error(WH_ERR_IO, "%s: cannot map: %s (check the file)", path, strerror(errno));
	struct files_list l = {.dir = dir};
	wh_pb_external_locations(&onnx__model_proto__descriptor, &onnx__tensor_proto__descriptor, buf, (size_t)sb.st_size,
				 add_location, &l);
	munmap(buf, (size_t)sb.st_size);
	if (l.failed) {
		wh_model_files_free(l.v, l.n);
		return wh_error(WH_ERR_NOMEM, "%s: out of memory listing its weights files (free some memory)", path);
	}
	*out = l.v;
	*n_out = l.n;
	return WH_OK;
}

void wh_model_files_free(char **files, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

/* ---- save ---- */

/* Where one tensor written by this save goes in a new external-data file. */
struct ext_entry {
	const struct wh_blob *blob;
	uint32_t file; /* index in saver.new_files */
	uint64_t offset;
};

struct new_file {
	const char *name; /* location, in tmp */
	uint64_t size;
};

struct saver {
	struct wh_arena *tmp;
	ProtobufCAllocator alloc;
	const struct wh_save_opts *o; /* NULL: everything inline (a buffer) */
	bool externalize;             /* this pass moves tensors >= threshold to new files */
	bool failed;                  /* out of memory while placing */
	/* original weights files that tensors keep pointing at, and the name each is linked
	 * under next to the saved model (its location, or a fresh name where a different file
	 * holds that one) */
	const struct wh_blob_file **linked;
	const char **link_names;
	uint32_t n_linked, cap_linked, cap_link_names;
	/* every weights file the model's tensors view (linked or not): a save replaces none */
	const struct wh_blob_file **viewed;
	uint32_t n_viewed, cap_viewed;
	const char *dir; /* the saved model's folder; NULL: a buffer */
	struct ext_entry *ents;
	uint32_t n_ents, cap_ents;
	struct new_file *new_files;
	uint32_t n_new, cap_new;
	const char *model_name; /* base name of the model file */
	/* the weights files of the model file that this save replaces (wh_model_external_files):
	 * a new weights file may replace one of these, never another existing file */
	char **old;
	uint32_t n_old;
};

static bool grow(void **arr, uint32_t n, uint32_t *cap, size_t elem)
{
	if (n < *cap)
		return true;
	uint32_t c = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, c * elem);
	if (!p)
		return false;
	*arr = p;
	*cap = c;
	return true;
}

static bool name_taken(const struct saver *S, const char *name)
{
	if (S->model_name && !strcmp(name, S->model_name))
		return true;
	for (uint32_t i = 0; i < S->n_linked; i++)
		if (!strcmp(S->link_names[i], name))
			return true;
	for (uint32_t i = 0; i < S->n_new; i++)
		if (!strcmp(S->new_files[i].name, name))
			return true;
	return false;
}

/* Whether a new weights file may be written as dir/name: nothing is there, or the file there
 * is one that the model file being replaced reads (a save replacing its own earlier save). */
static bool free_on_disk(const struct saver *S, const char *name)
{
	char dest[PATH_MAX];
	struct stat sd, so;
	if (!S->dir || (size_t)snprintf(dest, sizeof dest, "%s/%s", S->dir, name) >= sizeof dest || lstat(dest, &sd) != 0)
		return true;
	if (stat(dest, &sd) != 0)
		return false;
	for (uint32_t i = 0; S->o && i < S->o->n_keep; i++)
		if (stat(S->o->keep[i], &so) == 0 && so.st_dev == sd.st_dev && so.st_ino == sd.st_ino)
			return false;
	for (uint32_t i = 0; i < S->n_old; i++)
		if (stat(S->old[i], &so) == 0 && so.st_dev == sd.st_dev && so.st_ino == sd.st_ino)
			return true;
	return false;
}

/* A location for a new weights file: base (already safe) or base.N, not used by the model
 * file, a linked file or another new file, and not a file already there that the saved
 * model's predecessor did not read (another model's weights). */
static const char *unique_name(struct saver *S, const char *base)
{
	size_t n = strlen(base) + 24;
	char *buf = wh_arena_alloc(S->tmp, n);
	if (!buf)
		return NULL;
	snprintf(buf, n, "%s", base);
	for (unsigned k = 1; name_taken(S, buf) || !free_on_disk(S, buf); k++)
		snprintf(buf, n, "%s.%u", base, k);
	return buf;
}

/* The name to link the original weights file f under in the saved model's folder: its own
 * location where that is free or already f (the original folder, a link made before), else
 * the first free "<location>.N" (or one that is f): a different file of the same name (another
 * model's weights: exporters use a handful of names) is never replaced. NULL: out of memory. */
static const char *link_name(struct saver *S, const struct wh_blob_file *f)
{
	const char *loc = wh_blob_file_location(f);
	size_t n = strlen(loc) + 24;
	char *buf = wh_arena_alloc(S->tmp, n);
	if (!buf)
		return NULL;
	snprintf(buf, n, "%s", loc);
	for (unsigned k = 1;; k++) {
		char dest[PATH_MAX];
		struct stat sb;
		bool fits = (size_t)snprintf(dest, sizeof dest, "%s/%s", S->dir ? S->dir : ".", buf) < sizeof dest;
		if (!fits || (!name_taken(S, buf) && (wh_blob_file_is(f, dest) || lstat(dest, &sb) != 0)))
			break;
		snprintf(buf, n, "%s.%u", loc, k);
	}
	return buf;
}

/* Notes that the model views weights file f (for the check that a save replaces none). */
static void note_viewed(struct saver *S, const struct wh_blob_file *f)
{
	for (uint32_t i = 0; i < S->n_viewed; i++)
		if (S->viewed[i] == f)
			return;
	if (!grow((void **)&S->viewed, S->n_viewed, &S->cap_viewed, sizeof *S->viewed)) {
		S->failed = true;
		return;
	}
	S->viewed[S->n_viewed++] = f;
}

static uint32_t new_file(struct saver *S, const char *name)
{
	if (!grow((void **)&S->new_files, S->n_new, &S->cap_new, sizeof *S->new_files)) {
		S->failed = true;
		return 0;
	}
	S->new_files[S->n_new].name = name;
	S->new_files[S->n_new].size = 0;
	return S->n_new++;
}

static bool set_external(struct saver *S, Onnx__TensorProto *tp, const char *location, uint64_t offset,
			 uint64_t length)
{
	Onnx__StringStringEntryProto **e = wh_arena_calloc(S->tmp, 4, sizeof *e);
	char *num = wh_arena_alloc(S->tmp, 48);
	if (!e || !num)
		return false;
	snprintf(num, 48, "%llu", (unsigned long long)offset);
	snprintf(num + 24, 24, "%llu", (unsigned long long)length);
	const char *kv[3][2] = {{"location", location}, {"offset", num}, {"length", num + 24}};
	for (int i = 0; i < 3; i++) {
		if (!(e[i] = wh_arena_alloc(S->tmp, sizeof *e[i])))
			return false;
		onnx__string_string_entry_proto__init(e[i]);
		e[i]->key = (char *)kv[i][0];
		e[i]->value = (char *)kv[i][1];
	}
	tp->external_data = e;
	tp->n_external_data = 3;
	tp->has_data_location = 1;
	tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
	tp->has_raw_data = 0;
	tp->raw_data.data = NULL;
	tp->raw_data.len = 0;
	return true;
}

/* Decides where an encoded tensor's bytes go: inline (as encoded), the original weights
 * file it views (linked into the model's folder, same offset), or a new weights file. */
static void place_tensor(struct saver *S, Onnx__TensorProto *tp, const char *name, const struct wh_blob *b,
			 bool attribute)
{
	if (!S->o || !b || !tp->has_raw_data || S->failed)
		return;
	const struct wh_blob_file *f;
	uint64_t off;
	bool view = wh_blob_origin(b, &f, &off);
	if (view)
		note_viewed(S, f);
	if (!S->o->self_contained && !S->o->external_data_path && view) {
		uint32_t i = 0;
		while (i < S->n_linked && S->linked[i] != f)
			i++;
		if (i == S->n_linked) {
			const char *nm = NULL;
			if (!grow((void **)&S->linked, S->n_linked, &S->cap_linked, sizeof *S->linked) ||
			    !grow((void **)&S->link_names, S->n_linked, &S->cap_link_names, sizeof *S->link_names) ||
			    !(nm = link_name(S, f))) {
				S->failed = true;
				return;
			}
			S->link_names[S->n_linked] = nm;
			S->linked[S->n_linked++] = f;
		}
		if (!set_external(S, tp, S->link_names[i], off, b->size))
			S->failed = true;
		return;
	}
	/* a tensor attribute (Constant's value) stays inline, as onnx's own converter leaves it
	 * (convert_attribute=False): not every runtime reads external data there */
	if (attribute || !S->externalize || b->size < S->o->size_threshold)
		return;
	uint32_t fi;
	if (S->o->one_file) {
		if (!S->n_new) {
			char dflt[PATH_MAX];
			snprintf(dflt, sizeof dflt, "%s.data", S->model_name);
			const char *nm = S->o->external_data_path ? wh_arena_strdup(S->tmp, S->o->external_data_path)
								  : unique_name(S, dflt);
			if (!nm) {
				S->failed = true;
				return;
			}
			new_file(S, nm);
		}
		fi = 0;
	} else {
		/* one file per tensor, named after it (ONNX's convention), made safe as a file name */
		size_t n = strlen(name);
		char *safe = wh_arena_alloc(S->tmp, n + 2);
		if (!safe) {
			S->failed = true;
			return;
		}
		for (size_t i = 0; i < n; i++) {
			char c = name[i];
			bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
				  (c == '.' && i > 0);
			safe[i] = ok ? c : '_';
		}
		if (!n)
			safe[n++] = '_';
		safe[n] = '\0';
		const char *nm = unique_name(S, safe);
		if (!nm) {
			S->failed = true;
			return;
		}
		fi = new_file(S, nm);
	}
	if (S->failed)
		return;
	struct new_file *nf = &S->new_files[fi];
	/* large tensors start on a page (mappable by every runtime), others on 64 bytes */
	uint64_t align = b->size >= ((uint64_t)1 << 20) ? 4096 : 64;
	uint64_t offset = (nf->size + align - 1) / align * align;
	if (!grow((void **)&S->ents, S->n_ents, &S->cap_ents, sizeof *S->ents) ||
	    !set_external(S, tp, nf->name, offset, b->size)) {
		S->failed = true;
		return;
	}
	S->ents[S->n_ents++] = (struct ext_entry){.blob = b, .file = fi, .offset = offset};
	nf->size = offset + b->size;
}

#define UNPACK_REST(S, type, fn_init, fn_unpack, bytes, out_ptr)                                   \
	do {                                                                                       \
		if ((bytes).len) {                                                                 \
			(out_ptr) = fn_unpack(&(S)->alloc, (bytes).len, (bytes).data);               \
		} else {                                                                           \
			(out_ptr) = wh_arena_alloc((S)->tmp, sizeof(type));                          \
			if (out_ptr)                                                               \
				fn_init(out_ptr);                                                  \
		}                                                                                  \
	} while (0)

static Onnx__GraphProto *encode_graph(struct saver *S, const struct wh_graph *g);

static Onnx__TensorProto *encode_const_tensor(struct saver *S, const struct wh_const_tensor *t)
{
	Onnx__TensorProto *tp;
	UNPACK_REST(S, Onnx__TensorProto, onnx__tensor_proto__init, onnx__tensor_proto__unpack, t->rest, tp);
	if (!tp)
		return NULL;
	wh_pb_tensor_encode(tp, t->name, t->dtype, t->rank, t->dims, t->data);
	place_tensor(S, tp, t->name, t->data, true);
	return tp;
}

static Onnx__TypeProto *encode_type(struct saver *S, const struct wh_value *v)
{
	if (v->type_rest.len)
		return onnx__type_proto__unpack(&S->alloc, v->type_rest.len, v->type_rest.data);
	if (v->type_orig.len)
		return onnx__type_proto__unpack(&S->alloc, v->type_orig.len, v->type_orig.data);
	Onnx__TypeProto *tp = wh_arena_alloc(S->tmp, sizeof *tp);
	Onnx__TypeProto__Tensor *tt = wh_arena_alloc(S->tmp, sizeof *tt);
	if (!tp || !tt)
		return NULL;
	onnx__type_proto__init(tp);
	onnx__type_proto__tensor__init(tt);
	tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	tp->tensor_type = tt;
	if (v->dtype) {
		tt->has_elem_type = 1;
		tt->elem_type = v->dtype;
	}
	if (v->rank >= 0) {
		Onnx__TensorShapeProto *sp = wh_arena_alloc(S->tmp, sizeof *sp);
		if (!sp)
			return NULL;
		onnx__tensor_shape_proto__init(sp);
		sp->n_dim = (size_t)v->rank;
		sp->dim = wh_arena_calloc(S->tmp, (size_t)v->rank + 1, sizeof *sp->dim);
		if (!sp->dim)
			return NULL;
		for (int32_t i = 0; i < v->rank; i++) {
			Onnx__TensorShapeProto__Dimension *d = wh_arena_alloc(S->tmp, sizeof *d);
			if (!d)
				return NULL;
			onnx__tensor_shape_proto__dimension__init(d);
			if (v->dims[i].value >= 0) {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
				d->dim_value = v->dims[i].value;
			} else if (v->dims[i].param) {
				d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
				d->dim_param = (char *)v->dims[i].param;
			}
			sp->dim[i] = d;
		}
		tt->shape = sp;
	}
	return tp;
}

static Onnx__ValueInfoProto *encode_value_info(struct saver *S, const struct wh_value *v)
{
	Onnx__ValueInfoProto *vi;
	UNPACK_REST(S, Onnx__ValueInfoProto, onnx__value_info_proto__init, onnx__value_info_proto__unpack, v->info_rest, vi);
	if (!vi)
		return NULL;
	vi->name = (char *)v->name;
	if (v->dtype || v->rank >= 0 || v->type_rest.len || v->type_orig.len)
		if (!(vi->type = encode_type(S, v)))
			return NULL;
	return vi;
}

static Onnx__AttributeProto *encode_attr(struct saver *S, const struct wh_attr *a)
{
	Onnx__AttributeProto *ap;
	UNPACK_REST(S, Onnx__AttributeProto, onnx__attribute_proto__init, onnx__attribute_proto__unpack, a->rest, ap);
	if (!ap)
		return NULL;
	ap->name = (char *)a->name;
	if (a->type) {
		ap->has_type = 1;
		ap->type = (Onnx__AttributeProto__AttributeType)a->type;
	}
	switch (a->type) {
	case WH_ATTR_FLOAT: ap->has_f = 1; ap->f = a->f; break;
	case WH_ATTR_INT: ap->has_i = 1; ap->i = a->i; break;
	case WH_ATTR_STRING: ap->has_s = 1; ap->s.data = (uint8_t *)a->s.data; ap->s.len = a->s.len; break;
	case WH_ATTR_TENSOR: if (!(ap->t = encode_const_tensor(S, a->t))) return NULL; break;
	case WH_ATTR_GRAPH: if (!(ap->g = encode_graph(S, a->g))) return NULL; break;
	case WH_ATTR_FLOATS: ap->n_floats = a->n; ap->floats = a->floats; break;
	case WH_ATTR_INTS: ap->n_ints = a->n; ap->ints = a->ints; break;
	case WH_ATTR_STRINGS:
		ap->n_strings = a->n;
		if (!(ap->strings = wh_arena_calloc(S->tmp, a->n + 1, sizeof *ap->strings)))
			return NULL;
		for (size_t i = 0; i < a->n; i++) {
			ap->strings[i].data = (uint8_t *)a->strings[i].data;
			ap->strings[i].len = a->strings[i].len;
		}
		break;
	case WH_ATTR_TENSORS:
		ap->n_tensors = a->n;
		if (!(ap->tensors = wh_arena_calloc(S->tmp, a->n + 1, sizeof *ap->tensors)))
			return NULL;
		for (size_t i = 0; i < a->n; i++)
			if (!(ap->tensors[i] = encode_const_tensor(S, &a->tensors[i])))
				return NULL;
		break;
	case WH_ATTR_GRAPHS:
		ap->n_graphs = a->n;
		if (!(ap->graphs = wh_arena_calloc(S->tmp, a->n + 1, sizeof *ap->graphs)))
			return NULL;
		for (size_t i = 0; i < a->n; i++)
			if (!(ap->graphs[i] = encode_graph(S, a->graphs[i])))
				return NULL;
		break;
	default:
		break;
	}
	return ap;
}

static Onnx__GraphProto *encode_graph(struct saver *S, const struct wh_graph *g)
{
	Onnx__GraphProto *gp;
	UNPACK_REST(S, Onnx__GraphProto, onnx__graph_proto__init, onnx__graph_proto__unpack, g->rest, gp);
	if (!gp)
		return NULL;
	gp->name = (char *)(g->name ? g->name : "");
	gp->n_input = g->n_inputs;
	gp->input = wh_arena_calloc(S->tmp, g->n_inputs + 1, sizeof *gp->input);
	gp->n_output = g->n_outputs;
	gp->output = wh_arena_calloc(S->tmp, g->n_outputs + 1, sizeof *gp->output);
	gp->n_initializer = g->n_inits;
	gp->initializer = wh_arena_calloc(S->tmp, g->n_inits + 1, sizeof *gp->initializer);
	gp->n_node = g->n_nodes;
	gp->node = wh_arena_calloc(S->tmp, g->n_nodes + 1, sizeof *gp->node);
	gp->value_info = wh_arena_calloc(S->tmp, g->n_values + 1, sizeof *gp->value_info);
	if (!gp->input || !gp->output || !gp->initializer || !gp->node || !gp->value_info)
		return NULL;
	for (uint32_t i = 0; i < g->n_inputs; i++)
		if (!(gp->input[i] = encode_value_info(S, &g->values[g->inputs[i]])))
			return NULL;
	for (uint32_t i = 0; i < g->n_outputs; i++)
		if (!(gp->output[i] = encode_value_info(S, &g->values[g->outputs[i]])))
			return NULL;
	for (uint32_t i = 0; i < g->n_inits; i++) {
		const struct wh_value *v = &g->values[g->inits[i]];
		Onnx__TensorProto *tp;
		UNPACK_REST(S, Onnx__TensorProto, onnx__tensor_proto__init, onnx__tensor_proto__unpack, v->tensor_rest, tp);
		if (!tp)
			return NULL;
		/* the initializer's own shape: dims of the data, not a declared input type */
		int32_t rank = v->rank;
		const struct wh_dim *d = v->dims;
		int64_t *dims = wh_arena_calloc(S->tmp, (size_t)(rank > 0 ? rank : 1), sizeof *dims);
		if (!dims)
			return NULL;
		for (int32_t k = 0; k < rank; k++)
			dims[k] = d[k].value;
		wh_pb_tensor_encode(tp, v->name, v->dtype, rank, dims, v->data);
		place_tensor(S, tp, v->name, v->data, false);
		gp->initializer[i] = tp;
	}
	gp->n_value_info = 0;
	for (uint32_t i = 0; i < g->n_values; i++) {
		const struct wh_value *v = &g->values[i];
		if (!(v->flags & WH_VALUE_HAS_INFO) || (v->flags & (WH_VALUE_INPUT | WH_VALUE_OUTPUT)))
			continue;
		if (!(gp->value_info[gp->n_value_info++] = encode_value_info(S, v)))
			return NULL;
	}
	for (uint32_t n = 0; n < g->n_nodes; n++) {
		const struct wh_node *node = &g->nodes[n];
		Onnx__NodeProto *np;
		UNPACK_REST(S, Onnx__NodeProto, onnx__node_proto__init, onnx__node_proto__unpack, node->rest, np);
		if (!np)
			return NULL;
		np->name = (char *)node->name;
		np->op_type = (char *)node->op_type;
		np->domain = node->domain && *node->domain ? (char *)node->domain : NULL;
		np->n_input = node->n_inputs;
		np->input = wh_arena_calloc(S->tmp, node->n_inputs + 1, sizeof *np->input);
		np->n_output = node->n_outputs;
		np->output = wh_arena_calloc(S->tmp, node->n_outputs + 1, sizeof *np->output);
		np->n_attribute = node->n_attrs;
		np->attribute = wh_arena_calloc(S->tmp, node->n_attrs + 1, sizeof *np->attribute);
		if (!np->input || !np->output || !np->attribute)
			return NULL;
		for (uint32_t i = 0; i < node->n_inputs; i++)
			np->input[i] = node->inputs[i] == WH_NONE ? "" : (char *)g->values[node->inputs[i]].name;
		for (uint32_t i = 0; i < node->n_outputs; i++)
			np->output[i] = node->outputs[i] == WH_NONE ? "" : (char *)g->values[node->outputs[i]].name;
		for (uint32_t a = 0; a < node->n_attrs; a++)
			if (!(np->attribute[a] = encode_attr(S, &node->attrs[a])))
				return NULL;
		gp->node[n] = np;
	}
	return gp;
}

static enum wh_status encode_model(struct saver *S, const struct wh_model *m, Onnx__ModelProto **out)
{
	Onnx__ModelProto *mp;
	UNPACK_REST(S, Onnx__ModelProto, onnx__model_proto__init, onnx__model_proto__unpack, m->rest, mp);
	if (!mp)
		return wh_error(WH_ERR_NOMEM, "model: cannot encode (out of memory)");
	mp->has_ir_version = 1;
	mp->ir_version = m->ir_version;
	mp->n_opset_import = m->n_opsets;
	mp->opset_import = wh_arena_calloc(S->tmp, m->n_opsets + 1, sizeof *mp->opset_import);
	if (!mp->opset_import)
		return wh_error(WH_ERR_NOMEM, "model: cannot encode (out of memory)");
	for (uint32_t i = 0; i < m->n_opsets; i++) {
		Onnx__OperatorSetIdProto *op = wh_arena_alloc(S->tmp, sizeof *op);
		if (!op)
			return wh_error(WH_ERR_NOMEM, "model: cannot encode (out of memory)");
		onnx__operator_set_id_proto__init(op);
		op->domain = (char *)m->opsets[i].domain;
		op->has_version = 1;
		op->version = m->opsets[i].version;
		mp->opset_import[i] = op;
	}
	if (!(mp->graph = encode_graph(S, m->graph)) || S->failed)
		return wh_error(WH_ERR_NOMEM, "model: cannot encode (out of memory)");
	*out = mp;
	return WH_OK;
}

static void saver_release(struct saver *S)
{
	wh_arena_destroy(S->tmp);
	free(S->linked);
	free(S->link_names);
	wh_model_files_free(S->old, S->n_old);
	free(S->viewed);
	free(S->ents);
	free(S->new_files);
}


enum wh_status wh_model_save_buffer(const struct wh_model *m, uint8_t **data_out, size_t *len_out)
{
	struct saver S = {0};
	enum wh_status st = wh_arena_create(&S.tmp);
	if (st != WH_OK)
		return st;
	wh_pb_allocator_init(&S.alloc, S.tmp);
	Onnx__ModelProto *mp;
	if ((st = encode_model(&S, m, &mp)) != WH_OK)
		goto out;
	size_t len = onnx__model_proto__get_packed_size(mp);
	if (len > PROTOBUF_MAX) {
		st = wh_error(WH_ERR_UNSUPPORTED, "model: %zu bytes with its weights inline, above protobuf's 2 GiB limit (save it to a file, where large weights go to external data)", len);
		goto out;
	}
	uint8_t *buf = malloc(len ? len : 1);
	if (!buf) {
		st = wh_error(WH_ERR_NOMEM, "model: cannot allocate %zu bytes to save it (free some memory)", len);
		goto out;
	}
	onnx__model_proto__pack(mp, buf);
	*data_out = buf;
	*len_out = len;
out:
	saver_release(&S);
	return st;
}

void wh_save_opts_init(struct wh_save_opts *o)
{
	memset(o, 0, sizeof *o);
	o->size_threshold = WH_SAVE_DEFAULT_SIZE_THRESHOLD;
	o->inline_limit = WH_SAVE_DEFAULT_INLINE_LIMIT;
	o->one_file = true;
}

/* A fresh name next to path for writing before the rename: "<path>.tmp.XXXXXX". */
static enum wh_status temp_next_to(const char *path, char *buf, size_t size, int *fd_out)
{
	if ((size_t)snprintf(buf, size, "%s.tmp.XXXXXX", path) >= size)
		return wh_error(WH_ERR_INVALID, "%s: path too long (shorten it)", path);
	int fd = mkstemp(buf);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder exists and is writable)", path, strerror(errno));
	*fd_out = fd;
	return WH_OK;
}

static enum wh_status write_all(int fd, const void *p, uint64_t len, uint64_t offset, const char *path)
{
	uint64_t done = 0;
	while (done < len) {
		size_t chunk = len - done > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)(len - done);
		ssize_t w = pwrite(fd, (const char *)p + done, chunk, (off_t)(offset + done));
		if (w <= 0)
			return wh_error(WH_ERR_IO, "%s: write failed: %s (check free disk space)", path, w < 0 ? strerror(errno) : "short write");
		done += (uint64_t)w;
	}
	return WH_OK;
}

/* The folder of `path` holding `location`: creates the location's own subfolders. */
static enum wh_status dest_of(const char *dir, const char *location, char *buf, size_t size)
{
	if ((size_t)snprintf(buf, size, "%s/%s", dir, location) >= size)
		return wh_error(WH_ERR_INVALID, "%s/%s: path too long (shorten it)", dir, location);
	char *slash = strrchr(buf, '/');
	if (slash && strchr(location, '/')) {
		*slash = '\0';
		enum wh_status st = wh_os_make_dir(buf);
		*slash = '/';
		return st;
	}
	return WH_OK;
}

/* A save replaces no weights file that the model it writes reads (it would change the
 * weights under the model, and under the original it came from). */
static enum wh_status not_viewed(const struct saver *S, const char *dest)
{
	for (uint32_t i = 0; i < S->n_viewed; i++)
		if (wh_blob_file_is(S->viewed[i], dest))
			return wh_error(WH_ERR_USAGE, "%s: is the weights file '%s' that the model reads, and saving there would overwrite it (choose another path)",
					dest, wh_blob_file_path(S->viewed[i]));
	struct stat sd, sk;
	for (uint32_t i = 0; S->o && i < S->o->n_keep && stat(dest, &sd) == 0; i++)
		if (stat(S->o->keep[i], &sk) == 0 && sk.st_dev == sd.st_dev && sk.st_ino == sd.st_ino)
			return wh_error(WH_ERR_USAGE, "%s: is the weights file '%s' of the input model, and saving there would overwrite it (choose another path)",
					dest, S->o->keep[i]);
	return WH_OK;
}

static enum wh_status write_new_file(const struct saver *S, uint32_t fi, const char *dir)
{
	char dest[PATH_MAX], tmp[PATH_MAX];
	int fd = -1;
	enum wh_status st = dest_of(dir, S->new_files[fi].name, dest, sizeof dest);
	if (st != WH_OK || (st = not_viewed(S, dest)) != WH_OK || (st = temp_next_to(dest, tmp, sizeof tmp, &fd)) != WH_OK)
		return st;
	for (uint32_t i = 0; i < S->n_ents && st == WH_OK; i++)
		if (S->ents[i].file == fi)
			st = write_all(fd, S->ents[i].blob->data, S->ents[i].blob->size, S->ents[i].offset, dest);
	mode_t um = umask(0);
	umask(um);
	if (st == WH_OK && fchmod(fd, 0666 & ~um) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot set permissions: %s (check the folder)", dest, strerror(errno));
	if (st == WH_OK && ftruncate(fd, (off_t)S->new_files[fi].size) != 0)
		st = wh_error(WH_ERR_IO, "%s: write failed: %s (check free disk space)", dest, strerror(errno));
	if (close(fd) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_IO, "%s: write failed: %s (check free disk space)", dest, strerror(errno));
	/* rename, never rewrite in place: a file being replaced may be mapped by a loaded model */
	if (st == WH_OK && rename(tmp, dest) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot replace: %s (check the folder is writable)", dest, strerror(errno));
	if (st != WH_OK)
		unlink(tmp);
	return st;
}

/* Makes dir/<name> the original weights file f (name: link_name's choice): nothing when it
 * already is (the original folder, or a link made before), else a new hard link, never
 * replacing a file (link(2) refuses an existing name). *cannot_out: a hard link is
 * impossible there (another file system, links refused); the caller then writes the weights.
 * A symbolic link would not do: ONNX Runtime and whittle's own loader refuse external data
 * that resolves outside the model's folder. */
static enum wh_status link_original(const struct wh_blob_file *f, const char *name, const char *dir, bool *cannot_out)
{
	char dest[PATH_MAX];
	*cannot_out = false;
	enum wh_status st = dest_of(dir, name, dest, sizeof dest);
	if (st != WH_OK)
		return st;
	if (wh_blob_file_is(f, dest))
		return WH_OK;
	if (link(wh_blob_file_path(f), dest) != 0) {
		if (errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOTSUP || errno == EACCES) {
			*cannot_out = true;
			return WH_OK;
		}
		if (errno == EEXIST)
			return wh_error(WH_ERR_IO, "%s: another file took this name while saving (kept; save again)", dest);
		return wh_error(WH_ERR_IO, "%s: cannot link the weights file '%s': %s (save with --self-contained to copy the weights)",
				dest, wh_blob_file_path(f), strerror(errno));
	}
	if (strcmp(name, wh_blob_file_location(f)))
		wh_warn("%s/%s: a different file of that name is there (kept); the saved model reads its weights from the link '%s'",
			dir, wh_blob_file_location(f), name);
	return WH_OK;
}


enum wh_status wh_model_save_with(const struct wh_model *m, const char *path, const struct wh_save_opts *opts)
{
	struct wh_save_opts dflt;
	if (!opts) {
		wh_save_opts_init(&dflt);
		opts = &dflt;
	}
	const char *xp = opts->external_data_path;
	if (xp && (!*xp || xp[0] == '/' || strstr(xp, "..")))
		return wh_error(WH_ERR_USAGE, "external data path '%s': must be a file name relative to the model's folder, without '..'", xp);
	const char *slash0 = strrchr(path, '/');
	if (xp && !strcmp(xp, slash0 ? slash0 + 1 : path))
		return wh_error(WH_ERR_USAGE, "external data path '%s': is the model file itself (give the weights another name)", xp);
	char dir[PATH_MAX];
	enum wh_status st = wh_os_dir_of(path, dir, sizeof dir);
	if (st != WH_OK)
		return st;
	const char *base = slash0 ? slash0 + 1 : path;

	struct saver S = {.o = opts, .model_name = base, .externalize = opts->external || xp, .dir = dir};
	st = wh_arena_create(&S.tmp);
	if (st != WH_OK)
		return st;
	wh_pb_allocator_init(&S.alloc, S.tmp);
	uint8_t *buf = NULL;
	char tmp[PATH_MAX];
	int fd = -1;
	Onnx__ModelProto *mp;
	/* the weights of the model file replaced (an earlier save to path) may be replaced too */
	if (wh_model_external_files(path, &S.old, &S.n_old) != WH_OK)
		wh_error_clear();
	if (xp && !free_on_disk(&S, xp)) {
		st = wh_error(WH_ERR_USAGE, "%s/%s: a file of that name is there and %s does not read it, maybe another model's weights, so it is kept (give another name for the external data, or remove the file)",
			      dir, xp, path);
		goto out;
	}
	if ((st = encode_model(&S, m, &mp)) != WH_OK)
		goto out;
	size_t len = onnx__model_proto__get_packed_size(mp);
	if (!S.externalize && len >= opts->inline_limit) {
		/* too large inline: encode again with the large weights in a new file */
		S.externalize = true;
		S.n_linked = S.n_ents = S.n_new = S.n_viewed = 0;
		if ((st = encode_model(&S, m, &mp)) != WH_OK)
			goto out;
		len = onnx__model_proto__get_packed_size(mp);
	}
	if (len > PROTOBUF_MAX) {
		st = wh_error(WH_ERR_UNSUPPORTED, "%s: the model is %zu bytes even with every weight of %llu bytes or more in external data, above protobuf's 2 GiB limit (lower --external-data-size-threshold, or turn large Constant nodes into initializers with whittle sanitize)",
			      path, len, (unsigned long long)opts->size_threshold);
		goto out;
	}
	if (!(buf = malloc(len ? len : 1))) {
		st = wh_error(WH_ERR_NOMEM, "model: cannot allocate %zu bytes to save it (free some memory)", len);
		goto out;
	}
	onnx__model_proto__pack(mp, buf);
	if ((st = not_viewed(&S, path)) != WH_OK)
		goto out;
	bool cannot_link = false;
	for (uint32_t i = 0; i < S.n_linked && st == WH_OK && !cannot_link; i++)
		st = link_original(S.linked[i], S.link_names[i], dir, &cannot_link);
	if (st == WH_OK && cannot_link) {
		/* another file system: write the weights this model needs instead */
		struct wh_save_opts copy = *opts;
		copy.self_contained = true;
		wh_warn("%s: cannot hard-link the original's weights file into %s (another file system); writing the weights this model needs",
			path, dir);
		free(buf);
		saver_release(&S);
		return wh_model_save_with(m, path, &copy);
	}
	for (uint32_t i = 0; i < S.n_new && st == WH_OK; i++)
		st = write_new_file(&S, i, dir);
	if (st != WH_OK)
		goto out;
	struct stat sb;
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		/* a device or a pipe (/dev/null, /dev/stdout): written in place, never replaced */
		FILE *f = fopen(path, "wb");
		if (!f) {
			st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder exists and is writable)", path, strerror(errno));
			goto out;
		}
		size_t wrote = fwrite(buf, 1, len, f);
		if (fclose(f) != 0 || wrote != len)
			st = wh_error(WH_ERR_IO, "%s: write failed: %s (check free disk space)", path, strerror(errno));
		goto out;
	}
	if ((st = temp_next_to(path, tmp, sizeof tmp, &fd)) != WH_OK)
		goto out;
	st = write_all(fd, buf, len, 0, path);
	/* mkstemp makes the file 0600; a model is as readable as any file the user writes */
	mode_t um = umask(0);
	umask(um);
	if (st == WH_OK && fchmod(fd, 0666 & ~um) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot set permissions: %s (check the folder)", path, strerror(errno));
	if (close(fd) != 0 && st == WH_OK)
		st = wh_error(WH_ERR_IO, "%s: write failed: %s (check free disk space)", path, strerror(errno));
	if (st == WH_OK && rename(tmp, path) != 0)
		st = wh_error(WH_ERR_IO, "%s: cannot write: %s (check the folder exists and is writable)", path, strerror(errno));
	if (st != WH_OK)
		unlink(tmp);
out:
	free(buf);
	saver_release(&S);
	return st;
}

enum wh_status wh_model_save(const struct wh_model *m, const char *path)
{
	return wh_model_save_with(m, path, NULL);
}

/* The element type of a TypeProto that must be a tensor; false for anything else. */
static bool tensor_elem(const Onnx__TypeProto *tp, enum wh_dtype *elem)
{
	if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
		return false;
	int dt = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
	*elem = wh_dtype_valid(dt) ? (enum wh_dtype)dt : WH_DT_UNDEFINED;
	return true;
}

static bool sequence_elem(const Onnx__TypeProto *tp, enum wh_dtype *elem)
{
	return tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE && tp->sequence_type &&
	       tensor_elem(tp->sequence_type->elem_type, elem);
}

static enum wh_value_type classify_type(const Onnx__TypeProto *tp, enum wh_dtype *elem)
{
	*elem = WH_DT_UNDEFINED;
	if (tensor_elem(tp, elem))
		return WH_TYPE_TENSOR;
	if (sequence_elem(tp, elem))
		return WH_TYPE_SEQUENCE;
	if (tp && tp->value_case == ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE && tp->optional_type) {
		const Onnx__TypeProto *in = tp->optional_type->elem_type;
		if (tensor_elem(in, elem))
			return WH_TYPE_OPTIONAL;
		if (sequence_elem(in, elem))
			return WH_TYPE_OPTIONAL_SEQUENCE;
	}
	return WH_TYPE_OTHER;
}

enum wh_value_type wh_value_type_of(const struct wh_value *v, enum wh_dtype *elem_out)
{
	enum wh_dtype elem = v->dtype;
	enum wh_value_type kind = WH_TYPE_TENSOR;
	if (v->type_rest.len) {
		Onnx__TypeProto *tp = onnx__type_proto__unpack(NULL, v->type_rest.len, v->type_rest.data);
		kind = classify_type(tp, &elem);
		if (tp)
			onnx__type_proto__free_unpacked(tp, NULL);
	}
	if (elem_out)
		*elem_out = elem;
	return kind;
}

enum wh_value_type wh_attr_type_of(const struct wh_attr *a, enum wh_dtype *elem_out)
{
	enum wh_dtype elem = WH_DT_UNDEFINED;
	enum wh_value_type kind = WH_TYPE_OTHER;
	if (a && a->type == WH_ATTR_TYPE_PROTO && a->rest.len) {
		Onnx__AttributeProto *ap = onnx__attribute_proto__unpack(NULL, a->rest.len, a->rest.data);
		if (ap && ap->tp)
			kind = classify_type(ap->tp, &elem);
		if (ap)
			onnx__attribute_proto__free_unpacked(ap, NULL);
	}
	if (elem_out)
		*elem_out = elem;
	return kind;
}

enum wh_status wh_value_set_sequence_type(struct wh_graph *g, uint32_t id, enum wh_dtype elem)
{
	Onnx__TypeProto outer, inner;
	Onnx__TypeProto__Sequence sq;
	Onnx__TypeProto__Tensor tt;
	onnx__type_proto__init(&outer);
	onnx__type_proto__init(&inner);
	onnx__type_proto__sequence__init(&sq);
	onnx__type_proto__tensor__init(&tt);
	if (elem) {
		tt.has_elem_type = 1;
		tt.elem_type = (int32_t)elem;
	}
	inner.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
	inner.tensor_type = &tt;
	sq.elem_type = &inner;
	outer.value_case = ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE;
	outer.sequence_type = &sq;
	size_t n = onnx__type_proto__get_packed_size(&outer);
	uint8_t *buf = wh_arena_alloc(g->arena, n ? n : 1);
	if (!buf)
		return wh_error(WH_ERR_NOMEM, "graph: out of memory (free some memory)");
	onnx__type_proto__pack(&outer, buf);
	struct wh_value *v = &g->values[id];
	enum wh_status st = wh_graph_set_shape(g, id, WH_DT_UNDEFINED, -1, NULL);
	if (st == WH_OK) {
		v->type_rest.data = buf;
		v->type_rest.len = n;
	}
	return st;
}

enum wh_status wh_const_tensor_value(const struct wh_const_tensor *ct, struct wh_tensor *t)
{
	uint64_t count;
	if (!ct || ct->rank < 0 || !wh_shape_count(ct->dims, ct->rank, &count))
		return wh_error(WH_ERR_INVALID, "tensor attribute: malformed shape (fix the model)");
	if (ct->dtype != WH_DT_STRING) {
		if (!ct->data && count)
			return wh_error(WH_ERR_INVALID, "tensor attribute '%s': holds no data (fix the model)", ct->name ? ct->name : "");
		return wh_tensor_from_raw(t, ct->dtype, ct->rank, ct->dims, ct->data);
	}
	Onnx__TensorProto *tp = ct->rest.len ? onnx__tensor_proto__unpack(NULL, ct->rest.len, ct->rest.data) : NULL;
	size_t n = tp ? tp->n_string_data : 0;
	enum wh_status st = WH_OK;
	const char **ptrs = NULL;
	size_t *lens = NULL;
	if ((ct->rest.len && !tp) || n != count) {
		st = wh_error(WH_ERR_INVALID, "string tensor attribute '%s': %zu strings for %llu elements (fix the model)",
			      ct->name ? ct->name : "", n, (unsigned long long)count);
		goto out;
	}
	if (!n) {
		st = wh_tensor_alloc(t, WH_DT_STRING, ct->rank, ct->dims);
		goto out;
	}
	ptrs = calloc(n, sizeof *ptrs);
	lens = calloc(n, sizeof *lens);
	if (!ptrs || !lens) {
		st = wh_error(WH_ERR_NOMEM, "string tensor attribute: out of memory (free some memory)");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const ProtobufCBinaryData *b = &tp->string_data[i];
		const void *nul = b->len ? memchr(b->data, 0, b->len) : NULL;
		ptrs[i] = b->len ? (const char *)b->data : "";
		lens[i] = nul ? (size_t)((const uint8_t *)nul - b->data) : b->len;
	}
	st = wh_tensor_alloc_strings(t, ct->rank, ct->dims, ptrs, lens);
out:
	free(ptrs);
	free(lens);
	if (tp)
		onnx__tensor_proto__free_unpacked(tp, NULL);
	return st;
}
