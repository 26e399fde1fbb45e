/* Kernel tests: the vocabulary-parallel loss's ops (logsumexp, pick, lse_cross_entropy)
 * against double-precision references at 1, 3 and 7 threads (bitwise equal), their
 * gradient kernels against central differences, and the ops put together over shards of
 * the classes against softmax_cross_entropy and its gradient on the whole logits. */
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

static double logsumexp_ref(const float *x, int64_t c)
{
    double m = -INFINITY, sum = 0;
    for (int64_t k = 0; k < c; k++)
        m = fmax(m, x[k]);
    for (int64_t k = 0; k < c; k++)
        sum += exp(x[k] - m);
    return m + log(sum);
}

/* The [..., 1] shape of x's positions. */
static pl_tensor positions_of(const pl_tensor *x)
{
    pl_tensor t = *x;
    t.dims[t.rank - 1] = 1;
    return t;
}

static void test_logsumexp(void)
{
    static const char *const shapes[] = {"6,5", "2,3,40", "1,1", "3,1000"};
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        pl_tensor in_t[3] = {pl_kc_tensor("", PL_F32, true), pl_kc_tensor(shapes[s], PL_F32, true)};
        in_t[0] = in_t[2] = positions_of(&in_t[1]);
        int64_t c = in_t[1].dims[in_t[1].rank - 1], rows = pl_tensor_elements(&in_t[0]);
        float *x = pl_kc_random(&in_t[1], 10 + s, -1, 1), *dy = pl_kc_random(&in_t[0], 20 + s, -2, 2);
        float *want = pl_kc_floats(rows);
        for (int64_t r = 0; r < rows; r++)
            want[r] = (float)logsumexp_ref(x + r * c, c);
        pl_kc_check_op(&PL_KC_FNS(logsumexp), PL_OP_LOGSUMEXP, &at, 1, &in_t[1], (void *[]){x},
                       want, 1e-3, NULL, "logsumexp");

        void *grad_in[] = {dy, x, want};
        pl_tensor out_t;
        float *got = pl_kc_run_fresh(&PL_KC_FNS(logsumexp_grad), PL_OP_LOGSUMEXP_GRAD, &at, 3, in_t,
                                     grad_in, &out_t, 1, NULL);
        if (c <= 40) /* central differences of a 1000-wide softmax are rounding */
            pl_kc_check_gradient(&PL_KC_FNS(logsumexp), PL_OP_LOGSUMEXP, &at, 1, &in_t[1],
                                 (void *[]){x}, 0, got, dy, 1.0f, "logsumexp");
        pl_kc_check_op(&PL_KC_FNS(logsumexp_grad), PL_OP_LOGSUMEXP_GRAD, &at, 3, in_t, grad_in, got,
                       1e-3, NULL, "logsumexp_grad");
        free(got);
        free(want);
        free(dy);
        free(x);
    }
}

/* Logits whose exponentials overflow a float: the largest is taken out first. */
static void test_logsumexp_large(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor x_t = pl_kc_tensor("2,3", PL_F32, true);
    float x[6] = {1000, 999, -1000, -500, -501, -502};
    float want[2] = {(float)(1000 + log1p(exp(-1.0) + exp(-2000.0))),
                     (float)(-500 + log(1 + exp(-1.0) + exp(-2.0)))};
    pl_kc_check_op(&PL_KC_FNS(logsumexp), PL_OP_LOGSUMEXP, &at, 1, &x_t, (void *[]){x}, want,
                   1e-3, NULL, "logsumexp of large logits");
}

/* Labels below, inside and beyond the classes [start, start + c) of x. */
static void test_pick(void)
{
    pl_attrs at = pl_kc_defaults();
    at.start = 4;
    pl_tensor in_t[3] = {pl_kc_tensor("2,5,1", PL_F32, true), pl_kc_tensor("2,5", PL_I32, true),
                         pl_kc_tensor("2,5,3", PL_F32, true)};
    pl_tensor fwd_t[2] = {in_t[2], in_t[1]};
    int64_t rows = 10, c = 3;
    float *x = pl_kc_random(&in_t[2], 31, -3, 3), *dy = pl_kc_random(&in_t[0], 32, -2, 2);
    int32_t *labels = pl_kc_random(&in_t[1], 33, 0, 10);
    labels[0] = -1;
    labels[1] = 4;
    labels[2] = 6;
    float want[10], want_dx[30] = {0};
    for (int64_t r = 0; r < rows; r++) {
        bool mine = labels[r] >= 4 && labels[r] < 4 + c;
        want[r] = mine ? x[r * c + labels[r] - 4] : 0.0f;
        if (mine)
            want_dx[r * c + labels[r] - 4] = dy[r];
    }
    void *fwd_in[] = {x, labels}, *grad_in[] = {dy, labels, x};
    pl_kc_check_op(&PL_KC_FNS(pick), PL_OP_PICK, &at, 2, fwd_t, fwd_in, want, 1e-3, NULL, "pick");
    pl_kc_check_op(&PL_KC_FNS(pick_grad), PL_OP_PICK_GRAD, &at, 3, in_t, grad_in, want_dx, 1e-3,
                   NULL, "pick_grad");
    pl_kc_check_gradient(&PL_KC_FNS(pick), PL_OP_PICK, &at, 2, fwd_t, fwd_in, 0, want_dx, dy, 1.0f,
                         "pick");
    free(labels);
    free(dy);
    free(x);
}

