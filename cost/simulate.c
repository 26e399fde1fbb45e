/* The step-time simulator (simulate.h): a discrete-event replay of a program. */
#include "simulate.h"

#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "heap.h"

/* An event: a task released to its resource's queue, or finished on it. */
typedef struct event {
    double time;
    int seq; /* ties: the order they were posted */
    int task;
    bool finish;
} event;

typedef struct simulator {
    const pl_program *p;
    double *duration, *ready_at, *start, *end;
    int *remaining;
    bool *busy;          /* per resource */
    int *queue, *queued; /* per resource r: queue[first[r] ..] a heap of queued[r] tasks */
    int *first;
    event *events;
    int *event_heap, n_events, n_posted;
    double *last_end;    /* per resource: when its last task ended (0: the step's start) */
    double *op_seconds;  /* per op of the graph: one task's time, or -1 until needed; every
                            micro-batch's task of an op costs the same (one device, one
                            shape), and its signature's hash is the costly part */
    bool *polls;         /* per resource: a device whose idle thread polls (cluster.h) */
    const pl_cost_model *m;
} simulator;

static bool event_less(const void *context, int a, int b)
{
    const event *e = context;
    return e[a].time < e[b].time || (e[a].time == e[b].time && e[a].seq < e[b].seq);
}

static bool index_less(const void *context, int a, int b)
{
    (void)context;
    return a < b;
}

static void post(simulator *s, double time, int task, bool finish)
{
    int id = s->n_posted++;
    s->events[id] = (event){time, id, task, finish};
    pl_heap_push(s->event_heap, &s->n_events, id, event_less, s->events);
}

/* A free resource starts its first queued task in program order. */
static void try_start(simulator *s, int r, double now)
{
    if (s->busy[r] || s->queued[r] == 0)
        return;
    int task = pl_heap_pop(s->queue + s->first[r], &s->queued[r], index_less, NULL);
    s->busy[r] = true;
    s->start[task] = now;
    post(s, now + s->duration[task], task, true);
}

/* How long after `now` a task released to resource r by another starts at the earliest:
 * at once when r is busy (it takes the task when free); else a polling device picks it
 * up, or one asleep past its poll window wakes, or a thread that never polls wakes. */
static double handoff_to(const simulator *s, int r, double now)
{
    if (s->busy[r])
        return 0;
    if (!s->polls[r])
        return s->m->handoff_seconds;
    return now - s->last_end[r] < PL_DEVICE_POLL_SECONDS ? s->m->poll_seconds
                                                           : s->m->wake_seconds;
}

static void finish(simulator *s, int task, double now)
{
    const pl_program *p = s->p;
    const pl_task *t = &p->tasks[task];
    s->end[task] = now;
    s->busy[t->resource] = false;
    s->last_end[t->resource] = now;
    for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++) {
        int next = p->succ[e];
        int r = p->tasks[next].resource;
        double ready = now + (r == t->resource ? 0 : handoff_to(s, r, now));
        if (ready > s->ready_at[next])
            s->ready_at[next] = ready;
        if (--s->remaining[next] > 0)
            continue;
        if (s->ready_at[next] > now) {
            post(s, s->ready_at[next], next, false);
        } else { /* queued at once, as the executor's finishing thread does */
            pl_heap_push(s->queue + s->first[r], &s->queued[r], next, index_less, NULL);
            if (r != t->resource)
                try_start(s, r, now);
        }
    }
    try_start(s, t->resource, now);
}

static void free_simulator(simulator *s)
{
    free(s->duration);
    free(s->ready_at);
    free(s->remaining);
    free(s->busy);
    free(s->queue);
    free(s->queued);
    free(s->first);
    free(s->events);
    free(s->event_heap);
    free(s->last_end);
    free(s->polls);
    free(s->op_seconds);
}

