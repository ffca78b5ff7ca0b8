#include "graph/tensor-file.h"

#include <dirent.h>
#include <xxhash.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/onnx-depth.h"
#include "graph/onnx-internal.h"
#include "graph/onnx-io.h"
#include "onnx/onnx-data.pb-c.h"
#include "graph/os.h"

/* ---- whole files ---- */

/* Opens path for reading and checks that it is a regular file (what: the kind of file the
 * message asks for); *fd_out is open only on success. */
static enum wh_status open_regular(const char *path, const char *what, int *fd_out, struct stat *sb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot open: %s (check the path)", path, strerror(errno));
	if (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode)) {
		close(fd);
		return wh_error(WH_ERR_IO, "%s: not a regular file (give the path of %s)", path, what);
	}
	*fd_out = fd;
	return WH_OK;
}

/* Reads exactly len bytes at offset off (a file that shrank under us is an error). */
static enum wh_status read_at(int fd, void *buf, size_t len, uint64_t off, const char *label)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return wh_error(WH_ERR_IO, "%s: read failed: %s (check the file)", label, r < 0 ? strerror(errno) : "file shrank");
		done += (size_t)r;
	}
	return WH_OK;
}

/* Reads a regular file of at most max bytes into a malloc'd buffer. */
static enum wh_status slurp(const char *path, uint64_t max, uint8_t **buf_out, size_t *len_out)
{
	int fd;
	struct stat sb;
	enum wh_status st = open_regular(path, "a tensor file", &fd, &sb);
	if (st != WH_OK)
		return st;
	size_t len = (size_t)sb.st_size;
	uint8_t *buf = NULL;
	if ((uint64_t)sb.st_size > max)
		st = wh_error(WH_ERR_UNSUPPORTED, "%s: %lld bytes is larger than the %llu this format allows (split the data)",
			      path, (long long)sb.st_size, (unsigned long long)max);
	else if (!(buf = malloc(len ? len : 1)))
		st = wh_error(WH_ERR_NOMEM, "%s: cannot allocate %zu bytes (free some memory)", path, len);
	else
		st = read_at(fd, buf, len, 0, path);
	close(fd);
	if (st != WH_OK) {
		free(buf);
		return st;
	}
	*buf_out = buf;
	*len_out = len;
	return WH_OK;
}

/* Writes len bytes to path; a failed write leaves no file behind. */
/* Writes the parts one after the other into a new file (no copy into one buffer: a large
 * tensor's data is written from where it lies). */
static enum wh_status write_failed(const char *path, int e)
{
	if (e == ENOSPC || e == EDQUOT)
		return wh_error(WH_ERR_IO, "%s: write failed: the disk is full (free space on it, or write somewhere else)", path);
	return wh_error(WH_ERR_IO, "%s: write failed: %s (check the free disk space)", path, strerror(e));
}

static enum wh_status write_parts(const char *path, const void *const *parts, const size_t *lens, int n_parts)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0)
		return wh_error(WH_ERR_IO, "%s: cannot create: %s (check the folder and its permissions)", path, strerror(errno));
	for (int i = 0; i < n_parts; i++) {
		const uint8_t *p = parts[i];
		size_t done = 0, len = lens[i];
		while (done < len) {
			ssize_t w = write(fd, p + done, len - done);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				int e = errno;
				close(fd);
				unlink(path);
				return write_failed(path, w < 0 ? e : ENOSPC);
			}
			done += (size_t)w;
		}
	}
	if (close(fd) != 0) {
		int e = errno;
		unlink(path);
		return write_failed(path, e);
	}
	return WH_OK;
}

static enum wh_status write_whole(const char *path, const void *data, size_t len)
{
	return write_parts(path, &data, &len, 1);
}

/* ---- .pb (ONNX TensorProto) ---- */

/* protobuf messages cannot exceed 2 GiB */
#define PB_MAX_BYTES ((uint64_t)2 << 30)

/* Kernels read bool as exactly 0 or 1; files may hold any non-zero byte for true (numpy
 * and ONNX Runtime both read those as true). Replaces *raw by a cleaned copy if needed. */
static enum wh_status bool_normalise(struct wh_blob **raw)
{
	if (!*raw)
		return WH_OK;
	const uint8_t *p = (*raw)->data;
	size_t n = (*raw)->size, i = 0;
	while (i < n && p[i] <= 1)
		i++;
	if (i == n)
		return WH_OK;
	struct wh_blob *b;
	void *w;
	enum wh_status st = wh_blob_create(n, &b, &w);
	if (st != WH_OK)
		return st;
	for (i = 0; i < n; i++)
		((uint8_t *)w)[i] = p[i] != 0;
	wh_blob_release(*raw);
	*raw = b;
	return WH_OK;
}

/* A TensorProto's value (the message is owned by the caller's arena). */
static enum wh_status decode_tensor_msg(const Onnx__TensorProto *tp, const char *dir, const char *label,
					struct wh_tensor *t)
{
	struct wh_blob *raw = NULL;
	const char **strs = NULL;
	size_t *lens = NULL;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	enum wh_status st = WH_OK;
	if (tp->segment) {
		st = wh_error(WH_ERR_UNSUPPORTED, "%s: segmented tensors are not supported (write the tensor in one piece)", label);
		goto out;
	}
	/* raw_data and a typed field both holding values: which one is the tensor? */
	if (tp->has_raw_data && (tp->n_float_data || tp->n_int32_data || tp->n_int64_data || tp->n_double_data ||
				 tp->n_uint64_data || tp->n_string_data)) {
		st = wh_error(WH_ERR_INVALID, "%s: holds both raw_data and typed values such as float_data (write the tensor with one of them)", label);
		goto out;
	}
	enum wh_dtype dt;
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	/* errors name the file rather than the tensor: the file is what the user can find */
	if ((st = wh_pb_tensor_decode(tp, dir, label, &dt, &rank, dims, &raw)) != WH_OK)
		goto out;
	if (dt == WH_DT_STRING) {
		/* decode checked that there is one string per element */
		size_t n = tp->n_string_data;
		if (n && (!(strs = calloc(n, sizeof *strs)) || !(lens = calloc(n, sizeof *lens)))) {
			st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", label);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			/* the in-memory form is C strings: an embedded NUL ends the string */
			const uint8_t *s = tp->string_data[i].data;
			size_t l = tp->string_data[i].len;
			const void *nul = l ? memchr(s, 0, l) : NULL;
			strs[i] = l ? (const char *)s : "";
			lens[i] = nul ? (size_t)((const uint8_t *)nul - s) : l;
		}
		/* wh_tensor_alloc_strings does pointer arithmetic on a NULL blob when count is 0 */
		if (n)
			st = wh_tensor_alloc_strings(&tmp, rank, dims, strs, lens);
		else
			st = wh_tensor_alloc(&tmp, WH_DT_STRING, rank, dims);
	} else {
		if (dt == WH_DT_BOOL && (st = bool_normalise(&raw)) != WH_OK)
			goto out;
		st = wh_tensor_from_raw(&tmp, dt, rank, dims, raw);
	}
	if (st != WH_OK)
		goto out;
	wh_tensor_release(t);
	*t = tmp;
	wh_tensor_init(&tmp);
out:
	wh_tensor_release(&tmp);
	wh_blob_release(raw);
	free(strs);
	free(lens);
	return st;
}

/* Sequences of tensors only: whittle's runtime has no maps or sparse tensors, and nests
 * no further. */
