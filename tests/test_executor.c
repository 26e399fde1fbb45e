/* The multi-device executor: random plans compute what one device computes, plans that do
 * not fit are reported, pipeline schedules keep the memory they promise, paced devices
 * are never early, and traces are well-formed. */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data.h"
#include "executor.h"
#include "measure.h"
#include "graph_build.h"
#include "load.h"
#include "session.h"
#include "suites.h"
#include "test_util.h"

enum { STEPS = 2, PLANS_PER_MODEL = 24, DEADLOCK_SECONDS = 600 };

/* The small models' training graphs at batch 8: micro-batches 1, 2, 4 or 8. */
enum { BATCH = 8 };

/* `n` native devices of `threads` threads each, `memory` bytes each. */
static pl_cluster *native_cluster(int n, int threads, long long memory, double flops)
{
    return pl_test_cluster(
        (pl_test_devices){.n = n, .memory = memory, .threads = threads, .flops = flops});
}

/* The losses of STEPS steps on one device, with m micro-batches. */
static void reference_losses(const pl_graph *g, pl_dataset *data, int m, float *losses)
{
    pl_session *s = pl_session_new(g, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    pl_test_fill_first_batch(g, data, pl_test_session_buffer, s);
    for (int step = 1; step <= STEPS; step++)
        CU_ASSERT_EQUAL(pl_session_train_step(s, step, m, &losses[step - 1], NULL), PL_OK);
    pl_session_free(s);
}

/* Everything the steps change (parameters, state), to start each plan afresh. */
typedef struct snapshot {
    void **data;
    size_t *bytes;
} snapshot;

static snapshot take_snapshot(const pl_graph *g, pl_executor *ex)
{
    snapshot shot = {calloc((size_t)g->n_tensors, sizeof(void *)),
                     calloc((size_t)g->n_tensors, sizeof(size_t))};
    for (int t = 0; t < g->n_tensors; t++) {
        pl_tensor_kind kind = g->tensors[t].kind;
        if (kind != PL_TENSOR_PARAM && kind != PL_TENSOR_STATE)
            continue;
        shot.bytes[t] = (size_t)pl_tensor_bytes(&g->tensors[t]);
        shot.data[t] = malloc(shot.bytes[t] + 1);
        memcpy(shot.data[t], pl_executor_data(ex, t), shot.bytes[t]);
    }
    return shot;
}

static void restore_snapshot(const pl_graph *g, pl_executor *ex, const snapshot *shot)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (shot->data[t])
            memcpy(pl_executor_data(ex, t), shot->data[t], shot->bytes[t]);
}

static void free_snapshot(const pl_graph *g, snapshot *shot)
{
    for (int t = 0; t < g->n_tensors; t++)
        free(shot->data[t]);
    free(shot->data);
    free(shot->bytes);
}

static void on_deadlock(int signal_number)
{
    (void)signal_number;
    static const char text[] = "\nexecutor: a step did not finish in time (deadlock?)\n";
    if (write(STDERR_FILENO, text, sizeof text - 1) < 0)
        _exit(1);
    _exit(1);
}

static int plans_run;

/* PLANS_PER_MODEL random plans on clusters of 2 to 4 devices, all switched on one
 * executor per cluster: each must give the single-device losses, bitwise with one
 * micro-batch, within 1e-5 relative otherwise. */
