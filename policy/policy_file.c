/* Policy files: a policy's weight matrices by name in a tensor file (f32), and a scalar
 * "placer-policy-version". The hidden width, rounds and groups are read off the shapes,
 * and then every matrix must have the shape they give. A file without the split and
 * recompute heads (made before them) loads with their first weights
 * (pl_policy_init_memory_heads): the heads are there in full or not at all. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_impl.h"
#include "tensor_file.h"

#define VERSION_NAME "placer-policy-version"

typedef struct matrix {
    char name[32];
    int offset, rows, cols; /* cols 0: a vector of `rows` */
} matrix;

/* The split and recompute heads' matrices, the last of matrices_of's */
enum { MEMORY_HEAD_MATRICES = 6 };

/* The matrices of a layout, by name, in the layout's order. */
static int matrices_of(const pl_policy_layout *l, int hidden, int rounds, int groups,
                       matrix *out)
{
    int h = hidden, u = h + PL_POLICY_GROUP_FEATURES + groups, z = u + h, n = 0;
#define ADD(text, off, r, c) (out[n++] = (matrix){text, (off), (r), (c)})
    ADD("ops/w", l->w0, PL_POLICY_OP_FEATURES, h);
    ADD("ops/b", l->b0, h, 0);
    for (int r = 0; r < rounds; r++) {
        int at = n;
        ADD("", l->ws[r], h, h);
        ADD("", l->wi[r], h, h);
        ADD("", l->wo[r], h, h);
        ADD("", l->b[r], h, 0);
        static const char *const part[] = {"self", "in", "out", "b"};
        for (int k = 0; k < 4; k++)
            snprintf(out[at + k].name, sizeof out[at + k].name, "round%d/%s", r, part[k]);
    }
    ADD("grouper/w", l->wg, h, groups);
    ADD("grouper/b", l->bg, groups, 0);
    ADD("groups/query", l->wq, u, h);
    ADD("groups/key", l->wk, u, h);
    ADD("groups/value", l->wv, u, h);
    ADD("devices/w", l->wf, PL_POLICY_DEVICE_FEATURES, h);
    ADD("devices/b", l->bf, h, 0);
    ADD("device/query", l->wdq, z, h);
    ADD("device/b", l->bdq, h, 0);
    ADD("stage/w", l->wst, z, PL_POLICY_HEAD_STAGES);
    ADD("stage/b", l->bst, PL_POLICY_HEAD_STAGES, 0);
    ADD("shape/w", l->wshape, h, PL_POLICY_MAX_SHAPES);
    ADD("shape/b", l->bshape, PL_POLICY_MAX_SHAPES, 0);
    ADD("split/w", l->wsplit, z, PL_POLICY_SPLIT_CHOICES);
    ADD("split/memory", l->msplit, PL_POLICY_MEMORY_FEATURES, PL_POLICY_SPLIT_CHOICES);
    ADD("split/b", l->bsplit, PL_POLICY_SPLIT_CHOICES, 0);
    ADD("recompute/w", l->wrc, z, PL_POLICY_RECOMPUTE_CHOICES);
    ADD("recompute/memory", l->mrc, PL_POLICY_MEMORY_FEATURES, PL_POLICY_RECOMPUTE_CHOICES);
    ADD("recompute/b", l->brc, PL_POLICY_RECOMPUTE_CHOICES, 0);
#undef ADD
    return n;
}

enum { MAX_MATRICES = 16 + MEMORY_HEAD_MATRICES + 4 * PL_POLICY_MAX_ROUNDS };

void pl_policy_weights_clear(pl_policy_weights *w)
{
    free(w->values);
    memset(w, 0, sizeof *w);
}

