#!/bin/sh
# placer train as a user meets it: it trains, checkpoints resume to the same bits, and bad
# data, options and checkpoints get a clear error with exit status 2.
. "$(dirname "$0")/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
lstm=$src/graphs/small/lstm_lm-small.json

expect 0 "train --help" "$bin" train --help
contains "$work/out" "--checkpoint FILE" "train --help"
expect 0 "a few steps" "$bin" train "$mlp" --steps 12 --log-every 4
contains "$work/out" "step 12" "a few steps"
contains "$work/out" "timing: " "a few steps"
contains "$work/out" "Fashion-MNIST" "the data source is named"
# The last step's loss is printed whatever the interval: a run shorter than it, and one
# ending between two lines.
expect 0 "fewer steps than the interval" "$bin" train "$mlp" --steps 20
contains "$work/out" "step 20  epoch 1  loss " "fewer steps than the interval"
expect 0 "steps ending between two lines" "$bin" train "$mlp" --steps 12 --log-every 5
contains "$work/out" "step 10  epoch 1  loss " "steps ending between two lines"
contains "$work/out" "step 12  epoch 1  loss " "steps ending between two lines"
expect 0 "micro-batches and threads" "$bin" train "$lstm" --steps 6 --micro-batches 2 --threads 2 -q
contains "$work/out" "timing: " "micro-batches and threads"

# A run cut in two and resumed ends with the same bytes as one run.
expect 0 "30 steps in one run" "$bin" train "$lstm" --steps 30 --checkpoint "$work/whole.ckpt" -q
expect 0 "the first 12 steps" "$bin" train "$lstm" --steps 12 --checkpoint "$work/half.ckpt" -q
expect 0 "resumed to 30" "$bin" train "$lstm" --steps 30 --resume "$work/half.ckpt" \
    --checkpoint "$work/resumed.ckpt" -q
if cmp -s "$work/whole.ckpt" "$work/resumed.ckpt"; then ok; else bad "resumed run differs from the whole run"; fi
ls -a "$work" | grep -q 'placer-tmp-' && bad "a temporary checkpoint file was left behind" || ok

# A sharded optimizer state trains the same bits as a replicated one: their checkpoints,
# which hold the state made whole again, are the same bytes.
local2=$src/graphs/clusters/local-2.json
expect 0 "a data-parallel plan" "$bin" baseline "$mlp" --algo data-parallel --cluster "$local2" \
    -o "$work/dp.json"
sed 's/"optimizer_state": "replicated"/"optimizer_state": "sharded"/' "$work/dp.json" \
    >"$work/sharded.json"
contains "$work/sharded.json" '"optimizer_state": "sharded"' "the plan's state sharded"
for plan in dp sharded; do
    expect 0 "5 steps, $plan" "$bin" train "$mlp" --cluster "$local2" --plan "$work/$plan.json" \
        --steps 5 --checkpoint "$work/$plan.ckpt"
done
contains "$work/out" "optimizer state sharded" "train names the sharded state"
if cmp -s "$work/dp.ckpt" "$work/sharded.ckpt"; then ok; else bad "sharded state checkpoint differs"; fi

# The batch on axis 1 (a sequence-first model): micro-batches and a data-parallel plan,
# which slice the step along that axis, train what one device does with whole steps.
seq=$src/tests/models/seq-first.json
loss_at_8() { grep "^step 8 " "$work/out" | sed 's/  \(accuracy\|[0-9.]* samples\).*//'; }
expect 0 "batch on axis 1: whole steps" "$bin" train "$seq" --steps 8 --log-every 8
loss_at_8 >"$work/seq-whole"
expect 0 "batch on axis 1: micro-batches" "$bin" train "$seq" --steps 8 --log-every 8 \
    --micro-batches 4
loss_at_8 >"$work/seq-micro"
expect 0 "batch on axis 1: a data-parallel plan" "$bin" baseline "$seq" --algo data-parallel \
    --cluster "$local2" -o "$work/seq-dp.json"
expect 0 "batch on axis 1: replicas" "$bin" train "$seq" --cluster "$local2" \
    --plan "$work/seq-dp.json" --steps 8 --log-every 8
loss_at_8 >"$work/seq-dp"
contains "$work/seq-whole" "step 8  epoch 1  loss " "batch on axis 1: the loss is printed"
if cmp -s "$work/seq-whole" "$work/seq-micro" && cmp -s "$work/seq-whole" "$work/seq-dp"; then
    ok; else bad "batch on axis 1: losses differ: $(cat "$work/seq-whole" "$work/seq-micro" \
    "$work/seq-dp")"; fi

# Ctrl-C: the step in flight finishes, the checkpoint is written, exit status 130, and the
# checkpoint resumes.
interrupted "Ctrl-C" "$bin" train "$lstm" --steps 1000000 --checkpoint "$work/stopped.ckpt" -q
contains "$work/err" "interrupted at step" "Ctrl-C"
expect 0 "resume after Ctrl-C" "$bin" train "$lstm" --steps 1 --resume "$work/stopped.ckpt" -q

