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
    PL_POLICY_DEVICE_FEATURES = 13, /* device_features.c */
    PL_POLICY_SPLIT_CHOICES = 4,    /* a group's ops split over 1, 2, 4 or 8 devices */
    PL_POLICY_RECOMPUTE_CHOICES = 2, /* keep a group's activations or recompute them */
    /* what the split and recompute heads read of memory (policy_split.c): the load of the
     * group's device over its room, and how far that load is over the room */
    PL_POLICY_MEMORY_FEATURES = 2
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
    int wsplit, msplit, bsplit;                  /* split head: group, memory, bias */
    int wrc, mrc, brc;                           /* recompute head: the same */
    int n;
} pl_policy_layout;

/* The layout of a policy of these options (agent.h: hidden, rounds, groups). */
void pl_policy_layout_build(pl_policy_layout *layout, int hidden, int rounds, int groups);
/* The split and recompute heads' first weights (policy_split.c), the same for every seed:
 * nothing from the group's embedding, and biases that keep a group whole and its
 * activations unless its device's memory is over its room. A policy file without these
 * heads (made before them) loads with these. */
void pl_policy_init_memory_heads(const pl_policy_layout *layout, int hidden, int groups,
                                 double *params);

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
    double *op_memory;               /* per op: its co-location group's bytes */
    double device_room[PL_MAX_DEVICES]; /* bytes a device holds of groups */
    /* The devices a split may take: each cluster group's devices (cluster.h) in order,
     * one group after another; a device's place in that order, and its group's first
     * place and size. A split over k takes the aligned run of k holding the device. */
    int split_order[PL_MAX_DEVICES], split_at[PL_MAX_DEVICES];
    int split_first[PL_MAX_DEVICES], split_size[PL_MAX_DEVICES];
    pl_adjacency *adjacency;         /* the forward ops' distinct producers and consumers */
    pl_policy_layout layout;
    double *params;                  /* layout.n */
} pl_policy;

/* One sampled decision set. */
typedef struct pl_action {
    int *group;                       /* per op */
    int device[PL_AGENT_MAX_GROUPS];  /* per group */
    int stage[PL_AGENT_MAX_GROUPS];
    int split[PL_AGENT_MAX_GROUPS];   /* its ops over 1 << split devices (policy_split.c) */
    int recompute[PL_AGENT_MAX_GROUPS]; /* 1: its ops' activations recomputed, its last's
                                           kept (the checkpoint later groups read) */
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
 * decisions + mean over s of the mean entropy of the device, stage, split and recompute
 * decisions of the non-empty groups + entropy of the shape decision). Adds dJ/dparams to `grad`
 * (NULL: only J) and returns J in *objective; *mean_entropy gets the entropy term without
 * its weight, logp[s] log pi(actions[s]) (both NULL allowed). */
pl_status pl_policy_objective(const pl_policy *policy, const pl_action *actions,
                              const double *weight, int n, double entropy, double *objective,
                              double *mean_entropy, double *logp, double *grad, pl_error *err);

/* The plan of an action: devices and stages per op, stages made to follow the dataflow
 * and numbered without gaps, 1F1B when pipelined, ops split and activations recomputed as
 * the split and recompute heads chose (policy_split.c). `plan` has graph->n_forward_ops
 * ops. False when out of memory (a plan's first split devices), the plan then of whole
 * ops. */
bool pl_action_to_plan(const pl_policy *policy, const pl_action *action, pl_plan *plan);

/* The action that reproduces a plan: one group per distinct (device, stage, split count)
 * in order of first appearance (those beyond the groups share the last group, stages
 * beyond the head's the last stage), each group's split degree its ops' (the largest its
 * device allows) and recomputing when any of its ops does; false when the plan's shape is
 * not among the choices.
 * *exact (NULL allowed): whether the action gives back the plan itself, not such an
 * approximation (a folded plan may have more stages or pairs than the head has, a plan may
 * split ops over devices no run of the cluster's groups holds, or recompute other ops than
 * a group's all but last). */
bool pl_action_from_plan(const pl_policy *policy, const pl_plan *plan, pl_action *action,
                         bool *exact);

/* ---- the split and recompute heads' view of the cluster and memory (policy_split.c) ---- */

/* Fills split_order, split_at, split_first and split_size from the cluster's groups. */
void pl_policy_split_blocks(pl_policy *policy, const pl_cluster *cluster);
/* Whether a group on `device` may split over 1 << choice devices: its cluster group holds
 * the aligned run of that many containing it. */
bool pl_policy_split_allowed(const pl_policy *policy, int device, int choice);
/* The run's devices, in order, into devices[1 << choice] (choice allowed). */
void pl_policy_split_devices(const pl_policy *policy, int device, int choice, int *devices);
/* The memory features of the action's groups on their devices (ops grouped and devices
 * chosen): groups x PL_POLICY_MEMORY_FEATURES. */
void pl_policy_memory_features(const pl_policy *policy, const pl_action *action,
                               double *features);
/* Writes the action's splits and recomputation into a plan whose devices and stages
 * pl_action_to_plan has set; false when out of memory. */
bool pl_action_split_to_plan(const pl_policy *policy, const pl_action *action, pl_plan *plan);
/* The split and recompute choices of each group of an action pl_action_from_plan has
 * grouped; false when the action does not give back the plan's splits and recomputation
 * exactly. */
bool pl_action_split_from_plan(const pl_policy *policy, const pl_plan *plan,
                               pl_action *action);

#endif
