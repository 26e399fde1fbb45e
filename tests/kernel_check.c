/* Kernel test helpers. */
#include "kernel_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "rng.h"

const int pl_kc_thread_counts[PL_KC_THREAD_COUNTS] = {1, 3, 7};

pl_attrs pl_kc_defaults(void)
{
    pl_attrs at;
    pl_attrs_default(&at);
    return at;
}

float *pl_kc_floats(int64_t n)
{
    return malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
}

float *pl_kc_nans(int64_t n)
{
    float *p = pl_kc_floats(n);
    memset(p, 0xff, (size_t)(n > 0 ? n : 1) * sizeof(float));
    return p;
}

pl_tensor pl_kc_tensor(const char *dims, pl_dtype dtype, bool batched)
{
    pl_tensor t = {.name = "t", .dtype = dtype, .batch_axis = batched ? 0 : PL_NO_BATCH,
                   .producer = -1,
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

void pl_kc_run_fresh_outputs(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                             int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                             pl_tensor *out_t, float **out, int nth, const pl_step_info *step)
{
    CU_ASSERT_FATAL(pl_kc_infer(kind, attrs, n_in, in_t, n_out, out_t));
    for (int o = 0; o < n_out; o++)
        out[o] = pl_kc_nans(pl_tensor_elements(&out_t[o]));
    pl_kc_run(fns, kind, attrs, n_in, in_t, in, n_out, out_t, (void *const *)out, nth, step);
}

float *pl_kc_run_fresh(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                       int n_in, const pl_tensor *in_t, void *const *in, pl_tensor *out_t,
                       int nth, const pl_step_info *step)
{
    float *out;
    pl_kc_run_fresh_outputs(fns, kind, attrs, n_in, in_t, in, 1, out_t, &out, nth, step);
    return out;
}

void pl_kc_run_all_threads(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs,
                           int n_in, const pl_tensor *in_t, void *const *in, int n_out,
                           const pl_tensor *out_t, float **first, const char *what)
{
    for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
        void *got[16] = {NULL}; /* outputs past n_out stay NULL */
        for (int o = 0; o < n_out; o++)
            got[o] = pl_kc_nans(pl_tensor_elements(&out_t[o]));
        pl_kc_run(fns, kind, attrs, n_in, in_t, in, n_out, out_t, got, pl_kc_thread_counts[t],
                  NULL);
        for (int o = 0; o < n_out; o++) {
            if (t == 0) {
                first[o] = got[o];
                continue;
            }
            size_t bytes = (size_t)pl_tensor_elements(&out_t[o]) * sizeof(float);
            bool same = memcmp(got[o], first[o], bytes) == 0;
            if (!same)
                fprintf(stderr, "\n    %s: output %d differs between 1 and %d threads\n", what,
                        o, pl_kc_thread_counts[t]);
            CU_ASSERT_TRUE(same);
            free(got[o]);
        }
    }
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

double pl_kc_max_rel_error_double(const float *got, const double *want, int64_t n,
                                  double floor)
{
    float *w = pl_kc_floats(n);
    for (int64_t i = 0; i < n; i++)
        w[i] = (float)want[i];
    double e = pl_kc_max_rel_error(got, w, n, floor);
    free(w);
    return e;
}

int64_t pl_kc_broadcast_index(const pl_tensor *out, const pl_tensor *t, int64_t i)
{
    int offset = out->rank - t->rank;
    int64_t index = 0, scale = 1;
    for (int a = out->rank - 1; a >= 0; a--) {
        int64_t coord = i % out->dims[a];
        i /= out->dims[a];
        if (a < offset)
            continue;
        int64_t dim = t->dims[a - offset];
        index += (dim == 1 ? 0 : coord) * scale;
        scale *= dim;
    }
    return index;
}

void pl_kc_check_op(const pl_kernel_fns *fns, pl_op_kind kind, const pl_attrs *attrs, int n_in,
                    const pl_tensor *in_t, void *const *in, const float *want, double floor,
                    const pl_step_info *step, const char *what)
{
    pl_tensor out_t;
    float *first = NULL;
    for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
        float *got = pl_kc_run_fresh(fns, kind, attrs, n_in, in_t, in, &out_t,
                                     pl_kc_thread_counts[t], step);
        int64_t n = pl_tensor_elements(&out_t);
        if (t == 0) {
            double e = pl_kc_max_rel_error(got, want, n, floor);
            if (!(e < 1e-5))
                fprintf(stderr, "\n    %s: error %g\n", what, e);
            CU_ASSERT(e < 1e-5);
            first = got;
        } else {
            CU_ASSERT_EQUAL(memcmp(got, first, (size_t)n * sizeof *got), 0);
            free(got);
        }
    }
    free(first);
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

void pl_kc_check_gradient(const pl_kernel_fns *fwd, pl_op_kind kind, const pl_attrs *attrs,
                          int n_in, const pl_tensor *in_t, void *const *in, int wrt,
                          const float *got, const float *r, float sign, const char *what)
{
    pl_tensor out_t;
    CU_ASSERT_FATAL(pl_kc_infer(kind, attrs, n_in, in_t, 1, &out_t));
    int64_t n = pl_tensor_elements(&in_t[wrt]);
    float *numeric = pl_kc_floats(n);
    pl_kc_numeric_grad(fwd, kind, attrs, n_in, in_t, in, 1, &out_t, 0, r, wrt, 1e-3f, numeric);
    for (int64_t i = 0; i < n; i++)
        numeric[i] *= sign;
    double e = pl_kc_max_rel_error(got, numeric, n, 1e-2);
    if (!(e < 2e-2))
        fprintf(stderr, "\n    %s: gradient error %g\n", what, e);
    CU_ASSERT(e < 2e-2);
    free(numeric);
}
