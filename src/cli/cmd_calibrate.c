/* placer calibrate [--cluster C] [--force]: measures this machine for the cost model once
 * and caches it (cost/profile.h); prints what the profile says. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli.h"
#include "profile.h"

void pl_cli_calibration_progress(void *context, const char *what)
{
    if (!context || *(const bool *)context)
        fprintf(stderr, "placer: calibrating: %s\n", what);
}

static void print_profile(const pl_cost_model *m, const char *path)
{
    printf("profile: %s\nmachine: %s\n", path, m->machine);
    for (int t = 1; t <= PL_COST_MAX_THREADS; t++) {
        if (!pl_cost_has_threads(m, t))
            continue;
        int kinds = 0;
        for (int k = 0; k < PL_OP_COUNT; k++)
            kinds += m->ops[t][k].samples > 0;
        const pl_op_cost *mm = &m->ops[t][PL_OP_MATMUL];
        printf("devices of %d thread%s: %d op kinds fitted; matmul %.1f GFLOP/s + %.1f us "
               "per call\n", t, t == 1 ? "" : "s", kinds,
               mm->per_flop > 0 ? 1e-9 / mm->per_flop : 0, 1e6 * mm->seconds);
    }
    printf("native copies:");
    for (int i = 0; i < m->n_copy_points; i++) {
        char bytes[32];
        printf("%s %s %.1f us", i ? "," : "", pl_units_bytes(m->copy_curve[i].bytes, bytes,
               sizeof bytes), 1e6 * m->copy_curve[i].seconds);
    }
    printf("; per task %.2f us\n", 1e6 * m->task_seconds);
    printf("hand-off to an idle device: %.1f us polling, %.1f us once it sleeps; %.1f us to a "
           "native one that never polls\n", 1e6 * m->poll_seconds, 1e6 * m->wake_seconds,
           1e6 * m->handoff_seconds);
    static const char *const what[PL_DELAY_COUNT] = {
        "an op its pacer slept through ends late", "one it spun through",
        "a copy over a paced link", "a hand-off to an idle paced thread",
        "the gap to a queued next task"};
    printf("paced delays, us, with 0 / 1 / 2 / %d+ other threads computing:\n",
           PL_COST_CONTENTION - 1);
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        printf("  %-40s", what[d]);
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            printf(" %s%6.1f", k ? "/" : "", 1e6 * m->paced_delays[d][k]);
        printf("\n");
    }
}

int pl_cmd_calibrate(int argc, char **argv)
{
    static const struct option options[] = {{"cluster", required_argument, NULL, 'c'},
                                            {"force", no_argument, NULL, 'f'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *cluster_path = NULL;
    bool force = false, verbose = true;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "fqh", options, NULL)) != -1) {
        switch (c) {
        case 'c': cluster_path = optarg; break;
        case 'f': force = true; break;
        case 'q': verbose = false; break;
        case 'h':
            printf("Usage: placer calibrate [--cluster C] [--force] [-q]\n"
                   "Measures this machine's kernels, copies and executor costs for the cost\n"
                   "model, for the thread counts of the cluster's devices (default: this\n"
                   "machine), and caches the profile; --force measures again.\n"
                   "\n"
                   "  --cluster FILE   the cluster ('-': standard input)\n"
                   "  -f, --force      measure again even when the cached profile fits\n"
                   "  -q, --quiet      no progress\n"
                   "The profile: $PLACER_PROFILE, else $XDG_CACHE_HOME/placer/profile.json,\n"
                   "else ~/.cache/placer/profile.json.\n"
                   "More: " PLACER_DOCDIR "/simulator.md.\n");
            return PL_EXIT_OK;
        default:
            return pl_cli_usage_error("calibrate: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind < argc)
        return pl_cli_usage_error("calibrate: unexpected argument '%s'", argv[optind]);
    char profile[4096];
    const pl_cli_file input = {cluster_path, "the cluster"};
    const pl_cli_file output = pl_cli_profile_output(profile, sizeof profile);
    int checked = pl_cli_check_outputs(&input, 1, &output, 1);
    if (checked != PL_EXIT_OK)
        return checked;
    pl_error err;
    pl_error_init(&err, cluster_path);
    pl_cluster *cluster = cluster_path ? pl_cluster_load_file(cluster_path, &err)
                                       : pl_cluster_local(&err);
    if (!cluster)
        return pl_cli_report(&err);
    pl_cost_model *m = calloc(1, sizeof *m);
    bool calibrated = false;
    double start = pl_now();
    pl_error_init(&err, NULL);
    int status = PL_EXIT_OK;
    if (!m || pl_profile_load(m, cluster, force, pl_cli_calibration_progress, &verbose, NULL, &calibrated, &err) !=
                  PL_OK) {
        status = m ? pl_cli_report(&err) : PL_EXIT_FAILURE;
    } else {
        double seconds = pl_now() - start;
        char path[4096] = "(not cached: no home directory)";
        pl_profile_path(path, sizeof path);
        print_profile(m, path);
        if (!calibrated)
            printf("(cached; --force measures again)\n");
        else
            printf("calibrated in %.1f s\n", seconds);
    }
    if (m)
        pl_cost_model_clear(m);
    free(m);
    pl_cluster_free(cluster);
    return status;
}
