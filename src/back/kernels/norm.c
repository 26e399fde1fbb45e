/* Layer and batch normalisation and their gradients.
 *
 * layer_norm normalises each row (the last axis); threads split rows. Its gradient's dx is
 * per row too, but dgamma and dbeta sum over all rows: the rows are cut into at most
 * LN_BLOCKS blocks (a function of the shape, not of nth), threads split the blocks, each
 * block leaves its partial sums in the workspace and `finish` adds the blocks in order,
 * so the result is nth-independent. Over another axis (channel-first, [N,C,H,W] over C)
 * the normalised values of a position lie `inner` apart: a unit is then up to SPAN
 * neighbouring positions of one outer index, walked channel by channel so that the loops
 * run over contiguous positions, and units take the place of rows.
 *
 * batch_norm works per channel ([N, C, S] with S the product of the spatial axes):
 * threads split channels, and each channel's statistics are summed in double in the same
 * order whatever the share (nth-independent). With S == 1 ([N, C] inputs) channels are
 * walked in blocks so that the reads stay contiguous. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "kernels_impl.h"

enum { LN_BLOCKS = 32, CHANNEL_BLOCK = 64, SPAN = 64 };

/* Sum of (x - mean)^2 over a run, in eight fixed lanes. */
PL_VECTOR_CLONES static float sq_dev_run(const float *x, float mean, int64_t n)
{
    float lane[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) {
            float d = x[i + j] - mean;
            lane[j] += d * d;
        }
    float sum = pl_lanes_sum(lane);
    for (; i < n; i++)
        sum += (x[i] - mean) * (x[i] - mean);
    return sum;
}

/* ---- layer_norm --------------------------------------------------------------------------- */

typedef struct row_stats {
    float mean, rstd;
} row_stats;

PL_VECTOR_CLONES static row_stats stats_of_row(const float *x, int64_t d, double eps)
{
    float mean = pl_sum_run(x, d) / (float)d;
    float var = sq_dev_run(x, mean, d) / (float)d;
    return (row_stats){mean, (float)(1.0 / sqrt((double)var + eps))};
}

/* x as `outer` groups of `d` normalised values, each value `inner` from the next: inner 1
 * is the row layout. `units`: rows, or (inner > 1) runs of up to SPAN positions. */
typedef struct ln_layout {
    int64_t outer, d, inner, units;
} ln_layout;

static ln_layout layout_of(const pl_tensor *x, int64_t axis)
{
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    ln_layout v = {1, x->dims[a], 1, 0};
    for (int k = 0; k < a; k++)
        v.outer *= x->dims[k];
    for (int k = a + 1; k < x->rank; k++)
        v.inner *= x->dims[k];
    v.units = v.inner == 1 ? v.outer : v.outer * ((v.inner + SPAN - 1) / SPAN);
    return v;
}

/* Unit u of a strided layout: its first element and its positions [0, *count). */
static int64_t unit_start(const ln_layout *v, int64_t u, int64_t *count)
{
    int64_t per_outer = (v->inner + SPAN - 1) / SPAN, o = u / per_outer, j = u % per_outer * SPAN;
    *count = v->inner - j < SPAN ? v->inner - j : SPAN;
    return o * v->d * v->inner + j;
}

/* Mean and 1/std of each position of a unit, channel by channel over contiguous runs. */
PL_VECTOR_CLONES static void unit_stats(const float *x, const ln_layout *v, int64_t count,
                                        double eps, float *mean, float *rstd)
{
    for (int64_t j = 0; j < count; j++)
        mean[j] = rstd[j] = 0.0f;
    for (int64_t c = 0; c < v->d; c++)
        for (int64_t j = 0; j < count; j++)
            mean[j] += x[c * v->inner + j];
    for (int64_t j = 0; j < count; j++)
        mean[j] /= (float)v->d;
    for (int64_t c = 0; c < v->d; c++)
        for (int64_t j = 0; j < count; j++) {
            float dev = x[c * v->inner + j] - mean[j];
            rstd[j] += dev * dev;
        }
    for (int64_t j = 0; j < count; j++)
        rstd[j] = (float)(1.0 / sqrt((double)(rstd[j] / (float)v->d) + eps));
}

