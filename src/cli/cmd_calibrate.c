/* placer calibrate [--cluster C] [--force | --check]: measures this machine for the cost
 * model once and caches it (cost/profile.h); prints what the profile says. --check measures
 * nothing: it says whether the cached profile serves, how old and how noisy it is. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autodiff.h"
#include "cli.h"
#include "load.h"
#include "profile.h"

void pl_cli_calibration_progress(void *context, const char *what)
{
    if (!context || *(const bool *)context)
        fprintf(stderr, "placer: calibrating: %s\n", what);
}

void pl_cli_warn_profile(const pl_cost_model *m)
{
    char line[1024];
    if (pl_cli_leader() && pl_profile_warning(m, (long long)time(NULL), line, sizeof line))
        fprintf(stderr, "placer: warning: %s\n", line);
}

/* The ops that slow most beside another device, and the factor over every kind. */
static void print_together(const pl_cost_model *m, int threads)
{
    int order[PL_OP_COUNT], n = 0;
    for (int k = 0; k < PL_OP_COUNT; k++)
        if (m->ops[threads][k].together > 0)
            order[n++] = k;
    for (int i = 1; i < n; i++) /* by factor, largest first: few kinds, insertion sort */
        for (int j = i; j > 0 && m->ops[threads][order[j]].together >
                                     m->ops[threads][order[j - 1]].together; j--) {
            int swap = order[j];
            order[j] = order[j - 1];
            order[j - 1] = swap;
        }
    printf("  beside another device computing, ops take x%.2f (every kind)",
           m->ops[threads][PL_OP_COUNT].together);
    for (int i = 0; i < n && i < 4; i++)
        printf("%s %s x%.2f", i ? "," : "; most", pl_op_info_of((pl_op_kind)order[i])->name,
               m->ops[threads][order[i]].together);
    for (int i = n - 2 > 4 ? n - 2 : 4; i < n; i++)
        printf("%s %s x%.2f", i == (n - 2 > 4 ? n - 2 : 4) ? "; least" : ",",
               pl_op_info_of((pl_op_kind)order[i])->name, m->ops[threads][order[i]].together);
    printf("\n");
}

static void print_profile(const pl_cost_model *m, const char *path)
{
    printf("profile: %s\nmachine: %s\n", path, m->machine);
    for (int t = 1; t <= PL_COST_MAX_THREADS; t++) {
        if (!pl_cost_has_threads(m, t))
            continue;
        int kinds = 0, routes = 0;
        for (int k = 0; k < PL_OP_COUNT; k++)
            kinds += m->ops[t][k].samples > 0;
        for (int i = 0; i < m->n_routes; i++)
            routes += m->routes[i].threads == t;
        const pl_op_cost *mm = &m->ops[t][PL_OP_MATMUL];
        printf("devices of %d thread%s: %d op kinds and %d kernel routes fitted; matmul %.1f "
               "GFLOP/s + %.1f us per call\n", t, t == 1 ? "" : "s", kinds, routes,
               mm->per_flop > 0 ? 1e-9 / mm->per_flop : 0, 1e6 * mm->seconds);
        if (m->ops[t][PL_OP_COUNT].together > 0)
            print_together(m, t);
    }
    printf("native copies:");
    for (int i = 0; i < m->n_copy_points; i++) {
        char bytes[32];
        printf("%s %s %.1f us", i ? "," : "", pl_units_bytes(m->copy_curve[i].bytes, bytes,
               sizeof bytes), 1e6 * m->copy_curve[i].seconds);
    }
    printf("; per task %.2f us\n", 1e6 * m->task_seconds);
    if (m->process_seconds > 0 || m->process_per_byte > 0)
        printf("between ranks of this host (MPI): %.1f us + %.2f GB/s\n",
               1e6 * m->process_seconds,
               m->process_per_byte > 0 ? 1e-9 / m->process_per_byte : 0);
    else
        printf("between ranks: not measured (mpirun -np 2 placer calibrate measures them)\n");
    printf("an op whose inputs the other core copied in: %.2f us longer\n",
           1e6 * m->remote_seconds);
    printf("hand-off to an idle device: %.1f us polling, %.1f us once it sleeps; %.1f us to a "
           "native one that never polls\n", 1e6 * m->poll_seconds, 1e6 * m->wake_seconds,
           1e6 * m->handoff_seconds);
    static const char *const what[PL_DELAY_COUNT] = {
        "an op its pacer slept through ends late", "one it spun through",
        "a copy over a paced link", "a hand-off to an idle paced thread",
        "the gap to a queued next task"};
    printf("paced delays, us: alone / others idle / others pacing / one computing / more; "
           "the idle and pacing levels plus, per other thread busy, used and both:\n");
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        printf("  %-40s", what[d]);
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            printf(" %s%6.1f", k ? "/" : "", 1e6 * m->paced_delays[d][k]);
        printf(";");
        for (int k = 0; k < PL_SHARING_TERMS; k++)
            printf(" %s%5.2f", k ? "/" : "", 1e6 * m->paced_sharing[d][k]);
        printf("\n");
    }
    printf("  %-40s %6.1f\n", "and for each queue it woke first", 1e6 * m->paced_signal_seconds);
    printf("  %-40s %6.1f\n", "the last task waking the step's caller", 1e6 * m->paced_finish_seconds);
}

