/* The policy network's forward pass, sampling, and the exact gradient of the
 * policy-gradient objective, written by hand on cblas_dgemm (docs/agent.md says why not
 * in placer's own IR).
 *
 *   h0 = tanh(X W0 + b0)                                  ops x hidden
 *   h_r = h_{r-1} + tanh(h_{r-1} Ws + in(h_{r-1}) Wi + out(h_{r-1}) Wo + b)
 *         in/out: the mean over an op's producers / consumers
 *   grouper: softmax(h_R Wg + bg) per op                  ops x groups
 *   per sampled grouping: U_k = [mean of h_R over group k, its FLOPs and op shares,
 *         k one-hot (so that groups can differ before the grouper tells them apart)]
 *         attention over the non-empty groups: C = softmax(U Wq (U Wk)^T / sqrt(hidden)) U Wv
 *         devices: E = tanh(F Wf + bf), F their features    devices x hidden
 *         device: softmax(([U, C] Wdq + bdq) E^T / sqrt(hidden)), attention over the
 *         devices, so that one set of weights serves any device count
 *         stage: softmax([U, C] Wst + bst) over the stages the cluster allows
 *         split: softmax([U, C] Wsp + M Msp + bsp) over the degrees the group's device
 *         allows, and recompute: softmax([U, C] Wrc + M Mrc + brc), M the group's memory
 *         features (policy_split.c) once its device is chosen
 *   the plan's shape (micro-batch count x stages per device x schedule x weight gradients
 *         deferred or not):
 *         softmax(mean(h_R) Ws + bs) over the shapes the graph and options allow
 *
 * Each line is a forward step with its backward step beside it (input, round, grouper,
 * shape; the head per sampled grouping), and the objective's gradient walks them in
 * reverse: the heads, then the shape, the grouper, the rounds last first and the input.
 * tests/test_agent.c checks every weight's gradient against central differences. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy_impl.h"
#include "rng.h"

/* C = alpha op(A) op(B) + beta C, row-major; op(A) is m x k, op(B) k x n. */
static void gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double *a,
                 const double *b, double beta, double *c)
{
    if (m == 0 || n == 0)
        return;
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

static void softmax(const double *logits, int n, double *p)
{
    double top = logits[0];
    for (int i = 1; i < n; i++)
        if (logits[i] > top)
            top = logits[i];
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += p[i] = exp(logits[i] - top);
    for (int i = 0; i < n; i++)
        p[i] /= sum;
}

static double entropy_of(const double *p, int n)
{
    double h = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0)
            h -= p[i] * log(p[i]);
    return h;
}

/* d/dlogits of weight * log p[chosen] + beta * H(p), added to d. */
static void categorical_grad(const double *p, int n, int chosen, double weight, double beta,
                             double *d)
{
    double h = beta != 0 ? entropy_of(p, n) : 0;
    for (int i = 0; i < n; i++) {
        d[i] += weight * ((i == chosen) - p[i]);
        if (beta != 0 && p[i] > 0)
            d[i] -= beta * p[i] * (log(p[i]) + h);
    }
}

/* Past the sum by rounding: the last choice of any probability (masked ones have none). */
static int draw(const double *p, int n, double u)
{
    double acc = 0;
    int last = n - 1;
    for (int i = 0; i < n - 1; i++) {
        acc += p[i];
        if (u < acc)
            return i;
    }
    while (last > 0 && p[last] == 0)
        last--;
    return last;
}

/* ---- the op embeddings ------------------------------------------------------------------ */

typedef struct embedding {
    double *h[PL_POLICY_MAX_ROUNDS + 1]; /* ops x hidden */
    double *t[PL_POLICY_MAX_ROUNDS + 1]; /* tanh of each round */
    double *in[PL_POLICY_MAX_ROUNDS], *out[PL_POLICY_MAX_ROUNDS];
    double *pg;                          /* ops x groups */
    double *mean;                        /* hidden: mean of h_R */
    double *dev;                         /* devices x hidden: E */
    double pshape[PL_POLICY_MAX_SHAPES];
    double *block;
} embedding;

/* The backward pass over the embeddings: dL/dh of the layer being walked back (dh),
 * scratch of the same size, and the weights' gradient that every step adds to. */
typedef struct embedding_grad {
    double *dh, *dprev, *dz, *tmp; /* ops x hidden each */
    double *ddev;                  /* devices x hidden: dL/dE */
    double *grad;                  /* layout.n */
} embedding_grad;

/* out[i] = mean of m over i's neighbours (first/list), or 0. */
static void aggregate(const int *first, const int *list, int n, int h, const double *m,
                      double *out)
{
    for (int i = 0; i < n; i++) {
        double *o = out + (size_t)i * h;
        memset(o, 0, (size_t)h * sizeof *o);
        int count = first[i + 1] - first[i];
        for (int e = first[i]; e < first[i + 1]; e++)
            for (int j = 0; j < h; j++)
                o[j] += m[(size_t)list[e] * h + j] / count;
    }
}

/* The transpose: out[list[e]] += d[i] / count(i). */
static void aggregate_back(const int *first, const int *list, int n, int h, const double *d,
                           double *out)
{
    for (int i = 0; i < n; i++) {
        int count = first[i + 1] - first[i];
        for (int e = first[i]; e < first[i + 1]; e++)
            for (int j = 0; j < h; j++)
                out[(size_t)list[e] * h + j] += d[(size_t)i * h + j] / count;
    }
}

static void add_bias(double *m, int rows, int cols, const double *b)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            m[(size_t)i * cols + j] += b[j];
}

/* The transpose: db += the sum of dm's rows. */
static void add_bias_back(const double *dm, int rows, int cols, double *db)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            db[j] += dm[(size_t)i * cols + j];
}

