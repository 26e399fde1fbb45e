/* The cost model (cost_model.h): predictions, the fit, and profile files. */
#include "cost_model.h"

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "kernels.h"
#include "json_reader.h"
#include "linear.h"
#include "op_times.h"
#include "roofline.h"

void pl_cost_machine_key(char *buf, size_t cap)
{
    char cpu[256] = "unknown";
    FILE *info = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (info && fgets(line, sizeof line, info))
        if (strncmp(line, "model name", 10) == 0) {
            const char *colon = strchr(line, ':');
            snprintf(cpu, sizeof cpu, "%.200s", colon ? colon + 2 : line);
            cpu[strcspn(cpu, "\n")] = '\0';
            break;
        }
    if (info)
        fclose(info);
    /* the core OpenBLAS will run, not the one it loaded with */
    snprintf(buf, cap, "cpu=%s; cores=%ld; openblas=%s %s; placer=%s", cpu,
             sysconf(_SC_NPROCESSORS_ONLN), pl_blas_core(), openblas_get_config(), PACKAGE_VERSION);
}

bool pl_cost_has_threads(const pl_cost_model *m, int threads)
{
    return threads >= 1 && threads <= PL_COST_MAX_THREADS &&
           m->ops[threads][PL_OP_COUNT].samples > 0;
}

/* The measured thread count closest to `threads` from below, else any. */
static int measured_threads(const pl_cost_model *m, int threads)
{
    if (threads > PL_COST_MAX_THREADS)
        threads = PL_COST_MAX_THREADS;
    for (int t = threads; t >= 1; t--)
        if (pl_cost_has_threads(m, t))
            return t;
    for (int t = threads + 1; t <= PL_COST_MAX_THREADS; t++)
        if (pl_cost_has_threads(m, t))
            return t;
    return 1;
}

double pl_cost_fastest_rate(const pl_cost_model *m, int threads)
{
    return m->ops[measured_threads(m, threads)][PL_OP_COUNT].fastest;
}

/* The fit an op takes: its route's, else its kind's, else all kinds'. */
static const pl_op_cost *fit_of(const pl_cost_model *m, pl_op_kind kind, int route, int threads)
{
    int t = measured_threads(m, threads);
    for (int i = 0; route >= 0 && i < m->n_routes; i++) {
        const pl_route_fit *r = &m->routes[i];
        if (r->threads == t && r->kind == kind && r->route == route)
            return &r->cost;
    }
    const pl_op_cost *row = m->ops[t];
    return row[kind].samples > 0 ? &row[kind] : &row[PL_OP_COUNT];
}

double pl_cost_least_over_fit(const pl_cost_model *m, pl_op_kind kind, int route, int threads)
{
    return fit_of(m, kind, route, threads)->least;
}

double pl_cost_op(const pl_cost_model *m, pl_op_kind kind, int route, int threads,
                  double flops, double bytes)
{
    const pl_op_cost *c = fit_of(m, kind, route, threads);
    return (c->seconds + c->per_flop * flops + c->per_byte * bytes) * pl_cost_speed(m);
}

double pl_cost_together(const pl_cost_model *m, pl_op_kind kind, int threads)
{
    const pl_op_cost *row = m->ops[measured_threads(m, threads)];
    double factor = row[kind].together > 0 ? row[kind].together : row[PL_OP_COUNT].together;
    return factor > 1 ? factor : 1;
}

double pl_cost_op_on(const pl_cost_model *m, pl_op_kind kind, int route,
                     const pl_device *device, double flops, double bytes)
{
    if (device->hardware)
        return pl_roofline_seconds(device->hardware, kind, flops, bytes);
    return pl_cost_op(m, kind, route, device->threads, flops, bytes);
}

double pl_task_op_bytes(const pl_program *p, const pl_task *task)
{
    const pl_op *op = &p->graph->ops[task->op];
    double bytes = 0;
    for (int j = 0; j < op->n_outputs; j++)
        bytes += (double)pl_tensor_bytes(&p->shapes[op->outputs[j]]);
    if (op->kind == PL_OP_SLICE) /* it reads what it writes, not its whole input */
        return 2 * bytes;
    for (int j = 0; j < op->n_inputs; j++)
        bytes += (double)pl_tensor_bytes(&p->shapes[op->inputs[j]]);
    return bytes;
}

double pl_cost_native(const pl_cost_model *m, const pl_program *p, const pl_cluster *c,
                      const pl_task *task)
{
    if (task->kind == PL_TASK_COPY)
        return pl_cost_native_copy(m, (double)pl_task_bytes(p, task));
    if (task->kind == PL_TASK_REDUCE) /* an add on one thread: two ranges read, one written */
        return pl_cost_op(m, PL_OP_ADD, PL_ROUTE_ONE, 1,
                          (double)pl_task_bytes(p, task) / sizeof(float),
                          3.0 * (double)pl_task_bytes(p, task));
    const pl_device *device = &c->devices[task->resource];
    const pl_op *op = &p->graph->ops[task->op];
    double native = pl_cost_lookup(m, pl_op_signature(op, p->shapes, device->threads));
    /* a sharded update: its share, and the rest of its accumulator zeroed (a memset: half
     * a copy's traffic) */
    double share = pl_task_share(p, task), zeroed = 0;
    if (share < 1) {
        double rest = (1 - share) * (double)pl_tensor_bytes(&p->shapes[op->inputs[1]]);
        zeroed = pl_cost_native_copy(m, rest) / 2;
    }
    if (native >= 0)
        return native * share + zeroed;
    return pl_cost_op_on(m, op->kind, pl_kernel_route_of(op, p->shapes), device,
                         pl_task_flops(p, task), pl_task_op_bytes(p, task) * share) +
           zeroed;
}

