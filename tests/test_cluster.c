/* Clusters: the bundled files read as written, links are symmetric with the default for
 * pairs not listed, pacing is noticed, and the local machine has a device per core. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "suites.h"
#include "test_util.h"

static void test_bundled(void)
{
    pl_cluster *native = pl_test_bundled_cluster("local-2.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(native);
    CU_ASSERT_EQUAL(native->n_devices, 2);
    CU_ASSERT_FALSE(native->paced);
    CU_ASSERT_EQUAL(native->devices[1].n_cores, 1);
    CU_ASSERT_EQUAL(native->devices[1].cores[0], 1);
    CU_ASSERT_EQUAL(pl_cluster_link(native, 0, 1)->bytes_per_second, 0);
    pl_cluster_free(native);

    pl_cluster *paced = pl_test_bundled_cluster("paced-8.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(paced);
    CU_ASSERT_EQUAL(paced->n_devices, 8);
    CU_ASSERT_TRUE(paced->paced);
    int a1 = pl_cluster_find_device(paced, "a1"), a3 = pl_cluster_find_device(paced, "a3");
    int b2 = pl_cluster_find_device(paced, "b2");
    CU_ASSERT_TRUE_FATAL(a1 >= 0 && a3 >= 0 && b2 >= 0);
    CU_ASSERT_EQUAL(pl_cluster_find_device(paced, "c0"), -1);
    /* listed pairs both ways; the default elsewhere */
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(paced, a3, a1)->bytes_per_second, 2e9, 1);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(paced, a1, a3)->latency_seconds, 1e-5, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(paced, a1, b2)->bytes_per_second, 2.5e8, 1);
    CU_ASSERT_DOUBLE_EQUAL(pl_cluster_link(paced, b2, a1)->latency_seconds, 1e-4, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(paced->devices[b2].flops_per_second, 1e9, 1);
    CU_ASSERT_EQUAL(paced->devices[b2].memory_bytes, 536870912);
    pl_cluster_free(paced);

    pl_cluster *four = pl_test_bundled_cluster("paced-4.json");
    CU_ASSERT_PTR_NOT_NULL(four);
    pl_cluster_free(four);
    pl_cluster_free(NULL);
}

static void test_local_machine(void)
{
    pl_cluster *c = pl_cluster_local(NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    CU_ASSERT_EQUAL(c->n_devices, cores < 1 ? 1 : cores > PL_MAX_DEVICES ? PL_MAX_DEVICES : cores);
    CU_ASSERT_FALSE(c->paced);
    for (int d = 0; d < c->n_devices; d++) {
        CU_ASSERT_EQUAL(c->devices[d].threads, 1);
        CU_ASSERT_TRUE(c->devices[d].memory_bytes > 0);
        CU_ASSERT_EQUAL(c->devices[d].cores[0], d);
    }
    pl_cluster_free(c);
}

static void test_one_device_needs_no_link(void)
{
    static const char text[] = "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": "
                               "\"one\", \"devices\": [{\"name\": \"d\", \"memory_bytes\": 1}]}";
    pl_error err;
    pl_cluster *c = pl_cluster_load_buffer(text, sizeof text - 1, "one.json", &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->devices[0].threads, 1); /* the default */
    CU_ASSERT_EQUAL(c->devices[0].n_cores, 0);
    pl_cluster_free(c);
}

void pl_register_cluster_tests(void)
{
    static const pl_test_case cases[] = {
        {"bundled clusters read as written", test_bundled},
        {"the local machine: a device per core", test_local_machine},
        {"one device needs no link", test_one_device_needs_no_link},
        {NULL, NULL},
    };
    pl_test_add_suite("cluster", cases);
}
