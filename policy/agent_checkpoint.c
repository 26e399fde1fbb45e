/* Agent checkpoints: everything a resumed search needs to continue as the uninterrupted
 * one would, bit for bit.
 *
 * Format (the machine's byte order, as training checkpoints): "PLACERAG", u32 version 11,
 * the header struct as the machine lays it out (u64 model hash (pl_graph.hash), u64 cluster
 * hash (pl_cluster_hash), i32 devices, i32 the mode (0 learning, 1 without learning, 2
 * sampling a policy without training it), the options that shape the
 * search: u64 seed, i32
 * samples, groups, hidden, rounds, epochs, fold, defer, sweep, refine_every,
 * refine_proposals, f64 lr, entropy, anchor), i32 iteration, i64 Adam's step, f64
 * reference, f64 log-ratio sum, i32 corrections, i32 refinements, u64 x 8 the keys of the
 * plans they started from (a ring), f64 the policy's own best step, i32 parameter count,
 * then the parameters, Adam's first and second moments (f64 each), the curve (per
 * iteration, the pl_agent_iteration struct), i32 best count and per best plan: f64 step,
 * u64 key, 64 bytes of algorithm, i32 stages, micro-batches, schedule, flags (1: weight
 * gradients deferred, 2: optimizer state sharded), then the device and stage of every
 * forward op, i32 replicas and the other replicas' devices, i32 the split count of every
 * forward op, for each split op each replica's shard devices (i32 each), and u8 per
 * forward op whether its activations are recomputed; the same for the lead plan
 * (of one replica) after an i32 0 or 1, and for each origin's best plan after their i32
 * count. Written atomically. tests/invalid/README.md lists the offsets of a small
 * checkpoint.
 *
 * Reading checks every field before the agent is used: the identity (model, cluster,
 * options), each count and index within its range, each number finite, each kept plan
 * valid for the model and cluster, nothing after the end. An error names the field. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "atomic_file.h"
#include "binary_reader.h"
#include "input_file.h"

static const char MAGIC[8] = {'P', 'L', 'A', 'C', 'E', 'R', 'A', 'G'};
/* 2: the shape head; deferred weight gradients; 3: the sweep; 4: the refinement; 5: the
 * cluster's hash; 6: the policy's layout independent of the graph and cluster; 7: the
 * origins; 8: replicas; 9: a sharded optimizer state; 10: the lead of one replica; 11: the
 * split and recompute heads, plans that split ops and recompute activations */
enum { VERSION = 11 };

enum { FLAG_DEFER = 1, FLAG_SHARD = 2 };

typedef struct header {
    uint64_t model_hash, cluster_hash;
    int32_t devices;
    int32_t mode; /* 0 learning, 1 without learning, 2 sampling without training */
    uint64_t seed;
    int32_t samples, groups, hidden, rounds, epochs, max_fold, defer, sweep;
    int32_t refine_every, refine_proposals;
    double lr, entropy, anchor;
} header;

static header header_of(const pl_graph *g, const pl_cluster *c, const pl_agent_options *o)
{
    header h;
    memset(&h, 0, sizeof h); /* padding too: the bytes are compared */
    h.model_hash = g->hash;
    h.cluster_hash = pl_cluster_hash(c);
    h.devices = c->n_devices;
    h.mode = !o->learn ? 1 : !o->train ? 2 : 0;
    h.seed = o->seed;
    h.samples = o->samples;
    h.groups = o->groups;
    h.hidden = o->hidden;
    h.rounds = o->rounds;
    h.epochs = o->epochs;
    h.max_fold = o->max_fold;
    h.defer = o->defer;
    h.sweep = o->sweep | o->replicate << 1;
    h.refine_every = o->refine_every;
    h.refine_proposals = o->refine_proposals;
    h.lr = o->lr;
    h.entropy = o->entropy;
    h.anchor = o->anchor;
    return h;
}

#define PUT(fp, value) (ok = ok && fwrite(&(value), sizeof(value), 1, fp) == 1)
#define PUTN(fp, ptr, n) \
    (ok = ok && ((n) == 0 || fwrite(ptr, sizeof *(ptr), (size_t)(n), fp) == (size_t)(n)))

