#!/bin/sh
# Faults a long run meets: a signal (SIGINT, SIGTERM, SIGHUP) keeps what was done; a paced
# step on a very slow device gives way to a signal and to the budget; a full disk loses
# the checkpoint but not the plan; an output that cannot be written (a missing or
# read-only folder) or an input that cannot be read stops the command before any work;
# kill -9 during a checkpoint write leaves a checkpoint that resumes.
. "${top_srcdir:-.}/tests/shell_lib.sh"

lstm=$src/graphs/small/lstm_lm-small.json
mlp=$src/graphs/small/mlp-small.json
paced=$src/graphs/clusters/paced-4.json
full=$work/full
readonly=$work/readonly
trap 'umount "$full" "$readonly" 2>/dev/null; rm -rf "$work"' EXIT

own_profile mlp

# One emulated device of 1000 FLOP/s: valid, and one step of mlp-small takes minutes.
cat >"$work/slow.json" <<'JSON'
{"format": "placer-cluster", "version": 1, "name": "slow-1",
 "devices": [{"name": "dev0", "threads": 1, "memory_bytes": 1073741824,
              "flops_per_second": 1000}],
 "default_link": {"bytes_per_second": 1e9, "latency_seconds": 2e-5}}
JSON
slow=$work/slow.json

# stop SIGNAL SECONDS COMMAND...: runs it, sends SIGNAL after SECONDS; $got is its exit
# status, $took the seconds from the signal to its end.
stop() {
    sig=$1 after=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err" &
    pid=$!
    sleep "$after"
    sent=$(date +%s)
    kill -"$sig" "$pid"
    wait "$pid"
    got=$?
    took=$(($(date +%s) - sent))
}

# placer train: every signal writes the checkpoint, exits 130, and the checkpoint resumes.
# Under nohup (SIGHUP ignored on entry, as placer then leaves it) SIGHUP is not tried.
signals="INT TERM HUP"
hup_ignored=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status 2>/dev/null)
if [ -n "$hup_ignored" ] && [ $((0x$hup_ignored & 1)) -ne 0 ]; then
    echo "skip: SIGHUP is ignored in this environment (nohup), and placer keeps it so"
    signals="INT TERM"
fi
for sig in $signals; do
    stop $sig 1 "$bin" train "$lstm" --steps 1000000 --checkpoint "$work/$sig.ckpt" -q
    [ "$got" -eq 130 ] && ok || bad "train, SIG$sig: exit $got, expected 130"
    contains "$work/err" "checkpoint written" "train, SIG$sig"
    expect 0 "train resumes after SIG$sig" "$bin" train "$lstm" --steps 1 \
        --resume "$work/$sig.ckpt" -q
done

# The main job: the plan and the report written, exit 130. Without early stops: the search
# converges on this model about a second after its first iteration.
for sig in INT TERM; do
    "$bin" "$mlp" --cluster "$paced" --budget 600 --samples 8 --no-early-stop -o "$work/$sig" \
        >"$work/out" 2>"$work/err" &
    pid=$!
    i=0
    while [ $i -lt 600 ] && ! grep -q "^iteration" "$work/out"; do sleep 0.1; i=$((i + 1)); done
    kill -$sig $pid
    wait $pid
    got=$?
    [ "$got" -eq 130 ] && ok || bad "main job, SIG$sig: exit $got, expected 130"
    expect 0 "main job, SIG$sig: the plan validates" "$bin" validate -q "$mlp" \
        --cluster "$paced" --plan "$work/$sig.plan.json"
    contains "$work/$sig.report.md" "interrupted" "main job, SIG$sig: the report"
done

# A signal during calibration (here of every bundled model: tens of seconds) ends it
# within a second or so, with nothing cached.
stop TERM 1 env PLACER_PROFILE="$work/interrupted-profile.json" PLACER_GRAPHS="$src/graphs" \
    "$bin" "$mlp" -o "$work/calibrating"
[ "$got" -eq 130 ] && ok || bad "calibration, SIGTERM: exit $got, expected 130"
[ "$took" -lt 10 ] && ok || bad "calibration, SIGTERM: ended $took s after the signal"
contains "$work/err" "interrupted during calibration" "calibration, SIGTERM"
[ -e "$work/interrupted-profile.json" ] && bad "calibration, SIGTERM: a profile was cached" || ok

