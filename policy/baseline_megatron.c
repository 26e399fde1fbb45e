/* megatron: the standard recipe for training a model larger than a device (Megatron-LM,
 * Narayanan et al. 2021): tensor parallelism inside groups of well-linked devices,
 * pipeline stages across those groups, data replicas on top, the degrees chosen by the
 * cost model.
 *
 * A tensor group is a run of t devices inside one of the cluster's groups (devices joined
 * by its faster links, cluster.h), the fastest runs first. For t = 1, 2, 4, ... (up to
 * PL_MAX_SPLIT and the devices), p stages and d replicas with p x d tensor groups,
 * replica r's stage s runs on tensor group s x d + r: a stage's replicas side by side, as
 * Megatron-LM orders its ranks, so that the all-reduce of a stage's gradients takes the
 * nearer links and the pipeline's smaller hand-offs cross the farther ones. The stages are
 * contiguous blocks of the forward ops of about equal time, in proportion to their
 * groups' speeds, and every op of a stage is split over its group: the rewrite
 * (split_graph.h) splits products by columns then rows, attention by heads, and lets
 * element-wise ops and norms follow, and runs whole on the group's first device what it
 * cannot split. One micro-batch without a pipeline; with p stages, every power of two up
 * to 32 between p and 4p that divides a replica's batch (the largest dividing it when none
 * does), under 1F1B.
 *
 * Every such layout is estimated (compute shared by the group and the replicas, a
 * collective forward and back for every product with a weight, the pipeline's fill and
 * drain, the hand-offs between stages and the replicas' all-reduce, each over its link;
 * and each device's memory) and the best estimates that fit are simulated, up to
 * MAX_SIMULATED within about SIMULATED_TASKS tasks, and the whole model on the fastest
 * device when it is estimated to fit (so that megatron is never slower than single), with
 * the optimiser state replicated and, where that does not fit, sharded, and where neither
 * fits, every op's activations recomputed but the checkpoints', every ceil(sqrt(ops))-th
 * op's, which each segment is recomputed from (Megatron-LM's full recomputation; the
 * checkpoints every placer's recomputing view keeps: baseline_impl.h). Only where
 * no layout inside the groups fits are tensor groups taken across them, runs of t devices
 * in order over the slower links (a model too large for one group's memory). The fastest
 * simulated plan that fits wins; while none fits, up to MAX_TRIED are simulated, and the
 * one that misses by least is what the error reports. So a placing builds about
 * MAX_SIMULATED programs (MAX_TRIED when nothing fits), each of which rewrites and
 * differentiates the graph, and one more for the plan it returns. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"

enum {
    MAX_SIMULATED = 8,        /* plans simulated, best estimates first */
    MAX_TRIED = 24,           /* and while none fits, up to this many */
    SIMULATED_TASKS = 400000, /* and about this many tasks in all, past the first */
    MAX_MICRO_BATCHES = 32,
};

/* One candidate: t devices to a tensor group, p stages, d replicas, m micro-batches. */
typedef struct layout {
    int tensor, stages, replicas, micro_batches;
    bool fits;   /* by the estimate */
    bool across; /* its tensor groups span the cluster's groups (no group holds one) */
    double estimate;
} layout;

/* What the estimates read, per group (a forward op with its backward ops and updates). */
typedef struct megatron {
    const pl_placer *p;
    double *weight;   /* its mean seconds over the devices */
    double *params;   /* bytes of the parameters it reads first */
    double *products; /* its forward op's output bytes when that op reads a weight (a
                         parameter of two axes or more), else 0 */
    int *ops;         /* its ops: forward, backward and update */
    int *stage;       /* scratch: a layout's stage of each group */
    double *share;    /* scratch: each stage's share of the work */
} megatron;

static void megatron_free(megatron *m)
{
    free(m->weight);
    free(m->params);
    free(m->products);
    free(m->ops);
    free(m->stage);
    free(m->share);
}

