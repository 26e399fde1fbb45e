/* The agent's learning loop: draw plans from the policy, simulate them on threads, reward
 * them, take a policy-gradient step with Adam, and keep the best plans seen. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "clock.h"
#include "hash.h"
#include "program.h"
#include "simulate.h"

/* 16,384 plans (280 KiB); 300 iterations of lstm_lm draw 2,078 distinct ones */
#define STEP_MEMO_LOG2_SLOTS 14

void pl_agent_options_default(pl_agent_options *o)
{
    *o = (pl_agent_options){.seed = 1, .samples = 32, .groups = 16, .hidden = 32,
                            .rounds = 2, .lr = 0.005, .entropy = 0.01, .threads = 2,
                            .imitation_steps = 200, .epochs = 4,
                            .anchor = 1.0, .max_fold = PL_POLICY_MAX_FOLD, .defer = true,
                            .sweep = true, .replicate = true, .refine_every = 20,
                            .refine_proposals = 1000,
                            .learn = true, .train = true};
}

static pl_status check_options(const pl_agent_options *o, pl_error *err)
{
    if (o->samples < 2 || o->samples > 4096)
        return pl_error_set(err, PL_EINPUT, NULL, "samples per iteration must be 2 to 4096");
    if (o->groups < 1 || o->groups > PL_AGENT_MAX_GROUPS)
        return pl_error_set(err, PL_EINPUT, NULL, "groups must be 1 to %d", PL_AGENT_MAX_GROUPS);
    if (o->hidden < 1 || o->hidden > 1024 || o->rounds < 0 || o->rounds > PL_POLICY_MAX_ROUNDS)
        return pl_error_set(err, PL_EINPUT, NULL, "hidden must be 1 to 1024, rounds 0 to %d",
                            PL_POLICY_MAX_ROUNDS);
    if (!(o->lr > 0) || !(o->entropy >= 0) || o->threads < 1 || o->threads > 64 ||
        o->imitation_steps < 0 || o->epochs < 1 || o->epochs > 100 || !(o->anchor >= 0) ||
        o->refine_every < 0 || o->refine_proposals < 0)
        return pl_error_set(err, PL_EINPUT, NULL, "invalid learning options");
    if (o->max_fold < 1 || o->max_fold > PL_POLICY_MAX_FOLD)
        return pl_error_set(err, PL_EINPUT, NULL, "the fold must be 1 to %d", PL_POLICY_MAX_FOLD);
    return PL_OK;
}

/* Simulated step of a plan; *fits false when a device runs out of memory. A plan the
 * program rejects is an error of ours: the agent only makes valid plans. Only the rewrite
 * of split ops may refuse a valid plan (a value split into more groups than it handles,
 * split_graph.h), and such a plan counts as one that does not fit. */
pl_status pl_agent_simulate(const pl_agent *a, const pl_plan *plan, double *step,
                            bool *fits, pl_error *err)
{
    pl_error refused;
    pl_error_init(&refused, NULL);
    bool splits = pl_plan_rewrites_graph(plan);
    pl_program *program = pl_program_new(a->graph, a->cluster, plan, splits ? &refused : err);
    if (!program && splits && refused.status == PL_EINPUT) {
        *step = INFINITY;
        *fits = false;
        return PL_OK;
    }
    if (!program && splits && err)
        *err = refused;
    if (!program)
        return err ? err->status : PL_EINTERNAL;
    pl_simulation sim;
    pl_status status = pl_simulate(program, a->cluster, a->model, &sim, NULL, NULL, err);
    pl_program_free(program);
    *step = sim.step_seconds;
    *fits = sim.oom_device < 0;
    return status;
}

