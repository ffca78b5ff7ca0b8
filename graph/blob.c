#include "graph/blob.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

struct wh_blob_file {
	atomic_uint refs;
	void *base; /* NULL for an empty file */
	uint64_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char *path;     /* resolved */
	char *location; /* as the model names it */
};

struct blob_impl {
	struct wh_blob pub;
	atomic_uint refs;
	bool owned;                /* pub.data was allocated here */
	struct wh_blob_file *file; /* origin, or NULL */
	uint64_t offset;
	atomic_bool digested;
	_Atomic uint64_t digest[2];
};

static enum wh_status blob_new(struct blob_impl **out)
{
	struct blob_impl *b = calloc(1, sizeof *b);
	if (!b)
		return wh_error(WH_ERR_NOMEM, "weights: out of memory (free some memory)");
	atomic_init(&b->refs, 1);
	atomic_init(&b->digested, false);
	*out = b;
	return WH_OK;
}

/* ---- caches of freed blobs (wh_blob_cache_use) ---- */

/* Under AddressSanitizer every freed blob goes back to malloc: memory handed out again
 * would hide a read of a freed tensor. */
#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ON 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ON 0
#endif
#endif
#ifndef CACHE_ON
#define CACHE_ON 1
#endif
#define CACHE_SLOTS 64
#define CACHE_MAX_BLOB ((size_t)256 << 10)

struct wh_blob_cache {
	size_t max_bytes, bytes;
	uint32_t n;
	struct blob_impl *held[CACHE_SLOTS]; /* owned, unshared, refs 0; pub.size is the
					      * allocation's padded size */
};

static _Thread_local struct wh_blob_cache *tl_cache;

enum wh_status wh_blob_cache_create(size_t max_bytes, struct wh_blob_cache **out)
{
	struct wh_blob_cache *c = calloc(1, sizeof *c);
	if (!c)
		return wh_error(WH_ERR_NOMEM, "weights: out of memory (free some memory)");
	c->max_bytes = max_bytes;
	*out = c;
	return WH_OK;
}

void wh_blob_cache_destroy(struct wh_blob_cache *c)
{
	if (!c)
		return;
	if (tl_cache == c)
		tl_cache = NULL;
	for (uint32_t i = 0; i < c->n; i++) {
		free((void *)c->held[i]->pub.data);
		free(c->held[i]);
	}
	free(c);
}

struct wh_blob_cache *wh_blob_cache_use(struct wh_blob_cache *c)
{
	struct wh_blob_cache *prev = tl_cache;
	tl_cache = c;
	return prev;
}

/* A held blob of exactly this padded size (the last one put back: its memory is the most
 * likely to be in cache), or NULL. */
static struct blob_impl *cache_take(struct wh_blob_cache *c, size_t padded)
{
	for (uint32_t i = c->n; i-- > 0;) {
		struct blob_impl *b = c->held[i];
		if (b->pub.size == padded) {
			c->held[i] = c->held[--c->n];
			c->bytes -= padded;
			return b;
		}
	}
	return NULL;
}

/* Keeps b (refs 0, owned, no file) if there is room; false: the caller frees it. */
static bool cache_put(struct wh_blob_cache *c, struct blob_impl *b)
{
	size_t padded = (b->pub.size + 63) & ~(size_t)63;
	if (!CACHE_ON || !padded || padded > CACHE_MAX_BLOB || c->n == CACHE_SLOTS || c->bytes + padded > c->max_bytes)
		return false;
	b->pub.size = padded;
	c->held[c->n++] = b;
	c->bytes += padded;
	return true;
}

enum wh_status wh_blob_create(size_t size, struct wh_blob **out, void **writable_out)
{
	struct blob_impl *b = NULL;
	if (tl_cache && size && (b = cache_take(tl_cache, (size + 63) & ~(size_t)63)) != NULL) {
		atomic_store_explicit(&b->refs, 1, memory_order_relaxed);
		atomic_store_explicit(&b->digested, false, memory_order_relaxed);
		b->pub.size = size;
		*out = &b->pub;
		if (writable_out)
			*writable_out = (void *)b->pub.data;
		return WH_OK;
	}
	enum wh_status st = blob_new(&b);
	if (st != WH_OK)
		return st;
	void *data = NULL;
	if (size) {
		size_t padded = (size + 63) & ~(size_t)63;
		if (padded < size || !(data = aligned_alloc(64, padded))) {
			free(b);
			/* not only weights come here: inputs, outputs and intermediate values do too */
			return wh_error(WH_ERR_NOMEM, "memory: cannot allocate %zu bytes for a tensor (free some memory, or use smaller shapes)", size);
		}
	}
	b->pub.data = data;
	b->pub.size = size;
	b->owned = true;
	*out = &b->pub;
	if (writable_out)
		*writable_out = data;
	return WH_OK;
}

