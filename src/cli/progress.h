/* What the main job prints while the search runs (policy/search.h's events), by the
 * --progress mode:
 * - live: on a terminal, one line rewritten in place (within 80 columns), ended when the
 *   agent stops;
 * - lines: for logs, a line at the first iteration, then one when the best plan improves
 *   (at most every PL_PROGRESS_BEST_EVERY seconds) and one every PL_PROGRESS_EVERY seconds
 *   without news;
 * - none: no iteration lines;
 * - auto (the default): live on a terminal, else lines.
 * The baselines, the agent's start and its end (how many iterations, and why it stopped)
 * are printed in every mode; -q prints none of it. */
#ifndef PLACER_CLI_PROGRESS_H
#define PLACER_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cluster.h"
#include "graph.h"
#include "search.h"

enum { PL_PROGRESS_BEST_EVERY = 2, PL_PROGRESS_EVERY = 10, PL_PROGRESS_COLUMNS = 79 };

typedef enum pl_progress_mode {
    PL_PROGRESS_AUTO,
    PL_PROGRESS_LIVE,
    PL_PROGRESS_LINES,
    PL_PROGRESS_NONE,
} pl_progress_mode;

typedef struct pl_progress {
    FILE *out;
    pl_progress_mode mode; /* never AUTO once pl_progress_init has run */
    bool quiet;
    const pl_graph *graph;
    const pl_cluster *cluster;
    const pl_search_options *options;
    double start;          /* pl_now() at the job's start */
    double last_line;      /* when the last iteration line was printed; 0: none yet */
    double shown_best, shown_measured; /* what the last line showed */
    bool line_open;        /* live: a line is being rewritten */
} pl_progress;

/* "auto", "live", "lines" or "none" into *mode; false for anything else. */
bool pl_progress_parse(const char *text, pl_progress_mode *mode);
/* Resolves AUTO by whether `out` is a terminal. */
void pl_progress_init(pl_progress *p, FILE *out, pl_progress_mode mode, bool quiet,
                      const pl_graph *graph, const pl_cluster *cluster,
                      const pl_search_options *options, double start);
/* Prints what `event` calls for. */
void pl_progress_event(pl_progress *p, const pl_search_event *event);
/* Why the search's agent stopped, in words ("converged (no better plan in the last 812
 * iterations; ...)"), into buf; returns buf. */
const char *pl_progress_stop_text(const pl_search *search, char *buf, size_t cap);
/* The phases the budget left no time for (pl_search.skipped), in words ("some baselines,
 * measuring the baselines"), into buf, or "" when none; returns buf. */
const char *pl_progress_skipped_text(const pl_search *search, char *buf, size_t cap);

#endif
