/* Kernel tests: broadcasting arithmetic, activations, dropout, sum_to, broadcast_like and
 * the reductions against plain double-precision references, at 1, 3 and 7 threads (the
 * results bitwise equal), every gradient kernel against central differences of its
 * forward kernel, and the activations PyTorch importers map to against PyTorch's values,
 * at the kinks too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "kernel_check.h"
#include "rng.h"
#include "suites.h"
#include "test_util.h"

/* ---- add, sub, mul -------------------------------------------------------------------- */

static const struct {
    const char *a, *b;
} binary_shapes[] = {
    {"3,4", "3,4"},   {"2,3,5", "5"},   {"5", "2,3,5"},   {"2,3,5", ""},   {"", "4"},
    {"2,1,5", "3,1"}, {"4,1", "1,6"},   {"2,3,1,4", "3,2,1"}, {"7", "1"}, {"2", "2"},
    {"64,33", "33"},  {"1,1", "1"},
};

static double binary_ref(pl_op_kind kind, double a, double b)
{
    return kind == PL_OP_ADD   ? a + b
           : kind == PL_OP_SUB ? a - b
           : kind == PL_OP_MUL ? a * b
                               : a / b;
}

static void test_binary(void)
{
    static const struct {
        pl_op_kind kind;
        pl_kernel_fns fns;
        const char *name;
    } ops[] = {
        {PL_OP_ADD, {pl_kernel_add, NULL, NULL}, "add"},
        {PL_OP_SUB, {pl_kernel_sub, NULL, NULL}, "sub"},
        {PL_OP_MUL, {pl_kernel_mul, NULL, NULL}, "mul"},
        {PL_OP_DIV, {pl_kernel_div, NULL, NULL}, "div"},
    };
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof binary_shapes / sizeof *binary_shapes; s++) {
        pl_tensor in_t[2] = {pl_kc_tensor(binary_shapes[s].a, PL_F32, false),
                             pl_kc_tensor(binary_shapes[s].b, PL_F32, false)};
        /* b away from 0, for div; its sign varies */
        float *a = pl_kc_random(&in_t[0], 1, -1, 1), *b = pl_kc_random(&in_t[1], 2, 0.5, 1.5);
        for (int64_t i = 0; i < pl_tensor_elements(&in_t[1]); i += 2)
            b[i] = -b[i];
        void *in[] = {a, b};
        pl_tensor out_t;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_ADD, &at, 2, in_t, 1, &out_t));
        int64_t n = pl_tensor_elements(&out_t);
        float *want = pl_kc_floats(n);
        for (size_t o = 0; o < sizeof ops / sizeof *ops; o++) {
            for (int64_t i = 0; i < n; i++)
                want[i] = (float)binary_ref(ops[o].kind,
                                            a[pl_kc_broadcast_index(&out_t, &in_t[0], i)],
                                            b[pl_kc_broadcast_index(&out_t, &in_t[1], i)]);
            char what[96];
            snprintf(what, sizeof what, "%s [%s] [%s]", ops[o].name, binary_shapes[s].a,
                     binary_shapes[s].b);
            pl_kc_check_op(&ops[o].fns, ops[o].kind, &at, 2, in_t, in, want, 1e-3, NULL, what);
        }
        free(want);
        free(a);
        free(b);
    }
}

/* ---- activations and their gradients ----------------------------------------------------- */

