#!/bin/sh
# How busy the machine was while placer measured (machine_load.h): with busy loops on
# every core alongside, the main job, placer run, simulate --measure and baseline
# --measure each say so in one warning line
# (whatever -q says), and the summary marks the measurements disturbed. Without them, only
# what holds on any machine is asserted (the test machine may be shared): the shares are
# in range and the line comes once at most.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json
line="placer: warning: other work took "

own_profile mlp
expect 0 "calibrate" "$bin" calibrate -q

# hogs_start / hogs_stop: one busy loop per core, ended by their ids.
hogs=""
hogs_start() {
    for _ in $(seq "$(nproc)"); do
        sh -c 'while :; do :; done' &
        hogs="$hogs $!"
    done
}
hogs_stop() {
    for pid in $hogs; do kill "$pid"; done
    for pid in $hogs; do wait "$pid" 2>/dev/null; done
    hogs=""
}
trap 'hogs_stop; rm -rf "$work"' EXIT

# summary_load FILE: machine_load's judged_share and disturbed, and every measured row's
# others_share, checked in range; prints "SHARE DISTURBED" (or "null false").
summary_load() {
    /usr/bin/python3 - "$1" <<'PY'
import json, sys
summary = json.load(open(sys.argv[1]))
load = summary["machine_load"]
def in_range(x):
    return x is None or 0 <= x <= 1
assert load is not None, "no machine_load"
for key in ("before_share", "measuring_share", "worst_share", "judged_share"):
    assert in_range(load[key]), (key, load[key])
for row in summary["rows"]:
    if row["measurement"]:
        assert in_range(row["measurement"]["others_share"]), row["name"]
print(load["judged_share"], "true" if load["disturbed"] else "false")
PY
}

# Loaded: the main job warns once, even with -q, and its summary says disturbed.
hogs_start
expect 0 "loaded job" "$bin" "$mlp" --budget 3 -q -o "$work/loaded"
hogs_stop
once "$work/err" "$line" "loaded job"
contains "$work/err" "while the plans were measured" "loaded job"
contains "$work/err" "run again on a quiet machine" "loaded job"
read -r share disturbed <<EOF2
$(summary_load "$work/loaded.summary.json")
EOF2
[ "$disturbed" = true ] && ok || bad "loaded job: summary not disturbed (judged share $share)"
contains "$work/loaded.report.md" "How busy the machine was: while the plans were measured" \
    "loaded job: report"

# Loaded: placer run warns once and says the share.
hogs_start
expect 0 "loaded run" "$bin" run "$mlp" --plan "$work/loaded.plan.json" --steps 5 --warmup 1
hogs_stop
once "$work/err" "$line" "loaded run"
contains "$work/err" "while the plan was measured" "loaded run"
contains "$work/out" "machine: other work took " "loaded run"

# Loaded: placer simulate --measure and baseline --measure (one plan, every plan) warn
# once each, and say the share.
hogs_start
expect 0 "loaded simulate" "$bin" simulate "$mlp" --plan "$work/loaded.plan.json" --measure 5
once "$work/err" "$line" "loaded simulate"
contains "$work/err" "while the plan was measured" "loaded simulate"
contains "$work/out" "machine: other work took " "loaded simulate"
expect 0 "loaded baseline" "$bin" baseline "$mlp" --algo single --measure 5
once "$work/err" "$line" "loaded baseline"
contains "$work/out" "machine: other work took " "loaded baseline"
expect 0 "loaded baselines" "$bin" baseline "$mlp" --algo all --measure 3
hogs_stop
once "$work/err" "$line" "loaded baselines"
contains "$work/err" "while the plans were measured" "loaded baselines"

# Quiet as the machine allows: the shares are in range, the line at most once.
expect 0 "quiet job" "$bin" "$mlp" --budget 3 -q -o "$work/quiet"
[ "$(grep -cF -- "$line" "$work/err")" -le 1 ] && ok || bad "quiet job: the line more than once"
summary_load "$work/quiet.summary.json" >/dev/null && ok || bad "quiet job: shares out of range"

finish machine-load
