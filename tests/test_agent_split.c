/* The agent's split and recompute decisions: the runs of devices a split may take,
 * megatron's plan read back into an action and written again, the split and recompute
 * heads of an untrained policy where the model fits and where it does not, an agent that
 * finds a plan that fits on its own where no layer fits one device (and checkpoints it),
 * a split plan replicated, and the shipped policy, made before these heads, loaded with
 * their first weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_impl.h"
#include "baseline.h"
#include "policy_impl.h"
#include "suites.h"
#include "test_util.h"

/* An op costs 2 us plus 1 ns per FLOP; a copy 5 us plus 0.1 ns per byte. */
static pl_cost_model flop_costs(void)
{
    return pl_test_costs((pl_op_cost){2e-6, 1e-9, 0, 1, 0, 0}, 5e-6, 1e-10, 1e-6);
}

static pl_agent_options small_options(void)
{
    pl_agent_options o;
    pl_agent_options_default(&o);
    o.samples = 16, o.groups = 4, o.hidden = 16, o.threads = 2;
    return o;
}

/* A model of `layers` layers of `width` on a bundled cluster, costed by FLOPs, and the
 * tests' agent options. */
typedef struct setting {
    pl_graph *g;
    pl_cluster *c;
    pl_cost_model m;
    pl_agent_options o;
} setting;

static void setting_init(setting *t, int layers, int width, const char *cluster)
{
    t->g = pl_test_relu_chain(layers, width);
    t->c = pl_test_bundled_cluster(cluster);
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->c);
    t->m = flop_costs();
    t->o = small_options();
}

static void setting_free(setting *t)
{
    pl_cost_model_clear(&t->m);
    pl_cluster_free(t->c);
    pl_graph_free(t->g);
}

/* Two layers no device holds (each 72 MiB with its gradient, the devices 48 MiB) on
 * paced-8-small-memory. */
static void too_large_init(setting *t)
{
    setting_init(t, 2, 3072, "paced-8-small-memory.json");
}

/* Runs inside the cluster's groups: on two ranks of four devices (a0-a3 and a4-a7), a
 * device splits over aligned runs of its own rank, 8 not at all. */
