/* The cost model and the simulator: schedules computed by hand for tiny graphs (every op
 * 1 ms, every copy 1 ms), the hand-off, the lower bound, out-of-memory as the executor
 * reports it, the fits, and profile files. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bound.h"
#include "calibrate_impl.h"
#include "rng.h"
#include "executor.h"
#include "graph_build.h"
#include "kernels.h"
#include "probe.h"
#include "load.h"
#include "profile.h"
#include "simulate.h"
#include "suites.h"
#include "test_util.h"

/* Two devices; their link `declared` (a bandwidth too high to matter: a link thread of
 * its own) or native (copies run on the source device). */
static pl_cluster *two_devices_linked(long long memory, bool declared)
{
    return pl_test_cluster((pl_test_devices){.n = 2, .memory = memory,
                                             .link_bytes_per_second = declared ? 1e15 : 0});
}

static pl_cluster *two_devices(long long memory)
{
    return two_devices_linked(memory, false);
}

/* Every op 1 ms and every copy 1 ms whatever their size; hand-offs as given. */
static pl_cost_model unit_costs(double handoff)
{
    return pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, handoff);
}

/* mode 0: all on device a; 1: fc and loss on b; 2: and on stage 1, 2 micro-batches; 3: and
 * weight gradients deferred. The link is declared (copies on a link thread) unless
 * `native`. */
static double simulated_ms(const pl_graph *g, int mode, double handoff, bool native)
{
    pl_cluster *c = two_devices_linked(1 << 20, !native);
    pl_plan *plan = pl_plan_new(g, NULL);
    if (mode >= 1)
        plan->device[1] = plan->device[2] = 1;
    if (mode >= 2) {
        plan->stage[1] = plan->stage[2] = 1;
        plan->n_stages = 2;
        plan->micro_batches = 2;
    }
    plan->defer_weight_gradients = mode >= 3;
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(p->n_links, native || mode == 0 ? 0 : 2);
    for (int i = 0; i < p->n_tasks; i++) /* a native copy runs on its source device */
        if (native && p->tasks[i].kind == PL_TASK_COPY)
            CU_ASSERT_EQUAL(p->tasks[i].resource,
                            p->partitions->transfers[p->tasks[i].transfer].from);
    pl_cost_model m = unit_costs(handoff);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    return 1e3 * sim.step_seconds;
}

/* One device runs its 11 tasks back to back; a hand-off starts and ends the step. */
static void test_chain_one_device(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 0, 0, true), 11, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 0, 0.25e-3, true), 11.5, 1e-9);
    pl_graph_free(g);
}

/* Two devices, by hand: a: h 0-1; link: copy h 1-2; b: fc 2-3, loss 3-4, loss grad 4-5,
 * fc grad_a 5-6, fc grad_b 6-7 while the link copies grad_a back 6-7; b: fc accumulate
 * 7-8 while a: h grad_b 7-8; b: fc update 8-9 while a: h accumulate 8-9; a: h update
 * 9-10. */
static void test_two_devices(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 1, 0, false), 10, 1e-9);
    pl_graph_free(g);
}

/* The same over a native link, by hand: each copy runs on its source device right after
 * the task producing what it carries: a: h 0-1, copy h 1-2; b: fc 2-3, loss 3-4, loss
 * grad 4-5, fc grad_a 5-6, copy grad_a 6-7, fc grad_b 7-8, fc accumulate 8-9, fc update
 * 9-10; a: h grad_b 7-8, h accumulate 8-9, h update 9-10. With a hand-off of 0.25 ms:
 * 0.25 to start, h 0.25-1.25, copy 1.25-2.25, b from 2.5: fc .. copy grad_a 6.5-7.5, fc
 * grad_b .. update 7.5-10.5; a from 7.75: h grad_b, accumulate, update 7.75-10.75; the
 * caller wakes at 11. */
static void test_two_devices_native(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 1, 0, true), 10, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 1, 0.25e-3, true), 11, 1e-9);
    pl_graph_free(g);
}

/* A 2-stage GPipe pipeline of 2 micro-batches, by hand (task#micro-batch):
 * a: h#0 0-1, h#1 2-3 (its slot is free once copy h#0 is done, at 2);
 * link a->b: copy h#0 1-2, copy h#1 3-4;
 * b: fc#0 2-3, loss#0 3-4, fc#1 4-5, loss#1 5-6, loss grad#0 6-7, grad_a#0 7-8,
 *    grad_b#0 8-9, accumulate#0 9-10, loss grad#1 10-11, grad_a#1 11-12, grad_b#1 12-13,
 *    accumulate#1 13-14, fc update 14-15;
 * link b->a: copy grad_a#0 8-9, copy grad_a#1 12-13;
 * a: h grad_b#0 9-10, accumulate#0 10-11, grad_b#1 13-14, accumulate#1 14-15, update 15-16. */
static void test_pipeline(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 2, 0, false), 16, 1e-9);
    pl_graph_free(g);
}

/* The same pipeline with weight gradients deferred, by hand: b runs loss grad#1 and
 * grad_a#1 before grad_b#0, so a gets its second gradient two tasks earlier:
 * a: h#0 0-1, h#1 2-3; link a->b: copy h#0 1-2, copy h#1 3-4;
 * b: fc#0 2-3, loss#0 3-4, fc#1 4-5, loss#1 5-6, loss grad#0 6-7, grad_a#0 7-8,
 *    loss grad#1 8-9, grad_a#1 9-10, grad_b#0 10-11, accumulate#0 11-12, grad_b#1 12-13,
 *    accumulate#1 13-14, fc update 14-15;
 * link b->a: copy grad_a#0 8-9, copy grad_a#1 10-11;
 * a: h grad_b#0 9-10, accumulate#0 10-11, grad_b#1 11-12, accumulate#1 12-13, update 13-14. */
static void test_pipeline_deferred(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 3, 0, false), 15, 1e-9);
    pl_graph_free(g);
}

/* The same pipeline over a native link, by hand:
 * a: h#0 0-1, copy h#0 1-2, h#1 2-3, copy h#1 3-4;
 * b: fc#0 2-3, loss#0 3-4, loss grad#0 4-5 (at 4 copy h#1 ends as loss#0 does; b, already
 *    free, takes the first task ready then), fc#1 5-6, loss#1 6-7, grad_a#0 7-8, copy
 *    grad_a#0 8-9, grad_b#0 9-10, accumulate#0 10-11, loss grad#1 11-12, grad_a#1 12-13,
 *    copy grad_a#1 13-14, grad_b#1 14-15, accumulate#1 15-16, fc update 16-17;
 * a: h grad_b#0 9-10, accumulate#0 10-11, grad_b#1 14-15, accumulate#1 15-16, update 16-17. */
static void test_pipeline_native(void)
{
    pl_graph *g = pl_test_two_layers();
    CU_ASSERT_DOUBLE_EQUAL(simulated_ms(g, 2, 0, true), 17, 1e-9);
    pl_graph_free(g);
}

/* The lower bound: 11 ops of 1 ms spread over 2 devices (5.5). One sample's critical path
 * h, fc, loss grad, fc grad_a, h grad_b, accumulate, update (7 ms whole) is shorter: a plan
 * may split all but the loss's ops over both devices (split_graph.h), and the bound counts
 * them at half (4 ms). */
