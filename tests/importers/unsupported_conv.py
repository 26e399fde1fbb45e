"""A model whose convolutions have settings placer lacks, for the importers' error test:
reflection padding, padding='same' with an even kernel, and a transposed convolution's
output padding as large as its stride (PyTorch allows it below the dilation)."""

import torch.nn as nn


class UnsupportedConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect = nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")
        self.even = nn.Conv1d(3, 4, 4, padding="same")
        self.up = nn.ConvTranspose2d(3, 2, 3, stride=2, dilation=3, output_padding=2)

    def forward(self, x):  # side by side, so that each is reported
        line = x.reshape(x.shape[0], x.shape[1], x.shape[2] * x.shape[3])
        return (self.reflect(x).mean(dim=(2, 3)) + self.even(line).mean(dim=2) +
                self.up(x).mean(dim=(2, 3)).sum(dim=1, keepdim=True))


def build():
    return UnsupportedConv()
