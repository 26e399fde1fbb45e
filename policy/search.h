/* The placement search: what `placer MODEL.json` does between loading the model and
 * writing the plan, as one call that the command line, the benchmarks and the tests share.
 *
 * The protocol (docs/agent.md):
 *   1. every baseline (baseline.h) places the training graph and is simulated; the
 *      executor measures the three fastest by simulation, and the best baseline is the
 *      fastest measured (the fastest simulated when the call only simulates);
 *   2. the agent (agent.h) starts: a new one, offered every baseline that fits (megatron's
 *      split and recomputing plans too) and imitating the best, or one read
 *      back from a checkpoint (read first of all, before the baselines: a checkpoint that
 *      cannot be resumed fails the call at once);
 *   3. it iterates until its iterations are done, its share of the budget is spent, the
 *      interrupt flag is set, or it has converged: no better plan for PL_SEARCH_STALE
 *      iterations (and for a third of all its iterations) while, over the last
 *      PL_SEARCH_ENTROPY_WINDOW iterations, the policy's mean entropy per decision is below
 *      PL_SEARCH_COLLAPSED_ENTROPY or the mean simulated step of its samples is within
 *      PL_SEARCH_SAME_STEP of the best plan's (it samples plans as good as its best, and
 *      the choices it keeps open make no difference); every few
 *      seconds the executor measures the agent's best plan when it is new (correcting the
 *      simulator), and the checkpoint is saved;
 *   4. the agent's two best distinct plans and its lead (docs/agent.md) become rows, and
 *      are measured head to head with the best baseline, taking turns step by step; the
 *      chosen row is the fastest measured (the fastest simulated when nothing was), and
 *      the executor measures its busy time per device.
 * Every measurement follows the executor's protocol (measure.h): a plan's steps that ran
 * at two speeds or drifted are measured again, a few rounds at most, and a row keeps its
 * series (`series`: spreads, and whether it stayed unstable). An unstable measurement does
 * not correct the simulator. The head-to-head examines each contender's steps too, goes
 * on past the budget while one is unstable and its rounds are short, and sets
 * `choice_unstable` when the choice rests on an unstable measurement.
 * How busy the machine was (machine_load.h): before its first measurement the search reads
 * the machine's load over at least PL_SEARCH_LOAD_BEFORE_SECONDS from the executor's start
 * (sleeping what placing the baselines did not take), and during every measurement; each
 * measured row keeps others' share during its measurement (the head-to-head's contenders,
 * over the whole head-to-head), and the result the load pooled over every measurement and
 * the highest share of one lasting PL_MACHINE_LOAD_MIN_SECONDS or more. Over several
 * processes (options->comm) the other ranks would count as others: nothing is read there.
 * Simulating only (pl_search_options.simulate_only) skips every measurement: no executor
 * is made, and the result depends on the code, the cost model and the seed alone.
 *
 * Interrupts: the search polls `*interrupt` (a signal handler's flag) between its steps,
 * and the executor polls it during a paced step (executor.h), ending the step early: a
 * measurement cut short measures nothing. Once it is set, the search places baselines
 * only until one fits, measures nothing more, lets the agent iterate no more, and returns
 * the best plan so far with `interrupted` set.
 *
 * Budget: a measurement (or a round of the head-to-head) that would take more than
 * PL_SEARCH_SHORT_SECONDS and end after the budget is skipped (the plan stays unmeasured),
 * so that one slow plan cannot hold the search far beyond it; shorter ones run as before.
 * Its length is the longer of the simulated step and a step measured before (a large
 * graph's step costs more than the simulator says), and a head-to-head round's also what
 * the last one took. Once the agent's share of the budget is spent (below) and some baseline fits,
 * no more baselines are placed or measured, the agent's offers and imitation stop, and
 * no iteration starts: `skipped` says which phases were cut short.
 *
 * The checkpoint: failing to save it (a full disk) does not fail the search: the first
 * failure is kept in `checkpoint_failure` and told (PL_SEARCH_CHECKPOINT_FAILED), the
 * search saves no more and goes on to its result.
 *
 * Errors: `err` keeps its source (the caller names it: the model's file, say), except
 * that an error reading the checkpoint to resume from names that file. A baseline that
 * fails is a row with its reason, not an error. No plan that fits is a result, not an
 * error: `chosen` is -1.
 *
 * Ownership: the graph (a training graph, autodiff.h), the cluster, the cost model and
 * the options are borrowed for the call; the result is new and owns its plans and its
 * agent (pl_search_free). Thread-safety: a call makes and drives its own executor and
 * agent, and runs the progress callback on the calling thread; calls on separate results
 * may run at once, though measurements on one machine then disturb each other. */
