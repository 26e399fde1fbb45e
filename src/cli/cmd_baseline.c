/* placer baseline MODEL.json --algo NAME: a plan made by one of the classical placers
 * (policy/baseline.h), with its predicted step against the lower bound, written with -o;
 * --algo all: every algorithm in a table (simulated and, with --measure, measured step
 * with its spread and a mark when unstable (measure.h), each over the lower bound, peak
 * memory per device, placement time; a mark on a plan that recomputes activations). */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "cli.h"
#include "simulate.h"

typedef struct baseline_options {
    const char *model, *cluster, *output, *algo;
    long seed, measure;
    bool all;
    pl_baseline algorithm;
} baseline_options;

/* What a plan came to: its program's memory, simulated and measured step. */
typedef struct outcome {
    pl_plan *plan;
    double place_seconds, measured;
    pl_measurement measurement; /* valid when measured > 0 */
    pl_machine_load load;       /* how busy the machine was while it was measured */
    int64_t memory[PL_MAX_DEVICES];
    pl_error err;
} outcome;

static void usage(void)
{
    printf("Usage: placer baseline MODEL.json --algo NAME [options]\n"
           "Places the model by a classical algorithm (baselines.md) and predicts its\n"
           "step time with this machine's profile (placer calibrate; made on first use).\n"
           "Where no plan fits, it places again with activations recomputed; failing\n"
           "that, it says how much memory its nearest plan needs (exit status 3).\n"
           "\n"
           "  --algo NAME      single, round-robin, expert, metis, etf, sct, pipeline-dp,\n"
           "                   data-parallel, hybrid, megatron, or all: every one in a\n"
           "                   table (* marks a plan that recomputes activations)\n"
           "  --cluster FILE   the cluster (default: this machine, one device per core)\n"
           "  --seed N         the seed (default 1)\n"
           "  -o FILE          write the plan (one algorithm); default: only describe it\n"
           "  --measure N      also run N steps (after 3 warm-up) on the executor; an\n"
           "                   unstable round (two speeds, or a drift) is measured again,\n"
           "                   up to 3 rounds\n"
           "\n"
           "A MODEL.json or --cluster FILE of '-' is read from standard input (one of them).\n"
           "The documents named: in " PLACER_DOCDIR "/.\n");
}

static int list_error(const char *name)
{
    char valid[256] = "";
    for (int a = 0; a < PL_BASELINE_COUNT; a++) {
        strcat(valid, pl_baseline_name((pl_baseline)a));
        strcat(valid, ", ");
    }
    return pl_cli_usage_error("baseline: unknown algorithm '%s' (valid: %sall)", name, valid);
}

