/* A step's timeline as SVG (timeline.h): rows of bars written with fprintf, no library.
 *
 * The picture, top down: the heading (title and step time), a line of counts, the colour
 * key, then one row per device and per link, the time axis under them. Left of the rows
 * their names, right of them how busy each was. Widths of text are estimates (a sans-serif
 * character is taken as 0.6 of the font size, a little more than most are), which decide
 * how wide the name column is and whether a bar is wide enough to carry its name. */
#include "timeline.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "units.h"

enum {
    ROW_HEIGHT = 18,
    BAR_HEIGHT = 14,
    TITLE_Y = 24,
    SUBTITLE_Y = 43,
    KEY_Y = 54,       /* top of the key's swatches */
    ROWS_Y = 78,      /* top of the first row */
    LABEL_FONT = 12,
    BAR_FONT = 10,
    MIN_LABEL_WIDTH = 48,
    MAX_LABEL_WIDTH = 260, /* longer names are cut, with an ellipsis; the tooltip has them */
    BUSY_WIDTH = 84,       /* right of the rows: "busy 100%" */
    MIN_PLOT_WIDTH = 960,
    MAX_PLOT_WIDTH = 4800,
    PIXELS_PER_TASK = 4,   /* of the busiest row, between the two bounds above */
    TICK_SPACING = 90,     /* pixels between ticks, at least */
    AXIS_HEIGHT = 46,
};
static const double MIN_BAR_WIDTH = 0.5; /* a task of no time still shows */
static const double CHAR_WIDTH = 0.6;    /* of the font size */

/* Phase colours, dark and light (odd micro-batches); white text reads on the dark ones. */
typedef enum kind { KIND_FORWARD, KIND_BACKWARD, KIND_UPDATE, KIND_COPY, N_KINDS } kind;
static const struct {
    const char *name, *dark, *light;
} kinds[N_KINDS] = {
    {"forward", "#3b6fb6", "#8fb3e3"},
    {"backward", "#d9702a", "#f3b581"},
    {"update", "#3a8f47", "#8fcf98"},
    {"copy", "#7b5aa6", "#bca6dc"},
};

typedef struct drawing {
    const pl_program *program;
    const pl_cluster *cluster;
    const double *starts, *ends;
    FILE *out;
    int n_rows;            /* devices, then links */
    double *busy;          /* per row: its tasks' summed time */
    int *tasks;            /* per row: how many */
    int counts[N_KINDS];
    double step_seconds;   /* as the caller gave it, or the last task's end */
    double axis_seconds;   /* the axis' end: a whole number of ticks */
    double tick_seconds;
    int n_ticks;
    double label_width, plot_x, plot_width;
} drawing;

/* ---- text ------------------------------------------------------------------------------ */

/* The code point of the UTF-8 sequence at s and its length, or 0 when s does not start a
 * well-formed one (overlong forms, surrogates and values past U+10FFFF included). */
static int decode_utf8(const unsigned char *s, uint32_t *code)
{
    int length = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2
                 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3 : s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : 0;
    if (length == 0)
        return 0;
    uint32_t c = length == 1 ? s[0] : s[0] & (0x7f >> length);
    for (int i = 1; i < length; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[i] & 0x3f);
    }
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[length] || c > 0x10ffff || (c >= 0xd800 && c < 0xe000))
        return 0;
    *code = c;
    return length;
}

/* Whether a code point may stand in one line of text: XML 1.0's characters, without the
 * C0 and C1 controls (tab and newline included) and the non-characters U+FFFE, U+FFFF. */
static int printable(uint32_t c)
{
    return c >= 0x20 && c != 0x7f && !(c >= 0x80 && c < 0xa0) && c != 0xfffe && c != 0xffff;
}

/* Characters of text, an ill-formed byte counting as one (it is written as one). */
static size_t text_length(const char *text)
{
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; n++) {
        uint32_t c;
        int length = decode_utf8(s, &c);
        s += length ? length : 1;
    }
    return n;
}