# A step that takes minutes does not hold the job: the budget skips measuring it (the
# job ends within its budget of 2 s, give or take the calibration)...
start=$(date +%s)
expect 0 "a slow device, --budget 2" "$bin" "$mlp" --cluster "$slow" --budget 2 -o "$work/slow"
took=$(($(date +%s) - start))
[ "$took" -lt 120 ] && ok || bad "a slow device, --budget 2: ran $took s"
contains "$work/out" "(not measured)" "a slow device, --budget 2"
# ... and a signal ends the paced wait: the job stops within a second or so (10 s: a
# liveness check, not a benchmark), with its plan and report.
stop TERM 2 "$bin" "$mlp" --cluster "$slow" --budget 100000 -o "$work/slowterm"
[ "$got" -eq 130 ] && ok || bad "a slow device, SIGTERM: exit $got, expected 130"
[ "$took" -lt 10 ] && ok || bad "a slow device, SIGTERM: ended $took s after the signal"
[ -s "$work/slowterm.plan.json" ] && [ -s "$work/slowterm.report.md" ] && ok ||
    bad "a slow device, SIGTERM: no plan or report"
# So does placer train on it, its checkpoint written.
stop TERM 2 "$bin" train "$mlp" --plan "$work/slow.plan.json" --cluster "$slow" --steps 3 \
    --checkpoint "$work/slow.ckpt" -q
[ "$got" -eq 130 ] && ok || bad "train on a slow device, SIGTERM: exit $got, expected 130"
[ "$took" -lt 10 ] && ok || bad "train on a slow device, SIGTERM: ended $took s after the signal"
expect 0 "train on a slow device: the checkpoint resumes" "$bin" train "$mlp" --steps 2 \
    --resume "$work/slow.ckpt" -q
# And placer run: on the slow device (a paced wait cut short) and on a native one (between
# steps), exit 130, the measurement said to be unfinished.
stop TERM 2 "$bin" run "$mlp" --plan "$work/slow.plan.json" --cluster "$slow" --steps 3
[ "$got" -eq 130 ] && ok || bad "run on a slow device, SIGTERM: exit $got, expected 130"
[ "$took" -lt 10 ] && ok || bad "run on a slow device, SIGTERM: ended $took s after the signal"
stop INT 1 "$bin" run "$mlp" --steps 1000000
[ "$got" -eq 130 ] && ok || bad "run, Ctrl-C: exit $got, expected 130"
[ "$took" -lt 10 ] && ok || bad "run, Ctrl-C: ended $took s after the signal"
contains "$work/err" "run: interrupted before the measurement ended; nothing written" "run, Ctrl-C"

# A checkpoint that cannot be written (a full disk): said in one line naming the file and
# the reason; the plan and the report are written all the same; exit 1. First /dev/full,
# a device that is always full...
ln -s /dev/full "$work/dev.agent.ckpt"
expect 1 "checkpoint on /dev/full" "$bin" "$mlp" --cluster "$paced" --iterations 2 --samples 8 \
    -o "$work/dev" -q
contains "$work/err" "cannot write $work/dev.agent.ckpt: No space left on device" \
    "checkpoint on /dev/full"
# (a profile calibrated on a busy machine adds its warning line: not this test's concern)
[ "$(grep -vc "calibration profile is noisy" "$work/err")" -eq 1 ] && ok ||
    bad "checkpoint on /dev/full: more than one line"
expect 0 "checkpoint on /dev/full: the plan validates" "$bin" validate -q "$mlp" \
    --cluster "$paced" --plan "$work/dev.plan.json"
contains "$work/dev.report.md" "checkpoint was not saved" "checkpoint on /dev/full: the report"
# ... then a real full file system, 160 KiB: room for the plan, the report and the
# drawings (about 64 KiB in 4 KiB pages, more when a timeline has more bars), not for the
# checkpoint (about 470 KiB). Needs root to mount; skipped otherwise.
mkdir "$full"
if mount -t tmpfs -o size=160k tmpfs "$full" 2>/dev/null; then
    expect 1 "a full disk" "$bin" "$mlp" --cluster "$paced" --iterations 2 --samples 8 \
        -o "$full/m" -q
    contains "$work/err" "cannot write $full/m.agent.ckpt: No space left on device" "a full disk"
    expect 0 "a full disk: the plan validates" "$bin" validate -q "$mlp" --cluster "$paced" \
        --plan "$full/m.plan.json"
    [ -s "$full/m.report.md" ] && ok || bad "a full disk: no report"
    ls -a "$full" | grep -q 'placer-tmp-' && bad "a full disk: a temporary file was left" || ok
    umount "$full"