static void test_lower_bound(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cluster *c = two_devices(1 << 20);
    pl_cost_model m = unit_costs(0);
    double bound;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * bound, 5.5, 1e-9);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A paced op held more than the spin window past its native work (executor.h) sleeps,
 * and is late by the sleepers' measure; one held less spins, late by the spinners'; one
 * not held is its native time. A copy over a paced link is late either way, by its own
 * measure. */
static void test_paced_lateness(void)
{
    pl_cost_model m = unit_costs(0);
    m.paced_delays[PL_DELAY_SLEPT][0] = 0.5e-3;
    m.paced_delays[PL_DELAY_SPUN][0] = 0.05e-3;
    m.paced_delays[PL_DELAY_COPY][0] = 0.2e-3;
    m.paced_delays[PL_DELAY_SLEPT][1] = 9; /* with a thread computing: not these */
    pl_link link = {.bytes_per_second = 1e9, .latency_seconds = 2e-3};
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_copy(&m, &link, 1e6), 3.2e-3, 1e-15); /* held 3 ms */
    link.latency_seconds = 0;
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_copy(&m, &link, 1e3), 1.2e-3, 1e-15); /* the 1 ms memcpy */
    double spin = PL_DEVICE_PACE_SPIN_SECONDS;
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_paced(&m, 0.1e-3, 2e-3), 2.5e-3, 1e-15); /* sleeps */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_paced(&m, 0, 0.5 * spin), 0.5 * spin + 0.05e-3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_paced(&m, 1e-3, 1e-3 + 0.5 * spin),
                           1e-3 + 0.5 * spin + 0.05e-3, 1e-15); /* spins */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_paced(&m, 2e-3, 1e-3), 2e-3, 1e-15); /* not held */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_paced(&m, 1e-3, 1e-3), 1e-3, 1e-15);
}

/* Two devices paced at `rate`. */
static pl_cluster *two_paced(double rate)
{
    return pl_test_cluster((pl_test_devices){.n = 2, .memory = 1048576, .flops = rate,
                                             .link_bytes_per_second = 1e15});
}

/* Paced devices: in the bound, a paced op takes at least its held time, without the
 * delays after it (means, which a quiet step beats). Held less than the spin window past
 * their 1 ms of work, the ops end on time: the bound of native devices (5.5), one device
 * simulating 11. Held long (no native work, 1 kFLOP/s), every op sleeps and is late: one
 * device simulates the sum of every op's held time and lateness; the bound stays. */
static void test_lower_bound_paced(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_plan *plan = pl_plan_new(g, NULL);
    for (int sleeps = 0; sleeps <= 1; sleeps++) {
        pl_cluster *c = two_paced(sleeps ? 1e3 : 1e15);
        pl_cost_model m = unit_costs(0);
        if (sleeps)
            m.ops[1][PL_OP_COUNT].seconds = 0;
        double bounds[2];
        for (int late = 0; late <= 1; late++) {
            m.paced_delays[PL_DELAY_SLEPT][0] = late ? 0.5e-3 : 0;
            CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bounds[late], NULL), PL_OK);
        }
        pl_program *p = pl_program_new(g, c, plan, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        pl_simulation sim;
        CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
        double held = 0;
        for (int o = 0; o < g->n_ops; o++)
            held += g->ops[o].flops / 1e3 + m.paced_delays[PL_DELAY_SLEPT][0];
        CU_ASSERT_DOUBLE_EQUAL(sim.step_seconds, sleeps ? held : 11e-3, 1e-9 * held);
        CU_ASSERT_DOUBLE_EQUAL(bounds[0], sleeps ? bounds[0] : 5.5e-3, 1e-12);
        CU_ASSERT(bounds[1] == bounds[0]);
        CU_ASSERT(sim.step_seconds >= bounds[1]);
        pl_program_free(p);
        pl_cluster_free(c);
    }
    pl_plan_free(plan);
    pl_graph_free(g);
}

/* Measured op times below the fit: the bound follows them, and stays under the step the
 * simulator predicts for them (it took the fit alone, and came out at 7 ms against 1.1). */
static void test_lower_bound_measured(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cluster *c = two_devices(1 << 20);
    pl_plan *plan = pl_plan_new(g, NULL);
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_cost_model m = unit_costs(0);
    pl_op_time *times = calloc((size_t)g->n_ops, sizeof *times);
    CU_ASSERT_PTR_NOT_NULL_FATAL(times);
    for (int o = 0; o < g->n_ops; o++)
        times[o] = (pl_op_time){pl_op_signature(&g->ops[o], p->shapes, 1), 1e-4};
    CU_ASSERT_EQUAL(pl_cost_add_measured(&m, times, g->n_ops, NULL), PL_OK);
    pl_simulation sim;
    double bound;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, 1e-1 * g->n_ops, 1e-9);
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT(bound > 0 && bound <= sim.step_seconds);
    free(times);
    pl_cost_model_clear(&m);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A calibrated profile (a fastest rate known) on native devices: the bound of
 * test_lower_bound (5.5 ms) with every op at 0.4 times its time, the fit's here (1 ms,
 * its samples at least 0.5x of it: 0.2 ms) or a measured one (0.5 ms: 0.2 ms), or at its
 * FLOPs at 1.25x the fastest rate where that is more; on paced devices as before. */
static void test_lower_bound_native(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cluster *native = two_devices(1 << 20), *paced = two_paced(1e15);
    pl_cost_model m = unit_costs(0);
    m.ops[1][PL_OP_COUNT].fastest = 1e30;
    m.ops[1][PL_OP_COUNT].least = 0.5;
    double bound;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, native, &m, &bound, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * bound, 5.5 * 0.2, 1e-9);
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, paced, &m, &bound, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * bound, 5.5, 1e-9);
    pl_tensor *shapes = malloc((size_t)g->n_tensors * sizeof *shapes);
    pl_op_time *times = calloc((size_t)g->n_ops, sizeof *times);
    CU_ASSERT_FATAL(shapes && times);
    CU_ASSERT_EQUAL_FATAL(pl_graph_shapes_for_batch(g, g->batch_size, shapes, NULL), PL_OK);
    for (int o = 0; o < g->n_ops; o++)
        times[o] = (pl_op_time){pl_op_signature(&g->ops[o], shapes, 1), 0.5e-3};
    CU_ASSERT_EQUAL(pl_cost_add_measured(&m, times, g->n_ops, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, native, &m, &bound, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * bound, 5.5 * 0.2, 1e-9);
    m.ops[1][PL_OP_COUNT].fastest = 1; /* 1 FLOP/s: the roofline binds */
    double roofline;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, native, &m, &roofline, NULL), PL_OK);
    CU_ASSERT(roofline > 100 * bound);
    free(times);
    free(shapes);
    pl_cost_model_clear(&m);
    pl_cluster_free(paced);
    pl_cluster_free(native);
    pl_graph_free(g);
}

