#!/bin/sh
# Weights and placer eval as a user and an importer meet them: tensor files written by
# Python (tools/importers/placer_tensors.py) read by placer and back, the same numbers as a
# NumPy forward pass and gradient, train --weights and --save-weights, run --weights, and
# bad files and options refused with exit status 2 and a message naming what.
. "$(dirname "$0")/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
lstm=$src/graphs/small/lstm_lm-small.json
resnet=$src/graphs/small/resnet-small.json

expect 0 "eval --help" "$bin" eval --help
contains "$work/out" "--gradients FILE" "eval --help"
expect 0 "train --help" "$bin" train --help
contains "$work/out" "--save-weights FILE" "train --help"

# Trained weights saved, read back by eval, train and run.
expect 0 "train --save-weights" "$bin" train "$mlp" --steps 5 --save-weights "$work/mlp.weights" -q
[ -s "$work/mlp.weights" ] && ok || bad "train --save-weights wrote nothing"
expect 0 "eval --weights" "$bin" eval "$mlp" --weights "$work/mlp.weights" --batches 3
contains "$work/out" "3 batches of 4, inference mode" "eval --weights"
contains "$work/out" "accuracy " "eval of a classifier"
expect 0 "train from weights" "$bin" train "$mlp" --steps 2 --weights "$work/mlp.weights" \
    --save-weights "$work/mlp2.weights" -q
expect 0 "run --weights" "$bin" run "$mlp" --weights "$work/mlp.weights" --steps 1 --warmup 0
expect 0 "train --plan from weights" "$bin" train "$mlp" --steps 2 --weights "$work/mlp.weights" \
    --plan "$src/tests/plans/mlp-small-paced-4.json" --cluster "$src/graphs/clusters/paced-4.json" \
    --save-weights "$work/mlp-planned.weights" -q
cmp -s "$work/mlp.weights" "$work/mlp-planned.weights" && bad "train --plan did not change the weights" || ok
# Batch norm's running averages are weights too; eval uses them unless --train-mode.
expect 0 "resnet weights" "$bin" train "$resnet" --steps 2 --data synthetic \
    --save-weights "$work/resnet.weights" -q
expect 0 "resnet eval" "$bin" eval "$resnet" --weights "$work/resnet.weights" --batches 2 --data synthetic
contains "$work/out" "inference mode" "resnet eval"
expect 0 "resnet eval --train-mode" "$bin" eval "$resnet" --weights "$work/resnet.weights" \
    --batches 2 --data synthetic --train-mode
contains "$work/out" "training mode" "resnet eval --train-mode"

# Ctrl-C: the weights are written as the checkpoint is.
interrupted "Ctrl-C" "$bin" train "$lstm" --steps 1000000 --save-weights "$work/stopped.weights" -q
contains "$work/err" "weights written" "Ctrl-C"
expect 0 "weights after Ctrl-C" "$bin" eval "$lstm" --weights "$work/stopped.weights" --batches 1

# Bad input: exit 2, the file and what.
expect 2 "missing weights" "$bin" eval "$mlp" --weights "$work/no-such.weights"
contains "$work/err" "no-such.weights: cannot open" "missing weights"
expect 2 "another model's weights" "$bin" eval "$lstm" --weights "$work/mlp.weights"
contains "$work/err" "is not a parameter or running average of model" "another model's weights"
expect 2 "another model's weights in train" "$bin" train "$lstm" --steps 1 --weights "$work/mlp.weights"
expect 2 "another model's weights in run" "$bin" run "$lstm" --steps 1 --weights "$work/mlp.weights"
expect 2 "a model as weights" "$bin" eval "$mlp" --weights "$mlp"
contains "$work/err" "not a placer tensor file" "a model as weights"
expect 2 "weights and resume" "$bin" train "$mlp" --weights "$work/mlp.weights" --resume x.ckpt
expect 2 "inputs and data" "$bin" eval "$mlp" --inputs "$work/mlp.weights" --data synthetic
expect 2 "weights as inputs" "$bin" eval "$mlp" --inputs "$work/mlp.weights"
contains "$work/err" "tensor \"fc1/w\" is not an input of model" "weights as inputs"
expect 2 "saving over the weights read" "$bin" train "$mlp" --steps 1 --weights "$work/mlp.weights" \
    --save-weights "$work/mlp.weights"

