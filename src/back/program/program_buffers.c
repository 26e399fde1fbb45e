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
    /* per place: the slices its tasks touch, first_slice[i] .. first_slice[i] + cells,
     * as cells first_cell[i] .. first_cell[i + 1] of the per-slice arrays (a replica's
     * place touches its own slices alone: one array of every place and slice would be
     * replicas times larger, and mostly empty) */
    int *first_slice;
    size_t *first_cell, n_cells;
    int *slot;  /* per cell: its slot (activations) */
    /* per arena buffer j < n_pred_buffers: preds[pred_first[j] .. pred_first[j + 1]), the
     * buffers that last held its bytes before it (pl_pack_arena) */
    int *pred_first, *preds, n_pred_buffers;
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

/* Whether a visited reference is to a slice of a place held per micro-batch: the ones
 * whose slices take cells. */
static bool sliced_place(const pl_builder *b, int i, int k)
{
    return k >= 0 && i < b->n_places && pl_tensor_per_micro_batch(b, instance_tensor(b, i));
}

/* The cell of place i's slice k, or SIZE_MAX when its tasks never touch that slice. */
static size_t cell_of(const instances *in, int i, int k)
{
    size_t c = in->first_cell[i] + (size_t)(k - in->first_slice[i]);
    return k >= in->first_slice[i] && c < in->first_cell[i + 1] ? c : SIZE_MAX;
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

/* ---- slots: a buffer for each micro-batch an activation instance holds ------------------ */

enum { UNREAD = -2, SEVERAL = -1 };

/* When each slice of each instance is written and last read, in program order (-1: never),
 * and the resource its readers run on (UNREAD, SEVERAL). */
typedef struct lifetimes {
    const instances *in;
    int position;
    int *written, *last_read, *readers; /* per cell (instances) */
} lifetimes;

static void note_lifetime(const pl_builder *b, void *context, int i, int k, bool writes)
{
    lifetimes *l = context;
    if (!sliced_place(b, i, k))
        return;
    size_t c = cell_of(l->in, i, k);
    int resource = b->p->tasks[l->position].resource;
    if (writes) {
        l->written[c] = l->position;
        return;
    }
    l->last_read[c] = l->position;
    l->readers[c] = l->readers[c] == UNREAD || l->readers[c] == resource ? resource : SEVERAL;
}

/* The host reads the loss op's inputs and outputs of the last slice after a step (the
 * executor's losses and logits): they stay to the end. */
static void keep_loss_values(const pl_builder *b, lifetimes *l)
{
    int loss_op = b->g->tensors[b->g->loss].producer, k = b->slices - 1;
    if (loss_op < 0)
        return;
    const pl_op *op = &b->g->ops[loss_op];
    for (int i = 0; i < b->n_places; i++) {
        int t = instance_tensor(b, i);
        bool read = false;
        for (int j = 0; j < op->n_inputs; j++)
            read = read || op->inputs[j] == t;
        for (int j = 0; j < op->n_outputs; j++)
            read = read || op->outputs[j] == t;
        size_t c = read ? cell_of(l->in, i, k) : SIZE_MAX;
        if (c != SIZE_MAX && l->written[c] >= 0)
            l->last_read[c] = b->p->n_tasks;
    }
}

/* The slices each place's tasks touch: first_slice and, through `last`, the cells. */
typedef struct slice_range {
    int *first, *last;
} slice_range;

static void note_slice(const pl_builder *b, void *context, int i, int k, bool writes)
{
    (void)writes;
    slice_range *r = context;
    if (!sliced_place(b, i, k))
        return;
    r->first[i] = k < r->first[i] ? k : r->first[i];
    r->last[i] = k > r->last[i] ? k : r->last[i];
}

static bool find_cells(const pl_builder *b, instances *in)
{
    int *last = malloc((size_t)in->n * sizeof *last + 1);
    in->first_slice = malloc((size_t)in->n * sizeof *in->first_slice + 1);
    in->first_cell = malloc(((size_t)in->n + 1) * sizeof *in->first_cell);
    if (!last || !in->first_slice || !in->first_cell) {
        free(last);
        return false;
    }
    for (int i = 0; i < in->n; i++) {
        in->first_slice[i] = in->m;
        last[i] = -1;
    }
    slice_range r = {in->first_slice, last};
    for (int t = 0; t < b->p->n_tasks; t++)
        visit_refs(b, t, note_slice, &r);
    in->first_cell[0] = 0;
    for (int i = 0; i < in->n; i++) {
        size_t n = last[i] >= in->first_slice[i] ? (size_t)(last[i] - in->first_slice[i] + 1)
                                                 : 0;
        in->first_cell[i + 1] = in->first_cell[i] + n;
    }
    in->n_cells = in->first_cell[in->n];
    free(last);
    return true;
}

static bool find_lifetimes(pl_builder *b, const instances *in, lifetimes *l)
{
    size_t cells = in->n_cells;
    l->in = in;
    l->written = malloc(cells * sizeof(int) + 1);
    l->last_read = malloc(cells * sizeof(int) + 1);
    l->readers = malloc(cells * sizeof(int) + 1);
    if (!l->written || !l->last_read || !l->readers)
        return false;
    for (size_t c = 0; c < cells; c++) {
        l->written[c] = l->last_read[c] = -1;
        l->readers[c] = UNREAD;
    }
    for (l->position = 0; l->position < b->p->n_tasks; l->position++)
        visit_refs(b, l->position, note_lifetime, l);
    keep_loss_values(b, l);
    return true;
}

/* Gives each slice an activation instance holds a slot of its own (the arena packs them by
 * lifetime); returns the slot count per instance. A slice an instance never holds
 * (another replica's) has none. */
static void assign_slots(const pl_builder *b, instances *in, const lifetimes *l, int *n_slots)
{
    for (int i = 0; i < in->n; i++) {
        n_slots[i] = 0;
        if (!pl_tensor_per_micro_batch(b, instance_tensor(b, i)))
            continue;
        for (size_t c = in->first_cell[i]; c < in->first_cell[i + 1]; c++)
            if (l->written[c] >= 0)
                in->slot[c] = n_slots[i]++;
    }
}

static int buffer_of(const pl_builder *b, const instances *in, int i, int k)
{
    if (i >= b->n_places)
        return i - b->n_places;
    int t = instance_tensor(b, i);
    if (pl_tensor_per_micro_batch(b, t))
        return in->base[i] + in->slot[cell_of(in, i, k)];
    if (pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT && k > 0)
        return in->base[i] + k;
    return in->base[i];
}

/* An input has a buffer per slice; anything else on the host one. */
static int host_buffers(const pl_builder *b, int t)
{
    return pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT ? b->slices : 1;
}

/* Packs each device's activation buffers by lifetime (program_arena.c); the packing's
 * earlier holders of each buffer's bytes become in->pred_first / in->preds. */
static bool pack_arenas(pl_builder *b, instances *in, const lifetimes *l, int places)
{
    pl_program *p = b->p;
    pl_arena_block *blocks = malloc((size_t)(places ? places : 1) * sizeof *blocks);
    pl_edges preds = {0};
    bool ok = blocks != NULL;
    for (int d = 0; ok && d < p->n_devices; d++) {
        int n = 0;
        for (int i = 0; i < in->n; i++) {
            if (instance_device(b, i) != d)
                continue;
            if (!pl_tensor_per_micro_batch(b, instance_tensor(b, i))) { /* a step's copy */
                blocks[n++] = (pl_arena_block){in->base[i], -1, p->n_tasks,
                                               aligned(p->buffers[in->base[i]].bytes),
                                               UNREAD, SEVERAL, i};
                continue;
            }
            for (size_t c = in->first_cell[i]; c < in->first_cell[i + 1]; c++) {
                if (l->written[c] < 0)
                    continue;
                int buffer = in->base[i] + in->slot[c];
                int end = l->last_read[c] > l->written[c] ? l->last_read[c] : l->written[c];
                int writer = p->tasks[l->written[c]].resource;
                blocks[n++] = (pl_arena_block){buffer, l->written[c], end,
                                               aligned(p->buffers[buffer].bytes), writer,
                                               l->readers[c] == UNREAD ? writer : l->readers[c],
                                               i};
            }
        }
        ok = pl_pack_arena(p, d, blocks, n, b->tight, &preds);
    }
    ok = ok && pl_edges_csr(&preds, places, &in->pred_first, &in->preds);
    in->n_pred_buffers = places;
    free(blocks);
    pl_edges_free(&preds);
    return ok;
}

/* Every instance's buffers: slots in its device's arena, or its place on the host (a
 * batched input: one buffer per micro-batch, each its slice; the executor gathers the
 * slices of an input batched on another axis than 0 one after another). */
static bool lay_out_buffers(pl_builder *b, instances *in, const lifetimes *l,
                            const int *n_slots)
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
            if (d >= 0)
                continue; /* pack_arenas places it */
            if (pl_tensor_kind_of(b, t) == PL_TENSOR_INPUT)
                buf->offset = b->g->tensors[t].batch_axis != PL_NO_BATCH ? bytes * s : 0;
            else
                buf->bytes = pl_tensor_bytes(&b->g->tensors[t]);
        }
    }
    return pack_arenas(b, in, l, places) && pl_allreduce_buffers(b, places, in->base);
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

