/* The output rules of atomic_file.h: follow symbolic links to the file they end at, write
 * devices, FIFOs and standard output directly, replace regular files by a temporary file
 * beside them, fsync and rename; remove what killed writers left. */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* As many links as Linux follows before ELOOP. */
enum { MAX_LINKS = 40, TEMP_TRIES = 100 };

static void release(pl_atomic_file *file)
{
    free(file->path);
    free(file->temp);
    free(file->target);
    *file = (pl_atomic_file){0};
}

static pl_status fail(pl_atomic_file *file, pl_error *err, const char *what, const char *path,
                      int error)
{
    pl_status status = error == ENOMEM ? PL_ENOMEM : PL_EIO;
    pl_error_set(err, status, NULL, "cannot %s %s: %s", what, path, strerror(error));
    release(file);
    return status;
}

/* "dir/" of "dir/name", "" for a bare name; malloc'd. */
static char *folder_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t len = slash ? (size_t)(slash - path) + 1 : 0;
    char *folder = malloc(len + 1);
    if (folder) {
        memcpy(folder, path, len);
        folder[len] = '\0';
    }
    return folder;
}

/* The target of the link `link` (st_size bytes long), relative to the link's folder. */
static char *follow(const char *link, off_t size)
{
    size_t cap = size > 0 ? (size_t)size + 1 : 256;
    char *text = NULL;
    for (;;) { /* the link may grow between lstat and readlink */
        char *grown = realloc(text, cap);
        if (!grown)
            break;
        text = grown;
        ssize_t len = readlink(link, text, cap);
        if (len < 0)
            break;
        if ((size_t)len < cap) {
            text[len] = '\0';
            if (text[0] == '/')
                return text;
            char *folder = folder_of(link);
            char *joined = folder ? malloc(strlen(folder) + (size_t)len + 1) : NULL;
            if (joined)
                strcat(strcpy(joined, folder), text);
            free(folder);
            free(text);
            return joined;
        }
        cap *= 2;
    }
    free(text);
    return NULL;
}

/* The file a chain of symbolic links starting at `path` ends at (path itself when it is
 * no link), which may not exist yet; its lstat in *st (st_mode 0 when it does not exist).
 * NULL with errno set on failure. */
static char *final_target(const char *path, struct stat *st)
{
    char *current = strdup(path);
    for (int hops = 0; current; hops++) {
        if (lstat(current, st) != 0) {
            if (errno != ENOENT)
                break;
            st->st_mode = 0;
            return current;
        }
        if (!S_ISLNK(st->st_mode))
            return current;
        if (hops == MAX_LINKS) {
            errno = ELOOP;
            break;
        }
        char *next = follow(current, st->st_size);
        int saved = errno;
        free(current);
        errno = saved;
        current = next;
    }
    int saved = errno;
    free(current);
    errno = saved;
    return NULL;
}

/* Removes the temporary files of `target` that writers killed outright left behind:
 * `.NAME.placer-tmp-PID-XXXXXX` whose PID no longer runs. A PID that runs (this process,
 * another writer, or a process that reused the number) keeps its file. Best effort: a
 * folder that cannot be read is left as it is. */
