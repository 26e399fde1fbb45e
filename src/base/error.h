/* Status codes and the first-error record every fallible placer call fills in.
 *
 * Contract: a function that can fail on bad input returns a pl_status and, when given a
 * non-NULL pl_error, records the *first* problem it met (like jansson's json_error_t).
 * The library never prints; callers format the record with pl_error_format. A pl_error
 * is plain data owned by the caller; functions here are thread-safe. */
#ifndef PLACER_ERROR_H
#define PLACER_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pl_status {
    PL_OK = 0,
    PL_EINPUT,   /* the input (file, option, plan) is wrong: the user can fix it */
    PL_EIO,      /* reading or writing a file failed */
    PL_ENOMEM,   /* an allocation failed */
    PL_EINTERNAL, /* placer itself is wrong: a bug */
    PL_EINTERRUPTED, /* stopped early by the caller's interrupt flag (executor.h) */
    PL_ENOFIT       /* the work needs more memory than there is (machine.h) */
} pl_status;

enum { PL_ERROR_SOURCE_MAX = 512, PL_ERROR_PATH_MAX = 512, PL_ERROR_TEXT_MAX = 1024 };

/* Where and what. `line` and `column` (1-based) are set for syntax errors, `path` (an
 * RFC 6901 JSON pointer) for errors of meaning; both may be empty. */
typedef struct pl_error {
    pl_status status;
    char source[PL_ERROR_SOURCE_MAX]; /* file name, or "" */
    int line, column;                 /* 0 when unknown */
    char path[PL_ERROR_PATH_MAX];     /* JSON pointer, or "" */
    char text[PL_ERROR_TEXT_MAX];     /* what is wrong, one line, no trailing period */
} pl_error;

/* Clears `err` (NULL allowed) and names its source file. */
void pl_error_init(pl_error *err, const char *source);

/* Records a problem unless one is recorded already (the first error wins). Returns
 * `status`, so callers can `return pl_error_set(...)`. `err` may be NULL. */
pl_status pl_error_set(pl_error *err, pl_status status, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
pl_status pl_error_set_at(pl_error *err, pl_status status, int line, int column,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* One line: "source:line:column: text", "source: /path: text" or "source: text", its
 * control characters escaped (pl_text_escape): names and paths in it come from files and
 * command lines, and must not reach a terminal as escape sequences. */
void pl_error_format(const pl_error *err, char *buf, size_t cap);

/* Copies `text` into buf[cap] (truncated, always terminated) with every control
 * character escaped: C0 and DEL as \xNN, the C1 controls U+0080 to U+009F as \u00NN. */
void pl_text_escape(const char *text, char *buf, size_t cap);

/* A short name for a status ("bad input", "out of memory", ...). */
const char *pl_status_name(pl_status status);

#ifdef __cplusplus
}
#endif

#endif
