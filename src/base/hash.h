/* FNV-1a, 64-bit: cheap, stable across runs and machines (plans record graph hashes). */
#ifndef PLACER_HASH_H
#define PLACER_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PL_HASH_INIT UINT64_C(1469598103934665603)
#define PL_HASH_PRIME UINT64_C(1099511628211)

/* The bytes of one 8-byte word up to its last non-zero one, in memory order: 0 for a
 * word of zeros. */
static inline int pl_hash_word_length(const unsigned char *word)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t w;
    memcpy(&w, word, sizeof w);
    return w ? 8 - __builtin_clzll(w) / 8 : 0;
#else
    int n = 8;
    while (n > 0 && !word[n - 1])
        n--;
    return n;
#endif
}

/* A zero byte leaves the xor as it is, so a run of k zero bytes only multiplies by the
 * prime's k-th power: the same hash, in fewer steps of the chain of multiplies, on the
 * integers and shapes (mostly high zero bytes) the graph's hashes cover. */
static inline uint64_t pl_hash_bytes(uint64_t hash, const void *data, size_t size)
{
    enum { WORD = 8 };
    static const uint64_t power[WORD + 1] = {
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
    size_t i = 0;
    for (; i + WORD <= size; i += WORD) {
        int n = pl_hash_word_length(p + i);
        for (int k = 0; k < n; k++)
            hash = (hash ^ p[i + k]) * PL_HASH_PRIME;
        hash *= power[WORD - n];
    }
    for (; i < size; i++)
        hash = (hash ^ p[i]) * PL_HASH_PRIME;
    return hash;
}

#endif