# Huge tensors declared by a file that is mostly a hole: refused from the index, before any
# data are read or room is made for them (8 GiB declared, 400 MB of address space).
sparse_tensors() { # FILE NAME DTYPE SHAPE BYTES: one tensor, its data a hole of zeros
    printf 'placer-tensors\n{"format":"placer-tensors","version":1,"tensors":[{"name":"%s","dtype":"%s","shape":%s,"offset":0,"bytes":%s,"crc32":0}]}\n' \
        "$2" "$3" "$4" "$5" >"$1"
    head=$(wc -c <"$1")
    truncate -s $(((head + 63) / 64 * 64 + $5)) "$1"
}
# AddressSanitizer reserves terabytes of address space, so under it (tools/check sets
# ASAN_OPTIONS) the limit stays off: the messages still show each file refused from its
# header.
small_memory() {
    if [ -n "${ASAN_OPTIONS:-}" ]; then "$@"; else (ulimit -v 400000 && exec "$@"); fi
}
sparse_tensors "$work/x.huge" x f32 '[1073741824,2]' 8589934592
expect 2 "a huge tensor not the model's" small_memory "$bin" eval "$mlp" --weights "$work/x.huge"
contains "$work/err" "x.huge: tensor \"x\" is not a parameter or running average of model" \
    "a huge tensor not the model's"
sparse_tensors "$work/fc1.huge" fc1/w f32 '[1073741824,2]' 8589934592
expect 2 "a huge weight" small_memory "$bin" train "$mlp" --steps 1 --weights "$work/fc1.huge"
contains "$work/err" "tensor \"fc1/w\" has shape [1073741824,2] in the file, [784,32] in the model" \
    "a huge weight"
sparse_tensors "$work/image.huge" image f32 '[2097152,1024]' 8589934592
expect 2 "huge inputs" small_memory "$bin" eval "$mlp" --inputs "$work/image.huge"
contains "$work/err" "tensor \"image\" has shape [2097152,1024]; the model's input is [4,784]" \
    "huge inputs"
sparse_tensors "$work/policy.huge" ops/w f32 '[1073741824,2]' 8589934592
expect 2 "a huge policy" small_memory "$bin" "$mlp" --policy "$work/policy.huge" -o "$work/p"
contains "$work/err" "policy.huge: not a policy file" "a huge policy"

# Python: files written there are read here and back, and the numbers are NumPy's.
python=/usr/bin/python3
if ! [ -x "$python" ] || ! "$python" -c "import numpy" 2>/dev/null; then
    echo "SKIP: the Python tensor-file tests: /usr/bin/python3 with numpy is missing (tools/setup installs python3-numpy)"
    finish weights.sh
    exit $?
fi
py() { PYTHONPATH=$src/tools/importers "$python" "$@"; }

# Weights and two batches of inputs for mlp-small, from a seed.
cat >"$work/make.py" <<'EOF'
import sys
import numpy as np
import placer_tensors as pt
rng = np.random.default_rng(7)
shapes = [("fc1/w", (784, 32)), ("fc1/b", (32,)), ("fc2/w", (32, 16)), ("fc2/b", (16,)),
          ("logits/w", (16, 10)), ("logits/b", (10,))]
pt.write(sys.argv[1], [(n, (rng.standard_normal(s) * 0.2).astype(np.float32)) for n, s in shapes])
pt.write(sys.argv[2], [("image", rng.random((8, 784), dtype=np.float32)),
                       ("label", rng.integers(0, 10, 8).astype(np.int32))])
pt.write(sys.argv[3], [("image", np.zeros((6, 784), np.float32)), ("label", np.zeros(6, np.int32))])
pt.write(sys.argv[4], [("image", np.zeros((8, 784), np.float32)), ("label", np.zeros(8, np.float32))])
EOF
py "$work/make.py" "$work/py.weights" "$work/in.tensors" "$work/in-6.tensors" "$work/in-f32.tensors" && ok ||
    bad "Python cannot write tensor files"
expect 0 "eval of Python's files" "$bin" eval "$mlp" --weights "$work/py.weights" \
    --inputs "$work/in.tensors" --outputs "$work/out.tensors" --gradients "$work/grad.tensors"
contains "$work/out" "2 batches of 4" "eval of Python's files"
cp "$work/out" "$work/eval.out"