#ifndef PLACER_SEARCH_H
#define PLACER_SEARCH_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "baseline.h"
#include "bound.h"
#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "machine_load.h"
#include "measure.h"
#include "plan.h"
#include "simulate.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { PL_SEARCH_MAX_ROWS = 24, PL_SEARCH_STALE = 200, PL_SEARCH_ENTROPY_WINDOW = 50 };
/* Work shorter than this always runs, even past the budget (a caller's too: a drawing) */
#define PL_SEARCH_SHORT_SECONDS 1.0
#define PL_SEARCH_COLLAPSED_ENTROPY 0.05 /* nats per decision */
#define PL_SEARCH_SAME_STEP 0.005         /* samples this close to the best plan's step */

/* Why the agent stopped iterating. */
typedef enum pl_search_stop {
    PL_SEARCH_STOP_BUDGET,      /* its share of the budget spent */
    PL_SEARCH_STOP_ITERATIONS,  /* the iterations asked for done */
    PL_SEARCH_STOP_CONVERGED,   /* converged (above) */
    PL_SEARCH_STOP_INTERRUPTED, /* the interrupt flag */
} pl_search_stop;

typedef struct pl_search_options {
    double budget;      /* seconds for the whole search, measurements included, counted from
                           `start` (default 60); 0: no limit (`iterations` must be set, and
                           the head-to-head takes its fewest rounds) */
    double start;       /* the pl_now() instant the budget counts from (clock.h), for a
                           caller that spent part of it before (loading, calibrating); 0:
                           the call's start */
    uint64_t seed;      /* the baselines' and the agent's (default 1) */
    int iterations;     /* the agent's iterations in all, a resumed agent's included; 0: as
                           many as the budget allows (default) */
    double search_seconds; /* the most the agent may take from its start (imitation and
                              iterations), within the budget; 0: what the budget leaves
                              (default) */
    int samples;        /* plans the agent draws per iteration (default 32) */
    int measure_steps;  /* measured steps per measurement of a plan (default 3) */
    bool no_fold, no_defer, no_sweep; /* the agent's shapes: no interleaved stages, no
                                         deferred weight gradients, no shape sweeps */
    bool no_refine;     /* no refinement of the agent's best plan */
    bool no_replicas;   /* no replicated plans: neither the replicated baselines (their rows
                           say so) nor the agent's replication */
    bool no_learning;   /* the agent's search without its learned policy (agent.h) */
    const pl_policy_weights *policy; /* the weights a new agent's policy starts from (its
                                        hidden width, rounds and groups with them), or NULL
                                        (default): fresh ones from the seed */
    bool zero_shot;     /* the policy sampled as it is: no baselines offered or imitated, no
                           training (agent.h: train); its best samples still swept and
                           refined unless no_sweep, no_refine say otherwise */
    const char *resume; /* an agent checkpoint of the same graph, cluster, seed and samples
                           to continue from, or NULL (default) */
    const char *checkpoint; /* where to save the agent's checkpoint, or NULL (default) */
    bool simulate_only; /* no executor: nothing measured */
    pl_comm *comm;      /* the processes of a cluster with ranks: this is rank 0, which leads
                           the others' executors (executor.h); NULL: one process */
    bool run_to_budget; /* iterate until the budget or the iterations are spent, even once
                           the search has converged (default false: it stops early) */
} pl_search_options;

/* The defaults above. */
void pl_search_options_default(pl_search_options *options);

