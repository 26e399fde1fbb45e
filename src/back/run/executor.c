/* The multi-device executor (executor.h): its devices and links, plans, steps. Each
 * resource is driven through its kind (device.h); resource.c runs its thread. */
#include <cblas.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "big_buffer.h"
#include "clock.h"
#include "device.h"
#include "init.h"
#include "machine.h"

/* ---- resources --------------------------------------------------------------------------- */

static pl_status start_device(pl_executor *ex, int d, pl_error *err)
{
    const pl_device *device = &ex->c->devices[d];
    resource *r = &ex->devices[d];
    *r = (resource){.ex = ex, .ops = device_kind(ex, d), .device = d,
                    .flops_per_second = device->flops_per_second};
    if (pl_device_polls(device))
        r->queue.spin_seconds = PL_DEVICE_POLL_SECONDS;
    if (!(r->pool = pl_pool_new(device->threads, err)))
        return err ? err->status : PL_EIO;
    pl_pool_pin(r->pool, device->cores, device->n_cores);
    return executor_start_resource(r, err);
}

static resource *link_of(pl_executor *ex, int from, int to, pl_error *err)
{
    resource **slot = &ex->links[from * ex->c->n_devices + to];
    if (*slot)
        return *slot;
    resource *r = calloc(1, sizeof *r);
    if (!r) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    const pl_link *link = pl_cluster_link(ex->c, from, to);
    *r = (resource){.ex = ex, .ops = link_kind(ex, from, to), .is_link = true, .device = from,
                    .to = to, .bytes_per_second = link->bytes_per_second,
                    .latency = link->latency_seconds};
    if (executor_start_resource(r, err) != PL_OK) {
        free(r);
        return NULL;
    }
    return *slot = r;
}

/* ---- the executor ------------------------------------------------------------------------ */

/* PL_OK, or the error that left the executor unusable (a peer that stopped answering). */
static pl_status failed(pl_executor *ex, pl_error *err)
{
    pthread_mutex_lock(&ex->done_lock);
    pl_status status = ex->failed ? ex->failure.status : PL_OK;
    if (ex->failed)
        pl_error_set(err, ex->failure.status, NULL, "%s", ex->failure.text);
    pthread_mutex_unlock(&ex->done_lock);
    return status;
}

/* The model's tensor behind tensor t of the program's graph. */
static int model_tensor(const pl_executor *ex, int t)
{
    return ex->program->split ? ex->program->split->tensor_origin[t] : t;
}

/* A split plan's parameter and state shards to or from the model's host buffers. */
static void copy_split_shards(pl_executor *ex, bool to_model)
{
    const pl_program *p = ex->program;
    for (int t = 0; p && p->split && t < p->graph->n_tensors; t++) {
        const pl_tensor *tensor = &p->graph->tensors[t];
        int whole = p->split->tensor_origin[t];
        if (tensor->producer < 0 && whole >= 0 && tensor->init.shard_whole > 0)
            pl_shard_copy(tensor, ex->host[whole], ex->program_host[t], to_model);
    }
}

/* Tensor t's shards of sharded state back in its host buffer (t < 0: every tensor's; t
 * is the model's), and a split plan's shards in the model's. */
static void sync_shards(pl_executor *ex, int t)
{
    const pl_program *p = ex->program;
    for (int c = 1; ex->copies && ex->copies_made && c < p->n_copies; c++)
        if (p->copy_is_shard[c] && ex->copies[c] &&
            (t < 0 || model_tensor(ex, p->copy_tensor[c]) == t)) {
            size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
            memcpy((char *)ex->program_host[p->copy_tensor[c]] + offset, ex->copies[c], bytes);
        }
    if (ex->copies_made)
        copy_split_shards(ex, true);
}

pl_status pl_executor_sync_host(pl_executor *ex, pl_error *err)
{
    pl_status status = failed(ex, err);
    if (status == PL_OK && ex->leading)
        status = executor_tell(ex, COMMAND_SYNC, 0, err);
    sync_shards(ex, -1);
    if (status == PL_OK && ex->comm && ex->program) {
        status = executor_gather_host(ex, err);
        if (ex->copies_made)
            copy_split_shards(ex, true);
    }
    return status;
}

