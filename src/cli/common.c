/* What every subcommand shares: error reporting, exit statuses, a command's set-up (the
 * model, its training graph, cluster, plan, profile and executor). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "autodiff.h"
#include "bound.h"
#include "cli.h"
#include "cluster.h"
#include "dot.h"
#include "json_reader.h"
#include "load.h"
#include "profile.h"
#include "simulate.h"
#include "weights.h"

static void print_message(const char *fmt, va_list ap)
{
    char text[2048], escaped[sizeof text * 2];
    vsnprintf(text, sizeof text, fmt, ap);
    pl_text_escape(text, escaped, sizeof escaped);
    if (pl_cli_leader())
        fprintf(stderr, "placer: %s\n", escaped);
}

void pl_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_message(fmt, ap);
    va_end(ap);
}

/* The subcommand running, whose --help a usage error points at; NULL: the main job or
 * none. Set once by main() before the command runs, read only after: no thread races. */
static const char *usage_command;

void pl_cli_set_command(const char *name)
{
    usage_command = name;
}

int pl_cli_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    print_message(fmt, ap);
    if (!pl_cli_leader())
        ;
    else if (usage_command)
        fprintf(stderr, "Try 'placer %s --help'.\n", usage_command);
    else
        fputs("Try 'placer --help'.\n", stderr);
    va_end(ap);
    return PL_EXIT_USAGE;
}

int pl_cli_report(const pl_error *err)
{
    char line[PL_ERROR_SOURCE_MAX + PL_ERROR_PATH_MAX + PL_ERROR_TEXT_MAX + 16];
    pl_error_format(err, line, sizeof line);
    if (pl_cli_leader())
        fprintf(stderr, "%s\n", line);
    else if (err->status != PL_EINPUT && err->status != PL_EINTERRUPTED)
        fprintf(stderr, "rank %d: %s\n", pl_comm_rank(pl_cli_comm()), line);
    pl_cli_end_on_comm_failure();
    return err->status == PL_EINPUT         ? PL_EXIT_USAGE
           : err->status == PL_EINTERRUPTED ? PL_EXIT_INTERRUPTED
           : err->status == PL_ENOFIT       ? PL_EXIT_NO_FIT
                                            : PL_EXIT_FAILURE;
}

const char *pl_cli_input_name(const char *path)
{
    return path && strcmp(path, "-") == 0 ? PL_JSON_STDIN_NAME : path;
}

char *pl_cli_path(const char *prefix, const char *suffix)
{
    size_t len = strlen(prefix) + strlen(suffix) + 1;
    char *path = malloc(len);
    if (path)
        snprintf(path, len, "%s%s", prefix, suffix);
    return path;
}

bool pl_cli_parse_long(const char *text, long min, long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || errno || v < min || v > max)
        return false;
    *out = v;
    return true;
}

static int load_cluster(const char *path, pl_cluster **cluster)
{
    pl_error err;
    pl_error_init(&err, path);
    *cluster = path ? pl_cluster_load_file(path, &err) : pl_cluster_local(&err);
    return *cluster ? PL_EXIT_OK : pl_cli_report(&err);
}

void pl_cli_warn_plan_model(const char *path, const pl_plan *plan, const pl_graph *graph)
{
    if (!plan->file_model_hash || plan->file_model_hash == graph->hash)
        return;
    char text[1024], escaped[sizeof text * 2];
    snprintf(text, sizeof text, "%s was made for model \"%s\" (%016" PRIx64 "), not this "
             "model \"%s\" (%016" PRIx64 "); its ops match by name", pl_cli_input_name(path),
             plan->file_model, plan->file_model_hash, graph->name, graph->hash);
    pl_text_escape(text, escaped, sizeof escaped);
    fprintf(stderr, "placer: warning: %s\n", escaped);
}

static int load_plan(const char *path, const pl_graph *graph, const pl_cluster *cluster,
                     pl_plan **plan)
{
    pl_error err;
    pl_error_init(&err, path);
    *plan = path ? pl_plan_load_file(path, graph, cluster, &err) : pl_plan_new(graph, &err);
    if (*plan && path)
        pl_cli_warn_plan_model(path, *plan, graph);
    return *plan ? PL_EXIT_OK : pl_cli_report(&err);
}

