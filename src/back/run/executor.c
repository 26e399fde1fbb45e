/* The multi-device executor (executor.h): resources and their threads, plans, steps.
 *
 * Synchronisation: each resource has a ready queue (a heap of task indices under its own
 * mutex) that its thread sleeps on. Finishing a task decrements each successor's pending
 * count (acquire-release); whoever takes it to zero pushes the successor onto its
 * resource's queue. That chain orders every write of a buffer before its readers. The
 * step's caller sleeps on `done` until the count of remaining tasks reaches zero. Lock
 * order: a queue's lock and `done_lock` are never held together. */
#include "executor_impl.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "heap.h"
#include "init.h"
#include "op_run.h"

enum { LINK_STACK_BYTES = 256 << 10 };

/* Pacing: waits until `when` (CLOCK_MONOTONIC seconds), never returning earlier unless
 * the interrupt flag is set (then it records that the step was cut short and returns). A
 * sleeping thread wakes tens of microseconds late on a VM, which adds up over thousands
 * of tasks: so it sleeps until PL_DEVICE_PACE_SPIN_SECONDS before the deadline and spins
 * the rest, yielding, since more threads than cores may be waiting for one. It sleeps in
 * slices of PL_EXECUTOR_POLL_MS at most, checking the flag between them. */
void executor_wait_until(pl_executor *ex, double when)
{
    const volatile sig_atomic_t *interrupt = ex->interrupt;
    double wake = when - PL_DEVICE_PACE_SPIN_SECONDS;
    for (double now = pl_now(); wake > now; now = pl_now()) {
        if (interrupt && *interrupt) {
            atomic_store(&ex->cut_short, true);
            return;
        }
        double slice = PL_EXECUTOR_POLL_MS / 1e3;
        double until = wake - now > slice ? now + slice : wake;
        struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (pl_now() < when)
        sched_yield(); /* a woken device or link on this core goes first */
}

/* ---- ready queues ------------------------------------------------------------------------ */

static bool index_less(const void *context, int a, int b)
{
    (void)context;
    return a < b;
}

static void queue_push(ready_queue *q, int task)
{
    pthread_mutex_lock(&q->lock);
    pl_heap_push(q->heap, &q->n, task, index_less, NULL);
    atomic_store_explicit(&q->queued, q->n, memory_order_release);
    pthread_cond_signal(&q->wake);
    pthread_mutex_unlock(&q->lock);
}

/* The first ready task in program order, waiting for one; -1 when stopping. A thread with
 * cores of its own first polls for spin_seconds: a task released by another device soon
 * after is picked up at once, where waking a sleeping thread takes tens of microseconds
 * (on a VM, ~75 us once its core has halted). It yields while polling, so a woken thread
 * sharing the core (the step's caller) still runs. */
static int queue_pop(ready_queue *q)
{
    if (q->spin_seconds > 0 && atomic_load_explicit(&q->queued, memory_order_acquire) == 0) {
        double until = pl_now() + q->spin_seconds;
        while (atomic_load_explicit(&q->queued, memory_order_acquire) == 0 &&
               pl_now() < until)
            sched_yield();
    }
    pthread_mutex_lock(&q->lock);
    while (q->n == 0 && !q->stopping)
        pthread_cond_wait(&q->wake, &q->lock);
    int top = q->n > 0 ? pl_heap_pop(q->heap, &q->n, index_less, NULL) : -1;
    atomic_store_explicit(&q->queued, q->n, memory_order_relaxed);
    pthread_mutex_unlock(&q->lock);
    return top;
}

static bool queue_reserve(ready_queue *q, int cap)
{
    pthread_mutex_lock(&q->lock);
    bool ok = true;
    if (cap > q->cap) {
        int *heap = realloc(q->heap, (size_t)cap * sizeof *heap);
        if ((ok = heap != NULL)) {
            q->heap = heap;
            q->cap = cap;
        }
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

/* ---- running tasks ----------------------------------------------------------------------- */

/* An update of a shard of its parameter: the element-wise kernel on the shard's elements
 * of the parameter, the accumulator and each state (a further copy of sharded state holds
 * just its shard), then the rest of the accumulator zeroed, as a whole update leaves it. */
static void run_shard_update(resource *r, const pl_task *task, pl_kernel_args *args)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    const pl_range *shard = &p->shards[task->shard];
    enum { MAX_INPUTS = 8 };
    void *in[MAX_INPUTS];
    const pl_tensor *in_t[MAX_INPUTS];
    pl_tensor part = {.kind = PL_TENSOR_STATE, .dtype = args->in_t[0]->dtype, .rank = 1,
                      .dims = {shard->end - shard->start}, .param = -1};
    for (int j = 0; j < args->op->n_inputs && j < MAX_INPUTS; j++) {
        const pl_buffer *buf = &p->buffers[p->refs[task->first_ref + j]];
        int64_t first = buf->copy > 0 ? p->copy_range[buf->copy].start : 0;
        in[j] = (float *)args->in[j] + (shard->start - first);
        in_t[j] = &part;
    }
    args->in = in;
    args->in_t = in_t;
    if (shard->end > shard->start)
        pl_op_run(r->pool, args);
    float *acc = ex->ptrs[task->first_ref + 1];
    int64_t whole = pl_tensor_elements(ex->ref_shapes[task->first_ref + 1]);
    memset(acc, 0, (size_t)shard->start * sizeof *acc);
    memset(acc + shard->end, 0, (size_t)(whole - shard->end) * sizeof *acc);
}

static void run_op(resource *r, const pl_task *task, double start)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    const pl_op *op = &ex->g->ops[task->op];
    int k = task->micro_batch;
    pl_kernel_args args = {
        .op = op, .in_t = ex->ref_shapes + task->first_ref,
        .out_t = ex->ref_shapes + task->first_ref + op->n_inputs,
        .in = ex->ptrs + task->first_ref, .out = ex->ptrs + task->first_ref + op->n_inputs,
        .work = r->work, .nth = pl_pool_threads(r->pool),
        .step = &ex->infos[k >= 0 ? k : p->micro_batches]};
    if (task->shard >= 0)
        run_shard_update(r, task, &args);
    else
        pl_op_run(r->pool, &args);
    for (int j = 0; j < op->n_outputs; j++)
        if (op->outputs[j] == ex->g->loss)
            ex->losses[k] = *(const float *)args.out[j];
    if (r->flops_per_second > 0)
        executor_wait_until(ex, start + pl_task_flops(p, task) / r->flops_per_second);
}

/* A paced link's copy or add works in pieces of this many bytes and gives its core up
 * between them. Its work is far shorter than the time the link holds it for, while
 * another link's thread just woken by a dependency would otherwise wait for a core until
 * the piece running there ends: the scheduler lets a running thread finish its slice. */
enum { LINK_PIECE_BYTES = 256 << 10 };

void executor_add_floats(float *restrict own, const float *restrict in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        own[i] += in[i];
}

/* A copy (or, with `add`, a reduce) of `bytes` on resource r: in pieces on a paced link. */
static void move_bytes(const resource *r, void *to, const void *from, int64_t bytes, bool add)
{
    bool paced = r->is_link && (r->bytes_per_second > 0 || r->latency > 0);
    int64_t piece = paced ? LINK_PIECE_BYTES : bytes;
    for (int64_t at = 0; at < bytes; at += piece) {
        int64_t n = bytes - at < piece ? bytes - at : piece;
        if (at > 0)
            sched_yield();
        if (add)
            executor_add_floats((float *)((char *)to + at),
                                (const float *)((const char *)from + at),
                                n / (int64_t)sizeof(float));
        else
            memcpy((char *)to + at, (const char *)from + at, (size_t)n);
    }
}

static void run_copy(resource *r, const pl_task *task, double start)
{
    pl_executor *ex = r->ex;
    int64_t bytes = pl_task_bytes(ex->program, task);
    move_bytes(r, ex->ptrs[task->first_ref + 1], ex->ptrs[task->first_ref], bytes, false);
    double modelled = r->latency + (r->bytes_per_second > 0 ? (double)bytes / r->bytes_per_second
                                                            : 0);
    if (modelled > 0)
        executor_wait_until(ex, start + modelled);
}

/* An all-reduce's step: a range of one copy of a gradient added into the next's own as
 * it arrives (two copies: never the same memory), held as a copy over the link. */
static void run_reduce(resource *r, const pl_task *task, double start)
{
    pl_executor *ex = r->ex;
    int64_t bytes = pl_task_bytes(ex->program, task);
    move_bytes(r, ex->ptrs[task->first_ref + 1], ex->ptrs[task->first_ref], bytes, true);
    double modelled = r->latency + (r->bytes_per_second > 0 ? (double)bytes / r->bytes_per_second
                                                            : 0);
    if (modelled > 0)
        executor_wait_until(ex, start + modelled);
}

/* A task whose dependencies here are done: onto its resource's queue, or, the receiving
 * end of a transfer from another rank, its messages posted. */
static void release(pl_executor *ex, int i)
{
    if (ex->roles[i] == ROLE_RECEIVE)
        executor_post_receive(ex, i);
    else
        queue_push(&ex->task_resource[i]->queue, i);
}

void executor_finish_task(pl_executor *ex, int i)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    for (int e = task->first_succ; e < task->first_succ + task->n_succ; e++) {
        int next = p->succ[e];
        if (ex->roles[next] != ROLE_NONE &&
            atomic_fetch_sub_explicit(&ex->pending[next], 1, memory_order_acq_rel) == 1)
            release(ex, next);
    }
    if (atomic_fetch_sub_explicit(&ex->remaining, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&ex->done_lock);
        pthread_cond_signal(&ex->done);
        pthread_mutex_unlock(&ex->done_lock);
    }
}

