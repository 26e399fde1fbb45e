/* The dot drawings, read back with cgraph. A model: a node per op and input and an edge
 * per consumed activation or input. A plan: a cluster per used device (and stage), the
 * cross-device edge labelled with the bytes worked out by hand, a box per co-location
 * group or per op. */
#include <graphviz/cgraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dot.h"
#include "plan.h"
#include "suites.h"
#include "test_util.h"

static void test_round_trip(void)
{
    pl_error err;
    pl_graph *g = pl_test_model(
        "[6]", "{\"name\": \"w\", \"shape\": [6, 3], \"init\": {\"kind\": \"ones\"}}",
        "{\"name\": \"fc\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"z\"]},"
        "{\"name\": \"sq\", \"op\": \"mul\", \"inputs\": [\"z\", \"z\"], \"outputs\": [\"zz\"]},"
        "{\"name\": \"l\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"zz\", \"y\"], "
        "\"outputs\": [\"loss\"]}",
        "loss", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(pl_dot_write_graph(g, PL_DOT_MAX_BOXES, f, &err), PL_OK);
    rewind(f);
    Agraph_t *read = agread(f, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(read);
    CU_ASSERT_EQUAL(agnnodes(read), 3 + 2); /* ops and inputs */
    /* x->fc, y->l, fc->sq twice (z used twice), sq->l */
    CU_ASSERT_EQUAL(agnedges(read), 5);
    Agnode_t *fc = agnode(read, "op:fc", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fc);
    const char *label = agget(fc, "label");
    CU_ASSERT_PTR_NOT_NULL_FATAL(label);
    CU_ASSERT_PTR_NOT_NULL(strstr(label, "matmul"));
    CU_ASSERT_PTR_NOT_NULL(strstr(label, "w [6,3]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(label, "[4,3]"));
    agclose(read);
    fclose(f);
    pl_graph_free(g);
}

/* The model on three devices (a, b, c), every op on the first until a test moves some. */
typedef struct fixture {
    pl_graph *g;
    pl_cluster *c;
    pl_plan *plan;
} fixture;

static fixture setup(void)
{
    fixture f = {pl_test_two_layers(),
                 pl_test_cluster((pl_test_devices){.n = 3, .memory = 1048576}), NULL};
    f.plan = pl_plan_new(f.g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.plan);
    return f;
}

static void teardown(fixture *f)
{
    pl_plan_free(f->plan);
    pl_cluster_free(f->c);
    pl_graph_free(f->g);
}

/* The drawing as text, and read back with cgraph's agmemread. */
static Agraph_t *draw(const pl_graph *g, const pl_plan *plan, const pl_cluster *c,
                      const double *op_seconds, bool all_ops, char **text)
{
    size_t size = 0;
    FILE *f = open_memstream(text, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    pl_error err;
    pl_error_init(&err, "test");
    CU_ASSERT_EQUAL(
        pl_dot_write_plan(g, plan, c, op_seconds, all_ops, PL_DOT_MAX_BOXES, f, &err), PL_OK);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    Agraph_t *read = agmemread(*text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(read);
    return read;
}

/* Subgraphs of g (recursively) whose name starts with prefix. */
static int count_subgraphs(Agraph_t *g, const char *prefix)
{
    int n = 0;
    for (Agraph_t *sub = agfstsubg(g); sub; sub = agnxtsubg(sub))
        n += (strncmp(agnameof(sub), prefix, strlen(prefix)) == 0) +
             count_subgraphs(sub, prefix);
    return n;
}

static const char *edge_label(Agraph_t *g, const char *tail, const char *head)
{
    Agnode_t *t = agnode(g, (char *)tail, 0), *h = agnode(g, (char *)head, 0);
    Agedge_t *e = t && h ? agedge(g, t, h, NULL, 0) : NULL;
    return e ? agget(e, "label") : NULL;
}

/* h on device a, fc and loss on b: h crosses (48 bytes forward, its gradient 48 back). */
static void test_plan_devices_and_bytes(void)
{
    fixture fx = setup();
    fx.plan->device[1] = fx.plan->device[2] = 1;
    char *text = NULL;
    Agraph_t *read = draw(fx.g, fx.plan, fx.c, NULL, false, &text);
    CU_ASSERT_EQUAL(count_subgraphs(read, "cluster_device:"), 2); /* c holds nothing */
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"cluster_device:a\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"cluster_device:b\""));
    CU_ASSERT_EQUAL(count_subgraphs(read, "cluster_device:a/stage"), 0);
    const char *label = edge_label(read, "op:h", "op:fc");
    CU_ASSERT_PTR_NOT_NULL_FATAL(label);
    CU_ASSERT_STRING_EQUAL(label, "96 B");
    CU_ASSERT_STRING_EQUAL(agget(agedge(read, agnode(read, "op:h", 0), agnode(read, "op:fc", 0),
                                        NULL, 0), "penwidth"), "2.5");
    /* same device: drawn, light, no label */
    label = edge_label(read, "op:fc", "op:loss");
    CU_ASSERT_TRUE(label == NULL || label[0] == '\0');
    /* the legend names every device, the empty one too */
    CU_ASSERT_PTR_NOT_NULL(agnode(read, "legend:c", 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(read, "label"), "96 B per step in 2 copies"));
    agclose(read);
    free(text);

    /* four micro-batches: four copies each way, the same bytes per step */
    fx.plan->micro_batches = 4;
    read = draw(fx.g, fx.plan, fx.c, NULL, false, &text);
    CU_ASSERT_STRING_EQUAL(edge_label(read, "op:h", "op:fc"), "96 B");
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(read, "label"), "in 8 copies"));
    agclose(read);
    free(text);
    teardown(&fx);
}

/* A box per forward op (each group collapsed) or per op; the legend's boxes besides. */
static void test_plan_collapsed_and_all_ops(void)
{
    fixture fx = setup();
    fx.plan->device[2] = 2;
    fx.plan->stage[2] = 1;
    fx.plan->n_stages = 2;
    double *seconds = malloc((size_t)fx.g->n_ops * sizeof *seconds);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seconds);
    int in_group_h = 0, in_group_loss = 0;
    for (int o = 0; o < fx.g->n_ops; o++) {
        seconds[o] = 1e-3;
        in_group_h += fx.g->ops[o].group == 0;
        in_group_loss += fx.g->ops[o].group == 2;
    }
    CU_ASSERT_TRUE(in_group_h >= 3); /* h, its weight gradient, w1's update at least */
    char *text = NULL;
    Agraph_t *read = draw(fx.g, fx.plan, fx.c, seconds, false, &text);
    /* 3 ops, 3 devices in the legend, 2 nodes for each of the 3 edges in the key */
    CU_ASSERT_EQUAL(agnnodes(read), 3 + 3 + 6);
    CU_ASSERT_PTR_NOT_NULL(agsubg(read, "cluster_edge_key", 0));
    CU_ASSERT_EQUAL(count_subgraphs(read, "cluster_device:"), 2 + 2); /* devices, stages */
    CU_ASSERT_PTR_NOT_NULL(agsubg(read, "cluster_device:c", 0));
    char want[64];
    snprintf(want, sizeof want, "matmul · %.2f ms", 1e-3 * 1e3 * in_group_h);
    const char *label = agget(agnode(read, "op:h", 0), "label");
    CU_ASSERT_PTR_NOT_NULL(strstr(label, want));
    /* the legend: device a has every op but the loss's group, 1 ms each */
    int on_a = fx.g->n_ops - in_group_loss;
    snprintf(want, sizeof want, "a\n%d training ops · %d.00 ms", on_a, on_a);
    CU_ASSERT_STRING_EQUAL(agget(agnode(read, "legend:a", 0), "label"), want);
    agclose(read);
    free(text);

    read = draw(fx.g, fx.plan, fx.c, seconds, true, &text);
    CU_ASSERT_EQUAL(agnnodes(read), fx.g->n_ops + 3 + 6);
    /* the loss's own label: one op's time */
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(agnode(read, "op:loss", 0), "label"), "1.00 ms"));
    agclose(read);
    free(text);
    free(seconds);
    teardown(&fx);
}

