/* The placements a person writes without a solver: everything on one device, ops dealt
 * round-robin, and the expert's split (contiguous blocks of balanced FLOPs, parallel
 * branches spread over devices). One stage, one micro-batch each. */
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

pl_status pl_place_single(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    int64_t need = 0;
    for (int group = 0; group < p->n_groups; group++)
        need += pl_placer_memory(p, group);
    int best = -1, largest = 0;
    double best_seconds = 0;
    for (int d = 0; d < p->n_devices; d++) {
        double seconds = 0;
        for (int group = 0; group < p->n_groups; group++)
            seconds += pl_placer_seconds(p, group, d);
        if (pl_placer_room(p, d) > pl_placer_room(p, largest))
            largest = d;
        if (need <= pl_placer_room(p, d) && (best < 0 || seconds < best_seconds)) {
            best = d;
            best_seconds = seconds;
        }
    }
    if (best < 0)
        return pl_error_set(err, PL_ENOFIT, NULL, "single: no device holds the whole model: "
                            "it needs %lld bytes, the largest device \"%s\" holds %lld",
                            (long long)(need + p->reserve), p->cluster->devices[largest].name,
                            (long long)p->cluster->devices[largest].memory_bytes);
    for (int o = 0; o < p->n_groups; o++)
        plan->device[o] = best;
    return PL_OK;
}

pl_status pl_place_round_robin(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    pl_ledger ledger = {{0}};
    int next = 0;
    for (int group = 0; group < p->n_groups; group++) {
        int tried = 0;
        while (tried < p->n_devices && !pl_ledger_fits(&ledger, p, plan->device, group, next)) {
            next = (next + 1) % p->n_devices;
            tried++;
        }
        if (tried == p->n_devices)
            return pl_error_set(err, PL_ENOFIT, NULL, "round-robin: no device has room left for "
                                "op \"%s\"", p->graph->ops[group].name);
        pl_ledger_add(&ledger, p, plan->device, group, next);
        plan->device[group] = next;
        next = (next + 1) % p->n_devices;
    }
    return PL_OK;
}

/* ---- expert ------------------------------------------------------------------------------ */

enum { MIN_BRANCH_SHARE_PERCENT = 5, MAX_LARGEST_BRANCH_PERCENT = 75 };

