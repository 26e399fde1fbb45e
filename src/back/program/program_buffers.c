/* A program's buffers: slots for the micro-batches alive at once, each task's references,
 * the dependencies that make any run compute what the program order computes, and every
 * device's memory. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kernels.h"
#include "program_impl.h"

enum { ALIGN = 64 };

static int64_t aligned(int64_t bytes)
{
    return (bytes + ALIGN - 1) / ALIGN * ALIGN;
}

/* Instances: where a value of a tensor is kept. Instance i < n_places is place i
 * (program_impl.h); instance n_places + j is buffer j itself (the all-reduces'). */
typedef struct instances {
    int n, m;
    int *base;  /* per place: its first buffer */
    int *slot;  /* per place and slice: its slot (activations) */
} instances;

static int instance_of(const pl_builder *b, int t, int d)
{
    return pl_place_of(b, t, d);
}

static int instance_tensor(const pl_builder *b, int i)
{
    return i < b->n_places ? b->place_tensor[i] : b->p->buffers[i - b->n_places].tensor;
}

/* The device whose arena holds the place, or -1 when it lives on the host (inputs,
 * constants, and the copies of parameters and state). */
static int instance_device(const pl_builder *b, int i)
{
    return b->place_copy[i] >= 0 ? -1 : b->place_device[i];
}

static bool mutated_input(const pl_graph *g, const pl_op *op, int j)
{
    pl_tensor_kind kind = g->tensors[op->inputs[j]].kind;
    return pl_op_info_of(op->kind)->mutates &&
           (kind == PL_TENSOR_STATE || (kind == PL_TENSOR_PARAM && op->phase == PL_PHASE_UPDATE));
}

/* Calls visit(b, context, instance, slice, writes) for what task i reads, then for what it
 * writes (a mutated input, and a reduce's own chunk: both). */
typedef void (*ref_visitor)(const pl_builder *b, void *context, int instance, int k,
                            bool writes);

static void visit_refs(const pl_builder *b, int i, ref_visitor visit, void *context)
{
    const pl_task *task = &b->p->tasks[i];
    int k = task->micro_batch, index;
    if (pl_collective_task(b, i, &index)) {
        if (!b->collective_refs) /* not laid out yet: no activation to see */
            return;
        int source = b->n_places + b->collective_refs[2 * index];
        int own = b->n_places + b->collective_refs[2 * index + 1];
        visit(b, context, source, -1, false);
        if (task->kind == PL_TASK_REDUCE)
            visit(b, context, own, -1, false);
        visit(b, context, own, -1, true);
        return;
    }
    if (task->kind == PL_TASK_COPY) {
        const pl_transfer *tr = &b->p->transfers[task->transfer];
        visit(b, context, instance_of(b, tr->tensor, tr->from), k, false);
        visit(b, context, instance_of(b, tr->tensor, tr->to), k, true);
        return;
    }
    const pl_op *op = &b->g->ops[task->op];
    int d = task->resource;
    for (int j = 0; j < op->n_inputs; j++)
        visit(b, context, instance_of(b, op->inputs[j], d), k, false);
    for (int j = 0; j < op->n_inputs; j++)
        if (mutated_input(b->g, op, j))
            visit(b, context, instance_of(b, op->inputs[j], d), k, true);
    for (int j = 0; j < op->n_outputs; j++)
        visit(b, context, instance_of(b, op->outputs[j], d), k, true);
}

/* ---- slots: interval colouring of each activation's micro-batches ------------------------ */

typedef struct lifetimes {
    int position;
    int *written, *last_read; /* per instance and micro-batch, in program order */
} lifetimes;

static void note_lifetime(const pl_builder *b, void *context, int i, int k, bool writes)
{
    lifetimes *l = context;
    if (k < 0 || i >= b->n_places || !pl_tensor_per_micro_batch(b, instance_tensor(b, i)))
        return;
    int *at = writes ? l->written : l->last_read;
    at[(size_t)i * (size_t)b->slices + (size_t)k] = l->position;
}

/* A slice and when it is written: sorted by that (programs compile on several threads
 * at once, so the comparison needs no state). */
typedef struct written_slice {
    int written, k;
} written_slice;

static int by_written(const void *x, const void *y)
{
    int a = ((const written_slice *)x)->written, b = ((const written_slice *)y)->written;
    return (a > b) - (a < b);
}

/* Gives each slice of each activation instance the lowest slot free when it is written
 * (freed after its last reader), slices in the order they are written; returns the slot
 * count per instance. A slice an instance never holds (another replica's) has none. */