static enum wh_status decode_sequence_msg(const Onnx__SequenceProto *sp, const char *dir, const char *label,
					  struct wh_tensor *t)
{
	if (sp->n_sparse_tensor_values || sp->n_sequence_values || sp->n_map_values || sp->n_optional_values ||
	    (sp->has_elem_type && sp->elem_type != ONNX__SEQUENCE_PROTO__DATA_TYPE__TENSOR &&
	     sp->elem_type != ONNX__SEQUENCE_PROTO__DATA_TYPE__UNDEFINED))
		return wh_error(WH_ERR_UNSUPPORTED, "%s: a sequence of something other than tensors (whittle's sequences hold tensors)", label);
	if (sp->n_tensor_values > UINT32_MAX)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: too many sequence items", label);
	struct wh_tensor seq;
	wh_tensor_init(&seq);
	enum wh_status st = wh_seq_new(&seq, WH_DT_UNDEFINED, (uint32_t)sp->n_tensor_values);
	for (size_t i = 0; st == WH_OK && i < sp->n_tensor_values; i++) {
		struct wh_tensor *item = wh_seq_item_mut(&seq, (uint32_t)i);
		if ((st = decode_tensor_msg(sp->tensor_values[i], dir, label, item)) != WH_OK)
			break;
		if (i == 0)
			seq.elem = (uint8_t)item->dtype;
		else if (item->dtype != (enum wh_dtype)seq.elem)
			st = wh_error(WH_ERR_INVALID, "%s: sequence items %zu and 0 have types %s and %s (a sequence holds one type)", label, i,
				      wh_dtype_name(item->dtype), wh_dtype_name((enum wh_dtype)seq.elem));
	}
	if (st == WH_OK) {
		wh_tensor_release(t);
		*t = seq;
	} else {
		wh_tensor_release(&seq);
	}
	return st;
}

static enum wh_status decode_optional_msg(const Onnx__OptionalProto *op, const char *dir, const char *label,
					  struct wh_tensor *t)
{
	if (op->sparse_tensor_value || op->map_value || op->optional_value)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: an optional of something other than a tensor or a sequence (not supported)", label);
	if (op->tensor_value)
		return decode_tensor_msg(op->tensor_value, dir, label, t);
	if (op->sequence_value)
		return decode_sequence_msg(op->sequence_value, dir, label, t);
	wh_value_set_none(t, WH_DT_UNDEFINED);
	return WH_OK;
}

/* The message each kind of file holds. */
static const struct {
	const char *msg;
	const ProtobufCMessageDescriptor *desc;
} pb_kinds[] = {
	[WH_PB_TENSOR] = {"TensorProto", &onnx__tensor_proto__descriptor},
	[WH_PB_SEQUENCE] = {"SequenceProto", &onnx__sequence_proto__descriptor},
	[WH_PB_OPTIONAL] = {"OptionalProto", &onnx__optional_proto__descriptor},
};

static enum wh_status read_pb_mem(const void *data, size_t len, const char *dir, const char *label,
				  enum wh_pb_kind kind, struct wh_tensor *t, char **name_out)
{
	struct wh_arena *arena = NULL;
	char *name = NULL;
	enum wh_status st = wh_arena_create(&arena);
	if (st != WH_OK)
		return st;
	ProtobufCAllocator alloc;
	wh_pb_allocator_init(&alloc, arena);
	const char *stored = NULL;
	enum wh_pb_kind k = kind == WH_PB_SEQUENCE || kind == WH_PB_OPTIONAL ? kind : WH_PB_TENSOR;
	/* nested sequences and optionals recurse in protobuf-c: bound them first */
	if ((st = wh_pb_check_depth(pb_kinds[k].desc, data, len, label)) != WH_OK)
		goto out;
	ProtobufCMessage *msg = protobuf_c_message_unpack(pb_kinds[k].desc, &alloc, len, data);
	if (!msg) {
		st = wh_error(WH_ERR_PARSE, "%s: not a valid %s (truncated or corrupt protobuf; write it again)", label, pb_kinds[k].msg);
		goto out;
	}
	if (k == WH_PB_SEQUENCE) {
		Onnx__SequenceProto *sp = (Onnx__SequenceProto *)msg;
		stored = sp->name;
		st = decode_sequence_msg(sp, dir, label, t);
	} else if (k == WH_PB_OPTIONAL) {
		Onnx__OptionalProto *op = (Onnx__OptionalProto *)msg;
		stored = op->name;
		st = decode_optional_msg(op, dir, label, t);
	} else {
		Onnx__TensorProto *tp = (Onnx__TensorProto *)msg;
		stored = tp->name;
		st = decode_tensor_msg(tp, dir, label, t);
		if (st != WH_OK && tp->segment && wh_pb_check_depth(&onnx__sequence_proto__descriptor, data, len, label) == WH_OK) {
			/* a SequenceProto's items land in TensorProto's segment field: say what it is */
			Onnx__SequenceProto *sp = onnx__sequence_proto__unpack(&alloc, len, data);
			if (sp && sp->n_tensor_values)
				st = wh_error(WH_ERR_INVALID, "%s: holds a sequence of %zu tensors (SequenceProto), and a tensor is expected here (give a TensorProto file)",
					      label, sp->n_tensor_values);
		}
	}
	if (st != WH_OK)
		goto out;
	if (name_out && stored && *stored && !(name = strdup(stored))) {
		wh_tensor_release(t);
		st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", label);
		goto out;
	}
	if (name_out) {
		*name_out = name;
		name = NULL;
	}
out:
	free(name);
	wh_arena_destroy(arena);
	return st;
}

enum wh_status wh_tensor_read_pb_buffer(const void *data, size_t len, const char *label,
					struct wh_tensor *t, char **name_out)
{
	if (name_out)
		*name_out = NULL;
	return read_pb_mem(data, len, NULL, label ? label : "tensor", WH_PB_TENSOR, t, name_out);
}

enum wh_status wh_value_read_pb_buffer(const void *data, size_t len, const char *label, enum wh_pb_kind kind,
				       struct wh_tensor *t, char **name_out)
{
	if (name_out)
		*name_out = NULL;
	return read_pb_mem(data, len, NULL, label ? label : "value", kind, t, name_out);
}

enum wh_status wh_value_read_pb(const char *path, enum wh_pb_kind kind, struct wh_tensor *t, char **name_out)
{
	if (name_out)
		*name_out = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	enum wh_status st = slurp(path, PB_MAX_BYTES, &buf, &len);
	if (st != WH_OK)
		return st;
	/* external data of a tensor file lives next to it */
	char dir[PATH_MAX];
	if ((st = wh_os_dir_of(path, dir, sizeof dir)) == WH_OK)
		st = read_pb_mem(buf, len, dir, path, kind, t, name_out);
	free(buf);
	return st;
}

enum wh_status wh_tensor_read_pb(const char *path, struct wh_tensor *t, char **name_out)
{
	return wh_value_read_pb(path, WH_PB_TENSOR, t, name_out);
}

/* Fills tp (initialised) from a tensor; what it points to is kept in *raw_out / *strs_out,
 * which the caller frees after packing. */
static enum wh_status encode_tensor_msg(const char *path, const char *name, const struct wh_tensor *t,
				       Onnx__TensorProto *tp, struct wh_blob **raw_out, ProtobufCBinaryData **strs_out)
{
	*raw_out = NULL;
	*strs_out = NULL;
	if (!wh_value_is_tensor(t) || !wh_dtype_valid((int)t->dtype) || t->rank < 0 || t->rank > WH_MAX_RANK)
		return wh_error(WH_ERR_USAGE, "%s: tensor has no valid type or rank (internal error)", path);
	if (t->dtype == WH_DT_STRING) {
		wh_pb_tensor_encode(tp, name, t->dtype, t->rank, t->dims, NULL);
		ProtobufCBinaryData *strs = NULL;
		if (t->count) {
			if (!(strs = calloc((size_t)t->count, sizeof *strs)))
				return wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", path);
			const char *const *s = t->data;
			for (uint64_t i = 0; i < t->count; i++) {
				strs[i].data = (uint8_t *)(s[i] ? s[i] : "");
				strs[i].len = s[i] ? strlen(s[i]) : 0;
			}
		}
		tp->n_string_data = (size_t)t->count;
		tp->string_data = strs;
		*strs_out = strs;
		return WH_OK;
	}
	struct wh_blob *raw = NULL;
	/* wh_tensor_to_raw would memset a NULL buffer for an empty 4-bit tensor */
	enum wh_status st = t->count ? wh_tensor_to_raw(t, &raw) : WH_OK;
	if (st != WH_OK)
		return st;
	wh_pb_tensor_encode(tp, name, t->dtype, t->rank, t->dims, raw);
	/* an empty tensor still says where its (zero) bytes are */
	tp->has_raw_data = 1;
	*raw_out = raw;
	return WH_OK;
}

