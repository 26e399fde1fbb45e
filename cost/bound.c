/* The lower bound on a step (bound.h). A plan splits the batch into micro-batches of
 * one size; for each size a plan may choose, the step lasts at least the largest of
 * - one micro-batch's critical path,
 * - the step's work spread over the devices in proportion to their weights (below),
 * - the heaviest co-location group's work, since a group runs on one device (a
 *   parameter's accumulations and update count as a group of their own: a plan's
 *   partitions may run them away from the group of its first reader, plan.h),
 * - the step's work plus what the devices must idle while the pipeline fills and drains,
 *   spread over the devices in the same proportion, and
 * - each update's chain: its ancestors' work, then the update itself (with replicas,
 *   its share: a sharded optimizer state splits it among them), and
 * - what the links cost (bound_comm.c),
 * and the bound is the least of those over the sizes.
 *
 * Split ops (tensor parallelism, split_graph.h): a plan may run each op of a kind the
 * rewrite splits on up to min(devices, PL_MAX_SPLIT) devices at once, so such an op's
 * time on the critical path, and a group's work, count shared among that many (with the
 * replicas', the devices at most); the fill and drain then bound nothing, as with
 * replicas, and the links' terms count parts of tensors (bound_comm.c). The terms stay
 * bounds where a shard's time is at least its share of the whole op's: on paced devices,
 * and where the cost model's time grows at least in proportion to the work. On hardware
 * a shard is a kernel that pays the whole launch: on the critical path an op counts at
 * its launch plus its share of the rest.
 *
 * Spreading over unequal devices: for any weights w_d >= 0 summing to 1, a step of T
 * has T >= sum_d w_d load_d (each load_d <= T), and sum_d w_d load_d >= sum over groups
 * of min_d w_d time(group, d), wherever the groups run. Equal weights give the work over
 * D when devices are alike; on unequal ones the weights start in proportion to each
 * device's speed on the whole step and are improved by a few multiplicative steps (any
 * weights give a bound, so the best found is kept).
 *
 * Every term takes each op's time as the simulator would (the time an op-times file gives
 * it, op_times.h; else the measured time of its signature where calibration has one, else
 * the fit; on a paced device never less than its FLOPs at the device's rate) on each
 * device, with free communication, and without
 * the executor's delays: a paced task never ends before its held time, but its lateness
 * is a mean that a quiet step beats. So no plan's simulated step can come out below the
 * bound, even where the measured times and the fit disagree, and no measured step on
 * paced devices. On native devices a calibrated profile's times are not floors: there
 * each op takes native_floor's time (below). */
#include <math.h>
#include <stdlib.h>

#include "bound.h"

#include "adjacency.h"
#include "bound_impl.h"
#include "graph_build.h"
#include "kernels.h"
#include "op_times.h"
#include "simulate.h"
#include "split_graph.h"

/* Devices that time every op alike (the same threads and declared rate) form a class;
 * the bound works per class. */
typedef struct device_classes {
    int n;
    int device[PL_MAX_DEVICES]; /* one member of each class */
    int count[PL_MAX_DEVICES];  /* its members */
} device_classes;

static void find_classes(const pl_cluster *c, device_classes *k)
{
    k->n = 0;
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *device = &c->devices[d];
        int i = 0;
        while (i < k->n && (c->devices[k->device[i]].threads != device->threads ||
                            c->devices[k->device[i]].flops_per_second != device->flops_per_second ||
                            c->devices[k->device[i]].hardware != device->hardware))
            i++;
        if (i == k->n) {
            k->device[k->n] = d;
            k->count[k->n++] = 0;
        }
        k->count[i]++;
    }
}

/* On a native device a calibrated profile's times are medians of ops run alone, not
 * floors: inside a plan an op task ran down to 0.42x its profiled time (weights hot in
 * cache across micro-batches), and the fit extrapolates to shapes calibration never saw
 * (docs/simulator.md, "The lower bound"). So there an op counts at the larger of its FLOPs
 * at NATIVE_RATE_HEADROOM times the fastest rate calibration saw for any op (no task
 * reached more than 1.18x of it) and NATIVE_FLOOR times its profiled time, or, unprofiled,
 * that times the least a sample of its kind took against the fit. */