/* A write into bytes that `earlier` held waits for its writer and every reader: it is not
 * written again in the step, so its readers are all still listed. */
static void note_earlier_holder(hazards *h, int earlier)
{
    depend(h, h->last_writer[earlier]);
    for (int r = h->readers[earlier]; r >= 0; r = h->reader_next[r])
        depend(h, h->reader_task[r]);
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
    if (writes && buf < h->in->n_pred_buffers)
        for (int e = h->in->pred_first[buf]; e < h->in->pred_first[buf + 1]; e++)
            note_earlier_holder(h, h->in->preds[e]);
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
    instances in = {.n = b->n_places, .m = b->slices};
    in.base = malloc((size_t)in.n * sizeof *in.base + 1);
    int *n_slots = malloc((size_t)in.n * sizeof *n_slots + 1);
    lifetimes l = {0};
    pl_status status = PL_OK;
    bool ok = in.base && n_slots && find_cells(b, &in) &&
              (in.slot = malloc(in.n_cells * sizeof *in.slot + 1)) &&
              find_lifetimes(b, &in, &l);
    if (ok)
        assign_slots(b, &in, &l, n_slots);
    if (!ok || !lay_out_buffers(b, &in, &l, n_slots))
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK)
        status = find_dependencies(b, &in, err);
    if (status == PL_OK)
        status = count_memory(b, err);
    free(in.base);
    free(in.first_slice);
    free(in.first_cell);
    free(in.slot);
    free(in.pred_first);
    free(in.preds);
    free(l.written);
    free(l.last_read);
    free(l.readers);
    free(n_slots);
    return status;
}