/* Writes text as XML character data or attribute value: & < > " ' escaped, anything
 * unprintable or ill-formed as U+FFFD. At most `max_chars` characters when above 0, the
 * last of them an ellipsis when the text is longer. */
static void write_text(FILE *out, const char *text, size_t max_chars)
{
    size_t total = max_chars ? text_length(text) : 0, written = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s; written++) {
        if (max_chars && total > max_chars && written + 1 == max_chars) {
            fputs("…", out);
            return;
        }
        uint32_t c;
        int length = decode_utf8(s, &c);
        if (length == 0 || !printable(c))
            fputs("\xef\xbf\xbd", out); /* U+FFFD */
        else if (c == '&')
            fputs("&amp;", out);
        else if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c == '\'')
            fputs("&apos;", out);
        else
            fwrite(s, 1, (size_t)length, out);
        s += length ? length : 1;
    }
}

static double text_width(size_t chars, int font)
{
    return (double)chars * CHAR_WIDTH * font;
}

/* "12.345 ms" or, under a millisecond, "45.6 µs". */
static const char *format_duration(double seconds, char *buf, size_t cap)
{
    if (seconds >= 1e-3)
        snprintf(buf, cap, "%.3f ms", 1e3 * seconds);
    else
        snprintf(buf, cap, "%.1f µs", 1e6 * seconds);
    return buf;
}

/* ---- what is drawn ------------------------------------------------------------------- */

static kind task_kind(const pl_program *p, const pl_task *task)
{
    if (task->kind != PL_TASK_OP) /* copies, and the all-reduce's sums */
        return KIND_COPY;
    pl_phase phase = p->graph->ops[task->op].phase;
    return phase == PL_PHASE_FORWARD ? KIND_FORWARD
           : phase == PL_PHASE_BACKWARD ? KIND_BACKWARD : KIND_UPDATE;
}

/* The model's op, or the tensor a copy carries. */
static const char *task_subject(const pl_program *p, const pl_task *task)
{
    const pl_graph *g = p->graph;
    if (task->kind == PL_TASK_OP)
        return g->ops[task->op].name;
    return g->tensors[p->transfers[task->transfer].tensor].name;
}

/* The row's name: a device's, or a link's "from → to" or a port's "from → node port"
 * (unescaped, in buf). */
static const char *row_name(const drawing *d, int row, char *buf, size_t cap)
{
    const pl_cluster *c = d->cluster;
    if (row < c->n_devices)
        return c->devices[row].name;
    const pl_link_use *link = &d->program->links[row - c->n_devices];
    snprintf(buf, cap, "%s → %s", c->devices[link->from].name,
             link->port != PL_PORT_NONE ? pl_port_names[link->port] : c->devices[link->to].name);
    return buf;
}

static pl_status check_times(const pl_program *p, const double *starts, const double *ends,
                             pl_error *err)
{
    for (int i = 0; i < p->n_tasks; i++) {
        if (isfinite(starts[i]) && isfinite(ends[i]) && starts[i] >= 0 && ends[i] >= starts[i])
            continue;
        char name[600];
        pl_task_name(p, &p->tasks[i], name, sizeof name);
        return pl_error_set(err, PL_EINPUT, NULL,
                            "timeline: task %d (%s) runs from %g s to %g s: times must be "
                            "finite, from 0, and end no earlier than they start",
                            i, name, starts[i], ends[i]);
    }
    return PL_OK;
}

/* Ticks 1, 2 or 5 times a power of ten apart, at least TICK_SPACING pixels; the axis ends
 * on the first tick at or past the last time drawn. */
