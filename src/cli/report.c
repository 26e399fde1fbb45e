/* The main job's report: PREFIX.report.md (the algorithms' table, the agent's learning
 * curve, the chosen plan's step, per-device utilisation, communication, the command), with
 * the pictures it shows (PREFIX.curve.svg, the timelines) and PREFIX.summary.json, each
 * written atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cli.h"
#include "job.h"
#include "progress.h"

/* When a candidate is not one of the policy's own samples (a baseline's placement under
 * another shape, or a plan the refinement improved: docs/agent.md), what the policy's own
 * plans reached too: whether the policy itself improved on the baselines. */
static void report_own_plan(FILE *fp, const pl_search *search)
{
    const pl_search_row *own = NULL, *other = NULL;
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        if (row->baseline || !(row->measured > 0))
            continue;
        const pl_search_row **slot = row->reshaped || row->refined ? &other : &own;
        if (!*slot || row->measured < (*slot)->measured)
            *slot = row;
    }
    if (!other || search->best_baseline < 0)
        return;
    const pl_search_row *base = &search->rows[search->best_baseline];
    if (other->reshaped)
        fprintf(fp, "%s is a baseline's placement under another shape (micro-batches, fold, "
                "schedule, deferral), found by the agent's shape sweep%s. ", other->name,
                other->refined ? ", then improved by its refinement (single-op moves)" : "");
    else
        fprintf(fp, "%s was improved by the agent's refinement (single-op moves from its best "
                "plan so far). ", other->name);
    if (own)
        fprintf(fp, "The policy's own best measured plan, %s, measured %.3f ms: %.3fx the best "
                "baseline's step. ", own->name, 1e3 * own->measured,
                own->measured / base->measured);
    double policy_best = search->agent ? pl_agent_policy_best(search->agent) : INFINITY;
    if (isfinite(policy_best) && base->sim.step_seconds > 0)
        fprintf(fp, "The policy's own plans simulated at best %.3f ms, %.3fx the best "
                "baseline's simulated step.", 1e3 * policy_best,
                policy_best / base->sim.step_seconds);
    fprintf(fp, "\n\n");
}

/* Text in a table cell or a paragraph: characters markdown would read as markup
 * (`|` ends a cell) escaped with a backslash, so that a name shows as it is. */
static void md_text(FILE *fp, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (strchr("\\`*_[]<>|#", *c))
            fputc('\\', fp);
        fputc(*c, fp);
    }
}

/* "12.345" (milliseconds), or a word when there is no number. */
static void md_ms(FILE *fp, double seconds, const char *none)
{
    if (seconds > 0)
        fprintf(fp, " %.3f |", 1e3 * seconds);
    else
        fprintf(fp, " %s |", none);
}

/* A measured step, "0.387 ±1.2%", marked "**!**" when its steps were unstable and "**†**"
 * when it is far above its simulation (measure.h, search.h). */
static void md_measured(FILE *fp, const pl_search_row *row)
{
    if (!(row->measured > 0)) {
        md_ms(fp, 0, row->fits ? "not measured" : "does not fit");
        return;
    }
    char spread[32];
    fprintf(fp, " %.3f %s%s%s |", 1e3 * row->measured,
            pl_cli_spread_text(&row->series, spread, sizeof spread),
            row->series.unstable ? " **!**" : "", pl_search_row_disturbed(row) ? " **†**" : "");
}

