/* Opening inputs by the rules of input_file.h. */
#define _POSIX_C_SOURCE 200809L
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

pl_status pl_input_errno_status(int errnum)
{
    switch (errnum) {
    case ENOENT: case ENOTDIR: case EACCES: case EPERM: case ENAMETOOLONG: case ELOOP:
    case EISDIR: case ENXIO: case ENODEV: case EOVERFLOW:
        return PL_EINPUT;
    default:
        return PL_EIO;
    }
}

static int fail(pl_status *status, pl_status what, char *why, size_t cap, const char *text)
{
    *status = what;
    snprintf(why, cap, "%s", text);
    return -1;
}

int pl_input_open(const char *path, int64_t *size, pl_status *status, char *why, size_t cap)
{
    char text[256];
    /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        snprintf(text, sizeof text, "cannot open: %s", strerror(e));
        return fail(status, pl_input_errno_status(e), why, cap, text);
    }
    const char *wrong = S_ISDIR(st.st_mode) ? "is a directory, not a file"
                        : !S_ISREG(st.st_mode) ? "is not a regular file (a device, FIFO or "
                                                 "socket)"
                                               : NULL;
    int flags = wrong ? 0 : fcntl(fd, F_GETFL);
    if (!wrong && (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        int e = errno;
        close(fd);
        snprintf(text, sizeof text, "cannot open: %s", strerror(e));
        return fail(status, PL_EIO, why, cap, text);
    }
    if (wrong) {
        close(fd);
        return fail(status, PL_EINPUT, why, cap, wrong);
    }
    *size = (int64_t)st.st_size;
    return fd;
}

int pl_input_open_or_fail(const char *path, int64_t *size, pl_error *err)
{
    pl_status status;
    char why[256];
    int fd = pl_input_open(path, size, &status, why, sizeof why);
    if (fd < 0)
        pl_error_set(err, status, NULL, "%s", why);
    return fd;
}

FILE *pl_input_fopen(const char *path, pl_error *err)
{
    int64_t size;
    int fd = pl_input_open_or_fail(path, &size, err);
    if (fd < 0)
        return NULL;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        pl_error_set(err, PL_ENOMEM, NULL, "cannot open: %s", strerror(errno));
        close(fd);
    }
    return fp;
}
