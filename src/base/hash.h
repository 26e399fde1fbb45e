/* FNV-1a, 64-bit: cheap, stable across runs and machines (plans record graph hashes). */
#ifndef PLACER_HASH_H
#define PLACER_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PL_HASH_INIT UINT64_C(1469598103934665603)

static inline uint64_t pl_hash_bytes(uint64_t hash, const void *data, size_t size)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ p[i]) * UINT64_C(1099511628211);
    return hash;
}

#endif
