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
    CU_ASSERT_EQUAL(pl_dot_write_graph(g, f, &err), PL_OK);
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
    CU_ASSERT_EQUAL(pl_dot_write_plan(g, plan, c, op_seconds, all_ops, f, &err), PL_OK);
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

static void test_plan_bad_input(void)
{
    fixture fx = setup();
    fx.plan->device[1] = 7; /* no such device */
    pl_error err;
    pl_error_init(&err, "test");
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(pl_dot_write_plan(fx.g, fx.plan, fx.c, NULL, false, f, &err), PL_EINPUT);
    CU_ASSERT_EQUAL(ftell(f), 0); /* nothing written */
    fx.plan->device[1] = 0;
    CU_ASSERT_EQUAL(pl_dot_write_plan(fx.g, fx.plan, fx.c, NULL, false, f, NULL), PL_OK);
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
        {"plan: an invalid plan is an input error", test_plan_bad_input},
        {NULL, NULL},
    };
    pl_test_add_suite("dot", cases);
}
