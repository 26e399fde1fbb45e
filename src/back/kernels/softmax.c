/* The softmax family (softmax, log_softmax and their gradients along any axis), the two
 * losses (softmax cross-entropy, mean squared error) with their gradients, and top-k
 * gating.
 *
 * A tensor is seen as [outer, C, inner] around the normalised axis. With inner == 1 (the
 * last axis, the common case) threads split rows; otherwise they split the outer*inner
 * lanes and walk C with the lanes innermost, so that the loops stay contiguous. Either
 * way every output element is computed by one thread in a fixed order, so all these
 * kernels are nth-independent. The two losses are reductions to one number: each keeps
 * per-item partial sums in the workspace (a row's loss; a fixed-size block's squared
 * error) and `finish` adds them in order, which keeps them nth-independent too. */
#include <math.h>

#include "kernels.h"
#include "kernels_impl.h"

typedef struct axis_view {
    int64_t outer, c, inner;
} axis_view;

static axis_view view_along(const pl_tensor *t, int64_t axis)
{
    if (axis < 0)
        axis += t->rank;
    axis_view v = {1, t->dims[axis], 1};
    for (int a = 0; a < axis; a++)
        v.outer *= t->dims[a];
    for (int a = (int)axis + 1; a < t->rank; a++)
        v.inner *= t->dims[a];
    return v;
}

/* ---- softmax and log_softmax ------------------------------------------------------------ */

/* One contiguous row: y = softmax(x) or log_softmax(x). */
PL_VECTOR_CLONES static void softmax_row(const float *x, float *y, int64_t c, bool log_form)
{
    float m = pl_max_run(x, c);
    for (int64_t i = 0; i < c; i++)
        y[i] = pl_expf(x[i] - m);
    float sum = pl_sum_run(y, c);
    if (log_form) { /* (x - m) first: exact for the large entries, whatever m's size */
        float log_sum = logf(sum);
        for (int64_t i = 0; i < c; i++)
            y[i] = (x[i] - m) - log_sum;
    } else {
        float inv = 1.0f / sum;
        for (int64_t i = 0; i < c; i++)
            y[i] *= inv;
    }
}

enum { LANE_BLOCK = 64 }; /* lanes handled together, their running values on the stack */

/* Lanes [l0, l0 + n) (n <= LANE_BLOCK) of one [C, inner] block: y = softmax(x) or
 * log_softmax(x) along C for each lane, C walked outermost so the lanes stay contiguous. */
PL_VECTOR_CLONES static void softmax_lanes(const float *x, float *y, int64_t c, int64_t inner,
                                           int64_t n, bool log_form)
{
    float maxv[LANE_BLOCK], sum[LANE_BLOCK];
    for (int64_t l = 0; l < n; l++) {
        maxv[l] = x[l];
        sum[l] = 0.0f;
    }
    for (int64_t k = 1; k < c; k++)
        for (int64_t l = 0; l < n; l++)
            maxv[l] = x[k * inner + l] > maxv[l] ? x[k * inner + l] : maxv[l];
    for (int64_t k = 0; k < c; k++)
        for (int64_t l = 0; l < n; l++) {
            float e = pl_expf(x[k * inner + l] - maxv[l]);
            y[k * inner + l] = e;
            sum[l] += e;
        }
    for (int64_t l = 0; l < n; l++)
        sum[l] = log_form ? logf(sum[l]) : 1.0f / sum[l];
    for (int64_t k = 0; k < c; k++)
        for (int64_t l = 0; l < n; l++) {
            int64_t i = k * inner + l;
            y[i] = log_form ? (x[i] - maxv[l]) - sum[l] : y[i] * sum[l];
        }
}

/* This thread's share of the outer*inner lanes, walked in blocks of at most LANE_BLOCK
 * lanes within one outer index: each call gives the next block's offset (of its first
 * element) and width, false when the share is done. The block edges depend on the share,
 * but no lane's result does. */
typedef struct lane_walk {
    int64_t next, end;
} lane_walk;

static lane_walk lane_share(const axis_view *v, const pl_kernel_args *args)
{
    lane_walk w;
    pl_kernel_share(v->outer * v->inner, args->ith, args->nth, &w.next, &w.end);
    return w;
}

static bool next_lane_block(const axis_view *v, lane_walk *w, int64_t *off, int64_t *n)
{
    if (w->next >= w->end)
        return false;
    int64_t o = w->next / v->inner, l0 = w->next % v->inner;
    *n = v->inner - l0;
    if (*n > w->end - w->next)
        *n = w->end - w->next;
    if (*n > LANE_BLOCK)
        *n = LANE_BLOCK;
    *off = o * v->c * v->inner + l0;
    w->next += *n;
    return true;
}

