/* Who feeds whom: for each op of a graph, the ops whose results it reads (its producers)
 * and the ops that read its results (its consumers), as compressed rows. The loader sorts
 * by it, the policy passes messages along it, the baselines weigh the copies on it and the
 * lower bound walks its paths.
 *
 * An edge is one input of one op that comes from another op. The edges are numbered in
 * order of their consumer and, within one consumer, of its inputs, so an op's producers
 * are one run of edges; its consumers come in increasing order. These orders are part of
 * the contract: sums over neighbours and ties between them depend on them.
 *
 * Contract: the adjacency is a snapshot of the graph at the call; it owns its arrays and
 * pl_adjacency_free releases them (NULL is a no-op). Reading it from several threads is
 * safe. */
#ifndef PLACER_ADJACENCY_H
#define PLACER_ADJACENCY_H

#include <stdbool.h>

#include "error.h"
#include "graph.h"

/* Where an op's input comes from as a caller sees the dataflow (the baselines see a
 * shared parameter as coming from its home group): an op index, or -1 for none. */
typedef int (*pl_adjacency_source)(const void *context, const pl_graph *graph, int op,
                                   int input);

typedef struct pl_adjacency_options {
    bool forward_only; /* the forward ops only (the policy's and the baselines' view):
                          ops 0 .. n_forward_ops - 1, producers beyond them left out */
    bool distinct;     /* a producer once per consumer, at the first input it feeds */
    bool in_place;     /* with the default source: an op that updates an input in place (an
                          optimizer's update of a parameter or its state) becomes that
                          tensor's producer for the ops after it, as the executor orders
                          them */
    pl_adjacency_source source; /* NULL: each input's tensor's producer */
    const void *context;        /* handed to `source` */
} pl_adjacency_options;

typedef struct pl_adjacency {
    int n_ops, n_edges;
    /* op o's producers: producer[producer_first[o] .. producer_first[o + 1]); an edge's
     * index is its place in producer[] */
    int *producer_first, *producer;
    int *edge_consumer, *edge_input; /* per edge: the op reading, and which of its inputs */
    /* op o's consumers: consumer[consumer_first[o] .. consumer_first[o + 1]), and the
     * edge of each in consumer_edge[] */
    int *consumer_first, *consumer, *consumer_edge;
} pl_adjacency;

/* The adjacency of `graph`'s ops (options NULL: every op, every input from another op's
 * result). An op that reads its own result (a cycle the loader reports) is its own
 * producer and consumer. NULL with err set when out of memory. */
pl_adjacency *pl_adjacency_new(const pl_graph *graph, const pl_adjacency_options *options,
                               pl_error *err);
void pl_adjacency_free(pl_adjacency *adjacency);

static inline int pl_adjacency_n_producers(const pl_adjacency *a, int op)
{
    return a->producer_first[op + 1] - a->producer_first[op];
}

static inline int pl_adjacency_n_consumers(const pl_adjacency *a, int op)
{
    return a->consumer_first[op + 1] - a->consumer_first[op];
}

#endif
