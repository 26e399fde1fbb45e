/* Clusters: the devices a graph is placed on and the links between them.
 *
 * A device is a pool of worker threads with a memory budget; it may declare a compute
 * throughput, and a link a bandwidth and latency, which the executor then paces kernels
 * and copies to (never finishing early), emulating a larger or slower cluster on this
 * machine. Without a declaration, a device or link runs as fast as the machine does
 * (native). A device may instead describe hardware placer cannot run (a GPU, by its
 * datasheet: pl_hardware): a cluster with one is planned on the simulator only
 * (pl_cluster_simulated). A cluster is read from a file (docs/cluster-format.md) or
 * describes the local machine: one device per core.
 *
 * A cluster is plain data owned by one arena; pl_cluster_free(NULL) is a no-op. Reading
 * it from several threads is safe. */
#ifndef PLACER_CLUSTER_H
#define PLACER_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "arena.h"
#include "error.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version 2 added hardware kinds and nodes; version 1 files read unchanged. */
enum { PL_CLUSTER_FORMAT_VERSION = 2, PL_MAX_DEVICES = 64, PL_MAX_DEVICE_THREADS = 256 };

/* The number formats a datasheet gives a peak for; the model's tensors are fp32 and its
 * matrix math runs at one of them (pl_hardware.math). */
typedef enum pl_math {
    PL_MATH_FP32,
    PL_MATH_TF32,
    PL_MATH_BF16,
    PL_MATH_FP16,
    PL_MATH_COUNT
} pl_math;
extern const char *const pl_math_names[PL_MATH_COUNT + 1]; /* "fp32", ...; NULL-terminated */

/* A kind of device placer cannot run, from its datasheet: the roofline (cost/roofline.h)
 * times its ops. */
typedef struct pl_hardware {
    const char *kind;                 /* "A100-SXM4-80GB" */
    double peak[PL_MATH_COUNT];       /* FLOP/s per number format, dense; 0: not given */
    pl_math math;                     /* what the model's matrix math runs at */
    int64_t memory_bytes;             /* its devices' memory */
    double memory_bytes_per_second;   /* memory bandwidth */
    double launch_seconds;            /* added to every kernel */
    double efficiency[PL_OP_COUNT];   /* of the peak each op kind attains, 0 to 1 */
} pl_hardware;

typedef struct pl_device {
    const char *name;
    int threads;              /* worker threads of its pool */
    int64_t memory_bytes;     /* the budget for its tensors */
    int n_cores;              /* CPU cores to pin its threads to; 0: not pinned */
    const int *cores;
    double flops_per_second;  /* declared compute throughput; 0: native */
    int rank;                 /* the MPI process that holds it (0 in one process) */
    const pl_hardware *hardware; /* a device placer cannot run, or NULL: one it runs */
    const char *node;         /* the node it belongs to (a machine of several devices), or
                                 NULL */
} pl_device;

/* How a device behaves when the executor runs it, which the simulator models too.
 * An idle device's thread sleeps on its queue; one that owns its cores (native, the
 * cluster names them) first polls for PL_DEVICE_POLL_SECONDS, so a task released soon
 * after starts at once instead of after a wake-up (pl_device_polls). */
#define PL_DEVICE_POLL_SECONDS 200e-6
bool pl_device_polls(const pl_device *device);
/* A paced task is held until its modelled time: its thread sleeps until
 * PL_DEVICE_PACE_SPIN_SECONDS before that (a sleeping thread wakes tens of microseconds
 * late on a VM) and spins the rest; one held less than that only spins. */
#define PL_DEVICE_PACE_SPIN_SECONDS 60e-6

/* The machine's online cores (at least 1). */
int pl_machine_cores(void);

typedef struct pl_link {
    double bytes_per_second;  /* declared bandwidth; 0: native (a memory copy) */
    double latency_seconds;   /* declared latency added to every transfer */
} pl_link;

