/* Helpers shared by the kernel files; private to src/kernels/. */
#ifndef PLACER_KERNELS_IMPL_H
#define PLACER_KERNELS_IMPL_H

#include <stdint.h>

/* Sum of a contiguous run in eight fixed lanes: vectorisable, and the order of additions
 * depends only on n, so every thread count gives the same bits. */
static inline float pl_sum_run(const float *x, int64_t n)
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += x[i + j];
    float sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    for (; i < n; i++)
        sum += x[i];
    return sum;
}

#endif
