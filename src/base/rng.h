/* Counter-based random numbers: a value is a pure function of (seed, counter), so any
 * element of a parameter's initialisation or a dropout mask can be computed by any
 * thread, in any order, with the same result on every run and every placement. */
#ifndef PLACER_RNG_H
#define PLACER_RNG_H

#include <math.h>
#include <stdint.h>

/* SplitMix64's finaliser: a strong 64-bit mix. */
static inline uint64_t pl_rng_mix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static inline uint64_t pl_rng_u64(uint64_t seed, uint64_t counter)
{
    return pl_rng_mix(pl_rng_mix(seed) ^ counter);
}

/* Uniform in [0, 1), 24 random bits. */
static inline float pl_rng_uniform(uint64_t seed, uint64_t counter)
{
    return (float)(pl_rng_u64(seed, counter) >> 40) * (1.0f / 16777216.0f);
}

/* Standard normal (Box-Muller on two draws of the counter). */
static inline double pl_rng_normal(uint64_t seed, uint64_t counter)
{
    uint64_t r = pl_rng_u64(seed, counter);
    double u1 = ((double)(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    double u2 = (double)(pl_rng_u64(seed ^ UINT64_C(0x5851F42D4C957F2D), counter) >> 11) *
                (1.0 / 9007199254740992.0);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* The dropout keep decision for element `index` of the whole step's batch (a micro-batch
 * kernel adds micro_batch * its element count), so that splitting a step into
 * micro-batches draws the same mask. */
static inline int pl_rng_keep(uint64_t seed, int64_t step, int64_t index, float rate)
{
    return pl_rng_uniform(pl_rng_mix(seed ^ pl_rng_mix((uint64_t)step)), (uint64_t)index) >=
           rate;
}

#endif
