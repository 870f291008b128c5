#!/usr/bin/env bash
# End to end: an agent killed with SIGKILL and started again with the same command line (its saved credential)
# before the server times its node out (issue 33 A). The new agent must not start the attempt its predecessor
# started, not even the rank that had already exited 0: it reports the rank that died with the old agent as lost,
# the server restarts the job (a restart it records), and every (job, rank, attempt) starts once.
# Usage: agent_restart_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_restart
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_marks.sh"

start_server --heartbeat-timeout 20
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
cat >"$WORK/pair.yaml" <<YAML
name: pair
team: team-a
replicas: 2
per_replica: {vcpu: 1}
max_retries: 1
command: '$(mark_command '[ "$RANK" = 1 ] && exit 0')'
YAML
"$ALLOT" submit "$WORK/pair.yaml" >/dev/null
wait_state pair Running
wait_mark pair 0 0
wait_mark pair 1 0
# Rank 1's exit is collected by the agent before it dies; its end may or may not have reached the server.
for _ in $(seq 1 100); do grep_q "replica pair/1#0 exited with code 0" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep_q "replica pair/1#0 exited with code 0" "$WORK/agent-gpu-1.log" || fail "rank 1 should have exited"
rank0=$(mark_pid pair 0 0)
say "killing the agent of gpu-1 (pid $AGENT_PID_gpu_1) with SIGKILL; rank 0 is pid $rank0"
kill -9 "$AGENT_PID_gpu_1"
# Its watchdog ends rank 0 (the replicas die with their agent).
for _ in $(seq 1 100); do gone "$rank0" && break; sleep 0.1; done
gone "$rank0" || fail "rank 0 (pid $rank0) should have died with its agent"
start_agent gpu-1 network-node-layer-3=nn-a
# The new agent reports rank 0 as lost: one restart, recorded, and attempt 1 of both ranks.
for _ in $(seq 1 150); do [ "$(job_field pair restarts)" = 1 ] && break; sleep 0.1; done
[ "$(job_field pair restarts)" = 1 ] || fail "the server should record one restart: $(job_json pair)"
job_json pair | grep_q "replica 0 was lost" || fail "the restart should say rank 0 was lost: $(job_json pair)"
wait_mark pair 0 1
wait_mark pair 1 1
grep_q "replica pair/0#0 was started by the previous agent" "$WORK/agent-gpu-1.log" ||
  fail "the new agent should say it found rank 0's attempt 0 in its journal"
sleep 1  # time for a second start, were there one
check_marks once after:pair@0:pair@1
say PASS
