/* The model loader's graph checks: every input names a defined tensor, the nodes form no
 * cycle, and shapes infer. Ops end up in topological order, the file's own order kept
 * wherever the dataflow allows (the smallest file index goes first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adjacency.h"
#include "graph_build.h"
#include "load_impl.h"

static bool out_of_memory(loader *L)
{
    pl_error_set(L->r.err, PL_ENOMEM, NULL, "out of memory");
    return false;
}

static bool resolve_inputs(loader *L)
{
    pl_graph *g = L->graph;
    for (int o = 0; o < g->n_ops; o++) {
        pl_op *op = &g->ops[o];
        for (int i = 0; i < op->n_inputs; i++) {
            const char *name = json_string_value(json_array_get(L->input_names[o], (size_t)i));
            int t = pl_strmap_get(&L->tensor_names, name);
            if (t < 0) {
                char path[64];
                snprintf(path, sizeof path, "/nodes/%d/inputs/%d", o, i);
                pl_error_set(L->r.err, PL_EINPUT, path, "tensor \"%s\" is not defined", name);
                return false;
            }
            op->inputs[i] = t;
        }
    }
    return true;
}

/* A binary min-heap of op indices. */
typedef struct heap {
    int *items;
    int size;
} heap;

static void heap_push(heap *h, int value)
{
    int i = h->size++;
    while (i > 0 && h->items[(i - 1) / 2] > value) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = value;
}

static int heap_pop(heap *h)
{
    int top = h->items[0], last = h->items[--h->size], i = 0;
    for (;;) {
        int child = 2 * i + 1;
        if (child >= h->size)
            break;
        if (child + 1 < h->size && h->items[child + 1] < h->items[child])
            child++;
        if (h->items[child] >= last)
            break;
        h->items[i] = h->items[child];
        i = child;
    }
    if (h->size > 0)
        h->items[i] = last;
    return top;
}

/* Some ops are left unsorted: walk from one of them to a producer that is also left until
 * an op repeats; the ops from its first visit on form a cycle. */
static bool report_cycle(loader *L, const int *pending)
{
    pl_graph *g = L->graph;
    int *step = malloc((size_t)g->n_ops * sizeof *step);
    if (!step)
        return out_of_memory(L);
    for (int o = 0; o < g->n_ops; o++)
        step[o] = -1;
    int start = 0;
    while (!pending[start])
        start++;
    int o = start, n = 0;
    int *walk = malloc((size_t)g->n_ops * sizeof *walk);
    if (!walk) {
        free(step);
        return out_of_memory(L);
    }
    while (step[o] < 0) {
        step[o] = n;
        walk[n++] = o;
        const pl_op *op = &g->ops[o];
        int next = -1;
        for (int i = 0; i < op->n_inputs && next < 0; i++) {
            int producer = g->tensors[op->inputs[i]].producer;
            if (producer >= 0 && pending[producer])
                next = producer;
        }
        o = next; /* a pending op always has a pending producer */
    }
    /* walk[step[o]..n) is the cycle, each op's producer after it; the dataflow runs the
     * other way: walk[first], walk[n-1], ..., walk[first+1], back to walk[first]. */
    int first = step[o], len = n - first;
    char text[PL_ERROR_TEXT_MAX - 64];
    size_t used = 0;
    for (int k = 0; k <= len && used < sizeof text; k++) {
        if (len > 12 && k == 5) { /* a long cycle: its ends, on one line */
            used += (size_t)snprintf(text + used, sizeof text - used, " -> ... %d more",
                                     len - 9);
            k = len - 4;
        }
        const char *name = g->ops[walk[first + (len - k) % len]].name;
        used += (size_t)snprintf(text + used, sizeof text - used, "%s\"%s\"", k ? " -> " : "",
                                 name);
    }
    char path[64];
    snprintf(path, sizeof path, "/nodes/%d", walk[first]);
    pl_error_set(L->r.err, PL_EINPUT, path, "the nodes form a cycle: %s", text);
    free(walk);
    free(step);
    return false;
}

