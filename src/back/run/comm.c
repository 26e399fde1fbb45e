/* Processes over MPI (comm.h): the lock, the comm's thread, polled waits. */
#include "comm_impl.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

/* Polling: a wait starts at the shortest sleep and doubles it while nothing completes, up
 * to the longest, so a message arriving soon is seen within microseconds and an idle rank
 * costs little. */
#define POLL_FIRST_SECONDS 5e-6
#define POLL_LAST_SECONDS 50e-6
#define DEFAULT_TIMEOUT_SECONDS 60.0
static bool started_once;

static void sleep_seconds(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}

bool pl_comm_launched(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_SIZE");
}

/* ---- the comm's thread ------------------------------------------------------------------- */

/* Under the lock: the comm has failed, for the reason the format says (the first failure
 * wins). */
void comm_fail(pl_comm *comm, const char *fmt, ...)
{
    if (comm->failed)
        return;
    char text[PL_ERROR_TEXT_MAX];
    va_list args;
    va_start(args, fmt);
    vsnprintf(text, sizeof text, fmt, args);
    va_end(args);
    pl_error_init(&comm->failure, NULL);
    pl_error_set(&comm->failure, PL_EIO, NULL, "rank %d: %s", comm->rank, text);
    comm->failed = true;
    pthread_cond_signal(&comm->wake); /* the comm's thread tells whoever posted */
}

/* Under the lock: whether an MPI call succeeded; one that did not fails the comm with
 * MPI's words for it. */
bool comm_mpi_ok(pl_comm *comm, int code, const char *what)
{
    if (code == MPI_SUCCESS)
        return true;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    comm_fail(comm, "%s failed in MPI: %s", what, text);
    return false;
}

/* Under the lock: how many of `n` requests completed (their indices in `done`); none once
 * MPI fails. */
int comm_test_some(pl_comm *comm, int n, MPI_Request *requests, int *done, const char *what)
{
    int count = 0;
    if (!comm_mpi_ok(comm, MPI_Testsome(n, requests, &count, done, MPI_STATUSES_IGNORE), what) ||
        count == MPI_UNDEFINED)
        return 0;
    return count;
}

typedef struct call {
    pl_comm_done *done;
    void *context;
    int id;
} call;

/* Under the lock: the messages that completed and the timers due, taken off the lists. */
static int collect(pl_comm *comm, call *calls)
{
    int n_calls = 0;
    int count = comm->n > 0 ? comm_test_some(comm, comm->n, comm->requests, comm->completed,
                                             "a message")
                            : 0;
    for (int k = 0; k < count; k++) {
        const message *m = &comm->messages[comm->completed[k]];
        calls[n_calls++] = (call){m->done, m->context, m->id};
    }
    /* completed requests are MPI_REQUEST_NULL now: drop them, keeping the order */
    int kept = 0;
    for (int i = 0; i < comm->n; i++)
        if (comm->requests[i] != MPI_REQUEST_NULL) {
            comm->requests[kept] = comm->requests[i];
            comm->messages[kept++] = comm->messages[i];
        }
    comm->n = kept;
    double now = pl_now();
    int kept_timers = 0;
    for (int i = 0; i < comm->n_timers; i++) {
        timer *t = &comm->timers[i];
        if (t->when <= now)
            calls[n_calls++] = (call){t->done, t->context, t->id};
        else
            comm->timers[kept_timers++] = *t;
    }
    comm->n_timers = kept_timers;
    for (int i = 0; i < comm->n && !comm->failed; i++) {
        const message *m = &comm->messages[i];
        double waited = comm_waited_since(comm, m->posted);
        if (waited > comm->timeout)
            comm_fail(comm,
                      "a message %s rank %d (tag %d) is %.3g s overdue "
                      "(PLACER_MPI_TIMEOUT=%g)",
                      m->sending ? "to" : "from", m->peer, m->tag, waited, comm->timeout);
    }
    return n_calls;
}

/* How long to sleep before polling again: at most until the next timer. */
static double next_sleep(const pl_comm *comm, double poll)
{
    double now = pl_now(), sleep = poll;
    for (int i = 0; i < comm->n_timers; i++)
        if (comm->timers[i].when - now < sleep)
            sleep = comm->timers[i].when - now;
    return sleep > 0 ? sleep : 0;
}

