/* PREFIX.summary.json: the main job's result for programs (docs/outputs.md describes its
 * fields). Times are in seconds, sizes in bytes; a figure that does not exist (a plan not
 * measured) is null. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "job.h"

static json_t *seconds_or_null(double seconds)
{
    return seconds > 0 ? json_real(seconds) : json_null();
}

static const char *stop_name(pl_search_stop stop)
{
    switch (stop) {
    case PL_SEARCH_STOP_CONVERGED: return "converged";
    case PL_SEARCH_STOP_ITERATIONS: return "iterations";
    case PL_SEARCH_STOP_INTERRUPTED: return "interrupted";
    case PL_SEARCH_STOP_BUDGET: default: return "budget";
    }
}

/* Others' share of the CPU during a load (machine_load.h), or null when unknown. */
static json_t *share_or_null(const pl_machine_load *load)
{
    return load->known ? json_real(pl_machine_load_share(load)) : json_null();
}

/* How busy the machine was (search.h): before the first measurement, pooled over every
 * measurement, the worst one, and the share judged (pl_search_judged_load) against the
 * threshold; null when nothing was read (nothing measured, processes). */
static json_t *machine_load_json(const pl_search *s)
{
    if (!s->load_before.known && !s->load_measuring.known)
        return json_null();
    pl_machine_load judged = pl_search_judged_load(s);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:f, s:b}", "before_share",
                     share_or_null(&s->load_before), "measuring_share",
                     share_or_null(&s->load_measuring), "measuring_steal_share",
                     s->load_measuring.known
                         ? json_real(pl_machine_load_steal_share(&s->load_measuring))
                         : json_null(),
                     "measuring_seconds",
                     s->load_measuring.known ? json_real(s->load_measuring.seconds)
                                             : json_null(),
                     "worst_share", s->load_worst >= 0 ? json_real(s->load_worst) : json_null(),
                     "judged_share", share_or_null(&judged), "disturbed_above",
                     PL_MACHINE_LOAD_DISTURBED, "disturbed", pl_machine_load_disturbed(&judged));
}

/* A measured row's steps (measure.h), or null. */
static json_t *measurement_json(const pl_search_row *row)
{
    const pl_series *s = &row->series;
    if (!(row->measured > 0))
        return json_null();
    return json_pack("{s:i, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:b, s:b, s:o, s:o, s:b, "
                     "s:f, s:f, s:b, s:o}",
                     "steps", s->steps, "rounds", row->measure_rounds, "median_seconds",
                     s->median, "min_seconds", s->min, "max_seconds", s->max, "q1_seconds",
                     s->q1, "q3_seconds", s->q3, "iqr_spread", s->iqr_spread, "spread",
                     s->spread, "unstable", s->unstable, "bimodal", s->bimodal,
                     "low_mode_seconds", s->bimodal ? json_real(s->low_mode) : json_null(),
                     "high_mode_seconds", s->bimodal ? json_real(s->high_mode) : json_null(),
                     "drifting", s->drifting, "drift", s->drift, "rank_correlation",
                     s->correlation, "likely_disturbed", pl_search_row_disturbed(row),
                     "others_share", share_or_null(&row->load));
}

static json_t *row_json(const pl_search_row *row, const pl_cluster *c)
{
    json_t *memory = json_array();
    for (int d = 0; row->plan && d < c->n_devices; d++)
        json_array_append_new(memory, json_integer(row->sim.memory[d]));
    return json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:b, s:b, s:b, s:b, s:o}",
                     "name", row->name, "kind", row->baseline ? "baseline" : "agent",
                     "failure", row->plan ? json_null() : json_string(row->failure),
                     "simulated_seconds", row->plan ? json_real(row->sim.step_seconds)
                                                    : json_null(),
                     "measured_seconds", seconds_or_null(row->measured), "measurement",
                     measurement_json(row), "fits", row->fits,
                     "head_to_head", row->head_to_head, "reshaped", row->reshaped,
                     "refined", row->refined, "peak_memory_bytes", memory);
}

