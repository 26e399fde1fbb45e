/* The reinforcement-learning placement agent: a learned policy over graph features that
 * groups a training graph's forward ops and places the groups on a cluster's devices and
 * pipeline stages, trained by policy gradient on rewards from the simulator.
 *
 * The policy (docs/agent.md): per-op features (op kind, log FLOPs, log output and
 * parameter bytes, topological depth, degree, the FLOPs of its co-location group) refined
 * by rounds of message passing over the dataflow; a grouper that assigns each forward op
 * (with its co-location group) to one of at most `groups` groups; a placer that gives each
 * group a device (attending over the devices' own features, so that the weights serve any
 * cluster) and a pipeline stage, attending over the groups; and the micro-batch
 * count, drawn from the powers of two up to 32 that divide the batch. Stages are then made to follow the
 * dataflow (an op's stage is at least its inputs'), and numbered without gaps.
 *
 * Learning: each iteration draws `samples` plans from the policy, simulates them
 * (cost/simulate.h, on `threads` threads), rewards each with -sqrt(step / reference) where
 * the reference is the first plan's step (or PL_AGENT_OOM_REWARD when a device runs out of
 * memory), and takes `epochs` Adam steps of PPO (the clipped surrogate, ratio in
 * [0.8, 1.2]) with a leave-one-out baseline (each sample's advantage is its reward against
 * the mean of the others, over their spread) and an entropy bonus; the best plan of one
 * replica so far (the lead, below) is imitated alongside, as one more sample of advantage
 * `anchor` (self-imitation: it keeps the policy from drifting off what works). The agent
 * keeps the best distinct plans it has simulated; the caller
 * measures them on the executor and tells the agent (pl_agent_correct) how the simulator
 * compares, and chooses the final plan by measured step.
 *
 * Reproducible: every random draw is a pure function of (seed, iteration, sample), so the
 * result of a number of iterations depends on the seed alone, not on the thread count or
 * the wall clock. A checkpoint holds the weights, the optimiser's moments, the iteration
 * (the random state), the learning curve and the best plans: an agent read back from one
 * continues as the uninterrupted agent would, bit for bit.
 *
 * Ownership: the agent borrows the graph (a training graph, autodiff.h), the cluster and
 * the cost model for its life. Not thread-safe: one caller drives an agent (it runs its
 * own simulation threads inside pl_agent_iterate and joins them before returning). */
#ifndef PLACER_AGENT_H
#define PLACER_AGENT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "cluster.h"
#include "cost_model.h"
#include "error.h"
#include "graph.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PL_AGENT_OOM_REWARD (-3.0)

enum { PL_AGENT_MAX_BEST = 8, PL_AGENT_MAX_GROUPS = 64 };

typedef struct pl_agent_options {
    uint64_t seed;
    int samples;       /* plans drawn per iteration (default 32) */
    int groups;        /* the grouper's groups (default 16, at most PL_AGENT_MAX_GROUPS) */
    int hidden;        /* width of the op embeddings (default 32) */
    int rounds;        /* message-passing rounds (default 2) */
    double lr;         /* Adam's step size (default 0.005) */
    double entropy;    /* weight of the entropy bonus (default 0.01) */
    int threads;       /* simulation threads (default 2) */
    int imitation_steps; /* supervised steps towards pl_agent_imitate's plan (default 200) */
    int epochs;        /* PPO: Adam steps per iteration on its samples (default 4) */
    double anchor;     /* weight of the best plan so far's log-likelihood, as if one more
                          sample of advantage `anchor` (default 1; 0: none) */
    int max_fold;      /* the most pipeline stages per device the shape may choose (1 to 3,
                          default 3; 1: no interleaving) */
    bool defer;        /* the shape may defer weight gradients (default true) */
    bool sweep;        /* a new best placement is also tried under every shape (default
                          true) */
    bool replicate;    /* ... and replicated on the devices it leaves free (default true;
                          agent_replicas.c) */
    int refine_every;  /* iterations between refinements (default 20;
                          0: none; agent_refine.c says where each starts) */
    int refine_proposals; /* moves proposed per refinement chain (default 1000) */
    bool learn;        /* sample from and train the learned policy (default true); false:
                          the same search without it, for measuring what learning gains:
                          offered plans and their shape sweeps, then a refinement every
                          iteration (docs/agent.md, "Does learning pay") */
    bool train;        /* train the policy (default true); false: sample it as it is, with
                          no imitation and no updates (a pre-trained policy's zero-shot
                          placements) */
} pl_agent_options;

