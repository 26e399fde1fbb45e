/* The placement search's protocol (search.h): the baselines, the agent's start and its
 * iterations, the agent's rows and the final choice. What it measures on the executor is
 * in search_measure.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "baseline_impl.h"
#include "bound.h"
#include "clock.h"
#include "grow.h"
#include "search_impl.h"

/* The checkpoint is saved this often during the search (seconds), and the agent's best
 * plan measured when new: often enough that Ctrl-C loses little, rarely enough that the
 * measurements leave the search most of the machine. */
enum { SAVE_EVERY = 10, MEASURE_EVERY = 5 };

void pl_search_options_default(pl_search_options *o)
{
    *o = (pl_search_options){.budget = 60, .seed = 1, .samples = 32, .measure_steps = 3};
}

void pl_search__tell(const pl_search_call *call, pl_search_event event)
{
    event.search = call->result;
    if (call->progress)
        call->progress(call->context, &event);
}

static void tell_row(const pl_search_call *call, pl_search_event_kind kind,
                     const pl_search_row *row)
{
    pl_search__tell(call, (pl_search_event){.kind = kind,
                                            .row = (int)(row - call->result->rows)});
}

static void tell_kind(const pl_search_call *call, pl_search_event_kind kind)
{
    pl_search__tell(call, (pl_search_event){.kind = kind, .row = -1});
}

static pl_search_row *add_row(pl_search *s, const char *name, pl_plan *plan, bool baseline)
{
    if (s->n_rows == PL_SEARCH_MAX_ROWS) {
        pl_plan_free(plan);
        return NULL;
    }
    pl_search_row *row = &s->rows[s->n_rows++];
    memset(row, 0, sizeof *row);
    snprintf(row->name, sizeof row->name, "%s", name);
    row->plan = plan;
    row->baseline = baseline;
    row->misfit.device = -1;
    return row;
}

/* When the agent's share of the budget ends (pl_now() time; INFINITY: no budget): what
 * follows needs the rest, at least what the head-to-head takes (on paced-8 a step can
 * take a second) and a program of the graph for the chosen plan's outputs (about the
 * slowest placing: seconds on a large graph), but the search keeps half. */
static double agent_stop(const pl_search_call *call)
{
    const pl_search_options *o = call->options;
    double stop = INFINITY;
    if (o->budget > 0) {
        double after = call->result->slowest_placing +
                       (call->executor ? pl_search__head_to_head_seconds(call) : 0);
        double share = fmax(fmin(0.8 * o->budget, o->budget - after), 0.5 * o->budget);
        stop = call->start + share;
    }
    if (o->search_seconds > 0)
        stop = fmin(stop, call->start + call->result->agent_started + o->search_seconds);
    return stop;
}

/* Whether the search must wrap up: interrupted, or the agent's share of the budget spent
 * (the head-to-head's estimate taken as it stands). */
static bool wrap_up(const pl_search_call *call)
{
    return pl_search__interrupted(call) || pl_now() >= agent_stop(call);
}

/* The baselines after `b` as rows that say they were skipped for time. */
static void skip_baselines(pl_search_call *call, int b)
{
    for (; b < PL_BASELINE_COUNT; b++) {
        pl_search_row *row = add_row(call->result, pl_baseline_name((pl_baseline)b), NULL,
                                     true);
        if (!row)
            return;
        row->skipped = true;
        snprintf(row->failure, sizeof row->failure, "not placed: the budget was spent");
        tell_row(call, PL_SEARCH_BASELINE, row);
    }
    call->result->skipped |= PL_SEARCH_SKIPPED_BASELINES;
}

/* The placers' view of graph, costs and memory: built for the first baseline tried and
 * read by them all; a failure to build it is every baseline's. */
typedef struct baseline_view {
    pl_placer placer;
    bool built;
    pl_status status;
    pl_error failure;
} baseline_view;

static pl_plan *place_one(pl_search_call *call, baseline_view *view, pl_baseline b,
                          pl_simulation *sim, pl_error *failure)
{
    if (!view->built) {
        pl_error_init(&view->failure, NULL);
        view->status = pl_placer_init(&view->placer, call->graph, call->cluster, call->model,
                                      call->options->seed, &view->failure);
        view->placer.no_replicas = call->options->no_replicas;
        view->built = true;
    }
    if (view->status != PL_OK) {
        *failure = view->failure;
        return NULL;
    }
    return pl_placer_place(&view->placer, b, sim, failure);
}

