/* The communication term of the lower bound (bound_impl.h): a tensor too large to cross
 * a link within the step keeps its ops together, and ops kept together load one device.
 *
 * A plan of r replicas runs each on a share 1/r of the micro-batches, every op of a
 * replica on one device. Every copy between two devices is a task on their link, held
 * at least its bytes over the link's bandwidth, and a link runs one task at a time; so a
 * step of T seconds moves at most T bw bytes over a link, and at most T BW out of a
 * device, BW the sum of its outgoing links' bandwidths (the most of any device), where a
 * port (cluster.h), one task at a time whichever pair, counts once. Then:
 * - an activation whose producer and readers are not on one device in a replica is
 *   copied over one link for each of the replica's micro-batches: 1/r of the step's
 *   bytes, so a step of T keeps together every activation of more than T r bw_max bytes;
 * - a trained parameter whose readers and update (within a replica, or across replicas)
 *   are not on one device is copied to a reader, or its copies are all-reduced, where
 *   every member sends at least the whole parameter (program_allreduce.c): a step of T
 *   keeps every parameter of more than T BW bytes on one device for every replica;
 * - the ops those tensors join, a component, run on one device in each replica: at least
 *   its work over r on that device, all of it when a kept parameter joins it (every
 *   replica's copy of the component then runs where that parameter is).
 * The same holds between the cluster's groups (cluster.h: machines joined by links slower
 * than those inside them) with the links between groups: a component of tensors too large
 * to cross between groups stays in one group of at most g devices, and loads them with its
 * work over g (over r g without a kept parameter). The least T that is at least every
 * component's load at T's own components bounds every plan of r replicas, and the term is
 * the least over r = 1 .. copies. Sweeping T down the tensors' thresholds joins components
 * one tensor at a time (union-find), so the term costs a sort of the tensors per r.
 *
 * A plan may split ops over up to `split` devices (split_graph.h): then what crosses may be
 * a part of a tensor, 1/split of it, so the thresholds take a tensor's bytes over `split`;
 * ops kept together run shard for shard on at most `split` devices, each reading its own
 * parts, and load one with their work over `split` as well. But an op a plan cannot split
 * runs whole on one device and reads its inputs whole there: a part from another device
 * would cross. So a component with such an op runs on one device, as without splits. The
 * groups' terms count components only, not single ops: a component kept in one group loads
 * it with its work over g, but a single op may be split across groups (the devices' term
 * counts it, over `split`).
 *
 * Only activations and trained parameters count (inputs, constants and states are never
 * copied as tensors are, or not surely); latencies are left out. With a native link a
 * copy is a memcpy on its device's core, held to no bandwidth, and the term is 0. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bound_impl.h"
#include "split_graph.h"

/* Bytes per second: the fastest link, the most a device sends, and between groups the
 * fastest link and the most a group sends (0 with one group); g the largest group. */
typedef struct link_speeds {
    double fastest, device_out, between, group_out;
    int group_size;
} link_speeds;

/* Bytes per second device d sends at most: over each of its own links, and once over each
 * port however many pairs share it (cluster.h), to any device (`group` NULL) or to devices
 * of other groups than its own. */
static double sends(const pl_cluster *c, int d, const int *group)
{
    double own = 0, port[PL_PORT_NETWORK + 1] = {0};
    for (int e = 0; e < c->n_devices; e++) {
        if (e == d || (group && group[e] == group[d]))
            continue;
        double bw = pl_cluster_link(c, d, e)->bytes_per_second;
        pl_port p = pl_cluster_port(c, d, e);
        if (p == PL_PORT_NONE)
            own += bw;
        else
            port[p] = fmax(port[p], bw);
    }
    return own + port[PL_PORT_NODE] + port[PL_PORT_NETWORK];
}

/* The cluster's link speeds; false when some link is native. */
static bool speeds_of(const pl_cluster *c, link_speeds *s)
{
    int devices[PL_MAX_DEVICES], group[PL_MAX_DEVICES], size[PL_MAX_DEVICES] = {0};
    double group_out[PL_MAX_DEVICES] = {0};
    for (int d = 0; d < c->n_devices; d++)
        devices[d] = d;
    int n_groups = pl_cluster_groups(c, devices, c->n_devices, group);
    *s = (link_speeds){0};
    for (int d = 0; d < c->n_devices; d++) {
        size[group[d]]++;
        for (int e = 0; e < c->n_devices; e++) {
            double bw = pl_cluster_link(c, d, e)->bytes_per_second;
            if (e == d)
                continue;
            if (!(bw > 0))
                return false;
            s->fastest = fmax(s->fastest, bw);
            if (n_groups > 1 && group[e] != group[d])
                s->between = fmax(s->between, bw);
        }
        s->device_out = fmax(s->device_out, sends(c, d, NULL));
        if (n_groups > 1)
            group_out[group[d]] += sends(c, d, group);
    }
    for (int i = 0; n_groups > 1 && i < n_groups; i++) {
        s->group_out = fmax(s->group_out, group_out[i]);
        s->group_size = size[i] > s->group_size ? size[i] : s->group_size;
    }
    return s->fastest > 0;
}