static void test_split_runs(void)
{
    setting t;
    setting_init(&t, 1, 64, "paced-8-ranks-2.json");
    pl_policy p;
    CU_ASSERT_EQUAL_FATAL(pl_policy_init(&p, t.g, t.c, &t.m, &t.o, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(t.c->n_devices, 8);
    for (int d = 0; d < 8; d++) {
        CU_ASSERT(pl_policy_split_allowed(&p, d, 0));
        CU_ASSERT(pl_policy_split_allowed(&p, d, 1));
        CU_ASSERT(pl_policy_split_allowed(&p, d, 2));
        CU_ASSERT(!pl_policy_split_allowed(&p, d, 3));
    }
    int devices[8];
    pl_policy_split_devices(&p, 6, 1, devices);
    CU_ASSERT(devices[0] == 6 && devices[1] == 7);
    pl_policy_split_devices(&p, 5, 2, devices);
    CU_ASSERT(devices[0] == 4 && devices[1] == 5 && devices[2] == 6 && devices[3] == 7);
    pl_policy_split_devices(&p, 1, 1, devices);
    CU_ASSERT(devices[0] == 0 && devices[1] == 1);
    pl_policy_clear(&p);
    setting_free(&t);
}

/* megatron's plan as an action and back: its splits (runs of the machine), devices and
 * stages given back exactly. */
static void test_megatron_round_trip(void)
{
    setting t;
    too_large_init(&t);
    pl_error err;
    pl_error_init(&err, NULL);
    pl_plan *plan = pl_baseline_place(PL_BASELINE_MEGATRON, t.g, t.c, &t.m, 1, &err);
    if (!plan)
        fprintf(stderr, "\n    megatron: %s\n", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    CU_ASSERT(pl_plan_rewrites_graph(plan));
    pl_policy p;
    CU_ASSERT_EQUAL_FATAL(pl_policy_init(&p, t.g, t.c, &t.m, &t.o, NULL), PL_OK);
    pl_action *a = pl_actions_new(&p, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    bool exact = false;
    CU_ASSERT_FATAL(pl_action_from_plan(&p, plan, a, &exact));
    CU_ASSERT(exact);
    pl_plan *again = pl_plan_new(t.g, NULL);
    CU_ASSERT_FATAL(again && pl_action_to_plan(&p, a, again));
    int split = 0;
    for (int o = 0; o < plan->n_ops; o++) {
        CU_ASSERT_EQUAL(again->split[o], plan->split[o]);
        CU_ASSERT_EQUAL(again->recompute[o], plan->recompute[o]);
        CU_ASSERT_EQUAL(again->stage[o], plan->stage[o]);
        for (int s = 0; s < plan->split[o] && again->split[o] == plan->split[o]; s++)
            CU_ASSERT_EQUAL(pl_plan_shard_device(again, 0, o, s),
                            pl_plan_shard_device(plan, 0, o, s));
        split += plan->split[o] > 1;
    }
    CU_ASSERT(split > 0);
    CU_ASSERT_EQUAL(again->n_stages, plan->n_stages);
    CU_ASSERT_EQUAL(again->micro_batches, plan->micro_batches);
    /* a recomputing group: all its ops but its last */
    int k = a->group[0], last = -1;
    a->recompute[k] = 1;
    CU_ASSERT_FATAL(pl_action_to_plan(&p, a, again));
    for (int o = 0; o < p.n_ops; o++)
        if (a->group[o] == k)
            last = o;
    for (int o = 0; o < p.n_ops; o++)
        CU_ASSERT_EQUAL(again->recompute[o], a->group[o] == k && o != last);
    CU_ASSERT(pl_action_from_plan(&p, again, a, &exact) && exact);
    CU_ASSERT_EQUAL(a->recompute[a->group[0]], 1);
    pl_plan_free(again);
    pl_actions_free(a, 1);
    pl_policy_clear(&p);
    pl_plan_free(plan);
    setting_free(&t);
}

/* How many of the samples' non-empty groups split or recompute; each split one its
 * device allows. */
static double share_splitting(const pl_policy *p, const pl_action *a, int n)
{
    int groups = 0, splitting = 0;
    for (int s = 0; s < n; s++)
        for (int k = 0; k < p->groups; k++) {
            bool used = false;
            for (int i = 0; i < p->n_ops && !used; i++)
                used = a[s].group[i] == k;
            groups += used;
            splitting += used && (a[s].split[k] > 0 || a[s].recompute[k]);
            CU_ASSERT(pl_policy_split_allowed(p, a[s].device[k], a[s].split[k]));
        }
    return (double)splitting / groups;
}

/* An untrained policy rarely splits or recomputes where the model fits, and mostly does
 * where its devices are far over their room (the same weights: the memory features
 * decide), never over 8 devices where the machines have 4. */
static void test_untrained_heads(void)
{
    enum { N = 64 };
    pl_agent_options o = small_options();
    pl_cost_model m = flop_costs();
    pl_graph *small = pl_test_relu_chain(2, 64);
    pl_cluster *c = pl_test_bundled_cluster("paced-8-small-memory.json");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_policy p;
    CU_ASSERT_EQUAL_FATAL(pl_policy_init(&p, small, c, &m, &o, NULL), PL_OK);
    pl_action *a = pl_actions_new(&p, N);
    CU_ASSERT_EQUAL_FATAL(pl_policy_sample(&p, 3, 0, a, N, NULL), PL_OK);
    CU_ASSERT(!pl_policy_split_allowed(&p, 0, 3)); /* two machines of four */
    double fits = share_splitting(&p, a, N);
    pl_actions_free(a, N);
    pl_policy_clear(&p);
    pl_graph *large = pl_test_relu_chain(2, 8192); /* 512 MiB a layer with its gradient */
    CU_ASSERT_EQUAL_FATAL(pl_policy_init(&p, large, c, &m, &o, NULL), PL_OK);
    a = pl_actions_new(&p, N);
    CU_ASSERT_EQUAL_FATAL(pl_policy_sample(&p, 3, 0, a, N, NULL), PL_OK);
    double over = share_splitting(&p, a, N);
    pl_actions_free(a, N);
    pl_policy_clear(&p);
    CU_ASSERT(fits < 0.05);
    CU_ASSERT(over > 0.5);
    pl_graph_free(large);
    pl_graph_free(small);
    pl_cluster_free(c);
    pl_cost_model_clear(&m);
}

/* Where no layer fits one device, an agent offered nothing finds within a few iterations
 * a plan that fits: one that splits ops or recomputes (a plan of whole ops cannot); its
 * checkpoint gives its plans back. */
static void test_finds_a_plan_that_fits(void)
{
    setting t;
    too_large_init(&t);
    t.o.refine_every = 0;
    pl_agent *a = pl_agent_new(t.g, t.c, &t.m, &t.o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    for (int i = 0; i < 4 && pl_agent_best_count(a) == 0; i++)
        CU_ASSERT_EQUAL_FATAL(pl_agent_iterate(a, NULL, NULL), PL_OK);
    CU_ASSERT_FATAL(pl_agent_best_count(a) > 0);
    pl_plan *best = pl_agent_best_plan(a, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(best);
    CU_ASSERT(pl_plan_rewrites_graph(best));
    double step;
    bool fits = false;
    CU_ASSERT_EQUAL(pl_agent_simulate(a, best, &step, &fits, NULL), PL_OK);
    CU_ASSERT(fits);
    /* a checkpoint gives back its split and recomputing plans */
    char path[] = "/tmp/placer-agent-split-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    CU_ASSERT_EQUAL_FATAL(pl_agent_save(a, path, NULL), PL_OK);
    pl_error err;
    pl_agent *back = pl_agent_load(path, t.g, t.c, &t.m, &t.o, &err);
    unlink(path);
    if (!back)
        fprintf(stderr, "\n    %s\n", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(back);
    CU_ASSERT_EQUAL_FATAL(pl_agent_best_count(back), pl_agent_best_count(a));
    for (int k = 0; k < pl_agent_best_count(a); k++) {
        CU_ASSERT_EQUAL(back->best[k].key, a->best[k].key);
        const pl_plan *x = a->best[k].plan, *y = back->best[k].plan;
        for (int i = 0; i < x->n_ops; i++) {
            CU_ASSERT_EQUAL(y->split[i], x->split[i]);
            CU_ASSERT_EQUAL(y->recompute[i], x->recompute[i]);
            for (int r = 0; r < x->replicas; r++)
                for (int s = 0; s < x->split[i] && y->split[i] == x->split[i]; s++)
                    CU_ASSERT_EQUAL(pl_plan_shard_device(y, r, i, s),
                                    pl_plan_shard_device(x, r, i, s));
        }
    }
    pl_agent_free(back);
    pl_plan_free(best);
    pl_agent_free(a);
    setting_free(&t);
}

/* A plan splitting every op over a0-a1 of paced-8 (two machines of four) replicated: each
 * further replica's shards take that replica's devices, a2-a3, then b0-b1 and b2-b3. */
static void test_replicated_splits(void)
{
    setting t;
    setting_init(&t, 2, 512, "paced-8.json");
    pl_agent *a = pl_agent_new(t.g, t.c, &t.m, &t.o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    pl_plan *plan = pl_plan_new(t.g, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plan);
    for (int i = 0; i < plan->n_ops; i++)
        CU_ASSERT_EQUAL_FATAL(pl_plan_split(plan, i, 2, (const int[]){0, 1}, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_agent_replicate(a, plan, "split", NULL), PL_OK);
    CU_ASSERT_FATAL(pl_agent_best_count(a) > 0);
    pl_plan *best = pl_agent_best_plan(a, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(best);
    CU_ASSERT(best->replicas > 1);
    for (int r = 0; r < best->replicas; r++)
        for (int i = 0; i < best->n_ops; i++) {
            CU_ASSERT_EQUAL(best->split[i], 2);
            for (int s = 0; s < 2; s++)
                CU_ASSERT_EQUAL(pl_plan_shard_device(best, r, i, s), 2 * r + s);
        }
    double step;
    bool fits = false;
    CU_ASSERT_EQUAL(pl_agent_simulate(a, best, &step, &fits, NULL), PL_OK);
    CU_ASSERT(fits);
    pl_plan_free(best);
    pl_plan_free(plan);
    pl_agent_free(a);
    setting_free(&t);
}

/* The shipped policy, made before the split and recompute heads, loads with their first
 * weights, and a policy starting from it splits no more than a new one where the model
 * fits. */
static void test_shipped_policy(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/share/policy.plt", pl_test_srcdir());
    pl_policy_weights w;
    pl_error err;
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL_FATAL(pl_policy_weights_read(path, &w, &err), PL_OK);
    pl_policy_layout l;
    pl_policy_layout_build(&l, w.hidden, w.rounds, w.groups);
    CU_ASSERT_EQUAL_FATAL(w.n, l.n);
    double *first = calloc((size_t)l.n, sizeof *first);
    CU_ASSERT_PTR_NOT_NULL_FATAL(first);
    pl_policy_init_memory_heads(&l, w.hidden, w.groups, first);
    int differ = 0;
    for (int i = l.wsplit; i < l.n; i++)
        differ += w.values[i] != first[i];
    CU_ASSERT_EQUAL(differ, 0);
    CU_ASSERT(w.values[l.bsplit + 1] < 0); /* not all zeros: the heads were initialised */
    free(first);
    enum { N = 32 };
    pl_agent_options o = small_options();
    o.hidden = w.hidden, o.rounds = w.rounds, o.groups = w.groups;
    pl_cost_model m = flop_costs();
    pl_graph *g = pl_test_relu_chain(2, 64);
    pl_cluster *c = pl_test_bundled_cluster("paced-8-small-memory.json");
    pl_agent *a = pl_agent_new(g, c, &m, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL_FATAL(pl_agent_start_from(a, &w, NULL), PL_OK);
    pl_action *actions = pl_actions_new(&a->policy, N);
    CU_ASSERT_EQUAL_FATAL(pl_policy_sample(&a->policy, 1, 0, actions, N, NULL), PL_OK);
    CU_ASSERT(share_splitting(&a->policy, actions, N) < 0.05);
    pl_actions_free(actions, N);
    pl_agent_free(a);
    pl_policy_weights_clear(&w);
    pl_graph_free(g);
    pl_cluster_free(c);
    pl_cost_model_clear(&m);
}

void pl_register_agent_split_tests(void)
{
    static const pl_test_case cases[] = {
        {"a split takes an aligned run of its device's machine", test_split_runs},
        {"megatron's plan as an action and back", test_megatron_round_trip},
        {"untrained heads split where memory runs out, rarely elsewhere", test_untrained_heads},
        {"no layer fits a device: the agent finds a plan that fits",
         test_finds_a_plan_that_fits},
        {"a split plan replicated: each replica's shards on its devices",
         test_replicated_splits},
        {"the shipped policy loads with the heads' first weights", test_shipped_policy},
        {NULL, NULL}};
    pl_test_add_suite("agent-split", cases);
}
