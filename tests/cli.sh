#!/bin/sh
# The command line as a user meets it: exit statuses, messages, outputs written whole.
# Run by `make check` (top_srcdir and top_builddir set) or by hand from the top.
. "$(dirname "$0")/shell_lib.sh"

expect 0 "--help" "$bin" --help
contains "$work/out" "Usage: placer" "--help"
expect 0 "--version" "$bin" --version
contains "$work/out" "placer " "--version"
contains "$work/out" "kernels: OpenBLAS, " "--version names the OpenBLAS core"
# A core the user names stands (Prescott: in every x86-64 build of a DYNAMIC_ARCH OpenBLAS).
if [ "$(uname -m)" = x86_64 ]; then
    expect 0 "--version with a core named" env OPENBLAS_CORETYPE=Prescott "$bin" --version
    contains "$work/out" "kernels: OpenBLAS, Prescott core" "the core the user named"
fi
expect 2 "no arguments" "$bin"
contains "$work/err" "Try 'placer --help'" "no arguments"
expect 2 "unknown option" "$bin" --frobnicate "$src/graphs/mlp.json"
contains "$work/err" "unknown option" "unknown option"
expect 2 "validate without a model" "$bin" validate
expect 2 "validate with an unknown option" "$bin" validate --bogus "$src/graphs/mlp.json"
expect 2 "dot with a missing -o argument" "$bin" dot "$src/graphs/mlp.json" -o
expect 2 "a missing model file" "$bin" "$work/nothing.json"
contains "$work/err" "nothing.json: cannot open: No such file or directory" "missing model"
# A mistyped command is named as one, with the nearest command; a word that could be a
# model (a .json name, or a path) is still a missing model.
expect 2 "a mistyped command" "$bin" simualte
contains "$work/err" "unknown command 'simualte' (did you mean simulate?)" "a mistyped command"
expect 2 "an unknown word" "$bin" frobnicate
contains "$work/err" "unknown command 'frobnicate'" "an unknown word"
# Every command is suggested for a typo of it; a command's usage error points at its help.
for typo in validate:valdiate dot:dto train:trian run:rnu simulate:simualte \
        baseline:baselien calibrate:calbirate cluster:clsuter; do
    expect 2 "a typo of ${typo%%:*}" "$bin" "${typo#*:}"
    contains "$work/err" "(did you mean ${typo%%:*}?)" "a typo of ${typo%%:*}"
    expect 2 "${typo%%:*} --bogus" "$bin" "${typo%%:*}" --bogus
    contains "$work/err" "Try 'placer ${typo%%:*} --help'." "${typo%%:*} --bogus"
done
# Every long option a command parses (--help aside) is in its --help, read from its
# option table.
for c in main validate dot train run simulate baseline calibrate cluster; do
    if [ "$c" = main ]; then "$bin" x.json --help; else "$bin" "$c" --help; fi >"$work/help" 2>&1
    for option in $(grep -o '{"[a-z-]*", \(no\|required\)_argument' "$src/src/cli/cmd_$c.c" | cut -d'"' -f2 | grep -v "^help$"); do
        contains "$work/help" "--$option" "placer $c --help lists --$option"
    done
done
# The help texts name the installed documents, and train's does not say it trains on one
# device only.
"$bin" --help | grep -q "/share/doc/" && ok || bad "placer --help: no installed docs path"
"$bin" train --help | grep -q "on one device" && bad "train --help says 'on one device'" || ok
expect 2 "the main job's usage error" "$bin" "$src/graphs/mlp.json" --budget x
contains "$work/err" "Try 'placer --help'." "the main job's usage error"
expect 2 "a missing model named like a command" "$bin" simualte.json
contains "$work/err" "simualte.json: cannot open" "a missing model named like a command"
# Every bad input path is bad input (exit 2), however it is bad; a device or a FIFO is no
# model and is never read or waited on.
expect 2 "a path through a file" "$bin" validate "$src/graphs/mlp.json/model.json"
long=$(printf '%0300d' 0)
expect 2 "a path too long" "$bin" validate "$work/$long/$long.json"
contains "$work/err" "File name too long" "a path too long"
expect 2 "a model from /dev/zero" timeout 20 "$bin" validate /dev/zero
contains "$work/err" "/dev/zero: is not a regular file" "a model from /dev/zero"
# A hostile path reaches the terminal escaped: no raw ESC or BEL, in errors and usage alike.
hostile=$(printf 'a\033[2J\007b.json')
no_raw_controls() { tr -d '\033\007' <"$work/err" | cmp -s - "$work/err" && ok || bad "$1: raw ESC or BEL"; }
expect 2 "a path with control characters" "$bin" validate "$work/$hostile"
contains "$work/err" 'a\x1b[2J\x07b.json: cannot open' "a path with control characters"
no_raw_controls "a path with control characters"
expect 2 "an option with control characters" "$bin" validate "--$hostile"
contains "$work/err" "unknown option '--a\\x1b" "an option with control characters"
no_raw_controls "an option with control characters"
mkfifo "$work/fifo.json"
expect 2 "a model from a FIFO" timeout 20 "$bin" validate "$work/fifo.json"
contains "$work/err" "is not a regular file" "a model from a FIFO"

