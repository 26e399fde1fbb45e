/* The model loader's graph checks: every input names a defined tensor, the nodes form no
 * cycle, and shapes infer. Ops end up in topological order, the file's own order kept
 * wherever the dataflow allows (the smallest file index goes first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adjacency.h"
#include "graph_build.h"
#include "heap.h"
#include "load_impl.h"

static bool out_of_memory(loader *L)
{
    pl_error_set(L->r.err, PL_ENOMEM, NULL, "out of memory");
    return false;
}

/* The inputs named before their tensors: every output is known by now. The pending list
 * is in file order, so the first undefined name found is the file's first. */
bool pl_load_resolve_inputs(loader *L)
{
    for (int k = 0; k < L->n_pending; k++) {
        const pl_load_pending *p = &L->pending[k];
        int t = pl_strmap_get(&L->tensor_names, p->name);
        if (t < 0) {
            char path[64];
            snprintf(path, sizeof path, "/nodes/%d/inputs/%d", p->op, p->slot);
            pl_error_set(L->r.err, PL_EINPUT, path, "tensor \"%s\" is not defined", p->name);
            return false;
        }
        L->graph->ops[p->op].inputs[p->slot] = t;
    }
    return true;
}

/* The first of op o's producers that is left unsorted, or -1. */
static int pending_producer(const pl_adjacency *a, const int *pending, int o)
{
    for (int e = a->producer_first[o]; e < a->producer_first[o + 1]; e++)
        if (pending[a->producer[e]])
            return a->producer[e];
    return -1;
}

/* The cycle's ops by name in dataflow order, back to the first; a long cycle by its
 * ends, so that the message stays one line. `cycle` lists each op's producer after it. */
static void describe_cycle(const pl_graph *g, const int *cycle, int len, char *text, size_t cap)
{
    size_t used = 0;
    text[0] = '\0';
    for (int k = 0; k <= len && used < cap; k++) {
        if (len > 12 && k == 5) {
            used += (size_t)snprintf(text + used, cap - used, " -> ... %d more", len - 9);
            k = len - 4;
        }
        const char *name = g->ops[cycle[(len - k) % len]].name;
        used += (size_t)snprintf(text + used, cap - used, "%s\"%s\"", k ? " -> " : "", name);
    }
}

/* Some ops are left unsorted: walk from one of them to a producer that is also left until
 * an op repeats; the ops from its first visit on form a cycle. */
static bool report_cycle(loader *L, const pl_adjacency *adjacency, const int *pending)
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
        o = pending_producer(adjacency, pending, o); /* a pending op always has one */
    }
    /* walk[step[o]..n) is the cycle, each op's producer after it; the dataflow runs the
     * other way: walk[first], walk[n-1], ..., walk[first+1], back to walk[first]. */
    int first = step[o];
    char text[PL_ERROR_TEXT_MAX - 64];
    describe_cycle(g, walk + first, n - first, text, sizeof text);
    char path[64];
    snprintf(path, sizeof path, "/nodes/%d", walk[first]);
    pl_error_set(L->r.err, PL_EINPUT, path, "the nodes form a cycle: %s", text);
    free(walk);
    free(step);
    return false;
}

static bool earlier_in_file(const void *context, int a, int b)
{
    (void)context;
    return a < b;
}

/* Kahn's algorithm, the ready op that comes first in the file taken first: fills order[]
 * and returns how many ops it sorted, fewer than all when some form a cycle; waiting[o]
 * (each op's inputs not yet produced) is then nonzero exactly for the ops left. ready[]
 * is room for the ready ops. */
static int topological_order(const pl_adjacency *a, int *waiting, int *ready, int *order)
{
    int n_ready = 0, sorted = 0;
    for (int o = 0; o < a->n_ops; o++) {
        waiting[o] = pl_adjacency_n_producers(a, o);
        if (waiting[o] == 0)
            pl_heap_push(ready, &n_ready, o, earlier_in_file, NULL);
    }
    while (n_ready > 0) {
        int o = pl_heap_pop(ready, &n_ready, earlier_in_file, NULL);
        order[sorted++] = o;
        for (int c = a->consumer_first[o]; c < a->consumer_first[o + 1]; c++)
            if (--waiting[a->consumer[c]] == 0)
                pl_heap_push(ready, &n_ready, a->consumer[c], earlier_in_file, NULL);
    }
    return sorted;
}

/* Puts the ops in `order`, each forward op its own co-location group, and points the
 * tensors' producers at the new positions (`position`: room for one index per op). The
 * ops move in place, cycle by cycle of the permutation (`order` is spent doing it): a
 * second array of ops would double the loader's largest allocation. */
static void reorder_ops(loader *L, int *order, int *position)
{
    pl_graph *g = L->graph;
    for (int k = 0; k < g->n_ops; k++)
        position[order[k]] = k;
    for (int k = 0; k < g->n_ops; k++) {
        if (order[k] == k)
            continue;
        pl_op first = g->ops[k];
        int j = k;
        while (order[j] != k) {
            int from = order[j];
            g->ops[j] = g->ops[from];
            order[j] = j;
            j = from;
        }
        g->ops[j] = first;
        order[j] = j;
    }
    for (int k = 0; k < g->n_ops; k++)
        g->ops[k].group = k;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].producer >= 0)
            g->tensors[t].producer = position[g->tensors[t].producer];
}

bool pl_load_sort(loader *L)
{
    pl_graph *g = L->graph;
    size_t count = (size_t)g->n_ops + 1;
    pl_adjacency *adjacency = pl_adjacency_new(g, NULL, L->r.err);
    int *waiting = malloc(count * sizeof *waiting);
    int *ready = malloc(count * sizeof *ready);
    int *order = malloc(count * sizeof *order);
    bool ok = adjacency && waiting && ready && order ? true : out_of_memory(L);
    if (ok && topological_order(adjacency, waiting, ready, order) < g->n_ops)
        ok = report_cycle(L, adjacency, waiting);
    if (ok)
        reorder_ops(L, order, waiting); /* waiting is spent: the positions go there */
    pl_adjacency_free(adjacency);
    free(waiting);
    free(ready);
    free(order);
    return ok;
}

/* ---- shapes and costs --------------------------------------------------------------------- */

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
            else if (ctx.blame_output >= 0)
                snprintf(path + n, sizeof path - (size_t)n, "/outputs/%d", ctx.blame_output);
            pl_error_set(L->r.err, PL_EINPUT, path, "%s \"%s\": %s",
                         pl_op_info_of(op->kind)->name, op->name, ctx.message);
            return false;
        }
    }
    g->n_forward_ops = g->n_ops;
    g->op_cap = g->n_ops;
    g->tensor_cap = L->tensor_cap;
    return true;
}
