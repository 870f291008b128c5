#!/usr/bin/env bash
# End to end: `allot server --max-watches N`. A limit that would leave no connection for heartbeats is refused
# before the server touches its data (exit 2, saying what was given, what is allowed and why). With
# --max-watches 0 no agent may watch: the agent is refused its first watch (429), says so once in its log, and
# still starts the work placed on its node, at its heartbeats. (Its next watch comes a minute later, past this
# test; the agent's retry after Retry-After is agent_watch_retry_test.cpp's.)
# Usage: agent_watch_refused_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_watch_refused
source "$(dirname "$0")/lib_e2e.sh"

# refused_start TEXT FLAGS...: `allot server FLAGS` exits 2 saying TEXT, and creates no data.
refused_start() {
  local text=$1 rc; shift
  set +e
  timeout 20 "$ALLOT" server --listen 127.0.0.1:0 --data "$WORK/refused" "$@" >"$WORK/refused.out" 2>"$WORK/refused.err"
  rc=$?
  set -e
  [ "$rc" = 2 ] || fail "'allot server $*' exited $rc, want 2: $(cat "$WORK/refused.err")"
  grep -qF -- "$text" "$WORK/refused.err" || fail "'allot server $*' should say '$text': $(cat "$WORK/refused.err")"
  [ ! -e "$WORK/refused" ] || fail "'allot server $*' created its data directory before refusing"
}
refused_start "--max-watches 8 is too many for --max-connections 8: it must be 0..7" --max-connections 8 --max-watches 8
grep -qF "heartbeats need connections" "$WORK/refused.err" || fail "the refusal should say why: $(cat "$WORK/refused.err")"
refused_start "--max-watches 513 is too many for --max-connections 512" --max-watches 513
refused_start "--max-watches" --max-watches -1

start_server --heartbeat-timeout 600 --max-watches 0
write_teams
start_agent solo network-node-layer-3=nn-a
for _ in $(seq 1 150); do
  grep_q "no room for this agent's watch" "$WORK/agent-solo.log" && break
  sleep 0.1
done
grep_q "no room for this agent's watch" "$WORK/agent-solo.log" || fail "the agent should say that its watch was refused"
# Two jobs one after the other: each is started at a heartbeat, the only way left.
for job in first second; do
  cat >"$WORK/$job.yaml" <<YAML
name: $job
team: team-a
replicas: 1
per_replica: {accelerators: 1}
command: 'echo "$job ran"'
YAML
  "$ALLOT" submit "$WORK/$job.yaml" >/dev/null || fail "submit $job"
  wait_state "$job" Succeeded 60
  "$ALLOT" logs "$job" | grep_q "$job ran" || fail "$job's output should be kept: $("$ALLOT" logs "$job")"
done
said=$(grep -c "no room for this agent's watch" "$WORK/agent-solo.log" || true)
[ "$said" = 1 ] || fail "the agent should say once that its watch was refused, not $said times"
grep_q "no watch route" "$WORK/agent-solo.log" && fail "a refused watch is not a missing route"
say PASS
