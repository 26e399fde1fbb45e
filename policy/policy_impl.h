/* The agent's policy network, inside policy/: features, the forward pass, sampling, and
 * the hand-written gradient of the policy-gradient objective (policy.c, features.c).
 *
 * Everything is double precision and row-major; matrix products go through cblas_dgemm.
 * The network's weights are one flat array (`params`) so that Adam, checkpoints and the
 * finite-difference test treat them as one vector. */
#ifndef PLACER_POLICY_IMPL_H
#define PLACER_POLICY_IMPL_H

#include <stdint.h>

#include "adjacency.h"
#include "agent.h"
#include "cluster.h"
#include "cost_model.h"
#include "graph.h"
#include "plan.h"

enum {
    PL_POLICY_MAX_ROUNDS = 4,
    PL_POLICY_MAX_MB = 6,    /* micro-batch counts: the powers of two up to 32 */
    PL_POLICY_MAX_FOLD = 3,  /* pipeline stages per device when interleaving */
    /* x GPipe or 1F1B x weight gradients deferred or not */
    PL_POLICY_MAX_SHAPES = PL_POLICY_MAX_MB * PL_POLICY_MAX_FOLD * 2 * 2,
    PL_POLICY_HEAD_STAGES = 16, /* the stage head's choices, at most */
    PL_POLICY_MAX_STAGES = PL_POLICY_HEAD_STAGES * PL_POLICY_MAX_FOLD, /* after folding */
    /* The op kinds the shipped policy has a feature for: the model-file kinds up to
     * lstm_cell. Kinds added since take the feature of a kind they resemble (features.c). */
    PL_POLICY_OP_KINDS = PL_OP_LSTM_CELL + 1,
    PL_POLICY_OP_FEATURES = PL_POLICY_OP_KINDS + 1 + 8, /* kind one-hot, other, 8 numbers */
    PL_POLICY_GROUP_FEATURES = 2,
    PL_POLICY_DEVICE_FEATURES = 13 /* device_features.c */
};

/* Offsets of each weight matrix in the flat parameter vector. Its size depends on the
 * options' hidden width, rounds and groups alone, never on the graph or the cluster: the
 * device head attends over the devices' own embeddings, and the stage and shape heads have
 * a column for every choice any graph or cluster may allow (those not allowed here are
 * left out of the softmax). */
typedef struct pl_policy_layout {
    int w0, b0;                                  /* features -> hidden */
    int ws[PL_POLICY_MAX_ROUNDS], wi[PL_POLICY_MAX_ROUNDS], wo[PL_POLICY_MAX_ROUNDS],
        b[PL_POLICY_MAX_ROUNDS];                 /* message passing: self, in, out */
    int wg, bg;                                  /* grouper */
    int wq, wk, wv;                              /* attention over groups */
    int wf, bf;                                  /* device features -> embeddings */
    int wdq, bdq;                                /* device head: a group's query */
    int wst, bst;                                /* stage head */
    int wshape, bshape;                          /* the plan's shape: micro-batches, folds */
    int n;
} pl_policy_layout;

/* The layout of a policy of these options (agent.h: hidden, rounds, groups). */
void pl_policy_layout_build(pl_policy_layout *layout, int hidden, int rounds, int groups);

typedef struct pl_policy {
    int n_ops, n_features, hidden, rounds, groups, devices;
    int stages;                                 /* the stage head's usable columns */
    int n_shapes;                               /* choices of the plan's shape */
    int shape_slot[PL_POLICY_MAX_SHAPES];       /* each one's column of the shape head */
    int shape_mb[PL_POLICY_MAX_SHAPES];         /* each one's micro-batch count */
    int shape_fold[PL_POLICY_MAX_SHAPES];       /* stages per device (1: no fold) */
    pl_schedule shape_schedule[PL_POLICY_MAX_SHAPES]; /* when pipelined */
    bool shape_defer[PL_POLICY_MAX_SHAPES];     /* weight gradients deferred */
    double *features;                /* n_ops x n_features */
    double *group_features;          /* n_ops x PL_POLICY_GROUP_FEATURES: FLOPs share, 1/n */
    double *device_features;         /* devices x PL_POLICY_DEVICE_FEATURES */
    pl_adjacency *adjacency;         /* the forward ops' distinct producers and consumers */
    pl_policy_layout layout;
    double *params;                  /* layout.n */
} pl_policy;

/* One sampled decision set. */
typedef struct pl_action {
    int *group;                       /* per op */
    int device[PL_AGENT_MAX_GROUPS];  /* per group */
    int stage[PL_AGENT_MAX_GROUPS];
    int shape;                        /* index into shape_mb and shape_fold */
} pl_action;

/* Builds features and adjacency for `graph`'s forward ops, the cluster's device features
 * (costed by `model`), the shapes the options allow, the layout, and weights drawn from
 * the options' seed. */
pl_status pl_policy_init(pl_policy *policy, const pl_graph *graph, const pl_cluster *cluster,
                         const pl_cost_model *model, const pl_agent_options *options,
                         pl_error *err);
/* Fills policy->device_features (device_features.c). */
pl_status pl_policy_device_features(pl_policy *policy, const pl_graph *graph,
                                    const pl_cluster *cluster, const pl_cost_model *model,
                                    pl_error *err);
void pl_policy_clear(pl_policy *policy);

pl_action *pl_actions_new(const pl_policy *policy, int n);
void pl_actions_free(pl_action *actions, int n);

/* Draws n actions from the policy; randomness from (seed, stream + sample). */
pl_status pl_policy_sample(const pl_policy *policy, uint64_t seed, uint64_t stream,
                           pl_action *actions, int n, pl_error *err);

/* J = sum_s weight[s] * log pi(actions[s]) + entropy * (mean entropy of the grouper's
 * decisions + mean over s of the mean entropy of the device and stage decisions of the
 * non-empty groups + entropy of the shape decision). Adds dJ/dparams to `grad`
 * (NULL: only J) and returns J in *objective; *mean_entropy gets the entropy term without
 * its weight, logp[s] log pi(actions[s]) (both NULL allowed). */
pl_status pl_policy_objective(const pl_policy *policy, const pl_action *actions,
                              const double *weight, int n, double entropy, double *objective,
                              double *mean_entropy, double *logp, double *grad, pl_error *err);

/* The plan of an action: devices and stages per op, stages made to follow the dataflow
 * and numbered without gaps, 1F1B when pipelined. `plan` has graph->n_forward_ops ops. */
void pl_action_to_plan(const pl_policy *policy, const pl_action *action, pl_plan *plan);

/* The action that reproduces a plan: one group per distinct (device, stage) pair, in
 * order of first appearance (pairs beyond the groups share the last group, stages beyond
 * the head's the last stage); false when the plan's shape is not among the choices.
 * *exact (NULL allowed): whether the action gives back the plan itself, not such an
 * approximation (a folded plan may have more stages or pairs than the head has). */
bool pl_action_from_plan(const pl_policy *policy, const pl_plan *plan, pl_action *action,
                         bool *exact);

#endif
