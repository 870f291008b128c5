#!/usr/bin/env bash
# End to end (docs/resiliency.md): a fault that a reboot clears (ECC errors: the node is rebooted, its job
# restarts elsewhere once, and the node comes back Schedulable); a fault that survives the reboot and escalates
# to a replacement; and a replacement whose deep health check fails, which is replaced in turn.
# Usage: resil_reboot_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_reboot
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

start_resil_server
start_faulty_agent gpu-1 network-node-layer-3=nn-a
start_faulty_agent gpu-2 network-node-layer-3=nn-a
start_faulty_agent gpu-3 network-node-layer-3=nn-b
write_teams
cat >"$WORK/one.yaml" <<YAML
name: one
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 2
command: 'echo "run \$ALLOT_ATTEMPT restart \$ALLOT_RESTART_COUNT"; while :; do sleep 0.2; done'
YAML
"$ALLOT" submit "$WORK/one.yaml" >/dev/null
wait_state one Running
first=$(job_nodes one)
first=${first% }

say "1. a fault a reboot clears: ecc gpu 0 on $first"
old1=$(job_procs one)
t0=$(now_ms)
inject "$first" "ecc gpu 0"
for _ in $(seq 1 100); do [ "$(job_field one restarts)" = 1 ] && break; sleep 0.1; done
wait_state one Running 20
[ "$(job_field one restarts)" = 1 ] || fail "one should have restarted once, not $(job_field one restarts)"
for _ in $(seq 1 100); do "$ALLOT" logs one | grep_q "restart 1$" && break; sleep 0.1; done
resume1=$(seconds $(( $(now_ms) - t0 ))) restarts1=$(restarts_charged one)
case " $(job_nodes one) " in *" $first "*) fail "one should have moved off $first";; esac
"$ALLOT" describe node "$first" | grep_q "UnschedulablePendingReboot" || fail "$first should have been UnschedulablePendingReboot"
wait_node "$first" Schedulable 20
back1=$(seconds $(( $(now_ms) - t0 )))
"$ALLOT" describe node "$first" | grep_q "the reboot cleared the fault" || fail "the history should say the reboot cleared it: $("$ALLOT" describe node "$first")"
grep -q "rebooted (boot 2)" "$WORK/agent-$first.log" || fail "the agent of $first should have rebooted"

second=$(job_nodes one)
second=${second% }
say "2. a fault that survives the reboot: ecc gpu 0 persistent on $second; its replacement fails its deep check"
echo "deep-check fail" >"$WORK/faults/$second-r1"
old2=$(job_procs one)
t0=$(now_ms)
inject "$second" "ecc gpu 0 persistent"
for _ in $(seq 1 100); do [ "$(job_field one restarts)" = 2 ] && break; sleep 0.1; done
wait_state one Running 20
[ "$(job_field one restarts)" = 2 ] || fail "one should have restarted twice in all, not $(job_field one restarts)"
for _ in $(seq 1 100); do "$ALLOT" logs one | grep_q "restart 2$" && break; sleep 0.1; done
resume2=$(seconds $(( $(now_ms) - t0 ))) restarts2=$(restarts_charged one)
# Its replacement $second-r1, or already r1's own ($second-r2): r1 fails its deep check at once and may be retired
# between two looks (CI, 2026-12-02); step 3 checks r1's part.
for _ in $(seq 1 200); do "$ALLOT" nodes | grep_q "^$second-r[12] " && break; sleep 0.1; done
"$ALLOT" nodes | grep_q "^$second-r[12] " || fail "$second was not replaced after the fault survived its reboot: $("$ALLOT" nodes)"
grep -q "rebooted (boot 2)" "$WORK/agent-$second.log" || fail "the agent of $second should have rebooted first"
# Into a file first: grep -q stops at its match, and under pipefail the CLI's SIGPIPE on a long output fails the test.
"$ALLOT" events -o json >"$WORK/events.json"
grep -q "the fault survived a reboot" "$WORK/events.json" || fail "the event stream should say the fault survived the reboot"
say "3. the replacement $second-r1 fails its deep check and is replaced by $second-r2"
wait_node "$second-r2" Schedulable 60
back2=$(seconds $(( $(now_ms) - t0 )))
"$ALLOT" nodes | grep_q "^$second-r1 " && fail "$second-r1 should have been retired after its failed deep check"
grep -q "deep health check failed" "$WORK/emulated/agent-$second-r1.log" || fail "$second-r1's agent should report the failed deep check"
"$ALLOT" events -o json >"$WORK/events.json"
grep -q "deep health check failed" "$WORK/events.json" || fail "the event stream should say why $second-r1 was replaced"
[ "$(job_field one restarts)" = 2 ] || fail "the replacements should not restart the job: $(job_field one restarts)"
fault_row "ecc (a reboot clears it)" "$restarts1" "$resume1" "n/a (no steps)" "$first rebooted (boot 2), back $(node_health "$first" || true) $back1 after the fault" \
  "not sampled" "$(still_running $old1) of $(echo $old1 | wc -w)"
fault_row "ecc persistent (survives the reboot) + the replacement's deep check fails" "$restarts2" "$resume2" "n/a (no steps)" \
  "$second rebooted, retired; $second-r1 failed its deep check, retired; $second-r2 $(node_health "$second-r2" || true) $back2 after the fault" \
  "not sampled" "$(still_running $old2) of $(echo $old2 | wc -w)"
"$ALLOT" cancel one >/dev/null
say PASS