/* measured: when, how long ago, in how long; noise: the figures against their thresholds. */
static void print_calibration(const pl_calibration_record *r, long long now)
{
    if (r->measured_at > 0) {
        char utc[32] = "?", age[32];
        time_t t = (time_t)r->measured_at;
        struct tm tm;
        if (gmtime_r(&t, &tm))
            strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
        pl_profile_age_text((double)(now - r->measured_at), age, sizeof age);
        printf("measured: %s (%s) in %.1f s, %d attempt%s\n", utc, age, r->seconds,
               r->attempts, r->attempts == 1 ? "" : "s");
    } else {
        printf("measured: at an unknown time (a profile made by hand)\n");
    }
    char judged[64] = "";
    if (r->compared < PL_CALIBRATION_MIN_COMPARED)
        snprintf(judged, sizeof judged, ", not judged under %d ops", PL_CALIBRATION_MIN_COMPARED);
    printf("noise: the two passes disagree by %.1f%% at the median and %.1f%% at the 90th "
           "percentile of %d ops (noisy above %.0f%%%s); other work took %.0f%% of the CPU "
           "(noisy above %.0f%%)\n", 100 * r->spread_median, 100 * r->spread_p90, r->compared,
           100 * r->spread_threshold, judged, 100 * r->others_share, 100 * r->others_threshold);
}

/* --check: what the cached profile is, without measuring; 0 when it serves this machine and
 * the cluster and is quiet and recent, else 1. */
static int check_profile(const pl_cluster *cluster)
{
    char path[4096];
    if (!pl_profile_path(path, sizeof path)) {
        printf("profile: none (no home directory, no PLACER_PROFILE)\nverdict: missing\n");
        return PL_EXIT_FAILURE;
    }
    printf("profile: %s\n", path);
    if (access(path, F_OK) != 0) {
        printf("verdict: missing: `placer calibrate` measures it\n");
        return PL_EXIT_FAILURE;
    }
    pl_cost_model *m = calloc(1, sizeof *m);
    pl_error err;
    if (!m)
        return PL_EXIT_FAILURE;
    if (pl_cost_model_read(m, path, &err) != PL_OK) {
        char line[PL_ERROR_TEXT_MAX + 4096 + 64];
        pl_error_format(&err, line, sizeof line);
        printf("verdict: does not read (%s): `placer calibrate` measures it again\n", line);
        free(m);
        return PL_EXIT_FAILURE;
    }
    long long now = (long long)time(NULL);
    printf("machine: %s\n", m->machine);
    printf("threads: the cluster's devices have");
    for (int t = 1, first = 1; t <= PL_COST_MAX_THREADS; t++)
        for (int d = 0; d < cluster->n_devices; d++)
            if (cluster->devices[d].threads == t) {
                printf("%s %d", first ? "" : ",", t);
                first = 0;
                break;
            }
    printf("; the profile measured");
    for (int t = 1, first = 1; t <= PL_COST_MAX_THREADS; t++)
        if (pl_cost_has_threads(m, t)) {
            printf("%s %d", first ? "" : ",", t);
            first = 0;
        }
    printf("\n");
    pl_error_init(&err, path);
    bool serves = pl_profile_check(m, cluster, &err) == PL_OK;
    if (serves) {
        printf("serves: yes, this machine and the cluster's thread counts\n");
    } else {
        char line[PL_ERROR_TEXT_MAX + 4096 + 64];
        pl_error_format(&err, line, sizeof line);
        printf("serves: no (%s)\n", line);
    }
    print_calibration(&m->calibration, now);
    bool noisy = pl_calibration_noisy(&m->calibration), old = pl_profile_old(m, now);
    if (serves && !noisy && !old) {
        printf("verdict: good: it serves, is quiet and was measured within %d days\n",
               PL_PROFILE_OLD_DAYS);
    } else {
        char why[128] = "";
        int at = 0;
        if (!serves)
            at += snprintf(why + at, sizeof why - (size_t)at, "does not serve");
        if (noisy)
            at += snprintf(why + at, sizeof why - (size_t)at, "%snoisy", at ? ", " : "");
        if (old)
            snprintf(why + at, sizeof why - (size_t)at, "%sold (over %d days or unknown)",
                     at ? ", " : "", PL_PROFILE_OLD_DAYS);
        printf("verdict: %s: measure again with `placer calibrate --force`%s\n", why,
               noisy || old ? " on a quiet machine" : "");
    }
    pl_cost_model_clear(m);
    free(m);
    return serves && !noisy && !old ? PL_EXIT_OK : PL_EXIT_FAILURE;
}

