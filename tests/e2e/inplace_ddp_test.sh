#!/usr/bin/env bash
# End to end (docs/resiliency.md, "Recovery in place"): a real 2-rank PyTorch training (Debian's python3-torch, gloo
# on CPU; tests/e2e/inplace_ddp.py) that keeps its state in memory only, under the same fault twice: rank 1's GPU
# falls off the bus (its process killed with SIGKILL, then `xid 79` in its node's kernel log, as a real GPU does).
#   1. recovery: in_place: only rank 1 is replaced; rank 0's process goes on (same pid), rebuilds its process group
#      at the new epoch's port and broadcasts its state to the new rank; no retry is used.
#   2. recovery: restart with a checkpoint every 10 steps: the job restarts from its last checkpoint.
# Prints, for each, the steps lost and the seconds from the fault to the first step after it (bench/RESULTS.md,
# "Recovery in place"). Installs python3-torch through scripts/deps.sh; skipped (77) only when it cannot be installed.
# Usage: inplace_ddp_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=inplace_ddp
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

require_torch
cp "$REPO/tests/e2e/inplace_ddp.py" "$WORK/train.py"
chmod 0644 "$WORK/train.py"

# The fault is found by a check; a busy machine must not add a second one by starving an agent (lib_resil.sh).
HEARTBEAT_TIMEOUT=6 start_resil_server
for n in 1 2 3 4 5; do start_faulty_agent "gpu-$n" network-node-layer-3=nn-a; done
write_teams

# t=<ms> of the first line of replica R of JOB matching PATTERN (after line N of it, when given).
t_of() { "$ALLOT" logs "$1" --replica "$2" | grep -E "$3" | head -n1 | grep -o 't=[0-9]*' | cut -d= -f2; }
last_step() { "$ALLOT" logs "$1" --replica "$2" | grep -o "step [0-9]* loss" | tail -n1 | grep -o "[0-9]*"; }