static void pin_self(const pl_device *device)
{
    if (device->n_cores == 0)
        return;
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int i = 0; i < device->n_cores; i++)
        CPU_SET(device->cores[i], &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set); /* best effort */
}

static void *resource_main(void *arg)
{
    resource *r = arg;
    pl_executor *ex = r->ex;
    if (!r->is_link)
        pin_self(&ex->c->devices[r->device]);
    prctl(PR_SET_TIMERSLACK, 1000UL); /* pacing wakes within microseconds, not Linux's 50 */
    for (;;) {
        int i = queue_pop(&r->queue);
        if (i < 0)
            return NULL;
        const pl_task *task = &ex->program->tasks[i];
        double start = pl_now();
        if (ex->roles[i] == ROLE_SEND) {
            ex->starts[i] = start - ex->step_start;
            executor_run_send(r, task, i, start);
            continue;
        }
        if (task->kind == PL_TASK_OP)
            run_op(r, task, start);
        else if (task->kind == PL_TASK_COPY)
            run_copy(r, task, start);
        else
            run_reduce(r, task, start);
        ex->starts[i] = start - ex->step_start;
        ex->ends[i] = pl_now() - ex->step_start;
        executor_finish_task(ex, i);
    }
}

/* ---- resources --------------------------------------------------------------------------- */

