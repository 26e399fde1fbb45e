#!/usr/bin/python3
"""Recurrent layers in the settings the zoo's LSTM and GRU models leave out, through
tools/import-torch and through torch.onnx and tools/import-onnx, checked as
tests/importers/check.py checks the zoo (outputs and first-step gradients against PyTorch),
time-major layers and states computed from the input among them; and, as `refused`, one
model with every setting the importer refuses.

    tests/importers/recurrent.py [--placer PATH]
"""

import argparse
import os
import sys

import torch
import torch.nn as nn

HERE = os.path.abspath(__file__)
sys.path.insert(0, os.path.dirname(HERE))


class LSTMVariants(nn.Module):
    """A bidirectional two-layer LSTM without biases; the last step's output beside the
    last layer's backward final state."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2, bias=False, batch_first=True,
                            bidirectional=True)
        self.fc = nn.Linear(18, 3)

    def forward(self, x):
        out, (h_n, _) = self.lstm(x)
        return self.fc(torch.cat([out[:, -1], h_n[-1]], dim=1))


class GRUVariants(nn.Module):
    """A bidirectional three-layer GRU tagging every step."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 5, num_layers=3, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(10, 3)

    def forward(self, x):
        return self.fc(self.gru(x)[0])


class EncoderDecoder(nn.Module):
    """A decoder LSTM started from an encoder LSTM's final states (h_n, c_n), the results
    indexed rather than unpacked."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.decoder = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        states = self.encoder(x)[1]
        return self.fc(self.decoder(x, states)[0])


class Cells(nn.Module):
    """An LSTMCell and a GRUCell without biases stepped by hand, both from a zero state."""

    def __init__(self, steps=5):
        super().__init__()
        self.steps = steps
        self.lstm = nn.LSTMCell(4, 6)
        self.gru = nn.GRUCell(6, 5, bias=False)
        self.fc = nn.Linear(5, 3)

    def forward(self, x):
        h = c = g = None
        for t in range(self.steps):
            h, c = self.lstm(x[:, t]) if h is None else self.lstm(x[:, t], (h, c))
            g = self.gru(h) if g is None else self.gru(h, g)
        return self.fc(g)


class TimeMajor(nn.Module):
    """Time-major layers over [T, N, F] (the batch on axis 1): a two-layer LSTM, a GRU
    started from its stacked final states, and the GRU's stacked final states used whole."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, num_layers=2)
        self.gru = nn.GRU(6, 6, num_layers=2)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        out, (h_n, _) = self.lstm(x)
        y, g_n = self.gru(out, h_n)
        return self.fc(torch.cat([y[-1], g_n.sum(dim=0)], dim=1))


class InitialState(nn.Module):
    """Initial states computed from the input, [layers, N, H] with the batch on axis 1, for
    a batch-first LSTM (h_0 and c_0) and GRU (one layer's slice)."""

    def __init__(self):
        super().__init__()
        self.init = nn.Linear(4, 12)
        self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
        self.gru = nn.GRU(4, 6, batch_first=True)
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        n = x.shape[0]
        h0 = torch.tanh(self.init(x[:, 0])).view(n, 2, 6).transpose(0, 1).contiguous()
        out, _ = self.lstm(x, (h0, 0.5 * h0))
        g, _ = self.gru(x, h0[1:])
        return self.fc(torch.cat([out[:, -1], g[:, -1]], dim=1))


class BidirectionalStates(nn.Module):
    """A time-major bidirectional LSTM started from states computed from the input, its h_n
    and c_n used whole; a batch-first bidirectional GRU on its output, from a zero state."""

    def __init__(self, features=6, hidden=8, classes=3):
        super().__init__()
        self.init = nn.Linear(features, hidden)
        self.lstm = nn.LSTM(features, hidden, bidirectional=True)
        self.gru = nn.GRU(2 * hidden, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(5 * hidden, classes)

    def forward(self, x):                                  # [batch, steps, features]
        h = torch.tanh(self.init(x.mean(1)))
        y, (h_n, c_n) = self.lstm(x.transpose(0, 1), (torch.stack([h, -h]),
                                                      torch.stack([0.5 * h, h])))
        z, g_n = self.gru(y.transpose(0, 1))
        return self.out(torch.cat([z[:, -1], h_n.sum(0), c_n.mean(0), g_n[1]], 1))


class Refused(nn.Module):
    """The recurrent settings placer refuses, in one model: a projected LSTM, and a
    time-major one on a sequence whose batch is axis 0."""

    def __init__(self):
        super().__init__()
        self.time_major = nn.LSTM(8, 8)
        self.projected = nn.LSTM(8, 8, proj_size=4, batch_first=True)

    def forward(self, x):
        a = self.time_major(x)[0].mean(dim=1)
        b = self.projected(x)[0].mean(dim=1)
        return a.sum(dim=1) + b.sum(dim=1)


def lstm_variants():
    return LSTMVariants()


def gru_variants():
    return GRUVariants()


def encoder_decoder():
    return EncoderDecoder()


def cells():
    return Cells()


def time_major():
    return TimeMajor()


def initial_state():
    return InitialState()


def bidirectional_states():
    return BidirectionalStates()


def refused():
    return Refused()


VARIANTS = {name: dict(source=HERE + ":" + name, input=(5, 4), batch=3, kwargs={})
            for name in ("lstm_variants", "gru_variants", "encoder_decoder", "cells",
                         "initial_state")}
VARIANTS["bidirectional_states"] = dict(source=HERE + ":bidirectional_states", input=(5, 6),
                                        batch=4, kwargs={})
VARIANTS["time_major"] = dict(source=HERE + ":time_major", input=(5, 4), batch=3, kwargs={},
                              batch_axis=1)
# torch.onnx writes a cell's zero state as a constant of the export's batch.
VARIANTS["cells"]["no_onnx"] = "torch.onnx fixes the batch of the cells' zero states"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--placer", help="the placer binary")
    args = p.parse_args()
    import check
    from zoo import MODELS
    if args.placer:
        check.PLACER = os.path.abspath(args.placer)
    torch.set_num_threads(1)
    failed = 0
    for name, spec in VARIANTS.items():
        MODELS[name] = spec
        for via in ("torch",) if "no_onnx" in spec else ("torch", "onnx"):
            try:
                failed += not check.check(name, via, 0, 0)
            except check.CheckFailed as e:
                print("FAIL %-20s %-5s %s" % (name, via, e), flush=True)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
