/* What the benchmark programs of tools/bench share: the clock, sorting, option parsing and
 * an executor fed with synthetic data. Not part of the library. */
#ifndef PLACER_BENCH_H
#define PLACER_BENCH_H

#include <stdbool.h>

#include "clock.h"
#include "cluster.h"
#include "error.h"
#include "executor.h"
#include "graph.h"
#include "probe.h"
#include "stats.h"

enum { BENCH_MAX_LIST = 32, BENCH_MAX_NAME = 256 };

/* A whole decimal integer within [low, high]. */
bool bench_parse_int(const char *text, int low, int high, int *value);
/* "a,b,c" into names; false for an empty or too long name, or too many. */
bool bench_split_list(const char *text, char names[BENCH_MAX_LIST][BENCH_MAX_NAME], int *n);
/* A model's file: TOP/graphs/NAME.json, or NAME itself when it ends in ".json", into
 * path; returns path. */
const char *bench_graph_path(const char *top, const char *name, char *path, size_t cap);
/* Its training graph (autodiff.h); NULL with err filled in, naming the file. */
pl_graph *bench_open_graph(const char *top, const char *name, pl_error *err);
/* The machine's speed now, as the main job probes it on native devices (probe.h): the
 * model NAME run against m's profile (through TOP/graphs/cnn.json where it cannot be),
 * into *probe; *speed the factor for m's `speed` (0: none found). */
pl_status bench_probe(const char *top, const char *name, const pl_cost_model *m,
                      pl_probe *probe, double *speed, pl_error *err);
/* A bundled cluster: TOP/graphs/clusters/NAME.json. */
pl_cluster *bench_open_cluster(const char *top, const char *name, pl_error *err);
/* An executor for g on c whose inputs hold one batch of synthetic samples (every step
 * reuses it: the data does not change a step's time); NULL with err filled in. Under
 * mpirun, one rank of c's processes: the benchmark then runs alike on every rank, and
 * only rank 0 prints. */
/* Ends every rank of an mpirun job (or this process) with `code`, `err`'s text said first
 * (NULL: nothing to say). */
void bench_abort(const pl_error *err, int code) __attribute__((noreturn));
pl_executor *bench_open_executor(const pl_graph *g, const pl_cluster *c, pl_error *err);

#endif
