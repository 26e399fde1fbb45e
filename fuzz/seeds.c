/* The seeds the fuzz targets cannot take from the source tree: real files written by placer's own
 * writers for the fixture (fixture.h). Usage: seeds DIR; writes
 *   DIR/checkpoint/: training checkpoints of mlp-small, fresh and after two steps;
 *   DIR/agent/:      search checkpoints of the fixture's agent, after one and two
 *                    iterations (the second after a refinement and a correction);
 *   DIR/profile/:    profiles: the fixture's cost model, and one with every field used
 *                    (op costs at several thread counts, a copy curve, measurements);
 *   DIR/plan/:       every baseline's plan for the fixture, with its partitions;
 *   DIR/weights/:    mlp-small's weights (tensor files), fresh and after two steps;
 *   DIR/policy/:     the fixture's agent's policy after one iteration (a small policy
 *                    file: one round, the fixture's hidden width and groups).
 * The directories must exist. Exit status 0, or 1 with a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "checkpoint.h"
#include "fixture.h"
#include "plan.h"
#include "weights.h"

static int failed(const char *what, const pl_error *err)
{
    fprintf(stderr, "fuzz/seeds: %s: %s\n", what, err->text);
    return 1;
}

static int write_weights(const fuzz_fixture *f, const char *dir, const char *name)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "weights");
    void **buffers = calloc((size_t)f->graph->n_tensors, sizeof *buffers);
    if (!buffers)
        return failed("weights", &err);
    for (int t = 0; t < f->graph->n_tensors; t++)
        buffers[t] = pl_session_data(f->session, t);
    snprintf(path, sizeof path, "%s/weights/%s.weights", dir, name);
    pl_status status = pl_weights_save(path, f->graph, buffers, &err);
    free(buffers);
    return status == PL_OK ? 0 : failed(path, &err);
}

static int write_checkpoints(const fuzz_fixture *f, const char *dir)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "checkpoint");
    pl_train_position where = {.step = 0, .epoch = 0, .position = 0, .seed = 1};
    snprintf(path, sizeof path, "%s/checkpoint/fresh.ckpt", dir);
    if (pl_checkpoint_write(path, f->graph, f->session, &where, &err) != PL_OK)
        return failed(path, &err);
    if (write_weights(f, dir, "fresh"))
        return 1;
    float loss;
    for (int64_t step = 1; step <= 2; step++)
        if (pl_session_train_step(f->session, step, 1, &loss, &err) != PL_OK)
            return failed("a training step", &err);
    where = (pl_train_position){.step = 2, .epoch = 1, .position = 4, .seed = 1};
    snprintf(path, sizeof path, "%s/checkpoint/trained.ckpt", dir);
    if (pl_checkpoint_write(path, f->graph, f->session, &where, &err) != PL_OK)
        return failed(path, &err);
    return write_weights(f, dir, "trained");
}

static int write_policy(const pl_agent *agent, const char *dir)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "policy");
    pl_policy_weights weights;
    if (pl_agent_weights(agent, &weights, &err) != PL_OK)
        return failed("the policy's weights", &err);
    snprintf(path, sizeof path, "%s/policy/fixture.plt", dir);
    pl_status status = pl_policy_weights_write(&weights, path, &err);
    pl_policy_weights_clear(&weights);
    return status == PL_OK ? 0 : failed(path, &err);
}

static int write_agents(const fuzz_fixture *f, const char *dir)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "agent");
    pl_agent *agent = pl_agent_new(f->graph, f->cluster, &f->model, &f->options, &err);
    if (!agent)
        return failed("a new agent", &err);
    for (int i = 1; i <= 2; i++) {
        if (pl_agent_iterate(agent, NULL, &err) != PL_OK)
            return failed("an iteration", &err);
        if (i == 2)
            pl_agent_correct(agent, 1.0, 1.25);
        snprintf(path, sizeof path, "%s/agent/iteration-%d.ckpt", dir, i);
        if (pl_agent_save(agent, path, &err) != PL_OK)
            return failed(path, &err);
        if (i == 1 && write_policy(agent, dir))
            return 1;
    }
    pl_agent_free(agent);
    return 0;
}

static int write_profiles(const fuzz_fixture *f, const char *dir)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "profile");
    snprintf(path, sizeof path, "%s/profile/fixture.json", dir);
    if (pl_cost_model_write(&f->model, path, &err) != PL_OK)
        return failed(path, &err);
    pl_cost_model full;
    memset(&full, 0, sizeof full);
    pl_cost_machine_key(full.machine, sizeof full.machine);
    for (int threads = 1; threads <= 4; threads *= 2)
        for (int kind = 0; kind <= PL_OP_COUNT; kind++)
            full.ops[threads][kind] = (pl_op_cost){1e-6 * threads, 1e-9 / threads, 1e-10,
                                                   3 + kind, 1 + 0.01 * kind, 1e9 * threads,
                                                   0.5};
    for (int k = 0; k < 6; k++)
        full.copy_curve[k] = (pl_copy_point){(double)(64 << (3 * k)), 2e-6 * (k + 1)};
    full.n_copy_points = 6;
    full.handoff_seconds = 1e-6, full.task_seconds = 2e-7;
    full.poll_seconds = 3e-7, full.wake_seconds = 4e-5, full.remote_seconds = 3e-7;
    for (int d = 0; d < PL_DELAY_COUNT; d++)
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            full.paced_delays[d][k] = 1e-6 * (d + 1) * (k + 1);
    pl_op_time times[] = {{0x1234, 1e-5}, {0xfeed, 2e-4}, {0x1234, 3e-5}, {42, 7e-6}};
    if (pl_cost_add_measured(&full, times, 4, &err) != PL_OK)
        return failed("measurements", &err);
    snprintf(path, sizeof path, "%s/profile/full.json", dir);
    pl_status status = pl_cost_model_write(&full, path, &err);
    pl_cost_model_clear(&full);
    return status == PL_OK ? 0 : failed(path, &err);
}

static int write_plans(const fuzz_fixture *f, const char *dir)
{
    char path[4096];
    pl_error err;
    pl_error_init(&err, "plan");
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        pl_plan *plan = pl_baseline_place((pl_baseline)b, f->graph, f->cluster, &f->model, 1,
                                          &err);
        if (!plan)
            return failed(pl_baseline_name((pl_baseline)b), &err);
        snprintf(path, sizeof path, "%s/plan/%s.json", dir, pl_baseline_name((pl_baseline)b));
        pl_status status = pl_plan_write_file(path, plan, f->graph, f->cluster, &err);
        pl_plan_free(plan);
        if (status != PL_OK)
            return failed(path, &err);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: seeds DIR\n");
        return 1;
    }
    const fuzz_fixture *f = fuzz_fixture_get();
    return write_checkpoints(f, argv[1]) || write_agents(f, argv[1]) ||
           write_profiles(f, argv[1]) || write_plans(f, argv[1]);
}