/* An op's FLOPs at the whole batch, found by its name (before any "#N" autodiff adds). */
static double op_flops(const pl_graph *g, const char *name)
{
    pl_tensor *shapes = malloc((size_t)g->n_tensors * sizeof *shapes);
    CU_ASSERT_PTR_NOT_NULL_FATAL(shapes);
    CU_ASSERT_EQUAL_FATAL(pl_graph_shapes_for_batch(g, g->batch_size, shapes, NULL), PL_OK);
    double flops = -1;
    size_t len = strlen(name);
    for (int o = 0; o < g->n_ops; o++)
        if (strncmp(g->ops[o].name, name, len) == 0 &&
            (g->ops[o].name[len] == '\0' || g->ops[o].name[len] == '#')) {
            pl_infer_ctx ctx;
            CU_ASSERT_FATAL(pl_op_infer(g, o, shapes, &ctx, &flops));
        }
    free(shapes);
    CU_ASSERT_FATAL(flops > 0);
    return flops;
}

/* recommender on paced-4, every op at its FLOPs over the devices' 2 GFLOP/s: the largest
 * table's Adam update waits for the first dense layer's forward and input gradient. One
 * device would run that layer's group alone; replicas may share its micro-batches over the
 * four devices, and with a sharded optimizer state the update too. The bound lies
 * between. */
static void test_lower_bound_update_chain(void)
{
    pl_graph *g = pl_test_bundled_training_graph("recommender.json", 0);
    pl_cluster *c = pl_test_bundled_cluster("paced-4.json");
    CU_ASSERT_FATAL(g && c);
    pl_cost_model m;
    memset(&m, 0, sizeof m);
    double layer = op_flops(g, "deep/fc1/matmul") + op_flops(g, "deep/fc1/matmul/matmul_grad_a");
    double update = op_flops(g, "embed0/adam_update");
    double bound;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT(bound >= (layer / 4 + update / 4) / 2e9 - 1e-9);
    CU_ASSERT(bound <= (layer + update) / 2e9 + 1e-9);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A fork without a backward pass: a, then eight branches b0..b7 (ops 1-8), then their
 * concat and the loss. */
static pl_graph *fork_of_eight(void)
{
    char nodes[2048];
    int len = snprintf(nodes, sizeof nodes, "{\"name\": \"a\", \"op\": \"relu\", "
                       "\"inputs\": [\"x\"], \"outputs\": [\"a\"]}");
    for (int b = 0; b < 8; b++)
        len += snprintf(nodes + len, sizeof nodes - (size_t)len, ", {\"name\": \"b%d\", "
                        "\"op\": \"relu\", \"inputs\": [\"a\"], \"outputs\": [\"b%d\"]}",
                        b, b);
    snprintf(nodes + len, sizeof nodes - (size_t)len,
             ", {\"name\": \"join\", \"op\": \"concat\", \"inputs\": [\"b0\", \"b1\", "
             "\"b2\", \"b3\", \"b4\", \"b5\", \"b6\", \"b7\"], \"outputs\": [\"j\"], "
             "\"attrs\": {\"axis\": 1}}, {\"name\": \"loss\", \"op\": "
             "\"softmax_cross_entropy\", \"inputs\": [\"j\", \"y\"], \"outputs\": [\"loss\"]}");
    pl_error err;
    pl_graph *g = pl_test_model("[2]", "", nodes, "loss", &err);
    CU_ASSERT_FATAL(g && g->n_ops == 11);
    return g;
}

/* The pipeline's fill and drain, on a fork (no backward pass, every op 1 ms): a, then
 * eight branches, then their concat and the loss. Over 4 devices the work (11 ms) spreads
 * to 2.75 ms and the critical path is 4; but while concat runs nothing else can, and no
 * plan splits it, so the devices idle 3 ms then; a, the branches and the loss (split by
 * classes where its logits come so), which a plan may split over all four, may leave none
 * idle: (11 + 3) / 4 = 3.5. The best
 * placement of whole ops (a, then two branches on each device) simulates to 5 when copies
 * are free, idling 3 ms more while a runs alone. */
static void test_lower_bound_fill_and_drain(void)
{
    pl_graph *g = fork_of_eight();
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1048576});
    pl_cost_model m = unit_costs(0);
    pl_cost_set_copy_line(&m, 0, 0); /* free copies, as in the bound */
    double bound;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * bound, 3.5, 1e-9);
    pl_plan *plan = pl_plan_new(g, NULL);
    for (int b = 0; b < 8; b++)
        plan->device[1 + b] = b / 2;
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, 5, 1e-9);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A paced op falls due while another device computes natively: it is late by the delay
 * for one thread computing, not none. A fork: a and seven branches on a native device (1 ms
 * each, computing throughout), the eighth branch on a paced one, held 1.5 ms. */
static void test_paced_contention(void)
{
    pl_graph *g = fork_of_eight();
    pl_error err;
    char text[512];
    snprintf(text, sizeof text, "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": "
             "\"mixed\", \"devices\": [{\"name\": \"native\", \"threads\": 1, "
             "\"memory_bytes\": 1048576}, {\"name\": \"paced\", \"threads\": 1, "
             "\"memory_bytes\": 1048576, \"flops_per_second\": %.17g}], \"default_link\": {}}",
             g->ops[8].flops / 1.5e-3);
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "mixed", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_plan *plan = pl_plan_new(g, NULL);
    plan->device[8] = 1; /* b7 */
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_cost_model m = unit_costs(0); /* 1 ms of work, so b7 sleeps through the rest */
    pl_cost_model slow = m;
    for (int k = 3; k < PL_COST_CONTENTION; k++) /* one computing, or more */
        slow.paced_delays[PL_DELAY_SLEPT][k] = 0.25e-3;
    m.paced_delays[PL_DELAY_SLEPT][0] = 0.25e-3;
    int b7 = -1;
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].kind == PL_TASK_OP && p->tasks[i].op == 8)
            b7 = i;
    CU_ASSERT_FATAL(b7 >= 0);
    double starts[64], ends[64];
    CU_ASSERT_FATAL(p->n_tasks <= 64);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &slow, &sim, starts, ends, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(ends[b7] - starts[b7], 1.5e-3 + 0.25e-3 + slow.task_seconds, 1e-12);
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, starts, ends, NULL), PL_OK);
    CU_ASSERT_DOUBLE_EQUAL(ends[b7] - starts[b7], 1.5e-3 + m.task_seconds, 1e-12);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Ops on two native devices at once share the machine, by hand (fork_of_eight, every op
 * 1 ms, copies free, no hand-offs): a on the first device 0-1, then b0 on the second
 * beside b1 on the first. Alone they end at 2, b2..b7 run 2-8, join 8-9, loss 9-10. At
 * twice as slow together, b0 and b1 end at 3 and everything after a millisecond later.
 * At 1.5 for relu alone, both end at 2.5. One device never meets another: no change. */
