/* Liveness between ranks (comm_impl.h): beats, and the clocks of waits. A peer that is
 * stopped (SIGSTOP, a hung machine) looks, from here, like one that thinks for long; its
 * beats tell them apart, from the comm's thread, which runs whatever the peer's main thread
 * does. */
#include <stdlib.h>

#include "clock.h"
#include "comm_impl.h"

/* Beats a timeout: a live peer is heard from every quarter of it, so that silence for the
 * whole (or for half, comm.c's absent_text) is not a late beat. */
#define BEATS_PER_TIMEOUT 4

/* Under the lock: a waiting loop's pass at `now`, after its last at *last. A gap of half the
 * timeout means that this process itself was stopped (Ctrl-Z on mpirun, a suspended
 * machine) or starved: every wait's clock starts again, since no peer was late. */
void comm_note_pass(pl_comm *comm, double now, double *last)
{
    if (now - *last > comm->timeout / 2)
        comm->restarted = now;
    *last = now;
}

/* Under the lock: the seconds since `since`, or since this process resumed when later. */
double comm_waited_since(const pl_comm *comm, double since)
{
    return pl_now() - (since > comm->restarted ? since : comm->restarted);
}

/* Under the lock: the seconds since rank `peer` was last heard from. */
double comm_silence(const pl_comm *comm, int peer)
{
    return comm_waited_since(comm, comm->heard[peer]);
}

static const char beat_out; /* what a beat sends: static, since MPI may read it late */

static void listen_for_beat(pl_comm *comm, int peer)
{
    comm_mpi_ok(comm,
                MPI_Irecv(&comm->beat_in[peer], 1, MPI_BYTE, peer, comm->beat_tag, MPI_COMM_WORLD,
                          &comm->beats[peer]),
                "a beat");
}

/* Under the lock, on the comm's thread: the beats that arrived taken (their receives posted
 * again), and this rank's sent when due. */
void comm_beat(pl_comm *comm)
{
    if (comm->size < 2 || comm->failed)
        return;
    double now = pl_now();
    int count = comm_test_some(comm, comm->size, comm->beats, comm->beat_done, "a beat");
    for (int k = 0; k < count; k++) {
        comm->heard[comm->beat_done[k]] = now;
        listen_for_beat(comm, comm->beat_done[k]);
    }
    if (now < comm->next_beat)
        return;
    comm->next_beat = now + comm->timeout / BEATS_PER_TIMEOUT;
    for (int peer = 0; peer < comm->size; peer++) {
        MPI_Request request;
        if (peer != comm->rank && comm_mpi_ok(comm,
                                              MPI_Isend(&beat_out, 1, MPI_BYTE, peer,
                                                        comm->beat_tag, MPI_COMM_WORLD, &request),
                                              "a beat"))
            MPI_Request_free(&request);
    }
}

/* Every other rank's beats listened for, from now. */
bool comm_start_beats(pl_comm *comm)
{
    size_t n = (size_t)comm->size;
    comm->beats = malloc(n * sizeof *comm->beats);
    comm->beat_in = malloc(n);
    comm->beat_done = malloc(n * sizeof *comm->beat_done);
    comm->heard = malloc(n * sizeof *comm->heard);
    if (!comm->beats || !comm->beat_in || !comm->beat_done || !comm->heard)
        return false;
    for (int peer = 0; peer < comm->size; peer++) {
        comm->beats[peer] = MPI_REQUEST_NULL;
        comm->heard[peer] = pl_now();
        if (peer != comm->rank)
            listen_for_beat(comm, peer);
    }
    return !comm->failed;
}

/* After the comm's thread: the receives of beats taken back. */
void comm_stop_beats(pl_comm *comm)
{
    for (int peer = 0; comm->beats && peer < comm->size; peer++)
        if (comm->beats[peer] != MPI_REQUEST_NULL) {
            MPI_Cancel(&comm->beats[peer]);
            MPI_Wait(&comm->beats[peer], MPI_STATUS_IGNORE);
        }
    free(comm->beats);
    free(comm->beat_in);
    free(comm->beat_done);
    free(comm->heard);
}
