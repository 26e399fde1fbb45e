/* The main job's results, shared by its driver (cmd_main.c) and its report (report.c):
 * the search's result (policy/search.h) and what the command line adds to it. */
#ifndef PLACER_CLI_JOB_H
#define PLACER_CLI_JOB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster.h"
#include "cost_model.h"
#include "graph.h"
#include "probe.h"
#include "search.h"

typedef struct pl_job {
    const char *model_path;
    const pl_graph *graph;
    const pl_cluster *cluster;
    const char *command;  /* the exact command line */
    double budget;
    uint64_t seed;
    bool calibrated;
    const char *policy_path; /* the weights the policy started from; NULL: fresh ones */
    bool zero_shot;          /* the policy sampled without training (--zero-shot) */
    bool no_sweep, no_refine; /* --no-sweep, --no-refine */
    const pl_cost_model *costs; /* the profile the search simulated with */
    const char *op_times_path;  /* where costs->op_times came from; NULL: none */
    const pl_search *search; /* borrowed */
    bool no_drawings;        /* the budget was spent: the timelines are not drawn */
    bool probed;             /* the machine was probed (native devices): costs->speed */
    pl_probe probe;
    int ops_measured;        /* the graph's ops whose configuration the profile measured (at
                                the model's batch); -1: not counted (hardware) */
} pl_job;

/* Writes PREFIX.report.md, PREFIX.curve.svg (when the agent ran), the chosen plan's
 * PREFIX.timeline.svg and PREFIX.timeline-measured.svg (when measured; neither with
 * no_drawings) and PREFIX.summary.json, atomically; exit status. */
int pl_job_write_report(const pl_job *job, const char *prefix);
/* The chosen plan's step as SVG timelines (job_timeline.c): simulated, and measured when
 * the search measured it (*measured_written says). */
int pl_job_write_timelines(const pl_job *job, const char *simulated_path,
                           const char *measured_path, bool *measured_written);
/* The learning curve as SVG (curve.c); the search's agent must exist. */
void pl_job_write_curve(FILE *fp, const pl_job *job);
/* The job as JSON (summary.json): every row, the chosen plan's figures, the stop. */
int pl_job_write_summary(FILE *fp, const pl_job *job);

#endif
