/* Training end to end on one device: autodiff's gradients against finite differences of
 * the loss, the same gradients whatever the thread or micro-batch count, and every small
 * model of the suite learning (its loss falls over 100 steps). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "data.h"
#include "graph_build.h"
#include "load.h"
#include "session.h"
#include "suites.h"
#include "test_util.h"

typedef struct trained {
    pl_graph *g;
    pl_dataset *data;
    pl_session *s;
} trained;

static void release(trained *t)
{
    pl_session_free(t->s);
    pl_dataset_free(t->data);
    pl_graph_free(t->g);
}

/* A bundled model's training graph and session (`file` in graphs/, or a test's model
 * under tests/; batch: the file's when 0), its inputs filled with the first batch. */
static bool open_batch(const char *file, const char *data, int threads, int batch, trained *t)
{
    memset(t, 0, sizeof *t);
    if (!(t->g = pl_test_bundled_training_graph(file, batch)))
        return false;
    pl_error err;
    pl_error_init(&err, file);
    if (!(t->data = pl_dataset_open(t->g, data, 7, &err)) ||
        !(t->s = pl_session_new(t->g, threads, &err))) {
        char line[2048];
        pl_error_format(&err, line, sizeof line);
        fprintf(stderr, "\n    %s\n", line);
        release(t);
        return false;
    }
    pl_test_fill_first_batch(t->g, t->data, pl_test_session_buffer, t->s);
    return true;
}

static bool open_model(const char *file, const char *data, int threads, trained *t)
{
    return open_batch(file, data, threads, 0, t);
}

/* A parameter training changes: not a constant of the model (a frozen one has no
 * gradient). */
static bool learned(const pl_tensor *t)
{
    return t->kind == PL_TENSOR_PARAM && !t->frozen;
}

static float forward_loss(trained *t)
{
    float loss = NAN;
    pl_session_forward(t->s, true, &loss, NULL);
    return loss;
}

/* For each parameter, up to `per_param` elements: the accumulated gradient of one
 * micro-batch against finite differences of the training-mode loss, central and one-sided,
 * at steps 1e-2 and 1e-3. The closest counts: a large step loses to curvature, a small
 * one to float rounding, and at a kink (relu, max pooling) only the one-sided difference
 * that stays on one side agrees; a wrong gradient agrees with none. Compared as a vector
 * per parameter, with a floor for rounding.
 * Models with many kinks get a wider tolerance (0.1, against 0.05 for smooth ones): at
 * batch 4, batch norm and max pooling make the loss rough at any step size. Kernel-level
 * tests check every gradient kernel element by element. */
static void check_gradients(const char *model, int per_param, double tolerance)
{
    trained t;
    if (!open_model(model, "synthetic", 1, &t)) {
        CU_FAIL("model did not open");
        return;
    }
    float loss;
    CU_ASSERT_EQUAL_FATAL(pl_session_gradients(t.s, 1, 1, &loss, NULL), PL_OK);
    double base = forward_loss(&t);
    int checked = 0;
    for (int p = 0; p < t.g->n_tensors; p++) {
        if (!learned(&t.g->tensors[p]))
            continue;
        const float *grad = pl_session_data(t.s, pl_autodiff_gradient_of(t.g, p));
        float *value = pl_session_data(t.s, p);
        int64_t n = pl_tensor_elements(&t.g->tensors[p]);
        int k_max = n < per_param ? (int)n : per_param;
        double diff2 = 0, norm2 = 0;
        for (int k = 0; k < k_max; k++) {
            int64_t i = (int64_t)((double)k * (double)n / k_max);
            double numeric = INFINITY;
            for (float h = 1e-2f; h > 5e-4f; h /= 10) {
                float saved = value[i], step = h * fmaxf(1.0f, fabsf(saved));
                value[i] = saved + step;
                double up = forward_loss(&t);
                value[i] = saved - step;
                double down = forward_loss(&t);
                value[i] = saved;
                double estimates[3] = {(up - down) / (2.0 * step), (up - base) / step,
                                       (base - down) / step};
                for (int e = 0; e < 3; e++)
                    if (fabs(estimates[e] - grad[i]) < fabs(numeric - grad[i]))
                        numeric = estimates[e];
            }
            diff2 += (numeric - grad[i]) * (numeric - grad[i]);
            norm2 += (double)grad[i] * grad[i];
        }
        double error = sqrt(diff2) / (sqrt(norm2) + 2e-3 * sqrt((double)k_max));
        if (error > tolerance)
            fprintf(stderr, "\n    %s: %s: gradient error %.3g\n", model, t.g->tensors[p].name,
                    error);
        CU_ASSERT_TRUE(error <= tolerance);
        checked++;
    }
    CU_ASSERT_TRUE(checked > 0);
    release(&t);
}