static bool megatron_init(megatron *m, const pl_placer *p)
{
    const pl_graph *g = p->graph;
    size_t n = (size_t)p->n_groups;
    *m = (megatron){.p = p, .weight = calloc(n, sizeof *m->weight),
                    .params = calloc(n, sizeof *m->params),
                    .products = calloc(n, sizeof *m->products),
                    .ops = calloc(n, sizeof *m->ops), .stage = calloc(n, sizeof *m->stage),
                    .share = calloc((size_t)p->n_devices, sizeof *m->share)};
    bool *seen = calloc((size_t)g->n_tensors, sizeof *seen);
    bool ok = m->weight && m->params && m->products && m->ops && m->stage && m->share && seen;
    for (int o = 0; ok && o < g->n_ops; o++)
        m->ops[g->ops[o].group]++;
    for (int o = 0; ok && o < p->n_groups; o++) {
        const pl_op *op = &g->ops[o];
        m->weight[o] = pl_placer_mean_seconds(p, o);
        for (int i = 0; i < op->n_inputs; i++) {
            const pl_tensor *t = &g->tensors[op->inputs[i]];
            if (t->kind != PL_TENSOR_PARAM)
                continue;
            if (t->rank >= 2)
                m->products[o] = (double)pl_tensor_bytes(&g->tensors[op->outputs[0]]);
            if (!seen[op->inputs[i]])
                m->params[o] += (double)pl_tensor_bytes(t);
            seen[op->inputs[i]] = true;
        }
    }
    free(seen);
    return ok;
}

/* The tensor groups of t devices: devices[i * t ..] is group i's, runs of t devices in
 * order inside each of the cluster's groups, the fastest runs first (in order on a tie);
 * when no group holds t devices, runs across them (over the slower links: such layouts
 * estimate slower, and are what a model too large for one group needs). Returns how many. */
static int tensor_groups(const pl_placer *p, int t, int *devices, bool *across)
{
    int all[PL_MAX_DEVICES], group[PL_MAX_DEVICES], n = 0;
    for (int d = 0; d < p->n_devices; d++)
        all[d] = d;
    int k = pl_cluster_groups(p->cluster, all, p->n_devices, group);
    bool within = false; /* whether some group holds t devices */
    for (int c = 0; c < k && !within; c++) {
        int size = 0;
        for (int d = 0; d < p->n_devices; d++)
            size += group[d] == c;
        within = size >= t;
    }
    for (int d = 0; !within && d < p->n_devices; d++) /* else runs across the groups */
        group[d] = 0;
    k = within ? k : 1;
    *across = !within;
    for (int c = 0; c < k; c++) {
        int run = 0;
        for (int d = 0; d < p->n_devices; d++) {
            if (group[d] != c)
                continue;
            devices[n * t + run++] = d;
            if (run == t) {
                n++;
                run = 0;
            }
        }
    }
    double speed[PL_MAX_DEVICES];
    for (int i = 0; i < n; i++) /* a group is as fast as its slowest device */
        for (int j = 0; j < t; j++) {
            double s = pl_placer_device_speed(p, devices[i * t + j]);
            speed[i] = j == 0 || s < speed[i] ? s : speed[i];
        }
    for (int i = 1; i < n; i++) /* insertion, stable: a few dozen groups at most */
        for (int j = i; j > 0 && speed[j] > speed[j - 1]; j--) {
            double s = speed[j];
            speed[j] = speed[j - 1];
            speed[j - 1] = s;
            for (int x = 0; x < t; x++) {
                int swap = devices[j * t + x];
                devices[j * t + x] = devices[(j - 1) * t + x];
                devices[(j - 1) * t + x] = swap;
            }
        }
    return n;
}

/* The first device of replica r's stage s. */
static int stage_device(const layout *l, const int *devices, int s, int r)
{
    return devices[(s * l->replicas + r) * l->tensor];
}

/* Each group's stage in m->stage: blocks of the groups' time in proportion to the speed
 * of each stage's first tensor group. False when a stage would be empty. */
static bool assign_stages(megatron *m, const layout *l, const int *devices)
{
    const pl_placer *p = m->p;
    for (int s = 0; s < l->stages; s++)
        m->share[s] = pl_placer_device_speed(p, stage_device(l, devices, s, 0));
    pl_shared_blocks(m->weight, p->n_groups, l->stages, m->share, m->stage);
    for (int group = 0, s = 0; group < p->n_groups; group++) {
        if (m->stage[group] > s + 1 || (group == 0 && m->stage[0] != 0))
            return false;
        s = m->stage[group];
    }
    return m->stage[p->n_groups - 1] == l->stages - 1;
}