#define NATIVE_FLOOR 0.4
#define NATIVE_RATE_HEADROOM 1.25

static double native_floor(const pl_cost_model *m, const pl_device *device, pl_op_kind kind,
                           int route, double profiled, double flops, double bytes)
{
    double fastest = pl_cost_fastest_rate(m, device->threads);
    double roofline = flops / (NATIVE_RATE_HEADROOM * fastest);
    if (profiled >= 0)
        return fmax(roofline, NATIVE_FLOOR * profiled);
    double least = pl_cost_least_over_fit(m, kind, route, device->threads);
    return fmax(roofline,
                NATIVE_FLOOR * least * pl_cost_op_on(m, kind, route, device, flops, bytes));
}

/* An op at the given shapes on a device of each class (times[k]); returns the least, and
 * in *fixed the least part of it that no shard of the op escapes (split ops): a kernel's
 * launch on hardware, timed by the roofline (roofline.h), 0 elsewhere. */
static double per_class(const pl_cost_model *m, const pl_cluster *c, const device_classes *k,
                        const pl_op *op, const pl_tensor *shapes, double flops, double *times,
                        double *fixed)
{
    double bytes = 0, best = -1;
    int route = pl_kernel_route_of(op, shapes);
    for (int j = 0; j < op->n_inputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->inputs[j]]);
    for (int j = 0; j < op->n_outputs; j++)
        bytes += (double)pl_tensor_bytes(&shapes[op->outputs[j]]);
    for (int i = 0; i < k->n; i++) {
        const pl_device *device = &c->devices[k->device[i]];
        double t = pl_cost_lookup(m, pl_op_signature(op, shapes, device->threads));
        double launch = device->hardware && t < 0 ? device->hardware->launch_seconds : 0;
        *fixed = i == 0 || launch < *fixed ? launch : *fixed;
        if (device->flops_per_second <= 0 && !device->hardware &&
            pl_cost_fastest_rate(m, device->threads) > 0) /* native, calibrated */
            t = native_floor(m, device, op->kind, route, t, flops, bytes);
        else if (t < 0)
            t = pl_cost_op_on(m, op->kind, route, device, flops, bytes);
        if (device->flops_per_second > 0) /* paced: never faster than its rate */
            t = fmax(t, flops / device->flops_per_second);
        times[i] = t;
        if (best < 0 || t < best)
            best = t;
    }
    return best;
}

/* The graph's dependencies along its tensors: each op's producers are its inputs' last
 * writers (the ops that made them, or that updated them in place before it). */
static pl_adjacency *dependencies_of(const pl_graph *g, pl_error *err)
{
    pl_adjacency_options last_writers = {.in_place = true};
    return pl_adjacency_new(g, &last_writers, err);
}

/* One micro-batch size: each op's time for one micro-batch on its fastest device
 * (`micro`), the part of it every shard of the op takes (`fixed`, per_class), its share
 * of the step there (step[o * stride]: every micro-batch's, or one run of an update), and
 * its share on each class (share[o * classes + k]). */
static pl_status times_at(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                          const device_classes *k, int size, pl_tensor *shapes, double *micro,
                          double *fixed, double *step, int stride, double *share,
                          pl_error *err)
{
    pl_status status = pl_graph_shapes_for_batch(g, size, shapes, err);
    for (int o = 0; status == PL_OK && o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        double flops;
        pl_infer_ctx ctx;
        if (!pl_op_infer(g, o, shapes, &ctx, &flops))
            return pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\": %s", op->name,
                                ctx.message);
        double *times = &share[(size_t)o * (size_t)k->n];
        micro[o] = per_class(m, c, k, op, shapes, flops, times, &fixed[o]);
        double profiled = pl_op_times_seconds(m->op_times, g, o, (double)size / g->batch_size);
        for (int i = 0; profiled >= 0 && i < k->n; i++) /* as the simulator times it */
            times[i] = micro[o] = profiled;
        if (profiled >= 0) /* a time measured whole: no part of it known to be fixed */
            fixed[o] = 0;
        double runs = op->phase == PL_PHASE_UPDATE ? 1 : g->batch_size / size;
        step[(size_t)o * stride] = micro[o] * runs;
        for (int i = 0; i < k->n; i++)
            times[i] *= runs;
    }
    return status;
}