pl_status pl_policy_weights_write(const pl_policy_weights *w, const char *path, pl_error *err)
{
    pl_policy_layout l;
    pl_policy_layout_build(&l, w->hidden, w->rounds, w->groups);
    matrix m[MAX_MATRICES];
    int n = matrices_of(&l, w->hidden, w->rounds, w->groups, m);
    pl_named_tensor t[MAX_MATRICES + 1];
    float *data = malloc((size_t)w->n * sizeof *data);
    if (!data)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < w->n; i++)
        data[i] = (float)w->values[i];
    int32_t version = PL_POLICY_FILE_VERSION;
    t[0] = (pl_named_tensor){.name = VERSION_NAME, .dtype = PL_I32, .rank = 0,
                             .data = &version};
    for (int k = 0; k < n; k++)
        t[k + 1] = (pl_named_tensor){.name = m[k].name, .dtype = PL_F32,
                                     .rank = m[k].cols ? 2 : 1,
                                     .dims = {m[k].rows, m[k].cols},
                                     .data = data + m[k].offset};
    pl_status status = pl_tensor_file_write(path, t, n + 1, err);
    free(data);
    return status;
}

/* The length of a vector in the file, or -1 when it is absent or not a vector. */
static int64_t vector_length(const pl_tensor_file *f, const char *name)
{
    int i = pl_tensor_file_find(f, name);
    return i >= 0 && f->tensors[i].rank == 1 ? f->tensors[i].dims[0] : -1;
}

/* The options the file's shapes give: hidden from ops/b, groups from grouper/b, rounds
 * from the round matrices present. */
static pl_status options_of(pl_tensor_file *f, pl_policy_weights *w, pl_error *err)
{
    int v = pl_tensor_file_find(f, VERSION_NAME);
    if (v < 0 || f->tensors[v].dtype != PL_I32 || f->tensors[v].rank != 0)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "not a policy file (no scalar i32 \"" VERSION_NAME "\")");
    pl_status status = pl_tensor_file_load(f, v, err);
    if (status != PL_OK)
        return status;
    int32_t version = *(const int32_t *)f->tensors[v].data;
    if (version != PL_POLICY_FILE_VERSION)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "a policy file of format %d; this placer reads format %d",
                            (int)version, PL_POLICY_FILE_VERSION);
    int64_t hidden = vector_length(f, "ops/b"), groups = vector_length(f, "grouper/b");
    if (hidden < 1 || hidden > 1024)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "\"ops/b\" must be a vector of 1 to 1024 values (the hidden width)");
    if (groups < 1 || groups > PL_AGENT_MAX_GROUPS)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "\"grouper/b\" must be a vector of 1 to %d values (the groups)",
                            PL_AGENT_MAX_GROUPS);
    int rounds = 0;
    while (rounds <= PL_POLICY_MAX_ROUNDS) {
        char name[32];
        snprintf(name, sizeof name, "round%d/b", rounds);
        if (pl_tensor_file_find(f, name) < 0)
            break;
        rounds++;
    }
    if (rounds > PL_POLICY_MAX_ROUNDS)
        return pl_error_set(err, PL_EINPUT, NULL, "more than %d rounds of message passing",
                            PL_POLICY_MAX_ROUNDS);
    w->hidden = (int)hidden, w->rounds = rounds, w->groups = (int)groups;
    return PL_OK;
}

/* Matrix `m` in the file: present, f32, of its shape. */
static pl_status check_matrix(const pl_tensor_file *f, const matrix *m, pl_error *err)
{
    int i = pl_tensor_file_find(f, m->name);
    const pl_named_tensor *t = i >= 0 ? &f->tensors[i] : NULL;
    int rank = m->cols ? 2 : 1;
    if (t && t->dtype == PL_F32 && t->rank == rank && t->dims[0] == m->rows &&
        (rank == 1 || t->dims[1] == m->cols))
        return PL_OK;
    if (rank == 2)
        return pl_error_set(err, PL_EINPUT, NULL, "\"%s\" must be an f32 matrix of %d x %d",
                            m->name, m->rows, m->cols);
    return pl_error_set(err, PL_EINPUT, NULL, "\"%s\" must be an f32 vector of %d values",
                        m->name, m->rows);
}

