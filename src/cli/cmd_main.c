/* placer MODEL.json: the main job. Load and validate the model (its summary and
 * PREFIX.graph.dot once the inputs are checked), calibrate (cached), run the search
 * (policy/search.h: the baselines, the agent within the budget, the best candidates
 * measured on the executor) printing its progress, and write the plan (PREFIX.plan.json), its drawing
 * (PREFIX.plan.dot) and a report (PREFIX.report.md with PREFIX.curve.svg), all
 * atomically; no drawing the budget has no time left for. Ctrl-C, SIGTERM or SIGHUP stops the
 * search and still writes the best plan found so far (exit 130), or, when that takes more
 * than a second (a huge model), ends the process then; a checkpoint that cannot be saved
 * does not keep the plan and the report from being written (exit 1). Every input is read and checked (the cluster
 * here, the checkpoint resumed by the search) before anything is written. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli.h"
#include "dot.h"
#include "job.h"
#include "profile.h"
#include "progress.h"

typedef struct main_options {
    const char *model, *prefix, *cluster;
    const char *op_times; /* --op-times, or NULL */
    const char *policy;  /* --policy, or NULL: the pre-trained one (pl_policy_default_path) */
    bool no_pretrained;
    bool quiet;
    pl_progress_mode progress;
    pl_search_options search; /* its defaults are the command's */
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
    printf("Usage: placer MODEL.json [options]\n"
           "Finds a placement of the model on the cluster: runs the baseline placers and\n"
           "the learning agent for about --budget seconds, measures the best plans on the\n"
           "executor and writes, all atomically:\n"
           "  PREFIX.graph.dot        the model's drawing\n"
           "  PREFIX.plan.json        the plan chosen, and PREFIX.plan.dot its drawing\n"
           "  PREFIX.agent.plan.json  the agent's own best plan\n"
           "  PREFIX.agent.ckpt       the agent's checkpoint (--resume it)\n"
           "  PREFIX.report.md        the report, with its pictures: PREFIX.curve.svg (the\n"
           "                          learning curve), PREFIX.timeline.svg and\n"
           "                          PREFIX.timeline-measured.svg (the chosen plan's step)\n"
           "  PREFIX.summary.json     the result for programs\n"
           "\n"
           "  -o, --output PREFIX   where (default: the model file's name without .json, in\n"
           "                        the current directory; needed for a model from '-')\n"
           "  --cluster FILE        the cluster (default: this machine, one device per core);\n"
           "                        one of hardware placer cannot run (dgx-a100, ...) is\n"
           "                        planned on the simulator alone, and every output says so\n"
           "  --op-times FILE       op times measured elsewhere (tools/import-trace) in\n"
           "                        place of the profile's for the ops they time, in every\n"
           "                        simulated figure (measured steps stay this machine's)\n"
           "  --budget SECONDS      the time the search may take (default 60)\n"
           "  --seed N              the seed (default 1)\n"
           "  --iterations N        stop the agent after N iterations in all (the budget\n"
           "                        still applies)\n"
           "  --search-seconds S    stop the agent S seconds after it starts (the budget\n"
           "                        still applies)\n"
           "  --samples N           plans the agent draws per iteration (default 32)\n"
           "  --measure-steps N     steps measured per plan measured (default 3)\n"
           "  --resume CKPT         continue from a checkpoint of the same model, cluster,\n"
           "                        seed and samples\n"
           "  -q, --quiet           print only errors\n"
           "  --no-fold, --no-defer keep the agent from interleaving pipeline stages, from\n"
           "                        deferring weight gradients\n"
           "  --no-sweep            from trying a new best placement under every shape\n"
           "  --no-refine           from refining the best plan by single-op moves (these\n"
           "                        four measure what each gains)\n"
           "  --no-replicas         no replicated plans: neither the data-parallel and hybrid\n"
           "                        baselines nor the agent's replication, and megatron's\n"
           "                        of one replica (what they gain)\n"
           "  --no-learning         search without the learned policy: the baselines, their\n"
           "                        shapes and refinement in its time (what learning gains)\n"
           "  --policy FILE         start the policy from FILE's weights (default: the\n"
           "                        pre-trained policy that ships with placer)\n"
           "  --no-pretrained       start the policy from fresh weights\n"
           "  --zero-shot           sample the pre-trained policy as it is: no baselines\n"
           "                        offered or imitated, no training (its best samples are\n"
           "                        still reshaped and refined: --no-sweep, --no-refine)\n"
           "  --no-early-stop       iterate until the budget or --iterations even once the\n"
           "                        search has converged (no better plan for a while, the\n"
           "                        policy's samples all alike)\n"
           "  --progress MODE       live (one line rewritten, the default on a terminal),\n"
           "                        lines (a line on news and every 10 s, the default\n"
           "                        otherwise) or none\n"
           "\n"
           "MODEL.json or --cluster FILE of '-' is read from standard input (one of them).\n"
           "The budget holds for the whole job: a model too large for it gets the best\n"
           "plan of the phases there was time for (the job says which it skipped), and no\n"
           "drawings that would take long once it is spent.\n"
           "Ctrl-C (or SIGTERM, SIGHUP) stops the search and writes the best plan so far\n"
           "(exit status 130), within a second: what is not written by then is not\n"
           "written. A checkpoint that cannot be saved is said and the plan still\n"
           "written (exit status 1). More: man placer, and in " PLACER_DOCDIR "/,\n"
           "agent.md and outputs.md.\n");
}