static bool new_simulator(simulator *s, const pl_program *p, const pl_cluster *c,
                          const pl_cost_model *m, double *start, double *end)
{
    int n = p->n_tasks, resources = p->n_devices + p->n_links;
    *s = (simulator){.p = p, .m = m};
    s->duration = malloc(((size_t)n * 4 + 1) * sizeof(double));
    s->ready_at = calloc((size_t)n + 1, sizeof(double));
    s->remaining = malloc(((size_t)n + 1) * sizeof(int));
    s->busy = calloc((size_t)resources + 1, sizeof(bool));
    s->queue = malloc(((size_t)n + 1) * sizeof(int));
    s->queued = calloc((size_t)resources + 1, sizeof(int));
    s->first = calloc((size_t)resources + 1, sizeof(int));
    s->events = malloc(((size_t)n * 2 + 1) * sizeof(event));
    s->event_heap = malloc(((size_t)n * 2 + 1) * sizeof(int));
    s->last_end = calloc((size_t)resources + 1, sizeof(double));
    s->polls = calloc((size_t)resources + 1, sizeof(bool));
    s->op_seconds = malloc(((size_t)p->graph->n_ops + 1) * sizeof(double));
    if (!s->duration || !s->ready_at || !s->remaining || !s->busy || !s->queue || !s->queued ||
        !s->first || !s->events || !s->event_heap || !s->last_end || !s->polls ||
        !s->op_seconds)
        return false;
    for (int o = 0; o < p->graph->n_ops; o++)
        s->op_seconds[o] = -1;
    for (int d = 0; d < p->n_devices; d++)
        s->polls[d] = pl_device_polls(&c->devices[d]);
    s->start = start ? start : s->duration + n; /* scratch when the caller wants none */
    s->end = end ? end : s->duration + 2 * (size_t)n;
    for (int i = 0; i < n; i++)
        s->first[p->tasks[i].resource]++;
    for (int r = 0, at = 0; r < resources; r++) { /* counts -> offsets */
        int count = s->first[r];
        s->first[r] = at;
        at += count;
    }
    return true;
}

/* The longest chain of dependent task times, in program order (a topological order). */
static double critical_path(const pl_program *p, const double *duration, double *finish_at)
{
    double longest = 0;
    for (int i = 0; i < p->n_tasks; i++)
        finish_at[i] = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        finish_at[i] += duration[i];
        if (finish_at[i] > longest)
            longest = finish_at[i];
        for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++)
            if (finish_at[i] > finish_at[p->succ[e]])
                finish_at[p->succ[e]] = finish_at[i];
    }
    return longest;
}

pl_status pl_simulate(const pl_program *p, const pl_cluster *c, const pl_cost_model *m,
                      pl_simulation *out, double *starts, double *ends, pl_error *err)
{
    simulator s;
    if (!new_simulator(&s, p, c, m, starts, ends)) {
        free_simulator(&s);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    memset(out, 0, sizeof *out);
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind == PL_TASK_COPY)
            s.duration[i] = pl_cost_task(m, p, c, t) + m->task_seconds;
        else if (s.op_seconds[t->op] >= 0)
            s.duration[i] = s.op_seconds[t->op];
        else
            s.duration[i] = s.op_seconds[t->op] = pl_cost_task(m, p, c, t) + m->task_seconds;
        s.remaining[i] = t->n_deps;
        if (t->resource < p->n_devices)
            out->busy_seconds[t->resource] += s.duration[i];
        if (t->kind == PL_TASK_COPY) {
            out->n_copies++;
            out->copy_bytes += pl_task_bytes(p, t);
        }
        if (t->n_deps == 0) /* the caller releases them (the devices polling still, when
                               they poll: steps run back to back) */
            post(&s, handoff_to(&s, t->resource, 0), i, false);
    }
    while (s.n_events > 0) {
        event e = s.events[pl_heap_pop(s.event_heap, &s.n_events, event_less, s.events)];
        if (e.finish) {
            finish(&s, e.task, e.time);
        } else {
            int r = p->tasks[e.task].resource;
            pl_heap_push(s.queue + s.first[r], &s.queued[r], e.task, index_less, NULL);
            try_start(&s, r, e.time);
        }
    }
    for (int i = 0; i < p->n_tasks; i++)
        if (s.end[i] > out->step_seconds)
            out->step_seconds = s.end[i];
    out->step_seconds += m->handoff_seconds; /* the last task wakes the caller */
    out->critical_path_seconds = critical_path(p, s.duration, s.ready_at);
    for (int d = 0; d < p->n_devices; d++)
        out->memory[d] = p->memory[d].total;
    out->oom_device = p->oom_device;
    free_simulator(&s);
    return PL_OK;
}
