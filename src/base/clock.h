/* The monotonic clock every timing in placer reads: seconds since an arbitrary start,
 * never going back. Thread-safe. */
#ifndef PLACER_CLOCK_H
#define PLACER_CLOCK_H

#include <time.h>

static inline double pl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
