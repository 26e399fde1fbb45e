/* The baseline placers' table and what every algorithm shares: the groups' costs and
 * memory, the dataflow between groups, memory bookkeeping, and finishing a plan (memory
 * check, simulation, provenance). The algorithms live in baseline_*.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline_impl.h"
#include "kernels.h"
#include "op_times.h"
#include "recompute.h"
#include "simulate.h"

typedef struct baseline_entry {
    const char *name;
    pl_status (*place)(const pl_placer *p, pl_plan *plan, pl_error *err);
} baseline_entry;

static const baseline_entry algorithms[PL_BASELINE_COUNT] = {
    [PL_BASELINE_SINGLE] = {"single", pl_place_single},
    [PL_BASELINE_ROUND_ROBIN] = {"round-robin", pl_place_round_robin},
    [PL_BASELINE_EXPERT] = {"expert", pl_place_expert},
    [PL_BASELINE_METIS] = {"metis", pl_place_metis},
    [PL_BASELINE_ETF] = {"etf", pl_place_etf},
    [PL_BASELINE_SCT] = {"sct", pl_place_sct},
    [PL_BASELINE_PIPELINE_DP] = {"pipeline-dp", pl_place_pipeline_dp},
    [PL_BASELINE_DATA_PARALLEL] = {"data-parallel", pl_place_data_parallel},
    [PL_BASELINE_HYBRID] = {"hybrid", pl_place_hybrid},
    [PL_BASELINE_MEGATRON] = {"megatron", pl_place_megatron},
};

const char *pl_baseline_name(pl_baseline algorithm)
{
    return algorithm >= 0 && algorithm < PL_BASELINE_COUNT ? algorithms[algorithm].name : "?";
}

pl_baseline pl_baseline_from_name(const char *name)
{
    for (int a = 0; a < PL_BASELINE_COUNT; a++)
        if (name && strcmp(name, algorithms[a].name) == 0)
            return (pl_baseline)a;
    return PL_BASELINE_COUNT;
}

pl_plan *pl_baseline_place(pl_baseline algorithm, const pl_graph *graph,
                           const pl_cluster *cluster, const pl_cost_model *model,
                           uint64_t seed, pl_error *err)
{
    pl_simulation sim;
    return pl_baseline_place_simulated(algorithm, graph, cluster, model, seed, &sim, err);
}

pl_plan *pl_baseline_place_simulated(pl_baseline algorithm, const pl_graph *graph,
                                     const pl_cluster *cluster, const pl_cost_model *model,
                                     uint64_t seed, pl_simulation *sim, pl_error *err)
{
    if (algorithm < 0 || algorithm >= PL_BASELINE_COUNT) {
        pl_error_set(err, PL_EINPUT, NULL, "unknown baseline algorithm %d", (int)algorithm);
        return NULL;
    }
    pl_placer p;
    pl_plan *plan = NULL;
    if (pl_placer_init(&p, graph, cluster, model, seed, err) == PL_OK)
        plan = pl_placer_place(&p, algorithm, sim, err);
    pl_placer_clear(&p);
    return plan;
}

pl_plan *pl_placer_place_once(pl_placer *p, pl_baseline algorithm, pl_simulation *sim,
                              pl_error *err)
{
    if (algorithm != PL_BASELINE_SINGLE)
        pl_placer_drop_whole(p);
    pl_plan *plan = pl_placer_new_plan(p, err);
    pl_status status = plan ? PL_OK : err ? err->status : PL_ENOMEM;
    if (status == PL_OK)
        status = algorithms[algorithm].place(p, plan, err);
    if (status == PL_OK)
        status = pl_placer_finish(p, plan, algorithms[algorithm].name, sim, &p->misfit, err);
    if (status != PL_OK) {
        pl_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* "ALGORITHM: even with activations recomputed, WHY" from "ALGORITHM: WHY". */
static void say_recomputed(pl_error *err, const char *algorithm)
{
    size_t name = strlen(algorithm);
    bool named = strncmp(err->text, algorithm, name) == 0 &&
                 strncmp(err->text + name, ": ", 2) == 0;
    pl_error said = *err;
    said.status = PL_OK;
    pl_error_set(&said, err->status, err->path[0] ? err->path : NULL,
                 "%s: even with activations recomputed, %s", algorithm,
                 named ? err->text + name + 2 : err->text);
    *err = said;
}

