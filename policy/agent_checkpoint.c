/* Agent checkpoints: everything a resumed search needs to continue as the uninterrupted
 * one would, bit for bit.
 *
 * Format (the machine's byte order, as training checkpoints): "PLACERAG", u32 version 4,
 * u64 model hash, i32 devices, the options that shape the search (u64 seed, i32 samples,
 * groups, hidden, rounds, epochs, fold, defer, sweep, refine_every, refine_proposals, f64
 * lr, entropy, anchor), i32 iteration, i64 Adam's step, f64 reference, f64 log-ratio sum,
 * i32 corrections, i32 refinements, u64 x 8 the keys of the plans they started from
 * (a ring), f64 the policy's own best step, i32 parameter count, then the parameters, Adam's first and second moments (f64 each), the
 * curve (per iteration: i32 oom, f64 mean reward, best reward, mean step, best step,
 * entropy), i32 best count and per best plan: f64 step, u64 key, 64 bytes of algorithm,
 * i32 stages, micro-batches, schedule, deferred weight gradients (0 or 1), then the device
 * and stage of every forward op. Written atomically. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_impl.h"
#include "atomic_file.h"

static const char MAGIC[8] = {'P', 'L', 'A', 'C', 'E', 'R', 'A', 'G'};
enum { VERSION = 4 }; /* 2: the shape head; deferred weight gradients; 3: the sweep;
                        4: the refinement */

typedef struct header {
    uint64_t model_hash;
    int32_t devices;
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
    h.devices = c->n_devices;
    h.seed = o->seed;
    h.samples = o->samples;
    h.groups = o->groups;
    h.hidden = o->hidden;
    h.rounds = o->rounds;
    h.epochs = o->epochs;
    h.max_fold = o->max_fold;
    h.defer = o->defer;
    h.sweep = o->sweep;
    h.refine_every = o->refine_every;
    h.refine_proposals = o->refine_proposals;
    h.lr = o->lr;
    h.entropy = o->entropy;
    h.anchor = o->anchor;
    return h;
}

#define PUT(fp, value) (ok = ok && fwrite(&(value), sizeof(value), 1, fp) == 1)
#define PUTN(fp, ptr, n) (ok = ok && ((n) == 0 || fwrite(ptr, sizeof *(ptr), (size_t)(n), fp) == (size_t)(n)))

/* One kept plan: f64 step, u64 key, 64 bytes of algorithm, i32 stages, micro-batches,
 * schedule, deferred weight gradients, then the device and stage of every forward op. */
