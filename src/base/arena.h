/* A bump allocator: many small allocations (names, index lists) that live and die
 * together with one owner, freed in one call. Not thread-safe; one arena, one owner. */
#ifndef PLACER_ARENA_H
#define PLACER_ARENA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_arena_block pl_arena_block;
typedef struct pl_arena {
    pl_arena_block *head;
} pl_arena;

/* Zeroed memory aligned for any type, or NULL when out of memory. */
void *pl_arena_alloc(pl_arena *arena, size_t size);
/* A copy of `len` bytes of `text` with a terminating NUL, or NULL. */
char *pl_arena_strndup(pl_arena *arena, const char *text, size_t len);
/* Frees every block; the arena is empty and reusable afterwards. */
void pl_arena_release(pl_arena *arena);

#ifdef __cplusplus
}
#endif

#endif
