#!/bin/sh
# placer across processes: run and train under mpirun with 2 and 4 ranks give what one
# process gives (losses, checkpoints to the byte) for pipelines, replicas and split ops
# (of sizes that divide and that do not); replicas all-reduce across ranks, the rank count
# is checked; a signal to one rank stops every rank at the same step; a rank that dies or
# stops ends the others; and two network namespaces stand in for two hosts.
. "${top_srcdir:-.}/tests/shell_lib.sh"

if ! command -v mpirun >/dev/null 2>&1; then
    echo "mpi: mpirun not found (tools/setup installs openmpi-bin)"
    exit 1
fi
# As root Open MPI asks for a confirmation; ranks share this machine's cores with paced
# devices, and each may use any core.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { # RANKS COMMAND...
    n=$1
    shift
    mpirun --oversubscribe --bind-to none -np "$n" "$@"
}
# Under AddressSanitizer, no leak check of the ranks: Open MPI's plugins, unloaded at
# exit, leave allocations LeakSanitizer cannot name or tell from ours. Every other check of
# the sanitizers stays on.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

own_profile transformer
model=$src/graphs/small/transformer-small.json
pipeline=$src/tests/plans/transformer-small-paced-4.json
one=$src/graphs/clusters/paced-4.json
ranks2=$src/graphs/clusters/paced-4-ranks-2.json