PL_VECTOR_CLONES static void layer_norm_unit(const pl_kernel_args *args, const ln_layout *v,
                                             int64_t u)
{
    const float *gamma = args->in[1], *beta = args->in[2];
    int64_t count, first = unit_start(v, u, &count);
    const float *x = (const float *)args->in[0] + first;
    float *y = (float *)args->out[0] + first, mean[SPAN], rstd[SPAN];
    unit_stats(x, v, count, args->op->attrs.eps, mean, rstd);
    for (int64_t c = 0; c < v->d; c++)
        for (int64_t j = 0; j < count; j++)
            y[c * v->inner + j] = (x[c * v->inner + j] - mean[j]) * rstd[j] * gamma[c] + beta[c];
}

PL_VECTOR_CLONES PL_KERNEL(layer_norm)
{
    const float *x = args->in[0], *gamma = args->in[1], *beta = args->in[2];
    float *y = args->out[0];
    ln_layout v = layout_of(args->in_t[0], args->op->attrs.axis);
    int64_t d = v.d, begin, end;
    pl_kernel_share(v.units, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        if (v.inner > 1) {
            layer_norm_unit(args, &v, r);
            continue;
        }
        const float *xr = x + r * d;
        float *yr = y + r * d;
        row_stats s = stats_of_row(xr, d, args->op->attrs.eps);
        for (int64_t i = 0; i < d; i++)
            yr[i] = (xr[i] - s.mean) * s.rstd * gamma[i] + beta[i];
    }
}

/* The row blocks of the gradient's parameter sums: fixed by the row count. */
static void ln_blocks(int64_t rows, int64_t *blocks, int64_t *per_block)
{
    *blocks = rows < LN_BLOCKS ? rows : LN_BLOCKS;
    *per_block = (rows + *blocks - 1) / *blocks;
    *blocks = (rows + *per_block - 1) / *per_block;
}

/* Per block: dgamma then dbeta partial sums, D floats each. */
PL_WORKSPACE(layer_norm_grad)
{
    ln_layout v = layout_of(args->in_t[1], args->op->attrs.axis);
    int64_t blocks, per_block;
    ln_blocks(v.units, &blocks, &per_block);
    return (size_t)(blocks * 2 * v.d) * sizeof(float);
}

/* One row: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, and the
 * row's dy * xhat and dy added into the block's partial sums (written by its first row). */
PL_VECTOR_CLONES static void layer_norm_grad_row(const float *dy, const float *x,
                                                 const float *gamma, float *dx,
                                                 float *part_gamma, float *part_beta,
                                                 int64_t d, double eps, bool first)
{
    row_stats s = stats_of_row(x, d, eps);
    float lane_g[8] = {0}, lane_gx[8] = {0}; /* eight fixed lanes, as pl_sum_run */
    int64_t i = 0;
    for (; i + 8 <= d; i += 8)
        for (int j = 0; j < 8; j++) {
            float xhat = (x[i + j] - s.mean) * s.rstd, g = dy[i + j] * gamma[i + j];
            lane_g[j] += g;
            lane_gx[j] += g * xhat;
        }
    float sum_g = pl_lanes_sum(lane_g), sum_gx = pl_lanes_sum(lane_gx);
    for (; i < d; i++) {
        float xhat = (x[i] - s.mean) * s.rstd, g = dy[i] * gamma[i];
        sum_g += g;
        sum_gx += g * xhat;
    }
    float mean_g = sum_g / (float)d, mean_gx = sum_gx / (float)d;
    for (i = 0; i < d; i++) {
        float xhat = (x[i] - s.mean) * s.rstd;
        dx[i] = s.rstd * (dy[i] * gamma[i] - mean_g - xhat * mean_gx);
        part_gamma[i] = first ? dy[i] * xhat : part_gamma[i] + dy[i] * xhat;
        part_beta[i] = first ? dy[i] : part_beta[i] + dy[i];
    }
}

