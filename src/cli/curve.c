/* The main job's learning curve, PREFIX.curve.svg: the step in milliseconds against the
 * agent's iterations (and the seconds they took), with the best baseline and the lower
 * bound as reference lines. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "job.h"

enum { WIDTH = 720, HEIGHT = 420, LEFT = 72, RIGHT = 24, TOP = 70, BOTTOM = 64 };

/* A round step for about `ticks` ticks over `range`: 1, 2 or 5 times a power of ten. */
static double nice_step(double range, int ticks)
{
    double raw = range / ticks, power = pow(10, floor(log10(raw)));
    double unit = raw / power;
    return power * (unit <= 1 ? 1 : unit <= 2 ? 2 : unit <= 5 ? 5 : 10);
}

typedef struct frame {
    double x0, x1; /* iterations */
    double y0, y1; /* milliseconds */
} frame;

static double px(const frame *f, double iteration)
{
    return LEFT + (WIDTH - LEFT - RIGHT) * (iteration - f->x0) / (f->x1 - f->x0);
}

static double py(const frame *f, double ms)
{
    return HEIGHT - BOTTOM - (HEIGHT - TOP - BOTTOM) * (ms - f->y0) / (f->y1 - f->y0);
}

/* The seconds at which `iteration` ended in this run, or -1 (a resumed agent's earlier
 * iterations, or none timed). */
static double seconds_at(const pl_search *s, double iteration)
{
    int i = (int)lround(iteration) - s->first_timed;
    return s->n_timed > 0 && i >= 0 && i < s->n_timed ? s->iteration_at[i] : -1;
}

static void axes(FILE *fp, const frame *f, const pl_search *s)
{
    fprintf(fp, "<g stroke=\"#444\">\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n</g>\n", LEFT, HEIGHT - BOTTOM,
            WIDTH - RIGHT, HEIGHT - BOTTOM, LEFT, TOP, LEFT, HEIGHT - BOTTOM);
    double dy = nice_step(f->y1 - f->y0, 5);
    for (double v = ceil(f->y0 / dy) * dy; v <= f->y1 + 1e-9 * dy; v += dy)
        fprintf(fp, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n"
                "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", LEFT, py(f, v),
                WIDTH - RIGHT, py(f, v), LEFT - 6, py(f, v) + 4, v);
    double dx = nice_step(f->x1 - f->x0, 6);
    if (dx < 1)
        dx = 1;
    for (double v = ceil(f->x0 / dx) * dx; v <= f->x1 + 1e-9 * dx; v += dx) {
        fprintf(fp, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", px(f, v),
                HEIGHT - BOTTOM, px(f, v), HEIGHT - BOTTOM + 5, px(f, v), HEIGHT - BOTTOM + 18,
                v);
        double at = seconds_at(s, v);
        if (at >= 0)
            fprintf(fp, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#666\">"
                    "%.1f s</text>\n", px(f, v), HEIGHT - BOTTOM + 34, at);
    }
    fprintf(fp, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">iteration (below: seconds "
            "since the job started)</text>\n", (LEFT + WIDTH - RIGHT) / 2, HEIGHT - 8);
    fprintf(fp, "<text x=\"16\" y=\"%d\" transform=\"rotate(-90 16 %d)\" text-anchor=\"middle\">"
            "step (ms)</text>\n", (TOP + HEIGHT - BOTTOM) / 2, (TOP + HEIGHT - BOTTOM) / 2);
}

/* A horizontal reference line, labelled at its right end. */
static void reference(FILE *fp, const frame *f, double ms, const char *colour, const char *what)
{
    if (!(ms >= f->y0 && ms <= f->y1))
        return;
    fprintf(fp, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\" "
            "stroke-dasharray=\"6 4\"/>\n<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" "
            "fill=\"%s\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">"
            "%s %.3f ms</text>\n", LEFT, py(f, ms), WIDTH - RIGHT, py(f, ms),
            colour, WIDTH - RIGHT - 4, py(f, ms) - 4, colour, what, ms);
}

/* The legend: one row above the plot, never over a line. */
static void legend(FILE *fp, const char *const *names, const char *const *colours, int n)
{
    int x = LEFT;
    for (int k = 0; k < n; k++) {
        fprintf(fp, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
                "stroke-width=\"3\"/>\n<text x=\"%d\" y=\"%d\">%s</text>\n", x, TOP - 18,
                x + 18, TOP - 18, colours[k], x + 24, TOP - 14, names[k]);
        x += 34 + 7 * (int)strlen(names[k]);
    }
}