static void softmax_kernel(const pl_kernel_args *args, bool log_form)
{
    axis_view v = view_along(args->in_t[0], args->op->attrs.axis);
    const float *x = args->in[0];
    float *y = args->out[0];
    if (v.inner == 1) {
        int64_t begin, end;
        pl_kernel_share(v.outer, args->ith, args->nth, &begin, &end);
        for (int64_t r = begin; r < end; r++)
            softmax_row(x + r * v.c, y + r * v.c, v.c, log_form);
        return;
    }
    lane_walk w = lane_share(&v, args);
    int64_t off, n;
    while (next_lane_block(&v, &w, &off, &n))
        softmax_lanes(x + off, y + off, v.c, v.inner, n, log_form);
}

PL_KERNEL(softmax)
{
    softmax_kernel(args, false);
}

PL_KERNEL(log_softmax)
{
    softmax_kernel(args, true);
}

/* ---- their gradients ---------------------------------------------------------------------- */

/* Dot product of two contiguous runs in eight fixed lanes. */
static float dot_run(const float *a, const float *b, int64_t n)
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += a[i + j] * b[i + j];
    float sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                ((lane[4] + lane[5]) + (lane[6] + lane[7]));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy). */
PL_VECTOR_CLONES static void softmax_grad_row(const float *dy, const float *y, float *dx,
                                              int64_t c, bool log_form)
{
    if (log_form) {
        float s = pl_sum_run(dy, c);
        for (int64_t i = 0; i < c; i++)
            dx[i] = dy[i] - pl_expf(y[i]) * s;
    } else {
        float s = dot_run(dy, y, c);
        for (int64_t i = 0; i < c; i++)
            dx[i] = y[i] * (dy[i] - s);
    }
}

PL_VECTOR_CLONES static void softmax_grad_lanes(const float *dy, const float *y, float *dx,
                                                int64_t c, int64_t inner, int64_t n,
                                                bool log_form)
{
    float s[LANE_BLOCK];
    for (int64_t l = 0; l < n; l++)
        s[l] = 0.0f;
    for (int64_t k = 0; k < c; k++)
        for (int64_t l = 0; l < n; l++) {
            int64_t i = k * inner + l;
            s[l] += log_form ? dy[i] : dy[i] * y[i];
        }
    for (int64_t k = 0; k < c; k++)
        for (int64_t l = 0; l < n; l++) {
            int64_t i = k * inner + l;
            dx[i] = log_form ? dy[i] - pl_expf(y[i]) * s[l] : y[i] * (dy[i] - s[l]);
        }
}

static void softmax_grad_kernel(const pl_kernel_args *args, bool log_form)
{
    axis_view v = view_along(args->in_t[0], args->op->attrs.axis);
    const float *dy = args->in[0], *y = args->in[1];
    float *dx = args->out[0];
    if (v.inner == 1) {
        int64_t begin, end;
        pl_kernel_share(v.outer, args->ith, args->nth, &begin, &end);
        for (int64_t r = begin; r < end; r++)
            softmax_grad_row(dy + r * v.c, y + r * v.c, dx + r * v.c, v.c, log_form);
        return;
    }
    lane_walk w = lane_share(&v, args);
    int64_t off, n;
    while (next_lane_block(&v, &w, &off, &n))
        softmax_grad_lanes(dy + off, y + off, dx + off, v.c, v.inner, n, log_form);
}

PL_KERNEL(softmax_grad)
{
    softmax_grad_kernel(args, false);
}

PL_KERNEL(log_softmax_grad)
{
    softmax_grad_kernel(args, true);
}

/* ---- softmax cross-entropy ---------------------------------------------------------------- */

/* Positions (rows of C logits) and classes. */
static void xent_shape(const pl_kernel_args *args, int64_t *rows, int64_t *classes)
{
    const pl_tensor *logits = args->in_t[0];
    *classes = logits->dims[logits->rank - 1];
    *rows = pl_tensor_elements(logits) / *classes;
}

static bool valid_label(int32_t label, int64_t classes)
{
    return label >= 0 && label < classes;
}

/* The workspace: each row's loss, summed in order by finish. */
PL_WORKSPACE(softmax_cross_entropy)
{
    int64_t rows, classes;
    xent_shape(args, &rows, &classes);
    return (size_t)rows * sizeof(double);
}

/* loss of one row: logsumexp(x) - x[label], or 0 for a label outside [0, C). */
PL_VECTOR_CLONES PL_KERNEL(softmax_cross_entropy)
{
    int64_t rows, classes, begin, end;
    xent_shape(args, &rows, &classes);
    const float *logits = args->in[0];
    const int32_t *labels = args->in[1];
    double *row_loss = args->work;
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        const float *x = logits + r * classes;
        if (!valid_label(labels[r], classes)) {
            row_loss[r] = 0.0;
            continue;
        }
        row_loss[r] = pl_logsumexp_run(x, classes) - (double)x[labels[r]];
    }
}

PL_FINISH(softmax_cross_entropy)
{
    int64_t rows, classes;
    xent_shape(args, &rows, &classes);
    const double *row_loss = args->work;
    double total = 0.0;
    for (int64_t r = 0; r < rows; r++)
        total += row_loss[r];
    *(float *)args->out[0] = (float)(total / (double)rows);
}

