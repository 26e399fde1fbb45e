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
 * as its schedule has alive at once). First fit on blocks of many sizes can leave gaps:
 * where keeping each value's micro-batches in slots of their own takes less, the arena
 * is laid out that way instead. */
#include <limits.h>
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
    int soonest;  /* the earliest `until` among the live */
    int64_t no_hole; /* a block this large found no room below the top since the last
                        free: no larger one looks there again until a free */
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

/* The first range of `ranges` (by offset, disjoint) that ends after `offset`. */
static int first_after(const held *ranges, int n, int64_t offset)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ranges[mid].end <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Replaces ranges [from, to) of *array with the `n` of `with`. */
static bool splice(held **array, int *count, int *cap, int from, int to, const held *with, int n)
{
    if (!pl_grow(array, cap, *count - (to - from) + n, sizeof **array, 64))
        return false;
    memmove(*array + from + n, *array + to, (size_t)(*count - to) * sizeof **array);
    memcpy(*array + from, with, (size_t)n * sizeof *with);
    *count += n - (to - from);
    return true;
}

/* Bytes [h.offset, h.end) were last held by h.buffer: it replaces what the ranges there
 * said, trimming the ranges it cuts. */
static bool note_last_holder(packer *pk, held h)
{
    int from = first_after(pk->last, pk->n_last, h.offset), to = from;
    while (to < pk->n_last && pk->last[to].offset < h.end)
        to++;
    held with[3];
    int n = 0;
    if (to > from && pk->last[from].offset < h.offset) { /* the head h cuts off */
        with[n] = pk->last[from];
        with[n++].end = h.offset;
    }
    with[n++] = h;
    if (to > from && pk->last[to - 1].end > h.end) { /* the tail it leaves */
        with[n] = pk->last[to - 1];
        with[n++].offset = h.end;
    }
    return splice(&pk->last, &pk->n_last, &pk->last_cap, from, to, with, n);
}

/* Frees the blocks whose last use is before `now`. */
static bool free_before(packer *pk, int now)
{
    if (now <= pk->soonest)
        return true;
    pk->no_hole = INT64_MAX;
    int w = 0;
    pk->soonest = INT_MAX;
    for (int i = 0; i < pk->n_live; i++) {
        if (pk->live[i].until >= now) {
            if (pk->live[i].until < pk->soonest)
                pk->soonest = pk->live[i].until;
            pk->live[w++] = pk->live[i];
        } else if (!note_last_holder(pk, pk->live[i])) {
            return false;
        }
    }
    pk->n_live = w;
    return true;
}

