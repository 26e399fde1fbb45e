/* Checkpoint files: writing them whole, reading them with every check first. */
#include "checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"

static const char magic[8] = {'P', 'L', 'A', 'C', 'E', 'R', 'C', 'K'};
enum { VERSION = 1 };

static bool saved(const pl_tensor *t)
{
    return t->kind == PL_TENSOR_PARAM || t->kind == PL_TENSOR_STATE;
}

pl_status pl_checkpoint_write(const char *path, const pl_graph *g, pl_session *session,
                              const pl_train_position *where, pl_error *err)
{
    pl_atomic_file file;
    pl_status status = pl_atomic_open(&file, path, err);
    if (status != PL_OK)
        return status;
    uint32_t version = VERSION, count = 0;
    for (int t = 0; t < g->n_tensors; t++)
        count += saved(&g->tensors[t]);
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
        return pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", path, strerror(errno));
    }
    return pl_atomic_commit(&file, err);
}

typedef struct reader {
    FILE *f;
    const char *path;
    pl_error *err;
} reader;

static bool take(reader *r, void *buf, size_t size, const char *what)
{
    if (fread(buf, 1, size, r->f) == size)
        return true;
    pl_error_set(r->err, PL_EINPUT, NULL, "%s: truncated checkpoint (reading %s)", r->path,
                 what);
    return false;
}

/* Walks the tensor records; with `apply`, copies them into the session. */
static bool read_tensors(reader *r, const pl_graph *g, pl_session *session, uint32_t count,
                         bool apply)
{
    char name[PL_MAX_NAME + 1];
    for (uint32_t k = 0; k < count; k++) {
        uint32_t len;
        uint64_t n;
        if (!take(r, &len, sizeof len, "a name length"))
            return false;
        if (len == 0 || len > PL_MAX_NAME)
            return pl_error_set(r->err, PL_EINPUT, NULL, "%s: corrupt checkpoint (a name of "
                                "%u bytes)", r->path, len), false;
        if (!take(r, name, len, "a name") || !take(r, &n, sizeof n, "an element count"))
            return false;
        name[len] = '\0';
        int t = pl_graph_find_tensor(g, name);
        if (t < 0 || !saved(&g->tensors[t]) ||
            (uint64_t)pl_tensor_elements(&g->tensors[t]) != n)
            return pl_error_set(r->err, PL_EINPUT, NULL, "%s: tensor \"%s\" (%llu values) "
                                "does not match this model", r->path, name,
                                (unsigned long long)n), false;
        if (apply) {
            if (!take(r, pl_session_data(session, t), n * sizeof(float), name))
                return false;
        } else if (fseek(r->f, (long)(n * sizeof(float)), SEEK_CUR) != 0) {
            return pl_error_set(r->err, PL_EINPUT, NULL, "%s: truncated checkpoint", r->path),
                   false;
        }
    }
    return true;
}

pl_status pl_checkpoint_read(const char *path, const pl_graph *g, pl_session *session,
                             pl_train_position *where, pl_error *err)
{
    reader r = {fopen(path, "rb"), path, err};
    if (!r.f)
        return pl_error_set(err, errno == ENOENT ? PL_EINPUT : PL_EIO, NULL,
                            "%s: cannot open: %s", path, strerror(errno));
    char head[8];
    uint32_t version = 0, count = 0;
    uint64_t hash = 0;
    pl_train_position at;
    bool ok = take(&r, head, sizeof head, "the header");
    if (ok && memcmp(head, magic, sizeof magic) != 0)
        ok = pl_error_set(err, PL_EINPUT, NULL, "%s: not a placer checkpoint", path) == PL_OK;
    ok = ok && take(&r, &version, sizeof version, "the version");
    if (ok && version != VERSION)
        ok = pl_error_set(err, PL_EINPUT, NULL, "%s: checkpoint version %u (this placer reads "
                          "%d)", path, version, VERSION) == PL_OK;
    ok = ok && take(&r, &hash, sizeof hash, "the model hash");
    if (ok && hash != g->hash)
        ok = pl_error_set(err, PL_EINPUT, NULL, "%s: written for a different model file",
                          path) == PL_OK;
    ok = ok && take(&r, &at.step, sizeof at.step, "the step") &&
         take(&r, &at.epoch, sizeof at.epoch, "the epoch") &&
         take(&r, &at.position, sizeof at.position, "the position") &&
         take(&r, &at.seed, sizeof at.seed, "the seed") &&
         take(&r, &count, sizeof count, "the tensor count");
    /* Check every record before touching the session, then read them in. */
    long start = ok ? ftell(r.f) : 0;
    ok = ok && read_tensors(&r, g, session, count, false) && fseek(r.f, start, SEEK_SET) == 0 &&
         read_tensors(&r, g, session, count, true);
    fclose(r.f);
    if (!ok)
        return err && err->status != PL_OK ? err->status : PL_EINPUT;
    *where = at;
    return PL_OK;
}
