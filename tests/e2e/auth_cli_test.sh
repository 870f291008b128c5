#!/usr/bin/env bash
# End to end through the CLI: roles as a user meets them (docs/security.md). Members act for their own team only,
# viewers read, refusals name what would be needed and exit 2, contexts carry a server and a token, a revoked
# token stops at once, agents keep their node credential (mode 0600) across a restart, and the audit trail shows
# the refusals.
# Usage: auth_cli_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=auth_cli
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
start_agent gpu-2 network-node-layer-3=nn-a
write_teams
admin=$ALLOT_TOKEN
member_a=$("$ALLOT" token create --role member --team team-a 2>/dev/null) || fail "token create member a"
member_b=$("$ALLOT" token create --role member --team team-b --description "team b CI" 2>/dev/null) || fail "token create member b"
viewer=$("$ALLOT" token create --role viewer --ttl 1h 2>/dev/null) || fail "token create viewer"

cat >"$WORK/a-1.yaml" <<'YAML'
name: a-1
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "secret of team a: $HF_TOKEN"; sleep 30'
env: {HF_TOKEN: hf_team_a}
YAML
ALLOT_TOKEN=$member_a expect_rc 0 "$ALLOT" submit "$WORK/a-1.yaml"
wait_state a-1 Running

# Refusals through the CLI: exit 2, and the message says what would be needed. Another team's job is answered
# like a job that does not exist (no 403-versus-404 oracle, docs/security.md).
ALLOT_TOKEN=$member_b expect_rc 2 "$ALLOT" cancel a-1
grep -q "no job named a-1" "$WORK/last.err" || fail "cancel refusal: $(cat "$WORK/last.err")"
sed 's/a-1/zz-9/g' "$WORK/last.err" >"$WORK/hidden.err"
ALLOT_TOKEN=$member_b expect_rc 2 "$ALLOT" cancel zz-9
cmp -s "$WORK/hidden.err" "$WORK/last.err" || fail "another team's job must be answered like a missing one: $(cat "$WORK/hidden.err") / $(cat "$WORK/last.err")"
[ "$(job_field a-1 state)" = Running ] || fail "a-1 must still run after member b's cancel"
ALLOT_TOKEN=$member_b expect_rc 2 "$ALLOT" logs a-1
grep -q "no job named a-1" "$WORK/last.err" || fail "logs refusal: $(cat "$WORK/last.err")"
ALLOT_TOKEN=$member_b expect_rc 2 "$ALLOT" apply "$WORK/teams.yaml"
grep -q "needs an admin token" "$WORK/last.err" || fail "apply refusal: $(cat "$WORK/last.err")"
ALLOT_TOKEN=$member_b expect_rc 2 "$ALLOT" submit "$WORK/a-1.yaml"
ALLOT_TOKEN=$member_a expect_rc 2 "$ALLOT" token list
ALLOT_TOKEN=$viewer expect_rc 2 "$ALLOT" submit "$WORK/a-1.yaml"
ALLOT_TOKEN=$viewer expect_rc 0 "$ALLOT" jobs
grep -q "^a-1 " "$WORK/last.out" || fail "a viewer should list a-1: $(cat "$WORK/last.out")"
ALLOT_TOKEN=$member_b expect_rc 0 "$ALLOT" jobs
grep -q "a-1" "$WORK/last.out" && fail "member b should not see team a's jobs: $(cat "$WORK/last.out")"
ALLOT_TOKEN=$member_a expect_rc 0 "$ALLOT" logs a-1
ALLOT_TOKEN="" ALLOT_SERVER=$ALLOT_SERVER expect_rc 2 "$ALLOT" jobs
grep -q "needs a token" "$WORK/last.err" || fail "no token: $(cat "$WORK/last.err")"

