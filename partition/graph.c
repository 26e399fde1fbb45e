/* The adjacency and units the solvers share (partition_impl.h): colour classes contracted,
 * cycles among them fused, numbered in a topological order. */
#include <stdlib.h>
#include <string.h>

#include "partition_impl.h"

bool pl_partition_csr(int n, int m, const int *key, const int *value, int **start,
                      int **item)
{
    *start = calloc((size_t)n + 1, sizeof **start);
    *item = malloc(((size_t)m + 1) * sizeof **item);
    if (!*start || !*item)
        return false;
    for (int i = 0; i < m; i++)
        (*start)[key[i] + 1]++;
    for (int k = 0; k < n; k++)
        (*start)[k + 1] += (*start)[k];
    int *fill = malloc(((size_t)n + 1) * sizeof *fill);
    if (!fill)
        return false;
    memcpy(fill, *start, (size_t)n * sizeof *fill);
    for (int i = 0; i < m; i++)
        (*item)[fill[key[i]]++] = value[i];
    free(fill);
    return true;
}

/* Kahn's order of n vertices over CSR successors; returns how many it ordered (n when
 * acyclic). `order` holds them. */
static int topological_order(int n, const int *start, const int *next, int *order)
{
    int *indegree = calloc((size_t)n + 1, sizeof *indegree);
    if (!indegree)
        return -1;
    for (int i = 0; i < start[n]; i++)
        indegree[next[i]]++;
    int head = 0, tail = 0;
    for (int v = 0; v < n; v++)
        if (indegree[v] == 0)
            order[tail++] = v;
    while (head < tail) {
        int v = order[head++];
        for (int i = start[v]; i < start[v + 1]; i++)
            if (--indegree[next[i]] == 0)
                order[tail++] = next[i];
    }
    free(indegree);
    return tail;
}

int pl_partition_find_cycle(const pl_partition_instance *inst)
{
    int *start = NULL, *next = NULL;
    int *order = malloc(((size_t)inst->n_nodes + 1) * sizeof *order);
    int found = -1;
    if (order && pl_partition_csr(inst->n_nodes, inst->n_edges, inst->edge_source, inst->edge_dest,
                           &start, &next)) {
        int ordered = topological_order(inst->n_nodes, start, next, order);
        if (ordered >= 0 && ordered < inst->n_nodes) {
            /* a node Kahn never reached whose predecessors are all unreached lies on, or
             * after, a cycle; walking back along unreached predecessors meets one */
            unsigned char *reached = calloc((size_t)inst->n_nodes, 1);
            for (int i = 0; reached && i < ordered; i++)
                reached[order[i]] = 1;
            for (int v = 0; reached && v < inst->n_nodes && found < 0; v++)
                if (!reached[v])
                    found = v;
            free(reached);
        }
    }
    free(order);
    free(start);
    free(next);
    return found;
}

/* Strongly connected components of n vertices (Kosaraju, without recursion): comp[v]. */
static bool components(int n, const int *start, const int *next, const int *rstart,
                       const int *rnext, int *comp)
{
    int *order = malloc(((size_t)n + 1) * sizeof *order);
    int *stack = malloc(((size_t)n + 1) * sizeof *stack);
    int *cursor = malloc(((size_t)n + 1) * sizeof *cursor);
    if (!order || !stack || !cursor) {
        free(order), free(stack), free(cursor);
        return false;
    }
    int n_order = 0;
    for (int v = 0; v < n; v++)
        comp[v] = -1, cursor[v] = -1;
    for (int root = 0; root < n; root++) {
        if (cursor[root] >= 0)
            continue;
        int top = 0;
        stack[top++] = root;
        cursor[root] = start[root];
        while (top > 0) {
            int v = stack[top - 1];
            if (cursor[v] < start[v + 1]) {
                int w = next[cursor[v]++];
                if (cursor[w] < 0)
                    cursor[w] = start[w], stack[top++] = w;
            } else {
                order[n_order++] = v;
                top--;
            }
        }
    }
    int n_comp = 0;
    for (int i = n - 1; i >= 0; i--) {
        int root = order[i];
        if (comp[root] >= 0)
            continue;
        int top = 0;
        stack[top++] = root;
        comp[root] = n_comp;
        while (top > 0) {
            int v = stack[--top];
            for (int k = rstart[v]; k < rstart[v + 1]; k++)
                if (comp[rnext[k]] < 0)
                    comp[rnext[k]] = n_comp, stack[top++] = rnext[k];
        }
        n_comp++;
    }
    free(order), free(stack), free(cursor);
    return true;
}

