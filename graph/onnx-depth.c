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

enum wh_status wh_pb_check_depth(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
				 const char *label)
{
	struct frame stack[WH_PB_MAX_DEPTH + 1];
	unsigned depth = 0;
	const uint8_t *p = data;
	stack[0] = (struct frame){desc, p + len};
	for (;;) {
		struct frame *f = &stack[depth];
		if (p >= f->end) {
			if (depth == 0)
				return WH_OK;
			p = f->end;
			depth--;
			continue;
		}
		uint64_t tag, n;
		if (!read_varint(&p, f->end, &tag))
			return WH_OK; /* malformed: protobuf-c says so */
		switch (tag & 7) {
		case 0:
			if (!read_varint(&p, f->end, &n))
				return WH_OK;
			break;
		case 1:
			if ((size_t)(f->end - p) < 8)
				return WH_OK;
			p += 8;
			break;
		case 5:
			if ((size_t)(f->end - p) < 4)
				return WH_OK;
			p += 4;
			break;
		case 2: {
			if (!read_varint(&p, f->end, &n) || n > (uint64_t)(f->end - p))
				return WH_OK;
			const ProtobufCFieldDescriptor *fd =
				tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(f->desc, (unsigned)(tag >> 3)) : NULL;
			if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE && fd->descriptor) {
				if (depth == WH_PB_MAX_DEPTH)
					return wh_error(WH_ERR_UNSUPPORTED,
							"%s: messages nested more than %d levels deep (nested types or subgraphs; "
							"protobuf refuses such files too: flatten the model)",
							label, WH_PB_MAX_DEPTH);
				stack[++depth] = (struct frame){fd->descriptor, p + n};
			} else {
				p += n;
			}
			break;
		}
		default:
			return WH_OK; /* groups (3, 4) and invalid wire types: protobuf-c refuses them */
		}
	}
}

/* Reads the string field `field` of a message in [p, end) (the last one wins, as protobuf). */
static bool entry_string(const uint8_t *p, const uint8_t *end, uint32_t field, const uint8_t **s, size_t *n)
{
	bool found = false;
	while (p < end) {
		uint64_t tag, v;
		if (!read_varint(&p, end, &tag))
			return found;
		switch (tag & 7) {
		case 0:
			if (!read_varint(&p, end, &v))
				return found;
			break;
		case 1:
		case 5: {
			size_t w = (tag & 7) == 1 ? 8 : 4;
			if ((size_t)(end - p) < w)
				return found;
			p += w;
			break;
		}
		case 2:
			if (!read_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return found;
			if (tag >> 3 == field) {
				*s = p;
				*n = (size_t)v;
				found = true;
			}
			p += v;
			break;
		default:
			return found;
		}
	}
	return found;
}

enum wh_status wh_pb_external_locations(const ProtobufCMessageDescriptor *desc, const ProtobufCMessageDescriptor *tensor_desc,
					const void *data, size_t len, void (*fn)(void *ctx, const char *loc, size_t n), void *ctx)
{
	struct frame stack[WH_PB_MAX_DEPTH + 1];
	unsigned depth = 0;
	const uint8_t *p = data;
	stack[0] = (struct frame){desc, p + len};
	for (;;) {
		struct frame *f = &stack[depth];
		if (p >= f->end) {
			if (depth == 0)
				return WH_OK;
			p = f->end;
			depth--;
			continue;
		}
		uint64_t tag, n;
		if (!read_varint(&p, f->end, &tag))
			return WH_OK;
		switch (tag & 7) {
		case 0:
			if (!read_varint(&p, f->end, &n))
				return WH_OK;
			break;
		case 1:
			if ((size_t)(f->end - p) < 8)
				return WH_OK;
			p += 8;
			break;
		case 5:
			if ((size_t)(f->end - p) < 4)
				return WH_OK;
			p += 4;
			break;
		case 2: {
			if (!read_varint(&p, f->end, &n) || n > (uint64_t)(f->end - p))
				return WH_OK;
			const ProtobufCFieldDescriptor *fd =
				tag >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(f->desc, (unsigned)(tag >> 3)) : NULL;
			if (f->desc == tensor_desc && fd && !strcmp(fd->name, "external_data")) {
				/* StringStringEntryProto: key = 1, value = 2 */
				const uint8_t *k = NULL, *v = NULL;
				size_t kn = 0, vn = 0;
				if (entry_string(p, p + n, 1, &k, &kn) && kn == 8 && !memcmp(k, "location", 8) &&
				    entry_string(p, p + n, 2, &v, &vn))
					fn(ctx, (const char *)v, vn);
				p += n;
			} else if (fd && fd->type == PROTOBUF_C_TYPE_MESSAGE && fd->descriptor && depth < WH_PB_MAX_DEPTH) {
				stack[++depth] = (struct frame){fd->descriptor, p + n};
			} else {
				p += n;
			}
			break;
		}
		default:
			return WH_OK;
		}
	}
}
