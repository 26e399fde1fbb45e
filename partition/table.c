/* The dynamic program's table (partition_impl.h), shared by the ideal and the linear
 * programs: they differ in what a position is, not in how devices are spent. */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

/* How a state was reached, beyond PL_PARTITION_ON_*: with one device fewer. */
enum { FEWER_ACCELERATORS = 3, FEWER_CPUS = 4 };

static long state(const pl_partition_table *t, int a, int c, long p)
{
    return ((long)a * (t->n_cpus + 1) + c) * t->n_positions + p;
}

pl_status pl_partition_table_init(pl_partition_table *t, int n_accelerators, int n_cpus,
                                  long n_positions, pl_error *err)
{
    *t = (pl_partition_table){.n_accelerators = n_accelerators, .n_cpus = n_cpus,
                              .n_positions = n_positions};
    size_t n = (size_t)(n_accelerators + 1) * (size_t)(n_cpus + 1) * (size_t)n_positions;
    t->best = malloc(n * sizeof *t->best);
    t->from = malloc(n * sizeof *t->from);
    t->how = calloc(n, sizeof *t->how);
    if (!t->best || !t->from || !t->how) {
        pl_partition_table_release(t);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    for (size_t i = 0; i < n; i++)
        t->best[i] = (long)(i % (size_t)n_positions) == 0 ? 0 : HUGE_VAL;
    return PL_OK;
}

void pl_partition_table_release(pl_partition_table *t)
{
    free(t->best);
    free(t->from);
    free(t->how);
    t->best = NULL;
    t->from = NULL;
    t->how = NULL;
}

static void improve(pl_partition_table *t, long to_state, double value, long from,
                    unsigned char how)
{
    if (value < t->best[to_state]) {
        t->best[to_state] = value;
        t->from[to_state] = from;
        t->how[to_state] = how;
    }
}

void pl_partition_table_settle(pl_partition_table *t, long p)
{
    for (int a = 0; a <= t->n_accelerators; a++)
        for (int c = 0; c <= t->n_cpus; c++) {
            long here = state(t, a, c, p);
            if (a > 0)
                improve(t, here, t->best[state(t, a - 1, c, p)], p, FEWER_ACCELERATORS);
            if (c > 0)
                improve(t, here, t->best[state(t, a, c - 1, p)], p, FEWER_CPUS);
        }
}

void pl_partition_table_offer(pl_partition_table *t, long from, long to,
                              double accelerator_cost, double cpu_cost)
{
    for (int a = 0; a <= t->n_accelerators; a++)
        for (int c = 0; c <= t->n_cpus; c++) {
            long here = state(t, a, c, to);
            if (a > 0)
                improve(t, here, fmax(t->best[state(t, a - 1, c, from)], accelerator_cost),
                        from, PL_PARTITION_ON_ACCELERATOR);
            if (c > 0)
                improve(t, here, fmax(t->best[state(t, a, c - 1, from)], cpu_cost), from,
                        PL_PARTITION_ON_CPU);
        }
}

double pl_partition_table_value(const pl_partition_table *t, long p)
{
    return t->best[state(t, t->n_accelerators, t->n_cpus, p)];
}

void pl_partition_table_walk(const pl_partition_table *t, long p,
                             void (*place)(long from, long to, int device, void *ctx),
                             void *ctx)
{
    int a = t->n_accelerators, c = t->n_cpus, next_accelerator = 1;
    while (p != 0) {
        long here = state(t, a, c, p);
        switch (t->how[here]) {
        case PL_PARTITION_ON_ACCELERATOR:
            place(t->from[here], p, next_accelerator++, ctx);
            a--;
            break;
        case PL_PARTITION_ON_CPU:
            place(t->from[here], p, PL_PARTITION_CPU, ctx);
            c--;
            break;
        case FEWER_ACCELERATORS:
            a--;
            continue;
        case FEWER_CPUS:
            c--;
            continue;
        default:
            return; /* unreachable for a finite value: every state it holds was reached */
        }
        p = t->from[here];
    }
}
