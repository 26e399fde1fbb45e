#!/bin/sh
# Every suite tests/unit registers is a test of its own in `make check`, and every such
# test names a registered suite: Makefile.am's UNIT_SUITES against `tests/unit --list`.
# Fails with the names that differ.
. "${top_srcdir:-.}/tests/shell_lib.sh"

listed=${UNIT_SUITES:?the unit suites (set by make check)}
for test in $listed; do basename "$test" .unit; done | sort >"$work/listed"
if "${top_builddir:-.}/tests/unit" --list >"$work/registered" 2>"$work/err"; then
    ok
else
    bad "tests/unit --list"
    sed 's/^/    /' "$work/err"
fi
sort -o "$work/registered" "$work/registered"
unlisted=$(comm -23 "$work/registered" "$work/listed" | paste -sd ' ' -)
unknown=$(comm -13 "$work/registered" "$work/listed" | paste -sd ' ' -)
[ -s "$work/registered" ] && ok || bad "tests/unit --list names no suite"
[ -z "$unlisted" ] && ok || bad "registered in tests/unit.c, not in UNIT_SUITES (Makefile.am): $unlisted"
[ -z "$unknown" ] && ok || bad "in UNIT_SUITES (Makefile.am), not registered in tests/unit.c: $unknown"
finish unit-list