static pl_status start_resource(resource *r, pl_error *err)
{
    pthread_mutex_init(&r->queue.lock, NULL);
    pthread_cond_init(&r->queue.wake, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (r->is_link)
        pthread_attr_setstacksize(&attr, LINK_STACK_BYTES);
    r->started = pthread_create(&r->thread, &attr, resource_main, r) == 0;
    pthread_attr_destroy(&attr);
    if (!r->started) {
        pthread_cond_destroy(&r->queue.wake);
        pthread_mutex_destroy(&r->queue.lock);
        return pl_error_set(err, PL_EIO, NULL, "cannot start a thread for %s %s",
                            r->is_link ? "a link from" : "device",
                            r->ex->c->devices[r->device].name);
    }
    return PL_OK;
}

void executor_stop_resource(resource *r)
{
    if (!r->started)
        return;
    pthread_mutex_lock(&r->queue.lock);
    r->queue.stopping = true;
    pthread_cond_signal(&r->queue.wake);
    pthread_mutex_unlock(&r->queue.lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->queue.wake);
    pthread_mutex_destroy(&r->queue.lock);
    free(r->queue.heap);
    r->started = false;
}

static pl_status start_device(pl_executor *ex, int d, pl_error *err)
{
    const pl_device *device = &ex->c->devices[d];
    resource *r = &ex->devices[d];
    *r = (resource){.ex = ex, .device = d, .flops_per_second = device->flops_per_second};
    if (pl_device_polls(device))
        r->queue.spin_seconds = PL_DEVICE_POLL_SECONDS;
    if (!(r->pool = pl_pool_new(device->threads, err)))
        return err ? err->status : PL_EIO;
    pl_pool_pin(r->pool, device->cores, device->n_cores);
    return start_resource(r, err);
}

static resource *link_of(pl_executor *ex, int from, int to, pl_error *err)
{
    resource **slot = &ex->links[from * ex->c->n_devices + to];
    if (*slot)
        return *slot;
    resource *r = calloc(1, sizeof *r);
    if (!r) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    const pl_link *link = pl_cluster_link(ex->c, from, to);
    *r = (resource){.ex = ex, .is_link = true, .device = from, .to = to,
                    .bytes_per_second = link->bytes_per_second, .latency = link->latency_seconds};
    if (start_resource(r, err) != PL_OK) {
        free(r);
        return NULL;
    }
    return *slot = r;
}

/* ---- the executor ------------------------------------------------------------------------ */

/* The elements further copy c holds, and where they start in bytes. */
size_t executor_copy_bytes(const pl_executor *ex, int c, size_t *offset)
{
    const pl_program *p = ex->program;
    const pl_tensor *t = &ex->g->tensors[p->copy_tensor[c]];
    int64_t elements = pl_tensor_elements(t);
    size_t element = elements > 0 ? (size_t)(pl_tensor_bytes(t) / elements) : 0;
    *offset = (size_t)p->copy_range[c].start * element;
    return (size_t)(p->copy_range[c].end - p->copy_range[c].start) * element;
}

/* Tensor t's shards of sharded state back in its host buffer (t < 0: every tensor's). */
static void sync_shards(pl_executor *ex, int t)
{
    const pl_program *p = ex->program;
    for (int c = 1; ex->copies && ex->copies_made && c < p->n_copies; c++)
        if (p->copy_is_shard[c] && ex->copies[c] && (t < 0 || p->copy_tensor[c] == t)) {
            size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
            memcpy((char *)ex->host[p->copy_tensor[c]] + offset, ex->copies[c], bytes);
        }
}

void pl_executor_sync_host(pl_executor *ex)
{
    if (ex->leading)
        executor_tell(ex, COMMAND_SYNC, 0);
    sync_shards(ex, -1);
    if (ex->comm && ex->program)
        executor_gather_host(ex);
}

static void free_plan(pl_executor *ex)
{
    sync_shards(ex, -1);
    for (int c = 1; ex->copies && c < ex->program->n_copies; c++)
        free(ex->copies[c]);
    free(ex->copies);
    ex->copies = NULL;
    pl_program_free(ex->program);
    ex->program = NULL;
    for (int i = 0; ex->staging && i < ex->program_tasks; i++)
        free(ex->staging[i]);
#define DROP(pointer) (free(pointer), (pointer) = NULL)
    DROP(ex->staging);
    DROP(ex->task_resource);
    DROP(ex->ptrs);
    DROP(ex->ref_shapes);
    DROP(ex->pending);
    DROP(ex->deps);
    DROP(ex->roles);
    DROP(ex->parts_left);
    DROP(ex->deadlines);
    DROP(ex->infos);
    DROP(ex->losses);
    DROP(ex->starts);
    DROP(ex->ends);
    DROP(ex->combined);
#undef DROP
}

void pl_executor_free(pl_executor *ex)
{
    if (!ex)
        return;
    if (ex->leading)
        executor_tell(ex, COMMAND_END, 0);
    int n = ex->c->n_devices;
    for (int i = 0; ex->links && i < n * n; i++)
        if (ex->links[i]) {
            executor_stop_resource(ex->links[i]);
            free(ex->links[i]);
        }
    for (int d = 0; ex->devices && d < n; d++) {
        executor_stop_resource(&ex->devices[d]);
        pl_pool_free(ex->devices[d].pool);
        free(ex->devices[d].arena);
        free(ex->devices[d].work);
    }
    free_plan(ex);
    if (ex->owns_host)
        for (int t = 0; t < ex->g->n_tensors; t++)
            free(ex->host[t]);
    free(ex->host);
    free(ex->last_output);
    free(ex->links);
    free(ex->devices);
    pthread_cond_destroy(&ex->done);
    pthread_mutex_destroy(&ex->done_lock);
    free(ex);
}

static bool lives_on_host(const pl_tensor *tensor)
{
    return tensor->kind != PL_TENSOR_ACTIVATION;
}

static pl_status set_up_host(pl_executor *ex, void *const *host, pl_error *err)
{
    const pl_graph *g = ex->g;
    ex->owns_host = host == NULL;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        if (!lives_on_host(tensor))
            continue;
        if (host) {
            ex->host[t] = host[t];
            continue;
        }
        size_t bytes = ((size_t)pl_tensor_bytes(tensor) + 63) / 64 * 64;
        if (!(ex->host[t] = aligned_alloc(64, bytes ? bytes : 64)))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for tensor \"%s\"",
                                tensor->name);
        memset(ex->host[t], 0, bytes ? bytes : 64);
        if (tensor->kind != PL_TENSOR_INPUT)
            pl_tensor_initialize(tensor, ex->host[t]);
    }
    return PL_OK;
}

