/* Shared unit-test helpers: test data, the fixtures several suites build (models,
 * clusters, cost models, plans, input buffers), and registering suites. */
#include "test_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "cluster.h"
#include "executor.h"
#include "graph_build.h"
#include "load.h"
#include "rng.h"
#include "session.h"

const char *pl_test_srcdir(void)
{
    const char *dir = getenv("top_srcdir");
    return dir && dir[0] ? dir : ".";
}

pl_graph *pl_test_model(const char *x_shape, const char *params, const char *nodes,
                        const char *loss, pl_error *err)
{
    static const char *const frame =
        "{\"format\": \"placer-model\", \"version\": 1, \"name\": \"test\", "
        "\"batch_size\": 4, "
        "\"inputs\": [{\"name\": \"x\", \"shape\": %s, \"dtype\": \"f32\", \"role\": \"data\"},"
        " {\"name\": \"y\", \"shape\": [], \"dtype\": \"i32\", \"role\": \"label\"}], "
        "\"parameters\": [%s], \"nodes\": [%s], \"loss\": \"%s\", "
        "\"optimizer\": {\"kind\": \"sgd\", \"lr\": 0.1}}";
    size_t cap = strlen(frame) + strlen(x_shape) + strlen(params) + strlen(nodes) +
                 strlen(loss) + 1;
    char *text = malloc(cap);
    if (!text)
        return NULL;
    int len = snprintf(text, cap, frame, x_shape, params, nodes, loss);
    pl_graph *graph = pl_graph_load_buffer(text, (size_t)len, "test.json", err);
    free(text);
    return graph;
}

pl_graph *pl_test_training_model(const char *x_shape, const char *params, const char *nodes,
                                 const char *loss)
{
    pl_error err;
    pl_graph *g = pl_test_model(x_shape, params, nodes, loss, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(g, &err), PL_OK);
    return g;
}

pl_graph *pl_test_relu_chain(int layers, int width)
{
    char params[2048] = "", nodes[4096] = "", in[16] = "x", shape[16];
    for (int i = 0; i < layers; i++) {
        snprintf(params + strlen(params), sizeof params - strlen(params),
                 "%s{\"name\": \"w%d\", \"shape\": [%d, %d], \"init\": {\"kind\": \"zeros\"}}",
                 i ? ", " : "", i, width, width);
        snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes),
                 "{\"name\": \"m%d\", \"op\": \"matmul\", \"inputs\": [\"%s\", \"w%d\"], "
                 "\"outputs\": [\"m%d\"]}, {\"name\": \"r%d\", \"op\": \"relu\", \"inputs\": "
                 "[\"m%d\"], \"outputs\": [\"r%d\"]}, ", i, in, i, i, i, i, i);
        snprintf(in, sizeof in, "r%d", i);
    }
    snprintf(nodes + strlen(nodes), sizeof nodes - strlen(nodes),
             "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"%s\", "
             "\"y\"], \"outputs\": [\"loss\"]}", in);
    snprintf(shape, sizeof shape, "[%d]", width);
    return pl_test_training_model(shape, params, nodes, "loss");
}

/* Prints a failed load's error under the test's name. */
static void print_error(const pl_error *err)
{
    char line[2048];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "\n    %s\n", line);
}

/* The model `dir`/`file` of the source tree, at `batch` samples a step (0: the file's) and
 * as its training graph when `training`; errors printed. */
static pl_graph *load_model(const char *dir, const char *file, int batch, bool training)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", pl_test_srcdir(), dir, file);
    pl_error err;
    pl_error_init(&err, path);
    pl_graph *g = pl_graph_load_file(path, &err);
    if (!g || (batch && pl_graph_set_batch(g, batch, &err) != PL_OK) ||
        (training && pl_autodiff_build(g, &err) != PL_OK)) {
        print_error(&err);
        pl_graph_free(g);
        return NULL;
    }
    return g;
}

pl_graph *pl_test_bundled_graph(const char *file)
{
    return load_model("graphs", file, 0, false);
}

