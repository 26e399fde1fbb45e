/* The policy's split and recompute decisions: which devices a group's ops may split over,
 * what the two heads read of memory, and the decisions written into a plan and read back
 * from one.
 *
 * A group on device d with split choice c runs its ops over the aligned run of 1 << c
 * devices holding d inside d's cluster group (devices joined by the faster links,
 * cluster.h), as megatron's tensor groups are runs of such a group: on a cluster of one
 * group of 8, a group on device 5 splits over 4..5, 4..7 or 0..7. Ops of kinds the rewrite
 * cannot split run whole on the run's first device (split_graph.h). A group that
 * recomputes has every op's activations recomputed but its last's (in the graph's order),
 * which stays as the checkpoint the later groups read and the recomputation starts from. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy_impl.h"

/* The bias that keeps a group whole and its activations kept, and the weight of the
 * excess over the device's room that undoes it: at 1.5 times the room every choice is as
 * likely as the default, beyond that more. The bias is that strong so that the two heads'
 * entropy (about 0.002 nats) leaves the search's test of a collapsed policy (search.h,
 * PL_SEARCH_COLLAPSED_ENTROPY) as it was on models that fit. */
#define MEMORY_HEAD_BIAS 10.0
#define MEMORY_HEAD_WEIGHT 20.0
/* memory features are clipped here: a device 5 times over its room is as over as can be */
#define MEMORY_FEATURE_CAP 4.0

void pl_policy_init_memory_heads(const pl_policy_layout *l, int hidden, int groups,
                                 double *params)
{
    int z = 2 * hidden + PL_POLICY_GROUP_FEATURES + groups;
    memset(params + l->wsplit, 0, (size_t)z * PL_POLICY_SPLIT_CHOICES * sizeof *params);
    memset(params + l->wrc, 0, (size_t)z * PL_POLICY_RECOMPUTE_CHOICES * sizeof *params);
    memset(params + l->msplit, 0,
           (size_t)PL_POLICY_MEMORY_FEATURES * PL_POLICY_SPLIT_CHOICES * sizeof *params);
    memset(params + l->mrc, 0,
           (size_t)PL_POLICY_MEMORY_FEATURES * PL_POLICY_RECOMPUTE_CHOICES * sizeof *params);
    for (int c = 1; c < PL_POLICY_SPLIT_CHOICES; c++) {
        params[l->bsplit + c] = -MEMORY_HEAD_BIAS;
        params[l->msplit + 1 * PL_POLICY_SPLIT_CHOICES + c] = MEMORY_HEAD_WEIGHT;
    }
    params[l->bsplit] = 0;
    params[l->brc] = 0;
    params[l->brc + 1] = -MEMORY_HEAD_BIAS;
    params[l->mrc + 1 * PL_POLICY_RECOMPUTE_CHOICES + 1] = MEMORY_HEAD_WEIGHT;
}

void pl_policy_split_blocks(pl_policy *p, const pl_cluster *c)
{
    int all[PL_MAX_DEVICES], group[PL_MAX_DEVICES], n = c->n_devices, at = 0;
    for (int d = 0; d < n; d++)
        all[d] = d;
    int groups = pl_cluster_groups(c, all, n, group);
    for (int g = 0; g < groups; g++) {
        int first = at;
        for (int d = 0; d < n; d++)
            if (group[d] == g) {
                p->split_order[at] = d;
                p->split_at[d] = at++;
            }
        for (int k = first; k < at; k++) {
            p->split_first[p->split_order[k]] = first;
            p->split_size[p->split_order[k]] = at - first;
        }
    }
}

bool pl_policy_split_allowed(const pl_policy *p, int device, int choice)
{
    int k = 1 << choice, place = p->split_at[device] - p->split_first[device];
    return k <= PL_MAX_SPLIT && place / k * k + k <= p->split_size[device];
}