/* ---- large models: module boxes ------------------------------------------------------- */

/* The drawing test's model (tools/gen-models --drawing): DenseNet-121's 428 ops, named by
 * dotted module paths. */
static pl_graph *densenet(bool training)
{
    return training ? pl_test_bundled_training_graph("../tests/models/densenet-like.json", 0)
                    : pl_test_bundled_graph("../tests/models/densenet-like.json");
}

static Agraph_t *read_back(char *text)
{
    Agraph_t *read = agmemread(text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(read);
    return read;
}

/* The box drawing an op: "op:NAME" of its own, else its module's "module:PATH" + suffix,
 * PATH the longest prefix of `name` (the op's or its forward op's) that has one. */
static Agnode_t *find_box(Agraph_t *read, const char *name, const char *suffix)
{
    char id[2 * PL_MAX_NAME + 64];
    snprintf(id, sizeof id, "op:%s", name);
    Agnode_t *n = agnode(read, id, 0);
    for (size_t length = strlen(name); !n && length > 0; length--)
        if (name[length] == '.' || name[length] == '/') {
            snprintf(id, sizeof id, "module:%.*s%s", (int)length, name, suffix);
            n = agnode(read, id, 0);
        }
    return n;
}

/* The ops a drawing's boxes stand for: one per "op:" node, "N ops" for a module's. */
static int ops_drawn(Agraph_t *read, int *boxes)
{
    int ops = 0;
    *boxes = 0;
    for (Agnode_t *n = agfstnode(read); n; n = agnxtnode(read, n)) {
        const char *id = agnameof(n), *label = agget(n, "label"), *line;
        int count = 0;
        if (strncmp(id, "op:", 3) == 0)
            ops++, (*boxes)++;
        else if (strncmp(id, "module:", 7) == 0 && (line = strchr(label, '\n')) &&
                 sscanf(line + 1, "%d", &count) == 1 && count > 1)
            ops += count, (*boxes)++;
        else if (strncmp(id, "module:", 7) == 0)
            CU_FAIL("a module box without its op count");
    }
    return ops;
}

static bool joined(Agraph_t *read, Agnode_t *a, Agnode_t *b)
{
    return agedge(read, a, b, NULL, 0) || agedge(read, b, a, NULL, 0);
}

/* The model of 428 ops in module boxes: fewer than the limit, inside their parents'
 * clusters, every op in one, every activation between two boxes an edge labelled with
 * its bytes; with max_boxes 0, op by op as before. */
static void test_large_model_grouped(void)
{
    pl_graph *g = densenet(false);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_TRUE(g->n_ops > PL_DOT_MAX_BOXES);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(pl_dot_write_graph(g, PL_DOT_MAX_BOXES, f, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    Agraph_t *read = read_back(text);
    int boxes;
    CU_ASSERT_EQUAL(ops_drawn(read, &boxes), g->n_ops);
    CU_ASSERT_TRUE(boxes <= PL_DOT_MAX_BOXES && boxes < g->n_ops / 3);
    CU_ASSERT_PTR_NOT_NULL(agsubg(read, "cluster_module:features.denseblock3", 0));
    CU_ASSERT_PTR_NOT_NULL(agnode(read, "module:features.denseblock3.denselayer24", 0));
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(read, "label"), "grouped by the first 3 parts"));
    int edges = 0;
    for (int o = 0; o < g->n_ops; o++) {
        Agnode_t *box = find_box(read, g->ops[o].name, "");
        CU_ASSERT_PTR_NOT_NULL_FATAL(box);
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            const pl_tensor *t = &g->tensors[g->ops[o].inputs[i]];
            if (t->kind != PL_TENSOR_ACTIVATION)
                continue;
            Agnode_t *from = find_box(read, g->ops[t->producer].name, "");
            if (from == box)
                continue;
            Agedge_t *e = agedge(read, from, box, NULL, 0);
            CU_ASSERT_PTR_NOT_NULL_FATAL(e);
            CU_ASSERT_PTR_NOT_NULL(strstr(agget(e, "label"), "B"));
            edges++;
        }
    }
    CU_ASSERT_TRUE(edges > 0);
    /* the densest pair: a block's first layer feeds every later one and the block's cat */
    Agnode_t *first = agnode(read, "module:features.denseblock1.denselayer1", 0);
    CU_ASSERT_EQUAL(agdegree(read, first, false, true), 5 + 1);
    agclose(read);
    free(text);

    f = open_memstream(&text, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(pl_dot_write_graph(g, 0, f, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(fclose(f), 0);
    read = read_back(text);
    CU_ASSERT_EQUAL(ops_drawn(read, &boxes), g->n_ops);
    CU_ASSERT_EQUAL(boxes, g->n_ops);
    CU_ASSERT_EQUAL(count_subgraphs(read, "cluster_module:"), 0);
    agclose(read);
    free(text);
    pl_graph_free(g);
}

/* Its placement on four devices, a stage each: module boxes within devices and stages
 * (a module cut by a stage boundary has a box on each side), every forward op (or, with
 * every op, every op of the training graph, a module's backward ops in a box of their
 * own) in one, the edges between boxes kept, those between devices red with their
 * copies' bytes. */
static void test_large_plan_grouped(void)
{
    pl_graph *g = densenet(true);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 1LL << 32});
    pl_plan *plan = pl_test_pipeline_plan(g, 4, 2, PL_SCHEDULE_1F1B);
    char *text = NULL;
    Agraph_t *read = draw(g, plan, c, NULL, false, &text);
    int boxes;
    CU_ASSERT_EQUAL(ops_drawn(read, &boxes), g->n_forward_ops);
    CU_ASSERT_TRUE(boxes <= PL_DOT_MAX_BOXES && boxes < g->n_forward_ops / 3);
    int modules = 0;
    for (int dev = 0; dev < 4; dev++) {
        char id[64];
        snprintf(id, sizeof id, "cluster_device:%s", c->devices[dev].name);
        Agraph_t *device = agsubg(read, id, 0);
        CU_ASSERT_PTR_NOT_NULL_FATAL(device);
        snprintf(id, sizeof id, "cluster_device:%s/stage:%d", c->devices[dev].name, dev);
        CU_ASSERT_PTR_NOT_NULL(agsubg(device, id, 0));
        strcat(id, "/module:");
        modules += count_subgraphs(read, id);
    }
    CU_ASSERT_TRUE(modules > 4);
    /* devices, stages and modules: nothing else */
    CU_ASSERT_EQUAL(count_subgraphs(read, "cluster_device:"), 4 + 4 + modules);
    int crossing = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        char suffix[64];
        snprintf(suffix, sizeof suffix, "@%s/stage:%d", c->devices[plan->device[o]].name,
                 plan->stage[o]);
        Agnode_t *box = find_box(read, g->ops[o].name, suffix);
        CU_ASSERT_PTR_NOT_NULL_FATAL(box);
        for (int i = 0; i < g->ops[o].n_inputs; i++) {
            const pl_tensor *t = &g->tensors[g->ops[o].inputs[i]];
            if (t->kind != PL_TENSOR_ACTIVATION)
                continue;
            int p = t->producer;
            snprintf(suffix, sizeof suffix, "@%s/stage:%d", c->devices[plan->device[p]].name,
                     plan->stage[p]);
            Agnode_t *from = find_box(read, g->ops[p].name, suffix);
            CU_ASSERT_PTR_NOT_NULL_FATAL(from);
            if (from == box)
                continue;
            CU_ASSERT_TRUE(joined(read, from, box));
            Agedge_t *e = agedge(read, from, box, NULL, 0);
            if (e && plan->device[p] != plan->device[o]) {
                CU_ASSERT_STRING_EQUAL(agget(e, "color"), "firebrick");
                crossing++;
            }
        }
    }
    CU_ASSERT_TRUE(crossing > 0);
    agclose(read);
    free(text);

    read = draw(g, plan, c, NULL, true, &text);
    CU_ASSERT_EQUAL(ops_drawn(read, &boxes), g->n_ops);
    CU_ASSERT_TRUE(boxes <= PL_DOT_MAX_BOXES / 2); /* every op: half as many boxes */
    CU_ASSERT_PTR_NOT_NULL(agnode(read, "module:features.denseblock1@a/stage:0/backward", 0));
    agclose(read);
    free(text);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Whether node `name` is drawn in the cluster of device `device`. */
static bool drawn_on(Agraph_t *g, const char *name, const char *device)
{
    char id[128];
    snprintf(id, sizeof id, "cluster_device:%s", device);
    Agraph_t *cluster = agsubg(g, id, 0);
    Agnode_t *n = agnode(g, (char *)name, 0);
    return cluster && n && agsubnode(cluster, n, 0);
}

/* mlp-small's first layer split over dev1 and dev2, the rest on dev0: a box per shard on
 * its device, and the all-gather before fc2 on dev0, fed by red edges of each shard's
 * 4 x 16 floats forward and their gradient back (512 bytes). */
static void test_plan_split(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", 0);
    pl_cluster *c = pl_test_bundled_cluster("paced-4.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_plan *plan = pl_plan_new(g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    const int devices[] = {1, 2};
    for (int o = 0; o < 3; o++) /* fc1's matmul, bias and ReLU */
        CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, o, 2, devices, NULL), PL_OK);
    char *text = NULL;
    Agraph_t *read = draw(g, plan, c, NULL, false, &text);
    CU_ASSERT_TRUE(drawn_on(read, "op:fc1/matmul/tp0", "dev1"));
    CU_ASSERT_TRUE(drawn_on(read, "op:fc1/matmul/tp1", "dev2"));
    CU_ASSERT_TRUE(drawn_on(read, "op:fc1/relu/tp1", "dev2"));
    CU_ASSERT_TRUE(drawn_on(read, "op:fc2/matmul", "dev0"));
    CU_ASSERT_PTR_NULL(agnode(read, "op:fc1/matmul", 0));
    CU_ASSERT_TRUE(drawn_on(read, "op:fc1/relu/gather", "dev0"));
    Agnode_t *gather = agnode(read, "op:fc1/relu/gather", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(gather);
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(gather, "label"), "concat (collective)"));
    for (int s = 0; s < 2; s++) {
        char shard[64];
        snprintf(shard, sizeof shard, "op:fc1/relu/tp%d", s);
        const char *label = edge_label(read, shard, "op:fc1/relu/gather");
        CU_ASSERT_PTR_NOT_NULL_FATAL(label);
        CU_ASSERT_STRING_EQUAL(label, "512 B");
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(agget(read, "label"), "3 ops split over 2 devices"));
    agclose(read);
    free(text);
    pl_plan_free(plan);
    pl_cluster_free(c);
    pl_graph_free(g);
}

