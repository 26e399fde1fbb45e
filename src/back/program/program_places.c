/* Where a replicated step keeps its values (program_impl.h): every replica's partitions,
 * the transfers they need, merged, and each tensor's places. One replica gives what its
 * partitions say; several share a transfer a tensor makes between the same two devices,
 * and a device with a copy of a parameter reads that copy rather than receive another. */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "program_impl.h"

static bool kept(const pl_builder *b, int t)
{
    pl_tensor_kind kind = pl_tensor_kind_of(b, t);
    return kind == PL_TENSOR_PARAM || kind == PL_TENSOR_STATE;
}

int pl_place_of(const pl_builder *b, int t, int d)
{
    for (int i = b->first_place[t]; i < b->first_place[t + 1]; i++)
        if (b->place_device[i] == d || b->place_device[i] < 0)
            return i;
    return -1;
}

bool pl_has_copy(const pl_builder *b, int t, int d)
{
    int i = pl_place_of(b, t, d);
    return i >= 0 && b->place_copy[i] >= 0;
}

/* The devices holding a copy of each parameter and state: where a replica keeps it, in
 * replica order (the first is replica 0's). */
static void find_copies(const pl_builder *b, int t, int *devices, int *n)
{
    *n = 0;
    for (int r = 0; r < b->replicas; r++) {
        int d = b->parts[r]->tensor_device[t];
        bool seen = d < 0;
        for (int i = 0; i < *n && !seen; i++)
            seen = devices[i] == d;
        if (!seen)
            devices[(*n)++] = d;
    }
}

/* Whether a replica keeps a copy of parameter or state t on device d. */
static bool copy_on(const pl_builder *b, int t, int d)
{
    for (int r = 0; r < b->replicas; r++)
        if (b->parts[r]->tensor_device[t] == d)
            return true;
    return false;
}

/* Every replica's transfers, merged: an activation's per (from, to), carrying the slices of
 * the replicas that need it; a parameter's or state's once per destination without a copy. */
static bool merge_transfers(pl_builder *b)
{
    const pl_graph *g = b->g;
    pl_program *p = b->p;
    int cap = 64, *next = NULL, next_cap = 0;
    int *head = malloc((size_t)g->n_tensors * sizeof *head + 1);
    p->transfers = malloc((size_t)cap * sizeof *p->transfers);
    b->transfer_replicas = malloc((size_t)cap * sizeof *b->transfer_replicas);
    bool ok = head && p->transfers && b->transfer_replicas;
    for (int t = 0; ok && t < g->n_tensors; t++)
        head[t] = -1;
    for (int r = 0; ok && r < b->replicas; r++)
        for (int i = 0; ok && i < b->parts[r]->n_transfers; i++) {
            pl_transfer tr = b->parts[r]->transfers[i];
            bool once = kept(b, tr.tensor);
            if (once && copy_on(b, tr.tensor, tr.to))
                continue;
            int x = head[tr.tensor];
            while (x >= 0 && !(p->transfers[x].to == tr.to &&
                               (once || p->transfers[x].from == tr.from)))
                x = next[x];
            if (x < 0) {
                int bits_cap = cap;
                ok = pl_grow(&p->transfers, &cap, p->n_transfers + 1, sizeof *p->transfers,
                             64) &&
                     pl_grow(&b->transfer_replicas, &bits_cap, p->n_transfers + 1,
                             sizeof *b->transfer_replicas, 64) &&
                     pl_grow(&next, &next_cap, p->n_transfers + 1, sizeof *next, 64);
                if (!ok)
                    break;
                x = p->n_transfers++;
                p->transfers[x] = tr;
                b->transfer_replicas[x] = 0;
                next[x] = head[tr.tensor];
                head[tr.tensor] = x;
            }
            if (!once)
                b->transfer_replicas[x] |= UINT64_C(1) << r;
        }
    free(head);
    free(next);
    return ok;
}

/* The places: the host for inputs and constants; else the copies first (replica order),
 * then every other device a replica produces the tensor on or sends it to. */