const char *const pl_delay_names[PL_DELAY_COUNT + 1] = {"slept", "spun", "copy", "handoff",
                                                         "next", NULL};

int pl_cost_contention(bool alone, int others_busy, int others_computing)
{
    if (alone)
        return 0;
    return others_computing >= 2 ? 4 : others_computing == 1 ? 3 : others_busy > 0 ? 2 : 1;
}

double pl_cost_delay(const pl_cost_model *m, pl_delay delay, int contention, int others_busy,
                     int others_used)
{
    if (contention < 0)
        contention = 0;
    if (contention >= PL_COST_CONTENTION)
        contention = PL_COST_CONTENTION - 1;
    double seconds = m->paced_delays[delay][contention];
    if (contention == 1 || contention == 2) { /* no kernel holds a core */
        const double *share = m->paced_sharing[delay];
        double busy = contention == 2 ? others_busy : 0, used = others_used;
        seconds += share[PL_SHARING_BUSY] * busy + share[PL_SHARING_USED] * used +
                   share[PL_SHARING_BOTH] * busy * used;
    }
    return seconds > 0 ? seconds : 0;
}

/* The delay of an op `native` seconds long held until `paced`: -1 when not held. */
static int paced_late(double native, double paced)
{
    if (paced <= native)
        return -1;
    return paced - native <= PL_DEVICE_PACE_SPIN_SECONDS ? PL_DELAY_SPUN : PL_DELAY_SLEPT;
}

double pl_cost_paced(const pl_cost_model *m, double native, double paced)
{
    int late = paced_late(native, paced);
    return late < 0 ? native : paced + pl_cost_delay(m, (pl_delay)late, 0, 0, 0);
}

/* A copy over `link`: its memcpy, held until latency + bytes / bandwidth when paced. */
static pl_task_cost copy_parts(const pl_cost_model *m, const pl_link *link, double bytes,
                               double native)
{
    if (link->bytes_per_second <= 0 && link->latency_seconds <= 0)
        return (pl_task_cost){native, native, -1};
    double paced = link->latency_seconds +
                   (link->bytes_per_second > 0 ? bytes / link->bytes_per_second : 0);
    return (pl_task_cost){native, native > paced ? native : paced, PL_DELAY_COPY};
}

/* A transfer between ranks: the message, and a reduce's add after it. */
static double between_ranks(const pl_cost_model *m, const pl_program *p, const pl_cluster *c,
                            const pl_task *task)
{
    double bytes = (double)pl_task_bytes(p, task);
    double add = task->kind == PL_TASK_REDUCE ? pl_cost_native(m, p, c, task) : 0;
    return m->process_seconds + m->process_per_byte * bytes + add;
}

/* A copy or reduce on hardware placer cannot run: latency + bytes / bandwidth over its
 * link, a reduce's add after it on the receiving device, a copy within one device at its
 * memory bandwidth (read and written); no pacing, nothing of this machine. */
static double hardware_transfer(const pl_program *p, const pl_cluster *c, const pl_task *task)
{
    const pl_transfer *tr = &p->transfers[task->transfer];
    const pl_device *to = &c->devices[tr->to];
    double bytes = (double)pl_task_bytes(p, task), seconds = 0;
    if (tr->from != tr->to) {
        const pl_link *link = pl_cluster_link(c, tr->from, tr->to);
        seconds = link->latency_seconds +
                  (link->bytes_per_second > 0 ? bytes / link->bytes_per_second : 0);
    } else if (to->hardware) {
        seconds = 2 * bytes / to->hardware->memory_bytes_per_second;
    }
    if (task->kind == PL_TASK_REDUCE && to->hardware) /* two ranges read, one written */
        seconds += pl_roofline_seconds(to->hardware, PL_OP_ADD, bytes / sizeof(float),
                                       3 * bytes);
    return seconds;
}

