/* The main job's progress lines, by the modes of progress.h. */
#include "progress.h"

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "clock.h"

bool pl_progress_parse(const char *text, pl_progress_mode *mode)
{
    static const char *const names[] = {"auto", "live", "lines", "none"};
    for (int m = 0; m < (int)(sizeof names / sizeof *names); m++)
        if (strcmp(text, names[m]) == 0) {
            *mode = (pl_progress_mode)m;
            return true;
        }
    return false;
}

void pl_progress_init(pl_progress *p, FILE *out, pl_progress_mode mode, bool quiet,
                      const pl_graph *graph, const pl_cluster *cluster,
                      const pl_search_options *options, double start)
{
    if (mode == PL_PROGRESS_AUTO)
        mode = isatty(fileno(out)) && !pl_cli_comm() ? PL_PROGRESS_LIVE : PL_PROGRESS_LINES;
    *p = (pl_progress){.out = out, .mode = mode, .quiet = quiet, .graph = graph,
                       .cluster = cluster, .options = options, .start = start};
}

static void print_start(pl_progress *p, const pl_search_event *event)
{
    const pl_cluster *c = p->cluster;
    fprintf(p->out, "placing %s on cluster \"%s\" (%d devices, %s); lower bound %.3f ms; "
            "budget %.0f s, seed %llu\n", p->graph->name, c->name, c->n_devices,
            c->simulated ? "hardware: simulated only" : c->paced ? "paced: emulated devices"
                                                             : "native", 1e3 * event->search->bound,
            p->options->budget, (unsigned long long)p->options->seed);
}

/* What ends a placed baseline's line: that its plan recomputes activations, or "". */
static const char *recomputes(const pl_search_row *row)
{
    return pl_plan_recomputes(row->plan) ? "  recomputes activations" : "";
}

/* A measured baseline: its spread, and a line more when it is not to be trusted. */
static void print_measured_row(FILE *out, const pl_search_row *row)
{
    char spread[32], why[512];
    fprintf(out, "baseline %-12s simulated %9.3f ms  measured %9.3f ms %s%s\n", row->name,
            1e3 * row->sim.step_seconds, 1e3 * row->measured,
            pl_cli_spread_text(&row->series, spread, sizeof spread), recomputes(row));
    if (row->series.unstable)
        fprintf(out, "  unstable in %d round%s (%s): the machine was busy?\n",
                row->measure_rounds, row->measure_rounds == 1 ? "" : "s",
                pl_cli_instability_text(&row->series, why, sizeof why));
    if (pl_search_row_disturbed(row))
        fprintf(out, "  measured %.1fx its simulated step: likely disturbed, not a slow plan\n",
                row->measured / row->sim.step_seconds);
}

static void print_baselines(pl_progress *p, const pl_search_event *event)
{
    const pl_search *search = event->search;
    for (int r = 0; r < search->n_rows; r++) {
        const pl_search_row *row = &search->rows[r];
        if (!row->plan)
            fprintf(p->out, "baseline %-12s %s: %s\n", row->name,
                    row->skipped ? "skipped" : "failed", row->failure);
        else if (row->measured > 0)
            print_measured_row(p->out, row);
        else
            fprintf(p->out, "baseline %-12s simulated %9.3f ms  %s%s\n", row->name,
                    1e3 * row->sim.step_seconds,
                    row->fits ? "(not measured)" : "(does not fit)", recomputes(row));
    }
}

static void print_resumed(pl_progress *p, const pl_search_event *event)
{
    fprintf(p->out, "agent: resumed from %s at iteration %d\n", p->options->resume,
            pl_agent_iterations(event->search->agent));
}

static void print_not_imitating(pl_progress *p, const pl_search_event *event)
{
    fprintf(p->out, "agent: not imitating %s (%s)\n", event->search->rows[event->row].name,
            event->text);
}

/* One iteration's line, within PL_PROGRESS_COLUMNS: the best step simulated and
 * measured, the time, and the agent's measured step over the best baseline's when both
 * are known and there is room; while no plan has fit, only that, and the time. */
static void format_line(const pl_progress *p, const pl_search *search,
                        const pl_agent_iteration *it, char *line, size_t cap)
{
    if (it->best_step <= 0) {
        snprintf(line, cap, "iteration %d  no plan fits yet  %.0f s", it->iteration,
                 pl_now() - p->start);
        return;
    }
    char measured[48] = " (not measured yet)";
    if (search->agent_measured > 0)
        snprintf(measured, sizeof measured, ", %.3f ms measured", 1e3 * search->agent_measured);
    int len = snprintf(line, cap, "iteration %d  best %.3f ms simulated%s  %.0f s",
                       it->iteration, 1e3 * it->best_step, measured, pl_now() - p->start);
    double base = search->best_baseline >= 0 ? search->rows[search->best_baseline].measured : 0;
    if (base > 0 && search->agent_measured > 0 && len > 0) {
        char gain[48];
        int more = snprintf(gain, sizeof gain, "  %.2fx the best baseline",
                            search->agent_measured / base);
        if (len + more <= PL_PROGRESS_COLUMNS && (size_t)(len + more) < cap)
            strcat(line, gain);
    }
}