static bool put_best(FILE *fp, const pl_agent_best *b)
{
    bool ok = true;
    int32_t shape[4] = {b->plan->n_stages, b->plan->micro_batches, (int32_t)b->plan->schedule,
                        b->plan->defer_weight_gradients};
    PUT(fp, b->step);
    PUT(fp, b->key);
    PUTN(fp, b->algorithm, sizeof b->algorithm);
    PUTN(fp, shape, 4);
    PUTN(fp, b->plan->device, b->plan->n_ops);
    PUTN(fp, b->plan->stage, b->plan->n_ops);
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
    if (!ok) {
        int saved = errno; /* fwrite's reason, before the abort's calls */
        pl_atomic_abort(&file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", path, strerror(saved));
    }
    return pl_atomic_commit(&file, err);
}

#define GET(fp, value) (ok = ok && fread(&(value), sizeof(value), 1, fp) == 1)
#define GETN(fp, ptr, n) (ok = ok && ((n) == 0 || fread(ptr, sizeof *(ptr), (size_t)(n), fp) == (size_t)(n)))

static bool get_best(FILE *fp, const pl_agent *a, pl_agent_best *b)
{
    bool ok = true;
    int32_t shape[4];
    GET(fp, b->step);
    GET(fp, b->key);
    GETN(fp, b->algorithm, sizeof b->algorithm);
    GETN(fp, shape, 4);
    GETN(fp, b->plan->device, b->plan->n_ops);
    GETN(fp, b->plan->stage, b->plan->n_ops);
    b->algorithm[sizeof b->algorithm - 1] = '\0';
    b->plan->n_stages = shape[0];
    b->plan->micro_batches = shape[1];
    b->plan->schedule = shape[2] == PL_SCHEDULE_1F1B ? PL_SCHEDULE_1F1B : PL_SCHEDULE_GPIPE;
    b->plan->defer_weight_gradients = shape[3] != 0;
    return ok && pl_plan_check(b->plan, a->graph, a->cluster, NULL) == PL_OK;
}

static pl_status read_body(pl_agent *a, FILE *fp, pl_error *err)
{
    char magic[8];
    uint32_t version = 0;
    header want = header_of(a->graph, a->cluster, &a->options), got;
    bool ok = fread(magic, sizeof magic, 1, fp) == 1 && memcmp(magic, MAGIC, sizeof magic) == 0;
    ok = ok && fread(&version, sizeof version, 1, fp) == 1 && version == VERSION;
    if (!ok)
        return pl_error_set(err, PL_EINPUT, NULL, "not an agent checkpoint (version %d)", VERSION);
    GET(fp, got);
    if (!ok)
        return pl_error_set(err, PL_EINPUT, NULL, "truncated agent checkpoint");
    if (got.model_hash != want.model_hash || got.devices != want.devices)
        return pl_error_set(err, PL_EINPUT, NULL, "the checkpoint was made for another model "
                            "or cluster");
    if (memcmp(&got, &want, sizeof got) != 0)
        return pl_error_set(err, PL_EINPUT, NULL, "the checkpoint was made with other search "
                            "options (seed %llu, %d samples, %d groups, fold up to %d, %s, %s, "
                            "refinement every %d iterations)",
                            (unsigned long long)got.seed, got.samples, got.groups, got.max_fold,
                            got.defer ? "deferral" : "no deferral",
                            got.sweep ? "shape sweeps" : "no shape sweeps", got.refine_every);
    int32_t n = 0;
    GET(fp, a->iteration);
    GET(fp, a->adam_t);
    GET(fp, a->reference);
    GET(fp, a->log_ratio_sum);
    GET(fp, a->n_corrections);
    GET(fp, a->n_refined);
    GETN(fp, a->refined, PL_AGENT_REFINED_KEYS);
    GET(fp, a->policy_best);
    GET(fp, n);
    if (!ok || n != a->policy.layout.n || a->iteration < 0 || a->iteration > 100000000)
        return pl_error_set(err, PL_EINPUT, NULL, "corrupt agent checkpoint");
    GETN(fp, a->policy.params, n);
    GETN(fp, a->adam_m, n);
    GETN(fp, a->adam_v, n);
    a->curve_cap = a->iteration + 64;
    if (ok && !(a->curve = malloc((size_t)a->curve_cap * sizeof *a->curve)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    GETN(fp, a->curve, a->iteration);
    GET(fp, a->n_best);
    if (!ok || a->n_best < 0 || a->n_best > PL_AGENT_MAX_BEST)
        return pl_error_set(err, PL_EINPUT, NULL, "corrupt agent checkpoint");
    for (int k = 0; k < a->n_best && ok; k++)
        ok = get_best(fp, a, &a->best[k]);
    GET(fp, a->n_lead);
    ok = ok && (a->n_lead == 0 || (a->n_lead == 1 && get_best(fp, a, &a->lead)));
    if (!ok || fgetc(fp) != EOF)
        return pl_error_set(err, PL_EINPUT, NULL, "corrupt agent checkpoint");
    return PL_OK;
}

pl_agent *pl_agent_load(const char *path, const pl_graph *g, const pl_cluster *c,
                        const pl_cost_model *m, const pl_agent_options *o, pl_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        pl_error_set(err, PL_EINPUT, NULL, "cannot read the checkpoint %s", path);
        return NULL;
    }
    pl_agent *a = pl_agent_alloc(g, c, m, o, err);
    if (a && read_body(a, fp, err) != PL_OK) {
        pl_agent_free(a);
        a = NULL;
    }
    fclose(fp);
    return a;
}