/* The pipeline's fill and drain. Before time t an op can only run once its ancestors
 * have (head: the longest path to it), and its runs, one per micro-batch, take turns on
 * its device: at most min(its step's work, t - head) of its work fits before t. So does
 * a co-location group's, from its ops' earliest head, since one device runs them in turn.
 * The devices idle the rest of D t. The last t' seconds likewise, with the longest path
 * after each op (tail). For any t and t' with t + t' within a bound already known (so that
 * the two ends do not overlap), the step lasts at least (work + the idle at both ends) / D.
 * Counted per op or per group, the idle differs (more per group on inception, per op on
 * lstm_lm): the term takes the larger.
 * With device weights w_d (top of the file): T = sum_d w_d (load_d + idle_d), the loads
 * weigh at least the spread work, and an item's weighted work before t is at most
 * max_d w_d min(time(item, d), t - head) <= w_max min(its work, t - head), its work being
 * max_d w_d time(item, d) / w_max. So the same sweep holds over 1 / w_max devices (D when
 * they are alike) with those works: spread + (the idle at both ends) w_max. */
typedef struct ramp_event {
    double at;
    double slope; /* + its rate: an item's work may begin to fit; - its rate: all of it fits */
} ramp_event;

/* An item a plan may split over k devices (split_graph.h) fits k times as fast: at most
 * min(its work, k (t - head)) before t; its rate is k (1 for an item run whole). */
typedef struct ramps {
    double *head, *tail, *work; /* per item (op or group) */
    const double *rate;         /* per item */
    ramp_event *events;         /* 2 per item */
    double *curves;             /* 4 (2 + 2 per item) */
} ramps;

static int earlier(const void *a, const void *b)
{
    double x = ((const ramp_event *)a)->at, y = ((const ramp_event *)b)->at;
    return (x > y) - (x < y);
}

/* The devices' idle time over [0, t] at every t up to `known` where its slope may change,
 * items beginning at `begin` (their heads, or their tails for the step's end): the
 * times in at[], the idle in idle[]; returns how many. */
static int idle_curve(int n_items, double n_devices, const double *begin, const double *work,
                      const double *rate, double known, ramp_event *events, double *at,
                      double *idle)
{
    int n = 0;
    for (int i = 0; i < n_items; i++)
        if (begin[i] < known && work[i] > 0) {
            events[n++] = (ramp_event){begin[i], rate[i]};
            events[n++] = (ramp_event){begin[i] + work[i] / rate[i], -rate[i]};
        }
    qsort(events, (size_t)n, sizeof *events, earlier);
    double fits = 0, t = 0, active = 0;
    int points = 0;
    for (int e = 0; e <= n; e++) {
        double next = e < n && events[e].at < known ? events[e].at : known;
        fits += active * (next - t);
        t = next;
        at[points] = t;
        idle[points++] = n_devices * t - fits;
        if (t >= known)
            break;
        active += events[e].slope;
    }
    return points;
}

/* spread + the most idle at both ends (t + t' within `known`) / n_devices, for the items of
 * `r`; n_devices is 1 / w_max. */
