/* placer simulate MODEL.json --plan PLAN.json: predicts a placed model's step time, each
 * device's busy time and memory, the communication and the critical path, against the
 * lower bound; with --measure, runs it too and gives the simulator's error; with --timeline,
 * draws the simulated step (src/draw/timeline.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "executor.h"
#include "simulate.h"
#include "timeline.h"

typedef struct simulate_options {
    const char *model, *plan, *cluster, *timeline, *op_times;
    long measure;
} simulate_options;

static int parse_options(int argc, char **argv, simulate_options *o)
{
    static const struct option options[] = {{"plan", required_argument, NULL, 'p'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"measure", required_argument, NULL, 'm'},
                                            {"timeline", required_argument, NULL, 't'},
                                            {"op-times", required_argument, NULL, 'o'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *o = (simulate_options){0};
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case 'p': o->plan = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 't': o->timeline = optarg; break;
        case 'o': o->op_times = optarg; break;
        case 'm':
            if (!pl_cli_parse_long(optarg, 1, 1000000, &o->measure))
                return pl_cli_usage_error("simulate: invalid value '%s' for --measure", optarg);
            break;
        case 'h':
            printf("Usage: placer simulate MODEL.json [--plan PLAN.json] [--cluster C] "
                   "[--measure N]\n"
                   "                       [--timeline FILE.svg] [--op-times FILE]\n"
                   "Predicts the step time of the model placed by the plan (default: every op\n"
                   "on the first device) from this machine's profile (placer calibrate; made\n"
                   "on first use), with each device's busy time and memory, the copies, the\n"
                   "critical path and the ratio to the lower bound. --measure N also runs N\n"
                   "steps (after 3 warm-up) and prints the simulator's error.\n"
                   "\n"
                   "  --plan FILE      the plan (plan-format.md)\n"
                   "  --cluster FILE   the cluster (cluster-format.md; default: this machine)\n"
                   "  --measure N      also run N steps and compare\n"
                   "  --timeline FILE  write the simulated step as an SVG timeline: a row per\n"
                   "                   device and link, a bar per task coloured by phase, idle\n"
                   "                   time as gaps\n"
                   "  --op-times FILE  op times measured elsewhere (tools/import-trace: a\n"
                   "                   PyTorch profiler trace) in place of the profile's for\n"
                   "                   the ops they time, a micro-batch taking its share\n"
                   "A MODEL.json or FILE of '-' is read from standard input (one of them).\n"
                   "More: " PLACER_DOCDIR "/simulator.md.\n"
                   "Exit status 3: the plan does not fit a device's memory.\n");
            return -1;
        default:
            return pl_cli_usage_error("simulate: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("simulate: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("simulate: one model at a time ('%s' is extra)",
                                  argv[optind + 1]);
    o->model = argv[optind];
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->plan, "the plan", false},
                                  {o->cluster, "the cluster", false},
                                  {o->op_times, "the op times", false}};
    char profile[4096];
    const pl_cli_file outputs[] = {pl_cli_profile_output(profile, sizeof profile),
                                   {o->timeline, "the timeline", false}};
    return pl_cli_check_outputs(inputs, 4, outputs, 2);
}

/* Which op times came from elsewhere, and from where. */
static void print_op_times(const simulate_options *o, const pl_cli_setup *setup)
{
    const pl_op_times *t = setup->op_times;
    if (!t)
        return;
    char device[sizeof t->device * 4];
    pl_text_escape(t->device, device, sizeof device);
    fprintf(pl_cli_text,
            "op times: %s, measured on %s: %d of %d ops (%.3f ms forward), "
            "%d backward ops (%.3f ms); the rest from the %s\n",
            pl_cli_input_name(o->op_times), device, t->n_forward_ops, setup->graph->n_forward_ops,
            1e3 * t->forward_seconds, t->n_backward_ops, 1e3 * t->backward_seconds,
            setup->cluster->simulated ? "roofline" : "profile");
}

static void print_prediction(const pl_graph *g, const pl_cluster *c, const pl_program *p,
                             const pl_simulation *sim, double bound)
{
    fprintf(pl_cli_text,
            "predicted step: %.3f ms, %.2fx the lower bound of %.3f ms; critical path "
            "%.3f ms\n",
            1e3 * sim->step_seconds, sim->step_seconds / bound, 1e3 * bound,
            1e3 * sim->critical_path_seconds);
    for (int d = 0; d < c->n_devices; d++) {
        int ops = pl_program_ops_on(p, d);
        if (ops == 0)
            continue;
        char need[32], have[32];
        fprintf(pl_cli_text, "  %-12s %6d ops  memory %10s of %-10s  busy %8.3f ms (%3.0f%%)\n",
                c->devices[d].name, ops, pl_units_bytes((double)sim->memory[d], need, sizeof need),
                pl_units_bytes((double)c->devices[d].memory_bytes, have, sizeof have),
                1e3 * sim->busy_seconds[d], 100 * sim->busy_seconds[d] / sim->step_seconds);
    }
    char bytes[32];
    fprintf(pl_cli_text, "communication: %d copies, %s per step\n", sim->n_copies,
            pl_units_bytes((double)sim->copy_bytes, bytes, sizeof bytes));
    (void)g;
}

/* The measured step against the prediction; the comparison is only as good as the
 * measurement, which says when it was unstable. */