/* The items of a sequence as TensorProtos, and what they point to (seq_enc_free). */
struct seq_enc {
	uint32_t n;
	Onnx__TensorProto *tps;
	Onnx__TensorProto **ptrs;
	struct wh_blob **raws;
	ProtobufCBinaryData **strs;
};

static void seq_enc_free(struct seq_enc *e)
{
	for (uint32_t i = 0; i < e->n; i++) {
		if (e->raws)
			wh_blob_release(e->raws[i]);
		if (e->strs)
			free(e->strs[i]);
	}
	free(e->tps);
	free(e->ptrs);
	free(e->raws);
	free(e->strs);
}

static enum wh_status seq_encode(const char *path, const struct wh_tensor *t, Onnx__SequenceProto *sp,
				 const char *name, struct seq_enc *e)
{
	memset(e, 0, sizeof *e);
	uint32_t n = wh_seq_len(t);
	size_t m = n ? n : 1;
	e->tps = calloc(m, sizeof *e->tps);
	e->ptrs = calloc(m, sizeof *e->ptrs);
	e->raws = calloc(m, sizeof *e->raws);
	e->strs = calloc(m, sizeof *e->strs);
	if (!e->tps || !e->ptrs || !e->raws || !e->strs)
		return wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", path);
	for (uint32_t i = 0; i < n; i++) {
		onnx__tensor_proto__init(&e->tps[i]);
		e->ptrs[i] = &e->tps[i];
		enum wh_status st = encode_tensor_msg(path, NULL, wh_seq_item(t, i), &e->tps[i], &e->raws[i], &e->strs[i]);
		e->n = i + 1;
		if (st != WH_OK)
			return st;
	}
	sp->name = (char *)name;
	sp->has_elem_type = 1;
	sp->elem_type = ONNX__SEQUENCE_PROTO__DATA_TYPE__TENSOR;
	sp->n_tensor_values = n;
	sp->tensor_values = e->ptrs;
	return WH_OK;
}

enum wh_status wh_value_write_pb(const char *path, const char *name, const struct wh_tensor *t, enum wh_pb_kind kind)
{
	struct wh_blob *raw = NULL;
	ProtobufCBinaryData *strs = NULL;
	struct seq_enc se;
	memset(&se, 0, sizeof se);
	uint8_t *buf = NULL;
	enum wh_status st = WH_OK;
	Onnx__TensorProto tp;
	Onnx__SequenceProto sp;
	Onnx__OptionalProto op;
	onnx__tensor_proto__init(&tp);
	onnx__sequence_proto__init(&sp);
	onnx__optional_proto__init(&op);
	const ProtobufCMessage *msg = &tp.base;
	if (t->kind == WH_VALUE_SEQUENCE) {
		if ((st = seq_encode(path, t, &sp, kind == WH_PB_OPTIONAL ? NULL : name, &se)) != WH_OK)
			goto out;
		msg = &sp.base;
	} else if (t->kind == WH_VALUE_NONE) {
		kind = WH_PB_OPTIONAL;
	} else {
		if (kind == WH_PB_SEQUENCE) {
			st = wh_error(WH_ERR_USAGE, "%s: a tensor cannot be written as a sequence (internal error)", path);
			goto out;
		}
		if ((st = encode_tensor_msg(path, kind == WH_PB_OPTIONAL ? NULL : name, t, &tp, &raw, &strs)) != WH_OK)
			goto out;
	}
	if (kind == WH_PB_OPTIONAL) {
		op.name = (char *)name;
		op.has_elem_type = 1;
		if (t->kind == WH_VALUE_SEQUENCE) {
			op.elem_type = ONNX__OPTIONAL_PROTO__DATA_TYPE__SEQUENCE;
			op.sequence_value = &sp;
		} else if (t->kind == WH_VALUE_TENSOR) {
			op.elem_type = ONNX__OPTIONAL_PROTO__DATA_TYPE__TENSOR;
			op.tensor_value = &tp;
		} else {
			op.elem_type = ONNX__OPTIONAL_PROTO__DATA_TYPE__UNDEFINED;
		}
		msg = &op.base;
	}
	size_t n = protobuf_c_message_get_packed_size(msg);
	if (n > PB_MAX_BYTES) {
		st = wh_error(WH_ERR_UNSUPPORTED, "%s: %zu bytes is above the 2 GiB limit of a .pb file (write it as .npy)", path, n);
		goto out;
	}
	if (!(buf = malloc(n ? n : 1))) {
		st = wh_error(WH_ERR_NOMEM, "%s: cannot allocate %zu bytes (free some memory)", path, n);
		goto out;
	}
	protobuf_c_message_pack(msg, buf);
	st = write_whole(path, buf, n);
out:
	free(buf);
	free(strs);
	wh_blob_release(raw);
	seq_enc_free(&se);
	return st;
}

enum wh_status wh_tensor_write_pb(const char *path, const char *name, const struct wh_tensor *t)
{
	enum wh_pb_kind kind = t->kind == WH_VALUE_SEQUENCE ? WH_PB_SEQUENCE
			       : t->kind == WH_VALUE_NONE   ? WH_PB_OPTIONAL
							    : WH_PB_TENSOR;
	return wh_value_write_pb(path, name, t, kind);
}

/* ---- .npy ---- */

/* The header is a Python dict literal written by numpy, e.g.
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces. */

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tensor files assume a little-endian host"
#endif

static const uint8_t npy_magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

/* The most header bytes accepted: numpy itself refuses headers above 10000 bytes unless told
 * otherwise; a rank-16 shape of 64-bit numbers fits easily. */
#define NPY_MAX_HEADER 65536

struct npy_info {
	enum wh_dtype dtype;
	bool swap;      /* big-endian data */
	int32_t rank;
	int64_t dims[WH_MAX_RANK];
	uint64_t count;
	uint64_t data_offset, data_bytes;
};

static const struct {
	char kind;
	unsigned size;
	enum wh_dtype dtype;
} npy_types[] = {
	{'b', 1, WH_DT_BOOL},    {'i', 1, WH_DT_INT8},     {'u', 1, WH_DT_UINT8},
	{'i', 2, WH_DT_INT16},   {'u', 2, WH_DT_UINT16},   {'i', 4, WH_DT_INT32},
	{'u', 4, WH_DT_UINT32},  {'i', 8, WH_DT_INT64},    {'u', 8, WH_DT_UINT64},
	{'f', 2, WH_DT_FLOAT16}, {'f', 4, WH_DT_FLOAT},    {'f', 8, WH_DT_DOUBLE},
	{'c', 8, WH_DT_COMPLEX64}, {'c', 16, WH_DT_COMPLEX128},
};

struct npy_lexer {
	const char *p, *end;
	const char *label;
};

static void npy_skip_space(struct npy_lexer *L)
{
	while (L->p < L->end && (*L->p == ' ' || *L->p == '\t' || *L->p == '\n' || *L->p == '\r'))
		L->p++;
}

static bool npy_accept(struct npy_lexer *L, char c)
{
	npy_skip_space(L);
	if (L->p < L->end && *L->p == c) {
		L->p++;
		return true;
	}
	return false;
}

static enum wh_status npy_bad(struct npy_lexer *L, const char *what)
{
	return wh_error(WH_ERR_PARSE, "%s: bad .npy header: %s (write the file again with numpy.save)", L->label, what);
}

