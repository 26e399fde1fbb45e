/* Compiling a placed training step (program.h: pl_program_new): the tasks, and their
 * order. Where replicas keep their values is program_places.c's, their all-reduces
 * program_allreduce.c's, the schedules' timeline program_schedule.c's; buffers,
 * dependencies and memory follow in program_buffers.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_build.h"
#include "grow.h"
#include "heap.h"
#include "program_impl.h"

/* ---- tasks ------------------------------------------------------------------------------- */

/* Tasks are created op by op, slice by slice (an update once per copy of its parameter);
 * `position` maps that creation index to the program order once the tasks are sorted (the
 * identity before). */
static int op_task(const pl_builder *b, int o, int k)
{
    return b->position[b->op_task[o] + k];
}

/* A transfer for slices: replica r's micro-batches follow those of the replicas before it
 * that it also serves. */
static int copy_task(const pl_builder *b, int x, int k)
{
    uint64_t replicas = b->transfer_replicas[x];
    if (!replicas)
        return b->position[b->copy_task[x]];
    int r = pl_replica_of(b, k);
    int before = __builtin_popcountll(replicas & ((UINT64_C(1) << r) - 1));
    return b->position[b->copy_task[x] + before * b->m + k % b->m];
}

/* The transfer of tensor t to device `to` (from device `from`, or any when -1). */
static int find_transfer(const pl_builder *b, int t, int from, int to)
{
    for (int i = b->tensor_transfers[t]; i < b->tensor_transfers[t + 1]; i++) {
        const pl_transfer *tr = &b->p->transfers[b->transfers_by_tensor[i]];
        if (tr->to == to && (from < 0 || tr->from == from))
            return b->transfers_by_tensor[i];
    }
    return -1;
}

/* Every task with its key: ops per slice (updates once per copy), copies per slice for
 * activations, once for parameters; then the all-reduces. */
static pl_status create_tasks(pl_builder *b, const pl_plan *plan, pl_error *err)
{
    const pl_graph *g = b->g;
    int m = b->m;
    int *rank = pl_rank_blocks(plan->n_stages, m, plan->schedule, err);
    if (!rank)
        return err ? err->status : PL_ENOMEM;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        b->op_task[o] = b->p->n_tasks;
        if (op->phase == PL_PHASE_UPDATE) {
            int t = pl_graph_updated_param(g, o);
            for (int i = t < 0 ? 0 : b->first_place[t]; t >= 0 && i < b->first_place[t + 1]; i++)
                if (b->place_copy[i] >= 0)
                    pl_add_task(b, PL_TASK_OP, o, -1, b->place_device[i],
                                (task_key){INT_MAX, o, i - b->first_place[t]});
            if (t < 0)
                pl_add_task(b, PL_TASK_OP, o, -1, b->parts[0]->op_device[o],
                            (task_key){INT_MAX, o, 0});
            continue;
        }
        int phase = op->phase == PL_PHASE_FORWARD ? PL_FORWARD : PL_BACKWARD;
        /* deferred weight gradients rank behind every forward and backward block */
        int later = plan->defer_weight_gradients && op->weight_gradient
                        ? plan->n_stages * 2 * m
                        : 0;
        for (int k = 0; k < b->slices; k++) {
            const pl_partitions *parts = b->parts[pl_replica_of(b, k)];
            int block = pl_block_of(parts->op_stage[o], phase, k % m, m);
            pl_add_task(b, PL_TASK_OP, o, k, parts->op_device[o],
                        (task_key){later + rank[block], o, 0});
        }
    }
    for (int x = 0; x < b->first_collective_transfer; x++) {
        const pl_transfer *tr = &b->p->transfers[x];
        int resource = pl_copy_resource(b, tr->from, tr->to);
        b->copy_task[x] = b->p->n_tasks;
        int producer = g->tensors[tr->tensor].producer;
        if (!b->transfer_replicas[x]) {
            pl_add_task(b, PL_TASK_COPY, x, -1, resource, (task_key){-1, x, 0});
            continue;
        }
        for (int k = 0; k < b->slices; k++) {
            if (!(b->transfer_replicas[x] >> pl_replica_of(b, k) & 1))
                continue;
            task_key key = b->keys[op_task(b, producer, k)];
            key.sub = 1 + x;
            pl_add_task(b, PL_TASK_COPY, x, k, resource, key);
        }
    }
    free(rank);
    if (!pl_create_allreduce_tasks(b))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
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

