/* The policy's view of a graph: per forward op a feature vector (its kind one-hot, log
 * FLOPs, log output and parameter bytes, the log FLOPs of its whole co-location group,
 * topological depth and position, in- and out-degree), the producer and consumer lists
 * that message passing runs over, and the weights' layout and first values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy_impl.h"
#include "rng.h"


/* The forward graph that messages pass over: each op's distinct producers, and the reverse.
 * Distinct, so that a mean over neighbours weighs each neighbour once. */
static pl_status build_adjacency(pl_policy *p, const pl_graph *g, pl_error *err)
{
    pl_adjacency_options forward = {.forward_only = true, .distinct = true};
    p->adjacency = pl_adjacency_new(g, &forward, err);
    return p->adjacency ? PL_OK : PL_ENOMEM;
}

/* The one-hot slot of an op kind: its own for the kinds the shipped policy was trained
 * with, that of a kind it resembles for those added since, one slot for all others
 * (the internal ops). A new model-file kind belongs in `resembles`. */
static int feature_kind(pl_op_kind kind)
{
    static const struct {
        pl_op_kind kind, like;
    } resembles[] = {
        {PL_OP_GRU_CELL, PL_OP_LSTM_CELL},
        {PL_OP_CONV1D, PL_OP_CONV2D},
        {PL_OP_CONV3D, PL_OP_CONV2D},
        {PL_OP_CONV_TRANSPOSE1D, PL_OP_CONV2D},
        {PL_OP_CONV_TRANSPOSE2D, PL_OP_CONV2D},
        {PL_OP_CONV_TRANSPOSE3D, PL_OP_CONV2D},
        {PL_OP_WHERE, PL_OP_MUL},
        {PL_OP_EQUAL, PL_OP_MUL},
        {PL_OP_NOT_EQUAL, PL_OP_MUL},
        {PL_OP_LESS, PL_OP_MUL},
        {PL_OP_LESS_EQUAL, PL_OP_MUL},
        {PL_OP_GREATER, PL_OP_MUL},
        {PL_OP_GREATER_EQUAL, PL_OP_MUL},
        {PL_OP_LOGICAL_NOT, PL_OP_MUL},
        {PL_OP_EXP, PL_OP_TANH},
        {PL_OP_LOG, PL_OP_TANH},
        {PL_OP_SQRT, PL_OP_TANH},
        {PL_OP_RSQRT, PL_OP_TANH},
        {PL_OP_ABS, PL_OP_RELU},
        {PL_OP_POW, PL_OP_TANH},
        {PL_OP_MAX_POOL1D, PL_OP_MAX_POOL},
        {PL_OP_MAX_POOL3D, PL_OP_MAX_POOL},
        {PL_OP_AVG_POOL1D, PL_OP_AVG_POOL},
        {PL_OP_AVG_POOL3D, PL_OP_AVG_POOL},
        {PL_OP_ADAPTIVE_AVG_POOL1D, PL_OP_ADAPTIVE_AVG_POOL},
        {PL_OP_ADAPTIVE_AVG_POOL3D, PL_OP_ADAPTIVE_AVG_POOL},
        {PL_OP_SILU, PL_OP_GELU},
    };
    if ((int)kind < PL_POLICY_OP_KINDS)
        return (int)kind;
    for (size_t k = 0; k < sizeof resembles / sizeof resembles[0]; k++)
        if (resembles[k].kind == kind)
            return (int)resembles[k].like;
    return PL_POLICY_OP_KINDS;
}