# rank_pid RANK PATTERN: the process id of that rank's placer, its command line matching
# PATTERN (waited for, 30 s at most; empty when it never started).
placer_exe=$(readlink -f "$bin")
rank_pid() {
    for _ in $(seq 1 60); do
        for pid in $(pgrep -f "$2"); do
            [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$placer_exe" ] &&
                tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" &&
                { echo "$pid"; return 0; }
        done
        sleep 0.5
    done
}
# stepping FILE: waits (60 s at most) for rank 0's first step line: every rank trains.
stepping() {
    for _ in $(seq 1 120); do grep -q '^step ' "$1" 2>/dev/null && return 0; sleep 0.5; done
    return 1
}
# ended_within SECONDS WHAT: waits for $job, whose fault came at $since (date +%s); its exit
# status in $status.
ended_within() {
    status=0
    wait "$job" || status=$?
    took=$(($(date +%s) - since))
    [ "$took" -le "$1" ] && ok || bad "$2: the ranks ended after $took s"
}

# The cluster says which rank holds each device.
expect 0 "cluster with ranks" "$bin" cluster "$src/graphs/clusters/paced-4-ranks-2.json"
contains "$work/out" "2 processes: run it with mpirun -np 2" "cluster with ranks"
grep -Eq "^  dev3 .* 1$" "$work/out" && ok || bad "cluster with ranks: dev3 is not on rank 1"

# Without mpirun, or with another count of ranks: exit 2, said once.
expect 2 "ranks without mpirun" "$bin" run "$model" --plan "$pipeline" \
    --cluster "$src/graphs/clusters/paced-4-ranks-4.json"
contains "$work/err" "spreads its devices over 4 processes: run placer with mpirun -np 4" \
    "ranks without mpirun"
expect 2 "3 ranks for a cluster of 4" mpi 3 "$bin" run "$model" --plan "$pipeline" \
    --cluster "$src/graphs/clusters/paced-4-ranks-4.json"
once "$work/err" "spreads its devices over 4 processes and mpirun started 3: run placer with mpirun -np 4" \
    "3 ranks for a cluster of 4"

# Every rank reads its inputs: standard input, which reaches rank 0 only, is refused.
expect 2 "standard input under mpirun" mpi 2 "$bin" run - --plan "$pipeline" \
    --cluster "$src/graphs/clusters/paced-4-ranks-2.json" <"$model"
once "$work/err" "under mpirun it reaches rank 0 only" "standard input under mpirun"

# A plan that does not fit a device's memory: every rank exits 3, said once.
sed 's/"memory_bytes": 1073741824/"memory_bytes": 8192/' \
    "$src/graphs/clusters/paced-4-ranks-2.json" >"$work/tiny.json"
expect 3 "a plan that does not fit, over 2 ranks" mpi 2 "$bin" run "$model" --plan "$pipeline" \
    --cluster "$work/tiny.json"
once "$work/err" "run: out of memory: device" "a plan that does not fit, over 2 ranks"

# The losses a step prints, and the checkpoint, of one process.
losses() { grep '^step ' "$1" | sed 's/  [0-9]* samples\/s//; s/  accuracy [0-9.]*//'; }
train() { # OUT CHECKPOINT PLAN CLUSTER [mpirun ranks]
    out=$1 ckpt=$2 plan=$3 cluster=$4 ranks=${5:-}
    if [ -n "$ranks" ]; then
        mpi "$ranks" "$bin" train "$model" --cluster "$cluster" --plan "$plan" --steps 6 \
            --log-every 2 --checkpoint "$ckpt" >"$out" 2>"$work/err"
    else
        "$bin" train "$model" --cluster "$cluster" --plan "$plan" --steps 6 --log-every 2 \
            --checkpoint "$ckpt" >"$out" 2>"$work/err"
    fi || { bad "train $plan on $cluster ($ranks ranks): exit $?"; sed 's/^/    /' "$work/err"; }
}
same() { # WHAT ONE MANY
    losses "$2.out" >"$work/a"
    losses "$3.out" >"$work/b"
    [ -s "$work/a" ] && cmp -s "$work/a" "$work/b" && ok ||
        { bad "$1: losses differ"; diff "$work/a" "$work/b" | sed 's/^/    /'; }
    cmp -s "$2.ckpt" "$3.ckpt" && ok || bad "$1: checkpoints differ"
}

# A pipeline of four stages: two ranks of two devices, then four of one.
train "$work/p1.out" "$work/p1.ckpt" "$pipeline" "$one"
for ranks in 2 4; do
    train "$work/p$ranks.out" "$work/p$ranks.ckpt" "$pipeline" \
        "$src/graphs/clusters/paced-4-ranks-$ranks.json" "$ranks"
    same "pipeline over $ranks ranks" "$work/p1" "$work/p$ranks"
done

# Four replicas, one a rank: the all-reduce across ranks, with the optimizer state
# replicated and sharded (its shards gathered for the checkpoint).
for state in replicated sharded; do
    plan=$src/tests/plans/transformer-small-replicas-4-$state.json
    train "$work/r1.out" "$work/r1.ckpt" "$plan" "$one"
    train "$work/r4.out" "$work/r4.ckpt" "$plan" "$src/graphs/clusters/paced-4-ranks-4.json" 4
    same "4 replicas over 4 ranks, state $state" "$work/r1" "$work/r4"
done

# Split plans: two stages each split over two devices, and two replicas each split over
# two devices with their optimizer state sharded: the shards' collectives cross ranks, and
# the checkpoint gathers the shards whole.
for split in split-paced-4 split-replicas; do
    plan=$src/tests/plans/transformer-small-$split.json
    train "$work/s1.out" "$work/s1.ckpt" "$plan" "$one"
    for ranks in 2 4; do
        train "$work/s$ranks.out" "$work/s$ranks.ckpt" "$plan" \
            "$src/graphs/clusters/paced-4-ranks-$ranks.json" "$ranks"
        same "$split over $ranks ranks" "$work/s1" "$work/s$ranks"
    done
done

# Sizes that do not divide: a GPT of 37 classes and width 18 split over four devices, its
# embedding, head and loss in parts of 10, 9, 9 and 9 classes, over 2 and 4 ranks.
kept=$model
model=$src/tests/models/gpt-odd.json
plan=$src/tests/plans/gpt-odd-split-4.json
train "$work/u1.out" "$work/u1.ckpt" "$plan" "$one"
for ranks in 2 4; do
    train "$work/u$ranks.out" "$work/u$ranks.ckpt" "$plan" \
        "$src/graphs/clusters/paced-4-ranks-$ranks.json" "$ranks"
    same "uneven parts over $ranks ranks" "$work/u1" "$work/u$ranks"
done
model=$kept

# Native devices, one a rank (local-2-ranks-2: rank 0 on core 0, rank 1 on core 1): a plan
# for local-2 trains as it does in one process.
if [ "$(nproc)" -ge 2 ]; then
    plan=$src/tests/plans/transformer-small-local-2.json
    train "$work/n1.out" "$work/n1.ckpt" "$plan" "$src/graphs/clusters/local-2.json"
    train "$work/n2.out" "$work/n2.ckpt" "$plan" "$src/graphs/clusters/local-2-ranks-2.json" 2
    same "native devices over 2 ranks" "$work/n1" "$work/n2"
    # No pacing holds a transfer's end: with the ranks' times from their own starts, a rank
    # that left the barrier late showed transfers ending before they started.
    for round in 1 2 3; do
        expect 0 "native timeline over 2 ranks, round $round" mpi 2 "$bin" run "$model" \
            --plan "$plan" --cluster "$src/graphs/clusters/local-2-ranks-2.json" --steps 3 \
            --warmup 1 --trace "$work/native.trace.json" --timeline "$work/native.svg"
        grep -q '"dur":-' "$work/native.trace.json" &&
            bad "native timeline over 2 ranks: a task ends before it starts" || ok
    done
fi

# placer run: every rank's devices in the one trace rank 0 writes, one report. (Its loss
# depends on how many rounds the measurement took: the losses are train's to compare.)
expect 0 "run over 4 ranks" mpi 4 "$bin" run "$model" --plan "$pipeline" --steps 3 \
    --warmup 1 --cluster "$src/graphs/clusters/paced-4-ranks-4.json" --trace "$work/trace.json"
for device in dev0 dev1 dev2 dev3; do
    contains "$work/trace.json" "\"name\":\"$device\"" "run over 4 ranks: the trace"
done
once "$work/out" "step time: median" "run over 4 ranks: one report"

# A baseline measured over 2 ranks, its plan written once.
expect 0 "baseline over 2 ranks" mpi 2 "$bin" baseline "$model" --algo pipeline-dp \
    --measure 2 --cluster "$src/graphs/clusters/paced-4-ranks-2.json" -o "$work/base.json"
once "$work/out" "measured step: median" "baseline over 2 ranks"
[ -s "$work/base.json" ] && ok || bad "baseline over 2 ranks: no plan"

# The main job: rank 0 searches and writes, every rank measures the plans it is sent.
expect 0 "the main job over 2 ranks" mpi 2 "$bin" "$model" --budget 5 -q -o "$work/job" \
    --cluster "$src/graphs/clusters/paced-4-ranks-2.json"
[ -s "$work/job.plan.json" ] && [ -s "$work/job.report.md" ] && ok ||
    bad "the main job over 2 ranks: no plan or report"
grep -q "measured" "$work/job.report.md" && ok || bad "the main job over 2 ranks: nothing measured"
expect 2 "the main job without mpirun" "$bin" "$model" --budget 5 -q -o "$work/alone" \
    --cluster "$src/graphs/clusters/paced-4-ranks-2.json"
contains "$work/err" "run placer with mpirun -np 2" "the main job without mpirun"

# Ctrl-C on mpirun (which ends the ranks with SIGTERM): rank 0 still writes the best plan
# so far. The model's drawing is written before the search starts.
mpi 2 "$bin" "$model" --budget 120 --no-early-stop -q -o "$work/cut" \
    --cluster "$src/graphs/clusters/paced-4-ranks-2.json" >"$work/out" 2>"$work/err" &
job=$!
for _ in $(seq 1 120); do [ -s "$work/cut.graph.dot" ] && break; sleep 0.5; done
sleep 2
# to mpirun itself: $job is the shell running mpi, which ignores SIGINT in the background
kill -INT "$(pgrep -P "$job" -x mpirun)"
since=$(date +%s)
ended_within 10 "Ctrl-C on mpirun"
[ -s "$work/cut.plan.json" ] && [ -s "$work/cut.report.md" ] && ok ||
    { bad "Ctrl-C on mpirun: no plan written"; sed 's/^/    /' "$work/err"; }

# SIGTERM to the follower alone: the leader learns of it at its next measured step (at the
# latest the one after the budget), stops the search and writes the best plan so far; every
# rank exits 130.
mpi 2 "$bin" "$model" --budget 15 --no-early-stop -q -o "$work/follower" --cluster "$ranks2" \
    >"$work/out" 2>"$work/err" &
job=$!
follower=$(rank_pid 1 "placer .*follower")
for _ in $(seq 1 120); do [ -s "$work/follower.graph.dot" ] && break; sleep 0.5; done
sleep 2
[ -n "$follower" ] && kill -TERM "$follower"
since=$(date +%s)
ended_within 30 "SIGTERM to the main job's follower"
[ "$status" -eq 130 ] && ok ||
    { bad "SIGTERM to the main job's follower: exit $status, expected 130"; sed 's/^/    /' "$work/err"; }
[ -s "$work/follower.plan.json" ] && grep -q "interrupted" "$work/follower.report.md" && ok ||
    { bad "SIGTERM to the main job's follower: no plan, or not said interrupted"
      sed 's/^/    /' "$work/err"; }

# A rank killed mid-run ends the others within the timeout, with an error.
PLACER_MPI_TIMEOUT=5 mpi 2 -x PLACER_MPI_TIMEOUT "$bin" train "$model" --cluster "$ranks2" \
    --plan "$pipeline" --steps 100000 -q >"$work/out" 2>"$work/err" &
job=$!
victim=$(rank_pid 1 "placer train .*paced-4-ranks-2")
if [ -z "$victim" ]; then
    bad "a killed rank: rank 1 never started"
    kill "$job" 2>/dev/null
else
    sleep 2
    kill -KILL "$victim"
    since=$(date +%s)
    ended_within 7 "a killed rank"
    [ "$status" -ne 0 ] && ok || bad "a killed rank: mpirun exited 0"
    grep -q "signal 9" "$work/err" && ok || { bad "a killed rank: no message"; cat "$work/err"; }
fi

# A rank that stops answering (stopped, not dead: mpirun sees nothing wrong): the ranks
# waiting on it end the step with an error naming it once PLACER_MPI_TIMEOUT has passed,
# and the job ends with exit 1, where it would otherwise hang.
PLACER_MPI_TIMEOUT=2 mpi 2 -x PLACER_MPI_TIMEOUT "$bin" train "$model" --steps 1000000 -q \
    --cluster "$src/graphs/clusters/paced-4-ranks-2.json" --plan "$pipeline" \
    >"$work/out" 2>"$work/err" &
job=$!
ranks=""
for _ in $(seq 1 60); do # both ranks started (slow under the sanitizers), then a step or two
    ranks=$(pgrep -P "$job" -x placer; for child in $(pgrep -P "$job"); do pgrep -P "$child" -x placer; done)
    [ "$(echo "$ranks" | grep -c .)" -ge 2 ] && break
    sleep 0.5
done
sleep 2
last=$(echo "$ranks" | sort -n | tail -n 1)
[ -n "$last" ] && kill -STOP "$last"
status=0
wait "$job" || status=$?
[ -n "$last" ] && kill -KILL "$last" 2>/dev/null
[ "$status" -ne 0 ] && ok || bad "a stopped rank: exit $status"
# (a collective cannot say which rank it waits for: MPI does not tell)
grep -Eq "rank 0: (a message (to|from) rank 1 \(tag [0-9]+\) is [0-9.]+ s overdue \(PLACER_MPI_TIMEOUT=2\)|(a barrier|an all-reduce) is [0-9.]+ s overdue \(PLACER_MPI_TIMEOUT=2\): rank 1 has not joined it)" "$work/err" &&
    ok || { bad "a stopped rank: no error naming it"; sed 's/^/    /' "$work/err"; }

# A stopped leader: the main job's follower, waiting for its next word while it searches,
# ends once rank 0 has been silent for the timeout (or a step's message is overdue).
PLACER_MPI_TIMEOUT=2 mpi 2 -x PLACER_MPI_TIMEOUT "$bin" "$model" --budget 120 --no-early-stop \
    -q -o "$work/stopped" --cluster "$ranks2" >"$work/out" 2>"$work/err" &
job=$!
leader=$(rank_pid 0 "placer .*stopped")
for _ in $(seq 1 120); do [ -s "$work/stopped.graph.dot" ] && break; sleep 0.5; done
sleep 1
[ -n "$leader" ] && kill -STOP "$leader"
since=$(date +%s)
ended_within 8 "a stopped leader"
[ -n "$leader" ] && kill -KILL "$leader" 2>/dev/null
[ "$status" -ne 0 ] && ok || bad "a stopped leader: exit $status"
grep -Eq "rank 1: .*(rank 0 has sent nothing for [0-9.]+ s|a message (to|from) rank 0 \(tag [0-9]+\) is [0-9.]+ s overdue|rank 0 has not joined it)" "$work/err" &&
    ok || { bad "a stopped leader: no error naming it"; sed 's/^/    /' "$work/err"; }

# PLACER_MPI_TIMEOUT is a positive number of seconds, with or without an s: anything else is
# bad input, said once, before MPI starts.
for value in abc -1 0 "5 min" ""; do
    export PLACER_MPI_TIMEOUT="$value"
    expect 2 "PLACER_MPI_TIMEOUT=\"$value\"" mpi 2 -x PLACER_MPI_TIMEOUT "$bin" run "$model" \
        --plan "$pipeline" --cluster "$ranks2" --steps 1 --warmup 0
    once "$work/err" "placer: PLACER_MPI_TIMEOUT is \"$value\": give a positive number of seconds" \
        "PLACER_MPI_TIMEOUT=\"$value\""
done
export PLACER_MPI_TIMEOUT=30s
expect 0 "PLACER_MPI_TIMEOUT=30s" mpi 2 -x PLACER_MPI_TIMEOUT "$bin" run "$model" \
    --plan "$pipeline" --cluster "$ranks2" --steps 1 --warmup 0
unset PLACER_MPI_TIMEOUT

# SIGTERM to one rank of a training, or to both 50 ms apart: every rank stops at the same
# step, the checkpoint is written once, every rank exits 130, and the checkpoint resumes.
interrupt_train() { # WHAT RANK... (the ranks signalled, in this order)
    what=$1
    shift
    rm -f "$work/cut.ckpt"
    mpi 2 "$bin" train "$model" --cluster "$ranks2" --plan "$pipeline" --steps 1000000 \
        --log-every 1 --checkpoint "$work/cut.ckpt" >"$work/out" 2>"$work/err" &
    job=$!
    pids=""
    for rank in "$@"; do pids="$pids $(rank_pid "$rank" "placer train .*cut.ckpt")"; done
    stepping "$work/out" || bad "$what: no step"
    pause=""
    for pid in $pids; do
        [ -z "$pause" ] || sleep "$pause"
        pause=0.05
        kill -TERM "$pid"
    done
    since=$(date +%s)
    ended_within 10 "$what"
    [ "$status" -eq 130 ] && ok ||
        { bad "$what: exit $status, expected 130"; sed 's/^/    /' "$work/err"; }
    once "$work/err" "placer: train: interrupted at step" "$what"
    at=$(sed -n 's/^placer: train: interrupted at step \([0-9]*\); checkpoint written$/\1/p' \
        "$work/err")
    if [ -z "$at" ]; then
        bad "$what: no checkpoint said written"
        return
    fi
    expect 0 "$what: the checkpoint resumes" "$bin" train "$model" --cluster "$one" \
        --plan "$pipeline" --resume "$work/cut.ckpt" --steps $((at + 1)) --log-every 1
    contains "$work/out" "step $((at + 1)) " "$what: the checkpoint resumes"
}
interrupt_train "SIGTERM to rank 1" 1
interrupt_train "SIGTERM to both ranks" 0 1

# Two network namespaces as two hosts, joined by a veth pair: mpirun and rank 0 in the
# first, rank 1 in the second (started there by a launcher standing in for ssh, with a host
# name of its own), Open MPI over TCP between them. Removed at exit.
two_hosts() {
    a=plmpia$$ b=plmpib$$
    if ! command -v unshare >/dev/null 2>&1; then
        echo "SKIP: two hosts: no unshare (util-linux)"
        return
    fi
    if ! ip netns add "$a" 2>"$work/netns.err"; then
        echo "SKIP: two hosts: cannot make a network namespace: $(head -n 1 "$work/netns.err")"
        return
    fi
    trap 'ip netns del "$a" 2>/dev/null; ip netns del "$b" 2>/dev/null; rm -rf "$work"' EXIT
    trap 'exit 1' INT TERM
    ip netns add "$b"
    ip link add "plva$$" netns "$a" type veth peer name "plvb$$" netns "$b"
    ip -n "$a" addr add 10.77.0.1/24 dev "plva$$"
    ip -n "$b" addr add 10.77.0.2/24 dev "plvb$$"
    ip -n "$a" link set "plva$$" up
    ip -n "$b" link set "plvb$$" up
    ip -n "$a" link set lo up
    ip -n "$b" link set lo up
    # Open MPI's rsh agent: HOST COMMAND, run in HOST's namespace
    printf '%s\n' '#!/bin/sh' \
        "case \$1 in 10.77.0.1) ns=$a ;; 10.77.0.2) ns=$b ;; *) exit 1 ;; esac" 'shift' \
        'exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns; $*"' >"$work/launch"
    chmod +x "$work/launch"
    export PLACER_MPI_TIMEOUT=3
    hosts() { # COMMAND...: under mpirun -np 2, a rank on each host
        ip netns exec "$a" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$a" \
            mpirun --oversubscribe --bind-to none -np 2 --host 10.77.0.1,10.77.0.2 \
            --mca plm_rsh_agent "$work/launch" --mca pml ob1 --mca btl tcp,self \
            --mca btl_tcp_if_include 10.77.0.0/24 --mca oob_tcp_if_include 10.77.0.0/24 \
            -x PLACER_MPI_TIMEOUT -x PLACER_PROFILE -x PLACER_GRAPHS -x ASAN_OPTIONS "$@"
    }
    expect 0 "two hosts: train" hosts "$bin" train "$model" --cluster "$ranks2" \
        --plan "$pipeline" --steps 6 --log-every 2 --checkpoint "$work/hosts.ckpt"
    losses "$work/out" >"$work/a"
    losses "$work/p1.out" >"$work/b"
    [ -s "$work/a" ] && cmp -s "$work/a" "$work/b" && cmp -s "$work/hosts.ckpt" "$work/p1.ckpt" &&
        ok || bad "two hosts: not the losses and checkpoint of one process"
    # rank 1 killed (mpirun's to notice) or stopped (rank 0's deadline, over TCP): rank 0, on
    # the other host, ends within the timeout, and it is said
    for fault in KILL STOP; do
        hosts "$bin" train "$model" --cluster "$ranks2" --plan "$pipeline" --steps 1000000 \
            --log-every 1 >"$work/out" 2>"$work/err" &
        job=$!
        victim=$(rank_pid 1 "placer train .*steps 1000000 --log-every 1$")
        stepping "$work/out" || bad "two hosts: no step"
        [ -n "$victim" ] && kill -"$fault" "$victim"
        since=$(date +%s)
        ended_within 8 "two hosts: SIG$fault to rank 1"
        [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
        [ "$status" -ne 0 ] && ok || bad "two hosts: SIG$fault to rank 1: exit 0"
        grep -Eq "rank 1 .* exited on signal 9|rank 0: .* overdue \(PLACER_MPI_TIMEOUT=3\)(: rank 1 has not joined it)?$" \
            "$work/err" && ok ||
            { bad "two hosts: SIG$fault to rank 1: not said"; sed 's/^/    /' "$work/err"; }
    done
    unset PLACER_MPI_TIMEOUT
}
two_hosts

echo "mpi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
