/* What the placement search (search.h) simulates and measures: a row's plan in the
 * simulator and on the executor, the agent's best plan as it searches, the final
 * head-to-head of the contenders and the chosen plan's busy time per device. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "grow.h"
#include "search_impl.h"

pl_status pl_search__simulate_row(pl_search_call *call, pl_search_row *row)
{
    pl_program *p = pl_program_new(call->graph, call->cluster, row->plan, call->err);
    pl_status status = p ? pl_simulate(p, call->cluster, call->model, &row->sim, NULL, NULL,
                                       call->err)
                         : call->err->status;
    pl_program_free(p);
    if (status == PL_OK)
        row->fits = row->sim.oom_device < 0;
    return status;
}

/* A step cut short by the interrupt (executor.h) is no failure: its error is forgotten
 * (keeping the source) and true returned; the measurement it was part of measured
 * nothing. */
static bool cut_short(pl_search_call *call, pl_status status)
{
    if (status != PL_EINTERRUPTED)
        return false;
    pl_error kept = *call->err;
    pl_error_init(call->err, kept.source);
    return true;
}

/* Whether `steps` steps of `step_seconds` each (by simulation) may run: they are short, or
 * end within the budget, or there is no budget. */
static bool within_budget(const pl_search_call *call, int steps, double step_seconds)
{
    double budget = call->options->budget, seconds = steps * step_seconds;
    return !(budget > 0) || seconds <= PL_SEARCH_SHORT_SECONDS ||
           pl_now() + seconds <= call->start + budget;
}

/* How long a step of the row's plan is expected to take: a large graph's step costs
 * more than the simulator says (the executor's work per task), so a step measured before
 * counts, the row's own or else the most the measured rows exceeded their simulation by. */
static double expected_step(const pl_search_call *call, const pl_search_row *row)
{
    if (row->measured > 0)
        return fmax(row->measured, row->sim.step_seconds);
    double ratio = 1;
    const pl_search *s = call->result;
    for (int r = 0; r < s->n_rows; r++)
        if (s->rows[r].measured > 0 && s->rows[r].sim.step_seconds > 0)
            ratio = fmax(ratio, s->rows[r].measured / s->rows[r].sim.step_seconds);
    return ratio * row->sim.step_seconds;
}

/* What the plan file says of where its plan came from. */
static void note_measured(pl_search_row *row)
{
    row->plan->provenance.measured_seconds = row->measured;
    row->plan->provenance.predicted_seconds = row->sim.step_seconds;
}

pl_status pl_search__measure_row(pl_search_call *call, pl_search_row *row)
{
    pl_fit fit;
    pl_measurement m;
    int steps = 1 + call->options->measure_steps;
    if (!row->plan || !row->fits || !within_budget(call, steps, expected_step(call, row)))
        return PL_OK;
    if (pl_executor_set_plan(call->executor, row->plan, &fit, call->err) != PL_OK)
        return call->err->status;
    if (!fit.fits) {
        row->fits = false;
        return PL_OK;
    }
    pl_search__load_before(call);
    pl_status status = pl_executor_measure(call->executor, 1, call->options->measure_steps, &m,
                                           call->err);
    if (cut_short(call, status))
        return PL_OK;
    if (status != PL_OK)
        return status;
    for (int r = 0; r < m.rounds; r++)
        pl_search__load_during(call, &m.round_load[r]);
    row->measured = m.series.median;
    row->series = m.series;
    row->measure_rounds = m.rounds;
    row->load = call->reads_load ? m.load : (pl_machine_load){0};
    note_measured(row);
    return PL_OK;
}

/* A plan's placement and shape as one number, to tell a new best plan from the last. */
static uint64_t plan_key(const pl_plan *plan)
{
    uint64_t key = 0;
    for (int i = 0; i < plan->n_ops; i++)
        key = key * 1000003u + (uint64_t)(plan->device[i] * 16 + plan->stage[i]);
    return key * 31 + (uint64_t)plan->micro_batches;
}