int pl_cli_load_placement(const char *cluster_path, const char *plan_path,
                          const pl_graph *graph, pl_cluster **cluster, pl_plan **plan)
{
    *plan = NULL;
    int status = load_cluster(cluster_path, cluster);
    if (status == PL_EXIT_OK)
        status = load_plan(plan_path, graph, *cluster, plan);
    if (status != PL_EXIT_OK) {
        pl_cluster_free(*cluster);
        *cluster = NULL;
    }
    return status;
}

const char *pl_cli_spread_text(const pl_series *series, char *text, size_t size)
{
    double half = 50 * series->iqr_spread; /* per cent */
    snprintf(text, size, half < 9.95 ? "±%.1f%%" : "±%.0f%%", half);
    return text;
}

const char *pl_cli_instability_text(const pl_series *s, char *text, size_t size)
{
    int used = 0;
    text[0] = '\0';
    if (s->bimodal)
        used = snprintf(text, size, "bimodal: %d step%s near %.3f ms, %d near %.3f ms",
                        s->low_steps, s->low_steps == 1 ? "" : "s", 1e3 * s->low_mode,
                        s->steps - s->low_steps, 1e3 * s->high_mode);
    if (s->drifting && used >= 0 && (size_t)used < size)
        snprintf(text + used, size - (size_t)used, "%sdrifting: the last third of the steps "
                 "%.0f%% %s than the first (rank correlation %+.2f)", used ? "; " : "",
                 100 * fabs(s->drift), s->drift > 0 ? "slower" : "faster", s->correlation);
    return text;
}

void pl_cli_print_stability(FILE *out, const pl_measurement *m)
{
    char medians[256] = "", why[512];
    for (int r = 0, used = 0; r < m->rounds && used >= 0 && (size_t)used < sizeof medians;
         r++)
        used += snprintf(medians + used, sizeof medians - (size_t)used, "%s%.3f",
                         r ? ", " : "", 1e3 * m->round_median[r]);
    if (!m->series.unstable && m->rounds == 1)
        fprintf(out, "measurement: steady (one round of %d steps: no two modes%s)\n",
                m->steps, m->steps >= PL_SERIES_DRIFT_MIN_STEPS ? ", no drift" : "");
    else if (!m->series.unstable)
        fprintf(out, "measurement: steady in round %d; the round%s before %s unstable and "
                "measured again (round medians %s ms)\n", m->round, m->round > 2 ? "s" : "",
                m->round > 2 ? "were" : "was", medians);
    else
        fprintf(out, "measurement: UNSTABLE in all %d rounds (round medians %s ms); the "
                "figures above are round %d's, the one with the smallest interquartile "
                "spread\nunstable: %s: the machine was busy? Measure again on a quiet "
                "machine\n", m->rounds, medians, m->round,
                pl_cli_instability_text(&m->series, why, sizeof why));
}

void pl_cli_warn_load(const pl_machine_load *load, const pl_cluster *c, const char *what,
                      double slowdown, const char *note)
{
    char line[1024];
    if (pl_cli_leader() && !pl_cli_comm() && !c->paced && !c->simulated &&
        pl_machine_load_warning(load, what, slowdown, note, line, sizeof line))
        fprintf(stderr, "placer: warning: %s\n", line);
}

pl_machine_load pl_cli_load_before(const pl_machine_cpu *started)
{
    return pl_cli_comm() ? (pl_machine_load){0}
                         : pl_machine_load_since(started, PL_CLI_LOAD_BEFORE_SECONDS);
}

pl_machine_load pl_cli_measured_load(const pl_measurement *m, const pl_machine_load *before,
                                     bool *with_before)
{
    pl_machine_load during = {0};
    for (int round = 0; round < m->rounds && before->known; round++)
        pl_machine_load_add(&during, &m->round_load[round]);
    pl_machine_load judged = pl_machine_load_judged(&during, before);
    *with_before = judged.seconds > during.seconds;
    return judged;
}

void pl_cli_print_load(const pl_machine_load *judged, bool with_before, const char *what)
{
    char text[256];
    if (judged->known)
        fprintf(pl_cli_text, "machine: %s while %s%s\n",
                pl_cli_load_text(judged, text, sizeof text), what,
                with_before ? " and just before" : "");
    else if (!pl_cli_comm())
        fprintf(pl_cli_text, "machine: %s\n", pl_cli_load_text(judged, text, sizeof text));
}

