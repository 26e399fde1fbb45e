"""Models written in plain PyTorch for the importers' tests and examples:

    tools/import-torch tests/importers/models.py:transformer_classifier --input 16 \\
        --input-dtype i32 --vocab 100 --batch 8 -o tc.json
    tools/import-torch tests/importers/models.py:gpt --input 16 --input-dtype i32 \\
        --vocab 64 --batch 8 -o gpt.json
    tools/import-torch tests/importers/models.py:convnext --input 3,32,32 --batch 4 \\
        -o convnext.json
    tools/import-torch tests/importers/models.py:unet --input 3,16,16 --batch 4 -o unet.json
    tools/import-torch tests/importers/models.py:cnn1d --input 4,32 --batch 8 -o cnn1d.json
    tools/import-torch tests/importers/models.py:sequence_first_transformer --input 16 \\
        --batch-axis 1 --input-dtype i32 --vocab 100 --batch 8 -o seq.json
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


class SequenceFirstTransformer(nn.Module):
    """torch.nn.TransformerEncoder in PyTorch's default layout (batch_first=False): tokens
    [T, batch], a learned position table [T, 1, dim], two layers, and a classifier over the
    mean of the sequence. Imported with --batch-axis 1."""

    def __init__(self, vocab=100, dim=32, heads=4, ff=64, layers=2, classes=10, context=16,
                 dropout=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.positions = nn.Parameter(torch.randn(context, 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout=dropout)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.classifier = nn.Linear(dim, classes)

    def forward(self, tokens):
        x = self.embed(tokens) + self.positions[:tokens.shape[0]]
        return self.classifier(self.encoder(x).mean(dim=0))


def sequence_first_transformer(**kwargs):
    return SequenceFirstTransformer(**kwargs)


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


def convnext(num_classes=10, stochastic_depth_prob=0.1, layer_scale=0.5):
    """torchvision's ConvNeXt at a small size: two stages of one block (16 and 32 channels),
    with channel-first layer norms (LayerNorm2d) and stochastic depth. A layer scale of 0.5
    instead of 1e-6, so that the blocks show in the outputs the check compares."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    stages = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)]
    return ConvNeXt(stages, stochastic_depth_prob=stochastic_depth_prob, layer_scale=layer_scale,
                    num_classes=num_classes)


def efficientnet_b0(num_classes=10, dropout=0.2, stochastic_depth_prob=0.2):
    """torchvision's efficientnet_b0 (SiLU, squeeze-excitation, stochastic depth), with its
    classifier's dropout as an argument: torchvision's builder fixes it at 0.2."""
    from torchvision.models.efficientnet import EfficientNet, _efficientnet_conf
    blocks, last_channel = _efficientnet_conf("efficientnet_b0", width_mult=1.0, depth_mult=1.0)
    return EfficientNet(blocks, dropout, stochastic_depth_prob, num_classes,
                        last_channel=last_channel)


class Masks(nn.Module):
    """Masks computed from the input: comparisons, ~, torch.where and masked_fill."""

    def __init__(self, dim=8, classes=3):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, classes)

    def forward(self, x):
        h = self.fc(x)
        y = torch.where(h > 0, h, h * 0.1)
        y = y.masked_fill(~(x < 0.5), 2.0)
        y = torch.where(x >= -0.2, y, -y)
        y = torch.where(h > 0.8, torch.full_like(y, float("-inf")), y)
        return self.out(y.masked_fill(h <= -0.3, float("-inf")).clamp(min=-5.0))


def masks(**kwargs):
    return Masks(**kwargs)


def dropping_every_sample(p=1.0):
    """Stochastic depth that drops every sample, a setting placer refuses (its dropout's rate
    stays below 1)."""
    from torchvision.ops import StochasticDepth
    return nn.Sequential(nn.Linear(8, 8), StochasticDepth(p, "row"), nn.Linear(8, 3))