/* The defaults above. */
void pl_agent_options_default(pl_agent_options *options);

/* A policy's weights on their own, for any graph and cluster: the options that shape them
 * and their values (layout.n of them, policy_impl.h). A policy file (docs/agent.md,
 * "Pre-training") is a tensor file (tensor_file.h) of its weight matrices by name, with
 * its format version; the CRC-32 of each matrix guards against damage. */
enum { PL_POLICY_FILE_VERSION = 1 };
typedef struct pl_policy_weights {
    int hidden, rounds, groups;
    int n;
    double *values;
} pl_policy_weights;

/* Reads a policy file, checked (the version, every matrix present once with the shape
 * its hidden width, rounds and groups give, nothing else, every value finite); PL_EINPUT
 * naming the file and the matrix otherwise. */
pl_status pl_policy_weights_read(const char *path, pl_policy_weights *weights, pl_error *err);
/* Writes one atomically (atomic_file.h). */
pl_status pl_policy_weights_write(const pl_policy_weights *weights, const char *path,
                                  pl_error *err);
void pl_policy_weights_clear(pl_policy_weights *weights);
/* The pre-trained policy that ships with placer: $PLACER_POLICY when set (empty: none),
 * else the installed share/placer/policy.plt, else the source tree's share/policy.plt (an
 * uninstalled build), whichever exists first; NULL when none does. */
const char *pl_policy_default_path(void);

typedef struct pl_agent pl_agent;

/* One iteration's outcome. */
typedef struct pl_agent_iteration {
    int iteration;        /* from 1 */
    double mean_reward;   /* over the samples */
    double best_reward;   /* the best sample's */
    double mean_step;     /* mean simulated step of the samples that fit, seconds */
    double best_step;     /* the best simulated step so far (any iteration), seconds; 0
                             while no plan has fit */
    int oom;              /* samples that did not fit */
    double entropy;       /* mean entropy per decision */
} pl_agent_iteration;

/* A new agent with freshly initialised weights (from options->seed), or NULL with `err`
 * filled in (PL_EINPUT: a graph without forward ops, options out of range). */
pl_agent *pl_agent_new(const pl_graph *graph, const pl_cluster *cluster,
                       const pl_cost_model *model, const pl_agent_options *options,
                       pl_error *err);
void pl_agent_free(pl_agent *agent);

/* The agent's policy starts from `weights` (of its options' hidden width, rounds and
 * groups; PL_EINPUT otherwise) instead of fresh ones. Call before anything else. */
pl_status pl_agent_start_from(pl_agent *agent, const pl_policy_weights *weights,
                              pl_error *err);
/* A copy of the agent's policy weights as they are now. */
pl_status pl_agent_weights(const pl_agent *agent, pl_policy_weights *weights, pl_error *err);

/* Bounds the agent's long calls: once pl_now() (clock.h) passes `deadline` (0: never)
 * or `*interrupt` (borrowed, NULL: none) is set, pl_agent_imitate stops between its
 * steps and a shape sweep between its batches, keeping what they did. The caller stops
 * calling pl_agent_iterate. */
void pl_agent_set_deadline(pl_agent *agent, double deadline,
                           const volatile sig_atomic_t *interrupt);
/* Whether that deadline has passed or the flag is set. */
bool pl_agent_out_of_time(const pl_agent *agent);

/* Trains the policy to reproduce `plan` (supervised, options->imitation_steps Adam steps
 * on the plan's log-likelihood) and offers the plan as a candidate. Call before the first
 * iteration; optional. */
pl_status pl_agent_imitate(pl_agent *agent, const pl_plan *plan, pl_error *err);

