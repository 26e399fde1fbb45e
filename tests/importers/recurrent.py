#!/usr/bin/python3
"""Recurrent layers in the settings the zoo's LSTM and GRU models leave out, through
tools/import-torch, checked as tests/importers/check.py checks the zoo (outputs and
first-step gradients against PyTorch); and, as `refused`, one model with every setting the
importer refuses.

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


class Refused(nn.Module):
    """Every recurrent setting placer refuses, in one model: a time-major LSTM, a projected
    one, a GRU's stacked final states used whole, and an initial state from an input."""

    def __init__(self):
        super().__init__()
        self.time_major = nn.LSTM(8, 8)
        self.projected = nn.LSTM(8, 8, proj_size=4, batch_first=True)
        self.gru = nn.GRU(8, 8, batch_first=True)
        self.given = nn.GRU(8, 8, batch_first=True)

    def forward(self, x, h0):
        a = self.time_major(x)[0].mean(dim=1)
        b = self.projected(x)[0].mean(dim=1)
        c = self.gru(x)[1].sum(dim=0)
        d = self.given(x, h0)[0].mean(dim=1)
        return a.sum(dim=1) + b.sum(dim=1) + c.sum(dim=1) + d.sum(dim=1)


def lstm_variants():
    return LSTMVariants()


def gru_variants():
    return GRUVariants()


def encoder_decoder():
    return EncoderDecoder()


def cells():
    return Cells()


def refused():
    return Refused()


VARIANTS = {name: dict(source=HERE + ":" + name, input=(5, 4), batch=3, kwargs={})
            for name in ("lstm_variants", "gru_variants", "encoder_decoder", "cells")}


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
        try:
            failed += not check.check(name, "torch", 0, 0)
        except check.CheckFailed as e:
            print("FAIL %-20s torch %s" % (name, e), flush=True)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