/* Under the table: what the marks mean, and every row they mark, said in full. */
static void write_measurement_notes(FILE *fp, const pl_search *search)
{
    bool unstable = false, disturbed = false;
    for (int r = 0; r < search->n_rows; r++) {
        unstable |= search->rows[r].measured > 0 && search->rows[r].series.unstable;
        disturbed |= pl_search_row_disturbed(&search->rows[r]);
    }
    fprintf(fp, "\n±: half the interquartile range of the measured steps, over their median "
            "(the middle half of the steps lies about that close to it).");
    if (unstable)
        fprintf(fp, " **!**: unstable: the steps ran at two speeds (bimodal) or drifted, in "
                "every round measured; the machine was most likely busy, and the figure is "
                "not to be trusted.");
    if (disturbed)
        fprintf(fp, " **†**: measured more than %.0fx its simulated step: most likely "
                "disturbed (another process on the cores), not a slow plan.",
                PL_SEARCH_DISTURBED);
    fprintf(fp, "\n");
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        if (!(row->measured > 0) || (!row->series.unstable && !pl_search_row_disturbed(row)))
            continue;
        char why[512];
        fprintf(fp, "\n- ");
        md_text(fp, row->name);
        fprintf(fp, ": measured %.3f ms", 1e3 * row->measured);
        if (row->series.unstable) {
            fprintf(fp, ", unstable (");
            md_text(fp, pl_cli_instability_text(&row->series, why, sizeof why));
            fprintf(fp, ")");
        }
        if (pl_search_row_disturbed(row))
            fprintf(fp, ", %.1fx its simulated step (%.3f ms): the measurement was likely "
                    "disturbed, not the plan slow", row->measured / row->sim.step_seconds,
                    1e3 * row->sim.step_seconds);
        if (row->load.known)
            fprintf(fp, "; %s", pl_cli_load_text(&row->load, why, sizeof why));
        fprintf(fp, ". Measure it again on a quiet machine (placer run).");
    }
    fprintf(fp, "\n");
}

static void md_ratio(FILE *fp, double seconds, double bound)
{
    if (seconds > 0 && bound > 0)
        fprintf(fp, " %.2f |", seconds / bound);
    else
        fprintf(fp, " |");
}

/* The bound and which part binds: the work and paths with communication free, or what the
 * links cost (bound.h). */
static void write_bound(FILE *fp, const pl_bound_parts *bound)
{
    fprintf(fp,
            "Lower bound on the step: %.3f ms, at micro-batches of %d sample%s: the work "
            "and paths with free communication %.3f ms, what the links cost %.3f ms%s",
            1e3 * bound->seconds, bound->micro_batch_size, bound->micro_batch_size == 1 ? "" : "s",
            1e3 * bound->compute, 1e3 * bound->communication,
            bound->communication > 0 ? "" : " (a native link: copies held to no bandwidth)");
    if (bound->free_communication < bound->seconds)
        fprintf(fp, "; with communication free it would be %.3f ms",
                1e3 * bound->free_communication);
    fprintf(fp, ".\n\n");
}

static void write_algorithms(FILE *fp, const pl_job *job)
{
    const pl_cluster *c = job->cluster;
    const pl_search *search = job->search;
    char a[32];
    fprintf(fp, "## Algorithms\n\nEvery plan the job considered. Measured steps are medians "
            "of steps on the executor in this run, with their spread (±, below); the ratios "
            "divide a step by the lower bound (%.3f ms), the simulated step and the measured "
            "one each in its own column. Peak memory is simulated.\n\n",
            1e3 * search->bound);
    fprintf(fp, "| algorithm | simulated step (ms) | measured step (ms) | simulated / lower "
            "bound | measured / lower bound | peak memory per device | choice |\n"
            "|---|---:|---:|---:|---:|---|---|\n");
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        fprintf(fp, "| ");
        md_text(fp, row->name);
        if (row->plan && pl_plan_recomputes(row->plan))
            fprintf(fp, " (recomputes activations)");
        fprintf(fp, " |");
        if (!row->plan) {
            fprintf(fp, row->skipped ? " skipped: " : " failed: ");
            md_text(fp, row->failure);
            fprintf(fp, " | | | | | |\n");
            continue;
        }
        md_ms(fp, row->sim.step_seconds, "");
        md_measured(fp, row);
        md_ratio(fp, row->sim.step_seconds, search->bound);
        md_ratio(fp, row->measured, search->bound);
        fprintf(fp, " ");
        const char *separator = "";
        for (int d = 0; d < c->n_devices; d++)
            if (row->sim.memory[d] > 0) {
                fprintf(fp, "%s", separator);
                md_text(fp, c->devices[d].name);
                fprintf(fp, " %s", pl_units_bytes((double)row->sim.memory[d], a, sizeof a));
                separator = ", ";
            }
        fprintf(fp, " | %s |\n", r == search->chosen ? "**chosen**"
                                 : r == search->best_baseline ? "best baseline" : "");
    }
    write_measurement_notes(fp, search);
    if (search->head_to_head_rounds > 0) {
        fprintf(fp, "\nThe best baseline and the agent's best plans (");
        const char *separator = "";
        for (int r = 0; r < search->n_rows; r++)
            if (search->rows[r].head_to_head) {
                fprintf(fp, "%s", separator);
                md_text(fp, search->rows[r].name);
                separator = ", ";
            }
        fprintf(fp, ") were measured again at the end, taking turns step by step for %d "
                "rounds: their measured steps are those medians, so that the final choice "
                "compares them on the machine as it is then.\n", search->head_to_head_rounds);
    }
}

