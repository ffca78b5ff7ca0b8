/* Private to graph/: a bound on message nesting, checked on the wire format before
 * protobuf-c unpacks it. protobuf-c recurses once per nested message, so a small file with
 * thousands of nested types or subgraphs exhausts the stack; this walk is an explicit loop,
 * uses a fixed amount of stack, and never allocates. */
#ifndef WH_ONNX_DEPTH_H
#define WH_ONNX_DEPTH_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "graph/status.h"

/* The deepest nesting accepted: protobuf's own default recursion limit (the C++ and Python
 * parsers refuse deeper messages), so every model ONNX itself can load passes. */
#define WH_PB_MAX_DEPTH 100

/* WH_OK when no message in data (a serialized `desc`) is nested more than WH_PB_MAX_DEPTH
 * levels below the top; else WH_ERR_UNSUPPORTED with one line naming label. Malformed wire
 * data is not judged here (the unpacker reports it). */
enum wh_status wh_pb_check_depth(const ProtobufCMessageDescriptor *desc, const void *data, size_t len,
				 const char *label);

/* Calls fn(ctx, location, n) with the "location" value (n bytes, not NUL-terminated) of
 * every external_data entry of every message of type tensor_desc in data (a serialized
 * `desc`), at any depth (initializers, tensor attributes, subgraphs, functions), without
 * unpacking anything. Malformed wire data and nesting beyond WH_PB_MAX_DEPTH end the walk
 * there (the loader reports them). Always WH_OK. */
enum wh_status wh_pb_external_locations(const ProtobufCMessageDescriptor *desc, const ProtobufCMessageDescriptor *tensor_desc,
					const void *data, size_t len, void (*fn)(void *ctx, const char *loc, size_t n), void *ctx);

#endif
