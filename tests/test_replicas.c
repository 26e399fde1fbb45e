/* Replicas: a replicated plan computes what one device computes. Random replicated plans
 * (replicas that share devices, pipelines within replicas) give one device's losses with
 * as many micro-batches; data-parallel and hybrid plans keep one device's whole steps over
 * a hundred steps, and leave the same parameters. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "executor.h"
#include "program.h"
#include "rng.h"
#include "session.h"
#include "suites.h"
#include "test_util.h"
#include "training_check.h"

enum { BATCH = 8 };

static pl_cluster *native_cluster(int n)
{
    return pl_test_cluster((pl_test_devices){.n = n, .memory = 1LL << 34, .threads = 1});
}

/* A random plan, replicated 2 or 4 times where the batch allows, each replica's devices
 * drawn anew (so that replicas share some devices and not others). */
static pl_plan *random_replicated_plan(const pl_graph *g, int n_devices, uint64_t seed)
{
    pl_plan *plan = pl_test_random_plan(g, n_devices, seed);
    int replicas = pl_rng_u64(seed, 1000) % 2 ? 4 : 2;
    while (replicas > 1 && g->batch_size % (replicas * plan->micro_batches) != 0)
        plan->micro_batches /= 2;
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, replicas, NULL), PL_OK);
    for (int r = 1; r < replicas; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            if (pl_rng_u64(seed, 2000u + (uint64_t)(r * g->n_forward_ops + o)) % 2)
                pl_plan_replica(plan, r)[o] =
                    (int)(pl_rng_u64(seed, 9000u + (uint64_t)o) % (uint64_t)n_devices);
    return plan;
}

/* Random replicated plans on 2 to 4 devices, every other with its optimiser state
 * sharded: two steps each, one device's losses with replicas x micro-batches
 * micro-batches, or with whole steps when `whole` (a model without batch statistics). */