/* h0 = tanh(X W0 + b0) */
static void input_forward(const pl_policy *p, embedding *e)
{
    int n = p->n_ops, h = p->hidden;
    const pl_policy_layout *l = &p->layout;
    gemm(false, false, n, h, p->n_features, 1, p->features, p->params + l->w0, 0, e->t[0]);
    add_bias(e->t[0], n, h, p->params + l->b0);
    for (size_t i = 0; i < (size_t)n * h; i++)
        e->h[0][i] = e->t[0][i] = tanh(e->t[0][i]);
}

static void input_backward(const pl_policy *p, const embedding *e, embedding_grad *d)
{
    int n = p->n_ops, h = p->hidden;
    const pl_policy_layout *l = &p->layout;
    for (size_t i = 0; i < (size_t)n * h; i++)
        d->dz[i] = d->dh[i] * (1 - e->h[0][i] * e->h[0][i]);
    gemm(true, false, p->n_features, h, n, 1, p->features, d->dz, 1, d->grad + l->w0);
    add_bias_back(d->dz, n, h, d->grad + l->b0);
}

/* Round k: h_k = h_{k-1} + tanh(h_{k-1} Ws + in(h_{k-1}) Wi + out(h_{k-1}) Wo + b) */
static void round_forward(const pl_policy *p, embedding *e, int k)
{
    int n = p->n_ops, h = p->hidden;
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    const pl_adjacency *a = p->adjacency;
    double *prev = e->h[k - 1], *t = e->t[k];
    aggregate(a->producer_first, a->producer, n, h, prev, e->in[k - 1]);
    aggregate(a->consumer_first, a->consumer, n, h, prev, e->out[k - 1]);
    gemm(false, false, n, h, h, 1, prev, w + l->ws[k - 1], 0, t);
    gemm(false, false, n, h, h, 1, e->in[k - 1], w + l->wi[k - 1], 1, t);
    gemm(false, false, n, h, h, 1, e->out[k - 1], w + l->wo[k - 1], 1, t);
    add_bias(t, n, h, w + l->b[k - 1]);
    for (size_t i = 0; i < (size_t)n * h; i++) {
        t[i] = tanh(t[i]);
        e->h[k][i] = prev[i] + t[i];
    }
}

/* dL/dh_k -> dL/dh_{k-1}: through the residual, and through the tanh to h_{k-1} itself
 * and to its means over producers and consumers. */
static void round_backward(const pl_policy *p, const embedding *e, int k, embedding_grad *d)
{
    int n = p->n_ops, h = p->hidden;
    size_t nh = (size_t)n * h;
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    const pl_adjacency *a = p->adjacency;
    const double *t = e->t[k], *prev = e->h[k - 1];
    for (size_t i = 0; i < nh; i++)
        d->dz[i] = d->dh[i] * (1 - t[i] * t[i]);
    gemm(true, false, h, h, n, 1, prev, d->dz, 1, d->grad + l->ws[k - 1]);
    gemm(true, false, h, h, n, 1, e->in[k - 1], d->dz, 1, d->grad + l->wi[k - 1]);
    gemm(true, false, h, h, n, 1, e->out[k - 1], d->dz, 1, d->grad + l->wo[k - 1]);
    add_bias_back(d->dz, n, h, d->grad + l->b[k - 1]);
    memcpy(d->dprev, d->dh, nh * sizeof *d->dprev);
    gemm(false, true, n, h, h, 1, d->dz, w + l->ws[k - 1], 1, d->dprev);
    gemm(false, true, n, h, h, 1, d->dz, w + l->wi[k - 1], 0, d->tmp);
    aggregate_back(a->producer_first, a->producer, n, h, d->tmp, d->dprev);
    gemm(false, true, n, h, h, 1, d->dz, w + l->wo[k - 1], 0, d->tmp);
    aggregate_back(a->consumer_first, a->consumer, n, h, d->tmp, d->dprev);
    memcpy(d->dh, d->dprev, nh * sizeof *d->dh);
}

/* grouper: softmax(h_R Wg + bg) per op */
static void grouper_forward(const pl_policy *p, embedding *e)
{
    int n = p->n_ops, g = p->groups;
    const pl_policy_layout *l = &p->layout;
    gemm(false, false, n, g, p->hidden, 1, e->h[p->rounds], p->params + l->wg, 0, e->pg);
    add_bias(e->pg, n, g, p->params + l->bg);
    for (int i = 0; i < n; i++)
        softmax(e->pg + (size_t)i * g, g, e->pg + (size_t)i * g);
}

/* Given dL/dlogits of the grouper (ops x groups). */
static void grouper_backward(const pl_policy *p, const embedding *e, const double *dlg,
                             embedding_grad *d)
{
    int n = p->n_ops, h = p->hidden, g = p->groups;
    const pl_policy_layout *l = &p->layout;
    gemm(true, false, h, g, n, 1, e->h[p->rounds], dlg, 1, d->grad + l->wg);
    add_bias_back(dlg, n, g, d->grad + l->bg);
    gemm(false, true, n, h, g, 1, dlg, p->params + l->wg, 1, d->dh);
}

/* the plan's shape: softmax(mean(h_R) Ws + bs) */
static void shape_forward(const pl_policy *p, embedding *e)
{
    int n = p->n_ops, h = p->hidden;
    const double *w = p->params, *top = e->h[p->rounds];
    const pl_policy_layout *l = &p->layout;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < h; j++)
            e->mean[j] += top[(size_t)i * h + j] / n;
    double logits[PL_POLICY_MAX_SHAPES];
    for (int m = 0; m < p->n_shapes; m++) {
        int slot = p->shape_slot[m];
        logits[m] = w[l->bshape + slot];
        for (int j = 0; j < h; j++)
            logits[m] += e->mean[j] * w[l->wshape + j * PL_POLICY_MAX_SHAPES + slot];
    }
    softmax(logits, p->n_shapes, e->pshape);
}

