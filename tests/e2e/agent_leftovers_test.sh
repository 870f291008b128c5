#!/usr/bin/env bash
# End to end: an agent killed with SIGKILL. Each replica runs under a shim of its own (agent/shim.h), the agent's
# child, which ends the replica's whole tree when the agent dies: with the watchdog killed too, a background child
# and a setsid'd double-forked grandchild are gone within a second or two, before any agent starts again. The
# watchdog ends what is left when the agent alone dies; and when the shim is killed too (with the agent and the
# watchdog), the replica's first process dies with the shim (PDEATHSIG) and what it started with the replicas' PID
# namespace (agent/pid_namespace.h); the restarted agent's sweep, from the state file in its work directory, comes
# before it registers (and ends those processes where the agent had no namespace).
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
command: '{ $NODE_PID > $WORK/pids/$1-child; exec sleep 300; } & $NODE_PID > $WORK/pids/$1-shell; wait'
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

# 1. The agent alone is killed: the replica's shim and the agent's watchdog end the replica's child.
run_orphans first
say "killing the agent (pid $AGENT_PID_gpu_1) with SIGKILL"
kill -9 "$AGENT_PID_gpu_1"
wait_gone "$shell" || fail "the replica's first process should die with its agent"
wait_gone "$child" || fail "the shim and the watchdog should have ended the replica's child $child"
# Both end it: the replica's shim at once (it gets a signal when the agent dies), the watchdog once it has the
# agent's lock; whichever comes first. The watchdog writes its line after its sweep, so the line can trail the
# child's end: poll for it.
said="\(watchdog\): (ended what replica first/0#0 of the previous agent left running: pid\(s\) [0-9 ]+|replica first/0#0 of the previous agent left nothing behind)"
for _ in $(seq 1 50); do grep -Eq "$said" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep -Eq "$said" "$WORK/agent-gpu-1.log" ||
  fail "the watchdog should say what it found of the replica"
"$ALLOT" cancel first >/dev/null

# 2. The agent and its watchdog are killed: the shim ends the replica's whole tree, a setsid'd grandchild included,
# before anything restarts. The replica (another uid when the agent is root) cannot kill its shim.
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 50); do [ -n "$(watchdog_pid)" ] && break; sleep 0.1; done
# As root the agent runs it as another uid, which must not be able to kill its shim; as a user it is the same uid.
try_kill='echo skipped'
# Its parent as the node's /proc names it ($PPID is 0 in the replicas' PID namespace, whose processes cannot name
# the shim at all).
[ "$(id -u)" = 0 ] && try_kill='read -r _ _ _ pp _ </proc/self/stat; if kill -KILL $pp 2>/dev/null; then echo yes; else echo no; fi'
cat >"$WORK/tree.yaml" <<YAML
name: tree
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: '$try_kill > $WORK/pids/tree-killed-shim; { $NODE_PID > $WORK/pids/tree-child; exec sleep 300; } & setsid sh -c "{ read -r me _ </proc/self/stat; echo \\\$me > $WORK/pids/tree-grand; exec sleep 301; } &"; $NODE_PID > $WORK/pids/tree-shell; wait'
YAML
"$ALLOT" submit "$WORK/tree.yaml" >/dev/null
wait_state tree Running
for f in shell child grand; do
  for _ in $(seq 1 50); do [ -s "$WORK/pids/tree-$f" ] && break; sleep 0.1; done
  [ -s "$WORK/pids/tree-$f" ] || fail "the replica did not write its $f's pid"
done
shell=$(cat "$WORK/pids/tree-shell") child=$(cat "$WORK/pids/tree-child") grand=$(cat "$WORK/pids/tree-grand")
shim=$(awk '{print $4}' "/proc/$shell/stat")
[ "$(awk '{print $4}' "/proc/$shim/stat")" = "$AGENT_PID_gpu_1" ] || fail "the replica's parent $shim should be the agent's child"
# Orphans go to the shim (a subreaper), or in the replicas' PID namespace (agent/pid_namespace.h) to its first process.
adopter=$shim adopter_name="the shim"
init=$(grep -o "its first process: pid [0-9]*" "$WORK/agent-gpu-1.log" | tail -n1 | awk '{print $NF}')
[ -n "$init" ] && adopter=$init adopter_name="the first process of the replicas' PID namespace"
for _ in $(seq 1 50); do [ "$(awk '{print $4}' "/proc/$grand/stat" 2>/dev/null)" = "$adopter" ] && break; sleep 0.1; done
[ "$(awk '{print $4}' "/proc/$grand/stat")" = "$adopter" ] || fail "the setsid'd grandchild $grand should be reparented to $adopter_name ($adopter)"
[ "$(awk '{print $5}' "/proc/$grand/stat")" != "$shell" ] || fail "the grandchild should have left the replica's group"
if [ "$(id -u)" = 0 ]; then
  [ "$(cat "$WORK/pids/tree-killed-shim")" = no ] || fail "the replica (another uid) could kill its shim"
  gone "$shim" && fail "the shim is gone"
fi
watchdog=$(watchdog_pid)
[ -n "$watchdog" ] || fail "the agent should name its watchdog"
say "killing the watchdog (pid $watchdog) and the agent (pid $AGENT_PID_gpu_1) with SIGKILL"
kill -9 "$watchdog"
wait_gone "$watchdog" || fail "the watchdog $watchdog survived SIGKILL"
kill -9 "$AGENT_PID_gpu_1"
t0=$(date +%s%N)
for p in "$shell" "$child" "$grand" "$shim"; do
  for _ in $(seq 1 20); do gone "$p" && break; sleep 0.1; done
  gone "$p" || fail "process $p of the replica (shell $shell, child $child, grandchild $grand, shim $shim) outlived its agent by 2 s"