/* One candidate plan: a baseline or one of the agent's. */
typedef struct pl_search_row {
    char name[96];        /* the baseline's ("pipeline-dp") or "agent #2 (origin)" */
    pl_plan *plan;        /* owned; NULL when the baseline failed */
    char failure[PL_ERROR_TEXT_MAX]; /* why, when it failed or was skipped */
    pl_baseline_misfit misfit; /* a baseline that failed for memory: how near its nearest
                                  plan came (device -1: none counted, or another failure) */
    bool baseline;
    bool skipped;         /* a baseline not placed: the budget was spent (failure says so) */
    bool reshaped;        /* the agent's: a baseline's placement under another shape */
    bool refined;         /* the agent's: improved by its refinement */
    pl_simulation sim;    /* valid with a plan */
    double measured;      /* median step on the executor, seconds; 0: not measured */
    pl_series series;     /* the measured steps, examined (measure.h): their spread and
                             whether they were unstable; valid when measured */
    int measure_rounds;   /* rounds that measurement took (measure.h); 1 for the
                             head-to-head's series */
    bool head_to_head;    /* measured last, taking turns with the other contenders */
    bool fits;            /* simulated, and measured when it was, within every device */
    pl_machine_load load; /* how busy the machine was during its measurement (the round
                             reported; the head-to-head's contenders: all its rounds);
                             unknown when not measured */
} pl_search_row;

/* A measured step more than this many times its simulated step was most likely disturbed
 * (another process on the cores) rather than the plan being slow: the report says so. */
#define PL_SEARCH_DISTURBED 3.0

/* Whether a row's measured step is beyond PL_SEARCH_DISTURBED times its simulated one. */
static inline bool pl_search_row_disturbed(const pl_search_row *row)
{
    return row->plan && row->measured > PL_SEARCH_DISTURBED * row->sim.step_seconds;
}

/* The least the search reads the machine's load before its first measurement, seconds. */
#define PL_SEARCH_LOAD_BEFORE_SECONDS 0.2

/* A measurement of the agent's best plan during the search. */
typedef struct pl_search_measurement {
    int iteration;  /* the agent's iterations done when it was taken */
    double at;      /* seconds from options->start */
    double seconds; /* the measured step */
} pl_search_measurement;

/* The phases of the protocol that the budget left no time for (pl_search.skipped), once
 * a plan that fits is known: a model too large for its budget still gets the best plan
 * the search could finish. */
enum {
    PL_SEARCH_SKIPPED_BASELINES = 1 << 0, /* some baselines not placed (their rows say) */
    PL_SEARCH_SKIPPED_MEASURING = 1 << 1, /* baselines not measured on the executor */
    PL_SEARCH_SKIPPED_AGENT = 1 << 2,     /* the agent not started (`agent` NULL), or its
                                             imitation or offers cut short */
    PL_SEARCH_SKIPPED_HEAD_TO_HEAD = 1 << 3, /* no final measurement of the contenders */
};

/* The result, and the state of the search as the progress callback sees it. */
typedef struct pl_search {
    int n_rows;
    pl_search_row rows[PL_SEARCH_MAX_ROWS]; /* the baselines in baseline.h's order, then
                                               the agent's */
    int chosen;           /* the row to use, or -1: no plan fits the cluster's memory
                             (the rows' misfit say how near the baselines came) */
    int best_baseline;    /* the best baseline's row, or -1 */
    int head_to_head_rounds; /* rounds of the final measurement, 0: none */
    bool choice_unstable; /* the chosen row's measurement, or that of the best baseline it
                             was compared with, was unstable (measure.h): the choice may not
                             hold on a quiet machine */
    pl_machine_load load_before;    /* before the first measurement (search.h, above) */
    pl_machine_load load_measuring; /* every measurement's, pooled */
    double load_worst;    /* others' highest share during one measurement of at least
                             PL_MACHINE_LOAD_MIN_SECONDS, 0 to 1; -1: none that long */
    double bound;         /* the lower bound on the step (bound.h), seconds */
    pl_bound_parts bound_parts; /* the bound's parts (bound.h) */
    double agent_measured; /* the fastest step measured of the agent's best plans during
                              the search, seconds; 0: none */
    pl_agent *agent;      /* owned: its curve and correction; NULL until it starts, and
                             after the search when the budget left no time for it */
    double measured_busy[PL_MAX_DEVICES]; /* the chosen plan's busy seconds per device in
                                             one measured step; 0 when not measured */
    double measured_busy_step; /* that step's seconds (its utilisation's denominator) */
    int measured_tasks;        /* that step's tasks (the chosen plan's program, as
                                  pl_program_new builds it), 0 when not measured */
    double *measured_starts, *measured_ends; /* [measured_tasks]: seconds from the step's
                                                start, for a timeline */
    double elapsed;       /* seconds from options->start to the end */
    double slowest_placing; /* seconds the slowest baseline took to place and simulate
                               its plan: about what one more program and simulation of
                               this graph costs (a drawing's, a baseline's) */
    double agent_started; /* seconds from options->start to the agent's start (its
                             imitation and iterations follow) */
    pl_search_stop stopped; /* why the agent stopped iterating (valid once it has) */
    /* This call's history, for curves over time: iteration first_timed + i ended at
       iteration_at[i] seconds from options->start (a resumed agent's earlier iterations
       have no time here); the agent's best plan measured n_measurements times. */
    int first_timed, n_timed, timed_cap;
    double *iteration_at;
    int n_measurements, measurements_cap;
    pl_search_measurement *measurements;
    bool interrupted;
    unsigned skipped;     /* the phases cut short for time: PL_SEARCH_SKIPPED_* bits */
    char checkpoint_failure[PL_ERROR_TEXT_MAX]; /* why options->checkpoint could not be
                                                   saved ("cannot write PATH: REASON"), or
                                                   "" */
} pl_search;

