#!/usr/bin/env bash
# End to end: a server that cannot store logs (issue 33 item 1). The agent reports a replica's exit at once, so the
# job ends although its log never arrives; the agent retries the log a bounded number of times, then gives it up
# and says so.
# Usage: agent_log_failure_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_log_failure
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
# Every log upload from now on fails inside the server (500): its log directory is a file.
rm -rf "$WORK/server/logs"
touch "$WORK/server/logs"
cat >"$WORK/brief.yaml" <<YAML
name: brief
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "some output"; echo "more output"'
YAML
"$ALLOT" submit "$WORK/brief.yaml" >/dev/null
wait_state brief Succeeded 20
for _ in $(seq 1 100); do grep_q "giving up the rest of the log of brief/0#0" "$WORK/agent-gpu-1.log" && break; sleep 0.1; done
grep_q "giving up the rest of the log of brief/0#0" "$WORK/agent-gpu-1.log" ||
  fail "the agent should give the log up after its tries: $(tail -n 5 "$WORK/agent-gpu-1.log")"
say PASS