/* Under the lock, on the comm's thread: whoever waits for a message is told (it never
 * completes now), with the lock let go for the call. */
static void report_failure(pl_comm *comm)
{
    pl_comm_failed *on_failure = comm->on_failure;
    void *context = comm->failure_context;
    pl_error failure = comm->failure;
    pthread_mutex_unlock(&comm->lock);
    if (on_failure)
        on_failure(context, &failure);
    pthread_mutex_lock(&comm->lock);
}

/* Under the lock: sleeps until woken or (CLOCK_MONOTONIC) `until`. */
static void sleep_until(pl_comm *comm, double until)
{
    if (until == INFINITY) {
        pthread_cond_wait(&comm->wake, &comm->lock);
        return;
    }
    struct timespec ts = {(time_t)until, (long)((until - (double)(time_t)until) * 1e9)};
    pthread_cond_timedwait(&comm->wake, &comm->lock, &ts);
}

static void *comm_main(void *arg)
{
    pl_comm *comm = arg;
    prctl(PR_SET_TIMERSLACK, 1000UL);
    double poll = POLL_FIRST_SECONDS, last_pass = pl_now();
    call *calls = NULL;
    int cap = 0;
    pthread_mutex_lock(&comm->lock);
    for (;;) {
        comm_note_pass(comm, pl_now(), &last_pass);
        comm_beat(comm);
        if (comm->stopping)
            break;
        if (comm->failed ? comm->reported : comm->n == 0 && comm->n_timers == 0) {
            sleep_until(comm, comm->failed ? INFINITY : comm->next_beat);
            continue;
        }
        if (comm->failed) { /* here, or by a collective's wait */
            comm->reported = true;
            report_failure(comm);
            continue;
        }
        if (comm->n + comm->n_timers > cap) {
            int grown_cap = 2 * (comm->n + comm->n_timers);
            call *grown = realloc(calls, (size_t)grown_cap * sizeof *calls);
            if (!grown) {
                comm_fail(comm, "out of memory");
                continue;
            }
            calls = grown;
            cap = grown_cap;
        }
        int n_calls = collect(comm, calls);
        if (comm->failed)
            continue;
        double sleep = next_sleep(comm, poll);
        pthread_mutex_unlock(&comm->lock);
        for (int i = 0; i < n_calls; i++)
            calls[i].done(calls[i].context, calls[i].id);
        if (n_calls > 0)
            poll = POLL_FIRST_SECONDS;
        else if (sleep > 0) {
            sleep_seconds(sleep);
            poll = poll * 2 < POLL_LAST_SECONDS ? poll * 2 : POLL_LAST_SECONDS;
        }
        pthread_mutex_lock(&comm->lock);
    }
    pthread_mutex_unlock(&comm->lock);
    free(calls);
    return NULL;
}

/* ---- start and end ----------------------------------------------------------------------- */

/* PLACER_MPI_TIMEOUT: a positive number of seconds, an `s` after it allowed ("5", "5s",
 * "0.5"); unset, the default. */
static pl_status timeout_seconds(double *seconds, pl_error *err)
{
    const char *text = getenv("PLACER_MPI_TIMEOUT");
    *seconds = DEFAULT_TIMEOUT_SECONDS;
    if (!text)
        return PL_OK;
    char *end = NULL;
    /* strtod alone would take spaces, signs, "inf" and hexadecimal */
    double value = isdigit((unsigned char)text[0]) || text[0] == '.' ? strtod(text, &end) : NAN;
    if (end && *end == 's')
        end++;
    if (!end || *end != '\0' || !(value > 0) || !isfinite(value))
        return pl_error_set(err, PL_EINPUT, NULL,
                            "PLACER_MPI_TIMEOUT is \"%s\": give a "
                            "positive number of seconds, such as 5, 5s or 0.5",
                            text);
    *seconds = value;
    return PL_OK;
}

int pl_comm_launched_rank(void)
{
    static const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *text = getenv(names[i]);
        if (text && isdigit((unsigned char)text[0]))
            return atoi(text);
    }
    return -1;
}

