/* Helpers shared by the kernel files; private to src/kernels/. */
#ifndef PLACER_KERNELS_IMPL_H
#define PLACER_KERNELS_IMPL_H

#include <math.h>
#include <stdint.h>

#include "kernels.h"

/* The routes of the kinds that have several (routes.c): a convolution's of any kind
 * (conv.c), batch norm's and its gradient's from x (norm.c). */
pl_kernel_route pl_conv_route(const pl_op *op, const pl_tensor *shapes);
pl_kernel_route pl_batch_norm_route(const pl_tensor *x);

/* Eight lanes' partial sums, added pairwise in a fixed order. */
static inline float pl_lanes_sum(const float lane[8])
{
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* Sum of a contiguous run in eight fixed lanes: vectorisable, and the order of additions
 * depends only on n, so every thread count gives the same bits. */
static inline float pl_sum_run(const float *x, int64_t n)
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += x[i + j];
    float sum = pl_lanes_sum(lane);
    for (; i < n; i++)
        sum += x[i];
    return sum;
}

/* The largest of x[0..n), n >= 1, in eight lanes so that it vectorises (GCC does not turn
 * a float max into a vector reduction under IEEE rules); a maximum does not depend on the
 * order, and a NaN is passed over as by the one-lane loop unless it is x[0]. */
