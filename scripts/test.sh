#!/usr/bin/env bash
# Builds allot and runs the whole test suite (unit tests, scenario files, end-to-end tests) through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)" "$@"
