/* Split ops (tensor parallelism): a plan that splits ops over devices computes what one
 * device computes. Products split by columns then rows, attention by heads with
 * sequence-split norms, convolutions by channels, a loss by classes, alone and inside
 * pipelines and replicas with the optimiser state replicated or sharded, for a hundred
 * steps; random split plans of every bundled model for a few. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "program.h"
#include "split_graph.h"
#include "rng.h"
#include "suites.h"
#include "test_util.h"
#include "training_check.h"

enum { BATCH = 8 };

/* Splits forward ops [from, to) of every replica r over devices first + r * stride ..
 * + k - 1, the loss only when `loss`. */
static void split_ops(pl_plan *plan, const pl_graph *g, int from, int to, int k, int first,
                      int stride, bool loss)
{
    int devices[PL_MAX_REPLICAS * PL_MAX_SPLIT];
    for (int r = 0; r < plan->replicas; r++)
        for (int s = 0; s < k; s++)
            devices[r * k + s] = first + r * stride + s;
    for (int o = from; o < to; o++)
        if (g->tensors[g->ops[o].outputs[0]].producer == o &&
            (loss || g->ops[o].outputs[0] != g->loss))
            CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, o, k, devices, NULL), PL_OK);
}

/* One device's losses and final state over `steps` whole steps. */
typedef struct reference {
    float *losses;
    float **params;
} reference;

/* Parameters are compared where summation order does not move them on one device
 * itself: where four micro-batches leave them as one batch does (attention's key bias has
 * no gradient, and what moves it is rounding), and not at all in a model with batch
 * statistics, where four micro-batches are another training. */
static reference one_device(const pl_graph *g, const pl_dataset *data, int steps)
{
    reference want = {malloc((size_t)steps * sizeof(float)),
                      calloc((size_t)g->n_tensors, sizeof(float *))};
    float *other = malloc((size_t)steps * sizeof(float));
    float **moved = calloc((size_t)g->n_tensors, sizeof(float *));
    CU_ASSERT_FATAL(want.losses && want.params && other && moved);
    pl_test_one_device(g, data, 1, steps, want.losses, want.params);
    bool comparable = pl_graph_allows_micro_batches(g, 4);
    for (int o = 0; o < g->n_forward_ops; o++) /* micro-batches change what they compute */
        comparable = comparable && !pl_op_info_of(g->ops[o].kind)->batch_statistics;
    if (comparable)
        pl_test_one_device(g, data, 4, steps, other, moved);
    for (int t = 0; t < g->n_tensors; t++) {
        int64_t n = want.params[t] ? pl_tensor_elements(&g->tensors[t]) : 0;
        bool kept = comparable;
        for (int64_t i = 0; kept && i < n; i++)
            kept = pl_test_close_to(moved[t][i], want.params[t][i]);
        if (!kept) {
            free(want.params[t]);
            want.params[t] = NULL;
        }
        free(moved[t]);
    }
    free(moved);
    free(other);
    return want;
}

static void reference_free(const pl_graph *g, reference *want)
{
    for (int t = 0; t < g->n_tensors; t++)
        free(want->params[t]);
    free(want->params);
    free(want->losses);
}

/* A hundred steps of: every op split over 2 devices, and over 4; two replicas, each split
 * over 2 devices, the state replicated and sharded; a two-stage 1F1B pipeline of two
 * micro-batches, each stage split over 2 devices. */