/* One strided unit: the row formula per position, the channel sums over its positions. */
PL_VECTOR_CLONES static void layer_norm_grad_unit(const pl_kernel_args *args,
                                                  const ln_layout *v, int64_t u,
                                                  float *part_gamma, float *part_beta,
                                                  bool first)
{
    const float *gamma = args->in[2];
    int64_t count, start = unit_start(v, u, &count), inner = v->inner;
    const float *dy = (const float *)args->in[0] + start, *x = (const float *)args->in[1] + start;
    float *dx = (float *)args->out[0] + start;
    float mean[SPAN], rstd[SPAN], mean_g[SPAN] = {0}, mean_gx[SPAN] = {0};
    unit_stats(x, v, count, args->op->attrs.eps, mean, rstd);
    for (int64_t c = 0; c < v->d; c++)
        for (int64_t j = 0; j < count; j++) {
            float g = dy[c * inner + j] * gamma[c];
            mean_g[j] += g;
            mean_gx[j] += g * (x[c * inner + j] - mean[j]) * rstd[j];
        }
    for (int64_t j = 0; j < count; j++) {
        mean_g[j] /= (float)v->d;
        mean_gx[j] /= (float)v->d;
    }
    for (int64_t c = 0; c < v->d; c++) {
        float sum_gx = 0.0f, sum_g = 0.0f;
        for (int64_t j = 0; j < count; j++) {
            float xhat = (x[c * inner + j] - mean[j]) * rstd[j], dyc = dy[c * inner + j];
            dx[c * inner + j] = rstd[j] * (dyc * gamma[c] - mean_g[j] - xhat * mean_gx[j]);
            sum_gx += dyc * xhat;
            sum_g += dyc;
        }
        part_gamma[c] = first ? sum_gx : part_gamma[c] + sum_gx;
        part_beta[c] = first ? sum_g : part_beta[c] + sum_g;
    }
}

PL_KERNEL(layer_norm_grad)
{
    const float *dy = args->in[0], *x = args->in[1], *gamma = args->in[2];
    float *dx = args->out[0], *parts = args->work;
    ln_layout v = layout_of(args->in_t[1], args->op->attrs.axis);
    int64_t d = v.d, blocks, per_block, begin, end;
    ln_blocks(v.units, &blocks, &per_block);
    pl_kernel_share(blocks, args->ith, args->nth, &begin, &end);
    for (int64_t b = begin; b < end; b++) {
        int64_t r0 = b * per_block, r1 = r0 + per_block < v.units ? r0 + per_block : v.units;
        float *part_gamma = parts + b * 2 * d, *part_beta = part_gamma + d;
        for (int64_t r = r0; r < r1; r++)
            if (v.inner > 1)
                layer_norm_grad_unit(args, &v, r, part_gamma, part_beta, r == r0);
            else
                layer_norm_grad_row(dy + r * d, x + r * d, gamma, dx + r * d, part_gamma,
                                    part_beta, d, args->op->attrs.eps, r == r0);
    }
}

PL_FINISH(layer_norm_grad)
{
    const float *parts = args->work;
    float *dgamma = args->out[1], *dbeta = args->out[2];
    ln_layout v = layout_of(args->in_t[1], args->op->attrs.axis);
    int64_t d = v.d, blocks, per_block;
    ln_blocks(v.units, &blocks, &per_block);
    memcpy(dgamma, parts, (size_t)d * sizeof *dgamma);
    memcpy(dbeta, parts + d, (size_t)d * sizeof *dbeta);
    for (int64_t b = 1; b < blocks; b++) {
        const float *part_gamma = parts + b * 2 * d, *part_beta = part_gamma + d;
        for (int64_t i = 0; i < d; i++) {
            dgamma[i] += part_gamma[i];
            dbeta[i] += part_beta[i];
        }
    }
}

