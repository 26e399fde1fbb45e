/* Pre-training: one policy over a corpus of models and clusters, so that a search on a
 * model it has never seen starts from weights that already place well (docs/agent.md,
 * "Pre-training").
 *
 * Each round visits every (model, cluster) pair once, in an order drawn from the seed: a
 * simulated search (search.h, nothing measured) starts from the weights so far, offers
 * and imitates the baselines as every search does, learns for `iterations` iterations,
 * and its weights are where the next visit starts. Each visit all but overwrites what the
 * ones before taught, so consolidation may follow: supervised steps fitting the policy to
 * every pair's fastest plan of one replica from its last visit, all at once. The result is
 * a pure function of the corpus, the pairs' cost models, the seed and the counts.
 *
 * Ownership: the corpus, its cost models and the options are borrowed for the call; the
 * weights are the caller's (pl_policy_weights_clear). */
#ifndef PLACER_PRETRAIN_H
#define PLACER_PRETRAIN_H

#include <signal.h>

#include "agent.h"
#include "cluster.h"
#include "cost_model.h"
#include "graph.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct pl_pretrain_pair {
    const char *name;          /* for progress: "seq2seq on paced-8" */
    const pl_graph *graph;     /* a training graph (autodiff.h) */
    const pl_cluster *cluster;
    const pl_cost_model *model; /* the cluster's: this machine's profile, or none for
                                   hardware placer cannot run (its datasheet's roofline) */
} pl_pretrain_pair;

typedef struct pl_pretrain_options {
    uint64_t seed;   /* the visiting order's and every search's (default 1) */
    int rounds;      /* visits of every pair (default 3) */
    int iterations;  /* the agent's iterations a visit (default 20) */
    int samples;     /* plans drawn an iteration (default 32) */
    int consolidation_steps; /* after the rounds, supervised steps of one policy towards
                                every pair's fastest plan of one replica of its last
                                visit at once (default 0: none) */
} pl_pretrain_options;

void pl_pretrain_options_default(pl_pretrain_options *options);

/* One visit done: the pair, the round (from 0), and the visit's best simulated step against
 * the best baseline's and against the policy's own samples' (its last iteration's mean). */
typedef struct pl_pretrain_visit {
    const pl_pretrain_pair *pair;
    int round, visit, visits;   /* visit from 1 of visits in all */
    double best_baseline;       /* seconds, simulated; 0: none fits */
    double best;                /* the search's best plan */
    double mean_sampled;        /* the last iteration's samples */
} pl_pretrain_visit;

typedef void (*pl_pretrain_progress)(void *context, const pl_pretrain_visit *visit);

/* Pre-trains from `start` (NULL: fresh weights from the seed) into *weights. Polls
 * `interrupt` (NULL allowed) between visits and within them: once set, returns
 * PL_EINTERRUPTED with the weights of the visits done. PL_EINPUT: an empty corpus or
 * counts out of range, or a pair on whose cluster no plan of its model fits the memory:
 * then *no_fit (NULL allowed; else -1) is that pair's index, the error names it, and the
 * weights are cleared (a policy learns nothing from plans that never fit). */
pl_status pl_pretrain(const pl_pretrain_pair *pairs, int n_pairs,
                      const pl_pretrain_options *options, const pl_policy_weights *start,
                      pl_pretrain_progress progress, void *context,
                      volatile sig_atomic_t *interrupt, pl_policy_weights *weights,
                      int *no_fit, pl_error *err);

#ifdef __cplusplus
}
#endif

#endif