static double gelu_ref(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double sigmoid_ref(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double relu_ref(double x)
{
    return x > 0 ? x : 0;
}

static double scale_ref(double x)
{
    return -2.5 * x;
}

static double gelu_exact_ref(double x)
{
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

/* clamp with the bounds clamp_attrs sets */
static double clamp_ref(double x)
{
    return fmin(fmax(x, -1.0), 2.0);
}

static double hardsigmoid_ref(double x)
{
    return fmin(fmax(x / 6.0 + 0.5, 0.0), 1.0);
}

static double hardswish_ref(double x)
{
    return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
}

static double silu_ref(double x)
{
    return x / (1.0 + exp(-x));
}

static void gelu_exact_attrs(pl_attrs *at)
{
    at->approximate = PL_GELU_EXACT;
}

static double rsqrt_ref(double x)
{
    return 1.0 / sqrt(x);
}

static double pow_1_5_ref(double x)
{
    return pow(x, 1.5);
}

static double pow_3_ref(double x)
{
    return x * x * x;
}

static void pow_1_5_attrs(pl_attrs *at)
{
    at->exponent = 1.5;
}

static void pow_3_attrs(pl_attrs *at)
{
    at->exponent = 3;
}

static void clamp_attrs(pl_attrs *at)
{
    at->given |= PL_ATTR_BIT(PL_ATTR_MIN) | PL_ATTR_BIT(PL_ATTR_MAX);
    at->clamp_min = -1.0;
    at->clamp_max = 2.0;
}

typedef struct activation {
    pl_op_kind kind, grad_kind;
    pl_kernel_fns fns, grad_fns;
    double (*ref)(double);
    bool grad_takes_y; /* the gradient reads the forward output, not its input */
    const char *name;
    void (*set_attrs)(pl_attrs *at); /* NULL: the defaults */
} activation;

static const activation activations[] = {
    {PL_OP_RELU, PL_OP_RELU_GRAD, {pl_kernel_relu, NULL, NULL},
     {pl_kernel_relu_grad, NULL, NULL}, relu_ref, true, "relu", NULL},
    {PL_OP_GELU, PL_OP_GELU_GRAD, {pl_kernel_gelu, NULL, NULL},
     {pl_kernel_gelu_grad, NULL, NULL}, gelu_ref, false, "gelu", NULL},
    {PL_OP_GELU, PL_OP_GELU_GRAD, {pl_kernel_gelu, NULL, NULL},
     {pl_kernel_gelu_grad, NULL, NULL}, gelu_exact_ref, false, "gelu exact", gelu_exact_attrs},
    {PL_OP_TANH, PL_OP_TANH_GRAD, {pl_kernel_tanh, NULL, NULL},
     {pl_kernel_tanh_grad, NULL, NULL}, tanh, true, "tanh", NULL},
    {PL_OP_SIGMOID, PL_OP_SIGMOID_GRAD, {pl_kernel_sigmoid, NULL, NULL},
     {pl_kernel_sigmoid_grad, NULL, NULL}, sigmoid_ref, true, "sigmoid", NULL},
    {PL_OP_CLAMP, PL_OP_CLAMP_GRAD, {pl_kernel_clamp, NULL, NULL},
     {pl_kernel_clamp_grad, NULL, NULL}, clamp_ref, false, "clamp", clamp_attrs},
    {PL_OP_HARDSIGMOID, PL_OP_HARDSIGMOID_GRAD, {pl_kernel_hardsigmoid, NULL, NULL},
     {pl_kernel_hardsigmoid_grad, NULL, NULL}, hardsigmoid_ref, false, "hardsigmoid", NULL},
    {PL_OP_HARDSWISH, PL_OP_HARDSWISH_GRAD, {pl_kernel_hardswish, NULL, NULL},
     {pl_kernel_hardswish_grad, NULL, NULL}, hardswish_ref, false, "hardswish", NULL},
    {PL_OP_ERF, PL_OP_ERF_GRAD, {pl_kernel_erf, NULL, NULL},
     {pl_kernel_erf_grad, NULL, NULL}, erf, false, "erf", NULL},
    /* exp's and log's gradients are products and quotients: dy * y, dy / x */
    {PL_OP_EXP, PL_OP_MUL, {pl_kernel_exp, NULL, NULL}, {pl_kernel_mul, NULL, NULL}, exp,
     true, "exp", NULL},
    {PL_OP_LOG, PL_OP_DIV, {pl_kernel_log, NULL, NULL}, {pl_kernel_div, NULL, NULL}, log,
     false, "log", NULL},
    {PL_OP_SQRT, PL_OP_SQRT_GRAD, {pl_kernel_sqrt, NULL, NULL},
     {pl_kernel_sqrt_grad, NULL, NULL}, sqrt, true, "sqrt", NULL},
    {PL_OP_RSQRT, PL_OP_RSQRT_GRAD, {pl_kernel_rsqrt, NULL, NULL},
     {pl_kernel_rsqrt_grad, NULL, NULL}, rsqrt_ref, true, "rsqrt", NULL},
    {PL_OP_ABS, PL_OP_ABS_GRAD, {pl_kernel_abs, NULL, NULL}, {pl_kernel_abs_grad, NULL, NULL},
     fabs, false, "abs", NULL},
    {PL_OP_POW, PL_OP_POW_GRAD, {pl_kernel_pow, NULL, NULL}, {pl_kernel_pow_grad, NULL, NULL},
     pow_1_5_ref, false, "pow 1.5", pow_1_5_attrs},
    {PL_OP_POW, PL_OP_POW_GRAD, {pl_kernel_pow, NULL, NULL}, {pl_kernel_pow_grad, NULL, NULL},
     pow_3_ref, false, "pow 3", pow_3_attrs},
    {PL_OP_SILU, PL_OP_SILU_GRAD, {pl_kernel_silu, NULL, NULL},
     {pl_kernel_silu_grad, NULL, NULL}, silu_ref, false, "silu", NULL},
};

static pl_attrs activation_attrs(const activation *act)
{
    pl_attrs at = pl_kc_defaults();
    if (act->set_attrs)
        act->set_attrs(&at);
    return at;
}

/* log, sqrt, rsqrt and a power of a non-integer exponent are real for x >= 0 only. */
static bool positive_only(const activation *act)
{
    pl_attrs at = activation_attrs(act);
    return act->kind == PL_OP_LOG || act->kind == PL_OP_SQRT || act->kind == PL_OP_RSQRT ||
           (act->kind == PL_OP_POW && at.exponent != floor(at.exponent));
}

/* Values in [-4,4] kept 0.05 away from the kinks: relu's and abs's at 0, clamp's at its
 * bounds -1 and 2, the hard activations' at -3 and 3; in [0.5, 4.5] for those defined on
 * positive numbers only. */
static float *activation_input(const activation *act, const pl_tensor *t, uint64_t seed)
{
    static const float kinks[] = {-3, -1, 0, 2, 3};
    if (positive_only(act))
        return pl_kc_random(t, seed, 0.5, 4.5);
    float *x = pl_kc_random(t, seed, -4, 4);
    for (int64_t i = 0; i < pl_tensor_elements(t); i++)
        for (size_t k = 0; k < sizeof kinks / sizeof *kinks; k++) {
            float d = x[i] - kinks[k];
            if (fabsf(d) < 0.05f)
                x[i] = kinks[k] + (d < 0 ? -0.05f + d : 0.05f + d);
        }
    return x;
}

static void test_activations(void)
{
    static const char *const shapes[] = {"2", "3,7", "5,41"};
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_tensor t = pl_kc_tensor(shapes[s], PL_F32, false);
        int64_t n = pl_tensor_elements(&t);
        float *want = pl_kc_floats(n);
        for (size_t k = 0; k < sizeof activations / sizeof *activations; k++) {
            const activation *act = &activations[k];
            pl_attrs act_at = activation_attrs(act);
            float *act_x = activation_input(act, &t, 3 + s);
            void *act_in[] = {act_x};
            for (int64_t i = 0; i < n; i++)
                want[i] = (float)act->ref(act_x[i]);
            pl_kc_check_op(&act->fns, act->kind, &act_at, 1, &t, act_in, want, 1e-3, NULL,
                           act->name);
            free(act_x);
        }
        float *x = activation_input(&activations[0], &t, 3 + s);
        void *in[] = {x};
        pl_attrs scale_at = pl_kc_defaults();
        scale_at.factor = -2.5;
        for (int64_t i = 0; i < n; i++)
            want[i] = (float)scale_ref(x[i]);
        pl_kc_check_op(&PL_KC_FNS(scale), PL_OP_SCALE, &scale_at, 1, &t, in, want, 1e-3, NULL,
                       "scale");
        free(x);
        free(want);
    }
    /* sigmoid saturates without overflow or NaN */
    pl_tensor t = pl_kc_tensor("4", PL_F32, false);
    float x[] = {-200, -90, 90, 200};
    void *in[] = {x};
    pl_tensor out_t;
    float *y = pl_kc_run_fresh(&PL_KC_FNS(sigmoid), PL_OP_SIGMOID, &at, 1, &t, in, &out_t, 1, NULL);
    CU_ASSERT(y[0] == 0.0f && y[1] >= 0.0f && y[1] < 1e-30f && y[2] == 1.0f && y[3] == 1.0f);
    free(y);
}

static void test_activation_gradients(void)
{
    pl_tensor t = pl_kc_tensor("5,9", PL_F32, false);
    for (size_t k = 0; k < sizeof activations / sizeof *activations; k++) {
        const activation *act = &activations[k];
        pl_attrs at = activation_attrs(act);
        float *x = activation_input(act, &t, 20 + k), *dy = pl_kc_random(&t, 30 + k, -1, 1);
        void *fwd_in[] = {x};
        pl_tensor out_t;
        float *y = pl_kc_run_fresh(&act->fns, act->kind, &at, 1, &t, fwd_in, &out_t, 1, NULL);
        pl_tensor grad_t[2] = {t, t};
        void *grad_in[] = {dy, act->grad_takes_y ? y : x};
        float *got = pl_kc_run_fresh(&act->grad_fns, act->grad_kind, &at, 2, grad_t, grad_in,
                                     &out_t, 1, NULL);
        pl_kc_check_gradient(&act->fns, act->kind, &at, 1, &t, fwd_in, 0, got, dy, 1.0f, act->name);
        pl_kc_check_op(&act->grad_fns, act->grad_kind, &at, 2, grad_t, grad_in, got, 1e-3, NULL,
                       act->name);
        free(got);
        free(y);
        free(x);
        free(dy);
    }
}

/* Values and gradients (dy = 1) that PyTorch gives, at the kinks too: hardswish_backward,
 * hardsigmoid_backward and hardtanh_backward (relu6, clamp's strict rule), and exact gelu
 * and erf from torch in float64. */
static void expect_values(const activation *act, const pl_attrs *at, const float *x,
                          const double *want_y, const double *want_dx, int n)
{
    pl_tensor t = pl_kc_tensor("7", PL_F32, false), out_t;
    t.dims[0] = n;
    float ones[7] = {1, 1, 1, 1, 1, 1, 1};
    void *in[] = {(void *)x};
    float *y = pl_kc_run_fresh(&act->fns, act->kind, at, 1, &t, in, &out_t, 1, NULL);
    pl_tensor grad_t[2] = {t, t};
    void *grad_in[] = {ones, (void *)x};
    float *dx = pl_kc_run_fresh(&act->grad_fns, act->grad_kind, at, 2, grad_t, grad_in, &out_t,
                                1, NULL);
    for (int i = 0; i < n; i++) {
        bool same = fabs(y[i] - want_y[i]) <= 1e-6 * fabs(want_y[i]) + 1e-7 &&
                    fabs(dx[i] - want_dx[i]) <= 1e-5 * fabs(want_dx[i]) + 1e-7;
        if (!same)
            fprintf(stderr, "\n    %s(%g) = %.9g, gradient %.9g; PyTorch: %.9g, %.9g\n",
                    act->name, x[i], y[i], dx[i], want_y[i], want_dx[i]);
        CU_ASSERT_TRUE(same);
    }
    free(y);
    free(dx);
}

static const activation *activation_named(const char *name)
{
    for (size_t k = 0; k < sizeof activations / sizeof *activations; k++)
        if (strcmp(activations[k].name, name) == 0)
            return &activations[k];
    CU_FAIL_FATAL("no such activation");
    return NULL;
}

static void test_pytorch_values(void)
{
    static const float kinks[] = {-3, -1, 0, 1, 3, 6};
    pl_attrs at = pl_kc_defaults();
    expect_values(activation_named("hardswish"), &at, kinks,
                  (const double[]){0, -1.0 / 3, 0, 2.0 / 3, 3, 6},
                  (const double[]){-0.5, 1.0 / 6, 0.5, 5.0 / 6, 1.5, 1}, 6);
    expect_values(activation_named("hardsigmoid"), &at, kinks,
                  (const double[]){0, 1.0 / 3, 0.5, 2.0 / 3, 1, 1},
                  (const double[]){0, 1.0 / 6, 1.0 / 6, 1.0 / 6, 0, 0}, 6);
    pl_attrs relu6 = pl_kc_defaults(); /* hardtanh(-1, 3) */
    relu6.given = PL_ATTR_BIT(PL_ATTR_MIN) | PL_ATTR_BIT(PL_ATTR_MAX);
    relu6.clamp_min = -1;
    relu6.clamp_max = 3;
    expect_values(activation_named("clamp"), &relu6, kinks,
                  (const double[]){-1, -1, 0, 1, 3, 3}, (const double[]){0, 0, 1, 1, 0, 0}, 6);
    pl_attrs low_only = pl_kc_defaults(); /* min 0 alone: unbounded above */
    low_only.given = PL_ATTR_BIT(PL_ATTR_MIN);
    low_only.clamp_min = 0;
    expect_values(activation_named("clamp"), &low_only, kinks,
                  (const double[]){0, 0, 0, 1, 3, 6}, (const double[]){0, 0, 0, 1, 1, 1}, 6);
    static const float smooth[] = {-5, -3, -1, -0.5f, 0.5f, 1, 3};
    pl_attrs exact = pl_kc_defaults();
    exact.approximate = PL_GELU_EXACT;
    expect_values(activation_named("gelu exact"), &exact, smooth,
                  (const double[]){-1.433257859e-06, -0.004049694095, -0.1586552539,
                                   -0.1542687694, 0.3457312306, 0.8413447461, 2.995950306},
                  (const double[]){-7.146946002e-06, -0.0119456472, -0.08331547059,
                                   0.1325048753, 0.8674951247, 1.083315471, 1.011945647},
                  7);
    expect_values(activation_named("erf"), &at, smooth,
                  (const double[]){-1, -0.9999779095, -0.8427007929, -0.5204998778,
                                   0.5204998778, 0.8427007929, 0.9999779095},
                  (const double[]){1.567086653e-11, 0.0001392530519, 0.4151074974,
                                   0.8787825789, 0.8787825789, 0.4151074974, 0.0001392530519},
                  7);
}

/* Outside their domains exp, log, sqrt, rsqrt and pow give IEEE's values, as PyTorch:
 * NaN below 0, infinities at the poles and on overflow, exp through the subnormals to 0. */
static void expect_ieee(const activation *act, const pl_attrs *at, const float *x,
                        const float *want, int n)
{
    pl_tensor t = pl_kc_tensor("8", PL_F32, false), out_t;
    t.dims[0] = n;
    void *in[] = {(void *)x};
    float *y = pl_kc_run_fresh(&act->fns, act->kind, at, 1, &t, in, &out_t, 1, NULL);
    for (int i = 0; i < n; i++) {
        bool same = isnan(want[i]) ? isnan(y[i])
                    : isinf(want[i]) ? y[i] == want[i]
                                     : fabsf(y[i] - want[i]) <= 1e-6f * fabsf(want[i]) + 1e-44f;
        if (!same)
            fprintf(stderr, "\n    %s(%g) = %.9g, want %.9g\n", act->name, x[i], y[i], want[i]);
        CU_ASSERT_TRUE(same);
    }
    free(y);
}

static void test_math_domains(void)
{
    pl_attrs at = pl_kc_defaults();
    expect_ieee(activation_named("exp"), &at,
                (const float[]){-200, -100, -1, 0, 1, 88, 89, NAN},
                (const float[]){0, 3.72007598e-44f, 0.367879441f, 1, 2.71828183f,
                                1.65163625e38f, INFINITY, NAN},
                8);
    expect_ieee(activation_named("log"), &at, (const float[]){-1, 0, 1e-45f, 1, 10, INFINITY},
                (const float[]){NAN, -INFINITY, -103.278931f, 0, 2.30258509f, INFINITY}, 6);
    expect_ieee(activation_named("sqrt"), &at, (const float[]){-1, 0, 4, INFINITY},
                (const float[]){NAN, 0, 2, INFINITY}, 4);
    expect_ieee(activation_named("rsqrt"), &at, (const float[]){-1, 0, 4, INFINITY},
                (const float[]){NAN, INFINITY, 0.5f, 0}, 4);
    expect_ieee(activation_named("abs"), &at, (const float[]){-INFINITY, -2, 0, NAN},
                (const float[]){INFINITY, 2, 0, NAN}, 4);
    pl_attrs half = pl_kc_defaults(), inverse = pl_kc_defaults();
    half.exponent = 0.5;
    inverse.exponent = -1;
    expect_ieee(activation_named("pow 1.5"), &half, (const float[]){-1, 0, 4},
                (const float[]){NAN, 0, 2}, 3);
    expect_ieee(activation_named("pow 1.5"), &inverse, (const float[]){-2, 0, 4},
                (const float[]){-0.5f, INFINITY, 0.25f}, 3);
}

/* ---- dropout ------------------------------------------------------------------------------ */

static void dropout_ref(const float *x, float *y, int64_t n, double rate, int64_t seed,
                        const pl_step_info *step)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = pl_rng_keep((uint64_t)seed, step->step, step->micro_batch * n + i, (float)rate)
                   ? (float)(x[i] / (1.0 - rate))
                   : 0.0f;
}

/* dropout on each half of x (of shape t) as micro-batches 0 and 1 of the step gives the
 * whole step's result, `whole`. */
static void check_micro_batch_halves(const pl_attrs *at, const pl_step_info *step,
                                     const pl_tensor *t, const float *x, const float *whole)
{
    int64_t n = pl_tensor_elements(t);
    pl_tensor half = *t, out_t;
    half.dims[0] /= 2;
    for (int mb = 0; mb < 2; mb++) {
        pl_step_info part = *step;
        part.micro_batch = mb;
        part.micro_batches = 2;
        void *half_in[] = {(void *)(x + mb * n / 2)};
        float *y = pl_kc_run_fresh(&PL_KC_FNS(dropout), PL_OP_DROPOUT, at, 1, &half, half_in,
                                   &out_t, 3, &part);
        CU_ASSERT_EQUAL(memcmp(y, whole + mb * n / 2, (size_t)n / 2 * sizeof *y), 0);
        free(y);
    }
}

static void test_dropout(void)
{
    pl_attrs at = pl_kc_defaults();
    at.rate = 0.3;
    at.seed = 77;
    pl_step_info step = {.step = 5, .micro_batch = 0, .micro_batches = 1, .training = true};
    pl_tensor t = pl_kc_tensor("40,50", PL_F32, true);
    int64_t n = pl_tensor_elements(&t);
    float *x = pl_kc_random(&t, 4, 0.5, 1.5), *want = pl_kc_floats(n);
    void *in[] = {x};
    dropout_ref(x, want, n, at.rate, at.seed, &step);
    pl_kc_check_op(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, want, 1e-3, &step,
                   "dropout");
    pl_kc_check_op(&PL_KC_FNS(dropout_grad), PL_OP_DROPOUT_GRAD, &at, 1, &t, in, want, 1e-3, &step,
                   "dropout_grad");
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; i++)
        dropped += want[i] == 0.0f;
    CU_ASSERT(dropped > n * 0.25 && dropped < n * 0.35);

    /* another step draws another mask */
    pl_step_info next = step;
    next.step = 6;
    pl_tensor out_t;
    float *y6 = pl_kc_run_fresh(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, &out_t, 2,
                                &next);
    CU_ASSERT_NOT_EQUAL(memcmp(y6, want, (size_t)n * sizeof *y6), 0);
    free(y6);

    /* two micro-batches of 20 rows draw the whole step's mask */
    float *whole = pl_kc_run_fresh(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, &out_t, 1,
                                   &step);
    check_micro_batch_halves(&at, &step, &t, x, whole);
    free(whole);

    /* evaluation passes x through */
    pl_step_info eval = step;
    eval.training = false;
    pl_kc_check_op(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, x, 1e-3, &eval,
                   "dropout (evaluation)");
    free(x);
    free(want);
}