pl_task_cost pl_cost_task_parts(const pl_cost_model *m, const pl_program *p,
                                const pl_cluster *c, const pl_task *task)
{
    if (task->kind != PL_TASK_OP && c->simulated) {
        double seconds = hardware_transfer(p, c, task);
        return (pl_task_cost){seconds, seconds, -1};
    }
    if (task->kind != PL_TASK_OP) { /* copies, and reduces held as copies */
        const pl_transfer *tr = &p->transfers[task->transfer];
        static const pl_link within = {0, 0}; /* an all-reduce's packing: a memcpy */
        bool message = c->devices[tr->from].rank != c->devices[tr->to].rank &&
                       (m->process_seconds > 0 || m->process_per_byte > 0);
        return copy_parts(m, tr->from == tr->to ? &within : pl_cluster_link(c, tr->from, tr->to),
                          (double)pl_task_bytes(p, task),
                          message ? between_ranks(m, p, c, task) : pl_cost_native(m, p, c, task));
    }
    double profiled = pl_op_times_seconds(m->op_times, p->graph, task->op,
                                          1.0 / p->micro_batches);
    if (profiled >= 0) /* measured elsewhere, on the device the plan stands for */
        return (pl_task_cost){profiled, profiled, -1};
    double native = pl_cost_native(m, p, c, task);
    const pl_device *device = &c->devices[task->resource];
    if (!(device->flops_per_second > 0))
        return (pl_task_cost){native, native, -1};
    double paced = pl_task_flops(p, task) / device->flops_per_second;
    return (pl_task_cost){native, native > paced ? native : paced, paced_late(native, paced)};
}

double pl_cost_task(const pl_cost_model *m, const pl_program *p, const pl_cluster *c,
                    const pl_task *task)
{
    pl_task_cost t = pl_cost_task_parts(m, p, c, task);
    return t.held + (t.late < 0 ? 0 : pl_cost_delay(m, (pl_delay)t.late, 0, 0, 0));
}

void pl_cost_set_copy_line(pl_cost_model *m, double seconds, double per_byte)
{
    const double far = 1e12; /* beyond any copy */
    m->copy_curve[0] = (pl_copy_point){0, seconds};
    m->copy_curve[1] = (pl_copy_point){far, seconds + per_byte * far};
    m->n_copy_points = 2;
}

/* A copy's time off the curve, as measured. */
static double copy_on_curve(const pl_cost_model *m, double bytes)
{
    const pl_copy_point *c = m->copy_curve;
    int n = m->n_copy_points;
    if (n == 0)
        return 0;
    if (bytes <= c[0].bytes)
        return c[0].seconds;
    if (bytes >= c[n - 1].bytes)
        return c[n - 1].bytes > 0 ? c[n - 1].seconds * bytes / c[n - 1].bytes : c[n - 1].seconds;
    int i = 1;
    while (c[i].bytes < bytes)
        i++;
    return c[i - 1].seconds + (bytes - c[i - 1].bytes) * (c[i].seconds - c[i - 1].seconds) /
                              (c[i].bytes - c[i - 1].bytes);
}

double pl_cost_native_copy(const pl_cost_model *m, double bytes)
{
    return pl_cost_speed(m) * copy_on_curve(m, bytes);
}

double pl_cost_copy(const pl_cost_model *m, const pl_link *link, double bytes)
{
    pl_task_cost t = copy_parts(m, link, bytes, pl_cost_native_copy(m, bytes));
    return t.held + (t.late < 0 ? 0 : pl_cost_delay(m, PL_DELAY_COPY, 0, 0, 0));
}

/* ---- the fit ----------------------------------------------------------------------------- */

/* Feature f of sample i, divided by its time: a relative-error fit. */
static double feature(int f, int i, const double *seconds, const double *flops,
                      const double *bytes)
{
    double v = f == 0 ? 1 : f == 1 ? flops[i] : bytes[i];
    return v / seconds[i];
}

pl_op_cost pl_cost_fit(const double *seconds, const double *flops, const double *bytes, int n)
{
    pl_op_cost best = {0};
    double best_error = DBL_MAX;
    double scale[3] = {0};
    for (int i = 0; i < n; i++)
        for (int f = 0; f < 3; f++)
            scale[f] += feature(f, i, seconds, flops, bytes) *
                        feature(f, i, seconds, flops, bytes) / n;
    for (int f = 0; f < 3; f++)
        scale[f] = scale[f] > 0 ? sqrt(scale[f]) : 1;
    /* Every subset of the three features; the best whose coefficients are all >= 0. */
    for (int subset = 1; subset < 8; subset++) {
        int use[3], k = 0;
        for (int f = 0; f < 3; f++)
            if (subset & (1 << f))
                use[k++] = f;
        double a[3 * 3] = {0}, b[3] = {0}, x[3] = {0};
        for (int i = 0; i < n; i++)
            for (int r = 0; r < k; r++) {
                double fr = feature(use[r], i, seconds, flops, bytes) / scale[use[r]];
                b[r] += fr;
                for (int c = 0; c < k; c++)
                    a[r * k + c] += fr * feature(use[c], i, seconds, flops, bytes) / scale[use[c]];
            }
        if (!pl_solve_linear(a, b, k, x))
            continue;
        double coef[3] = {0};
        bool ok = true;
        for (int r = 0; r < k; r++) {
            coef[use[r]] = x[r] / scale[use[r]];
            ok = ok && coef[use[r]] >= 0;
        }
        if (!ok)
            continue;
        double error = 0;
        for (int i = 0; i < n; i++) {
            double pred = coef[0] + coef[1] * flops[i] + coef[2] * bytes[i];
            error += (pred / seconds[i] - 1) * (pred / seconds[i] - 1);
        }
        if (error < best_error) {
            best_error = error;
            best = (pl_op_cost){coef[0], coef[1], coef[2], n, 0, 0, 0};
        }
    }
    for (int i = 0; i < n; i++) {
        double fitted = best.seconds + best.per_flop * flops[i] + best.per_byte * bytes[i];
        best.fastest = fmax(best.fastest, flops[i] / seconds[i]);
        if (fitted > 0 && (best.least == 0 || seconds[i] / fitted < best.least))
            best.least = seconds[i] / fitted;
    }
    return best;
}