const char *pl_cli_load_text(const pl_machine_load *load, char *text, size_t size)
{
    double steal = pl_machine_load_steal_share(load);
    char stolen[48] = "";
    if (steal >= 0.01)
        snprintf(stolen, sizeof stolen, ", %.0f%% of it the host's steal", 100 * steal);
    if (!load->known)
        snprintf(text, size, "how busy the machine was is unknown (no /proc/stat)");
    else
        snprintf(text, size, "other work took %.0f%% of the CPU%s (%.2f s measured)",
                 100 * pl_machine_load_share(load), stolen, load->seconds);
    return text;
}

void pl_cli_print_spread_note(FILE *out, bool any_unstable)
{
    fprintf(out, "±: half the interquartile range of the measured steps, over their "
            "median\n");
    if (any_unstable)
        fprintf(out, "!: unstable: the steps ran at two speeds (bimodal) or drifted, in "
                "every round measured: the machine was busy? Do not trust that figure; "
                "measure again on a quiet machine\n");
}

void pl_cli_describe_plan(const pl_plan *plan, const pl_cluster *c, const pl_program *p)
{
    int devices = 0, copies = 0;
    int64_t bytes = 0;
    for (int d = 0; d < c->n_devices; d++)
        devices += pl_program_ops_on(p, d) > 0;
    char replicas[64], split[96];
    pl_plan_replicas_text(plan, replicas, sizeof replicas);
    pl_plan_split_text(plan, split, sizeof split);
    for (int i = 0; i < p->n_tasks; i++)
        if (p->tasks[i].kind == PL_TASK_COPY) {
            copies++;
            bytes += pl_task_bytes(p, &p->tasks[i]);
        }
    char size[32];
    fprintf(pl_cli_text,
            "plan: %d device%s, %s%s%d stage%s, %d micro-batch%s, %s; %d tasks, %d copies (%s) "
            "per step\n", devices, devices == 1 ? "" : "s", replicas, split, plan->n_stages,
            plan->n_stages == 1 ? "" : "s", plan->micro_batches,
            plan->micro_batches == 1 ? "" : "es", pl_plan_schedule_text(plan), p->n_tasks,
            copies, pl_units_bytes((double)bytes, size, sizeof size));
}

int pl_cli_refuse_simulated(const char *command, const pl_cluster *c)
{
    const char *kind = "";
    for (int d = 0; d < c->n_devices && !kind[0]; d++)
        if (c->devices[d].hardware)
            kind = c->devices[d].hardware->kind;
    pl_cli_error("%s%sthis machine cannot run cluster \"%s\" (%s is hardware described from "
                 "its datasheet): plan it on the simulator with 'placer MODEL.json --cluster "
                 "FILE', or predict a plan's step with 'placer simulate'", command ? command : "",
                 command ? ": " : "", c->name, kind);
    return PL_EXIT_USAGE;
}

const char *pl_cli_simulated_text(const pl_cluster *c, const pl_cost_model *m, char *buf,
                                  size_t cap)
{
    char measured[PL_MAX_NAME * 4 + 128] = "";
    if (m && m->op_times)
        snprintf(measured, sizeof measured,
                 "the op times measured on %s for %d of the "
                 "model's ops and ",
                 m->op_times->device, m->op_times->n_forward_ops + m->op_times->n_backward_ops);
    else if (m && m->n_measured > 0)
        snprintf(measured, sizeof measured, "measured times of %d op signatures and ",
                 m->n_measured);
    snprintf(buf, cap,
             "simulated: this machine cannot run cluster \"%s\"; every step is the "
             "simulator's, from %sthe roofline of the datasheet figures%s, whose error is "
             "unknown (not calibrated against this hardware)",
             c->name, measured, measured[0] ? " for the rest" : "");
    return buf;
}

