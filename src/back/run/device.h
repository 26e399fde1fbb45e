/* The device interface: how the executor drives a device or a link, whatever it is. The
 * executor knows a resource only through these operations; its step releases tasks,
 * each resource's thread runs them, and the program's collectives (ring and hierarchical
 * all-reduces, reduce-scatters, all-gathers: program_allreduce.c) are copies and reduces
 * of ranges that every kind runs alike. Three kinds:
 * - native (device_native.c): real kernels on real cores, copies as fast as memory goes;
 * - paced (device_paced.c): the same work, held until the cost model's time for it has
 *   passed (a device's declared FLOP/s, a link's bandwidth and latency);
 * - remote (device_remote.c): a device another rank holds, and the links to and from it:
 *   its tasks are that rank's, a transfer to or from it is a pair of MPI messages.
 * Not installed. */
#ifndef PLACER_DEVICE_H
#define PLACER_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor_impl.h"

struct device_ops {
    const char *kind;
    /* Task i, its dependencies here done: onto the resource's queue, or, what another
     * rank sends, its messages posted. */
    void (*release)(resource *r, int i);
    /* Task i on the resource's thread, from `start` (pl_now's seconds). True when it is
     * done on return; false when it ends later, finished by whoever completes it. */
    bool (*run)(resource *r, int i, double start);
    /* A device's memory for a plan: its arena and workspace grown to at least these
     * (false: out of memory). A remote device holds none here. */
    bool (*reserve)(resource *r, size_t arena, size_t work);
    /* A further copy of a parameter or state on this device: `bytes` of memory, NULL
     * where another rank holds the device (*ok false: out of memory). */
    void *(*allocate)(resource *r, size_t bytes, bool *ok);
};

extern const device_ops pl_device_native, pl_device_paced, pl_device_remote;

/* device.c: a resource's kind, and the work of a task that native and paced devices do
 * alike. */
/* Device d's kind: remote when another rank holds it, paced when it declares a
 * throughput, else native. */
const device_ops *device_kind(const pl_executor *ex, int d);
/* The link from -> to's kind: remote when it joins two ranks, paced when it declares a
 * bandwidth or latency, else native. */
const device_ops *link_kind(const pl_executor *ex, int from, int to);
/* An op task's kernel (a shard of an update, or the whole op) on the resource's pool. */
void device_run_op(resource *r, const pl_task *task);
/* A copy (or, with `add`, a reduce) of task's range, in pieces of `piece` bytes with the
 * core given up between them (0: at once). */
void device_move(resource *r, const pl_task *task, bool add, int64_t piece);
void device_add_floats(float *restrict own, const float *restrict in, int64_t n);
/* The modelled time of moving `bytes` over resource r (its latency and bandwidth). */
double device_link_seconds(const resource *r, int64_t bytes);
/* Local memory, for native and paced devices. */
bool device_reserve_local(resource *r, size_t arena, size_t work);
void *device_allocate_local(resource *r, size_t bytes, bool *ok);

#endif
