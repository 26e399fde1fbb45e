#!/bin/sh
# placer partition: the dnn-partitioning instances (graphs/public/dnn-partitioning) all
# read and place; the objective gives the expert splits' max-loads as the paper's program
# does (reference.json); placer's best is within 1% of the paper's optimum on every layer
# graph (placer's own over all ideals where the paper's program did not finish here) and
# never worse than an expert's split; a hand-derived instance; bad input.
. "${top_srcdir:-.}/tests/shell_lib.sh"

bench=$src/graphs/public/dnn-partitioning
tiny=$src/tests/public/tiny.json
tiny_split=$src/tests/public/tiny_split.json

# value NAME: the max-load on the line NAME of the last output.
value() { awk -v name="$1" '$1 == name || ($1 " " $2) == name { print ($1 == name ? $2 : $3) }' "$work/out"; }

# within A B RELATIVE: A <= B * (1 + RELATIVE)
within() { awk -v a="$1" -v b="$2" -v r="$3" 'BEGIN { exit !(a <= b * (1 + r)) }'; }

# A hand-derived split: accelerator 1 holds node 1 (2) and sends its output (0.5);
# accelerator 2 holds nodes 2 and 4 (4 by colour class: 3 + 0.5), receives node 1's output
# (0.5) and node 3's (0.125) and sends node 2's (0.25): 4.375; the CPU runs node 3 (1) and
# pays no communication.
expect 0 "tiny: placed" "$bin" partition "$tiny" --expert "$tiny_split" -o "$work/tiny.out.json"
[ "$(value expert)" = 4.375000000 ] && ok || bad "tiny: expert $(value expert), expected 4.375"
[ "$(value refined)" = 4.375000000 ] && ok || bad "tiny: refined $(value refined), expected 4.375"
[ "$(value bound)" = 3.500000000 ] && ok || bad "tiny: bound $(value bound), expected 3.5"
contains "$work/out" "simulated under the paper's objective" "tiny: labelled"
contains "$work/tiny.out.json" '"maxLoad": 4.375' "tiny: the split written"
expect 0 "tiny: the written split read back" "$bin" partition "$tiny" --expert "$work/tiny.out.json"
[ "$(value expert)" = 4.375000000 ] && ok || bad "tiny: written split $(value expert), expected 4.375"

# Every instance, against the reference figures.
python3 - "$bench/reference.json" >"$work/cases" <<'PY' || bad "reference.json unreadable"
import json, sys
ref = json.load(open(sys.argv[1]))
for name, case in sorted(ref["instances"].items()):
    print(name, case.get("expert") or "-", case.get("expert_max_load") or "-",
          case.get("dp_optimum") or case.get("placer_contiguous_optimum") or "-")