pl_executor *pl_executor_new(const pl_graph *g, const pl_cluster *c, void *const *host,
                             pl_error *err)
{
    pl_executor *ex = calloc(1, sizeof *ex);
    if (!ex) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    ex->g = g;
    ex->c = c;
    pthread_mutex_init(&ex->done_lock, NULL);
    pthread_cond_init(&ex->done, NULL);
    openblas_set_num_threads(1); /* parallelism is the pools' */
    size_t n = (size_t)c->n_devices;
    ex->host = calloc((size_t)g->n_tensors, sizeof *ex->host);
    ex->last_output = calloc((size_t)g->n_tensors, sizeof *ex->last_output);
    ex->devices = calloc(n, sizeof *ex->devices);
    ex->links = calloc(n * n, sizeof *ex->links);
    if (!ex->host || !ex->last_output || !ex->devices || !ex->links) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_executor_free(ex);
        return NULL;
    }
    if (set_up_host(ex, host, err) != PL_OK) {
        pl_executor_free(ex);
        return NULL;
    }
    for (int d = 0; d < c->n_devices; d++)
        if (start_device(ex, d, err) != PL_OK) {
            pl_executor_free(ex);
            return NULL;
        }
    return ex;
}

static bool grow(void **buffer, size_t *have, size_t need)
{
    if (need <= *have)
        return true;
    free(*buffer);
    size_t bytes = (need + 63) / 64 * 64;
    if (!(*buffer = aligned_alloc(64, bytes))) {
        *have = 0;
        return false;
    }
    memset(*buffer, 0, bytes);
    *have = need;
    return true;
}