/* A quoted string without escapes (numpy writes none in these keys and values). */
static enum wh_status npy_string(struct npy_lexer *L, char *out, size_t size)
{
	npy_skip_space(L);
	if (L->p >= L->end || (*L->p != '\'' && *L->p != '"'))
		return npy_bad(L, "expected a quoted string");
	char q = *L->p++;
	size_t n = 0;
	while (L->p < L->end && *L->p != q) {
		if (*L->p == '\\' || n + 1 >= size)
			return npy_bad(L, "string too long or escaped");
		out[n++] = *L->p++;
	}
	if (L->p >= L->end)
		return npy_bad(L, "unterminated string");
	L->p++;
	out[n] = '\0';
	return WH_OK;
}

static bool npy_word(struct npy_lexer *L, const char *w)
{
	npy_skip_space(L);
	size_t n = strlen(w);
	if ((size_t)(L->end - L->p) >= n && !memcmp(L->p, w, n)) {
		L->p += n;
		return true;
	}
	return false;
}

static enum wh_status npy_descr(struct npy_lexer *L, const char *descr, struct npy_info *info)
{
	char order = descr[0];
	const char *d = descr;
	if (order == '<' || order == '>' || order == '|' || order == '=')
		d++;
	else
		order = '=';
	if (d[0] == 'V' && !strcmp(d + 1, "2"))
		return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy type '%s' is opaque; numpy has no bfloat16 (save bfloat16 data as float32 or as an ONNX .pb)", L->label, descr);
	char kind = d[0];
	if (kind && strchr("USOVMma", kind))
		return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy type '%s' is not a numeric type (save numbers; strings go in an ONNX .pb)", L->label, descr);
	if (kind == '?' && !d[1])
		kind = 'b', d = "b1";
	char *end;
	errno = 0;
	unsigned long size = kind ? strtoul(d + 1, &end, 10) : 0;
	if (!kind || errno || end == d + 1 || *end)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy type '%s' is not supported (use a plain numeric type, e.g. '<f4')", L->label, descr);
	for (size_t i = 0; i < sizeof npy_types / sizeof npy_types[0]; i++) {
		if (npy_types[i].kind == kind && npy_types[i].size == size) {
			info->dtype = npy_types[i].dtype;
			info->swap = order == '>' && size > 1;
			return WH_OK;
		}
	}
	if (kind == 'f' && size == 16)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy type '%s' (long double) is not supported (save it as float64)", L->label, descr);
	return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy type '%s' is not supported (use b1, i1-i8, u1-u8, f2, f4, f8, c8 or c16)", L->label, descr);
}

static enum wh_status npy_shape(struct npy_lexer *L, struct npy_info *info)
{
	if (!npy_accept(L, '('))
		return npy_bad(L, "shape is not a tuple");
	info->rank = 0;
	for (;;) {
		if (npy_accept(L, ')'))
			return WH_OK;
		npy_skip_space(L);
		if (L->p < L->end && *L->p == '-')
			return wh_error(WH_ERR_INVALID, "%s: .npy shape has a negative dimension (write the file again)", L->label);
		if (L->p >= L->end || *L->p < '0' || *L->p > '9')
			return npy_bad(L, "shape holds something other than numbers");
		uint64_t v = 0;
		while (L->p < L->end && *L->p >= '0' && *L->p <= '9') {
			if (!wh_mul_u64(v, 10, &v) || !wh_add_u64(v, (uint64_t)(*L->p - '0'), &v) || v > (uint64_t)INT64_MAX)
				return wh_error(WH_ERR_OVERFLOW, "%s: .npy shape has a dimension beyond 2^63 (the file is corrupt)", L->label);
			L->p++;
		}
		if (L->p < L->end && (*L->p == 'L' || *L->p == 'l'))
			L->p++; /* Python 2 long literal */
		if (info->rank >= WH_MAX_RANK)
			return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy shape has more than %d dimensions (whittle's limit)", L->label, WH_MAX_RANK);
		info->dims[info->rank++] = (int64_t)v;
		if (npy_accept(L, ','))
			continue;
		if (npy_accept(L, ')'))
			return WH_OK;
		return npy_bad(L, "shape tuple is not closed");
	}
}

/* Parses the preamble and the header dict at the start of buf (only the first len bytes
 * are available); fills info, including where the data starts and how many bytes it has. */
static enum wh_status npy_parse(const uint8_t *buf, size_t len, const char *label, struct npy_info *info)
{
	memset(info, 0, sizeof *info);
	if (len < 10 || memcmp(buf, npy_magic, sizeof npy_magic) != 0)
		return wh_error(WH_ERR_PARSE, "%s: not a .npy file (no \\x93NUMPY magic; save it with numpy.save)", label);
	unsigned major = buf[6], minor = buf[7];
	uint64_t hlen, hstart;
	if (major == 1) {
		hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8;
		hstart = 10;
	} else if (major == 2 || major == 3) {
		if (len < 12)
			return wh_error(WH_ERR_PARSE, "%s: truncated .npy preamble (the file is cut short)", label);
		hlen = (uint64_t)buf[8] | (uint64_t)buf[9] << 8 | (uint64_t)buf[10] << 16 | (uint64_t)buf[11] << 24;
		hstart = 12;
	} else {
		return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy format version %u.%u is not supported (1.0, 2.0 and 3.0 are; save with numpy.save)", label, major, minor);
	}
	if (hlen > NPY_MAX_HEADER)
		return wh_error(WH_ERR_PARSE, "%s: .npy header of %llu bytes is implausibly large (the file is corrupt)", label, (unsigned long long)hlen);
	if (hstart + hlen > len)
		return wh_error(WH_ERR_PARSE, "%s: .npy header runs past the end of the file (the file is cut short)", label);
	struct npy_lexer L = {(const char *)buf + hstart, (const char *)buf + hstart + hlen, label};
	char key[32], descr[32];
	bool have_descr = false, have_order = false, have_shape = false, fortran = false;
	enum wh_status st;
	if (!npy_accept(&L, '{'))
		return npy_bad(&L, "does not start with '{'");
	while (!npy_accept(&L, '}')) {
		if ((st = npy_string(&L, key, sizeof key)) != WH_OK)
			return st;
		if (!npy_accept(&L, ':'))
			return npy_bad(&L, "missing ':' after a key");
		if (!strcmp(key, "descr") && !have_descr) {
			npy_skip_space(&L);
			if (L.p < L.end && *L.p == '[')
				return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy holds a structured array (save one plain numeric array per file)", label);
			if ((st = npy_string(&L, descr, sizeof descr)) != WH_OK)
				return st;
			have_descr = true;
		} else if (!strcmp(key, "fortran_order") && !have_order) {
			if (npy_word(&L, "True"))
				fortran = true;
			else if (!npy_word(&L, "False"))
				return npy_bad(&L, "fortran_order is neither True nor False");
			have_order = true;
		} else if (!strcmp(key, "shape") && !have_shape) {
			if ((st = npy_shape(&L, info)) != WH_OK)
				return st;
			have_shape = true;
		} else {
			return npy_bad(&L, "unexpected or repeated key");
		}
		if (!npy_accept(&L, ',')) {
			if (!npy_accept(&L, '}'))
				return npy_bad(&L, "expected ',' or '}'");
			break;
		}
	}
	if (!have_descr || !have_order || !have_shape)
		return npy_bad(&L, "missing 'descr', 'fortran_order' or 'shape'");
	if ((st = npy_descr(&L, descr, info)) != WH_OK)
		return st;
	if (!wh_shape_count(info->dims, info->rank, &info->count))
		return wh_error(WH_ERR_OVERFLOW, "%s: .npy shape has too many elements (the file is corrupt)", label);
	if (fortran) {
		/* column-major equals row-major when at most one dimension exceeds 1 */
		int big = 0;
		for (int32_t i = 0; i < info->rank; i++)
			big += info->dims[i] > 1;
		if (big > 1)
			return wh_error(WH_ERR_UNSUPPORTED, "%s: .npy array is in Fortran (column-major) order (save numpy.ascontiguousarray(a) instead)", label);
	}
	if (!wh_dtype_raw_bytes(info->dtype, info->count, &info->data_bytes))
		return wh_error(WH_ERR_OVERFLOW, "%s: .npy data too large (the file is corrupt)", label);
	info->data_offset = hstart + hlen;
	return WH_OK;
}

/* Finishes a tensor whose blob holds the file's data: byte order and bool values. */
static void npy_fix_data(const struct npy_info *info, uint8_t *data)
{
	size_t es = wh_dtype_size(info->dtype);
	if (info->dtype == WH_DT_BOOL) {
		for (uint64_t i = 0; i < info->count; i++)
			data[i] = data[i] != 0;
		return;
	}
	if (!info->swap)
		return;
	/* complex numbers swap each of their two parts */
	if (info->dtype == WH_DT_COMPLEX64 || info->dtype == WH_DT_COMPLEX128)
		es /= 2;
	uint64_t n = info->data_bytes / es;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t *e = data + i * es;
		for (size_t a = 0, b = es - 1; a < b; a++, b--) {
			uint8_t x = e[a];
			e[a] = e[b];
			e[b] = x;
		}
	}
}

