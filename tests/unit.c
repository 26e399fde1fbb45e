/* The unit-test runner: registers every suite and runs them all.
 * `tests/unit SUITE` runs one suite by name, `tests/unit --except A,B` all but those,
 * `tests/unit --only A,B` those alone,
 * `tests/unit --list` prints the suites' names, one a line. `make check` runs each suite
 * as a test of its own (tests/suite.sh), so that they run in parallel; tests/suites.sh
 * checks that Makefile.am lists every suite registered here.
 * Exit status 1 when anything failed, 2 for an unknown suite. */
#include <CUnit/Basic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "allocator.h"
#include "suites.h"

int main(int argc, char **argv)
{
    pl_allocator_keep_freed(); /* as placer does: the suites build and free many programs */
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    pl_register_support_tests();
    pl_register_ops_tests();
    pl_register_load_tests();
    pl_register_invalid_tests();
    pl_register_dot_tests();
    pl_register_timeline_tests();
    pl_register_cluster_tests();
    pl_register_partition_tests();
    pl_register_plan_tests();
    pl_register_data_tests();
    pl_register_weights_tests();
    pl_register_pool_tests();
    pl_register_autodiff_tests();
    pl_register_session_tests();
    pl_register_executor_tests();
    pl_register_replica_tests();
    pl_register_split_tests();
    pl_register_recompute_tests();
    pl_register_measure_tests();
    pl_register_machine_load_tests();
    pl_register_simulate_tests();
    pl_register_op_times_tests();
    pl_register_hardware_tests();
    pl_register_baseline_tests();
    pl_register_agent_tests();
    pl_register_agent_split_tests();
    pl_register_search_tests();
    pl_register_kernels_dense_tests();
    pl_register_kernels_elementwise_tests();
    pl_register_kernels_softmax_tests();
    pl_register_kernels_vocab_tests();
    pl_register_kernels_norm_tests();
    pl_register_kernels_lstm_tests();
    pl_register_kernels_gru_tests();
    pl_register_kernels_optim_tests();
    pl_register_kernels_conv_tests();
    pl_register_kernels_pool_tests();
    pl_register_kernels_shape_tests();
    pl_register_kernels_conv_nd_tests();
    CU_basic_set_mode(CU_BRM_VERBOSE);
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (CU_pSuite suite = CU_get_registry()->pSuite; suite; suite = suite->pNext)
            printf("%s\n", suite->pName);
        CU_cleanup_registry();
        return 0;
    } else if (argc > 2 && (strcmp(argv[1], "--except") == 0 || strcmp(argv[1], "--only") == 0)) {
        /* every suite but those named, or those alone, comma-separated (tools/check leaves
         * the slowest out of valgrind and shares the rest between two lanes) */
        bool only = strcmp(argv[1], "--only") == 0;
        if (only)
            for (CU_pSuite suite = CU_get_registry()->pSuite; suite; suite = suite->pNext)
                CU_set_suite_active(suite, CU_FALSE);
        char names[512];
        snprintf(names, sizeof names, "%s", argv[2]);
        for (char *name = strtok(names, ","); name; name = strtok(NULL, ",")) {
            CU_pSuite named = CU_get_suite(name);
            if (!named) {
                fprintf(stderr, "unit: no suite named '%s'\n", name);
                CU_cleanup_registry();
                return 2;
            }
            CU_set_suite_active(named, only ? CU_TRUE : CU_FALSE);
        }
        CU_basic_run_tests();
    } else if (argc > 1) {
        CU_pSuite suite = CU_get_suite(argv[1]);
        if (!suite) {
            fprintf(stderr, "unit: no suite named '%s'\n", argv[1]);
            CU_cleanup_registry();
            return 2;
        }
        CU_basic_run_suite(suite);
    } else {
        CU_basic_run_tests();
    }
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned ran = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return (failed || ran == 0) ? 1 : 0;
}
