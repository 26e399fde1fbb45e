/* Simulator benchmarks, run by tools/bench-sim. Three tables:
 *
 *   accuracy   suite models x clusters: pl_simulate's step against the executor's, over
 *              plans of several kinds, with per-cluster, per-kind and overall summaries
 *   breakdown  where the error comes from: task times by class and hand-off delays, the
 *              simulated timeline against the measured one, per cluster and for the worst
 *              plan of each row
 *   speed      simulated steps per second at ~100 training ops; pl_program_new and
 *              pl_simulate at ~100,000
 *
 * The plans of a (model, cluster) row share one executor, which switches between them.
 * They take turns step by step, the order reversed every round, so that a burst of other
 * work on this noisy machine hits every plan of the row alike instead of one plan's
 * steps. The simulator chooses what is worth measuring: plans predicted too slow, or past
 * the row's time budget, are counted and left out. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "allocator.h"
#include "bench.h"
#include "autodiff.h"
#include "baseline.h"
#include "bound.h"
#include "data.h"
#include "executor.h"
#include "load.h"
#include "probe.h"
#include "profile.h"
#include "rng.h"
#include "simulate.h"
#include "split_graph.h"

enum {
    MAX_LIST = BENCH_MAX_LIST,   /* models or clusters named on the command line */
    MAX_NAME = BENCH_MAX_NAME,
    MAX_PLANS = 64,  /* measured per row */
    MAX_STEPS = 50,  /* measured per plan */
    MIN_TAU_PLANS = 3,
    MAX_ROUND_FACTOR = 3, /* cheap rows measure up to this many times o->steps */
};

/* The acceptance for the simulator. */
#define TARGET_MEDIAN 0.05
#define TARGET_P90 0.15
#define TARGET_TAU 0.9
/* And for its speed. */
#define TARGET_STEPS_PER_SECOND 1e4
#define TARGET_LARGE_SECONDS 0.1
/* A timed batch of calls lasts at least this long, so the clock's resolution is noise. */
#define MIN_BATCH_SECONDS 0.02
#define TIMED_BATCHES 5

typedef enum table { ACCURACY, SPEED, N_TABLES } table;
static const char *const table_names[N_TABLES] = {"accuracy", "speed"};

static const char *const suite_models[] = {"cnn", "inception", "lstm_lm", "mlp", "moe",
                                           "recommender", "resnet", "seq2seq", "transformer"};
static const char *const small_models[] = {
    "small/cnn-small", "small/inception-small", "small/lstm_lm-small", "small/mlp-small",
    "small/moe-small", "small/recommender-small", "small/resnet-small", "small/seq2seq-small",
    "small/transformer-small"};
static const char *const quick_models[] = {"mlp", "recommender", "transformer",
                                           "small/mlp-small", "small/transformer-small"};
static const char *const bundled_clusters[] = {"local-2", "paced-4", "paced-8", "unequal-4"};

/* The size classes a summary tells apart: the suite's models, graphs/small's, whose steps
 * last about a millisecond, so the executor's own costs weigh most, and models given as
 * files from elsewhere (imported ones, say), whose ops calibration never measured. */
typedef enum size_class { FULL_SIZE, SMALL, UNSEEN, N_SIZES } size_class;
static const char *const size_names[N_SIZES] = {"full", "small", "unseen"};

typedef struct options {
    const char *top;       /* the source tree: graphs/ under it */
    const char *chain_100, *chain_100k; /* the speed table's models (tools/gen-chain) */
    char models[MAX_LIST][MAX_NAME], clusters[MAX_LIST][MAX_NAME];
    int n_models, n_clusters;
    int plans, steps, warmup;
    double max_step, budget; /* seconds: a plan's predicted step, a row's measuring */
    uint64_t seed;
    bool calibrate, verbose;
    bool run[N_TABLES];
    unsigned kinds; /* the plan kinds measured, a bit per kind (plan_kind) */
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: sim [--top DIR] [--chain-100 MODEL.json] [--chain-100k MODEL.json]\n"
            "           [--models M,...] [--sizes S,...] [--clusters C,...] [--plans N] [--steps N]\n"
            "           [--warmup N] [--max-step SECONDS] [--budget SECONDS] [--seed N]\n"
            "           [--only TABLE[,TABLE]] [--kinds K,...] [--calibrate] [--quick] [-v]\n"
            "The simulator's accuracy against the executor and its speed; TABLE is accuracy\n"
            "or speed (both by default; speed needs both chains, from tools/gen-chain).\n"
            "  --top DIR           the source tree holding graphs/ (default .)\n"
            "  --models M,...      models: suite names, small/NAME, or FILE.json\n"
            "  --sizes S,...       full, small or both: the suite's nine models, graphs/small's\n"
            "                      nine, or both (default)\n"
            "  --clusters C,...    clusters of graphs/clusters (default local-2,paced-4,paced-8,\n"
            "                      unequal-4)\n"
            "  --plans N           plans measured per model and cluster, 2-%d (default 12)\n"
            "  --steps N           measured steps per plan, 1-%d (default 3)\n"
            "  --warmup N          unmeasured steps per plan first, 0-10 (default 1)\n"
            "  --max-step S        leave out plans predicted slower than S s (default 1.5)\n"
            "  --budget S          predicted measuring time per model and cluster (default 20)\n"
            "  --seed N            the random plans' seed (default 1)\n"
            "  --kinds K,...       measure plans of these kinds only: one, GPipe, 1F1B, 1F1BW,\n"
            "                      inter, block, robin, data, hybrd, shard, split, sp+pp, recmp\n"
            "                      (default all)\n"
            "  --calibrate         calibrate afresh instead of loading the cached profile\n"
            "  --quick             a smoke run: 3 models, 4 plans, 2 steps, small budget\n"
            "  -v                  every measured plan, not only the rows\n",
            MAX_PLANS, MAX_STEPS);
}

/* ---- small utilities ----------------------------------------------------------------- */

static int sign(double x)
{
    return (x > 0) - (x < 0);
}

/* Kendall's tau-b between two rankings of the same items: 1 when the simulator orders
 * every pair of plans as the executor does. NAN for fewer than MIN_TAU_PLANS items. */
static double kendall_tau(const double *x, const double *y, int n)
{
    if (n < MIN_TAU_PLANS)
        return NAN;
    double agree = 0, untied_x = 0, untied_y = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            int sx = sign(x[i] - x[j]), sy = sign(y[i] - y[j]);
            agree += sx * sy;
            untied_x += sx != 0;
            untied_y += sy != 0;
        }
    return untied_x > 0 && untied_y > 0 ? agree / sqrt(untied_x * untied_y) : NAN;
}

/* The CPU time the machine and this process have used, to tell what others did; and the
 * time the hypervisor gave this VM's cores to other machines (steal). */
typedef struct load_mark {
    double wall, machine, steal, own; /* seconds; machine < 0: /proc/stat unreadable */
} load_mark;

static load_mark load_mark_now(void)
{
    enum { IDLE = 3, IOWAIT = 4, STEAL = 7, N_FIELDS = 8 };
    load_mark mark = {.wall = pl_now(), .machine = -1};
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    mark.own = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    unsigned long long t[N_FIELDS];
    FILE *f = fopen("/proc/stat", "r");
    if (f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &t[0], &t[1], &t[2], &t[3],
                    &t[4], &t[5], &t[6], &t[7]) == N_FIELDS) {
        double tick = 1.0 / (double)sysconf(_SC_CLK_TCK);
        mark.machine = (double)(t[0] + t[1] + t[2] + t[5] + t[6]) * tick;
        mark.steal = (double)t[STEAL] * tick;
    }
    if (f)
        fclose(f);
    return mark;
}

/* Other processes and other VMs take cores from the devices: say how much they took. */
static void print_load_since(const load_mark *start)
{
    load_mark end = load_mark_now();
    double wall = end.wall - start->wall;
    double others = (end.machine - start->machine - (end.own - start->own)) / wall;
    double steal = (end.steal - start->steal) / wall;
    if (start->machine < 0 || end.machine < 0) {
        printf("   %.0f s; the load of other processes is unknown (no /proc/stat)\n", wall);
        return;
    }
    others = others > 0 ? others : 0;
    printf("   %.0f s; other processes kept %.2f of %d cores busy meanwhile, the hypervisor "
           "took %.2f (steal)%s\n", wall, others, pl_machine_cores(), steal,
           others + steal > 0.2 ? ": they shared the cores with the measurement" : "");
}

static void print_error(const pl_error *err)
{
    char line[2048];
    pl_error_format(err, line, sizeof line);
    fprintf(stderr, "sim: %s\n", line);
}