static void check_random_plans(const char *model)
{
    pl_graph *g = pl_test_bundled_training_graph(model, BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    float reference[65][STEPS];
    bool have[65] = {false};
    signal(SIGALRM, on_deadlock);
    for (int n_devices = 2, done = 0; n_devices <= 4; n_devices++) {
        pl_cluster *c = native_cluster(n_devices, n_devices == 3 ? 2 : 1, 1LL << 34, 0);
        pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
        pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
        snapshot initial = take_snapshot(g, ex);
        for (int i = 0; i < PLANS_PER_MODEL / 3; i++, done++) {
            pl_plan *plan = pl_test_random_plan(g, n_devices, 1000u * (uint64_t)done + 17);
            int m = plan->micro_batches;
            if (!have[m]) {
                reference_losses(g, data, m, reference[m]);
                have[m] = true;
            }
            restore_snapshot(g, ex, &initial);
            pl_fit fit;
            pl_error err;
            pl_error_init(&err, model);
            CU_ASSERT_EQUAL_FATAL(pl_executor_set_plan(ex, plan, &fit, &err), PL_OK);
            CU_ASSERT_TRUE(fit.fits);
            for (int step = 1; step <= STEPS; step++) {
                float loss = NAN;
                alarm(DEADLOCK_SECONDS);
                CU_ASSERT_EQUAL(pl_executor_step(ex, step, &loss, &err), PL_OK);
                alarm(0);
                float want = reference[m][step - 1];
                bool same = m == 1 ? memcmp(&loss, &want, sizeof loss) == 0
                                   : fabsf(loss - want) <= 1e-5f * fabsf(want);
                if (!same)
                    fprintf(stderr, "\n    %s plan %d (%d devices, %d stages, %d micro-batches, "
                            "%s) step %d: loss %.9g, one device %.9g", model, done, n_devices,
                            plan->n_stages, m, pl_plan_schedule_text(plan), step,
                            (double)loss, (double)want);
                CU_ASSERT_TRUE(same);
            }
            plans_run++;
            pl_plan_free(plan);
        }
        free_snapshot(g, &initial);
        pl_executor_free(ex);
        pl_cluster_free(c);
    }
    signal(SIGALRM, SIG_DFL);
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void test_random_mlp(void) { check_random_plans("small/mlp-small.json"); }
static void test_random_cnn(void) { check_random_plans("small/cnn-small.json"); }
static void test_random_inception(void) { check_random_plans("small/inception-small.json"); }
static void test_random_resnet(void) { check_random_plans("small/resnet-small.json"); }
static void test_random_lstm(void) { check_random_plans("small/lstm_lm-small.json"); }
static void test_random_seq2seq(void) { check_random_plans("small/seq2seq-small.json"); }
static void test_random_transformer(void) { check_random_plans("small/transformer-small.json"); }
static void test_random_recommender(void) { check_random_plans("small/recommender-small.json"); }
static void test_random_moe(void) { check_random_plans("small/moe-small.json"); }
static void test_random_attention(void) { check_random_plans("tests/models/attention.json"); }
static void test_random_torch_ops(void) { check_random_plans("tests/models/torch-ops.json"); }
static void test_random_layer_ops(void) { check_random_plans("tests/models/layer-ops.json"); }
static void test_random_convolutions(void)
{
    check_random_plans("tests/models/convolutions.json");
}

static void test_plan_count(void)
{
    CU_ASSERT(plans_run >= 200);
}

/* A plan that does not fit is a result naming the device, its need and its capacity. */
static void test_out_of_memory(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    pl_cluster *c = native_cluster(2, 1, 4096, 0);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 1, PL_SCHEDULE_GPIPE);
    pl_fit fit;
    pl_error err;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, &err), PL_OK);
    CU_ASSERT_FALSE(fit.fits);
    CU_ASSERT(fit.device >= 0 && fit.device < 2);
    CU_ASSERT_EQUAL(fit.capacity, 4096);
    CU_ASSERT(fit.need > fit.capacity);
    float loss;
    CU_ASSERT_EQUAL(pl_executor_step(ex, 1, &loss, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no plan"));
    pl_plan_free(plan);
    pl_executor_free(ex);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* A model without batch statistics means the same under any micro-batch count: a
 * two-stage pipeline's losses over several steps with 1, 2, 4 and 8 micro-batches agree
 * with one device's whole steps within 1e-5 (dropout's masks follow each sample's place
 * in the step, the loss ops average equal micro-batches). */
static void check_micro_batches_keep_losses(pl_graph *g, const char *model)
{
    enum { STEPS_COMPARED = 4 };
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(pl_graph_whole_step_op(g), -1);
    pl_dataset *data = pl_dataset_open(g, "synthetic", 3, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    float whole[STEPS_COMPARED];
    pl_session *s = pl_session_new(g, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    pl_test_fill_first_batch(g, data, pl_test_session_buffer, s);
    for (int step = 1; step <= STEPS_COMPARED; step++)
        CU_ASSERT_EQUAL(pl_session_train_step(s, step, 1, &whole[step - 1], NULL), PL_OK);
    pl_session_free(s);
    pl_cluster *c = native_cluster(2, 1, 1LL << 34, 0);
    for (int m = 1; m <= g->batch_size; m *= 2) {
        pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
        pl_test_fill_first_batch(g, data, pl_test_executor_buffer, ex);
        pl_plan *plan = pl_test_pipeline_plan(g, 2, m, PL_SCHEDULE_1F1B);
        pl_fit fit;
        CU_ASSERT_EQUAL_FATAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
        for (int step = 1; step <= STEPS_COMPARED; step++) {
            float loss = NAN, want = whole[step - 1];
            CU_ASSERT_EQUAL(pl_executor_step(ex, step, &loss, NULL), PL_OK);
            bool same = fabsf(loss - want) <= 1e-5f * fabsf(want);
            if (!same)
                fprintf(stderr, "\n    %s, %d micro-batches, step %d: loss %.9g, whole steps "
                        "%.9g", model, m, step, (double)loss, (double)want);
            CU_ASSERT_TRUE(same);
        }
        pl_plan_free(plan);
        pl_executor_free(ex);
    }
    pl_cluster_free(c);
    pl_dataset_free(data);
    pl_graph_free(g);
}

static void bundled_keeps_losses(const char *model)
{
    check_micro_batches_keep_losses(pl_test_bundled_training_graph(model, BATCH), model);
}

static void test_micro_batches_mlp(void) { bundled_keeps_losses("small/mlp-small.json"); }
static void test_micro_batches_cnn(void) { bundled_keeps_losses("small/cnn-small.json"); }
static void test_micro_batches_lstm(void) { bundled_keeps_losses("small/lstm_lm-small.json"); }
static void test_micro_batches_seq2seq(void) { bundled_keeps_losses("small/seq2seq-small.json"); }
static void test_micro_batches_transformer(void)
{
    bundled_keeps_losses("small/transformer-small.json");
}
static void test_micro_batches_recommender(void)
{
    bundled_keeps_losses("small/recommender-small.json");
}
static void test_micro_batches_moe(void) { bundled_keeps_losses("small/moe-small.json"); }

/* Dropout between two layers: its masks must not depend on the micro-batch count. */
static void test_micro_batches_dropout(void)
{
    pl_graph *g = pl_test_dropout_model();
    check_micro_batches_keep_losses(g, "dropout");
}

/* A batch-norm model whose statistics are per step refuses micro-batches, naming the op
 * and the field; declared per micro-batch, it runs them. */
static void test_batch_statistics(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", BATCH);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_EQUAL(g->batch_statistics, PL_BATCH_STATISTICS_PER_MICRO_BATCH);
    pl_cluster *c = native_cluster(2, 1, 1LL << 34, 0);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ex);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 2, PL_SCHEDULE_GPIPE);
    pl_fit fit;
    pl_error err;
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
    g->batch_statistics = PL_BATCH_STATISTICS_PER_STEP;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, &err), PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.path, "/micro_batches");
    CU_ASSERT_STRING_EQUAL(err.text, "2 micro-batches, but batch_norm "
                           "\"stem/bn\" computes statistics over the whole step's batch (the "
                           "model's \"batch_statistics\" is \"per_step\"; \"per_micro_batch\" "
                           "would allow micro-batches)");
    plan->micro_batches = 1;
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, NULL), PL_OK);
    pl_session *s = pl_session_new(g, 1, NULL);
    float loss;
    CU_ASSERT_EQUAL(pl_session_train_step(s, 1, 2, &loss, NULL), PL_EINPUT);
    CU_ASSERT_EQUAL(pl_session_train_step(s, 1, 1, &loss, NULL), PL_OK);
    pl_session_free(s);
    pl_plan_free(plan);
    pl_executor_free(ex);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Plans with unknown devices or stages against the dataflow are refused. */
