/* Op times measured elsewhere (op_times.h): on the two-layer model with every op 1 ms by
 * the cost model, a file's times replace the ops' own in the simulated step by hand-made
 * amounts; the lower bound follows them; bad files are refused with where and what. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bound.h"
#include "op_times.h"
#include "simulate.h"
#include "suites.h"
#include "test_util.h"

/* The file's text around `times` (the entries), for a model of `batch` samples. */
static void write_file(const char *path, int batch, const char *times)
{
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fprintf(f, "{\"format\": \"placer-op-times\", \"version\": 1, \"model\": \"t\", "
            "\"device\": \"by hand\", \"batch\": %d, \"times\": [%s]}\n", batch, times);
    fclose(f);
}

/* Reads `times` as a file for `g`, timing splits by 1 ms an op; NULL with `err` set when
 * refused. */
static pl_op_times *read_times(const pl_graph *g, const pl_cost_model *m, const char *times,
                               pl_error *err)
{
    char path[] = "/tmp/placer-op-times-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    write_file(path, g->batch_size, times);
    pl_op_times *t = pl_op_times_read(path, g, m, 1, err);
    unlink(path);
    return t;
}

/* The step of every op on one device in `micro_batches`, in ms, under `times` (NULL: the
 * cost model's alone); `h_ms` receives the forward op h's tasks' time, summed. */
static double step_ms(const pl_graph *g, const char *times, int micro_batches, double *h_ms)
{
    pl_cluster *c = pl_test_cluster((pl_test_devices){.n = 1, .memory = 1 << 20});
    pl_plan *plan = pl_plan_new(g, NULL);
    plan->micro_batches = micro_batches;
    pl_program *p = pl_program_new(g, c, plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, 0);
    pl_op_times *t = times ? read_times(g, &m, times, NULL) : NULL;
    CU_ASSERT_FATAL(!times || t);
    m.op_times = t;
    double *starts = malloc((size_t)p->n_tasks * sizeof *starts);
    double *ends = malloc((size_t)p->n_tasks * sizeof *ends);
    pl_simulation sim;
    CU_ASSERT_EQUAL(pl_simulate(p, c, &m, &sim, starts, ends, NULL), PL_OK);
    double bound;
    CU_ASSERT_EQUAL(pl_step_lower_bound(g, c, &m, &bound, NULL), PL_OK);
    CU_ASSERT(bound <= sim.step_seconds * (1 + 1e-12));
    *h_ms = 0;
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].kind == PL_TASK_OP && p->tasks[i].op == pl_graph_find_op(g, "h"))
            *h_ms += 1e3 * (ends[i] - starts[i]);
    free(starts);
    free(ends);
    pl_op_times_free(t);
    pl_program_free(p);
    pl_plan_free(plan);
    pl_cluster_free(c);
    return 1e3 * sim.step_seconds;
}

/* One device runs its 11 tasks of 1 ms back to back: an op's time in the file moves the
 * step by its difference from 1 ms, and doubling it moves the step by that time again. */
