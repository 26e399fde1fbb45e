/* The dot drawing: read back with cgraph, it has a node per op and input and an edge per
 * consumed activation or input. */
#include <graphviz/cgraph.h>
#include <stdio.h>
#include <string.h>

#include "dot.h"
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

void pl_register_dot_tests(void)
{
    static const pl_test_case cases[] = {
        {"dot output reads back with cgraph", test_round_trip},
        {NULL, NULL},
    };
    pl_test_add_suite("dot", cases);
}
