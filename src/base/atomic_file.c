/* Temporary file, fsync, rename. */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void release(pl_atomic_file *file)
{
    free(file->path);
    free(file->temp);
    file->fp = NULL;
    file->path = file->temp = NULL;
}

pl_status pl_atomic_open(pl_atomic_file *file, const char *path, pl_error *err)
{
    file->fp = NULL;
    file->path = strdup(path);
    size_t len = strlen(path) + sizeof ".tmp-XXXXXX";
    file->temp = malloc(len);
    if (!file->path || !file->temp) {
        release(file);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    snprintf(file->temp, len, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(file->temp);
    if (fd < 0) {
        pl_error_set(err, PL_EIO, NULL, "cannot create %s: %s", file->temp, strerror(errno));
        release(file);
        return PL_EIO;
    }
    file->fp = fdopen(fd, "w");
    if (!file->fp) {
        close(fd);
        unlink(file->temp);
        release(file);
        return pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", path, strerror(errno));
    }
    return PL_OK;
}

pl_status pl_atomic_commit(pl_atomic_file *file, pl_error *err)
{
    bool failed = fflush(file->fp) != 0 || ferror(file->fp) || fsync(fileno(file->fp)) != 0;
    int saved = errno;
    failed |= fclose(file->fp) != 0;
    if (!failed && rename(file->temp, file->path) != 0) {
        saved = errno;
        failed = true;
    }
    pl_status status = PL_OK;
    if (failed) {
        unlink(file->temp);
        status = pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", file->path,
                              strerror(saved));
    }
    release(file);
    return status;
}

void pl_atomic_abort(pl_atomic_file *file)
{
    if (!file->fp)
        return;
    fclose(file->fp);
    unlink(file->temp);
    release(file);
}