static void print_iteration(pl_progress *p, const pl_search_event *event)
{
    const pl_agent_iteration *it = &event->iteration;
    const pl_search *search = event->search;
    if (p->mode == PL_PROGRESS_NONE)
        return;
    double now = pl_now();
    /* a first plan that fits is news, as is a better one (a step of 0: none fits yet) */
    bool better = it->best_step > 0 && (p->shown_best <= 0 || it->best_step < p->shown_best);
    bool news = better || search->agent_measured != p->shown_measured;
    if (p->mode == PL_PROGRESS_LINES && p->last_line > 0 &&
        !(news && now - p->last_line >= PL_PROGRESS_BEST_EVERY) &&
        now - p->last_line < PL_PROGRESS_EVERY)
        return;
    char line[256];
    format_line(p, search, it, line, sizeof line);
    if (p->mode == PL_PROGRESS_LIVE) {
        /* back to the line's start and clear it: no padding left behind */
        fprintf(p->out, "\r\033[K%s", line);
        p->line_open = true;
    } else {
        fprintf(p->out, "%s\n", line);
    }
    fflush(p->out);
    p->last_line = now;
    p->shown_best = it->best_step;
    p->shown_measured = search->agent_measured;
}

/* The agent's end: its last line (the lines mode may have left it out), how many
 * iterations and why it stopped. */
static void print_agent_done(pl_progress *p, const pl_search_event *event)
{
    const pl_search *search = event->search;
    if (p->line_open)
        fputc('\n', p->out);
    p->line_open = false;
    if (!search->agent) {
        fprintf(p->out, "agent: not started: the search's share of the budget is spent\n");
        return;
    }
    int done = pl_agent_iterations(search->agent);
    if (p->mode == PL_PROGRESS_LINES && done > 0 &&
        pl_agent_curve(search->agent)[done - 1].best_step != p->shown_best) {
        char line[256];
        format_line(p, search, &pl_agent_curve(search->agent)[done - 1], line, sizeof line);
        fprintf(p->out, "%s\n", line);
    }
    char why[256];
    fprintf(p->out, "agent: %d iterations; stopped: %s\n", done,
            pl_progress_stop_text(search, why, sizeof why));
}

const char *pl_progress_stop_text(const pl_search *search, char *buf, size_t cap)
{
    int n = search->agent ? pl_agent_iterations(search->agent) : 0;
    const pl_agent_iteration *curve = n ? pl_agent_curve(search->agent) : NULL;
    switch (search->stopped) {
    case PL_SEARCH_STOP_CONVERGED: {
        double entropy = 0, above = 0;
        for (int i = n - PL_SEARCH_ENTROPY_WINDOW; i < n; i++) {
            entropy += curve[i].entropy / PL_SEARCH_ENTROPY_WINDOW;
            if (curve[i].best_step > 0) /* 0: no plan fit yet, no step to be near */
                above = fmax(above, curve[i].mean_step / curve[i].best_step - 1);
        }
        if (curve[n - 1].best_step <= 0) {
            snprintf(buf, cap, "converged (no plan fits after %d iterations; the policy's "
                     "entropy %.3f nats per decision)", n, entropy);
            break;
        }
        int since = n - 1;
        while (since > 0 && curve[since - 1].best_step == curve[n - 1].best_step)
            since--;
        snprintf(buf, cap, "converged (no better plan in the last %d iterations; the "
                 "policy's entropy %.3f nats per decision, its samples' mean step within "
                 "%.1f%% of the best)", n - 1 - since, entropy, 100 * above);
        break;
    }
    case PL_SEARCH_STOP_ITERATIONS:
        snprintf(buf, cap, "the iterations asked for are done");
        break;
    case PL_SEARCH_STOP_INTERRUPTED:
        snprintf(buf, cap, "interrupted");
        break;
    case PL_SEARCH_STOP_BUDGET:
    default:
        snprintf(buf, cap, "the search's share of the budget is spent");
        break;
    }
    return buf;
}

const char *pl_progress_skipped_text(const pl_search *search, char *buf, size_t cap)
{
    static const struct {
        unsigned bit;
        const char *text;
    } phases[] = {
        {PL_SEARCH_SKIPPED_BASELINES, "some baselines"},
        {PL_SEARCH_SKIPPED_MEASURING, "measuring the baselines"},
        {PL_SEARCH_SKIPPED_AGENT, "the agent (its start, or its imitation of the best "
                                  "baseline)"},
        {PL_SEARCH_SKIPPED_HEAD_TO_HEAD, "the final head-to-head measurement"},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof phases / sizeof *phases && used < cap; k++)
        if (search->skipped & phases[k].bit)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                                     phases[k].text);
    return buf;
}

void pl_progress_event(pl_progress *p, const pl_search_event *event)
{
    typedef void (*printer)(pl_progress *p, const pl_search_event *event);
    static const printer printers[] = {
        [PL_SEARCH_STARTED] = print_start,
        [PL_SEARCH_BASELINES_DONE] = print_baselines,
        [PL_SEARCH_RESUMED] = print_resumed,
        [PL_SEARCH_NOT_IMITATING] = print_not_imitating,
        [PL_SEARCH_ITERATION] = print_iteration,
        [PL_SEARCH_AGENT_DONE] = print_agent_done,
    };
    if (!p->quiet && (size_t)event->kind < sizeof printers / sizeof *printers &&
        printers[event->kind])
        printers[event->kind](p, event);
}
