/* The step-time simulator (simulate.h): a discrete-event replay of a program. */
#include "simulate.h"

#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "grow.h"
#include "heap.h"
#include "op_times.h"

/* An event: a task released to its resource's queue, a paced task falling due (its held
 * time over: how late it ends depends on the contention then), or a task finished. */
typedef enum event_kind { RELEASED, DUE, FINISHED } event_kind;

typedef struct event {
    double time;
    int seq; /* ties: the order they were posted */
    int task;
    event_kind kind;
    int stamp; /* a FINISHED event counts only while it is its task's latest (shared) */
} event;

typedef struct simulator {
    const pl_program *p;
    double *duration, *native, *ready_at, *start, *end;
    signed char *late;   /* per task: its pl_delay when paced, else -1 */
    int *remaining;
    bool *busy;          /* per resource */
    int *queue, *queued; /* per resource r: queue[first[r] ..] a heap of queued[r] tasks */
    int *first;
    event *events;
    int *event_heap, n_events, n_posted;
    double *last_end;    /* per resource: when its last task ended (0: the step's start) */
    int *signals;        /* per resource: the tasks its last one handed to other queues */
    pl_task_cost *op_cost; /* per op of the graph, once needed (late -2: not yet): every
                              micro-batch's task of an op costs the same (one device, one
                              shape), and its signature's hash is the costly part */
    bool *polls;         /* per resource: a device whose idle thread polls (cluster.h) */
    bool *paced;         /* per resource: a paced device or a declared link */
    bool any_paced;      /* some resource is paced: the caller is woken as a paced thread */
    bool alone;          /* every task on one resource: the other threads never wake */
    int used;            /* resources with tasks */
    double *computing_until; /* per busy resource: when its task's native work ends */
    int *running, n_running, *running_at; /* the busy resources, and each one's place */
    /* Ops on native devices share the machine (cost_model.h, `together`): each runs its
     * work alone at `together` times slower while another native device computes. Per
     * task: that factor (0: not a native op), the work left, counted in seconds alone,
     * since when, and its FINISHED event's stamp. */
    double *together, *left, *since;
    int *stamp;
    int sharing;           /* native op tasks running now */
    int *current;          /* per busy resource: its task */
    /* Per task: some of its inputs another native device's thread copied in
     * (cost_model.h, remote_seconds); NULL: no task's. */
    bool *remote_inputs;
    int events_cap;
    bool failed;           /* out of memory posting an event */
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

static bool post(simulator *s, double time, int task, event_kind kind)
{
    if (s->n_posted == s->events_cap) { /* a shared task's end moves: events outgrow n * 3 */
        int cap = s->events_cap;
        if (!pl_grow(&s->events, &cap, s->n_posted + 1, sizeof *s->events, 64) ||
            !pl_grow(&s->event_heap, &s->events_cap, s->n_posted + 1, sizeof *s->event_heap, 64))
            return false;
    }
    int id = s->n_posted++;
    s->events[id] = (event){time, id, task, kind, s->stamp[task]};
    pl_heap_push(s->event_heap, &s->n_events, id, event_less, s->events);
    return true;
}

/* How much slower a native op task runs now: its factor while another native op runs. */
static double slowdown(const simulator *s, int task)
{
    return s->sharing > 1 ? s->together[task] : 1;
}

/* The native op tasks running: their work done up to `now` at the pace they had, then
 * their ends posted again at the pace from now on (after `sharing` changed). */
static void repace(simulator *s, double now, int before)
{
    for (int i = 0; i < s->n_running; i++) {
        int r = s->running[i], task = s->current[r];
        if (!(s->together[task] > 0) || s->since[task] > now)
            continue;
        double was = before > 1 ? s->together[task] : 1, will = slowdown(s, task);
        s->left[task] -= (now - s->since[task]) / was;
        s->since[task] = now;
        if (was == will)
            continue;
        s->stamp[task]++;
        double end = now + (s->left[task] > 0 ? s->left[task] : 0) * will;
        s->computing_until[r] = end;
        s->failed |= !post(s, end, task, FINISHED);
    }
}

/* The contention resource r meets at `now` (pl_cost_contention): the other resources
 * busy, and those of them computing natively, whose kernels hold cores a paced thread that
 * falls due or is woken then waits for. */
static int contention(const simulator *s, int r, double now)
{
    int busy = 0, computing = 0;
    for (int i = 0; i < s->n_running; i++)
        if (s->running[i] != r) {
            busy++;
            computing += s->computing_until[s->running[i]] > now + PL_COST_HOLDING_SECONDS;
        }
    return pl_cost_contention(s->alone, busy, computing);
}

/* The delay resource r's thread meets at `now`, at the contention then. */
static double delay_at(const simulator *s, pl_delay delay, int r, double now)
{
    int others_busy = s->n_running - (s->busy[r] ? 1 : 0);
    return pl_cost_delay(s->m, delay, contention(s, r, now), others_busy, s->used - 1);
}

/* A free resource starts its first queued task in program order; a paced one that has
 * just finished a task takes the next after the paced gap. */
static void try_start(simulator *s, int r, double now)
{
    if (s->busy[r] || s->queued[r] == 0)
        return;
    int task = pl_heap_pop(s->queue + s->first[r], &s->queued[r], index_less, NULL);
    double at = now;
    if (s->paced[r] && now > 0 && s->last_end[r] == now)
        at += delay_at(s, PL_DELAY_NEXT, r, now) +
              s->signals[r] * s->m->paced_signal_seconds;
    double pace = 1;
    if (s->together[task] > 0) { /* it slows the native ops running, and they it */
        int before = s->sharing++;
        repace(s, now, before);
        s->left[task] = s->duration[task];
        s->since[task] = at;
        pace = slowdown(s, task);
    }
    s->busy[r] = true;
    s->current[r] = task;
    s->running_at[r] = s->n_running;
    s->running[s->n_running++] = r;
    s->start[task] = at;
    s->computing_until[r] = at + (s->late[task] < 0 ? s->duration[task] * pace : s->native[task]);
    if (s->late[task] < 0 || s->alone) /* alone, the delay is known now */
        s->failed |= !post(s, at + s->duration[task] * pace +
                                  (s->late[task] < 0
                                       ? 0 : pl_cost_delay(s->m, (pl_delay)s->late[task], 0, 0, 0)),
                           task, FINISHED);
    else
        s->failed |= !post(s, at + s->duration[task], task, DUE);
}

/* How long after `now` a task released to resource r by another starts at the earliest:
 * at once when r is busy (it takes the task when free); else a polling device picks it
 * up, or one asleep past its poll window wakes, or a paced thread wakes (waiting for a
 * core while others compute), or a native thread that never polls wakes. */
static double handoff_to(const simulator *s, int r, double now)
{
    if (s->busy[r])
        return 0;
    if (s->paced[r]) /* at the step's start, from the caller: the same */
        return delay_at(s, PL_DELAY_HANDOFF, r, now);
    if (!s->polls[r])
        return s->m->handoff_seconds;
    return now - s->last_end[r] < PL_DEVICE_POLL_SECONDS ? s->m->poll_seconds
                                                           : s->m->wake_seconds;
}

static void finish(simulator *s, int task, double now)
{
    const pl_program *p = s->p;
    const pl_task *t = &p->tasks[task];
    int r = t->resource, last = s->running[--s->n_running];
    s->running[s->running_at[r]] = last;
    s->running_at[last] = s->running_at[r];
    s->end[task] = now;
    s->busy[r] = false;
    s->last_end[r] = now;
    s->signals[r] = 0;
    if (s->together[task] > 0) {
        int before = s->sharing--;
        repace(s, now, before);
    }
    for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++) {
        int next = p->succ[e];
        int to = p->tasks[next].resource;
        double ready = now + (to == r ? 0 : handoff_to(s, to, now));
        if (ready > s->ready_at[next])
            s->ready_at[next] = ready;
        if (--s->remaining[next] > 0)
            continue;
        s->signals[r] += to != r; /* the executor's thread wakes that queue */
        if (s->ready_at[next] > now) {
            s->failed |= !post(s, s->ready_at[next], next, RELEASED);
        } else { /* queued at once, as the executor's finishing thread does */
            pl_heap_push(s->queue + s->first[to], &s->queued[to], next, index_less, NULL);
            if (to != r)
                try_start(s, to, now);
        }
    }
    try_start(s, r, now);
}