/* The models' own ops measured into the profile, which is written again; what the profile
 * now predicts of each model from measurements, and what by extrapolation. */
static int measure_models(pl_cost_model *m, const pl_cluster *cluster, char **models,
                          int n_models, bool verbose)
{
    int threads[PL_COST_MAX_THREADS];
    int n_threads = pl_profile_threads(cluster, NULL, threads);
    pl_calibration how = {.threads = threads, .n_threads = n_threads,
                          .progress = pl_cli_calibration_progress, .context = &verbose,
                          .interrupt = &pl_cli_interrupted};
    pl_error err;
    pl_error_init(&err, NULL);
    int added = 0;
    if (pl_cost_calibrate_models(m, models, n_models, &how, &added, &err) != PL_OK)
        return pl_cli_report(&err);
    char path[4096];
    if (pl_profile_path(path, sizeof path) && pl_cost_model_write(m, path, &err) != PL_OK)
        return pl_cli_report(&err);
    printf("measured %d model%s: %d op configurations new to the profile\n", n_models,
           n_models == 1 ? "" : "s", added);
    for (int i = 0; i < n_models; i++) {
        pl_error_init(&err, models[i]);
        pl_graph *g = pl_graph_load_file(models[i], &err);
        if (!g || pl_autodiff_build(g, &err) != PL_OK) {
            pl_graph_free(g);
            return pl_cli_report(&err);
        }
        int measured = pl_cost_measured_ops(m, g, threads[0]);
        printf("  %s: %d of its %d training ops measured at its batch, %d by their kinds' "
               "fits\n", models[i], measured, g->n_ops, g->n_ops - measured);
        pl_graph_free(g);
    }
    return PL_EXIT_OK;
}

