/* Memory for large buffers (tensors): aligned to 64 bytes, and from 4 MiB on to 2 MiB with
 * the kernel asked for huge pages (madvise MADV_HUGEPAGE), so that first touching the
 * buffer faults it in 2 MiB at a time rather than 4 KiB. Freed with free(). */
#ifndef PLACER_BIG_BUFFER_H
#define PLACER_BIG_BUFFER_H

#include <stddef.h>

/* `bytes` (at least 64) rounded up to whole alignment units, or NULL when out of memory or
 * larger than any object can be. */
void *pl_big_buffer(size_t bytes);

#endif