static void free_simulator(simulator *s)
{
    free(s->duration);
    free(s->late);
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
    free(s->op_cost);
    free(s->computing_until);
    free(s->running);
    free(s->signals);
    free(s->together);
    free(s->stamp);
    free(s->remote_inputs);
}

/* A native device on a core of its own (it polls). */
static bool apart(const simulator *s, int r)
{
    return r < s->p->n_devices && !s->paced[r] && s->polls[r];
}

/* Which op tasks have remote inputs: copies between two devices of one rank on cores of
 * their own, which the source device's thread writes (a cluster placer runs). */
static bool find_remote_inputs(simulator *s, const pl_cluster *c)
{
    const pl_program *p = s->p;
    if (s->alone || !(s->m->remote_seconds > 0))
        return true;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *t = &p->tasks[i];
        if (t->kind != PL_TASK_COPY)
            continue;
        const pl_transfer *tr = &p->transfers[t->transfer];
        if (tr->from == tr->to || !apart(s, tr->from) || !apart(s, tr->to) ||
            c->devices[tr->from].rank != c->devices[tr->to].rank)
            continue;
        if (!s->remote_inputs &&
            !(s->remote_inputs = calloc((size_t)p->n_tasks + 1, sizeof *s->remote_inputs)))
            return false;
        for (int e = t->first_succ; e < t->first_succ + t->n_succ; e++)
            if (pl_task_reads_copy(p, &p->tasks[p->succ[e]], t))
                s->remote_inputs[p->succ[e]] = true;
    }
    return true;
}