/* Every baseline, placed and simulated, in baseline.h's order; once interrupted or out
 * of time, only until one fits, so that the search has a plan to give back (the rest
 * are rows that say they were skipped, unless interrupted). */
static pl_status place_baselines(pl_search_call *call)
{
    bool any_fits = false;
    baseline_view view = {.status = PL_OK};
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        /* not one that would end past the share, judged by the slowest so far: on a
           large graph one placing takes a good part of the budget */
        if (any_fits &&
            (wrap_up(call) || pl_now() + call->result->slowest_placing >= agent_stop(call))) {
            if (!pl_search__interrupted(call))
                skip_baselines(call, b);
            break;
        }
        pl_error failure;
        pl_error_init(&failure, NULL);
        bool replicated = b == PL_BASELINE_DATA_PARALLEL || b == PL_BASELINE_HYBRID;
        pl_plan *plan = NULL;
        pl_simulation sim;
        pl_baseline_misfit misfit = {.device = -1};
        if (replicated && call->options->no_replicas)
            pl_error_set(&failure, PL_EINPUT, NULL, "not tried: no replicas (--no-replicas)");
        else {
            double started = pl_now();
            plan = place_one(call, &view, (pl_baseline)b, &sim, &failure);
            misfit = view.placer.misfit;
            call->result->slowest_placing =
                fmax(call->result->slowest_placing, pl_now() - started);
        }
        pl_search_row *row = add_row(call->result, pl_baseline_name((pl_baseline)b), plan,
                                     true);
        if (!row)
            break;
        row->misfit = misfit;
        if (!plan) {
            snprintf(row->failure, sizeof row->failure, "%s", failure.text);
        } else { /* placing it simulated it, as pl_search__simulate_row would */
            row->sim = sim;
            row->fits = sim.oom_device < 0;
        }
        any_fits = any_fits || row->fits;
        tell_row(call, PL_SEARCH_BASELINE, row);
    }
    pl_placer_clear(&view.placer);
    return PL_OK;
}

/* The row of the fitting baseline with the least simulated step (the first of equals)
 * among those not measured yet, or NULL. */
static pl_search_row *fastest_simulated(pl_search *s)
{
    pl_search_row *fastest = NULL;
    for (int r = 0; r < s->n_rows; r++) {
        pl_search_row *row = &s->rows[r];
        if (row->baseline && row->plan && row->fits && row->measured == 0 &&
            (!fastest || row->sim.step_seconds < fastest->sim.step_seconds))
            fastest = row;
    }
    return fastest;
}

/* The executor measures the three best by simulation (a paced step can take a second);
 * the best baseline is the fastest measured. Simulating only, it is the fastest
 * simulated. */
static pl_status choose_baseline(pl_search_call *call)
{
    pl_search *s = call->result;
    if (!call->executor) {
        pl_search_row *fastest = fastest_simulated(s);
        s->best_baseline = fastest ? (int)(fastest - s->rows) : -1;
        return PL_OK;
    }
    for (int round = 0; round < 3 && !pl_search__interrupted(call); round++) {
        pl_search_row *next = fastest_simulated(s);
        if (!next)
            break;
        if (wrap_up(call)) { /* the best baseline by simulation, unless one was measured */
            s->skipped |= PL_SEARCH_SKIPPED_MEASURING;
            if (s->best_baseline < 0)
                s->best_baseline = (int)(next - s->rows);
            break;
        }
        if (pl_search__measure_row(call, next) != PL_OK)
            return call->err->status;
        if (next->measured > 0 && (s->best_baseline < 0 ||
                                   next->measured < s->rows[s->best_baseline].measured))
            s->best_baseline = (int)(next - s->rows);
        tell_row(call, PL_SEARCH_MEASURED, next);
    }
    return PL_OK;
}

static pl_agent_options agent_options(const pl_search_options *o)
{
    pl_agent_options ao;
    pl_agent_options_default(&ao);
    ao.seed = o->seed;
    ao.samples = o->samples;
    ao.max_fold = o->no_fold ? 1 : ao.max_fold;
    ao.defer = !o->no_defer;
    ao.sweep = !o->no_sweep;
    ao.replicate = !o->no_replicas;
    ao.refine_every = o->no_refine ? 0 : ao.refine_every;
    ao.learn = !o->no_learning;
    if (o->policy) {
        ao.hidden = o->policy->hidden;
        ao.rounds = o->policy->rounds;
        ao.groups = o->policy->groups;
    }
    if (o->zero_shot)
        ao.train = false;
    return ao;
}

