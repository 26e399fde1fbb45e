/* The main job's pictures of the chosen plan's step (timeline.h): PREFIX.timeline.svg as
 * simulated and, when the search measured it, PREFIX.timeline-measured.svg as the
 * executor ran it. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "job.h"
#include "simulate.h"
#include "timeline.h"

static int write_one(const char *path, const pl_program *p, const pl_cluster *c,
                     const double *starts, const double *ends, double step, const char *title)
{
    pl_error err;
    pl_error_init(&err, path);
    return pl_timeline_write_file(path, p, c, starts, ends, step, title, &err) == PL_OK
               ? PL_EXIT_OK : pl_cli_report(&err);
}

int pl_job_write_timelines(const pl_job *job, const char *simulated_path,
                           const char *measured_path, bool *measured_written)
{
    const pl_search *s = job->search;
    const pl_search_row *chosen = &s->rows[s->chosen];
    *measured_written = false;
    pl_error err;
    pl_error_init(&err, job->model_path);
    pl_program *p = pl_program_new(job->graph, job->cluster, chosen->plan, &err);
    if (!p)
        return pl_cli_report(&err);
    double *starts = malloc((size_t)p->n_tasks * sizeof *starts + 1);
    double *ends = malloc((size_t)p->n_tasks * sizeof *ends + 1);
    pl_simulation sim;
    int status = PL_EXIT_FAILURE;
    char title[PL_MAX_NAME * 2 + 64];
    if (!starts || !ends) {
        fprintf(stderr, "placer: out of memory\n");
    } else if (pl_simulate(p, job->cluster, job->costs, &sim, starts, ends, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else {
        snprintf(title, sizeof title, "%s on %s, simulated", chosen->name, job->cluster->name);
        status = write_one(simulated_path, p, job->cluster, starts, ends, sim.step_seconds,
                           title);
    }
    /* the measured step's tasks are the same program's, as the executor built it */
    if (status == PL_EXIT_OK && s->measured_tasks == p->n_tasks) {
        snprintf(title, sizeof title, "%s on %s, measured", chosen->name, job->cluster->name);
        status = write_one(measured_path, p, job->cluster, s->measured_starts,
                           s->measured_ends, s->measured_busy_step, title);
        *measured_written = status == PL_EXIT_OK;
    }
    free(starts);
    free(ends);
    pl_program_free(p);
    return status;
}