static void test_native_sharing(void)
{
    pl_graph *g = fork_of_eight();
    pl_cluster *c = two_devices(1 << 20);
    pl_plan *plan = pl_plan_new(g, NULL);
    plan->device[1] = 1; /* b0 */
    pl_plan *alone = pl_plan_new(g, NULL);
    pl_program *p = pl_program_new(g, c, plan, NULL), *one = pl_program_new(g, c, alone, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_PTR_NOT_NULL_FATAL(one);
    pl_cost_model m = unit_costs(0);
    pl_cost_set_copy_line(&m, 0, 0);
    pl_simulation sim;
    double factors[][2] = {{0, 10}, {2, 11}, {1.5, 10.5}}; /* every kind's, the step in ms */
    for (int f = 0; f < 3; f++) {
        m.ops[1][PL_OP_COUNT].together = f == 2 ? 1 : factors[f][0];
        m.ops[1][PL_OP_RELU].together = f == 2 ? 1.5 : 0;
        CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
        CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, factors[f][1], 1e-9);
        CU_ASSERT_EQUAL(pl_simulate(one, c, &m, &sim, NULL, NULL, NULL), PL_OK);
        CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, 11, 1e-9);
    }
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_together(&m, PL_OP_RELU, 1), 1.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_together(&m, PL_OP_CONCAT, 1), 1, 0);
    pl_program_free(p);
    pl_program_free(one);
    pl_plan_free(plan);
    pl_plan_free(alone);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Devices on cores of their own (they poll): an op whose input the other device's thread
 * copied in takes remote_seconds longer. The schedule of test_two_devices_native with 0.5
 * ms more for the ops on b with h among their inputs (fc, fc grad_a and fc grad_b: h came
 * from a) and for h grad_b on a (grad_a from b): b: fc 2-3.5, loss 3.5-4.5, loss grad
 * 4.5-5.5, fc grad_a 5.5-7, copy grad_a 7-8, fc grad_b 8-9.5, fc accumulate 9.5-10.5, fc
 * update 10.5-11.5; a: h grad_b 8-9.5, h accumulate 9.5-10.5, h update 10.5-11.5. Not on
 * one device, nor on devices that do not poll (not pinned to cores: the term was measured
 * on pinned ones). */
static void test_remote_inputs(void)
{
    pl_graph *g = pl_test_two_layers();
    static const int cores[] = {0, 1};
    for (int pinned = 0; pinned < 2; pinned++) {
        pl_cluster *c = two_devices(1 << 20);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        for (int d = 0; d < 2 && pinned; d++) {
            c->devices[d].n_cores = 1;
            c->devices[d].cores = &cores[d];
        }
        pl_plan *plan = pl_plan_new(g, NULL), *alone = pl_plan_new(g, NULL);
        plan->device[1] = plan->device[2] = 1;
        pl_program *p = pl_program_new(g, c, plan, NULL), *one = pl_program_new(g, c, alone, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT_PTR_NOT_NULL_FATAL(one);
        pl_cost_model m = unit_costs(0);
        m.remote_seconds = 0.5e-3;
        pl_simulation sim;
        CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
        CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, pinned ? 11.5 : 10, 1e-9);
        CU_ASSERT_EQUAL(pl_simulate(one, c, &m, &sim, NULL, NULL, NULL), PL_OK);
        CU_ASSERT_DOUBLE_EQUAL(1e3 * sim.step_seconds, 11, 1e-9);
        c->devices[0].cores = c->devices[1].cores = NULL; /* not the cluster's to free */
        c->devices[0].n_cores = c->devices[1].n_cores = 0;
        pl_program_free(p);
        pl_program_free(one);
        pl_plan_free(plan);
        pl_plan_free(alone);
        pl_cluster_free(c);
    }
    pl_graph_free(g);
}

/* Where no kernel holds a core, a delay grows with the threads busy and used; elsewhere
 * it is its level's; never below 0. */
static void test_delay_sharing(void)
{
    pl_cost_model m = unit_costs(0);
    for (int k = 0; k < PL_COST_CONTENTION; k++)
        m.paced_delays[PL_DELAY_SPUN][k] = (k + 1) * 1e-6;
    double *share = m.paced_sharing[PL_DELAY_SPUN];
    share[PL_SHARING_BUSY] = 2e-6, share[PL_SHARING_USED] = 0.5e-6, share[PL_SHARING_BOTH] = 0.1e-6;
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 0, 3, 5), 1e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 1, 3, 5), 2e-6 + 2.5e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 2, 3, 5),
                           3e-6 + 6e-6 + 2.5e-6 + 1.5e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 3, 3, 5), 4e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 9, 3, 5), 5e-6, 1e-15);
    share[PL_SHARING_USED] = -1e-6;
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_delay(&m, PL_DELAY_SPUN, 1, 0, 5), 0, 0);
}

/* Calibration fits the plane to delays made from one, recovering it; a hand-off keeps
 * its levels' means; a level with few samples takes the one below's. */