/* A label outside [0, end) counts as a position and adds nothing. */
static void test_lse_cross_entropy(void)
{
    pl_attrs at = pl_kc_defaults();
    at.end = 7;
    pl_tensor in_t[3] = {pl_kc_tensor("4,3,1", PL_F32, true), pl_kc_tensor("4,3,1", PL_F32, true),
                         pl_kc_tensor("4,3", PL_I32, true)};
    pl_tensor grad_t[3] = {in_t[0], in_t[2], pl_kc_tensor("", PL_F32, false)};
    float *lse = pl_kc_random(&in_t[0], 41, 0, 5), *picked = pl_kc_random(&in_t[1], 42, -3, 3);
    int32_t *labels = pl_kc_random(&in_t[2], 43, 0, 7);
    labels[3] = -1;
    labels[5] = 7;
    float dloss = 1.3f, want_grad[2][12];
    double total = 0;
    for (int r = 0; r < 12; r++) {
        bool valid = labels[r] >= 0 && labels[r] < 7;
        total += valid ? (double)lse[r] - (double)picked[r] : 0.0;
        want_grad[0][r] = valid ? dloss / 12.0f : 0.0f;
        want_grad[1][r] = -want_grad[0][r];
    }
    float want = (float)(total / 12);
    void *in[] = {lse, picked, labels}, *grad_in[] = {lse, labels, &dloss};
    pl_kc_check_op(&FNS_REDUCE(lse_cross_entropy), PL_OP_LSE_CROSS_ENTROPY, &at, 3, in_t, in, &want,
                   1e-3, NULL, "lse_cross_entropy");
    float *got[2];
    pl_kc_run_all_threads(&PL_KC_FNS(lse_cross_entropy_grad), PL_OP_LSE_CROSS_ENTROPY_GRAD, &at, 3,
                          grad_t, grad_in, 2,
                          (pl_tensor[]){in_t[0], in_t[0]}, got, "lse_cross_entropy_grad");
    for (int k = 0; k < 2; k++) {
        CU_ASSERT(pl_kc_max_rel_error(got[k], want_grad[k], 12, 1e-3) < 1e-6);
        pl_kc_check_gradient(&FNS_REDUCE(lse_cross_entropy), PL_OP_LSE_CROSS_ENTROPY, &at, 3, in_t,
                             in, k, got[k], &dloss, 1.0f, "lse_cross_entropy");
        free(got[k]);
    }
    free(labels);
    free(picked);
    free(lse);
}

/* Columns [s * w, s * w + w) of the rows of x [rows, c]. */
static float *columns(const float *x, int64_t rows, int64_t c, int64_t w, int s)
{
    float *part = pl_kc_floats(rows * w);
    for (int64_t r = 0; r < rows; r++)
        memcpy(part + r * w, x + r * c + s * w, (size_t)w * sizeof *part);
    return part;
}

/* What the rewrite computes for a loss split over k shards of the classes, kernel by
 * kernel, against softmax_cross_entropy on the whole logits: the loss, and each shard's
 * gradient against its columns of the whole gradient. */
