/* placer run MODEL.json --plan PLAN.json: executes the training graph as the plan places
 * it, on real threads, and reports its step time by the measurement protocol (measure.h:
 * warm-up, rounds until the steps are steady; median, minimum, maximum, spreads and
 * whether the steps were unstable), the pacing mode, every device's memory and
 * how busy it was; optionally the last step's timeline as a Chrome trace and as an SVG
 * picture (src/draw/timeline.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "executor.h"
#include "simulate.h"
#include "timeline.h"

typedef struct run_options {
    const char *model, *plan, *cluster, *trace, *timeline, *data, *weights;
    long steps, warmup;
    double replay; /* --replay SLOWDOWN, 0: none */
} run_options;

/* A replay of a cluster placer cannot run (pl_cluster_replay), and what the simulator
 * predicts: at the replay's speeds, and on the hardware by its roofline. */
typedef struct replay {
    pl_cluster *hardware;
    double slowdown, simulated_replay, simulated_hardware;
} replay;

static void usage(void)
{
    printf("Usage: placer run MODEL.json [--plan PLAN.json] [options]\n"
           "Runs training steps of the model placed by the plan and reports the step time.\n"
           "\n"
           "  --plan FILE      the plan (plan-format.md; default: every op on the\n"
           "                   cluster's first device)\n"
           "  --cluster FILE   the cluster (cluster-format.md; default: this machine,\n"
           "                   one device per core)\n"
           "  --steps N        measured steps per round (default 10); an unstable round\n"
           "                   (two speeds, or a drift) is measured again, up to 3 rounds\n"
           "  --warmup N       steps run first and not measured (default 3)\n"
           "  --trace FILE     write the last step's timeline as Chrome trace-event JSON\n"
           "  --timeline FILE  draw the last step's timeline as SVG: a row per device and\n"
           "                   link, a bar per task coloured by phase, idle time as gaps\n"
           "  --data PATH      what to feed (default 'synthetic'; see placer train --help)\n"
           "  --weights FILE   start from these weights (tensor-file.md) instead of the\n"
           "                   model's initialisers\n"
           "  --replay S       on a cluster of hardware placer cannot run (dgx-a100, ...):\n"
           "                   replay the plan on paced devices S times slower than the\n"
           "                   hardware (ops held to their FLOPs at its matrix rate,\n"
           "                   copies to its links), labelled replayed: a check of the\n"
           "                   simulator's schedule, not of the hardware\n"
           "\n"
           "A MODEL.json, --plan or --cluster FILE of '-' is read from standard input (one\n"
           "of them). The formats: in " PLACER_DOCDIR "/.\n"
           "Exit status 3: the plan does not fit a device's memory (the device, its need\n"
           "and its capacity are printed); 130: interrupted (Ctrl-C, SIGTERM or SIGHUP end\n"
           "the measurement between steps, nothing written).\n");
}