void pl_policy_split_devices(const pl_policy *p, int device, int choice, int *devices)
{
    int k = 1 << choice, place = p->split_at[device] - p->split_first[device];
    int first = p->split_first[device] + place / k * k;
    for (int s = 0; s < k; s++)
        devices[s] = p->split_order[first + s];
}

void pl_policy_memory_features(const pl_policy *p, const pl_action *a, double *f)
{
    double load[PL_MAX_DEVICES] = {0};
    for (int i = 0; i < p->n_ops; i++)
        load[a->device[a->group[i]]] += p->op_memory[i];
    for (int k = 0; k < p->groups; k++) {
        int d = a->device[k];
        double pressure = p->device_room[d] > 0 ? load[d] / p->device_room[d]
                                                : MEMORY_FEATURE_CAP;
        pressure = fmin(pressure, MEMORY_FEATURE_CAP);
        f[k * PL_POLICY_MEMORY_FEATURES] = pressure;
        f[k * PL_POLICY_MEMORY_FEATURES + 1] = fmax(0, pressure - 1);
    }
}

/* The largest choice up to `choice` allowed on `device` (0 always is). */
static int allowed_choice(const pl_policy *p, int device, int choice)
{
    while (choice > 0 && !pl_policy_split_allowed(p, device, choice))
        choice--;
    return choice;
}

bool pl_action_split_to_plan(const pl_policy *p, const pl_action *a, pl_plan *plan)
{
    int last[PL_AGENT_MAX_GROUPS];
    for (int k = 0; k < p->groups; k++)
        last[k] = -1;
    for (int i = 0; i < p->n_ops; i++)
        last[a->group[i]] = i;
    bool any = false;
    for (int i = 0; i < p->n_ops; i++) {
        int k = a->group[i];
        plan->recompute[i] = a->recompute[k] && i != last[k];
        plan->split[i] = 1;
        any = any || a->split[k] > 0;
    }
    if (!any) { /* the invariant: no split devices while no op is split */
        free(plan->split_device);
        plan->split_device = NULL;
        return true;
    }
    for (int i = 0; i < p->n_ops; i++) {
        /* a folded plan may have moved the op off the device its group chose */
        int choice = allowed_choice(p, plan->device[i], a->split[a->group[i]]);
        int devices[PL_MAX_SPLIT];
        if (choice == 0)
            continue;
        pl_policy_split_devices(p, plan->device[i], choice, devices);
        if (pl_plan_split(plan, i, 1 << choice, devices, NULL) != PL_OK) {
            for (int o = 0; o < p->n_ops; o++)
                plan->split[o] = 1;
            return false;
        }
    }
    return true;
}

/* The nearest choice to a split over k devices: the largest whose degree is at most k. */
static int choice_of(int k)
{
    int c = 0;
    while (c + 1 < PL_POLICY_SPLIT_CHOICES && 1 << (c + 1) <= k)
        c++;
    return c;
}

bool pl_action_split_from_plan(const pl_policy *p, const pl_plan *plan, pl_action *a)
{
    bool exact = true;
    int last[PL_AGENT_MAX_GROUPS];
    for (int k = 0; k < p->groups; k++)
        a->split[k] = a->recompute[k] = 0, last[k] = -1;
    for (int i = 0; i < p->n_ops; i++) {
        int k = a->group[i], choice = allowed_choice(p, a->device[k], choice_of(plan->split[i]));
        if (choice > a->split[k])
            a->split[k] = choice;
        a->recompute[k] |= plan->recompute[i];
        last[k] = i;
    }
    for (int i = 0; i < p->n_ops && exact; i++) {
        int k = a->group[i], devices[PL_MAX_SPLIT];
        exact = plan->recompute[i] == (a->recompute[k] && i != last[k]) &&
                plan->split[i] == 1 << a->split[k];
        if (exact && a->split[k] > 0) {
            pl_policy_split_devices(p, a->device[k], a->split[k], devices);
            for (int s = 0; s < plan->split[i] && exact; s++)
                exact = pl_plan_shard_device(plan, 0, i, s) == devices[s];
        }
    }
    return exact;
}