/* The comm's thread stopped, its memory freed and MPI ended. */
static void finish(pl_comm *comm)
{
    if (comm->started) {
        pthread_mutex_lock(&comm->lock);
        comm->stopping = true;
        pthread_cond_signal(&comm->wake);
        pthread_mutex_unlock(&comm->lock);
        pthread_join(comm->thread, NULL);
    }
    comm_stop_beats(comm);
    pthread_cond_destroy(&comm->wake);
    pthread_mutex_destroy(&comm->lock);
    free(comm->requests);
    free(comm->messages);
    free(comm->timers);
    free(comm->completed);
    free(comm);
    MPI_Finalize();
}

pl_comm *pl_comm_start(pl_error *err)
{
    if (started_once) {
        pl_error_set(err, PL_EINPUT, NULL, "MPI starts once a process");
        return NULL;
    }
    double timeout;
    if (timeout_seconds(&timeout, err) != PL_OK)
        return NULL;
    started_once = true;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
        pl_error_set(err, PL_EIO, NULL, "MPI did not start");
        return NULL;
    }
    pl_comm *comm = calloc(1, sizeof *comm);
    if (!comm || provided < MPI_THREAD_SERIALIZED) {
        pl_error_set(err, comm ? PL_EIO : PL_ENOMEM, NULL,
                     comm ? "this MPI gives no MPI_THREAD_SERIALIZED" : "out of memory");
        free(comm);
        MPI_Finalize();
        return NULL;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &comm->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &comm->size);
    MPI_Comm host;
    int on_host = 0, found = 0, *limit = NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
    MPI_Comm_size(host, &on_host);
    MPI_Comm_free(&host);
    comm->shared_clock = on_host == comm->size;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &limit, &found);
    comm->beat_tag = found ? *limit : 32767;
    comm->tag_limit = comm->beat_tag - 1; /* the highest is the beats' */
    comm->timeout = timeout;
    /* an MPI error fails the comm with its line, rather than ending the process inside MPI */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    pthread_mutex_init(&comm->lock, NULL);
    pthread_condattr_t monotonic;
    pthread_condattr_init(&monotonic);
    pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC); /* pl_now's */
    pthread_cond_init(&comm->wake, &monotonic);
    pthread_condattr_destroy(&monotonic);
    if (!comm_start_beats(comm)) {
        pl_error_set(err, PL_EIO, NULL, "cannot listen for the other ranks");
        finish(comm);
        return NULL;
    }
    comm->started = pthread_create(&comm->thread, NULL, comm_main, comm) == 0;
    if (!comm->started) {
        pl_error_set(err, PL_EIO, NULL, "cannot start the MPI thread");
        finish(comm);
        return NULL;
    }
    return comm;
}

void pl_comm_on_failure(pl_comm *comm, pl_comm_failed *on_failure, void *context)
{
    pthread_mutex_lock(&comm->lock);
    comm->on_failure = on_failure;
    comm->failure_context = context;
    pthread_mutex_unlock(&comm->lock);
}

pl_status pl_comm_status(pl_comm *comm, pl_error *err)
{
    pthread_mutex_lock(&comm->lock);
    pl_status status = comm->failed ? comm->failure.status : PL_OK;
    if (comm->failed && err)
        pl_error_set(err, comm->failure.status, NULL, "%s", comm->failure.text);
    pthread_mutex_unlock(&comm->lock);
    return status;
}

int pl_comm_rank(const pl_comm *comm)
{
    return comm->rank;
}

int pl_comm_size(const pl_comm *comm)
{
    return comm->size;
}

bool pl_comm_shared_clock(const pl_comm *comm)
{
    return comm->shared_clock;
}

/* ---- collectives: posted, then polled ---------------------------------------------------- */

/* Under the lock: who a collective overdue waits for. MPI does not say: of two ranks it is
 * the other, else a rank that has stopped beating. */
static void absent_text(const pl_comm *comm, char *text, size_t cap)
{
    int silent = comm->size == 2 ? 1 - comm->rank : -1, n_silent = comm->size == 2;
    for (int peer = 0; comm->size > 2 && peer < comm->size; peer++)
        if (peer != comm->rank && comm_silence(comm, peer) > comm->timeout / 2) {
            silent = peer;
            n_silent++;
        }
    if (n_silent == 1)
        snprintf(text, cap, "rank %d has not joined it", silent);
    else if (n_silent > 1)
        snprintf(text, cap, "%d ranks are silent, rank %d among them", n_silent, silent);
    else
        snprintf(text, cap, "one of the other %d ranks has not joined it", comm->size - 1);
}

