#!/usr/bin/env bash
# End to end (docs/resiliency.md): three nodes of a 3-replica job fail within one window, and the job restarts
# once, not three times; then a silent agent (an emulated hang) is UnschedulablePendingReboot after the
# heartbeat timeout and replaced after --replace-silent-after.
# Usage: resil_window_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=resil_window
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

# The three agents' checks (every 0.3 s) see the faults up to a second or more apart on a loaded machine (CI,
# 2026-12-02: the third report came after the first window ended, and the restart was placed on its node): a 3 s
# window holds them all.
FAULT_WINDOW=3 start_resil_server
for i in 1 2 3 4 5 6; do start_faulty_agent "gpu-$i" "network-node-layer-3=nn-$(( (i + 2) / 3 ))"; done
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 6}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
cat >"$WORK/wide.yaml" <<YAML
name: wide
team: team-a
replicas: 3
per_replica: {accelerators: 1}
max_retries: 3
command: 'echo "run \$ALLOT_ATTEMPT"; while :; do sleep 0.2; done'
YAML
"$ALLOT" submit "$WORK/wide.yaml" >/dev/null
wait_state wide Running
nodes=$(job_nodes wide)
say "wide runs on $nodes; all three fail at once"
old1=$(job_procs wide) runs=$("$ALLOT" logs wide --replica 0 | grep -c "^run " || true)
t0=$(now_ms)
for n in $nodes; do inject "$n" "xid 48 gpu 0"; done
for _ in $(seq 1 100); do [ "$(job_field wide restarts)" = 1 ] && break; sleep 0.1; done
wait_state wide Running 20
for _ in $(seq 1 100); do [ "$("$ALLOT" logs wide --replica 0 | grep -c "^run " || true)" -gt "$runs" ] && break; sleep 0.1; done
resume1=$(seconds $(( $(now_ms) - t0 )))
sleep 3  # a second restart, if there were one, would come within the window
[ "$(job_field wide restarts)" = 1 ] || fail "wide should restart once for three nodes failing in one window, not $(job_field wide restarts)"
for n in $nodes; do case " $(job_nodes wide) " in *" $n "*) fail "wide was placed on the failed node $n";; esac; done
for n in $nodes; do wait_node "$n-r1" Schedulable 60; done
back1=$(seconds $(( $(now_ms) - t0 ))) restarts1=$(restarts_charged wide)

silent=gpu-6
case " $(job_nodes wide) " in *" $silent "*) ;; *) silent=$(job_nodes wide); silent=${silent%% *};; esac
say "the agent of $silent hangs"
old2=$(job_procs wide) runs=$("$ALLOT" logs wide --replica 0 | grep -c "^run " || true)
t0=$(now_ms)
inject "$silent" "hang"
wait_node "$silent" UnschedulablePendingReboot 20
wait_state wide Running 20
for _ in $(seq 1 100); do [ "$("$ALLOT" logs wide --replica 0 | grep -c "^run " || true)" -gt "$runs" ] && break; sleep 0.1; done
resume2=$(seconds $(( $(now_ms) - t0 )))
[ "$(job_field wide restarts)" = 2 ] || fail "wide should restart once for the silent node, not $(( $(job_field wide restarts) - 1 )) times"
for _ in $(seq 1 200); do "$ALLOT" nodes | grep_q "^$silent-r1 " && break; sleep 0.1; done
"$ALLOT" nodes | grep_q "^$silent-r1 " || fail "the silent node $silent was not replaced: $("$ALLOT" describe node "$silent")"
wait_node "$silent-r1" Schedulable 60
back2=$(seconds $(( $(now_ms) - t0 ))) restarts2=$(restarts_charged wide)
"$ALLOT" nodes | grep_q "^$silent " && fail "$silent should have been retired"
fault_row "xid 48 on 3 nodes in one window" "$restarts1" "$resume1" "n/a (no steps)" \
  "$(echo $nodes) retired, each replaced by its -r1 (Schedulable $back1 after the fault)" "not sampled" "$(still_running $old1) of $(echo $old1 | wc -w)"
fault_row "agent hang (silent node)" "$restarts2" "$resume2" "n/a (no steps)" \
  "$silent UnschedulablePendingReboot, then retired and replaced by $silent-r1 ($(node_health "$silent-r1" || true) $back2 after the fault)" \
  "not sampled" "$(still_running $old2) of $(echo $old2 | wc -w)"
"$ALLOT" cancel wide >/dev/null
say PASS