class NanoCausalSelfAttention(nn.Module):
    """Causal self-attention as GPT-style code usually writes it: sizes unpacked from the
    input, heads by view and transpose, a causal mask buffer filled with -inf."""

    def __init__(self, dim, heads, context, dropout):
        super().__init__()
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = heads
        self.n_embd = dim
        self.register_buffer("bias", torch.tril(torch.ones(context, context))
                             .view(1, 1, context, context))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class NewGELU(nn.Module):
    """GELU's tanh form written out, as minGPT has it."""

    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class NanoMLP(nn.Module):
    def __init__(self, dim, dropout):
        super().__init__()
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.gelu = NewGELU()
        self.c_proj = nn.Linear(4 * dim, dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class NanoBlock(nn.Module):
    def __init__(self, dim, heads, context, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = NanoCausalSelfAttention(dim, heads, context, dropout)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = NanoMLP(dim, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class NanoGPT(nn.Module):
    """A GPT written as most are (after nanoGPT): `b, t = idx.size()`, position ids from
    torch.arange, blocks in a ModuleList walked by a loop, GELU written out, the head on every
    position and tied to the token embedding, optional targets. It
    needs tracing with real shapes: torch.fx's symbolic trace cannot unpack the sizes."""

    def __init__(self, vocab=64, dim=32, heads=4, context=16, blocks=2, dropout=0.1):
        super().__init__()
        self.context = context
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(vocab, dim),
            wpe=nn.Embedding(context, dim),
            drop=nn.Dropout(dropout),
            h=nn.ModuleList([NanoBlock(dim, heads, context, dropout) for _ in range(blocks)]),
            ln_f=nn.LayerNorm(dim)))
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, one parameter

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.context, "sequence of %d longer than the context %d" % (t, self.context)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        logits = self.lm_head(self.transformer.ln_f(x))
        if targets is not None:  # training with its own loss; imported without targets
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits


def nanogpt(**kwargs):
    return NanoGPT(**kwargs)


def vision_transformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                       mlp_dim=64, num_classes=10, dropout=0.1):
    """torchvision's VisionTransformer (vit_b_16's code) at a small size: a class token
    spread over the batch, sizes unpacked from the input, attention called by keyword."""
    import torchvision
    model = torchvision.models.VisionTransformer(
        image_size=image_size, patch_size=patch_size, num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim, num_classes=num_classes,
        dropout=dropout, attention_dropout=dropout)
    # torchvision starts the head at zero, which would make every output 0 and their
    # comparison empty; the class token starts at zero too.
    nn.init.normal_(model.heads.head.weight, std=0.02)
    nn.init.normal_(model.class_token, std=0.02)
    return model


class FunctionalCNN(nn.Module):
    """The functional forms of the mapped modules, called as Inception v3 and hand-written
    models call them: F.conv2d (padding="same", groups), F.max_pool2d, F.avg_pool2d,
    F.linear, ..., and casts that change nothing."""

    def __init__(self, classes=10, dropout=0.2):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, groups=2)
        self.norm = nn.LayerNorm(16)
        self.fc = nn.Linear(16, classes)
        self.dropout = dropout

    def forward(self, x):
        x = x.to(x.device).type_as(self.conv.weight)
        x = F.conv2d(x, self.conv.weight, self.conv.bias, padding=1)
        x = F.relu(self.bn(x), inplace=True)
        x = F.max_pool2d(x, kernel_size=3, stride=2)
        x = F.conv2d(x, self.conv2.weight, self.conv2.bias, 1, "same", 1, 2)
        x = F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)
        x = F.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        x = F.layer_norm(x, (16,), self.norm.weight, self.norm.bias)
        x = F.dropout(x, p=self.dropout, training=self.training)
        return F.linear(x, self.fc.weight, self.fc.bias)


def functional_cnn(**kwargs):
    return FunctionalCNN(**kwargs)


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


class Windows(nn.Module):
    """Window attention's pieces as torchvision's Swin and MaxViT write them: zero padding,
    a cyclic shift, swapped axes, windows, a relative position bias picked from a table by
    a constant index, a mask filled in place, and torch.einsum's products."""

    def __init__(self, channels=4, window=3, classes=3):
        super().__init__()
        self.window = window
        self.proj = nn.Linear(channels, channels)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2))
        grid = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window),
                                          indexing="ij")).flatten(1)
        rel = grid[:, :, None] - grid[:, None, :] + window - 1
        self.register_buffer("index", rel[0] * (2 * window - 1) + rel[1])
        self.out = nn.Linear(channels, classes)

    def forward(self, x):
        b, c, _, _ = x.shape
        w = self.window
        x = F.pad(x, (0, 1, 1, 0))  # 5x5 -> 6x6: two windows each way
        x = torch.roll(x, shifts=(-1, 2), dims=(2, 3)).swapaxes(1, 3)
        x = x.reshape(b, 2, w, 2, w, c).permute(0, 1, 3, 2, 4, 5).reshape(b, 4, w * w, c)
        q = self.proj(x)
        mask = x.new_zeros(w * w, w * w)
        mask[:w, w:] = -1.0
        scores = torch.einsum("bgid, bgjd -> bgij", q, x) + self.table[self.index] + mask
        y = torch.einsum("...ij,...jd->...id", scores.softmax(-1), q)
        return self.out(y.mean(dim=(1, 2)))


