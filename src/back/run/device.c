/* What the device kinds share (device.h): the choice of a resource's kind, and the work of
 * a task, which native and paced devices and links do alike. */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "big_buffer.h"
#include "device.h"
#include "op_run.h"

static bool held_elsewhere(const pl_executor *ex, int d)
{
    return ex->comm && ex->c->devices[d].rank != ex->rank;
}

const device_ops *device_kind(const pl_executor *ex, int d)
{
    if (held_elsewhere(ex, d))
        return &pl_device_remote;
    return ex->c->devices[d].flops_per_second > 0 ? &pl_device_paced : &pl_device_native;
}

const device_ops *link_kind(const pl_executor *ex, int from, int to)
{
    if (held_elsewhere(ex, from) != held_elsewhere(ex, to))
        return &pl_device_remote;
    const pl_link *link = pl_cluster_link(ex->c, from, to);
    return link->bytes_per_second > 0 || link->latency_seconds > 0 ? &pl_device_paced
                                                                    : &pl_device_native;
}

/* ---- a task's work ----------------------------------------------------------------------- */

/* An update of a shard of its parameter: the element-wise kernel on the shard's elements
 * of the parameter, the accumulator and each state (a further copy of sharded state holds
 * just its shard), then the rest of the accumulator zeroed, as a whole update leaves it. */
static void run_shard_update(resource *r, const pl_task *task, pl_kernel_args *args)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    const pl_range *shard = &p->shards[task->shard];
    enum { MAX_INPUTS = 8 };
    void *in[MAX_INPUTS];
    const pl_tensor *in_t[MAX_INPUTS];
    pl_tensor part = {.kind = PL_TENSOR_STATE, .dtype = args->in_t[0]->dtype, .rank = 1,
                      .dims = {shard->end - shard->start}, .batch_axis = PL_NO_BATCH,
                      .param = -1};
    for (int j = 0; j < args->op->n_inputs && j < MAX_INPUTS; j++) {
        const pl_buffer *buf = &p->buffers[p->refs[task->first_ref + j]];
        int64_t first = buf->copy > 0 ? p->copy_range[buf->copy].start : 0;
        in[j] = (float *)args->in[j] + (shard->start - first);
        in_t[j] = &part;
    }
    args->in = in;
    args->in_t = in_t;
    if (shard->end > shard->start)
        pl_op_run(r->pool, args);
    float *acc = ex->ptrs[task->first_ref + 1];
    int64_t whole = pl_tensor_elements(ex->ref_shapes[task->first_ref + 1]);
    memset(acc, 0, (size_t)shard->start * sizeof *acc);
    memset(acc + shard->end, 0, (size_t)(whole - shard->end) * sizeof *acc);
}

void device_run_op(resource *r, const pl_task *task)
{
    pl_executor *ex = r->ex;
    const pl_program *p = ex->program;
    const pl_op *op = &ex->program->graph->ops[task->op];
    int k = task->micro_batch;
    pl_kernel_args args = {
        .op = op, .in_t = ex->ref_shapes + task->first_ref,
        .out_t = ex->ref_shapes + task->first_ref + op->n_inputs,
        .in = ex->ptrs + task->first_ref, .out = ex->ptrs + task->first_ref + op->n_inputs,
        .work = r->work, .nth = pl_pool_threads(r->pool),
        .step = &ex->infos[k >= 0 ? k : p->micro_batches]};
    if (task->shard >= 0)
        run_shard_update(r, task, &args);
    else
        pl_op_run(r->pool, &args);
    for (int j = 0; j < op->n_outputs; j++)
        if (op->outputs[j] == ex->program->graph->loss)
            ex->losses[k] = *(const float *)args.out[j];
}

void device_add_floats(float *restrict own, const float *restrict in, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        own[i] += in[i];
}

void device_move(resource *r, const pl_task *task, bool add, int64_t piece)
{
    pl_executor *ex = r->ex;
    int64_t bytes = pl_task_bytes(ex->program, task);
    char *to = ex->ptrs[task->first_ref + 1];
    const char *from = ex->ptrs[task->first_ref];
    if (piece <= 0)
        piece = bytes;
    for (int64_t at = 0; at < bytes; at += piece) {
        int64_t n = bytes - at < piece ? bytes - at : piece;
        if (at > 0)
            sched_yield();
        if (add)
            device_add_floats((float *)(to + at), (const float *)(from + at),
                              n / (int64_t)sizeof(float));
        else
            memcpy(to + at, from + at, (size_t)n);
    }
}

double device_link_seconds(const resource *r, int64_t bytes)
{
    return r->latency + (r->bytes_per_second > 0 ? (double)bytes / r->bytes_per_second : 0);
}

/* ---- local memory ------------------------------------------------------------------------ */

static bool grow(void **buffer, size_t *have, size_t need)
{
    if (need <= *have)
        return true;
    free(*buffer);
    size_t bytes = (need + 63) / 64 * 64;
    if (!(*buffer = aligned_alloc(64, bytes))) {
        *have = 0;
        return false;
    }
    memset(*buffer, 0, bytes);
    *have = need;
    return true;
}

bool device_reserve_local(resource *r, size_t arena, size_t work)
{
    return grow((void **)&r->arena, &r->arena_bytes, arena) && grow(&r->work, &r->work_bytes, work);
}

void *device_allocate_local(resource *r, size_t bytes, bool *ok)
{
    (void)r;
    void *memory = pl_big_buffer(bytes);
    *ok = memory != NULL;
    return memory;
}