static void choose_axis(drawing *d, double last)
{
    if (!(last > 0))
        last = 1e-3;
    double most = d->plot_width / TICK_SPACING;
    double raw = last / (most > 1 ? most : 1);
    double power = pow(10, floor(log10(raw)));
    static const double steps[] = {1, 2, 5, 10};
    d->tick_seconds = 10 * power;
    for (int i = 0; i < 4; i++)
        if (steps[i] * power >= raw) {
            d->tick_seconds = steps[i] * power;
            break;
        }
    d->n_ticks = (int)ceil(last / d->tick_seconds - 1e-9);
    if (d->n_ticks < 1)
        d->n_ticks = 1;
    d->axis_seconds = d->n_ticks * d->tick_seconds;
}

/* Counts, busy times, the name column's and the plot's widths, the axis. */
static pl_status measure(drawing *d, double step_seconds)
{
    const pl_program *p = d->program;
    d->n_rows = p->n_devices + p->n_links;
    d->busy = calloc((size_t)d->n_rows + 1, sizeof *d->busy);
    d->tasks = calloc((size_t)d->n_rows + 1, sizeof *d->tasks);
    if (!d->busy || !d->tasks)
        return PL_ENOMEM;
    double last = 0;
    int busiest = 0;
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        d->busy[task->resource] += d->ends[i] - d->starts[i];
        if (++d->tasks[task->resource] > busiest)
            busiest = d->tasks[task->resource];
        d->counts[task_kind(p, task)]++;
        if (d->ends[i] > last)
            last = d->ends[i];
    }
    d->step_seconds = isfinite(step_seconds) && step_seconds > 0 ? step_seconds : last;
    size_t longest = 0;
    for (int row = 0; row < d->n_rows; row++) {
        char buf[600];
        size_t length = text_length(row_name(d, row, buf, sizeof buf));
        if (length > longest)
            longest = length;
    }
    d->label_width = text_width(longest, LABEL_FONT) + 16;
    if (d->label_width < MIN_LABEL_WIDTH)
        d->label_width = MIN_LABEL_WIDTH;
    if (d->label_width > MAX_LABEL_WIDTH)
        d->label_width = MAX_LABEL_WIDTH;
    d->plot_x = d->label_width;
    double width = (double)busiest * PIXELS_PER_TASK;
    d->plot_width = width < MIN_PLOT_WIDTH ? MIN_PLOT_WIDTH
                    : width > MAX_PLOT_WIDTH ? MAX_PLOT_WIDTH : width;
    choose_axis(d, last > d->step_seconds ? last : d->step_seconds);
    return PL_OK;
}

static double x_of(const drawing *d, double seconds)
{
    return d->plot_x + seconds / d->axis_seconds * d->plot_width;
}

static double row_y(int row)
{
    return ROWS_Y + (double)row * ROW_HEIGHT;
}

/* ---- writing ------------------------------------------------------------------------- */

static void write_heading(const drawing *d, const char *title, double width, double height)
{
    FILE *out = d->out;
    char step[32]; /* in the axis' unit */
    snprintf(step, sizeof step, "%.3f ms", 1e3 * d->step_seconds);
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
            "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
            "\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
            "font-size=\"%d\">\n<title>", width, height, width, height, LABEL_FONT);
    write_text(out, title, 0);
    fprintf(out, " — step %s</title>\n", step);
    fprintf(out, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" font-size=\"16\" font-weight=\"bold\">",
            d->plot_x, TITLE_Y);
    write_text(out, title, 0);
    fprintf(out, " — step %s</text>\n", step);
    const pl_program *p = d->program;
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" fill=\"#444444\">%d tasks on %d device%s and %d "
            "link%s: %d forward, %d backward, %d update, %d cop%s; %d micro-batch%s, %s"
            "</text>\n", d->plot_x, SUBTITLE_Y, p->n_tasks, p->n_devices,
            p->n_devices == 1 ? "" : "s", p->n_links, p->n_links == 1 ? "" : "s",
            d->counts[KIND_FORWARD], d->counts[KIND_BACKWARD], d->counts[KIND_UPDATE],
            d->counts[KIND_COPY], d->counts[KIND_COPY] == 1 ? "y" : "ies", p->micro_batches,
            p->micro_batches == 1 ? "" : "es",
            p->schedule == PL_SCHEDULE_1F1B ? "1F1B" : "GPipe");
}

