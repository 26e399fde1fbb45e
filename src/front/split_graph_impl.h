/* What the rewrite's two halves share (split_graph.h): the layouts of values, the rules
 * that say how a split op's shards run (split_rules.c), and the rewrite's state
 * (split_graph.c). Internal to the front end. */
#ifndef PLACER_SPLIT_GRAPH_IMPL_H
#define PLACER_SPLIT_GRAPH_IMPL_H

#include "split_graph.h"

enum { WHOLE, SPLIT, PARTIAL };

/* An input as a shard reads it: whole (its shard's copy), split along an axis, the
 * shard's own part of a partial value, or whole on shard 0 and absent elsewhere (a bias
 * added once to a partial sum). */
enum { IN_WHOLE, IN_SPLIT, IN_PARTIAL, IN_FIRST };

/* A value of the model's graph in the new one. A split value's axis may be `groups`
 * equal groups (a fused product's query, key and value), each shared among the shards:
 * shard s holds part s of each group, one after another (1: the axis whole). */
typedef struct value {
    int kind, axis, groups, group, k;
    int whole;               /* the whole value, or -1 until made */
    int whole_stage;         /* the stage of the op it was made for: collectives made for
                                an op serve ops of its stage and later ones only */
    int part[PL_MAX_SPLIT];  /* SPLIT and PARTIAL: shard s's */
    int local[PL_MAX_SPLIT]; /* a whole copy on each shard of `group`, or -1 */
    int local_stage[PL_MAX_SPLIT];
    int scatter_axis;      /* PARTIAL: the axis its sums are scattered along, or -1 */
    int sum[PL_MAX_SPLIT]; /* the scattered sums, shard j's on shard j */
} value;

/* How a split op's shards run: per input its reading (IN_*) and axis, the output's layout,
 * and what changes in the attributes. */
typedef struct rule {
    int in[8], in_axis[8], in_groups[8]; /* groups: 0 reads as 1 */
    int out, out_axis, out_groups;
    int64_t groups_divided; /* a depthwise convolution's groups per shard, or 0 */
    int64_t table_rows;     /* an embedding split by rows: its table's (part_start), or 0 */
    int reshape_axis;       /* a reshape's result axis that is split, or -1 */
    bool dropout;           /* a dropout's shards: axis, start and end say where they are */
} rule;

typedef struct splitter {
    const pl_graph *g;
    const int *split, *group, *stage;
    pl_graph *n;
    value *val;    /* per tensor of g */
    int *consumer; /* per tensor of g: its one forward reader, -1 none, -2 several */
    int *op_origin, *op_shard, *op_collective, origin_cap, shard_cap, collective_cap;
    int *tensor_origin, tensor_cap;
    pl_error *err;
} splitter;

/* An axis of model tensor t that k shards can share: not the batch's (micro-batches
 * change it) nor `except`, and divisible by k; the first such, or -1. */
int pl_split_free_axis(const pl_tensor *t, int k, int except);
/* Whether forward op o is a softmax cross-entropy computed from its logits' shards (the
 * vocabulary-parallel loss): split, and its logits split along their class axis among its
 * devices. */
bool pl_split_vocab_loss(const splitter *sp, int o);
/* How forward op o's shards run, given its inputs' layouts; false: it runs whole. */
bool pl_split_rule_for(const splitter *sp, int o, rule *r);
/* Whether every input a rule splits can be shared among the k shards (each part
 * non-empty; equal parts of each group where an axis holds several). */
bool pl_split_rule_fits(const splitter *sp, const pl_op *op, const rule *r, int k);

static inline int groups_of(int groups)
{
    return groups > 1 ? groups : 1;
}

/* An axis of n elements shared by k shards: an equal part each when k divides n, else the
 * first n mod k shards hold one more (a vocabulary of 50,257 over 2: 25,129 and 25,128),
 * so that no model needs padding to be split. Shard s's part and where it starts. */
static inline int64_t part_size(int64_t n, int k, int s)
{
    return n / k + (s < n % k);
}

static inline int64_t part_start(int64_t n, int k, int s)
{
    return n / k * s + (s < n % k ? s : n % k);
}

#endif
