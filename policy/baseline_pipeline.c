/* pipeline-dp: contiguous stages over the topological order by dynamic programming, in the
 * manner of PipeDream's and Alpa's stage partitioners.
 *
 * The groups are first coarsened into at most MAX_SEGMENTS segments of consecutive groups
 * of about equal time (a layer each, in PipeDream's terms). Stages take devices in one of
 * a few orders: the cluster's, and fastest first with each next device the fastest left
 * (ties: the best link from the one before, so that linked devices stay neighbours), and
 * that reversed; S stages take the order's first S devices. For every order, stage count
 * S, micro-batch count m dividing the batch, and schedule, the DP splits the segments
 * into S stages minimising the slowest stage: its compute on its own device (the full
 * batch, plus the fixed cost of each op for every further micro-batch) or the copies over
 * the link to the next stage's device, whichever is longer; so a fast device gets a longer
 * stage. A stage whose memory (its parameters and state, its activations and received
 * copies for as many micro-batches as the schedule keeps alive) exceeds its device is not
 * allowed. A candidate's estimate is its slowest stage times
 * (m + S - 1) / m, the pipeline's fill and drain; the best estimates are then simulated
 * and the fastest simulated one wins, so the simulator, not the estimate, picks S and m. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"
#include "kernels.h"

enum {
    MAX_SEGMENTS = 256,
    MAX_SIMULATED = 8,        /* candidates simulated, best estimates first */
    MAX_ORDERS = 3,           /* device orders tried */
    SIMULATED_TASKS = 400000, /* and at most about this many tasks simulated in all */
};
static const int micro_batch_choices[] = {1, 2, 4, 8, 16, 32};
enum { N_MICRO = sizeof micro_batch_choices / sizeof *micro_batch_choices };

typedef struct segments {
    int n;
    int *first;           /* group of segment k: first[k] .. first[k+1] */
    double *seconds;      /* [device * (n + 1) + k]: prefix sums of the groups' seconds */
    double *fixed;        /* [device * (n + 1) + k]: prefix sums of the groups' fixed seconds
                           * per further micro-batch */
    double *activation, *resident; /* prefix sums of bytes */
    double *cut;          /* cut[k]: bytes crossing from before segment k to it or after */
} segments;

typedef struct candidate {
    int stages, micro_batches;
    pl_schedule schedule;
    double estimate;
    int bound[PL_MAX_DEVICES + 1]; /* stage s holds segments bound[s] .. bound[s+1] */
    int device[PL_MAX_DEVICES];    /* stage s runs on device[s] */
} candidate;

static void segments_free(segments *s)
{
    free(s->first);
    free(s->seconds);
    free(s->fixed);
    free(s->activation);
    free(s->resident);
    free(s->cut);
}

/* What an op costs again for each further micro-batch: the cost model's intercept, the
 * executor's per-task cost and, paced, its lateness when the pacer sleeps through even
 * the whole batch's op (more micro-batches make it shorter). Updates run once a step. */
static double fixed_seconds(const pl_placer *p, const pl_op *op, int dev)
{
    if (op->phase == PL_PHASE_UPDATE)
        return 0;
    const pl_device *device = &p->cluster->devices[dev];
    double intercept = pl_cost_op_on(p->model, op->kind,
                                     pl_kernel_route_of(op, p->graph->tensors), device, 0, 0);
    double held = device->flops_per_second > 0 ? op->flops / device->flops_per_second : 0;
    double late = held > PL_DEVICE_PACE_SPIN_SECONDS ? pl_cost_delay(p->model, PL_DELAY_SLEPT, 0, 0, 0)
                  : held > 0 ? pl_cost_delay(p->model, PL_DELAY_SPUN, 0, 0, 0)
                             : 0;
    return intercept + p->model->task_seconds + late;
}