pl_status pl_search__measure_agent_best(pl_search_call *call, uint64_t *last_key)
{
    pl_search *s = call->result;
    pl_plan *plan = pl_agent_best_plan(s->agent, 0, call->err);
    if (!plan)
        return PL_OK;
    uint64_t key = plan_key(plan);
    if (key == *last_key) {
        pl_plan_free(plan);
        return PL_OK;
    }
    *last_key = key;
    pl_search_row row = {.plan = plan};
    pl_status status = pl_search__simulate_row(call, &row);
    if (status == PL_OK)
        status = pl_search__measure_row(call, &row);
    if (status == PL_OK && row.measured > 0) {
        /* an unstable measurement measured the machine as much as the plan */
        if (!row.series.unstable)
            pl_agent_correct(s->agent, row.sim.step_seconds, row.measured);
        if (s->agent_measured == 0 || row.measured < s->agent_measured)
            s->agent_measured = row.measured;
        /* a point of the history lost to memory loses nothing else */
        if (pl_grow(&s->measurements, &s->measurements_cap, s->n_measurements + 1,
                    sizeof *s->measurements, 16))
            s->measurements[s->n_measurements++] = (pl_search_measurement){
                .iteration = pl_agent_iterations(s->agent), .at = pl_now() - call->start,
                .seconds = row.measured};
        pl_search__tell(call, (pl_search_event){.kind = PL_SEARCH_AGENT_MEASURED, .row = -1,
                                                .measured = row.measured});
    }
    pl_plan_free(plan);
    return status;
}

enum { MIN_ROUNDS = 3, MAX_ROUNDS = 9 };

double pl_search__head_to_head_seconds(const pl_search_call *call)
{
    const pl_search *s = call->result;
    if (s->best_baseline < 0)
        return 0;
    const pl_search_row *base = &s->rows[s->best_baseline];
    double step = fmax(base->measured, base->sim.step_seconds);
    return 1.25 * MIN_ROUNDS * 2 * (1 + PL_SEARCH_AGENT_ROWS) * step;
}

/* One round: each contender's plan set, one unmeasured step (the caches the other plan
 * filled, arenas grown), then one measured. */
static pl_status take_turns(pl_search_call *call, const int *who, int n, double *steps,
                            int round)
{
    for (int k = 0; k < n; k++) {
        pl_fit fit;
        float loss;
        if (pl_executor_set_plan(call->executor, call->result->rows[who[k]].plan, &fit,
                                 call->err) != PL_OK ||
            pl_executor_step(call->executor, 0, &loss, call->err) != PL_OK ||
            pl_executor_step(call->executor, 0, &loss, call->err) != PL_OK)
            return call->err->status;
        steps[k * MAX_ROUNDS + round] = pl_executor_step_seconds(call->executor);
    }
    return PL_OK;
}

/* Whether some contender's steps so far are unstable (measure.h); false when they cannot
 * be examined (no memory), as nothing then says they are. */
static bool any_unstable(const int *who, int n, const double *steps, int rounds)
{
    bool unstable = false;
    for (int k = 0; k < n && !unstable; k++) {
        pl_series series;
        unstable = pl_series_examine(steps + (size_t)k * MAX_ROUNDS, rounds, &series, NULL) ==
                       PL_OK && series.unstable;
    }
    return unstable;
}

/* The contenders' step series become their measurements: the medians, and their
 * spreads and stability; the machine's load during the rounds is every contender's. */
static pl_status keep_series(pl_search_call *call, const int *who, int n, double *steps,
                             int rounds, const pl_machine_load *load)
{
    for (int k = 0; k < n; k++) {
        pl_search_row *row = &call->result->rows[who[k]];
        if (pl_series_examine(steps + (size_t)k * MAX_ROUNDS, rounds, &row->series,
                              call->err) != PL_OK)
            return call->err->status;
        row->measured = row->series.median;
        row->measure_rounds = 1;
        note_measured(row);
        row->head_to_head = true;
        row->load = *load;
        if (!row->baseline && !row->series.unstable)
            pl_agent_correct(call->result->agent, row->sim.step_seconds, row->measured);
    }
    call->result->head_to_head_rounds = rounds;
    return PL_OK;
}

/* The best measured baseline and the agent's plans, measured taking turns step by step:
 * measurements minutes apart drift with the machine, and the final choice compares plans
 * within that drift. At least MIN_ROUNDS rounds (each while it is short or ends within the
 * budget), at most MAX_ROUNDS, as many as end within the budget less what follows them
 * (the chosen plan's busy times and drawings), and more while some
 * contender's steps are unstable (measure.h) and a round is short or ends within the
 * budget; interrupted before MIN_ROUNDS, nothing was compared fairly and the earlier
 * measurements stand. */
