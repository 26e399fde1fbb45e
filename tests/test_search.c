/* The placement search as a library call (search.h): simulating only, a row for every
 * baseline and the fastest chosen; the progress events in the protocol's order; an
 * interrupt already set stops at once with a plan; a measured run on the paced cluster
 * measures the head-to-head contenders; no plan that fits is a result; where megatron's
 * split plan is the only baseline that fits, the agent's plans split or recompute too;
 * without replicas, megatron's plan of one; bad options and a missing checkpoint are
 * errors that say so; a checkpoint saved is resumed.
 *
 * Costs come from a synthetic model so that what is simulated does not depend on this
 * machine; measurements are checked for what they are, never for how long they took. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "baseline.h"
#include "search.h"
#include "suites.h"
#include "test_util.h"

/* inception-small's training graph on the paced four devices, with synthetic costs. */
typedef struct fixture {
    pl_graph *g;
    pl_cluster *c;
    pl_cost_model m;
    pl_search_options o;
} fixture;

static void fixture_init(fixture *f, const char *cluster)
{
    f->g = pl_test_bundled_training_graph("small/inception-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->g);
    f->c = pl_test_bundled_cluster(cluster);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f->c);
    f->m = pl_test_costs((pl_op_cost){1e-6, 1e-9, 0, 1, 0, 0}, 1e-6, 1e-10, 1e-6);
    pl_search_options_default(&f->o);
    f->o.samples = 8;
    f->o.iterations = 3;
    f->o.budget = 0;
    f->o.simulate_only = true;
}

static void fixture_free(fixture *f)
{
    pl_cluster_free(f->c);
    pl_graph_free(f->g);
}

/* The events of one search, as they came. */
enum { MAX_EVENTS = 256 };
typedef struct recorder {
    int n;
    pl_search_event_kind kind[MAX_EVENTS];
    int row[MAX_EVENTS], iteration[MAX_EVENTS], round[MAX_EVENTS];
    int rows_then[MAX_EVENTS]; /* the result's rows when the event came */
    const pl_search *search;   /* what every event pointed to, or NULL when they differed */
    bool same_search;
} recorder;

static void record(void *context, const pl_search_event *event)
{
    recorder *r = context;
    if (r->n == 0)
        r->search = event->search, r->same_search = true;
    r->same_search = r->same_search && event->search == r->search;
    if (r->n == MAX_EVENTS)
        return;
    r->kind[r->n] = event->kind;
    r->row[r->n] = event->row;
    r->iteration[r->n] = event->iteration.iteration;
    r->round[r->n] = event->round;
    r->rows_then[r->n] = event->search->n_rows;
    r->n++;
}

static int count_kind(const recorder *r, pl_search_event_kind kind)
{
    int n = 0;
    for (int e = 0; e < r->n; e++)
        n += r->kind[e] == kind;
    return n;
}

static pl_search *run(fixture *f, recorder *r, const volatile sig_atomic_t *interrupt)
{
    pl_error err;
    pl_error_init(&err, "inception-small.json");
    if (r)
        memset(r, 0, sizeof *r);
    pl_search *s = pl_search_run(f->g, f->c, &f->m, &f->o, r ? record : NULL, r, interrupt,
                                 &err);
    if (!s)
        fprintf(stderr, "\n    search: %s", err.text);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    return s;
}

static bool none_measured(const pl_search *s)
{
    bool none = s->head_to_head_rounds == 0 && s->agent_measured == 0;
    for (int r = 0; r < s->n_rows; r++)
        none = none && s->rows[r].measured == 0 && !s->rows[r].head_to_head;
    for (int d = 0; d < PL_MAX_DEVICES; d++)
        none = none && s->measured_busy[d] == 0;
    return none;
}

/* Simulating only: a row per baseline in baseline.h's order, then the agent's; the best
 * baseline and the chosen row are the fastest simulated of those that fit. */
static void test_simulated(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    pl_search *s = run(&f, NULL, NULL);
    CU_ASSERT_FALSE(s->interrupted);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->agent);
    CU_ASSERT_EQUAL(pl_agent_iterations(s->agent), 3);
    CU_ASSERT(s->bound > 0);
    CU_ASSERT_FATAL(s->n_rows > PL_BASELINE_COUNT);
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        const pl_search_row *row = &s->rows[b];
        CU_ASSERT(row->baseline);
        CU_ASSERT_STRING_EQUAL(row->name, pl_baseline_name((pl_baseline)b));
        CU_ASSERT((row->plan != NULL) == (row->failure[0] == '\0'));
        CU_ASSERT(!row->plan || row->sim.step_seconds > 0);
    }
    for (int r = PL_BASELINE_COUNT; r < s->n_rows; r++) {
        CU_ASSERT_FALSE(s->rows[r].baseline);
        CU_ASSERT_EQUAL(strncmp(s->rows[r].name, "agent #", 7), 0);
    }
    CU_ASSERT(none_measured(s));
    CU_ASSERT_FATAL(s->best_baseline >= 0 && s->chosen >= 0);
    const pl_search_row *base = &s->rows[s->best_baseline], *chosen = &s->rows[s->chosen];
    CU_ASSERT(base->baseline && base->fits);
    CU_ASSERT(chosen->plan && chosen->fits);
    for (int r = 0; r < s->n_rows; r++) {
        const pl_search_row *row = &s->rows[r];
        if (!row->plan || !row->fits)
            continue;
        CU_ASSERT(row->sim.step_seconds >= chosen->sim.step_seconds);
        if (row->baseline)
            CU_ASSERT(row->sim.step_seconds >= base->sim.step_seconds);
    }
    pl_search_free(s);
    fixture_free(&f);
}