pl_plan *pl_placer_place(pl_placer *p, pl_baseline algorithm, pl_simulation *sim,
                         pl_error *err)
{
    p->misfit = (pl_baseline_misfit){.device = -1};
    pl_error plain;
    pl_error_init(&plain, err ? err->source : NULL);
    pl_plan *plan = pl_placer_place_once(p, algorithm, sim, &plain);
    bool again = !plan && plain.status == PL_ENOFIT && algorithm != PL_BASELINE_MEGATRON &&
                 !p->recompute;
    if (plan || !again) {
        if (!plan && err)
            *err = plain;
        return plan;
    }
    if (pl_placer_recompute(p, err) != PL_OK)
        return NULL;
    if (!p->recompute) { /* nothing to recompute */
        if (err)
            *err = plain;
        return NULL;
    }
    plan = pl_placer_place_once(p, algorithm, sim, err);
    pl_placer_keep_all(p);
    if (!plan && err && err->status == PL_ENOFIT)
        say_recomputed(err, algorithms[algorithm].name);
    return plan;
}

void pl_baseline_flop_blocks(const pl_graph *graph, int n_blocks, int *block)
{
    double *flops = malloc((size_t)(graph->n_forward_ops ? graph->n_forward_ops : 1) *
                           sizeof *flops);
    if (!flops) { /* no weights to balance: equal counts of ops */
        for (int o = 0; o < graph->n_forward_ops; o++)
            block[o] = (int)((int64_t)o * n_blocks / graph->n_forward_ops);
        return;
    }
    for (int o = 0; o < graph->n_forward_ops; o++)
        flops[o] = graph->ops[o].flops;
    pl_weighted_blocks(flops, graph->n_forward_ops, n_blocks, block);
    free(flops);
}

void pl_weighted_blocks(const double *weight, int n, int n_blocks, int *block)
{
    pl_shared_blocks(weight, n, n_blocks, NULL, block);
}

void pl_shared_blocks(const double *weight, int n, int n_blocks, const double *share, int *block)
{
    double total = 0, done = 0, shares = 0;
    for (int i = 0; i < n; i++)
        total += weight[i];
    for (int b = 0; share && b < n_blocks; b++)
        shares += share[b];
    double end = share && shares > 0 ? share[0] / shares : 0; /* block b's end, a fraction */
    for (int i = 0, b = 0; i < n; i++) {
        double midpoint = total > 0 ? (done + 0.5 * weight[i]) / total : (i + 0.5) / n;
        if (share && shares > 0) {
            while (b < n_blocks - 1 && midpoint >= end)
                end += share[++b] / shares;
        } else {
            b = (int)(midpoint * n_blocks);
            b = b < n_blocks ? b : n_blocks - 1;
        }
        block[i] = b;
        done += weight[i];
    }
}

