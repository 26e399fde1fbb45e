/* The worker pool: every share runs exactly once per job, results are visible to the
 * caller afterwards, and start/stop is clean at any size. */
#include <stdatomic.h>
#include <string.h>

#include "pool.h"
#include "suites.h"
#include "test_util.h"

typedef struct job {
    int runs[8];
    int nth_seen[8];
    atomic_int calls;
    long sum;
} job;

static void count_share(void *context, int ith, int nth)
{
    job *j = context;
    j->runs[ith]++; /* each ith is one thread's alone: no race */
    j->nth_seen[ith] = nth;
    atomic_fetch_add(&j->calls, 1);
}

static void test_every_share_once(void)
{
    for (int threads = 1; threads <= 4; threads++) {
        pl_pool *pool = pl_pool_new(threads, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
        CU_ASSERT_EQUAL(pl_pool_threads(pool), threads);
        job j;
        memset(&j, 0, sizeof j);
        for (int k = 0; k < 2000; k++)
            pl_pool_run(pool, count_share, &j);
        for (int ith = 0; ith < threads; ith++) {
            CU_ASSERT_EQUAL(j.runs[ith], 2000);
            CU_ASSERT_EQUAL(j.nth_seen[ith], threads);
        }
        CU_ASSERT_EQUAL(atomic_load(&j.calls), 2000 * threads);
        pl_pool_free(pool);
    }
}

typedef struct fill_job {
    float *data;
    long n;
    float value;
} fill_job;

static void fill_share(void *context, int ith, int nth)
{
    fill_job *f = context;
    long per = (f->n + nth - 1) / nth;
    for (long i = ith * per; i < f->n && i < (ith + 1) * per; i++)
        f->data[i] = f->value;
}

static void test_writes_visible_after_run(void)
{
    static float data[100003];
    pl_pool *pool = pl_pool_new(3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
    for (int k = 1; k <= 50; k++) {
        fill_job f = {data, 100003, (float)k};
        pl_pool_run(pool, fill_share, &f);
        int wrong = 0;
        for (long i = 0; i < 100003; i++)
            wrong += data[i] != (float)k;
        CU_ASSERT_EQUAL(wrong, 0);
    }
    pl_pool_free(pool);
    pl_pool_free(NULL);
}

static void test_bad_sizes(void)
{
    pl_error err;
    pl_error_init(&err, NULL);
    CU_ASSERT_PTR_NULL(pl_pool_new(0, &err));
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);
}

void pl_register_pool_tests(void)
{
    static const pl_test_case cases[] = {
        {"every thread's share runs once per job", test_every_share_once},
        {"writes are visible when run returns", test_writes_visible_after_run},
        {"thread counts are checked", test_bad_sizes},
        {NULL, NULL},
    };
    pl_test_add_suite("pool", cases);
}