/* Host buffers for the program's tensors: the model's, and the shards' own. */
static bool bind_host(pl_executor *ex)
{
    const pl_program *p = ex->program;
    if (!p->split) {
        ex->program_host = ex->host;
        return true;
    }
    int n = p->graph->n_tensors;
    if (!(ex->program_host = calloc((size_t)n, sizeof *ex->program_host)))
        return false;
    for (int t = 0; t < n; t++) {
        const pl_tensor *tensor = &p->graph->tensors[t];
        int whole = p->split->tensor_origin[t];
        if (tensor->producer >= 0 || whole < 0)
            continue;
        if (tensor->init.shard_whole == 0) {
            ex->program_host[t] = ex->host[whole];
            continue;
        }
        size_t bytes = ((size_t)pl_tensor_bytes(tensor) + 63) / 64 * 64;
        if (!(ex->program_host[t] = pl_big_buffer(bytes)))
            return false;
    }
    return true;
}

static void free_host(pl_executor *ex)
{
    const pl_program *p = ex->program;
    if (ex->program_host != ex->host) {
        for (int t = 0; p && ex->program_host && t < p->graph->n_tensors; t++)
            if (p->graph->tensors[t].init.shard_whole > 0 && p->graph->tensors[t].producer < 0)
                free(ex->program_host[t]);
        free(ex->program_host);
    }
    ex->program_host = NULL;
}

static void free_plan(pl_executor *ex)
{
    sync_shards(ex, -1);
    for (int c = 1; ex->copies && c < ex->program->n_copies; c++)
        free(ex->copies[c]);
    free(ex->copies);
    ex->copies = NULL;
    free_host(ex);
    pl_program_free(ex->program);
    ex->program = NULL;
    for (int i = 0; ex->staging && i < ex->program_tasks; i++)
        free(ex->staging[i]);
#define DROP(pointer) (free(pointer), (pointer) = NULL)
    DROP(ex->staging);
    DROP(ex->task_resource);
    DROP(ex->ptrs);
    DROP(ex->ref_shapes);
    DROP(ex->pending);
    DROP(ex->deps);
    DROP(ex->roles);
    DROP(ex->parts_left);
    DROP(ex->deadlines);
    DROP(ex->infos);
    DROP(ex->losses);
    DROP(ex->starts);
    DROP(ex->ends);
    DROP(ex->combined);
#undef DROP
}

void pl_executor_free(pl_executor *ex)
{
    if (!ex)
        return;
    /* MPI may still read and write the buffers of messages that never completed: kept */
    if (ex->comm && pl_comm_status(ex->comm, NULL) != PL_OK)
        return;
    if (ex->leading && failed(ex, NULL) == PL_OK) /* and whether it ends for an interrupt */
        executor_tell(ex, COMMAND_END, executor_flagged(ex) || ex->interrupted, NULL);
    int n = ex->c->n_devices;
    for (int i = 0; ex->links && i < n * n; i++)
        if (ex->links[i]) {
            executor_stop_resource(ex->links[i]);
            free(ex->links[i]);
        }
    for (int d = 0; ex->devices && d < n; d++) {
        executor_stop_resource(&ex->devices[d]);
        pl_pool_free(ex->devices[d].pool);
        free(ex->devices[d].arena);
        free(ex->devices[d].work);
    }
    free_plan(ex);
    if (ex->owns_host)
        for (int t = 0; t < ex->g->n_tensors; t++)
            free(ex->host[t]);
    for (int t = 0; ex->staged && t < ex->g->n_tensors; t++)
        free(ex->staged[t]);
    free(ex->host);
    free(ex->staged);
    free(ex->last_output);
    free(ex->links);
    free(ex->devices);
    pthread_cond_destroy(&ex->done);
    pthread_mutex_destroy(&ex->done_lock);
    free(ex);
}

static bool lives_on_host(const pl_tensor *tensor)
{
    return tensor->kind != PL_TENSOR_ACTIVATION;
}

