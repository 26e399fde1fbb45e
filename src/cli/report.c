/* The main job's report: PREFIX.report.md (the algorithms' table, the agent's learning
 * curve, per-device utilisation, communication, the command) and the curve as
 * PREFIX.curve.svg, both written atomically. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cli.h"
#include "job.h"

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

/* The learning curve: mean sampled reward and best-so-far reward per iteration. */
static void write_svg(FILE *fp, const pl_agent *agent)
{
    const int w = 640, h = 320, left = 60, right = 20, top = 30, bottom = 40;
    int n = pl_agent_iterations(agent);
    const pl_agent_iteration *curve = pl_agent_curve(agent);
    double lo = 0, hi = -INFINITY, best = -INFINITY;
    for (int i = 0; i < n; i++) {
        if (curve[i].mean_reward < lo || i == 0)
            lo = curve[i].mean_reward;
        if (curve[i].best_reward > hi)
            hi = curve[i].best_reward;
    }
    if (n == 0 || !(hi > lo))
        hi = lo + 1;
    double pad = 0.05 * (hi - lo);
    lo -= pad, hi += pad;
    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" "
            "height=\"100%%\" fill=\"white\"/>\n", w, h);
    fprintf(fp, "<text x=\"%d\" y=\"18\">reward -sqrt(step / one device) per iteration</text>\n",
            left);
    fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left,
            h - bottom, w - right, h - bottom);
    fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", left, top,
            left, h - bottom);
    for (int t = 0; t <= 4; t++) {
        double v = lo + (hi - lo) * t / 4;
        double y = h - bottom - (h - top - bottom) * t / 4.0;
        fprintf(fp, "<text x=\"4\" y=\"%.1f\">%.3f</text>\n", y + 4, v);
    }
    fprintf(fp, "<text x=\"%d\" y=\"%d\">iteration (%d in all)</text>\n", w / 2 - 40, h - 10, n);
    const char *colour[2] = {"#1f77b4", "#d62728"};
    for (int series = 0; series < 2; series++) {
        fprintf(fp, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                colour[series]);
        best = -INFINITY;
        for (int i = 0; i < n; i++) {
            if (curve[i].best_reward > best)
                best = curve[i].best_reward;
            double v = series == 0 ? curve[i].mean_reward : best;
            double x = left + (w - left - right) * (n > 1 ? (double)i / (n - 1) : 0.5);
            double y = h - bottom - (h - top - bottom) * (v - lo) / (hi - lo);
            fprintf(fp, "%.1f,%.1f ", x, y);
        }
        fprintf(fp, "\"/>\n");
    }
    fprintf(fp, "<text x=\"%d\" y=\"%d\" fill=\"%s\">mean sampled reward</text>\n", w - 300,
            top + 14, colour[0]);
    fprintf(fp, "<text x=\"%d\" y=\"%d\" fill=\"%s\">best so far</text>\n", w - 140, top + 14,
            colour[1]);
    fprintf(fp, "</svg>\n");
}