pl_agent *pl_agent_alloc(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                         const pl_agent_options *o, pl_error *err)
{
    if (check_options(o, err) != PL_OK)
        return NULL;
    if (g->n_forward_ops < 1) {
        pl_error_set(err, PL_EINPUT, NULL, "the model has no ops to place");
        return NULL;
    }
    pl_agent *a = calloc(1, sizeof *a);
    if (!a) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    a->graph = g;
    a->cluster = c;
    a->model = m;
    a->options = *o;
    a->policy_best = INFINITY;
    if (pl_policy_init(&a->policy, g, c, m, o, err) != PL_OK) {
        pl_agent_free(a);
        return NULL;
    }
    size_t n = (size_t)a->policy.layout.n;
    a->adam_m = calloc(n, sizeof *a->adam_m);
    a->adam_v = calloc(n, sizeof *a->adam_v);
    a->grad = calloc(n, sizeof *a->grad);
    a->actions = pl_actions_new(&a->policy, o->samples + 1); /* + the anchor */
    a->plans = calloc((size_t)o->samples, sizeof *a->plans);
    a->steps = calloc((size_t)o->samples, sizeof *a->steps);
    a->fits = calloc((size_t)o->samples, sizeof *a->fits);
    a->pending = calloc((size_t)o->samples, sizeof *a->pending);
    a->weights = calloc((size_t)o->samples + 1, sizeof *a->weights);
    a->advantage = calloc((size_t)o->samples + 1, sizeof *a->advantage);
    a->logp = calloc((size_t)o->samples + 1, sizeof *a->logp);
    a->logp_old = calloc((size_t)o->samples + 1, sizeof *a->logp_old);
    bool ok = a->adam_m && a->adam_v && a->grad && a->actions && a->plans && a->steps &&
              a->fits && a->pending && a->weights && a->advantage && a->logp && a->logp_old;
    for (int s = 0; ok && s < o->samples; s++)
        ok = (a->plans[s] = pl_plan_new(g, err)) != NULL;
    for (int k = 0; ok && k < PL_AGENT_MAX_BEST; k++)
        ok = (a->best[k].plan = pl_plan_new(g, err)) != NULL;
    ok = ok && (a->swept = pl_plan_new(g, err)) != NULL;
    ok = ok && (a->lead.plan = pl_plan_new(g, err)) != NULL;
    for (int k = 0; ok && k < PL_AGENT_MAX_ORIGINS; k++)
        ok = (a->origins[k].plan = pl_plan_new(g, err)) != NULL;
    ok = ok && pl_step_memo_init(&a->memo, STEP_MEMO_LOG2_SLOTS);
    if (!ok) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_agent_free(a);
        return NULL;
    }
    return a;
}

pl_agent *pl_agent_new(const pl_graph *g, const pl_cluster *c, const pl_cost_model *m,
                       const pl_agent_options *o, pl_error *err)
{
    pl_agent *a = pl_agent_alloc(g, c, m, o, err);
    if (!a)
        return NULL;
    /* rewards are relative to every op on the first device: scale-free across models */
    bool fits;
    if (pl_agent_simulate(a, a->best[0].plan, &a->reference, &fits, err) != PL_OK) {
        pl_agent_free(a);
        return NULL;
    }
    if (!(a->reference > 0))
        a->reference = 1e-3;
    return a;
}

void pl_agent_free(pl_agent *a)
{
    if (!a)
        return;
    pl_policy_clear(&a->policy);
    free(a->adam_m);
    free(a->adam_v);
    free(a->grad);
    pl_actions_free(a->actions, a->options.samples + 1);
    for (int s = 0; a->plans && s < a->options.samples; s++)
        pl_plan_free(a->plans[s]);
    free(a->plans);
    free(a->steps);
    free(a->fits);
    free(a->pending);
    pl_step_memo_clear(&a->memo);
    free(a->weights);
    free(a->advantage);
    free(a->logp);
    free(a->logp_old);
    for (int k = 0; k < PL_AGENT_MAX_BEST; k++)
        pl_plan_free(a->best[k].plan);
    pl_plan_free(a->swept);
    pl_plan_free(a->lead.plan);
    for (int k = 0; k < PL_AGENT_MAX_ORIGINS; k++)
        pl_plan_free(a->origins[k].plan);
    free(a->curve);
    free(a);
}

/* ---- the best plans ---------------------------------------------------------------------- */

static uint64_t plan_key(const pl_plan *p)
{
    uint64_t h = pl_hash_bytes(PL_HASH_INIT, p->device,
                               (size_t)p->replicas * (size_t)p->n_ops * sizeof *p->device);
    h = pl_hash_bytes(h, p->stage, (size_t)p->n_ops * sizeof *p->stage);
    h = pl_hash_bytes(h, p->split, (size_t)p->n_ops * sizeof *p->split);
    h = pl_hash_bytes(h, p->recompute, (size_t)p->n_ops * sizeof *p->recompute);
    for (int r = 0; r < p->replicas; r++) /* the shards' devices, of split ops only */
        for (int o = 0; o < p->n_ops; o++)
            for (int s = 1; s < p->split[o]; s++) {
                int device = pl_plan_shard_device(p, r, o, s);
                h = pl_hash_bytes(h, &device, sizeof device);
            }
    return h ^ ((uint64_t)p->micro_batches << 2) ^ ((uint64_t)p->defer_weight_gradients << 1) ^
           (uint64_t)p->schedule ^ ((uint64_t)(p->replicas - 1) << 40);
}

