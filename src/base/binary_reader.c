/* Checked reads of binary files (binary_reader.h). */
#include "binary_reader.h"

#include <math.h>
#include <stdarg.h>
#include <sys/stat.h>

bool pl_binary_fail(pl_binary_reader *r, const char *fmt, ...)
{
    if (r->ok && r->err && r->err->status == PL_OK) {
        char text[PL_ERROR_TEXT_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(text, sizeof text, fmt, ap);
        va_end(ap);
        pl_error_set(r->err, PL_EINPUT, NULL, "%s", text);
    }
    r->ok = false;
    return false;
}

bool pl_binary_take(pl_binary_reader *r, void *to, size_t size, size_t n, const char *what)
{
    if (!r->ok)
        return false;
    if (n == 0 || size == 0 || fread(to, size, n, r->fp) == n)
        return true;
    return pl_binary_fail(r, "truncated (reading %s)", what);
}

bool pl_binary_int_in(pl_binary_reader *r, const char *what, int64_t value, int64_t low,
                      int64_t high)
{
    if (!r->ok || (value >= low && value <= high))
        return r->ok;
    if (low == high)
        return pl_binary_fail(r, "%s is %lld (expected %lld)", what, (long long)value,
                              (long long)low);
    return pl_binary_fail(r, "%s is %lld (expected %lld to %lld)", what, (long long)value,
                          (long long)low, (long long)high);
}

bool pl_binary_finite(pl_binary_reader *r, const char *what, double value, double low)
{
    if (!r->ok || (isfinite(value) && value >= low))
        return r->ok;
    if (low == -INFINITY)
        return pl_binary_fail(r, "%s is %g (expected a finite number)", what, value);
    return pl_binary_fail(r, "%s is %g (expected a finite number from %g)", what, value, low);
}

bool pl_binary_has(pl_binary_reader *r, size_t size, size_t n, const char *what)
{
    struct stat st;
    long at = ftell(r->fp);
    if (!r->ok || at < 0 || fstat(fileno(r->fp), &st) != 0 || !S_ISREG(st.st_mode))
        return r->ok; /* not a file whose size is known: the reads themselves will tell */
    size_t left = st.st_size > at ? (size_t)(st.st_size - at) : 0;
    if (size && n > left / size)
        return pl_binary_fail(r, "truncated (reading %s)", what);
    return true;
}

bool pl_binary_at_end(pl_binary_reader *r, const char *what)
{
    long end = ftell(r->fp);
    if (!r->ok || end < 0 || fseek(r->fp, 0, SEEK_END) != 0)
        return r->ok;
    long size = ftell(r->fp);
    if (size > end)
        return pl_binary_fail(r, "%ld byte(s) after %s", size - end, what);
    return true;
}
