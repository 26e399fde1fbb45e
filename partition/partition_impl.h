/* The partition module's private half: the graph's adjacency and units shared by the
 * solvers, the incremental cost of a growing node set, and the dynamic program's table. */
#ifndef PLACER_PARTITION_IMPL_H
#define PLACER_PARTITION_IMPL_H

#include "partition.h"

/* A CSR of n lists from the pairs (key[i], value[i]), i < m, in their order: *start
 * (n + 1 entries) and *item, new; false when out of memory (free them still). */
bool pl_partition_csr(int n, int m, const int *key, const int *value, int **start,
                      int **item);

/* A node index on a directed cycle, or -1 when the graph is a DAG. */
int pl_partition_find_cycle(const pl_partition_instance *instance);

/* Adjacency and units, derived once per solve. A unit is what the dynamic program places
 * whole: the colour classes one strongly connected component of the forward class graph
 * holds (edges between forward nodes of different classes), with every node of those
 * classes, backward ones included; a class with backward nodes alone joins a neighbouring
 * unit. Units are numbered in a topological order of the unit graph. */
typedef struct pl_partition_graph {
    const pl_partition_instance *instance;
    int *consumer_start, *consumer; /* CSR: each node's out-edges' heads (duplicates kept) */
    int *producer_start, *producer; /* CSR: each node's in-edges' tails */
    int *class_start, *class_node;  /* CSR: each colour class's nodes */
    int n_units;
    int *unit_of_class;
    int *unit_start, *unit_node;    /* CSR: each unit's nodes */
    int *pred_start, *pred;         /* CSR: each unit's predecessor units (distinct) */
} pl_partition_graph;

pl_status pl_partition_graph_init(pl_partition_graph *graph,
                                  const pl_partition_instance *instance, pl_error *err);
void pl_partition_graph_release(pl_partition_graph *graph);

/* The cost of a node set that grows and shrinks a unit at a time: its latencies, size and
 * the communication an accelerator holding it pays, kept exactly as the objective counts
 * it (a node whose out-edges cross the set's border is charged once). */
typedef struct pl_partition_segment {
    const pl_partition_graph *graph;
    unsigned char *inside;    /* per node */
    int *consumers_inside;    /* per node: its out-edges whose head is inside */
    double communication, accelerator_latency, cpu_latency, size;
    int unsupported;          /* nodes inside that an accelerator cannot run */
} pl_partition_segment;

pl_status pl_partition_segment_init(pl_partition_segment *segment,
                                    const pl_partition_graph *graph, pl_error *err);
void pl_partition_segment_release(pl_partition_segment *segment);
void pl_partition_segment_add(pl_partition_segment *segment, int unit);
void pl_partition_segment_remove(pl_partition_segment *segment, int unit);
/* What the set costs on an accelerator (HUGE_VAL when it may not go there) and on the CPU. */
double pl_partition_segment_accelerator(const pl_partition_segment *segment);
double pl_partition_segment_cpu(const pl_partition_segment *segment);
/* Whether the set's latency alone reaches `bound` on every device it may go to (or it may
 * go to none): a set that grows from it cannot beat the bound. */
bool pl_partition_segment_beyond(const pl_partition_segment *segment, double bound);

/* Loads per device (the CPU's first) of the split `device`, over the consumer CSR; `seen`
 * is scratch, one int a device. */
void pl_partition_loads(const pl_partition_instance *instance, const int *device,
                        const int *consumer_start, const int *consumer, int *seen,
                        double *loads);
/* Adds (sign 1) or takes away (-1) node u's communication charges to `loads`: its own
 * device and every other device among its consumers', accelerators alone. `seen` entries
 * equal to `mark` count as seen; a fresh mark a call. */
void pl_partition_charge(const pl_partition_instance *instance, const int *device, int u,
                         const int *consumer_start, const int *consumer, double sign,
                         int *seen, int mark, double *loads);

/* The dynamic program's table: best[a][c][p] is the least max-load that places the
 * units before position p (an ideal, or a prefix of an order) on at most a accelerators
 * and c CPUs, each holding one contiguous set. Positions are offered in an order where
 * every position comes after those it grows from. */
enum { PL_PARTITION_NONE, PL_PARTITION_ON_ACCELERATOR, PL_PARTITION_ON_CPU };
typedef struct pl_partition_table {
    int n_accelerators, n_cpus; /* n_cpus: 0 or 1, the CPU being one device */
    long n_positions;
    double *best;
    long *from;                 /* the position a state grew from */
    unsigned char *how;         /* PL_PARTITION_* */
} pl_partition_table;

pl_status pl_partition_table_init(pl_partition_table *table, int n_accelerators, int n_cpus,
                                  long n_positions, pl_error *err);
void pl_partition_table_release(pl_partition_table *table);
/* Position p's states are final (every offer into it made): fewer devices may do. */
void pl_partition_table_settle(pl_partition_table *table, long p);
/* The set between positions `from` (settled) and `to` costs these on either device. */
void pl_partition_table_offer(pl_partition_table *table, long from, long to,
                              double accelerator_cost, double cpu_cost);
/* The best over all devices at position p. */
double pl_partition_table_value(const pl_partition_table *table, long p);
/* Walks back from the full position `p`: calls `place(from, to, how, device, ctx)` for
 * each set, devices numbered as a split numbers them. */
void pl_partition_table_walk(const pl_partition_table *table, long p,
                             void (*place)(long from, long to, int device, void *ctx),
                             void *ctx);

/* The dynamic programs: each writes its best contiguous split into `device` (per node)
 * and returns its max-load, HUGE_VAL when none fits below `bound_above` (which prunes
 * sets that cannot beat it; `device` is then untouched), NAN when out of memory (`err`
 * says so). The ideal program returns -1 when the ideals number more than `max_ideals`;
 * *n_ideals is how many it found. */
double pl_partition_linear_dp(const pl_partition_graph *graph, const int *order,
                              double bound_above, int *device, pl_error *err);
double pl_partition_ideal_dp(const pl_partition_graph *graph, long max_ideals,
                             double bound_above, int *device, long *n_ideals,
                             pl_error *err);

/* Moves one colour class at a time while the max-load (then the sum of squared loads)
 * falls; `device` feasible on entry and on return. Returns the max-load, NAN when out of
 * memory (`device` unchanged). */
double pl_partition_refine(const pl_partition_graph *graph, int *device, pl_error *err);

#endif