static void test_delay_fit(void)
{
    pl_cost_model m = unit_costs(0);
    delay_samples by_level[PL_DELAY_COUNT][PL_COST_CONTENTION] = {{{0}}};
    samples finish = {0};
    for (uint64_t i = 0; i < 4000; i++) {
        int level = 1 + (int)(i % 2), busy = level == 1 ? 0 : 1 + (int)(pl_rng_u64(7, 3 * i) % 5);
        int used = 1 + (int)(pl_rng_u64(7, 3 * i + 1) % 15);
        double noise = 1e-7 * (2 * pl_rng_uniform(7, 3 * i + 2) - 1);
        double spun = 0.5e-6 + 1.5e-6 * busy + 0.1e-6 * used + 0.05e-6 * busy * used;
        CU_ASSERT_FATAL(pl_calib_add_delay(&by_level[PL_DELAY_SPUN][level], spun + noise, busy,
                                           used, 0));
        CU_ASSERT_FATAL(pl_calib_add_delay(&by_level[PL_DELAY_HANDOFF][level],
                                           level == 1 ? 20e-6 : 10e-6, busy, used, 0));
    }
    for (int i = 0; i < 40; i++)
        CU_ASSERT_FATAL(pl_calib_add_delay(&by_level[PL_DELAY_SPUN][3], 30e-6, 1, 3, 0));
    for (int i = 0; i < 5; i++) /* too few: level 3's */
        CU_ASSERT_FATAL(pl_calib_add_delay(&by_level[PL_DELAY_SPUN][4], 1e-3, 2, 3, 0));
    pl_calib_fit_delays(&m, by_level, &finish);
    const double *spun = m.paced_delays[PL_DELAY_SPUN], *share = m.paced_sharing[PL_DELAY_SPUN];
    CU_ASSERT_DOUBLE_EQUAL(spun[1], 0.5e-6, 0.02e-6);
    CU_ASSERT_DOUBLE_EQUAL(spun[2], 0.5e-6, 0.02e-6);
    CU_ASSERT_DOUBLE_EQUAL(share[PL_SHARING_BUSY], 1.5e-6, 0.01e-6);
    CU_ASSERT_DOUBLE_EQUAL(share[PL_SHARING_USED], 0.1e-6, 0.005e-6);
    CU_ASSERT_DOUBLE_EQUAL(share[PL_SHARING_BOTH], 0.05e-6, 0.002e-6);
    CU_ASSERT_DOUBLE_EQUAL(spun[3], 30e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(spun[4], 30e-6, 1e-12);
    /* slept, never measured here, takes the spun plane */
    CU_ASSERT_DOUBLE_EQUAL(m.paced_sharing[PL_DELAY_SLEPT][PL_SHARING_BUSY], share[PL_SHARING_BUSY], 0);
    CU_ASSERT_DOUBLE_EQUAL(m.paced_delays[PL_DELAY_HANDOFF][1], 20e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.paced_delays[PL_DELAY_HANDOFF][2], 10e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(m.paced_sharing[PL_DELAY_HANDOFF][PL_SHARING_BUSY], 0, 0);
    for (int d = 0; d < PL_DELAY_COUNT; d++)
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            pl_calib_free_delays(&by_level[d][k]);
}

/* Random plans (devices, stages, micro-batches, schedules, deferral) of every small suite
 * model on a cluster: none simulates faster than the bound. */
static void random_plans_over_bound(pl_cluster *c, const pl_cost_model *m)
{
    for (int i = 0; i < PL_TEST_SMALL_MODELS; i++) {
        pl_graph *g = pl_test_bundled_training_graph(pl_test_small_models[i], 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        double bound;
        CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, m, &bound, NULL), PL_OK);
        for (uint64_t seed = 1; seed <= 20; seed++) {
            pl_plan *plan = pl_test_random_plan(g, c->n_devices, seed);
            pl_program *p = pl_program_new(g, c, plan, NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            pl_simulation sim;
            CU_ASSERT_EQUAL(pl_simulate(p, c, m, &sim, NULL, NULL, NULL), PL_OK);
            if (sim.step_seconds < bound)
                fprintf(stderr, "\n    %s on %s, seed %d: %g s under the bound %g s\n",
                        pl_test_small_models[i], c->name, (int)seed, sim.step_seconds, bound);
            CU_ASSERT(bound > 0 && sim.step_seconds >= bound);
            pl_program_free(p);
            pl_plan_free(plan);
        }
        pl_graph_free(g);
    }
}

/* No plan simulates faster than the bound: random plans of every small suite model on
 * paced-4, on two native devices, on unequal-4 and at a GPU cluster's ratios (on a machine of 1 GFLOP/s, where its
 * devices run alike, and of 100 GFLOP/s, where they run at their declared rates). */
static void test_lower_bound_random_plans(void)
{
    pl_cluster *clusters[] = {pl_test_bundled_cluster("paced-4.json"), two_devices(1LL << 40),
                              pl_test_bundled_cluster("unequal-4.json"),
                              pl_test_real_ratio_cluster()};
    CU_ASSERT_PTR_NOT_NULL_FATAL(clusters[0]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(clusters[2]);
    CU_ASSERT_PTR_NOT_NULL_FATAL(clusters[3]);
    for (int machine = 0; machine < 2; machine++) {
        pl_cost_model m = pl_test_costs((pl_op_cost){1e-6, machine ? 1e-11 : 1e-9, 1e-10, 1, 0, 0},
                                        1e-6, 0, 0);
        for (int k = 0; k < PL_COST_CONTENTION; k++) /* this machine's, about */
            m.paced_delays[PL_DELAY_SLEPT][k] = m.paced_delays[PL_DELAY_COPY][k] =
                8e-6 + 4e-5 * k;
        for (size_t k = 0; k < sizeof clusters / sizeof *clusters; k++)
            random_plans_over_bound(clusters[k], &m);
    }
    for (size_t k = 0; k < sizeof clusters / sizeof *clusters; k++)
        pl_cluster_free(clusters[k]);
}

/* On hardware every kernel pays its launch, a shard of a split op too: random plans that
 * split ops over 2 to 16 devices, with micro-batches, of every small suite model on
 * A100 nodes (the roofline alone, as for a cluster placer cannot run) simulate no faster
 * than the bound, and the bound of a model of small ops is most of its critical path on
 * one device, launches and all, not that path shared among the devices a split may use. */
static void test_lower_bound_launches(void)
{
    pl_cluster *c = pl_test_bundled_cluster("a100-2-nodes.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_cost_model m = {0};
    for (int i = 0; i < PL_TEST_SMALL_MODELS; i++) {
        pl_graph *g = pl_test_bundled_training_graph(pl_test_small_models[i], 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(g);
        double bound;
        CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
        for (uint64_t seed = 1; seed <= 8; seed++) {
            pl_plan *plan = pl_test_random_plan(g, c->n_devices, seed);
            for (int o = 0; o < g->n_forward_ops; o++) {
                uint64_t draw = pl_rng_u64(seed, 9000u + (uint64_t)o);
                if (draw % 2 || g->ops[o].outputs[0] == g->loss)
                    continue;
                int k = 2 << (draw / 2 % 4), devices[PL_MAX_SPLIT]; /* 2, 4, 8 or 16 */
                for (int s = 0; s < k; s++)
                    devices[s] = (int)((draw / 16 + (uint64_t)s) % (uint64_t)c->n_devices);
                CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, o, k, devices, NULL), PL_OK);
            }
            pl_program *p = pl_program_new(g, c, plan, NULL);
            CU_ASSERT_PTR_NOT_NULL_FATAL(p);
            pl_simulation sim;
            CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
            if (sim.step_seconds < bound)
                fprintf(stderr, "\n    %s split, seed %d: %g s under the bound %g s\n",
                        pl_test_small_models[i], (int)seed, sim.step_seconds, bound);
            CU_ASSERT(sim.step_seconds >= bound);
            pl_program_free(p);
            pl_plan_free(plan);
        }
        pl_graph_free(g);
    }
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_plan *one = pl_plan_new(g, NULL);
    pl_program *p = pl_program_new(g, c, one, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_simulation sim;
    double bound;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT(bound > 0.9 * sim.critical_path_seconds);
    pl_program_free(p);
    pl_plan_free(one);
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* Four paced devices of 4, 4, 1 and 1 GFLOP/s on a fast machine: the transformer's work
 * spreads over 10 GFLOP/s, not over four devices as fast as the fastest (16), so its
 * bound is above that of four 4 GFLOP/s devices by nearly 16/10, and no plan beats it. */
static void test_lower_bound_unequal(void)
{
    pl_graph *g = pl_test_bundled_training_graph("transformer.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *unequal = pl_test_bundled_cluster("unequal-4.json");
    pl_cluster *fast = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1LL << 30,
                                                         .flops = 4e9,
                                                         .link_bytes_per_second = 2e9});
    CU_ASSERT_PTR_NOT_NULL_FATAL(unequal);
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-6, 1e-11, 1e-10, 1, 0, 0}, 1e-6, 0, 0);
    double bound_unequal, bound_fast;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, unequal, &m, &bound_unequal, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, fast, &m, &bound_fast, NULL), PL_OK);
    CU_ASSERT(bound_unequal > 1.5 * bound_fast);
    CU_ASSERT(bound_unequal <= 1.6 * bound_fast * (1 + 1e-9));
    pl_plan *plan = pl_plan_new(g, NULL); /* everything on one fast device */
    pl_program *p = pl_program_new(g, unequal, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, unequal, &m, &sim, NULL, NULL, NULL), PL_OK);
    CU_ASSERT(sim.step_seconds >= bound_unequal);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(fast);
    pl_cluster_free(unequal);
    pl_graph_free(g);
}

