/* Tensor files, weights files, frozen parameters and the values initialiser. Damaged
 * files as data are in tests/invalid (weights-* cases). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "autodiff.h"
#include "session.h"
#include "suites.h"
#include "tensor_file.h"
#include "test_util.h"
#include "weights.h"

static void temp_path(char *buf, size_t cap)
{
    snprintf(buf, cap, "/tmp/placer-weights-XXXXXX");
    int fd = mkstemp(buf);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
}

static void test_round_trip(void)
{
    float a[6] = {0, 1.5f, -2, INFINITY, -INFINITY, 3e-38f};
    int32_t b[3] = {7, -1, 2147483647};
    float scalar = 42;
    pl_named_tensor in[4] = {
        {.name = "layer1.weight", .dtype = PL_F32, .rank = 2, .dims = {2, 3}, .data = a},
        {.name = "ids", .dtype = PL_I32, .rank = 1, .dims = {3}, .data = b},
        {.name = "s", .dtype = PL_F32, .rank = 0, .data = &scalar},
        {.name = "empty", .dtype = PL_F32, .rank = 2, .dims = {0, 5}, .data = a},
    };
    char path[64];
    temp_path(path, sizeof path);
    mode_t mask = umask(027);
    CU_ASSERT_EQUAL_FATAL(pl_tensor_file_write(path, in, 4, NULL), PL_OK);
    umask(mask);
    struct stat st;
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0640); /* the umask's mode, as every output */
    pl_error err;
    pl_tensor_file *f = pl_tensor_file_read(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->n, 4);
    for (int k = 0; k < 4 && k < f->n; k++) {
        CU_ASSERT_STRING_EQUAL(f->tensors[k].name, in[k].name);
        CU_ASSERT_EQUAL(f->tensors[k].dtype, in[k].dtype);
        CU_ASSERT_EQUAL(f->tensors[k].rank, in[k].rank);
        CU_ASSERT_EQUAL(memcmp(f->tensors[k].dims, in[k].dims, sizeof in[k].dims), 0);
        CU_ASSERT_EQUAL(memcmp(f->tensors[k].data, in[k].data,
                               (size_t)pl_named_tensor_elements(&in[k]) * 4), 0);
    }
    CU_ASSERT_EQUAL(pl_tensor_file_find(f, "s"), 2);
    CU_ASSERT_EQUAL(pl_tensor_file_find(f, "t"), -1);
    pl_tensor_file_free(f);
    pl_tensor_file_free(NULL);
    /* the layout: magic line, header line, data at multiples of 64 */
    FILE *fp = fopen(path, "rb");
    char head[16] = "";
    CU_ASSERT_EQUAL(fread(head, 1, 15, fp), 15);
    CU_ASSERT_EQUAL(memcmp(head, "placer-tensors\n", 15), 0);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fclose(fp);
    CU_ASSERT_EQUAL(size % 64, 0); /* the empty tensor, aligned, ends the file */
    unlink(path);
}

static void test_writer_refuses(void)
{
    float x = 1;
    pl_named_tensor twice[2] = {{.name = "a", .data = &x}, {.name = "a", .data = &x}};
    pl_error err;
    pl_error_init(&err, "t");
    CU_ASSERT_EQUAL(pl_tensor_file_write("/tmp/placer-never-written", twice, 2, &err), PL_EINPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "\"a\" is given twice"));
    pl_named_tensor unnamed = {.name = "", .data = &x};
    pl_error_init(&err, "t");
    CU_ASSERT_EQUAL(pl_tensor_file_write("/tmp/placer-never-written", &unnamed, 1, &err),
                    PL_EINPUT);
    CU_ASSERT_EQUAL(access("/tmp/placer-never-written", F_OK), -1);
}

/* The error's line holds `message`. */
static void expect_message(const pl_error *err, const char *message)
{
    char line[2048];
    pl_error_format(err, line, sizeof line);
    if (!strstr(line, message))
        fprintf(stderr, "\n    expected \"%s\" in \"%s\"\n", message, line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, message));
}

