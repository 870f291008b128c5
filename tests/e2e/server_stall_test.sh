#!/usr/bin/env bash
# End to end, with the fault harness (lib_faults.sh): node timeouts measured against the server's own liveness,
# and the disruption rule (docs/resiliency.md, "A silent agent").
#  1. The server is frozen (SIGSTOP) for longer than its heartbeat timeout while two jobs run (one with no retries
#     left), then resumed: no node is timed out, no job restarts or fails, and an event says the server stalled.
#  2. Three of four agents fall silent at once: none is timed out (a disruption), their jobs run on, and the events
#     say why; once they heartbeat again the events say the disruption is over.
#  3. One agent of four falls silent: it is timed out as before (the rule is no blanket).
# The agents are stand-ins (fake_agent.py): they report the replicas placed on them as running and never fence
# themselves, so what is seen is the server's decision alone.
# Usage: server_stall_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=server_stall
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_faults.sh"
command -v python3 >/dev/null || { say "SKIP: python3 is needed for the stand-in agents"; exit 77; }

start_server --heartbeat-timeout 2
write_teams
for n in 1 2 3 4; do
  python3 "$(dirname "$0")/fake_agent.py" "$ALLOT_SERVER" "fa-$n" "$WORK/join-token" 0.2 >"$WORK/agent-fa-$n.log" 2>&1 &
  eval "FA_$n=$!"
  PIDS+=("$!")
done
for _ in $(seq 1 100); do [ "$("$ALLOT" nodes 2>/dev/null | grep -c '^fa-[1-4] .*Schedulable')" = 4 ] && break; sleep 0.1; done
[ "$("$ALLOT" nodes | grep -c '^fa-[1-4] .*Schedulable')" = 4 ] || fail "the stand-in agents did not register: $("$ALLOT" nodes)"
for spec in "j0 team-a 0" "j2 team-b 2"; do
  set -- $spec
  printf '{"name": "%s", "team": "%s", "max_retries": %s, "per_replica": {"accelerators": 1}, "command": "sleep 600"}' "$1" "$2" "$3" |
    "$ALLOT" submit - >/dev/null
done
wait_state j0 Running
wait_state j2 Running

events() { curl -s --max-time 5 -H "Authorization: Bearer $ALLOT_TOKEN" "$ALLOT_SERVER/v1/events?since=0"; }
# wrongly: restarts and failures of the two jobs, which no fault here should cost anything.
wrongly() {
  local n=0 j
  for j in j0 j2; do
    n=$((n + $(job_field $j restarts)))
    [ "$(job_field $j state)" = Running ] || n=$((n + 1))
  done
  echo $n
}

say "1. freezing the server (pid $SERVER_PID) for 5 s, past its 2 s heartbeat timeout"
stream_start team-a
fault_freeze "$SERVER_PID"
sleep 5
fault_thaw "$SERVER_PID"
sleep 3  # many heartbeats, and well past a timeout after the resume
stream_stop
events >"$WORK/events.json"
figures server_stall "$(wrongly)"
say "nodes timed out by the stall: $(grep -o 'no heartbeat for [0-9]* ms' "$WORK/events.json" | wc -l)"
"$ALLOT" nodes | grep_q Unschedulable && fail "a node was timed out after the server's own stall: $("$ALLOT" nodes)"
[ "$(wrongly)" = 0 ] || fail "a job restarted or failed: j0 $(job_field j0 state) $(job_field j0 restarts), j2 $(job_field j2 state) $(job_field j2 restarts)"
grep_q '"kind": *"liveness"' "$WORK/events.json" || fail "no event says the server stalled: $(tail -c 600 "$WORK/events.json")"
grep_q 'did not run for' "$WORK/events.json" || fail "the liveness event should say why"

say "2. freezing three of the four agents for 4 s"
for p in "$FA_1" "$FA_2" "$FA_3"; do fault_freeze "$p"; done
for _ in $(seq 1 100); do events | grep_q '"kind": *"disruption"' && break; sleep 0.1; done
events | grep_q 'neither restarted nor failed' || { for p in "$FA_1" "$FA_2" "$FA_3"; do fault_thaw "$p"; done; fail "no event says why the silent nodes are held"; }
sleep 2
"$ALLOT" nodes >"$WORK/nodes.txt"
for p in "$FA_1" "$FA_2" "$FA_3"; do fault_thaw "$p"; done
grep_q Unschedulable "$WORK/nodes.txt" && fail "a node was timed out in a disruption: $(cat "$WORK/nodes.txt")"
for _ in $(seq 1 100); do events | grep_q 'disruption over' && break; sleep 0.1; done
events | grep_q 'disruption over' || fail "no event says the disruption is over"
[ "$(wrongly)" = 0 ] || fail "a job restarted or failed in the disruption"

say "3. freezing one agent that runs no job"
idle=""
for n in 1 2 3 4; do
  job_json j0 | grep_q "\"fa-$n\"" || job_json j2 | grep_q "\"fa-$n\"" || { idle=$n; break; }
done
[ -n "$idle" ] || fail "no node without a job"
eval "fault_freeze \$FA_$idle"
timed_out=""
for _ in $(seq 1 100); do "$ALLOT" nodes | grep_q "^fa-$idle .*UnschedulablePendingReboot" && { timed_out=1; break; }; sleep 0.1; done
eval "fault_thaw \$FA_$idle"
[ -n "$timed_out" ] || fail "a lone silent node should still time out: $("$ALLOT" nodes)"
say PASS
