/* Growing an array by doubling: the one implementation of `if (n == cap) double it` that
 * placer's growing lists share. */
#ifndef PLACER_GROW_H
#define PLACER_GROW_H

#include <stdbool.h>
#include <stddef.h>

/* Makes room in *items (of *cap items of `size` bytes) for at least `need` items, doubling
 * the capacity (from `first` when the array is empty). False when memory runs out or the
 * byte count would overflow: *items and *cap are then unchanged. */
bool pl_grow(void *items, int *cap, int need, size_t size, int first);

#endif
