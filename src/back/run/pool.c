/* Fork-join worker pool with spin-then-sleep hand-off.
 *
 * A job is published by bumping `generation` (release) after setting fn/context; workers
 * that see a new generation run their share and decrement `pending`; the caller runs
 * share 0 and then waits for `pending` to reach 0. Lock order: only `lock` exists; it
 * guards the sleep/wake-up of idle workers and of the caller, never the fast path. */
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum { SPIN_ROUNDS = 1000 }; /* tens of microseconds (pause is ~60 cycles) before sleeping */

struct pl_pool {
    int threads;
    pthread_t *workers;
    pl_pool_fn fn;
    void *context;
    atomic_uint generation;
    atomic_int pending;
    atomic_bool stopping;
    pthread_mutex_t lock;
    pthread_cond_t job_posted; /* workers sleep here */
    pthread_cond_t job_done;   /* the caller sleeps here */
};

typedef struct worker_start {
    pl_pool *pool;
    int ith;
} worker_start;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static unsigned wait_for_job(pl_pool *pool, unsigned seen)
{
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        unsigned g = atomic_load_explicit(&pool->generation, memory_order_acquire);
        if (g != seen || atomic_load(&pool->stopping))
            return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    unsigned g;
    while ((g = atomic_load_explicit(&pool->generation, memory_order_acquire)) == seen &&
           !atomic_load(&pool->stopping))
        pthread_cond_wait(&pool->job_posted, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    return g;
}

static void finish_share(pl_pool *pool)
{
    if (atomic_fetch_sub_explicit(&pool->pending, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&pool->lock); /* the caller may be about to sleep */
        pthread_cond_signal(&pool->job_done);
        pthread_mutex_unlock(&pool->lock);
    }
}

static void *worker_main(void *arg)
{
    worker_start start = *(worker_start *)arg;
    free(arg);
    pl_pool *pool = start.pool;
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(pool, seen);
        if (atomic_load(&pool->stopping))
            return NULL;
        pool->fn(pool->context, start.ith, pool->threads);
        finish_share(pool);
    }
}

pl_pool *pl_pool_new(int threads, pl_error *err)
{
    if (threads < 1 || threads > 1024) {
        pl_error_set(err, PL_EINPUT, NULL, "a device needs 1 to 1024 threads, not %d", threads);
        return NULL;
    }
    pl_pool *pool = calloc(1, sizeof *pool);
    if (!pool || (threads > 1 && !(pool->workers = calloc((size_t)threads, sizeof(pthread_t))))) {
        free(pool);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pool->threads = threads;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->job_posted, NULL);
    pthread_cond_init(&pool->job_done, NULL);
    for (int ith = 1; ith < threads; ith++) {
        worker_start *start = malloc(sizeof *start);
        if (start)
            *start = (worker_start){pool, ith};
        if (!start || pthread_create(&pool->workers[ith], NULL, worker_main, start) != 0) {
            free(start);
            pool->threads = ith; /* join the ones started */
            pl_pool_free(pool);
            pl_error_set(err, PL_EIO, NULL, "cannot start worker thread %d of %d", ith, threads);
            return NULL;
        }
    }
    return pool;
}

int pl_pool_threads(const pl_pool *pool)
{
    return pool->threads;
}

void pl_pool_run(pl_pool *pool, pl_pool_fn fn, void *context)
{
    if (pool->threads == 1) {
        fn(context, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->context = context;
    atomic_store_explicit(&pool->pending, pool->threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool->lock); /* pairs with a worker about to sleep */
    atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool->job_posted);
    pthread_mutex_unlock(&pool->lock);

    fn(context, 0, pool->threads);

    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0)
            return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool->lock);
    while (atomic_load_explicit(&pool->pending, memory_order_acquire) != 0)
        pthread_cond_wait(&pool->job_done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
}

void pl_pool_pin(pl_pool *pool, const int *cores, int n_cores)
{
    if (n_cores == 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < n_cores; i++)
        CPU_SET(cores[i], &set);
    for (int ith = 1; ith < pool->threads; ith++)
        pthread_setaffinity_np(pool->workers[ith], sizeof set, &set);
}

void pl_pool_free(pl_pool *pool)
{
    if (!pool)
        return;
    pthread_mutex_lock(&pool->lock);
    atomic_store(&pool->stopping, true);
    pthread_cond_broadcast(&pool->job_posted);
    pthread_mutex_unlock(&pool->lock);
    for (int ith = 1; ith < pool->threads; ith++)
        pthread_join(pool->workers[ith], NULL);
    pthread_cond_destroy(&pool->job_posted);
    pthread_cond_destroy(&pool->job_done);
    pthread_mutex_destroy(&pool->lock);
    free(pool->workers);
    free(pool);
}