/* Given dL/dlogits of the shape (dlm), through the mean to every op's h_R. */
static void shape_backward(const pl_policy *p, const embedding *e, const double *dlm,
                           embedding_grad *d)
{
    int n = p->n_ops, h = p->hidden;
    const pl_policy_layout *l = &p->layout;
    for (int m = 0; m < p->n_shapes; m++) {
        int slot = p->shape_slot[m];
        d->grad[l->bshape + slot] += dlm[m];
        for (int j = 0; j < h; j++)
            d->grad[l->wshape + j * PL_POLICY_MAX_SHAPES + slot] += e->mean[j] * dlm[m];
    }
    for (int j = 0; j < h; j++) {
        double dmean = 0;
        for (int m = 0; m < p->n_shapes; m++)
            dmean += dlm[m] * p->params[l->wshape + j * PL_POLICY_MAX_SHAPES + p->shape_slot[m]];
        for (int i = 0; i < n; i++)
            d->dh[(size_t)i * h + j] += dmean / n;
    }
}

/* the devices: E = tanh(F Wf + bf) */
static void devices_forward(const pl_policy *p, embedding *e)
{
    int n = p->devices, h = p->hidden;
    const pl_policy_layout *l = &p->layout;
    gemm(false, false, n, h, PL_POLICY_DEVICE_FEATURES, 1, p->device_features,
         p->params + l->wf, 0, e->dev);
    add_bias(e->dev, n, h, p->params + l->bf);
    for (size_t i = 0; i < (size_t)n * h; i++)
        e->dev[i] = tanh(e->dev[i]);
}

/* Given dL/dE, which every sample's device head added to. */
static void devices_backward(const pl_policy *p, const embedding *e, embedding_grad *d)
{
    int n = p->devices, h = p->hidden;
    const pl_policy_layout *l = &p->layout;
    for (size_t i = 0; i < (size_t)n * h; i++)
        d->ddev[i] *= 1 - e->dev[i] * e->dev[i];
    gemm(true, false, PL_POLICY_DEVICE_FEATURES, h, n, 1, p->device_features, d->ddev, 1,
         d->grad + l->wf);
    add_bias_back(d->ddev, n, h, d->grad + l->bf);
}

static pl_status embed(const pl_policy *p, embedding *e, pl_error *err)
{
    int n = p->n_ops, h = p->hidden, r = p->rounds;
    size_t nh = (size_t)n * h;
    size_t total = (size_t)(r + 1) * nh * 2 + (size_t)r * nh * 2 + (size_t)n * p->groups + h +
                   (size_t)p->devices * h;
    memset(e, 0, sizeof *e);
    e->block = malloc(total * sizeof *e->block);
    if (!e->block)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    double *at = e->block;
    for (int i = 0; i <= r; i++) {
        e->h[i] = at, at += nh;
        e->t[i] = at, at += nh;
    }
    for (int i = 0; i < r; i++) {
        e->in[i] = at, at += nh;
        e->out[i] = at, at += nh;
    }
    e->pg = at, at += (size_t)n * p->groups;
    e->mean = at, at += h;
    e->dev = at;
    memset(e->mean, 0, (size_t)h * sizeof *e->mean);
    input_forward(p, e);
    for (int k = 1; k <= r; k++)
        round_forward(p, e, k);
    grouper_forward(p, e);
    shape_forward(p, e);
    devices_forward(p, e);
    return PL_OK;
}

/* embed's steps backward, in reverse order, from d->dh = dL/dh_R as the heads left it and
 * dL/dlogits of the shape and of the grouper. */
static void embed_backward(const pl_policy *p, const embedding *e, const double *dlm,
                           const double *dlg, embedding_grad *d)
{
    devices_backward(p, e, d);
    shape_backward(p, e, dlm, d);
    grouper_backward(p, e, dlg, d);
    for (int k = p->rounds; k >= 1; k--)
        round_backward(p, e, k, d);
    input_backward(p, e, d);
}

/* ---- the head over one grouping -------------------------------------------------------- */

typedef struct head {
    int count[PL_AGENT_MAX_GROUPS];
    int nonempty;
    double *u, *q, *k, *v, *att, *c, *z, *a, *pd, *ps; /* a: the device head's queries */
    /* the split and recompute heads: their logits from [U, C] (memory_heads adds the
     * memory features' part), the memory features and the probabilities */
    double *lsp, *lrc, *mem, *psp, *prc;
    double *block;
} head;

enum {
    HEAD_STAGES = PL_POLICY_HEAD_STAGES, /* the stage head's columns, p->stages usable */
    SPLITS = PL_POLICY_SPLIT_CHOICES,
    RECOMPUTES = PL_POLICY_RECOMPUTE_CHOICES,
    MEMORY = PL_POLICY_MEMORY_FEATURES
};