/* How long a collective may wait: the timeout (DEADLINE); while one rank is alive (its
 * number), as a follower waits for its leader's word however long the leader thinks; or while
 * every rank is (EVERY_RANK_ALIVE), as the end waits for the slowest rank's last outputs.
 * Alive: heard from within the timeout. */
enum { DEADLINE = -1, EVERY_RANK_ALIVE = -2 };

/* Under the lock: fails the comm when a collective posted at `posted` has waited longer
 * than `patience` allows. */
static void check_collective(pl_comm *comm, const char *what, double posted, int patience)
{
    double waited = comm_waited_since(comm, posted);
    if (patience == DEADLINE && waited > comm->timeout) {
        char absent[96];
        absent_text(comm, absent, sizeof absent);
        comm_fail(comm, "%s is %.3g s overdue (PLACER_MPI_TIMEOUT=%g): %s", what, waited,
                  comm->timeout, absent);
    }
    for (int peer = 0; patience != DEADLINE && peer < comm->size && !comm->failed; peer++)
        if ((peer == patience || (patience == EVERY_RANK_ALIVE && peer != comm->rank)) &&
            comm_silence(comm, peer) > comm->timeout)
            comm_fail(comm, "%s: rank %d has sent nothing for %.3g s (PLACER_MPI_TIMEOUT=%g)", what,
                      peer, comm_silence(comm, peer), comm->timeout);
}

/* Polls a collective's request until it completes, or fails the comm (check_collective:
 * its peers may be gone; MPI cannot cancel it, so the comm is unusable from then on). */
static pl_status wait_request(pl_comm *comm, MPI_Request *request, int patience, const char *what,
                              pl_error *err)
{
    double poll = POLL_FIRST_SECONDS, posted = pl_now(), last_pass = posted;
    for (;;) {
        int done = 0;
        pthread_mutex_lock(&comm->lock);
        comm_note_pass(comm, pl_now(), &last_pass);
        if (!comm_mpi_ok(comm, MPI_Test(request, &done, MPI_STATUS_IGNORE), what))
            done = 0;
        if (!done)
            check_collective(comm, what, posted, patience);
        bool failed = comm->failed && !done;
        pthread_mutex_unlock(&comm->lock);
        if (done)
            return PL_OK;
        if (failed)
            return pl_comm_status(comm, err);
        sleep_seconds(poll);
        poll = poll * 2 < POLL_LAST_SECONDS ? poll * 2 : POLL_LAST_SECONDS;
    }
}

/* Under the lock: whether the comm has failed already (nothing more is posted then). */
static bool refused(pl_comm *comm)
{
    if (!comm->failed)
        return false;
    pthread_mutex_unlock(&comm->lock);
    return true;
}

typedef enum collective_kind { BARRIER, BROADCAST, ALL_REDUCE } collective_kind;

typedef struct collective {
    collective_kind kind;
    void *data;
    int count, root;
    MPI_Datatype type;
    MPI_Op op;
} collective;

/* Posts a collective and waits for it, with `patience` (check_collective). */
static pl_status run_collective(pl_comm *comm, const collective *c, int patience, pl_error *err)
{
    char what[64];
    if (c->kind == BROADCAST)
        snprintf(what, sizeof what, "a broadcast from rank %d", c->root);
    else
        snprintf(what, sizeof what, c->kind == BARRIER ? "a barrier" : "an all-reduce");
    MPI_Request request;
    pthread_mutex_lock(&comm->lock);
    if (refused(comm))
        return pl_comm_status(comm, err);
    int code = c->kind == BARRIER ? MPI_Ibarrier(MPI_COMM_WORLD, &request)
               : c->kind == BROADCAST
                   ? MPI_Ibcast(c->data, c->count, c->type, c->root, MPI_COMM_WORLD, &request)
                   : MPI_Iallreduce(MPI_IN_PLACE, c->data, c->count, c->type, c->op, MPI_COMM_WORLD,
                                    &request);
    bool posted = comm_mpi_ok(comm, code, what);
    pthread_mutex_unlock(&comm->lock);
    return posted ? wait_request(comm, &request, patience, what, err) : pl_comm_status(comm, err);
}

