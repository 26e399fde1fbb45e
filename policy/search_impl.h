/* What the search's two files share: the state of one call (search.c drives the protocol,
 * search_measure.c measures on the executor). Private to policy/. */
#ifndef PLACER_SEARCH_IMPL_H
#define PLACER_SEARCH_IMPL_H

#include "executor.h"
#include "search.h"

typedef struct pl_search_call {
    const pl_graph *graph;
    const pl_cluster *cluster;
    const pl_cost_model *model;
    const pl_search_options *options;
    pl_search_progress progress;
    void *context;
    const volatile sig_atomic_t *interrupt;
    pl_executor *executor; /* NULL when the call only simulates */
    pl_search *result;
    double start;          /* what the budget counts from */
    bool reads_load;       /* an executor of one process: the machine's load is read */
    bool read_before;      /* the load before the first measurement was read */
    pl_machine_cpu executor_started; /* the machine's CPU when the executor was made */
    pl_error *err;
} pl_search_call;

/* The caller's flag, or (over processes) another rank's, learnt at a step's end. */
static inline bool pl_search__interrupted(const pl_search_call *call)
{
    return (call->interrupt && *call->interrupt) ||
           (call->executor && pl_executor_interrupted(call->executor));
}

/* Tells the caller; `event` has its kind and fields, the rest is filled in here. */
void pl_search__tell(const pl_search_call *call, pl_search_event event);

/* Simulates a row's plan; sets its fits. */
pl_status pl_search__simulate_row(pl_search_call *call, pl_search_row *row);

/* Measures a row's plan on the executor (one warm-up step, then the median of
 * measure_steps); a plan that does not fit the executor's memory is marked so. */
pl_status pl_search__measure_row(pl_search_call *call, pl_search_row *row);

/* Measures the agent's best plan when it is new since *last_key, and corrects the
 * simulator with it. */
pl_status pl_search__measure_agent_best(pl_search_call *call, uint64_t *last_key);

/* The final measurement of the contenders, taking turns step by step. */
pl_status pl_search__head_to_head(pl_search_call *call);

/* The agent's rows the head-to-head measures, at most (search.c, add_agent_rows). */
enum { PL_SEARCH_AGENT_ROWS = 3 };

/* The seconds the head-to-head needs at least: its fewest rounds of the best baseline and
 * the agent's rows, every step taken as long as the best baseline's (the agent's plans are
 * seldom slower), a quarter more for setting the plans. */
double pl_search__head_to_head_seconds(const pl_search_call *call);

/* How busy the machine was: before the first measurement (once), and during one
 * (`load`) into the result's pool and worst. */
void pl_search__load_before(pl_search_call *call);
void pl_search__load_during(pl_search_call *call, const pl_machine_load *load);

/* The chosen plan's busy time per device in one more measured step. */
void pl_search__measure_busy(pl_search_call *call);

#endif