static enum wh_status npy_check_size(const struct npy_info *info, uint64_t file_len, const char *label)
{
	uint64_t end;
	if (!wh_add_u64(info->data_offset, info->data_bytes, &end) || end > file_len)
		return wh_error(WH_ERR_PARSE, "%s: .npy header promises %llu data bytes, the file holds %llu (the file is cut short)",
				label, (unsigned long long)info->data_bytes,
				(unsigned long long)(file_len - (info->data_offset < file_len ? info->data_offset : file_len)));
	if (end < file_len)
		return wh_error(WH_ERR_PARSE, "%s: %llu bytes after the .npy data (the file is not one array; write it again with numpy.save)",
				label, (unsigned long long)(file_len - end));
	return WH_OK;
}

static enum wh_status npy_make(const struct npy_info *info, const char *label, struct wh_tensor *t,
			       const void *src, int fd)
{
	struct wh_blob *blob = NULL;
	void *w = NULL;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	enum wh_status st = wh_blob_create((size_t)info->data_bytes, &blob, &w);
	if (st == WH_ERR_NOMEM)
		return wh_error(st, "%s: its %llu data bytes cannot be allocated (free some memory)", label,
				(unsigned long long)info->data_bytes);
	if (st != WH_OK)
		return st;
	if (src) {
		if (info->data_bytes)
			memcpy(w, src, (size_t)info->data_bytes);
	} else {
		if ((st = read_at(fd, w, (size_t)info->data_bytes, info->data_offset, label)) != WH_OK)
			goto out;
	}
	if (w)
		npy_fix_data(info, w);
	if ((st = wh_tensor_from_raw(&tmp, info->dtype, info->rank, info->dims, blob)) != WH_OK)
		goto out;
	wh_tensor_release(t);
	*t = tmp;
out:
	wh_blob_release(blob);
	return st;
}

enum wh_status wh_tensor_read_npy_buffer(const void *data, size_t len, const char *label,
					 struct wh_tensor *t)
{
	struct npy_info info;
	if (!label)
		label = "tensor";
	enum wh_status st = npy_parse(data, len, label, &info);
	if (st == WH_OK)
		st = npy_check_size(&info, len, label);
	if (st == WH_OK)
		st = npy_make(&info, label, t, (const uint8_t *)data + info.data_offset, -1);
	return st;
}

enum wh_status wh_tensor_read_npy(const char *path, struct wh_tensor *t)
{
	uint8_t *head = NULL;
	int fd;
	struct stat sb;
	enum wh_status st = open_regular(path, "a .npy file", &fd, &sb);
	if (st != WH_OK)
		return st;
	/* only the header is read whole; the data goes straight into the tensor's blob */
	size_t want = 12 + NPY_MAX_HEADER;
	size_t have = (uint64_t)sb.st_size < want ? (size_t)sb.st_size : want;
	if (!(head = malloc(have ? have : 1))) {
		st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", path);
		goto out;
	}
	if ((st = read_at(fd, head, have, 0, path)) != WH_OK)
		goto out;
	struct npy_info info;
	if ((st = npy_parse(head, have, path, &info)) != WH_OK)
		goto out;
	if ((st = npy_check_size(&info, (uint64_t)sb.st_size, path)) != WH_OK)
		goto out;
	st = npy_make(&info, path, t, NULL, fd);
out:
	free(head);
	close(fd);
	return st;
}

static const char *npy_descr_of(enum wh_dtype dt)
{
	switch (dt) {
	case WH_DT_BOOL: return "|b1";
	case WH_DT_INT8: return "|i1";
	case WH_DT_UINT8: return "|u1";
	case WH_DT_INT16: return "<i2";
	case WH_DT_UINT16: return "<u2";
	case WH_DT_INT32: return "<i4";
	case WH_DT_UINT32: return "<u4";
	case WH_DT_INT64: return "<i8";
	case WH_DT_UINT64: return "<u8";
	case WH_DT_FLOAT16: return "<f2";
	case WH_DT_FLOAT: return "<f4";
	case WH_DT_DOUBLE: return "<f8";
	case WH_DT_COMPLEX64: return "<c8";
	case WH_DT_COMPLEX128: return "<c16";
	default: return NULL;
	}
}

bool wh_npy_holds(enum wh_dtype dt)
{
	return npy_descr_of(dt) != NULL;
}

enum wh_status wh_tensor_write_npy(const char *path, const struct wh_tensor *t)
{
	const char *descr = npy_descr_of(t->dtype);
	if (!descr)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: numpy has no %s type (write the tensor as .pb instead)", path, wh_dtype_name(t->dtype));
	if (t->rank < 0 || t->rank > WH_MAX_RANK)
		return wh_error(WH_ERR_USAGE, "%s: tensor has no valid rank (internal error)", path);
	/* dict text: 16 dims of 20 digits fit in well under 512 bytes */
	char dict[512];
	int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
	for (int32_t i = 0; i < t->rank; i++)
		n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld", (long long)t->dims[i]);
	n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", t->rank == 1 ? "," : "");
	/* numpy pads the preamble and header to a multiple of 64 so the data is aligned */
	size_t pre = 10, total = pre + (size_t)n + 1;
	if ((total + 63) / 64 * 64 - pre > 65535)
		pre = 12; /* version 2.0: 4-byte header length */
	total = (pre + (size_t)n + 1 + 63) / 64 * 64;
	size_t hlen = total - pre, nbytes = wh_tensor_nbytes(t);
	uint8_t buf[640];
	memcpy(buf, npy_magic, sizeof npy_magic);
	buf[6] = pre == 10 ? 1 : 2;
	buf[7] = 0;
	buf[8] = (uint8_t)hlen;
	buf[9] = (uint8_t)(hlen >> 8);
	if (pre == 12) {
		buf[10] = (uint8_t)(hlen >> 16);
		buf[11] = (uint8_t)(hlen >> 24);
	}
	memcpy(buf + pre, dict, (size_t)n);
	memset(buf + pre + n, ' ', hlen - (size_t)n - 1);
	buf[total - 1] = '\n';
	/* the data straight from the tensor: no second copy of a large one in memory */
	const void *parts[2] = {buf, t->data};
	size_t lens[2] = {total, nbytes};
	return write_parts(path, parts, lens, nbytes ? 2 : 1);
}

