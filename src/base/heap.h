/* A binary min-heap of task indices in a caller's array, ordered by a caller's `less`:
 * the ready queues of the executor and the program's topological sort. */
#ifndef PLACER_HEAP_H
#define PLACER_HEAP_H

#include <stdbool.h>

typedef bool (*pl_heap_less)(const void *context, int a, int b);

static inline void pl_heap_swap(int *items, int i, int j)
{
    int t = items[i];
    items[i] = items[j];
    items[j] = t;
}

/* Adds `item`; the array has room for it. */
static inline void pl_heap_push(int *items, int *n, int item, pl_heap_less less,
                                const void *context)
{
    int i = (*n)++;
    items[i] = item;
    for (; i > 0 && less(context, items[i], items[(i - 1) / 2]); i = (i - 1) / 2)
        pl_heap_swap(items, i, (i - 1) / 2);
}

/* Removes and returns the least item; the heap is not empty. */
static inline int pl_heap_pop(int *items, int *n, pl_heap_less less, const void *context)
{
    int top = items[0];
    items[0] = items[--*n];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, least = i;
        if (l < *n && less(context, items[l], items[least]))
            least = l;
        if (r < *n && less(context, items[r], items[least]))
            least = r;
        if (least == i)
            return top;
        pl_heap_swap(items, i, least);
        i = least;
    }
}

#endif
