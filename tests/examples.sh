#!/bin/sh
# The installed library as a user meets it: `make install` into a staging directory, then
# every installed header compiled alone and examples/place.c and place.cpp built from the
# staged headers and library only, through the staged placer.pc (shared, and for C also
# static, which needs the .pc's private dependencies), and run. A header that includes
# one not installed, or that C++ cannot read, fails here. Exits 77 (skipped) when all of
# that passed but there is no C++ compiler to check the C++ half with.
. "${top_srcdir:-.}/tests/shell_lib.sh"

stage=$work/stage
inc=$stage${includedir:?set by make check}
lib=$stage${libdir:?set by make check}
cc="${CC:-cc} ${SANITIZER_CFLAGS:-}"
cxx="${CXX:-c++} ${SANITIZER_CFLAGS:-}"
strict="-Wall -Wextra -pedantic -Werror"

expect 0 "make install into a staging directory" \
    ${MAKE:-make} -C "${top_builddir:-.}" install DESTDIR="$stage"
if [ ! -f "$inc/placer/graph.h" ]; then
    bad "no headers in $inc/placer"
    finish examples
    exit 1
fi

# The manual page and the documents --help points at are installed, and the man page
# renders without warnings.
man1=$stage${mandir:?set by make check}/man1/placer.1
[ -f "$man1" ] && ok || bad "no manual page at $man1"
if command -v man >/dev/null 2>&1 && [ -f "$man1" ]; then
    MANWIDTH=80 man --warnings -l "$man1" >/dev/null 2>"$work/man.err" && [ ! -s "$work/man.err" ] \
        && ok || { bad "man -l placer.1 warns"; sed 's/^/    /' "$work/man.err"; }
fi
docs=${docdir:?set by make check}
for c in "" validate dot train run simulate baseline calibrate cluster; do
    "$stage${bindir:?set by make check}/placer" $c --help
done >"$work/help.txt" 2>&1
grep -q "$docs/" "$work/help.txt" && ok || bad "--help does not name $docs"
for doc in $(grep -o "$docs/[a-z-]*\.md" "$work/help.txt" | sort -u) "$docs/model-format.md" \
        "$docs/outputs.md" "$docs/README.md"; do
    [ -f "$stage$doc" ] && ok || bad "--help names $doc, not installed"
done

# pkg-config sees the staged .pc, its paths moved into the staging directory.
PKG_CONFIG_PATH=$stage${pkgconfigdir:?set by make check}
export PKG_CONFIG_PATH
pc="${PKG_CONFIG:-pkg-config} --define-variable=libdir=$lib --define-variable=includedir=$inc"
cflags=$($pc --cflags placer) && ok || bad "pkg-config --cflags placer"
libs=$($pc --libs placer) && ok || bad "pkg-config --libs placer"
cflags=$(echo $cflags)
[ "$cflags" = "-I$inc" ] && ok || bad "placer.pc: Cflags '$cflags', expected -I$inc alone"

# headers LANGUAGE COMPILER: each installed header alone, from <placer/...> only.
headers() {
    for h in "$inc"/placer/*.h; do
        name=placer/$(basename "$h")
        printf '#include <%s>\n' "$name" | $2 -x "$1" $strict -fsyntax-only -I"$inc" - \
            >"$work/header.log" 2>&1 && ok || { bad "<$name> as $1"; sed 's/^/    /' "$work/header.log"; }
    done
}
headers c "$cc -std=c11"

# The C example, on a profile of its own measured on the small MLP (fast).
own_profile mlp
mkdir -p "$work/graphs/clusters"
cp "$src/graphs/clusters/paced-4.json" "$work/graphs/clusters/"
expect 0 "place.c builds" $cc -std=c11 $strict -o "$work/place" "$src/examples/place.c" $cflags $libs
LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH
expect 0 "place: the bundled model, calibrating" "$work/place"
contains "$work/out" "cost model: just calibrated" "place"
expect 0 "place: the bundled model" "$work/place"
for line in "cost model: the cached profile" "mlp-small on paced-4 (4 devices), placed by pipeline-dp" \
    "predicted step: " "lower bound: "; do
    contains "$work/out" "$line" "place"
done
cp "$work/out" "$work/c.out"
expect 2 "place: a missing model" "$work/place" "$work/missing.json"
contains "$work/err" "place: $work/missing.json: " "place: a missing model"
expect 2 "place: an unknown algorithm" "$work/place" "$work/graphs/small/mlp-small.json" \
    "$work/graphs/clusters/paced-4.json" random

# Statically: only libplacer.a where -lplacer is looked for first, so every dependency must
# come from the .pc's private fields.
if [ -f "$lib/libplacer.a" ]; then
    mkdir "$work/static"
    cp "$lib/libplacer.a" "$work/static/"
    expect 0 "place.c links statically" $cc -std=c11 -o "$work/place-static" \
        "$src/examples/place.c" $cflags -L"$work/static" $($pc --static --libs placer)
    expect 0 "place, static" "$work/place-static"
    cmp -s "$work/out" "$work/c.out" && ok || bad "place, static: another output"
fi

# The C++ example, when there is a C++ compiler: the same output.
if ! printf 'int main() { return 0; }\n' | $cxx -x c++ -o "$work/cxx-probe" - >/dev/null 2>&1; then
    echo "SKIP: examples: no working C++ compiler (${CXX:-c++}): the C++ half is not checked"
    finish examples || exit 1
    exit 77
fi
headers c++ "$cxx -std=c++11"
expect 0 "place.cpp builds" $cxx -std=c++11 $strict -o "$work/place-cpp" "$src/examples/place.cpp" \
    $cflags $libs
expect 0 "place-cpp: the bundled model" "$work/place-cpp"
cmp -s "$work/out" "$work/c.out" && ok || { bad "place-cpp: not place.c's output"; diff "$work/c.out" "$work/out"; }
expect 2 "place-cpp: a missing model" "$work/place-cpp" "$work/missing.json"
contains "$work/err" "place: $work/missing.json: " "place-cpp: a missing model"

finish examples
