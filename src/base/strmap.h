/* A map from borrowed strings to non-negative integers (names to tensor or op indices).
 * Open addressing with linear probing; keys are not copied and must outlive the map.
 * Not thread-safe. */
#ifndef PLACER_STRMAP_H
#define PLACER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct pl_strmap {
    const char **keys;
    int *values;
    size_t count, cap;
} pl_strmap;

/* The value stored for `key`, or -1. */
int pl_strmap_get(const pl_strmap *map, const char *key);
/* Stores key -> value (value >= 0). Returns false when out of memory. If the key is
 * present already, leaves it unchanged and sets *existing to its value (else to -1). */
bool pl_strmap_put(pl_strmap *map, const char *key, int value, int *existing);
void pl_strmap_release(pl_strmap *map);

#endif
