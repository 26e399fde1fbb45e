/* Hardware placer cannot run: the bundled hardware clusters read as their datasheets say,
 * nodes make their devices and links, the roofline times ops and copies as worked out by
 * hand, and a device's copies to several peers share its port, in the simulator and in a
 * replay. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_model.h"
#include "data.h"
#include "executor.h"
#include "kernels.h"
#include "roofline.h"
#include "simulate.h"
#include "suites.h"
#include "test_util.h"

static void test_bundled_hardware(void)
{
    static const char *const files[] = {"dgx-a100.json",     "dgx-h100.json",
                                        "a100-2-nodes.json", "a100-4-nodes.json",
                                        "pcie-a100.json",    "mixed-a100-h100.json"};
    static const int devices[] = {8, 8, 16, 32, 8, 16};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        pl_cluster *c = pl_test_bundled_cluster(files[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(c->n_devices, devices[i]);
        CU_ASSERT_TRUE(c->simulated);
        CU_ASSERT_TRUE(c->description[0] != '\0'); /* it cites its datasheet */
        for (int d = 0; d < c->n_devices; d++) {
            CU_ASSERT_PTR_NOT_NULL(c->devices[d].hardware);
            CU_ASSERT_PTR_NOT_NULL(c->devices[d].node);
        }
        pl_cluster_free(c);
    }
    pl_cluster *c = pl_test_bundled_cluster("a100-2-nodes.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const pl_hardware *a100 = c->devices[0].hardware;
    CU_ASSERT_STRING_EQUAL(a100->kind, "A100-SXM4-80GB");
    CU_ASSERT_DOUBLE_EQUAL(a100->peak[PL_MATH_TF32], 156e12, 1);
    CU_ASSERT_EQUAL(a100->math, PL_MATH_TF32);
    CU_ASSERT_EQUAL(c->devices[3].memory_bytes, 85899345920);
    int in0 = pl_cluster_find_device(c, "node0/5"), in1 = pl_cluster_find_device(c, "node1/2");
    CU_ASSERT_TRUE_FATAL(in0 >= 0 && in1 >= 0);
    /* NVLink inside a node, InfiniBand between: 520 and 6,240 FLOP per byte at TF32 */
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, 0, in0)->bytes_per_second, 300e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, in1, in0)->bytes_per_second, 25e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(a100->peak[a100->math] / pl_cluster_link(c, in0, 0)->bytes_per_second,
                           520, 1e-9);
    int groups[PL_MAX_DEVICES], all[PL_MAX_DEVICES];
    for (int d = 0; d < c->n_devices; d++)
        all[d] = d;
    CU_ASSERT_EQUAL(pl_cluster_groups(c, all, c->n_devices, groups), 2); /* the nodes */
    pl_cluster_free(c);
}

/* A kind of 1 TFLOP/s fp32, 8 tf32 (the math), 100 GB/s of memory, 5 us a launch, half
 * the peak on matmuls; two devices of it joined by 10 GB/s with 2 us latency. */
static const char two_gpus[] =
    "{\"format\": \"placer-cluster\", \"version\": 2, \"name\": \"two-gpus\","
    " \"hardware\": [{\"kind\": \"G\", \"peak_flops_per_second\": {\"fp32\": 1e12, \"tf32\":"
    " 8e12}, \"math\": \"tf32\", \"memory_bytes\": 1073741824, \"memory_bytes_per_second\":"
    " 1e11, \"launch_seconds\": 5e-6, \"efficiency\": {\"matmul\": 0.5}}],"
    " \"nodes\": [{\"name\": \"n\", \"hardware\": \"G\", \"devices\": 2, \"link\":"
    " {\"bytes_per_second\": 1e10, \"latency_seconds\": 2e-6}}]}";

static pl_cluster *load_two_gpus(void)
{
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(two_gpus, sizeof two_gpus - 1, "two.json", &err);
    if (!c)
        fprintf(stderr, "%s\n", err.text);
    return c;
}

/* By hand. A 1024^3 matmul: 2^31 FLOP at 8e12 x 0.5 is 536.871 us; its 12 MiB at 100 GB/s
 * 125.829 us; plus 5 us: 541.871 us. An add of 2^20 floats: 2^20 FLOP at the fp32 peak
 * is 1.049 us, its 12 MiB 125.829 us: memory-bound, 130.829 us. A matmul's gradient takes
 * the matmul's efficiency; an op with none given, 1. */