/* In every mode: one decision per element, per sample and per step. */
static void test_dropout_gradient(void)
{
    pl_attrs at = pl_kc_defaults();
    at.rate = 0.5;
    at.seed = 3;
    pl_tensor t = pl_kc_tensor("6,7", PL_F32, true);
    float *x = pl_kc_random(&t, 5, -1, 1), *dy = pl_kc_random(&t, 6, -1, 1);
    void *in[] = {x}, *grad_in[] = {dy};
    for (int mode = PL_DROPOUT_ELEMENT; mode <= PL_DROPOUT_BATCH; mode++) {
        at.mode = mode;
        pl_tensor out_t;
        float *got = pl_kc_run_fresh(&PL_KC_FNS(dropout_grad), PL_OP_DROPOUT_GRAD, &at, 1, &t,
                                     grad_in, &out_t, 1, NULL);
        pl_kc_check_gradient(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, 0, got, dy,
                             1.0f, "dropout");
        free(got);
    }
    free(x);
    free(dy);
}

/* Modes row and batch (stochastic depth): one decision per row of the whole step's batch
 * axis (a sample, or one of its rows where the batch is merged with other axes), or one per
 * step. */
static void shared_dropout_ref(const float *x, float *y, const pl_tensor *t, const pl_attrs *at,
                               const pl_step_info *step)
{
    pl_batch_layout l = pl_tensor_batch_layout(t);
    int64_t n = pl_tensor_elements(t), rows = l.batch * l.group, row_size = l.inner / l.group;
    for (int64_t i = 0; i < n; i++) {
        int64_t counter = at->mode == PL_DROPOUT_BATCH
                              ? 0
                              : step->micro_batch * rows + i / row_size % rows;
        y[i] = pl_rng_keep((uint64_t)at->seed, step->step, counter, (float)at->rate)
                   ? x[i] * (float)(1.0 / (1.0 - at->rate)) /* the kernel's rounding */
                   : 0.0f;
    }
}