/* A file's bytes (the header's JSON written by hand): what the reader says of it. */
static void expect_read_error(const char *bytes, size_t size, const char *message)
{
    char path[64];
    temp_path(path, sizeof path);
    FILE *fp = fopen(path, "wb");
    fwrite(bytes, 1, size, fp);
    fclose(fp);
    pl_error err;
    pl_tensor_file *f = pl_tensor_file_read(path, &err);
    CU_ASSERT_PTR_NULL(f);
    expect_message(&err, message);
    CU_ASSERT_EQUAL(err.status, PL_EINPUT);
    pl_tensor_file_free(f);
    unlink(path);
}

static void test_reader_errors(void)
{
    static const char overlap[] =
        "placer-tensors\n{\"format\":\"placer-tensors\",\"version\":1,\"tensors\":["
        "{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[32],\"offset\":0,\"bytes\":128,\"crc32\":0},"
        "{\"name\":\"b\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":64,\"bytes\":4,\"crc32\":0}]}\n";
    char buf[512] = {0};
    memcpy(buf, overlap, sizeof overlap - 1);
    size_t start = (sizeof overlap - 1 + 63) / 64 * 64;
    expect_read_error(buf, start + 128, "tensor \"b\" (offset 64) overlaps tensor \"a\"");
    expect_read_error("placer-tensors\n{\"format\":\"placer-tensors\",\"version\":1,", 52,
                      "truncated (reading the header line");
    expect_read_error("placer-tensors\n{\"format\":\"placer-tensors\" \"version\":1}\n", 56,
                      ":2:");
    expect_read_error("PK\x03\x04", 4, "not a placer tensor file");
    static const char shape[] =
        "placer-tensors\n{\"format\":\"placer-tensors\",\"version\":1,\"tensors\":["
        "{\"name\":\"a\",\"dtype\":\"f32\",\"shape\":[2,-1],\"offset\":0,\"bytes\":8,\"crc32\":0}]}\n";
    expect_read_error(shape, sizeof shape - 1, "/tensors/0/shape/1: expected a dimension");
    static const char dtype[] =
        "placer-tensors\n{\"format\":\"placer-tensors\",\"version\":1,\"tensors\":["
        "{\"name\":\"a\",\"dtype\":\"f64\",\"shape\":[2],\"offset\":0,\"bytes\":8,\"crc32\":0}]}\n";
    expect_read_error(dtype, sizeof dtype - 1, "/tensors/0/dtype: unknown dtype \"f64\"");
    static const char version[] =
        "placer-tensors\n{\"format\":\"placer-tensors\",\"version\":2,\"tensors\":[]}\n";
    expect_read_error(version, sizeof version - 1, "/version");
}

/* Opening reads the index alone: a tensor's damage shows only when that tensor is loaded,
 * and a tensor never loaded is never read. Values are the format's to hold, any float;
 * pl_named_tensor_check_finite names the first that is not a number. */
static void test_open_then_load(void)
{
    float good[3] = {1, 2, 3}, bad[4] = {0, 1, NAN, INFINITY};
    int32_t ids[2] = {-1, 2147483647};
    pl_named_tensor in[3] = {
        {.name = "good", .dtype = PL_F32, .rank = 1, .dims = {3}, .data = good},
        {.name = "bad", .dtype = PL_F32, .rank = 2, .dims = {2, 2}, .data = bad},
        {.name = "ids", .dtype = PL_I32, .rank = 1, .dims = {2}, .data = ids},
    };
    char path[64];
    temp_path(path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(pl_tensor_file_write(path, in, 3, NULL), PL_OK);
    FILE *fp = fopen(path, "r+b"); /* "good"'s first value damaged: its checksum fails */
    fseek(fp, -136, SEEK_END); /* good at 0, bad at 64, ids at 128 (8 bytes) of the data */
    fputc(0x55, fp);
    fclose(fp);
    pl_error err;
    pl_tensor_file *f = pl_tensor_file_open(path, &err);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->n, 3);
    for (int k = 0; k < f->n; k++)
        CU_ASSERT_PTR_NULL(f->tensors[k].data);
    CU_ASSERT_EQUAL(pl_tensor_file_load(f, 1, &err), PL_OK);
    CU_ASSERT_EQUAL(memcmp(f->tensors[1].data, bad, sizeof bad), 0);
    CU_ASSERT_PTR_NULL(f->tensors[0].data);
    CU_ASSERT_EQUAL(pl_named_tensor_check_finite(&f->tensors[1], &err), PL_EINPUT);
    expect_message(&err, "tensor \"bad\": value 2 is nan (expected a finite number)");
    pl_error_init(&err, NULL);
    CU_ASSERT_EQUAL(pl_tensor_file_load(f, 2, &err), PL_OK);
    CU_ASSERT_EQUAL(pl_named_tensor_check_finite(&f->tensors[2], &err), PL_OK);
    CU_ASSERT_EQUAL(pl_tensor_file_load(f, 0, &err), PL_EINPUT);
    expect_message(&err, "tensor \"good\": the checksum of its data is");
    CU_ASSERT_STRING_EQUAL(err.source, path);
    CU_ASSERT_PTR_NULL(f->tensors[0].data);
    pl_tensor_file_free(f);
    CU_ASSERT_PTR_NULL(pl_tensor_file_read(path, NULL)); /* reading all meets the damage */
    unlink(path);
}

