#!/usr/bin/env bash
# End to end: replicas of two teams on one node, bare processes (no image), with `--run-as-range`. Each team
# runs as its own uid; team B's replica cannot read team A's /proc/PID/environ, signal its processes, read its
# working or checkpoint directory, or see its /tmp; nothing it runs gains privileges (no_new_privs). An agent
# given one --run-as user refuses to run a second team's replica beside the first's.
# Usage: agent_team_isolation_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_team_isolation
if [ "$(id -u)" != 0 ]; then
  echo "$TEST_NAME: SKIP: switching replicas to per-team uids needs root, and this test runs as uid $(id -u)"
  exit 77
fi
AGENT_USER_FLAGS="--run-as-range 1000000000-1999999999"
# Outside /tmp: the agent gives a job a private /tmp only where its work and checkpoint directories are not under
# /tmp, which that /tmp would hide.
export TMPDIR=/var/tmp
source "$(dirname "$0")/lib_e2e.sh"

start_server --checkpoint-dir "$WORK/ckpt"
mkdir -p "$WORK/ckpt" && chmod 0755 "$WORK/ckpt"
start_agent gpu-1 network-node-layer-3=nn-a
write_teams
shared=$WORK/pids  # 1777: where the replicas tell the test (and each other) what they are

cat >"$WORK/a.yaml" <<YAML
name: job-a
team: team-a
per_replica: {memory_gib: 0.0625}
env: {TEAM_A_SECRET: secret-of-team-a-$$}
command: |
  id -u >$shared/a-uid; pwd >$shared/a-cwd; echo "\$ALLOT_CHECKPOINT_DIR" >$shared/a-ckpt
  echo data-of-team-a >mine.txt; echo ckpt-of-team-a >"\$ALLOT_CHECKPOINT_DIR/ckpt.txt"; echo tmp-of-team-a >/tmp/team-a-tmp
  { $NODE_PID >$shared/a-pid; exec sleep 60; } & echo \$! >$shared/a-nspid; wait
YAML
"$ALLOT" submit "$WORK/a.yaml" >/dev/null
wait_state job-a Running
for _ in $(seq 1 100); do [ -s "$shared/a-pid" ] && break; sleep 0.1; done
[ -s "$shared/a-pid" ] || fail "team A's replica did not start its sleeper"
# /proc is the node's, so B reads A's files there by the node's pid; B signals by the pid of the PID namespace
# the replicas share (agent/pid_namespace.h), the one A's shell saw.
for _ in $(seq 1 50); do [ -s "$shared/a-nspid" ] && break; sleep 0.1; done

cat >"$WORK/b.yaml" <<YAML
name: job-b
team: team-b
per_replica: {memory_gib: 0.0625}
command: |
  echo "uid=\$(id -u)"
  grep NoNewPrivs /proc/self/status
  cat /proc/\$(cat $shared/a-pid)/environ; echo "environ-rc=\$?"
  kill -0 \$(cat $shared/a-nspid); echo "kill-rc=\$?"
  cat \$(cat $shared/a-cwd)/mine.txt; echo "cwd-rc=\$?"
  cat \$(cat $shared/a-ckpt)/ckpt.txt; echo "ckpt-rc=\$?"
  echo planted >\$(cat $shared/a-ckpt)/planted.txt; echo "plant-rc=\$?"
  ls /tmp/team-a-tmp; echo "tmp-rc=\$?"
  echo tmp-of-team-b >/tmp/team-b-tmp && echo "own-tmp-writable"
  exit 0
YAML
"$ALLOT" submit "$WORK/b.yaml" >/dev/null
wait_state job-b Succeeded
"$ALLOT" logs job-b >"$WORK/b.out"
cat "$WORK/b.out"
a_uid=$(cat "$shared/a-uid")
b_uid=$(sed -n 's/^uid=//p' "$WORK/b.out")
[ "$a_uid" != 0 ] && [ -n "$b_uid" ] && [ "$b_uid" != 0 ] || fail "replicas should run as non-root uids (A $a_uid, B $b_uid)"
[ "$a_uid" != "$b_uid" ] || fail "teams A and B share uid $a_uid"
[ "$a_uid" -ge 1000000000 ] && [ "$b_uid" -ge 1000000000 ] || fail "the uids should come from --run-as-range"
grep_q "NoNewPrivs:[[:space:]]*1" "$WORK/b.out" || fail "no_new_privs should be set"
grep_q "/environ: Permission denied" "$WORK/b.out" && grep_q -x "environ-rc=1" "$WORK/b.out" || fail "B should be refused A's environ"
grep_q "secret-of-team-a" "$WORK/b.out" && fail "B read A's environment"
grep_q -i "Operation not permitted" "$WORK/b.out" && grep_q -x "kill-rc=1" "$WORK/b.out" || fail "B should be refused signalling A"
grep_q "mine.txt: Permission denied" "$WORK/b.out" || fail "B should be refused A's working directory"
grep_q "ckpt.txt: Permission denied" "$WORK/b.out" || fail "B should be refused A's checkpoint directory"
grep_q "planted.txt: Permission denied" "$WORK/b.out" && ! grep_q -x "plant-rc=0" "$WORK/b.out" ||
  fail "B should be refused writing into A's checkpoint directory"
[ -e "$WORK/ckpt/job-a/planted.txt" ] && fail "B wrote into A's checkpoint directory"
grep_q "data-of-team-a\|ckpt-of-team-a" "$WORK/b.out" && fail "B read A's files"
grep_q "team-a-tmp.*No such file" "$WORK/b.out" || fail "B should not see A's /tmp"
grep_q -x "own-tmp-writable" "$WORK/b.out" || fail "B's own /tmp should be writable"
[ -e /tmp/team-a-tmp ] || [ -e /tmp/team-b-tmp ] && fail "a replica wrote into the node's /tmp"
"$ALLOT" cancel job-a >/dev/null
wait_state job-a Cancelled
# The private /tmp goes with the job's last replica on the node.
for _ in $(seq 1 50); do [ -e "$WORK/agents/gpu-1/job-a/tmp" ] || break; sleep 0.1; done
[ -e "$WORK/agents/gpu-1/job-a/tmp" ] && fail "job-a's private /tmp should be removed once it stopped"

# One --run-as user for every team: a second team's replica beside the first's is refused with a reason.
AGENT_USER_FLAGS="--run-as nobody" start_agent solo network-node-layer-3=nn-b
"$ALLOT" node cordon gpu-1 >/dev/null 2>&1 || fail "cannot cordon gpu-1"
printf 'name: first\nteam: team-a\nper_replica: {memory_gib: 0.0625}\ncommand: sleep 60\n' | "$ALLOT" submit - >/dev/null
wait_state first Running
printf 'name: second\nteam: team-b\nper_replica: {memory_gib: 0.0625}\nmax_retries: 0\ncommand: "true"\n' | "$ALLOT" submit - >/dev/null
wait_state second Failed
log_has second "replicas of two teams never share a uid"
say PASS