/* Samples by kind, then route. */
static int compare_samples(const void *a, const void *b)
{
    const pl_op_sample *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return (x->route > y->route) - (x->route < y->route);
}

/* Fits s[0 .. n) into *out, its `together` kept; below two samples *out stays. */
static bool fit_into(const pl_op_sample *s, int n, pl_op_cost *out)
{
    if (n < 2)
        return true;
    double *v = malloc(3 * (size_t)n * sizeof *v);
    if (!v)
        return false;
    for (int i = 0; i < n; i++) {
        v[i] = s[i].seconds;
        v[n + i] = s[i].flops;
        v[2 * n + i] = s[i].bytes;
    }
    double together = out->together;
    *out = pl_cost_fit(v, v + n, v + 2 * n, n);
    out->together = together;
    free(v);
    return true;
}

/* The model's fit of a route, added when it has none; NULL when the list is full. */
static pl_route_fit *route_fit(pl_cost_model *m, int threads, pl_op_kind kind, int route)
{
    for (int i = 0; i < m->n_routes; i++)
        if (m->routes[i].threads == threads && m->routes[i].kind == kind &&
            m->routes[i].route == route)
            return &m->routes[i];
    if (m->n_routes == PL_COST_MAX_ROUTE_FITS)
        return NULL;
    m->routes[m->n_routes] = (pl_route_fit){.threads = threads, .kind = kind, .route = route};
    return &m->routes[m->n_routes++];
}

pl_status pl_cost_fit_samples(pl_cost_model *m, int threads, const pl_op_sample *samples, int n,
                              pl_error *err)
{
    pl_op_sample *s = malloc(((size_t)n + 1) * sizeof *s);
    if (!s || !fit_into(samples, n, &m->ops[threads][PL_OP_COUNT])) {
        free(s);
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    }
    memcpy(s, samples, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, compare_samples);
    pl_status status = PL_OK;
    for (int a = 0, b; status == PL_OK && a < n; a = b) {
        for (b = a; b < n && s[b].kind == s[a].kind; b++)
            ;
        if (!fit_into(s + a, b - a, &m->ops[threads][s[a].kind]))
            status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        if (s[a].route == s[b - 1].route) /* one route: the kind's fit is its own */
            continue;
        for (int r = a, e; status == PL_OK && r < b; r = e) {
            for (e = r; e < b && s[e].route == s[r].route; e++)
                ;
            if (s[r].route < 0 || e - r < PL_COST_ROUTE_MIN_SAMPLES)
                continue;
            pl_route_fit *fit = route_fit(m, threads, s[r].kind, s[r].route);
            if (!fit)
                status = pl_error_set(err, PL_EINPUT, NULL, "more than %d kernel routes' fits",
                                      PL_COST_MAX_ROUTE_FITS);
            else if (!fit_into(s + r, e - r, &fit->cost))
                status = pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        }
    }
    free(s);
    return status;
}

/* ---- profile files ----------------------------------------------------------------------- */

static const char *const PROFILE_FORMAT = "placer-cost-profile";

/* A time as ISO 8601 in UTC, "2026-11-24T19:05:41Z" ("" when out of range). */
static void utc_text(long long seconds, char *buf, size_t cap)
{
    time_t t = (time_t)seconds;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
        snprintf(buf, cap, "%s", "");
}

static json_t *write_calibration(const pl_calibration_record *c)
{
    char utc[32];
    utc_text(c->measured_at, utc, sizeof utc);
    return json_pack("{s:I, s:s, s:f, s:i, s:i, s:f, s:f, s:f, s:f, s:f}", "measured_at",
                     (json_int_t)c->measured_at, "measured_at_utc", utc, "seconds", c->seconds,
                     "attempts", c->attempts, "ops_compared", c->compared, "spread_median",
                     c->spread_median, "spread_p90", c->spread_p90, "others_share",
                     c->others_share, "spread_threshold", c->spread_threshold,
                     "others_threshold", c->others_threshold);
}

