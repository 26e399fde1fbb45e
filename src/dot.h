/* Drawing graphs in GraphViz dot, through cgraph.
 *
 * pl_dot_write_graph draws a model: one box per op (name, op kind, parameters, output
 * shape), one ellipse per input, an edge per tensor. The caller owns `out`. Thread-safe
 * (cgraph keeps no shared state for graphs it is given). */
#ifndef PLACER_DOT_H
#define PLACER_DOT_H

#include <stdio.h>

#include "error.h"
#include "graph.h"

pl_status pl_dot_write_graph(const pl_graph *graph, FILE *out, pl_error *err);

#endif
