#!/usr/bin/env bash
# Builds allot if needed and runs `allot demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
exec ./build/allot demo "$@"
