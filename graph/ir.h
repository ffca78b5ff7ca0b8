/* The graph IR.
 *
 * A model owns one arena that holds every node, value, attribute, shape and string of its
 * main graph and all subgraphs (If/Loop bodies); wh_model_destroy frees it in one call.
 * Nodes and values are referred to by uint32_t ids, indices into their graph's arrays.
 * Weight data (initializers and tensor attributes) lives in reference-counted blobs
 * (graph/blob.h) that the model holds one reference to; models extracted from it take
 * their own references, so weights are never copied. Weights loaded from external data are
 * views of a read-only mapping of their file (graph/blob.h), read only when a kernel touches
 * them; saving keeps them in that file (graph/onnx-io.h, struct wh_save_opts).
 *
 * Round trip: the IR never points into protobuf memory. For every ONNX message it models
 * (model, graph, node, attribute, tensor, value info) it keeps the fields it does not model
 * (doc strings, metadata, training info, functions, unknown fields) as the bytes of that
 * message serialized without the modelled fields ("rest"); saving merges them back. */
#ifndef WH_IR_H
#define WH_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/arena.h"
#include "graph/blob.h"
#include "graph/dtype.h"
#include "graph/status.h"

#define WH_NONE UINT32_MAX

struct wh_bytes {
	const uint8_t *data; /* in the model arena */
	size_t len;
};

struct wh_dim {
	int64_t value;     /* >= 0 when known, -1 when unknown */
	const char *param; /* symbolic name (dim_param) or NULL */
};

enum wh_value_flag {
	WH_VALUE_INPUT = 1u << 0,       /* listed in graph inputs */
	WH_VALUE_OUTPUT = 1u << 1,      /* listed in graph outputs */
	WH_VALUE_INITIALIZER = 1u << 2, /* has constant data (initializer) */
	WH_VALUE_OUTER = 1u << 3,       /* subgraph only: captured from an enclosing graph */
	WH_VALUE_HAS_INFO = 1u << 4,    /* a ValueInfoProto was present (input/output/value_info) */
};

struct wh_value {
	const char *name;
	enum wh_dtype dtype; /* WH_DT_UNDEFINED when unknown */
	int32_t rank;        /* -1 when unknown */
	struct wh_dim *dims; /* rank entries */
	uint32_t producer;   /* node id, WH_NONE for graph inputs, initializers, outer values */
	uint32_t producer_output;
	uint32_t flags;            /* enum wh_value_flag */
	struct wh_blob *data;      /* initializer bytes in ONNX raw_data layout, or NULL */
	struct wh_bytes tensor_rest; /* initializer: unmodelled TensorProto fields (and string_data) */
	struct wh_bytes type_rest;   /* a non-tensor TypeProto (sequence/map/optional), serialized */
	struct wh_bytes type_orig;   /* a tensor TypeProto as loaded (keeps its unknown fields and
				      * denotations); dropped when the type or shape is changed */
	struct wh_bytes info_rest;   /* unmodelled ValueInfoProto fields */
};

/* A tensor held by an attribute (Constant's value, ConstantOfShape's value, ...). */
struct wh_const_tensor {
	const char *name;
	enum wh_dtype dtype;
	int32_t rank;
	int64_t *dims;
	struct wh_blob *data; /* raw_data layout; NULL for string tensors (kept in rest) */
	struct wh_bytes rest;
};

enum wh_attr_type {
	WH_ATTR_UNDEFINED = 0,
	WH_ATTR_FLOAT = 1,
	WH_ATTR_INT = 2,
	WH_ATTR_STRING = 3,
	WH_ATTR_TENSOR = 4,
	WH_ATTR_GRAPH = 5,
	WH_ATTR_FLOATS = 6,
	WH_ATTR_INTS = 7,
	WH_ATTR_STRINGS = 8,
	WH_ATTR_TENSORS = 9,
	WH_ATTR_GRAPHS = 10,
	WH_ATTR_SPARSE_TENSOR = 11,
	WH_ATTR_SPARSE_TENSORS = 12,
	WH_ATTR_TYPE_PROTO = 13,
	WH_ATTR_TYPE_PROTOS = 14,
};

struct wh_attr {
	const char *name;
	enum wh_attr_type type;
	float f;
	int64_t i;
	struct wh_bytes s;
	struct wh_const_tensor *t;
	struct wh_graph *g;
	size_t n; /* count of the list below that matches type */
	float *floats;
	int64_t *ints;
	struct wh_bytes *strings;
	struct wh_const_tensor *tensors;
	struct wh_graph **graphs;
	struct wh_bytes rest; /* ref_attr_name, doc_string, sparse tensors, type protos, unknown */
};

