/* Bad-input cases as data: each folder of tests/invalid holds an input, `model.json` (a
 * file, a directory, or nothing), `cluster.json`, or `plan.json` (a plan for
 * graphs/small/mlp-small.json on graphs/clusters/paced-4.json), and `expected`, the
 * one-line message its loader must give, with the input written by its file name. Adding
 * a case needs no code. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "load.h"
#include "plan.h"
#include "suites.h"
#include "test_util.h"

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* A plan case: checked against the small MLP on the paced 4-device cluster. */
static pl_plan *load_plan(const char *path, pl_error *err)
{
    char model[4096], cluster[4096];
    snprintf(model, sizeof model, "%s/graphs/small/mlp-small.json", pl_test_srcdir());
    snprintf(cluster, sizeof cluster, "%s/graphs/clusters/paced-4.json", pl_test_srcdir());
    pl_graph *g = pl_graph_load_file(model, err);
    pl_cluster *c = pl_cluster_load_file(cluster, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_plan *plan = pl_plan_load_file(path, g, c, err);
    pl_cluster_free(c);
    pl_graph_free(g);
    return plan;
}

static void test_every_case(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/invalid", pl_test_srcdir());
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    int checked = 0;
    for (int i = 0; i < n; i++) {
        char input[8192], expected_path[8192], expected[2048], got[4096];
        static const char *const kinds[] = {"plan.json", "cluster.json", "model.json"};
        int kind = 0;
        for (; kind < 2; kind++) {
            snprintf(input, sizeof input, "%s/%s/%s", dir, names[i], kinds[kind]);
            if (access(input, F_OK) == 0)
                break;
        }
        snprintf(input, sizeof input, "%s/%s/%s", dir, names[i], kinds[kind]);
        snprintf(expected_path, sizeof expected_path, "%s/%s/expected", dir, names[i]);
        if (!read_line(expected_path, expected, sizeof expected)) {
            fprintf(stderr, "\n    %s: no expected message\n", names[i]);
            CU_FAIL("case without an expected message");
            continue;
        }
        pl_error err;
        if (kind == 0) {
            pl_plan *p = load_plan(input, &err);
            CU_ASSERT_PTR_NULL(p);
            pl_plan_free(p);
        } else if (kind == 1) {
            pl_cluster *c = pl_cluster_load_file(input, &err);
            CU_ASSERT_PTR_NULL(c);
            pl_cluster_free(c);
        } else {
            pl_graph *g = pl_graph_load_file(input, &err);
            CU_ASSERT_PTR_NULL(g);
            pl_graph_free(g);
        }
        CU_ASSERT_EQUAL(err.status, PL_EINPUT);
        /* The message names the input as given; compare from its base name on. */
        pl_error_format(&err, got, sizeof got);
        const char *shown = strstr(got, kinds[kind]);
        if (!shown || strcmp(shown, expected) != 0) {
            fprintf(stderr, "\n    case %s\n      got:      %s\n      expected: %s\n",
                    names[i], shown ? shown : got, expected);
            CU_FAIL("message differs");
        }
        checked++;
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    printf("(%d cases) ", checked);
    CU_ASSERT_TRUE(checked >= 40);
}

void pl_register_invalid_tests(void)
{
    static const pl_test_case cases[] = {
        {"every tests/invalid case gives its message", test_every_case},
        {NULL, NULL},
    };
    pl_test_add_suite("invalid", cases);
}
