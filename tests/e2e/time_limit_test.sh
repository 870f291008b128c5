#!/usr/bin/env bash
# End to end: wall-time limits (docs/jobs.md, "Time limits") with real emulated agents. A job limited to 3 s that
# runs a long sleep is stopped at its limit (its processes, the sleep included, are gone) and ends Failed with
# reason code deadline_exceeded; `describe` shows the limit and the time left while it runs; a limit above the
# team's maximum is refused with the maximum named; and a server killed -9 while a limited job runs, restarted
# after the limit has passed, ends the job from the journal alone.
# Usage: time_limit_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=time_limit
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
cat >"$WORK/teams.yaml" <<'YAML'
teams:
  - name: team-a
    fair_share_weight: 1
    max_time_limit: 600
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 2}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
"$ALLOT" describe team team-a -o json | tr -d ' \n' | grep_q '"max_time_limit":600' || fail "the team does not show its max_time_limit"

# A limit above the team's maximum: refused, nothing submitted.
cat >"$WORK/too-long.yaml" <<YAML
name: too-long
team: team-a
per_replica: {accelerators: 1}
time_limit: 7200
command: 'sleep 300'
YAML
set +e
"$ALLOT" submit "$WORK/too-long.yaml" >"$WORK/too-long.out" 2>&1
rc=$?
set -e
[ "$rc" != 0 ] || fail "a time_limit above the maximum was accepted"
grep_q "time_limit 7200 s is above the maximum of team team-a (max_time_limit 600 s)" "$WORK/too-long.out" ||
  fail "the refusal does not name the maximum: $(cat "$WORK/too-long.out")"
"$ALLOT" jobs | grep_q too-long && fail "the refused job was submitted"

# A job limited to 3 s that would sleep for 300.
cat >"$WORK/short.yaml" <<YAML
name: short
team: team-a
per_replica: {accelerators: 1}
time_limit: 3
max_retries: 2
command: '{ $NODE_PID > $WORK/pids/short-child; exec sleep 300; } & $NODE_PID > $WORK/pids/short-shell; wait'
YAML
expect_rc 0 "$ALLOT" submit "$WORK/short.yaml"
wait_state short Running
for _ in $(seq 1 50); do [ -s "$WORK/pids/short-child" ] && [ -s "$WORK/pids/short-shell" ] && break; sleep 0.1; done
pids="$(cat "$WORK/pids/short-shell" 2>/dev/null || true) $(cat "$WORK/pids/short-child" 2>/dev/null || true)"
[ -n "${pids// /}" ] || fail "the replica did not write its pids"
"$ALLOT" describe short >"$WORK/short.describe" || true
if [ "$(job_field short state)" = Running ]; then
  grep_q "^Time limit: *3 s (used [0-9]* s, [0-9]* s left" "$WORK/short.describe" ||
    fail "describe does not show the limit and the time left: $(cat "$WORK/short.describe")"
  say "describe: $(grep "^Time limit:" "$WORK/short.describe")"
fi
[ "$(job_field short time_limit_s)" = 3 ] || fail "the job's time_limit_s is not 3: $(job_json short)"
wait_state short Failed 30
[ "$(job_field short reason_code)" = deadline_exceeded ] || fail "reason_code is not deadline_exceeded: $(job_json short)"
[ "$(job_field short restarts)" = 0 ] || fail "the limit used a retry: $(job_json short)"
[ "$(job_field short time_left_s)" = 0 ] || fail "time_left_s is not 0 after the limit: $(job_json short)"
job_field short reason | grep_q "^DeadlineExceeded:" || fail "the reason does not begin DeadlineExceeded: $(job_field short reason)"
for _ in $(seq 1 100); do
  left=""
  for p in $pids; do gone "$p" || left="$left $p"; done
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "processes still running after the time limit:$left"
"$ALLOT" events | grep_q "time_limit_exceeded" || fail "no time_limit_exceeded event: $("$ALLOT" events | tail -5)"

# Durability: the server is killed -9 while a job limited to 4 s runs, and comes back after the limit has passed.
cat >"$WORK/durable.yaml" <<YAML
name: durable
team: team-a
per_replica: {accelerators: 1}
time_limit: 4
command: 'sleep 300'
YAML
expect_rc 0 "$ALLOT" submit "$WORK/durable.yaml"
wait_state durable Running
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
sleep 5
start_server
wait_state durable Failed 20
[ "$(job_field durable reason_code)" = deadline_exceeded ] || fail "after the restart: $(job_json durable)"
[ "$(job_field short reason_code)" = deadline_exceeded ] || fail "the first job's ending was not kept: $(job_json short)"
say PASS