/* An input whose micro-batches are not contiguous in its host buffer. */
static bool staged_input(const pl_tensor *tensor)
{
    return tensor->kind == PL_TENSOR_INPUT && tensor->batch_axis > 0;
}

/* Whether the host's copies of the tensors that live there fit this machine. */
static pl_status host_fits_machine(const pl_graph *g, pl_error *err)
{
    int64_t bytes = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (lives_on_host(&g->tensors[t]))
            bytes += (pl_tensor_bytes(&g->tensors[t]) + 63) / 64 * 64;
    char what[320];
    snprintf(what, sizeof what, "model \"%s\" on the host (its parameters, gradients "
             "and optimizer state)", g->name);
    return pl_machine_fits(bytes, what, err);
}

static pl_status set_up_host(pl_executor *ex, void *const *host, pl_error *err)
{
    const pl_graph *g = ex->g;
    ex->owns_host = host == NULL;
    pl_status fits = host ? PL_OK : host_fits_machine(g, err);
    if (fits != PL_OK)
        return fits;
    for (int t = 0; t < g->n_tensors; t++) {
        const pl_tensor *tensor = &g->tensors[t];
        if (!lives_on_host(tensor))
            continue;
        size_t bytes = ((size_t)pl_tensor_bytes(tensor) + 63) / 64 * 64;
        if (staged_input(tensor) && !(ex->staged[t] = pl_big_buffer(bytes)))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for tensor \"%s\"",
                                tensor->name);
        if (host) {
            ex->host[t] = host[t];
            continue;
        }
        if (!(ex->host[t] = pl_big_buffer(bytes)))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for tensor \"%s\"",
                                tensor->name);
        memset(ex->host[t], 0, bytes ? bytes : 64);
        if (tensor->kind != PL_TENSOR_INPUT)
            pl_tensor_initialize(tensor, ex->host[t]);
    }
    return PL_OK;
}

pl_executor *pl_executor_new(const pl_graph *g, const pl_cluster *c, void *const *host,
                             pl_error *err)
{
    pl_executor *ex = calloc(1, sizeof *ex);
    if (!ex) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    ex->g = g;
    ex->c = c;
    pthread_mutex_init(&ex->done_lock, NULL);
    pthread_cond_init(&ex->done, NULL);
    pl_blas_setup();
    size_t n = (size_t)c->n_devices;
    ex->host = calloc((size_t)g->n_tensors, sizeof *ex->host);
    ex->staged = calloc((size_t)g->n_tensors, sizeof *ex->staged);
    ex->last_output = calloc((size_t)g->n_tensors, sizeof *ex->last_output);
    ex->devices = calloc(n, sizeof *ex->devices);
    ex->links = calloc(n * n, sizeof *ex->links);
    if (!ex->host || !ex->staged || !ex->last_output || !ex->devices || !ex->links) {
        pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
        pl_executor_free(ex);
        return NULL;
    }
    if (set_up_host(ex, host, err) != PL_OK) {
        pl_executor_free(ex);
        return NULL;
    }
    for (int d = 0; d < c->n_devices; d++)
        if (start_device(ex, d, err) != PL_OK) {
            pl_executor_free(ex);
            return NULL;
        }
    return ex;
}

/* Room for replicas' further copies of parameters and state; the first step copies them
 * (weights loaded between setting a plan and stepping it reach every replica). */
static bool make_copies(pl_executor *ex)
{
    const pl_program *p = ex->program;
    if (!(ex->copies = calloc((size_t)p->n_copies, sizeof *ex->copies)))
        return false;
    for (int c = 1; c < p->n_copies; c++) {
        size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
        resource *r = &ex->devices[p->copy_device[c]];
        bool ok;
        ex->copies[c] = r->ops->allocate(r, bytes, &ok);
        if (!ok)
            return false;
    }
    ex->copies_made = false;
    return true;
}