static void test_bad_plans(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    pl_cluster *c = native_cluster(2, 1, 1LL << 30, 0);
    pl_executor *ex = pl_executor_new(g, c, NULL, NULL);
    pl_plan *plan = pl_test_pipeline_plan(g, 2, 1, PL_SCHEDULE_GPIPE);
    pl_fit fit;
    pl_error err;
    plan->device[1] = 5;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "the cluster has 2"));
    plan->device[1] = 0;
    plan->stage[0] = 1; /* reads nothing: fine; its reader in stage 0 is not */
    plan->stage[g->n_forward_ops - 1] = 0;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_executor_set_plan(ex, plan, &fit, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "stages must follow the dataflow"));
    pl_plan_free(plan);
    pl_executor_free(ex);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* The distinct offsets of a tensor's buffers on its home device: micro-batches alive at
 * once sit apart. */
static int offsets_of(const pl_program *p, const pl_graph *g, const char *name)
{
    int t = pl_graph_find_tensor(g, name), n = 0;
    for (int i = 0; i < p->n_buffers; i++) {
        const pl_buffer *buf = &p->buffers[i];
        bool first = buf->tensor == t && buf->device == p->partitions->tensor_device[t];
        for (int j = 0; first && j < i; j++)
            first = !(p->buffers[j].tensor == t && p->buffers[j].device == buf->device &&
                      p->buffers[j].offset == buf->offset);
        n += first;
    }
    return n;
}