static double fill_and_drain(int n_items, double n_devices, const ramps *r, double spread,
                             double known)
{
    size_t most_points = 2 * (size_t)n_items + 2;
    double *fill_at = r->curves, *fill = fill_at + most_points;
    double *drain_at = fill + most_points, *drain = drain_at + most_points;
    int n_fill = idle_curve(n_items, n_devices, r->head, r->work, r->rate, known, r->events,
                            fill_at, fill);
    int n_drain = idle_curve(n_items, n_devices, r->tail, r->work, r->rate, known, r->events,
                             drain_at, drain);
    for (int j = 1; j < n_drain; j++) /* the most idle at the end within each length */
        if (drain[j - 1] > drain[j])
            drain[j] = drain[j - 1];
    double most = 0;
    for (int i = 0, j = n_drain - 1; i < n_fill; i++) { /* longer fills, shorter drains */
        while (j > 0 && fill_at[i] + drain_at[j] > known)
            j--;
        if (fill_at[i] + drain_at[j] <= known && fill[i] + drain[j] > most)
            most = fill[i] + drain[j];
    }
    return spread + most / n_devices;
}

/* The unit that one device runs whole, per op (`unit`, n_ops), and how many (returned):
 * its co-location group (numbered by its forward op), but a parameter's accumulations and
 * update, a unit per parameter after the groups. NULL: out of memory. */
static int *units_of(const pl_graph *g, int *n_units)
{
    int *unit = malloc(((size_t)g->n_ops + (size_t)g->n_tensors + 1) * sizeof *unit);
    if (!unit)
        return NULL;
    int *of_param = unit + g->n_ops;
    for (int t = 0; t < g->n_tensors; t++)
        of_param[t] = -1;
    *n_units = g->n_forward_ops;
    for (int o = 0; o < g->n_ops; o++) {
        int t = pl_graph_updated_param(g, o);
        if (t >= 0 && of_param[t] < 0)
            of_param[t] = (*n_units)++;
        unit[o] = t >= 0 ? of_param[t] : g->ops[o].group;
    }
    return unit;
}

/* At one size: per op, the longest path before it (head) and after it (tail); per unit
 * (units_of), its ops' earliest head and tail. */
static void paths_and_groups(const pl_graph *g, const int *unit, const pl_adjacency *deps,
                             const double *micro, ramps *ops, ramps *groups)
{
    int n = g->n_ops;
    for (int o = 0; o < n; o++) {
        ops->head[o] = ops->tail[o] = 0;
        for (int k = deps->producer_first[o]; k < deps->producer_first[o + 1]; k++) {
            int w = deps->producer[k];
            if (ops->head[w] + micro[w] > ops->head[o])
                ops->head[o] = ops->head[w] + micro[w];
        }
        groups->head[o] = groups->tail[o] = HUGE_VAL; /* no group: no work */
    }
    for (int o = n; o-- > 0;) /* ops are in topological order */
        for (int k = deps->producer_first[o]; k < deps->producer_first[o + 1]; k++) {
            int w = deps->producer[k];
            if (ops->tail[o] + micro[o] > ops->tail[w])
                ops->tail[w] = ops->tail[o] + micro[o];
        }
    for (int o = 0; o < n; o++) {
        int q = unit[o];
        groups->head[q] = fmin(groups->head[q], ops->head[o]);
        groups->tail[q] = fmin(groups->tail[q], ops->tail[o]);
    }
}

/* The weighted work of items (share[i * classes + k]: item i on a device of class k)
 * under weights w (per device of each class): sum_i min_k w_k share; each class's load
 * (the unweighted work of the items it is the least for) in load[]. */
static double spread_of(const device_classes *k, const double *share, int n_items,
                        const double *w, double *load)
{
    double spread = 0;
    for (int i = 0; i < k->n; i++)
        load[i] = 0;
    for (int item = 0; item < n_items; item++) {
        const double *t = &share[(size_t)item * (size_t)k->n];
        int least = 0;
        for (int i = 1; i < k->n; i++)
            if (w[i] * t[i] < w[least] * t[least])
                least = i;
        spread += w[least] * t[least];
        load[least] += t[least];
    }
    return spread;
}

enum { WEIGHT_STEPS = 40 };