static void fill_copies(pl_executor *ex)
{
    const pl_program *p = ex->program;
    copy_split_shards(ex, false);
    for (int c = 1; c < p->n_copies; c++) {
        size_t offset, bytes = executor_copy_bytes(ex, c, &offset);
        if (ex->copies[c])
            memcpy(ex->copies[c], (const char *)ex->program_host[p->copy_tensor[c]] + offset,
                   bytes);
    }
    ex->copies_made = true;
}

/* The resource that runs task i's part here: its device or link, or, a transfer between
 * two ranks, the link that joins them (a remote one, device.h). */
static resource *resource_of(pl_executor *ex, int i, pl_error *err)
{
    const pl_program *p = ex->program;
    const pl_task *task = &p->tasks[i];
    if (ex->roles[i] == ROLE_SEND || ex->roles[i] == ROLE_RECEIVE) {
        const pl_transfer *transfer = &p->transfers[task->transfer];
        return link_of(ex, transfer->from, transfer->to, err);
    }
    if (task->resource < p->n_devices)
        return &ex->devices[task->resource];
    const pl_link_use *use = &p->links[task->resource - p->n_devices];
    return link_of(ex, use->from, use->to, err);
}

/* Resource r's index among the devices, then the links (from x to). */
static int resource_index(const resource *r, int n_devices)
{
    return r->is_link ? n_devices + r->device * n_devices + r->to : r->device;
}

/* Room on every resource's queue for all of its tasks. */
static bool reserve_queues(pl_executor *ex)
{
    const pl_program *p = ex->program;
    int n = ex->c->n_devices;
    int *count = calloc((size_t)(n + n * n), sizeof *count);
    if (!count)
        return false;
    for (int i = 0; i < p->n_tasks; i++)
        if (ex->task_resource[i])
            count[resource_index(ex->task_resource[i], n)]++;
    bool ok = true;
    for (int i = 0; i < p->n_tasks && ok; i++) {
        resource *r = ex->task_resource[i];
        int *slot = r ? &count[resource_index(r, n)] : NULL;
        if (slot && *slot > 0) {
            ok = executor_reserve_queue(r, *slot);
            *slot = 0;
        }
    }
    free(count);
    return ok;
}

/* Arenas and workspaces big enough, link threads started, every reference's address. */
static pl_status bind_program(pl_executor *ex, pl_error *err)
{
    const pl_program *p = ex->program;
    int n = p->n_tasks, n_refs = 0;
    pl_status status = executor_assign_roles(ex, err);
    if (status != PL_OK)
        return status;
    if (!bind_host(ex) || !make_copies(ex))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for the replicas' copies");
    for (int d = 0; d < p->n_devices; d++) {
        resource *r = &ex->devices[d];
        if (!r->ops->reserve(r, (size_t)p->memory[d].arena, (size_t)p->memory[d].workspace))
            return pl_error_set(err, PL_ENOMEM, NULL, "out of memory for device %s",
                                ex->c->devices[d].name);
    }
    ex->task_resource = malloc((size_t)n * sizeof *ex->task_resource + 1);
    ex->pending = malloc((size_t)n * sizeof *ex->pending + 1);
    ex->starts = calloc((size_t)n + 1, sizeof *ex->starts);
    ex->ends = calloc((size_t)n + 1, sizeof *ex->ends);
    ex->infos = calloc((size_t)p->micro_batches + 1, sizeof *ex->infos);
    ex->combined = malloc((4 + (size_t)p->micro_batches + 2 * (size_t)n) * sizeof(double));
    ex->losses = calloc((size_t)p->micro_batches, sizeof *ex->losses);
    if (!ex->task_resource || !ex->pending || !ex->starts || !ex->ends || !ex->infos ||
        !ex->combined || !ex->losses)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int i = 0; i < n; i++) {
        const pl_task *task = &p->tasks[i];
        int end = task->kind != PL_TASK_OP
                      ? task->first_ref + 2
                      : task->first_ref + p->graph->ops[task->op].n_inputs +
                            p->graph->ops[task->op].n_outputs;
        if (end > n_refs)
            n_refs = end;
        ex->task_resource[i] = NULL;
        if (ex->roles[i] != ROLE_NONE &&
            !(ex->task_resource[i] = resource_of(ex, i, err)))
            return err ? err->status : PL_EIO;
    }
    if (!reserve_queues(ex))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    ex->ptrs = malloc((size_t)n_refs * sizeof *ex->ptrs + 1);
    ex->ref_shapes = malloc((size_t)n_refs * sizeof *ex->ref_shapes + 1);
    if (!ex->ptrs || !ex->ref_shapes)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int ref = 0; ref < n_refs; ref++) {
        const pl_buffer *buf = &p->buffers[p->refs[ref]];
        int model = model_tensor(ex, buf->tensor);
        bool staged = model >= 0 && ex->staged[model] && p->micro_batches > 1;
        char *base = buf->device >= 0 ? ex->devices[buf->device].arena
                     : buf->copy > 0  ? ex->copies[buf->copy]
                     : staged         ? ex->staged[model]
                                      : ex->program_host[buf->tensor];
        ex->ptrs[ref] = base ? base + buf->offset : NULL; /* NULL: on another rank */
        ex->ref_shapes[ref] = &p->shapes[buf->tensor];
    }
    for (int i = 0; i < n; i++) { /* the last micro-batch's activations, for readers */
        const pl_task *task = &p->tasks[i];
        if (task->kind != PL_TASK_OP || task->micro_batch != p->micro_batches - 1 ||
            ex->roles[i] != ROLE_LOCAL)
            continue;
        const pl_op *op = &p->graph->ops[task->op];
        for (int j = 0; j < op->n_outputs; j++) {
            int model = model_tensor(ex, op->outputs[j]); /* -1: a split op's part */
            if (model >= 0)
                ex->last_output[model] = ex->ptrs[task->first_ref + op->n_inputs + j];
        }
    }
    return PL_OK;
}