static void remove_leftovers(const char *target)
{
    const char *slash = strrchr(target, '/');
    const char *name = slash ? slash + 1 : target;
    char *folder = folder_of(target);
    size_t prefix_len = strlen(name) + sizeof PL_ATOMIC_TEMP_INFIX; /* "." NAME INFIX */
    char *prefix = malloc(prefix_len + 1);
    DIR *dir = folder && prefix ? opendir(folder[0] ? folder : ".") : NULL;
    if (dir) {
        snprintf(prefix, prefix_len + 1, ".%s" PL_ATOMIC_TEMP_INFIX, name);
        int fd = dirfd(dir);
        struct dirent *entry;
        while ((entry = readdir(dir))) {
            if (strncmp(entry->d_name, prefix, prefix_len) != 0)
                continue;
            char *end;
            errno = 0;
            long pid = strtol(entry->d_name + prefix_len, &end, 10);
            if (errno || pid <= 0 || pid > INT32_MAX || *end != '-' || strlen(end) != 7)
                continue;
            struct stat st;
            if (kill((pid_t)pid, 0) != 0 && errno == ESRCH &&
                fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                unlinkat(fd, entry->d_name, 0);
        }
        closedir(dir);
    }
    free(prefix);
    free(folder);
}

/* ".NAME.placer-tmp-PID-XXXXXX" beside `target`, created with O_EXCL and mode 0666 so that
 * the umask gives the file its mode, as it would a new file. The descriptor, or -1. */
static int create_temp(pl_atomic_file *file, const char *target)
{
    static const char digits[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const char *slash = strrchr(target, '/');
    const char *name = slash ? slash + 1 : target;
    size_t folder = (size_t)(name - target);
    long pid = (long)getpid();
    size_t len = strlen(target) + sizeof "." PL_ATOMIC_TEMP_INFIX "-XXXXXX" + 20;
    if (!(file->temp = malloc(len))) {
        errno = ENOMEM;
        return -1;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t state = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^
                     ((uint64_t)pid << 16) ^ (uint64_t)(uintptr_t)file;
    for (int attempt = 0; attempt < TEMP_TRIES; attempt++) {
        char suffix[7];
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        uint64_t bits = state >> 16;
        for (int k = 0; k < 6; k++, bits /= sizeof digits - 1)
            suffix[k] = digits[bits % (sizeof digits - 1)];
        suffix[6] = '\0';
        snprintf(file->temp, len, "%.*s.%s" PL_ATOMIC_TEMP_INFIX "%ld-%s", (int)folder, target,
                 name, pid, suffix);
        int fd = open(file->temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static pl_status open_direct(pl_atomic_file *file, const char *target, pl_error *err)
{
    file->fp = fopen(target, "w");
    return file->fp ? PL_OK : fail(file, err, "write", file->path, errno);
}

/* The temporary file of the write under way (the latest opened), for
 * pl_atomic_remove_pending: set once the file exists, cleared before its name is freed. */
static const char *volatile pending_temp;

void pl_atomic_remove_pending(void)
{
    const char *temp = pending_temp;
    if (temp)
        unlink(temp);
}

pl_status pl_atomic_open(pl_atomic_file *file, const char *path, pl_error *err)
{
    *file = (pl_atomic_file){0};
    if (!(file->path = strdup(path)))
        return fail(file, err, "write", path, ENOMEM);
    if (strcmp(path, "-") == 0) {
        file->fp = stdout;
        return PL_OK;
    }
    struct stat st;
    char *target = final_target(path, &st);
    if (!target)
        return fail(file, err, "write", path, errno);
    pl_status status;
    if (S_ISDIR(st.st_mode)) {
        status = fail(file, err, "write", path, EISDIR);
    } else if (st.st_mode != 0 && !S_ISREG(st.st_mode)) {
        status = open_direct(file, target, err);
    } else {
        remove_leftovers(target);
        int fd = create_temp(file, target);
        if (fd < 0) {
            status = fail(file, err, "create a temporary file for", path, errno);
        } else if (!(file->fp = fdopen(fd, "w"))) {
            int saved = errno;
            close(fd);
            unlink(file->temp);
            status = fail(file, err, "write", path, saved);
        } else {
            file->target = target; /* the handle's now */
            pending_temp = file->temp;
            return PL_OK;
        }
    }
    free(target);
    return status;
}

/* After a rename, the folder's entry on disk too; a folder that cannot be synced (some
 * file systems) loses nothing a crash would not. */
static void sync_folder(const char *path)
{
    char *folder = folder_of(path);
    int fd = folder ? open(folder[0] ? folder : ".", O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(folder);
}

pl_status pl_atomic_commit(pl_atomic_file *file, pl_error *err)
{
    bool direct = !file->temp;
    bool failed = fflush(file->fp) != 0 || ferror(file->fp) ||
                  (!direct && fsync(fileno(file->fp)) != 0);
    int saved = errno;
    if (file->fp != stdout && fclose(file->fp) != 0 && !failed) {
        failed = true;
        saved = errno;
    }
    if (!direct && !failed && rename(file->temp, file->target) != 0) {
        failed = true;
        saved = errno;
    } else if (!direct && !failed) {
        sync_folder(file->target);
    }
    pl_status status = PL_OK;
    if (failed) {
        if (!direct)
            unlink(file->temp);
        status = pl_error_set(err, PL_EIO, NULL, "cannot write %s: %s", file->path,
                              strerror(saved));
    }
    if (!direct && pending_temp == file->temp)
        pending_temp = NULL;
    release(file);
    return status;
}

void pl_atomic_abort(pl_atomic_file *file)
{
    if (!file->fp)
        return;
    if (file->fp != stdout)
        fclose(file->fp);
    if (file->temp)
        unlink(file->temp);
    if (file->temp && pending_temp == file->temp)
        pending_temp = NULL;
    release(file);
}
