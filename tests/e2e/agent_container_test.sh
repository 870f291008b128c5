#!/usr/bin/env bash
# End to end: jobs that name an image run in podman containers (docs/jobs.md, "Images"), on a real podman with an
# image built here from Debian's busybox-static (no registry is reachable: `podman import` of a local root file
# system). Two teams' containers on one node: each sees the image's file system, runs as its team's unprivileged
# host uid (container root mapped onto the team's block of --run-as-range), has its own /dev/shm of the size asked
# for, cannot see the other's processes or files nor the agent's; an image without a command runs its own; a pull
# of a missing image fails the attempt with reason `image pull` and the node stays Schedulable; a cancelled
# container is gone from podman; and with the agent and its watchdog killed (SIGKILL), the replica's shim ends podman,
# conmon and the container's processes at once; and with the agent, its watchdog, the replica's shim and podman all
# killed, the container's init (allot-container-init) ends it when the agent's lifeline closes.
# Usage: agent_container_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_container
source "$(dirname "$0")/lib_podman.sh"
source "$(dirname "$0")/lib_e2e.sh"
IMAGE=localhost/allot-e2e-bb:$$
ENTRY_IMAGE=localhost/allot-e2e-entry:$$
test_cleanup() {
  podman rmi --force "$IMAGE" "$ENTRY_IMAGE" >/dev/null 2>&1 || true
  # Whatever this test's agents left (they label their containers with the agent's name).
  for id in $(podman ps --all --quiet --filter label=allot.agent=ctr-1 2>/dev/null); do podman rm --force "$id" >/dev/null 2>&1 || true; done
}

# The image: busybox and a marker file; the second one has a command of its own.
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/etc" "$WORK/rootfs/tmp"
cp /bin/busybox "$WORK/rootfs/bin/busybox"
for tool in sh id cat ls df echo sleep stat touch grep kill wc head tail; do ln -s busybox "$WORK/rootfs/bin/$tool"; done
echo "inside-the-image" >"$WORK/rootfs/etc/allot-image-marker"
chmod 1777 "$WORK/rootfs/tmp"
tar -C "$WORK/rootfs" -cf "$WORK/bb.tar" .
podman import "$WORK/bb.tar" "$IMAGE" >/dev/null 2>"$WORK/import.err" || fail "podman import: $(cat "$WORK/import.err")"
podman import --change 'CMD ["/bin/sh", "-c", "echo the-images-own-command-ran"]' "$WORK/bb.tar" "$ENTRY_IMAGE" >/dev/null 2>&1 ||
  fail "podman import (with a command) failed"
# Where the kernel refuses a user namespace, podman cannot keep container root off host root: say so and skip.
# (Limits just below the shell's hard ones, as the agent passes them: podman's own are refused above them.)
below_hard() { local h; h=$(ulimit -H "$1"); [ "$h" = unlimited ] && echo "$2" || echo $((h - 1 < $2 ? h - 1 : $2)); }
if ! "${PODMAN[@]}" run --rm --uidmap 0:1500000000:65536 --gidmap 0:1500000000:65536 --network host \
    --ulimit "nofile=$(below_hard -n 1048576):$(below_hard -n 1048576)" --ulimit "nproc=$(below_hard -u 32768):$(below_hard -u 32768)" "$IMAGE" /bin/sh -c true \
    >"$WORK/probe.out" 2>&1; then
  say "SKIP: podman cannot run a container in a user namespace here: $(tail -n 3 "$WORK/probe.out")"
  test_cleanup
  exit 77
fi

start_server --checkpoint-dir "$WORK/ckpt"
mkdir -p "$WORK/ckpt" && chmod 0755 "$WORK/ckpt"
start_agent ctr-1 network-node-layer-3=nn-a
grep_q "containers: podman" "$WORK/agent-ctr-1.log" || fail "the agent should say which podman it found"
write_teams

cat >"$WORK/a.yaml" <<YAML
name: job-a
team: team-a
per_replica: {memory_gib: 0.25}
image: $IMAGE
image_pull_policy: IfNotPresent
shm_size_gib: 0.09375
env: {TEAM_A_SECRET: secret-of-team-a-$$}
command:
  - /bin/sh
  - -c
  - |
    cat /etc/allot-image-marker; echo "uid-inside=\$(id -u)"; cat /proc/self/uid_map
    echo "cwd=\$(pwd)"; echo data-of-team-a >mine.txt; echo ckpt-of-team-a >"\$ALLOT_CHECKPOINT_DIR/ckpt.txt"
    echo shm-of-team-a >/dev/shm/team-a-shm; df -m /dev/shm | tail -n 1
    grep NoNewPrivs /proc/self/status; grep CapEff /proc/self/status
    echo "ready"; sleep 120
