"""Models written by hand the common ways, as tutorials and public repositories write them:
the rehearsal set of `tools/import-survey --set written`. One builder per model, at a small
size; SPECS gives each one's inputs per sample (shape, dtype, id range) and the loss a user
would import it with. For example:

    tools/import-torch tests/importers/written.py:lenet --input 1,28,28 --batch 2 -o lenet.json
    tools/import-torch tests/importers/written.py:char_rnn --input 12 --input-dtype i32 \\
        --vocab 40 --batch 2 -o char_rnn.json
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet(nn.Module):
    """LeNet-5 for MNIST as the tutorials write it: padding 2, max pooling, view(-1, ...)."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, self.num_flat_features(x))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)

    def num_flat_features(self, x):
        size = x.size()[1:]
        n = 1
        for s in size:
            n *= s
        return n


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class CifarResNet(nn.Module):
    """The CIFAR ResNet of the many training repositories: a 3x3 stem, stages built by
    _make_layer, average pooling by F.avg_pool2d and out.view(out.size(0), -1)."""

    def __init__(self, blocks=(1, 1, 1), classes=10):
        super().__init__()
        self.in_planes = 8
        self.conv1 = nn.Conv2d(3, 8, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(8, blocks[0], 1)
        self.layer2 = self._make_layer(16, blocks[1], 2)
        self.layer3 = self._make_layer(32, blocks[2], 2)
        self.linear = nn.Linear(32 * BasicBlock.expansion, classes)

    def _make_layer(self, planes, count, stride):
        layers = []
        for s in [stride] + [1] * (count - 1):
            layers.append(BasicBlock(self.in_planes, planes, s))
            self.in_planes = planes * BasicBlock.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer3(self.layer2(self.layer1(out)))
        out = F.avg_pool2d(out, out.size()[3])
        out = out.view(out.size(0), -1)
        return self.linear(out)


class DCGANGenerator(nn.Module):
    """DCGAN's generator: a latent [nz, 1, 1] up to a 3x16x16 image by transposed
    convolutions, batch norm and ReLU, Tanh at the end."""

    def __init__(self, nz=16, ngf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh())

    def forward(self, input):
        return self.main(input)


class DCGANDiscriminator(nn.Module):
    """DCGAN's discriminator: strided convolutions, LeakyReLU(0.2), a sigmoid score per
    image, returned as output.view(-1, 1).squeeze(1)."""

    def __init__(self, nc=3, ndf=8):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid())

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class ConvAutoencoder(nn.Module):
    """A convolutional autoencoder for 28x28 images: strided convolutions down, transposed
    ones back up (output_padding for the odd size), a sigmoid image out."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 7))
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(32, 16, 7), nn.ReLU(),
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(8, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.decoder(self.encoder(x))


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class MixerBlock(nn.Module):
    def __init__(self, tokens, channels, token_hidden, channel_hidden):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels)
        self.token_mixing = MlpBlock(tokens, token_hidden)
        self.norm2 = nn.LayerNorm(channels)
        self.channel_mixing = MlpBlock(channels, channel_hidden)

    def forward(self, x):
        y = self.norm1(x).transpose(1, 2)
        x = x + self.token_mixing(y).transpose(1, 2)
        return x + self.channel_mixing(self.norm2(x))


class MLPMixer(nn.Module):
    """MLP-Mixer: patches by a strided convolution, flatten(2).transpose(1, 2) to tokens,
    token MLPs over the transposed tokens, channel MLPs, the mean over tokens."""

    def __init__(self, image_size=16, patch=4, channels=16, depth=2, classes=10):
        super().__init__()
        tokens = (image_size // patch) ** 2
        self.stem = nn.Conv2d(3, channels, patch, patch)
        self.blocks = nn.Sequential(*[MixerBlock(tokens, channels, 2 * tokens, 2 * channels)
                                      for _ in range(depth)])
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = self.norm(self.blocks(x))
        return self.head(x.mean(dim=1))


class CharRNN(nn.Module):
    """A character-level language model: Embedding, a 2-layer batch-first nn.LSTM with
    dropout between layers, the steps flattened to rows for the Linear, as char-rnn
    tutorials write it; the hidden state is optional and starts at zeros."""

    def __init__(self, vocab=40, embed=16, hidden=32, layers=2, dropout=0.0):
        super().__init__()
        self.hidden_size, self.layers = hidden, layers
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, layers, dropout=dropout, batch_first=True)
        self.fc = nn.Linear(hidden, vocab)

    def forward(self, x, hidden=None):
        out, hidden = self.lstm(self.embedding(x), hidden)
        out = out.contiguous().view(-1, self.hidden_size)
        return self.fc(out).view(x.size(0), x.size(1), -1)


class Encoder(nn.Module):
    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)

    def forward(self, src):
        outputs, hidden = self.rnn(self.embedding(src))
        return outputs, hidden


class AttnDecoder(nn.Module):
    """One step of a GRU decoder with dot-product (Luong) attention over the encoder's
    states."""

    def __init__(self, vocab, embed, hidden):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, batch_first=True)
        self.concat = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, token, hidden, encoder_outputs):
        embedded = self.embedding(token).unsqueeze(1)
        output, hidden = self.rnn(embedded, hidden)
        scores = torch.bmm(output, encoder_outputs.transpose(1, 2))
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, encoder_outputs)
        concat = torch.cat((output.squeeze(1), context.squeeze(1)), 1)
        return self.out(torch.tanh(self.concat(concat))), hidden


class Seq2Seq(nn.Module):
    """A GRU encoder-decoder with attention, decoding the target with teacher forcing one
    step at a time; the logits of every step stacked [batch, steps, vocab]."""

    def __init__(self, vocab=30, embed=16, hidden=24):
        super().__init__()
        self.encoder = Encoder(vocab, embed, hidden)
        self.decoder = AttnDecoder(vocab, embed, hidden)

    def forward(self, src, trg):
        encoder_outputs, hidden = self.encoder(src)
        outputs = []
        for t in range(trg.size(1)):
            output, hidden = self.decoder(trg[:, t], hidden, encoder_outputs)
            outputs.append(output)
        return torch.stack(outputs, dim=1)


class Chomp1d(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.size = size

    def forward(self, x):
        return x[:, :, :-self.size].contiguous()


class ResidualLayer(nn.Module):
    """A WaveNet layer: a dilated causal convolution, the gated tanh * sigmoid unit, a 1x1
    convolution each for the residual and the skip path."""

    def __init__(self, channels, skip, dilation):
        super().__init__()
        self.dilated = nn.Conv1d(channels, 2 * channels, 2, padding=dilation, dilation=dilation)
        self.chomp = Chomp1d(dilation)
        self.residual = nn.Conv1d(channels, channels, 1)
        self.skip = nn.Conv1d(channels, skip, 1)

    def forward(self, x):
        h = self.chomp(self.dilated(x))
        filt, gate = torch.chunk(h, 2, dim=1)
        h = torch.tanh(filt) * torch.sigmoid(gate)
        return x + self.residual(h), self.skip(h)


class WaveNet(nn.Module):
    """A WaveNet/TCN-style stack of dilated causal 1-d convolutions (dilations 1 .. 8),
    residual connections and a sum of skips, classified over the mean of time."""

    def __init__(self, in_channels=1, channels=8, skip=16, dilations=(1, 2, 4, 8), classes=10):
        super().__init__()
        self.start = nn.Conv1d(in_channels, channels, 1)
        self.layers = nn.ModuleList([ResidualLayer(channels, skip, d) for d in dilations])
        self.end1 = nn.Conv1d(skip, skip, 1)
        self.end2 = nn.Conv1d(skip, classes, 1)

    def forward(self, x):
        x = self.start(x)
        skips = 0
        for layer in self.layers:
            x, s = layer(x)
            skips = skips + s
        out = self.end2(F.relu(self.end1(F.relu(skips))))
        return out.mean(dim=2)


class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.num_attention_heads = heads
        self.attention_head_size = hidden // heads
        self.all_head_size = hidden
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def transpose_for_scores(self, x):
        new_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        return x.view(*new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask):
        q = self.transpose_for_scores(self.query(hidden_states))
        k = self.transpose_for_scores(self.key(hidden_states))
        v = self.transpose_for_scores(self.value(hidden_states))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        scores = scores + attention_mask
        probs = nn.Softmax(dim=-1)(scores)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return context.view(*context.size()[:-2], self.all_head_size)


class BertLayer(nn.Module):
    """A post-norm encoder layer: attention, add and norm, a GELU feed-forward, add and
    norm."""

    def __init__(self, hidden, heads, intermediate):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attention_output = nn.Linear(hidden, hidden)
        self.attention_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.dropout = nn.Dropout(0.0)

    def forward(self, x, attention_mask):
        a = self.attention_output(self.attention(x, attention_mask))
        x = self.attention_norm(x + self.dropout(a))
        h = self.output(F.gelu(self.intermediate(x)))
        return self.output_norm(x + self.dropout(h))


class Bert(nn.Module):
    """A BERT-style classifier: token, position and segment embeddings summed and normed,
    post-norm layers, a tanh pooler on the first token. The attention mask is an optional
    input that defaults to ones, as in Hugging Face's code, or with mask_from_ids, as
    tutorials write it, made from the ids (padding is id 0, the embedding's padding_idx)."""

    def __init__(self, vocab=50, hidden=32, heads=4, intermediate=64, layers=2, context=32,
                 classes=3, mask_from_ids=False):
        super().__init__()
        self.mask_from_ids = mask_from_ids
        self.word_embeddings = nn.Embedding(vocab, hidden,
                                            padding_idx=0 if mask_from_ids else None)
        self.position_embeddings = nn.Embedding(context, hidden)
        self.token_type_embeddings = nn.Embedding(2, hidden)
        self.embedding_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, intermediate)
                                     for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, classes)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None):
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long, device=input_ids.device)
        position_ids = position_ids.unsqueeze(0).expand_as(input_ids)
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.word_embeddings(input_ids) + self.position_embeddings(position_ids) + \
            self.token_type_embeddings(token_type_ids)
        x = self.embedding_norm(x)
        if self.mask_from_ids:
            attention_mask = input_ids > 0
        elif attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        mask = attention_mask.unsqueeze(1).unsqueeze(2).to(dtype=x.dtype)
        mask = (1.0 - mask) * -10000.0
        for layer in self.layers:
            x = layer(x, mask)
        pooled = torch.tanh(self.pooler(x[:, 0]))
        return self.classifier(pooled)