/* A class with backward nodes alone joins the unit of a neighbour that has one, passes
 * repeating while that helps; what stays alone becomes a unit of its own. */
static int attach_orphans(const pl_partition_graph *g, int *unit_of_class, int n_units)
{
    const pl_partition_instance *inst = g->instance;
    for (bool changed = true; changed;) {
        changed = false;
        for (int c = 0; c < inst->n_colours; c++) {
            if (unit_of_class[c] >= 0)
                continue;
            for (int i = g->class_start[c]; i < g->class_start[c + 1] && unit_of_class[c] < 0;
                 i++) {
                int v = g->class_node[i];
                for (int k = g->producer_start[v]; k < g->producer_start[v + 1]; k++)
                    if (unit_of_class[inst->nodes[g->producer[k]].colour] >= 0) {
                        unit_of_class[c] = unit_of_class[inst->nodes[g->producer[k]].colour];
                        break;
                    }
                for (int k = g->consumer_start[v];
                     k < g->consumer_start[v + 1] && unit_of_class[c] < 0; k++)
                    unit_of_class[c] = unit_of_class[inst->nodes[g->consumer[k]].colour];
            }
            changed = changed || unit_of_class[c] >= 0;
        }
    }
    for (int c = 0; c < inst->n_colours; c++)
        if (unit_of_class[c] < 0)
            unit_of_class[c] = n_units++;
    return n_units;
}

/* The edges between forward nodes of different classes, as class pairs. */
static int forward_class_edges(const pl_partition_instance *inst, int *from, int *to)
{
    int m = 0;
    for (int e = 0; e < inst->n_edges; e++) {
        const pl_partition_node *a = &inst->nodes[inst->edge_source[e]],
                                *b = &inst->nodes[inst->edge_dest[e]];
        if (!a->backward && !b->backward && a->colour != b->colour)
            from[m] = a->colour, to[m] = b->colour, m++;
    }
    return m;
}

/* Units: components of the forward class graph, orphans attached, renumbered in a
 * topological order of the unit graph, with their nodes and distinct predecessors. */
