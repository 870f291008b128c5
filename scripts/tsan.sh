#!/usr/bin/env bash
# Builds the unit tests with ThreadSanitizer in build-tsan/ (cmake -DALLOT_TSAN=ON) and runs the tests whose
# code runs on several threads: the server's (request threads, the writer, the heartbeat board, the published
# read views), the copy-on-write job table and maps, and admission on a state shared read-only (FitCache*).
# docs/architecture.md lists the threads.
#
#   bash scripts/tsan.sh              build, then run the default filter
#   bash scripts/tsan.sh FILTER       build, then run the tests matching a GoogleTest filter
#
# A race makes the run fail (TSAN_OPTIONS halt_on_error=1), with both stacks in the output. tests/tsan.supp says
# what is suppressed and why (code TSan cannot see into).
# Exit 0: no race found and every test passed; otherwise the failing step's status.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/build-tsan
FILTER=${1:-'Server*:JobTableView*:CowMap*:CowValue*:HeartbeatBoard*:AuthGate*:ReadSeats*:Writer*:FitCache*'}
bash scripts/deps.sh  # the libraries allot itself builds with (gcc's libtsan comes with g++)
# -O1 with line tables: quicker to compile than the main build's -O2 -g, and stacks that name file and line.
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$OUT" -G Ninja -DALLOT_TSAN=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "${launcher[@]}" >/dev/null
echo "tsan.sh: building allot_unit_tests in build-tsan/"
if ! cmake --build "$OUT" -j "$(nproc)" --target allot_unit_tests >"$OUT/build.log" 2>&1; then
  tail -n 40 "$OUT/build.log" >&2
  echo "tsan.sh: FAIL: the ThreadSanitizer build failed (build-tsan/build.log)" >&2
  exit 1
fi
echo "tsan.sh: running $FILTER"
# Tests that start the real server bind loopback ports and write under /tmp, as in the main build.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}" \
  "$OUT/tests/unit/allot_unit_tests" --gtest_filter="$FILTER" --gtest_brief=1