enum wh_status wh_blob_create_copy(const void *data, size_t size, struct wh_blob **out)
{
	void *w = NULL;
	enum wh_status st = wh_blob_create(size, out, &w);
	if (st == WH_OK && size)
		memcpy(w, data, size);
	return st;
}

struct wh_blob *wh_blob_retain(struct wh_blob *b)
{
	if (b)
		atomic_fetch_add_explicit(&((struct blob_impl *)b)->refs, 1, memory_order_relaxed);
	return b;
}

bool wh_blob_writable(const struct wh_blob *b)
{
	const struct blob_impl *bi = (const struct blob_impl *)b;
	return bi && bi->owned && !bi->file && atomic_load_explicit(&bi->refs, memory_order_acquire) == 1;
}

bool wh_blob_shared(const struct wh_blob *b)
{
	const struct blob_impl *bi = (const struct blob_impl *)b;
	return bi && atomic_load_explicit(&bi->refs, memory_order_acquire) > 1;
}

void wh_blob_release(struct wh_blob *b)
{
	if (!b)
		return;
	struct blob_impl *bi = (struct blob_impl *)b;
	if (atomic_fetch_sub_explicit(&bi->refs, 1, memory_order_acq_rel) == 1) {
		if (tl_cache && bi->owned && !bi->file && cache_put(tl_cache, bi))
			return;
		if (bi->owned)
			free((void *)bi->pub.data);
		wh_blob_file_release(bi->file);
		free(bi);
	}
}

/* ---- weights files ---- */

enum wh_status wh_blob_file_open(const char *path, const char *location, struct wh_blob_file **out)
{
	enum wh_status st = WH_OK;
	struct wh_blob_file *f = calloc(1, sizeof *f);
	char real[PATH_MAX];
	int fd = -1;
	if (!f)
		return wh_error(WH_ERR_NOMEM, "weights: out of memory (free some memory)");
	atomic_init(&f->refs, 1);
	if (!realpath(path, real)) {
		st = wh_error(WH_ERR_IO, "%s: cannot resolve: %s (check the path)", path, strerror(errno));
		goto out;
	}
	if ((fd = open(real, O_RDONLY | O_CLOEXEC)) < 0) {
		st = wh_error(WH_ERR_IO, "%s: cannot open: %s (check permissions)", path, strerror(errno));
		goto out;
	}
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		st = wh_error(WH_ERR_IO, "%s: is not a regular file (point the external data at a file)", path);
		goto out;
	}
	f->size = (uint64_t)sb.st_size;
	f->dev = sb.st_dev;
	f->ino = sb.st_ino;
	f->mtime = sb.st_mtim;
	if (f->size > SIZE_MAX) {
		st = wh_error(WH_ERR_UNSUPPORTED, "%s: too large to map on this machine (use a 64-bit build)", path);
		goto out;
	}
	if (f->size) {
		void *p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			st = wh_error(WH_ERR_IO, "%s: cannot map: %s (check the file and free address space)", path, strerror(errno));
			goto out;
		}
		f->base = p;
	}
	f->path = strdup(real);
	f->location = strdup(location ? location : "");
	if (!f->path || !f->location)
		st = wh_error(WH_ERR_NOMEM, "weights: out of memory (free some memory)");
out:
	if (fd >= 0)
		close(fd);
	if (st != WH_OK) {
		wh_blob_file_release(f);
		return st;
	}
	*out = f;
	return WH_OK;
}

struct wh_blob_file *wh_blob_file_retain(struct wh_blob_file *f)
{
	if (f)
		atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
	return f;
}