/* Room for replicas' further copies of parameters and state; the first step copies them
 * (weights loaded between setting a plan and stepping it reach every replica). */
static bool make_copies(pl_executor *ex)
{
    const pl_program *p = ex->program;
    if (!(ex->copies = calloc((size_t)p->n_copies, sizeof *ex->copies)))
        return false;
    for (int c = 1; c < p->n_copies; c++) {
        size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
        if (executor_device_here(ex, p->copy_device[c]) &&
            !(ex->copies[c] = aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64)))
            return false;
    }
    ex->copies_made = false;
    return true;
}

static void fill_copies(pl_executor *ex)
{
    const pl_program *p = ex->program;
    for (int c = 1; c < p->n_copies; c++) {
        size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
        if (ex->copies[c])
            memcpy(ex->copies[c], (const char *)ex->host[p->copy_tensor[c]] + offset, bytes);
    }
    ex->copies_made = true;
}

/* Arenas and workspaces big enough, link threads started, every reference's address. */
static pl_status bind_program(pl_executor *ex, pl_error *err)
{
    const pl_program *p = ex->program;
    int n = p->n_tasks, n_refs = 0;
    pl_status status = executor_assign_roles(ex, err);
    if (status != PL_OK)
        return status;
    if (!make_copies(ex))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for the replicas' copies");
    for (int d = 0; d < p->n_devices; d++) {
        if (!executor_device_here(ex, d))
            continue;
        resource *r = &ex->devices[d];
        if (!grow((void **)&r->arena, &r->arena_bytes, (size_t)p->memory[d].arena) ||
            !grow(&r->work, &r->work_bytes, (size_t)p->memory[d].workspace))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for device %s",
                                ex->c->devices[d].name);
    }
    ex->task_resource = malloc((size_t)n * sizeof *ex->task_resource + 1);
    ex->pending = malloc((size_t)n * sizeof *ex->pending + 1);
    ex->starts = calloc((size_t)n + 1, sizeof *ex->starts);
    ex->ends = calloc((size_t)n + 1, sizeof *ex->ends);
    ex->infos = calloc((size_t)p->micro_batches + 1, sizeof *ex->infos);
    ex->combined = malloc((2 + (size_t)p->micro_batches + 2 * (size_t)n) * sizeof(double));
    ex->losses = calloc((size_t)p->micro_batches, sizeof *ex->losses);
    int *per_resource = calloc((size_t)(p->n_devices + p->n_links), sizeof *per_resource);
    if (!ex->task_resource || !ex->pending || !ex->starts || !ex->ends || !ex->infos ||
        !ex->combined ||
        !ex->losses || !per_resource) {
        free(per_resource);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    for (int i = 0; i < n; i++) {
        const pl_task *task = &p->tasks[i];
        int end = task->kind != PL_TASK_OP
                      ? task->first_ref + 2
                      : task->first_ref + ex->g->ops[task->op].n_inputs +
                            ex->g->ops[task->op].n_outputs;
        if (end > n_refs)
            n_refs = end;
        ex->task_resource[i] = NULL;
        if (ex->roles[i] != ROLE_LOCAL && ex->roles[i] != ROLE_SEND)
            continue;
        per_resource[task->resource]++;
        if (task->resource < p->n_devices) {
            ex->task_resource[i] = &ex->devices[task->resource];
        } else {
            const pl_link_use *use = &p->links[task->resource - p->n_devices];
            if (!(ex->task_resource[i] = link_of(ex, use->from, use->to, err))) {
                free(per_resource);
                return err ? err->status : PL_EIO;
            }
        }
    }
    bool ok = true;
    for (int i = 0; i < n && ok; i++)
        if (ex->task_resource[i] && per_resource[p->tasks[i].resource] > 0) {
            ok = queue_reserve(&ex->task_resource[i]->queue, per_resource[p->tasks[i].resource]);
            per_resource[p->tasks[i].resource] = 0;
        }
    free(per_resource);
    ex->ptrs = malloc((size_t)n_refs * sizeof *ex->ptrs + 1);
    ex->ref_shapes = malloc((size_t)n_refs * sizeof *ex->ref_shapes + 1);
    if (!ok || !ex->ptrs || !ex->ref_shapes)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int ref = 0; ref < n_refs; ref++) {
        const pl_buffer *buf = &p->buffers[p->refs[ref]];
        char *base = buf->device >= 0 ? ex->devices[buf->device].arena
                     : buf->copy > 0  ? ex->copies[buf->copy]
                                      : ex->host[buf->tensor];
        ex->ptrs[ref] = base ? base + buf->offset : NULL; /* NULL: on another rank */
        ex->ref_shapes[ref] = &p->shapes[buf->tensor];
    }
    for (int i = 0; i < n; i++) { /* the last micro-batch's activations, for readers */
        const pl_task *task = &p->tasks[i];
        if (task->kind != PL_TASK_OP || task->micro_batch != p->micro_batches - 1 ||
            ex->roles[i] != ROLE_LOCAL)
            continue;
        const pl_op *op = &ex->g->ops[task->op];
        for (int j = 0; j < op->n_outputs; j++)
            ex->last_output[op->outputs[j]] = ex->ptrs[task->first_ref + op->n_inputs + j];
    }
    return PL_OK;
}

