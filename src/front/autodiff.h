/* Automatic differentiation: a loaded model becomes its training graph, in place.
 *
 * Appended to the forward ops, in topological order: the backward ops (reverse-mode, one
 * rule per op kind in the op table), an accumulation of every parameter gradient into a
 * state tensor "PARAM/grad" (so that micro-batches add up), and one optimiser update per
 * parameter. The loss gradient starts from a constant 1.
 *
 * Co-location: every backward op records the forward op it differentiates as its group;
 * a parameter's accumulations and update go with the first forward op that reads it (its
 * home). Phases: forward and backward ops (accumulations included) run once per
 * micro-batch, updates once per step, dividing the accumulated sum by the micro-batch
 * count: a step of m micro-batches computes the same mean gradient as one batch.
 *
 * Batch norm ops gain two state inputs, their running mean and variance. An LSTM weight
 * read at many steps gets its gradient per block of PL_LSTM_BLOCK_STEPS consecutive
 * steps, each in one product with the block's earliest step (autodiff_lstm.c). */
#ifndef PLACER_AUTODIFF_H
#define PLACER_AUTODIFF_H

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_LSTM_BLOCK_STEPS 8

/* Returns PL_OK, or an error (PL_EINPUT: the model cannot be trained, e.g. an embedding
 * table that is not a parameter; PL_ENOMEM). Call once, on a graph fresh from the
 * loader; on failure the graph is unusable and must be freed. */
pl_status pl_autodiff_build(pl_graph *graph, pl_error *err);

/* The accumulated-gradient state tensor of parameter `param`, or -1 (no gradient reaches
 * it). Valid after pl_autodiff_build. */
int pl_autodiff_gradient_of(const pl_graph *graph, int param);

#ifdef __cplusplus
}
#endif

#endif
