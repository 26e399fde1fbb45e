"""Everyday layers and functions placer has no op of their own for, composed of ops it
has: torch.stack, unbind, leaky ReLU and PReLU, upsampling (nearest by whole factors, and
linear, bilinear, trilinear), pixel shuffles, repeats, torch.addmm, the maximum and minimum
along an axis or of two tensors, group and instance normalisation, bags of embeddings,
dropout of whole channels, adaptive max pooling, gated linear units, nn.Unflatten."""

import collections
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import emit
from builder import Tensor
from torch_fx import Const, val
from torch_modules import Refused


def stack(imp, name, args, kwargs):
    """torch.stack: each tensor given an axis of one, then concatenated along it."""
    parts = list(args[0])
    dim = val(args[1] if len(args) > 1 else kwargs.get("dim", Const(0)))
    shape = tuple(imp.current_value.shape)
    axis = int(dim) % len(shape)
    first = next((p for p in parts if isinstance(p, Tensor)), None)
    tensors = [imp.tensor_of(p, name, first) for p in parts]
    one = shape[:axis] + (1,) + shape[axis + 1:]
    pieces = [emit.reshape(imp.b, "%s.%d" % (name, i), t, one) for i, t in enumerate(tensors)]
    if len(pieces) == 1:
        return pieces[0]
    return imp.b.node1("concat", name, pieces, shape, pieces[0].batch_axis, {"axis": axis})


def unbind(imp, name, args, kwargs):
    """x.unbind(dim) (q, k, v = qkv.unbind(0)): a split into pieces of one, each reshaped
    without that axis."""
    x = args[0]
    dim = val(args[1] if len(args) > 1 else kwargs.get("dim", Const(0)))
    axis = int(dim) % x.rank
    if axis == x.batch_axis:
        raise Refused("unbind along the batch axis")
    one = x.shape[:axis] + (1,) + x.shape[axis + 1:]
    pieces = imp.b.node("split", name + ".split", [x], [(one, x.batch_axis)] * x.shape[axis],
                        {"axis": axis}) if x.shape[axis] > 1 else [x]
    return tuple(emit.reshape(imp.b, "%s.%d" % (name, i), p, tuple(v.shape))
                 for i, (p, v) in enumerate(zip(pieces, imp.current_value)))


def leaky_relu(imp, name, x, slope):
    """relu(x) - slope * relu(-x)."""
    b = imp.b
    positive = emit.unary(b, "relu", name + ".positive", x)
    negative = emit.unary(b, "relu", name + ".negative",
                          emit.scale(b, name + ".flipped", x, -1.0))
    return emit.binary(b, "add", name, positive, emit.scale(b, name + ".slope", negative,
                                                             -float(slope)))