pl_status pl_placer_no_memory(pl_error *err)
{
    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

/* ---- the placer's view ------------------------------------------------------------------ */

/* An op at the full batch on every device, as pl_cost_task times an op task; devices of
 * the same thread count share the unpaced time. */
static void op_seconds(const pl_placer *p, const pl_op *op, double *out)
{
    const pl_cluster *c = p->cluster;
    double bytes = (double)(op->bytes_read + op->bytes_written);
    double profiled = pl_op_times_seconds(p->model->op_times, p->graph,
                                          (int)(op - p->graph->ops), 1);
    for (int d = 0; profiled >= 0 && d < c->n_devices; d++) /* measured elsewhere */
        out[d] = profiled;
    if (profiled >= 0)
        return;
    for (int d = 0; d < c->n_devices; d++) {
        const pl_device *device = &c->devices[d];
        int same = 0;
        while (same < d && (c->devices[same].threads != device->threads ||
                            c->devices[same].hardware != device->hardware))
            same++;
        double native = -1;
        if (same < d) { /* out[same] holds its unpaced time until the loop ends */
            native = out[same];
        } else {
            native = pl_cost_lookup(p->model,
                                    pl_op_signature(op, p->graph->tensors, device->threads));
            if (native < 0)
                native = pl_cost_op_on(p->model, op->kind,
                                       pl_kernel_route_of(op, p->graph->tensors), device,
                                       op->flops, bytes);
        }
        out[d] = native;
    }
    for (int d = 0; d < c->n_devices; d++) { /* then pacing, as the executor holds a kernel */
        const pl_device *device = &c->devices[d];
        if (device->flops_per_second > 0) {
            double paced = op->flops / device->flops_per_second;
            out[d] = pl_cost_paced(p->model, out[d], paced);
        }
    }
}

/* Per parameter and state tensor, its home group (its first reader's); -1 otherwise. */
static void find_homes(const pl_graph *g, int *home)
{
    for (int t = 0; t < g->n_tensors; t++)
        home[t] = -1;
    for (int o = 0; o < g->n_ops; o++)
        for (int j = 0; j < g->ops[o].n_inputs; j++) {
            int t = g->ops[o].inputs[j];
            pl_tensor_kind kind = g->tensors[t].kind;
            if ((kind == PL_TENSOR_PARAM || kind == PL_TENSOR_STATE) && home[t] < 0)
                home[t] = g->ops[o].group;
        }
}

/* The group a forward op's input comes from: an activation's producer, a shared
 * parameter's home (context: the homes); -1 for none, and for the op's own group, since
 * what stays inside a group is no edge. */
static int source_group(const void *context, const pl_graph *g, int op, int input)
{
    const int *home = context;
    int t = g->ops[op].inputs[input], source = -1;
    const pl_tensor *tensor = &g->tensors[t];
    if (tensor->kind == PL_TENSOR_ACTIVATION && tensor->producer >= 0)
        source = g->ops[tensor->producer].group;
    else if (tensor->kind == PL_TENSOR_PARAM)
        source = home[t];
    return source == op ? -1 : source;
}

/* The edges between groups, and the bytes each carries. */
static pl_status build_edges(pl_placer *p, const int *home, pl_error *err)
{
    const pl_graph *g = p->graph;
    pl_adjacency_options between_groups = {.forward_only = true, .source = source_group,
                                           .context = home};
    p->dataflow = pl_adjacency_new(g, &between_groups, err);
    if (!p->dataflow)
        return PL_ENOMEM;
    const pl_adjacency *a = p->dataflow;
    p->edge_bytes = malloc((size_t)(a->n_edges ? a->n_edges : 1) * sizeof *p->edge_bytes);
    if (!p->edge_bytes)
        return pl_placer_no_memory(err);
    for (int e = 0; e < a->n_edges; e++) {
        const pl_op *reader = &g->ops[a->edge_consumer[e]];
        p->edge_bytes[e] = pl_tensor_bytes(&g->tensors[reader->inputs[a->edge_input[e]]]);
    }
    return PL_OK;
}

/* Costs and memory per group; the reserve from the program of everything on device 0. */
static pl_status measure_groups(pl_placer *p, const int *home, pl_error *err)
{
    const pl_graph *g = p->graph;
    double one[PL_MAX_DEVICES];
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        op_seconds(p, op, one);
        for (int d = 0; d < p->n_devices; d++)
            p->seconds[(size_t)op->group * (size_t)p->n_devices + (size_t)d] += one[d];
        for (int j = 0; j < op->n_outputs; j++)
            if (g->tensors[op->outputs[j]].kind == PL_TENSOR_ACTIVATION)
                p->activation[op->group] += pl_tensor_bytes(&g->tensors[op->outputs[j]]);
    }
    int64_t resident = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (home[t] >= 0) {
            p->resident[home[t]] += pl_tensor_bytes(&g->tensors[t]);
            resident += pl_tensor_bytes(&g->tensors[t]);
        }
    for (int o = 0; o < p->n_groups; o++)
        p->flops[o] = g->ops[o].flops;
    pl_plan *plan = pl_plan_new(g, err);
    p->whole = plan ? pl_program_new(g, p->cluster, plan, err) : NULL;
    if (p->whole) {
        const pl_device_memory *m = &p->whole->memory[0];
        p->reserve = m->workspace + (m->resident > resident ? m->resident - resident : 0);
    }
    pl_plan_free(plan);
    return p->whole ? PL_OK : err ? err->status : PL_ENOMEM;
}