enum wh_status wh_tensor_write_raw(const char *path, const struct wh_tensor *t)
{
	if (!wh_value_is_tensor(t) || t->dtype == WH_DT_UNDEFINED || t->dtype == WH_DT_STRING)
		return wh_error(WH_ERR_UNSUPPORTED, "%s: a %s has no raw form (only numeric tensors do)", path,
				t->dtype == WH_DT_STRING ? "string tensor" : wh_value_kind_name(t));
	struct wh_blob *raw = NULL;
	enum wh_status st = wh_tensor_to_raw(t, &raw);
	if (st != WH_OK)
		return st;
	const void *parts[1] = {raw ? raw->data : NULL};
	size_t lens[1] = {raw ? raw->size : 0};
	st = write_parts(path, parts, lens, 1);
	wh_blob_release(raw);
	return st;
}

enum wh_status wh_tensor_map_npy(const char *path, struct wh_tensor *t)
{
	struct wh_blob_file *f = NULL;
	struct wh_blob *whole = NULL, *view = NULL;
	const char *base = strrchr(path, '/');
	enum wh_status st = wh_blob_file_open(path, base ? base + 1 : path, &f);
	if (st != WH_OK)
		return st;
	uint64_t size = wh_blob_file_size(f);
	if (size < 10) {
		st = wh_error(WH_ERR_PARSE, "%s: not a .npy file (too short; save it with numpy.save)", path);
		goto out;
	}
	if ((st = wh_blob_create_view(f, 0, (size_t)size, &whole)) != WH_OK)
		goto out;
	struct npy_info info;
	if ((st = npy_parse(whole->data, (size_t)size, path, &info)) != WH_OK || (st = npy_check_size(&info, size, path)) != WH_OK)
		goto out;
	if (info.swap || info.dtype == WH_DT_BOOL) {
		/* the bytes need fixing (byte order, bool values other than 0 and 1): a copy */
		st = npy_make(&info, path, t, (const uint8_t *)whole->data + info.data_offset, -1);
		goto out;
	}
	if ((st = wh_blob_create_view(f, info.data_offset, (size_t)info.data_bytes, &view)) != WH_OK)
		goto out;
	struct wh_tensor tmp;
	wh_tensor_init(&tmp);
	if ((st = wh_tensor_from_raw(&tmp, info.dtype, info.rank, info.dims, view)) != WH_OK)
		goto out;
	wh_tensor_release(t);
	*t = tmp;
out:
	wh_blob_release(view);
	wh_blob_release(whole);
	wh_blob_file_release(f);
	return st;
}

enum wh_status wh_tensor_read_file(const char *path, struct wh_tensor *t, char **name_out)
{
	if (name_out)
		*name_out = NULL;
	size_t l = strlen(path);
	if (l >= 4 && !strcmp(path + l - 4, ".npy"))
		return wh_tensor_read_npy(path, t);
	if (l >= 3 && !strcmp(path + l - 3, ".pb"))
		return wh_tensor_read_pb(path, t, name_out);
	/* another extension: a .npy says so in its first bytes; anything else is tried as .pb */
	uint8_t head[sizeof npy_magic] = {0};
	FILE *f = fopen(path, "rb");
	if (f) {
		size_t got = fread(head, 1, sizeof head, f);
		fclose(f);
		if (got == sizeof head && !memcmp(head, npy_magic, sizeof head))
			return wh_tensor_read_npy(path, t);
	}
	return wh_tensor_read_pb(path, t, name_out);
}

/* ---- data sets ---- */

void wh_tensor_set_init(struct wh_tensor_set *s)
{
	s->n = 0;
	s->items = NULL;
}

void wh_tensor_set_release(struct wh_tensor_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		free(s->items[i].name);
		wh_tensor_release(&s->items[i].t);
	}
	free(s->items);
	wh_tensor_set_init(s);
}

static bool same_entry(const struct wh_named_tensor *e, const char *name, int index)
{
	if (name || e->name)
		return name && e->name && !strcmp(name, e->name);
	return index >= 0 && e->index == index;
}

enum wh_status wh_tensor_set_add(struct wh_tensor_set *s, const char *name, int index,
				 const struct wh_tensor *t)
{
	for (size_t i = 0; i < s->n; i++) {
		if (!same_entry(&s->items[i], name, index))
			continue;
		if (name)
			return wh_error(WH_ERR_INVALID, "tensor set: two tensors are named '%s' (keep one of them)", name);
		return wh_error(WH_ERR_INVALID, "tensor set: two unnamed tensors at position %d (keep one of them)", index);
	}
	char *copy = NULL;
	if (name && !(copy = strdup(name)))
		return wh_error(WH_ERR_NOMEM, "tensor set: out of memory (free some memory)");
	struct wh_named_tensor *items = realloc(s->items, (s->n + 1) * sizeof *items);
	if (!items) {
		free(copy);
		return wh_error(WH_ERR_NOMEM, "tensor set: out of memory (free some memory)");
	}
	s->items = items;
	struct wh_named_tensor *e = &items[s->n++];
	e->name = copy;
	e->index = index;
	wh_tensor_init(&e->t);
	wh_tensor_ref(&e->t, t);
	return WH_OK;
}

const struct wh_tensor *wh_tensor_set_find(const struct wh_tensor_set *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->items[i].name && !strcmp(s->items[i].name, name))
			return &s->items[i].t;
	return NULL;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && !strcmp(s + a - b, suffix);
}

/* If file is <word>_<k>.pb or .npy with word == prefix (or input/output when prefix is
 * NULL), returns k; else -1. */
static int positional_index(const char *file, const char *prefix)
{
	static const char *const words[] = {"input", "output"};
	for (size_t w = 0; w < (prefix ? 1 : 2); w++) {
		const char *word = prefix ? prefix : words[w];
		size_t wl = strlen(word);
		if (strncmp(file, word, wl) != 0 || file[wl] != '_')
			continue;
		const char *p = file + wl + 1;
		size_t digits = strspn(p, "0123456789");
		/* nine digits keep k within an int */
		if (!digits || digits > 9)
			continue;
		int k = 0;
		for (size_t i = 0; i < digits; i++)
			k = k * 10 + (p[i] - '0');
		p += digits;
		if (!strcmp(p, ".pb") || !strcmp(p, ".npy"))
			return k;
	}
	return -1;
}