/* The last holders of bytes [offset, end), each once. */
static bool find_preds(packer *pk, int64_t offset, int64_t end)
{
    pk->n_preds = 0;
    for (int r = first_after(pk->last, pk->n_last, offset);
         r < pk->n_last && pk->last[r].offset < end; r++) {
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

/* The lowest offset free of the live blocks and of bytes last held by blocks read on
 * another resource than the block's writer (other micro-batches of its value aside). Both
 * lists are by offset and the offset only grows: one pass over each. */
static int64_t first_fit(packer *pk, const pl_arena_block *block)
{
    int64_t offset = 0;
    int at = 0, r = 0;
    if (block->bytes >= pk->no_hole && pk->n_live > 0) { /* straight to the top */
        at = pk->n_live - 1;
        offset = pk->live[at].end;
        r = first_after(pk->last, pk->n_last, offset);
    }
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
    if (at == pk->n_live && block->bytes < pk->no_hole) /* it found no hole below the top */
        pk->no_hole = block->bytes;
    return offset;
}

/* Puts the block at `offset` (free now); with `preds`, the edges to the last holders of
 * its bytes. */
static bool occupy(packer *pk, const pl_arena_block *block, int64_t offset, pl_edges *preds)
{
    held h = {offset, offset + block->bytes, block->end, block->buffer, block->readers,
              block->value};
    if (preds && !find_preds(pk, h.offset, h.end))
        return false;
    for (int j = 0; preds && j < pk->n_preds; j++)
        if (!pl_edges_add(preds, block->buffer, pk->preds[j]))
            return false;
    if (h.until < pk->soonest)
        pk->soonest = h.until;
    int at = first_after(pk->live, pk->n_live, h.offset);
    return splice(&pk->live, &pk->n_live, &pk->live_cap, at, at, &h, 1);
}

/* Goes through the blocks in the order they are written: places each by first fit when
 * `fit`, else at offsets[i]; its edges into `preds` when not NULL. The arena's size, or -1
 * when out of memory. */
static int64_t sweep(const pl_arena_block *blocks, int n, int64_t *offsets, bool fit,
                     pl_edges *preds)
{
    packer pk = {.soonest = INT_MAX, .no_hole = INT64_MAX};
    int64_t top = 0;
    bool ok = true;
    for (int i = 0; ok && i < n; i++) {
        ok = free_before(&pk, blocks[i].start);
        if (ok && fit)
            offsets[i] = first_fit(&pk, &blocks[i]);
        ok = ok && occupy(&pk, &blocks[i], offsets[i], preds);
        if (offsets[i] + blocks[i].bytes > top)
            top = offsets[i] + blocks[i].bytes;
    }
    free(pk.live);
    free(pk.last);
    free(pk.preds);
    return ok ? top : -1;
}

/* A block's value and start, to visit each value's blocks in turn. */
typedef struct value_block {
    int value, start, index;
} value_block;

static int by_value_then_start(const void *x, const void *y)
{
    const value_block *a = x, *b = y;
    if (a->value != b->value)
        return (a->value > b->value) - (a->value < b->value);
    return (a->start > b->start) - (a->start < b->start);
}

/* The blocks of each value one after another, each value's micro-batches in slots of
 * their own that a micro-batch takes once the one before in it is last read: what the
 * arena would be if values never shared bytes. With `preds`, the edge from each block to
 * the one before it in its slot, the only block that held its bytes. */
static int64_t by_value(const pl_arena_block *blocks, int n, int64_t *offsets, pl_edges *preds)
{
    value_block *order = malloc(((size_t)n + 1) * sizeof *order);
    int *slot_end = malloc(((size_t)n + 1) * sizeof *slot_end);
    int *slot_holder = malloc(((size_t)n + 1) * sizeof *slot_holder);
    if (!order || !slot_end || !slot_holder) {
        free(order);
        free(slot_end);
        free(slot_holder);
        return -1;
    }
    for (int i = 0; i < n; i++)
        order[i] = (value_block){blocks[i].value, blocks[i].start, i};
    qsort(order, (size_t)n, sizeof *order, by_value_then_start);
    int64_t top = 0;
    for (int i = 0, slots = 0; i < n; i++) {
        const pl_arena_block *block = &blocks[order[i].index];
        int s = 0;
        while (s < slots && slot_end[s] >= block->start)
            s++;
        if (s == slots)
            slots++;
        else if (preds && !pl_edges_add(preds, block->buffer, blocks[slot_holder[s]].buffer))
            top = -1;
        if (top < 0)
            break;
        slot_end[s] = block->end;
        slot_holder[s] = order[i].index;
        offsets[order[i].index] = top + s * block->bytes;
        if (i + 1 == n || order[i + 1].value != order[i].value) { /* the value's last */
            top += slots * block->bytes;
            slots = 0;
        }
    }
    free(order);
    free(slot_end);
    free(slot_holder);
    return top;
}

bool pl_pack_arena(pl_program *p, int device, pl_arena_block *blocks, int n, bool tight,
                   pl_edges *preds)
{
    qsort(blocks, (size_t)n, sizeof *blocks, by_start);
    int64_t *fitted = malloc(((size_t)n + 1) * sizeof *fitted);
    int64_t *apart = malloc(((size_t)n + 1) * sizeof *apart);
    if (!tight) { /* values apart: their slots say which blocks share bytes */
        int64_t top = fitted && apart ? by_value(blocks, n, apart, preds) : -1;
        for (int i = 0; top >= 0 && i < n; i++)
            p->buffers[blocks[i].buffer].offset = p->memory[device].arena + apart[i];
        if (top >= 0)
            p->memory[device].arena += top;
        free(fitted);
        free(apart);
        return top >= 0;
    }
    int64_t fitted_top = fitted && apart ? sweep(blocks, n, fitted, true, NULL) : -1;
    int64_t apart_top = fitted_top >= 0 ? by_value(blocks, n, apart, NULL) : -1;
    /* first fit on blocks of many sizes may leave gaps that values kept apart do not */
    int64_t *offsets = apart_top >= 0 && apart_top < fitted_top ? apart : fitted;
    bool ok = apart_top >= 0 && sweep(blocks, n, offsets, false, preds) >= 0;
    for (int i = 0; ok && i < n; i++)
        p->buffers[blocks[i].buffer].offset = p->memory[device].arena + offsets[i];
    if (ok)
        p->memory[device].arena += offsets == apart ? apart_top : fitted_top;
    free(fitted);
    free(apart);
    return ok;
}
