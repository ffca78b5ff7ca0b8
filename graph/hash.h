/* Canonical XXH3-128 hash of a (sub)graph: equal for the same computation whatever order
 * its nodes are stored in and whatever its intermediate tensors and nodes are named;
 * different when an op, attribute, weight, shape, type or edge changes. Graph input and
 * output names are part of the hash (they are the candidate's interface). A weight counts by
 * its bytes, or, for a view of an external-data file, by the file's identity and the range
 * (wh_blob_digest): hashing never reads external weights, and the same model stored inline
 * and externally hashes differently. */
#ifndef WH_HASH_H
#define WH_HASH_H

#include <stdint.h>

#include "graph/ir.h"

struct wh_hash {
	uint64_t lo, hi;
};

enum wh_status wh_model_hash(const struct wh_model *m, struct wh_hash *out);
/* WH_OK when every external-data file that m's weights view (initializers of the graph and
 * its subgraphs) is still the file it was when loaded (wh_blob_file_unchanged: the identity
 * the hash stands for); else WH_ERR_IO, one line naming the file. A long search calls it
 * before reporting: a weights file rewritten meanwhile would make the answer mix models. */
enum wh_status wh_model_weights_unchanged(const struct wh_model *m);
/* 32 lowercase hex digits and a NUL into buf. */
void wh_hash_hex(struct wh_hash h, char buf[33]);

#endif
