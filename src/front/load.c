/* The model loader's entry points and its top-level fields: format, batch size, inputs,
 * parameters, loss and optimiser. Nodes are in load_nodes.c, graph checks in
 * load_order.c. */
#include "load.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "load_impl.h"

static const char *const root_fields[] = {"format", "version", "name", "description",
                                          "batch_size", "inputs", "parameters", "nodes",
                                          "loss", "optimizer", "batch_statistics", NULL};

/* Reads `key` of `object` as a shape of at most `max_rank` positive dimensions, after
 * `lead` dimensions already in dims (the batch). Checks the element count against the
 * limit without overflowing. */
static bool read_shape(loader *L, const json_t *object, const char *key, int lead,
                       int max_rank, pl_tensor *t)
{
    json_t *shape;
    if (!pl_json_member(&L->r, object, key, JSON_ARRAY, true, &shape))
        return false;
    size_t back = pl_json_push_key(&L->r, key);
    size_t rank = json_array_size(shape);
    if (rank > (size_t)max_rank) {
        pl_json_fail(&L->r, "rank %zu is more than the limit of %d%s", rank, max_rank,
                     lead ? " per sample (the batch adds one)" : "");
        return false;
    }
    int64_t count = 1;
    for (int a = 0; a < lead; a++)
        count *= t->dims[a];
    for (size_t a = 0; a < rank; a++) {
        json_t *dim = json_array_get(shape, a);
        size_t at = pl_json_push_index(&L->r, a);
        if (!json_is_integer(dim))
            return pl_json_fail(&L->r, "expected a dimension (a positive integer), found %s",
                                pl_json_type_name(dim));
        json_int_t d = json_integer_value(dim);
        if (d <= 0 || d > PL_MAX_DIM)
            return pl_json_fail(&L->r, "dimension %lld must be between 1 and %lld",
                                (long long)d, (long long)PL_MAX_DIM);
        pl_json_pop(&L->r, at);
        if (count > PL_MAX_ELEMENTS / d)
            return pl_json_fail(&L->r, "the tensor has more elements than the limit of %lld "
                                "(2^31)", (long long)PL_MAX_ELEMENTS);
        count *= d;
        t->dims[lead + a] = d;
    }
    t->rank = lead + (int)rank;
    pl_json_pop(&L->r, back);
    return true;
}

static bool read_dtype(loader *L, const json_t *object, bool required, pl_dtype *dtype)
{
    const char *name = NULL;
    if (!pl_json_string(&L->r, object, "dtype", required, &name))
        return false;
    if (!name)
        return true;
    if (strcmp(name, "f32") == 0)
        *dtype = PL_F32;
    else if (strcmp(name, "i32") == 0)
        *dtype = PL_I32;
    else {
        size_t back = pl_json_push_key(&L->r, "dtype");
        pl_json_fail(&L->r, "unknown dtype \"%s\" (known: f32, i32)", name);
        pl_json_pop(&L->r, back);
        return false;
    }
    return true;
}

/* Runs `read_one` on each element of the array member `key`, pointer kept current. */
static bool for_each_element(loader *L, const json_t *root, const char *key,
                             pl_load_array *elements,
                             bool (*read_one)(loader *, const json_t *, int))
{
    json_t *array;
    if (!pl_json_member(&L->r, root, key, JSON_ARRAY, true, &array))
        return false;
    size_t back = pl_json_push_key(&L->r, key);
    for (size_t i = 0; i < elements->n; i++) {
        size_t at = pl_json_push_index(&L->r, i);
        json_t *element = pl_load_element(L, elements, i);
        bool ok = element && read_one(L, element, (int)i);
        json_decref(element);
        if (!ok)
            return false;
        pl_json_pop(&L->r, at);
    }
    pl_json_pop(&L->r, back);
    return true;
}

/* "batch_axis" (default 0): where the batch goes among the per-sample axes of "shape",
 * read into dims[1..] after the batch. */