static void write_markdown(FILE *fp, const pl_job *job, const char *svg_name)
{
    const pl_cluster *c = job->cluster;
    const pl_search *search = job->search;
    const pl_search_row *chosen = &search->rows[search->chosen];
    char a[32], b[32];
    fprintf(fp, "# Placement of %s on %s\n\n", job->graph->name, c->name);
    /* a code span with a backtick inside opens and closes with two */
    bool tick = strchr(job->command, '`') != NULL;
    fprintf(fp, "Command: %s%s%s\n\n", tick ? "`` " : "`", job->command, tick ? " ``" : "`");
    fprintf(fp, "Cluster \"%s\": %d devices, %s. Budget %.0f s, used %.1f s; seed %llu%s%s.\n\n",
            c->name, c->n_devices, c->paced ? "paced (emulated devices)" : "native",
            job->budget, search->elapsed, (unsigned long long)job->seed,
            job->calibrated ? "; calibrated this run" : "",
            search->interrupted ? "; **interrupted (Ctrl-C or a signal): the best plan so far**"
                                : "");
    if (search->checkpoint_failure[0])
        fprintf(fp, "**The agent's checkpoint was not saved**: %s.\n\n",
                search->checkpoint_failure);
    fprintf(fp, "Lower bound on the step: %.3f ms.\n\n", 1e3 * search->bound);
    fprintf(fp, "## Algorithms\n\nMeasured on the executor in this run (median of the measured "
            "steps); the ratio is measured (else simulated) over the lower bound.\n\n");
    fprintf(fp, "| algorithm | simulated step | measured step | / lower bound | peak memory per "
            "device |\n|---|---:|---:|---:|---|\n");
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        if (!row->plan) {
            fprintf(fp, "| %s | failed: %s | | | |\n", row->name, row->failure);
            continue;
        }
        double step = row->measured > 0 ? row->measured : row->sim.step_seconds;
        fprintf(fp, "| %s%s | %.3f ms | ", r == search->chosen ? "**" : "", row->name,
                1e3 * row->sim.step_seconds);
        if (row->measured > 0)
            fprintf(fp, "%.3f ms", 1e3 * row->measured);
        else
            fprintf(fp, "%s", row->fits ? "not measured" : "does not fit");
        fprintf(fp, "%s | %.2f | ", r == search->chosen ? "**" : "", step / search->bound);
        const char *separator = "";
        for (int d = 0; d < c->n_devices; d++)
            if (row->sim.memory[d] > 0) {
                fprintf(fp, "%s%s %s", separator, c->devices[d].name,
                        pl_cli_bytes((double)row->sim.memory[d], a, sizeof a));
                separator = ", ";
            }
        fprintf(fp, " |\n");
    }
    if (search->head_to_head_rounds > 0) {
        fprintf(fp, "\nThe best baseline and the agent's best plans (");
        const char *separator = "";
        for (int r = 0; r < search->n_rows; r++)
            if (search->rows[r].head_to_head) {
                fprintf(fp, "%s%s", separator, search->rows[r].name);
                separator = ", ";
            }
        fprintf(fp, ") were measured again at the end, taking turns step by step for %d "
                "rounds: their measured steps are those medians, so that the final choice "
                "compares them on the machine as it is then.\n", search->head_to_head_rounds);
    }
    fprintf(fp, "\nChosen: **%s**", chosen->name);
    if (search->best_baseline >= 0 && chosen->measured > 0) {
        const pl_search_row *base = &search->rows[search->best_baseline];
        double gain = base->measured / chosen->measured;
        fprintf(fp, ", %.3fx the best baseline's step (%s, %.3f ms). ", 1 / gain, base->name,
                1e3 * base->measured);
        if (chosen->baseline)
            fprintf(fp, "The agent did not improve on the best baseline in this run.\n\n");
        else
            fprintf(fp, "The agent's plan measured %.1f%% faster than the best baseline%s.\n\n",
                    100 * (1 - 1 / gain), gain < 1.05 ? " (within the executor's run-to-run "
                    "spread of a few per cent: not a clear improvement)" : "");
    } else {
        fprintf(fp, ".\n\n");
    }
    report_own_plan(fp, search);
    if (search->agent) {
        int n = pl_agent_iterations(search->agent);
        const pl_agent_iteration *curve = pl_agent_curve(search->agent);
        fprintf(fp, "## Learning\n\n![learning curve](%s)\n\n", svg_name);
        if (n > 0) {
            int k = n < 10 ? n : 10;
            double first = 0, last = 0;
            for (int i = 0; i < k; i++) {
                first += curve[i].mean_reward / k;
                last += curve[n - k + i].mean_reward / k;
            }
            fprintf(fp, "%d iterations. Mean sampled reward: %.4f over the first %d iterations, "
                    "%.4f over the last %d (%s). Best simulated step %.3f ms; the simulator's "
                    "correction from the executor's measurements: x%.3f.\n\n", n, first, k,
                    last, k, last > first ? "rising" : "not rising",
                    1e3 * curve[n - 1].best_step, pl_agent_correction(search->agent));
        }
    }
    fprintf(fp, "## Devices (the chosen plan)\n\n| device | ops | simulated busy | utilisation "
            "(simulated) | measured busy | peak memory | capacity |\n|---|---:|---:|---:|---:|---:|---:|\n");
    double measured_step = chosen->measured;
    for (int d = 0; d < c->n_devices; d++) {
        int ops = 0;
        for (int o = 0; o < chosen->plan->n_ops; o++)
            ops += chosen->plan->device[o] == d;
        fprintf(fp, "| %s | %d | %.3f ms | %.0f%% | ", c->devices[d].name, ops,
                1e3 * chosen->sim.busy_seconds[d],
                100 * chosen->sim.busy_seconds[d] / chosen->sim.step_seconds);
        if (measured_step > 0)
            fprintf(fp, "%.3f ms (%.0f%%)", 1e3 * search->measured_busy[d],
                    100 * search->measured_busy[d] / measured_step);
        fprintf(fp, " | %s | %s |\n", pl_cli_bytes((double)chosen->sim.memory[d], a, sizeof a),
                pl_cli_bytes((double)c->devices[d].memory_bytes, b, sizeof b));
    }
    fprintf(fp, "\n## Communication\n\n%d copies per step, %s in all; %d stage%s, %d "
            "micro-batch%s, %s.\n", chosen->sim.n_copies,
            pl_cli_bytes((double)chosen->sim.copy_bytes, a, sizeof a), chosen->plan->n_stages,
            chosen->plan->n_stages == 1 ? "" : "s", chosen->plan->micro_batches,
            chosen->plan->micro_batches == 1 ? "" : "es",
            pl_plan_schedule_text(chosen->plan));
}

static int write_atomic(const char *path, const pl_job *job, const char *svg_name, bool svg)
{
    pl_error err;
    pl_error_init(&err, path);
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, &err) != PL_OK)
        return pl_cli_report(&err);
    if (svg)
        write_svg(file.fp, job->search->agent);
    else
        write_markdown(file.fp, job, svg_name);
    if (pl_atomic_commit(&file, &err) != PL_OK)
        return pl_cli_report(&err);
    return PL_EXIT_OK;
}

int pl_job_write_report(const pl_job *job, const char *prefix)
{
    size_t len = strlen(prefix) + 16;
    char *md = malloc(len), *svg = malloc(len);
    int status = PL_EXIT_FAILURE;
    if (md && svg) {
        snprintf(md, len, "%s.report.md", prefix);
        snprintf(svg, len, "%s.curve.svg", prefix);
        const char *base = strrchr(svg, '/');
        status = job->search->agent ? write_atomic(svg, job, NULL, true) : PL_EXIT_OK;
        if (status == PL_EXIT_OK)
            status = write_atomic(md, job, base ? base + 1 : svg, false);
    }
    free(md);
    free(svg);
    return status;
}