else
    echo "SKIP: a full tmpfs (cannot mount one here)"
fi
# placer train's checkpoint: its failure is the exit status, one line.
expect 1 "train, checkpoint on /dev/full" "$bin" train "$mlp" --steps 2 --checkpoint /dev/full -q
contains "$work/err" "/dev/full: cannot write: No space left on device" "train, checkpoint on /dev/full"

# An output that cannot be written stops the command before any step: exit 2, one line.
expect 2 "train --checkpoint in a missing folder" "$bin" train "$mlp" --steps 1000000 \
    --checkpoint /nonexistent/x
contains "$work/err" "cannot write the checkpoint '/nonexistent/x': /nonexistent: No such file" \
    "train --checkpoint in a missing folder"
grep -q "step" "$work/out" && bad "train --checkpoint in a missing folder: it trained" || ok
expect 2 "main job -o in a missing folder" "$bin" "$mlp" -o "$work/no/such/m"
expect 2 "baseline -o in a missing folder" "$bin" baseline "$mlp" -o "$work/no/such/p.json"
expect 2 "train --checkpoint a folder" "$bin" train "$mlp" --checkpoint "$work"

# A read-only folder (a read-only mount: root writes through file modes): every output
# in it stops the command before any work, exit 2, naming the folder and the reason.
mkdir "$readonly"
if mount -t tmpfs -o size=64k,ro tmpfs "$readonly" 2>/dev/null; then
    expect 2 "main job -o in a read-only folder" "$bin" "$mlp" -o "$readonly/m"
    contains "$work/err" "$readonly: Read-only file system" "main job -o in a read-only folder"
    grep -q "^baseline" "$work/out" && bad "a read-only folder: the baselines ran" || ok
    expect 2 "train --checkpoint in a read-only folder" "$bin" train "$mlp" --steps 1000000 \
        --checkpoint "$readonly/x"
    contains "$work/err" "$readonly: Read-only file system" "train --checkpoint in a read-only folder"
    expect 2 "run --trace in a read-only folder" "$bin" run "$mlp" --trace "$readonly/t.json"
    umount "$readonly"
else
    echo "SKIP: a read-only folder (cannot mount one here)"
fi

# kill -9 while a 16 MB checkpoint is written at every step: what is on disk is the old
# checkpoint or the new one whole, never a part (it resumes), and the next write of it
# removes the temporary files the killed process left. Each kill comes as soon as a
# temporary file is seen, so most land inside a write.
big=$src/graphs/mlp.json
killed=$work/killed
mkdir "$killed"
hits=0
for round in 1 2 3 4; do
    "$bin" train "$big" --steps 1000000 --checkpoint-every 1 --checkpoint "$killed/m.ckpt" -q \
        >"$work/out" 2>"$work/err" &
    pid=$!
    i=0
    while [ $i -lt 3000 ] && ! { [ -e "$killed/m.ckpt" ] && ls -a "$killed" | grep -q 'placer-tmp-'; }; do
        sleep 0.01
        i=$((i + 1))
    done
    kill -KILL $pid
    wait $pid
    got=$?
    [ "$got" -eq 137 ] && ok || bad "kill -9, round $round: exit $got, expected 137"
    ls -a "$killed" | grep -q 'placer-tmp-' && hits=$((hits + 1))
    expect 0 "kill -9, round $round: the checkpoint resumes and is written again" "$bin" train \
        "$big" --steps 1 --resume "$killed/m.ckpt" --checkpoint "$killed/m.ckpt" -q
    ls -a "$killed" | grep -q 'placer-tmp-' && bad "kill -9, round $round: a temporary file stayed" || ok
done
echo "kill -9: $hits of 4 kills left a temporary file (removed by the next write)"

