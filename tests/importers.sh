#!/bin/sh
# The importers (tools/import-torch, tools/import-onnx): the small models of
# tools/importers/zoo.py's MAPPING_MODELS through both, checked against PyTorch by
# tests/importers/check.py (outputs and first-step gradients within 1e-4), and the command
# lines' errors. The zoo's real models are checked by tests/importers-zoo.sh, in shards
# that run side by side (Makefile.am, ZOO_SHARDS), and the models written by hand by
# tests/importers-written.sh. Skipped (exit 77) with a message when python3-torch,
# python3-torchvision or python3-onnx is missing (tools/setup installs them).
. "${top_srcdir:-.}/tests/shell_lib.sh"

need_importers importers


# A setting placer lacks is an unsupported operator too.
expect 2 "stochastic depth at p=1" "$torch_import" \
    "$src/tests/importers/models.py:dropping_every_sample" --input 8 -o "$work/sd.json"
contains "$work/err" "stochastic_depth with p=1 (every sample dropped): 1 use" "the setting"
[ ! -e "$work/sd.json" ] && ok || bad "a model was written despite the error"

# One error lists every unsupported operator with its uses; nothing is written.
expect 2 "unsupported operators" "$torch_import" "$src/tests/importers/unsupported.py:build" \
    --input 5,8 -o "$work/u.json"
contains "$work/err" "2 unsupported operators (3 uses); nothing was written" "the count"
contains "$work/err" "RNN (torch.nn module): 2 uses: rnn, rnn2" "the RNNs and where"
contains "$work/err" "torch.flip: 1 use" "the flip"
[ ! -e "$work/u.json" ] && ok || bad "a model was written despite the error"

# Masks computed from the input (comparisons, ~, where, masked_fill: zoo.py's
# MAPPING_MODELS) through both importers, against PyTorch.
if "$py" "$src/tests/importers/check.py" --placer "$bin" masks >"$work/check" 2>&1; then
    ok
else
    bad "check.py: the masks model differs from PyTorch or does not import"
fi
cat "$work/check"

# Window attention's pieces (F.pad, torch.roll, swapaxes, a table's rows by constant
# indices, a mask filled in place, torch.einsum), and a video classifier's (BatchNorm3d,
# AdaptiveAvgPool3d, subclasses of mapped layers), and layers composed of placer's ops
# (torch.stack, unbind, tensor_split, LeakyReLU, nearest upsampling), and pooling over one
# and three axes: zoo.py's MAPPING_MODELS, against PyTorch.
if "$py" "$src/tests/importers/check.py" --placer "$bin" windows volumes everyday pools \
    >"$work/check" 2>&1
then
    ok
else
    bad "check.py: the windows, volumes, everyday or pools model differs from PyTorch or does not import"
fi
cat "$work/check"

# exp, log, sqrt, rsqrt, abs and powers through both importers, and what is written with
# them (F.normalize, F.softplus, var, std, zero_ on part of a cloned bias) through
# import-torch: zoo.py's MAPPING_MODELS, against PyTorch.
if "$py" "$src/tests/importers/check.py" --placer "$bin" powers normalizing >"$work/check" 2>&1
then
    ok
else
    bad "check.py: the powers or normalizing model differs from PyTorch or does not import"
fi
cat "$work/check"
expect 2 "refused math" "$torch_import" "$src/tests/importers/models.py:refused_maths" \
    --input 8 -o "$work/m.json"
contains "$work/err" "pow of a tensor to a tensor's power (or of a negative number): 1 use" \
    "a tensor's power"
contains "$work/err" "zero_ or fill_ other than on a copy of a parameter or a slice of one" \
    "zero_ on a computed tensor"
