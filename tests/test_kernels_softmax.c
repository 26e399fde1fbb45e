/* Kernel tests: softmax and log_softmax along every kind of axis, the two losses and
 * top-k gating against double-precision references at 1, 3 and 7 threads (bitwise equal),
 * and their gradient kernels against central differences. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

#define FNS_REDUCE(name)                                                                   \
    ((pl_kernel_fns){pl_kernel_##name, pl_kernel_##name##_finish, pl_kernel_##name##_workspace})

/* ---- softmax and log_softmax ---------------------------------------------------------- */

static const struct {
    const char *shape;
    int64_t axis;
} axis_cases[] = {
    {"3,7", -1}, {"4,19", 1}, {"2,5,3", 1}, {"2,3,70", 1}, {"6,4", 0}, {"1", 0},
    {"2,3,4,5", -3}, {"5,2", -1},
};

/* softmax or log_softmax of x along axis, in double. */
static void softmax_ref(const pl_tensor *t, int64_t axis, const float *x, float *y,
                        bool log_form)
{
    if (axis < 0)
        axis += t->rank;
    int64_t outer = 1, c = t->dims[axis], inner = 1;
    for (int a = 0; a < axis; a++)
        outer *= t->dims[a];
    for (int a = (int)axis + 1; a < t->rank; a++)
        inner *= t->dims[a];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t l = 0; l < inner; l++) {
            const float *xs = x + o * c * inner + l;
            float *ys = y + o * c * inner + l;
            double m = -INFINITY, sum = 0;
            for (int64_t k = 0; k < c; k++)
                m = fmax(m, xs[k * inner]);
            for (int64_t k = 0; k < c; k++)
                sum += exp(xs[k * inner] - m);
            for (int64_t k = 0; k < c; k++)
                ys[k * inner] = (float)(log_form ? xs[k * inner] - m - log(sum)
                                                 : exp(xs[k * inner] - m) / sum);
        }
}

static void test_softmax(void)
{
    for (size_t c = 0; c < sizeof axis_cases / sizeof *axis_cases; c++) {
        pl_attrs at = pl_kc_defaults();
        at.axis = axis_cases[c].axis;
        pl_tensor t = pl_kc_tensor(axis_cases[c].shape, PL_F32, false);
        int64_t n = pl_tensor_elements(&t);
        float *x = pl_kc_random(&t, 1 + c, -4, 4), *want = pl_kc_floats(n);
        void *in[] = {x};
        for (int pass = 0; pass < 2; pass++) { /* then shifted far up: must stay stable */
            char what[64];
            snprintf(what, sizeof what, "(log_)softmax [%s] axis %lld%s", axis_cases[c].shape,
                     (long long)at.axis, pass ? " +1000" : "");
            softmax_ref(&t, at.axis, x, want, false);
            pl_kc_check_op(&PL_KC_FNS(softmax), PL_OP_SOFTMAX, &at, 1, &t, in, want, 1e-3, NULL,
                           what);
            softmax_ref(&t, at.axis, x, want, true);
            /* log-probabilities near 0 carry the rounding of terms up to |x - max| */
            pl_kc_check_op(&PL_KC_FNS(log_softmax), PL_OP_LOG_SOFTMAX, &at, 1, &t, in, want, 0.1,
                           NULL, what);
            for (int64_t i = 0; i < n; i++)
                x[i] += 1000.0f;
        }
        free(x);
        free(want);
    }
}

