"""Models written in plain PyTorch for the importers' tests and examples:

    tools/import-torch tests/importers/models.py:transformer_classifier --input 16 \\
        --input-dtype i32 --vocab 100 --batch 8 -o tc.json
    tools/import-torch tests/importers/models.py:gpt --input 16 --input-dtype i32 \\
        --vocab 64 --batch 8 -o gpt.json
    tools/import-torch tests/importers/models.py:lstm_classifier --input 12 \\
        --input-dtype i32 --vocab 50 --batch 8 -o lstm.json
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TransformerClassifier(nn.Module):
    """torch.nn.TransformerEncoder (batch first, 2 layers) between an embedding and a
    classifier over the mean of the sequence."""

    def __init__(self, vocab=100, dim=32, heads=4, ff=64, layers=2, classes=10, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=dropout, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.classifier(self.encoder(self.embed(tokens)).mean(dim=1))


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, e = x.shape[0], x.shape[1], x.shape[2]
        qkv = self.qkv(x).split(e, dim=2)  # indexed, not unpacked: fx cannot unpack
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q.view(b, t, self.heads, e // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, e // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, e // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        causal = torch.tril(att.new_ones(t, t))  # from sizes only: the importer folds it
        att = att.masked_fill(causal == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, e)
        return self.proj(y)


class Block(nn.Module):
    """A GPT-style decoder block: pre-norm causal attention and a GELU MLP."""

    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token and position embeddings, decoder blocks, a final norm and the vocabulary head:
    next-token logits [batch, context, vocab]."""

    def __init__(self, vocab=64, dim=32, heads=4, context=16, blocks=1):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Parameter(torch.randn(1, context, dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(dim, heads) for _ in range(blocks)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tokens(ids) + self.positions[:, :t]
        return self.head(self.ln(self.blocks(x)))


def transformer_classifier(**kwargs):
    return TransformerClassifier(**kwargs)


def gpt(**kwargs):
    return GPT(**kwargs)


def googlenet_average_pools(**kwargs):
    """torchvision's GoogLeNet with each max pooling replaced by average pooling over the same
    windows (rounding sizes down: torch.onnx exports ceil_mode average pooling with a Pad),
    without the auxiliary heads (their adaptive pooling then no longer exports to ONNX). Its gradients are what the importers' check compares: GoogLeNet's many max
    poolings meet near-ties where float32 rounding picks the cell that gets the gradient,
    and PyTorch's own float32 gradients then differ from float64 by up to 0.24."""
    import torchvision
    kwargs.pop("dropout_aux", None)
    model = torchvision.models.googlenet(weights=None, **dict(kwargs, aux_logits=False))
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.MaxPool2d):
                setattr(parent, name, nn.AvgPool2d(child.kernel_size, child.stride,
                                                   child.padding))
    return model


class LSTMClassifier(nn.Module):
    """An embedding, a stacked nn.LSTM (batch first) and a classifier over the last layer's
    final state h_n[-1]."""

    def __init__(self, vocab=50, dim=16, hidden=32, layers=2, classes=10, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, layers, batch_first=True, dropout=dropout)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, tokens):
        _, (h_n, _) = self.lstm(self.embed(tokens))
        return self.classifier(h_n[-1])


class GRULanguageModel(nn.Module):
    """An embedding, a stacked nn.GRU (batch first) and the vocabulary head at every step:
    next-token logits [batch, steps, vocab]."""

    def __init__(self, vocab=48, dim=16, hidden=32, layers=2, dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, layers, batch_first=True, dropout=dropout)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, ids):
        out, _ = self.gru(self.embed(ids))
        return self.head(out)


def lstm_classifier(**kwargs):
    return LSTMClassifier(**kwargs)


def gru_lm(**kwargs):
    return GRULanguageModel(**kwargs)
