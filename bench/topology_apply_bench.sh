#!/usr/bin/env bash
# EC2 topology on live nodes (docs/topology.md, "Live nodes"): what `allot topology apply` costs against a real
# server. A server on SQLite gets N static nodes carrying instance ids (racks of 100 under layer-3 network nodes);
# then, --reps times, an apply that moves every node to another layer-3 network node (one journal record of N
# nodes; the tree rebuilt once) and one that moves a single node (bodies up to 16 MiB: --max-body-bytes). Prints the median wall time of the whole CLI
# call (read and check the file, send, match, journal, answer) per size, and the server's RSS.
#   bench/topology_apply_bench.sh PATH/TO/allot [SIZES (default 1000,10000)] [REPS (default 3)]
set -euo pipefail
ALLOT=$(realpath "${1:?usage: $0 PATH/TO/allot [SIZES] [REPS]}")
SIZES=${2:-1000,10000}
REPS=${3:-3}
WORK=$(mktemp -d)
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$WORK"' EXIT

inst() { printf '{"InstanceId": "i-%d", "InstanceType": "p5.48xlarge", "NetworkNodes": ["nn-1", "nn-2-%d", "nn-3-%d-%d"], "AvailabilityZone": "us-east-1a"}' "$1" $(($1 / 1000)) $(($1 / 100)) "$2"; }
file() {  # file N SHIFT
  local n=$1 shift=$2 i sep=""
  printf '{"Instances": ['
  for ((i = 0; i < n; i++)); do printf '%s' "$sep"; inst "$i" "$shift"; sep=", "; done
  printf ']}\n'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
now() { date +%s.%N; }

printf '%-8s  %-24s  %-24s  %s\n' nodes "apply all (s, median)" "apply one (s, median)" "server RSS (MiB)"
for n in ${SIZES//,/ }; do
  rm -rf "$WORK/server"
  "$ALLOT" server --listen 127.0.0.1:0 --data "$WORK/server" --max-body-bytes 16777216 >"$WORK/server.log" 2>"$WORK/server.err" &
  SERVER=$!
  url=""
  for _ in $(seq 1 100); do url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$WORK/server.log" | head -n1 || true); [ -n "$url" ] && break; sleep 0.1; done
  export ALLOT_SERVER=$url ALLOT_TOKEN=$(cat "$WORK/server/admin-token")
  # In files of 2,000 nodes: `allot nodes apply` sends one request per file, at most 1 MiB each.
  for ((first = 0; first < n; first += 2000)); do
    {
      echo "nodes:"
      for ((i = first; i < n && i < first + 2000; i++)); do
        echo "  - {name: n-$i, instance_type: ml.p5.48xlarge, labels: {allot.dev/instance-id: i-$i, network-node-layer-3: nn-3-$((i / 100))-0}}"
      done
    } >"$WORK/nodes.yaml"
    "$ALLOT" nodes apply "$WORK/nodes.yaml" >/dev/null
  done
  all=() one=()
  for ((r = 1; r <= REPS; r++)); do
    file "$n" "$r" >"$WORK/all.json"
    echo "{\"Instances\": [$(inst 0 $((r + 1000)))]}" >"$WORK/one.json"
    t0=$(now); "$ALLOT" topology apply "$WORK/all.json" >/dev/null 2>&1; t1=$(now)
    "$ALLOT" topology apply "$WORK/one.json" >/dev/null 2>&1; t2=$(now)
    all+=("$(echo "$t1 - $t0" | bc)") one+=("$(echo "$t2 - $t1" | bc)")
  done
  rss=$(awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$SERVER/status")
  printf '%-8s  %-24s  %-24s  %s\n' "$n" "$(printf '%s\n' "${all[@]}" | median) (${all[*]})" "$(printf '%s\n' "${one[@]}" | median)" "$rss"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""
done