/* Samples (rows of 15 values) dropped whole, about `rate` of them. */
static int64_t dropped_rows(const float *y, int64_t rows, int64_t per_row)
{
    int64_t dropped = 0;
    for (int64_t r = 0; r < rows; r++) {
        int64_t zeros = 0;
        for (int64_t j = 0; j < per_row; j++)
            zeros += y[r * per_row + j] == 0.0f;
        CU_ASSERT(zeros == 0 || zeros == per_row);
        dropped += zeros == per_row;
    }
    return dropped;
}

/* 40 rows of the batch axis: 40 samples, or 10 of 4 rows each (`group`). */
static void check_dropout_shared_masks(int group)
{
    pl_attrs at = pl_kc_defaults();
    at.rate = 0.3;
    at.seed = 12;
    pl_tensor t = pl_kc_tensor("40,3,5", PL_F32, true);
    t.batch_group = group;
    int64_t n = pl_tensor_elements(&t), rows_dropped = 0, steps_dropped = 0;
    float *x = pl_kc_random(&t, 8, 0.5, 1.5), *want = pl_kc_floats(n);
    void *in[] = {x};
    for (int mode = PL_DROPOUT_ROW; mode <= PL_DROPOUT_BATCH; mode++)
        for (int64_t s = 1; s <= 20; s++) {
            at.mode = mode;
            pl_step_info step = {.step = s, .micro_batches = 1, .training = true};
            shared_dropout_ref(x, want, &t, &at, &step);
            if (s <= 2) { /* threads, and the gradient redraws the mask */
                pl_kc_check_op(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &t, in, want, 1e-3,
                               &step, "dropout (shared mask)");
                pl_kc_check_op(&PL_KC_FNS(dropout_grad), PL_OP_DROPOUT_GRAD, &at, 1, &t, in,
                               want, 1e-3, &step, "dropout_grad (shared mask)");
            }
            int64_t dropped = dropped_rows(want, 40, 15);
            if (mode == PL_DROPOUT_ROW)
                rows_dropped += dropped;
            else {
                CU_ASSERT(dropped == 0 || dropped == 40);
                steps_dropped += dropped == 40;
            }
            /* two micro-batches of 20 samples draw the whole step's mask */
            check_micro_batch_halves(&at, &step, &t, x, want);
        }
    CU_ASSERT(rows_dropped > 800 * 0.25 && rows_dropped < 800 * 0.35);
    CU_ASSERT(steps_dropped >= 2 && steps_dropped <= 12);

    /* the batch on axis 1: a sample's elements lie in three runs, one per outer index */
    pl_tensor moved = pl_kc_tensor("3,40,5", PL_F32, true);
    moved.batch_axis = 1;
    at.mode = PL_DROPOUT_ROW;
    pl_step_info step = {.step = 4, .micro_batches = 1, .training = true};
    shared_dropout_ref(x, want, &moved, &at, &step);
    pl_kc_check_op(&PL_KC_FNS(dropout), PL_OP_DROPOUT, &at, 1, &moved, in, want, 1e-3, &step,
                   "dropout (shared mask, the batch on axis 1)");
    free(x);
    free(want);
}