static void test_softmax_gradients(void)
{
    for (size_t c = 0; c < sizeof axis_cases / sizeof *axis_cases; c++) {
        pl_attrs at = pl_kc_defaults();
        at.axis = axis_cases[c].axis;
        pl_tensor t = pl_kc_tensor(axis_cases[c].shape, PL_F32, false), out_t;
        if (pl_tensor_elements(&t) > 200)
            continue; /* central differences of big tensors cost more than they add */
        float *x = pl_kc_random(&t, 10 + c, -2, 2), *dy = pl_kc_random(&t, 20 + c, -1, 1);
        void *in[] = {x};
        for (int log_form = 0; log_form < 2; log_form++) {
            pl_kernel_fns fwd = log_form ? PL_KC_FNS(log_softmax) : PL_KC_FNS(softmax);
            pl_kernel_fns grad = log_form ? PL_KC_FNS(log_softmax_grad) : PL_KC_FNS(softmax_grad);
            pl_op_kind kind = log_form ? PL_OP_LOG_SOFTMAX : PL_OP_SOFTMAX;
            pl_op_kind grad_kind = log_form ? PL_OP_LOG_SOFTMAX_GRAD : PL_OP_SOFTMAX_GRAD;
            float *y = pl_kc_run_fresh(&fwd, kind, &at, 1, &t, in, &out_t, 1, NULL);
            pl_tensor grad_t[2] = {t, t};
            void *grad_in[] = {dy, y};
            float *got = pl_kc_run_fresh(&grad, grad_kind, &at, 2, grad_t, grad_in, &out_t, 1,
                                         NULL);
            pl_kc_check_gradient(&fwd, kind, &at, 1, &t, in, 0, got, dy, 1.0f,
                                 log_form ? "log_softmax" : "softmax");
            pl_kc_check_op(&grad, grad_kind, &at, 2, grad_t, grad_in, got, 1e-3, NULL,
                           "softmax gradient");
            free(got);
            free(y);
        }
        free(x);
        free(dy);
    }
}

/* ---- losses ----------------------------------------------------------------------------------- */

static double xent_ref(const float *logits, const int32_t *labels, int64_t rows, int64_t c)
{
    double total = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (labels[r] < 0 || labels[r] >= c)
            continue;
        const float *x = logits + r * c;
        double m = -INFINITY, sum = 0;
        for (int64_t k = 0; k < c; k++)
            m = fmax(m, x[k]);
        for (int64_t k = 0; k < c; k++)
            sum += exp(x[k] - m);
        total += m + log(sum) - x[labels[r]];
    }
    return total / (double)rows;
}

static void test_cross_entropy(void)
{
    static const struct {
        const char *logits, *labels;
    } shapes[] = {{"6,5", "6"}, {"2,3,4", "2,3"}, {"50,13", "50"}, {"1,1", "1"}};
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_tensor in_t[3] = {pl_kc_tensor(shapes[s].logits, PL_F32, true),
                             pl_kc_tensor(shapes[s].labels, PL_I32, true),
                             pl_kc_tensor("", PL_F32, false)};
        int64_t c = in_t[0].dims[in_t[0].rank - 1], rows = pl_tensor_elements(&in_t[1]);
        float *logits = pl_kc_random(&in_t[0], 30 + s, -3, 3);
        int32_t *labels = pl_kc_random(&in_t[1], 40 + s, 0, (double)c);
        if (rows > 2) { /* ignored labels: they count as positions, add nothing */
            labels[1] = -1;
            labels[2] = (int32_t)c;
        }
        float dloss = 1.7f, want = (float)xent_ref(logits, labels, rows, c);
        void *in[] = {logits, labels, &dloss};
        pl_kc_check_op(&FNS_REDUCE(softmax_cross_entropy), PL_OP_SOFTMAX_CROSS_ENTROPY, &at, 2,
                       in_t, in, &want, 1e-3, NULL, "softmax_cross_entropy");

        pl_tensor out_t;
        float *got = pl_kc_run_fresh(&PL_KC_FNS(softmax_cross_entropy_grad),
                                     PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD, &at, 3, in_t, in, &out_t, 1,
                                     NULL);
        pl_kc_check_gradient(&FNS_REDUCE(softmax_cross_entropy), PL_OP_SOFTMAX_CROSS_ENTROPY, &at,
                             2, in_t, in, 0, got, &dloss, 1.0f, "softmax_cross_entropy");
        pl_kc_check_op(&PL_KC_FNS(softmax_cross_entropy_grad), PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD,
                       &at, 3, in_t, in, got, 1e-3, NULL, "softmax_cross_entropy_grad");
        if (rows > 2)
            for (int64_t k = 0; k < 2 * c; k++)
                CU_ASSERT_EQUAL(got[c + k], 0.0f);
        free(got);
        free(logits);
        free(labels);
    }
}

