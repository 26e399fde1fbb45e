/* Op-times files (op_times.h): reading one, checked against the training graph, and
 * sharing each entry's times among the ops it names. */
#include "op_times.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"
#include "kernels.h"
#include "strmap.h"

#define OP_TIMES_MAX_BYTES ((size_t)256 << 20)
/* Above any step a profile holds: a typo's 1e9 is refused rather than planned with. */
#define MAX_SECONDS 1e6
enum { UNKNOWN_NAMES_SHOWN = 5 };

/* What reading needs at hand: the graph's forward ops by name, and which entry names
 * each (-1: none yet). */
typedef struct reading {
    pl_json_reader r;
    const pl_graph *g;
    const pl_cost_model *m;
    int threads;
    pl_strmap forward_ops;
    int *entry_of; /* per forward op */
    pl_op_times *times;
} reading;

/* The cost model's time for op `o` at the whole batch: the weight of its share. */
static double cost_model_seconds(const reading *rd, int o)
{
    const pl_op *op = &rd->g->ops[o];
    double t = pl_cost_lookup(rd->m, pl_op_signature(op, rd->g->tensors, rd->threads));
    if (t >= 0)
        return t;
    return pl_cost_op(rd->m, op->kind, pl_kernel_route_of(op, rd->g->tensors), rd->threads,
                      op->flops,
                      (double)(op->bytes_read + op->bytes_written));
}

/* Shares `seconds` among the ops for which `member(o)` holds, by the cost model's times
 * (evenly when it times them all at 0). Returns how many ops took a share. */
static int share_among(reading *rd, double seconds, int first, int end,
                       bool (*member)(const reading *rd, int o, int entry), int entry)
{
    double total = 0;
    int n = 0;
    for (int o = first; o < end; o++)
        if (member(rd, o, entry)) {
            total += cost_model_seconds(rd, o);
            n++;
        }
    for (int o = first; o < end; o++)
        if (member(rd, o, entry))
            rd->times->seconds[o] =
                total > 0 ? seconds * cost_model_seconds(rd, o) / total : seconds / n;
    return n;
}

static bool forward_member(const reading *rd, int o, int entry)
{
    return rd->entry_of[o] == entry;
}

/* A backward op of the groups of the entry's forward ops. */
static bool backward_member(const reading *rd, int o, int entry)
{
    const pl_op *op = &rd->g->ops[o];
    return op->phase == PL_PHASE_BACKWARD && op->group < rd->g->n_forward_ops &&
           rd->entry_of[op->group] == entry;
}

/* "ops": forward op names, each once in the file. Names the graph lacks are all counted,
 * so that the error can say how many there are and name the first few. */
static bool read_names(reading *rd, const json_t *names, int entry)
{
    if (json_array_size(names) == 0)
        return pl_json_fail(&rd->r, "an entry times at least one op");
    char unknown[512] = "";
    int n_unknown = 0;
    size_t first_unknown = 0;
    for (size_t i = 0; i < json_array_size(names); i++) {
        const json_t *name = json_array_get(names, i);
        size_t at = pl_json_push_index(&rd->r, i);
        if (!json_is_string(name))
            return pl_json_fail(&rd->r, "expected an op's name, got %s", pl_json_type_name(name));
        int o = pl_strmap_get(&rd->forward_ops, json_string_value(name));
        if (o >= 0 && rd->entry_of[o] >= 0)
            return pl_json_fail(&rd->r, "op \"%s\" is timed twice: here and in /times/%d",
                                json_string_value(name), rd->entry_of[o]);
        if (o < 0 && n_unknown++ < UNKNOWN_NAMES_SHOWN)
            snprintf(unknown + strlen(unknown), sizeof unknown - strlen(unknown), "%s\"%.60s\"",
                     n_unknown > 1 ? ", " : "", json_string_value(name));
        if (o < 0 && n_unknown == 1)
            first_unknown = i;
        if (o >= 0)
            rd->entry_of[o] = entry;
        pl_json_pop(&rd->r, at);
    }
    if (n_unknown == 0)
        return true;
    pl_json_push_index(&rd->r, first_unknown);
    return pl_json_fail(&rd->r, "%d name%s of this entry %s no op of model \"%s\": %s%s",
                        n_unknown, n_unknown > 1 ? "s" : "", n_unknown > 1 ? "are" : "is",
                        rd->g->name, unknown, n_unknown > UNKNOWN_NAMES_SHOWN ? ", ..." : "");
}

static bool read_entry(reading *rd, const json_t *entry, int index)
{
    static const char *const fields[] = {"ops", "module", "forward", "backward", NULL};
    json_t *names;
    const char *module;
    double forward = -1, backward = -1;
    if (!pl_json_expect_object(&rd->r, entry, fields) ||
        !pl_json_member(&rd->r, entry, "ops", JSON_ARRAY, true, &names) ||
        !pl_json_string(&rd->r, entry, "module", false, &module) ||
        !pl_json_number(&rd->r, entry, "forward", false, 0, MAX_SECONDS, &forward) ||
        !pl_json_number(&rd->r, entry, "backward", false, 0, MAX_SECONDS, &backward))
        return false;
    if (forward < 0 && backward < 0)
        return pl_json_fail(&rd->r, "an entry gives \"forward\" or \"backward\" seconds, or both");
    size_t at = pl_json_push_key(&rd->r, "ops");
    if (!read_names(rd, names, index))
        return false;
    pl_json_pop(&rd->r, at);
    pl_op_times *t = rd->times;
    if (forward >= 0) {
        t->n_forward_ops += share_among(rd, forward, 0, rd->g->n_forward_ops, forward_member,
                                        index);
        t->forward_seconds += forward;
    }
    if (backward >= 0) {
        t->n_backward_ops += share_among(rd, backward, rd->g->n_forward_ops, rd->g->n_ops,
                                         backward_member, index);
        t->backward_seconds += backward;
    }
    t->n_entries++;
    return true;
}