/* Weights per device of each class (summing to 1 over the devices) that spread the items'
 * work as far as it goes: first in proportion to each class's speed on all of them, then
 * multiplicative steps that weigh a class more when its devices carry more than the
 * spread (so that less goes to it) and less when they carry less. Any weights give a
 * bound; the best found is kept in w[] and returned. */
static double best_weights(const device_classes *k, const double *share, int n_items, double *w)
{
    double trial[PL_MAX_DEVICES], load[PL_MAX_DEVICES], sum = 0;
    for (int i = 0; i < k->n; i++) {
        double total = 0;
        for (int item = 0; item < n_items; item++)
            total += share[(size_t)item * (size_t)k->n + (size_t)i];
        trial[i] = total > 0 ? 1 / total : 1;
        sum += k->count[i] * trial[i];
    }
    for (int i = 0; i < k->n; i++)
        w[i] = trial[i] /= sum;
    double best = spread_of(k, share, n_items, w, load);
    for (int step = 0; k->n > 1 && step < WEIGHT_STEPS && best > 0; step++) {
        double spread = spread_of(k, share, n_items, trial, load);
        if (spread > best) {
            best = spread;
            for (int i = 0; i < k->n; i++)
                w[i] = trial[i];
        }
        double rate = 0.5 / sqrt(step + 1.0);
        sum = 0;
        for (int i = 0; i < k->n; i++) {
            double carried = load[i] / k->count[i]; /* per device */
            trial[i] *= pow((carried + 0.05 * spread) / (1.05 * spread), rate);
            sum += k->count[i] * trial[i];
        }
        for (int i = 0; i < k->n; i++)
            trial[i] /= sum;
    }
    return best;
}

/* The spread terms at one size from the ops' shares per class (share, [op][class]):
 * - the groups' work spread by the best weights (returned),
 * - the heaviest group, on the class where it runs fastest, shared as a split may share
 *   it (*heaviest),
 * - for the fill and drain, 1 / w_max (*n_devices) and each op's and group's work
 *   (ops->work, groups->work: max_k w_k time / w_max),
 * - per op, its weighted work min_k w_k share for the update chains (spread[o * stride]).
 * group_share is scratch of [group][class]. */
static double spread_terms(const pl_graph *g, const int *unit, int n_groups,
                           const device_classes *k, const double *share, double *group_share,
                           ramps *ops, ramps *groups, double *heaviest, double *n_devices,
                           double *spread, int stride)
{
    int K = k->n;
    for (size_t i = 0; i < (size_t)n_groups * (size_t)K; i++)
        group_share[i] = 0;
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < K; i++)
            group_share[(size_t)unit[o] * (size_t)K + (size_t)i] +=
                share[(size_t)o * (size_t)K + (size_t)i];
    double w[PL_MAX_DEVICES] = {0}, most = 0;
    double work = best_weights(k, group_share, n_groups, w);
    for (int i = 0; i < K; i++)
        most = fmax(most, w[i]);
    *n_devices = 1 / most;
    *heaviest = 0;
    for (int q = 0; q < g->n_ops; q++) {
        groups->work[q] = 0;
        if (q >= n_groups)
            continue;
        const double *t = &group_share[(size_t)q * (size_t)K];
        double least = t[0];
        for (int i = 0; i < K; i++) {
            least = fmin(least, t[i]);
            groups->work[q] = fmax(groups->work[q], w[i] * t[i] / most);
        }
        *heaviest = fmax(*heaviest, least / groups->rate[q]);
    }
    for (int o = 0; o < g->n_ops; o++) {
        const double *t = &share[(size_t)o * (size_t)K];
        double least = w[0] * t[0];
        ops->work[o] = 0;
        for (int i = 0; i < K; i++) {
            least = fmin(least, w[i] * t[i]);
            ops->work[o] = fmax(ops->work[o], w[i] * t[i] / most);
        }
        spread[(size_t)o * stride] = least;
    }
    return work;
}