static bool new_simulator(simulator *s, const pl_program *p, const pl_cluster *c,
                          const pl_cost_model *m, double *start, double *end)
{
    int n = p->n_tasks, resources = p->n_devices + p->n_links;
    *s = (simulator){.p = p, .m = m};
    s->duration = malloc(((size_t)n * 4 + 1) * sizeof(double));
    s->late = malloc((size_t)n + 1);
    s->ready_at = calloc((size_t)n + 1, sizeof(double));
    s->remaining = malloc(((size_t)n + 1) * sizeof(int));
    s->busy = calloc((size_t)resources + 1, sizeof(bool));
    s->queue = malloc(((size_t)n + 1) * sizeof(int));
    s->queued = calloc((size_t)resources + 1, sizeof(int));
    s->first = calloc((size_t)resources + 1, sizeof(int));
    s->events = malloc(((size_t)n * 3 + 1) * sizeof(event));
    s->event_heap = malloc(((size_t)n * 3 + 1) * sizeof(int));
    s->last_end = calloc((size_t)resources + 1, sizeof(double));
    s->polls = calloc(2 * ((size_t)resources + 1), sizeof(bool));
    s->op_cost = malloc(((size_t)p->graph->n_ops + 1) * sizeof(pl_task_cost));
    s->computing_until = calloc((size_t)resources + 1, sizeof(double));
    s->running = malloc(2 * ((size_t)resources + 1) * sizeof(int));
    s->signals = calloc((size_t)resources + 1, sizeof(int));
    s->together = calloc((size_t)n * 3 + 1, sizeof(double));
    s->stamp = calloc((size_t)n + (size_t)resources + 1, sizeof(int));
    s->events_cap = n * 3 + 1;
    if (!s->together || !s->stamp || !s->duration || !s->late || !s->ready_at || !s->remaining || !s->busy || !s->queue ||
        !s->queued || !s->first || !s->events || !s->event_heap || !s->last_end ||
        !s->polls || !s->op_cost || !s->computing_until || !s->running || !s->signals)
        return false;
    s->paced = s->polls + resources + 1;
    s->running_at = s->running + resources + 1;
    s->left = s->together + n;
    s->since = s->together + 2 * (size_t)n;
    s->current = s->stamp + n;
    for (int o = 0; o < p->graph->n_ops; o++)
        s->op_cost[o].late = -2;
    for (int r = 0; r < resources; r++) {
        s->paced[r] = r >= p->n_devices || c->devices[r].flops_per_second > 0;
        s->any_paced = s->any_paced || s->paced[r];
    }
    for (int d = 0; d < p->n_devices; d++)
        s->polls[d] = pl_device_polls(&c->devices[d]);
    s->native = s->duration + n;
    s->start = start ? start : s->duration + 2 * (size_t)n; /* scratch when the caller wants none */
    s->end = end ? end : s->duration + 3 * (size_t)n;
    for (int i = 0; i < n; i++)
        s->first[p->tasks[i].resource]++;
    for (int r = 0, at = 0; r < resources; r++) { /* counts -> offsets */
        int count = s->first[r];
        s->used += count > 0;
        s->first[r] = at;
        at += count;
    }
    s->alone = s->used <= 1;
    return c->simulated || find_remote_inputs(s, c);
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

/* Task i's work and held time (plus the executor's per-task cost) and its delay. */
static void cost_task(simulator *s, const pl_cluster *c, int i)
{
    const pl_task *t = &s->p->tasks[i];
    pl_task_cost cost;
    bool cached = t->kind == PL_TASK_OP && t->shard < 0 &&
                  t->resource == s->p->partitions->op_device[t->op];
    if (cached && s->op_cost[t->op].late != -2)
        cost = s->op_cost[t->op];
    else
        cost = pl_cost_task_parts(s->m, s->p, c, t);
    if (cached)
        s->op_cost[t->op] = cost;
    if (s->remote_inputs && s->remote_inputs[i]) { /* held as long: native devices */
        double remote = s->m->remote_seconds * pl_cost_speed(s->m);
        cost.native += remote;
        cost.held += remote;
    }
    s->duration[i] = cost.held + s->m->task_seconds;
    s->native[i] = cost.native;
    s->late[i] = (signed char)cost.late;
    if (t->kind == PL_TASK_OP && !s->paced[t->resource] && !c->simulated &&
        pl_op_times_seconds(s->m->op_times, s->p->graph, t->op, 1.0) < 0) {
        s->together[i] = pl_cost_together(s->m, s->p->graph->ops[t->op].kind,
                                          c->devices[t->resource].threads);
    }
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
        cost_task(&s, c, i);
        s.remaining[i] = t->n_deps;
        if (t->kind == PL_TASK_COPY) {
            out->n_copies++;
            out->copy_bytes += pl_task_bytes(p, t);
        }
    }
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].n_deps == 0) /* the caller releases them (the devices polling still,
                                        when they poll: steps run back to back) */
            s.failed |= !post(&s, handoff_to(&s, p->tasks[i].resource, 0), i, RELEASED);
    while (s.n_events > 0 && !s.failed) {
        event e = s.events[pl_heap_pop(s.event_heap, &s.n_events, event_less, s.events)];
        int r = p->tasks[e.task].resource;
        if (e.kind == FINISHED && e.stamp != s.stamp[e.task])
            continue; /* its pace changed: a later event ends it */
        if (e.kind == FINISHED) {
            finish(&s, e.task, e.time);
        } else if (e.kind == DUE) {
            s.failed |= !post(&s, e.time + delay_at(&s, (pl_delay)s.late[e.task], r, e.time), e.task, FINISHED);
        } else {
            pl_heap_push(s.queue + s.first[r], &s.queued[r], e.task, index_less, NULL);
            try_start(&s, r, e.time);
        }
    }
    if (s.failed) {
        free_simulator(&s);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    for (int i = 0; i < p->n_tasks; i++) {
        if (s.end[i] > out->step_seconds)
            out->step_seconds = s.end[i];
        s.duration[i] = s.end[i] - s.start[i]; /* as run, delays and all */
        if (p->tasks[i].resource < p->n_devices)
            out->busy_seconds[p->tasks[i].resource] += s.duration[i];
    }
    /* the last task wakes the caller */
    out->step_seconds += s.any_paced ? m->paced_finish_seconds : m->handoff_seconds;
    out->critical_path_seconds = critical_path(p, s.duration, s.ready_at);
    for (int d = 0; d < p->n_devices; d++)
        out->memory[d] = p->memory[d].total;
    out->oom_device = p->oom_device;
    free_simulator(&s);
    return PL_OK;
}
