/* Open-addressing string map, FNV-1a hashed, kept at most half full. */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static size_t slot_of(const pl_strmap *map, const char *key)
{
    size_t mask = map->cap - 1, i = (size_t)pl_hash_bytes(PL_HASH_INIT, key, strlen(key)) & mask;
    while (map->keys[i] && strcmp(map->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

int pl_strmap_get(const pl_strmap *map, const char *key)
{
    if (map->cap == 0)
        return -1;
    size_t i = slot_of(map, key);
    return map->keys[i] ? map->values[i] : -1;
}

static bool grow(pl_strmap *map)
{
    size_t cap = map->cap ? map->cap * 2 : 64;
    pl_strmap bigger = {calloc(cap, sizeof *bigger.keys), calloc(cap, sizeof *bigger.values),
                        0, cap};
    if (!bigger.keys || !bigger.values) {
        pl_strmap_release(&bigger);
        return false;
    }
    for (size_t i = 0; i < map->cap; i++) {
        if (map->keys[i]) {
            size_t j = slot_of(&bigger, map->keys[i]);
            bigger.keys[j] = map->keys[i];
            bigger.values[j] = map->values[i];
        }
    }
    bigger.count = map->count;
    pl_strmap_release(map);
    *map = bigger;
    return true;
}

bool pl_strmap_put(pl_strmap *map, const char *key, int value, int *existing)
{
    if (existing)
        *existing = -1;
    if ((map->count + 1) * 2 > map->cap && !grow(map))
        return false;
    size_t i = slot_of(map, key);
    if (map->keys[i]) {
        if (existing)
            *existing = map->values[i];
        return true;
    }
    map->keys[i] = key;
    map->values[i] = value;
    map->count++;
    return true;
}

void pl_strmap_release(pl_strmap *map)
{
    free(map->keys);
    free(map->values);
    map->keys = NULL;
    map->values = NULL;
    map->count = map->cap = 0;
}
