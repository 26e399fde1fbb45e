/* The placement agent: the policy's gradient against central differences, the obvious
 * answer on two heavy independent branches, learning (the mean sampled reward rises),
 * imitation, folding a pipeline, refining a plan, a checkpointed run resumed against an
 * uninterrupted one, and the memo of simulated plans. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_impl.h"
#include "load.h"
#include "policy_impl.h"
#include "rng.h"
#include "suites.h"
#include "tensor_file.h"
#include "test_util.h"

/* x -> two branches (matmul 64x512, relu, matmul 512x10), added, softmax cross-entropy:
 * 8 forward ops, the branches' matmuls dominating. */
static pl_graph *two_branches(void)
{
    pl_graph *g = pl_test_training_model(
        "[64]",
        "{\"name\": \"w1\", \"shape\": [64, 512], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"v1\", \"shape\": [512, 10], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w2\", \"shape\": [64, 512], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"v2\", \"shape\": [512, 10], \"init\": {\"kind\": \"zeros\"}}",
        "{\"name\": \"a1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"h1\"]},"
        "{\"name\": \"r1\", \"op\": \"relu\", \"inputs\": [\"h1\"], \"outputs\": [\"g1\"]},"
        "{\"name\": \"b1\", \"op\": \"matmul\", \"inputs\": [\"g1\", \"v1\"], \"outputs\": [\"o1\"]},"
        "{\"name\": \"a2\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w2\"], \"outputs\": [\"h2\"]},"
        "{\"name\": \"r2\", \"op\": \"relu\", \"inputs\": [\"h2\"], \"outputs\": [\"g2\"]},"
        "{\"name\": \"b2\", \"op\": \"matmul\", \"inputs\": [\"g2\", \"v2\"], \"outputs\": [\"o2\"]},"
        "{\"name\": \"sum\", \"op\": \"add\", \"inputs\": [\"o1\", \"o2\"], \"outputs\": [\"logits\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
    CU_ASSERT_EQUAL(g->n_forward_ops, 8);
    return g;
}

/* Two devices of 1 GiB, native links. */
static pl_cluster *two_devices(void)
{
    return pl_test_cluster((pl_test_devices){.n = 2, .memory = 1073741824});
}

/* An op costs 2 us plus 1 ns per FLOP; a copy 5 us plus 0.1 ns per byte. */
static pl_cost_model flop_costs(void)
{
    return pl_test_costs((pl_op_cost){2e-6, 1e-9, 0, 1, 0, 0}, 5e-6, 1e-10, 1e-6);
}

/* A policy for g on c with the FLOP costs' device features. */
static pl_status policy_init(pl_policy *p, const pl_graph *g, const pl_cluster *c,
                             const pl_agent_options *o)
{
    pl_cost_model m = flop_costs();
    pl_status status = pl_policy_init(p, g, c, &m, o, NULL);
    pl_cost_model_clear(&m);
    return status;
}

/* Every weight's gradient of the objective against central differences. */
static void test_gradient(void)
{
    pl_graph *g = two_branches();
    pl_cluster *c = two_devices();
    pl_policy p;
    pl_agent_options o;
    pl_agent_options_default(&o);
    o.hidden = 5, o.rounds = 2, o.groups = 3, o.seed = 7;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    /* move the biases off zero so that every term is exercised */
    for (int i = 0; i < p.layout.n; i++)
        p.params[i] += 0.1 * pl_rng_normal(99, (uint64_t)i);
    enum { N = 3 };
    pl_action *actions = pl_actions_new(&p, N);
    CU_ASSERT_PTR_NOT_NULL_FATAL(actions);
    CU_ASSERT_EQUAL(pl_policy_sample(&p, 5, 0, actions, N, NULL), PL_OK);
    actions[0].group[0] = 2; /* no group may be empty in every sample by chance alone */
    for (int k = 0; k < p.groups; k++) { /* splits and recomputation, which are rare */
        actions[1].split[k] = 1; /* the two devices share their links: a run of 2 */
        actions[2].recompute[k] = 1;
    }
    double weight[N] = {0.7, -0.4, 0.25}, beta = 0.3, j0;
    double *grad = calloc((size_t)p.layout.n, sizeof *grad);
    CU_ASSERT_EQUAL(pl_policy_objective(&p, actions, weight, N, beta, &j0, NULL, NULL, grad, NULL),
                    PL_OK);
    int bad = 0, nonzero = 0;
    for (int i = 0; i < p.layout.n; i++) {
        double keep = p.params[i], plus, minus, h = 1e-5;
        p.params[i] = keep + h;
        pl_policy_objective(&p, actions, weight, N, beta, &plus, NULL, NULL, NULL, NULL);
        p.params[i] = keep - h;
        pl_policy_objective(&p, actions, weight, N, beta, &minus, NULL, NULL, NULL, NULL);
        p.params[i] = keep;
        double numeric = (plus - minus) / (2 * h);
        nonzero += fabs(grad[i]) > 1e-6;
        if (fabs(numeric - grad[i]) > 1e-6 + 1e-4 * fabs(numeric)) {
            if (bad++ < 5)
                fprintf(stderr, "\n    weight %d: analytic %.9g, numeric %.9g", i, grad[i],
                        numeric);
        }
    }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(nonzero > p.layout.n / 2);
    free(grad);
    pl_actions_free(actions, N);
    pl_policy_clear(&p);
    pl_cluster_free(c);
    pl_graph_free(g);
}

static pl_agent_options small_options(uint64_t seed)
{
    pl_agent_options o;
    pl_agent_options_default(&o);
    o.seed = seed;
    o.samples = 16;
    o.groups = 4;
    o.hidden = 16;
    return o;
}

/* The two-branch graph on two devices, and an agent on it (the agent borrows the rest). */
typedef struct branches_agent {
    pl_graph *g;
    pl_cluster *c;
    pl_cost_model m;
    pl_agent_options o;
    pl_agent *a;
} branches_agent;

static void branches_agent_init(branches_agent *t, uint64_t seed)
{
    t->g = two_branches();
    t->c = two_devices();
    t->m = flop_costs();
    t->o = small_options(seed);
    t->a = pl_agent_new(t->g, t->c, &t->m, &t->o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->a);
}

static void branches_agent_free(branches_agent *t)
{
    pl_agent_free(t->a);
    pl_cluster_free(t->c);
    pl_graph_free(t->g);
}

/* A plan of g with its ops on devices 0, 1, 0, 1, ... */
static pl_plan *alternating_plan(const pl_graph *g)
{
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    for (int i = 0; i < plan->n_ops; i++)
        plan->device[i] = i % 2;
    return plan;
}

/* Two heavy branches on two devices: one branch per device, and the policy learns it. */
static void test_obvious_answer(void)
{
    branches_agent t;
    branches_agent_init(&t, 1);
    enum { ITERATIONS = 150 };
    for (int i = 0; i < ITERATIONS; i++)
        CU_ASSERT_EQUAL_FATAL(pl_agent_iterate(t.a, NULL, NULL), PL_OK);
    pl_plan *best = pl_agent_best_plan(t.a, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(best);
    /* the heavy matmuls apart (the light ones may go either way at the same step) */
    int a1 = pl_graph_find_op(t.g, "a1"), a2 = pl_graph_find_op(t.g, "a2");
    CU_ASSERT_NOT_EQUAL(best->device[a1], best->device[a2]);
    CU_ASSERT(best->provenance.predicted_seconds < 0.7 * t.a->reference);
    /* learning, not luck: the mean sampled reward of the last iterations beats the first */
    const pl_agent_iteration *curve = pl_agent_curve(t.a);
    double first = 0, last = 0;
    for (int i = 0; i < 10; i++) {
        first += curve[i].mean_reward / 10;
        last += curve[ITERATIONS - 10 + i].mean_reward / 10;
    }
    CU_ASSERT(last > first + 0.05);
    if (!(last > first + 0.05))
        fprintf(stderr, "\n    mean reward: first %.4f, last %.4f", first, last);
    pl_plan_free(best);
    branches_agent_free(&t);
}

/* The best plans are distinct: the same placement with its two identical devices swapped
 * simulates to the same step and is not kept twice; another step is. */
static void test_best_distinct(void)
{
    branches_agent t;
    branches_agent_init(&t, 1);
    pl_plan *plan = alternating_plan(t.g);
    int before = pl_agent_best_count(t.a);
    CU_ASSERT_EQUAL(pl_agent_offer(t.a, plan, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_best_count(t.a), before + 1);
    for (int i = 0; i < plan->n_ops; i++)
        plan->device[i] = 1 - plan->device[i];
    CU_ASSERT_EQUAL(pl_agent_offer(t.a, plan, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_best_count(t.a), before + 1);
    plan->micro_batches = 2;
    CU_ASSERT_EQUAL(pl_agent_offer(t.a, plan, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_best_count(t.a), before + 2);
    pl_plan_free(plan);
    branches_agent_free(&t);
}

/* The lead is of one replica, as an action places one: an offered replicated plan is kept
 * among the best plans but is not the lead, which the anchor imitates. */
static void test_lead_one_replica(void)
{
    branches_agent t;
    branches_agent_init(&t, 1);
    pl_plan *replicated = pl_plan_new(t.g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(replicated);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(replicated, 2, NULL), PL_OK);
    for (int i = 0; i < replicated->n_ops; i++) {
        replicated->device[i] = 0;
        pl_plan_replica(replicated, 1)[i] = 1;
    }
    int before = pl_agent_best_count(t.a);
    CU_ASSERT_EQUAL(pl_agent_offer(t.a, replicated, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_best_count(t.a), before + 1);
    CU_ASSERT_PTR_NULL(pl_agent_lead_plan(t.a, NULL));
    pl_plan *single = alternating_plan(t.g);
    CU_ASSERT_EQUAL(pl_agent_offer(t.a, single, NULL), PL_OK);
    pl_plan *lead = pl_agent_lead_plan(t.a, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(lead);
    CU_ASSERT_EQUAL(lead->replicas, 1);
    size_t bytes = (size_t)single->n_ops * sizeof *single->device;
    CU_ASSERT_EQUAL(memcmp(lead->device, single->device, bytes), 0);
    pl_plan_free(lead);
    pl_plan_free(single);
    pl_plan_free(replicated);
    branches_agent_free(&t);
}

/* After imitation the policy draws the imitated plan far more often than by chance. */
static void test_imitation(void)
{
    branches_agent t;
    branches_agent_init(&t, 4);
    pl_plan *target = alternating_plan(t.g);
    target->micro_batches = 2;
    snprintf(target->provenance.algorithm, sizeof target->provenance.algorithm, "test");
    CU_ASSERT_EQUAL_FATAL(pl_agent_imitate(t.a, target, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_iterate(t.a, NULL, NULL), PL_OK);
    int same = 0;
    for (int s = 0; s < t.o.samples; s++) {
        const pl_plan *p = t.a->plans[s];
        same += memcmp(p->device, target->device, (size_t)p->n_ops * sizeof *p->device) == 0 &&
                p->micro_batches == 2 && p->n_stages == 1;
    }
    CU_ASSERT(same >= t.o.samples / 2);
    /* the offered plan is a candidate under its own name */
    bool found = false;
    for (int k = 0; k < pl_agent_best_count(t.a); k++)
        found = found || strcmp(t.a->best[k].algorithm, "test") == 0;
    CU_ASSERT(found);
    pl_plan_free(target);
    branches_agent_free(&t);
}

/* A chain of seven equal matmuls and a small one: x -> m0 -> ... -> m7 -> loss. */
static pl_graph *chain(void)
{
    char params[2048] = "", ops[4096] = "";
    for (int i = 0; i < 8; i++) {
        char line[256];
        snprintf(line, sizeof line, "%s{\"name\": \"w%d\", \"shape\": [64, %d], \"init\": "
                 "{\"kind\": \"zeros\"}}", i ? "," : "", i, i < 7 ? 64 : 10);
        strcat(params, line);
        char input[16] = "x";
        if (i > 0)
            snprintf(input, sizeof input, "h%d", i - 1);
        snprintf(line, sizeof line, "{\"name\": \"m%d\", \"op\": \"matmul\", \"inputs\": "
                 "[\"%s\", \"w%d\"], \"outputs\": [\"h%d\"]},", i, input, i, i);
        strcat(ops, line);
    }
    strcat(ops, "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", "
                "\"inputs\": [\"h7\", \"y\"], \"outputs\": [\"loss\"]}");
    return pl_test_training_model("[64]", params, ops, "loss");
}

/* Folding twice a 2-stage pipeline on two devices gives four stages of about equal work,
 * dealt alternately to the two devices, in dataflow order. */
static void test_fold(void)
{
    pl_graph *g = chain();
    pl_cluster *c = two_devices();
    pl_policy p;
    pl_agent_options o;
    pl_agent_options_default(&o);
    o.hidden = 8, o.rounds = 1, o.groups = 4;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    pl_action *a = pl_actions_new(&p, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    for (int i = 0; i < p.n_ops; i++)
        a->group[i] = i < 4 ? 0 : 1; /* m0-m3 | m4-m7, loss */
    a->device[0] = 0, a->stage[0] = 0;
    a->device[1] = 1, a->stage[1] = 1;
    a->shape = -1;
    for (int k = 0; k < p.n_shapes; k++)
        if (p.shape_mb[k] == 1 && p.shape_fold[k] == 2 && p.shape_schedule[k] == PL_SCHEDULE_1F1B)
            a->shape = k;
    CU_ASSERT_FATAL(a->shape >= 0);
    pl_plan *plan = pl_plan_new(g, NULL);
    pl_action_to_plan(&p, a, plan);
    CU_ASSERT_EQUAL(plan->n_stages, 4);
    CU_ASSERT_EQUAL(plan->schedule, PL_SCHEDULE_1F1B);
    int ops_in[4] = {0};
    for (int i = 0; i < plan->n_ops; i++) {
        CU_ASSERT_EQUAL(plan->device[i], plan->stage[i] % 2);
        if (i > 0)
            CU_ASSERT(plan->stage[i] >= plan->stage[i - 1]);
        ops_in[plan->stage[i]]++;
    }
    CU_ASSERT_EQUAL(ops_in[0], 2); /* m0 m1 | m2 m3 | m4 m5 | m6 m7 loss */
    CU_ASSERT_EQUAL(ops_in[1], 2);
    CU_ASSERT_EQUAL(ops_in[2], 2);
    CU_ASSERT_EQUAL(ops_in[3], 3);
    /* the folded plan is within the heads' reach (4 stages of 6, 4 pairs of 4 groups) */
    pl_action *back = pl_actions_new(&p, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    bool exact = false;
    CU_ASSERT(pl_action_from_plan(&p, plan, back, &exact) && exact);
    pl_plan *again = pl_plan_new(g, NULL);
    pl_action_to_plan(&p, back, again);
    CU_ASSERT_EQUAL(memcmp(again->device, plan->device, (size_t)plan->n_ops * sizeof(int)), 0);
    CU_ASSERT_EQUAL(memcmp(again->stage, plan->stage, (size_t)plan->n_ops * sizeof(int)), 0);
    /* one stage per op is not: 9 stages, the stage head has 6 */
    for (int i = 0; i < plan->n_ops; i++)
        plan->stage[i] = i, plan->device[i] = i % 2;
    plan->n_stages = plan->n_ops;
    CU_ASSERT(pl_action_from_plan(&p, plan, back, &exact) && !exact);
    pl_plan_free(again);
    pl_actions_free(back, 1);
    /* fold 1 leaves the plan as sampled */
    for (int k = 0; k < p.n_shapes; k++)
        if (p.shape_mb[k] == 1 && p.shape_fold[k] == 1)
            a->shape = k;
    pl_action_to_plan(&p, a, plan);
    CU_ASSERT_EQUAL(plan->n_stages, 2);
    for (int i = 0; i < plan->n_ops; i++)
        CU_ASSERT_EQUAL(plan->device[i], i < 4 ? 0 : 1);
    pl_plan_free(plan);
    pl_actions_free(a, 1);
    pl_policy_clear(&p);
    /* without folds and deferral, the shapes are the micro-batch counts and schedules */
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    int all = p.n_shapes;
    pl_policy_clear(&p);
    o.max_fold = 1, o.defer = false;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    CU_ASSERT_EQUAL(p.n_shapes * PL_POLICY_MAX_FOLD * 2, all);
    for (int k = 0; k < p.n_shapes; k++)
        CU_ASSERT(p.shape_fold[k] == 1 && !p.shape_defer[k]);
    pl_policy_clear(&p);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A batch-norm model whose statistics are per step keeps its steps whole: every shape the
 * policy can choose (and the sweep tries) has one micro-batch, and so has every plan the
 * agent keeps, a pipelined baseline's imitated included; declared per micro-batch, the
 * shapes have more. */
static void test_whole_steps(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", 8);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = two_devices();
    pl_agent_options o = small_options(3);
    pl_policy p;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    int most = 1;
    for (int k = 0; k < p.n_shapes; k++)
        most = p.shape_mb[k] > most ? p.shape_mb[k] : most;
    CU_ASSERT_EQUAL(most, 8);
    pl_policy_clear(&p);
    g->batch_statistics = PL_BATCH_STATISTICS_PER_STEP;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, g, c, &o), PL_OK);
    CU_ASSERT(p.n_shapes > 0);
    for (int k = 0; k < p.n_shapes; k++)
        CU_ASSERT_EQUAL(p.shape_mb[k], 1);
    pl_policy_clear(&p);
    pl_cost_model m = flop_costs();
    pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    pl_plan *pipeline = pl_test_pipeline_plan(g, 2, 1, PL_SCHEDULE_1F1B);
    CU_ASSERT_EQUAL(pl_agent_imitate(a, pipeline, NULL), PL_OK);
    for (int i = 0; i < 5; i++)
        CU_ASSERT_EQUAL_FATAL(pl_agent_iterate(a, NULL, NULL), PL_OK);
    CU_ASSERT(pl_agent_best_count(a) > 0);
    for (int k = 0; k < pl_agent_best_count(a); k++) {
        pl_plan *best = pl_agent_best_plan(a, k, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(best);
        CU_ASSERT_EQUAL(best->micro_batches, 1);
        pl_plan_free(best);
    }
    pl_plan_free(pipeline);
    pl_agent_free(a);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The shape sweep: a two-stage pipeline of the chain imitated with one micro-batch (no
 * overlap at all) is kept under its own name; with the sweep, its placement under the
 * best other shape too, much faster, as "reshaped". */
static void test_sweep(void)
{
    pl_graph *g = chain();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    double own_step = 0;
    for (int sweep = 0; sweep < 2; sweep++) {
        pl_agent_options o = small_options(1);
        o.sweep = sweep;
        pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        pl_plan *plan = pl_plan_new(g, NULL);
        for (int i = 0; i < plan->n_ops; i++)
            plan->device[i] = plan->stage[i] = i < 4 ? 0 : 1; /* m0-m3 | m4-m7, loss */
        plan->n_stages = 2;
        snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "test");
        CU_ASSERT_EQUAL_FATAL(pl_agent_imitate(a, plan, NULL), PL_OK);
        const pl_agent_best *first = &a->best[0];
        if (!sweep) { /* the plan alone */
            CU_ASSERT_EQUAL(pl_agent_best_count(a), 1);
            CU_ASSERT_STRING_EQUAL(first->algorithm, "test");
            own_step = first->step;
        } else { /* the best plans are sorted: the fastest first */
            CU_ASSERT_STRING_EQUAL(first->algorithm, "test reshaped");
            CU_ASSERT(first->step < 0.8 * own_step);
            CU_ASSERT(first->plan->micro_batches > 1);
            for (int i = 0; first->plan->n_stages == 2 && i < plan->n_ops; i++)
                CU_ASSERT_EQUAL(first->plan->device[i], plan->device[i]); /* unfolded */
        }
        pl_plan_free(plan);
        pl_agent_free(a);
    }
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The search without learning (--no-learning): no plan of the policy's, no change to its
 * weights, a refinement every iteration; from the badly cut chain it reaches the balanced
 * cut that refinement finds, and its curve has no samples. */
static void test_without_learning(void)
{
    pl_graph *g = chain();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    pl_agent_options o = small_options(5);
    o.sweep = false, o.learn = false, o.refine_proposals = 300;
    pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_FALSE(pl_agent_learns(a));
    pl_plan *plan = pl_plan_new(g, NULL);
    for (int i = 0; i < plan->n_ops; i++)
        plan->device[i] = plan->stage[i] = i < 1 ? 0 : 1;
    plan->n_stages = 2;
    plan->micro_batches = 4;
    snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "test");
    CU_ASSERT_EQUAL_FATAL(pl_agent_imitate(a, plan, NULL), PL_OK);
    double offered = a->best[0].step;
    size_t bytes = (size_t)a->policy.layout.n * sizeof(double);
    double *weights = malloc(bytes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(weights);
    memcpy(weights, a->policy.params, bytes); /* imitation trained nothing */
    for (int i = 0; i < 5; i++) {
        int before = a->n_refined;
        pl_agent_iteration it;
        CU_ASSERT_EQUAL_FATAL(pl_agent_iterate(a, &it, NULL), PL_OK);
        CU_ASSERT_EQUAL(a->n_refined, before + 1); /* every iteration a refinement */
        CU_ASSERT_EQUAL(it.mean_step, 0);
        CU_ASSERT_EQUAL(it.best_step, a->best[0].step);
    }
    CU_ASSERT_EQUAL(memcmp(weights, a->policy.params, bytes), 0);
    CU_ASSERT(a->best[0].step < 0.8 * offered);
    CU_ASSERT_STRING_EQUAL(a->best[0].algorithm, "test refined");
    for (int k = 0; k < a->n_best; k++)
        CU_ASSERT_STRING_NOT_EQUAL(a->best[k].algorithm, "rl");
    CU_ASSERT_EQUAL(pl_agent_policy_best(a), INFINITY);
    free(weights);
    pl_plan_free(plan);
    pl_agent_free(a);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* One set of weights serves any graph and cluster: the layout is the same for two graphs
 * on 2 and 8 devices, equal or not; an agent on 8 unequal devices starts from the weights
 * of one on 2 and samples valid plans over all 8; a policy whose options differ is
 * refused. */
static void test_any_cluster(void)
{
    pl_graph *branches = two_branches(), *line = chain();
    pl_cluster *two = two_devices();
    pl_cluster *eight = pl_test_cluster((pl_test_devices){.n = 8, .memory = 1073741824});
    eight->devices[5].flops_per_second = 1e8; /* one slow device: a tenth of the others */
    pl_agent_options o = small_options(4);
    pl_policy p;
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, branches, two, &o), PL_OK);
    int n = p.layout.n;
    pl_policy_clear(&p);
    CU_ASSERT_EQUAL_FATAL(policy_init(&p, line, eight, &o), PL_OK);
    CU_ASSERT_EQUAL(p.layout.n, n);
    /* equal devices are told apart by their position alone, the slow one by its speed */
    const double *f = p.device_features;
    enum { F = PL_POLICY_DEVICE_FEATURES };
    CU_ASSERT(f[5 * F] > 0.5 && f[4 * F] == 0 && f[6 * F] == 0);
    CU_ASSERT(memcmp(f + 1 * F, f + 2 * F, F * sizeof *f) != 0);
    pl_policy_clear(&p);
    pl_cost_model m = flop_costs();
    pl_agent *small = pl_agent_new(branches, two, &m, &o, NULL);
    pl_agent *large = pl_agent_new(line, eight, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(small);
    CU_ASSERT_PTR_NOT_NULL_FATAL(large);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(small, NULL, NULL), PL_OK);
    pl_policy_weights w;
    CU_ASSERT_EQUAL_FATAL(pl_agent_weights(small, &w, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_start_from(large, &w, NULL), PL_OK);
    CU_ASSERT_EQUAL(memcmp(large->policy.params, w.values, (size_t)n * sizeof *w.values), 0);
    pl_agent_iteration it;
    bool beyond_two = false;
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL_FATAL(pl_agent_iterate(large, &it, NULL), PL_OK);
        for (int s = 0; s < o.samples; s++)
            for (int k = 0; k < line->n_forward_ops; k++) {
                CU_ASSERT(large->plans[s]->device[k] >= 0 && large->plans[s]->device[k] < 8);
                beyond_two = beyond_two || large->plans[s]->device[k] >= 2;
            }
    }
    CU_ASSERT(beyond_two);
    pl_agent_options other = o;
    other.hidden = 8;
    pl_agent *narrow = pl_agent_new(line, eight, &m, &other, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(narrow);
    pl_error err;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_agent_start_from(narrow, &w, &err), PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.text, "the policy has hidden width 16, 2 rounds and 4 groups; "
                                     "the agent's options ask for 8, 2 and 4");
    pl_policy_weights_clear(&w);
    pl_agent_free(narrow);
    pl_agent_free(large);
    pl_agent_free(small);
    pl_cluster_free(eight);
    pl_cluster_free(two);
    pl_graph_free(line);
    pl_graph_free(branches);
}

/* A policy file gives back the weights (to float precision) and the options that shape
 * them; a file with a matrix of another shape or a value not finite is refused, naming
 * the matrix. */
static void test_policy_file(void)
{
    pl_graph *g = two_branches();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    pl_agent_options o = small_options(6);
    o.rounds = 3;
    pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    pl_policy_weights w, back;
    CU_ASSERT_EQUAL_FATAL(pl_agent_weights(a, &w, NULL), PL_OK);
    char path[] = "/tmp/placer-policy-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    pl_error err;
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL_FATAL(pl_policy_weights_write(&w, path, &err), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_policy_weights_read(path, &back, &err), PL_OK);
    CU_ASSERT(back.hidden == 16 && back.rounds == 3 && back.groups == 4 && back.n == w.n);
    double worst = 0;
    for (int i = 0; i < w.n; i++)
        worst = fmax(worst, fabs(back.values[i] - w.values[i]) / fmax(1, fabs(w.values[i])));
    CU_ASSERT(worst < 1e-6);
    pl_policy_weights_clear(&back);
    /* a value not finite */
    w.values[0] = NAN;
    CU_ASSERT_EQUAL(pl_policy_weights_write(&w, path, &err), PL_OK);
    CU_ASSERT_EQUAL(pl_policy_weights_read(path, &back, &err), PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.text, "tensor \"ops/w\": value 0 is nan (expected a finite number)");
    CU_ASSERT_EQUAL(back.n, 0);
    pl_named_tensor bad = {.name = "placer-policy-version", .dtype = PL_I32, .rank = 0,
                           .data = &(int32_t){2}};
    CU_ASSERT_EQUAL(pl_tensor_file_write(path, &bad, 1, &err), PL_OK);
    CU_ASSERT_EQUAL(pl_policy_weights_read(path, &back, &err), PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.text, "a policy file of format 2; this placer reads format 1");
    unlink(path);
    pl_policy_weights_clear(&w);
    pl_agent_free(a);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Sampling without training (zero-shot): iterations draw and keep plans, and the weights
 * stay as they were, imitation included. */
static void test_without_training(void)
{
    pl_graph *g = two_branches();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    pl_agent_options o = small_options(8);
    o.train = false, o.sweep = false, o.refine_every = 0;
    pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    pl_policy_weights before;
    CU_ASSERT_EQUAL_FATAL(pl_agent_weights(a, &before, NULL), PL_OK);
    pl_plan *plan = alternating_plan(g);
    CU_ASSERT_EQUAL(pl_agent_imitate(a, plan, NULL), PL_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(a, NULL, NULL), PL_OK);
    CU_ASSERT_EQUAL(memcmp(before.values, a->policy.params, (size_t)before.n * sizeof(double)),
                    0);
    CU_ASSERT(pl_agent_policy_best(a) < INFINITY);
    pl_policy_weights_clear(&before);
    pl_plan_free(plan);
    pl_agent_free(a);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Refinement: a chain's pipeline cut after its first matmul (one device idles most of
 * the step) is refined to a balanced cut, kept under the offered plan's name and
 * " refined", with stages still following the dataflow and no new (device, stage) pair;
 * the lead stays the offered plan; the result does not depend on the thread count; and
 * refinement stops once it no longer improves. */
static void test_refine(void)
{
    pl_graph *g = chain();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    double steps[2] = {0, 0};
    int devices[2][64];
    for (int threads = 1; threads <= 2; threads++) {
        pl_agent_options o = small_options(3);
        o.sweep = false, o.threads = threads, o.refine_every = 1, o.refine_proposals = 300;
        pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(a);
        pl_plan *plan = pl_plan_new(g, NULL);
        for (int i = 0; i < plan->n_ops; i++)
            plan->device[i] = plan->stage[i] = i < 1 ? 0 : 1; /* m0 | m1-m7, loss */
        plan->n_stages = 2;
        plan->micro_batches = 4;
        snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "test");
        CU_ASSERT_EQUAL_FATAL(pl_agent_offer(a, plan, NULL), PL_OK);
        double offered = a->best[0].step;
        CU_ASSERT_EQUAL_FATAL(pl_agent_refine(a, NULL), PL_OK);
        const pl_agent_best *best = &a->best[0];
        CU_ASSERT_STRING_EQUAL(best->algorithm, "test refined");
        CU_ASSERT(best->step < 0.8 * offered);
        CU_ASSERT_EQUAL(pl_plan_check(best->plan, g, c, NULL), PL_OK);
        for (int i = 0; i < plan->n_ops; i++)
            CU_ASSERT_EQUAL(best->plan->device[i], best->plan->stage[i]);
        CU_ASSERT_STRING_EQUAL(a->lead.algorithm, "test");
        CU_ASSERT_EQUAL(a->lead.step, offered);
        steps[threads - 1] = best->step;
        memcpy(devices[threads - 1], best->plan->device, (size_t)plan->n_ops * sizeof(int));
        /* on from the refined plan while that improves it, then the lead was refined
         * already: nothing more */
        int calls = 0, before;
        do {
            before = a->n_refined;
            CU_ASSERT_EQUAL_FATAL(pl_agent_refine(a, NULL), PL_OK);
        } while (a->n_refined > before && ++calls < 100);
        CU_ASSERT(calls < 100);
        CU_ASSERT_EQUAL(pl_plan_check(a->best[0].plan, g, c, NULL), PL_OK);
        pl_plan_free(plan);
        pl_agent_free(a);
    }
    CU_ASSERT_EQUAL(steps[0], steps[1]);
    CU_ASSERT_EQUAL(memcmp(devices[0], devices[1], (size_t)g->n_forward_ops * sizeof(int)), 0);
    /* what the agent made, and how */
    pl_plan *plan = pl_plan_new(g, NULL);
    static const struct { const char *origin; bool made, reshaped, refined; } cases[] = {
        {"rl", true, false, false}, {"rl refined", true, false, true},
        {"sct", false, false, false}, {"sct refined", true, false, true},
        {"pipeline-dp reshaped", true, true, false},
        {"pipeline-dp reshaped refined", true, true, true}, {"refined", false, false, false}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        bool reshaped, refined;
        snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "%s",
                 cases[k].origin);
        CU_ASSERT_EQUAL(pl_agent_made(plan, &reshaped, &refined), cases[k].made);
        CU_ASSERT_EQUAL(reshaped, cases[k].reshaped);
        CU_ASSERT_EQUAL(refined, cases[k].refined);
    }
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Six iterations straight against three, a checkpoint, a fresh agent, three more; the
 * checkpoint refused on another cluster of the same size and with other options. */
static void test_resume(void)
{
    pl_graph *g = two_branches();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    pl_agent_options o = small_options(11);
    o.refine_every = 2, o.refine_proposals = 40; /* refinements before and after the save */
    char path[] = "/tmp/placer-agent-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    pl_agent *straight = pl_agent_new(g, c, &m, &o, NULL);
    pl_agent *first = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(straight);
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    for (int i = 0; i < 6; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(straight, NULL, NULL), PL_OK);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(first, NULL, NULL), PL_OK);
    pl_agent_correct(first, 1.0, 1.5);
    pl_agent_correct(straight, 1.0, 1.5);
    pl_error err;
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL(pl_agent_save(first, path, &err), PL_OK);
    pl_agent_free(first);
    o.threads = 1; /* the thread count is not part of the result */
    pl_agent *resumed = pl_agent_load(path, g, c, &m, &o, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(resumed);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(resumed, NULL, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_agent_iterations(resumed), 6);
    CU_ASSERT_EQUAL(memcmp(resumed->policy.params, straight->policy.params,
                           (size_t)straight->policy.layout.n * sizeof(double)), 0);
    CU_ASSERT_EQUAL(memcmp(resumed->curve, straight->curve, 6 * sizeof *straight->curve), 0);
    CU_ASSERT_EQUAL(pl_agent_best_count(resumed), pl_agent_best_count(straight));
    CU_ASSERT_DOUBLE_EQUAL(pl_agent_correction(resumed), 1.5, 1e-12);
    pl_plan *x = pl_agent_best_plan(resumed, 0, NULL), *y = pl_agent_best_plan(straight, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(x);
    CU_ASSERT_PTR_NOT_NULL_FATAL(y);
    CU_ASSERT_EQUAL(memcmp(x->device, y->device, (size_t)x->n_ops * sizeof *x->device), 0);
    CU_ASSERT_EQUAL(x->provenance.predicted_seconds, y->provenance.predicted_seconds);
    CU_ASSERT_EQUAL(resumed->n_refined, straight->n_refined);
    CU_ASSERT_EQUAL(memcmp(resumed->refined, straight->refined, sizeof straight->refined), 0);
    CU_ASSERT_EQUAL(resumed->lead.step, straight->lead.step);
    pl_plan_free(x);
    pl_plan_free(y);
    /* another cluster of as many devices (slower links) is refused: its bounds differ */
    pl_cluster *other = pl_test_cluster(
        (pl_test_devices){.n = 2, .memory = 1073741824, .link_bytes_per_second = 1e9});
    pl_error_init(&err, path);
    CU_ASSERT_PTR_NULL(pl_agent_load(path, g, other, &m, &o, &err));
    CU_ASSERT_STRING_EQUAL(err.text, "made for another cluster (its devices or links differ)");
    pl_cluster_free(other);
    /* another seed's options are refused with a reason */
    o.seed = 12;
    pl_error_init(&err, path);
    CU_ASSERT_PTR_NULL(pl_agent_load(path, g, c, &m, &o, &err));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "other search options"));
    pl_agent_free(resumed);
    pl_agent_free(straight);
    unlink(path);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The memo of simulated plans: a plan found there is one simulated before, with its step;
 * a new plan in the same slot evicts it; and an agent that remembers nothing (every
 * sample simulated) learns the very same weights, curve and best plans. */
static void test_memo(void)
{
    pl_step_memo memo;
    CU_ASSERT_FATAL(pl_step_memo_init(&memo, 4));
    double step;
    bool fits;
    CU_ASSERT_FALSE(pl_step_memo_find(&memo, 0x35, &step, &fits));
    pl_step_memo_store(&memo, 0x35, 0.25, true);
    CU_ASSERT_TRUE(pl_step_memo_find(&memo, 0x35, &step, &fits));
    CU_ASSERT_EQUAL(step, 0.25);
    CU_ASSERT_TRUE(fits);
    pl_step_memo_store(&memo, 0x45, 0.5, false); /* the same slot of 16 */
    CU_ASSERT_FALSE(pl_step_memo_find(&memo, 0x35, &step, &fits));
    CU_ASSERT_TRUE(pl_step_memo_find(&memo, 0x45, &step, &fits));
    CU_ASSERT_FALSE(fits);
    pl_step_memo_clear(&memo);
    CU_ASSERT_FALSE(pl_step_memo_find(&memo, 0x45, &step, &fits));

    pl_graph *g = two_branches();
    pl_cluster *c = two_devices();
    pl_cost_model m = flop_costs();
    pl_agent_options o = small_options(5);
    pl_agent *remembering = pl_agent_new(g, c, &m, &o, NULL);
    pl_agent *forgetting = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(remembering);
    CU_ASSERT_PTR_NOT_NULL_FATAL(forgetting);
    pl_step_memo_clear(&forgetting->memo); /* finds nothing, keeps nothing */
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_EQUAL(pl_agent_iterate(remembering, NULL, NULL), PL_OK);
        CU_ASSERT_EQUAL(pl_agent_iterate(forgetting, NULL, NULL), PL_OK);
        /* no refinement yet: the lead is the best plan, as kept (not a relabelled twin) */
        CU_ASSERT_EQUAL(remembering->lead.key, remembering->best[0].key);
    }
    CU_ASSERT_EQUAL(memcmp(remembering->policy.params, forgetting->policy.params,
                           (size_t)remembering->policy.layout.n * sizeof(double)), 0);
    CU_ASSERT_EQUAL(memcmp(remembering->curve, forgetting->curve, 8 * sizeof *remembering->curve),
                    0);
    CU_ASSERT_EQUAL(remembering->n_best, forgetting->n_best);
    CU_ASSERT_EQUAL(remembering->best[0].step, forgetting->best[0].step);
    /* and the memo holds the plans it simulated, the best among them */
    int held = 0, best_held = 0;
    for (uint64_t slot = 0; slot <= remembering->memo.mask; slot++)
        if (remembering->memo.keys[slot]) {
            held++;
            best_held += remembering->memo.steps[slot] == remembering->best[0].step;
        }
    CU_ASSERT(held > 0);
    CU_ASSERT(best_held > 0);
    pl_agent_free(remembering);
    pl_agent_free(forgetting);
    pl_cluster_free(c);
    pl_graph_free(g);
}

void pl_register_agent_tests(void)
{
    static const pl_test_case cases[] = {
        {"the policy's gradient against finite differences", test_gradient},
        {"two heavy branches, two devices: one each", test_obvious_answer},
        {"imitation", test_imitation},
        {"the best plans are distinct, devices relabelled or not", test_best_distinct},
        {"the lead is of one replica", test_lead_one_replica},
        {"folding interleaves a pipeline's stages round the devices", test_fold},
        {"the shape sweep: the imitated placement under every shape", test_sweep},
        {"batch statistics per step: one micro-batch in every shape", test_whole_steps},
        {"refinement: single-op moves balance a pipeline", test_refine},
        {"the search without learning refines every iteration", test_without_learning},
        {"one set of weights serves any graph and cluster", test_any_cluster},
        {"policy files: weights back, damage refused", test_policy_file},
        {"sampling without training leaves the weights", test_without_training},
        {"checkpoint and resume: as uninterrupted", test_resume},
        {"the memo of simulated plans changes no result", test_memo},
        {NULL, NULL}};
    pl_test_add_suite("agent", cases);
}
