#!/usr/bin/env bash
# The node listing at 10,000 nodes (issue 25 item 7, "stream large answers"; bench/RESULTS.md, "Large answers in
# pieces"): a server on loopback with NODES static nodes (POST /v1/nodes, three topology labels each), then
# GET /v1/nodes five times one after another and four times at once. Prints each answer's status, time to first
# byte and total time (curl), and the server's resident memory before and its peak (VmHWM) after each phase.
# Usage: bash bench/node_listing_bench.sh PATH/TO/allot [NODES]   (runs it twice to compare two builds: A B A B)
set -euo pipefail
ALLOT=${1:?usage: $0 PATH/TO/allot [NODES]}
NODES=${2:-10000}
DIR=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$DIR"' EXIT
"$ALLOT" server --listen 127.0.0.1:0 --data "$DIR/data" >"$DIR/log" 2>&1 &
pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$DIR/log" | head -n1 || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "node_listing_bench: the server did not start: $(cat "$DIR/log")" >&2; exit 1; }
TOK=$(cat "$DIR/data/admin-token")
curl -sf -o /dev/null -H "Authorization: Bearer $TOK" -H "Content-Type: application/json" -X POST "$url/v1/nodes" \
  -d "{\"nodes\":[{\"name\":\"n[1-$NODES]\",\"instance_type\":\"ml.p5.48xlarge\",\"labels\":{\"network-node-layer-1\":\"a\",\"network-node-layer-2\":\"b\",\"network-node-layer-3\":\"c\"}}]}"
# Started again on its journal, so the memory figures do not carry the registration's.
kill "$pid"
wait "$pid" || true
"$ALLOT" server --listen 127.0.0.1:0 --data "$DIR/data" >"$DIR/log" 2>&1 &
pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$DIR/log" | head -n1 || true)
  [ -n "$url" ] && curl -s -o /dev/null "$url/v1/health" && break
  sleep 0.1
done
mib() { echo $(( $(awk "/^$1:/{print \$2}" "/proc/$pid/status") / 1024 )); }
echo "node_listing_bench: $NODES nodes, $ALLOT"
echo "server RSS before: $(mib VmRSS) MiB"
fmt="status %{http_code} first_byte_s %{time_starttransfer} total_s %{time_total} bytes %{size_download}\n"
for _ in 1 2 3 4 5; do
  curl -s -o /dev/null -w "one at a time: $fmt" -H "Authorization: Bearer $TOK" "$url/v1/nodes"
done
echo "server peak after one at a time: $(mib VmHWM) MiB"
cpids=()
for _ in 1 2 3 4; do
  curl -s -o /dev/null -w "four at once: $fmt" -H "Authorization: Bearer $TOK" "$url/v1/nodes" &
  cpids+=($!)
done
wait "${cpids[@]}"
echo "server peak after four at once: $(mib VmHWM) MiB"
