#!/usr/bin/env bash
# Builds the extension with sanitizer coverage into a virtualenv of its own, so
# that the fuzzer is guided by the Rust core's branches and comparisons (a plain
# build shows libFuzzer only the Python harness: a few dozen edges). Debug
# assertions and overflow checks are on: a broken invariant is a panic there,
# which the harness reports as a crash.
#
#   bash tests/fuzz/build_native.sh .venv-fuzz
#   .venv-fuzz/bin/python tests/fuzz/fuzz_scanner.py -dict=tests/fuzz/delimiters.dict -max_total_time=60
#
# The instrumented module needs libFuzzer's symbols, which the harness loads
# first: import it only through the harness. Stable Rust suffices (no nightly).
set -euo pipefail
venv=${1:?usage: build_native.sh VENV}
cd "$(dirname "$0")/../.."
python3 -m venv "$venv"
"$venv/bin/pip" install -q 'maturin>=1.7,<2' 'atheris>=2.3'
rm -rf "$venv/wheels"
# An explicit --target keeps these flags off build scripts and proc macros, which run
# on the host and have no libFuzzer to link against.
host=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cdebug-assertions -Coverflow-checks" \
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/fuzz-native" \
  "$venv/bin/maturin" build -q --release --target "$host" --out "$venv/wheels"
"$venv/bin/pip" install -q --force-reinstall --no-deps "$venv"/wheels/inert-*.whl