static void check_replicas(const char *model, bool whole)
{
    enum { STEPS = 2, PLANS = 6 };
    pl_graph *g = pl_test_bundled_training_graph(model, BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    for (int i = 0; i < PLANS; i++) {
        int n_devices = 2 + i % 3;
        pl_cluster *c = native_cluster(n_devices);
        pl_plan *plan = random_replicated_plan(g, n_devices, 77u * (uint64_t)i + 5);
        plan->shard_optimizer_state = i % 2 == 1;
        float want[STEPS];
        pl_test_one_device(g, data, whole ? 1 : plan->replicas * plan->micro_batches, STEPS, want,
                   NULL);
        char what[128];
        snprintf(what, sizeof what, "%s plan %d", model, i);
        pl_test_check_plan(g, c, data, plan, STEPS, want, NULL, what);
        pl_plan_free(plan);
        pl_cluster_free(c);
    }
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void check_random_replicas(const char *model)
{
    check_replicas(model, false);
}

static void test_random_mlp(void) { check_random_replicas("small/mlp-small.json"); }
static void test_random_lstm(void) { check_random_replicas("small/lstm_lm-small.json"); }
static void test_random_seq2seq(void) { check_random_replicas("small/seq2seq-small.json"); }
static void test_random_transformer(void) { check_random_replicas("small/transformer-small.json"); }
static void test_random_recommender(void) { check_random_replicas("small/recommender-small.json"); }
static void test_random_moe(void) { check_random_replicas("small/moe-small.json"); }
/* Slices gathered along the batch axis 1, and dropout's mask by each sample's place in
 * the whole step: one device's whole steps. */
static void test_random_seq_first(void) { check_replicas("tests/models/seq-first.json", true); }
/* Slices of a batch merged with the axes after it: each sample's windows go together, and
 * row dropout draws per window by its place in the whole step. */
static void test_random_windows(void) { check_replicas("tests/models/windows.json", true); }

/* Four replicas on four devices, and two replicas each a two-stage pipeline of two
 * micro-batches, each with its optimiser state replicated and sharded: a hundred steps of
 * one device's whole steps, and its parameters and state, those aside that one device
 * itself leaves elsewhere with four micro-batches (attention's key bias has no gradient:
 * what moves it is the summation order's rounding). */
static void check_hundred_steps(const char *model)
{
    enum { STEPS = 100 };
    pl_graph *g = pl_test_bundled_training_graph(model, BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    float want[STEPS], split[STEPS];
    float **params = calloc((size_t)g->n_tensors, sizeof *params);
    float **split_params = calloc((size_t)g->n_tensors, sizeof *split_params);
    pl_test_one_device(g, data, 1, STEPS, want, params);
    pl_test_one_device(g, data, 4, STEPS, split, split_params);
    for (int t = 0; t < g->n_tensors; t++) {
        int64_t n = params[t] ? pl_tensor_elements(&g->tensors[t]) : 0;
        bool kept = true;
        for (int64_t i = 0; i < n; i++)
            kept = kept && pl_test_close_to(split_params[t][i], params[t][i]);
        if (!kept) {
            free(params[t]);
            params[t] = NULL;
        }
        free(split_params[t]);
    }
    free(split_params);
    pl_cluster *c = native_cluster(4);

    pl_plan *data_parallel = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(data_parallel, 4, NULL), PL_OK);
    for (int r = 0; r < 4; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(data_parallel, r)[o] = r;
    pl_test_check_plan(g, c, data, data_parallel, STEPS, want, params, model);
    data_parallel->shard_optimizer_state = true;
    pl_test_check_plan(g, c, data, data_parallel, STEPS, want, params, model);

    pl_plan *hybrid = pl_test_pipeline_plan(g, 2, 2, PL_SCHEDULE_1F1B);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(hybrid, 2, NULL), PL_OK);
    for (int o = 0; o < g->n_forward_ops; o++)
        pl_plan_replica(hybrid, 1)[o] = 2 + hybrid->device[o];
    pl_test_check_plan(g, c, data, hybrid, STEPS, want, params, model);
    hybrid->shard_optimizer_state = true;
    pl_test_check_plan(g, c, data, hybrid, STEPS, want, params, model);

    for (int t = 0; t < g->n_tensors; t++)
        free(params[t]);
    free(params);
    pl_plan_free(data_parallel);
    pl_plan_free(hybrid);
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void test_hundred_mlp(void) { check_hundred_steps("small/mlp-small.json"); }
static void test_hundred_transformer(void) { check_hundred_steps("small/transformer-small.json"); }

/* Weights written after the plan is set, before the first step (train --weights, --resume)
 * reach every replica: two replicas train as one device from the same halved weights. */
static void test_weights_after_plan(void)
{
    enum { STEPS = 3 };
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    pl_cluster *c = native_cluster(2);
    pl_session *s = pl_session_new(g, 1, NULL);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_FATAL(data && s && ex);
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 2, NULL), PL_OK);
    for (int o = 0; o < g->n_forward_ops; o++)
        pl_plan_replica(plan, 1)[o] = 1;
    pl_fit fit;
    CU_ASSERT_EQUAL_FATAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
    for (int t = 0; t < g->n_tensors; t++) /* after the plan: as a weights file would */
        if (g->tensors[t].kind == PL_TENSOR_PARAM) {
            float *mine = pl_session_data(s, t), *theirs = pl_executor_data(ex, t);
            for (int64_t i = 0; i < pl_tensor_elements(&g->tensors[t]); i++)
                mine[i] = theirs[i] = 0.5f * theirs[i];
        }
    pl_test_fill_first_batch(g, data, pl_test_session_buffer, s);
    pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
    for (int step = 1; step <= STEPS; step++) {
        float want = NAN, got = NAN;
        CU_ASSERT_EQUAL(pl_session_train_step(s, step, 2, &want, NULL), PL_OK);
        CU_ASSERT_EQUAL(pl_executor_step(ex, step, &got, NULL), PL_OK);
        CU_ASSERT(pl_test_close_to(got, want));
    }
    pl_plan_free(plan);
    pl_executor_free(ex);
    pl_session_free(s);
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

/* A data-parallel plan of mlp-small: replicas on `devices`, and its program. */
static pl_program *data_parallel(const pl_graph *g, const pl_cluster *c, const int *devices,
                                 int replicas)
{
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, replicas, NULL), PL_OK);
    for (int r = 0; r < replicas; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(plan, r)[o] = devices[r];
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_plan_free(plan);
    return p;
}

/* mlp-small's gradients are one bucket: packed on each node, a ring over the three nodes
 * (replicas 2 and 3 share device 2: one copy) of n(n - 1) reduces and as many passes,
 * unpacked. */
static void test_ring_tasks(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = native_cluster(4);
    pl_program *p = data_parallel(g, c, (const int[]){0, 1, 2, 2}, 4);
    int params = 0, kept = 0, reduces = 0, copies = 0, updates = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        params += g->tensors[t].kind == PL_TENSOR_PARAM && !g->tensors[t].frozen;
        kept += g->tensors[t].kind == PL_TENSOR_PARAM || g->tensors[t].kind == PL_TENSOR_STATE;
    }
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        reduces += task->kind == PL_TASK_REDUCE;
        copies += task->kind == PL_TASK_COPY;
        updates += task->kind == PL_TASK_OP && g->ops[task->op].phase == PL_PHASE_UPDATE;
    }
    CU_ASSERT_EQUAL(updates, 3 * params);
    CU_ASSERT_EQUAL(reduces, 3 * 2);               /* n(n - 1), n = 3 */
    CU_ASSERT_EQUAL(copies, 3 * 2 + 2 * 3 * params); /* passes; packs and unpacks */
    CU_ASSERT_EQUAL(p->n_copies, 1 + 2 * kept);         /* the first is the tensor's own */
    pl_program_free(p);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* On paced-8 (two groups of four, slow links between), eight replicas sum hierarchically:
 * across the slow links go 2(k - 1)/k of the gradients with k = 2 groups, once each way:
 * twice their bytes, not a ring's 2 x 2(n - 1)/n. */
