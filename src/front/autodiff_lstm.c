/* The LSTM cell's backward rule, with the weight gradient made over blocks of time steps.
 *
 * An unrolled LSTM reads one weight w at every step, and its gradient is the sum over the
 * steps of [x_t | h_t]^T . dz_t (dz: the gradient of the gates' inputs). Made step by
 * step, every term is a whole [E+H, 4H] matrix to write, carry to the weight's device
 * and accumulate, while its product has only the (micro-)batch's few rows. So
 * lstm_cell_grad stops at dz, and the steps of one (w, b) wait here, BLOCK_STEPS
 * consecutive steps at a time: a block's [x | h] and dz are joined along a time axis,
 * one matmul_grad_b makes its dw and one sum_to its db. Blocks rather than the whole
 * sequence keep that product, a third of an LSTM's work, spread over the steps' groups.
 * A block's ops go with its earliest step, whose gradient comes last. The weight may be a
 * parameter (its blocks end after the walk) or computed (an importer joins PyTorch's two
 * matrices): then its blocks end just before the walk reaches the op that computes it,
 * since its gradient must be whole there. A projected cell (gx [, w, h, c]) reads only
 * the recurrent weight [H, 4H] and no bias: its blocks join h alone, and dz is gx's
 * gradient, which the matmul that made the whole sequence's gx takes on. */
#include <stdlib.h>

#include "autodiff_impl.h"

#define BLOCK_STEPS PL_LSTM_BLOCK_STEPS

typedef struct lstm_step {
    int x, h;   /* the cell's inputs; x -1: projected; h -1: no state, so the step adds
                   nothing to w[E:] */
    int h_next; /* the cell's h': the shape of the zeros that stand for a missing h */
    int dz;
} lstm_step;

struct pl_lstm_block {
    int w, b; /* b -1: projected */
    int op;                       /* the cell added last: the block's earliest step */
    int n;                        /* steps waiting */
    lstm_step steps[BLOCK_STEPS]; /* latest first, as the backward walk meets them */
};

static int out_of_memory(pl_autodiff *ad)
{
    pl_error_set(ad->err, PL_ENOMEM, NULL, "out of memory");
    return -1;
}

/* Tensors [N, width_i] joined along axis 1 and cut into [N, steps, width]. */
static int over_time(pl_autodiff *ad, const int *parts, int n_parts, int steps,
                     int64_t width)
{
    pl_attrs join;
    pl_attrs_default(&join);
    join.axis = 1;
    int joined = pl_ad_emit(ad, PL_OP_CONCAT, parts, n_parts, 1, &join);
    if (joined < 0)
        return -1;
    bool batched = ad->g->tensors[joined].batch_axis != PL_NO_BATCH;
    int64_t *shape = pl_arena_alloc(&ad->g->arena, 3 * sizeof *shape);
    if (!shape)
        return out_of_memory(ad);
    int n = 0;
    if (!batched) /* an unbatched x: the rows are part of the shape */
        shape[n++] = ad->g->tensors[joined].dims[0];
    shape[n++] = steps;
    shape[n++] = width;
    pl_attrs cut;
    pl_attrs_default(&cut);
    cut.shape = (pl_int_list){n, shape};
    cut.batch_group = pl_tensor_batch_group(&ad->g->tensors[joined]);
    return pl_ad_emit(ad, PL_OP_RESHAPE, &joined, 1, 1, &cut);
}

/* dw and db of the block's steps, and the block emptied. */
static bool emit_block(pl_autodiff *ad, pl_lstm_block *block)
{
    int n = block->n, pieces[2 * BLOCK_STEPS], n_pieces = 0, dzs[BLOCK_STEPS];
    block->n = 0;
    ad->op = block->op;
    for (int k = 0; k < n; k++) { /* in forward order */
        const lstm_step *s = &block->steps[n - 1 - k];
        if (s->x >= 0)
            pieces[n_pieces++] = s->x;
        int h = s->h >= 0 ? s->h : pl_ad_emit(ad, PL_OP_ZEROS_LIKE, &s->h_next, 1, 1, NULL);
        if ((pieces[n_pieces++] = h) < 0)
            return false;
        dzs[k] = s->dz;
    }
    int64_t rows = ad->g->tensors[block->w].dims[0], cols = ad->g->tensors[block->w].dims[1];
    int xh = over_time(ad, pieces, n_pieces, n, rows), dz = over_time(ad, dzs, n, n, cols);
    if (xh < 0 || dz < 0)
        return false;
    if (pl_ad_needs(ad, block->w)) {
        pl_attrs plain;
        pl_attrs_default(&plain);
        int inputs[3] = {dz, xh, block->w};
        if (!pl_ad_contribute(ad, block->w,
                              pl_ad_emit(ad, PL_OP_MATMUL_GRAD_B, inputs, 3, 1, &plain)))
            return false;
    }
    return block->b < 0 || !pl_ad_needs(ad, block->b) || pl_ad_contribute(ad, block->b, dz);
}

