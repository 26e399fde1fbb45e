"""nn.LSTM, nn.GRU, nn.LSTMCell and nn.GRUCell as placer cells, unrolled over time
(recurrent_cells.py builds the cells).

The weights keep PyTorch's names and shapes (weight_ih_l0 [G*H, E], weight_hh_l0 [G*H, H],
bias_ih_l0, bias_hh_l0; G gates; _reverse for the backward direction), so that weights
files and gradients compare one to one.

The batch: a batch-first sequence [N, T, F] holds it on axis 0, a time-major one [T, N, F]
(batch_first=False) on axis 1, as do the stacked states h_0, c_0, h_n, c_n
([layers * directions, N, H]). h_n[k], one layer's state, is a step [N, H]."""

import operator

import torch
import torch.nn as nn

import emit
import recurrent_cells
from builder import Tensor
from torch_modules import Refused, _fan_in_uniform, _seed


class LayerStates(tuple):
    """h_n or c_n: one [N, H] tensor per layer and direction. Indexing picks one; any other
    use needs the stacked tensor, whose batch is axis 1. `what` names it in errors."""

    def __new__(cls, tensors, what):
        states = super().__new__(cls, tensors)
        states.what = what
        return states


def unstack(b, name, stacked, count):
    """One [N, H] state per layer and direction from [count, N, H] (the batch on axis 1)."""
    if stacked.batch_axis != 1:
        raise Refused("a recurrent initial state of shape %s without the batch on axis 1"
                      % list(stacked.shape))
    return recurrent_cells.unstack(b, name, stacked, count)


def _weights(imp, name, m, suffix):
    """PyTorch's w_ih, w_hh, b_ih, b_hh of one layer and direction, or of a cell (suffix "");
    the biases None without."""
    names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if m.bias else [])
    found = [imp.parameter("%s.%s%s" % (name, p, suffix),
                           _fan_in_uniform(m.hidden_size, _seed(imp))) for p in names]
    return found + [None] * (4 - len(found))


def _is_zero(state):
    """An initial state the model leaves out or gives as zeros: placer's cells start at 0."""
    if isinstance(state, (Tensor, tuple)):
        return False
    v = getattr(state, "value", state)  # a constant's value
    return v is None or (torch.is_tensor(v) and not bool(torch.count_nonzero(v)))


def _cell_state(kind, state):
    """The state an LSTMCell or GRUCell is given: a batch-first [N, H] tensor, or None."""
    if _is_zero(state):
        return None
    if not isinstance(state, Tensor):
        raise Refused("%s with a constant nonzero state" % kind)
    return state


def _layer_states(b, name, kind, state, count):
    """h_0 or c_0 [layers * directions, N, H], one entry per layer and direction (None for
    zeros)."""
    if _is_zero(state):
        return [None] * count
    if isinstance(state, LayerStates):  # another layer's h_n or c_n (PyTorch checked the count)
        return list(state)
    if isinstance(state, Tensor):
        return unstack(b, name, state, count)
    raise Refused("%s with a constant nonzero initial state" % kind)


def _lstm_direction(imp, name, m, suffix, seq, reverse, h, c):
    return recurrent_cells.lstm_direction(imp.b, name + suffix, _weights(imp, name, m, suffix), seq,
                                    reverse, h, c, m.hidden_size)


def _gru_direction(imp, name, m, suffix, seq, reverse, h, c):
    return recurrent_cells.gru_direction(imp.b, name + suffix, _weights(imp, name, m, suffix), seq,
                                   reverse, h, c, m.hidden_size)


