#!/usr/bin/env bash
# The containers' init (src/container_init, allot-container-init beside the allot binary), run as the first process
# of a PID namespace of its own (`unshare --pid --fork`), as podman runs it in a container, with a pipe as its fd 3
# the way the agent passes its lifeline: it exits as its command did, forwards signals to it, refuses to run
# without the lifeline, and when the pipe's last writer closes it ends every process of its namespace (a setsid'd
# one too) at once. The podman end to end test (agent_container_test.sh) kills a real agent with its watchdog, shim
# and podman instead.
# Usage: container_init_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=container_init
source "$(dirname "$0")/lib_e2e.sh"
INIT=$(dirname "$ALLOT")/allot-container-init
[ -x "$INIT" ] || fail "$INIT is not built (the target allot-container-init, a dependency of allot)"

# Refusals, in any namespace: a command line without `--`, and no pipe at fd 3.
rc=0; "$INIT" true 3</dev/null 2>"$WORK/usage.err" || rc=$?
[ "$rc" = 2 ] && grep_q "usage: allot-container-init -- COMMAND" "$WORK/usage.err" || fail "no '--': want exit 2 and the usage, got $rc: $(cat "$WORK/usage.err")"
rc=0; "$INIT" -- true 3</dev/null 2>"$WORK/nopipe.err" || rc=$?
[ "$rc" = 2 ] && grep_q "fd 3 is not a pipe" "$WORK/nopipe.err" || fail "fd 3 not a pipe: want exit 2 and why, got $rc: $(cat "$WORK/nopipe.err")"

if ! unshare --pid --fork true 2>"$WORK/unshare.err"; then
  say "SKIP: cannot make a PID namespace here (it needs root): $(cat "$WORK/unshare.err")"
  exit 77
fi

# A new lifeline: a FIFO the test holds open for writing on fd 9 (read-write, so the open does not wait for a reader).
# Every process the test starts gets `9>&-`: the test's fd 9 must be the pipe's only writer.
new_lifeline() {
  exec 9>&- 2>/dev/null || true
  rm -f "$WORK/lifeline"
  mkfifo "$WORK/lifeline"
  exec 9<>"$WORK/lifeline"
}
# in_namespace ARG...: the init with the lifeline as fd 3, as the first process of a new PID namespace.
in_namespace() { unshare --pid --fork "$INIT" -- "$@" 3<"$WORK/lifeline" 9>&-; }

new_lifeline
rc=0; in_namespace /bin/sh -c 'exit 7' || rc=$?
[ "$rc" = 7 ] || fail "the command's exit code 7 should be the init's, got $rc"
rc=0; in_namespace /bin/sh -c 'kill -9 $$' || rc=$?
[ "$rc" = 137 ] || fail "a command killed by SIGKILL should make the init exit 137, got $rc"
rc=0; in_namespace /no/such/program 2>"$WORK/missing.err" || rc=$?
[ "$rc" = 127 ] && grep_q "cannot run /no/such/program: no such file or directory" "$WORK/missing.err" ||
  fail "a missing program: want exit 127 and why, got $rc: $(cat "$WORK/missing.err")"
rc=0; in_namespace /bin/sh -c '[ "$$" != 1 ] && [ "$PPID" = 1 ] && ! [ -e /proc/self/fd/3 ]' || rc=$?
[ "$rc" = 0 ] || fail "the command should be the init's child, without the lifeline (fd 3), got $rc"

# The init's own pid, on the node: the child of `unshare --fork` (pid $1, started with & without a function between,
# so that $! is unshare's).
init_of() {
  local p=""
  for _ in $(seq 1 50); do
    p=$(pgrep -P "$1" | head -n1 || true)
    [ -n "$p" ] && break
    sleep 0.1
  done
  [ -n "$p" ] || fail "unshare ($1) started no init"
  echo "$p"
}

# A signal to the init reaches the command (podman's SIGTERM on a stop).
unshare --pid --fork "$INIT" -- /bin/sh -c 'trap "exit 42" TERM; echo up; while :; do sleep 0.1; done' 3<"$WORK/lifeline" 9>&- >"$WORK/term.out" &
ns=$!
init=$(init_of "$ns")
for _ in $(seq 1 50); do grep_q up "$WORK/term.out" && break; sleep 0.1; done
kill -TERM "$init"
rc=0; wait "$ns" || rc=$?
[ "$rc" = 42 ] || fail "SIGTERM to the init should reach the command, which exits 42; got $rc"

# The lifeline closes: every process of the namespace goes, the setsid'd sleeper too, and the init says why.
new_lifeline
unshare --pid --fork "$INIT" -- /bin/sh -c 'sleep 300 & setsid sleep 301 & echo up; wait' 3<"$WORK/lifeline" 9>&- >"$WORK/life.out" 2>"$WORK/life.err" &
ns=$!
init=$(init_of "$ns")
for _ in $(seq 1 50); do grep_q up "$WORK/life.out" && break; sleep 0.1; done
ns_id=$(readlink "/proc/$init/ns/pid")
sleepers=""
for _ in $(seq 1 50); do
  sleepers=$(for p in $(pgrep -x sleep); do [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$ns_id" ] && echo "$p"; done | tr '\n' ' ' || true)
  [ "$(echo $sleepers | wc -w)" = 2 ] && break
  sleep 0.1
done
[ "$(echo $sleepers | wc -w)" = 2 ] || fail "both sleepers should run in the init's namespace: '$sleepers'"
say "closing the lifeline of init $init (sleepers $sleepers)"
exec 9>&-
for p in "$init" $sleepers; do
  for _ in $(seq 1 30); do gone "$p" && break; sleep 0.1; done
  gone "$p" || fail "process $p outlived the lifeline by 3 s: $(ps -o pid,ppid,args -p "$p")"
done
rc=0; wait "$ns" || rc=$?
[ "$rc" = 137 ] || fail "an init whose lifeline closed should exit 137, got $rc"
grep_q "the allot agent that started this container is gone; ending the container" "$WORK/life.err" ||
  fail "the init should say why it ended the container: $(cat "$WORK/life.err")"
say PASS
