/* Plans: written and read back unchanged, checked against the dataflow, and their
 * partitions complete: every op on its group's device, every input available where it is
 * read (there already, fed, or transferred there exactly once). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "autodiff.h"
#include "load.h"
#include "plan.h"
#include "suites.h"
#include "test_util.h"

typedef struct fixture {
    pl_graph *g;
    pl_cluster *c;
} fixture;

static fixture open_fixture(const char *model, const char *cluster)
{
    fixture f = {pl_test_bundled_graph(model), pl_test_bundled_cluster(cluster)};
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.c);
    return f;
}

static void close_fixture(fixture *f)
{
    pl_graph_free(f->g);
    pl_cluster_free(f->c);
}

/* The plan written to a new file, `path` (64 bytes), and read back: NULL, its error
 * printed, when it does not read. forget() removes the file. */
static pl_plan *write_and_read(const fixture *f, const pl_plan *plan, char *path)
{
    char dir[] = "/tmp/placer-plan-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    snprintf(path, 64, "%s/plan.json", dir);
    CU_ASSERT_EQUAL_FATAL(pl_plan_write_file(path, plan, f->g, f->c, NULL), PL_OK);
    pl_error err;
    pl_error_init(&err, path);
    pl_plan *back = pl_plan_load_file(path, f->g, f->c, &err);
    if (!back)
        fprintf(stderr, "%s\n", err.text);
    return back;
}

static void forget(char *path)
{
    unlink(path);
    *strrchr(path, '/') = '\0';
    rmdir(path);
}

static void test_round_trip(void)
{
    fixture f = open_fixture("small/transformer-small.json", "paced-4.json");
    pl_plan *plan = pl_test_pipeline_plan(f.g, 4, 2, PL_SCHEDULE_1F1B);
    plan->defer_weight_gradients = true;
    snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "test");
    plan->provenance.seed = 42;
    plan->provenance.predicted_seconds = 0.125;
    CU_ASSERT_EQUAL_FATAL(pl_plan_check(plan, f.g, f.c, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(f.g, NULL), PL_OK);
    char path[64];
    pl_plan *back = write_and_read(&f, plan, path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(memcmp(back->device, plan->device, (size_t)plan->n_ops * sizeof(int)), 0);
    CU_ASSERT_EQUAL(memcmp(back->stage, plan->stage, (size_t)plan->n_ops * sizeof(int)), 0);
    CU_ASSERT_EQUAL(back->n_stages, 4);
    CU_ASSERT_EQUAL(back->micro_batches, 2);
    CU_ASSERT_EQUAL(back->schedule, PL_SCHEDULE_1F1B);
    CU_ASSERT_TRUE(back->defer_weight_gradients);
    CU_ASSERT_STRING_EQUAL(back->provenance.algorithm, "test");
    /* the model it was made for, recorded for the command line's warning */
    CU_ASSERT_EQUAL(back->file_model_hash, f.g->hash);
    CU_ASSERT_STRING_EQUAL(back->file_model, f.g->name);
    CU_ASSERT_EQUAL(back->provenance.seed, 42u);
    CU_ASSERT_DOUBLE_EQUAL(back->provenance.predicted_seconds, 0.125, 1e-12);
    pl_plan_free(back);
    pl_plan_free(plan);
    forget(path);
    close_fixture(&f);
}

/* Version 2: each op's devices per replica, "device" when the replicas agree. */
static void test_replicas_round_trip(void)
{
    fixture f = open_fixture("small/mlp-small.json", "paced-4.json");
    pl_plan *plan = pl_test_pipeline_plan(f.g, 2, 1, PL_SCHEDULE_GPIPE);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 2, NULL), PL_OK);
    for (int o = 1; o < plan->n_ops; o++) /* op 0 on device 0 in both replicas */
        pl_plan_replica(plan, 1)[o] = 2 + plan->device[o];
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(f.g, NULL), PL_OK);
    char path[64];
    pl_plan *back = write_and_read(&f, plan, path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->replicas, 2);
    CU_ASSERT_EQUAL(memcmp(back->device, plan->device, 2 * (size_t)plan->n_ops * sizeof(int)), 0);
    CU_ASSERT_EQUAL(memcmp(back->stage, plan->stage, (size_t)plan->n_ops * sizeof(int)), 0);
    pl_plan_free(back);
    pl_plan_free(plan);
    forget(path);
    close_fixture(&f);
}

/* Whether the file's partitions put op `name` on `device` (replica 0's when replicated). */
static bool partition_has(const json_t *root, const char *device, const char *name)
{
    const json_t *partitions = json_object_get(root, "partitions"), *entry, *op;
    size_t i, j;
    json_array_foreach(partitions, i, entry) {
        const json_t *replica = json_object_get(entry, "replica");
        if (strcmp(json_string_value(json_object_get(entry, "device")), device) != 0 ||
            (replica && json_integer_value(replica) != 0))
            continue;
        json_array_foreach(json_object_get(entry, "ops"), j, op)
            if (strcmp(json_string_value(op), name) == 0)
                return true;
    }
    return false;
}

/* Version 3: a split op's devices, one list per replica when they differ, and the
 * recomputation flag read back as written; the partitions are the rewritten graph's, its
 * shards on their devices. */