static void check_hundred_steps(const char *model, int widest, bool parameters, bool loss)
{
    enum { STEPS = 100 };
    pl_graph *g = pl_test_bundled_training_graph(model, BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    reference want = one_device(g, data, STEPS);
    for (int t = 0; !parameters && t < g->n_tensors; t++) {
        free(want.params[t]);
        want.params[t] = NULL;
    }
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1LL << 34, .threads = 1});
    char what[160];
    int n = g->n_forward_ops;

    for (int k = 2; k <= widest; k *= 2) {
        pl_plan *plan = pl_plan_new(g, NULL);
        split_ops(plan, g, 0, n, k, 0, 0, loss);
        snprintf(what, sizeof what, "%s split over %d devices", model, k);
        pl_test_check_plan(g, c, data, plan, STEPS, want.losses, want.params, what);
        pl_plan_free(plan);
    }

    pl_plan *replicated = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(replicated, 2, NULL), PL_OK);
    split_ops(replicated, g, 0, n, 2, 0, 2, loss);
    snprintf(what, sizeof what, "%s: 2 replicas split over 2 devices", model);
    pl_test_check_plan(g, c, data, replicated, STEPS, want.losses, want.params, what);
    replicated->shard_optimizer_state = true;
    pl_test_check_plan(g, c, data, replicated, STEPS, want.losses, want.params, what);
    pl_plan_free(replicated);

    pl_plan *pipeline = pl_test_pipeline_plan(g, 2, 2, PL_SCHEDULE_1F1B);
    int middle = 0;
    while (middle < n && pipeline->stage[middle] == 0)
        middle++;
    split_ops(pipeline, g, 0, middle, 2, 0, 0, loss);
    split_ops(pipeline, g, middle, n, 2, 2, 0, loss);
    snprintf(what, sizeof what, "%s: 2 stages each split over 2 devices", model);
    pl_test_check_plan(g, c, data, pipeline, STEPS, want.losses, want.params, what);
    pl_plan_free(pipeline);

    reference_free(g, &want);
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void test_products(void)
{
    check_hundred_steps("small/mlp-small.json", 4, true, false);
}
static void test_heads(void)
{
    check_hundred_steps("small/transformer-small.json", 2, true, false);
}
/* nanoGPT as tools/import-torch imports it: its fused query, key and value cut apart
 * right after the product, the head tied to the token embedding, dropout split with the
 * values it drops. Trained by SGD: under
 * Adam, whose steps are normalised, rounding in near-zero gradients makes whole steps,
 * and one device itself moves its loss by 1.5e-5 with four micro-batches. */
static void test_fused(void)
{
    check_hundred_steps("tests/models/nanogpt.json", 2, true, false);
}
/* The same with the loss split over the head's devices too (the vocabulary-parallel loss),
 * and over 4 devices as well. */
static void test_vocabulary(void)
{
    check_hundred_steps("tests/models/nanogpt.json", 4, true, true);
}

/* A GPT whose sizes do not divide among the shards: a vocabulary of 37 classes and a
 * hidden width of 18, its head and loss split by classes over 2 devices (19 and 18) and
 * over 4 (10, 9, 9 and 9), its products by columns of unequal parts. */
static void test_uneven(void)
{
    check_hundred_steps("tests/models/gpt-odd.json", 4, true, true);
}

/* The same model's head split by classes when the classes do not divide: its shards
 * hold 19 and 18 columns, or 10, 9, 9 and 9, of the weight and of the logits, and its
 * token embedding as many rows of the table (the vocabulary-parallel embedding), where
 * sizes that must divide had kept the head whole on one device and split the table by
 * its columns. */