/* The load the search's measurements are judged by (pl_machine_load_disturbed): every
 * measurement's, pooled, and when they lasted under PL_MACHINE_LOAD_MIN_SECONDS in all
 * (too few clock ticks to judge), the reading before them too (pl_machine_load_judged). */
static inline pl_machine_load pl_search_judged_load(const pl_search *search)
{
    return pl_machine_load_judged(&search->load_measuring, &search->load_before);
}

typedef enum pl_search_event_kind {
    PL_SEARCH_STARTED,        /* the lower bound is known; nothing placed yet */
    PL_SEARCH_BASELINE,       /* rows[row]: a baseline placed and simulated, or failed */
    PL_SEARCH_MEASURED,       /* rows[row]: a baseline measured, or found not to fit the
                                 executor's memory (fits false) */
    PL_SEARCH_BASELINES_DONE, /* the baselines placed and measured, the best one known */
    PL_SEARCH_RESUMED,        /* the agent read back from options->resume */
    PL_SEARCH_NOT_IMITATING,  /* the best baseline of one replica cannot be imitated: why
                                 in `text` */
    PL_SEARCH_ITERATION,      /* the agent's `iteration` done */
    PL_SEARCH_AGENT_MEASURED, /* the agent's best plan measured: `measured` seconds */
    PL_SEARCH_AGENT_DONE,     /* the agent iterates no more */
    PL_SEARCH_HEAD_TO_HEAD,   /* round `round` of the final measurement done */
    PL_SEARCH_CHECKPOINT_FAILED, /* the checkpoint not saved: why in `text`; no more tries */
} pl_search_event_kind;

typedef struct pl_search_event {
    pl_search_event_kind kind;
    const pl_search *search;      /* the result so far */
    int row;                      /* BASELINE, MEASURED, NOT_IMITATING: the row; else -1 */
    pl_agent_iteration iteration; /* ITERATION */
    double measured;              /* AGENT_MEASURED */
    int round;                    /* HEAD_TO_HEAD: from 1 */
    const char *text;             /* NOT_IMITATING, CHECKPOINT_FAILED; else NULL */
} pl_search_event;

/* Called as the search goes, in the order of the protocol above; the event and what it
 * points to are valid during the call only. */
typedef void (*pl_search_progress)(void *context, const pl_search_event *event);

/* Runs the search. `progress` (may be NULL) receives the events with `context`;
 * `interrupt` (may be NULL) is polled. Returns the new result, or NULL with `err` filled
 * in (PL_EINPUT: options out of range, a checkpoint made for something else; PL_EIO: a
 * checkpoint not read; PL_ENOMEM). */
pl_search *pl_search_run(const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, const pl_search_options *options,
                         pl_search_progress progress, void *context,
                         const volatile sig_atomic_t *interrupt, pl_error *err);

/* Frees the result, its plans and its agent; NULL is a no-op. */
void pl_search_free(pl_search *search);

#ifdef __cplusplus
}
#endif

#endif
