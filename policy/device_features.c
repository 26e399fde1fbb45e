/* The policy's view of a cluster: per device a feature vector that means the same on any
 * cluster, so that one set of weights places on 2 devices or 64, equal or not.
 *
 *   speed      log of the model's step on this device alone over the fastest device's
 *   memory     log of its room over the whole model's memory, clipped to [-3, 3], / 3
 *   links      a typical activation's copy to the others (mean, fastest, slowest) over a
 *              typical group's compute: log1p of each, / 3
 *   island     the share of devices its fast links reach (within twice its fastest link)
 *              and that island's position among the islands
 *   position   its index as a fraction and as sin/cos at two frequencies, so that equal
 *              devices can still be told apart
 *   size       log2 of the device count, / 6
 *
 * Everything is a ratio within the model and cluster: what the policy learns from one
 * pair of them applies to another. The same view also gives the split and recompute
 * heads their memory figures (policy_split.c): each op's co-location group's bytes and
 * each device's room, in bytes. */
#include <math.h>
#include <stdlib.h>

#include "baseline_impl.h"
#include "policy_impl.h"

/* A typical edge: the mean bytes of the dataflow's edges (1 KiB without any). */
static double typical_edge_bytes(const pl_placer *pl)
{
    int edges = pl->dataflow->producer_first[pl->n_groups];
    double sum = 0;
    for (int e = 0; e < edges; e++)
        sum += (double)pl->edge_bytes[e];
    return edges > 0 && sum > 0 ? sum / edges : 1024;
}

/* Islands: devices joined by links at most twice as slow as the device's fastest link;
 * island[d] the index of d's island, numbered by first device. Returns their count. */
static int find_islands(const double *copy, int n, int *island)
{
    int count = 0;
    for (int d = 0; d < n; d++)
        island[d] = -1;
    for (int d = 0; d < n; d++) {
        if (island[d] >= 0)
            continue;
        island[d] = count;
        int stack[PL_MAX_DEVICES], top = 0;
        stack[top++] = d;
        while (top > 0) {
            int x = stack[--top];
            double fastest = INFINITY;
            for (int y = 0; y < n; y++)
                if (y != x && copy[x * n + y] < fastest)
                    fastest = copy[x * n + y];
            for (int y = 0; y < n; y++)
                if (y != x && island[y] < 0 && copy[x * n + y] <= 2 * fastest) {
                    island[y] = count;
                    stack[top++] = y;
                }
        }
        count++;
    }
    return count;
}

pl_status pl_policy_device_features(pl_policy *p, const pl_graph *g, const pl_cluster *c,
                                    const pl_cost_model *model, pl_error *err)
{
    int n = c->n_devices;
    p->device_features = calloc((size_t)n * PL_POLICY_DEVICE_FEATURES,
                                sizeof *p->device_features);
    p->op_memory = calloc((size_t)g->n_forward_ops, sizeof *p->op_memory);
    double *copy = calloc((size_t)n * (size_t)n, sizeof *copy);
    pl_placer pl;
    pl_status status = p->device_features && p->op_memory && copy
                           ? pl_placer_init(&pl, g, c, model, 0, err)
                           : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status != PL_OK) {
        free(copy);
        return status;
    }
    pl_placer_drop_whole(&pl);
    double fastest = INFINITY, memory = 0, bytes = typical_edge_bytes(&pl);
    for (int d = 0; d < n; d++)
        fastest = fmin(fastest, 1 / pl_placer_device_speed(&pl, d));
    for (int k = 0; k < pl.n_groups; k++) {
        p->op_memory[k] = (double)pl_placer_memory(&pl, k);
        memory += p->op_memory[k];
    }
    double group_seconds = fastest / pl.n_groups;
    for (int d = 0; d < n; d++)
        for (int o = 0; o < n; o++)
            copy[d * n + o] = pl_placer_copy_seconds(&pl, d, o, bytes) / group_seconds;
    int island[PL_MAX_DEVICES], in_island[PL_MAX_DEVICES] = {0};
    int islands = find_islands(copy, n, island);
    for (int d = 0; d < n; d++)
        in_island[island[d]]++;
    for (int d = 0; d < n; d++) {
        double *f = p->device_features + (size_t)d * PL_POLICY_DEVICE_FEATURES;
        double mean = 0, low = INFINITY, high = 0;
        for (int o = 0; o < n; o++)
            if (o != d) {
                mean += copy[d * n + o] / (n - 1);
                low = fmin(low, copy[d * n + o]);
                high = fmax(high, copy[d * n + o]);
            }
        double room = (double)pl_placer_room(&pl, d);
        p->device_room[d] = room;
        double angle = 2 * M_PI * d / n;
        f[0] = log((1 / pl_placer_device_speed(&pl, d)) / fastest);
        f[1] = room > 0 && memory > 0 ? fmax(-3, fmin(3, log(room / memory))) / 3 : -1;
        f[2] = n > 1 ? log1p(mean) / 3 : 0;
        f[3] = n > 1 ? log1p(low) / 3 : 0;
        f[4] = n > 1 ? log1p(high) / 3 : 0;
        f[5] = (double)in_island[island[d]] / n;
        f[6] = islands > 1 ? (double)island[d] / (islands - 1) : 0;
        f[7] = n > 1 ? (double)d / (n - 1) : 0;
        f[8] = sin(angle);
        f[9] = cos(angle);
        f[10] = sin(2 * angle);
        f[11] = cos(2 * angle);
        f[12] = log2((double)n) / 6;
    }
    pl_placer_clear(&pl);
    free(copy);
    return PL_OK;
}
