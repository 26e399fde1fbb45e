"""Placer op sequences both importers emit: a linear layer, attention, reshapes and
transposes that carry the batch axis where it goes. Shapes are whole (batch included for
batched tensors)."""

import numpy as np

from builder import ImportError_, Tensor


def broadcast(a, b):
    ra, rb = len(a), len(b)
    out = []
    for i in range(max(ra, rb)):
        da = a[ra - 1 - i] if i < ra else 1
        db = b[rb - 1 - i] if i < rb else 1
        if da != db and 1 not in (da, db):
            raise ImportError_("shapes %s and %s do not broadcast" % (list(a), list(b)))
        out.append(max(da, db))
    return tuple(reversed(out))


def unary(b, op, name, x, attrs=None):
    return b.node1(op, name, [x], x.shape, x.batch_axis, attrs)


def after_batch(like):
    """How many axes an unbatched operand meeting `like` may have without reaching its
    batch axis: those after it (all of like's when like is unbatched), at least one."""
    return max(like.rank - 1 - like.batch_axis if like.batched else like.rank, 1)


def meeting_point(values):
    """Of several operands, the tensor the others are shaped to meet: a batched one if any,
    else the first tensor."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    return next((t for t in tensors if t.batched), tensors[0])


def fit_to(b, name, x, other):
    """An unbatched x meeting a batched tensor may only broadcast over the axes after the
    batch: its leading size-1 axes beyond those go (a [1, T, E] position table)."""
    if x.batched or not other.batched or x.rank <= after_batch(other):
        return x
    keep = x.shape
    while len(keep) > after_batch(other) and keep[0] == 1:
        keep = keep[1:]
    return reshape(b, name, x, keep) if keep != x.shape else x


def constant_for(b, name, value, like):
    """A constant (a numpy array) that will meet tensor `like`: one sample's values where it
    holds the same for every sample along like's batch axis (a mask made of
    `torch.ones_like(input_ids)`), then its leading size-1 axes are dropped while it has more
    axes than `like` keeps after the batch."""
    if like is not None and like.batched:
        axis = value.ndim - like.rank + like.batch_axis  # aligned at the last axis
        if 0 <= axis and value.shape[axis] == like.shape[like.batch_axis] > 1 and \
                (value == np.take(value, [0], axis)).all():
            value = np.take(value, [0], axis)
    if like is not None:
        while value.ndim > after_batch(like) and value.shape[0] == 1:
            value = value.reshape(value.shape[1:])
    return b.constant(name, value)


def broadcast_batch_axis(out_rank, *operands):
    """The result's batch axis when operands broadcast (aligned at their last axis)."""
    for t in operands:
        if t.batched:
            return out_rank - t.rank + t.batch_axis
    return None


def reduced_batch_axis(x, axes, keep):
    """Where x's batch axis lands when `axes` (which must not hold it) are reduced."""
    if not x.batched or keep:
        return x.batch_axis
    return x.batch_axis - sum(1 for a in axes if a < x.batch_axis)


def binary(b, op, name, x, y):
    x, y = fit_to(b, name + ".squeeze", x, y), fit_to(b, name + ".squeeze", y, x)
    shape = broadcast(x.shape, y.shape)
    return b.node1(op, name, [x, y], shape, broadcast_batch_axis(len(shape), x, y))


