/* The public benchmark's partitioner (partition.h) against brute force: on small random
 * DAGs every split is tried, and the dynamic program over ideals must find the best
 * contiguous one (the devices' sets orderable so that every prefix is closed under
 * predecessors), the local search no worse than it and no better than the best split of
 * all, and the bound no higher than that. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "partition.h"
#include "rng.h"
#include "suites.h"
#include "test_util.h"

enum { MAX_NODES = 8, ACCELERATORS = 2, DEVICES = ACCELERATORS + 1 };

typedef struct random_instance {
    pl_partition_instance instance;
    pl_partition_node nodes[MAX_NODES];
    pl_partition_keyed by_id[MAX_NODES];
    int source[MAX_NODES * MAX_NODES], dest[MAX_NODES * MAX_NODES];
} random_instance;

static double uniform(uint64_t seed, uint64_t *counter)
{
    return pl_rng_uniform(seed, (*counter)++);
}

/* A DAG of n nodes (edges only forward in their numbering), each its own colour class,
 * latencies and output costs random, an accelerator's memory sometimes binding. */
static void make_instance(random_instance *r, uint64_t seed, int n)
{
    uint64_t counter = 0;
    memset(r, 0, sizeof *r);
    pl_partition_instance *inst = &r->instance;
    inst->n_nodes = n;
    inst->n_colours = n;
    inst->n_accelerators = ACCELERATORS;
    inst->n_cpus = 1;
    inst->max_size = uniform(seed, &counter) < 0.3 ? 3.5 : 100;
    inst->nodes = r->nodes;
    inst->by_id = r->by_id;
    inst->edge_source = r->source;
    inst->edge_dest = r->dest;
    for (int v = 0; v < n; v++) {
        r->nodes[v] = (pl_partition_node){
            .id = v + 1, .accelerator_ok = uniform(seed, &counter) > 0.1,
            .cpu_latency = 1 + 9 * uniform(seed, &counter),
            .accelerator_latency = 0.5 + 4 * uniform(seed, &counter),
            .size = 1, .output_cost = 2 * uniform(seed, &counter), .colour = v};
        r->by_id[v] = (pl_partition_keyed){v + 1, v};
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (uniform(seed, &counter) < 0.4) {
                r->source[inst->n_edges] = a;
                r->dest[inst->n_edges++] = b;
            }
}

/* Whether the graph of devices (an edge where an edge of the instance crosses from one to
 * another) is acyclic: the split is contiguous. */
static bool contiguous(const pl_partition_instance *inst, const int *device)
{
    bool edge[DEVICES][DEVICES] = {{false}};
    for (int e = 0; e < inst->n_edges; e++) {
        int a = device[inst->edge_source[e]], b = device[inst->edge_dest[e]];
        if (a != b)
            edge[a][b] = true;
    }
    for (int k = 0; k < DEVICES; k++) /* closure: a cycle shows as reaching itself */
        for (int i = 0; i < DEVICES; i++)
            for (int j = 0; j < DEVICES; j++)
                edge[i][j] = edge[i][j] || (edge[i][k] && edge[k][j]);
    for (int d = 0; d < DEVICES; d++)
        if (edge[d][d])
            return false;
    return true;
}

/* The best max-load over every feasible split, and over the contiguous ones. */
static void brute_force(const pl_partition_instance *inst, double *best_all,
                        double *best_contiguous)
{
    int device[MAX_NODES];
    pl_partition_split split = {inst->n_nodes, device};
    *best_all = *best_contiguous = HUGE_VAL;
    long total = 1;
    for (int v = 0; v < inst->n_nodes; v++)
        total *= DEVICES;
    for (long code = 0; code < total; code++) {
        long rest = code;
        for (int v = 0; v < inst->n_nodes; v++, rest /= DEVICES)
            device[v] = (int)(rest % DEVICES);
        if (pl_partition_check(inst, &split, NULL) != PL_OK)
            continue;
        double load = pl_partition_max_load(inst, &split, NULL);
        *best_all = fmin(*best_all, load);
        if (contiguous(inst, device))
            *best_contiguous = fmin(*best_contiguous, load);
    }
}

static void test_against_brute_force(void)
{
    int exact = 0, below_contiguous = 0;
    for (uint64_t seed = 1; seed <= 150; seed++) {
        random_instance r;
        make_instance(&r, seed, 5 + (int)(seed % 4));
        const pl_partition_instance *inst = &r.instance;
        double best_all, best_contiguous;
        brute_force(inst, &best_all, &best_contiguous);
        pl_partition_split *split = NULL;
        pl_partition_result result;
        pl_error err;
        pl_status status = pl_partition_solve(inst, 0, &split, &result, &err);
        if (isinf(best_contiguous)) { /* nothing fits contiguously */
            CU_ASSERT_EQUAL(status, PL_EINPUT);
            continue;
        }
        CU_ASSERT_EQUAL_FATAL(status, PL_OK);
        CU_ASSERT_TRUE(result.ideals);
        CU_ASSERT_DOUBLE_EQUAL(result.dp_max_load, best_contiguous, 1e-9);
        CU_ASSERT_TRUE(result.refined_max_load <= result.dp_max_load + 1e-9);
        CU_ASSERT_TRUE(result.refined_max_load >= best_all - 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(pl_partition_max_load(inst, split, NULL),
                               result.refined_max_load, 1e-9);
        CU_ASSERT_EQUAL(pl_partition_check(inst, split, NULL), PL_OK);
        CU_ASSERT_TRUE(pl_partition_bound(inst) <= best_all + 1e-9);
        exact += fabs(result.dp_max_load - best_contiguous) < 1e-9;
        below_contiguous += best_all < best_contiguous - 1e-9;
        pl_partition_split_free(split);
    }
    /* the cases mean something: most fit, and some are better left non-contiguous */
    CU_ASSERT_TRUE(exact > 100);
    CU_ASSERT_TRUE(below_contiguous > 0);
}

/* The program over linear orders (--max-ideals 1) is contiguous too: never below the best
 * contiguous split, and a split that keeps every rule. */
static void test_orders_are_contiguous(void)
{
    for (uint64_t seed = 1; seed <= 60; seed++) {
        random_instance r;
        make_instance(&r, seed, 6 + (int)(seed % 3));
        double best_all, best_contiguous;
        brute_force(&r.instance, &best_all, &best_contiguous);
        pl_partition_split *split = NULL;
        pl_partition_result result;
        if (pl_partition_solve(&r.instance, 1, &split, &result, NULL) != PL_OK)
            continue;
        CU_ASSERT_FALSE(result.ideals);
        CU_ASSERT_TRUE(result.dp_max_load >= best_contiguous - 1e-9);
        CU_ASSERT_EQUAL(pl_partition_check(&r.instance, split, NULL), PL_OK);
        pl_partition_split_free(split);
    }
}

/* Backward nodes: classes of backward nodes alone, with or without neighbours, join a
 * neighbour's unit or stand alone; the programs still return a split that keeps every
 * rule, at the load they state and no lower than the bound. */
static void test_backward_classes(void)
{
    int solved = 0;
    for (uint64_t seed = 1; seed <= 120; seed++) {
        random_instance r;
        uint64_t counter = 1000;
        make_instance(&r, seed, 4 + (int)(seed % 5));
        pl_partition_instance *inst = &r.instance;
        if (seed % 3 == 0)
            inst->n_edges = 0; /* isolated classes: every backward one an orphan */
        for (int v = 0; v < inst->n_nodes; v++) {
            r.nodes[v].backward = v > 0 && uniform(seed, &counter) < 0.5;
            if (r.nodes[v].backward && uniform(seed, &counter) < 0.4)
                r.nodes[v].colour = (int)(uniform(seed, &counter) * v); /* an earlier class */
        }
        int dense[MAX_NODES]; /* classes numbered densely, as the reader numbers them */
        for (int c = 0; c < inst->n_colours; c++)
            dense[c] = -1;
        inst->n_colours = 0;
        for (int v = 0; v < inst->n_nodes; v++) {
            if (dense[r.nodes[v].colour] < 0)
                dense[r.nodes[v].colour] = inst->n_colours++;
            r.nodes[v].colour = dense[r.nodes[v].colour];
        }
        for (int ideals = 0; ideals <= 1; ideals++) {
            pl_partition_split *split = NULL;
            pl_partition_result result;
            pl_status status = pl_partition_solve(inst, ideals, &split, &result, NULL);
            CU_ASSERT_TRUE(status == PL_OK || status == PL_EINPUT);
            if (status != PL_OK)
                continue;
            solved++;
            CU_ASSERT_EQUAL(pl_partition_check(inst, split, NULL), PL_OK);
            CU_ASSERT_DOUBLE_EQUAL(pl_partition_max_load(inst, split, NULL),
                                   result.refined_max_load, 1e-9);
            CU_ASSERT_TRUE(pl_partition_bound(inst) <= result.refined_max_load + 1e-9);
            pl_partition_split_free(split);
        }
    }
    CU_ASSERT_TRUE(solved > 150);
}

void pl_register_partition_tests(void)
{
    static const pl_test_case cases[] = {
        {"the programs against brute force on small DAGs", test_against_brute_force},
        {"the program over orders stays contiguous", test_orders_are_contiguous},
        {"classes of backward nodes alone", test_backward_classes},
        {NULL, NULL},
    };
    pl_test_add_suite("partition", cases);
}