static pl_lstm_block *block_of(pl_autodiff *ad, int w, int b)
{
    for (int k = 0; k < ad->n_lstm_blocks; k++)
        if (ad->lstm_blocks[k].w == w && ad->lstm_blocks[k].b == b)
            return &ad->lstm_blocks[k];
    pl_lstm_block *grown = realloc(ad->lstm_blocks,
                                   (size_t)(ad->n_lstm_blocks + 1) * sizeof *grown);
    if (!grown)
        return out_of_memory(ad), NULL;
    ad->lstm_blocks = grown;
    grown[ad->n_lstm_blocks] = (pl_lstm_block){.w = w, .b = b};
    return &grown[ad->n_lstm_blocks++];
}

/* lstm_cell(x, w, b [, h, c]) -> h', c' [, gates]; lstm_cell_grad(dh', dc', x, w, b
 * [, h, c] [, gates]) -> dx, dz [, dh, dc]. Projected: lstm_cell(gx [, w, h, c]) and
 * lstm_cell_grad(dh', dc', gx [, w, h, c] [, gates]) -> dz [, dh, dc], dz being gx's
 * gradient. autodiff.c adds the gates output. */
bool pl_backward_lstm_cell(pl_autodiff *ad, int op)
{
    pl_op f = ad->g->ops[op];
    int inputs[8], n = 2;
    if ((inputs[0] = pl_ad_grad_or_zeros(ad, f.outputs[0])) < 0 ||
        (inputs[1] = pl_ad_grad_or_zeros(ad, f.outputs[1])) < 0)
        return false;
    for (int i = 0; i < f.n_inputs; i++)
        inputs[n++] = f.inputs[i];
    if (f.n_outputs == 3)
        inputs[n++] = f.outputs[2];
    bool projected = pl_lstm_cell_projected(f.n_inputs), state = f.n_inputs >= 4;
    int n_grads = f.n_inputs == 1 ? 1 : f.n_inputs - 1; /* [dx,] dz [, dh, dc] */
    int first = pl_ad_emit(ad, PL_OP_LSTM_CELL_GRAD, inputs, n, n_grads, NULL);
    if (first < 0)
        return false;
    if (pl_ad_needs(ad, f.inputs[0]) && !pl_ad_contribute(ad, f.inputs[0], first))
        return false;
    int h = projected ? 2 : 3, dh = projected ? 1 : 2; /* h's input, dh's output */
    for (int i = 0; state && i < 2; i++) /* h and c */
        if (pl_ad_needs(ad, f.inputs[h + i]) &&
            !pl_ad_contribute(ad, f.inputs[h + i], pl_ad_output(ad, first, dh + i)))
            return false;
    if (projected && !state)
        return true; /* no weight */
    int w = f.inputs[1], b = projected ? -1 : f.inputs[2];
    if (!pl_ad_needs(ad, w) && (b < 0 || !pl_ad_needs(ad, b)))
        return true;
    pl_lstm_block *block = block_of(ad, w, b);
    if (!block)
        return false;
    block->steps[block->n++] = (lstm_step){.x = projected ? -1 : f.inputs[0],
                                           .h = state ? f.inputs[h] : -1,
                                           .h_next = f.outputs[0],
                                           .dz = pl_ad_output(ad, first, projected ? 0 : 1)};
    block->op = op;
    return block->n < BLOCK_STEPS || emit_block(ad, block);
}

bool pl_ad_flush_lstm(pl_autodiff *ad, int op)
{
    pl_op f = ad->g->ops[op]; /* a copy: emitting may move the op array */
    for (int k = 0; k < ad->n_lstm_blocks; k++) {
        pl_lstm_block *block = &ad->lstm_blocks[k];
        for (int i = 0; i < f.n_outputs && block->n > 0; i++)
            if ((f.outputs[i] == block->w || f.outputs[i] == block->b) && !emit_block(ad, block))
                return false;
    }
    return true;
}

bool pl_ad_finish_lstm(pl_autodiff *ad)
{
    for (int k = 0; k < ad->n_lstm_blocks; k++)
        if (ad->lstm_blocks[k].n > 0 && !emit_block(ad, &ad->lstm_blocks[k]))
            return false;
    return true;
}