pl_status pl_cost_model_write(const pl_cost_model *m, const char *path, pl_error *err)
{
    json_t *ops = json_array();
    for (int t = 1; t <= PL_COST_MAX_THREADS; t++)
        for (int k = 0; k <= PL_OP_COUNT; k++) {
            const pl_op_cost *c = &m->ops[t][k];
            if (c->samples == 0)
                continue;
            json_array_append_new(ops, json_pack("{s:s, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:f}",
                                                 "kind",
                                                 k == PL_OP_COUNT ? "*" : pl_op_info_of(k)->name,
                                                 "threads", t, "seconds", c->seconds,
                                                 "per_flop", c->per_flop, "per_byte",
                                                 c->per_byte, "samples", c->samples,
                                                 "together", c->together, "fastest_flop_rate",
                                                 c->fastest, "least_over_fit", c->least));
        }
    for (int i = 0; i < m->n_routes; i++) {
        const pl_route_fit *r = &m->routes[i];
        const pl_op_cost *c = &r->cost;
        json_array_append_new(
            ops, json_pack("{s:s, s:s, s:i, s:f, s:f, s:f, s:i, s:f, s:f, s:f}", "kind",
                           pl_op_info_of(r->kind)->name, "route", pl_kernel_route_names[r->route],
                           "threads", r->threads, "seconds", c->seconds, "per_flop",
                           c->per_flop, "per_byte", c->per_byte, "samples", c->samples,
                           "together", c->together, "fastest_flop_rate", c->fastest,
                           "least_over_fit", c->least));
    }
    json_t *measured = json_array();
    for (int i = 0; i < m->n_measured; i++) {
        char signature[17];
        snprintf(signature, sizeof signature, "%016llx",
                 (unsigned long long)m->measured[i].signature);
        json_array_append_new(measured, json_pack("[s, f]", signature, m->measured[i].seconds));
    }
    json_t *curve = json_array();
    for (int i = 0; i < m->n_copy_points; i++)
        json_array_append_new(curve, json_pack("[f, f]", m->copy_curve[i].bytes,
                                               m->copy_curve[i].seconds));
    json_t *delays = json_object();
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        json_t *levels = json_array();
        for (int k = 0; k < PL_COST_CONTENTION; k++)
            json_array_append_new(levels, json_real(m->paced_delays[d][k]));
        json_object_set_new(delays, pl_delay_names[d], levels);
    }
    json_t *sharing = json_object();
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        json_t *terms = json_array();
        for (int k = 0; k < PL_SHARING_TERMS; k++)
            json_array_append_new(terms, json_real(m->paced_sharing[d][k]));
        json_object_set_new(sharing, pl_delay_names[d], terms);
    }
    json_object_set_new(delays, "sharing", sharing);
    json_object_set_new(delays, "signal", json_real(m->paced_signal_seconds));
    json_object_set_new(delays, "finish", json_real(m->paced_finish_seconds));
    json_t *processes = m->process_seconds > 0 || m->process_per_byte > 0
                            ? json_pack("{s:f, s:f}", "seconds", m->process_seconds,
                                        "per_byte", m->process_per_byte)
                            : json_null();
    json_t *calibration = write_calibration(&m->calibration);
    json_t *root = json_pack("{s:s, s:i, s:s, s:o, s:f, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:f}",
                             "format", PROFILE_FORMAT, "version", PL_COST_FORMAT_VERSION,
                             "machine", m->machine, "copy_curve", curve, "handoff_seconds",
                             m->handoff_seconds, "poll_seconds", m->poll_seconds,
                             "wake_seconds", m->wake_seconds, "task_seconds", m->task_seconds,
                             "paced_delays", delays, "ops", ops,
                             "measured", measured, "calibration", calibration,
                             "processes", processes, "remote_inputs_seconds", m->remote_seconds);
    if (!root)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    pl_status status = pl_json_write_file(path, root, JSON_INDENT(1) | JSON_REAL_PRECISION(9),
                                          err);
    json_decref(root);
    return status;
}

/* A route's name (kernels.h), or -1. */
static int route_from_name(const char *name)
{
    for (int i = 0; i < PL_KERNEL_ROUTES; i++)
        if (strcmp(pl_kernel_route_names[i], name) == 0)
            return i;
    return -1;
}