static void test_dropout_shared_masks(void)
{
    check_dropout_shared_masks(1);
    check_dropout_shared_masks(4);
}

/* ---- where, comparisons, logical_not -------------------------------------------------------- */

/* A mask of 0 and other values (1, and -2.5: any nonzero selects). */
static float *mask_random(const pl_tensor *t, uint64_t seed)
{
    float *m = pl_kc_random(t, seed, 0, 1);
    for (int64_t i = 0; i < pl_tensor_elements(t); i++)
        m[i] = m[i] < 0.5f ? 0.0f : m[i] < 0.8f ? 1.0f : -2.5f;
    return m;
}

static void test_where(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor in_t[3] = {pl_kc_tensor("1,4,5", PL_F32, false), pl_kc_tensor("3,4,5", PL_F32, true),
                         pl_kc_tensor("5", PL_F32, false)};
    pl_tensor out_t;
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_WHERE, &at, 3, in_t, 1, &out_t));
    CU_ASSERT(out_t.rank == 3 && out_t.dims[0] == 3 && out_t.batch_axis == 0);
    float *cond = mask_random(&in_t[0], 1), *a = pl_kc_random(&in_t[1], 2, -1, 1),
          *b = pl_kc_random(&in_t[2], 3, -1, 1);
    void *in[] = {cond, a, b};
    int64_t n = pl_tensor_elements(&out_t);
    float *want = pl_kc_floats(n);
    for (int64_t i = 0; i < n; i++)
        want[i] = cond[pl_kc_broadcast_index(&out_t, &in_t[0], i)] != 0.0f
                      ? a[pl_kc_broadcast_index(&out_t, &in_t[1], i)]
                      : b[pl_kc_broadcast_index(&out_t, &in_t[2], i)];
    pl_kc_check_op(&PL_KC_FNS(where), PL_OP_WHERE, &at, 3, in_t, in, want, 1e-3, NULL, "where");
    free(cond);
    free(a);
    free(b);
    free(want);
}