pl_graph *pl_test_bundled_training_graph(const char *file, int batch)
{
    if (strncmp(file, "tests/", 6) == 0) /* a test's model, not a bundled one */
        return load_model("tests", file + 6, batch, true);
    return load_model("graphs", file, batch, true);
}

const char *const pl_test_small_models[PL_TEST_SMALL_MODELS] = {
    "small/cnn-small.json",     "small/inception-small.json",   "small/lstm_lm-small.json",
    "small/mlp-small.json",     "small/moe-small.json",         "small/recommender-small.json",
    "small/resnet-small.json",  "small/seq2seq-small.json",     "small/transformer-small.json",
};

static pl_cluster *cluster_file(const char *folder, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s/%s", pl_test_srcdir(), folder, file);
    pl_error err;
    pl_error_init(&err, path);
    pl_cluster *c = pl_cluster_load_file(path, &err);
    if (!c)
        print_error(&err);
    return c;
}

pl_cluster *pl_test_bundled_cluster(const char *file)
{
    return cluster_file("graphs/clusters", file);
}

pl_cluster *pl_test_real_ratio_cluster(void)
{
    return cluster_file("tests/clusters", "a100-ratio-8.json");
}

/* Appends to a JSON text of `cap` bytes; a text cut short fails to load. */
static void append(char *text, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *text, size_t cap, const char *fmt, ...)
{
    size_t used = strlen(text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text + used, cap - used, fmt, ap);
    va_end(ap);
}