/* One kept plan: f64 step, u64 key, 64 bytes of algorithm, i32 stages, micro-batches,
 * schedule, flags, then the device and stage of every forward op, i32 replicas, the
 * other replicas' devices, the split counts, split ops' shard devices and recompute
 * flags. */
static bool put_best(FILE *fp, const pl_agent_best *b)
{
    bool ok = true;
    int32_t flags = (b->plan->defer_weight_gradients ? FLAG_DEFER : 0) |
                    (b->plan->shard_optimizer_state ? FLAG_SHARD : 0);
    int32_t shape[4] = {b->plan->n_stages, b->plan->micro_batches, (int32_t)b->plan->schedule,
                        flags};
    PUT(fp, b->step);
    PUT(fp, b->key);
    PUTN(fp, b->algorithm, sizeof b->algorithm);
    PUTN(fp, shape, 4);
    PUTN(fp, b->plan->device, b->plan->n_ops);
    PUTN(fp, b->plan->stage, b->plan->n_ops);
    int32_t replicas = b->plan->replicas;
    PUT(fp, replicas);
    PUTN(fp, b->plan->device + b->plan->n_ops, (size_t)(replicas - 1) * (size_t)b->plan->n_ops);
    PUTN(fp, b->plan->split, b->plan->n_ops);
    for (int o = 0; o < b->plan->n_ops; o++)
        for (int r = 0; b->plan->split[o] > 1 && r < replicas; r++)
            PUTN(fp, b->plan->split_device + ((size_t)r * (size_t)b->plan->n_ops + (size_t)o) *
                                                 PL_MAX_SPLIT,
                 b->plan->split[o]);
    for (int o = 0; o < b->plan->n_ops; o++) {
        uint8_t recompute = b->plan->recompute[o];
        PUT(fp, recompute);
    }
    return ok;
}

