/* pl_grow: doubling with overflow checks. */
#include "grow.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool pl_grow(void *items, int *cap, int need, size_t size, int first)
{
    if (need <= *cap)
        return true;
    if (need < 0 || size == 0)
        return false;
    long long grown = *cap > 0 ? *cap : (first > 0 ? first : 1);
    while (grown < need)
        grown *= 2;
    if (grown > INT_MAX)
        grown = need;
    if ((unsigned long long)grown > SIZE_MAX / size)
        return false;
    void *old;
    memcpy(&old, items, sizeof old);
    void *bigger = realloc(old, (size_t)grown * size);
    if (!bigger)
        return false;
    memcpy(items, &bigger, sizeof bigger);
    *cap = (int)grown;
    return true;
}