/* Trains one policy to reproduce each agent's plan at once: `steps` Adam steps (the first
 * agent's optimiser) on the sum of the plans' log-likelihoods, every agent's policy holding
 * the first one's weights (so all must have the same hidden width, rounds and groups;
 * PL_EINPUT otherwise, without any agent, or when a plan's shape is not among its agent's
 * choices). Nothing is
 * offered or simulated. Stops early, keeping the steps done, at the first agent's deadline
 * (pl_agent_set_deadline). Pre-training's consolidation (pretrain.h). */
pl_status pl_agent_imitate_jointly(pl_agent *const *agents, const pl_plan *const *plans,
                                   int n_agents, int steps, pl_error *err);

/* Offers a plan made elsewhere (a baseline) as a candidate, simulated, so that the best
 * plans include it when it is among the best. */
pl_status pl_agent_offer(pl_agent *agent, const pl_plan *plan, pl_error *err);

/* One iteration of sampling, simulation and learning. */
pl_status pl_agent_iterate(pl_agent *agent, pl_agent_iteration *result, pl_error *err);

/* Iterations done, and the curve so far (one entry per iteration, borrowed, valid until
 * the next call that changes the agent). */
int pl_agent_iterations(const pl_agent *agent);
const pl_agent_iteration *pl_agent_curve(const pl_agent *agent);

/* The best distinct plans simulated so far (a plan simulating to a kept one's very step
 * counts as the same), best first (at most PL_AGENT_MAX_BEST): a new
 * plan (pl_plan_free) with its simulated step in provenance.predicted_seconds and
 * algorithm "rl" (the policy's), the offered plan's own, or either followed by
 * PL_AGENT_RESHAPED (an imitated plan's placement under another shape, by the agent's
 * shape sweep) and/or PL_AGENT_REFINED (improved by the agent's refinement), or NULL when
 * k is out of range. */
int pl_agent_best_count(const pl_agent *agent);
pl_plan *pl_agent_best_plan(const pl_agent *agent, int k, pl_error *err);

/* The lead: the best plan of one replica not refined (the policy's, an offered one, or one
 * reshaped), as pl_agent_best_plan gives it, or NULL before any such plan fits. */
pl_plan *pl_agent_lead_plan(const pl_agent *agent, pl_error *err);
/* The best plan of each origin (an offered plan's algorithm, or "rl"), as pl_agent_best_plan
 * gives it: k from 0 to pl_agent_origin_count - 1, in no order. */
int pl_agent_origin_count(const pl_agent *agent);
pl_plan *pl_agent_origin_plan(const pl_agent *agent, int k, pl_error *err);

#define PL_AGENT_RESHAPED " reshaped"
#define PL_AGENT_REFINED " refined"

/* Whether the agent made the plan: "rl", or a plan it reshaped or refined (said in
 * *reshaped and *refined). */
bool pl_agent_made(const pl_plan *plan, bool *reshaped, bool *refined);

/* Whether the agent samples from and trains its policy (options.learn). */
bool pl_agent_learns(const pl_agent *agent);

/* The best simulated step among the policy's own plans (its samples and their shape
 * sweeps; not refined), or INFINITY before any fit: what the refinement is measured
 * against. */
double pl_agent_policy_best(const pl_agent *agent);

/* What the executor measured for a plan the simulator predicted `simulated` seconds for:
 * the agent keeps the geometric mean of measured / simulated as the simulator's
 * correction for this model and cluster, and reports corrected steps from then on. */
void pl_agent_correct(pl_agent *agent, double simulated, double measured);
double pl_agent_correction(const pl_agent *agent);

/* Checkpoints, written atomically; reading checks that the checkpoint was made for this
 * graph, cluster and options (PL_EINPUT otherwise). */
pl_status pl_agent_save(const pl_agent *agent, const char *path, pl_error *err);
pl_agent *pl_agent_load(const char *path, const pl_graph *graph, const pl_cluster *cluster,
                        const pl_cost_model *model, const pl_agent_options *options,
                        pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