paced4=$src/graphs/clusters/paced-4.json
# Output that cannot be written is a failure, not a success with the output lost.
if [ -w /dev/full ]; then
    expect 1 "validate to /dev/full" sh -c '"$0" validate "$1" >/dev/full' "$bin" "$src/graphs/mlp.json"
    contains "$work/err" "cannot write standard output" "validate to /dev/full"
    expect 1 "cluster to /dev/full" sh -c '"$0" cluster "$1" >/dev/full' "$bin" "$paced4"
    contains "$work/err" "cannot write standard output" "cluster to /dev/full"
fi

# Every bad-input case of a model, cluster, plan or whole weights file: exit 2 and exactly
# its expected line on stderr. (Checkpoints, profiles and damaged weights are read by
# tests/unit: their pristine files are made there; train.sh, agent.sh and weights.sh check
# how the commands report them.)
cases=0
for dir in "$src"/tests/invalid/*/; do
    name=$(basename "$dir")
    if [ -e "$dir/profile.json" ] || ls "$dir" | grep -q '\.\(ckpt\|edit\)$'; then
        continue
    elif [ -e "$dir/plan.json" ]; then
        ( cd "$dir" && "$bin" validate -q "$src/graphs/small/mlp-small.json" \
            --cluster "$src/graphs/clusters/paced-4.json" --plan plan.json ) >"$work/out" 2>"$work/err"
    elif [ -e "$dir/weights.bin" ]; then
        ( cd "$dir" && "$bin" eval "$src/graphs/small/mlp-small.json" --weights weights.bin \
            --data synthetic --batches 1 ) >"$work/out" 2>"$work/err"
    elif [ -e "$dir/cluster.json" ]; then
        ( cd "$dir" && "$bin" cluster cluster.json ) >"$work/out" 2>"$work/err"
    else
        ( cd "$dir" && "$bin" validate model.json ) >"$work/out" 2>"$work/err"
    fi
    status=$?
    [ "$(cat "$work/err")" = "$(cat "$dir/expected")" ] && [ "$status" -eq 2 ] && [ ! -s "$work/out" ] \
        && ok || { bad "invalid/$name: exit $status, stderr: $(cat "$work/err")"; }
    cases=$((cases + 1))
done
[ "$cases" -ge 40 ] && ok || bad "only $cases bad-input cases"

# Every bundled model validates, and its drawing renders with plain dot.
for model in "$src"/graphs/*.json "$src"/graphs/small/*.json; do
    [ -e "$model" ] || continue
    name=$(basename "$model" .json)
    expect 0 "validate $name" "$bin" validate "$model"
    contains "$work/out" "valid model" "validate $name"
    expect 0 "dot $name" "$bin" dot "$model" -o "$work/$name.dot"
    if command -v dot >/dev/null 2>&1; then
        expect 0 "render $name" dot -Tsvg "$work/$name.dot" -o "$work/$name.svg"
    fi
done

# Every bundled cluster reads, and so does the local machine.
for cluster in "$src"/graphs/clusters/*.json; do
    expect 0 "cluster $(basename "$cluster")" "$bin" cluster "$cluster"
    contains "$work/out" "devices" "cluster $(basename "$cluster")"
done
expect 0 "a plan" "$bin" validate "$src/graphs/small/mlp-small.json" \
    --cluster "$src/graphs/clusters/paced-4.json" --plan "$src/tests/plans/mlp-small-paced-4.json"
contains "$work/out" "valid plan for \"mlp-small\" on cluster \"paced-4\": 3 stages" "a plan"
expect 2 "--cluster without --plan" "$bin" validate "$src/graphs/small/mlp-small.json" \
    --cluster "$src/graphs/clusters/paced-4.json"
expect 0 "the local machine" "$bin" cluster
contains "$work/out" "local machine: cluster \"local\"" "the local machine"

# A plan's drawing: a cluster per device, the bytes on cross-device edges, and it renders.
# With no profile cached it draws without times and calibrates nothing.
small="$src/graphs/small/mlp-small.json" paced="$src/graphs/clusters/paced-4.json"
PLACER_PROFILE="$work/no-profile.json" expect 0 "dot --plan" "$bin" dot "$small" \
    --plan "$src/tests/plans/mlp-small-paced-4.json" --cluster "$paced" -o "$work/plan.dot"
[ ! -e "$work/no-profile.json" ] && ok || bad "dot --plan calibrated"
for device in dev0 dev1 dev2; do
    contains "$work/plan.dot" "subgraph \"cluster_device:$device\"" "dot --plan"
done
grep -q 'cluster_device:dev3' "$work/plan.dot" && bad "dot --plan: a cluster for idle dev3" || ok
contains "$work/plan.dot" "label=\"1.0 KiB\"" "dot --plan bytes"
contains "$work/plan.dot" "1.5 KiB per step in 8 copies" "dot --plan total"
grep -q ' ms\| µs' "$work/plan.dot" && bad "dot --plan: times without a profile" || ok
expect 0 "dot --plan --all-ops" "$bin" dot "$small" --all-ops \
    --plan "$src/tests/plans/mlp-small-paced-4.json" --cluster "$paced" -o "$work/all.dot"
[ "$(grep -c '"op:[^"]*"[[:space:]]*\[' "$work/all.dot")" -gt \
  "$(grep -c '"op:[^"]*"[[:space:]]*\[' "$work/plan.dot")" ] && ok || bad "--all-ops draws no more ops"
if command -v dot >/dev/null 2>&1; then
    expect 0 "render a plan" dot -Tsvg "$work/plan.dot" -o "$work/plan.svg"
    expect 0 "render a plan, every op" dot -Tsvg "$work/all.dot" -o "$work/all.svg"
fi
expect 2 "dot with another model's plan" "$bin" dot "$small" --cluster "$paced" \
    --plan "$src/tests/plans/transformer-small-paced-4.json" -o "$work/bad.dot"
contains "$work/err" 'the model has no op "embed"' "dot with another model's plan"
[ "$(wc -l <"$work/err")" -eq 1 ] && [ ! -e "$work/bad.dot" ] && ok || bad "bad plan: not one line, or a file"
expect 2 "dot --all-ops without a plan" "$bin" dot "$small" --all-ops

# A plan that splits ops: validate describes the step it runs (the rewritten graph's
# partitions, the splits, the collectives' ops), dot draws a box per shard on its device and
# the collectives' copies red, and run says what it splits.
split="$src/tests/plans/mlp-small-split-paced-4.json"
expect 0 "validate a split plan" "$bin" validate "$small" --cluster "$paced" --plan "$split"
contains "$work/out" ": 6 ops split over 2 devices (tensor parallel), 1 stage, 2 micro-batches" \
    "validate a split plan"
contains "$work/out" "split over dev0, dev1: fc1/matmul, fc1/bias, fc1/relu, fc2/matmul, fc2/bias, fc2/relu" \
    "validate a split plan"
grep -Eq '^  collectives: [1-9][0-9]* ops inserted in the forward pass \(' "$work/out" && ok ||
    bad "validate a split plan: no collectives' ops counted"
for device in dev0 dev1; do # each holds shards, and receives from the other
    grep -Eq "^  $device +[1-9][0-9]* ops  receives +[1-9]" "$work/out" && ok ||
        bad "validate a split plan: $device neither runs shards nor receives"
done
# An op whose kind does not split runs whole on its first device, and validate says so.
cat >"$work/whole.json" <<'EOF'
{"format": "placer-plan", "version": 3, "cluster": "paced-4", "placement": [
 {"op": "fc1/matmul", "device": "dev0"}, {"op": "fc1/bias", "device": "dev0"},
 {"op": "fc1/relu", "device": "dev0"}, {"op": "fc2/matmul", "device": "dev0"},
 {"op": "fc2/bias", "device": "dev0"}, {"op": "fc2/relu", "device": "dev0"},
 {"op": "logits/matmul", "device": "dev0"}, {"op": "logits/bias", "device": "dev0"},
 {"op": "loss", "split": ["dev0", "dev1"]}]}
EOF
expect 0 "validate a split that runs whole" "$bin" validate "$small" --cluster "$paced" \
    --plan "$work/whole.json"
contains "$work/out" "runs whole on its first device (its kind or sizes do not split): loss" \
    "validate a split that runs whole"
# The head and its loss split by classes: the loss from the shards' log-sum-exps.
sed -e 's/"logits\/matmul", "device": "dev0"/"logits\/matmul", "split": ["dev0", "dev1"]/' \
    -e 's/"logits\/bias", "device": "dev0"/"logits\/bias", "split": ["dev0", "dev1"]/' \
    "$work/whole.json" >"$work/vocab.json"
expect 0 "validate a loss split by classes" "$bin" validate "$small" --cluster "$paced" \
    --plan "$work/vocab.json"
contains "$work/out" 'loss "loss" by vocabulary shards' "validate a loss split by classes"
grep -q "runs whole" "$work/out" && bad "validate a loss split by classes: something whole" || ok
PLACER_PROFILE="$work/no-profile.json" expect 0 "dot a split plan" "$bin" dot "$small" \
    --plan "$split" --cluster "$paced" -o "$work/split.dot"
for shard in dev0:fc1/matmul/tp0 dev1:fc1/matmul/tp1 dev0:fc2/relu/tp0 dev1:fc2/relu/tp1; do
    sed -n "/subgraph \"cluster_device:${shard%%:*}\"/,/^\t}/p" "$work/split.dot" |
        grep -qF "\"op:${shard#*:}\"" && ok || bad "dot a split plan: no ${shard#*:} on ${shard%%:*}"
done
contains "$work/split.dot" "(collective)" "dot a split plan"
contains "$work/split.dot" "color=firebrick" "dot a split plan"
if command -v dot >/dev/null 2>&1; then
    expect 0 "render a split plan" dot -Tsvg "$work/split.dot" -o "$work/split.svg"
fi
expect 0 "run a split plan" "$bin" run "$small" --cluster "$paced" --plan "$split" --steps 1 \
    --warmup 0
contains "$work/out" "plan: 3 devices, 6 ops split over 2 devices (tensor parallel), 1 stage" \
    "run a split plan"

# A large model (428 ops named by dotted module paths): ops grouped into module boxes,
# which render; --max-boxes 0 draws op by op (docs/plan-format.md, "Large models").
dense="$src/tests/models/densenet-like.json"
expect 0 "dot, a large model" "$bin" dot "$dense" -o "$work/dense.dot"
contains "$work/dense.dot" 'subgraph "cluster_module:features.denseblock2" {' "dot, a large model"
contains "$work/dense.dot" '"module:features.denseblock2.denselayer12"' "dot, a large model"
contains "$work/dense.dot" '428 ops in 84 boxes' "dot, a large model"
if command -v dot >/dev/null 2>&1; then
    expect 0 "render a large model" dot -Tsvg "$work/dense.dot" -o "$work/dense.svg"
fi
expect 0 "dot --max-boxes 0" "$bin" dot "$dense" --max-boxes 0 -o "$work/dense-ops.dot"
grep -q 'module:' "$work/dense-ops.dot" && bad "dot --max-boxes 0: module boxes" || ok
[ "$(grep -v -- '->' "$work/dense-ops.dot" | grep -c '^[[:space:]]*"op:[^"]*"[[:space:]]*\[')" -eq 428 ] && ok ||
    bad "dot --max-boxes 0: not 428 op boxes"
expect 2 "dot --max-boxes -1" "$bin" dot "$dense" --max-boxes -1
contains "$work/err" "invalid value '-1' for --max-boxes" "dot --max-boxes -1"

# The main job (tests/agent.sh has the search): summary on stdout, the drawing written
# whole, named after the model. A profile of our own, on one small model.
PLACER_PROFILE=$work/cache/profile.json PLACER_GRAPHS=$work/graphs
export PLACER_PROFILE PLACER_GRAPHS
mkdir -p "$work/graphs/small" && cp "$src/graphs/small/mlp-small.json" "$work/graphs/small/"
( cd "$work" && "$bin" "$src/graphs/mlp.json" --iterations 1 --samples 4 ) >"$work/out" 2>"$work/err" \
    && ok || bad "main job on mlp.json: $(cat "$work/err")"
[ -s "$work/mlp.graph.dot" ] && ok || bad "main job did not write mlp.graph.dot"
contains "$work/out" "wrote mlp.graph.dot" "main job"
expect 0 "main job with -o" "$bin" -o "$work/custom" "$src/graphs/mlp.json" --iterations 1 --samples 4
[ -s "$work/custom.graph.dot" ] && ok || bad "-o PREFIX did not write custom.graph.dot"
ls -a "$work" | grep -q 'placer-tmp-' && bad "a temporary file was left behind" || ok

# A failed write leaves nothing behind and says why.
expect 2 "dot into a missing directory" "$bin" dot "$src/graphs/mlp.json" -o "$work/no/such/dir/x.dot"
contains "$work/err" "No such file or directory" "dot into a missing directory"

# The output rules (docs/outputs.md). Devices and FIFOs are written, not replaced.
mlp="$src/graphs/mlp.json"
expect 0 "dot -o /dev/null" "$bin" dot "$mlp" -o /dev/null
[ -c /dev/null ] && ok || bad "-o /dev/null replaced the device"
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/from-fifo" &
expect 0 "dot into a FIFO" "$bin" dot "$mlp" -o "$work/fifo"
wait
[ -p "$work/fifo" ] && grep -q '^digraph' "$work/from-fifo" && ok || bad "a FIFO output replaced or not read"
if mknod "$work/null" c 1 3 2>/dev/null; then
    expect 0 "dot into a device node" "$bin" dot "$mlp" -o "$work/null"
    [ -c "$work/null" ] && ok || bad "a device node output was replaced"
fi
# A symbolic link is followed: the file it points to is replaced, the link stays.
mkdir "$work/links" && echo old >"$work/target.dot" && ln -s ../target.dot "$work/links/drawing.dot"
expect 0 "dot through a link" "$bin" dot "$mlp" -o "$work/links/drawing.dot"
[ -L "$work/links/drawing.dot" ] && grep -q '^digraph' "$work/target.dot" && ok || bad "a link output: link replaced or target unchanged"
ls -a "$work/links" "$work" | grep -q 'placer-tmp-' && bad "a temporary file left after a link" || ok
expect 2 "dot into a directory" "$bin" dot "$mlp" -o "$work/links"
contains "$work/err" "links': Is a directory" "dot into a directory"
# The umask gives the mode, to a new file and to one replaced.
mode() { stat -c %a "$1"; }
( umask 022 && "$bin" dot "$mlp" -o "$work/m022.dot" && chmod 600 "$work/m022.dot" && \
  "$bin" dot "$mlp" -o "$work/m022.dot" && "$bin" dot "$mlp" -o "$work/n022.dot" )
[ "$(mode "$work/m022.dot")" = 644 ] && [ "$(mode "$work/n022.dot")" = 644 ] && ok || bad "umask 022: not 0644"
( umask 077 && "$bin" dot "$mlp" -o "$work/n077.dot" && chmod 644 "$work/m022.dot" && \
  "$bin" dot "$mlp" -o "$work/m022.dot" )
[ "$(mode "$work/m022.dot")" = 600 ] && [ "$(mode "$work/n077.dot")" = 600 ] && ok || bad "umask 077: not 0600"
# (The temporary file's name, .NAME.placer-tmp-PID-XXXXXX, is checked by the support suite.)

# An output that is also an input is refused before any work, the input unchanged.
cp "$src/graphs/small/mlp-small.json" "$work/a.json" && cp "$work/a.json" "$work/a.orig"
cp "$paced" "$work/c.json" && cp "$work/c.json" "$work/c.orig"
cp "$src/tests/plans/mlp-small-paced-4.json" "$work/p.json" && cp "$work/p.json" "$work/p.orig"
ln -s a.json "$work/link.json"
refused() { # DESCRIPTION MESSAGE COMMAND...: exit 2, the message, every input unchanged
    what=$1 message=$2
    shift 2
    expect 2 "$what" "$@"
    contains "$work/err" "$message" "$what"
    [ "$(wc -l <"$work/err")" -eq 1 ] && cmp -s "$work/a.json" "$work/a.orig" && \
        cmp -s "$work/c.json" "$work/c.orig" && cmp -s "$work/p.json" "$work/p.orig" && ok \
        || bad "$what: not one line, or an input changed"
}
refused "dot -o the model" "the output '$work/a.json' is the model being read" \
    "$bin" dot "$work/a.json" -o "$work/a.json"
refused "dot -o the model, spelled otherwise" "is the model being read" \
    "$bin" dot "$work/a.json" -o "$work/./a.json"
refused "dot -o a link to the model" "the output '$work/link.json' is the model" \
    "$bin" dot "$work/a.json" -o "$work/link.json"
refused "dot -o the plan" "is the plan being read" "$bin" dot "$work/a.json" \
    --cluster "$work/c.json" --plan "$work/p.json" -o "$work/p.json"
refused "train --checkpoint the model" "the checkpoint '$work/a.json' is the model being read" \
    "$bin" train "$work/a.json" --steps 1 --checkpoint "$work/a.json"
refused "baseline -o the model" "the output '$work/a.json' is the model being read" \
    "$bin" baseline "$work/a.json" --algo single -o "$work/a.json"
refused "baseline -o the cluster" "is the cluster being read" \
    "$bin" baseline "$work/a.json" --cluster "$work/c.json" --algo single -o "$work/c.json"
refused "run --trace the plan" "the trace '$work/p.json' is the plan being read" \
    "$bin" run "$work/a.json" --cluster "$work/c.json" --plan "$work/p.json" --trace "$work/p.json"
refused "run --trace the model" "is the model being read" \
    "$bin" run "$work/a.json" --trace "$work/link.json"
cp "$work/a.json" "$work/job.plan.json" && cp "$work/a.json" "$work/a.orig2"
expect 2 "main job: PREFIX.plan.json is the model" "$bin" "$work/job.plan.json" -o "$work/job"
contains "$work/err" "the output '$work/job.plan.json' is the model being read" "main job: model"
cmp -s "$work/job.plan.json" "$work/a.orig2" && [ ! -e "$work/job.graph.dot" ] && ok || bad "main job: the model changed"
cp "$work/c.json" "$work/job.report.md"
refused "main job: PREFIX.report.md is the cluster" "the output '$work/job.report.md' is the cluster" \
    "$bin" "$work/a.json" --cluster "$work/job.report.md" -o "$work/job"
cmp -s "$work/job.report.md" "$work/c.orig" && ok || bad "main job: the cluster changed"
refused "main job: PREFIX.plan.json is the checkpoint resumed" "is the checkpoint resumed being read" \
    "$bin" "$work/a.json" --resume "$work/job.plan.json" -o "$work/job"
PLACER_PROFILE=$work/c.json refused "calibrate: the profile is the cluster" \
    "the calibration profile '$work/c.json' is the cluster being read" "$bin" calibrate --cluster "$work/c.json"
PLACER_PROFILE=$work/a.json refused "simulate: the profile is the model" \
    "is the model being read" "$bin" simulate "$work/a.json"

# Only --checkpoint may replace the checkpoint resumed.
expect 0 "train: a checkpoint to resume" "$bin" train "$work/a.json" --steps 1 -q \
    --checkpoint "$work/r.ckpt"
cp "$work/r.ckpt" "$work/r.orig"
refused "train --save-weights the checkpoint resumed" \
    "the saved weights '$work/r.ckpt' is the checkpoint resumed being read" \
    "$bin" train "$work/a.json" --steps 2 --resume "$work/r.ckpt" --save-weights "$work/r.ckpt"
cmp -s "$work/r.ckpt" "$work/r.orig" && ok || bad "--save-weights over --resume: the checkpoint changed"

# Standard output carries one output alone, a binary one never to a terminal.
refused "two outputs to standard output" "the saved weights and the checkpoint are both '-'" \
    "$bin" train "$work/a.json" --steps 1 --save-weights - --checkpoint -
expect 2 "--checkpoint - every N steps" "$bin" train "$work/a.json" --steps 2 --checkpoint - \
    --checkpoint-every 1
contains "$work/err" "give a file, not '-'" "--checkpoint - every N steps"
if command -v script >/dev/null 2>&1; then
    script -qec "'$bin' train '$work/a.json' --steps 1 --save-weights -" /dev/null \
        >"$work/tty" 2>&1
    [ $? -eq 2 ] && ok || bad "--save-weights - to a terminal: not exit 2"
    contains "$work/tty" "standard output ('-') is a terminal, where the saved weights would be" \
        "--save-weights - to a terminal"
else
    echo "SKIP: binary output to a terminal: no 'script' (util-linux) to make one"
fi
expect 0 "--save-weights - into a file" sh -c \
    "'$bin' train '$work/a.json' --steps 1 --save-weights - >'$work/w.tensors'"
contains "$work/err" "timing:" "--save-weights -: the log on standard error"
expect 0 "--save-weights -: read back" "$bin" train "$work/a.json" --steps 1 -q \
    --weights "$work/w.tensors"
expect 0 "eval --outputs - into a pipe" sh -c \
    "'$bin' eval '$work/a.json' --batches 1 --outputs - | head -c 15 >'$work/o.head'"
printf 'placer-tensors\n' | cmp -s - "$work/o.head" && ok || bad "eval --outputs -: not a tensor file alone"
ls -a "$work" | grep -q 'placer-tmp-' && bad "a temporary file was left behind" || ok

# An oversize model fails fast, before the parser's tree: 4,000,001 nodes, or parameters,
# counted on the raw text (elements need not be well-formed to be counted).
for array in nodes parameters; do
    /usr/bin/python3 -c "import sys; sys.stdout.write('{\"$array\": [' + '0,' * 4000000 + '0]}')" \
        >"$work/oversize.json"
    expect 2 "4,000,001 $array" "$bin" validate "$work/oversize.json"
    contains "$work/err" "oversize.json: /$array: more $array than the limit of 4000000" \
        "4,000,001 $array"
done
rm -f "$work/oversize.json"

# "-" is standard input for every JSON input (model, --cluster, --plan), read once; and
# "-" as an output is still standard output.
expect 0 "validate -" sh -c '"$0" validate - <"$1"' "$bin" "$small"
contains "$work/out" '<stdin>: valid model "mlp-small"' "validate -"
expect 0 "validate --plan -" sh -c '"$0" validate "$1" --cluster "$2" --plan - <"$3"' "$bin" \
    "$small" "$paced" "$src/tests/plans/mlp-small-paced-4.json"
contains "$work/out" '<stdin>: valid plan for "mlp-small"' "validate --plan -"
expect 0 "validate --cluster -" sh -c '"$0" validate "$1" --cluster - --plan "$3" <"$2"' "$bin" \
    "$small" "$paced" "$src/tests/plans/mlp-small-paced-4.json"
expect 0 "cluster -" sh -c '"$0" cluster - <"$1"' "$bin" "$paced"
contains "$work/out" '<stdin>: cluster "paced-4"' "cluster -"
expect 0 "dot - -o -" sh -c 'cat "$1" | "$0" dot - -o -' "$bin" "$small"
contains "$work/out" 'digraph "mlp-small"' "dot - -o -"
PLACER_PROFILE="$work/no-profile.json" expect 0 "dot --plan - --cluster C" \
    sh -c '"$0" dot "$1" --cluster "$2" --plan - -o "$4" <"$3"' "$bin" "$small" "$paced" \
    "$src/tests/plans/mlp-small-paced-4.json" "$work/stdin-plan.dot"
contains "$work/stdin-plan.dot" "cluster_device:dev1" "dot --plan -"
expect 2 "a model with a syntax error on stdin" sh -c 'printf "{\n" | "$0" validate -' "$bin"
contains "$work/err" "<stdin>:2:1:" "a syntax error on stdin"
expect 2 "an empty stdin" sh -c '"$0" validate - </dev/null' "$bin"
contains "$work/err" "<stdin>: the file is empty" "an empty stdin"
expect 2 "an endless stdin" sh -c 'head -c 20000000 /dev/zero | "$0" cluster -' "$bin"
contains "$work/err" "<stdin>: the file has more than 16777216 bytes" "an endless stdin"
expect 2 "a folder as stdin" sh -c '"$0" validate - <"$1"' "$bin" "$src/graphs"
contains "$work/err" "<stdin>: read error: Is a directory" "a folder as stdin"
expect 2 "two models from stdin" sh -c '"$0" validate - - <"$1"' "$bin" "$small"
contains "$work/err" "standard input ('-') is given twice as the model" "two models from stdin"
expect 2 "model and plan from stdin" "$bin" dot - --plan - </dev/null
contains "$work/err" "standard input ('-') is given as both the model and the plan" "model and plan from stdin"
expect 2 "model and cluster from stdin" "$bin" run - --cluster - </dev/null
contains "$work/err" "given as both the model and the cluster" "model and cluster from stdin"
expect 2 "the main job on stdin without -o" "$bin" - </dev/null
contains "$work/err" "a model from standard input ('-') needs -o PREFIX" "main job on stdin"

# tools/bench --check and --only on a scratch repository: a section is stale once the code
# under its paths changes after the commit its first line names, until the line accounts
# for the change; --only refuses to keep a stale section, before running anything.
if command -v git >/dev/null 2>&1; then
    repo=$work/repo
    mkdir -p "$repo/tools/benchmarks" "$repo/src/back" "$repo/docs"
    cp "$src/tools/bench" "$repo/tools/bench"
    printf '#!/bin/sh\nexit 1\n' >"$repo/placer"
    cp "$repo/placer" "$repo/tools/benchmarks/scaling"
    chmod +x "$repo/placer" "$repo/tools/benchmarks/scaling"
    echo 'int x;' >"$repo/src/back/x.c"
    g() { git -C "$repo" -c user.name=test -c user.email=test@example.org "$@"; }
    g init -q && g add -A && g commit -qm one
    first=$(g rev-parse --short HEAD)
    # every section measured at the first commit ($1); $2 a sentence on changes since
    page() {
        /usr/bin/python3 - "$repo" "$@" <<'PY'
import importlib.machinery, importlib.util, sys
loader = importlib.machinery.SourceFileLoader("bench", sys.argv[1] + "/tools/bench")
bench = importlib.util.module_from_spec(importlib.util.spec_from_loader("bench", loader))
loader.exec_module(bench)
since = f"; since then, up to {sys.argv[3]}" if len(sys.argv) > 3 else ""
with open(sys.argv[1] + "/docs/RESULTS.md", "w") as f:
    for title, *_rest in bench.SECTIONS.values():
        f.write(f"## {title}\n\n_Measured at {sys.argv[2]} on 2026-01-02 (quick, 1 s){since}._\n\n")
PY
    }
    page "$first"
    expect 0 "bench --check, fresh" "$repo/tools/bench" --check
    contains "$work/out" "torch             fresh: measured at $first" "bench --check, fresh"
    echo 'int y;' >>"$repo/src/back/x.c"
    expect 1 "bench --check, uncommitted change" "$repo/tools/bench" --check
    g commit -qam two
    second=$(g rev-parse --short HEAD)
    expect 1 "bench --check, stale" "$repo/tools/bench" --check
    contains "$work/out" "torch             stale: measured at $first; changed since $first: src/back/x.c" "bench --check, stale"
    cp "$repo/docs/RESULTS.md" "$work/before.md"
    expect 2 "bench --only, a stale section kept" "$repo/tools/bench" --only scaling
    contains "$work/err" "section torch (The executor against PyTorch) would be kept stale: measured at $first" "bench --only, a stale section kept"
    cmp -s "$repo/docs/RESULTS.md" "$work/before.md" && ok || bad "bench --only refused but wrote the page"
    page "$first" "$second, x.c gained a variable no benchmark reads"
    expect 0 "bench --check, changes accounted for" "$repo/tools/bench" --check
    contains "$work/out" "torch             fresh: measured at $first, checked up to $second" "bench --check, changes accounted for"
    ! grep -q "account of changes" "$work/out" && ok || bad "bench --check noted a short account"
    page "$first" "$second, $(printf '%0801d' 0)"
    expect 0 "bench --check, a long account" "$repo/tools/bench" --check
    contains "$work/out" "its account of changes since runs to 801 characters" "bench --check, a long account"
    page "$first" "$second, x.c gained a variable no benchmark reads"
    printf '#!/bin/sh\necho the figures\n' >"$repo/tools/bench-exec"
    chmod +x "$repo/tools/bench-exec"
    expect 0 "bench --only exec" "$repo/tools/bench" --only exec --quick
    grep -A 12 '^## The executor on several devices' "$repo/docs/RESULTS.md" >"$work/exec.md"
    contains "$work/exec.md" "_Measured at $second on $(date -u +%Y-%m-%d) (quick, 0 s)._" "bench --only exec: its first line"
    contains "$work/exec.md" "the figures" "bench --only exec: its output"
    contains "$repo/docs/RESULTS.md" "_Measured at $first on 2026-01-02 (quick, 1 s); since then, up to $second," "bench --only exec: the others kept"
    sed -i "s/^_Measured at $first .*/figures without their commit/" "$repo/docs/RESULTS.md"
    expect 1 "bench --check, no commit named" "$repo/tools/bench" --check
    contains "$work/out" "torch             stale: its first line names no commit it was measured at" "bench --check, no commit named"
else
    echo "SKIP: tools/bench --check (no git)"
fi

finish cli
