"""Everyday layers and functions placer has no op of their own for, composed of ops it
has: torch.stack, unbind, leaky ReLU, nearest-neighbour upsampling by whole factors."""

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


FUNCTIONS = {
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