pl_status pl_placer_init(pl_placer *p, const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, uint64_t seed, pl_error *err)
{
    *p = (pl_placer){.graph = graph, .cluster = cluster, .model = model, .seed = seed,
                     .n_groups = graph->n_forward_ops, .n_devices = cluster->n_devices,
                     .misfit.device = -1};
    if (graph->n_forward_ops < 1 || graph->n_ops == graph->n_forward_ops)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "the baseline placers need a training graph (autodiff.h)");
    size_t n = (size_t)p->n_groups;
    p->seconds = calloc(n * (size_t)p->n_devices, sizeof *p->seconds);
    p->flops = calloc(n, sizeof *p->flops);
    p->activation = calloc(n, sizeof *p->activation);
    p->resident = calloc(n, sizeof *p->resident);
    int *home = malloc((size_t)graph->n_tensors * sizeof *home);
    pl_status status = p->seconds && p->flops && p->activation && p->resident && home
                           ? PL_OK : pl_placer_no_memory(err);
    if (status == PL_OK) {
        find_homes(graph, home);
        status = build_edges(p, home, err);
    }
    if (status == PL_OK)
        status = measure_groups(p, home, err);
    free(home);
    return status;
}

void pl_placer_clear(pl_placer *p)
{
    pl_placer_keep_all(p);
    free(p->seconds);
    free(p->flops);
    free(p->activation);
    free(p->resident);
    pl_adjacency_free(p->dataflow);
    free(p->edge_bytes);
    pl_program_free(p->whole);
    *p = (pl_placer){0};
}

void pl_placer_drop_whole(pl_placer *p)
{
    pl_program_free(p->whole);
    p->whole = NULL;
}

/* ---- the recomputing view ------------------------------------------------------------- */

bool pl_placer_checkpoint(const pl_placer *p, int group)
{
    int every = (int)ceil(sqrt((double)p->n_groups));
    return (group + 1) % every == 0;
}

/* The activations an op produces. */
static int64_t outputs(const pl_graph *g, int o)
{
    int64_t bytes = 0;
    for (int j = 0; j < g->ops[o].n_outputs; j++)
        if (g->tensors[g->ops[o].outputs[j]].kind == PL_TENSOR_ACTIVATION)
            bytes += pl_tensor_bytes(&g->tensors[g->ops[o].outputs[j]]);
    return bytes;
}

/* What a group's weight-gradient ops produce (held to the update) into kept[group]. */
static void weight_gradients(const pl_graph *g, int64_t *kept)
{
    for (int o = g->n_forward_ops; o < g->n_ops; o++)
        if (g->ops[o].weight_gradient)
            kept[g->ops[o].group] += outputs(g, o);
}

pl_status pl_placer_recompute(pl_placer *p, pl_error *err)
{
    if (p->recompute)
        return PL_OK;
    size_t n = (size_t)p->n_groups;
    bool *recompute = calloc(n, sizeof *recompute);
    int64_t *kept = calloc(n, sizeof *kept);
    if (!recompute || !kept) {
        free(recompute);
        free(kept);
        return pl_placer_no_memory(err);
    }
    weight_gradients(p->graph, kept);
    bool any = false;
    int64_t segment = 0, largest = 0, gradients = 0; /* a segment's recomputed outputs; the
                                                        most gradients a group passes back */
    for (int group = 0; group < p->n_groups; group++) {
        int64_t forward = outputs(p->graph, group);
        int64_t passed = p->activation[group] - forward - kept[group];
        gradients = passed > gradients ? passed : gradients;
        recompute[group] = !pl_placer_checkpoint(p, group) &&
                           pl_recompute_allowed(p->graph, group);
        kept[group] += recompute[group] ? 0 : forward;
        any = any || (recompute[group] && forward > 0);
        segment = recompute[group] ? segment + forward : 0;
        largest = segment > largest ? segment : largest;
    }
    if (!any) {
        free(recompute);
        free(kept);
        return PL_OK;
    }
    p->recompute = recompute;
    p->plain_activation = p->activation;
    p->activation = kept;
    p->recompute_reserve = largest + gradients;
    p->reserve += p->recompute_reserve;
    return PL_OK;
}

