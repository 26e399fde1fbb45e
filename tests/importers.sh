#!/bin/sh
# The importers (tools/import-torch, tools/import-onnx): every real model of
# tools/importers/zoo.py through both, checked against PyTorch by tests/importers/check.py
# (outputs and first-step gradients within 1e-4); then the command lines' errors. Skipped
# (exit 77) with a message when python3-torch, python3-torchvision or python3-onnx is
# missing (tools/setup installs them). IMPORTER_MODELS names the models to check, "all"
# (or unset) for every one; `make check` names four (Makefile.am), tools/check all.
. "${top_srcdir:-.}/tests/shell_lib.sh"

need_importers importers

models=${IMPORTER_MODELS:-all}
[ "$models" = all ] && models=
# shellcheck disable=SC2086
if "$py" "$src/tests/importers/check.py" --placer "$bin" $models >"$work/check" 2>&1; then
    ok
else
    bad "check.py: a model differs from PyTorch or does not import"
fi
cat "$work/check"

# One error lists every unsupported operator with its uses; nothing is written.
expect 2 "unsupported operators" "$torch_import" "$src/tests/importers/unsupported.py:build" \
    --input 5,8 -o "$work/u.json"
contains "$work/err" "2 unsupported operators (3 uses); nothing was written" "the count"
contains "$work/err" "RNN (torch.nn module): 2 uses: rnn, rnn2" "the RNNs and where"
contains "$work/err" "torch.roll: 1 use" "the roll"
[ ! -e "$work/u.json" ] && ok || bad "a model was written despite the error"

# The same through ONNX: its RNNs are listed (torch.roll exports as slices, which map).
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

# Recurrent layers in the settings the zoo leaves out match PyTorch; those placer refuses
# are listed in one error, and nothing is written.
if "$py" "$src/tests/importers/recurrent.py" --placer "$bin" >"$work/recurrent" 2>&1; then
    ok
else
    bad "recurrent.py: a recurrent variant differs from PyTorch or does not import"
fi
cat "$work/recurrent"
expect 2 "refused recurrent settings" "$torch_import" "$src/tests/importers/recurrent.py:refused" \
    --input 5,8 --input 1,8 --batch 1 -o "$work/rr.json"
contains "$work/err" "4 unsupported operators (4 uses); nothing was written" "all four"
contains "$work/err" "LSTM with batch_first=False (time-major: it moves the batch axis" "time-major"
contains "$work/err" "LSTM with proj_size: 1 use: projected" "the projection"
contains "$work/err" "GRU's h_n used whole (its [layers, N, H] holds the batch on axis 1" \
    "stacked states"
contains "$work/err" "GRU with an initial state computed from the input" "the initial state"
[ ! -e "$work/rr.json" ] && ok || bad "a model was written despite the error"

# Usage errors exit 2 and say what.
expect 2 "no --input" "$torch_import" torchvision:resnet18 -o "$work/r.json"
expect 2 "unknown torchvision model" "$torch_import" torchvision:resnet19 --input 3,32,32 -o "$work/r.json"
contains "$work/err" "torchvision has no model 'resnet19'" "names the model"
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

finish importers