/* The agent's gain over the best baseline, and whether it stands out of the noise: a few
 * per cent at least, and more than the two measurements' spreads (half their
 * interquartile ranges) together. */
static void write_improvement(FILE *fp, const pl_search_row *chosen,
                              const pl_search_row *base, double ratio)
{
    double gain = 1 - ratio, noise = 0.5 * (chosen->series.iqr_spread + base->series.iqr_spread);
    fprintf(fp, "The agent's plan measured %.1f%% faster than the best baseline", 100 * gain);
    if (ratio > 1 / 1.05)
        fprintf(fp, " (within the executor's run-to-run spread of a few per cent: not a clear "
                "improvement)");
    else if (gain <= noise)
        fprintf(fp, " (within the two measurements' spreads, ±%.1f%% and ±%.1f%%: not a "
                "clear improvement)", 50 * chosen->series.iqr_spread,
                50 * base->series.iqr_spread);
    fprintf(fp, ".\n\n");
}

/* How busy the machine was while the plans were measured (search.h), and whether that
 * explains an unstable choice. */
static void write_machine_load(FILE *fp, const pl_search *search)
{
    const pl_machine_load *during = &search->load_measuring;
    pl_machine_load judged = pl_search_judged_load(search);
    if (!judged.known)
        return;
    fprintf(fp, "How busy the machine was: while the plans were measured (%.2f s in all), "
            "other work took %.0f%% of the CPU", during->seconds,
            100 * pl_machine_load_share(during));
    if (pl_machine_load_steal_share(during) >= 0.01)
        fprintf(fp, " (%.0f%% the virtual machine's host's steal)",
                100 * pl_machine_load_steal_share(during));
    if (search->load_before.known)
        fprintf(fp, "; %.0f%% before the first measurement",
                100 * pl_machine_load_share(&search->load_before));
    if (search->load_worst >= 0)
        fprintf(fp, "; at most %.0f%% during one measurement", 100 * search->load_worst);
    if (during->seconds < PL_MACHINE_LOAD_MIN_SECONDS)
        fprintf(fp, "; judged with the reading before them (the measurements were too short "
                "to judge alone), %.0f%%", 100 * pl_machine_load_share(&judged));
    if (pl_machine_load_disturbed(&judged))
        fprintf(fp, ". **That is above %.0f%%: the measurements were disturbed%s and are not "
                "to be trusted.** Run again on a quiet machine (close other programs; check "
                "with `uptime` or `top`).\n\n", 100 * PL_MACHINE_LOAD_DISTURBED,
                search->choice_unstable ? ", which most likely made the choice's unstable" : "");
    else
        fprintf(fp, " (disturbed above %.0f%%)%s.\n\n", 100 * PL_MACHINE_LOAD_DISTURBED,
                search->choice_unstable ? ": the load does not explain the unstable "
                                          "measurement; the virtual machine's host or the "
                                          "processor's clock may" : "");
}

static void write_choice(FILE *fp, const pl_search *search)
{
    const pl_search_row *chosen = &search->rows[search->chosen];
    fprintf(fp, "\nChosen: **");
    md_text(fp, chosen->name);
    fprintf(fp, "**");
    if (search->best_baseline >= 0 && chosen->measured > 0 &&
        search->rows[search->best_baseline].measured > 0) {
        const pl_search_row *base = &search->rows[search->best_baseline];
        double ratio = chosen->measured / base->measured;
        fprintf(fp, ", %.3fx the best baseline's step (", ratio);
        md_text(fp, base->name);
        fprintf(fp, ", %.3f ms). ", 1e3 * base->measured);
        if (chosen->baseline)
            fprintf(fp, "The agent did not improve on the best baseline in this run.\n\n");
        else
            write_improvement(fp, chosen, base, ratio);
    } else {
        fprintf(fp, ".\n\n");
    }
    if (search->choice_unstable)
        fprintf(fp, "**The choice rests on an unstable measurement** (marked **!** above): "
                "the machine was most likely busy while it was measured, and the choice may "
                "not hold on a quiet machine.\n\n");
    write_machine_load(fp, search);
}