static void test_roofline_by_hand(void)
{
    pl_cluster *c = load_two_gpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    const pl_hardware *hw = c->devices[1].hardware;
    CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
    double bytes = 3.0 * 4 * 1024 * 1024;
    CU_ASSERT_DOUBLE_EQUAL(pl_roofline_seconds(hw, PL_OP_MATMUL, 2.0 * 1024 * 1024 * 1024, bytes),
                           541.870912e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl_roofline_seconds(hw, PL_OP_ADD, 1024.0 * 1024, bytes),
                           130.82912e-6, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hw->efficiency[PL_OP_MATMUL_GRAD_B], 0.5, 0);
    CU_ASSERT_DOUBLE_EQUAL(hw->efficiency[PL_OP_SOFTMAX], 1, 0);
    CU_ASSERT_DOUBLE_EQUAL(pl_roofline_flops_per_second(hw, PL_OP_GELU), 1e12, 1);
    /* the cost model's own entry point, with nothing measured */
    pl_cost_model empty = {0};
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op_on(&empty, PL_OP_ADD, PL_ROUTE_ONE, &c->devices[0], 1024.0 * 1024, bytes),
                           130.82912e-6, 1e-12);
    pl_cluster_free(c);
}

/* The two-layer model with its second layer on the other device: every op task takes its
 * roofline, every copy 2 us + bytes / 10 GB/s, nothing paced or late. */
static void test_roofline_tasks(void)
{
    pl_cluster *c = load_two_gpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_graph *g = pl_test_two_layers();
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    plan->device[1] = plan->device[2] = 1;
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_cost_model empty = {0};
    int copies = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        pl_task_cost parts = pl_cost_task_parts(&empty, p, c, task);
        CU_ASSERT_EQUAL(parts.late, -1);
        double expected;
        if (task->kind == PL_TASK_OP) {
            const pl_op *op = &g->ops[task->op];
            expected = pl_roofline_seconds(c->devices[task->resource].hardware, op->kind,
                                           pl_task_flops(p, task), pl_task_op_bytes(p, task));
        } else {
            expected = 2e-6 + (double)pl_task_bytes(p, task) / 1e10;
            copies++;
        }
        CU_ASSERT_DOUBLE_EQUAL(pl_cost_task(&empty, p, c, task), expected, 1e-15);
    }
    CU_ASSERT_TRUE(copies >= 2); /* the activation there, its gradient back */
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &empty, &sim, NULL, NULL, NULL), PL_OK);
    CU_ASSERT_TRUE(sim.step_seconds > 0);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_graph_free(g);
    pl_cluster_free(c);
}

/* Version 1 files read as before; the hash tells hardware figures apart. */
static void test_hash_and_versions(void)
{
    pl_cluster *c = load_two_gpus();
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    char *other = strdup(two_gpus);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    memcpy(strstr(other, "1e11"), "2e11", 4); /* twice the memory bandwidth */
    pl_error err;
    pl_cluster *faster = pl_cluster_load_buffer(other, strlen(other), "other.json", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(faster);
    CU_ASSERT_NOT_EQUAL(pl_cluster_hash(c), pl_cluster_hash(faster));
    pl_cluster_free(faster);
    free(other);
    pl_cluster_free(c);
    pl_cluster *paced = pl_test_bundled_cluster("paced-4.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(paced);
    CU_ASSERT_FALSE(paced->simulated);
    CU_ASSERT_PTR_NULL(paced->devices[0].hardware);
    pl_cluster_free(paced);
}

/* A replay 1000 times slower: an A100 paced to 156 TFLOP/s x 0.7 / 1000, NVLink to 300
 * MB/s and 2 ms, InfiniBand to 25 MB/s and 5 ms; runnable (paced), not simulated. */
static void test_replay(void)
{
    pl_cluster *hw = pl_test_bundled_cluster("a100-2-nodes.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
    pl_cluster *c = pl_cluster_replay(hw, 1000, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_TRUE(c->paced);
    CU_ASSERT_FALSE(c->simulated);
    CU_ASSERT_EQUAL(c->n_devices, 16);
    CU_ASSERT_PTR_NULL(c->devices[9].hardware);
    CU_ASSERT_STRING_EQUAL(c->devices[9].name, "node1/1");
    CU_ASSERT_DOUBLE_EQUAL(c->devices[9].flops_per_second, 1.092e11, 1e-3);
    CU_ASSERT_EQUAL(c->devices[9].memory_bytes, 85899345920);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, 0, 1)->bytes_per_second, 3e8, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, 0, 1)->latency_seconds, 2e-3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, 9, 0)->bytes_per_second, 2.5e7, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(c, 9, 0)->latency_seconds, 5e-3, 1e-15);
    pl_cluster_free(c);
    pl_cluster_free(hw);
}