/* ---- batch_norm --------------------------------------------------------------------------- */

/* x as [n, c, s]: batch, channels, spatial positions. */
typedef struct nchw {
    int64_t n, c, s;
} nchw;

static nchw view_nchw(const pl_tensor *x)
{
    nchw v = {x->dims[0], x->dims[1], 1};
    for (int a = 2; a < x->rank; a++)
        v.s *= x->dims[a];
    return v;
}

/* A channel's centre (its mean, or a pivot) as a float pair hi + lo: x - c is computed as
 * (x - hi) - lo, exact in its first step for x near c, so that a large mean against a
 * small spread keeps the deviations' precision at the cost of one subtraction. */
typedef struct centre {
    float hi, lo;
} centre;

static centre centre_of(double c)
{
    float hi = (float)c;
    return (centre){hi, (float)(c - (double)hi)};
}

/* What a channel reduction sums: x - c, (x - c)^2, or dy * (x - c). */
typedef enum channel_term { TERM_DEV, TERM_SQ_DEV, TERM_DY_DEV } channel_term;

/* run += TERM (of the index j) over [0, n), in eight fixed lanes. */
#define LANE_SUM(n, TERM)                                                                  \
    do {                                                                                   \
        float lane_[8] = {0};                                                              \
        int64_t j_ = 0;                                                                    \
        for (; j_ + 8 <= (n); j_ += 8)                                                     \
            for (int q_ = 0; q_ < 8; q_++) {                                               \
                int64_t j = j_ + q_;                                                       \
                lane_[q_] += TERM;                                                         \
            }                                                                              \
        for (; j_ < (n); j_++) {                                                           \
            int64_t j = j_;                                                                \
            run += TERM;                                                                   \
        }                                                                                  \
        run += ((lane_[0] + lane_[1]) + (lane_[2] + lane_[3])) +                           \
               ((lane_[4] + lane_[5]) + (lane_[6] + lane_[7]));                            \
    } while (0)

#define DEV(j) ((x[j] - c.hi) - c.lo)

/* One contiguous run of a channel's term. */
PL_VECTOR_CLONES static float term_run(channel_term term, const float *x, const float *dy,
                                        centre c, int64_t n)
{
    float run = 0.0f;
    switch (term) {
    case TERM_DEV:
        LANE_SUM(n, DEV(j));
        break;
    case TERM_SQ_DEV:
        LANE_SUM(n, DEV(j) * DEV(j));
        break;
    case TERM_DY_DEV:
        LANE_SUM(n, dy[j] * DEV(j));
        break;
    }
    return run;
}

/* Small planes (fewer than SMALL_PLANE positions, as on a MobileNet's last layers): a
 * block's planes lie one after another in each sample, so the block is one run of w * s
 * elements, summed element-wise over the samples in double and then plane by plane. A
 * call of term_run per plane of a few positions cost more than the plane (576 channels of
 * 2x2 planes: 11 ns a plane). */
#define SMALL_PLANE 16

/* Per element of a block of small planes: its channel's value of `per_channel`. */
static void spread(const double *per_channel, const nchw *v, int64_t w, double *out)
{
    for (int64_t e = 0; e < w * v->s; e++)
        out[e] = per_channel ? per_channel[e / v->s] : 0.0;
}

/* The same for float values, and for the centres of `cs` as their hi and lo parts. */
static void spread_floats(const float *per_channel, const nchw *v, int64_t w, float *out)
{
    for (int64_t e = 0; e < w * v->s; e++)
        out[e] = per_channel[e / v->s];
}

static void spread_centres(const centre *cs, const nchw *v, int64_t w, float *hi, float *lo)
{
    for (int64_t e = 0; e < w * v->s; e++) {
        hi[e] = cs[e / v->s].hi;
        lo[e] = cs[e / v->s].lo;
    }
}