static int parse_options(int argc, char **argv, run_options *o)
{
    enum { PLAN = 256, CLUSTER, STEPS, WARMUP, TRACE, TIMELINE, DATA, WEIGHTS, REPLAY };
    static const struct option options[] = {
        {"plan", required_argument, NULL, PLAN}, {"cluster", required_argument, NULL, CLUSTER},
        {"steps", required_argument, NULL, STEPS}, {"warmup", required_argument, NULL, WARMUP},
        {"trace", required_argument, NULL, TRACE}, {"data", required_argument, NULL, DATA},
        {"timeline", required_argument, NULL, TIMELINE},
        {"weights", required_argument, NULL, WEIGHTS},
        {"replay", required_argument, NULL, REPLAY},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    *o = (run_options){.steps = 10, .warmup = 3, .data = "synthetic"};
    opterr = 0;
    int c, index = 0; /* index: the long option just read */
    while ((c = getopt_long(argc, argv, "h", options, &index)) != -1) {
        bool ok = true;
        switch (c) {
        case PLAN: o->plan = optarg; break;
        case CLUSTER: o->cluster = optarg; break;
        case TRACE: o->trace = optarg; break;
        case TIMELINE: o->timeline = optarg; break;
        case DATA: o->data = optarg; break;
        case WEIGHTS: o->weights = optarg; break;
        case STEPS: ok = pl_cli_parse_long(optarg, 1, 1000000, &o->steps); break;
        case WARMUP: ok = pl_cli_parse_long(optarg, 0, 1000000, &o->warmup); break;
        case REPLAY: {
            char *end;
            o->replay = strtod(optarg, &end);
            ok = *optarg && !*end && o->replay >= 1 && o->replay <= 1e9;
            break;
        }
        case 'h': usage(); return -1;
        default:
            return pl_cli_usage_error("run: unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
        if (!ok)
            return pl_cli_usage_error("run: invalid value '%s' for --%s", optarg,
                                      options[index].name);
    }
    if (optind >= argc)
        return pl_cli_usage_error("run: missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("run: one model at a time ('%s' is extra)", argv[optind + 1]);
    o->model = argv[optind];
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->plan, "the plan", false},
                                  {o->cluster, "the cluster", false},
                                  {o->data, "the data", false},
                                  {o->weights, "the weights", false}};
    const pl_cli_file outputs[] = {{o->trace, "the trace", false},
                                   {o->timeline, "the timeline", false}};
    return pl_cli_check_outputs(inputs, 5, outputs, 2);
}

/* Per device used: ops, memory against capacity, and the share of the last step it was
 * busy. */
static void describe_devices(const pl_executor *ex, const pl_cluster *c)
{
    const pl_program *p = pl_executor_program(ex);
    const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
    double step = pl_executor_step_seconds(ex);
    for (int d = 0; d < c->n_devices; d++) {
        int ops = pl_program_ops_on(p, d);
        if (ops == 0)
            continue;
        double busy = 0;
        for (int i = 0; i < p->n_tasks; i++)
            if (p->tasks[i].resource == d)
                busy += ends[i] - starts[i];
        char need[32], have[32];
        fprintf(pl_cli_text,
                "  %-12s %6d training ops  memory %10s of %-10s  busy %3.0f%% of the last step\n",
                c->devices[d].name, ops,
                pl_units_bytes((double)p->memory[d].total, need, sizeof need),
                pl_units_bytes((double)c->devices[d].memory_bytes, have, sizeof have),
                step > 0 ? 100 * busy / step : 0);
    }
}

/* The plan's simulated step on `c`, no profile: the roofline on hardware, the declared
 * speeds on paced devices. */
static int simulated_step(const pl_graph *g, const pl_cluster *c, const pl_plan *plan,
                          double *seconds)
{
    pl_error err;
    pl_error_init(&err, NULL);
    pl_cost_model none = {0};
    pl_simulation sim;
    pl_program *p = pl_program_new(g, c, plan, &err);
    pl_status status = p ? pl_simulate(p, c, &none, &sim, NULL, NULL, &err) : err.status;
    pl_program_free(p);
    *seconds = status == PL_OK ? sim.step_seconds : 0;
    return status == PL_OK ? PL_EXIT_OK : pl_cli_report(&err);
}

/* --replay: the set-up's cluster becomes its replay, the hardware kept beside it. */
static int start_replay(const run_options *o, pl_cli_setup *setup, replay *r)
{
    pl_cluster *hw = setup->cluster;
    if (!hw->simulated)
        return pl_cli_usage_error("run: --replay replays hardware placer cannot run; cluster "
                                  "\"%s\" runs here as it is", hw->name);
    pl_error err;
    pl_error_init(&err, NULL);
    pl_cluster *paced = pl_cluster_replay(hw, o->replay, &err);
    if (!paced)
        return pl_cli_report(&err);
    *r = (replay){.hardware = hw, .slowdown = o->replay};
    setup->cluster = paced;
    int status = simulated_step(setup->graph, hw, setup->plan, &r->simulated_hardware);
    return status == PL_EXIT_OK
               ? simulated_step(setup->graph, paced, setup->plan, &r->simulated_replay)
               : status;
}

static void print_replay(const replay *r, double measured)
{
    fprintf(pl_cli_text,
            "replayed: %.3f ms / %g = %.4f ms at the hardware's speed; the simulator at the "
            "replay's speeds %.3f ms (measured / simulated %.3f); on the hardware's roofline "
            "%.4f ms (simulated)\n", 1e3 * measured, r->slowdown, 1e3 * measured / r->slowdown,
            1e3 * r->simulated_replay, measured / r->simulated_replay,
            1e3 * r->simulated_hardware);
}

static int measure(const run_options *o, const pl_graph *g, const pl_cluster *c,
                   const pl_plan *plan, pl_executor *ex, const replay *r)
{
    pl_machine_cpu started = pl_machine_load_read();
    pl_error err;
    pl_error_init(&err, o->model);
    pl_fit fit;
    if (pl_executor_set_plan(ex, plan, &fit, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!fit.fits) {
        char need[32], have[32];
        pl_cli_error("run: out of memory: device %s needs %s (%lld bytes) at its "
                "peak and has %s (%lld bytes)", c->devices[fit.device].name,
                pl_units_bytes((double)fit.need, need, sizeof need), (long long)fit.need,
                pl_units_bytes((double)fit.capacity, have, sizeof have), (long long)fit.capacity);
        return PL_EXIT_NO_FIT;
    }
    if (r)
        fprintf(pl_cli_text, "replay %s on cluster \"%s\" (replayed: paced devices %g times "
                "slower than its hardware, each op held to its FLOPs at the matrix rate, each "
                "copy to its link; a check of the schedule, not of the hardware)\n", g->name,
                c->name, r->slowdown);
    else
        fprintf(pl_cli_text, "run %s on cluster \"%s\" (%s)\n", g->name, c->name,
                c->paced ? "paced: kernels and copies held to the declared speeds"
                         : "native: as fast as this machine runs");
    pl_cli_describe_plan(plan, c, pl_executor_program(ex));
    int threads = pl_executor_threads(ex), cores = pl_machine_cores();
    if (threads > cores)
        fprintf(stderr, "placer: run: warning: the plan's devices have %d threads and this "
                "machine %d cores: they share cores%s\n", threads, cores,
                c->paced ? " (paced devices mostly wait, which leaves room)" : "");
    /* how busy the machine was before: describing the plan took part of the interval */
    pl_machine_load before = pl_cli_load_before(&started);
    pl_measurement m;
    pl_status measured = pl_executor_measure(ex, (int)o->warmup, (int)o->steps, &m, &err);
    if (measured == PL_EINTERRUPTED)
        return pl_cli_error("run: interrupted before the measurement ended; nothing written"),
               PL_EXIT_INTERRUPTED;
    if (measured != PL_OK)
        return pl_cli_report(&err);
    describe_devices(ex, c);
    const pl_series *times = &m.series;
    char spread[32];
    fprintf(pl_cli_text,
            "step time: median %.3f ms %s, min %.3f ms, max %.3f ms; spread %.1f%% "
            "interquartile, %.1f%% min to max (%ld steps after %ld warm-up)\n",
            1e3 * times->median, pl_cli_spread_text(times, spread, sizeof spread), 1e3 * times->min,
            1e3 * times->max, 100 * times->iqr_spread, 100 * times->spread, o->steps, o->warmup);
    pl_cli_print_stability(pl_cli_text, &m);
    bool with_before;
    pl_machine_load judged = pl_cli_measured_load(&m, &before, &with_before);
    pl_cli_print_load(&judged, with_before, "the plan was measured");
    if (r)
        print_replay(r, times->median);
    fprintf(pl_cli_text, "throughput: %.0f samples/s; loss %.4f at the last step\n",
            g->batch_size / m.series.median, (double)m.last_loss);
    pl_cli_warn_load(&judged, c, "the plan was measured", 0,
                     m.series.unstable ? "its steps were unstable" : NULL);
    if (o->trace && pl_cli_leader()) {
        pl_error_init(&err, o->trace);
        if (pl_executor_write_trace(ex, o->trace, &err) != PL_OK)
            return pl_cli_report(&err);
        fprintf(pl_cli_text, "trace: %s (the last step)\n", o->trace);
    }
    if (o->timeline && pl_cli_leader()) {
        char title[1024];
        snprintf(title, sizeof title, "%s on %s, measured (the last of %ld steps, %s)",
                 g->name, c->name, o->steps, c->paced ? "paced" : "native");
        pl_error_init(&err, o->timeline);
        if (pl_timeline_write_file(o->timeline, pl_executor_program(ex), c,
                                   pl_executor_task_starts(ex), pl_executor_task_ends(ex),
                                   pl_executor_step_seconds(ex), title, &err) != PL_OK)
            return pl_cli_report(&err);
        fprintf(pl_cli_text, "timeline: %s (the last step)\n", o->timeline);
    }
    return PL_EXIT_OK;
}

int pl_cmd_run(int argc, char **argv)
{
    run_options o;
    int status = parse_options(argc, argv, &o);
    if (status != PL_EXIT_OK)
        return status < 0 ? PL_EXIT_OK : status;
    pl_cli_setup setup = {.model_path = o.model, .cluster_path = o.cluster, .plan_path = o.plan,
                          .data_path = o.data, .needs = PL_CLI_TRAINING | PL_CLI_PLAN};
    replay r = {0};
    status = pl_cli_setup_load(&setup);
    if (status == PL_EXIT_OK && o.replay > 0)
        status = start_replay(&o, &setup, &r);
    if (status == PL_EXIT_OK) {
        setup.needs |= PL_CLI_EXECUTOR;
        status = pl_cli_setup_load(&setup);
    }
    if (status == PL_EXIT_OK && o.weights)
        status = pl_cli_weights(o.weights, false, setup.graph, NULL, setup.executor);
    if (status == PL_EXIT_OK) {
        /* Ctrl-C, SIGTERM or SIGHUP end the measurement between steps: exit 130 */
        pl_executor_set_interrupt(setup.executor, &pl_cli_interrupted);
        pl_cli_catch_interrupt(true);
        status = measure(&o, setup.graph, setup.cluster, setup.plan, setup.executor,
                         r.hardware ? &r : NULL);
        pl_cli_catch_interrupt(false);
    }
    pl_cli_setup_release(&setup);
    pl_cluster_free(r.hardware); /* after its replay, which borrows its names */
    return status;
}