/* ---- weights of a training graph ------------------------------------------------------- */

static void test_weights_round_trip_with_running_averages(void)
{
    pl_graph *g = pl_test_bundled_training_graph("small/resnet-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_session *s = pl_session_new(g, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    void **buffers = calloc((size_t)g->n_tensors, sizeof *buffers);
    int running = 0, params = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        buffers[t] = pl_session_data(s, t);
        running += strstr(g->tensors[t].name, "/running_") != NULL;
        params += g->tensors[t].kind == PL_TENSOR_PARAM;
    }
    CU_ASSERT(running > 0);
    char path[64];
    temp_path(path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(pl_weights_save(path, g, buffers, NULL), PL_OK);
    pl_tensor_file *f = pl_tensor_file_read(path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(f->n, running + params);
    int var = -1;
    for (int k = 0; k < f->n; k++)
        if (strstr(f->tensors[k].name, "/running_var") && var < 0)
            var = k;
    CU_ASSERT_FATAL(var >= 0);
    CU_ASSERT_EQUAL(((float *)f->tensors[var].data)[0], 1.0f); /* initialised to ones */
    pl_tensor_file_free(f);
    /* loading puts every weight back, running averages included */
    int t = pl_graph_find_tensor(g, "stem/bn/running_var");
    if (t < 0)
        for (t = 0; t < g->n_tensors && !strstr(g->tensors[t].name, "/running_var"); t++)
            ;
    ((float *)buffers[t])[0] = 5;
    int p = 0;
    while (g->tensors[p].kind != PL_TENSOR_PARAM)
        p++;
    float first = ((float *)buffers[p])[0];
    ((float *)buffers[p])[0] = 99;
    CU_ASSERT_EQUAL(pl_weights_load(path, g, buffers, NULL), PL_OK);
    CU_ASSERT_EQUAL(((float *)buffers[t])[0], 1.0f);
    CU_ASSERT_EQUAL(((float *)buffers[p])[0], first);
    unlink(path);
    free(buffers);
    pl_session_free(s);
    pl_graph_free(g);
}

/* Weights of mlp-small with one tensor changed: the error names it. */
static void expect_weights_error(pl_named_tensor *list, int n, const char *message)
{
    pl_graph *g = pl_test_bundled_training_graph("small/mlp-small.json", 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    pl_session *s = pl_session_new(g, 1, NULL);
    void **buffers = calloc((size_t)g->n_tensors, sizeof *buffers);
    for (int t = 0; t < g->n_tensors; t++)
        buffers[t] = pl_session_data(s, t);
    char path[64];
    temp_path(path, sizeof path);
    CU_ASSERT_EQUAL_FATAL(pl_tensor_file_write(path, list, n, NULL), PL_OK);
    float before = ((float *)buffers[pl_graph_find_tensor(g, "fc1/w")])[0];
    pl_error err;
    CU_ASSERT_EQUAL(pl_weights_load(path, g, buffers, &err), PL_EINPUT);
    expect_message(&err, message);
    CU_ASSERT_STRING_EQUAL(err.source, path);
    /* nothing changed */
    CU_ASSERT_EQUAL(((float *)buffers[pl_graph_find_tensor(g, "fc1/w")])[0], before);
    unlink(path);
    free(buffers);
    pl_session_free(s);
    pl_graph_free(g);
}

static void test_weights_mismatches(void)
{
    static float zeros[784 * 32];
    pl_named_tensor list[7] = {
        {.name = "fc1/w", .rank = 2, .dims = {784, 32}, .data = zeros},
        {.name = "fc1/b", .rank = 1, .dims = {32}, .data = zeros},
        {.name = "fc2/w", .rank = 2, .dims = {32, 16}, .data = zeros},
        {.name = "fc2/b", .rank = 1, .dims = {16}, .data = zeros},
        {.name = "logits/w", .rank = 2, .dims = {16, 10}, .data = zeros},
        {.name = "logits/b", .rank = 1, .dims = {10}, .data = zeros},
        {.name = "extra", .rank = 1, .dims = {10}, .data = zeros},
    };
    expect_weights_error(list, 7, "tensor \"extra\" is not a parameter or running average");
    expect_weights_error(list, 5, "the model's parameter \"logits/b\" is not in the file");
    list[2].dims[0] = 16, list[2].dims[1] = 32;
    expect_weights_error(list, 6, "tensor \"fc2/w\" has shape [16,32] in the file, [32,16] in "
                                  "the model");
    list[2].dims[0] = 32, list[2].dims[1] = 16;
    list[3].dtype = PL_I32;
    expect_weights_error(list, 6, "tensor \"fc2/b\" is i32 in the file, f32 in the model");
    list[3].dtype = PL_F32;
    list[0].name = "fc1/w/velocity"; /* optimiser state is no weight */
    expect_weights_error(list, 6, "tensor \"fc1/w/velocity\" is not a parameter");
}

/* ---- frozen parameters and the values initialiser -------------------------------------- */

static const char frozen_params[] =
    "{\"name\": \"w\", \"shape\": [3, 2], \"init\": {\"kind\": \"values\", "
    "\"values\": [1, 2, 3, 4, 5, 6]}},"
    "{\"name\": \"mask\", \"shape\": [2], \"trainable\": false, "
    "\"init\": {\"kind\": \"values\", \"values\": [0, -1.5]}},"
    "{\"name\": \"ids\", \"shape\": [2], \"dtype\": \"i32\", \"trainable\": false, "
    "\"init\": {\"kind\": \"values\", \"values\": [1, -7]}}";
static const char frozen_nodes[] =
    "{\"name\": \"mm\", \"op\": \"matmul\", \"inputs\": [\"x\", \"w\"], \"outputs\": [\"h\"]},"
    "{\"name\": \"masked\", \"op\": \"add\", \"inputs\": [\"h\", \"mask\"], \"outputs\": [\"z\"]},"
    "{\"name\": \"l\", \"op\": \"softmax_cross_entropy\", \"inputs\": [\"z\", \"y\"], "
    "\"outputs\": [\"loss\"]}";

static void test_frozen_parameter_is_never_trained(void)
{
    pl_graph *g = pl_test_training_model("[3]", frozen_params, frozen_nodes, "loss");
    int w = pl_graph_find_tensor(g, "w"), mask = pl_graph_find_tensor(g, "mask");
    int ids = pl_graph_find_tensor(g, "ids");
    CU_ASSERT(!g->tensors[w].frozen);
    CU_ASSERT(g->tensors[mask].frozen);
    CU_ASSERT(pl_autodiff_gradient_of(g, w) >= 0);
    CU_ASSERT_EQUAL(pl_autodiff_gradient_of(g, mask), -1);
    CU_ASSERT_EQUAL(pl_graph_find_tensor(g, "mask/grad"), -1);
    CU_ASSERT_EQUAL(pl_graph_find_tensor(g, "mask/velocity"), -1);
    for (int o = g->n_forward_ops; o < g->n_ops; o++)
        for (int i = 0; i < g->ops[o].n_inputs; i++)
            CU_ASSERT(g->ops[o].phase != PL_PHASE_UPDATE || g->ops[o].inputs[i] != mask);
    pl_session *s = pl_session_new(g, 1, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    const float *wv = pl_session_data(s, w), *mv = pl_session_data(s, mask);
    const int32_t *iv = pl_session_data(s, ids);
    CU_ASSERT_EQUAL(wv[0], 1.0f);
    CU_ASSERT_EQUAL(wv[5], 6.0f);
    CU_ASSERT_EQUAL(mv[1], -1.5f);
    CU_ASSERT_EQUAL(iv[0], 1);
    CU_ASSERT_EQUAL(iv[1], -7);
    float *x = pl_session_data(s, pl_graph_find_tensor(g, "x"));
    for (int i = 0; i < 12; i++)
        x[i] = (float)i / 7;
    float loss;
    for (int step = 1; step <= 3; step++)
        CU_ASSERT_EQUAL(pl_session_train_step(s, step, 1, &loss, NULL), PL_OK);
    CU_ASSERT_EQUAL(mv[0], 0.0f);
    CU_ASSERT_EQUAL(mv[1], -1.5f);
    CU_ASSERT(wv[3] != 4.0f); /* the trainable one learns */
    pl_session_free(s);
    pl_graph_free(g);
}

static void expect_load_error(const char *params, const char *message)
{
    pl_error err;
    pl_graph *g = pl_test_model("[3]", params, frozen_nodes, "loss", &err);
    CU_ASSERT_PTR_NULL(g);
    expect_message(&err, message);
    pl_graph_free(g);
}

static void test_values_and_trainable_errors(void)
{
    static const char mask[] = ",{\"name\": \"mask\", \"shape\": [2], \"init\": {\"kind\": \"zeros\"}}";
    char params[1024];
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"init\": {\"kind\": "
             "\"values\", \"values\": [1, 2, 3]}}%s", mask);
    expect_load_error(params, "/parameters/0/init/values: 3 values for a tensor of shape [3,2] "
                              "(6 elements)");
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"init\": {\"kind\": "
             "\"values\", \"values\": [1, 2, 3, 4, \"5\", 6]}}%s", mask);
    expect_load_error(params, "/parameters/0/init/values/4: expected a number in f32's range");
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"trainable\": 0, "
             "\"init\": {\"kind\": \"zeros\"}}%s", mask);
    expect_load_error(params, "/parameters/0/trainable: expected true or false");
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"dtype\": \"i32\", "
             "\"init\": {\"kind\": \"zeros\"}}%s", mask);
    expect_load_error(params, "/parameters/0/dtype: a trained parameter must be f32");
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"init\": {\"kind\": "
             "\"zeros\"}},{\"name\": \"mask\", \"shape\": [2], \"dtype\": \"i32\", \"trainable\": "
             "false, \"init\": {\"kind\": \"values\", \"values\": [1, 2.5]}}");
    expect_load_error(params, "/parameters/1/init/values/1: expected an integer in i32's range");
    snprintf(params, sizeof params, "{\"name\": \"w\", \"shape\": [3, 2], \"init\": {\"kind\": "
             "\"zeros\"}},{\"name\": \"mask\", \"shape\": [2], \"dtype\": \"i32\", \"trainable\": "
             "false, \"init\": {\"kind\": \"normal\", \"mean\": 0, \"std\": 1, \"seed\": 1}}");
    expect_load_error(params, "/parameters/1/init/kind: an i32 parameter takes zeros, ones, "
                              "constant or values");
}

void pl_register_weights_tests(void)
{
    static const pl_test_case cases[] = {
        {"tensor files round-trip f32, i32, scalars and empty tensors", test_round_trip},
        {"the writer refuses duplicate and empty names", test_writer_refuses},
        {"the reader names what is wrong", test_reader_errors},
        {"opening reads the index; loading reads one tensor", test_open_then_load},
        {"weights round-trip with batch-norm running averages",
         test_weights_round_trip_with_running_averages},
        {"weights that do not match the model are named", test_weights_mismatches},
        {"a frozen parameter gets no gradient, state or update", test_frozen_parameter_is_never_trained},
        {"values and trainable are checked", test_values_and_trainable_errors},
        {NULL, NULL},
    };
    pl_test_add_suite("weights", cases);
}
