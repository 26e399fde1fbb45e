/* Hardware placer cannot run: the bundled hardware clusters read as their datasheets say,
 * nodes make their devices and links, and the roofline times ops and copies as worked out
 * by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_model.h"
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
    CU_ASSERT_DOUBLE_EQUAL(pl_cost_op_on(&empty, PL_OP_ADD, &c->devices[0], 1024.0 * 1024, bytes),
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

void pl_register_hardware_tests(void)
{
    static const pl_test_case cases[] = {
        {"bundled hardware clusters read as their datasheets say", test_bundled_hardware},
        {"the roofline: a matmul and an add by hand", test_roofline_by_hand},
        {"a program's tasks on hardware: rooflines and link times", test_roofline_tasks},
        {"hashes and versions", test_hash_and_versions},
        {"a replay: paced devices slower by a factor", test_replay},
        {NULL, NULL},
    };
    pl_test_add_suite("hardware", cases);
}
