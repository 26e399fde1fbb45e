/* The process's memory allocator, set for the search's churn (call once, first thing in
 * main, before any thread starts). */
#ifndef PLACER_ALLOCATOR_H
#define PLACER_ALLOCATOR_H

/* Keeps freed memory in the process for the next allocation instead of handing it back to
 * the kernel. No effect where the C library offers no such setting. */
void pl_allocator_keep_freed(void);

#endif