int pl_cli_new_executor(const pl_graph *g, const pl_cluster *c, const char *data_path,
                        pl_executor **ex)
{
    *ex = NULL;
    if (c->simulated)
        return pl_cli_refuse_simulated(NULL, c);
    pl_error err;
    pl_error_init(&err, NULL); /* the data's errors name their source, the others the model */
    *ex = pl_executor_new_with_data(g, c, data_path, &err);
    return *ex ? PL_EXIT_OK : pl_cli_report(&err);
}

int pl_cli_weights(const char *path, bool save, const pl_graph *g, pl_session *session,
                   pl_executor *executor)
{
    pl_error err;
    pl_error_init(&err, path);
    void **buffers = calloc((size_t)g->n_tensors + 1, sizeof *buffers);
    if (!buffers)
        return pl_cli_error("out of memory"), PL_EXIT_FAILURE;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].kind != PL_TENSOR_ACTIVATION)
            buffers[t] = session ? pl_session_data(session, t) : pl_executor_data(executor, t);
    pl_status status = save ? pl_weights_save(path, g, buffers, &err)
                            : pl_weights_load(path, g, buffers, &err);
    free(buffers);
    return status == PL_OK ? PL_EXIT_OK : pl_cli_report(&err);
}

pl_graph *pl_cli_load_model(const char *path, int *status)
{
    pl_error err;
    pl_graph *graph = pl_graph_load_file(path, &err);
    *status = graph ? PL_EXIT_OK : pl_cli_report(&err);
    return graph;
}

/* ---- what a command reads and writes ---------------------------------------------------- */

/* The one file of both, or false; a path that cannot be stat'ed is no file of the other. */
static bool same_file(const char *input, const char *output)
{
    struct stat a, b;
    return strcmp(output, "-") != 0 && strcmp(input, "-") != 0 && stat(input, &a) == 0 && stat(output, &b) == 0 &&
           a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The profile's role, known by its address: its folder is made when missing
 * (profile.h), so it is the one output whose folder need not exist. */
static const char profile_role[] = "the calibration profile";

/* The folder a path's file is written in ("." for a bare name); free(). */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    size_t len = slash == path ? 1 : (size_t)(slash - path);
    char *folder = malloc(len + 1);
    if (folder) {
        memcpy(folder, path, len);
        folder[len] = '\0';
    }
    return folder;
}

/* Whether two outputs would write the same file: the same regular file, or the same name
 * in the same folder when it does not exist yet. Standard output and devices (two
 * outputs to /dev/null) may be shared. */