pl_status pl_comm_barrier(pl_comm *comm, pl_error *err)
{
    return run_collective(comm, &(collective){.kind = BARRIER}, DEADLINE, err);
}

static pl_status broadcast(pl_comm *comm, void *data, size_t bytes, int root, int patience,
                           pl_error *err)
{
    size_t at = 0;
    do { /* in pieces MPI's int count can say */
        size_t n = bytes - at < INT_MAX ? bytes - at : INT_MAX;
        collective c = {BROADCAST, (char *)data + at, (int)n, root, MPI_BYTE, MPI_OP_NULL};
        pl_status status = run_collective(comm, &c, patience, err);
        if (status != PL_OK)
            return status;
        at += n;
    } while (at < bytes);
    return PL_OK;
}

pl_status pl_comm_broadcast(pl_comm *comm, void *data, size_t bytes, int root, pl_error *err)
{
    return broadcast(comm, data, bytes, root, DEADLINE, err);
}

pl_status pl_comm_listen(pl_comm *comm, void *data, size_t bytes, int root, pl_error *err)
{
    /* the root itself waits as in any broadcast */
    return broadcast(comm, data, bytes, root, root == comm->rank ? DEADLINE : root, err);
}

pl_status pl_comm_max(pl_comm *comm, double *values, int n, pl_error *err)
{
    collective c = {ALL_REDUCE, values, n, 0, MPI_DOUBLE, MPI_MAX};
    return run_collective(comm, &c, DEADLINE, err);
}

pl_status pl_comm_sum_floats(pl_comm *comm, float *values, int n, pl_error *err)
{
    collective c = {ALL_REDUCE, values, n, 0, MPI_FLOAT, MPI_SUM};
    return run_collective(comm, &c, DEADLINE, err);
}

pl_status pl_comm_end(pl_comm *comm, pl_error *err)
{
    if (!comm)
        return PL_OK;
    /* MPI_Finalize waits for every rank for ever: first a barrier that waits while they
       are alive */
    pl_status status = run_collective(comm, &(collective){.kind = BARRIER}, EVERY_RANK_ALIVE, err);
    if (status == PL_OK)
        finish(comm);
    return status;
}

/* ---- point to point ---------------------------------------------------------------------- */

static bool reserve(pl_comm *comm)
{
    if (comm->n < comm->cap)
        return true;
    int cap = comm->cap ? 2 * comm->cap : 64;
    MPI_Request *requests = realloc(comm->requests, (size_t)cap * sizeof *requests);
    if (requests)
        comm->requests = requests;
    message *messages = realloc(comm->messages, (size_t)cap * sizeof *messages);
    if (messages)
        comm->messages = messages;
    int *completed = realloc(comm->completed, (size_t)cap * sizeof *completed);
    if (completed)
        comm->completed = completed;
    if (!requests || !messages || !completed)
        return false;
    comm->cap = cap;
    return true;
}

