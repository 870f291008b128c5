#!/usr/bin/env bash
# Whether two allot binaries give the same scheduling results: every scenario file's final state (`allot sim run
# --json`, tests/scenarios and its expect-fail/, examples/cluster-640gpu.yaml) and five replays of the bundled traces
# (traces/: today's policy with every baseline, backfill with drawn limits, a locality wait with node failures,
# elastic and in-place jobs, the Philly trace), with wall-time figures left out. For a change that must not change
# behaviour (a speed-up, a refactor): run it with main's binary and the change's.
#
#   bash scripts/same_results.sh OLD_ALLOT NEW_ALLOT [OUT_DIR]
#
# Exit 0: identical; 1: a difference (the diff is printed); 2: bad usage.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_ALLOT NEW_ALLOT [OUT_DIR]" >&2; exit 2; }
cd "$(dirname "$0")/.."
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/allot-same-results.XXXXXX")}
cluster=examples/cluster-640gpu.yaml
# Wall-time keys vary from run to run of one binary; everything else must not.
strip() {
  python3 -c '
import json, sys
def s(o):
    if isinstance(o, dict): return {k: s(v) for k, v in o.items() if not any(w in k for w in ("wall", "elapsed", "cpu_s", "rss"))}
    if isinstance(o, list): return [s(v) for v in o]
    return o
t = sys.stdin.read()
try: print(json.dumps(s(json.loads(t)), indent=1, sort_keys=True))
except ValueError: print(t)'
}
results() {
  local allot=$1 dir=$2
  mkdir -p "$dir"
  for f in tests/scenarios/*.yaml tests/scenarios/expect-fail/*.yaml "$cluster"; do
    local rc=0
    "$allot" sim run --json "$f" >"$dir/run_$(basename "$(dirname "$f")")_$(basename "$f" .yaml).txt" 2>&1 || rc=$?
    echo "rc $rc" >>"$dir/run_$(basename "$(dirname "$f")")_$(basename "$f" .yaml).txt"
  done
  local t=traces/itp/cluster04.csv
  "$allot" sim replay --json --trace $t --cluster $cluster --baseline all | strip >"$dir/replay_today.json"
  "$allot" sim replay --json --trace $t --cluster $cluster --backfill --time-limit-factor 2 --time-limit-factor-max 5 --seed 2 | strip >"$dir/replay_backfill.json"
  "$allot" sim replay --json --trace $t --cluster $cluster --locality-wait 600 --seed 5 --mtbf-hours 500 | strip >"$dir/replay_locality.json"
  "$allot" sim replay --json --trace $t --cluster $cluster --elastic-share 0.3 --in-place-share 0.3 --mtbf-hours 1000 --seed 3 | strip >"$dir/replay_elastic.json"
  "$allot" sim replay --json --trace traces/philly/philly_103959.csv --cluster $cluster --backfill --time-limit-factor 1.5 --baseline backfill-top-class | strip >"$dir/replay_philly.json"
}
results "$(readlink -f "$1")" "$out/old" &
old=$!
results "$(readlink -f "$2")" "$out/new"
wait "$old"
if diff -r "$out/old" "$out/new"; then
  echo "same_results.sh: the same results ($(ls "$out/new" | wc -l) files in $out)"
else
  echo "same_results.sh: the results differ (above; both sets in $out)" >&2
  exit 1
fi