pl_status pl_executor_set_plan(pl_executor *ex, const pl_plan *plan, pl_fit *fit, pl_error *err)
{
    if (ex->leading) {
        executor_tell(ex, COMMAND_PLAN, 0);
        executor_send_plan(ex, plan);
    }
    if (ex->comm && ex->program && ex->steps_since_plan > 0)
        executor_gather_host(ex); /* the next plan may hold a tensor on another rank */
    ex->steps_since_plan = 0;
    free_plan(ex);
    memset(ex->last_output, 0, (size_t)ex->g->n_tensors * sizeof *ex->last_output);
    *fit = (pl_fit){.fits = true, .device = -1};
    pl_program *p = pl_program_new(ex->g, ex->c, plan, err);
    if (!p)
        return err ? err->status : PL_EINPUT;
    if (p->oom_device >= 0) {
        *fit = (pl_fit){false, p->oom_device, p->memory[p->oom_device].total,
                        ex->c->devices[p->oom_device].memory_bytes};
        pl_program_free(p);
        return PL_OK;
    }
    ex->program = p;
    pl_status status = bind_program(ex, err);
    if (status != PL_OK)
        free_plan(ex);
    return status;
}

void pl_executor_set_interrupt(pl_executor *ex, const volatile sig_atomic_t *interrupt)
{
    ex->interrupt = interrupt;
}