pl_status pl_executor_set_plan(pl_executor *ex, const pl_plan *plan, pl_fit *fit, pl_error *err)
{
    pl_status status = failed(ex, err);
    if (status == PL_OK && ex->leading &&
        (status = executor_tell(ex, COMMAND_PLAN, 0, err)) == PL_OK)
        status = executor_send_plan(ex, plan, err);
    if (status == PL_OK && ex->comm && ex->program && ex->steps_since_plan > 0)
        status = executor_gather_host(ex, err); /* the next plan may hold a tensor elsewhere */
    if (status != PL_OK)
        return status;
    ex->steps_since_plan = 0;
    free_plan(ex);
    memset(ex->last_output, 0, (size_t)ex->g->n_tensors * sizeof *ex->last_output);
    *fit = (pl_fit){.fits = true, .device = -1};
    pl_program *p = pl_program_new(ex->g, ex->c, plan, err);
    if (!p)
        return err ? err->status : PL_EINPUT;
    if (p->oom_device >= 0) {
        *fit = (pl_fit){false, p->oom_device, p->memory[p->oom_device].total,
                        ex->c->devices[p->oom_device].memory_bytes};
        pl_program_free(p);
        return PL_OK;
    }
    ex->program = p;
    if ((status = bind_program(ex, err)) != PL_OK)
        free_plan(ex);
    return status;
}

void pl_executor_set_interrupt(pl_executor *ex, const volatile sig_atomic_t *interrupt)
{
    ex->interrupt = interrupt;
}

/* This rank's flag. */
bool executor_flagged(const pl_executor *ex)
{
    return ex->interrupt && *ex->interrupt;
}

bool pl_executor_interrupted(const pl_executor *ex)
{
    return ex->comm ? ex->interrupted : executor_flagged(ex);
}

const pl_program *pl_executor_program(const pl_executor *ex)
{
    return ex->program;
}

void *pl_executor_data(pl_executor *ex, int t)
{
    if (ex->g->tensors[t].kind == PL_TENSOR_STATE ||
        (ex->program && ex->program->split && ex->g->tensors[t].kind == PL_TENSOR_PARAM))
        sync_shards(ex, t);
    return lives_on_host(&ex->g->tensors[t]) ? ex->host[t] : ex->last_output[t];
}