class PointNet(nn.Module):
    """PointNet's classifier without the input transforms: points [3, N], a shared MLP as
    1x1 Conv1d with batch norm, the max over points, fully connected layers, log-softmax."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv1d(3, 16, 1)
        self.conv2 = nn.Conv1d(16, 32, 1)
        self.conv3 = nn.Conv1d(32, 64, 1)
        self.bn1 = nn.BatchNorm1d(16)
        self.bn2 = nn.BatchNorm1d(32)
        self.bn3 = nn.BatchNorm1d(64)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, classes)
        self.bn4 = nn.BatchNorm1d(32)
        self.dropout = nn.Dropout(p=0.0)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.bn2(self.conv2(x)))
        x = self.bn3(self.conv3(x))
        x = torch.max(x, 2, keepdim=True)[0]
        x = x.view(-1, 64)
        x = F.relu(self.bn4(self.dropout(self.fc1(x))))
        return F.log_softmax(self.fc2(x), dim=1)


class DenseLayer(nn.Module):
    def __init__(self, in_channels, growth):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = nn.Conv2d(in_channels, 4 * growth, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(4 * growth)
        self.conv2 = nn.Conv2d(4 * growth, growth, 3, padding=1, bias=False)

    def forward(self, x):
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([out, x], 1)


class DenseNet(nn.Module):
    """A small DenseNet for CIFAR: bottleneck layers that cat their output to their input,
    a transition (1x1 convolution, 2x2 average pooling), global average pooling."""

    def __init__(self, growth=6, layers=3, classes=10):
        super().__init__()
        channels = 2 * growth
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1, bias=False)
        self.dense1 = self._dense(channels, growth, layers)
        channels += layers * growth
        self.trans_bn = nn.BatchNorm2d(channels)
        self.trans_conv = nn.Conv2d(channels, channels // 2, 1, bias=False)
        channels //= 2
        self.dense2 = self._dense(channels, growth, layers)
        channels += layers * growth
        self.bn = nn.BatchNorm2d(channels)
        self.linear = nn.Linear(channels, classes)

    @staticmethod
    def _dense(channels, growth, count):
        return nn.Sequential(*[DenseLayer(channels + i * growth, growth) for i in range(count)])

    def forward(self, x):
        out = self.dense1(self.conv1(x))
        out = F.avg_pool2d(self.trans_conv(F.relu(self.trans_bn(out))), 2)
        out = F.relu(self.bn(self.dense2(out)))
        out = F.adaptive_avg_pool2d(out, (1, 1))
        return self.linear(torch.flatten(out, 1))


class SELayer(nn.Module):
    """Squeeze-excitation: the channels' means through a bottleneck MLP to per-channel
    scales."""

    def __init__(self, channel, reduction=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Sequential(
            nn.Linear(channel, channel // reduction, bias=False), nn.ReLU(inplace=True),
            nn.Linear(channel // reduction, channel, bias=False), nn.Sigmoid())

    def forward(self, x):
        b, c, _, _ = x.size()
        y = self.avg_pool(x).view(b, c)
        y = self.fc(y).view(b, c, 1, 1)
        return x * y.expand_as(x)


class SECNN(nn.Module):
    """A plain CNN with a squeeze-excitation layer after each convolution."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
            SELayer(16), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
            SELayer(32), nn.AdaptiveAvgPool2d((1, 1)))
        self.classifier = nn.Linear(32, classes)

    def forward(self, x):
        x = self.features(x)
        return self.classifier(x.view(x.size(0), -1))