static pl_status build_features(pl_policy *p, const pl_graph *g, pl_error *err)
{
    int n = p->n_ops, kinds = PL_POLICY_OP_KINDS + 1;
    p->n_features = PL_POLICY_OP_FEATURES;
    p->features = calloc((size_t)n * (size_t)p->n_features, sizeof *p->features);
    p->group_features = calloc((size_t)n * PL_POLICY_GROUP_FEATURES, sizeof *p->group_features);
    double *group_flops = calloc((size_t)n, sizeof *group_flops);
    int *depth = calloc((size_t)n, sizeof *depth);
    if (!p->features || !p->group_features || !group_flops || !depth) {
        free(group_flops);
        free(depth);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    double total = 0;
    for (int o = 0; o < g->n_ops; o++) {
        int home = g->ops[o].group;
        if (home >= 0 && home < n)
            group_flops[home] += g->ops[o].flops;
        total += g->ops[o].flops;
    }
    const pl_adjacency *a = p->adjacency;
    int max_depth = 1;
    for (int o = 0; o < n; o++) {
        for (int e = a->producer_first[o]; e < a->producer_first[o + 1]; e++)
            if (depth[a->producer[e]] + 1 > depth[o])
                depth[o] = depth[a->producer[e]] + 1;
        if (depth[o] > max_depth)
            max_depth = depth[o];
    }
    for (int o = 0; o < n; o++) {
        const pl_op *op = &g->ops[o];
        double *f = p->features + (size_t)o * (size_t)p->n_features;
        f[feature_kind(op->kind)] = 1;
        double *x = f + kinds;
        x[0] = log1p(op->flops) / 20;
        x[1] = log1p((double)op->bytes_written) / 20;
        x[2] = log1p((double)op->param_bytes) / 20;
        x[3] = log1p(group_flops[o]) / 20;
        x[4] = (double)depth[o] / max_depth;
        x[5] = (double)o / n;
        x[6] = log1p(pl_adjacency_n_producers(a, o)) / 2;
        x[7] = log1p(pl_adjacency_n_consumers(a, o)) / 2;
        p->group_features[o * PL_POLICY_GROUP_FEATURES] = total > 0 ? group_flops[o] / total : 0;
        p->group_features[o * PL_POLICY_GROUP_FEATURES + 1] = 1.0 / n;
    }
    free(group_flops);
    free(depth);
    return PL_OK;
}

void pl_policy_layout_build(pl_policy_layout *l, int hidden, int rounds, int groups)
{
    int h = hidden, u = h + PL_POLICY_GROUP_FEATURES + groups, z = u + h, at = 0;
    int df = PL_POLICY_DEVICE_FEATURES;
#define TAKE(field, count) (l->field = at, at += (count))
    TAKE(w0, PL_POLICY_OP_FEATURES * h);
    TAKE(b0, h);
    for (int r = 0; r < rounds; r++) {
        TAKE(ws[r], h * h);
        TAKE(wi[r], h * h);
        TAKE(wo[r], h * h);
        TAKE(b[r], h);
    }
    TAKE(wg, h * groups);
    TAKE(bg, groups);
    TAKE(wq, u * h);
    TAKE(wk, u * h);
    TAKE(wv, u * h);
    TAKE(wf, df * h);
    TAKE(bf, h);
    TAKE(wdq, z * h);
    TAKE(bdq, h);
    TAKE(wst, z * PL_POLICY_HEAD_STAGES);
    TAKE(bst, PL_POLICY_HEAD_STAGES);
    TAKE(wshape, h * PL_POLICY_MAX_SHAPES);
    TAKE(bshape, PL_POLICY_MAX_SHAPES);
    /* after the others, so that a policy file made before these heads keeps its offsets */
    TAKE(wsplit, z * PL_POLICY_SPLIT_CHOICES);
    TAKE(msplit, PL_POLICY_MEMORY_FEATURES * PL_POLICY_SPLIT_CHOICES);
    TAKE(bsplit, PL_POLICY_SPLIT_CHOICES);
    TAKE(wrc, z * PL_POLICY_RECOMPUTE_CHOICES);
    TAKE(mrc, PL_POLICY_MEMORY_FEATURES * PL_POLICY_RECOMPUTE_CHOICES);
    TAKE(brc, PL_POLICY_RECOMPUTE_CHOICES);
#undef TAKE
    l->n = at;
}

/* Normal weights of variance 1/fan_in; biases zero. */
static void init_matrix(double *w, int fan_in, int fan_out, uint64_t seed, uint64_t *counter)
{
    double scale = 1 / sqrt((double)fan_in);
    for (int i = 0; i < fan_in * fan_out; i++)
        w[i] = scale * pl_rng_normal(seed, (*counter)++);
}

/* The shapes the graph and options allow, each with its column of the shape head: the
 * micro-batch counts, then stages per device, schedule and deferral, as nested loops. */
static void allowed_shapes(pl_policy *p, const pl_graph *g, const pl_agent_options *o)
{
    static const int counts[PL_POLICY_MAX_MB] = {1, 2, 4, 8, 16, 32};
    int slot = 0;
    for (int i = 0; i < PL_POLICY_MAX_MB; i++)
        for (int f = 1; f <= PL_POLICY_MAX_FOLD; f++)
            for (int s = PL_SCHEDULE_GPIPE; s <= PL_SCHEDULE_1F1B; s++)
                for (int defer = 0; defer <= 1; defer++, slot++) {
                    if (f > o->max_fold || (defer && !o->defer) ||
                        !pl_graph_allows_micro_batches(g, counts[i]))
                        continue;
                    p->shape_slot[p->n_shapes] = slot;
                    p->shape_mb[p->n_shapes] = counts[i];
                    p->shape_fold[p->n_shapes] = f;
                    p->shape_schedule[p->n_shapes] = (pl_schedule)s;
                    p->shape_defer[p->n_shapes++] = defer;
                }
}

pl_status pl_policy_init(pl_policy *p, const pl_graph *g, const pl_cluster *c,
                         const pl_cost_model *model, const pl_agent_options *o, pl_error *err)
{
    int hidden = o->hidden, rounds = o->rounds, groups = o->groups;
    uint64_t seed = o->seed;
    memset(p, 0, sizeof *p);
    p->n_ops = g->n_forward_ops;
    p->hidden = hidden;
    p->rounds = rounds;
    p->groups = groups; /* more than the ops is fine: the ops use some of them */
    p->devices = c->n_devices;
    /* room for a folded plan's stages, so that the anchor can imitate one */
    p->stages = PL_POLICY_MAX_FOLD * c->n_devices;
    p->stages = p->stages < PL_POLICY_HEAD_STAGES ? p->stages : PL_POLICY_HEAD_STAGES;
    allowed_shapes(p, g, o);
    pl_status status = build_adjacency(p, g, err);
    if (status == PL_OK)
        status = build_features(p, g, err);
    if (status == PL_OK)
        status = pl_policy_device_features(p, g, c, model, err);
    if (status != PL_OK)
        return status;
    pl_policy_layout_build(&p->layout, hidden, rounds, p->groups);
    p->params = calloc((size_t)p->layout.n, sizeof *p->params);
    if (!p->params)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    const pl_policy_layout *l = &p->layout;
    int h = hidden, u = h + PL_POLICY_GROUP_FEATURES + p->groups, z = u + h;
    uint64_t counter = 0;
    init_matrix(p->params + l->w0, p->n_features, h, seed, &counter);
    for (int r = 0; r < rounds; r++) {
        /* small: each round starts close to the identity (the residual) */
        init_matrix(p->params + l->ws[r], 3 * h, h, seed, &counter);
        init_matrix(p->params + l->wi[r], 3 * h, h, seed, &counter);
        init_matrix(p->params + l->wo[r], 3 * h, h, seed, &counter);
    }
    init_matrix(p->params + l->wg, h, p->groups, seed, &counter);
    init_matrix(p->params + l->wq, u, h, seed, &counter);
    init_matrix(p->params + l->wk, u, h, seed, &counter);
    init_matrix(p->params + l->wv, u, h, seed, &counter);
    init_matrix(p->params + l->wf, PL_POLICY_DEVICE_FEATURES, h, seed, &counter);
    init_matrix(p->params + l->wdq, z, h, seed, &counter);
    init_matrix(p->params + l->wst, z, PL_POLICY_HEAD_STAGES, seed, &counter);
    init_matrix(p->params + l->wshape, h, PL_POLICY_MAX_SHAPES, seed, &counter);
    pl_policy_init_memory_heads(l, h, p->groups, p->params);
    pl_policy_split_blocks(p, c);
    return PL_OK;
}

void pl_policy_clear(pl_policy *p)
{
    free(p->features);
    free(p->group_features);
    free(p->device_features);
    free(p->op_memory);
    pl_adjacency_free(p->adjacency);
    free(p->params);
    memset(p, 0, sizeof *p);
}
