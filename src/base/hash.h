/* FNV-1a, 64-bit: cheap, stable across runs and machines (plans record graph hashes). */
#ifndef PLACER_HASH_H
#define PLACER_HASH_H

#include <stddef.h>
#include <stdint.h>

#define PL_HASH_INIT UINT64_C(1469598103934665603)
#define PL_HASH_PRIME UINT64_C(1099511628211)

/* A zero byte leaves the xor as it is, so a run of k zero bytes multiplies by the prime's
 * k-th power: the same hash, with fewer steps in the chain of multiplies on the integers
 * and shapes the graph's hashes mostly cover. */
static inline uint64_t pl_hash_bytes(uint64_t hash, const void *data, size_t size)
{
    enum { MAX_RUN = 8 };
    static const uint64_t power[MAX_RUN + 1] = {
        1, PL_HASH_PRIME, PL_HASH_PRIME * PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME *
            PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME *
            PL_HASH_PRIME * PL_HASH_PRIME,
        PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME *
            PL_HASH_PRIME * PL_HASH_PRIME * PL_HASH_PRIME};
    const unsigned char *p = data;
    for (size_t i = 0; i < size;) {
        if (p[i]) {
            hash = (hash ^ p[i++]) * PL_HASH_PRIME;
            continue;
        }
        size_t run = 0;
        while (i < size && !p[i] && run < MAX_RUN)
            run++, i++;
        hash *= power[run];
    }
    return hash;
}

#endif
