/* Building the producer and consumer rows (adjacency.h): the producers in one pass over
 * the ops in order, then the consumers by sorting the edges by their producer. */
#include "adjacency.h"

#include <stdlib.h>

/* The source when the caller gives none: the tensor's producer or, with in-place writes
 * counted, the last op that wrote it. */
static int tensor_source(const pl_graph *g, const int *writer, int op, int input)
{
    int t = g->ops[op].inputs[input];
    return writer ? writer[t] : g->tensors[t].producer;
}

/* After op `o`: it is the writer of the parameters and states it updates in place. */
static void note_in_place_writes(const pl_graph *g, int o, int *writer)
{
    const pl_op *op = &g->ops[o];
    if (!pl_op_info_of(op->kind)->mutates)
        return;
    for (int j = 0; j < op->n_inputs; j++)
        if (g->tensors[op->inputs[j]].kind != PL_TENSOR_ACTIVATION)
            writer[op->inputs[j]] = o;
}

/* Whether `from` is among the producers listed so far for `op` (the last row). */
static bool already_listed(const pl_adjacency *a, int op, int from)
{
    for (int e = a->producer_first[op]; e < a->n_edges; e++)
        if (a->producer[e] == from)
            return true;
    return false;
}

static void list_producers(pl_adjacency *a, const pl_graph *g,
                           const pl_adjacency_options *options, int *writer)
{
    for (int op = 0; op < a->n_ops; op++) {
        a->producer_first[op] = a->n_edges;
        for (int j = 0; j < g->ops[op].n_inputs; j++) {
            int from = options->source ? options->source(options->context, g, op, j)
                                       : tensor_source(g, writer, op, j);
            if (from < 0 || from >= a->n_ops ||
                (options->distinct && already_listed(a, op, from)))
                continue;
            int e = a->n_edges++;
            a->producer[e] = from;
            a->edge_consumer[e] = op;
            a->edge_input[e] = j;
        }
        if (writer)
            note_in_place_writes(g, op, writer);
    }
    a->producer_first[a->n_ops] = a->n_edges;
}

/* A stable counting sort of the edges by producer: the edges come in order of their
 * consumer, so each op's consumers come in increasing order. consumer_first is counted
 * one place ahead, so that filling the rows leaves it holding their starts. */
static void list_consumers(pl_adjacency *a)
{
    int *first = a->consumer_first; /* n_ops + 2 entries */
    for (int e = 0; e < a->n_edges; e++)
        first[a->producer[e] + 2]++;
    for (int o = 0; o < a->n_ops; o++)
        first[o + 2] += first[o + 1];
    for (int e = 0; e < a->n_edges; e++) {
        int k = first[a->producer[e] + 1]++;
        a->consumer[k] = a->edge_consumer[e];
        a->consumer_edge[k] = e;
    }
}

/* Room for every input of the ops covered, the most edges there can be. */
static bool allocate(pl_adjacency *a, const pl_graph *g, bool in_place, int **writer)
{
    size_t inputs = 1; /* never a zero-sized allocation */
    for (int o = 0; o < a->n_ops; o++)
        inputs += (size_t)g->ops[o].n_inputs;
    size_t rows = (size_t)a->n_ops + 2;
    a->producer_first = malloc(rows * sizeof *a->producer_first);
    a->producer = malloc(inputs * sizeof *a->producer);
    a->edge_consumer = malloc(inputs * sizeof *a->edge_consumer);
    a->edge_input = malloc(inputs * sizeof *a->edge_input);
    a->consumer_first = calloc(rows, sizeof *a->consumer_first);
    a->consumer = malloc(inputs * sizeof *a->consumer);
    a->consumer_edge = malloc(inputs * sizeof *a->consumer_edge);
    *writer = in_place ? malloc(((size_t)g->n_tensors + 1) * sizeof **writer) : NULL;
    return a->producer_first && a->producer && a->edge_consumer && a->edge_input &&
           a->consumer_first && a->consumer && a->consumer_edge && (!in_place || *writer);
}

pl_adjacency *pl_adjacency_new(const pl_graph *g, const pl_adjacency_options *options,
                               pl_error *err)
{
    static const pl_adjacency_options every_input = {0};
    if (!options)
        options = &every_input;
    pl_adjacency *a = calloc(1, sizeof *a);
    int *writer = NULL;
    if (a) {
        a->n_ops = options->forward_only ? g->n_forward_ops : g->n_ops;
        bool in_place = options->in_place && !options->source;
        if (!allocate(a, g, in_place, &writer)) {
            pl_adjacency_free(a);
            a = NULL;
        }
    }
    if (!a) {
        free(writer);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    for (int t = 0; writer && t < g->n_tensors; t++)
        writer[t] = g->tensors[t].producer;
    list_producers(a, g, options, writer);
    list_consumers(a);
    free(writer);
    return a;
}

void pl_adjacency_free(pl_adjacency *a)
{
    if (!a)
        return;
    free(a->producer_first);
    free(a->producer);
    free(a->edge_consumer);
    free(a->edge_input);
    free(a->consumer_first);
    free(a->consumer);
    free(a->consumer_edge);
    free(a);
}
