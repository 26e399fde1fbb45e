/* Refinement: simulated annealing over single-op moves from the agent's best plan. The
 * policy places ops by groups and learns a plan's structure (stages, fold, shape); what
 * its samples rarely get right is the few ops at each stage's edges that decide how evenly
 * the devices are loaded. Here one forward op (with its co-location group) moves to the
 * device and stage of one of its producers or consumers, so stages keep following the
 * dataflow and the plan keeps its (device, stage) pairs. In a replicated plan the op moves
 * in every replica, each to that replica's device of the neighbour. A split op stays where
 * it is (its shards hold a run of devices); a whole op may move next to one, onto its
 * first shard's device.
 *
 * A refined plan is kept among the best plans but never becomes the lead, which the
 * anchor imitates: the policy learns as it would without refinement. (Imitating refined
 * plans held seq2seq's policy on the first one, 249.2 ms, for 280 iterations.)
 *
 * Each refinement runs PL_AGENT_REFINE_CHAINS chains from the same plan, each a pure
 * function of (seed, iteration, chain), on up to that many threads: the result does not
 * depend on the thread count. docs/agent.md, "Refinement". */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "rng.h"

/* the temperature: this share of the current step, falling linearly to 0 over a chain
 * (0.1%, 0.3% and 1% took seq2seq's best plan 2.0%, 3.6% and 3.7% down in 10 s) */
#define REFINE_TEMPERATURE 0.003
/* how much slower than the best plan another origin's best may be and still be refined:
 * a refinement has taken a plan down by up to about this much (docs/agent.md) */
#define REFINE_REACH 1.1
#define REFINE_SALT UINT64_C(0x7265666E65)

typedef struct chain {
    pl_agent *agent;
    pl_plan *plan, *best; /* the chain's state and the best it has seen */
    int *in_stage;        /* ops per stage, so that a move never empties one */
    double step, best_step;
    uint64_t key;         /* its random stream */
    pl_status status;
    pl_error err;
} chain;

/* A proposal: op i to the device and stage of a random neighbour j; false when that is
 * where it is, when op i is split, or when its stage would no longer follow the dataflow
 * or empty a stage. */
static bool propose(const pl_policy *p, const pl_plan *plan, const int *in_stage, uint64_t key,
                    uint64_t *counter, int *op, int *neighbour, int *stage)
{
    int i = (int)(pl_rng_u64(key, (*counter)++) % (uint64_t)p->n_ops);
    const pl_adjacency *a = p->adjacency;
    int n_pred = pl_adjacency_n_producers(a, i);
    int degree = n_pred + pl_adjacency_n_consumers(a, i);
    if (degree == 0 || plan->split[i] > 1)
        return false;
    int e = (int)(pl_rng_u64(key, (*counter)++) % (uint64_t)degree);
    int j = e < n_pred ? a->producer[a->producer_first[i] + e]
                       : a->consumer[a->consumer_first[i] + e - n_pred];
    int d = plan->device[j], s = plan->stage[j];
    if ((d == plan->device[i] && s == plan->stage[i]) ||
        (s != plan->stage[i] && in_stage[plan->stage[i]] == 1))
        return false;
    for (int k = a->producer_first[i]; k < a->producer_first[i + 1]; k++)
        if (plan->stage[a->producer[k]] > s)
            return false;
    for (int k = a->consumer_first[i]; k < a->consumer_first[i + 1]; k++)
        if (plan->stage[a->consumer[k]] < s)
            return false;
    *op = i, *neighbour = j, *stage = s;
    return true;
}

/* Op i to the stage and, in every replica, to the device of op j there; `devices` keeps
 * where it was. */
static void move(pl_plan *plan, int i, int j, int stage, int *devices)
{
    for (int r = 0; r < plan->replicas; r++) {
        int *device = pl_plan_replica(plan, r);
        devices[r] = device[i];
        device[i] = device[j];
    }
    plan->stage[i] = stage;
}