static void test_hierarchy(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = pl_test_bundled_cluster("paced-8.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_program *p = data_parallel(g, c, (const int[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    int64_t gradients = 0, slow = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_PARAM && !g->tensors[t].frozen)
            gradients += pl_tensor_bytes(&g->tensors[t]);
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        if (task->kind == PL_TASK_OP)
            continue;
        const pl_transfer *x = &p->transfers[task->transfer];
        if (x->from != x->to && pl_cluster_link(c, x->from, x->to)->bytes_per_second < 1e9)
            slow += pl_task_bytes(p, task);
    }
    CU_ASSERT_EQUAL(slow, 2 * gradients);
    pl_program_free(p);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* ... and computes what one device does, on the transformer's many gradients. */
static void test_hierarchy_losses(void)
{
    enum { STEPS = 3 };
    pl_graph *g = pl_test_bundled_training_graph("small/transformer-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = pl_test_bundled_cluster("paced-8.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    float want[STEPS];
    pl_test_one_device(g, data, 8, STEPS, want, NULL);
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 8, NULL), PL_OK);
    for (int r = 0; r < 8; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(plan, r)[o] = r;
    pl_test_check_plan(g, c, data, plan, STEPS, want, NULL, "transformer on paced-8");
    plan->shard_optimizer_state = true;
    pl_test_check_plan(g, c, data, plan, STEPS, want, NULL, "transformer on paced-8");
    pl_plan_free(plan);
    pl_dataset_free(data);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* wide-layer's 4 MiB gradient is summed in place. Sharded over three copies (replicas 2
 * and 3 share a device), each updates a third of it: one device's losses, parameters and
 * optimiser state over five steps; and each device holds a third of the velocity. */
static void test_sharded_in_place(void)
{
    enum { STEPS = 5 };
    pl_graph *g = pl_test_bundled_training_graph("bench/wide-layer.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    float want[STEPS];
    float **values = calloc((size_t)g->n_tensors, sizeof *values);
    pl_test_one_device(g, data, 4, STEPS, want, values);
    pl_cluster *c = native_cluster(3);
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 4, NULL), PL_OK);
    for (int r = 0; r < 4; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(plan, r)[o] = r < 2 ? r : 2;
    pl_program *whole = pl_program_new(g, c, plan, NULL);
    plan->shard_optimizer_state = true;
    pl_program *sharded = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_FATAL(whole && sharded);
    int64_t velocity = 0, saved = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_STATE && g->tensors[t].param >= 0 &&
            strstr(g->tensors[t].name, "velocity"))
            velocity += pl_tensor_bytes(&g->tensors[t]);
    for (int d = 0; d < 3; d++) {
        int64_t less = whole->memory[d].resident - sharded->memory[d].resident;
        CU_ASSERT(less >= velocity * 2 / 3 - 256 && less <= velocity * 2 / 3 + 256);
        saved += less;
    }
    CU_ASSERT(saved >= 2 * velocity - 512 && saved <= 2 * velocity + 512);
    int trained = 0;
    for (int t = 0; t < g->n_tensors; t++)
        trained += g->tensors[t].kind == PL_TENSOR_PARAM && !g->tensors[t].frozen;
    CU_ASSERT_EQUAL(sharded->n_shards, 3 * trained); /* an update per copy */
    pl_test_check_plan(g, c, data, plan, STEPS, want, values, "wide-layer sharded in place");
    for (int t = 0; t < g->n_tensors; t++)
        free(values[t]);
    free(values);
    pl_program_free(whole);
    pl_program_free(sharded);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

void pl_register_replica_tests(void)
{
    static const pl_test_case cases[] = {
        {"random replicated plans: mlp", test_random_mlp},
        {"random replicated plans: lstm_lm", test_random_lstm},
        {"random replicated plans: seq2seq", test_random_seq2seq},
        {"random replicated plans: transformer", test_random_transformer},
        {"random replicated plans: recommender", test_random_recommender},
        {"random replicated plans: moe", test_random_moe},
        {"random replicated plans: the batch on axis 1", test_random_seq_first},
        {"random replicated plans: the batch merged with other axes", test_random_windows},
        {"a hundred steps as one device: mlp", test_hundred_mlp},
        {"a hundred steps as one device: transformer", test_hundred_transformer},
        {"weights set after the plan reach every replica", test_weights_after_plan},
        {"the ring's tasks", test_ring_tasks},
        {"a hierarchy over slow links", test_hierarchy},
        {"a hierarchy computes what one device does", test_hierarchy_losses},
        {"a sharded optimiser state in place", test_sharded_in_place},
        {NULL, NULL},
    };
    pl_test_add_suite("replicas", cases);
}
