/* The model loader's nodes: names, op kinds, arity, outputs and attributes. Inputs are
 * kept as names here and resolved once every output is known (load_order.c), since a
 * file may list nodes in any order. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "load_impl.h"

static bool out_of_memory(loader *L)
{
    pl_error_set(L->r.err, PL_ENOMEM, NULL, "out of memory");
    return false;
}

/* Where tensor t was defined, as a JSON pointer. */
static void definition_path(const loader *L, int t, char *buf, size_t cap)
{
    const pl_tensor *tensor = &L->graph->tensors[t];
    if (tensor->kind == PL_TENSOR_ACTIVATION)
        snprintf(buf, cap, "node \"%s\" at /nodes/%d/outputs/%d",
                 L->graph->ops[L->def_node[t]].name,
                 L->graph->ops[L->def_node[t]].source_index, L->def_slot[t]);
    else
        snprintf(buf, cap, "%s /%s/%d", tensor->kind == PL_TENSOR_INPUT ? "the input at"
                                                                       : "the parameter at",
                 tensor->kind == PL_TENSOR_INPUT ? "inputs" : "parameters", L->def_slot[t]);
}

int pl_load_add_tensor(loader *L, const json_t *name_value, pl_tensor_kind kind, int def_node,
                       int def_slot)
{
    if (!pl_json_check_name(&L->r, name_value, "tensor"))
        return -1;
    pl_graph *g = L->graph;
    if (g->n_tensors == L->tensor_cap) {
        int cap = L->tensor_cap ? 2 * L->tensor_cap : 256;
        pl_tensor *tensors = realloc(g->tensors, (size_t)cap * sizeof *tensors);
        int *nodes = realloc(L->def_node, (size_t)cap * sizeof *nodes);
        if (tensors)
            g->tensors = tensors;
        if (nodes)
            L->def_node = nodes;
        int *slots = realloc(L->def_slot, (size_t)cap * sizeof *slots);
        if (slots)
            L->def_slot = slots;
        if (!tensors || !nodes || !slots)
            return out_of_memory(L), -1;
        L->tensor_cap = cap;
    }
    const char *name = json_string_value(name_value);
    int t = g->n_tensors, existing;
    char *copy = pl_arena_strndup(&g->arena, name, json_string_length(name_value));
    if (!copy || !pl_strmap_put(&L->tensor_names, copy, t, &existing))
        return out_of_memory(L), -1;
    if (existing >= 0) {
        char where[PL_MAX_NAME + 64];
        definition_path(L, existing, where, sizeof where);
        pl_json_fail(&L->r, "tensor \"%s\" is defined twice: also by %s", name, where);
        return -1;
    }
    g->tensors[t] = (pl_tensor){.name = copy, .kind = kind, .batch_axis = PL_NO_BATCH,
                                .producer = def_node, .param = -1};
    L->def_node[t] = def_node;
    L->def_slot[t] = def_slot;
    g->n_tensors++;
    return t;
}

/* ---- attributes ------------------------------------------------------------------------ */

static void list_attrs(uint32_t mask, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int id = 0; id < PL_ATTR_COUNT && used < cap; id++)
        if (mask & PL_ATTR_BIT(id))
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                                     pl_attr_info_of((pl_attr_id)id)->name);
}

static bool read_int_value(loader *L, const json_t *value, const pl_attr_info *info,
                           int64_t *out)
{
    if (!json_is_integer(value))
        return pl_json_fail(&L->r, "\"%s\" takes integers, found %s", info->name,
                            pl_json_type_name(value));
    json_int_t v = json_integer_value(value);
    if ((double)v < info->min || (double)v > info->max)
        return pl_json_fail(&L->r, "%s %lld is out of range [%.0f, %.0f]", info->name,
                            (long long)v, info->min, info->max);
    *out = v;
    return true;
}