static void test_plan_bad_input(void)
{
    fixture fx = setup();
    fx.plan->device[1] = 7; /* no such device */
    pl_error err;
    pl_error_init(&err, "test");
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(pl_dot_write_plan(fx.g, fx.plan, fx.c, NULL, false, PL_DOT_MAX_BOXES, f, &err),
                    PL_EINPUT);
    CU_ASSERT_EQUAL(ftell(f), 0); /* nothing written */
    fx.plan->device[1] = 0;
    CU_ASSERT_EQUAL(pl_dot_write_plan(fx.g, fx.plan, fx.c, NULL, false, PL_DOT_MAX_BOXES, f, NULL),
                    PL_OK);
    fclose(f);
    teardown(&fx);
}

void pl_register_dot_tests(void)
{
    static const pl_test_case cases[] = {
        {"dot output reads back with cgraph", test_round_trip},
        {"plan: a cluster per device, bytes on the cross-device edge",
         test_plan_devices_and_bytes},
        {"plan: groups collapsed or every op, times summed", test_plan_collapsed_and_all_ops},
        {"plan: a split op's shards on their devices, the collectives' copies red",
         test_plan_split},
        {"plan: an invalid plan is an input error", test_plan_bad_input},
        {"a large model: module boxes, every op and edge kept", test_large_model_grouped},
        {"a large plan: module boxes by device and stage", test_large_plan_grouped},
        {NULL, NULL},
    };
    pl_test_add_suite("dot", cases);
}