[ ! -e "$work/m.json" ] && ok || bad "a model was written despite the error"
# What models written by hand do (zoo.py's MAPPING_MODELS "handwritten*"): a module made in
# forward, constants expanded over the batch, the maximum along an axis, PReLU, group and
# instance norms, channel dropout, pixel shuffles, bags of embeddings, an RNN's states
# indexed, repeat, encoder-decoder attention, adaptive max pooling, GLU, (bi)linear
# upsampling; against PyTorch.
if "$py" "$src/tests/importers/check.py" --placer "$bin" handwritten handwritten_image \
    handwritten_text handwritten_translator --via torch >"$work/check" 2>&1
then
    ok
else
    bad "check.py: a handwritten model differs from PyTorch or does not import"
fi
cat "$work/check"
cat >"$work/ids.py" <<'PY'
import torch, torch.nn as nn
class Ids(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed, self.out = nn.Embedding(10, 4), nn.Linear(4, 3)
    def forward(self, ids):
        h = self.embed(ids)
        padding = (ids > h.sum(-1)).unsqueeze(-1).float()
        return self.out(h * padding + torch.max(h, 2).indices.unsqueeze(-1))
def build():
    return Ids()
PY
expect 2 "ids compared with values, indices of a maximum" "$torch_import" "$work/ids.py:build" --input 6 \
    --input-dtype i32 --vocab 10 -o "$work/ids.json"
contains "$work/err" "greater of integer ids other than with a number, in a model with an embedding they index: 1 use" \
    "the comparison"
contains "$work/err" "the indices of torch.max: 1 use" "the indices"
[ ! -e "$work/ids.json" ] && ok || bad "a model was written despite the error"
cat >"$work/padding.py" <<'PY'
import torch, torch.nn as nn
def build():
    model = nn.Sequential(nn.Embedding(10, 4, padding_idx=2), nn.Flatten(), nn.Linear(24, 3))
    with torch.no_grad():
        model[0].weight[2] = 1.0  # a padding row that is not zeros: PyTorch would return it
    return model
PY
expect 2 "a padding row of ones" "$torch_import" "$work/padding.py:build" --input 6 \
    --input-dtype i32 --vocab 10 -o "$work/padding.json"
contains "$work/err" "Embedding with padding_idx whose padding row is not zeros: 1 use" \
    "the padding row"
[ ! -e "$work/padding.json" ] && ok || bad "a model was written despite the error"

# The same through ONNX: its RNNs are listed.
"$py" - "$src/tests/importers/unsupported.py" "$work/u.onnx" <<'PY' 2>/dev/null
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("unsupported", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
torch.onnx.export(module.build(), torch.randn(2, 5, 8), sys.argv[2], opset_version=17)
PY
expect 2 "unsupported ONNX operators" "$onnx_import" "$work/u.onnx" -o "$work/u.json"
contains "$work/err" "RNN: 2 uses" "the ONNX RNNs"
[ ! -e "$work/u.json" ] && ok || bad "a model was written despite the error"

# An ONNX GRU that resets before its linear map (not PyTorch's GRU): refused by its setting.
"$py" - "$work/g.onnx" <<'PY' 2>/dev/null
import sys, onnx, torch
torch.onnx.export(torch.nn.GRU(4, 3), torch.randn(5, 2, 4), sys.argv[1], opset_version=17)
m = onnx.load(sys.argv[1])
for a in next(n for n in m.graph.node if n.op_type == "GRU").attribute:
    if a.name == "linear_before_reset":
        a.i = 0
onnx.save(m, sys.argv[1])
PY
expect 2 "an ONNX GRU resetting first" "$onnx_import" "$work/g.onnx" --batch 2 --batch-axis 1 \
    -o "$work/g.json"
contains "$work/err" "GRU (linear_before_reset=0 (PyTorch's GRU resets after its linear map)): 1 use" \
    "the setting"
[ ! -e "$work/g.json" ] && ok || bad "a model was written despite the error"

# Models only tracing with real shapes follows: what cannot be imported is one error
# naming the line or the operator, exit 2, nothing written; never a traceback.
shapes=$src/tests/importers/real_shapes.py
expect 2 "data-dependent control flow" "$torch_import" "$shapes:branchy" --input 8 --batch 2 \
    -o "$work/s.json"
contains "$work/err" "data-dependent control flow at " "says what"
contains "$work/err" "real_shapes.py:17 (\`if x.sum() > 0:" "names the line"
expect 2 "an input's value read as a number" "$torch_import" "$shapes:counting" --input 8 \
    --batch 2 -o "$work/s.json"
contains "$work/err" "real_shapes.py:33 (\`return x * int(x.abs().max())\`)" "names the line"
expect 2 "a failure while tracing" "$torch_import" "$shapes:broken" --input 8 --batch 2 \
    -o "$work/s.json"
contains "$work/err" "real_shapes.py:45 (\`return self.fc(x.view(b, t))\`): RuntimeError" \
    "names the line and the error"
! grep -q Traceback "$work/err" && ok || bad "a traceback"
expect 2 "an operator without a mapping" "$torch_import" "$shapes:unmapped" --input 8 \
    --batch 2 -o "$work/s.json"
contains "$work/err" "1 unsupported operator (1 use); nothing was written" "the count"
contains "$work/err" "torch.cumsum: 1 use: cumsum" "the operator and where"
[ ! -e "$work/s.json" ] && ok || bad "a model was written despite the errors"

# Recurrent layers in the settings the zoo leaves out match PyTorch through both importers;
# those placer refuses are listed in one error, and nothing is written.
if "$py" "$src/tests/importers/recurrent.py" --placer "$bin" >"$work/recurrent" 2>&1; then
    ok
else
    bad "recurrent.py: a recurrent variant differs from PyTorch or does not import"
fi
cat "$work/recurrent"
expect 2 "refused recurrent settings" "$torch_import" "$src/tests/importers/recurrent.py:refused" \
    --input 5,8 --batch 1 -o "$work/rr.json"
contains "$work/err" "2 unsupported operators (2 uses); nothing was written" "both"
contains "$work/err" "LSTM with batch_first=False on a sequence with the batch on axis 0" \
    "time-major without --batch-axis"
contains "$work/err" "LSTM with proj_size: 1 use: projected" "the projection"
[ ! -e "$work/rr.json" ] && ok || bad "a model was written despite the error"
expect 2 "assignment and einsum that do not map" "$torch_import" "$shapes:assigning" \
    --input 8 --batch 2 -o "$work/s.json"
contains "$work/err" "assigning into a tensor computed from the input or a parameter: 1 use" \
    "the assignment"
contains "$work/err" "torch.einsum other than a matrix product of two tensors (bi,bi,bi->bi)" \
    "the einsum"
[ ! -e "$work/s.json" ] && ok || bad "a model was written despite the errors"

# Usage errors exit 2 and say what.
expect 2 "no --input" "$torch_import" torchvision:resnet18 -o "$work/r.json"
expect 2 "unknown torchvision model" "$torch_import" torchvision:resnet19 --input 3,32,32 -o "$work/r.json"
contains "$work/err" "torchvision has no model 'resnet19'" "names the model"
expect 2 "a torchvision package, not a model" "$torch_import" torchvision:video \
    --input 3,4,32,32 -o "$work/r.json"
contains "$work/err" "torchvision has no model 'video'" "names the package"
expect 2 "bad --input" "$torch_import" torchvision:resnet18 --input 3,x,32 -o "$work/r.json"
expect 2 "input count" "$torch_import" torchvision:resnet18 --input 3,32,32 --input 4 -o "$work/r.json"
contains "$work/err" "the model takes 1 input (x); --input gives 2" "says how many"
expect 2 "missing file" "$torch_import" "$work/nothere.py:build" --input 4 -o "$work/r.json"
expect 2 "missing ONNX file" "$onnx_import" "$work/nothere.onnx" -o "$work/r.json"
printf 'not onnx' >"$work/bad.onnx"
expect 2 "not an ONNX file" "$onnx_import" "$work/bad.onnx" -o "$work/r.json"
contains "$work/err" "not a valid ONNX model" "says so"
cp "$src/tests/importers/unsupported.py" "$work/same.py"
expect 2 "output over the input" "$torch_import" "$work/same.py:build" --input 5,8 -o "$work/same.py"
contains "$work/err" "refusing to overwrite the input" "refused"
expect 2 "a batch-moving model" "$torch_import" torchvision:resnet18 --input 3,32,32 --loss model -o "$work/r.json"
contains "$work/err" "--loss model needs a scalar f32 output" "the loss option"

# The batch on any axis: a transpose that moves it imports, and its reshapes and means
# follow it; a sequence-first layer needs the batch on axis 1, which --batch-axis gives.
cat >"$work/moves.py" <<'PY'
import torch.nn as nn
class TimeMajor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.out = nn.Linear(8, 6), nn.Linear(6, 3)
    def forward(self, x):  # [N, T, 8] -> [T, N, 8]: the batch on axis 1
        h = self.fc(x.transpose(0, 1))
        return self.out(h.reshape(h.shape[0], h.shape[1], 2, 3).flatten(2).mean(0))
def build():
    return TimeMajor()
PY
expect 0 "a transpose that moves the batch" "$torch_import" "$work/moves.py:build" --input 5,8 \
    --batch 4 -o "$work/moves.json"
expect 0 "its model validates" "$bin" validate -q "$work/moves.json"
expect 2 "a sequence-first layer without --batch-axis" "$torch_import" \
    "$src/tests/importers/models.py:sequence_first_transformer" --input 16 --input-dtype i32 \
    --vocab 100 --batch 8 -o "$work/s.json"
contains "$work/err" "MultiheadAttention with batch_first=False reads the batch on axis 1, but its input [8, 16, 32] holds the batch on axis 0" \
    "says where the batch must be"
[ ! -e "$work/s.json" ] && ok || bad "a model was written despite the error"

# Outputs: '-' is standard output; files get the umask's mode; --loss mse validates.
expect 0 "model to stdout" "$torch_import" torchvision:resnet18 --input 3,32,32 --batch 2 -o -
mv "$work/out" "$work/stdout.json"
expect 0 "stdout model validates" "$bin" validate -q - <"$work/stdout.json"
(umask 027 && "$torch_import" torchvision:resnet18 --input 3,32,32 --batch 2 --loss mse \
    -o "$work/mse.json" --weights "$work/mse.weights" 2>"$work/err") && ok || bad "mse import"
mode=$(stat -c %a "$work/mse.json")
[ "$mode" = 640 ] && ok || bad "model mode $mode, expected 640 under umask 027"
expect 0 "mse model validates" "$bin" validate -q "$work/mse.json"
expect 0 "its weights train" "$bin" train "$work/mse.json" --weights "$work/mse.weights" \
    --steps 2 --data synthetic

# Convolution settings placer lacks are listed by name, each where it is used.
expect 2 "unsupported convolution settings" "$torch_import" \
    "$src/tests/importers/unsupported_conv.py:build" --input 3,8,8 -o "$work/c.json"
contains "$work/err" "3 unsupported operators (3 uses); nothing was written" "the count"
contains "$work/err" "Conv2d padding_mode=reflect: 1 use: reflect" "reflection padding"
contains "$work/err" "Conv1d padding='same' with an even kernel: 1 use: even" "an even 'same'"
contains "$work/err" "ConvTranspose2d with output padding [2, 2] not below the stride: 1 use: up" \
    "output padding"
[ ! -e "$work/c.json" ] && ok || bad "a model was written despite the error"

# Views that merge the batch with the axes after it and split it back, slices with a step,
# ... and None (zoo.py's MAPPING_MODELS: strides), through both importers, against PyTorch.
if "$py" "$src/tests/importers/check.py" --placer "$bin" strides >"$work/check" 2>&1; then
    ok
else
    bad "check.py: the strides model differs from PyTorch or does not import"
fi
cat "$work/check"

finish importers