/* A tensor that joins its ops: its first op, and its bytes in the step (an activation's
 * over every micro-batch). */
typedef struct joining_tensor {
    int tensor, op;
    double bytes;
    bool param;
} joining_tensor;

/* Where a tensor stops crossing: at device level (group false) or between groups. */
typedef struct threshold {
    double seconds;
    int tensor; /* index into the joining tensors */
    bool group;
} threshold;

static int later_first(const void *a, const void *b)
{
    double x = ((const threshold *)a)->seconds, y = ((const threshold *)b)->seconds;
    return (x < y) - (x > y);
}

/* Union-find over ops with each component's work, whether a kept parameter joins it and
 * whether an op a plan cannot split does; `load` is the heaviest component's load: its
 * work times `share` (over the replicas and, where every op may be split, the split),
 * all of it when a kept parameter joins it (but for the split). */
typedef struct components {
    int *parent;
    double *work;
    bool *kept, *whole, *joined;
    int replicas, split;
    bool alone_counts; /* an op joined to none loads a device (the devices' level) or not
                          (the groups' level: its devices need not be one group's) */
    double load;
} components;

static double load_of(const components *k, int root)
{
    if (!k->joined[root] && !k->alone_counts)
        return 0;
    double r = k->kept[root] ? 1 : k->replicas, s = k->whole[root] ? 1 : k->split;
    return k->work[root] / (r * s);
}

static int root_of(components *k, int o)
{
    while (k->parent[o] != o)
        o = k->parent[o] = k->parent[k->parent[o]];
    return o;
}

static void join(components *k, int a, int b, bool kept)
{
    a = root_of(k, a);
    b = root_of(k, b);
    if (a != b) {
        k->parent[b] = a;
        k->work[a] += k->work[b];
        k->kept[a] = k->kept[a] || k->kept[b];
        k->whole[a] = k->whole[a] || k->whole[b];
        k->joined[a] = true;
    }
    k->kept[a] = k->kept[a] || kept;
    k->load = fmax(k->load, load_of(k, a));
}

static void start_components(components *k, const pl_graph *g, const double *work,
                             int replicas, int split, bool alone_counts)
{
    k->replicas = replicas;
    k->split = split;
    k->alone_counts = alone_counts;
    k->load = 0;
    for (int o = 0; o < g->n_ops; o++) {
        k->parent[o] = o;
        k->work[o] = work[o];
        k->kept[o] = k->joined[o] = false;
        k->whole[o] = !pl_split_graph_splits(g->ops[g->ops[o].group].kind);
        k->load = fmax(k->load, load_of(k, o));
    }
}

/* The ops of each joining tensor: its producer (or, for a parameter, its first toucher)
 * and every op that reads or writes it; calls join for each. */
static void join_tensor(components *k, const pl_graph *g, const int *first_op,
                        const int *op_list, const joining_tensor *t, bool kept)
{
    for (int i = first_op[t->tensor]; i < first_op[t->tensor + 1]; i++)
        join(k, t->op, op_list[i], kept);
}

/* The least T at or above the components' loads at T, for r replicas whose ops may be
 * split over `split` devices. */
static double sweep(const pl_graph *g, const link_speeds *s, const double *work, int r,
                    int split, const joining_tensor *tensors, int n_tensors,
                    const int *first_op, const int *op_list, threshold *order,
                    components *device, components *group)
{
    int n = 0;
    for (int i = 0; i < n_tensors; i++) {
        const joining_tensor *t = &tensors[i];
        double bytes = (t->param ? t->bytes : t->bytes / r) / split;
        order[n++] = (threshold){bytes / (t->param ? s->device_out : s->fastest), i, false};
        if (s->group_size > 0)
            order[n++] = (threshold){bytes / (t->param ? s->group_out : s->between), i, true};
    }
    qsort(order, (size_t)n, sizeof *order, later_first);
    start_components(device, g, work, r, split, true);
    start_components(group, g, work, r, 1, false);
    int g_size = s->group_size > 0 ? s->group_size : 1;
    double best = HUGE_VAL, above = HUGE_VAL;
    for (int i = 0; i <= n; i++) {
        double at = i < n ? order[i].seconds : 0;
        if (i < n && at == above) { /* ties join together */
        } else {
            double load = fmax(device->load, group->load / g_size), t = fmax(load, at);
            if (t < above)
                best = fmin(best, t);
            above = at;
        }
        if (i == n)
            break;
        const joining_tensor *t = &tensors[order[i].tensor];
        join_tensor(order[i].group ? group : device, g, first_op, op_list, t, t->param);
    }
    return best;
}

