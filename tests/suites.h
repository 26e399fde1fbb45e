/* Every CUnit suite of the unit-test runner, one registration function per module. */
#ifndef PLACER_TESTS_SUITES_H
#define PLACER_TESTS_SUITES_H

void pl_register_support_tests(void);
void pl_register_ops_tests(void);
void pl_register_load_tests(void);
void pl_register_invalid_tests(void);
void pl_register_dot_tests(void);

#endif