static pl_status head_forward(const pl_policy *p, const embedding *e, const int *group,
                              head *hd, pl_error *err)
{
    int n = p->n_ops, h = p->hidden, g = p->groups, u = h + PL_POLICY_GROUP_FEATURES + g;
    int z = u + h;
    size_t total = (size_t)g * (u + 3 * h + g + h + z + h + p->devices + HEAD_STAGES +
                                2 * (SPLITS + RECOMPUTES) + MEMORY);
    memset(hd->count, 0, sizeof hd->count);
    hd->block = calloc(total, sizeof *hd->block);
    if (!hd->block)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    double *at = hd->block;
    hd->u = at, at += (size_t)g * u;
    hd->q = at, at += (size_t)g * h;
    hd->k = at, at += (size_t)g * h;
    hd->v = at, at += (size_t)g * h;
    hd->att = at, at += (size_t)g * g;
    hd->c = at, at += (size_t)g * h;
    hd->z = at, at += (size_t)g * z;
    hd->a = at, at += (size_t)g * h;
    hd->pd = at, at += (size_t)g * p->devices;
    hd->ps = at, at += (size_t)g * HEAD_STAGES;
    hd->lsp = at, at += (size_t)g * SPLITS;
    hd->psp = at, at += (size_t)g * SPLITS;
    hd->lrc = at, at += (size_t)g * RECOMPUTES;
    hd->prc = at, at += (size_t)g * RECOMPUTES;
    hd->mem = at;
    const double *top = e->h[p->rounds];
    for (int i = 0; i < n; i++) {
        int k = group[i];
        hd->count[k]++;
        for (int j = 0; j < h; j++)
            hd->u[(size_t)k * u + j] += top[(size_t)i * h + j];
        for (int j = 0; j < PL_POLICY_GROUP_FEATURES; j++)
            hd->u[(size_t)k * u + h + j] += p->group_features[i * PL_POLICY_GROUP_FEATURES + j];
    }
    hd->nonempty = 0;
    for (int k = 0; k < g; k++)
        if (hd->count[k]) {
            hd->nonempty++;
            for (int j = 0; j < h; j++)
                hd->u[(size_t)k * u + j] /= hd->count[k];
            hd->u[(size_t)k * u + h + PL_POLICY_GROUP_FEATURES + k] = 1; /* its index */
        }
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    gemm(false, false, g, h, u, 1, hd->u, w + l->wq, 0, hd->q);
    gemm(false, false, g, h, u, 1, hd->u, w + l->wk, 0, hd->k);
    gemm(false, false, g, h, u, 1, hd->u, w + l->wv, 0, hd->v);
    gemm(false, true, g, g, h, 1 / sqrt((double)h), hd->q, hd->k, 0, hd->att);
    for (int a = 0; a < g; a++) {
        double *row = hd->att + (size_t)a * g;
        if (!hd->count[a]) {
            memset(row, 0, (size_t)g * sizeof *row);
            continue;
        }
        double top_score = -INFINITY, sum = 0;
        for (int b = 0; b < g; b++)
            if (hd->count[b] && row[b] > top_score)
                top_score = row[b];
        for (int b = 0; b < g; b++)
            sum += row[b] = hd->count[b] ? exp(row[b] - top_score) : 0;
        for (int b = 0; b < g; b++)
            row[b] /= sum;
    }
    gemm(false, false, g, h, g, 1, hd->att, hd->v, 0, hd->c);
    for (int k = 0; k < g; k++) {
        memcpy(hd->z + (size_t)k * z, hd->u + (size_t)k * u, (size_t)u * sizeof *hd->z);
        memcpy(hd->z + (size_t)k * z + u, hd->c + (size_t)k * h, (size_t)h * sizeof *hd->z);
    }
    gemm(false, false, g, h, z, 1, hd->z, w + l->wdq, 0, hd->a);
    add_bias(hd->a, g, h, w + l->bdq);
    gemm(false, true, g, p->devices, h, 1 / sqrt((double)h), hd->a, e->dev, 0, hd->pd);
    gemm(false, false, g, HEAD_STAGES, z, 1, hd->z, w + l->wst, 0, hd->ps);
    add_bias(hd->ps, g, HEAD_STAGES, w + l->bst);
    gemm(false, false, g, SPLITS, z, 1, hd->z, w + l->wsplit, 0, hd->lsp);
    add_bias(hd->lsp, g, SPLITS, w + l->bsplit);
    gemm(false, false, g, RECOMPUTES, z, 1, hd->z, w + l->wrc, 0, hd->lrc);
    add_bias(hd->lrc, g, RECOMPUTES, w + l->brc);
    for (int k = 0; k < g; k++) {
        softmax(hd->pd + (size_t)k * p->devices, p->devices, hd->pd + (size_t)k * p->devices);
        double *ps = hd->ps + (size_t)k * HEAD_STAGES;
        softmax(ps, p->stages, ps);
        for (int s = p->stages; s < HEAD_STAGES; s++)
            ps[s] = 0;
    }
    return PL_OK;
}

/* softmax over the choices allowed, 0 for the others (at least one is allowed) */
static void masked_softmax(const double *logits, const bool *allowed, int n, double *p)
{
    double top = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++)
        if (allowed[i] && logits[i] > top)
            top = logits[i];
    for (int i = 0; i < n; i++)
        sum += p[i] = allowed[i] ? exp(logits[i] - top) : 0;
    for (int i = 0; i < n; i++)
        p[i] /= sum;
}

/* The split and recompute heads' probabilities once the action's groups and devices are
 * chosen: the memory features' part added to the logits, the splits the device does not
 * allow masked. */
static void memory_heads(const pl_policy *p, head *hd, const pl_action *a)
{
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    pl_policy_memory_features(p, a, hd->mem);
    for (int k = 0; k < p->groups; k++) {
        double lsp[SPLITS], lrc[RECOMPUTES];
        bool allowed[SPLITS], both[RECOMPUTES] = {true, true};
        const double *m = hd->mem + (size_t)k * MEMORY;
        for (int c = 0; c < SPLITS; c++) {
            lsp[c] = hd->lsp[(size_t)k * SPLITS + c];
            for (int j = 0; j < MEMORY; j++)
                lsp[c] += m[j] * w[l->msplit + j * SPLITS + c];
            allowed[c] = pl_policy_split_allowed(p, a->device[k], c);
        }
        for (int c = 0; c < RECOMPUTES; c++) {
            lrc[c] = hd->lrc[(size_t)k * RECOMPUTES + c];
            for (int j = 0; j < MEMORY; j++)
                lrc[c] += m[j] * w[l->mrc + j * RECOMPUTES + c];
        }
        masked_softmax(lsp, allowed, SPLITS, hd->psp + (size_t)k * SPLITS);
        masked_softmax(lrc, both, RECOMPUTES, hd->prc + (size_t)k * RECOMPUTES);
    }
}

