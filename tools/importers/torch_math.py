"""Element-wise math and what is written with it: exp, log, sqrt, rsqrt, abs and powers;
F.normalize, F.softplus, torch.var and torch.std composed of them; and zero_/fill_ on part
of a copy of a parameter (Swin v2 zeroes the key's share of a cloned qkv bias).
handler(imp, name, args, kwargs) -> mapped output, as in torch_ops.py."""

import math
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

import emit
from builder import Tensor
from torch_fx import Const, val
from torch_modules import Refused


def _arg(args, kwargs, i, key, default):
    """Positional argument i or keyword key, as a plain value."""
    if len(args) > i:
        return val(args[i])
    return val(kwargs.get(key, Const(default)))


def _unary(op):
    def handler(imp, name, args, kwargs):
        return emit.unary(imp.b, op, name, args[0])
    return handler


def _add_constant(imp, name, x, c):
    return emit.binary(imp.b, "add", name, x, imp.constant(name + ".const", [float(c)], x))


def _reduce(imp, name, op, x, axes, keep):
    """reduce_sum or reduce_mean of x over axes (none of them the batch's)."""
    if x.batched and x.batch_axis in axes:
        raise Refused("a reduction over the batch axis")
    shape = tuple(1 if a in axes else d for a, d in enumerate(x.shape) if keep or a not in axes)
    attrs = {"axes": list(axes), "keepdims": True} if keep else {"axes": list(axes)}
    return imp.b.node1(op, name, [x], shape, emit.reduced_batch_axis(x, axes, keep), attrs)


def _axes(x, dim):
    dims = dim if isinstance(dim, (tuple, list)) else [dim]
    return sorted(int(d) % x.rank for d in dims)


def power_of(imp, name, x, k):
    """x ** k for a constant k: products of x for a whole k of 1 to 4 (exact and cheaper
    than pow), sqrt and rsqrt for 1/2 and -1/2, else placer's pow."""
    if k in (1, 2, 3, 4):
        y = x
        for i in range(2, int(k) + 1):
            y = emit.binary(imp.b, "mul", name if i == k else "%s.%d" % (name, i), y, x)
        return y
    if k == 0.5:
        return emit.unary(imp.b, "sqrt", name, x)
    if k == -0.5:
        return emit.unary(imp.b, "rsqrt", name, x)
    return emit.unary(imp.b, "pow", name, x, {"exponent": float(k)})


def power(imp, name, args, kwargs):
    """x ** k, torch.pow(x, k) for a constant k; c ** x as exp(x ln c) for a constant c > 0."""
    x, k = args[0], args[1] if len(args) > 1 else kwargs["exponent"]
    if isinstance(x, Tensor) and isinstance(val(k), (int, float)):
        return power_of(imp, name, x, val(k))
    if isinstance(k, Tensor) and isinstance(val(x), (int, float)) and val(x) > 0:
        return emit.unary(imp.b, "exp", name,
                          emit.scale(imp.b, name + ".scaled", k, math.log(val(x))))
    raise Refused("pow of a tensor to a tensor's power (or of a negative number)")


def square(imp, name, args, kwargs):
    return power_of(imp, name, args[0], 2)


def normalize(imp, name, args, kwargs):
    """F.normalize: x / max(||x||_p, eps) along dim. For p = 2 as x * rsqrt(max(sum x^2,
    eps^2)), whose gradient stays finite at a zero vector as PyTorch's does."""
    x = args[0]
    p = float(_arg(args, kwargs, 1, "p", 2.0))
    axes = _axes(x, _arg(args, kwargs, 2, "dim", 1))
    eps = float(_arg(args, kwargs, 3, "eps", 1e-12))
    if p == 2:
        squares = emit.binary(imp.b, "mul", name + ".squares", x, x)
        total = _reduce(imp, name + ".sum", "reduce_sum", squares, axes, True)
        floor = emit.unary(imp.b, "clamp", name + ".floor", total, {"min": eps * eps})
        inverse = emit.unary(imp.b, "rsqrt", name + ".inverse", floor)
        return emit.binary(imp.b, "mul", name, x, inverse)
    if not math.isfinite(p) or p <= 0:
        raise Refused("F.normalize with p=%g" % p)
    sizes = emit.unary(imp.b, "abs", name + ".abs", x)
    if p != 1:
        sizes = power_of(imp, name + ".powers", sizes, p)
    norm = _reduce(imp, name + ".sum", "reduce_sum", sizes, axes, True)
    if p != 1:
        norm = power_of(imp, name + ".norm", norm, 1.0 / p)
    floor = emit.unary(imp.b, "clamp", name + ".floor", norm, {"min": eps})
    return emit.binary(imp.b, "div", name, x, floor)