static void test_mse(void)
{
    static const char *const shapes[] = {"5,7", "3,5000", "1"};
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_tensor in_t[3] = {pl_kc_tensor(shapes[s], PL_F32, true),
                             pl_kc_tensor(shapes[s], PL_F32, true),
                             pl_kc_tensor("", PL_F32, false)};
        int64_t n = pl_tensor_elements(&in_t[0]);
        float *p = pl_kc_random(&in_t[0], 50 + s, -1, 1), *t = pl_kc_random(&in_t[1], 60 + s, -1, 1);
        double sum = 0;
        for (int64_t i = 0; i < n; i++)
            sum += ((double)p[i] - t[i]) * ((double)p[i] - t[i]);
        float dloss = 0.6f, want = (float)(sum / (double)n);
        void *in[] = {p, t, &dloss};
        pl_kc_check_op(&FNS_REDUCE(mse), PL_OP_MSE, &at, 2, in_t, in, &want, 1e-3, NULL, "mse");
        pl_tensor out_t;
        float *got = pl_kc_run_fresh(&PL_KC_FNS(mse_grad), PL_OP_MSE_GRAD, &at, 3, in_t, in, &out_t,
                                     1, NULL);
        pl_kc_check_op(&PL_KC_FNS(mse_grad), PL_OP_MSE_GRAD, &at, 3, in_t, in, got, 1e-3, NULL,
                       "mse_grad");
        if (n <= 100) {
            pl_kc_check_gradient(&FNS_REDUCE(mse), PL_OP_MSE, &at, 2, in_t, in, 0, got, &dloss,
                                 1.0f, "mse (prediction)");
            pl_kc_check_gradient(&FNS_REDUCE(mse), PL_OP_MSE, &at, 2, in_t, in, 1, got, &dloss,
                                 -1.0f, "mse (target, negated)");
        }
        free(got);
        free(p);
        free(t);
    }
}

/* ---- top-k gating ------------------------------------------------------------------------------ */

/* The k largest by repeated scans in double: softmax over them, zero elsewhere. */
static void topk_ref(const float *x, float *y, int64_t rows, int64_t e, int64_t k)
{
    bool *chosen = malloc((size_t)e);
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * e;
        memset(chosen, 0, (size_t)e);
        for (int64_t pick = 0; pick < k; pick++) {
            int64_t best = -1;
            for (int64_t i = 0; i < e; i++)
                if (!chosen[i] && (best < 0 || xr[i] > xr[best]))
                    best = i;
            chosen[best] = true;
        }
        double m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < e; i++)
            if (chosen[i])
                m = fmax(m, xr[i]);
        for (int64_t i = 0; i < e; i++)
            if (chosen[i])
                sum += exp(xr[i] - m);
        for (int64_t i = 0; i < e; i++)
            y[r * e + i] = chosen[i] ? (float)(exp(xr[i] - m) / sum) : 0.0f;
    }
    free(chosen);
}

static void test_topk_gate(void)
{
    static const struct {
        const char *shape;
        int64_t k;
    } cases[] = {{"5,8", 1}, {"5,8", 2}, {"2,3,6", 3}, {"4,5", 5}, {"3,1", 1}, {"40,16", 4}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        pl_attrs at = pl_kc_defaults();
        at.k = cases[c].k;
        pl_tensor t = pl_kc_tensor(cases[c].shape, PL_F32, true);
        int64_t n = pl_tensor_elements(&t), e = t.dims[t.rank - 1];
        float *x = pl_kc_random(&t, 70 + c, -2, 2), *want = pl_kc_floats(n);
        void *in[] = {x};
        topk_ref(x, want, n / e, e, at.k);
        pl_kc_check_op(&PL_KC_FNS(topk_gate), PL_OP_TOPK_GATE, &at, 1, &t, in, want, 1e-3, NULL,
                       "topk_gate");
        free(x);
        free(want);
    }
}