def windows(**kwargs):
    return Windows(**kwargs)


class Conv3dNoTime(nn.Conv3d):
    """A subclass of a mapped layer that only sets its arguments, as torchvision's video
    models write theirs: mapped as the layer."""

    def __init__(self, channels_in, channels_out):
        super().__init__(channels_in, channels_out, (1, 3, 3), padding=(0, 1, 1), bias=False)


class ScaledConv2d(nn.Conv2d):
    """A subclass with a forward of its own: traced through."""

    def forward(self, x):
        return super().forward(x) * 0.5


class Volumes(nn.Module):
    """A small video classifier [batch, channels, frames, height, width]: 3-D convolutions
    (one a subclass), BatchNorm3d, AdaptiveAvgPool3d to one value per channel; frames
    folded into channels for a 2-D convolution of a subclass with its own forward."""

    def __init__(self, channels=2, width=4, frames=3, classes=3):
        super().__init__()
        self.conv = Conv3dNoTime(channels, width)
        self.bn = nn.BatchNorm3d(width)
        self.time = nn.Conv3d(width, width, (3, 1, 1), padding=(1, 0, 0))
        self.flat = ScaledConv2d(width * frames, width, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool3d(1)
        self.out = nn.Linear(2 * width, classes)

    def forward(self, x):
        y = self.time(F.relu(self.bn(self.conv(x))))
        b, c, t, h, w = y.shape
        z = self.flat(y.reshape(b, c * t, h, w))
        return self.out(torch.cat([self.pool(y).flatten(1), z.mean(dim=(2, 3))], dim=1))


def volumes(**kwargs):
    return Volumes(**kwargs)


class Everyday(nn.Module):
    """Layers placer composes of its ops: torch.stack, unbind, tensor_split, LeakyReLU and
    F.leaky_relu, nn.Upsample and F.interpolate (nearest, whole factors)."""

    def __init__(self, channels=3, width=4, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(channels, width, 3, stride=2, padding=1)
        self.act = nn.LeakyReLU(0.2)
        self.up = nn.Upsample(scale_factor=2)
        self.out = nn.Linear(2 * width, classes)

    def forward(self, x):
        y = self.up(self.act(self.conv(x)))
        z = F.interpolate(F.leaky_relu(self.conv(x)), scale_factor=(2, 1))
        both = torch.stack([y[:, :, :, 2:6], z], dim=1)  # [batch, 2, width, h, w]
        first, second = both.unbind(1)
        parts = torch.tensor_split(first * second + second, 3, dim=2)
        both = torch.stack([parts[0].mean(dim=2) + parts[2].mean(dim=2), second.mean(dim=2)], 1)
        return self.out(both.mean(dim=3).flatten(1))


def everyday(**kwargs):
    return Everyday(**kwargs)


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm, as its reference code writes it."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    """Causal attention with rotary position embeddings (cos/sin tables given by the model),
    no biases, the mask from a buffer with masked_fill."""

    def __init__(self, dim, heads, context):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)
        self.register_buffer("causal", torch.tril(torch.ones(context, context)), persistent=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores.masked_fill(self.causal[:t, :t] == 0, float("-inf"))
        scores = F.softmax(scores.float(), dim=-1).type_as(q)
        out = torch.matmul(scores, v).transpose(1, 2).contiguous().view(b, t, -1)
        return self.wo(out)


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, hidden, context):
        super().__init__()
        self.attention = LlamaAttention(dim, heads, context)
        self.feed_forward = SwiGLU(dim, hidden)
        self.attention_norm = RMSNorm(dim)
        self.ffn_norm = RMSNorm(dim)

    def forward(self, x, cos, sin):
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """A small LLaMA-style decoder written as such code usually is: RMSNorm with rsqrt,
    rotary embeddings from cos/sin buffers and rotate_half (slices and cat), a causal mask
    by masked_fill, a SwiGLU MLP, an untied head."""

    def __init__(self, vocab=64, dim=32, heads=4, hidden=64, context=16, blocks=2,
                 theta=10000.0):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([LlamaBlock(dim, heads, hidden, context)
                                     for _ in range(blocks)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // heads
        inv_freq = 1.0 / (theta ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(context).float(), inv_freq)
        angles = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", angles.cos(), persistent=False)
        self.register_buffer("sin_cached", angles.sin(), persistent=False)

    def forward(self, tokens):
        _, t = tokens.shape
        h = self.tok_embeddings(tokens)
        cos, sin = self.cos_cached[:t], self.sin_cached[:t]
        for layer in self.layers:
            h = layer(h, cos, sin)
        return self.output(self.norm(h))


def llama(**kwargs):
    return Llama(**kwargs)


class Powers(nn.Module):
    """exp, log, sqrt, rsqrt, abs and powers: operators, functions and methods."""

    def __init__(self, features=8, classes=3):
        super().__init__()
        self.fc = nn.Linear(features, 2 * features)
        self.out = nn.Linear(2 * features, classes)

    def forward(self, x):
        h = self.fc(x)
        a = torch.exp(0.5 * h.tanh()) + torch.log(h.abs() + 1) + (h * h + 1).sqrt()
        b = torch.rsqrt(h.pow(2) + 1) + (h.abs() + 0.5) ** 1.5 + torch.pow(h.abs() + 1, -0.75)
        return self.out(a + b + torch.abs(h) ** 0.5 + h.square())


def powers(**kwargs):
    return Powers(**kwargs)


class Normalizing(nn.Module):
    """What is written with them: F.normalize (p 2 and 1), softplus, reciprocal, var and
    std, Swin v2's clamped exponential of a logit scale and its cloned qkv bias with a part
    zeroed, a constant to a tensor's power."""

    def __init__(self, features=8, classes=3):
        super().__init__()
        self.fc = nn.Linear(features, 2 * features)
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(1)))
        self.softplus = nn.Softplus(beta=0.5)
        self.out = nn.Linear(2 * features, classes)

    def forward(self, x):
        bias = self.fc.bias.clone()
        bias[2:5].zero_()
        h = F.linear(x, self.fc.weight, bias)
        scale = torch.clamp(self.logit_scale, max=math.log(100.0)).exp()
        a = F.normalize(h, dim=-1) * scale + F.normalize(h, p=1, dim=1)
        b = F.softplus(h) + self.softplus(h) + 2 ** h.tanh() + torch.reciprocal(h.abs() + 1)
        c = torch.var(h, dim=-1, keepdim=True) + h.std(-1, keepdim=True, unbiased=False)
        return self.out(a + b + c)