def softplus_of(imp, name, x, beta):
    """log(1 + exp(beta x)) / beta as relu(z) + log(1 + exp(-|z|)), z = beta x, which
    neither overflows nor loses the threshold's linear part (x itself, up to a rounding,
    where beta x exceeds it)."""
    beta = float(beta)
    b = imp.b
    z = emit.scale(b, name + ".scaled", x, beta)
    tail = emit.scale(b, name + ".negative", emit.unary(b, "abs", name + ".abs", z), -1.0)
    tail = _add_constant(imp, name + ".one_plus", emit.unary(b, "exp", name + ".exp", tail), 1.0)
    y = emit.binary(b, "add", name + ".sum" if beta != 1 else name,
                    emit.unary(b, "relu", name + ".relu", z),
                    emit.unary(b, "log", name + ".log", tail))
    return emit.scale(b, name, y, 1.0 / beta)


def softplus(imp, name, args, kwargs):
    return softplus_of(imp, name, args[0], _arg(args, kwargs, 1, "beta", 1.0))


def reciprocal(imp, name, args, kwargs):
    return power_of(imp, name, args[0], -1.0)


def _correction(args, kwargs):
    """var's and std's correction: the keyword, else `unbiased` (positional or keyword)."""
    if "correction" in kwargs and val(kwargs["correction"]) is not None:
        return float(val(kwargs["correction"]))
    unbiased = args[2] if len(args) > 2 and isinstance(val(args[2]), bool) else \
        kwargs.get("unbiased", Const(True))
    return 1.0 if val(unbiased) else 0.0


def _variance(imp, name, args, kwargs):
    x = args[0]
    dim = _arg(args, kwargs, 1, "dim", None)
    if dim is None or isinstance(dim, bool):
        raise Refused("var or std over every axis")
    keep = bool(val(kwargs.get("keepdim", Const(len(args) > 3 and val(args[3])))))
    axes = _axes(x, dim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    mean = _reduce(imp, name + ".mean", "reduce_mean", x, axes, True)
    centred = emit.binary(imp.b, "sub", name + ".centred", x, mean)
    squares = emit.binary(imp.b, "mul", name + ".squares", centred, centred)
    total = _reduce(imp, name + ".sum", "reduce_sum", squares, axes, keep)
    return total, 1.0 / (n - _correction(args, kwargs))


def var(imp, name, args, kwargs):
    total, factor = _variance(imp, name + ".var", args, kwargs)
    return emit.scale(imp.b, name, total, factor) if factor != 1 else total


def std(imp, name, args, kwargs):
    total, factor = _variance(imp, name + ".var", args, kwargs)
    if factor != 1:
        total = emit.scale(imp.b, name + ".scaled", total, factor)
    return emit.unary(imp.b, "sqrt", name, total)


def fill(imp, name, args, kwargs):
    """t.zero_() and t.fill_(v) on a copy of a parameter or a slice of one (x = p.clone();
    x[a:b].zero_()): the copy becomes p times a constant mask plus the filled values, and
    later readers of the copy read that. (On a constant the importer folds it already.)"""
    node = imp.current_node.args[0]
    index = slice(None)
    if node.op == "call_function" and node.target is operator.getitem:
        index = val(imp.env_of(node.args[1]))
        node = node.args[0]
    copy = imp.env.get(node)
    if not isinstance(copy, Tensor) or copy.batched or torch.is_tensor(index):
        raise Refused("zero_ or fill_ other than on a copy of a parameter or a slice of one")
    value = float(_arg(args, kwargs, 1, "value", 0.0))
    keep = torch.ones(copy.shape)
    keep[index] = 0.0
    kept = emit.binary(imp.b, "mul", name + ".kept", copy, imp.constant(name + ".keep", keep))
    if value != 0:
        kept = emit.binary(imp.b, "add", name + ".filled", kept,
                           imp.constant(name + ".fill", (1.0 - keep) * value))
    imp.env[node] = kept
    return Const(imp.current_value.clone())


FUNCTIONS = {
    torch.exp: _unary("exp"), "exp": _unary("exp"),
    torch.log: _unary("log"), "log": _unary("log"),
    torch.sqrt: _unary("sqrt"), "sqrt": _unary("sqrt"),
    torch.rsqrt: _unary("rsqrt"), "rsqrt": _unary("rsqrt"),
    torch.abs: _unary("abs"), "abs": _unary("abs"), operator.abs: _unary("abs"),
    operator.pow: power, torch.pow: power, "pow": power,
    torch.square: square, "square": square,
    torch.reciprocal: reciprocal, "reciprocal": reciprocal,
    F.normalize: normalize, F.softplus: softplus,
    torch.var: var, "var": var, torch.std: std, "std": std,
    "zero_": fill, "fill_": fill,
}

MODULES = {
    nn.Softplus: lambda imp, name, m, args, kwargs: softplus_of(imp, name, args[0], m.beta),
}