/* Clears a recorded error, keeping its source. */
static void forget_error(pl_error *err)
{
    pl_error kept = *err;
    pl_error_init(err, kept.source);
}

/* The baseline the policy imitates: the best one when it is of one replica, else the
 * fitting such baseline with the least simulated step (the first of equals), or
 * -1. An action places one replica: imitating a replicated plan would teach replica 0's
 * placement alone (data-parallel's: the whole model on one device), a slow plan by itself. */
static int imitated_row(const pl_search *s)
{
    if (s->best_baseline < 0)
        return -1;
    const pl_plan *best = s->rows[s->best_baseline].plan;
    if (best->replicas == 1)
        return s->best_baseline;
    int imitated = -1;
    for (int r = 0; r < s->n_rows; r++) {
        const pl_search_row *row = &s->rows[r];
        if (row->baseline && row->plan && row->fits && row->plan->replicas == 1 &&
            (imitated < 0 || row->sim.step_seconds < s->rows[imitated].sim.step_seconds))
            imitated = r;
    }
    return imitated;
}

/* A new agent, offered every baseline that fits and imitating the best of one
 * replica: the policy starts from what works, and the best plans include the baselines. */
static pl_status start_new_agent(pl_search_call *call, const pl_agent_options *ao)
{
    pl_search *s = call->result;
    if (!(s->agent = pl_agent_new(call->graph, call->cluster, call->model, ao, call->err)))
        return call->err->status;
    double stop = agent_stop(call);
    pl_agent_set_deadline(s->agent, isfinite(stop) ? stop : 0, call->interrupt);
    const pl_search_options *o = call->options;
    if (o->policy && pl_agent_start_from(s->agent, o->policy, call->err) != PL_OK)
        return call->err->status;
    if (o->zero_shot)
        return PL_OK;
    for (int r = 0; r < s->n_rows; r++) {
        if (!s->rows[r].plan || !s->rows[r].fits)
            continue;
        if (pl_agent_out_of_time(s->agent))
            break;
        if (pl_agent_offer(s->agent, s->rows[r].plan, call->err) != PL_OK)
            return call->err->status;
    }
    int imitated = imitated_row(s);
    if (pl_agent_out_of_time(s->agent)) {
        if (!pl_search__interrupted(call))
            s->skipped |= PL_SEARCH_SKIPPED_AGENT;
        return PL_OK;
    }
    if (imitated < 0 || pl_agent_imitate(s->agent, s->rows[imitated].plan, call->err) == PL_OK) {
        if (imitated >= 0 && pl_agent_out_of_time(s->agent) && !pl_search__interrupted(call))
            s->skipped |= PL_SEARCH_SKIPPED_AGENT; /* the imitation cut short */
        return PL_OK;
    }
    if (call->err->status != PL_EINPUT)
        return call->err->status;
    /* a shape the policy cannot choose: it learns from the offered plans alone */
    pl_search__tell(call, (pl_search_event){.kind = PL_SEARCH_NOT_IMITATING,
                                            .row = imitated,
                                            .text = call->err->text});
    forget_error(call->err);
    return PL_OK;
}

/* A new agent after the baselines; one resumed was read before them (read_resumed). */
static pl_status start_agent(pl_search_call *call)
{
    if (call->result->agent) {
        tell_kind(call, PL_SEARCH_RESUMED);
        return PL_OK;
    }
    pl_agent_options ao = agent_options(call->options);
    return start_new_agent(call, &ao);
}

/* The checkpoint to resume from, read before anything else runs: a bad one fails the
 * search before minutes of baselines and measurements. */
static pl_status read_resumed(pl_search_call *call)
{
    const pl_search_options *o = call->options;
    if (!o->resume)
        return PL_OK;
    pl_agent_options ao = agent_options(o);
    pl_search *s = call->result;
    s->agent = pl_agent_load(o->resume, call->graph, call->cluster, call->model, &ao,
                             call->err);
    if (!s->agent) {
        snprintf(call->err->source, sizeof call->err->source, "%s", o->resume);
        return call->err->status;
    }
    return PL_OK;
}

/* Saves the checkpoint unless a save failed before; a failure is kept and told, not
 * returned (search.h). */