# The same forward pass and gradient in NumPy: outputs equal, loss equal, the gradient of
# the first batch's mean loss equal (as PyTorch's would be for the same weights).
cat >"$work/check.py" <<'EOF'
import re, sys
import numpy as np
import placer_tensors as pt
w = dict(pt.read(sys.argv[1]))
x = dict(pt.read(sys.argv[2]))
out = dict(pt.read(sys.argv[3]))
grad = dict(pt.read(sys.argv[4]))
printed = float(re.search(r"loss ([0-9.]+)", open(sys.argv[5]).read()).group(1))
relu = lambda a: np.maximum(a, 0)
def forward(image):
    h1 = relu(image @ w["fc1/w"] + w["fc1/b"])
    h2 = relu(h1 @ w["fc2/w"] + w["fc2/b"])
    return h1, h2, h2 @ w["logits/w"] + w["logits/b"]
_, h2, logits = forward(x["image"].astype(np.float64))
assert list(out) == ["logits/bias"], list(out)
assert out["logits/bias"].shape == (8, 10), out["logits/bias"].shape
assert np.allclose(out["logits/bias"], logits, rtol=1e-4, atol=1e-5), "outputs differ"
p = np.exp(logits - logits.max(1, keepdims=True))
p /= p.sum(1, keepdims=True)
labels = x["label"]
losses = -np.log(p[np.arange(8), labels])
loss = (losses[:4].mean() + losses[4:].mean()) / 2
assert abs(loss - printed) < 1e-4, (loss, printed)
onehot = np.eye(10)[labels[:4]]
dlogits = (p[:4] - onehot) / 4
assert sorted(grad) == sorted(w), sorted(grad)
assert np.allclose(grad["logits/b"], dlogits.sum(0), rtol=1e-4, atol=1e-6), "logits/b"
assert np.allclose(grad["logits/w"], h2[:4].T @ dlogits, rtol=1e-4, atol=1e-6), "logits/w"
EOF
if py "$work/check.py" "$work/py.weights" "$work/in.tensors" "$work/out.tensors" \
    "$work/grad.tensors" "$work/eval.out" 2>"$work/err"; then ok; else
    bad "placer's outputs, loss or gradients differ from NumPy's"; sed 's/^/    /' "$work/err"; fi

# What placer writes, Python reads: trained weights, with their running averages.
cat >"$work/names.py" <<'EOF'
import sys
import placer_tensors as pt
names = [n for n, _ in pt.read(sys.argv[1])]
assert any(n.endswith("/running_mean") for n in names), names
assert any(n.endswith("/running_var") for n in names), names
assert not any(n.endswith("/grad") or n.endswith("/velocity") for n in names), names
EOF
if py "$work/names.py" "$work/resnet.weights" 2>"$work/err"; then ok; else
    bad "Python cannot read placer's weights"; sed 's/^/    /' "$work/err"; fi

# Inputs batched on axis 1 (tokens [T, k*batch]): each batch is its columns, and the outputs
# of two batches at once are those of each alone.
seq=$src/tests/models/seq-first.json
cat >"$work/seq.py" <<'EOF'
import sys
import numpy as np
import placer_tensors as pt
rng = np.random.default_rng(3)
tokens, labels = rng.integers(0, 11, (5, 8)).astype(np.int32), rng.integers(0, 3, 8).astype(np.int32)
pt.write(sys.argv[1], [("tokens", tokens), ("y", labels)])
pt.write(sys.argv[2], [("tokens", tokens[:, :4].copy()), ("y", labels[:4])])
pt.write(sys.argv[3], [("tokens", tokens[:, 4:].copy()), ("y", labels[4:])])
EOF
py "$work/seq.py" "$work/seq.tensors" "$work/seq-a.tensors" "$work/seq-b.tensors" && ok ||
    bad "Python cannot write the sequence-first inputs"
for part in seq seq-a seq-b; do
    expect 0 "eval of inputs batched on axis 1 ($part)" "$bin" eval "$seq" \
        --inputs "$work/$part.tensors" --outputs "$work/$part.out.tensors"
done
cat >"$work/seq-check.py" <<'EOF'
import sys
import numpy as np
import placer_tensors as pt
whole, a, b = (dict(pt.read(p))["logits"] for p in sys.argv[1:4])
assert whole.shape == (8, 3), whole.shape
assert np.array_equal(whole, np.concatenate([a, b])), (whole, a, b)
EOF
if py "$work/seq-check.py" "$work/seq.out.tensors" "$work/seq-a.out.tensors" \
    "$work/seq-b.out.tensors" 2>"$work/err"; then ok; else
    bad "two batches on axis 1 differ from each alone"; sed 's/^/    /' "$work/err"; fi

