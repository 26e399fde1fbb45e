"""Everyday layers and functions placer has no op of their own for, composed of ops it
has: torch.stack, unbind, leaky ReLU, nearest-neighbour upsampling by whole factors, the
maximum and minimum along an axis or of two tensors."""

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


def _interpolate(imp, name, x, mode, align_corners):
    if mode != "nearest":
        raise Refused("upsampling in %s mode" % mode)
    if x.batch_axis != 0 or x.rank < 3:
        raise Refused("upsampling other than of [batch, channels, spatial...]")
    return upsample_nearest(imp, name, x, tuple(imp.current_value.shape))


def interpolate(imp, name, args, kwargs):
    mode = val(args[3] if len(args) > 3 else kwargs.get("mode", Const("nearest")))
    return _interpolate(imp, name, args[0], mode, None)


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


FUNCTIONS = {
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
    nn.Upsample: lambda imp, name, m, args, kwargs: _interpolate(imp, name, args[0], m.mode,
                                                                 m.align_corners),
}
