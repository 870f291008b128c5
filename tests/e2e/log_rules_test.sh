#!/usr/bin/env bash
# End to end: rules on a job's output (docs/resiliency.md, "Rules on a job's output") with real processes on
# emulated agents.
#  - A replica that prints progress lines and then stops printing is hung: its stacks are dumped to its log (gdb or
#    py-spy, where installed; else the log says why not), it is stopped and the job restarts, charged to the job's
#    retries (its node stays Schedulable); with its retries used up the job ends Failed, reason code hung.
#  - A replica that prints `loss: nan` fails the job at once without a retry (reason code log_fail); the reason names
#    the rule and its pattern; the matching line is in the job's `log_rule` for an admin and its team, not for a
#    viewer of another team; a server killed -9 and restarted keeps both.
#  - An agent killed -9 after the rule fired, while its replica was being stopped: the restarted agent reports the
#    rule from its journal of started attempts (not a lost replica, which would use a retry), and it applies once.
#  - A pattern that does not compile is refused at submission, saying which and why.
# Usage: log_rules_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=log_rules
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
  - name: team-b
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 1}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"

# A pattern that does not compile: refused, nothing submitted.
cat >"$WORK/bad.yaml" <<'YAML'
name: bad
team: team-a
per_replica: {accelerators: 1}
command: 'sleep 1'
log_rules:
  fail_on: ['loss', '(nan']
YAML
set +e
"$ALLOT" submit "$WORK/bad.yaml" >"$WORK/bad.out" 2>&1
rc=$?
set -e
[ "$rc" != 0 ] || fail "a pattern that does not compile was accepted"
grep_q "log_rules.fail_on\[1\]: the pattern does not compile as an ECMAScript regular expression" "$WORK/bad.out" ||
  fail "the refusal does not say which pattern and why: $(cat "$WORK/bad.out")"
"$ALLOT" jobs | grep_q '^bad ' && fail "the refused job was submitted"

# 1. Hung: three progress lines, then silence. `every: 2` s; two retries.
cat >"$WORK/stall.yaml" <<YAML
name: stall
team: team-a
per_replica: {accelerators: 1}
max_retries: 2
command: 'for i in 1 2 3; do echo "step \$i attempt \$ALLOT_ATTEMPT"; sleep 0.2; done; $NODE_PID >> $WORK/pids/stall; exec sleep 300'
log_rules:
  progress: {pattern: 'step [0-9]+', every: 2}
YAML
expect_rc 0 "$ALLOT" submit "$WORK/stall.yaml"
wait_state stall Running
for _ in $(seq 1 150); do [ "$(job_field stall restarts)" -ge 1 ] 2>/dev/null && break; sleep 0.1; done
[ "$(job_field stall restarts)" -ge 1 ] || fail "the silent replica was not restarted: $(job_json stall)"
job_json stall | grep_q 'hung: no line of rank 0 matched log_rules.progress (`step \[0-9\]+`) for 2 s; auto-resume restarts it' ||
  fail "the restart's reason does not name the progress rule: $(job_json stall)"
"$ALLOT" nodes | grep_q "^gpu-1 .*Schedulable" || fail "the hang was charged to the node: $("$ALLOT" nodes)"
log_has stall "allot agent: no progress line: the stacks" 10
if command -v gdb >/dev/null || command -v py-spy >/dev/null; then
  grep -E "allot agent: no progress line: the stacks of pid [0-9]+ by (gdb|py-spy)" "$WORK/stall-logs.out" >/dev/null ||
    fail "the stacks were not dumped although a tool is installed: $(cat "$WORK/stall-logs.out")"
else
  grep_q "neither py-spy nor gdb is installed" "$WORK/stall-logs.out" || fail "the log does not say why no stacks: $(cat "$WORK/stall-logs.out")"
fi
wait_state stall Failed 40
[ "$(job_field stall reason_code)" = hung ] || fail "reason_code is not hung: $(job_json stall)"
[ "$(job_field stall restarts)" = 2 ] || fail "the hangs did not use the job's two retries: $(job_json stall)"
"$ALLOT" nodes | grep_q "^gpu-1 .*Schedulable" || fail "the node was blamed: $("$ALLOT" nodes)"
for _ in $(seq 1 50); do
  left=""
  for p in $(cat "$WORK/pids/stall"); do gone "$p" || left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "hung replicas still running:$left"
say "hung: $("$ALLOT" describe stall | grep "^Reason:")"

