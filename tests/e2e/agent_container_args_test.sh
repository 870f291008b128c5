#!/usr/bin/env bash
# End to end: a job's `args` reach the image's ENTRYPOINT as argv items (docs/jobs.md, "Images"; issue 28 item 12),
# on a real podman with an image built here from Debian's busybox-static (`podman import` of a local root file
# system, with an ENTRYPOINT that prints its arguments one per line and a CMD of its own). A Kubernetes Job whose
# container has `args` and no `command` runs the entrypoint with exactly those args: one with a space stays one
# argument, one with a `$` is not expanded (no shell between), one beginning with `-` is not podman's; the
# image's CMD is replaced. Without args the image's CMD runs; an allot spec with command and args runs the
# command followed by the args.
# Usage: agent_container_args_test.sh PATH/TO/allot
ALLOT=${1:?usage: $0 PATH/TO/allot}
TEST_NAME=agent_container_args
source "$(dirname "$0")/lib_podman.sh"
source "$(dirname "$0")/lib_e2e.sh"
IMAGE=localhost/allot-e2e-args:$$
AGENT=args-$$
test_cleanup() {
  podman rmi --force "$IMAGE" >/dev/null 2>&1 || true
  for id in $(podman ps --all --quiet --filter "label=allot.agent=$AGENT" 2>/dev/null); do podman rm --force "$id" >/dev/null 2>&1 || true; done
}

# The image: busybox, and /bin/printargs as its ENTRYPOINT, which prints each argument in brackets and their count.
mkdir -p "$WORK/rootfs/bin" "$WORK/rootfs/tmp"
cp /bin/busybox "$WORK/rootfs/bin/busybox"
for tool in sh echo; do ln -s busybox "$WORK/rootfs/bin/$tool"; done
cat >"$WORK/rootfs/bin/printargs" <<'SH'
#!/bin/sh
echo "argc=$#"
for a in "$@"; do echo "arg=[$a]"; done
SH
chmod 0755 "$WORK/rootfs/bin/printargs"
chmod 1777 "$WORK/rootfs/tmp"
tar -C "$WORK/rootfs" -cf "$WORK/args.tar" .
podman import --change 'ENTRYPOINT ["/bin/printargs"]' --change 'CMD ["the-images-cmd"]' "$WORK/args.tar" "$IMAGE" >/dev/null \
  2>"$WORK/import.err" || fail "podman import: $(cat "$WORK/import.err")"
# Where the kernel refuses a user namespace, podman cannot keep container root off host root: say so and skip.
below_hard() { local h; h=$(ulimit -H "$1"); [ "$h" = unlimited ] && echo "$2" || echo $((h - 1 < $2 ? h - 1 : $2)); }
if ! "${PODMAN[@]}" run --rm --uidmap 0:1500000000:65536 --gidmap 0:1500000000:65536 --network host \
    --ulimit "nofile=$(below_hard -n 1048576):$(below_hard -n 1048576)" --ulimit "nproc=$(below_hard -u 32768):$(below_hard -u 32768)" \
    "$IMAGE" probe >"$WORK/probe.out" 2>&1; then
  say "SKIP: podman cannot run a container in a user namespace here: $(tail -n 3 "$WORK/probe.out")"
  test_cleanup
  exit 77
fi

start_server
start_agent "$AGENT" network-node-layer-3=nn-a
grep_q "containers: podman" "$WORK/agent-$AGENT.log" || fail "the agent should say which podman it found"
write_teams

# logs_are JOB FILE: the job's log is exactly FILE's lines.
logs_are() {
  "$ALLOT" logs "$1" >"$WORK/$1.log" 2>"$WORK/$1.log.err" || fail "allot logs $1: $(cat "$WORK/$1.log.err")"
  diff -u "$2" "$WORK/$1.log" >"$WORK/$1.diff" || fail "the log of $1 is not what its args say: $(cat "$WORK/$1.diff")"
}

# A Kubernetes Job with args and no command: the entrypoint gets exactly those args.
cat >"$WORK/args-only.yaml" <<YAML
apiVersion: batch/v1
kind: Job
metadata: {name: args-only, namespace: team-a}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: $IMAGE
          imagePullPolicy: Never
          args: ["--epochs", "3", "a b", "\$HOME", "a;b", "'q'", "*"]
          resources: {requests: {memory: 64Mi}}
YAML
"$ALLOT" submit "$WORK/args-only.yaml" >"$WORK/submit.out" 2>&1 || fail "a manifest with args and no command: $(cat "$WORK/submit.out")"
wait_state args-only Succeeded 60
cat >"$WORK/args-only.want" <<'OUT'
argc=7
arg=[--epochs]
arg=[3]
arg=[a b]
arg=[$HOME]
arg=[a;b]
arg=['q']
arg=[*]
OUT
logs_are args-only "$WORK/args-only.want"
"$ALLOT" describe args-only -o json >"$WORK/args-only.json"
tr -d ' \n' <"$WORK/args-only.json" | grep_q '"args":\["--epochs","3","ab","\$HOME"' ||
  fail "describe -o json should hold the container's args: $(cat "$WORK/args-only.json")"
"$ALLOT" describe args-only >"$WORK/args-only.describe"
grep_q '^Args: *\["--epochs","3","a b","\$HOME"' "$WORK/args-only.describe" || fail "describe should show the args: $(cat "$WORK/args-only.describe")"

# Without args the image's CMD is the entrypoint's argument.
printf 'name: no-args\nteam: team-b\nper_replica: {memory_gib: 0.0625}\nimage: %s\nimage_pull_policy: Never\n' "$IMAGE" | "$ALLOT" submit - >/dev/null
wait_state no-args Succeeded 60
printf 'argc=1\narg=[the-images-cmd]\n' >"$WORK/no-args.want"
logs_are no-args "$WORK/no-args.want"

# An allot spec with command and args: the command (in place of the entrypoint), then the args.
cat >"$WORK/both.yaml" <<YAML
name: both
team: team-b
per_replica: {memory_gib: 0.0625}
image: $IMAGE
image_pull_policy: Never
command: [/bin/printargs, from-command]
args: [from-args, "x y"]
YAML
"$ALLOT" submit "$WORK/both.yaml" >/dev/null
wait_state both Succeeded 60
printf 'argc=3\narg=[from-command]\narg=[from-args]\narg=[x y]\n' >"$WORK/both.want"
logs_are both "$WORK/both.want"

# args without an image are refused, naming the field, and nothing is submitted.
printf 'name: bare-args\nteam: team-b\ncommand: ["/bin/echo"]\nargs: [x]\n' >"$WORK/bare-args.yaml"
expect_rc 2 "$ALLOT" submit "$WORK/bare-args.yaml"
grep_q "args is given without an image" "$WORK/last.err" || fail "args without an image: $(cat "$WORK/last.err")"
expect_rc 2 "$ALLOT" describe bare-args
test_cleanup
say PASS