static bool build_segments(const pl_placer *p, segments *s)
{
    int n = p->n_groups, D = p->n_devices;
    int *block = malloc((size_t)n * sizeof *block);
    double *weight = calloc((size_t)n, sizeof *weight);
    double *cross = calloc((size_t)n + 2, sizeof *cross);
    double *fixed = calloc((size_t)n * (size_t)D, sizeof *fixed); /* [device * n + group] */
    s->first = malloc(((size_t)n + 1) * sizeof *s->first);
    bool ok = block && weight && cross && fixed && s->first;
    if (ok) {
        for (int group = 0; group < n; group++)
            weight[group] = pl_placer_mean_seconds(p, group);
        pl_weighted_blocks(weight, n, n < MAX_SEGMENTS ? n : MAX_SEGMENTS, block);
        s->n = 0;
        for (int group = 0; group < n; group++)
            if (group == 0 || block[group] != block[group - 1])
                s->first[s->n++] = group;
        s->first[s->n] = n;
        size_t cells = (size_t)s->n + 1;
        s->seconds = calloc((size_t)D * cells, sizeof *s->seconds);
        s->fixed = calloc((size_t)D * cells, sizeof *s->fixed);
        s->activation = calloc(cells, sizeof *s->activation);
        s->resident = calloc(cells, sizeof *s->resident);
        s->cut = calloc(cells, sizeof *s->cut);
        ok = s->seconds && s->fixed && s->activation && s->resident && s->cut;
    }
    for (int o = 0; ok && o < p->graph->n_ops; o++)
        for (int d = 0; d < D; d++)
            fixed[(size_t)d * (size_t)n + (size_t)p->graph->ops[o].group] +=
                fixed_seconds(p, &p->graph->ops[o], d);
    const pl_adjacency *dataflow = p->dataflow;
    /* an edge crosses the boundaries before from+1 .. to */
    for (int e = 0; ok && e < dataflow->n_edges; e++) {
        cross[dataflow->producer[e] + 1] += (double)p->edge_bytes[e];
        cross[dataflow->edge_consumer[e] + 1] -= (double)p->edge_bytes[e];
    }
    for (int group = 1; ok && group <= n; group++)
        cross[group] += cross[group - 1];
    for (int k = 0; ok && k < s->n; k++) {
        size_t cells = (size_t)s->n + 1;
        for (int d = 0; d < D; d++) {
            double sum = 0;
            for (int group = s->first[k]; group < s->first[k + 1]; group++)
                sum += pl_placer_seconds(p, group, d);
            s->seconds[(size_t)d * cells + (size_t)k + 1] = s->seconds[(size_t)d * cells + (size_t)k] + sum;
            double f = 0;
            for (int group = s->first[k]; group < s->first[k + 1]; group++)
                f += fixed[(size_t)d * (size_t)n + (size_t)group];
            double *fixed_prefix = &s->fixed[(size_t)d * cells];
            fixed_prefix[k + 1] = fixed_prefix[k] + f;
        }
        double a = 0, r = 0;
        for (int group = s->first[k]; group < s->first[k + 1]; group++) {
            a += (double)p->activation[group];
            r += (double)p->resident[group];
        }
        s->activation[k + 1] = s->activation[k] + a;
        s->resident[k + 1] = s->resident[k] + r;
        s->cut[k] = cross[s->first[k]];
    }
    free(block);
    free(weight);
    free(cross);
    free(fixed);
    return ok;
}

/* What stage `stage` of `c` ending before segment j pays for its copies to the next
 * stage's device, whichever segment it starts at. */
static double stage_link(const pl_placer *p, const segments *s, const candidate *c, int stage,
                         int j)
{
    int m = c->micro_batches;
    if (j == s->n || stage + 1 == c->stages)
        return 0;
    return m * pl_placer_copy_seconds(p, c->device[stage], c->device[stage + 1], s->cut[j] / m);
}

/* The bytes stage `stage`'s device has for it: a recomputing view's reserve holds a
 * segment's recomputation at the full batch, and a stage recomputes one micro-batch at a
 * time. */
static double stage_room(const pl_placer *p, const candidate *c, int stage)
{
    int m = c->micro_batches;
    return (double)pl_placer_room(p, c->device[stage]) +
           (double)p->recompute_reserve * (m - 1) / m;
}

/* Stage `stage` of `c` over segments i .. j on its device, given its stage_link and
 * stage_room: its time, or DBL_MAX when it does not fit. */
static double stage_cost(const segments *s, const candidate *c, int stage, int i, int j,
                         double link, double room)
{
    int m = c->micro_batches, dev = c->device[stage];
    size_t cells = (size_t)s->n + 1;
    const double *seconds = &s->seconds[(size_t)dev * cells];
    const double *fixed = &s->fixed[(size_t)dev * cells];
    double compute = seconds[j] - seconds[i] + (m - 1) * (fixed[j] - fixed[i]);
    int alive = c->schedule == PL_SCHEDULE_GPIPE ? m
                : m < c->stages - stage ? m : c->stages - stage;
    double memory = s->resident[j] - s->resident[i] +
                    (s->activation[j] - s->activation[i] + (i > 0 ? s->cut[i] : 0) +
                     (j < s->n ? s->cut[j] : 0)) * alive / m;
    if (memory > room)
        return DBL_MAX;
    return compute > link ? compute : link;
}