/* The colours, the light shade, the gaps and the step's end, in one line. */
static void write_key(const drawing *d)
{
    FILE *out = d->out;
    double x = d->plot_x;
    fprintf(out, "<g id=\"key\">\n");
    for (int k = 0; k < N_KINDS; k++) {
        fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                "<text x=\"%.1f\" y=\"%d\">%s</text>\n", x, KEY_Y, kinds[k].dark, x + 16,
                KEY_Y + 10, kinds[k].name);
        x += 16 + text_width(strlen(kinds[k].name), LABEL_FONT) + 14;
    }
    fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"6\" height=\"12\" fill=\"%s\"/>"
            "<rect x=\"%.1f\" y=\"%d\" width=\"6\" height=\"12\" fill=\"%s\"/>"
            "<text x=\"%.1f\" y=\"%d\">odd micro-batches lighter</text>\n",
            x, KEY_Y, kinds[KIND_FORWARD].light, x + 6, KEY_Y, kinds[KIND_BACKWARD].light,
            x + 16, KEY_Y + 10);
    x += 16 + text_width(25, LABEL_FONT) + 14;
    fprintf(out, "<rect x=\"%.1f\" y=\"%d\" width=\"24\" height=\"12\" fill=\"#f3f3f3\" "
            "stroke=\"#dddddd\"/><text x=\"%.1f\" y=\"%d\">idle</text>\n", x, KEY_Y, x + 28,
            KEY_Y + 10);
    x += 28 + text_width(4, LABEL_FONT) + 14;
    fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#cc0000\" "
            "stroke-width=\"1.5\" stroke-dasharray=\"4,3\"/><text x=\"%.1f\" y=\"%d\">"
            "end of the step</text>\n</g>\n", x + 4, KEY_Y - 1, x + 4, KEY_Y + 13, x + 12,
            KEY_Y + 10);
}

/* Each row's band (light grey: idle unless a bar covers it), its name and its busy share;
 * a line between the devices and the links. */
static void write_rows(const drawing *d)
{
    FILE *out = d->out;
    size_t max_chars = (size_t)((MAX_LABEL_WIDTH - 16) / (CHAR_WIDTH * LABEL_FONT));
    fprintf(out, "<g id=\"rows\">\n");
    for (int row = 0; row < d->n_rows; row++) {
        char buf[600];
        const char *name = row_name(d, row, buf, sizeof buf);
        double y = row_y(row);
        fprintf(out, "<rect class=\"row\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" "
                "fill=\"%s\"/>\n", d->plot_x, y, d->plot_width, ROW_HEIGHT,
                row % 2 ? "#eeeeee" : "#f6f6f6");
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\"><title>",
                d->plot_x - 8, y + 13);
        write_text(out, name, 0);
        fprintf(out, "%s</title>", row < d->cluster->n_devices ? " (device)" : " (link)");
        write_text(out, name, max_chars);
        fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" fill=\"#444444\">busy %.0f%%</text>\n",
                d->plot_x + d->plot_width + 8, y + 13,
                d->step_seconds > 0 ? 100 * d->busy[row] / d->step_seconds : 0.0);
    }
    if (d->program->n_links > 0) {
        double y = row_y(d->cluster->n_devices);
        fprintf(out, "<line x1=\"0\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999999\"/>\n",
                y, d->plot_x + d->plot_width, y);
    }
    fprintf(out, "</g>\n");
}

/* Grid lines behind the bars, one per tick. */
static void write_grid(const drawing *d)
{
    double top = row_y(0), bottom = row_y(d->n_rows);
    fprintf(d->out, "<g id=\"grid\" stroke=\"#d4d4d4\" stroke-width=\"1\">\n");
    for (int tick = 1; tick <= d->n_ticks; tick++) {
        double x = x_of(d, tick * d->tick_seconds);
        fprintf(d->out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\"/>\n", x, top, x,
                bottom);
    }
    fprintf(d->out, "</g>\n");
}

