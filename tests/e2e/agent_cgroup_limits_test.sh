#!/usr/bin/env bash
# End to end: where cgroup v2 is delegated to the agent (checked at run time: the agent says at start whether
# memory.max applies), a replica that allocates far past its memory request is ended by the kernel, its job
# fails with exit code 137, and its log says that the out-of-memory killer ended it, with the limit; a job of
# the same request that stays under it succeeds in the same cgroup setup. Skipped (77), saying why, where the
# memory controller is not delegated (cgroup v1 or hybrid hierarchies, containers without Delegate=yes).
# Usage: agent_cgroup_limits_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_cgroup_limits
source "$(dirname "$0")/lib_e2e.sh"

start_server
start_agent gpu-1 network-node-layer-3=nn-a
summary=$(grep -m1 "cgroups:" "$WORK/agent-gpu-1.log" || true)
case "$summary" in
  *"with memory.max and cpu.max"*|*"only memory limits apply"*) say "the agent limits memory: $summary" ;;
  *)
    say "SKIP: the memory controller of cgroup v2 is not delegated to the agent here, so memory limits cannot be" \
        "exercised; the agent said: ${summary:-nothing about cgroups}"
    exit 77 ;;
esac
write_teams
# 64 MiB asked (the agent's floor for memory.max). `tail -n 1` keeps a line without a newline whole, so it
# holds everything `head` feeds it: 1 GiB, far past the limit (swap is off for the replica's cgroup).
cat >"$WORK/hog.yaml" <<'YAML'
name: hog
team: team-a
replicas: 1
max_retries: 0
per_replica: {memory_gib: 0.0625}
command: 'head -c 1073741824 /dev/zero | tail -n 1 >/dev/null'
YAML
cat >"$WORK/modest.yaml" <<'YAML'
name: modest
team: team-a
replicas: 1
max_retries: 0
per_replica: {memory_gib: 0.0625}
command: 'head -c 1048576 /dev/zero | tail -n 1 >/dev/null && echo fits'
YAML
"$ALLOT" submit "$WORK/hog.yaml" >/dev/null
"$ALLOT" submit "$WORK/modest.yaml" >/dev/null
wait_state hog Failed 60
wait_state modest Succeeded 60
"$ALLOT" describe hog -o json >"$WORK/hog.json"
grep -q '137' "$WORK/hog.json" || fail "the job should report exit code 137: $(cat "$WORK/hog.json")"
"$ALLOT" logs hog >"$WORK/hog.log"
grep -q "allot agent: the out-of-memory killer ended .* it used more than its memory limit of $((64 << 20)) bytes" "$WORK/hog.log" ||
  fail "the log of the killed replica should say why it ended: $(cat "$WORK/hog.log")"
"$ALLOT" logs modest | grep_q -x fits || fail "the job under its limit should run to its end"
grep -q "out-of-memory killer" "$WORK/agent-gpu-1.log" || fail "the agent's log should name the kill too"
say PASS