static int parse_options(int argc, char **argv, baseline_options *o)
{
    enum { ALGO = 256, CLUSTER, SEED, MEASURE };
    static const struct option options[] = {
        {"algo", required_argument, NULL, ALGO}, {"cluster", required_argument, NULL, CLUSTER},
        {"seed", required_argument, NULL, SEED}, {"measure", required_argument, NULL, MEASURE},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    *o = (baseline_options){.seed = 1};
    opterr = 0;
    int c, index = 0; /* index: the long option just read */
    while ((c = getopt_long(argc, argv, "ho:", options, &index)) != -1) {
        bool ok = true;
        switch (c) {
        case ALGO: o->algo = optarg; break;
        case CLUSTER: o->cluster = optarg; break;
        case 'o': o->output = optarg; break;
        case SEED: ok = pl_cli_parse_long(optarg, 0, 2147483647, &o->seed); break;
        case MEASURE: ok = pl_cli_parse_long(optarg, 1, 1000000, &o->measure); break;
        case 'h': usage(); return -1;
        default:
            return pl_cli_usage_error("baseline: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
        if (!ok)
            return pl_cli_usage_error("baseline: invalid value '%s' for --%s", optarg,
                                      options[index].name);
    }
    if (optind >= argc)
        return pl_cli_usage_error("baseline: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("baseline: one model at a time ('%s' is extra)",
                                  argv[optind + 1]);
    o->model = argv[optind];
    if (!o->algo)
        return pl_cli_usage_error("baseline: missing --algo NAME");
    o->all = strcmp(o->algo, "all") == 0;
    o->algorithm = pl_baseline_from_name(o->algo);
    if (!o->all && o->algorithm == PL_BASELINE_COUNT)
        return list_error(o->algo);
    if (o->all && o->output)
        return pl_cli_usage_error("baseline: -o writes one plan: name one algorithm");
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->cluster, "the cluster", false}};
    char profile[4096];
    const pl_cli_file outputs[] = {{o->output, "the output", false},
                                   pl_cli_profile_output(profile, sizeof profile)};
    return pl_cli_check_outputs(inputs, 2, outputs, 2);
}

/* Places by one algorithm; the plan's program memory into the outcome. */
static void place(const baseline_options *o, pl_baseline a, const pl_graph *g,
                  const pl_cluster *c, const pl_cost_model *m, outcome *out)
{
    *out = (outcome){0};
    pl_error_init(&out->err, o->model);
    double start = pl_now();
    out->plan = pl_baseline_place(a, g, c, m, (uint64_t)o->seed, &out->err);
    out->place_seconds = pl_now() - start;
    pl_program *p = out->plan ? pl_program_new(g, c, out->plan, &out->err) : NULL;
    for (int d = 0; p && d < c->n_devices; d++)
        out->memory[d] = pl_program_ops_on(p, d) > 0 ? p->memory[d].total : 0;
    if (out->plan && !p) {
        pl_plan_free(out->plan);
        out->plan = NULL;
    }
    pl_program_free(p);
}

/* Measures the outcome's plan on the executor (created on first use). */
static int measure(const baseline_options *o, const pl_graph *g, const pl_cluster *c,
                   pl_executor **ex, outcome *out)
{
    pl_machine_cpu started = pl_machine_load_read();
    pl_error err;
    pl_error_init(&err, o->model);
    pl_fit fit;
    pl_measurement m;
    int status = PL_EXIT_OK;
    if (!*ex && (status = pl_cli_new_executor(g, c, "synthetic", ex)) == PL_EXIT_OK)
        status = pl_cli_join_processes(*ex, c);
    if (status != PL_EXIT_OK)
        return status;
    if (pl_executor_set_plan(*ex, out->plan, &fit, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!fit.fits) /* the placers checked it: the executor agrees, or this is a bug */
        return pl_error_set(&err, PL_EINTERNAL, NULL, "the plan does not fit device %d",
                            fit.device), pl_cli_report(&err);
    pl_machine_load before = pl_cli_load_before(&started);
    if (pl_executor_measure(*ex, 3, (int)o->measure, &m, &err) != PL_OK)
        return pl_cli_report(&err);
    bool with_before;
    out->load = pl_cli_measured_load(&m, &before, &with_before);
    out->measured = m.series.median;
    out->measurement = m;
    out->plan->provenance.measured_seconds = out->measured;
    return PL_EXIT_OK;
}

static void print_memory(const pl_cluster *c, const outcome *out)
{
    for (int d = 0; d < c->n_devices; d++) {
        if (out->memory[d] == 0)
            fprintf(pl_cli_text, " %6s", "-");
        else
            fprintf(pl_cli_text, " %6.1f", (double)out->memory[d] / (1 << 20));
    }
}

static void print_header(const pl_graph *g, const pl_cluster *c, const pl_cli_setup *setup)
{
    if (c->simulated) {
        char simulated[PL_ERROR_TEXT_MAX];
        fprintf(pl_cli_text, "baseline placers for %s on cluster \"%s\"; lower bound %.3f ms\n%s\n",
                g->name, c->name, 1e3 * setup->bound,
                pl_cli_simulated_text(c, setup->costs, simulated, sizeof simulated));
        return;
    }
    fprintf(pl_cli_text,
            "baseline placers for %s on cluster \"%s\" (%s), this machine's profile%s; lower "
            "bound %.3f ms\n",
            g->name, c->name,
            c->paced ? "paced: devices emulated at their declared speeds" : "native",
            setup->calibrated ? ", just calibrated" : "", 1e3 * setup->bound);
}

static int run_all(const baseline_options *o, const pl_graph *g, const pl_cluster *c,
                   const pl_cost_model *m, double bound)
{
    pl_executor *ex = NULL;
    int status = PL_EXIT_OK, placed = 0, unfit = 0, refused = 0; /* unfit: failed for memory;
                                                                   refused: for bad input */
    bool any_unstable = false, any_recomputes = false;
    pl_machine_load load = {0}; /* over every measured plan */
    fprintf(pl_cli_text, "%-12s %12s %9s %18s %10s %10s  %s\n", "algorithm", "simulated",
            "sim/bound", "measured", "meas/bound", "placed in", "peak memory per device, MiB");
    for (int a = 0; a < PL_BASELINE_COUNT && status == PL_EXIT_OK; a++) {
        outcome out;
        place(o, (pl_baseline)a, g, c, m, &out);
        const char *name = pl_baseline_name((pl_baseline)a);
        if (!out.plan) {
            char line[2048];
            pl_error_format(&out.err, line, sizeof line);
            fprintf(pl_cli_text, "%-12s failed: %s\n", name, line);
            unfit += out.err.status == PL_ENOFIT;
            refused += out.err.status == PL_EINPUT;
            continue;
        }
        placed++;
        if (o->measure)
            status = measure(o, g, c, &ex, &out);
        char measured[48] = "-", spread[32], ratio[32] = "-";
        if (out.measured > 0) {
            const pl_series *times = &out.measurement.series;
            any_unstable |= times->unstable;
            pl_machine_load_add(&load, &out.load);
            snprintf(measured, sizeof measured, "%.3f ms %s%s", 1e3 * out.measured,
                     pl_cli_spread_text(times, spread, sizeof spread),
                     times->unstable ? " !" : "  ");
            snprintf(ratio, sizeof ratio, "%.2fx", out.measured / bound);
        }
        char label[32]; /* the name, marked when the plan recomputes activations */
        bool recomputes = pl_plan_recomputes(out.plan);
        any_recomputes |= recomputes;
        snprintf(label, sizeof label, "%s%s", name, recomputes ? " *" : "");
        /* ± is two bytes and one column: one more byte of width keeps the columns */
        fprintf(pl_cli_text, "%-12s %9.3f ms %8.2fx %*s %10s %7.1f ms ", label,
                1e3 * out.plan->provenance.predicted_seconds,
                out.plan->provenance.predicted_seconds / bound, out.measured > 0 ? 19 : 18,
                measured, ratio, 1e3 * out.place_seconds);
        print_memory(c, &out);
        fprintf(pl_cli_text, "\n");
        pl_plan_free(out.plan);
    }
    fprintf(pl_cli_text,
            "sim/bound: the simulated step over the lower bound; meas/bound: the measured "
            "step over it\n");
    if (any_recomputes)
        fprintf(pl_cli_text, "*: the plan recomputes activations, which the devices' memory "
                "needs (baselines.md)\n");
    if (o->measure && status == PL_EXIT_OK) {
        fprintf(pl_cli_text,
                "measured: median of %ld steps after 3 warm-up, %s; a round that is unstable "
                "is measured again (up to %d rounds)\n",
                o->measure, c->paced ? "paced (emulated devices)" : "native",
                PL_MEASURE_MAX_ROUNDS);
        pl_cli_print_spread_note(pl_cli_text, any_unstable);
        pl_cli_print_load(&load, false, "the plans were measured");
        pl_cli_warn_load(&load, c, "the plans were measured", 0,
                         any_unstable ? "some plans' steps were unstable" : NULL);
    }
    pl_executor_free(ex);
    if (status == PL_EXIT_OK && placed == 0) {
        bool none_fits = unfit > 0 && unfit + refused == PL_BASELINE_COUNT;
        pl_cli_error("baseline: every algorithm failed%s", none_fits ? ": no plan fits the "
                     "cluster's memory" : "");
        status = none_fits ? PL_EXIT_NO_FIT : PL_EXIT_FAILURE;
    }
    return status;
}

static int run_one(const baseline_options *o, const pl_graph *g, const pl_cluster *c,
                   const pl_cost_model *m, double bound)
{
    outcome out;
    place(o, o->algorithm, g, c, m, &out);
    if (!out.plan)
        return pl_cli_report(&out.err);
    int status = PL_EXIT_OK;
    pl_error err;
    pl_program *p = pl_program_new(g, c, out.plan, &err);
    if (p) {
        fprintf(pl_cli_text, "%s: ", o->algo);
        pl_cli_describe_plan(out.plan, c, p);
    }
    pl_program_free(p);
    fprintf(pl_cli_text, "predicted step: %.3f ms, %.2fx the lower bound; placed in %.1f ms\n",
            1e3 * out.plan->provenance.predicted_seconds,
            out.plan->provenance.predicted_seconds / bound, 1e3 * out.place_seconds);
    fprintf(pl_cli_text, "peak memory per device, MiB:");
    print_memory(c, &out);
    fprintf(pl_cli_text, "\n");
    pl_executor *ex = NULL;
    if (o->measure && (status = measure(o, g, c, &ex, &out)) == PL_EXIT_OK) {
        char spread[32];
        fprintf(pl_cli_text,
                "measured step: median %.3f ms %s, %.2fx the lower bound (%ld steps after 3 "
                "warm-up, %s)\n",
                1e3 * out.measured,
                pl_cli_spread_text(&out.measurement.series, spread, sizeof spread),
                out.measured / bound, o->measure, c->paced ? "paced" : "native");
        pl_cli_print_stability(pl_cli_text, &out.measurement);
        pl_cli_print_load(&out.load, false, "the plan was measured");
        pl_cli_warn_load(&out.load, c, "the plan was measured", 0,
                         out.measurement.series.unstable ? "its steps were unstable" : NULL);
    }
    pl_executor_free(ex);
    if (status == PL_EXIT_OK && o->output && pl_cli_leader()) {
        pl_error_init(&err, o->output);
        if (pl_plan_write_file(o->output, out.plan, g, c, &err) != PL_OK)
            status = pl_cli_report(&err);
        else
            fprintf(pl_cli_text, "plan: %s\n", o->output);
    }
    pl_plan_free(out.plan);
    return status;
}

int pl_cmd_baseline(int argc, char **argv)
{
    baseline_options o;
    int status = parse_options(argc, argv, &o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    /* the profile is calibrated for the cluster: its errors name the cluster's file */
    pl_cli_setup setup = {.model_path = o.model, .cluster_path = o.cluster,
                          .needs = PL_CLI_TRAINING | PL_CLI_BOUND,
                          .profile_source = o.cluster ? o.cluster : ""};
    status = pl_cli_setup_load(&setup);
    if (status == PL_EXIT_OK) {
        const pl_graph *g = setup.graph;
        const pl_cluster *c = setup.cluster;
        print_header(g, c, &setup);
        status = o.all ? run_all(&o, g, c, setup.costs, setup.bound)
                       : run_one(&o, g, c, setup.costs, setup.bound);
    }
    pl_cli_setup_release(&setup);
    return status;
}
