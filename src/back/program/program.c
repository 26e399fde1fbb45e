/* A step program's own queries and its end (program.h); compiling one is
 * program_compile.c's. */
#include "program.h"

#include <stdio.h>
#include <stdlib.h>

void pl_program_free(pl_program *p)
{
    if (!p)
        return;
    pl_partitions_free(p->partitions);
    free(p->links);
    free(p->transfers);
    free(p->copy_tensor);
    free(p->copy_range);
    free(p->copy_device);
    free(p->copy_is_shard);
    free(p->shards);
    free(p->shapes);
    free(p->op_flops);
    free(p->tasks);
    free(p->succ);
    free(p->refs);
    free(p->buffers);
    free(p->memory);
    pl_split_graph_free(p->split);
    pl_plan_free(p->split_plan);
    free(p);
}

double pl_task_share(const pl_program *p, const pl_task *task)
{
    if (task->kind != PL_TASK_OP || task->shard < 0)
        return 1;
    const pl_range *shard = &p->shards[task->shard];
    int64_t whole = pl_tensor_elements(&p->shapes[p->graph->ops[task->op].inputs[0]]);
    return whole > 0 ? (double)(shard->end - shard->start) / (double)whole : 0;
}

double pl_task_flops(const pl_program *p, const pl_task *task)
{
    return task->kind == PL_TASK_OP ? p->op_flops[task->op] * pl_task_share(p, task) : 0;
}

int64_t pl_task_bytes(const pl_program *p, const pl_task *task)
{
    return task->kind == PL_TASK_OP ? 0 : p->buffers[p->refs[task->first_ref + 1]].bytes;
}

bool pl_task_reads_copy(const pl_program *p, const pl_task *reader, const pl_task *copy)
{
    if (reader->kind != PL_TASK_OP || copy->kind != PL_TASK_COPY)
        return false;
    int written = p->refs[copy->first_ref + 1];
    for (int k = 0; k < p->graph->ops[reader->op].n_inputs; k++)
        if (p->refs[reader->first_ref + k] == written)
            return true;
    return false;
}

int pl_program_ops_on(const pl_program *p, int d)
{
    const pl_graph *g = p->graph;
    bool *seen = calloc((size_t)g->n_ops + 1, sizeof *seen);
    int count = 0;
    for (int i = 0; seen && i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        if (task->kind == PL_TASK_OP && task->resource == d && !seen[task->op]) {
            seen[task->op] = true;
            count++;
        }
    }
    free(seen);
    return count;
}

void pl_task_name(const pl_program *p, const pl_task *task, char *buf, size_t cap)
{
    const pl_graph *g = p->graph;
    const char *name = task->kind == PL_TASK_OP
                           ? g->ops[task->op].name
                           : g->tensors[p->transfers[task->transfer].tensor].name;
    const char *what = task->kind == PL_TASK_COPY ? "copy " : task->kind == PL_TASK_REDUCE
                                                                ? "reduce " : "";
    if (task->micro_batch >= 0)
        snprintf(buf, cap, "%s%s#%d", what, name, task->micro_batch);
    else
        snprintf(buf, cap, "%s%s", what, name);
}
