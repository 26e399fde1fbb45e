/* Open-addressing string map, FNV-1a hashed, kept at most half full. */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

static uint32_t hash_of(const char *key)
{
    uint64_t h = pl_hash_bytes(PL_HASH_INIT, key, strlen(key));
    return (uint32_t)(h ^ (h >> 32));
}

/* The slot that holds `key` (of hash `hash`), or the empty one where it would go. */
static size_t slot_of(const pl_strmap *map, const char *key, uint32_t hash)
{
    size_t mask = map->cap - 1, i = hash & mask;
    while (map->slots[i].key &&
           (map->slots[i].hash != hash || strcmp(map->slots[i].key, key) != 0))
        i = (i + 1) & mask;
    return i;
}

int pl_strmap_get(const pl_strmap *map, const char *key)
{
    if (map->cap == 0)
        return -1;
    size_t i = slot_of(map, key, hash_of(key));
    return map->slots[i].key ? map->slots[i].value : -1;
}

/* Moves the keys to a table of `cap` slots (a power of two, more than twice the count). */
static bool rehash(pl_strmap *map, size_t cap)
{
    pl_strmap_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    size_t mask = cap - 1;
    for (size_t i = 0; i < map->cap; i++) {
        if (!map->slots[i].key)
            continue;
        size_t j = map->slots[i].hash & mask;
        while (slots[j].key) /* the keys are distinct: no comparing */
            j = (j + 1) & mask;
        slots[j] = map->slots[i];
    }
    free(map->slots);
    map->slots = slots;
    map->cap = cap;
    return true;
}

bool pl_strmap_reserve(pl_strmap *map, size_t count)
{
    size_t cap = map->cap ? map->cap : 64;
    while (count * 2 > cap)
        cap *= 2;
    return cap == map->cap || rehash(map, cap);
}

bool pl_strmap_put(pl_strmap *map, const char *key, int value, int *existing)
{
    if (existing)
        *existing = -1;
    if (!pl_strmap_reserve(map, map->count + 1))
        return false;
    uint32_t hash = hash_of(key);
    size_t i = slot_of(map, key, hash);
    if (map->slots[i].key) {
        if (existing)
            *existing = map->slots[i].value;
        return true;
    }
    map->slots[i] = (pl_strmap_slot){key, hash, value};
    map->count++;
    return true;
}

void pl_strmap_release(pl_strmap *map)
{
    free(map->slots);
    map->slots = NULL;
    map->count = map->cap = 0;
}