# run_case JOB RECOVERY EXTRA_YAML: submits, faults rank 1 at step 35 (mid-way between checkpoints), and sets LOST
# (steps done before the fault and done again after it) and RESUME_MS (fault to the first step after it).
run_case() {
  local job=$1 recovery=$2 extra=$3
  cat >"$WORK/$job.yaml" <<YAML
name: $job
team: team-a
replicas: 2
per_replica: {accelerators: 1}
max_retries: 1
recovery: $recovery
$extra
command: ["/usr/bin/python3", "$WORK/train.py"]
YAML
  "$ALLOT" submit "$WORK/$job.yaml" >/dev/null
  wait_state "$job" Running
  for _ in $(seq 1 900); do "$ALLOT" logs "$job" --replica 0 | grep_q "step 35 loss" && break; sleep 0.05; done
  "$ALLOT" logs "$job" --replica 0 | grep_q "step 35 loss" || fail "$job did not reach step 35: $("$ALLOT" logs "$job" | tail -n 20)"
  local victim pid0 pid1 at t0
  victim=$(job_json "$job" | json_get '["placement"][0]["replicas"][1]["node"]')
  pid0=$("$ALLOT" logs "$job" --replica 0 | grep -o "pid [0-9]*" | head -n1 | cut -d' ' -f2)
  pid1=$("$ALLOT" logs "$job" --replica 1 | grep -o "pid [0-9]*" | tail -n1 | cut -d' ' -f2)
  at=$(last_step "$job" 0)
  OLD_ALL=$(job_procs "$job") OLD_R1=$(job_procs "$job" RANK=1)
  t0=$(now_ms)
  kill -9 "$pid1"
  inject "$victim" "xid 79 gpu 0"
  say "$job: rank 1 (pid $pid1) on $victim killed (rank 0's log at step $at); xid 79 injected"
  # The first step line of rank 0 after the fault that comes after a (re)join.
  local resume=""
  for _ in $(seq 1 1200); do
    # The highest step rank 0 reached before it (re)joined after the fault, and the first step after that.
    resume=$("$ALLOT" logs "$job" --replica 0 | awk -v t0="$t0" '
      /joined epoch|loaded checkpoint|epoch .* port/ { if (match($0, /t=[0-9]+/) && substr($0, RSTART+2) + 0 > t0) after = 1 }
      !after && /step [0-9]+ loss/ && $4 + 0 > top { top = $4 + 0 }
      after && /step [0-9]+ loss/ { match($0, /t=[0-9]+/); print substr($0, RSTART+2) " " $4 " " top; exit }')
    [ -n "$resume" ] && break
    sleep 0.1
  done
  [ -n "$resume" ] || fail "$job did not resume after the fault: $("$ALLOT" logs "$job" | tail -n 20)"
  local t1 first top
  read -r t1 first top <<<"$resume"
  LOST=$((top - (first - 1)))
  [ "$LOST" -ge 0 ] || LOST=0
  RESUME_MS=$((t1 - t0))
  PID0_AFTER=$("$ALLOT" logs "$job" --replica 0 | grep -o "pid [0-9]*" | tail -n1 | cut -d' ' -f2)
  PID0_BEFORE=$pid0
  wait_state "$job" Succeeded 300
  OUTCOME=$(node_outcome "$victim")
}

run_case inplace in_place "membership_signal: SIGUSR1
env: {STEPS: \"120\"}"
[ "$PID0_AFTER" = "$PID0_BEFORE" ] || fail "in place: rank 0 should keep its process ($PID0_BEFORE, then $PID0_AFTER)"
[ "$(job_field inplace restarts)" = 0 ] || fail "in place: no retry should be used, restarts $(job_field inplace restarts)"
[ "$(job_json inplace | json_get '["recovery"]["membership_epoch"]')" = 1 ] || fail "in place: epoch 1 expected: $(job_json inplace)"
"$ALLOT" logs inplace --replica 1 | grep_q "joined epoch 1 at step [0-9]* (had 0, state from rank 0)" ||
  fail "in place: the new rank 1 should take the state from rank 0: $("$ALLOT" logs inplace --replica 1 | head -n 5)"
INPLACE_LOST=$LOST INPLACE_MS=$RESUME_MS INPLACE_OLD=$OLD_R1 INPLACE_OUTCOME=$OUTCOME

run_case restart restart "checkpoint_interval: 1
env: {STEPS: \"120\", CKPT_EVERY: \"10\"}"
[ "$(job_field restart restarts)" = 1 ] || fail "restart: one restart expected, not $(job_field restart restarts)"
RESTART_LOST=$LOST RESTART_MS=$RESUME_MS RESTART_OLD=$OLD_ALL RESTART_OUTCOME=$OUTCOME

say "in place: steps lost $INPLACE_LOST, fault to the first step after it $(awk -v m="$INPLACE_MS" 'BEGIN{printf "%.1f", m/1000}') s"
say "full restart (checkpoint every 10 steps): steps lost $RESTART_LOST, fault to the first step after it $(awk -v m="$RESTART_MS" 'BEGIN{printf "%.1f", m/1000}') s"
[ "$INPLACE_LOST" -le 1 ] || fail "in place should lose at most the step in flight, not $INPLACE_LOST"
fault_row "xid 79 + rank 1 killed, recovery in_place (real DDP)" "$(restarts_charged inplace)" "$(seconds "$INPLACE_MS")" "$INPLACE_LOST" \
  "$INPLACE_OUTCOME" "not sampled (the old rank 1 was killed before the fault)" "$(still_running $INPLACE_OLD) of $(echo $INPLACE_OLD | wc -w) (the old rank 1)"
fault_row "xid 79 + rank 1 killed, full restart, checkpoint every 10 steps (real DDP)" "$(restarts_charged restart)" "$(seconds "$RESTART_MS")" "$RESTART_LOST" \
  "$RESTART_OUTCOME" "not sampled (the old rank 1 was killed before the fault)" "$(still_running $RESTART_OLD) of $(echo $RESTART_OLD | wc -w)"
say PASS
