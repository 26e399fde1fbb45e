/* Helpers shared by the benchmark programs (bench.h). */
#include "bench.h"

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autodiff.h"
#include "load.h"


bool bench_parse_int(const char *text, int low, int high, int *value)
{
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end || v < low || v > high)
        return false;
    *value = (int)v;
    return true;
}

bool bench_split_list(const char *text, char names[BENCH_MAX_LIST][BENCH_MAX_NAME], int *n)
{
    *n = 0;
    for (const char *at = text;; at++) {
        size_t length = strcspn(at, ",");
        if (length == 0 || length >= BENCH_MAX_NAME || *n == BENCH_MAX_LIST)
            return false;
        memcpy(names[*n], at, length);
        names[(*n)++][length] = '\0';
        at += length;
        if (*at == '\0')
            return true;
    }
}

/* Under mpirun the benchmark runs on every rank alike (its choices come from simulations
 * and from step times, which are every rank's slowest), its executors spread over the
 * cluster's ranks; rank 0 prints. */
static pl_comm *comm;

void bench_abort(const pl_error *err, int code)
{
    if (err)
        fprintf(stderr, "%s\n", err->text);
    fflush(stdout);
    fflush(stderr);
    if (pl_comm_launched())
        MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);
}

static void end_comm(void)
{
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_comm_end(comm, &err) != PL_OK) {
        fprintf(stderr, "%s\n", err.text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

pl_executor *bench_open_executor(const pl_graph *g, const pl_cluster *c, pl_error *err)
{
    if (!comm && pl_comm_launched()) {
        if (!(comm = pl_comm_start(err)))
            return NULL;
        atexit(end_comm);
        if (pl_comm_rank(comm) != 0 && !freopen("/dev/null", "w", stdout))
            bench_abort(NULL, 1);
    }
    pl_executor *ex = pl_executor_new_with_data(g, c, "synthetic", err);
    if (ex && comm && pl_executor_set_comm(ex, comm, err) != PL_OK) {
        pl_executor_free(ex);
        return NULL;
    }
    return ex;
}

const char *bench_graph_path(const char *top, const char *name, char *path, size_t cap)
{
    size_t length = strlen(name);
    if (length > 5 && strcmp(name + length - 5, ".json") == 0)
        snprintf(path, cap, "%s", name);
    else
        snprintf(path, cap, "%s/graphs/%s.json", top, name);
    return path;
}

pl_graph *bench_open_graph(const char *top, const char *name, pl_error *err)
{
    char path[4096];
    bench_graph_path(top, name, path, sizeof path);
    pl_error_init(err, path);
    pl_graph *g = pl_graph_load_file(path, err);
    if (g && pl_autodiff_build(g, err) != PL_OK) {
        pl_graph_free(g);
        return NULL;
    }
    return g;
}

pl_status bench_probe(const char *top, const char *name, const pl_cost_model *m,
                      pl_probe *probe, double *speed, pl_error *err)
{
    char path[4096], reference[4096];
    bench_graph_path(top, name, path, sizeof path);
    bench_graph_path(top, "cnn", reference, sizeof reference);
    pl_error_init(err, path);
    pl_status status = pl_cost_probe(m, path, reference, NULL, probe, err);
    *speed = status == PL_OK && probe->ops > 0 ? probe->scale : 0;
    return status;
}

pl_cluster *bench_open_cluster(const char *top, const char *name, pl_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/graphs/clusters/%s.json", top, name);
    pl_error_init(err, path);
    return pl_cluster_load_file(path, err);
}