/* An op kind's fit, or with "route" one of its kernel routes'. */
static bool read_op(pl_json_reader *r, const json_t *entry, pl_cost_model *m)
{
    static const char *const fields[] = {"kind", "route", "threads", "seconds", "per_flop",
                                         "per_byte", "samples", "together",
                                         "fastest_flop_rate", "least_over_fit", NULL};
    const char *kind_name, *route_name = NULL;
    int64_t threads, samples;
    pl_op_cost c = {0};
    if (!pl_json_expect_object(r, entry, fields) ||
        !pl_json_string(r, entry, "kind", true, &kind_name) ||
        !pl_json_integer(r, entry, "threads", true, 1, PL_COST_MAX_THREADS, &threads) ||
        !pl_json_number(r, entry, "seconds", true, 0, 1e6, &c.seconds) ||
        !pl_json_number(r, entry, "per_flop", true, 0, 1, &c.per_flop) ||
        !pl_json_number(r, entry, "per_byte", true, 0, 1, &c.per_byte) ||
        !pl_json_integer(r, entry, "samples", true, 1, INT32_MAX, &samples) ||
        !pl_json_number(r, entry, "together", true, 0, 100, &c.together) ||
        !pl_json_number(r, entry, "fastest_flop_rate", false, 0, 1e18, &c.fastest) ||
        !pl_json_number(r, entry, "least_over_fit", false, 0, 1e6, &c.least))
        return false;
    if (c.together > 0 && c.together < 1) {
        pl_json_push_key(r, "together");
        return pl_json_fail(r, "%g: an op is never faster beside another (0: not measured, "
                               "else 1 or more)", c.together);
    }
    pl_op_kind kind = strcmp(kind_name, "*") == 0 ? PL_OP_COUNT : pl_op_from_name(kind_name);
    if (kind == PL_OP_COUNT && strcmp(kind_name, "*") != 0) {
        pl_json_push_key(r, "kind");
        return pl_json_fail(r, "unknown op kind \"%s\"", kind_name);
    }
    c.samples = (int)samples;
    if (!pl_json_string(r, entry, "route", false, &route_name))
        return false;
    if (route_name) {
        int route = route_from_name(route_name);
        pl_route_fit *fit = NULL;
        pl_json_push_key(r, "route");
        if (kind == PL_OP_COUNT)
            return pl_json_fail(r, "a route belongs to one op kind, not to \"*\"");
        if (route < 0) {
            char known[256] = "";
            for (int i = 0; i < PL_KERNEL_ROUTES; i++)
                snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s",
                         i ? ", " : "", pl_kernel_route_names[i]);
            return pl_json_fail(r, "unknown kernel route \"%s\" (routes: %s)", route_name,
                                known);
        }
        for (int i = 0; i < m->n_routes; i++)
            if (m->routes[i].threads == threads && m->routes[i].kind == kind &&
                m->routes[i].route == route)
                return pl_json_fail(r, "route \"%s\" of op kind \"%s\" at %d threads is "
                                    "given twice", route_name, kind_name, (int)threads);
        if (!(fit = route_fit(m, (int)threads, kind, route)))
            return pl_json_fail(r, "more than %d kernel routes' fits", PL_COST_MAX_ROUTE_FITS);
        fit->cost = c;
        return true;
    }
    if (m->ops[threads][kind].samples != 0)
        return pl_json_fail(r, "op kind \"%s\" at %d threads is given twice", kind_name,
                            (int)threads);
    m->ops[threads][kind] = c;
    return true;
}

/* [[bytes, seconds], ...]: bytes ascending, seconds not falling. Each rule has its own
 * message, so that a hand edit learns which one it broke. */
static bool read_copy_curve(pl_json_reader *r, const json_t *list, pl_cost_model *m)
{
    size_t n = json_array_size(list);
    size_t back = pl_json_push_key(r, "copy_curve"), here = r->path_len;
    if (n > PL_COST_COPY_POINTS)
        return pl_json_fail(r, "at most %d points", PL_COST_COPY_POINTS);
    for (size_t i = 0; i < n; i++) {
        const json_t *entry = json_array_get(list, i);
        const json_t *bytes = json_array_get(entry, 0), *seconds = json_array_get(entry, 1);
        pl_json_push_index(r, i);
        if (!json_is_array(entry) || json_array_size(entry) != 2 || !json_is_number(bytes) ||
            !json_is_number(seconds))
            return pl_json_fail(r, "expected [bytes, seconds], two numbers");
        pl_copy_point point = {json_number_value(bytes), json_number_value(seconds)};
        if (point.bytes < 0 || point.seconds < 0)
            return pl_json_fail(r, "[%g, %g]: bytes and seconds must not be negative",
                                point.bytes, point.seconds);
        if (i > 0 && point.bytes <= m->copy_curve[i - 1].bytes)
            return pl_json_fail(r, "%g bytes after %g: bytes must increase", point.bytes,
                                m->copy_curve[i - 1].bytes);
        if (i > 0 && point.seconds < m->copy_curve[i - 1].seconds)
            return pl_json_fail(r, "%g seconds for %g bytes, less than %g for %g: seconds must "
                                "not decrease", point.seconds, point.bytes,
                                m->copy_curve[i - 1].seconds, m->copy_curve[i - 1].bytes);
        m->copy_curve[i] = point;
        m->n_copy_points = (int)i + 1;
        pl_json_pop(r, here);
    }
    pl_json_pop(r, back);
    return true;
}

/* `count` numbers in [lo, hi] into out. */
static bool read_numbers(pl_json_reader *r, const json_t *array, int count, double lo, double hi,
                         const char *what, double *out)
{
    size_t at = r->path_len;
    if (json_array_size(array) != (size_t)count)
        return pl_json_fail(r, "expected %d numbers (%s), got %zu", count, what,
                            json_array_size(array));
    for (int k = 0; k < count; k++) {
        const json_t *value = json_array_get(array, (size_t)k);
        pl_json_push_index(r, (size_t)k);
        if (!json_is_number(value) || !(json_number_value(value) >= lo &&
                                        json_number_value(value) <= hi))
            return pl_json_fail(r, "expected seconds in [%g, %g]", lo, hi);
        out[k] = json_number_value(value);
        pl_json_pop(r, at);
    }
    return true;
}