/* Four devices of the kind G in one node at 10 GB/s and 2 us: with ports (hardware's
 * default), or with "ports": false. */
static pl_cluster *load_four_gpus(bool ports)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"format\": \"placer-cluster\", \"version\": 2, \"name\": \"four-gpus\",%s"
             " \"hardware\": [{\"kind\": \"G\", \"peak_flops_per_second\": {\"fp32\": 1e12,"
             " \"tf32\": 8e12}, \"math\": \"tf32\", \"memory_bytes\": 1073741824,"
             " \"memory_bytes_per_second\": 1e11, \"launch_seconds\": 5e-6, \"efficiency\":"
             " {\"matmul\": 0.5}}], \"nodes\": [{\"name\": \"n\", \"hardware\": \"G\","
             " \"devices\": 4, \"link\": {\"bytes_per_second\": 1e10, \"latency_seconds\":"
             " 2e-6}}]}", ports ? "" : " \"ports\": false,");
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "four.json", &err);
    if (!c)
        fprintf(stderr, "%s\n", err.text);
    return c;
}

/* The same figures in version 1: four paced devices, one link per pair. */
static pl_cluster *load_four_paced(void)
{
    static const char text[] =
        "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": \"four-paced\","
        " \"devices\": [{\"name\": \"a\", \"memory_bytes\": 1073741824, \"flops_per_second\":"
        " 4e12}, {\"name\": \"b\", \"memory_bytes\": 1073741824, \"flops_per_second\": 4e12},"
        " {\"name\": \"c\", \"memory_bytes\": 1073741824, \"flops_per_second\": 4e12},"
        " {\"name\": \"d\", \"memory_bytes\": 1073741824, \"flops_per_second\": 4e12}],"
        " \"default_link\": {\"bytes_per_second\": 1e10, \"latency_seconds\": 2e-6}}";
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(text, sizeof text - 1, "paced.json", &err);
    if (!c)
        fprintf(stderr, "%s\n", err.text);
    return c;
}

/* h = x w0 on the first device, read by a1, a2 and a3 on the three others, summed back on
 * the first: h's forward copies fan out from one device to three peers. */