static pl_status post(pl_comm *comm, void *data, size_t bytes, int peer, int tag, bool sending,
                      pl_comm_done *done, void *context, int id, pl_error *err)
{
    if (bytes > INT_MAX)
        return pl_error_set(err, PL_EINPUT, NULL, "a message of %zu bytes: at most %d cross "
                            "processes", bytes, INT_MAX);
    if (tag < 0 || tag > comm->tag_limit)
        return pl_error_set(err, PL_EINPUT, NULL, "MPI tag %d is beyond this MPI's %d", tag,
                            comm->tag_limit);
    pthread_mutex_lock(&comm->lock);
    if (refused(comm))
        return pl_comm_status(comm, err);
    if (!reserve(comm)) {
        pthread_mutex_unlock(&comm->lock);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    MPI_Request *request = &comm->requests[comm->n];
    int code = sending ? MPI_Isend(data, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, request)
                       : MPI_Irecv(data, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, request);
    if (!comm_mpi_ok(comm, code, sending ? "a send" : "a receive")) {
        pthread_mutex_unlock(&comm->lock);
        return pl_comm_status(comm, err);
    }
    comm->messages[comm->n++] = (message){done, context, id, peer, tag, sending, pl_now()};
    pthread_cond_signal(&comm->wake);
    pthread_mutex_unlock(&comm->lock);
    return PL_OK;
}

pl_status pl_comm_send(pl_comm *comm, const void *data, size_t bytes, int to, int tag,
                       pl_comm_done *done, void *context, int id, pl_error *err)
{
    return post(comm, (void *)data, bytes, to, tag, true, done, context, id, err);
}

pl_status pl_comm_receive(pl_comm *comm, void *data, size_t bytes, int from, int tag,
                          pl_comm_done *done, void *context, int id, pl_error *err)
{
    return post(comm, data, bytes, from, tag, false, done, context, id, err);
}

pl_status pl_comm_call_at(pl_comm *comm, double when, pl_comm_done *done, void *context, int id,
                          pl_error *err)
{
    pthread_mutex_lock(&comm->lock);
    if (comm->n_timers == comm->cap_timers) {
        int cap = comm->cap_timers ? 2 * comm->cap_timers : 16;
        timer *timers = realloc(comm->timers, (size_t)cap * sizeof *timers);
        if (!timers) {
            pthread_mutex_unlock(&comm->lock);
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
        comm->timers = timers;
        comm->cap_timers = cap;
    }
    comm->timers[comm->n_timers++] = (timer){when, done, context, id};
    pthread_cond_signal(&comm->wake);
    pthread_mutex_unlock(&comm->lock);
    return PL_OK;
}

/* ---- measuring ---------------------------------------------------------------------------- */

typedef struct waiter {
    pthread_mutex_t lock;
    pthread_cond_t done;
    int left;
} waiter;

static void arrived(void *context, int id)
{
    (void)id;
    waiter *w = context;
    pthread_mutex_lock(&w->lock);
    if (--w->left == 0)
        pthread_cond_signal(&w->done);
    pthread_mutex_unlock(&w->lock);
}

pl_status pl_comm_exchange(pl_comm *comm, const void *out, size_t out_bytes, int to,
                           void *in, size_t in_bytes, int from, int tag, pl_error *err)
{
    waiter w = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER,
                .left = (out != NULL) + (in != NULL)};
    pl_status status = PL_OK;
    if (out && (status = post(comm, (void *)out, out_bytes, to, tag, true, arrived, &w, 0,
                              err)) != PL_OK)
        w.left -= 1 + (in != NULL); /* nothing posted, nothing to wait for */
    if (in && status == PL_OK &&
        (status = post(comm, in, in_bytes, from, tag, false, arrived, &w, 0, err)) != PL_OK) {
        pthread_mutex_lock(&w.lock);
        w.left--;
        pthread_mutex_unlock(&w.lock);
    }
    pthread_mutex_lock(&w.lock);
    while (w.left > 0 && status == PL_OK) { /* a failed comm completes nothing more */
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 50 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) {
            until.tv_sec++;
            until.tv_nsec -= 1000 * 1000 * 1000;
        }
        if (pthread_cond_timedwait(&w.done, &w.lock, &until) == ETIMEDOUT)
            status = pl_comm_status(comm, err);
    }
    pthread_mutex_unlock(&w.lock);
    pthread_cond_destroy(&w.done);
    pthread_mutex_destroy(&w.lock);
    return status;
}

pl_status pl_comm_ping_pong(pl_comm *comm, void *buffer, size_t bytes, double *one_way,
                            pl_error *err)
{
    pl_status status = PL_OK;
    double start = pl_now();
    if (comm->rank == 0 &&
        (status = pl_comm_exchange(comm, buffer, bytes, 1, NULL, 0, 0, 0, err)) == PL_OK)
        status = pl_comm_exchange(comm, NULL, 0, 0, buffer, bytes, 1, 0, err);
    if (comm->rank == 1 &&
        (status = pl_comm_exchange(comm, NULL, 0, 0, buffer, bytes, 0, 0, err)) == PL_OK)
        status = pl_comm_exchange(comm, buffer, bytes, 0, NULL, 0, 0, 0, err);
    *one_way = (pl_now() - start) / 2;
    return status;
}
