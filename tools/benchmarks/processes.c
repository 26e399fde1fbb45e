/* Copies between processes against copies inside one (tools/bench-processes runs it under
 * mpirun -np 4): a range sent from rank 0 to rank 1 and back through the comm (comm.h),
 * the path a transfer between ranks takes in the executor (posted at once, completed by the
 * comm's thread, which polls), against a memcpy between two buffers, the executor's copy
 * over a native link. Per size: the one-way time (half the round trip) median over the
 * repeats, with its spread, and the bandwidth it gives. Rank 0 prints.
 *
 * Then an all-reduce over every rank: placer's ring over the comm's messages against MPI's
 * own MPI_Allreduce.
 *
 *   mpirun -np N tools/benchmarks/processes [--repeats N]     (N >= 2)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "comm.h"

enum { MAX_REPEATS = 1000, WARMUP = 5 };

static double ping_pong(pl_comm *comm, char *buffer, size_t bytes)
{
    pl_error err;
    double one_way;
    if (pl_comm_ping_pong(comm, buffer, bytes, &one_way, &err) != PL_OK)
        bench_abort(&err, 1);
    return one_way;
}

/* Sends one range to the next rank and receives one from the previous, as the executor's
 * ring step does over links between ranks. */
static void exchange(pl_comm *comm, const float *out, float *in, size_t n, int tag)
{
    int rank = pl_comm_rank(comm), size = pl_comm_size(comm);
    pl_error err;
    if (pl_comm_exchange(comm, out, n * sizeof *out, (rank + 1) % size, in, n * sizeof *in,
                         (rank + size - 1) % size, tag, &err) != PL_OK)
        bench_abort(&err, 1);
}

/* placer's ring all-reduce (program.h: n - 1 steps of sending a chunk on and adding it,
 * n - 1 of passing the sums on) over the comm's messages. */
static double ring_sum(pl_comm *comm, float *values, float *scratch, size_t n)
{
    int rank = pl_comm_rank(comm), size = pl_comm_size(comm);
    size_t chunk = n / (size_t)size;
    double start = pl_now();
    for (int step = 0; step < size - 1; step++) {
        int out = (rank - step + size) % size, in = (rank - step - 1 + 2 * size) % size;
        exchange(comm, values + (size_t)out * chunk, scratch, chunk, step);
        float *own = values + (size_t)in * chunk;
        for (size_t i = 0; i < chunk; i++)
            own[i] += scratch[i];
    }
    for (int step = 0; step < size - 1; step++) {
        int out = (rank + 1 - step + size) % size, in = (rank - step + size) % size;
        exchange(comm, values + (size_t)out * chunk, values + (size_t)in * chunk, chunk,
                 size + step);
    }
    return pl_now() - start;
}

static double mpi_sum(pl_comm *comm, float *values, size_t n)
{
    double start = pl_now();
    pl_error err;
    if (pl_comm_sum_floats(comm, values, (int)n, &err) != PL_OK)
        bench_abort(&err, 1);
    return pl_now() - start;
}

static double copy_once(char *to, const char *from, size_t bytes)
{
    double start = pl_now();
    memcpy(to, from, bytes);
    __asm__ volatile("" ::: "memory"); /* the copy happens here, not later */
    return pl_now() - start;
}

static void row(const char *what, size_t bytes, double *times, int n)
{
    pl_stats s = pl_stats_of(times, n);
    double spread = s.median > 0 ? (s.max - s.min) / s.median : 0;
    printf("| %s | %zu KiB | %.1f us | %.0f%% | %.2f GB/s |\n", what, bytes >> 10,
           1e6 * s.median, 100 * spread, (double)bytes / s.median / 1e9);
}