class TextCNN(nn.Module):
    """A text CNN (after Kim, 2014): Embedding, Conv1d of widths 3, 4 and 5 over the
    embedding's channels, the max over time of each, cat, dropout, Linear."""

    def __init__(self, vocab=60, embed=16, filters=8, widths=(3, 4, 5), classes=4,
                 dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.convs = nn.ModuleList([nn.Conv1d(embed, filters, k) for k in widths])
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(filters * len(widths), classes)

    def forward(self, text):
        embedded = self.embedding(text).permute(0, 2, 1)
        conved = [F.relu(conv(embedded)) for conv in self.convs]
        pooled = [F.max_pool1d(c, c.shape[2]).squeeze(2) for c in conved]
        return self.fc(self.dropout(torch.cat(pooled, dim=1)))


class Conv1D(nn.Module):
    """GPT-2's linear layer as Hugging Face writes it: a weight [in, out], the rows of
    every position through torch.addmm."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class GPT2Attention(nn.Module):
    """GPT-2's attention after Hugging Face's: a fused qkv Conv1D split, heads split and
    merged by helper methods, the causal mask a bool buffer applied by torch.where with the
    dtype's smallest value."""

    def __init__(self, dim, heads, context):
        super().__init__()
        self.num_heads, self.head_dim, self.split_size = heads, dim // heads, dim
        self.register_buffer("bias", torch.tril(torch.ones((context, context), dtype=torch.bool))
                             .view(1, 1, context, context))
        self.c_attn = Conv1D(3 * dim, dim)
        self.c_proj = Conv1D(dim, dim)

    def _split_heads(self, tensor):
        new_shape = tensor.size()[:-1] + (self.num_heads, self.head_dim)
        return tensor.view(new_shape).permute(0, 2, 1, 3)

    def _merge_heads(self, tensor):
        tensor = tensor.permute(0, 2, 1, 3).contiguous()
        return tensor.view(tensor.size()[:-2] + (self.num_heads * self.head_dim,))

    def _attn(self, query, key, value):
        attn_weights = torch.matmul(query, key.transpose(-1, -2))
        attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5,
                                                 dtype=attn_weights.dtype)
        query_length, key_length = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, key_length - query_length:key_length, :key_length]
        mask_value = torch.full([], torch.finfo(attn_weights.dtype).min,
                                dtype=attn_weights.dtype)
        attn_weights = torch.where(causal_mask, attn_weights, mask_value)
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        return torch.matmul(attn_weights, value)

    def forward(self, hidden_states):
        query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
        query, key, value = (self._split_heads(t) for t in (query, key, value))
        return self.c_proj(self._merge_heads(self._attn(query, key, value)))


