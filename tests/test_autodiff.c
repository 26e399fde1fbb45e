/* The training graph's structure: order, phases, co-location groups, one accumulator and
 * one update per parameter, weight gradients, batch-norm state, and the errors for
 * untrainable models. */
#include <stdio.h>
#include <string.h>

#include "autodiff.h"
#include "load.h"
#include "suites.h"
#include "test_util.h"

static void check_structure(const pl_graph *g)
{
    int updates = 0, params = 0;
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        for (int i = 0; i < op->n_inputs; i++) /* topological */
            CU_ASSERT_TRUE(g->tensors[op->inputs[i]].producer < o);
        if (o < g->n_forward_ops) {
            CU_ASSERT_EQUAL(op->phase, PL_PHASE_FORWARD);
            CU_ASSERT_EQUAL(op->group, o);
        } else {
            CU_ASSERT_NOT_EQUAL(op->phase, PL_PHASE_FORWARD);
            CU_ASSERT_TRUE(op->group >= 0 && op->group < g->n_forward_ops);
            CU_ASSERT_TRUE(pl_op_info_of(op->kind)->internal || op->kind < PL_OP_FIRST_INTERNAL);
        }
        if (op->phase == PL_PHASE_UPDATE) {
            updates++;
            CU_ASSERT_TRUE(op->kind == PL_OP_SGD_UPDATE || op->kind == PL_OP_ADAM_UPDATE);
        }
    }
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].kind != PL_TENSOR_PARAM)
            continue;
        params++;
        int acc = pl_autodiff_gradient_of(g, t);
        CU_ASSERT_TRUE_FATAL(acc >= 0);
        CU_ASSERT_EQUAL(g->tensors[acc].kind, PL_TENSOR_STATE);
        CU_ASSERT_EQUAL(g->tensors[acc].param, t);
        CU_ASSERT_EQUAL(pl_tensor_elements(&g->tensors[acc]), pl_tensor_elements(&g->tensors[t]));
    }
    CU_ASSERT_EQUAL(updates, params);
    /* weight gradients: accumulations among them; no other backward op reads their results,
     * so deferring them never delays an activation's gradient */
    for (int o = 0; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        if (op->phase != PL_PHASE_BACKWARD)
            CU_ASSERT_FALSE(op->weight_gradient);
        if (op->kind == PL_OP_ACCUMULATE || op->kind == PL_OP_SCATTER_ACCUMULATE)
            CU_ASSERT_TRUE(op->weight_gradient);
        if (op->phase != PL_PHASE_BACKWARD || op->weight_gradient)
            continue;
        for (int i = 0; i < op->n_inputs; i++) {
            int producer = g->tensors[op->inputs[i]].producer;
            CU_ASSERT_TRUE(producer < 0 || !g->ops[producer].weight_gradient);
        }
    }
}

/* In x -> h -> fc -> loss, the gradients of h's and fc's weights (grad_b) and their
 * accumulations are weight gradients; the loss's gradient and fc's grad_a (h's gradient)
 * are not. */
static void test_weight_gradients(void)
{
    pl_graph *g = pl_test_two_layers();
    int w = 0, b = 0;
    for (int o = g->n_forward_ops; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        if (op->kind == PL_OP_MATMUL_GRAD_B || op->kind == PL_OP_ACCUMULATE)
            w += op->weight_gradient;
        if (op->kind == PL_OP_MATMUL_GRAD_A || op->kind == PL_OP_SOFTMAX_CROSS_ENTROPY_GRAD)
            b += !op->weight_gradient;
    }
    CU_ASSERT_EQUAL(w, 4);
    CU_ASSERT_EQUAL(b, 2);
    pl_graph_free(g);
}

static void test_every_small_model(void)
{
    for (int m = 0; m < PL_TEST_SMALL_MODELS; m++) {
        pl_graph *g = pl_test_bundled_training_graph(pl_test_small_models[m], 0);
        CU_ASSERT_PTR_NOT_NULL(g);
        if (g)
            check_structure(g);
        pl_graph_free(g);
    }
}

/* Accumulations go with the parameter's first reader: one per reader, but one per block
 * of PL_LSTM_BLOCK_STEPS steps for an LSTM's weight and bias (lstm_lm-small: a block of
 * its 6 steps); a single update each. */
static void test_shared_weights_and_homes(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/lstm_lm-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].kind != PL_TENSOR_PARAM)
            continue;
        int acc = pl_autodiff_gradient_of(g, t), readers = 0, accumulations = 0, home = -1;
        bool lstm = false;
        for (int o = 0; o < g->n_forward_ops; o++)
            for (int i = 0; i < g->ops[o].n_inputs; i++)
                if (g->ops[o].inputs[i] == t) {
                    readers++;
                    lstm = g->ops[o].kind == PL_OP_LSTM_CELL;
                    if (home < 0)
                        home = o;
                }
        for (int o = g->n_forward_ops; o < g->n_ops; o++) {
            const pl_op *op = &g->ops[o];
            if ((op->kind == PL_OP_ACCUMULATE || op->kind == PL_OP_SCATTER_ACCUMULATE) &&
                op->inputs[0] == acc) {
                accumulations++;
                CU_ASSERT_EQUAL(op->group, home);
            }
        }
        if (lstm)
            readers = (readers + PL_LSTM_BLOCK_STEPS - 1) / PL_LSTM_BLOCK_STEPS;
        CU_ASSERT_EQUAL(accumulations, readers);
    }
    pl_graph_free(g);
}

/* An LSTM whose weight is computed (a transpose of PyTorch's layout, as the importer makes
 * it) still gets its weight gradient per block of PL_LSTM_BLOCK_STEPS steps, finished
 * before the transpose's own gradient: 10 steps, two products. */