bool pl_load_resolve_and_sort(loader *L)
{
    if (!resolve_inputs(L))
        return false;
    pl_graph *g = L->graph;
    int n = g->n_ops;
    size_t count = n > 0 ? (size_t)n : 1; /* n >= 1: the loader rejects an empty graph */
    pl_adjacency *adjacency = pl_adjacency_new(g, NULL, L->r.err);
    int *waiting = malloc(count * sizeof *waiting); /* inputs not yet produced */
    int *order = malloc(count * sizeof *order);
    heap ready = {malloc(count * sizeof(int)), 0};
    bool ok = false;
    if (!adjacency || !waiting || !order || !ready.items)
        goto done;
    for (int o = 0; o < n; o++)
        waiting[o] = pl_adjacency_n_producers(adjacency, o);

    for (int o = 0; o < n; o++)
        if (waiting[o] == 0)
            heap_push(&ready, o);
    int sorted = 0;
    while (ready.size > 0) {
        int o = heap_pop(&ready);
        order[sorted++] = o;
        for (int c = adjacency->consumer_first[o]; c < adjacency->consumer_first[o + 1]; c++)
            if (--waiting[adjacency->consumer[c]] == 0)
                heap_push(&ready, adjacency->consumer[c]);
    }
    if (sorted < n) {
        report_cycle(L, waiting); /* nonzero exactly for the ops left */
        goto cleanup;
    }
    /* Reorder ops and point producers at the new positions. */
    pl_op *ops = malloc(count * sizeof *ops);
    if (!ops)
        goto done;
    int *position = waiting; /* reused: old index -> new index */
    for (int k = 0; k < n; k++) {
        ops[k] = g->ops[order[k]];
        ops[k].group = k; /* a forward op is its own co-location group */
        position[order[k]] = k;
    }
    free(g->ops);
    g->ops = ops;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer >= 0)
            g->tensors[t].producer = position[g->tensors[t].producer];
    ok = true;
    goto cleanup;
done:
    out_of_memory(L);
cleanup:
    pl_adjacency_free(adjacency);
    free(waiting);
    free(order);
    free(ready.items);
    return ok;
}

/* ---- shapes and costs --------------------------------------------------------------------- */

static bool check_output_size(loader *L, const pl_op *op, int slot, const pl_tensor *t)
{
    int64_t count = 1;
    bool too_big = false;
    for (int a = 0; a < t->rank; a++) {
        if (t->dims[a] < 1 || t->dims[a] > PL_MAX_DIM || count > PL_MAX_ELEMENTS / t->dims[a])
            too_big = true;
        else
            count *= t->dims[a];
    }
    if (!too_big)
        return true;
    char path[64];
    snprintf(path, sizeof path, "/nodes/%d/outputs/%d", op->source_index, slot);
    pl_error_set(L->r.err, PL_EINPUT, path, "%s \"%s\": the output \"%s\" would exceed the "
                 "limits (each dimension 1 to %lld, at most %lld elements)",
                 pl_op_info_of(op->kind)->name, op->name, t->name, (long long)PL_MAX_DIM,
                 (long long)PL_MAX_ELEMENTS);
    return false;
}

bool pl_load_infer_shapes(loader *L)
{
    pl_graph *g = L->graph;
    for (int o = 0; o < g->n_ops; o++) {
        pl_op *op = &g->ops[o];
        pl_infer_ctx ctx;
        if (!pl_graph_infer_op(g, o, &ctx)) {
            char path[PL_ERROR_PATH_MAX];
            int n = snprintf(path, sizeof path, "/nodes/%d", op->source_index);
            /* Point at the attribute when the file set it, else at the input. */
            if (ctx.blame_attr >= 0 && (op->attrs.given & PL_ATTR_BIT(ctx.blame_attr)))
                snprintf(path + n, sizeof path - (size_t)n, "/attrs/%s",
                         pl_attr_info_of((pl_attr_id)ctx.blame_attr)->name);
            else if (ctx.blame_input >= 0)
                snprintf(path + n, sizeof path - (size_t)n, "/inputs/%d", ctx.blame_input);
            pl_error_set(L->r.err, PL_EINPUT, path, "%s \"%s\": %s",
                         pl_op_info_of(op->kind)->name, op->name, ctx.message);
            return false;
        }
        for (int i = 0; i < op->n_outputs; i++)
            if (!check_output_size(L, op, i, &g->tensors[op->outputs[i]]))
                return false;
    }
    g->n_forward_ops = g->n_ops;
    g->op_cap = g->n_ops;
    g->tensor_cap = L->tensor_cap;
    return true;
}