/* The split and recompute heads' part of head_backward: given dL/dlogits (dlsp, dlrc), their
 * weights' gradients, and dL/dZ added to dz. */
static void memory_heads_backward(const pl_policy *p, const head *hd, const double *dlsp,
                                  const double *dlrc, double *grad, double *dz)
{
    int g = p->groups, z = 2 * p->hidden + PL_POLICY_GROUP_FEATURES + g;
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    gemm(true, false, z, SPLITS, g, 1, hd->z, dlsp, 1, grad + l->wsplit);
    gemm(true, false, MEMORY, SPLITS, g, 1, hd->mem, dlsp, 1, grad + l->msplit);
    add_bias_back(dlsp, g, SPLITS, grad + l->bsplit);
    gemm(true, false, z, RECOMPUTES, g, 1, hd->z, dlrc, 1, grad + l->wrc);
    gemm(true, false, MEMORY, RECOMPUTES, g, 1, hd->mem, dlrc, 1, grad + l->mrc);
    add_bias_back(dlrc, g, RECOMPUTES, grad + l->brc);
    gemm(false, true, g, z, SPLITS, 1, dlsp, w + l->wsplit, 1, dz);
    gemm(false, true, g, z, RECOMPUTES, 1, dlrc, w + l->wrc, 1, dz);
}

/* Given dL/dlogits of the device, stage, split and recompute heads (g x devices,
 * g x HEAD_STAGES, g x SPLITS, g x RECOMPUTES), adds the weights' gradients to d->grad,
 * dL/dh_R to d->dh and dL/dE to d->ddev. */
static pl_status head_backward(const pl_policy *p, const embedding *e, const head *hd,
                               const int *group, const double *dld, const double *dls,
                               const double *dlsp, const double *dlrc, embedding_grad *d,
                               pl_error *err)
{
    int n = p->n_ops, h = p->hidden, g = p->groups, u = h + PL_POLICY_GROUP_FEATURES + g;
    int z = u + h;
    const double *w = p->params;
    const pl_policy_layout *l = &p->layout;
    double *grad = d->grad, *dtop = d->dh;
    double *block = calloc((size_t)g * (z + h + g + g + 3 * h + u + h), sizeof *block);
    if (!block)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    double *dz = block, *dc = dz + (size_t)g * z, *datt = dc + (size_t)g * h;
    double *ds = datt + (size_t)g * g, *dq = ds + (size_t)g * g, *dk = dq + (size_t)g * h;
    double *dv = dk + (size_t)g * h, *du = dv + (size_t)g * h, *da = du + (size_t)g * u;
    /* device logits = A E^T / sqrt(h), A = Z Wdq + bdq */
    double scale = 1 / sqrt((double)h);
    gemm(false, false, g, h, p->devices, scale, dld, e->dev, 0, da);
    gemm(true, false, p->devices, h, g, scale, dld, hd->a, 1, d->ddev);
    gemm(true, false, z, h, g, 1, hd->z, da, 1, grad + l->wdq);
    add_bias_back(da, g, h, grad + l->bdq);
    gemm(true, false, z, HEAD_STAGES, g, 1, hd->z, dls, 1, grad + l->wst);
    add_bias_back(dls, g, HEAD_STAGES, grad + l->bst);
    gemm(false, true, g, z, h, 1, da, w + l->wdq, 0, dz);
    gemm(false, true, g, z, HEAD_STAGES, 1, dls, w + l->wst, 1, dz);
    memory_heads_backward(p, hd, dlsp, dlrc, grad, dz);
    for (int k = 0; k < g; k++) {
        memcpy(du + (size_t)k * u, dz + (size_t)k * z, (size_t)u * sizeof *du);
        memcpy(dc + (size_t)k * h, dz + (size_t)k * z + u, (size_t)h * sizeof *dc);
    }
    /* C = att V */
    gemm(false, true, g, g, h, 1, dc, hd->v, 0, datt);
    gemm(true, false, g, h, g, 1, hd->att, dc, 0, dv);
    /* att = softmax(S) per row */
    for (int a = 0; a < g; a++) {
        const double *row = hd->att + (size_t)a * g;
        const double *drow = datt + (size_t)a * g;
        double dot = 0;
        for (int b = 0; b < g; b++)
            dot += row[b] * drow[b];
        for (int b = 0; b < g; b++)
            ds[(size_t)a * g + b] = row[b] * (drow[b] - dot);
    }
    gemm(false, false, g, h, g, scale, ds, hd->k, 0, dq);
    gemm(true, false, g, h, g, scale, ds, hd->q, 0, dk);
    gemm(true, false, u, h, g, 1, hd->u, dq, 1, grad + l->wq);
    gemm(true, false, u, h, g, 1, hd->u, dk, 1, grad + l->wk);
    gemm(true, false, u, h, g, 1, hd->u, dv, 1, grad + l->wv);
    gemm(false, true, g, u, h, 1, dq, w + l->wq, 1, du);
    gemm(false, true, g, u, h, 1, dk, w + l->wk, 1, du);
    gemm(false, true, g, u, h, 1, dv, w + l->wv, 1, du);
    for (int i = 0; i < n; i++) {
        int k = group[i];
        for (int j = 0; j < h; j++)
            dtop[(size_t)i * h + j] += du[(size_t)k * u + j] / hd->count[k];
    }
    free(block);
    return PL_OK;
}