/* The DP for one candidate: its estimate (DBL_MAX when nothing fits) and stage bounds. */
static bool partition(const pl_placer *p, const segments *s, candidate *c, double *best,
                      int *from)
{
    int K = s->n, S = c->stages;
    if (S > K)
        return false;
    size_t cells = (size_t)K + 1;
    for (int stage = 0; stage < S; stage++) {
        double room = stage_room(p, c, stage);
        for (int j = 0; j <= K; j++) {
            double *cell = &best[(size_t)stage * cells + (size_t)j];
            *cell = DBL_MAX;
            if (j < stage + 1 || j > K - (S - 1 - stage))
                continue;
            double link = stage_link(p, s, c, stage, j);
            if (stage == 0) {
                *cell = stage_cost(s, c, 0, 0, j, link, room);
                from[j] = 0;
                continue;
            }
            for (int i = stage; i < j; i++) {
                double before = best[(size_t)(stage - 1) * cells + (size_t)i];
                if (before == DBL_MAX || before >= *cell)
                    continue;
                double cost = stage_cost(s, c, stage, i, j, link, room);
                double worst = cost > before ? cost : before;
                if (worst < *cell) {
                    *cell = worst;
                    from[(size_t)stage * cells + (size_t)j] = i;
                }
            }
        }
    }
    double slowest = best[(size_t)(S - 1) * cells + (size_t)K];
    if (slowest == DBL_MAX)
        return false;
    c->bound[S] = K;
    for (int stage = S - 1; stage > 0; stage--)
        c->bound[stage] = from[(size_t)stage * cells + (size_t)c->bound[stage + 1]];
    c->bound[0] = 0;
    c->estimate = slowest * (c->micro_batches + S - 1) / c->micro_batches;
    return true;
}

static int by_estimate(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->estimate != y->estimate)
        return x->estimate < y->estimate ? -1 : 1;
    if (x->stages != y->stages)
        return x->stages - y->stages;
    if (x->micro_batches != y->micro_batches)
        return x->micro_batches - y->micro_batches;
    if (x->schedule != y->schedule)
        return (int)x->schedule - (int)y->schedule;
    return memcmp(x->device, y->device, (size_t)x->stages * sizeof *x->device);
}

/* Candidates that differ only in their devices' order and estimate alike (equal devices
 * and links): one of them is simulated. */
static bool same_shape(const candidate *a, const candidate *b)
{
    return a->stages == b->stages && a->micro_batches == b->micro_batches &&
           a->schedule == b->schedule && a->estimate == b->estimate;
}

static void fill_plan(const pl_placer *p, const segments *s, const candidate *c, pl_plan *plan)
{
    for (int stage = 0; stage < c->stages; stage++)
        for (int group = s->first[c->bound[stage]]; group < s->first[c->bound[stage + 1]];
             group++) {
            plan->device[group] = c->device[stage];
            plan->stage[group] = stage;
        }
    plan->n_stages = c->stages;
    plan->micro_batches = c->micro_batches;
    plan->schedule = c->schedule;
    (void)p;
}

/* The device orders stages take (orders[k * D + s]: stage s's device); returns how many.
 * The cluster's order; fastest first (the least time for the whole model), each next
 * device the fastest left, ties to the cheapest link from the one before; and, when the
 * devices' speeds differ, that reversed. Orders the same as an earlier one are left out. */
