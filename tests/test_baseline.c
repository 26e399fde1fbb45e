/* The baseline placers on tiny graphs whose best placement is known: two independent
 * heavy branches on two devices, a chain whose copies cost more than they save, a model
 * that fits no single device; then every algorithm on every small suite model and bundled
 * cluster (checked plans that fit, co-location, provenance), and determinism for a seed;
 * every algorithm on every bundled model at or above the lower bound (on the bundled
 * clusters, the hardware ones with their ports, and one at a GPU cluster's ratios), which
 * a link too slow to cross raises to
 * one device's step; and on unequal
 * devices, list schedules no slower than one fast device and pipelines on the fast ones.
 * megatron: layers no device holds split over the devices of one machine, and never
 * slower than one device.
 *
 * Costs come from a synthetic model (1 GFLOP/s devices and fixed copy speeds) so that the
 * known answers do not depend on this machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "bound.h"
#include "load.h"
#include "simulate.h"
#include "suites.h"
#include "test_util.h"

/* 1 us + 1 ns per FLOP for every op; a copy 1 us + `per_byte` seconds a byte. */
static pl_cost_model synthetic_costs(double per_byte)
{
    return pl_test_costs((pl_op_cost){1e-6, 1e-9, 0, 1, 0, 0}, 1e-6, per_byte, 1e-6);
}

/* The same on a machine of 100 GFLOP/s, so that paced devices run at their declared
 * rates and unequal ones differ. */
static pl_cost_model fast_machine_costs(void)
{
    return pl_test_costs((pl_op_cost){1e-6, 1e-11, 0, 1, 0, 0}, 1e-6, 1e-10, 1e-6);
}

static pl_cluster *native_devices(int n, long long memory)
{
    return pl_test_cluster((pl_test_devices){.n = n, .memory = memory});
}

