#!/usr/bin/env bash
# Builds allot and runs the whole test suite (unit tests, scenario files, end-to-end tests) through CTest, all
# but the fuzz targets' smoke run (label fuzz), which builds the libraries a second time with clang and the
# sanitizers: CI runs it after this (.ci/run), and `ctest --test-dir build -L fuzz` runs it here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
# The packages some tests install for themselves when missing (PostgreSQL, Chromium with Selenium, PyTorch,
# Slurm, promtool from prometheus) are fetched while the build runs, in one apt-get run: on a fresh machine the
# downloads overlap the compile instead of following it test by test, and no two tests meet at apt's lock. Nothing
# depends on it working: a test still installs what it needs itself, or is skipped and says why.
test_packages=(postgresql chromium chromium-driver python3-selenium python3-torch slurm-wlm prometheus)
mkdir -p build
bash scripts/deps.sh "${test_packages[@]}" >build/test-deps.log 2>&1 &
deps=$!
build_rc=0
# First the programs every test but the unit tests runs (target suite_programs: the binary, the load generator,
# the e2e programs), so those tests can start while the unit tests compile.
bash scripts/build.sh --target suite_programs || build_rc=$?
deps_rc=0
wait "$deps" || deps_rc=$?
[ "$deps_rc" = 0 ] || echo "test.sh: the tests' packages could not all be installed (build/test-deps.log); the tests that need them install them or are skipped" >&2
[ "$build_rc" = 0 ] || exit "$build_rc"
# The rest of the build (the unit tests, about a third of a cold build's CPU) at a lower CPU priority beside the
# other tests: the end-to-end tests mostly wait on their servers, agents and clocks, and at nice 10 the compiler
# gives them the cores whenever they want them, so their timing is as on an idle machine while the compile uses
# what they leave (bench/RESULTS.md, "Test suite time").
nice -n 10 cmake --build build -j "$(nproc)" >build/unit-build.log 2>&1 &
rest=$!
# Two tests per core. The end-to-end tests wait on their servers, agents and clocks, but each also keeps its server,
# agents and polling shell busy: alone, most use 0.7 to 1.3 cores' worth of CPU over their run (bench/RESULTS.md,
# "Test suite time"). At three per core a loaded CI machine ran them at up to three times their idle time, past
# the timing a few of them need (seven failed in one run). The longest tests are started first (COST); the browser
# and the PyTorch tests count as two (PROCESSORS, tests/e2e/CMakeLists.txt).
# allot_unit_tests_NOT_BUILT, allot_property_tests_NOT_BUILT: the unit tests' placeholders while their programs
# are not built yet (GoogleTest's discovery lists them after the link).
jobs=$(( 2 * $(nproc) ))
tests_rc=0
ctest --test-dir build --output-on-failure -j "$jobs" -LE 'fuzz|unit' -E '^allot_(unit|property)_tests_NOT_BUILT$' "$@" || tests_rc=$?
rest_rc=0
wait "$rest" || rest_rc=$?
if [ "$rest_rc" != 0 ]; then
  cat build/unit-build.log >&2
  exit "$rest_rc"
fi
# The unit tests at three per core, as before: each runs in a process of its own with no agents or CLI around it,
# and none failed at that rate in any cold run (138 s there; 169 s at two per core).
ctest --test-dir build --output-on-failure -j "$(( 3 * $(nproc) ))" -L unit "$@" || tests_rc=$?
exit "$tests_rc"