static void test_gradients_mlp(void) { check_gradients("small/mlp-small.json", 16, 0.05); }
static void test_gradients_cnn(void) { check_gradients("small/cnn-small.json", 8, 0.1); }
static void test_gradients_inception(void)
{
    check_gradients("small/inception-small.json", 8, 0.1);
}
static void test_gradients_resnet(void) { check_gradients("small/resnet-small.json", 8, 0.1); }
static void test_gradients_lstm(void) { check_gradients("small/lstm_lm-small.json", 16, 0.05); }
static void test_gradients_seq2seq(void) { check_gradients("small/seq2seq-small.json", 16, 0.05); }
static void test_gradients_transformer(void)
{
    check_gradients("small/transformer-small.json", 16, 0.05);
}
static void test_gradients_recommender(void)
{
    check_gradients("small/recommender-small.json", 16, 0.05);
}
static void test_gradients_moe(void) { check_gradients("small/moe-small.json", 8, 0.1); }
/* Attention as torch.nn.MultiheadAttention expands: batched rank-4 matmuls, an unbatched
 * [T,T] mask added over [N,H]. */
static void test_gradients_attention(void)
{
    check_gradients("tests/models/attention.json", 16, 0.05);
}
/* The batch on axis 1: reshapes and transposes that move it, dropout, a mean over time. */
static void test_gradients_seq_first(void)
{
    check_gradients("tests/models/seq-first.json", 16, 0.05);
}
/* The batch merged with the axes after it (Swin's windows) and split out again. */
static void test_gradients_windows(void)
{
    check_gradients("tests/models/windows.json", 16, 0.05);
}
/* The PyTorch importers' ops: clamp, hardswish and max pooling have kinks. */
static void test_gradients_torch_ops(void)
{
    check_gradients("tests/models/torch-ops.json", 16, 0.1);
}
/* Channel-first layer norm, stochastic depth's per-sample dropout, where on a mask. */
static void test_gradients_layer_ops(void)
{
    check_gradients("tests/models/layer-ops.json", 16, 0.05);
}

/* Convolutions of one and three spatial axes, and transposed ones of one to three. */
static void test_gradients_convolutions(void)
{
    check_gradients("tests/models/convolutions.json", 16, 0.05);
}

/* An LSTM layer as the importers build it: every step's input side in one matmul, the
 * steps' lstm_cell in the projected form, the recurrent weight a transpose. */
static void test_gradients_lstm_projected(void)
{
    check_gradients("tests/models/lstm-projected.json", 16, 0.05);
}

/* Gradients of one batch, by threads and micro-batches. */
static float *gradients_of(const char *model, int threads, int micro_batches, int64_t *count)
{
    trained t;
    if (!open_model(model, "synthetic", threads, &t))
        return NULL;
    float loss;
    pl_session_gradients(t.s, 1, micro_batches, &loss, NULL);
    int64_t total = 0;
    for (int p = 0; p < t.g->n_tensors; p++)
        if (learned(&t.g->tensors[p]))
            total += pl_tensor_elements(&t.g->tensors[p]);
    float *all = malloc((size_t)total * sizeof *all), *at = all;
    for (int p = 0; all && p < t.g->n_tensors; p++) {
        if (!learned(&t.g->tensors[p]))
            continue;
        int64_t n = pl_tensor_elements(&t.g->tensors[p]);
        const float *acc = pl_session_data(t.s, pl_autodiff_gradient_of(t.g, p));
        for (int64_t i = 0; i < n; i++) /* the sum of micro-batch means, as updates see it */
            at[i] = acc[i] / (float)micro_batches;
        at += n;
    }
    *count = total;
    release(&t);
    return all;
}

