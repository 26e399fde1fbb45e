/* The agent's state, shared by its learning loop (agent.c) and its checkpoints
 * (agent_checkpoint.c). */
#ifndef PLACER_AGENT_IMPL_H
#define PLACER_AGENT_IMPL_H

#include <stdbool.h>

#include "agent.h"
#include "policy_impl.h"
#include "step_memo.h"

enum { PL_AGENT_REFINED_KEYS = 8, PL_AGENT_MAX_ORIGINS = 16,
       PL_AGENT_MAX_ITERATIONS = 100000000,
       PL_AGENT_STALLED = 5 /* iterations without a better sample: refine each one */ };

typedef struct pl_agent_best {
    pl_plan *plan;      /* always allocated; valid for the first n_best */
    double step;        /* simulated */
    uint64_t key;       /* of its devices, stages, splits, recomputation, micro-batches and
                           schedule */
    char algorithm[64];
} pl_agent_best;

struct pl_agent {
    const pl_graph *graph;
    const pl_cluster *cluster;
    const pl_cost_model *model;
    pl_agent_options options;
    pl_policy policy;
    double *adam_m, *adam_v;
    int64_t adam_t;
    int iteration;             /* also the random state: iteration i draws stream i */
    double reference;          /* every op on the first device, simulated: rewards' scale */
    double log_ratio_sum;      /* executor against simulator */
    int n_corrections;
    pl_agent_iteration *curve;
    int curve_cap;
    pl_agent_best best[PL_AGENT_MAX_BEST];
    int n_best;
    pl_agent_best lead;        /* the best plan of one replica not refined (n_lead 0: none
                                  yet): what the anchor imitates and a new sample must
                                  beat to be swept, so the policy learns as it would
                                  without refinement; of one replica because an action
                                  places one (a replicated plan's replica 0 alone is
                                  another, slower plan, and the anchor would pull there) */
    int n_lead;
    pl_agent_best origins[PL_AGENT_MAX_ORIGINS]; /* the best plan of each origin (a
                                  baseline's name or "rl"), reshaped or refined or not: the
                                  basins refinement moves between */
    int n_origins;
    uint64_t refined[PL_AGENT_REFINED_KEYS]; /* the plans the last refinements started
                                  from (a ring), not to start from again */
    int n_refined;             /* refinements so far */
    double policy_best;        /* the best step of the policy's own plans ("rl") */
    double sample_best;        /* the best sample's reward over the iterations so far, and */
    int sample_best_iteration; /* the last iteration that raised it (0: none yet); both
                                  read from the curve on resuming (pl_agent_replay_curve) */
    pl_step_memo memo;         /* plans simulated before; not checkpointed (it saves time,
                                  it changes no result) */
    double deadline;           /* pl_agent_set_deadline's; 0: none */
    const volatile sig_atomic_t *interrupt;
    /* per iteration, reused */
    double *grad;
    pl_action *actions;
    pl_plan **plans;
    pl_plan *swept;            /* the fastest of a shape sweep */
    double *steps;
    bool *fits;
    int *pending;              /* the samples to simulate: those not in the memo */
    double *weights;
    double *advantage, *logp, *logp_old;
};

/* An agent with its buffers and initial weights, no reference yet. */
pl_agent *pl_agent_alloc(const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, const pl_agent_options *options,
                         pl_error *err);
/* PL_ENOMEM (said in err) when a replicated plan finds no room. */
pl_status pl_agent_keep(pl_agent *agent, const pl_plan *plan, double step, const char *algorithm,
                        pl_error *err);
/* A plan into another of the same graph, its model hash kept; false when out of memory (a
 * replicated plan's devices), `to` left as it was. */
bool pl_agent_copy_plan(pl_plan *to, const pl_plan *from);

/* Whether a kept plan's algorithm names it refined (it ends with PL_AGENT_REFINED). */
bool pl_agent_is_refined(const char *algorithm);

/* A kept plan's origin: its algorithm without the reshaped and refined marks. */
void pl_agent_origin(char *origin, size_t cap, const char *algorithm);

/* A plan's simulated step; *fits false when a device runs out of memory. Re-entrant. */
pl_status pl_agent_simulate(const pl_agent *agent, const pl_plan *plan, double *step,
                            bool *fits, pl_error *err);

/* Every options.refine_every iterations: simulated annealing (agent_refine.c) from the
 * best plan, the lead or another origin's best (agent_refine.c, refine_start); a better
 * plan found is kept among the best. */
enum { PL_AGENT_REFINE_CHAINS = 2 };
pl_status pl_agent_refine(pl_agent *agent, pl_error *err);
/* agent_replicas.c: `plan` replicated on the devices it leaves free, kept as `algorithm`
 * when faster. */
pl_status pl_agent_replicate(pl_agent *agent, const pl_plan *plan, const char *algorithm,
                             pl_error *err);

/* Appends an iteration to the learning curve (room for it made) and keeps the sample
 * best's record; pl_agent_replay_curve keeps it for a curve read from a checkpoint. */
void pl_agent_append(pl_agent *a, const pl_agent_iteration *it);
void pl_agent_replay_curve(pl_agent *a);

#endif