static bool build_units(pl_partition_graph *g)
{
    const pl_partition_instance *inst = g->instance;
    int n = inst->n_colours, m_max = inst->n_edges;
    int *from = malloc(((size_t)m_max + 1) * sizeof *from);
    int *to = malloc(((size_t)m_max + 1) * sizeof *to);
    int *start = NULL, *next = NULL, *rstart = NULL, *rnext = NULL, *ustart = NULL,
        *unext = NULL;
    int *comp = malloc(((size_t)n + 1) * sizeof *comp);
    int *rank = malloc(((size_t)n + 1) * sizeof *rank);
    int *keys = malloc(((size_t)inst->n_nodes + 1) * sizeof *keys);
    int *stamp = NULL;
    g->unit_of_class = malloc(((size_t)n + 1) * sizeof *g->unit_of_class);
    bool ok = from && to && comp && rank && keys && g->unit_of_class;
    int m = ok ? forward_class_edges(inst, from, to) : 0;
    ok = ok && pl_partition_csr(n, m, from, to, &start, &next) && pl_partition_csr(n, m, to, from, &rstart,
                                                                    &rnext) &&
         components(n, start, next, rstart, rnext, comp);
    if (ok) {
        bool *forward = calloc((size_t)n + 1, sizeof *forward);
        ok = forward != NULL;
        for (int v = 0; ok && v < inst->n_nodes; v++)
            forward[inst->nodes[v].colour] |= !inst->nodes[v].backward;
        /* components holding a forward class become units, numbered densely in their
         * order (rank is scratch here): a component of backward classes alone would
         * otherwise leave an empty unit, and orphans would be numbered past n */
        for (int c = 0; ok && c < n; c++)
            rank[c] = 0;
        for (int c = 0; ok && c < n; c++)
            rank[comp[c]] |= forward[c];
        int n_comp = 0;
        for (int k = 0; ok && k < n; k++)
            rank[k] = rank[k] ? n_comp++ : -1;
        for (int c = 0; ok && c < n; c++)
            g->unit_of_class[c] = forward[c] ? rank[comp[c]] : -1;
        free(forward);
        g->n_units = ok ? attach_orphans(g, g->unit_of_class, n_comp) : 0;
    }
    /* the unit graph, ordered */
    int mu = 0;
    for (int i = 0; ok && i < m; i++) {
        int a = g->unit_of_class[from[i]], b = g->unit_of_class[to[i]];
        if (a != b)
            from[mu] = a, to[mu] = b, mu++;
    }
    ok = ok && pl_partition_csr(g->n_units, mu, from, to, &ustart, &unext) &&
         topological_order(g->n_units, ustart, unext, rank) == g->n_units;
    if (ok) {
        /* rank holds units in order; invert it into new numbers */
        for (int i = 0; i < g->n_units; i++)
            comp[rank[i]] = i;
        for (int c = 0; c < n; c++)
            g->unit_of_class[c] = comp[g->unit_of_class[c]];
        for (int i = 0; i < mu; i++)
            from[i] = comp[from[i]], to[i] = comp[to[i]];
        /* distinct predecessors */
        stamp = malloc(((size_t)g->n_units + 1) * sizeof *stamp);
        ok = stamp && pl_partition_csr(g->n_units, mu, to, from, &g->pred_start, &g->pred);
    }
    if (ok) {
        for (int u = 0; u < g->n_units; u++)
            stamp[u] = -1;
        int w = 0;
        for (int u = 0; u < g->n_units; u++) {
            int begin = g->pred_start[u];
            g->pred_start[u] = w;
            for (int k = begin; k < g->pred_start[u + 1]; k++)
                if (stamp[g->pred[k]] != u)
                    stamp[g->pred[k]] = u, g->pred[w++] = g->pred[k];
        }
        g->pred_start[g->n_units] = w;
        int *index = malloc(((size_t)inst->n_nodes + 1) * sizeof *index);
        ok = index != NULL;
        for (int v = 0; ok && v < inst->n_nodes; v++)
            keys[v] = g->unit_of_class[inst->nodes[v].colour], index[v] = v;
        ok = ok && pl_partition_csr(g->n_units, inst->n_nodes, keys, index, &g->unit_start,
                             &g->unit_node);
        free(index);
    }
    free(from), free(to), free(start), free(next), free(rstart), free(rnext);
    free(ustart), free(unext), free(comp), free(rank), free(keys), free(stamp);
    return ok;
}

pl_status pl_partition_graph_init(pl_partition_graph *g, const pl_partition_instance *inst,
                                  pl_error *err)
{
    memset(g, 0, sizeof *g);
    g->instance = inst;
    int *colour = malloc(((size_t)inst->n_nodes + 1) * sizeof *colour);
    int *index = malloc(((size_t)inst->n_nodes + 1) * sizeof *index);
    bool ok = colour && index;
    for (int v = 0; ok && v < inst->n_nodes; v++)
        colour[v] = inst->nodes[v].colour, index[v] = v;
    ok = ok &&
         pl_partition_csr(inst->n_nodes, inst->n_edges, inst->edge_source, inst->edge_dest,
                   &g->consumer_start, &g->consumer) &&
         pl_partition_csr(inst->n_nodes, inst->n_edges, inst->edge_dest, inst->edge_source,
                   &g->producer_start, &g->producer) &&
         pl_partition_csr(inst->n_colours, inst->n_nodes, colour, index, &g->class_start,
                   &g->class_node) &&
         build_units(g);
    free(colour);
    free(index);
    if (ok)
        return PL_OK;
    pl_partition_graph_release(g);
    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

void pl_partition_graph_release(pl_partition_graph *g)
{
    free(g->consumer_start), free(g->consumer), free(g->producer_start), free(g->producer);
    free(g->class_start), free(g->class_node), free(g->unit_of_class);
    free(g->unit_start), free(g->unit_node), free(g->pred_start), free(g->pred);
    memset(g, 0, sizeof *g);
}
