/* Shape inference and FLOP counts of the ops of the vocabulary-parallel loss, which the
 * tensor-parallel rewrite writes (split_graph.h): the shards of logits split along their
 * class axis each give their log-sum-exp and the logit of the label where they hold it,
 * one value per position ([..., 1]), and the loss is made from those. The rewrite is
 * their only author, so the checks here guard against its own mistakes. */
#include <string.h>

#include "graph.h"
#include "ops_impl.h"

/* The positions of `x` with a class axis of 1. */
static void per_position(pl_tensor *out, const pl_tensor *x)
{
    out->dtype = PL_F32;
    out->rank = x->rank;
    memcpy(out->dims, x->dims, sizeof out->dims);
    out->dims[x->rank - 1] = 1;
    out->batch_axis = x->batch_axis;
    out->batch_group = x->batch_group;
}

/* Whether `labels` has x's shape without its last (class) axis. */
static bool labels_fit(const pl_tensor *x, const pl_tensor *labels)
{
    if (labels->dtype != PL_I32 || labels->rank != x->rank - 1)
        return false;
    for (int a = 0; a < labels->rank; a++)
        if (labels->dims[a] != x->dims[a])
            return false;
    return true;
}

static bool need_classes(pl_infer_ctx *ctx, const pl_tensor *x)
{
    if (x->dtype == PL_F32 && x->rank >= 1 && x->batch_axis != x->rank - 1)
        return true;
    return pl_infer_fail(ctx, 0, -1, "\"%s\" must be f32 with its classes on a last axis "
                         "that is not the batch's", x->name);
}

bool pl_infer_logsumexp(pl_infer_ctx *ctx)
{
    if (!need_classes(ctx, ctx->in[0]))
        return false;
    per_position(ctx->out[0], ctx->in[0]);
    return true;
}

bool pl_infer_pick(pl_infer_ctx *ctx)
{
    const pl_tensor *x = ctx->in[0];
    if (!need_classes(ctx, x))
        return false;
    if (!labels_fit(x, ctx->in[1]))
        return pl_infer_fail(ctx, 1, -1, "the labels \"%s\" must be i32 of the shape of \"%s\" "
                             "without its last axis", ctx->in[1]->name, x->name);
    per_position(ctx->out[0], x);
    return true;
}

/* lse, picked, labels -> the loss: a scalar. */
bool pl_infer_lse_cross_entropy(pl_infer_ctx *ctx)
{
    const pl_tensor *lse = ctx->in[0];
    pl_tensor *loss = ctx->out[0];
    if (!need_classes(ctx, lse) || lse->dims[lse->rank - 1] != 1 ||
        !pl_tensor_has_dims(ctx->in[1], lse->rank, lse->dims))
        return pl_infer_fail(ctx, 1, -1, "\"%s\" and \"%s\" must hold one value per position",
                             lse->name, ctx->in[1]->name);
    if (!labels_fit(lse, ctx->in[2]))
        return pl_infer_fail(ctx, 2, -1, "the labels \"%s\" must be i32 of the shape of \"%s\" "
                             "without its last axis", ctx->in[2]->name, lse->name);
    loss->dtype = PL_F32;
    loss->rank = 0;
    loss->batch_axis = PL_NO_BATCH;
    return true;
}

/* A log-sum-exp reads each element once and takes its exponential. */
double pl_flops_logsumexp(const pl_infer_ctx *ctx)
{
    return 5.0 * (double)pl_tensor_elements(ctx->in[0]);
}
