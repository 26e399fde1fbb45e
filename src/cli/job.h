/* The main job's results, shared by its driver (cmd_main.c) and its report (report.c). */
#ifndef PLACER_CLI_JOB_H
#define PLACER_CLI_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "agent.h"
#include "cluster.h"
#include "error.h"
#include "graph.h"
#include "plan.h"
#include "simulate.h"

enum { PL_JOB_MAX_ROWS = 24 };

/* One candidate plan: a baseline or one of the agent's. */
typedef struct pl_job_row {
    char name[96];
    pl_plan *plan;        /* owned; NULL when the algorithm failed */
    char failure[PL_ERROR_TEXT_MAX]; /* why, when it failed */
    bool baseline;
    bool reshaped;        /* the agent's: a baseline's placement under another shape */
    bool refined;         /* the agent's: improved by its refinement */
    pl_simulation sim;    /* valid with a plan */
    double measured;      /* median step on the executor, 0 when not measured */
    bool head_to_head;    /* measured last, taking turns with the other contenders */
    bool fits;
} pl_job_row;

typedef struct pl_job {
    const char *model_path;
    const pl_graph *graph;
    const pl_cluster *cluster;
    const char *command;  /* the exact command line */
    double budget, elapsed, bound;
    uint64_t seed;
    bool interrupted, calibrated;
    int n_rows;
    pl_job_row rows[PL_JOB_MAX_ROWS];
    int chosen;           /* the row written as the plan */
    int best_baseline;    /* the row of the best measured baseline, or -1 */
    int head_to_head_rounds; /* rounds of the final measurement, 0: none */
    const pl_agent *agent;
    double measured_busy[PL_MAX_DEVICES]; /* the chosen plan's measured busy seconds */
} pl_job;

/* Writes PREFIX.report.md and PREFIX.curve.svg, atomically; exit status. */
int pl_job_write_report(const pl_job *job, const char *prefix);

#endif
