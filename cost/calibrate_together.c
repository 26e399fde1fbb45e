/* Ops run together (calibrate_impl.h): two cores of one machine share its caches, its
 * memory bandwidth and, on a virtual machine, maybe one physical core, so an op runs slower
 * while another device computes beside it. Each model runs on two native devices at once,
 * one a core, every op on each; an op's time there over its time alone (the profile's, the
 * same signature) is a sample of its kind's factor. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate_impl.h"
#include "load.h"

/* Only ops this long alone are counted: the clock decides shorter ones' ratios. */
#define TOGETHER_MIN_SECONDS 5e-6

/* One of the two devices: its model and the times of its steps. */
typedef struct side {
    workload w;
    int steps;
    double *times; /* times[task * steps + step] */
    pl_status status;
    pl_error err;
} side;

static void *run_side(void *arg)
{
    side *s = arg;
    s->status = pl_calib_run_steps(&s->w, s->steps, &s->times, &s->err);
    return NULL;
}

/* Per op kind (and PL_OP_COUNT: every kind), seconds together and alone, summed. */
typedef struct sums {
    double together[PL_OP_COUNT + 1], alone[PL_OP_COUNT + 1];
    int n[PL_OP_COUNT + 1];
} sums;

/* One model at one batch on cores 0 and 1 at once; its ops' times into `sums`. */
static pl_status measure_pair(const char *path, int batch, int steps, const pl_cost_model *m,
                              const volatile sig_atomic_t *interrupt, sums *sum, pl_error *err)
{
    pl_cluster *cores[2] = {pl_calib_cluster(1, 1, 0, 0, err), NULL};
    cores[1] = cores[0] ? pl_calib_cluster(1, 1, 0, 1, err) : NULL;
    side sides[2];
    memset(sides, 0, sizeof sides);
    pl_status status = cores[1] ? PL_OK : PL_ENOMEM;
    pl_fit fit;
    for (int i = 0; i < 2 && status == PL_OK; i++) {
        sides[i].steps = steps;
        pl_error_init(&sides[i].err, NULL);
        status = pl_calib_open(&sides[i].w, path, batch, cores[i], interrupt, err);
        if (status == PL_OK)
            status = pl_executor_set_plan(sides[i].w.ex, sides[i].w.plan, &fit, err);
    }
    pthread_t other;
    if (status == PL_OK && pthread_create(&other, NULL, run_side, &sides[1]) != 0)
        status = pl_error_set(err, PL_ENOMEM, NULL, "cannot start a thread");
    if (status == PL_OK) {
        run_side(&sides[0]);
        pthread_join(other, NULL);
        for (int i = 0; i < 2 && status == PL_OK; i++)
            if ((status = sides[i].status) != PL_OK && err)
                *err = sides[i].err;
    }
    if (status == PL_OK) {
        const pl_program *p = pl_executor_program(sides[0].w.ex);
        double both[2 * 64];
        int n_steps = steps > 64 ? 64 : steps;
        for (int i = 0; i < p->n_tasks; i++) {
            const pl_op *op = &sides[0].w.g->ops[p->tasks[i].op];
            double alone = pl_cost_lookup(m, pl_op_signature(op, p->shapes, 1));
            if (!(alone >= TOGETHER_MIN_SECONDS))
                continue;
            for (int s = 0; s < n_steps; s++)
                for (int k = 0; k < 2; k++)
                    both[2 * s + k] = sides[k].times[(size_t)i * (size_t)steps + (size_t)s];
            double together = pl_median(both, 2 * n_steps);
            for (int k = 0; k < 2; k++) {
                int kind = k ? PL_OP_COUNT : (int)op->kind;
                sum->together[kind] += together;
                sum->alone[kind] += alone;
                sum->n[kind]++;
            }
        }
    }
    for (int i = 0; i < 2; i++) {
        pl_calib_close(&sides[i].w);
        free(sides[i].times);
        pl_cluster_free(cores[i]);
    }
    return status;
}

pl_status pl_calib_together(pl_cost_model *m, char *const *models, int n_models, int steps,
                            const volatile sig_atomic_t *interrupt, pl_error *err)
{
    if (pl_machine_cores() < 2) /* one core: two devices never compute at once */
        return PL_OK;
    sums sum;
    memset(&sum, 0, sizeof sum);
    pl_status status = PL_OK;
    for (int f = 0; f < n_models && status == PL_OK; f++) {
        pl_graph *g = pl_graph_load_file(models[f], err);
        if (!g)
            return err ? err->status : PL_EINPUT;
        int batch = g->batch_size;
        pl_graph_free(g);
        /* the batch and its half: a replica's, or two micro-batches' */
        for (int b = batch; status == PL_OK && b >= 1 && b >= batch / 2; b /= 2)
            status = measure_pair(models[f], b, steps, m, interrupt, &sum, err);
    }
    for (int k = 0; status == PL_OK && k <= PL_OP_COUNT; k++) {
        if (sum.n[k] == 0 || !(sum.alone[k] > 0))
            continue;
        double factor = sum.together[k] / sum.alone[k];
        m->ops[1][k].together = factor < 1 ? 1 : factor; /* never faster for company */
    }
    return status;
}