def normalizing(**kwargs):
    return Normalizing(**kwargs)


class RefusedMaths(nn.Module):
    """Uses of the math mappings placer refuses: zero_ on a computed tensor, a tensor to a
    tensor's power."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x)
        y[:, :2].zero_()
        return torch.pow(y, y)


def refused_maths(**kwargs):
    return RefusedMaths(**kwargs)
class Pools(nn.Module):
    """Pooling over three and one axes, as video and sequence models write it: MaxPool3d
    with S3D's window over height and width alone, AvgPool3d with ceil_mode and the padding
    counted, F.max_pool3d, AdaptiveAvgPool3d to a grid; over the features' rows as a
    sequence, MaxPool1d, F.avg_pool1d without the padding counted and AdaptiveAvgPool1d."""

    def __init__(self, channels=2, width=4, classes=3):
        super().__init__()
        self.conv = nn.Conv3d(channels, width, 3, padding=1)
        self.spatial = nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1))
        self.avg = nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True)
        self.grid = nn.AdaptiveAvgPool3d((3, 1, 1))
        self.seq = nn.Conv1d(width, width, 3, padding=1)
        self.line = nn.MaxPool1d(3, stride=2, padding=1)
        self.adapt = nn.AdaptiveAvgPool1d(2)
        self.out = nn.Linear(width * 13, classes)

    def forward(self, x):                                  # [b, c, 4, 8, 8]
        features = self.conv(x)
        y = F.relu(self.spatial(features))                 # [b, w, 4, 4, 4]
        grid = self.grid(self.avg(y))                      # [b, w, 3, 1, 1]
        cubes = F.max_pool3d(y, 2)                         # [b, w, 2, 2, 2]
        s = self.line(self.seq(features.mean(dim=(2, 3))))  # [b, w, 8] -> [b, w, 4]
        s = self.adapt(F.avg_pool1d(s, 3, stride=1, padding=1, count_include_pad=False))
        return self.out(torch.cat([grid.flatten(1), cubes.flatten(1), s.flatten(1)], 1))


def pools(**kwargs):
    return Pools(**kwargs)
def swin(num_classes=10, stochastic_depth_prob=0.1):
    """torchvision's SwinTransformer (swin_t's code) at a small size: patches of 4, windows
    of 4x4 tokens, two stages of two blocks. At 32x32 the first stage's 8x8 tokens make four
    windows, so its second block shifts them and masks attention across their seams; the
    windows merge the batch with the window grid ([B * windows, tokens, C])."""
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=stochastic_depth_prob,
                           num_classes=num_classes)


class Strides(nn.Module):
    """The batch merged with the axes after it and split back by views, as Swin's windows
    do, here also with the batch on axis 1 of a transposed tensor; slices with a step, ...
    and None, as Swin's patch merging writes them."""

    def __init__(self, channels=3, classes=3):
        super().__init__()
        self.proj = nn.Linear(channels, 4)
        self.out = nn.Linear(4 * 3 * 4, classes)

    def forward(self, x):  # [B, 6, 4, C]
        b = x.shape[0]
        x = self.proj(x)
        merged = x.view(b * 6, 4, 4).softmax(-1)  # the batch merged with the rows
        x = merged.view(b, 6, 4, 4) + x
        rows = x.transpose(0, 1).reshape(6, b * 4, 4)  # the batch on axis 1, merged
        x = rows.softmax(0).reshape(6, b, 4, 4).transpose(0, 1) * x
        even = x[..., 0::2, :, :]  # [B, 3, 4, 4]
        odd = x[:, 1::2, None, 1::2, ...]  # [B, 3, 1, 2, 4]
        y = torch.cat([even[:, :, :2], odd.flatten(2, 3).view(b, 3, 2, 4)], 2)
        return self.out(y.flatten(1))