static void move_back(pl_plan *plan, int i, int stage, const int *devices)
{
    for (int r = 0; r < plan->replicas; r++)
        pl_plan_replica(plan, r)[i] = devices[r];
    plan->stage[i] = stage;
}

static void *run_chain(void *arg)
{
    chain *ch = arg;
    pl_agent *a = ch->agent;
    const pl_policy *p = &a->policy;
    int proposals = a->options.refine_proposals;
    uint64_t counter = 0;
    for (int k = 0; k < proposals && ch->status == PL_OK; k++) {
        int i, j, s, was[PL_MAX_REPLICAS];
        if (!propose(p, ch->plan, ch->in_stage, ch->key, &counter, &i, &j, &s))
            continue;
        int old_s = ch->plan->stage[i];
        move(ch->plan, i, j, s, was);
        double step;
        bool fits;
        ch->status = pl_agent_simulate(a, ch->plan, &step, &fits, &ch->err);
        double t = REFINE_TEMPERATURE * ch->step * (1 - (double)k / proposals);
        double u = pl_rng_uniform(ch->key, counter++);
        if (ch->status == PL_OK && fits &&
            (step < ch->step || (t > 0 && u < exp(-(step - ch->step) / t)))) {
            ch->step = step;
            ch->in_stage[old_s]--, ch->in_stage[s]++;
            if (step < ch->best_step) {
                ch->best_step = step;
                if (!pl_agent_copy_plan(ch->best, ch->plan))
                    ch->status = pl_error_set(&ch->err, PL_ENOMEM, NULL, "out of memory");
            }
        } else {
            move_back(ch->plan, i, old_s, was);
        }
    }
    return NULL;
}

static void free_chain(chain *ch)
{
    pl_plan_free(ch->plan);
    pl_plan_free(ch->best);
    free(ch->in_stage);
}

/* The label of a refined plan: its origin's, marked once. */
static void refined_label(char *label, size_t cap, const char *origin)
{
    if (pl_agent_is_refined(origin))
        snprintf(label, cap, "%s", origin);
    else
        snprintf(label, cap, "%.*s" PL_AGENT_REFINED,
                 (int)(cap - strlen(PL_AGENT_REFINED) - 1), origin);
}

static bool refined_before(const pl_agent *a, uint64_t key)
{
    int n = a->n_refined < PL_AGENT_REFINED_KEYS ? a->n_refined : PL_AGENT_REFINED_KEYS;
    for (int k = 0; k < n; k++)
        if (a->refined[k] == key)
            return true;
    return false;
}

/* Where refinement starts: the best plan while refining it still improves it (annealing
 * goes on from where it stopped) or once the policy has found a better one; else the lead
 * when it has changed (a new start); else the best plan of another origin not started
 * from yet, fastest first: another basin (lstm_lm's pipeline-dp placement, reshaped and
 * refined, can end below the policy's best refined). Origins slower than the best by more
 * than refinement has ever gained are left alone. Else, without learning, the best plan
 * again (a new random stream: nothing else would use the time); else NULL, the time going
 * to the policy. */
static const pl_agent_best *refine_start(const pl_agent *a)
{
    if (a->n_best == 0)
        return NULL;
    if (!refined_before(a, a->best[0].key))
        return &a->best[0];
    if (a->n_lead > 0 && !refined_before(a, a->lead.key))
        return &a->lead;
    const pl_agent_best *start = NULL;
    for (int k = 0; k < a->n_origins; k++) {
        const pl_agent_best *o = &a->origins[k];
        if (o->step <= REFINE_REACH * a->best[0].step && !refined_before(a, o->key) &&
            (!start || o->step < start->step))
            start = o;
    }
    if (start || a->options.learn)
        return start;
    return &a->best[0];
}

/* Whether the policy's samples have gone PL_AGENT_STALLED iterations without beating the
 * best sample of the iterations before. */
