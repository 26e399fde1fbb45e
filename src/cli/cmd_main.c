/* placer MODEL.json: the main job. Load and validate the model (its summary and
 * PREFIX.graph.dot as before), calibrate (cached), run the baselines, run the agent within
 * the budget, measure the best candidates on the executor, and write the plan
 * (PREFIX.plan.json), its drawing (PREFIX.plan.dot) and a report (PREFIX.report.md with
 * PREFIX.curve.svg), all atomically. Ctrl-C stops the search and still writes the best
 * plan found so far (exit 130). */
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "autodiff.h"
#include "baseline.h"
#include "bound.h"
#include "cli.h"
#include "dot.h"
#include "job.h"
#include "profile.h"

typedef struct main_options {
    const char *model, *prefix, *cluster, *resume;
    double budget;
    long iterations, samples, measure_steps;
    unsigned long long seed;
    bool quiet;
    bool no_fold, no_defer, no_sweep; /* the agent's shape: no interleaving, no deferral,
                                         no sweeps of a new best placement's shapes */
    bool no_refine;                   /* no refinement of the best plan */
} main_options;

/* "graphs/mlp.json" -> "mlp": the file name without directory and ".json". */
static char *default_prefix(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".json") == 0)
        len -= 5;
    char *prefix = malloc(len + 1);
    if (prefix) {
        memcpy(prefix, base, len);
        prefix[len] = '\0';
    }
    return prefix;
}

static void print_usage(void)
{
    printf("Usage: placer MODEL.json [--cluster C] [--budget SECONDS] [--seed N] [-o PREFIX]\n"
           "                         [--iterations N] [--samples N] [--resume CKPT] [-q]\n"
           "                         [--no-fold] [--no-defer] [--no-sweep] [--no-refine]\n"
           "Finds a placement of the model on the cluster (default: this machine): runs the\n"
           "baseline placers and the learning agent for about --budget seconds (default 60),\n"
           "measures the best plans on the executor and writes PREFIX.plan.json,\n"
           "PREFIX.plan.dot, PREFIX.report.md (with PREFIX.curve.svg), the agent's best plan\n"
           "PREFIX.agent.plan.json and checkpoint PREFIX.agent.ckpt, and the model's drawing\n"
           "PREFIX.graph.dot. --iterations stops the agent after N iterations in all (the\n"
           "budget still applies); --resume continues from a checkpoint of the same model,\n"
           "cluster, seed and samples. Ctrl-C stops the search and writes the best plan so\n"
           "far (exit status 130). --no-fold and --no-defer keep the agent from interleaving\n"
           "pipeline stages and from deferring weight gradients, --no-sweep from trying a new\n"
           "best placement under every shape, --no-refine from refining the best plan by\n"
           "single-op moves (to measure what each gains).\n");
}

