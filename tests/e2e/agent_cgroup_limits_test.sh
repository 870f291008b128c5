#!/usr/bin/env bash
# End to end, with a real agent (--emulate mode: an ml.g5.8xlarge on this machine):
# 1. Quotas of vCPU and memory: a team whose vCPU (then memory) quota is full waits with reason code quota and a
#    reason naming that resource, while the node's accelerator is free. Runs everywhere.
# 2. Limits: where the agent can give each replica its own cgroup with a memory limit (cgroup v2 delegated, or
#    cgroup v1 writable as root; checked at run time from the node's limits_enforced), a replica that asks for
#    64 MiB and allocates far more is ended by the kernel: its end is reported as oom_killed, the run fails as
#    the job's fault (a retry used, then Failed), the job's reason and event say OOMKilled and the limit, its log
#    says so, and the node stays Schedulable and not suspect; a job of the same request that stays under it
#    succeeds. Skipped (77), saying why, where no memory limit can be written (not root, read-only cgroups,
#    cgroup v2 without the memory controller delegated).
# Usage: agent_cgroup_limits_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_cgroup_limits
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
    sharing: {strategy: DontLend}
  - name: team-q
    allocation:
      - {instance_type: ml.g5.8xlarge, vcpu: 2, memory_gib: 1}
    sharing: {strategy: DontLend}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"

# --- 1. vCPU, then memory quota full: the next job waits, naming the resource.
job() {  # job NAME VCPU MEMORY_GIB
  printf 'name: %s\nteam: team-q\nreplicas: 1\nper_replica: {vcpu: %s, memory_gib: %s}\ncommand: sleep 60\n' "$1" "$2" "$3" >"$WORK/$1.yaml"
  "$ALLOT" submit "$WORK/$1.yaml" >/dev/null || fail "submit $1 failed"
}
waits_for_quota() {  # waits_for_quota JOB WORD: the job stays Pending with reason code quota naming WORD
  local reason=""
  for _ in $(seq 1 50); do
    "$ALLOT" describe "$1" -o json >"$WORK/$1.json"
    grep_q '"reason_code": *"quota"' "$WORK/$1.json" && break
    sleep 0.1
  done
  [ "$(job_field "$1" state)" = Pending ] || fail "$1 should wait: $(cat "$WORK/$1.json")"
  grep_q '"reason_code": *"quota"' "$WORK/$1.json" || fail "$1 should wait with reason code quota: $(cat "$WORK/$1.json")"
  reason=$(grep -o '"reason": *"quota:[^"]*"' "$WORK/$1.json" | head -n1)
  case "$reason" in *"$2"*) ;; *) fail "the reason of $1 should name $2: $reason" ;; esac
  say "$1 waits: $reason"
}
job q-cpu-1 2 0.0625
wait_state q-cpu-1 Running 20
job q-cpu-2 1 0.0625
waits_for_quota q-cpu-2 "vCPU"
# The node's accelerator (and 30 of its 32 vCPUs) are free all the while: the quota holds the job, not the node.
"$ALLOT" cancel q-cpu-2 q-cpu-1 >/dev/null || fail "cancel failed"
wait_state q-cpu-1 Cancelled 20
job q-mem-1 0.5 0.75
wait_state q-mem-1 Running 20
job q-mem-2 0.5 0.5
waits_for_quota q-mem-2 "would hold 1.25 GiB memory"
"$ALLOT" cancel q-mem-2 q-mem-1 >/dev/null || fail "cancel failed"
wait_state q-mem-1 Cancelled 20

# --- 2. Limits on the replica.
summary=$(grep -m1 "cgroups:" "$WORK/agent-gpu-1.log" || true)
node=$("$ALLOT" describe node gpu-1 -o json | tr -d '\n ')
limits=$(echo "$node" | grep -o '"limits_enforced":{[^}]*}' || true)
[ -n "$limits" ] || fail "the node should report limits_enforced: $node"
case "$limits" in
  *'"memory":true'*) say "the agent limits memory ($limits): $summary" ;;
  *)
    say "SKIP (the quota part passed): no memory limit can be written for replicas here ($limits), so the" \
        "out-of-memory end cannot be exercised; the agent said: ${summary:-nothing about cgroups}"
    exit 77 ;;
esac
# 64 MiB asked (the agent's floor for the limit). python3 allocates 256 MiB and touches every page; the swap of
# the replica's cgroup is limited too, so the kernel's out-of-memory killer ends it.
cat >"$WORK/hog.yaml" <<'YAML'
name: hog
team: team-a
replicas: 1
max_retries: 1
per_replica: {vcpu: 1, memory_gib: 0.0625}
command: 'python3 -c "b = bytearray(256 << 20); print(len(b))"'
YAML
cat >"$WORK/modest.yaml" <<'YAML'
name: modest
team: team-a
replicas: 1
max_retries: 0
per_replica: {vcpu: 1, memory_gib: 0.0625}
command: 'head -c 1048576 /dev/zero | tail -n 1 >/dev/null && echo fits'
YAML
"$ALLOT" submit "$WORK/hog.yaml" >/dev/null
wait_state hog Failed 60
"$ALLOT" submit "$WORK/modest.yaml" >/dev/null
wait_state modest Succeeded 60
"$ALLOT" describe hog -o json >"$WORK/hog.json"
grep_q "OOMKilled: replica 0 used more than its memory limit of 64 MiB" "$WORK/hog.json" ||
  fail "the job's reason should say OOMKilled and the limit: $(cat "$WORK/hog.json")"