done
say "the replica's tree was gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after the agent's SIGKILL"
for _ in $(seq 1 50); do grep -q "allot replica shim: ended replica pid $shell" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep -q "allot replica shim: the agent (pid $AGENT_PID_gpu_1) is gone" "$WORK/agent-gpu-1.log" ||
  fail "the shim should say why it ends the replica"
"$ALLOT" cancel tree >/dev/null

# 3. The shim, the watchdog and the agent are all killed: the replica's first process dies with its shim, and what
# it started dies with the agent's PID namespace for replicas; where the agent has none (not root), it survives until
# the agent is started again, whose sweep ends it. The agent is stopped first, so that it does not collect the
# shim's death and end the group itself.
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 50); do [ -n "$(watchdog_pid)" ] && break; sleep 0.1; done
run_orphans second
watchdog=$(watchdog_pid)
[ -n "$watchdog" ] || fail "the agent should name its watchdog"
shim=$(awk '{print $4}' "/proc/$shell/stat")
say "killing the watchdog (pid $watchdog), the shim (pid $shim) and the agent (pid $AGENT_PID_gpu_1) with SIGKILL"
kill -STOP "$AGENT_PID_gpu_1"
kill -9 "$watchdog"
wait_gone "$watchdog" || fail "the watchdog $watchdog survived SIGKILL"
kill -9 "$shim"
wait_gone "$shim" || fail "the shim $shim survived SIGKILL"
in_namespace=""
grep_q "its first process: pid" "$WORK/agent-gpu-1.log" && in_namespace=yes
kill -9 "$AGENT_PID_gpu_1"
t0=$(date +%s%N)
wait_gone "$shell" || fail "the replica's first process should die with its shim"
if [ -n "$in_namespace" ]; then
  # The replicas' PID namespace ends with the agent (agent/pid_namespace.h): the child goes at once, before any
  # agent starts again.
  wait_gone "$child" || fail "the replica's child $child outlived the agent, its watchdog and its shim by 5 s"
  say "agent, watchdog and shim killed: the replica's child was gone $(( ($(date +%s%N) - t0) / 1000000 )) ms after the agent's SIGKILL (the replicas' PID namespace)"
  expected="replica second/0#0 of the previous agent left nothing behind"
else
  sleep 0.5
  gone "$child" && fail "the replica's child is gone already: the restart would show nothing"
  expected="ended what replica second/0#0 of the previous agent left running: pid(s) $child"
fi
lines_before=$(wc -l <"$WORK/agent-gpu-1.log")
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 100); do grep -q "$expected" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep -q "$expected" "$WORK/agent-gpu-1.log" || fail "the restarted agent should say: $expected"
wait_gone "$child" || fail "the replica's child $child still runs after the agent restarted"
# The ending comes before the registration.
tail -n +"$((lines_before + 1))" "$WORK/agent-gpu-1.log" >"$WORK/restart.out"
# Up to 20 s: a loaded machine (CI's) stretches the restarted agent's registration. A line not found leaves its
# variable empty and the check below says so (with pipefail a failed grep would otherwise end the test silently).
for _ in $(seq 1 200); do grep -q "registered as" "$WORK/restart.out" && break; sleep 0.1; tail -n +"$((lines_before + 1))" "$WORK/agent-gpu-1.log" >"$WORK/restart.out"; done
ended=$(grep -n "ended what replica\|left nothing behind" "$WORK/restart.out" | head -n1 | cut -d: -f1 || true)
registered=$(grep -n "registered as" "$WORK/restart.out" | head -n1 | cut -d: -f1 || true)
[ -n "$ended" ] && [ -n "$registered" ] && [ "$ended" -lt "$registered" ] ||
  fail "the leftovers should be ended before the agent registers: $(cat "$WORK/restart.out")"

# 4. The namespace's init killed while the agent lives (by hand: nothing inside can signal it): every replica in it
# dies, the agent says so, and the next replica starts in a new namespace.
if [ -n "$in_namespace" ]; then
  for _ in $(seq 1 50); do [ -n "$(watchdog_pid)" ] && break; sleep 0.1; done
  run_orphans third
  init=$(grep -o "its first process: pid [0-9]*" "$WORK/agent-gpu-1.log" | tail -n1 | awk '{print $NF}' || true)
  [ "$(readlink "/proc/$shell/ns/pid")" = "$(readlink "/proc/$init/ns/pid")" ] ||
    fail "replica third ($shell) should run in the namespace of init $init"
  say "killing the init (pid $init) of the replicas' PID namespace"
  kill -9 "$init"
  wait_gone "$shell" || fail "the replica's first process $shell outlived its namespace's init"
  wait_gone "$child" || fail "the replica's child $child outlived its namespace's init"
  for _ in $(seq 1 50); do grep -q "the replicas' PID namespace ended (its first process, pid $init" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
  grep -q "the replicas' PID namespace ended (its first process, pid $init, was killed by signal 9)" "$WORK/agent-gpu-1.log" ||
    fail "the agent should say that the replicas' PID namespace ended"
  wait_state third Failed
  run_orphans fourth
  new_init=$(grep -o "its first process: pid [0-9]*" "$WORK/agent-gpu-1.log" | tail -n1 | awk '{print $NF}' || true)
  [ -n "$new_init" ] && [ "$new_init" != "$init" ] || fail "the agent should make a new namespace for the next replica"
  [ "$(readlink "/proc/$shell/ns/pid")" = "$(readlink "/proc/$new_init/ns/pid")" ] ||
    fail "replica fourth ($shell) should run in the new namespace of init $new_init"
  "$ALLOT" cancel fourth >/dev/null
fi
say PASS