/* The task whose result a task on device `d` reads as tensor t, slice k: its producer on
 * the same device, the copy that brought it, or -1 (inputs, constants, and parameters and
 * state with a copy there, are there before the step). */
static int source_task(const pl_builder *b, int t, int d, int k)
{
    pl_tensor_kind kind = pl_tensor_kind_of(b, t);
    if (kind == PL_TENSOR_INPUT || kind == PL_TENSOR_CONST)
        return -1;
    if (!pl_tensor_per_micro_batch(b, t))
        return pl_has_copy(b, t, d) ? -1 : copy_task(b, find_transfer(b, t, -1, d), -1);
    int home = b->parts[pl_replica_of(b, k)]->tensor_device[t];
    if (home != d)
        return copy_task(b, find_transfer(b, t, home, d), k);
    return op_task(b, b->g->tensors[t].producer, k);
}

/* The dataflow edges, a mutating op's micro-batches in turn (accumulation order), and the
 * all-reduces'. */
static pl_status dataflow_edges(pl_builder *b, pl_edges *edges, pl_error *err)
{
    const pl_graph *g = b->g;
    for (int i = 0; i < b->p->n_tasks; i++) {
        const pl_task *task = &b->p->tasks[i];
        if (task->kind == PL_TASK_REDUCE)
            continue;
        if (task->kind == PL_TASK_COPY) {
            int t = b->p->transfers[task->transfer].tensor;
            if (task->micro_batch >= 0 &&
                !pl_edges_add(edges, op_task(b, g->tensors[t].producer, task->micro_batch), i))
                return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
            continue;
        }
        const pl_op *op = &g->ops[task->op];
        int d = task->resource, k = task->micro_batch;
        for (int j = 0; j < op->n_inputs; j++) {
            if (k < 0 && pl_tensor_per_micro_batch(b, op->inputs[j]))
                return pl_error_set(err, PL_EINTERNAL, NULL, "update \"%s\" reads an activation",
                                    op->name);
            int source = source_task(b, op->inputs[j], d, k);
            if (source >= 0 && !pl_edges_add(edges, source, i))
                return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
        if (pl_op_info_of(op->kind)->mutates && k % b->m > 0 &&
            !pl_edges_add(edges, op_task(b, task->op, k - 1), i))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    if (!pl_allreduce_edges(b, edges))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
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
        for (int i = 0; i < n; i++)
            b->origin[order[i]] = i;
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

/* ---- the program ------------------------------------------------------------------------- */

static void builder_free(pl_builder *b)
{
    for (int r = 1; b->parts && r < b->replicas; r++) /* replica 0's are the program's */
        pl_partitions_free(b->parts[r]);
    free(b->parts);
    free(b->transfer_replicas);
    free(b->first_place);
    free(b->place_device);
    free(b->place_copy);
    free(b->place_tensor);
    free(b->place_stored);
    for (int q = 0; b->buckets && q < b->n_buckets; q++)
        free(b->buckets[q].storage);
    free(b->buckets);
    free(b->members);
    free(b->member_start);
    free(b->tensor_kind);
    free(b->update_op);
    free(b->first_accumulation);
    free(b->accumulations);
    free(b->collective_ops);
    free(b->collective_refs);
    free(b->unit_first);
    free(b->unit_count);
    free(b->origin);
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
    const pl_transfer *transfers = b->p->transfers;
    int n = b->g->n_tensors, n_transfers = b->p->n_transfers;
    b->tensor_transfers = calloc((size_t)n + 2, sizeof(int));
    b->transfers_by_tensor = malloc((size_t)n_transfers * sizeof(int) + 1);
    if (!b->tensor_transfers || !b->transfers_by_tensor)
        return false;
    for (int x = 0; x < n_transfers; x++)
        b->tensor_transfers[transfers[x].tensor + 2]++;
    for (int t = 0; t < n; t++)
        b->tensor_transfers[t + 2] += b->tensor_transfers[t + 1];
    for (int x = 0; x < n_transfers; x++)
        b->transfers_by_tensor[b->tensor_transfers[transfers[x].tensor + 1]++] = x;
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

/* A parameter or state an op changes in place must be at home on the op's device, in
 * every replica. */
static pl_status check_mutations(const pl_builder *b, pl_error *err)
{
    for (int o = 0; o < b->g->n_ops; o++) {
        const pl_op *op = &b->g->ops[o];
        if (!pl_op_info_of(op->kind)->mutates)
            continue;
        for (int j = 0; j < op->n_inputs * b->replicas; j++) {
            const pl_partitions *parts = b->parts[j / op->n_inputs];
            int t = op->inputs[j % op->n_inputs];
            if (pl_tensor_kind_of(b, t) == PL_TENSOR_STATE &&
                parts->tensor_device[t] != parts->op_device[o])
                return pl_error_set(err, PL_EINTERNAL, NULL, "op \"%s\" changes \"%s\", which "
                                    "lives on another device", op->name,
                                    b->g->tensors[t].name);
        }
    }
    return PL_OK;
}

static pl_program *compile(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                           bool tight, pl_error *err)
{
    if (pl_plan_check(plan, g, c, err) != PL_OK)
        return NULL;
    pl_program *p = calloc(1, sizeof *p);
    pl_builder b = {.g = g, .c = c, .plan = plan, .p = p, .tight = tight,
                    .replicas = plan->replicas,
                    .m = plan->micro_batches,
                    .slices = plan->replicas * plan->micro_batches};
    pl_status status = PL_ENOMEM;
    if (!p)
        goto fail;
    p->graph = p->model = g;
    p->n_devices = c->n_devices;
    p->replicas = plan->replicas;
    p->micro_batches = b.slices;
    p->schedule = plan->schedule;
    if (!(b.tensor_kind = malloc((size_t)g->n_tensors + 1)))
        goto fail;
    for (int t = 0; t < g->n_tensors; t++)
        b.tensor_kind[t] = (unsigned char)g->tensors[t].kind;
    if ((status = pl_program_places(&b, err)) != PL_OK)
        goto fail;
    p->partitions = b.parts[0];
    if (!index_transfers(&b)) {
        status = PL_ENOMEM;
        goto fail;
    }
    if ((status = pl_index_accumulations(&b, err)) != PL_OK)
        goto fail;
    status = PL_ENOMEM;
    size_t n_devices = (size_t)c->n_devices;
    size_t cap = ((size_t)g->n_ops + (size_t)p->n_transfers) * (size_t)b.slices +
                 (size_t)g->n_ops * (size_t)b.replicas + 1; /* the all-reduces' grow it */
    b.task_cap = (int)cap;
    p->tasks = malloc(cap * sizeof *p->tasks);
    p->links = malloc(n_devices * n_devices * sizeof *p->links);
    p->memory = calloc(n_devices, sizeof *p->memory);
    b.keys = malloc(cap * sizeof *b.keys);
    b.position = malloc(cap * sizeof *b.position);
    b.origin = malloc(cap * sizeof *b.origin);
    b.op_task = malloc((size_t)g->n_ops * sizeof *b.op_task + 1);
    b.copy_task = malloc((size_t)p->n_transfers * sizeof *b.copy_task + 1);
    b.link_index = malloc(n_devices * n_devices * sizeof *b.link_index);
    if (!p->tasks || !p->links || !p->memory || !b.keys || !b.position || !b.origin ||
        !b.op_task || !b.copy_task || !b.link_index) {
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
    if (p && !p->partitions && b.parts)
        p->partitions = b.parts[0];
    builder_free(&b);
    pl_program_free(p);
    return NULL;
}

/* Arenas packed by lifetime where the plan recomputes activations (it trades time for
 * memory) or where the program would not fit without (program.h, "Memory"). */
static pl_program *compile_to_fit(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                                  pl_error *err)
{
    bool recomputes = false;
    for (int o = 0; o < plan->n_ops; o++)
        recomputes = recomputes || plan->recompute[o];
    pl_program *p = compile(g, c, plan, recomputes, err);
    if (!p || recomputes || p->oom_device < 0)
        return p;
    pl_program *tight = compile(g, c, plan, true, err);
    if (!tight)
        return p;
    pl_program_free(p);
    return tight;
}

pl_program *pl_program_new(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                           pl_error *err)
{
    if (!pl_plan_rewrites_graph(plan))
        return compile_to_fit(g, c, plan, err);
    pl_split_graph *split;
    pl_plan *restated;
    if (pl_plan_check(plan, g, c, err) != PL_OK ||
        pl_plan_split_graph(plan, g, &split, &restated, err) != PL_OK)
        return NULL;
    pl_program *p = compile_to_fit(split->graph, c, restated, err);
    if (!p) {
        pl_split_graph_free(split);
        pl_plan_free(restated);
        return NULL;
    }
    p->model = g;
    p->split = split;
    p->split_plan = restated;
    return p;
}
