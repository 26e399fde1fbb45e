/* One GRU step and its gradient, on the gates' inputs as PyTorch computes them.
 *
 * gru_cell(gx [N,3H] [, gh [N,3H] or [3H] [, h [N,H]]]) -> h', with gate column blocks
 * r, z, n of width H; gx = x.W_ih^T + b_ih and gh = h.W_hh^T + b_hh are matmuls of their
 * own (OpenBLAS, in the matmul kernel), the whole sequence's gx in one. Then
 *   r = sigmoid(gx_r + gh_r), z = sigmoid(gx_z + gh_z), n = tanh(gx_n + r * gh_n),
 *   h' = (1 - z) * n + z * h,
 * so b_hn, inside gh_n, sits inside the reset gate's product. Absent gh and h are 0; a gh
 * of [3H] is the hidden bias alone, the same for every row (a step from a zero state).
 *
 * The gradient recomputes the gates (a few operations per unit, cheaper to redo than to
 * keep) and writes dgx, dgh (which differ only in the n block: dgh_n = r * dgx_n) and dh.
 * Threads share rows, and every element is computed alone: bitwise nth-independent. */
#include "kernels.h"
#include "kernels_impl.h"

typedef struct gru_geom {
    int64_t n, h;
    bool bias_only; /* gh is [3H] */
} gru_geom;

static gru_geom geometry(const pl_tensor *gx, const pl_tensor *gh)
{
    return (gru_geom){
        .n = gx->dims[0], .h = gx->dims[1] / 3, .bias_only = gh != NULL && gh->rank == 1};
}

/* Row r of gh, or NULL when there is none. */
static const float *hidden_row(const gru_geom *g, const float *gh, int64_t r)
{
    if (!gh)
        return NULL;
    return g->bias_only ? gh : gh + r * 3 * g->h;
}

/* The gates of unit j of one row, and gh_n, which the gradient needs. */
typedef struct gru_gates {
    float r, z, n, hn;
} gru_gates;

static inline __attribute__((always_inline)) gru_gates activate(const float *gx, const float *gh,
                                                                int64_t j, int64_t h)
{
    float hr = gh ? gh[j] : 0.0f, hz = gh ? gh[h + j] : 0.0f, hn = gh ? gh[2 * h + j] : 0.0f;
    float r = pl_sigmoidf(gx[j] + hr);
    return (gru_gates){r, pl_sigmoidf(gx[h + j] + hz), pl_tanhf(gx[2 * h + j] + r * hn), hn};
}

PL_VECTOR_CLONES PL_KERNEL(gru_cell)
{
    int n_in = args->op->n_inputs;
    gru_geom g = geometry(args->in_t[0], n_in > 1 ? args->in_t[1] : NULL);
    const float *gx = args->in[0], *gh = n_in > 1 ? args->in[1] : NULL;
    const float *h = n_in > 2 ? args->in[2] : NULL;
    float *h_next = args->out[0];
    int64_t begin, end;
    pl_kernel_share(g.n, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        const float *gx_row = gx + r * 3 * g.h, *gh_row = hidden_row(&g, gh, r);
        for (int64_t j = 0; j < g.h; j++) {
            gru_gates a = activate(gx_row, gh_row, j, g.h);
            float prev = h ? h[r * g.h + j] : 0.0f;
            h_next[r * g.h + j] = (1.0f - a.z) * a.n + a.z * prev;
        }
    }
}

/* Inputs dh', gx [, gh [, h]]; outputs dgx [, dgh [, dh]]. */
PL_VECTOR_CLONES PL_KERNEL(gru_cell_grad)
{
    int n_in = args->op->n_inputs;
    gru_geom g = geometry(args->in_t[1], n_in > 2 ? args->in_t[2] : NULL);
    const float *dh_next = args->in[0], *gx = args->in[1];
    const float *gh = n_in > 2 ? args->in[2] : NULL, *h = n_in > 3 ? args->in[3] : NULL;
    float *dgx = args->out[0], *dgh = n_in > 2 ? args->out[1] : NULL;
    float *dh = n_in > 3 ? args->out[2] : NULL;
    int64_t begin, end;
    pl_kernel_share(g.n, args->ith, args->nth, &begin, &end);
    for (int64_t r = begin; r < end; r++) {
        const float *gx_row = gx + r * 3 * g.h, *gh_row = hidden_row(&g, gh, r);
        float *dgx_row = dgx + r * 3 * g.h, *dgh_row = dgh ? dgh + r * 3 * g.h : NULL;
        for (int64_t j = 0; j < g.h; j++) {
            gru_gates a = activate(gx_row, gh_row, j, g.h);
            int64_t at = r * g.h + j;
            float dy = dh_next[at], prev = h ? h[at] : 0.0f;
            float dn = dy * (1.0f - a.z) * (1.0f - a.n * a.n);
            float dr = dn * a.hn * a.r * (1.0f - a.r);
            float dz = dy * (prev - a.n) * a.z * (1.0f - a.z);
            dgx_row[j] = dr;
            dgx_row[g.h + j] = dz;
            dgx_row[2 * g.h + j] = dn;
            if (dgh_row) {
                dgh_row[j] = dr;
                dgh_row[g.h + j] = dz;
                dgh_row[2 * g.h + j] = dn * a.r;
            }
            if (dh)
                dh[at] = dy * a.z;
        }
    }
}