/* A 4-stage pipeline of 8 micro-batches: a GPipe stage keeps every micro-batch's
 * activations, a 1F1B stage s at most 4 - s. At batch 1024 activations outweigh the
 * weight gradients: every device needs less under 1F1B. Stage 0's first activation is
 * alive for all 8 micro-batches at once under GPipe, for 4 under 1F1B. */
static void test_schedule_memory(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    CU_ASSERT_EQUAL_FATAL(pl_graph_set_batch(g, 1024, NULL), PL_OK);
    pl_cluster *c = native_cluster(4, 1, 1LL << 30, 0);
    pl_plan *gpipe = pl_test_pipeline_plan(g, 4, 8, PL_SCHEDULE_GPIPE);
    pl_plan *ofob = pl_test_pipeline_plan(g, 4, 8, PL_SCHEDULE_1F1B);
    pl_error err;
    pl_error_init(&err, NULL);
    pl_program *a = pl_program_new(g, c, gpipe, &err), *b = pl_program_new(g, c, ofob, &err);
    if (!a || !b)
        fprintf(stderr, "\n    %s\n", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    for (int d = 0; d < 4; d++)
        CU_ASSERT(b->memory[d].arena < a->memory[d].arena);
    CU_ASSERT_EQUAL(offsets_of(a, g, "fc1/relu"), 8);
    CU_ASSERT_EQUAL(offsets_of(b, g, "fc1/relu"), 4);
    pl_program_free(a);
    pl_program_free(b);
    pl_plan_free(gpipe);
    pl_plan_free(ofob);
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* Every dependency points backwards in program order, so no run can deadlock; each
 * resource's tasks are in the schedule's order. */
static void test_program_order(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/transformer-small.json", BATCH);
    pl_cluster *c = native_cluster(3, 1, 1LL << 30, 0);
    for (int seed = 0; seed < 20; seed++) {
        pl_plan *plan = pl_test_random_plan(g, 3, (uint64_t)seed);
        pl_program *p = pl_program_new(g, c, plan, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        int backwards = 0, deps = 0;
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_task *task = &p->tasks[i];
            for (int e = task->first_succ; e < task->first_succ + task->n_succ; e++)
                backwards += p->succ[e] <= i;
            deps += task->n_deps;
        }
        CU_ASSERT_EQUAL(backwards, 0);
        CU_ASSERT(deps > 0);
        pl_program_free(p);
        pl_plan_free(plan);
    }
    pl_cluster_free(c);
    pl_graph_free(g);
}

/* mlp-small on two devices in a 2-stage pipeline of 2 micro-batches. */
typedef struct pipeline {
    pl_graph *g;
    pl_cluster *c;
    pl_executor *ex;
    pl_plan *plan;
} pipeline;

static pipeline open_pipeline(double flops, pl_schedule schedule)
{
    pipeline f;
    f.g = pl_test_bundled_training_graph("small/mlp-small.json", BATCH);
    f.c = native_cluster(2, 1, 1LL << 30, flops);
    f.ex = pl_executor_new(f.g, f.c, NULL, NULL);
    f.plan = pl_test_pipeline_plan(f.g, 2, 2, schedule);
    pl_fit fit;
    CU_ASSERT_EQUAL_FATAL(pl_executor_set_plan(f.ex, f.plan, &fit, NULL), PL_OK);
    return f;
}

static void close_pipeline(pipeline *f)
{
    pl_plan_free(f->plan);
    pl_executor_free(f->ex);
    pl_cluster_free(f->c);
    pl_graph_free(f->g);
}

/* On a paced device no kernel ends before its FLOPs at the declared rate. */
static void test_pacing_never_early(void)
{
    pipeline f = open_pipeline(1e8, PL_SCHEDULE_1F1B);
    pl_executor *ex = f.ex;
    float loss;
    CU_ASSERT_EQUAL(pl_executor_step(ex, 1, &loss, NULL), PL_OK);
    const pl_program *p = pl_executor_program(ex);
    const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
    int early = 0;
    double busy = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        double modelled = pl_task_flops(p, &p->tasks[i]) / 1e8;
        early += ends[i] - starts[i] < modelled;
        busy += modelled;
    }
    CU_ASSERT_EQUAL(early, 0);
    CU_ASSERT(pl_executor_step_seconds(ex) >= busy / 2);
    CU_ASSERT_TRUE(pl_executor_paced(ex));
    close_pipeline(&f);
}

/* An interrupt ends the pacing of a step modelled at minutes (1000 FLOP/s): the step
 * returns PL_EINTERRUPTED at once, having computed what an unpaced step computes. */
static void test_interrupt_ends_pacing(void)
{
    pipeline native = open_pipeline(0, PL_SCHEDULE_1F1B);
    pipeline slow = open_pipeline(1e3, PL_SCHEDULE_1F1B);
    volatile sig_atomic_t interrupt = 1;
    pl_executor_set_interrupt(slow.ex, &interrupt);
    float native_loss, slow_loss;
    pl_error err;
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_executor_step(native.ex, 1, &native_loss, NULL), PL_OK);
    CU_ASSERT_EQUAL(pl_executor_step(slow.ex, 1, &slow_loss, &err), PL_EINTERRUPTED);
    CU_ASSERT_EQUAL(err.status, PL_EINTERRUPTED);
    CU_ASSERT_EQUAL(native_loss, slow_loss);
    const pl_program *p = pl_executor_program(slow.ex);
    double modelled = 0;
    for (int i = 0; i < p->n_tasks; i++)
        modelled += pl_task_flops(p, &p->tasks[i]) / 1e3;
    CU_ASSERT(modelled > 600); /* hence a step that waited would not end in a minute */
    CU_ASSERT(pl_executor_step_seconds(slow.ex) < 60);
    pl_measurement m;
    CU_ASSERT_EQUAL(pl_executor_measure(slow.ex, 0, 2, &m, NULL), PL_EINTERRUPTED);
    close_pipeline(&slow);
    close_pipeline(&native);
}

