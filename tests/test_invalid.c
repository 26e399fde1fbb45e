/* Bad-input cases as data: each folder of tests/invalid holds an input and `expected`, the
 * one-line message its loader must give, with the input written by its file name. The
 * input is one of
 * - `model.json` (a file, a directory, or nothing), `cluster.json`;
 * - `plan.json`: a plan for graphs/small/mlp-small.json on graphs/clusters/paced-4.json;
 * - `profile.json`: a cached calibration profile, read and then checked for this machine
 *   and paced-4's thread counts (pl_profile_check);
 * - `checkpoint.ckpt`: a training checkpoint of mlp-small's training graph;
 * - `agent.ckpt`: a search checkpoint of mlp-small on paced-4 with agent_options() below;
 * - `weights.bin`: a weights file (tensor file) loaded into mlp-small's training graph.
 * A binary case may instead hold `checkpoint.edit`, `agent.edit` or `weights.edit`: damage
 * done to a real file the library writes here (pristine_training, pristine_agent,
 * pristine_weights: mlp-small's initial weights), one edit a
 * line ('#' starts a comment; OFFSET counts from the end when negative):
 *   set OFFSET TYPE VALUE   TYPE one of u8 i32 u32 i64 u64 f32 f64; VALUE may be nan, inf
 *   write OFFSET TEXT       overwrite bytes with TEXT (the rest of the line)
 *   truncate LENGTH         keep LENGTH bytes (negative: drop that many from the end)
 *   append TEXT             add TEXT at the end
 *   copy OFFSET LENGTH      add a copy of LENGTH bytes from OFFSET at the end
 * The layouts are in src/back/run/checkpoint.h and policy/agent_checkpoint.c;
 * PLACER_PRISTINE_DIR=DIR makes this suite write the pristine files there, to look at when
 * writing a case (tests/invalid/README.md lists the offsets). Adding a case needs no code. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "checkpoint.h"
#include "cluster.h"
#include "load.h"
#include "plan.h"
#include "profile.h"
#include "session.h"
#include "suites.h"
#include "test_util.h"
#include "weights.h"

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    bool ok = fgets(buf, (int)cap, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

/* A plan case: checked against the small MLP on the paced 4-device cluster. */
static pl_plan *load_plan(const char *path, pl_error *err)
{
    char model[4096], cluster[4096];
    snprintf(model, sizeof model, "%s/graphs/small/mlp-small.json", pl_test_srcdir());
    snprintf(cluster, sizeof cluster, "%s/graphs/clusters/paced-4.json", pl_test_srcdir());
    pl_graph *g = pl_graph_load_file(model, err);
    pl_cluster *c = pl_cluster_load_file(cluster, err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    pl_plan *plan = pl_plan_load_file(path, g, c, err);
    pl_cluster_free(c);
    pl_graph_free(g);
    return plan;
}

/* ---- checkpoints: pristine ones written by the library, damaged by a case's edits ------- */

static pl_agent_options agent_options(void)
{
    pl_agent_options o;
    pl_agent_options_default(&o);
    o.seed = 5, o.samples = 4, o.groups = 2, o.hidden = 4, o.rounds = 1, o.threads = 1;
    o.refine_every = 2, o.refine_proposals = 8, o.imitation_steps = 2;
    return o;
}

static pl_cost_model agent_costs(void)
{
    return pl_test_costs((pl_op_cost){2e-6, 1e-9, 0, 1, 0, 0}, 5e-6, 1e-10, 1e-6);
}

/* The fixtures every checkpoint case is read against: mlp-small's training graph, paced-4. */
typedef struct fixture {
    pl_graph *graph;
    pl_cluster *cluster;
    pl_cost_model costs;
    char training[64], agent[64], weights[64]; /* the pristine files */
} fixture;

static bool slurp(const char *path, unsigned char **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    *data = malloc((size_t)n + 1);
    *size = *data ? fread(*data, 1, (size_t)n, f) : 0;
    fclose(f);
    return *data && *size == (size_t)n;
}

static void keep_pristine(const char *path, const char *name)
{
    const char *dir = getenv("PLACER_PRISTINE_DIR");
    unsigned char *data;
    size_t size;
    char to[4096];
    if (!dir || !*dir || !slurp(path, &data, &size))
        return;
    snprintf(to, sizeof to, "%s/%s", dir, name);
    FILE *f = fopen(to, "wb");
    if (f) {
        fwrite(data, 1, size, f);
        fclose(f);
    }
    free(data);
}

static void temp_path(char *buf, size_t cap, const char *what)
{
    snprintf(buf, cap, "/tmp/placer-%s-XXXXXX", what);
    int fd = mkstemp(buf);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
}

/* A training checkpoint of a fresh session, as if 3 steps and 12 samples were done. */
static void pristine_training(fixture *fx)
{
    temp_path(fx->training, sizeof fx->training, "ckpt");
    pl_session *s = pl_session_new(fx->graph, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    pl_train_position at = {.step = 3, .epoch = 0, .position = 12, .seed = 1};
    CU_ASSERT_EQUAL_FATAL(pl_checkpoint_write(fx->training, fx->graph, s, &at, NULL), PL_OK);
    pl_session_free(s);
    keep_pristine(fx->training, "checkpoint.ckpt");
}

/* A search checkpoint after 3 iterations (one refinement among them). */
static void pristine_agent(fixture *fx)
{
    temp_path(fx->agent, sizeof fx->agent, "agent");
    pl_agent_options o = agent_options();
    pl_agent *a = pl_agent_new(fx->graph, fx->cluster, &fx->costs, &o, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    for (int i = 0; i < 3; i++)
        CU_ASSERT_EQUAL(pl_agent_iterate(a, NULL, NULL), PL_OK);
    CU_ASSERT_EQUAL_FATAL(pl_agent_save(a, fx->agent, NULL), PL_OK);
    pl_agent_free(a);
    keep_pristine(fx->agent, "agent.ckpt");
}

/* Session buffers of mlp-small's training graph, for writing and reading weights. */
static void **session_buffers(const fixture *fx, pl_session *s)
{
    void **buffers = calloc((size_t)fx->graph->n_tensors, sizeof *buffers);
    for (int t = 0; buffers && t < fx->graph->n_tensors; t++)
        buffers[t] = pl_session_data(s, t);
    return buffers;
}

/* The initial weights of mlp-small (parameters only: it has no batch norm). */
static void pristine_weights(fixture *fx)
{
    temp_path(fx->weights, sizeof fx->weights, "weights");
    pl_session *s = pl_session_new(fx->graph, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    void **buffers = session_buffers(fx, s);
    CU_ASSERT_EQUAL_FATAL(pl_weights_save(fx->weights, fx->graph, buffers, NULL), PL_OK);
    free(buffers);
    pl_session_free(s);
    keep_pristine(fx->weights, "weights.bin");
}

static bool fixture_init(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->graph = pl_test_bundled_training_graph("small/mlp-small.json", 0);
    fx->cluster = pl_test_bundled_cluster("paced-4.json");
    fx->costs = agent_costs();
    if (!fx->graph || !fx->cluster)
        return false;
    pristine_training(fx);
    pristine_agent(fx);
    pristine_weights(fx);
    return true;
}

static void fixture_free(fixture *fx)
{
    unlink(fx->training);
    unlink(fx->agent);
    unlink(fx->weights);
    pl_cost_model_clear(&fx->costs);
    pl_cluster_free(fx->cluster);
    pl_graph_free(fx->graph);
}

/* OFFSET from the start, or from the end when negative; false outside the data. */
static bool place(long long offset, size_t size, size_t width, size_t *at)
{
    long long from = offset < 0 ? (long long)size + offset : offset;
    if (from < 0 || (size_t)from + width > size)
        return false;
    *at = (size_t)from;
    return true;
}

static bool set_value(unsigned char *data, size_t at, const char *type, const char *text)
{
    double real = strtod(text, NULL);
    long long whole = strtoll(text, NULL, 0);
    union {
        uint8_t u8;
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
    } v;
    size_t width;
    if (strcmp(type, "u8") == 0)
        v.u8 = (uint8_t)whole, width = 1;
    else if (strcmp(type, "i32") == 0)
        v.i32 = (int32_t)whole, width = 4;
    else if (strcmp(type, "u32") == 0)
        v.u32 = (uint32_t)whole, width = 4;
    else if (strcmp(type, "i64") == 0)
        v.i64 = whole, width = 8;
    else if (strcmp(type, "u64") == 0)
        v.u64 = strtoull(text, NULL, 0), width = 8;
    else if (strcmp(type, "f32") == 0)
        v.f32 = (float)real, width = 4;
    else if (strcmp(type, "f64") == 0)
        v.f64 = real, width = 8;
    else
        return false;
    memcpy(data + at, &v, width);
    return true;
}

static size_t type_width(const char *type)
{
    return type[1] == '8' ? 1 : strchr(type, '3') ? 4 : 8;
}

/* One edit line applied to data[0 .. *size) (capacity `cap`); false when it is malformed. */
static bool apply_edit(char *line, unsigned char *data, size_t *size, size_t cap)
{
    char verb[16], type[8];
    long long offset, length;
    int used = 0;
    size_t at;
    if (sscanf(line, "%15s", verb) != 1 || verb[0] == '#')
        return true;
    if (strcmp(verb, "set") == 0 && sscanf(line, "set %lld %7s %n", &offset, type, &used) == 2 &&
        used && place(offset, *size, type_width(type), &at))
        return set_value(data, at, type, line + used);
    if (strcmp(verb, "write") == 0 && sscanf(line, "write %lld %n", &offset, &used) == 1 && used &&
        place(offset, *size, strlen(line + used), &at)) {
        memcpy(data + at, line + used, strlen(line + used));
        return true;
    }
    if (strcmp(verb, "truncate") == 0 && sscanf(line, "truncate %lld", &length) == 1 &&
        place(length < 0 ? length : 0, *size, length < 0 ? 0 : (size_t)length, &at)) {
        *size = length < 0 ? at : (size_t)length;
        return true;
    }
    if (strcmp(verb, "append") == 0 && sscanf(line, "append %n", &used) == 0 && used &&
        *size + strlen(line + used) <= cap) {
        memcpy(data + *size, line + used, strlen(line + used));
        *size += strlen(line + used);
        return true;
    }
    if (strcmp(verb, "copy") == 0 && sscanf(line, "copy %lld %lld", &offset, &length) == 2 &&
        length > 0 && place(offset, *size, (size_t)length, &at) && *size + (size_t)length <= cap) {
        memmove(data + *size, data + at, (size_t)length);
        *size += (size_t)length;
        return true;
    }
    return false;
}

/* The pristine file with a case's edits, written to `out`; false with a note when an edit
 * does not parse. */
static bool damage(const char *pristine, const char *edits, const char *out)
{
    unsigned char *data, *grown;
    size_t size;
    if (!slurp(pristine, &data, &size))
        return false;
    size_t cap = 2 * size + 4096;
    if (!(grown = realloc(data, cap)))
        return free(data), false;
    data = grown;
    FILE *f = fopen(edits, "r");
    char line[1024];
    bool ok = f != NULL;
    while (ok && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!(ok = apply_edit(line, data, &size, cap)))
            fprintf(stderr, "\n    %s: cannot apply \"%s\"\n", edits, line);
    }
    if (f)
        fclose(f);
    FILE *o = ok ? fopen(out, "wb") : NULL;
    ok = o && fwrite(data, 1, size, o) == size;
    if (o)
        fclose(o);
    free(data);
    return ok;
}

/* ---- reading each kind of input ---------------------------------------------------------- */

enum kind { PLAN, CLUSTER, PROFILE, TRAINING, AGENT, WEIGHTS, MODEL, KINDS };
static const char *const input_names[KINDS] = {
    "plan.json", "cluster.json", "profile.json", "checkpoint.ckpt", "agent.ckpt",
    "weights.bin", "model.json"};
static const char *const edit_names[KINDS] = {
    [TRAINING] = "checkpoint.edit", [AGENT] = "agent.edit", [WEIGHTS] = "weights.edit"};
static const char *pristine_of(const fixture *fx, enum kind kind)
{
    return kind == TRAINING ? fx->training : kind == AGENT ? fx->agent : fx->weights;
}

static bool read_profile(const char *path, const fixture *fx, pl_error *err)
{
    pl_cost_model m;
    bool ok = pl_cost_model_read(&m, path, err) == PL_OK;
    if (ok) {
        ok = pl_profile_check(&m, fx->cluster, err) == PL_OK;
        pl_cost_model_clear(&m);
    }
    return ok;
}

static bool read_training(const char *path, const fixture *fx, pl_error *err)
{
    pl_session *s = pl_session_new(fx->graph, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    pl_train_position at;
    bool ok = pl_checkpoint_read(path, fx->graph, s, &at, err) == PL_OK;
    pl_session_free(s);
    return ok;
}

static bool read_agent(const char *path, const fixture *fx, pl_error *err)
{
    pl_agent_options o = agent_options();
    pl_agent *a = pl_agent_load(path, fx->graph, fx->cluster, &fx->costs, &o, err);
    pl_agent_free(a);
    return a != NULL;
}

static bool read_weights(const char *path, const fixture *fx, pl_error *err)
{
    pl_session *s = pl_session_new(fx->graph, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    void **buffers = session_buffers(fx, s);
    bool ok = pl_weights_load(path, fx->graph, buffers, err) == PL_OK;
    free(buffers);
    pl_session_free(s);
    return ok;
}

static bool read_input(enum kind kind, const char *path, const fixture *fx, pl_error *err)
{
    switch (kind) {
    case PLAN: {
        pl_plan *p = load_plan(path, err);
        pl_plan_free(p);
        return p != NULL;
    }
    case CLUSTER: {
        pl_cluster *c = pl_cluster_load_file(path, err);
        pl_cluster_free(c);
        return c != NULL;
    }
    case PROFILE: return read_profile(path, fx, err);
    case TRAINING: return read_training(path, fx, err);
    case AGENT: return read_agent(path, fx, err);
    case WEIGHTS: return read_weights(path, fx, err);
    default: {
        pl_graph *g = pl_graph_load_file(path, err);
        pl_graph_free(g);
        return g != NULL;
    }
    }
}

/* The case's kind and input path; an edited checkpoint is made at `input` first. */
static enum kind case_input(const char *dir, const fixture *fx, char *input, size_t cap, bool *made)
{
    char edits[4600];
    *made = false;
    for (int kind = 0; kind < MODEL; kind++) {
        snprintf(input, cap, "%s/%s", dir, input_names[kind]);
        if (access(input, F_OK) == 0)
            return (enum kind)kind;
        if (!edit_names[kind])
            continue;
        snprintf(edits, sizeof edits, "%s/%s", dir, edit_names[kind]);
        if (access(edits, F_OK) != 0)
            continue;
        /* the damaged file is named as the case's input would be, in a directory of its own */
        char tmpdir[] = "/tmp/placer-case-XXXXXX";
        CU_ASSERT_FATAL(mkdtemp(tmpdir) != NULL);
        snprintf(input, cap, "%s/%s", tmpdir, input_names[kind]);
        *made = true;
        CU_ASSERT(damage(pristine_of(fx, (enum kind)kind), edits, input));
        return (enum kind)kind;
    }
    snprintf(input, cap, "%s/%s", dir, input_names[MODEL]);
    return MODEL;
}

static void remove_made(const char *input)
{
    char dir[4600];
    snprintf(dir, sizeof dir, "%s", input);
    unlink(input);
    *strrchr(dir, '/') = '\0';
    rmdir(dir);
}

static void test_every_case(void)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tests/invalid", pl_test_srcdir());
    DIR *d = opendir(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(d);
    char *names[1024];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 1024)
        if (e->d_name[0] != '.' && strcmp(e->d_name, "README.md") != 0)
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, compare_names);
    fixture fx;
    CU_ASSERT_FATAL(fixture_init(&fx));
    int checked = 0;
    for (int i = 0; i < n; i++) {
        char case_dir[4400], input[4600], expected_path[4600], expected[2048], got[4096 + 1100];
        snprintf(case_dir, sizeof case_dir, "%s/%s", dir, names[i]);
        bool made;
        enum kind kind = case_input(case_dir, &fx, input, sizeof input, &made);
        snprintf(expected_path, sizeof expected_path, "%s/expected", case_dir);
        if (!read_line(expected_path, expected, sizeof expected)) {
            fprintf(stderr, "\n    %s: no expected message\n", names[i]);
            CU_FAIL("case without an expected message");
            continue;
        }
        pl_error err;
        pl_error_init(&err, input);
        CU_ASSERT_FALSE(read_input(kind, input, &fx, &err));
        CU_ASSERT_EQUAL(err.status, PL_EINPUT);
        if (made)
            remove_made(input);
        /* The message names the input as given; compare from its base name on. */
        pl_error_format(&err, got, sizeof got);
        const char *shown = strstr(got, input_names[kind]);
        if (err.status != PL_EINPUT || !shown || strcmp(shown, expected) != 0) {
            fprintf(stderr, "\n    case %s\n      got:      %s\n      expected: %s\n", names[i],
                    shown ? shown : got, expected);
            CU_FAIL("message differs");
        }
        checked++;
    }
    fixture_free(&fx);
    for (int i = 0; i < n; i++)
        free(names[i]);
    printf("(%d cases) ", checked);
    CU_ASSERT_TRUE(checked >= 40);
}

void pl_register_invalid_tests(void)
{
    static const pl_test_case cases[] = {
        {"every tests/invalid case gives its message", test_every_case},
        {NULL, NULL},
    };
    pl_test_add_suite("invalid", cases);
}