/* File names compare with digit runs as numbers, so input_2 sorts before input_10. */
static int natural_cmp(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	while (*a && *b) {
		if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
			while (*a == '0')
				a++;
			while (*b == '0')
				b++;
			size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
			if (la != lb)
				return la < lb ? -1 : 1;
			int c = strncmp(a, b, la);
			if (c)
				return c;
			a += la;
			b += lb;
			continue;
		}
		if (*a != *b)
			return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
		a++;
		b++;
	}
	if (*a || *b)
		return *a ? 1 : -1;
	return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Undoes wh_tensor_name_to_file on a file name without its extension (malloc'd). */
static char *name_from_file(const char *file, size_t stem_len)
{
	char *out = malloc(stem_len + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	if (stem_len == 3 && !memcmp(file, "%00", 3))
		stem_len = 0; /* the empty name */
	for (size_t i = 0; i < stem_len; i++) {
		int hi, lo;
		if (file[i] == '%' && i + 2 < stem_len &&
		    (hi = hexval(file[i + 1])) >= 0 && (lo = hexval(file[i + 2])) >= 0 && (hi || lo)) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[o++] = file[i];
		}
	}
	out[o] = '\0';
	return out;
}

static enum wh_pb_kind pb_kind_of_value(const struct wh_value *v)
{
	switch (wh_value_type_of(v, NULL)) {
	case WH_TYPE_SEQUENCE: return WH_PB_SEQUENCE;
	case WH_TYPE_OPTIONAL:
	case WH_TYPE_OPTIONAL_SEQUENCE: return WH_PB_OPTIONAL;
	default: return WH_PB_TENSOR;
	}
}

/* The declared kind of the value a data-set file is for: position k among g's inputs that
 * are not initializers (or among its outputs), or the value of that name. */
static enum wh_pb_kind pb_kind_for(const struct wh_graph *g, bool outputs, int index, const char *name)
{
	if (!g)
		return WH_PB_TENSOR;
	if (index >= 0) {
		int pos = 0;
		uint32_t n = outputs ? g->n_outputs : g->n_inputs;
		for (uint32_t i = 0; i < n; i++) {
			const struct wh_value *v = &g->values[outputs ? g->outputs[i] : g->inputs[i]];
			if (!outputs && (v->flags & WH_VALUE_INITIALIZER))
				continue;
			if (pos++ == index)
				return pb_kind_of_value(v);
		}
		return WH_PB_TENSOR;
	}
	uint32_t id = name ? wh_graph_find_value(g, name) : WH_NONE;
	return id != WH_NONE ? pb_kind_of_value(&g->values[id]) : WH_PB_TENSOR;
}

/* Equal once '/' and ':' are read as '_' on both sides. */
static bool same_sanitized(const char *a, const char *b)
{
	for (;; a++, b++) {
		char x = *a == '/' || *a == ':' ? '_' : *a, y = *b == '/' || *b == ':' ? '_' : *b;
		if (x != y)
			return false;
		if (!x)
			return true;
	}
}

static bool name_candidate(const struct wh_graph *g, uint32_t v, enum wh_names what)
{
	const struct wh_value *val = &g->values[v];
	if (!val->name || !*val->name)
		return false;
	if (what == WH_NAMES_VALUES)
		return true;
	if (val->flags & WH_VALUE_INITIALIZER)
		return false;
	for (uint32_t i = 0; i < g->n_inputs; i++)
		if (g->inputs[i] == v)
			return true;
	return false;
}

/* "a, b, c" (the model's inputs, shortened with "..." past size). */
static void list_inputs(const struct wh_graph *g, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (uint32_t i = 0; i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", v->name ? v->name : "?");
		if (w < 0 || (size_t)w >= size - len) {
			if (size > 4)
				strcpy(buf + size - 4, "...");
			return;
		}
		len += (size_t)w;
	}
}

/* Whether name is what a file of value name vname reads as when its file name is a hashed
 * one (wh_tensor_name_to_file) and the file does not store the name (a .npy). */
static bool same_hashed(const char *name, const char *vname)
{
	char stem[WH_TENSOR_STEM_MAX + 1];
	if (!strchr(name, '~'))
		return false;
	wh_tensor_name_to_file(vname, stem);
	size_t len = strlen(stem);
	if (!wh_tensor_file_is_hashed(stem, len))
		return false;
	char *back = name_from_file(stem, len);
	bool same = back && !strcmp(back, name);
	free(back);
	return same;
}

/* The k-th input of g that is not an initializer, or WH_NONE. */
static uint32_t input_at(const struct wh_graph *g, int k)
{
	int pos = 0;
	for (uint32_t i = 0; k >= 0 && i < g->n_inputs; i++) {
		const struct wh_value *v = &g->values[g->inputs[i]];
		if (v->flags & WH_VALUE_INITIALIZER)
			continue;
		if (pos++ == k)
			return g->inputs[i];
	}
	return WH_NONE;
}

enum wh_status wh_tensor_set_match_names(struct wh_tensor_set *s, const struct wh_graph *g, enum wh_names what, const char *dir)
{
	char inputs[256];
	/* input_<k> files without a stored name: the input of that name when the model has one
	 * (its inputs may be called input_0, input_1, ...), else the k-th input; either way the
	 * tensor takes the name, so that a second file for the same input is an error below */
	for (size_t i = 0; what == WH_NAMES_INPUTS && i < s->n; i++) {
		struct wh_named_tensor *e = &s->items[i];
		if (e->name || e->index < 0)
			continue;
		char lit[32];
		snprintf(lit, sizeof lit, "input_%d", e->index);
		uint32_t v = wh_graph_find_value(g, lit);
		if (v == WH_NONE || !name_candidate(g, v, what))
			v = input_at(g, e->index);
		if (v == WH_NONE || !g->values[v].name || !*g->values[v].name) {
			list_inputs(g, inputs, sizeof inputs);
			return wh_error(WH_ERR_INVALID, "%s: input_%d holds no name and the model has no input at position %d, its inputs are %s (remove the file, or store the input's name in it)",
					dir, e->index, e->index, inputs);
		}
		if (!(e->name = strdup(g->values[v].name)))
			return wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
	}
	for (size_t i = 0; i < s->n; i++) {
		struct wh_named_tensor *e = &s->items[i];
		if (!e->name)
			continue;
		uint32_t exact = wh_graph_find_value(g, e->name);
		if (exact != WH_NONE && name_candidate(g, exact, what))
			continue;
		uint32_t found = WH_NONE, second = WH_NONE;
		for (uint32_t v = 0; v < g->n_values && second == WH_NONE; v++) {
			if (!name_candidate(g, v, what) ||
			    !(same_sanitized(e->name, g->values[v].name) || same_hashed(e->name, g->values[v].name)))
				continue;
			if (found == WH_NONE)
				found = v;
			else
				second = v;
		}
		if (second != WH_NONE)
			return wh_error(WH_ERR_INVALID, "%s: tensor '%s' could be %s '%s' or '%s' ('/' and ':' are written as '_'; name the file or the tensor exactly)",
					dir, e->name, what == WH_NAMES_INPUTS ? "input" : "tensor", g->values[found].name, g->values[second].name);
		if (found == WH_NONE) {
			if (what == WH_NAMES_VALUES)
				return wh_error(WH_ERR_INVALID, "%s: tensor '%s' is no tensor of the model (name each file after a tensor the model computes)", dir, e->name);
			list_inputs(g, inputs, sizeof inputs);
			return wh_error(WH_ERR_INVALID, "%s: tensor '%s' matches no input of the model, whose inputs are %s (name each file after an input, or remove it)",
					dir, e->name, inputs);
		}
		char *nm = strdup(g->values[found].name);
		if (!nm)
			return wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
		free(e->name);
		e->name = nm;
	}
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = i + 1; s->items[i].name && j < s->n; j++)
			if (s->items[j].name && !strcmp(s->items[i].name, s->items[j].name))
				return wh_error(WH_ERR_INVALID, "%s: two files hold %s '%s' (remove one)", dir,
						what == WH_NAMES_INPUTS ? "input" : "tensor", s->items[i].name);
	return WH_OK;
}

enum wh_status wh_tensor_set_read_dir(const char *dir, const char *prefix, struct wh_tensor_set *s)
{
	return wh_tensor_set_read_dir_for(dir, prefix, NULL, false, s);
}