/* Started, each baseline as its row is added, the baselines done, each iteration in turn,
 * the agent done: nothing measured, every event pointing at the result. */
static void test_progress(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    recorder r;
    pl_search *s = run(&f, &r, NULL);
    CU_ASSERT(r.same_search && r.search == s);
    int expected = 1 + PL_BASELINE_COUNT + 1 + 3 + 1;
    CU_ASSERT_EQUAL_FATAL(r.n, expected);
    CU_ASSERT_EQUAL(r.kind[0], PL_SEARCH_STARTED);
    CU_ASSERT_EQUAL(r.rows_then[0], 0);
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        CU_ASSERT_EQUAL(r.kind[1 + b], PL_SEARCH_BASELINE);
        CU_ASSERT_EQUAL(r.row[1 + b], b);
        CU_ASSERT_EQUAL(r.rows_then[1 + b], b + 1);
    }
    int e = 1 + PL_BASELINE_COUNT;
    CU_ASSERT_EQUAL(r.kind[e], PL_SEARCH_BASELINES_DONE);
    for (int i = 1; i <= 3; i++) {
        CU_ASSERT_EQUAL(r.kind[e + i], PL_SEARCH_ITERATION);
        CU_ASSERT_EQUAL(r.iteration[e + i], i);
    }
    CU_ASSERT_EQUAL(r.kind[expected - 1], PL_SEARCH_AGENT_DONE);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_MEASURED), 0);
    pl_search_free(s);
    fixture_free(&f);
}

/* Interrupted before it starts, a measured search places baselines until one fits (the
 * first, single, does), lets the agent iterate not once, measures nothing and returns
 * that plan. */
static void test_interrupted_at_once(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    f.o.simulate_only = false;
    f.o.budget = 60;
    volatile sig_atomic_t interrupt = 1;
    recorder r;
    pl_search *s = run(&f, &r, &interrupt);
    CU_ASSERT(s->interrupted);
    CU_ASSERT_EQUAL(pl_agent_iterations(s->agent), 0);
    int baselines = 0;
    for (int row = 0; row < s->n_rows; row++)
        baselines += s->rows[row].baseline;
    CU_ASSERT_EQUAL(baselines, 1);
    CU_ASSERT_FATAL(s->chosen >= 0);
    CU_ASSERT(s->rows[s->chosen].plan && s->rows[s->chosen].fits);
    CU_ASSERT(none_measured(s));
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_ITERATION), 0);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_MEASURED), 0);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_HEAD_TO_HEAD), 0);
    CU_ASSERT_EQUAL(r.kind[r.n - 1], PL_SEARCH_AGENT_DONE);
    pl_search_free(s);
    fixture_free(&f);
}

/* Ops of a plan on device d. */
static int ops_on(const pl_plan *plan, int d)
{
    int n = 0;
    for (int o = 0; o < plan->n_ops; o++)
        n += plan->device[o] == d;
    return n;
}

/* Measured on the paced cluster, within its budget: the three fastest baselines by
 * simulation measured, then the best measured baseline and the agent's plans head to head
 * for every round; the chosen one the fastest of them, its busy devices measured. */
