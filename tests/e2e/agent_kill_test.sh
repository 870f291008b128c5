#!/usr/bin/env bash
# End to end: an agent killed with SIGKILL. The server's heartbeat timeout marks its node unhealthy and the
# job (max_retries 1) resumes on the other node. On the way: `allot describe` shows the CPUs the replica got on
# the emulated node (BOUND), and `allot logs -o json` gives one object per attempt.
# Usage: agent_kill_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_kill
source "$(dirname "$0")/lib_e2e.sh"

start_server --heartbeat-timeout 1.5
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
cat >"$WORK/survivor.yaml" <<YAML
name: survivor
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 1
command: '$NODE_PID > $WORK/pids/survivor-\$ALLOT_ATTEMPT; echo "running on attempt \$ALLOT_ATTEMPT"; while :; do sleep 0.2; done'
YAML
"$ALLOT" submit "$WORK/survivor.yaml" >/dev/null
wait_state survivor Running
first=$(job_json survivor | grep -o '"nodes": *\[[^]]*\]' | grep -o 'gpu-[12]')
[ -n "$first" ] || fail "cannot tell where survivor runs"
# BOUND: the agent reports the CPUs it bound the replica to (its planned CPUs folded onto this machine's).
for _ in $(seq 1 50); do "$ALLOT" describe survivor | grep_q BOUND && break; sleep 0.1; done
"$ALLOT" describe survivor >"$WORK/describe.out"
bound_col=$(awk '/^Placement:/ {p = 1; next} p && / RANK / {for (i = 1; i <= NF; i++) if ($i == "BOUND") c = i; next}
                 p && c && $1 == "0" {print $c; exit}' "$WORK/describe.out")
[ -n "$bound_col" ] && [ "$bound_col" != "-" ] || fail "describe should show the CPUs replica 0 got (BOUND): $(cat "$WORK/describe.out")"
[ "$bound_col" = "$(job_field survivor cpus_bound)" ] || fail "BOUND '$bound_col' should be the job's cpus_bound: $(job_json survivor)"
for range in ${bound_col//,/ }; do
  [ "${range##*-}" -lt "$(nproc)" ] || fail "BOUND $bound_col names a CPU this machine does not have ($(nproc) CPUs)"
done
# The first attempt's output is shipped before the kill, so that the log has both attempts.
for _ in $(seq 1 50); do "$ALLOT" logs survivor | grep_q "running on attempt 0" && break; sleep 0.1; done
pid_var="AGENT_PID_${first//-/_}"
say "killing the agent of $first (pid ${!pid_var}) with SIGKILL"
kill -9 "${!pid_var}"
for _ in $(seq 1 150); do
  [ "$(job_field survivor restarts)" = 1 ] && [ "$(job_field survivor state)" = Running ] && break
  sleep 0.1
done
[ "$(job_field survivor state)" = Running ] || fail "survivor should run again: $(job_field survivor state) $(job_field survivor reason)"
[ "$(job_field survivor restarts)" = 1 ] || fail "survivor should have restarted once"
second=$(job_json survivor | grep -o '"nodes": *\[[^]]*\]' | grep -o 'gpu-[12]')
[ -n "$second" ] && [ "$second" != "$first" ] || fail "survivor should have moved off $first, it is on '$second'"
"$ALLOT" nodes | grep "^$first " | grep_q "Unschedulable" || fail "$first should be unschedulable: $("$ALLOT" nodes)"
for _ in $(seq 1 50); do "$ALLOT" logs survivor | grep_q "running on attempt 1" && break; sleep 0.1; done
"$ALLOT" logs survivor >"$WORK/survivor.log"
grep -q "running on attempt 1" "$WORK/survivor.log" || fail "the second attempt's output is missing"
# A separator between the attempts, naming the node of the new one, before its output.
grep -q "allot: ==> attempt 1 of replica 0 on node $second <==" "$WORK/survivor.log" ||
  fail "the attempts should be separated: $(cat "$WORK/survivor.log")"
[ "$(grep -n "==> attempt 1" "$WORK/survivor.log" | cut -d: -f1)" -lt "$(grep -n "running on attempt 1" "$WORK/survivor.log" | cut -d: -f1)" ] ||
  fail "the separator should come before the second attempt's output: $(cat "$WORK/survivor.log")"
# -o json: one object per attempt, without the separator, the second naming its node.
"$ALLOT" logs survivor -o json >"$WORK/survivor.json"
python3 - "$WORK/survivor.json" "$second" <<'PY' || fail "logs -o json should have one object per attempt: $(cat "$WORK/survivor.json")"
import json, sys
out = json.load(open(sys.argv[1]))
a = out["attempts"]
assert [(x["attempt"], x["rank"]) for x in a] == [(0, 0), (1, 0)], a
assert a[0]["lines"][0] == "running on attempt 0" and a[1]["lines"][0] == "running on attempt 1", a
assert a[1]["node"] == sys.argv[2] and not any("==>" in l for x in a for l in x["lines"]), a
PY
say PASS
