/* The loader on valid models: order, shapes, costs, the batch flag, bundled models. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "load.h"
#include "suites.h"
#include "test_util.h"

static const char *const mlp_params =
    "{\"name\": \"w1\", \"shape\": [6, 5], \"init\": {\"kind\": \"glorot_uniform\", \"seed\": 1}},"
    "{\"name\": \"b1\", \"shape\": [5], \"init\": {\"kind\": \"zeros\"}},"
    "{\"name\": \"w2\", \"shape\": [5, 3], \"init\": {\"kind\": \"normal\", \"mean\": 0, "
    "\"std\": 0.1, \"seed\": 2}}";

/* Listed against the dataflow on purpose: the loader must sort them. */
static const char *const mlp_nodes =
    "{\"name\": \"xent\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
    " \"outputs\": [\"loss\"]},"
    "{\"name\": \"fc2\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w2\"], \"outputs\": [\"logits\"]},"
    "{\"name\": \"fc1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w1\"], \"outputs\": [\"z\"]},"
    "{\"name\": \"bias\", \"op\": \"add\", \"inputs\": [\"z\", \"b1\"], \"outputs\": [\"zb\"]},"
    "{\"name\": \"act\", \"op\": \"relu\", \"inputs\": [\"zb\"], \"outputs\": [\"h\"]}";

