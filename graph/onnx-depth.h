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

#endif