YAML
"$ALLOT" submit "$WORK/a.yaml" >/dev/null
wait_state job-a Running
log_has job-a "ready" 60
cat "$WORK/job-a-logs.out"
grep_q "inside-the-image" "$WORK/job-a-logs.out" || fail "job-a should see the image's file system"
grep_q -x "uid-inside=0" "$WORK/job-a-logs.out" || fail "job-a runs as container root"
a_host_uid=$(awk '$1 == 0 {print $2; exit}' "$WORK/job-a-logs.out")
[ -n "$a_host_uid" ] && [ "$a_host_uid" -ge 1000000000 ] || fail "container root of team-a should map to a host uid of --run-as-range, got '$a_host_uid'"
grep_q "NoNewPrivs:[[:space:]]*1" "$WORK/job-a-logs.out" || fail "no-new-privileges should be set"
grep_q "CapEff:[[:space:]]*0000000000000000" "$WORK/job-a-logs.out" || fail "every capability should be dropped"
grep_q " 96 " "$WORK/job-a-logs.out" || fail "job-a's /dev/shm should be 96 MiB (shm_size_gib 0.09375)"
a_cwd=$(sed -n 's/^cwd=//p' "$WORK/job-a-logs.out")
[ -f "$a_cwd/mine.txt" ] || fail "job-a's working directory $a_cwd should be the host's attempt directory"
[ "$(stat -c %u "$a_cwd/mine.txt")" = "$a_host_uid" ] || fail "what job-a wrote should belong to its team's host uid $a_host_uid"
[ "$(stat -c %u "$WORK/ckpt/job-a/ckpt.txt")" = "$a_host_uid" ] || fail "job-a's checkpoint should belong to its team's host uid"
# Its sleeper, seen from the host: the child of the container's first process (podman names the container after
# the agent, job, rank and attempt). Not found by uid alone: every e2e test run as root maps team-a onto the same
# host uid, and a test beside this one may run a sleeper of team-a too.
a_init=$(podman inspect --format '{{.State.Pid}}' allot-ctr-1-job-a-0-0 2>/dev/null || true)
[ -n "$a_init" ] && [ "$a_init" != 0 ] || fail "podman should list job-a's container allot-ctr-1-job-a-0-0"
a_pid=$(pgrep -P "$a_init" -x sleep | head -n1 || true)
[ -n "$a_pid" ] || a_pid=$a_init  # a shell may exec its last command
[ "$(stat -c %u "/proc/$a_pid")" = "$a_host_uid" ] ||
  fail "job-a's processes should run as its team's host uid $a_host_uid: $(ps -o uid,pid,args -p "$a_pid")"
"$ALLOT" describe job-a >"$WORK/a-describe.out"
grep_q "$IMAGE" "$WORK/a-describe.out" || fail "describe should show the image"

# Team B on the same node: none of A's processes, files, shm, nor the agent's files.
cat >"$WORK/b.yaml" <<YAML
name: job-b
team: team-b
per_replica: {memory_gib: 0.0625}
image: $IMAGE
command:
  - /bin/sh
  - -c
  - |
    echo "uid-inside=\$(id -u)"; cat /proc/self/uid_map
    cat /proc/$a_pid/environ; echo "environ-rc=\$?"
    kill -0 $a_pid; echo "kill-rc=\$?"
    cat $a_cwd/mine.txt; echo "cwd-rc=\$?"
    cat $WORK/ckpt/job-a/ckpt.txt; echo "ckpt-rc=\$?"
    cat $WORK/agents/ctr-1/credential; echo "credential-rc=\$?"
    ls /dev/shm; echo "shm-listed"
    exit 0