/* A ring all-reduce's time over t members of `bytes`, `rounds` times: 2 (t - 1) copies of
 * a t-th over the link from a to b (an all-gather forward and a reduce-scatter back take
 * as long). */
static double ring_seconds(const pl_placer *p, int a, int b, int t, double bytes, int rounds)
{
    if (t < 2 || bytes <= 0)
        return 0;
    return rounds * 2.0 * (t - 1) * pl_placer_copy_seconds(p, a, b, bytes / t);
}

/* The layout's estimated step and whether its memory fits (m->stage assigned). Replica r's
 * stage s: its groups' time shared by t devices and d replicas, a task's cost per op and
 * micro-batch, a collective forward and one back for every product with a weight; the
 * slowest stage (or hand-off) times the pipeline's (m + p - 1) / m; then the largest
 * all-reduce of a stage's gradients over its replicas. */
static void estimate(const megatron *m, layout *l, const int *devices)
{
    const pl_placer *p = m->p;
    int t = l->tensor, d = l->replicas, mb = l->micro_batches, S = l->stages;
    double slowest = 0, reduce = 0;
    l->fits = true;
    for (int s = 0; s < S; s++) {
        double params = 0, resident = 0, activation = 0, tasks = 0, products = 0;
        double compute[PL_MAX_DEVICES] = {0};
        for (int group = 0; group < p->n_groups; group++) {
            if (m->stage[group] != s)
                continue;
            for (int r = 0; r < d; r++)
                compute[r] += pl_placer_seconds(p, group, stage_device(l, devices, s, r));
            params += m->params[group];
            resident += (double)p->resident[group];
            activation += (double)p->activation[group];
            tasks += m->ops[group];
            products += m->products[group];
        }
        for (int r = 0; r < d; r++) {
            const int *group = &devices[(s * d + r) * t];
            double stage = compute[r] / (t * d) + mb * tasks * p->model->task_seconds +
                           ring_seconds(p, group[0], group[t > 1], t, products / (d * mb), mb);
            slowest = stage > slowest ? stage : slowest;
        }
        double cut = 0; /* what crosses from this stage to a later one */
        const pl_adjacency *a = p->dataflow;
        for (int e = 0; s + 1 < S && e < a->n_edges; e++)
            if (m->stage[a->producer[e]] <= s && m->stage[a->edge_consumer[e]] > s)
                cut += (double)p->edge_bytes[e];
        if (cut > 0) {
            double hand_off = 2.0 * mb * pl_placer_copy_seconds(
                p, stage_device(l, devices, s, 0), stage_device(l, devices, s + 1, 0),
                cut / (d * mb));
            slowest = hand_off > slowest ? hand_off : slowest;
        }
        if (d > 1) {
            double r = ring_seconds(p, stage_device(l, devices, s, 0),
                                    stage_device(l, devices, s, 1), d, params / t, 1);
            reduce = r > reduce ? r : reduce;
        }
        int alive = mb < S - s ? mb : S - s; /* 1F1B's micro-batches in flight */
        double memory = (resident + activation * alive / ((double)d * mb) + cut / d) / t;
        for (int r = 0; r < d; r++)
            for (int j = 0; j < t; j++)
                l->fits = l->fits &&
                          memory <= (double)pl_placer_room(p, devices[(s * d + r) * t + j]);
    }
    l->estimate = slowest * (mb + S - 1) / mb + reduce;
}

/* Micro-batch counts for p stages over a replica's batch of `batch` (whole: 1 only). */
static int micro_batch_counts(int stages, int batch, bool whole, int *counts)
{
    int n = 0, largest = 1;
    for (int mb = 1; mb <= MAX_MICRO_BATCHES && !whole; mb *= 2)
        if (batch % mb == 0) {
            largest = mb;
            if (stages > 1 && mb >= stages && mb <= 4 * stages)
                counts[n++] = mb;
        }
    if (n == 0)
        counts[n++] = stages > 1 ? largest : 1;
    return n;
}