struct wh_node {
	const char *name;
	const char *op_type;
	const char *domain; /* "" for the default domain ("ai.onnx") */
	uint32_t n_inputs;
	uint32_t *inputs; /* value ids; WH_NONE for an omitted optional input ("") */
	uint32_t n_outputs;
	uint32_t *outputs; /* value ids; WH_NONE for an omitted optional output */
	uint32_t n_attrs;
	struct wh_attr *attrs;
	struct wh_bytes rest;
};

struct wh_graph {
	struct wh_arena *arena; /* the owning model's arena */
	const struct wh_graph *parent; /* enclosing graph of a subgraph, NULL for the main graph */
	const char *name;
	uint32_t n_nodes, cap_nodes;
	struct wh_node *nodes;
	uint32_t n_values, cap_values;
	struct wh_value *values;
	uint32_t n_inputs, n_outputs, n_inits;
	uint32_t *inputs;  /* value ids in declaration order */
	uint32_t *outputs; /* value ids in declaration order */
	uint32_t *inits;   /* initializer value ids in file order */
	struct wh_bytes rest;
	/* name -> value id, open addressing; private to ir.c */
	uint32_t *index;
	uint32_t index_cap;
};

struct wh_opset {
	const char *domain;
	int64_t version;
};

struct wh_model {
	struct wh_arena *arena;
	struct wh_graph *graph;
	int64_t ir_version;
	uint32_t n_opsets;
	struct wh_opset *opsets;
	struct wh_bytes rest;
	const char *dir; /* folder of the model file (external data), or NULL */
};

/* An empty model with an empty main graph. */
enum wh_status wh_model_create(struct wh_model **out);
/* Releases every blob reference and the arena. NULL-safe. */
void wh_model_destroy(struct wh_model *m);

/* A new empty graph in the model's arena (for subgraph attributes). */
enum wh_status wh_graph_create_in(struct wh_model *m, const struct wh_graph *parent,
				  struct wh_graph **out);

uint32_t wh_graph_find_value(const struct wh_graph *g, const char *name);
/* Adds a value with a unique name; WH_ERR_INVALID if the name already exists. */
enum wh_status wh_graph_add_value(struct wh_graph *g, const char *name, uint32_t *id_out);
/* Returns the existing value of that name, or adds one. */
enum wh_status wh_graph_intern_value(struct wh_graph *g, const char *name, uint32_t *id_out);
/* Adds a node; inputs/outputs are value ids (copied). Sets the outputs' producer; an output
 * that already has a producer is WH_ERR_INVALID. Strings are copied into the arena. */
enum wh_status wh_graph_add_node(struct wh_graph *g, const char *op_type, const char *domain,
				 const char *name, uint32_t n_inputs, const uint32_t *inputs,
				 uint32_t n_outputs, const uint32_t *outputs, uint32_t *id_out);
enum wh_status wh_graph_add_input(struct wh_graph *g, uint32_t value);
enum wh_status wh_graph_add_output(struct wh_graph *g, uint32_t value);
/* Makes the value an initializer holding data (takes one new reference to data). */
enum wh_status wh_graph_set_initializer(struct wh_graph *g, uint32_t value, enum wh_dtype dtype,
					int32_t rank, const int64_t *dims, struct wh_blob *data);
/* Sets a value's type and shape; dims may be NULL when rank is -1. */
enum wh_status wh_graph_set_shape(struct wh_graph *g, uint32_t value, enum wh_dtype dtype,
				  int32_t rank, const int64_t *dims);

/* Attributes by name; NULL when absent. */
const struct wh_attr *wh_node_attr(const struct wh_node *n, const char *name);
int64_t wh_node_attr_int(const struct wh_node *n, const char *name, int64_t dflt);
float wh_node_attr_float(const struct wh_node *n, const char *name, float dflt);
/* String attribute as a NUL-terminated copy in buf (truncated); dflt when absent. */
const char *wh_node_attr_string(const struct wh_node *n, const char *name, const char *dflt,
				char *buf, size_t bufsize);
/* INTS attribute; returns the count, or -1 when absent. */
int64_t wh_node_attr_ints(const struct wh_node *n, const char *name, const int64_t **ints_out);

/* The subgraphs a node holds (If's branches, Loop's and Scan's bodies): the count of graphs
 * attribute at carries, and its k-th (NULL where the model left it empty); whether n holds
 * any. */
size_t wh_attr_graph_count(const struct wh_attr *at);
const struct wh_graph *wh_attr_graph(const struct wh_attr *at, size_t k);
bool wh_node_holds_graphs(const struct wh_node *n);

/* Version of the opset imported for a domain ("" and "ai.onnx" are the same); 0 if none. */
int64_t wh_model_opset(const struct wh_model *m, const char *domain);

/* Number of nodes consuming each value, into counts_out[n_values]. */
void wh_graph_use_counts(const struct wh_graph *g, uint32_t *counts_out);

#endif
