#!/usr/bin/env bash
# End to end: an agent killed with SIGKILL. The replica's first process dies with the agent (PDEATHSIG), but
# what it started does not: the agent's watchdog ends it at once; and when the watchdog is killed too, the
# restarted agent ends it from the state file in its work directory before it registers.
# Usage: agent_leftovers_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_leftovers
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams

# run_orphans NAME: a job whose replica starts a child; waits until both pids are written.
run_orphans() {
  cat >"$WORK/$1.yaml" <<YAML
name: $1
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'sleep 300 & echo \$! > $WORK/pids/$1-child; echo \$\$ > $WORK/pids/$1-shell; wait'
YAML
  "$ALLOT" submit "$WORK/$1.yaml" >/dev/null
  wait_state "$1" Running
  for _ in $(seq 1 50); do [ -s "$WORK/pids/$1-shell" ] && [ -s "$WORK/pids/$1-child" ] && break; sleep 0.1; done
  [ -s "$WORK/pids/$1-shell" ] && [ -s "$WORK/pids/$1-child" ] || fail "$1 did not write its pids"
  shell=$(cat "$WORK/pids/$1-shell") child=$(cat "$WORK/pids/$1-child")
  grep -q "\"pid\": $shell" "$WORK/agents/gpu-1/replicas.json" ||
    fail "the state file should list $1: $(cat "$WORK/agents/gpu-1/replicas.json")"
}
watchdog_pid() { grep -o "watchdog pid [0-9]*" "$WORK/agent-gpu-1.log" | tail -n1 | cut -d' ' -f3; }
wait_gone() { for _ in $(seq 1 50); do gone "$1" && return 0; sleep 0.1; done; return 1; }

# 1. The agent alone is killed: its watchdog ends the replica's child.
run_orphans first
say "killing the agent (pid $AGENT_PID_gpu_1) with SIGKILL"
kill -9 "$AGENT_PID_gpu_1"
wait_gone "$shell" || fail "the replica's first process should die with its agent"
wait_gone "$child" || fail "the watchdog should have ended the replica's child $child"
# It may come before the kernel has ended the first process, which it then ends too. It writes its line after
# the kill, so the line can trail the child's end: poll for it.
said="\(watchdog\): ended what replica first/0#0 of the previous agent left running: pid\(s\) ([0-9]+ )*$child( |\$)"
for _ in $(seq 1 50); do grep -Eq "$said" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep -Eq "$said" "$WORK/agent-gpu-1.log" ||
  fail "the watchdog should say what it ended"
"$ALLOT" cancel first >/dev/null

# 2. The agent and its watchdog are killed: the child survives until the agent is started again.
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 50); do [ -n "$(watchdog_pid)" ] && break; sleep 0.1; done
run_orphans second
watchdog=$(watchdog_pid)
[ -n "$watchdog" ] || fail "the agent should name its watchdog"
say "killing the watchdog (pid $watchdog) and the agent (pid $AGENT_PID_gpu_1) with SIGKILL"
kill -9 "$watchdog"
wait_gone "$watchdog" || fail "the watchdog $watchdog survived SIGKILL"
kill -9 "$AGENT_PID_gpu_1"
wait_gone "$shell" || fail "the replica's first process should die with its agent"
sleep 0.5
gone "$child" && fail "the replica's child is gone already: the restart would show nothing"
lines_before=$(wc -l <"$WORK/agent-gpu-1.log")
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 100); do grep -q "ended what replica second/0#0" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep -q "ended what replica second/0#0 of the previous agent left running: pid(s) $child" "$WORK/agent-gpu-1.log" ||
  fail "the restarted agent should end the replica's child $child"
wait_gone "$child" || fail "the replica's child $child still runs after the agent restarted"
# The ending comes before the registration.
tail -n +"$((lines_before + 1))" "$WORK/agent-gpu-1.log" >"$WORK/restart.out"
for _ in $(seq 1 50); do grep -q "registered as" "$WORK/restart.out" && break; sleep 0.1; tail -n +"$((lines_before + 1))" "$WORK/agent-gpu-1.log" >"$WORK/restart.out"; done
ended=$(grep -n "ended what replica" "$WORK/restart.out" | head -n1 | cut -d: -f1)
registered=$(grep -n "registered as" "$WORK/restart.out" | head -n1 | cut -d: -f1)
[ -n "$ended" ] && [ -n "$registered" ] && [ "$ended" -lt "$registered" ] ||
  fail "the leftovers should be ended before the agent registers: $(cat "$WORK/restart.out")"
say PASS
