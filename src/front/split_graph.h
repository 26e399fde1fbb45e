/* Tensor parallelism as a rewrite of the training graph.
 *
 * An op split over k devices runs as k shards ("NAME/tp0" .. "NAME/tp{k-1}"), each on its
 * part of the op's parameters and outputs. Every value between ops has a layout: whole;
 * split (shard s holds part s of one axis); or partial (the shards' values sum to it).
 * Each split op takes the layout of its inputs where its kind allows:
 * - a product with a parameter weight splits the weight's output columns when its input is
 *   whole (its output split by columns), or its inner dimension when its input is split
 *   that way (its output partial): Megatron-LM's column-then-row pairing;
 * - a product of two activations split along a leading axis (attention's heads) stays
 *   split; convolutions split their output channels (or, on split input channels, the
 *   inner sum, the bias added once); depthwise convolutions, batch norm and pooling
 *   follow split channels; an embedding splits its table by rows (its output partial:
 *   each shard looks up its own rows, zeros for the others) or, with fewer rows than
 *   shards, by columns;
 * - element-wise ops, norms and softmax follow a split on any axis they do not reduce;
 *   sums and scalings keep partial values partial; reshapes and transposes carry a split
 *   to the axis it becomes;
 * - a softmax cross-entropy whose logits come split along their class axis on its own
 *   devices (a language model's head split by columns) is computed from each shard's
 *   log-sum-exp and the logit of the label where the shard holds it, one value per
 *   position, so that the logits never cross devices (Megatron-LM's vocabulary-parallel
 *   cross-entropy);
 * - any other op runs whole on its first device.
 * An axis that does not divide among the shards is shared unevenly, the first n mod k
 * shards holding one more, so that a vocabulary of 50,257 splits without padding (an axis
 * shorter than the shards does not split); an axis of equal groups (a fused query, key
 * and value), a depthwise convolution's groups and a reshape's split axis must divide,
 * and an op whose axis does not runs whole.
 * Where a consumer needs another layout than its producer gives, the rewrite inserts the
 * collective as ops of the graph, on the devices that hold the parts: an all-gather
 * (concatenations), a reduce-scatter (each shard splits its partial value and shard j adds
 * up the parts j) followed by an all-gather (an all-reduce), or slices of a whole value.
 * A parameter read by split ops only is stored split: each shard's part is a parameter of
 * its own, with the optimiser state to match. Automatic differentiation then builds the
 * backward pass of the rewritten forward pass, so the gradients of the collectives are the
 * conjugate collectives, and training computes what one device computes up to the order of
 * its sums. */
#ifndef PLACER_SPLIT_GRAPH_H
#define PLACER_SPLIT_GRAPH_H

#include "error.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_split_graph {
    pl_graph *graph; /* a training graph (autodiff.h) */
    /* Per forward op of `graph`: the forward op of the model's graph it computes or feeds
     * (a collective's ops go with the op whose input they make, or whose output they
     * reduce), and its shard (-1: the op's first device). */
    int *op_origin, *op_shard;
    /* Per forward op: 1 for an op the rewrite inserted for a collective (a concatenation,
     * split, sum or slice between layouts), 0 for model op op_origin[o] itself or a shard
     * of it. */
    int *op_collective;
    /* Per tensor of `graph`: the model's tensor it is, or is a shard of (its init's shard
     * fields say which part); for an activation, the model's activation whose whole value
     * it holds, or -1 (a part, or a value the model does not have). */
    int *tensor_origin;
} pl_split_graph;

/* Rewrites `graph` (a training graph) so that forward op o runs as split[o] shards (1:
 * whole); ops of the same `group[o]` (any integer; -1 for whole ops) share their devices
 * shard for shard, so that layouts pass between them without collectives. `stage` (NULL:
 * none) gives each op's pipeline stage: a collective made for an op serves later ops only
 * from the same stage on, so that every op of the result reads from its own stage or
 * earlier ones when it takes its origin's. The result borrows `graph`'s names, attribute
 * lists and initial values: free it first. PL_EINPUT when a split is outside 1 to
 * PL_MAX_SPLIT; PL_ENOMEM. */
pl_split_graph *pl_split_graph_new(const pl_graph *graph, const int *split, const int *group,
                                   const int *stage, pl_error *err);
void pl_split_graph_free(pl_split_graph *split);
/* Whether forward op o of split->graph is one the rewrite inserted for a collective
 * (op_collective). */
bool pl_split_graph_collective(const pl_split_graph *split, int o);

/* Whether the rewrite may split a forward op of this kind (sizes permitting): for bounds
 * that must hold for every plan. */
bool pl_split_graph_splits(pl_op_kind kind);

#ifdef __cplusplus
}
#endif

#endif
