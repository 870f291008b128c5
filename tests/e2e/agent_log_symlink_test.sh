#!/usr/bin/env bash
# End to end: a replica cannot make the agent read or write a file through its log. The job replaces the file
# where the agent used to keep its log (rank-0.log in its working directory) with a symlink to a root-only
# file and to the node's credential; `allot logs` must show neither, and neither file may change. Its output
# still arrives whole (it goes through the agent's pipe), and the agent's own files are out of its reach.
# Usage: agent_log_symlink_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_log_symlink
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
agent_dir=$WORK/agents/gpu-1
secret=$WORK/root-only
echo "allot-root-only-marker-$$" >"$secret"
chmod 0600 "$secret"
[ -s "$agent_dir/credential" ] || fail "the agent should have saved its node credential"
before=$(cat "$secret" "$agent_dir/credential" | md5sum)

cat >"$WORK/attack.yaml" <<YAML
name: attack
team: team-a
per_replica: {memory_gib: 0.0625}
command: |
  echo "before the swap"
  rm -f rank-0.log; ln -s $secret rank-0.log
  mkdir -p ../attempt-1 2>/dev/null; ln -s $agent_dir/credential ../attempt-1/rank-0.log 2>/dev/null
  ln -s $agent_dir/credential credential-link
  echo "after the swap"
  cat $agent_dir/credential >/dev/null 2>&1 && echo "READ-THE-CREDENTIAL"
  ls $agent_dir/_logs >/dev/null 2>&1 && echo "LISTED-THE-LOGS"
  ls $agent_dir >/dev/null 2>&1 && echo "LISTED-THE-WORK-DIR"
  i=0; while [ \$i -lt 2000 ]; do echo "line \$i of the output"; i=\$((i+1)); done
  echo "the end"
  sleep 4
YAML
"$ALLOT" submit "$WORK/attack.yaml" >/dev/null
# The log the agent keeps is its own regular file, out of the replica's reach; it is looked at while the replica
# still runs, since the agent removes an attempt's log once the server has it and the attempt's end (retention).
log=$agent_dir/_logs/attack/attempt-0/rank-0.log
for _ in $(seq 1 300); do grep_q -x "the end" "$log" 2>/dev/null && break; sleep 0.1; done
grep_q -x "the end" "$log" || fail "the agent's log should be $log and hold the whole output"
[ -f "$log" ] && [ ! -L "$log" ] || fail "the agent's log should be a regular file: $log"
[ "$(stat -c %a "$agent_dir/_logs")" = 700 ] || fail "the agents' logs directory should be 0700, is $(stat -c %a "$agent_dir/_logs")"
[ "$(stat -c %a "$log")" = 600 ] || fail "a log should be 0600, is $(stat -c %a "$log")"
wait_state attack Succeeded
"$ALLOT" logs attack >"$WORK/attack.out"
grep_q -x "before the swap" "$WORK/attack.out" || fail "the output before the swap is missing: $(head "$WORK/attack.out")"
grep_q -x "the end" "$WORK/attack.out" || fail "the output after the swap is missing: $(tail "$WORK/attack.out")"
[ "$(grep -c '^line [0-9]* of the output$' "$WORK/attack.out")" = 2000 ] || fail "the output should arrive whole through the pipe"
grep_q "allot-root-only-marker" "$WORK/attack.out" && fail "allot logs returned the root-only file the log was swapped for"
grep_q -F "$(cat "$agent_dir/credential")" "$WORK/attack.out" && fail "allot logs returned the node credential"
[ "$(cat "$secret" "$agent_dir/credential" | md5sum)" = "$before" ] || fail "the agent wrote through the replica's symlink"
for f in credential replicas.json boot agent.lock; do
  [ "$(stat -c %a "$agent_dir/$f")" = 600 ] || fail "$f should be 0600, is $(stat -c %a "$agent_dir/$f")"
done
if [ "$(id -u)" = 0 ]; then
  grep_q "READ-THE-CREDENTIAL\|LISTED-THE-LOGS\|LISTED-THE-WORK-DIR" "$WORK/attack.out" &&
    fail "a replica reached the agent's files: $(grep 'READ-THE\|LISTED-THE' "$WORK/attack.out")"
  [ "$(stat -c %a "$agent_dir")" = 711 ] || fail "the work directory should be 0711, is $(stat -c %a "$agent_dir")"
fi
say PASS