static int parse_options(int argc, char **argv, main_options *o)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"budget", required_argument, NULL, 'b'},
                                            {"seed", required_argument, NULL, 's'},
                                            {"iterations", required_argument, NULL, 'i'},
                                            {"samples", required_argument, NULL, 'n'},
                                            {"measure-steps", required_argument, NULL, 'm'},
                                            {"resume", required_argument, NULL, 'r'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"no-fold", no_argument, NULL, 'F'},
                                            {"no-defer", no_argument, NULL, 'D'},
                                            {"no-sweep", no_argument, NULL, 'S'},
                                            {"no-refine", no_argument, NULL, 'R'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *o = (main_options){.budget = 60, .seed = 1, .samples = 32, .measure_steps = 3};
    opterr = 0; /* our own message, below */
    int c;
    long value;
    while ((c = getopt_long(argc, argv, "o:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': o->prefix = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 'r': o->resume = optarg; break;
        case 'q': o->quiet = true; break;
        case 'F': o->no_fold = true; break;
        case 'D': o->no_defer = true; break;
        case 'S': o->no_sweep = true; break;
        case 'R': o->no_refine = true; break;
        case 'b': {
            char *end;
            o->budget = strtod(optarg, &end);
            if (*optarg == '\0' || *end != '\0' || !(o->budget > 0) || o->budget > 1e6)
                return pl_cli_usage_error("invalid value '%s' for --budget (seconds, more than "
                                          "0)", optarg);
            break;
        }
        case 's':
            if (!pl_cli_parse_long(optarg, 0, 2147483647, &value))
                return pl_cli_usage_error("invalid value '%s' for --seed (0 to 2147483647)",
                                          optarg);
            o->seed = (unsigned long long)value;
            break;
        case 'i':
            if (!pl_cli_parse_long(optarg, 1, 100000000, &o->iterations))
                return pl_cli_usage_error("invalid value '%s' for --iterations (1 or more)",
                                          optarg);
            break;
        case 'n':
            if (!pl_cli_parse_long(optarg, 2, 4096, &o->samples))
                return pl_cli_usage_error("invalid value '%s' for --samples (2 to 4096)", optarg);
            break;
        case 'm':
            if (!pl_cli_parse_long(optarg, 1, 1000, &o->measure_steps))
                return pl_cli_usage_error("invalid value '%s' for --measure-steps (1 to 1000)",
                                          optarg);
            break;
        case 'h': print_usage(); return -1;
        default:
            return pl_cli_usage_error("unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return pl_cli_usage_error("missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("one model at a time ('%s' is extra; commands: validate, "
                                  "dot, ...)", argv[optind + 1]);
    o->model = argv[optind];
    return PL_EXIT_OK;
}

static char *join_command(int argc, char **argv)
{
    size_t len = sizeof "placer";
    for (int i = 1; i < argc; i++)
        len += strlen(argv[i]) + 3;
    char *text = malloc(len);
    if (!text)
        return NULL;
    strcpy(text, "placer");
    for (int i = 1; i < argc; i++) {
        strcat(text, " ");
        bool plain = strpbrk(argv[i], " \t'\"$`\\") == NULL && argv[i][0] != '\0';
        if (!plain)
            strcat(text, "'");
        strcat(text, argv[i]);
        if (!plain)
            strcat(text, "'");
    }
    return text;
}

static char *path_of(const char *prefix, const char *suffix)
{
    size_t len = strlen(prefix) + strlen(suffix) + 1;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%s%s", prefix, suffix);
    return path;
}

typedef struct job_state {
    main_options o;
    pl_job job;
    pl_graph *g;
    pl_cluster *c;
    pl_cost_model *model;
    pl_executor *ex;
    pl_agent *agent;
    char *prefix;
    double start;
} job_state;

/* Simulates a row's plan. */
static int simulate_row(job_state *s, pl_job_row *row)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    pl_program *p = pl_program_new(s->g, s->c, row->plan, &err);
    pl_status status = p ? pl_simulate(p, s->c, s->model, &row->sim, NULL, NULL, &err)
                         : err.status;
    pl_program_free(p);
    if (status != PL_OK)
        return pl_cli_report(&err);
    row->fits = row->sim.oom_device < 0;
    return PL_EXIT_OK;
}

/* Measures a row's plan on the executor (median of the protocol's steps). */
static int measure_row(job_state *s, pl_job_row *row)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    pl_fit fit;
    pl_measurement m;
    if (!row->plan || !row->fits)
        return PL_EXIT_OK;
    if (pl_executor_set_plan(s->ex, row->plan, &fit, &err) != PL_OK)
        return pl_cli_report(&err);
    if (!fit.fits) {
        row->fits = false;
        return PL_EXIT_OK;
    }
    if (pl_executor_measure(s->ex, 1, (int)s->o.measure_steps, &m, &err) != PL_OK)
        return pl_cli_report(&err);
    row->measured = m.median;
    row->plan->provenance.measured_seconds = m.median;
    row->plan->provenance.predicted_seconds = row->sim.step_seconds;
    return PL_EXIT_OK;
}

static pl_job_row *add_row(job_state *s, const char *name, pl_plan *plan, bool baseline)
{
    if (s->job.n_rows == PL_JOB_MAX_ROWS) {
        pl_plan_free(plan);
        return NULL;
    }
    pl_job_row *row = &s->job.rows[s->job.n_rows++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    row->plan = plan;
    row->baseline = baseline;
    return row;
}

/* Every baseline: simulated, measured, offered to the agent; the best one imitated. */
static int run_baselines(job_state *s)
{
    pl_job *job = &s->job;
    job->best_baseline = -1;
    for (int b = 0; b < PL_BASELINE_COUNT && !pl_cli_interrupted; b++) {
        pl_error err;
        pl_error_init(&err, s->o.model);
        pl_plan *plan = pl_baseline_place((pl_baseline)b, s->g, s->c, s->model, s->o.seed, &err);
        pl_job_row *row = add_row(s, pl_baseline_name((pl_baseline)b), plan, true);
        if (!row)
            break;
        if (!plan) {
            snprintf(row->failure, sizeof row->failure, "%s", err.text);
            continue;
        }
        int status = simulate_row(s, row);
        if (status != PL_EXIT_OK)
            return status;
    }
    /* the executor measures the three best by simulation (a paced step can take a second) */
    for (int round = 0; round < 3 && !pl_cli_interrupted; round++) {
        pl_job_row *next = NULL;
        for (int r = 0; r < job->n_rows; r++) {
            pl_job_row *row = &job->rows[r];
            if (row->plan && row->fits && row->measured == 0 &&
                (!next || row->sim.step_seconds < next->sim.step_seconds))
                next = row;
        }
        if (!next)
            break;
        int status = measure_row(s, next);
        if (status != PL_EXIT_OK)
            return status;
        if (next->measured > 0 && (job->best_baseline < 0 ||
                                   next->measured < job->rows[job->best_baseline].measured))
            job->best_baseline = (int)(next - job->rows);
    }
    for (int r = 0; r < job->n_rows && !s->o.quiet; r++) {
        const pl_job_row *row = &job->rows[r];
        if (!row->plan)
            printf("baseline %-12s failed: %s\n", row->name, row->failure);
        else if (row->measured > 0)
            printf("baseline %-12s simulated %9.3f ms  measured %9.3f ms\n", row->name,
                   1e3 * row->sim.step_seconds, 1e3 * row->measured);
        else
            printf("baseline %-12s simulated %9.3f ms  %s\n", row->name,
                   1e3 * row->sim.step_seconds, row->fits ? "(not measured)" : "(does not fit)");
    }
    return PL_EXIT_OK;
}

static int start_agent(job_state *s, char *ckpt)
{
    pl_agent_options ao;
    pl_agent_options_default(&ao);
    ao.seed = s->o.seed;
    ao.samples = (int)s->o.samples;
    ao.max_fold = s->o.no_fold ? 1 : ao.max_fold;
    ao.defer = !s->o.no_defer;
    ao.sweep = !s->o.no_sweep;
    ao.refine_every = s->o.no_refine ? 0 : ao.refine_every;
    pl_error err;
    pl_error_init(&err, s->o.resume ? s->o.resume : s->o.model);
    if (s->o.resume) {
        s->agent = pl_agent_load(s->o.resume, s->g, s->c, s->model, &ao, &err);
        if (!s->agent)
            return pl_cli_report(&err);
        if (!s->o.quiet)
            printf("agent: resumed from %s at iteration %d\n", s->o.resume,
                   pl_agent_iterations(s->agent));
        return PL_EXIT_OK;
    }
    (void)ckpt;
    if (!(s->agent = pl_agent_new(s->g, s->c, s->model, &ao, &err)))
        return pl_cli_report(&err);
    pl_job *job = &s->job;
    for (int r = 0; r < job->n_rows; r++)
        if (job->rows[r].plan && job->rows[r].fits &&
            pl_agent_offer(s->agent, job->rows[r].plan, &err) != PL_OK)
            return pl_cli_report(&err);
    if (job->best_baseline >= 0 &&
        pl_agent_imitate(s->agent, job->rows[job->best_baseline].plan, &err) != PL_OK) {
        if (err.status != PL_EINPUT)
            return pl_cli_report(&err);
        if (!s->o.quiet)
            printf("agent: not imitating %s (%s)\n", job->rows[job->best_baseline].name,
                   err.text);
    }
    return PL_EXIT_OK;
}

/* Measures the agent's best plan when it is new, and corrects the simulator with it. */
static int measure_agent_best(job_state *s, double *measured_best, uint64_t *last_key)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    pl_plan *plan = pl_agent_best_plan(s->agent, 0, &err);
    if (!plan)
        return PL_EXIT_OK;
    uint64_t key = 0;
    for (int i = 0; i < plan->n_ops; i++)
        key = key * 1000003u + (uint64_t)(plan->device[i] * 16 + plan->stage[i]);
    key = key * 31 + (uint64_t)plan->micro_batches;
    if (key == *last_key) {
        pl_plan_free(plan);
        return PL_EXIT_OK;
    }
    *last_key = key;
    pl_job_row row = {.plan = plan};
    int status = simulate_row(s, &row);
    if (status == PL_EXIT_OK)
        status = measure_row(s, &row);
    if (status == PL_EXIT_OK && row.measured > 0) {
        pl_agent_correct(s->agent, row.sim.step_seconds, row.measured);
        if (*measured_best == 0 || row.measured < *measured_best)
            *measured_best = row.measured;
    }
    pl_plan_free(plan);
    return status;
}

/* "   4.233 ms", or a dash before anything was measured. */
static const char *format_measured(double seconds, char *buf, size_t cap)
{
    if (seconds > 0)
        snprintf(buf, cap, "%8.3f ms", 1e3 * seconds);
    else
        snprintf(buf, cap, "%8s   ", "-");
    return buf;
}

static int search(job_state *s, const char *ckpt)
{
    pl_job *job = &s->job;
    double measured_best = 0, last_measure = pl_now(), last_save = last_measure;
    uint64_t last_key = 0;
    double base = job->best_baseline >= 0 ? job->rows[job->best_baseline].measured : 0;
    bool tty = isatty(STDOUT_FILENO);
    /* the search's share of the budget: the final measurements need the rest */
    double stop = s->start + 0.8 * s->o.budget;
    int status = PL_EXIT_OK;
    pl_error err;
    pl_error_init(&err, s->o.model);
    while (!pl_cli_interrupted && pl_now() < stop &&
           (!s->o.iterations || pl_agent_iterations(s->agent) < s->o.iterations)) {
        pl_agent_iteration it;
        if (pl_agent_iterate(s->agent, &it, &err) != PL_OK)
            return pl_cli_report(&err);
        double now = pl_now();
        if (now - last_measure > 5) {
            if ((status = measure_agent_best(s, &measured_best, &last_key)) != PL_EXIT_OK)
                return status;
            last_measure = pl_now();
        }
        if (now - last_save > 10) {
            if (pl_agent_save(s->agent, ckpt, &err) != PL_OK)
                return pl_cli_report(&err);
            last_save = now;
        }
        if (!s->o.quiet && (tty || it.iteration % 10 == 0 || it.iteration == 1)) {
            char measured[32];
            printf("%siteration %4d  mean reward %7.4f  best simulated %8.3f ms (corrected "
                   "%8.3f)  measured %s", tty ? "\r" : "", it.iteration, it.mean_reward,
                   1e3 * it.best_step, 1e3 * it.best_step * pl_agent_correction(s->agent),
                   format_measured(measured_best, measured, sizeof measured));
            if (base > 0 && measured_best > 0)
                printf("  gain %.2fx over the best baseline", base / measured_best);
            printf(tty ? "   " : "\n");
            fflush(stdout);
        }
    }
    int done = pl_agent_iterations(s->agent);
    if (!s->o.quiet && !tty && done > 0 && done % 10 != 0 && done != 1) {
        const pl_agent_iteration *it = &pl_agent_curve(s->agent)[done - 1];
        char measured[32];
        printf("iteration %4d  mean reward %7.4f  best simulated %8.3f ms  measured %s\n",
               it->iteration, it->mean_reward, 1e3 * it->best_step,
               format_measured(measured_best, measured, sizeof measured));
    }
    if (tty && !s->o.quiet)
        printf("\n");
    if (pl_agent_save(s->agent, ckpt, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}

/* The best measured baseline and the agent's plans, measured taking turns step by step:
 * measurements minutes apart drift with the machine (a few per cent here), and the final
 * choice compares plans within that. Each switch gets an unmeasured step first (the caches
 * the other plan filled, arenas grown); at least 3 rounds, at most 9, as many as the
 * budget leaves. The medians are the contenders' measurements. */
static int head_to_head(job_state *s)
{
    enum { MIN_ROUNDS = 3, MAX_ROUNDS = 9 };
    pl_job *job = &s->job;
    int who[PL_JOB_MAX_ROWS], n = 0;
    for (int r = 0; r < job->n_rows; r++)
        if (r == job->best_baseline || (!job->rows[r].baseline && job->rows[r].fits))
            who[n++] = r;
    if (n < 2)
        return PL_EXIT_OK;
    pl_error err;
    pl_error_init(&err, s->o.model);
    double *steps = malloc((size_t)n * MAX_ROUNDS * sizeof *steps);
    if (!steps) {
        pl_error_set(&err, PL_ENOMEM, NULL, "out of memory");
        return pl_cli_report(&err);
    }
    int rounds = 0;
    while (rounds < MAX_ROUNDS && !pl_cli_interrupted &&
           (rounds < MIN_ROUNDS || pl_now() < s->start + s->o.budget)) {
        for (int k = 0; k < n; k++) {
            pl_fit fit;
            float loss;
            if (pl_executor_set_plan(s->ex, job->rows[who[k]].plan, &fit, &err) != PL_OK ||
                pl_executor_step(s->ex, 0, &loss, &err) != PL_OK ||
                pl_executor_step(s->ex, 0, &loss, &err) != PL_OK) {
                free(steps);
                return pl_cli_report(&err);
            }
            steps[k * MAX_ROUNDS + rounds] = pl_executor_step_seconds(s->ex);
        }
        rounds++;
    }
    for (int k = 0; k < n && rounds >= MIN_ROUNDS; k++) {
        pl_job_row *row = &job->rows[who[k]];
        row->measured = pl_median(steps + k * MAX_ROUNDS, rounds);
        row->plan->provenance.measured_seconds = row->measured;
        row->plan->provenance.predicted_seconds = row->sim.step_seconds;
        row->head_to_head = true;
        if (!row->baseline)
            pl_agent_correct(s->agent, row->sim.step_seconds, row->measured);
    }
    free(steps);
    if (rounds >= MIN_ROUNDS) /* else interrupted: nothing compared fairly */
        job->head_to_head_rounds = rounds;
    return PL_EXIT_OK;
}

/* One of the agent's plans as row number *added + 1, unless it is a baseline's (already a
 * row) or the same as an agent's row before it (the same simulated step). */
static int add_agent_row(job_state *s, pl_plan *plan, int *added)
{
    bool reshaped, refined, same = false;
    for (int r = 0; r < s->job.n_rows && !same; r++)
        same = !s->job.rows[r].baseline && s->job.rows[r].plan &&
               s->job.rows[r].plan->provenance.predicted_seconds ==
                   plan->provenance.predicted_seconds;
    if (same || !pl_agent_made(plan, &reshaped, &refined)) {
        pl_plan_free(plan);
        return PL_EXIT_OK;
    }
    /* a plan the sweep reshaped or the refinement improved: said, with its origin */
    const char *origin = plan->provenance.algorithm;
    char name[96];
    if (strncmp(origin, "rl ", 3) == 0)
        origin += 3;
    if (reshaped || refined)
        snprintf(name, sizeof name, "agent #%d (%s)", ++*added, origin);
    else
        snprintf(name, sizeof name, "agent #%d", ++*added);
    pl_job_row *row = add_row(s, name, plan, false);
    if (!row)
        return PL_EXIT_OK;
    row->reshaped = reshaped;
    row->refined = refined;
    return simulate_row(s, row);
}

/* The agent's best plans from *k on, as rows, until *added reaches `want`. */
static int add_best_rows(job_state *s, int *k, int want, int *added)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    int status = PL_EXIT_OK;
    for (; *k < pl_agent_best_count(s->agent) && *added < want && status == PL_EXIT_OK; ++*k) {
        pl_plan *plan = pl_agent_best_plan(s->agent, *k, &err);
        status = plan ? add_agent_row(s, plan, added) : pl_cli_report(&err);
    }
    return status;
}

/* The agent's two best distinct plans and its lead (its best plan not refined: what the
 * policy itself reached), or its third best when the lead is among them or a baseline,
 * become rows, measured head to head with the best baseline unless interrupted; the
 * chosen row is the fastest measured (simulated when nothing was measured). */
static int finish_search(job_state *s)
{
    pl_job *job = &s->job;
    pl_error err;
    pl_error_init(&err, s->o.model);
    int added = 0, k = 0;
    int status = add_best_rows(s, &k, 2, &added);
    pl_plan *lead = status == PL_EXIT_OK ? pl_agent_lead_plan(s->agent, &err) : NULL;
    if (lead)
        status = add_agent_row(s, lead, &added);
    if (status == PL_EXIT_OK)
        status = add_best_rows(s, &k, 3, &added);
    if (status != PL_EXIT_OK)
        return status;
    status = pl_cli_interrupted ? PL_EXIT_OK : head_to_head(s);
    if (status != PL_EXIT_OK)
        return status;
    job->chosen = -1;
    for (int r = 0; r < job->n_rows; r++) {
        const pl_job_row *row = &job->rows[r];
        if (!row->plan || !row->fits || (job->head_to_head_rounds > 0 && !row->head_to_head))
            continue; /* after a head-to-head, only its contenders compare fairly */
        double key = row->measured > 0 ? row->measured : 1e9 + row->sim.step_seconds;
        const pl_job_row *best = job->chosen >= 0 ? &job->rows[job->chosen] : NULL;
        double best_key = best ? (best->measured > 0 ? best->measured
                                                     : 1e9 + best->sim.step_seconds) : 0;
        if (!best || key < best_key)
            job->chosen = r;
    }
    if (job->chosen < 0) {
        fprintf(stderr, "placer: no plan fits the cluster's memory\n");
        return PL_EXIT_NO_FIT;
    }
    /* the chosen plan's measured busy time per device, from its last step */
    pl_job_row *chosen = &job->rows[job->chosen];
    pl_fit fit;
    float loss;
    if (chosen->measured > 0 && pl_executor_set_plan(s->ex, chosen->plan, &fit, &err) == PL_OK &&
        fit.fits && pl_executor_step(s->ex, 0, &loss, &err) == PL_OK) {
        const pl_program *p = pl_executor_program(s->ex);
        const double *starts = pl_executor_task_starts(s->ex), *ends = pl_executor_task_ends(s->ex);
        for (int t = 0; t < p->n_tasks; t++)
            if (p->tasks[t].resource < p->n_devices)
                job->measured_busy[p->tasks[t].resource] += ends[t] - starts[t];
    }
    return PL_EXIT_OK;
}

/* Each op's simulated seconds per step (every micro-batch), for the drawing; NULL when
 * it cannot be had (the drawing then goes without times). */
static double *simulated_op_seconds(job_state *s, const pl_plan *plan)
{
    pl_program *p = pl_program_new(s->g, s->c, plan, NULL);
    double *starts = p ? malloc((size_t)p->n_tasks * sizeof *starts) : NULL;
    double *ends = p ? malloc((size_t)p->n_tasks * sizeof *ends) : NULL;
    double *seconds = calloc((size_t)s->g->n_ops, sizeof *seconds);
    pl_simulation sim;
    if (!starts || !ends || !seconds ||
        pl_simulate(p, s->c, s->model, &sim, starts, ends, NULL) != PL_OK) {
        free(seconds);
        seconds = NULL;
    } else {
        for (int t = 0; t < p->n_tasks; t++)
            if (p->tasks[t].kind == PL_TASK_OP)
                seconds[p->tasks[t].op] += ends[t] - starts[t];
    }
    free(starts);
    free(ends);
    pl_program_free(p);
    return seconds;
}

static int write_outputs(job_state *s)
{
    pl_job *job = &s->job;
    pl_job_row *chosen = &job->rows[job->chosen];
    char *plan_path = path_of(s->prefix, ".plan.json");
    char *dot_path = path_of(s->prefix, ".plan.dot");
    int status = PL_EXIT_OK;
    pl_error err;
    pl_error_init(&err, plan_path);
    if (!plan_path || !dot_path) {
        status = PL_EXIT_FAILURE;
    } else if (pl_plan_write_file(plan_path, chosen->plan, s->g, s->c, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else {
        pl_atomic_file file = {0};
        pl_error_init(&err, dot_path);
        double *op_seconds = simulated_op_seconds(s, chosen->plan);
        if (pl_atomic_open(&file, dot_path, &err) != PL_OK ||
            pl_dot_write_plan(s->g, chosen->plan, s->c, op_seconds, false, file.fp, &err) !=
                PL_OK) {
            pl_atomic_abort(&file);
            status = pl_cli_report(&err);
        } else if (pl_atomic_commit(&file, &err) != PL_OK) {
            status = pl_cli_report(&err);
        }
        free(op_seconds);
    }
    /* the agent's own best plan too, whether or not it was chosen (to train with it) */
    int agent_row = -1;
    for (int r = 0; r < job->n_rows; r++) {
        const pl_job_row *row = &job->rows[r];
        if (row->baseline || !row->plan || !row->fits)
            continue;
        if (agent_row < 0 || (row->measured > 0 && (job->rows[agent_row].measured == 0 ||
                                                    row->measured < job->rows[agent_row].measured)))
            agent_row = r;
    }
    char *agent_path = path_of(s->prefix, ".agent.plan.json");
    if (status == PL_EXIT_OK && agent_row >= 0) {
        pl_error_init(&err, agent_path);
        if (!agent_path)
            status = PL_EXIT_FAILURE;
        else if (pl_plan_write_file(agent_path, job->rows[agent_row].plan, s->g, s->c, &err) !=
                 PL_OK)
            status = pl_cli_report(&err);
    }
    if (status == PL_EXIT_OK)
        status = pl_job_write_report(job, s->prefix);
    if (status == PL_EXIT_OK && !s->o.quiet) {
        printf("plan: %s, %s step %.3f ms (%.2fx the lower bound)", chosen->name,
               chosen->measured > 0 ? "measured" : "simulated",
               1e3 * (chosen->measured > 0 ? chosen->measured : chosen->sim.step_seconds),
               (chosen->measured > 0 ? chosen->measured : chosen->sim.step_seconds) / job->bound);
        if (job->best_baseline >= 0 && chosen->measured > 0)
            printf("; %.2fx faster than the best baseline (%s)",
                   job->rows[job->best_baseline].measured / chosen->measured,
                   job->rows[job->best_baseline].name);
        printf("\nwrote %s, %s, %s.report.md (render: dot -Tsvg %s > %s.plan.svg)%s%s\n",
               plan_path, dot_path, s->prefix, dot_path, s->prefix,
               agent_row >= 0 ? "; the agent's best plan: " : "",
               agent_row >= 0 ? agent_path : "");
    }
    free(agent_path);
    free(plan_path);
    free(dot_path);
    return status;
}

static int run_job(job_state *s)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    bool verbose = !s->o.quiet;
    pl_job *job = &s->job;
    if (pl_autodiff_build(s->g, &err) != PL_OK)
        return pl_cli_report(&err);
    pl_plan *unused = NULL;
    int status = pl_cli_load_placement(s->o.cluster, NULL, s->g, &s->c, &unused);
    pl_plan_free(unused);
    if (status != PL_EXIT_OK)
        return status;
    job->graph = s->g;
    job->cluster = s->c;
    if (!(s->model = calloc(1, sizeof *s->model)))
        return PL_EXIT_FAILURE;
    if (pl_profile_load(s->model, s->c, false, pl_cli_calibration_progress, &verbose,
                        &job->calibrated, &err) != PL_OK ||
        pl_step_lower_bound(s->g, s->c, s->model, &job->bound, &err) != PL_OK)
        return pl_cli_report(&err);
    if ((status = pl_cli_new_executor(s->g, s->c, "synthetic", &s->ex)) != PL_EXIT_OK)
        return status;
    if (!s->o.quiet)
        printf("placing %s on cluster \"%s\" (%d devices, %s); lower bound %.3f ms; budget "
               "%.0f s, seed %llu\n", s->g->name, s->c->name, s->c->n_devices,
               s->c->paced ? "paced: emulated devices" : "native", 1e3 * job->bound,
               s->o.budget, s->o.seed);
    char *ckpt = path_of(s->prefix, ".agent.ckpt");
    if (!ckpt)
        return PL_EXIT_FAILURE;
    if ((status = run_baselines(s)) == PL_EXIT_OK && (status = start_agent(s, ckpt)) == PL_EXIT_OK) {
        job->agent = s->agent;
        status = search(s, ckpt);
    }
    free(ckpt);
    if (status == PL_EXIT_OK)
        status = finish_search(s);
    job->elapsed = pl_now() - s->start;
    job->interrupted = pl_cli_interrupted;
    if (status == PL_EXIT_OK)
        status = write_outputs(s);
    if (status == PL_EXIT_OK && pl_cli_interrupted)
        status = PL_EXIT_INTERRUPTED;
    return status;
}

int pl_cmd_main(int argc, char **argv)
{
    job_state s;
    memset(&s, 0, sizeof s);
    s.start = pl_now();
    char *command = join_command(argc, argv); /* before getopt reorders argv */
    int status = parse_options(argc, argv, &s.o);
    if (status != PL_EXIT_OK || !(s.g = pl_cli_load_model(s.o.model, &status))) {
        free(command);
        return status < 0 ? PL_EXIT_OK : status;
    }
    if (!s.o.quiet)
        pl_cli_print_summary(stdout, s.o.model, s.g);
    s.prefix = s.o.prefix ? strdup(s.o.prefix) : default_prefix(s.o.model);
    char *dot_path = s.prefix ? path_of(s.prefix, ".graph.dot") : NULL;
    if (!s.prefix || !command || !dot_path) {
        fprintf(stderr, "placer: out of memory\n");
        status = PL_EXIT_FAILURE;
    } else if ((status = pl_cli_write_dot(s.g, dot_path)) == PL_EXIT_OK) {
        if (!s.o.quiet)
            printf("wrote %s (render: dot -Tsvg %s > %s.svg)\n", dot_path, dot_path, s.prefix);
        s.job.model_path = s.o.model;
        s.job.command = command;
        s.job.budget = s.o.budget;
        s.job.seed = s.o.seed;
        pl_cli_catch_interrupt(true);
        status = run_job(&s);
        pl_cli_catch_interrupt(false);
    }
    for (int r = 0; r < s.job.n_rows; r++)
        pl_plan_free(s.job.rows[r].plan);
    pl_agent_free(s.agent);
    pl_executor_free(s.ex);
    if (s.model)
        pl_cost_model_clear(s.model);
    free(s.model);
    pl_cluster_free(s.c);
    pl_graph_free(s.g);
    free(dot_path);
    free(command);
    free(s.prefix);
    return status;
}
