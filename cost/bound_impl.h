/* The lower bound's parts (bound.h) shared between its files. Internal to cost/. */
#ifndef PLACER_BOUND_IMPL_H
#define PLACER_BOUND_IMPL_H

#include "cluster.h"
#include "error.h"
#include "graph.h"

/* The communication term at one micro-batch size (bound_comm.c): the step is at least
 * *seconds for any plan of up to `copies` replicas whose ops are split over up to `split`
 * devices. `shapes` are the tensors at that size, step[o * stride] op o's share of the
 * step on its fastest device (every run). 0 when a device has a native link (its copies
 * are not held to a bandwidth). */
pl_status pl_bound_comm(const pl_graph *graph, const pl_cluster *cluster,
                        const pl_tensor *shapes, int size, int copies, int split,
                        const double *step, int stride, double *seconds, pl_error *err);

#endif