static bool assign_slots(pl_builder *b, instances *in, int *n_slots)
{
    int m = in->m;
    size_t cells = (size_t)in->n * (size_t)m;
    lifetimes l = {0, malloc(cells * sizeof(int)), malloc(cells * sizeof(int))};
    int *slot_end = malloc((size_t)m * sizeof *slot_end);
    written_slice *order = malloc((size_t)m * sizeof *order);
    bool ok = l.written && l.last_read && slot_end && order;
    if (ok) {
        for (size_t c = 0; c < cells; c++)
            l.written[c] = l.last_read[c] = -1;
        for (l.position = 0; l.position < b->p->n_tasks; l.position++)
            visit_refs(b, l.position, note_lifetime, &l);
    }
    for (int i = 0; ok && i < in->n; i++) {
        n_slots[i] = 0;
        if (!pl_tensor_per_micro_batch(b, instance_tensor(b, i)))
            continue;
        const int *written = l.written + (size_t)i * (size_t)m;
        int n = 0;
        for (int k = 0; k < m; k++)
            if (written[k] >= 0)
                order[n++] = (written_slice){written[k], k};
        qsort(order, (size_t)n, sizeof *order, by_written);
        for (int o = 0; o < n; o++) {
            int k = order[o].k;
            size_t c = (size_t)i * (size_t)m + (size_t)k;
            int start = l.written[c], end = l.last_read[c] > start ? l.last_read[c] : start;
            int s = 0;
            while (s < n_slots[i] && slot_end[s] >= start)
                s++;
            if (s == n_slots[i])
                n_slots[i]++;
            slot_end[s] = end;
            in->slot[c] = s;
        }
    }
    free(l.written);
    free(l.last_read);
    free(slot_end);
    free(order);
    return ok;
}

static int buffer_of(const pl_builder *b, const instances *in, int i, int k)
{
    if (i >= b->n_places)
        return i - b->n_places;
    int t = instance_tensor(b, i);
    if (pl_tensor_per_micro_batch(b, t))
        return in->base[i] + in->slot[(size_t)i * (size_t)in->m + (size_t)k];
    if (pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT && k > 0)
        return in->base[i] + k;
    return in->base[i];
}

/* An input has a buffer per slice; anything else on the host one. */
static int host_buffers(const pl_builder *b, int t)
{
    return pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT ? b->slices : 1;
}

/* Every instance's buffers: slots in its device's arena, or its place on the host (a
 * batched input: one buffer per micro-batch, each its slice; the executor gathers the
 * slices of an input batched on another axis than 0 one after another). */
static bool lay_out_buffers(pl_builder *b, instances *in, const int *n_slots)
{
    pl_program *p = b->p;
    int count = 0;
    for (int i = 0; i < in->n; i++) {
        in->base[i] = count;
        int t = instance_tensor(b, i);
        count += n_slots[i] ? n_slots[i] : host_buffers(b, t);
    }
    int places = count;
    count += pl_allreduce_buffer_count(b);
    if (!(p->buffers = malloc((size_t)(count ? count : 1) * sizeof *p->buffers)))
        return false;
    p->n_buffers = count;
    for (int i = 0; i < in->n; i++) {
        int t = instance_tensor(b, i), d = instance_device(b, i);
        int64_t bytes = pl_tensor_bytes(&p->shapes[t]);
        int n = n_slots[i] ? n_slots[i] : host_buffers(b, t);
        for (int s = 0; s < n; s++) {
            pl_buffer *buf = &p->buffers[in->base[i] + s];
            *buf = (pl_buffer){.tensor = t, .device = d, .copy = b->place_copy[i] > 0
                                                                  ? b->place_copy[i] : 0,
                               .bytes = bytes};
            if (d >= 0) {
                buf->offset = p->memory[d].arena;
                p->memory[d].arena += aligned(bytes);
            } else if (pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT) {
                buf->offset = b->g->tensors[t].batch_axis != PL_NO_BATCH ? bytes * s : 0;
            } else {
                buf->bytes = pl_tensor_bytes(&b->g->tensors[t]);
            }
        }
    }
    return pl_allreduce_buffers(b, places, in->base);
}

/* ---- references and dependencies --------------------------------------------------------- */

typedef struct hazards {
    const instances *in;
    int task;
    int *refs;        /* the program's refs, filled in order */
    int n_refs;
    int *last_writer; /* per buffer: the task that wrote it last, or -1 */
    int *readers;     /* per buffer: the head of its readers since, in `reader_next` */
    int *reader_task, *reader_next, n_readers, readers_cap;
    int *marked;      /* per task: the last task that took it as a dependency */
    pl_edges deps;
    bool ok;
} hazards;

