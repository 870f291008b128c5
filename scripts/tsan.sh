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
# (JobTableView.EveryViewReadsAsItsMomentUnderRandomChanges runs on one thread, so TSan has nothing to find in it;
# it took 131-244 s under TSan, and the unit tests run it.)
DEFAULT_FILTER='Server*:ConnectionThreads*:JobTableView*:CowMap*:CowValue*:HeartbeatBoard*:AuthGate*:ReadSeats*:Writer*:FitCache*-JobTableView.EveryViewReadsAsItsMomentUnderRandomChanges'
FILTER=${1:-$DEFAULT_FILTER}
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
# The tests run in parallel, one process per core at a time: under TSan a test runs several times slower, and in
# one process they took 513 s on two cores. The few tests that take minutes under TSan each run in a process of
# their own, started first; the rest are split into GoogleTest shards (GTEST_TOTAL_SHARDS/GTEST_SHARD_INDEX), so
# that no two long tests share a process (bench/RESULTS.md, "Test suite time"). Each part's output goes to
# build-tsan/part-K.log and is printed when all have ended.
LONG_TESTS=(ServerStreamedAnswer.ASlowListingStaysOneViewWhileChangesLand  # 103 s under TSan
            ServerStreamedAnswer.AClientThatGoesAwayMidAnswerCostsNothing)  # 77 s
CORES=$(nproc)
parts=()
shard_filter=$FILTER
if [ "$FILTER" = "$DEFAULT_FILTER" ]; then
  parts=("${LONG_TESTS[@]}")
  shard_filter="$FILTER:$(IFS=:; echo "${LONG_TESTS[*]}")"  # FILTER has its negative part already
fi
SHARDS=${TSAN_SHARDS:-$(( 2 * CORES ))}
for ((k = 0; k < SHARDS; k++)); do parts+=("shard:$k"); done
echo "tsan.sh: running $FILTER in ${#parts[@]} processes, $CORES at a time"
# Tests that start the real server bind loopback ports (port 0) and write under /tmp in directories named for
# their process, so the processes share neither.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$ROOT/tests/tsan.supp ${TSAN_OPTIONS:-}"
run_part() {
  local part=$1 log=$OUT/part-$2.log
  case "$part" in
    shard:*) GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=${part#shard:} \
               "$OUT/tests/unit/allot_unit_tests" --gtest_filter="$shard_filter" --gtest_brief=1 >"$log" 2>&1 ;;
    *) "$OUT/tests/unit/allot_unit_tests" --gtest_filter="$part" --gtest_brief=1 >"$log" 2>&1 ;;
  esac
}
source scripts/parallel.sh
run_parallel "$CORES" run_part "${parts[@]}"
status=0
for ((k = 0; k < ${#parts[@]}; k++)); do
  rc=${PARALLEL_EXIT[$k]}
  echo "tsan.sh: ${parts[$k]} (exit $rc):"
  cat "$OUT/part-$k.log"
  if [ "$rc" -ne 0 ]; then status=$rc; fi
done
if [ "$status" -ne 0 ]; then echo "tsan.sh: FAIL: a part failed (its output above)" >&2; fi
exit "$status"
