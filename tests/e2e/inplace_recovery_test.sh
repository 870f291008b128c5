#!/usr/bin/env bash
# End to end (docs/resiliency.md, "Recovery in place"): a 2-replica job with `recovery: in_place` and
# `membership_signal: SIGUSR1` on emulated agents. An injected `xid 79` fails rank 1's node: only rank 1 is placed
# again (on the free node of the same layer-3 domain), rank 0's process keeps its pid and keeps running, its agent
# rewrites its membership.json (epoch 1, the new port, the new rank 1's node) and sends it SIGUSR1; the new rank 1
# starts with ALLOT_MEMBERSHIP_EPOCH=1, and only after the old rank 1 (which ignores SIGTERM, so its stop takes the
# agent's whole stop grace) has stopped: the marks sampled every 0.2 s never show both alive (issue 27 items 2, 7);
# no retry is used; the events have recover_in_place and recovered. Then the
# server is killed (SIGKILL) and restarted: the job comes back in epoch 1 on the same nodes.
# Usage: inplace_recovery_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=inplace_recovery
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"
source "$(dirname "$0")/lib_marks.sh"

start_resil_server
start_faulty_agent gpu-1 network-node-layer-3=nn-a
start_faulty_agent gpu-2 network-node-layer-3=nn-a
start_faulty_agent gpu-3 network-node-layer-3=nn-a
start_faulty_agent gpu-4 network-node-layer-3=nn-b
write_teams

# Each replica prints its pid once, then a step every 0.2 s; on SIGUSR1 it prints the epoch membership.json holds.
# Each also marks its start and every step in $WORK/marks/inplace-rRANK.RANK.EPOCH (lib_marks.sh: the epoch stands
# for the attempt, the rank has a file of its own), and rank 1 of epoch 0 ignores SIGTERM.
cat >"$WORK/inplace.yaml" <<YAML
name: inplace
team: team-a
replicas: 2
per_replica: {accelerators: 1}
topology: {preferred: network-node-layer-3}
recovery: in_place
recovery_timeout: 30
membership_signal: SIGUSR1
command: |
  echo "pid \$\$ rank \$RANK epoch \$ALLOT_MEMBERSHIP_EPOCH port \$MASTER_PORT file \$ALLOT_MEMBERSHIP_FILE"
  trap 'echo "got SIGUSR1: \$(cat \$ALLOT_MEMBERSHIP_FILE)"' USR1
  m=$WORK/marks/inplace-r\$RANK.\$RANK.\$ALLOT_MEMBERSHIP_EPOCH
  echo "start \$(date +%s%N) \$\$" >>\$m
  [ "\$RANK.\$ALLOT_MEMBERSHIP_EPOCH" = 1.0 ] && trap '' TERM
  step=0
  while [ \$step -lt 100000 ]; do step=\$((step+1)); echo "step \$step"; echo "alive \$(date +%s%N)" >>\$m; sleep 0.2; done
YAML
"$ALLOT" submit "$WORK/inplace.yaml" >/dev/null
wait_state inplace Running
# Both ranks' logs, each shipped by its own agent on its own schedule: waited for one by one (a check of rank 0
# right after rank 1 was seen failed once under a loaded CI run, rank 0's lines not shipped yet).
for r in 1 0; do
  for _ in $(seq 1 300); do "$ALLOT" logs inplace --replica $r | grep_q "^step 3$" && break; sleep 0.1; done