static double relative_difference(const float *a, const float *b, int64_t n)
{
    double diff2 = 0, norm2 = 0;
    for (int64_t i = 0; i < n; i++) {
        diff2 += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        norm2 += (double)b[i] * b[i];
    }
    return sqrt(diff2) / (sqrt(norm2) + 1e-30);
}

static void test_threads_and_micro_batches_agree(void)
{
    static const char *const models[] = {
        "small/mlp-small.json",          "small/lstm_lm-small.json",
        "small/transformer-small.json",  "small/cnn-small.json",
        "tests/models/attention.json",   "tests/models/torch-ops.json",
        "tests/models/layer-ops.json",   "tests/models/convolutions.json",
        "tests/models/seq-first.json",   "tests/models/windows.json"};
    for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
        int64_t n1, n3, n4;
        float *one = gradients_of(models[m], 1, 1, &n1);
        float *three = gradients_of(models[m], 3, 1, &n3);
        float *micro = gradients_of(models[m], 1, 4, &n4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(one);
        CU_ASSERT_PTR_NOT_NULL_FATAL(three);
        CU_ASSERT_PTR_NOT_NULL_FATAL(micro);
        double threads = relative_difference(three, one, n1);
        double micro_batches = relative_difference(micro, one, n1);
        if (threads > 1e-5 || micro_batches > 1e-5)
            fprintf(stderr, "\n    %s: 3 threads differ by %.3g, 4 micro-batches by %.3g\n",
                    models[m], threads, micro_batches);
        CU_ASSERT_TRUE(threads <= 1e-5);
        CU_ASSERT_TRUE(micro_batches <= 1e-5);
        free(one);
        free(three);
        free(micro);
    }
}

/* The gradient of one LSTM parameter, summed step by step in double from what each
 * step's lstm_cell_grad read and wrote: w from [x | h]^T . dz (no h: nothing for w[E:]),
 * b from dz's column sums. */
static double *lstm_steps_gradient(trained *t, int param, int *steps)
{
    const pl_tensor *p = &t->g->tensors[param];
    int64_t cols = p->dims[p->rank - 1], size = pl_tensor_elements(p);
    double *sum = calloc((size_t)size, sizeof *sum);
    *steps = 0;
    for (int o = t->g->n_forward_ops; sum && o < t->g->n_ops; o++) {
        const pl_op *op = &t->g->ops[o];
        bool as_w = op->inputs[3] == param;
        if (op->kind != PL_OP_LSTM_CELL_GRAD || (!as_w && op->inputs[4] != param))
            continue;
        (*steps)++;
        const pl_tensor *x = &t->g->tensors[op->inputs[2]];
        int64_t rows = x->dims[0], e = x->dims[1];
        const float *xs = pl_session_data(t->s, op->inputs[2]);
        const float *hs = op->n_inputs >= 7 ? pl_session_data(t->s, op->inputs[5]) : NULL;
        const float *dz = pl_session_data(t->s, op->outputs[1]);
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < cols; k++) {
                double d = dz[r * cols + k];
                if (!as_w) {
                    sum[k] += d;
                    continue;
                }
                for (int64_t a = 0; a < e; a++)
                    sum[a * cols + k] += d * xs[r * e + a];
                for (int64_t a = 0; hs && a < cols / 4; a++)
                    sum[(e + a) * cols + k] += d * hs[r * (cols / 4) + a];
            }
    }
    return sum;
}

/* The full 32-step model: each LSTM weight's gradient comes from blocks of steps
 * (autodiff_lstm.c), the last block holding the first step, which has no state. Their
 * sum is every step's term, once. */
