/* The main job's results, shared by its driver (cmd_main.c) and its report (report.c):
 * the search's result (policy/search.h) and what the command line adds to it. */
#ifndef PLACER_CLI_JOB_H
#define PLACER_CLI_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "graph.h"
#include "search.h"

typedef struct pl_job {
    const char *model_path;
    const pl_graph *graph;
    const pl_cluster *cluster;
    const char *command;  /* the exact command line */
    double budget;
    uint64_t seed;
    bool calibrated;
    const pl_search *search; /* borrowed */
} pl_job;

/* Writes PREFIX.report.md and PREFIX.curve.svg, atomically; exit status. */
int pl_job_write_report(const pl_job *job, const char *prefix);

#endif
