#!/usr/bin/env bash
# End to end through the CLI: a reclaim is a preemption record (docs/states.md, "Preemption records") that
# `allot events -o json` shows on the victim's event, and `allot describe` shows on the victim (who preempted it,
# by which rule, the teams' figures) and on the preemptor (its victims), with another team's job names hidden
# from a member token. Static nodes (no agents): only the scheduler's decisions are looked at.
# Usage: preemption_records_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=preemption_records
source "$(dirname "$0")/lib_e2e.sh"

start_server
write_teams
cat >"$WORK/nodes.yaml" <<'YAML'
nodes:
  - {name: n-1, instance_type: ml.g5.8xlarge}
  - {name: n-2, instance_type: ml.g5.8xlarge}
YAML
expect_rc 0 "$ALLOT" nodes apply "$WORK/nodes.yaml"
for j in b-1:team-b b-2:team-b a-1:team-a; do
  printf 'name: %s\nteam: %s\nreplicas: 1\nper_replica: {accelerators: 1}\ncommand: sleep 60\n' "${j%%:*}" "${j##*:}" >"$WORK/${j%%:*}.yaml"
done
expect_rc 0 "$ALLOT" submit "$WORK/b-1.yaml"
expect_rc 0 "$ALLOT" submit "$WORK/b-2.yaml"
wait_state b-2 Running
expect_rc 0 "$ALLOT" submit "$WORK/a-1.yaml"
wait_state a-1 Running
wait_state b-2 Suspended

# events -o json: the victim's preempt event carries the record as an object.
expect_rc 0 "$ALLOT" events -o json
tr -d ' \n' <"$WORK/last.out" >"$WORK/events.json"
grep -q '"kind":"preempt"' "$WORK/events.json" || fail "no preempt event: $(cat "$WORK/last.out")"
grep -q '"preemption":{"preemptor":"a-1","preemptor_team":"team-a","rules":\["reclaim"\]' "$WORK/events.json" ||
  fail "the preempt event has no structured record: $(cat "$WORK/last.out")"
grep -q '"victims":\[{"job":"b-2","rule":"reclaim","team":"team-b"}\]' "$WORK/events.json" ||
  fail "the record does not name the victim and its rule: $(cat "$WORK/last.out")"

# describe: the victim says who preempted it, by which rule, and the teams' figures; the preemptor its victims.
expect_rc 0 "$ALLOT" describe b-2
grep -q "preempted by a-1 of team team-a, rule reclaim" "$WORK/last.out" || fail "describe b-2: $(cat "$WORK/last.out")"
grep -q "team team-b, ml.g5.8xlarge: usage 2/64/256 -> 1/32/128, borrowed 1/32/128 -> 0/0/0" "$WORK/last.out" ||
  fail "describe b-2 lacks team-b's figures: $(cat "$WORK/last.out")"
expect_rc 0 "$ALLOT" describe a-1
grep -q "preempted b-2 of team team-b (reclaim)" "$WORK/last.out" || fail "describe a-1: $(cat "$WORK/last.out")"
expect_rc 0 "$ALLOT" describe a-1 -o json
tr -d ' \n' <"$WORK/last.out" >"$WORK/a-1.json"
grep -q '"as":"preemptor"' "$WORK/a-1.json" || fail "describe -o json: $(cat "$WORK/last.out")"

# A member of team-a reads its own job's record without team-b's job name.
member_a=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "token create member a"
ALLOT_TOKEN=$member_a expect_rc 0 "$ALLOT" describe a-1
grep -q "preempted a job of team team-b (reclaim)" "$WORK/last.out" || fail "member describe a-1: $(cat "$WORK/last.out")"
# Nor anywhere else in the description: the reason and the history say "a job of team team-b".
grep -q "b-2" "$WORK/last.out" &&
  fail "a member of team-a must not read team-b's job names: $(cat "$WORK/last.out")"
grep -q "after preempting a job of team team-b" "$WORK/last.out" || fail "member describe a-1 reason: $(cat "$WORK/last.out")"
say "PASS"