PL_VECTOR_CLONES static void small_plane_sums(channel_term term, const float *x,
                                              const float *dy, const nchw *v, int64_t c0,
                                              int64_t w, const double *at, double *sum)
{
    double acc[CHANNEL_BLOCK * SMALL_PLANE] = {0}, c[CHANNEL_BLOCK * SMALL_PLANE];
    int64_t run = w * v->s;
    spread(at, v, w, c);
    for (int64_t i = 0; i < v->n; i++) {
        const float *xs = x + (i * v->c + c0) * v->s, *ds = dy ? dy + (i * v->c + c0) * v->s : NULL;
        switch (term) {
        case TERM_DEV:
            for (int64_t e = 0; e < run; e++)
                acc[e] += (double)xs[e] - c[e];
            break;
        case TERM_SQ_DEV:
            for (int64_t e = 0; e < run; e++)
                acc[e] += ((double)xs[e] - c[e]) * ((double)xs[e] - c[e]);
            break;
        case TERM_DY_DEV:
            for (int64_t e = 0; e < run; e++)
                acc[e] += (double)ds[e] * ((double)xs[e] - c[e]);
            break;
        }
    }
    for (int64_t k = 0; k < w; k++) {
        sum[k] = 0.0;
        for (int64_t j = 0; j < v->s; j++)
            sum[k] += acc[k * v->s + j];
    }
}

/* Per channel of [c0, c0 + w) (w <= CHANNEL_BLOCK): the sum of `term` about the centres
 * `at` (0 when NULL), in double, samples outermost, in the same order for any block. */
static void channel_sums(channel_term term, const float *x, const float *dy, const nchw *v,
                         int64_t c0, int64_t w, const double *at, double *sum)
{
    if (v->s < SMALL_PLANE) {
        small_plane_sums(term, x, dy, v, c0, w, at, sum);
        return;
    }
    centre cs[CHANNEL_BLOCK];
    for (int64_t k = 0; k < w; k++) {
        sum[k] = 0.0;
        cs[k] = centre_of(at ? at[k] : 0.0);
    }
    for (int64_t i = 0; i < v->n; i++) {
        for (int64_t k = 0; k < w; k++) {
            int64_t off = (i * v->c + c0 + k) * v->s;
            sum[k] += term_run(term, x + off, dy ? dy + off : NULL, cs[k], v->s);
        }
    }
}

/* Per channel of the block: the mean (summed about the channel's first element, so that
 * an offset costs no precision) and the biased variance. */
static void channel_stats(const float *x, const nchw *v, int64_t c0, int64_t w, double *mean,
                          double *var)
{
    double count = (double)(v->n * v->s), pivot[CHANNEL_BLOCK] = {0};
    for (int64_t k = 0; k < w; k++)
        pivot[k] = x[(c0 + k) * v->s];
    channel_sums(TERM_DEV, x, NULL, v, c0, w, pivot, mean);
    for (int64_t k = 0; k < w; k++)
        mean[k] = pivot[k] + mean[k] / count;
    channel_sums(TERM_SQ_DEV, x, NULL, v, c0, w, mean, var);
    for (int64_t k = 0; k < w; k++)
        var[k] /= count;
}

