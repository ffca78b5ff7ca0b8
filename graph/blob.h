/* Blob: an immutable, reference-counted byte buffer holding weight data. A model and every
 * candidate subgraph extracted from it share the same blobs (extraction never copies
 * weights). Thread-safe reference counting; contents must not change after creation.
 *
 * A blob either owns its memory (allocated, 64-byte aligned) or is a view of a weights file
 * (ONNX external data): the file is mapped read-only once (struct wh_blob_file, reference
 * counted, shared by every blob that views it) and the view's bytes are read by the kernels
 * straight from the page cache; nothing is read before a kernel touches it. A view keeps
 * where its bytes come from (the file and the offset), so that saving can point at the same
 * file instead of writing the weights again. */
#ifndef WH_BLOB_H
#define WH_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/status.h"

struct wh_blob {
	const void *data; /* 64-byte aligned when owned, 16-byte aligned at least when a view;
			   * may be NULL when size is 0 */
	size_t size;
};

/* Copies size bytes from data into a new blob with refcount 1. */
enum wh_status wh_blob_create_copy(const void *data, size_t size, struct wh_blob **out);
/* Allocates an uninitialised blob with refcount 1; the creator fills *writable_out before
 * sharing the blob. */
enum wh_status wh_blob_create(size_t size, struct wh_blob **out, void **writable_out);
struct wh_blob *wh_blob_retain(struct wh_blob *b); /* returns b; NULL-safe */
/* Whether the caller holds the only reference to b and b owns its memory (not a view of a
 * weights file): only then may the holder change the contents in place, nothing else
 * seeing them. A view output (Reshape, Identity, a Constant's value) shares its input's
 * blob and is not writable. */
bool wh_blob_writable(const struct wh_blob *b);
void wh_blob_release(struct wh_blob *b);            /* NULL-safe */
/* Whether b has other holders than the caller's one reference (a cache that keeps a blob
 * alive asks whether anyone else still does). */
bool wh_blob_shared(const struct wh_blob *b);

/* ---- caches of freed blobs ----
 * A loop that creates and frees blobs of the same sizes again and again (an engine's runs:
 * every activation is a blob) can keep the memory of freed ones for the next: a blob freed
 * on a thread whose current cache (wh_blob_cache_use) has room goes there instead of back
 * to malloc, and a blob created on that thread takes held memory of the same padded size
 * first. Only small blobs (256 KiB at most) are held, at most max_bytes in all: for them
 * malloc's aligned path costs as much as the work. Any blob can be freed into any cache, so
 * blobs may outlive the cache of the thread that made them. A cache is used by one thread at
 * a time. Under AddressSanitizer caches hold nothing (a reuse would hide a use after free). */
struct wh_blob_cache;

enum wh_status wh_blob_cache_create(size_t max_bytes, struct wh_blob_cache **out);
/* Frees what c holds (c must not be any thread's current cache but the caller's). */
void wh_blob_cache_destroy(struct wh_blob_cache *c);
/* Makes c (NULL: none) the calling thread's cache; returns the previous one, to restore. */
struct wh_blob_cache *wh_blob_cache_use(struct wh_blob_cache *c);

/* ---- weights files ---- */

/* A regular file mapped read-only as a whole (PROT_READ, shared): the mapping lives as long
 * as the file object, i.e. as long as any blob views it. The file must not be truncated or
 * rewritten in place while mapped (whittle itself replaces files by rename, never in place). */
struct wh_blob_file;

/* Opens and maps path (which the caller has checked: realpath inside the model's folder).
 * location: the name the model gives the file (relative to the model's folder), kept for
 * saving; copied. WH_ERR_IO when the file cannot be opened or mapped. */
enum wh_status wh_blob_file_open(const char *path, const char *location, struct wh_blob_file **out);
struct wh_blob_file *wh_blob_file_retain(struct wh_blob_file *f); /* NULL-safe */
void wh_blob_file_release(struct wh_blob_file *f);                  /* NULL-safe */
const char *wh_blob_file_path(const struct wh_blob_file *f);        /* absolute, resolved */
const char *wh_blob_file_location(const struct wh_blob_file *f);    /* as in the model */
uint64_t wh_blob_file_size(const struct wh_blob_file *f);
/* Whether f is the file that path names (same device and inode). */
bool wh_blob_file_is(const struct wh_blob_file *f, const char *path);
/* Whether the file at f's path is still the one opened, unchanged: the same device, inode,
 * size and modification time (the identity wh_blob_digest hashes). False when it was
 * rewritten in place (the mapping then shows the new bytes), replaced or removed. */
bool wh_blob_file_unchanged(const struct wh_blob_file *f);

/* A blob of size bytes at offset of f (takes its own reference to f). The range must lie
 * inside the file (the caller checks, with the message that names the tensor). An offset
 * that is not 16-byte aligned is copied into an owned blob (kernels may read elements of
 * 8 and 16 bytes through typed pointers), which still remembers its origin. */
enum wh_status wh_blob_create_view(struct wh_blob_file *f, uint64_t offset, size_t size,
				   struct wh_blob **out);
/* Where b's bytes are stored in a file: true for a view, with the file (borrowed, valid
 * while b is) and the offset; false for a blob that only lives in memory. */
bool wh_blob_origin(const struct wh_blob *b, const struct wh_blob_file **file_out, uint64_t *offset_out);
/* Whether b's bytes are read from a mapping (not resident until touched). */
bool wh_blob_is_mapped(const struct wh_blob *b);
/* Drops from this process the resident pages of mapped bytes (a view's, see
 * wh_blob_is_mapped) below end: the whole pages from *from on, and moves *from past them.
 * The mapping is read-only and backed by the file, so a later read faults the same bytes back
 * in from the page cache; for a caller that has copied the bytes (a packed weight) and wants
 * the copy to replace them rather than add to them. Advice only: failing costs memory. */
void wh_blob_drop_pages(uintptr_t *from, uintptr_t end);

/* A 128-bit digest of b that changes when the bytes change, computed once per blob and
 * cached: XXH3-128 of the bytes for a blob in memory; for a view of a file, the file's
 * identity (device, inode, size, modification time) and the range, so that hashing a model
 * never reads its external weights. */
void wh_blob_digest(const struct wh_blob *b, uint64_t out[2]);

#endif
