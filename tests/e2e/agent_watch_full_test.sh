#!/usr/bin/env bash
# End to end: a server whose watches would take more than half of its connections refuses the extra ones (429),
# and the agents refused work on their heartbeats alone. With --max-connections 4, two of the three agents may
# watch; the third says so in its log and still runs the job placed on its node. Heartbeats every 3 s, so that
# their keep-alive connections mostly close between them (after 5 s idle) and leave room for the CLI.
# Usage: agent_watch_full_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_watch_full
source "$(dirname "$0")/lib_e2e.sh"

# Every client here comes from 127.0.0.1, so the per-address share (half by default) would refuse the CLI first.
start_server --heartbeat-timeout 600 --max-connections 4 --max-connections-per-address 4
write_teams
for n in 1 2 3; do
  "$ALLOT" agent --server "$ALLOT_SERVER" --name "w-$n" --instance-type ml.g5.8xlarge --labels network-node-layer-3=nn-a \
    --work-dir "$WORK/agents/w-$n" --token-file "$WORK/join-token" --heartbeat-interval 3 --stop-grace 1 $AGENT_USER_FLAGS \
    >>"$WORK/agent-w-$n.log" 2>&1 &
  PIDS+=("$!")
done
for n in 1 2 3; do
  for _ in $(seq 1 100); do
    "$ALLOT" nodes 2>/dev/null | grep_q "^w-$n .*Schedulable" && break
    sleep 0.1
  done
  "$ALLOT" nodes 2>/dev/null | grep_q "^w-$n .*Schedulable" || fail "agent w-$n did not register within 10 s"
done
# Every agent has heard from the server (its first heartbeat) and tried to watch: two watch, one was refused.
refused=""
for _ in $(seq 1 150); do
  refused=$(grep -l "no room for this agent's watch" "$WORK"/agent-w-*.log 2>/dev/null || true)
  [ -n "$refused" ] && break
  sleep 0.1
done
[ "$(printf '%s\n' $refused | grep -c .)" = 1 ] || fail "exactly one agent should have been refused its watch, not: ${refused:-none}"
# A job on each node (one accelerator each, all three nodes busy): each starts, the refused agent's at a heartbeat.
for n in 1 2 3; do
  cat >"$WORK/job-$n.yaml" <<YAML
name: job-$n
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "job-$n ran"; sleep 1'
YAML
  "$ALLOT" submit "$WORK/job-$n.yaml" >/dev/null || fail "submit job-$n"
done
for n in 1 2 3; do
  wait_state "job-$n" Succeeded 60
  "$ALLOT" logs "job-$n" | grep_q "job-$n ran" || fail "job-$n's output should be kept: $("$ALLOT" logs "job-$n")"
done
say PASS
