#!/bin/sh
# Runs one CUnit suite of tests/unit as a test of its own: `make check` names each suite
# tests/suite/NAME.unit (Makefile.am, UNIT_SUITES) and runs this with that name, so that
# the suites run in parallel under `make -j check`. By hand: tests/unit NAME.
name=$(basename "${1:?usage: tests/unit-suite.sh tests/suite/NAME.unit}" .unit)
exec "${top_builddir:-.}/tests/unit" "$name"