/* Task i, its dependencies here done, reaches its resource. */
static void release(pl_executor *ex, int i)
{
    ex->task_resource[i]->ops->release(ex->task_resource[i], i);
}

/* Gathers each staged input's slices along its batch axis, where the program's buffers
 * find them one after another. */
static void stage_inputs(pl_executor *ex, int slices)
{
    for (int t = 0; slices > 1 && t < ex->g->n_tensors; t++) {
        const pl_tensor *tensor = &ex->g->tensors[t];
        if (!ex->staged[t])
            continue;
        int64_t samples = pl_tensor_batch_layout(tensor).batch / slices;
        size_t bytes = (size_t)(pl_tensor_bytes(tensor) / slices);
        for (int k = 0; k < slices; k++)
            pl_batch_gather(tensor, ex->host[t], samples * k, samples,
                            (char *)ex->staged[t] + bytes * (size_t)k);
    }
}

pl_status pl_executor_step(pl_executor *ex, int64_t step, float *loss, pl_error *err)
{
    const pl_program *p = ex->program;
    if (!p)
        return pl_error_set(err, PL_EINPUT, NULL, "the executor has no plan that fits");
    pl_status status = failed(ex, err);
    if (status == PL_OK && ex->leading)
        status = executor_tell(ex, COMMAND_STEP, step, err);
    if (status != PL_OK)
        return status;
    if (!ex->copies_made)
        fill_copies(ex);
    int m = p->micro_batches;
    stage_inputs(ex, m);
    for (int k = 0; k <= m; k++)
        ex->infos[k] = (pl_step_info){.step = step, .micro_batch = k < m ? k : 0,
                                      .micro_batches = m, .training = true};
    for (int i = 0; i < p->n_tasks; i++)
        atomic_store_explicit(&ex->pending[i], ex->deps[i], memory_order_relaxed);
    atomic_store(&ex->remaining, ex->local_parts);
    atomic_store(&ex->cut_short, false);
    if ((status = executor_begin_ranks_step(ex, err)) != PL_OK)
        return status;
    ex->step_start = pl_now();
    for (int i = 0; i < p->n_tasks; i++)
        if (ex->roles[i] != ROLE_NONE && ex->deps[i] == 0)
            release(ex, i);
    pthread_mutex_lock(&ex->done_lock);
    while (atomic_load_explicit(&ex->remaining, memory_order_acquire) != 0 && !ex->failed)
        pthread_cond_wait(&ex->done, &ex->done_lock);
    pthread_mutex_unlock(&ex->done_lock);
    ex->step_seconds = pl_now() - ex->step_start;
    if ((status = failed(ex, err)) != PL_OK || (status = executor_end_ranks_step(ex, err)) != PL_OK)
        return status;
    ex->steps_run++;
    ex->steps_since_plan++;
    double total = 0;
    for (int k = 0; k < m; k++)
        total += ex->losses[k];
    *loss = (float)(total / m);
    if (atomic_load(&ex->cut_short))
        return pl_error_set(err, PL_EINTERRUPTED, NULL, "interrupted");
    return PL_OK;
}

double pl_executor_step_seconds(const pl_executor *ex)
{
    return ex->step_seconds;
}

const double *pl_executor_task_starts(const pl_executor *ex)
{
    return ex->starts;
}

const double *pl_executor_task_ends(const pl_executor *ex)
{
    return ex->ends;
}

const char *pl_executor_device_name(const pl_executor *ex, int d)
{
    return ex->c->devices[d].name;
}

int64_t pl_executor_steps_run(const pl_executor *ex)
{
    return ex->steps_run;
}

bool pl_executor_paced(const pl_executor *ex)
{
    return ex->c->paced;
}

int pl_executor_threads(const pl_executor *ex)
{
    int threads = 0;
    for (int d = 0; d < ex->c->n_devices; d++) {
        bool used = false;
        for (int i = 0; ex->program && i < ex->program->n_tasks && !used; i++)
            used = ex->program->tasks[i].resource == d;
        threads += used ? ex->c->devices[d].threads : 0;
    }
    return threads;
}
