/* Checkpoint files: writing them whole, reading them with every check first. */
#include "checkpoint.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "binary_reader.h"
#include "input_file.h"

static const char magic[8] = {'P', 'L', 'A', 'C', 'E', 'R', 'C', 'K'};
enum { VERSION = PL_CHECKPOINT_VERSION };

static bool saved(const pl_tensor *t)
{
    return t->kind == PL_TENSOR_PARAM || t->kind == PL_TENSOR_STATE;
}

static int saved_count(const pl_graph *g)
{
    int count = 0;
    for (int t = 0; t < g->n_tensors; t++)
        count += saved(&g->tensors[t]);
    return count;
}

/* The records' bytes for this model: name length, name, element count, values. */
static uint64_t records_bytes(const pl_graph *g)
{
    uint64_t bytes = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (saved(&g->tensors[t]))
            bytes += sizeof(uint32_t) + strlen(g->tensors[t].name) + sizeof(uint64_t) +
                     (uint64_t)pl_tensor_elements(&g->tensors[t]) * sizeof(float);
    return bytes;
}

pl_status pl_checkpoint_write(const char *path, const pl_graph *g, pl_session *session,
                              const pl_train_position *where, pl_error *err)
{
    pl_atomic_file file;
    pl_status status = pl_atomic_open(&file, path, err);
    if (status != PL_OK)
        return status;
    uint32_t version = VERSION, count = (uint32_t)saved_count(g);
    FILE *f = file.fp;
    fwrite(magic, sizeof magic, 1, f);
    fwrite(&version, sizeof version, 1, f);
    fwrite(&g->hash, sizeof g->hash, 1, f);
    fwrite(&where->step, sizeof where->step, 1, f);
    fwrite(&where->epoch, sizeof where->epoch, 1, f);
    fwrite(&where->position, sizeof where->position, 1, f);
    fwrite(&where->seed, sizeof where->seed, 1, f);
    fwrite(&count, sizeof count, 1, f);
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        if (!saved(tensor))
            continue;
        uint32_t len = (uint32_t)strlen(tensor->name);
        uint64_t n = (uint64_t)pl_tensor_elements(tensor);
        fwrite(&len, sizeof len, 1, f);
        fwrite(tensor->name, 1, len, f);
        fwrite(&n, sizeof n, 1, f);
        fwrite(pl_session_data(session, t), sizeof(float), n, f);
    }
    if (ferror(f)) {
        pl_atomic_abort(&file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write: %s", strerror(errno));
    }
    return pl_atomic_commit(&file, err);
}

/* ---- reading: every field checked, the first problem named ------------------------------ */

/* The header: magic, version, the model's identity, where training stood. */
static bool read_header(pl_binary_reader *r, const pl_graph *g, pl_train_position *at,
                        uint32_t *count)
{
    char head[8];
    uint32_t version = 0;
    uint64_t hash = 0;
    if (!pl_binary_take(r, head, sizeof head, 1, "the header"))
        return false;
    if (memcmp(head, magic, sizeof magic) != 0)
        return pl_binary_fail(r, "not a placer training checkpoint");
    if (!pl_binary_take(r, &version, sizeof version, 1, "the format version"))
        return false;
    if (version != VERSION)
        return pl_binary_fail(
            r,
            "a training checkpoint of format %u, made by %s placer (this one reads "
            "%d)",
            version, version < VERSION ? "an older" : "a newer", VERSION);
    if (!pl_binary_take(r, &hash, sizeof hash, 1, "the model hash"))
        return false;
    if (hash != g->hash)
        return pl_binary_fail(r, "made for another model (its model hash differs)");
    return pl_binary_take(r, &at->step, sizeof at->step, 1, "the step") &&
           pl_binary_int_in(r, "the step", at->step, 0, PL_CHECKPOINT_MAX_STEP) &&
           pl_binary_take(r, &at->epoch, sizeof at->epoch, 1, "the epoch") &&
           pl_binary_int_in(r, "the epoch", at->epoch, 0, at->step) &&
           pl_binary_take(r, &at->position, sizeof at->position, 1, "the position") &&
           pl_binary_int_in(r, "the position", at->position, 0, PL_CHECKPOINT_MAX_STEP) &&
           pl_binary_take(r, &at->seed, sizeof at->seed, 1, "the seed") &&
           pl_binary_take(r, count, sizeof *count, 1, "the tensor count");
}