def strides(**kwargs):
    return Strides(**kwargs)
class Handwritten(nn.Module):
    """What models written by hand do (tests/importers/written.py): a module made inside
    forward (`nn.Softmax(dim=-1)(scores)`), position ids expanded over the batch into an
    embedding, a mask of ones shaped like a batched tensor, the maximum and minimum along an
    axis (`torch.max(x, 1)[0]`, `.values`, amax, amin) and of two tensors, torch.addmm."""

    def __init__(self, dim=6, context=5, classes=3):
        super().__init__()
        self.positions = nn.Embedding(context, dim)
        self.fc = nn.Linear(dim, dim)
        self.out_weight = nn.Parameter(torch.randn(dim, classes) * 0.3)
        self.out_bias = nn.Parameter(torch.randn(classes) * 0.1)

    def forward(self, x):  # [batch, context, dim]
        ids = torch.arange(x.size(1)).unsqueeze(0).expand(x.size(0), -1)
        h = self.fc(x + self.positions(ids))
        mask = (1.0 - torch.ones_like(h[:, :, 0]).unsqueeze(1)) * -10000.0
        y = nn.Softmax(dim=-1)(h @ h.transpose(1, 2) + mask) @ h
        pooled = torch.max(y, 1)[0] + y.min(dim=1, keepdim=True).values.squeeze(1)
        per_row = torch.amax(y, dim=2) - torch.amin(y, dim=-1)  # [batch, context]
        mixed = torch.maximum(pooled, y[:, 0]) + torch.min(pooled, y[:, 1])
        return torch.addmm(self.out_bias, mixed + per_row.mean(1, keepdim=True),
                           self.out_weight)


def handwritten(**kwargs):
    return Handwritten(**kwargs)


