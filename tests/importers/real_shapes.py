"""Models that only tracing with real shapes follows (they unpack sizes), each wrong in one
way, for the importers' error tests: each must give one error, exit 2 and write nothing."""

import torch
import torch.nn as nn


class Branchy(nn.Module):
    """Takes a path that depends on its input's values."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        b, t = x.shape
        if x.sum() > 0:  # data-dependent control flow
            return self.fc(x)
        return self.fc(-x)


class Counting(nn.Module):
    """Reads its input's values as a number; a buffer's it may read."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("repeats", torch.tensor(2))

    def forward(self, x):
        for _ in range(int(self.repeats.item())):
            x = self.fc(x)
        return x * int(x.abs().max())


class Broken(nn.Module):
    """Fails inside its own code while it is traced (a layer of the wrong width)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(5, 4)

    def forward(self, x):
        b, t = x.shape
        return self.fc(x.view(b, t))


class Unmapped(nn.Module):
    """Uses an operator placer does not map."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        b, t = x.shape
        return self.fc(torch.cumsum(x, dim=1).view(b, t))


def branchy():
    return Branchy()


def counting():
    return Counting()


def broken():
    return Broken()


def unmapped():
    return Unmapped()


class Assigning(nn.Module):
    """Assigns into a tensor computed from the input, and multiplies three tensors with
    torch.einsum: neither maps."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.fc(x)
        y[:, 0] = 0.0
        return torch.einsum("bi,bi,bi->bi", y, y, y)


def assigning():
    return Assigning()
