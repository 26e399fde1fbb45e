/* Kernel test helpers. */
#include "kernel_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

pl_tensor pl_kc_tensor(const char *dims, pl_dtype dtype, bool batched)
{
    pl_tensor t = {.name = "t", .dtype = dtype, .batched = batched, .producer = -1,
                   .kind = PL_TENSOR_ACTIVATION};
    for (const char *p = dims; *p;) {
        char *end;
        t.dims[t.rank++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    return t;
}

void *pl_kc_random(const pl_tensor *t, uint64_t seed, double lo, double hi)
{
    int64_t n = pl_tensor_elements(t);
    void *data = malloc((size_t)(n > 0 ? n : 1) * 4);
    for (int64_t i = 0; i < n; i++) {
        double u = pl_rng_uniform(seed, (uint64_t)i);
        if (t->dtype == PL_I32)
            ((int32_t *)data)[i] = (int32_t)floor(lo + u * (hi - lo));
        else
            ((float *)data)[i] = (float)(lo + u * (hi - lo));
    }
    return data;
}

bool pl_kc_infer(pl_op_kind kind, const pl_attrs *attrs, int n_in, const pl_tensor *in_t,
                 int n_out, pl_tensor *out_t)
{
    const pl_tensor *in[16];
    pl_tensor *out[16];
    for (int i = 0; i < n_in; i++)
        in[i] = &in_t[i];
    for (int i = 0; i < n_out; i++) {
        out_t[i] = (pl_tensor){.name = "out", .producer = -1, .kind = PL_TENSOR_ACTIVATION};
        out[i] = &out_t[i];
    }
    pl_infer_ctx ctx = {.in = in, .out = out, .n_in = n_in, .n_out = n_out, .attrs = attrs,
                        .blame_input = -1, .blame_attr = -1};
    if (pl_op_info_of(kind)->infer(&ctx))
        return true;
    fprintf(stderr, "\n    infer %s: %s\n", pl_op_info_of(kind)->name, ctx.message);
    return false;
}

void pl_kc_run(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs, int n_in,
               const pl_tensor *in_t, void *const *in, int n_out, const pl_tensor *out_t,
               void *const *out, int nth, const pl_step_info *step)
{
    static const pl_step_info first = {.step = 1, .micro_batch = 0, .micro_batches = 1,
                                       .training = true};
    pl_op op = {.name = "op", .kind = kind, .n_inputs = n_in, .n_outputs = n_out};
    if (attrs)
        op.attrs = *attrs;
    else
        pl_attrs_default(&op.attrs);
    const pl_tensor *in_d[16], *out_d[16];
    for (int i = 0; i < n_in; i++)
        in_d[i] = &in_t[i];
    for (int i = 0; i < n_out; i++)
        out_d[i] = &out_t[i];
    pl_kernel_args args = {.op = &op, .in_t = in_d, .out_t = out_d, .in = in, .out = out,
                           .work = NULL, .ith = 0, .nth = nth, .step = step ? step : &first};
    size_t bytes = fns->workspace ? fns->workspace(&args) : 0;
    void *work = bytes ? calloc(1, bytes) : NULL;
    for (int ith = 0; ith < nth; ith++) {
        args.ith = ith;
        args.work = work;
        fns->kernel(&args);
    }
    if (fns->finish) {
        args.ith = 0;
        fns->finish(&args);
    }
    free(work);
}

double pl_kc_max_rel_error(const float *a, const float *b, int64_t n, double floor)
{
    double worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (fabs((double)b[i]) + floor);
        if (e > worst || isnan(e))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

static double loss_of(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                      int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                      const pl_tensor *out_t, void *const *out, int out_index, const float *r)
{
    pl_kc_run(fns, kind, attrs, n_in, in_t, in, n_out, out_t, out, 1, NULL);
    const float *y = out[out_index];
    int64_t n = pl_tensor_elements(&out_t[out_index]);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)r[i] * (double)y[i];
    return sum;
}

void pl_kc_numeric_grad(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                        int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                        const pl_tensor *out_t, int out_index, const float *r, int wrt,
                        float eps, float *grad)
{
    void *out[16];
    for (int i = 0; i < n_out; i++)
        out[i] = calloc((size_t)pl_tensor_elements(&out_t[i]) + 1, 4);
    float *x = in[wrt];
    int64_t n = pl_tensor_elements(&in_t[wrt]);
    for (int64_t i = 0; i < n; i++) {
        float saved = x[i];
        x[i] = saved + eps;
        double up = loss_of(fns, kind, attrs, n_in, in_t, in, n_out, out_t, out, out_index, r);
        x[i] = saved - eps;
        double down = loss_of(fns, kind, attrs, n_in, in_t, in, n_out, out_t, out, out_index, r);
        x[i] = saved;
        grad[i] = (float)((up - down) / (2.0 * eps));
    }
    for (int i = 0; i < n_out; i++)
        free(out[i]);
}