# Bad input: exit 2, a message that says what.
expect 2 "steps and epochs" "$bin" train "$mlp" --steps 3 --epochs 1
expect 2 "zero steps" "$bin" train "$mlp" --steps 0
contains "$work/err" "invalid value '0' for --steps" "zero steps"
expect 2 "--steps=-1" "$bin" train "$mlp" --steps=-1
contains "$work/err" "invalid value '-1' for --steps" "--steps=-1 names the option"
expect 2 "a batch beyond an int" "$bin" train "$mlp" --batch 4294967297 --steps 1
contains "$work/err" "for --batch (1 to 2147483647" "a batch beyond an int"
expect 2 "a batch beyond the element limit" "$bin" train "$mlp" --batch 2147483647 --steps 1
contains "$work/err" "more than the limit of 2147483648 elements" "a batch beyond the element limit"
expect 2 "unknown option" "$bin" train "$mlp" --frobnicate
expect 2 "micro-batches that do not divide" "$bin" train "$mlp" --steps 1 --micro-batches 3
contains "$work/err" "do not divide the batch" "micro-batches that do not divide"
expect 2 "missing data directory" "$bin" train "$mlp" --steps 1 --data "$work/no-such-dir/"
contains "$work/err" "no-such-dir" "missing data directory"
# Data must be regular files: a device or a FIFO is refused at once, never read until
# memory runs out or waited on (timeout: a FIFO that blocks fails the test, not the run).
expect 2 "data from /dev/zero" timeout 20 "$bin" train "$lstm" --steps 1 --data /dev/zero
contains "$work/err" "/dev/zero: is not a regular file" "data from /dev/zero"
mkfifo "$work/fifo.txt"
expect 2 "data from a FIFO" timeout 20 "$bin" train "$lstm" --steps 1 --data "$work/fifo.txt"
contains "$work/err" "is not a regular file" "data from a FIFO"
mkdir "$work/mnist-fifo"
mkfifo "$work/mnist-fifo/train-images-idx3-ubyte.gz"
expect 2 "a FIFO in a Fashion-MNIST directory" timeout 20 "$bin" train "$mlp" --steps 1 \
    --data "$work/mnist-fifo"
contains "$work/err" "train-images-idx3-ubyte.gz: is not a regular file" "a FIFO in a Fashion-MNIST directory"
printf 'tiny' >"$work/short.txt"
expect 2 "text too short" "$bin" train "$lstm" --steps 1 --data "$work/short.txt"
contains "$work/err" "short.txt" "text too short"
expect 2 "resume from another model's checkpoint" "$bin" train "$mlp" --steps 1 --resume "$work/whole.ckpt"
contains "$work/err" "whole.ckpt: made for another model" "resume from another model's checkpoint"
once "$work/err" "whole.ckpt" "another model's checkpoint: the path"
# The model's identity is its content: re-indented, keys reordered, renamed and
# redescribed, the model still resumes the checkpoint; with another optimiser setting in
# the file it does not (train --lr is how a resumed run changes the rate).
/usr/bin/python3 - "$lstm" "$work/restyled.json" "$work/wider.json" <<'PY'
import json, sys
model = json.load(open(sys.argv[1]))
model["name"], model["description"] = "restyled", "the same model, written differently"
json.dump(dict(reversed(list(model.items()))), open(sys.argv[2], "w"), indent=1)
model["optimizer"]["momentum"] = 0.5
json.dump(model, open(sys.argv[3], "w"))
PY
expect 0 "resume with the model restyled" "$bin" train "$work/restyled.json" --steps 31 \
    --resume "$work/whole.ckpt" -q
expect 2 "resume with the model changed" "$bin" train "$work/wider.json" --steps 31 \
    --resume "$work/whole.ckpt" -q
contains "$work/err" "made for another model" "resume with the model changed"
head -c 100 "$work/whole.ckpt" >"$work/cut.ckpt"
expect 2 "a truncated checkpoint" "$bin" train "$lstm" --steps 31 --resume "$work/cut.ckpt"
contains "$work/err" "cut.ckpt: truncated" "a truncated checkpoint"
once "$work/err" "cut.ckpt" "a truncated checkpoint: the path"
expect 2 "a missing checkpoint" "$bin" train "$lstm" --steps 1 --resume "$work/none.ckpt"
contains "$work/err" "none.ckpt: cannot open" "a missing checkpoint"
once "$work/err" "none.ckpt" "a missing checkpoint: the path"
# A checkpoint is read only from a regular file: a FIFO would block, /dev/zero never ends.
mkfifo "$work/fifo.ckpt"
for special in "$work/fifo.ckpt" /dev/zero "$work"; do
    expect 2 "--resume $special" "$bin" train "$lstm" --steps 1 --resume "$special"
    expect 2 "main job --resume $special" "$bin" "$mlp" --resume "$special" -o "$work/special"
done
contains "$work/err" "$work: is a directory, not a file" "main job --resume a folder"
# A position past the end of the data's epoch (0xffffffffffff samples: within the format's
# range, beyond any data set), at byte 36 of the header.
cp "$work/whole.ckpt" "$work/far.ckpt"
printf '\377\377\377\377\377\377\000\000' | dd of="$work/far.ckpt" bs=1 seek=36 conv=notrunc 2>/dev/null
expect 2 "a position past the epoch" "$bin" train "$lstm" --steps 31 --resume "$work/far.ckpt"
contains "$work/err" "far.ckpt: the position is 281474976710655: an epoch of the training data has" "a position past the epoch"

finish train