static void test_measured(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    f.o.simulate_only = false;
    f.o.budget = 30; /* a budget the measurements never reach: they are all asserted */
    f.o.iterations = 2;
    f.o.measure_steps = 1;
    recorder r;
    pl_search *s = run(&f, &r, NULL);
    CU_ASSERT_FALSE(s->interrupted);
    int fitting = 0, measured = 0;
    for (int b = 0; b < PL_BASELINE_COUNT; b++) {
        fitting += s->rows[b].plan && s->rows[b].fits;
        measured += s->rows[b].measured > 0;
    }
    int expected = fitting < 3 ? fitting : 3;
    CU_ASSERT_EQUAL(measured, expected);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_MEASURED), expected);
    CU_ASSERT_FATAL(s->best_baseline >= 0);
    CU_ASSERT_FATAL(s->head_to_head_rounds >= 3 && s->head_to_head_rounds <= 9);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_HEAD_TO_HEAD), s->head_to_head_rounds);
    for (int e = 0, round = 0; e < r.n; e++)
        if (r.kind[e] == PL_SEARCH_HEAD_TO_HEAD)
            CU_ASSERT_EQUAL(r.round[e], ++round);
    /* the contenders: the best baseline and every agent's row that fits, no other */
    int contenders = 0;
    for (int row = 0; row < s->n_rows; row++) {
        const pl_search_row *it = &s->rows[row];
        bool contends = row == s->best_baseline || (!it->baseline && it->fits);
        CU_ASSERT_EQUAL(it->head_to_head, contends);
        if (contends) {
            contenders++;
            CU_ASSERT(it->measured > 0);
            CU_ASSERT_EQUAL(it->plan->provenance.measured_seconds, it->measured);
        }
    }
    CU_ASSERT(contenders >= 2);
    CU_ASSERT_FATAL(s->chosen >= 0);
    const pl_search_row *chosen = &s->rows[s->chosen];
    CU_ASSERT(chosen->head_to_head);
    for (int row = 0; row < s->n_rows; row++)
        if (s->rows[row].head_to_head)
            CU_ASSERT(s->rows[row].measured >= chosen->measured);
    for (int d = 0; d < f.c->n_devices; d++)
        if (ops_on(chosen->plan, d) > 0)
            CU_ASSERT(s->measured_busy[d] > 0);
    pl_search_free(s);
    fixture_free(&f);
}

/* Devices too small for any plan: every baseline fails or does not fit, and the result
 * says so with no chosen row (not an error). */
static void test_no_fit(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    pl_cluster_free(f.c);
    static const char tiny[] =
        "{\"format\": \"placer-cluster\", \"version\": 1, \"name\": \"tiny\", \"devices\": "
        "[{\"name\": \"a\", \"memory_bytes\": 4096}, {\"name\": \"b\", \"memory_bytes\": "
        "4096}], \"default_link\": {}}";
    f.c = pl_cluster_load_buffer(tiny, strlen(tiny), "tiny.json", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.c);
    f.o.iterations = 1;
    pl_search *s = run(&f, NULL, NULL);
    CU_ASSERT_EQUAL(s->chosen, -1);
    CU_ASSERT_EQUAL(s->best_baseline, -1);
    for (int r = 0; r < s->n_rows; r++)
        CU_ASSERT(!s->rows[r].plan || !s->rows[r].fits);
    pl_search_free(s);
    fixture_free(&f);
}

/* mlp on four devices of 10 MiB, which hold none of its layers with their state: megatron's
 * plan, which splits them, is the only baseline that fits; the agent, offered it, keeps to
 * plans that split or recompute, and the chosen row is megatron's or the agent's. */
static void test_only_megatron_fits(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    pl_cluster_free(f.c);
    pl_graph_free(f.g);
    f.g = pl_test_bundled_training_graph("mlp.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.g);
    f.c = pl_test_cluster((pl_test_devices){.n = 4, .memory = 10485760, .flops = 2e9,
                                             .link_bytes_per_second = 1e9});
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.c);
    pl_search *s = run(&f, NULL, NULL);
    CU_ASSERT_EQUAL(s->best_baseline, PL_BASELINE_MEGATRON);
    CU_ASSERT_FATAL(s->chosen >= 0 && s->chosen < s->n_rows);
    CU_ASSERT(s->chosen == PL_BASELINE_MEGATRON || !s->rows[s->chosen].baseline);
    CU_ASSERT(pl_plan_rewrites_graph(s->rows[s->chosen].plan));
    CU_ASSERT_FATAL(s->n_rows > PL_BASELINE_MEGATRON);
    CU_ASSERT(pl_plan_rewrites_graph(s->rows[PL_BASELINE_MEGATRON].plan));
    for (int r = 0; r < s->n_rows; r++)
        CU_ASSERT(r == PL_BASELINE_MEGATRON || !s->rows[r].baseline || !s->rows[r].plan ||
                  !s->rows[r].fits);
    CU_ASSERT_FATAL(s->agent && pl_agent_best_count(s->agent) > 0);
    for (int k = 0; k < pl_agent_best_count(s->agent); k++) {
        pl_plan *plan = pl_agent_best_plan(s->agent, k, NULL);
        CU_ASSERT(plan && pl_plan_rewrites_graph(plan));
        pl_plan_free(plan);
    }
    pl_search_free(s);
    fixture_free(&f);
}

/* Without replicas (the search's --no-replicas), data-parallel and hybrid are not tried and
 * megatron keeps to one replica, where it replicates the model otherwise. */