/* One of info->names, stored as its index; a mistake lists the accepted names. */
static bool read_enum(loader *L, const json_t *value, const pl_attr_info *info, int *out)
{
    char allowed[128];
    size_t used = 0;
    allowed[0] = '\0';
    for (int i = 0; info->names[i] && used < sizeof allowed; i++)
        used += (size_t)snprintf(allowed + used, sizeof allowed - used, "%s\"%s\"",
                                 i ? ", " : "", info->names[i]);
    if (!json_is_string(value))
        return pl_json_fail(&L->r, "\"%s\" takes one of %s, found %s", info->name, allowed,
                            pl_json_type_name(value));
    const char *text = json_string_value(value);
    for (int i = 0; info->names[i]; i++)
        if (strcmp(text, info->names[i]) == 0) {
            *out = i;
            return true;
        }
    return pl_json_fail(&L->r, "%s \"%s\" is not one of %s", info->name, text, allowed);
}

/* spatial: how many values a window attribute (PL_ATTR_TYPE_PAIR) takes. */
static bool read_attr(loader *L, const json_t *value, const pl_attr_info *info, int spatial,
                      pl_attrs *attrs)
{
    void *field = (char *)attrs + info->offset;
    switch (info->type) {
    case PL_ATTR_TYPE_BOOL:
        if (!json_is_boolean(value))
            return pl_json_fail(&L->r, "\"%s\" takes true or false, found %s", info->name,
                                pl_json_type_name(value));
        *(bool *)field = json_is_true(value);
        return true;
    case PL_ATTR_TYPE_INT:
        return read_int_value(L, value, info, field);
    case PL_ATTR_TYPE_PAIR: {
        int64_t *per_axis = field;
        static const char *const shapes[] = {"[l]", "[h, w]", "[d, h, w]"};
        const char *shape = shapes[spatial - 1];
        if (!json_is_array(value)) {
            if (!json_is_integer(value))
                return pl_json_fail(&L->r, "\"%s\" takes an integer or %s, found %s",
                                    info->name, shape, pl_json_type_name(value));
            if (!read_int_value(L, value, info, &per_axis[0]))
                return false;
            for (int a = 1; a < spatial; a++)
                per_axis[a] = per_axis[0];
            return true;
        }
        if (json_array_size(value) != (size_t)spatial)
            return pl_json_fail(&L->r, "\"%s\" takes an integer or %s, found %zu values",
                                info->name, shape, json_array_size(value));
        for (size_t i = 0; i < (size_t)spatial; i++) {
            size_t back = pl_json_push_index(&L->r, i);
            if (!read_int_value(L, json_array_get(value, i), info, &per_axis[i]))
                return false;
            pl_json_pop(&L->r, back);
        }
        return true;
    }
    case PL_ATTR_TYPE_INTS: {
        pl_int_list *list = field;
        if (!json_is_array(value))
            return pl_json_fail(&L->r, "\"%s\" takes an array of integers, found %s",
                                info->name, pl_json_type_name(value));
        size_t n = json_array_size(value);
        if (n > (size_t)info->max_count)
            return pl_json_fail(&L->r, "\"%s\" has %zu values; the limit is %d", info->name, n,
                                info->max_count);
        int64_t *v = pl_arena_alloc(&L->graph->arena, (n ? n : 1) * sizeof *v);
        if (!v)
            return out_of_memory(L);
        for (size_t i = 0; i < n; i++) {
            size_t back = pl_json_push_index(&L->r, i);
            if (!read_int_value(L, json_array_get(value, i), info, &v[i]))
                return false;
            pl_json_pop(&L->r, back);
        }
        list->n = (int)n;
        list->v = v;
        return true;
    }
    case PL_ATTR_TYPE_REAL: {
        if (!json_is_number(value))
            return pl_json_fail(&L->r, "\"%s\" takes a number, found %s", info->name,
                                pl_json_type_name(value));
        double v = json_number_value(value);
        if (!(v >= info->min && v <= info->max))
            return pl_json_fail(&L->r, "%s %g is out of range [%g, %g]", info->name, v,
                                info->min, info->max);
        *(double *)field = v;
        return true;
    }
    case PL_ATTR_TYPE_ENUM:
        return read_enum(L, value, info, field);
    }
    return pl_json_fail(&L->r, "attribute \"%s\" has an unknown type", info->name);
}

