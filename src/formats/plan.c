/* Plans in memory: creating, checking, and deriving their partitions. */
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

const char *pl_plan_schedule_text(const pl_plan *plan)
{
    if (plan->schedule == PL_SCHEDULE_1F1B)
        return plan->defer_weight_gradients ? "1F1B, weight gradients deferred" : "1F1B";
    return plan->defer_weight_gradients ? "GPipe, weight gradients deferred" : "GPipe";
}

const char *pl_plan_replicas_text(const pl_plan *plan, char *buf, size_t cap)
{
    if (plan->replicas == 1)
        snprintf(buf, cap, "%s", "");
    else
        snprintf(buf, cap, "%d replicas%s, ", plan->replicas,
                 plan->shard_optimizer_state ? " (optimizer state sharded)" : "");
    return buf;
}

const char *pl_plan_split_text(const pl_plan *plan, char *buf, size_t cap)
{
    int ops = 0, fewest = PL_MAX_SPLIT, most = 1, recomputed = 0;
    for (int o = 0; o < plan->n_ops; o++) {
        recomputed += plan->recompute[o];
        if (plan->split[o] > 1) {
            ops++;
            fewest = plan->split[o] < fewest ? plan->split[o] : fewest;
            most = plan->split[o] > most ? plan->split[o] : most;
        }
    }
    int n = 0;
    if (ops == 0)
        n = snprintf(buf, cap, "%s", "");
    else if (fewest == most)
        n = snprintf(buf, cap, "%d op%s split over %d devices (tensor parallel), ", ops,
                     ops == 1 ? "" : "s", most);
    else
        n = snprintf(buf, cap, "%d ops split over %d to %d devices (tensor parallel), ", ops,
                     fewest, most);
    if (recomputed > 0 && n >= 0 && (size_t)n < cap)
        snprintf(buf + n, cap - (size_t)n, "activations of %d op%s recomputed, ", recomputed,
                 recomputed == 1 ? "" : "s");
    return buf;
}

pl_plan *pl_plan_new(const pl_graph *graph, pl_error *err)
{
    pl_plan *plan = calloc(1, sizeof *plan);
    size_t n = (size_t)(graph->n_forward_ops > 0 ? graph->n_forward_ops : 1);
    if (plan) {
        plan->device = calloc(n, sizeof *plan->device);
        plan->stage = calloc(n, sizeof *plan->stage);
        plan->split = malloc(n * sizeof *plan->split);
        plan->recompute = calloc(n, sizeof *plan->recompute);
    }
    if (!plan || !plan->device || !plan->stage || !plan->split || !plan->recompute) {
        pl_plan_free(plan);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (size_t o = 0; o < n; o++)
        plan->split[o] = 1;
    plan->n_ops = graph->n_forward_ops;
    plan->replicas = 1;
    plan->n_stages = 1;
    plan->micro_batches = 1;
    plan->model_hash = graph->hash;
    return plan;
}

void pl_plan_free(pl_plan *plan)
{
    if (!plan)
        return;
    free(plan->device);
    free(plan->stage);
    free(plan->split);
    free(plan->split_device);
    free(plan->recompute);
    free(plan);
}

pl_status pl_plan_set_replicas(pl_plan *plan, int replicas, pl_error *err)
{
    if (replicas < 1 || replicas > PL_MAX_REPLICAS)
        return pl_error_set(err, PL_EINPUT, "/replicas", "%d replicas: 1 to %d allowed",
                            replicas, PL_MAX_REPLICAS);
    size_t n = (size_t)(plan->n_ops > 0 ? plan->n_ops : 1);
    int *device = realloc(plan->device, (size_t)replicas * n * sizeof *device);
    if (!device)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int r = plan->replicas; r < replicas; r++)
        memcpy(device + (size_t)r * n, device, n * sizeof *device);
    plan->device = device;
    if (plan->split_device) { /* a new replica's shards are replica 0's */
        size_t per = n * PL_MAX_SPLIT;
        int *shards = realloc(plan->split_device, (size_t)replicas * per * sizeof *shards);
        if (!shards)
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        for (int r = plan->replicas; r < replicas; r++)
            memcpy(shards + (size_t)r * per, shards, per * sizeof *shards);
        plan->split_device = shards;
    }
    plan->replicas = replicas;
    return PL_OK;
}