/* where_grad's two outputs against central differences of where in a and in b. */
static void test_where_gradient(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor in_t[3] = {pl_kc_tensor("4,5", PL_F32, false), pl_kc_tensor("3,4,5", PL_F32, true),
                         pl_kc_tensor("3,4,5", PL_F32, true)};
    float *cond = mask_random(&in_t[0], 4), *a = pl_kc_random(&in_t[1], 5, -1, 1),
          *b = pl_kc_random(&in_t[2], 6, -1, 1), *dy = pl_kc_random(&in_t[1], 7, -1, 1);
    void *in[] = {cond, a, b}, *grad_in[] = {dy, cond};
    pl_tensor grad_in_t[2] = {in_t[1], in_t[0]}, grad_out_t[2];
    float *split[2];
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_WHERE_GRAD, &at, 2, grad_in_t, 2, grad_out_t));
    pl_kc_run_all_threads(&PL_KC_FNS(where_grad), PL_OP_WHERE_GRAD, &at, 2, grad_in_t, grad_in,
                          2, grad_out_t, split, "where_grad");
    pl_kc_check_gradient(&PL_KC_FNS(where), PL_OP_WHERE, &at, 3, in_t, in, 1, split[0], dy, 1.0f,
                         "where (a)");
    pl_kc_check_gradient(&PL_KC_FNS(where), PL_OP_WHERE, &at, 3, in_t, in, 2, split[1], dy, 1.0f,
                         "where (b)");
    for (int k = 0; k < 2; k++)
        free(split[k]);
    free(cond);
    free(a);
    free(b);
    free(dy);
}

static float compare_ref(pl_op_kind kind, float a, float b)
{
    switch (kind) {
    case PL_OP_EQUAL:
        return a == b;
    case PL_OP_NOT_EQUAL:
        return a != b;
    case PL_OP_LESS:
        return a < b;
    case PL_OP_LESS_EQUAL:
        return a <= b;
    case PL_OP_GREATER:
        return a > b;
    default:
        return a >= b;
    }
}