/* ---- sampling ---------------------------------------------------------------------------- */

pl_action *pl_actions_new(const pl_policy *p, int n)
{
    pl_action *a = calloc((size_t)n, sizeof *a);
    if (!a)
        return NULL;
    for (int s = 0; s < n; s++)
        if (!(a[s].group = calloc((size_t)p->n_ops, sizeof *a[s].group))) {
            pl_actions_free(a, n);
            return NULL;
        }
    return a;
}

void pl_actions_free(pl_action *a, int n)
{
    if (!a)
        return;
    for (int s = 0; s < n; s++)
        free(a[s].group);
    free(a);
}

pl_status pl_policy_sample(const pl_policy *p, uint64_t seed, uint64_t stream,
                           pl_action *actions, int n, pl_error *err)
{
    embedding e;
    pl_status status = embed(p, &e, err);
    for (int s = 0; s < n && status == PL_OK; s++) {
        /* each sample its own counter stream: draws do not depend on other samples */
        uint64_t key = pl_rng_mix(seed ^ pl_rng_mix(stream + (uint64_t)s));
        uint64_t counter = 0;
        pl_action *a = &actions[s];
        for (int i = 0; i < p->n_ops; i++)
            a->group[i] = draw(e.pg + (size_t)i * p->groups, p->groups,
                               pl_rng_uniform(key, counter++));
        head hd;
        if ((status = head_forward(p, &e, a->group, &hd, err)) != PL_OK)
            break;
        for (int k = 0; k < p->groups; k++) {
            a->device[k] = draw(hd.pd + (size_t)k * p->devices, p->devices,
                                pl_rng_uniform(key, counter++));
            a->stage[k] = draw(hd.ps + (size_t)k * HEAD_STAGES, p->stages,
                               pl_rng_uniform(key, counter++));
        }
        a->shape = draw(e.pshape, p->n_shapes, pl_rng_uniform(key, counter++));
        memory_heads(p, &hd, a); /* once the devices are chosen */
        for (int k = 0; k < p->groups; k++) {
            a->split[k] = hd.count[k] ? draw(hd.psp + (size_t)k * SPLITS, SPLITS,
                                             pl_rng_uniform(key, counter++))
                                      : 0;
            a->recompute[k] = hd.count[k] ? draw(hd.prc + (size_t)k * RECOMPUTES, RECOMPUTES,
                                                 pl_rng_uniform(key, counter++))
                                          : 0;
        }
        free(hd.block);
    }
    free(e.block);
    return status;
}

/* ---- the objective and its gradient -------------------------------------------------- */

/* The objective's terms of the grouper: adds weight[s] * log pi(grouping of s) to *j and
 * to logp[s] (NULL allowed), their gradient and the entropy bonus's to dL/dlogits (dlg);
 * returns the grouper's mean entropy. */
static double grouper_terms(const pl_policy *p, const embedding *e, const pl_action *actions,
                            const double *weight, int n, double beta, double *j, double *logp,
                            double *dlg)
{
    int ops = p->n_ops, g = p->groups;
    double entropy = 0;
    for (int i = 0; i < ops; i++) {
        const double *pg = e->pg + (size_t)i * g;
        entropy += entropy_of(pg, g) / ops;
        double *d = dlg + (size_t)i * g;
        /* a run of samples that group the op alike: one log and one gradient */
        for (int s = 0, run; s < n; s += run) {
            int chosen = actions[s].group[i];
            double lp = log(pg[chosen]), summed = 0;
            for (run = 0; s + run < n && actions[s + run].group[i] == chosen; run++) {
                summed += weight[s + run];
                if (logp)
                    logp[s + run] += lp;
            }
            *j += summed * lp;
            categorical_grad(pg, g, chosen, summed, 0, d);
        }
        categorical_grad(pg, g, 0, 0, beta / ops, d);
    }
    return entropy;
}

/* The same for the plan's shape (logp[s] starts from it: see pl_policy_objective), into
 * dlm; returns the shape's entropy. */
static double shape_terms(const pl_policy *p, const embedding *e, const pl_action *actions,
                          const double *weight, int n, double beta, double *j, double *dlm)
{
    for (int s = 0; s < n; s++) {
        *j += weight[s] * log(e->pshape[actions[s].shape]);
        categorical_grad(e->pshape, p->n_shapes, actions[s].shape, weight[s], 0, dlm);
    }
    categorical_grad(e->pshape, p->n_shapes, 0, 0, beta, dlm);
    return entropy_of(e->pshape, p->n_shapes);
}

/* Scratch of the objective's gradient: dL/dlogits of the grouper, and of the device,
 * stage, split and recompute heads (one sample's), and the embeddings' backward state. */
typedef struct objective_scratch {
    double *dlg, *dld, *dls, *dlsp, *dlrc;
    embedding_grad embedding;
    double *block;
} objective_scratch;

/* The same for the device, stage, split and recompute heads of `copies` samples that
 * decide alike (action, their weights summed in `weight`) over their grouping (hd), into
 * x's dL/dlogits of the heads (cleared here) and *logp (one sample's log-probability);
 * returns their share of the heads' mean entropy. */