/* Out-of-memory: the simulator names the device the executor refuses. */
static void test_out_of_memory(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cluster *c = two_devices(160);
    pl_plan *plan = pl_plan_new(g, NULL);
    plan->device[2] = 1;
    pl_program *p = pl_program_new(g, c, plan, NULL);
    pl_cost_model m = unit_costs(0);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, NULL, NULL, NULL), PL_OK);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    pl_fit fit;
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
    CU_ASSERT_FALSE(fit.fits);
    CU_ASSERT_EQUAL(sim.oom_device, fit.device);
    CU_ASSERT_EQUAL(sim.memory[fit.device], fit.need);
    pl_executor_free(ex);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The fit recovers the coefficients that made exact samples, and drops a negative one. */
static void test_fit(void)
{
    double seconds[6], flops[6], bytes[6];
    for (int i = 0; i < 6; i++) {
        flops[i] = 1e6 * (i + 1) * (i % 2 ? 3 : 1);
        bytes[i] = 4e3 * (6 - i);
        seconds[i] = 2e-6 + 1e-10 * flops[i] + 5e-11 * bytes[i];
    }
    pl_op_cost c = pl_cost_fit(seconds, flops, bytes, 6);
    CU_ASSERT_DOUBLE_EQUAL(c.seconds, 2e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(c.per_flop, 1e-10, 1e-16);
    CU_ASSERT_DOUBLE_EQUAL(c.per_byte, 5e-11, 1e-17);
    for (int i = 0; i < 6; i++)
        seconds[i] = 1e-3 - 1e-11 * flops[i]; /* falls with FLOPs: no negative cost */
    c = pl_cost_fit(seconds, flops, bytes, 6);
    CU_ASSERT(c.seconds >= 0 && c.per_flop >= 0 && c.per_byte >= 0);
}

/* Routes: a kind's ops on two kernel routes of different speed get a fit each (the
 * kind's over both stays), taken by the route's ops; a route of too few samples, a kind of
 * one route and a route the profile lacks take the kind's fit; a profile keeps them. */
static void test_route_fits(void)
{
    pl_op_sample s[40];
    int n = 0;
    for (int i = 0; i < 8; i++) { /* two routes of conv2d: 1 ns and 10 ns a FLOP */
        double flops = 1e5 * (i + 1);
        s[n++] = (pl_op_sample){PL_OP_CONV2D, PL_ROUTE_IM2COL, 1e-9 * flops, flops, 0};
        s[n++] = (pl_op_sample){PL_OP_CONV2D, PL_ROUTE_DEPTHWISE, 1e-8 * flops, flops, 0};
    }
    for (int i = 0; i < 3; i++) /* too few for a fit of their own */
        s[n++] = (pl_op_sample){PL_OP_CONV2D, PL_ROUTE_WINOGRAD, 5e-4 * (i + 1), 1e5 * (i + 1), 0};
    for (int i = 0; i < 6; i++) /* one route: the kind's fit is its own */
        s[n++] = (pl_op_sample){PL_OP_RELU, PL_ROUTE_ONE, 2e-6 * (i + 1), 0, 1e3 * (i + 1)};
    pl_cost_model m;
    memset(&m, 0, sizeof m);
    m.ops[1][PL_OP_CONV2D].together = 1.5;
    CU_ASSERT_EQUAL_FATAL(pl_cost_fit_samples(&m, 1, s, n, NULL), PL_OK);
    CU_ASSERT_EQUAL(m.n_routes, 2);
    CU_ASSERT_EQUAL(m.ops[1][PL_OP_CONV2D].samples, 19);
    CU_ASSERT_DOUBLE_EQUAL(m.ops[1][PL_OP_CONV2D].together, 1.5, 0); /* kept */
    CU_ASSERT_EQUAL(m.ops[1][PL_OP_COUNT].samples, n);
    double im2col = pl_cost_op(&m, PL_OP_CONV2D, PL_ROUTE_IM2COL, 1, 1e6, 0);
    double depthwise = pl_cost_op(&m, PL_OP_CONV2D, PL_ROUTE_DEPTHWISE, 1, 1e6, 0);
    CU_ASSERT_DOUBLE_EQUAL(im2col, 1e-3, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(depthwise, 1e-2, 1e-8);
    double kind = pl_cost_op(&m, PL_OP_CONV2D, PL_ROUTE_ONE, 1, 1e6, 0);
    CU_ASSERT(kind > im2col && kind < depthwise);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op(&m, PL_OP_CONV2D, PL_ROUTE_WINOGRAD, 1, 1e6, 0), kind, 0);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op(&m, PL_OP_RELU, PL_ROUTE_ONE, 1, 0, 5e3), 1e-5, 1e-11);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_least_over_fit(&m, PL_OP_CONV2D, PL_ROUTE_DEPTHWISE, 1), 1,
                           1e-6);
    char path[] = "/tmp/placer-routes-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    pl_cost_model back;
    CU_ASSERT_EQUAL(pl_cost_model_write(&m, path, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_cost_model_read(&back, path, NULL), PL_OK);
    CU_ASSERT_EQUAL(back.n_routes, 2);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op(&back, PL_OP_CONV2D, PL_ROUTE_DEPTHWISE, 1, 1e6, 0),
                           depthwise, 1e-10); /* written to 9 digits */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op(&back, PL_OP_CONV2D, PL_ROUTE_ONE, 1, 1e6, 0), kind, 1e-10);
    unlink(path);
    pl_cost_model_clear(&back);
}

/* The measured times of the first `count` ops of a bundled model's training graph at
 * `batch` (all: -1), each `seconds`, into the model. */
static void measure_ops(pl_cost_model *m, const char *file, int batch, int count, double seconds)
{
    pl_graph *g = pl_test_bundled_training_graph(file, batch);
    CU_ASSERT_FATAL(g != NULL);
    int n = count < 0 || count > g->n_ops ? g->n_ops : count;
    pl_op_time *times = malloc((size_t)n * sizeof *times);
    for (int o = 0; o < n; o++)
        times[o] = (pl_op_time){pl_op_signature(&g->ops[o], g->tensors, 1), seconds};
    CU_ASSERT_EQUAL(pl_cost_add_measured(m, times, n, NULL), PL_OK);
    free(times);
    pl_graph_free(g);
}

/* The probe: a model whose profiled ops make up its step speaks for the machine; one whose
 * few profiled ops are a sliver of its step, or whose step takes microseconds, leaves it to
 * the reference model, run alone. */