/* "model_hash": 16 hexadecimal digits, as plans write it. */
static bool read_model_hash(reading *rd, const json_t *root)
{
    const char *hash = NULL;
    if (!pl_json_string(&rd->r, root, "model_hash", false, &hash))
        return false;
    if (!hash)
        return true;
    size_t len = strlen(hash);
    char *end;
    rd->times->model_hash = strtoull(hash, &end, 16);
    rd->times->has_model_hash = true;
    if (len == 0 || len > 16 || *end != '\0' || strspn(hash, "0123456789abcdefABCDEF") != len) {
        pl_json_push_key(&rd->r, "model_hash");
        return pl_json_fail(&rd->r, "expected 16 hexadecimal digits, got \"%s\"", hash);
    }
    return true;
}

static bool read_root(reading *rd, const json_t *root)
{
    static const char *const fields[] = {"format", "version", "model", "model_hash", "device",
                                         "batch", "source", "times", NULL};
    const char *model, *device, *source;
    int64_t batch;
    json_t *entries;
    if (!pl_json_check_header(&rd->r, root, "op times", "placer-op-times",
                              PL_OP_TIMES_FORMAT_VERSION) ||
        !pl_json_expect_object(&rd->r, root, fields) ||
        !pl_json_string(&rd->r, root, "model", true, &model) || !read_model_hash(rd, root) ||
        !pl_json_string(&rd->r, root, "device", true, &device) ||
        !pl_json_string(&rd->r, root, "source", false, &source) ||
        !pl_json_integer(&rd->r, root, "batch", true, 1, PL_MAX_DIM, &batch) ||
        !pl_json_member(&rd->r, root, "times", JSON_ARRAY, true, &entries))
        return false;
    snprintf(rd->times->model, sizeof rd->times->model, "%s", model);
    snprintf(rd->times->device, sizeof rd->times->device, "%s", device);
    if (batch != rd->g->batch_size) {
        pl_json_push_key(&rd->r, "batch");
        return pl_json_fail(&rd->r, "the times are of a batch of %lld samples; model \"%s\" "
                            "has %d (import and profile it at one batch)",
                            (long long)batch, rd->g->name, rd->g->batch_size);
    }
    size_t back = pl_json_push_key(&rd->r, "times");
    for (size_t i = 0; i < json_array_size(entries); i++) {
        size_t at = pl_json_push_index(&rd->r, i);
        if (!read_entry(rd, json_array_get(entries, i), (int)i))
            return false;
        pl_json_pop(&rd->r, at);
    }
    pl_json_pop(&rd->r, back);
    return true;
}

pl_op_times *pl_op_times_read(const char *path, const pl_graph *graph,
                              const pl_cost_model *model, int threads, pl_error *err)
{
    pl_error local;
    if (!err)
        err = &local;
    pl_error_init(err, path);
    reading rd = {.g = graph, .m = model, .threads = threads};
    pl_json_reader_init(&rd.r, err);
    json_t *root = pl_json_parse_file(path, OP_TIMES_MAX_BYTES, err, NULL);
    if (!root)
        return NULL;
    rd.times = calloc(1, sizeof *rd.times);
    rd.entry_of = malloc((size_t)(graph->n_forward_ops + 1) * sizeof *rd.entry_of);
    bool ok = rd.times && rd.entry_of &&
              (rd.times->seconds = malloc((size_t)(graph->n_ops + 1) * sizeof(double)));
    for (int o = 0; ok && o < graph->n_forward_ops; o++)
        ok = pl_strmap_put(&rd.forward_ops, graph->ops[o].name, o, NULL);
    if (!ok)
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int o = 0; ok && o < graph->n_ops; o++)
        rd.times->seconds[o] = -1;
    for (int o = 0; ok && o < graph->n_forward_ops; o++)
        rd.entry_of[o] = -1;
    ok = ok && read_root(&rd, root);
    json_decref(root);
    pl_strmap_release(&rd.forward_ops);
    free(rd.entry_of);
    if (!ok) {
        pl_op_times_free(rd.times);
        return NULL;
    }
    rd.times->graph = graph;
    rd.times->n_ops = graph->n_ops;
    return rd.times;
}

void pl_op_times_free(pl_op_times *times)
{
    if (!times)
        return;
    free(times->seconds);
    free(times);
}

double pl_op_times_seconds(const pl_op_times *times, const pl_graph *graph, int op,
                           double share)
{
    if (!times || times->graph != graph || op < 0 || op >= times->n_ops ||
        times->seconds[op] < 0)
        return -1;
    return times->seconds[op] * share;
}