const pl_program *pl_executor_program(const pl_executor *ex)
{
    return ex->program;
}

void *pl_executor_data(pl_executor *ex, int t)
{
    if (ex->g->tensors[t].kind == PL_TENSOR_STATE)
        sync_shards(ex, t);
    return lives_on_host(&ex->g->tensors[t]) ? ex->host[t] : ex->last_output[t];
}

pl_status pl_executor_step(pl_executor *ex, int64_t step, float *loss, pl_error *err)
{
    const pl_program *p = ex->program;
    if (!p)
        return pl_error_set(err, PL_EINPUT, NULL, "the executor has no plan that fits");
    if (ex->leading)
        executor_tell(ex, COMMAND_STEP, step);
    if (!ex->copies_made)
        fill_copies(ex);
    int m = p->micro_batches;
    for (int k = 0; k <= m; k++)
        ex->infos[k] = (pl_step_info){.step = step, .micro_batch = k < m ? k : 0,
                                      .micro_batches = m, .training = true};
    for (int i = 0; i < p->n_tasks; i++)
        atomic_store_explicit(&ex->pending[i], ex->deps[i], memory_order_relaxed);
    atomic_store(&ex->remaining, ex->local_parts);
    atomic_store(&ex->cut_short, false);
    if (ex->comm) { /* what another rank runs is filled in by combine_ranks */
        for (int i = 0; i < p->n_tasks; i++) {
            ex->starts[i] = INFINITY;
            ex->ends[i] = -INFINITY;
        }
        for (int k = 0; k < m; k++)
            ex->losses[k] = -INFINITY;
        pl_comm_barrier(ex->comm);
    }
    ex->step_start = pl_now();
    for (int i = 0; i < p->n_tasks; i++)
        if (ex->roles[i] != ROLE_NONE && ex->deps[i] == 0)
            release(ex, i);
    pthread_mutex_lock(&ex->done_lock);
    while (atomic_load_explicit(&ex->remaining, memory_order_acquire) != 0)
        pthread_cond_wait(&ex->done, &ex->done_lock);
    pthread_mutex_unlock(&ex->done_lock);
    ex->step_seconds = pl_now() - ex->step_start;
    if (ex->comm)
        executor_combine_ranks(ex);
    ex->steps_run++;
    ex->steps_since_plan++;
    double total = 0;
    for (int k = 0; k < m; k++)
        total += ex->losses[k];
    *loss = (float)(total / m);
    if (atomic_load(&ex->cut_short))
        return pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted");
    return PL_OK;
}

double pl_executor_step_seconds(const pl_executor *ex)
{
    return ex->step_seconds;
}

const double *pl_executor_task_starts(const pl_executor *ex)
{
    return ex->starts;
}

const double *pl_executor_task_ends(const pl_executor *ex)
{
    return ex->ends;
}

const char *pl_executor_device_name(const pl_executor *ex, int d)
{
    return ex->c->devices[d].name;
}

int64_t pl_executor_steps_run(const pl_executor *ex)
{
    return ex->steps_run;
}

bool pl_executor_paced(const pl_executor *ex)
{
    return ex->c->paced;
}

int pl_executor_threads(const pl_executor *ex)
{
    int threads = 0;
    for (int d = 0; d < ex->c->n_devices; d++) {
        bool used = false;
        for (int i = 0; ex->program && i < ex->program->n_tasks && !used; i++)
            used = ex->program->tasks[i].resource == d;
        threads += used ? ex->c->devices[d].threads : 0;
    }
    return threads;
}