static pl_status out_of_memory(pl_error *err)
{
    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

/* Room for element n of an array of *cap elements of `size` bytes: the array, grown when
 * full (*cap updated), or NULL when out of memory (the array is left as it was). */
static void *grow(void *v, int n, int *cap, size_t size)
{
    if (n < *cap)
        return v;
    int more = *cap ? 2 * *cap : 32;
    void *bigger = realloc(v, (size_t)more * size);
    if (bigger)
        *cap = more;
    return bigger;
}

/* ---- the profile ------------------------------------------------------------------------ */

static void calibration_progress(void *context, const char *what)
{
    (void)context;
    fprintf(stderr, "sim: calibrating: %s\n", what);
}

/* The cached profile for `c`, or a fresh one when `force` (or when it does not fit). */
static pl_status load_profile(pl_cost_model *m, const pl_cluster *c, bool force,
                              bool *calibrated, pl_error *err)
{
    pl_cost_model_clear(m);
    return pl_profile_load(m, c, force, calibration_progress, NULL, NULL, calibrated, err);
}

/* What the predictions rest on: the machine, the overheads, the matmul and overall fits. */
static void print_profile(const pl_cost_model *m, bool calibrated, double seconds)
{
    char path[4096];
    const pl_op_cost *matmul = &m->ops[1][PL_OP_MATMUL], *all = &m->ops[1][PL_OP_COUNT];
    printf("profile: %s (%s in %.1f s)\n", pl_profile_path(path, sizeof path) ? path : "?",
           calibrated ? "calibrated" : "cached, loaded", seconds);
    printf("   machine: %s\n", m->machine);
    printf("   hand-off %.1f us (polling %.1f, asleep %.1f), per task %.2f us, native copies of "
           "4 KiB and 4 MiB %.2f and %.1f us\n", m->handoff_seconds * 1e6, m->poll_seconds * 1e6,
           m->wake_seconds * 1e6, m->task_seconds * 1e6, pl_cost_native_copy(m, 4096) * 1e6,
           pl_cost_native_copy(m, 4 << 20) * 1e6);
    printf("   an op whose inputs the other core copied in: %.2f us longer\n",
           m->remote_seconds * 1e6);
    printf("   paced delays, us, alone / others idle / pacing / one computing / more: slept");
    for (int k = 0; k < PL_COST_CONTENTION; k++)
        printf("%s%.1f", k ? " / " : " ", m->paced_delays[PL_DELAY_SLEPT][k] * 1e6);
    printf("; copies");
    for (int k = 0; k < PL_COST_CONTENTION; k++)
        printf("%s%.1f", k ? " / " : " ", m->paced_delays[PL_DELAY_COPY][k] * 1e6);
    printf("; hand-off %.1f\n", m->paced_delays[PL_DELAY_HANDOFF][1] * 1e6);
    printf("   with no kernel holding a core, per other thread busy / used / both: spun");
    for (int k = 0; k < PL_SHARING_TERMS; k++)
        printf("%s%.2f", k ? " / " : " ", m->paced_sharing[PL_DELAY_SPUN][k] * 1e6);
    printf("; copies");
    for (int k = 0; k < PL_SHARING_TERMS; k++)
        printf("%s%.2f", k ? " / " : " ", m->paced_sharing[PL_DELAY_COPY][k] * 1e6);
    printf("\n");
    printf("   %d measured op configurations; 1-thread fits: matmul %.2f us + %.1f GFLOP/s "
           "(%d samples), all kinds %.2f us + %.1f GFLOP/s (%d)\n", m->n_measured,
           matmul->seconds * 1e6, matmul->per_flop > 0 ? 1e-9 / matmul->per_flop : 0,
           matmul->samples, all->seconds * 1e6, all->per_flop > 0 ? 1e-9 / all->per_flop : 0,
           all->samples);
}

/* ---- models and clusters ------------------------------------------------------------------ */

/* `name` as it is when it ends in ".json", else TOP/graphs/SUBDIR/NAME.json; err names it. */
static void locate(const options *o, const char *subdir, const char *name, char *path,
                   size_t cap, pl_error *err)
{
    size_t length = strlen(name);
    if (length > 5 && strcmp(name + length - 5, ".json") == 0)
        snprintf(path, cap, "%s", name);
    else
        snprintf(path, cap, "%s/graphs/%s%s.json", o->top, subdir, name);
    pl_error_init(err, path);
}

static pl_cluster *open_cluster(const options *o, const char *name, pl_error *err)
{
    char path[4096];
    locate(o, "clusters/", name, path, sizeof path, err);
    return pl_cluster_load_file(path, err);
}

/* A model's training graph. */
static pl_graph *open_training_graph(const options *o, const char *name, pl_error *err)
{
    char path[4096];
    locate(o, "", name, path, sizeof path, err);
    pl_graph *g = pl_graph_load_file(path, err);
    if (g && pl_autodiff_build(g, err) != PL_OK) {
        pl_graph_free(g);
        return NULL;
    }
    return g;
}

/* ---- plans -------------------------------------------------------------------------------- */

typedef enum plan_kind {
    ONE_DEVICE, GPIPE, ONE_F_ONE_B, DEFERRED, INTERLEAVED, BLOCKED, ROUND_ROBIN,
    DATA_PARALLEL, HYBRID, SHARDED, SPLIT, SPLIT_PIPELINE, RECOMPUTE, N_KINDS
} plan_kind;
static const char *const kind_names[N_KINDS] = {"one device", "GPipe", "1F1B", "1F1B, W deferred",
                                                "interleaved", "blocked random", "round-robin",
                                                "data-parallel", "hybrid", "sharded state",
                                                "split ops", "split + pipeline",
                                                "recomputed"};
/* The same, five letters wide, for the tables per kind, cluster and size. */
static const char *const kind_abbreviations[N_KINDS] = {"one", "GPipe", "1F1B", "1F1BW", "inter",
                                                        "block", "robin", "data", "hybrd",
                                                        "shard", "split", "sp+pp", "recmp"};

/* A plan to measure, and what became of it. */
typedef struct candidate {
    plan_kind kind;
    char label[32];
    pl_plan *plan;
    int tasks;
    double predicted;       /* seconds, at the probed speed on native devices */
    double unprobed, apart; /* the same with the profile's own speed, and without ops
                               slowing each other (native devices; else = predicted) */
    bool fits;
    double times[MAX_STEPS]; /* measured steps */
    int n_times;
    struct breakdown *breakdown; /* of the last measured step, against the simulation */
} candidate;

typedef struct candidates {
    candidate *v;
    int n, cap;
} candidates;

static void candidates_free(candidates *cs)
{
    for (int i = 0; i < cs->n; i++) {
        pl_plan_free(cs->v[i].plan);
        free(cs->v[i].breakdown);
    }
    free(cs->v);
    *cs = (candidates){0};
}

/* Takes `plan` (NULL: making it failed, and err says why). */
static pl_status add_candidate(candidates *cs, plan_kind kind, pl_plan *plan, pl_error *err,
                               const char *format, ...) __attribute__((format(printf, 5, 6)));

static pl_status add_candidate(candidates *cs, plan_kind kind, pl_plan *plan, pl_error *err,
                               const char *format, ...)
{
    if (!plan)
        return err->status;
    candidate *v = grow(cs->v, cs->n, &cs->cap, sizeof *v);
    if (!v) {
        pl_plan_free(plan);
        return out_of_memory(err);
    }
    cs->v = v;
    candidate *c = &cs->v[cs->n++];
    *c = (candidate){.kind = kind, .plan = plan};
    va_list args;
    va_start(args, format);
    vsnprintf(c->label, sizeof c->label, format, args);
    va_end(args);
    return PL_OK;
}

/* Every forward op on device 0, `m` micro-batches. */
static pl_plan *one_device_plan(const pl_graph *g, int m, pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (plan)
        plan->micro_batches = m;
    return plan;
}

/* Contiguous blocks of forward ops in topological order, one per stage, of about equal
 * forward FLOPs: an op goes to the stage its FLOPs' midpoint falls in. Stage s runs on
 * device s. NULL without an error when some stage would be empty (one op outweighs a
 * stage's share): fewer stages cover that plan. */
static pl_plan *pipeline_plan(const pl_graph *g, int stages, int m, pl_schedule schedule,
                              pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (!plan)
        return NULL;
    pl_baseline_flop_blocks(g, stages, plan->stage);
    int used = 0;
    for (int o = 0; o < g->n_forward_ops; o++) {
        used += o == 0 || plan->stage[o] != plan->stage[o - 1];
        plan->device[o] = plan->stage[o];
    }
    if (used != stages) {
        pl_plan_free(plan);
        return NULL;
    }
    plan->n_stages = stages;
    plan->micro_batches = m;
    plan->schedule = schedule;
    return plan;
}

/* Runs of `run` consecutive forward ops, the i-th on a device drawn from (seed, i) when
 * `random`, else on device i mod n_devices (round-robin); one stage. */
static pl_plan *runs_plan(const pl_graph *g, int run, int m, int n_devices, uint64_t seed,
                          bool random, pl_error *err)
{
    pl_plan *plan = pl_plan_new(g, err);
    if (!plan)
        return NULL;
    for (int o = 0; o < g->n_forward_ops; o++) {
        uint64_t block = (uint64_t)(o / run);
        uint64_t device = random ? pl_rng_u64(seed, block) : block;
        plan->device[o] = (int)(device % (uint64_t)n_devices);
    }
    plan->micro_batches = m;
    return plan;
}

/* `replicas` copies of `plan` (on devices 0 .. n_devices / replicas - 1), replica r on
 * those devices shifted by r n_devices / replicas; NULL (no error) unless replicas x
 * micro-batches divide the batch. */
static pl_plan *replicated(const pl_graph *g, pl_plan *plan, int replicas, int n_devices,
                           pl_error *err)
{
    if (!plan || g->batch_size % (replicas * plan->micro_batches) != 0 ||
        pl_graph_whole_step_op(g) >= 0 ||
        pl_plan_set_replicas(plan, replicas, err) != PL_OK) {
        pl_plan_free(plan);
        return NULL;
    }
    for (int r = 1; r < replicas; r++)
        for (int o = 0; o < g->n_forward_ops; o++)
            pl_plan_replica(plan, r)[o] = plan->device[o] + r * (n_devices / replicas);
    return plan;
}

/* Every forward op but the loss split over devices first .. first + k - 1 (those of its
 * stage, first + k * stage, in a pipeline plan): tensor parallelism (docs/tensor-parallel.md). */
static pl_plan *split_plan(const pl_graph *g, pl_plan *plan, int k, pl_error *err)
{
    int devices[PL_MAX_SPLIT];
    for (int o = 0; plan && o < g->n_forward_ops; o++) {
        if (g->ops[o].outputs[0] == g->loss)
            continue;
        for (int s = 0; s < k; s++)
            devices[s] = k * plan->stage[o] + s;
        if (pl_plan_split(plan, o, k, devices, err) != PL_OK) {
            pl_plan_free(plan);
            return NULL;
        }
    }
    return plan;
}

static const int micro_batch_choices[] = {1, 2, 4, 8};
enum { N_MICRO = sizeof micro_batch_choices / sizeof *micro_batch_choices };

/* Pipelines of 2 .. n_devices stages, each micro-batch count of {1,2,4,8} that divides
 * the batch, in both schedules; n_devices stages in 1F1B with weight gradients deferred;
 * and interleaved: 2 n_devices stages, stage s on device s mod n_devices, 1F1B, weight
 * gradients deferred for 2 and 8 micro-batches (as the agent's folds and deferral). */
static pl_status add_pipelines(candidates *cs, const pl_graph *g, int n_devices, pl_error *err)
{
    pl_status status = PL_OK;
    for (int s = 2; s <= n_devices && status == PL_OK; s++)
        for (int i = 0; i < N_MICRO && status == PL_OK; i++) {
            int m = micro_batch_choices[i];
            for (int k = 0; k < 2 && status == PL_OK && g->batch_size % m == 0; k++) {
                pl_schedule schedule = k ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE;
                pl_plan *plan = pipeline_plan(g, s, m, schedule, err);
                if (plan)
                    status = add_candidate(cs, k ? ONE_F_ONE_B : GPIPE, plan, err,
                                           "%s s%d m%d", k ? "1F1B" : "GPipe", s, m);
                else
                    status = err->status;
            }
        }
    for (int i = 0; i < N_MICRO && status == PL_OK; i++) {
        int m = micro_batch_choices[i];
        if (g->batch_size % m != 0)
            continue;
        pl_plan *plan = pipeline_plan(g, n_devices, m, PL_SCHEDULE_1F1B, err);
        if (plan) {
            plan->defer_weight_gradients = true;
            status = add_candidate(cs, DEFERRED, plan, err, "1F1B s%d m%d W later", n_devices, m);
        } else {
            status = err->status;
        }
        if (status != PL_OK)
            break;
        if ((plan = pipeline_plan(g, 2 * n_devices, m, PL_SCHEDULE_1F1B, err))) {
            for (int o = 0; o < plan->n_ops; o++)
                plan->device[o] = plan->stage[o] % n_devices;
            plan->defer_weight_gradients = i % 2;
            status = add_candidate(cs, INTERLEAVED, plan, err, "1F1B s%dx2 m%d%s", n_devices, m,
                                   i % 2 ? " W later" : "");
        } else {
            status = err->status;
        }
    }
    return status;
}

/* `n` blocked random plans: a run length of 1 .. 32 ops (at most half the forward ops)
 * and 1, 2 or 4 micro-batches (dividing the batch), drawn from the seed. */
static pl_status add_blocked(candidates *cs, const pl_graph *g, int n_devices, int n,
                             uint64_t seed, pl_error *err)
{
    pl_status status = PL_OK;
    for (int i = 0; i < n && status == PL_OK; i++) {
        uint64_t plan_seed = pl_rng_u64(seed, (uint64_t)i);
        int run = 1 << (pl_rng_u64(plan_seed, 0) % 6);
        while (run > 1 && 2 * run > g->n_forward_ops)
            run /= 2;
        int m = micro_batch_choices[pl_rng_u64(plan_seed, 1) % 3];
        while (g->batch_size % m != 0)
            m /= 2;
        status = add_candidate(cs, BLOCKED, runs_plan(g, run, m, n_devices, plan_seed, true, err),
                               err, "blocked k%d m%d #%d", run, m, i);
    }
    return status;
}

/* Every kind's candidates for one row. */
static pl_status make_candidates(candidates *cs, const options *o, const pl_graph *g,
                                 const pl_cluster *c, pl_error *err)
{
    int n = c->n_devices;
    pl_status status = PL_OK;
    for (int i = 0; i < N_MICRO && status == PL_OK; i += 2) /* 1 and 4 micro-batches */
        if (g->batch_size % micro_batch_choices[i] == 0)
            status = add_candidate(cs, ONE_DEVICE, one_device_plan(g, micro_batch_choices[i], err),
                                   err, "one m%d", micro_batch_choices[i]);
    if (status == PL_OK && n > 1)
        status = add_pipelines(cs, g, n, err);
    if (status == PL_OK && n > 1)
        status = add_blocked(cs, g, n, 2 * o->plans, o->seed, err);
    for (int m = 1; m <= 2 && status == PL_OK && n > 1; m++)
        if (g->batch_size % m == 0)
            status = add_candidate(cs, ROUND_ROBIN, runs_plan(g, 1, m, n, 0, false, err), err,
                                   "robin m%d", m);
    /* data-parallel over 2 and all devices; two replicas of a pipeline over half of them */
    for (int r = 2; status == PL_OK && r <= n; r = r < n ? n : n + 1)
        for (int m = 1; m <= 2 && status == PL_OK; m++) {
            pl_plan *plan = replicated(g, one_device_plan(g, m, err), r, r, err);
            if (plan)
                status = add_candidate(cs, DATA_PARALLEL, plan, err, "dp r%d m%d", r, m);
        }
    /* the same with the optimizer state sharded: data-parallel and hybrid */
    for (int r = 2; status == PL_OK && r <= n; r = r < n ? n : n + 1) {
        pl_plan *plan = replicated(g, one_device_plan(g, 1, err), r, r, err);
        if (plan)
            plan->shard_optimizer_state = true;
        if (plan)
            status = add_candidate(cs, SHARDED, plan, err, "dp r%d sharded", r);
    }
    if (status == PL_OK && n >= 4) {
        pl_plan *plan = replicated(g, pipeline_plan(g, n / 2, 2, PL_SCHEDULE_1F1B, err), 2, n,
                                   err);
        if (plan)
            plan->shard_optimizer_state = true;
        if (plan)
            status = add_candidate(cs, SHARDED, plan, err, "hybrid r2 s%d m2 sharded", n / 2);
    }
    /* pipelines over every device recomputing every op but each stage's last (whose
     * outputs the next stage reads) and every 8th */
    for (int i = 1; status == PL_OK && n > 1 && i < N_MICRO; i++) {
        int m = micro_batch_choices[i];
        pl_plan *plan = g->batch_size % m == 0 && pl_graph_allows_micro_batches(g, m)
                            ? pipeline_plan(g, n, m, PL_SCHEDULE_GPIPE, err)
                            : NULL;
        if (!plan && err->status != PL_OK) {
            status = err->status;
            break;
        }
        for (int op = 0; plan && op < plan->n_ops; op++)
            plan->recompute[op] = (op + 1) % 8 != 0 && op + 1 < plan->n_ops &&
                                  plan->stage[op + 1] == plan->stage[op];
        if (plan)
            status = add_candidate(cs, RECOMPUTE, plan, err, "GPipe s%d m%d recomputed", n, m);
    }
    /* split ops over 2 and all devices, and a two-stage pipeline of splits over half */
    for (int k = 2; status == PL_OK && k <= n && k <= PL_MAX_SPLIT; k = k < n ? n : n + 1) {
        pl_plan *plan = split_plan(g, one_device_plan(g, 1, err), k, err);
        status = plan ? add_candidate(cs, SPLIT, plan, err, "split k%d", k) : err->status;
    }
    for (int i = 1; status == PL_OK && n >= 4 && i < N_MICRO - 1; i++) {
        int m = micro_batch_choices[i];
        pl_plan *plan = pipeline_plan(g, 2, m, PL_SCHEDULE_1F1B, err);
        if (!plan && err->status != PL_OK)
            status = err->status;
        else if (plan && g->batch_size % m == 0 && pl_graph_allows_micro_batches(g, m)) {
            plan = split_plan(g, plan, n / 2, err);
            status = plan ? add_candidate(cs, SPLIT_PIPELINE, plan, err, "split k%d s2 m%d",
                                          n / 2, m)
                          : err->status;
        } else {
            pl_plan_free(plan);
        }
    }
    for (int i = 0; status == PL_OK && n >= 4 && i < N_MICRO - 1; i++) {
        int m = micro_batch_choices[i];
        pl_plan *plan = replicated(g, pipeline_plan(g, n / 2, m, PL_SCHEDULE_1F1B, err), 2, n,
                                   err);
        if (plan)
            status = add_candidate(cs, HYBRID, plan, err, "hybrid r2 s%d m%d", n / 2, m);
    }
    return status;
}

/* ---- simulating and choosing ------------------------------------------------------------------ */

/* A step simulated with `m` (the candidate's program made afresh). */
static pl_status simulated(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                           candidate *k, pl_simulation *sim, pl_error *err)
{
    pl_program *p = pl_program_new(g, c, k->plan, err);
    pl_status status = p ? pl_simulate(p, c, m, sim, NULL, NULL, err) : err->status;
    if (p)
        k->tasks = p->n_tasks;
    pl_program_free(p);
    return status;
}

/* Each candidate's predicted step and whether its memory fits; on native devices also as
 * the profile stands (`as_profiled`) and with no op slowed by another (`apart`). */
static pl_status simulate_candidates(candidates *cs, const pl_graph *g, const pl_cluster *c,
                                     const pl_cost_model *m, const pl_cost_model *as_profiled,
                                     const pl_cost_model *apart, pl_error *err)
{
    for (int i = 0; i < cs->n; i++) {
        candidate *k = &cs->v[i];
        pl_simulation sim;
        if (simulated(g, c, m, k, &sim, err) != PL_OK)
            return err->status;
        k->predicted = k->unprobed = k->apart = sim.step_seconds;
        k->fits = sim.oom_device < 0;
        if (as_profiled && simulated(g, c, as_profiled, k, &sim, err) != PL_OK)
            return err->status;
        k->unprobed = as_profiled ? sim.step_seconds : k->predicted;
        if (apart && simulated(g, c, apart, k, &sim, err) != PL_OK)
            return err->status;
        k->apart = apart ? sim.step_seconds : k->predicted;
    }
    return PL_OK;
}

typedef struct choice {
    int chosen[MAX_PLANS], n;
    int oom, slow; /* candidates that do not fit, or are predicted slower than o->max_step */
} choice;

static bool measurable(const candidate *c, const options *o)
{
    return c->fits && c->predicted <= o->max_step;
}

/* Up to o->plans measurable candidates, taking the kinds in turn (each kind's candidates
 * in a random order) while their measuring fits in what is left of o->budget (a measured
 * step costs `per_step` steps). */
static void choose(const candidates *cs, const options *o, uint64_t seed, int per_step,
                   choice *out)
{
    int *order = malloc((size_t)cs->n * sizeof *order + 1);
    *out = (choice){0};
    for (int i = 0; i < cs->n; i++) {
        out->oom += !cs->v[i].fits;
        out->slow += cs->v[i].fits && !measurable(&cs->v[i], o);
    }
    for (int i = 0; order && i < cs->n; i++)
        order[i] = i;
    for (int i = cs->n - 1; order && i > 0; i--) { /* Fisher-Yates */
        int j = (int)(pl_rng_u64(seed, (uint64_t)i) % (uint64_t)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    int next[N_KINDS] = {0}; /* per kind: where its search in `order` resumes */
    /* the kind that picks first changes from row to row, so that a row's budget running
     * out does not always leave out the same kinds */
    int first = (int)(pl_rng_u64(seed, (uint64_t)cs->n) % N_KINDS);
    double budget = o->budget;
    for (bool progress = true; order && progress && out->n < o->plans;) {
        progress = false;
        for (int j = 0; j < N_KINDS && out->n < o->plans; j++) {
            int kind = (first + j) % N_KINDS;
            while (next[kind] < cs->n && (o->kinds >> kind & 1)) {
                int i = order[next[kind]++];
                double cost = (o->warmup + o->steps * per_step) * cs->v[i].predicted;
                if (cs->v[i].kind == (plan_kind)kind && measurable(&cs->v[i], o) &&
                    cost <= budget) {
                    out->chosen[out->n++] = i;
                    budget -= cost;
                    progress = true;
                    break;
                }
            }
        }
    }
    free(order);
}

/* ---- the breakdown: a simulated timeline against a measured one --------------------------- */

/* COLLECTIVE: the ops a split plan's rewrite inserted between layouts (concatenations,
 * splits, sums, slices) and their gradients; the other op classes leave them out. */
typedef enum task_class { FORWARD, BACKWARD, UPDATE, COLLECTIVE, COPY, N_CLASSES } task_class;
static const char *const class_names[N_CLASSES] = {"fwd", "bwd", "upd", "coll", "copy"};

/* One timeline, summarised. */
typedef struct timeline_facts {
    double busy[N_CLASSES]; /* seconds of tasks, summed, by class */
    double handoff;         /* the median delay of a task released from elsewhere */
    int handoffs;
    double edges;           /* the first task's start plus the wait after the last one */
} timeline_facts;

typedef struct breakdown {
    timeline_facts predicted, measured;
} breakdown;

static task_class class_of(const pl_program *p, const pl_task *t)
{
    if (t->kind != PL_TASK_OP) /* copies, and the all-reduce's sums */
        return COPY;
    if (p->split && pl_split_graph_collective(p->split, p->graph->ops[t->op].group))
        return COLLECTIVE;
    pl_phase phase = p->graph->ops[t->op].phase;
    return phase == PL_PHASE_FORWARD ? FORWARD : phase == PL_PHASE_BACKWARD ? BACKWARD : UPDATE;
}

typedef struct started {
    double start;
    int task;
} started;

static int compare_started(const void *a, const void *b)
{
    const started *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : x->task - y->task;
}

/* The delays of hand-offs: a task whose last dependency to finish ran on another resource,
 * while its own resource was idle, starts this long after that dependency's end. Returns
 * how many went into `delays` (n_tasks long), or -1 when out of memory. */
static int handoff_delays(const pl_program *p, const double *starts, const double *ends,
                          double *delays)
{
    int n = p->n_tasks, resources = p->n_devices + p->n_links, count = 0;
    double *released = malloc((size_t)n * sizeof *released + 1); /* its last dependency's end */
    int *releaser = malloc((size_t)n * sizeof *releaser + 1);     /* that one's resource */
    double *idle_since = malloc((size_t)resources * sizeof *idle_since + 1);
    started *order = malloc((size_t)n * sizeof *order + 1);
    if (!released || !releaser || !idle_since || !order)
        count = -1;
    for (int i = 0; count >= 0 && i < n; i++) {
        releaser[i] = -1;
        order[i] = (started){starts[i], i};
    }
    for (int i = 0; count >= 0 && i < n; i++)
        for (int e = p->tasks[i].first_succ; e < p->tasks[i].first_succ + p->tasks[i].n_succ; e++) {
            int next = p->succ[e];
            if (releaser[next] < 0 || ends[i] > released[next]) {
                released[next] = ends[i];
                releaser[next] = p->tasks[i].resource;
            }
        }
    if (count >= 0)
        qsort(order, (size_t)n, sizeof *order, compare_started);
    for (int r = 0; count >= 0 && r < resources; r++)
        idle_since[r] = -1;
    for (int k = 0; count >= 0 && k < n; k++) {
        int i = order[k].task, r = p->tasks[i].resource;
        if (releaser[i] >= 0 && releaser[i] != r && idle_since[r] <= released[i])
            delays[count++] = starts[i] - released[i];
        idle_since[r] = ends[i];
    }
    free(released);
    free(releaser);
    free(idle_since);
    free(order);
    return count;
}

static pl_status summarise_timeline(const pl_program *p, const double *starts,
                                    const double *ends, double step, timeline_facts *f,
                                    pl_error *err)
{
    *f = (timeline_facts){0};
    double first = step, last = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        f->busy[class_of(p, &p->tasks[i])] += ends[i] - starts[i];
        first = starts[i] < first ? starts[i] : first;
        last = ends[i] > last ? ends[i] : last;
    }
    f->edges = first + (step - last);
    double *delays = malloc((size_t)p->n_tasks * sizeof *delays + 1);
    int n = delays ? handoff_delays(p, starts, ends, delays) : -1;
    if (n < 0) {
        free(delays);
        return out_of_memory(err);
    }
    f->handoffs = n;
    f->handoff = pl_quantile(delays, n, 0.5);
    free(delays);
    return PL_OK;
}

/* The executor's last step against the simulation of the same program. */
static pl_status break_down(const pl_executor *ex, const pl_cluster *c, const pl_cost_model *m,
                            breakdown *b, pl_error *err)
{
    const pl_program *p = pl_executor_program(ex);
    double *starts = malloc(2 * (size_t)p->n_tasks * sizeof *starts + 1);
    pl_simulation sim;
    if (!starts)
        return out_of_memory(err);
    double *ends = starts + p->n_tasks;
    pl_status status = pl_simulate(p, c, m, &sim, starts, ends, err);
    if (status == PL_OK)
        status = summarise_timeline(p, starts, ends, sim.step_seconds, &b->predicted, err);
    if (status == PL_OK)
        status = summarise_timeline(p, pl_executor_task_starts(ex), pl_executor_task_ends(ex),
                                    pl_executor_step_seconds(ex), &b->measured, err);
    free(starts);
    return status;
}

/* ---- measuring ---------------------------------------------------------------------------------- */

/* A row's executor and its position in the step count (parameters train as it runs). */
typedef struct bench {
    pl_executor *ex;
    const pl_cluster *c;
    const pl_cost_model *m;
    int64_t steps;
} bench;

static pl_status switch_to(bench *b, candidate *k, pl_error *err)
{
    pl_fit fit;
    if (pl_executor_set_plan(b->ex, k->plan, &fit, err) != PL_OK)
        return err->status;
    if (!fit.fits) /* the simulator said it fits: the two disagree about memory */
        return pl_error_set(err, PL_EINTERNAL, NULL, "plan %s: the program fits but the "
                            "executor needs %lld bytes on device %d, of %lld", k->label,
                            (long long)fit.need, fit.device, (long long)fit.capacity);
    return PL_OK;
}

static pl_status run_step(bench *b, pl_error *err)
{
    float loss;
    return pl_executor_step(b->ex, ++b->steps, &loss, err);
}

/* Steps run per measured step: on a native cluster a switch is followed by an unmeasured
 * step, since the first step after a switch runs on caches the other plan filled (1-2%
 * slower here); so is a short paced step, since its threads slept through the switch and
 * wake slowly (tens of microseconds each on this VM: a tenth of a small model's step); a
 * long paced step sleeps most of the time and needs none. */
enum { SHORT_PACED_STEP_MS = 20 };
static int steps_per_measured(const pl_cluster *c, double predicted)
{
    return c->paced && predicted > SHORT_PACED_STEP_MS * 1e-3 ? 1 : 2;
}

/* The measured rounds for a row: o->steps, or up to MAX_ROUND_FACTOR times as many when
 * the budget allows, since cheap rows can afford a steadier median. */
static int rounds_for(const candidates *cs, const choice *ch, const options *o,
                      const pl_cluster *c)
{
    double round = 0;
    for (int i = 0; i < ch->n; i++)
        round += steps_per_measured(c, cs->v[ch->chosen[i]].predicted) *
                 cs->v[ch->chosen[i]].predicted;
    double afford = round > 0 ? o->budget / round - o->warmup : MAX_STEPS;
    int most = o->steps * MAX_ROUND_FACTOR < MAX_STEPS ? o->steps * MAX_ROUND_FACTOR : MAX_STEPS;
    return afford < o->steps ? o->steps : afford > most ? most : (int)afford;
}

/* A warm-up round (o->warmup steps of each plan), then rounds of one measured step of
 * each, in an order reversed every round. The last round's timelines are broken down
 * against the simulation. */
static pl_status measure_chosen(bench *b, candidates *cs, const choice *ch, const options *o,
                                int *rounds, pl_error *err)
{
    pl_status status = PL_OK;
    *rounds = rounds_for(cs, ch, o, b->c);
    for (int i = 0; i < ch->n && status == PL_OK; i++) {
        status = switch_to(b, &cs->v[ch->chosen[i]], err);
        for (int s = 0; s < o->warmup && status == PL_OK; s++)
            status = run_step(b, err);
    }
    for (int round = 0; round < *rounds && status == PL_OK; round++)
        for (int i = 0; i < ch->n && status == PL_OK; i++) {
            candidate *k = &cs->v[ch->chosen[round % 2 ? ch->n - 1 - i : i]];
            int settle = steps_per_measured(b->c, k->predicted) - 1;
            status = switch_to(b, k, err);
            for (int s = 0; s <= settle && status == PL_OK; s++)
                status = run_step(b, err);
            if (status != PL_OK)
                break;
            k->times[k->n_times++] = pl_executor_step_seconds(b->ex);
            if (round == *rounds - 1) {
                if (!(k->breakdown = calloc(1, sizeof *k->breakdown)))
                    status = out_of_memory(err);
                else
                    status = break_down(b->ex, b->c, b->m, k->breakdown, err);
            }
        }
    return status;
}

/* The q-quantile of a plan's measured steps first, first + stride, ...: stride 1 for all
 * of them, 2 for the even or the odd rounds. */
static double measured_quantile(const candidate *k, int first, int stride, double q)
{
    double sorted[MAX_STEPS];
    int n = 0;
    for (int i = first; i < k->n_times; i += stride)
        sorted[n++] = k->times[i];
    return pl_quantile(sorted, n, q);
}

/* ---- results and their summaries ---------------------------------------------------------- */

/* A model's size class: graphs/small's are named small/NAME, others' files FILE.json. */
static size_class size_of(const char *model)
{
    if (strncmp(model, "small/", 6) == 0 || strstr(model, "/small/"))
        return SMALL;
    size_t n = strlen(model);
    return n > 5 && strcmp(model + n - 5, ".json") == 0 && !strstr(model, "graphs/") ? UNSEEN
                                                                                   : FULL_SIZE;
}

/* One measured plan. */
typedef struct result {
    int row, cluster;
    bool native; /* no device or link paced: the bound's native op times */
    size_class size;
    plan_kind kind;
    char label[32];
    double predicted, measured, bound;
    double unprobed, apart; /* predicted without the probe, and with no op slowed by another */
    double quiet;     /* the fastest quarter's edge: the 25th percentile of its steps */
    double halves[2]; /* the medians of the even and of the odd rounds */
    breakdown breakdown;
} result;

typedef struct row {
    int model, cluster;
    pl_probe probe; /* native devices: the machine's speed when the row began */
    int first, n; /* its results */
    int candidates, rounds;
    choice choice;
    double seconds; /* simulating and measuring it */
} row;

typedef struct results {
    result *v;
    int n, cap;
    row *rows;
    int n_rows, rows_cap;
} results;

/* What a summary compares:
 * - the simulator's step with the measured median step;
 * - the simulator's step with the quiet steps, the 25th percentile: on a shared machine
 *   (a VM whose cores slow down while a neighbour works) the median carries the bursts
 *   that fell into its rounds, which no profile of the machine can foresee;
 * - the simulator's step with its edges (the caller's hand-off to the first task, the last
 *   task's back) taken from the last measured step: on this VM those wake-ups come in
 *   spells, some tens of seconds of a few microseconds each, some of 20-30, which a mean
 *   per profile cannot foresee and which weigh on steps under a millisecond;
 * - the executor with itself, the median of a plan's even rounds with that of its odd
 *   rounds. No simulator can agree with the executor much better than the executor
 *   agrees with itself;
 * - on native devices, the simulator's step without the probe (the profile's own speed),
 *   and without ops slowing each other: what each of the two buys. */
typedef enum comparison {
    AGAINST_MEDIAN, AGAINST_QUIET, EDGES_MEASURED, SELF, UNPROBED, APART
} comparison;

/* Which results a summary covers (-1 matches anything), and what it compares. */
typedef struct filter {
    int row, cluster, kind, size;
    comparison compare;
} filter;

static double predicted_of(const result *r, comparison compare)
{
    if (compare == EDGES_MEASURED)
        return r->predicted - r->breakdown.predicted.edges + r->breakdown.measured.edges;
    return compare == SELF       ? r->halves[0]
           : compare == UNPROBED ? r->unprobed
           : compare == APART    ? r->apart
                                 : r->predicted;
}

static double measured_of(const result *r, comparison compare)
{
    return compare == SELF ? r->halves[1] : compare == AGAINST_QUIET ? r->quiet : r->measured;
}

static double relative_error(const result *r, comparison compare)
{
    return (predicted_of(r, compare) - measured_of(r, compare)) / measured_of(r, compare);
}

static bool matches(const result *r, filter f)
{
    return (f.row < 0 || r->row == f.row) && (f.cluster < 0 || r->cluster == f.cluster) &&
           (f.kind < 0 || (int)r->kind == f.kind) && (f.size < 0 || (int)r->size == f.size);
}

typedef struct accuracy {
    int n;
    double median, p90, bias, tau, tau_min, over_bound;
} accuracy;

/* Kendall's tau of one row's plans. */
static double row_tau(const results *rs, const row *w, comparison compare)
{
    double predicted[MAX_PLANS], measured[MAX_PLANS];
    for (int i = 0; i < w->n; i++) {
        predicted[i] = predicted_of(&rs->v[w->first + i], compare);
        measured[i] = measured_of(&rs->v[w->first + i], compare);
    }
    return kendall_tau(predicted, measured, w->n);
}

/* The median and least tau of the rows that f covers (a tau across models would mostly
 * rank the models, which is easy). */
static void rows_tau(const options *o, const results *rs, filter f, accuracy *a)
{
    double *taus = malloc((size_t)rs->n_rows * sizeof *taus + 1);
    int n = 0;
    a->tau_min = NAN;
    for (int w = 0; taus && w < rs->n_rows; w++) {
        const row *r = &rs->rows[w];
        if ((f.row >= 0 && w != f.row) || (f.cluster >= 0 && r->cluster != f.cluster) ||
            (f.size >= 0 && (int)size_of(o->models[r->model]) != f.size))
            continue;
        double tau = row_tau(rs, r, f.compare);
        if (isnan(tau))
            continue;
        taus[n++] = tau;
        a->tau_min = n == 1 || tau < a->tau_min ? tau : a->tau_min;
    }
    a->tau = pl_quantile(taus, n, 0.5);
    free(taus);
}

static accuracy summarise(const options *o, const results *rs, filter f)
{
    accuracy a = {0};
    double *magnitude = malloc(3 * (size_t)rs->n * sizeof *magnitude + 1);
    if (!magnitude)
        return (accuracy){.median = NAN, .p90 = NAN, .bias = NAN, .tau = NAN, .tau_min = NAN,
                          .over_bound = NAN};
    double *signed_error = magnitude + rs->n, *over_bound = signed_error + rs->n;
    for (int i = 0; i < rs->n; i++)
        if (matches(&rs->v[i], f)) {
            signed_error[a.n] = relative_error(&rs->v[i], f.compare);
            magnitude[a.n] = fabs(signed_error[a.n]);
            over_bound[a.n++] = rs->v[i].measured / rs->v[i].bound;
        }
    a.median = pl_quantile(magnitude, a.n, 0.5);
    a.p90 = pl_quantile(magnitude, a.n, 0.9);
    a.bias = pl_quantile(signed_error, a.n, 0.5);
    a.over_bound = pl_quantile(over_bound, a.n, 0.5);
    if (f.kind < 0)
        rows_tau(o, rs, f, &a);
    else
        a.tau = a.tau_min = NAN;
    free(magnitude);
    return a;
}

/* printf(format, x), or "-" in the same `width` when x is not a number (no plans, no
 * hand-offs, a tau of fewer than three plans). */
static void print_or_dash(const char *format, int width, double x)
{
    if (isnan(x))
        printf(" %*s", width, "-");
    else
        printf(format, x);
}

/* " +12.3%", or without the sign for a magnitude. */
static void print_percent(double x, bool with_sign)
{
    print_or_dash(with_sign ? " %+6.1f%%" : " %6.1f%%", 7, 100 * x);
}

static void print_tau(double x)
{
    print_or_dash(" %5.2f", 5, x);
}

/* "plans  med|e|  p90|e|  bias  tau  meas/LB" */
static void print_accuracy(const accuracy *a)
{
    printf(" %5d", a->n);
    print_percent(a->median, false);
    print_percent(a->p90, false);
    print_percent(a->bias, true);
    print_tau(a->tau);
    print_or_dash(" %6.2fx", 7, a->over_bound);
}

static const char accuracy_header[] = " plans  med|e|  p90|e|    bias   tau meas/LB";

static void print_accuracy_heading(const options *o)
{
    printf("\n== 1. Accuracy: pl_simulate's step against the executor's (median of %d-%d "
           "steps after %d warm-up, plans of a row taking turns)\n", o->steps,
           o->steps * MAX_ROUND_FACTOR, o->warmup);
    printf("   e = (predicted - measured) / measured; bias: median e; tau: Kendall's tau-b "
           "of the row's plans;\n   meas/LB: median measured step over pl_step_lower_bound; "
           "steps: measured per plan.\n   Candidates (cand): one device (m 1, 4), "
           "FLOP-balanced pipelines (2..n stages, m of 1,2,4,8,\n   GPipe and 1F1B; n stages "
           "with weight gradients deferred; 2n stages interleaved), blocked\n   random, "
           "round-robin. Not measured: not fitting memory (oom), predicted\n   over "
           "%.2g s (slow), and the rest past the %.3g s budget or the %d plans (left).\n"
           "   speed: on native devices, the machine's pace when the row began over the\n"
           "   profile's, probed as the main job does (docs/simulator.md); its predictions take it\n",
           o->max_step, o->budget, o->plans);
    printf("%-17s %-9s %5s %4s %4s %4s %5s%s %5s %6s\n", "model", "cluster", "cand", "oom",
           "slow", "left", "steps", accuracy_header, "sec", "speed");
}

static void print_row(const options *o, const results *rs, int w)
{
    const row *r = &rs->rows[w];
    accuracy a = summarise(o, rs, (filter){w, -1, -1, -1, AGAINST_MEDIAN});
    const char *model = o->models[r->model];
    printf("%-17.17s %-9.9s %5d %4d %4d %4d %5d",
           size_of(model) != FULL_SIZE && strrchr(model, '/') ? strrchr(model, '/') + 1 : model,
           o->clusters[r->cluster],
           r->candidates, r->choice.oom, r->choice.slow,
           r->candidates - r->choice.oom - r->choice.slow - r->choice.n, r->rounds);
    print_accuracy(&a);
    printf(" %5.0f", r->seconds);
    if (r->probe.ops > 0)
        printf(" %6.3f", r->probe.scale);
    else
        printf(" %6s", "-");
    printf("\n");
    for (int i = 0; o->verbose && i < r->n; i++) {
        const result *x = &rs->v[r->first + i];
        printf("      %-22s predicted %10.3f ms  measured %10.3f ms ", x->label,
               x->predicted * 1e3, x->measured * 1e3);
        print_percent(relative_error(x, AGAINST_MEDIAN), true);
        printf("\n");
    }
    fflush(stdout);
}

static bool passes(const accuracy *a)
{
    return a->median <= TARGET_MEDIAN && a->p90 <= TARGET_P90 && a->tau >= TARGET_TAU;
}

/* Per cluster and size class; with `targets`, whether each meets the targets. */
static void print_per_cluster(const options *o, const results *rs, comparison compare,
                              const char *title, bool targets)
{
    printf("\n%s\n", title);
    printf("%-21s%s %5s%s\n", "cluster, size", accuracy_header, "min", targets ? "  targets" : "");
    for (int c = 0; c < o->n_clusters; c++)
        for (int size = 0; size < N_SIZES; size++) {
            accuracy a = summarise(o, rs, (filter){-1, c, -1, size, compare});
            if (a.n == 0)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%.14s, %s", o->clusters[c], size_names[size]);
            printf("%-21.21s", name);
            print_accuracy(&a);
            print_tau(a.tau_min);
            if (targets)
                printf("  %s", passes(&a) ? "met" : "NOT met");
            printf("\n");
        }
}

/* Every measured step below its lower bound, with the plan: a bound that bounds has none.
 * Every plan counts, those on native devices (whose bound rests on measured floors, not on
 * pacing) apart. */
static void print_under_bound(const options *o, const results *rs)
{
    int under = 0, native = 0, native_under = 0;
    for (int i = 0; i < rs->n; i++) {
        const result *x = &rs->v[i];
        native += x->native;
        if (x->measured >= x->bound)
            continue;
        native_under += x->native;
        if (under++ == 0)
            printf("\nmeasured below the lower bound (measured / bound, predicted / bound):\n");
        printf("  %-24s %-10s %-22s %.3f ms against %.3f ms: %.3fx, %.3fx\n",
               o->models[rs->rows[x->row].model], o->clusters[x->cluster], x->label,
               1e3 * x->measured, 1e3 * x->bound, x->measured / x->bound,
               x->predicted / x->bound);
    }
    if (under == 0)
        printf("\nmeasured below the lower bound: none of %d plans (%d on native devices)\n",
               rs->n, native);
    else
        printf("measured below the lower bound: %d of %d plans, %d of the %d on native "
               "devices\n", under, rs->n, native_under, native);
}

static void print_summaries(const options *o, const results *rs)
{
    print_per_cluster(o, rs, AGAINST_MEDIAN, "per cluster and size class, over its models "
                      "(tau: the median row's; min: the worst row's)", true);
    print_per_cluster(o, rs, AGAINST_QUIET, "the same against each plan's quiet steps (its "
                      "25th percentile): the machine\nundisturbed, as calibration measures it",
                      false);
    print_per_cluster(o, rs, EDGES_MEASURED, "the same with each plan's predicted step edges "
                      "(the first task's start and the wait\nafter the last) replaced by its "
                      "last measured step's: what the model gets wrong\nbesides the wake-ups "
                      "that start and end a step", false);
    print_per_cluster(o, rs, UNPROBED, "on native devices, the same without the probe: the "
                      "profile's own speed, as calibrated", false);
    print_per_cluster(o, rs, APART, "on native devices, the same (probed) with no op slowed "
                      "by another running beside it", false);
    print_per_cluster(o, rs, SELF, "the executor against itself, per cluster: each plan's "
                      "median step of its even rounds\n(\"predicted\") against that of its odd "
                      "rounds; half the steps each, so about twice the\nnoise of a whole median: "
                      "how far the measurements alone let a simulator be judged", false);
    printf("\nper plan kind, over every model and cluster\n");
    printf("%-21s%s\n", "kind", accuracy_header);
    for (int k = 0; k < N_KINDS; k++) {
        accuracy a = summarise(o, rs, (filter){-1, -1, k, -1, AGAINST_MEDIAN});
        printf("%-21s", kind_names[k]);
        print_accuracy(&a);
        printf("\n");
    }
    printf("\nreplicated, split and recomputed plans per cluster and size\n");
    printf("%-21s%s\n", "kind, cluster, size", accuracy_header);
    for (int k = DATA_PARALLEL; k < N_KINDS; k++)
        for (int c = 0; c < o->n_clusters; c++)
            for (int size = 0; size < N_SIZES; size++) {
                accuracy a = summarise(o, rs, (filter){-1, c, k, size, AGAINST_MEDIAN});
                if (a.n == 0)
                    continue;
                char name[64];
                snprintf(name, sizeof name, "%.5s %.9s %s", kind_abbreviations[k], o->clusters[c],
                         size_names[size]);
                printf("%-21.21s", name);
                print_accuracy(&a);
                printf("\n");
            }
    accuracy all = summarise(o, rs, (filter){-1, -1, -1, -1, AGAINST_MEDIAN});
    printf("\n%-21s", "overall");
    print_accuracy(&all);
    print_tau(all.tau_min);
    printf("\ntargets: median |e| <= %.0f%%, 90th percentile <= %.0f%%, tau >= %.1f: %s\n",
           100 * TARGET_MEDIAN, 100 * TARGET_P90, TARGET_TAU, passes(&all) ? "met" : "NOT met");
    print_under_bound(o, rs);
}

/* ---- table 2: the breakdown ----------------------------------------------------------------- */

static double ratio(double measured, double predicted)
{
    return predicted > 0 ? measured / predicted : NAN;
}

/* Measured over predicted busy time per class, hand-offs and the step's edges. */
static void print_breakdown_columns(const timeline_facts *predicted, const timeline_facts *measured)
{
    for (int k = 0; k < N_CLASSES; k++)
        print_or_dash(" %5.2fx", 6, ratio(measured->busy[k], predicted->busy[k]));
    print_or_dash(" %6.1f", 6, predicted->handoff * 1e6);
    print_or_dash(" %6.1f", 6, measured->handoff * 1e6);
    printf(" %6d %7.1f %7.1f", measured->handoffs, predicted->edges * 1e6, measured->edges * 1e6);
}

static void print_breakdown_heading(const char *what)
{
    printf("%-30s %7s", what, "e");
    for (int k = 0; k < N_CLASSES; k++)
        printf(" %6s", class_names[k]);
    printf(" %13s %6s %15s\n", "hand-off us", "n", "edges us");
    printf("%-30s %7s", "", "");
    for (int k = 0; k < N_CLASSES; k++)
        printf(" %6s", "m/p");
    printf(" %6s %6s %6s %7s %7s\n", "pred", "meas", "", "pred", "meas");
}

/* Per cluster: every plan's task seconds summed; hand-offs and edges of the median plan. */
static void print_cluster_breakdown(const options *o, const results *rs, int c)
{
    enum { PRED_HANDOFF, MEAS_HANDOFF, PRED_EDGES, MEAS_EDGES, N_MEDIANS };
    timeline_facts predicted = {0}, measured = {0};
    double *column[N_MEDIANS];
    column[0] = malloc(N_MEDIANS * (size_t)rs->n * sizeof *column[0] + 1);
    for (int q = 1; q < N_MEDIANS; q++)
        column[q] = column[0] ? column[q - 1] + rs->n : NULL;
    int n = 0;
    for (int i = 0; column[0] && i < rs->n; i++) {
        const breakdown *b = &rs->v[i].breakdown;
        if (rs->v[i].cluster != c)
            continue;
        for (int k = 0; k < N_CLASSES; k++) {
            predicted.busy[k] += b->predicted.busy[k];
            measured.busy[k] += b->measured.busy[k];
        }
        measured.handoffs += b->measured.handoffs;
        column[PRED_HANDOFF][n] = isnan(b->predicted.handoff) ? 0 : b->predicted.handoff;
        column[MEAS_HANDOFF][n] = isnan(b->measured.handoff) ? 0 : b->measured.handoff;
        column[PRED_EDGES][n] = b->predicted.edges;
        column[MEAS_EDGES][n++] = b->measured.edges;
    }
    if (n > 0) {
        predicted.handoff = pl_quantile(column[PRED_HANDOFF], n, 0.5);
        measured.handoff = pl_quantile(column[MEAS_HANDOFF], n, 0.5);
        predicted.edges = pl_quantile(column[PRED_EDGES], n, 0.5);
        measured.edges = pl_quantile(column[MEAS_EDGES], n, 0.5);
        accuracy a = summarise(o, rs, (filter){-1, c, -1, -1, AGAINST_MEDIAN});
        printf("%-30.30s", o->clusters[c]);
        print_percent(a.bias, true);
        print_breakdown_columns(&predicted, &measured);
        printf("\n");
    }
    free(column[0]);
}

/* The row's plan with the largest |e|. */
static const result *worst_of_row(const results *rs, const row *w)
{
    const result *worst = NULL;
    for (int i = 0; i < w->n; i++) {
        const result *r = &rs->v[w->first + i];
        if (!worst || fabs(relative_error(r, false)) > fabs(relative_error(worst, false)))
            worst = r;
    }
    return worst;
}

/* The median, least and greatest of n ratios, or dashes for none. */
static void print_ratio_spread(double *v, int n)
{
    if (n == 0) {
        printf(" %7s %15s", "-", "-");
        return;
    }
    double least = v[0], most = v[0];
    for (int i = 1; i < n; i++) {
        least = v[i] < least ? v[i] : least;
        most = v[i] > most ? v[i] : most;
    }
    printf(" %6.3fx  %5.3f..%5.3fx", pl_quantile(v, n, 0.5), least, most);
}

/* Per cluster and size, over the plans that split ops without a pipeline (whose copies
 * then all move parts between layouts): the collectives' measured task seconds over the
 * model's, ops and copies apart, per plan. */
static void print_collectives(const options *o, const results *rs)
{
    printf("\ncollectives of plans that split ops (kind \"split ops\"): per plan, the measured "
           "over the\nmodelled seconds of the collective ops (concatenations, splits, sums, "
           "slices and their\ngradients), of the copies that move the parts, and of both; "
           "median (least..greatest) over plans\n");
    printf("%-21s %5s %24s %24s %24s\n", "cluster, size", "plans", "collective ops m/p",
           "copies m/p", "both m/p");
    double *ops = malloc(3 * (size_t)rs->n * sizeof *ops + 1), *copies = ops + rs->n,
           *both = copies + rs->n;
    for (int c = 0; ops && c < o->n_clusters; c++)
        for (int size = 0; size < N_SIZES; size++) {
            int n_ops = 0, n_copies = 0, n_both = 0, n = 0;
            for (int i = 0; i < rs->n; i++) {
                const result *r = &rs->v[i];
                if (r->cluster != c || (int)r->size != size || r->kind != SPLIT)
                    continue;
                const timeline_facts *m = &r->breakdown.measured, *q = &r->breakdown.predicted;
                n++;
                if (q->busy[COLLECTIVE] > 0)
                    ops[n_ops++] = m->busy[COLLECTIVE] / q->busy[COLLECTIVE];
                if (q->busy[COPY] > 0)
                    copies[n_copies++] = m->busy[COPY] / q->busy[COPY];
                if (q->busy[COLLECTIVE] + q->busy[COPY] > 0)
                    both[n_both++] = (m->busy[COLLECTIVE] + m->busy[COPY]) /
                                     (q->busy[COLLECTIVE] + q->busy[COPY]);
            }
            if (n == 0)
                continue;
            char name[64];
            snprintf(name, sizeof name, "%.14s, %s", o->clusters[c], size_names[size]);
            printf("%-21.21s %5d", name, n);
            print_ratio_spread(ops, n_ops);
            print_ratio_spread(copies, n_copies);
            print_ratio_spread(both, n_both);
            printf("\n");
        }
    free(ops);
}

static void print_breakdown(const options *o, const results *rs)
{
    printf("\n== 2. Breakdown: the last measured step's timeline against the simulated one "
           "of the same program\n"
           "   m/p: measured over predicted task seconds, summed, of forward, backward and "
           "update ops,\n   collectives (the ops a split plan inserts between layouts) and copies;\n"
           "   hand-off: median delay from a task's last dependency ending on another "
           "device or link to its start\n   (n: measured hand-offs); edges: the first "
           "task's start plus the wait after the last task\n");
    print_breakdown_heading("cluster, all plans (e: bias)");
    for (int c = 0; c < o->n_clusters; c++)
        print_cluster_breakdown(o, rs, c);
    printf("\n");
    print_breakdown_heading("worst plan of each row");
    for (int w = 0; w < rs->n_rows; w++) {
        const result *r = worst_of_row(rs, &rs->rows[w]);
        if (!r)
            continue;
        char what[64];
        snprintf(what, sizeof what, "%.11s %.7s %s", o->models[rs->rows[w].model],
                 o->clusters[rs->rows[w].cluster], r->label);
        printf("%-30.30s", what);
        print_percent(relative_error(r, false), true);
        print_breakdown_columns(&r->breakdown.predicted, &r->breakdown.measured);
        printf("\n");
    }
    print_collectives(o, rs);
}

/* ---- table 1: one row ---------------------------------------------------------------------- */

static pl_status add_result(results *rs, const candidate *k, int cluster, bool native,
                            size_class size, double bound, pl_error *err)
{
    result *v = grow(rs->v, rs->n, &rs->cap, sizeof *v);
    if (!v)
        return out_of_memory(err);
    rs->v = v;
    result *r = &rs->v[rs->n++];
    *r = (result){.row = rs->n_rows, .cluster = cluster, .native = native, .size = size,
                  .kind = k->kind,
                  .predicted = k->predicted, .unprobed = k->unprobed, .apart = k->apart,
                  .measured = measured_quantile(k, 0, 1, 0.5),
                  .quiet = measured_quantile(k, 0, 1, 0.25),
                  .halves = {measured_quantile(k, 0, 2, 0.5), measured_quantile(k, 1, 2, 0.5)}, .bound = bound,
                  .breakdown = *k->breakdown};
    snprintf(r->label, sizeof r->label, "%s", k->label);
    return PL_OK;
}

/* On native devices, as the main job does (probe.h): the machine's speed now, probed with
 * the row's model, as `probed`'s speed; `apart` the same with no op slowed by another. */
static pl_status probe_row(const options *o, const char *model, const pl_cost_model *m,
                           pl_cost_model *probed, pl_cost_model *apart, pl_probe *probe,
                           pl_error *err)
{
    double speed;
    pl_status status = bench_probe(o->top, model, m, probe, &speed, err);
    *probed = *m; /* its measurements borrowed */
    probed->speed = speed;
    *apart = *probed;
    for (int t = 1; t <= PL_COST_MAX_THREADS; t++)
        for (int k = 0; k <= PL_OP_COUNT; k++)
            apart->ops[t][k].together = 0;
    return status;
}

/* Simulates a row's candidates, measures the chosen ones and records them. */
static pl_status measure_row(const options *o, results *rs, row *w, const pl_graph *g,
                             const pl_cluster *c, const pl_cost_model *m, pl_error *err)
{
    candidates cs = {0};
    double bound;
    bool native = !c->paced && !c->simulated;
    pl_cost_model *probed = native ? malloc(2 * sizeof *probed) : NULL; /* and apart */
    if (native && !probed)
        return out_of_memory(err);
    const pl_cost_model *as_profiled = m;
    pl_status status = native ? probe_row(o, o->models[w->model], m, probed, probed + 1,
                                          &w->probe, err)
                              : PL_OK;
    if (native)
        m = probed;
    bench b = {.c = c, .m = m};
    if (status == PL_OK)
        status = make_candidates(&cs, o, g, c, err);
    if (status == PL_OK)
        status = simulate_candidates(&cs, g, c, m, native ? as_profiled : NULL,
                                     native ? probed + 1 : NULL, err);
    if (status == PL_OK)
        status = pl_step_lower_bound(g, c, m, &bound, err);
    if (status == PL_OK) {
        choose(&cs, o, o->seed ^ g->hash, steps_per_measured(c, 0), &w->choice);
        w->candidates = cs.n;
        if (!(b.ex = bench_open_executor(g, c, err)))
            status = err->status;
    }
    if (status == PL_OK)
        status = measure_chosen(&b, &cs, &w->choice, o, &w->rounds, err);
    w->first = rs->n;
    for (int i = 0; i < w->choice.n && status == PL_OK; i++)
        status = add_result(rs, &cs.v[w->choice.chosen[i]], w->cluster, !c->paced,
                            size_of(o->models[w->model]), bound, err);
    w->n = rs->n - w->first;
    pl_executor_free(b.ex);
    candidates_free(&cs);
    free(probed);
    return status;
}

static pl_status accuracy_row(const options *o, results *rs, int model, int cluster,
                              const pl_cluster *c, const pl_cost_model *m, pl_error *err)
{
    row *rows = grow(rs->rows, rs->n_rows, &rs->rows_cap, sizeof *rows);
    if (!rows)
        return out_of_memory(err);
    rs->rows = rows;
    row *w = &rs->rows[rs->n_rows];
    *w = (row){.model = model, .cluster = cluster};
    double start = pl_now();
    pl_graph *g = open_training_graph(o, o->models[model], err);
    pl_status status = g ? measure_row(o, rs, w, g, c, m, err) : err->status;
    w->seconds = pl_now() - start;
    pl_graph_free(g);
    if (status == PL_OK)
        print_row(o, rs, rs->n_rows++);
    return status;
}

static pl_status table_accuracy(const options *o, pl_error *err)
{
    load_mark start = load_mark_now();
    results rs = {0};
    pl_cost_model *m = calloc(1, sizeof *m);
    pl_status status = m ? PL_OK : out_of_memory(err);
    for (int c = 0; c < o->n_clusters && status == PL_OK; c++) {
        pl_cluster *cluster = open_cluster(o, o->clusters[c], err);
        bool calibrated = false;
        double begin = pl_now();
        if (!cluster ||
            load_profile(m, cluster, o->calibrate && c == 0, &calibrated, err) != PL_OK)
            status = err->status;
        if (status == PL_OK && c == 0) {
            print_profile(m, calibrated, pl_now() - begin);
            print_accuracy_heading(o);
        }
        for (int k = 0; k < o->n_models && status == PL_OK; k++)
            status = accuracy_row(o, &rs, k, c, cluster, m, err);
        pl_cluster_free(cluster);
    }
    if (status == PL_OK && rs.n > 0) {
        print_summaries(o, &rs);
        print_breakdown(o, &rs);
        print_load_since(&start);
    }
    if (m)
        pl_cost_model_clear(m);
    free(m);
    free(rs.v);
    free(rs.rows);
    return status;
}

/* ---- table 3: speed --------------------------------------------------------------------------- */

/* What the speed table times: one call of pl_program_new (and its free) or pl_simulate. */
typedef struct timed {
    const pl_graph *g;
    const pl_cluster *c;
    const pl_plan *plan;
    const pl_cost_model *m;
    const pl_program *p;
    bool compile; /* time pl_program_new, else pl_simulate */
} timed;

static pl_status timed_call(const timed *t, pl_error *err)
{
    if (t->compile) {
        pl_program *p = pl_program_new(t->g, t->c, t->plan, err);
        pl_program_free(p);
        return p ? PL_OK : err->status;
    }
    pl_simulation sim;
    return pl_simulate(t->p, t->c, t->m, &sim, NULL, NULL, err);
}

/* Seconds per call: the median of TIMED_BATCHES batches, each of as many calls as last
 * MIN_BATCH_SECONDS (one call when a call alone does). */
static pl_status time_calls(const timed *t, double *seconds, pl_error *err)
{
    int calls = 1;
    double took = 0, per_call[TIMED_BATCHES];
    for (;; calls *= 2) { /* also the warm-up */
        double start = pl_now();
        for (int i = 0; i < calls; i++)
            if (timed_call(t, err) != PL_OK)
                return err->status;
        if ((took = pl_now() - start) >= MIN_BATCH_SECONDS)
            break;
    }
    for (int b = 0; b < TIMED_BATCHES; b++) {
        double start = pl_now();
        for (int i = 0; i < calls; i++)
            if (timed_call(t, err) != PL_OK)
                return err->status;
        per_call[b] = (pl_now() - start) / calls;
    }
    *seconds = pl_quantile(per_call, TIMED_BATCHES, 0.5);
    return PL_OK;
}

typedef struct speed {
    int tasks;
    double compile, simulate; /* seconds per call */
} speed;

/* pl_program_new and pl_simulate of `plan`, timed apart. */
static pl_status time_plan(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                           const pl_plan *plan, speed *s, pl_error *err)
{
    timed t = {.g = g, .c = c, .plan = plan, .m = m, .compile = true};
    pl_program *p = pl_program_new(g, c, plan, err);
    if (!p)
        return err->status;
    s->tasks = p->n_tasks;
    pl_status status = time_calls(&t, &s->compile, err);
    t.p = p;
    t.compile = false;
    if (status == PL_OK)
        status = time_calls(&t, &s->simulate, err);
    pl_program_free(p);
    return status;
}

enum { SPEED_STAGES = 4, SPEED_MICRO_BATCHES = 4 };

static void print_speed_row(const pl_graph *g, const char *what, const speed *s)
{
    printf("%-12.12s %7d %-26s %7d %12.3f %11.3f %12.0f %12.0f\n", g->name, g->n_ops, what,
           s->tasks, s->compile * 1e3, s->simulate * 1e3, 1 / s->simulate,
           1 / (s->compile + s->simulate));
}

/* One device, then SPEED_STAGES stages of SPEED_MICRO_BATCHES micro-batches, of one model;
 * s[0] and s[1] get them. */
static pl_status speed_model(const options *o, const char *path, const pl_cluster *c,
                             const pl_cost_model *m, speed s[2], pl_error *err)
{
    pl_graph *g = open_training_graph(o, path, err);
    if (!g)
        return err->status;
    int micro = g->batch_size % SPEED_MICRO_BATCHES == 0 ? SPEED_MICRO_BATCHES : 1;
    pl_plan *one = one_device_plan(g, 1, err);
    pl_plan *piped = one ? pipeline_plan(g, SPEED_STAGES, micro, PL_SCHEDULE_1F1B, err) : NULL;
    pl_status status = piped ? PL_OK : err->status != PL_OK ? err->status
                       : pl_error_set(err, PL_EINPUT, NULL, "%s: too few ops for %d stages",
                                      path, SPEED_STAGES);
    if (status == PL_OK)
        status = time_plan(g, c, m, one, &s[0], err);
    if (status == PL_OK)
        print_speed_row(g, "one device", &s[0]);
    if (status == PL_OK)
        status = time_plan(g, c, m, piped, &s[1], err);
    if (status == PL_OK) {
        char what[64];
        snprintf(what, sizeof what, "%d stages, %d micro-batches", SPEED_STAGES, micro);
        print_speed_row(g, what, &s[1]);
    }
    pl_plan_free(one);
    pl_plan_free(piped);
    pl_graph_free(g);
    return status;
}

static void print_speed_verdict(const speed small[2], const speed large[2])
{
    double one = 1 / small[0].simulate, piped = 1 / small[1].simulate;
    printf("targets: >= %.0f simulated steps/s at ~100 ops: %.0f on one device, %.0f as a "
           "pipeline (%d tasks), %s;\n   <= %.0f ms at ~100,000 ops: pl_simulate %.1f ms, "
           "with pl_program_new %.1f ms (one device), %s\n", TARGET_STEPS_PER_SECOND, one,
           piped, small[1].tasks, piped >= TARGET_STEPS_PER_SECOND ? "met by both"
           : one >= TARGET_STEPS_PER_SECOND ? "met on one device only" : "NOT met",
           TARGET_LARGE_SECONDS * 1e3, large[0].simulate * 1e3,
           (large[0].compile + large[0].simulate) * 1e3,
           large[0].compile + large[0].simulate <= TARGET_LARGE_SECONDS ? "met with both"
           : large[0].simulate <= TARGET_LARGE_SECONDS ? "met by pl_simulate alone" : "NOT met");
}

static pl_status table_speed(const options *o, pl_error *err)
{
    load_mark start = load_mark_now();
    pl_cost_model *m = calloc(1, sizeof *m);
    pl_cluster *c = open_cluster(o, "paced-4", err);
    bool calibrated;
    speed small[2], large[2];
    pl_status status = !m ? out_of_memory(err) : !c ? err->status : PL_OK;
    if (status == PL_OK)
        status = load_profile(m, c, false, &calibrated, err);
    if (status == PL_OK) {
        printf("\n== 3. Speed: one call of pl_program_new and of pl_simulate (median of %d "
               "timed batches), on paced-4\n", TIMED_BATCHES);
        printf("%-12s %7s %-26s %7s %12s %11s %12s %12s\n", "model", "ops", "plan", "tasks",
               "program ms", "simulate ms", "sim steps/s", "with program");
        status = speed_model(o, o->chain_100, c, m, small, err);
    }
    if (status == PL_OK)
        status = speed_model(o, o->chain_100k, c, m, large, err);
    if (status == PL_OK) {
        print_speed_verdict(small, large);
        print_load_since(&start);
    }
    pl_cluster_free(c);
    if (m)
        pl_cost_model_clear(m);
    free(m);
    return status;
}

/* ---- main ------------------------------------------------------------------------------ */

static bool parse_seconds(const char *text, double *value)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v > 0 && v <= 3600))
        return false;
    *value = v;
    return true;
}