static void test_computed_lstm_weight(void)
{
    enum { STEPS = 10 };
    char nodes[4096] = "{\"name\": \"w\", \"op\": \"transpose\", \"inputs\": [\"wt\"], "
                       "\"outputs\": [\"w\"], \"attrs\": {\"perm\": [1, 0]}},"
                       "{\"name\": \"t0\", \"op\": \"lstm_cell\", \"inputs\": [\"x\", \"w\", "
                       "\"b\"], \"outputs\": [\"h0\", \"c0\"]},";
    for (int t = 1; t < STEPS; t++) {
        char line[256];
        snprintf(line, sizeof line, "{\"name\": \"t%d\", \"op\": \"lstm_cell\", \"inputs\": "
                 "[\"x\", \"w\", \"b\", \"h%d\", \"c%d\"], \"outputs\": [\"h%d\", \"c%d\"]},",
                 t, t - 1, t - 1, t, t);
        strcat(nodes, line);
    }
    strcat(nodes, "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": "
                  "[\"h9\", \"y\"], \"outputs\": [\"loss\"]}");
    pl_graph *g = pl_test_training_model(
        "[3]",
        "{\"name\": \"wt\", \"shape\": [8, 5], "
        "\"init\": {\"kind\": \"glorot_uniform\", \"seed\": 1}},"
        "{\"name\": \"b\", \"shape\": [8], \"init\": {\"kind\": \"zeros\"}}",
        nodes, "loss");
    int products = 0, transpose_grad = -1, last_product = -1;
    for (int o = g->n_forward_ops; o < g->n_ops; o++) {
        if (g->ops[o].kind == PL_OP_MATMUL_GRAD_B) {
            products++;
            last_product = o;
        }
        if (g->ops[o].kind == PL_OP_TRANSPOSE)
            transpose_grad = o;
    }
    CU_ASSERT_EQUAL(products, (STEPS + PL_LSTM_BLOCK_STEPS - 1) / PL_LSTM_BLOCK_STEPS);
    CU_ASSERT_TRUE(transpose_grad > last_product);
    pl_graph_free(g);
}

/* The importers' LSTM layer (tests/models/lstm-projected.json): 10 projected steps, the
 * first without state and so without a weight; the recurrent weight's gradient comes from
 * the 9 others in two blocks, each one product over h alone ([N, steps, H]), finished
 * before the gradient of the transpose that computes the weight. */
static void test_projected_lstm(void)
{
    pl_graph *g = pl_test_bundled_training_graph("tests/models/lstm-projected.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    check_structure(g);
    int w = pl_graph_find_tensor(g, "w"), cells = 0, stateless = 0, products = 0;
    int last_product = -1, transpose_grad = -1;
    for (int o = g->n_forward_ops; o < g->n_ops; o++) {
        const pl_op *op = &g->ops[o];
        if (op->kind == PL_OP_LSTM_CELL_GRAD) {
            cells++;
            stateless += op->n_outputs == 1;
        }
        if (op->kind == PL_OP_MATMUL_GRAD_B && op->inputs[2] == w) {
            products++;
            last_product = o;
            const pl_tensor *h = &g->tensors[op->inputs[1]];
            CU_ASSERT_EQUAL(h->dims[h->rank - 1], 5);
        }
        if (op->kind == PL_OP_TRANSPOSE)
            transpose_grad = o;
    }
    CU_ASSERT_EQUAL(cells, 10);
    CU_ASSERT_EQUAL(stateless, 1);
    CU_ASSERT_EQUAL(products, (9 + PL_LSTM_BLOCK_STEPS - 1) / PL_LSTM_BLOCK_STEPS);
    CU_ASSERT_TRUE(transpose_grad > last_product);
    pl_graph_free(g);
}

static void test_batch_norm_state(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    int norms = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        if (g->ops[o].kind != PL_OP_BATCH_NORM)
            continue;
        norms++;
        CU_ASSERT_EQUAL_FATAL(g->ops[o].n_inputs, 5);
        CU_ASSERT_EQUAL(g->tensors[g->ops[o].inputs[3]].kind, PL_TENSOR_STATE);
        CU_ASSERT_EQUAL(g->tensors[g->ops[o].inputs[4]].init.kind, PL_INIT_ONES);
    }
    CU_ASSERT_TRUE(norms > 0);
    pl_graph_free(g);
}

static void test_untrainable_models(void)
{
    pl_error err;
    /* The loss reads no parameter. */
    pl_graph *g = pl_test_model("[3]", "{\"name\": \"w\", \"shape\": [3, 3], \"init\": "
                                "{\"kind\": \"ones\"}}",
                                "{\"name\": \"l\", \"op\": \"softmax_cross_entropy\", \"inputs\":"
                                " [\"x\", \"y\"], \"outputs\": [\"loss\"]}",
                                "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(pl_autodiff_build(g, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "does not depend on any trainable parameter"));
    pl_graph_free(g);
}

void pl_register_autodiff_tests(void)
{
    static const pl_test_case cases[] = {
        {"training graphs of every small model are well formed", test_every_small_model},
        {"shared weights accumulate once per reader or LSTM block, at home",
         test_shared_weights_and_homes},
        {"a computed LSTM weight's gradient is made per block of steps",
         test_computed_lstm_weight},
        {"a projected LSTM's recurrent weight gradient is made over h alone",
         test_projected_lstm},
        {"batch norm gains running averages", test_batch_norm_state},
        {"weight gradients are told from activations' gradients", test_weight_gradients},
        {"a loss without parameters cannot be trained", test_untrainable_models},
        {NULL, NULL},
    };
    pl_test_add_suite("autodiff", cases);
}