static bool read_batch_axis(loader *L, const json_t *value, pl_tensor *tensor)
{
    int64_t axis = 0;
    if (!pl_json_integer(&L->r, value, "batch_axis", false, 0, tensor->rank - 1, &axis))
        return false;
    for (int a = 0; a < axis; a++)
        tensor->dims[a] = tensor->dims[a + 1];
    tensor->dims[axis] = L->graph->batch_size;
    tensor->batch_axis = (int)axis;
    return true;
}

static bool read_input(loader *L, const json_t *value, int index)
{
    static const char *const fields[] = {"name", "shape", "dtype", "role", "batch_axis", NULL};
    if (!pl_json_expect_object(&L->r, value, fields))
        return false;
    json_t *name;
    if (!pl_json_member(&L->r, value, "name", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(&L->r, "name");
    int t = pl_load_add_tensor(L, name, PL_TENSOR_INPUT, -1, index);
    pl_json_pop(&L->r, back);
    if (t < 0)
        return false;
    pl_tensor *tensor = &L->graph->tensors[t];
    tensor->dims[0] = L->graph->batch_size;
    if (!read_shape(L, value, "shape", 1, PL_MAX_RANK - 1, tensor) ||
        !read_dtype(L, value, true, &tensor->dtype) || !read_batch_axis(L, value, tensor))
        return false;
    const char *role;
    if (!pl_json_string(&L->r, value, "role", true, &role))
        return false;
    if (strcmp(role, "data") == 0)
        tensor->role = PL_ROLE_DATA;
    else if (strcmp(role, "label") == 0)
        tensor->role = PL_ROLE_LABEL;
    else {
        pl_json_push_key(&L->r, "role");
        return pl_json_fail(&L->r, "unknown role \"%s\" (known: data, label)", role);
    }
    return true;
}

static const struct {
    const char *name;
    pl_init_kind kind;
    const char *a, *b; /* its number fields, in pl_init.a and .b */
    bool seeded;
} init_kinds[] = {
    {"zeros", PL_INIT_ZEROS, NULL, NULL, false},
    {"ones", PL_INIT_ONES, NULL, NULL, false},
    {"constant", PL_INIT_CONSTANT, "value", NULL, false},
    {"uniform", PL_INIT_UNIFORM, "low", "high", true},
    {"normal", PL_INIT_NORMAL, "mean", "std", true},
    {"glorot_uniform", PL_INIT_GLOROT_UNIFORM, NULL, NULL, true},
    {"he_normal", PL_INIT_HE_NORMAL, NULL, NULL, true},
    {"values", PL_INIT_VALUES, NULL, NULL, false},
};

/* "values": one finite number per element of `tensor`, row-major (integers in range for
 * an i32 tensor), kept in the graph's arena. */
static bool read_values(loader *L, const json_t *init, const pl_tensor *tensor, pl_init *out)
{
    json_t *values;
    if (!pl_json_member(&L->r, init, "values", JSON_ARRAY, true, &values))
        return false;
    size_t back = pl_json_push_key(&L->r, "values");
    int64_t n = pl_tensor_elements(tensor);
    if ((int64_t)json_array_size(values) != n) {
        char shape[160];
        pl_shape_format(tensor, shape, sizeof shape);
        return pl_json_fail(&L->r, "%zu values for a tensor of shape %s (%lld elements)",
                            json_array_size(values), shape, (long long)n);
    }
    double *copy = pl_arena_alloc(&L->graph->arena, (size_t)(n ? n : 1) * sizeof *copy);
    if (!copy)
        return pl_json_fail(&L->r, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        json_t *v = json_array_get(values, (size_t)i);
        double x = json_is_number(v) ? json_number_value(v) : NAN;
        bool integral = json_is_integer(v) && x >= INT32_MIN && x <= INT32_MAX;
        if (tensor->dtype == PL_I32 ? !integral : !(fabs(x) <= FLT_MAX)) {
            pl_json_push_index(&L->r, (size_t)i);
            return pl_json_fail(&L->r, "expected %s, found %s", tensor->dtype == PL_I32 ?
                                "an integer in i32's range" : "a number in f32's range",
                                json_is_number(v) ? "one out of range" : pl_json_type_name(v));
        }
        copy[i] = x;
    }
    out->values = copy;
    pl_json_pop(&L->r, back);
    return true;
}

static bool read_init(loader *L, const json_t *init, const pl_tensor *tensor, pl_init *out)
{
    if (!json_is_object(init))
        return pl_json_fail(&L->r, "expected an object, found %s", pl_json_type_name(init));
    const char *kind;
    if (!pl_json_string(&L->r, init, "kind", true, &kind))
        return false;
    size_t k = 0, n = sizeof init_kinds / sizeof init_kinds[0];
    while (k < n && strcmp(init_kinds[k].name, kind) != 0)
        k++;
    if (k == n) {
        pl_json_push_key(&L->r, "kind");
        return pl_json_fail(&L->r, "unknown initialiser \"%s\" (known: zeros, ones, constant, "
                            "uniform, normal, glorot_uniform, he_normal, values)", kind);
    }
    if (tensor->dtype == PL_I32 && init_kinds[k].kind != PL_INIT_ZEROS &&
        init_kinds[k].kind != PL_INIT_ONES && init_kinds[k].kind != PL_INIT_CONSTANT &&
        init_kinds[k].kind != PL_INIT_VALUES) {
        pl_json_push_key(&L->r, "kind");
        return pl_json_fail(&L->r, "an i32 parameter takes zeros, ones, constant or values, "
                            "not \"%s\"", kind);
    }
    if (init_kinds[k].kind == PL_INIT_VALUES) {
        static const char *const value_fields[] = {"kind", "values", NULL};
        out->kind = PL_INIT_VALUES;
        return pl_json_expect_object(&L->r, init, value_fields) &&
               read_values(L, init, tensor, out);
    }
    const char *fields[] = {"kind", init_kinds[k].seeded ? "seed" : init_kinds[k].a,
                            init_kinds[k].seeded ? init_kinds[k].a : NULL, init_kinds[k].b,
                            NULL};
    if (!pl_json_expect_object(&L->r, init, fields))
        return false;
    out->kind = init_kinds[k].kind;
    const double big = 1e30;
    if (init_kinds[k].a && !pl_json_number(&L->r, init, init_kinds[k].a, true, -big, big, &out->a))
        return false;
    if (tensor->dtype == PL_I32 && out->kind == PL_INIT_CONSTANT &&
        !(out->a == floor(out->a) && out->a >= INT32_MIN && out->a <= INT32_MAX)) {
        pl_json_push_key(&L->r, "value");
        return pl_json_fail(&L->r, "%g is not an integer in i32's range", out->a);
    }
    if (init_kinds[k].b) {
        bool is_std = out->kind == PL_INIT_NORMAL;
        if (!pl_json_number(&L->r, init, init_kinds[k].b, true, is_std ? 0 : -big, big, &out->b))
            return false;
        if (out->kind == PL_INIT_UNIFORM && !(out->a < out->b)) {
            pl_json_push_key(&L->r, "high");
            return pl_json_fail(&L->r, "high %g must be greater than low %g", out->b, out->a);
        }
    }
    int64_t seed = 0;
    if (init_kinds[k].seeded &&
        !pl_json_integer(&L->r, init, "seed", true, 0, INT64_MAX, &seed))
        return false;
    out->seed = (uint64_t)seed;
    return true;
}

static bool read_parameter(loader *L, const json_t *value, int index)
{
    static const char *const fields[] = {"name", "shape", "dtype", "trainable", "init", NULL};
    if (!pl_json_expect_object(&L->r, value, fields))
        return false;
    json_t *name, *init, *trainable = json_object_get(value, "trainable");
    if (!pl_json_member(&L->r, value, "name", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(&L->r, "name");
    int t = pl_load_add_tensor(L, name, PL_TENSOR_PARAM, -1, index);
    pl_json_pop(&L->r, back);
    if (t < 0)
        return false;
    pl_tensor *tensor = &L->graph->tensors[t];
    tensor->dtype = PL_F32;
    if (!read_shape(L, value, "shape", 0, PL_MAX_RANK, tensor) ||
        !read_dtype(L, value, false, &tensor->dtype))
        return false;
    if (trainable && !json_is_boolean(trainable)) {
        pl_json_push_key(&L->r, "trainable");
        return pl_json_fail(&L->r, "expected true or false, found %s",
                            pl_json_type_name(trainable));
    }
    tensor->frozen = trainable && json_is_false(trainable);
    if (tensor->dtype != PL_F32 && !tensor->frozen) {
        pl_json_push_key(&L->r, "dtype");
        return pl_json_fail(&L->r, "a trained parameter must be f32 (an i32 one needs "
                            "\"trainable\": false)");
    }
    if (!pl_json_member(&L->r, value, "init", JSON_OBJECT, true, &init))
        return false;
    pl_json_push_key(&L->r, "init");
    if (!read_init(L, init, tensor, &tensor->init))
        return false;
    pl_json_pop(&L->r, back);
    return true;
}

static bool read_optimizer(loader *L, const json_t *root)
{
    json_t *opt;
    if (!pl_json_member(&L->r, root, "optimizer", JSON_OBJECT, true, &opt))
        return false;
    pl_json_push_key(&L->r, "optimizer");
    const char *kind;
    if (!pl_json_string(&L->r, opt, "kind", true, &kind))
        return false;
    pl_optimizer *o = &L->graph->optimizer;
    *o = (pl_optimizer){.momentum = 0, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8};
    static const char *const sgd_fields[] = {"kind", "lr", "momentum", "weight_decay", NULL};
    static const char *const adam_fields[] = {"kind", "lr", "beta1", "beta2", "eps",
                                              "weight_decay", NULL};
    if (strcmp(kind, "sgd") == 0) {
        o->kind = PL_OPT_SGD;
        if (!pl_json_expect_object(&L->r, opt, sgd_fields) ||
            !pl_json_number(&L->r, opt, "momentum", false, 0, 0.999999, &o->momentum))
            return false;
    } else if (strcmp(kind, "adam") == 0) {
        o->kind = PL_OPT_ADAM;
        if (!pl_json_expect_object(&L->r, opt, adam_fields) ||
            !pl_json_number(&L->r, opt, "beta1", false, 0, 0.999999, &o->beta1) ||
            !pl_json_number(&L->r, opt, "beta2", false, 0, 0.999999, &o->beta2) ||
            !pl_json_number(&L->r, opt, "eps", false, 1e-30, 1, &o->eps))
            return false;
    } else {
        pl_json_push_key(&L->r, "kind");
        return pl_json_fail(&L->r, "unknown optimizer \"%s\" (known: sgd, adam)", kind);
    }
    if (!pl_json_number(&L->r, opt, "lr", true, 1e-12, 1e6, &o->lr) ||
        !pl_json_number(&L->r, opt, "weight_decay", false, 0, 1e6, &o->weight_decay))
        return false;
    pl_json_pop(&L->r, 0);
    return true;
}

static bool read_header(loader *L, const json_t *root)
{
    if (!pl_json_check_header(&L->r, root, "model", "placer-model", PL_MODEL_FORMAT_VERSION))
        return false;
    /* The version is checked before the fields, so that a newer file says so. */
    if (!pl_json_expect_object(&L->r, root, root_fields))
        return false;
    const char *name, *description = "";
    int64_t batch;
    json_t *name_value;
    if (!pl_json_member(&L->r, root, "name", JSON_STRING, true, &name_value))
        return false;
    pl_json_push_key(&L->r, "name");
    if (!pl_json_check_name(&L->r, name_value, "model"))
        return false;
    pl_json_pop(&L->r, 0);
    name = json_string_value(name_value);
    if (!pl_json_string(&L->r, root, "description", false, &description) ||
        !pl_json_integer(&L->r, root, "batch_size", true, 1, PL_MAX_DIM, &batch))
        return false;
    pl_graph *g = L->graph;
    g->name = pl_arena_strndup(&g->arena, name, strlen(name));
    g->description = pl_arena_strndup(&g->arena, description, strlen(description));
    g->batch_size = (int)batch;
    if (!g->name || !g->description) {
        pl_error_set(L->r.err, PL_ENOMEM, NULL, "out of memory");
        return false;
    }
    return true;
}

/* "per_step" (the default) or "per_micro_batch": graph.h, pl_batch_statistics. */
static bool read_batch_statistics(loader *L, const json_t *root)
{
    const char *value = "per_step";
    if (!pl_json_string(&L->r, root, "batch_statistics", false, &value))
        return false;
    if (strcmp(value, "per_step") == 0)
        L->graph->batch_statistics = PL_BATCH_STATISTICS_PER_STEP;
    else if (strcmp(value, "per_micro_batch") == 0)
        L->graph->batch_statistics = PL_BATCH_STATISTICS_PER_MICRO_BATCH;
    else {
        pl_json_push_key(&L->r, "batch_statistics");
        return pl_json_fail(&L->r, "unknown batch statistics \"%s\" (known: per_step, "
                            "per_micro_batch)", value);
    }
    return true;
}

static bool check_loss(loader *L, const json_t *root)
{
    json_t *loss_value;
    if (!pl_json_member(&L->r, root, "loss", JSON_STRING, true, &loss_value))
        return false;
    pl_json_push_key(&L->r, "loss");
    const char *name = json_string_value(loss_value);
    int t = pl_strmap_get(&L->tensor_names, name);
    if (t < 0)
        return pl_json_fail(&L->r, "tensor \"%s\" is not defined", name);
    const pl_tensor *loss = &L->graph->tensors[t];
    if (loss->kind != PL_TENSOR_ACTIVATION)
        return pl_json_fail(&L->r, "the loss \"%s\" must be computed by a node, not be %s",
                            name, loss->kind == PL_TENSOR_INPUT ? "an input" : "a parameter");
    if (loss->rank != 0 || loss->dtype != PL_F32) {
        char shape[96];
        pl_shape_format(loss, shape, sizeof shape);
        return pl_json_fail(&L->r, "the loss \"%s\" must be an f32 scalar [], but it is %s %s",
                            name, pl_dtype_name(loss->dtype), shape);
    }
    L->graph->loss = t;
    pl_json_pop(&L->r, 0);
    return true;
}

/* A JSON value's hash, by its content: an array's elements in order, an object's members
 * in any order (their hashes summed, so no sorting), numbers by value. */
static uint64_t value_hash(const json_t *v);

static uint64_t array_hash_begin(void)
{
    return pl_hash_bytes(PL_HASH_INIT, &(int){JSON_ARRAY}, sizeof(int));
}

static uint64_t array_hash_add(uint64_t h, const json_t *element)
{
    uint64_t e = value_hash(element);
    return pl_hash_bytes(h, &e, sizeof e);
}

static uint64_t value_hash(const json_t *v)
{
    uint64_t h = pl_hash_bytes(PL_HASH_INIT, &(int){json_typeof(v)}, sizeof(int));
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        json_t *member;
        uint64_t sum = 0;
        json_object_foreach((json_t *)v, key, member) {
            uint64_t m = value_hash(member);
            sum += pl_hash_bytes(m, key, strlen(key));
        }
        return pl_hash_bytes(h, &sum, sizeof sum);
    }
    case JSON_ARRAY:
        for (size_t i = 0; i < json_array_size(v); i++)
            h = array_hash_add(h, json_array_get(v, i));
        return h;
    case JSON_STRING:
        return pl_hash_bytes(h, json_string_value(v), json_string_length(v));
    case JSON_INTEGER: {
        json_int_t n = json_integer_value(v);
        return pl_hash_bytes(h, &n, sizeof n);
    }
    case JSON_REAL: {
        double x = json_real_value(v);
        return pl_hash_bytes(h, &x, sizeof x);
    }
    default: /* true, false, null: the type says it all */
        return h;
    }
}

json_t *pl_load_element(loader *L, pl_load_array *array, size_t i)
{
    json_t *element = array->tree ? json_incref(json_array_get(array->tree, i))
                                  : pl_json_outline_element(L->outline, array->outlined, i);
    if (element)
        array->hash = array_hash_add(array->hash, element);
    else
        L->unparsed = true;
    return element;
}

/* The model's identity, which checkpoints and plans carry: the hash of its document's
 * content (value_hash) without the fields that only describe it ("name",
 * "description"). The arrays read element by element bring their own hashes.
 * Re-indenting the file, reordering its keys or rewording its description keeps the
 * hash; changing an op, a shape or a setting does not. */
static uint64_t content_hash(const loader *L, const json_t *root)
{
    const char *key;
    json_t *member;
    uint64_t sum = 0;
    json_object_foreach((json_t *)root, key, member) {
        uint64_t h = strcmp(key, "inputs") == 0       ? L->inputs.hash
                     : strcmp(key, "parameters") == 0 ? L->parameters.hash
                     : strcmp(key, "nodes") == 0      ? L->nodes.hash
                                                      : value_hash(member);
        if (strcmp(key, "name") != 0 && strcmp(key, "description") != 0)
            sum += pl_hash_bytes(h, key, strlen(key));
    }
    return pl_hash_bytes(PL_HASH_INIT, &sum, sizeof sum);
}

static const char *const element_arrays[] = {"inputs", "parameters", "nodes", NULL};

/* The array member `key` of root, from the outline when it has it, else from the tree
 * (n is 0 when the member is absent or no array: the loader says so). */
static pl_load_array element_source(const pl_json_outline *outline, const json_t *root,
                                    const char *key)
{
    pl_load_array array = {.hash = array_hash_begin()};
    array.outlined = outline ? pl_json_outline_find(outline, key) : NULL;
    if (array.outlined) {
        array.n = array.outlined->n;
    } else {
        array.tree = json_object_get(root, key);
        array.n = json_array_size(array.tree); /* 0 for no array */
    }
    return array;
}

/* Loads the model whose root is `root`, its big arrays read from `outline` where it has
 * them. NULL with *unparsed set when an outlined element did not parse. */
static pl_graph *load_root(const json_t *root, const pl_json_outline *outline, bool *unparsed,
                           pl_error *err)
{
    loader L = {.outline = outline};
    pl_json_reader_init(&L.r, err);
    L.inputs = element_source(outline, root, "inputs");
    L.parameters = element_source(outline, root, "parameters");
    L.nodes = element_source(outline, root, "nodes");
    L.graph = calloc(1, sizeof *L.graph);
    if (!L.graph) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    L.graph->loss = -1;
    bool ok = read_header(&L, root) &&
              for_each_element(&L, root, "inputs", &L.inputs, read_input) &&
              for_each_element(&L, root, "parameters", &L.parameters, read_parameter) &&
              pl_load_nodes(&L, root) && pl_load_resolve_inputs(&L) && pl_load_sort(&L) &&
              pl_load_infer_shapes(&L) && check_loss(&L, root) && read_optimizer(&L, root) &&
              read_batch_statistics(&L, root);
    pl_strmap_release(&L.tensor_names);
    pl_strmap_release(&L.op_names);
    free(L.def_node);
    free(L.def_slot);
    free(L.pending);
    pl_arena_release(&L.scratch);
    *unparsed = L.unparsed;
    if (!ok) {
        if (!L.unparsed)
            pl_error_set(err, PL_EINTERNAL, NULL, "the loader failed without saying why");
        pl_graph_free(L.graph);
        return NULL;
    }
    L.graph->hash = content_hash(&L, root);
    return L.graph;
}

/* Whether every outlined element parses: a document that the loader found wrong in its
 * meaning may still be wrong in its syntax further on, which the parser reports first. */
static bool outline_parses(const pl_json_outline *outline)
{
    for (int a = 0; a < outline->n_arrays; a++)
        for (size_t i = 0; i < outline->arrays[a].n; i++) {
            json_t *element = pl_json_outline_element(outline, &outline->arrays[a], i);
            if (!element)
                return false;
            json_decref(element);
        }
    return true;
}

/* Whether an array of the outline has more than `limit` elements. The outline counts
 * every element its commas separate, so it never counts fewer than the raw scan of
 * pl_json_count_member_elements: within the limit here, that scan is within it too. */
static bool outline_over_limit(const pl_json_outline *outline, size_t limit)
{
    for (int a = 0; a < outline->n_arrays; a++)
        if (outline->arrays[a].n > limit)
            return true;
    return false;
}

/* The counts of nodes, inputs and parameters, checked on the raw text: the parser's tree
 * of an oversize model would cost gigabytes and tens of seconds before the loader could
 * refuse it (pl_load_nodes checks the count again). A model has no more inputs or
 * parameters than nodes could read, so one limit serves all three. */
static bool within_limits(const char *data, size_t size, size_t max_nodes, pl_error *err)
{
    static const char *const arrays[] = {"nodes", "inputs", "parameters"};
    for (size_t a = 0; a < sizeof arrays / sizeof *arrays; a++)
        if (pl_json_count_member_elements(data, size, arrays[a], max_nodes) > max_nodes) {
            char pointer[16];
            snprintf(pointer, sizeof pointer, "/%s", arrays[a]);
            pl_error_set(err, PL_EINPUT, pointer, "more %s than the limit of %zu", arrays[a],
                         max_nodes);
            return false;
        }
    return true;
}

/* Loads the model from its outline: its big arrays parsed one element at a time, so that
 * the parsed tree of the whole document never exists. Returns false when the document
 * must be parsed whole instead (json_outline.h): not outlined, over the limits, or not
 * all of it parses. */
static bool load_outlined(const char *data, size_t size, size_t max_nodes, pl_graph **graph,
                          pl_error *err)
{
    pl_json_outline outline;
    if (!pl_json_outline_make(&outline, data, size, element_arrays))
        return false;
    if (outline_over_limit(&outline, max_nodes)) {
        pl_json_outline_release(&outline);
        return false;
    }
    if (pl_json_check_text(data, size, err) != PL_OK) { /* the parser's first checks */
        pl_json_outline_release(&outline);
        *graph = NULL;
        return true;
    }
    pl_error kept = err ? *err : (pl_error){0};
    bool unparsed;
    *graph = load_root(outline.root, &outline, &unparsed, err);
    bool done = !unparsed && (*graph || outline_parses(&outline));
    pl_json_outline_release(&outline);
    if (!done && err)
        *err = kept; /* the whole document's parse records its own error */
    return done;
}

/* Parses and loads a model's text: from its outline when it has one, else parsed whole,
 * its counts checked first (within_limits). Either way the first error is the one the
 * whole parse would find first. */
static pl_graph *load_text(const char *data, size_t size, size_t max_nodes, pl_error *err)
{
    pl_graph *graph = NULL;
    if (load_outlined(data, size, max_nodes, &graph, err) ||
        !within_limits(data, size, max_nodes, err))
        return graph;
    json_t *root = pl_json_parse_buffer(data, size, err);
    if (!root)
        return NULL;
    bool unparsed;
    graph = load_root(root, NULL, &unparsed, err);
    json_decref(root);
    return graph;
}

pl_graph *pl_graph_load_file(const char *path, pl_error *err)
{
    pl_error_init(err, path);
    size_t size;
    char *data = pl_json_read_file(path, PL_MODEL_MAX_BYTES, &size, err);
    pl_graph *graph = data ? load_text(data, size, PL_MAX_OPS, err) : NULL;
    free(data);
    return graph;
}

pl_graph *pl_graph_load_buffer(const char *data, size_t size, const char *source,
                               pl_error *err)
{
    pl_error_init(err, source);
    return load_text(data, size, PL_MAX_OPS, err);
}