static bool sampling_stalled(const pl_agent *a)
{
    return a->sample_best_iteration > 0 &&
           a->iteration - a->sample_best_iteration >= PL_AGENT_STALLED;
}

/* Without learning, every iteration refines. With it, the first does (the best baseline's
 * refinement pays from the start, and on a large graph the budget may hold a few dozen
 * iterations), then every refine_every-th, and every one while the policy's samples have
 * stalled: what time the policy no longer turns into better plans goes to refinement. */
static bool refinement_due(const pl_agent *a)
{
    int every = a->options.refine_every;
    if (every <= 0 || a->options.refine_proposals <= 0)
        return false;
    return !a->options.learn || a->iteration == 1 || a->iteration % every == 0 ||
           sampling_stalled(a);
}

pl_status pl_agent_refine(pl_agent *a, pl_error *err)
{
    if (!refinement_due(a))
        return PL_OK;
    const pl_agent_best *from = refine_start(a);
    if (!from)
        return PL_OK;
    /* `from` may move once a plan is kept: what is needed of it, now */
    double from_step = from->step;
    char label[sizeof from->algorithm];
    refined_label(label, sizeof label, from->algorithm);
    a->refined[a->n_refined++ % PL_AGENT_REFINED_KEYS] = from->key;
    chain chains[PL_AGENT_REFINE_CHAINS];
    pthread_t threads[PL_AGENT_REFINE_CHAINS];
    bool started[PL_AGENT_REFINE_CHAINS] = {false};
    bool ok = true;
    for (int c = 0; c < PL_AGENT_REFINE_CHAINS; c++) {
        chain *ch = &chains[c];
        *ch = (chain){.agent = a, .step = from_step, .best_step = from_step,
                      .status = PL_OK};
        pl_error_init(&ch->err, err ? err->source : NULL);
        ch->key = pl_rng_mix(a->options.seed ^ pl_rng_mix(REFINE_SALT ^ (uint64_t)a->iteration)) +
                  (uint64_t)c;
        ch->plan = pl_plan_new(a->graph, err);
        ch->best = pl_plan_new(a->graph, err);
        ch->in_stage = calloc((size_t)from->plan->n_stages + 1, sizeof *ch->in_stage);
        ok = ok && ch->plan && ch->best && ch->in_stage;
        if (!ok)
            continue;
        ok = pl_agent_copy_plan(ch->plan, from->plan) && pl_agent_copy_plan(ch->best, from->plan);
        for (int i = 0; i < from->plan->n_ops; i++)
            ch->in_stage[from->plan->stage[i]]++;
    }
    if (ok) {
        /* chains beyond the threads run here in turn: the same results */
        int n_threads = a->options.threads < PL_AGENT_REFINE_CHAINS ? a->options.threads
                                                                    : PL_AGENT_REFINE_CHAINS;
        for (int c = 1; c < n_threads; c++)
            started[c] = pthread_create(&threads[c], NULL, run_chain, &chains[c]) == 0;
        for (int c = 0; c < PL_AGENT_REFINE_CHAINS; c++)
            if (!started[c])
                run_chain(&chains[c]);
        for (int c = 1; c < PL_AGENT_REFINE_CHAINS; c++)
            if (started[c])
                pthread_join(threads[c], NULL);
    }
    pl_status status = ok ? PL_OK : pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    int best = 0;
    for (int c = 0; c < PL_AGENT_REFINE_CHAINS && status == PL_OK; c++) {
        if (chains[c].status != PL_OK) {
            if (err)
                *err = chains[c].err;
            status = chains[c].status;
        } else if (chains[c].best_step < chains[best].best_step) {
            best = c;
        }
    }
    if (status == PL_OK && chains[best].best_step < from_step)
        status = pl_agent_keep(a, chains[best].best, chains[best].best_step, label, err);
    for (int c = 0; c < PL_AGENT_REFINE_CHAINS; c++)
        free_chain(&chains[c]);
    return status;
}