static bool read_attrs(loader *L, const json_t *node, pl_op *op)
{
    const pl_op_info *info = pl_op_info_of(op->kind);
    json_t *attrs;
    pl_attrs_default(&op->attrs);
    if (!pl_json_member(&L->r, node, "attrs", JSON_OBJECT, false, &attrs))
        return false;
    size_t back = pl_json_push_key(&L->r, "attrs");
    const char *key;
    json_t *value;
    json_object_foreach(attrs, key, value) {
        size_t at = pl_json_push_key(&L->r, key);
        pl_attr_id id = pl_attr_from_name(key);
        if (id == PL_ATTR_COUNT || !(info->attrs & PL_ATTR_BIT(id))) {
            char accepted[256];
            list_attrs(info->attrs, accepted, sizeof accepted);
            if (info->attrs)
                return pl_json_fail(&L->r, "unknown attribute \"%s\" for %s (accepted: %s)",
                                    key, info->name, accepted);
            return pl_json_fail(&L->r, "unknown attribute \"%s\": %s takes no attributes", key,
                                info->name);
        }
        if (!read_attr(L, value, pl_attr_info_of(id), info->spatial ? info->spatial : 2,
                       &op->attrs))
            return false;
        op->attrs.given |= PL_ATTR_BIT(id);
        pl_json_pop(&L->r, at);
    }
    uint32_t missing = info->required & ~op->attrs.given;
    if (missing) {
        char names[256];
        list_attrs(missing, names, sizeof names);
        if (!attrs)
            pl_json_pop(&L->r, back);
        return pl_json_fail(&L->r, "%s needs the attribute%s %s", info->name,
                            (missing & (missing - 1)) ? "s" : "", names);
    }
    pl_json_pop(&L->r, back);
    return true;
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* Input `slot` of op `index` by name: its tensor when defined already, else a pending
 * name that pl_load_resolve_inputs finds once every node is read. */
static bool find_input(loader *L, const json_t *name_value, int index, int slot)
{
    const char *name = json_string_value(name_value);
    int t = pl_strmap_get(&L->tensor_names, name);
    L->graph->ops[index].inputs[slot] = t;
    if (t >= 0)
        return true;
    if (!pl_grow(&L->pending, &L->pending_cap, L->n_pending + 1, sizeof *L->pending, 64))
        return out_of_memory(L);
    const char *copy = pl_arena_strndup(&L->scratch, name, json_string_length(name_value));
    if (!copy)
        return out_of_memory(L);
    L->pending[L->n_pending++] = (pl_load_pending){index, slot, copy};
    return true;
}

static bool check_arity(loader *L, const json_t *list, const char *key, int min, int max,
                        const char *op_name)
{
    int n = (int)json_array_size(list);
    if (n >= min && (max < 0 || n <= max))
        return true;
    size_t back = pl_json_push_key(&L->r, key);
    const char *noun = strcmp(key, "inputs") == 0 ? "input" : "output";
    if (max < 0)
        pl_json_fail(&L->r, "%s takes at least %d %ss, got %d", op_name, min, noun, n);
    else if (min == max)
        pl_json_fail(&L->r, "%s takes %d %s%s, got %d", op_name, min, noun, min == 1 ? "" : "s",
                     n);
    else
        pl_json_fail(&L->r, "%s takes %d to %d %ss, got %d", op_name, min, max, noun, n);
    pl_json_pop(&L->r, back);
    return false;
}

static bool read_node(loader *L, const json_t *node, int index)
{
    static const char *const fields[] = {"name", "op", "inputs", "outputs", "attrs", NULL};
    if (!pl_json_expect_object(&L->r, node, fields))
        return false;
    pl_graph *g = L->graph;
    pl_op *op = &g->ops[index];
    op->source_index = index;
    json_t *name, *kind, *inputs, *outputs;
    if (!pl_json_member(&L->r, node, "name", JSON_STRING, true, &name))
        return false;
    size_t back = pl_json_push_key(&L->r, "name");
    if (!pl_json_check_name(&L->r, name, "node"))
        return false;
    op->name = pl_arena_strndup(&g->arena, json_string_value(name), json_string_length(name));
    int existing;
    if (!op->name || !pl_strmap_put(&L->op_names, op->name, index, &existing))
        return out_of_memory(L);
    if (existing >= 0)
        return pl_json_fail(&L->r, "node \"%s\" is defined twice: also at /nodes/%d", op->name,
                            existing);
    pl_json_pop(&L->r, back);

    if (!pl_json_member(&L->r, node, "op", JSON_STRING, true, &kind))
        return false;
    op->kind = pl_op_from_name(json_string_value(kind));
    if (op->kind == PL_OP_COUNT || pl_op_info_of(op->kind)->internal) {
        char known[1024];
        pl_op_names_join(known, sizeof known);
        pl_json_push_key(&L->r, "op");
        return pl_json_fail(&L->r, "unknown op \"%s\" (known: %s)", json_string_value(kind),
                            known);
    }
    const pl_op_info *info = pl_op_info_of(op->kind);
    if (!pl_json_member(&L->r, node, "inputs", JSON_ARRAY, true, &inputs) ||
        !pl_json_member(&L->r, node, "outputs", JSON_ARRAY, true, &outputs) ||
        !check_arity(L, inputs, "inputs", info->min_inputs, info->max_inputs, info->name) ||
        !check_arity(L, outputs, "outputs", info->min_outputs, info->max_outputs, info->name))
        return false;

    op->n_inputs = (int)json_array_size(inputs);
    op->n_outputs = (int)json_array_size(outputs);
    op->inputs = pl_arena_alloc(&g->arena, (size_t)op->n_inputs * sizeof *op->inputs);
    op->outputs = pl_arena_alloc(&g->arena, (size_t)op->n_outputs * sizeof *op->outputs);
    if (!op->inputs || !op->outputs)
        return out_of_memory(L);
    back = pl_json_push_key(&L->r, "inputs");
    for (int i = 0; i < op->n_inputs; i++) {
        size_t at = pl_json_push_index(&L->r, (size_t)i);
        const json_t *input = json_array_get(inputs, (size_t)i);
        if (!pl_json_check_name(&L->r, input, "tensor") || !find_input(L, input, index, i))
            return false;
        pl_json_pop(&L->r, at);
    }
    pl_json_pop(&L->r, back);
    back = pl_json_push_key(&L->r, "outputs");
    for (int i = 0; i < op->n_outputs; i++) {
        size_t at = pl_json_push_index(&L->r, (size_t)i);
        int t = pl_load_add_tensor(L, json_array_get(outputs, (size_t)i), PL_TENSOR_ACTIVATION,
                                   index, i);
        if (t < 0)
            return false;
        op->outputs[i] = t;
        pl_json_pop(&L->r, at);
    }
    pl_json_pop(&L->r, back);
    return read_attrs(L, node, op);
}

bool pl_load_nodes(loader *L, const json_t *root)
{
    const json_t *nodes = json_object_get(root, "nodes");
    if (!nodes)
        return pl_json_fail(&L->r, "missing field \"nodes\"");
    if (!json_is_array(nodes)) {
        pl_json_push_key(&L->r, "nodes");
        return pl_json_fail(&L->r, "expected an array, found %s", pl_json_type_name(nodes));
    }
    size_t n = L->nodes.n;
    size_t back = pl_json_push_key(&L->r, "nodes");
    if (n == 0)
        return pl_json_fail(&L->r, "the model has no nodes");
    if (n > PL_MAX_OPS)
        return pl_json_fail(&L->r, "%zu nodes are more than the limit of %d", n, PL_MAX_OPS);
    /* Each node names itself and at least one output: the maps are sized once. */
    L->graph->ops = calloc(n, sizeof *L->graph->ops);
    if (!L->graph->ops || !pl_strmap_reserve(&L->op_names, n) ||
        !pl_strmap_reserve(&L->tensor_names, (size_t)L->graph->n_tensors + n))
        return out_of_memory(L);
    L->graph->n_ops = (int)n;
    for (size_t i = 0; i < n; i++) {
        size_t at = pl_json_push_index(&L->r, i);
        json_t *node = pl_load_element(L, &L->nodes, i);
        bool ok = node && read_node(L, node, (int)i);
        json_decref(node);
        if (!ok)
            return false;
        pl_json_pop(&L->r, at);
    }
    pl_json_pop(&L->r, back);
    return true;
}