static int by_estimate(const void *a, const void *b)
{
    const layout *x = a, *y = b;
    if (x->fits != y->fits)
        return x->fits ? -1 : 1;
    if (x->estimate != y->estimate)
        return x->estimate < y->estimate ? -1 : 1;
    if (x->tensor != y->tensor) /* then the fewer devices */
        return x->tensor - y->tensor;
    if (x->stages != y->stages)
        return x->stages - y->stages;
    if (x->replicas != y->replicas)
        return x->replicas - y->replicas;
    return x->micro_batches - y->micro_batches;
}

/* Every layout whose stages are all non-empty, estimated and sorted, best first; their
 * count in *n. */
static layout *make_layouts(megatron *m, int *n)
{
    const pl_placer *p = m->p;
    const pl_graph *g = p->graph;
    bool whole = pl_graph_whole_step_op(g) >= 0;
    int max_replicas = whole || p->no_replicas ? 1 : PL_MAX_REPLICAS;
    size_t cap = 64, count = 0;
    layout *ls = malloc(cap * sizeof *ls);
    int devices[PL_MAX_DEVICES];
    for (int t = 1; ls && t <= PL_MAX_SPLIT && t <= p->n_devices; t *= 2) {
        bool across;
        int groups = tensor_groups(p, t, devices, &across);
        for (int S = 1; ls && S <= groups && S <= p->n_groups; S++)
            for (int d = 1; ls && S * d <= groups && d <= max_replicas; d++) {
                if (g->batch_size % d != 0)
                    continue;
                int counts[8];
                int n_counts = micro_batch_counts(S, g->batch_size / d, whole, counts);
                for (int i = 0; ls && i < n_counts; i++) {
                    layout l = {.tensor = t, .stages = S, .replicas = d,
                                .micro_batches = counts[i], .across = across};
                    if (!assign_stages(m, &l, devices))
                        continue;
                    estimate(m, &l, devices);
                    if (count == cap) {
                        layout *grown = realloc(ls, 2 * cap * sizeof *ls);
                        if (!grown) {
                            free(ls);
                            ls = NULL;
                            break;
                        }
                        ls = grown;
                        cap *= 2;
                    }
                    ls[count++] = l;
                }
            }
    }
    *n = (int)count;
    if (ls && count > 1)
        qsort(ls, count, sizeof *ls, by_estimate);
    return ls;
}

/* The plan of a layout: every op of replica r's stage s split over its tensor group. */
static pl_status fill_plan(megatron *m, const layout *l, pl_plan *plan, pl_error *err)
{
    const pl_placer *p = m->p;
    int devices[PL_MAX_DEVICES], shards[PL_MAX_REPLICAS * PL_MAX_SPLIT];
    bool across;
    tensor_groups(p, l->tensor, devices, &across);
    assign_stages(m, l, devices);
    pl_status status = pl_plan_set_replicas(plan, l->replicas, err);
    for (int o = 0; status == PL_OK && o < p->n_groups; o++) {
        int s = m->stage[o];
        plan->stage[o] = s;
        for (int r = 0; r < l->replicas; r++)
            memcpy(&shards[r * l->tensor], &devices[(s * l->replicas + r) * l->tensor],
                   (size_t)l->tensor * sizeof *shards);
        status = pl_plan_split(plan, o, l->tensor, shards, err);
    }
    plan->n_stages = l->stages;
    plan->micro_batches = l->micro_batches;
    plan->schedule = l->stages > 1 ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE;
    return status;
}

/* A plan's simulated step (*seconds, -1 when it does not fit) and how far its fullest
 * device is over its memory, as a fraction of it (*over, 0 when it fits). A plan the
 * rewrite refuses is out: -1 and DBL_MAX. */
static pl_status score(const pl_placer *p, const pl_plan *plan, double *seconds, double *over,
                       pl_error *err)
{
    *seconds = -1;
    *over = DBL_MAX;
    pl_error quiet;
    pl_error_init(&quiet, NULL);
    pl_program *program = pl_program_new(p->graph, p->cluster, plan, &quiet);
    if (!program)
        return quiet.status == PL_EINPUT ? PL_OK : pl_error_set(err, quiet.status, NULL, "%s",
                                                                 quiet.text);
    *over = 0;
    for (int d = 0; d < p->n_devices; d++) {
        double capacity = (double)p->cluster->devices[d].memory_bytes;
        double o = ((double)program->memory[d].total - capacity) / capacity;
        *over = o > *over ? o : *over;
    }
    pl_status status = PL_OK;
    if (program->oom_device < 0) {
        pl_simulation sim;
        status = pl_simulate(program, p->cluster, p->model, &sim, NULL, NULL, err);
        if (status == PL_OK && sim.oom_device < 0)
            *seconds = sim.step_seconds;
    }
    pl_program_free(program);
    return status;
}