/* x -> a1 = x wa1 -> relu -> a3 = . wa2; the same for b; a3 + b3 -> cross-entropy. */
static pl_graph *two_branches(void)
{
    const char *w = "\"shape\": [256, 256], \"init\": {\"kind\": \"zeros\"}";
    char params[512];
    snprintf(params, sizeof params, "{\"name\": \"wa1\", %s}, {\"name\": \"wa2\", %s}, "
             "{\"name\": \"wb1\", %s}, {\"name\": \"wb2\", %s}", w, w, w, w);
    return pl_test_training_model(
        "[256]", params,
        "{\"name\": \"a1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"wa1\"], \"outputs\": [\"a1\"]},"
        "{\"name\": \"a2\", \"op\": \"relu\", \"inputs\": [\"a1\"], \"outputs\": [\"a2\"]},"
        "{\"name\": \"a3\", \"op\": \"matmul\", \"inputs\": [\"a2\", \"wa2\"], \"outputs\": [\"a3\"]},"
        "{\"name\": \"b1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"wb1\"], \"outputs\": [\"b1\"]},"
        "{\"name\": \"b2\", \"op\": \"relu\", \"inputs\": [\"b1\"], \"outputs\": [\"b2\"]},"
        "{\"name\": \"b3\", \"op\": \"matmul\", \"inputs\": [\"b2\", \"wb2\"], \"outputs\": [\"b3\"]},"
        "{\"name\": \"sum\", \"op\": \"add\", \"inputs\": [\"a3\", \"b3\"], \"outputs\": [\"sum\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"sum\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
}

static int device_of(const pl_graph *g, const pl_plan *plan, const char *op)
{
    int o = pl_graph_find_op(g, op);
    CU_ASSERT_FATAL(o >= 0 && o < g->n_forward_ops);
    return plan->device[o];
}

/* How often consecutive forward ops change device. */
static int device_changes(const pl_graph *g, const pl_plan *plan)
{
    int changes = 0;
    for (int o = 1; o < g->n_forward_ops; o++)
        changes += plan->device[o] != plan->device[o - 1];
    return changes;
}

static bool fits(const pl_graph *g, const pl_cluster *c, const pl_plan *plan)
{
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    bool ok = p->oom_device < 0;
    pl_program_free(p);
    return ok;
}

/* The memory of the program of everything on one device. */
static long long whole_model_bytes(const pl_graph *g)
{
    pl_cluster *big = native_devices(1, 1LL << 34);
    pl_plan *all = pl_plan_new(g, NULL);
    pl_program *p = pl_program_new(g, big, all, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    long long whole = (long long)p->memory[0].total;
    pl_program_free(p);
    pl_plan_free(all);
    pl_cluster_free(big);
    return whole;
}

/* Whether two plans are the same: devices, shards, stages and shape. */
static bool same_plan(const pl_plan *a, const pl_plan *b)
{
    if (a->replicas != b->replicas || a->n_stages != b->n_stages ||
        a->micro_batches != b->micro_batches || a->schedule != b->schedule ||
        a->shard_optimizer_state != b->shard_optimizer_state)
        return false;
    for (int o = 0; o < a->n_ops; o++) {
        if (a->stage[o] != b->stage[o] || a->split[o] != b->split[o])
            return false;
        for (int r = 0; r < a->replicas; r++)
            for (int s = 0; s < a->split[o]; s++)
                if (pl_plan_shard_device(a, r, o, s) != pl_plan_shard_device(b, r, o, s))
                    return false;
    }
    return true;
}

/* The algorithm places the same plan again for the same seed. */
static void check_placed_again(pl_baseline a, const pl_graph *g, const pl_cluster *c,
                               const pl_cost_model *m, uint64_t seed, const pl_plan *plan)
{
    pl_plan *again = pl_baseline_place(a, g, c, m, seed, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(again);
    CU_ASSERT(same_plan(again, plan));
    pl_plan_free(again);
}

/* Two independent heavy branches: every algorithm that can run them in parallel puts one
 * on each device, and the step is shorter than on one device. */
static void test_two_branches(void)
{
    pl_graph *g = two_branches();
    pl_cluster *c = native_devices(2, 1 << 30);
    pl_cost_model m = synthetic_costs(1e-10);
    pl_plan *one = pl_baseline_place(PL_BASELINE_SINGLE, g, c, &m, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(one);
    CU_ASSERT_EQUAL(device_changes(g, one), 0);
    pl_baseline parallel[] = {PL_BASELINE_EXPERT, PL_BASELINE_METIS, PL_BASELINE_ETF,
                              PL_BASELINE_SCT, PL_BASELINE_PIPELINE_DP};
    for (size_t i = 0; i < sizeof parallel / sizeof *parallel; i++) {
        pl_error err;
        pl_plan *plan = pl_baseline_place(parallel[i], g, c, &m, 1, &err);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        int a = device_of(g, plan, "a1"), b = device_of(g, plan, "b1");
        CU_ASSERT_NOT_EQUAL(a, b);
        CU_ASSERT_EQUAL(device_of(g, plan, "a2"), a);
        CU_ASSERT_EQUAL(device_of(g, plan, "a3"), a);
        CU_ASSERT_EQUAL(device_of(g, plan, "b2"), b);
        CU_ASSERT_EQUAL(device_of(g, plan, "b3"), b);
        CU_ASSERT(plan->provenance.predicted_seconds < 0.75 * one->provenance.predicted_seconds);
        if (a == b)
            fprintf(stderr, "\n    %s kept the branches together\n",
                    pl_baseline_name(parallel[i]));
        pl_plan_free(plan);
    }
    pl_plan_free(one);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A chain: nothing runs in parallel without micro-batches. With copies dearer than the
 * ops, the list schedulers keep it on one device; the min cut and the expert's blocks cut
 * it once, into halves of about equal work; pipelining (cheap copies) beats one device. */
static void test_chain(void)
{
    pl_graph *g = pl_test_relu_chain(6, 128);
    pl_cluster *c = native_devices(2, 1 << 30);
    pl_cost_model dear = synthetic_costs(1e-6), cheap = synthetic_costs(1e-10);
    for (pl_baseline a = PL_BASELINE_ETF; a <= PL_BASELINE_SCT; a++) {
        pl_plan *plan = pl_baseline_place(a, g, c, &dear, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT_EQUAL(device_changes(g, plan), 0);
        pl_plan_free(plan);
    }
    for (pl_baseline a = PL_BASELINE_EXPERT; a <= PL_BASELINE_METIS; a++) {
        pl_plan *plan = pl_baseline_place(a, g, c, &dear, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT_EQUAL(device_changes(g, plan), 1);
        int first = device_of(g, plan, "m0"), matmuls = 0;
        for (int i = 0; i < 6; i++) {
            char name[8];
            snprintf(name, sizeof name, "m%d", i);
            matmuls += device_of(g, plan, name) == first;
        }
        CU_ASSERT_EQUAL(matmuls, 3); /* the matmuls hold nearly all the FLOPs */
        pl_plan_free(plan);
    }
    pl_plan *one = pl_baseline_place(PL_BASELINE_SINGLE, g, c, &cheap, 1, NULL);
    pl_plan *piped = pl_baseline_place(PL_BASELINE_PIPELINE_DP, g, c, &cheap, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(one);
    CU_ASSERT_PTR_NOT_NULL_FATAL(piped);
    CU_ASSERT_EQUAL(piped->n_stages, 2);
    CU_ASSERT(piped->micro_batches > 1);
    for (int o = 1; o < g->n_forward_ops; o++)
        CU_ASSERT(piped->stage[o] >= piped->stage[o - 1]);
    CU_ASSERT(piped->provenance.predicted_seconds < one->provenance.predicted_seconds);
    pl_plan_free(one);
    pl_plan_free(piped);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The replicated baselines refuse a model that cannot be replicated, or too few devices
 * (PL_EINPUT), or a model no device holds whole (PL_ENOFIT): the only refusals allowed. */
static bool refused_rightly(pl_baseline a, const pl_plan *plan, const pl_error *err)
{
    return !plan && (a == PL_BASELINE_DATA_PARALLEL || a == PL_BASELINE_HYBRID) &&
           (err->status == PL_EINPUT || err->status == PL_ENOFIT);
}

/* A model that no device holds whole: single says so; every other algorithm splits it
 * over both devices, within their memory. */
static void test_memory_forced_split(void)
{
    pl_graph *g = pl_test_relu_chain(4, 512);
    pl_cluster *c = native_devices(2, whole_model_bytes(g) * 6 / 10);
    pl_cost_model m = synthetic_costs(1e-10);
    pl_error err;
    pl_error_init(&err, NULL);
    CU_ASSERT_PTR_NULL(pl_baseline_place(PL_BASELINE_SINGLE, g, c, &m, 1, &err));
    CU_ASSERT_EQUAL(err.status, PL_ENOFIT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no device holds the whole model"));
    for (pl_baseline a = PL_BASELINE_ROUND_ROBIN; a < PL_BASELINE_COUNT; a++) {
        pl_error_init(&err, NULL);
        pl_plan *plan = pl_baseline_place(a, g, c, &m, 1, &err);
        if (refused_rightly(a, plan, &err))
            continue;
        if (!plan)
            fprintf(stderr, "\n    %s: %s\n", pl_baseline_name(a), err.text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT(fits(g, c, plan));
        CU_ASSERT(device_changes(g, plan) >= 1 || pl_plan_rewrites_graph(plan));
        pl_plan_free(plan);
    }
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Names and the table agree; an unknown name is PL_BASELINE_COUNT. */
static void test_names(void)
{
    for (pl_baseline a = 0; a < PL_BASELINE_COUNT; a++)
        CU_ASSERT_EQUAL(pl_baseline_from_name(pl_baseline_name(a)), a);
    CU_ASSERT_EQUAL(pl_baseline_from_name("pipeline-dp"), PL_BASELINE_PIPELINE_DP);
    CU_ASSERT_EQUAL(pl_baseline_from_name("random"), PL_BASELINE_COUNT);
    CU_ASSERT_EQUAL(pl_baseline_from_name(NULL), PL_BASELINE_COUNT);
}

/* The bytes that cross a step when parameter t's accumulations and update are on device
 * `home`: the contributions computed elsewhere, and t to each other device reading it. */
static double crossing(const pl_graph *g, const pl_plan *plan, const pl_partitions *parts,
                       int t, int home)
{
    double bytes = 0;
    bool read[64] = {false};
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        if (pl_graph_updated_param(g, o) == t && op->phase != PL_PHASE_UPDATE) {
            const pl_tensor *c = &g->tensors[op->inputs[1]];
            if (c->producer >= 0 && parts->op_device[c->producer] != home)
                bytes += (double)pl_tensor_bytes(c) *
                         (c->batch_axis != PL_NO_BATCH ? 1 : plan->micro_batches);
        } else if (pl_graph_updated_param(g, o) < 0) {
            for (int i = 0; i < op->n_inputs; i++)
                read[parts->op_device[o]] |= op->inputs[i] == t;
        }
    }
    for (int d = 0; d < parts->n_devices; d++)
        bytes += read[d] && d != home ? (double)pl_tensor_bytes(&g->tensors[t]) : 0;
    return bytes;
}

/* Every op on its group's device, but a parameter's accumulations and update, which go
 * where the fewest bytes cross, and the parameter with them. */
static void check_partitions(const pl_graph *g, const pl_plan *plan, const pl_partitions *parts)
{
    for (int o = 0; o < g->n_ops; o++) {
        int t = pl_graph_updated_param(g, o);
        if (t < 0) {
            CU_ASSERT_EQUAL(parts->op_device[o], plan->device[g->ops[o].group]);
            continue;
        }
        double chosen = crossing(g, plan, parts, t, parts->op_device[o]);
        for (int d = 0; d < parts->n_devices; d++)
            CU_ASSERT(chosen <= crossing(g, plan, parts, t, d));
        CU_ASSERT_EQUAL(parts->tensor_device[t], parts->op_device[o]);
    }
}

static const char *const clusters[] = {"local-2.json", "paced-4.json", "paced-8.json",
                                       "unequal-4.json"};

/* Every algorithm on every small model and bundled cluster: a checked plan that fits, its
 * provenance, every op where check_partitions expects it, a simulated step no shorter than
 * the lower bound; the same plan again for the same seed. */
static void test_suite_models(void)
{
    for (size_t k = 0; k < sizeof clusters / sizeof *clusters; k++) {
        pl_cluster *c = pl_test_bundled_cluster(clusters[k]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        pl_cost_model m = synthetic_costs(1e-10);
        for (int i = 0; i < PL_TEST_SMALL_MODELS; i++) {
            const char *model = pl_test_small_models[i];
            pl_graph *g = pl_test_bundled_training_graph(model, 0);
            CU_ASSERT_PTR_NOT_NULL_FATAL(g);
            CU_ASSERT(g->n_ops > g->n_forward_ops); /* backward ops and updates */
            pl_error err;
            double bound = 0;
            CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
            for (pl_baseline a = 0; a < PL_BASELINE_COUNT; a++) {
                pl_error_init(&err, model);
                pl_plan *plan = pl_baseline_place(a, g, c, &m, 7, &err);
                if (refused_rightly(a, plan, &err))
                    continue;
                if (!plan)
                    fprintf(stderr, "\n    %s on %s, %s: %s\n", model, clusters[k],
                            pl_baseline_name(a), err.text);
                CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
                CU_ASSERT_EQUAL(pl_plan_check(plan, g, c, NULL), PL_OK);
                CU_ASSERT_STRING_EQUAL(plan->provenance.algorithm, pl_baseline_name(a));
                CU_ASSERT_EQUAL(plan->provenance.seed, 7);
                pl_program *p = pl_program_new(g, c, plan, NULL);
                CU_ASSERT_PTR_NOT_NULL_FATAL(p);
                CU_ASSERT_EQUAL(p->oom_device, -1);
                pl_simulation sim;
                CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
                CU_ASSERT_DOUBLE_EQUAL(plan->provenance.predicted_seconds, sim.step_seconds, 0);
                CU_ASSERT(bound > 0 && bound <= sim.step_seconds); /* a bound, for any plan */
                /* a split plan's program runs the rewritten graph under the plan restated */
                check_partitions(p->graph, p->split_plan ? p->split_plan : plan, p->partitions);
                pl_program_free(p);
                if (k == 1) /* determinism, on paced-4 */
                    check_placed_again(a, g, c, &m, 7, plan);
                pl_plan_free(plan);
            }
            pl_graph_free(g);
        }
        pl_cluster_free(c);
    }
}

static const char *const bundled_models[] = {"cnn.json",    "inception.json", "lstm_lm.json",
                                             "mlp.json",    "moe.json",       "recommender.json",
                                             "resnet.json", "seq2seq.json",   "transformer.json"};
enum { BUNDLED_MODELS = sizeof bundled_models / sizeof *bundled_models };

/* A batch-norm model whose statistics are per step: every algorithm's plan has one
 * micro-batch (pipeline-dp's included, which on paced-4 pipelines it in several when the
 * model allows). */
static void test_whole_steps(void)
{
    pl_cluster *c = pl_test_bundled_cluster("paced-4.json");
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cost_model m = synthetic_costs(1e-10);
    pl_plan *before = pl_baseline_place(PL_BASELINE_PIPELINE_DP, g, c, &m, 7, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT(before->micro_batches > 1);
    pl_plan_free(before);
    g->batch_statistics = PL_BATCH_STATISTICS_PER_STEP;
    for (pl_baseline a = 0; a < PL_BASELINE_COUNT; a++) {
        pl_error err;
        pl_error_init(&err, NULL);
        pl_plan *plan = pl_baseline_place(a, g, c, &m, 7, &err);
        if (a == PL_BASELINE_DATA_PARALLEL || a == PL_BASELINE_HYBRID) {
            /* replicas split the batch as micro-batches do */
            CU_ASSERT_PTR_NULL(plan);
            CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot be replicated"));
            pl_plan_free(plan);
            continue;
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT_EQUAL(plan->micro_batches, 1);
        CU_ASSERT_EQUAL(plan->replicas, 1); /* megatron's: tensor groups and stages only */
        CU_ASSERT_EQUAL(pl_plan_check(plan, g, c, NULL), PL_OK);
        pl_plan_free(plan);
    }
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* The simulated step of a plan that fits, or -1. */
static double simulated_step(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                             const pl_plan *plan)
{
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, m, &sim, NULL, NULL, NULL), PL_OK);
    double step = p->oom_device >= 0 || sim.oom_device >= 0 ? -1 : sim.step_seconds;
    pl_program_free(p);
    return step;
}

/* Every algorithm on a model and cluster: every plan simulates at or above the lower
 * bound; the steps by algorithm in steps[]. */
static void place_all(const char *model, const pl_graph *g, const pl_cluster *c,
                      const pl_cost_model *m, double *steps)
{
    double bound = 0;
    CU_ASSERT_EQUAL_FATAL(pl_step_lower_bound(g, c, m, &bound, NULL), PL_OK);
    for (pl_baseline a = 0; a < PL_BASELINE_COUNT; a++) {
        pl_error err;
        pl_error_init(&err, model);
        pl_plan *plan = pl_baseline_place(a, g, c, m, 1, &err);
        steps[a] = -1;
        if (refused_rightly(a, plan, &err))
            continue;
        if (!plan)
            fprintf(stderr, "\n    %s on %s, %s: %s\n", model, c->name, pl_baseline_name(a),
                    err.text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        steps[a] = simulated_step(g, c, m, plan);
        CU_ASSERT(steps[a] > 0);
        if (!(bound > 0 && bound <= steps[a]))
            fprintf(stderr, "\n    %s on %s, %s: %.6f s below the bound %.6f s\n", model,
                    c->name, pl_baseline_name(a), steps[a], bound);
        CU_ASSERT(bound > 0 && bound <= steps[a]);
        pl_plan_free(plan);
    }
}

/* Every algorithm on every bundled model (and every small one) on cluster c: simulated at
 * or above the lower bound; on `unequal` devices, etf and sct never slower than the single
 * fastest device that holds the model. */
static void place_every_model(const pl_cluster *c, const pl_cost_model *m, bool unequal)
{
    for (int i = 0; i < BUNDLED_MODELS + PL_TEST_SMALL_MODELS; i++) {
        const char *model = i < BUNDLED_MODELS ? bundled_models[i]
                                               : pl_test_small_models[i - BUNDLED_MODELS];
        pl_graph *g = pl_test_bundled_training_graph(model, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        double steps[PL_BASELINE_COUNT];
        place_all(model, g, c, m, steps);
        if (unequal) {
            double alone = steps[PL_BASELINE_SINGLE];
            CU_ASSERT(steps[PL_BASELINE_ETF] <= alone);
            CU_ASSERT(steps[PL_BASELINE_SCT] <= alone);
        }
        pl_graph_free(g);
    }
}

/* Every model on every bundled cluster and on the real-ratio one; unequal-4's devices are
 * unequal. */
static void test_bounds_and_unequal_devices(void)
{
    pl_cost_model m = fast_machine_costs();
    size_t n_clusters = sizeof clusters / sizeof *clusters;
    for (size_t k = 0; k <= n_clusters; k++) {
        pl_cluster *c = k < n_clusters ? pl_test_bundled_cluster(clusters[k])
                                       : pl_test_real_ratio_cluster();
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        place_every_model(c, &m, k < n_clusters && strcmp(clusters[k], "unequal-4.json") == 0);
        pl_cluster_free(c);
    }
}

/* The same on the bundled hardware clusters, whose ports (cluster.h) share a device's
 * bandwidth over its peers, which the bound counts once a port. */
static void test_bounds_on_hardware(void)
{
    static const char *const hardware[] = {"dgx-a100.json",     "dgx-h100.json",
                                           "a100-2-nodes.json", "a100-4-nodes.json",
                                           "pcie-a100.json",    "mixed-a100-h100.json"};
    pl_cost_model m = fast_machine_costs();
    for (size_t k = 0; k < sizeof hardware / sizeof *hardware; k++) {
        pl_cluster *c = pl_test_bundled_cluster(hardware[k]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_PTR_NOT_NULL(c->ports);
        place_every_model(c, &m, false);
        pl_cluster_free(c);
    }
}

/* A link too slow for any tensor to cross within a step: the bound is one device's step,
 * which the single-device plan meets but for its hand-offs, where the work spread over
 * the devices gives half of it. The model has an op no plan splits (the recommender's
 * concatenation), which holds every op it is joined to on one device; ops that all split
 * could run shard for shard on both. */
static void test_bound_pays_for_links(void)
{
    pl_cost_model m = fast_machine_costs();
    pl_graph *g = pl_test_bundled_training_graph("small/recommender-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int slow = 0; slow < 2; slow++) {
        pl_cluster *c = pl_test_cluster((pl_test_devices){
            .n = 2, .memory = 1 << 30, .flops = 1e9, .link_bytes_per_second = slow ? 1 : 1e12});
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        double bound = 0;
        CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
        pl_plan *plan = pl_baseline_place(PL_BASELINE_SINGLE, g, c, &m, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        double single = simulated_step(g, c, &m, plan);
        CU_ASSERT(bound <= single);
        CU_ASSERT(slow ? bound > 0.95 * single : bound < 0.75 * single);
        pl_plan_free(plan);
        pl_cluster_free(c);
    }
    pl_graph_free(g);
}

/* Products so large that one alone, whole, outlasts the step a split of every op over
 * four paced devices takes (each product a quarter on each device): the links' term must
 * not hold an op whole on one device, nor, with no groups of devices, count it whole as a
 * group's. megatron's plan simulates at or above the bound. */
static void test_bound_holds_for_split_ops(void)
{
    pl_cost_model m = fast_machine_costs();
    pl_graph *g = pl_test_relu_chain(2, 2048);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = pl_test_cluster((pl_test_devices){
        .n = 4, .memory = 1 << 30, .flops = 1e9, .link_bytes_per_second = 1e9});
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    double bound = 0;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    pl_plan *plan = pl_baseline_place(PL_BASELINE_MEGATRON, g, c, &m, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CU_ASSERT(pl_plan_rewrites_graph(plan));
    double step = simulated_step(g, c, &m, plan);
    if (step < bound)
        fprintf(stderr, "\n    megatron %g s under the bound %g s\n", step, bound);
    CU_ASSERT(step >= bound);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* unequal-4 with its slow pair listed first. */
static const char slow_first[] =
    "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": \"slow-first\", \"devices\": ["
    "{\"name\": \"slow0\", \"memory_bytes\": 1073741824, \"flops_per_second\": 1e9},"
    "{\"name\": \"slow1\", \"memory_bytes\": 1073741824, \"flops_per_second\": 1e9},"
    "{\"name\": \"fast0\", \"memory_bytes\": 1073741824, \"flops_per_second\": 4e9},"
    "{\"name\": \"fast1\", \"memory_bytes\": 1073741824, \"flops_per_second\": 4e9}],"
    "\"default_link\": {\"bytes_per_second\": 2.5e8, \"latency_seconds\": 1e-4},"
    "\"links\": [{\"devices\": [\"fast0\", \"fast1\"], \"bytes_per_second\": 2e9, "
    "\"latency_seconds\": 1e-5}, {\"devices\": [\"slow0\", \"slow1\"], "
    "\"bytes_per_second\": 2e9, \"latency_seconds\": 1e-5}]}";

/* pipeline-dp on unequal devices listed slow first: no device it leaves out is faster than
 * one it uses, and its heaviest stage (by FLOPs) is on a fastest device it uses. */
static void test_pipeline_unequal_devices(void)
{
    pl_cost_model m = fast_machine_costs();
    pl_error err;
    pl_error_init(&err, "slow-first");
    pl_cluster *c = pl_cluster_load_buffer(slow_first, sizeof slow_first - 1, "slow-first", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    for (int i = 0; i < BUNDLED_MODELS + PL_TEST_SMALL_MODELS; i++) {
        const char *model = i < BUNDLED_MODELS ? bundled_models[i]
                                               : pl_test_small_models[i - BUNDLED_MODELS];
        pl_graph *g = pl_test_bundled_training_graph(model, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        pl_plan *plan = pl_baseline_place(PL_BASELINE_PIPELINE_DP, g, c, &m, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        double flops[PL_MAX_DEVICES] = {0}, slowest_used = 1e30, fastest_unused = 0;
        bool used[PL_MAX_DEVICES] = {false};
        for (int o = 0; o < g->n_forward_ops; o++) {
            used[plan->device[o]] = true;
            flops[plan->device[o]] += g->ops[o].flops;
        }
        int heaviest = 0;
        for (int d = 0; d < c->n_devices; d++) {
            double speed = c->devices[d].flops_per_second;
            if (used[d] && speed < slowest_used)
                slowest_used = speed;
            if (!used[d] && speed > fastest_unused)
                fastest_unused = speed;
            if (flops[d] > flops[heaviest])
                heaviest = d;
        }
        if (fastest_unused > slowest_used || c->devices[heaviest].flops_per_second < 4e9)
            fprintf(stderr, "\n    %s: pipeline-dp uses a slow device before a fast one\n",
                    model);
        CU_ASSERT(fastest_unused <= slowest_used);
        CU_ASSERT(c->devices[heaviest].flops_per_second == 4e9);
        pl_plan_free(plan);
        pl_graph_free(g);
    }
    pl_cluster_free(c);
}

/* Two machines of four devices listed alternately (a0, b0, a1, b1, ...: device d is of
 * machine d % 2), each holding `memory` bytes: 2 GB/s inside a machine, 0.25 GB/s between
 * them (paced-8's links). */
static pl_cluster *two_machines(long long memory)
{
    char json[4096];
    int n = snprintf(json, sizeof json, "{\"format\": \"placer-cluster\", \"version\": 1, "
                     "\"name\": \"two-machines\", \"devices\": [");
    for (int d = 0; d < 8; d++)
        n += snprintf(json + n, sizeof json - (size_t)n, "%s{\"name\": \"%c%d\", "
                      "\"memory_bytes\": %lld}", d ? ", " : "", "ab"[d % 2], d / 2, memory);
    n += snprintf(json + n, sizeof json - (size_t)n, "], \"default_link\": "
                  "{\"bytes_per_second\": 2.5e8, \"latency_seconds\": 1e-4}, \"links\": [");
    for (int a = 0, first = 1; a < 8; a++)
        for (int b = a + 2; b < 8; b += 2, first = 0)
            n += snprintf(json + n, sizeof json - (size_t)n, "%s{\"devices\": [\"%c%d\", "
                          "\"%c%d\"], \"bytes_per_second\": 2e9, \"latency_seconds\": "
                          "1e-5}", first ? "" : ", ", "ab"[a % 2], a / 2, "ab"[b % 2], b / 2);
    snprintf(json + n, sizeof json - (size_t)n, "]}");
    pl_error err;
    pl_error_init(&err, "two-machines");
    pl_cluster *c = pl_cluster_load_buffer(json, strlen(json), "two-machines", &err);
    if (!c)
        fprintf(stderr, "\n    %s\n", err.text);
    return c;
}

/* A chain of two wide layers on two machines of four devices, each device holding 0.4 of
 * the model: no device holds the model, nor a layer, nor a replica with its state sharded,
 * so single, pipeline-dp and data-parallel fail; megatron splits the layers over four
 * devices, every op's shards inside one machine, and its plan fits, the same for the same
 * seed. */
static void test_megatron_splits_to_fit(void)
{
    pl_graph *g = pl_test_relu_chain(2, 1024);
    pl_cluster *c = two_machines(whole_model_bytes(g) * 4 / 10);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_cost_model m = synthetic_costs(1e-10);
    pl_baseline cannot[] = {PL_BASELINE_SINGLE, PL_BASELINE_PIPELINE_DP,
                            PL_BASELINE_DATA_PARALLEL};
    for (size_t i = 0; i < sizeof cannot / sizeof *cannot; i++) {
        pl_error err;
        pl_error_init(&err, NULL);
        CU_ASSERT_PTR_NULL(pl_baseline_place(cannot[i], g, c, &m, 1, &err));
        CU_ASSERT_EQUAL(err.status, PL_ENOFIT);
    }
    pl_error err;
    pl_error_init(&err, NULL);
    pl_plan *plan = pl_baseline_place(PL_BASELINE_MEGATRON, g, c, &m, 1, &err);
    if (!plan)
        fprintf(stderr, "\n    megatron: %s\n", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CU_ASSERT_STRING_EQUAL(plan->provenance.algorithm, "megatron");
    CU_ASSERT(fits(g, c, plan));
    int widest = 1;
    for (int o = 0; o < plan->n_ops; o++) {
        widest = plan->split[o] > widest ? plan->split[o] : widest;
        for (int r = 0; r < plan->replicas; r++)
            for (int s = 1; s < plan->split[o]; s++)
                CU_ASSERT_EQUAL(pl_plan_shard_device(plan, r, o, s) % 2,
                                pl_plan_shard_device(plan, r, o, 0) % 2);
    }
    CU_ASSERT_EQUAL(widest, 4);
    check_placed_again(PL_BASELINE_MEGATRON, g, c, &m, 1, plan);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Where the whole model fits one device, megatron is no slower (simulated) than single,
 * whose plan is among its layouts and always tried. */
static void test_megatron_no_slower(void)
{
    pl_cluster *c = pl_test_bundled_cluster("paced-4.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_cost_model m = fast_machine_costs();
    static const char *const models[] = {"mlp.json", "transformer.json", "small/cnn-small.json"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        pl_graph *g = pl_test_bundled_training_graph(models[i], 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        double steps[PL_BASELINE_COUNT];
        place_all(models[i], g, c, &m, steps);
        CU_ASSERT(steps[PL_BASELINE_MEGATRON] > 0);
        CU_ASSERT(steps[PL_BASELINE_MEGATRON] <= steps[PL_BASELINE_SINGLE]);
        pl_graph_free(g);
    }
    pl_cluster_free(c);
}

/* x [4096] -> scaled by a parameter -> 16 element-wise ops (relu and tanh in turn) ->
 * cross-entropy over 4096 classes, at batch 4: 64 KiB an activation and 16 KiB of
 * parameter, so that activations are nearly all of its memory. */
static pl_graph *deep_activations(void)
{
    char nodes[4096] = "{\"name\": \"scale\", \"op\": \"mul\", \"inputs\": [\"x\", \"v\"], "
                       "\"outputs\": [\"a\"]}";
    for (int i = 0; i < 16; i++)
        snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes),
                 ", {\"name\": \"a%d\", \"op\": \"%s\", \"inputs\": [\"a%.0d\"], \"outputs\": "
                 "[\"a%d\"]}", i + 1, i % 2 ? "tanh" : "relu", i, i + 1);
    snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes),
             ", {\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"a16\", "
             "\"y\"], \"outputs\": [\"loss\"]}");
    return pl_test_training_model(
        "[4096]", "{\"name\": \"v\", \"shape\": [4096], \"init\": {\"kind\": \"ones\"}}", nodes,
        "loss");
}

/* The deep model on devices holding `fraction` of its memory on one device: pipeline-dp,
 * data-parallel, hybrid, etf, sct and single each find a plan that recomputes the
 * activations of every op but every fifth, which fits and simulates, and which does not
 * fit without recomputation. On devices that hold the model, no plan recomputes. */
static void test_recompute_to_fit(void)
{
    static const struct {
        pl_baseline algorithm;
        int devices;
        double fraction;
    } cases[] = {{PL_BASELINE_PIPELINE_DP, 2, 0.17}, {PL_BASELINE_DATA_PARALLEL, 2, 0.25},
                 {PL_BASELINE_HYBRID, 4, 0.17},      {PL_BASELINE_ETF, 2, 0.42},
                 {PL_BASELINE_SCT, 2, 0.42},         {PL_BASELINE_SINGLE, 2, 0.42}};
    pl_graph *g = deep_activations();
    pl_cost_model m = synthetic_costs(1e-10);
    long long whole = whole_model_bytes(g);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_cluster *c = native_devices(cases[i].devices, (long long)(whole * cases[i].fraction));
        pl_error err;
        pl_error_init(&err, NULL);
        pl_plan *plan = pl_baseline_place(cases[i].algorithm, g, c, &m, 1, &err);
        if (!plan)
            fprintf(stderr, "\n    %s: %s\n", pl_baseline_name(cases[i].algorithm), err.text);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT(pl_plan_recomputes(plan));
        for (int o = 0; o < plan->n_ops; o++) /* kept: every ceil(sqrt(18))-th op's */
            CU_ASSERT_EQUAL(plan->recompute[o], (o + 1) % 5 != 0);
        CU_ASSERT(fits(g, c, plan));
        CU_ASSERT(plan->provenance.predicted_seconds > 0);
        memset(plan->recompute, 0, (size_t)plan->n_ops * sizeof *plan->recompute);
        CU_ASSERT(!fits(g, c, plan)); /* the same plan without recomputation */
        pl_plan_free(plan);
        pl_cluster_free(c);
        c = native_devices(cases[i].devices, 1LL << 30);
        plan = pl_baseline_place(cases[i].algorithm, g, c, &m, 1, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
        CU_ASSERT(!pl_plan_recomputes(plan));
        pl_plan_free(plan);
        pl_cluster_free(c);
    }
    pl_graph_free(g);
}

/* A forward-only graph is refused with a message, not placed. */
static void test_needs_training_graph(void)
{
    pl_error err;
    pl_graph *g = pl_test_bundled_graph("small/mlp-small.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = native_devices(2, 1 << 30);
    pl_cost_model m = synthetic_costs(1e-10);
    pl_error_init(&err, NULL);
    CU_ASSERT_PTR_NULL(pl_baseline_place(PL_BASELINE_ETF, g, c, &m, 1, &err));
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "training graph"));
    pl_cluster_free(c);
    pl_graph_free(g);
}

void pl_register_baseline_tests(void)
{
    static const pl_test_case cases[] = {
        {"names", test_names},
        {"two independent branches, one per device", test_two_branches},
        {"a chain", test_chain},
        {"a split forced by memory", test_memory_forced_split},
        {"a forward-only graph is refused", test_needs_training_graph},
        {"every algorithm, small model and cluster; determinism", test_suite_models},
        {"every model and cluster: the bound; unequal devices: etf, sct",
         test_bounds_and_unequal_devices},
        {"every model on the hardware clusters, with ports: the bound", test_bounds_on_hardware},
        {"a link no tensor can cross: the bound is one device's step", test_bound_pays_for_links},
        {"products split over every device: their plan at or above the bound",
         test_bound_holds_for_split_ops},
        {"pipeline-dp on unequal devices takes the fast ones", test_pipeline_unequal_devices},
        {"batch statistics per step: one micro-batch", test_whole_steps},
        {"megatron splits ops inside a machine where nothing else fits",
         test_megatron_splits_to_fit},
        {"megatron no slower than one device", test_megatron_no_slower},
        {"recomputation where nothing else fits: pipeline-dp, data-parallel, hybrid, etf, "
         "sct, single", test_recompute_to_fit},
        {NULL, NULL}};
    pl_test_add_suite("baseline", cases);
}