static bool same_target(const char *a, const char *b)
{
    struct stat sa, sb;
    if (!strcmp(a, "-") || !strcmp(b, "-"))
        return false;
    bool has_a = stat(a, &sa) == 0, has_b = stat(b, &sb) == 0;
    if (has_a || has_b)
        return has_a && has_b && S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev &&
               sa.st_ino == sb.st_ino;
    const char *name_a = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
    const char *name_b = strrchr(b, '/') ? strrchr(b, '/') + 1 : b;
    char *folder_a = folder_of(a), *folder_b = folder_of(b);
    bool same = folder_a && folder_b && !strcmp(name_a, name_b) && stat(folder_a, &sa) == 0 &&
                stat(folder_b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(folder_a);
    free(folder_b);
    return same;
}

/* Whether the output can be written (atomic_file.h: a regular file is replaced from a
 * temporary file beside it, links followed; a device or FIFO is written in place): 0, or
 * the errno that says why not, `*where` the path it concerns (free()). */
static int why_unwritable(const char *path, char **where)
{
    struct stat st;
    char *file = realpath(path, NULL); /* links followed, when it exists */
    int why = 0;
    *where = NULL;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        why = EISDIR;
    else if (file && !S_ISREG(st.st_mode))
        why = access(file, W_OK) == 0 ? 0 : errno;
    else if (!file && errno != ENOENT)
        why = errno;
    if (why) {
        *where = file ? file : strdup(path);
        return why;
    }
    char *folder = folder_of(file ? file : path);
    free(file);
    if (!folder)
        return ENOMEM;
    if (stat(folder, &st) != 0)
        why = errno;
    else if (!S_ISDIR(st.st_mode))
        why = ENOTDIR;
    else if (access(folder, W_OK | X_OK) != 0)
        why = errno;
    if (why)
        *where = folder;
    else
        free(folder);
    return why;
}

/* Every output's folder exists and can be written in, before any work (one line, exit
 * status 2 otherwise): an hour of training is not lost to a typo in --checkpoint. */
static int check_writable(const pl_cli_file *outputs, size_t n_outputs)
{
    for (size_t o = 0; o < n_outputs; o++) {
        const char *path = outputs[o].path;
        char *where;
        if (!path || strcmp(path, "-") == 0 || outputs[o].role == profile_role)
            continue;
        int why = why_unwritable(path, &where);
        if (!why)
            continue;
        if (where && strcmp(where, path) != 0)
            fprintf(stderr, "placer: cannot write %s '%s': %s: %s\n", outputs[o].role, path,
                    where, strerror(why));
        else
            fprintf(stderr, "placer: cannot write %s '%s': %s\n", outputs[o].role, path,
                    strerror(why));
        free(where);
        return PL_EXIT_USAGE;
    }
    return PL_EXIT_OK;
}

int pl_cli_check_inputs(const pl_cli_file *inputs, size_t n_inputs)
{
    const pl_cli_file *first = NULL;
    for (size_t i = 0; i < n_inputs; i++) {
        if (!inputs[i].path || strcmp(inputs[i].path, "-") != 0)
            continue;
        if (pl_cli_comm()) {
            pl_cli_error("standard input ('-') as %s: under mpirun it reaches rank 0 only, "
                         "and every rank reads its inputs; give a file", inputs[i].role);
            return PL_EXIT_USAGE;
        }
        if (first) {
            if (strcmp(first->role, inputs[i].role) == 0)
                pl_cli_error("standard input ('-') is given twice as %s: it can be read once",
                             first->role);
            else
                pl_cli_error("standard input ('-') is given as both %s and %s: it can be "
                             "read once", first->role, inputs[i].role);
            return PL_EXIT_USAGE;
        }
        first = &inputs[i];
    }
    return PL_EXIT_OK;
}

FILE *pl_cli_text;

/* At most one output on standard output, a binary one only to a file or a pipe; the
 * command's text moves out of its way. */
static int claim_stdout(const pl_cli_file *outputs, size_t n_outputs)
{
    const pl_cli_file *claimed = NULL;
    for (size_t o = 0; o < n_outputs; o++) {
        if (!outputs[o].path || strcmp(outputs[o].path, "-") != 0)
            continue;
        if (claimed) {
            pl_cli_error("%s and %s are both '-': standard output can carry one of them",
                         claimed->role, outputs[o].role);
            return PL_EXIT_USAGE;
        }
        claimed = &outputs[o];
        if (claimed->binary && pl_cli_comm()) {
            pl_cli_error("%s to standard output ('-'): under mpirun every rank's standard "
                         "output is merged; give a file",
                         claimed->role);
            return PL_EXIT_USAGE;
        }
        if (claimed->binary && isatty(STDOUT_FILENO)) {
            pl_cli_error("standard output ('-') is a terminal, where %s would be written as "
                         "binary data: redirect it to a file or a pipe, or give a file",
                         claimed->role);
            return PL_EXIT_USAGE;
        }
    }
    pl_cli_text = claimed ? stderr : stdout;
    return PL_EXIT_OK;
}

int pl_cli_check_outputs(const pl_cli_file *inputs, size_t n_inputs,
                         const pl_cli_file *outputs, size_t n_outputs)
{
    int status = pl_cli_check_inputs(inputs, n_inputs);
    if (status != PL_EXIT_OK)
        return status;
    for (size_t o = 0; o < n_outputs; o++)
        for (size_t i = 0; i < n_inputs && outputs[o].path; i++) {
            const char *in = inputs[i].path, *out = outputs[o].path;
            if (!in || !same_file(in, out))
                continue;
            pl_cli_error("%s '%s' is %s being read%s%s%s", outputs[o].role, out,
                         inputs[i].role, strcmp(in, out) ? " ('" : "", strcmp(in, out) ? in : "",
                         strcmp(in, out) ? "')" : "");
            return PL_EXIT_USAGE;
        }
    for (size_t o = 0; o < n_outputs; o++)
        for (size_t p = o + 1; p < n_outputs && outputs[o].path; p++)
            if (outputs[p].path && same_target(outputs[o].path, outputs[p].path)) {
                pl_cli_error("%s '%s' and %s '%s' are the same file: one would replace the "
                             "other", outputs[o].role, outputs[o].path, outputs[p].role,
                             outputs[p].path);
                return PL_EXIT_USAGE;
            }
    status = check_writable(outputs, n_outputs);
    return status == PL_EXIT_OK ? claim_stdout(outputs, n_outputs) : status;
}

pl_cli_file pl_cli_profile_output(char *buf, size_t cap)
{
    return (pl_cli_file){pl_profile_path(buf, cap) ? buf : NULL, profile_role, false};
}

/* ---- a command's set-up: one step per need ----------------------------------------------- */

static int build_training_graph(pl_cli_setup *s)
{
    pl_error err;
    pl_error_init(&err, pl_cli_input_name(s->model_path));
    return pl_autodiff_build(s->graph, &err) == PL_OK ? PL_EXIT_OK : pl_cli_report(&err);
}

static int take_cluster(pl_cli_setup *s)
{
    return load_cluster(s->cluster_path, &s->cluster);
}

static int take_plan(pl_cli_setup *s)
{
    return load_plan(s->plan_path, s->graph, s->cluster, &s->plan);
}

/* The op times of op_times_path, read on every rank after the profile is shared (the
 * profile only borrows them), split among ops as the first device's threads time them. */
static int take_op_times(pl_cli_setup *s)
{
    pl_error err;
    s->op_times = pl_op_times_read(s->op_times_path, s->graph, s->costs,
                                   s->cluster->devices[0].threads, &err);
    if (!s->op_times)
        return pl_cli_report(&err);
    s->costs->op_times = s->op_times;
    const pl_op_times *t = s->op_times;
    if (strcmp(t->model, s->graph->name) == 0 &&
        (!t->has_model_hash || t->model_hash == s->graph->hash))
        return PL_EXIT_OK;
    char text[1024], escaped[sizeof text * 2];
    snprintf(text, sizeof text, "%s was made for model \"%s\"%s, not this model \"%s\" "
             "(%016" PRIx64 "); its ops match by name", pl_cli_input_name(s->op_times_path),
             t->model, t->has_model_hash ? " of another hash" : "", s->graph->name,
             s->graph->hash);
    pl_text_escape(text, escaped, sizeof escaped);
    fprintf(stderr, "placer: warning: %s\n", escaped);
    return PL_EXIT_OK;
}

static int take_costs(pl_cli_setup *s)
{
    pl_error err;
    pl_error_init(&err, s->profile_source ? s->profile_source
                                         : pl_cli_input_name(s->model_path));
    bool verbose = !s->quiet;
    if (!(s->costs = calloc(1, sizeof *s->costs)))
        return PL_EXIT_FAILURE;
    /* hardware placer cannot run takes its costs from its datasheet (the roofline), not
       from this machine's profile: no calibration */
    if (s->cluster->simulated)
        return s->op_times_path ? take_op_times(s) : PL_EXIT_OK;
    int status = PL_EXIT_OK;
    /* under mpirun rank 0 loads it (and calibrates, alone) and every rank gets its copy,
       so that what the ranks decide from it is the same */
    if (pl_cli_leader() &&
        pl_profile_load(s->costs, s->cluster, false, pl_cli_calibration_progress, &verbose,
                        &pl_cli_interrupted, &s->calibrated, &err) != PL_OK) {
        if (s->calibrated) /* measured, not cached: this command has what it needs */
            fprintf(stderr, "placer: warning: the calibration profile is not kept (%s); "
                    "the next command calibrates again: set PLACER_PROFILE to a file placer "
                    "can write\n", err.text);
        else
            status = pl_cli_report(&err);
    }
    if ((status = pl_cli_share_costs(s->costs, status)) == PL_EXIT_OK &&
        (status = pl_cli_measure_processes(s->costs, false)) == PL_EXIT_OK)
        pl_cli_warn_profile(s->costs);
    return status == PL_EXIT_OK && s->op_times_path ? take_op_times(s) : status;
}

static int take_bound(pl_cli_setup *s)
{
    pl_error err;
    pl_error_init(&err, s->profile_source ? s->profile_source
                                         : pl_cli_input_name(s->model_path));
    if (pl_step_lower_bound(s->graph, s->cluster, s->costs, &s->bound, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}

static int take_executor(pl_cli_setup *s)
{
    int status = pl_cli_new_executor(s->graph, s->cluster, s->data_path, &s->executor);
    return status == PL_EXIT_OK ? pl_cli_join_processes(s->executor, s->cluster) : status;
}

/* In the order of the contract (cli.h). */
static const struct {
    int need;
    int (*take)(pl_cli_setup *s);
} setup_steps[] = {
    {PL_CLI_TRAINING, build_training_graph},
    {PL_CLI_CLUSTER, take_cluster},
    {PL_CLI_PLAN, take_plan},
    {PL_CLI_COSTS, take_costs},
    {PL_CLI_BOUND, take_bound},
    {PL_CLI_EXECUTOR, take_executor},
};

int pl_cli_setup_load(pl_cli_setup *s)
{
    int status = PL_EXIT_OK;
    if (!s->graph && !(s->graph = pl_cli_load_model(s->model_path, &status)))
        return status;
    int needs = s->needs;
    if (needs & PL_CLI_BOUND)
        needs |= PL_CLI_COSTS;
    if ((needs & PL_CLI_COSTS) && s->op_times_path) /* they time the training graph */
        needs |= PL_CLI_TRAINING;
    if (needs & (PL_CLI_PLAN | PL_CLI_COSTS | PL_CLI_EXECUTOR))
        needs |= PL_CLI_CLUSTER;
    size_t n_steps = sizeof setup_steps / sizeof *setup_steps;
    for (size_t i = 0; i < n_steps && status == PL_EXIT_OK; i++)
        if ((needs & setup_steps[i].need) && !(s->ready & setup_steps[i].need) &&
            (status = setup_steps[i].take(s)) == PL_EXIT_OK)
            s->ready |= setup_steps[i].need;
    return status;
}

void pl_cli_setup_release(pl_cli_setup *s)
{
    pl_executor_free(s->executor);
    if (s->costs)
        pl_cost_model_clear(s->costs);
    free(s->costs);
    pl_op_times_free(s->op_times);
    pl_plan_free(s->plan);
    pl_cluster_free(s->cluster);
    pl_graph_free(s->graph);
    *s = (pl_cli_setup){0};
}

/* Writes a drawing to `path` by the output rules (atomic_file.h; "-": standard output);
 * reports errors. */
static int write_drawing(const char *path, pl_status (*draw)(const void *what, FILE *out,
                                                             pl_error *err),
                         const void *what)
{
    pl_error err;
    pl_error_init(&err, path);
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, &err) != PL_OK)
        return pl_cli_report(&err);
    if (draw(what, file.fp, &err) != PL_OK) {
        pl_atomic_abort(&file);
        return pl_cli_report(&err);
    }
    if (pl_atomic_commit(&file, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}

typedef struct graph_drawing {
    const pl_graph *graph;
    int max_boxes;
} graph_drawing;

static pl_status draw_graph(const void *what, FILE *out, pl_error *err)
{
    const graph_drawing *p = what;
    return pl_dot_write_graph(p->graph, p->max_boxes, out, err);
}

int pl_cli_write_dot(const pl_graph *graph, int max_boxes, const char *path)
{
    graph_drawing p = {graph, max_boxes};
    return write_drawing(path, draw_graph, &p);
}

typedef struct plan_drawing {
    const pl_graph *graph;
    const pl_plan *plan;
    const pl_cluster *cluster;
    const double *op_seconds;
    bool all_ops;
    int max_boxes;
} plan_drawing;

static pl_status draw_plan(const void *what, FILE *out, pl_error *err)
{
    const plan_drawing *p = what;
    return pl_dot_write_plan(p->graph, p->plan, p->cluster, p->op_seconds, p->all_ops,
                             p->max_boxes, out, err);
}

int pl_cli_write_plan_dot(const pl_graph *graph, const pl_plan *plan,
                          const pl_cluster *cluster, const double *op_seconds, bool all_ops,
                          int max_boxes, const char *path)
{
    plan_drawing p = {graph, plan, cluster, op_seconds, all_ops, max_boxes};
    return write_drawing(path, draw_plan, &p);
}

double *pl_cli_op_seconds(const pl_graph *graph, const pl_cluster *cluster,
                          const pl_cost_model *model, const pl_plan *plan)
{
    pl_program *program = pl_program_new(graph, cluster, plan, NULL);
    double *starts = NULL, *ends = NULL, *op_seconds = NULL;
    pl_simulation sim;
    if (program) {
        starts = malloc(((size_t)program->n_tasks + 1) * sizeof *starts);
        ends = malloc(((size_t)program->n_tasks + 1) * sizeof *ends);
        op_seconds = calloc((size_t)program->graph->n_ops, sizeof *op_seconds);
    }
    if (starts && ends && op_seconds &&
        pl_simulate(program, cluster, model, &sim, starts, ends, NULL) == PL_OK) {
        for (int i = 0; i < program->n_tasks; i++)
            if (program->tasks[i].kind == PL_TASK_OP)
                op_seconds[program->tasks[i].op] += ends[i] - starts[i];
    } else {
        free(op_seconds);
        op_seconds = NULL;
    }
    free(starts);
    free(ends);
    pl_program_free(program);
    return op_seconds;
}

double *pl_cli_cached_op_seconds(const pl_graph *graph, const pl_cluster *cluster,
                                 const pl_plan *plan)
{
    pl_cost_model *model = malloc(sizeof *model);
    if (!model || !pl_profile_read_cached(model, cluster)) {
        free(model);
        return NULL;
    }
    pl_cli_warn_profile(model);
    double *op_seconds = pl_cli_op_seconds(graph, cluster, model, plan);
    pl_cost_model_clear(model);
    free(model);
    return op_seconds;
}

volatile sig_atomic_t pl_cli_interrupted;
static volatile sig_atomic_t grace_seconds; /* 0: no deadline after an interrupt */

/* The grace after an interrupt is over: the temporary file of a write under way goes
 * (atomic_file.h), the outputs written stay as they are, and the process ends now. */
static void on_grace_over(int signal_number)
{
    (void)signal_number;
    pl_atomic_remove_pending();
    _exit(PL_EXIT_INTERRUPTED);
}

static void on_interrupt(int signal_number)
{
    (void)signal_number;
    if (grace_seconds > 0 && !pl_cli_interrupted)
        alarm((unsigned)grace_seconds); /* async-signal-safe, as _exit and unlink are */
    pl_cli_interrupted = 1;
}

void pl_cli_interrupt_grace(int seconds)
{
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = seconds > 0 ? on_grace_over : SIG_DFL;
    sigemptyset(&action.sa_mask);
    if (seconds <= 0)
        alarm(0);
    sigaction(SIGALRM, &action, NULL);
    grace_seconds = seconds > 0 ? seconds : 0;
}

/* SIGINT (Ctrl-C), SIGTERM (kill, a job scheduler's stop) and SIGHUP (the terminal gone)
 * all mean "stop and keep what you have". SIGHUP ignored when the command starts (nohup)
 * stays ignored; SIGINT is caught even so, since a shell without job control starts a
 * background command with it ignored, and `kill -INT` is still meant. SA_RESTART: a blocking read resumes rather than failing with
 * EINTR; the flag is polled. (false) puts back what was there before, once the flag is
 * clear (cli.h). */
void pl_cli_catch_interrupt(bool catch)
{
    static const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    enum { N_SIGNALS = sizeof signals / sizeof *signals };
    static struct sigaction before[N_SIGNALS];
    static bool caught[N_SIGNALS];
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_interrupt;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < N_SIGNALS; i++)
        sigaddset(&action.sa_mask, signals[i]);
    if (!catch && (pl_cli_interrupted || pl_cli_comm())) /* kept to the end (cli.h) */
        return;
    pl_cli_interrupted = 0;
    for (int i = 0; i < N_SIGNALS; i++) {
        if (catch && !caught[i]) {
            if (sigaction(signals[i], NULL, &before[i]) == 0 &&
                (signals[i] != SIGHUP || before[i].sa_handler != SIG_IGN))
                caught[i] = sigaction(signals[i], &action, NULL) == 0;
        } else if (!catch && caught[i]) {
            sigaction(signals[i], &before[i], NULL);
            caught[i] = false;
        }
    }
}