# Contexts: a server and a token by name; the file is the user's alone and lists no token.
url_for_ctx=$ALLOT_SERVER
(unset ALLOT_TOKEN ALLOT_SERVER
 "$ALLOT" config set-context team-b --server "$url_for_ctx" --token "$member_b" >/dev/null
 "$ALLOT" config use-context team-b >/dev/null
 "$ALLOT" jobs >"$WORK/ctx.out" 2>&1) || fail "allot jobs through a context: $(cat "$WORK/ctx.out")"
[ "$(stat -c %a "$ALLOT_CONFIG")" = 600 ] || fail "the config file must be mode 600, is $(stat -c %a "$ALLOT_CONFIG")"
"$ALLOT" config get-contexts | grep_q "^\* *team-b" || fail "get-contexts should mark team-b current: $("$ALLOT" config get-contexts)"
"$ALLOT" config get-contexts | grep_q "$member_b" && fail "get-contexts must not print tokens"

# Revocation stops a token at once.
id_b=${member_b:6:10}
expect_rc 0 "$ALLOT" token revoke "$id_b"
(unset ALLOT_TOKEN; "$ALLOT" jobs >"$WORK/revoked.out" 2>&1) && fail "a revoked token (through the context) still works"
grep -q "revoked" "$WORK/revoked.out" || fail "the revoked token's refusal: $(cat "$WORK/revoked.out")"
expect_rc 0 "$ALLOT" token list -o json
grep -q '"revoked": true' "$WORK/last.out" || fail "token list should show the revocation"

# Agents: the node credential is the agent's alone, and survives a restart (no second join).
for n in gpu-1 gpu-2; do
  [ "$(stat -c %a "$WORK/agents/$n/credential")" = 600 ] || fail "$n's credential must be mode 600"
done
agents_before=$("$ALLOT" token list -o json | grep -c '"role": "agent"')
kill "$AGENT_PID_gpu_1"
for _ in $(seq 1 50); do gone "$AGENT_PID_gpu_1" && break; sleep 0.1; done
start_agent gpu-1 network-node-layer-3=nn-a
agents_after=$("$ALLOT" token list -o json | grep -c '"role": "agent"')
[ "$agents_before" = "$agents_after" ] || fail "a restarted agent joined again ($agents_before -> $agents_after agent tokens)"

# Join tokens: `allot node adopt` makes a join token for one node, refused while its agent holds a live
# credential; --max-nodes bounds the others; `allot token list` shows how many nodes each has registered.
expect_rc 2 "$ALLOT" node adopt gpu-1
grep -q "live agent credential" "$WORK/last.err" || fail "adopting gpu-1, whose agent holds a credential: $(cat "$WORK/last.err")"
expect_rc 0 "$ALLOT" node adopt spare-1 --ttl 2h
grep -q '^allot_' "$WORK/last.out" || fail "allot node adopt should print the token: $(cat "$WORK/last.out")"
expect_rc 0 "$ALLOT" token create --role agent-join --max-nodes 3 --description three
expect_rc 0 "$ALLOT" token list
grep -q "node spare-1, 0/1 joined" "$WORK/last.out" || fail "token list should show spare-1's join token: $(cat "$WORK/last.out")"
grep -q "0/3 joined" "$WORK/last.out" || fail "token list should show the 3-node join token: $(cat "$WORK/last.out")"
grep -q "2/any joined" "$WORK/last.out" || fail "token list should show the agents' join token with its 2 nodes: $(cat "$WORK/last.out")"
expect_rc 2 "$ALLOT" token create --role member --team team-a --max-nodes 2

# The audit trail has member b's refused cancel, with the token that tried.
expect_rc 0 "$ALLOT" audit --team team-a -o json
grep -q "POST /v1/jobs/a-1/cancel" "$WORK/last.out" || fail "the audit trail lacks the refused cancel: $(cat "$WORK/last.out")"
grep -q "\"token\": \"$id_b\"" "$WORK/last.out" || fail "the audit entry should name member b's token $id_b"
say PASS
