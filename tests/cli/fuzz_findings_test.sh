#!/usr/bin/env bash
# The inputs long fuzzing found (issue 33), each at the command a user runs, under a memory ceiling: every one
# of them once took 1.6 to 3.2 GB (or ended in "std::bad_alloc"); now each is refused at once with an error
# naming the bound it passes, and exit 2.
set -euo pipefail
ALLOT=$1
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1 GiB of address space for each command (the binary itself needs well under 200 MB of it).
CEILING_KB=1048576
# expect_refused WHAT MESSAGE ARGS...: allot ARGS exits 2 under the ceiling, and stderr holds MESSAGE.
expect_refused() {
  local what=$1 message=$2
  shift 2
  local rc=0
  ( ulimit -v $CEILING_KB; exec "$ALLOT" "$@" ) > "$WORK/out" 2> "$WORK/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, not 2; stderr: $(head -c 600 "$WORK/err")"
  grep -qF -- "$message" "$WORK/err" || fail "$what: stderr lacks '$message': $(head -c 600 "$WORK/err")"
}

# The same command on a small input of the same shape works under the same ceiling, so the ceiling is not
# what refuses the inputs above.
( ulimit -v $CEILING_KB; exec "$ALLOT" sim run --json /dev/stdin ) > "$WORK/ok.json" <<'YAML' || fail "a small scenario fails under the ceiling"
cluster:
  nodes:
    - {name: "n[1-2000]", instance_type: ml.g5.8xlarge}
events:
  - {at: 0, add_nodes: [{name: "m[1-2000]", instance_type: ml.g5.8xlarge}]}
YAML

# Item 2: a host list of 200,000 names of 12 KB each, refused before it is expanded.
long=$(head -c 12000 /dev/zero | tr '\0' a)
printf -- '- {name: "%s[0-199999]", instance_type: ml.g5.8xlarge}\n' "$long" > "$WORK/long_names.yaml"
expect_refused "topology slurm-conf of 12 KB names" "a node name is at most 253" \
  topology slurm-conf --nodes "$WORK/long_names.yaml"
# A 40 KB name without brackets once ended in std::bad_alloc through the server; here as a scenario.
long40=$(head -c 40000 /dev/zero | tr '\0' a)
printf 'cluster:\n  nodes:\n    - {name: "%s[1-9]", instance_type: ml.g5.8xlarge}\n' "$long40" > "$WORK/long40.yaml"
expect_refused "sim run with 40 KB names" "a node name is at most 253" sim run "$WORK/long40.yaml"

# Item 3: YAML aliases multiplying node lists (the files of tests/scenarios/invalid) and events.
SCEN=$(cd "$(dirname "$0")/../scenarios/invalid" && pwd)
expect_refused "aliased expectation node lists" "nodes in all" sim run "$SCEN/alias_expect_nodes.yaml"
expect_refused "aliased add_nodes events" "nodes in all" sim run "$SCEN/alias_add_nodes.yaml"
# Nested aliases ("billion laughs") through the readers' deepest chain: 101 submit events (100 of them aliases
# of the first), each of 100 pod sets (99 aliases), each with the same 301 environment variables: 40 KB of text
# for 3 million values.
{
  echo 'cluster:'
  echo '  nodes: [{name: n1, instance_type: ml.g5.8xlarge}]'
  echo 'events:'
  printf '  - &ev {at: 0, submit: {name: j, team: t, pod_sets: ['
  printf '{name: p0, replicas: 1, per_replica: {accelerators: 1}, instance_type: ml.g5.8xlarge, env: &env {'
  for k in $(seq 1 300); do printf 'V%d: v, ' "$k"; done
  printf 'LAST: v}}'
  for i in $(seq 1 99); do printf ', {name: p%d, replicas: 1, per_replica: {accelerators: 1}, instance_type: ml.g5.8xlarge, env: *env}' "$i"; done
  printf ']}}\n'
  for i in $(seq 1 100); do echo '  - *ev'; done
} > "$WORK/laughs.yaml"
expect_refused "nested aliases" "values once its YAML aliases are expanded" sim run "$WORK/laughs.yaml"

# Item 5: a Kubernetes quantity beyond the bound (once undefined behaviour, shown as "vcpu": 2.998e+15).
cat > "$WORK/job.yaml" <<'YAML'
apiVersion: batch/v1
kind: Job
metadata: {name: huge, labels: {kueue.x-k8s.io/queue-name: hyperpod-ns-team-a-localqueue}}
spec:
  template:
    spec:
      containers:
        - name: main
          image: busybox
          command: [python, train.py]
          resources: {requests: {cpu: 999999999999999999E}}
YAML
expect_refused "submit --dry-run=client of cpu 999999999999999999E" "is more than 100000000 CPUs" submit --dry-run=client "$WORK/job.yaml"
# 1Ei is valid Kubernetes: accepted as memory.
sed 's/cpu: 999999999999999999E/memory: 1Ei/' "$WORK/job.yaml" > "$WORK/job_ei.yaml"
( ulimit -v $CEILING_KB; exec "$ALLOT" submit --dry-run=client "$WORK/job_ei.yaml" ) > "$WORK/ei.json" 2> "$WORK/ei.err" ||
  fail "memory: 1Ei refused: $(cat "$WORK/ei.err")"
grep -q '"memory_gib": 1073741824' "$WORK/ei.json" || fail "memory: 1Ei is not 1073741824 GiB: $(cat "$WORK/ei.json")"
echo "ok"