/* dlogits = dloss * (softmax - onehot) / positions; a row with a label outside [0, C)
 * added a constant 0 to the loss, so its gradient is 0. */
PL_KERNEL(softmax_cross_entropy_grad)
{
    int64_t rows, classes, begin, end;
    xent_shape(args, &rows, &classes);
    const float *logits = args->in[0];
    const int32_t *labels = args->in[1];
    const float g = (float)(*(const float *)args->in[2] / (double)rows);
    float *dx = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        float *d = dx + r * classes;
        if (!valid_label(labels[r], classes)) {
            for (int64_t i = 0; i < classes; i++)
                d[i] = 0.0f;
            continue;
        }
        softmax_row(logits + r * classes, d, classes, false);
        for (int64_t i = 0; i < classes; i++)
            d[i] *= g;
        d[labels[r]] -= g;
    }
}

/* ---- mean squared error --------------------------------------------------------------------- */

enum { MSE_BLOCK = 4096 }; /* elements per partial sum: fixed, so the total is too */

static int64_t mse_blocks(const pl_kernel_args *args)
{
    return (pl_tensor_elements(args->in_t[0]) + MSE_BLOCK - 1) / MSE_BLOCK;
}

PL_WORKSPACE(mse)
{
    return (size_t)mse_blocks(args) * sizeof(double);
}

PL_KERNEL(mse)
{
    const float *p = args->in[0], *t = args->in[1];
    int64_t n = pl_tensor_elements(args->in_t[0]), begin, end;
    double *block_sum = args->work;
    pl_kernel_share(mse_blocks(args), args->ith, args->nth, &begin, &end);
    for (int64_t b = begin; b < end; b++) {
        int64_t i0 = b * MSE_BLOCK, i1 = i0 + MSE_BLOCK < n ? i0 + MSE_BLOCK : n;
        float lane[8] = {0}, sum = 0.0f;
        int64_t i = i0;
        for (; i + 8 <= i1; i += 8)
            for (int j = 0; j < 8; j++) {
                float d = p[i + j] - t[i + j];
                lane[j] += d * d;
            }
        for (; i < i1; i++)
            sum += (p[i] - t[i]) * (p[i] - t[i]);
        for (int j = 0; j < 8; j++)
            sum += lane[j];
        block_sum[b] = sum;
    }
}

PL_FINISH(mse)
{
    const double *block_sum = args->work;
    int64_t blocks = mse_blocks(args);
    double total = 0.0;
    for (int64_t b = 0; b < blocks; b++)
        total += block_sum[b];
    *(float *)args->out[0] = (float)(total / (double)pl_tensor_elements(args->in_t[0]));
}

/* dprediction = dloss * 2 * (prediction - target) / n */
PL_KERNEL(mse_grad)
{
    const float *p = args->in[0], *t = args->in[1];
    int64_t n = pl_tensor_elements(args->in_t[0]), begin, end;
    const float g = (float)(2.0 * *(const float *)args->in[2] / (double)n);
    float *dx = args->out[0];
    pl_kernel_share(n, args->ith, args->nth, &begin, &end);
    for (int64_t i = begin; i < end; i++)
        dx[i] = g * (p[i] - t[i]);
}

/* ---- top-k gating --------------------------------------------------------------------------- */

/* One row: marks the k largest entries (ties to the lower index) with 1 in y by k scans,
 * then replaces the marks by the softmax over them and leaves 0 elsewhere. O(k E): k is
 * a handful of experts in mixture-of-experts gating. */
PL_VECTOR_CLONES static void topk_row(const float *x, float *y, int64_t e, int64_t k)
{
    for (int64_t i = 0; i < e; i++)
        y[i] = 0.0f;
    float top = 0.0f;
    for (int64_t pick = 0; pick < k; pick++) {
        int64_t best = -1;
        for (int64_t i = 0; i < e; i++)
            if (y[i] == 0.0f && (best < 0 || x[i] > x[best]))
                best = i;
        y[best] = 1.0f;
        if (pick == 0)
            top = x[best];
    }
    float sum = 0.0f;
    for (int64_t i = 0; i < e; i++)
        if (y[i] != 0.0f) {
            y[i] = pl_expf(x[i] - top);
            sum += y[i];
        }
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < e; i++)
        y[i] *= inv;
}

PL_KERNEL(topk_gate)
{
    const pl_tensor *x_t = args->in_t[0];
    int64_t e = x_t->dims[x_t->rank - 1], rows = pl_tensor_elements(x_t) / e, begin, end;
    int64_t k = args->op->attrs.k < e ? args->op->attrs.k : e;
    const float *x = args->in[0];
    float *y = args->out[0];
    pl_kernel_share(rows, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++)
        topk_row(x + r * e, y + r * e, e, k);
}
