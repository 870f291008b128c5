#!/usr/bin/env bash
# End to end: a replica that exits non-zero. With max_retries 1 the job runs a second attempt, then fails,
# and the reason carries the exit code.
# Usage: agent_exit_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_exit
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
cat >"$WORK/fails.yaml" <<'YAML'
name: fails
team: team-a
replicas: 1
per_replica: {accelerators: 1}
max_retries: 1
command: 'echo "attempt $ALLOT_ATTEMPT failing"; exit 3'
YAML
"$ALLOT" submit "$WORK/fails.yaml" >/dev/null
wait_state fails Failed 30
[ "$(job_field fails restarts)" = 1 ] || fail "one restart expected, got $(job_field fails restarts)"
job_field fails reason | grep_q "code 3" || fail "the reason should carry the exit code: $(job_field fails reason)"
"$ALLOT" logs fails | grep_q "failing" || fail "the failing replica's output should be kept"
say PASS
