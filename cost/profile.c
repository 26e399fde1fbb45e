/* The cached calibration profile (profile.h). */
#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

bool pl_profile_path(char *buf, size_t cap)
{
    const char *explicit = getenv("PLACER_PROFILE"), *cache = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    if (explicit && *explicit)
        return (size_t)snprintf(buf, cap, "%s", explicit) < cap;
    if (cache && *cache)
        return (size_t)snprintf(buf, cap, "%s/placer/profile.json", cache) < cap;
    if (home && *home)
        return (size_t)snprintf(buf, cap, "%s/.cache/placer/profile.json", home) < cap;
    return false;
}

const char *pl_profile_graphs_dir(void)
{
    static const char *const candidates[] = {PL_INSTALLED_GRAPHS, PL_SOURCE_GRAPHS};
    const char *chosen = getenv("PLACER_GRAPHS");
    if (chosen && *chosen)
        return chosen;
    for (size_t i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        char probe[4096];
        snprintf(probe, sizeof probe, "%s/small/mlp-small.json", candidates[i]);
        if (access(probe, R_OK) == 0)
            return candidates[i];
    }
    return NULL;
}

/* mkdir -p of the file's directory. */
static void make_parents(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *slash = dir + 1; (slash = strchr(slash, '/')); slash++) {
        *slash = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return;
        *slash = '/';
    }
}

pl_status pl_profile_check(const pl_cost_model *m, const pl_cluster *c, pl_error *err)
{
    char key[sizeof m->machine];
    pl_cost_machine_key(key, sizeof key);
    if (strcmp(key, m->machine) != 0)
        return pl_error_set(err, PL_EINPUT, "/machine", "measured on another machine "
                            "(\"%s\")", m->machine);
    for (int d = 0; d < c->n_devices; d++)
        if (!pl_cost_has_threads(m, c->devices[d].threads))
            return pl_error_set(err, PL_EINPUT, "/ops", "no measurements at %d threads "
                                "(device %s has them)", c->devices[d].threads,
                                c->devices[d].name);
    return PL_OK;
}

/* Whether a read profile serves this machine and every thread count of the cluster. */
static bool profile_fits(const pl_cost_model *m, const pl_cluster *c)
{
    return pl_profile_check(m, c, NULL) == PL_OK;
}

bool pl_profile_read_cached(pl_cost_model *m, const pl_cluster *c)
{
    char path[4096];
    memset(m, 0, sizeof *m);
    if (!pl_profile_path(path, sizeof path) || access(path, R_OK) != 0 ||
        pl_cost_model_read(m, path, NULL) != PL_OK)
        return false;
    if (profile_fits(m, c))
        return true;
    pl_cost_model_clear(m);
    memset(m, 0, sizeof *m);
    return false;
}

int pl_profile_threads(const pl_cluster *c, const pl_cost_model *old, int *threads)
{
    int n = 0;
    for (int t = 1; t <= PL_COST_MAX_THREADS; t++) {
        bool used = old && pl_cost_has_threads(old, t);
        for (int d = 0; d < c->n_devices && !used; d++)
            used = c->devices[d].threads == t;
        if (used)
            threads[n++] = t;
    }
    return n;
}

/* How far past its thresholds a calibration was: below 1 quiet, the lower the quieter. */
static double noise_score(const pl_calibration_record *r)
{
    double spread = r->compared >= PL_CALIBRATION_MIN_COMPARED && r->spread_threshold > 0
                        ? r->spread_p90 / r->spread_threshold : 0;
    double others = r->others_threshold > 0 ? r->others_share / r->others_threshold : 0;
    return spread > others ? spread : others;
}

/* "its two passes disagreed by 46% or more on a tenth of its ops, over 40%; other work
 * took 84% of the CPU, over 75%": what made a calibration noisy, "" when nothing. */
static void noise_text(const pl_calibration_record *r, char *buf, size_t cap)
{
    int at = 0;
    buf[0] = '\0';
    if (r->compared >= PL_CALIBRATION_MIN_COMPARED && r->spread_p90 > r->spread_threshold)
        at = snprintf(buf, cap, "its two passes disagreed by %.0f%% or more on a tenth of "
                      "its ops, over %.0f%%", 100 * r->spread_p90, 100 * r->spread_threshold);
    if (at >= 0 && (size_t)at < cap && r->others_share > r->others_threshold)
        snprintf(buf + at, cap - (size_t)at, "%sother work took %.0f%% of the CPU, over %.0f%%",
                 at ? "; " : "", 100 * r->others_share, 100 * r->others_threshold);
}

/* Calibrates up to PL_PROFILE_ATTEMPTS times while an attempt comes out noisy, and keeps
 * the quietest; its record counts the attempts and the time of them all. */
static pl_status calibrate_quietest(pl_cost_model *m, const pl_calibration *how, pl_error *err)
{
    double start = pl_now();
    pl_status status = pl_cost_calibrate(m, how, err);
    pl_calibration_record last = m->calibration;
    int attempts = 1;
    while (status == PL_OK && attempts < PL_PROFILE_ATTEMPTS && pl_calibration_noisy(&last)) {
        char why[256], what[512];
        noise_text(&last, why, sizeof why);
        snprintf(what, sizeof what, "noisy (%s): measuring again, attempt %d of %d", why,
                 attempts + 1, PL_PROFILE_ATTEMPTS);
        if (how->progress)
            how->progress(how->context, what);
        pl_cost_model *next = malloc(sizeof *next);
        if (!next) {
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
            break;
        }
        status = pl_cost_calibrate(next, how, err);
        attempts++;
        if (status == PL_OK) {
            last = next->calibration;
            bool quieter = noise_score(&last) < noise_score(&m->calibration);
            pl_cost_model_clear(quieter ? m : next);
            if (quieter)
                *m = *next;
        }
        free(next);
    }
    if (status != PL_OK) { /* an interrupted attempt: nothing is kept */
        pl_cost_model_clear(m);
        return status;
    }
    m->calibration.attempts = attempts;
    m->calibration.seconds = pl_now() - start;
    return PL_OK;
}