def _product(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _reshaped_batch_axis(b, name, x, shape):
    """The axis of `shape` that holds x's batch, and its elements per sample: as many
    elements come before it as before x's batch axis (a reshape moves no data), and it holds
    a whole number per sample, more than one where the batch merges with the axes after it
    (Swin's windows: [B, nW, ...] as [B * nW, ...]). Of several such axes (sizes of 1), the
    one as long as x's batch axis."""
    before = _product(x.shape[:x.batch_axis])
    axes = [j for j, d in enumerate(shape) if _product(shape[:j]) == before and d % b.batch == 0]
    if axes:
        j = min(axes, key=lambda j: shape[j] != x.shape[x.batch_axis])
        return j, shape[j] // b.batch
    raise ImportError_("%s: reshaping %s (the batch on axis %d) to %s would mix the batch "
                       "with other axes (it may merge only with the axes after it)"
                       % (name, list(x.shape), x.batch_axis, list(shape)))


def reshape(b, name, x, shape):
    shape = tuple(int(d) for d in shape)
    # Reshaping a reshape reshapes its source; the middle one is pruned if nothing else uses it.
    x = b.reshaped_from.get(x.name, x)
    if shape == x.shape:
        return x
    if x.batched:
        axis, group = _reshaped_batch_axis(b, name, x, shape)
        if (len(shape) == 2 and x.rank > 2 and axis == 0 and x.batch_axis == 0
                and shape[0] == x.shape[0]):
            y = b.node1("flatten", name, [x], shape, True)
        else:
            attrs = {"shape": list(shape[:axis] + shape[axis + 1:])}
            if axis:
                attrs["batch_axis"] = axis
            if group > 1:
                attrs["batch_group"] = group
            y = b.node1("reshape", name, [x], shape, axis, attrs)
    else:
        y = b.node1("reshape", name, [x], shape, False, {"shape": list(shape)})
    b.reshaped_from[y.name] = x
    return y


def _slice(b, name, x, axis, start, end):
    shape = list(x.shape)
    shape[axis] = end - start
    return b.node1("slice", name, [x], shape, x.batch_axis,
                   {"axis": axis, "start": start, "end": end})


def strided(b, name, x, axis, start, stop, step):
    """x[start:stop:step] along `axis`, step > 1 (Swin's patch merging takes x[..., 0::2,
    0::2, :]): a window of n * step elements holding the n picked ones, cut into [n, step]
    by a reshape, and one column of it."""
    n = len(range(start, stop, step))
    refused = "a negative step" if step < 0 else "a step along the batch axis" \
        if axis == x.batch_axis else "a step that picks nothing" if n < 1 else None
    if refused:
        raise ImportError_("%s: slicing with %s" % (name, refused))
    if n == 1:
        return _slice(b, name, x, axis, start, start + 1)
    low = start if start + n * step <= x.shape[axis] else x.shape[axis] - n * step
    if low < 0 or x.rank >= 6:
        raise ImportError_("%s: slicing with a step that leaves a partial window or needs "
                           "rank 7" % name)
    window = x if (low, n * step) == (0, x.shape[axis]) else \
        _slice(b, name + ".window", x, axis, low, low + n * step)
    shape = list(x.shape)
    shape[axis:axis + 1] = [n, step]
    cut = reshape(b, name + ".cut", window, shape)
    column = _slice(b, name + ".column", cut, axis + 1, start - low, start - low + 1)
    del shape[axis + 1]
    return reshape(b, name, column, shape)


def constant_rows(b, name, table, ids):
    """Rows of an unbatched table picked by constant ids (a numpy integer array): the table
    itself, a slice where they run in order, else the product with a one-hot matrix (a
    relative position bias's lookup)."""
    rows, count = ids.reshape(-1), ids.size
    shape = (count,) + table.shape[1:]
    rows_name = name if ids.ndim == 1 else name + ".rows"
    start = int(rows[0]) if count else 0
    if np.array_equal(rows, np.arange(table.shape[0])):
        picked = table
    elif np.array_equal(rows, np.arange(start, start + count)):
        picked = b.node1("slice", rows_name, [table], shape, False,
                         {"axis": 0, "start": start, "end": start + count})
    else:
        one_hot = b.constant(name + ".one_hot",
                             np.eye(table.shape[0], dtype=np.float32)[rows])
        picked = b.node1("matmul", rows_name, [one_hot, table], shape, False)
    return reshape(b, name, picked, tuple(ids.shape) + table.shape[1:])


def transpose(b, name, x, perm):
    perm = [int(p) % x.rank for p in perm]
    if perm == list(range(x.rank)):
        return x
    axis = perm.index(x.batch_axis) if x.batched else None
    y = b.node1("transpose", name, [x], tuple(x.shape[p] for p in perm), axis,
                {"perm": perm})
    if x.rank >= 2 and perm == list(range(x.rank - 2)) + [x.rank - 1, x.rank - 2]:
        b.transposed_from[y.name] = x
    return y


def matmul(b, name, x, y, out_shape):
    """x · y, reading a swap of the last two axes as matmul's transpose flag instead (the
    transpose is then pruned when nothing else uses it)."""
    attrs = {}
    if x.name in b.transposed_from:
        x, attrs["transpose_a"] = b.transposed_from[x.name], True
    if y.name in b.transposed_from:
        y, attrs["transpose_b"] = b.transposed_from[y.name], True
    return b.node1("matmul", name, [x, y], out_shape, matmul_batch_axis(x, y, len(out_shape),
                                                                        attrs), attrs or None)


def matmul_batch_axis(x, y, out_rank, attrs):
    """The result's batch axis: a's rows stay its rows, a leading batch axis broadcasts."""
    rows = x.rank - 1 if attrs.get("transpose_a") else x.rank - 2
    if x.batched and x.batch_axis == rows:
        return out_rank - 2
    for t in (x, y):
        if t.batched and t.batch_axis < t.rank - 2:
            return out_rank - t.rank + t.batch_axis
    return None


def scale(b, name, x, factor):
    if factor == 1:
        return x
    return unary(b, "scale", name, x, {"factor": float(factor)})


def linear(b, name, x, weight, bias):
    """x · weightᵀ (+ bias) with weight [out, in], as torch.nn.Linear and ONNX Gemm store it."""
    out_shape = x.shape[:-1] + (weight.shape[0],)
    y = b.node1("matmul", name + ".matmul" if bias is not None else name, [x, weight],
                out_shape, x.batch_axis, {"transpose_b": True})
    if bias is not None:
        y = b.node1("add", name, [y, bias], out_shape, x.batch_axis)
    return y


def self_attention(b, name, x, in_weight, in_bias, out_weight, out_bias, heads, dropout,
                   mask=None):
    """torch.nn.MultiheadAttention with query = key = value = x [N, T, E], batch first, or
    [T, N, E] with the batch on axis 1 (moved to the front and back): one projection to q, k
    and v, heads of E/heads, softmax(q·kᵀ/√d + mask)·v, and the output projection. mask: an
    additive [T, T] constant, or None."""
    return attention(b, name, x, x, x, in_weight, in_bias, out_weight, out_bias, heads,
                     dropout, mask)


def attention(b, name, query, key, value, in_weight, in_bias, out_weight, out_bias, heads,
              dropout, mask=None):
    """torch.nn.MultiheadAttention of query [N, T, E] over key and value [N, S, E] (or all
    three with the batch on axis 1): as self_attention, the projections of key and value
    from their own inputs where they are not the query's (cross-attention: the in_proj
    weight and bias split in three); mask an additive [T, S] constant, or None."""
    if query.batch_axis == 1:
        moved = {}
        for t in (query, key, value):
            if t.name not in moved:
                moved[t.name] = transpose(b, "%s.batch_first%s" % (
                    name, "" if not moved else "_%d" % len(moved)), t, (1, 0, 2))
        y = attention(b, name, moved[query.name], moved[key.name], moved[value.name],
                      in_weight, in_bias, out_weight, out_bias, heads, dropout, mask)
        return transpose(b, name + ".sequence_first", y, (1, 0, 2))
    n, t, e = query.shape
    s = key.shape[1]
    if e % heads:
        raise ImportError_("%s: %d heads do not divide the embedding %d" % (name, heads, e))
    d = e // heads
    if key is query and value is query:
        qkv = linear(b, name + ".in_proj", query, in_weight, in_bias)
        parts = b.node("split", name + ".qkv", [qkv], [((n, t, e), True)] * 3, {"axis": 2})
    else:
        weights = b.node("split", name + ".in_proj_weights", [in_weight],
                         [((e, e), False)] * 3, {"axis": 0})
        biases = b.node("split", name + ".in_proj_biases", [in_bias], [((e,), False)] * 3,
                        {"axis": 0}) if in_bias is not None else [None] * 3
        parts = [linear(b, "%s.%s_proj" % (name, letter), x, w, bias)
                 for x, w, bias, letter in zip((query, key, value), weights, biases, "qkv")]
    heads_of = []
    for part, letter in zip(parts, "qkv"):
        r = reshape(b, "%s.%s_heads" % (name, letter), part, (n, part.shape[1], heads, d))
        heads_of.append(transpose(b, "%s.%s_t" % (name, letter), r, (0, 2, 1, 3)))
    q, k, v = heads_of
    q = scale(b, name + ".q_scaled", q, 1.0 / d ** 0.5)
    scores = b.node1("matmul", name + ".scores", [q, k], (n, heads, t, s), True,
                     {"transpose_b": True})
    if mask is not None:
        scores = binary(b, "add", name + ".masked", scores, mask)
    weights = unary(b, "softmax", name + ".softmax", scores, {"axis": -1})
    if dropout > 0:
        weights = unary(b, "dropout", name + ".dropout", weights, {"rate": float(dropout)})
    ctx = b.node1("matmul", name + ".context", [weights, v], (n, heads, t, d), True)
    ctx = transpose(b, name + ".context_t", ctx, (0, 2, 1, 3))
    ctx = reshape(b, name + ".merge_heads", ctx, (n, t, e))
    return linear(b, name + ".out_proj", ctx, out_weight, out_bias)


def channel_mean(b, name, x):
    """The mean of each channel of x [N, C, ...] over every spatial axis, kept as axes of
    one (global average pooling of a line or a volume)."""
    return b.node1("reduce_mean", name, [x], x.shape[:2] + (1,) * (x.rank - 2), True,
                   {"axes": list(range(2, x.rank)), "keepdims": True})


def pool_kind(base, spatial):
    """A pooling op's name: max_pool, avg_pool, adaptive_avg_pool for two spatial axes,
    with 1d or 3d for one or three."""
    return base if spatial == 2 else "%s%dd" % (base, spatial)
