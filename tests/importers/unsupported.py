"""A model with operators placer lacks, for the importers' error test."""

import torch
import torch.nn as nn


class Unsupported(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(8, 8, batch_first=True)
        self.rnn2 = nn.RNN(8, 8, batch_first=True)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.rnn(x)[0]  # indexed: fx cannot unpack a traced result
        y = self.rnn2(torch.flip(y, dims=[1]))[0]
        return self.fc(y.mean(dim=1))


def build():
    return Unsupported()