static void test_probe(void)
{
    char model[4096], reference[4096];
    snprintf(model, sizeof model, "%s/graphs/small/mlp-small.json", pl_test_srcdir());
    snprintf(reference, sizeof reference, "%s/graphs/small/cnn-small.json", pl_test_srcdir());
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-6, 0, 0, 1, 0, 0}, 1e-6, 0, 0);
    measure_ops(&m, "small/mlp-small.json", 4, -1, 100e-6); /* every op: the model alone */
    pl_probe probe;
    CU_ASSERT_EQUAL_FATAL(pl_cost_probe(&m, model, reference, NULL, &probe, NULL), PL_OK);
    CU_ASSERT_FALSE(probe.reference);
    CU_ASSERT_EQUAL(probe.batch, 4);
    CU_ASSERT(probe.ops >= 20);
    CU_ASSERT(probe.scale > 0 && probe.profiled > 0);
    pl_cost_model_clear(&m);

    m = pl_test_costs((pl_op_cost){1e-6, 0, 0, 1, 0, 0}, 1e-6, 0, 0);
    measure_ops(&m, "small/mlp-small.json", 4, -1, 10e-6); /* every op, a step under 1 ms */
    CU_ASSERT_EQUAL_FATAL(pl_cost_probe(&m, model, reference, NULL, &probe, NULL), PL_OK);
    CU_ASSERT_TRUE(probe.reference);
    CU_ASSERT_EQUAL(probe.batch, 0);
    pl_cost_model_clear(&m);

    m = pl_test_costs((pl_op_cost){1e-4, 0, 0, 1, 0, 0}, 1e-6, 0, 0);
    measure_ops(&m, "small/mlp-small.json", 4, 6, 1e-9); /* six ops of a nanosecond */
    CU_ASSERT_EQUAL_FATAL(pl_cost_probe(&m, model, reference, NULL, &probe, NULL), PL_OK);
    pl_probe alone;
    CU_ASSERT_EQUAL_FATAL(pl_cost_probe(&m, NULL, reference, NULL, &alone, NULL), PL_OK);
    CU_ASSERT_TRUE(probe.reference);
    CU_ASSERT_EQUAL(probe.batch, 0); /* the model not run */
    CU_ASSERT_EQUAL(probe.ops, alone.ops); /* the reference's alone: the six not counted */
    measure_ops(&m, "small/cnn-small.json", 4, -1, 10e-6);
    CU_ASSERT_EQUAL_FATAL(pl_cost_probe(&m, model, reference, NULL, &probe, NULL), PL_OK);
    CU_ASSERT_TRUE(probe.reference);
    CU_ASSERT(probe.ops >= 20);
    pl_cost_model_clear(&m);
}

/* The copy curve: a point per range of sizes (a factor of 4) with three copies or more,
 * medians, never falling; linear between points, the last rate beyond. */
static void test_copy_curve(void)
{
    pl_cost_model m;
    memset(&m, 0, sizeof m);
    samples copies = {0};
    const double taken[][2] = {
        {100, 1e-6}, {120, 1e-6}, {90, 50e-6}, {110, 1e-6}, /* one slow: the median holds */
        {3000, 2e-6}, {3100, 2e-6}, {2900, 2e-6},
        {1 << 20, 0.5e-6}, {1 << 20, 0.5e-6}, {1 << 20, 0.5e-6}, /* faster: held at 2 us */
        {8 << 20, 800e-6}, {8 << 20, 800e-6}, {8 << 20, 800e-6},
        {70000, 1e-3}, /* alone in its range: no point */
    };
    for (size_t i = 0; i < sizeof taken / sizeof *taken; i++)
        CU_ASSERT_FATAL(pl_calib_add_sample(&copies, taken[i][1], 0, taken[i][0]));
    pl_calib_fit_copies(&m, &copies);
    CU_ASSERT_EQUAL_FATAL(m.n_copy_points, 4);
    CU_ASSERT_DOUBLE_EQUAL(m.copy_curve[0].bytes, 105, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m.copy_curve[0].seconds, 1e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(m.copy_curve[1].bytes, 3000, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(m.copy_curve[2].seconds, 2e-6, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_native_copy(&m, 10), 1e-6, 1e-15);    /* below */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_native_copy(&m, 1552.5), 1.5e-6, 1e-15); /* halfway */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_native_copy(&m, 16 << 20), 1600e-6, 1e-12); /* beyond */
    pl_calib_free_samples(&copies);
    copies = (samples){0};
    pl_calib_add_sample(&copies, 1e-6, 0, 100); /* too few copies for a curve: a line */
    pl_calib_add_sample(&copies, 2e-6, 0, 1100);
    pl_calib_fit_copies(&m, &copies);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_native_copy(&m, 2100), 3e-6, 1e-12);
    pl_calib_free_samples(&copies);
}

/* A profile written and read back is the same, measured op times included. */
static void test_profile_file(void)
{
    pl_cost_model m = unit_costs(2e-5), back;
    pl_cost_machine_key(m.machine, sizeof m.machine);
    m.ops[2][PL_OP_MATMUL] = (pl_op_cost){1e-6, 2e-11, 3e-12, 40, 1.25};
    m.paced_sharing[PL_DELAY_COPY][PL_SHARING_USED] = -3e-7;
    m.remote_seconds = 2.5e-7;
    m.calibration = (pl_calibration_record){1795547646, 91.5, 3, 419, 0.021, 0.162, 0.84,
                                            0.25, 0.75};
    pl_op_time times[] = {{42, 3e-4}, {7, 1e-5}, {42, 1e-4}, {42, 2e-4}, {9, 5e-5}, {9, 4e-5}};
    CU_ASSERT_EQUAL(pl_cost_add_measured(&m, times, 6, NULL), PL_OK);
    CU_ASSERT_EQUAL(m.n_measured, 3);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_lookup(&m, 42), 2e-4, 0); /* the median */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_lookup(&m, 9), 4e-5, 0);  /* of two, the lower */
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_lookup(&m, 8), -1, 0);
    char path[] = "/tmp/placer-profile-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL(pl_cost_model_write(&m, path, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_cost_model_read(&back, path, NULL), PL_OK);
    CU_ASSERT_STRING_EQUAL(back.machine, m.machine);
    CU_ASSERT_DOUBLE_EQUAL(back.ops[2][PL_OP_MATMUL].per_flop, 2e-11, 1e-20);
    CU_ASSERT_EQUAL(back.ops[2][PL_OP_MATMUL].samples, 40);
    CU_ASSERT_DOUBLE_EQUAL(back.ops[2][PL_OP_MATMUL].together, 1.25, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(back.handoff_seconds, 2e-5, 1e-14);
    CU_ASSERT_DOUBLE_EQUAL(back.paced_sharing[PL_DELAY_COPY][PL_SHARING_USED], -3e-7, 1e-18);
    CU_ASSERT_DOUBLE_EQUAL(back.remote_seconds, 2.5e-7, 1e-18);
    CU_ASSERT_EQUAL(back.n_copy_points, 2);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_native_copy(&back, 1e6), 1e-3, 1e-15);
    CU_ASSERT_EQUAL(back.n_measured, 3);
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_lookup(&back, 7), 1e-5, 1e-14);
    CU_ASSERT_EQUAL(back.calibration.measured_at, 1795547646);
    CU_ASSERT_DOUBLE_EQUAL(back.calibration.seconds, 91.5, 1e-9);
    CU_ASSERT_EQUAL(back.calibration.attempts, 3);
    CU_ASSERT_EQUAL(back.calibration.compared, 419);
    CU_ASSERT_DOUBLE_EQUAL(back.calibration.spread_p90, 0.162, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(back.calibration.others_share, 0.84, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(back.calibration.others_threshold, 0.75, 1e-12);
    FILE *text = fopen(path, "r"); /* the time is written in ISO 8601 too */
    char line[256];
    bool iso = false;
    while (text && fgets(line, sizeof line, text))
        iso = iso || strstr(line, "\"measured_at_utc\": \"2026-11-24T19:14:06Z\"");
    if (text)
        fclose(text);
    CU_ASSERT(iso);
    pl_cost_model_clear(&back); /* read fills a model afresh, so it owns nothing yet */
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"format\": \"placer-cost-profile\", \"version\": %d}",
            PL_COST_FORMAT_VERSION + 1); /* a newer placer's */
    fclose(f);
    pl_error err;
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL(pl_cost_model_read(&back, path, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "version"));
    f = fopen(path, "w"); /* a copy curve whose sizes go down */
    fprintf(f, "{\"format\": \"placer-cost-profile\", \"version\": %d, \"machine\": \"m\", "
            "\"copy_curve\": [[100, 1e-6], [50, 2e-6]], \"handoff_seconds\": 0, "
            "\"poll_seconds\": 0, \"wake_seconds\": 0, \"task_seconds\": 0, "
            "\"paced_delays\": {\"slept\": [0, 0, 0, 0, 0], \"spun\": [0, 0, 0, 0, 0], \"copy\": "
            "[0, 0, 0, 0, 0], \"handoff\": [0, 0, 0, 0, 0], \"next\": [0, 0, 0, 0, 0], "
            "\"sharing\": {\"slept\": [0, 0, 0], \"spun\": [0, 0, 0], \"copy\": [0, 0, 0], "
            "\"handoff\": [0, 0, 0], \"next\": [0, 0, 0]}, \"signal\": 0, \"finish\": 0}, "
            "\"ops\": [], \"measured\": []}",
            PL_COST_FORMAT_VERSION);
    fclose(f);
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL(pl_cost_model_read(&back, path, &err), PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.path, "/copy_curve/1");
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "bytes must increase"));
    unlink(path);
    pl_cost_model_clear(&m);
    pl_cost_model_clear(&back);
}

