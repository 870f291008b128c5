#!/usr/bin/env bash
# End to end: an agent learns of new work through its watch (GET /v1/agents/{name}/changes), not at its next
# heartbeat. The agent heartbeats every 120 s and the server's failure timeout is longer still, so a job that
# starts, runs and is reported Succeeded within 60 s of its submission, submitted after the agent's last
# heartbeat, was started by the watch: without it
# the agent would first hear of the job two minutes later.
# Usage: agent_watch_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_watch
source "$(dirname "$0")/lib_e2e.sh"

start_server --heartbeat-timeout 600
write_teams
"$ALLOT" agent --server "$ALLOT_SERVER" --name slow-1 --instance-type ml.g5.8xlarge --labels network-node-layer-3=nn-a \
  --work-dir "$WORK/agents/slow-1" --token-file "$WORK/join-token" --heartbeat-interval 120 --stop-grace 1 $AGENT_USER_FLAGS \
  >>"$WORK/agent-slow-1.log" 2>&1 &
PIDS+=("$!")
for _ in $(seq 1 100); do
  "$ALLOT" nodes 2>/dev/null | grep_q "^slow-1 .*Schedulable" && break
  sleep 0.1
done
"$ALLOT" nodes 2>/dev/null | grep_q "^slow-1 .*Schedulable" || fail "agent slow-1 did not register within 10 s"
# The first job may reach the agent by its first heartbeat, which follows its registration; the second is
# submitted after the first's exit was reported, when the agent's next heartbeat is two minutes away.
for job in first quick; do
  cat >"$WORK/$job.yaml" <<YAML
name: $job
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "$job started"'
YAML
  "$ALLOT" submit "$WORK/$job.yaml" >/dev/null
  wait_state "$job" Succeeded 60
  "$ALLOT" logs "$job" | grep_q "$job started" || fail "the replica's output should be kept: $("$ALLOT" logs "$job")"
done
grep_q "no watch route" "$WORK/agent-slow-1.log" && fail "the agent should have found the watch route"
say PASS