static void check_shards(int64_t rows, int64_t c, int k)
{
    enum { MAX_K = 4 };
    int64_t w = c / k;
    char text[32];
    pl_attrs at = pl_kc_defaults(), pick_at = at, loss_at = at;
    loss_at.end = c;
    snprintf(text, sizeof text, "%lld,%lld", (long long)rows, (long long)c);
    pl_tensor whole_t[3] = {pl_kc_tensor(text, PL_F32, true), pl_kc_tensor("", PL_I32, true),
                            pl_kc_tensor("", PL_F32, false)};
    whole_t[1].dims[whole_t[1].rank++] = rows;
    snprintf(text, sizeof text, "%lld,%lld", (long long)rows, (long long)w);
    pl_tensor part_t = pl_kc_tensor(text, PL_F32, true), one_t = positions_of(&part_t), out_t;
    snprintf(text, sizeof text, "%lld,%d", (long long)rows, k);
    pl_tensor gathered_t = pl_kc_tensor(text, PL_F32, true);
    float *x = pl_kc_random(&whole_t[0], 51, -4, 4), dloss = 0.9f;
    int32_t *labels = pl_kc_random(&whole_t[1], 52, 0, (double)c);
    labels[0] = -3; /* outside the classes */
    void *whole_in[] = {x, labels, &dloss};
    float *want = pl_kc_run_fresh(&FNS_REDUCE(softmax_cross_entropy), PL_OP_SOFTMAX_CROSS_ENTROPY,
                                  &at, 2, whole_t, whole_in, &out_t, 1, NULL);
    float *want_dx = pl_kc_run_fresh(&PL_KC_FNS(softmax_cross_entropy_grad),
                                     PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD, &at, 3, whole_t, whole_in,
                                     &out_t, 1, NULL);
    float *part[MAX_K], *lse[MAX_K], *picked[MAX_K];
    float *gathered = pl_kc_floats(rows * k), *target = calloc((size_t)rows, sizeof *target);
    for (int s = 0; s < k; s++) {
        part[s] = columns(x, rows, c, w, s);
        pick_at.start = w * s;
        lse[s] = pl_kc_run_fresh(&PL_KC_FNS(logsumexp), PL_OP_LOGSUMEXP, &at, 1, &part_t,
                                 (void *[]){part[s]}, &out_t, 1, NULL);
        picked[s] = pl_kc_run_fresh(&PL_KC_FNS(pick), PL_OP_PICK, &pick_at, 2,
                                    (pl_tensor[]){part_t, whole_t[1]},
                                    (void *[]){part[s], labels}, &out_t, 1, NULL);
        for (int64_t r = 0; r < rows; r++) {
            gathered[r * k + s] = lse[s][r];
            target[r] += picked[s][r];
        }
    }
    float *whole_lse = pl_kc_run_fresh(&PL_KC_FNS(logsumexp), PL_OP_LOGSUMEXP, &at, 1, &gathered_t,
                                       (void *[]){gathered}, &out_t, 1, NULL);
    float *loss = pl_kc_run_fresh(&FNS_REDUCE(lse_cross_entropy), PL_OP_LSE_CROSS_ENTROPY,
                                  &loss_at, 3, (pl_tensor[]){one_t, one_t, whole_t[1]},
                                  (void *[]){whole_lse, target, labels}, &out_t, 1, NULL);
    CU_ASSERT(pl_kc_max_rel_error(loss, want, 1, 1e-3) < 1e-5);

    float *both[2];
    pl_tensor two_t[2];
    pl_kc_run_fresh_outputs(&PL_KC_FNS(lse_cross_entropy_grad), PL_OP_LSE_CROSS_ENTROPY_GRAD,
                            &loss_at, 3, (pl_tensor[]){one_t, whole_t[1], whole_t[2]},
                            (void *[]){whole_lse, labels, &dloss}, 2, two_t, both, 1, NULL);
    float *dgathered = pl_kc_run_fresh(&PL_KC_FNS(logsumexp_grad), PL_OP_LOGSUMEXP_GRAD, &at, 3,
                                       (pl_tensor[]){one_t, gathered_t, one_t},
                                       (void *[]){both[0], gathered, whole_lse}, &out_t, 1, NULL);
    float *dlse = pl_kc_floats(rows);
    for (int s = 0; s < k; s++) {
        for (int64_t r = 0; r < rows; r++)
            dlse[r] = dgathered[r * k + s];
        pick_at.start = w * s;
        float *dx = pl_kc_run_fresh(&PL_KC_FNS(logsumexp_grad), PL_OP_LOGSUMEXP_GRAD, &at, 3,
                                    (pl_tensor[]){one_t, part_t, one_t},
                                    (void *[]){dlse, part[s], lse[s]}, &out_t, 1, NULL);
        float *donehot = pl_kc_run_fresh(&PL_KC_FNS(pick_grad), PL_OP_PICK_GRAD, &pick_at, 3,
                                         (pl_tensor[]){one_t, whole_t[1], part_t},
                                         (void *[]){both[1], labels, part[s]}, &out_t, 1, NULL);
        float *want_part = columns(want_dx, rows, c, w, s);
        for (int64_t i = 0; i < rows * w; i++)
            dx[i] += donehot[i];
        double e = pl_kc_max_rel_error(dx, want_part, rows * w, 1e-3);
        if (!(e < 1e-4))
            fprintf(stderr, "\n    shard %d of %d: gradient error %g\n", s, k, e);
        CU_ASSERT(e < 1e-4);
        free(want_part);
        free(donehot);
        free(dx);
        free(part[s]);
        free(lse[s]);
        free(picked[s]);
    }
    free(dlse);
    free(dgathered);
    free(both[0]);
    free(both[1]);
    free(loss);
    free(whole_lse);
    free(target);
    free(gathered);
    free(want_dx);
    free(want);
    free(labels);
    free(x);
}

static void test_shards_make_the_whole(void)
{
    check_shards(9, 12, 2);
    check_shards(9, 12, 3);
    check_shards(20, 64, 4);
}

void pl_register_kernels_vocab_tests(void)
{
    static const pl_test_case cases[] = {
        {"logsumexp", test_logsumexp},
        {"logsumexp of large logits", test_logsumexp_large},
        {"pick", test_pick},
        {"lse_cross_entropy", test_lse_cross_entropy},
        {"shards of the classes make softmax_cross_entropy", test_shards_make_the_whole},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-vocab", cases);
}