class HandwrittenImage(nn.Module):
    """Image layers placer composes of its ops: PReLU (one weight and one per channel),
    GroupNorm, InstanceNorm2d, Dropout2d, nn.PixelShuffle and F.pixel_unshuffle,
    nn.AdaptiveMaxPool2d, F.adaptive_max_pool2d, nn.GLU, nn.Unflatten, linear and bilinear
    F.interpolate (by a scale, to a size, corners aligned or not)."""

    def __init__(self, channels=3, width=8, classes=3, dropout=0.2):
        super().__init__()
        self.conv = nn.Conv2d(channels, width, 3, padding=1)
        self.gn = nn.GroupNorm(2, width)
        self.act = nn.PReLU(width, init=0.1)
        self.drop = nn.Dropout2d(dropout)
        self.shuffle = nn.PixelShuffle(2)
        self.inorm = nn.InstanceNorm2d(2, affine=True)
        self.act2 = nn.PReLU()
        self.pool = nn.AdaptiveMaxPool2d((2, 4))
        self.glu = nn.GLU(dim=1)
        self.unflatten = nn.Unflatten(1, (4, 4))
        self.out = nn.Linear(4 * 4, classes)

    def forward(self, x):  # [batch, 3, 8, 8]
        y = self.drop(self.act(self.gn(self.conv(x))))
        pooled = self.glu(self.pool(y)).flatten(1)  # [batch, 4 * 2 * 4]
        y = self.act2(self.inorm(self.shuffle(y)))  # [batch, 2, 16, 16]
        y = F.pixel_unshuffle(y, 4).mean(1) + F.adaptive_max_pool2d(y, 4).mean(1)
        up = F.interpolate(y.unsqueeze(1), scale_factor=1.5, mode="bilinear")  # 6x6
        y = y + F.interpolate(up, size=(4, 4), mode="bilinear", align_corners=True)[:, 0]
        y = y + F.interpolate(y, size=7, mode="linear")[:, :, 1:5]
        return self.out(y.flatten(1) + self.unflatten(pooled[:, :16]).flatten(1))


class HandwrittenText(nn.Module):
    """Text layers: nn.EmbeddingBag in its three modes, an embedding with a padding id, a
    bidirectional GRU's final states picked as hidden[-2, :, :] and hidden[-1, :, :], masks
    from comparisons of the ids."""

    def __init__(self, vocab=20, dim=6, classes=3):
        super().__init__()
        self.bags = nn.ModuleList([nn.EmbeddingBag(vocab, dim, mode=m)
                                   for m in ("mean", "sum", "max")])
        self.embed = nn.Embedding(vocab, dim, padding_idx=6)
        self.rnn = nn.GRU(dim, dim, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * dim, classes)

    def forward(self, ids):
        keep = ((ids != 3).float() + (2 < ids).float() - (ids <= 5).float()).unsqueeze(-1)
        _, hidden = self.rnn(self.embed(ids) * keep)
        states = torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)
        bags = sum(bag(ids) for bag in self.bags)
        return self.out(states + bags.repeat(1, 2))


def handwritten_image(**kwargs):
    return HandwrittenImage(**kwargs)


def handwritten_text(**kwargs):
    return HandwrittenText(**kwargs)


class HandwrittenTranslator(nn.Module):
    """Encoder-decoder attention, sequence first ([T, batch, E], the batch on axis 1):
    nn.Transformer (pre-norm) with a causal target mask, a post-norm
    nn.TransformerDecoderLayer, and nn.MultiheadAttention of the target over the memory."""

    def __init__(self, dim=8, heads=2, classes=3, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(dim, heads, 1, 1, 16, dropout=dropout,
                                          norm_first=True)
        self.decoder = nn.TransformerDecoderLayer(dim, heads, 16, dropout=dropout,
                                                  activation="gelu")
        self.cross = nn.MultiheadAttention(dim, heads, dropout=dropout)
        self.out = nn.Linear(dim, classes)

    def forward(self, x):  # [6, batch, dim]: the first 4 steps are the target
        tgt = x[:4]
        mask = self.transformer.generate_square_subsequent_mask(4)
        memory = self.transformer.encoder(x)
        y = self.transformer.decoder(tgt, memory, tgt_mask=mask)
        y = self.decoder(y, memory)
        attended, _ = self.cross(y, memory, memory)
        return self.out(y + attended)


def handwritten_translator(**kwargs):
    return HandwrittenTranslator(**kwargs)