/* The trace parses as JSON, names a row per device and link, and has an event per task. */
static void test_trace(void)
{
    pipeline f = open_pipeline(0, PL_SCHEDULE_GPIPE);
    pl_executor *ex = f.ex;
    pl_measurement m;
    CU_ASSERT_EQUAL(pl_executor_measure(ex, 1, 3, &m, NULL), PL_OK);
    CU_ASSERT(m.series.min <= m.series.median && m.series.median <= m.series.max);
    CU_ASSERT_EQUAL(m.series.steps, 3);
    CU_ASSERT(m.rounds >= 1 && m.rounds <= PL_MEASURE_MAX_ROUNDS);
    CU_ASSERT(m.round >= 1 && m.round <= m.rounds);
    CU_ASSERT_EQUAL(m.round_median[m.round - 1], m.series.median);
    CU_ASSERT(m.rounds == PL_MEASURE_MAX_ROUNDS || !m.series.unstable);
    char path[] = "/tmp/placer-trace-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL(pl_executor_write_trace(ex, path, NULL), PL_OK);
    json_t *root = json_load_file(path, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(root);
    json_t *events = json_object_get(root, "traceEvents");
    const pl_program *p = pl_executor_program(ex);
    size_t tasks = 0, rows = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        const char *ph = json_string_value(json_object_get(json_array_get(events, i), "ph"));
        const char *name = json_string_value(json_object_get(json_array_get(events, i), "name"));
        tasks += ph && strcmp(ph, "X") == 0;
        rows += name && strcmp(name, "thread_name") == 0;
    }
    CU_ASSERT_EQUAL(tasks, (size_t)p->n_tasks);
    CU_ASSERT_EQUAL(rows, (size_t)(p->n_devices + p->n_links));
    json_decref(root);
    unlink(path);
    close_pipeline(&f);
}

