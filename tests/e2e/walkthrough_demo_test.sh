#!/usr/bin/env bash
# End to end: `allot demo --no-keep` runs its whole walkthrough and stops everything it started.
# Usage: walkthrough_demo_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=walkthrough_demo
source "$(dirname "$0")/lib_e2e.sh"

# A free port: the demo's default 7070 may be taken by a developer's own server.
timeout 90 "$ALLOT" demo --no-keep --data "$WORK/demo" --listen 127.0.0.1:0 >"$WORK/demo.log" 2>&1 \
  || fail "allot demo --no-keep failed"
for step in "1. Submission and borrowing" "2. Reclaim" "3. Priorities inside a team" "5. Topology-aware placement" \
            "a-train: Suspended" "b-ring: Running" "6. A node fails" "b-ring restarted once" "resumed from step" \
            "never fits: topology" "servers and agents are stopped|agents are stopped" \
            "web +http://127.0.0.1:[0-9]+/ +\(the dashboard: log in with the admin token"; do
  grep -Eq "$step" "$WORK/demo.log" || fail "the demo did not show '$step'"
done
[ ! -f "$WORK/demo/pids" ] || fail "the pid file should be gone after --no-keep"
for p in $(grep -o "pid [0-9]*" "$WORK/demo.log" | cut -d' ' -f2); do gone "$p" || fail "server $p still runs"; done
say PASS