static void test_no_replicas(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    f.o.iterations = 1;
    pl_search *s = run(&f, NULL, NULL);
    CU_ASSERT_FATAL(s->n_rows > PL_BASELINE_MEGATRON);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->rows[PL_BASELINE_MEGATRON].plan);
    CU_ASSERT(s->rows[PL_BASELINE_MEGATRON].plan->replicas > 1);
    pl_search_free(s);
    f.o.no_replicas = true;
    s = run(&f, NULL, NULL);
    CU_ASSERT_FATAL(s->n_rows > PL_BASELINE_MEGATRON);
    CU_ASSERT_PTR_NULL(s->rows[PL_BASELINE_DATA_PARALLEL].plan);
    CU_ASSERT_PTR_NULL(s->rows[PL_BASELINE_HYBRID].plan);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s->rows[PL_BASELINE_MEGATRON].plan);
    CU_ASSERT_EQUAL(s->rows[PL_BASELINE_MEGATRON].plan->replicas, 1);
    pl_search_free(s);
    fixture_free(&f);
}

/* Options out of range and a checkpoint that is not there: NULL, and the error says what
 * and where. */
static void test_errors(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    pl_error err;
    f.o.iterations = 0; /* and no budget */
    pl_error_init(&err, "model.json");
    CU_ASSERT_PTR_NULL(pl_search_run(f.g, f.c, &f.m, &f.o, NULL, NULL, NULL, &err));
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.source, "model.json");
    CU_ASSERT_PTR_NULL(pl_search_run(f.g, f.c, &f.m, &f.o, NULL, NULL, NULL, NULL));
    f.o.iterations = 2;
    f.o.resume = "/nonexistent/placer-search.ckpt";
    pl_error_init(&err, "model.json");
    recorder r = {0};
    CU_ASSERT_PTR_NULL(pl_search_run(f.g, f.c, &f.m, &f.o, record, &r, NULL, &err));
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);
    CU_ASSERT_STRING_EQUAL(err.source, f.o.resume);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "cannot open"));
    CU_ASSERT_PTR_NULL(strstr(err.text, f.o.resume)); /* named once: as the source */
    CU_ASSERT_EQUAL(r.n, 0); /* read before anything started: no baseline placed */
    fixture_free(&f);
}

/* A checkpoint that cannot be saved (/dev/full: always a full disk) is told once and
 * kept in the result, which is whole: the plan chosen as without a checkpoint. */
static void test_checkpoint_not_saved(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    pl_search *plain = run(&f, NULL, NULL);
    f.o.checkpoint = "/dev/full";
    recorder r;
    pl_search *s = run(&f, &r, NULL);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_CHECKPOINT_FAILED), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s->checkpoint_failure, "/dev/full"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s->checkpoint_failure, "No space left on device"));
    CU_ASSERT_STRING_EQUAL(plain->checkpoint_failure, "");
    CU_ASSERT_EQUAL(s->chosen, plain->chosen);
    CU_ASSERT_TRUE(s->chosen >= 0);
    pl_search_free(s);
    pl_search_free(plain);
    fixture_free(&f);
}

/* A search saves its checkpoint; another resumes from it (told so) and goes on to its
 * iterations in all. */
static void test_resume(void)
{
    fixture f;
    fixture_init(&f, "paced-4.json");
    char path[] = "/tmp/placer-search-XXXXXX";
    int fd = mkstemp(path);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    f.o.iterations = 2;
    f.o.checkpoint = path;
    pl_search_free(run(&f, NULL, NULL));
    f.o.iterations = 3;
    f.o.resume = path;
    f.o.checkpoint = NULL;
    recorder r;
    pl_search *s = run(&f, &r, NULL);
    CU_ASSERT_EQUAL(pl_agent_iterations(s->agent), 3);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_RESUMED), 1);
    CU_ASSERT_EQUAL(count_kind(&r, PL_SEARCH_ITERATION), 1);
    pl_search_free(s);
    unlink(path);
    fixture_free(&f);
}

void pl_register_search_tests(void)
{
    static const pl_test_case cases[] = {
        {"simulated: every baseline a row, the fastest chosen", test_simulated},
        {"progress events in the protocol's order", test_progress},
        {"interrupted before the start: at once, with a plan", test_interrupted_at_once},
        {"measured: the head-to-head contenders, the fastest chosen", test_measured},
        {"no plan fits: a result without a chosen row", test_no_fit},
        {"only megatron's split plan fits: the agent's split or recompute too",
         test_only_megatron_fits},
        {"no replicas: megatron's plan of one", test_no_replicas},
        {"bad options and a missing checkpoint", test_errors},
        {"a saved checkpoint resumed", test_resume},
        {"a checkpoint not saved: told, the result whole", test_checkpoint_not_saved},
        {NULL, NULL}};
    pl_test_add_suite("search", cases);
}