static json_t *chosen_json(const pl_search *s, const pl_cluster *c)
{
    const pl_search_row *row = &s->rows[s->chosen];
    json_t *devices = json_array();
    int split_ops = 0;
    for (int o = 0; o < row->plan->n_ops; o++)
        split_ops += row->plan->split[o] > 1;
    for (int d = 0; d < c->n_devices; d++) {
        int ops = pl_plan_ops_on(row->plan, 0, d);
        json_array_append_new(
            devices, json_pack("{s:s, s:i, s:f, s:o, s:I, s:I}", "name", c->devices[d].name,
                               "forward_ops", ops, "simulated_busy_seconds",
                               row->sim.busy_seconds[d], "measured_busy_seconds",
                               s->measured_busy_step > 0 ? json_real(s->measured_busy[d])
                                                         : json_null(),
                               "peak_memory_bytes", (json_int_t)row->sim.memory[d],
                               "capacity_bytes", (json_int_t)c->devices[d].memory_bytes));
    }
    double base = s->best_baseline >= 0 ? s->rows[s->best_baseline].measured : 0;
    return json_pack("{s:i, s:s, s:f, s:o, s:b, s:o, s:i, s:i, s:i, s:i, s:s, s:i, s:I, s:o, "
                     "s:o}",
                     "row", s->chosen, "name", row->name, "simulated_seconds",
                     row->sim.step_seconds, "measured_seconds", seconds_or_null(row->measured),
                     "choice_unstable", s->choice_unstable,
                     "over_best_baseline", row->measured > 0 && base > 0
                                               ? json_real(row->measured / base) : json_null(),
                     "replicas", row->plan->replicas, "split_ops", split_ops,
                     "stages", row->plan->n_stages, "micro_batches", row->plan->micro_batches,
                     "schedule", pl_plan_schedule_text(row->plan), "copies", row->sim.n_copies,
                     "copy_bytes", (json_int_t)row->sim.copy_bytes, "measured_busy_step_seconds",
                     seconds_or_null(s->measured_busy_step), "devices", devices);
}

/* The learning curve in brief: whether the policy learned at all, the weights it started
 * from (null: fresh ones), whether it was trained (false: --zero-shot), the seconds from
 * the agent's start to its last iteration's end (its search, imitation included), the mean
 * simulated
 * step of its samples over the first and the last iterations (up to 10 each; null without
 * learning), the best simulated step, the simulator's correction. */
static json_t *learning_json(const pl_job *job)
{
    const pl_search *s = job->search;
    int n = s->agent ? pl_agent_iterations(s->agent) : 0;
    if (n == 0)
        return json_null();
    const pl_agent_iteration *curve = pl_agent_curve(s->agent);
    bool learns = pl_agent_learns(s->agent);
    int k = n < 10 ? n : 10;
    double first = 0, last = 0;
    for (int i = 0; i < k; i++) {
        first += curve[i].mean_step / k;
        last += curve[n - k + i].mean_step / k;
    }
    double searched = s->n_timed ? s->iteration_at[s->n_timed - 1] - s->agent_started : 0;
    return json_pack("{s:b, s:o, s:b, s:f, s:i, s:o, s:o, s:f, s:f}", "learned", learns,
                     "policy", job->policy_path ? json_string(job->policy_path) : json_null(),
                     "trained", learns && !job->zero_shot, "search_seconds", searched,
                     "window", k,
                     "mean_sampled_first_seconds", learns ? json_real(first) : json_null(),
                     "mean_sampled_last_seconds", learns ? json_real(last) : json_null(),
                     "best_simulated_seconds", curve[n - 1].best_step, "correction",
                     pl_agent_correction(s->agent));
}