static pl_graph *fan_out(void)
{
    return pl_test_training_model(
        "[1024]",
        "{\"name\": \"w0\", \"shape\": [1024, 1024], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w1\", \"shape\": [1024, 8], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w2\", \"shape\": [1024, 8], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w3\", \"shape\": [1024, 8], \"init\": {\"kind\": \"zeros\"}}",
        "{\"name\": \"h\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w0\"], \"outputs\": [\"h\"]},"
        "{\"name\": \"a1\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w1\"],"
        " \"outputs\": [\"a1\"]},"
        "{\"name\": \"a2\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w2\"],"
        " \"outputs\": [\"a2\"]},"
        "{\"name\": \"a3\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w3\"],"
        " \"outputs\": [\"a3\"]},"
        "{\"name\": \"s\", \"op\": \"add\", \"inputs\": [\"a1\", \"a2\"], \"outputs\": [\"s\"]},"
        "{\"name\": \"t\", \"op\": \"add\", \"inputs\": [\"s\", \"a3\"], \"outputs\": [\"t\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"t\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
}

/* Two nodes of two G and a pair given its own link: a device's copies into its node share
 * its node port, to the other node its network port, but for the listed pair; a subset
 * keeps them, and a file of the same figures without ports has none. */
static void test_ports_by_pair(void)
{
    static const char text[] =
        "{\"format\": \"placer-cluster\", \"version\": 2, \"name\": \"two-nodes\","
        " \"hardware\": [{\"kind\": \"G\", \"peak_flops_per_second\": {\"fp32\": 1e12},"
        " \"memory_bytes\": 1073741824, \"memory_bytes_per_second\": 1e11}],"
        " \"nodes\": [{\"name\": \"a\", \"hardware\": \"G\", \"devices\": 2, \"link\":"
        " {\"bytes_per_second\": 1e10}}, {\"name\": \"b\", \"hardware\": \"G\", \"devices\": 2,"
        " \"link\": {\"bytes_per_second\": 1e10}}], \"default_link\": {\"bytes_per_second\": 1e9},"
        " \"links\": [{\"devices\": [\"a/1\", \"b/1\"], \"bytes_per_second\": 5e9}]}";
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(text, sizeof text - 1, "two-nodes.json", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    int a0 = pl_cluster_find_device(c, "a/0"), a1 = pl_cluster_find_device(c, "a/1"),
        b0 = pl_cluster_find_device(c, "b/0"), b1 = pl_cluster_find_device(c, "b/1");
    CU_ASSERT_EQUAL(pl_cluster_port(c, a0, a1), PL_PORT_NODE);
    CU_ASSERT_EQUAL(pl_cluster_port(c, b1, b0), PL_PORT_NODE);
    CU_ASSERT_EQUAL(pl_cluster_port(c, a0, b0), PL_PORT_NETWORK);
    CU_ASSERT_EQUAL(pl_cluster_port(c, a0, b1), PL_PORT_NETWORK);
    CU_ASSERT_EQUAL(pl_cluster_port(c, a1, b0), PL_PORT_NETWORK);
    CU_ASSERT_EQUAL(pl_cluster_port(c, a1, b1), PL_PORT_NONE); /* its own link */
    CU_ASSERT_EQUAL(pl_cluster_port(c, b1, a1), PL_PORT_NONE);
    CU_ASSERT_EQUAL(pl_cluster_port(c, a0, a0), PL_PORT_NONE);
    int some[2] = {b1, a0};
    pl_cluster *sub = pl_cluster_subset(c, some, 2, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(sub);
    CU_ASSERT_EQUAL(pl_cluster_port(sub, 0, 1), PL_PORT_NETWORK);
    pl_cluster_free(sub);
    char *off = malloc(sizeof text + 20);
    CU_ASSERT_PTR_NOT_NULL_FATAL(off);
    const char *kinds = strstr(text, " \"hardware\"");
    snprintf(off, sizeof text + 20, "%.*s \"ports\": false,%s", (int)(kinds - text), text,
             kinds);
    pl_cluster *without = pl_cluster_load_buffer(off, strlen(off), "off.json", &err);
    if (!without)
        fprintf(stderr, "%s\n", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(without);
    CU_ASSERT_PTR_NULL(without->ports);
    CU_ASSERT_EQUAL(pl_cluster_port(without, a0, a1), PL_PORT_NONE);
    pl_cluster_free(without);
    free(off);
    pl_cluster_free(c);
}

/* The fan-out with a1, a2 and a3 on devices 1, 2 and 3, the rest on device 0. */
static pl_plan *fan_out_plan(const pl_graph *g)
{
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    static const char *const readers[] = {"a1", "a2", "a3"};
    for (int d = 1; d <= 3; d++)
        plan->device[pl_graph_find_op(g, readers[d - 1])] = d;
    return plan;
}

/* h's three forward copies' starts and ends (in order of start) among a program's task
 * times. */
static void copies_of_h(const pl_program *p, const double *starts, const double *ends,
                        double start[3], double end[3])
{
    int h = pl_graph_find_tensor(p->graph, "h"), n = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        if (task->kind != PL_TASK_COPY || p->transfers[task->transfer].tensor != h)
            continue;
        CU_ASSERT_FATAL(n < 3);
        int at = n++;
        for (; at > 0 && start[at - 1] > starts[i]; at--) {
            start[at] = start[at - 1];
            end[at] = end[at - 1];
        }
        start[at] = starts[i];
        end[at] = ends[i];
    }
    CU_ASSERT_EQUAL(n, 3);
}

/* The fan-out's program on cluster c, simulated with nothing measured: its step, h's
 * copies, and the link resources the program uses. */
static double simulate_fan_out(const pl_graph *g, const pl_cluster *c, double start[3],
                               double end[3], int *n_links)
{
    pl_plan *plan = fan_out_plan(g);
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    double *starts = malloc((size_t)p->n_tasks * sizeof *starts);
    double *ends = malloc((size_t)p->n_tasks * sizeof *ends);
    CU_ASSERT_TRUE_FATAL(starts && ends);
    pl_cost_model empty = {0};
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &empty, &sim, starts, ends, NULL), PL_OK);
    copies_of_h(p, starts, ends, start, end);
    *n_links = p->n_links;
    free(starts);
    free(ends);
    pl_program_free(p);
    pl_plan_free(plan);
    return sim.step_seconds;
}

/* By hand: h is 4 x 1024 floats, 16,384 bytes; a copy over the node's link takes 2 us +
 * 16,384 / 10 GB/s = 3.6384 us. With ports the three copies leave the first device by its
 * node port one after another, the last ending 3 x 3.6384 us after the first starts;
 * without (the same hardware with "ports": false, or paced devices of a version 1 file),
 * each pair has a link of its own and the three run at once, all ending 3.6384 us after h.
 * The step with ports is longer, by a copy at least. Every device sends to others of its node: 4 node ports,
 * where without ports the program copies over 8 pairs' links. */
static void test_ports_fan_out(void)
{
    const double copy = 2e-6 + 16384 / 1e10;
    pl_graph *g = fan_out();
    pl_cluster *ported = load_four_gpus(true), *unported = load_four_gpus(false),
               *paced = load_four_paced();
    CU_ASSERT_TRUE_FATAL(ported && unported && paced);
    CU_ASSERT_EQUAL(pl_cluster_port(ported, 0, 3), PL_PORT_NODE);
    CU_ASSERT_EQUAL(pl_cluster_port(unported, 0, 3), PL_PORT_NONE);
    CU_ASSERT_PTR_NULL(paced->ports);
    CU_ASSERT_NOT_EQUAL(pl_cluster_hash(ported), pl_cluster_hash(unported));
    double start[3], end[3];
    int links[3];
    double step = simulate_fan_out(g, ported, start, end, &links[0]);
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_DOUBLE_EQUAL(end[k] - start[k], copy, 1e-15);
        if (k > 0)
            CU_ASSERT_DOUBLE_EQUAL(start[k], end[k - 1], 1e-15); /* one after another */
    }
    CU_ASSERT_DOUBLE_EQUAL(end[2] - start[0], 3 * copy, 1e-15);
    double h_end = start[0];
    const pl_cluster *own_links[2] = {unported, paced};
    for (int i = 0; i < 2; i++) {
        double alone = simulate_fan_out(g, own_links[i], start, end, &links[i + 1]);
        for (int k = 0; k < 3; k++) { /* at once */
            CU_ASSERT_DOUBLE_EQUAL(start[k], start[0], 1e-15);
            CU_ASSERT_DOUBLE_EQUAL(end[k] - start[k], copy, 1e-15);
        }
        if (i == 0) {
            CU_ASSERT_DOUBLE_EQUAL(start[0], h_end, 1e-15); /* the same roofline for h */
            CU_ASSERT_TRUE(step >= alone + copy - 1e-12);
        }
    }
    CU_ASSERT_EQUAL(links[0], 4);
    CU_ASSERT_EQUAL(links[1], 8);
    CU_ASSERT_EQUAL(links[2], 8);
    pl_cluster_free(ported);
    pl_cluster_free(unported);
    pl_cluster_free(paced);
    pl_graph_free(g);
}

