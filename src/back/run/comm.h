/* Processes: the MPI ranks a cluster's devices are spread over (cluster.h: a device's
 * `rank`).
 *
 * placer runs across processes SPMD: every rank reads the same model, cluster and plan,
 * builds the same step program and calls the same collectives in the same order; each
 * runs the tasks of its own devices, and a tensor that crosses ranks is sent with MPI.
 * This is a small layer over MPI that suits the executor's threads: one lock serialises
 * every MPI call (MPI_THREAD_SERIALIZED), and a thread of the comm's own completes posted
 * messages, calling back whoever posted them. Nobody blocks inside MPI: waits poll with
 * sleeps between, so ranks that share cores leave them to the ranks that compute.
 *
 * A message or collective still outstanding after the timeout (PLACER_MPI_TIMEOUT: a
 * positive number of seconds, an `s` after it allowed, default 60) fails the comm with an
 * error naming the peer (of a collective, the other rank of two, or one whose beats
 * stopped: pl_comm_listen): the call
 * waiting for it returns that error, whoever posted a message is told (pl_comm_on_failure),
 * and every later call returns it at once, since MPI cannot take back what was posted. An
 * error MPI returns fails it the same way. A rank that hangs cannot hang the job: the
 * program ends every rank (mpirun ends the others when one exits with an error). A rank
 * that dies is mpirun's to notice; it ends the others.
 *
 * After a failure, MPI (and a peer on this host, which may read this process's memory
 * directly) may still use the buffers of the calls that did not complete: end the process
 * with MPI_Abort before freeing them, or keep them. */
#ifndef PLACER_COMM_H
#define PLACER_COMM_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_comm pl_comm;

/* Whether an MPI launcher (mpirun) started this process. */
bool pl_comm_launched(void);
/* The rank the launcher gave this process, known before MPI starts; -1 when it does not
 * say. */
int pl_comm_launched_rank(void);

/* Starts MPI for the process (once: a second start fails) and the comm's thread. NULL
 * with `err` set when MPI cannot start or gives no MPI_THREAD_SERIALIZED, or (PL_EINPUT,
 * MPI not started) when PLACER_MPI_TIMEOUT is not a positive number of seconds. */
pl_comm *pl_comm_start(pl_error *err);
/* Ends MPI after every rank's last collective: a barrier that waits while every rank is
 * alive (one may still be writing its outputs), then MPI_Finalize, which would wait for a
 * missing rank for ever. PL_OK (NULL: a no-op), or the comm's failure, MPI left as it is
 * (end the process with MPI_Abort). */
pl_status pl_comm_end(pl_comm *comm, pl_error *err);
/* PL_OK, or the comm's failure (copied into `err`): a message or collective overdue. */
pl_status pl_comm_status(pl_comm *comm, pl_error *err);
/* Who is told, from the comm's thread, when a posted message will never complete: the
 * comm has failed (`err` says why). One at a time; NULL: nobody. */
typedef void pl_comm_failed(void *context, const pl_error *err);
void pl_comm_on_failure(pl_comm *comm, pl_comm_failed *on_failure, void *context);

int pl_comm_rank(const pl_comm *comm);
int pl_comm_size(const pl_comm *comm);
/* Whether every rank runs on this host, so that CLOCK_MONOTONIC is one clock for all. */
bool pl_comm_shared_clock(const pl_comm *comm);

/* Collectives: every rank calls each, in the same order. PL_EIO with `err` set when the
 * comm has failed (the timeout above). */
pl_status pl_comm_barrier(pl_comm *comm, pl_error *err);
pl_status pl_comm_broadcast(pl_comm *comm, void *data, size_t bytes, int root, pl_error *err);
/* A broadcast that waits as long as the root takes while the root is alive (every rank
 * sends the others a beat four times a timeout; a root silent for the timeout fails it): a
 * follower's wait for its leader's next word, which comes when the leader has decided (a
 * search may think for minutes). */
pl_status pl_comm_listen(pl_comm *comm, void *data, size_t bytes, int root, pl_error *err);
/* Element-wise maximum of `values` over the ranks, in place. */
pl_status pl_comm_max(pl_comm *comm, double *values, int n, pl_error *err);
/* The element-wise sum of `values` over the ranks, in place: MPI's own all-reduce. */
pl_status pl_comm_sum_floats(pl_comm *comm, float *values, int n, pl_error *err);

/* Point to point, posted at once and completed by the comm's thread, which then calls
 * done(context, id) (without the comm's lock: it may post again). The buffer is the
 * caller's until then. `tag` tells apart messages between the same two ranks; those with
 * the same tag arrive in the order sent. A message is at most INT_MAX bytes (PL_EINPUT
 * beyond). */
typedef void pl_comm_done(void *context, int id);
pl_status pl_comm_send(pl_comm *comm, const void *data, size_t bytes, int to, int tag,
                       pl_comm_done *done, void *context, int id, pl_error *err);
pl_status pl_comm_receive(pl_comm *comm, void *data, size_t bytes, int from, int tag,
                          pl_comm_done *done, void *context, int id, pl_error *err);
/* Calls done(context, id) from the comm's thread once CLOCK_MONOTONIC reaches `when`
 * (pl_now's seconds). */
pl_status pl_comm_call_at(pl_comm *comm, double when, pl_comm_done *done, void *context,
                          int id, pl_error *err);

/* Posts a send of `out` to rank `to` and a receive into `in` from rank `from` (either
 * NULL: none), and waits until both are done. */
pl_status pl_comm_exchange(pl_comm *comm, const void *out, size_t out_bytes, int to,
                           void *in, size_t in_bytes, int from, int tag, pl_error *err);
/* Between ranks 0 and 1 (the others return at once): `bytes` of `buffer` sent from 0 to 1
 * and back through the comm, as the executor sends a transfer; *one_way gets half the
 * round trip, in seconds (rank 0's measure; rank 1's is within its wake-up of it). Both
 * ranks call it together. */
pl_status pl_comm_ping_pong(pl_comm *comm, void *buffer, size_t bytes, double *one_way,
                            pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
