#!/usr/bin/env bash
# End to end: a capacity plan's nodes started by the server's provisioner (docs/plans.md, "Nodes"). With
# scripts/provision-emulated.sh as the provisioner, nobody starts an agent: when the plan starts the server asks
# for its nodes <plan>-1 and <plan>-2, their emulated agents join with --plan, a job that waited for the plan
# runs on them; when the grace period begins the job is requeued, and at the end the nodes leave and their
# agents exit.
# Usage: plans_provisioned_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=plans_provisioned
source "$(dirname "$0")/lib_e2e.sh"
source "$(dirname "$0")/lib_resil.sh"

start_resil_server
write_teams

# Start in 10 s (the job must be submitted and seen waiting before), grace from 30 s, end at 33 s: the provisioned
# agents have 20 s to start and join, which a loaded CI machine needs (at 6 s and 16 s the test ran out of time).
"$ALLOT" plan create auto --instance-type ml.g5.8xlarge --count 2 --start +10s --end +33s --grace 3s --team team-a \
  --labels network-node-layer-3=nn-auto >"$WORK/plan.out" || fail "plan create: $(cat "$WORK/plan.out")"
cat >"$WORK/on-plan.yaml" <<YAML
name: on-plan
team: team-a
plan: auto
replicas: 2
per_replica: {accelerators: 1}
command: 'trap "exit 0" TERM; sleep 300 & wait'
YAML
"$ALLOT" submit "$WORK/on-plan.yaml" >/dev/null || fail "submit on-plan"
[ "$(job_field on-plan reason_code)" = plan_pending ] || fail "on-plan should wait for its plan: $(job_field on-plan reason)"

wait_state on-plan Running 30
"$ALLOT" nodes >"$WORK/nodes.out"
grep_q "^auto-1 " "$WORK/nodes.out" && grep_q "^auto-2 " "$WORK/nodes.out" || fail "the plan's nodes did not join: $(cat "$WORK/nodes.out")"
"$ALLOT" plans >"$WORK/plans.out"
grep_q "^auto .*Active .*2/2" "$WORK/plans.out" || fail "plan should be Active with 2 nodes: $(cat "$WORK/plans.out")"
for n in auto-1 auto-2; do
  [ -s "$WORK/pids/agent-$n.pid" ] || fail "the provisioner wrote no pid file for $n"
  grep_q "plan auto" "$WORK/emulated/agent-$n.log" "$WORK/server/provision/$n.log" 2>/dev/null ||
    fail "the provisioner's log for $n does not name the plan"
done
# The provisioned node carries the plan's topology label.
"$ALLOT" describe node auto-1 -o json >"$WORK/node.json"
grep_q '"nn-auto"' "$WORK/node.json" || fail "auto-1 lacks the plan's labels: $(cat "$WORK/node.json")"

wait_state on-plan Suspended 30
# Its reason says why it stopped, then why it waits now: its plan is ending (code plan_ended).
reason=$(job_field on-plan reason)
case "$reason" in *"plan auto ends"*) ;; *) fail "on-plan's reason: $reason" ;; esac

for _ in $(seq 1 150); do "$ALLOT" nodes >"$WORK/nodes.out"; grep_q "^auto-" "$WORK/nodes.out" || break; sleep 0.1; done
grep_q "^auto-" "$WORK/nodes.out" && fail "the plan's nodes did not leave: $(cat "$WORK/nodes.out")"
for n in auto-1 auto-2; do
  pid=$(cat "$WORK/pids/agent-$n.pid")
  for _ in $(seq 1 100); do gone "$pid" && break; sleep 0.1; done
  gone "$pid" || fail "agent $n did not exit after its plan ended"
done
say PASS