static size_t split_entries(const pl_plan *plan)
{
    return (size_t)plan->replicas * (size_t)(plan->n_ops > 0 ? plan->n_ops : 1) * PL_MAX_SPLIT;
}

pl_status pl_plan_split(pl_plan *plan, int o, int k, const int *devices, pl_error *err)
{
    if (k < 1 || k > PL_MAX_SPLIT)
        return pl_error_set(err, PL_EINPUT, NULL, "an op split over %d devices: 1 to %d "
                            "allowed", k, PL_MAX_SPLIT);
    for (int r = 0; r < plan->replicas; r++)
        for (int a = 0; a < k; a++)
            for (int b = 0; b < a; b++)
                if (devices[r * k + a] == devices[r * k + b])
                    return pl_error_set(err, PL_EINPUT, NULL, "a split op's shards need "
                                        "devices of their own; device %d holds shards %d "
                                        "and %d", devices[r * k + a], b, a);
    if (k > 1 && !plan->split_device) {
        plan->split_device = calloc(split_entries(plan), sizeof *plan->split_device);
        if (!plan->split_device)
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    plan->split[o] = k;
    for (int r = 0; r < plan->replicas; r++) {
        pl_plan_replica(plan, r)[o] = devices[r * k];
        for (int s = 0; k > 1 && s < k; s++)
            plan->split_device[((size_t)r * (size_t)plan->n_ops + (size_t)o) * PL_MAX_SPLIT +
                               (size_t)s] = devices[r * k + s];
    }
    return PL_OK;
}

int pl_plan_ops_on(const pl_plan *plan, int r, int d)
{
    int ops = 0;
    for (int o = 0; o < plan->n_ops; o++) {
        bool on = false;
        for (int s = 0; s < plan->split[o]; s++)
            on = on || pl_plan_shard_device(plan, r, o, s) == d;
        ops += on;
    }
    return ops;
}

bool pl_plan_rewrites_graph(const pl_plan *plan)
{
    for (int o = 0; o < plan->n_ops; o++)
        if (plan->split[o] > 1 || plan->recompute[o])
            return true;
    return false;
}

pl_status pl_plan_copy(pl_plan *to, const pl_plan *from, pl_error *err)
{
    if (to->replicas != from->replicas &&
        pl_plan_set_replicas(to, from->replicas, err) != PL_OK)
        return err ? err->status : PL_ENOMEM;
    memcpy(to->device, from->device,
           (size_t)from->replicas * (size_t)from->n_ops * sizeof *to->device);
    memcpy(to->stage, from->stage, (size_t)from->n_ops * sizeof *to->stage);
    memcpy(to->split, from->split, (size_t)from->n_ops * sizeof *to->split);
    memcpy(to->recompute, from->recompute, (size_t)from->n_ops * sizeof *to->recompute);
    if (from->split_device && !to->split_device &&
        !(to->split_device = malloc(split_entries(from) * sizeof *to->split_device)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (from->split_device)
        memcpy(to->split_device, from->split_device,
               split_entries(from) * sizeof *to->split_device);
    else if (to->split_device) {
        free(to->split_device);
        to->split_device = NULL;
    }
    pl_plan_copy_settings(to, from);
    return PL_OK;
}

void pl_plan_copy_settings(pl_plan *to, const pl_plan *from)
{
    to->n_stages = from->n_stages;
    to->micro_batches = from->micro_batches;
    to->schedule = from->schedule;
    to->defer_weight_gradients = from->defer_weight_gradients;
    to->shard_optimizer_state = from->shard_optimizer_state;
    to->model_hash = from->model_hash;
    to->provenance = from->provenance;
}

pl_status pl_plan_check(const pl_plan *plan, const pl_graph *graph, const pl_cluster *cluster,
                        pl_error *err)
{
    if (plan->n_ops != graph->n_forward_ops)
        return pl_error_set(err, PL_EINPUT, NULL, "the plan places %d ops, the model has %d",
                            plan->n_ops, graph->n_forward_ops);
    if (plan->replicas < 1 || plan->replicas > PL_MAX_REPLICAS)
        return pl_error_set(err, PL_EINPUT, "/replicas", "%d replicas: 1 to %d allowed",
                            plan->replicas, PL_MAX_REPLICAS);
    if (plan->micro_batches < 1 || graph->batch_size % plan->micro_batches != 0)
        return pl_error_set(err, PL_EINPUT, "/micro_batches", "%d micro-batches do not divide "
                            "the batch of %d", plan->micro_batches, graph->batch_size);
    if (graph->batch_size % (plan->replicas * plan->micro_batches) != 0)
        return pl_error_set(err, PL_EINPUT, "/replicas", "%d replicas of %d micro-batches do "
                            "not divide the batch of %d", plan->replicas, plan->micro_batches,
                            graph->batch_size);
    char reason[PL_MAX_NAME + 256];
    if (plan->micro_batches > 1 && pl_graph_whole_step_reason(graph, reason, sizeof reason))
        return pl_error_set(err, PL_EINPUT, "/micro_batches", "%d micro-batches, but %s",
                            plan->micro_batches, reason);
    if (plan->replicas > 1 && pl_graph_whole_step_reason(graph, reason, sizeof reason))
        return pl_error_set(err, PL_EINPUT, "/replicas", "%d replicas, but %s",
                            plan->replicas, reason);
    if (plan->shard_optimizer_state && plan->replicas == 1)
        return pl_error_set(err, PL_EINPUT, "/optimizer_state", "a sharded optimizer state "
                            "needs replicas to share it; the plan has one");
    int stages = 0;
    for (int o = 0; o < plan->n_ops; o++) {
        const char *name = graph->ops[o].name;
        for (int r = 0; r < plan->replicas; r++) {
            char replica[32] = "";
            if (plan->replicas > 1)
                snprintf(replica, sizeof replica, " in replica %d", r);
            for (int s = 0; s < plan->split[o]; s++) {
                int d = pl_plan_shard_device(plan, r, o, s);
                if (d < 0 || d >= cluster->n_devices)
                    return pl_error_set(err, PL_EINPUT, NULL, "op \"%s\" is placed on device "
                                        "%d%s; the cluster has %d", name, d, replica,
                                        cluster->n_devices);
            }
        }
        if (plan->split[o] < 1 || plan->split[o] > PL_MAX_SPLIT ||
            (plan->split[o] > 1 && !plan->split_device))
            return pl_error_set(err, PL_EINPUT, NULL, "op \"%s\" is split over %d devices: "
                                "1 to %d allowed", name, plan->split[o], PL_MAX_SPLIT);
        if (plan->stage[o] < 0)
            return pl_error_set(err, PL_EINPUT, NULL, "op \"%s\" has stage %d", name,
                                plan->stage[o]);
        if (plan->stage[o] >= plan->n_ops) /* stages have no gaps: one op each at most */
            return pl_error_set(err, PL_EINPUT, NULL, "op \"%s\" has stage %d; a plan of %d "
                                "ops has at most %d stages", name, plan->stage[o], plan->n_ops,
                                plan->n_ops);
        if (plan->stage[o] >= stages)
            stages = plan->stage[o] + 1;
        const pl_op *op = &graph->ops[o];
        for (int i = 0; i < op->n_inputs; i++) {
            int producer = graph->tensors[op->inputs[i]].producer;
            if (producer >= 0 && plan->stage[producer] > plan->stage[o])
                return pl_error_set(err, PL_EINPUT, NULL, "op \"%s\" (stage %d) reads \"%s\" "
                                    "from op \"%s\" of a later stage (%d): stages must follow "
                                    "the dataflow", name, plan->stage[o],
                                    graph->tensors[op->inputs[i]].name,
                                    graph->ops[producer].name, plan->stage[producer]);
        }
    }
    bool *used = calloc((size_t)(stages > 0 ? stages : 1), sizeof *used);
    if (!used)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int o = 0; o < plan->n_ops; o++)
        used[plan->stage[o]] = true;
    int missing = -1;
    for (int s = 0; s < stages && missing < 0; s++)
        if (!used[s])
            missing = s;
    free(used);
    if (missing >= 0)
        return pl_error_set(err, PL_EINPUT, NULL, "stage %d has no op: stages are numbered "
                            "0 to %d without gaps", missing, stages - 1);
    if (stages != plan->n_stages)
        return pl_error_set(err, PL_EINTERNAL, NULL, "the plan counts %d stages, its ops %d",
                            plan->n_stages, stages);
    return PL_OK;
}

/* ---- partitions ------------------------------------------------------------------------ */

void pl_partitions_free(pl_partitions *p)
{
    if (!p)
        return;
    free(p->op_device);
    free(p->op_stage);
    free(p->first_op);
    free(p->ops);
    free(p->tensor_device);
    free(p->transfers);
    free(p);
}

/* Where each tensor is: with its producer; a trained parameter and its states with its
 * update (gather_updates), other states and frozen parameters with their first reader;
 * inputs and constants nowhere. */
static void locate_tensors(const pl_graph *g, pl_partitions *p)
{
    for (int t = 0; t < g->n_tensors; t++)
        p->tensor_device[t] = g->tensors[t].producer >= 0 ? p->op_device[g->tensors[t].producer]
                                                          : -1;
    for (int o = g->n_forward_ops; o < g->n_ops; o++)
        if (pl_graph_updated_param(g, o) >= 0)
            for (int i = 0; i < g->ops[o].n_inputs; i++) {
                int t = g->ops[o].inputs[i];
                pl_tensor_kind kind = g->tensors[t].kind;
                if (kind == PL_TENSOR_PARAM || kind == PL_TENSOR_STATE)
                    p->tensor_device[t] = p->op_device[o];
            }
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            int t = g->ops[o].inputs[i];
            pl_tensor_kind kind = g->tensors[t].kind;
            if ((kind == PL_TENSOR_PARAM || kind == PL_TENSOR_STATE) && p->tensor_device[t] < 0)
                p->tensor_device[t] = p->op_device[o];
        }
}

/* A tensor crosses from where it is to each other device that reads it, once. Devices
 * number at most 64 (cluster.h): one bit each marks where a tensor has been sent. */
static bool collect_transfers(const pl_graph *g, pl_partitions *p)
{
    int cap = 64;
    p->transfers = malloc((size_t)cap * sizeof *p->transfers);
    uint64_t *sent = calloc((size_t)g->n_tensors, sizeof *sent);
    bool ok = p->transfers && sent;
    for (int o = 0; ok && o < g->n_ops; o++) {
        int to = p->op_device[o];
        for (int i = 0; ok && i < g->ops[o].n_inputs; i++) {
            int t = g->ops[o].inputs[i], from = p->tensor_device[t];
            uint64_t bit = UINT64_C(1) << to;
            if (from < 0 || from == to || (sent[t] & bit))
                continue;
            sent[t] |= bit;
            if (!(ok = pl_grow(&p->transfers, &cap, p->n_transfers + 1, sizeof *p->transfers,
                               16)))
                break;
            p->transfers[p->n_transfers++] = (pl_transfer){t, from, to};
        }
    }
    free(sent);
    return ok;
}

/* A parameter's accumulations and update run where the fewest bytes cross a step (the
 * first reader's device on a tie): each accumulation on another device sends its
 * contribution over, a whole gradient per micro-batch (or a batch's rows, for an embedding
 * table), and the parameter goes out once a step to each other device that reads it. With
 * the first reader's device alone, an unrolled RNN's output layer whose first step sits on
 * one device and its other steps on others would send nearly every step's gradient across
 * per micro-batch. */
static bool gather_updates(const pl_plan *plan, const pl_graph *g, pl_partitions *p)
{
    int n = p->n_devices, n_params = 0;
    int *slot = malloc((size_t)g->n_tensors * sizeof *slot); /* a parameter's index here */
    for (int t = 0; slot && t < g->n_tensors; t++)
        slot[t] = g->tensors[t].kind == PL_TENSOR_PARAM ? n_params++ : -1;
    double *sent = calloc((size_t)n_params * (size_t)n + 1, sizeof *sent);
    uint64_t *readers = calloc((size_t)n_params + 1, sizeof *readers);
    int *home = malloc(((size_t)n_params + 1) * sizeof *home);
    bool ok = slot && sent && readers && home;
    for (int k = 0; ok && k < n_params; k++)
        home[k] = -1;
    for (int o = 0; ok && o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        int t = pl_graph_updated_param(g, o);
        if (t < 0) {
            for (int i = 0; i < op->n_inputs; i++)
                if (slot[op->inputs[i]] >= 0)
                    readers[slot[op->inputs[i]]] |= UINT64_C(1) << p->op_device[o];
            continue;
        }
        int k = slot[t];
        if (home[k] < 0)
            home[k] = p->op_device[o]; /* the first reader's, as every op of its group */
        const pl_tensor *c = &g->tensors[op->inputs[1]];
        if (op->phase != PL_PHASE_UPDATE && c->producer >= 0)
            sent[(size_t)k * n + p->op_device[c->producer]] +=
                (double)pl_tensor_bytes(c) *
                (c->batch_axis != PL_NO_BATCH ? 1 : plan->micro_batches);
    }
    for (int t = 0; ok && t < g->n_tensors; t++) {
        int k = slot[t];
        if (k < 0 || home[k] < 0) /* not a parameter, or frozen: no update */
            continue;
        double bytes = (double)pl_tensor_bytes(&g->tensors[t]), total = 0, best = INFINITY;
        for (int d = 0; d < n; d++)
            total += sent[(size_t)k * n + d];
        for (int j = 0; j <= n; j++) { /* the first reader's first, so that it wins a tie */
            int d = j == 0 ? home[k] : j - 1;
            double crossing = total - sent[(size_t)k * n + d];
            for (int r = 0; r < n; r++)
                crossing += r != d && (readers[k] >> r & 1) ? bytes : 0;
            if (crossing < best)
                best = crossing, home[k] = d;
        }
    }
    for (int o = g->n_forward_ops; ok && o < g->n_ops; o++) {
        int t = pl_graph_updated_param(g, o);
        if (t >= 0)
            p->op_device[o] = home[slot[t]];
    }
    free(slot);
    free(sent);
    free(readers);
    free(home);
    return ok;
}

pl_partitions *pl_partitions_new(const pl_plan *plan, const pl_graph *g, int n_devices,
                                 pl_error *err)
{
    return pl_partitions_of_replica(plan, 0, g, n_devices, err);
}

pl_partitions *pl_partitions_of_replica(const pl_plan *plan, int r, const pl_graph *g,
                                        int n_devices, pl_error *err)
{
    const int *device = pl_plan_replica(plan, r);
    pl_partitions *p = calloc(1, sizeof *p);
    size_t ops = (size_t)g->n_ops, tensors = (size_t)g->n_tensors;
    if (p) {
        p->n_devices = n_devices;
        p->op_device = malloc(ops * sizeof *p->op_device);
        p->op_stage = malloc(ops * sizeof *p->op_stage);
        p->first_op = calloc((size_t)n_devices + 1, sizeof *p->first_op);
        p->ops = malloc(ops * sizeof *p->ops);
        p->tensor_device = malloc(tensors * sizeof *p->tensor_device);
    }
    if (!p || !p->op_device || !p->op_stage || !p->first_op || !p->ops || !p->tensor_device) {
        pl_partitions_free(p);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (int o = 0; o < g->n_ops; o++) { /* every op goes with its group's forward op */
        p->op_device[o] = device[g->ops[o].group];
        p->op_stage[o] = plan->stage[g->ops[o].group];
    }
    if (!gather_updates(plan, g, p)) {
        pl_partitions_free(p);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (int o = 0; o < g->n_ops; o++)
        p->first_op[p->op_device[o] + 1]++;
    for (int d = 0; d < n_devices; d++)
        p->first_op[d + 1] += p->first_op[d];
    int *fill = malloc((size_t)n_devices * sizeof *fill);
    if (!fill) {
        pl_partitions_free(p);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    memcpy(fill, p->first_op, (size_t)n_devices * sizeof *fill);
    for (int o = 0; o < g->n_ops; o++) /* stable: topological within each device */
        p->ops[fill[p->op_device[o]]++] = o;
    free(fill);
    locate_tensors(g, p);
    if (!collect_transfers(g, p)) {
        pl_partitions_free(p);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    return p;
}