/* y = (x - mean) * scale + shift per channel of the block. */
PL_VECTOR_CLONES static void channel_affine(const float *x, float *y, const nchw *v,
                                            int64_t c0, int64_t w, const double *mean,
                                            const float *scale, const float *shift)
{
    centre cs[CHANNEL_BLOCK];
    for (int64_t k = 0; k < w; k++)
        cs[k] = centre_of(mean[k]);
    if (v->s < SMALL_PLANE) { /* one run of the block's planes a sample */
        float hi[CHANNEL_BLOCK * SMALL_PLANE], lo[CHANNEL_BLOCK * SMALL_PLANE],
            a[CHANNEL_BLOCK * SMALL_PLANE], b[CHANNEL_BLOCK * SMALL_PLANE];
        int64_t run = w * v->s;
        spread_centres(cs, v, w, hi, lo);
        spread_floats(scale, v, w, a);
        spread_floats(shift, v, w, b);
        for (int64_t i = 0; i < v->n; i++) {
            const float *xs = x + (i * v->c + c0) * v->s;
            float *ys = y + (i * v->c + c0) * v->s;
            for (int64_t e = 0; e < run; e++)
                ys[e] = ((xs[e] - hi[e]) - lo[e]) * a[e] + b[e];
        }
        return;
    }
    for (int64_t i = 0; i < v->n; i++) {
        for (int64_t k = 0; k < w; k++) {
            int64_t off = (i * v->c + c0 + k) * v->s;
            const centre c = cs[k];
            const float a = scale[k], b = shift[k];
            for (int64_t j = 0; j < v->s; j++)
                y[off + j] = ((x[off + j] - c.hi) - c.lo) * a + b;
        }
    }
}

/* Width of the channel block starting at c0 of a share ending at c_end. */
static int64_t block_width(int64_t c0, int64_t c_end)
{
    return c_end - c0 < CHANNEL_BLOCK ? c_end - c0 : CHANNEL_BLOCK;
}

/* Training (or no running averages): the batch's mean and biased variance, and the
 * running averages moved toward them (unbiased variance) when given. Evaluation with
 * running averages: those. */
static void batch_norm_stats(const pl_kernel_args *args, const nchw *v, int64_t c0, int64_t w,
                             double *mean, double *var)
{
    bool running = args->op->n_inputs >= 5;
    float *run_mean = running ? args->in[3] : NULL, *run_var = running ? args->in[4] : NULL;
    if (running && !args->step->training) {
        for (int64_t k = 0; k < w; k++) {
            mean[k] = run_mean[c0 + k];
            var[k] = run_var[c0 + k];
        }
        return;
    }
    channel_stats(args->in[0], v, c0, w, mean, var);
    if (!running)
        return;
    double m = args->op->attrs.momentum, count = (double)(v->n * v->s);
    double unbias = count > 1 ? count / (count - 1) : 1.0;
    for (int64_t k = 0; k < w; k++) {
        int64_t c = c0 + k;
        run_mean[c] = (float)(m * run_mean[c] + (1 - m) * mean[k]);
        run_var[c] = (float)(m * run_var[c] + (1 - m) * var[k] * unbias);
    }
}

/* Updates running_mean and running_var (inputs 3 and 4) in place when training. */
PL_KERNEL(batch_norm)
{
    nchw v = view_nchw(args->in_t[0]);
    const float *gamma = args->in[1], *beta = args->in[2];
    double eps = args->op->attrs.eps;
    int64_t c_begin, c_end;
    pl_kernel_share(v.c, args->ith, args->nth, &c_begin, &c_end);
    for (int64_t c0 = c_begin; c0 < c_end; c0 += CHANNEL_BLOCK) {
        int64_t w = block_width(c0, c_end);
        double mean[CHANNEL_BLOCK], var[CHANNEL_BLOCK];
        float scale[CHANNEL_BLOCK], shift[CHANNEL_BLOCK];
        batch_norm_stats(args, &v, c0, w, mean, var);
        for (int64_t k = 0; k < w; k++) {
            scale[k] = (float)(gamma[c0 + k] / sqrt(var[k] + eps));
            shift[k] = beta[c0 + k];
        }
        channel_affine(args->in[0], args->out[0], &v, c0, w, mean, scale, shift);
    }
}

