/* Blob: an immutable, reference-counted byte buffer holding weight data. A model and every
 * candidate subgraph extracted from it share the same blobs (extraction never copies
 * weights). Thread-safe reference counting; contents must not change after creation. */
#ifndef WH_BLOB_H
#define WH_BLOB_H

#include <stddef.h>

#include "graph/status.h"

struct wh_blob {
	const void *data; /* 64-byte aligned, may be NULL when size is 0 */
	size_t size;
};

/* Copies size bytes from data into a new blob with refcount 1. */
enum wh_status wh_blob_create_copy(const void *data, size_t size, struct wh_blob **out);
/* Allocates an uninitialised blob with refcount 1; the creator fills *writable_out before
 * sharing the blob. */
enum wh_status wh_blob_create(size_t size, struct wh_blob **out, void **writable_out);
struct wh_blob *wh_blob_retain(struct wh_blob *b); /* returns b; NULL-safe */
void wh_blob_release(struct wh_blob *b);            /* NULL-safe */

#endif
