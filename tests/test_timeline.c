/* The SVG timeline of a step (src/draw/timeline.h), read back as text: well-formed XML, a
 * bar per task of the right phase, a row per device and link, every bar inside the axis
 * and where its times put it, hostile names escaped, bad times refused with nothing
 * written, and the file written by the output rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program.h"
#include "simulate.h"
#include "suites.h"
#include "test_util.h"
#include "timeline.h"

/* A program of the two-layer model as a two-stage pipeline of 2 micro-batches on devices
 * a and b, joined by declared links (a row each), and its simulated times. */
typedef struct fixture {
    pl_graph *g;
    pl_cluster *c;
    pl_plan *plan;
    pl_program *p;
    double *starts, *ends;
    double step_seconds;
} fixture;

static fixture setup_graph(pl_graph *g)
{
    fixture f = {.g = g};
    f.c = pl_test_cluster((pl_test_devices){.n = 2, .memory = 1 << 20,
                                            .link_bytes_per_second = 1e9});
    f.plan = pl_test_pipeline_plan(f.g, 2, 2, PL_SCHEDULE_1F1B);
    f.p = pl_program_new(f.g, f.c, f.plan, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.p);
    f.starts = calloc((size_t)f.p->n_tasks, sizeof *f.starts);
    f.ends = calloc((size_t)f.p->n_tasks, sizeof *f.ends);
    CU_ASSERT_FATAL(f.starts && f.ends);
    pl_cost_model costs = pl_test_costs((pl_op_cost){1e-3, 0, 0, 1, 0, 0}, 1e-3, 0, 0);
    pl_simulation sim;
    CU_ASSERT_EQUAL_FATAL(pl_simulate(f.p, f.c, &costs, &sim, f.starts, f.ends, NULL), PL_OK);
    f.step_seconds = sim.step_seconds;
    return f;
}

static fixture setup(void)
{
    return setup_graph(pl_test_two_layers());
}

static void teardown(fixture *f)
{
    free(f->starts);
    free(f->ends);
    pl_program_free(f->p);
    pl_plan_free(f->plan);
    pl_cluster_free(f->c);
    pl_graph_free(f->g);
}

/* The drawing as a string (free it), or NULL when the call did not return PL_OK. */
static char *draw(const fixture *f, double step_seconds, const char *title, pl_status *status)
{
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    pl_error err;
    pl_error_init(&err, "test");
    *status = pl_timeline_write(f->p, f->c, f->starts, f->ends, step_seconds, title, out, &err);
    CU_ASSERT_EQUAL_FATAL(fclose(out), 0);
    if (*status != PL_OK) {
        CU_ASSERT_EQUAL(size, 0); /* nothing written */
        free(text);
        return NULL;
    }
    return text;
}

/* Occurrences of needle in text, before `end` when not NULL. */
static int count_before(const char *text, const char *needle, const char *end)
{
    int n = 0;
    for (const char *s = strstr(text, needle); s && (!end || s < end); s = strstr(s + 1, needle))
        n++;
    return n;
}

static int count(const char *text, const char *needle)
{
    return count_before(text, needle, NULL);
}

/* Whether text is well-formed XML as far as this drawing goes: tags nest and close,
 * attribute values are quoted and hold no '<', every '&' starts one of XML's five entities,
 * and nothing follows the root. */