/* Where the policy's weights came from. */
static void write_policy_origin(FILE *fp, const pl_job *job)
{
    if (!pl_agent_learns(job->search->agent))
        return;
    if (job->policy_path) {
        fprintf(fp, " The policy started from the weights in `");
        md_text(fp, job->policy_path);
        static const char *const around[2][2] = {
            {", its best samples reshaped and refined", ", its best samples reshaped, not refined"},
            {", its best samples refined, not reshaped", ", no sweeps or refinement"}};
        fprintf(fp, "`%s%s.", job->zero_shot ? " and was sampled without training "
                                               "(`--zero-shot`): no baseline offered or imitated"
                                             : "",
                job->zero_shot ? around[job->no_sweep][job->no_refine] : "");
    } else {
        fprintf(fp, " The policy started from fresh weights.");
    }
}

static void write_learning(FILE *fp, const pl_job *job, const char *svg_name)
{
    const pl_search *search = job->search;
    int n = pl_agent_iterations(search->agent);
    const pl_agent_iteration *curve = pl_agent_curve(search->agent);
    char why[256];
    fprintf(fp, "## Learning\n\n![the agent's best step against its iterations](");
    md_text(fp, svg_name);
    fprintf(fp, ")\n\n%d iterations; the agent stopped: %s.", n,
            pl_progress_stop_text(search, why, sizeof why));
    write_policy_origin(fp, job);
    if (n > 0 && !pl_agent_learns(search->agent)) {
        fprintf(fp, " It searched without its learned policy (`--no-learning`): each "
                "iteration refined the best plan.");
    } else if (n > 0) {
        int k = n < 10 ? n : 10;
        double first = 0, last = 0;
        for (int i = 0; i < k; i++) {
            first += curve[i].mean_step / k;
            last += curve[n - k + i].mean_step / k;
        }
        fprintf(fp, " The mean simulated step of the samples: %.3f ms over the first %d "
                "iterations, %.3f ms over the last %d.", 1e3 * first, k, 1e3 * last, k);
    }
    if (n > 0)
        fprintf(fp, " Best simulated step %.3f ms; the simulator's correction from the "
                "executor's measurements: x%.3f.", 1e3 * curve[n - 1].best_step,
                pl_agent_correction(search->agent));
    fprintf(fp, "\n\n");
}

static void write_devices(FILE *fp, const pl_job *job)
{
    const pl_cluster *c = job->cluster;
    const pl_search *search = job->search;
    const pl_search_row *chosen = &search->rows[search->chosen];
    char a[32], b[32];
    fprintf(fp, "## Devices (the chosen plan)\n\nForward ops are the model's own ops placed "
            "on the device, a split op on each device that holds a shard of it (their "
            "backward and update ops go with them). Utilisation is busy "
            "time over the step: simulated, and measured in one more step of the chosen "
            "plan.\n\n| device | forward ops | simulated busy (ms) | simulated utilisation | "
            "measured busy (ms) | measured utilisation | peak memory (simulated) | capacity |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|\n");
    double step = search->measured_busy_step;
    for (int d = 0; d < c->n_devices; d++) {
        int ops = pl_plan_ops_on(chosen->plan, 0, d);
        fprintf(fp, "| ");
        md_text(fp, c->devices[d].name);
        fprintf(fp, " | %d | %.3f | %.0f%% |", ops, 1e3 * chosen->sim.busy_seconds[d],
                100 * chosen->sim.busy_seconds[d] / chosen->sim.step_seconds);
        if (step > 0)
            fprintf(fp, " %.3f | %.0f%% |", 1e3 * search->measured_busy[d],
                    100 * search->measured_busy[d] / step);
        else
            fprintf(fp, " not measured | |");
        fprintf(fp, " %s | %s |\n", pl_units_bytes((double)chosen->sim.memory[d], a, sizeof a),
                pl_units_bytes((double)c->devices[d].memory_bytes, b, sizeof b));
    }
    char replicas[64], split[96];
    fprintf(fp, "\n## Communication\n\n%d copies per step, %s in all; %s%s%d stage%s, %d "
            "micro-batch%s, %s.\n", chosen->sim.n_copies,
            pl_units_bytes((double)chosen->sim.copy_bytes, a, sizeof a),
            pl_plan_replicas_text(chosen->plan, replicas, sizeof replicas),
            pl_plan_split_text(chosen->plan, split, sizeof split), chosen->plan->n_stages,
            chosen->plan->n_stages == 1 ? "" : "s", chosen->plan->micro_batches,
            chosen->plan->micro_batches == 1 ? "" : "es",
            pl_plan_schedule_text(chosen->plan));
    char reason[PL_MAX_NAME + 256];
    if (pl_graph_whole_step_reason(job->graph, reason, sizeof reason)) {
        fprintf(fp, "\nNo plan was searched with micro-batches: ");
        md_text(fp, reason);
        fprintf(fp, ".\n");
    }
}