class GPT2MLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.c_fc = Conv1D(4 * dim, dim)
        self.c_proj = Conv1D(dim, 4 * dim)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, dim, heads, context):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = GPT2Attention(dim, heads, context)
        self.ln_2 = nn.LayerNorm(dim)
        self.mlp = GPT2MLP(dim)

    def forward(self, hidden_states):
        residual = hidden_states
        hidden_states = self.attn(self.ln_1(hidden_states)) + residual
        return self.mlp(self.ln_2(hidden_states)) + hidden_states


class GPT2(nn.Module):
    """GPT-2 at a small size, after Hugging Face's: wte and wpe, blocks of fused-qkv
    attention and MLPs of Conv1D, ln_f, a tied head."""

    def __init__(self, vocab=64, dim=32, heads=4, context=16, layers=2):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(context, dim)
        self.h = nn.ModuleList([GPT2Block(dim, heads, context) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


class AttentionGate(nn.Module):
    """Attention U-Net's gate: the skip features weighted by a sigmoid map computed from
    them and the coarser gating signal."""

    def __init__(self, f_g, f_l, f_int):
        super().__init__()
        self.W_g = nn.Sequential(nn.Conv2d(f_g, f_int, 1), nn.BatchNorm2d(f_int))
        self.W_x = nn.Sequential(nn.Conv2d(f_l, f_int, 1), nn.BatchNorm2d(f_int))
        self.psi = nn.Sequential(nn.Conv2d(f_int, 1, 1), nn.BatchNorm2d(1), nn.Sigmoid())
        self.relu = nn.ReLU(inplace=True)

    def forward(self, g, x):
        psi = self.relu(self.W_g(g) + self.W_x(x))
        return x * self.psi(psi)


def conv_block(ch_in, ch_out):
    return nn.Sequential(
        nn.Conv2d(ch_in, ch_out, 3, padding=1, bias=False), nn.BatchNorm2d(ch_out),
        nn.ReLU(inplace=True))


class AttentionUNet(nn.Module):
    """A two-level Attention U-Net: max pooling down, nn.Upsample and a convolution up, the
    skip gated by the upsampled features, cat, a 1x1 convolution to the classes."""

    def __init__(self, in_channels=3, classes=2, width=8):
        super().__init__()
        self.pool = nn.MaxPool2d(2, 2)
        self.conv1 = conv_block(in_channels, width)
        self.conv2 = conv_block(width, 2 * width)
        self.up = nn.Sequential(nn.Upsample(scale_factor=2), conv_block(2 * width, width))
        self.gate = AttentionGate(width, width, width // 2)
        self.up_conv = conv_block(2 * width, width)
        self.out = nn.Conv2d(width, classes, 1)

    def forward(self, x):
        x1 = self.conv1(x)
        x2 = self.conv2(self.pool(x1))
        d2 = self.up(x2)
        x1 = self.gate(g=d2, x=x1)
        d2 = self.up_conv(torch.cat((x1, d2), dim=1))
        return self.out(d2).permute(0, 2, 3, 1)


class VAE(nn.Module):
    """The VAE of the PyTorch examples, its deterministic path: an MLP encoder to the mean
    and log-variance, the decoder from the mean (no sampling), reconstructed pixels."""

    def __init__(self, pixels=784, hidden=64, latent=8):
        super().__init__()
        self.pixels = pixels
        self.fc1 = nn.Linear(pixels, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, pixels)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, self.pixels))
        return self.decode(mu), mu, logvar


class MnistNet(nn.Module):
    """The MNIST network of PyTorch's examples: two convolutions, Dropout2d on the feature
    maps, max pooling, torch.flatten, dropout, log-softmax."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout2d(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.fc1 = nn.Linear(16 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.dropout2(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


class LSTMSentiment(nn.Module):
    """A sentiment classifier as tutorials write it: Embedding, nn.LSTM (batch first), the
    last layer's final hidden state `hidden[-1]` through dropout and a Linear."""

    def __init__(self, vocab=50, embed=16, hidden=24, layers=2, classes=2, dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, num_layers=layers, batch_first=True,
                            dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, text):
        embedded = self.embedding(text)
        output, (hidden, cell) = self.lstm(embedded)
        return self.fc(self.dropout(hidden[-1]))


class BiGRUClassifier(nn.Module):
    """A bidirectional GRU classifier: the last layer's final states of both directions,
    torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1), then a Linear."""

    def __init__(self, vocab=50, embed=16, hidden=16, classes=4):
        super().__init__()
        self.embedding = nn.Embedding(vocab, embed)
        self.rnn = nn.GRU(embed, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(hidden * 2, classes)

    def forward(self, text):
        _, hidden = self.rnn(self.embedding(text))
        return self.fc(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))


class FastText(nn.Module):
    """The text classifier of PyTorch's tutorial: nn.EmbeddingBag (mean of each row's
    embeddings) and a Linear, its weights initialised uniformly."""

    def __init__(self, vocab=60, embed=16, classes=4):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab, embed, mode="mean")
        self.fc = nn.Linear(embed, classes)
        self.embedding.weight.data.uniform_(-0.5, 0.5)
        self.fc.weight.data.uniform_(-0.5, 0.5)
        self.fc.bias.data.zero_()

    def forward(self, text):
        return self.fc(self.embedding(text))


