"""The functional forms (torch.nn.functional.*) of the modules torch_modules.py maps whole,
the casts that change nothing: handler(imp, name, args, kwargs) -> mapped output, as in
torch_ops.py. Each reads the function's arguments, positional or by keyword, and builds
what the module would."""

from types import SimpleNamespace

import torch
import torch.nn.functional as F

import emit
import torch_modules
from builder import Tensor
from torch_fx import Const, val
from torch_modules import Refused


def _arguments(args, kwargs, names, defaults):
    """The function's mapped arguments by name: positional, keywords, else the defaults."""
    out = {k: Const(v) for k, v in defaults.items()}
    out.update(zip(names, args))
    out.update((k, kwargs[k]) for k in names if k in kwargs)
    return out


def _plain(a):
    """Arguments as plain values (Tensors stay)."""
    return {k: val(v) for k, v in a.items()}


def _pool(handler, names, defaults):
    """F.max_pool1d/2d/3d and F.avg_pool1d/2d/3d: the module's handler, on the arguments as
    a module's attributes."""
    def mapped(imp, name, args, kwargs):
        a = _plain(_arguments(args[1:], kwargs, names, defaults))
        if a["stride"] in (None, [], ()):  # PyTorch's default: the kernel
            a["stride"] = a["kernel_size"]
        return handler(imp, name, SimpleNamespace(**a), [args[0]], {})
    return mapped


_POOL = ("kernel_size", "stride", "padding")
max_pool = _pool(torch_modules.max_pool, _POOL + ("dilation", "ceil_mode", "return_indices"),
                 {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False,
                  "return_indices": False})
avg_pool = _pool(torch_modules.avg_pool, _POOL + ("ceil_mode", "count_include_pad",
                                                  "divisor_override"),
                 {"stride": None, "padding": 0, "ceil_mode": False,
                  "count_include_pad": True, "divisor_override": None})


def batch_norm(imp, name, args, kwargs):
    t = _arguments(args, kwargs, ("input", "running_mean", "running_var", "weight", "bias",
                                  "training", "momentum", "eps"),
                   {"running_mean": None, "running_var": None, "weight": None, "bias": None,
                    "training": False, "momentum": 0.1, "eps": 1e-5})
    a = _plain(t)
    x = a["input"]
    if not a["training"]:
        raise Refused("batch_norm with training=False in a model being trained (placer "
                      "normalises with the batch's statistics)")
    if a["momentum"] is None:
        raise Refused("batch_norm with momentum=None (a cumulative average)")
    if isinstance(a["running_mean"], Tensor) or isinstance(a["running_var"], Tensor):
        raise Refused("batch_norm with running statistics computed from the input")
    c = x.shape[1]
    gamma = imp.tensor_of(t["weight"], name) if a["weight"] is not None else \
        imp.b.constant(name + ".gamma", [1.0] * c)
    beta = imp.tensor_of(t["bias"], name) if a["bias"] is not None else \
        imp.b.constant(name + ".beta", [0.0] * c)
    y = imp.b.node1("batch_norm", name, [x, gamma, beta], x.shape, True,
                    {"eps": float(a["eps"]), "momentum": 1.0 - float(a["momentum"])})
    for key in ("running_mean", "running_var"):
        if a[key] is not None:
            imp.b.state("%s/%s" % (name, key), a[key].detach().cpu().numpy())
    return y


def linear(imp, name, args, kwargs):
    t = _arguments(args, kwargs, ("input", "weight", "bias"), {"bias": None})
    bias = imp.tensor_of(t["bias"], name) if val(t["bias"]) is not None else None
    return emit.linear(imp.b, name, t["input"], imp.tensor_of(t["weight"], name), bias)


def embedding(imp, name, args, kwargs):
    t = _arguments(args, kwargs, ("input", "weight", "padding_idx", "max_norm"),
                   {"padding_idx": None, "max_norm": None})
    if val(t["padding_idx"]) is not None or val(t["max_norm"]) is not None:
        raise Refused("embedding with padding_idx or max_norm")
    return torch_modules.lookup(imp, name, imp.tensor_of(t["weight"], name), t["input"])


def same_dtype(imp, name, args, kwargs):
    """x.float(), x.long(), x.to(device or dtype), x.type_as(y), x.clone(): x itself, where
    the result's dtype is x's as placer holds it (ids of any integer type are i32)."""
    x, value = args[0], imp.current_value
    held = {torch.float32: "f32", torch.int64: "i32", torch.int32: "i32"}.get(value.dtype)
    if x.dtype != held:
        raise Refused("casting %s to %s" % (x.dtype, str(value.dtype).replace("torch.", "")))
    return x


FUNCTIONS = {
    "float": same_dtype, "long": same_dtype, "int": same_dtype, "to": same_dtype,
    "type_as": same_dtype, "clone": same_dtype,
    F.max_pool2d: max_pool, F.avg_pool2d: avg_pool,
    F.batch_norm: batch_norm, F.linear: linear, F.embedding: embedding,
    F.max_pool1d: max_pool, F.max_pool3d: max_pool, F.avg_pool1d: avg_pool,
    F.avg_pool3d: avg_pool,
}
