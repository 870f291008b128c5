#!/usr/bin/env bash
# deploy/grafana/allot.json against a live server (grafana_metrics.py): every metric it queries is in /metrics,
# `promtool check metrics` passes on /metrics, no panel adds instance types together, every panel follows the
# team and instance-type selectors its metrics have, and a real Prometheus scraping the server answers every
# panel's queries (and nothing for a team or an instance type that does not exist). One agent runs its health
# checks so that their series exist; it is cordoned, so the cluster the script builds is the same as without it.
# Needs promtool and prometheus (Debian's prometheus package, installed through scripts/deps.sh when missing; the
# test is skipped only when it cannot be installed).
# Usage: grafana_metrics_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=grafana_metrics
here=$(cd "$(dirname "$0")" && pwd)
if ! bash "$here/../../scripts/deps.sh" prometheus >/dev/null 2>&1 || ! [ -x /usr/bin/promtool ] || ! [ -x /usr/bin/prometheus ]; then
  echo "$TEST_NAME: SKIP: promtool and prometheus (Debian's prometheus package) could not be installed"
  exit 77
fi
source "$here/lib_e2e.sh"
# The Prometheus grafana_metrics.py starts, should the script end without stopping it.
test_cleanup() { [ -s "$WORK/prometheus/pid" ] && kill -9 "$(cat "$WORK/prometheus/pid")" 2>/dev/null || true; }
start_server
mkdir -p "$WORK/faults"
: >"$WORK/faults/gpu-1"
start_agent gpu-1 network-node-layer-3=nn-a --health-interval 0.3 --emulate-faults "$WORK/faults/gpu-1"
"$ALLOT" node cordon gpu-1 >/dev/null || fail "cannot cordon gpu-1"
DASHBOARD="$here/../../deploy/grafana/allot.json" PROMTOOL=/usr/bin/promtool PROMETHEUS=/usr/bin/prometheus WORK="$WORK" timeout 150 /usr/bin/python3 "$here/grafana_metrics.py" ||
  fail "the Grafana dashboard or /metrics failed its checks (above)"
say PASS