pl_cluster *pl_test_cluster(pl_test_devices devices)
{
    char text[8192] = "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": \"test\", "
                      "\"devices\": [";
    for (int d = 0; d < devices.n; d++) {
        append(text, sizeof text, "%s{\"name\": \"%c\", \"threads\": %d, "
               "\"memory_bytes\": %lld", d ? ", " : "", 'a' + d,
               devices.threads ? devices.threads : 1, devices.memory);
        if (devices.flops > 0)
            append(text, sizeof text, ", \"flops_per_second\": %g", devices.flops);
        append(text, sizeof text, "}");
    }
    if (devices.link_bytes_per_second > 0)
        append(text, sizeof text, "], \"default_link\": {\"bytes_per_second\": %g}}",
               devices.link_bytes_per_second);
    else
        append(text, sizeof text, "], \"default_link\": {}}");
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(text, strlen(text), "test.json", &err);
    if (!c)
        print_error(&err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    return c;
}

pl_cost_model pl_test_costs(pl_op_cost op, double copy_seconds, double per_byte,
                            double handoff)
{
    pl_cost_model m;
    memset(&m, 0, sizeof m);
    m.ops[1][PL_OP_COUNT] = op; /* every kind, at one thread */
    pl_cost_set_copy_line(&m, copy_seconds, per_byte);
    m.handoff_seconds = handoff;
    return m;
}

pl_graph *pl_test_two_layers(void)
{
    pl_graph *g = pl_test_training_model(
        "[3]",
        "{\"name\": \"w1\", \"shape\": [3, 3], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w2\", \"shape\": [3, 2], \"init\": {\"kind\": \"zeros\"}}",
        "{\"name\": \"h\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"h\"]},"
        "{\"name\": \"fc\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w2\"], \"outputs\": [\"logits\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
    CU_ASSERT_EQUAL(g->n_ops, 11);
    return g;
}

pl_graph *pl_test_dropout_model(void)
{
    return pl_test_training_model(
        "[16]",
        "{\"name\": \"w1\", \"shape\": [16, 32], \"init\": {\"kind\": \"glorot_uniform\", "
        "\"seed\": 1}},"
        "{\"name\": \"w2\", \"shape\": [32, 3], \"init\": {\"kind\": \"glorot_uniform\", "
        "\"seed\": 2}}",
        "{\"name\": \"fc1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"h\"]},"
        "{\"name\": \"drop\", \"op\": \"dropout\", \"inputs\": [\"h\"], \"outputs\": [\"d\"],"
        " \"attrs\": {\"rate\": 0.5, \"seed\": 7}},"
        "{\"name\": \"act\", \"op\": \"relu\", \"inputs\": [\"d\"], \"outputs\": [\"r\"]},"
        "{\"name\": \"fc2\", \"op\": \"matmul\", \"inputs\": [\"r\", \"w2\"], \"outputs\": [\"logits\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
}

pl_plan *pl_test_pipeline_plan(const pl_graph *g, int stages, int micro_batches,
                               pl_schedule schedule)
{
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    for (int o = 0; o < g->n_forward_ops; o++)
        plan->device[o] = plan->stage[o] = (int)((long)o * stages / g->n_forward_ops);
    plan->n_stages = stages;
    plan->micro_batches = micro_batches;
    plan->schedule = schedule;
    return plan;
}

void **pl_test_input_buffers(const pl_graph *g, void *(*buffer)(void *owner, int tensor),
                             void *owner)
{
    void **inputs = calloc((size_t)g->n_tensors, sizeof *inputs);
    for (int t = 0; inputs && t < g->n_tensors; t++)
        if (g->tensors[t].kind == PL_TENSOR_INPUT)
            inputs[t] = buffer(owner, t);
    return inputs;
}

void *pl_test_session_buffer(void *session, int tensor)
{
    return pl_session_data(session, tensor);
}

void *pl_test_executor_buffer(void *executor, int tensor)
{
    return pl_executor_data(executor, tensor);
}

void pl_test_fill_first_batch(const pl_graph *g, const pl_dataset *data,
                              void *(*buffer)(void *owner, int tensor), void *owner)
{
    void **inputs = pl_test_input_buffers(g, buffer, owner);
    if (inputs)
        pl_dataset_fill(data, PL_SPLIT_TRAIN, 0, 0, g->batch_size, inputs);
    free(inputs);
}

pl_plan *pl_test_random_plan(const pl_graph *g, int n_devices, uint64_t seed)
{
    pl_plan *plan = pl_plan_new(g, NULL);
    uint64_t draw = 0;
    int max_stage = (int)(pl_rng_u64(seed, draw++) % 4);
    for (int o = 0; o < g->n_forward_ops; o++) {
        const pl_op *op = &g->ops[o];
        int stage = 0;
        for (int i = 0; i < op->n_inputs; i++) {
            int producer = g->tensors[op->inputs[i]].producer;
            if (producer >= 0 && plan->stage[producer] > stage)
                stage = plan->stage[producer];
        }
        if (stage < max_stage && pl_rng_u64(seed, draw++) % 4 == 0)
            stage++;
        plan->stage[o] = stage;
        plan->device[o] = (int)(pl_rng_u64(seed, draw++) % (uint64_t)n_devices);
    }
    int renumber[8] = {0}, used[8] = {0}, n_stages = 0;
    for (int o = 0; o < g->n_forward_ops; o++)
        used[plan->stage[o]] = 1;
    for (int s = 0; s < 8; s++)
        renumber[s] = used[s] ? n_stages++ : -1;
    for (int o = 0; o < g->n_forward_ops; o++)
        plan->stage[o] = renumber[plan->stage[o]];
    plan->n_stages = n_stages;
    int divisors[16], n_divisors = 0;
    for (int m = 1; m <= g->batch_size && n_divisors < 16; m++)
        if (g->batch_size % m == 0)
            divisors[n_divisors++] = m;
    plan->micro_batches = divisors[pl_rng_u64(seed, draw++) % (uint64_t)n_divisors];
    plan->schedule = pl_rng_u64(seed, draw++) % 2 ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE;
    plan->defer_weight_gradients = pl_rng_u64(seed, draw++) % 2;
    return plan;
}

void pl_test_add_suite(const char *name, const pl_test_case *cases)
{
    CU_pSuite suite = CU_add_suite(name, NULL, NULL);
    if (!suite) {
        fprintf(stderr, "cannot add suite %s\n", name);
        exit(1);
    }
    for (const pl_test_case *c = cases; c->name; c++)
        if (!CU_add_test(suite, c->name, c->run)) {
            fprintf(stderr, "cannot add test %s\n", c->name);
            exit(1);
        }
}