/* Ties go to the lower index; the others get exactly 0. */
static void test_topk_ties(void)
{
    pl_attrs at = pl_kc_defaults();
    at.k = 2;
    pl_tensor t = pl_kc_tensor("2,4", PL_F32, true), out_t;
    float x[] = {1, 3, 3, 3, 0, 0, 0, 0};
    void *in[] = {x};
    float *y = pl_kc_run_fresh(&PL_KC_FNS(topk_gate), PL_OP_TOPK_GATE, &at, 1, &t, in, &out_t, 2,
                               NULL);
    const float want[] = {0, 0.5f, 0.5f, 0, 0.5f, 0.5f, 0, 0};
    CU_ASSERT_EQUAL(memcmp(y, want, sizeof want), 0);
    free(y);
}

/* Its gradient is softmax_grad along the last axis on the gates (away from ties). */
static void test_topk_gradient(void)
{
    pl_attrs at = pl_kc_defaults();
    at.k = 3;
    pl_tensor t = pl_kc_tensor("4,7", PL_F32, true), out_t;
    float *x = pl_kc_random(&t, 80, -2, 2), *dy = pl_kc_random(&t, 81, -1, 1);
    void *in[] = {x};
    float *y = pl_kc_run_fresh(&PL_KC_FNS(topk_gate), PL_OP_TOPK_GATE, &at, 1, &t, in, &out_t, 1,
                               NULL);
    pl_tensor grad_t[2] = {t, t};
    void *grad_in[] = {dy, y};
    float *got = pl_kc_run_fresh(&PL_KC_FNS(softmax_grad), PL_OP_SOFTMAX_GRAD, &at, 2, grad_t,
                                 grad_in, &out_t, 1, NULL);
    pl_kc_check_gradient(&PL_KC_FNS(topk_gate), PL_OP_TOPK_GATE, &at, 1, &t, in, 0, got, dy, 1.0f,
                         "topk_gate");
    free(got);
    free(y);
    free(x);
    free(dy);
}

/* The test of the tests: a loss off by 1e-4 relative must fail the check. */
static void test_checks_catch_errors(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor in_t[2] = {pl_kc_tensor("6,5", PL_F32, true), pl_kc_tensor("6", PL_I32, true)};
    float *logits = pl_kc_random(&in_t[0], 90, -3, 3);
    int32_t *labels = pl_kc_random(&in_t[1], 91, 0, 5);
    void *in[] = {logits, labels};
    pl_tensor out_t;
    float *got = pl_kc_run_fresh(&FNS_REDUCE(softmax_cross_entropy), PL_OP_SOFTMAX_CROSS_ENTROPY,
                                 &at, 2, in_t, in, &out_t, 1, NULL);
    float want = (float)xent_ref(logits, labels, 6, 5);
    CU_ASSERT(pl_kc_max_rel_error(got, &want, 1, 1e-3) < 1e-5);
    want *= 1.0001f;
    CU_ASSERT(pl_kc_max_rel_error(got, &want, 1, 1e-3) > 1e-5);
    free(got);
    free(logits);
    free(labels);
}

void pl_register_kernels_softmax_tests(void)
{
    static const pl_test_case cases[] = {
        {"softmax and log_softmax", test_softmax},
        {"softmax gradients", test_softmax_gradients},
        {"softmax_cross_entropy", test_cross_entropy},
        {"mse", test_mse},
        {"topk_gate", test_topk_gate},
        {"topk_gate ties", test_topk_ties},
        {"topk_gate gradient", test_topk_gradient},
        {"checks catch errors", test_checks_catch_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-softmax", cases);
}
