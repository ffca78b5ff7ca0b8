/* Nesting bound on protobuf wire data (see graph/onnx-depth.h). */
#include "graph/onnx-depth.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* One open message: its descriptor and where its bytes end. */
struct frame {
	const ProtobufCMessageDescriptor *desc;
	const uint8_t *end;
};

static bool read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*p >= end)
			return false;
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

/* Skips a field of wire type t other than 2 at *p; false when the bytes run out, or for a
 * group or an invalid wire type (protobuf-c refuses those). */
static bool skip_scalar(const uint8_t **p, const uint8_t *end, unsigned t)
{
	uint64_t v;
	switch (t) {
	case 0:
		return read_varint(p, end, &v);
	case 1:
	case 5: {
		size_t w = t == 1 ? 8 : 4;
		if ((size_t)(end - *p) < w)
			return false;
		*p += w;
		return true;
	}
	default:
		return false;
	}
}

/* Called at each length-delimited field of a message of type desc, with the field's
 * descriptor (NULL when unknown) and its n bytes at p; returns whether to descend into it
 * (only a message field is descended into). */
typedef bool (*wh_pb_field_fn)(void *ctx, const ProtobufCMessageDescriptor *desc, const ProtobufCFieldDescriptor *fd,
			       const uint8_t *p, size_t n);

/* Walks the messages nested in data (a serialized desc) depth first, as an explicit loop
 * with a fixed stack. false: a message would be nested more than WH_PB_MAX_DEPTH levels
 * below the top (the walk stops there); true otherwise. Malformed bytes end the walk (the
 * unpacker reports them). */
static bool walk(const ProtobufCMessageDescriptor *desc, const uint8_t *data, size_t len, wh_pb_field_fn fn, void *ctx)
{
	struct frame stack[WH_PB_MAX_DEPTH + 1];
	unsigned depth = 0;
	const uint8_t *p = data;
	stack[0] = (struct frame){desc, p + len};
	for (;;) {
		struct frame *f = &stack[depth];
		if (p >= f->end) {
			if (depth == 0)
				return true;
			p = f->end;
			depth--;
			continue;
		}
		uint64_t tag, n;
		if (!read_varint(&p, f->end, &tag))
			return true;
		if ((tag & 7) != 2) {
			if (!skip_scalar(&p, f->end, (unsigned)(tag & 7)))
				return true;
			continue;
		}
		if (!read_varint(&p, f->end, &n) || n > (uint64_t)(f->end - p))
			return true;
		const ProtobufCFieldDescriptor *fd =
			tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(f->desc, (unsigned)(tag >> 3)) : NULL;
		if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE && fd->descriptor && fn(ctx, f->desc, fd, p, (size_t)n)) {
			if (depth == WH_PB_MAX_DEPTH)
				return false;
			stack[++depth] = (struct frame){fd->descriptor, p + n};
		} else {
			p += n;
		}
	}
}

static bool descend(void *ctx, const ProtobufCMessageDescriptor *desc, const ProtobufCFieldDescriptor *fd, const uint8_t *p,
		    size_t n)
{
	(void)ctx, (void)desc, (void)fd, (void)p, (void)n;
	return true;
}

enum wh_status wh_pb_check_depth(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
				 const char *label)
{
	if (walk(desc, data, len, descend, NULL))
		return WH_OK;
	return wh_error(WH_ERR_UNSUPPORTED,
			"%s: messages nested more than %d levels deep (nested types or subgraphs; "
			"protobuf refuses such files too: flatten the model)",
			label, WH_PB_MAX_DEPTH);
}

/* Reads the string field `field` of a message in [p, end) (the last one wins, as protobuf). */
static bool entry_string(const uint8_t *p, const uint8_t *end, uint32_t field, const uint8_t **s, size_t *n)
{
	bool found = false;
	while (p < end) {
		uint64_t tag, v;
		if (!read_varint(&p, end, &tag))
			return found;
		if ((tag & 7) != 2) {
			if (!skip_scalar(&p, end, (unsigned)(tag & 7)))
				return found;
			continue;
		}
		if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p))
			return found;
		if (tag >> 3 == field) {
			*s = p;
			*n = (size_t)v;
			found = true;
		}
		p += v;
	}
	return found;
}

struct locations {
	const ProtobufCMessageDescriptor *tensor_desc;
	void (*fn)(void *ctx, const char *loc, size_t n);
	void *ctx;
};

/* An external_data entry of a TensorProto: hand its location on; descend anywhere else. */
static bool location_of(void *ctx, const ProtobufCMessageDescriptor *desc, const ProtobufCFieldDescriptor *fd, const uint8_t *p,
			size_t n)
{
	const struct locations *l = ctx;
	if (desc != l->tensor_desc || strcmp(fd->name, "external_data"))
		return true;
	/* StringStringEntryProto: key = 1, value = 2 */
	const uint8_t *k = NULL, *v = NULL;
	size_t kn = 0, vn = 0;
	if (entry_string(p, p + n, 1, &k, &kn) && kn == 8 && !memcmp(k, "location", 8) && entry_string(p, p + n, 2, &v, &vn))
		l->fn(l->ctx, (const char *)v, vn);
	return false;
}

enum wh_status wh_pb_external_locations(const ProtobufCMessageDescriptor *desc, const ProtobufCMessageDescriptor *tensor_desc,
					const void *data, size_t len, void (*fn)(void *ctx, const char *loc, size_t n), void *ctx)
{
	struct locations l = {tensor_desc, fn, ctx};
	walk(desc, data, len, location_of, &l);
	return WH_OK;
}