static void test_uneven_head(void)
{
    pl_graph *g = pl_test_bundled_training_graph("tests/models/gpt-odd.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int n = g->n_forward_ops, *split = malloc((size_t)n * sizeof *split),
        *group = calloc((size_t)n, sizeof *group);
    CU_ASSERT_FATAL(split && group);
    static const int64_t want[2][4] = {{19, 18}, {10, 9, 9, 9}};
    for (int k = 2, row = 0; k <= 4; k *= 2, row++) {
        for (int o = 0; o < n; o++)
            split[o] = k;
        pl_split_graph *sg = pl_split_graph_new(g, split, group, NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(sg);
        for (int s = 0; s < k; s++) {
            char name[64];
            snprintf(name, sizeof name, "logits/w/tp%d", s);
            int w = pl_graph_find_tensor(sg->graph, name);
            CU_ASSERT_FATAL(w >= 0);
            CU_ASSERT_EQUAL(sg->graph->tensors[w].dims[1], want[row][s]);
            snprintf(name, sizeof name, "embed/table/tp%d", s); /* its rows: the vocabulary */
            int table = pl_graph_find_tensor(sg->graph, name);
            CU_ASSERT_FATAL(table >= 0);
            CU_ASSERT_EQUAL(sg->graph->tensors[table].dims[0], want[row][s]);
            snprintf(name, sizeof name, "logits/matmul/tp%d", s);
            int o = pl_graph_find_op(sg->graph, name);
            CU_ASSERT_FATAL(o >= 0);
            const pl_tensor *y = &sg->graph->tensors[sg->graph->ops[o].outputs[0]];
            CU_ASSERT_EQUAL(y->dims[y->rank - 1], want[row][s]);
        }
        pl_split_graph_free(sg);
    }
    free(split);
    free(group);
    pl_graph_free(g);
}

/* Transfers of the program that carry logits (the loss's first input) or a part of them
 * split by classes: their positions whole, their last axis the classes or a 1/k share. */
static int logits_transfers(const pl_graph *g, const pl_cluster *c, const pl_plan *plan, int k,
                            int64_t *bytes)
{
    const pl_op *loss = &g->ops[g->tensors[g->loss].producer];
    const pl_tensor *logits = &g->tensors[loss->inputs[0]];
    int64_t classes = logits->dims[logits->rank - 1];
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int found = 0;
    *bytes = 0;
    for (int i = 0; i < p->n_transfers; i++) {
        const pl_tensor *t = &p->shapes[p->transfers[i].tensor];
        int64_t last = t->dims[t->rank - 1];
        *bytes += pl_tensor_bytes(t);
        found += t->rank == logits->rank && (last == classes || last == classes / k) &&
                 pl_tensor_elements(t) / last == pl_tensor_elements(logits) / classes;
    }
    pl_program_free(p);
    return found;
}

/* nanoGPT with its loss split over the head's devices too (the vocabulary-parallel loss):
 * no logits cross devices where they did with the loss whole. Between the two, the
 * transfers of one step differ by the logits' shards gathered and their gradients sent
 * back ((k - 1) of [N, V/k] each way) against the per-position values ((k - 1) of [N, 1],
 * two each way). */
static void test_vocabulary_transfers(void)
{
    pl_graph *g = pl_test_bundled_training_graph("tests/models/nanogpt.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1LL << 34, .threads = 1});
    int loss = g->tensors[g->loss].producer, devices[PL_MAX_SPLIT] = {0, 1, 2, 3};
    const pl_tensor *logits = &g->tensors[g->ops[loss].inputs[0]];
    int64_t classes = logits->dims[logits->rank - 1];
    int64_t positions = pl_tensor_elements(logits) / classes;
    for (int k = 2; k <= 4; k *= 2) {
        pl_plan *plan = pl_plan_new(g, NULL);
        split_ops(plan, g, 0, g->n_forward_ops, k, 0, 0, false);
        int64_t gathered, parallel;
        CU_ASSERT_TRUE(logits_transfers(g, c, plan, k, &gathered) > 0);
        CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, loss, k, devices, NULL), PL_OK);
        CU_ASSERT_EQUAL(logits_transfers(g, c, plan, k, &parallel), 0);
        CU_ASSERT_EQUAL(gathered - parallel,
                        2 * (k - 1) * positions * (classes / k - 2) * (int64_t)sizeof(float));
        pl_plan_free(plan);
    }
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The losses only: a convolution's shards run its kernel at other sizes, whose sums go in
 * another order, and over a hundred steps the ReLUs that rounding flips move a few dozen
 * of the classifier's weights by up to 1e-4. */
static void test_channels(void)
{
    check_hundred_steps("small/cnn-small.json", 2, false, false);
}

/* Random plans where each op is split, or not, over 2 or 4 of 4 devices drawn at random,
 * in pipelines of random stages: three steps each, one device's losses. */
static void check_random(const char *model)
{
    enum { STEPS = 3, PLANS = 4 };
    pl_graph *g = pl_test_bundled_training_graph(model, BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1LL << 34, .threads = 1});
    for (int i = 0; i < PLANS; i++) {
        uint64_t seed = 31u * (uint64_t)i + 7;
        pl_plan *plan = pl_test_random_plan(g, 4, seed);
        plan->micro_batches = 1;
        for (int o = 0; o < g->n_forward_ops; o++) {
            uint64_t draw = pl_rng_u64(seed, 5000u + (uint64_t)o);
            if (draw % 3 == 0 || g->ops[o].outputs[0] == g->loss)
                continue;
            int k = draw % 2 ? 2 : 4, devices[PL_MAX_SPLIT];
            for (int s = 0; s < k; s++) /* a rotation of the four */
                devices[s] = (int)((draw / 7 + (uint64_t)s) % 4);
            CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, o, k, devices, NULL), PL_OK);
        }
        float want[STEPS];
        pl_test_one_device(g, data, 1, STEPS, want, NULL);
        char what[128];
        snprintf(what, sizeof what, "%s random split plan %d", model, i);
        pl_test_check_plan(g, c, data, plan, STEPS, want, NULL, what);
        pl_plan_free(plan);
    }
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void test_random_mlp(void)
{
    check_random("small/mlp-small.json");
}
static void test_random_cnn(void)
{
    check_random("small/cnn-small.json");
}
static void test_random_resnet(void)
{
    check_random("small/resnet-small.json");
}
static void test_random_inception(void)
{
    check_random("small/inception-small.json");
}
static void test_random_transformer(void)
{
    check_random("small/transformer-small.json");
}
static void test_random_lstm(void)
{
    check_random("small/lstm_lm-small.json");
}
static void test_random_seq2seq(void)
{
    check_random("small/seq2seq-small.json");
}
static void test_random_recommender(void)
{
    check_random("small/recommender-small.json");
}
static void test_random_moe(void)
{
    check_random("small/moe-small.json");
}
static void test_random_nanogpt(void)
{
    check_random("tests/models/nanogpt.json");
}
/* Dropout by rows of a batch on axis 1, and of a batch merged with the axes after it. */
static void test_random_seq_first(void)
{
    check_random("tests/models/seq-first.json");
}
static void test_random_windows(void)
{
    check_random("tests/models/windows.json");
}