void pl_placer_keep_all(pl_placer *p)
{
    if (!p->recompute)
        return;
    free(p->activation);
    p->activation = p->plain_activation;
    p->plain_activation = NULL;
    p->reserve -= p->recompute_reserve;
    p->recompute_reserve = 0;
    free(p->recompute);
    p->recompute = NULL;
}

pl_plan *pl_placer_new_plan(const pl_placer *p, pl_error *err)
{
    pl_plan *plan = pl_plan_new(p->graph, err);
    for (int o = 0; plan && p->recompute && o < p->n_groups; o++)
        plan->recompute[o] = p->recompute[o];
    return plan;
}

int64_t pl_placer_room(const pl_placer *p, int device)
{
    return p->cluster->devices[device].memory_bytes - p->reserve;
}

double pl_placer_copy_seconds(const pl_placer *p, int from, int to, double bytes)
{
    if (from == to)
        return 0;
    return pl_cost_copy(p->model, pl_cluster_link(p->cluster, from, to), bytes);
}

double pl_placer_device_speed(const pl_placer *p, int device)
{
    double total = 0;
    for (int group = 0; group < p->n_groups; group++)
        total += pl_placer_seconds(p, group, device);
    return total > 0 ? 1 / total : 1;
}

double pl_placer_mean_seconds(const pl_placer *p, int group)
{
    double sum = 0;
    for (int d = 0; d < p->n_devices; d++)
        sum += pl_placer_seconds(p, group, d);
    return sum / p->n_devices;
}

/* ---- memory bookkeeping ------------------------------------------------------------------ */

bool pl_ledger_fits(const pl_ledger *l, const pl_placer *p, const int *device, int group,
                    int dev)
{
    const pl_adjacency *a = p->dataflow;
    int64_t need = pl_placer_memory(p, group);
    for (int e = a->producer_first[group]; e < a->producer_first[group + 1]; e++)
        if (device[a->producer[e]] != dev)
            need += p->edge_bytes[e];
    return l->used[dev] + need <= pl_placer_room(p, dev);
}

void pl_ledger_add(pl_ledger *l, const pl_placer *p, const int *device, int group, int dev)
{
    const pl_adjacency *a = p->dataflow;
    l->used[dev] += pl_placer_memory(p, group);
    for (int e = a->producer_first[group]; e < a->producer_first[group + 1]; e++) {
        int from = device[a->producer[e]];
        if (from != dev) { /* the copy here, and its gradient back there */
            l->used[dev] += p->edge_bytes[e];
            l->used[from] += p->edge_bytes[e];
        }
    }
}

void pl_ledger_of(pl_ledger *l, const pl_placer *p, const int *device)
{
    memset(l, 0, sizeof *l);
    for (int group = 0; group < p->n_groups; group++)
        pl_ledger_add(l, p, device, group, device[group]);
}

bool pl_placer_rebalance(const pl_placer *p, int *device)
{
    pl_ledger l;
    pl_ledger_of(&l, p, device);
    for (int moves = 0; moves <= p->n_groups; moves++) {
        int over = -1, roomiest = 0;
        for (int d = 0; d < p->n_devices; d++) {
            if (over < 0 && l.used[d] > pl_placer_room(p, d))
                over = d;
            if (pl_placer_room(p, d) - l.used[d] > pl_placer_room(p, roomiest) - l.used[roomiest])
                roomiest = d;
        }
        if (over < 0)
            return true;
        if (roomiest == over)
            return false;
        int group = p->n_groups - 1; /* the latest group that has memory to give */
        while (group >= 0 && (device[group] != over || pl_placer_memory(p, group) == 0))
            group--;
        if (group < 0)
            return false;
        device[group] = roomiest;
        pl_ledger_of(&l, p, device);
    }
    return false;
}

/* ---- finishing ---------------------------------------------------------------------------- */