static bool well_formed(const char *text)
{
    const char *stack[64];
    size_t lengths[64];
    int depth = 0;
    bool rooted = false;
    for (const char *s = text; *s;) {
        if (*s == '&') {
            static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
            int known = 0;
            for (int e = 0; e < 5; e++)
                known |= strncmp(s, entities[e], strlen(entities[e])) == 0;
            if (!known)
                return false;
            s++;
            continue;
        }
        if (*s == '>')
            return false;
        if (*s != '<') {
            if (rooted && depth == 0 && *s != '\n')
                return false; /* text after the root */
            s++;
            continue;
        }
        if (s[1] == '?' || s[1] == '!') { /* the declaration, the doctype */
            const char *end = strchr(s, '>');
            if (!end || depth > 0)
                return false;
            s = end + 1;
            continue;
        }
        bool closing = s[1] == '/';
        const char *name = s + 1 + closing;
        size_t length = strcspn(name, " />\n");
        const char *p = name + length;
        bool quoted = false;
        for (; *p && (quoted || *p != '>'); p++) {
            if (*p == '"')
                quoted = !quoted;
            else if (quoted && (*p == '<' || *p == '>'))
                return false;
            else if (quoted && *p == '&') {
                int known = 0;
                static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;",
                                                       "&apos;"};
                for (int e = 0; e < 5; e++)
                    known |= strncmp(p, entities[e], strlen(entities[e])) == 0;
                if (!known)
                    return false;
            }
        }
        if (!*p || length == 0)
            return false;
        bool empty = p[-1] == '/';
        if (closing) {
            if (depth == 0 || lengths[depth - 1] != length ||
                strncmp(stack[depth - 1], name, length) != 0)
                return false;
            depth--;
        } else if (!empty) {
            if (depth == 64 || (rooted && depth == 0))
                return false;
            stack[depth] = name;
            lengths[depth++] = length;
            rooted = true;
        }
        s = p + 1;
    }
    return rooted && depth == 0;
}

static double attribute(const char *element, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, " %s=\"", name);
    const char *at = strstr(element, key);
    CU_ASSERT_PTR_NOT_NULL_FATAL(at);
    return atof(at + strlen(key));
}

static void test_structure(void)
{
    fixture f = setup();
    CU_ASSERT_EQUAL(f.p->n_links, 2);
    pl_status status;
    char *svg = draw(&f, f.step_seconds, "two layers", &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    CU_ASSERT(well_formed(svg));
    CU_ASSERT_EQUAL(strncmp(svg, "<?xml version=\"1.0\" encoding=\"UTF-8\"", 36), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\""));
    /* a bar per task, of its phase, with a tooltip each */
    int phases[4] = {0};
    for (int i = 0; i < f.p->n_tasks; i++) {
        const pl_task *task = &f.p->tasks[i];
        phases[task->kind == PL_TASK_COPY ? 3 : (int)f.g->ops[task->op].phase]++;
    }
    CU_ASSERT_EQUAL(count(svg, " class=\"forward\""), phases[0]);
    CU_ASSERT_EQUAL(count(svg, " class=\"backward\""), phases[1]);
    CU_ASSERT_EQUAL(count(svg, " class=\"update\""), phases[2]);
    CU_ASSERT_EQUAL(count(svg, " class=\"copy\""), phases[3]);
    CU_ASSERT(phases[0] > 0 && phases[1] > 0 && phases[2] > 0 && phases[3] > 0);
    /* a row per device and per link, named */
    CU_ASSERT_EQUAL(count(svg, "class=\"row\""), 2 + 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">a</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">b</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">a → b</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">b → a</text>"));
    /* the step time in the title; the model's op names and micro-batches in tooltips */
    char heading[64];
    snprintf(heading, sizeof heading, "two layers — step %.3f ms", 1e3 * f.step_seconds);
    CU_ASSERT_EQUAL(count(svg, heading), 2); /* the document's title and the heading */
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "<title>fc (forward, micro-batch 1): 1.000 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "(update): 1.000 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "<title>copy logits (micro-batch 0) a → b, 16 B: 1.000 ms"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">time from the step's start (ms)</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "<g id=\"key\">"));
    free(svg);
    teardown(&f);
}