PY
[ "$(wc -l <"$work/cases")" -eq 16 ] && ok || bad "reference.json: not 16 instances"
while read -r name expert expert_load optimum; do
    if [ "$expert" = - ]; then
        expect 0 "$name: placed" "$bin" partition "$bench/$name.json" -o "$work/split.json"
    else
        expect 0 "$name: placed" "$bin" partition "$bench/$name.json" --expert "$bench/$expert" -o "$work/split.json"
        got=$(value expert)
        awk -v a="$got" -v b="$expert_load" 'BEGIN { d = a - b; exit !(d < 1e-8 && d > -1e-8) }' &&
            ok || bad "$name: the expert's max-load $got, the paper's program says $expert_load"
        within "$(value refined)" "$got" 0 && ok || bad "$name: placer $(value refined) is worse than the expert's $got"
    fi
    case $name in
    LayerGraphs/*)
        [ "$optimum" = - ] && bad "$name: reference.json gives no optimum"
        [ "$optimum" = - ] || within "$(value refined)" "$optimum" 0.01 && ok ||
            bad "$name: placer $(value refined) is not within 1% of the paper's optimum $optimum" ;;
    esac
    within "$(value bound)" "$(value refined)" 0 && ok || bad "$name: bound $(value bound) above the split's $(value refined)"
    expect 0 "$name: the split written reads back" "$bin" partition "$bench/$name.json" --expert "$work/split.json" --max-ideals 1
done <"$work/cases"

# Bad input: what and where.
bad_case() { # DESCRIPTION MESSAGE SED-SCRIPT [FILE]: tiny.json edited fails with MESSAGE
    sed "$3" "${4:-$tiny}" >"$work/bad.json"
    expect 2 "$1" "$bin" partition "$work/bad.json"
    once "$work/err" "$2" "$1"
}
bad_case "a node without its latency" "bad.json: /nodes/1: missing field \"fpgaLatency\"" \
    '/"id": 2/s/"fpgaLatency": 3, //'
bad_case "a latency that is a string" "bad.json: /nodes/0/cpuLatency: expected a number" \
    '/"id": 1/s/"cpuLatency": 10/"cpuLatency": "10"/'
bad_case "a negative latency" "bad.json: /nodes/0/cpuLatency:" '/"id": 1/s/"cpuLatency": 10/"cpuLatency": -1/'
bad_case "a flag of 2" "bad.json: /nodes/0/supportedOnFpga:" '/"id": 1/s/"supportedOnFpga": 1/"supportedOnFpga": 2/'
bad_case "two nodes with one id" "bad.json: /nodes/1: node id 1 is also node 0's" '/"id": 2/s/"id": 2/"id": 1/'
bad_case "an edge to no node" "bad.json: /edges/1/destId: no node has id 9" '/"sourceId": 1, "destId": 3/s/3/9/'
bad_case "two costs for one node's output" "bad.json: /edges/1/cost: node 1's out-edges cost 0.5 elsewhere" \
    '/"sourceId": 1, "destId": 3/s/0.5/0.75/'
bad_case "an edge to itself" "bad.json: /edges/0: an edge from node 1 to itself" '/"sourceId": 1, "destId": 2/s/2/1/'
bad_case "a cycle" "bad.json: /edges: the graph has a cycle through node" '/"sourceId": 3, "destId": 4/s/"destId": 4/"destId": 1/'
bad_case "an unknown member" "bad.json: /maxFPGA:" 's/"maxFPGAs"/"maxFPGA"/'
bad_case "more accelerators than the program's table takes" "bad.json: /maxFPGAs: 65 is out of range [0, 64]" \
    's/"maxFPGAs": 2/"maxFPGAs": 65/'
bad_case "no devices" "bad.json: maxFPGAs and maxCPUs are both 0" 's/"maxFPGAs": 2/"maxFPGAs": 0/; s/"maxCPUs": 1/"maxCPUs": 0/'
printf '{"maxSizePerFPGA": 1,' >"$work/cut.json"
expect 2 "a file cut short" "$bin" partition "$work/cut.json"
contains "$work/err" "cut.json:1:" "a file cut short: line and column"

bad_split() { # DESCRIPTION MESSAGE SPLIT-JSON
    printf '%s\n' "$3" >"$work/split-bad.json"
    expect 2 "$1" "$bin" partition "$tiny" --expert "$work/split-bad.json"
    once "$work/err" "$2" "$1"
}
bad_split "a split naming no node of the instance" "split-bad.json: /fpgas/0/nodes/1: the instance has no node 7" \
    '{"fpgas": [{"nodes": [1, 7]}], "cpus": [{"nodes": [2, 3]}]}'
bad_split "a node twice" "split-bad.json: /cpus/0/nodes/0: node 1 is listed twice" \
    '{"fpgas": [{"nodes": [1, 2]}], "cpus": [{"nodes": [1, 3]}]}'
bad_split "more accelerators than the instance has" "split-bad.json: /fpgas: 3 accelerators, and the instance has 2" \
    '{"fpgas": [{"nodes": [1]}, {"nodes": [2]}, {"nodes": [3]}], "cpus": []}'
bad_split "a colour class split" "split-bad.json: nodes 2 and 4 share a colour class but not a device" \
    '{"fpgas": [{"nodes": [1, 2]}, {"nodes": [4]}], "cpus": [{"nodes": [3]}]}'
bad_split "a node nowhere" "split-bad.json: node 3 is in no device's list, nor is any node of its colour class" \
    '{"fpgas": [{"nodes": [1, 2]}], "cpus": []}'
sed 's/"maxSizePerFPGA": 100/"maxSizePerFPGA": 15/' "$tiny" >"$work/small.json"
printf '{"fpgas": [{"nodes": [1, 2]}], "cpus": [{"nodes": [3]}]}\n' >"$work/heavy.json"
expect 2 "a split over an accelerator's memory" "$bin" partition "$work/small.json" --expert "$work/heavy.json"
once "$work/err" "heavy.json: accelerator 1 holds 30 bytes, more than maxSizePerFPGA (15)" "a split over memory"
expect 0 "the memory limit kept" "$bin" partition "$work/small.json" -o "$work/small.out.json"
expect 0 "and the split it writes is within it" "$bin" partition "$work/small.json" --expert "$work/small.out.json"

# Usage.
expect 2 "no instance" "$bin" partition
expect 2 "an output over the instance" "$bin" partition "$tiny" -o "$tiny"
contains "$work/err" "is the instance being read" "an output over the instance"
expect 2 "a bad --max-ideals" "$bin" partition "$tiny" --max-ideals 0
expect 0 "help" "$bin" partition --help
contains "$work/out" "public-benchmark.md" "help names the docs"

finish public