int pl_job_write_summary(FILE *fp, const pl_job *job)
{
    const pl_search *s = job->search;
    const pl_cluster *c = job->cluster;
    json_t *rows = json_array();
    for (int r = 0; r < s->n_rows; r++)
        json_array_append_new(rows, row_json(&s->rows[r], c));
    char hash[24], whole_step[PL_MAX_NAME + 256];
    snprintf(hash, sizeof hash, "%016" PRIx64, job->graph->hash);
    bool whole = pl_graph_whole_step_reason(job->graph, whole_step, sizeof whole_step);
    json_t *root = json_pack(
        "{s:s, s:i, s:s, s:s, s:s, s:s, s:i, s:b, s:s, s:f, s:f, s:I, s:b, s:b, s:f, s:s, "
        "s:i, s:o, s:o, s:o, s:o, s:o, s:o}",
        "format", "placer-summary", "version", 1, "model", job->graph->name, "model_path",
        job->model_path, "model_hash", hash, "cluster", c->name, "devices", c->n_devices, "paced",
        c->paced, "command", job->command, "budget_seconds", job->budget, "elapsed_seconds",
        s->elapsed, "seed", (json_int_t)job->seed, "calibrated", job->calibrated, "interrupted",
        s->interrupted, "lower_bound_seconds", s->bound, "stopped", stop_name(s->stopped),
        "iterations", s->agent ? pl_agent_iterations(s->agent) : 0, "learning", learning_json(job),
        "best_baseline",
        s->best_baseline >= 0 ? json_string(s->rows[s->best_baseline].name) : json_null(),
        "checkpoint_failure",
        s->checkpoint_failure[0] ? json_string(s->checkpoint_failure) : json_null(), "rows", rows,
        "chosen", s->chosen >= 0 ? chosen_json(s, c) : json_null(), "whole_steps",
        whole ? json_string(whole_step) : json_null());
    if (root && /* the bound's parts (bound.h) */
        json_object_set_new(root, "lower_bound_parts",
                            json_pack("{s:f, s:f, s:i, s:f}", "work_and_paths_seconds",
                                      s->bound_parts.compute, "links_seconds",
                                      s->bound_parts.communication, "micro_batch_size",
                                      s->bound_parts.micro_batch_size, "without_links_seconds",
                                      s->bound_parts.free_communication))) {
        json_decref(root);
        root = NULL;
    }
    if (root && json_object_set_new(root, "machine_load", machine_load_json(s))) {
        json_decref(root);
        root = NULL;
    }
    if (root && job->op_times_path && /* where the simulated op times came from */
        json_object_set_new(root, "op_times", json_pack("{s:s, s:s}", "path",
                            job->op_times_path, "device", job->costs->op_times->device))) {
        json_decref(root);
        root = NULL;
    }
    if (root && job->ops_measured >= 0 && /* how much of the model the profile measured */
        json_object_set_new(root, "ops_measured", json_integer(job->ops_measured))) {
        json_decref(root);
        root = NULL;
    }
    if (root && /* the machine's pace now over the profile's (probe.h) */
        json_object_set_new(root, "probe",
                            job->probed ? json_pack("{s:f, s:i, s:b, s:f}", "scale",
                                                    job->probe.scale, "ops", job->probe.ops,
                                                    "reference_model", job->probe.reference,
                                                    "seconds", job->probe.seconds)
                                        : json_null())) {
        json_decref(root);
        root = NULL;
    }
    if (!root) {
        fprintf(stderr, "placer: out of memory (or a name that is not UTF-8) writing the "
                "summary\n");
        return PL_EXIT_FAILURE;
    }
    /* a cluster this machine cannot run: every step is the simulator's, and says so */
    char simulated[PL_ERROR_TEXT_MAX];
    json_object_set_new(root, "simulated",
                        c->simulated ? json_string(pl_cli_simulated_text(c, job->costs, simulated,
                                                                         sizeof simulated))
                                     : json_null());
    int status = json_dumpf(root, fp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 &&
                 fputc('\n', fp) != EOF ? PL_EXIT_OK : PL_EXIT_FAILURE;
    json_decref(root);
    if (status != PL_EXIT_OK)
        fprintf(stderr, "placer: cannot write the summary\n");
    return status;
}