void pl_register_split_tests(void)
{
    static const pl_test_case cases[] = {
        {"a hundred steps as one device: products by columns and rows", test_products},
        {"a hundred steps as one device: attention by heads", test_heads},
        {"a hundred steps as one device: convolutions by channels", test_channels},
        {"a hundred steps as one device: a fused query, key and value", test_fused},
        {"a hundred steps as one device: the loss split by classes", test_vocabulary},
        {"a hundred steps as one device: parts of unequal sizes", test_uneven},
        {"parts of unequal sizes: a head of 37 classes split over 2 and 4", test_uneven_head},
        {"the loss split by classes: no logits cross devices", test_vocabulary_transfers},
        {"random split plans: mlp", test_random_mlp},
        {"random split plans: cnn", test_random_cnn},
        {"random split plans: resnet", test_random_resnet},
        {"random split plans: inception", test_random_inception},
        {"random split plans: transformer", test_random_transformer},
        {"random split plans: lstm_lm", test_random_lstm},
        {"random split plans: seq2seq", test_random_seq2seq},
        {"random split plans: recommender", test_random_recommender},
        {"random split plans: moe", test_random_moe},
        {"random split plans: nanoGPT", test_random_nanogpt},
        {"random split plans: the batch on axis 1", test_random_seq_first},
        {"random split plans: the batch merged with other axes", test_random_windows},
        {NULL, NULL},
    };
    pl_test_add_suite("split", cases);
}