YAML
"$ALLOT" submit "$WORK/b.yaml" >/dev/null
wait_state job-b Succeeded 60
"$ALLOT" logs job-b >"$WORK/b.out"
cat "$WORK/b.out"
b_host_uid=$(awk '$1 == 0 {print $2; exit}' "$WORK/b.out")
[ -n "$b_host_uid" ] && [ "$b_host_uid" != "$a_host_uid" ] || fail "teams A and B share host uid $a_host_uid"
grep_q "secret-of-team-a" "$WORK/b.out" && fail "B read A's environment"
grep_q -x "environ-rc=1" "$WORK/b.out" || fail "B should not reach A's /proc/PID/environ"
grep_q -x "kill-rc=1" "$WORK/b.out" || fail "B should not reach A's processes"
grep_q -x "cwd-rc=1" "$WORK/b.out" && grep_q -x "ckpt-rc=1" "$WORK/b.out" || fail "B should not reach A's files"
grep_q -x "credential-rc=1" "$WORK/b.out" || fail "B should not reach the agent's credential"
grep_q "data-of-team-a\|ckpt-of-team-a" "$WORK/b.out" && fail "B read A's files"
grep_q "team-a-shm" "$WORK/b.out" && fail "B sees A's /dev/shm"
grep_q -x "shm-listed" "$WORK/b.out" || fail "B's script did not finish"

# An image's own command runs when the job gives none.
printf 'name: job-entry\nteam: team-b\nper_replica: {memory_gib: 0.0625}\nimage: %s\n' "$ENTRY_IMAGE" | "$ALLOT" submit - >/dev/null
wait_state job-entry Succeeded 60
log_has job-entry "the-images-own-command-ran"

# A missing image: the attempt fails with `image pull`, charged to the job; the node is not blamed.
printf 'name: job-missing\nteam: team-b\nper_replica: {memory_gib: 0.0625}\nmax_retries: 0\nimage: localhost/allot-no-such-image:%s\ncommand: ["/bin/true"]\n' "$$" |
  "$ALLOT" submit - >/dev/null
wait_state job-missing Failed 60
"$ALLOT" describe job-missing >"$WORK/missing.out"
cat "$WORK/missing.out"
grep_q "image pull" "$WORK/missing.out" || fail "the failure should say image pull"
grep_q "allot-no-such-image" "$WORK/missing.out" || fail "the failure should name the image"
"$ALLOT" nodes | grep_q "^ctr-1 .*Schedulable" || fail "a failed pull must not take the node out"
"$ALLOT" events 2>/dev/null | grep_q "pulling image" || "$ALLOT" describe job-a | grep_q -i "pull" ||
  say "note: no pull event seen for job-a (the image was present)"

# Cancelled: the container is gone from podman, and nothing of it runs.
"$ALLOT" cancel job-a >/dev/null
wait_state job-a Cancelled 30
# Up to a minute: the stop goes through `podman stop` and its grace, which a loaded machine stretches well past 10 s.
for _ in $(seq 1 600); do gone "$a_pid" && break; sleep 0.1; done
gone "$a_pid" || fail "job-a's process still runs after its cancel: $(ps -o pid,ppid,uid,stat,args -p "$a_pid")"
for _ in $(seq 1 50); do [ -z "$(podman ps --all --quiet --filter label=allot.agent=ctr-1)" ] && break; sleep 0.2; done
[ -z "$(podman ps --all --quiet --filter label=allot.agent=ctr-1)" ] || fail "podman still has a container of the agent: $(podman ps --all)"

# The agent and its watchdog killed with SIGKILL: the replica's shim (agent/shim.h) ends podman, conmon (which
# daemonised itself, so was reparented to the shim) and the container's processes, at once, with no agent started.
# container_job NAME COMMAND: a team-a job NAME that runs COMMAND (a YAML list) in the image; waits until it printed
# "ready" and sets CTR_INIT to its container's first process (podman names the container after the agent, job, rank
# and attempt).
container_job() {
  printf 'name: %s\nteam: team-a\nper_replica: {memory_gib: 0.0625}\nimage: %s\ncommand: %s\n' "$1" "$IMAGE" "$2" |
    "$ALLOT" submit - >/dev/null
  wait_state "$1" Running 60
  log_has "$1" "ready" 60
  CTR_INIT=$(podman inspect --format '{{.State.Pid}}' "allot-ctr-1-$1-0-0" 2>/dev/null || true)
  [ -n "$CTR_INIT" ] && [ "$CTR_INIT" != 0 ] || fail "podman should list $1's container allot-ctr-1-$1-0-0"
}
container_job job-c '["/bin/sh", "-c", "echo ready; sleep 120"]'
c_init=$CTR_INIT
c_conmon=$(awk '{print $4}' "/proc/$c_init/stat")
c_shim=$(awk '{print $4}' "/proc/$c_conmon/stat")
c_shim_cmd=$(tr '\0' ' ' <"/proc/$c_shim/cmdline")
case "$c_shim_cmd" in
  "allot internal-replica-shim $AGENT_PID_ctr_1 "*) ;;
  *) fail "conmon ($c_conmon) should be reparented to the replica's shim, not to $c_shim: '$c_shim_cmd'" ;;