class SuperResolution(nn.Module):
    """ESPCN, the super-resolution network of PyTorch's examples: convolutions, then
    nn.PixelShuffle to an image upscale_factor times larger."""

    def __init__(self, upscale_factor=2):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 16, 5, 1, 2)
        self.conv2 = nn.Conv2d(16, 16, 3, 1, 1)
        self.conv3 = nn.Conv2d(16, upscale_factor ** 2, 3, 1, 1)
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        return self.pixel_shuffle(self.conv3(x))


class GroupNormCNN(nn.Module):
    """A CNN with group normalisation and PReLU, as small-batch and detection code uses
    them, and a global average pooling by mean over the spatial axes."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.gn1 = nn.GroupNorm(4, 16)
        self.act1 = nn.PReLU()
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.gn2 = nn.GroupNorm(8, 32)
        self.act2 = nn.PReLU(32)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.act1(self.gn1(self.conv1(x)))
        x = self.act2(self.gn2(self.conv2(x)))
        return self.fc(x.mean([2, 3]))


class PositionalEncoding(nn.Module):
    """The sinusoidal position table of PyTorch's transformer tutorial, a buffer
    [max_len, 1, d_model] added to a sequence-first input."""

    def __init__(self, d_model, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        return self.dropout(x + self.pe[:x.size(0)])


class TransformerLM(nn.Module):
    """The language model of PyTorch's transformer tutorial: tokens [T, batch], embeddings
    scaled by sqrt(d_model), the sinusoidal positions, nn.TransformerEncoder with a causal
    mask from nn.Transformer.generate_square_subsequent_mask, a Linear decoder."""

    def __init__(self, ntoken=40, d_model=32, nhead=4, d_hid=64, nlayers=2, dropout=0.0):
        super().__init__()
        self.pos_encoder = PositionalEncoding(d_model, dropout)
        layers = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layers, nlayers,
                                                         enable_nested_tensor=False)
        self.encoder = nn.Embedding(ntoken, d_model)
        self.d_model = d_model
        self.decoder = nn.Linear(d_model, ntoken)

    def forward(self, src):
        src_mask = nn.Transformer.generate_square_subsequent_mask(src.size(0))
        src = self.encoder(src) * math.sqrt(self.d_model)
        src = self.pos_encoder(src)
        return self.decoder(self.transformer_encoder(src, src_mask))


class TransformerTranslator(nn.Module):
    """A translation model on nn.Transformer (encoder and decoder, batch first), the target
    masked causally, as the translation tutorial writes it."""

    def __init__(self, vocab=30, d_model=32, nhead=4, layers=1, d_hid=64, context=16):
        super().__init__()
        self.src_embed = nn.Embedding(vocab, d_model)
        self.tgt_embed = nn.Embedding(vocab, d_model)
        self.positions = nn.Parameter(torch.randn(1, context, d_model) * 0.02)
        self.transformer = nn.Transformer(d_model, nhead, layers, layers, d_hid, dropout=0.0,
                                          batch_first=True)
        self.generator = nn.Linear(d_model, vocab)

    def forward(self, src, tgt):
        tgt_mask = self.transformer.generate_square_subsequent_mask(tgt.size(1))
        s = self.src_embed(src) + self.positions[:, :src.size(1)]
        t = self.tgt_embed(tgt) + self.positions[:, :tgt.size(1)]
        return self.generator(self.transformer(s, t, tgt_mask=tgt_mask))


class LSTMTutorial(nn.Module):
    """The recurrent classifier of the common PyTorch tutorials: initial states made with
    torch.zeros(layers, x.size(0), hidden) and moved .to(x.device), the last step's
    output out[:, -1, :] into a Linear."""

    def __init__(self, input_size=8, hidden_size=16, num_layers=2, classes=4):
        super().__init__()
        self.hidden_size, self.num_layers = hidden_size, num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_size, classes)

    def forward(self, x):
        h0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        c0 = torch.zeros(self.num_layers, x.size(0), self.hidden_size).to(x.device)
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])


class ChannelAttention(nn.Module):
    def __init__(self, channels, ratio=4):
        super().__init__()
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.max_pool = nn.AdaptiveMaxPool2d(1)
        self.fc = nn.Sequential(nn.Conv2d(channels, channels // ratio, 1, bias=False),
                                nn.ReLU(), nn.Conv2d(channels // ratio, channels, 1, bias=False))
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        return self.sigmoid(self.fc(self.avg_pool(x)) + self.fc(self.max_pool(x)))


class SpatialAttention(nn.Module):
    def __init__(self, kernel_size=7):
        super().__init__()
        self.conv = nn.Conv2d(2, 1, kernel_size, padding=kernel_size // 2, bias=False)

    def forward(self, x):
        avg_out = torch.mean(x, dim=1, keepdim=True)
        max_out, _ = torch.max(x, dim=1, keepdim=True)
        return torch.sigmoid(self.conv(torch.cat([avg_out, max_out], dim=1)))


class CBAMNet(nn.Module):
    """A CNN with CBAM blocks: channel attention from average and max pooling through a
    shared MLP, spatial attention from the channels' mean and max."""

    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.ca1, self.sa1 = ChannelAttention(16), SpatialAttention()
        self.conv2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.ca2, self.sa2 = ChannelAttention(32), SpatialAttention()
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.ca1(x) * x
        x = self.sa1(x) * x
        x = F.relu(self.conv2(x))
        x = self.ca2(x) * x
        x = self.sa2(x) * x
        return self.fc(F.adaptive_avg_pool2d(x, 1).reshape(x.shape[0], -1))


