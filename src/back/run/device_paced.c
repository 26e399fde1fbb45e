/* Paced devices and links (device.h): a native device's work, then the task is held
 * until the cost model's time for it has passed (a device's FLOP/s, a link's bandwidth
 * and latency), never released early. */
#include "device.h"

/* A paced link's copy or add works in pieces of this many bytes and gives its core up
 * between them. Its work is far shorter than the time the link holds it for, while
 * another link's thread just woken by a dependency would otherwise wait for a core until
 * the piece running there ends: the scheduler lets a running thread finish its slice. */
enum { LINK_PIECE_BYTES = 256 << 10 };

static void release(resource *r, int i)
{
    executor_queue_task(r, i);
}

static bool run(resource *r, int i, double start)
{
    pl_executor *ex = r->ex;
    const pl_task *task = &ex->program->tasks[i];
    double modelled;
    if (task->kind == PL_TASK_OP) {
        device_run_op(r, task);
        modelled = pl_task_flops(ex->program, task) / r->flops_per_second;
    } else {
        device_move(r, task, task->kind == PL_TASK_REDUCE, r->is_link ? LINK_PIECE_BYTES : 0);
        modelled = device_link_seconds(r, pl_task_bytes(ex->program, task));
    }
    if (modelled > 0)
        executor_wait_until(ex, start + modelled);
    return true;
}

const device_ops pl_device_paced = {"paced", release, run, device_reserve_local,
                                    device_allocate_local};