static void test_lstm_weight_gradient_blocks(void)
{
    trained t;
    if (!open_batch("lstm_lm.json", "synthetic", 1, 3, &t)) {
        CU_FAIL("model did not open");
        return;
    }
    float loss;
    CU_ASSERT_EQUAL_FATAL(pl_session_gradients(t.s, 1, 1, &loss, NULL), PL_OK);
    int checked = 0;
    for (int p = 0; p < t.g->n_tensors; p++) {
        const char *name = t.g->tensors[p].name;
        if (t.g->tensors[p].kind != PL_TENSOR_PARAM || strncmp(name, "lstm", 4) != 0)
            continue;
        int steps, acc = pl_autodiff_gradient_of(t.g, p), blocks = 0;
        double *want = lstm_steps_gradient(&t, p, &steps);
        CU_ASSERT_PTR_NOT_NULL_FATAL(want);
        CU_ASSERT_EQUAL(steps, 32);
        for (int o = t.g->n_forward_ops; o < t.g->n_ops; o++)
            blocks += t.g->ops[o].kind == PL_OP_ACCUMULATE && t.g->ops[o].inputs[0] == acc;
        CU_ASSERT_EQUAL(blocks, 32 / PL_LSTM_BLOCK_STEPS);
        const float *got = pl_session_data(t.s, acc);
        double diff2 = 0, norm2 = 0;
        for (int64_t i = 0; i < pl_tensor_elements(&t.g->tensors[p]); i++) {
            diff2 += (got[i] - want[i]) * (got[i] - want[i]);
            norm2 += want[i] * want[i];
        }
        double error = sqrt(diff2 / norm2);
        if (!(error < 1e-5))
            fprintf(stderr, "\n    %s: relative difference %.3g\n", name, error);
        CU_ASSERT_TRUE(error < 1e-5);
        free(want);
        checked++;
    }
    CU_ASSERT_EQUAL(checked, 4);
    release(&t);
}

/* 100 steps of 16 samples on the default data: the last ten losses average clearly below
 * the first ten. */
static void test_every_small_model_learns(void)
{
    for (int m = 0; m < PL_TEST_SMALL_MODELS; m++) {
        trained t;
        if (!open_batch(pl_test_small_models[m], NULL, 1, 16, &t)) {
            CU_FAIL("model did not open");
            continue;
        }
        void **inputs = pl_test_input_buffers(t.g, pl_test_session_buffer, t.s);
        double first = 0, last = 0;
        for (int step = 0; step < 100; step++) {
            pl_dataset_fill(t.data, PL_SPLIT_TRAIN, 0, (int64_t)step * t.g->batch_size,
                            t.g->batch_size, inputs);
            float loss;
            CU_ASSERT_EQUAL(pl_session_train_step(t.s, step + 1, 1, &loss, NULL), PL_OK);
            if (step < 10)
                first += loss / 10;
            if (step >= 90)
                last += loss / 10;
        }
        if (!(last < 0.9 * first))
            fprintf(stderr, "\n    %s: loss %.4f -> %.4f\n", pl_test_small_models[m], first,
                    last);
        CU_ASSERT_TRUE(last < 0.9 * first);
        free(inputs);
        release(&t);
    }
}

void pl_register_session_tests(void)
{
    static const pl_test_case cases[] = {
        {"gradients: mlp", test_gradients_mlp},
        {"gradients: cnn", test_gradients_cnn},
        {"gradients: inception (batch norm, concat, pools)", test_gradients_inception},
        {"gradients: resnet", test_gradients_resnet},
        {"gradients: lstm language model", test_gradients_lstm},
        {"gradients: seq2seq with attention", test_gradients_seq2seq},
        {"an LSTM weight's gradient: every step once, in blocks", test_lstm_weight_gradient_blocks},
        {"gradients: transformer", test_gradients_transformer},
        {"gradients: recommender (sparse embedding rows)", test_gradients_recommender},
        {"gradients: mixture of experts", test_gradients_moe},
        {"gradients: multi-head attention", test_gradients_attention},
        {"gradients: the PyTorch importers' ops", test_gradients_torch_ops},
        {"gradients: channel-first layer norm, stochastic depth, where", test_gradients_layer_ops},
        {"gradients: convolutions of 1 to 3 axes, transposed", test_gradients_convolutions},
        {"gradients: an LSTM on projected gate inputs", test_gradients_lstm_projected},
        {"gradients: the batch on axis 1", test_gradients_seq_first},
        {"gradients: the batch merged with the axes after it", test_gradients_windows},
        {"threads and micro-batches give the same gradients", test_threads_and_micro_batches_agree},
        {"every small model learns in 100 steps", test_every_small_model_learns},
        {NULL, NULL},
    };
    pl_test_add_suite("session", cases);
}
