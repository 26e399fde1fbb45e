"""ONNX's LSTM and GRU, as torch.onnx exports nn.LSTM and nn.GRU (one op per layer,
time-major), as the per-step cells tools/import-torch builds (recurrent_cells.py).

X [T, N, E] carries the batch on axis 1 (layout 0). W [D, G*H, E], R [D, G*H, H] and
B [D, 2*G*H] hold each direction's weights with ONNX's gate order (LSTM: input, output,
forget, cell; GRU: update, reset, hidden), which slices put back into PyTorch's, the one
the cells compute (input, forget, cell, output; reset, update, new). GRU's
linear_before_reset=1 is PyTorch's GRU and gru_cell's; 0 is refused. The outputs: Y
[T, D, N, H] (the batch on axis 2), Y_h and Y_c [D, N, H] (the batch on axis 1)."""

import numpy as np

import emit
import recurrent_cells
from builder import Tensor
from onnx_graph import Refused

# For each of PyTorch's gates in its order, the block of ONNX's that holds it.
LSTM_GATES = (0, 2, 3, 1)  # i, f, c, o from i, o, f, c
GRU_GATES = (1, 0, 2)      # r, z, n from z, r, h
ACTIVATIONS = {"LSTM": ["Sigmoid", "Tanh", "Tanh"], "GRU": ["Sigmoid", "Tanh"]}


def _rows(b, name, x, start, stop):
    """x's rows [start, stop) along axis 0; x itself when that is all of it."""
    if (start, stop) == (0, x.shape[0]):
        return x
    return b.node1("slice", name, [x], (stop - start,) + x.shape[1:], False,
                   {"axis": 0, "start": start, "end": stop})


def _direction_of(b, name, t, d):
    """Direction d's part of t [D, ...]: its [...]."""
    return emit.reshape(b, name, _rows(b, name + ".rows", t, d, d + 1), t.shape[1:])


def _in_torch_order(b, name, w, gates):
    """w [G*H, ...] with its gate blocks in PyTorch's order."""
    size = w.shape[0] // len(gates)
    blocks = [_rows(b, "%s.g%d" % (name, k), w, g * size, (g + 1) * size)
              for k, g in enumerate(gates)]
    return b.node1("concat", name, blocks, w.shape, False, {"axis": 0})


def _weights(imp, n, name, ins, d, gates):
    """Direction d's (w_ih, w_hh, b_ih, b_hh) in PyTorch's layout; biases None without B."""
    b = imp.b
    w, r = (_in_torch_order(b, "%s.%s" % (name, which),
                            _direction_of(b, "%s.%s_d" % (name, which),
                                          imp.tensor(n.input[i], name), d), gates)
            for i, which in ((1, "w_ih"), (2, "w_hh")))
    if len(ins) < 4 or ins[3] is None:
        return w, r, None, None
    bias = _direction_of(b, name + ".bias_d", imp.tensor(n.input[3], name), d)
    width = bias.shape[0] // 2
    b_ih, b_hh = (_in_torch_order(b, "%s.%s" % (name, which),
                                  _rows(b, "%s.%s_part" % (name, which), bias, start,
                                        start + width), gates)
                  for which, start in (("b_ih", 0), ("b_hh", width)))
    return w, r, b_ih, b_hh


def _initial(imp, name, ins, i, count):
    """initial_h or initial_c [D, N, H]: one state per direction (None for zeros)."""
    state = ins[i] if len(ins) > i else None
    if state is None or (isinstance(state, np.ndarray) and not np.any(state)):
        return [None] * count
    if not isinstance(state, Tensor):
        raise Refused("a constant nonzero initial state")
    if state.batch_axis != 1:
        raise Refused("an initial state without the batch on axis 1")
    return recurrent_cells.unstack(imp.b, name, state, count)


def _check_settings(kind, ins, attrs, x):
    """Refuses what the cells do not compute; returns the count of directions."""
    if int(attrs.get("layout", 0)) != 0:
        raise Refused("layout=%s (batch-first)" % attrs["layout"])
    if not isinstance(x, Tensor) or x.rank != 3 or x.batch_axis != 1:
        raise Refused("a sequence other than [steps, batch, features]")
    if attrs.get("clip") is not None:
        raise Refused("clip")
    if int(attrs.get("input_forget", 0)):
        raise Refused("input_forget")
    count = 2 if attrs.get("direction", "forward") == "bidirectional" else 1
    if "activations" in attrs and list(attrs["activations"]) != ACTIVATIONS[kind] * count:
        raise Refused("activations %s" % list(attrs["activations"]))
    lengths = ins[4] if len(ins) > 4 else None
    if isinstance(lengths, Tensor) or (lengths is not None and
                                       np.any(np.asarray(lengths) != x.shape[0])):
        raise Refused("sequence_lens other than every sequence whole")
    if kind == "LSTM" and len(ins) > 7 and ins[7] is not None:
        raise Refused("peepholes")
    if kind == "GRU" and int(attrs.get("linear_before_reset", 0)) != 1:
        raise Refused("linear_before_reset=0 (PyTorch's GRU resets after its linear map)")
    return count


def _sequence_output(b, name, outs):
    """Y [T, D, N, H] from each direction's step outputs [N, H]."""
    n, h = outs[0][0].shape
    steps = []
    for t, hs in enumerate(zip(*outs)):
        parts = [emit.reshape(b, "%s.t%d.d%d" % (name, t, d), s, (1, 1, n, h))
                 for d, s in enumerate(hs)]
        steps.append(parts[0] if len(parts) == 1 else b.node1(
            "concat", "%s.t%d" % (name, t), parts, (1, len(parts), n, h), 2, {"axis": 1}))
    if len(steps) == 1:
        return steps[0]
    return b.node1("concat", name, steps, (len(steps), len(outs), n, h), 2, {"axis": 0})


def _layer(kind, gates, direction):
    """The handler of LSTM or GRU: direction builds one direction of the layer."""
    def handler(imp, n, name, ins, attrs):
        x = ins[0]
        count = _check_settings(kind, ins, attrs, x)
        hidden = int(attrs["hidden_size"])
        h0 = _initial(imp, name + ".h0", ins, 5, count)
        c0 = _initial(imp, name + ".c0", ins, 6, count) if kind == "LSTM" else [None] * count
        seq = recurrent_cells.Sequence(imp.b, name + ".input", whole=x, time_axis=0)
        outs, h_n, c_n = [], [], []
        for d in range(count):
            reverse = d == 1 or attrs.get("direction") == "reverse"
            prefix = name + ("_reverse" if d else "")
            steps, h, c = direction(imp.b, prefix, _weights(imp, n, prefix, ins, d, gates),
                                    seq, reverse, h0[d], c0[d], hidden)
            outs.append(steps)
            h_n.append(h)
            c_n.append(c)
        wanted = [bool(o) for o in n.output] + [False] * 3
        b = imp.b
        return [_sequence_output(b, name + ".Y", outs) if wanted[0] else None,
                recurrent_cells.stack(b, name + ".Y_h", h_n) if wanted[1] else None,
                recurrent_cells.stack(b, name + ".Y_c", c_n) if wanted[2] else None
                ][:len(n.output)]
    return handler


HANDLERS = {
    "LSTM": _layer("LSTM", LSTM_GATES, recurrent_cells.lstm_direction),
    "GRU": _layer("GRU", GRU_GATES, recurrent_cells.gru_direction),
}
