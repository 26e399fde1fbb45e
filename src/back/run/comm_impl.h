/* What comm.c and comm_beats.c share: the comm's state. Private to src/back/run. */
#ifndef PLACER_COMM_IMPL_H
#define PLACER_COMM_IMPL_H

#include <mpi.h>
#include <pthread.h>

#include "comm.h"

typedef struct message {
    pl_comm_done *done;
    void *context;
    int id;
    int peer, tag;
    bool sending;
    double posted;
} message;

typedef struct timer {
    double when;
    pl_comm_done *done;
    void *context;
    int id;
} timer;

struct pl_comm {
    int rank, size, tag_limit;
    bool shared_clock;
    double timeout;
    pthread_mutex_t lock; /* every MPI call, and the lists below */
    pthread_cond_t wake;  /* something posted, or stopping */
    pthread_t thread;
    bool started, stopping;
    MPI_Request *requests; /* outstanding messages, parallel to `messages` */
    message *messages;
    int n, cap;
    timer *timers;
    int n_timers, cap_timers;
    int *completed;
    /* under the lock: beats (comm_beats.c), one receive posted from each other rank on the tag
       above tag_limit, and when each was last heard from */
    MPI_Request *beats;
    char *beat_in;
    int *beat_done, beat_tag;
    double *heard, next_beat;
    double restarted; /* under the lock: when this process last resumed (comm_note_pass) */
    bool failed;      /* under the lock: a message or collective timed out */
    bool reported;    /* under the lock: the failure was told (pl_comm_on_failure) */
    pl_error failure; /* under the lock: what, once failed */
    pl_comm_failed *on_failure;
    void *failure_context;
};

/* comm.c */
/* Under the lock: the comm has failed, for the reason the format says (the first failure
 * wins); the comm's thread tells whoever posted. */
void comm_fail(pl_comm *comm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Under the lock: whether an MPI call succeeded; one that did not fails the comm with MPI's
 * words for it. */
bool comm_mpi_ok(pl_comm *comm, int code, const char *what);
/* Under the lock: how many of `n` requests completed (their indices in `done`); none once
 * MPI fails. */
int comm_test_some(pl_comm *comm, int n, MPI_Request *requests, int *done, const char *what);

/* comm_beats.c: liveness. Every rank sends every other a beat several times a timeout
 * (from the comm's thread), so that a rank silent for the timeout is stopped or gone. */
/* Every other rank's beats listened for, from now (false: out of memory, or MPI failed). */
bool comm_start_beats(pl_comm *comm);
/* After the comm's thread: the receives of beats taken back, their memory freed. */
void comm_stop_beats(pl_comm *comm);
/* Under the lock, on the comm's thread: the beats that arrived taken, this rank's sent when
 * due (by comm->next_beat). */
void comm_beat(pl_comm *comm);
/* Under the lock: a waiting loop's pass at `now`, after its last at *last (a long gap: this
 * process was stopped, and every wait's clock starts again). */
void comm_note_pass(pl_comm *comm, double now, double *last);
/* Under the lock: the seconds since `since`, or since this process resumed when later. */
double comm_waited_since(const pl_comm *comm, double since);
/* Under the lock: the seconds since rank `peer` was last heard from. */
double comm_silence(const pl_comm *comm, int peer);

#endif
