#!/usr/bin/env bash
# End to end (docs/resiliency.md, "One fault, one restart"): a GPU falls off the bus and takes its training process
# with it before any check has run, as on real hardware. The XID line goes into the node's kernel log (a file in
# /dev/kmsg format, `allot agent --kmsg`) and rank 0 gets SIGKILL at the same moment, with health checks every 10 s
# and default 1 s heartbeats: the check interval is far longer than the server's hold of a peer's exit. The agent runs
# its checks at once, the server holds the exit until they report, and the fault costs exactly one restart, charged
# to the node (not "replica 0 exited with code 137"); the job is never placed back on that node and, with
# max_retries: 1, completes. Prints the times from the fault to the restart and to the resumed step. Then the same
# kill with an application's XID 13: the exit is the job's own failure, and the node stays in service.
# Usage: resil_kill_first_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_kill_first
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"
source "$(dirname "$0")/lib_marks.sh"

# Default heartbeats and timeout; the replacement the provisioner starts uses lib_resil's quick flags.
start_server --fault-window 1 --provisioner "$REPO/scripts/provision-emulated.sh"
mkdir -p "$WORK/kmsg"
# Like lib_e2e's start_agent, at the agent's default heartbeat interval (1 s) and checks every 10 s.
start_slow_agent() {
  local name=$1 labels=$2
  : >"$WORK/kmsg/$name"
  "$ALLOT" agent --server "$ALLOT_SERVER" --name "$name" --instance-type ml.g5.8xlarge --labels "$labels" \
    --work-dir "$WORK/agents/$name" --token-file "$WORK/join-token" --stop-grace 1 --health-interval 10 \
    --deep-check-seconds 1 --kmsg "$WORK/kmsg/$name" $AGENT_USER_FLAGS >>"$WORK/agent-$name.log" 2>&1 &
  PIDS+=("$!")
  for _ in $(seq 1 100); do
    "$ALLOT" nodes 2>/dev/null | grep_q "^$name .*Schedulable" && return 0
    sleep 0.1
  done
  fail "agent $name did not register within 10 s"
}
for n in gpu-1 gpu-2 gpu-3; do start_slow_agent "$n" network-node-layer-1=nn1,network-node-layer-2=nn2,network-node-layer-3=nn-a; done
write_teams

cat >"$WORK/train.yaml" <<YAML
name: train
team: team-a
replicas: 2
per_replica: {accelerators: 1}
max_retries: 1
checkpoint_interval: 1
command: |
  $NODE_PID >\$ALLOT_CHECKPOINT_DIR/pid-\$RANK
  m=$WORK/marks/\$ALLOT_JOB.\$RANK.\$ALLOT_ATTEMPT; echo "start \$(date +%s%N) \$\$" >>\$m
  f=\$ALLOT_CHECKPOINT_DIR/rank-\$RANK; step=0
  if [ -f \$f ]; then step=\$(cat \$f); echo "resumed from step \$step (restart \$ALLOT_RESTART_COUNT)"; fi
  while [ \$step -lt 60 ]; do step=\$((step+1)); echo \$step >\$f.tmp; mv \$f.tmp \$f; echo "step \$step"; echo "alive \$(date +%s%N)" >>\$m; sleep 0.1; done
YAML
"$ALLOT" submit "$WORK/train.yaml" >/dev/null
wait_state train Running
victim=$("$ALLOT" describe train -o json | json_get '["placement"][0]["replicas"][0]["node"]')
for _ in $(seq 1 100); do "$ALLOT" logs train --replica 0 | grep_q "^step 5$" && break; sleep 0.1; done
"$ALLOT" logs train --replica 0 | grep_q "^step 5$" || fail "train did not reach step 5"
pid=$(cat "$WORK/server/checkpoints/train/pid-0")
say "rank 0 runs on $victim as pid $pid: XID 79 in its kernel log and SIGKILL at once"

