/* Measured op times (cost_model.h): signatures, and the sorted table of their times. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_impl.h"
#include "cost_model.h"
#include "hash.h"

static uint64_t hash_list(uint64_t h, pl_int_list list)
{
    h = pl_hash_bytes(h, &list.n, sizeof list.n);
    return list.n ? pl_hash_bytes(h, list.v, (size_t)list.n * sizeof *list.v) : h;
}

static uint64_t hash_tensor(uint64_t h, const pl_tensor *t)
{
    h = pl_hash_bytes(h, &t->dtype, sizeof t->dtype);
    h = pl_hash_bytes(h, &t->rank, sizeof t->rank);
    return pl_hash_bytes(h, t->dims, (size_t)t->rank * sizeof *t->dims);
}

uint64_t pl_op_signature(const pl_op *op, const pl_tensor *shapes, int threads)
{
    const pl_attrs *a = &op->attrs;
    uint64_t h = PL_HASH_INIT;
    /* The kind's name, not its enum value: adding an op kind shifts the values. */
    const char *name = pl_op_info_of(op->kind)->name;
    h = pl_hash_bytes(h, name, strlen(name));
    h = pl_hash_bytes(h, &threads, sizeof threads);
    for (int j = 0; j < op->n_inputs; j++)
        h = hash_tensor(h, &shapes[op->inputs[j]]);
    for (int j = 0; j < op->n_outputs; j++)
        h = hash_tensor(h, &shapes[op->outputs[j]]);
    /* The attributes that shape the work; the optimiser's rates and seeds do not. */
    const int64_t ints[] = {a->transpose_a, a->transpose_b, a->keepdims, a->axis, a->groups,
                            a->start, a->end, a->k, a->stride[0], a->stride[1],
                            a->padding[0], a->padding[1], a->dilation[0], a->dilation[1],
                            a->kernel[0], a->kernel[1], a->ceil_mode, a->count_include_pad,
                            a->approximate, a->output_size[0], a->output_size[1]};
    h = pl_hash_bytes(h, ints, sizeof ints);
    /* A third spatial axis and output padding, only where an op has them, so that the
     * signatures of 2-D ops stay those of earlier profiles. */
    const int64_t more[] = {a->stride[2], a->padding[2], a->dilation[2], a->output_padding[0],
                            a->output_padding[1], a->output_padding[2]};
    const int64_t plain[] = {1, 0, 1, 0, 0, 0};
    if (memcmp(more, plain, sizeof more) != 0)
        h = pl_hash_bytes(h, more, sizeof more);
    const double bounds[] = {a->clamp_min, a->clamp_max};
    h = pl_hash_bytes(h, bounds, sizeof bounds);
    h = hash_list(h, a->axes);
    h = hash_list(h, a->sizes);
    h = hash_list(h, a->shape);
    return hash_list(h, a->perm);
}

void pl_cost_model_clear(pl_cost_model *m)
{
    free(m->measured);
    m->measured = NULL;
    m->n_measured = 0;
}

static int compare_times(const void *a, const void *b)
{
    const pl_op_time *x = a, *y = b;
    if (x->signature != y->signature)
        return x->signature < y->signature ? -1 : 1;
    return (x->seconds > y->seconds) - (x->seconds < y->seconds);
}

double pl_cost_lookup(const pl_cost_model *m, uint64_t signature)
{
    int lo = 0, hi = m->n_measured;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (m->measured[mid].signature < signature)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n_measured && m->measured[lo].signature == signature
               ? m->measured[lo].seconds * pl_cost_speed(m)
               : -1;
}

int pl_cost_measured_ops(const pl_cost_model *m, const pl_graph *g, int threads)
{
    int n = 0;
    for (int o = 0; o < g->n_ops; o++)
        n += pl_cost_lookup(m, pl_op_signature(&g->ops[o], g->tensors, threads)) >= 0;
    return n;
}

pl_status pl_cost_add_measured(pl_cost_model *m, pl_op_time *times, int n, pl_error *err)
{
    qsort(times, (size_t)n, sizeof *times, compare_times);
    pl_op_time *all = malloc((size_t)(m->n_measured + n + 1) * sizeof *all);
    if (!all)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    int count = 0, old = 0;
    for (int i = 0; i < n;) { /* a run of one signature: its lower median */
        int j = i;
        while (j < n && times[j].signature == times[i].signature)
            j++;
        for (; old < m->n_measured && m->measured[old].signature < times[i].signature; old++)
            all[count++] = m->measured[old];
        if (old < m->n_measured && m->measured[old].signature == times[i].signature)
            old++; /* replaced */
        all[count++] = (pl_op_time){times[i].signature, times[i + (j - i - 1) / 2].seconds};
        i = j;
    }
    for (; old < m->n_measured; old++)
        all[count++] = m->measured[old];
    free(m->measured);
    m->measured = all;
    m->n_measured = count;
    return PL_OK;
}

/* The lower median of the run of one signature starting at times[*i] (sorted), *i moved
 * past it. */
static double run_median(const pl_op_time *times, int n, int *i)
{
    int j = *i;
    while (j < n && times[j].signature == times[*i].signature)
        j++;
    double seconds = times[*i + (j - *i - 1) / 2].seconds;
    *i = j;
    return seconds;
}

int pl_calib_pass_spread(pl_op_time *first, int n_first, pl_op_time *second, int n_second,
                         double min_seconds, double *spread)
{
    qsort(first, (size_t)n_first, sizeof *first, compare_times);
    qsort(second, (size_t)n_second, sizeof *second, compare_times);
    int n = 0;
    for (int i = 0, j = 0; i < n_first && j < n_second;) {
        if (first[i].signature != second[j].signature) {
            if (first[i].signature < second[j].signature)
                run_median(first, n_first, &i);
            else
                run_median(second, n_second, &j);
            continue;
        }
        double a = run_median(first, n_first, &i), b = run_median(second, n_second, &j);
        if ((a >= min_seconds || b >= min_seconds) && a > 0 && b > 0)
            spread[n++] = fabs(a / b - 1);
    }
    return n;
}