/* The passes' spread, by hand: a signature's lower median in each pass, compared when both
 * passes timed it and either time reaches the minimum. */
static void test_pass_spread(void)
{
    pl_op_time first[] = {{4, 1e-3}, {1, 200e-6}, {1, 100e-6}, {2, 5e-4}, {3, 10e-6},
                          {1, 120e-6}, {6, 40e-6}};
    pl_op_time second[] = {{6, 60e-6}, {5, 1e-3}, {3, 20e-6}, {1, 100e-6}, {4, 0.8e-3}};
    double spread[7];
    int n = pl_calib_pass_spread(first, 7, second, 5, 50e-6, spread);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT_DOUBLE_EQUAL(spread[0], 0.2, 1e-12);       /* 1: 120 us (of 100, 120, 200) / 100 */
    CU_ASSERT_DOUBLE_EQUAL(spread[1], 0.25, 1e-12);      /* 4: 1 ms / 0.8 ms; 2, 5: one pass */
    CU_ASSERT_DOUBLE_EQUAL(spread[2], 1.0 / 3, 1e-12);   /* 6: 40 / 60 us; 3: both too short */
    CU_ASSERT_EQUAL(pl_calib_pass_spread(first, 7, second, 0, 0, spread), 0);
}

/* Noisy by the recorded thresholds; old after PL_PROFILE_OLD_DAYS or at an unknown time;
 * the warning says which, when and what to do. */
static void test_profile_noise(void)
{
    pl_calibration_record quiet = {1795547646, 10, 1, 425, 0.02, 0.10, 0.29, 0.25, 0.75};
    pl_calibration_record spread = quiet, others = quiet, few = quiet;
    spread.spread_p90 = 0.3;
    others.others_share = 0.8;
    few.spread_p90 = 0.9;
    few.compared = PL_CALIBRATION_MIN_COMPARED - 1; /* too few ops to judge the spread */
    CU_ASSERT(!pl_calibration_noisy(&quiet));
    CU_ASSERT(pl_calibration_noisy(&spread));
    CU_ASSERT(pl_calibration_noisy(&others));
    CU_ASSERT(!pl_calibration_noisy(&few));
    CU_ASSERT(!pl_calibration_noisy(&(pl_calibration_record){0})); /* made by hand */
    pl_cost_model m = unit_costs(1e-5);
    long long day = 86400, at = quiet.measured_at;
    m.calibration = quiet;
    char line[1024];
    CU_ASSERT(!pl_profile_old(&m, at + (PL_PROFILE_OLD_DAYS - 1) * day));
    CU_ASSERT(!pl_profile_warning(&m, at + 3600, line, sizeof line));
    CU_ASSERT(pl_profile_old(&m, at + (PL_PROFILE_OLD_DAYS + 1) * day));
    CU_ASSERT(pl_profile_warning(&m, at + 41 * day, line, sizeof line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "old: measured 41 days ago, 2026-11-24T19:14:06Z"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "placer calibrate --force"));
    m.calibration = others;
    CU_ASSERT(pl_profile_warning(&m, at + 3 * 3600, line, sizeof line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "noisy: other work took 80% of the CPU, over 75%"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "measured 3 h ago"));
    CU_ASSERT_PTR_NULL(strchr(line, '\n'));
    m.calibration = spread;
    CU_ASSERT(pl_profile_warning(&m, at, line, sizeof line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "disagreed by 30% or more on a tenth of its ops"));
    m.calibration = (pl_calibration_record){0};
    CU_ASSERT(pl_profile_old(&m, at));
    CU_ASSERT(pl_profile_warning(&m, at, line, sizeof line));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "at an unknown time"));
    pl_cost_model_clear(&m);
}

void pl_register_simulate_tests(void)
{
    static const pl_test_case cases[] = {
        {"one device: back to back", test_chain_one_device},
        {"two devices: by hand", test_two_devices},
        {"native devices sharing the machine: by hand", test_native_sharing},
        {"a 2-stage pipeline: by hand", test_pipeline},
        {"a 2-stage pipeline, weight gradients deferred: by hand", test_pipeline_deferred},
        {"two devices, native link: by hand", test_two_devices_native},
        {"a 2-stage pipeline, native link: by hand", test_pipeline_native},
        {"the lower bound", test_lower_bound},
        {"paced lateness: the pacer sleeps, spins, or does not hold", test_paced_lateness},
        {"the lower bound on paced devices: held times, no delays", test_lower_bound_paced},
        {"the lower bound under measured op times", test_lower_bound_measured},
        {"the lower bound on native devices: floors under measured tasks", test_lower_bound_native},
        {"the lower bound: an update's chain", test_lower_bound_update_chain},
        {"the lower bound: the pipeline's fill and drain", test_lower_bound_fill_and_drain},
        {"the lower bound: under random plans", test_lower_bound_random_plans},
        {"the lower bound on unequal devices", test_lower_bound_unequal},
        {"the lower bound on hardware: a launch for every shard", test_lower_bound_launches},
        {"paced delays: a thread computing elsewhere", test_paced_contention},
        {"paced delays: the threads busy and used", test_delay_sharing},
        {"paced delays: the fit", test_delay_fit},
        {"out of memory as the executor says", test_out_of_memory},
        {"the fit", test_fit},
        {"the kernel routes' fits", test_route_fits},
        {"the probe, and when it leaves the model to the reference", test_probe},
        {"the copy curve", test_copy_curve},
        {"profile files", test_profile_file},
        {"native devices on cores of their own: an op's remote inputs", test_remote_inputs},
        {"calibration: the passes' spread", test_pass_spread},
        {"profiles: noisy and old", test_profile_noise},
        {NULL, NULL}};
    pl_test_add_suite("simulate", cases);
}