bool pl_agent_copy_plan(pl_plan *to, const pl_plan *from)
{
    uint64_t model_hash = to->model_hash;
    if (pl_plan_copy(to, from, NULL) != PL_OK)
        return false;
    to->model_hash = model_hash;
    return true;
}

/* A kept plan's record, made the plan's; false when out of memory (the record unchanged). */
static bool set_best(pl_agent_best *b, const pl_plan *plan, double step, uint64_t key,
                     const char *algorithm)
{
    if (!pl_agent_copy_plan(b->plan, plan))
        return false;
    b->step = step;
    b->key = key;
    snprintf(b->algorithm, sizeof b->algorithm, "%s", algorithm);
    return true;
}

/* The plan as its origin's best, when it is; a new origin beyond the table's room takes
 * the place of the slowest, when faster. False when out of memory. */
static bool keep_origin(pl_agent *a, const pl_plan *plan, double step, uint64_t key,
                        const char *algorithm)
{
    char origin[sizeof a->origins[0].algorithm], other[sizeof origin];
    pl_agent_origin(origin, sizeof origin, algorithm);
    int slowest = 0;
    for (int k = 0; k < a->n_origins; k++) {
        pl_agent_origin(other, sizeof other, a->origins[k].algorithm);
        if (strcmp(origin, other) == 0) {
            return a->origins[k].step - step <= 1e-9 * step ||
                   set_best(&a->origins[k], plan, step, key, algorithm);
        }
        if (a->origins[k].step > a->origins[slowest].step)
            slowest = k;
    }
    if (a->n_origins < PL_AGENT_MAX_ORIGINS) {
        if (!set_best(&a->origins[a->n_origins], plan, step, key, algorithm))
            return false;
        a->n_origins++;
        return true;
    }
    return step >= a->origins[slowest].step ||
           set_best(&a->origins[slowest], plan, step, key, algorithm);
}

/* Keeps the plan if it is among the best distinct ones. A plan that simulates to the very
 * step of a kept one is taken for the same: on a cluster of identical devices, the same
 * placement with its devices relabelled (which the policy samples often), and measuring
 * it again at the end would crowd out a different candidate. */
pl_status pl_agent_keep(pl_agent *a, const pl_plan *plan, double step, const char *algorithm,
                        pl_error *err)
{
    if (strcmp(algorithm, "rl") == 0 && step < a->policy_best)
        a->policy_best = step;
    uint64_t key = plan_key(plan);
    if (!keep_origin(a, plan, step, key, algorithm))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    /* a step within rounding of the lead's is the same plan, as below; the lead is of one
       replica, as the policy's actions are (agent_impl.h) */
    if (!pl_agent_is_refined(algorithm) && plan->replicas == 1 &&
        (a->n_lead == 0 || a->lead.step - step > 1e-9 * step)) {
        if (!set_best(&a->lead, plan, step, key, algorithm))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        a->n_lead = 1;
    }
    for (int k = 0; k < a->n_best; k++)
        if (a->best[k].key == key || fabs(a->best[k].step - step) <= 1e-9 * step)
            return PL_OK;
    if (a->n_best == PL_AGENT_MAX_BEST && step >= a->best[a->n_best - 1].step)
        return PL_OK;
    bool grew = a->n_best < PL_AGENT_MAX_BEST;
    int at = grew ? a->n_best++ : PL_AGENT_MAX_BEST - 1;
    pl_agent_best spare = a->best[at];
    while (at > 0 && a->best[at - 1].step > step) {
        a->best[at] = a->best[at - 1];
        at--;
    }
    a->best[at] = spare;
    if (set_best(&a->best[at], plan, step, key, algorithm))
        return PL_OK;
    for (; at < a->n_best - 1; at++) /* no room for its devices: the list as it was */
        a->best[at] = a->best[at + 1];
    a->best[at] = spare;
    a->n_best -= grew;
    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
}

double pl_agent_policy_best(const pl_agent *a)
{
    return a->policy_best;
}

int pl_agent_best_count(const pl_agent *a)
{
    return a->n_best;
}

