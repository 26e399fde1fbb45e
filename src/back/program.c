/* Compiling a placed training step: the tasks, and their order (program.h). The
 * schedules' timeline is in program_schedule.c; buffers, dependencies and memory follow
 * in program_buffers.c. */
#include "program.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "grow.h"
#include "heap.h"
#include "program_impl.h"

/* ---- tasks ------------------------------------------------------------------------------- */

bool pl_tensor_per_micro_batch(const pl_graph *g, int t)
{
    return g->tensors[t].kind == PL_TENSOR_ACTIVATION;
}

/* Tasks are created op by op, micro-batch by micro-batch; `position` maps that creation
 * index to the program order once the tasks are sorted (the identity before). */
int pl_op_task(const pl_builder *b, int o, int k)
{
    return b->position[b->op_task[o] + (b->g->ops[o].phase == PL_PHASE_UPDATE ? 0 : k)];
}

int pl_copy_task(const pl_builder *b, int x, int k)
{
    int t = b->parts->transfers[x].tensor;
    return b->position[b->copy_task[x] + (pl_tensor_per_micro_batch(b->g, t) ? k : 0)];
}

int pl_find_transfer(const pl_builder *b, int t, int to)
{
    for (int i = b->tensor_transfers[t]; i < b->tensor_transfers[t + 1]; i++)
        if (b->parts->transfers[b->transfers_by_tensor[i]].to == to)
            return b->transfers_by_tensor[i];
    return -1;
}

static void add_task(pl_builder *b, pl_task_kind kind, int index, int k, int resource,
                     task_key key)
{
    b->position[b->p->n_tasks] = b->p->n_tasks;
    pl_task *task = &b->p->tasks[b->p->n_tasks];
    *task = (pl_task){.kind = kind, .op = kind == PL_TASK_OP ? index : -1,
                      .transfer = kind == PL_TASK_COPY ? index : -1, .micro_batch = k,
                      .resource = resource};
    b->keys[b->p->n_tasks++] = key;
}

static int link_resource(pl_builder *b, int from, int to)
{
    int *slot = &b->link_index[from * b->p->n_devices + to];
    if (*slot < 0) {
        b->p->links[b->p->n_links] = (pl_link_use){from, to};
        *slot = b->p->n_links++;
    }
    return b->p->n_devices + *slot;
}

/* A copy over a native link is a memcpy, which a core does: it runs on its source
 * device's thread, right after the task producing what it carries (hot in that core's
 * cache). A thread of its own would only compete with the devices for the cores and add
 * a wake-up to every transfer. A declared (paced) link has its own thread. */
static int copy_resource(pl_builder *b, int from, int to)
{
    const pl_link *link = pl_cluster_link(b->c, from, to);
    if (link->bytes_per_second <= 0 && link->latency_seconds <= 0)
        return from;
    return link_resource(b, from, to);
}

/* Every task with its key: ops per micro-batch (updates once), copies per micro-batch for
 * activations, once for parameters. */
static pl_status create_tasks(pl_builder *b, const pl_plan *plan, pl_error *err)
{
    const pl_graph *g = b->g;
    const pl_partitions *parts = b->parts;
    int m = b->m;
    int *rank = pl_rank_blocks(plan->n_stages, m, plan->schedule, err);
    if (!rank)
        return err ? err->status : PL_ENOMEM;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        b->op_task[o] = b->p->n_tasks;
        if (op->phase == PL_PHASE_UPDATE) {
            add_task(b, PL_TASK_OP, o, -1, parts->op_device[o], (task_key){INT_MAX, o, 0});
            continue;
        }
        int phase = op->phase == PL_PHASE_FORWARD ? PL_FORWARD : PL_BACKWARD;
        /* deferred weight gradients rank behind every forward and backward block */
        int later = plan->defer_weight_gradients && op->weight_gradient
                        ? plan->n_stages * 2 * m
                        : 0;
        for (int k = 0; k < m; k++)
            add_task(b, PL_TASK_OP, o, k, parts->op_device[o],
                     (task_key){later + rank[pl_block_of(parts->op_stage[o], phase, k, m)], o, 0});
    }
    for (int x = 0; x < parts->n_transfers; x++) {
        const pl_transfer *tr = &parts->transfers[x];
        int resource = copy_resource(b, tr->from, tr->to);
        b->copy_task[x] = b->p->n_tasks;
        int producer = g->tensors[tr->tensor].producer;
        if (!pl_tensor_per_micro_batch(g, tr->tensor)) {
            add_task(b, PL_TASK_COPY, x, -1, resource, (task_key){-1, x, 0});
            continue;
        }
        for (int k = 0; k < m; k++) {
            task_key key = b->keys[pl_op_task(b, producer, k)];
            key.sub = 1 + x;
            add_task(b, PL_TASK_COPY, x, k, resource, key);
        }
    }
    free(rank);
    return PL_OK;
}