/* {"slept": [seconds per thread busy, per thread used, per both], "spun": ...}. */
static bool read_sharing(pl_json_reader *r, const json_t *object, pl_cost_model *m)
{
    json_t *sharing;
    if (!pl_json_member(r, object, "sharing", JSON_OBJECT, true, &sharing))
        return false;
    size_t back = pl_json_push_key(r, "sharing"), at = r->path_len;
    if (!pl_json_expect_object(r, sharing, pl_delay_names))
        return false;
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        json_t *terms;
        if (!pl_json_member(r, sharing, pl_delay_names[d], JSON_ARRAY, true, &terms))
            return false;
        pl_json_push_key(r, pl_delay_names[d]);
        if (!read_numbers(r, terms, PL_SHARING_TERMS, -1, 1,
                          "seconds per other thread busy, used, and both", m->paced_sharing[d]))
            return false;
        pl_json_pop(r, at);
    }
    pl_json_pop(r, back);
    return true;
}

/* {"slept": [seconds at each contention level, PL_COST_CONTENTION of them], "spun": ...,
 * "sharing": {...}, "signal": seconds, "finish": seconds}. */
static bool read_delays(pl_json_reader *r, const json_t *object, pl_cost_model *m)
{
    static const char *const fields[PL_DELAY_COUNT + 4] = {"slept", "spun", "copy", "handoff",
                                                           "next", "sharing", "signal",
                                                           "finish", NULL};
    size_t back = pl_json_push_key(r, "paced_delays"), at_delays = r->path_len;
    if (!pl_json_expect_object(r, object, fields) || !read_sharing(r, object, m) ||
        !pl_json_number(r, object, "signal", true, 0, 1, &m->paced_signal_seconds) ||
        !pl_json_number(r, object, "finish", true, 0, 1, &m->paced_finish_seconds))
        return false;
    for (int d = 0; d < PL_DELAY_COUNT; d++) {
        json_t *levels;
        if (!pl_json_member(r, object, fields[d], JSON_ARRAY, true, &levels))
            return false;
        pl_json_push_key(r, fields[d]);
        if (!read_numbers(r, levels, PL_COST_CONTENTION, 0, 1, "seconds at each contention "
                          "level: alone, nothing else busy, others busy, one computing, more",
                          m->paced_delays[d]))
            return false;
        pl_json_pop(r, at_delays);
    }
    pl_json_pop(r, back);
    return true;
}

/* [["0123456789abcdef", seconds], ...], sorted by signature, each once. */
static bool read_measured(pl_json_reader *r, const json_t *list, pl_cost_model *m)
{
    size_t n = json_array_size(list);
    if (!(m->measured = malloc((n + 1) * sizeof *m->measured)))
        return pl_json_fail(r, "out of memory");
    size_t back = pl_json_push_key(r, "measured"), here = r->path_len;
    for (size_t i = 0; i < n; i++) {
        const json_t *entry = json_array_get(list, i);
        const char *hex = json_string_value(json_array_get(entry, 0));
        const json_t *seconds = json_array_get(entry, 1);
        unsigned long long signature = hex ? strtoull(hex, NULL, 16) : 0;
        pl_json_push_index(r, i);
        if (!json_is_array(entry) || json_array_size(entry) != 2 || !hex ||
            !json_is_number(seconds))
            return pl_json_fail(r, "expected [\"16 hex digits\", seconds]");
        if (strlen(hex) != 16 || strspn(hex, "0123456789abcdefABCDEF") != 16) {
            pl_json_push_index(r, 0);
            return pl_json_fail(r, "the signature \"%s\" is not 16 hex digits", hex);
        }
        if (i > 0 && signature <= m->measured[i - 1].signature) {
            pl_json_push_index(r, 0);
            return pl_json_fail(r, "signature %s after %016llx: signatures must increase "
                                "(each once)", hex,
                                (unsigned long long)m->measured[i - 1].signature);
        }
        if (!(json_number_value(seconds) >= 0 && json_number_value(seconds) <= 1e6)) {
            pl_json_push_index(r, 1);
            return pl_json_fail(r, "%g seconds is out of range [0, 1e+06]",
                                json_number_value(seconds));
        }
        m->measured[i] = (pl_op_time){signature, json_number_value(seconds)};
        m->n_measured = (int)i + 1;
        pl_json_pop(r, here);
    }
    pl_json_pop(r, back);
    return true;
}

/* The latest time ISO 8601's four-digit years write: 9999-12-31T23:59:59Z. */
#define LAST_TIME 253402300799LL