pl_status pl_search__head_to_head(pl_search_call *call)
{
    const pl_search *s = call->result;
    int who[PL_SEARCH_MAX_ROWS], n = 0;
    for (int r = 0; r < s->n_rows; r++)
        if (r == s->best_baseline || (!s->rows[r].baseline && s->rows[r].fits))
            who[n++] = r;
    double round_seconds = 0; /* two steps of each contender; then what a round took */
    double longest_step = 0;
    for (int k = 0; k < n; k++) {
        double step = expected_step(call, &s->rows[who[k]]);
        round_seconds += 2 * step;
        longest_step = fmax(longest_step, step);
    }
    if (n < 2)
        return PL_OK;
    double *steps = malloc((size_t)n * MAX_ROUNDS * sizeof *steps);
    if (!steps)
        return pl_error_set(call->err, PL_ENOMEM, NULL, "out of memory");
    /* rounds past the least end early enough for what follows them: a step of the chosen
       plan for its busy times, and its program built twice (that step, and the drawings) */
    double rounds_end = call->start + call->options->budget - longest_step -
                        2 * s->slowest_placing;
    int rounds = 0;
    pl_status status = PL_OK;
    pl_machine_load load = {0}; /* over the rounds; unknown unless read */
    pl_search__load_before(call);
    while (status == PL_OK && rounds < MAX_ROUNDS && !pl_search__interrupted(call) &&
           (rounds < MIN_ROUNDS ? within_budget(call, 1, round_seconds)
                                : pl_now() + round_seconds <= rounds_end ||
                                      (within_budget(call, 1, round_seconds) &&
                                       any_unstable(who, n, steps, rounds)))) {
        double round_start = pl_now();
        pl_machine_cpu before = pl_machine_load_read();
        status = take_turns(call, who, n, steps, rounds++);
        pl_machine_cpu after = pl_machine_load_read();
        round_seconds = fmax(round_seconds, pl_now() - round_start);
        if (cut_short(call, status)) {
            rounds--; /* not a whole round */
            status = PL_OK;
            break;
        }
        pl_machine_load round_load = pl_machine_load_between(&before, &after);
        if (status == PL_OK && call->reads_load) {
            pl_machine_load_add(&load, &round_load);
            pl_search__load_during(call, &round_load);
        }
        if (status == PL_OK)
            pl_search__tell(call, (pl_search_event){.kind = PL_SEARCH_HEAD_TO_HEAD,
                                                    .row = -1, .round = rounds});
    }
    if (status == PL_OK && rounds >= MIN_ROUNDS)
        status = keep_series(call, who, n, steps, rounds, &load);
    else if (status == PL_OK && !pl_search__interrupted(call))
        call->result->skipped |= PL_SEARCH_SKIPPED_HEAD_TO_HEAD;
    free(steps);
    return status;
}

void pl_search__measure_busy(pl_search_call *call)
{
    pl_search *s = call->result;
    const pl_search_row *chosen = &s->rows[s->chosen];
    pl_fit fit;
    float loss;
    /* from its last step; a failure here leaves the busy times unknown, not the search
       failed. Setting the plan builds its program again: about a placing's time. */
    if (!call->executor || !(chosen->measured > 0) ||
        !within_budget(call, 1, expected_step(call, chosen) + s->slowest_placing) ||
        pl_executor_set_plan(call->executor, chosen->plan, &fit, NULL) != PL_OK || !fit.fits ||
        pl_executor_step(call->executor, 0, &loss, NULL) != PL_OK || /* interrupted too */
        pl_executor_interrupted(call->executor)) /* another rank's part cut short */
        return;
    const pl_program *p = pl_executor_program(call->executor);
    const double *starts = pl_executor_task_starts(call->executor);
    const double *ends = pl_executor_task_ends(call->executor);
    for (int t = 0; t < p->n_tasks; t++)
        if (p->tasks[t].resource < p->n_devices)
            s->measured_busy[p->tasks[t].resource] += ends[t] - starts[t];
    s->measured_busy_step = pl_executor_step_seconds(call->executor);
    /* the task times kept for a picture of the step; without memory, no picture */
    s->measured_starts = malloc((size_t)p->n_tasks * sizeof *s->measured_starts + 1);
    s->measured_ends = malloc((size_t)p->n_tasks * sizeof *s->measured_ends + 1);
    if (s->measured_starts && s->measured_ends) {
        memcpy(s->measured_starts, starts, (size_t)p->n_tasks * sizeof *starts);
        memcpy(s->measured_ends, ends, (size_t)p->n_tasks * sizeof *ends);
        s->measured_tasks = p->n_tasks;
    }
}
