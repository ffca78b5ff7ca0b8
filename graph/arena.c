#include "graph/arena.h"

#include <stdlib.h>
#include <string.h>

struct chunk {
	struct chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

struct wh_arena {
	struct chunk *head;
	size_t total;
};

enum { CHUNK_MIN = 64 * 1024 };

enum wh_status wh_arena_create(struct wh_arena **out)
{
	struct wh_arena *a = calloc(1, sizeof *a);
	if (!a)
		return wh_error(WH_ERR_NOMEM, "arena: out of memory (free some memory)");
	*out = a;
	return WH_OK;
}

void wh_arena_destroy(struct wh_arena *a)
{
	if (!a)
		return;
	struct chunk *c = a->head;
	while (c) {
		struct chunk *n = c->next;
		free(c);
		c = n;
	}
	free(a);
}

void *wh_arena_alloc(struct wh_arena *a, size_t size)
{
	if (size > SIZE_MAX / 2)
		return NULL;
	size = (size + 15) & ~(size_t)15;
	if (size == 0)
		size = 16;
	struct chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t cs = size > CHUNK_MIN ? size : CHUNK_MIN;
		if (c && c->size * 2 > cs && c->size < (size_t)16 << 20)
			cs = c->size * 2;
		struct chunk *n = malloc(sizeof *n + cs);
		if (!n)
			return NULL;
		n->size = cs;
		n->used = 0;
		/* a big one-off allocation should not waste the rest of the current chunk */
		if (c && size > CHUNK_MIN) {
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			a->head = n;
		}
		a->total += cs;
		c = n;
	}
	void *p = c->data + c->used;
	c->used += size;
	memset(p, 0, size);
	return p;
}

void *wh_arena_calloc(struct wh_arena *a, size_t count, size_t size)
{
	if (size && count > SIZE_MAX / size)
		return NULL;
	return wh_arena_alloc(a, count * size);
}

void *wh_arena_memdup(struct wh_arena *a, const void *p, size_t size)
{
	void *q = wh_arena_alloc(a, size);
	if (q && size)
		memcpy(q, p, size);
	return q;
}

char *wh_arena_strndup(struct wh_arena *a, const char *s, size_t n)
{
	char *q = wh_arena_alloc(a, n + 1);
	if (q) {
		memcpy(q, s, n);
		q[n] = '\0';
	}
	return q;
}

char *wh_arena_strdup(struct wh_arena *a, const char *s)
{
	if (!s)
		return NULL;
	return wh_arena_strndup(a, s, strlen(s));
}

void *wh_arena_grow(struct wh_arena *a, void *old, size_t old_count, size_t new_count, size_t elem)
{
	void *n = wh_arena_calloc(a, new_count, elem);
	if (n && old && old_count)
		memcpy(n, old, (old_count < new_count ? old_count : new_count) * elem);
	return n;
}

size_t wh_arena_bytes(const struct wh_arena *a)
{
	return a->total;
}
