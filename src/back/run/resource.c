/* The executor's resources (executor_impl.h): a ready queue and a thread each, pacing's
 * clock, and the release of a finished task's successors.
 *
 * Synchronisation: each resource has a ready queue (a heap of task indices under its own
 * mutex) that its thread sleeps on. Finishing a task decrements each successor's pending
 * count (acquire-release); whoever takes it to zero releases the successor through its
 * resource's kind (device.h). That chain orders every write of a buffer before its
 * readers. The step's caller sleeps on `done` until the count of remaining tasks reaches
 * zero or a thread fails. Lock order: a queue's lock and `done_lock` are never held
 * together. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

#include "clock.h"
#include "device.h"
#include "heap.h"

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

void executor_queue_task(resource *r, int i)
{
    ready_queue *q = &r->queue;
    pthread_mutex_lock(&q->lock);
    pl_heap_push(q->heap, &q->n, i, index_less, NULL);
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

bool executor_reserve_queue(resource *r, int cap)
{
    ready_queue *q = &r->queue;
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

/* ---- finishing tasks --------------------------------------------------------------------- */

static void wake_caller(pl_executor *ex)
{
    pthread_mutex_lock(&ex->done_lock);
    pthread_cond_signal(&ex->done);
    pthread_mutex_unlock(&ex->done_lock);
}

void executor_finish_task(pl_executor *ex, int i)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    for (int e = task->first_succ; e < task->first_succ + task->n_succ; e++) {
        int next = p->succ[e];
        if (ex->roles[next] != ROLE_NONE &&
            atomic_fetch_sub_explicit(&ex->pending[next], 1, memory_order_acq_rel) == 1)
            ex->task_resource[next]->ops->release(ex->task_resource[next], next);
    }
    if (atomic_fetch_sub_explicit(&ex->remaining, 1, memory_order_acq_rel) == 1)
        wake_caller(ex);
}

void executor_fail(pl_executor *ex, const pl_error *err)
{
    pthread_mutex_lock(&ex->done_lock);
    if (!ex->failed) {
        ex->failed = true;
        ex->failure = *err;
    }
    pthread_cond_signal(&ex->done);
    pthread_mutex_unlock(&ex->done_lock);
}

size_t executor_copy_bytes(const pl_executor *ex, int c, size_t *offset)
{
    const pl_program *p = ex->program;
    const pl_tensor *t = &p->graph->tensors[p->copy_tensor[c]];
    int64_t elements = pl_tensor_elements(t);
    size_t element = elements > 0 ? (size_t)(pl_tensor_bytes(t) / elements) : 0;
    *offset = (size_t)p->copy_range[c].start * element;
    return (size_t)(p->copy_range[c].end - p->copy_range[c].start) * element;
}

/* ---- threads ----------------------------------------------------------------------------- */

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
        double start = pl_now();
        ex->starts[i] = start - ex->step_start;
        if (!r->ops->run(r, i, start))
            continue;
        ex->ends[i] = pl_now() - ex->step_start;
        executor_finish_task(ex, i);
    }
}

pl_status executor_start_resource(resource *r, pl_error *err)
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
    r->queue.heap = NULL;
    r->queue.n = r->queue.cap = 0;
    r->queue.stopping = false;
    r->started = false;
}
