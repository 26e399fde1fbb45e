/* How busy the machine was (machine_load.h): a real reading is a share in [0, 1]; a busy
 * thread of this process is ours, a busy child process is others'; loads made by hand
 * pool, clamp and warn as documented. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "machine_load.h"
#include "suites.h"
#include "test_util.h"

/* CPU seconds the burner spins for: 30 clock ticks at USER_HZ 100, few enough to be quick
 * and many enough that a tick's rounding is a tenth of it at most. */
#define BURN_SECONDS 0.3

static double cpu_seconds(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Spins until `clock` (this thread's or this process's CPU time) advanced by
 * BURN_SECONDS: however loaded the machine, the CPU time burnt is the same. */
static double burn(clockid_t clock)
{
    double start = cpu_seconds(clock);
    volatile double sink = 0;
    while (cpu_seconds(clock) - start < BURN_SECONDS)
        for (int i = 0; i < 10000; i++)
            sink += i;
    return cpu_seconds(clock) - start;
}

static bool have_proc_stat(void)
{
    return access("/proc/stat", R_OK) == 0;
}

static void test_share_in_range(void)
{
    pl_machine_cpu start = pl_machine_load_read();
    pl_machine_load load = pl_machine_load_since(&start, 0.2);
    CU_ASSERT_EQUAL(load.known, have_proc_stat());
    if (!load.known)
        return;
    CU_ASSERT(load.seconds >= 0.2);
    CU_ASSERT(load.total > 0);
    double share = pl_machine_load_share(&load), steal = pl_machine_load_steal_share(&load);
    CU_ASSERT(share >= 0 && share <= 1);
    CU_ASSERT(steal >= 0 && steal <= share + 1e-12);
}

static void *burn_thread(void *seconds)
{
    *(double *)seconds = burn(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

/* The thread's CPU time is counted as this process's, so others' is the machine's busy time
 * less it: others' share cannot exceed what the thread left of the machine. */
static void test_own_thread_is_ours(void)
{
    if (!have_proc_stat())
        return;
    double burnt = 0;
    pthread_t thread;
    pl_machine_cpu before = pl_machine_load_read();
    CU_ASSERT_FATAL(pthread_create(&thread, NULL, burn_thread, &burnt) == 0);
    pthread_join(thread, NULL);
    pl_machine_cpu after = pl_machine_load_read();
    pl_machine_load load = pl_machine_load_between(&before, &after);
    CU_ASSERT_FATAL(load.known);
    CU_ASSERT(burnt >= BURN_SECONDS);
    CU_ASSERT(after.ours - before.ours >= burnt - 0.01);
    /* a tick of rounding on each core either way */
    CU_ASSERT(load.others <= load.total - burnt + 0.03 * load.total + 0.02);
}

/* A child's CPU time is the machine's, not this process's (the parent sleeps in waitpid):
 * others' seconds hold at least the child's, less a few ticks of /proc/stat's rounding. */
static void test_child_is_others(void)
{
    if (!have_proc_stat())
        return;
    pl_machine_cpu before = pl_machine_load_read();
    pid_t child = fork();
    CU_ASSERT_FATAL(child >= 0);
    if (child == 0) {
        burn(CLOCK_PROCESS_CPUTIME_ID);
        _exit(0);
    }
    int status = 0;
    CU_ASSERT(waitpid(child, &status, 0) == child && WIFEXITED(status));
    pl_machine_cpu after = pl_machine_load_read();
    pl_machine_load load = pl_machine_load_between(&before, &after);
    CU_ASSERT_FATAL(load.known);
    CU_ASSERT(load.others >= BURN_SECONDS - 0.05);
    CU_ASSERT(after.ours - before.ours < 0.1); /* the child's time is not ours */
    CU_ASSERT(pl_machine_load_share(&load) > 0);
}

/* Loads by hand: pooled unclamped, the share clamped, unknown ones skipped. */
static void test_pool_and_clamp(void)
{
    pl_machine_load sum = {0};
    CU_ASSERT_FALSE(sum.known);
    CU_ASSERT_EQUAL(pl_machine_load_share(&sum), 0);
    pl_machine_load a = {.known = true, .seconds = 0.01, .total = 0.02, .others = -0.005};
    pl_machine_load b = {.known = true, .seconds = 0.5, .total = 1.0, .others = 0.4, .steal = 0.1};
    pl_machine_load unknown = {.seconds = 7, .total = 14, .others = 14};
    CU_ASSERT_EQUAL(pl_machine_load_share(&a), 0); /* clamped alone */
    pl_machine_load_add(&sum, &unknown);
    CU_ASSERT_FALSE(sum.known);
    pl_machine_load_add(&sum, &a);
    pl_machine_load_add(&sum, &b);
    pl_machine_load_add(&sum, &unknown);
    CU_ASSERT_TRUE(sum.known);
    CU_ASSERT_DOUBLE_EQUAL(sum.seconds, 0.51, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl_machine_load_share(&sum), 0.395 / 1.02, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl_machine_load_steal_share(&sum), 0.1 / 1.02, 1e-12);
    pl_machine_load over = {.known = true, .seconds = 1, .total = 2, .others = 2.5};
    CU_ASSERT_EQUAL(pl_machine_load_share(&over), 1);
}

/* Too short a measurement is judged with the reading before it; none is unknown. */
static void test_judged(void)
{
    pl_machine_load before = {.known = true, .seconds = 0.2, .total = 0.4, .others = 0.3};
    pl_machine_load short_one = {.known = true, .seconds = 0.01, .total = 0.02, .others = 0};
    pl_machine_load long_one = {.known = true, .seconds = 1, .total = 2, .others = 0.1};
    pl_machine_load none = {0};
    pl_machine_load judged = pl_machine_load_judged(&short_one, &before);
    CU_ASSERT_DOUBLE_EQUAL(judged.seconds, 0.21, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(pl_machine_load_share(&judged), 0.3 / 0.42, 1e-12);
    judged = pl_machine_load_judged(&long_one, &before);
    CU_ASSERT_DOUBLE_EQUAL(pl_machine_load_share(&judged), 0.05, 1e-12);
    judged = pl_machine_load_judged(&none, &before);
    CU_ASSERT_FALSE(judged.known);
}

static void test_warning(void)
{
    char text[512] = "untouched";
    pl_machine_load quiet = {
        .known = true, .seconds = 1, .total = 2, .others = 2 * PL_MACHINE_LOAD_DISTURBED};
    CU_ASSERT_FALSE(pl_machine_load_disturbed(&quiet));
    CU_ASSERT_FALSE(pl_machine_load_warning(&quiet, "x", 2, NULL, text, sizeof text));
    CU_ASSERT_STRING_EQUAL(text, "untouched");
    pl_machine_load unknown = {0};
    CU_ASSERT_FALSE(pl_machine_load_warning(&unknown, "x", 0, NULL, text, sizeof text));
    pl_machine_load busy = {.known = true, .seconds = 1, .total = 2, .others = 1.26};
    CU_ASSERT_TRUE(pl_machine_load_disturbed(&busy));
    CU_ASSERT_TRUE(pl_machine_load_warning(&busy, "the plans were measured", 1.84,
                                           "the choice rests on an unstable measurement", text,
                                           sizeof text));
    CU_ASSERT_STRING_EQUAL(text, "other work took 63% of the CPU while the plans were measured "
                                 "(steps 1.8x their simulated time; the choice rests on an "
                                 "unstable measurement): the measurements are not "
                                 "trustworthy; run again on a quiet machine (close other "
                                 "programs; check with `uptime` or `top`)");
    pl_machine_load stolen = {.known = true, .seconds = 1, .total = 2, .others = 1, .steal = 0.8};
    CU_ASSERT_TRUE(
        pl_machine_load_warning(&stolen, "the plan was measured", 0, NULL, text, sizeof text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "other work took 50% of the CPU (40% stolen by the "
                                        "virtual machine's host) while the plan was measured:"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "the host's other virtual machines took it"));
}

void pl_register_machine_load_tests(void)
{
    static const pl_test_case cases[] = {
        {"a reading over 0.2 s is a share in [0, 1]", test_share_in_range},
        {"a busy thread of this process is not others' work", test_own_thread_is_ours},
        {"a busy child process is others' work", test_child_is_others},
        {"loads pool unclamped, shares clamp, unknown loads are skipped", test_pool_and_clamp},
        {"a short measurement is judged with the reading before it", test_judged},
        {"one warning line, only when disturbed", test_warning},
        {NULL, NULL},
    };
    pl_test_add_suite("machine-load", cases);
}