def _sequence_layers(imp, name, m, args, kwargs, direction, kind):
    """nn.LSTM and nn.GRU: output, and the last states per layer and direction."""
    if getattr(m, "proj_size", 0):
        raise Refused("%s with proj_size" % kind)
    x = args[0]
    if not isinstance(x, Tensor) or x.rank != 3:
        raise Refused("%s on an unbatched sequence" % kind)
    state = args[1] if len(args) > 1 else kwargs.get("hx")
    dirs = 2 if m.bidirectional else 1
    count = m.num_layers * dirs
    if kind == "LSTM":
        pair = state if isinstance(state, tuple) else (state, state)
        h0, c0 = (_layer_states(imp.b, "%s.%s0" % (name, which), kind, s, count)
                  for which, s in zip("hc", pair))
    else:
        h0, c0 = _layer_states(imp.b, name + ".h0", kind, state, count), [None] * count
    time_axis = 1 if m.batch_first else 0
    if x.batch_axis != 1 - time_axis:
        raise Refused("%s with batch_first=%s on a sequence with the batch on axis %s "
                      "(--batch-axis sets the model input's)"
                      % (kind, m.batch_first, x.batch_axis))
    seq = recurrent_cells.Sequence(imp.b, name + ".input", whole=x, time_axis=time_axis)
    h_n, c_n = [], []
    for layer in range(m.num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            suffix = "_l%d%s" % (layer, "_reverse" if d else "")
            steps, h, c = direction(imp, name, m, suffix, seq, d == 1, h0[k], c0[k])
            outs.append(steps)
            h_n.append(h)
            c_n.append(c)
        steps = recurrent_cells.join_directions(imp.b, "%s_l%d" % (name, layer), outs,
                                                m.hidden_size)
        if m.dropout > 0 and layer < m.num_layers - 1:  # PyTorch's, between layers
            steps = [emit.unary(imp.b, "dropout", "%s_l%d.dropout%d" % (name, layer, t), s,
                                {"rate": float(m.dropout)}) for t, s in enumerate(steps)]
        last = layer == m.num_layers - 1
        seq = recurrent_cells.Sequence(imp.b, name if last else "%s_l%d.output" % (name, layer),
                                       steps=steps, time_axis=time_axis)
    y = seq.whole()
    states = LayerStates(h_n, "%s's h_n" % kind)
    return (y, (states, LayerStates(c_n, "LSTM's c_n"))) if kind == "LSTM" else (y, states)


def lstm(imp, name, m, args, kwargs):
    return _sequence_layers(imp, name, m, args, kwargs, _lstm_direction, "LSTM")


def gru(imp, name, m, args, kwargs):
    return _sequence_layers(imp, name, m, args, kwargs, _gru_direction, "GRU")


def lstm_cell(imp, name, m, args, kwargs):
    """nn.LSTMCell: (h', c') from x [N, E] and (h, c), batch-first [N, H] each."""
    state = args[1] if len(args) > 1 else kwargs.get("hx")
    h, c = (_cell_state("LSTMCell", s) for s in
            (state if isinstance(state, tuple) else (state, state)))
    if (h is None) != (c is None):
        raise Refused("LSTMCell with one of h and c zero")
    w, bias = recurrent_cells.lstm_joined(imp.b, name, *_weights(imp, name, m, ""))
    return recurrent_cells.lstm_step(imp.b, name, args[0], w, bias, h, c, m.hidden_size)


def gru_cell(imp, name, m, args, kwargs):
    """nn.GRUCell: h' from x [N, E] and h [N, H]."""
    h = _cell_state("GRUCell", args[1] if len(args) > 1 else kwargs.get("hx"))
    w_ih, w_hh, b_ih, b_hh = _weights(imp, name, m, "")
    gx = emit.linear(imp.b, name + ".gx", args[0], w_ih, b_ih)
    return recurrent_cells.gru_step(imp.b, name, gx, h, w_hh, b_hh, m.hidden_size)


RECURRENT = {
    nn.LSTM: lstm,
    nn.GRU: gru,
    nn.LSTMCell: lstm_cell,
    nn.GRUCell: gru_cell,
}


def unpackable(m, result):
    """A recurrent module's traced result as the tuples it returns, so that the usual code
    can unpack it (`out, (h_n, c_n) = self.lstm(x)`), which a traced value cannot be."""
    if isinstance(m, nn.LSTM):
        return (result[0], (result[1][0], result[1][1]))
    if isinstance(m, (nn.GRU, nn.LSTMCell)):
        return (result[0], result[1])
    return result


def stacked(imp, n, args, kwargs):
    """args and kwargs of node n with h_n or c_n used whole (anything but picking one
    layer's state or starting another recurrent module from them) stacked into
    [layers * directions, N, H]."""
    if n.op == "call_function" and n.target is operator.getitem:
        return args, kwargs
    module = n.graph.owning_module
    if n.op == "call_module" and type(module.get_submodule(n.target)) in RECURRENT:
        return args, kwargs

    def whole(k, a):
        return recurrent_cells.stack(imp.b, "%s.%s" % (n.name, k), list(a)) \
            if isinstance(a, LayerStates) else a
    return (tuple(whole(i, a) for i, a in enumerate(args)),
            {k: whole(k, a) for k, a in kwargs.items()})
