/* Loading speed: loads a model file repeatedly (after one warm-up load) and prints the
 * median, minimum and maximum wall time. Used by tools/bench-load. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "load.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: load_graph MODEL.json [REPEATS]\n");
        return 2;
    }
    int repeats = argc > 2 ? atoi(argv[2]) : 7;
    if (repeats < 1 || repeats > 1000)
        repeats = 7;
    double times[1000];
    int ops = 0;
    for (int k = -1; k < repeats; k++) { /* k = -1: warm-up */
        pl_error err;
        double start = pl_now();
        pl_graph *g = pl_graph_load_file(argv[1], &err);
        double elapsed = pl_now() - start;
        if (!g) {
            char line[2048];
            pl_error_format(&err, line, sizeof line);
            fprintf(stderr, "%s\n", line);
            return 2;
        }
        ops = g->n_ops;
        pl_graph_free(g);
        if (k >= 0)
            times[k] = elapsed;
    }
    pl_stats stats = pl_stats_of(times, repeats);
    printf("%d ops  repeats %d  median %.3f s  min %.3f s  max %.3f s\n", ops, repeats,
           stats.median, stats.min, stats.max);
    return 0;
}
