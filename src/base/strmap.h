/* A map from borrowed strings to non-negative integers (names to tensor or op indices).
 * Open addressing with linear probing; each slot keeps its key's hash, so that a probe
 * compares strings only when the hashes agree and growing never reads a key again. Keys
 * are not copied and must outlive the map. Not thread-safe. */
#ifndef PLACER_STRMAP_H
#define PLACER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct pl_strmap_slot {
    const char *key; /* NULL: empty */
    uint32_t hash;
    int value;
} pl_strmap_slot;

typedef struct pl_strmap {
    pl_strmap_slot *slots;
    size_t count, cap;
} pl_strmap;

/* The value stored for `key`, or -1. */
int pl_strmap_get(const pl_strmap *map, const char *key);
/* Stores key -> value (value >= 0). Returns false when out of memory. If the key is
 * present already, leaves it unchanged and sets *existing to its value (else to -1). */
bool pl_strmap_put(pl_strmap *map, const char *key, int value, int *existing);
/* Makes room for `count` keys in all, so that storing them never grows the map: for a
 * caller that knows how many names are coming. False when out of memory. */
bool pl_strmap_reserve(pl_strmap *map, size_t count);
void pl_strmap_release(pl_strmap *map);

#endif