/* Every comparison on small integers (ties), broadcast; then logical_not. */
static void test_comparisons(void)
{
    static const pl_kernel_fns fns[] = {PL_KC_FNS(equal), PL_KC_FNS(not_equal), PL_KC_FNS(less),
                                        PL_KC_FNS(less_equal), PL_KC_FNS(greater),
                                        PL_KC_FNS(greater_equal)};
    pl_attrs at = pl_kc_defaults();
    pl_tensor in_t[2] = {pl_kc_tensor("6,3,4", PL_F32, true), pl_kc_tensor("3,1", PL_F32, false)};
    float *a = pl_kc_random(&in_t[0], 8, 0, 3), *b = pl_kc_random(&in_t[1], 9, 0, 3);
    int64_t n = pl_tensor_elements(&in_t[0]), ones = 0;
    for (int64_t i = 0; i < n; i++)
        a[i] = floorf(a[i]);
    for (int64_t i = 0; i < 3; i++)
        b[i] = floorf(b[i]);
    void *in[] = {a, b};
    float *want = pl_kc_floats(n);
    for (int k = 0; k < 6; k++) {
        pl_op_kind kind = (pl_op_kind)(PL_OP_EQUAL + k);
        for (int64_t i = 0; i < n; i++) {
            want[i] = compare_ref(kind, a[i], b[pl_kc_broadcast_index(&in_t[0], &in_t[1], i)]);
            ones += want[i] == 1.0f;
        }
        pl_kc_check_op(&fns[k], kind, &at, 2, in_t, in, want, 1e-3, NULL,
                       pl_op_info_of(kind)->name);
    }
    CU_ASSERT(ones > 0 && ones < 6 * n);
    float *mask = mask_random(&in_t[0], 10);
    void *mask_in[] = {mask};
    for (int64_t i = 0; i < n; i++)
        want[i] = mask[i] == 0.0f ? 1.0f : 0.0f;
    pl_kc_check_op(&PL_KC_FNS(logical_not), PL_OP_LOGICAL_NOT, &at, 1, in_t, mask_in, want, 1e-3,
                   NULL, "logical_not");
    free(mask);
    free(a);
    free(b);
    free(want);
}

static void test_zeros_like(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor t = pl_kc_tensor("3,5", PL_F32, false);
    float *x = pl_kc_random(&t, 7, -1, 1), want[15] = {0};
    void *in[] = {x};
    pl_kc_check_op(&PL_KC_FNS(zeros_like), PL_OP_ZEROS_LIKE, &at, 1, &t, in, want, 1e-3, NULL,
                   "zeros_like");
    free(x);
}

/* ---- reductions and broadcasts ---------------------------------------------------------- */

/* want[map(i)] += x[i] over x, where map sends x's element i to the output element of the
 * kept axes (reduced[a] false), then times scale. */
static void reduce_ref(const pl_tensor *x_t, const float *x, const bool *reduced, double scale,
                       float *want, int64_t n_out)
{
    double *acc = calloc((size_t)n_out, sizeof *acc);
    int64_t n = pl_tensor_elements(x_t);
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, index = 0, mul = 1;
        for (int a = x_t->rank - 1; a >= 0; a--) {
            int64_t coord = rest % x_t->dims[a];
            rest /= x_t->dims[a];
            if (!reduced[a]) {
                index += coord * mul;
                mul *= x_t->dims[a];
            }
        }
        acc[index] += x[i];
    }
    for (int64_t o = 0; o < n_out; o++)
        want[o] = (float)(acc[o] * scale);
    free(acc);
}

static const struct {
    const char *x, *like;
} sum_to_shapes[] = {
    {"2,3,4", "4"}, {"2,3,4", "3,1"}, {"2,3,4", "2,1,4"}, {"2,3,4", "1"}, {"2,3,4", ""},
    {"5,6", "5,6"}, {"64,33", "33"}, {"3,40,2", "40,1"}, {"2,3,5,4", "3,1,4"},
    {"2,1,4", "1,4"},
};

static void test_sum_to(void)
{
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof sum_to_shapes / sizeof *sum_to_shapes; s++) {
        pl_tensor in_t[2] = {pl_kc_tensor(sum_to_shapes[s].x, PL_F32, false),
                             pl_kc_tensor(sum_to_shapes[s].like, PL_F32, false)};
        float *x = pl_kc_random(&in_t[0], 8, -1, 1), *like = pl_kc_random(&in_t[1], 9, -1, 1);
        int64_t n_out = pl_tensor_elements(&in_t[1]);
        bool reduced[PL_MAX_RANK];
        int offset = in_t[0].rank - in_t[1].rank;
        for (int a = 0; a < in_t[0].rank; a++)
            reduced[a] = a < offset || in_t[1].dims[a - offset] == 1;
        float *want = pl_kc_floats(n_out);
        reduce_ref(&in_t[0], x, reduced, 1.0, want, n_out);
        void *in[] = {x, like};
        char what[64];
        snprintf(what, sizeof what, "sum_to [%s] -> [%s]", sum_to_shapes[s].x,
                 sum_to_shapes[s].like);
        pl_kc_check_op(&PL_KC_FNS(sum_to), PL_OP_SUM_TO, &at, 2, in_t, in, want, 1e-3, NULL, what);

        /* sum_to is the gradient of broadcasting `like` against x in add */
        pl_tensor add_t[2] = {in_t[0], in_t[1]};
        void *add_in[] = {x, like};
        float *dy = pl_kc_random(&in_t[0], 10, -1, 1);
        void *grad_in[] = {dy, like};
        pl_tensor out_t;
        float *got = pl_kc_run_fresh(&PL_KC_FNS(sum_to), PL_OP_SUM_TO, &at, 2, in_t, grad_in,
                                     &out_t, 1, NULL);
        pl_kc_check_gradient(&PL_KC_FNS(add), PL_OP_ADD, &at, 2, add_t, add_in, 1, got, dy, 1.0f,
                             what);
        free(got);
        free(dy);
        free(want);
        free(x);
        free(like);
    }
}

static const struct {
    const char *x;
    int n;
    int64_t axes[3];
    bool keepdims;
} reduce_cases[] = {
    {"2,3,4", 1, {1}, false},     {"2,3,4", 1, {-1}, true},     {"2,3,4", 2, {1, 2}, false},
    {"2,3,4", 2, {0, 2}, true},   {"2,3,4", 3, {0, 1, 2}, false}, {"4,5,6,3", 2, {1, 3}, false},
    {"4,5,6,3", 1, {2}, true},    {"3,1,5", 1, {1}, false},     {"40,50", 1, {1}, false},
    {"40,50", 1, {0}, false},     {"7", 1, {0}, true},
};

