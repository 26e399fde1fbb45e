/* Kernel tests: accumulate, scatter_accumulate (duplicate and out-of-range ids, a shard's
 * rows from a first id, and as
 * the gradient of an embedding lookup by central differences), sgd_update with and
 * without velocity, and adam_update over several steps, against double-precision
 * references, in place, bitwise the same at 1, 3 and 7 threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CUnit/CUnit.h>

#include "kernel_check.h"
#include "suites.h"
#include "test_util.h"

enum { MAX_IN = 4 };

static pl_tensor state(const char *dims)
{
    pl_tensor t = pl_kc_tensor(dims, PL_F32, false);
    t.kind = PL_TENSOR_STATE;
    return t;
}

static double max_error(const float *got, const float *want, int64_t n, const char *what)
{
    double e = pl_kc_max_rel_error(got, want, n, 1e-3);
    if (!(e < 1e-5))
        fprintf(stderr, "\n    %s: error %g\n", what, e);
    return e;
}

/* An in-place kernel run at every thread count on fresh copies of `in0`: each time the
 * first `n_mutated` inputs must equal `want` (close) and the first run (bitwise). */
static void check_in_place(pl_kernel_fns fns, pl_op_kind kind, const pl_attrs *at, int n_in,
                           const pl_tensor *in_t, void *const *in0, int n_mutated,
                           float *const *want, const pl_step_info *step, const char *what)
{
    CU_ASSERT_FATAL(pl_kc_infer(kind, at, n_in, in_t, 0, NULL));
    void *in[MAX_IN], *first[MAX_IN] = {NULL};
    for (int t = 0; t < PL_KC_THREAD_COUNTS; t++) {
        for (int i = 0; i < n_in; i++) {
            size_t bytes = (size_t)pl_tensor_elements(&in_t[i]) * 4;
            in[i] = i < n_mutated ? memcpy(malloc(bytes), in0[i], bytes) : in0[i];
        }
        pl_kc_run(&fns, kind, at, n_in, in_t, in, 0, NULL, NULL, pl_kc_thread_counts[t], step);
        for (int i = 0; i < n_mutated; i++) {
            int64_t n = pl_tensor_elements(&in_t[i]);
            if (t == 0) {
                CU_ASSERT(max_error(in[i], want[i], n, what) < 1e-5);
                first[i] = in[i];
            } else {
                CU_ASSERT_EQUAL(memcmp(in[i], first[i], (size_t)n * 4), 0);
                free(in[i]);
            }
        }
    }
    for (int i = 0; i < n_mutated; i++)
        free(first[i]);
}

static void test_accumulate(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor in_t[2] = {state("5,7"), pl_kc_tensor("5,7", PL_F32, false)};
    float *acc = pl_kc_random(&in_t[0], 1, -1, 1), *g = pl_kc_random(&in_t[1], 2, -1, 1);
    float want[35];
    for (int i = 0; i < 35; i++)
        want[i] = (float)((double)acc[i] + g[i]);
    void *in[] = {acc, g};
    float *wants[] = {want};
    check_in_place((pl_kernel_fns){pl_kernel_accumulate, NULL, NULL}, PL_OP_ACCUMULATE, &at, 2,
                   in_t, in, 1, wants, NULL, "accumulate");
    free(acc);
    free(g);
}

static void scatter_ref(float *want, const float *acc, const float *dy, const int32_t *ids,
                        int64_t rows, int64_t vocab, int64_t d, int64_t start)
{
    for (int64_t i = 0; i < vocab * d; i++)
        want[i] = acc[i];
    for (int64_t r = 0; r < rows; r++)
        if (ids[r] - start >= 0 && ids[r] - start < vocab)
            for (int64_t c = 0; c < d; c++)
                want[(ids[r] - start) * d + c] += dy[r * d + c];
}