/* The device furthest over its memory, by the fraction of it: -1 when every one fits. */
static int furthest_over(const pl_program *program, const pl_cluster *c, double *over)
{
    int furthest = -1;
    *over = 0;
    for (int d = 0; d < c->n_devices; d++) {
        double capacity = (double)c->devices[d].memory_bytes;
        double o = ((double)program->memory[d].total - capacity) / capacity;
        if (o > *over) {
            *over = o;
            furthest = d;
        }
    }
    return program->oom_device < 0 ? -1 : furthest >= 0 ? furthest : program->oom_device;
}

pl_status pl_placer_simulate(const pl_placer *p, const pl_plan *plan, double *seconds,
                             double *over, pl_error *err)
{
    pl_program *program = pl_program_new(p->graph, p->cluster, plan, err);
    if (!program)
        return err ? err->status : PL_ENOMEM;
    double by = 0;
    furthest_over(program, p->cluster, &by);
    if (over)
        *over = by;
    pl_simulation sim;
    pl_status status = pl_simulate(program, p->cluster, p->model, &sim, NULL, NULL, err);
    *seconds = sim.oom_device >= 0 ? -1 : sim.step_seconds;
    pl_program_free(program);
    return status;
}

/* Whether the plan is pl_plan_new's: everything on device 0, one stage, one replica, one
 * micro-batch, the default schedule. */
static bool all_on_device_0(const pl_plan *plan)
{
    if (plan->replicas != 1 || plan->n_stages != 1 || plan->micro_batches != 1 ||
        plan->schedule != PL_SCHEDULE_GPIPE || plan->defer_weight_gradients ||
        plan->shard_optimizer_state || pl_plan_rewrites_graph(plan))
        return false;
    for (int o = 0; o < plan->n_ops; o++)
        if (plan->device[o] != 0 || plan->stage[o] != 0)
            return false;
    return true;
}

/* Keeps in *misfit the plan's fullest device when it is nearer to fitting than what
 * *misfit holds (by the fraction of its memory over). */
static void note_misfit(const pl_plan *plan, const pl_cluster *c, int device,
                        const pl_program *program, pl_baseline_misfit *misfit)
{
    pl_baseline_misfit mine = {.device = device, .needs = program->memory[device].total,
                               .holds = c->devices[device].memory_bytes,
                               .recomputes = pl_plan_recomputes(plan)};
    for (int o = 0; o < plan->n_ops; o++)
        mine.splits = mine.splits || plan->split[o] > 1;
    if (misfit && (misfit->device < 0 || (double)mine.needs / (double)mine.holds <
                                             (double)misfit->needs / (double)misfit->holds))
        *misfit = mine;
}

pl_status pl_placer_finish(const pl_placer *p, pl_plan *plan, const char *algorithm,
                           pl_simulation *sim, pl_baseline_misfit *misfit, pl_error *err)
{
    pl_status status = pl_plan_check(plan, p->graph, p->cluster, err);
    bool whole = status == PL_OK && p->whole && all_on_device_0(plan);
    pl_program *program = whole ? p->whole
                          : status == PL_OK ? pl_program_new(p->graph, p->cluster, plan, err)
                                            : NULL;
    if (status == PL_OK && !program)
        return err ? err->status : PL_ENOMEM;
    if (status != PL_OK) /* the algorithm made a plan its own graph refuses: a bug */
        return err ? (err->status = PL_EINTERNAL) : PL_EINTERNAL;
    double over;
    int d = furthest_over(program, p->cluster, &over);
    if (d >= 0) {
        status = pl_error_set(err, PL_ENOFIT, NULL, "%s: no placement found that fits: device "
                              "\"%s\" needs %lld bytes and holds %lld", algorithm,
                              p->cluster->devices[d].name,
                              (long long)program->memory[d].total,
                              (long long)p->cluster->devices[d].memory_bytes);
        note_misfit(plan, p->cluster, d, program, misfit);
    }
    if (status == PL_OK)
        status = pl_simulate(program, p->cluster, p->model, sim, NULL, NULL, err);
    if (!whole)
        pl_program_free(program);
    if (status != PL_OK)
        return status;
    snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "%s", algorithm);
    plan->provenance.seed = p->seed;
    plan->provenance.predicted_seconds = sim->step_seconds;
    plan->provenance.measured_seconds = 0;
    return PL_OK;
}