/* What a copy from one device to another runs on. Without ports, every ordered pair has a
 * link of its own, and a device sending to several peers at once sends at every link's
 * bandwidth. With ports, a device's copies to the other devices of its node share its
 * node port, and its copies to devices of other nodes (or of none) its network port: one
 * copy at a time each, at the pair's link's figures (a port's pairs all share them); a
 * pair given in the file's `links` keeps a link of its own. A cluster of hardware has
 * ports unless its file says otherwise, since a datasheet's link figures are per device
 * (a GPU's NVLink carries its figure out in total, whichever peers it sends to); any
 * other cluster has them only where its file asks. The receiving side is not modelled. */
typedef enum pl_port { PL_PORT_NONE, PL_PORT_NODE, PL_PORT_NETWORK } pl_port;
extern const char *const pl_port_names[]; /* "link", "node port", "network port" */

typedef struct pl_cluster {
    const char *name;
    const char *description; /* "" when absent */
    int n_devices;
    pl_device *devices;
    pl_link *links;          /* n_devices x n_devices, row = source; the diagonal unused */
    unsigned char *ports;    /* n_devices x n_devices: the pl_port each pair's copies run
                                on, or NULL: no ports, every pair its own link */
    bool paced;              /* some device or link declares a throughput (never on a
                                simulated cluster: nothing there runs) */
    bool simulated;          /* some device is hardware placer cannot run: the cluster is
                                planned on the simulator only, never run */
    int n_hardware;          /* the hardware kinds the file describes */
    pl_hardware *hardware;
    int n_ranks;             /* the processes its devices are spread over: 1 when the file
                                gives no ranks */
    pl_arena arena;
} pl_cluster;

/* Reads and validates a cluster file; errors as the model loader gives them
 * (file:line:column for syntax, a JSON pointer for meaning). */
pl_cluster *pl_cluster_load_file(const char *path, pl_error *err);
pl_cluster *pl_cluster_load_buffer(const char *data, size_t size, const char *source,
                                   pl_error *err);
/* The local machine as it is: one single-threaded native device per online core, each
 * with an equal share of physical memory, native links. */
pl_cluster *pl_cluster_local(pl_error *err);
void pl_cluster_free(pl_cluster *cluster);

const pl_link *pl_cluster_link(const pl_cluster *cluster, int from, int to);
/* The port copies from `from` to `to` run on; PL_PORT_NONE: their pair's own link. */
pl_port pl_cluster_port(const pl_cluster *cluster, int from, int to);
/* The cluster's identity: a hash of its devices (names, threads, memory, throughput,
 * cores, hardware figures), links (bandwidth, latency) and ports, not of its name or
 * description. Checkpoints record it beside the model's hash (pl_graph.hash) so that one
 * made on another cluster of the same size is refused. */
uint64_t pl_cluster_hash(const pl_cluster *cluster);
/* A new cluster of `n` of the cluster's devices (devices[i] becomes device i), with the
 * links and ports between them; named as the cluster. NULL with err set when out of
 * memory. */
pl_cluster *pl_cluster_subset(const pl_cluster *cluster, const int *devices, int n,
                              pl_error *err);
/* The cluster's groups: devices joined by links faster than the slowest link between any
 * two (a native link is the fastest), as in machines of several devices joined by a
 * network. group[d] numbers them from 0 in order of their first device; returns how many.
 * One group when every link is the same. */
int pl_cluster_groups(const pl_cluster *cluster, const int *devices, int n, int *group);
int pl_cluster_find_device(const pl_cluster *cluster, const char *name);
/* A cluster of hardware placer cannot run (simulated) as paced devices this machine runs,
 * `slowdown` times slower: each device paced to its matrix ops' attainable rate (the math's
 * peak times the matmul efficiency) / slowdown, each link to its bandwidth / slowdown and
 * latency x slowdown, memory and ports as the hardware's. The executor then replays a plan's
 * schedule in real time (a check of the schedule, not of the hardware: an op is held to
 * its FLOPs at that rate, not to its roofline). Named, and its device names, as
 * `cluster`, which must outlive it. NULL with err set when out of memory. */
pl_cluster *pl_cluster_replay(const pl_cluster *cluster, double slowdown, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