/* The report's files: paths, and what the markdown links to (names beside it). */
typedef struct report_files {
    char *markdown, *curve, *timeline, *measured, *summary;
    bool measured_written;
} report_files;

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void write_step_pictures(FILE *fp, const pl_job *job, const report_files *files)
{
    if (job->no_drawings) {
        fprintf(fp, "## The chosen plan's step\n\nNot drawn: the budget left no time for it.\n\n");
        return;
    }
    fprintf(fp, "## The chosen plan's step\n\nEach device and link in time: a bar per task "
            "(forward, backward, update, copy), idle time as gaps.\n\n![the step, simulated](");
    md_text(fp, base_name(files->timeline));
    fprintf(fp, ")\n\n");
    if (files->measured_written) {
        fprintf(fp, "![the step, measured](");
        md_text(fp, base_name(files->measured));
        fprintf(fp, ")\n\n");
    }
}

/* Where the simulated figures' op times came from, when not this machine's profile. */
static void write_op_times(FILE *fp, const pl_job *job)
{
    const pl_op_times *t = job->costs->op_times;
    if (!t)
        return;
    fprintf(fp, "**Op times measured elsewhere**: every simulated figure (and the lower "
            "bound) takes the times of ");
    md_text(fp, pl_cli_input_name(job->op_times_path));
    fprintf(fp, " for %d of the model's %d ops and %d of their backward ops, measured on ",
            t->n_forward_ops, job->graph->n_forward_ops, t->n_backward_ops);
    md_text(fp, t->device);
    fprintf(fp, "; the other ops, copies and updates take %s.\n\n",
            job->cluster->simulated ? "the roofline of the datasheet figures"
                                    : "this machine's profile, and measured steps are this "
                                      "machine's");
}

/* The machine as the job found it (probe.h), against the profile. */
static void write_probe(FILE *fp, const pl_job *job)
{
    if (job->ops_measured >= 0 && job->ops_measured < job->graph->n_ops)
        fprintf(fp, "**Ops the profile never measured**: %d of the model's %d training ops "
                "(at its batch) are predicted from their kinds' fits, extrapolated; "
                "`placer calibrate MODEL.json` measures them.\n\n",
                job->graph->n_ops - job->ops_measured, job->graph->n_ops);
    if (!job->probed)
        return;
    const pl_probe *p = &job->probe;
    fprintf(fp, "**The machine now**: a probe at the start ran %d ops (%s) on one native "
            "device in %.2f s; they took x%.3f the profile's times for them, and every "
            "simulated figure here (the lower bound included) takes this machine's native op "
            "and copy times scaled by that.\n\n", p->ops,
            p->reference ? "of a bundled model: few of this model's ops are in the profile, "
                           "or its step is too long"
                         : "of this model",
            p->seconds, p->scale);
}

