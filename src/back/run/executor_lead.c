/* The executor among processes (executor.h): joining them, rank 0 leading, the others
 * following its word (ranks.c carries it). */
#include <stdlib.h>

#include "device.h"

/* The comm failed: the step waiting on a message ends with its error. */
static void comm_failed(void *context, const pl_error *err)
{
    executor_fail(context, err);
}

pl_status pl_executor_set_comm(pl_executor *ex, pl_comm *comm, pl_error *err)
{
    if (ex->program || ex->comm)
        return pl_error_set(err, PL_EINPUT, NULL, "processes are set once, before a plan");
    if (ex->c->n_ranks != pl_comm_size(comm))
        return pl_error_set(err, PL_EINPUT, NULL, "cluster \"%s\" spreads its devices over %d "
                            "process%s, and %d were started", ex->c->name, ex->c->n_ranks,
                            ex->c->n_ranks == 1 ? "" : "es", pl_comm_size(comm));
    ex->comm = comm;
    ex->rank = pl_comm_rank(comm);
    pl_comm_on_failure(comm, comm_failed, ex);
    for (int d = 0; d < ex->c->n_devices; d++) {
        resource *r = &ex->devices[d];
        if ((r->ops = device_kind(ex, d)) == &pl_device_remote) { /* its threads idle here */
            executor_stop_resource(r);
            pl_pool_free(r->pool);
            r->pool = NULL;
        }
    }
    return PL_OK;
}

pl_status pl_executor_lead(pl_executor *ex, pl_error *err)
{
    if (!ex->comm || ex->rank != 0)
        return pl_error_set(err, PL_EINPUT, NULL, "only rank 0 of several leads");
    ex->leading = true;
    return PL_OK;
}

pl_status pl_executor_follow(pl_executor *ex, pl_error *err)
{
    if (!ex->comm || ex->rank == 0)
        return pl_error_set(err, PL_EINPUT, NULL, "only ranks other than 0 follow");
    for (;;) {
        int64_t message[2];
        pl_status status = pl_comm_listen(ex->comm, message, sizeof message, 0, err);
        if (status != PL_OK)
            return status;
        if (message[0] == COMMAND_PLAN) {
            pl_plan *plan = executor_receive_plan(ex, err);
            pl_fit fit;
            status = plan ? pl_executor_set_plan(ex, plan, &fit, err) : err->status;
            pl_plan_free(plan);
        } else if (message[0] == COMMAND_STEP) {
            float loss;
            status = pl_executor_step(ex, message[1], &loss, err);
            if (status == PL_EINTERRUPTED)
                status = PL_OK; /* the leader's to handle */
        } else if (message[0] == COMMAND_SYNC) {
            status = pl_executor_sync_host(ex, err);
        } else { /* the end, and whether the leader ended for an interrupt */
            ex->interrupted = ex->interrupted || message[1] != 0;
            return PL_OK;
        }
        if (status != PL_OK)
            return status;
    }
}