/* A number of seconds: more than 0, at most a million (about 11 days). */
static bool parse_seconds(const char *text, double *seconds)
{
    char *end;
    *seconds = strtod(text, &end);
    return *text != '\0' && *end == '\0' && *seconds > 0 && *seconds <= 1e6;
}

static int parse_options(int argc, char **argv, main_options *o)
{
    static const struct option options[] = {{"output", required_argument, NULL, 'o'},
                                            {"cluster", required_argument, NULL, 'c'},
                                            {"op-times", required_argument, NULL, 'O'},
                                            {"budget", required_argument, NULL, 'b'},
                                            {"seed", required_argument, NULL, 's'},
                                            {"iterations", required_argument, NULL, 'i'},
                                            {"search-seconds", required_argument, NULL, 'a'},
                                            {"samples", required_argument, NULL, 'n'},
                                            {"measure-steps", required_argument, NULL, 'm'},
                                            {"resume", required_argument, NULL, 'r'},
                                            {"quiet", no_argument, NULL, 'q'},
                                            {"no-fold", no_argument, NULL, 'F'},
                                            {"no-defer", no_argument, NULL, 'D'},
                                            {"no-sweep", no_argument, NULL, 'S'},
                                            {"no-refine", no_argument, NULL, 'R'},
                                            {"no-replicas", no_argument, NULL, 'X'},
                                            {"no-learning", no_argument, NULL, 'L'},
                                            {"policy", required_argument, NULL, 'P'},
                                            {"no-pretrained", no_argument, NULL, 'T'},
                                            {"zero-shot", no_argument, NULL, 'Z'},
                                            {"no-early-stop", no_argument, NULL, 'E'},
                                            {"progress", required_argument, NULL, 'p'},
                                            {"help", no_argument, NULL, 'h'},
                                            {NULL, 0, NULL, 0}};
    *o = (main_options){0};
    pl_search_options_default(&o->search);
    opterr = 0; /* our own message, below */
    int c;
    long value;
    while ((c = getopt_long(argc, argv, "o:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': o->prefix = optarg; break;
        case 'c': o->cluster = optarg; break;
        case 'O': o->op_times = optarg; break;
        case 'r': o->search.resume = optarg; break;
        case 'q': o->quiet = true; break;
        case 'F': o->search.no_fold = true; break;
        case 'D': o->search.no_defer = true; break;
        case 'S': o->search.no_sweep = true; break;
        case 'X': o->search.no_replicas = true; break;
        case 'R': o->search.no_refine = true; break;
        case 'L': o->search.no_learning = true; break;
        case 'P': o->policy = optarg; break;
        case 'T': o->no_pretrained = true; break;
        case 'Z': o->search.zero_shot = true; break;
        case 'E': o->search.run_to_budget = true; break;
        case 'p':
            if (!pl_progress_parse(optarg, &o->progress))
                return pl_cli_usage_error("invalid value '%s' for --progress (auto, live, "
                                          "lines or none)", optarg);
            break;
        case 'a':
            if (!parse_seconds(optarg, &o->search.search_seconds))
                return pl_cli_usage_error("invalid value '%s' for --search-seconds (seconds, "
                                          "more than 0)", optarg);
            break;
        case 'b':
            if (!parse_seconds(optarg, &o->search.budget))
                return pl_cli_usage_error("invalid value '%s' for --budget (seconds, more than "
                                          "0)", optarg);
            break;
        case 's':
            if (!pl_cli_parse_long(optarg, 0, 2147483647, &value))
                return pl_cli_usage_error("invalid value '%s' for --seed (0 to 2147483647)",
                                          optarg);
            o->search.seed = (uint64_t)value;
            break;
        case 'i':
            if (!pl_cli_parse_long(optarg, 1, 100000000, &value))
                return pl_cli_usage_error("invalid value '%s' for --iterations (1 or more)",
                                          optarg);
            o->search.iterations = (int)value;
            break;
        case 'n':
            if (!pl_cli_parse_long(optarg, 2, 4096, &value))
                return pl_cli_usage_error("invalid value '%s' for --samples (2 to 4096)", optarg);
            o->search.samples = (int)value;
            break;
        case 'm':
            if (!pl_cli_parse_long(optarg, 1, 1000, &value))
                return pl_cli_usage_error("invalid value '%s' for --measure-steps (1 to 1000)",
                                          optarg);
            o->search.measure_steps = (int)value;
            break;
        case 'h': print_usage(); return -1;
        default:
            return pl_cli_usage_error("unknown option or missing argument '%s'",
                                      argv[optind - 1]);
        }
    }
    if (o->policy && o->no_pretrained)
        return pl_cli_usage_error("--policy and --no-pretrained say different things");
    if (o->search.zero_shot && (o->no_pretrained || o->search.no_learning || o->search.resume))
        return pl_cli_usage_error("--zero-shot samples a pre-trained policy: not with %s",
                                  o->no_pretrained      ? "--no-pretrained"
                                  : o->search.resume    ? "--resume"
                                                        : "--no-learning");
    if (o->policy && o->search.resume)
        return pl_cli_usage_error("--policy starts a new search; --resume continues one with "
                                  "its own weights");
    if (optind >= argc)
        return pl_cli_usage_error("missing MODEL.json");
    if (optind + 1 < argc)
        return pl_cli_usage_error("one model at a time ('%s' is extra; commands: validate, "
                                  "dot, ...)", argv[optind + 1]);
    o->model = argv[optind];
    return PL_EXIT_OK;
}

/* The command line as a shell reads it back: a word of only safe characters as it is,
 * any other in single quotes, each ' inside as '\'' (close, escaped quote, reopen). */
static char *join_command(int argc, char **argv)
{
    size_t len = sizeof "placer";
    for (int i = 1; i < argc; i++)
        len += 4 * strlen(argv[i]) + 3;
    char *text = malloc(len), *end = text;
    if (!text)
        return NULL;
    end += sprintf(end, "placer");
    for (int i = 1; i < argc; i++) {
        const char *word = argv[i];
        bool plain = word[0] != '\0' &&
                     strspn(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                  "0123456789_@%+=:,./-") == strlen(word);
        *end++ = ' ';
        if (plain) {
            end += sprintf(end, "%s", word);
            continue;
        }
        *end++ = '\'';
        for (const char *c = word; *c; c++)
            end += *c == '\'' ? sprintf(end, "'\\''") : sprintf(end, "%c", *c);
        *end++ = '\'';
        *end = '\0';
    }
    return text;
}

/* Every PREFIX.* output and the profile against the model and the cluster; all but
 * PREFIX.agent.ckpt against the checkpoint resumed, which the search reads whole before
 * it writes and continues in place (--resume PREFIX.agent.ckpt). */
static int check_outputs(const main_options *o, const char *prefix)
{
    static const char *const suffixes[] = {".graph.dot", ".plan.json", ".plan.dot",
                                           ".agent.plan.json", ".report.md", ".curve.svg",
                                           ".summary.json", ".timeline.svg",
                                           ".timeline-measured.svg",
                                           ".agent.ckpt" /* last: see above */};
    enum { N_SUFFIXES = sizeof suffixes / sizeof *suffixes };
    const pl_cli_file inputs[] = {{o->model, "the model", false},
                                  {o->cluster, "the cluster", false},
                                  {o->policy, "the policy", false},
                                  {o->op_times, "the op times", false},
                                  {o->search.resume, "the checkpoint resumed", false}};
    char profile[4096];
    pl_cli_file outputs[1 + N_SUFFIXES] = {pl_cli_profile_output(profile, sizeof profile)};
    int status = PL_EXIT_OK;
    for (int i = 0; i < N_SUFFIXES; i++)
        if (!(outputs[1 + i] = (pl_cli_file){pl_cli_path(prefix, suffixes[i]), "the output", false})
                 .path)
            status = PL_EXIT_FAILURE;
    if (status == PL_EXIT_OK &&
        (status = pl_cli_check_outputs(inputs, 4, outputs, 1 + N_SUFFIXES)) == PL_EXIT_OK)
        status = pl_cli_check_outputs(inputs + 4, 1, outputs, N_SUFFIXES);
    for (int i = 0; i < N_SUFFIXES; i++)
        free((char *)outputs[1 + i].path);
    return status;
}

/* Seconds the job has to stop in order after an interrupt (pl_cli_interrupt_grace). */
enum { INTERRUPT_GRACE = 1 };

typedef struct job_state {
    main_options o;
    pl_job job;
    pl_cli_setup setup; /* the model, its training graph, the cluster, the profile */
    pl_search *search;
    char *prefix;
    double start;
    pl_progress progress;
    pl_policy_weights policy; /* the weights the policy starts from (n 0: fresh ones) */
    char *graph_dot;      /* the model's drawing, made before its training graph */
    size_t graph_dot_size;
    int graph_dot_status; /* writing PREFIX.graph.dot: an exit status */
} job_state;

/* The model's drawing, into memory: it is written once every input has been read and
 * checked (write_graph_dot), and autodiff adds the backward ops to the graph before. */
static int draw_graph(job_state *s)
{
    pl_error err;
    pl_error_init(&err, s->o.model);
    FILE *out = open_memstream(&s->graph_dot, &s->graph_dot_size);
    if (!out) {
        fprintf(stderr, "placer: out of memory\n");
        return PL_EXIT_FAILURE;
    }
    pl_status status = pl_dot_write_graph(s->setup.graph, PL_DOT_MAX_BOXES, out, &err);
    if (fclose(out) != 0 && status == PL_OK)
        status = pl_error_set(&err, PL_ENOMEM, NULL, "out of memory");
    return status == PL_OK ? PL_EXIT_OK : pl_cli_report(&err);
}

/* PREFIX.graph.dot, when the search has read its inputs (the checkpoint resumed among
 * them) and before it starts its work. */
static int write_graph_dot(const job_state *s)
{
    char *path = pl_cli_path(s->prefix, ".graph.dot");
    pl_error err;
    pl_error_init(&err, path);
    pl_atomic_file file;
    int status = PL_EXIT_OK;
    if (!path) {
        fprintf(stderr, "placer: out of memory\n");
        status = PL_EXIT_FAILURE;
    } else if (pl_atomic_open(&file, path, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else if (fwrite(s->graph_dot, 1, s->graph_dot_size, file.fp) != s->graph_dot_size) {
        pl_atomic_abort(&file);
        pl_error_set(&err, PL_EIO, NULL, "cannot write %s", path);
        status = pl_cli_report(&err);
    } else if (pl_atomic_commit(&file, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else if (!s->o.quiet) {
        printf("wrote %s (render: dot -Tsvg %s > %s.svg)\n", path, path, s->prefix);
    }
    free(path);
    return status;
}

/* What the job prints of the search's events (the others pass in silence). */
static void print_progress(void *context, const pl_search_event *event)
{
    job_state *s = context;
    if (event->kind == PL_SEARCH_STARTED)
        s->graph_dot_status = write_graph_dot(s);
    if (event->kind == PL_SEARCH_CHECKPOINT_FAILED) /* even when quiet */
        fprintf(stderr, "placer: %s; the search goes on without it\n", event->text);
    pl_progress_event(&s->progress, event);
}

/* Whether the budget leaves time for a drawing (the plan's, the step's timelines): the
 * plan, the report and the summary are always written, but a drawing needs a program and
 * a simulation of the graph, which on a large graph costs as much as placing a baseline
 * (the search's slowest one is the estimate). A short drawing is made all the same, as a
 * short measurement is (search.h): only a long one that would end past the budget is not. */
static bool budget_allows_drawing(const job_state *s)
{
    double seconds = s->search->slowest_placing;
    return s->o.search.budget <= 0 || seconds <= PL_SEARCH_SHORT_SECONDS ||
           pl_now() + seconds < s->start + s->o.search.budget;
}

static int write_outputs(job_state *s)
{
    const pl_search *search = s->search;
    const pl_graph *g = s->setup.graph;
    const pl_cluster *c = s->setup.cluster;
    const pl_search_row *chosen = &search->rows[search->chosen];
    char *plan_path = pl_cli_path(s->prefix, ".plan.json");
    char *dot_path = pl_cli_path(s->prefix, ".plan.dot");
    int status = PL_EXIT_OK;
    bool plan_drawn = false;
    pl_error err;
    pl_error_init(&err, plan_path);
    if (!plan_path || !dot_path) {
        status = PL_EXIT_FAILURE;
    } else if (pl_plan_write_file(plan_path, chosen->plan, g, c, &err) != PL_OK) {
        status = pl_cli_report(&err);
    } else if ((plan_drawn = budget_allows_drawing(s))) {
        /* the drawing without times when they cannot be had */
        double *op_seconds = pl_cli_op_seconds(g, c, s->setup.costs, chosen->plan);
        status = pl_cli_write_plan_dot(g, chosen->plan, c, op_seconds, false, PL_DOT_MAX_BOXES,
                                       dot_path);
        free(op_seconds);
    }
    /* the agent's own best plan too, whether or not it was chosen (to train with it) */
    int agent_row = -1;
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        if (row->baseline || !row->plan || !row->fits)
            continue;
        if (agent_row < 0 ||
            (row->measured > 0 && (search->rows[agent_row].measured == 0 ||
                                   row->measured < search->rows[agent_row].measured)))
            agent_row = r;
    }
    char *agent_path = pl_cli_path(s->prefix, ".agent.plan.json");
    if (status == PL_EXIT_OK && agent_row >= 0) {
        pl_error_init(&err, agent_path);
        if (!agent_path)
            status = PL_EXIT_FAILURE;
        else if (pl_plan_write_file(agent_path, search->rows[agent_row].plan, g, c, &err) !=
                 PL_OK)
            status = pl_cli_report(&err);
    }
    s->job.no_drawings = !budget_allows_drawing(s); /* the plan's drawing may have spent it */
    if (status == PL_EXIT_OK)
        status = pl_job_write_report(&s->job, s->prefix);
    if (status == PL_EXIT_OK && !s->o.quiet) {
        double step = chosen->measured > 0 ? chosen->measured : chosen->sim.step_seconds;
        char spread[32] = "";
        if (chosen->measured > 0)
            pl_cli_spread_text(&chosen->series, spread, sizeof spread);
        printf("plan: %s, %s step %.3f ms%s%s\n  %.2fx the lower bound (%s / bound)",
               chosen->name, chosen->measured > 0 ? "measured" : "simulated", 1e3 * step,
               spread[0] ? " " : "", spread, step / search->bound,
               chosen->measured > 0 ? "measured" : "simulated");
        const pl_search_row *base =
            search->best_baseline >= 0 ? &search->rows[search->best_baseline] : NULL;
        if (base && base->measured > 0 && chosen->measured > 0)
            printf("; %.2fx faster than the best baseline (%s)",
                   base->measured / chosen->measured, base->name);
        char simulated[PL_ERROR_TEXT_MAX];
        if (c->simulated)
            printf("\n  %s", pl_cli_simulated_text(c, s->setup.costs, simulated,
                                                    sizeof simulated));
        if (search->choice_unstable)
            printf("\n  the choice rests on an unstable measurement (the machine was busy?): "
                   "see the report");
        char skipped[256];
        if (pl_progress_skipped_text(search, skipped, sizeof skipped)[0])
            printf("\n  the budget was too short for the whole search: skipped for time: %s",
                   skipped);
        if (!plan_drawn)
            printf("\nwrote %s\n  %s.report.md, %s.summary.json%s%s; no drawings: the budget "
                   "left no time for them\n", plan_path, s->prefix, s->prefix,
                   agent_row >= 0 ? ", the agent's best plan " : "",
                   agent_row >= 0 ? agent_path : "");
        else
            printf("\nwrote %s (render: dot -Tsvg %s > %s.plan.svg)\n  %s, %s.report.md, "
                   "%s.summary.json%s%s%s\n", plan_path, dot_path, s->prefix, dot_path,
                   s->prefix, s->prefix, agent_row >= 0 ? ", the agent's best plan " : "",
                   agent_row >= 0 ? agent_path : "",
                   s->job.no_drawings ? "; no timelines: the budget left no time for them" : "");
    }
    free(agent_path);
    free(plan_path);
    free(dot_path);
    return status;
}

/* The weights the policy starts from: --policy, else the pre-trained ones unless
 * --no-pretrained (or --resume: the checkpoint holds its own). Read before anything is
 * written, so that a bad file fails the job at once. */
static int read_policy(job_state *s)
{
    const char *path = s->o.policy;
    if (!path && !s->o.no_pretrained && !s->o.search.resume)
        path = pl_policy_default_path();
    if (!path) {
        if (s->o.search.zero_shot)
            return pl_cli_usage_error("--zero-shot needs a policy, and no pre-trained one "
                                      "was found: pass --policy FILE");
        return PL_EXIT_OK;
    }
    pl_error err;
    pl_error_init(&err, path);
    if (pl_policy_weights_read(path, &s->policy, &err) != PL_OK)
        return pl_cli_report(&err);
    s->job.policy_path = path;
    return PL_EXIT_OK;
}

/* That no plan fits, and how near the nearest baseline's plan came: what it needs on its
 * fullest device against what that device holds, and how it saved memory. */
static void print_no_fit(const pl_search *search, const pl_cluster *c)
{
    const pl_search_row *nearest = NULL;
    for (int r = 0; r < search->n_rows; r++) {
        const pl_baseline_misfit *m = &search->rows[r].misfit;
        if (m->device >= 0 &&
            (!nearest || (double)m->needs / (double)m->holds <
                             (double)nearest->misfit.needs / (double)nearest->misfit.holds))
            nearest = &search->rows[r];
    }
    if (!nearest) {
        pl_cli_error("no plan fits the cluster's memory");
        return;
    }
    const pl_baseline_misfit *m = &nearest->misfit;
    char needs[32], holds[32], device[4 * PL_MAX_NAME]; /* the name as a file gave it */
    pl_text_escape(c->devices[m->device].name, device, sizeof device);
    pl_cli_error("no plan fits the cluster's memory: the nearest found, %s's%s%s%s, needs %s "
                 "on device \"%s\", which holds %s", nearest->name,
                 m->splits || m->recomputes ? ", which " : "", m->splits ? "splits ops" : "",
                 m->recomputes ? (m->splits ? " and recomputes activations"
                                            : "recomputes activations") : "",
                 pl_units_bytes((double)m->needs, needs, sizeof needs), device,
                 pl_units_bytes((double)m->holds, holds, sizeof holds));
}

/* The search, printing as it goes; its result in s->search. */
static int search(job_state *s)
{
    char *checkpoint = pl_cli_path(s->prefix, ".agent.ckpt");
    if (!checkpoint)
        return PL_EXIT_FAILURE;
    pl_search_options so = s->o.search;
    so.start = s->start; /* loading and calibrating count against the budget */
    so.policy = s->policy.n ? &s->policy : NULL;
    so.checkpoint = checkpoint;
    so.comm = pl_cli_comm();
    pl_error err;
    pl_error_init(&err, s->o.model);
    pl_progress_init(&s->progress, stdout, s->o.progress, s->o.quiet, s->setup.graph,
                     s->setup.cluster, &s->o.search, s->start);
    s->search = pl_search_run(s->setup.graph, s->setup.cluster, s->setup.costs, &so, print_progress, s,
                              &pl_cli_interrupted, &err);
    free(checkpoint);
    s->job.search = s->search;
    if (!s->search)
        return pl_cli_report(&err);
    if (s->search->chosen < 0) {
        print_no_fit(s->search, s->setup.cluster);
        return PL_EXIT_NO_FIT;
    }
    return PL_EXIT_OK;
}

/* Whether the cluster has a device of this machine's own cores, unpaced. */
static bool has_native_device(const pl_cluster *c)
{
    for (int d = 0; !c->simulated && d < c->n_devices; d++)
        if (!(c->devices[d].flops_per_second > 0))
            return true;
    return false;
}

/* The machine as it is now (probe.h): the profile's native times scaled to it. A probe
 * that fails leaves the profile as measured and says why. */
static void probe_machine(job_state *s)
{
    if (!has_native_device(s->setup.cluster))
        return;
    char reference[4096];
    const char *graphs = pl_profile_graphs_dir();
    snprintf(reference, sizeof reference, "%s/cnn.json", graphs ? graphs : ".");
    const char *model = strcmp(s->o.model, "-") == 0 ? NULL : s->o.model;
    pl_error err;
    pl_error_init(&err, NULL);
    if (pl_cost_probe(s->setup.costs, model, access(reference, R_OK) == 0 ? reference : NULL,
                      &pl_cli_interrupted, &s->job.probe, &err) != PL_OK) {
        if (err.status != PL_EINTERRUPTED)
            fprintf(stderr, "placer: warning: the machine's speed was not probed (%s): the "
                    "profile's times stand as measured\n", err.text);
        return;
    }
    s->job.probed = s->job.probe.ops > 0;
    if (s->job.probed)
        s->setup.costs->speed = s->job.probe.scale;
    if (!s->o.quiet && s->job.probed)
        printf("the machine now: ops take x%.3f their profiled time (%d ops%s, %.2f s)\n",
               s->job.probe.scale, s->job.probe.ops,
               s->job.probe.reference ? ", a bundled model's" : " of the model", s->job.probe.seconds);
}

/* How much of the model the profile measured, and what it extrapolates. */
static void note_measured_ops(job_state *s)
{
    const pl_graph *g = s->setup.graph;
    int threads = s->setup.cluster->devices[0].threads;
    s->job.ops_measured = pl_cost_measured_ops(s->setup.costs, g, threads);
    if (!s->o.quiet && s->job.ops_measured < g->n_ops)
        printf("the profile measured %d of the model's %d training ops; the other %d are "
               "extrapolated from their kinds' fits (`placer calibrate %s` measures them)\n",
               s->job.ops_measured, g->n_ops, g->n_ops - s->job.ops_measured,
               pl_cli_input_name(s->o.model));
}

/* One line on stderr when other work disturbed the measurements (cli.h), with how much
 * slower than simulated the chosen plan's steps were. */
static void warn_load(const job_state *s)
{
    const pl_search *search = s->search;
    if (!search || search->chosen < 0)
        return;
    const pl_search_row *chosen = &search->rows[search->chosen];
    double slowdown = chosen->measured > 0 && chosen->sim.step_seconds > 0
                          ? chosen->measured / chosen->sim.step_seconds
                          : 0;
    pl_machine_load judged = pl_search_judged_load(search);
    pl_cli_warn_load(&judged, s->setup.cluster, "the plans were measured",
                     slowdown > 1 ? slowdown : 0,
                     search->choice_unstable ? "the choice rests on an unstable measurement"
                                             : NULL);
}

static int run_job(job_state *s)
{
    int status = pl_cli_check_processes(s->setup.cluster);
    if (status != PL_EXIT_OK)
        return status;
    if (!pl_cli_leader()) { /* rank 0 searches; this rank measures what it is told */
        s->setup.needs = PL_CLI_TRAINING | PL_CLI_COSTS; /* rank 0's, shared */
        if ((status = pl_cli_setup_load(&s->setup)) != PL_EXIT_OK)
            return status;
        return pl_cli_follow(s->setup.graph, s->setup.cluster);
    }
    s->setup.needs = PL_CLI_TRAINING | PL_CLI_COSTS;
    if ((status = pl_cli_setup_load(&s->setup)) != PL_EXIT_OK)
        return status;
    if (s->setup.cluster->simulated) { /* nothing to measure it on: the simulator alone */
        char simulated[PL_ERROR_TEXT_MAX];
        s->o.search.simulate_only = true;
        if (!s->o.quiet)
            printf("%s\n", pl_cli_simulated_text(s->setup.cluster, s->setup.costs, simulated,
                                                  sizeof simulated));
    }
    s->job.ops_measured = -1;
    if (!s->setup.cluster->simulated) {
        probe_machine(s);
        note_measured_ops(s);
    }
    s->job.graph = s->setup.graph;
    s->job.cluster = s->setup.cluster;
    s->job.calibrated = s->setup.calibrated;
    s->job.costs = s->setup.costs;
    s->job.op_times_path = s->o.op_times;
    if ((status = search(s)) == PL_EXIT_OK)
        status = write_outputs(s);
    warn_load(s);
    /* an output not written (the model's drawing, the checkpoint) fails the job, after
       the plan and the report are written */
    if (status == PL_EXIT_OK && (s->graph_dot_status != PL_EXIT_OK ||
                                 (s->search && s->search->checkpoint_failure[0])))
        status = PL_EXIT_FAILURE;
    if (status == PL_EXIT_OK && (pl_cli_interrupted || s->search->interrupted))
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
    /* a model piped in has no file name to make PREFIX of */
    if (status == PL_EXIT_OK && !s.o.prefix && strcmp(s.o.model, "-") == 0)
        status = pl_cli_usage_error("a model from standard input ('-') needs -o PREFIX");
    if (status == PL_EXIT_OK) {
        s.prefix = s.o.prefix ? strdup(s.o.prefix) : default_prefix(s.o.model);
        status = s.prefix ? check_outputs(&s.o, s.prefix) : PL_EXIT_FAILURE;
    }
    /* an interrupt is answered within INTERRUPT_GRACE seconds from here on, loading
       included: an orderly stop writes the best plan so far, or the process ends then.
       Not under mpirun: there the ranks decide together to stop (executor.h), and a rank
       that ended alone would end the leader before it writes the plan. */
    pl_cli_catch_interrupt(true);
    pl_cli_interrupt_grace(pl_cli_comm() ? 0 : INTERRUPT_GRACE);
    /* the cluster read and checked before anything is written */
    s.setup = (pl_cli_setup){.model_path = s.o.model, .cluster_path = s.o.cluster,
                             .op_times_path = s.o.op_times, .needs = PL_CLI_CLUSTER,
                             .quiet = s.o.quiet};
    if (status != PL_EXIT_OK || (status = pl_cli_setup_load(&s.setup)) != PL_EXIT_OK ||
        (status = read_policy(&s)) != PL_EXIT_OK) {
        pl_cli_interrupt_grace(0);
        pl_cli_catch_interrupt(false);
        pl_policy_weights_clear(&s.policy);
        pl_cli_setup_release(&s.setup);
        free(command);
        free(s.prefix);
        return status < 0 ? PL_EXIT_OK : status;
    }
    if (!s.o.quiet)
        pl_cli_print_summary(stdout, pl_cli_input_name(s.o.model), s.setup.graph);
    if (!s.prefix || !command) {
        fprintf(stderr, "placer: out of memory\n");
        status = PL_EXIT_FAILURE;
    } else if (!pl_cli_leader() || (status = draw_graph(&s)) == PL_EXIT_OK) {
        s.job.model_path = s.o.model;
        s.job.command = command;
        s.job.budget = s.o.search.budget;
        s.job.seed = s.o.search.seed;
        s.job.zero_shot = s.o.search.zero_shot;
        s.job.no_sweep = s.o.search.no_sweep;
        s.job.no_refine = s.o.search.no_refine;
        status = run_job(&s);
    }
    pl_cli_interrupt_grace(0);
    pl_cli_catch_interrupt(false);
    pl_search_free(s.search);
    pl_policy_weights_clear(&s.policy);
    pl_cli_setup_release(&s.setup);
    free(s.graph_dot);
    free(command);
    free(s.prefix);
    return status;
}