enum wh_status wh_tensor_set_read_dir_for(const char *dir, const char *prefix, const struct wh_graph *g, bool outputs,
					  struct wh_tensor_set *s)
{
	char **files = NULL;
	size_t n = 0, cap = 0;
	char *name = NULL;
	struct wh_tensor t;
	struct wh_tensor_set out;
	wh_tensor_init(&t);
	wh_tensor_set_init(&out);
	enum wh_status st = WH_OK;
	DIR *d = opendir(dir);
	if (!d)
		return wh_error(WH_ERR_IO, "%s: cannot open tensor folder: %s (check the path)", dir, strerror(errno));
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *f = de->d_name;
		if (f[0] == '.')
			continue;
		if (prefix ? positional_index(f, prefix) < 0 : !(has_suffix(f, ".pb") || has_suffix(f, ".npy")))
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			char **nf = realloc(files, nc * sizeof *nf);
			if (!nf) {
				st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
				goto out;
			}
			files = nf;
			cap = nc;
		}
		if (!(files[n] = strdup(f))) {
			st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
			goto out;
		}
		n++;
	}
	if (!n) {
		if (prefix)
			st = wh_error(WH_ERR_NOT_FOUND, "%s: no %s_<k>.pb files in the folder (check the folder, or save the tensors there first)", dir, prefix);
		else
			st = wh_error(WH_ERR_NOT_FOUND, "%s: no .pb or .npy tensor files in the folder (check the folder, or save the tensors there first)", dir);
		goto out;
	}
	qsort(files, n, sizeof *files, natural_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];
		if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) >= (int)sizeof path) {
			st = wh_error(WH_ERR_IO, "%s/%s: path too long (use a shorter folder name)", dir, files[i]);
			goto out;
		}
		free(name);
		name = NULL;
		int index = positional_index(files[i], prefix);
		if (g && has_suffix(files[i], ".pb")) {
			/* the file's value decides which message it holds */
			char *stem_name = index < 0 ? name_from_file(files[i], strlen(files[i]) - 3) : NULL;
			if (index < 0 && !stem_name) {
				st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
				goto out;
			}
			st = wh_value_read_pb(path, pb_kind_for(g, outputs, index, stem_name), &t, &name);
			free(stem_name);
		} else {
			st = wh_tensor_read_file(path, &t, &name);
		}
		if (st != WH_OK)
			goto out;
		if (!name && index < 0) {
			size_t stem = strlen(files[i]) - (has_suffix(files[i], ".npy") ? 4 : 3);
			if (!(name = name_from_file(files[i], stem))) {
				st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
				goto out;
			}
		}
		for (size_t j = 0; j < out.n; j++) {
			if (!same_entry(&out.items[j], name, index))
				continue;
			if (name)
				st = wh_error(WH_ERR_INVALID, "%s: two files hold tensor '%s' (%s and another; remove one)", dir, name, files[i]);
			else
				st = wh_error(WH_ERR_INVALID, "%s: two unnamed files at position %d (%s and another; remove one)", dir, index, files[i]);
			goto out;
		}
		if ((st = wh_tensor_set_add(&out, name, index, &t)) != WH_OK)
			goto out;
	}
	wh_tensor_set_release(s);
	*s = out;
	wh_tensor_set_init(&out);
out:
	closedir(d);
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(name);
	wh_tensor_release(&t);
	wh_tensor_set_release(&out);
	return st;
}

enum wh_status wh_tensor_set_write_dir(const char *dir, const char *prefix, const struct wh_tensor_set *s)
{
	return wh_tensor_set_write_dir_for(dir, prefix, NULL, false, s);
}

enum wh_status wh_tensor_set_write_dir_for(const char *dir, const char *prefix, const struct wh_graph *g, bool outputs,
					   const struct wh_tensor_set *s)
{
	struct stat sb;
	bool existed = stat(dir, &sb) == 0;
	enum wh_status st = wh_os_make_dir(dir);
	if (st != WH_OK)
		return st;
	/* the files this call wrote, removed again when a later one fails: no half a set */
	size_t n_written = 0;
	char **written = calloc(s->n ? s->n : 1, sizeof *written);
	if (!written)
		return wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
	for (size_t i = 0; i < s->n && st == WH_OK; i++) {
		const struct wh_named_tensor *e = &s->items[i];
		char path[PATH_MAX];
		if (prefix) {
			int w = snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, prefix, i);
			if (w < 0 || w >= (int)sizeof path)
				st = wh_error(WH_ERR_IO, "%s: file name for tensor %zu too long (use a shorter folder name)", dir, i);
		} else if (!e->name || !*e->name) {
			st = wh_error(WH_ERR_USAGE, "%s: tensor %zu has no name (write the set with input_<k> file names instead)", dir, i);
		} else {
			st = wh_tensor_file_path(dir, e->name, ".pb", path, sizeof path);
		}
		if (st != WH_OK)
			break;
		enum wh_pb_kind kind = pb_kind_for(g, outputs, prefix ? (int)i : -1, e->name);
		if (e->t.kind == WH_VALUE_NONE)
			kind = WH_PB_OPTIONAL;
		else if (e->t.kind == WH_VALUE_SEQUENCE && kind != WH_PB_OPTIONAL)
			kind = WH_PB_SEQUENCE;
		else if (e->t.kind == WH_VALUE_TENSOR && kind == WH_PB_SEQUENCE)
			kind = WH_PB_TENSOR;
		/* the real name goes inside the file: a long one's file name is cut and hashed */
		if ((st = wh_value_write_pb(path, e->name, &e->t, kind)) != WH_OK)
			break;
		if (!(written[n_written] = strdup(path))) {
			unlink(path);
			st = wh_error(WH_ERR_NOMEM, "%s: out of memory (free some memory)", dir);
			break;
		}
		n_written++;
	}
	for (size_t i = 0; i < n_written; i++) {
		if (st != WH_OK)
			unlink(written[i]);
		free(written[i]);
	}
	free(written);
	if (st != WH_OK && !existed)
		rmdir(dir); /* only when this call made it, and it is empty again */
	return st;
}

/* The escaped form of byte c at the start of a name or not: 1 or 3 bytes into out. */
static size_t escape_byte(unsigned c, bool first, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	/* a leading dot would hide the file (and "." / ".." are folders) */
	bool keep = ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		     (c == '.' && !first));
	if (keep) {
		out[0] = (char)c;
		return 1;
	}
	out[0] = '%';
	out[1] = hex[c >> 4];
	out[2] = hex[c & 15];
	return 3;
}

void wh_tensor_name_to_file(const char *name, char out[WH_TENSOR_STEM_MAX + 1])
{
	size_t o = 0, n = strlen(name);
	if (!n) {
		/* NUL cannot be in a name, so no other name escapes to this */
		strcpy(out, "%00");
		return;
	}
	size_t full = 0;
	for (size_t i = 0; i < n; i++) {
		char tmp[3];
		full += escape_byte((unsigned char)name[i], i == 0, tmp);
	}
	/* the escaped name when it fits, else as much of it as leaves room for '~' and the
	 * name's hash (never cut inside a %XX): '~' is always escaped, so the two forms never
	 * meet */
	size_t room = full <= WH_TENSOR_STEM_MAX ? WH_TENSOR_STEM_MAX : WH_TENSOR_STEM_MAX - 33;
	for (size_t i = 0; i < n; i++) {
		char tmp[3];
		size_t k = escape_byte((unsigned char)name[i], i == 0, tmp);
		if (o + k > room)
			break;
		memcpy(out + o, tmp, k);
		o += k;
	}
	if (full > WH_TENSOR_STEM_MAX) {
		XXH128_hash_t h = XXH3_128bits(name, n);
		snprintf(out + o, WH_TENSOR_STEM_MAX + 1 - o, "~%016llx%016llx", (unsigned long long)h.high64,
			 (unsigned long long)h.low64);
		return;
	}
	out[o] = '\0';
}

bool wh_tensor_file_is_hashed(const char *stem, size_t len)
{
	return memchr(stem, '~', len) != NULL;
}

enum wh_status wh_tensor_file_path(const char *dir, const char *name, const char *ext, char *path, size_t size)
{
	char stem[WH_TENSOR_STEM_MAX + 1];
	wh_tensor_name_to_file(name, stem);
	int w = snprintf(path, size, "%s/%s%s", dir, stem, ext);
	if (w < 0 || (size_t)w >= size)
		return wh_error(WH_ERR_INVALID, "%s: folder path too long for the file of a tensor (%zu bytes of the %zu a path may have; use a shorter folder)",
				dir, strlen(dir), size);
	return WH_OK;
}

enum wh_status wh_tensor_dir_fits(const char *dir, const char *what)
{
	/* the longest file name a tensor gets, with its extension */
	size_t len = strlen(dir);
	if (len + 1 + WH_TENSOR_STEM_MAX + 4 >= PATH_MAX)
		/* the folder shown by its ends: the whole of it would fill the message */
		return wh_error(WH_ERR_INVALID, "%.60s...%s: path of %zu bytes too long for %s (a tensor's file needs up to %d more of the %d a path may have; use a shorter folder)",
				dir, dir + (len > 60 ? len - 60 : len), len, what, WH_TENSOR_STEM_MAX + 5, PATH_MAX);
	return WH_OK;
}
