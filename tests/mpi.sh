#!/bin/sh
# placer across processes: run and train under mpirun with 2 and 4 ranks give what one
# process gives (losses, checkpoints to the byte), replicas all-reduce across ranks, the
# rank count is checked, and a rank that dies ends the others.
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
kill -INT "$job"
wait "$job"
[ -s "$work/cut.plan.json" ] && [ -s "$work/cut.report.md" ] && ok ||
    { bad "Ctrl-C on mpirun: no plan written"; sed 's/^/    /' "$work/err"; }

# A rank killed mid-run ends the others within 10 seconds, with an error.
mpi 2 "$bin" train "$model" --cluster "$src/graphs/clusters/paced-4-ranks-2.json" \
    --plan "$pipeline" --steps 100000 -q >"$work/out" 2>"$work/err" &
job=$!
victim=""
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
    sleep 0.5
    for pid in $(pgrep -f "placer train .*paced-4-ranks-2"); do
        tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 &&
            victim=$pid
    done
    [ -n "$victim" ] && break
done
if [ -z "$victim" ]; then
    bad "a killed rank: rank 1 never started"
    kill "$job" 2>/dev/null
else
    sleep 2
    kill -KILL "$victim"
    killed_at=$(date +%s)
    status=0
    wait "$job" || status=$?
    took=$(($(date +%s) - killed_at))
    [ "$status" -ne 0 ] && ok || bad "a killed rank: mpirun exited 0"
    [ "$took" -le 10 ] && ok || bad "a killed rank: the others ended after $took s"
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
grep -Eq "rank [01]: (a message .* rank [01] \(tag [0-9]+\)|a barrier|an all-reduce|a broadcast from rank 0) is [0-9]+ s overdue \(PLACER_MPI_TIMEOUT=2\)" "$work/err" &&
    ok || { bad "a stopped rank: no error naming it"; sed 's/^/    /' "$work/err"; }

echo "mpi: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