static void depend(hazards *h, int before)
{
    if (before < 0 || before == h->task || h->marked[before] == h->task)
        return;
    h->marked[before] = h->task;
    h->ok = h->ok && pl_edges_add(&h->deps, before, h->task);
}

/* Reads depend on the last write; writes on the last write and every read since. */
static void note_buffer(hazards *h, int buf, bool writes)
{
    depend(h, h->last_writer[buf]);
    if (!writes) {
        int cap = h->readers_cap;
        if (!pl_grow(&h->reader_task, &cap, h->n_readers + 1, sizeof *h->reader_task, 256) ||
            !pl_grow(&h->reader_next, &h->readers_cap, h->n_readers + 1,
                     sizeof *h->reader_next, 256)) {
            h->ok = false;
            return;
        }
        h->reader_task[h->n_readers] = h->task;
        h->reader_next[h->n_readers] = h->readers[buf];
        h->readers[buf] = h->n_readers++;
        return;
    }
    for (int r = h->readers[buf]; r >= 0; r = h->reader_next[r])
        depend(h, h->reader_task[r]);
    h->readers[buf] = -1;
    h->last_writer[buf] = h->task;
}

/* What an all-reduce works on is ordered range by range (its units), so that its steps
 * overlap; a task using a gradient whole uses every unit. Inputs and constants are never
 * written during a step: nothing to order. */
static void note_hazard(const pl_builder *b, void *context, int i, int k, bool writes)
{
    hazards *h = context;
    int buf = buffer_of(b, h->in, i, k);
    pl_tensor_kind kind = pl_tensor_kind_of(b, instance_tensor(b, i));
    if (kind == PL_TENSOR_INPUT || kind == PL_TENSOR_CONST || !h->ok)
        return;
    if (b->unit_count[buf] == 0)
        note_buffer(h, buf, writes);
    for (int u = 0; u < b->unit_count[buf]; u++)
        note_buffer(h, b->p->n_buffers + b->unit_first[buf] + u, writes);
}

/* A task's references: an op's inputs then outputs, a copy's source then destination, a
 * reduce's received chunk then its own. */
static void write_refs(const pl_builder *b, hazards *h)
{
    const pl_task *task = &b->p->tasks[h->task];
    int k = task->micro_batch, index;
    if (pl_collective_task(b, h->task, &index)) {
        h->refs[h->n_refs++] = b->collective_refs[2 * index];
        h->refs[h->n_refs++] = b->collective_refs[2 * index + 1];
        return;
    }
    if (task->kind == PL_TASK_COPY) {
        const pl_transfer *tr = &b->p->transfers[task->transfer];
        h->refs[h->n_refs++] = buffer_of(b, h->in, instance_of(b, tr->tensor, tr->from), k);
        h->refs[h->n_refs++] = buffer_of(b, h->in, instance_of(b, tr->tensor, tr->to), k);
        return;
    }
    const pl_op *op = &b->g->ops[task->op];
    int d = task->resource;
    for (int j = 0; j < op->n_inputs; j++)
        h->refs[h->n_refs++] = buffer_of(b, h->in, instance_of(b, op->inputs[j], d), k);
    for (int j = 0; j < op->n_outputs; j++)
        h->refs[h->n_refs++] = buffer_of(b, h->in, instance_of(b, op->outputs[j], d), k);
}

