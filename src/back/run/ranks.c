/* The executor as one rank among processes (executor.h: pl_executor_set_comm; comm.h):
 * each task's part here, gathering the host buffers, starting a step together and
 * combining its figures, and the leader's word. A transfer's two ends are the remote
 * device's (device_remote.c); leading and following, executor_lead.c's. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "executor_impl.h"

static int rank_of(const pl_executor *ex, int device)
{
    return ex->c->devices[device].rank;
}

/* ---- gathering --------------------------------------------------------------------------- */

/* Across ranks: each parameter and state tensor from the rank of its home device, then
 * each shard of sharded state from the rank that updated it. */
pl_status executor_gather_host(pl_executor *ex, pl_error *err)
{
    const pl_program *p = ex->program;
    const pl_graph *g = p->graph;
    pl_status status = PL_OK;
    for (int t = 0; t < g->n_tensors && status == PL_OK; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        int home = p->partitions->tensor_device[t];
        if ((tensor->kind == PL_TENSOR_PARAM || tensor->kind == PL_TENSOR_STATE) && home >= 0)
            status = pl_comm_broadcast(ex->comm, ex->program_host[t],
                                       (size_t)pl_tensor_bytes(tensor), rank_of(ex, home), err);
    }
    for (int c = 1; ex->copies_made && c < p->n_copies && status == PL_OK; c++)
        if (p->copy_is_shard[c]) { /* the shard itself: the host buffer was just replaced */
            size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
            char *host = (char *)ex->program_host[p->copy_tensor[c]] + offset;
            status = pl_comm_broadcast(ex->comm, ex->copies[c] ? ex->copies[c] : host, bytes,
                                       rank_of(ex, p->copy_device[c]), err);
            if (ex->copies[c] && status == PL_OK)
                memcpy(host, ex->copies[c], bytes);
        }
    return status;
}

static role role_on(const pl_executor *ex, int i, int rank)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    if (task->kind == PL_TASK_OP)
        return rank_of(ex, task->resource) == rank ? ROLE_LOCAL : ROLE_NONE;
    int from = rank_of(ex, p->transfers[task->transfer].from);
    int to = rank_of(ex, p->transfers[task->transfer].to);
    if (from == to)
        return from == rank ? ROLE_LOCAL : ROLE_NONE;
    return from == rank ? ROLE_SEND : to == rank ? ROLE_RECEIVE : ROLE_NONE;
}

/* Which part of each task runs here, and the dependencies it waits for here. A
 * dependency between tasks of two ranks must be one of a transfer's, kept by the end on
 * that rank: the sending end waits for what writes the range it sends, the receiving end
 * for what still reads where the range lands, and the range lands only once both have. */
