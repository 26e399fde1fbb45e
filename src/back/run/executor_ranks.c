/* The executor as one rank among processes (executor.h: pl_executor_set_comm; comm.h):
 * each task's part here, the two ends of a transfer between ranks, gathering the host
 * buffers, combining a step's figures, and rank 0 leading the others. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "executor_impl.h"

/* ---- transfers between ranks ------------------------------------------------------------- */

/* A transfer between ranks is two messages, tagged by its task: the time its link's
 * modelled time ends, then the range itself. Ranks on one host share CLOCK_MONOTONIC, so
 * the sender posts both at once and the receiver holds the range until that time, as a
 * paced link in one process does; across hosts the sender holds it and then sends
 * (the declared time, then MPI's). */
static int header_tag(int i)
{
    return 2 * i;
}

static int data_tag(int i)
{
    return 2 * i + 1;
}

static int rank_of(const pl_executor *ex, int device)
{
    return ex->c->devices[device].rank;
}

bool executor_device_here(const pl_executor *ex, int d)
{
    return !ex->comm || rank_of(ex, d) == ex->rank;
}

static void fail_comm(const pl_executor *ex, const pl_error *err)
{
    fprintf(stderr, "placer: rank %d: %s\n", ex->rank, err->text);
    pl_comm_abort(ex->comm, 1);
}

/* One part of a send or receive done: the last finishes the task. */
static void part_done(void *context, int i)
{
    pl_executor *ex = context;
    if (atomic_fetch_sub_explicit(&ex->parts_left[i], 1, memory_order_acq_rel) != 1)
        return;
    ex->ends[i] = pl_now() - ex->step_start;
    executor_finish_task(ex, i);
}

static void received(void *context, int i)
{
    pl_executor *ex = context;
    if (atomic_fetch_sub_explicit(&ex->parts_left[i], 1, memory_order_acq_rel) != 1)
        return;
    const pl_task *task = &ex->program->tasks[i];
    if (task->kind == PL_TASK_REDUCE)
        executor_add_floats(ex->ptrs[task->first_ref + 1], ex->staging[i],
                            pl_task_bytes(ex->program, task) / (int64_t)sizeof(float));
    pl_error err;
    atomic_store_explicit(&ex->parts_left[i], 1, memory_order_relaxed);
    if (ex->deadlines[i] > pl_now() && !(ex->interrupt && *ex->interrupt)) {
        if (pl_comm_call_at(ex->comm, ex->deadlines[i], part_done, ex, i, &err) != PL_OK)
            fail_comm(ex, &err);
    } else {
        part_done(ex, i);
    }
}

void executor_post_receive(pl_executor *ex, int i)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    int from = rank_of(ex, p->transfers[task->transfer].from);
    void *to = task->kind == PL_TASK_REDUCE ? ex->staging[i] : ex->ptrs[task->first_ref + 1];
    size_t bytes = (size_t)pl_task_bytes(p, task);
    pl_error err;
    atomic_store_explicit(&ex->parts_left[i], 2, memory_order_relaxed);
    if (pl_comm_receive(ex->comm, &ex->deadlines[i], sizeof(double), from, header_tag(i),
                        received, ex, i, &err) != PL_OK ||
        pl_comm_receive(ex->comm, to, bytes, from, data_tag(i), received, ex, i, &err) != PL_OK)
        fail_comm(ex, &err);
}

/* The sending end: the link (or, over a native link, the source device) is held for the
 * modelled time; the task ends when that time has passed and MPI has sent both messages,
 * so that nothing here overwrites the range before it has left. */
void executor_run_send(resource *r, const pl_task *task, int i, double start)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    int to = rank_of(ex, p->transfers[task->transfer].to);
    size_t bytes = (size_t)pl_task_bytes(p, task);
    double modelled = r->latency + (r->bytes_per_second > 0 ? (double)bytes / r->bytes_per_second
                                                            : 0);
    bool shared = pl_comm_shared_clock(ex->comm);
    ex->deadlines[i] = shared ? start + modelled : 0;
    atomic_store_explicit(&ex->parts_left[i], 3, memory_order_relaxed);
    if (!shared && modelled > 0)
        executor_wait_until(ex, start + modelled);
    pl_error err;
    if (pl_comm_send(ex->comm, &ex->deadlines[i], sizeof(double), to, header_tag(i), part_done,
                     ex, i, &err) != PL_OK ||
        pl_comm_send(ex->comm, ex->ptrs[task->first_ref], bytes, to, data_tag(i), part_done, ex,
                     i, &err) != PL_OK)
        fail_comm(ex, &err);
    if (shared && modelled > 0)
        executor_wait_until(ex, start + modelled);
    part_done(ex, i);
}

/* Across ranks: each parameter and state tensor from the rank of its home device, then
 * each shard of sharded state from the rank that updated it. */
void executor_gather_host(pl_executor *ex)
{
    const pl_program *p = ex->program;
    const pl_graph *g = ex->g;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        int home = p->partitions->tensor_device[t];
        if ((tensor->kind == PL_TENSOR_PARAM || tensor->kind == PL_TENSOR_STATE) && home >= 0)
            pl_comm_broadcast(ex->comm, ex->host[t], (size_t)pl_tensor_bytes(tensor),
                              rank_of(ex, home));
    }
    for (int c = 1; ex->copies_made && c < p->n_copies; c++)
        if (p->copy_is_shard[c]) { /* the shard itself: the host buffer was just replaced */
            size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
            char *host = (char *)ex->host[p->copy_tensor[c]] + offset;
            pl_comm_broadcast(ex->comm, ex->copies[c] ? ex->copies[c] : host, bytes,
                              rank_of(ex, p->copy_device[c]));
            if (ex->copies[c])
                memcpy(host, ex->copies[c], bytes);
        }
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

