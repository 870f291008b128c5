#!/usr/bin/env bash
# End to end: an elastic job (replicas: {min: 1, max: 3}) on three emulated agents. One node is taken by
# another job, so it starts at 2 replicas (WORLD_SIZE 2). When that job is cancelled and its node has been idle
# for the policy's elastic_grow_delay (2 s here), the job grows: every replica is stopped and started again
# with WORLD_SIZE 3, dense ranks 0..2 and ALLOT_RESTART_COUNT 1, as their own output shows.
# Usage: elastic_resize_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=elastic_resize
source "$(dirname "$0")/lib_e2e.sh"

start_server
for n in 1 2 3; do start_agent gpu-$n network-node-layer-3=nn-a; done
cat >"$WORK/teams.yaml" <<'YAML'
policy:
  elastic_grow_delay: 2
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 3}
    sharing: {strategy: DontLend}
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"

cat >"$WORK/hold.yaml" <<'YAML'
name: hold
team: team-a
replicas: 1
per_replica: {whole_node: true}
command: 'sleep 120'
YAML
"$ALLOT" submit "$WORK/hold.yaml" >/dev/null
wait_state hold Running 20
cat >"$WORK/elastic.yaml" <<'YAML'
name: elastic
team: team-a
replicas: {min: 1, max: 3}
per_replica: {whole_node: true}
command: 'echo "rank $RANK of world $WORLD_SIZE restart $ALLOT_RESTART_COUNT"; sleep 120'
YAML
"$ALLOT" submit "$WORK/elastic.yaml" >/dev/null
wait_state elastic Running 20

log_has elastic "rank 0 of world 2 restart 0"
log_has elastic "rank 1 of world 2 restart 0"
"$ALLOT" describe elastic >"$WORK/describe.out"
grep_q "^Replicas: *2 (elastic pod set main: min 1, max 3)" "$WORK/describe.out" ||
  fail "describe should show 2 replicas of 1..3: $(cat "$WORK/describe.out")"

"$ALLOT" cancel hold >/dev/null
log_has elastic "rank 2 of world 3 restart 1" 30
log_has elastic "rank 0 of world 3 restart 1" 10
log_has elastic "rank 1 of world 3 restart 1" 10
"$ALLOT" describe elastic >"$WORK/describe.out"
grep_q "^Replicas: *3 (elastic pod set main: min 1, max 3)" "$WORK/describe.out" ||
  fail "describe should show 3 replicas after the grow: $(cat "$WORK/describe.out")"
grep_q "grow .* 2 .* 3 .*grew from 2 to 3" "$WORK/describe.out" ||
  fail "describe should list the resize with its cause: $(cat "$WORK/describe.out")"
[ "$(job_field elastic state)" = Running ] || fail "the job should still run after its resize"
"$ALLOT" events >"$WORK/events.out" 2>/dev/null || true
grep_q "resize" "$WORK/events.out" || fail "the event stream should show the resize: $(tail -5 "$WORK/events.out")"
say PASS
