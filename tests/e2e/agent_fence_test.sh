#!/usr/bin/env bash
# End to end: fencing. While the server is stopped (SIGSTOP: to the agents it looks partitioned), an agent
# that cannot heartbeat for most of the server's failure timeout stops its replicas itself; once the server
# runs again (SIGCONT) the job runs again exactly once, and no two attempts ever run at the same time. The stall
# was the server's: the fenced run is requeued without using a retry (the job has none), docs/resiliency.md.
# Usage: agent_fence_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_fence
source "$(dirname "$0")/lib_e2e.sh"

# 4 s: the agent's first heartbeat after the stall must come within a timeout of the server's resuming for the
# stall to be the server's (one interval on an idle machine; the margin is for a loaded one).
start_server --heartbeat-timeout 4
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
cat >"$WORK/fenced.yaml" <<YAML
name: fenced
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 0
command: '$NODE_PID > $WORK/pids/fenced-\$ALLOT_ATTEMPT; echo "attempt \$ALLOT_ATTEMPT"; while :; do sleep 0.2; done'
YAML
"$ALLOT" submit "$WORK/fenced.yaml" >/dev/null
wait_state fenced Running
for _ in $(seq 1 50); do [ -s "$WORK/pids/fenced-0" ] && break; sleep 0.1; done
[ -s "$WORK/pids/fenced-0" ] || fail "the first attempt did not write its pid"
first=$(cat "$WORK/pids/fenced-0")
node=$(job_json fenced | grep -o '"nodes": *\[[^]]*\]' | grep -o 'gpu-[12]')
[ -n "$node" ] || fail "cannot tell where fenced runs"

say "stopping the server (pid $SERVER_PID) with SIGSTOP"
kill -STOP "$SERVER_PID"
# 4 s timeout: SIGTERM at 3 s, SIGKILL at 3.5 s after the last answered heartbeat; allow for a slow machine.
for _ in $(seq 1 100); do gone "$first" && break; sleep 0.1; done
gone "$first" || { kill -CONT "$SERVER_PID"; fail "the agent of $node did not stop its replica while the server was unreachable"; }
# The agent and its watchdog both keep the lease (docs/resiliency.md, "Leases and fencing") and fence at the same
# moment; whichever is first stops the replica and says so, and the agent says it is fenced either way.
fence_said() {
  grep -q "stopping 1 replica(s) so that their restart elsewhere cannot overlap them (fencing)" "$WORK/agent-$node.log" ||
    { grep -q "(watchdog): the agent has not heard from the server within its lease" "$WORK/agent-$node.log" &&
      grep -q "fenced: nothing new starts until the server answers" "$WORK/agent-$node.log"; }
}
for _ in $(seq 1 50); do fence_said && break; sleep 0.1; done
fence_said || { kill -CONT "$SERVER_PID"; fail "the agent should say why it stopped the replica"; }
sleep 0.5
[ -e "$WORK/pids/fenced-1" ] && { kill -CONT "$SERVER_PID"; fail "a second attempt started while the server was stopped"; }
say "resuming the server"
kill -CONT "$SERVER_PID"

for _ in $(seq 1 200); do
  [ "$(job_field fenced state)" = Running ] && [ "$(job_field fenced preemptions)" = 1 ] && [ -s "$WORK/pids/fenced-1" ] && break
  sleep 0.1
done
[ "$(job_field fenced state)" = Running ] || fail "fenced should run again: $(job_field fenced state) $(job_field fenced reason)"
[ "$(job_field fenced preemptions)" = 1 ] || fail "fenced should have been requeued once, not $(job_field fenced preemptions) times"
[ "$(job_field fenced restarts)" = 0 ] || fail "the server's stall should use no retry of fenced: $(job_field fenced restarts) restarts"
events_json=$(curl -s --max-time 5 -H "Authorization: Bearer $ALLOT_TOKEN" "$ALLOT_SERVER/v1/events?since=0")
grep -q "while the server could not hear its agents; requeued without using a retry" <<<"$events_json" ||
  fail "an event should say the fenced run was requeued without a retry: $events_json"
[ -s "$WORK/pids/fenced-1" ] || fail "the second attempt did not start"
grep -q "the server answers again" "$WORK/agent-$node.log" || fail "the agent should report back after fencing"
# Several heartbeats later it is still the one restart, and only the second attempt runs.
sleep 1.5
[ "$(job_field fenced restarts)" = 0 ] || fail "fenced restarted: $(job_field fenced restarts) restarts"
[ "$(job_field fenced preemptions)" = 1 ] || fail "fenced was requeued again: $(job_field fenced preemptions)"
[ "$(job_field fenced state)" = Running ] || fail "fenced stopped running: $(job_field fenced state) $(job_field fenced reason)"
gone "$first" || fail "the first attempt runs again"
gone "$(cat "$WORK/pids/fenced-1")" && fail "the second attempt should be running"
[ -e "$WORK/pids/fenced-2" ] && fail "a third attempt started"
say PASS
