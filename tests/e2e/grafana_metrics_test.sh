#!/usr/bin/env bash
# deploy/grafana/allot.json against a live server: every metric it queries is in /metrics (grafana_metrics.py).
# Usage: grafana_metrics_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=grafana_metrics
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib_e2e.sh"
start_server
DASHBOARD="$here/../../deploy/grafana/allot.json" timeout 60 /usr/bin/python3 "$here/grafana_metrics.py" ||
  fail "the Grafana dashboard queries metrics the server does not export"
say PASS
