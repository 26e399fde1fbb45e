/* The allocator's settings (allocator.h).
 *
 * The agent builds, simulates and frees a program for every sampled plan: a few MiB of
 * arrays each, on two threads. By default glibc unmaps each freed block above 128 KiB and
 * trims the heap's free top, so the next plan faulted the same pages in again. On
 * seq2seq's agent plan (4,846 tasks) building and simulating took 1.79 and 1.14 ms against
 * 1.60 and 0.91 ms with freed memory kept (medians of 5 alternating runs), and the agent's
 * search got through 149-160 iterations in 20 s against 224-262 (lstm_lm: 267-319 against
 * 274-357). The peak resident memory hardly moves (15.3 MiB kept against 14.6). */
#include "allocator.h"
#include "config.h"

#ifdef HAVE_MALLOC_H
#include <malloc.h>
#endif

void pl_allocator_keep_freed(void)
{
#if defined(HAVE_MALLOPT) && defined(M_MMAP_THRESHOLD) && defined(M_TRIM_THRESHOLD) && \
    defined(M_TOP_PAD)
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* blocks up to 32 MiB from the heap, reused */
    mallopt(M_TRIM_THRESHOLD, 256 << 20); /* a heap's free top stays up to 256 MiB */
    mallopt(M_TOP_PAD, 16 << 20);         /* and grows by 16 MiB at a time */
#endif
}
