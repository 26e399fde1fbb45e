# Shared by the shell tests (sourced): where things are, a scratch directory, and the
# checks. Sets src (source tree), bin (the placer program) and work (removed at exit).
set -u
src=$(cd "${top_srcdir:-.}" && pwd)
bin=$(cd "${top_builddir:-.}" && pwd)/placer
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*"; }

# expect STATUS DESCRIPTION COMMAND...: runs it, output in $work/out and $work/err.
expect() {
    want=$1 what=$2
    shift 2
    "$@" >"$work/out" 2>"$work/err"
    got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$what: exit $got, expected $want"; sed 's/^/    /' "$work/err"; fi
}

contains() { # FILE TEXT DESCRIPTION
    if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' not in output"; sed 's/^/    /' "$1"; fi
}

once() { # FILE TEXT DESCRIPTION: TEXT is in FILE exactly once (an error names its file once)
    n=$(grep -oF -- "$2" "$1" | wc -l)
    if [ "$n" -eq 1 ]; then ok; else bad "$3: '$2' found $n times, expected once"; sed 's/^/    /' "$1"; fi
}

# interrupted DESCRIPTION COMMAND...: runs it in the background, output in $work/out and
# $work/err, sends SIGINT after a second, and expects exit status 130.
interrupted() {
    what=$1
    shift
    "$@" >"$work/out" 2>"$work/err" &
    pid=$!
    sleep 1
    kill -INT "$pid"
    wait "$pid"
    status=$?
    [ "$status" -eq 130 ] && ok || bad "$what: exit $status, expected 130"
}

# own_profile MODEL...: a calibration profile of the test's own (not the user's cache),
# measured on the named small models only (mlp, inception, ...): fast.
own_profile() {
    PLACER_PROFILE=$work/cache/placer/profile.json
    PLACER_GRAPHS=$work/graphs
    export PLACER_PROFILE PLACER_GRAPHS
    mkdir -p "$work/graphs/small"
    for m in "$@"; do cp "$src/graphs/small/$m-small.json" "$work/graphs/small/"; done
}

# render_svg FILE DESCRIPTION: FILE renders with rsvg-convert (librsvg, which refuses XML
# that is not well-formed) to a PNG; skipped, with a message, when rsvg-convert is missing
# (tools/setup installs it).
render_svg() {
    if ! command -v rsvg-convert >/dev/null 2>&1; then
        echo "SKIP: $2: rsvg-convert is missing (tools/setup installs librsvg2-bin)"
        return 0
    fi
    if rsvg-convert -o "$work/render.png" "$1" 2>"$work/render.err" && [ -s "$work/render.png" ]; then
        ok
    else
        bad "$2: rsvg-convert cannot render $1"
        sed 's/^/    /' "$work/render.err"
    fi
    rm -f "$work/render.png"
}

# need_importers NAME: skips the test (exit 77), with a message, unless Debian's python3 has
# the importers' packages; sets py, torch_import and onnx_import.
need_importers() {
    py=/usr/bin/python3
    # PyTorch's tensors of the large models (vgg11: 0.5 GB of weights, a 1 GB copy in
    # float64) in huge pages: faulting them in 4 KiB at a time took most of a check's time
    # on a virtual machine. Inherited by the importers and placer the checks start.
    GLIBC_TUNABLES=${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.malloc.hugetlb=1
    export GLIBC_TUNABLES
    if ! "$py" -c 'import torch, torchvision, onnx, numpy' 2>"$work/err"; then
        echo "SKIP: $1: $(tail -n 1 "$work/err") (tools/setup installs python3-torch," \
            "python3-torchvision and python3-onnx)"
        exit 77
    fi
    torch_import=$src/tools/import-torch
    onnx_import=$src/tools/import-onnx
}

# finish NAME: the tally, in the "N passed, N failed" form test harnesses read.
finish() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