/* ---- program order: a topological sort that prefers the smallest key --------------------- */

static int compare_keys(task_key a, task_key b)
{
    if (a.block != b.block)
        return a.block < b.block ? -1 : 1;
    if (a.op != b.op)
        return a.op < b.op ? -1 : 1;
    return (a.sub > b.sub) - (a.sub < b.sub);
}

/* The task whose result task `reader` on device `d` reads as tensor t, micro-batch k: its
 * producer on the same device, the copy that brought it, or -1 (inputs, constants and
 * parameters at home are there before the step). */
int pl_source_task(const pl_builder *b, int t, int d, int k)
{
    int home = b->parts->tensor_device[t];
    if (home < 0)
        return -1;
    if (home != d)
        return pl_copy_task(b, pl_find_transfer(b, t, d), k);
    return pl_tensor_per_micro_batch(b->g, t) ? pl_op_task(b, b->g->tensors[t].producer, k) : -1;
}

/* The dataflow edges, and a mutating op's micro-batches in turn (accumulation order). */
static pl_status dataflow_edges(pl_builder *b, pl_edges *edges, pl_error *err)
{
    const pl_graph *g = b->g;
    for (int i = 0; i < b->p->n_tasks; i++) {
        const pl_task *task = &b->p->tasks[i];
        if (task->kind == PL_TASK_COPY) {
            int t = b->parts->transfers[task->transfer].tensor;
            if (task->micro_batch >= 0 &&
                !pl_edges_add(edges, pl_op_task(b, g->tensors[t].producer, task->micro_batch), i))
                return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
            continue;
        }
        const pl_op *op = &g->ops[task->op];
        int d = b->parts->op_device[task->op], k = task->micro_batch;
        for (int j = 0; j < op->n_inputs; j++) {
            if (k < 0 && pl_tensor_per_micro_batch(g, op->inputs[j]))
                return pl_error_set(err, PL_EINTERNAL, NULL, "update \"%s\" reads an activation",
                                    op->name);
            int source = pl_source_task(b, op->inputs[j], d, k);
            if (source >= 0 && !pl_edges_add(edges, source, i))
                return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
        if (pl_op_info_of(op->kind)->mutates && k > 0 &&
            !pl_edges_add(edges, pl_op_task(b, task->op, k - 1), i))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    return PL_OK;
}

/* Task a before task b: the smaller key, then the earlier creation. */
static bool key_less(const void *keys, int a, int b)
{
    int c = compare_keys(((const task_key *)keys)[a], ((const task_key *)keys)[b]);
    return c < 0 || (c == 0 && a < b);
}

/* Sorts the tasks into program order (Kahn's algorithm, smallest key first). */
static pl_status order_tasks(pl_builder *b, pl_error *err)
{
    int n = b->p->n_tasks;
    pl_edges edges = {0};
    pl_status status = dataflow_edges(b, &edges, err);
    int *first = NULL, *succ = NULL, *indegree = calloc((size_t)n + 1, sizeof *indegree);
    int *heap = malloc((size_t)n * sizeof *heap + 1), n_heap = 0;
    pl_task *sorted = malloc((size_t)n * sizeof *sorted + 1);
    int *order = malloc((size_t)n * sizeof *order + 1);
    if (status == PL_OK && (!indegree || !heap || !sorted || !order ||
                            !pl_edges_csr(&edges, n, &first, &succ)))
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK) {
        for (int e = 0; e < edges.n; e++)
            indegree[edges.to[e]]++;
        for (int i = 0; i < n; i++)
            if (indegree[i] == 0)
                pl_heap_push(heap, &n_heap, i, key_less, b->keys);
        int placed = 0;
        while (n_heap > 0) {
            int i = pl_heap_pop(heap, &n_heap, key_less, b->keys);
            order[i] = placed;
            sorted[placed++] = b->p->tasks[i];
            for (int e = first[i]; e < first[i + 1]; e++)
                if (--indegree[succ[e]] == 0)
                    pl_heap_push(heap, &n_heap, succ[e], key_less, b->keys);
        }
        if (placed != n)
            status = pl_error_set(err, PL_EINTERNAL, NULL, "the step's tasks form a cycle");
    }
    if (status == PL_OK) {
        memcpy(b->p->tasks, sorted, (size_t)n * sizeof *sorted);
        memcpy(b->position, order, (size_t)n * sizeof *order);
    }
    pl_edges_free(&edges);
    free(first);
    free(succ);
    free(indegree);
    free(heap);
    free(sorted);
    free(order);
    return status;
}

/* ---- edges ------------------------------------------------------------------------------- */

bool pl_edges_add(pl_edges *e, int from, int to)
{
    int from_cap = e->cap, to_cap = e->cap;
    bool room = pl_grow(&e->from, &from_cap, e->n + 1, sizeof *e->from, 256) &&
                pl_grow(&e->to, &to_cap, e->n + 1, sizeof *e->to, 256);
    e->cap = from_cap < to_cap ? from_cap : to_cap; /* what both arrays hold */
    if (!room)
        return false;
    e->from[e->n] = from;
    e->to[e->n++] = to;
    return true;
}

bool pl_edges_csr(const pl_edges *e, int n_tasks, int **first, int **succ)
{
    *first = calloc((size_t)n_tasks + 2, sizeof **first);
    *succ = malloc((size_t)e->n * sizeof **succ + 1);
    if (!*first || !*succ) {
        free(*first);
        free(*succ);
        *first = *succ = NULL;
        return false;
    }
    for (int i = 0; i < e->n; i++)
        (*first)[e->from[i] + 2]++;
    for (int i = 0; i < n_tasks; i++)
        (*first)[i + 2] += (*first)[i + 1];
    for (int i = 0; i < e->n; i++) /* stable: successors in the order they were added */
        (*succ)[(*first)[e->from[i] + 1]++] = e->to[i];
    return true;
}

void pl_edges_free(pl_edges *e)
{
    free(e->from);
    free(e->to);
    *e = (pl_edges){0};
}

/* ---- the program ------------------------------------------------------------------------- */

void pl_program_free(pl_program *p)
{
    if (!p)
        return;
    pl_partitions_free(p->partitions);
    free(p->links);
    free(p->shapes);
    free(p->op_flops);
    free(p->tasks);
    free(p->succ);
    free(p->refs);
    free(p->buffers);
    free(p->memory);
    free(p);
}

static void builder_free(pl_builder *b)
{
    free(b->keys);
    free(b->position);
    free(b->op_task);
    free(b->copy_task);
    free(b->link_index);
    free(b->tensor_transfers);
    free(b->transfers_by_tensor);
}

/* The transfers of each tensor, for finding the copy a device reads. */
static bool index_transfers(pl_builder *b)
{
    const pl_partitions *parts = b->parts;
    int n = b->g->n_tensors;
    b->tensor_transfers = calloc((size_t)n + 2, sizeof(int));
    b->transfers_by_tensor = malloc((size_t)parts->n_transfers * sizeof(int) + 1);
    if (!b->tensor_transfers || !b->transfers_by_tensor)
        return false;
    for (int x = 0; x < parts->n_transfers; x++)
        b->tensor_transfers[parts->transfers[x].tensor + 2]++;
    for (int t = 0; t < n; t++)
        b->tensor_transfers[t + 2] += b->tensor_transfers[t + 1];
    for (int x = 0; x < parts->n_transfers; x++)
        b->transfers_by_tensor[b->tensor_transfers[parts->transfers[x].tensor + 1]++] = x;
    return true;
}

/* Shapes and FLOPs at the micro-batch size. */
static pl_status micro_batch_shapes(pl_program *p, pl_error *err)
{
    const pl_graph *g = p->graph;
    p->shapes = malloc((size_t)g->n_tensors * sizeof *p->shapes);
    p->op_flops = malloc((size_t)g->n_ops * sizeof *p->op_flops + 1);
    if (!p->shapes || !p->op_flops)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = pl_graph_shapes_for_batch(g, g->batch_size / p->micro_batches, p->shapes,
                                                 err);
    for (int o = 0; status == PL_OK && o < g->n_ops; o++) {
        pl_infer_ctx ctx;
        if (!pl_op_infer(g, o, p->shapes, &ctx, &p->op_flops[o]))
            status = pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\": %s", g->ops[o].name,
                                  ctx.message);
    }
    return status;
}