/* The decimals a tick's label needs: 0.05 ms two, 2 ms none. */
static int tick_decimals(double tick_ms)
{
    int decimals = 0;
    for (double scaled = tick_ms; decimals < 9 && fabs(scaled - round(scaled)) > 1e-6 * scaled;
         scaled *= 10)
        decimals++;
    return decimals;
}

static void write_axis(const drawing *d)
{
    FILE *out = d->out;
    double y = row_y(d->n_rows);
    int decimals = tick_decimals(1e3 * d->tick_seconds);
    fprintf(out, "<g id=\"axis\">\n<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#000000\"/>\n", d->plot_x, y, d->plot_x + d->plot_width, y);
    for (int tick = 0; tick <= d->n_ticks; tick++) {
        double x = x_of(d, tick * d->tick_seconds);
        fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#000000\"/>"
                "<text x=\"%.2f\" y=\"%.1f\" text-anchor=\"middle\">%.*f</text>\n", x, y, x,
                y + 5, x, y + 18, decimals, 1e3 * tick * d->tick_seconds);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time from the step's "
            "start (ms)</text>\n</g>\n", d->plot_x + d->plot_width / 2, y + 36);
}

/* The tooltip: "fc1/matmul (forward, micro-batch 1): 0.123 ms, from 1.000 to 1.123 ms",
 * "copy fc1/relu:0 (micro-batch 1) dev0 → dev1, 1.5 KiB: 20.0 µs, from ...". */
static void write_tooltip(const drawing *d, int i)
{
    const pl_program *p = d->program;
    const pl_task *task = &p->tasks[i];
    FILE *out = d->out;
    fputs("<title>", out);
    if (task->kind != PL_TASK_OP)
        fputs(task->kind == PL_TASK_COPY ? "copy " : "reduce ", out);
    write_text(out, task_subject(p, task), 0);
    if (task->kind == PL_TASK_OP)
        fprintf(out, " (%s", kinds[task_kind(p, task)].name);
    if (task->micro_batch >= 0)
        fprintf(out, "%smicro-batch %d", task->kind == PL_TASK_OP ? ", " : " (",
                task->micro_batch);
    if (task->kind == PL_TASK_OP || task->micro_batch >= 0)
        fputs(")", out);
    if (task->kind != PL_TASK_OP) {
        const pl_transfer *transfer = &p->transfers[task->transfer];
        char bytes[32];
        fputc(' ', out);
        write_text(out, d->cluster->devices[transfer->from].name, 0);
        fputs(" → ", out);
        write_text(out, d->cluster->devices[transfer->to].name, 0);
        fprintf(out, ", %s", pl_units_bytes((double)pl_task_bytes(p, task), bytes, sizeof bytes));
    }
    char duration[32];
    fprintf(out, ": %s, from %.3f to %.3f ms</title>",
            format_duration(d->ends[i] - d->starts[i], duration, sizeof duration),
            1e3 * d->starts[i], 1e3 * d->ends[i]);
}

