/* Helpers shared by the unit tests: locating test data and building small models. */
#ifndef PLACER_TESTS_UTIL_H
#define PLACER_TESTS_UTIL_H

#include <CUnit/CUnit.h>

#include "cluster.h"
#include "cost_model.h"
#include "data.h"
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

/* The same as its training graph. Asserts (fatally) that it loads and builds. */
pl_graph *pl_test_training_model(const char *x_shape, const char *params, const char *nodes,
                                 const char *loss);

/* The training graph of x -> (matmul by a width x width weight, relu) x layers -> softmax
 * cross-entropy (weights zero-initialised; at most 16 layers). */
pl_graph *pl_test_relu_chain(int layers, int width);

/* A bundled model (`file` in graphs/: "small/mlp-small.json"), as loaded, or NULL with its
 * error printed. */
pl_graph *pl_test_bundled_graph(const char *file);
/* Its training graph, `batch` samples a step (0: the file's), or NULL with its error
 * printed. A `file` under "tests/" ("tests/models/attention.json") is a test's model. */
pl_graph *pl_test_bundled_training_graph(const char *file, int batch);

/* The bundled small models, as pl_test_bundled_graph names them ("small/mlp-small.json"). */
enum { PL_TEST_SMALL_MODELS = 9 };
extern const char *const pl_test_small_models[PL_TEST_SMALL_MODELS];

/* A cluster of graphs/clusters/ (`file`: "paced-4.json"), or NULL with its error printed. */
pl_cluster *pl_test_bundled_cluster(const char *file);
/* tests/clusters/a100-ratio-8.json: two nodes of four devices at an A100 node's ratios of
 * compute to NVLink and to InfiniBand, where communication costs what it does on GPUs. */
pl_cluster *pl_test_real_ratio_cluster(void);

/* A cluster written for a test: `n` devices named a, b, c, ... of `memory` bytes and
 * `threads` threads (0: one), paced at `flops` a second when above 0; links of
 * `link_bytes_per_second` when above 0, else native (copies on the source device).
 * Asserts (fatally) that it loads. */
typedef struct pl_test_devices {
    int n;
    long long memory;
    int threads;
    double flops, link_bytes_per_second;
} pl_test_devices;
pl_cluster *pl_test_cluster(pl_test_devices devices);

/* A cost model of straight lines, for results worked out by hand: every op costs `op`
 * (seconds, plus per FLOP and per byte), every copy `copy_seconds` plus `per_byte` a
 * byte, every hand-off between tasks `handoff` seconds. */
pl_cost_model pl_test_costs(pl_op_cost op, double copy_seconds, double per_byte,
                            double handoff);

/* x[4,3] -> h = x w1 -> logits = h w2 -> softmax cross-entropy, as its training graph
 * (11 ops). Asserts (fatally) that it builds. */
pl_graph *pl_test_two_layers(void);
/* x[4,16] -> matmul -> dropout (rate 0.5, seed 7) -> relu -> matmul -> softmax
 * cross-entropy, as its training graph. */
pl_graph *pl_test_dropout_model(void);

/* A layer-wise pipeline: forward op o on stage o * stages / forward ops, each stage on the
 * device of its number; `micro_batches` and `schedule` as given. Asserts (fatally) that it
 * is made. */
pl_plan *pl_test_pipeline_plan(const pl_graph *graph, int stages, int micro_batches,
                               pl_schedule schedule);

/* Each input tensor's buffer in `owner` (by `buffer`), NULL for every other tensor: the
 * array pl_dataset_fill fills. NULL when out of memory; free() it. The two owners: */
void **pl_test_input_buffers(const pl_graph *graph, void *(*buffer)(void *owner, int tensor),
                             void *owner);
void *pl_test_session_buffer(void *session, int tensor);
void *pl_test_executor_buffer(void *executor, int tensor);
/* Fills the inputs in `owner` with the first training batch of `data`. */
void pl_test_fill_first_batch(const pl_graph *graph, const pl_dataset *data,
                              void *(*buffer)(void *owner, int tensor), void *owner);

/* A random plan for a training graph: each op on a random device of `n_devices`; stages
 * that follow the dataflow (an op starts at its inputs' latest stage and sometimes moves
 * on), renumbered without gaps; a random divisor of the batch as micro-batch count; either
 * schedule; weight gradients deferred or not. */
pl_plan *pl_test_random_plan(const pl_graph *graph, int n_devices, uint64_t seed);

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