static pl_status find_dependencies(pl_builder *b, const instances *in, pl_error *err)
{
    pl_program *p = b->p;
    int n = p->n_tasks, n_refs = 0;
    for (int i = 0; i < n; i++) {
        const pl_task *task = &p->tasks[i];
        n_refs += task->kind != PL_TASK_OP
                      ? 2 : b->g->ops[task->op].n_inputs + b->g->ops[task->op].n_outputs;
    }
    size_t slots = (size_t)p->n_buffers + (size_t)b->n_units; /* buffers, then units */
    hazards h = {.in = in, .refs = malloc((size_t)n_refs * sizeof(int) + 1),
                 .last_writer = malloc(slots * sizeof(int) + 1),
                 .readers = malloc(slots * sizeof(int) + 1),
                 .marked = malloc((size_t)n * sizeof(int) + 1), .ok = true};
    h.ok = h.refs && h.last_writer && h.readers && h.marked;
    for (size_t i = 0; h.ok && i < slots; i++)
        h.last_writer[i] = h.readers[i] = -1;
    for (int i = 0; h.ok && i < n; i++)
        h.marked[i] = -1;
    for (h.task = 0; h.ok && h.task < n; h.task++) {
        p->tasks[h.task].first_ref = h.n_refs;
        write_refs(b, &h);
        visit_refs(b, h.task, note_hazard, &h);
    }
    int *first = NULL;
    if (h.ok && (h.ok = pl_edges_csr(&h.deps, n, &first, &p->succ))) {
        for (int i = 0; i < n; i++) {
            p->tasks[i].first_succ = first[i];
            p->tasks[i].n_succ = first[i + 1] - first[i];
            p->tasks[i].n_deps = 0;
        }
        for (int e = 0; e < h.deps.n; e++)
            p->tasks[h.deps.to[e]].n_deps++;
    }
    p->refs = h.refs;
    free(first);
    free(h.last_writer);
    free(h.readers);
    free(h.reader_task);
    free(h.reader_next);
    free(h.marked);
    pl_edges_free(&h.deps);
    return h.ok ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

/* ---- memory ------------------------------------------------------------------------------ */

/* What each device holds besides its arena: its copies of parameters and state, inputs
 * and constants it reads; and its largest workspace. */
static pl_status count_memory(pl_builder *b, pl_error *err)
{
    const pl_graph *g = b->g;
    pl_program *p = b->p;
    uint64_t *counted = calloc((size_t)g->n_tensors, sizeof *counted);
    if (!counted)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < b->n_places; i++)
        if (b->place_copy[i] >= 0 && b->place_device[i] >= 0) {
            const pl_tensor *t = &g->tensors[b->place_tensor[i]];
            int64_t stored = b->place_stored[i].end - b->place_stored[i].start;
            int64_t elements = pl_tensor_elements(t); /* a shard of state holds `stored` */
            p->memory[b->place_device[i]].resident +=
                aligned(elements > 0 ? pl_tensor_bytes(t) / elements * stored : 0);
        }
    const pl_tensor *in_t[64], *out_t[64];
    void *none[64] = {0};
    pl_step_info step = {.step = 1, .micro_batches = b->slices, .training = true};
    for (int o = 0; o < g->n_ops * b->replicas; o++) {
        const pl_op *op = &g->ops[o % g->n_ops];
        int d = b->parts[o / g->n_ops]->op_device[o % g->n_ops];
        for (int j = 0; j < op->n_inputs; j++) {
            int t = op->inputs[j];
            pl_tensor_kind kind = pl_tensor_kind_of(b, t);
            if ((kind == PL_TENSOR_INPUT || kind == PL_TENSOR_CONST) &&
                !(counted[t] & (UINT64_C(1) << d))) {
                counted[t] |= UINT64_C(1) << d;
                p->memory[d].resident += aligned(pl_tensor_bytes(&g->tensors[t]));
            }
        }
        const pl_kernel_fns *fns = pl_kernel_of(op->kind);
        if (!fns->workspace || op->n_inputs > 64 || op->n_outputs > 64)
            continue;
        for (int j = 0; j < op->n_inputs; j++)
            in_t[j] = &p->shapes[op->inputs[j]];
        for (int j = 0; j < op->n_outputs; j++)
            out_t[j] = &p->shapes[op->outputs[j]];
        pl_kernel_args args = {.op = op, .in_t = in_t, .out_t = out_t, .in = none, .out = none,
                               .nth = b->c->devices[d].threads, .step = &step};
        int64_t bytes = (int64_t)fns->workspace(&args);
        if (bytes > p->memory[d].workspace)
            p->memory[d].workspace = aligned(bytes);
    }
    free(counted);
    p->oom_device = -1;
    for (int d = 0; d < p->n_devices; d++) {
        pl_device_memory *mem = &p->memory[d];
        mem->total = mem->arena + mem->resident + mem->workspace;
        if (p->oom_device < 0 && mem->total > b->c->devices[d].memory_bytes)
            p->oom_device = d;
    }
    return PL_OK;
}

pl_status pl_program_assign_buffers(pl_builder *b, pl_error *err)
{
    instances in = {b->n_places, b->slices, NULL, NULL};
    in.base = malloc((size_t)in.n * sizeof *in.base);
    in.slot = malloc((size_t)in.n * (size_t)in.m * sizeof *in.slot);
    int *n_slots = malloc((size_t)in.n * sizeof *n_slots);
    pl_status status = PL_OK;
    if (!in.base || !in.slot || !n_slots || !assign_slots(b, &in, n_slots) ||
        !lay_out_buffers(b, &in, n_slots))
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK)
        status = find_dependencies(b, &in, err);
    if (status == PL_OK)
        status = count_memory(b, err);
    free(in.base);
    free(in.slot);
    free(n_slots);
    return status;
}