class MobileNetV1(nn.Module):
    """MobileNet v1 written by hand: conv_dw blocks of a depthwise 3x3 (groups = channels)
    and a pointwise 1x1, each with batch norm and ReLU, F.avg_pool2d and view at the end."""

    def __init__(self, classes=10):
        super().__init__()

        def conv_bn(inp, oup, stride):
            return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False),
                                 nn.BatchNorm2d(oup), nn.ReLU(inplace=True))

        def conv_dw(inp, oup, stride):
            return nn.Sequential(
                nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False),
                nn.BatchNorm2d(inp), nn.ReLU(inplace=True),
                nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup),
                nn.ReLU(inplace=True))

        self.model = nn.Sequential(conv_bn(3, 8, 2), conv_dw(8, 16, 1), conv_dw(16, 32, 2),
                                   conv_dw(32, 32, 1), nn.AvgPool2d(4))
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = self.model(x)
        return self.fc(x.view(-1, 32))


CFG = [8, "M", 16, "M", 32, 32, "M"]


class VGG(nn.Module):
    """A VGG for CIFAR built from a configuration list (numbers are convolutions, "M" max
    pooling), as the training repositories build it."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = self._make_layers(CFG)
        self.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(32 * 2 * 2, 32),
                                        nn.ReLU(True), nn.Linear(32, classes))

    def forward(self, x):
        out = self.features(x)
        out = out.view(out.size(0), -1)
        return self.classifier(out)

    @staticmethod
    def _make_layers(cfg):
        layers, in_channels = [], 3
        for x in cfg:
            if x == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, x, 3, padding=1), nn.BatchNorm2d(x),
                           nn.ReLU(inplace=True)]
                in_channels = x
        return nn.Sequential(*layers)


class GatedCNN(nn.Module):
    """A gated convolutional language model: causal Conv1d by left padding with F.pad,
    gated linear units (F.glu and nn.GLU) and residual sums, frozen pretrained
    embeddings (nn.Embedding.from_pretrained)."""

    def __init__(self, vocab=40, dim=16, layers=2, kernel=3):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(torch.randn(vocab, dim))
        self.kernel = kernel
        self.convs = nn.ModuleList([nn.Conv1d(dim, 2 * dim, kernel) for _ in range(layers)])
        self.glu = nn.GLU(dim=1)
        self.out = nn.Linear(dim, vocab)

    def forward(self, ids):
        x = self.embedding(ids).transpose(1, 2)
        for i, conv in enumerate(self.convs):
            h = conv(F.pad(x, (self.kernel - 1, 0)))
            x = x + (F.glu(h, dim=1) if i % 2 == 0 else self.glu(h))
        return self.out(x.transpose(1, 2))


class VisionTransformer(nn.Module):
    """A vision transformer written by hand: patches by a strided convolution and
    flatten(2).transpose(1, 2), a class token expanded over the batch and cat in front,
    learned positions, nn.TransformerEncoder (batch first, pre-norm), the class token's
    output normed into the head."""

    def __init__(self, image_size=16, patch_size=4, dim=32, depth=2, heads=4, classes=10):
        super().__init__()
        patches = (image_size // patch_size) ** 2
        self.patch_embed = nn.Conv2d(3, dim, patch_size, patch_size)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.randn(1, patches + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0,
                                           activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        B = x.shape[0]
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        cls_tokens = self.cls_token.expand(B, -1, -1)
        x = torch.cat((cls_tokens, x), dim=1) + self.pos_embed
        x = self.encoder(x)
        return self.head(self.norm(x[:, 0]))


class UnflattenAutoencoder(nn.Module):
    """A fully connected autoencoder of images with nn.Flatten and nn.Unflatten."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 64), nn.ReLU(),
                                     nn.Linear(64, 16))
        self.decoder = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 28 * 28),
                                     nn.Sigmoid(), nn.Unflatten(1, (1, 28, 28)))

    def forward(self, x):
        return self.decoder(self.encoder(x))


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels), nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU(inplace=True))

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(in_channels, out_channels))

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Bilinear upsampling (corners aligned), the skip padded to the upsampled size with
    F.pad by the sizes' differences, cat, a double convolution."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]
        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2])
        return self.conv(torch.cat([x2, x1], dim=1))


