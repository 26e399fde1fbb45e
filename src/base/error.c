/* The first-error record: filling it in and formatting it as one line. */
#include "error.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

void pl_error_init(pl_error *err, const char *source)
{
    if (!err)
        return;
    memset(err, 0, sizeof *err);
    snprintf(err->source, sizeof err->source, "%s", source ? source : "");
}

static void set_text(pl_error *err, const char *fmt, va_list ap)
{
    vsnprintf(err->text, sizeof err->text, fmt, ap);
    /* One line, always: a message quoting user text must not break the line. */
    for (char *c = err->text; *c; c++)
        if (*c == '\n' || *c == '\r')
            *c = ' ';
}

pl_status pl_error_set(pl_error *err, pl_status status, const char *path, const char *fmt, ...)
{
    if (!err || err->status != PL_OK)
        return status;
    err->status = status;
    snprintf(err->path, sizeof err->path, "%s", path ? path : "");
    va_list ap;
    va_start(ap, fmt);
    set_text(err, fmt, ap);
    va_end(ap);
    return status;
}

pl_status pl_error_set_at(pl_error *err, pl_status status, int line, int column,
                          const char *fmt, ...)
{
    if (!err || err->status != PL_OK)
        return status;
    err->status = status;
    err->line = line;
    err->column = column;
    va_list ap;
    va_start(ap, fmt);
    set_text(err, fmt, ap);
    va_end(ap);
    return status;
}

void pl_text_escape(const char *text, char *buf, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (cap == 0)
        return;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        unsigned char c = *p;
        /* C1 controls come as U+0080 to U+009F: two bytes in UTF-8 */
        bool c1 = c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f;
        if (c >= 0x20 && c != 0x7f && !c1) {
            if (n + 1 >= cap)
                break;
            buf[n++] = (char)c;
            continue;
        }
        unsigned code = c1 ? *++p : c;
        if (n + (c1 ? 6 : 4) >= cap)
            break;
        buf[n++] = '\\';
        if (c1)
            buf[n++] = 'u', buf[n++] = '0', buf[n++] = '0';
        else
            buf[n++] = 'x';
        buf[n++] = hex[code >> 4];
        buf[n++] = hex[code & 15];
    }
    buf[n] = '\0';
}

void pl_error_format(const pl_error *err, char *buf, size_t cap)
{
    const char *source = err->source[0] ? err->source : "placer";
    char line[PL_ERROR_SOURCE_MAX + PL_ERROR_PATH_MAX + PL_ERROR_TEXT_MAX + 32];
    if (err->line > 0)
        snprintf(line, sizeof line, "%s:%d:%d: %s", source, err->line, err->column, err->text);
    else if (err->path[0])
        snprintf(line, sizeof line, "%s: %s: %s", source, err->path, err->text);
    else
        snprintf(line, sizeof line, "%s: %s", source, err->text);
    pl_text_escape(line, buf, cap);
}

const char *pl_status_name(pl_status status)
{
    switch (status) {
    case PL_OK: return "ok";
    case PL_EINPUT: return "bad input";
    case PL_EIO: return "input/output error";
    case PL_ENOMEM: return "out of memory";
    case PL_EINTERNAL: return "internal error";
    case PL_EINTERRUPTED: return "interrupted";
    case PL_ENOFIT: return "does not fit";
    }
    return "unknown status";
}
