/* The executor's timeline as Chrome/Perfetto trace-event JSON: a "complete" event (ph X)
 * per task, on one row (tid) per device and per link, in microseconds from the step's
 * start. Open it in chrome://tracing or ui.perfetto.dev. */
#include <stdio.h>

#include "atomic_file.h"
#include "executor.h"

static void write_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

static void write_row_name(FILE *out, int tid, const char *name, const char *to)
{
    fprintf(out, ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_name\",\"args\":"
            "{\"name\":", tid);
    char text[600];
    snprintf(text, sizeof text, "%s%s%s", to ? "link " : "", name, to ? to : "");
    write_string(out, text);
    fprintf(out, "}},\n{\"ph\":\"M\",\"pid\":1,\"tid\":%d,\"name\":\"thread_sort_index\","
            "\"args\":{\"sort_index\":%d}}", tid, tid);
}

pl_status pl_executor_write_trace(const pl_executor *ex, const char *path, pl_error *err)
{
    const pl_program *p = pl_executor_program(ex);
    if (!p)
        return pl_error_set(err, PL_EINPUT, NULL, "no plan has run: nothing to trace");
    pl_atomic_file file;
    if (pl_atomic_open(&file, path, err) != PL_OK)
        return PL_EIO;
    FILE *out = file.fp;
    const double *starts = pl_executor_task_starts(ex), *ends = pl_executor_task_ends(ex);
    fprintf(out, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
            "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":");
    write_string(out, p->graph->name);
    fprintf(out, "}}");
    for (int d = 0; d < p->n_devices; d++)
        write_row_name(out, d, pl_executor_device_name(ex, d), NULL);
    for (int l = 0; l < p->n_links; l++) {
        char to[300];
        const pl_link_use *use = &p->links[l];
        snprintf(to, sizeof to, " -> %s",
                 use->port != PL_PORT_NONE ? pl_port_names[use->port]
                                           : pl_executor_device_name(ex, use->to));
        write_row_name(out, p->n_devices + l, pl_executor_device_name(ex, use->from), to);
    }
    for (int i = 0; i < p->n_tasks; i++) {
        const pl_task *task = &p->tasks[i];
        char name[600];
        pl_task_name(p, task, name, sizeof name);
        fprintf(out, ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":",
                task->resource, 1e6 * starts[i], 1e6 * (ends[i] - starts[i]));
        write_string(out, name);
        fprintf(out, ",\"cat\":\"%s\",\"args\":{\"micro_batch\":%d,\"task\":%d",
                task->kind == PL_TASK_COPY     ? "copy"
                : task->kind == PL_TASK_REDUCE ? "reduce"
                : p->graph->ops[task->op].phase == PL_PHASE_FORWARD ? "forward"
                : p->graph->ops[task->op].phase == PL_PHASE_BACKWARD ? "backward" : "update",
                task->micro_batch, i);
        if (task->kind != PL_TASK_OP)
            fprintf(out, ",\"bytes\":%lld", (long long)pl_task_bytes(p, task));
        else
            fprintf(out, ",\"flops\":%.0f", pl_task_flops(p, task));
        fprintf(out, "}}");
    }
    fprintf(out, "\n]}\n");
    return pl_atomic_commit(&file, err);
}