static void print_measured(const pl_measurement *m, long steps, double predicted)
{
    const pl_series *times = &m->series;
    char spread[32];
    fprintf(pl_cli_text,
            "measured step: median %.3f ms %s%s (min %.3f, max %.3f, %ld steps after 3 "
            "warm-up); the simulator's error %+.1f%%%s\n",
            1e3 * times->median, pl_cli_spread_text(times, spread, sizeof spread),
            times->unstable ? " !" : "", 1e3 * times->min, 1e3 * times->max, steps,
            100 * (predicted - times->median) / times->median,
            times->unstable ? ", against an unstable measurement" : "");
    pl_cli_print_stability(pl_cli_text, m);
}

/* Runs the plan on the executor and compares. */
static int measure(const simulate_options *o, pl_graph *g, const pl_cluster *c,
                   const pl_plan *plan, double predicted)
{
    pl_machine_cpu started = pl_machine_load_read();
    pl_error err;
    pl_error_init(&err, o->model);
    pl_executor *ex = NULL;
    pl_fit fit;
    pl_measurement m;
    int status = pl_cli_new_executor(g, c, "synthetic", &ex);
    if (status == PL_EXIT_OK)
        status = pl_cli_join_processes(ex, c);
    if (status != PL_EXIT_OK) {
        pl_executor_free(ex);
        return status;
    }
    if (pl_executor_set_plan(ex, plan, &fit, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else {
        pl_machine_load before = pl_cli_load_before(&started);
        if (pl_executor_measure(ex, 3, (int)o->measure, &m, &err) != PL_OK) {
            status = pl_cli_report(&err);
        } else {
            print_measured(&m, o->measure, predicted);
            bool with_before;
            pl_machine_load judged = pl_cli_measured_load(&m, &before, &with_before);
            pl_cli_print_load(&judged, with_before, "the plan was measured");
            pl_cli_warn_load(&judged, c, "the plan was measured", 0,
                             m.series.unstable ? "its steps were unstable" : NULL);
        }
    }
    pl_executor_free(ex);
    return status;
}

/* The simulated step's timeline, titled with what it is. */
static int write_timeline(const simulate_options *o, const pl_graph *g, const pl_cluster *c,
                          const pl_program *p, const pl_simulation *sim, const double *starts,
                          const double *ends)
{
    char title[1024];
    snprintf(title, sizeof title, "%s on %s, simulated (%s)", g->name, c->name,
             c->paced ? "paced" : "native");
    pl_error err;
    pl_error_init(&err, o->timeline);
    if (pl_timeline_write_file(o->timeline, p, c, starts, ends, sim->step_seconds, title,
                               &err) != PL_OK)
        return pl_cli_report(&err);
    fprintf(pl_cli_text, "timeline: %s (the simulated step)\n", o->timeline);
    return PL_EXIT_OK;
}

static int simulate(const simulate_options *o, const pl_cli_setup *setup)
{
    pl_graph *g = setup->graph;
    const pl_cluster *c = setup->cluster;
    const pl_plan *plan = setup->plan;
    pl_error err;
    pl_error_init(&err, o->model);
    pl_simulation sim;
    int status = PL_EXIT_OK;
    pl_program *p = pl_program_new(g, c, plan, &err);
    double *starts = NULL, *ends = NULL;
    if (p && o->timeline) {
        starts = malloc(((size_t)p->n_tasks + 1) * sizeof *starts);
        ends = malloc(((size_t)p->n_tasks + 1) * sizeof *ends);
        if (!starts || !ends)
            pl_error_set(&err, PL_ENOMEM, NULL, "out of memory for the timeline");
    }
    if (!p || err.status != PL_OK ||
        pl_simulate(p, c, setup->costs, &sim, starts, ends, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else if (sim.oom_device >= 0) {
        char need[32], have[32];
        const pl_device *d = &c->devices[sim.oom_device];
        pl_cli_error("simulate: out of memory: device %s needs %s (%lld bytes) at "
                "its peak and has %s (%lld bytes)", d->name,
                pl_units_bytes((double)sim.memory[sim.oom_device], need, sizeof need),
                (long long)sim.memory[sim.oom_device],
                pl_units_bytes((double)d->memory_bytes, have, sizeof have),
                (long long)d->memory_bytes);
        status = PL_EXIT_NO_FIT;
    } else {
        char simulated[PL_ERROR_TEXT_MAX];
        if (c->simulated)
            fprintf(pl_cli_text, "simulate %s on cluster \"%s\"\n%s\n", g->name, c->name,
                    pl_cli_simulated_text(c, setup->costs, simulated, sizeof simulated));
        else
            fprintf(pl_cli_text, "simulate %s on cluster \"%s\" (%s), this machine's "
                    "profile%s\n", g->name, c->name, c->paced ? "paced" : "native",
                    setup->calibrated ? ", just calibrated" : "");
        print_op_times(o, setup);
        pl_cli_describe_plan(plan, c, p);
        print_prediction(g, c, p, &sim, setup->bound);
        if (o->timeline && pl_cli_leader())
            status = write_timeline(o, g, c, p, &sim, starts, ends);
        if (o->measure && status == PL_EXIT_OK)
            status = measure(o, g, c, plan, sim.step_seconds);
    }
    free(starts);
    free(ends);
    pl_program_free(p);
    return status;
}

int pl_cmd_simulate(int argc, char **argv)
{
    simulate_options o;
    int status = parse_options(argc, argv, &o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    pl_cli_setup setup = {.model_path = o.model, .cluster_path = o.cluster, .plan_path = o.plan,
                          .op_times_path = o.op_times,
                          .needs = PL_CLI_TRAINING | PL_CLI_PLAN | PL_CLI_BOUND};
    status = pl_cli_setup_load(&setup);
    if (status == PL_EXIT_OK)
        status = simulate(&o, &setup);
    pl_cli_setup_release(&setup);
    return status;
}
