#!/bin/sh
# The profile's record of its calibration: placer calibrate --check on a missing, fresh,
# noisy, old and foreign profile, and the one warning line a noisy or old profile gives
# each command that uses it. The verdicts are tested on hand-edited figures, so that they do
# not depend on how busy the machine running the tests is.
. "${top_srcdir:-.}/tests/shell_lib.sh"

mlp=$src/graphs/small/mlp-small.json

own_profile mlp

# set FIELD VALUE: a field of the profile's calibration record, edited by hand (the file
# has one field a line).
set_field() {
    sed "s/\"$1\": [^,]*\(,\{0,1\}\)\$/\"$1\": $2\1/" "$PLACER_PROFILE" >"$work/edited.json" &&
        mv "$work/edited.json" "$PLACER_PROFILE"
}

# Missing: exit 1, nothing measured.
expect 1 "check: no profile" "$bin" calibrate --check
contains "$work/out" "profile: $PLACER_PROFILE" "check: no profile"
contains "$work/out" "verdict: missing" "check: no profile"
[ ! -e "$PLACER_PROFILE" ] && ok || bad "check: no profile: it calibrated"
expect 2 "check: not with --force" "$bin" calibrate --check --force
contains "$work/err" "--check measures nothing" "check: not with --force"

# A fresh profile records when, how long and how noisy.
expect 0 "calibrate" "$bin" calibrate -q
contains "$work/out" "measured: " "calibrate"
contains "$work/out" "noise: the two passes disagree by" "calibrate"
for field in measured_at measured_at_utc seconds attempts ops_compared spread_median \
    spread_p90 others_share spread_threshold others_threshold; do
    grep -q "^  \"$field\": " "$PLACER_PROFILE" && ok || bad "calibrate: no field $field"
done
grep -q '"measured_at_utc": "20[0-9][0-9]-[01][0-9]-[0-3][0-9]T[0-9:]*Z"' "$PLACER_PROFILE" &&
    ok || bad "calibrate: measured_at_utc is not ISO 8601"

# Quiet by hand: it serves, exit 0, every line there.
set_field spread_median 0.02
set_field spread_p90 0.1
set_field others_share 0.2
expect 0 "check: a quiet profile" "$bin" calibrate --check
for line in "profile: $PLACER_PROFILE" "machine: cpu=" "threads: the cluster's devices have 1; the profile measured 1" \
    "serves: yes" " s ago) in " "attempt" "disagree by 2.0% at the median and 10.0% at the 90th percentile" \
    "(noisy above 40%" "other work took 20% of the CPU (noisy above 75%)" "verdict: good"; do
    contains "$work/out" "$line" "check: a quiet profile"
done
expect 0 "simulate: a quiet profile" "$bin" simulate "$mlp"
grep -q "warning" "$work/err" && bad "simulate: a quiet profile warned: $(cat "$work/err")" || ok

# Noisy: exit 1, and each command that uses it warns, once, whatever -q says.
set_field others_share 0.9
expect 1 "check: a noisy profile" "$bin" calibrate --check
contains "$work/out" "verdict: noisy: measure again with \`placer calibrate --force\` on a quiet machine" "check: a noisy profile"
expect 0 "simulate: a noisy profile" "$bin" simulate "$mlp"
once "$work/err" "placer: warning: the calibration profile is noisy: other work took 90% of the CPU, over 75%; measured " "simulate: a noisy profile"
contains "$work/err" "run \`placer calibrate --force\` on a quiet machine" "simulate: a noisy profile"
[ "$(wc -l <"$work/err")" -eq 1 ] && ok || bad "simulate: a noisy profile: not one line: $(cat "$work/err")"
expect 0 "baseline: a noisy profile" "$bin" baseline "$mlp" --algo single
once "$work/err" "placer: warning: the calibration profile is noisy" "baseline: a noisy profile"
expect 0 "calibrate -q: a noisy profile" "$bin" calibrate -q
once "$work/err" "placer: warning: the calibration profile is noisy" "calibrate -q: a noisy profile"
set_field others_share 0.2
set_field spread_p90 0.5
set_field ops_compared 100
expect 1 "check: passes that disagree" "$bin" calibrate --check
expect 0 "simulate: passes that disagree" "$bin" simulate "$mlp"
contains "$work/err" "noisy: its two passes disagreed by 50% or more on a tenth of its ops, over 40%" "simulate: passes that disagree"
set_field spread_p90 0.1

# Old: 40 days ago (both forms of the time edited alike).
then=$(( $(date +%s) - 40 * 86400 ))
set_field measured_at "$then"
set_field measured_at_utc "\"$(date -u -d "@$then" +%Y-%m-%dT%H:%M:%SZ)\""
expect 1 "check: an old profile" "$bin" calibrate --check
contains "$work/out" "(40 days ago)" "check: an old profile"
contains "$work/out" "verdict: old (over 30 days or unknown)" "check: an old profile"
expect 0 "simulate: an old profile" "$bin" simulate "$mlp"
once "$work/err" "placer: warning: the calibration profile is old: measured 40 days ago" "simulate: an old profile"

# Another machine's: it does not serve (and is not measured by --check).
sed 's/"machine": "cpu=/"machine": "elsewhere cpu=/' "$PLACER_PROFILE" >"$work/other.json"
cp "$work/other.json" "$PLACER_PROFILE"
expect 1 "check: another machine's profile" "$bin" calibrate --check
contains "$work/out" "serves: no ($PLACER_PROFILE: /machine: measured on another machine" "check: another machine's profile"
contains "$work/out" "verdict: does not serve, old" "check: another machine's profile"
cmp -s "$work/other.json" "$PLACER_PROFILE" && ok || bad "check: the profile changed"


# A profile that cannot be kept is a warning: the command goes on with the one it measured.
mkdir -p "$work/a-folder"
PLACER_PROFILE=$work/a-folder expect 0 "simulate: the profile a folder" "$bin" simulate "$mlp"
once "$work/err" "placer: warning: the calibration profile is not kept (cannot write $work/a-folder: Is a directory)" \
    "simulate: the profile a folder"
contains "$work/out" "predicted step:" "simulate: the profile a folder"

# Calibration with no models to measure is bad input, not a profile that predicts 0 ms.
PLACER_GRAPHS=$work/no-graphs PLACER_PROFILE=$work/none.json expect 2 "no models to calibrate with" \
    "$bin" simulate "$mlp"
contains "$work/err" "no models to calibrate with in $work/no-graphs" "no models to calibrate with"
[ ! -e "$work/none.json" ] && ok || bad "no models to calibrate with: a profile was written"
finish profile
