/* placer under mpirun: one process per rank of the cluster, all running the same command
 * (comm.h). Rank 0 speaks for the job: it alone prints to standard output and writes the
 * outputs; the others' standard output goes nowhere. An error every rank meets alike (bad
 * input, exit 2) is printed by rank 0; one that a rank meets alone is printed by it, named,
 * and ends every rank. A failure between ranks (comm.h) ends every rank as soon as it is
 * said, before anything MPI may still read is freed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "calibrate.h"
#include "cli.h"
#include "profile.h"

static pl_comm *comm;

/* Ends every rank of the job now with exit status `code` (mpirun ends the others), what
 * was printed flushed first. */
static void end_every_rank(int code) __attribute__((noreturn));
static void end_every_rank(int code)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

pl_comm *pl_cli_comm(void)
{
    return comm;
}

bool pl_cli_leader(void)
{
    return !comm || pl_comm_rank(comm) == 0;
}

int pl_cli_start_processes(void)
{
    if (!pl_comm_launched())
        return PL_EXIT_OK;
    pl_error err;
    pl_error_init(&err, NULL);
    if (!(comm = pl_comm_start(&err))) {
        /* a setting every rank reads alike (MPI not started): said by rank 0 */
        if (err.status != PL_EINPUT || pl_comm_launched_rank() <= 0)
            fprintf(stderr, "placer: %s\n", err.text);
        return err.status == PL_EINPUT ? PL_EXIT_USAGE : PL_EXIT_FAILURE;
    }
    if (pl_comm_rank(comm) != 0 && !freopen("/dev/null", "w", stdout)) {
        fprintf(stderr, "placer: rank %d: cannot silence standard output\n",
                pl_comm_rank(comm));
        end_every_rank(PL_EXIT_FAILURE);
    }
    return PL_EXIT_OK;
}

int pl_cli_end_processes(int status)
{
    if (!comm)
        return status;
    fflush(stdout);
    /* every rank ends a command with the same status but when one failed alone */
    if (status != PL_EXIT_OK && status != PL_EXIT_USAGE && status != PL_EXIT_NO_FIT &&
        status != PL_EXIT_INTERRUPTED)
        end_every_rank(status);
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_comm_end(comm, &err) != PL_OK) {
        fprintf(stderr, "placer: %s\n", err.text);
        end_every_rank(PL_EXIT_FAILURE);
    }
    comm = NULL;
    return status;
}

void pl_cli_end_on_comm_failure(void)
{
    if (comm && pl_comm_status(comm, NULL) != PL_OK)
        end_every_rank(PL_EXIT_FAILURE);
}

int pl_cli_check_processes(const pl_cluster *cluster)
{
    if (!comm) {
        if (cluster->n_ranks == 1)
            return PL_EXIT_OK;
        pl_cli_error("cluster \"%s\" spreads its devices over %d processes: run placer with "
                     "mpirun -np %d", cluster->name, cluster->n_ranks, cluster->n_ranks);
        return PL_EXIT_USAGE;
    }
    if (cluster->n_ranks != pl_comm_size(comm)) {
        pl_cli_error("cluster \"%s\" spreads its devices over %d process%s and mpirun started "
                     "%d: run placer with mpirun -np %d", cluster->name, cluster->n_ranks,
                     cluster->n_ranks == 1 ? "" : "es", pl_comm_size(comm), cluster->n_ranks);
        return PL_EXIT_USAGE;
    }
    return PL_EXIT_OK;
}

int pl_cli_join_processes(pl_executor *executor, const pl_cluster *cluster)
{
    int status = pl_cli_check_processes(cluster);
    if (status != PL_EXIT_OK || !comm)
        return status;
    pl_error err;
    pl_error_init(&err, NULL);
    return pl_executor_set_comm(executor, comm, &err) == PL_OK ? PL_EXIT_OK
                                                               : pl_cli_report(&err);
}

int pl_cli_follow(const pl_graph *graph, const pl_cluster *cluster)
{
    pl_executor *executor;
    int status = pl_cli_new_executor(graph, cluster, "synthetic", &executor);
    if (status == PL_EXIT_OK)
        status = pl_cli_join_processes(executor, cluster);
    pl_error err;
    pl_error_init(&err, NULL);
    if (status == PL_EXIT_OK) {
        pl_executor_set_interrupt(executor, &pl_cli_interrupted);
        if (pl_executor_follow(executor, &err) != PL_OK)
            status = pl_cli_report(&err);
        else if (pl_executor_interrupted(executor))
            status = PL_EXIT_INTERRUPTED;
    }
    pl_executor_free(executor);
    return status;
}

int pl_cli_measure_processes(pl_cost_model *costs, bool force)
{
    if (!comm || pl_comm_size(comm) < 2)
        return PL_EXIT_OK;
    /* rank 0's model decides: the others' is its copy, or empty (calibrate) */
    double measure = pl_cli_leader() && (force || (costs->process_seconds <= 0 &&
                                                   costs->process_per_byte <= 0));
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_comm_broadcast(comm, &measure, sizeof measure, 0, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!measure)
        return PL_EXIT_OK;
    if (pl_calibrate_processes(costs, comm, &err) != PL_OK)
        return pl_cli_report(&err);
    char path[4096];
    if (!pl_cli_leader() || !pl_profile_path(path, sizeof path))
        return PL_EXIT_OK;
    pl_error_init(&err, path);
    return pl_cost_model_write(costs, path, &err) == PL_OK ? PL_EXIT_OK : pl_cli_report(&err);
}

int pl_cli_share_costs(pl_cost_model *costs, int status)
{
    if (!comm)
        return status;
    int64_t word = status;
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_comm_listen(comm, &word, sizeof word, 0, &err) != PL_OK)
        return pl_cli_report(&err);
    if (word != PL_EXIT_OK)
        return (int)word;
    pl_op_time *mine = costs->measured;
    if (pl_comm_broadcast(comm, costs, sizeof *costs, 0, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!pl_cli_leader()) {
        free(mine);
        costs->measured = malloc((size_t)costs->n_measured * sizeof *costs->measured + 1);
        if (!costs->measured) {
            fprintf(stderr, "placer: rank %d: out of memory\n", pl_comm_rank(comm));
            end_every_rank(PL_EXIT_FAILURE);
        }
    }
    return pl_comm_broadcast(comm, costs->measured,
                             (size_t)costs->n_measured * sizeof *costs->measured, 0, &err) == PL_OK
               ? PL_EXIT_OK
               : pl_cli_report(&err);
}
