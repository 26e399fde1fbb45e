/* Training checks shared by the suites that hold a plan to what one device computes. */
#include "training_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "program.h"
#include "session.h"
#include "test_util.h"

/* `steps` losses on one device with m micro-batches, and its parameters and optimiser
 * state after them (when `params` is not NULL: per tensor, a copy of its values). */
void pl_test_one_device(const pl_graph *g, const pl_dataset *data, int m, int steps, float *losses,
                        float **params)
{
    pl_session *s = pl_session_new(g, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    pl_test_fill_first_batch(g, data, pl_test_session_buffer, s);
    for (int step = 1; step <= steps; step++)
        CU_ASSERT_EQUAL(pl_session_train_step(s, step, m, &losses[step - 1], NULL), PL_OK);
    for (int t = 0; params && t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_PARAM || g->tensors[t].kind == PL_TENSOR_STATE) {
            size_t bytes = (size_t)pl_tensor_bytes(&g->tensors[t]);
            params[t] = malloc(bytes);
            memcpy(params[t], pl_session_data(s, t), bytes);
        }
    pl_session_free(s);
}

/* To 1e-5: relative from 1 up, absolute below (a key's bias in attention has no gradient
 * and stays near 0; a loss trained on one batch for long falls to 1e-4, where summation
 * order shows). */
bool pl_test_close_to(float got, float want)
{
    return fabsf(got - want) <= 1e-5f * fmaxf(fabsf(want), 1.0f);
}

/* Runs `plan` for `steps` steps on a fresh executor and compares with `want`. */
void pl_test_check_plan(const pl_graph *g, const pl_cluster *c, const pl_dataset *data,
                        const pl_plan *plan, int steps, const float *want, float **params,
                        const char *what)
{
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
    pl_fit fit;
    pl_error err;
    pl_error_init(&err, what);
    pl_status set = pl_executor_set_plan(ex, plan, &fit, &err);
    if (set != PL_OK)
        fprintf(stderr, "\n    %s: %s", what, err.text);
    CU_ASSERT_EQUAL_FATAL(set, PL_OK);
    CU_ASSERT_TRUE(fit.fits);
    CU_ASSERT_EQUAL(pl_executor_program(ex)->replicas, plan->replicas);
    int wrong = 0;
    for (int step = 1; step <= steps; step++) {
        float loss = NAN;
        CU_ASSERT_EQUAL(pl_executor_step(ex, step, &loss, &err), PL_OK);
        if (!pl_test_close_to(loss, want[step - 1]) && wrong++ == 0)
            fprintf(stderr,
                    "\n    %s (%d replicas, %d micro-batches, %d stages%s) step %d: "
                    "loss %.9g, one device %.9g",
                    what, plan->replicas, plan->micro_batches, plan->n_stages,
                    plan->shard_optimizer_state ? ", sharded state" : "", step, (double)loss,
                    (double)want[step - 1]);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    for (int t = 0; params && t < g->n_tensors; t++) {
        if (!params[t])
            continue;
        const float *got = pl_executor_data(ex, t);
        int64_t n = pl_tensor_elements(&g->tensors[t]), off = 0;
        float worst = 0;
        for (int64_t i = 0; i < n; i++) {
            off += !pl_test_close_to(got[i], params[t][i]);
            worst = fmaxf(worst, fabsf(got[i] - params[t][i]));
        }
        if (off)
            fprintf(stderr,
                    "\n    %s: parameter %s differs in %lld of %lld values (by %g at "
                    "most; e.g. %g, one device %g)",
                    what, g->tensors[t].name, (long long)off, (long long)n, (double)worst,
                    (double)got[0], (double)params[t][0]);
        CU_ASSERT_EQUAL(off, 0);
    }
    pl_executor_free(ex);
}