static void write_markdown(FILE *fp, const pl_job *job, const report_files *files)
{
    const pl_cluster *c = job->cluster;
    const pl_search *search = job->search;
    fprintf(fp, "# Placement of ");
    md_text(fp, job->graph->name);
    fprintf(fp, " on ");
    md_text(fp, c->name);
    /* a code span with a backtick inside opens and closes with two */
    bool tick = strchr(job->command, '`') != NULL;
    fprintf(fp, "\n\nCommand: %s%s%s\n\n", tick ? "`` " : "`", job->command, tick ? " ``" : "`");
    fprintf(fp, "Cluster \"");
    md_text(fp, c->name);
    fprintf(fp, "\": %d devices, %s. Budget %.0f s, used %.1f s; seed %llu%s%s.\n\n",
            c->n_devices, c->simulated ? "hardware described from datasheets (simulated)"
            : c->paced ? "paced (emulated devices: every measured step comes "
            "from their pacing)" : "native", job->budget, search->elapsed,
            (unsigned long long)job->seed, job->calibrated ? "; calibrated this run" : "",
            search->interrupted ? "; **interrupted (Ctrl-C or a signal): the best plan so far**"
                                : "");
    write_op_times(fp, job);
    write_probe(fp, job);
    if (c->simulated) {
        char simulated[PL_ERROR_TEXT_MAX];
        fprintf(fp, "**");
        md_text(fp, pl_cli_simulated_text(c, job->costs, simulated, sizeof simulated));
        fprintf(fp, "**. Nothing was measured: the plan is the simulator's choice.\n\n");
    }
    char skipped[256];
    if (pl_progress_skipped_text(search, skipped, sizeof skipped)[0]) {
        fprintf(fp, "**The budget was too short for the whole search**: skipped for time: ");
        md_text(fp, skipped);
        fprintf(fp, ". The plan is the best of what was done.\n\n");
    }
    if (search->checkpoint_failure[0]) {
        fprintf(fp, "**The agent's checkpoint was not saved**: ");
        md_text(fp, search->checkpoint_failure);
        fprintf(fp, ".\n\n");
    }
    write_bound(fp, &search->bound_parts);
    write_algorithms(fp, job);
    write_choice(fp, search);
    report_own_plan(fp, search);
    if (search->agent)
        write_learning(fp, job, base_name(files->curve));
    write_step_pictures(fp, job, files);
    write_devices(fp, job);
}

typedef enum report_part { PART_MARKDOWN, PART_CURVE, PART_SUMMARY } report_part;

static int write_atomic(const char *path, const pl_job *job, const report_files *files,
                        report_part part)
{
    pl_error err;
    pl_error_init(&err, path);
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, &err) != PL_OK)
        return pl_cli_report(&err);
    int status = PL_EXIT_OK;
    if (part == PART_CURVE)
        pl_job_write_curve(file.fp, job);
    else if (part == PART_MARKDOWN)
        write_markdown(file.fp, job, files);
    else
        status = pl_job_write_summary(file.fp, job);
    if (status != PL_EXIT_OK) {
        pl_atomic_abort(&file);
        return status;
    }
    if (pl_atomic_commit(&file, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}

int pl_job_write_report(const pl_job *job, const char *prefix)
{
    report_files f = {pl_cli_path(prefix, ".report.md"), pl_cli_path(prefix, ".curve.svg"),
                      pl_cli_path(prefix, ".timeline.svg"), pl_cli_path(prefix, ".timeline-measured.svg"),
                      pl_cli_path(prefix, ".summary.json"), false};
    int status = PL_EXIT_FAILURE;
    if (!f.markdown || !f.curve || !f.timeline || !f.measured || !f.summary)
        fprintf(stderr, "placer: out of memory\n");
    else if ((status = job->search->agent ? write_atomic(f.curve, job, &f, PART_CURVE)
                                          : PL_EXIT_OK) == PL_EXIT_OK &&
             (status = job->no_drawings ? PL_EXIT_OK
                                        : pl_job_write_timelines(job, f.timeline, f.measured,
                                                                 &f.measured_written)) ==
                 PL_EXIT_OK &&
             (status = write_atomic(f.markdown, job, &f, PART_MARKDOWN)) == PL_EXIT_OK)
        status = write_atomic(f.summary, job, &f, PART_SUMMARY);
    free(f.markdown);
    free(f.curve);
    free(f.timeline);
    free(f.measured);
    free(f.summary);
    return status;
}