/* {"measured_at": seconds since the epoch, "measured_at_utc": the same in ISO 8601, ...}. */
static bool read_calibration(pl_json_reader *r, const json_t *object, pl_calibration_record *c)
{
    static const char *const fields[] = {"measured_at", "measured_at_utc", "seconds", "attempts",
                                         "ops_compared", "spread_median", "spread_p90",
                                         "others_share", "spread_threshold", "others_threshold",
                                         NULL};
    int64_t at, attempts, compared;
    const char *utc;
    char expected[32];
    size_t back = pl_json_push_key(r, "calibration");
    if (!pl_json_expect_object(r, object, fields) ||
        !pl_json_integer(r, object, "measured_at", true, 0, LAST_TIME, &at) ||
        !pl_json_string(r, object, "measured_at_utc", true, &utc) ||
        !pl_json_number(r, object, "seconds", true, 0, 1e6, &c->seconds) ||
        !pl_json_integer(r, object, "attempts", true, 0, 1000, &attempts) ||
        !pl_json_integer(r, object, "ops_compared", true, 0, INT32_MAX, &compared) ||
        !pl_json_number(r, object, "spread_median", true, 0, 1e6, &c->spread_median) ||
        !pl_json_number(r, object, "spread_p90", true, 0, 1e6, &c->spread_p90) ||
        !pl_json_number(r, object, "others_share", true, 0, 1, &c->others_share) ||
        !pl_json_number(r, object, "spread_threshold", true, 0, 1e6, &c->spread_threshold) ||
        !pl_json_number(r, object, "others_threshold", true, 0, 1, &c->others_threshold))
        return false;
    utc_text(at, expected, sizeof expected);
    if (strcmp(utc, expected) != 0) {
        pl_json_push_key(r, "measured_at_utc");
        return pl_json_fail(r, "\"%s\" is not measured_at (%lld) in UTC, \"%s\"", utc,
                            (long long)at, expected);
    }
    if (c->spread_p90 < c->spread_median) {
        pl_json_push_key(r, "spread_p90");
        return pl_json_fail(r, "%g is below spread_median (%g): a 90th percentile is not below "
                            "the median", c->spread_p90, c->spread_median);
    }
    c->measured_at = at;
    c->attempts = (int)attempts;
    c->compared = (int)compared;
    pl_json_pop(r, back);
    return true;
}

pl_status pl_cost_model_read(pl_cost_model *m, const char *path, pl_error *err)
{
    static const char *const fields[] = {"format", "version", "machine", "copy_curve",
                                         "handoff_seconds", "poll_seconds",
                                         "wake_seconds", "task_seconds",
                                         "paced_delays",
                                         "ops", "measured", "calibration", "processes",
                                         "remote_inputs_seconds", NULL};
    pl_error_init(err, path);
    json_t *root = pl_json_parse_file(path, (size_t)16 << 20, err, NULL);
    if (!root)
        return err ? err->status : PL_EINPUT;
    pl_json_reader r;
    pl_json_reader_init(&r, err);
    memset(m, 0, sizeof *m);
    const char *machine;
    json_t *ops, *measured, *curve, *delays;
    bool ok = pl_json_check_header(&r, root, "cost profile", PROFILE_FORMAT,
                                   PL_COST_FORMAT_VERSION) &&
              pl_json_expect_object(&r, root, fields) &&
              pl_json_string(&r, root, "machine", true, &machine) &&
              pl_json_member(&r, root, "copy_curve", JSON_ARRAY, true, &curve) &&
              read_copy_curve(&r, curve, m) &&
              pl_json_number(&r, root, "handoff_seconds", true, 0, 1, &m->handoff_seconds) &&
              pl_json_number(&r, root, "poll_seconds", true, 0, 1, &m->poll_seconds) &&
              pl_json_number(&r, root, "wake_seconds", true, 0, 1, &m->wake_seconds) &&
              pl_json_number(&r, root, "task_seconds", true, 0, 1, &m->task_seconds) &&
              pl_json_member(&r, root, "paced_delays", JSON_OBJECT, true, &delays) &&
              read_delays(&r, delays, m) &&
              pl_json_member(&r, root, "ops", JSON_ARRAY, true, &ops) &&
              pl_json_member(&r, root, "measured", JSON_ARRAY, true, &measured);
    if (ok)
        snprintf(m->machine, sizeof m->machine, "%s", machine);
    for (size_t i = 0; ok && i < json_array_size(ops); i++) {
        size_t back = pl_json_push_key(&r, "ops");
        pl_json_push_index(&r, i);
        ok = read_op(&r, json_array_get(ops, i), m);
        pl_json_pop(&r, back);
    }
    if (ok)
        ok = read_measured(&r, measured, m);
    json_t *calibration;
    if (ok)
        ok = pl_json_member(&r, root, "calibration", JSON_OBJECT, true, &calibration) &&
             read_calibration(&r, calibration, &m->calibration);
    json_t *processes = json_object_get(root, "processes");
    if (ok && processes && !json_is_null(processes)) {
        static const char *const process_fields[] = {"seconds", "per_byte", NULL};
        size_t back = pl_json_push_key(&r, "processes");
        ok = pl_json_expect_object(&r, processes, process_fields) &&
             pl_json_number(&r, processes, "seconds", true, 0, 1, &m->process_seconds) &&
             pl_json_number(&r, processes, "per_byte", true, 0, 1, &m->process_per_byte);
        pl_json_pop(&r, back);
    }
    /* optional: a model made by hand may leave it out */
    ok = ok && pl_json_number(&r, root, "remote_inputs_seconds", false, 0, 1, &m->remote_seconds);
    json_decref(root);
    if (!ok)
        pl_cost_model_clear(m);
    return ok ? PL_OK : PL_EINPUT;
}