# Inputs that do not fit the model.
expect 2 "inputs not whole batches" "$bin" eval "$mlp" --inputs "$work/in-6.tensors"
contains "$work/err" "tensor \"image\" has shape [6,784]; the model's input is [4,784], so it must be [k*4,784]" \
    "inputs not whole batches"
expect 2 "labels of the wrong dtype" "$bin" eval "$mlp" --inputs "$work/in-f32.tensors"
contains "$work/err" "tensor \"label\" is f32; the model's input is i32" "labels of the wrong dtype"

# A damaged file: both readers name the tensor.
cp "$work/py.weights" "$work/damaged.weights"
size=$(wc -c <"$work/damaged.weights")
printf 'X' | dd of="$work/damaged.weights" bs=1 seek=$((size - 3)) conv=notrunc 2>/dev/null
expect 2 "damaged weights" "$bin" eval "$mlp" --weights "$work/damaged.weights"
contains "$work/err" "tensor \"logits/b\": the checksum of its data is" "damaged weights"
cat >"$work/damaged.py" <<'EOF'
import sys
import placer_tensors as pt
try:
    pt.read(sys.argv[1])
except pt.TensorFileError as error:
    assert 'tensor "logits/b": the checksum' in str(error), str(error)
else:
    raise SystemExit("no error")
try:
    pt.write(sys.argv[1] + ".twice", [("a", pt.numpy.zeros(2, "f4")), ("a", pt.numpy.zeros(2, "f4"))])
except pt.TensorFileError as error:
    assert '"a" is given twice' in str(error), str(error)
else:
    raise SystemExit("no error")
# encode and decode: the file's bytes, for an importer that writes the file itself
tensors = pt.read(sys.argv[1].replace("damaged", "py"))
data = pt.encode(tensors)
assert data == open(sys.argv[1].replace("damaged", "py"), "rb").read()
assert [n for n, _ in pt.decode(data)] == [n for n, _ in tensors]
EOF
if py "$work/damaged.py" "$work/damaged.weights" 2>"$work/err"; then ok; else
    bad "Python's reader or writer misses a problem"; sed 's/^/    /' "$work/err"; fi

# A frozen parameter (an additive mask, its values given) is never trained.
cat >"$work/masked.json" <<'EOF'
{"format": "placer-model", "version": 1, "name": "masked", "batch_size": 4,
 "inputs": [{"name": "x", "shape": [3], "dtype": "f32", "role": "data"},
            {"name": "y", "shape": [], "dtype": "i32", "role": "label"}],
 "parameters": [
   {"name": "w", "shape": [3, 4], "init": {"kind": "glorot_uniform", "seed": 1}},
   {"name": "mask", "shape": [4], "trainable": false,
    "init": {"kind": "values", "values": [0, 0, -3.5, 0.25]}}],
 "nodes": [
   {"name": "mm", "op": "matmul", "inputs": ["x", "w"], "outputs": ["h"]},
   {"name": "masked", "op": "add", "inputs": ["h", "mask"], "outputs": ["z"]},
   {"name": "xent", "op": "softmax_cross_entropy", "inputs": ["z", "y"], "outputs": ["loss"]}],
 "loss": "loss", "optimizer": {"kind": "adam", "lr": 0.1}}
EOF
expect 0 "train with a frozen parameter" "$bin" train "$work/masked.json" --steps 20 --data synthetic \
    --save-weights "$work/masked.weights" -q
cat >"$work/frozen.py" <<'EOF'
import sys
import numpy as np
import placer_tensors as pt
w = dict(pt.read(sys.argv[1]))
assert w["mask"].tolist() == [0, 0, -3.5, 0.25], w["mask"]
EOF
if py "$work/frozen.py" "$work/masked.weights" 2>"$work/err"; then ok; else
    bad "a frozen parameter changed in training"; sed 's/^/    /' "$work/err"; fi
expect 0 "gradients skip a frozen parameter" "$bin" eval "$work/masked.json" --data synthetic \
    --gradients "$work/masked.grad"
contains "$work/out" "gradients: $work/masked.grad (1 parameter;" "gradients skip a frozen parameter"

finish weights.sh
