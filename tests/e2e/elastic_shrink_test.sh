#!/usr/bin/env bash
# End to end: shrink instead of preempt. An elastic job (replicas: {min: 1, max: 3}, priority training) runs at 3
# on three emulated agents. A higher-priority job of the same team needs one node: the elastic job is not
# preempted but shrunk to 2, its highest rank stopped and the other two restarted with WORLD_SIZE 2 and
# ALLOT_RESTART_COUNT 1, as their own output shows; `describe` lists the shrink with its cause and the job that
# needed the room, the event stream shows the resize, and `allot policy` shows the grow delay.
# Usage: elastic_shrink_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=elastic_shrink
source "$(dirname "$0")/lib_e2e.sh"

start_server
for n in 1 2 3; do start_agent gpu-$n network-node-layer-3=nn-a; done
cat >"$WORK/teams.yaml" <<'YAML'
policy:
  task_prioritization: task-ranking
  elastic_grow_delay: 3600
  priority_classes:
    - {name: inference, weight: 100}
    - {name: training, weight: 70}
teams:
  - name: team-a
    allocation:
      - {instance_type: ml.g5.8xlarge, instances: 3}
    sharing: {strategy: DontLend}
    preempt_team_tasks: LowerPriority
YAML
"$ALLOT" apply "$WORK/teams.yaml" >/dev/null || fail "allot apply failed"
"$ALLOT" policy get >"$WORK/policy.out" || fail "allot policy get failed"
grep_q "^elastic_grow_delay: *3600s" "$WORK/policy.out" || fail "allot policy should show the grow delay: $(cat "$WORK/policy.out")"

cat >"$WORK/elastic.yaml" <<'YAML'
name: elastic
team: team-a
priority: training
replicas: {min: 1, max: 3}
per_replica: {whole_node: true}
command: 'echo "rank $RANK of world $WORLD_SIZE restart $ALLOT_RESTART_COUNT"; sleep 120'
YAML
"$ALLOT" submit "$WORK/elastic.yaml" >/dev/null
wait_state elastic Running 20

log_has elastic "rank 2 of world 3 restart 0"

cat >"$WORK/serve.yaml" <<'YAML'
name: serve
team: team-a
priority: inference
replicas: 1
per_replica: {whole_node: true}
command: 'sleep 120'
YAML
"$ALLOT" submit "$WORK/serve.yaml" >/dev/null
wait_state serve Running 20
log_has elastic "rank 0 of world 2 restart 1" 30
log_has elastic "rank 1 of world 2 restart 1" 10
[ "$(job_field elastic state)" = Running ] || fail "the elastic job should still run after its shrink"
[ "$(job_field elastic preemptions)" = 0 ] || fail "the elastic job should be shrunk, not preempted"
"$ALLOT" describe elastic >"$WORK/describe.out"
grep_q "^Replicas: *2 (elastic pod set main: min 1, max 3)" "$WORK/describe.out" ||
  fail "describe should show 2 replicas of 1..3: $(cat "$WORK/describe.out")"
grep_q "shrink .* 3 .* 2 .*shrank from 3 to 2 of 3 replicas instead of being preempted by job serve" "$WORK/describe.out" ||
  fail "describe should list the shrink with its cause: $(cat "$WORK/describe.out")"
"$ALLOT" events >"$WORK/events.out" 2>/dev/null || true
grep_q "resize.*elastic.*resized (shrink) from 3 to 2" "$WORK/events.out" ||
  fail "the event stream should show the shrink: $(tail -5 "$WORK/events.out")"
say PASS