static void test_sorts_and_infers(void)
{
    pl_error err;
    pl_graph *g = pl_test_model("[6]", mlp_params, mlp_nodes, "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(g->n_ops, 5);
    static const char *const order[] = {"fc1", "bias", "act", "fc2", "xent"};
    for (int o = 0; o < 5; o++)
        CU_ASSERT_STRING_EQUAL(g->ops[o].name, order[o]);
    /* every op reads only what earlier ops produced */
    for (int o = 0; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            CU_ASSERT_TRUE(g->tensors[g->ops[o].inputs[i]].producer < o);
    int logits = pl_graph_find_tensor(g, "logits");
    CU_ASSERT_EQUAL(g->tensors[logits].rank, 2);
    CU_ASSERT_EQUAL(g->tensors[logits].dims[0], 4);
    CU_ASSERT_EQUAL(g->tensors[logits].dims[1], 3);
    CU_ASSERT_EQUAL(g->tensors[logits].batch_axis, 0);
    CU_ASSERT_EQUAL(g->tensors[logits].producer, pl_graph_find_op(g, "fc2"));
    CU_ASSERT_EQUAL(g->loss, pl_graph_find_tensor(g, "loss"));
    CU_ASSERT_EQUAL(g->tensors[g->loss].batch_axis, PL_NO_BATCH);
    int x = pl_graph_find_tensor(g, "x");
    CU_ASSERT_EQUAL(g->tensors[x].dims[0], 4); /* the batch, prepended */
    CU_ASSERT_EQUAL(g->tensors[x].role, PL_ROLE_DATA);
    CU_ASSERT_EQUAL(g->tensors[pl_graph_find_tensor(g, "w2")].init.kind, PL_INIT_NORMAL);
    CU_ASSERT_DOUBLE_EQUAL(g->tensors[pl_graph_find_tensor(g, "w2")].init.b, 0.1, 1e-12);
    CU_ASSERT_EQUAL(g->optimizer.kind, PL_OPT_SGD);
    CU_ASSERT_DOUBLE_EQUAL(g->optimizer.lr, 0.1, 1e-12);
    pl_graph_free(g);
}

static void test_costs(void)
{
    pl_error err;
    pl_graph *g = pl_test_model("[6]", mlp_params, mlp_nodes, "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    const pl_op *fc1 = &g->ops[pl_graph_find_op(g, "fc1")];
    CU_ASSERT_DOUBLE_EQUAL(fc1->flops, 2.0 * 4 * 6 * 5, 1e-9);
    CU_ASSERT_EQUAL(fc1->bytes_read, (4 * 6 + 6 * 5) * 4);
    CU_ASSERT_EQUAL(fc1->param_bytes, 6 * 5 * 4);
    CU_ASSERT_EQUAL(fc1->bytes_written, 4 * 5 * 4);
    pl_graph_stats s;
    pl_graph_stats_compute(g, &s);
    CU_ASSERT_EQUAL(s.n_params, 3);
    CU_ASSERT_EQUAL(s.param_count, 30 + 5 + 15);
    CU_ASSERT_EQUAL(s.param_bytes, 50 * 4);
    CU_ASSERT_EQUAL(s.n_inputs, 2);
    CU_ASSERT_EQUAL(s.input_bytes, (4 * 6 + 4) * 4);
    CU_ASSERT_EQUAL(s.op_count[PL_OP_MATMUL], 2);
    CU_ASSERT_EQUAL(s.activation_bytes, (20 + 20 + 20 + 12 + 1) * 4);
    pl_graph_free(g);
}

/* The hash is of the content: whitespace aside, one seed changed changes it. */
static void test_hash_follows_content(void)
{
    pl_error err;
    char reseeded[1024];
    snprintf(reseeded, sizeof reseeded, "%s", mlp_params);
    char *seed = strstr(reseeded, "\"seed\": 1");
    CU_ASSERT_PTR_NOT_NULL_FATAL(seed);
    seed[strlen("\"seed\": ")] = '7';
    pl_graph *a = pl_test_model("[6]", mlp_params, mlp_nodes, "loss", &err);
    pl_graph *b = pl_test_model(" [ 6 ]\n", mlp_params, mlp_nodes, "loss", &err);
    pl_graph *c = pl_test_model("[6]", reseeded, mlp_nodes, "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(a->hash, b->hash);
    CU_ASSERT_NOT_EQUAL(a->hash, c->hash);
    pl_graph_free(a);
    pl_graph_free(b);
    pl_graph_free(c);
    pl_graph_free(NULL); /* a no-op */
}

static void test_error_without_record(void)
{
    /* Callers that do not care about the message pass NULL. */
    CU_ASSERT_PTR_NULL(pl_graph_load_buffer("{", 1, "x.json", NULL));
    CU_ASSERT_PTR_NULL(pl_graph_load_file("/nonexistent/model.json", NULL));
}

static void test_errors_point_at_the_value(void)
{
    pl_error err;
    pl_graph *g = pl_test_model("[6]", mlp_params,
                                "{\"name\": \"fc\", \"op\": \"matmul\", \"inputs\": [\"x\", "
                                "\"w2\"], \"outputs\": [\"loss\"]}",
                                "loss", &err);
    PL_ASSERT_FAILS_WITH(g, err, "matmul \"fc\": inner dimensions differ");
    CU_ASSERT_STRING_EQUAL(err.path, "/nodes/0/inputs/1");
    char line[2048];
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_EQUAL(strncmp(line, "test.json: /nodes/0/inputs/1: matmul", 36), 0);

    g = pl_test_model("[6]", mlp_params,
                      "{\"name\": \"r\", \"op\": \"relu\", \"inputs\": [\"x\"], \"outputs\": "
                      "[\"loss\"]}",
                      "loss", &err);
    PL_ASSERT_FAILS_WITH(g, err, "must be an f32 scalar [], but it is f32 [4,6]");
    CU_ASSERT_STRING_EQUAL(err.path, "/loss");
}

static void test_weights_shared_across_steps(void)
{
    /* One parameter read by several nodes, as an unrolled RNN does. */
    pl_error err;
    pl_graph *g = pl_test_model(
        "[3]", "{\"name\": \"w\", \"shape\": [3, 3], \"init\": {\"kind\": \"ones\"}}",
        "{\"name\": \"s1\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"h1\"]},"
        "{\"name\": \"s2\", \"op\": \"matmul\", \"inputs\": [\"h1\", \"w\"], \"outputs\": [\"h2\"]},"
        "{\"name\": \"l\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"h2\", \"y\"], "
        "\"outputs\": [\"loss\"]}",
        "loss", &err);
    CU_ASSERT_PTR_NOT_NULL(g);
    pl_graph_free(g);
}

/* Every model shipped in graphs/ (and graphs/small/) loads. */
static void load_all_in(const char *dir, int *count)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", pl_test_srcdir(), dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        snprintf(path, sizeof path, "%s/%s/%s", pl_test_srcdir(), dir, e->d_name);
        pl_error err;
        pl_graph *g = pl_graph_load_file(path, &err);
        if (!g) {
            char line[2048];
            pl_error_format(&err, line, sizeof line);
            fprintf(stderr, "\n    %s\n", line);
        }
        CU_ASSERT_PTR_NOT_NULL(g);
        pl_graph_free(g);
        (*count)++;
    }
    closedir(d);
}

static void test_bundled_models_load(void)
{
    int count = 0;
    load_all_in("graphs", &count);
    load_all_in("graphs/small", &count);
    CU_ASSERT_TRUE(count >= 1);
}

static size_t count_nodes(const char *text, size_t limit)
{
    return pl_json_count_member_elements(text, strlen(text), "nodes", limit);
}

/* The node count taken from the raw text before parsing, with a lowered limit standing in
 * for PL_MAX_OPS: strings, nested arrays and other members named "nodes" do not count. */
static void test_node_count_before_parsing(void)
{
    const char *three = "{\"name\": \"a]b[\\\"{\", \"x\": {\"nodes\": [1, 2, 3, 4]},"
                        " \"nodes\" : [ {\"inputs\": [\"p\", \"q\"], \"s\": \",,]\"},"
                        " [1, [2]], \"n\" ], \"tail\": [5, 6]}";
    CU_ASSERT_EQUAL(count_nodes(three, 10), 3);
    CU_ASSERT_EQUAL(count_nodes(three, 3), 3);
    CU_ASSERT_EQUAL(count_nodes(three, 2), 3); /* stops once past the limit */
    CU_ASSERT_EQUAL(count_nodes(three, 1), 2);
    CU_ASSERT_EQUAL(count_nodes("{\"nodes\": []}", 5), 0);
    CU_ASSERT_EQUAL(count_nodes("{\"nodes\": {\"a\": 1}}", 5), 0);
    CU_ASSERT_EQUAL(count_nodes("{\"nodes\": [1, 2", 5), 2); /* cut short: the parser says */
    CU_ASSERT_EQUAL(count_nodes("[\"nodes\", [1, 2]]", 5), 0);
}

/* A model's text whose "nodes" and the rest are read element by element (json_outline.h)
 * fails as the parser of the whole text fails, where the parser fails at all: the same
 * line, column and message, though the loader would have found a fault of meaning first
 * (the first node here reads an undefined tensor). */
static void test_syntax_errors_are_the_parsers(void)
{
    static const char *const nodes[] = {
        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"nowhere\"], \"outputs\": "
        "[\"h\"]}, {\"name\": \"b\" \"op\": 1}",                /* a missing comma */
        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"h\"]},",
        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"x\"], \"outputs\": [\"h\"]}}",
        "{\"name\": \"a\", \"name\": \"b\"}",                   /* a key twice */
        "{\"name\": \"a\", \"op\": \"relu\", \"inputs\": [\"nowhere\"]}, [1}, 2]",
        "1, 2, 1e999",
    };
    static const char *const frame =
        "{\"format\": \"placer-model\", \"version\": 1, \"name\": \"t\", \"batch_size\": 4,\n"
        " \"inputs\": [{\"name\": \"x\", \"shape\": [3], \"dtype\": \"f32\", \"role\": "
        "\"data\"}],\n \"parameters\": [],\n \"nodes\": [%s],\n \"loss\": \"h\"%s}";
    static const char *const tails[] = {"", ", \"loss\": \"h\"", " x"};
    for (size_t n = 0; n < sizeof nodes / sizeof *nodes; n++)
        for (size_t t = 0; t < sizeof tails / sizeof *tails; t++) {
            char text[1024];
            int len = snprintf(text, sizeof text, frame, nodes[n], tails[t]);
            pl_error load_err, parse_err;
            pl_error_init(&load_err, "m.json");
            pl_error_init(&parse_err, "m.json");
            CU_ASSERT_PTR_NULL(pl_graph_load_buffer(text, (size_t)len, "m.json", &load_err));
            json_t *root = pl_json_parse_buffer(text, (size_t)len, &parse_err);
            if (root) { /* valid JSON: the loader finds the fault of meaning */
                CU_ASSERT_EQUAL(load_err.line, 0);
                json_decref(root);
                continue;
            }
            CU_ASSERT_EQUAL(load_err.line, parse_err.line);
            CU_ASSERT_EQUAL(load_err.column, parse_err.column);
            CU_ASSERT_STRING_EQUAL(load_err.text, parse_err.text);
        }
}

void pl_register_load_tests(void)
{
    static const pl_test_case cases[] = {
        {"nodes are sorted and shapes inferred", test_sorts_and_infers},
        {"FLOPs, bytes and totals", test_costs},
        {"graph hash follows the content, not the whitespace", test_hash_follows_content},
        {"a NULL error record is allowed", test_error_without_record},
        {"errors point at the offending value", test_errors_point_at_the_value},
        {"a parameter may feed several nodes", test_weights_shared_across_steps},
        {"bundled models load", test_bundled_models_load},
        {"the node count is checked before parsing", test_node_count_before_parsing},
        {"syntax errors are the parser's, wherever they are", test_syntax_errors_are_the_parsers},
        {NULL, NULL},
    };
    pl_test_add_suite("load", cases);
}