/* Every bar lies inside the axis, on its row, at the x its times give. */
static void test_bars_inside_axis(void)
{
    fixture f = setup();
    pl_status status;
    char *svg = draw(&f, 0, NULL, &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    const char *axis = strstr(svg, "<g id=\"axis\">\n<line ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(axis);
    double left = attribute(axis, "x1"), right = attribute(axis, "x2");
    double bottom = attribute(axis, "y1");
    CU_ASSERT(right > left + 100);
    /* the ticks: the last at or past the last task's end, at the axis' end */
    double last = 0;
    for (int i = 0; i < f.p->n_tasks; i++)
        last = fmax(last, f.ends[i]);
    CU_ASSERT_DOUBLE_EQUAL(f.step_seconds, last, 1e-12); /* no hand-offs: equal */
    const char *tasks = strstr(svg, "<g id=\"tasks\">\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tasks);
    const char *end = strstr(tasks, "</g>\n<line id=\"step-end\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    const char *first_row = strstr(svg, "class=\"row\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(first_row);
    double top = attribute(first_row, "y");
    /* the axis' end, from its last tick's label (in ms) */
    const char *caption = strstr(axis, ">time from the step's start (ms)</text>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(caption);
    const char *tick = NULL;
    const char *label = "text-anchor=\"middle\">";
    for (const char *s = strstr(axis, label); s && s < caption; s = strstr(s + 1, label))
        if (s + strlen(label) < caption)
            tick = s + strlen(label);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tick);
    double axis_seconds = 1e-3 * atof(tick);
    CU_ASSERT(axis_seconds >= last - 1e-12);
    CU_ASSERT(axis_seconds < 2 * last); /* ticks 1, 2 or 5 apart: the axis is not too long */
    int bars = 0;
    for (const char *rect = strstr(tasks, "<rect "); rect && rect < end;
         rect = strstr(rect + 1, "<rect "), bars++) {
        CU_ASSERT_FATAL(bars < f.p->n_tasks);
        double x = attribute(rect, "x"), width = attribute(rect, "width");
        double y = attribute(rect, "y");
        CU_ASSERT(x >= left - 1e-9);
        CU_ASSERT(x + width <= right + 0.01);
        CU_ASSERT(width >= 0.5 - 1e-9);
        CU_ASSERT(y >= top && y + 14 <= bottom);
        /* bars come in program order, on their resource's row (18 pixels each) */
        const pl_task *task = &f.p->tasks[bars];
        CU_ASSERT_DOUBLE_EQUAL(y, top + 18.0 * task->resource + 2, 1e-6);
        if (f.starts[bars] == 0)
            CU_ASSERT_DOUBLE_EQUAL(x, left, 0.01);
        double pixels = (right - left) / axis_seconds;
        CU_ASSERT_DOUBLE_EQUAL(x, left + f.starts[bars] * pixels, 0.01);
        CU_ASSERT_DOUBLE_EQUAL(width, fmax(0.5, (f.ends[bars] - f.starts[bars]) * pixels), 0.01);
    }
    CU_ASSERT_EQUAL(bars, f.p->n_tasks);
    free(svg);
    teardown(&f);
}

/* A step longer than its tasks (the executor's, which ends when the caller wakes): the
 * axis and the end marker cover it. */
static void test_step_longer_than_tasks(void)
{
    fixture f = setup();
    pl_status status;
    double step = 2 * f.step_seconds;
    char *svg = draw(&f, step, "t", &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    char heading[64];
    snprintf(heading, sizeof heading, "t — step %.3f ms", 1e3 * step);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, heading));
    const char *axis = strstr(svg, "<g id=\"axis\">\n<line ");
    const char *marker = strstr(svg, "<line id=\"step-end\"");
    CU_ASSERT_FATAL(axis && marker);
    CU_ASSERT(attribute(marker, "x1") <= attribute(axis, "x2") + 1e-9);
    CU_ASSERT(attribute(marker, "x1") > attribute(axis, "x1"));
    free(svg);
    /* a step time that is not one: the last task's end */
    svg = draw(&f, INFINITY, "t", &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    snprintf(heading, sizeof heading, "t — step %.3f ms", 1e3 * f.step_seconds);
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, heading));
    free(svg);
    teardown(&f);
}

/* Op and device names with markup, quotes, control characters and broken UTF-8 come out
 * as text: escaped, the unprintable replaced by U+FFFD. */
static void test_hostile_names(void)
{
    pl_graph *g = pl_test_training_model(
        "[3]",
        "{\"name\": \"w1\", \"shape\": [3, 3], \"init\": {\"kind\": \"zeros\"}},"
        "{\"name\": \"w2\", \"shape\": [3, 2], \"init\": {\"kind\": \"zeros\"}}",
        "{\"name\": \"</title><script>x&y\\\"'\", \"op\": \"matmul\", \"inputs\": [\"x\", "
        "\"w1\"], \"outputs\": [\"h\"]},"
        "{\"name\": \"fc\", \"op\": \"matmul\", \"inputs\": [\"h\", \"w2\"], \"outputs\": [\"logits\"]},"
        "{\"name\": \"loss\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"logits\", \"y\"],"
        " \"outputs\": [\"loss\"]}",
        "loss");
    fixture f = setup_graph(g);
    f.c->devices[0].name = "dev<0> & \"\x01\xff";
    pl_status status;
    char *svg = draw(&f, 0, "a <title> & more", &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    CU_ASSERT(well_formed(svg));
    CU_ASSERT_PTR_NULL(strstr(svg, "<script"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "&lt;/title&gt;&lt;script&gt;x&amp;y&quot;&apos; "
                                       "(forward, micro-batch 0)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, ">dev&lt;0&gt; &amp; &quot;\xef\xbf\xbd\xef\xbf\xbd</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "<title>a &lt;title&gt; &amp; more — step"));
    CU_ASSERT_PTR_NULL(strchr(svg, '\x01'));
    free(svg);
    teardown(&f);
}

/* A long name is cut in the name column (its tooltip keeps it); a bar wide enough carries
 * its name, the others none. */
static void test_long_names_and_labels(void)
{
    fixture f = setup();
    char longest[200];
    memset(longest, 'n', sizeof longest - 1);
    longest[sizeof longest - 1] = '\0';
    f.c->devices[1].name = longest;
    /* the first task takes most of the step, every other one a sliver */
    double t = 0;
    for (int i = 0; i < f.p->n_tasks; i++) {
        f.starts[i] = t;
        t += i == 0 ? 100e-3 : 1e-6;
        f.ends[i] = t;
    }
    pl_status status;
    char *svg = draw(&f, 0, NULL, &status);
    CU_ASSERT_EQUAL_FATAL(status, PL_OK);
    CU_ASSERT(well_formed(svg));
    const char *tasks = strstr(svg, "<g id=\"tasks\">");
    CU_ASSERT_PTR_NOT_NULL_FATAL(tasks);
    const char *end = strstr(tasks, "</g>\n<line id=\"step-end\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(end);
    CU_ASSERT_EQUAL(count_before(tasks, "<text ", end), 1);
    char name[600], label[700];
    pl_task_name(f.p, &f.p->tasks[0], name, sizeof name);
    snprintf(label, sizeof label, "\">%s</text></g>", name);
    CU_ASSERT_PTR_NOT_NULL(strstr(tasks, label));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, "nnnnnnnn…</text>"));
    CU_ASSERT_PTR_NOT_NULL(strstr(svg, longest)); /* whole in its tooltip */
    const char *row = strstr(svg, "class=\"row\"");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT(attribute(row, "x") <= 260); /* the name column stays narrow */
    free(svg);
    teardown(&f);
}

static void test_bad_times(void)
{
    fixture f = setup();
    pl_status status;
    f.starts[3] = NAN;
    CU_ASSERT_PTR_NULL(draw(&f, 0, NULL, &status));
    CU_ASSERT_EQUAL(status, PL_EINPUT);
    f.starts[3] = f.ends[3] + 1e-3; /* ends before it starts */
    pl_error err;
    pl_error_init(&err, "test");
    FILE *out = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    CU_ASSERT_EQUAL(pl_timeline_write(f.p, f.c, f.starts, f.ends, 0, NULL, out, &err),
                    PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "task 3 ("));
    CU_ASSERT_EQUAL(ftell(out), 0);
    f.starts[3] = -1e-3;
    CU_ASSERT_EQUAL(pl_timeline_write(f.p, f.c, f.starts, f.ends, 0, NULL, out, NULL),
                    PL_EINPUT);
    f.starts[3] = f.ends[3];
    /* a cluster of another size */
    pl_cluster *three = pl_test_cluster((pl_test_devices){.n = 3, .memory = 1 << 20});
    CU_ASSERT_EQUAL(pl_timeline_write(f.p, three, f.starts, f.ends, 0, NULL, out, NULL),
                    PL_EINPUT);
    CU_ASSERT_EQUAL(ftell(out), 0);
    CU_ASSERT_EQUAL(pl_timeline_write(f.p, f.c, f.starts, f.ends, 0, NULL, out, NULL), PL_OK);
    CU_ASSERT(ftell(out) > 0);
    fclose(out);
    pl_cluster_free(three);
    teardown(&f);
}

/* The file is replaced whole, or left as it was when the times are bad; a missing folder
 * is PL_EIO naming the path. */
static void test_write_file(void)
{
    fixture f = setup();
    char dir[] = "/tmp/placer-timeline-XXXXXX";
    CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
    char path[128], missing[160];
    snprintf(path, sizeof path, "%s/t.svg", dir);
    snprintf(missing, sizeof missing, "%s/no/t.svg", dir);
    FILE *old = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(old);
    fputs("old", old);
    fclose(old);
    f.ends[0] = -1;
    pl_error err;
    pl_error_init(&err, path);
    CU_ASSERT_EQUAL(pl_timeline_write_file(path, f.p, f.c, f.starts, f.ends, 0, "x", &err),
                    PL_EINPUT);
    char buf[64] = "";
    FILE *in = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_PTR_NOT_NULL(fgets(buf, sizeof buf, in));
    fclose(in);
    CU_ASSERT_STRING_EQUAL(buf, "old");
    f.ends[0] = f.starts[0];
    CU_ASSERT_EQUAL(pl_timeline_write_file(path, f.p, f.c, f.starts, f.ends, 0, "x", NULL),
                    PL_OK);
    in = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(in);
    CU_ASSERT_PTR_NOT_NULL(fgets(buf, sizeof buf, in));
    fclose(in);
    CU_ASSERT_EQUAL(strncmp(buf, "<?xml", 5), 0);
    pl_error_init(&err, missing);
    CU_ASSERT_EQUAL(pl_timeline_write_file(missing, f.p, f.c, f.starts, f.ends, 0, "x", &err),
                    PL_EIO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no/t.svg"));
    CU_ASSERT_EQUAL(unlink(path), 0);
    CU_ASSERT_EQUAL(rmdir(dir), 0); /* no temporary file left */
    teardown(&f);
}

void pl_register_timeline_tests(void)
{
    static const pl_test_case cases[] = {
        {"a bar per task by phase, a row per device and link, step in the title",
         test_structure},
        {"every bar inside the axis, on its row, where its times put it", test_bars_inside_axis},
        {"a step longer than its tasks: the axis covers it", test_step_longer_than_tasks},
        {"hostile names escaped, the unprintable replaced", test_hostile_names},
        {"long names cut, names only inside bars wide enough", test_long_names_and_labels},
        {"bad times or another cluster: input error, nothing written", test_bad_times},
        {"the file replaced whole or left as it was", test_write_file},
        {NULL, NULL},
    };
    pl_test_add_suite("timeline", cases);
}