void pl_register_executor_tests(void)
{
    static const pl_test_case cases[] = {
        {"plans that do not fit are reported", test_out_of_memory},
        {"bad plans are refused", test_bad_plans},
        {"micro-batches keep the losses: mlp", test_micro_batches_mlp},
        {"micro-batches keep the losses: cnn", test_micro_batches_cnn},
        {"micro-batches keep the losses: lstm_lm", test_micro_batches_lstm},
        {"micro-batches keep the losses: seq2seq", test_micro_batches_seq2seq},
        {"micro-batches keep the losses: transformer", test_micro_batches_transformer},
        {"micro-batches keep the losses: recommender", test_micro_batches_recommender},
        {"micro-batches keep the losses: moe", test_micro_batches_moe},
        {"micro-batches keep the losses: dropout", test_micro_batches_dropout},
        {"batch statistics per step refuse micro-batches", test_batch_statistics},
        {"1F1B keeps fewer micro-batches than GPipe", test_schedule_memory},
        {"dependencies follow program order", test_program_order},
        {"paced kernels are never early", test_pacing_never_early},
        {"an interrupt ends a paced step, computed whole", test_interrupt_ends_pacing},
        {"traces are trace-event JSON", test_trace},
        {"random plans: mlp", test_random_mlp},
        {"random plans: cnn", test_random_cnn},
        {"random plans: inception", test_random_inception},
        {"random plans: resnet", test_random_resnet},
        {"random plans: lstm_lm", test_random_lstm},
        {"random plans: seq2seq", test_random_seq2seq},
        {"random plans: transformer", test_random_transformer},
        {"random plans: recommender", test_random_recommender},
        {"random plans: moe", test_random_moe},
        {"random plans: attention (tests/models)", test_random_attention},
        {"random plans: the PyTorch importers' ops (tests/models)", test_random_torch_ops},
        {"random plans: layer norm over channels, stochastic depth, where (tests/models)",
         test_random_layer_ops},
        {"random plans: convolutions of 1 to 3 axes (tests/models)", test_random_convolutions},
        {"at least 200 random plans ran", test_plan_count},
        {NULL, NULL}};
    pl_test_add_suite("executor", cases);
}
