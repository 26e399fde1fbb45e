/* The vocabulary-parallel loss (split_graph.h): softmax cross-entropy over logits split
 * along their class axis, made from one value per position of each shard so that the
 * logits never cross devices. A shard gives its log-sum-exp (logsumexp) and the logit of
 * the label where the label is one of its classes (pick); the loss is the mean over
 * positions of the whole log-sum-exp minus the label's logit (lse_cross_entropy), as
 * softmax_cross_entropy computes it, a label outside the classes giving 0.
 *
 * Threads split the positions; each value is computed by one thread in a fixed order,
 * and the loss keeps per-position terms in its workspace that `finish` adds in order, so
 * every result is independent of the thread count. */
#include <string.h>

#include "kernels.h"
#include "kernels_impl.h"

/* Positions (rows of the last axis) and the last axis's size. */
static void rows_of(const pl_tensor *x, int64_t *rows, int64_t *width)
{
    *width = x->dims[x->rank - 1];
    *rows = *width ? pl_tensor_elements(x) / *width : 0;
}

/* The column of `label` among the `width` classes from `start`, or -1. */
static int64_t column_of(int32_t label, int64_t start, int64_t width)
{
    int64_t column = (int64_t)label - start;
    return column >= 0 && column < width ? column : -1;
}

PL_VECTOR_CLONES PL_KERNEL(logsumexp)
{
    int64_t rows, classes, begin, end;
    rows_of(args->in_t[0], &rows, &classes);
    const float *x = args->in[0];
    float *y = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        y[r] = (float)pl_logsumexp_run(x + r * classes, classes);
}

/* dx = dy * exp(x - y): the softmax, scaled by the row's gradient. */
PL_VECTOR_CLONES PL_KERNEL(logsumexp_grad)
{
    int64_t rows, classes, begin, end;
    rows_of(args->in_t[1], &rows, &classes);
    const float *dy = args->in[0], *x = args->in[1], *y = args->in[2];
    float *dx = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        for (int64_t i = r * classes; i < (r + 1) * classes; i++)
            dx[i] = dy[r] * pl_expf(x[i] - y[r]);
}

PL_KERNEL(pick)
{
    int64_t rows, classes, begin, end, start = args->op->attrs.start;
    rows_of(args->in_t[0], &rows, &classes);
    const float *x = args->in[0];
    const int32_t *labels = args->in[1];
    float *y = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        int64_t column = column_of(labels[r], start, classes);
        y[r] = column >= 0 ? x[r * classes + column] : 0.0f;
    }
}

/* dy, labels, x -> dx: each row's dy at its label's column, zeros elsewhere. */
PL_KERNEL(pick_grad)
{
    int64_t rows, classes, begin, end, start = args->op->attrs.start;
    rows_of(args->in_t[2], &rows, &classes);
    const float *dy = args->in[0];
    const int32_t *labels = args->in[1];
    float *dx = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        memset(dx + r * classes, 0, (size_t)classes * sizeof *dx);
        int64_t column = column_of(labels[r], start, classes);
        if (column >= 0)
            dx[r * classes + column] = dy[r];
    }
}

/* The workspace: each position's loss, added in order by finish. */
PL_WORKSPACE(lse_cross_entropy)
{
    return (size_t)pl_tensor_elements(args->in_t[0]) * sizeof(double);
}

/* A position's loss: lse - picked, or 0 for a label outside [0, end). */
PL_KERNEL(lse_cross_entropy)
{
    int64_t rows = pl_tensor_elements(args->in_t[0]), classes = args->op->attrs.end, begin, end;
    const float *lse = args->in[0], *picked = args->in[1];
    const int32_t *labels = args->in[2];
    double *row_loss = args->work;
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        row_loss[r] = column_of(labels[r], 0, classes) >= 0
                          ? (double)lse[r] - (double)picked[r]
                          : 0.0;
}

PL_FINISH(lse_cross_entropy)
{
    int64_t rows = pl_tensor_elements(args->in_t[0]);
    const double *row_loss = args->work;
    double total = 0.0;
    for (int64_t r = 0; r < rows; r++)
        total += row_loss[r];
    *(float *)args->out[0] = (float)(total / (double)rows);
}

/* lse, labels, dloss -> dlse = dloss / positions where the label is in [0, end), else 0;
 * dpicked = -dlse. */
PL_KERNEL(lse_cross_entropy_grad)
{
    int64_t rows = pl_tensor_elements(args->in_t[0]), classes = args->op->attrs.end, begin, end;
    const int32_t *labels = args->in[1];
    const float g = (float)(*(const float *)args->in[2] / (double)rows);
    float *dlse = args->out[0], *dpicked = args->out[1];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        dlse[r] = column_of(labels[r], 0, classes) >= 0 ? g : 0.0f;
        dpicked[r] = -dlse[r];
    }
}
