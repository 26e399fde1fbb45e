/* How steady this machine's cores are: a fixed kernel (a 256x256 single-precision matrix
 * product and a tanh over a quarter of a million floats, about 3 ms) timed on each core in turn, every
 * interval, for a while. A VM shares its host's cores with neighbours; when one works, a
 * core slows down for seconds at a time, and every step measured then slows with it. The
 * simulator's profile of the machine cannot foresee that; this says how much of it there
 * was. Per core: the quiet time (10th percentile), the median, 90th percentile and worst
 * as multiples of it, how often it ran 5% and 20% slow, the longest slow spell, and a
 * strip of the samples in order. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

enum { N = 256, ELEMENTS = 1 << 18, REPEATS = 5, MAX_CORES = 64, MAX_SAMPLES = 100000 };

typedef struct probe {
    int core;
    float *a, *b, *c, *x, *y;
    double seconds; /* the median of REPEATS runs */
} probe;

static double kernel(probe *p)
{
    double start = pl_now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, N, N, 1, p->a, N, p->b, N, 0,
                p->c, N);
    for (int i = 0; i < ELEMENTS; i++)
        p->y[i] = tanhf(p->x[i]) * p->y[i] + 1e-3f;
    return pl_now() - start;
}

static void *run_probe(void *arg)
{
    probe *p = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(p->core, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    double times[REPEATS];
    kernel(p); /* warm: caches, the page tables */
    for (int r = 0; r < REPEATS; r++)
        times[r] = kernel(p);
    p->seconds = pl_median(times, REPEATS);
    return NULL;
}

/* One core's row, from its samples t[0 .. n) in order (`sorted`: room for a copy); returns
 * its quiet time. */
static double report(int core, const double *t, int n, double interval, double *sorted)
{
    memcpy(sorted, t, (size_t)n * sizeof *sorted);
    double quiet = pl_quantile(sorted, n, 0.1);
    int slow5 = 0, slow20 = 0, spell = 0, longest = 0;
    for (int i = 0; i < n; i++) {
        slow5 += t[i] > 1.05 * quiet;
        slow20 += t[i] > 1.2 * quiet;
        spell = t[i] > 1.2 * quiet ? spell + 1 : 0;
        longest = spell > longest ? spell : longest;
    }
    printf("%4d %7d %9.3f %7.2fx %7.2fx %7.2fx %7.0f%% %7.0f%% %9.0f s\n", core, n, 1e3 * quiet,
           pl_quantile(sorted, n, 0.5) / quiet, pl_quantile(sorted, n, 0.9) / quiet,
           sorted[n - 1] / quiet, 100.0 * slow5 / n, 100.0 * slow20 / n, longest * interval);
    return quiet;
}

static void strip(int core, const double *t, int n, double quiet)
{
    printf("core %d  ", core);
    for (int i = 0; i < n; i++)
        putchar(t[i] > 1.2 * quiet ? '#' : t[i] > 1.05 * quiet ? '+' : '.');
    putchar('\n');
}

static bool parse_seconds(const char *text, double low, double high, double *value)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !(v >= low && v <= high))
        return false;
    *value = v;
    return true;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: noise [--seconds S] [--interval S]\n"
                 "  --seconds S    how long to watch, 1-3600 (default 120)\n"
                 "  --interval S   between two rounds over the cores, 0.05-60 (default 1)\n");
}

int main(int argc, char **argv)
{
    double seconds = 120, interval = 1;
    for (int i = 1; i < argc; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (!value || !((strcmp(argv[i], "--seconds") == 0 &&
                         parse_seconds(value, 1, 3600, &seconds)) ||
                        (strcmp(argv[i], "--interval") == 0 &&
                         parse_seconds(value, 0.05, 60, &interval)))) {
            usage(stderr);
            return 2;
        }
        i++;
    }
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    cores = cores < 1 ? 1 : cores > MAX_CORES ? MAX_CORES : cores;
    int rounds = (int)(seconds / interval) + 1;
    rounds = rounds > MAX_SAMPLES ? MAX_SAMPLES : rounds;
    openblas_set_num_threads(1);
    probe p = {0};
    p.a = calloc(N * N, sizeof *p.a);
    p.b = calloc(N * N, sizeof *p.b);
    p.c = calloc(N * N, sizeof *p.c);
    p.x = calloc(ELEMENTS, sizeof *p.x);
    p.y = calloc(ELEMENTS, sizeof *p.y);
    double *times = malloc((size_t)cores * (size_t)rounds * sizeof *times);
    double *sorted = malloc((size_t)rounds * sizeof *sorted);
    if (!p.a || !p.b || !p.c || !p.x || !p.y || !times || !sorted) {
        fprintf(stderr, "noise: out of memory\n");
        return 1;
    }
    for (int i = 0; i < ELEMENTS; i++)
        p.x[i] = (float)(i % 1000) * 1e-3f;
    printf("noise: a %dx%d matrix product and a tanh over %d floats, the median of %d, on "
           "each of %d cores every %.2g s for %.0f s\n", N, N, ELEMENTS, REPEATS, cores,
           interval, seconds);
    fflush(stdout);
    double start = pl_now();
    int n = 0;
    for (; n < rounds && pl_now() - start < seconds; n++) {
        double round_start = pl_now();
        for (int core = 0; core < cores; core++) {
            pthread_t thread;
            p.core = core;
            if (pthread_create(&thread, NULL, run_probe, &p) != 0) {
                fprintf(stderr, "noise: cannot start a thread\n");
                return 1;
            }
            pthread_join(thread, NULL);
            times[(size_t)core * (size_t)rounds + (size_t)n] = p.seconds;
        }
        double rest = interval - (pl_now() - round_start);
        if (rest > 0)
            nanosleep(&(struct timespec){(time_t)rest, (long)((rest - floor(rest)) * 1e9)},
                      NULL);
    }
    printf("\ncore samples  quiet ms  median      p90    worst  >5%% slow >20%% slow  "
           "longest >20%%\n");
    double quiet[MAX_CORES];
    for (int core = 0; core < cores; core++)
        quiet[core] = report(core, times + (size_t)core * (size_t)rounds, n, interval, sorted);
    printf("\neach sample in order: '.' within 5%% of quiet, '+' 5-20%% slow, '#' over 20%%\n");
    for (int core = 0; core < cores; core++)
        strip(core, times + (size_t)core * (size_t)rounds, n, quiet[core]);
    free(times);
    free(sorted);
    free(p.a);
    free(p.b);
    free(p.c);
    free(p.x);
    free(p.y);
    return 0;
}