static pl_status save_checkpoint(pl_search_call *call)
{
    pl_search *s = call->result;
    const char *path = call->options->checkpoint;
    if (!path || s->checkpoint_failure[0])
        return PL_OK;
    pl_error failure;
    pl_error_init(&failure, NULL);
    if (pl_agent_save(s->agent, path, &failure) == PL_OK)
        return PL_OK;
    if (failure.status == PL_ENOMEM) {
        *call->err = failure;
        return PL_ENOMEM;
    }
    snprintf(s->checkpoint_failure, sizeof s->checkpoint_failure, "%s", failure.text);
    pl_search__tell(call, (pl_search_event){.kind = PL_SEARCH_CHECKPOINT_FAILED, .row = -1,
                                            .text = s->checkpoint_failure});
    return PL_OK;
}

/* Whether the search has converged after its latest iteration (search.h): no better plan
 * for a while and a policy that draws the same plans. */
static bool converged(const pl_agent *agent)
{
    int n = pl_agent_iterations(agent);
    if (n < PL_SEARCH_STALE + PL_SEARCH_ENTROPY_WINDOW)
        return false;
    const pl_agent_iteration *curve = pl_agent_curve(agent);
    int stale = n / 3 > PL_SEARCH_STALE ? n / 3 : PL_SEARCH_STALE;
    if (stale >= n || curve[n - 1].best_step < curve[n - 1 - stale].best_step)
        return false;
    /* collapsed: the policy's choices are near certain, or those still open make no
       difference (every sample simulates within PL_SEARCH_SAME_STEP of the best plan) */
    double entropy = 0;
    bool same = true;
    for (int i = n - PL_SEARCH_ENTROPY_WINDOW; i < n; i++) {
        entropy += curve[i].entropy;
        same = same && curve[i].mean_step > 0 &&
               curve[i].mean_step <= (1 + PL_SEARCH_SAME_STEP) * curve[i].best_step;
    }
    return same || entropy / PL_SEARCH_ENTROPY_WINDOW < PL_SEARCH_COLLAPSED_ENTROPY;
}

/* Why the loop below would stop now, or -1 to go on. */
static int stop_reason(pl_search_call *call, double stop)
{
    const pl_search_options *o = call->options;
    const pl_agent *agent = call->result->agent;
    if (pl_search__interrupted(call))
        return PL_SEARCH_STOP_INTERRUPTED;
    if (o->iterations && pl_agent_iterations(agent) >= o->iterations)
        return PL_SEARCH_STOP_ITERATIONS;
    if (pl_now() >= stop)
        return PL_SEARCH_STOP_BUDGET;
    if (!o->run_to_budget && converged(agent))
        return PL_SEARCH_STOP_CONVERGED;
    return -1;
}

/* The agent's iterations, until a stop_reason; the checkpoint saved as it goes and at the
 * end. */
static pl_status iterate(pl_search_call *call)
{
    const pl_search_options *o = call->options;
    pl_agent *agent = call->result->agent;
    double last_measure = pl_now(), last_save = last_measure;
    uint64_t last_key = 0;
    double stop = agent_stop(call);
    int reason;
    while ((reason = stop_reason(call, stop)) < 0) {
        pl_agent_iteration it;
        if (pl_agent_iterate(agent, &it, call->err) != PL_OK)
            return call->err->status;
        pl_search *s = call->result;
        if (s->n_timed == 0)
            s->first_timed = it.iteration;
        if (!pl_grow(&s->iteration_at, &s->timed_cap, s->n_timed + 1, sizeof *s->iteration_at,
                     1024))
            return pl_error_set(call->err, PL_ENOMEM, NULL, "out of memory");
        s->iteration_at[s->n_timed++] = pl_now() - call->start;
        double now = pl_now();
        if (call->executor && now - last_measure > MEASURE_EVERY) {
            if (pl_search__measure_agent_best(call, &last_key) != PL_OK)
                return call->err->status;
            last_measure = pl_now();
        }
        if (o->checkpoint && now - last_save > SAVE_EVERY) {
            if (save_checkpoint(call) != PL_OK)
                return call->err->status;
            last_save = now;
        }
        pl_search__tell(call, (pl_search_event){.kind = PL_SEARCH_ITERATION, .row = -1,
                                                .iteration = it});
    }
    call->result->stopped = (pl_search_stop)reason;
    tell_kind(call, PL_SEARCH_AGENT_DONE);
    return save_checkpoint(call);
}