/* The layouts' plans simulated, best estimates first, and the one-device layout when it
 * is estimated to fit: the fastest that fits in `plan` (or, while none fits, the one that
 * misses by least). Returns PL_OK with *found false when
 * no layout could be made at all. */
static pl_status simulate_best(megatron *m, const layout *ls, int n, bool across,
                               pl_plan *plan, bool *found, double *best, pl_error *err)
{
    const pl_placer *p = m->p;
    pl_plan *trial = NULL;
    double fastest = -1, least_over = DBL_MAX, tasks = 0;
    pl_status status = PL_OK;
    *found = false;
    for (int i = 0, simulated = 0; status == PL_OK && i < n; i++) {
        const layout *l = &ls[i];
        if (l->across != across)
            continue;
        /* one device that holds the model (single's plan) is always tried */
        bool alone = l->fits && l->tensor * l->stages * l->replicas == 1;
        double program_tasks = (double)p->graph->n_ops * l->tensor * l->micro_batches *
                               l->replicas;
        if (!alone && (simulated >= (fastest < 0 ? MAX_TRIED : MAX_SIMULATED) ||
                       (simulated > 0 && tasks + program_tasks > SIMULATED_TASKS)))
            continue;
        pl_plan_free(trial);
        if (!(trial = pl_plan_new(p->graph, err)))
            return err ? err->status : PL_ENOMEM;
        status = fill_plan(m, l, trial, err);
        /* Sharded state is what fits when the replicated one does not; recomputing every
         * op's activations (Megatron-LM's full recomputation) when neither does. */
        int tries = l->replicas > 1 ? 3 : 2;
        for (int k = 0; status == PL_OK && k < tries; k++) {
            double seconds, over;
            trial->shard_optimizer_state = l->replicas > 1 && k > 0;
            for (int o = 0; o < trial->n_ops; o++)
                trial->recompute[o] = k == tries - 1 && !pl_placer_checkpoint(p, o);
            simulated++;
            tasks += program_tasks;
            status = score(p, trial, &seconds, &over, err);
            bool faster = seconds >= 0 && (fastest < 0 || seconds < fastest);
            bool nearer = fastest < 0 && seconds < 0 && over < least_over;
            if (status == PL_OK && (faster || nearer)) {
                fastest = seconds >= 0 ? seconds : fastest;
                least_over = seconds >= 0 ? 0 : over;
                *found = true;
                status = pl_plan_copy(plan, trial, err);
            }
            if (seconds >= 0)
                break;
        }
    }
    pl_plan_free(trial);
    *best = fastest;
    return status;
}

pl_status pl_place_megatron(const pl_placer *p, pl_plan *plan, pl_error *err)
{
    megatron m;
    int n = 0;
    layout *ls = NULL;
    pl_status status = megatron_init(&m, p) && (ls = make_layouts(&m, &n))
                           ? PL_OK : pl_placer_no_memory(err);
    bool found = false, found_across = false;
    double best = -1, best_across = -1;
    if (status == PL_OK)
        status = simulate_best(&m, ls, n, false, plan, &found, &best, err);
    /* tensor groups across the cluster's groups only where none inside them fits */
    pl_plan *wide = status == PL_OK && best < 0 ? pl_plan_new(p->graph, err) : NULL;
    if (wide)
        status = simulate_best(&m, ls, n, true, wide, &found_across, &best_across, err);
    if (status == PL_OK && found_across && (best_across >= 0 || !found))
        status = pl_plan_copy(plan, wide, err);
    found = found || found_across;
    pl_plan_free(wide);
    if (status == PL_OK && !found)
        status = pl_error_set(err, PL_EINPUT, NULL, "megatron: no layout of tensor groups, "
                              "stages and replicas can be made on these devices");
    free(ls);
    megatron_free(&m);
    return status;
}