/* A bar per task, in program order; its name inside when it fits, as "name#micro-batch". */
static void write_bars(const drawing *d)
{
    const pl_program *p = d->program;
    FILE *out = d->out;
    double right = d->plot_x + d->plot_width;
    fprintf(out, "<g id=\"tasks\">\n");
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        kind k = task_kind(p, task);
        bool light = task->micro_batch >= 0 && task->micro_batch % 2 == 1;
        double x = x_of(d, d->starts[i]);
        double width = x_of(d, d->ends[i]) - x;
        if (width < MIN_BAR_WIDTH)
            width = MIN_BAR_WIDTH;
        if (x + width > right)
            x = right - width;
        double y = row_y(task->resource) + (ROW_HEIGHT - BAR_HEIGHT) / 2.0;
        char shown[600]; /* the colour says "copy" */
        if (task->micro_batch >= 0)
            snprintf(shown, sizeof shown, "%s#%d", task_subject(p, task), task->micro_batch);
        else
            snprintf(shown, sizeof shown, "%s", task_subject(p, task));
        bool labelled = width >= text_width(text_length(shown), BAR_FONT) + 6;
        if (labelled) {
            fprintf(out, "<g class=\"%s\">", kinds[k].name);
            write_tooltip(d, i);
            fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\"/><text x=\"%.2f\" y=\"%.1f\" font-size=\"%d\" fill=\"%s\">",
                    x, y, width, BAR_HEIGHT, light ? kinds[k].light : kinds[k].dark, x + 3,
                    y + 10.5, BAR_FONT, light ? "#000000" : "#ffffff");
            write_text(out, shown, 0);
            fprintf(out, "</text></g>\n");
        } else {
            fprintf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\">", kinds[k].name, x, y, width, BAR_HEIGHT,
                    light ? kinds[k].light : kinds[k].dark);
            write_tooltip(d, i);
            fprintf(out, "</rect>\n");
        }
    }
    fprintf(out, "</g>\n");
}

static void write_step_end(const drawing *d)
{
    double x = x_of(d, d->step_seconds);
    fprintf(d->out, "<line id=\"step-end\" x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
            "stroke=\"#cc0000\" stroke-width=\"1.5\" stroke-dasharray=\"4,3\"/>\n", x,
            row_y(0) - 4, x, row_y(d->n_rows) + 4);
}

/* Checks the times and writes the whole picture, or nothing (PL_EINPUT, PL_ENOMEM); write
 * errors are the caller's to see on `out`. */
static pl_status draw(const pl_program *program, const pl_cluster *cluster,
                      const double *starts, const double *ends, double step_seconds,
                      const char *title, FILE *out, pl_error *err)
{
    if (cluster->n_devices != program->n_devices)
        return pl_error_set(err, PL_EINPUT, NULL, "timeline: the cluster has %d devices and "
                            "the program %d: it was compiled for another cluster",
                            cluster->n_devices, program->n_devices);
    pl_status status = check_times(program, starts, ends, err);
    if (status != PL_OK)
        return status;
    drawing d = {.program = program, .cluster = cluster, .starts = starts, .ends = ends,
                 .out = out};
    if (measure(&d, step_seconds) != PL_OK) {
        status = pl_error_set(err, PL_ENOMEM, NULL, "timeline: out of memory");
    } else {
        double width = d.plot_x + d.plot_width + BUSY_WIDTH;
        double height = row_y(d.n_rows) + AXIS_HEIGHT;
        write_heading(&d, title ? title : program->graph->name, width, height);
        write_key(&d);
        write_rows(&d);
        write_grid(&d);
        write_bars(&d);
        write_step_end(&d);
        write_axis(&d);
        fprintf(out, "</svg>\n");
    }
    free(d.busy);
    free(d.tasks);
    return status;
}

pl_status pl_timeline_write(const pl_program *program, const pl_cluster *cluster,
                            const double *starts, const double *ends, double step_seconds,
                            const char *title, FILE *out, pl_error *err)
{
    pl_status status = draw(program, cluster, starts, ends, step_seconds, title, out, err);
    if (status == PL_OK && (fflush(out) != 0 || ferror(out)))
        status = pl_error_set(err, PL_EIO, NULL, "writing the timeline failed: %s",
                              strerror(errno));
    return status;
}

pl_status pl_timeline_write_file(const char *path, const pl_program *program,
                                 const pl_cluster *cluster, const double *starts,
                                 const double *ends, double step_seconds, const char *title,
                                 pl_error *err)
{
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, err) != PL_OK)
        return PL_EIO;
    pl_status status = draw(program, cluster, starts, ends, step_seconds, title, file.fp, err);
    if (status != PL_OK) {
        pl_atomic_abort(&file);
        return status;
    }
    return pl_atomic_commit(&file, err); /* sees a failed write, naming the path */
}