def upsample_nearest(imp, name, x, out_shape):
    """Nearest-neighbour upsampling of [N, C, spatial...] by a whole factor per axis: each
    value repeated (a broadcasting add of zeros [f1, 1, f2, ...]), then the repeats merged
    into their axes."""
    spatial = x.shape[2:]
    factors = [o // i for o, i in zip(out_shape[2:], spatial)]
    if any(o != i * f for o, i, f in zip(out_shape[2:], spatial, factors)):
        raise Refused("nearest upsampling by a factor that is not a whole number")
    if all(f == 1 for f in factors):
        return x
    spread = x.shape[:2] + tuple(d for s in spatial for d in (s, 1))
    zeros = np.zeros(tuple(d for f in factors for d in (1, f))[1:], np.float32)
    y = emit.reshape(imp.b, name + ".spread", x, spread)
    y = emit.binary(imp.b, "add", name + ".repeat", y, imp.b.constant(name + ".zeros", zeros))
    return emit.reshape(imp.b, name, y, tuple(out_shape))


def linear_weights(size_in, size_out, align_corners, scale):
    """PyTorch's linear interpolation along one axis as a matrix [in, out]: each output
    reads the two inputs around its source position, the corners' centres aligned, or its
    centre's at `scale` (input / output) less half a cell, not below 0."""
    weights = np.zeros((size_in, size_out), np.float32)
    for d in range(size_out):
        if align_corners:
            source = d * (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
        else:
            source = max((d + 0.5) * scale - 0.5, 0.0)
        low = min(int(source), size_in - 1)
        high = min(low + 1, size_in - 1)
        weights[low, d] += 1.0 - (source - low)
        weights[high, d] += source - low
    return weights


def upsample_linear(imp, name, x, out_shape, align_corners, scales):
    """Linear, bilinear and trilinear interpolation, separable: along each spatial axis a
    product with its interpolation matrix (the axis moved last and back). scales: PyTorch's
    input / output per spatial axis, or None for the sizes' ratio."""
    b, y = imp.b, x
    for axis in range(x.rank - 1, 1, -1):
        size_in, size_out = x.shape[axis], out_shape[axis]
        scale = scales[axis - 2] if scales else size_in / size_out
        if size_in == size_out and (align_corners or scale == 1):
            continue
        weights = b.constant("%s.weights%d" % (name, axis),
                             linear_weights(size_in, size_out, align_corners, scale))
        swap = list(range(x.rank))
        swap[axis], swap[-1] = swap[-1], swap[axis]
        y = emit.transpose(b, "%s.last%d" % (name, axis), y, swap)
        y = emit.matmul(b, "%s.axis%d" % (name, axis), y, weights,
                        y.shape[:-1] + (size_out,))
        y = emit.transpose(b, "%s.back%d" % (name, axis), y, swap)
    return y


def _interpolate(imp, name, x, mode, align_corners, scale_factor=None, recompute=None):
    if x.batch_axis != 0 or x.rank < 3:
        raise Refused("upsampling other than of [batch, channels, spatial...]")
    out_shape = tuple(imp.current_value.shape)
    if mode in ("linear", "bilinear", "trilinear"):
        scales = None
        if scale_factor is not None and not recompute:
            factors = scale_factor if isinstance(scale_factor, (tuple, list)) else \
                [scale_factor] * (x.rank - 2)
            scales = [1.0 / float(f) for f in factors]
        return upsample_linear(imp, name, x, out_shape, bool(align_corners), scales)
    if mode != "nearest":
        raise Refused("upsampling in %s mode" % mode)
    return upsample_nearest(imp, name, x, out_shape)


def interpolate(imp, name, args, kwargs):
    names = ("size", "scale_factor", "mode", "align_corners", "recompute_scale_factor")
    defaults = (None, None, "nearest", None, None)
    size, scale_factor, mode, align_corners, recompute = (
        val(args[i + 1] if len(args) > i + 1 else kwargs.get(key, Const(default)))
        for i, (key, default) in enumerate(zip(names, defaults)))
    return _interpolate(imp, name, args[0], mode, align_corners, scale_factor, recompute)


def functional_leaky_relu(imp, name, args, kwargs):
    slope = val(args[1] if len(args) > 1 else kwargs.get("negative_slope", Const(0.01)))
    return leaky_relu(imp, name, args[0], slope)


# torch.max(x, dim)'s result: its values are mapped, its indices are not.
Extremes = collections.namedtuple("Extremes", "values indices")


def max_over(imp, name, x, axis, out_shape):
    """The maximum along one axis other than the batch: one max-pooling window over it, the
    other axes gathered behind the batch ([batch, rest, 1, length] -> [batch, rest, 1, 1]),
    then put back in their order."""
    if not x.batched:
        raise Refused("the maximum along an axis of a tensor without the batch")
    if axis == x.batch_axis:
        raise Refused("the maximum along the batch axis")
    b = imp.b
    rest = [a for a in range(x.rank) if a not in (x.batch_axis, axis)]
    order = [x.batch_axis] + rest
    batch, length = x.shape[x.batch_axis], x.shape[axis]
    moved = emit.transpose(b, name + ".moved", x, order + [axis])
    cells = math.prod(x.shape[a] for a in rest)
    windows = emit.reshape(b, name + ".windows", moved, (batch, cells, 1, length))
    pooled = b.node1("max_pool", name, [windows], (batch, cells, 1, 1), True,
                     {"kernel": [1, length], "stride": [1, length], "padding": [0, 0]})
    y = emit.reshape(b, name + ".rest", pooled, tuple(x.shape[a] for a in order))
    y = emit.transpose(b, name + ".order", y, [order.index(a) for a in sorted(order)])
    return emit.reshape(b, name + ".shaped", y, out_shape)


def _extreme(sign, with_indices):
    """torch.max/min(x, dim[, keepdim]) and x.max/min(...), torch.amax/amin with one dim
    (the minimum as the maximum of -x), and torch.max/min(a, b) of two tensors (a plus the
    ReLU of their difference)."""

    def handler(imp, name, args, kwargs):
        x = args[0]
        dim = args[1] if len(args) > 1 else kwargs.get("dim", kwargs.get("other", Const(None)))
        if isinstance(dim, Tensor) or (isinstance(dim, Const) and torch.is_tensor(dim.value)):
            other = imp.tensor_of(dim, name, x)
            diff = emit.binary(imp.b, "sub", name + ".difference", other, x)
            return emit.binary(imp.b, "add", name, x, emit.scale(
                imp.b, name + ".beyond", emit.unary(imp.b, "relu", name + ".relu",
                                                    emit.scale(imp.b, name + ".signed", diff,
                                                               sign)), sign))
        dim = val(dim)
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) != 1):
            raise Refused("the %s over every axis or several" % ("maximum" if sign > 0 else
                                                                  "minimum"))
        dim = dim[0] if isinstance(dim, (tuple, list)) else dim
        value = imp.current_value
        shape = tuple((value.values if with_indices else value).shape)
        signed = x if sign > 0 else emit.scale(imp.b, name + ".negated", x, -1.0)
        y = max_over(imp, name if sign > 0 else name + ".max", signed, int(dim) % x.rank,
                     shape)
        if sign < 0:
            y = emit.scale(imp.b, name, y, -1.0)
        return Extremes(y, imp.not_mapped("the indices of torch.%s" % (
            "max" if sign > 0 else "min"))) if with_indices else y
    return handler