/* One of the agent's plans as row number *added + 1, unless it is a baseline's (already a
 * row) or the same as an agent's row before it (the same simulated step). */
static pl_status add_agent_row(pl_search_call *call, pl_plan *plan, int *added)
{
    pl_search *s = call->result;
    bool reshaped, refined, same = false;
    for (int r = 0; r < s->n_rows && !same; r++)
        same = !s->rows[r].baseline && s->rows[r].plan &&
               s->rows[r].plan->provenance.predicted_seconds ==
                   plan->provenance.predicted_seconds;
    if (same || !pl_agent_made(plan, &reshaped, &refined)) {
        pl_plan_free(plan);
        return PL_OK;
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
    pl_search_row *row = add_row(s, name, plan, false);
    if (!row)
        return PL_OK;
    row->reshaped = reshaped;
    row->refined = refined;
    return pl_search__simulate_row(call, row);
}

/* The agent's best plans from *k on, as rows, until *added reaches `want`. */
static pl_status add_best_rows(pl_search_call *call, int *k, int want, int *added)
{
    pl_agent *agent = call->result->agent;
    pl_status status = PL_OK;
    for (; *k < pl_agent_best_count(agent) && *added < want && status == PL_OK; ++*k) {
        pl_plan *plan = pl_agent_best_plan(agent, *k, call->err);
        status = plan ? add_agent_row(call, plan, added) : call->err->status;
    }
    return status;
}

/* The agent's two best distinct plans and its lead (its best plan of one replica not
 * refined: what the policy itself reached), or its third best when the lead is among them
 * or a baseline; when all its best are baselines', the best of one of its own origins. */
static pl_status add_agent_rows(pl_search_call *call)
{
    int added = 0, k = 0;
    pl_status status = add_best_rows(call, &k, PL_SEARCH_AGENT_ROWS - 1, &added);
    pl_plan *lead = status == PL_OK ? pl_agent_lead_plan(call->result->agent, NULL) : NULL;
    if (lead)
        status = add_agent_row(call, lead, &added);
    if (status == PL_OK)
        status = add_best_rows(call, &k, PL_SEARCH_AGENT_ROWS, &added);
    pl_agent *agent = call->result->agent;
    for (int o = 0; status == PL_OK && added == 0 && o < pl_agent_origin_count(agent); o++) {
        pl_plan *plan = pl_agent_origin_plan(agent, o, call->err);
        status = plan ? add_agent_row(call, plan, &added) : call->err->status;
    }
    return status;
}

/* What a row is compared by: its measured step, else (after every measured one) its
 * simulated step. */
static double choice_key(const pl_search_row *row)
{
    return row->measured > 0 ? row->measured : 1e9 + row->sim.step_seconds;
}

/* The fastest row that fits; after a head-to-head, only its contenders compare fairly. */
static void choose(pl_search *s)
{
    s->chosen = -1;
    for (int r = 0; r < s->n_rows; r++) {
        const pl_search_row *row = &s->rows[r];
        if (!row->plan || !row->fits || (s->head_to_head_rounds > 0 && !row->head_to_head))
            continue;
        if (s->chosen < 0 || choice_key(row) < choice_key(&s->rows[s->chosen]))
            s->chosen = r;
    }
    /* the choice rests on the chosen row's measurement and the best baseline's */
    const pl_search_row *chosen = s->chosen >= 0 ? &s->rows[s->chosen] : NULL;
    const pl_search_row *base = s->best_baseline >= 0 ? &s->rows[s->best_baseline] : NULL;
    s->choice_unstable = (chosen && chosen->measured > 0 && chosen->series.unstable) ||
                         (base && base->measured > 0 && base->series.unstable);
}

/* The agent's plans become rows, measured head to head with the best baseline unless
 * interrupted; then the choice, and the chosen plan's busy time per device. */
static pl_status finish(pl_search_call *call)
{
    if (call->result->agent && add_agent_rows(call) != PL_OK)
        return call->err->status;
    if (call->executor && !pl_search__interrupted(call) &&
        pl_search__head_to_head(call) != PL_OK)
        return call->err->status;
    choose(call->result);
    if (call->result->chosen >= 0)
        pl_search__measure_busy(call);
    return PL_OK;
}

static pl_status check_options(const pl_search_options *o, pl_error *err)
{
    if (!(o->budget >= 0) || o->iterations < 0 || !(o->search_seconds >= 0) ||
        (o->budget == 0 && o->iterations == 0))
        return pl_error_set(err, PL_EINPUT, NULL, "the search needs a budget (seconds, more "
                            "than 0) or a number of iterations");
    if (!o->simulate_only && o->measure_steps < 1)
        return pl_error_set(err, PL_EINPUT, NULL, "measure at least one step, not %d",
                            o->measure_steps);
    if (o->zero_shot && (o->no_learning || o->resume))
        return pl_error_set(err, PL_EINPUT, NULL, "a zero-shot search samples a policy as it "
                            "is: not with %s", o->no_learning ? "no learning" : "a resume");
    return PL_OK;
}

/* The protocol of search.h, step by step; the first failure stops it. */
static pl_status run(pl_search_call *call)
{
    pl_search *s = call->result;
    if (read_resumed(call) != PL_OK ||
        pl_step_lower_bound_parts(call->graph, call->cluster, call->model, &s->bound_parts,
                                  call->err) != PL_OK)
        return call->err->status;
    s->bound = s->bound_parts.seconds;
    /* the data do not change a step's time; synthetic data fit every model */
    if (!call->options->simulate_only &&
        !(call->executor = pl_executor_new_with_data(call->graph, call->cluster, "synthetic",
                                                     call->err)))
        return call->err->status;
    if (call->executor)
        pl_executor_set_interrupt(call->executor, call->interrupt);
    /* over processes, the other ranks on this machine would read as others' work */
    call->reads_load = call->executor && !call->options->comm;
    call->executor_started = pl_machine_load_read();
    if (call->executor && call->options->comm &&
        (pl_executor_set_comm(call->executor, call->options->comm, call->err) != PL_OK ||
         pl_executor_lead(call->executor, call->err) != PL_OK))
        return call->err->status;
    tell_kind(call, PL_SEARCH_STARTED);
    if (place_baselines(call) != PL_OK || choose_baseline(call) != PL_OK)
        return call->err->status;
    tell_kind(call, PL_SEARCH_BASELINES_DONE);
    s->agent_started = pl_now() - call->start;
    if (!s->agent && s->best_baseline >= 0 && wrap_up(call) && !pl_search__interrupted(call)) {
        /* no time for the agent: the best baseline is the plan */
        s->skipped |= PL_SEARCH_SKIPPED_AGENT;
        s->stopped = PL_SEARCH_STOP_BUDGET;
        tell_kind(call, PL_SEARCH_AGENT_DONE);
        return finish(call);
    }
    if (start_agent(call) != PL_OK || iterate(call) != PL_OK || finish(call) != PL_OK)
        return call->err->status;
    return PL_OK;
}

pl_search *pl_search_run(const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, const pl_search_options *options,
                         pl_search_progress progress, void *context,
                         const volatile sig_atomic_t *interrupt, pl_error *err)
{
    /* a record of our own, so that every step may fill it whether or not the caller cares */
    pl_error error;
    pl_error_init(&error, err ? err->source : NULL);
    pl_search_call call = {.graph = graph, .cluster = cluster, .model = model,
                           .options = options, .progress = progress, .context = context,
                           .interrupt = interrupt, .err = &error,
                           .start = options->start > 0 ? options->start : pl_now()};
    pl_status status = check_options(options, &error);
    if (status == PL_OK && !(call.result = calloc(1, sizeof *call.result)))
        status = pl_error_set(&error, PL_ENOMEM, NULL, "out of memory");
    if (status == PL_OK) {
        call.result->chosen = call.result->best_baseline = -1;
        call.result->load_worst = -1;
        status = run(&call);
    }
    if (status == PL_OK) {
        call.result->elapsed = pl_now() - call.start;
        call.result->interrupted = pl_search__interrupted(&call);
    }
    pl_executor_free(call.executor);
    if (status != PL_OK) {
        pl_search_free(call.result);
        if (err)
            *err = error;
        return NULL;
    }
    return call.result;
}

void pl_search_free(pl_search *s)
{
    if (!s)
        return;
    for (int r = 0; r < s->n_rows; r++)
        pl_plan_free(s->rows[r].plan);
    pl_agent_free(s->agent);
    free(s->iteration_at);
    free(s->measurements);
    free(s->measured_starts);
    free(s->measured_ends);
    free(s);
}
