"""Recurrent layers as placer cells, unrolled over time: the construction that
tools/import-torch (torch_recurrent.py) and tools/import-onnx (onnx_recurrent.py) share.

A layer's direction is one cell per step (lstm_cell, gru_cell) reading that direction's
weights in PyTorch's layout and gate order: w_ih [G*H, E], w_hh [G*H, H], b_ih and b_hh
[G*H], with G gates (LSTM: input, forget, cell, output; GRU: reset, update, new). As
PyTorch computes them, a layer's input side is one matmul over all its steps: an LSTM's
x.W_ih^T + b_ih + b_hh, each step's slice the gate inputs of lstm_cell's projected form,
which adds h.W_hh^T; a GRU's x.W_ih^T + b_ih, its hidden side h.W_hh^T + b_hh one matmul
per step, and gru_cell puts b_hn inside the reset gate's product as PyTorch does. An
nn.LSTMCell (one step) is lstm_cell's full form, one weight [E+H, 4H] and one bias joined
from the four.

The batch: a step is [N, F], the batch on axis 0. A batch-first sequence [N, T, F] holds
it on axis 0 too, a time-major one [T, N, F] on axis 1, as do stacked states
([layers * directions, N, H]): steps are split from a sequence and joined back along its
time axis, and states from and into a stack along axis 0, so neither moves data across
the batch."""

import emit


class Sequence:
    """A layer's input or output, as the whole tensor ([N, T, F] batch-first, time_axis 1;
    [T, N, F] time-major, time_axis 0) or as its T steps [N, F], each made from the other
    when first asked for."""

    def __init__(self, b, name, whole=None, steps=None, time_axis=1):
        self.b, self.name, self._whole, self._steps = b, name, whole, steps
        self.time_axis = time_axis

    def _step_shape(self, n, f):
        return (n, 1, f) if self.time_axis == 1 else (1, n, f)

    def whole(self):
        if self._whole is None:
            n, f = self._steps[0].shape
            parts = [emit.reshape(self.b, "%s.t%d" % (self.name, t), s, self._step_shape(n, f))
                     for t, s in enumerate(self._steps)]
            shape = list(self._step_shape(n, f))
            shape[self.time_axis] = len(parts)
            self._whole = parts[0] if len(parts) == 1 else self.b.node1(
                "concat", self.name, parts, tuple(shape), 1 - self.time_axis,
                {"axis": self.time_axis})
        return self._whole

    def steps(self):
        if self._steps is None:
            t = self._whole.shape[self.time_axis]
            n, f = self._whole.shape[1 - self.time_axis], self._whole.shape[2]
            parts = [self._whole] if t == 1 else self.b.node(
                "split", self.name + ".steps", [self._whole],
                [(self._step_shape(n, f), 1 - self.time_axis)] * t, {"axis": self.time_axis})
            self._steps = [emit.reshape(self.b, "%s.step%d" % (self.name, k), p, (n, f))
                           for k, p in enumerate(parts)]
        return self._steps


def stack(b, name, states):
    """[count, N, H] (the batch on axis 1) from one [N, H] state per layer and direction."""
    n, h = states[0].shape
    parts = [emit.reshape(b, "%s.s%d" % (name, k), s, (1, n, h)) for k, s in enumerate(states)]
    return parts[0] if len(parts) == 1 else b.node1("concat", name, parts,
                                                    (len(parts), n, h), 1, {"axis": 0})


def unstack(b, name, stacked, count):
    """One [N, H] state per layer and direction from [count, N, H] (the batch on axis 1,
    which the caller checks)."""
    _, n, h = stacked.shape
    parts = [stacked] if count == 1 else b.node(
        "split", name + ".layers", [stacked], [((1, n, h), 1)] * count, {"axis": 0})
    return [emit.reshape(b, "%s.l%d" % (name, k), p, (n, h)) for k, p in enumerate(parts)]


def lstm_joined(b, prefix, w_ih, w_hh, b_ih, b_hh):
    """lstm_cell's weight [E+H, 4H] and bias [4H] from PyTorch's four tensors."""
    gates, width = w_ih.shape[0], w_ih.shape[1] + w_hh.shape[1]
    joined = b.node1("concat", prefix + ".w_joined", [w_ih, w_hh], (gates, width), False,
                     {"axis": 1})
    w = emit.transpose(b, prefix + ".w", joined, (1, 0))
    bias = (emit.binary(b, "add", prefix + ".b", b_ih, b_hh) if b_ih is not None
            else b.constant(prefix + ".b", [0.0] * gates))
    return w, bias


def lstm_step(b, name, x, w, bias, h, c, hidden):
    """lstm_cell(x, w, b [, h, c]) -> (h', c'); a zero state is left out."""
    state = [h, c] if h is not None else []
    return tuple(b.node("lstm_cell", name, [x, w, bias] + state,
                        [((x.shape[0], hidden), True)] * 2))


def _steps_in_order(count, reverse):
    return reversed(range(count)) if reverse else range(count)


def lstm_direction(b, prefix, weights, seq, reverse, h, c, hidden):
    """One layer's one direction from (w_ih, w_hh, b_ih, b_hh) (biases None without) and
    its initial h and c (None for zeros): its outputs per step, and its last h and c."""
    w_ih, w_hh, b_ih, b_hh = weights
    bias = (emit.binary(b, "add", prefix + ".b", b_ih, b_hh) if b_ih is not None
            else None)
    inputs = Sequence(b, prefix + ".gx", emit.linear(b, prefix + ".gx", seq.whole(), w_ih,
                                                     bias), time_axis=seq.time_axis).steps()
    w = emit.transpose(b, prefix + ".w_hh", w_hh, (1, 0))
    outs = [None] * len(inputs)
    for t in _steps_in_order(len(inputs), reverse):
        state = [w, h, c] if h is not None else []
        h, c = b.node("lstm_cell", "%s.t%d" % (prefix, t), [inputs[t]] + state,
                      [((inputs[t].shape[0], hidden), True)] * 2)
        outs[t] = h
    return outs, h, c


def gru_direction(b, prefix, weights, seq, reverse, h, c, hidden):
    """As lstm_direction for a GRU layer (c: None)."""
    w_ih, w_hh, b_ih, b_hh = weights
    inputs = Sequence(b, prefix + ".gx", emit.linear(b, prefix + ".gx", seq.whole(), w_ih,
                                                     b_ih), time_axis=seq.time_axis).steps()
    outs = [None] * len(inputs)
    for t in _steps_in_order(len(inputs), reverse):
        h = gru_step(b, "%s.t%d" % (prefix, t), inputs[t], h, w_hh, b_hh, hidden)
        outs[t] = h
    return outs, h, None


def gru_step(b, name, gx, h, w_hh, b_hh, hidden):
    """gru_cell(gx, gh, h); from a zero state gh is b_hh alone (or absent, without bias)."""
    if h is None:
        inputs = [gx] + ([b_hh] if b_hh is not None else [])
    else:
        inputs = [gx, emit.linear(b, name + ".gh", h, w_hh, b_hh), h]
    return b.node1("gru_cell", name, inputs, (gx.shape[0], hidden), True)


def join_directions(b, name, outs, hidden):
    """Each step's output: the forward direction's h, or both directions' joined [N, 2H]."""
    if len(outs) == 1:
        return outs[0]
    return [b.node1("concat", "%s.t%d" % (name, t), [f, r], (f.shape[0], 2 * hidden), True,
                    {"axis": 1}) for t, (f, r) in enumerate(zip(*outs))]
