"""torch.nn modules that map to placer ops as a whole: handler(imp, name, module, args,
kwargs) -> mapped output. A handler raises ImportError_ for a setting placer lacks, which
the importer reports as an unsupported operator with that setting in its name."""

import math

import numpy as np

import torch
import torch.nn as nn
import torch.nn.functional as F

import emit
from builder import ImportError_, Tensor


class Refused(Exception):
    """A module setting placer cannot express; the text names the setting."""


def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def _seed(imp):
    return len(imp.b.parameters) + 1


def _fan_in_uniform(fan_in, seed):
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return {"kind": "uniform", "low": -bound, "high": bound, "seed": seed}


def _out(imp, name):
    """The whole shape the module's output had on the example batch."""
    return tuple(imp.current_value.shape)


def _per_axis(v, spatial):
    return list(v) if isinstance(v, (tuple, list)) else [v] * spatial


def _same_padding(kind, kernel, dilation):
    """padding='same' at stride 1: placer's padding is symmetric, so odd extents only."""
    ext = [d * (k - 1) for d, k in zip(dilation, kernel)]
    if any(e % 2 for e in ext):
        raise Refused("%s padding='same' with an even kernel" % kind)
    return [e // 2 for e in ext]


def conv(imp, name, kind, x, w, bias, stride, padding, dilation, groups, out_shape,
         transposed=False):
    """A convolution of 1 to 3 spatial axes (its rank says which), transposed or not, as
    PyTorch's modules and functions give it; the output's shape gives a transposed
    convolution's output padding (ConvTranspose's output_size argument included)."""
    spatial = len(w.shape) - 2
    stride, dilation = _per_axis(stride, spatial), _per_axis(dilation, spatial)
    if isinstance(padding, str):
        padding = [0] * spatial if padding == "valid" else \
            _same_padding(kind, w.shape[2:], dilation)
    padding = _per_axis(padding, spatial)
    attrs = {"stride": stride, "padding": padding, "dilation": dilation}
    if groups != 1:
        attrs["groups"] = groups
    if transposed:
        extra = [o - ((i - 1) * s - 2 * p + d * (k - 1) + 1) for o, i, s, p, d, k in
                 zip(out_shape[2:], x.shape[2:], stride, padding, dilation, w.shape[2:])]
        if any(e >= s for e, s in zip(extra, stride)):
            raise Refused("%s with output padding %s not below the stride" % (kind, extra))
        if any(extra):
            attrs["output_padding"] = extra
    op = ("conv_transpose%dd" if transposed else "conv%dd") % spatial
    inputs = [x, w] + ([bias] if bias is not None else [])
    return imp.b.node1(op, name, inputs, out_shape, True, attrs)


def conv_module(imp, name, m, args, kwargs):
    """nn.Conv1d/2d/3d and nn.ConvTranspose1d/2d/3d."""
    kind = type(m).__name__
    if m.padding_mode != "zeros":
        raise Refused("%s padding_mode=%s" % (kind, m.padding_mode))
    fan_in = m.weight.shape[1] * math.prod(m.kernel_size)
    w = imp.parameter(name + ".weight", _fan_in_uniform(fan_in, _seed(imp)))
    bias = None
    if m.bias is not None:
        bias = imp.parameter(name + ".bias", _fan_in_uniform(fan_in, _seed(imp)))
    return conv(imp, name, kind, args[0], w, bias, m.stride, m.padding, m.dilation, m.groups,
                _out(imp, name), transposed=m.transposed)


def linear(imp, name, m, args, kwargs):
    w = imp.parameter(name + ".weight", _fan_in_uniform(m.in_features, _seed(imp)))
    bias = None
    if m.bias is not None:
        bias = imp.parameter(name + ".bias", _fan_in_uniform(m.in_features, _seed(imp)))
    return emit.linear(imp.b, name, args[0], w, bias)


def _affine(imp, name, m, n, weight="weight", bias="bias"):
    """gamma and beta: the module's own, or constants when it has none."""
    if getattr(m, weight, None) is not None:
        return (imp.parameter("%s.%s" % (name, weight), {"kind": "ones"}),
                imp.parameter("%s.%s" % (name, bias), {"kind": "zeros"}))
    return (imp.b.constant(name + ".gamma", [1.0] * n), imp.b.constant(name + ".beta", [0.0] * n))


def batch_norm(imp, name, m, args, kwargs):
    if m.momentum is None:
        raise Refused("%s with momentum=None (a cumulative average)" % type(m).__name__)
    if not m.track_running_stats:
        raise Refused("%s with track_running_stats=False" % type(m).__name__)
    x = args[0]
    gamma, beta = _affine(imp, name, m, m.num_features)
    y = imp.b.node1("batch_norm", name, [x, gamma, beta], x.shape, True,
                    {"eps": float(m.eps), "momentum": 1.0 - float(m.momentum)})
    imp.b.state(name + "/running_mean", m.running_mean.detach().cpu().numpy())
    imp.b.state(name + "/running_var", m.running_var.detach().cpu().numpy())
    return y


def layer_norm(imp, name, m, args, kwargs):
    x = args[0]
    if len(m.normalized_shape) != 1:
        raise Refused("LayerNorm over %d axes" % len(m.normalized_shape))
    gamma, beta = _affine(imp, name, m, m.normalized_shape[0])
    return imp.b.node1("layer_norm", name, [x, gamma, beta], x.shape, x.batch_axis,
                       {"eps": float(m.eps)})


def embedding(imp, name, m, args, kwargs):
    if m.max_norm is not None:
        raise Refused("Embedding with max_norm")
    table = imp.parameter(name + ".weight", {"kind": "normal", "mean": 0, "std": 1,
                                              "seed": _seed(imp)})
    if m.padding_idx is None:
        return lookup(imp, name, table, args[0])
    return padded_lookup(imp, name, m, table, args[0])


def padded_lookup(imp, name, m, table, ids):
    """nn.Embedding's padding_idx: its row starts at zeros and gets no gradient, so it stays
    zeros; the rows looked up are multiplied by a mask of the ids that are not padding (from
    a constant table, as comparisons of ids are), which gives the padding ids zeros and
    their row no gradient whatever its values."""
    if bool(m.weight.detach()[m.padding_idx].any()):
        raise Refused("Embedding with padding_idx whose padding row is not zeros")
    rows = lookup(imp, name + ".lookup", table, ids)
    keep = np.ones((m.num_embeddings, 1), dtype=np.float32)
    keep[m.padding_idx] = 0.0
    mask = lookup(imp, name + ".kept", imp.b.constant(name + ".keep", keep), ids)
    return emit.binary(imp.b, "mul", name, rows, mask)


def lookup(imp, name, table, ids):
    """Rows of table for ids: an input, or constant ids (positions from torch.arange)."""
    if isinstance(ids, Tensor):
        return imp.b.node1("embedding", name, [table, ids], ids.shape + table.shape[1:],
                           ids.batch_axis)
    return emit.constant_rows(imp.b, name, table, torch.as_tensor(ids.value).long().numpy())


def _pool_attrs(m, spatial):
    kernel = _per_axis(m.kernel_size, spatial)
    stride = _per_axis(m.stride if m.stride is not None else m.kernel_size, spatial)
    attrs = {"kernel": kernel, "stride": stride, "padding": _per_axis(m.padding, spatial)}
    if m.ceil_mode:
        attrs["ceil_mode"] = True
    return attrs


def max_pool(imp, name, m, args, kwargs):
    """nn.MaxPool1d/2d/3d and F.max_pool1d/2d/3d: x's rank says how many axes."""
    spatial = args[0].rank - 2
    if set(_per_axis(m.dilation, spatial)) != {1} or m.return_indices:
        raise Refused("MaxPool%dd with dilation or return_indices" % spatial)
    return imp.b.node1(emit.pool_kind("max_pool", spatial), name, [args[0]], _out(imp, name), True,
                       _pool_attrs(m, spatial))


def avg_pool(imp, name, m, args, kwargs):
    """nn.AvgPool1d/2d/3d and F.avg_pool1d/2d/3d."""
    spatial = args[0].rank - 2
    if getattr(m, "divisor_override", None) is not None:
        raise Refused("AvgPool%dd with divisor_override" % spatial)
    attrs = _pool_attrs(m, spatial)
    if m.count_include_pad and any(attrs["padding"]):
        attrs["count_include_pad"] = True
    return imp.b.node1(emit.pool_kind("avg_pool", spatial), name, [args[0]], _out(imp, name), True,
                       attrs)


def adaptive_avg_pool(imp, name, x, out_shape):
    """Adaptive average pooling of 1 to 3 axes: to one value per channel, a mean."""
    if x.rank != 4 and set(out_shape[2:]) == {1}:
        return emit.channel_mean(imp.b, name, x)
    if out_shape[2:] == (1, 1):
        g = imp.b.node1("global_avg_pool", name, [x], out_shape[:2], True)
        return emit.reshape(imp.b, name + ".reshape", g, out_shape)
    if out_shape == x.shape:
        return x
    return imp.b.node1(emit.pool_kind("adaptive_avg_pool", x.rank - 2), name, [x], out_shape, True,
                       {"output_size": list(out_shape[2:])})


def adaptive_avg_pool_module(imp, name, m, args, kwargs):
    return adaptive_avg_pool(imp, name, args[0], _out(imp, name))


def dropout(imp, name, m, args, kwargs):
    if m.p == 0:
        return args[0]
    return emit.unary(imp.b, "dropout", name, args[0], {"rate": float(m.p)})


def activation(op, attrs=None):
    def handler(imp, name, m, args, kwargs):
        return emit.unary(imp.b, op, name, args[0], attrs(m) if callable(attrs) else attrs)
    return handler


def flatten(imp, name, m, args, kwargs):
    return emit.reshape(imp.b, name, args[0], _out(imp, name))


def softmax(op):
    def handler(imp, name, m, args, kwargs):
        dim = -1 if m.dim is None else m.dim
        return emit.unary(imp.b, op, name, args[0], {"axis": dim})
    return handler


def attention(imp, name, m, args, kwargs):
    """MultiheadAttention (self-attention, or a query over other keys and values), with no
    padding mask."""
    q = args[0] if args else kwargs.get("query")
    k = args[1] if len(args) > 1 else kwargs.get("key")
    v = args[2] if len(args) > 2 else kwargs.get("value")
    for x in (q, k, v):
        if not isinstance(x, Tensor):
            raise Refused("MultiheadAttention of a constant query, key or value")
        check_layout(m, x)
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise Refused("MultiheadAttention with kdim/vdim, bias_k or add_zero_attn")
    if imp.arg_value(kwargs.get("key_padding_mask")) is not None:
        raise Refused("MultiheadAttention with key_padding_mask")
    mask = attn_mask(imp, name, kwargs.get("attn_mask", args[5] if len(args) > 5 else None))
    return (_attention(imp, name, m, q, mask, k, v), imp.not_mapped("attention weights"))


def check_layout(m, x):
    """The module's layout and the input's batch axis agree: [N, T, E] with the batch on
    axis 0 when batch_first, [T, N, E] with the batch on axis 1 otherwise."""
    want = 0 if m.batch_first else 1
    if x.rank != 3 or x.batch_axis != want:
        held = "no batch" if not x.batched else "the batch on axis %d" % x.batch_axis
        raise Refused("%s with batch_first=%s reads the batch on axis %d, but its input %s "
                      "holds %s (--batch-axis sets the model input's)" % (
                          type(m).__name__, m.batch_first, want, list(x.shape), held))


def attn_mask(imp, name, mask):
    value = imp.arg_value(mask)
    if value is None:
        return None
    if value.dtype == torch_bool():
        value = value.float().masked_fill(value, float("-inf"))
    value = value.clamp(min=-1e9)  # JSON has no -inf; exp(-1e9) is 0 in f32 all the same
    if value.dim() != 2:
        raise Refused("MultiheadAttention with a per-batch attn_mask")
    return imp.b.constant(name + ".mask", value.detach().cpu().numpy())


def torch_bool():
    import torch
    return torch.bool


def _attention(imp, name, m, x, mask, key=None, value=None):
    """x attending to itself, or to key and value where given."""
    e = m.embed_dim
    in_w = imp.parameter(name + ".in_proj_weight", {"kind": "glorot_uniform", "seed": _seed(imp)})
    in_b = out_b = None
    if m.in_proj_bias is not None:
        in_b = imp.parameter(name + ".in_proj_bias", {"kind": "zeros"})
    out_w = imp.parameter(name + ".out_proj.weight", _fan_in_uniform(e, _seed(imp)))
    if m.out_proj.bias is not None:
        out_b = imp.parameter(name + ".out_proj.bias", {"kind": "zeros"})
    return emit.attention(imp.b, name, x, key if key is not None else x,
                          value if value is not None else x, in_w, in_b, out_w, out_b,
                          m.num_heads, m.dropout, mask)


def _activation_of(m):
    """A transformer layer's activation as a placer op and its attributes."""
    act = m.activation
    if act is F.relu or isinstance(act, nn.ReLU):
        return "relu", None
    if act is F.gelu or isinstance(act, nn.GELU):
        return "gelu", {"approximate": getattr(act, "approximate", "none")}
    raise Refused("%s with activation %r" % (type(m).__name__, act))


def encoder_layer(imp, name, m, args, kwargs):
    """TransformerEncoderLayer, expanded as its forward does it (post-norm or pre-norm)."""
    x = args[0]
    if imp.arg_value(kwargs.get("src_key_padding_mask")) is not None:
        raise Refused("TransformerEncoderLayer with src_key_padding_mask")
    check_layout(m.self_attn, x)
    mask = attn_mask(imp, name + ".self_attn",
                     kwargs.get("src_mask", args[1] if len(args) > 1 else None))
    act_op, act_attrs = _activation_of(m)
    b = imp.b

    def sublayer_norm(norm, y, tag):
        return layer_norm(imp, "%s.%s" % (name, tag), norm, [y], {})

    def attention_block(y):
        y = _attention(imp, name + ".self_attn", m.self_attn, y, mask)
        return dropout(imp, name + ".dropout1", m.dropout1, [y], {})

    def feed_forward(y):
        y = linear(imp, name + ".linear1", m.linear1, [y], {})
        y = emit.unary(b, act_op, name + ".activation", y, act_attrs)
        y = dropout(imp, name + ".dropout", m.dropout, [y], {})
        y = linear(imp, name + ".linear2", m.linear2, [y], {})
        return dropout(imp, name + ".dropout2", m.dropout2, [y], {})

    if m.norm_first:
        x = emit.binary(b, "add", name + ".residual1", x,
                        attention_block(sublayer_norm(m.norm1, x, "norm1")))
        return emit.binary(b, "add", name, x, feed_forward(sublayer_norm(m.norm2, x, "norm2")))
    x = sublayer_norm(m.norm1, emit.binary(b, "add", name + ".residual1", x, attention_block(x)),
                      "norm1")
    return sublayer_norm(m.norm2, emit.binary(b, "add", name + ".residual2", x, feed_forward(x)),
                         "norm2")


def decoder_layer(imp, name, m, args, kwargs):
    """TransformerDecoderLayer, expanded as its forward does it (post-norm or pre-norm):
    self-attention over the target, attention over the encoder's output (memory), the
    feed-forward layers."""
    x = args[0]
    memory = args[1] if len(args) > 1 else kwargs.get("memory")
    for key in ("tgt_key_padding_mask", "memory_key_padding_mask"):
        if imp.arg_value(kwargs.get(key)) is not None:
            raise Refused("TransformerDecoderLayer with %s" % key)
    if not isinstance(memory, Tensor):
        raise Refused("TransformerDecoderLayer with a constant memory")
    check_layout(m.self_attn, x)
    check_layout(m.self_attn, memory)
    self_mask = attn_mask(imp, name + ".self_attn",
                          kwargs.get("tgt_mask", args[2] if len(args) > 2 else None))
    memory_mask = attn_mask(imp, name + ".multihead_attn",
                            kwargs.get("memory_mask", args[3] if len(args) > 3 else None))
    act_op, act_attrs = _activation_of(m)
    b = imp.b

    def norm(i, y):
        return layer_norm(imp, "%s.norm%d" % (name, i), getattr(m, "norm%d" % i), [y], {})

    def dropped(i, y):
        return dropout(imp, "%s.dropout%d" % (name, i), getattr(m, "dropout%d" % i), [y], {})

    def self_block(y):
        return dropped(1, _attention(imp, name + ".self_attn", m.self_attn, y, self_mask))

    def memory_block(y):
        return dropped(2, _attention(imp, name + ".multihead_attn", m.multihead_attn, y,
                                     memory_mask, memory, memory))

    def feed_forward(y):
        y = linear(imp, name + ".linear1", m.linear1, [y], {})
        y = emit.unary(b, act_op, name + ".activation", y, act_attrs)
        y = dropout(imp, name + ".dropout", m.dropout, [y], {})
        return dropped(3, linear(imp, name + ".linear2", m.linear2, [y], {}))

    blocks = (self_block, memory_block, feed_forward)
    for i, block in enumerate(blocks, 1):
        tag = name if i == len(blocks) and m.norm_first else "%s.residual%d" % (name, i)
        if m.norm_first:
            x = emit.binary(b, "add", tag, x, block(norm(i, x)))
        else:
            x = norm(i, emit.binary(b, "add", tag, x, block(x)))
    return x


def identity(imp, name, m, args, kwargs):
    return args[0]


def layer_norm_2d(imp, name, m, args, kwargs):
    """torchvision's LayerNorm2d: each position's channels of [N, C, H, W] normalised."""
    x = args[0]
    gamma, beta = _affine(imp, name, m, m.normalized_shape[0])
    return imp.b.node1("layer_norm", name, [x, gamma, beta], x.shape, x.batched,
                       {"eps": float(m.eps), "axis": 1})


def stochastic_depth(imp, name, x, p, mode, training):
    """torchvision's stochastic depth: dropout with one decision per sample ("row") or per
    step ("batch"); each op its own seed, so that blocks drop independently."""
    if not training or p == 0:
        return x
    if mode not in ("row", "batch"):
        raise Refused("stochastic_depth with mode=%r" % (mode,))
    if p >= 1:
        raise Refused("stochastic_depth with p=1 (every sample dropped)")
    return emit.unary(imp.b, "dropout", name, x,
                      {"rate": float(p), "mode": mode, "seed": len(imp.b.nodes) + 1})


HANDLERS = {
    nn.Conv2d: conv_module,
    nn.Linear: linear,
    nn.BatchNorm1d: batch_norm,
    nn.BatchNorm2d: batch_norm,
    nn.LayerNorm: layer_norm,
    nn.Embedding: embedding,
    nn.MaxPool2d: max_pool,
    nn.AvgPool2d: avg_pool,
    nn.AdaptiveAvgPool2d: adaptive_avg_pool_module,
    nn.Dropout: dropout,
    nn.ReLU: activation("relu"),
    nn.ReLU6: activation("clamp", {"min": 0.0, "max": 6.0}),
    nn.Hardtanh: activation("clamp", lambda m: {"min": float(m.min_val),
                                                "max": float(m.max_val)}),
    nn.Hardswish: activation("hardswish"),
    nn.Hardsigmoid: activation("hardsigmoid"),
    nn.Sigmoid: activation("sigmoid"),
    nn.Tanh: activation("tanh"),
    nn.GELU: activation("gelu", lambda m: {"approximate": m.approximate}),
    nn.SiLU: activation("silu"),
    nn.Softmax: softmax("softmax"),
    nn.LogSoftmax: softmax("log_softmax"),
    nn.Flatten: flatten,
    nn.Identity: identity,
    nn.MultiheadAttention: attention,
    nn.TransformerEncoderLayer: encoder_layer,
    nn.TransformerDecoderLayer: decoder_layer,
    nn.Conv1d: conv_module,
    nn.Conv3d: conv_module,
    nn.ConvTranspose1d: conv_module,
    nn.ConvTranspose2d: conv_module,
    nn.ConvTranspose3d: conv_module,
    nn.BatchNorm3d: batch_norm,
    nn.AdaptiveAvgPool3d: adaptive_avg_pool_module,
    nn.MaxPool1d: max_pool,
    nn.MaxPool3d: max_pool,
    nn.AvgPool1d: avg_pool,
    nn.AvgPool3d: avg_pool,
    nn.AdaptiveAvgPool1d: adaptive_avg_pool_module,
}

try:  # torchvision's layers, where torchvision is installed
    from torchvision.models.convnext import LayerNorm2d
    HANDLERS[LayerNorm2d] = layer_norm_2d
except ImportError:
    pass

from torch_recurrent import RECURRENT  # noqa: E402 (it reads the helpers above)
HANDLERS.update(RECURRENT)

LEAVES = tuple(HANDLERS)


def handler_for(m):
    """The handler of the module's class, or of a mapped class it derives from without a
    forward of its own (torchvision's Conv3DSimple is an nn.Conv3d); None when neither."""
    for cls in type(m).__mro__:
        if cls in HANDLERS:
            return HANDLERS[cls] if type(m).forward is cls.forward else None
    return None

__all__ = ["HANDLERS", "LEAVES", "Refused", "adaptive_avg_pool", "conv", "ImportError_"]