void wh_blob_file_release(struct wh_blob_file *f)
{
	if (!f || atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (f->base)
		munmap(f->base, (size_t)f->size);
	free(f->path);
	free(f->location);
	free(f);
}

const char *wh_blob_file_path(const struct wh_blob_file *f)
{
	return f->path;
}

const char *wh_blob_file_location(const struct wh_blob_file *f)
{
	return f->location;
}

uint64_t wh_blob_file_size(const struct wh_blob_file *f)
{
	return f->size;
}

bool wh_blob_file_is(const struct wh_blob_file *f, const char *path)
{
	struct stat sb;
	return f && stat(path, &sb) == 0 && sb.st_dev == f->dev && sb.st_ino == f->ino;
}

bool wh_blob_file_unchanged(const struct wh_blob_file *f)
{
	struct stat sb;
	return stat(f->path, &sb) == 0 && sb.st_dev == f->dev && sb.st_ino == f->ino && (uint64_t)sb.st_size == f->size &&
	       sb.st_mtim.tv_sec == f->mtime.tv_sec && sb.st_mtim.tv_nsec == f->mtime.tv_nsec;
}

enum wh_status wh_blob_create_view(struct wh_blob_file *f, uint64_t offset, size_t size,
				   struct wh_blob **out)
{
	uint64_t end = offset + size;
	if (end < offset || end > f->size)
		return wh_error(WH_ERR_INVALID, "%s: range %llu+%zu is beyond the end of the file (the weights file is truncated)",
				f->path, (unsigned long long)offset, size);
	enum wh_status st;
	struct blob_impl *b = NULL;
	if (offset % 16) {
		/* a typed pointer to a misaligned element is undefined behaviour: copy */
		if ((st = wh_blob_create_copy((const char *)f->base + offset, size, out)) != WH_OK)
			return st;
		b = (struct blob_impl *)*out;
	} else {
		if ((st = blob_new(&b)) != WH_OK)
			return st;
		b->pub.data = size ? (const char *)f->base + offset : NULL;
		b->pub.size = size;
		*out = &b->pub;
	}
	b->file = wh_blob_file_retain(f);
	b->offset = offset;
	return WH_OK;
}

bool wh_blob_origin(const struct wh_blob *b, const struct wh_blob_file **file_out, uint64_t *offset_out)
{
	const struct blob_impl *bi = (const struct blob_impl *)b;
	if (!b || !bi->file)
		return false;
	if (file_out)
		*file_out = bi->file;
	if (offset_out)
		*offset_out = bi->offset;
	return true;
}

void wh_blob_drop_pages(uintptr_t *from, uintptr_t end)
{
	long psz = sysconf(_SC_PAGESIZE);
	if (psz <= 0)
		return;
	uintptr_t lo = (*from + (uintptr_t)psz - 1) / (uintptr_t)psz * (uintptr_t)psz;
	uintptr_t hi = end / (uintptr_t)psz * (uintptr_t)psz;
	if (hi > lo) {
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
		*from = hi;
	}
}

bool wh_blob_is_mapped(const struct wh_blob *b)
{
	const struct blob_impl *bi = (const struct blob_impl *)b;
	return b && bi->file && !bi->owned;
}

void wh_blob_digest(const struct wh_blob *b, uint64_t out[2])
{
	struct blob_impl *bi = (struct blob_impl *)b;
	if (atomic_load_explicit(&bi->digested, memory_order_acquire)) {
		out[0] = atomic_load_explicit(&bi->digest[0], memory_order_relaxed);
		out[1] = atomic_load_explicit(&bi->digest[1], memory_order_relaxed);
		return;
	}
	XXH128_hash_t h;
	if (bi->file) {
		const struct wh_blob_file *f = bi->file;
		uint64_t id[8] = {(uint64_t)f->dev, (uint64_t)f->ino, f->size, (uint64_t)f->mtime.tv_sec,
				  (uint64_t)f->mtime.tv_nsec, bi->offset, (uint64_t)b->size, 0x66696c65u};
		h = XXH3_128bits(id, sizeof id);
	} else {
		h = XXH3_128bits(b->data, b->size);
	}
	/* two threads may both compute it: they store the same value */
	atomic_store_explicit(&bi->digest[0], h.low64, memory_order_relaxed);
	atomic_store_explicit(&bi->digest[1], h.high64, memory_order_relaxed);
	atomic_store_explicit(&bi->digested, true, memory_order_release);
	out[0] = h.low64;
	out[1] = h.high64;
}
