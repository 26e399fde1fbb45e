#!/bin/sh
# Op times from a PyTorch profiler trace: a trace of training steps made here on the CPU
# (tools/profile-torch), imported (tools/import-trace) against the model tools/import-torch
# makes, moves the simulated step of a one-device plan by what the trace says; an op's
# time doubled raises it by that time; a Kineto trace's backward found by sequence
# numbers; bad files refused with where and what.
. "${top_srcdir:-.}/tests/shell_lib.sh"

need_importers trace
own_profile mlp
model=$src/tests/importers/models.py:transformer_classifier
shape="--input 16 --input-dtype i32 --vocab 100 --batch 8"

# shellcheck disable=SC2086
expect 0 "profile-torch" "$src/tools/profile-torch" "$model" $shape --steps 2 --warmup 1 \
    -o "$work/trace.json"
contains "$work/err" "2 steps of" "profile-torch"
# shellcheck disable=SC2086
expect 0 "import-torch" "$torch_import" "$model" $shape -o "$work/model.json"
expect 0 "import-trace" "$src/tools/import-trace" "$work/model.json" "$work/trace.json" \
    --device "this CPU" -o "$work/times.json"
contains "$work/err" "65 of 65 ops of transformer_classifier matched (2 steps; backward: backward ranges)" "import-trace"

# The step in ms, and the op times' forward + backward total, from placer simulate.
step() { sed -n 's/^predicted step: \([0-9.]*\) ms.*/\1/p' "$work/out"; }
total() { sed -n 's/^op times: .*(\([0-9.]*\) ms forward), .* (\([0-9.]*\) ms); .*/\1 \2/p' "$work/out"; }
near() { # WHAT GOT WANT TOLERANCE_MS
    if awk -v g="$2" -v w="$3" -v t="$4" 'BEGIN { d = g - w; exit !(d <= t && -d <= t) }'; then
        ok
    else
        bad "$1: $2 ms, expected $3 ms within $4 ms"
    fi
}

expect 0 "simulate, the profile's times" "$bin" simulate "$work/model.json"
plain=$(step)
expect 0 "simulate, the trace's times" "$bin" simulate "$work/model.json" --op-times "$work/times.json"
contains "$work/out" "op times: $work/times.json, measured on this CPU: 65 of 65 ops" "simulate, the trace's times"
traced=$(step)
sum=$(total | awk '{ print $1 + $2 }')
# Every op timed by the trace: the step holds all of the trace's time, and, the plan being
# one device running its tasks in turn, the updates and hand-offs the profile's, which the
# step without the trace holds too: the step is the trace's total plus at most that.
awk -v s="$traced" -v t="$sum" -v p="$plain" 'BEGIN { exit !(s >= t && s <= t + p) }' && ok ||
    bad "simulate: step $traced ms, expected the trace's $sum ms plus at most $plain ms"

# Every time doubled: the step moves by the trace's total (rounding: 3 decimals of ms).
/usr/bin/python3 - "$work/times.json" "$work/double.json" "$work/one.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["times"]:
    for k in ("forward", "backward"):
        if k in e:
            e[k] *= 2
json.dump(t, open(sys.argv[2], "w"))
t = json.load(open(sys.argv[1]))
one = max((e for e in t["times"] if len(e["ops"]) == 1), key=lambda e: e["forward"])
one["forward"] *= 2
json.dump(t, open(sys.argv[3], "w"))
PY
expect 0 "simulate, every time doubled" "$bin" simulate "$work/model.json" --op-times "$work/double.json"
near "simulate, every time doubled" "$(step)" "$(awk -v s="$traced" -v t="$sum" 'BEGIN { print s + t }')" 0.01
one=$(/usr/bin/python3 -c "
import json; t = json.load(open('$work/times.json'))
print('%.6f' % (1e3 * max(e['forward'] for e in t['times'] if len(e['ops']) == 1)))")
expect 0 "simulate, one op's time doubled" "$bin" simulate "$work/model.json" --op-times "$work/one.json"
near "simulate, one op's time doubled" "$(step)" "$(awk -v s="$traced" -v o="$one" 'BEGIN { print s + o }')" 0.002

# A Kineto trace without backward ranges: the autograd node of sequence number 7 belongs
# to the module whose forward range holds the forward op of that number.
first=$(/usr/bin/python3 -c "import json; print(json.load(open('$work/model.json'))['nodes'][0]['name'])")
cat >"$work/kineto.json" <<JSON
{"traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "forward: ", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
 {"ph": "X", "cat": "user_annotation", "name": "forward: $first", "ts": 10, "dur": 30, "pid": 1, "tid": 1},
 {"ph": "X", "cat": "cpu_op", "name": "aten::embedding", "ts": 12, "dur": 20, "pid": 1, "tid": 1, "args": {"Sequence number": 7, "Fwd thread id": 0}},
 {"ph": "X", "cat": "cpu_op", "name": "EmbeddingBackward0", "ts": 200, "dur": 60, "pid": 1, "tid": 2, "args": {"Sequence number": 7, "Fwd thread id": 0}},
 {"ph": "X", "cat": "cpu_op", "name": "Optimizer.step#SGD.step", "ts": 300, "dur": 9, "pid": 1, "tid": 1, "args": {"Sequence number": -1, "Fwd thread id": 0}}
], "deviceProperties": [{"name": "A test GPU"}]}
JSON
expect 0 "import-trace: Kineto" "$src/tools/import-trace" "$work/model.json" "$work/kineto.json" -o "$work/k.json"
contains "$work/err" "backward: autograd sequence numbers" "import-trace: Kineto"
contains "$work/k.json" "\"device\": \"A test GPU\"" "import-trace: Kineto"
contains "$work/k.json" "{\"module\": \"$first\", \"ops\": [\"$first\"], \"forward\": 3e-05, \"backward\": 6e-05}" "import-trace: Kineto"

# Bad input.
echo '[{"ph": "X", "name": "aten::mm", "ts": 0, "dur": 5}]' >"$work/bare.json"
expect 2 "import-trace: no module ranges" "$src/tools/import-trace" "$work/model.json" "$work/bare.json" -o "$work/x.json"
contains "$work/err" "no ranges named \"forward: MODULE\"" "import-trace: no module ranges"
expect 2 "import-trace: not JSON" "$src/tools/import-trace" "$work/model.json" "$work/model.json.nope" -o "$work/x.json"
expect 2 "import-trace: the output is the trace" "$src/tools/import-trace" "$work/model.json" "$work/trace.json" -o "$work/trace.json"
sed 's/"ops": \["embed"\]/"ops": ["embed", "no.such.op"]/' "$work/times.json" >"$work/bad.json"
expect 2 "simulate: an op the model lacks" "$bin" simulate "$work/model.json" --op-times "$work/bad.json"
contains "$work/err" "$work/bad.json: /times/0/ops/1: 1 name of this entry is no op of model \"transformer_classifier\": \"no.such.op\"" "simulate: an op the model lacks"
sed 's/"batch": 8/"batch": 16/' "$work/times.json" >"$work/bad.json"
expect 2 "simulate: another batch" "$bin" simulate "$work/model.json" --op-times "$work/bad.json"
contains "$work/err" "/batch: the times are of a batch of 16 samples" "simulate: another batch"
expect 2 "simulate: op times missing" "$bin" simulate "$work/model.json" --op-times "$work/none.json"
expect 2 "simulate: the timeline is the op times" "$bin" simulate "$work/model.json" --op-times "$work/times.json" --timeline "$work/times.json"

finish trace