static bool parse_tables(const char *text, bool run[N_TABLES])
{
    char names[MAX_LIST][MAX_NAME];
    int n;
    if (!bench_split_list(text, names, &n))
        return false;
    memset(run, 0, N_TABLES * sizeof *run);
    for (int i = 0; i < n; i++) {
        int t = 0;
        while (t < N_TABLES && strcmp(names[i], table_names[t]) != 0)
            t++;
        if (t == N_TABLES)
            return false;
        run[t] = true;
    }
    return true;
}

static void set_list(char names[MAX_LIST][MAX_NAME], int *n, const char *const *from, int count)
{
    *n = count;
    for (int i = 0; i < count; i++)
        snprintf(names[i], MAX_NAME, "%s", from[i]);
}

/* The models of the size classes asked for: the suite's, graphs/small's, or both. */
static void set_sizes(options *o, bool full, bool small)
{
    enum { N_SUITE = sizeof suite_models / sizeof *suite_models };
    o->n_models = 0;
    for (int i = 0; i < N_SUITE; i++) {
        if (full)
            snprintf(o->models[o->n_models++], MAX_NAME, "%s", suite_models[i]);
        if (small)
            snprintf(o->models[o->n_models++], MAX_NAME, "%s", small_models[i]);
    }
}

static bool parse_sizes(options *o, const char *text)
{
    char names[MAX_LIST][MAX_NAME];
    int n;
    bool full = false, small = false;
    if (!bench_split_list(text, names, &n))
        return false;
    for (int i = 0; i < n; i++) {
        full = full || strcmp(names[i], "full") == 0;
        small = small || strcmp(names[i], "small") == 0;
        if (strcmp(names[i], "full") != 0 && strcmp(names[i], "small") != 0)
            return false;
    }
    set_sizes(o, full, small);
    return true;
}