bool pl_profile_old(const pl_cost_model *m, long long now)
{
    return m->calibration.measured_at <= 0 ||
           now - m->calibration.measured_at > (long long)PL_PROFILE_OLD_DAYS * 86400;
}

void pl_profile_age_text(double seconds, char *buf, size_t cap)
{
    if (seconds < 0)
        snprintf(buf, cap, "in the future");
    else if (seconds < 120)
        snprintf(buf, cap, "%.0f s ago", seconds);
    else if (seconds < 2 * 3600)
        snprintf(buf, cap, "%.0f min ago", seconds / 60);
    else if (seconds < 2 * 86400)
        snprintf(buf, cap, "%.0f h ago", seconds / 3600);
    else
        snprintf(buf, cap, "%.0f days ago", seconds / 86400);
}

bool pl_profile_warning(const pl_cost_model *m, long long now, char *buf, size_t cap)
{
    const pl_calibration_record *r = &m->calibration;
    bool noisy = pl_calibration_noisy(r), old = pl_profile_old(m, now);
    if (!noisy && !old)
        return false;
    char why[256] = "", when[96] = "at an unknown time";
    if (r->measured_at > 0) {
        char age[32], utc[32];
        time_t t = (time_t)r->measured_at;
        struct tm tm;
        pl_profile_age_text((double)(now - r->measured_at), age, sizeof age);
        if (!gmtime_r(&t, &tm) || !strftime(utc, sizeof utc, "%Y-%m-%dT%H:%M:%SZ", &tm))
            snprintf(utc, sizeof utc, "?");
        snprintf(when, sizeof when, "%s, %s", age, utc);
    }
    noise_text(r, why, sizeof why);
    if (noisy)
        snprintf(buf, cap, "the calibration profile is noisy: %s; measured %s%s: run `placer "
                 "calibrate --force` on a quiet machine", why, when,
                 old ? ", and old" : "");
    else
        snprintf(buf, cap, "the calibration profile is old: measured %s (more than %d days "
                 "count as old): run `placer calibrate --force` on a quiet machine", when,
                 PL_PROFILE_OLD_DAYS);
    return true;
}

pl_status pl_profile_load(pl_cost_model *m, const pl_cluster *c, bool force,
                          void (*progress)(void *context, const char *what), void *context,
                          const volatile sig_atomic_t *interrupt, bool *calibrated,
                          pl_error *err)
{
    char path[4096];
    *calibrated = false;
    bool have_path = pl_profile_path(path, sizeof path);
    pl_cost_model *old = malloc(sizeof *old);
    if (!old)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_error why;
    pl_error_init(&why, path);
    bool exists = have_path && access(path, R_OK) == 0;
    bool read = exists && pl_cost_model_read(old, path, &why) == PL_OK;
    if (exists && !read && progress) { /* say why it is measured again: an old format, a
                                          hand edit */
        char line[PL_ERROR_TEXT_MAX + 4096 + 64], what[sizeof line + 64];
        pl_error_format(&why, line, sizeof line);
        snprintf(what, sizeof what, "the cached profile does not read (%s)", line);
        progress(context, what);
    }
    if (read && !force && pl_profile_check(old, c, &why) != PL_OK && progress) {
        char line[PL_ERROR_TEXT_MAX + 4096 + 64], what[sizeof line + 64];
        pl_error_format(&why, line, sizeof line);
        snprintf(what, sizeof what, "the cached profile does not serve (%s)", line);
        progress(context, what);
    }
    if (read && !force && profile_fits(old, c)) {
        *m = *old;
        free(old);
        return PL_OK;
    }
    if (read)
        pl_cost_model_clear(old);
    for (int d = 0; d < c->n_devices; d++)
        if (c->devices[d].threads > PL_COST_MAX_THREADS) {
            free(old);
            return pl_error_set(err, PL_EINPUT, NULL, "device %s has %d threads: calibration "
                                "covers 1 to %d", c->devices[d].name, c->devices[d].threads,
                                PL_COST_MAX_THREADS);
        }
    int threads[PL_COST_MAX_THREADS];
    char key[sizeof m->machine];
    pl_cost_machine_key(key, sizeof key);
    int n = pl_profile_threads(c, read && strcmp(old->machine, key) == 0 ? old : NULL, threads);
    free(old);
    pl_calibration how = {.graphs_dir = pl_profile_graphs_dir(), .threads = threads,
                          .n_threads = n, .progress = progress, .context = context,
                          .interrupt = interrupt};
    if (!how.graphs_dir)
        return pl_error_set(err, PL_EIO, NULL, "no bundled models to calibrate with: set "
                            "PLACER_GRAPHS to placer's graphs/ directory");
    pl_status status = calibrate_quietest(m, &how, err);
    if (status != PL_OK)
        return status;
    *calibrated = true;
    if (!have_path)
        return PL_OK;
    make_parents(path);
    pl_error_init(err, path);
    return pl_cost_model_write(m, path, err);
}