static void reduce_attrs(size_t c, pl_attrs *at, bool *reduced, int rank)
{
    *at = pl_kc_defaults();
    at->axes.n = reduce_cases[c].n;
    at->axes.v = reduce_cases[c].axes;
    at->keepdims = reduce_cases[c].keepdims;
    for (int a = 0; a < PL_MAX_RANK; a++)
        reduced[a] = false;
    for (int i = 0; i < reduce_cases[c].n; i++) {
        int64_t a = reduce_cases[c].axes[i];
        reduced[a < 0 ? a + rank : a] = true;
    }
}

static void test_reduce(void)
{
    for (size_t c = 0; c < sizeof reduce_cases / sizeof *reduce_cases; c++) {
        pl_tensor x_t = pl_kc_tensor(reduce_cases[c].x, PL_F32, false);
        pl_attrs at;
        bool reduced[PL_MAX_RANK];
        reduce_attrs(c, &at, reduced, x_t.rank);
        float *x = pl_kc_random(&x_t, 11 + c, -1, 1);
        void *in[] = {x};
        pl_tensor out_t;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_REDUCE_SUM, &at, 1, &x_t, 1, &out_t));
        int64_t n_out = pl_tensor_elements(&out_t), count = pl_tensor_elements(&x_t) / n_out;
        float *want = pl_kc_floats(n_out);
        reduce_ref(&x_t, x, reduced, 1.0, want, n_out);
        pl_kc_check_op(&PL_KC_FNS(reduce_sum), PL_OP_REDUCE_SUM, &at, 1, &x_t, in, want, 1e-3, NULL,
                       "reduce_sum");
        reduce_ref(&x_t, x, reduced, 1.0 / (double)count, want, n_out);
        pl_kc_check_op(&PL_KC_FNS(reduce_mean), PL_OP_REDUCE_MEAN, &at, 1, &x_t, in, want, 1e-3,
                       NULL, "reduce_mean");
        free(want);
        free(x);
    }
}

/* broadcast_like with factor 1/count is the gradient of reduce_mean (and with 1, of
 * reduce_sum): checked against central differences and a direct reference. */
static void test_broadcast_like(void)
{
    for (size_t c = 0; c < sizeof reduce_cases / sizeof *reduce_cases; c++) {
        pl_tensor x_t = pl_kc_tensor(reduce_cases[c].x, PL_F32, false);
        pl_attrs at;
        bool reduced[PL_MAX_RANK];
        reduce_attrs(c, &at, reduced, x_t.rank);
        pl_tensor out_t;
        CU_ASSERT_FATAL(pl_kc_infer(PL_OP_REDUCE_MEAN, &at, 1, &x_t, 1, &out_t));
        int64_t n = pl_tensor_elements(&x_t), count = n / pl_tensor_elements(&out_t);
        at.factor = 1.0 / (double)count;
        float *x = pl_kc_random(&x_t, 12 + c, -1, 1), *dy = pl_kc_random(&out_t, 13 + c, -1, 1);
        float *want = pl_kc_floats(n);
        for (int64_t i = 0; i < n; i++) {
            int64_t rest = i, index = 0, mul = 1;
            for (int a = x_t.rank - 1; a >= 0; a--) {
                int64_t coord = rest % x_t.dims[a];
                rest /= x_t.dims[a];
                if (!reduced[a]) {
                    index += coord * mul;
                    mul *= x_t.dims[a];
                }
            }
            want[i] = (float)(at.factor * dy[index]);
        }
        pl_tensor in_t[2] = {out_t, x_t};
        void *in[] = {dy, x};
        pl_kc_check_op(&PL_KC_FNS(broadcast_like), PL_OP_BROADCAST_LIKE, &at, 2, in_t, in, want,
                       1e-3, NULL, "broadcast_like");
        void *fwd_in[] = {x};
        pl_kc_check_gradient(&PL_KC_FNS(reduce_mean), PL_OP_REDUCE_MEAN, &at, 1, &x_t, fwd_in, 0,
                             want, dy, 1.0f, "reduce_mean");
        free(want);
        free(x);
        free(dy);
    }
}

/* The test of the tests: a result wrong in one element by 1e-3 must fail the check. */
static void test_checks_catch_errors(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor t = pl_kc_tensor("3,4", PL_F32, false), out_t;
    float *x = pl_kc_random(&t, 14, -1, 1), want[12];
    void *in[] = {x};
    for (int i = 0; i < 12; i++)
        want[i] = (float)tanh(x[i]);
    float *y = pl_kc_run_fresh(&PL_KC_FNS(tanh), PL_OP_TANH, &at, 1, &t, in, &out_t, 1, NULL);
    CU_ASSERT(pl_kc_max_rel_error(y, want, 12, 1e-3) < 1e-5);
    want[5] += 1e-3f;
    CU_ASSERT(pl_kc_max_rel_error(y, want, 12, 1e-3) > 1e-5);
    free(y);
    free(x);
}

void pl_register_kernels_elementwise_tests(void)
{
    static const pl_test_case cases[] = {
        {"add, sub, mul, div broadcasting", test_binary},
        {"activations and scale", test_activations},
        {"activation gradients", test_activation_gradients},
        {"hard activations, exact gelu and erf: PyTorch's values", test_pytorch_values},
        {"exp, log, sqrt, rsqrt, abs, pow outside their domains: IEEE's values",
         test_math_domains},
        {"dropout", test_dropout},
        {"dropout gradient", test_dropout_gradient},
        {"dropout: masks of a sample or a step", test_dropout_shared_masks},
        {"where", test_where},
        {"where gradient", test_where_gradient},
        {"comparisons and logical_not", test_comparisons},
        {"zeros_like", test_zeros_like},
        {"sum_to", test_sum_to},
        {"reduce_sum and reduce_mean", test_reduce},
        {"broadcast_like", test_broadcast_like},
        {"checks catch errors", test_checks_catch_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-elementwise", cases);
}