def prelu(imp, name, m, args, kwargs):
    """relu(x) - weight * relu(-x), the weight per channel (axis 1) or one for all."""
    x, b = args[0], imp.b
    start = float(m.weight.detach().reshape(-1)[0])  # PyTorch's init, 0.25 by default
    weight = imp.parameter(name + ".weight", {"kind": "constant", "value": start})
    if m.num_parameters > 1:
        weight = emit.reshape(b, name + ".per_channel", weight,
                              (m.num_parameters,) + (1,) * (x.rank - 2))
    positive = emit.unary(b, "relu", name + ".positive", x)
    negative = emit.unary(b, "relu", name + ".negative", emit.scale(b, name + ".flipped", x, -1.0))
    return emit.binary(b, "sub", name, positive, emit.binary(b, "mul", name + ".slope",
                                                             negative, weight))


def _image(x, what):
    if x.batch_axis != 0 or x.rank < 3:
        raise Refused("%s other than of [batch, channels, spatial...]" % what)


def pixel_shuffle(imp, name, x, factor, inverse):
    """[N, C*r*r, H, W] <-> [N, C, H*r, W*r]: the factors split off the channels, moved
    beside the axes they enlarge, merged into them (and back for the inverse)."""
    _image(x, "a pixel shuffle")
    n, c, h, w = x.shape
    r = int(factor)
    if inverse:
        spread = emit.reshape(imp.b, name + ".spread", x, (n, c, h // r, r, w // r, r))
        moved = emit.transpose(imp.b, name + ".moved", spread, [0, 1, 3, 5, 2, 4])
        return emit.reshape(imp.b, name, moved, (n, c * r * r, h // r, w // r))
    spread = emit.reshape(imp.b, name + ".spread", x, (n, c // (r * r), r, r, h, w))
    moved = emit.transpose(imp.b, name + ".moved", spread, [0, 1, 4, 2, 5, 3])
    return emit.reshape(imp.b, name, moved, (n, c // (r * r), h * r, w * r))


def group_norm(imp, name, x, groups, eps, affine_of):
    """Each sample's channels in groups, each group normalised over its channels and
    positions: a reshape to [N, groups, rest], a layer norm along rest (fixed unit scale
    and zero shift), a reshape back; then the per-channel affine (affine_of(channels): the
    weight and bias, or None)."""
    _image(x, "group normalisation")
    b, channels = imp.b, x.shape[1]
    rest = x.shape[1] // groups * math.prod(x.shape[2:])
    grouped = emit.reshape(b, name + ".groups", x, (x.shape[0], groups, rest))
    unit = b.parameter(name + ".unit", np.ones(rest, np.float32), {"kind": "ones"}, False)
    zero = b.parameter(name + ".zero", np.zeros(rest, np.float32), {"kind": "zeros"}, False)
    normed = b.node1("layer_norm", name + ".norm", [grouped, unit, zero], grouped.shape, True,
                     {"eps": float(eps)})
    y = emit.reshape(b, name + ".normed", normed, x.shape)
    affine = affine_of(channels)
    if affine is None:
        return y
    per_channel = (channels,) + (1,) * (x.rank - 2)
    weight = emit.reshape(b, name + ".weight_per_channel", affine[0], per_channel)
    bias = emit.reshape(b, name + ".bias_per_channel", affine[1], per_channel)
    return emit.binary(b, "add", name, emit.binary(b, "mul", name + ".scaled", y, weight),
                       bias)


def _affine_of(imp, name, affine):
    if not affine:
        return lambda channels: None
    return lambda channels: (imp.parameter(name + ".weight", {"kind": "ones"}),
                             imp.parameter(name + ".bias", {"kind": "zeros"}))


def group_norm_module(imp, name, m, args, kwargs):
    return group_norm(imp, name, args[0], m.num_groups, m.eps, _affine_of(imp, name, m.affine))


def instance_norm_module(imp, name, m, args, kwargs):
    if m.track_running_stats:
        raise Refused("%s with track_running_stats=True" % type(m).__name__)
    return group_norm(imp, name, args[0], args[0].shape[1], m.eps,
                      _affine_of(imp, name, m.affine))


def embedding_bag(imp, name, m, args, kwargs):
    """nn.EmbeddingBag of ids [N, L] (no offsets): the embedding, then the mean, sum or
    maximum over each row's L."""
    ids = args[0]
    if len(args) > 1 or any(val(v) is not None for v in kwargs.values()):
        raise Refused("EmbeddingBag with offsets or per_sample_weights")
    if m.padding_idx is not None or m.max_norm is not None:
        raise Refused("EmbeddingBag with padding_idx or max_norm")
    if not isinstance(ids, Tensor) or ids.rank != 2 or ids.batch_axis != 0:
        raise Refused("EmbeddingBag of ids other than [batch, length]")
    table = imp.parameter(name + ".weight", {"kind": "normal", "mean": 0, "std": 1,
                                              "seed": len(imp.b.parameters) + 1})
    rows = imp.b.node1("embedding", name + ".rows", [table, ids], ids.shape + table.shape[1:],
                       0)
    out_shape = (ids.shape[0], table.shape[1])
    if m.mode == "max":
        return max_over(imp, name, rows, 1, out_shape)
    op = "reduce_mean" if m.mode == "mean" else "reduce_sum"
    return imp.b.node1(op, name, [rows], out_shape, 0, {"axes": [1]})


def channel_dropout(imp, name, m, args, kwargs):
    """nn.Dropout1d/2d/3d: one draw per sample and channel, a dropout of ones [N, C, 1, ...]
    (the sum over the positions times 0, plus 1) multiplying the input."""
    x, b = args[0], imp.b
    if m.p == 0 or not m.training:
        return x
    _image(x, type(m).__name__)
    spatial = list(range(2, x.rank))
    one_shape = x.shape[:2] + (1,) * len(spatial)
    total = b.node1("reduce_sum", name + ".total", [x], one_shape, 0,
                    {"axes": spatial, "keepdims": True})
    ones = emit.binary(b, "add", name + ".ones", emit.scale(b, name + ".zeros", total, 0.0),
                       b.constant(name + ".one", [1.0]))
    mask = emit.unary(b, "dropout", name + ".mask", ones, {"rate": float(m.p)})
    return emit.binary(b, "mul", name, x, mask)


def repeat(imp, name, args, kwargs):
    """x.repeat(*sizes): copies concatenated along each axis repeated (new leading axes of
    one first); never along the batch."""
    x = args[0]
    sizes = val(args[1:]) if len(args) > 2 else val(args[1])
    sizes = list(sizes) if isinstance(sizes, (tuple, list)) else [sizes]
    y = emit.reshape(imp.b, name + ".axes", x, (1,) * (len(sizes) - x.rank) + tuple(x.shape))
    for axis, k in enumerate(sizes):
        if k == 1:
            continue
        if axis == y.batch_axis:
            raise Refused("repeat along the batch axis")
        shape = y.shape[:axis] + (y.shape[axis] * k,) + y.shape[axis + 1:]
        y = imp.b.node1("concat", "%s.%d" % (name, axis), [y] * k, shape, y.batch_axis,
                        {"axis": axis})
    return y


def addmm(imp, name, args, kwargs):
    """torch.addmm(bias, a, b) (Hugging Face's Conv1D): a @ b + bias."""
    if val(kwargs.get("beta", Const(1))) != 1 or val(kwargs.get("alpha", Const(1))) != 1:
        raise Refused("torch.addmm with beta or alpha")
    a, w = imp.tensor_of(args[1], name), imp.tensor_of(args[2], name)
    product = emit.matmul(imp.b, name + ".product", a, w, tuple(imp.current_value.shape))
    return emit.binary(imp.b, "add", name, product, imp.tensor_of(args[0], name, product))


def adaptive_max_pool(imp, name, x, out_shape):
    """Adaptive max pooling of [N, C, H, W] to sizes that divide H and W: max pooling with
    windows of H/h by W/w."""
    _image(x, "adaptive max pooling")
    if x.rank != 4 or any(i % o for i, o in zip(x.shape[2:], out_shape[2:])):
        raise Refused("adaptive max pooling other than 2-d to sizes that divide the input's")
    window = [i // o for i, o in zip(x.shape[2:], out_shape[2:])]
    if window == [1, 1]:
        return x
    return imp.b.node1("max_pool", name, [x], tuple(out_shape), True,
                       {"kernel": window, "stride": window, "padding": [0, 0]})


def adaptive_max_pool_module(imp, name, m, args, kwargs):
    if m.return_indices:
        raise Refused("AdaptiveMaxPool2d with return_indices")
    return adaptive_max_pool(imp, name, args[0], tuple(imp.current_value.shape))


def functional_adaptive_max_pool(imp, name, args, kwargs):
    if val(args[2] if len(args) > 2 else kwargs.get("return_indices", Const(False))):
        raise Refused("adaptive_max_pool2d with return_indices")
    return adaptive_max_pool(imp, name, args[0], tuple(imp.current_value.shape))


def glu(imp, name, x, dim):
    """The gated linear unit: the first half of x along dim times the sigmoid of the
    second."""
    axis = int(dim) % x.rank
    if axis == x.batch_axis:
        raise Refused("glu along the batch axis")
    half = x.shape[:axis] + (x.shape[axis] // 2,) + x.shape[axis + 1:]
    a, gate = imp.b.node("split", name + ".halves", [x], [(half, x.batch_axis)] * 2,
                         {"axis": axis})
    return emit.binary(imp.b, "mul", name, a, emit.unary(imp.b, "sigmoid", name + ".gate",
                                                         gate))


def functional_glu(imp, name, args, kwargs):
    return glu(imp, name, args[0], val(args[1] if len(args) > 1 else
                                       kwargs.get("dim", Const(-1))))


def functional_pixel_shuffle(inverse):
    def handler(imp, name, args, kwargs):
        factor = val(args[1] if len(args) > 1 else kwargs.get(
            "downscale_factor" if inverse else "upscale_factor"))
        return pixel_shuffle(imp, name, args[0], factor, inverse)
    return handler


FUNCTIONS = {
    F.pixel_shuffle: functional_pixel_shuffle(False),
    F.pixel_unshuffle: functional_pixel_shuffle(True),
    "repeat": repeat,
    torch.addmm: addmm, "addmm": addmm,
    F.adaptive_max_pool2d: functional_adaptive_max_pool,
    F.glu: functional_glu,
    torch.max: _extreme(1.0, True), "max": _extreme(1.0, True),
    torch.min: _extreme(-1.0, True), "min": _extreme(-1.0, True),
    torch.amax: _extreme(1.0, False), "amax": _extreme(1.0, False),
    torch.amin: _extreme(-1.0, False), "amin": _extreme(-1.0, False),
    torch.maximum: _extreme(1.0, False), "maximum": _extreme(1.0, False),
    torch.minimum: _extreme(-1.0, False), "minimum": _extreme(-1.0, False),
    torch.stack: stack,
    torch.unbind: unbind, "unbind": unbind,
    F.leaky_relu: functional_leaky_relu,
    F.interpolate: interpolate,
}

MODULES = {
    nn.LeakyReLU: lambda imp, name, m, args, kwargs: leaky_relu(imp, name, args[0],
                                                                m.negative_slope),
    nn.Upsample: lambda imp, name, m, args, kwargs: _interpolate(
        imp, name, args[0], m.mode, m.align_corners, m.scale_factor, m.recompute_scale_factor),
    nn.PReLU: prelu,
    nn.PixelShuffle: lambda imp, name, m, args, kwargs: pixel_shuffle(
        imp, name, args[0], m.upscale_factor, False),
    nn.PixelUnshuffle: lambda imp, name, m, args, kwargs: pixel_shuffle(
        imp, name, args[0], m.downscale_factor, True),
    nn.GroupNorm: group_norm_module,
    nn.InstanceNorm1d: instance_norm_module, nn.InstanceNorm2d: instance_norm_module,
    nn.InstanceNorm3d: instance_norm_module,
    nn.EmbeddingBag: embedding_bag,
    nn.Dropout1d: channel_dropout, nn.Dropout2d: channel_dropout, nn.Dropout3d: channel_dropout,
    nn.AdaptiveMaxPool2d: adaptive_max_pool_module,
    nn.GLU: lambda imp, name, m, args, kwargs: glu(imp, name, args[0], m.dim),
    nn.Unflatten: lambda imp, name, m, args, kwargs: emit.reshape(
        imp.b, name, args[0], tuple(imp.current_value.shape)),
}