# A bad input stops the main job before it writes anything or places anything.
echo "not a checkpoint" >"$work/bad.ckpt"
expect 2 "a bad --resume" "$bin" "$mlp" --cluster "$paced" --resume "$work/bad.ckpt" -o "$work/bad"
grep -q "^baseline" "$work/out" && bad "a bad --resume: the baselines ran first" || ok
[ -e "$work/bad.graph.dot" ] && bad "a bad --resume: bad.graph.dot was written" || ok
echo '{"format": "placer-cluster"' >"$work/bad-cluster.json"
expect 2 "a bad --cluster" "$bin" "$mlp" --cluster "$work/bad-cluster.json" -o "$work/badc"
[ -e "$work/badc.graph.dot" ] && bad "a bad --cluster: badc.graph.dot was written" || ok


# A model larger than this machine's memory is refused with its figures before anything
# is allocated, exit 3, by each command that would hold it: a chain of square weights of
# 8 GiB each, one more than the machine's memory holds.
/usr/bin/python3 - "$work/huge.json" <<'PY'
import json, os, sys
count = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // (8 << 30) + 1
side = 46340  # side * side elements: just under the format's limit of 2^31 a tensor
json.dump({"format": "placer-model", "version": 1, "name": "huge", "batch_size": 1,
           "inputs": [{"name": "x", "shape": [side], "dtype": "f32", "role": "data"},
                      {"name": "y", "shape": [], "dtype": "i32", "role": "label"}],
           "parameters": [{"name": f"w{i}", "shape": [side, side], "init": {"kind": "zeros"}}
                          for i in range(count)],
           "nodes": [{"name": f"fc{i}", "op": "matmul", "inputs": [f"h{i}", f"w{i}"],
                      "outputs": [f"h{i + 1}"]} for i in range(count)] +
                    [{"name": "loss", "op": "softmax_cross_entropy",
                      "inputs": [f"h{count}", "y"], "outputs": ["l"]}],
           "loss": "l", "optimizer": {"kind": "sgd", "lr": 0.01}},
          open(sys.argv[1], "w"))
PY
sed -i 's/"h0"/"x"/' "$work/huge.json"
for command in "train --steps 1 --data synthetic" "eval --batches 1 --data synthetic" \
    "run --steps 1" "-o $work/huge"; do
    expect 3 "a model larger than the machine: $command" "$bin" $command "$work/huge.json"
    contains "$work/err" "of memory; this machine has" "a model larger than the machine: $command"
done
[ -e "$work/huge.plan.json" ] && bad "a model larger than the machine: a plan was written" || ok

# A model too large for its budget (20,000 ops, 3 s): the job ends near the budget (20 s:
# a liveness check, not a benchmark), says what it skipped for time, and its plan is
# valid; a signal at any moment, loading included, ends it within a second or so, exit
# 130, with nothing half written.
python3 "$src/tools/gen-chain" 20000 "$work/chain.json" >/dev/null
start=$(date +%s)
expect 0 "a large model, --budget 3" "$bin" "$work/chain.json" --budget 3 -o "$work/chain"
took=$(($(date +%s) - start))
[ "$took" -lt 20 ] && ok || bad "a large model, --budget 3: ran $took s"
contains "$work/out" "skipped for time: " "a large model, --budget 3"
expect 0 "a large model: its plan is valid" "$bin" validate -q "$work/chain.json" \
    --plan "$work/chain.plan.json"
for after in 0.2 2; do
    stop TERM $after "$bin" "$work/chain.json" --budget 60 -o "$work/chainterm"
    [ "$got" -eq 130 ] && ok || bad "a large model, SIGTERM at $after s: exit $got, expected 130"
    [ "$took" -lt 5 ] && ok || bad "a large model, SIGTERM at $after s: ended $took s after it"
    ls -a "$work" | grep -q 'chainterm.*placer-tmp-' &&
        bad "a large model, SIGTERM at $after s: a temporary file stayed" || ok
done
if [ -e "$work/chainterm.plan.json" ]; then
    expect 0 "a large model, SIGTERM: its plan is valid" "$bin" validate -q \
        "$work/chain.json" --plan "$work/chainterm.plan.json"
fi

finish faults
