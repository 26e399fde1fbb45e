/* Drawing graphs in GraphViz dot, through cgraph, so that quoting is GraphViz's own. The
 * output renders with plain `dot -Tsvg`.
 *
 * Both functions borrow everything they are given (the caller owns `out` and keeps it
 * open), write one whole graph or fail with PL_EIO, and never print. Call them from one
 * thread at a time: cgraph keeps process-wide state (its error reporting, the graph being
 * built). */
#ifndef PLACER_DOT_H
#define PLACER_DOT_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "graph.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Large models: GraphViz lays out a few hundred boxes in seconds, a thousand in minutes.
 * Both drawings take `max_boxes`: with more ops (or groups) than that, ops are grouped by
 * module, the path their names give ("features.denseblock1.denselayer3.conv1", or with
 * slashes "stage1/block2/conv1"): one 3-D box per module (its path, its op count), cut at
 * the deepest path depth whose modules fit max_boxes, inside a cluster of its parent
 * module; edges join the modules, labelled with the bytes per step of the tensors they
 * carry. An op alone at its depth keeps its own box. A plan drawn with all_ops groups
 * from max_boxes / 2 (its backward edges cost dot more). max_boxes <= 0 draws op by op
 * whatever the size. PL_DOT_MAX_BOXES is the command line's default. */
enum { PL_DOT_MAX_BOXES = 300 };

/* A model: one box per op (name, op kind, parameters, output shape), one ellipse per
 * input, an edge per tensor; or module boxes (above). */
pl_status pl_dot_write_graph(const pl_graph *graph, int max_boxes, FILE *out, pl_error *err);

/* Draws a placed training graph: ops filled with their device's colour, a legend of the
 * devices (name, colour, op count, and their ops' total time when op_seconds is given), a
 * GraphViz cluster per device holding ops, and within it one per pipeline stage when the
 * plan has several. Cross-device edges are heavier, red and labelled with the bytes they
 * carry per step in both directions (the step program's copies: a tensor copied once to a
 * device and read there by several boxes labels each of their edges; the title gives the
 * true total). Edges show the forward dataflow (with all_ops, the backward too) and every
 * tensor that crosses devices, parameters included (dashed).
 *
 * `graph` is the training graph (autodiff.h); `plan` must be valid for it and `cluster`
 * (pl_plan_check; else PL_EINPUT from compiling its program). A plan that splits ops is
 * drawn as the graph it runs (program.h: the rewritten graph, split_graph.h): a box per
 * shard "NAME/tp{s}" in its device's cluster, and the ops of the collectives, labelled
 * "(collective)", between them. `op_seconds`, when not NULL, holds a time per op of the
 * graph drawn (the program's; seconds per step, all micro-batches), shown on each box and
 * summed per device. all_ops false draws each co-location group (graph.h)
 * as its forward op, labelled with the group's summed time, which keeps a 300-op training
 * graph readable; true draws every op (backward dashed, updates dotted). Node ids are
 * "op:NAME", device clusters "cluster_device:NAME", stages "cluster_device:NAME/stage:S".
 * Grouped by module (above), a module's units on one device and stage (and of one phase,
 * with all_ops) share a box "module:PATH@DEVICE[/stage:S][/backward|/update]", in the
 * cluster "CONTAINER/module:PARENT" of its container. */
pl_status pl_dot_write_plan(const pl_graph *graph, const pl_plan *plan,
                            const pl_cluster *cluster, const double *op_seconds, bool all_ops,
                            int max_boxes, FILE *out, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