class BilinearUNet(nn.Module):
    """The U-Net of the popular segmentation repositories, bilinear variant, at a small
    width: the logits per pixel [N, classes, H, W]."""

    def __init__(self, n_channels=3, n_classes=2, width=8):
        super().__init__()
        self.inc = DoubleConv(n_channels, width)
        self.down1 = Down(width, 2 * width)
        self.down2 = Down(2 * width, 2 * width)
        self.up1 = Up(4 * width, width)
        self.up2 = Up(2 * width, width)
        self.outc = nn.Conv2d(width, n_classes, 1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        return self.outc(x)


def lenet(**kwargs):
    return LeNet(**kwargs)


def cifar_resnet(**kwargs):
    return CifarResNet(**kwargs)


def dcgan_generator(**kwargs):
    return DCGANGenerator(**kwargs)


def dcgan_discriminator(**kwargs):
    return DCGANDiscriminator(**kwargs)


def conv_autoencoder():
    return ConvAutoencoder()


def mlp_mixer(**kwargs):
    return MLPMixer(**kwargs)


def char_rnn(**kwargs):
    return CharRNN(**kwargs)


def seq2seq(**kwargs):
    return Seq2Seq(**kwargs)


def wavenet(**kwargs):
    return WaveNet(**kwargs)


def bert(**kwargs):
    return Bert(**kwargs)


def bert_tutorial(**kwargs):
    return Bert(mask_from_ids=True, **kwargs)


def pointnet(**kwargs):
    return PointNet(**kwargs)


def densenet(**kwargs):
    return DenseNet(**kwargs)


def se_cnn(**kwargs):
    return SECNN(**kwargs)


def text_cnn(**kwargs):
    return TextCNN(**kwargs)


def gpt2(**kwargs):
    return GPT2(**kwargs)


def attention_unet(**kwargs):
    return AttentionUNet(**kwargs)


def vae(**kwargs):
    return VAE(**kwargs)


def mnist_net(**kwargs):
    return MnistNet(**kwargs)


def lstm_sentiment(**kwargs):
    return LSTMSentiment(**kwargs)


def bigru_classifier(**kwargs):
    return BiGRUClassifier(**kwargs)


def fasttext(**kwargs):
    return FastText(**kwargs)


def super_resolution(**kwargs):
    return SuperResolution(**kwargs)


def groupnorm_cnn(**kwargs):
    return GroupNormCNN(**kwargs)


def transformer_lm(**kwargs):
    return TransformerLM(**kwargs)


def transformer_translator(**kwargs):
    return TransformerTranslator(**kwargs)


def lstm_tutorial(**kwargs):
    return LSTMTutorial(**kwargs)


def cbam_net(**kwargs):
    return CBAMNet(**kwargs)


def mobilenet_v1(**kwargs):
    return MobileNetV1(**kwargs)


def vgg(**kwargs):
    return VGG(**kwargs)


def gated_cnn(**kwargs):
    return GatedCNN(**kwargs)


def vision_transformer(**kwargs):
    return VisionTransformer(**kwargs)


def unflatten_autoencoder():
    return UnflattenAutoencoder()


def bilinear_unet(**kwargs):
    return BilinearUNet(**kwargs)


def tokens(length, vocab):
    """An input of token ids [length] below vocab."""
    return dict(shape=(length,), dtype="i32", vocab=vocab)


def image(*shape):
    return dict(shape=shape, dtype="f32")


# Each model's inputs per sample (the batch on axis 0 unless batch_axis says), and the loss a user would import it with (cross-entropy
# over the last axis unless said).
SPECS = {
    "lenet": dict(inputs=[image(1, 28, 28)]),
    "cifar_resnet": dict(inputs=[image(3, 32, 32)]),
    "dcgan_generator": dict(inputs=[image(16, 1, 1)], loss="mse"),
    "dcgan_discriminator": dict(inputs=[image(3, 16, 16)], loss="mse"),
    "conv_autoencoder": dict(inputs=[image(1, 28, 28)], loss="mse"),
    "mlp_mixer": dict(inputs=[image(3, 16, 16)]),
    "char_rnn": dict(inputs=[tokens(12, 40)]),
    "seq2seq": dict(inputs=[tokens(7, 30), tokens(5, 30)]),
    "wavenet": dict(inputs=[image(1, 64)]),
    "bert": dict(inputs=[tokens(12, 50)]),
    "bert_tutorial": dict(inputs=[tokens(12, 50)]),
    "pointnet": dict(inputs=[image(3, 32)]),
    "densenet": dict(inputs=[image(3, 16, 16)]),
    "se_cnn": dict(inputs=[image(3, 16, 16)]),
    "text_cnn": dict(inputs=[tokens(20, 60)]),
    "gpt2": dict(inputs=[tokens(16, 64)]),
    "attention_unet": dict(inputs=[image(3, 16, 16)]),
    "vae": dict(inputs=[image(1, 28, 28)], loss="mse"),
    "mnist_net": dict(inputs=[image(1, 28, 28)]),
    "lstm_sentiment": dict(inputs=[tokens(10, 50)]),
    "bigru_classifier": dict(inputs=[tokens(10, 50)]),
    "fasttext": dict(inputs=[tokens(12, 60)]),
    "super_resolution": dict(inputs=[image(1, 12, 12)], loss="mse"),
    "groupnorm_cnn": dict(inputs=[image(3, 16, 16)]),
    "transformer_lm": dict(inputs=[dict(tokens(12, 40), batch_axis=1)]),
    "transformer_translator": dict(inputs=[tokens(9, 30), tokens(7, 30)]),
    "lstm_tutorial": dict(inputs=[image(10, 8)]),
    "cbam_net": dict(inputs=[image(3, 16, 16)]),
    "mobilenet_v1": dict(inputs=[image(3, 16, 16)]),
    "vgg": dict(inputs=[image(3, 16, 16)]),
    "gated_cnn": dict(inputs=[tokens(12, 40)]),
    "vision_transformer": dict(inputs=[image(3, 16, 16)]),
    "unflatten_autoencoder": dict(inputs=[image(1, 28, 28)], loss="mse"),
    "bilinear_unet": dict(inputs=[image(3, 18, 18)], loss="mse"),
}
