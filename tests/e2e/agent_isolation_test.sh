#!/usr/bin/env bash
# End to end: what a replica runs as and with. An agent started as root refuses to run replicas as root
# without --allow-root; replicas run as their team's uid (--run-as-range in these tests when they run as root); and
# a replica's environment is its job's plus allot's, never the agent's (ALLOT_TOKEN stays with the agent).
# Usage: agent_isolation_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_isolation
source "$(dirname "$0")/lib_e2e.sh"

# The refusals come before the agent talks to any server.
if [ "$(id -u)" = 0 ]; then
  expect_rc 2 "$ALLOT" agent --server http://127.0.0.1:1 --name refused --instance-type ml.g5.8xlarge --work-dir "$WORK/refused"
  grep -q "replicas would run as root" "$WORK/last.err" || fail "the refusal should say why: $(cat "$WORK/last.err")"
  grep -q -- "--run-as USER" "$WORK/last.err" && grep -q -- "--allow-root" "$WORK/last.err" ||
    fail "the refusal should say what to pass: $(cat "$WORK/last.err")"
  expect_rc 2 "$ALLOT" agent --server http://127.0.0.1:1 --run-as root --instance-type ml.g5.8xlarge --work-dir "$WORK/refused"
else
  expect_rc 2 "$ALLOT" agent --server http://127.0.0.1:1 --run-as root --allow-root --instance-type ml.g5.8xlarge \
    --work-dir "$WORK/refused"
  grep -q "cannot switch to uid 0" "$WORK/last.err" || fail "the refusal should say why: $(cat "$WORK/last.err")"
fi
expect_rc 2 "$ALLOT" agent --server http://127.0.0.1:1 --run-as no-such-user-allot-e2e --allow-root \
  --instance-type ml.g5.8xlarge --work-dir "$WORK/refused"

start_server
# Whatever token the agent holds (the one the tests use, or a marker when they use none) must not leak. The
# marker goes to the agent alone, so that the CLI below keeps its own credentials.
secret=${ALLOT_TOKEN:-allot-e2e-secret-$$}
ALLOT_TOKEN=$secret ALLOT_E2E_AGENT_ONLY=agent-environment-$$ start_agent gpu-1 network-node-layer-3=nn-a
write_teams
cat >"$WORK/whoami.yaml" <<'YAML'
name: whoami
team: team-a
replicas: 1
per_replica: {accelerators: 1}
env: {FROM_THE_JOB: job-value}
command: 'echo "uid=$(id -u)"; echo "cwd=$(pwd)"; touch written-here && echo "cwd is writable"; env | sort'
YAML
"$ALLOT" submit "$WORK/whoami.yaml" >/dev/null
wait_state whoami Succeeded
"$ALLOT" logs whoami >"$WORK/whoami.out"
got_uid=$(sed -n 's/^uid=//p' "$WORK/whoami.out")
if [ "$(id -u)" = 0 ]; then
  # The team's own uid from the range lib_e2e.sh gives the agents.
  [ -n "$got_uid" ] && [ "$got_uid" -ge 1000000000 ] && [ "$got_uid" -le 1999999999 ] ||
    fail "the replica should run as team-a's uid from --run-as-range: $(head -n 3 "$WORK/whoami.out")"
else
  [ "$got_uid" = "$(id -u)" ] || fail "the replica should run as the agent's uid: $(head -n 3 "$WORK/whoami.out")"
fi
grep -qx "cwd is writable" "$WORK/whoami.out" || fail "the replica's working directory should be its own: $(cat "$WORK/whoami.out")"
grep -q "cwd=$WORK/agents/gpu-1/whoami/attempt-0" "$WORK/whoami.out" || fail "the replica should run in its work directory"
grep -qx "FROM_THE_JOB=job-value" "$WORK/whoami.out" || fail "the job's env is missing"
grep -qx "RANK=0" "$WORK/whoami.out" || fail "allot's variables are missing"
grep -qx "PATH=/usr/local/bin:/usr/bin:/bin" "$WORK/whoami.out" || fail "the replica should get the base PATH"
grep -qx "LANG=C.UTF-8" "$WORK/whoami.out" || fail "the replica should get LANG=C.UTF-8"
grep -q "^ALLOT_TOKEN=" "$WORK/whoami.out" && fail "ALLOT_TOKEN reached the replica"
grep -qF "$secret" "$WORK/whoami.out" && fail "the agent's token reached the replica"
grep -q "ALLOT_E2E_AGENT_ONLY" "$WORK/whoami.out" && fail "the agent's environment reached the replica"
grep -q "^ALLOT_SERVER=" "$WORK/whoami.out" && fail "the agent's ALLOT_SERVER reached the replica"
say PASS