static double head_terms(const pl_policy *p, const head *hd, const pl_action *action,
                         double weight, int copies, int n, double beta, double *j,
                         double *logp, objective_scratch *x)
{
    int g = p->groups;
    memset(x->dld, 0, (size_t)g * p->devices * sizeof *x->dld);
    memset(x->dls, 0, (size_t)g * HEAD_STAGES * sizeof *x->dls);
    memset(x->dlsp, 0, (size_t)g * SPLITS * sizeof *x->dlsp);
    memset(x->dlrc, 0, (size_t)g * RECOMPUTES * sizeof *x->dlrc);
    double bw = beta * copies / n / hd->nonempty, entropy = 0;
    for (int k = 0; k < g; k++) {
        if (!hd->count[k])
            continue;
        const double *pd = hd->pd + (size_t)k * p->devices;
        const double *ps = hd->ps + (size_t)k * HEAD_STAGES;
        const double *psp = hd->psp + (size_t)k * SPLITS;
        const double *prc = hd->prc + (size_t)k * RECOMPUTES;
        double lp = log(pd[action->device[k]]) + log(ps[action->stage[k]]) +
                    log(psp[action->split[k]]) + log(prc[action->recompute[k]]);
        *j += weight * lp;
        *logp += lp;
        entropy += entropy_of(pd, p->devices) + entropy_of(ps, p->stages) +
                   entropy_of(psp, SPLITS) + entropy_of(prc, RECOMPUTES);
        categorical_grad(pd, p->devices, action->device[k], weight, bw,
                         x->dld + (size_t)k * p->devices);
        categorical_grad(ps, p->stages, action->stage[k], weight, bw,
                         x->dls + (size_t)k * HEAD_STAGES);
        categorical_grad(psp, SPLITS, action->split[k], weight, bw,
                         x->dlsp + (size_t)k * SPLITS);
        categorical_grad(prc, RECOMPUTES, action->recompute[k], weight, bw,
                         x->dlrc + (size_t)k * RECOMPUTES);
    }
    return entropy * copies / hd->nonempty / n;
}

/* How many samples from s on decide what the heads see and choose alike: imitation's
 * targets are one plan under every shape, and one pass through the heads serves them all. */
static int same_heads(const pl_policy *p, const pl_action *actions, int s, int n)
{
    const pl_action *a = &actions[s];
    int c = 1;
    for (; s + c < n; c++) {
        const pl_action *b = &actions[s + c];
        if (memcmp(a->group, b->group, (size_t)p->n_ops * sizeof *a->group) ||
            memcmp(a->device, b->device, sizeof a->device) ||
            memcmp(a->stage, b->stage, sizeof a->stage) ||
            memcmp(a->split, b->split, sizeof a->split) ||
            memcmp(a->recompute, b->recompute, sizeof a->recompute))
            break;
    }
    return c;
}

static bool scratch_new(const pl_policy *p, objective_scratch *x)
{
    size_t nh = (size_t)p->n_ops * p->hidden, ng = (size_t)p->n_ops * p->groups;
    size_t nd = (size_t)p->groups * p->devices, ns = (size_t)p->groups * HEAD_STAGES;
    size_t nsp = (size_t)p->groups * SPLITS, nrc = (size_t)p->groups * RECOMPUTES;
    size_t ne = (size_t)p->devices * p->hidden;
    x->block = calloc(ng + nd + ns + nsp + nrc + 4 * nh + ne, sizeof *x->block);
    if (!x->block)
        return false;
    x->dlg = x->block, x->dld = x->dlg + ng, x->dls = x->dld + nd;
    x->dlsp = x->dls + ns, x->dlrc = x->dlsp + nsp;
    embedding_grad *d = &x->embedding;
    d->dh = x->dlrc + nrc, d->dprev = d->dh + nh, d->dz = d->dprev + nh, d->tmp = d->dz + nh;
    d->ddev = d->tmp + nh;
    return true;
}

