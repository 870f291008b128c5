#!/usr/bin/env bash
# End to end: a capacity plan (docs/plans.md) with emulated agents. A job that names the plan waits for it; the
# plan's agents, started early with --plan, are refused until the plan starts and then join; the job runs on
# their nodes; when the grace period begins its processes are stopped with SIGTERM (they checkpoint) and the job
# is requeued; at the plan's end the nodes leave and their agents exit. Members read plans but cannot make them.
# Usage: plans_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=plans
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams

member=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "token create member"
if ALLOT_TOKEN=$member "$ALLOT" plan create nope --instance-type ml.g5.8xlarge --count 1 --end +1h >/dev/null 2>&1; then
  fail "a member created a plan"
fi

# Start in 12 s (room for the steps before it on a loaded machine), grace from 28 s, end at 34 s.
"$ALLOT" plan create burst --instance-type ml.g5.8xlarge --count 2 --start +12s --end +34s --grace 6s --team team-a \
  --labels network-node-layer-3=nn-plan >"$WORK/plan.out" || fail "plan create: $(cat "$WORK/plan.out")"
grep -q "Scheduled" "$WORK/plan.out" || fail "a new plan should be Scheduled: $(cat "$WORK/plan.out")"
ALLOT_TOKEN=$member "$ALLOT" plans | grep_q "^burst .*Scheduled" || fail "a member cannot list plans"

cat >"$WORK/on-plan.yaml" <<YAML
name: on-plan
team: team-a
plan: burst
replicas: 2
per_replica: {accelerators: 1}
command: 'trap "echo \$WORLD_SIZE > $WORK/pids/ckpt-\$RANK; exit 0" TERM; $NODE_PID > $WORK/pids/shell-\$RANK; sleep 300 & wait'
YAML
"$ALLOT" submit "$WORK/on-plan.yaml" >/dev/null
for _ in $(seq 1 50); do [ "$(job_field on-plan reason_code)" = plan_pending ] && break; sleep 0.1; done
[ "$(job_field on-plan reason_code)" = plan_pending ] || fail "on-plan should wait for its plan: $(job_field on-plan reason)"

# The plan's agents start before the plan: refused until it is Active, they try again.
for n in burst-a burst-b; do
  "$ALLOT" agent --server "$ALLOT_SERVER" --name "$n" --instance-type ml.g5.8xlarge --plan burst \
    --labels network-node-layer-3=nn-plan --work-dir "$WORK/agents/$n" --token-file "$WORK/join-token" \
    --heartbeat-interval 0.2 --stop-grace 1 $AGENT_USER_FLAGS >>"$WORK/agent-$n.log" 2>&1 &
  PIDS+=("$!")
  eval "PLAN_AGENT_${n//-/_}=$!"
done
# Checked only while the plan is still Scheduled: the nodes are listed first, then the plans, so a Scheduled plan
# means the listing was taken before the start (a very slow machine may reach the start first: then it says so).
# Up to 30 s (over at once on success): on a loaded machine (the unit tests compile beside this test) the agent
# was seen to take more than 5 s to start.
for _ in $(seq 1 300); do grep_q "cannot register yet: .*has not started yet" "$WORK/agent-burst-a.log" && break; sleep 0.1; done
"$ALLOT" nodes >"$WORK/nodes-early.out"
if "$ALLOT" plans | grep_q "^burst .*Scheduled"; then
  grep_q "^burst-" "$WORK/nodes-early.out" && fail "a plan's node joined before the plan started: $(cat "$WORK/nodes-early.out")"
  grep_q "cannot register yet: .*has not started yet" "$WORK/agent-burst-a.log" ||
    fail "agent burst-a should have been refused before the plan started: $(tail -n3 "$WORK/agent-burst-a.log")"
else
  say "the plan started before the early check (slow machine): the refusal before the start was not checked"
fi

wait_state on-plan Running 30
"$ALLOT" plans | grep_q "^burst .*Active .*2/2" || fail "plan should be Active with 2 nodes: $("$ALLOT" plans)"
nodes=$(job_json on-plan | grep -o '"nodes": *\[[^]]*\]' | head -n1)
echo "$nodes" | grep_q burst-a && echo "$nodes" | grep_q burst-b || fail "on-plan runs on $nodes, not the plan's nodes"
for r in 0 1; do
  for _ in $(seq 1 50); do [ -s "$WORK/pids/shell-$r" ] && break; sleep 0.1; done
  [ -s "$WORK/pids/shell-$r" ] || fail "replica $r did not start"
done
"$ALLOT" teams | grep_q "^team-a .* 3/" || fail "team-a's quota should include the plan: $("$ALLOT" teams)"

# The grace period: the job is checkpointed (SIGTERM) and requeued, never killed without notice.
wait_state on-plan Suspended 30
reason=$(job_field on-plan reason)
case "$reason" in *"plan burst ends"*) ;; *) fail "on-plan's reason: $reason" ;; esac
for r in 0 1; do
  for _ in $(seq 1 50); do [ -s "$WORK/pids/ckpt-$r" ] && break; sleep 0.1; done
  [ "$(cat "$WORK/pids/ckpt-$r" 2>/dev/null)" = 2 ] || fail "replica $r was not asked to checkpoint (SIGTERM)"
done

# The end: the nodes leave, the agents are refused and exit, the job waits for good.
for _ in $(seq 1 150); do "$ALLOT" nodes | grep_q "^burst-" || break; sleep 0.1; done
"$ALLOT" nodes | grep_q "^burst-" && fail "the plan's nodes did not leave: $("$ALLOT" nodes)"
"$ALLOT" plans | grep_q "^burst .*Expired" || fail "plan should be Expired: $("$ALLOT" plans)"
for _ in $(seq 1 100); do gone "$PLAN_AGENT_burst_a" && gone "$PLAN_AGENT_burst_b" && break; sleep 0.1; done
gone "$PLAN_AGENT_burst_a" || fail "agent burst-a did not exit after its plan ended"
grep -q "Expired" "$WORK/agent-burst-a.log" || fail "agent burst-a should say its plan has expired"
[ "$(job_field on-plan reason_code)" = plan_ended ] || fail "on-plan should wait for good: $(job_field on-plan reason)"
"$ALLOT" plan delete burst >/dev/null
"$ALLOT" plans | grep_q "^burst" && fail "a deleted plan is still listed"
say PASS
