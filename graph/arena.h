/* Arena: chunked bump allocator for graph metadata (nodes, values, attributes, strings).
 * Memory is zeroed and 16-byte aligned; nothing is freed individually; wh_arena_destroy
 * frees everything at once. Not thread-safe: one arena belongs to one graph. */
#ifndef WH_ARENA_H
#define WH_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "graph/status.h"

struct wh_arena;

enum wh_status wh_arena_create(struct wh_arena **out);
void wh_arena_destroy(struct wh_arena *a);
/* NULL on failure (size overflow or out of memory). */
void *wh_arena_alloc(struct wh_arena *a, size_t size);
/* count * size with overflow check, zeroed. */
void *wh_arena_calloc(struct wh_arena *a, size_t count, size_t size);
void *wh_arena_memdup(struct wh_arena *a, const void *p, size_t size);
char *wh_arena_strdup(struct wh_arena *a, const char *s);
char *wh_arena_strndup(struct wh_arena *a, const char *s, size_t n);
/* Grows an array stored in the arena: returns a new array of new_count elements holding the
 * old contents (old storage is abandoned to the arena). */
void *wh_arena_grow(struct wh_arena *a, void *old, size_t old_count, size_t new_count, size_t elem);
size_t wh_arena_bytes(const struct wh_arena *a);

#endif
