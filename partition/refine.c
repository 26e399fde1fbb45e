/* The local search after the dynamic program (partition_impl.h): one colour class at a
 * time goes to the device where the split is best, first by max-load, then by the sum of
 * squared loads (so that a move off a device that is not the heaviest, which leaves the
 * max-load as it is, can still open the way to one that lowers it). Loads change
 * incrementally: a move touches the latencies of two devices and the communication of
 * the class's nodes and their producers. Contiguity is not kept. */
#include <math.h>
#include <stdlib.h>

#include "partition_impl.h"

enum { MAX_SWEEPS = 200 };
#define RELATIVE_GAIN 1e-12

typedef struct search {
    const pl_partition_graph *graph;
    const pl_partition_instance *inst;
    int *device;
    double *loads, *size;       /* per device */
    int *seen, mark;            /* per device, for pl_partition_charge */
    int *touched, touch;        /* per node: the move's affected nodes */
    int *affected;              /* per node at most */
    double *class_size;
    bool *class_ok;             /* an accelerator may hold the class */
} search;

static int next_mark(search *s)
{
    if (s->mark == INT32_MAX - 1) {
        for (int d = 0; d <= s->inst->n_accelerators; d++)
            s->seen[d] = -1;
        s->mark = 0;
    }
    return ++s->mark;
}

/* The class's nodes and their producers: whose charges a move of the class changes. */
static int affected_nodes(search *s, int c)
{
    const pl_partition_graph *g = s->graph;
    int n = 0;
    s->touch++;
    for (int i = g->class_start[c]; i < g->class_start[c + 1]; i++) {
        int v = g->class_node[i];
        if (s->touched[v] != s->touch)
            s->touched[v] = s->touch, s->affected[n++] = v;
        for (int k = g->producer_start[v]; k < g->producer_start[v + 1]; k++)
            if (s->touched[g->producer[k]] != s->touch)
                s->touched[g->producer[k]] = s->touch, s->affected[n++] = g->producer[k];
    }
    return n;
}

static void move_class(search *s, int c, int n_affected, int to)
{
    const pl_partition_graph *g = s->graph;
    for (int i = 0; i < n_affected; i++)
        pl_partition_charge(s->inst, s->device, s->affected[i], g->consumer_start,
                            g->consumer, -1, s->seen, next_mark(s), s->loads);
    for (int i = g->class_start[c]; i < g->class_start[c + 1]; i++) {
        int v = g->class_node[i];
        const pl_partition_node *node = &s->inst->nodes[v];
        int from = s->device[v];
        s->loads[from] -= from == PL_PARTITION_CPU ? node->cpu_latency
                                                   : node->accelerator_latency;
        s->loads[to] += to == PL_PARTITION_CPU ? node->cpu_latency : node->accelerator_latency;
        s->size[from] -= node->size;
        s->size[to] += node->size;
        s->device[v] = to;
    }
    for (int i = 0; i < n_affected; i++)
        pl_partition_charge(s->inst, s->device, s->affected[i], g->consumer_start,
                            g->consumer, 1, s->seen, next_mark(s), s->loads);
}

typedef struct score {
    double max_load, squares;
} score;

static score score_of(const search *s)
{
    score sc = {0, 0};
    for (int d = 0; d <= s->inst->n_accelerators; d++) {
        sc.max_load = fmax(sc.max_load, s->loads[d]);
        sc.squares += s->loads[d] * s->loads[d];
    }
    return sc;
}

static bool better(score a, score b)
{
    if (a.max_load < b.max_load * (1 - RELATIVE_GAIN))
        return true;
    return a.max_load <= b.max_load * (1 + RELATIVE_GAIN) &&
           a.squares < b.squares * (1 - RELATIVE_GAIN);
}

static bool may_hold(const search *s, int c, int d)
{
    if (d == PL_PARTITION_CPU)
        return s->inst->n_cpus > 0;
    return s->class_ok[c] && s->size[d] + s->class_size[c] <= s->inst->max_size;
}

/* Moves class c where the split is best; whether it moved. */
static bool improve_class(search *s, int c)
{
    const pl_partition_graph *g = s->graph;
    int home = s->device[g->class_node[g->class_start[c]]];
    int n = affected_nodes(s, c), best_device = home;
    score best = score_of(s);
    for (int d = 0; d <= s->inst->n_accelerators; d++) {
        if (d == home || !may_hold(s, c, d))
            continue;
        move_class(s, c, n, d);
        score tried = score_of(s);
        move_class(s, c, n, home);
        if (better(tried, best))
            best = tried, best_device = d;
    }
    if (best_device != home)
        move_class(s, c, n, best_device);
    return best_device != home;
}

static void recount(search *s)
{
    const pl_partition_graph *g = s->graph;
    pl_partition_loads(s->inst, s->device, g->consumer_start, g->consumer, s->seen, s->loads);
    s->mark = 0;
    for (int d = 0; d <= s->inst->n_accelerators; d++)
        s->size[d] = 0, s->seen[d] = -1;
    for (int v = 0; v < s->inst->n_nodes; v++)
        s->size[s->device[v]] += s->inst->nodes[v].size;
}

double pl_partition_refine(const pl_partition_graph *g, int *device, pl_error *err)
{
    const pl_partition_instance *inst = g->instance;
    size_t devices = (size_t)inst->n_accelerators + 1, nodes = (size_t)inst->n_nodes + 1,
           classes = (size_t)inst->n_colours + 1;
    search s = {.graph = g, .inst = inst, .device = device,
                .loads = calloc(devices, sizeof(double)), .size = calloc(devices, sizeof(double)),
                .seen = calloc(devices, sizeof(int)), .touched = calloc(nodes, sizeof(int)),
                .affected = calloc(nodes + (size_t)inst->n_edges, sizeof(int)),
                .class_size = calloc(classes, sizeof(double)),
                .class_ok = calloc(classes, sizeof(bool))};
    double max_load = NAN;
    if (s.loads && s.size && s.seen && s.touched && s.affected && s.class_size && s.class_ok) {
        for (int c = 0; c < inst->n_colours; c++)
            s.class_ok[c] = true;
        for (int v = 0; v < inst->n_nodes; v++) {
            s.class_size[inst->nodes[v].colour] += inst->nodes[v].size;
            s.class_ok[inst->nodes[v].colour] &= inst->nodes[v].accelerator_ok;
        }
        bool moved = true;
        for (int sweep = 0; moved && sweep < MAX_SWEEPS; sweep++) {
            recount(&s); /* no drift from the incremental sums */
            moved = false;
            for (int c = 0; c < inst->n_colours; c++)
                moved |= improve_class(&s, c);
        }
        recount(&s);
        max_load = score_of(&s).max_load;
    } else {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    free(s.loads), free(s.size), free(s.seen), free(s.touched), free(s.affected);
    free(s.class_size), free(s.class_ok);
    return max_load;
}