/* A list of kinds by their abbreviations into a bit set. */
static bool parse_kinds(const char *value, unsigned *kinds)
{
    char names[MAX_LIST][MAX_NAME];
    int n = 0;
    if (!bench_split_list(value, names, &n))
        return false;
    *kinds = 0;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < N_KINDS && strcmp(names[i], kind_abbreviations[k]) != 0)
            k++;
        if (k == N_KINDS)
            return false;
        *kinds |= 1u << k;
    }
    return n > 0;
}

static void set_defaults(options *o)
{
    *o = (options){.top = ".", .plans = 12, .steps = 3, .warmup = 1, .max_step = 1.5,
                   .budget = 20, .seed = 1, .kinds = (1u << N_KINDS) - 1};
    set_sizes(o, true, true);
    set_list(o->clusters, &o->n_clusters, bundled_clusters,
             sizeof bundled_clusters / sizeof *bundled_clusters);
    for (int t = 0; t < N_TABLES; t++)
        o->run[t] = true;
}

/* --quick: a smaller run; options given anyway override it, in order. */
static void set_quick(options *o)
{
    set_list(o->models, &o->n_models, quick_models, sizeof quick_models / sizeof *quick_models);
    o->plans = 4;
    o->steps = 2;
    o->max_step = 0.5;
    o->budget = 3;
}

