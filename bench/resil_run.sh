#!/usr/bin/env bash
# A 10-minute run of a live emulated cluster with injected faults (docs/resiliency.md): 6 emulated nodes, two
# 2-replica training jobs that checkpoint every step into ALLOT_CHECKPOINT_DIR (declared checkpoint_interval 10 s:
# they save a step a second, but the server counts work as kept only every 10 s), and one fault every 75 s on a
# node that runs a job, in turn: xid 79 (replacement), ecc (reboot), the agent killed (silent, then replaced),
# ecc persistent (reboot, then replacement). Prints, per fault, the time from the fault to the job running again,
# and at the end each job's restarts, work lost and goodput, and the teams' goodput from /metrics.
# Not run by the tests. Usage: bench/resil_run.sh PATH/TO/allot [SECONDS]
ALLOT=${1:?usage: $0 PATH/TO/allot [SECONDS]}
DURATION=${2:-600}
TEST_NAME=resil_run
source "$(dirname "$0")/../tests/e2e/lib_e2e.sh"
source "$(dirname "$0")/../tests/e2e/lib_resil.sh"
export ALLOT_EMULATED_AGENT_FLAGS="--heartbeat-interval 0.5 --health-interval 1 --deep-check-seconds 2 --stop-grace 1 $AGENT_USER_FLAGS"
start_server --heartbeat-timeout 5 --fault-window 1 --reboot-timeout 30 --replace-silent-after 15 \
  --provisioner "$REPO/scripts/provision-emulated.sh"
for i in 1 2 3 4 5 6; do
  : >"$WORK/faults/gpu-$i"
  # As start_agent, with a heartbeat every 0.5 s and health checks every second.
  "$ALLOT" agent --server "$ALLOT_SERVER" --name "gpu-$i" --instance-type ml.g5.8xlarge \
    --labels "network-node-layer-3=nn-$(( (i + 2) / 3 ))" --work-dir "$WORK/agents/gpu-$i" --token-file "$WORK/join-token" \
    $ALLOT_EMULATED_AGENT_FLAGS --emulate-faults "$WORK/faults/gpu-$i" >>"$WORK/agent-gpu-$i.log" 2>&1 &
  PIDS+=("$!")
  eval "AGENT_PID_gpu_$i=$!"
done
for _ in $(seq 1 150); do [ "$("$ALLOT" nodes 2>/dev/null | grep -c Schedulable)" = 6 ] && break; sleep 0.1; done
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: research
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 6}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null
for job in train-a train-b; do
  cat >"$WORK/$job.yaml" <<YAML
name: $job
team: research
replicas: 2
per_replica: {accelerators: 1}
max_retries: 20
checkpoint_interval: 10
command: |
  f=\$ALLOT_CHECKPOINT_DIR/rank-\$RANK; step=0
  if [ -f \$f ]; then step=\$(cat \$f); echo "resumed from step \$step (restart \$ALLOT_RESTART_COUNT)"; fi
  while :; do step=\$((step+1)); sleep 1; echo \$step >\$f.tmp; mv \$f.tmp \$f; echo "step \$step"; done
YAML
  "$ALLOT" submit "$WORK/$job.yaml" >/dev/null
  wait_state "$job" Running
done
start=$(date +%s)
faults=("xid 79 gpu 0" "ecc gpu 0" "kill" "ecc gpu 0 persistent")
k=0
while [ $(( $(date +%s) - start + 75 )) -le "$DURATION" ]; do
  sleep 75
  job=$([ $((k % 2)) = 0 ] && echo train-a || echo train-b)
  [ "$(job_field "$job" state)" = Running ] || { say "$job is not running; skipping a fault"; k=$((k + 1)); continue; }
  node=$(job_nodes "$job"); node=${node%% *}
  fault=${faults[$((k % ${#faults[@]}))]}
  before=$(job_field "$job" restarts)
  t0=$(now_ms)
  if [ "$fault" = kill ]; then
    pid_var="AGENT_PID_${node//-/_}"
    if [ -n "${!pid_var:-}" ]; then kill -9 "${!pid_var}"; else kill -9 "$(cat "$WORK/pids/agent-$node.pid")"; fi
  else
    inject "$node" "$fault"
  fi
  for _ in $(seq 1 600); do
    [ "$(job_field "$job" restarts)" != "$before" ] && [ "$(job_field "$job" state)" = Running ] && break
    sleep 0.1
  done
  t1=$(now_ms)
  say "fault $((k + 1)) '$fault' on $node ($job): running again after $((t1 - t0)) ms, restarts $before -> $(job_field "$job" restarts)"
  k=$((k + 1))
done
sleep $(( DURATION - ($(date +%s) - start) > 0 ? DURATION - ($(date +%s) - start) : 0 ))
say "after $(( $(date +%s) - start )) s:"
for job in train-a train-b; do
  "$ALLOT" describe "$job" -o json >"$WORK/$job.json"
  python3 - "$WORK/$job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print("  %s: restarts %d, work lost %d s (declared checkpoints every 10 s), goodput %.4f"
      % (j["name"], j["restarts"], j["work_lost_s"], j["goodput"]))
for x in j.get("restart_history", []):
    print("    run %d ran %d s, lost %d s: %s" % (x["attempt"], x["run_s"], x["work_lost_s"], x["cause"]))
PY
  last=$("$ALLOT" logs "$job" --replica 0 | grep -c "^resumed" || true)
  say "  $job replica 0 resumed $last time(s) from its checkpoint: $("$ALLOT" logs "$job" --replica 0 | grep '^resumed' | tr '\n' ';')"
done
metrics | grep -E "^allot_(goodput|job_restarts_total|work_lost_seconds_total)"
"$ALLOT" nodes
