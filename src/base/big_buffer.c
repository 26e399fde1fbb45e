/* Large buffers (big_buffer.h).
 *
 * A training session holds every tensor of its graph: a model of 129 M parameters needs
 * 2 GiB for its parameters, gradients and momentum, all zeroed before the first step. On a
 * virtual machine, where a page fault costs microseconds, faulting that in 4 KiB at a time
 * took longer than the step itself. Where transparent huge pages are set to "never" the
 * advice is ignored and the buffer is an ordinary one. */
#include "big_buffer.h"
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#ifdef HAVE_SYS_MMAN_H
#include <sys/mman.h>
#endif

enum { SMALL_ALIGNMENT = 64, HUGE_PAGE = 2 << 20, HUGE_FROM = 4 << 20 };

void *pl_big_buffer(size_t bytes)
{
    if (bytes > PTRDIFF_MAX - HUGE_PAGE) /* no object is that large */
        return NULL;
    if (bytes < SMALL_ALIGNMENT)
        bytes = SMALL_ALIGNMENT;
#if defined(HAVE_SYS_MMAN_H) && defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_FROM) {
        size_t rounded = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        void *p = aligned_alloc(HUGE_PAGE, rounded);
        if (p)
            (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice: a refusal changes nothing */
        return p;
    }
#endif
    return aligned_alloc(SMALL_ALIGNMENT,
                         (bytes + SMALL_ALIGNMENT - 1) / SMALL_ALIGNMENT * SMALL_ALIGNMENT);
}
