#!/usr/bin/env bash
# End to end: cancelling a running job stops its processes, including the children they spawned (the agent
# signals each replica's process group).
# Usage: agent_cancel_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_cancel
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
cat >"$WORK/doomed.yaml" <<YAML
name: doomed
team: team-a
replicas: 2
per_replica: {accelerators: 1}
command: '{ $NODE_PID > $WORK/pids/child-\$RANK; exec sleep 300; } & $NODE_PID > $WORK/pids/shell-\$RANK; wait'
YAML
"$ALLOT" submit "$WORK/doomed.yaml" >/dev/null
wait_state doomed Running
for _ in $(seq 1 50); do [ -s "$WORK/pids/shell-1" ] && [ -s "$WORK/pids/child-0" ] && break; sleep 0.1; done
pids=""
for f in shell-0 shell-1 child-0 child-1; do
  [ -s "$WORK/pids/$f" ] || fail "replica did not write $f"
  pids="$pids $(cat "$WORK/pids/$f")"
done
for p in $pids; do gone "$p" && fail "process $p should be running before the cancel"; done
"$ALLOT" cancel doomed | grep_q "doomed: Cancelled" || fail "cancel output"
wait_state doomed Cancelled
for _ in $(seq 1 50); do
  left=""
  for p in $pids; do gone "$p" || left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "processes still running after the cancel:$left"
say PASS
