/* Transfers between ranks for the cost model (calibrate.h: pl_calibrate_processes). */
#include <stdlib.h>
#include <string.h>

#include "calibrate.h"
#include "stats.h"

enum { REPEATS = 21, WARMUP = 5 };

/* The median one-way time of `bytes` between ranks 0 and 1. */
static pl_status one_way(pl_comm *comm, char *buffer, size_t bytes, double *seconds,
                         pl_error *err)
{
    double times[REPEATS];
    for (int k = 0; k < WARMUP + REPEATS; k++) {
        pl_status status = pl_comm_ping_pong(comm, buffer, bytes, &times[k % REPEATS], err);
        if (status != PL_OK)
            return status;
    }
    *seconds = pl_median(times, REPEATS);
    return PL_OK;
}

pl_status pl_calibrate_processes(pl_cost_model *m, pl_comm *comm, pl_error *err)
{
    if (pl_comm_size(comm) < 2)
        return PL_OK;
    static const size_t sizes[] = {4 << 10, 64 << 10, 1 << 20, 16 << 20};
    enum { N = sizeof sizes / sizeof *sizes };
    char *buffer = malloc(sizes[N - 1]);
    double missing = buffer ? 0 : 1; /* the ranks agree first: one out of memory ends all */
    pl_status agreed = pl_comm_max(comm, &missing, 1, err);
    if (agreed != PL_OK || missing > 0) {
        free(buffer);
        return agreed != PL_OK ? agreed : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    memset(buffer, 0, sizes[N - 1]);
    double seconds[N];
    for (int i = 0; i < N; i++) {
        pl_status status = one_way(comm, buffer, sizes[i], &seconds[i], err);
        if (status != PL_OK) {
            free(buffer);
            return status;
        }
    }
    free(buffer);
    /* the slope from the two largest, where bandwidth rules; the rest is the smallest's
       fixed cost (polling, wake-ups, matching) */
    double fit[2];
    fit[1] = (seconds[N - 1] - seconds[N - 2]) / (double)(sizes[N - 1] - sizes[N - 2]);
    if (fit[1] < 0)
        fit[1] = 0;
    fit[0] = seconds[0] - fit[1] * (double)sizes[0];
    if (fit[0] < 0)
        fit[0] = 0;
    pl_status status = pl_comm_broadcast(comm, fit, sizeof fit, 0, err); /* rank 0's, everywhere */
    if (status != PL_OK)
        return status;
    m->process_seconds = fit[0];
    m->process_per_byte = fit[1];
    return PL_OK;
}
