#!/usr/bin/env bash
# End to end (docs/resiliency.md): an injected `xid 79` on one node of a running 2-replica job. The job resumes
# from its checkpoint on healthy nodes after exactly one restart; the node is replaced through
# scripts/provision-emulated.sh; the replacement passes its deep check and becomes Schedulable. Prints the times
# from the fault to each step. Also: the checks in `allot nodes`, `describe node` and /metrics, the restart's
# cause and work lost in `describe`, and `topology slurm-conf --server --watch` following the replacement.
# Usage: resil_xid_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_xid
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

# The fault is found by a check; a busy machine must not add a second one by starving an agent (lib_resil.sh).
HEARTBEAT_TIMEOUT=6 start_resil_server
start_faulty_agent gpu-1 network-node-layer-1=nn1,network-node-layer-2=nn2,network-node-layer-3=nn-a
start_faulty_agent gpu-2 network-node-layer-1=nn1,network-node-layer-2=nn2,network-node-layer-3=nn-a
start_faulty_agent gpu-3 network-node-layer-1=nn1,network-node-layer-2=nn2,network-node-layer-3=nn-b
write_teams
"$ALLOT" topology slurm-conf --server "$ALLOT_SERVER" --watch "$WORK/topology.conf" --interval 0.3 >"$WORK/watch.log" 2>&1 &
PIDS+=("$!")

cat >"$WORK/train.yaml" <<YAML
name: train
team: team-a
replicas: 2
per_replica: {accelerators: 1}
max_retries: 1
checkpoint_interval: 1
command: |
  f=\$ALLOT_CHECKPOINT_DIR/rank-\$RANK; step=0
  if [ -f \$f ]; then step=\$(cat \$f); echo "resumed from step \$step (restart \$ALLOT_RESTART_COUNT)"; fi
  while [ \$step -lt 100000 ]; do step=\$((step+1)); echo \$step >\$f.tmp; mv \$f.tmp \$f; echo "step \$step"; sleep 0.2; done
YAML
"$ALLOT" submit "$WORK/train.yaml" >/dev/null
wait_state train Running
nodes=$(job_nodes train)
victim=${nodes%% *}
say "train runs on $nodes; the fault goes to $victim"
for _ in $(seq 1 100); do "$ALLOT" logs train --replica 0 | grep_q "^step 5$" && break; sleep 0.1; done
"$ALLOT" logs train --replica 0 | grep_q "^step 5$" || fail "train did not reach step 5"
"$ALLOT" nodes | grep "^$victim " | grep_q " ok" || fail "allot nodes should show $victim's checks: $("$ALLOT" nodes)"

killed=$(( $(job_field train restarts) + $(job_field train preemptions) ))
old=$(job_procs train)
t0=$(now_ms)
inject "$victim" "xid 79 gpu 0"
for _ in $(seq 1 300); do
  [ "$(job_field train restarts)" = 1 ] && [ "$(job_field train state)" = Running ] && break
  sleep 0.1
done
t1=$(now_ms)
[ "$(job_field train state)" = Running ] || fail "train should run again: $(job_field train state) $(job_field train reason)"
[ "$(job_field train restarts)" = 1 ] || fail "train should have restarted exactly once, not $(job_field train restarts)"
case " $(job_nodes train) " in *" $victim "*) fail "train was placed on the failed node $victim again";; esac
for _ in $(seq 1 200); do "$ALLOT" logs train --replica 0 | grep_q "resumed from step" && break; sleep 0.1; done
t2=$(now_ms)
resumed=$("$ALLOT" logs train --replica 0 | grep -o "resumed from step [0-9]*" | head -n1 | grep -o "[0-9]*$")
[ -n "$resumed" ] && [ "$resumed" -ge 5 ] || fail "train should resume from its checkpoint (step >= 5): $("$ALLOT" logs train --replica 0 | tail -5)"
"$ALLOT" logs train --replica 0 | grep_q "restart 1)" || fail "ALLOT_RESTART_COUNT should be 1 after the restart"
cause=$("$ALLOT" describe train -o json | json_get '["restart_history"][0]["cause"]')
echo "$cause" | grep_q "XID 79 on GPU 0" || fail "the restart's cause should name the XID: $cause"
"$ALLOT" describe train | grep_q "^Restarts:" || fail "describe should list the restart"
"$ALLOT" describe train | grep_q "^Goodput:" || fail "describe should show the goodput"

replacement="$victim-r1"
for _ in $(seq 1 300); do "$ALLOT" nodes | grep_q "^$replacement " && break; sleep 0.1; done
"$ALLOT" nodes | grep_q "^$replacement " || fail "no replacement $replacement registered: $(cat "$WORK"/server/provision/*.log 2>/dev/null)"
wait_node "$replacement" Schedulable 40
t3=$(now_ms)
"$ALLOT" nodes | grep_q "^$victim " && fail "the failed node $victim should have been retired"
"$ALLOT" describe node "$replacement" | grep_q "deep health check passed" || fail "the replacement's history should show its deep check"
node_json "$replacement" | grep_q '"replaces": *"'"$victim"'"' || fail "the replacement should name the node it replaces"

for _ in $(seq 1 50); do grep -q "$replacement" "$WORK/topology.conf" 2>/dev/null && break; sleep 0.1; done
grep -q "$replacement" "$WORK/topology.conf" || fail "topology.conf should name $replacement: $(cat "$WORK/topology.conf")"
"$ALLOT" topology mermaid --server "$ALLOT_SERVER" | grep_q "$replacement" || fail "the mermaid chart should show $replacement"

m=$(metrics)
echo "$m" | grep_q "^allot_node_check_failed{node=\"$replacement\",check=\"gpu\"} 0" || fail "/metrics should export the checks"
echo "$m" | grep_q '^allot_job_restarts_total{team="team-a",instance_type="[^"]*"} 1' || fail "/metrics should count the restart: $(echo "$m" | grep restarts)"
echo "$m" | grep_q '^allot_goodput_ratio{team="team-a",instance_type="' || fail "/metrics should export goodput"
echo "$m" | grep_q "^allot_node_check_status{node=\"$replacement\",instance_type=\"[^\"]*\",check=\"gpu\",status=\"passed\"} 1" ||
  fail "/metrics should export the checks' status: $(echo "$m" | grep node_check_status)"
say "fault to restart decided: $((t1 - t0)) ms; fault to resumed from step $resumed: $((t2 - t0)) ms; fault to replacement Schedulable: $((t3 - t0)) ms"
top=$("$ALLOT" logs train --replica 0 --attempt "$killed" | grep -o "^step [0-9]*" | tail -n1 | grep -o "[0-9]*$" || true)
lost=$(( ${top:-0} - resumed )); [ "$lost" -ge 0 ] || lost=0
fault_row "xid 79 (injected, found by a check)" "$(restarts_charged train)" "$(seconds $((t2 - t0)))" "$lost (rank 0 at step ${top:-?}, resumed from $resumed)" \
  "$victim retired, replaced by $replacement ($(node_health "$replacement" || true))" "not sampled" "$(still_running $old) of $(echo $old | wc -w)"
"$ALLOT" cancel train >/dev/null
say PASS
