/* Shared unit-test helpers. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff.h"
#include "load.h"

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

pl_graph *pl_test_two_layers(void)
{
    pl_error err;
    pl_graph *g = pl_test_model(
        "[3]",
        "{\"name\": \"w1\", \"shape\": [3, 3], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w2\", \"shape\": [3, 2], \"init\": {\"kind\": \"zeros\"}}",
        "{\"name\": \"h\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"h\"]},"
        "{\"name\": \"fc\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w2\"], \"outputs\": [\"logits\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL_FATAL(pl_autodiff_build(g, &err), PL_OK);
    CU_ASSERT_EQUAL(g->n_ops, 11);
    return g;
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