/* One tensor record into `values` (its place in the scratch copy); `seen` marks it. */
static bool read_record(pl_binary_reader *r, const pl_graph *g, float **values, bool *seen)
{
    char name[PL_MAX_NAME + 1];
    uint32_t len;
    uint64_t n;
    if (!pl_binary_take(r, &len, sizeof len, 1, "a tensor's name length"))
        return false;
    if (len == 0 || len > PL_MAX_NAME)
        return pl_binary_fail(r, "a tensor name of %u bytes (expected 1 to %d)", len, PL_MAX_NAME);
    if (!pl_binary_take(r, name, len, 1, "a tensor's name"))
        return false;
    name[len] = '\0';
    int t = pl_graph_find_tensor(g, name);
    if (t < 0 || !saved(&g->tensors[t]))
        return pl_binary_fail(
            r, "tensor \"%s\" is not a parameter or optimiser state of this model", name);
    if (seen[t])
        return pl_binary_fail(r, "tensor \"%s\" is given twice", name);
    seen[t] = true;
    if (!pl_binary_take(r, &n, sizeof n, 1, "a tensor's element count"))
        return false;
    if ((uint64_t)pl_tensor_elements(&g->tensors[t]) != n)
        return pl_binary_fail(r, "tensor \"%s\" has %llu values (this model's has %lld)", name,
                              (unsigned long long)n, (long long)pl_tensor_elements(&g->tensors[t]));
    char what[PL_MAX_NAME + 16];
    snprintf(what, sizeof what, "tensor \"%s\"", name);
    if (!pl_binary_take(r, values[t], n * sizeof(float), 1, what))
        return false;
    for (uint64_t k = 0; g->tensors[t].dtype == PL_F32 && k < n; k++) /* i32: any value */
        if (!isfinite(values[t][k]))
            return pl_binary_fail(r, "tensor \"%s\": value %llu is %g (expected a finite number)",
                                  name, (unsigned long long)k, (double)values[t][k]);
    return true;
}

/* Every record into a scratch copy, each tensor exactly once, nothing after them. */
static bool read_tensors(pl_binary_reader *r, const pl_graph *g, float **values, uint32_t count)
{
    bool *seen = calloc((size_t)g->n_tensors + 1, sizeof *seen);
    if (!seen)
        return pl_binary_fail(r, "out of memory");
    for (uint32_t k = 0; k < count && r->ok; k++)
        read_record(r, g, values, seen);
    for (int t = 0; t < g->n_tensors && r->ok; t++)
        if (saved(&g->tensors[t]) && !seen[t])
            pl_binary_fail(r, "tensor \"%s\" is missing", g->tensors[t].name);
    free(seen);
    return pl_binary_at_end(r, "the last tensor");
}

pl_status pl_checkpoint_read(const char *path, const pl_graph *g, pl_session *session,
                             pl_train_position *where, pl_error *err)
{
    pl_error_init(err, path);
    pl_binary_reader r = {pl_input_fopen(path, err), err, true};
    if (!r.fp)
        return err && err->status != PL_OK ? err->status : PL_EIO;
    pl_train_position at;
    uint32_t count = 0;
    int expected = saved_count(g);
    float **values = calloc((size_t)g->n_tensors + 1, sizeof *values);
    bool ok = values && read_header(&r, g, &at, &count);
    if (ok && count != (uint32_t)expected)
        ok = pl_binary_fail(&r, "%u tensors (this model has %d parameters and optimiser states)",
                            count, expected);
    /* the file holds the model's records before room is made for them */
    ok = ok && pl_binary_has(&r, 1, (size_t)records_bytes(g), "the tensors");
    for (int t = 0; ok && t < g->n_tensors; t++)
        if (saved(&g->tensors[t]) &&
            !(values[t] = malloc((size_t)pl_tensor_elements(&g->tensors[t]) * sizeof(float))))
            ok = pl_binary_fail(&r, "out of memory");
    ok = ok && read_tensors(&r, g, values, count);
    fclose(r.fp);
    /* Only a checkpoint found whole changes the session. */
    for (int t = 0; values && t < g->n_tensors; t++) {
        if (ok && values[t])
            memcpy(pl_session_data(session, t), values[t],
                   (size_t)pl_tensor_elements(&g->tensors[t]) * sizeof(float));
        free(values[t]);
    }
    free(values);
    if (!ok)
        return err && err->status != PL_OK ? err->status : PL_ENOMEM;
    *where = at;
    return PL_OK;
}
