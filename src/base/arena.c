/* Bump allocation in blocks that grow with demand. */
#include "arena.h"

#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

struct pl_arena_block {
    pl_arena_block *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

enum { BLOCK_MIN = 64 * 1024 };

void *pl_arena_alloc(pl_arena *arena, size_t size)
{
    const size_t align = alignof(max_align_t);
    size = (size + align - 1) & ~(align - 1);
    pl_arena_block *b = arena->head;
    if (!b || b->cap - b->used < size) {
        size_t cap = size > BLOCK_MIN ? size : BLOCK_MIN;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = arena->head;
        b->used = 0;
        b->cap = cap;
        arena->head = b;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *pl_arena_strndup(pl_arena *arena, const char *text, size_t len)
{
    char *copy = pl_arena_alloc(arena, len + 1);
    if (copy) {
        memcpy(copy, text, len);
        copy[len] = '\0';
    }
    return copy;
}

void pl_arena_release(pl_arena *arena)
{
    pl_arena_block *b = arena->head;
    while (b) {
        pl_arena_block *next = b->next;
        free(b);
        b = next;
    }
    arena->head = NULL;
}
