/* A device another rank holds, and the links to and from it (device.h). Its ops are that
 * rank's and never released here; it holds no memory here. A transfer between two ranks
 * is two messages, tagged by its task: the time its link's modelled time ends, then the
 * range itself. Ranks on one host share CLOCK_MONOTONIC, so the sender posts both at once
 * and the receiver holds the range until that time, as a paced link in one process does;
 * across hosts the sender holds it and then sends (the declared time, then MPI's). */
#include "clock.h"
#include "device.h"

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
        device_add_floats(ex->ptrs[task->first_ref + 1], ex->staging[i],
                          pl_task_bytes(ex->program, task) / (int64_t)sizeof(float));
    pl_error err;
    pl_error_init(&err, NULL);
    atomic_store_explicit(&ex->parts_left[i], 1, memory_order_relaxed);
    bool held = ex->deadlines[i] > pl_now();
    if (held && executor_flagged(ex)) { /* as a paced wait ends */
        atomic_store(&ex->cut_short, true);
        held = false;
    }
    if (held) {
        if (pl_comm_call_at(ex->comm, ex->deadlines[i], part_done, ex, i, &err) != PL_OK)
            executor_fail(ex, &err);
    } else {
        part_done(ex, i);
    }
}

/* The receiving end: its messages posted, completed by the comm's thread. */
static void post_receive(pl_executor *ex, int i)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    int from = rank_of(ex, p->transfers[task->transfer].from);
    void *to = task->kind == PL_TASK_REDUCE ? ex->staging[i] : ex->ptrs[task->first_ref + 1];
    size_t bytes = (size_t)pl_task_bytes(p, task);
    pl_error err;
    pl_error_init(&err, NULL);
    atomic_store_explicit(&ex->parts_left[i], 2, memory_order_relaxed);
    if (pl_comm_receive(ex->comm, &ex->deadlines[i], sizeof(double), from, header_tag(i),
                        received, ex, i, &err) != PL_OK ||
        pl_comm_receive(ex->comm, to, bytes, from, data_tag(i), received, ex, i, &err) != PL_OK)
        executor_fail(ex, &err);
}

static void release(resource *r, int i)
{
    if (r->ex->roles[i] == ROLE_SEND)
        executor_queue_task(r, i);
    else
        post_receive(r->ex, i);
}

/* The sending end, on the link's thread: the link is held for the modelled time; the task
 * ends when that time has passed and MPI has sent both messages, so that nothing here
 * overwrites the range before it has left. */
static bool run(resource *r, int i, double start)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    int to = rank_of(ex, p->transfers[task->transfer].to);
    size_t bytes = (size_t)pl_task_bytes(p, task);
    double modelled = device_link_seconds(r, (int64_t)bytes);
    bool shared = pl_comm_shared_clock(ex->comm);
    ex->deadlines[i] = shared ? start + modelled : 0;
    atomic_store_explicit(&ex->parts_left[i], 3, memory_order_relaxed);
    if (!shared && modelled > 0)
        executor_wait_until(ex, start + modelled);
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_comm_send(ex->comm, &ex->deadlines[i], sizeof(double), to, header_tag(i), part_done,
                     ex, i, &err) != PL_OK ||
        pl_comm_send(ex->comm, ex->ptrs[task->first_ref], bytes, to, data_tag(i), part_done, ex,
                     i, &err) != PL_OK) {
        executor_fail(ex, &err);
        return false;
    }
    if (shared && modelled > 0)
        executor_wait_until(ex, start + modelled);
    part_done(ex, i);
    return false; /* the last of its parts finishes it */
}

static bool reserve(resource *r, size_t arena, size_t work)
{
    (void)r, (void)arena, (void)work;
    return true;
}

static void *allocate(resource *r, size_t bytes, bool *ok)
{
    (void)r, (void)bytes;
    *ok = true;
    return NULL;
}

const device_ops pl_device_remote = {"remote", release, run, reserve, allocate};
