/* The executor's insides (executor.h), shared by its files, bottom up:
 * - resource.c: a resource's ready queue and thread, pacing's clock, finishing a task;
 * - device.h: the device interface, how the executor drives a device or link, with its
 *   three implementations device_native.c, device_paced.c and device_remote.c (a device
 *   another rank holds); device.c chooses a resource's kind and does a task's work;
 * - ranks.c: the executor as one rank among processes (each task's part here, gathering,
 *   combining a step's figures, the leader's word);
 * - executor.c: plans and steps; executor_lead.c: leading and following.
 * Not installed. */
#ifndef PLACER_EXECUTOR_IMPL_H
#define PLACER_EXECUTOR_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "comm.h"
#include "executor.h"
#include "kernels.h"
#include "pool.h"

typedef struct ready_queue {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int *heap, n, cap;
    atomic_int queued;     /* n, readable without the lock: what a spinning thread polls */
    double spin_seconds;   /* how long an idle thread polls before it sleeps; 0: never */
    bool stopping;
} ready_queue;

typedef struct device_ops device_ops;

/* A device or a link: a thread taking its ready tasks in program order, driven through
 * its kind's operations (device.h). */
typedef struct resource {
    pl_executor *ex;
    const device_ops *ops;
    bool is_link;
    int device;            /* a device: its index; a link: its source */
    int to;                /* a link: its destination */
    pthread_t thread;
    bool started;
    ready_queue queue;
    pl_pool *pool;         /* devices held here */
    char *arena;
    size_t arena_bytes;
    void *work;
    size_t work_bytes;
    double flops_per_second;               /* devices, 0: native */
    double bytes_per_second, latency;      /* links */
} resource;

/* What a leading rank 0 tells the others (pl_executor_lead). */
typedef enum command { COMMAND_PLAN, COMMAND_STEP, COMMAND_SYNC, COMMAND_END } command;

/* A task's part on this process (comm.h): all of it, none, or one end of a transfer
 * between devices of two ranks. */
typedef enum role { ROLE_NONE, ROLE_LOCAL, ROLE_SEND, ROLE_RECEIVE } role;

struct pl_executor {
    const pl_graph *g;
    const pl_cluster *c;
    pl_comm *comm;         /* NULL: one process, every task local */
    int rank;
    bool leading;          /* rank 0 of pl_executor_lead: tells the others what to do */
    void **host;
    bool owns_host;
    void **program_host;   /* per tensor of the program's graph: its host buffer; `host`
                              itself unless the plan splits ops, whose parameter and state
                              shards have buffers of their own (split_graph.h) */
    void **staged;         /* per input batched on an axis other than 0: its slices (the
                              program's micro-batches), each gathered whole, one after
                              another; NULL elsewhere */
    resource *devices;
    resource **links;      /* n_devices x n_devices, started when a plan first uses one */
    pl_program *program;
    void **copies;         /* per further copy of a parameter or state (program.h) */
    bool copies_made;      /* since the plan was set: copied from the first at a step */
    resource **task_resource;
    void **ptrs;           /* per reference of the program: its address */
    const pl_tensor **ref_shapes;
    void **last_output;    /* per activation: its buffer in the last micro-batch */
    atomic_int *pending;
    int *deps;             /* per task: its dependencies that run on this process */
    signed char *roles;    /* per task */
    int local_parts;       /* tasks with a role here: a step ends when they all have */
    atomic_int *parts_left; /* per send or receive: what it still waits for */
    double *deadlines;     /* per send or receive: when its link's modelled time ends */
    float **staging;       /* per received reduce: where its range arrives */
    int program_tasks;     /* the tasks `staging` has room for */
    atomic_int remaining;
    pthread_mutex_t done_lock;
    pthread_cond_t done;
    pl_error failure;      /* under done_lock: the first error of a resource's thread */
    bool failed;           /* under done_lock: the executor is unusable from then on */
    pl_step_info *infos;   /* per micro-batch, then one for the updates */
    float *losses;
    double *starts, *ends;
    double *combined;      /* room for combining ranks' figures */
    double step_start, step_seconds;
    int64_t steps_run;
    int64_t steps_since_plan;
    const volatile sig_atomic_t *interrupt; /* ends paced waits; NULL: never */
    atomic_bool cut_short; /* this step: a paced wait ended early */
    bool interrupted;      /* among processes: some rank's flag was set at a step's end, or
                              the leader's when it ended (sticky) */
};

/* resource.c */
/* Resource r's queue and thread: started (false, err set, when the thread cannot be), or
 * stopped and joined. */
pl_status executor_start_resource(resource *r, pl_error *err);
void executor_stop_resource(resource *r);
/* Task i queued on resource r. */
void executor_queue_task(resource *r, int i);
/* Room on resource r's queue for `cap` tasks. */
bool executor_reserve_queue(resource *r, int cap);
/* Holds the calling thread until `when` (pl_now's seconds), as pacing does. */
void executor_wait_until(pl_executor *ex, double when);
/* Task i done here: its successors here released, the step's count of parts lowered. */
void executor_finish_task(pl_executor *ex, int i);
/* A resource's thread met an error (`err`'s text): the step ends with it, on every rank
 * that meets it; the executor takes no further plan or step. */
void executor_fail(pl_executor *ex, const pl_error *err);
/* Whether this rank's interrupt flag is set. */
bool executor_flagged(const pl_executor *ex);
/* The bytes further copy c holds, and where they start (*offset). */
size_t executor_copy_bytes(const pl_executor *ex, int c, size_t *offset);

/* ranks.c */
/* Which part of each task runs here, and its dependencies here (at set_plan). */
pl_status executor_assign_roles(pl_executor *ex, pl_error *err);
/* Every parameter and state tensor gathered from the rank that holds it (collective). */
pl_status executor_gather_host(pl_executor *ex, pl_error *err);
/* Before and after a step's tasks: every rank starts together, and then a step's time,
 * losses, status and timeline are made every rank's (collectives; one process: nothing). */
pl_status executor_begin_ranks_step(pl_executor *ex, pl_error *err);
pl_status executor_end_ranks_step(pl_executor *ex, pl_error *err);
/* The leader's word to the followers: a command, and a plan after COMMAND_PLAN. */
pl_status executor_tell(pl_executor *ex, command what, int64_t step, pl_error *err);
pl_status executor_send_plan(pl_executor *ex, const pl_plan *plan, pl_error *err);
/* A follower's copy of the plan the leader sends (NULL, err set, on failure). */
pl_plan *executor_receive_plan(pl_executor *ex, pl_error *err);

#endif