/* ---- leading and following ---------------------------------------------------------------- */

/* A plan as the leader sends it: its shape, then its devices and stages. */
enum { PLAN_FIELDS = 7 };

void executor_tell(pl_executor *ex, command what, int64_t step)
{
    int64_t message[2] = {what, step};
    pl_comm_broadcast(ex->comm, message, sizeof message, 0);
}

/* The plan's devices and stages, from the leader into every follower's plan of its shape. */
static void broadcast_placement(pl_executor *ex, pl_plan *plan)
{
    pl_comm_broadcast(ex->comm, plan->device,
                      (size_t)plan->replicas * (size_t)plan->n_ops * sizeof *plan->device, 0);
    pl_comm_broadcast(ex->comm, plan->stage, (size_t)plan->n_ops * sizeof *plan->stage, 0);
}

void executor_send_plan(pl_executor *ex, const pl_plan *plan)
{
    int64_t fields[PLAN_FIELDS] = {plan->n_ops, plan->replicas, plan->n_stages,
                                   plan->micro_batches, plan->schedule,
                                   plan->defer_weight_gradients, plan->shard_optimizer_state};
    pl_comm_broadcast(ex->comm, fields, sizeof fields, 0);
    broadcast_placement(ex, (pl_plan *)plan); /* the root only reads */
}

static pl_plan *receive_plan(pl_executor *ex, pl_error *err)
{
    int64_t fields[PLAN_FIELDS];
    pl_comm_broadcast(ex->comm, fields, sizeof fields, 0);
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
    broadcast_placement(ex, plan);
    return plan;
}

pl_status pl_executor_lead(pl_executor *ex, pl_error *err)
{
    if (!ex->comm || ex->rank != 0)
        return pl_error_set(err, PL_EINPUT, NULL, "only rank 0 of several leads");
    ex->leading = true;
    return PL_OK;
}

pl_status pl_executor_follow(pl_executor *ex, pl_error *err)
{
    if (!ex->comm || ex->rank == 0)
        return pl_error_set(err, PL_EINPUT, NULL, "only ranks other than 0 follow");
    for (;;) {
        int64_t message[2];
        pl_comm_broadcast(ex->comm, message, sizeof message, 0);
        pl_status status = PL_OK;
        if (message[0] == COMMAND_PLAN) {
            pl_plan *plan = receive_plan(ex, err);
            pl_fit fit;
            status = plan ? pl_executor_set_plan(ex, plan, &fit, err) : err->status;
            pl_plan_free(plan);
        } else if (message[0] == COMMAND_STEP) {
            float loss;
            status = pl_executor_step(ex, message[1], &loss, err);
            if (status == PL_EINTERRUPTED)
                status = PL_OK; /* the leader's to handle */
        } else if (message[0] == COMMAND_SYNC) {
            pl_executor_sync_host(ex);
        } else {
            return PL_OK;
        }
        if (status != PL_OK)
            return status;
    }
}

pl_status pl_executor_set_comm(pl_executor *ex, pl_comm *comm, pl_error *err)
{
    if (ex->program || ex->comm)
        return pl_error_set(err, PL_EINPUT, NULL, "processes are set once, before a plan");
    if (ex->c->n_ranks != pl_comm_size(comm))
        return pl_error_set(err, PL_EINPUT, NULL, "cluster \"%s\" spreads its devices over %d "
                            "process%s, and %d were started", ex->c->name, ex->c->n_ranks,
                            ex->c->n_ranks == 1 ? "" : "es", pl_comm_size(comm));
    ex->comm = comm;
    ex->rank = pl_comm_rank(comm);
    for (int d = 0; d < ex->c->n_devices; d++)
        if (!executor_device_here(ex, d)) { /* its threads idle here: another rank runs it */
            executor_stop_resource(&ex->devices[d]);
            pl_pool_free(ex->devices[d].pool);
            ex->devices[d].pool = NULL;
        }
    return PL_OK;
}

/* After a step on every rank: the slowest rank's time, each micro-batch's loss from the
 * rank that computed it, whether any was cut short, and every task's times (a transfer's
 * start from its sender, its end from its receiver). */
void executor_combine_ranks(pl_executor *ex)
{
    const pl_program *p = ex->program;
    int m = p->micro_batches;
    double *values = ex->combined;
    values[0] = ex->step_seconds;
    values[1] = atomic_load(&ex->cut_short) ? 1 : 0;
    for (int k = 0; k < m; k++)
        values[2 + k] = ex->losses[k];
    for (int i = 0; i < p->n_tasks; i++) { /* a receiving end records no start */
        values[2 + m + i] = -ex->starts[i];
        values[2 + m + p->n_tasks + i] = ex->roles[i] == ROLE_SEND ? -INFINITY : ex->ends[i];
    }
    pl_comm_max(ex->comm, values, 2 + m + 2 * p->n_tasks);
    ex->step_seconds = values[0];
    atomic_store(&ex->cut_short, values[1] > 0);
    for (int k = 0; k < m; k++)
        ex->losses[k] = (float)values[2 + k];
    for (int i = 0; i < p->n_tasks; i++) {
        ex->starts[i] = -values[2 + m + i];
        ex->ends[i] = values[2 + m + p->n_tasks + i];
    }
}