esac
watchdog=$(grep -o "watchdog pid [0-9]*" "$WORK/agent-ctr-1.log" | tail -n1 | cut -d' ' -f3)
[ -n "$watchdog" ] || fail "the agent should name its watchdog"
say "killing the watchdog ($watchdog) and the agent ($AGENT_PID_ctr_1) with SIGKILL; container init $c_init, conmon $c_conmon, shim $c_shim"
kill -9 "$watchdog" "$AGENT_PID_ctr_1"
for p in "$c_init" "$c_conmon" "$c_shim"; do
  for _ in $(seq 1 30); do gone "$p" && break; sleep 0.1; done
  gone "$p" || fail "process $p of job-c's container (init $c_init, conmon $c_conmon, shim $c_shim) outlived its agent by 3 s: $(ps -o pid,ppid,args -p "$p")"
done

# The agent, its watchdog, the replica's shim and its `podman run` all killed together: nothing of the agent's tree
# is left to end the container, which conmon keeps. Its first process is allot-container-init, which holds the
# agent's lifeline (fd 3): it sees the pipe close and ends the container at once, with no agent started.
start_agent ctr-1 network-node-layer-3=nn-a
# The node may still be listed Schedulable from before: wait for the new agent's own start.
for _ in $(seq 1 300); do [ "$(grep -c "containers: podman" "$WORK/agent-ctr-1.log")" -ge 2 ] && break; sleep 0.1; done
[ "$(grep -c "containers: podman" "$WORK/agent-ctr-1.log")" -ge 2 ] || fail "the restarted agent should say which podman it found"
grep_q "init .*allot-container-init)" "$WORK/agent-ctr-1.log" || fail "the agent should name the containers' init"
container_job job-d '["/bin/sh", "-c", "sleep 120 & setsid sleep 121 & echo ready; wait"]'
d_init=$CTR_INIT
[ "$(tr '\0' ' ' <"/proc/$d_init/cmdline")" = "/run/podman-init -- /bin/sh -c sleep 120 & setsid sleep 121 & echo ready; wait " ] ||
  fail "the container's first process should be allot's init running the command: '$(tr '\0' ' ' <"/proc/$d_init/cmdline")'"
[ -p "/proc/$d_init/fd/3" ] || fail "the container's init should hold the agent's lifeline as fd 3: $(ls -l "/proc/$d_init/fd/")"
d_ns=$(readlink "/proc/$d_init/ns/pid")
d_sleepers=$(for p in $(pgrep -x sleep); do [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$d_ns" ] && echo "$p"; done | tr '\n' ' ' || true)
[ "$(echo $d_sleepers | wc -w)" = 2 ] || fail "job-d's two sleepers should run in its container: '$d_sleepers'"
d_conmon=$(awk '{print $4}' "/proc/$d_init/stat")
d_shim=$(awk '{print $4}' "/proc/$d_conmon/stat")
d_podman=$(pgrep -P "$d_shim" -f "podman .*run .*allot-ctr-1-job-d-0-0" | head -n1)
[ -n "$d_podman" ] || fail "job-d's podman run should be a child of its shim $d_shim"
watchdog=$(grep -o "watchdog pid [0-9]*" "$WORK/agent-ctr-1.log" | tail -n1 | cut -d' ' -f3)
say "killing the watchdog ($watchdog), the agent ($AGENT_PID_ctr_1), the shim ($d_shim) and podman run ($d_podman) with SIGKILL; container init $d_init, conmon $d_conmon, sleepers $d_sleepers"
t0=$(date +%s%3N)
kill -9 "$watchdog" "$AGENT_PID_ctr_1" "$d_shim" "$d_podman"
for p in "$d_init" $d_sleepers; do
  for _ in $(seq 1 300); do gone "$p" && break; sleep 0.01; done
  gone "$p" || fail "process $p of job-d's container outlived its agent, watchdog, shim and podman by 3 s: $(ps -o pid,ppid,args -p "$p")"
done
say "job-d's container and its processes were gone $(( $(date +%s%3N) - t0 )) ms after the kill (polled every 10 ms)"
for _ in $(seq 1 50); do gone "$d_conmon" && break; sleep 0.1; done
gone "$d_conmon" || fail "conmon ($d_conmon) should exit with its container"
test_cleanup
say PASS