/* Every term but the update chains at one size, from paths_and_groups and spread_terms.
 * With replicas (a model that allows them, `copies` > 1: the most devices one group's
 * micro-batches can run on at this size) a group's work spreads over that many devices,
 * an update at the end of a path may be shared by that many, and an op's runs no longer
 * take turns on one device, so the pipeline's fill and drain bound nothing. */
static double size_bound(const pl_graph *g, double spread, double heaviest, double n_devices,
                         int copies, const double *micro, const ramps *ops,
                         const ramps *groups)
{
    double path = 0;
    for (int o = 0; o < g->n_ops; o++) /* a sharded optimizer state shares an update */
        path = fmax(path, ops->head[o] + (g->ops[o].phase == PL_PHASE_UPDATE
                                              ? micro[o] / copies : micro[o]));
    double known = fmax(fmax(spread, path), heaviest / copies);
    if (copies > 1)
        return known;
    double per_op = fill_and_drain(g->n_ops, n_devices, ops, spread, known);
    double per_group = fill_and_drain(g->n_ops, n_devices, groups, spread, known);
    return fmax(known, fmax(per_op, per_group));
}

typedef struct keyed_update {
    double seconds; /* at the first size */
    int op;
} keyed_update;

static int heavier_first(const void *a, const void *b)
{
    double x = ((const keyed_update *)a)->seconds, y = ((const keyed_update *)b)->seconds;
    return (x < y) - (x > y);
}

/* An update runs once a step, after every micro-batch's run of each of its ancestors:
 * those take at least their work spread over the devices (their weighted work, `spread`,
 * summed: the argument at the top of the file over the ancestors alone; or each op at its
 * fastest over n_devices), and at least the work of any one co-location group among them,
 * which one device runs in turn (or, with replicas, `copies` devices at most). So the step
 * lasts at least that plus the update (or its share over `copies` devices). (On
 * recommender the largest table's 16 ms Adam update waits for the first dense layer's
 * forward and input gradient, both on that layer's device.) One walk per update serves
 * every size: `step` and `spread` are op-major ([op][size]), `bounds` takes a term per
 * size. The walks cost the number of dependencies per update; past a budget the lighter
 * updates are left out, which only loosens the bound. */