/* dx = dy * a + (x - mean) * b + c per channel of the block. */
PL_VECTOR_CLONES static void channel_grad_apply(const float *dy, const float *x, float *dx,
                                                const nchw *v, int64_t c0, int64_t w,
                                                const double *mean, const float *a,
                                                const float *b, const float *c)
{
    centre cs[CHANNEL_BLOCK];
    for (int64_t k = 0; k < w; k++)
        cs[k] = centre_of(mean[k]);
    if (v->s < SMALL_PLANE) { /* one run of the block's planes a sample */
        float hi[CHANNEL_BLOCK * SMALL_PLANE], lo[CHANNEL_BLOCK * SMALL_PLANE],
            ae[CHANNEL_BLOCK * SMALL_PLANE], be[CHANNEL_BLOCK * SMALL_PLANE],
            ce[CHANNEL_BLOCK * SMALL_PLANE];
        int64_t run = w * v->s;
        spread_centres(cs, v, w, hi, lo);
        spread_floats(a, v, w, ae);
        spread_floats(b, v, w, be);
        spread_floats(c, v, w, ce);
        for (int64_t i = 0; i < v->n; i++) {
            int64_t off = (i * v->c + c0) * v->s;
            for (int64_t e = 0; e < run; e++)
                dx[off + e] = dy[off + e] * ae[e] + ((x[off + e] - hi[e]) - lo[e]) * be[e] + ce[e];
        }
        return;
    }
    for (int64_t i = 0; i < v->n; i++) {
        for (int64_t k = 0; k < w; k++) {
            int64_t off = (i * v->c + c0 + k) * v->s;
            const centre m = cs[k];
            const float ak = a[k], bk = b[k], ck = c[k];
            for (int64_t j = 0; j < v->s; j++)
                dx[off + j] = dy[off + j] * ak + ((x[off + j] - m.hi) - m.lo) * bk + ck;
        }
    }
}

/* With batch statistics recomputed, per channel: dbeta = sum(dy),
 * dgamma = sum(dy * xhat) = rstd * sum(dy * (x - mean)), and
 * dx = gamma * rstd * (dy - dbeta / count - xhat * dgamma / count),
 * an affine function of dy and x - mean. */
PL_KERNEL(batch_norm_grad)
{
    nchw v = view_nchw(args->in_t[1]);
    const float *dy = args->in[0], *x = args->in[1], *gamma = args->in[2];
    float *dx = args->out[0], *dgamma = args->out[1], *dbeta = args->out[2];
    double eps = args->op->attrs.eps, count = (double)(v.n * v.s);
    int64_t c_begin, c_end;
    pl_kernel_share(v.c, args->ith, args->nth, &c_begin, &c_end);
    for (int64_t c0 = c_begin; c0 < c_end; c0 += CHANNEL_BLOCK) {
        int64_t w = block_width(c0, c_end);
        double mean[CHANNEL_BLOCK], var[CHANNEL_BLOCK], sum_dy[CHANNEL_BLOCK],
            sum_dy_dev[CHANNEL_BLOCK];
        channel_stats(x, &v, c0, w, mean, var);
        channel_sums(TERM_DEV, dy, NULL, &v, c0, w, NULL, sum_dy);
        channel_sums(TERM_DY_DEV, x, dy, &v, c0, w, mean, sum_dy_dev);
        float a[CHANNEL_BLOCK], b[CHANNEL_BLOCK], c[CHANNEL_BLOCK];
        for (int64_t k = 0; k < w; k++) {
            double rstd = 1.0 / sqrt(var[k] + eps), dg = sum_dy_dev[k] * rstd;
            double g = gamma[c0 + k] * rstd;
            dgamma[c0 + k] = (float)dg;
            dbeta[c0 + k] = (float)sum_dy[k];
            a[k] = (float)g;
            b[k] = (float)(-g * rstd * dg / count);
            c[k] = (float)(-g * sum_dy[k] / count);
        }
        channel_grad_apply(dy, x, dx, &v, c0, w, mean, a, b, c);
    }
}

pl_kernel_route pl_batch_norm_route(const pl_tensor *x)
{
    return view_nchw(x).s < SMALL_PLANE ? PL_ROUTE_SMALL_PLANES : PL_ROUTE_PLANES;
}