[ "$(job_field hog retries_used)" = 1 ] || fail "the out-of-memory end should use the job's retry: $(cat "$WORK/hog.json")"
"$ALLOT" events --job hog >"$WORK/hog-events.out"
grep_q "OOMKilled" "$WORK/hog-events.out" || fail "the job's events should say OOMKilled: $(cat "$WORK/hog-events.out")"
"$ALLOT" logs hog >"$WORK/hog.log"
grep -q "allot agent: the out-of-memory killer ended .* it used more than its memory limit of $((64 << 20)) bytes" "$WORK/hog.log" ||
  fail "the log of the killed replica should say why it ended: $(cat "$WORK/hog.log")"
"$ALLOT" logs modest | grep_q -x fits || fail "the job under its limit should run to its end"
grep_q "out-of-memory killer" "$WORK/agent-gpu-1.log" || fail "the agent's log should name the kill too"
# The job's fault, not the node's: no health checks after the exit, the node Schedulable and not suspect.
grep_q "died abnormally" "$WORK/agent-gpu-1.log" && fail "an out-of-memory end should not run the node's checks"
"$ALLOT" nodes >"$WORK/nodes.out"
grep_q "^gpu-1 .*Schedulable" "$WORK/nodes.out" || fail "the node should stay Schedulable: $(cat "$WORK/nodes.out")"
grep_q "Suspect" "$WORK/nodes.out" && fail "the node should not be suspect: $(cat "$WORK/nodes.out")"
# Every replica cgroup is gone once its replica ended.
cgdir=$(echo "$summary" | grep -o 'under [^ ]*' | head -n1 | cut -d' ' -f2)
if [ -n "$cgdir" ] && [ -d "$cgdir" ]; then
  left=$(find "$cgdir" -mindepth 1 -maxdepth 1 -type d -name 'r-*' | wc -l)
  [ "$left" = 0 ] || fail "replica cgroups left behind in $cgdir: $(ls "$cgdir")"
fi

# --- 3. Faults: the agent, its watchdog and the replica's shim (agent/shim.h) killed mid-run. (With the shim alive,
# it ends the replica's tree at once: agent_leftovers_test.sh.) What the replica started outside its process group
# dies with the agent's PID namespace for replicas (agent/pid_namespace.h; where the agent has none, it stays in the
# replica's cgroup); the cgroup stays, and the restarted agent ends what is in it and removes it (every hierarchy).
# The agent is stopped first, so that it does not collect the shim's death and empty the cgroup itself.
[ -n "$cgdir" ] || fail "the agent's summary should name its cgroup directory: $summary"
cgdirs=$(echo "$summary" | grep -o '/sys/fs/cgroup[^ ]*\|/[^ ]*allot-gpu-1-[0-9a-f]*' | sort -u)
mkdir -p "$WORK/pids"
cat >"$WORK/orphan.yaml" <<YAML
name: orphan
team: team-a
replicas: 1
per_replica: {vcpu: 1, memory_gib: 0.0625}
command: '{ $NODE_PID > $WORK/pids/orphan-child; exec setsid sleep 300; } & wait'
YAML
"$ALLOT" submit "$WORK/orphan.yaml" >/dev/null
wait_state orphan Running 20
for _ in $(seq 1 50); do [ -s "$WORK/pids/orphan-child" ] && break; sleep 0.1; done
child=$(cat "$WORK/pids/orphan-child")
watchdog=$(grep -o "watchdog pid [0-9]*" "$WORK/agent-gpu-1.log" | tail -n1 | cut -d' ' -f3)
[ -n "$watchdog" ] || fail "the agent should name its watchdog"
shell=$(awk '{print $4}' "/proc/$child/stat")
shim=$(awk '{print $4}' "/proc/$shell/stat")
[ "$(awk '{print $4}' "/proc/$shim/stat")" = "$AGENT_PID_gpu_1" ] || fail "the replica's shell $shell should run under the agent's shim"
kill -STOP "$AGENT_PID_gpu_1"
kill -9 "$watchdog" "$shim"
for _ in $(seq 1 30); do gone "$shim" && break; sleep 0.1; done
kill -9 "$AGENT_PID_gpu_1"
for _ in $(seq 1 30); do kill -0 "$AGENT_PID_gpu_1" 2>/dev/null || break; sleep 0.1; done
sleep 0.3
in_namespace=""
grep_q "its first process: pid" "$WORK/agent-gpu-1.log" && in_namespace=yes
if [ -n "$in_namespace" ]; then
  # The replicas' PID namespace ended with the agent (agent/pid_namespace.h), and the orphan with it; the cgroup
  # stays, empty, for the restarted agent to remove.
  for _ in $(seq 1 30); do gone "$child" && break; sleep 0.1; done
  gone "$child" || fail "the replica's setsid child should die with its agent (the replicas' PID namespace)"
else
  kill -0 "$child" 2>/dev/null || fail "the replica's setsid child should outlive its agent when its shim is killed too (in its cgroup)"
fi
replica_cg=$(find $cgdirs -mindepth 1 -maxdepth 1 -type d -name 'r-orphan-*' 2>/dev/null)
[ -n "$replica_cg" ] || fail "the replica's cgroup should stay while its agent is dead ($cgdirs)"
[ -n "$in_namespace" ] || grep_q -x "$child" $(echo "$replica_cg" | head -n1)/cgroup.procs || fail "the orphan should be in its replica's cgroup"
start_agent gpu-1 network-node-layer-3=nn-a
for _ in $(seq 1 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
kill -0 "$child" 2>/dev/null && fail "the restarted agent should end the orphan $child"
for d in $replica_cg; do
  for _ in $(seq 1 30); do [ -d "$d" ] || break; sleep 0.1; done
  [ -d "$d" ] && fail "the restarted agent should remove the leftover cgroup $d"
done
say "agent restart: the orphan in $(echo $replica_cg) was ended and its cgroup removed"
say PASS