static bool lay_out_places(pl_builder *b)
{
    const pl_graph *g = b->g;
    pl_program *p = b->p;
    int n_devices = p->n_devices, copies[PL_MAX_REPLICAS], n_copies;
    uint64_t *held = calloc((size_t)g->n_tensors + 1, sizeof *held);
    b->first_place = calloc((size_t)g->n_tensors + 1, sizeof *b->first_place);
    if (!held || !b->first_place) {
        free(held);
        return false;
    }
    for (int r = 0; r < b->replicas; r++)
        for (int t = 0; t < g->n_tensors; t++)
            if (b->parts[r]->tensor_device[t] >= 0)
                held[t] |= UINT64_C(1) << b->parts[r]->tensor_device[t];
    for (int x = 0; x < p->n_transfers; x++)
        held[p->transfers[x].tensor] |= UINT64_C(1) << p->transfers[x].to;
    int total = 0, extra = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        b->first_place[t] = total;
        total += held[t] ? __builtin_popcountll(held[t]) : 1;
        if (kept(b, t)) {
            find_copies(b, t, copies, &n_copies);
            extra += n_copies > 1 ? n_copies - 1 : 0;
        }
    }
    b->first_place[g->n_tensors] = total;
    b->n_places = total;
    b->place_device = malloc((size_t)total * sizeof *b->place_device + 1);
    b->place_copy = malloc((size_t)total * sizeof *b->place_copy + 1);
    b->place_tensor = malloc((size_t)total * sizeof *b->place_tensor + 1);
    b->place_stored = malloc((size_t)total * sizeof *b->place_stored + 1);
    p->copy_tensor = malloc(((size_t)extra + 1) * sizeof *p->copy_tensor);
    p->copy_range = malloc(((size_t)extra + 1) * sizeof *p->copy_range);
    p->copy_device = malloc(((size_t)extra + 1) * sizeof *p->copy_device);
    p->copy_is_shard = calloc((size_t)extra + 1, sizeof *p->copy_is_shard);
    bool ok = b->place_device && b->place_copy && b->place_tensor && b->place_stored &&
              p->copy_tensor && p->copy_range && p->copy_device && p->copy_is_shard;
    p->n_copies = 1;
    for (int t = 0; ok && t < g->n_tensors; t++) {
        int i = b->first_place[t];
        for (int j = i; j < b->first_place[t + 1]; j++) {
            b->place_tensor[j] = t;
            b->place_stored[j] = (pl_range){0, pl_tensor_elements(&g->tensors[t])};
        }
        if (!held[t]) { /* inputs and constants: on the host; or nowhere, never read */
            b->place_device[i] = -1;
            b->place_copy[i] = kept(b, t) ? 0 : -1;
            continue;
        }
        n_copies = 0;
        if (kept(b, t))
            find_copies(b, t, copies, &n_copies);
        for (int c = 0; c < n_copies; c++, i++) {
            b->place_device[i] = copies[c];
            b->place_copy[i] = c == 0 ? 0 : p->n_copies;
            if (c > 0) {
                p->copy_range[p->n_copies] = b->place_stored[i];
                p->copy_device[p->n_copies] = copies[c];
                p->copy_tensor[p->n_copies++] = t;
            }
            held[t] &= ~(UINT64_C(1) << copies[c]);
        }
        for (int d = 0; d < n_devices; d++)
            if (held[t] >> d & 1) {
                b->place_device[i] = d;
                b->place_copy[i++] = -1;
            }
    }
    free(held);
    return ok;
}

pl_status pl_program_places(pl_builder *b, pl_error *err)
{
    b->parts = calloc((size_t)b->replicas, sizeof *b->parts);
    if (!b->parts)
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    for (int r = 0; r < b->replicas; r++)
        if (!(b->parts[r] = pl_partitions_of_replica(b->plan, r, b->g, b->p->n_devices, err)))
            return err ? err->status : PL_ENOMEM;
    if (!merge_transfers(b) || !lay_out_places(b))
        return pl_error_set(err, PL_ENOMEM, NULL, "out of memory");
    return PL_OK;
}
