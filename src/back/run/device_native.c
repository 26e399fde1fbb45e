/* Native devices and links (device.h): real kernels on real cores, copies as fast as
 * memory goes, each task done when its work is. */
#include "device.h"

static void release(resource *r, int i)
{
    executor_queue_task(r, i);
}

static bool run(resource *r, int i, double start)
{
    (void)start;
    const pl_task *task = &r->ex->program->tasks[i];
    if (task->kind == PL_TASK_OP)
        device_run_op(r, task);
    else
        device_move(r, task, task->kind == PL_TASK_REDUCE, 0);
    return true;
}

const device_ops pl_device_native = {"native", release, run, device_reserve_local,
                                     device_allocate_local};
