#!/usr/bin/env bash
# End to end: an agent frozen (SIGSTOP) longer than the server's heartbeat timeout (issue 33 C). Its watchdog
# stops the replicas when the agent's lease runs out, before the server restarts the job elsewhere, so the old
# replica and its restart never overlap; once thawed the agent starts nothing it had started.
# Usage: agent_frozen_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_frozen
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_marks.sh"

start_server --heartbeat-timeout 3
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
cat >"$WORK/steady.yaml" <<YAML
name: steady
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 1
command: '$(mark_command)'
YAML
"$ALLOT" submit "$WORK/steady.yaml" >/dev/null
wait_state steady Running
wait_mark steady 0 0
first=$(job_json steady | grep -o '"nodes": *\[[^]]*\]' | grep -o 'gpu-[12]')
[ -n "$first" ] || fail "cannot tell where steady runs"
pid_var="AGENT_PID_${first//-/_}"
agent=${!pid_var}
victim=$(mark_pid steady 0 0)
say "freezing the agent of $first (pid $agent, SIGSTOP); its replica is pid $victim"
kill -STOP "$agent"
thaw() { kill -CONT "$agent" 2>/dev/null || true; }
trap 'thaw; cleanup' EXIT
for _ in $(seq 1 150); do [ "$(job_field steady restarts)" = 1 ] && break; sleep 0.1; done
[ "$(job_field steady restarts)" = 1 ] || fail "the server should restart steady once: $(job_json steady)"
wait_mark steady 0 1
# Gone while its agent is still frozen: the watchdog fenced it.
gone "$victim" || fail "the replica of the frozen agent (pid $victim) still runs beside its restart"
grep_q "has not heard from the server within its lease" "$WORK/agent-$first.log" || fail "the watchdog should say it fenced"
thaw
sleep 2  # the thawed agent heartbeats again; it must not start attempt 0 again
check_marks once after:steady@0:steady@1
say PASS
