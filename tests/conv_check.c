/* The convolution kernel tests' cases and reference (conv_check.h). */
#include "conv_check.h"

#include <stdio.h>
#include <stdlib.h>

#include "test_util.h"

conv_data conv_case_make(const conv_case *c, pl_op_kind kind, bool transposed, uint64_t seed)
{
    conv_data d = {.n_in = c->bias ? 3 : 2};
    pl_attrs_default(&d.at);
    d.in_t[0] = pl_kc_tensor(c->x, PL_F32, true);
    d.in_t[1] = pl_kc_tensor(c->w, PL_F32, false);
    d.spatial = d.in_t[0].rank - 2;
    for (int a = 0; a < d.spatial; a++) {
        d.at.stride[a] = c->stride[a];
        d.at.padding[a] = c->padding[a];
        d.at.dilation[a] = c->dilation[a];
        d.at.output_padding[a] = c->output_padding[a];
    }
    d.at.groups = c->groups;
    d.at.given = PL_ATTR_BIT(PL_ATTR_STRIDE) | PL_ATTR_BIT(PL_ATTR_PADDING) |
                 PL_ATTR_BIT(PL_ATTR_DILATION) | PL_ATTR_BIT(PL_ATTR_GROUPS);
    int64_t out_channels = transposed ? d.in_t[1].dims[1] * c->groups : d.in_t[1].dims[0];
    char bias_dims[32];
    snprintf(bias_dims, sizeof bias_dims, "%lld", (long long)out_channels);
    d.in_t[2] = pl_kc_tensor(bias_dims, PL_F32, false);
    CU_ASSERT_FATAL(pl_kc_infer(kind, &d.at, d.n_in, d.in_t, 1, &d.y_t));
    d.x = pl_kc_random(&d.in_t[0], seed, -1, 1);
    d.w = pl_kc_random(&d.in_t[1], seed + 1, -1, 1);
    d.b = pl_kc_random(&d.in_t[2], seed + 2, -1, 1);
    d.dy = pl_kc_random(&d.y_t, seed + 3, -1, 1);
    return d;
}

void conv_case_free(conv_data *d)
{
    free(d->x);
    free(d->w);
    free(d->b);
    free(d->dy);
}

void conv_case_report(const char *what, const conv_case *c, double error, double limit)
{
    if (error >= limit)
        fprintf(stderr, "\n    %s x %s w %s: relative error %g\n", what, c->x, c->w, error);
    CU_ASSERT_TRUE(error < limit);
}

/* A convolution's shapes with the missing leading spatial axes as 1: [n, c, d, h, w]. */
typedef struct lifted {
    int64_t x[5], w[5], y[5], stride[3], padding[3], dilation[3], groups;
} lifted;

static lifted lift(const pl_tensor *x, const pl_tensor *w, const pl_tensor *y, const pl_attrs *at)
{
    int spatial = x->rank - 2, skip = 3 - spatial;
    lifted l = {.x = {x->dims[0], x->dims[1], 1, 1, 1},
                .w = {w->dims[0], w->dims[1], 1, 1, 1},
                .y = {y->dims[0], y->dims[1], 1, 1, 1},
                .stride = {1, 1, 1},
                .padding = {0, 0, 0},
                .dilation = {1, 1, 1},
                .groups = at->groups};
    for (int a = 0; a < spatial; a++) {
        l.x[2 + skip + a] = x->dims[2 + a];
        l.w[2 + skip + a] = w->dims[2 + a];
        l.y[2 + skip + a] = y->dims[2 + a];
        l.stride[skip + a] = at->stride[a];
        l.padding[skip + a] = at->padding[a];
        l.dilation[skip + a] = at->dilation[a];
    }
    return l;
}

static int64_t volume(const int64_t *dims)
{
    return dims[0] * dims[1] * dims[2] * dims[3] * dims[4];
}

static conv_reference reference(const lifted *l, const float *x, const float *w, const float *dy)
{
    conv_reference r = {calloc((size_t)volume(l->y), sizeof(double)),
                        calloc((size_t)volume(l->x), sizeof(double)),
                        calloc((size_t)volume(l->w), sizeof(double)), NULL};
    int64_t cg = l->w[1], og = l->w[0] / l->groups, in_pos[3], index;
    for (int64_t ni = 0; ni < l->y[0]; ni++)
        for (int64_t oc = 0; oc < l->y[1]; oc++)
            for (int64_t out = 0; out < l->y[2] * l->y[3] * l->y[4]; out++) {
                int64_t o_pos[3] = {out / (l->y[3] * l->y[4]), out / l->y[4] % l->y[3],
                                    out % l->y[4]};
                int64_t yi = (ni * l->y[1] + oc) * l->y[2] * l->y[3] * l->y[4] + out;
                double sum = 0;
                for (int64_t ci = 0; ci < cg; ci++)
                    for (int64_t tap = 0; tap < l->w[2] * l->w[3] * l->w[4]; tap++) {
                        int64_t k[3] = {tap / (l->w[3] * l->w[4]), tap / l->w[4] % l->w[3],
                                        tap % l->w[4]};
                        bool inside = true;
                        for (int a = 0; a < 3; a++) {
                            in_pos[a] = o_pos[a] * l->stride[a] - l->padding[a] +
                                        k[a] * l->dilation[a];
                            inside = inside && in_pos[a] >= 0 && in_pos[a] < l->x[2 + a];
                        }
                        if (!inside)
                            continue;
                        int64_t channel = oc / og * cg + ci;
                        index = ni * l->x[1] + channel;
                        for (int a = 0; a < 3; a++)
                            index = index * l->x[2 + a] + in_pos[a];
                        int64_t wi = (oc * cg + ci) * l->w[2] * l->w[3] * l->w[4] + tap;
                        sum += (double)x[index] * w[wi];
                        r.dx[index] += (double)dy[yi] * w[wi];
                        r.dw[wi] += (double)dy[yi] * x[index];
                    }
                r.y[yi] = sum;
            }
    return r;
}

conv_reference conv_reference_compute(const pl_tensor *x_t, const float *x, const pl_tensor *w_t,
                                      const float *w, const pl_tensor *y_t, const float *dy,
                                      const pl_attrs *at, const float *bias)
{
    lifted l = lift(x_t, w_t, y_t, at);
    conv_reference r = reference(&l, x, w, dy);
    if (bias)
        conv_reference_add_bias(r.y, y_t, bias);
    r.db = calloc((size_t)y_t->dims[1], sizeof *r.db);
    int64_t plane = pl_tensor_elements(y_t) / (y_t->dims[0] * y_t->dims[1]);
    for (int64_t i = 0; i < pl_tensor_elements(y_t); i++)
        r.db[i / plane % y_t->dims[1]] += dy[i];
    return r;
}

void conv_reference_add_bias(double *y, const pl_tensor *t, const float *bias)
{
    int64_t plane = pl_tensor_elements(t) / (t->dims[0] * t->dims[1]);
    for (int64_t i = 0; i < pl_tensor_elements(t); i++)
        y[i] += bias[i / plane % t->dims[1]];
}

void conv_reference_free(conv_reference *r)
{
    free(r->y);
    free(r->dx);
    free(r->dw);
    free(r->db);
}