/* Activations and trained parameters: the tensors whose copies the program makes. */
static bool joins(const pl_tensor *t)
{
    return t->kind == PL_TENSOR_ACTIVATION || (t->kind == PL_TENSOR_PARAM && !t->frozen);
}

/* Each joining tensor's ops (op_list[first_op[t] .. first_op[t + 1])) and the tensors
 * themselves; returns how many, or -1 when out of memory. */
static int joining_tensors(const pl_graph *g, const pl_tensor *shapes, double runs,
                           int *first_op, int **op_list, joining_tensor *tensors)
{
    for (int t = 0; t <= g->n_tensors; t++)
        first_op[t] = 0;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        for (int j = 0; j < op->n_inputs + op->n_outputs; j++) {
            int t = j < op->n_inputs ? op->inputs[j] : op->outputs[j - op->n_inputs];
            first_op[t + 1] += joins(&g->tensors[t]);
        }
    }
    for (int t = 0; t < g->n_tensors; t++) /* counts -> offsets */
        first_op[t + 1] += first_op[t];
    int *list = malloc(((size_t)first_op[g->n_tensors] + 1) * sizeof *list);
    int *filled = calloc((size_t)g->n_tensors + 1, sizeof *filled);
    if (!list || !filled) {
        free(list);
        free(filled);
        return -1;
    }
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        for (int j = 0; j < op->n_inputs + op->n_outputs; j++) {
            int t = j < op->n_inputs ? op->inputs[j] : op->outputs[j - op->n_inputs];
            if (joins(&g->tensors[t]))
                list[first_op[t] + filled[t]++] = o;
        }
    }
    int n = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        if (filled[t] < 2) /* one op: nothing to keep together */
            continue;
        bool param = tensor->kind == PL_TENSOR_PARAM;
        double bytes = (double)pl_tensor_bytes(param ? tensor : &shapes[t]);
        tensors[n++] = (joining_tensor){t, list[first_op[t]], param ? bytes : bytes * runs, param};
    }
    free(filled);
    *op_list = list;
    return n;
}

pl_status pl_bound_comm(const pl_graph *g, const pl_cluster *c, const pl_tensor *shapes,
                        int size, int copies, int split, const double *step, int stride,
                        double *seconds, pl_error *err)
{
    link_speeds speeds;
    *seconds = 0;
    if (!speeds_of(c, &speeds))
        return PL_OK;
    size_t n = (size_t)g->n_ops, n_tensors = (size_t)g->n_tensors;
    int *first_op = malloc((n_tensors + 2) * sizeof *first_op), *op_list = NULL;
    joining_tensor *tensors = malloc((n_tensors + 1) * sizeof *tensors);
    threshold *order = malloc((2 * n_tensors + 1) * sizeof *order);
    double *work = malloc((3 * n + 1) * sizeof *work);
    int *parents = malloc((2 * n + 1) * sizeof *parents);
    bool *kept = malloc(6 * n + 1);
    int n_joining = -1;
    if (first_op && tensors && order && work && parents && kept)
        n_joining = joining_tensors(g, shapes, (double)g->batch_size / size, first_op,
                                    &op_list, tensors);
    if (n_joining >= 0) {
        components device = {parents, work + n, kept, kept + 2 * n, kept + 4 * n, 1, 1,
                             true, 0};
        components group = {parents + n, work + 2 * n, kept + n, kept + 3 * n, kept + 5 * n,
                            1, 1, false, 0};
        for (size_t o = 0; o < n; o++)
            work[o] = step[o * (size_t)stride];
        double least = HUGE_VAL;
        for (int r = 1; r <= copies; r++)
            least = fmin(least, sweep(g, &speeds, work, r, split, tensors, n_joining,
                                      first_op, op_list, order, &device, &group));
        *seconds = least;
    }
    free(first_op);
    free(op_list);
    free(tensors);
    free(order);
    free(work);
    free(parents);
    free(kept);
    if (n_joining < 0)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    return PL_OK;
}
