/* Helpers shared by the unit tests: locating test data and building small models. */
#ifndef PLACER_TESTS_UTIL_H
#define PLACER_TESTS_UTIL_H

#include <CUnit/CUnit.h>

#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "plan.h"

/* The source tree's top (from $top_srcdir, as `make check` sets it; "." otherwise). */
const char *pl_test_srcdir(void);

/* A model from its parts, JSON text each: batch size 4, inputs "x" (per-sample shape
 * `x_shape`, f32 data) and "y" (i32 label, shape []); `params` and `nodes` are the bodies
 * of their arrays; `loss` names the loss tensor. Returns the loaded graph or NULL with
 * `err` filled in. */
pl_graph *pl_test_model(const char *x_shape, const char *params, const char *nodes,
                        const char *loss, pl_error *err);

/* A model file's training graph (`relative` to the source tree), or NULL with its error
 * printed. */
pl_graph *pl_test_training_graph(const char *relative);

/* A cluster of graphs/clusters/ (`file`: "paced-4.json"), or NULL with its error printed. */
pl_cluster *pl_test_bundled_cluster(const char *file);

/* x[4,3] -> h = x w1 -> logits = h w2 -> softmax cross-entropy, as its training graph
 * (11 ops). Asserts (fatally) that it builds. */
pl_graph *pl_test_two_layers(void);

/* A random plan for a training graph: each op on a random device of `n_devices`; stages
 * that follow the dataflow (an op starts at its inputs' latest stage and sometimes moves
 * on), renumbered without gaps; a random divisor of the batch as micro-batch count; either
 * schedule; weight gradients deferred or not. */
pl_plan *pl_test_random_plan(const pl_graph *graph, int n_devices, uint64_t seed);

/* A cost model that does not depend on this machine: every op `op_seconds` plus 1 ns per
 * FLOP, a copy `copy_seconds` plus `copy_per_byte` seconds a byte, a hand-off 1 us. */
pl_cost_model pl_test_costs(double op_seconds, double copy_seconds, double copy_per_byte);

/* Asserts that loading failed with a message that contains `needle`. */
#define PL_ASSERT_FAILS_WITH(graph, err, needle)                                             \
    do {                                                                                     \
        CU_ASSERT_PTR_NULL(graph);                                                           \
        CU_ASSERT_EQUAL((err).status, PL_EINPUT);                                            \
        if (!strstr((err).text, (needle)))                                                   \
            fprintf(stderr, "\n    message: %s\n    wanted:  %s\n", (err).text, (needle));  \
        CU_ASSERT_PTR_NOT_NULL(strstr((err).text, (needle)));                                \
    } while (0)

/* Adds a suite with its tests; aborts the run when CUnit cannot. */
typedef struct pl_test_case {
    const char *name;
    void (*run)(void);
} pl_test_case;
void pl_test_add_suite(const char *name, const pl_test_case *cases);

#endif