void pl_job_write_curve(FILE *fp, const pl_job *job)
{
    const pl_search *s = job->search;
    int n = pl_agent_iterations(s->agent);
    const pl_agent_iteration *curve = pl_agent_curve(s->agent);
    double baseline = 0;
    if (s->best_baseline >= 0) {
        const pl_search_row *base = &s->rows[s->best_baseline];
        baseline = 1e3 * (base->measured > 0 ? base->measured : base->sim.step_seconds);
    }
    /* the frame holds the references and the best lines; the mean of the samples is cut
       off above it (early samples are far slower than anything worth reading) */
    frame f = {1, n > 1 ? n : 2, 1e3 * s->bound, 1e3 * s->bound};
    for (int i = 0; i < n; i++)
        f.y1 = fmax(f.y1, 1e3 * curve[i].best_step);
    for (int m = 0; m < s->n_measurements; m++) {
        f.y1 = fmax(f.y1, 1e3 * s->measurements[m].seconds);
        f.y0 = fmin(f.y0, 1e3 * s->measurements[m].seconds);
    }
    f.y1 = fmax(f.y1, baseline);
    double pad = 0.08 * (f.y1 - f.y0) + 1e-6;
    f.y0 = fmax(0, f.y0 - pad);
    f.y1 += 3 * pad;

    fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", WIDTH, HEIGHT, WIDTH,
            HEIGHT);
    fprintf(fp, "<text x=\"%d\" y=\"22\" font-size=\"15\">The agent's search: %d "
            "iterations</text>\n", LEFT, n);
    static const char *const names[] = {"best simulated", "best measured",
                                        "mean of the samples"};
    static const char *const colours[] = {"#d62728", "#2ca02c", "#9ecae1"};
    legend(fp, names, colours, pl_agent_learns(s->agent) ? 3 : 2); /* no samples without */
    fprintf(fp, "<clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>"
            "</clipPath>\n", LEFT, TOP, WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
    axes(fp, &f, s);
    reference(fp, &f, baseline, "#555", s->best_baseline >= 0 ? "best baseline" : "");
    reference(fp, &f, 1e3 * s->bound, "#999", "lower bound");

    fprintf(fp, "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"1.5\">\n");
    fprintf(fp, "<polyline stroke=\"%s\" points=\"", colours[2]);
    for (int i = 0; i < n; i++)
        if (curve[i].mean_step > 0)
            fprintf(fp, "%.1f,%.1f ", px(&f, i + 1), py(&f, fmin(1e3 * curve[i].mean_step,
                                                                  f.y1 * 2)));
    fprintf(fp, "\"/>\n<polyline stroke=\"%s\" stroke-width=\"2\" points=\"", colours[0]);
    for (int i = 0; i < n; i++)
        if (curve[i].best_step > 0) /* 0: no plan fit yet */
            fprintf(fp, "%.1f,%.1f ", px(&f, i + 1), py(&f, 1e3 * curve[i].best_step));
    fprintf(fp, "\"/>\n");
    /* the best measured so far: a step line through the measurements, each one a dot */
    double best = INFINITY;
    fprintf(fp, "<polyline stroke=\"%s\" stroke-width=\"2\" points=\"", colours[1]);
    for (int m = 0; m < s->n_measurements; m++) {
        double ms = 1e3 * s->measurements[m].seconds;
        if (isfinite(best))
            fprintf(fp, "%.1f,%.1f ", px(&f, s->measurements[m].iteration), py(&f, best));
        best = fmin(best, ms);
        fprintf(fp, "%.1f,%.1f ", px(&f, s->measurements[m].iteration), py(&f, best));
    }
    if (isfinite(best))
        fprintf(fp, "%.1f,%.1f", px(&f, f.x1), py(&f, best));
    fprintf(fp, "\"/>\n");
    for (int m = 0; m < s->n_measurements; m++)
        fprintf(fp, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>iteration %d: "
                "measured %.3f ms</title></circle>\n", px(&f, s->measurements[m].iteration),
                py(&f, 1e3 * s->measurements[m].seconds), colours[1],
                s->measurements[m].iteration, 1e3 * s->measurements[m].seconds);
    fprintf(fp, "</g>\n</svg>\n");
}
