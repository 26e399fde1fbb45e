/* Activation recomputation as a rewrite of a training graph.
 *
 * A forward op marked for recomputation keeps its outputs only while the forward pass
 * reads them: the backward ops that read one read instead a clone of it, made by a copy of
 * the op ("NAME/recompute", phase backward, in the op's co-location group) from kept
 * values (the outputs of ops not recomputed, parameters, inputs) or from other clones. A
 * clone comes right before the first backward op that reads it, so that a program, which
 * orders a micro-batch's backward ops by their index, holds it only from there; a clone
 * whose readers all compute parameters' gradients is one too (graph.h: weight_gradient),
 * so that a schedule deferring those defers it with them.
 *
 * Recomputing computes the same values: dropout's masks are a function of the op's seed,
 * the step and each element's place in the batch (kernels), which a clone shares, and
 * parameters change only in the updates, after every backward op. An op that changes
 * state as it runs (pl_op_info.mutates: batch norm's running averages) is never
 * recomputed, whatever its mark: running it twice would change the state twice.
 *
 * Forward ops and tensors keep their indices; clones are new ops and tensors. Not
 * thread-safe; the graph is the caller's. */
#ifndef PLACER_RECOMPUTE_H
#define PLACER_RECOMPUTE_H

#include <stdbool.h>

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether forward op o of `graph` can be recomputed (it changes no state). */
bool pl_recompute_allowed(const pl_graph *graph, int o);

/* Rewrites `graph` (a training graph, autodiff.h) so that forward op o's outputs are
 * recomputed where recompute[o] (per forward op) says so and pl_recompute_allowed agrees.
 * The backward and update ops move to make room for the clones (hold tensor indices, not
 * op indices, across the call). PL_ENOMEM (the graph is then unusable: free it). */
pl_status pl_recompute_graph(pl_graph *graph, const bool *recompute, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
