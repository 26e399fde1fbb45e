/* A device's worker pool: `threads` threads that run one function together and return
 * when all are done (fork-join), as each op's kernel needs.
 *
 * The calling thread is thread 0, so a one-thread pool starts no thread and a call costs
 * a function call. Workers are persistent: they spin briefly on a new job, which keeps
 * per-op overhead to microseconds in a step of hundreds of small ops, then sleep on a
 * condition variable. One owner calls pl_pool_run at a time (not re-entrant). */
#ifndef PLACER_POOL_H
#define PLACER_POOL_H

#include "error.h"

typedef struct pl_pool pl_pool;

typedef void (*pl_pool_fn)(void *context, int ith, int nth);

pl_pool *pl_pool_new(int threads, pl_error *err);
int pl_pool_threads(const pl_pool *pool);
/* Runs fn(context, ith, nth) on every thread, ith in [0, nth); returns when all have. */
void pl_pool_run(pl_pool *pool, pl_pool_fn fn, void *context);
/* Pins the workers (threads 1..n-1) to the given CPU cores, best effort; the caller pins
 * itself. No cores: a no-op. */
void pl_pool_pin(pl_pool *pool, const int *cores, int n_cores);
/* Stops and joins the workers. NULL is a no-op. */
void pl_pool_free(pl_pool *pool);

#endif