int pl_cmd_calibrate(int argc, char **argv)
{
    static const struct option options[] = {{"cluster", required_argument, NULL, 'c'},
                                            {"force", no_argument, NULL, 'f'},
                                            {"check", no_argument, NULL, 'k'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    const char *cluster_path = NULL;
    bool force = false, check = false, verbose = true;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "fqh", options, NULL)) != -1) {
        switch (c) {
        case 'c': cluster_path = optarg; break;
        case 'f': force = true; break;
        case 'k': check = true; break;
        case 'q': verbose = false; break;
        case 'h':
            printf("Usage: placer calibrate [MODEL.json ...] [--cluster C] [--force | --check] [-q]\n"
                   "Measures this machine's kernels, copies and executor costs for the cost\n"
                   "model, for the thread counts of the cluster's devices (default: this\n"
                   "machine), and caches the profile; --force measures again. A calibration\n"
                   "whose two passes disagree, or that other work slowed, is noisy: it is\n"
                   "measured again (%d attempts in all, the quietest kept), and a noisy or\n"
                   "old (over %d days) profile is warned about at every use.\n"
                   "Each MODEL.json given has its own ops measured too (at its batch and at a\n"
                   "half, a quarter and an eighth of it) and added to the profile, so that the\n"
                   "simulator takes their times instead of extrapolating from other ops.\n"
                   "\n"
                   "  --cluster FILE   the cluster ('-': standard input)\n"
                   "  -f, --force      measure again even when the cached profile fits\n"
                   "  --check          measure nothing: print the profile's path, whether it\n"
                   "                   serves this machine and the cluster, when it was\n"
                   "                   measured, how noisy it was, and a verdict\n"
                   "  -q, --quiet      no progress\n"
                   "The profile: $PLACER_PROFILE, else $XDG_CACHE_HOME/placer/profile.json,\n"
                   "else ~/.cache/placer/profile.json.\n"
                   "Exit status: 0 done; with --check, 0 when the profile serves and is quiet\n"
                   "and recent, 1 when it is missing, does not serve, is noisy or old; 1 a\n"
                   "failure; 2 bad input or usage; 130 interrupted.\n"
                   "More: " PLACER_DOCDIR "/simulator.md.\n", PL_PROFILE_ATTEMPTS,
                   PL_PROFILE_OLD_DAYS);
            return PL_EXIT_OK;
        default:
            return pl_cli_usage_error("calibrate: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    int n_models = argc - optind;
    char **models = argv + optind;
    if (check && force)
        return pl_cli_usage_error("calibrate: --check measures nothing: not with --force");
    if (check && n_models > 0)
        return pl_cli_usage_error("calibrate: --check measures nothing: not with a model");
    for (int i = 0; i < n_models; i++)
        if (strcmp(models[i], "-") == 0)
            return pl_cli_usage_error("calibrate: a model is measured from its file: not '-'");
    char profile[4096];
    pl_cli_file *inputs = calloc((size_t)n_models + 1, sizeof *inputs);
    if (!inputs)
        return PL_EXIT_FAILURE;
    inputs[0] = (pl_cli_file){cluster_path, "the cluster", false};
    for (int i = 0; i < n_models; i++)
        inputs[i + 1] = (pl_cli_file){models[i], "a model", false};
    const pl_cli_file output = pl_cli_profile_output(profile, sizeof profile);
    int checked = check ? pl_cli_check_inputs(inputs, 1) /* --check writes nothing */
                        : pl_cli_check_outputs(inputs, (size_t)n_models + 1, &output, 1);
    free(inputs);
    if (checked != PL_EXIT_OK)
        return checked;
    pl_error err;
    pl_error_init(&err, cluster_path);
    pl_cluster *cluster = cluster_path ? pl_cluster_load_file(cluster_path, &err)
                                       : pl_cluster_local(&err);
    if (!cluster)
        return pl_cli_report(&err);
    if (check) {
        int verdict = check_profile(cluster);
        pl_cluster_free(cluster);
        return verdict;
    }
    pl_cost_model *m = calloc(1, sizeof *m);
    bool calibrated = false;
    double start = pl_now();
    pl_error_init(&err, NULL);
    int status = PL_EXIT_OK;
    /* under mpirun rank 0 calibrates and the others join it for the transfers between
       ranks */
    if (!m)
        status = PL_EXIT_FAILURE;
    else if (pl_cli_leader() && pl_profile_load(m, cluster, force, pl_cli_calibration_progress,
                                                &verbose, NULL, &calibrated, &err) != PL_OK)
        status = pl_cli_report(&err);
    if (m && status == PL_EXIT_OK && n_models > 0 && pl_cli_leader())
        status = measure_models(m, cluster, models, n_models, verbose);
    if (m && (status = pl_cli_share_costs(m, status)) == PL_EXIT_OK &&
        (status = pl_cli_measure_processes(m, force)) == PL_EXIT_OK && pl_cli_leader()) {
        double seconds = pl_now() - start;
        char path[4096] = "(not cached: no home directory)";
        pl_profile_path(path, sizeof path);
        print_profile(m, path);
        print_calibration(&m->calibration, (long long)time(NULL));
        pl_cli_warn_profile(m);
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
