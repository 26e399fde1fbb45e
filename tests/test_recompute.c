/* Activation recomputation (recompute.h) and memory by lifetime (program.h): a recomputing
 * plan trains as the same plan without it does, over a hundred steps, on one device, over
 * a pipeline, with replicas and sharded state, and with split ops; it needs less memory
 * and does more work; clones come right before the backward op that first reads them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data.h"
#include "executor.h"
#include "graph_build.h"
#include "program.h"
#include "recompute.h"
#include "suites.h"
#include "test_util.h"

enum { BATCH = 8, STEPS = 100 };

static pl_cluster *native_cluster(int n)
{
    return pl_test_cluster((pl_test_devices){.n = n, .memory = 1LL << 34, .threads = 1});
}

static bool close_to(float got, float want)
{
    return fabsf(got - want) <= 1e-5f * fmaxf(fabsf(want), 1.0f);
}

/* `steps` losses of `plan` on a fresh executor. */
static void losses_of(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                      float *losses)
{
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
    pl_fit fit;
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_executor_set_plan(ex, plan, &fit, &err) != PL_OK)
        fprintf(stderr, "\n    %s", err.text);
    CU_ASSERT_TRUE_FATAL(pl_executor_program(ex) != NULL);
    for (int step = 1; step <= STEPS; step++)
        CU_ASSERT_EQUAL(pl_executor_step(ex, step, &losses[step - 1], NULL), PL_OK);
    pl_executor_free(ex);
    pl_dataset_free(data);
}

/* Marks the forward ops of `stage` (-1: every stage) for recomputation. */
static void recompute_stage(pl_plan *plan, int stage)
{
    for (int o = 0; o < plan->n_ops; o++)
        plan->recompute[o] = stage < 0 || plan->stage[o] == stage;
}

/* The plan as it is marked trains as the plan without recomputation does, step for step. */
static void check_same_losses(const pl_graph *g, const pl_cluster *c, pl_plan *plan,
                              const char *what)
{
    float plain[STEPS], recomputed[STEPS];
    bool *marks = malloc((size_t)plan->n_ops * sizeof *marks);
    memcpy(marks, plan->recompute, (size_t)plan->n_ops * sizeof *marks);
    memset(plan->recompute, 0, (size_t)plan->n_ops * sizeof *marks);
    losses_of(g, c, plan, plain);
    memcpy(plan->recompute, marks, (size_t)plan->n_ops * sizeof *marks);
    free(marks);
    CU_ASSERT_TRUE(pl_plan_rewrites_graph(plan));
    losses_of(g, c, plan, recomputed);
    int wrong = 0;
    for (int step = 0; step < STEPS; step++)
        if (!close_to(recomputed[step], plain[step]) && wrong++ == 0)
            fprintf(stderr, "\n    %s step %d: loss %.9g, without recomputation %.9g", what,
                    step + 1, (double)recomputed[step], (double)plain[step]);
    CU_ASSERT_EQUAL(wrong, 0);
}

static void test_one_device(void)
{
    const char *models[] = {"small/mlp-small.json", "small/transformer-small.json",
                            "small/resnet-small.json"};
    pl_cluster *c = native_cluster(1);
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        pl_graph *g = pl_test_bundled_training_graph(models[i], BATCH);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        pl_plan *plan = pl_plan_new(g, NULL);
        recompute_stage(plan, -1);
        check_same_losses(g, c, plan, models[i]);
        pl_plan_free(plan);
        pl_graph_free(g);
    }
    pl_cluster_free(c);
}

/* A 1F1B pipeline of two stages and four micro-batches, the first stage recomputed. */
static void test_pipeline(void)
{
    pl_cluster *c = native_cluster(2);
    pl_graph *g = pl_test_bundled_training_graph("small/transformer-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 4, PL_SCHEDULE_1F1B);
    recompute_stage(plan, 0);
    check_same_losses(g, c, plan, "transformer, stage 0 recomputed");
    plan->defer_weight_gradients = true;
    recompute_stage(plan, 1);
    check_same_losses(g, c, plan, "transformer, stage 1 recomputed, deferred");
    pl_plan_free(plan);
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* Two replicas with sharded optimiser state, each over two devices, two micro-batches. */
static void test_replicas(void)
{
    pl_cluster *c = native_cluster(4);
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 2, PL_SCHEDULE_GPIPE);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 2, NULL), PL_OK);
    for (int o = 0; o < g->n_forward_ops; o++)
        pl_plan_replica(plan, 1)[o] = 2 + plan->stage[o];
    plan->shard_optimizer_state = true;
    recompute_stage(plan, -1);
    check_same_losses(g, c, plan, "mlp, 2 replicas, sharded state");
    pl_plan_free(plan);
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* The bundled mlp with its two hidden layers split over two devices (column then row),
 * the first layer recomputed: the all-gather and its inputs are computed again. */
