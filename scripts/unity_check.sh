#!/usr/bin/env bash
# Checks that the unity batches of a cold build (cmake/cold_build.cmake, ALLOT_UNITY) compile, without building:
# configures build-unity-check/ with -DALLOT_UNITY=ON and parses every batch with -fsyntax-only (about 2 minutes
# of CPU, against about 10 for a whole build). Two files of one target that define the same name in an anonymous
# namespace show here as a redefinition or an ambiguous call; under ccache (unity off) they compile. Exit 0 when
# every batch parses, 1 otherwise (the errors are printed).
# Usage: bash scripts/unity_check.sh [-jN [TEXT]]: N jobs (default 2); only the batches whose path holds TEXT.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:--j2}
only=${2:-}
dir=build-unity-check
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOT_UNITY=ON -DALLOT_PCH=OFF \
  -UCMAKE_CXX_COMPILER_LAUNCHER >/dev/null
# The dashboard's batch includes a generated file.
ninja -C "$dir" src/dashboard/dashboard_assets.cpp >/dev/null
python3 - "$dir" "${jobs#-j}" "$only" <<'PY'
import json, re, subprocess, sys
from concurrent.futures import ThreadPoolExecutor
build, jobs, only = sys.argv[1], int(sys.argv[2]), sys.argv[3]
batches = [e for e in json.load(open(f"{build}/compile_commands.json")) if "/Unity/" in e["file"] and only in e["file"]]
def check(e):
    cmd = re.sub(r" -o \S+", " ", e["command"]).replace(" -c ", " -fsyntax-only -w ")
    r = subprocess.run(cmd, shell=True, cwd=e["directory"], capture_output=True, text=True)
    return e["file"], r.returncode, r.stderr
failed = 0
with ThreadPoolExecutor(jobs) as pool:
    for name, rc, err in pool.map(check, batches):
        if rc != 0:
            failed += 1
            print(f"unity_check: {name} does not compile:")
            print("\n".join(l for l in err.splitlines() if "error" in l or "note: previous" in l))
print(f"unity_check: {len(batches) - failed} of {len(batches)} unity batches parse")
sys.exit(1 if failed else 0)
PY