/* One option with its value (NULL when it takes none); false when it is wrong. */
static bool parse_option(options *o, const char *arg, const char *value, bool *used_value)
{
    int seed;
    *used_value = value != NULL;
    if (strcmp(arg, "--calibrate") == 0 || strcmp(arg, "--quick") == 0 || strcmp(arg, "-v") == 0) {
        *used_value = false;
        if (arg[2] == 'c')
            o->calibrate = true;
        else if (arg[2] == 'q')
            set_quick(o);
        else
            o->verbose = true;
        return true;
    }
    if (!value)
        return false;
    if (strcmp(arg, "--top") == 0)
        o->top = value;
    else if (strcmp(arg, "--chain-100") == 0)
        o->chain_100 = value;
    else if (strcmp(arg, "--chain-100k") == 0)
        o->chain_100k = value;
    else if (strcmp(arg, "--models") == 0)
        return bench_split_list(value, o->models, &o->n_models);
    else if (strcmp(arg, "--sizes") == 0)
        return parse_sizes(o, value);
    else if (strcmp(arg, "--clusters") == 0)
        return bench_split_list(value, o->clusters, &o->n_clusters);
    else if (strcmp(arg, "--plans") == 0)
        return bench_parse_int(value, 2, MAX_PLANS, &o->plans);
    else if (strcmp(arg, "--steps") == 0)
        return bench_parse_int(value, 1, MAX_STEPS, &o->steps);
    else if (strcmp(arg, "--warmup") == 0)
        return bench_parse_int(value, 0, 10, &o->warmup);
    else if (strcmp(arg, "--max-step") == 0)
        return parse_seconds(value, &o->max_step);
    else if (strcmp(arg, "--budget") == 0)
        return parse_seconds(value, &o->budget);
    else if (strcmp(arg, "--seed") == 0 && bench_parse_int(value, 0, 1 << 30, &seed))
        o->seed = (uint64_t)seed;
    else if (strcmp(arg, "--only") == 0)
        return parse_tables(value, o->run);
    else if (strcmp(arg, "--kinds") == 0)
        return parse_kinds(value, &o->kinds);
    else
        return false;
    return true;
}

static bool parse_options(int argc, char **argv, options *o)
{
    set_defaults(o);
    for (int i = 1; i < argc; i++) {
        bool used_value;
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (!parse_option(o, argv[i], value, &used_value)) {
            fprintf(stderr, "sim: bad option or value: %s%s%s\n", argv[i], value ? " " : "",
                    value ? value : "");
            return false;
        }
        i += used_value;
    }
    if (o->run[SPEED] && (!o->chain_100 || !o->chain_100k)) {
        fprintf(stderr, "sim: the speed table needs --chain-100 and --chain-100k "
                        "(tools/gen-chain)\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    pl_allocator_keep_freed(); /* as placer does */
    static pl_status (*const tables[N_TABLES])(const options *, pl_error *) = {table_accuracy,
                                                                              table_speed};
    options o;
    if (argc == 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (!parse_options(argc, argv, &o)) {
        usage(stderr);
        return 2;
    }
    for (int t = 0; t < N_TABLES; t++) {
        pl_error err;
        pl_error_init(&err, NULL);
        if (o.run[t] && tables[t](&o, &err) != PL_OK) {
            print_error(&err);
            return 1;
        }
        fflush(stdout);
    }
    return 0;
}