done
"$ALLOT" logs inplace --replica 0 | grep_q "^step 3$" || fail "rank 0 did not reach step 3: $("$ALLOT" logs inplace | tail -n 5)"
read -r rank0_node rank1_node < <(job_json inplace | python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["placement"][0]["replicas"]; print(r[0]["node"], r[1]["node"])')
pid0=$("$ALLOT" logs inplace --replica 0 | grep -o "^pid [0-9]*" | head -n1)
port0=$("$ALLOT" logs inplace --replica 0 | grep -o "port [0-9]*" | head -n1)
"$ALLOT" logs inplace --replica 0 | grep_q "epoch 0 port" || fail "rank 0 should start in epoch 0: $("$ALLOT" logs inplace --replica 0 | head -n 2)"
file0=$("$ALLOT" logs inplace --replica 0 | grep -o "file [^ ]*" | head -n1 | cut -d' ' -f2)
[ -f "$file0" ] || fail "membership.json of rank 0 should exist before it starts: $file0"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["epoch"]==0 and m["world_size"]==2, m' "$file0" || fail "membership.json at start: $(cat "$file0")"
say "inplace runs: rank 0 on $rank0_node ($pid0, $port0), rank 1 on $rank1_node; failing $rank1_node"

old=$(job_procs inplace RANK=1)
t0=$(now_ms)
inject "$rank1_node" "xid 79 gpu 0"
for _ in $(seq 1 300); do [ "$(job_json inplace | json_get '["recovery"]["membership_epoch"]' 2>/dev/null)" = 1 ] && break; sleep 0.1; done
t1=$(now_ms)
[ "$(job_json inplace | json_get '["recovery"]["membership_epoch"]')" = 1 ] || fail "inplace should be in membership epoch 1: $(job_json inplace)"
[ "$(job_field inplace state)" = Running ] || fail "inplace should keep running: $(job_field inplace state) $(job_field inplace reason)"
[ "$(job_field inplace restarts)" = 0 ] || fail "an in-place recovery uses no retry: restarts $(job_field inplace restarts)"
read -r new0 new1 < <(job_json inplace | python3 -c 'import json,sys; j=json.load(sys.stdin); r=j["placement"][0]["replicas"]; print(r[0]["node"], r[1]["node"])')
[ "$new0" = "$rank0_node" ] || fail "rank 0 should keep its node $rank0_node, not $new0"
[ "$new1" != "$rank1_node" ] && [ "$new1" != gpu-4 ] || fail "rank 1 should move to the free node of nn-a, not $new1"
# Rank 0: the same process, told by file and signal.
for _ in $(seq 1 300); do "$ALLOT" logs inplace --replica 0 | grep_q "got SIGUSR1" && break; sleep 0.1; done
t2=$(now_ms)
"$ALLOT" logs inplace --replica 0 | grep_q "got SIGUSR1: .*\"epoch\":1" || fail "rank 0 should get SIGUSR1 with epoch 1 in its file: $("$ALLOT" logs inplace --replica 0 | tail -n 5)"
[ "$("$ALLOT" logs inplace --replica 0 | grep -c "^pid ")" = 1 ] || fail "rank 0 should never restart: $("$ALLOT" logs inplace --replica 0 | grep "^pid ")"
python3 - "$file0" "$new1" <<'PY' || fail "rank 0's membership.json after the recovery: $(cat "$file0")"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["epoch"] == 1 and m["world_size"] == 2, m
assert [r["node"] for r in m["ranks"]][1] == sys.argv[2], m
PY
before=$("$ALLOT" logs inplace --replica 0 | grep -c "^step ")
sleep 1
after=$("$ALLOT" logs inplace --replica 0 | grep -c "^step ")
[ "$after" -gt "$before" ] || fail "rank 0 should keep running after the recovery ($before, then $after steps)"
# The new rank 1: epoch 1 and the epoch's port in its environment.
for _ in $(seq 1 300); do "$ALLOT" logs inplace --replica 1 | grep_q "epoch 1 port" && break; sleep 0.1; done
"$ALLOT" logs inplace --replica 1 | grep_q "epoch 1 port" || fail "the new rank 1 should start in epoch 1: $("$ALLOT" logs inplace --replica 1 | tail -n 5)"
port1=$("$ALLOT" logs inplace --replica 1 | grep "epoch 1 port" | grep -o "port [0-9]*" | head -n1)
# The old rank 1 and the new one never ran at once; the old one's stop took its stop grace, the new one waited.
wait_mark inplace-r1 1 1
check_marks once after:inplace-r1@0:inplace-r1@1
gap_ms=$(python3 -c 'import sys; old=[int(l.split()[1]) for l in open(sys.argv[1])]; new=int(open(sys.argv[2]).readline().split()[1]); print((new-max(old))//1000000)' "$WORK/marks/inplace-r1.1.0" "$WORK/marks/inplace-r1.1.1")
say "the new rank 1 started $gap_ms ms after the old one's last sign of life"

[ "$port1" != "$port0" ] || fail "epoch 1 should have a fresh rendezvous port, not $port1 again"
events=$("$ALLOT" events 2>/dev/null || true)
echo "$events" | grep_q "recover_in_place" || fail "the events should have recover_in_place: $(echo "$events" | tail -n 10)"
for _ in $(seq 1 300); do "$ALLOT" events 2>/dev/null | grep_q "recovered" && break; sleep 0.1; done
"$ALLOT" events | grep_q "in-place recovery of membership epoch 1 done" || fail "the events should say the recovery is done: $("$ALLOT" events | tail -n 10)"
say "fault to epoch 1: $((t1 - t0)) ms; to rank 0 signalled: $((t2 - t0)) ms"
resume_ms=$(( $(head -n1 "$WORK/marks/inplace-r1.1.1" | awk '{print $2}') / 1000000 - t0 ))
outcome=$(node_outcome "$rank1_node")

# The recovery survives a kill -9 of the server.
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
# A new port: the agents no longer reach it, so what is checked is the journal's state, at once (every node gets a
# fresh heartbeat timeout at the server's start).
start_resil_server
wait_state inplace Running
[ "$(job_json inplace | json_get '["recovery"]["membership_epoch"]')" = 1 ] || fail "epoch 1 should survive the server's restart: $(job_json inplace)"
[ "$(job_nodes inplace)" = "$(printf '%s\n' "$new0" "$new1" | sort | tr '\n' ' ' | sed 's/ $//')" ] || fail "the nodes should survive the restart: $(job_nodes inplace)"
fault_row "xid 79 (injected), recovery in_place, the old rank 1 ignores SIGTERM" "$(restarts_charged inplace)" "$(seconds "$resume_ms") (to the new rank 1's start)" \
  "0 (rank 0 goes on, same pid; the emulated rank 1 keeps no state)" "$outcome (3 s after the fault)" \
  "$([ "$gap_ms" -lt 0 ] && echo "$((-gap_ms)) ms" || echo "0 ms (the new rank 1 started $gap_ms ms after the old one's last sign of life; sampled every 0.2 s)")" \
  "$(still_running $old) of $(echo $old | wc -w) (the old rank 1)"
say PASS
