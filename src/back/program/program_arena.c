/* A device's arena packed by lifetime: each activation buffer holds memory from the task
 * that writes it to the last that reads it (program order), and buffers whose lifetimes do
 * not meet share bytes. Blocks are placed in the order they are written, each at the
 * lowest offset where it meets no block alive then (first fit). A block placed over bytes
 * that earlier blocks held records them, the last holder of each byte: its writer must
 * wait for their readers (program_buffers.c), so any run of the program keeps them apart.
 * That wait must not tie resources together that the dataflow leaves apart (a device's
 * next activation waiting for a link to send the last one would stall a pipeline): a
 * block takes only bytes whose last holders were read on its writer's resource, or held
 * another micro-batch of the same value where it is (a pipeline keeps as many of those
 * as its schedule has alive at once). */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "program_impl.h"

typedef struct held {
    int64_t offset, end; /* bytes [offset, end) */
    int until;           /* last use, in program order */
    int buffer;
    int readers;         /* the resource its readers run on, or -1 (several) */
    int value;           /* what it holds a micro-batch of (pl_arena_block.value) */
} held;

typedef struct packer {
    held *live;   /* alive now, by offset */
    int n_live, live_cap;
    held *last;   /* per byte range, by offset: its last holder among the freed (`until` unused) */
    int n_last, last_cap;
    int *preds;   /* the holders found for the block being placed */
    int n_preds, preds_cap;
} packer;

static int by_start(const void *x, const void *y)
{
    const pl_arena_block *a = x, *b = y;
    if (a->start != b->start)
        return (a->start > b->start) - (a->start < b->start);
    return (a->buffer > b->buffer) - (a->buffer < b->buffer);
}

static bool insert_at(held **array, int *n, int *cap, int at, held item)
{
    if (!pl_grow(array, cap, *n + 1, sizeof **array, 64))
        return false;
    memmove(*array + at + 1, *array + at, (size_t)(*n - at) * sizeof **array);
    (*array)[at] = item;
    (*n)++;
    return true;
}

/* Bytes [h.offset, h.end) were last held by h.buffer: it replaces what the ranges there
 * said, trimming the ranges it cuts. */
static bool note_last_holder(packer *pk, held h)
{
    int w = 0, at = -1;
    held cut_after = {0, 0, 0, -1, -1, -1};
    for (int r = 0; r < pk->n_last; r++) {
        held range = pk->last[r];
        if (range.end <= h.offset || range.offset >= h.end) {
            if (at < 0 && range.offset >= h.end)
                at = w;
            pk->last[w++] = range;
            continue;
        }
        if (range.end > h.end) /* its tail outlives h */
            cut_after = (held){h.end, range.end, 0, range.buffer, range.readers, range.value};
        if (range.offset < h.offset) {
            range.end = h.offset;
            pk->last[w++] = range;
        }
    }
    pk->n_last = w;
    if (at < 0)
        at = w;
    if (!insert_at(&pk->last, &pk->n_last, &pk->last_cap, at, h))
        return false;
    return cut_after.buffer < 0 ||
           insert_at(&pk->last, &pk->n_last, &pk->last_cap, at + 1, cut_after);
}

/* Frees the blocks whose last use is before `now`. */
static bool free_before(packer *pk, int now)
{
    int w = 0;
    for (int i = 0; i < pk->n_live; i++) {
        if (pk->live[i].until >= now)
            pk->live[w++] = pk->live[i];
        else if (!note_last_holder(pk, pk->live[i]))
            return false;
    }
    pk->n_live = w;
    return true;
}

/* The last holders of bytes [offset, end), each once. */
static bool find_preds(packer *pk, int64_t offset, int64_t end)
{
    pk->n_preds = 0;
    for (int r = 0; r < pk->n_last && pk->last[r].offset < end; r++) {
        if (pk->last[r].end <= offset)
            continue;
        bool seen = false;
        for (int j = 0; j < pk->n_preds && !seen; j++)
            seen = pk->preds[j] == pk->last[r].buffer;
        if (seen)
            continue;
        if (!pl_grow(&pk->preds, &pk->preds_cap, pk->n_preds + 1, sizeof *pk->preds, 16))
            return false;
        pk->preds[pk->n_preds++] = pk->last[r].buffer;
    }
    return true;
}

/* Places one block at the lowest offset free of the live blocks and of bytes last held by
 * blocks read on another resource than its writer's (other micro-batches of its value
 * aside); returns its offset, or -1 when out
 * of memory. Both lists are by offset and offsets only grow: one pass over each. */
static int64_t place(packer *pk, const pl_arena_block *block, pl_edges *preds)
{
    int64_t offset = 0;
    int at = 0, r = 0;
    for (bool moved = true; moved;) {
        moved = false;
        while (at < pk->n_live && pk->live[at].end <= offset)
            at++;
        while (r < pk->n_last && pk->last[r].end <= offset)
            r++;
        if (at < pk->n_live && pk->live[at].offset < offset + block->bytes) {
            offset = pk->live[at].end;
            moved = true;
            continue;
        }
        for (int q = r; q < pk->n_last && pk->last[q].offset < offset + block->bytes; q++)
            if (pk->last[q].readers != block->writer && pk->last[q].value != block->value) {
                offset = pk->last[q].end;
                moved = true;
                break;
            }
    }
    held h = {offset, offset + block->bytes, block->end, block->buffer, block->readers,
              block->value};
    if (!find_preds(pk, h.offset, h.end) ||
        !insert_at(&pk->live, &pk->n_live, &pk->live_cap, at, h))
        return -1;
    for (int j = 0; j < pk->n_preds; j++)
        if (!pl_edges_add(preds, block->buffer, pk->preds[j]))
            return -1;
    return offset;
}

bool pl_pack_arena(pl_program *p, int device, pl_arena_block *blocks, int n, pl_edges *preds)
{
    qsort(blocks, (size_t)n, sizeof *blocks, by_start);
    packer pk = {0};
    bool ok = true;
    int64_t top = p->memory[device].arena;
    for (int i = 0; ok && i < n; i++) {
        int64_t offset = -1;
        ok = free_before(&pk, blocks[i].start) && (offset = place(&pk, &blocks[i], preds)) >= 0;
        if (ok) {
            p->buffers[blocks[i].buffer].offset = p->memory[device].arena + offset;
            if (p->memory[device].arena + offset + blocks[i].bytes > top)
                top = p->memory[device].arena + offset + blocks[i].bytes;
        }
    }
    p->memory[device].arena = top;
    free(pk.live);
    free(pk.last);
    free(pk.preds);
    return ok;
}