pl_status executor_assign_roles(pl_executor *ex, pl_error *err)
{
    const pl_program *p = ex->program;
    size_t n = (size_t)p->n_tasks;
    ex->program_tasks = p->n_tasks;
    ex->roles = malloc(n + 1);
    ex->deps = calloc(n + 1, sizeof *ex->deps);
    ex->parts_left = calloc(n + 1, sizeof *ex->parts_left);
    ex->deadlines = calloc(n + 1, sizeof *ex->deadlines);
    ex->staging = calloc(n + 1, sizeof *ex->staging);
    if (!ex->roles || !ex->deps || !ex->parts_left || !ex->deadlines || !ex->staging)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    ex->local_parts = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        ex->roles[i] = (signed char)(ex->comm ? role_on(ex, i, ex->rank) : ROLE_LOCAL);
        ex->local_parts += ex->roles[i] != ROLE_NONE;
        int64_t bytes = task->kind == PL_TASK_OP ? 0 : pl_task_bytes(p, task);
        if ((ex->roles[i] == ROLE_SEND || ex->roles[i] == ROLE_RECEIVE) && bytes > INT_MAX)
            return pl_error_set(err, PL_EINPUT, NULL, "a transfer of %" PRId64 " bytes between "
                                "processes: MPI sends at most %d", bytes, INT_MAX);
        if (ex->roles[i] == ROLE_RECEIVE && task->kind == PL_TASK_REDUCE &&
            !(ex->staging[i] = aligned_alloc(64, ((size_t)bytes + 63) / 64 * 64 + 64)))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        for (int e = task->first_succ; e < task->first_succ + task->n_succ; e++) {
            int next = p->succ[e];
            if (ex->roles[next] == ROLE_NONE)
                continue;
            if (ex->roles[i] != ROLE_NONE) {
                ex->deps[next]++;
                continue;
            }
            const pl_task *end = &p->tasks[next];
            const pl_transfer *transfer = end->transfer >= 0 ? &p->transfers[end->transfer] : NULL;
            int other = ex->roles[next] == ROLE_RECEIVE ? rank_of(ex, transfer->from)
                        : ex->roles[next] == ROLE_SEND  ? rank_of(ex, transfer->to)
                                                        : -1;
            if (other < 0 || role_on(ex, i, other) == ROLE_NONE) {
                char first[256], then[256];
                pl_task_name(p, task, first, sizeof first);
                pl_task_name(p, end, then, sizeof then);
                return pl_error_set(err, PL_EIO, NULL, "the program orders %s before %s, on "
                                    "another rank, without a transfer", first, then);
            }
        }
    }
    return PL_OK;
}

/* ---- the leader's word ------------------------------------------------------------------- */

/* A plan as the leader sends it: its shape, then its devices and stages, then its split
 * ops' devices where it splits some, and its recomputed ops. */
enum { PLAN_FIELDS = 8 };

pl_status executor_tell(pl_executor *ex, command what, int64_t step, pl_error *err)
{
    int64_t message[2] = {what, step};
    return pl_comm_broadcast(ex->comm, message, sizeof message, 0, err);
}

/* The plan's devices, stages, splits and recomputed ops, from the leader into every
 * follower's plan of its shape (whose split_device is there when the leader's is). */
static pl_status broadcast_placement(pl_executor *ex, pl_plan *plan, pl_error *err)
{
    size_t ops = (size_t)plan->n_ops, placed = (size_t)plan->replicas * ops;
    pl_status status = pl_comm_broadcast(ex->comm, plan->device, placed * sizeof *plan->device,
                                         0, err);
    if (status == PL_OK)
        status = pl_comm_broadcast(ex->comm, plan->stage, ops * sizeof *plan->stage, 0, err);
    if (status == PL_OK)
        status = pl_comm_broadcast(ex->comm, plan->split, ops * sizeof *plan->split, 0, err);
    if (status == PL_OK && plan->split_device)
        status = pl_comm_broadcast(ex->comm, plan->split_device,
                                   placed * PL_MAX_SPLIT * sizeof *plan->split_device, 0, err);
    if (status == PL_OK)
        status = pl_comm_broadcast(ex->comm, plan->recompute, ops * sizeof *plan->recompute,
                                   0, err);
    return status;
}

pl_status executor_send_plan(pl_executor *ex, const pl_plan *plan, pl_error *err)
{
    int64_t fields[PLAN_FIELDS] = {plan->n_ops, plan->replicas, plan->n_stages,
                                   plan->micro_batches, plan->schedule,
                                   plan->defer_weight_gradients, plan->shard_optimizer_state,
                                   plan->split_device != NULL};
    pl_status status = pl_comm_broadcast(ex->comm, fields, sizeof fields, 0, err);
    /* the root only reads */
    return status != PL_OK ? status : broadcast_placement(ex, (pl_plan *)plan, err);
}