static void test_scatter_accumulate(void)
{
    static const struct {
        const char *acc, *dy, *ids;
    } shapes[] = {{"6,5", "2,3,5", "2,3"}, {"4,1", "7,1", "7"}, {"9,40", "30,40", "30"}};
    pl_attrs at = pl_kc_defaults();
    for (size_t s = 0; s < 2 * sizeof shapes / sizeof *shapes; s++) {
        at.start = s % 2 ? 2 : 0; /* a shard of a table split by rows: ids from 2 */
        pl_tensor in_t[3] = {state(shapes[s / 2].acc), pl_kc_tensor(shapes[s / 2].dy, PL_F32, true),
                             pl_kc_tensor(shapes[s / 2].ids, PL_I32, true)};
        int64_t vocab = in_t[0].dims[0], d = in_t[0].dims[1];
        int64_t rows = pl_tensor_elements(&in_t[2]);
        float *acc = pl_kc_random(&in_t[0], 3 + s, -1, 1);
        float *dy = pl_kc_random(&in_t[1], 4 + s, -1, 1);
        int32_t *ids = pl_kc_random(&in_t[2], 5 + s, -1, (double)vocab + 1); /* some outside */
        ids[0] = ids[rows - 1] = (int32_t)(vocab / 2); /* a repeated id */
        float *want = malloc((size_t)(vocab * d) * sizeof *want);
        scatter_ref(want, acc, dy, ids, rows, vocab, d, at.start);
        void *in[] = {acc, dy, ids};
        float *wants[] = {want};
        check_in_place((pl_kernel_fns){pl_kernel_scatter_accumulate, NULL, NULL},
                       PL_OP_SCATTER_ACCUMULATE, &at, 3, in_t, in, 1, wants, NULL,
                       "scatter_accumulate");
        free(acc);
        free(dy);
        free(ids);
        free(want);
    }
}

/* An embedding lookup written here, for central differences (out-of-range ids give 0). */
static void embedding_for_test(const pl_kernel_args *args)
{
    const float *table = args->in[0];
    const int32_t *ids = args->in[1];
    float *y = args->out[0];
    int64_t vocab = args->in_t[0]->dims[0], d = args->in_t[0]->dims[1];
    int64_t rows = pl_tensor_elements(args->in_t[1]);
    if (args->ith != 0)
        return;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < d; c++)
            y[r * d + c] = ids[r] >= 0 && ids[r] < vocab ? table[ids[r] * d + c] : 0.0f;
}

/* scatter_accumulate into zeros is the embedding table's gradient. */
static void test_scatter_is_embedding_gradient(void)
{
    pl_attrs at = pl_kc_defaults();
    pl_tensor table_t = pl_kc_tensor("6,4", PL_F32, false);
    pl_tensor ids_t = pl_kc_tensor("3,2", PL_I32, true), out_t;
    pl_tensor fwd_t[2] = {table_t, ids_t};
    CU_ASSERT_FATAL(pl_kc_infer(PL_OP_EMBEDDING, &at, 2, fwd_t, 1, &out_t));
    float *table = pl_kc_random(&table_t, 6, -1, 1), *dy = pl_kc_random(&out_t, 7, -1, 1);
    int32_t ids[] = {1, 4, 1, -1, 6, 0};
    float numeric[24], got[24] = {0};
    void *fwd_in[] = {table, ids};
    pl_kernel_fns emb = {embedding_for_test, NULL, NULL};
    pl_kc_numeric_grad(&emb, PL_OP_EMBEDDING, &at, 2, fwd_t, fwd_in, 1, &out_t, 0, dy, 0, 1e-2f,
                       numeric);
    pl_tensor in_t[3] = {state("6,4"), out_t, ids_t};
    void *in[] = {got, dy, ids};
    pl_kernel_fns scatter = {pl_kernel_scatter_accumulate, NULL, NULL};
    pl_kc_run(&scatter, PL_OP_SCATTER_ACCUMULATE, &at, 3, in_t, in, 0, NULL, NULL, 3, NULL);
    CU_ASSERT(pl_kc_max_rel_error(got, numeric, 24, 1e-2) < 2e-2);
    free(table);
    free(dy);
}

/* ---- updates -------------------------------------------------------------------------------- */