# 2. loss: nan -> Failed without a retry, though retries are left.
cat >"$WORK/nan.yaml" <<'YAML'
name: nan
team: team-a
per_replica: {accelerators: 1}
max_retries: 3
command: 'echo "step 1 loss: 2.31"; sleep 0.3; echo "step 2 loss: nan"; exec sleep 300'
log_rules:
  restart_on: ['NCCL (timeout|error)']
  fail_on: ['loss.*nan']
YAML
expect_rc 0 "$ALLOT" submit "$WORK/nan.yaml"
wait_state nan Failed 20
[ "$(job_field nan reason_code)" = log_fail ] || fail "reason_code is not log_fail: $(job_json nan)"
[ "$(job_field nan restarts)" = 0 ] || fail "a fail_on line used a retry: $(job_json nan)"
job_field nan reason | grep_q 'log rule log_rules.fail_on\[0\] (`loss.\*nan`) matched a line of rank 0; failed without retry' ||
  fail "the reason does not name the rule: $(job_field nan reason)"
job_json nan | grep_q '"line": *"step 2 loss: nan"' || fail "the admin does not see the matching line: $(job_json nan)"
"$ALLOT" describe nan | grep_q '^Log rule: *fail: log_rules.fail_on\[0\] `loss.\*nan` on rank 0 (attempt [0-9]*); line: step 2 loss: nan' ||
  fail "describe does not show the rule and its line: $("$ALLOT" describe nan)"
# Who may not read the job's logs does not read the line either (the reason and the event never hold it).
viewer_b=$("$ALLOT" token create --role viewer --team team-b 2>/dev/null) || fail "cannot make a viewer token"
member_a=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "cannot make a member token"
ALLOT_TOKEN=$viewer_b "$ALLOT" describe nan -o json | tr -d '\n' >"$WORK/nan.viewer"
grep_q '"log_rule"' "$WORK/nan.viewer" || fail "the viewer does not see which rule fired: $(cat "$WORK/nan.viewer")"
grep_q 'loss: nan' "$WORK/nan.viewer" && fail "a viewer of another team reads the job's output: $(cat "$WORK/nan.viewer")"
ALLOT_TOKEN=$viewer_b "$ALLOT" events >"$WORK/events.viewer" 2>&1
grep_q 'loss: nan' "$WORK/events.viewer" && fail "an event carries the job's output: $(grep 'loss: nan' "$WORK/events.viewer")"
grep_q 'log_rule' "$WORK/events.viewer" || fail "no log_rule event: $(tail -5 "$WORK/events.viewer")"
ALLOT_TOKEN=$member_a "$ALLOT" describe nan -o json | tr -d '\n' | grep_q '"line": *"step 2 loss: nan"' ||
  fail "a member of the job's team does not see the line"

# 3. The agent is killed -9 after the rule fired, while the replica (which ignores SIGTERM) is being stopped.
cat >"$WORK/nan2.yaml" <<'YAML'
name: nan2
team: team-a
per_replica: {accelerators: 1}
max_retries: 3
command: 'trap "" TERM; echo "loss: nan"; while true; do sleep 0.1; done'
log_rules:
  fail_on: ['loss.*nan']
YAML
expect_rc 0 "$ALLOT" submit "$WORK/nan2.yaml"
for _ in $(seq 1 200); do grep_q "replica nan2/0#[0-9]*: log rule .*stopping it" "$WORK/agent-gpu-1.log" && break; sleep 0.02; done
grep_q "replica nan2/0#[0-9]*: log rule .*stopping it" "$WORK/agent-gpu-1.log" || fail "the agent did not act on the rule: $(tail -5 "$WORK/agent-gpu-1.log")"
kill -9 "$AGENT_PID_gpu_1"
wait "$AGENT_PID_gpu_1" 2>/dev/null || true
[ "$(job_field nan2 state)" = Running ] || say "note: the server had the end before the kill: $(job_field nan2 state)"
start_agent gpu-1 network-node-layer-3=nn-a
wait_state nan2 Failed 30
[ "$(job_field nan2 reason_code)" = log_fail ] || fail "after the agent's restart: $(job_json nan2)"
[ "$(job_field nan2 restarts)" = 0 ] || fail "the rule was lost or applied twice: $(job_json nan2)"

# 4. The server is killed -9 and restarted: the ending, the reason and the line are kept.
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
start_server
[ "$(job_field nan reason_code)" = log_fail ] || fail "after the server's restart: $(job_json nan)"
job_json nan | grep_q '"line": *"step 2 loss: nan"' || fail "the line was not kept across the restart: $(job_json nan)"
[ "$(job_field stall reason_code)" = hung ] || fail "the hang was not kept across the restart: $(job_json stall)"
say PASS
