/* Max-load partitioning of a profiled operator graph: the public benchmark's problem.
 *
 * The NeurIPS 2020 paper "Efficient Algorithms for Device Placement of DNN Graph
 * Operators" (Tarnawski et al.) ships profiled graphs (docs/public-benchmark.md gives the
 * format) whose nodes carry their own latencies on an accelerator and on the CPU, a size,
 * a colour class and the cost of sending their output. A split puts every node on the CPU
 * or on one of the accelerators; its max-load is, over the devices used, the sum of the
 * latencies of the device's nodes plus, on an accelerator only, its communication: every
 * node with a consumer on another device charges its output cost once to its own device
 * and once to each other device that receives it. A split is feasible when nodes of one
 * colour class share a device, nodes not supported on an accelerator are on the CPU, every
 * accelerator holds at most max_size bytes, and at most n_accelerators accelerators are
 * used (the CPU is one device however many CPU cores the file names).
 *
 * placer's solver: a dynamic program over contiguous splits of the graph whose units are
 * the colour classes (the forward DAG's ideals where they are few, else prefixes of
 * topological orders), then a local search that moves one class at a time and may leave
 * contiguity. The bound is a cheap lower bound on every feasible split's max-load.
 *
 * An instance and a split are plain data owned by the caller (free them with their
 * _free); functions here never print and are thread-safe on distinct objects. */
#ifndef PLACER_PARTITION_H
#define PLACER_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_partition_node {
    int64_t id;              /* the file's id */
    bool accelerator_ok;     /* supportedOnFpga */
    bool backward;           /* isBackwardNode */
    double cpu_latency, accelerator_latency, size;
    double output_cost;      /* the cost of its out-edges (0 without any) */
    int colour;              /* 0..n_colours-1: nodes without a colorClass get their own */
} pl_partition_node;

typedef struct pl_partition_keyed {
    int64_t key;
    int node;
} pl_partition_keyed;

typedef struct pl_partition_instance {
    double max_size;         /* bytes an accelerator holds */
    int n_accelerators, n_cpus;
    int n_nodes, n_edges, n_colours;
    pl_partition_node *nodes;
    int *edge_source, *edge_dest; /* node indices, no self-loops */
    pl_partition_keyed *by_id;    /* (id, node) sorted by id: pl_partition_node_index */
} pl_partition_instance;

/* Reads an instance file ("-": standard input). NULL on failure, the first error in `err`
 * with its JSON pointer ("/edges/7/cost: ..."). */
pl_partition_instance *pl_partition_instance_load(const char *path, pl_error *err);
void pl_partition_instance_free(pl_partition_instance *instance);
/* The node index of a file id, or -1. */
int pl_partition_node_index(const pl_partition_instance *instance, int64_t id);

/* A split: device[node] is 0 for the CPU, 1..n_accelerators for an accelerator. */
enum { PL_PARTITION_CPU = 0 };
typedef struct pl_partition_split {
    int n_nodes;
    int *device;
} pl_partition_split;

pl_partition_split *pl_partition_split_new(const pl_partition_instance *instance,
                                           pl_error *err);
void pl_partition_split_free(pl_partition_split *split);

/* Reads a split in the paper's output format ({"fpgas": [{"nodes": [ids]}...], "cpus":
 * [...]}; loads are ignored). Nodes it leaves out take the device of their colour class
 * (how a forward split covers a training graph); a node left without one, a node twice or
 * an id the instance lacks is an error. The split must then be feasible. */
pl_partition_split *pl_partition_split_load(const char *path,
                                            const pl_partition_instance *instance,
                                            pl_error *err);
/* Writes `split` in the same format, each device's load and the max-load with it. */
pl_status pl_partition_split_write(const char *path, const pl_partition_instance *instance,
                                   const pl_partition_split *split, pl_error *err);

/* The max-load of a split; device_loads (NULL allowed) receives n_accelerators + 1 loads,
 * the CPU's first. Unused devices load 0. */
double pl_partition_max_load(const pl_partition_instance *instance,
                             const pl_partition_split *split, double *device_loads);
/* PL_OK when feasible, else PL_EINPUT saying which rule the split breaks. */
pl_status pl_partition_check(const pl_partition_instance *instance,
                             const pl_partition_split *split, pl_error *err);

/* A lower bound on every feasible split's max-load: the larger of the heaviest colour class
 * on its cheaper device, the work that must run on the CPU, and the work of all nodes
 * shared fractionally among the devices (communication counted as nothing). */
double pl_partition_bound(const pl_partition_instance *instance);

typedef struct pl_partition_result {
    double dp_max_load;      /* the best contiguous split the dynamic program found */
    double refined_max_load; /* after the local search */
    bool ideals;             /* the program ran over ideals */
    bool orders;             /* it ran over linear orders (else, the units being too many,
                                dp_max_load is a greedy split's) */
    long n_ideals;           /* how many, or how many it found before giving up; -1 when
                                the units were too many to try */
} pl_partition_result;

/* Places an instance: *split (new, the caller frees it) is the refined split, feasible.
 * `max_ideals` bounds the ideal program (0: a default); past it, linear orders. PL_EINPUT
 * when no feasible split exists (a colour class larger than an accelerator and not
 * allowed on the CPU, say). */
pl_status pl_partition_solve(const pl_partition_instance *instance, long max_ideals,
                             pl_partition_split **split, pl_partition_result *result,
                             pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