# The killed run's attempt number: 0, or more when a start was requeued without a retry (a rendezvous port another
# process held: tests running side by side give their jobs the same ports), counted as restarts + preemptions.
killed=$(( $(job_field train restarts) + $(job_field train preemptions) ))
old=$(job_procs train)
t0=$(now_ms)
echo "4,4242,$(date +%s)000000,-;NVRM: Xid (PCI:0000:10:1c): 79, pid=$pid, name=sh, GPU has fallen off the bus." >>"$WORK/kmsg/$victim"
kill -9 "$pid"
for _ in $(seq 1 300); do
  [ "$(job_field train restarts)" = 1 ] && [ "$(job_field train state)" = Running ] && break
  sleep 0.1
done
t1=$(now_ms)
[ "$(job_field train restarts)" = 1 ] || fail "train should have restarted once: $(job_field train restarts) $(job_field train state) $(job_field train reason)"
case " $(job_nodes train) " in *" $victim "*) fail "train was placed back on $victim, whose replica just died of its GPU";; esac
node=$("$ALLOT" describe train -o json | json_get '["restart_history"][0]["node"]')
cause=$("$ALLOT" describe train -o json | json_get '["restart_history"][0]["cause"]')
[ "$node" = "$victim" ] || fail "the restart should be charged to node $victim, not to the job: $cause"
echo "$cause" | grep_q "XID 79" || fail "the restart's cause should name the XID: $cause"
grep_q "died abnormally (exit code 137): running the fast health checks now" "$WORK/agent-$victim.log" ||
  fail "the agent should check the node at once after the abnormal exit"
grep_q "kernel log: NVRM: Xid (PCI:0000:10:1c): 79" "$WORK/agent-$victim.log" || fail "the agent should log the XID it read"
for _ in $(seq 1 100); do "$ALLOT" logs train --replica 0 | grep_q "resumed from step" && break; sleep 0.1; done
t2=$(now_ms)
"$ALLOT" logs train --replica 0 | grep_q "resumed from step" || fail "train should resume from its checkpoint"

# The failed attempt's log is kept and shipped to its last line before the kill: the killed attempt alone shows it.
first=$("$ALLOT" logs train --replica 0 --attempt "$killed")
echo "$first" | grep_q "^step 5$" || fail "attempt $killed's log should hold its steps: $(echo "$first" | tail -n 3)"
echo "$first" | grep_q "resumed from step" && fail "--attempt $killed should not show the next attempt's lines"
# The resumed run is the next attempt, or later when its start was requeued too: restarts + preemptions.
last=$(( $(job_field train restarts) + $(job_field train preemptions) ))
"$ALLOT" logs train --replica 0 --attempt "$last" | grep_q "resumed from step" ||
  fail "--attempt $last should show the resumed run (restarts $(job_field train restarts), preemptions $(job_field train preemptions)); the whole log: $("$ALLOT" logs train --replica 0 | grep -v '^step')"
wait_state train Succeeded 60
[ "$(job_field train restarts)" = 1 ] || fail "the fault should cost one restart in all, not $(job_field train restarts)"
# No rank of the resumed attempt started before every rank of the killed one (rank 1 runs out its stop) was gone.
check_marks once "after:train@$killed:train@$last"
gap79=$(marks_gap "train@$killed" "train@$last")
h=$(node_health "$victim" || true)
[ "$h" = UnschedulablePendingReplacement ] || "$ALLOT" nodes | grep_q "^$victim-r1 " ||
  fail "$victim should be on its way to replacement, not '$h': $("$ALLOT" describe node "$victim" 2>&1 | head -n 20)"
say "fault to restart decided: $((t1 - t0)) ms; fault to resumed: $((t2 - t0)) ms; restarts 1 (node $victim); Succeeded with max_retries 1"
top=$(echo "$first" | grep -o "^step [0-9]*" | tail -n1 | grep -o "[0-9]*$" || true)
resumed=$("$ALLOT" logs train --replica 0 | grep -o "resumed from step [0-9]*" | head -n1 | grep -o "[0-9]*$" || true)
lost=$(( ${top:-0} - ${resumed:-0} )); [ "$lost" -ge 0 ] || lost=0
restarts79=$(restarts_charged train) resume79=$(seconds $((t2 - t0))) lost79="$lost (rank 0 at step ${top:-?}, resumed from ${resumed:-?})"