static void test_forward_times(void)
{
    pl_graph *g = pl_test_two_layers();
    double h;
    CU_ASSERT_DOUBLE_EQUAL(step_ms(g, NULL, 1, &h), 11, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(h, 1, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(step_ms(g, "{\"ops\": [\"h\"], \"forward\": 0.003}", 1, &h), 13,
                           1e-9);
    CU_ASSERT_DOUBLE_EQUAL(h, 3, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(step_ms(g, "{\"ops\": [\"h\"], \"forward\": 0.006}", 1, &h), 16,
                           1e-9);
    /* two ops timed together share by the cost model's times (1 ms each): 2.5 ms each */
    CU_ASSERT_DOUBLE_EQUAL(step_ms(g, "{\"ops\": [\"h\", \"fc\"], \"forward\": 0.005}", 1, &h),
                           14, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(h, 2.5, 1e-9);
    pl_graph_free(g);
}

/* fc's backward ops (grad_a, grad_b, the accumulation into w2's gradient) share its
 * backward time: 3 x 1 ms become 9 ms, a step of 11 - 3 + 9. */
static void test_backward_times(void)
{
    pl_graph *g = pl_test_two_layers();
    double h;
    CU_ASSERT_DOUBLE_EQUAL(step_ms(g, "{\"ops\": [\"fc\"], \"backward\": 0.009}", 1, &h), 17,
                           1e-9);
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, 0);
    pl_op_times *t = read_times(g, &m, "{\"ops\": [\"fc\"], \"backward\": 0.009}", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_EQUAL(t->n_forward_ops, 0);
    CU_ASSERT_EQUAL(t->n_backward_ops, 3);
    int fc = pl_graph_find_op(g, "fc");
    for (int o = 0; o < g->n_ops; o++) {
        bool fc_backward = g->ops[o].phase == PL_PHASE_BACKWARD && g->ops[o].group == fc;
        CU_ASSERT_DOUBLE_EQUAL(pl_op_times_seconds(t, g, o, 1), fc_backward ? 3e-3 : -1, 1e-15);
    }
    CU_ASSERT_EQUAL(pl_op_times_seconds(t, NULL, fc, 1), -1); /* another graph's */
    pl_op_times_free(t);
    pl_graph_free(g);
}

/* Ops timed together share in proportion to the cost model's times: by FLOPs here, h's
 * 3x3 matmul against fc's 3x2, so 3 to 2. */
static void test_shares(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cost_model m = pl_test_costs((pl_op_cost){0, 1e-6, 0, 1, 0, 0}, 1e-3, 0, 0);
    pl_op_times *t = read_times(g, &m, "{\"ops\": [\"h\", \"fc\"], \"forward\": 0.005}", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t);
    CU_ASSERT_DOUBLE_EQUAL(pl_op_times_seconds(t, g, pl_graph_find_op(g, "h"), 1), 3e-3, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(pl_op_times_seconds(t, g, pl_graph_find_op(g, "fc"), 0.5), 1e-3,
                           1e-15);
    pl_op_times_free(t);
    pl_graph_free(g);
}

/* Two micro-batches: each of h's tasks takes half its time. */
static void test_micro_batches(void)
{
    pl_graph *g = pl_test_two_layers();
    double h;
    step_ms(g, "{\"ops\": [\"h\"], \"forward\": 0.004}", 2, &h);
    CU_ASSERT_DOUBLE_EQUAL(h, 4, 1e-9);
    step_ms(g, NULL, 2, &h);
    CU_ASSERT_DOUBLE_EQUAL(h, 2, 1e-9); /* the cost model's 1 ms, twice */
    pl_graph_free(g);
}

/* Each bad file, and the line its error makes (after the file's name). */
static void test_bad_files(void)
{
    static const struct {
        const char *times, *error;
    } cases[] = {
        {"{\"ops\": [\"h\", \"nope\", \"nada\"], \"forward\": 1}",
         "/times/0/ops/1: 2 names of this entry are no op of model \"test\": \"nope\", \"nada\""},
        {"{\"ops\": [\"h/matmul#3\"], \"forward\": 1}",
         "/times/0/ops/0: 1 name of this entry is no op of model \"test\": \"h/matmul#3\""},
        {"{\"ops\": [\"h\"], \"forward\": 1}, {\"ops\": [\"fc\", \"h\"], \"forward\": 1}",
         "/times/1/ops/1: op \"h\" is timed twice: here and in /times/0"},
        {"{\"ops\": [\"h\"]}", "/times/0: an entry gives \"forward\" or \"backward\" seconds"},
        {"{\"ops\": [], \"forward\": 1}", "/times/0/ops: an entry times at least one op"},
        {"{\"ops\": [\"h\"], \"forward\": -1}", "/times/0/forward: -1 is out of range"},
        {"{\"ops\": [\"h\"], \"backward\": \"1\"}", "/times/0/backward: expected a number"},
        {"{\"ops\": [\"h\"], \"forward\": 1, \"fwd\": 2}", "/times/0/fwd: unknown field \"fwd\""},
        {"{\"ops\": [3], \"forward\": 1}", "/times/0/ops/0: expected an op's name, got an integer"},
    };
    pl_graph *g = pl_test_two_layers();
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, 0);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        pl_error err;
        CU_ASSERT_PTR_NULL(read_times(g, &m, cases[i].times, &err));
        char line[2048];
        pl_error_format(&err, line, sizeof line);
        if (!strstr(line, cases[i].error))
            fprintf(stderr, "\n  got: %s\n  expected: ...%s...\n", line, cases[i].error);
        CU_ASSERT_PTR_NOT_NULL(strstr(line, cases[i].error));
        CU_ASSERT_EQUAL(err.status, PL_EINPUT);
    }
    pl_graph_free(g);
}

/* The file's head: its batch must be the model's; the format is checked first. */
static void test_bad_heads(void)
{
    pl_graph *g = pl_test_two_layers();
    pl_cost_model m = pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, 0);
    char path[] = "/tmp/placer-op-times-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    pl_error err;
    char line[2048];
    write_file(path, g->batch_size + 1, "");
    CU_ASSERT_PTR_NULL(pl_op_times_read(path, g, &m, 1, &err));
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "/batch: the times are of a batch of"));
    FILE *f = fopen(path, "w");
    fputs("{\"format\": \"placer-plan\", \"version\": 1}", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(pl_op_times_read(path, g, &m, 1, &err));
    pl_error_format(&err, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "placer-op-times"));
    f = fopen(path, "w");
    fputs("{\"format\": \"placer-op-times\",\n \"version\": 1,, }", f);
    fclose(f);
    CU_ASSERT_PTR_NULL(pl_op_times_read(path, g, &m, 1, &err));
    CU_ASSERT_EQUAL(err.line, 2);
    unlink(path);
    pl_graph_free(g);
}

void pl_register_op_times_tests(void)
{
    static const pl_test_case cases[] = {
        {"forward times replace the op's, doubled adds it again", test_forward_times},
        {"backward times shared among the op's backward ops", test_backward_times},
        {"ops timed together share by the cost model's times", test_shares},
        {"a micro-batch takes its share", test_micro_batches},
        {"bad entries: where and what", test_bad_files},
        {"bad heads: batch, format, syntax", test_bad_heads},
        {NULL, NULL},
    };
    pl_test_add_suite("op-times", cases);
}