static pl_plan *plan_of(const pl_agent *a, const pl_agent_best *b, pl_error *err)
{
    pl_plan *plan = pl_plan_new(a->graph, err);
    if (!plan)
        return NULL;
    if (!pl_agent_copy_plan(plan, b->plan)) {
        pl_plan_free(plan);
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    plan->provenance = (pl_provenance){0};
    snprintf(plan->provenance.algorithm, sizeof plan->provenance.algorithm, "%s", b->algorithm);
    plan->provenance.seed = a->options.seed;
    plan->provenance.predicted_seconds = b->step;
    plan->model_hash = a->graph->hash;
    return plan;
}

pl_plan *pl_agent_best_plan(const pl_agent *a, int k, pl_error *err)
{
    return k >= 0 && k < a->n_best ? plan_of(a, &a->best[k], err) : NULL;
}

pl_plan *pl_agent_lead_plan(const pl_agent *a, pl_error *err)
{
    return a->n_lead ? plan_of(a, &a->lead, err) : NULL;
}

int pl_agent_origin_count(const pl_agent *a)
{
    return a->n_origins;
}

pl_plan *pl_agent_origin_plan(const pl_agent *a, int k, pl_error *err)
{
    return k >= 0 && k < a->n_origins ? plan_of(a, &a->origins[k], err) : NULL;
}

/* Whether `text` is something followed by `suffix`. */
static bool ends_with(const char *text, const char *suffix)
{
    size_t len = strlen(text), tail = strlen(suffix);
    return len > tail && strcmp(text + len - tail, suffix) == 0;
}

/* Removes `suffix` from the end of `text`, if there. */
static bool strip_suffix(char *text, const char *suffix)
{
    if (!ends_with(text, suffix))
        return false;
    text[strlen(text) - strlen(suffix)] = '\0';
    return true;
}

bool pl_agent_is_refined(const char *algorithm)
{
    return ends_with(algorithm, PL_AGENT_REFINED);
}

void pl_agent_origin(char *origin, size_t cap, const char *algorithm)
{
    snprintf(origin, cap, "%s", algorithm);
    strip_suffix(origin, PL_AGENT_REFINED);
    strip_suffix(origin, PL_AGENT_RESHAPED);
}

bool pl_agent_made(const pl_plan *plan, bool *reshaped, bool *refined)
{
    char origin[sizeof plan->provenance.algorithm];
    snprintf(origin, sizeof origin, "%s", plan->provenance.algorithm);
    *refined = strip_suffix(origin, PL_AGENT_REFINED);
    *reshaped = strip_suffix(origin, PL_AGENT_RESHAPED);
    return *refined || *reshaped || strcmp(origin, "rl") == 0;
}

void pl_agent_set_deadline(pl_agent *a, double deadline, const volatile sig_atomic_t *interrupt)
{
    a->deadline = deadline;
    a->interrupt = interrupt;
}

bool pl_agent_out_of_time(const pl_agent *a)
{
    return (a->interrupt && *a->interrupt) || (a->deadline > 0 && pl_now() >= a->deadline);
}

pl_status pl_agent_offer(pl_agent *a, const pl_plan *plan, pl_error *err)
{
    if (pl_plan_check(plan, a->graph, a->cluster, err) != PL_OK)
        return err ? err->status : PL_EINPUT;
    double step;
    bool fits;
    pl_status status = pl_agent_simulate(a, plan, &step, &fits, err);
    if (status == PL_OK && fits)
        status = pl_agent_keep(a, plan, step, plan->provenance.algorithm[0]
                                                  ? plan->provenance.algorithm : "offered",
                               err);
    return status;
}

void pl_agent_correct(pl_agent *a, double simulated, double measured)
{
    if (!(simulated > 0) || !(measured > 0))
        return;
    a->log_ratio_sum += log(measured / simulated);
    a->n_corrections++;
}

double pl_agent_correction(const pl_agent *a)
{
    return a->n_corrections ? exp(a->log_ratio_sum / a->n_corrections) : 1.0;
}

bool pl_agent_learns(const pl_agent *a)
{
    return a->options.learn;
}

int pl_agent_iterations(const pl_agent *a)
{
    return a->iteration;
}

const pl_agent_iteration *pl_agent_curve(const pl_agent *a)
{
    return a->curve;
}

/* ---- learning ---------------------------------------------------------------------------- */

/* One Adam step that increases the objective whose gradient is in a->grad. */
static void adam_ascend(pl_agent *a)
{
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    a->adam_t++;
    double c1 = 1 - pow(b1, (double)a->adam_t), c2 = 1 - pow(b2, (double)a->adam_t);
    for (int i = 0; i < a->policy.layout.n; i++) {
        double g = a->grad[i];
        a->adam_m[i] = b1 * a->adam_m[i] + (1 - b1) * g;
        a->adam_v[i] = b2 * a->adam_v[i] + (1 - b2) * g * g;
        a->policy.params[i] += a->options.lr * (a->adam_m[i] / c1) / (sqrt(a->adam_v[i] / c2) + eps);
    }
}

typedef struct worker {
    pl_agent *agent;
    int first, stride, count;
    bool cut_short; /* stop at the agent's deadline: what is left is marked unsimulated */
    pl_status status;
    pl_error err;
} worker;

static void *simulate_samples(void *arg)
{
    worker *w = arg;
    pl_agent *a = w->agent;
    for (int k = w->first; k < w->count && w->status == PL_OK; k += w->stride) {
        int s = a->pending[k];
        if (w->cut_short && pl_agent_out_of_time(a)) { /* neither fits nor is remembered */
            a->fits[s] = false;
            a->steps[s] = INFINITY;
            a->pending[k] = -1;
            continue;
        }
        w->status = pl_agent_simulate(a, a->plans[s], &a->steps[s], &a->fits[s], &w->err);
    }
    return NULL;
}

/* Simulates the plans a->pending[0 .. count) names, spread over the agent's threads;
 * cut short at the deadline, the pending entries not simulated become -1. */
static pl_status simulate_pending(pl_agent *a, int count, bool cut_short, pl_error *err)
{
    int n = a->options.threads < count ? a->options.threads : count;
    worker workers[64];
    pthread_t threads[64];
    int started = 0;
    for (int t = 0; t < n; t++) {
        workers[t] = (worker){.agent = a, .first = t, .stride = n, .count = count,
                              .cut_short = cut_short, .status = PL_OK};
        pl_error_init(&workers[t].err, err ? err->source : NULL);
    }
    for (int t = 1; t < n; t++) {
        if (pthread_create(&threads[t], NULL, simulate_samples, &workers[t]) != 0)
            break;
        started = t;
    }
    if (started < n - 1) /* fewer threads than asked: the rest on this one, same results */
        for (int t = started + 1; t < n; t++)
            simulate_samples(&workers[t]);
    simulate_samples(&workers[0]);
    for (int t = 1; t <= started; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < n; t++)
        if (workers[t].status != PL_OK) {
            if (err && err->status == PL_OK)
                *err = workers[t].err;
            return workers[t].status;
        }
    return PL_OK;
}

/* Simulates a->plans[0 .. count) on the agent's threads, those it has not simulated
 * before. Cut short at the deadline (a sweep's), a plan left unsimulated does not fit. */
static pl_status simulate_all(pl_agent *a, int count, bool cut_short, pl_error *err)
{
    int pending = 0;
    for (int s = 0; s < count; s++)
        if (!pl_step_memo_find(&a->memo, plan_key(a->plans[s]), &a->steps[s], &a->fits[s]))
            a->pending[pending++] = s;
    pl_status status = pending > 0 ? simulate_pending(a, pending, cut_short, err) : PL_OK;
    for (int k = 0; k < pending && status == PL_OK; k++) {
        int s = a->pending[k];
        if (s >= 0)
            pl_step_memo_store(&a->memo, plan_key(a->plans[s]), a->steps[s], a->fits[s]);
    }
    return status;
}

/* The plan's shape is one decision of up to 72 choices whose parts work together (more
 * micro-batches pay off once the pipeline is folded and its weight gradients deferred),
 * and sampling reaches any one of them slowly. So when an action gives a new best plan,
 * or a baseline is imitated, its placement is also simulated under every other shape and
 * the fastest kept (one: the other shapes of one placement would crowd the best plans);
 * the anchor then pulls the policy towards it. Both that shape and the action's own are
 * also tried replicated (agent_replicas.c). `action`'s shape is restored; a->plans are
 * used as scratch. */
static pl_status sweep_shapes(pl_agent *a, pl_action *action, const char *algorithm,
                              pl_error *err)
{
    int own = action->shape, n = a->options.samples;
    double fastest = INFINITY;
    pl_status status = PL_OK;
    if (!a->options.sweep)
        return PL_OK;
    for (int first = 0; first < a->policy.n_shapes && status == PL_OK &&
                        !pl_agent_out_of_time(a);
         first += n) {
        int count = a->policy.n_shapes - first < n ? a->policy.n_shapes - first : n;
        for (int k = 0; k < count; k++) {
            action->shape = first + k;
            if (!pl_action_to_plan(&a->policy, action, a->plans[k]))
                return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
        if ((status = simulate_all(a, count, true, err)) != PL_OK)
            break;
        for (int k = 0; k < count; k++)
            if (a->fits[k] && first + k != own && a->steps[k] < fastest) {
                fastest = a->steps[k];
                if (!pl_agent_copy_plan(a->swept, a->plans[k]))
                    return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
            }
    }
    if (status == PL_OK && fastest < INFINITY)
        status = pl_agent_keep(a, a->swept, fastest, algorithm, err);
    action->shape = own;
    bool replicate = a->options.replicate && !pl_agent_out_of_time(a);
    if (status == PL_OK && fastest < INFINITY && replicate) /* and replicated, */
        status = pl_agent_replicate(a, a->swept, algorithm, err); /* that shape and its own */
    if (status == PL_OK && replicate) {
        status = pl_action_to_plan(&a->policy, action, a->plans[0])
                     ? pl_agent_replicate(a, a->plans[0], algorithm, err)
                     : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    return status;
}

/* Imitation fits the plan's device, stage and group decisions, but leaves this share of
 * the shape decision spread over the other shapes (label smoothing): fitted outright, the
 * shape head would all but never sample another micro-batch count or a fold, and the
 * folds are where pipelines gain most (docs/agent.md). */
#define IMITATION_SHAPE_SMOOTHING 0.3

/* The imitation targets of `plan` (*n of them: the plan's decisions under every shape, the
 * k-th of shape k) and their weights, smoothed towards the plan's own shape (*own); `plan`
 * shaped as the agent's choices allow (PL_EINPUT otherwise). */
static pl_status imitation_targets(pl_agent *a, const pl_plan *plan, pl_action **targets,
                                   double **weight, int *n, int *own, pl_error *err)
{
    *n = a->policy.n_shapes;
    *targets = pl_actions_new(&a->policy, *n);
    *weight = malloc((size_t)*n * sizeof **weight);
    if (!*targets || !*weight) {
        pl_actions_free(*targets, *n);
        free(*weight);
        *targets = NULL, *weight = NULL;
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    pl_action *t = *targets;
    if (!pl_action_from_plan(&a->policy, plan, &t[0], NULL)) {
        pl_actions_free(*targets, *n);
        free(*weight);
        *targets = NULL, *weight = NULL;
        return pl_error_set(err, PL_EINPUT, NULL, "the plan's shape (%d micro-batches, %s) is "
                            "not among the agent's choices", plan->micro_batches,
                            pl_plan_schedule_text(plan));
    }
    *own = t[0].shape;
    for (int k = 0; k < *n; k++) {
        if (k > 0) {
            memcpy(t[k].group, t[0].group, (size_t)a->policy.n_ops * sizeof *t[k].group);
            memcpy(t[k].device, t[0].device, sizeof t[k].device);
            memcpy(t[k].stage, t[0].stage, sizeof t[k].stage);
            memcpy(t[k].split, t[0].split, sizeof t[k].split);
            memcpy(t[k].recompute, t[0].recompute, sizeof t[k].recompute);
        }
        t[k].shape = k;
        (*weight)[k] = *n == 1 ? 1 : k == *own ? 1 - IMITATION_SHAPE_SMOOTHING
                                                : IMITATION_SHAPE_SMOOTHING / (*n - 1);
    }
    return PL_OK;
}

pl_status pl_agent_imitate(pl_agent *a, const pl_plan *plan, pl_error *err)
{
    pl_status status = pl_agent_offer(a, plan, err);
    if (status != PL_OK)
        return status;
    pl_action *targets;
    double *weight;
    int n, own;
    if ((status = imitation_targets(a, plan, &targets, &weight, &n, &own, err)) != PL_OK)
        return status;
    char reshaped[64];
    snprintf(reshaped, sizeof reshaped, "%.50s" PL_AGENT_RESHAPED,
             plan->provenance.algorithm[0] ? plan->provenance.algorithm : "offered");
    status = sweep_shapes(a, &targets[own], reshaped, err);
    double objective;
    int steps = a->options.learn && a->options.train ? a->options.imitation_steps : 0;
    for (int step = 0; step < steps && status == PL_OK && !pl_agent_out_of_time(a); step++) {
        memset(a->grad, 0, (size_t)a->policy.layout.n * sizeof *a->grad);
        status = pl_policy_objective(&a->policy, targets, weight, n, 0, &objective, NULL,
                                     NULL, a->grad, err);
        if (status == PL_OK)
            adam_ascend(a);
    }
    pl_actions_free(targets, n);
    free(weight);
    return status;
}

pl_status pl_agent_imitate_jointly(pl_agent *const *agents, const pl_plan *const *plans,
                                   int n_agents, int steps, pl_error *err)
{
    if (n_agents < 1)
        return pl_error_set(err, PL_EINPUT, NULL, "joint imitation needs an agent");
    pl_agent *lead = agents[0];
    int n_params = lead->policy.layout.n;
    for (int k = 1; k < n_agents; k++)
        if (agents[k]->policy.layout.n != n_params)
            return pl_error_set(err, PL_EINPUT, NULL, "joint imitation needs agents of one "
                                "policy shape (hidden width, rounds, groups)");
    pl_action **targets = calloc((size_t)n_agents, sizeof *targets);
    double **weight = calloc((size_t)n_agents, sizeof *weight);
    int *n = calloc((size_t)n_agents, sizeof *n), own;
    pl_status status = targets && weight && n
                           ? PL_OK
                           : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    /* each plan weighs the same: an op's group is a decision, so a graph of 12,000 ops
       would otherwise outweigh one of 700 by as much */
    double mean_ops = 0;
    for (int k = 0; k < n_agents; k++)
        mean_ops += (double)agents[k]->policy.n_ops / n_agents;
    for (int k = 0; k < n_agents && status == PL_OK; k++) {
        status = imitation_targets(agents[k], plans[k], &targets[k], &weight[k], &n[k], &own,
                                   err);
        for (int t = 0; t < n[k] && status == PL_OK; t++)
            weight[k][t] *= mean_ops / agents[k]->policy.n_ops;
    }
    double objective;
    for (int step = 0; step < steps && status == PL_OK && !pl_agent_out_of_time(lead); step++) {
        memset(lead->grad, 0, (size_t)n_params * sizeof *lead->grad);
        for (int k = 0; k < n_agents && status == PL_OK; k++) {
            pl_agent *a = agents[k];
            if (k > 0) {
                memcpy(a->policy.params, lead->policy.params,
                       (size_t)n_params * sizeof *a->policy.params);
                memset(a->grad, 0, (size_t)n_params * sizeof *a->grad);
            }
            status = pl_policy_objective(&a->policy, targets[k], weight[k], n[k], 0, &objective,
                                         NULL, NULL, a->grad, err);
            if (k > 0)
                for (int i = 0; i < n_params; i++)
                    lead->grad[i] += a->grad[i];
        }
        if (status == PL_OK)
            adam_ascend(lead);
    }
    for (int k = 1; k < n_agents && status == PL_OK; k++)
        memcpy(agents[k]->policy.params, lead->policy.params,
               (size_t)n_params * sizeof *lead->policy.params);
    for (int k = 0; targets && weight && n && k < n_agents; k++) {
        pl_actions_free(targets[k], n[k]);
        free(weight[k]);
    }
    free(targets);
    free(weight);
    free(n);
    return status;
}

/* The sample best's record after curve[k] (iteration k + 1). */
static void keep_sample_best(pl_agent *a, int k)
{
    if (a->sample_best_iteration == 0 || a->curve[k].best_reward > a->sample_best) {
        a->sample_best = a->curve[k].best_reward;
        a->sample_best_iteration = k + 1;
    }
}

void pl_agent_append(pl_agent *a, const pl_agent_iteration *it)
{
    a->curve[a->iteration] = *it;
    keep_sample_best(a, a->iteration++);
}

void pl_agent_replay_curve(pl_agent *a)
{
    a->sample_best_iteration = 0;
    for (int k = 0; k < a->iteration; k++)
        keep_sample_best(a, k);
}

static pl_status grow_curve(pl_agent *a)
{
    if (a->iteration < a->curve_cap)
        return PL_OK;
    int cap = a->curve_cap ? 2 * a->curve_cap : 64;
    pl_agent_iteration *curve = realloc(a->curve, (size_t)cap * sizeof *curve);
    if (!curve)
        return PL_ENOMEM;
    a->curve = curve;
    a->curve_cap = cap;
    return PL_OK;
}

/* An iteration of the search without a learned policy: a refinement of the best plan. */
static pl_status iterate_without_learning(pl_agent *a, pl_agent_iteration *result,
                                          pl_error *err)
{
    pl_agent_iteration it = {.iteration = a->iteration + 1};
    pl_agent_append(a, &it);
    pl_status status = pl_agent_refine(a, err);
    if (status != PL_OK)
        return status;
    a->curve[a->iteration - 1].best_step = it.best_step = a->n_best ? a->best[0].step : 0;
    if (result)
        *result = it;
    return PL_OK;
}

pl_status pl_agent_iterate(pl_agent *a, pl_agent_iteration *result, pl_error *err)
{
    int n = a->options.samples;
    if (grow_curve(a) != PL_OK)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (!a->options.learn)
        return iterate_without_learning(a, result, err);
    uint64_t stream = (uint64_t)a->iteration * (uint64_t)n;
    pl_status status = pl_policy_sample(&a->policy, a->options.seed, stream, a->actions, n, err);
    if (status != PL_OK)
        return status;
    for (int s = 0; s < n; s++)
        if (!pl_action_to_plan(&a->policy, &a->actions[s], a->plans[s]))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if ((status = simulate_all(a, n, false, err)) != PL_OK)
        return status;
    pl_agent_iteration it = {.iteration = a->iteration + 1, .best_reward = -INFINITY};
    double *reward = a->weights, sum = 0, fit_steps = 0; /* rewards, then weights */
    double before = a->n_lead ? a->lead.step : INFINITY;
    int fit = 0, best = -1;
    for (int s = 0; s < n; s++) {
        reward[s] = a->fits[s] ? -sqrt(a->steps[s] / a->reference) : PL_AGENT_OOM_REWARD;
        sum += reward[s];
        if (reward[s] > it.best_reward)
            it.best_reward = reward[s];
        if (a->fits[s]) {
            fit++;
            fit_steps += a->steps[s];
            if ((status = pl_agent_keep(a, a->plans[s], a->steps[s], "rl", err)) != PL_OK)
                return status;
            if (a->steps[s] < before && (best < 0 || a->steps[s] < a->steps[best]))
                best = s;
        }
    }
    if (best >= 0 && (status = sweep_shapes(a, &a->actions[best], "rl", err)) != PL_OK)
        return status;
    it.oom = n - fit;
    it.mean_reward = sum / n;
    it.mean_step = fit ? fit_steps / fit : 0;
    /* leave-one-out baseline, advantages over the rewards' spread */
    double var = 0;
    for (int s = 0; s < n; s++)
        var += (reward[s] - it.mean_reward) * (reward[s] - it.mean_reward);
    /* floored: once the samples agree, their differences are rounding, not signal, and
     * dividing by their spread would blow that noise up into full-size steps */
    double spread = fmax(sqrt(var / n), 0.02);
    for (int s = 0; s < n; s++) {
        double others = (sum - reward[s]) / (n - 1);
        a->advantage[s] = (reward[s] - others) / spread;
    }
    /* PPO: several Adam steps on the same samples, each sample's weight its probability
     * ratio to the policy that drew it, dropped once the ratio leaves [1-clip, 1+clip] in
     * the direction its advantage pushes (the clipped surrogate's gradient). */
    const double clip = 0.2;
    /* the anchor: the lead (a baseline's, first), imitated alongside; not when
     * the policy cannot express it exactly (a folded plan of more stages or (device,
     * stage) pairs than the heads have), which would pull towards another plan */
    int m = n;
    bool exact = false;
    if (a->options.anchor > 0 && a->n_lead > 0 &&
        pl_action_from_plan(&a->policy, a->lead.plan, &a->actions[n], &exact) && exact) {
        a->weights[n] = a->options.anchor / n;
        m = n + 1;
    }
    int epochs = a->options.train ? a->options.epochs : 0;
    for (int epoch = 0; epoch < epochs && status == PL_OK; epoch++) {
        double objective;
        status = pl_policy_objective(&a->policy, a->actions, a->advantage, n, 0, &objective,
                                     NULL, a->logp, NULL, err);
        if (status != PL_OK)
            break;
        if (epoch == 0)
            memcpy(a->logp_old, a->logp, (size_t)n * sizeof *a->logp);
        for (int s = 0; s < n; s++) {
            double ratio = exp(a->logp[s] - a->logp_old[s]), adv = a->advantage[s];
            bool clipped = (adv > 0 && ratio > 1 + clip) || (adv < 0 && ratio < 1 - clip);
            a->weights[s] = clipped ? 0 : ratio * adv / n;
        }
        memset(a->grad, 0, (size_t)a->policy.layout.n * sizeof *a->grad);
        status = pl_policy_objective(&a->policy, a->actions, a->weights, m, a->options.entropy,
                                     &objective, epoch == 0 ? &it.entropy : NULL, NULL, a->grad,
                                     err);
        if (status == PL_OK)
            adam_ascend(a);
    }
    if (status != PL_OK)
        return status;
    pl_agent_append(a, &it);
    if ((status = pl_agent_refine(a, err)) != PL_OK)
        return status;
    /* the best so far, after this iteration's refinement */
    a->curve[a->iteration - 1].best_step = it.best_step = a->n_best ? a->best[0].step : 0;
    if (result)
        *result = it;
    return PL_OK;
}