/* Matrix `m`'s values (checked, finite) into w->values at its offset. */
static pl_status load_matrix(pl_tensor_file *f, const matrix *m, pl_policy_weights *w,
                             pl_error *err)
{
    int i = pl_tensor_file_find(f, m->name);
    pl_status status = pl_tensor_file_load(f, i, err);
    if (status == PL_OK)
        status = pl_named_tensor_check_finite(&f->tensors[i], err);
    const float *x = f->tensors[i].data;
    int64_t count = pl_named_tensor_elements(&f->tensors[i]);
    for (int64_t j = 0; status == PL_OK && j < count; j++)
        w->values[m->offset + j] = x[j];
    return status;
}

pl_status pl_policy_weights_read(const char *path, pl_policy_weights *w, pl_error *err)
{
    memset(w, 0, sizeof *w);
    /* the index first: every shape is checked before a matrix is read */
    pl_tensor_file *f = pl_tensor_file_open(path, err);
    if (!f)
        return err ? err->status : PL_EINPUT;
    pl_status status = options_of(f, w, err);
    pl_policy_layout l;
    matrix m[MAX_MATRICES];
    int n = 0;
    bool heads = true; /* the split and recompute heads are in the file */
    if (status == PL_OK) {
        pl_policy_layout_build(&l, w->hidden, w->rounds, w->groups);
        n = matrices_of(&l, w->hidden, w->rounds, w->groups, m);
        heads = f->n != n + 1 - MEMORY_HEAD_MATRICES ||
                pl_tensor_file_find(f, m[n - MEMORY_HEAD_MATRICES].name) >= 0;
        if (f->n != n + 1 && heads)
            status = pl_error_set(err, PL_EINPUT, NULL,
                                  "%d tensors where a policy of these shapes has %d", f->n,
                                  n + 1);
    }
    int in_file = heads ? n : n - MEMORY_HEAD_MATRICES;
    for (int k = 0; k < in_file && status == PL_OK; k++)
        status = check_matrix(f, &m[k], err);
    if (status == PL_OK && !(w->values = calloc((size_t)l.n, sizeof *w->values)))
        status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int k = 0; k < in_file && status == PL_OK; k++)
        status = load_matrix(f, &m[k], w, err);
    if (status == PL_OK && !heads)
        pl_policy_init_memory_heads(&l, w->hidden, w->groups, w->values);
    pl_tensor_file_free(f);
    if (status == PL_OK)
        w->n = l.n;
    else
        pl_policy_weights_clear(w);
    return status;
}

const char *pl_policy_default_path(void)
{
    static const char *const candidates[] = {PL_INSTALLED_POLICY, PL_SOURCE_POLICY};
    const char *chosen = getenv("PLACER_POLICY");
    if (chosen)
        return *chosen ? chosen : NULL;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++)
        if (access(candidates[i], R_OK) == 0)
            return candidates[i];
    return NULL;
}

pl_status pl_agent_start_from(pl_agent *a, const pl_policy_weights *w, pl_error *err)
{
    const pl_policy *p = &a->policy;
    if (w->hidden != p->hidden || w->rounds != p->rounds || w->groups != p->groups)
        return pl_error_set(err, PL_EINPUT, NULL,
                            "the policy has hidden width %d, %d rounds and %d groups; the "
                            "agent's options ask for %d, %d and %d",
                            w->hidden, w->rounds, w->groups, p->hidden, p->rounds, p->groups);
    memcpy(a->policy.params, w->values, (size_t)w->n * sizeof *w->values);
    return PL_OK;
}

pl_status pl_agent_weights(const pl_agent *a, pl_policy_weights *w, pl_error *err)
{
    const pl_policy *p = &a->policy;
    *w = (pl_policy_weights){.hidden = p->hidden, .rounds = p->rounds, .groups = p->groups,
                             .n = p->layout.n};
    if (!(w->values = malloc((size_t)w->n * sizeof *w->values)))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    memcpy(w->values, p->params, (size_t)w->n * sizeof *w->values);
    return PL_OK;
}