static void test_split(void)
{
    pl_cluster *c = native_cluster(2);
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_plan *plan = pl_plan_new(g, NULL);
    int devices[2] = {0, 1}, split = 0;
    for (int o = 0; o < g->n_forward_ops; o++)
        if (!strncmp(g->ops[o].name, "fc", 2)) {
            CU_ASSERT_EQUAL(pl_plan_split(plan, o, 2, devices, NULL), PL_OK);
            split++;
        }
    CU_ASSERT(split >= 4);
    for (int o = 0; o < g->n_forward_ops; o++)
        plan->recompute[o] = !strncmp(g->ops[o].name, "fc1", 3);
    check_same_losses(g, c, plan, "mlp, split, fc1 recomputed");
    pl_plan_free(plan);
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* Dropout recomputed draws the forward pass's mask: the same losses. */
static void test_dropout(void)
{
    pl_graph *g = pl_test_dropout_model();
    pl_cluster *c = native_cluster(1);
    pl_plan *plan = pl_test_pipeline_plan(g, 1, 2, PL_SCHEDULE_GPIPE);
    recompute_stage(plan, -1);
    check_same_losses(g, c, plan, "dropout");
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The graph a recomputing plan runs: a clone per recomputed op whose output the backward
 * pass reads, a backward op of its forward op's group, right before the first op that
 * reads it (clones aside); no backward op reads a recomputed output itself; batch norm,
 * which updates its running averages, is kept. */
static void test_clones(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_plan *plan = pl_plan_new(g, NULL);
    recompute_stage(plan, -1);
    pl_split_graph *split;
    pl_plan *restated;
    CU_ASSERT_EQUAL_FATAL(pl_plan_split_graph(plan, g, &split, &restated, NULL), PL_OK);
    const pl_graph *r = split->graph;
    CU_ASSERT_EQUAL(r->n_forward_ops, g->n_forward_ops);
    int clones = 0, norms = 0;
    for (int o = r->n_forward_ops; o < r->n_ops; o++) {
        const pl_op *op = &r->ops[o];
        for (int j = 0; j < op->n_inputs; j++) {
            int producer = r->tensors[op->inputs[j]].producer;
            CU_ASSERT(producer < 0 || producer >= r->n_forward_ops ||
                      !pl_recompute_allowed(r, producer));
        }
        size_t len = strlen(op->name);
        if (len < 10 || strcmp(op->name + len - 10, "/recompute") != 0)
            continue;
        clones++;
        CU_ASSERT_EQUAL(op->phase, PL_PHASE_BACKWARD);
        CU_ASSERT(op->group >= 0 && op->group < r->n_forward_ops);
        CU_ASSERT_EQUAL(op->kind, r->ops[op->group].kind);
        norms += op->kind == PL_OP_BATCH_NORM;
        int first = -1; /* the first op reading it */
        for (int q = o + 1; q < r->n_ops && first < 0; q++)
            for (int j = 0; j < r->ops[q].n_inputs; j++)
                if (r->tensors[r->ops[q].inputs[j]].producer == o)
                    first = q;
        CU_ASSERT_FATAL(first > o);
        for (int q = o + 1; q < first; q++) {
            size_t n = strlen(r->ops[q].name);
            CU_ASSERT(n >= 10 && strcmp(r->ops[q].name + n - 10, "/recompute") == 0);
        }
    }
    CU_ASSERT(clones > 10);
    CU_ASSERT_EQUAL(norms, 0);
    pl_split_graph_free(split);
    pl_plan_free(restated);
    pl_plan_free(plan);
    pl_graph_free(g);
}

/* The largest device's memory and the step's FLOPs under `plan`. */
static void measure(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                    int64_t *peak, double *flops, int *tasks)
{
    pl_error err;
    pl_error_init(&err, NULL);
    pl_program *p = pl_program_new(g, c, plan, &err);
    if (!p)
        fprintf(stderr, "\n    %s", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    *peak = 0;
    *flops = 0;
    for (int d = 0; d < p->n_devices; d++)
        if (p->memory[d].total > *peak)
            *peak = p->memory[d].total;
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].kind == PL_TASK_OP)
            *flops += pl_task_flops(p, &p->tasks[i]);
    *tasks = p->n_tasks;
    pl_program_free(p);
}

/* Recomputation trades work for memory: at batch 1024 the mlp's activations dominate; a
 * recomputing plan needs less memory on its device and computes the forward pass of the
 * recomputed layers again. Memory by lifetime alone keeps less than every activation of
 * the step: a plan that does not fit its device with each value in slots of its own is
 * packed so, and fits. */
static void test_trade(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(pl_graph_set_batch(g, 1024, NULL), PL_OK);
    pl_cluster *c = native_cluster(2);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 2, PL_SCHEDULE_1F1B);
    int64_t peak, recomputing_peak;
    double flops, recomputing_flops;
    int tasks, recomputing_tasks;
    measure(g, c, plan, &peak, &flops, &tasks);
    recompute_stage(plan, -1);
    measure(g, c, plan, &recomputing_peak, &recomputing_flops, &recomputing_tasks);
    CU_ASSERT(recomputing_peak < peak);
    CU_ASSERT(recomputing_flops > flops);
    CU_ASSERT(recomputing_tasks > tasks);
    pl_graph_stats stats;
    pl_graph_stats_compute(g, &stats);
    pl_plan *one = pl_plan_new(g, NULL);
    measure(g, c, one, &peak, &flops, &tasks);
    int64_t slots = peak;
    pl_cluster *small = pl_test_cluster((pl_test_devices){.n = 1, .memory = slots - 1,
                                                          .threads = 1});
    pl_program *packed = pl_program_new(g, small, one, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(packed);
    CU_ASSERT_EQUAL(packed->oom_device, -1);
    CU_ASSERT(packed->memory[0].total < stats.activation_bytes + stats.param_bytes +
                                            stats.state_bytes + stats.input_bytes);
    pl_program_free(packed);
    pl_cluster_free(small);
    pl_plan_free(one);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Each buffer's writer (its first) and its readers, from the program's references:
 * readers[first[b] .. first[b + 1]). */
typedef struct uses {
    int *writer, *first, *readers;
} uses;

static uses uses_of(const pl_program *p)
{
    uses u = {malloc((size_t)p->n_buffers * sizeof(int)),
              calloc((size_t)p->n_buffers + 1, sizeof(int)), NULL};
    int n_refs = 0;
    for (int pass = 0; pass < 2; pass++) {
        int *fill = pass ? calloc((size_t)p->n_buffers, sizeof(int)) : NULL;
        for (int b = 0; b < p->n_buffers; b++)
            u.writer[b] = -1;
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_task *task = &p->tasks[i];
            int n_in = task->kind == PL_TASK_OP ? p->graph->ops[task->op].n_inputs : 1;
            int n_out = task->kind == PL_TASK_OP ? p->graph->ops[task->op].n_outputs : 1;
            for (int j = 0; j < n_in + n_out; j++) {
                int buf = p->refs[task->first_ref + j];
                if (j >= n_in && u.writer[buf] < 0)
                    u.writer[buf] = i;
                if (j < n_in && !pass)
                    u.first[buf + 1]++;
                if (j < n_in && pass)
                    u.readers[u.first[buf] + fill[buf]++] = i;
            }
        }
        if (!pass) {
            for (int buf = 0; buf < p->n_buffers; buf++)
                u.first[buf + 1] += u.first[buf];
            n_refs = u.first[p->n_buffers];
            u.readers = malloc((size_t)n_refs * sizeof(int) + 1);
        }
        free(fill);
    }
    return u;
}

static void uses_free(uses *u)
{
    free(u->writer);
    free(u->first);
    free(u->readers);
}

/* Marks the tasks that task `to` depends on, directly or not (and itself). */
static void mark_ancestors(const pl_program *p, const int *pred_first, const int *preds,
                           int to, int *stack, char *seen)
{
    memset(seen, 0, (size_t)p->n_tasks);
    int n = 0;
    stack[n++] = to;
    seen[to] = 1;
    while (n > 0) {
        int i = stack[--n];
        for (int e = pred_first[i]; e < pred_first[i + 1]; e++)
            if (!seen[preds[e]]) {
                seen[preds[e]] = 1;
                stack[n++] = preds[e];
            }
    }
}

/* Arena buffers that share bytes never meet: the later one's writer comes after every
 * task using the earlier one in program order, and depends on them, so any run keeps
 * them apart. Counts the pairs sharing bytes, and those not so ordered. */
static void check_shared_bytes(const pl_program *p, int *shared, int *unordered)
{
    uses u = uses_of(p);
    int *pred_first = calloc((size_t)p->n_tasks + 1, sizeof(int));
    int *preds = malloc(((size_t)p->tasks[p->n_tasks - 1].first_succ +
                         (size_t)p->tasks[p->n_tasks - 1].n_succ + 1) * sizeof(int));
    int *fill = calloc((size_t)p->n_tasks, sizeof(int));
    int *stack = malloc((size_t)p->n_tasks * sizeof(int));
    char *seen = malloc((size_t)p->n_tasks);
    for (int i = 0; i < p->n_tasks; i++)
        for (int e = 0; e < p->tasks[i].n_succ; e++)
            pred_first[p->succ[p->tasks[i].first_succ + e] + 1]++;
    for (int i = 0; i < p->n_tasks; i++)
        pred_first[i + 1] += pred_first[i];
    for (int i = 0; i < p->n_tasks; i++)
        for (int e = 0; e < p->tasks[i].n_succ; e++) {
            int to = p->succ[p->tasks[i].first_succ + e];
            preds[pred_first[to] + fill[to]++] = i;
        }
    for (int b = 0; b < p->n_buffers; b++) {
        const pl_buffer *y = &p->buffers[b];
        if (y->device < 0 || u.writer[b] < 0)
            continue;
        mark_ancestors(p, pred_first, preds, u.writer[b], stack, seen);
        for (int a = 0; a < p->n_buffers; a++) {
            const pl_buffer *x = &p->buffers[a];
            if (a == b || x->device != y->device || u.writer[a] < 0 ||
                u.writer[a] >= u.writer[b] || x->offset >= y->offset + y->bytes ||
                y->offset >= x->offset + x->bytes)
                continue;
            (*shared)++;
            *unordered += !seen[u.writer[a]];
            for (int r = u.first[a]; r < u.first[a + 1]; r++)
                *unordered += !(u.readers[r] < u.writer[b] && seen[u.readers[r]]);
        }
    }
    uses_free(&u);
    free(pred_first);
    free(preds);
    free(fill);
    free(stack);
    free(seen);
}

/* Random pipelines of recomputing plans on three devices. */
static void test_shared_bytes_ordered(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/transformer-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = native_cluster(3);
    int shared = 0, unordered = 0;
    for (int seed = 0; seed < 4; seed++) {
        pl_plan *plan = pl_test_random_plan(g, 3, 31u * (uint64_t)seed + 7);
        recompute_stage(plan, seed % 2 ? -1 : 0);
        pl_program *p = pl_program_new(g, c, plan, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        check_shared_bytes(p, &shared, &unordered);
        pl_program_free(p);
        pl_plan_free(plan);
    }
    CU_ASSERT(shared > 100);
    CU_ASSERT_EQUAL(unordered, 0);
    pl_cluster_free(c);
    pl_graph_free(g);
}

void pl_register_recompute_tests(void)
{
    static const pl_test_case cases[] = {
        {"clones come right before their first reader", test_clones},
        {"recomputation trades work for memory", test_trade},
        {"buffers sharing bytes are ordered", test_shared_bytes_ordered},
        {"one device keeps its losses", test_one_device},
        {"a pipeline keeps its losses", test_pipeline},
        {"replicas with sharded state keep their losses", test_replicas},
        {"split ops keep their losses", test_split},
        {"dropout keeps its masks", test_dropout},
        {NULL, NULL},
    };
    pl_test_add_suite("recompute", cases);
}