int main(int argc, char **argv)
{
    int repeats = 50;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeats") == 0 && i + 1 < argc &&
            bench_parse_int(argv[i + 1], 1, MAX_REPEATS, &repeats)) {
            i++;
            continue;
        }
        fprintf(stderr, "usage: mpirun -np N processes [--repeats N]\n");
        return 2;
    }
    pl_error err;
    pl_error_init(&err, NULL);
    pl_comm *comm = pl_comm_launched() ? pl_comm_start(&err) : NULL;
    if (!comm || pl_comm_size(comm) < 2) {
        fprintf(stderr, "processes: run it under mpirun -np N, N >= 2%s%s\n", comm ? "" : ": ",
                comm ? "" : err.text);
        pl_comm_end(comm, NULL);
        return 2;
    }
    static const size_t sizes[] = {4 << 10, 64 << 10, 1 << 20, 16 << 20};
    enum { N_SIZES = sizeof sizes / sizeof *sizes };
    size_t largest = sizes[N_SIZES - 1];
    char *a = aligned_alloc(64, largest), *b = aligned_alloc(64, largest);
    double *times = malloc((size_t)repeats * sizeof *times);
    if (!a || !b || !times) {
        fprintf(stderr, "processes: out of memory\n");
        bench_abort(NULL, 1);
    }
    memset(a, 1, largest);
    memset(b, 2, largest);
    bool speaks = pl_comm_rank(comm) == 0;
    if (speaks) {
        printf("One-way time of a range between two ranks on this host (half a round trip "
               "through the comm, as the executor sends it) against a copy in one process "
               "(memcpy, the executor's copy over a native link); median of %d after %d "
               "warm-up, spread = (max - min) / median.\n\n", repeats, WARMUP);
        printf("| copy | size | one way | spread | bandwidth |\n|---|---|---|---|---|\n");
    }
    for (int s = 0; s < N_SIZES; s++) {
        for (int k = 0; k < WARMUP + repeats; k++) /* the last `repeats` are kept */
            times[k % repeats] = ping_pong(comm, a, sizes[s]);
        if (speaks)
            row("between ranks (MPI)", sizes[s], times, repeats);
        for (int k = 0; k < WARMUP + repeats; k++)
            times[k % repeats] = copy_once(b, a, sizes[s]);
        if (speaks)
            row("in one process (memcpy)", sizes[s], times, repeats);
        if (pl_comm_barrier(comm, &err) != PL_OK)
            bench_abort(&err, 1);
    }
    if (speaks)
        printf("\nAll-reduce (a sum of floats) over the %d ranks, native: placer's ring over "
               "the comm's messages (what the executor runs between ranks) against MPI's own "
               "MPI_Allreduce (Open MPI's choice of algorithm); median of %d, the slowest rank's "
               "time. Below 1, the ring is faster.\n\n", pl_comm_size(comm), repeats);
    if (speaks)
        printf("| size | placer's ring | MPI_Allreduce | ring / MPI |\n|---|---|---|---|\n");
    static const size_t sums[] = {1 << 20, 4 << 20, 16 << 20};
    double *other = malloc((size_t)repeats * sizeof *other);
    for (size_t s = 0; other && s < sizeof sums / sizeof *sums; s++) {
        size_t n = sums[s] / sizeof(float);
        for (int k = 0; k < WARMUP + repeats; k++) {
            double t[2] = {ring_sum(comm, (float *)a, (float *)b, n),
                           mpi_sum(comm, (float *)a, n)};
            if (pl_comm_max(comm, t, 2, &err) != PL_OK)
                bench_abort(&err, 1);
            times[k % repeats] = t[0];
            other[k % repeats] = t[1];
        }
        double ring = pl_median(times, repeats), mpi = pl_median(other, repeats);
        if (speaks)
            printf("| %zu MiB | %.2f ms | %.2f ms | %.2f |\n", sums[s] >> 20, 1e3 * ring,
                   1e3 * mpi, ring / mpi);
    }
    free(other);
    free(a);
    free(b);
    free(times);
    if (pl_comm_end(comm, &err) != PL_OK)
        bench_abort(&err, 1);
    return 0;
}