/* The replay keeps the ports: the executor runs the fan-out on paced devices 1000 times
 * slower, and h's three copies leave by the one thread of the first device's node port,
 * one after another, each held at least its 3.6384 ms. */
static void test_ports_replayed(void)
{
    pl_graph *g = fan_out();
    pl_cluster *hw = load_four_gpus(true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(hw);
    pl_cluster *c = pl_cluster_replay(hw, 1000, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(pl_cluster_port(c, 0, 3), PL_PORT_NODE);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_TRUE_FATAL(data && ex);
    pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
    pl_plan *plan = fan_out_plan(g);
    pl_fit fit;
    float loss;
    CU_ASSERT_EQUAL_FATAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_executor_step(ex, 1, &loss, NULL), PL_OK);
    double start[3], end[3];
    copies_of_h(pl_executor_program(ex), pl_executor_task_starts(ex),
                pl_executor_task_ends(ex), start, end);
    for (int k = 0; k < 3; k++) {
        CU_ASSERT_TRUE(end[k] - start[k] >= 3.6384e-3);
        if (k > 0)
            CU_ASSERT_TRUE(start[k] >= end[k - 1]);
    }
    pl_plan_free(plan);
    pl_executor_free(ex);
    pl_dataset_free(data);
    pl_cluster_free(c);
    pl_cluster_free(hw);
    pl_graph_free(g);
}

void pl_register_hardware_tests(void)
{
    static const pl_test_case cases[] = {
        {"bundled hardware clusters read as their datasheets say", test_bundled_hardware},
        {"the roofline: a matmul and an add by hand", test_roofline_by_hand},
        {"a program's tasks on hardware: rooflines and link times", test_roofline_tasks},
        {"hashes and versions", test_hash_and_versions},
        {"a replay: paced devices slower by a factor", test_replay},
        {"ports: which pairs share which port", test_ports_by_pair},
        {"ports: a device's copies to three peers, one after another", test_ports_fan_out},
        {"ports in a replay: the executor runs a port's copies in turn", test_ports_replayed},
        {NULL, NULL},
    };
    pl_test_add_suite("hardware", cases);
}
