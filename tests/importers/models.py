"""Models written in plain PyTorch for the importers' tests and examples:

    tools/import-torch tests/importers/models.py:transformer_classifier --input 16 \\
        --input-dtype i32 --vocab 100 --batch 8 -o tc.json
    tools/import-torch tests/importers/models.py:gpt --input 16 --input-dtype i32 \\
        --vocab 64 --batch 8 -o gpt.json
    tools/import-torch tests/importers/models.py:unet --input 3,16,16 --batch 4 -o unet.json
    tools/import-torch tests/importers/models.py:cnn1d --input 4,32 --batch 8 -o cnn1d.json
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


class DoubleConv(nn.Module):
    """Two 3x3 convolutions, each followed by a ReLU: a U-Net's block."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)

    def forward(self, x):
        return F.relu(self.conv2(F.relu(self.conv1(x))))


class UNet(nn.Module):
    """A small U-Net: an encoder of convolution blocks and max pooling, a decoder that
    upsamples with transposed convolutions and joins the encoder's maps of the same size
    (skip connections, concatenated on the channels), and a 1x1 convolution (F.conv2d) to
    per-pixel class logits, channels last: [batch, height, width, classes]."""

    def __init__(self, channels=3, classes=4, width=8):
        super().__init__()
        self.enc1 = DoubleConv(channels, width)
        self.enc2 = DoubleConv(width, 2 * width)
        self.bottom = DoubleConv(2 * width, 4 * width)
        self.up2 = nn.ConvTranspose2d(4 * width, 2 * width, 2, stride=2)
        self.dec2 = DoubleConv(4 * width, 2 * width)
        self.up1 = nn.ConvTranspose2d(2 * width, width, 3, stride=2, padding=1, output_padding=1)
        self.dec1 = DoubleConv(2 * width, width)
        self.head_weight = nn.Parameter(torch.randn(classes, width, 1, 1) / math.sqrt(width))
        self.head_bias = nn.Parameter(torch.zeros(classes))
        self.pool = nn.MaxPool2d(2)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        b = self.bottom(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(b), e2], dim=1))
        d1 = self.dec1(torch.cat([self.up1(d2), e1], dim=1))
        return F.conv2d(d1, self.head_weight, self.head_bias).permute(0, 2, 3, 1)


class CNN1d(nn.Module):
    """A 1-D convolutional classifier over sequences of feature vectors [batch, features,
    length]: dilated and grouped convolutions, a strided one, and a transposed one
    (F.conv_transpose1d) that restores the length, then a linear map of every position's
    features."""

    def __init__(self, features=4, width=16, classes=5, length=32):
        super().__init__()
        self.conv1 = nn.Conv1d(features, width, 5, padding=2)
        self.conv2 = nn.Conv1d(width, width, 3, padding=2, dilation=2, groups=4)
        self.down = nn.Conv1d(width, 2 * width, 4, stride=2, padding=1)
        self.up_weight = nn.Parameter(torch.randn(2 * width, width, 4) / math.sqrt(8 * width))
        self.classifier = nn.Linear(width * length, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x)) + x
        x = torch.tanh(F.conv_transpose1d(F.relu(self.down(x)), self.up_weight, stride=2,
                                          padding=1))
        return self.classifier(torch.flatten(x, 1))


def unet(**kwargs):
    return UNet(**kwargs)


def cnn1d(**kwargs):
    return CNN1d(**kwargs)
