/* A lower bound on the max-load of every feasible split (partition.h). Communication is
 * counted as nothing, so the bound holds for every split, contiguous or not. Two parts:
 * - the heaviest colour class on whichever device runs it faster (it runs whole, on one);
 * - the whole graph's work shared fractionally: classes on the CPU (those an accelerator
 *   cannot hold among them) fill it up to the bound, cheapest CPU time per accelerator
 *   time saved first, and the accelerators share the rest evenly. The least bound that
 *   admits such a sharing is found by bisection. */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

typedef struct class_work {
    double cpu, accelerator, size;
    bool accelerator_ok;
} class_work;

static int by_cpu_per_accelerator(const void *a, const void *b)
{
    const class_work *x = a, *y = b;
    /* x->cpu / x->accelerator < y->cpu / y->accelerator, without dividing by 0 */
    double left = x->cpu * y->accelerator, right = y->cpu * x->accelerator;
    return left < right ? -1 : left > right;
}

static bool cpu_may_run(const pl_partition_instance *inst)
{
    return inst->n_cpus > 0;
}

static bool cpu_only(const pl_partition_instance *inst, const class_work *w)
{
    return !w->accelerator_ok || inst->n_accelerators == 0;
}

/* Whether the classes fit when no device holds more than `bound`: the classes only the CPU
 * may run first, then the CPU's room filled in the order of `work`. */
static bool shares(const pl_partition_instance *inst, const class_work *work, int n,
                   double bound)
{
    double cpu_room = cpu_may_run(inst) ? bound : 0, accelerator_work = 0;
    for (int i = 0; i < n; i++)
        if (cpu_only(inst, &work[i]))
            cpu_room -= work[i].cpu;
    if (cpu_room < 0)
        return false;
    for (int i = 0; i < n; i++) {
        const class_work *w = &work[i];
        if (cpu_only(inst, w))
            continue;
        /* as much of the class as the CPU can still take */
        double on_cpu = w->cpu > 0 ? fmin(1, cpu_room / w->cpu) : 1;
        cpu_room -= on_cpu * w->cpu;
        accelerator_work += (1 - on_cpu) * w->accelerator;
    }
    return accelerator_work <= bound * inst->n_accelerators;
}

double pl_partition_bound(const pl_partition_instance *inst)
{
    class_work *work = calloc((size_t)inst->n_colours + 1, sizeof *work);
    if (!work)
        return 0; /* a bound still, if a useless one */
    for (int c = 0; c < inst->n_colours; c++)
        work[c].accelerator_ok = true;
    for (int v = 0; v < inst->n_nodes; v++) {
        class_work *w = &work[inst->nodes[v].colour];
        w->cpu += inst->nodes[v].cpu_latency;
        w->accelerator += inst->nodes[v].accelerator_latency;
        w->size += inst->nodes[v].size;
        w->accelerator_ok = w->accelerator_ok && inst->nodes[v].accelerator_ok;
    }
    double heaviest = 0, total = 0;
    for (int c = 0; c < inst->n_colours; c++) {
        class_work *w = &work[c];
        w->accelerator_ok = w->accelerator_ok && w->size <= inst->max_size;
        double fastest = HUGE_VAL;
        if (w->accelerator_ok && inst->n_accelerators > 0)
            fastest = w->accelerator;
        if (cpu_may_run(inst))
            fastest = fmin(fastest, w->cpu);
        heaviest = fmax(heaviest, fastest);
        total += w->cpu + w->accelerator;
    }
    qsort(work, (size_t)inst->n_colours, sizeof *work, by_cpu_per_accelerator);
    double low = 0, high = total;
    if (!shares(inst, work, inst->n_colours, high)) {
        free(work);
        return heaviest; /* no split fits: any bound holds */
    }
    for (int i = 0; i < 100 && high - low > 1e-12 * high; i++) {
        double mid = 0.5 * (low + high);
        if (shares(inst, work, inst->n_colours, mid))
            high = mid;
        else
            low = mid;
    }
    free(work);
    return fmax(heaviest, low);
}