static void test_sgd_update(void)
{
    pl_step_info step = {.step = 3, .micro_batch = 0, .micro_batches = 4, .training = true};
    for (int with_velocity = 0; with_velocity < 2; with_velocity++) {
        pl_attrs at = pl_kc_defaults();
        at.lr = 0.1;
        at.momentum = 0.9;
        at.weight_decay = with_velocity ? 0.01 : 0.0;
        pl_tensor p_t = pl_kc_tensor("3,11", PL_F32, false);
        p_t.kind = PL_TENSOR_PARAM;
        pl_tensor in_t[3] = {p_t, state("3,11"), state("3,11")};
        float *param = pl_kc_random(&in_t[0], 10, -1, 1), *acc = pl_kc_random(&in_t[1], 11, -4, 4);
        float *vel = pl_kc_random(&in_t[2], 12, -1, 1);
        float want_p[33], want_acc[33] = {0}, want_v[33];
        for (int i = 0; i < 33; i++) {
            double g = acc[i] / 4.0 + at.weight_decay * param[i];
            double v = 0.9 * vel[i] + g;
            want_v[i] = (float)v;
            want_p[i] = (float)(param[i] - 0.1 * (with_velocity ? v : g));
        }
        void *in[] = {param, acc, vel};
        float *wants[] = {want_p, want_acc, want_v};
        check_in_place((pl_kernel_fns){pl_kernel_sgd_update, NULL, NULL}, PL_OP_SGD_UPDATE, &at,
                       2 + with_velocity, in_t, in, 2 + with_velocity, wants, &step,
                       with_velocity ? "sgd_update (velocity)" : "sgd_update");
        free(param);
        free(acc);
        free(vel);
    }
}

/* Three steps of Adam in a row, each checked against the reference state. */
static void test_adam_update(void)
{
    pl_attrs at = pl_kc_defaults();
    at.lr = 0.01;
    at.beta1 = 0.9;
    at.beta2 = 0.999;
    at.eps = 1e-8;
    at.weight_decay = 0.001;
    pl_tensor p_t = pl_kc_tensor("29", PL_F32, false);
    p_t.kind = PL_TENSOR_PARAM;
    pl_tensor in_t[4] = {p_t, state("29"), state("29"), state("29")};
    float *param = pl_kc_random(&in_t[0], 20, -1, 1);
    float m[29] = {0}, v[29] = {0};
    double ref_p[29], ref_m[29] = {0}, ref_v[29] = {0};
    for (int i = 0; i < 29; i++)
        ref_p[i] = param[i];
    for (int t = 1; t <= 3; t++) {
        pl_step_info step = {.step = t, .micro_batch = 0, .micro_batches = 2, .training = true};
        float *acc = pl_kc_random(&in_t[1], 21 + t, -1, 1);
        float want_p[29], want_acc[29] = {0}, want_m[29], want_v[29];
        for (int i = 0; i < 29; i++) {
            double g = acc[i] / 2.0 + 0.001 * param[i];
            ref_m[i] = 0.9 * m[i] + 0.1 * g;
            ref_v[i] = 0.999 * v[i] + 0.001 * g * g;
            double mhat = ref_m[i] / (1 - pow(0.9, t)), vhat = ref_v[i] / (1 - pow(0.999, t));
            ref_p[i] = param[i] - 0.01 * mhat / (sqrt(vhat) + 1e-8);
            want_p[i] = (float)ref_p[i];
            want_m[i] = (float)ref_m[i];
            want_v[i] = (float)ref_v[i];
        }
        void *in[] = {param, acc, m, v};
        float *wants[] = {want_p, want_acc, want_m, want_v};
        check_in_place((pl_kernel_fns){pl_kernel_adam_update, NULL, NULL}, PL_OP_ADAM_UPDATE,
                       &at, 4, in_t, in, 4, wants, &step, "adam_update");
        /* carry the state to the next step */
        void *next[] = {param, acc, m, v};
        pl_kernel_fns adam = {pl_kernel_adam_update, NULL, NULL};
        pl_kc_run(&adam, PL_OP_ADAM_UPDATE, &at, 4, in_t, next, 0, NULL, NULL, 1, &step);
        free(acc);
    }
    free(param);
}

/* The test of the tests: an update off by 1e-4 relative fails the check. */
static void test_checks_catch_errors(void)
{
    float got[3] = {1.0f, -2.0f, 0.5f}, want[3] = {1.0f, -2.0f, 0.5f};
    CU_ASSERT(pl_kc_max_rel_error(got, want, 3, 1e-3) < 1e-5);
    want[1] *= 1.0001f;
    CU_ASSERT(pl_kc_max_rel_error(got, want, 3, 1e-3) > 1e-5);
}

void pl_register_kernels_optim_tests(void)
{
    static const pl_test_case cases[] = {
        {"accumulate", test_accumulate},
        {"scatter_accumulate", test_scatter_accumulate},
        {"scatter_accumulate is the embedding gradient", test_scatter_is_embedding_gradient},
        {"sgd_update", test_sgd_update},
        {"adam_update", test_adam_update},
        {"checks catch errors", test_checks_catch_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("kernels-optim", cases);
}