static int find_root(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Where the forward graph is a chain: op i is a cut when every path from the model's
 * inputs passes through it: it reads an activation, nothing produced before it is read
 * after it, and no op after it starts from inputs alone (a source: it may begin a branch
 * parallel to anything before it). cut[i] true for those. */
static void find_cuts(const pl_graph *g, int *reach, bool *cut)
{
    int n = g->n_forward_ops;
    for (int o = 0; o < n; o++) {
        reach[o] = o;
        cut[o] = false;
    }
    for (int b = 0; b < n; b++)
        for (int j = 0; j < g->ops[b].n_inputs; j++) {
            const pl_tensor *t = &g->tensors[g->ops[b].inputs[j]];
            if (t->kind == PL_TENSOR_ACTIVATION && t->producer >= 0) {
                cut[b] = true; /* for now: it reads an activation */
                if (reach[t->producer] < b)
                    reach[t->producer] = b;
            }
        }
    int furthest = -1; /* the furthest reach so far, the last source's at first */
    for (int o = 0; o < n; o++)
        furthest = cut[o] ? furthest : o;
    for (int o = 0; o < n; o++) {
        cut[o] = cut[o] && furthest <= o;
        if (reach[o] > furthest)
            furthest = reach[o];
    }
}

typedef struct branch {
    int root;
    double flops;
} branch;

static int heavier_first(const void *a, const void *b)
{
    const branch *x = a, *y = b;
    return x->flops < y->flops ? 1 : x->flops > y->flops ? -1 : x->root - y->root;
}

typedef struct expert_scratch {
    int *reach, *parent, *root_device;
    branch *branches;
    bool *cut, *spread;
    double speed[PL_MAX_DEVICES]; /* each device's (pl_placer_device_speed) */
} expert_scratch;

/* The ops strictly between two cuts, first .. last, as independent branches when they are
 * (two or more components, none dominating, the region a real share of the model):
 * spread heaviest first onto the least loaded device, and marked in s->spread. */
static void spread_region(const pl_placer *p, int first, int last, double total,
                          expert_scratch *s, int *device)
{
    const pl_graph *g = p->graph;
    double region = 0;
    for (int o = first; o <= last; o++) {
        s->parent[o] = o;
        region += p->flops[o];
    }
    for (int b = first; b <= last; b++)
        for (int j = 0; j < g->ops[b].n_inputs; j++) {
            const pl_tensor *t = &g->tensors[g->ops[b].inputs[j]];
            if (t->kind == PL_TENSOR_ACTIVATION && t->producer >= first && t->producer <= last)
                s->parent[find_root(s->parent, t->producer)] = find_root(s->parent, b);
        }
    int n = 0;
    for (int o = first; o <= last; o++)
        if (find_root(s->parent, o) == o) {
            s->root_device[o] = n;
            s->branches[n++] = (branch){o, 0};
        }
    if (n < 2 || region * 100 < total * MIN_BRANCH_SHARE_PERCENT)
        return;
    for (int o = first; o <= last; o++)
        s->branches[s->root_device[find_root(s->parent, o)]].flops += p->flops[o];
    qsort(s->branches, (size_t)n, sizeof *s->branches, heavier_first);
    if (s->branches[0].flops * 100 > region * MAX_LARGEST_BRANCH_PERCENT)
        return;
    double load[PL_MAX_DEVICES] = {0};
    for (int i = 0; i < n; i++) { /* longest processing time first, where it ends first */
        int best = 0;
        double flops = s->branches[i].flops;
        for (int d = 1; d < p->n_devices; d++)
            if ((load[d] + flops) / s->speed[d] < (load[best] + flops) / s->speed[best])
                best = d;
        load[best] += s->branches[i].flops;
        s->root_device[s->branches[i].root] = best;
    }
    for (int o = first; o <= last; o++) {
        device[o] = s->root_device[find_root(s->parent, o)];
        s->spread[o] = true;
    }
}

/* Branch regions spread; the rest in contiguous blocks of FLOPs in proportion to the
 * devices' speeds (equal on equal devices), block d on device d; then moved where memory
 * demands it. */
pl_status pl_place_expert(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    int n = p->n_groups;
    size_t count = (size_t)n;
    expert_scratch s = {malloc(count * sizeof(int)), malloc(count * sizeof(int)),
                        malloc(count * sizeof(int)), malloc(count * sizeof(branch)),
                        calloc(count, sizeof(bool)), calloc(count, sizeof(bool)), {0}};
    double *chain = malloc(count * sizeof *chain);
    int *block = malloc(count * sizeof *block);
    pl_status status = s.reach && s.parent && s.root_device && s.branches && s.cut &&
                       s.spread && chain && block ? PL_OK : pl_placer_no_memory(err);
    if (status == PL_OK) {
        double total = 0;
        bool unequal = false;
        for (int o = 0; o < n; o++)
            total += p->flops[o];
        for (int d = 0; d < p->n_devices; d++) {
            s.speed[d] = pl_placer_device_speed(p, d);
            unequal = unequal || s.speed[d] != s.speed[0];
        }
        find_cuts(p->graph, s.reach, s.cut);
        for (int o = 0, previous = -1; o <= n; o++) /* the ends count as cuts */
            if (o == n || s.cut[o]) {
                if (o - previous > 2) /* two or more ops between the cuts */
                    spread_region(p, previous + 1, o - 1, total, &s, plan->device);
                previous = o;
            }
        for (int o = 0; o < n; o++)
            chain[o] = s.spread[o] ? 0 : p->flops[o];
        pl_shared_blocks(chain, n, p->n_devices, unequal ? s.speed : NULL, block);
        for (int o = 0; o < n; o++)
            if (!s.spread[o])
                plan->device[o] = block[o];
        pl_placer_rebalance(p, plan->device); /* pl_placer_finish reports what still fails */
    }
    free(s.reach);
    free(s.parent);
    free(s.root_device);
    free(s.branches);
    free(s.cut);
    free(s.spread);
    free(chain);
    free(block);
    return status;
}