pl_status pl_policy_objective(const pl_policy *p, const pl_action *actions,
                              const double *weight, int n, double beta, double *objective,
                              double *mean_entropy, double *logp, double *grad, pl_error *err)
{
    embedding e;
    pl_status status = embed(p, &e, err);
    if (status != PL_OK)
        return status;
    objective_scratch x;
    if (!scratch_new(p, &x)) {
        free(e.block);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    x.embedding.grad = grad;
    double j_total = 0, h_head = 0, dlm[PL_POLICY_MAX_SHAPES] = {0};
    if (logp) /* each sample's log-probability: its shape's, then its grouping's, its heads' */
        for (int s = 0; s < n; s++)
            logp[s] = log(e.pshape[actions[s].shape]);
    double h_group = grouper_terms(p, &e, actions, weight, n, beta, &j_total, logp, x.dlg);
    double h_shape = shape_terms(p, &e, actions, weight, n, beta, &j_total, dlm);
    /* the heads come last forward, so their backward comes first (into dL/dh_R) */
    for (int s = 0, copies; s < n && status == PL_OK; s += copies) {
        copies = same_heads(p, actions, s, n);
        double summed = 0, lp = 0;
        for (int c = 0; c < copies; c++)
            summed += weight[s + c];
        head hd;
        if ((status = head_forward(p, &e, actions[s].group, &hd, err)) != PL_OK)
            break;
        memory_heads(p, &hd, &actions[s]);
        h_head += head_terms(p, &hd, &actions[s], summed, copies, n, beta, &j_total, &lp, &x);
        for (int c = 0; logp && c < copies; c++)
            logp[s + c] += lp;
        if (grad)
            status = head_backward(p, &e, &hd, actions[s].group, x.dld, x.dls, x.dlsp,
                                   x.dlrc, &x.embedding, err);
        free(hd.block);
    }
    if (status == PL_OK) {
        double h_all = h_group + h_head + h_shape;
        *objective = j_total + beta * h_all;
        if (mean_entropy)
            *mean_entropy = h_all;
        if (grad)
            embed_backward(p, &e, dlm, x.dlg, &x.embedding);
    }
    free(x.block);
    free(e.block);
    return status;
}

/* ---- actions and plans ----------------------------------------------------------------- */

/* Numbers the used stages of plan->stage (each below `limit`) 0, 1, ... without gaps. */
static int renumber_stages(pl_plan *plan, int n, int limit)
{
    int rank[PL_POLICY_MAX_STAGES], stages = 0;
    for (int s = 0; s < limit; s++)
        rank[s] = -1;
    for (int i = 0; i < n; i++)
        rank[plan->stage[i]] = 0;
    for (int s = 0; s < limit; s++)
        if (rank[s] == 0)
            rank[s] = stages++;
    for (int i = 0; i < n; i++)
        plan->stage[i] = rank[plan->stage[i]];
    return stages;
}

/* Interleaving (Megatron's virtual stages): each of the plan's stages is cut into `fold`
 * pieces of equal work along the topological order, and the pieces, in pipeline order,
 * are dealt round a ring of the devices: the devices that owned the stages (the one doing
 * most of each stage's work) in stage order, then the others. With 4 stages on 4 devices
 * and fold 2, every device holds two stages of half the size, and the pipeline's fill and
 * drain shrink by half. n_stages is at most the stage head's (PL_POLICY_HEAD_STAGES). */
static int fold_stages(const pl_policy *p, pl_plan *plan, int n_stages, int fold)
{
    int n = p->n_ops, ring[PL_MAX_DEVICES], in_ring = 0;
    double work[PL_POLICY_MAX_STAGES] = {0}, done[PL_POLICY_MAX_STAGES] = {0};
    double on[PL_POLICY_HEAD_STAGES][PL_MAX_DEVICES] = {{0}}; /* a stage's work per device */
    for (int i = 0; i < n; i++) {
        double f = p->group_features[i * PL_POLICY_GROUP_FEATURES];
        work[plan->stage[i]] += f;
        on[plan->stage[i]][plan->device[i]] += f;
    }
    bool taken[PL_MAX_DEVICES] = {false};
    for (int s = 0; s < n_stages; s++) {
        int owner = 0;
        for (int d = 1; d < p->devices; d++)
            if (on[s][d] > on[s][owner])
                owner = d;
        if (!taken[owner])
            taken[owner] = true, ring[in_ring++] = owner;
    }
    for (int d = 0; d < p->devices; d++)
        if (!taken[d])
            ring[in_ring++] = d;
    for (int i = 0; i < n; i++) {
        int s = plan->stage[i];
        double f = p->group_features[i * PL_POLICY_GROUP_FEATURES];
        /* the piece holding the middle of this op's work: monotone along the order */
        int piece = work[s] > 0 ? (int)(fold * (done[s] + f / 2) / work[s]) : 0;
        done[s] += f;
        piece = piece < fold ? piece : fold - 1;
        int chunk = s * fold + piece;
        plan->stage[i] = chunk;
        plan->device[i] = ring[chunk % in_ring];
    }
    return renumber_stages(plan, n, n_stages * fold);
}

bool pl_action_to_plan(const pl_policy *p, const pl_action *a, pl_plan *plan)
{
    int n = p->n_ops;
    plan->replicas = 1; /* an action places one copy of the model (agent_replicas.c) */
    for (int i = 0; i < n; i++) {
        int k = a->group[i];
        plan->device[i] = a->device[k];
        int stage = a->stage[k];
        const pl_adjacency *dataflow = p->adjacency;
        for (int e = dataflow->producer_first[i]; e < dataflow->producer_first[i + 1]; e++)
            if (plan->stage[dataflow->producer[e]] > stage)
                stage = plan->stage[dataflow->producer[e]];
        plan->stage[i] = stage;
    }
    int stages = renumber_stages(plan, n, p->stages);
    int fold = p->shape_fold[a->shape];
    if (fold > 1 && stages > 1)
        stages = fold_stages(p, plan, stages, fold);
    plan->n_stages = stages;
    plan->micro_batches = p->shape_mb[a->shape];
    plan->schedule = stages > 1 ? p->shape_schedule[a->shape] : PL_SCHEDULE_GPIPE;
    plan->defer_weight_gradients = p->shape_defer[a->shape];
    return pl_action_split_to_plan(p, a, plan);
}

bool pl_action_from_plan(const pl_policy *p, const pl_plan *plan, pl_action *a, bool *exact)
{
    int n_pairs = 0, pair_device[PL_AGENT_MAX_GROUPS], pair_stage[PL_AGENT_MAX_GROUPS];
    int pair_split[PL_AGENT_MAX_GROUPS];
    bool same = true;
    for (int i = 0; i < p->n_ops; i++) {
        int stage = plan->stage[i] < p->stages ? plan->stage[i] : p->stages - 1;
        same = same && stage == plan->stage[i];
        int k = 0;
        while (k < n_pairs && (pair_device[k] != plan->device[i] || pair_stage[k] != stage ||
                               pair_split[k] != plan->split[i]))
            k++;
        if (k == n_pairs) {
            if (n_pairs < p->groups) {
                pair_device[n_pairs] = plan->device[i];
                pair_stage[n_pairs] = stage;
                pair_split[n_pairs] = plan->split[i];
                n_pairs++;
            } else {
                k = p->groups - 1;
                same = false;
            }
        }
        a->group[i] = k;
    }
    for (int k = 0; k < p->groups; k++) {
        a->device[k] = k < n_pairs ? pair_device[k] : 0;
        a->stage[k] = k < n_pairs ? pair_stage[k] : 0;
    }
    same = pl_action_split_from_plan(p, plan, a) && same;
    for (int m = 0; m < p->n_shapes; m++)
        if (p->shape_mb[m] == plan->micro_batches && p->shape_fold[m] == 1 &&
            (plan->n_stages <= 1 || p->shape_schedule[m] == plan->schedule) &&
            p->shape_defer[m] == plan->defer_weight_gradients) {
            a->shape = m;
            if (exact)
                *exact = same;
            return true;
        }
    return false;
}