# An application's own GPU error (XID 13) with the same kill: the exit is the job's, and the node stays in service.
# Only the nodes that read a kernel log file take the job (a replacement from the provisioner reads none).
for n in $("$ALLOT" nodes -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("nodes", d) if isinstance(d, dict) else d; print(" ".join(x["name"] for x in d))'); do
  [ -f "$WORK/kmsg/$n" ] || "$ALLOT" node cordon "$n" >/dev/null
done
sed -e 's/^name: train/name: app/' -e 's/^replicas: 2/replicas: 1/' "$WORK/train.yaml" >"$WORK/app.yaml"
"$ALLOT" submit "$WORK/app.yaml" >/dev/null
wait_state app Running
host=$(job_nodes app)
for _ in $(seq 1 100); do "$ALLOT" logs app --replica 0 | grep_q "^step 3$" && break; sleep 0.1; done
pid=$(cat "$WORK/server/checkpoints/app/pid-0")
old13=$(job_procs app) killed13=$(( $(job_field app restarts) + $(job_field app preemptions) ))
t13=$(now_ms)
echo "4,4343,$(date +%s)000000,-;NVRM: Xid (PCI:0000:10:1c): 13, pid=$pid, name=sh, Graphics Exception" >>"$WORK/kmsg/$host"
kill -9 "$pid"
for _ in $(seq 1 300); do [ "$(job_field app restarts)" = 1 ] && break; sleep 0.1; done
[ "$(job_field app restarts)" = 1 ] || fail "app should have restarted once: $(job_field app state) $(job_field app reason)"
for _ in $(seq 1 100); do "$ALLOT" logs app --replica 0 | grep_q "resumed from step" && break; sleep 0.1; done
resume13=$(seconds $(( $(now_ms) - t13 )))
top13=$("$ALLOT" logs app --replica 0 --attempt "$killed13" | grep -o "^step [0-9]*" | tail -n1 | grep -o "[0-9]*$" || true)
resumed13=$("$ALLOT" logs app --replica 0 | grep -o "resumed from step [0-9]*" | head -n1 | grep -o "[0-9]*$" || true)
lost13=$(( ${top13:-0} - ${resumed13:-0} )); [ "$lost13" -ge 0 ] || lost13=0
node=$("$ALLOT" describe app -o json | json_get '["restart_history"][0]["node"]')
cause=$("$ALLOT" describe app -o json | json_get '["restart_history"][0]["cause"]')
[ -z "$node" ] || fail "an application's XID is the job's failure, not node $node's: $cause"
echo "$cause" | grep_q "replica 0 exited with code 137" || fail "the restart should name the exit: $cause"
grep_q "kernel log: NVRM: Xid (PCI:0000:10:1c): 13.* -> job-only" "$WORK/agent-$host.log" || fail "the agent should read XID 13 as job-only"
for _ in $(seq 1 50); do node_json "$host" | grep_q '"suspect"' || break; sleep 0.1; done
node_json "$host" | grep_q '"suspect"' && fail "$host should not stay suspect after its checks passed: $(node_json "$host")"
[ "$(node_health "$host")" = Schedulable ] || fail "$host should stay Schedulable after an application's XID"
wait_state app Succeeded 60
check_marks once "after:app@$killed13:app@$(( $(job_field app restarts) + $(job_field app preemptions) ))"
gap13=$(marks_gap "app@$killed13" "app@$(( $(job_field app restarts) + $(job_field app preemptions) ))")
if "$ALLOT" nodes | grep_q "^$victim-r1 "; then outcome79="$victim retired, replaced by $victim-r1 ($(node_health "$victim-r1" || true))"
else outcome79="$victim $(node_health "$victim" || true)"; fi
fault_row "xid 79 + rank 0 killed first (kernel log)" "$restarts79" "$resume79" "$lost79" "$outcome79" \
  "0 ms (the new attempt started $gap79 ms after the old one's last sign of life; sampled every 0.1 s)" "$(still_running $old) of $(echo $old | wc -w)"
fault_row "xid 13 (application's) + rank 0 killed" "$(restarts_charged app)" "$resume13" "$lost13 (at step ${top13:-?}, resumed from ${resumed13:-?})" \
  "$host unchanged ($(node_health "$host" || true))" "0 ms (the new attempt started $gap13 ms after the old one's last sign of life)" \
  "$(still_running $old13) of $(echo $old13 | wc -w)"
say PASS
