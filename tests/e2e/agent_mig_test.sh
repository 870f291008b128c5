#!/usr/bin/env bash
# End to end: an agent emulating a p4de partitioned in 1g.10gb (docs/mig.md) registers as the MIG type, a job of
# two devices gets their MIG UUIDs in CUDA_VISIBLE_DEVICES (stable per node, GPU and device), a whole-GPU job
# does not land there, and when the agent comes back with its GPUs partitioned in 3g.40gb the node joins again as
# that type and the job's reason says its MIG layout changed.
# Usage: agent_mig_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_mig
source "$(dirname "$0")/lib_e2e.sh"

MIG1=ml.p4de.24xlarge.mig-1g.10gb
MIG3=ml.p4de.24xlarge.mig-3g.40gb
start_mig_agent() {
  "$ALLOT" agent --server "$ALLOT_SERVER" --name mig-1 --instance-type "$1" --labels network-node-layer-3=nn-a \
    --work-dir "$WORK/agents/mig-1" --token-file "$WORK/join-token" --heartbeat-interval 0.2 --stop-grace 1 $AGENT_USER_FLAGS \
    >>"$WORK/agent-mig-1.log" 2>&1 &
  AGENT_PID=$!
  PIDS+=("$AGENT_PID")
  for _ in $(seq 1 100); do
    "$ALLOT" nodes 2>/dev/null | grep_q "^mig-1 .*$1.*Schedulable" && return 0
    sleep 0.1
  done
  fail "agent mig-1 did not register as $1 within 10 s: $(tail -n 5 "$WORK/agent-mig-1.log")"
}

start_server --heartbeat-timeout 20
start_mig_agent "$MIG1"
cat >"$WORK/teams.yaml" <<YAML
teams:
  - name: team-a
    allocation:
      - {instance_type: $MIG1, accelerators: 56}
      - {instance_type: $MIG3, accelerators: 16}
      - {instance_type: ml.p4de.24xlarge, accelerators: 8}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
cat >"$WORK/slices.yaml" <<YAML
name: slices
team: team-a
instance_type: $MIG1
per_replica: {accelerators: 2, vcpu: 1, memory_gib: 1}
command: ['/bin/sh', '-c', 'echo "devices=\$CUDA_VISIBLE_DEVICES"; sleep 600']
YAML
"$ALLOT" submit "$WORK/slices.yaml" >/dev/null
wait_state slices Running
log_has slices "devices=MIG-"
devices=$(grep -o 'devices=[^ ]*' "$WORK/slices-logs.out" | head -n1 | sed 's/devices=//')
say "CUDA_VISIBLE_DEVICES=$devices"
echo "$devices" | grep -Eq '^MIG-[0-9a-f-]{36},MIG-[0-9a-f-]{36}$' || fail "two MIG UUIDs expected, got '$devices'"

# A whole-GPU job without a type has no node: it waits, never on mig-1.
cat >"$WORK/whole.yaml" <<YAML
name: whole
team: team-a
per_replica: {accelerators: 1}
command: ['sleep', '600']
YAML
"$ALLOT" submit "$WORK/whole.yaml" >/dev/null
sleep 1
[ "$(job_field whole state)" = Pending ] || fail "a whole-GPU job must not run on a MIG node: $(job_json whole)"

# The agent dies (its watchdog ends the replica), the GPUs are partitioned anew, and the agent starts again.
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
start_mig_agent "$MIG3"
for _ in $(seq 1 50); do job_json slices | grep_q "MIG layout changed" && break; sleep 0.1; done
job_json slices | grep_q "its MIG layout changed from $MIG1 to $MIG3" ||
  fail "the job's reason should say the MIG layout changed: $(job_json slices)"
[ "$(job_field slices state)" != Running ] || fail "slices must not run: no node has 1g.10gb devices now"
say PASS
