/* Every CUnit suite of the unit-test runner, one registration function per module. */
#ifndef PLACER_TESTS_SUITES_H
#define PLACER_TESTS_SUITES_H

void pl_register_support_tests(void);
void pl_register_ops_tests(void);
void pl_register_load_tests(void);
void pl_register_invalid_tests(void);
void pl_register_dot_tests(void);
void pl_register_timeline_tests(void);
void pl_register_cluster_tests(void);
void pl_register_partition_tests(void);
void pl_register_plan_tests(void);
void pl_register_data_tests(void);
void pl_register_weights_tests(void);
void pl_register_pool_tests(void);
void pl_register_autodiff_tests(void);
void pl_register_session_tests(void);
void pl_register_executor_tests(void);
void pl_register_replica_tests(void);
void pl_register_split_tests(void);
void pl_register_recompute_tests(void);
void pl_register_measure_tests(void);
void pl_register_machine_load_tests(void);
void pl_register_simulate_tests(void);
void pl_register_op_times_tests(void);
void pl_register_hardware_tests(void);
void pl_register_baseline_tests(void);
void pl_register_agent_tests(void);
void pl_register_agent_split_tests(void);
void pl_register_search_tests(void);
void pl_register_kernels_dense_tests(void);
void pl_register_kernels_elementwise_tests(void);
void pl_register_kernels_softmax_tests(void);
void pl_register_kernels_vocab_tests(void);
void pl_register_kernels_norm_tests(void);
void pl_register_kernels_lstm_tests(void);
void pl_register_kernels_gru_tests(void);
void pl_register_kernels_optim_tests(void);
void pl_register_kernels_conv_tests(void);
void pl_register_kernels_pool_tests(void);
void pl_register_kernels_shape_tests(void);
void pl_register_kernels_conv_nd_tests(void);

#endif
