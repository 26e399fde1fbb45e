/* Gradient accumulation and parameter updates, all in place on their first inputs (the
 * ops are marked `mutates`) and without outputs.
 *
 * accumulate, sgd_update and adam_update are element-wise: threads split the elements.
 * scatter_accumulate adds rows of dy into rows of acc chosen by ids, where two ids may be
 * equal: threads split the D columns instead, so no two threads write one element and
 * each element receives its rows in increasing order. All four are nth-independent. */
#include <math.h>

#include "kernels.h"
#include "kernels_impl.h"

static void element_share(const pl_kernel_args *args, int64_t *begin, int64_t *end)
{
    pl_kernel_share(pl_tensor_elements(args->in_t[0]), args->ith, args->nth, begin, end);
}

/* acc += g */
PL_VECTOR_CLONES PL_KERNEL(accumulate)
{
    float *acc = args->in[0];
    const float *g = args->in[1];
    int64_t begin, end;
    element_share(args, &begin, &end);
    for (int64_t i = begin; i < end; i++)
        acc[i] += g[i];
}

/* acc[ids[i] - start, :] += dy[i, :], ids outside [start, start + V) skipped (the
 * embedding's `start`: a shard of a table split by rows). */
PL_KERNEL(scatter_accumulate)
{
    const pl_tensor *acc_t = args->in_t[0];
    float *acc = args->in[0];
    const float *dy = args->in[1];
    const int32_t *ids = args->in[2];
    int64_t vocab = acc_t->dims[0], d = acc_t->dims[1], start = args->op->attrs.start;
    int64_t rows = pl_tensor_elements(args->in_t[2]), c0, c1;
    pl_kernel_share(d, args->ith, args->nth, &c0, &c1);
    for (int64_t i = 0; i < rows; i++) {
        int64_t id = ids[i] - start;
        if (id < 0 || id >= vocab)
            continue;
        float *dst = acc + id * d;
        const float *src = dy + i * d;
        for (int64_t c = c0; c < c1; c++)
            dst[c] += src[c];
    }
}

/* The step's mean gradient (acc holds the sum over micro-batches) plus weight decay:
 * g = acc * inv_micro_batches + weight_decay * param. */
typedef struct grad_terms {
    float inv_micro_batches, weight_decay;
} grad_terms;

static grad_terms grad_terms_of(const pl_kernel_args *args)
{
    int mb = args->step->micro_batches > 0 ? args->step->micro_batches : 1;
    return (grad_terms){(float)(1.0 / mb), (float)args->op->attrs.weight_decay};
}

/* param -= lr * g, or with velocity v = momentum * v + g, param -= lr * v; acc = 0. */
PL_VECTOR_CLONES PL_KERNEL(sgd_update)
{
    const pl_attrs *at = &args->op->attrs;
    float *param = args->in[0], *acc = args->in[1];
    float *velocity = args->op->n_inputs > 2 ? args->in[2] : NULL;
    const grad_terms gt = grad_terms_of(args);
    const float lr = (float)at->lr, momentum = (float)at->momentum;
    int64_t begin, end;
    element_share(args, &begin, &end);
    if (velocity) {
        for (int64_t i = begin; i < end; i++) {
            float g = acc[i] * gt.inv_micro_batches + gt.weight_decay * param[i];
            velocity[i] = momentum * velocity[i] + g;
            param[i] -= lr * velocity[i];
            acc[i] = 0.0f;
        }
    } else {
        for (int64_t i = begin; i < end; i++) {
            float g = acc[i] * gt.inv_micro_batches + gt.weight_decay * param[i];
            param[i] -= lr * g;
            acc[i] = 0.0f;
        }
    }
}

/* Adam with bias correction at t = step->step:
 * m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * param -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps); acc = 0. */
PL_VECTOR_CLONES PL_KERNEL(adam_update)
{
    const pl_attrs *at = &args->op->attrs;
    float *param = args->in[0], *acc = args->in[1], *m = args->in[2], *v = args->in[3];
    const grad_terms gt = grad_terms_of(args);
    double t = (double)(args->step->step > 0 ? args->step->step : 1);
    const float b1 = (float)at->beta1, b2 = (float)at->beta2;
    const float inv_bc1 = (float)(1.0 / (1.0 - pow(at->beta1, t)));
    const float inv_bc2 = (float)(1.0 / (1.0 - pow(at->beta2, t)));
    const float lr = (float)at->lr, eps = (float)at->eps;
    int64_t begin, end;
    element_share(args, &begin, &end);
    for (int64_t i = begin; i < end; i++) {
        float g = acc[i] * gt.inv_micro_batches + gt.weight_decay * param[i];
        m[i] = b1 * m[i] + (1.0f - b1) * g;
        v[i] = b2 * v[i] + (1.0f - b2) * g * g;
        param[i] -= lr * (m[i] * inv_bc1) / (sqrtf(v[i] * inv_bc2) + eps);
        acc[i] = 0.0f;
    }
}