/* A parameter or state an op changes in place must be at home on the op's device. */
static pl_status check_mutations(const pl_builder *b, pl_error *err)
{
    for (int o = 0; o < b->g->n_ops; o++) {
        const pl_op *op = &b->g->ops[o];
        if (!pl_op_info_of(op->kind)->mutates)
            continue;
        for (int j = 0; j < op->n_inputs; j++) {
            pl_tensor_kind kind = b->g->tensors[op->inputs[j]].kind;
            if (kind == PL_TENSOR_STATE &&
                b->parts->tensor_device[op->inputs[j]] != b->parts->op_device[o])
                return pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\" changes \"%s\", which "
                                    "lives on another device", op->name,
                                    b->g->tensors[op->inputs[j]].name);
        }
    }
    return PL_OK;
}

pl_program *pl_program_new(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                           pl_error *err)
{
    if (pl_plan_check(plan, g, c, err) != PL_OK)
        return NULL;
    pl_program *p = calloc(1, sizeof *p);
    pl_builder b = {.g = g, .c = c, .p = p, .m = plan->micro_batches};
    pl_status status = PL_ENOMEM;
    if (!p)
        goto fail;
    p->graph = g;
    p->n_devices = c->n_devices;
    p->micro_batches = plan->micro_batches;
    p->schedule = plan->schedule;
    if (!(p->partitions = pl_partitions_new(plan, g, c->n_devices, err)))
        goto fail;
    b.parts = p->partitions;
    size_t n_devices = (size_t)c->n_devices;
    size_t cap = ((size_t)g->n_ops + (size_t)b.parts->n_transfers) * (size_t)b.m + 1;
    p->tasks = malloc(cap * sizeof *p->tasks);
    p->links = malloc(n_devices * n_devices * sizeof *p->links);
    p->memory = calloc(n_devices, sizeof *p->memory);
    b.keys = malloc(cap * sizeof *b.keys);
    b.position = malloc(cap * sizeof *b.position);
    b.op_task = malloc((size_t)g->n_ops * sizeof *b.op_task + 1);
    b.copy_task = malloc((size_t)b.parts->n_transfers * sizeof *b.copy_task + 1);
    b.link_index = malloc(n_devices * n_devices * sizeof *b.link_index);
    if (!p->tasks || !p->links || !p->memory || !b.keys || !b.position || !b.op_task ||
        !b.copy_task || !b.link_index || !index_transfers(&b)) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < n_devices * n_devices; i++)
        b.link_index[i] = -1;
    if ((status = micro_batch_shapes(p, err)) != PL_OK ||
        (status = check_mutations(&b, err)) != PL_OK ||
        (status = create_tasks(&b, plan, err)) != PL_OK ||
        (status = order_tasks(&b, err)) != PL_OK ||
        (status = pl_program_assign_buffers(&b, err)) != PL_OK)
        goto fail;
    builder_free(&b);
    return p;
fail:
    if (status == PL_ENOMEM)
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    builder_free(&b);
    pl_program_free(p);
    return NULL;
}

double pl_task_flops(const pl_program *p, const pl_task *task)
{
    return task->kind == PL_TASK_OP ? p->op_flops[task->op] : 0;
}

int64_t pl_task_bytes(const pl_program *p, const pl_task *task)
{
    return task->kind == PL_TASK_COPY ? p->buffers[p->refs[task->first_ref + 1]].bytes : 0;
}

void pl_task_name(const pl_program *p, const pl_task *task, char *buf, size_t cap)
{
    const pl_graph *g = p->graph;
    const char *name = task->kind == PL_TASK_OP
                           ? g->ops[task->op].name
                           : g->tensors[p->partitions->transfers[task->transfer].tensor].name;
    const char *what = task->kind == PL_TASK_COPY ? "copy " : "";
    if (task->micro_batch >= 0)
        snprintf(buf, cap, "%s%s#%d", what, name, task->micro_batch);
    else
        snprintf(buf, cap, "%s%s", what, name);
}