static void test_split_round_trip(void)
{
    fixture f = open_fixture("small/mlp-small.json", "paced-4.json");
    pl_plan *plan = pl_plan_new(f.g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CU_ASSERT_EQUAL_FATAL(pl_plan_set_replicas(plan, 2, NULL), PL_OK);
    const int pair[] = {0, 1, 2, 3}, other[] = {1, 0, 2, 3};
    for (int o = 0; o < 3; o++) /* fc1's matmul, bias and ReLU over two devices */
        CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, o, 2, o == 2 ? other : pair, NULL), PL_OK);
    for (int o = 3; o < plan->n_ops; o++)
        pl_plan_replica(plan, 1)[o] = 2;
    plan->recompute[4] = true;
    CU_ASSERT_EQUAL_FATAL(pl_plan_check(plan, f.g, f.c, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(f.g, NULL), PL_OK);
    char path[64];
    pl_plan *back = write_and_read(&f, plan, path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL(back->replicas, 2);
    CU_ASSERT_EQUAL(memcmp(back->split, plan->split, (size_t)plan->n_ops * sizeof(int)), 0);
    CU_ASSERT_EQUAL(memcmp(back->device, plan->device, 2 * (size_t)plan->n_ops * sizeof(int)), 0);
    for (int r = 0; r < 2; r++)
        for (int o = 0; o < plan->n_ops; o++)
            for (int s = 0; s < plan->split[o]; s++)
                CU_ASSERT_EQUAL(pl_plan_shard_device(back, r, o, s),
                                pl_plan_shard_device(plan, r, o, s));
    CU_ASSERT_EQUAL(memcmp(back->recompute, plan->recompute,
                           (size_t)plan->n_ops * sizeof(bool)), 0);
    CU_ASSERT_EQUAL(memcmp(back->stage, plan->stage, (size_t)plan->n_ops * sizeof(int)), 0);
    json_t *root = json_load_file(path, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    CU_ASSERT_EQUAL(json_integer_value(json_object_get(root, "version")), 3);
    CU_ASSERT_TRUE(partition_has(root, "dev0", "fc1/matmul/tp0"));
    CU_ASSERT_TRUE(partition_has(root, "dev1", "fc1/matmul/tp1"));
    CU_ASSERT_TRUE(partition_has(root, "dev1", "fc1/relu/tp0"));
    CU_ASSERT_TRUE(partition_has(root, "dev0", "fc1/relu/tp1"));
    CU_ASSERT_FALSE(partition_has(root, "dev0", "fc1/matmul"));
    json_decref(root);
    pl_plan_free(back);
    pl_plan_free(plan);
    forget(path);
    close_fixture(&f);
}

static void test_partitions_complete(void)
{
    fixture f = open_fixture("small/lstm_lm-small.json", "paced-8.json");
    pl_plan *plan = pl_test_pipeline_plan(f.g, 3, 2, PL_SCHEDULE_GPIPE);
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(f.g, NULL), PL_OK);
    pl_partitions *p = pl_partitions_new(plan, f.g, f.c->n_devices, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    const pl_graph *g = f.g;
    CU_ASSERT_EQUAL(p->first_op[p->n_devices], g->n_ops);
    for (int d = 0; d < p->n_devices; d++)
        for (int k = p->first_op[d]; k < p->first_op[d + 1]; k++) {
            CU_ASSERT_EQUAL(p->op_device[p->ops[k]], d);
            if (k > p->first_op[d]) /* topological within the device */
                CU_ASSERT_TRUE(p->ops[k] > p->ops[k - 1]);
        }
    int missing = 0, twice = 0;
    for (int o = 0; o < g->n_ops; o++) {
        CU_ASSERT_EQUAL(p->op_device[o], plan->device[g->ops[o].group]);
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            int t = g->ops[o].inputs[i], found = 0;
            if (p->tensor_device[t] < 0 || p->tensor_device[t] == p->op_device[o])
                continue;
            for (int k = 0; k < p->n_transfers; k++)
                found += p->transfers[k].tensor == t && p->transfers[k].to == p->op_device[o] &&
                         p->transfers[k].from == p->tensor_device[t];
            missing += found == 0;
            twice += found > 1;
        }
    }
    CU_ASSERT_EQUAL(missing, 0);
    CU_ASSERT_EQUAL(twice, 0);
    CU_ASSERT_TRUE(p->n_transfers > 0);
    /* a parameter lives where its update runs */
    for (int o = g->n_forward_ops; o < g->n_ops; o++)
        if (g->ops[o].kind == PL_OP_SGD_UPDATE || g->ops[o].kind == PL_OP_ADAM_UPDATE)
            CU_ASSERT_EQUAL(p->tensor_device[g->ops[o].inputs[0]], p->op_device[o]);
    pl_partitions_free(p);
    pl_partitions_free(NULL);
    pl_plan_free(plan);
    close_fixture(&f);
}

static void test_checks(void)
{
    fixture f = open_fixture("small/mlp-small.json", "paced-4.json");
    pl_plan *plan = pl_test_pipeline_plan(f.g, 2, 2, PL_SCHEDULE_GPIPE);
    pl_error err;
    pl_error_init(&err, NULL);
    plan->stage[0] = 1; /* the second op (stage 0) would read the first (stage 1) */
    plan->stage[1] = 0;
    CU_ASSERT_EQUAL(pl_plan_check(plan, f.g, f.c, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "stages must follow the dataflow"));
    plan->stage[0] = plan->stage[1] = 0;
    plan->device[2] = 9;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_plan_check(plan, f.g, f.c, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "the cluster has 4"));
    pl_plan_free(plan);
    close_fixture(&f);
}

void pl_register_plan_tests(void)
{
    static const pl_test_case cases[] = {
        {"a written plan reads back the same", test_round_trip},
        {"replicated plans round-trip", test_replicas_round_trip},
        {"split plans round-trip, their partitions the shards'", test_split_round_trip},
        {"partitions place every op and move every tensor once", test_partitions_complete},
        {"checks: dataflow of stages, devices", test_checks},
        {NULL, NULL},
    };
    pl_test_add_suite("plan", cases);
}