pl_status pl_agent_save(const pl_agent *a, const char *path, pl_error *err)
{
    pl_atomic_file file;
    pl_status status = pl_atomic_open(&file, path, err);
    if (status != PL_OK)
        return status;
    FILE *fp = file.fp;
    bool ok = fwrite(MAGIC, sizeof MAGIC, 1, fp) == 1;
    uint32_t version = VERSION;
    header h = header_of(a->graph, a->cluster, &a->options);
    int32_t n = a->policy.layout.n;
    PUT(fp, version);
    PUT(fp, h);
    PUT(fp, a->iteration);
    PUT(fp, a->adam_t);
    PUT(fp, a->reference);
    PUT(fp, a->log_ratio_sum);
    PUT(fp, a->n_corrections);
    PUT(fp, a->n_refined);
    PUTN(fp, a->refined, PL_AGENT_REFINED_KEYS);
    PUT(fp, a->policy_best);
    PUT(fp, n);
    PUTN(fp, a->policy.params, n);
    PUTN(fp, a->adam_m, n);
    PUTN(fp, a->adam_v, n);
    PUTN(fp, a->curve, a->iteration);
    PUT(fp, a->n_best);
    for (int k = 0; k < a->n_best; k++)
        ok = ok && put_best(fp, &a->best[k]);
    PUT(fp, a->n_lead);
    if (a->n_lead)
        ok = ok && put_best(fp, &a->lead);
    PUT(fp, a->n_origins);
    for (int k = 0; k < a->n_origins; k++)
        ok = ok && put_best(fp, &a->origins[k]);
    if (!ok) {
        int saved = errno; /* fwrite's reason, before the abort's calls */
        pl_atomic_abort(&file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", path, strerror(saved));
    }
    return pl_atomic_commit(&file, err);
}

/* ---- reading: every field checked, the first problem named ------------------------------ */

static bool finite_array(pl_binary_reader *r, const char *what, const double *values, int n,
                         double low)
{
    char name[128];
    for (int k = 0; k < n && r->ok; k++)
        if (!isfinite(values[k]) || values[k] < low) {
            snprintf(name, sizeof name, "%s %d", what, k);
            pl_binary_finite(r, name, values[k], low);
        }
    return r->ok;
}

static bool get_curve(pl_binary_reader *r, const pl_agent *a)
{
    if (!pl_binary_take(r, a->curve, sizeof *a->curve, (size_t)a->iteration, "the learning curve"))
        return false;
    for (int k = 0; k < a->iteration && r->ok; k++) {
        const pl_agent_iteration *it = &a->curve[k];
        char what[128];
        snprintf(what, sizeof what, "iteration %d of the curve: its number", k + 1);
        pl_binary_int_in(r, what, it->iteration, k + 1, k + 1);
        snprintf(what, sizeof what, "iteration %d of the curve: the out-of-memory sample count",
                 k + 1);
        pl_binary_int_in(r, what, it->oom, 0, a->options.samples);
        const double values[] = {it->mean_reward, it->best_reward, it->mean_step, it->best_step,
                                 it->entropy};
        static const char *const names[] = {"mean reward", "best reward", "mean step", "best step",
                                            "entropy"};
        for (int v = 0; v < 5 && r->ok; v++) {
            snprintf(what, sizeof what, "iteration %d of the curve: the %s", k + 1, names[v]);
            pl_binary_finite(r, what, values[v], v < 2 ? -INFINITY : 0);
        }
    }
    return r->ok;
}

/* A kept plan's split counts, shard devices and recompute flags (its replicas read). */
static bool get_splits(pl_binary_reader *r, pl_plan *plan, const char *which)
{
    char what[160];
    int devices[PL_MAX_REPLICAS * PL_MAX_SPLIT];
    if (!pl_binary_take(r, plan->split, sizeof *plan->split, (size_t)plan->n_ops, which))
        return false;
    for (int o = 0; o < plan->n_ops; o++) {
        int k = plan->split[o];
        snprintf(what, sizeof what, "%s: op %d's split", which, o);
        plan->split[o] = 1; /* until its devices are read */
        if (!pl_binary_int_in(r, what, k, 1, PL_MAX_SPLIT) ||
            (k > 1 && !pl_binary_take(r, devices, sizeof *devices,
                                      (size_t)plan->replicas * (size_t)k, which)))
            return false;
        pl_error why;
        pl_error_init(&why, NULL);
        if (k > 1 && pl_plan_split(plan, o, k, devices, &why) != PL_OK)
            return pl_binary_fail(r, "%s: op %d: %s", which, o, why.text);
    }
    for (int o = 0; o < plan->n_ops; o++) {
        uint8_t recompute;
        snprintf(what, sizeof what, "%s: op %d's recomputation", which, o);
        if (!PL_BINARY_TAKE(r, recompute, what) || !pl_binary_int_in(r, what, recompute, 0, 1))
            return false;
        plan->recompute[o] = recompute;
    }
    return true;
}

static bool get_best(pl_binary_reader *r, const pl_agent *a, pl_agent_best *b, const char *which)
{
    int32_t shape[4];
    char what[160];
    pl_plan *plan = b->plan;
    snprintf(what, sizeof what, "%s: its step", which);
    if (!PL_BINARY_TAKE(r, b->step, what) || !pl_binary_finite(r, what, b->step, 0) ||
        !PL_BINARY_TAKE(r, b->key, which) ||
        !pl_binary_take(r, b->algorithm, 1, sizeof b->algorithm, which) ||
        !pl_binary_take(r, shape, sizeof *shape, 4, which))
        return false;
    if (b->step <= 0)
        return pl_binary_fail(r, "%s: its step is %g (expected more than 0)", which, b->step);
    if (memchr(b->algorithm, '\0', sizeof b->algorithm) == NULL || !b->algorithm[0])
        return pl_binary_fail(r, "%s: its algorithm is not a name of 1 to %zu bytes", which,
                              sizeof b->algorithm - 1);
    snprintf(what, sizeof what, "%s: its schedule", which);
    pl_binary_int_in(r, what, shape[2], PL_SCHEDULE_GPIPE, PL_SCHEDULE_1F1B);
    snprintf(what, sizeof what, "%s: its flags", which);
    pl_binary_int_in(r, what, shape[3], 0, FLAG_DEFER | FLAG_SHARD);
    int32_t replicas = 0;
    if (!pl_binary_take(r, plan->device, sizeof *plan->device, (size_t)plan->n_ops, which) ||
        !pl_binary_take(r, plan->stage, sizeof *plan->stage, (size_t)plan->n_ops, which) ||
        !PL_BINARY_TAKE(r, replicas, which))
        return false;
    snprintf(what, sizeof what, "%s: its replicas", which);
    if (!pl_binary_int_in(r, what, replicas, 1, PL_MAX_REPLICAS) ||
        !pl_binary_has(r, sizeof *plan->device, (size_t)(replicas - 1) * (size_t)plan->n_ops,
                       which))
        return false;
    pl_error grown;
    if (pl_plan_set_replicas(plan, replicas, &grown) != PL_OK)
        return pl_binary_fail(r, "%s: %s", which, grown.text);
    if (!pl_binary_take(r, plan->device + plan->n_ops, sizeof *plan->device,
                        (size_t)(replicas - 1) * (size_t)plan->n_ops, which))
        return false;
    if (!get_splits(r, plan, which))
        return false;
    plan->n_stages = shape[0];
    plan->micro_batches = shape[1];
    plan->schedule = (pl_schedule)shape[2];
    plan->defer_weight_gradients = (shape[3] & FLAG_DEFER) != 0;
    plan->shard_optimizer_state = (shape[3] & FLAG_SHARD) != 0;
    pl_error why;
    pl_error_init(&why, NULL);
    if (pl_plan_check(plan, a->graph, a->cluster, &why) != PL_OK)
        return pl_binary_fail(r, "%s: %s%s%s", which, why.path, why.path[0] ? ": " : "", why.text);
    return true;
}

static bool get_header(pl_binary_reader *r, const pl_agent *a)
{
    char magic[8];
    uint32_t version = 0;
    header want = header_of(a->graph, a->cluster, &a->options), got;
    if (!pl_binary_take(r, magic, 1, sizeof magic, "the header"))
        return false;
    if (memcmp(magic, MAGIC, sizeof magic) != 0)
        return pl_binary_fail(r, "not a placer search checkpoint");
    if (!PL_BINARY_TAKE(r, version, "the format version"))
        return false;
    if (version < VERSION)
        return pl_binary_fail(r,
                              "a search checkpoint of format %u, made by an older placer (this one "
                              "reads %d): start the search afresh",
                              version, VERSION);
    if (version > VERSION)
        return pl_binary_fail(r,
                              "a search checkpoint of format %u, made by a newer placer (this one "
                              "reads %d)",
                              version, VERSION);
    if (!PL_BINARY_TAKE(r, got, "the header"))
        return false;
    if (got.model_hash != want.model_hash)
        return pl_binary_fail(r, "made for another model (its model hash differs)");
    if (got.cluster_hash != want.cluster_hash || got.devices != want.devices)
        return pl_binary_fail(r, "made for another cluster (its devices or links differ)");
    if (memcmp(&got, &want, sizeof got) != 0)
        return pl_binary_fail(r,
                              "made with other search options (seed %llu, %d samples, %d groups, "
                              "fold up to %d, %s, %s, refinement every %d iterations%s)",
                              (unsigned long long)got.seed, got.samples, got.groups, got.max_fold,
                              got.defer ? "deferral" : "no deferral",
                              got.sweep ? "shape sweeps" : "no shape sweeps", got.refine_every,
                              got.mode == 1   ? ", without learning"
                              : got.mode == 2 ? ", the policy not trained"
                                              : "");
    return true;
}

/* The learning state: iteration, Adam, the reference, corrections, refinements, weights. */
static bool get_state(pl_binary_reader *r, pl_agent *a)
{
    int32_t n = 0;
    if (!PL_BINARY_TAKE(r, a->iteration, "the iteration") ||
        !pl_binary_int_in(r, "the iteration", a->iteration, 0, PL_AGENT_MAX_ITERATIONS) ||
        !PL_BINARY_TAKE(r, a->adam_t, "Adam's step") ||
        !pl_binary_int_in(r, "Adam's step", a->adam_t, 0, INT64_C(1) << 40) ||
        !PL_BINARY_TAKE(r, a->reference, "the reference step") ||
        !pl_binary_finite(r, "the reference step", a->reference, 0) ||
        !PL_BINARY_TAKE(r, a->log_ratio_sum, "the correction") ||
        !pl_binary_finite(r, "the correction's log-ratio sum", a->log_ratio_sum, -INFINITY) ||
        !PL_BINARY_TAKE(r, a->n_corrections, "the correction count") ||
        !pl_binary_int_in(r, "the correction count", a->n_corrections, 0, INT32_MAX) ||
        !PL_BINARY_TAKE(r, a->n_refined, "the refinement count") ||
        !pl_binary_int_in(r, "the refinement count", a->n_refined, 0, a->iteration) ||
        !pl_binary_take(r, a->refined, sizeof *a->refined, PL_AGENT_REFINED_KEYS,
                        "the refinements") ||
        !PL_BINARY_TAKE(r, a->policy_best, "the policy's best step") ||
        !PL_BINARY_TAKE(r, n, "the weight count"))
        return false;
    if (a->reference <= 0)
        return pl_binary_fail(r, "the reference step is %g (expected more than 0)", a->reference);
    if (!(a->policy_best > 0))
        return pl_binary_fail(r, "the policy's best step is %g (expected more than 0)",
                              a->policy_best);
    if (n != a->policy.layout.n)
        return pl_binary_fail(r, "%d weights (these options have %d)", n,
                              a->policy.layout.n);
    return pl_binary_take(r, a->policy.params, sizeof(double), (size_t)n, "the weights") &&
           finite_array(r, "weight", a->policy.params, n, -INFINITY) &&
           pl_binary_take(r, a->adam_m, sizeof(double), (size_t)n, "Adam's first moments") &&
           finite_array(r, "Adam's first moment", a->adam_m, n, -INFINITY) &&
           pl_binary_take(r, a->adam_v, sizeof(double), (size_t)n, "Adam's second moments") &&
           finite_array(r, "Adam's second moment", a->adam_v, n, 0);
}

/* A count of kept plans, at most `max`, then the plans, each named "<what> <k>". */
static bool get_bests(pl_binary_reader *r, const pl_agent *a, pl_agent_best *bests, int *n,
                      int max, const char *count, const char *what)
{
    if (!PL_BINARY_TAKE(r, *n, count) || !pl_binary_int_in(r, count, *n, 0, max))
        return false;
    for (int k = 0; k < *n; k++) {
        char which[32];
        snprintf(which, sizeof which, "%s %d", what, k);
        if (!get_best(r, a, &bests[k], which))
            return false;
    }
    return true;
}

static pl_status read_body(pl_agent *a, FILE *fp, pl_error *err)
{
    pl_binary_reader r = {fp, err, true};
    if (!get_header(&r, a) || !get_state(&r, a))
        return PL_EINPUT;
    if (!pl_binary_has(&r, sizeof *a->curve, (size_t)a->iteration, "the learning curve"))
        return PL_EINPUT;
    a->curve_cap = a->iteration + 64;
    if (!(a->curve = malloc((size_t)a->curve_cap * sizeof *a->curve)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    if (!get_curve(&r, a))
        return PL_EINPUT;
    pl_agent_replay_curve(a);
    if (!get_bests(&r, a, a->best, &a->n_best, PL_AGENT_MAX_BEST, "the best plans' count",
                   "best plan") ||
        !PL_BINARY_TAKE(&r, a->n_lead, "the lead's count") ||
        !pl_binary_int_in(&r, "the lead's count", a->n_lead, 0, 1) ||
        (a->n_lead && !get_best(&r, a, &a->lead, "the lead plan")) ||
        !get_bests(&r, a, a->origins, &a->n_origins, PL_AGENT_MAX_ORIGINS,
                   "the origins' count", "origin"))
        return PL_EINPUT;
    return pl_binary_at_end(&r, "the end of the checkpoint") ? PL_OK : PL_EINPUT;
}

pl_agent *pl_agent_load(const char *path, const pl_graph *g, const pl_cluster *c,
                        const pl_cost_model *m, const pl_agent_options *o, pl_error *err)
{
    pl_error_init(err, path);
    FILE *fp = pl_input_fopen(path, err);
    if (!fp)
        return NULL;
    pl_agent *a = pl_agent_alloc(g, c, m, o, err);
    if (a && read_body(a, fp, err) != PL_OK) {
        pl_agent_free(a);
        a = NULL;
    }
    fclose(fp);
    return a;
}