static pl_status update_chains(const pl_graph *g, const int *unit, int n_devices,
                               const pl_adjacency *deps, const double *step,
                               const double *spread, int n_sizes, const int *copies,
                               double *bounds, pl_error *err)
{
    size_t n = (size_t)g->n_ops, rows = (size_t)n_sizes;
    int *ints = malloc(2 * n * sizeof *ints);
    double *sums = calloc(n * rows + 3 * rows, sizeof *sums);
    keyed_update *order = malloc(n * sizeof *order); /* the heaviest first */
    if (!ints || !sums || !order) {
        free(ints);
        free(sums);
        free(order);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    int *seen = ints;     /* the update whose walk reached each op */
    int *walk = ints + n; /* the ops it reached, in order: a queue that is never emptied */
    double *group = sums; /* [group][size]: an update's ancestors' work */
    double *heaviest = group + n * rows, *work = heaviest + rows, *fastest = work + rows;
    int n_updates = 0;
    for (int o = 0; o < g->n_ops; o++) {
        seen[o] = -1;
        if (g->ops[o].phase == PL_PHASE_UPDATE)
            order[n_updates++] = (keyed_update){step[(size_t)o * rows], o};
    }
    qsort(order, (size_t)n_updates, sizeof *order, heavier_first);
    long budget = 2L * 1000 * 1000; /* about 0.1 s; the suite models need a few 10,000s */
    for (int i = 0; i < n_updates && budget > 0; i++) {
        int u = order[i].op, reached = 1;
        for (int s = 0; s < n_sizes; s++)
            heaviest[s] = work[s] = fastest[s] = 0;
        walk[0] = u;
        seen[u] = u;
        for (int next = 0; next < reached; next++) {
            int o = walk[next];
            for (int k = deps->producer_first[o]; k < deps->producer_first[o + 1]; k++, budget--) {
                int a = deps->producer[k];
                if (seen[a] == u)
                    continue;
                seen[a] = u;
                walk[reached++] = a;
                const double *share = &step[(size_t)a * rows];
                const double *weighted = &spread[(size_t)a * rows];
                double *sum = &group[(size_t)unit[a] * rows];
                for (int s = 0; s < n_sizes; s++) {
                    work[s] += weighted[s];
                    fastest[s] += share[s];
                    sum[s] += share[s];
                    if (sum[s] > heaviest[s])
                        heaviest[s] = sum[s];
                }
            }
        }
        for (int s = 0; s < n_sizes; s++) {
            double before = fmax(work[s], fastest[s] / n_devices);
            before = fmax(before, heaviest[s] / copies[s]); /* replicas share a group */
            /* and a sharded optimizer state shares the update among them */
            double chain = before + step[(size_t)u * rows + s] / copies[s];
            if (chain > bounds[s])
                bounds[s] = chain;
        }
        for (int k = 1; k < reached; k++) /* the groups' sums back to zero */
            for (int s = 0; s < n_sizes; s++)
                group[(size_t)unit[walk[k]] * rows + s] = 0;
    }
    free(ints);
    free(sums);
    free(order);
    return PL_OK;
}

pl_status pl_step_lower_bound(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                              double *seconds, pl_error *err)
{
    pl_bound_parts parts;
    pl_status status = pl_step_lower_bound_parts(g, c, m, &parts, err);
    if (status == PL_OK)
        *seconds = parts.seconds;
    return status;
}

static pl_status bound_parts(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                             pl_bound_parts *parts, pl_error *err)
{
    int n_sizes = 0;
    for (int size = 1; size <= g->batch_size; size++)
        n_sizes += g->batch_size % size == 0;
    size_t n = (size_t)g->n_ops;
    device_classes k;
    find_classes(c, &k);
    pl_adjacency *deps = NULL;
    int n_units = 0, *unit = units_of(g, &n_units);
    pl_tensor *shapes = malloc((size_t)g->n_tensors * sizeof *shapes);
    double *step = malloc((size_t)n_sizes * (n + 1) * sizeof *step); /* [op][size] */
    double *spread = malloc((size_t)n_sizes * (n + 1) * sizeof *spread); /* [op][size] */
    double *share = malloc((n + 1) * (size_t)k.n * sizeof *share);       /* [op][class] */
    double *group_share = malloc((n + 1) * (size_t)k.n * sizeof *group_share);
    double *fastest_spread = malloc((n + 1) * sizeof *fastest_spread);
    double *micro = malloc((n + 1) * sizeof *micro);
    double *fixed = malloc((n + 1) * sizeof *fixed);
    double *items = malloc((6 * n + 1) * sizeof *items); /* ops' and groups' paths, work */
    ramp_event *events = malloc((2 * n + 1) * sizeof *events);
    double *curves = malloc(4 * (2 * n + 2) * sizeof *curves);
    ramps ops = {items, items + n, items + 2 * n, NULL, events, curves};
    ramps groups = {items + 3 * n, items + 4 * n, items + 5 * n, NULL, events, curves};
    double *bounds = malloc(2 * (size_t)n_sizes * sizeof *bounds);
    double *comm = bounds + n_sizes; /* the links' term per size */
    int *copies_at = malloc((size_t)n_sizes * sizeof *copies_at);
    double *rates = malloc((2 * n + 1) * sizeof *rates); /* per op, then per unit */
    int split = 1; /* the most devices a split op may have */
    int reach = c->n_devices < PL_MAX_SPLIT ? c->n_devices : PL_MAX_SPLIT;
    for (size_t o = 0; rates && unit && o < n; o++)
        rates[n + o] = 1;
    for (size_t o = 0; rates && unit && o < n; o++) {
        bool splits = pl_split_graph_splits(g->ops[g->ops[o].group].kind);
        rates[o] = splits ? reach : 1;
        split = splits ? reach : split;
        rates[n + (size_t)unit[o]] = fmax(rates[n + (size_t)unit[o]], rates[o]);
    }
    ops.rate = rates;
    groups.rate = rates + n;
    if (unit && shapes && step && spread && share && group_share && fastest_spread && micro &&
        fixed && bounds && items && events && curves && copies_at && rates)
        deps = dependencies_of(g, err);
    pl_status status = deps ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int size = 1, s = 0; status == PL_OK && size <= g->batch_size; size++) {
        if (g->batch_size % size)
            continue;
        status = times_at(g, c, m, &k, size, shapes, micro, fixed, step + s, n_sizes, share,
                          err);
        /* replicas: each a share of the micro-batches, on devices of its own */
        int copies = pl_graph_whole_step_op(g) < 0 ? g->batch_size / size : 1;
        copies = copies < c->n_devices ? copies : c->n_devices;
        /* split ops: each run of an op shared by as many devices, but for the part every
         * shard takes (a group's work at the end of an update's chain by the replicas and
         * the split together) */
        for (size_t o = 0; o < n; o++)
            micro[o] = (micro[o] - fixed[o]) / rates[o] + fixed[o];
        copies_at[s] = copies * split < c->n_devices ? copies * split : c->n_devices;
        if (status == PL_OK) {
            double heaviest, n_devices;
            paths_and_groups(g, unit, deps, micro, &ops, &groups);
            double work = spread_terms(g, unit, n_units, &k, share, group_share, &ops, &groups,
                                       &heaviest, &n_devices, spread + s, n_sizes);
            bounds[s] = size_bound(g, work, heaviest, n_devices, copies, micro, &ops, &groups);
            if (k.n > 1) { /* and as if every device were as fast as the fastest for each op */
                device_classes alike = {.n = 1, .count = {c->n_devices}};
                for (size_t o = 0; o < n; o++)
                    share[o] = step[o * (size_t)n_sizes + (size_t)s];
                work = spread_terms(g, unit, n_units, &alike, share, group_share, &ops, &groups,
                                    &heaviest, &n_devices, fastest_spread, 1);
                bounds[s] = fmax(bounds[s], size_bound(g, work, heaviest, n_devices, copies,
                                                       micro, &ops, &groups));
            }
            status = pl_bound_comm(g, c, shapes, size, copies, split, step + s, n_sizes,
                                   &comm[s], err);
        }
        s++;
    }
    if (status == PL_OK)
        status = update_chains(g, unit, c->n_devices, deps, step, spread, n_sizes, copies_at,
                               bounds, err);
    for (int size = 1, s = 0; status == PL_OK && size <= g->batch_size; size++) {
        if (g->batch_size % size)
            continue;
        double seconds = fmax(bounds[s], comm[s]);
        double free = s == 0 ? bounds[s] : fmin(parts->free_communication, bounds[s]);
        if (s == 0 || seconds < parts->seconds)
            *parts = (pl_bound_parts){seconds, bounds[s], comm[s], size, 0};
        parts->free_communication = free;
        s++;
    }
    pl_adjacency_free(deps);
    free(unit);
    free(shapes);
    free(step);
    free(spread);
    free(share);
    free(group_share);
    free(fastest_spread);
    free(micro);
    free(fixed);
    free(items);
    free(events);
    free(curves);
    free(bounds);
    free(copies_at);
    free(rates);
    return status;
}

pl_status pl_step_lower_bound_parts(const pl_graph *g, const pl_cluster *c,
                                    const pl_cost_model *m, pl_bound_parts *parts,
                                    pl_error *err)
{
    if (!(m->speed > 1))
        return bound_parts(g, c, m, parts, err);
    /* A machine probed slower than profiled (probe.h) may recover before a step is
     * measured: the bound keeps the profile's own pace. */
    pl_cost_model *as_profiled = malloc(sizeof *as_profiled);
    if (!as_profiled)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    *as_profiled = *m; /* its measurements borrowed, never freed here */
    as_profiled->speed = 0;
    pl_status status = bound_parts(g, c, as_profiled, parts, err);
    free(as_profiled);
    return status;
}