pl_plan *executor_receive_plan(pl_executor *ex, pl_error *err)
{
    int64_t fields[PLAN_FIELDS];
    if (pl_comm_broadcast(ex->comm, fields, sizeof fields, 0, err) != PL_OK)
        return NULL;
    pl_plan *plan = pl_plan_new(ex->g, err);
    if (plan && (fields[0] != plan->n_ops ||
                 pl_plan_set_replicas(plan, (int)fields[1], err) != PL_OK)) {
        if (fields[0] != plan->n_ops)
            pl_error_set(err, PL_EIO, NULL, "rank 0 places another model");
        pl_plan_free(plan);
        return NULL;
    }
    if (!plan)
        return NULL;
    plan->n_stages = (int)fields[2];
    plan->micro_batches = (int)fields[3];
    plan->schedule = (pl_schedule)fields[4];
    plan->defer_weight_gradients = fields[5] != 0;
    plan->shard_optimizer_state = fields[6] != 0;
    if (fields[7] && !(plan->split_device = calloc((size_t)plan->replicas *
                                                   (size_t)plan->n_ops * PL_MAX_SPLIT,
                                                   sizeof *plan->split_device))) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_plan_free(plan);
        return NULL;
    }
    if (broadcast_placement(ex, plan, err) != PL_OK) {
        pl_plan_free(plan);
        return NULL;
    }
    return plan;
}

/* ---- steps ------------------------------------------------------------------------------- */

pl_status executor_begin_ranks_step(pl_executor *ex, pl_error *err)
{
    if (!ex->comm)
        return PL_OK;
    const pl_program *p = ex->program;
    for (int i = 0; i < p->n_tasks; i++) { /* what another rank runs is filled in after */
        ex->starts[i] = INFINITY;
        ex->ends[i] = -INFINITY;
    }
    for (int k = 0; k < p->micro_batches; k++)
        ex->losses[k] = -INFINITY;
    return pl_comm_barrier(ex->comm, err);
}

/* After a step on every rank: the slowest rank's time, each micro-batch's loss from the
 * rank that computed it, whether any was cut short or interrupted, and every task's times
 * (a transfer's start from its sender, its end from its receiver). The ranks leave the
 * barrier at different moments; on one host, where they share the clock, every time is
 * taken from the earliest rank's start, so that a transfer ends no earlier than it
 * started on native devices too (no pacing holds its end). Across hosts, each rank's own. */
pl_status executor_end_ranks_step(pl_executor *ex, pl_error *err)
{
    if (!ex->comm)
        return PL_OK;
    const pl_program *p = ex->program;
    int m = p->micro_batches;
    double *values = ex->combined;
    double origin = pl_comm_shared_clock(ex->comm) ? ex->step_start : 0;
    values[0] = ex->step_seconds;
    values[1] = atomic_load(&ex->cut_short) ? 1 : 0;
    values[2] = executor_flagged(ex) ? 1 : 0;
    values[3] = -origin; /* the earliest start, as a maximum */
    double *losses = values + 4, *starts = losses + m, *ends = starts + p->n_tasks;
    for (int k = 0; k < m; k++)
        losses[k] = ex->losses[k];
    for (int i = 0; i < p->n_tasks; i++) { /* a receiving end records no start */
        starts[i] = -(ex->starts[i] + origin);
        ends[i] = ex->roles[i] == ROLE_SEND ? -INFINITY : ex->ends[i] + origin;
    }
    pl_status status = pl_comm_max(ex->comm, values, 4 + m + 2 * p->n_tasks, err);
    if (status != PL_OK)
        return status;
    ex->step_seconds = values[0];
    atomic_store(&ex->cut_short, values[1] > 0);
    ex->interrupted = ex->interrupted || values[2] > 0;
    double earliest = -values[3];
    for (int k = 0; k < m; k++)
        ex->losses[k] = (float)losses[k];
    for (int i = 0; i < p->n_tasks; i++) {
        ex->starts[i] = -starts[i] - earliest;
        ex->ends[i] = ends[i] - earliest;
    }
    return PL_OK;
}
