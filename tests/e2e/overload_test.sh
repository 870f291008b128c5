#!/usr/bin/env bash
# End to end, with the fault harness (lib_faults.sh): an anonymous flood must never cost a node its jobs
# (docs/deployment.md, "Overload"). Two real agents run a job; from another address (127.0.0.2) a flood keeps
# three times --max-connections connections open, sending nothing, for longer than the heartbeat timeout; then
# the same with trickled headers. Agents' heartbeats are answered throughout (no node times out, no agent fences,
# the job neither restarts nor fails), and the CLI's submissions from this address are acknowledged.
# Usage: overload_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=overload
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_faults.sh"
command -v python3 >/dev/null || { say "SKIP: python3 is needed for the flood"; exit 77; }

start_server --heartbeat-timeout 3 --max-connections 32
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
printf '{"name": "steady", "team": "team-a", "max_retries": 0, "per_replica": {"accelerators": 1}, "command": "sleep 600"}' |
  "$ALLOT" submit - >/dev/null
wait_state steady Running
port=${ALLOT_SERVER##*:}

stream_start team-a
for mode in idle --trickle; do
  say "flood ($mode): 96 connections from 127.0.0.2 for 8 s (heartbeat timeout 3 s, --max-connections 32)"
  python3 "$(dirname "$0")/flood.py" 127.0.0.2 127.0.0.1 "$port" 96 8 $mode >"$WORK/flood.log" 2>&1 || fail "the flood failed: $(cat "$WORK/flood.log")"
  say "$(cat "$WORK/flood.log")"
  "$ALLOT" nodes >"$WORK/nodes.txt"
  grep_q Unschedulable "$WORK/nodes.txt" && fail "a node timed out under the flood: $(cat "$WORK/nodes.txt")"
done
stream_stop
wrong=$(( $(job_field steady restarts) + $([ "$(job_field steady state)" = Running ] && echo 0 || echo 1) ))
figures overload "$wrong"
grep_q "cannot overlap them (fencing)\|fenced: nothing new starts" "$WORK/agent-gpu-1.log" "$WORK/agent-gpu-2.log" &&
  fail "an agent went unanswered long enough to fence itself under the flood"
[ "$wrong" = 0 ] || fail "the job restarted or failed: $(job_field steady state) $(job_field steady reason)"
say PASS