static int device_orders(const pl_placer *p, int *orders)
{
    int D = p->n_devices, n = 1;
    bool unequal = false;
    double total[PL_MAX_DEVICES];
    bool used[PL_MAX_DEVICES] = {false};
    for (int d = 0; d < D; d++) {
        orders[d] = d;
        total[d] = 0;
        for (int group = 0; group < p->n_groups; group++)
            total[d] += pl_placer_seconds(p, group, d);
        unequal = unequal || total[d] != total[0];
    }
    int *fastest = orders + D, *reversed = orders + 2 * D;
    for (int s = 0; s < D; s++) {
        int best = -1;
        double best_link = 0;
        for (int d = 0; d < D; d++) {
            if (used[d])
                continue;
            double link = s > 0 ? pl_placer_copy_seconds(p, fastest[s - 1], d, 1 << 20) : 0;
            if (best < 0 || total[d] < total[best] ||
                (total[d] == total[best] && link < best_link)) {
                best = d;
                best_link = link;
            }
        }
        used[best] = true;
        fastest[s] = best;
        reversed[D - 1 - s] = best;
    }
    for (int k = 1; k < (unequal ? MAX_ORDERS : 2); k++) {
        bool seen = false;
        for (int j = 0; j < n && !seen; j++)
            seen = memcmp(&orders[j * D], &orders[k * D], (size_t)D * sizeof *orders) == 0;
        if (!seen)
            memmove(&orders[n++ * D], &orders[k * D], (size_t)D * sizeof *orders);
    }
    return n;
}

/* Whether an order before order r starts with the same S devices. */
static bool first_uses(const int *orders, int D, int r, int S)
{
    for (int j = 0; j < r; j++)
        if (memcmp(&orders[j * D], &orders[r * D], (size_t)S * sizeof *orders) == 0)
            return true;
    return false;
}

/* Every candidate that fits, sorted by estimate; their count in *n. */
static candidate *make_candidates(const pl_placer *p, const segments *s, int *n)
{
    int D = p->n_devices, orders[MAX_ORDERS * PL_MAX_DEVICES];
    bool whole_steps = pl_graph_whole_step_op(p->graph) >= 0; /* one micro-batch only */
    int n_orders = device_orders(p, orders);
    size_t cells = (size_t)s->n + 1, cap = (size_t)n_orders * (size_t)D * N_MICRO * 2;
    candidate *cs = malloc(cap * sizeof *cs);
    double *best = malloc((size_t)p->n_devices * cells * sizeof *best);
    int *from = malloc((size_t)p->n_devices * cells * sizeof *from);
    *n = 0;
    for (int r = 0; r < n_orders; r++)
        for (int S = 1; cs && best && from && S <= D; S++) {
            if (first_uses(orders, D, r, S)) /* an earlier order's first S devices */
                continue;
            for (int i = 0; i < N_MICRO; i++)
                for (int k = 0; k < 2; k++) {
                    int m = micro_batch_choices[i];
                    if (p->graph->batch_size % m != 0 || (S == 1 && k == 1) ||
                        (whole_steps && m > 1))
                        continue;
                    candidate c = {.stages = S, .micro_batches = m,
                                   .schedule = k ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE};
                    memcpy(c.device, &orders[r * D], (size_t)S * sizeof *c.device);
                    if (partition(p, s, &c, best, from))
                        cs[(*n)++] = c;
                }
        }
    free(best);
    free(from);
    if (cs && *n > 1)
        qsort(cs, (size_t)*n, sizeof *cs, by_estimate);
    return cs;
}

pl_status pl_place_pipeline_dp(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    segments s = {0};
    int n = 0;
    candidate *cs = NULL;
    pl_status status = build_segments(p, &s) && (cs = make_candidates(p, &s, &n))
                           ? PL_OK : pl_placer_no_memory(err);
    if (status == PL_OK && n == 0)
        status = pl_error_set(err, PL_ENOFIT, NULL, "pipeline-dp: no split into stages fits "
                              "the devices' memory");
    int chosen = -1;
    double fastest = 0, tasks = 0;
    for (int i = 0, simulated = 0; status == PL_OK && i < n && simulated < MAX_SIMULATED; i++) {
        double program_tasks = (double)p->graph->n_ops * cs[i].micro_batches;
        if (i > 0 && tasks + program_tasks > SIMULATED_TASKS)
            continue;
        if (i > 0 && same_shape(&cs[i - 1], &cs[i])) /* another order of the same estimate */
            continue;
        simulated++;
        tasks += program_tasks;
        fill_plan(p, &s, &cs[i], plan);
        double seconds;
        status = pl_placer_simulate(p, plan, &seconds, NULL, err);
        if (status == PL_OK && seconds >= 0 && (chosen < 0 || seconds < fastest)) {
            chosen = i;
            fastest = seconds;
        }
    }
    if (status == PL_OK)
        fill_plan(p, &s, &cs[chosen >= 0 ? chosen : 0], plan); /* finish reports a misfit */
    free(cs);
    segments_free(&s);
    return status;
}