static inline float pl_max_run(const float *x, int64_t n)
{
    float lane[8];
    for (int j = 0; j < 8; j++)
        lane[j] = x[0];
    int64_t i = 1;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] = x[i + j] > lane[j] ? x[i + j] : lane[j];
    float m = lane[0];
    for (int j = 1; j < 8; j++)
        m = lane[j] > m ? lane[j] : m;
    for (; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

/* x86-64's baseline vectors are SSE2's, four floats. A loop whose function carries
 * PL_VECTOR_CLONES is also compiled for AVX2 with FMA (x86-64-v3) and for AVX-512
 * (x86-64-v4, whose DQ part multiplies 64-bit lanes, as the counter-based random numbers
 * need), and the dynamic loader picks the widest the CPU has. Results do not change with
 * the width: lanes are independent, ISO C mode forbids contracting a * b + c into an FMA
 * (PL_FMA asks for one, the same everywhere), and nothing is reassociated. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__ELF__) && \
    !defined(__SANITIZE_THREAD__) /* TSan's runtime is not up when the resolvers run */
#define PL_VECTOR_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PL_VECTOR_CLONES
#endif

/* Before a loop whose iterations touch no location another iteration writes: GCC then
 * vectorises it without run-time alias checks (it gives up beyond ten of them, as when
 * one pointer writes many strided rows). */
#if defined(__GNUC__) && !defined(__clang__)
#define PL_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#else
#define PL_INDEPENDENT_ITERATIONS
#endif

/* a * b + c rounded once: the same bits at every vector width. An instruction in the AVX2
 * and AVX-512 clones of PL_VECTOR_CLONES functions (where their loops vectorise), a call
 * to libm's fmaf elsewhere: the functions below belong in such functions' loops. */
#define PL_FMA(a, b, c) __builtin_fmaf((a), (b), (c))

/* exp, tanh, the logistic function and erfc for kernel loops: branch-free and call-free, so that
 * GCC vectorises the loops around them (libm's expf and tanhf do not). Relative error
 * below 2e-7 for exp over its float range; absolute error below 1e-6 for tanh. */

/* exp(x): x = n*ln2 + r with |r| <= ln2/2 (ln2 split in two for exactness), a degree-6
 * polynomial for exp(r), and 2^n built in the exponent bits. n is read from the bits of
 * x*log2(e) + 1.5*2^23, whose low mantissa bits hold it, in unsigned arithmetic: no
 * float-to-int conversion or signed shift, so a NaN flows through to the result without
 * undefined behaviour. */
static inline float pl_expf(float x)
{
    x = x < -87.3f ? -87.3f : x > 88.7f ? 88.7f : x;
    const float shifter = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float t = PL_FMA(x, 1.44269504088896341f, shifter);
    float n = t - shifter;
    float r = PL_FMA(n, 2.12194440e-4f, PL_FMA(-n, 0.693359375f, x));
    float p = 1.9875691500e-4f;
    p = PL_FMA(p, r, 1.3981999507e-3f);
    p = PL_FMA(p, r, 8.3334519073e-3f);
    p = PL_FMA(p, r, 4.1665795894e-2f);
    p = PL_FMA(p, r, 1.6666665459e-1f);
    p = PL_FMA(p, r, 5.0000001201e-1f);
    float y = PL_FMA(p * r, r, r) + 1.0f;
    union {
        float f;
        uint32_t u;
    } bits = {.f = t}, scale;
    scale.u = (bits.u - UINT32_C(0x4B400000) + 127u) << 23;
    return y * scale.f;
}

/* log(sum(exp(x[0..n)))), n >= 1, with the largest value taken out first so that no
 * exponential overflows; its sum in eight fixed lanes, as pl_sum_run. Double: a loss
 * subtracts a logit from it. */
static inline double pl_logsumexp_run(const float *x, int64_t n)
{
    float m = pl_max_run(x, n), lane[8] = {0}, sum = 0.0f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += pl_expf(x[i + j] - m);
    for (; i < n; i++)
        sum += pl_expf(x[i] - m);
    for (int j = 0; j < 8; j++)
        sum += lane[j];
    return (double)m + log((double)sum);
}

/* tanh(x): an odd rational approximation, x * P(x^2) / Q(x^2), exact to float precision
 * for |x| below 7.9, where tanh is 1 to float precision. */
static inline float pl_tanhf(float x)
{
    const float limit = 7.90531110763549805f;
    x = x < -limit ? -limit : x > limit ? limit : x;
    float x2 = x * x;
    float p = -2.76076847742355e-16f;
    p = PL_FMA(p, x2, 2.00018790482477e-13f);
    p = PL_FMA(p, x2, -8.60467152213735e-11f);
    p = PL_FMA(p, x2, 5.12229709037114e-08f);
    p = PL_FMA(p, x2, 1.48572235717979e-05f);
    p = PL_FMA(p, x2, 6.37261928875436e-04f);
    p = PL_FMA(p, x2, 4.89352455891786e-03f);
    float q = 1.19825839466702e-06f;
    q = PL_FMA(q, x2, 1.18534705686654e-04f);
    q = PL_FMA(q, x2, 2.26843463243900e-03f);
    q = PL_FMA(q, x2, 4.89352518554385e-03f);
    return x * p / q;
}

/* 1 / (1 + exp(-x)): relative precision on both sides (no 1 + tanh cancellation). */
static inline float pl_sigmoidf(float x)
{
    return 1.0f / (1.0f + pl_expf(-x));
}

/* erfc(x) = t exp(-x^2 + P(t)), t = 1 / (1 + |x|/2), for x >= 0, and 2 - erfc(-x) below:
 * the Chebyshev fit of Numerical Recipes (section 6.2), relative error 1.2e-7 in exact
 * arithmetic; in float below 2e-6 for |x| < 4 and 8e-6 out to where erfc underflows (9.2),
 * from the rounding of x^2. It keeps erfc's relative precision in the tail, where
 * 1 - erf(x) cancels. */
static inline float pl_erfcf(float x)
{
    float a = x < 0.0f ? -x : x;
    float t = 1.0f / PL_FMA(0.5f, a, 1.0f);
    float p = 0.17087277f;
    p = PL_FMA(p, t, -0.82215223f);
    p = PL_FMA(p, t, 1.48851587f);
    p = PL_FMA(p, t, -1.13520398f);
    p = PL_FMA(p, t, 0.27886807f);
    p = PL_FMA(p, t, -0.18628806f);
    p = PL_FMA(p, t, 0.09678418f);
    p = PL_FMA(p, t, 0.37409196f);
    p = PL_FMA(p, t, 1.00002368f);
    p = PL_FMA(p, t, -1.26551223f);
    float tail = a > 10.0f ? 0.0f : t * pl_expf(PL_FMA(-a, a, p));
    return x < 0.0f ? 2.0f - tail : tail;
}

#endif
